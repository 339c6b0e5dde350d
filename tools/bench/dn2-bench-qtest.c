/*
 * dn2-bench-qtest: figures for two DIMMnet-2 boards in two QEMUs on one
 * dn2-switch, driven over the qtest protocol (docs/benchmarks.md,
 * scripts/bench.sh).
 *
 * It is a qtest client of its own rather than a libqtest program: it
 * speaks the qtest text protocol (readq / writeq / write) on the UNIX
 * socket QEMU connects to (-qtest unix:PATH), so it builds outside QEMU's
 * tree (meson, tools/meson.build) against include/dimmnet2/dn2_abi.h and
 * tools/common (starting the QEMUs and the switch, shared with dn2-soak),
 * is not one of the project's tests, and has as little per-command
 * overhead as a qtest driver can have.
 *
 *   dn2-bench-qtest --qemu BIN --switch BIN [--fw DIR] [--iters N]
 *                   [--sizes 4K,16K,...] [--reps N] [--no-trace]
 *                   [--latency-only] [--control UDP_BOARD] [--place TAG]
 *                   [--device-opts OPTS] [--settle-us US]
 *                   [--boards-cpu N --driver-cpu M]
 *
 *   --latency-only  only the 24-byte latency figures (botf, trace, echo)
 *   --control BIN   then the same latency figures with BIN (udp-board: a
 *                   plain UDP process speaking the same qtest subset)
 *                   standing in for each QEMU: the harness's own share
 *   --place TAG     label the lines place=TAG (scripts/bench.sh runs a
 *                   second pass under taskset -c 0 as place=one-cpu)
 *   --device-opts   appended to -device dimmnet2,... (e.g. rx-thread=off)
 *   --settle-us     sleep this long after each BOTF before polling
 *   --boards-cpu N  run the switch and the QEMUs (udp-boards) on CPU N
 *   --driver-cpu M  run this driver on CPU M, busy-waiting for QEMU's
 *                   answers instead of sleeping (scripts/bench.sh: boards
 *                   on CPU 0, driver on CPU 1, place=split)
 *
 * Measures, printing one key=value line per figure:
 *   cmd       the driver's own cost: one qtest command round trip (readq
 *             and writeq of a board register), median;
 *   botf      BOTF ping-pong: A sends a BOTF (a 24-byte RVS image into
 *             B's LLCM, eflag) to B; the driver polls B's status ring and
 *             has B answer with a BOTF to A; the one-way time is the round
 *             trip / 2 (median, p99), with and without the modelled
 *             driver overhead (see docs/benchmarks.md);
 *   botf512   the same with 512-byte images;
 *   trace     the one-way time without any driver in it: the same ping-
 *             pong on a second pair of QEMUs with the trace events
 *             dimmnet2_done (sender: BOTF handed to the port) and
 *             dimmnet2_rx (receiver: packet written) logged with
 *             gettimeofday() stamps (-msg timestamp=on);
 *   echo      a board-level ping-pong timed on A alone (trace stamps): a
 *             BOTF carrying an RVL request, which B's Receive Controller
 *             answers with a 24-byte RVS; one-way = RTT / 2; B's host does
 *             nothing and only A is traced;
 *   echo-spin the echo with nobody driving A while the answer travels: the
 *             SO-DIMMs are shared files, the driver busy-waits on the
 *             answer's last word in A's SO-DIMM as a guest polls its own
 *             memory, and stamps its arrival; RTT = that stamp - A's "BOTF
 *             done" trace stamp (the QEMUs run no qtest command on the way);
 *   rvs       RVS SO-DIMM to SO-DIMM, MTU 4096, per size: one request at a
 *             time (issue -> status record seen on B) and, streamed, as
 *             many requests as the Request FIFO takes back to back.
 *
 * SPDX-License-Identifier: MIT
 */
#define _GNU_SOURCE 1
#include <ctype.h>
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
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "dimmnet2/dn2_abi.h"
#include "dn2-board-up.h"
#include "qtest-board.h"
#include "qtest-client.h"

#define ST_OFF      0x7000u
#define ST_BYTES    4096u           /* status ring */
#define ST_FREE_AT  64              /* free the ring every 64 records */

static const char *qemu_bin, *switch_bin, *fw_dir;
/* What the latency lines are about: sys=qemu (two QEMUs with boards) or
 * sys=udp (two udp-board processes, --control); place= the CPU placement
 * the caller chose (--place, e.g. "one-cpu" under taskset). */
static const char *sysname = "qemu", *place = "free";
/* On tmpfs when there is one: the trace log lines are written between a
 * stamp and the sendto() they time, so keep that write cheap. */
static char tmpdir[64];

static void die(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    fprintf(stderr, "dn2-bench-qtest: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    exit(1);
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

    return x < y ? -1 : x > y;
}

/* ------------------------------------------------------------------ */
/* Processes                                                           */
/* ------------------------------------------------------------------ */

/* --boards-cpu: the processes this driver starts (switch, QEMUs or
 * udp-boards) run on that CPU; -1 = wherever the scheduler puts them. */
static int boards_cpu = -1;
/* --driver-cpu: the driver then has a CPU of its own and busy-waits for
 * QEMU's answers instead of sleeping in read(): a sleeping driver on
 * another CPU costs the QEMU that wakes it an inter-processor interrupt,
 * tens of microseconds on a virtual machine, in the middle of the path
 * being timed. */
static bool spin_io;

static pid_t spawn(char *const argv[], const char *out)
{
    struct qb_spawn how = { .out = out, .cpu = boards_cpu };
    pid_t pid = qb_spawn(argv, &how);

    if (pid < 0) {
        die("fork: %s", strerror((int)-pid));
    }
    return pid;
}

static void reap(pid_t pid, int sig)
{
    qb_reap(pid, sig, 3000);
}

static pid_t switch_pid;
static int switch_port;

static void switch_start(void)
{
    char ready[256], log[256], listen[QB_LISTEN_LEN];
    char *argv[8];
    int n = 0;
    uint64_t end = qb_now_ns() + 10000000000ull;

    snprintf(ready, sizeof(ready), "%s/switch.port", tmpdir);
    snprintf(log, sizeof(log), "%s/switch.log", tmpdir);
    qb_switch_argv(argv, &n, switch_bin, listen, 0, ready);
    argv[n] = NULL;
    switch_pid = spawn(argv, log);
    while (qb_now_ns() < end) {
        switch_port = qb_ready_port(ready);
        if (switch_port) {
            return;
        }
        usleep(5000);
    }
    die("the switch did not start (see %s)", log);
}

/* ------------------------------------------------------------------ */
/* A QEMU driven over the qtest protocol                               */
/* ------------------------------------------------------------------ */

typedef struct Q {
    pid_t pid;
    struct qc_qtest q;          /* qtest (tools/common/qtest-client.h) */
    struct dn2_board_io io;     /* registers through q, for dn2-board-up.h */
    char name;
    uint64_t base;
    uint16_t lid;
    uint32_t st_head, st_seen;
    char mempath[256];          /* the SO-DIMM backend file when shared */
    uint8_t *mem;               /* ... mapped here (q_map) */
    size_t memsz;
} Q;

/* Echo QEMUs get their SO-DIMMs from a shared file on tmpfs, so that the
 * driver can watch the answer land in memory as a polling guest would,
 * without a qtest command in the way. */
#define SHM_SODIMM (16u << 20)
static bool shm_next;           /* the next q_start shares its SO-DIMMs */

static const char *dev_opts;    /* --device-opts: appended to -device */

static uint64_t io_readq(void *q, uint64_t addr);
static void io_writeq(void *q, uint64_t addr, uint64_t v);

static void q_start(Q *q, char name, uint64_t guid, const char *extra_dev,
                    const char *trace_log)
{
    char sock[256], mem[256], dev[512], memobj[512], qt[300], log[256];
    int lfd, fd;
    char *argv[32];
    int n = 0;
    struct pollfd p;

    memset(q, 0, sizeof(*q));
    q->name = name;
    q->base = DN2_DEFAULT_BASE0;
    q->io = (struct dn2_board_io) {
        .ctx = q, .base = q->base, .readq = io_readq, .writeq = io_writeq,
    };
    snprintf(sock, sizeof(sock), "%s/qtest-%c.sock", tmpdir, name);
    snprintf(mem, sizeof(mem), "%s/sodimm-%c", tmpdir, name);
    snprintf(log, sizeof(log), "%s/qemu-%c.log", tmpdir, name);
    lfd = qb_listen_unix(sock);
    if (lfd < 0) {
        die("qtest socket %s: %s", sock, strerror(-lfd));
    }
    if (shm_next) {
        snprintf(q->mempath, sizeof(q->mempath), "%s", mem);
        snprintf(memobj, sizeof(memobj), "memory-backend-file,id=m,size=%u,mem-path=%s,share=on",
                 SHM_SODIMM, mem);
    } else {
        /* the SO-DIMMs in RAM: 512 MiB, 256 MiB per process */
        snprintf(memobj, sizeof(memobj), "memory-backend-ram,id=m,size=512M");
    }
    snprintf(dev, sizeof(dev), "dimmnet2,id=dn,memdev=m,switch=127.0.0.1:%d,guid=0x%" PRIx64
             "%s%s%s", switch_port, guid, extra_dev ? extra_dev : "", dev_opts ? "," : "",
             dev_opts ? dev_opts : "");
    snprintf(qt, sizeof(qt), "unix:%s", sock);
    qb_qemu_argv(argv, &n, qemu_bin, fw_dir, qt);
    argv[n++] = "-object";
    argv[n++] = memobj;
    argv[n++] = "-device";
    argv[n++] = dev;
    if (trace_log) {
        argv[n++] = "-trace";
        argv[n++] = "dimmnet2_done";
        argv[n++] = "-trace";
        argv[n++] = "dimmnet2_rx";
        argv[n++] = "-msg";
        argv[n++] = "timestamp=on";
        argv[n++] = "-D";
        argv[n++] = (char *)trace_log;
    }
    argv[n] = NULL;
    q->pid = spawn(argv, log);
    p.fd = lfd;
    p.events = POLLIN;
    if (poll(&p, 1, 20000) <= 0) {
        die("QEMU %c did not connect to %s (see %s)", name, sock, log);
    }
    fd = accept(lfd, NULL, NULL);
    close(lfd);
    unlink(sock);
    if (fd < 0) {
        die("accept: %s", strerror(errno));
    }
    if (qc_open(&q->q, fd) < 0) {
        die("out of memory");
    }
}

/* Map the shared SO-DIMM file (after board_up: the board exists). */
static void q_map(Q *q)
{
    int fd = open(q->mempath, O_RDWR);
    struct stat st;

    if (fd < 0 || fstat(fd, &st) < 0 || (size_t)st.st_size < SHM_SODIMM) {
        die("SO-DIMM file %s: %s", q->mempath, fd < 0 ? strerror(errno) : "too small");
    }
    q->memsz = SHM_SODIMM;
    q->mem = mmap(NULL, q->memsz, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (q->mem == MAP_FAILED) {
        die("mmap %s: %s", q->mempath, strerror(errno));
    }
}

/* The host address of board-global SO-DIMM byte g (8-byte aligned): the
 * two modules are the two halves of the backend, interleaved by 8 bytes. */
static volatile uint64_t *sd_word(Q *q, uint64_t g)
{
    return (volatile uint64_t *)(q->mem + dn2_sdimm_module(g) * (q->memsz / 2) +
                                 dn2_sdimm_module_offset(g));
}

static void q_stop(Q *q)
{
    if (q->mem) {
        munmap(q->mem, q->memsz);
        q->mem = NULL;
    }
    if (q->q.in) {
        qc_close(&q->q);
    }
    reap(q->pid, SIGTERM);
    q->pid = 0;
}

/* One command, one response line (without "\n"). */
static const char *q_cmd(Q *q, const char *cmd, size_t len)
{
    const char *l;
    int e;

    q->q.spin = spin_io;
    l = qc_cmd(&q->q, 60000, &e, "%.*s", (int)len - 1, cmd);
    if (!l) {
        if (e == QC_REFUSED) {
            die("QEMU %c: '%.*s' -> '%s'", q->name, (int)len - 1, cmd, q->q.last);
        }
        die("QEMU %c: qtest connection %s", q->name, qc_strerror(e));
    }
    return l;
}

static uint64_t q_readq(Q *q, uint64_t addr)
{
    char c[64];
    int n = snprintf(c, sizeof(c), "readq 0x%" PRIx64 "\n", addr);

    return qc_answer_u64(q_cmd(q, c, n));
}

static void q_writeq(Q *q, uint64_t addr, uint64_t v)
{
    char c[80];
    int n = snprintf(c, sizeof(c), "writeq 0x%" PRIx64 " 0x%" PRIx64 "\n", addr, v);

    q_cmd(q, c, n);
}

static void q_write(Q *q, uint64_t addr, const uint8_t *data, size_t len)
{
    int e;

    q->q.spin = spin_io;
    if (!qc_queue_write(&q->q, addr, data, len)) {
        die("QEMU %c: a write of %zu bytes does not fit a qtest batch", q->name, len);
    }
    e = qc_flush(&q->q, 60000);
    if (e == QC_REFUSED) {
        die("QEMU %c: write of %zu bytes -> '%s'", q->name, len, q->q.last);
    } else if (e != QC_OK) {
        die("QEMU %c: qtest connection %s", q->name, qc_strerror(e));
    }
}

static uint64_t io_readq(void *q, uint64_t addr)
{
    return q_readq(q, addr);
}

static void io_writeq(void *q, uint64_t addr, uint64_t v)
{
    q_writeq(q, addr, v);
}

static uint64_t ur(Q *q, uint32_t off)
{
    return dn2_bio_ur(&q->io, 0, off);
}
static void ur_w(Q *q, uint32_t off, uint64_t v)
{
    dn2_bio_ur_w(&q->io, 0, off, v);
}

static void board_up(Q *q)
{
    /* 256 MiB a module, MTU 4096, PGID0, WID 0's status ring */
    const struct dn2_bringup c = {
        .cap_reg = dn2_sdimm_capacity_reg(256ull << 20),
        .mtu_reg = dn2_mtu_reg(4096),
        .pgid0 = 0x5a, .pgid1 = -1,
        .st_wids = 1, .st_init = ST_OFF, .st_size_reg = dn2_status_size_reg(ST_BYTES),
    };
    uint64_t end = qb_now_ns() + 10000000000ull;
    bool up;

    do {
        up = dn2_bio_link(&q->io, &q->lid);
        if (up) {
            break;
        }
        usleep(1000);
    } while (qb_now_ns() < end);
    if (!up) {
        die("board %c: no link", q->name);
    }
    dn2_bio_bringup(&q->io, &c);
    q->st_head = q->st_seen = ST_OFF;
}

static uint32_t st_next(uint32_t pos)
{
    return ST_OFF + (pos - ST_OFF + DN2_STATUS_REC_SIZE) % ST_BYTES;
}

/* Command round trips timed during a measurement (the driver's cost under
 * the same conditions). */
static uint64_t *cmd_t[2];
static unsigned cmd_n[2], cmd_cap;

static void cmd_note(int write, uint64_t ns)
{
    if (cmd_t[write] && cmd_n[write] < cmd_cap) {
        cmd_t[write][cmd_n[write]++] = ns;
    }
}

/* Spin until the board's status tail passes st_seen; returns polls. */
static unsigned st_wait(Q *q, uint64_t timeout_ns)
{
    uint64_t end = qb_now_ns() + timeout_ns;
    unsigned polls = 0;

    for (;;) {
        uint64_t t0 = qb_now_ns();
        uint64_t t = ur(q, DN2_UR_STATUS_ADDR);
        cmd_note(0, qb_now_ns() - t0);
        polls++;
        if (t != q->st_seen) {
            q->st_seen = st_next(q->st_seen);
            return polls;
        }
        if (qb_now_ns() > end) {
            die("board %c: no status record", q->name);
        }
    }
}

/* Give consumed records back when many have accumulated (off any timed
 * path). */
static void st_free(Q *q, bool force)
{
    uint32_t used = (q->st_seen - q->st_head + ST_BYTES) % ST_BYTES;

    if (used && (force || used >= ST_FREE_AT * DN2_STATUS_REC_SIZE)) {
        ur_w(q, DN2_UR_STATUS_ADDR, q->st_seen);
        q->st_head = q->st_seen;
    }
}

/* ------------------------------------------------------------------ */
/* Figures                                                             */
/* ------------------------------------------------------------------ */

static void stats(const char *what, uint64_t *v, unsigned n, double *med, double *p99)
{
    qsort(v, n, sizeof(*v), cmp_u64);
    *med = v[n / 2] / 1000.0;
    *p99 = v[(uint64_t)n * 99 / 100] / 1000.0;
    (void)what;
}

static double cmd_cost(Q *q, bool write, unsigned n)
{
    uint64_t *v = calloc(n, sizeof(*v));
    double med, p99;
    unsigned i;

    for (i = 0; i < n; i++) {
        uint64_t t0 = qb_now_ns();
        if (write) {
            ur_w(q, DN2_UR_CMD_EX, i);
        } else {
            ur(q, DN2_UR_CTL_STATUS);
        }
        v[i] = qb_now_ns() - t0;
    }
    stats("cmd", v, n, &med, &p99);
    free(v);
    return med;
}

/* BOTF image: an RVS packet into the peer's LLCM with eflag. */
static void botf_image(Q *from, Q *to, unsigned bytes)
{
    uint8_t img[DN2_BOTF_MAX];
    struct dn2_hdr h;
    uint64_t w0;
    unsigned i;

    memset(&h, 0, sizeof(h));
    memset(img, 0, sizeof(img));
    h.type = DN2_OP_RVS;
    h.dlid = to->lid;
    h.eflag = 1;
    h.lflag = 1;
    h.w1_lo = h.w1_hi = 0x1000;
    h.size = dn2_pkt_size_field(bytes);
    w0 = dn2_hdr0_encode(&h);
    for (i = 0; i < 8; i++) {
        img[i] = (uint8_t)(w0 >> (8 * i));
        img[8 + i] = (uint8_t)(dn2_hdr1_encode(h.w1_lo, h.w1_hi) >> (8 * i));
    }
    for (i = 16; i < bytes; i++) {
        img[i] = (uint8_t)i;
    }
    q_write(from, from->base + DN2_WW_OFF(0, 0), img, bytes);
}

/* Ping-pong of n round trips; fills rt[] (ns); returns the mean number of
 * status polls per one-way trip. */
static unsigned settle_us;      /* sleep this long before polling */

static double pingpong(Q *a, Q *b, unsigned bytes, unsigned n, uint64_t *rt)
{
    uint64_t lower = dn2_botf_lower(0, bytes);
    uint64_t polls = 0;
    unsigned i, warm = n / 10 + 10;

    botf_image(a, b, bytes);
    botf_image(b, a, bytes);
    for (i = 0; i < warm + n; i++) {
        uint64_t t0 = qb_now_ns(), t1, tw;
        ur_w(a, DN2_UR_CMD0_LOWER, lower);
        cmd_note(1, qb_now_ns() - t0);
        if (settle_us) {
            usleep(settle_us);
        }
        polls += st_wait(b, 5000000000ull);
        tw = qb_now_ns();
        ur_w(b, DN2_UR_CMD0_LOWER, lower);
        cmd_note(1, qb_now_ns() - tw);
        if (settle_us) {
            usleep(settle_us);
        }
        polls += st_wait(a, 5000000000ull);
        t1 = qb_now_ns();
        if (i >= warm) {
            rt[i - warm] = t1 - t0;
        }
        st_free(a, false);
        st_free(b, false);
    }
    st_free(a, true);
    st_free(b, true);
    return (double)polls / (2.0 * (warm + n));
}

/* Trace stamps: "pid@sec.usec:dimmnet2_done board 0 WID 0 BOTF done..." */
static unsigned read_stamps(const char *path, const char *event, uint64_t *t, unsigned max)
{
    FILE *f = fopen(path, "r");
    char line[512];
    unsigned n = 0;

    if (!f) {
        return 0;
    }
    while (n < max && fgets(line, sizeof(line), f)) {
        char *at = strchr(line, '@'), *colon;
        unsigned long long s, us;
        if (!at || !strstr(line, event)) {
            continue;
        }
        if (!strcmp(event, "dimmnet2_done") && !strstr(line, " BOTF ")) {
            continue;
        }
        if (sscanf(at + 1, "%llu.%llu", &s, &us) != 2 || !(colon = strchr(at, ':'))) {
            continue;
        }
        t[n++] = s * 1000000ull + us;
    }
    fclose(f);
    return n;
}

/* BOTF image carrying an RVL request: B's Receive Controller answers it
 * with an RVS of `bytes` from its SO-DIMM into A's SO-DIMM, with eflag, so
 * A gets a status record and B's host does nothing.  A board-level
 * ping-pong: the BOTF goes out, the answer comes back. */
static void echo_image(Q *from, Q *to, unsigned bytes)
{
    uint8_t img[DN2_HDR_LINES_RVL * DN2_LINE];
    struct dn2_hdr h;
    uint64_t w0, w1;
    unsigned i;

    memset(&h, 0, sizeof(h));
    memset(img, 0, sizeof(img));
    h.type = DN2_OP_RVL;
    h.hflag = 1;
    h.dlid = to->lid;
    h.eflag = 1;
    h.size = dn2_pkt_size_field(sizeof(img));
    w0 = dn2_hdr0_encode(&h);
    w1 = dn2_hdr1_encode(0x40000, 0x80000);     /* B's source, A's target */
    for (i = 0; i < 8; i++) {
        img[i] = (uint8_t)(w0 >> (8 * i));
        img[8 + i] = (uint8_t)(w1 >> (8 * i));
        img[16 + i] = (uint8_t)((uint64_t)bytes >> (8 * i));   /* total, stride 0 */
    }
    q_write(from, from->base + DN2_WW_OFF(0, 0), img, sizeof(img));
}

/* Echo ping-pong, timed on A alone by trace stamps: BOTF done -> answer
 * in.  Tracing only A keeps B's path free of log writes. */
static void trace_echo(unsigned bytes, unsigned n)
{
    char la[256];
    Q a, b;
    unsigned max = 2 * n + 100, nd, nr, i, k = 0, off;
    uint64_t *ad = calloc(max, 8), *arx = calloc(max, 8), *ow = calloc(max, 8);
    uint64_t lower = dn2_botf_lower(0, DN2_HDR_LINES_RVL * DN2_LINE);
    double med, p99;

    snprintf(la, sizeof(la), "%s/trace-echo.log", tmpdir);
    q_start(&a, 'a', 0x7c, NULL, la);
    q_start(&b, 'b', 0x7d, NULL, NULL);
    board_up(&a);
    board_up(&b);
    echo_image(&a, &b, bytes);
    for (i = 0; i < n + n / 10 + 10; i++) {
        ur_w(&a, DN2_UR_CMD0_LOWER, lower);
        if (settle_us) {
            usleep(settle_us);
        }
        st_wait(&a, 5000000000ull);
        st_free(&a, false);
    }
    st_free(&a, true);
    q_stop(&a);
    q_stop(&b);
    nd = read_stamps(la, "dimmnet2_done", ad, max);
    nr = read_stamps(la, "dimmnet2_rx", arx, max);
    if (nd != nr || !nd) {
        printf("echo bytes=%u sys=%s place=%s failed=1 done=%u rx=%u\n", bytes, sysname, place,
               nd, nr);
        goto out;
    }
    off = nd / 10 + 10;
    for (i = off; i < nd; i++) {
        ow[k++] = (arx[i] - ad[i]) * 1000 / 2;
    }
    stats("echo", ow, k, &med, &p99);
    printf("echo bytes=%u sys=%s place=%s samples=%u oneway_median_us=%.2f "
           "oneway_p99_us=%.2f\n", bytes, sysname, place, k, med, p99);
out:
    free(ad);
    free(arx);
    free(ow);
}

static uint64_t real_ns(void)
{
    struct timespec t;

    clock_gettime(CLOCK_REALTIME, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

/* The echo again, but nobody drives A while the answer is on its way: the
 * driver watches A's SO-DIMM in shared memory (as a guest polls its own
 * memory) and stamps the moment the answer's last word lands.  RTT = that
 * stamp - A's "BOTF done" trace stamp; neither QEMU runs a qtest command
 * during the trip, so this is the board-to-board-and-back path alone. */
static void spin_echo(unsigned bytes, unsigned n)
{
    const uint64_t src = 0x40000, dst = 0x80000;
    char la[256];
    Q a, b;
    unsigned max = n + n / 10 + 10, nd, i, k = 0, off;
    uint64_t *ad = calloc(max + 100, 8), *t1 = calloc(max, 8), *ow = calloc(max, 8);
    uint64_t lower = dn2_botf_lower(0, DN2_HDR_LINES_RVL * DN2_LINE);
    uint64_t last = dst + ((bytes - 1) & ~7ull), w;
    double med, p99;

    snprintf(la, sizeof(la), "%s/trace-spin.log", tmpdir);
    shm_next = true;
    q_start(&a, 'a', 0x7e, NULL, la);
    q_start(&b, 'b', 0x7f, NULL, NULL);
    shm_next = false;
    board_up(&a);
    board_up(&b);
    q_map(&a);
    q_map(&b);
    for (w = 0; w < bytes; w += 8) {
        *sd_word(&b, src + w) = 0x5a5a5a5a00000001ull + w;
    }
    echo_image(&a, &b, bytes);
    for (i = 0; i < max; i++) {
        uint64_t t0 = qb_now_ns();
        for (w = 0; w < bytes; w += 8) {
            *sd_word(&a, dst + w) = 0;
        }
        __atomic_thread_fence(__ATOMIC_SEQ_CST);
        ur_w(&a, DN2_UR_CMD0_LOWER, lower);
        while (!*sd_word(&a, last)) {
            if (qb_now_ns() - t0 > 5000000000ull) {
                printf("echo-spin bytes=%u sys=%s place=%s failed=1 at=%u\n", bytes, sysname,
                       place, i);
                goto out;
            }
        }
        t1[i] = real_ns();
        st_wait(&a, 5000000000ull);     /* the status record, off the clock */
        st_free(&a, false);
    }
    st_free(&a, true);
out:
    q_stop(&a);
    q_stop(&b);
    if (i < max) {
        goto free;
    }
    nd = read_stamps(la, "dimmnet2_done", ad, max + 100);
    if (nd != max) {
        printf("echo-spin bytes=%u sys=%s place=%s failed=1 done=%u kicks=%u\n", bytes, sysname,
               place, nd, max);
        goto free;
    }
    off = max - n;
    for (i = off; i < max; i++) {
        /* the trace stamp is truncated to the microsecond: +0.5 us */
        int64_t rtt = (int64_t)t1[i] - (int64_t)(ad[i] * 1000 + 500);
        ow[k++] = rtt > 0 ? (uint64_t)rtt / 2 : 0;
    }
    stats("echo-spin", ow, k, &med, &p99);
    printf("echo-spin bytes=%u sys=%s place=%s samples=%u oneway_median_us=%.2f "
           "oneway_p99_us=%.2f\n", bytes, sysname, place, k, med, p99);
free:
    free(ad);
    free(t1);
    free(ow);
}

static void trace_oneway(unsigned bytes, unsigned n)
{
    char la[256], lb[256];
    Q a, b;
    uint64_t *rt = calloc(n, sizeof(*rt));
    unsigned max = 4 * n + 100, na_done, nb_rx, nb_done, na_rx, i, k = 0, off;
    uint64_t *ad = calloc(max, 8), *brx = calloc(max, 8), *bd = calloc(max, 8),
             *arx = calloc(max, 8), *ow = calloc(2 * max, 8);
    double med, p99;

    snprintf(la, sizeof(la), "%s/trace-A.log", tmpdir);
    snprintf(lb, sizeof(lb), "%s/trace-B.log", tmpdir);
    q_start(&a, 'a', 0x7a, NULL, la);
    q_start(&b, 'b', 0x7b, NULL, lb);
    board_up(&a);
    board_up(&b);
    pingpong(&a, &b, bytes, n, rt);
    q_stop(&a);
    q_stop(&b);
    na_done = read_stamps(la, "dimmnet2_done", ad, max);
    na_rx = read_stamps(la, "dimmnet2_rx", arx, max);
    nb_done = read_stamps(lb, "dimmnet2_done", bd, max);
    nb_rx = read_stamps(lb, "dimmnet2_rx", brx, max);
    if (na_done != nb_rx || nb_done != na_rx || !na_done) {
        printf("trace bytes=%u sys=%s place=%s failed=1 a_done=%u b_rx=%u b_done=%u a_rx=%u\n",
               bytes, sysname, place,
               na_done, nb_rx, nb_done, na_rx);
        goto out;
    }
    /* skip the warm-up trips */
    off = na_done / 10;
    for (i = off; i < na_done; i++) {
        ow[k++] = (brx[i] - ad[i]) * 1000;
    }
    for (i = off; i < nb_done; i++) {
        ow[k++] = (arx[i] - bd[i]) * 1000;
    }
    stats("trace", ow, k, &med, &p99);
    printf("trace bytes=%u sys=%s place=%s samples=%u oneway_median_us=%.1f "
           "oneway_p99_us=%.1f\n", bytes, sysname, place, k,
           med, p99);
out:
    free(rt);
    free(ad);
    free(brx);
    free(bd);
    free(arx);
    free(ow);
}

/* One RVS of `size` at a time: issue -> record seen at B. */
static void rvs_single(Q *a, Q *b, uint64_t size, unsigned reps)
{
    uint64_t *t = calloc(reps, sizeof(*t));
    uint64_t lower = dn2_req_lower(DN2_OP_RVS, 0, 0, dn2_lid_to_clid(b->lid), 0, 1,
                                   (uint32_t)size);
    double med, p99;
    unsigned i;

    ur_w(a, DN2_UR_CMD0_UPPER, dn2_req_upper(0, 0));
    /* warm-up: touch the pages */
    ur_w(a, DN2_UR_CMD0_LOWER, lower);
    st_wait(b, 60000000000ull);
    for (i = 0; i < reps; i++) {
        uint64_t t0 = qb_now_ns();
        ur_w(a, DN2_UR_CMD0_LOWER, lower);
        st_wait(b, 60000000000ull);
        t[i] = qb_now_ns() - t0;
        st_free(b, false);
    }
    st_free(b, true);
    stats("rvs", t, reps, &med, &p99);
    /* best = least disturbed */
    printf("rvs mode=single size=%" PRIu64 " reps=%u median_us=%.1f best_us=%.1f "
           "median_mbps=%.1f best_mbps=%.1f\n", size, reps, med, t[0] / 1000.0,
           size / med, size / (t[0] / 1000.0));
    free(t);
}

/* n RVS of `size` back to back (the FIFO is kept full), total time. */
static void rvs_stream(Q *a, Q *b, uint64_t size, unsigned n, unsigned reps)
{
    uint64_t lower = dn2_req_lower(DN2_OP_RVS, 0, 0, dn2_lid_to_clid(b->lid), 0, 1,
                                   (uint32_t)size);
    uint64_t *t = calloc(reps, sizeof(*t));
    double med, p99;
    unsigned r;

    ur_w(a, DN2_UR_CMD0_UPPER, dn2_req_upper(0, 0));
    for (r = 0; r < reps; r++) {
        unsigned issued = 0, seen = 0, done0 = dn2_pc_field(ur(a, DN2_UR_PRIM_COUNTER),
                                                             DN2_PC_RVS);
        uint64_t t0 = qb_now_ns();
        while (seen < n) {
            /* the sender's RVS counter tells how many left the FIFO */
            unsigned done = (dn2_pc_field(ur(a, DN2_UR_PRIM_COUNTER), DN2_PC_RVS) -
                             done0) & DN2_PC_MASK;
            unsigned room = 13 - (issued - done < 13 ? issued - done : 13);
            while (room-- && issued < n) {
                ur_w(a, DN2_UR_CMD0_LOWER, lower);
                issued++;
            }
            while (seen < n && ur(b, DN2_UR_STATUS_ADDR) != b->st_seen) {
                b->st_seen = st_next(b->st_seen);
                seen++;
            }
            st_free(b, false);
        }
        t[r] = qb_now_ns() - t0;
        st_free(b, true);
    }
    stats("rvs", t, reps, &med, &p99);
    printf("rvs mode=stream size=%" PRIu64 " count=%u reps=%u median_mbps=%.1f "
           "best_mbps=%.1f\n", size, n, reps, (double)size * n / med,
           (double)size * n / (t[0] / 1000.0));
    free(t);
}

/* BOTF ping-pong RTT/2 (24 B, and 512 B when nsizes is 2), driven
 * through qtest, with the driver's own command cost timed alongside. */
static void botf_pingpongs(Q *a, Q *b, unsigned iters, unsigned nsizes)
{
    uint64_t *rt = calloc(iters, sizeof(*rt));
    double med, p99, polls;
    unsigned i;

    cmd_cap = 64 * iters;
    cmd_t[0] = calloc(cmd_cap, sizeof(uint64_t));
    cmd_t[1] = calloc(cmd_cap, sizeof(uint64_t));
    for (i = 0; i < nsizes; i++) {
        unsigned bytes = i ? DN2_BOTF_MAX : 24;
        double ir, iw, ovh, x;

        cmd_n[0] = cmd_n[1] = 0;
        polls = pingpong(a, b, bytes, iters, rt);
        stats("botf", rt, iters, &med, &p99);
        /* the commands' own round trips, timed inside this ping-pong */
        stats("readq", cmd_t[0], cmd_n[0], &ir, &x);
        stats("writeq", cmd_t[1], cmd_n[1], &iw, &x);
        /* one-way = RTT/2.  Per one-way trip the driver issues one writeq
         * (the BOTF) and at least one readq (the poll that sees the
         * record): that much is the driver's, not the boards'. */
        ovh = iw + ir;
        printf("botf bytes=%u sys=%s place=%s iters=%u oneway_median_us=%.1f "
               "oneway_p99_us=%.1f polls_per_trip=%.2f readq_us=%.1f writeq_us=%.1f "
               "driver_overhead_us=%.1f net_median_us=%.1f net_p99_us=%.1f\n", bytes, sysname,
               place, iters, med / 2, p99 / 2, polls, ir, iw, ovh, med / 2 - ovh, p99 / 2 - ovh);
    }
    free(cmd_t[0]);
    free(cmd_t[1]);
    cmd_t[0] = cmd_t[1] = NULL;
    free(rt);
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

int main(int argc, char **argv)
{
    unsigned iters = 2000, reps = 5, i, nsizes = 0;
    uint64_t sizes[32];
    const char *sizes_s = "4K,16K,64K,256K,1M,4M,16M,64M";
    bool trace = true, trace_only = false;
    Q a, b;
    double cr, cw;
    const char *control = NULL;

    char *tok, *dup;

    setvbuf(stdout, NULL, _IOLBF, 0);
    fw_dir = getenv("DN2_FIRMWARE_DIR");
    for (i = 1; i < (unsigned)argc; i++) {
        if (!strcmp(argv[i], "--qemu") && i + 1 < (unsigned)argc) {
            qemu_bin = argv[++i];
        } else if (!strcmp(argv[i], "--switch") && i + 1 < (unsigned)argc) {
            switch_bin = argv[++i];
        } else if (!strcmp(argv[i], "--fw") && i + 1 < (unsigned)argc) {
            fw_dir = argv[++i];
        } else if (!strcmp(argv[i], "--iters") && i + 1 < (unsigned)argc) {
            iters = strtoul(argv[++i], NULL, 0);
        } else if (!strcmp(argv[i], "--reps") && i + 1 < (unsigned)argc) {
            reps = strtoul(argv[++i], NULL, 0);
        } else if (!strcmp(argv[i], "--sizes") && i + 1 < (unsigned)argc) {
            sizes_s = argv[++i];
        } else if (!strcmp(argv[i], "--device-opts") && i + 1 < (unsigned)argc) {
            dev_opts = argv[++i];
        } else if (!strcmp(argv[i], "--boards-cpu") && i + 1 < (unsigned)argc) {
            boards_cpu = atoi(argv[++i]);
        } else if (!strcmp(argv[i], "--driver-cpu") && i + 1 < (unsigned)argc) {
            cpu_set_t set;
            CPU_ZERO(&set);
            CPU_SET(atoi(argv[++i]), &set);
            if (sched_setaffinity(0, sizeof(set), &set) < 0) {
                die("--driver-cpu: %s", strerror(errno));
            }
            spin_io = true;
        } else if (!strcmp(argv[i], "--settle-us") && i + 1 < (unsigned)argc) {
            settle_us = strtoul(argv[++i], NULL, 0);
        } else if (!strcmp(argv[i], "--latency-only")) {
            trace_only = true;
        } else if (!strcmp(argv[i], "--control") && i + 1 < (unsigned)argc) {
            control = argv[++i];
        } else if (!strcmp(argv[i], "--place") && i + 1 < (unsigned)argc) {
            place = argv[++i];
        } else if (!strcmp(argv[i], "--no-trace")) {
            trace = false;
        } else {
            fprintf(stderr, "usage: dn2-bench-qtest --qemu BIN --switch BIN [--fw DIR] "
                    "[--iters N] [--reps N] [--sizes 4K,1M,...] [--no-trace] [--latency-only]\n"
                    "       [--control UDP_BOARD] [--place TAG] [--device-opts OPTS] "
                    "[--settle-us US]\n"
                    "       [--boards-cpu N --driver-cpu M]\n");
            return 2;
        }
    }
    if (!qemu_bin || !switch_bin || !fw_dir || iters < 10 || !reps) {
        die("need --qemu, --switch and --fw (or DN2_FIRMWARE_DIR)");
    }
    dup = strdup(sizes_s);
    for (tok = strtok(dup, ","); tok && nsizes < 32; tok = strtok(NULL, ",")) {
        sizes[nsizes++] = parse_size(tok);
    }
    free(dup);
    snprintf(tmpdir, sizeof(tmpdir), "%s/dn2-bench-XXXXXX",
             access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp");
    if (!mkdtemp(tmpdir)) {
        die("mkdtemp: %s", strerror(errno));
    }
    signal(SIGPIPE, SIG_IGN);

    switch_start();
    if (trace_only) {
        q_start(&a, 'A', 0xa1, NULL, NULL);
        q_start(&b, 'B', 0xb1, NULL, NULL);
        board_up(&a);
        board_up(&b);
        botf_pingpongs(&a, &b, iters, 1);
        q_stop(&a);
        q_stop(&b);
        goto traced;
    }
    q_start(&a, 'A', 0xa1, NULL, NULL);
    q_start(&b, 'B', 0xb1, NULL, NULL);
    board_up(&a);
    board_up(&b);
    printf("setup switch_port=%d lid_a=0x%x lid_b=0x%x route=direct\n", switch_port,
           a.lid, b.lid);

    cr = cmd_cost(&a, false, 20000);
    cw = cmd_cost(&a, true, 20000);
    printf("cmd readq_median_us=%.2f writeq_median_us=%.2f\n", cr, cw);

    botf_pingpongs(&a, &b, iters, 2);
    for (i = 0; i < nsizes; i++) {
        uint64_t s = sizes[i];
        unsigned r = s <= (1u << 20) ? 50 : s <= (16u << 20) ? 10 : reps;
        unsigned cnt = s >= (64u << 20) ? 4 : (unsigned)((256ull << 20) / s);
        if (cnt > 200) {
            cnt = 200;
        }
        if (cnt < 4) {
            cnt = 4;
        }
        rvs_single(&a, &b, s, r);
        rvs_stream(&a, &b, s, cnt, reps);
    }
    q_stop(&a);
    q_stop(&b);

traced:
    if (trace) {
        trace_oneway(24, iters);
        trace_echo(24, iters);
        spin_echo(24, iters);
    }
    if (control) {
        /* The same latency measurements on two plain UDP processes. */
        qemu_bin = control;
        sysname = "udp";
        q_start(&a, 'C', 0xc1, NULL, NULL);
        q_start(&b, 'D', 0xd1, NULL, NULL);
        board_up(&a);
        board_up(&b);
        botf_pingpongs(&a, &b, iters, 1);
        q_stop(&a);
        q_stop(&b);
        if (trace) {
            trace_oneway(24, iters);
            trace_echo(24, iters);
            spin_echo(24, iters);
        }
    }
    reap(switch_pid, SIGTERM);
    {
        char cmd[512];
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
        if (system(cmd)) {
            /* leave it */
        }
    }
    return 0;
}
