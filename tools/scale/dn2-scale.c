/*
 * dn2-scale: the fabric with many boards at once (docs/benchmarks.md,
 * "Scale curve"; scripts/bench-scale.sh).  One dn2-switch and N QEMUs,
 * each with a dimmnet2 board and no guest OS, driven over the qtest
 * protocol by this one process.  Per run:
 *
 *   all-to-all  every board keeps its Request FIFO busy with RVS of
 *               --size bytes to every other board in turn, for --seconds;
 *               every transfer is checked byte for byte when its status
 *               record appears at the receiver (the SO-DIMMs are shared
 *               files mapped here), and a source/receive slot is reused
 *               only after that check;
 *   echo        meanwhile, every --echo-ms, a BOTF carrying an RVL request
 *               from board e to board e+1, answered by e+1's Receive
 *               Controller with a 64-byte RVS: the round trip under load,
 *               timed by watching the answer land in e's SO-DIMM;
 *   multicast   every board sends --mcast-rounds RVS of --size bytes to a
 *               group of all boards (the switch's static --mcast), each
 *               copy checked at every member;
 *   figures     aggregate delivered MB/s, the slowest and fastest board's
 *               share, echo RTT median/p99, the switch's CPU time per
 *               datagram it handled (/proc and `dn2-switch --stats`), RSS
 *               per board, the boards' link counters over QMP
 *               (datagrams, packets, retransmitted packets as a share of
 *               the packets sent, timeouts), the host's UDP receive-buffer
 *               overflows, the QEMUs' CPU share and CPU time per MB.
 *
 *   dn2-scale --qemu BIN --switch BIN --fw DIR [--boards 2,4,8,16,32]
 *             [--route direct|switch] [--size 256K] [--seconds S]
 *             [--mcast-rounds N] [--echo-ms MS] [--restart]
 *             [--switch-netns NS --listen ADDR] [--netns NS1,NS2,...]
 *             [--switch-nice N] [--switch-arg ARG]... [--tmpdir DIR]
 *
 *   --switch-arg A  one more argument for dn2-switch (e.g. --rcvbuf 33554432)
 *   --switch-nice N the switch's nice value (e.g. -10: it forwards every
 *                   board's traffic in routing mode switch, and with the
 *                   scheduler's equal shares it gets 1/(N+1) of the CPU)
 *   --restart       after the first pass, stop the switch (SIGTERM) and
 *                   start it again on the same port, wait until every
 *                   board has its link (and its LID) back, and run the
 *                   pass again: primitives must work as before
 *   --netns a,b     start board k in network namespace (k mod count) with
 *                   `ip netns exec` (the multi-host test); the switch in
 *                   --switch-netns, listening on --listen ADDR (an address
 *                   of that namespace; the boards reach it there)
 *
 * One line per figure set, key=value, and "scale ... ok" or a line
 * starting "FAIL"; exit status 0 only when every byte was right, every
 * transfer arrived, and nothing else went wrong.
 *
 * This is a qtest client of its own like tools/bench/dn2-bench-qtest.c and
 * tools/soak/dn2-soak.c (the process/qtest/QMP plumbing is the same idea;
 * it should move to the shared qtest-driver module when that lands).
 *
 * SPDX-License-Identifier: MIT
 */
#define _GNU_SOURCE 1
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "dimmnet2/dn2_abi.h"
#include "dn2-board-up.h"
#include "qtest-board.h"
#include "qtest-client.h"

#define MAXB        64              /* a multicast group holds 64 members */
#define KSLOTS      2               /* receive slots per (source, destination) */
#define ST_OFF      0x7000u         /* status ring in WID 0's LLCM */
#define ST_BYTES    4096u           /* status ring: 256 records */
#define MAX_OUT     12              /* RVS in flight per board (FIFO 16, room for the echo) */
#define ECHO_SRC    0x40000u
#define ECHO_DST    0x80000u
#define ECHO_BYTES  64u
#define SRC_BASE    0x100000u
#define MC_GROUP    0xc01u

static const char *qemu_bin, *switch_bin, *fw_dir, *route = "direct";
static const char *switch_ns, *listen_addr = "127.0.0.1:0";
static char *netns[MAXB];
static unsigned n_netns;
static char tmpdir[256];
static uint64_t sz = 256 << 10;     /* --size */
static uint64_t memsz;              /* SO-DIMM backend per board */
static unsigned nb;                 /* boards in this run */
static int failures;
/* the driver's own figures: qtest commands sent; samples of how many RVS a
 * board still had queued when the driver came back to it */
static uint64_t n_cmds, fill_sum, fill_n;

static uint64_t now_ns(void)
{
    return qb_now_ns();
}

static void vfail(const char *fmt, va_list ap)
{
    printf("FAIL ");
    vprintf(fmt, ap);
    printf("\n");
    fflush(stdout);
}

static void die(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vfail(fmt, ap);
    va_end(ap);
    exit(1);
}

/* a failed check: reported (the first 20), counted, the run goes on */
static void fail(const char *fmt, ...)
{
    va_list ap;

    if (++failures > 20) {
        return;
    }
    va_start(ap, fmt);
    vfail(fmt, ap);
    va_end(ap);
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

    return x < y ? -1 : x > y;
}

/* ------------------------------------------------------------------ */
/* Processes                                                           */
/* ------------------------------------------------------------------ */

/* argv run in network namespace ns (NULL: here), output to file out. */
static pid_t spawn(const char *ns, char *const argv[], const char *out)
{
    const struct qb_spawn how = { .out = out, .cpu = -1 };
    char *av[64];
    int n = 0;
    pid_t pid;

    if (ns) {
        av[n++] = "/usr/bin/env";   /* finds ip(8) on the PATH */
        av[n++] = "ip";
        av[n++] = "netns";
        av[n++] = "exec";
        av[n++] = (char *)ns;
    }
    for (int i = 0; argv[i] && n < 63; i++) {
        av[n++] = argv[i];
    }
    av[n] = NULL;
    pid = qb_spawn(av, &how);
    if (pid < 0) {
        die("fork: %s", strerror(-pid));
    }
    return pid;
}

static void reap(pid_t pid, int sig)
{
    qb_reap(pid, sig, 5000);
}

/* user + system CPU time of a process, in ns */
static uint64_t cpu_ns(pid_t pid)
{
    char path[64], buf[1024], *p;
    unsigned long ut = 0, st = 0;
    FILE *f;

    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    f = fopen(path, "r");
    if (!f) {
        return 0;
    }
    if (!fgets(buf, sizeof(buf), f)) {
        buf[0] = 0;
    }
    fclose(f);
    p = strrchr(buf, ')');
    if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st) != 2) {
        return 0;
    }
    return (uint64_t)(ut + st) * (1000000000ull / (uint64_t)sysconf(_SC_CLK_TCK));
}

/* a field of /proc/PID/status in kB */
static uint64_t proc_kb(pid_t pid, const char *field)
{
    char path[64], line[256];
    uint64_t v = 0;
    size_t l = strlen(field);
    FILE *f;

    snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
    f = fopen(path, "r");
    if (!f) {
        return 0;
    }
    while (fgets(line, sizeof(line), f)) {
        if (!strncmp(line, field, l) && line[l] == ':') {
            v = strtoull(line + l + 1, NULL, 10);
            break;
        }
    }
    fclose(f);
    return v;
}

/* Datagrams dropped at the UDP sockets of process pid (full receive buffer:
 * the "drops" column of /proc/PID/net/udp and udp6, its sockets found by
 * inode in /proc/PID/fd) */
static uint64_t udp_sock_drops(pid_t pid)
{
    static const char *const tables[] = { "udp", "udp6" };
    unsigned long inodes[16];
    unsigned ni = 0, t;
    char path[96], link[64], line[512];
    uint64_t v = 0;
    struct dirent *e;
    DIR *d;

    snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
    d = opendir(path);
    if (!d) {
        return 0;
    }
    while ((e = readdir(d)) && ni < 16) {
        char fdp[96 + 256];
        ssize_t l;
        snprintf(fdp, sizeof(fdp), "%s/%s", path, e->d_name);
        l = readlink(fdp, link, sizeof(link) - 1);
        if (l > 0) {
            link[l] = 0;
            if (sscanf(link, "socket:[%lu]", &inodes[ni]) == 1) {
                ni++;
            }
        }
    }
    closedir(d);
    for (t = 0; t < 2; t++) {
        FILE *f;
        snprintf(path, sizeof(path), "/proc/%d/net/%s", (int)pid, tables[t]);
        f = fopen(path, "r");
        if (!f) {
            continue;
        }
        while (fgets(line, sizeof(line), f)) {
            unsigned long ino, drops;
            unsigned i;
            if (sscanf(line, "%*s %*s %*s %*s %*s %*s %*s %*u %*d %lu %*d %*s %lu", &ino,
                       &drops) != 2) {
                continue;
            }
            for (i = 0; i < ni; i++) {
                if (inodes[i] == ino) {
                    v += drops;
                }
            }
        }
        fclose(f);
    }
    return v;
}

/* the 1-minute load average */
static double load1(void)
{
    double l = 0;
    FILE *f = fopen("/proc/loadavg", "r");
    if (f) {
        if (fscanf(f, "%lf", &l) != 1) {
            l = 0;
        }
        fclose(f);
    }
    return l;
}

/* UDP datagrams the kernel dropped for a full receive buffer (the whole
 * host, /proc/net/snmp Udp RcvbufErrors; this network namespace) */
static uint64_t udp_rcvbuf_errors(void)
{
    char names[512], vals[512];
    uint64_t v = 0;
    FILE *f = fopen("/proc/net/snmp", "r");

    if (!f) {
        return 0;
    }
    while (fgets(names, sizeof(names), f)) {
        if (!strncmp(names, "Udp:", 4) && fgets(vals, sizeof(vals), f)) {
            char *sn, *sv, *n = strtok_r(names, " \n", &sn), *x = strtok_r(vals, " \n", &sv);
            while (n && x) {
                if (!strcmp(n, "RcvbufErrors")) {
                    v = strtoull(x, NULL, 10);
                }
                n = strtok_r(NULL, " \n", &sn);
                x = strtok_r(NULL, " \n", &sv);
            }
            break;
        }
    }
    fclose(f);
    return v;
}

static int listen_unix(const char *path)
{
    int fd = qb_listen_unix(path);

    if (fd < 0) {
        die("socket %s: %s", path, strerror(-fd));
    }
    return fd;
}

static int accept_within(int lfd, int ms, const char *what, const char *log)
{
    int fd = qc_accept(lfd, (unsigned)ms, 0, NULL);

    if (fd < 0) {
        die("QEMU did not connect its %s socket (see %s)", what, log);
    }
    return fd;
}

/* ------------------------------------------------------------------ */
/* The switch                                                          */
/* ------------------------------------------------------------------ */

static pid_t sw_pid;
static const char *sw_args[8];      /* --switch-arg, repeatable */
static unsigned sw_nargs;
static int sw_nice;                 /* --switch-nice */
static bool sw_nice_set;
static char sw_listen[160];         /* ADDR:PORT it serves on */
static char sw_group[2048];         /* --mcast value */

static void switch_start(const char *listen)
{
    char ready[300], log[300];
    char *argv[24];
    int n = 0;
    uint64_t end = now_ns() + 10000000000ull;

    snprintf(ready, sizeof(ready), "%s/switch.port", tmpdir);
    snprintf(log, sizeof(log), "%s/switch.log", tmpdir);
    unlink(ready);
    argv[n++] = (char *)switch_bin;
    argv[n++] = "--listen";
    argv[n++] = (char *)listen;
    argv[n++] = "--ready-file";
    argv[n++] = ready;
    argv[n++] = "--route";
    argv[n++] = (char *)route;
    argv[n++] = "--mcast";
    argv[n++] = sw_group;
    argv[n++] = "--quiet";
    for (unsigned i = 0; i < sw_nargs; i++) {
        argv[n++] = (char *)sw_args[i];
    }
    argv[n] = NULL;
    sw_pid = spawn(switch_ns, argv, log);
    while (now_ns() < end) {
        FILE *f = fopen(ready, "r");
        int port = 0;
        if (f) {
            bool ok = fscanf(f, "%d", &port) == 1 && port > 0;
            fclose(f);
            if (ok) {
                char host[128];
                const char *c = strrchr(listen, ':');
                snprintf(host, sizeof(host), "%.*s", (int)(c - listen), listen);
                snprintf(sw_listen, sizeof(sw_listen), "%s:%d", host, port);
                if (sw_nice_set && setpriority(PRIO_PROCESS, (id_t)sw_pid, sw_nice) < 0) {
                    die("--switch-nice %d: %s", sw_nice, strerror(errno));
                }
                return;
            }
        }
        if (waitpid(sw_pid, NULL, WNOHANG) == sw_pid) {
            break;
        }
        usleep(5000);
    }
    die("the switch did not start (see %s)", log);
}

/* "datagrams_in=N" from `dn2-switch --stats` (0 when it cannot be asked) */
static uint64_t switch_datagrams(void)
{
    char cmd[600], line[1024];
    uint64_t v = 0;
    FILE *p;

    snprintf(cmd, sizeof(cmd), "%s%s%s '%s' --stats '%s' 2>/dev/null",
             switch_ns ? "ip netns exec '" : "", switch_ns ? switch_ns : "",
             switch_ns ? "'" : "", switch_bin, sw_listen);
    p = popen(cmd, "r");
    if (!p) {
        return 0;
    }
    while (fgets(line, sizeof(line), p)) {
        char *d = strstr(line, "datagrams_in=");
        if (d) {
            v = strtoull(d + 13, NULL, 10);
        }
    }
    pclose(p);
    return v;
}

/* ------------------------------------------------------------------ */
/* Boards: a QEMU each, over qtest and QMP                             */
/* ------------------------------------------------------------------ */

typedef struct Board {
    unsigned idx;
    pid_t pid;
    struct qc_qtest q;              /* qtest (tools/common/qtest-client.h) */
    struct qc_qmp m;                /* QMP */
    struct dn2_board_io io;         /* registers through q, for dn2-board-up.h */
    char log[300], mempath[300];
    uint64_t base;
    uint16_t lid;
    uint8_t *mem;
    uint32_t st_head, st_seen;
    unsigned out;                   /* RVS issued, not yet checked */
    uint32_t tail;                  /* the status ring's tail, last read */
    unsigned rr;                    /* next destination, round robin */
    uint64_t sent_bytes, got_bytes; /* checked, this pass */
} Board;

static Board *bd[MAXB];
/* seq[src][dst][slot]: the transfer in that slot (its pattern); busy
 * while it is issued and not yet checked at the receiver */
static uint32_t seq[MAXB][MAXB][KSLOTS];
static bool busy[MAXB][MAXB][KSLOTS];
static uint32_t nseq[MAXB][MAXB];

/*
 * qtest commands are pipelined: qsend() writes a command without waiting,
 * qrecv() takes the next answer (QEMU answers in order).  The main loop
 * sends to every board, then collects, so the QEMUs work on their commands
 * at the same time instead of one round trip after the other (with 32
 * QEMUs on 2 CPUs one round trip is a scheduling delay: the driver would
 * measure itself).
 */
static void qsend(Board *b, const char *cmd, size_t len)
{
    char who[32];

    n_cmds++;
    if (len && cmd[len - 1] == '\n') {
        len--;
    }
    snprintf(who, sizeof(who), "board %u qtest", b->idx);
    if (!qc_queue(&b->q, "%.*s", (int)len, cmd) || qc_send(&b->q) != QC_OK) {
        die("%s: write: %s", who, strerror(errno));
    }
}

static const char *qrecv(Board *b)
{
    const char *l;
    int e;

    l = qc_recv(&b->q, 30000, &e);
    if (e == QC_TIMEOUT) {
        die("board %u qtest: no answer within %d ms", b->idx, 30000);
    } else if (e == QC_CLOSED) {
        die("board %u qtest: connection closed (QEMU died?)", b->idx);
    } else if (e == QC_REFUSED) {
        die("board %u: a qtest command failed: '%s'", b->idx, b->q.last);
    }
    return l;
}

/* Collect every answer still due. */
static void qsync(Board *b)
{
    while (b->q.pending) {
        qrecv(b);
    }
}

/* One qtest command, waited for; its "OK ..." line. */
static const char *qt(Board *b, const char *cmd, size_t len)
{
    qsync(b);
    qsend(b, cmd, len);
    return qrecv(b);
}

static void sendf(Board *b, const char *fmt, ...)
{
    char c[128];
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(c, sizeof(c), fmt, ap);
    va_end(ap);
    qsend(b, c, (size_t)n);
}

static uint64_t readq(Board *b, uint64_t addr)
{
    char c[64];
    int n = snprintf(c, sizeof(c), "readq 0x%" PRIx64 "\n", addr);

    return qc_answer_u64(qt(b, c, (size_t)n));
}

static void writeq(Board *b, uint64_t addr, uint64_t v)
{
    char c[80];
    int n = snprintf(c, sizeof(c), "writeq 0x%" PRIx64 " 0x%" PRIx64 "\n", addr, v);

    qt(b, c, (size_t)n);
}

static void qwrite(Board *b, uint64_t addr, const uint8_t *d, size_t len)
{
    qsync(b);
    n_cmds++;
    if (!qc_queue_write(&b->q, addr, d, len) || qc_send(&b->q) != QC_OK) {
        die("board %u qtest: write: %s", b->idx, strerror(errno));
    }
    qrecv(b);
}

/* The accessor of dn2-board-up.h. */
static uint64_t io_readq(void *b, uint64_t addr) { return readq(b, addr); }
static void io_writeq(void *b, uint64_t addr, uint64_t v) { writeq(b, addr, v); }

static void ur_w(Board *b, uint32_t off, uint64_t v) { dn2_bio_ur_w(&b->io, 0, off, v); }

/* One QMP command; the value of its "return" as a number. */
static uint64_t qom(Board *b, const char *prop)
{
    uint64_t v = 0;
    int e = qc_qom_u64(&b->m, prop, &v, 10000);

    if (e == QC_REFUSED) {
        fail("board %u: qom-get %s: %s", b->idx, prop, b->m.line);
        return 0;
    }
    if (e != QC_OK) {
        die("board %u QMP: %s", b->idx, e == QC_TIMEOUT ? "no answer within 10000 ms" :
            "connection closed (QEMU died?)");
    }
    return v;
}

/* board-global SO-DIMM byte g (8-aligned) of WID 0, through the 8-byte
 * interleave of the two modules (module 0 then module 1 in the file) */
static uint64_t *sd(Board *b, uint64_t g)
{
    return (uint64_t *)(b->mem + dn2_sdimm_module(g) * (memsz / 2) + dn2_sdimm_module_offset(g));
}

static uint64_t mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

static uint64_t pat_key(unsigned src, unsigned dst, uint32_t s)
{
    return mix(((uint64_t)src << 56) ^ ((uint64_t)dst << 48) ^ s);
}

static void fill(Board *b, uint64_t at, uint64_t key)
{
    for (uint64_t w = 0; w < sz / 8; w++) {
        *sd(b, at + 8 * w) = key ^ (w * 0xd1342543de82ef95ull);
    }
}

/* true when the bytes match; reports the first bad word */
static bool check(Board *b, uint64_t at, uint64_t key, const char *what, unsigned src)
{
    for (uint64_t w = 0; w < sz / 8; w++) {
        uint64_t want = key ^ (w * 0xd1342543de82ef95ull), got = *sd(b, at + 8 * w);
        if (got != want) {
            fail("%s from board %u at board %u: byte %" PRIu64 " of %" PRIu64 " is wrong "
                 "(0x%016" PRIx64 ", want 0x%016" PRIx64 ")", what, src, b->idx, 8 * w, sz,
                 got, want);
            return false;
        }
    }
    return true;
}

/* the SO-DIMM layout (WID 0 offsets, below memsz/2) */
static uint64_t src_at(unsigned dst, unsigned k) { return SRC_BASE + ((uint64_t)dst * KSLOTS + k) * sz; }
static uint64_t rx_at(unsigned src, unsigned k) { return SRC_BASE + ((uint64_t)(nb + src) * KSLOTS + k) * sz; }
static uint64_t mc_at(unsigned src) { return SRC_BASE + (2ull * nb * KSLOTS + src) * sz; }
static uint64_t mc_src(void) { return mc_at(nb); }
static uint64_t layout_end(void) { return mc_src() + sz; }

static void board_start(Board *b, unsigned idx)
{
    char qs[300], ms[300], qsa[320], chr[340], memobj[600], dev[600], guid[32];
    char *argv[40];
    int n = 0, lq, lm;
    const char *ns = n_netns ? netns[idx % n_netns] : NULL;

    memset(b, 0, sizeof(*b));
    b->idx = idx;
    b->base = DN2_DEFAULT_BASE0;
    b->io = (struct dn2_board_io) {
        .ctx = b, .base = b->base, .readq = io_readq, .writeq = io_writeq,
    };
    snprintf(b->log, sizeof(b->log), "%s/qemu-%u.log", tmpdir, idx);
    snprintf(b->mempath, sizeof(b->mempath), "%s/sodimm-%u", tmpdir, idx);
    snprintf(qs, sizeof(qs), "%s/q%u.sock", tmpdir, idx);
    snprintf(ms, sizeof(ms), "%s/m%u.sock", tmpdir, idx);
    b->mem = qb_map_file(b->mempath, memsz);
    if (!b->mem) {
        die("SO-DIMM file %s: %s", b->mempath, strerror(errno));
    }
    lq = listen_unix(qs);
    lm = listen_unix(ms);
    snprintf(qsa, sizeof(qsa), "unix:%s", qs);
    snprintf(memobj, sizeof(memobj), "memory-backend-file,id=m,size=%" PRIu64
             ",mem-path=%s,share=on", memsz, b->mempath);
    snprintf(guid, sizeof(guid), "0x5ca1e%04x", idx + 1);
    snprintf(dev, sizeof(dev), "dimmnet2,id=dn,memdev=m,switch=%s,guid=%s", sw_listen, guid);
    qb_qemu_argv(argv, &n, qemu_bin, fw_dir, qsa);
    qc_qmp_argv(argv, &n, chr, ms);
    argv[n++] = "-object";
    argv[n++] = memobj;
    argv[n++] = "-device";
    argv[n++] = dev;
    argv[n] = NULL;
    b->pid = spawn(ns, argv, b->log);
    if (qc_open(&b->q, accept_within(lq, 30000, "qtest", b->log)) < 0 ||
        qc_qmp_open(&b->m, accept_within(lm, 30000, "QMP", b->log)) < 0) {
        die("out of memory");
    }
    close(lq);
    close(lm);
    unlink(qs);
    unlink(ms);
    if (qc_qmp_greet(&b->m, 10000) != QC_OK) {
        die("board %u: no QMP greeting or capabilities answer within 10000 ms", idx);
    }
}

/* Wait for the link (LID from the switch); 0 on timeout. */
static uint16_t board_link(Board *b, unsigned ms)
{
    uint64_t end = now_ns() + (uint64_t)ms * 1000000ull;
    uint16_t lid;

    do {
        if (dn2_bio_link(&b->io, &lid)) {
            return lid;
        }
        usleep(2000);
    } while (now_ns() < end);
    return 0;
}

static void board_init(Board *b)
{
    /* 256 MiB a module (the backend limits it), MTU 4096, PGID0, WID 0's
     * status ring */
    const struct dn2_bringup c = {
        .cap_reg = dn2_sdimm_capacity_reg(256ull << 20),
        .mtu_reg = dn2_mtu_reg(4096),
        .pgid0 = 0x5a, .pgid1 = -1,
        .st_wids = 1, .st_init = ST_OFF, .st_size_reg = dn2_status_size_reg(ST_BYTES),
    };

    b->lid = board_link(b, 20000);
    if (!b->lid) {
        die("board %u: no link from the switch at %s (see %s)", b->idx, sw_listen, b->log);
    }
    dn2_bio_bringup(&b->io, &c);
    b->st_head = b->st_seen = ST_OFF;
}

static void board_stop(Board *b)
{
    qc_close(&b->q);
    qc_qmp_close(&b->m);
    reap(b->pid, SIGTERM);
    munmap(b->mem, memsz);
    unlink(b->mempath);
}

static unsigned by_clid(uint16_t clid)
{
    for (unsigned i = 0; i < nb; i++) {
        if (dn2_lid_to_clid(bd[i]->lid) == clid) {
            return i;
        }
    }
    return MAXB;
}

/* ------------------------------------------------------------------ */
/* Traffic                                                             */
/* ------------------------------------------------------------------ */

static uint64_t mc_expect_key[MAXB];    /* current multicast pattern per source */
static unsigned mc_got;                 /* multicast copies checked */

static uint32_t st_next(uint32_t pos)
{
    return ST_OFF + (pos - ST_OFF + DN2_STATUS_REC_SIZE) % ST_BYTES;
}

/* One status record at board b. */
static void record(Board *b, uint64_t lower, uint64_t upper)
{
    struct dn2_req r;
    unsigned src, k;

    dn2_req_decode(&r, lower, upper, 0, 0, 0, 0);
    src = by_clid(r.dclid);
    if (r.src == ECHO_DST) {
        return;                         /* an echo's answer: timed elsewhere */
    }
    if (src >= nb) {
        fail("board %u: status record from unknown CLID 0x%x", b->idx, r.dclid);
        return;
    }
    if (r.arg != sz) {
        fail("board %u: status record from board %u says %u bytes, want %" PRIu64,
             b->idx, src, r.arg, sz);
        return;
    }
    if (r.src == mc_at(src)) {
        check(b, mc_at(src), mc_expect_key[src], "multicast", src);
        mc_got++;
        return;
    }
    if (r.src < rx_at(src, 0) || r.src >= rx_at(src, 0) + KSLOTS * sz ||
        (r.src - rx_at(src, 0)) % sz) {
        fail("board %u: status record from board %u for an unexpected address 0x%x",
             b->idx, src, r.src);
        return;
    }
    k = (unsigned)((r.src - rx_at(src, 0)) / sz);
    if (!busy[src][b->idx][k]) {
        fail("board %u: a second status record for slot %u from board %u", b->idx, k, src);
        return;
    }
    check(b, rx_at(src, k), pat_key(src, b->idx, seq[src][b->idx][k]), "RVS", src);
    busy[src][b->idx][k] = false;
    bd[src]->out--;
    bd[src]->sent_bytes += sz;
    b->got_bytes += sz;
}

/* Phase 1 of reading the status ring: ask for its tail. */
static void poll_send(Board *b)
{
    sendf(b, "readq 0x%" PRIx64 "\n", b->base + DN2_UR_OFF(0) + DN2_UR_STATUS_ADDR);
}

/* Phase 2: collect the answers due (the last is the tail). */
static void poll_recv(Board *b)
{
    while (b->q.pending > 1) {
        qrecv(b);
    }
    b->tail = (uint32_t)strtoull(qrecv(b) + 3, NULL, 16) & DN2_STATUS_ADDR_MASK;
}

/* Phase 3: ask for the new records (one read, two when the ring wraps). */
static unsigned rec_send(Board *b)
{
    uint64_t llcm = b->base + DN2_LLCM_OFF(0);

    if (b->tail == b->st_seen) {
        return 0;
    }
    if (b->tail > b->st_seen) {
        sendf(b, "read 0x%" PRIx64 " 0x%x\n", llcm + b->st_seen, b->tail - b->st_seen);
        return 1;
    }
    sendf(b, "read 0x%" PRIx64 " 0x%x\n", llcm + b->st_seen, ST_OFF + ST_BYTES - b->st_seen);
    if (b->tail > ST_OFF) {
        sendf(b, "read 0x%" PRIx64 " 0x%x\n", llcm + ST_OFF, b->tail - ST_OFF);
        return 2;
    }
    return 1;
}

static unsigned hexval(char c)
{
    return c <= '9' ? (unsigned)(c - '0') : (unsigned)((c | 0x20) - 'a' + 10);
}

/* Phase 4: take the records and check their data; free the ring now and
 * then (pipelined: the answer is collected with the next poll). */
static unsigned rec_recv(Board *b, unsigned reads)
{
    unsigned n = 0;

    for (unsigned r = 0; r < reads; r++) {
        const char *l = qrecv(b), *h = strstr(l, "0x");
        size_t len = h ? strlen(h + 2) / 2 : 0;
        for (size_t off = 0; off + DN2_STATUS_REC_SIZE <= len; off += DN2_STATUS_REC_SIZE) {
            uint64_t w[2] = { 0, 0 };
            for (unsigned k = 0; k < 16; k++) {
                const char *x = h + 2 + 2 * (off + k);
                w[k / 8] |= (uint64_t)(hexval(x[0]) << 4 | hexval(x[1])) << (8 * (k % 8));
            }
            record(b, w[0], w[1]);
            b->st_seen = st_next(b->st_seen);
            n++;
        }
    }
    if (n && ((b->st_seen - b->st_head + ST_BYTES) % ST_BYTES) >= 64 * DN2_STATUS_REC_SIZE) {
        sendf(b, "writeq 0x%" PRIx64 " 0x%x\n", b->base + DN2_UR_OFF(0) + DN2_UR_STATUS_ADDR,
              b->st_seen);
        b->st_head = b->st_seen;
    }
    return n;
}

/* All four phases for one board, waiting. */
static unsigned drain(Board *b)
{
    poll_send(b);
    poll_recv(b);
    return rec_recv(b, rec_send(b));
}

static void st_free_all(void)
{
    for (unsigned i = 0; i < nb; i++) {
        if (bd[i]->st_head != bd[i]->st_seen) {
            ur_w(bd[i], DN2_UR_STATUS_ADDR, bd[i]->st_seen);
            bd[i]->st_head = bd[i]->st_seen;
        }
    }
}

/* An RVS request (pipelined: the answers are collected later). */
static void rvs(Board *b, uint16_t dlid, uint64_t from, uint64_t to)
{
    uint64_t ur0 = b->base + DN2_UR_OFF(0);

    sendf(b, "writeq 0x%" PRIx64 " 0x%" PRIx64 "\n", ur0 + DN2_UR_CMD0_UPPER,
          dn2_req_upper((uint32_t)from, (uint32_t)to));
    sendf(b, "writeq 0x%" PRIx64 " 0x%" PRIx64 "\n", ur0 + DN2_UR_CMD0_LOWER,
          dn2_req_lower(DN2_OP_RVS, 0, 0, dn2_lid_to_clid(dlid), 0, 1, (uint32_t)sz));
}

/* Issue what board b has room for. */
static void issue(Board *b)
{
    unsigned tries = 0;

    fill_sum += b->out;
    fill_n++;
    while (b->out < MAX_OUT && tries < nb) {
        unsigned d = b->rr % nb, k;
        b->rr++;
        tries++;
        if (d == b->idx) {
            continue;
        }
        for (k = 0; k < KSLOTS && busy[b->idx][d][k]; k++) {
        }
        if (k == KSLOTS) {
            continue;
        }
        seq[b->idx][d][k] = ++nseq[b->idx][d];
        busy[b->idx][d][k] = true;
        fill(b, src_at(d, k), pat_key(b->idx, d, seq[b->idx][d][k]));
        rvs(b, bd[d]->lid, src_at(d, k), rx_at(b->idx, k));
        b->out++;
        tries = 0;
    }
}

/* BOTF with an RVL request to `to`, answered with ECHO_BYTES into from's
 * ECHO_DST; the round trip in ns, 0 when no answer came within 2 s. */
static uint64_t echo(Board *from, Board *to, uint32_t nonce)
{
    uint8_t img[DN2_HDR_LINES_RVL * DN2_LINE];
    struct dn2_hdr h;
    uint64_t w0, w1, t0, end;
    unsigned i;

    for (i = 0; i < ECHO_BYTES / 8; i++) {
        *sd(to, ECHO_SRC + 8 * i) = mix(nonce * 16ull + i) | 1;
        *sd(from, ECHO_DST + 8 * i) = 0;
    }
    memset(&h, 0, sizeof(h));
    memset(img, 0, sizeof(img));
    h.type = DN2_OP_RVL;
    h.hflag = 1;
    h.dlid = to->lid;
    h.eflag = 1;
    h.size = dn2_pkt_size_field(sizeof(img));
    w0 = dn2_hdr0_encode(&h);
    w1 = dn2_hdr1_encode(ECHO_SRC, ECHO_DST);
    for (i = 0; i < 8; i++) {
        img[i] = (uint8_t)(w0 >> (8 * i));
        img[8 + i] = (uint8_t)(w1 >> (8 * i));
        img[16 + i] = (uint8_t)((uint64_t)ECHO_BYTES >> (8 * i));
    }
    qwrite(from, from->base + DN2_WW_OFF(0, 0), img, sizeof(img));
    t0 = now_ns();
    ur_w(from, DN2_UR_CMD0_LOWER, dn2_botf_lower(0, sizeof(img)));
    end = t0 + 2000000000ull;
    for (;;) {
        volatile uint64_t *last = sd(from, ECHO_DST + ECHO_BYTES - 8);
        if (*last == (mix(nonce * 16ull + ECHO_BYTES / 8 - 1) | 1)) {
            uint64_t t = now_ns() - t0;
            for (i = 0; i < ECHO_BYTES / 8; i++) {
                if (*sd(from, ECHO_DST + 8 * i) != (mix(nonce * 16ull + i) | 1)) {
                    fail("echo from board %u to %u: word %u is wrong", from->idx, to->idx, i);
                }
            }
            return t;
        }
        if (now_ns() > end) {
            fail("echo from board %u to %u: no answer within 2 s", from->idx, to->idx);
            return 0;
        }
        sched_yield();
    }
}

struct pass {
    double agg_mbps, min_share, max_share, mc_mbps, fifo_fill, driver_cpu, cmds_per_s;
    double echo_med_us, echo_p99_us;
    unsigned echoes;
    uint64_t transfers;
};

static double self_cpu_s(void)
{
    struct rusage u;

    getrusage(RUSAGE_SELF, &u);
    return u.ru_utime.tv_sec + u.ru_stime.tv_sec + (u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

static void all_to_all(double seconds, unsigned echo_ms, unsigned mc_rounds, struct pass *o)
{
    uint64_t t0, t_end, next_echo, *rtt = calloc(100000, sizeof(uint64_t)), bytes = 0;
    unsigned ne = 0, e = 0;

    double c0 = self_cpu_s();
    uint64_t cmds0 = n_cmds;

    memset(o, 0, sizeof(*o));
    memset(busy, 0, sizeof(busy));
    fill_sum = fill_n = 0;
    for (unsigned i = 0; i < nb; i++) {
        bd[i]->out = 0;
        bd[i]->sent_bytes = bd[i]->got_bytes = 0;
        bd[i]->rr = i + 1;
    }
    t0 = now_ns();
    t_end = t0 + (uint64_t)(seconds * 1e9);
    next_echo = t0 + (uint64_t)echo_ms * 1000000ull;
    for (;;) {
        uint64_t t = now_ns();
        bool going = t < t_end, any = false;
        unsigned reads[MAXB];
        for (unsigned i = 0; i < nb; i++) {
            if (going) {
                issue(bd[i]);
            }
            poll_send(bd[i]);
        }
        for (unsigned i = 0; i < nb; i++) {
            poll_recv(bd[i]);
            reads[i] = rec_send(bd[i]);
        }
        for (unsigned i = 0; i < nb; i++) {
            rec_recv(bd[i], reads[i]);
        }
        for (unsigned i = 0; i < nb; i++) {
            any |= bd[i]->out > 0;
        }
        if (!going && !any) {
            break;
        }
        if (t > t_end + 60000000000ull) {
            fail("all-to-all: transfers still missing 60 s after the last was issued");
            break;
        }
        if (going && nb >= 2 && now_ns() >= next_echo && ne < 100000) {
            uint64_t r = echo(bd[e % nb], bd[(e + 1) % nb], e + 1);
            e++;
            if (r) {
                rtt[ne++] = r;
            }
            next_echo = now_ns() + (uint64_t)echo_ms * 1000000ull;
        }
    }
    {
        double dt = (now_ns() - t0) / 1e9, mx = 0, mn = 1e300;
        for (unsigned i = 0; i < nb; i++) {
            bytes += bd[i]->sent_bytes;
            mx = bd[i]->sent_bytes > mx ? bd[i]->sent_bytes : mx;
            mn = bd[i]->sent_bytes < mn ? bd[i]->sent_bytes : mn;
        }
        o->agg_mbps = bytes / dt / 1e6;
        o->fifo_fill = fill_n ? (double)fill_sum / fill_n / MAX_OUT : 0;
        o->driver_cpu = (self_cpu_s() - c0) / dt;
        o->cmds_per_s = (n_cmds - cmds0) / dt;
        o->min_share = mn / dt / 1e6;
        o->max_share = mx / dt / 1e6;
        o->transfers = bytes / sz;
    }
    if (ne) {
        qsort(rtt, ne, sizeof(*rtt), cmp_u64);
        o->echo_med_us = rtt[ne / 2] / 1e3;
        o->echo_p99_us = rtt[(uint64_t)ne * 99 / 100] / 1e3;
    }
    o->echoes = ne;
    free(rtt);
    st_free_all();

    /* multicast: every board sends to the group of all boards, each round
     * a new pattern; every member (the sender too) checks every copy */
    if (mc_rounds) {
        uint64_t m0 = now_ns();
        for (unsigned r = 0; r < mc_rounds; r++) {
            unsigned want = mc_got + nb * nb;
            for (unsigned i = 0; i < nb; i++) {
                mc_expect_key[i] = pat_key(i, 0xff, 0x10000 + r);
                fill(bd[i], mc_src(), mc_expect_key[i]);
            }
            for (unsigned i = 0; i < nb; i++) {
                rvs(bd[i], dn2_clid_to_lid(MC_GROUP), mc_src(), mc_at(i));
            }
            uint64_t end = now_ns() + 60000000000ull;
            while (mc_got < want && now_ns() < end) {
                for (unsigned j = 0; j < nb; j++) {
                    drain(bd[j]);
                }
            }
            if (mc_got < want) {
                fail("multicast round %u: %u of %u copies arrived", r, mc_got - (want - nb * nb),
                     nb * nb);
                break;
            }
        }
        o->mc_mbps = (double)mc_rounds * nb * nb * sz / ((now_ns() - m0) / 1e3);
        st_free_all();
    }
}

static const char *const stat_props[] = {
    "stat-link-dgrams-tx", "stat-link-retransmits", "stat-link-timeouts",
    "stat-link-spurious-timeouts", "stat-link-duplicates", "stat-link-drops",
    "stat-link-fast-retransmits", "stat-tx-packets",
};
#define NSTAT (sizeof(stat_props) / sizeof(stat_props[0]))

static void board_stats(uint64_t *sum)
{
    memset(sum, 0, NSTAT * sizeof(*sum));
    for (unsigned i = 0; i < nb; i++) {
        for (unsigned s = 0; s < NSTAT; s++) {
            sum[s] += qom(bd[i], stat_props[s]);
        }
    }
}

static void restart_switch(void)
{
    char listen[sizeof(sw_listen)];
    uint16_t lids[MAXB];

    for (unsigned i = 0; i < nb; i++) {
        lids[i] = bd[i]->lid;
    }
    snprintf(listen, sizeof(listen), "%s", sw_listen);
    reap(sw_pid, SIGTERM);
    usleep(300000);
    switch_start(listen);
    for (unsigned i = 0; i < nb; i++) {
        uint16_t l = board_link(bd[i], 20000);
        if (!l) {
            die("board %u: no link after the switch restart", i);
        }
        if (l != lids[i]) {
            die("board %u: LID 0x%x after the switch restart, was 0x%x", i, l, lids[i]);
        }
    }
    usleep(300000);         /* the last routing table reaches every board */
}

static void run(unsigned n, double seconds, unsigned echo_ms, unsigned mc_rounds, bool restart)
{
    Board *boards = calloc(n, sizeof(Board));
    uint64_t st0[NSTAT], st1[NSTAT], sw_cpu0, sw_dg0, rss = 0, anon = 0, q_cpu0, t_pass0;
    double d_cpu0;
    uint64_t rcvbuf0, sw_drops0;
    struct pass p;
    int n_fail0 = failures;
    int len = 0;

    nb = n;
    memset(seq, 0, sizeof(seq));
    memset(nseq, 0, sizeof(nseq));
    memsz = 2 * layout_end();
    for (uint64_t p2 = 1 << 20;; p2 <<= 1) {
        if (p2 >= memsz) {
            memsz = p2;
            break;
        }
    }
    len = snprintf(sw_group, sizeof(sw_group), "0x%x=", MC_GROUP);
    for (unsigned i = 0; i < n; i++) {
        len += snprintf(sw_group + len, sizeof(sw_group) - (size_t)len, "%s0x%x", i ? "," : "",
                        dn2_clid_to_lid((uint16_t)(i + 1)));
    }
    switch_start(listen_addr);
    for (unsigned i = 0; i < n; i++) {
        bd[i] = &boards[i];
        board_start(bd[i], i);
    }
    for (unsigned i = 0; i < n; i++) {
        board_init(bd[i]);
        /* allocate the SO-DIMM pages the traffic uses now, not during the
         * timed phase (first writes into a shared file fault per page) */
        memset(bd[i]->mem, 0, layout_end() / 2);
        memset(bd[i]->mem + memsz / 2, 0, layout_end() / 2);
    }
    /* the group names CLIDs 1..n: the switch gives out the lowest free ones */
    for (unsigned i = 0; i < n; i++) {
        unsigned c = dn2_lid_to_clid(bd[i]->lid);
        if (c < 1 || c > n) {
            die("board %u has LID 0x%x, outside the multicast group %s", i, bd[i]->lid, sw_group);
        }
    }
    usleep(300000);
    for (unsigned pass = 0; pass < (restart ? 2u : 1u); pass++) {
        if (pass) {
            restart_switch();
        }
        board_stats(st0);
        q_cpu0 = 0;
        for (unsigned i = 0; i < n; i++) {
            q_cpu0 += cpu_ns(bd[i]->pid);
        }
        d_cpu0 = self_cpu_s();
        rcvbuf0 = udp_rcvbuf_errors();
        sw_drops0 = udp_sock_drops(sw_pid);
        t_pass0 = now_ns();
        sw_cpu0 = cpu_ns(sw_pid);
        sw_dg0 = switch_datagrams();
        all_to_all(seconds, echo_ms, mc_rounds, &p);
        uint64_t sw_cpu = cpu_ns(sw_pid) - sw_cpu0, sw_dg = switch_datagrams() - sw_dg0, q_cpu = 0;
        double wall = (now_ns() - t_pass0) / 1e9, d_cpu = self_cpu_s() - d_cpu0;
        for (unsigned i = 0; i < n; i++) {
            q_cpu += cpu_ns(bd[i]->pid);
        }
        q_cpu -= q_cpu0;
        board_stats(st1);
        rss = anon = 0;
        for (unsigned i = 0; i < n; i++) {
            rss += proc_kb(bd[i]->pid, "VmRSS");
            anon += proc_kb(bd[i]->pid, "RssAnon");
        }
        double dg = (double)(st1[0] - st0[0]), re = (double)(st1[1] - st0[1]);
        double pk = (double)(st1[7] - st0[7]);
        printf("scale boards=%u route=%s switch_nice=%d pass=%u size=%" PRIu64 " seconds=%.1f transfers=%" PRIu64
               " agg_mbps=%.1f slowest_mbps=%.1f fastest_mbps=%.1f share_ratio=%.2f"
               " mcast_mbps=%.1f echo_n=%u echo_rtt_median_us=%.0f echo_rtt_p99_us=%.0f"
               " switch_cpu_ms=%.1f switch_dgrams=%" PRIu64 " switch_us_per_dgram=%.2f"
               " rss_mb_per_board=%.1f anon_mb_per_board=%.1f"
               " dgrams=%.0f packets=%.0f retransmits=%.0f retx_pct=%.3f timeouts=%" PRIu64
               " spurious=%" PRIu64 " duplicates=%" PRIu64 " drops=%" PRIu64
               " fast_retx=%" PRIu64 " queue_fill=%.2f driver_cpu=%.2f qtest_cmds_per_s=%.0f"
               " qemus_cpu=%.2f cpu_ms_per_mb=%.2f udp_rcvbuf_drops=%" PRIu64
               " switch_cpu=%.2f switch_rcvbuf_drops=%" PRIu64 " load1=%.2f\n",
               n, route, sw_nice, pass, sz, seconds, p.transfers, p.agg_mbps, p.min_share, p.max_share,
               p.max_share > 0 ? p.min_share / p.max_share : 0, p.mc_mbps, p.echoes,
               p.echo_med_us, p.echo_p99_us, sw_cpu / 1e6, sw_dg,
               sw_dg ? sw_cpu / 1e3 / sw_dg : 0, rss / 1024.0 / n, anon / 1024.0 / n, dg, pk, re,
               pk > 0 ? 100 * re / pk : 0, st1[2] - st0[2], st1[3] - st0[3], st1[4] - st0[4],
               st1[5] - st0[5], st1[6] - st0[6], p.fifo_fill, p.driver_cpu, p.cmds_per_s,
               q_cpu / 1e9 / wall,
               (q_cpu / 1e6 + sw_cpu / 1e6 + d_cpu * 1e3) /
                   ((p.transfers + (double)mc_rounds * n * n) * sz / 1e6),
               udp_rcvbuf_errors() - rcvbuf0, sw_cpu / 1e9 / wall,
               udp_sock_drops(sw_pid) - sw_drops0, load1());
        fflush(stdout);
        if (p.transfers == 0) {
            fail("boards=%u pass %u: no transfer completed", n, pass);
        }
    }
    for (unsigned i = 0; i < n; i++) {
        board_stop(bd[i]);
    }
    reap(sw_pid, SIGTERM);
    printf("scale boards=%u route=%s %s\n", n, route, failures == n_fail0 ? "ok" : "FAILED");
    fflush(stdout);
    free(boards);
}

/* The SO-DIMM files can be a GiB on /dev/shm: remove them on any exit. */
static void remove_tmpdir(void)
{
    char cmd[400];

    if (!tmpdir[0]) {
        return;
    }
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
    if (system(cmd)) {
        /* leave it */
    }
    tmpdir[0] = 0;
}

static void on_signal(int sig)
{
    (void)sig;
    exit(1);                /* atexit: remove_tmpdir (our children die with us) */
}

static uint64_t parse_size(const char *s)
{
    char *e;
    uint64_t v = strtoull(s, &e, 0);

    switch (toupper((unsigned char)*e)) {
    case 'K': return v << 10;
    case 'M': return v << 20;
    default: return v;
    }
}

static void usage(void)
{
    fprintf(stderr, "usage: dn2-scale --qemu BIN --switch BIN --fw DIR [--boards 2,4,...]\n"
            "       [--route direct|switch] [--size BYTES] [--seconds S] [--mcast-rounds N]\n"
            "       [--echo-ms MS] [--restart] [--switch-netns NS --listen ADDR:PORT]\n"
            "       [--netns NS1,NS2,...] [--switch-nice N] [--switch-arg ARG]...\n"
            "       [--tmpdir DIR]\n");
    exit(2);
}

int main(int argc, char **argv)
{
    const char *boards = "2,4,8,16,32", *tbase = NULL;
    double seconds = 5;
    unsigned echo_ms = 20, mc_rounds = 4;
    bool restart = false;

    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        bool take = true;
        if (!strcmp(a, "--restart")) {
            restart = true;
            take = false;
        } else if (!v) {
            usage();
        } else if (!strcmp(a, "--qemu")) {
            qemu_bin = v;
        } else if (!strcmp(a, "--switch")) {
            switch_bin = v;
        } else if (!strcmp(a, "--fw")) {
            fw_dir = v;
        } else if (!strcmp(a, "--boards")) {
            boards = v;
        } else if (!strcmp(a, "--route")) {
            route = v;
        } else if (!strcmp(a, "--size")) {
            sz = parse_size(v);
        } else if (!strcmp(a, "--seconds")) {
            seconds = atof(v);
        } else if (!strcmp(a, "--mcast-rounds")) {
            mc_rounds = (unsigned)atoi(v);
        } else if (!strcmp(a, "--echo-ms")) {
            echo_ms = (unsigned)atoi(v);
        } else if (!strcmp(a, "--switch-netns")) {
            switch_ns = v;
        } else if (!strcmp(a, "--listen")) {
            listen_addr = v;
        } else if (!strcmp(a, "--switch-nice")) {
            sw_nice = atoi(v);
            sw_nice_set = true;
        } else if (!strcmp(a, "--switch-arg")) {
            if (sw_nargs == sizeof(sw_args) / sizeof(sw_args[0])) {
                usage();
            }
            sw_args[sw_nargs++] = v;
        } else if (!strcmp(a, "--tmpdir")) {
            tbase = v;
        } else if (!strcmp(a, "--netns")) {
            char *s = strdup(v), *tok, *save = NULL;
            for (tok = strtok_r(s, ",", &save); tok && n_netns < MAXB;
                 tok = strtok_r(NULL, ",", &save)) {
                netns[n_netns++] = tok;
            }
        } else {
            usage();
        }
        i += take;
    }
    if (!qemu_bin || !switch_bin || !fw_dir) {
        usage();
    }
    if (strcmp(route, "direct") && strcmp(route, "switch")) {
        fprintf(stderr, "dn2-scale: --route must be direct or switch\n");
        return 2;
    }
    if (sz < 4096 || sz > (4u << 20) || sz % 16) {
        fprintf(stderr, "dn2-scale: --size must be 4K..4M, a multiple of 16\n");
        return 2;
    }
    if (!strrchr(listen_addr, ':')) {
        fprintf(stderr, "dn2-scale: --listen wants ADDR:PORT\n");
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    if (!tbase) {
        struct stat st;
        tbase = stat("/dev/shm", &st) == 0 ? "/dev/shm" : "/tmp";
    }
    snprintf(tmpdir, sizeof(tmpdir), "%s/dn2-scale.XXXXXX", tbase);
    if (!mkdtemp(tmpdir)) {
        die("mkdtemp %s: %s", tmpdir, strerror(errno));
    }
    chmod(tmpdir, 0755);
    atexit(remove_tmpdir);
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    for (const char *p = boards; *p;) {
        char *e;
        unsigned long n = strtoul(p, &e, 10);
        if (e == p || n < 2 || n > 32) {
            fprintf(stderr, "dn2-scale: --boards wants counts from 2 to 32\n");
            return 2;
        }
        run((unsigned)n, seconds, echo_ms, mc_rounds, restart);
        p = *e == ',' ? e + 1 : e;
    }
    remove_tmpdir();
    printf("%s\n", failures ? "FAIL dn2-scale: some checks failed (above)" : "dn2-scale: all checks passed");
    return failures ? 1 : 0;
}
