/*
 * dn2-soak: a bounded soak / fuzz run of DIMMnet-2 boards (docs/reliability.md,
 * scripts/soak.sh).
 *
 * Like tools/bench/dn2-bench-qtest.c it is a qtest client of its own: it
 * starts QEMUs with -accel qtest, speaks the qtest text protocol on the UNIX
 * socket each QEMU connects to (commands pipelined: a batch of commands is
 * written at once and the answers read back together) and QMP on a second
 * socket (qom-get of the board's counters, system_reset).  No guest OS.
 *
 *   dn2-soak --qemu BIN --switch BIN --fw DIR [--quick] [--seed S]
 *            [--phases mmio,hostile,secret,rvs,join] [--mmio-ops N] [--datagrams N]
 *            [--rvs-mib N] [--reset-board N] [--join-rounds N] [--join-spoof-ms N]
 *            [--keep] [--verbose]
 *
 * Phases (each with QEMUs and a switch of its own; a failed phase is
 * reported with the boards' state and the run goes on with the next):
 *
 *   mmio     random guest MMIO (sizes 1/2/4/8, anywhere in the 0x60000-byte
 *            window, biased toward the User/System Register pages and toward
 *            valid-looking requests: Upper/Ex then a doorbell with random
 *            opcodes, offsets, sizes, strides; now and then a Controller
 *            Reset) on two boards linked by a switch and one in loopback;
 *            at intervals every board gets a Controller Reset, a normal
 *            bring-up and known-good RVS and RVL round trips that must be
 *            byte-exact within a timeout.
 *   hostile  random and mutated fabric datagrams from 127.0.0.1 sockets to
 *            two boards' UDP ports and to the switch's: random bytes, valid
 *            headers with random bodies, truncated / extended / bit-flipped
 *            well-formed messages of every type, DATA forged from another
 *            board's LID with the right epochs, and from a peer that
 *            registered with the switch (HELLO), fabric-valid DATA records
 *            in sequence carrying random DIMMnet-2 packets.  Round trips
 *            between the boards in between and afterwards; the region only
 *            forged packets aim at must stay zero.
 *   rvs      N MiB of RVS across 4 boards (4 QEMUs) through one dn2-switch
 *            with 20 % drop + duplicate + reorder, SO-DIMMs in shared files
 *            (seeded patterns written and every byte compared from here);
 *            the switch is killed and restarted on the same port at 40 %,
 *            one board gets a QMP system_reset at 75 %: its bring-up is done
 *            again and the transfers the reset aborted are issued again
 *            (as halves, so that their status records cannot be taken for
 *            the old ones).
 *   join     2 boards through a relay in front of dn2-switch that answers
 *            their HELLOs 0.5-1.5 s late and out of order (ASSIGNs of one
 *            join across the switch's second boundaries) and reorders
 *            DATA/ACK; --join-rounds times a board gets an SMA reset (a new
 *            incarnation) and joins again, a replaying stranger sends its
 *            previous incarnation's join and first DATA again, and a
 *            spoofing stranger sends BYE/KEEPALIVE "from the switch" (a raw
 *            socket with a forged source when allowed) and DATA of unknown
 *            LIDs "from" the boards for --join-spoof-ms; without and with
 *            the cluster secret.  No flap, no old epoch published, nothing
 *            old written, round trips byte-exact (see phase_join).
 *
 * Output: TAP (one point per property, "# " lines with details) and a
 * summary; exit status 1 if anything failed.  Every wait is bounded; child
 * processes die with this one (PR_SET_PDEATHSIG, and a cleanup on exit and
 * on SIGINT/SIGTERM); the temporary directory is removed.
 *
 * SPDX-License-Identifier: MIT
 */
#define _GNU_SOURCE 1
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <limits.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "dimmnet2/dn2_abi.h"
#include "dn2fab.h"
#include "dn2-board-up.h"
#include "qtest-board.h"
#include "qtest-client.h"
#include "../../tests/tap/dn2-tap.h"

#define KiB ((uint64_t)1024)
#define MiB ((uint64_t)1024 * 1024)

#define PG          0x5a        /* the process group of the known-good traffic */
#define PG2         0x3c        /* hostile phase: the victims' WID 1 */
#define ST_OFF      0x7000u     /* status ring: the last 4 KiB of each LLCM */
#define ST_BYTES    4096u

/* Timeouts (ms) */
#define T_CMD       15000       /* one qtest / QMP answer */
#define T_START     30000       /* QEMU connecting to our sockets */
#define T_LINK      15000       /* link ready (SMA LID register) */
#define T_XFER      20000       /* a known-good round trip */
#define T_PROGRESS  60000       /* rvs: no status record for this long */

/* ================================================================== */
/* Basics                                                              */
/* ================================================================== */

static const char *qemu_bin, *switch_bin, *fw_dir;
static char tmpdir[128];
/* The cluster secret of the run (a file in the temporary directory), and
 * whether the boards and switch being started use it. */
static char secret_file[300];
static bool use_secret;
static bool keep_tmp, verbose;
static uint64_t t_start;

static uint64_t now_ms(void)
{
    return qb_now_ns() / 1000000;
}

static double elapsed_s(void)
{
    return (qb_now_ns() - t_start) / 1e9;
}

static void msleep(unsigned ms)
{
    usleep(ms * 1000);
}

/* "# " lines: diagnostics in the TAP stream. */
static void note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void note(const char *fmt, ...)
{
    va_list ap;

    printf("# [%7.1fs] ", elapsed_s());
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
    fflush(stdout);
}

static void vnote(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void vnote(const char *fmt, ...)
{
    va_list ap;

    if (!verbose) {
        return;
    }
    printf("# [%7.1fs] ", elapsed_s());
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
    fflush(stdout);
}

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
    va_list ap;

    fprintf(stderr, "dn2-soak: ");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n");
    exit(2);
}

/* The run's randomness, from --seed: the fabric's PRNG (xoshiro256**
 * seeded by splitmix64). */
typedef struct dn2f_rng Rng;

static uint64_t rnd(Rng *r)
{
    return dn2f_rng_next(r);
}

/* [0, n) */
static uint64_t rndn(Rng *r, uint64_t n)
{
    return n ? rnd(r) % n : 0;
}

/* The seeded data pattern: a pure function of (seed, 8-byte word index),
 * so data can be checked anywhere without keeping a copy. */
static inline uint64_t pat64(uint64_t seed, uint64_t idx)
{
    uint64_t z = seed ^ (idx * 0xd1342543de82ef95ull + 0x2545f4914f6cdd1dull);

    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static void fill_bytes(uint8_t *p, size_t n, uint64_t seed)
{
    size_t i;

    for (i = 0; i < n; i++) {
        p[i] = (uint8_t)(pat64(seed, i / 8) >> (8 * (i % 8)));
    }
}

/* ================================================================== */
/* Results                                                             */
/* ================================================================== */

static unsigned n_crashes, n_hangs, n_fail_other;
static char crash_notes[4096], hang_notes[4096];

static void add_note(char *buf, size_t cap, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void add_note(char *buf, size_t cap, const char *fmt, ...)
{
    size_t l = strlen(buf);
    va_list ap;

    if (l + 4 >= cap) {
        return;
    }
    if (l) {
        buf[l++] = ';';
        buf[l++] = ' ';
        buf[l] = 0;
    }
    va_start(ap, fmt);
    vsnprintf(buf + l, cap - l, fmt, ap);
    va_end(ap);
}

/* ================================================================== */
/* Child processes                                                     */
/* ================================================================== */

#define MAXCHILD 32
static pid_t children[MAXCHILD];

static void child_add(pid_t p)
{
    int i;

    for (i = 0; i < MAXCHILD; i++) {
        if (!children[i]) {
            children[i] = p;
            return;
        }
    }
}

static void child_del(pid_t p)
{
    int i;

    for (i = 0; i < MAXCHILD; i++) {
        if (children[i] == p) {
            children[i] = 0;
        }
    }
}

static int rm_cb(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(path);
}

static void cleanup(void)
{
    int i;

    for (i = 0; i < MAXCHILD; i++) {
        if (children[i] > 0) {
            kill(children[i], SIGKILL);
            waitpid(children[i], NULL, 0);
            children[i] = 0;
        }
    }
    if (tmpdir[0] && !keep_tmp) {
        nftw(tmpdir, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
        tmpdir[0] = 0;
    }
}

static void on_signal(int sig)
{
    int i;

    /* async-signal-safe part: kill the children; exit() runs cleanup() */
    for (i = 0; i < MAXCHILD; i++) {
        if (children[i] > 0) {
            kill(children[i], SIGKILL);
        }
    }
    fprintf(stderr, "dn2-soak: interrupted by signal %d\n", sig);
    exit(130);
}

/* cwd: run there with core dumps on (a crash gets a backtrace). */
static pid_t spawn_in(char *const argv[], const char *out, const char *cwd)
{
    struct qb_spawn how = { .out = out, .append = true, .cwd = cwd, .cpu = -1 };
    pid_t pid = qb_spawn(argv, &how);

    if (pid < 0) {
        die("fork: %s", strerror((int)-pid));
    }
    child_add(pid);
    return pid;
}

static pid_t spawn(char *const argv[], const char *out)
{
    return spawn_in(argv, out, NULL);
}

/* Wait for pid up to ms; true and *status when it exited. */
static bool wait_exit(pid_t pid, int *status, unsigned ms)
{
    uint64_t end = now_ms() + ms;

    for (;;) {
        pid_t r = waitpid(pid, status, WNOHANG);
        if (r == pid) {
            child_del(pid);
            return true;
        }
        if (r < 0 && errno == ECHILD) {
            child_del(pid);
            *status = 0;
            return true;
        }
        if (now_ms() >= end) {
            return false;
        }
        usleep(2000);
    }
}

/* Lines of a child's log that show a crash or a sanitizer report. */
static unsigned scan_log(const char *path, const char *who)
{
    static const char *const pats[] = {
        "Assertion", "assertion", "Segmentation", "AddressSanitizer",
        "UndefinedBehaviorSanitizer", "LeakSanitizer", "ThreadSanitizer",
        "runtime error:", "core dumped", "stack smashing", "double free",
        "free(): invalid", "malloc(): ", "Aborted", "**ERROR**",
    };
    FILE *f = fopen(path, "r");
    char line[1024];
    unsigned n = 0, i;

    if (!f) {
        return 0;
    }
    while (fgets(line, sizeof(line), f)) {
        for (i = 0; i < sizeof(pats) / sizeof(pats[0]); i++) {
            if (strstr(line, pats[i])) {
                line[strcspn(line, "\n")] = 0;
                if (n < 5) {
                    note("CRASH? %s log: %s", who, line);
                }
                n++;
                break;
            }
        }
    }
    fclose(f);
    return n;
}

static void log_tail(const char *path, const char *who, unsigned lines)
{
    char cmd[512];
    FILE *p;
    char line[512];

    snprintf(cmd, sizeof(cmd), "tail -n %u '%s' 2>/dev/null", lines, path);
    p = popen(cmd, "r");
    if (!p) {
        return;
    }
    while (fgets(line, sizeof(line), p)) {
        line[strcspn(line, "\n")] = 0;
        note("  %s log: %s", who, line);
    }
    pclose(p);
}

static int run_capture(char *const argv[], char *out, size_t cap, unsigned ms);

/* A core file left in dir by binary: gdb's backtrace as notes. */
static void core_backtrace(const char *binary, const char *dir, const char *who)
{
    char core[700], *out;
    char *argv[] = { "/usr/bin/gdb", "-nx", "-batch", "-ex", "bt 30", (char *)binary, core, NULL };
    struct stat st;

    snprintf(core, sizeof(core), "%s/core", dir);
    if (stat(core, &st) < 0) {
        char cmd[400];
        FILE *p;
        snprintf(cmd, sizeof(cmd), "ls '%s' 2>/dev/null | grep '^core' | head -1", dir);
        p = popen(cmd, "r");
        if (!p || !fgets(cmd, sizeof(cmd), p)) {
            if (p) {
                pclose(p);
            }
            note("  (no core file in %s: core_pattern is '%s')", dir, "see /proc/sys/kernel/"
                 "core_pattern");
            return;
        }
        pclose(p);
        cmd[strcspn(cmd, "\n")] = 0;
        snprintf(core, sizeof(core), "%s/%s", dir, cmd);
    }
    if (access(argv[0], X_OK) != 0) {
        note("  core file %s (no gdb for a backtrace)", core);
        return;
    }
    out = malloc(65536);
    run_capture(argv, out, 65536, 60000);
    note("  %s: backtrace from %s:", who, core);
    for (char *l = out, *nl; *l; l = nl + 1) {
        nl = strchr(l, '\n');
        if (nl) {
            *nl = 0;
        }
        if (*l == '#' || strstr(l, "signal") || strstr(l, "SIG")) {
            note("    %s", l);
        }
        if (!nl) {
            break;
        }
    }
    free(out);
    unlink(core);
}

/* How a child that we did not kill hard ended: a crash if by a signal,
 * a failure if with a non-zero status.  binary/dir: where to look for a
 * core file. */
static void judge_exit2(const char *who, int status, bool killed_hard, const char *log,
                        const char *binary, const char *dir)
{
    if (WIFSIGNALED(status) && !killed_hard) {
        n_crashes++;
        add_note(crash_notes, sizeof(crash_notes), "%s killed by signal %d", who,
                 WTERMSIG(status));
        note("CRASH: %s ended by signal %d (%s)", who, WTERMSIG(status),
             strsignal(WTERMSIG(status)));
        if (log) {
            log_tail(log, who, 15);
        }
        if (binary && dir) {
            core_backtrace(binary, dir, who);
        }
    } else if (WIFEXITED(status) && WEXITSTATUS(status) != 0) {
        n_crashes++;
        add_note(crash_notes, sizeof(crash_notes), "%s exited with status %d", who,
                 WEXITSTATUS(status));
        note("CRASH: %s exited with status %d", who, WEXITSTATUS(status));
        if (log) {
            log_tail(log, who, 15);
        }
    }
    if (log) {
        unsigned n = scan_log(log, who);
        if (n) {
            n_crashes++;
            add_note(crash_notes, sizeof(crash_notes), "%s: %u crash/sanitizer line(s) in %s",
                     who, n, log);
        }
    }
}

static void judge_exit(const char *who, int status, bool killed_hard, const char *log)
{
    judge_exit2(who, status, killed_hard, log, NULL, NULL);
}

/* Run argv, capture stdout (at most cap-1 bytes) within ms; exit status or -1. */
static int run_capture(char *const argv[], char *out, size_t cap, unsigned ms)
{
    int pfd[2], status = -1;
    size_t have = 0;
    uint64_t end = now_ms() + ms;
    pid_t pid;

    if (pipe(pfd) < 0) {
        return -1;
    }
    pid = fork();
    if (pid < 0) {
        close(pfd[0]);
        close(pfd[1]);
        return -1;
    }
    if (pid == 0) {
        int dn = open("/dev/null", O_WRONLY);
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        dup2(pfd[1], 1);
        if (dn >= 0) {
            dup2(dn, 2);
        }
        close(pfd[0]);
        execv(argv[0], argv);
        _exit(127);
    }
    child_add(pid);
    close(pfd[1]);
    for (;;) {
        struct pollfd p = { .fd = pfd[0], .events = POLLIN };
        int left = (int)(end - now_ms());
        ssize_t r;
        if (left <= 0 || poll(&p, 1, left) <= 0) {
            break;
        }
        r = read(pfd[0], out + have, cap - 1 - have);
        if (r <= 0) {
            break;
        }
        have += (size_t)r;
        if (have >= cap - 1) {
            break;
        }
    }
    out[have] = 0;
    close(pfd[0]);
    if (!wait_exit(pid, &status, (unsigned)(end > now_ms() ? end - now_ms() : 0) + 100)) {
        kill(pid, SIGKILL);
        wait_exit(pid, &status, 2000);
        return -1;
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* ================================================================== */
/* Phases: failure handling                                            */
/* ================================================================== */

/*
 * A phase that cannot go on (a hang, a crash, a wrong byte where the rest
 * depends on it) reports why, prints the boards' state, and jumps back to
 * the phase runner, which stops the phase's processes and reports its TAP
 * points.  While collecting that state (diag > 0) failures only return.
 */
static jmp_buf phase_env;
static bool in_phase;
static int diag;
static const char *phase_name = "-";
static char phase_why[512];

static void dump_state(void);

static void phase_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void phase_fail(const char *fmt, ...)
{
    va_list ap;

    if (diag) {
        return;
    }
    va_start(ap, fmt);
    vsnprintf(phase_why, sizeof(phase_why), fmt, ap);
    va_end(ap);
    note("FAIL in phase %s: %s", phase_name, phase_why);
    diag++;
    dump_state();
    diag--;
    if (in_phase) {
        longjmp(phase_env, 1);
    }
    exit(1);
}

static void hang(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void hang(const char *fmt, ...)
{
    char msg[400];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (diag) {
        note("  (while collecting state) %s", msg);
        return;
    }
    n_hangs++;
    add_note(hang_notes, sizeof(hang_notes), "%s: %s", phase_name, msg);
    phase_fail("HANG: %s", msg);
}

/* Called in every wait loop (the hostile peer must keep answering). */
static void (*idle_hook)(void);

static void idle(void)
{
    if (idle_hook) {
        idle_hook();
    }
}

/* ================================================================== */
/* The switch                                                          */
/* ================================================================== */

typedef struct Sw {
    pid_t pid;
    int port;
    char log[256];
    char ready[256];
    char *args[16];
    int nargs;
    unsigned starts;
} Sw;

static bool sw_start(Sw *s, int port)
{
    char listen[QB_LISTEN_LEN];
    char *argv[32];
    int n = 0, i, st;
    uint64_t end;

    snprintf(s->ready, sizeof(s->ready), "%s/switch.port", tmpdir);
    snprintf(s->log, sizeof(s->log), "%s/switch.log", tmpdir);
    unlink(s->ready);
    qb_switch_argv(argv, &n, switch_bin, listen, port, s->ready);
    for (i = 0; i < s->nargs; i++) {
        argv[n++] = s->args[i];
    }
    if (use_secret) {
        argv[n++] = "--secret-file";
        argv[n++] = secret_file;
    }
    argv[n] = NULL;
    s->pid = spawn(argv, s->log);
    s->starts++;
    end = now_ms() + 10000;
    while (now_ms() < end) {
        int p = qb_ready_port(s->ready);
        if (p) {
            s->port = p;
            return true;
        }
        if (wait_exit(s->pid, &st, 0)) {
            s->pid = 0;
            judge_exit("dn2-switch (at start)", st, false, s->log);
            return false;
        }
        usleep(5000);
    }
    return false;
}

/* SIGTERM: the switch says BYE and exits 0; SIGKILL: it vanishes. */
static void sw_stop(Sw *s, int sig)
{
    int st = 0;

    if (!s->pid) {
        return;
    }
    kill(s->pid, sig);
    if (!wait_exit(s->pid, &st, 5000)) {
        n_hangs++;
        add_note(hang_notes, sizeof(hang_notes), "dn2-switch did not exit within 5 s of "
                 "signal %d", sig);
        note("HANG: dn2-switch did not exit within 5 s of signal %d", sig);
        kill(s->pid, SIGKILL);
        wait_exit(s->pid, &st, 5000);
        sig = SIGKILL;
    }
    judge_exit("dn2-switch", st, sig == SIGKILL, s->log);
    s->pid = 0;
}

/* `dn2-switch --stats`: the summary line, or "" when it did not answer. */
static bool sw_stats(Sw *s, char *out, size_t cap)
{
    char addr[64];
    char *argv[] = { (char *)switch_bin, "--stats", addr, NULL, NULL, NULL };
    int rc;

    if (use_secret) {
        argv[3] = "--secret-file";
        argv[4] = secret_file;
    }

    snprintf(addr, sizeof(addr), "127.0.0.1:%d", s->port);
    rc = run_capture(argv, out, cap, 5000);
    return rc == 0 && strstr(out, "uptime_ms=");
}

static int64_t stat_key(const char *text, const char *key)
{
    char pat[64];
    const char *p;

    snprintf(pat, sizeof(pat), " %s=", key);
    p = strstr(text, pat);
    return p ? strtoll(p + strlen(pat), NULL, 10) : -1;
}

static int free_udp_port(void)
{
    struct dn2f_addr a;
    int fd, port;

    dn2f_addr_parse(&a, "127.0.0.1:0");
    fd = dn2f_udp_open(&a, 0);
    if (fd < 0) {
        die("cannot open a UDP socket: %s", strerror(-fd));
    }
    port = dn2f_addr_port(&a);
    close(fd);
    return port;
}

/* ================================================================== */
/* Boards: a QEMU each, driven over qtest and QMP                      */
/* ================================================================== */

typedef struct Board {
    char name[8];
    pid_t pid;
    struct qc_qtest q;          /* qtest (tools/common/qtest-client.h) */
    struct qc_qmp m;            /* QMP */
    struct dn2_board_io io;     /* registers through q, for dn2-board-up.h */
    uint64_t base;
    uint16_t lid;
    uint64_t guid;
    int udp_port;               /* local=127.0.0.1:PORT (0: none / any) */
    bool loopback;
    bool dead;                  /* crashed or hung: no more commands */
    bool killed_hard;
    char log[256], mempath[256], cwd[256];
    uint8_t *mem;               /* the SO-DIMM file, mapped */
    uint64_t memsz, area;       /* area: one process's SO-DIMM bytes */
    uint32_t st_head[2];        /* the host's status-ring read pointers */
    unsigned sysresets;
} Board;

#define MAXB 8
static Board *pboards[MAXB];    /* the boards of the running phase */
static int npboards;
static Sw *psw;                 /* ... and its switch */

static uint64_t total_qtest_cmds;

static const char *proc_state(pid_t pid)
{
    static char st[64];
    char path[64], buf[512], *p;
    FILE *f;

    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    f = fopen(path, "r");
    if (!f) {
        return "gone";
    }
    if (!fgets(buf, sizeof(buf), f)) {
        fclose(f);
        return "?";
    }
    fclose(f);
    p = strrchr(buf, ')');
    snprintf(st, sizeof(st), "%c", p && p[1] ? p[2] : '?');
    return st;
}

/* The last two batches of qtest commands sent to a board that failed:
 * into build/soak-style file for a replay, and the last few as notes. */
static void save_cmds(Board *b)
{
    char path[300];
    FILE *f;
    const char *p, *e;
    unsigned n = 0;

    snprintf(path, sizeof(path), "%s/last-commands-%s.txt", tmpdir, b->name);
    f = fopen(path, "w");
    if (!f) {
        return;
    }
    if (b->q.prev && b->q.prevlen) {
        fwrite(b->q.prev, 1, b->q.prevlen, f);
    }
    fprintf(f, "# ---- the batch in progress ----\n");
    if (b->q.out && b->q.olen) {
        fwrite(b->q.out, 1, b->q.olen, f);
    }
    fclose(f);
    note("  board %s: its last qtest commands are in %s (kept with --keep)", b->name, path);
    if (b->q.out && b->q.olen) {
        /* the last 6 commands of the batch in progress */
        for (e = b->q.out + b->q.olen, p = e; p > b->q.out && n < 7; p--) {
            n += p[-1] == '\n';
        }
        note("  board %s: the batch in progress (%u commands) ended with:", b->name, b->q.on);
        while (p < e) {
            const char *nl = memchr(p, '\n', (size_t)(e - p));
            if (!nl) {
                break;
            }
            if (nl > p) {
                note("    %.*s", (int)(nl - p), p);
            }
            p = nl + 1;
        }
    }
}

/* The board's QEMU is gone (EOF on a socket): how did it end? */
static void board_died(Board *b, const char *when)
{
    int st = 0;

    b->dead = true;
    if (wait_exit(b->pid, &st, 3000)) {
        b->pid = 0;
        judge_exit2(b->name, st, false, b->log, qemu_bin, b->cwd);
        save_cmds(b);
        if (!(WIFSIGNALED(st) || (WIFEXITED(st) && WEXITSTATUS(st)))) {
            n_crashes++;
            add_note(crash_notes, sizeof(crash_notes), "board %s: QEMU exited (status 0) "
                     "while in use", b->name);
        }
        phase_fail("board %s: QEMU ended %s (status 0x%x)", b->name, when, st);
    } else {
        n_crashes++;
        add_note(crash_notes, sizeof(crash_notes), "board %s closed its socket", b->name);
        phase_fail("board %s: QEMU closed its socket %s but is still running (state %s)",
                   b->name, when, proc_state(b->pid));
    }
}

/* Queue one qtest command (pipelined until q_flush). */
static void qq(Board *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void qq(Board *b, const char *fmt, ...)
{
    char c[4096];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(c, sizeof(c), fmt, ap);
    va_end(ap);
    if (!qc_queue(&b->q, "%s", c)) {
        die("qtest batch too large");
    }
}

/*
 * Send the queued commands and read one answer line each (qc_flush).  The
 * last answer is left in b->q.last.  false (after reporting) when the
 * board is dead; in a phase that does not return.
 */
static bool q_flush(Board *b, unsigned timeout_ms)
{
    unsigned n = b->q.on;
    char c[160];
    int e;

    if (b->dead) {
        qc_discard(&b->q);
        if (diag) {
            return false;
        }
        phase_fail("board %s is dead (earlier failure)", b->name);
        return false;
    }
    e = qc_flush(&b->q, timeout_ms);
    switch (e) {
    case QC_OK:
        total_qtest_cmds += n;
        return true;
    case QC_REFUSED:
        qc_batch_cmd(&b->q, b->q.answered, c, sizeof(c));
        n_fail_other++;
        qc_discard(&b->q);
        if (!diag) {
            phase_fail("board %s: qtest answered '%.100s' to '%s'", b->name, b->q.last, c);
        }
        return false;
    case QC_TIMEOUT:
        qc_batch_cmd(&b->q, b->q.answered, c, sizeof(c));
        save_cmds(b);
        qc_discard(&b->q);
        b->dead = true;
        hang("board %s: no qtest answer to '%s' (%u of %u answered) within %u ms; "
             "QEMU state %s", b->name, c, b->q.answered, n, timeout_ms, proc_state(b->pid));
        return false;
    default:
        board_died(b, "(qtest connection closed)");
        qc_discard(&b->q);
        return false;
    }
}

/* One command now (after whatever is queued); its answer line. */
static const char *q1(Board *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static const char *q1(Board *b, const char *fmt, ...)
{
    va_list ap;
    char c[512];

    va_start(ap, fmt);
    vsnprintf(c, sizeof(c), fmt, ap);
    va_end(ap);
    qq(b, "%s", c);
    if (!q_flush(b, T_CMD)) {
        return NULL;
    }
    return b->q.last;
}

static uint64_t rdq(Board *b, uint64_t addr)
{
    return qc_answer_u64(q1(b, "readq 0x%" PRIx64, addr));
}

static void wrq(Board *b, uint64_t addr, uint64_t v)
{
    q1(b, "writeq 0x%" PRIx64 " 0x%" PRIx64, addr, v);
}

/* The accessor of dn2-board-up.h. */
static uint64_t io_readq(void *b, uint64_t addr)
{
    return rdq(b, addr);
}

static void io_writeq(void *b, uint64_t addr, uint64_t v)
{
    wrq(b, addr, v);
}

static uint64_t ur_addr(Board *b, int wid, uint32_t off)
{
    return dn2_bio_ur_addr(&b->io, wid, off);
}

static uint64_t sr_addr(Board *b, uint32_t off)
{
    return dn2_bio_sr_addr(&b->io, off);
}

static uint64_t ur(Board *b, int wid, uint32_t off)
{
    return dn2_bio_ur(&b->io, wid, off);
}

static void ur_w(Board *b, int wid, uint32_t off, uint64_t v)
{
    dn2_bio_ur_w(&b->io, wid, off, v);
}

static uint64_t sr(Board *b, uint32_t off)
{
    return dn2_bio_sr(&b->io, off);
}

static void sr_w(Board *b, uint32_t off, uint64_t v)
{
    dn2_bio_sr_w(&b->io, off, v);
}

/* Read len bytes of guest memory (one `read` command). */
static bool q_read(Board *b, uint64_t addr, uint8_t *out, size_t len)
{
    return qc_answer_bytes(q1(b, "read 0x%" PRIx64 " 0x%zx", addr, len), out, len);
}

static void qq_write(Board *b, uint64_t addr, const uint8_t *data, size_t len)
{
    if (len > 600) {
        len = 600;
    }
    if (!qc_queue_write(&b->q, addr, data, len)) {
        die("qtest batch too large");
    }
}

/* --- QMP ------------------------------------------------------------ */

/* Read one line from the QMP socket into b->m.line within the deadline. */
static bool qmp_line(Board *b, uint64_t end)
{
    int e = qc_qmp_line(&b->m, end * 1000000ull);

    if (e == QC_CLOSED) {
        board_died(b, "(QMP connection closed)");
    }
    return e == QC_OK;
}

/* A QMP command; its answer line (events skipped), NULL after a failure. */
static const char *qmp(Board *b, const char *json)
{
    int e;

    if (b->dead) {
        if (!diag) {
            phase_fail("board %s is dead (earlier failure)", b->name);
        }
        return NULL;
    }
    e = qc_qmp(&b->m, json, T_CMD);
    if (e == QC_CLOSED) {
        board_died(b, "(QMP connection closed)");
        return NULL;
    }
    if (e != QC_OK) {
        if (!b->dead) {
            b->dead = true;
            hang("board %s: no QMP answer to %s within %u ms; QEMU state %s", b->name,
                 json, T_CMD, proc_state(b->pid));
        }
        return NULL;
    }
    return b->m.line;
}

/* Wait for the QMP RESET event (a system_reset is only requested by the
 * command; the main loop performs it later). */
static bool qmp_wait_reset(Board *b, unsigned seen_before, unsigned ms)
{
    int e = qc_qmp_wait_reset(&b->m, seen_before, ms);

    if (e == QC_CLOSED) {
        board_died(b, "(QMP connection closed)");
    }
    return e == QC_OK;
}

static uint64_t qom(Board *b, const char *prop)
{
    char j[256];
    const char *r, *p;

    snprintf(j, sizeof(j), "{\"execute\":\"qom-get\",\"arguments\":{\"path\":"
             "\"/machine/peripheral/dn\",\"property\":\"%s\"}}", prop);
    r = qmp(b, j);
    if (!r || !(p = strstr(r, "\"return\":"))) {
        if (r && !diag) {
            n_fail_other++;
            phase_fail("board %s: qom-get %s: %s", b->name, prop, r);
        }
        return 0;
    }
    return strtoull(p + 9, NULL, 10);
}

/* qom-get that may fail (a property an older device does not have). */
static bool qom_try(Board *b, const char *prop, uint64_t *v)
{
    char j[256];
    const char *r, *p;

    snprintf(j, sizeof(j), "{\"execute\":\"qom-get\",\"arguments\":{\"path\":"
             "\"/machine/peripheral/dn\",\"property\":\"%s\"}}", prop);
    r = qmp(b, j);
    if (!r || !(p = strstr(r, "\"return\":"))) {
        return false;
    }
    *v = strtoull(p + 9, NULL, 10);
    return true;
}

/* --- Start and stop ------------------------------------------------ */

static int listen_unix(const char *path)
{
    int fd = qb_listen_unix(path);

    if (fd < 0) {
        die("socket %s: %s", path, strerror(-fd));
    }
    return fd;
}

static int accept_within(Board *b, int lfd, const char *what)
{
    struct pollfd p = { .fd = lfd, .events = POLLIN };
    uint64_t end = now_ms() + T_START;
    int st;

    while (now_ms() < end) {
        if (poll(&p, 1, 100) > 0) {
            int fd = accept(lfd, NULL, NULL);
            if (fd >= 0) {
                return fd;
            }
        }
        if (wait_exit(b->pid, &st, 0)) {
            b->pid = 0;
            b->dead = true;
            log_tail(b->log, b->name, 20);
            judge_exit2(b->name, st, false, b->log, qemu_bin, b->cwd);
            phase_fail("board %s: QEMU exited at start-up (status 0x%x)", b->name, st);
            return -1;
        }
    }
    b->dead = true;
    hang("board %s: QEMU did not connect to its %s socket within %u ms", b->name, what,
         T_START);
    return -1;
}

/* Start a QEMU with one board.  devprops: after "dimmnet2,id=dn,memdev=m". */
static void board_start(Board *b, const char *name, uint64_t memsz, const char *devprops)
{
    char qs[256], ms[256], qsa[300], memobj[512], dev[512], chr[300];
    char *argv[40];
    int n = 0, lq, lm;

    memset(b, 0, sizeof(*b));
    snprintf(b->name, sizeof(b->name), "%s", name);
    if (qc_open(&b->q, -1) < 0 || qc_qmp_open(&b->m, -1) < 0) {
        die("out of memory");
    }
    b->base = DN2_DEFAULT_BASE0;
    b->io = (struct dn2_board_io) {
        .ctx = b, .base = b->base, .readq = io_readq, .writeq = io_writeq,
    };
    b->memsz = memsz;
    b->area = memsz / 2 < DN2_SDIMM_CAP_DEFAULT ? memsz / 2 : DN2_SDIMM_CAP_DEFAULT;
    snprintf(b->log, sizeof(b->log), "%s/qemu-%s.log", tmpdir, name);
    snprintf(b->mempath, sizeof(b->mempath), "%s/sodimm-%s", tmpdir, name);
    snprintf(b->cwd, sizeof(b->cwd), "%s/run-%s", tmpdir, name);
    mkdir(b->cwd, 0700);
    snprintf(qs, sizeof(qs), "%s/q-%s.sock", tmpdir, name);
    snprintf(ms, sizeof(ms), "%s/m-%s.sock", tmpdir, name);
    b->mem = qb_map_file(b->mempath, memsz);
    if (!b->mem) {
        die("SO-DIMM file %s: %s", b->mempath, strerror(errno));
    }
    lq = listen_unix(qs);
    lm = listen_unix(ms);
    snprintf(qsa, sizeof(qsa), "unix:%s", qs);
    snprintf(memobj, sizeof(memobj), "memory-backend-file,id=m,size=%" PRIu64
             ",mem-path=%s,share=on", memsz, b->mempath);
    snprintf(dev, sizeof(dev), "dimmnet2,id=dn,memdev=m%s%s%s", devprops && *devprops ? "," : "",
             devprops ? devprops : "", use_secret ? ",secret=csec" : "");
    b->loopback = devprops && strstr(devprops, "loopback=on");
    qb_qemu_argv(argv, &n, qemu_bin, fw_dir, qsa);
    qc_qmp_argv(argv, &n, chr, ms);
    argv[n++] = "-object";
    argv[n++] = memobj;
    if (use_secret) {
        static char secobj[400];
        snprintf(secobj, sizeof(secobj), "secret,id=csec,file=%s", secret_file);
        argv[n++] = "-object";
        argv[n++] = secobj;
    }
    argv[n++] = "-device";
    argv[n++] = dev;
    argv[n] = NULL;
    pboards[npboards++] = b;
    b->pid = spawn_in(argv, b->log, b->cwd);
    b->q.fd = accept_within(b, lq, "qtest");
    b->m.fd = accept_within(b, lm, "QMP");
    close(lq);
    close(lm);
    unlink(qs);
    unlink(ms);
    if (b->q.fd >= 0) {
        fcntl(b->q.fd, F_SETFL, fcntl(b->q.fd, F_GETFL) | O_NONBLOCK);
    }
    /* QMP: greeting, capabilities */
    if (!qmp_line(b, now_ms() + T_CMD)) {
        hang("board %s: no QMP greeting", b->name);
    }
    qmp(b, "{\"execute\":\"qmp_capabilities\"}");
    vnote("board %s: QEMU pid %d, -device %s", b->name, (int)b->pid, dev);
}

/* SIGTERM (QEMU exits 0), then judge how it ended. */
static void board_stop(Board *b)
{
    int st = 0;
    bool hard = b->killed_hard;

    if (b->pid) {
        kill(b->pid, SIGTERM);
        if (!wait_exit(b->pid, &st, 10000)) {
            if (!b->dead) {
                n_hangs++;
                add_note(hang_notes, sizeof(hang_notes), "board %s: QEMU did not exit within "
                         "10 s of SIGTERM", b->name);
                note("HANG: board %s: QEMU did not exit within 10 s of SIGTERM", b->name);
            }
            kill(b->pid, SIGKILL);
            wait_exit(b->pid, &st, 5000);
            hard = true;
        }
        judge_exit2(b->name, st, hard, b->log, qemu_bin, b->cwd);
        b->pid = 0;
    }
    if (b->mem) {
        munmap(b->mem, b->memsz);
        b->mem = NULL;
    }
    unlink(b->mempath);
    if (b->q.in) {              /* started (a board never started is all zero) */
        qc_close(&b->q);
        qc_qmp_close(&b->m);
    }
}

/* --- SO-DIMM contents through the shared file ----------------------- */

/* Board-global byte g (WID w's offset o is g = w * area + o) lives in
 * module (g >> 3) & 1 at ((g >> 4) << 3) | (g & 7): the 8-byte interleave. */
static uint8_t *sd_at(Board *b, uint64_t g)
{
    return b->mem + ((g >> 3) & 1) * (b->memsz / 2) + (((g >> 4) << 3) | (g & 7));
}

static void sd_put(Board *b, uint64_t g, const uint8_t *p, size_t len)
{
    while (len) {
        size_t n = 8 - (g & 7);
        if (n > len) {
            n = len;
        }
        memcpy(sd_at(b, g), p, n);
        g += n;
        p += n;
        len -= n;
    }
}

static void sd_get(Board *b, uint64_t g, uint8_t *p, size_t len)
{
    while (len) {
        size_t n = 8 - (g & 7);
        if (n > len) {
            n = len;
        }
        memcpy(p, sd_at(b, g), n);
        g += n;
        p += n;
        len -= n;
    }
}

static void sd_zero(Board *b, uint64_t g, size_t len)
{
    static const uint8_t z[4096];

    while (len) {
        size_t n = len < sizeof(z) ? len : sizeof(z);
        sd_put(b, g, z, n);
        g += n;
        len -= n;
    }
}

/* 16-aligned regions: logical word i of [g, g+len) is in module i & 1 at
 * g/2 + (i/2)*8; each module's share is contiguous in the file. */
static void sd_fill_pattern(Board *b, uint64_t g, uint64_t len, uint64_t seed)
{
    uint64_t *m0 = (uint64_t *)(b->mem + g / 2);
    uint64_t *m1 = (uint64_t *)(b->mem + b->memsz / 2 + g / 2);
    uint64_t i, w0 = g / 8;

    for (i = 0; i < len / 16; i++) {
        m0[i] = pat64(seed, w0 + 2 * i);
        m1[i] = pat64(seed, w0 + 2 * i + 1);
    }
}

/* First byte (from g) that differs from the pattern, or -1. */
static int64_t sd_check_pattern(Board *b, uint64_t g, uint64_t len, uint64_t seed)
{
    const uint64_t *m0 = (const uint64_t *)(b->mem + g / 2);
    const uint64_t *m1 = (const uint64_t *)(b->mem + b->memsz / 2 + g / 2);
    uint64_t i, w0 = g / 8;

    for (i = 0; i < len / 16; i++) {
        if (m0[i] != pat64(seed, w0 + 2 * i)) {
            return (int64_t)(16 * i);
        }
        if (m1[i] != pat64(seed, w0 + 2 * i + 1)) {
            return (int64_t)(16 * i + 8);
        }
    }
    return -1;
}

/* Compare [gd, gd+len) on board d with [gs, gs+len) on board s (both
 * 16-aligned, len a multiple of 16): bytes differing and the first. */
static uint64_t sd_compare(Board *d, uint64_t gd, Board *s, uint64_t gs, uint64_t len,
                           int64_t *first)
{
    const uint8_t *d0 = d->mem + gd / 2, *d1 = d->mem + d->memsz / 2 + gd / 2;
    const uint8_t *s0 = s->mem + gs / 2, *s1 = s->mem + s->memsz / 2 + gs / 2;
    uint64_t n = 0, i;

    *first = -1;
    if (!memcmp(d0, s0, len / 2) && !memcmp(d1, s1, len / 2)) {
        return 0;
    }
    for (i = 0; i < len; i++) {
        uint64_t h = (i / 16) * 8 + (i % 8);
        uint8_t x = (i & 8) ? d1[h] : d0[h], y = (i & 8) ? s1[h] : s0[h];
        if (x != y) {
            if (*first < 0) {
                *first = (int64_t)i;
            }
            n++;
        }
    }
    return n;
}

static bool sd_is_zero(Board *b, uint64_t g, uint64_t len, int64_t *first)
{
    uint8_t buf[4096];
    uint64_t off = 0;

    while (off < len) {
        size_t n = len - off < sizeof(buf) ? (size_t)(len - off) : sizeof(buf), i;
        sd_get(b, g + off, buf, n);
        for (i = 0; i < n; i++) {
            if (buf[i]) {
                *first = (int64_t)(off + i);
                return false;
            }
        }
        off += n;
    }
    *first = -1;
    return true;
}

/* --- State for reports ---------------------------------------------- */

static const char *const link_props[] = {
    "stat-link-retransmits", "stat-link-timeouts", "stat-link-fast-retransmits",
    "stat-link-duplicates", "stat-link-drops", "stat-link-busy", "stat-link-dgrams-tx",
    "stat-link-dgrams-rx",
};
#define NLINKP (sizeof(link_props) / sizeof(link_props[0]))

static void board_dump(Board *b)
{
    static const char *const props[] = {
        "stat-requests", "stat-refused", "stat-ignored", "stat-tx-packets", "stat-tx-drops",
        "stat-rx-packets", "stat-rx-drop-bad", "stat-rx-drop-pgid", "stat-rx-drop-noproc",
        "stat-rx-drop-route", "stat-rx-stalls",
    };
    char line[1024];
    size_t l = 0;
    unsigned i;
    uint64_t sma, ms;

    if (b->dead || !b->pid) {
        note("  board %s: %s (QEMU pid %d state %s)", b->name, b->dead ? "dead" : "stopped",
             (int)b->pid, b->pid ? proc_state(b->pid) : "-");
        return;
    }
    sma = sr(b, DN2_SR_SMA);
    ms = ur(b, 0, DN2_UR_MODULE_STATE);
    note("  board %s: SMA LID register 0x%" PRIx64 " (LID 0x%x, link %s), Module State 0x%"
         PRIx64 " (Window Controller %s), LID 0x%x", b->name, sma,
         (unsigned)dn2_sma_lid(sma), dn2_sma_link_ready(sma) ? "ready" : "NOT ready", ms,
         DN2_FGET(ms, DN2_MS_WC) ? dn2_otype_name((unsigned)(DN2_FGET(ms, DN2_MS_WC) - 1)) :
         "idle", b->lid);
    for (i = 0; i < 2 && !b->dead; i++) {
        note("  board %s WID %u: Controller Status 0x%" PRIx64 ", Primitive Counter 0x%"
             PRIx64 ", Packet Counter %" PRIu64 ", status tail 0x%" PRIx64 " head 0x%x",
             b->name, i, ur(b, i, DN2_UR_CTL_STATUS), ur(b, i, DN2_UR_PRIM_COUNTER),
             ur(b, i, DN2_UR_PKT_COUNTER), ur(b, i, DN2_UR_STATUS_ADDR), b->st_head[i]);
    }
    for (i = 0; i < sizeof(props) / sizeof(props[0]) && !b->dead; i++) {
        l += (size_t)snprintf(line + l, sizeof(line) - l, " %s=%" PRIu64, props[i] + 5,
                              qom(b, props[i]));
    }
    note("  board %s:%s", b->name, line);
    l = 0;
    for (i = 0; i < NLINKP && !b->dead && !b->loopback; i++) {
        l += (size_t)snprintf(line + l, sizeof(line) - l, " %s=%" PRIu64, link_props[i] + 5,
                              qom(b, link_props[i]));
    }
    if (l) {
        note("  board %s:%s", b->name, line);
    }
}

static void dump_state(void)
{
    int i;
    char out[2048];

    note("state of the phase's boards:");
    for (i = 0; i < npboards; i++) {
        board_dump(pboards[i]);
    }
    if (psw && psw->pid) {
        if (sw_stats(psw, out, sizeof(out))) {
            char *nl;
            for (char *s = out; *s; s = nl + 1) {
                nl = strchr(s, '\n');
                if (!nl) {
                    note("  %s", s);
                    break;
                }
                *nl = 0;
                note("  %s", s);
            }
        } else {
            note("  dn2-switch (pid %d, state %s) did not answer --stats", (int)psw->pid,
                 proc_state(psw->pid));
        }
    }
}

/* --- Bring-up and requests ------------------------------------------ */

static bool wait_link(Board *b, unsigned ms)
{
    uint64_t end = now_ms() + ms;

    do {
        if (dn2_bio_link(&b->io, &b->lid)) {
            return true;
        }
        idle();
        msleep(2);
    } while (now_ms() < end);
    return false;
}

/* What a driver does after a reset: SO-DIMMs, MTU, PGIDs, status rings. */
static void board_bringup(Board *b, int pgid0, int pgid1)
{
    const struct dn2_bringup c = {
        .cap_reg = dn2_sdimm_capacity_reg(256 * MiB),
        .mtu_reg = dn2_mtu_reg(4096),
        .pgid0 = pgid0, .pgid1 = pgid1,
        .st_wids = 3, .st_init = ST_OFF, .st_size_reg = dn2_status_size_reg(ST_BYTES),
        .clear_cmd_ex = true,
    };
    uint64_t end = now_ms() + T_LINK, v;

    dn2_bio_bringup(&b->io, &c);
    b->st_head[0] = b->st_head[1] = ST_OFF;
    do {
        if (dn2_bio_sdimm_ready(&b->io, &v)) {
            return;
        }
        msleep(1);
    } while (now_ms() < end);
    hang("board %s: SO-DIMM never ready after bring-up (Controller Status 0x%" PRIx64 ")",
         b->name, v);
}

static uint32_t st_next(uint32_t pos)
{
    return ST_OFF + (pos - ST_OFF + DN2_STATUS_REC_SIZE) % ST_BYTES;
}

typedef struct Rec {
    uint64_t lower, upper;
} Rec;

/* Take every record in WID wid's status ring (at most max); frees them. */
static unsigned st_take(Board *b, int wid, Rec *out, unsigned max)
{
    uint32_t tail = (uint32_t)ur(b, wid, DN2_UR_STATUS_ADDR), h = b->st_head[wid];
    unsigned n = 0;

    if (tail < ST_OFF || tail >= ST_OFF + ST_BYTES || (tail & 15)) {
        phase_fail("board %s WID %d: status tail 0x%x outside the ring", b->name, wid, tail);
        return 0;
    }
    while (h != tail && n < max) {
        /* the records up to the ring's end or the tail, in one read */
        uint32_t stop = tail > h ? tail : ST_OFF + ST_BYTES;
        uint32_t cnt = (stop - h) / DN2_STATUS_REC_SIZE, i;
        uint8_t buf[ST_BYTES];
        if (cnt > max - n) {
            cnt = max - n;
        }
        if (!q_read(b, b->base + DN2_LLCM_OFF(wid) + h, buf, cnt * DN2_STATUS_REC_SIZE)) {
            phase_fail("board %s: reading the status ring failed", b->name);
            return n;
        }
        for (i = 0; i < cnt; i++) {
            uint64_t lo = 0, up = 0;
            int k;
            for (k = 7; k >= 0; k--) {
                lo = (lo << 8) | buf[16 * i + k];
                up = (up << 8) | buf[16 * i + 8 + k];
            }
            out[n].lower = lo;
            out[n].upper = up;
            n++;
            h = st_next(h);
        }
    }
    if (h != b->st_head[wid]) {
        b->st_head[wid] = h;
        ur_w(b, wid, DN2_UR_STATUS_ADDR, h);
    }
    return n;
}

static uint64_t rec_lower(unsigned otype, uint16_t slid, unsigned swid, uint32_t size)
{
    return dn2_req_lower(otype, 0, 0, dn2_lid_to_clid(slid), swid, 1, size);
}

/* Room in the Request FIFO (bits 0 and 2 clear), within ms. */
static bool fifo_room(Board *b, int wid, unsigned ms)
{
    uint64_t end = now_ms() + ms, v;

    do {
        v = ur(b, wid, DN2_UR_CTL_STATUS);
        if (!(v & (DN2_CS_REQ_PENDING | DN2_CS_FIFO_AFULL))) {
            return true;
        }
        if (ms) {
            idle();
            usleep(200);
        }
    } while (now_ms() < end);
    return false;
}

static void issue(Board *b, int wid, uint64_t upper, uint64_t lower)
{
    qq(b, "writeq 0x%" PRIx64 " 0x%" PRIx64, ur_addr(b, wid, DN2_UR_CMD0_UPPER), upper);
    qq(b, "writeq 0x%" PRIx64 " 0x%" PRIx64, ur_addr(b, wid, DN2_UR_CMD0_LOWER), lower);
    q_flush(b, T_CMD);
}

static uint64_t known_good_seq;     /* patterns of the known-good transfers */
static uint64_t last_rvl_ms;        /* how long the last round trip's RVL took */

/*
 * A known-good round trip: RVS src -> dst of len bytes (src's WID 0 soff
 * to dst's WID 0 doff, eflag: a record at dst), then an RVL by dst from
 * src (src's roff lands at dst's loff: a record at dst again).  Data is
 * put in place through the SO-DIMM files, the landing areas zeroed first;
 * records that are not ours are counted and skipped.  Fails the phase on a
 * timeout (a hang) or a wrong byte.
 */
static unsigned foreign_records;
static const char *check_ctx = "";     /* what came before, for a report */

static void wait_record(Board *at, uint64_t lower, uint64_t upper, const char *what)
{
    uint64_t end = now_ms() + T_XFER;
    Rec r[256];

    for (;;) {
        unsigned n = st_take(at, 0, r, 256), i;
        bool found = false;
        for (i = 0; i < n; i++) {
            if (r[i].lower == lower && r[i].upper == upper && !found) {
                found = true;
            } else {
                foreign_records++;
                vnote("board %s: record 0x%016" PRIx64 " 0x%" PRIx64 " is not the %s's",
                      at->name, r[i].lower, r[i].upper, what);
            }
        }
        if (found) {
            return;
        }
        if (now_ms() > end) {
            hang("%s%s: no status record on board %s within %u ms (wanted 0x%016" PRIx64
                 " 0x%" PRIx64 ")", what, check_ctx, at->name, T_XFER, lower, upper);
            return;
        }
        idle();
        usleep(500);
    }
}

static void expect_data(Board *d, uint64_t doff, const uint8_t *want, size_t len,
                        const char *what)
{
    uint8_t *got = malloc(len);
    size_t i, bad = 0, first = 0;

    sd_get(d, doff, got, len);
    for (i = 0; i < len; i++) {
        if (got[i] != want[i]) {
            if (!bad++) {
                first = i;
            }
        }
    }
    if (bad) {
        uint8_t g = got[first], w = want[first];
        free(got);
        phase_fail("%s: %zu of %zu bytes wrong at board %s SO-DIMM 0x%" PRIx64
                   "; first at +0x%zx: 0x%02x, expected 0x%02x", what, bad, len, d->name,
                   doff, first, g, w);
    }
    free(got);
}

/* One known-good transfer of data (len bytes) from s's SO-DIMM at soff to
 * d's at doff, issued by board by with op (RVS: by = s, to d; RVL: by = d,
 * from s): the data lands byte-exact with its status record on d.  Its
 * time in ms. */
static uint64_t known_good(Board *by, unsigned op, Board *s, Board *d, uint64_t soff,
                           uint64_t doff, const uint8_t *data, size_t len, const char *what)
{
    Board *peer = by == s ? d : s;
    uint64_t t0 = now_ms();

    sd_put(s, soff, data, len);
    sd_zero(d, doff, len);
    if (!fifo_room(by, 0, T_XFER)) {
        hang("%s: no room in board %s's Request FIFO", what, by->name);
    }
    issue(by, 0, dn2_req_upper((uint32_t)soff, (uint32_t)doff),
          dn2_req_lower(op, 0, 0, dn2_lid_to_clid(peer->lid), 0, 1, (uint32_t)len));
    wait_record(d, rec_lower(DN2_OP_RVS, s->lid, 0, (uint32_t)len), doff, what);
    expect_data(d, doff, data, len, what);
    return now_ms() - t0;
}

static void round_trip(Board *s, Board *d, uint64_t soff, uint64_t doff, uint64_t roff,
                       uint64_t loff, size_t len)
{
    uint8_t *a = malloc(len), *c = malloc(len);
    char what[96];
    uint64_t ms;

    fill_bytes(a, len, 0x5eed0000 + known_good_seq++);
    fill_bytes(c, len, 0x5eed0000 + known_good_seq++);
    /* RVS s -> d */
    snprintf(what, sizeof(what), "known-good RVS %s->%s %zu B", s->name, d->name, len);
    ms = known_good(s, DN2_OP_RVS, s, d, soff, doff, a, len, what);
    if (ms > 200) {
        vnote("%s took %" PRIu64 " ms", what, ms);
    }
    /* RVL: d asks s for roff, lands at d's loff */
    snprintf(what, sizeof(what), "known-good RVL %s<-%s %zu B", d->name, s->name, len);
    last_rvl_ms = known_good(d, DN2_OP_RVL, s, d, roff, loff, c, len, what);
    if (last_rvl_ms > 200) {
        vnote("%s took %" PRIu64 " ms", what, last_rvl_ms);
    }
    free(a);
    free(c);
}

/* Stop the phase's boards and switch; forget them. */
static void phase_cleanup(void)
{
    int i;

    for (i = 0; i < npboards; i++) {
        board_stop(pboards[i]);
    }
    npboards = 0;
    if (psw) {
        sw_stop(psw, SIGTERM);
        psw = NULL;
    }
}

/* ================================================================== */
/* Phase 1: random guest MMIO                                          */
/* ================================================================== */

static uint64_t opt_mmio_ops = 1000000, opt_datagrams = 1000000, opt_rvs_mib = 1024;
static uint64_t opt_seed;
static int opt_reset_board = 3;

static struct {
    uint64_t ops, doorbells, ctl_resets, sma_resets, checks, foreign;
    double secs;
    unsigned segments, fuzz_failures, check_failures;
    bool ran, ops_ok, checks_ok, in_check;
} P1;

static const uint32_t ur_regs[] = {
    DN2_UR_CMD0_LOWER, DN2_UR_CMD0_UPPER, DN2_UR_CMD_EX, DN2_UR_CMD1_LOWER, DN2_UR_CMD1_UPPER,
    DN2_UR_CTL_STATUS, DN2_UR_PRIM_COUNTER, DN2_UR_PW_FLAG, DN2_UR_PKT_COUNTER,
    DN2_UR_IPUSH_AREA_SIZE, DN2_UR_LHB_ADDR, DN2_UR_MODULE_STATE, DN2_UR_STATUS_INIT,
    DN2_UR_STATUS_SIZE, DN2_UR_STATUS_ADDR, DN2_UR_CMD_EX_FLAG,
};
static const uint32_t sr_regs[] = {
    DN2_SR_SDIMM_INIT, DN2_SR_SDIMM_CAPACITY, DN2_SR_MTU, DN2_SR_SMA, DN2_SR_LID,
    DN2_SR_PGID0, DN2_SR_PGID1, DN2_SR_CTL_RESET, DN2_SR_AMT,
};
static const uint8_t valid_ops[] = {
    DN2_OP_BOTF, DN2_OP_VL, DN2_OP_VLS, DN2_OP_VLI, DN2_OP_VS, DN2_OP_VSS, DN2_OP_VSI,
    DN2_OP_RVL, DN2_OP_RVLS, DN2_OP_RVLI, DN2_OP_RVS, DN2_OP_RVSS, DN2_OP_RVSI,
    DN2_OP_IPUSH, DN2_OP_LHSV1, DN2_OP_LHSV2,
};

typedef struct FuzzCtx {
    Rng *r;
    uint16_t own, peer;         /* LIDs */
    uint8_t fp;                 /* the fuzz PGID (never PG) */
    uint64_t area;
} FuzzCtx;

static uint32_t fz_off(FuzzCtx *f)
{
    Rng *r = f->r;

    switch (rndn(r, 10)) {
    case 0: case 1: case 2: case 3:
        return (uint32_t)rndn(r, DN2_WIN_AREA + 64);            /* window offsets */
    case 4: case 5: case 6:
        return (uint32_t)rndn(r, f->area + 4096) & ~(uint32_t)(rndn(r, 2) ? 7 : 0);
    case 7:
        return DN2_COPY_OFF;
    default:
        return (uint32_t)rnd(r);
    }
}

static uint32_t fz_arg(FuzzCtx *f, bool remote)
{
    Rng *r = f->r;
    unsigned k = (unsigned)rndn(r, 100);

    if (k < 55) {
        return (uint32_t)rndn(r, 4097);
    }
    if (k < 85) {
        return (uint32_t)rndn(r, 64 * KiB);
    }
    if (k < 93) {
        return (uint32_t)rndn(r, remote ? MiB : 16 * MiB);
    }
    if (k < 96) {
        static const uint32_t sp[] = { 0, 1, 8, 512, 2048, 4096, 0xffffffffu, 0x80000000u };
        return sp[rndn(r, 8)];
    }
    return remote && rndn(r, 4) ? (uint32_t)rndn(r, 4 * MiB) : (uint32_t)rnd(r);
}

static uint64_t fz_lower(FuzzCtx *f)
{
    Rng *r = f->r;
    unsigned k = (unsigned)rndn(r, 100), otype, clid;

    otype = k < 75 ? valid_ops[rndn(r, sizeof(valid_ops))] : k < 85 ? 0 : (unsigned)rndn(r, 32);
    k = (unsigned)rndn(r, 100);
    clid = k < 45 ? dn2_lid_to_clid(f->peer) : k < 65 ? dn2_lid_to_clid(f->own) :
           k < 75 ? (unsigned)(DN2_CLID_MCAST_FIRST + rndn(r, 0x400)) : (unsigned)rndn(r, 4096);
    if (otype == DN2_OP_BOTF && rndn(r, 2)) {
        return dn2_botf_lower((unsigned)rndn(r, 4), (unsigned)rndn(r, 600));
    }
    return dn2_req_lower(otype, (unsigned)rndn(r, 8),
                         rndn(r, 2) ? (unsigned)rndn(r, 17) : (unsigned)rndn(r, 256), clid,
                         (unsigned)rndn(r, 2), (unsigned)rndn(r, 2), fz_arg(f, otype >= 0x10));
}

static uint64_t fz_ex(FuzzCtx *f)
{
    static const uint8_t ex_ops[] = { DN2_OP_VL, DN2_OP_VLS, DN2_OP_VLI, DN2_OP_VS, DN2_OP_VSS,
                                      DN2_OP_VSI };
    Rng *r = f->r;

    if (rndn(r, 8) == 0) {
        return rnd(r);
    }
    return dn2_req_ex(ex_ops[rndn(r, sizeof(ex_ops))], (unsigned)rndn(r, 8),
                      (unsigned)rndn(r, 256), fz_arg(f, false));
}

/* A register value: plausible for the register most of the time. */
static uint64_t fz_regval(FuzzCtx *f, bool system, uint32_t reg)
{
    Rng *r = f->r;

    if (rndn(r, 6) == 0) {
        return rnd(r);
    }
    if (system) {
        switch (reg) {
        case DN2_SR_SDIMM_CAPACITY: return 1u << rndn(r, 7);
        case DN2_SR_MTU: return 1u << rndn(r, 6);
        case DN2_SR_SDIMM_INIT: return rndn(r, 4);
        case DN2_SR_LID: return rndn(r, 2) ? f->own : rnd(r) & 0xffff;
        case DN2_SR_PGID0: case DN2_SR_PGID1: return rndn(r, 3) ? f->fp : rnd(r) & 0xff;
        case DN2_SR_AMT:
            /* the thesis's per-board form, or one receiving process's (#52) */
            return rndn(r, 2) ? dn2_amt_encode((uint32_t)rndn(r, 0x1000), (uint32_t)rndn(r, 2),
                                               rndn(r, 2) ? f->peer : f->own) :
                   dn2_amt_encode_dwid((uint32_t)rndn(r, 0x1000), (uint32_t)rndn(r, 2),
                                       rndn(r, 2) ? f->peer : f->own, (uint32_t)rndn(r, 2));
        default: return rnd(r);
        }
    }
    switch (reg) {
    case DN2_UR_CMD0_UPPER: case DN2_UR_CMD1_UPPER:
        return dn2_req_upper(fz_off(f), fz_off(f));
    case DN2_UR_CMD_EX: return fz_ex(f);
    case DN2_UR_CMD0_LOWER: case DN2_UR_CMD1_LOWER: return fz_lower(f);
    case DN2_UR_STATUS_INIT: return rndn(r, DN2_LLCM_AREA) & ~15ull;
    case DN2_UR_STATUS_SIZE: return 1u << rndn(r, 8);
    case DN2_UR_STATUS_ADDR: return rndn(r, DN2_LLCM_AREA) & ~15ull;
    case DN2_UR_LHB_ADDR: return rndn(r, 4096);
    case DN2_UR_IPUSH_AREA_SIZE: return rndn(r, 0x10000);
    case DN2_UR_CMD_EX_FLAG: return rndn(r, 2);
    default: return rnd(r);
    }
}

/*
 * Writes that would end the fuzzing's own premise are tamed: a PGID of PG
 * (the known-good traffic's) becomes the fuzz PGID; an SMA software reset
 * (the link renegotiates: ~0.1 s of waiting) stays rare.  Controller
 * Resets come from fz_step's own draw.
 */
static bool fz_tame(FuzzCtx *f, uint64_t addr_off, unsigned size, uint64_t *v)
{
    if (addr_off < DN2_SR_BASE || addr_off >= DN2_SR_BASE + DN2_SR_PAGE) {
        return true;
    }
    addr_off -= DN2_SR_BASE;
    if (size != 8 || (addr_off & 7)) {
        return true;                    /* ignored by the device */
    }
    if ((addr_off == DN2_SR_PGID0 || addr_off == DN2_SR_PGID1) && (*v & 0xff) == PG) {
        *v = (*v & ~0xffull) | f->fp;
    }
    if (addr_off == DN2_SR_SMA) {
        if (rndn(f->r, 100)) {
            return false;
        }
        P1.sma_resets++;
    }
    if (addr_off == DN2_SR_CTL_RESET) {
        if (rndn(f->r, 20)) {
            return false;
        }
        P1.ctl_resets++;
    }
    return true;
}

static const char *const wr_cmd[4] = { "writeb", "writew", "writel", "writeq" };
static const char *const rd_cmd[4] = { "readb", "readw", "readl", "readq" };

/* One step of fuzzing on board b: one or a few commands, queued. */
static void fz_step(Board *b, FuzzCtx *f)
{
    Rng *r = f->r;
    unsigned k = (unsigned)rndn(r, 1000), wid = (unsigned)rndn(r, 2);

    if (k < 380) {
        /* a request: [Ex Flag], Upper, [Ex], Lower */
        unsigned cmd = (unsigned)rndn(r, 2);
        bool ex = rndn(r, 4) == 0;
        if (ex || rndn(r, 10) == 0) {
            qq(b, "writeq 0x%" PRIx64 " 0x%x", ur_addr(b, wid, DN2_UR_CMD_EX_FLAG), ex);
        }
        if (rndn(r, 8)) {
            qq(b, "writeq 0x%" PRIx64 " 0x%" PRIx64,
               ur_addr(b, wid, cmd ? DN2_UR_CMD1_UPPER : DN2_UR_CMD0_UPPER),
               dn2_req_upper(fz_off(f), fz_off(f)));
        }
        if (ex) {
            qq(b, "writeq 0x%" PRIx64 " 0x%" PRIx64, ur_addr(b, wid, DN2_UR_CMD_EX), fz_ex(f));
        }
        qq(b, "writeq 0x%" PRIx64 " 0x%" PRIx64,
           ur_addr(b, wid, cmd ? DN2_UR_CMD1_LOWER : DN2_UR_CMD0_LOWER), fz_lower(f));
        P1.doorbells++;
    } else if (k < 600) {
        /* a register, plausible value, mostly 64-bit aligned */
        bool system = rndn(r, 4) == 0;
        uint32_t reg = system ? sr_regs[rndn(r, sizeof(sr_regs) / 4)] :
                                (uint32_t)(wid * DN2_UR_WID_STRIDE) +
                                ur_regs[rndn(r, sizeof(ur_regs) / 4)];
        uint64_t off = (system ? DN2_SR_BASE : DN2_UR_BASE) + reg;
        unsigned sz = rndn(r, 5) ? 3 : (unsigned)rndn(r, 4);
        if (rndn(r, 10) == 0) {
            off += rndn(r, 8);
        }
        if (rndn(r, 2)) {
            qq(b, "%s 0x%" PRIx64, rd_cmd[sz], b->base + off);
        } else {
            uint64_t v = fz_regval(f, system, reg);
            if (sz < 3) {
                v &= (1ull << (8u << sz)) - 1;
            }
            if (!fz_tame(f, off, 1u << sz, &v)) {
                qq(b, "readq 0x%" PRIx64, ur_addr(b, wid, DN2_UR_CTL_STATUS));
            } else {
                qq(b, "%s 0x%" PRIx64 " 0x%" PRIx64, wr_cmd[sz], b->base + off, v);
            }
        }
    } else if (k < 700) {
        /* a packet image in a Write Window, then a BOTF of it (or not) */
        uint8_t img[DN2_BOTF_MAX];
        struct dn2_hdr h;
        unsigned n = 16 + (unsigned)rndn(r, 200), ww = (unsigned)rndn(r, 4), i;
        uint64_t w0, w1;
        memset(&h, 0, sizeof(h));
        h.type = rndn(r, 4) ? valid_ops[7 + rndn(r, 9)] : (uint8_t)rndn(r, 32);
        h.dtype = (uint8_t)rndn(r, 8);
        h.pgid = f->fp;
        h.dlid = rndn(r, 3) ? f->peer : rndn(r, 2) ? f->own : (uint16_t)rnd(r);
        h.iter = (uint8_t)rnd(r);
        h.dwid = (uint8_t)rndn(r, 2);
        h.eflag = (uint8_t)rndn(r, 2);
        h.rflag = (uint8_t)rndn(r, 2);
        h.hflag = (uint8_t)rndn(r, 2);
        h.lflag = (uint8_t)rndn(r, 2);
        h.pflag = (uint8_t)rndn(r, 2);
        h.size = (uint16_t)(rndn(r, 4) ? n : rndn(r, 4096));
        w0 = dn2_hdr0_encode(&h);
        w1 = dn2_hdr1_encode(fz_off(f), fz_off(f));
        for (i = 0; i < 8; i++) {
            img[i] = (uint8_t)(w0 >> (8 * i));
            img[8 + i] = (uint8_t)(w1 >> (8 * i));
        }
        for (i = 16; i < n; i++) {
            img[i] = (uint8_t)rnd(r);
        }
        qq_write(b, b->base + DN2_WW_OFF(wid, ww), img, n);
        if (rndn(r, 3)) {
            qq(b, "writeq 0x%" PRIx64 " 0x%" PRIx64, ur_addr(b, wid, DN2_UR_CMD0_LOWER),
               dn2_botf_lower(ww, rndn(r, 5) ? n : (unsigned)rndn(r, 1024)));
            P1.doorbells++;
        }
    } else if (k < 850) {
        /* a read anywhere in the window */
        unsigned sz = (unsigned)rndn(r, 4);
        uint64_t off = rndn(r, 3) ? rndn(r, DN2_WINDOW_SIZE) :
                                    DN2_UR_BASE + rndn(r, 2 * DN2_REGION_SIZE);
        if (off == DN2_SR_BASE + DN2_SR_CTL_RESET && rndn(r, 20)) {
            off += 8;   /* a read of 0xa00 resets: keep those rare */
        }
        qq(b, "%s 0x%" PRIx64, rd_cmd[sz], b->base + off);
    } else if (k < 998) {
        /* a write anywhere in the window (buffers, registers, holes) */
        unsigned sz = (unsigned)rndn(r, 4);
        uint64_t off = rndn(r, 2) ? rndn(r, DN2_WINDOW_SIZE) :
                                    DN2_UR_BASE + rndn(r, 2 * DN2_REGION_SIZE);
        uint64_t v = rnd(r);
        if (sz < 3) {
            v &= (1ull << (8u << sz)) - 1;
        }
        if (fz_tame(f, off, 1u << sz, &v)) {
            qq(b, "%s 0x%" PRIx64 " 0x%" PRIx64, wr_cmd[sz], b->base + off, v);
        }
    } else {
        /* a Controller Reset (write or read of 0xa00), then maybe part
         * of a bring-up with fuzz values */
        if (rndn(r, 2)) {
            qq(b, "writeq 0x%" PRIx64 " 0x%" PRIx64, sr_addr(b, DN2_SR_CTL_RESET), rnd(r));
        } else {
            qq(b, "readq 0x%" PRIx64, sr_addr(b, DN2_SR_CTL_RESET));
        }
        P1.ctl_resets++;
        if (rndn(r, 2)) {
            qq(b, "writeq 0x%" PRIx64 " 0x%" PRIx64, sr_addr(b, DN2_SR_SDIMM_CAPACITY),
               (uint64_t)1 << rndn(r, 3));
            qq(b, "writeq 0x%" PRIx64 " 0x1", sr_addr(b, DN2_SR_SDIMM_INIT));
            qq(b, "writeq 0x%" PRIx64 " 0x%" PRIx64, sr_addr(b, DN2_SR_MTU),
               (uint64_t)1 << rndn(r, 5));
            qq(b, "writeq 0x%" PRIx64 " 0x%x", sr_addr(b, DN2_SR_PGID0), f->fp);
            qq(b, "writeq 0x%" PRIx64 " 0x%x", sr_addr(b, DN2_SR_PGID1), f->fp);
        }
    }
}

/*
 * Back-pressure, then a Controller Reset of the board that applies it: d's
 * status ring shrinks to 3 records, s streams 6 RVS with eflag at it, d's
 * ring fills and its port refuses packets (s stalls); then d is reset and
 * brought up again, as a guest driver reloading would.  The round trips
 * that follow must get through: no reset may leave s's stream hung.
 */
static unsigned bp_seen;

static void backpressure_reset(Board *s, Board *d)
{
    static char ctx[160];
    uint64_t end, cs = 0;
    int k;

    dn2_bio_status_ring(&d->io, 0, ST_OFF, dn2_status_size_reg(64));  /* 3 usable records */
    d->st_head[0] = ST_OFF;
    for (k = 0; k < 6; k++) {
        if (!fifo_room(s, 0, T_XFER)) {
            hang("back-pressure setup: no room in board %s's Request FIFO", s->name);
        }
        issue(s, 0, dn2_req_upper(0x900000 + k * 4096, 0xa00000 + k * 4096),
              dn2_req_lower(DN2_OP_RVS, 0, 0, dn2_lid_to_clid(d->lid), 0, 1, 4096));
    }
    end = now_ms() + 5000;
    do {
        cs = ur(d, 0, DN2_UR_CTL_STATUS);
        if (cs & DN2_CS_STATUS_FULL) {
            bp_seen++;
            break;
        }
        usleep(500);
    } while (now_ms() < end);
    if (!(cs & DN2_CS_STATUS_FULL)) {
        note("mmio: board %s's 3-record status ring did not fill (Controller Status 0x%"
             PRIx64 ")", d->name, cs);
    }
    msleep(5);
    sr_w(d, DN2_SR_CTL_RESET, 0);
    board_bringup(d, PG, PG);
    snprintf(ctx, sizeof(ctx), " (after a Controller Reset of board %s while it back-"
             "pressured board %s's stream)", d->name, s->name);
    check_ctx = ctx;
}

/* Every board: Controller Reset, bring-up, link; back-pressure and a
 * reset; then the round trips. */
static void mmio_check(Board **bs, int n, Rng *r)
{
    int i;

    P1.in_check = true;
    size_t len = 4096 * (1 + rndn(r, 3)) + 1 + rndn(r, 4000);

    for (i = 0; i < n; i++) {
        sr_w(bs[i], DN2_SR_CTL_RESET, 0);
        board_bringup(bs[i], PG, PG);
        if (!wait_link(bs[i], T_LINK)) {
            hang("check %" PRIu64 ": board %s: link not ready %u ms after the bring-up",
                 P1.checks + 1, bs[i]->name, T_LINK);
        }
        qom(bs[i], "stat-requests");        /* QMP answers too */
    }
    backpressure_reset(bs[0], bs[1]);
    round_trip(bs[0], bs[1], 0x100000, 0x200000, 0x300000, 0x400000, len);
    backpressure_reset(bs[1], bs[0]);
    round_trip(bs[1], bs[0], 0x500000, 0x600000, 0x700000, 0x800000, len);
    backpressure_reset(bs[2], bs[2]);
    round_trip(bs[2], bs[2], 0x100000, 0x200000, 0x300000, 0x400000, len);
    check_ctx = "";
    P1.checks++;
    P1.in_check = false;
    vnote("mmio check %" PRIu64 " passed (%zu-byte round trips)", P1.checks, len);
}

static Rng p1_rng;

/* One set of boards, fuzzed until the operations are done or something
 * fails (a failure jumps back to phase_mmio). */
static void mmio_segment(void)
{
    /* static: the phase runner stops them after a longjmp out of here */
    static Sw sw;
    static Board A, B, L;
    Board *bs[3] = { &A, &B, &L };
    char props[256];
    Rng *r = &p1_rng;
    FuzzCtx fa, fb, fl;
    uint64_t t0, next_check, every = opt_mmio_ops >= 500000 ? 100000 : opt_mmio_ops / 4;
    uint8_t fp;

    memset(&sw, 0, sizeof(sw));
    P1.segments++;
    psw = &sw;
    if (!sw_start(&sw, 0)) {
        phase_fail("dn2-switch did not start");
    }
    snprintf(props, sizeof(props), "switch=127.0.0.1:%d,guid=0xa1", sw.port);
    board_start(&A, "A", 64 * MiB, props);
    snprintf(props, sizeof(props), "switch=127.0.0.1:%d,guid=0xb1,rx-thread=on", sw.port);
    board_start(&B, "B", 64 * MiB, props);
    board_start(&L, "L", 64 * MiB, "loopback=on");
    for (int i = 0; i < 3; i++) {
        if (!wait_link(bs[i], T_LINK)) {
            hang("board %s: no link at start", bs[i]->name);
        }
        board_bringup(bs[i], PG, PG);
    }
    note("mmio: boards A (LID 0x%x), B (LID 0x%x, rx-thread) on dn2-switch port %d; L in "
         "loopback (LID 0x%x); %" PRIu64 " operations, a check every %" PRIu64, A.lid, B.lid,
         sw.port, L.lid, opt_mmio_ops, every);
    mmio_check(bs, 3, r);
    do {
        fp = (uint8_t)rnd(r);
    } while (fp == PG || fp == 0);
    fa = (FuzzCtx){ r, A.lid, B.lid, fp, A.area };
    fb = (FuzzCtx){ r, B.lid, A.lid, fp, B.area };
    fl = (FuzzCtx){ r, L.lid, L.lid, fp, L.area };
    t0 = qb_now_ns() - (uint64_t)(P1.secs * 1e9);
    next_check = (P1.ops / every + 1) * every;
    while (P1.ops < opt_mmio_ops) {
        FuzzCtx *fc[3] = { &fa, &fb, &fl };
        int i;
        for (i = 0; i < 3; i++) {
            while (bs[i]->q.on < 384) {
                fz_step(bs[i], fc[i]);
            }
            P1.ops += bs[i]->q.on;
            q_flush(bs[i], T_CMD);
        }
        P1.secs = (qb_now_ns() - t0) / 1e9;
        if (P1.ops >= next_check || P1.ops >= opt_mmio_ops) {
            double s = (qb_now_ns() - t0) / 1e9;
            mmio_check(bs, 3, r);
            note("mmio: %" PRIu64 " operations in %.1f s (%.0f/s incl. checks), check %" PRIu64
                 " passed", P1.ops, s, P1.ops / s, P1.checks);
            next_check += every;
        }
    }
    P1.secs = (qb_now_ns() - t0) / 1e9;
    diag++;
    note("mmio: what the boards saw:");
    for (int i = 0; i < 3; i++) {
        board_dump(bs[i]);
    }
    diag--;
    P1.foreign = foreign_records;
}

/* A crash or a hang ends the segment; the fuzzing goes on with fresh
 * boards (the run is failed all the same), so that one defect does not
 * hide the next.  At most 4 segments. */
static void phase_mmio(void)
{
    P1.ran = true;
    dn2f_rng_seed(&p1_rng, opt_seed ^ 0x6d6d696f);
    for (;;) {
        if (!setjmp(phase_env)) {
            mmio_segment();
            break;
        }
        if (P1.in_check) {
            P1.check_failures++;
        } else {
            P1.fuzz_failures++;
        }
        P1.in_check = false;
        phase_cleanup();
        if (P1.ops >= opt_mmio_ops || P1.segments >= 4) {
            break;
        }
        note("mmio: going on with fresh boards (%" PRIu64 " operations left)",
             opt_mmio_ops - P1.ops);
    }
    P1.ops_ok = P1.ops >= opt_mmio_ops && !P1.fuzz_failures && !P1.check_failures;
    P1.checks_ok = P1.checks > 0 && !P1.check_failures;
}

/* ================================================================== */
/* Phase 2: hostile datagrams                                          */
/* ================================================================== */

#define GUARD_OFF   (64 * MiB)  /* WID 0: only forged packets aim here */
#define GUARD_LEN   (16 * MiB)
#define CHK_OFF     (96 * MiB)  /* WID 0: the known-good round trips */
#define AMT_ENT     0x100u      /* WID 1's AMT entry (LLCM offset) */
#define IPR_BASE    0x100000u   /* WID 1's IPUSH ring (SO-DIMM offset) */
#define IPR_SIZE    0x10000u
#define NFUZZSOCK   4

struct P2s {
    uint64_t sent, to_board[2], to_switch, send_err;
    uint64_t kind[8];
    uint64_t rx_board[2], drops_board[2], stalls_board[2], accepted_board[2];
    uint64_t sw_bad, sw_in;
    uint64_t peer_acks, peer_data_in, peer_rehello;
    unsigned checks;
    double secs;
    bool ran, sent_ok, guard_ok, after_ok, peer_ok, silent_ok;
    uint64_t silent_ms, rc_timeout_ms, rc_abandoned, abandon_ms;
    int bye_reason;
};
/* [0]: the open fabric; [1]: with a cluster secret the hostile side lacks */
static struct P2s P2v[2], *P2p = &P2v[0];
#define P2 (*P2p)


static const char *const kind_name[8] = {
    "random bytes", "magic + random", "header + random body", "mutated messages",
    "forged DATA/ACK", "peer DATA (random DIMMnet-2 packets)", "to the switch", "-",
};

typedef struct Victim {
    Board *b;
    uint16_t lid;
    uint64_t epoch;
    struct dn2f_addr addr;
    bool known;
    /* per lane (= the packets' DWID, docs/fabric.md 4.1) */
    uint32_t tx_seq[DN2F_NUM_LANES];    /* our next sequence number toward it */
    uint32_t rx_cum[DN2F_NUM_LANES];    /* the next one we expect from it */
    bool rx_seen[DN2F_NUM_LANES];
    uint32_t acked[DN2F_NUM_LANES];     /* its latest cumulative ACK of our packets */
    bool ack_seen;              /* an ACK block from it since this was cleared */
    uint32_t sess;              /* its session toward us (0: not known yet) */
} Victim;

/* A hostile board: registered with the switch like a board (HELLO), so
 * its DATA passes the fabric's checks and reaches the Receive Controller. */
typedef struct RawPeer {
    int fd;
    struct dn2f_addr sw;
    uint64_t guid, epoch, sw_epoch;
    uint16_t lid;
    uint32_t gen, sess;
    struct dn2f_ticket ticket;  /* the ASSIGN's, returned until we are in the table */
    bool joined;
    bool mute;                  /* acknowledge nothing (keepalives go on) */
    int bye_reason;             /* the last BYE from the switch (-1: none) */
    Victim v[2];
    uint64_t next_hello, next_ka;
} RawPeer;

static void raw_send(int fd, const struct dn2f_addr *to, const void *buf, size_t len)
{
    if (sendto(fd, buf, len, 0, &to->u.sa, to->len) < 0) {
        P2.send_err++;
    }
}

static Victim *rp_victim(RawPeer *rp, uint16_t lid)
{
    int i;

    for (i = 0; i < 2; i++) {
        if (rp->v[i].lid == lid) {
            return &rp->v[i];
        }
    }
    return NULL;
}

/* Answer the switch and the victims: HELLO until registered, KEEPALIVE,
 * the routing table (epochs, addresses), and an ACK for every DATA (an RVL
 * answered to us must not stall the victim). */
static void rp_service(RawPeer *rp)
{
    static uint8_t buf[DN2F_DGRAM_MAX + 1], out[256];
    struct dn2f_wbuf w;
    struct sockaddr_storage ss;
    uint64_t t = now_ms();
    int i;

    for (i = 0; i < 4096; i++) {
        socklen_t sl = sizeof(ss);
        ssize_t n = recvfrom(rp->fd, buf, sizeof(buf), MSG_DONTWAIT, (struct sockaddr *)&ss, &sl);
        struct dn2f_msg m;
        Victim *v;
        if (n < 0) {
            break;
        }
        if (dn2f_decode(buf, (size_t)n, &m)) {
            continue;
        }
        switch (m.h.type) {
        case DN2F_T_ASSIGN:
            /* a ticket: returned in a KEEPALIVE it makes us a port */
            rp->lid = m.u.assign.lid;
            rp->sw_epoch = m.h.src_epoch;
            rp->ticket = m.u.assign.ticket;
            rp->joined = false;
            rp->next_ka = 0;
            break;
        case DN2F_T_ROUTES: {
            struct dn2f_iter it;
            struct dn2f_route r;
            rp->gen = m.u.routes.gen;
            rp->sw_epoch = m.h.src_epoch;
            dn2f_routes_iter(&m, &it);
            while (dn2f_routes_next_route(&it, &r)) {
                if (r.lid == rp->lid) {
                    rp->joined = true;
                }
                if ((v = rp_victim(rp, r.lid))) {
                    if (v->epoch != r.epoch) {          /* new streams */
                        memset(v->tx_seq, 0, sizeof(v->tx_seq));
                        memset(v->rx_cum, 0, sizeof(v->rx_cum));
                        memset(v->rx_seen, 0, sizeof(v->rx_seen));
                        v->sess = 0;
                    }
                    v->epoch = r.epoch;
                    v->addr = r.addr;
                    v->known = true;
                }
            }
            break;
        }
        case DN2F_T_BYE:
            rp->bye_reason = (int)m.u.bye.reason;
            rp->lid = 0;            /* the switch forgot us: HELLO again */
            rp->joined = false;
            P2.peer_rehello++;
            break;
        case DN2F_T_DATA:
        case DN2F_T_ACK:
            if (!(v = rp_victim(rp, m.h.src_lid))) {
                break;
            }
            if (m.h.src_sess != v->sess) {
                /* the victim started over with us (a new session): both
                 * directions restart at 0 (docs/fabric.md, sessions) */
                v->sess = m.h.src_sess;
                memset(v->rx_cum, 0, sizeof(v->rx_cum));
                memset(v->rx_seen, 0, sizeof(v->rx_seen));
                memset(v->tx_seq, 0, sizeof(v->tx_seq));
                memset(v->acked, 0, sizeof(v->acked));
            }
            if (m.h.type == DN2F_T_DATA && !rp->mute) {
                struct dn2f_iter it;
                struct dn2f_rec r;
                unsigned ln, nl = 0;
                P2.peer_data_in++;
                dn2f_data_iter(&m, &it);
                while (dn2f_data_next(&it, &r)) {
                    ln = r.lane % DN2F_NUM_LANES;
                    v->rx_seen[ln] = true;
                    /* a sink: everything up to the highest sequence number
                     * seen counts as received (a hole would only make the
                     * victim wait for its timers) */
                    if (r.kind != DN2F_REC_MCAST_ORIGIN &&
                        (int32_t)(r.seq - v->rx_cum[ln]) >= 0 &&
                        (int32_t)(r.seq - v->rx_cum[ln]) < 65536) {
                        v->rx_cum[ln] = r.seq + 1;
                    }
                }
                dn2f_wbuf_init(&w, out, sizeof(out));
                dn2f_put_hdr(&w, DN2F_T_ACK, 0, rp->lid, v->lid, rp->epoch, v->epoch);
                dn2f_hdr_set_sessions(&w, rp->sess, v->sess);
                for (ln = 0; ln < DN2F_NUM_LANES; ln++) {
                    nl += v->rx_seen[ln];
                }
                for (ln = 0; ln < DN2F_NUM_LANES; ln++) {
                    if (v->rx_seen[ln] || (!nl && ln == 0)) {
                        nl = nl ? nl - 1 : 0;
                        dn2f_put_ack(&w, ln, nl > 0, v->rx_cum[ln], v->rx_cum[ln] + 512, 0,
                                     NULL);
                    }
                }
                raw_send(rp->fd, &v->addr, out, dn2f_finish(&w));
                P2.peer_acks++;
            }
            {
                const struct dn2f_acks *as = m.h.type == DN2F_T_ACK ? &m.u.acks :
                                             &m.u.data.acks;
                unsigned j;
                /* a naive sender: what the victim did not get is sent anew */
                for (j = 0; j < as->n; j++) {
                    unsigned ln = as->a[j].lane % DN2F_NUM_LANES;
                    v->acked[ln] = as->a[j].cum;
                    v->ack_seen = true;
                    if ((int32_t)(v->tx_seq[ln] - as->a[j].cum) > 0) {
                        v->tx_seq[ln] = as->a[j].cum;
                    }
                }
            }
            break;
        default:
            break;
        }
    }
    if (!rp->lid && t >= rp->next_hello) {
        struct dn2f_hello hl = { .guid = rp->guid, .lid_hint = 0 };
        dn2f_wbuf_init(&w, out, sizeof(out));
        dn2f_put_hdr(&w, DN2F_T_HELLO, 0, 0, 0, rp->epoch, 0);
        dn2f_put_hello(&w, &hl);
        raw_send(rp->fd, &rp->sw, out, dn2f_finish(&w));
        rp->next_hello = t + 100;
    }
    if (rp->lid && t >= rp->next_ka) {
        dn2f_wbuf_init(&w, out, sizeof(out));
        dn2f_put_hdr(&w, DN2F_T_KEEPALIVE, 0, rp->lid, 0, rp->epoch, rp->sw_epoch);
        dn2f_put_keepalive(&w, rp->joined ? rp->gen : 0xffffffffu, rp->guid,
                           rp->joined ? NULL : &rp->ticket);
        raw_send(rp->fd, &rp->sw, out, dn2f_finish(&w));
        rp->next_ka = t + (rp->joined ? 200 : 100);
    }
}

static bool rp_register(RawPeer *rp, int sw_port, Board *a, Board *b, uint64_t seed,
                        unsigned ms)
{
    char sws[64];
    struct dn2f_addr me;
    uint64_t end = now_ms() + ms;

    memset(rp, 0, sizeof(*rp));
    dn2f_addr_parse(&me, "127.0.0.1:0");
    rp->fd = dn2f_udp_open(&me, 4 << 20);
    if (rp->fd < 0) {
        die("UDP socket: %s", strerror(-rp->fd));
    }
    snprintf(sws, sizeof(sws), "127.0.0.1:%d", sw_port);
    dn2f_addr_parse(&rp->sw, sws);
    rp->guid = 0xbad0000000000000ull | (seed & 0xffffffffffull) | 1;
    rp->epoch = seed | 1;
    rp->sess = 1;
    rp->bye_reason = -1;
    rp->v[0] = (Victim){ .b = a, .lid = a->lid };
    rp->v[1] = (Victim){ .b = b, .lid = b->lid };
    while (now_ms() < end) {
        rp_service(rp);
        if (rp->lid && rp->joined && rp->v[0].known && rp->v[1].known) {
            return true;
        }
        msleep(2);
    }
    return false;
}

/* A random DIMMnet-2 packet for victim v from the registered peer: never
 * PG (the known-good traffic's group), mostly for WID 1 (PG2). */
static size_t hostile_pkt(Rng *r, uint8_t *p, uint16_t dlid)
{
    static const uint8_t types[] = { DN2_OP_RVS, DN2_OP_RVSS, DN2_OP_RVSI, DN2_OP_RVL,
                                     DN2_OP_RVLS, DN2_OP_RVLI, DN2_OP_IPUSH };
    struct dn2_hdr h;
    unsigned lines, dlen, i;
    uint64_t w[4];

    memset(&h, 0, sizeof(h));
    h.type = rndn(r, 10) < 7 ? types[rndn(r, sizeof(types))] : (uint8_t)rndn(r, 32);
    h.dtype = (uint8_t)rndn(r, 8);
    h.iter = rndn(r, 2) ? (uint8_t)rndn(r, 16) : (uint8_t)rnd(r);
    do {
        h.pgid = rndn(r, 10) < 6 ? PG2 : (uint8_t)rnd(r);
    } while (h.pgid == PG);
    h.dwid = rndn(r, 5) ? 1 : 0;
    h.swid = (uint8_t)rndn(r, 2);
    h.dlid = dlid;
    h.rflag = rndn(r, 4) == 0;
    h.eflag = (uint8_t)rndn(r, 2);
    h.hflag = rndn(r, 4) ? dn2_hdr_lines(h.type) > 2 : (uint8_t)rndn(r, 2);
    h.lflag = rndn(r, 5) == 0;
    h.pflag = rndn(r, 5) == 0;
    h.w1_lo = rndn(r, 5) ? (uint32_t)rndn(r, 128 * MiB) : (uint32_t)rnd(r);
    h.w1_hi = rndn(r, 3) ? (uint32_t)rndn(r, 300) : (uint32_t)rnd(r);
    h.total = rndn(r, 10) ? (uint32_t)rndn(r, 64 * KiB) : (uint32_t)rnd(r);
    h.stride = rndn(r, 3) ? (uint32_t)rndn(r, 4096) : (uint32_t)rnd(r);
    h.ex = rndn(r, 2) ? 0 : rnd(r);
    lines = rndn(r, 8) ? dn2_hdr_lines(h.type) : (unsigned)rndn(r, 5);
    if (lines < 1) {
        lines = 1;
    }
    dlen = rndn(r, 10) < 7 ? (unsigned)rndn(r, 513) : (unsigned)rndn(r, DN2_PKT_MAX - lines * 8 + 1);
    if (h.type >= DN2_OP_RVL && h.type <= DN2_OP_RVLI && rndn(r, 4)) {
        dlen = 0;
    }
    h.size = rndn(r, 10) < 7 ? (uint16_t)dn2_pkt_size_field(lines * 8 + dlen) :
                               (uint16_t)rndn(r, 4096);
    w[0] = dn2_hdr0_encode(&h);
    w[1] = dn2_hdr1_encode(h.w1_lo, h.w1_hi);
    w[2] = dn2_hdr1_encode(h.total, h.stride);
    w[3] = h.ex;
    for (i = 0; i < lines * 8; i++) {
        p[i] = i < 32 ? (uint8_t)(w[i / 8] >> (8 * (i % 8))) : (uint8_t)rnd(r);
    }
    for (i = 0; i < dlen; i++) {
        p[lines * 8 + i] = (uint8_t)rnd(r);
    }
    if (lines * 8 + dlen < DN2F_PKT_MIN) {
        memset(p + lines * 8 + dlen, 0, DN2F_PKT_MIN - lines * 8 - dlen);
        dlen = DN2F_PKT_MIN - lines * 8;
    }
    return lines * 8 + dlen;
}

static void mutate(Rng *r, uint8_t *buf, size_t *len, size_t cap)
{
    unsigned n = 1 + (unsigned)rndn(r, 4), i;

    for (i = 0; i < n; i++) {
        switch (rndn(r, 7)) {
        case 0: case 1:             /* flip a bit */
            if (*len) {
                size_t k = rndn(r, *len);
                buf[k] ^= (uint8_t)(1u << rndn(r, 8));
            }
            break;
        case 2:                     /* a random byte, biased to the header */
            if (*len) {
                size_t k = rndn(r, 2) ? rndn(r, *len < 48 ? *len : 48) : rndn(r, *len);
                buf[k] = (uint8_t)rnd(r);
            }
            break;
        case 3:                     /* truncate */
            *len = rndn(r, *len + 1);
            break;
        case 4:                     /* extend with random bytes */
            {
                size_t add = rndn(r, 64), k;
                for (k = 0; k < add && *len < cap; k++) {
                    buf[(*len)++] = (uint8_t)rnd(r);
                }
            }
            break;
        case 5:                     /* the length field lies */
            if (*len >= 16) {
                uint32_t l = rndn(r, 2) ? (uint32_t)(*len + rndn(r, 9) - 4) : (uint32_t)rnd(r);
                memcpy(buf + 12, &l, 4);
            }
            break;
        default:                    /* a 32-bit field gets an edge value */
            if (*len >= 8) {
                static const uint32_t e[] = { 0, 1, 0x7fffffff, 0x80000000, 0xffffffff,
                                              0xfffe, 0x10000 };
                size_t k = rndn(r, *len - 3) & ~(size_t)3;
                memcpy(buf + k, &e[rndn(r, 7)], 4);
            }
            break;
        }
    }
}

/* A well-formed message of a random type with random fields. */
static size_t random_msg(Rng *r, uint8_t *buf, size_t cap, uint16_t src, uint16_t dst,
                         uint64_t se, uint64_t de, bool to_switch)
{
    struct dn2f_wbuf w;
    unsigned type = 1 + (unsigned)rndn(r, DN2F_T_MAX - 1), flags = 0, i, n;

    if (type == DN2F_T_HELLO && to_switch && rndn(r, 8)) {
        type = DN2F_T_KEEPALIVE;    /* a HELLO makes a port: keep those rarer */
    }
    if (type == DN2F_T_DATA && rndn(r, 2)) {
        flags |= DN2F_F_ACK;
    }
    dn2f_wbuf_init(&w, buf, cap);
    dn2f_put_hdr(&w, type, flags, src, dst, se, de);
    if (rndn(r, 3) == 0) {
        dn2f_hdr_set_sessions(&w, (uint32_t)rndn(r, 4), (uint32_t)rndn(r, 4));
    }
    switch (type) {
    case DN2F_T_HELLO: {
        struct dn2f_hello h = { .guid = rnd(r) | 1,
                                .lid_hint = rndn(r, 2) ? 0 : (uint16_t)(1 + rndn(r, 0xff)) };
        dn2f_put_hello(&w, &h);
        break;
    }
    case DN2F_T_ASSIGN: {
        struct dn2f_assign a = { .guid = rnd(r), .lid = (uint16_t)rnd(r),
                                 .link_state = (uint8_t)rndn(r, 4),
                                 .route_mode = (uint8_t)rndn(r, 3) };
        dn2f_put_assign(&w, &a);
        break;
    }
    case DN2F_T_ROUTES: {
        unsigned nr = (unsigned)rndn(r, 6), ng = (unsigned)rndn(r, 3);
        dn2f_put_routes_hdr(&w, (uint32_t)rnd(r), 0, 1, (uint16_t)nr, (uint16_t)ng);
        for (i = 0; i < nr; i++) {
            struct dn2f_route rt;
            memset(&rt, 0, sizeof(rt));
            rt.lid = (uint16_t)(1 + rndn(r, 0xff));
            rt.flags = DN2F_RT_DIRECT;
            dn2f_addr_parse(&rt.addr, "127.0.0.1:9");
            rt.epoch = rnd(r);
            dn2f_put_route(&w, &rt);
        }
        for (i = 0; i < ng; i++) {
            uint16_t m[4] = { src, dst, 1, 2 };
            dn2f_put_group(&w, dn2_clid_to_lid((uint16_t)(DN2_CLID_MCAST_FIRST + rndn(r, 64))),
                           (uint16_t)rndn(r, 5), m);
        }
        break;
    }
    case DN2F_T_DATA: {
        uint8_t pkt[DN2_PKT_MAX];
        if (flags & DN2F_F_ACK) {
            bool two = rndn(r, 3) == 0;
            dn2f_put_ack(&w, (unsigned)rndn(r, 2), two, (uint32_t)rnd(r), (uint32_t)rnd(r), 0,
                         NULL);
            if (two) {
                dn2f_put_ack(&w, (unsigned)rndn(r, 3), false, (uint32_t)rnd(r),
                             (uint32_t)rnd(r), 0, NULL);
            }
        }
        n = 1 + (unsigned)rndn(r, 4);
        for (i = 0; i < n; i++) {
            size_t l = hostile_pkt(r, pkt, dst);
            unsigned kind = rndn(r, 4) ? DN2F_REC_UNICAST : (unsigned)rndn(r, 3);
            unsigned lane = dn2f_pkt_lane(pkt);
            uint16_t ml[2] = { dst, src };
            uint32_t ms[2] = { (uint32_t)rnd(r), 0 };
            uint64_t me[2] = { de, rnd(r) };
            if (kind == DN2F_REC_UNICAST && lane >= DN2F_LANE_REQ && rndn(r, 5)) {
                dn2f_put_req(&w, dn2f_lane_rflags(lane) | (unsigned)rndn(r, 2),
                             (uint32_t)rndn(r, 1000), (uint32_t)rndn(r, 1000), pkt, l);
                continue;
            }
            dn2f_put_rec(&w, kind,
                         rndn(r, 5) ? dn2f_lane_rflags(lane) | (unsigned)rndn(r, 2) :
                                      (unsigned)rndn(r, 256),
                         (uint32_t)rndn(r, 1000),
                         kind ? dn2_clid_to_lid(DN2_CLID_MCAST_FIRST) : 0,
                         kind == DN2F_REC_MCAST_ORIGIN ? 1 + (unsigned)rndn(r, 2) : 0,
                         ml, ms, me, pkt, l);
        }
        break;
    }
    case DN2F_T_ACK: {
        uint8_t bits[128];
        unsigned nb = 32 * (unsigned)rndn(r, 5);
        for (i = 0; i < nb / 8; i++) {
            bits[i] = (uint8_t)rnd(r);
        }
        dn2f_put_ack(&w, (unsigned)rndn(r, DN2F_NUM_LANES + 1), false, (uint32_t)rndn(r, 4096),
                     (uint32_t)rndn(r, 8192), (uint16_t)nb, bits);
        break;
    }
    case DN2F_T_KEEPALIVE: {
        struct dn2f_ticket tk;
        memset(&tk, 0, sizeof(tk));
        for (i = 0; i < sizeof(tk); i++) {
            ((uint8_t *)&tk)[i] = (uint8_t)rnd(r);
        }
        dn2f_put_keepalive(&w, (uint32_t)rnd(r), rnd(r), rndn(r, 2) ? &tk : NULL);
        break;
    }
    case DN2F_T_STATS_REQ:
        dn2f_put_stats_req(&w, (uint32_t)rnd(r), (uint16_t)rndn(r, 4),
                           rndn(r, 2) ? DN2F_STATS_REQ_MIN : 64);
        break;
    case DN2F_T_BYE:
        dn2f_put_u32pair(&w, rndn(r, 2) ? (uint32_t)rndn(r, 6) : (uint32_t)rnd(r), 0);
        break;
    case DN2F_T_STATS_RESP: {
        struct dn2f_swsummary su;
        memset(&su, 0, sizeof(su));
        su.uptime_ms = rnd(r);
        dn2f_put_stats_hdr(&w, (uint32_t)rnd(r), 0, 1, 0, &su);
        break;
    }
    default:
        dn2f_put_mcast(&w, dn2_clid_to_lid((uint16_t)(DN2_CLID_MCAST_FIRST + rndn(r, 0x3ff))));
        break;
    }
    return dn2f_finish(&w);
}

/* Forged traffic: claims to be the other victim (right LIDs, epochs when
 * known) from a socket that is not it: RVS into the guard region, ACKs. */
static size_t forged_msg(Rng *r, uint8_t *buf, size_t cap, Victim *to, Victim *as)
{
    struct dn2f_wbuf w;
    uint8_t pkt[1024];
    struct dn2_hdr h;
    unsigned i, n = 1 + (unsigned)rndn(r, 4);
    uint64_t se = rndn(r, 10) < 7 ? as->epoch : rnd(r);
    uint64_t de = rndn(r, 10) < 7 ? to->epoch : rnd(r);

    dn2f_wbuf_init(&w, buf, cap);
    if (rndn(r, 4) == 0) {
        dn2f_put_hdr(&w, DN2F_T_ACK, 0, as->lid, to->lid, se, de);
        dn2f_hdr_set_sessions(&w, (uint32_t)rndn(r, 8), (uint32_t)rndn(r, 8));
        dn2f_put_ack(&w, (unsigned)rndn(r, 2), false, (uint32_t)rndn(r, 100000),
                     (uint32_t)rndn(r, 100000), 0, NULL);
        return dn2f_finish(&w);
    }
    dn2f_put_hdr(&w, DN2F_T_DATA, 0, as->lid, to->lid, se, de);
    dn2f_hdr_set_sessions(&w, (uint32_t)rndn(r, 8), (uint32_t)rndn(r, 8));
    for (i = 0; i < n; i++) {
        size_t dlen = 8 * (1 + rndn(r, 100)), k;
        uint64_t w0, w1;
        uint32_t dst = (uint32_t)(GUARD_OFF + (rndn(r, GUARD_LEN - dlen) & ~7ull));
        memset(&h, 0, sizeof(h));
        h.type = DN2_OP_RVS;
        h.pgid = PG;
        h.dlid = to->lid;
        h.eflag = 1;
        h.w1_lo = h.w1_hi = dst;
        h.size = dn2_pkt_size_field(16 + dlen);
        w0 = dn2_hdr0_encode(&h);
        w1 = dn2_hdr1_encode(dst, dst);
        for (k = 0; k < 8; k++) {
            pkt[k] = (uint8_t)(w0 >> (8 * k));
            pkt[8 + k] = (uint8_t)(w1 >> (8 * k));
        }
        for (k = 16; k < 16 + dlen; k++) {
            pkt[k] = (uint8_t)(rnd(r) | 1);
        }
        dn2f_put_rec(&w, DN2F_REC_UNICAST, 0, (uint32_t)rndn(r, 4096), 0, 0, NULL, NULL, NULL,
                     pkt, 16 + dlen);
    }
    return dn2f_finish(&w);
}

/* DATA from the registered peer: in sequence (so it is delivered), now
 * and then out of the window or with a bogus ACK block. */
static size_t peer_data(Rng *r, RawPeer *rp, Victim *v, uint8_t *buf, size_t cap)
{
    struct dn2f_wbuf w;
    uint8_t pkt[DN2_PKT_MAX];
    unsigned i, n = 1 + (unsigned)rndn(r, 6), flags = rndn(r, 5) ? 0 : DN2F_F_ACK;

    dn2f_wbuf_init(&w, buf, cap);
    dn2f_put_hdr(&w, DN2F_T_DATA, flags, rp->lid, v->lid, rp->epoch, v->epoch);
    dn2f_hdr_set_sessions(&w, rp->sess, rndn(r, 20) ? v->sess : (uint32_t)rnd(r));
    if (flags) {
        unsigned ln = (unsigned)rndn(r, DN2F_NUM_LANES);
        dn2f_put_ack(&w, ln, false, rndn(r, 2) ? v->rx_cum[ln] : (uint32_t)rnd(r),
                     v->rx_cum[ln] + (uint32_t)rndn(r, 1024), 0, NULL);
    }
    for (i = 0; i < n; i++) {
        size_t l = hostile_pkt(r, pkt, v->lid);
        unsigned ln = dn2f_pkt_lane(pkt) % DN2F_NUM_LANES;
        uint32_t seq = rndn(r, 10) ? v->tx_seq[ln]++ : (uint32_t)rnd(r);
        bool ok = ln >= DN2F_LANE_REQ ?
            dn2f_put_req(&w, dn2f_lane_rflags(ln), seq,
                         rndn(r, 10) ? v->tx_seq[ln - DN2F_LANE_REQ] : (uint32_t)rnd(r), pkt, l) :
            dn2f_put_rec(&w, DN2F_REC_UNICAST, dn2f_lane_rflags(ln), seq, 0, 0, NULL, NULL, NULL,
                         pkt, l);
        if (!ok) {
            break;
        }
    }
    return dn2f_finish(&w);
}

/* WID 1 of a victim: its status ring, IPUSH ring and LH Buffer freed
 * (as a guest would consume them), so back-pressure comes and goes. */
static void victim_drain(Board *b)
{
    Rec rec[256];
    uint32_t tail;

    st_take(b, 1, rec, 256);
    tail = (uint32_t)rdq(b, b->base + DN2_LLCM_OFF(1) + AMT_ENT + DN2_AMT_TAIL) & 0xffffffffu;
    wrq(b, b->base + DN2_LLCM_OFF(1) + AMT_ENT + DN2_AMT_HEAD,
        (rdq(b, b->base + DN2_LLCM_OFF(1) + AMT_ENT) & 0xffffffff00000000ull) | tail);
    ur_w(b, 1, DN2_UR_LHB_ADDR, ur(b, 1, DN2_UR_LHB_ADDR));
}

static void victim_setup(Board *b, uint16_t peer_lid)
{
    uint8_t e[DN2_AMT_ENTRY];
    uint32_t v[4] = { 0, 0, IPR_BASE, IPR_SIZE };
    int swid;

    memcpy(e, v, sizeof(e));
    qq_write(b, b->base + DN2_LLCM_OFF(1) + AMT_ENT, e, sizeof(e));
    q_flush(b, T_CMD);
    ur_w(b, 1, DN2_UR_IPUSH_AREA_SIZE, 0x100);
    for (swid = 0; swid < 2; swid++) {
        sr_w(b, DN2_SR_AMT, dn2_amt_encode((DN2_LLCM_OFF(1) - DN2_LLCM_BASE + AMT_ENT) /
                                           DN2_AMT_UNIT, (uint32_t)swid, peer_lid));
    }
}

static void hostile_round_trips(Board *a, Board *b, Rng *r)
{
    size_t len = 4096 * (1 + rndn(r, 2)) + 1 + rndn(r, 3000);

    round_trip(a, b, CHK_OFF, CHK_OFF + 1 * MiB, CHK_OFF + 2 * MiB, CHK_OFF + 3 * MiB, len);
    round_trip(b, a, CHK_OFF + 4 * MiB, CHK_OFF + 5 * MiB, CHK_OFF + 6 * MiB,
               CHK_OFF + 7 * MiB, len);
}

static RawPeer *g_rp;

static void rp_idle(void)
{
    if (g_rp) {
        rp_service(g_rp);
    }
}

/* Learn where victim v's lanes from us stand: an ACK with ACKREQ, answered
 * by an ACK (acked[] updated).  While muted it acknowledges nothing new. */
static bool rp_probe(RawPeer *rp, Victim *v, unsigned ms)
{
    static uint8_t buf[256];
    struct dn2f_wbuf w;
    uint64_t e = now_ms() + ms, nx = 0;

    v->ack_seen = false;
    while (now_ms() < e && !v->ack_seen) {
        if (now_ms() >= nx) {
            dn2f_wbuf_init(&w, buf, sizeof(buf));
            dn2f_put_hdr(&w, DN2F_T_ACK, DN2F_F_ACKREQ, rp->lid, v->lid, rp->epoch, v->epoch);
            dn2f_hdr_set_sessions(&w, rp->sess, v->sess);
            dn2f_put_ack(&w, 0, false, v->rx_cum[0], v->rx_cum[0] + 512, 0, NULL);
            raw_send(rp->fd, &v->addr, buf, dn2f_finish(&w));
            nx = now_ms() + 50;
        }
        rp_service(rp);
        msleep(1);
    }
    return v->ack_seen;
}

/*
 * A joined peer that asks board a for data (4 RVLs of 1 MiB from a's WID 1)
 * and then acknowledges nothing, while it keeps itself in the switch's
 * table: a's Receive Controller answer stalls on credits.  The device
 * abandons such an answer after rc-timeout-ms (docs/security.md: "a remote
 * requester cannot hold a board's Window Controller hostage"); meanwhile
 * a known-good RVL from b must be answered, within that bound.
 */
static void silent_peer(RawPeer *rp, Board *a, Board *b, Rng *r)
{
    enum { RQ = DN2F_LANE_REQ + 1 };    /* the RVL lane to a's WID 1 */
    static uint8_t buf[DN2F_DGRAM_MAX];
    Victim *v = rp_victim(rp, a->lid);
    struct dn2f_wbuf w;
    uint64_t ab0 = 0, ab1 = 0, t0;
    int k, tries;

    if (!qom_try(a, "rc-timeout-ms", &P2.rc_timeout_ms)) {
        P2.rc_timeout_ms = 0;
    }
    static const char *const pr[] = { "stat-rx-packets", "stat-tx-packets", "stat-rx-drop-pgid",
                                      "stat-rx-drop-noproc", "stat-rx-drop-bad",
                                      "stat-rx-stalls", "stat-link-drops" };
    uint64_t c0[7] = { 0 };
    qom_try(a, "stat-rc-abandoned", &ab0);
    for (k = 0; k < 7 && verbose; k++) {
        c0[k] = qom(a, pr[k]);
    }
    for (t0 = now_ms(), tries = 0; now_ms() < t0 + 3000; tries++) {
    uint32_t base;
    /* where the victim's lane 1 from us stands (the storm's random sequence
     * numbers leave us no idea): probe (ACK with ACKREQ), then send exactly
     * there */
    if (!tries) {
        /* Start over with the victim: a newer session of ours makes it reset
         * every lane toward us (docs/fabric.md, sessions), so nothing the
         * storm left (random sequence numbers, requests waiting for an
         * "after" that never comes) is in the way. */
        rp->sess++;
        for (k = 0; k < 2; k++) {
            memset(rp->v[k].tx_seq, 0, sizeof(rp->v[k].tx_seq));
            memset(rp->v[k].rx_cum, 0, sizeof(rp->v[k].rx_cum));
            memset(rp->v[k].rx_seen, 0, sizeof(rp->v[k].rx_seen));
            memset(rp->v[k].acked, 0, sizeof(rp->v[k].acked));
        }
    }
    rp->mute = true;            /* from now on the victim's answers go unacknowledged */
    rp_probe(rp, v, 500);
    base = v->tx_seq[RQ] = v->acked[RQ];
    dn2f_wbuf_init(&w, buf, sizeof(buf));
    dn2f_put_hdr(&w, DN2F_T_DATA, DN2F_F_ACKREQ, rp->lid, v->lid, rp->epoch, v->epoch);
    dn2f_hdr_set_sessions(&w, rp->sess, v->sess);
    for (k = 0; k < 4; k++) {
        uint8_t pkt[32];
        struct dn2_hdr h;
        uint64_t wd[4];
        int j;
        memset(&h, 0, sizeof(h));
        h.type = DN2_OP_RVL;
        h.hflag = 1;
        h.pgid = PG2;
        h.dwid = 1;
        h.dlid = v->lid;
        h.size = sizeof(pkt);
        h.w1_lo = (uint32_t)(k * MiB);          /* source on a (WID 1) */
        h.w1_hi = (uint32_t)(k * MiB);          /* where it would land here */
        wd[0] = dn2_hdr0_encode(&h);
        wd[1] = dn2_hdr1_encode(h.w1_lo, h.w1_hi);
        wd[2] = dn2_hdr1_encode((uint32_t)MiB, 0);
        wd[3] = 0;
        for (j = 0; j < 32; j++) {
            pkt[j] = (uint8_t)(wd[j / 8] >> (8 * (j % 8)));
        }
        /* a request lane: delivered after our data lane 1 up to tx_seq[1] */
        dn2f_put_req(&w, dn2f_lane_rflags(RQ), v->tx_seq[RQ]++, v->tx_seq[1], pkt, sizeof(pkt));
    }
    raw_send(rp->fd, &v->addr, buf, dn2f_finish(&w));
    for (uint64_t e = now_ms() + 100; now_ms() < e && (int32_t)(v->acked[RQ] - base) < 4;) {
        rp_service(rp);
        msleep(1);
    }
    if ((int32_t)(v->acked[RQ] - base) >= 4) {
        break;
    }
    }
    if ((int32_t)(v->acked[RQ] - v->tx_seq[RQ]) < 0) {
        note("hostile: board %s did not acknowledge the silent peer's RVLs (lane %u cum %u, "
             "sent up to %u; its session %u, ours %u; fabric drops %" PRIu64 ")", a->name, RQ,
             v->acked[RQ], v->tx_seq[RQ], v->sess, rp->sess, qom(a, "stat-link-drops"));
    }
    msleep(20);
    if (verbose) {
        for (k = 0; k < 7; k++) {
            vnote("silent peer: board %s %s +%" PRIu64, a->name, pr[k], qom(a, pr[k]) - c0[k]);
        }
        vnote("silent peer: board %s Module State 0x%" PRIx64 ", lane 1 tx-seq %u acked %u, "
              "lane %u tx-seq %u acked %u", a->name, ur(a, 0, DN2_UR_MODULE_STATE), v->tx_seq[1],
              v->acked[1], RQ, v->tx_seq[RQ], v->acked[RQ]);
    }
    t0 = now_ms();
    hostile_round_trips(a, b, r);
    P2.silent_ms = now_ms() - t0;
    /* and the silent peer's answers are given up on within the bound */
    for (uint64_t e = t0 + P2.rc_timeout_ms + 5000; now_ms() < e; msleep(20)) {
        rp_service(rp);
        if (qom_try(a, "stat-rc-abandoned", &ab1) && ab1 > ab0) {
            break;
        }
    }
    P2.abandon_ms = now_ms() - t0;
    rp->mute = false;
    qom_try(a, "stat-rc-abandoned", &ab1);
    P2.rc_abandoned = ab1 - ab0;
    P2.silent_ok = P2.rc_timeout_ms && P2.silent_ms <= P2.rc_timeout_ms + 5000 &&
                   P2.rc_abandoned > 0;
    note("hostile: a joined peer asked board %s for 4 MiB and acknowledged nothing: the "
         "known-good round trips took %" PRIu64 " ms (RVL %" PRIu64 " ms); %" PRIu64
         " RC answers to it abandoned after %" PRIu64 " ms (rc-timeout-ms %" PRIu64 ")",
         a->name, P2.silent_ms, last_rvl_ms, P2.rc_abandoned, P2.abandon_ms,
         P2.rc_timeout_ms);
}

static void hostile_run(bool secret)
{
    static Sw sw;
    static Board A, B;
    static RawPeer rp;
    static uint8_t buf[DN2F_DGRAM_MAX + 64];
    Board *bs[2] = { &A, &B };
    struct dn2f_addr board_addr[2], me;
    int fsock[NFUZZSOCK], i;
    char props[256], st[4096];
    Rng r;
    uint64_t t0, next_check, every, base_rx[2], base_drops[2], base_stalls[2], base_acc[2];
    int64_t first;

    uint64_t ndg = secret ? opt_datagrams / 4 : opt_datagrams;

    P2p = &P2v[secret];
    use_secret = secret;
    P2.ran = true;
    memset(&sw, 0, sizeof(sw));
    dn2f_rng_seed(&r, opt_seed ^ 0x686f7374 ^ (secret ? 0x5ec : 0));
    every = ndg / 10 ? ndg / 10 : 1;
    psw = &sw;
    if (!sw_start(&sw, 0)) {
        phase_fail("dn2-switch did not start");
    }
    for (i = 0; i < 2; i++) {
        char a[64];
        int port = free_udp_port();
        snprintf(props, sizeof(props), "switch=127.0.0.1:%d,local=127.0.0.1:%d,guid=0x%x%s",
                 sw.port, port, 0xc1 + i, i ? ",rx-thread=on" : "");
        board_start(bs[i], i ? "B" : "A", 256 * MiB, props);
        bs[i]->udp_port = port;
        snprintf(a, sizeof(a), "127.0.0.1:%d", port);
        dn2f_addr_parse(&board_addr[i], a);
        if (!wait_link(bs[i], T_LINK)) {
            hang("board %s: no link at start", bs[i]->name);
        }
        board_bringup(bs[i], PG, PG2);
    }
    P2.peer_ok = rp_register(&rp, sw.port, &A, &B, opt_seed ^ 0x7261770000ull,
                             secret ? 3000 : T_LINK);
    if (secret) {
        /* without the secret it must not get in; it becomes one more stranger */
        P2.bye_reason = rp.bye_reason;
        note("hostile (cluster secret): the hostile peer, which lacks the secret, %s (the "
             "switch's last BYE: %s)", P2.peer_ok ? "JOINED the switch" :
             "could not join (as it must not)", rp.bye_reason < 0 ? "none" :
             dn2f_bye_name((unsigned)rp.bye_reason));
        for (i = 0; i < 2; i++) {
            rp.v[i].epoch = rnd(&r);
            rp.v[i].addr = board_addr[i];
        }
    } else if (!P2.peer_ok) {
        /* go on with what strangers can send; the run fails all the same */
        note("FAIL: the hostile peer could not join the switch (LID 0x%x, joined %d, victims "
             "known %d %d); this tool speaks fabric wire version %d with %d-byte headers: are "
             "dn2-switch and QEMU built from the same sources as tools/soak?", rp.lid,
             rp.joined, rp.v[0].known, rp.v[1].known, DN2F_VERSION, DN2F_HDR_LEN);
        for (i = 0; i < 2; i++) {
            rp.v[i].epoch = rnd(&r);
            rp.v[i].addr = board_addr[i];
        }
    }
    if (P2.peer_ok && !secret) {
        g_rp = &rp;
        idle_hook = rp_idle;    /* the peer answers while we wait */
    }
    for (i = 0; i < 2 && P2.peer_ok && !secret; i++) {
        char a[64];
        if (!dn2f_addr_equal(&rp.v[i].addr, &board_addr[i])) {
            phase_fail("the routing table gives board %s the address %s, not 127.0.0.1:%d",
                       bs[i]->name, dn2f_addr_str(&rp.v[i].addr, a, sizeof(a)),
                       bs[i]->udp_port);
        }
        victim_setup(bs[i], rp.lid);
    }
    for (i = 0; i < NFUZZSOCK; i++) {
        dn2f_addr_parse(&me, "127.0.0.1:0");
        fsock[i] = dn2f_udp_open(&me, 4 << 20);
        if (fsock[i] < 0) {
            die("UDP socket: %s", strerror(-fsock[i]));
        }
    }
    note("hostile%s: boards A (127.0.0.1:%d, LID 0x%x) and B (127.0.0.1:%d, LID 0x%x, "
         "rx-thread) on dn2-switch port %d; hostile peer LID 0x%x; %" PRIu64 " datagrams",
         secret ? " (cluster secret)" : "", A.udp_port, A.lid, B.udp_port, B.lid, sw.port,
         rp.lid, ndg);
    hostile_round_trips(&A, &B, &r);
    for (i = 0; i < 2; i++) {
        base_rx[i] = qom(bs[i], "stat-link-dgrams-rx");
        base_drops[i] = qom(bs[i], "stat-link-drops");
        base_stalls[i] = qom(bs[i], "stat-rx-stalls");
        base_acc[i] = qom(bs[i], "stat-rx-packets");
    }
    t0 = qb_now_ns();
    next_check = every;
    while (P2.sent < ndg) {
        unsigned k = (unsigned)rndn(&r, 1000), tgt = (unsigned)rndn(&r, 10);
        int t = tgt < 4 ? 1 : tgt < 7 ? 0 : 2;      /* B, A, the switch */
        int fd = fsock[rndn(&r, NFUZZSOCK)], kind;
        size_t len = 0;
        Victim *v = t < 2 ? &rp.v[t] : &rp.v[rndn(&r, 2)];
        Victim *o = &rp.v[v == &rp.v[0]];
        const struct dn2f_addr *to = t < 2 ? &board_addr[t] : &rp.sw;

        if (k < 150) {
            kind = 0;
            len = rndn(&r, 10) < 7 ? rndn(&r, 200) : rndn(&r, 10) ? rndn(&r, 2000) :
                                                                   rndn(&r, DN2F_DGRAM_MAX + 1);
            for (size_t j = 0; j < len; j++) {
                buf[j] = (uint8_t)rnd(&r);
            }
        } else if (k < 250) {
            uint32_t magic = DN2F_MAGIC;
            kind = 1;
            len = 4 + rndn(&r, 200);
            memcpy(buf, &magic, 4);
            for (size_t j = 4; j < len; j++) {
                buf[j] = (uint8_t)rnd(&r);
            }
            if (len > 4 && rndn(&r, 2)) {
                buf[4] = DN2F_VERSION;
            }
        } else if (k < 400) {
            struct dn2f_wbuf w;
            size_t body = rndn(&r, 10) < 8 ? rndn(&r, 128) : rndn(&r, 8192);
            kind = 2;
            dn2f_wbuf_init(&w, buf, sizeof(buf));
            dn2f_put_hdr(&w, (unsigned)rndn(&r, 16), (unsigned)rndn(&r, 8),
                         rndn(&r, 2) ? o->lid : (uint16_t)rnd(&r),
                         rndn(&r, 2) ? v->lid : (uint16_t)rnd(&r),
                         rndn(&r, 2) ? o->epoch : rnd(&r), rndn(&r, 2) ? v->epoch : rnd(&r));
            len = DN2F_HDR_LEN + body;
            for (size_t j = DN2F_HDR_LEN; j < len; j++) {
                buf[j] = rndn(&r, 3) ? 0 : (uint8_t)rnd(&r);
            }
            {
                uint32_t l = rndn(&r, 10) < 7 ? (uint32_t)len : (uint32_t)rnd(&r);
                memcpy(buf + 12, &l, 4);
            }
        } else if (k < 600) {
            kind = 3;
            len = random_msg(&r, buf, sizeof(buf) - 64, rndn(&r, 2) ? o->lid : rp.lid,
                             t == 2 ? 0 : v->lid, rndn(&r, 2) ? o->epoch : rnd(&r),
                             rndn(&r, 2) ? v->epoch : rnd(&r), t == 2);
            if (rndn(&r, 10) < 6) {
                mutate(&r, buf, &len, sizeof(buf));
            }
        } else if (k < 700 && t < 2) {
            kind = 4;
            len = forged_msg(&r, buf, sizeof(buf), v, o);
        } else if ((!P2.peer_ok || secret) && (k < 950 || t < 2)) {
            kind = 3;
            len = random_msg(&r, buf, sizeof(buf) - 64, o->lid, t == 2 ? 0 : v->lid, o->epoch,
                             v->epoch, t == 2);
        } else if (k < 950 || t < 2) {
            /* the registered peer: to the victim, or through the switch */
            kind = 5;
            fd = rp.fd;
            len = peer_data(&r, &rp, v, buf, sizeof(buf));
            if (t == 2 && rndn(&r, 2)) {
                to = &v->addr;
            }
            if (t < 2 && rndn(&r, 10) == 0) {
                /* mutated, but not in its sessions: a "newer" session of
                 * ours from our own address would make the victim drop
                 * all our later datagrams as stale (as designed) */
                uint8_t sess[8];
                memcpy(sess, buf + 32, 8);
                mutate(&r, buf, &len, sizeof(buf));
                if (len >= 40) {
                    memcpy(buf + 32, sess, 8);
                }
            }
        } else {
            /* control traffic from strangers to the switch */
            struct dn2f_wbuf w;
            unsigned ty = (unsigned)rndn(&r, 4);
            static const unsigned tys[] = { DN2F_T_KEEPALIVE, DN2F_T_STATS_REQ, DN2F_T_MCAST_JOIN,
                                            DN2F_T_HELLO };
            kind = 6;
            dn2f_wbuf_init(&w, buf, sizeof(buf));
            dn2f_put_hdr(&w, tys[ty], 0, rndn(&r, 2) ? o->lid : (uint16_t)rndn(&r, 300), 0,
                         rnd(&r), rnd(&r));
            if (tys[ty] == DN2F_T_MCAST_JOIN) {
                dn2f_put_mcast(&w, dn2_clid_to_lid((uint16_t)(DN2_CLID_MCAST_FIRST +
                                                              rndn(&r, 0x3ff))));
            } else if (tys[ty] == DN2F_T_HELLO) {
                struct dn2f_hello hl = { .guid = rnd(&r) | 1, .lid_hint = 0 };
                dn2f_put_hello(&w, &hl);
            } else if (tys[ty] == DN2F_T_STATS_REQ) {
                dn2f_put_stats_req(&w, (uint32_t)rnd(&r), 0, DN2F_STATS_REQ_MIN);
            } else {
                dn2f_put_keepalive(&w, (uint32_t)rnd(&r), rnd(&r), NULL);
            }
            len = dn2f_finish(&w);
        }
        if (len > DN2F_DGRAM_MAX) {
            len = DN2F_DGRAM_MAX;
        }
        raw_send(fd, to, buf, len);
        P2.sent++;
        P2.kind[kind]++;
        if (to == &rp.sw) {
            P2.to_switch++;
        } else {
            P2.to_board[to == &board_addr[1] || to == &rp.v[1].addr]++;
        }
        if (!(P2.sent & 255)) {
            /* let the boards read what was sent; answer for the peer */
            rp_service(&rp);
            for (i = 0; i < NFUZZSOCK; i++) {
                while (recv(fsock[i], buf, sizeof(buf), MSG_DONTWAIT) > 0) {
                }
            }
            usleep(400);
        }
        if (!(P2.sent & 4095)) {
            for (i = 0; i < 2; i++) {
                victim_drain(bs[i]);
            }
        }
        if (P2.sent >= next_check) {
            hostile_round_trips(&A, &B, &r);
            if (!sw_stats(&sw, st, sizeof(st))) {
                hang("dn2-switch (pid %d, state %s) did not answer --stats", (int)sw.pid,
                     proc_state(sw.pid));
            }
            P2.checks++;
            note("hostile%s: %" PRIu64 " datagrams in %.1f s, round trips A<->B passed (check %u)",
                 secret ? " (cluster secret)" : "", P2.sent, (qb_now_ns() - t0) / 1e9, P2.checks);
            next_check += every;
        }
    }
    P2.secs = (qb_now_ns() - t0) / 1e9;
    P2.sent_ok = secret ? !P2.peer_ok : P2.peer_ok;
    /* afterwards: the peer stays polite for a while; then the checks */
    for (t0 = now_ms(); now_ms() < t0 + 500;) {
        rp_service(&rp);
        msleep(5);
    }
    for (i = 0; i < 2; i++) {
        victim_drain(bs[i]);
        P2.rx_board[i] = qom(bs[i], "stat-link-dgrams-rx") - base_rx[i];
        P2.drops_board[i] = qom(bs[i], "stat-link-drops") - base_drops[i];
        P2.stalls_board[i] = qom(bs[i], "stat-rx-stalls") - base_stalls[i];
        P2.accepted_board[i] = qom(bs[i], "stat-rx-packets") - base_acc[i];
    }
    if (sw_stats(&sw, st, sizeof(st))) {
        P2.sw_bad = (uint64_t)stat_key(st, "bad");
        P2.sw_in = (uint64_t)stat_key(st, "datagrams_in");
    }
    P2.guard_ok = true;
    for (i = 0; i < 2; i++) {
        if (!sd_is_zero(bs[i], GUARD_OFF, GUARD_LEN, &first)) {
            P2.guard_ok = false;
            note("FAIL: board %s: forged data in the guard region at SO-DIMM 0x%" PRIx64,
                 bs[i]->name, (uint64_t)(GUARD_OFF + (uint64_t)first));
        }
    }
    hostile_round_trips(&A, &B, &r);
    if (!sw_stats(&sw, st, sizeof(st))) {
        hang("dn2-switch (pid %d, state %s) did not answer --stats after the storm",
             (int)sw.pid, proc_state(sw.pid));
    }
    if (P2.peer_ok && !secret) {
        silent_peer(&rp, &A, &B, &r);
    }
    /* the switch still does its job: A renegotiates (SMA reset) */
    {
        uint16_t lid = A.lid;
        sr_w(&A, DN2_SR_SMA, 1);
        if (!wait_link(&A, T_LINK)) {
            hang("board A: no link within %u ms after an SMA reset (the switch after the "
                 "storm)", T_LINK);
        }
        if (A.lid != lid) {
            phase_fail("board A came back with LID 0x%x, not 0x%x", A.lid, lid);
        }
        msleep(100);    /* A's new epoch reaches B in the next routing table */
        hostile_round_trips(&A, &B, &r);
    }
    P2.after_ok = true;
    note("hostile%s: sent %" PRIu64 " (A %" PRIu64 ", B %" PRIu64 ", switch %" PRIu64
         ") in %.1f s; received by A %" PRIu64 ", B %" PRIu64 "; fabric drops A %" PRIu64
         " B %" PRIu64 "; packets accepted A %" PRIu64 " B %" PRIu64 "; receive stalls A %"
         PRIu64 " B %" PRIu64 "; switch bad=%" PRIu64 " of %" PRIu64,
         secret ? " (cluster secret)" : "", P2.sent, P2.to_board[0],
         P2.to_board[1], P2.to_switch, P2.secs, P2.rx_board[0], P2.rx_board[1],
         P2.drops_board[0], P2.drops_board[1], P2.accepted_board[0], P2.accepted_board[1],
         P2.stalls_board[0], P2.stalls_board[1], P2.sw_bad, P2.sw_in);
    for (i = 0; i < 7; i++) {
        note("hostile:   %-40s %" PRIu64, kind_name[i], P2.kind[i]);
    }
    note("hostile:   peer: %" PRIu64 " DATA from the victims acknowledged, %" PRIu64
         " re-HELLOs", P2.peer_data_in, P2.peer_rehello);
    for (i = 0; i < NFUZZSOCK; i++) {
        close(fsock[i]);
    }
    idle_hook = NULL;
    g_rp = NULL;
    close(rp.fd);
}

static void phase_hostile(void)
{
    hostile_run(false);
}

static void phase_hostile_secret(void)
{
    hostile_run(true);
}

/* ================================================================== */
/* Phase 3: RVS across 4 boards through a faulty switch                */
/* ================================================================== */

#define NB3         4
#define CHUNK       (1 * MiB)   /* one RVS request */
#define RX_BASE     (64 * MiB)  /* receive slots: RX_BASE + slot * 64 MiB */
#define MAXQ        8           /* requests in flight per sender */

enum { X_PLANNED, X_ISSUED, X_DONE, X_ABORTED };

typedef struct Xfer {
    uint8_t s, d, state, gen;
    uint32_t soff, doff, len;
} Xfer;

static struct {
    uint64_t planned, moved, verified, transfers, reissued, reissued_bytes, stale, unexpected;
    uint64_t inflight_at_restart, inflight_at_reset, aborted;
    uint64_t link[NLINKP];
    uint64_t inj_drop, inj_dup, inj_reorder, sw_retx;
    unsigned rounds, restarts, resets, reset_board;
    double secs, restart_at, reset_at, relink_s, reset_relink_s;
    uint64_t chunk_mib;
    bool ran, data_ok, restart_ok, reset_ok, faults_ok;
    char lost_note[256];
} P3;

static Xfer *xf;
static size_t nxf, capxf;

static size_t xf_add(uint8_t s, uint8_t d, uint32_t soff, uint32_t doff, uint32_t len,
                     uint8_t gen)
{
    if (nxf == capxf) {
        capxf = capxf ? 2 * capxf : 1024;
        xf = realloc(xf, capxf * sizeof(*xf));
        if (!xf) {
            die("out of memory");
        }
    }
    xf[nxf] = (Xfer){ .s = s, .d = d, .state = X_PLANNED, .gen = gen, .soff = soff,
                      .doff = doff, .len = len };
    return nxf++;
}

/* The receive slot of sender s at board d. */
static uint32_t rx_slot(int d, int s)
{
    return (uint32_t)(RX_BASE + (uint64_t)(s < d ? s : s - 1) * 64 * MiB);
}

static uint64_t round_seed(unsigned round, int b)
{
    return opt_seed * 0x9e3779b97f4a7c15ull + round * 0x1000 + (uint64_t)b + 1;
}

/* Sender queues: indices into xf[], issued in order. */
typedef struct SQ {
    size_t *q;
    size_t head, n, cap;
    unsigned out;               /* requests in flight */
} SQ;

static void sq_push(SQ *q, size_t i, bool front)
{
    if (q->n == q->cap) {
        size_t *nq;
        q->cap = q->cap ? 2 * q->cap : 256;
        nq = malloc(q->cap * sizeof(*nq));
        if (!nq) {
            die("out of memory");
        }
        for (size_t k = 0; k < q->n; k++) {
            nq[k] = q->q[(q->head + k) % (q->cap / 2 ? q->cap / 2 : 1)];
        }
        free(q->q);
        q->q = nq;
        q->head = 0;
    }
    if (front) {
        q->head = (q->head + q->cap - 1) % q->cap;
        q->q[q->head] = i;
    } else {
        q->q[(q->head + q->n) % q->cap] = i;
    }
    q->n++;
}

static size_t sq_pop(SQ *q)
{
    size_t i = q->q[q->head];

    q->head = (q->head + 1) % q->cap;
    q->n--;
    return i;
}

static void xfer_verify(Board **bs, Xfer *x, const char *when)
{
    int64_t first;
    uint64_t bad = sd_compare(bs[x->d], x->doff, bs[x->s], x->soff, x->len, &first);

    if (bad) {
        phase_fail("%s: transfer %s->%s (SO-DIMM 0x%x -> 0x%x, %u bytes, generation %u): %"
                   PRIu64 " bytes wrong, the first at +0x%" PRIx64, when, bs[x->s]->name,
                   bs[x->d]->name, x->soff, x->doff, x->len, x->gen, bad, (uint64_t)first);
    }
}

/* An aborted transfer is issued again as two halves: their records (size
 * len/2) cannot be taken for the old request's (size len). */
static void reissue(SQ *sq, size_t i)
{
    Xfer x = xf[i];
    uint32_t h = x.len / 2;

    xf[i].state = X_ABORTED;
    sq_push(&sq[x.s], xf_add(x.s, x.d, x.soff + h, x.doff + h, x.len - h, x.gen + 1), true);
    sq_push(&sq[x.s], xf_add(x.s, x.d, x.soff, x.doff, h, x.gen + 1), true);
    P3.reissued++;
    P3.reissued_bytes += x.len;
}

static void link_totals(Board **bs, uint64_t *tot)
{
    unsigned i, k;

    for (k = 0; k < NLINKP; k++) {
        tot[k] = 0;
    }
    for (i = 0; i < NB3; i++) {
        for (k = 0; k < NLINKP; k++) {
            tot[k] += qom(bs[i], link_props[k]);
        }
    }
}

static void sw_fault_totals(Sw *sw)
{
    char st[4096];

    if (sw_stats(sw, st, sizeof(st))) {
        P3.inj_drop += (uint64_t)stat_key(st, "injected_drop");
        P3.inj_dup += (uint64_t)stat_key(st, "injected_dup");
        P3.inj_reorder += (uint64_t)stat_key(st, "injected_reorder");
    }
}

static void phase_rvs(void)
{
    static Sw sw;
    static Board b4[NB3];
    static SQ sq[NB3];
    static char seedarg[32];
    Board *bs[NB3];
    char props[256];
    uint16_t lids[NB3];
    uint64_t per_pair, total, t0, last_progress, perround;
    unsigned nrounds, round, i, R = (unsigned)opt_reset_board;
    bool restarted = false, was_reset = false;
    static Rec recs[256];

    P3.ran = true;
    P3.reset_board = R;
    memset(&sw, 0, sizeof(sw));
    nxf = 0;
    per_pair = opt_rvs_mib / 24;
    per_pair = per_pair < 1 ? 1 : per_pair > 32 ? 32 : per_pair;
    per_pair *= MiB;
    perround = 12 * per_pair;
    nrounds = (unsigned)((opt_rvs_mib * MiB + perround - 1) / perround);
    total = nrounds * perround;
    P3.planned = total;
    snprintf(seedarg, sizeof(seedarg), "%" PRIu64, (opt_seed & 0xffffffff) + 1);
    sw.args[sw.nargs++] = "--drop";
    sw.args[sw.nargs++] = "0.07";
    sw.args[sw.nargs++] = "--dup";
    sw.args[sw.nargs++] = "0.07";
    sw.args[sw.nargs++] = "--reorder";
    sw.args[sw.nargs++] = "0.06";
    sw.args[sw.nargs++] = "--seed";
    sw.args[sw.nargs++] = seedarg;
    psw = &sw;
    if (!sw_start(&sw, 0)) {
        phase_fail("dn2-switch did not start");
    }
    for (i = 0; i < NB3; i++) {
        char nm[2] = { (char)('A' + i), 0 };
        bs[i] = &b4[i];
        snprintf(props, sizeof(props), "switch=127.0.0.1:%d,guid=0x%x%s", sw.port, 0xd1 + i,
                 i == 1 ? ",rx-thread=on" : "");
        board_start(bs[i], nm, 512 * MiB, props);
    }
    for (i = 0; i < NB3; i++) {
        if (!wait_link(bs[i], T_LINK)) {
            hang("board %s: no link at start", bs[i]->name);
        }
        board_bringup(bs[i], PG, PG);
        lids[i] = bs[i]->lid;
        memset(&sq[i], 0, sizeof(sq[i]));
    }
    note("rvs: 4 boards (LIDs 0x%x 0x%x 0x%x 0x%x; B with rx-thread) on dn2-switch port %d "
         "with --drop 0.07 --dup 0.07 --reorder 0.06 (20 %%); %u rounds of 12 x %" PRIu64
         " MiB in 1 MiB RVS requests = %" PRIu64 " MiB; switch restart at 40 %%, system_reset "
         "of board %c at 75 %%", lids[0], lids[1], lids[2], lids[3], sw.port, nrounds,
         per_pair / MiB, total / MiB, 'A' + R);
    t0 = qb_now_ns();
    last_progress = now_ms();
    for (round = 0; round < nrounds; round++) {
        size_t first_x = nxf, k;
        uint64_t rt0 = qb_now_ns(), left;
        int s, d;

        for (s = 0; s < NB3; s++) {
            sd_fill_pattern(bs[s], 0, per_pair, round_seed(round, s));
        }
        for (k = 0; k < per_pair / CHUNK; k++) {
            for (s = 0; s < NB3; s++) {
                for (d = 1; d < NB3; d++) {
                    int dd = (s + d) % NB3;
                    sq_push(&sq[s], xf_add((uint8_t)s, (uint8_t)dd, (uint32_t)(k * CHUNK),
                                           rx_slot(dd, s) + (uint32_t)(k * CHUNK), CHUNK, 0),
                            false);
                }
            }
        }
        for (;;) {
            bool progress = false;

            /* issue */
            for (s = 0; s < NB3; s++) {
                while (sq[s].n && sq[s].out < MAXQ && fifo_room(bs[s], 0, 0)) {
                    size_t xi = sq_pop(&sq[s]);
                    Xfer *x = &xf[xi];
                    issue(bs[s], 0, dn2_req_upper(x->soff, x->doff),
                          dn2_req_lower(DN2_OP_RVS, 0, 0, dn2_lid_to_clid(bs[x->d]->lid), 0, 1,
                                        x->len));
                    x->state = X_ISSUED;
                    sq[s].out++;
                    P3.transfers++;
                }
            }
            /* completions */
            for (d = 0; d < NB3; d++) {
                unsigned n = st_take(bs[d], 0, recs, 256), j;
                for (j = 0; j < n; j++) {
                    uint16_t clid = (uint16_t)DN2_FGET(recs[j].lower, DN2_ST_CLID);
                    uint32_t size = (uint32_t)DN2_FGET(recs[j].lower, DN2_ST_SIZE);
                    uint32_t at = (uint32_t)recs[j].upper;
                    Xfer *hit = NULL, *stale = NULL;
                    for (k = first_x; k < nxf; k++) {
                        Xfer *x = &xf[k];
                        if (x->d != d || x->doff != at || x->len != size ||
                            dn2_lid_to_clid(bs[x->s]->lid) != clid) {
                            continue;
                        }
                        if (x->state == X_ISSUED) {
                            hit = x;
                            break;
                        }
                        if (x->state == X_ABORTED) {
                            stale = x;
                        }
                    }
                    if (hit && recs[j].lower == rec_lower(DN2_OP_RVS, bs[hit->s]->lid, 0, size)) {
                        xfer_verify(bs, hit, "on its status record");
                        hit->state = X_DONE;
                        sq[hit->s].out--;
                        P3.moved += hit->len;
                        progress = true;
                    } else if (stale) {
                        P3.stale++;
                    } else {
                        P3.unexpected++;
                        note("rvs: board %s: unexpected status record 0x%016" PRIx64 " 0x%"
                             PRIx64, bs[d]->name, recs[j].lower, recs[j].upper);
                    }
                }
            }
            /* the switch restart and the system reset */
            if (!restarted && P3.moved >= total * 2 / 5) {
                int port = sw.port, tries;
                uint64_t tr = qb_now_ns();
                restarted = true;
                for (s = 0; s < NB3; s++) {
                    P3.inflight_at_restart += sq[s].out;
                }
                sw_fault_totals(&sw);
                sw_stop(&sw, SIGKILL);
                P3.restart_at = (double)P3.moved / total;
                note("rvs: dn2-switch killed (SIGKILL) at %.0f %% with %" PRIu64 " requests in "
                     "flight; restarting it on port %d", 100 * P3.restart_at,
                     P3.inflight_at_restart, port);
                msleep(300);
                for (tries = 0; tries < 20 && !sw_start(&sw, port); tries++) {
                    msleep(250);
                }
                if (!sw.pid) {
                    phase_fail("dn2-switch did not restart on port %d", port);
                }
                P3.restarts++;
                for (s = 0; s < NB3; s++) {
                    if (!wait_link(bs[s], T_LINK)) {
                        hang("board %s: link not back within %u ms of the switch restart",
                             bs[s]->name, T_LINK);
                    }
                    if (bs[s]->lid != lids[s]) {
                        phase_fail("board %s came back with LID 0x%x, not 0x%x", bs[s]->name,
                                   bs[s]->lid, lids[s]);
                    }
                }
                P3.relink_s = (qb_now_ns() - tr) / 1e9;
                note("rvs: all links back %.2f s after the kill", P3.relink_s);
                last_progress = now_ms();
            }
            if (!was_reset && P3.moved >= total * 3 / 4) {
                Board *b = bs[R];
                const char *r;
                uint64_t tr = qb_now_ns();
                unsigned ab = 0;
                was_reset = true;
                P3.inflight_at_reset = 0;
                for (k = first_x; k < nxf; k++) {
                    if (xf[k].state == X_ISSUED && (xf[k].s == R || xf[k].d == R)) {
                        P3.inflight_at_reset++;
                    }
                }
                P3.reset_at = (double)P3.moved / total;
                note("rvs: QMP system_reset of board %s at %.0f %% (%" PRIu64 " of its "
                     "transfers in flight)", b->name, 100 * P3.reset_at, P3.inflight_at_reset);
                {
                    unsigned ev = b->m.reset_events;
                    r = qmp(b, "{\"execute\":\"system_reset\"}");
                    if (!r || !strstr(r, "\"return\"")) {
                        phase_fail("board %s: system_reset: %s", b->name, r ? r : "no answer");
                    }
                    if (!qmp_wait_reset(b, ev, T_CMD)) {
                        hang("board %s: no RESET event within %u ms of system_reset", b->name,
                             T_CMD);
                    }
                    vnote("rvs: board %s after the RESET event: SMA 0x%" PRIx64 ", Controller "
                          "Status 0x%" PRIx64, b->name, sr(b, DN2_SR_SMA),
                          ur(b, 0, DN2_UR_CTL_STATUS));
                }
                b->sysresets++;
                P3.resets++;
                /* what the reset aborted: in flight from or to the board */
                for (k = first_x; k < nxf; k++) {
                    if (xf[k].state == X_ISSUED && (xf[k].s == R || xf[k].d == R)) {
                        sq[xf[k].s].out--;
                        reissue(sq, k);
                        ab++;
                    }
                }
                P3.aborted += ab;
                /* the board comes up again as after a reboot */
                board_bringup(b, PG, PG);
                if (!wait_link(b, 2 * T_LINK)) {
                    hang("board %s: link not ready %u ms after system_reset and bring-up "
                         "(known defect on main: a guest reset leaves a fabric board's link "
                         "down)", b->name, 2 * T_LINK);
                }
                if (b->lid != lids[R]) {
                    phase_fail("board %s came back from system_reset with LID 0x%x, not 0x%x",
                               b->name, b->lid, lids[R]);
                }
                sd_fill_pattern(b, 0, per_pair, round_seed(round, (int)R));
                /* its SO-DIMM contents: what had arrived before the reset */
                for (k = first_x; k < nxf; k++) {
                    int64_t f1;
                    if (xf[k].state == X_DONE && xf[k].d == R &&
                        sd_compare(b, xf[k].doff, bs[xf[k].s], xf[k].soff, xf[k].len, &f1)) {
                        snprintf(P3.lost_note, sizeof(P3.lost_note), "SO-DIMM data received "
                                 "before the reset changed by it (re-issued)");
                        reissue(sq, k);
                    }
                }
                P3.reset_relink_s = (qb_now_ns() - tr) / 1e9;
                note("rvs: board %s up again (link, LID 0x%x, bring-up) %.2f s after the reset; "
                     "%u aborted transfers re-issued as halves", b->name, b->lid,
                     P3.reset_relink_s, ab);
                last_progress = now_ms();
            }
            /* done with the round? */
            left = 0;
            for (k = first_x; k < nxf; k++) {
                left += xf[k].state == X_PLANNED || xf[k].state == X_ISSUED;
            }
            if (!left) {
                break;
            }
            P3.secs = (qb_now_ns() - t0) / 1e9;
            if (progress) {
                last_progress = now_ms();
            } else {
                if (now_ms() - last_progress > T_PROGRESS) {
                    unsigned shown = 0;
                    for (k = first_x; k < nxf && shown < 8; k++) {
                        if (xf[k].state == X_ISSUED) {
                            note("  in flight: %s->%s SO-DIMM 0x%x -> 0x%x, %u bytes (gen %u)",
                                 bs[xf[k].s]->name, bs[xf[k].d]->name, xf[k].soff, xf[k].doff,
                                 xf[k].len, xf[k].gen);
                            shown++;
                        }
                    }
                    hang("rvs round %u: no transfer completed for %u ms (%" PRIu64 " of %"
                         PRIu64 " transfers left in the round)", round + 1, T_PROGRESS, left,
                         (uint64_t)(nxf - first_x));
                }
                usleep(300);
            }
        }
        /* the round: every byte again, and the sources as written */
        for (k = first_x; k < nxf; k++) {
            if (xf[k].state == X_DONE) {
                xfer_verify(bs, &xf[k], "at the end of the round");
                P3.verified += xf[k].len;
            }
        }
        for (s = 0; s < NB3; s++) {
            int64_t f1 = sd_check_pattern(bs[s], 0, per_pair, round_seed(round, s));
            if (f1 >= 0) {
                phase_fail("board %s: its source region changed at SO-DIMM 0x%" PRIx64,
                           bs[s]->name, (uint64_t)f1);
            }
        }
        P3.rounds++;
        note("rvs: round %u: %" PRIu64 " MiB verified in %.1f s (%.0f MB/s); %" PRIu64
             " MiB moved in all", round + 1, perround / MiB, (qb_now_ns() - rt0) / 1e9,
             perround / ((qb_now_ns() - rt0) / 1e3), P3.moved / MiB);
    }
    P3.secs = (qb_now_ns() - t0) / 1e9;
    for (i = 0; i < NB3; i++) {
        if (!wait_link(bs[i], T_LINK) || bs[i]->lid != lids[i]) {
            phase_fail("board %s: link or LID wrong at the end (LID 0x%x, was 0x%x)",
                       bs[i]->name, bs[i]->lid, lids[i]);
        }
    }
    link_totals(bs, P3.link);
    sw_fault_totals(&sw);
    P3.data_ok = P3.unexpected == 0 && P3.verified >= total;
    P3.restart_ok = restarted && P3.data_ok;
    P3.reset_ok = was_reset && P3.data_ok;
    P3.faults_ok = P3.inj_drop && P3.inj_dup && P3.inj_reorder && P3.link[0] && P3.link[3];
    note("rvs: %" PRIu64 " MiB moved (%" PRIu64 " transfers, %" PRIu64 " re-issued as halves, %"
         PRIu64 " stale records of aborted ones), %" PRIu64 " MiB verified in %.1f s (%.0f MB/s)",
         P3.moved / MiB, P3.transfers, P3.reissued, P3.stale, P3.verified / MiB, P3.secs,
         P3.moved / (P3.secs * 1e6));
    note("rvs: boards' link counters (sum of 4): retransmits=%" PRIu64 " timeouts=%" PRIu64
         " fast-retransmits=%" PRIu64 " duplicates=%" PRIu64 " drops=%" PRIu64 " busy=%" PRIu64
         " datagrams tx=%" PRIu64 " rx=%" PRIu64, P3.link[0], P3.link[1], P3.link[2],
         P3.link[3], P3.link[4], P3.link[5], P3.link[6], P3.link[7]);
    note("rvs: the switch injected drop=%" PRIu64 " dup=%" PRIu64 " reorder=%" PRIu64
         " (both incarnations)", P3.inj_drop, P3.inj_dup, P3.inj_reorder);
    if (P3.lost_note[0]) {
        note("rvs: note: %s", P3.lost_note);
    }
    for (i = 0; i < NB3; i++) {
        free(sq[i].q);
        memset(&sq[i], 0, sizeof(sq[i]));
    }
}

/* ================================================================== */
/* Phase 4: joins through a late switch; replaying and spoofing        */
/* strangers                                                           */
/* ================================================================== */

/*
 * Two boards reach dn2-switch (--route switch) through a relay in this
 * process: the boards' "switch" is the relay's socket L, and the switch
 * sees each board at a relay socket U_i of its own.  The relay (a thread,
 * so it keeps forwarding while this process waits for qtest answers)
 * holds every ASSIGN for a random 0.5..1.5 s (a backlogged switch: a
 * board's 100 ms HELLOs are answered late, out of order, across the
 * switch's second boundaries), delays a quarter of the DATA/ACK by up to
 * 3 ms (reordering them), and
 * watches: each board's epoch and HELLOs (a HELLO of an incarnation that
 * had joined is a link that went down: a flap), the ticket times of the
 * ASSIGNs of each join, the epochs the switch's routing tables publish,
 * the BYEs the switch sends.  It records each incarnation's join (its
 * ticketed KEEPALIVE) and first DATA datagrams.
 *
 * Rounds: a board gets an SMA reset (a new incarnation, a new epoch) and joins
 * again through the late switch; its first transfer lands in a region of
 * its peer that is then zeroed.  A replaying stranger sends the previous
 * incarnation's join and first DATA to the switch again, as that board
 * (from U_i), within the ticket's life: the table must keep the current
 * epoch and the old region must stay zero.  A spoofing stranger then sends
 * BYE and KEEPALIVE "from the switch" to both boards (with a raw socket
 * and a forged source address when this process may, else from L) with
 * epochs it cannot know, replayed signed ones of other incarnations, and
 * without the secret also BYE "unknown" with the right epochs; and DATA of
 * unknown LIDs "from" the boards to the switch.  No board may flap, with
 * the secret the switch must sign no answer to that DATA, and RVS/RVL
 * round trips both ways must stay byte-exact.  Both passes: without and
 * with the cluster secret.
 */
#define JNB         2
#define J_HOLD      4096
#define J_REC       4
#define J_RECLEN    8192
#define J_REGION    (16 * MiB)      /* first transfers of incarnations: 64 KiB apart */

typedef struct JHeld {
    uint64_t due;
    int b;
    size_t len;
    uint8_t *buf;
} JHeld;

typedef struct JRec {
    uint64_t epoch;
    uint8_t ka[256];                /* its join: the ticketed KEEPALIVE */
    size_t ka_len;
    uint64_t ka_ms;
    uint8_t data[J_REC][J_RECLEN];  /* its first DATA datagrams */
    size_t data_len[J_REC];
    unsigned ndata;
    uint8_t ctl[256];               /* a signed BYE/KEEPALIVE the switch sent it */
    size_t ctl_len;
    uint64_t region;                /* where its first transfer landed at the peer */
    bool ka_seen;                   /* it returned a ticket ... */
    bool joined;                    /* ... and the switch sent it a table: it is up */
    bool published;                 /* a table gave its LID this epoch */
} JRec;

static struct {
    pthread_t th;
    bool running;
    int stop;                       /* __atomic: the thread ends */
    pthread_mutex_t mu;
    int lfd, ufd[JNB];
    struct dn2f_addr sw_addr, b_addr[JNB];
    int l_port, b_port[JNB];
    Rng rng;
    JHeld held[J_HOLD];
    unsigned nheld;
    bool delay_assign;
    uint64_t hellos[JNB], flaps[JNB], sw_epoch, pub_epoch[JNB];
    uint16_t lid[JNB];
    uint64_t assigns, data_reordered;
    uint32_t jt[JNB][16];
    unsigned njt[JNB], joins, joins_multi;
    uint64_t byes_to_u[JNB];
    uint64_t rollbacks;             /* table entries that gave a LID back an older epoch */
    JRec cur[JNB], old[JNB];
} JR;

static struct {
    bool ran, raw, up_ok, replay_ok, spoof_ok;
    int failed_stage;                   /* -1 none, else j_stage at the failure */
    unsigned passes, rounds, resets;
    uint64_t joins, joins_multi, assigns, reordered, trips;
    uint64_t replays, rep_ka, rep_data, rep_late;
    uint64_t spoof_ctl, spoof_data, byes_unauth_secret, byes_unauth_plain, flaps;
    uint64_t auth_drops;
    double secs;
    char raw_why[160];
} JP;

static uint64_t opt_join_rounds = 10;
static unsigned opt_join_spoof_ms = 2000;

static void jr_close_join(int i)
{
    JR.joins++;
    if (JR.njt[i] >= 2) {
        JR.joins_multi++;
    }
    JR.njt[i] = 0;
}

/* A datagram of board i toward the switch. */
static void jr_from_board(int i, const uint8_t *buf, size_t len)
{
    struct dn2f_msg m;
    JRec *c = &JR.cur[i];

    if (dn2f_decode(buf, len, &m) != 0) {
        return;
    }
    switch (m.h.type) {
    case DN2F_T_HELLO:
        JR.hellos[i]++;
        if (m.h.src_epoch != c->epoch) {
            if (c->joined) {
                jr_close_join(i);
            }
            JR.old[i] = *c;             /* the previous incarnation */
            memset(c, 0, sizeof(*c));
            c->epoch = m.h.src_epoch;
        } else if (c->joined) {
            JR.flaps[i]++;              /* this incarnation had joined: its link went down */
            jr_close_join(i);
            c->joined = false;
        }
        break;
    case DN2F_T_KEEPALIVE:
        /* the last ticket it returns before it is up made its port (two
         * boards joining at once are offered one LID: one is refused) */
        if (m.u.keepalive.guid && m.h.src_epoch == c->epoch && !c->joined &&
            len <= sizeof(c->ka)) {
            memcpy(c->ka, buf, len);
            c->ka_len = len;
            c->ka_ms = now_ms();
            c->ka_seen = true;
        }
        break;
    case DN2F_T_DATA:
        if (c->ndata < J_REC && len <= J_RECLEN && m.h.src_epoch == c->epoch) {
            memcpy(c->data[c->ndata], buf, len);
            c->data_len[c->ndata++] = len;
        }
        break;
    default:
        break;
    }
}

/* A datagram of the switch toward board i: how long the relay holds it. */
static uint64_t jr_from_switch(int i, const uint8_t *buf, size_t len)
{
    struct dn2f_msg m;
    unsigned k;

    if (dn2f_decode(buf, len, &m) != 0) {
        return 0;
    }
    JR.sw_epoch = m.h.src_epoch;
    switch (m.h.type) {
    case DN2F_T_ASSIGN:
        JR.assigns++;
        JR.lid[i] = m.u.assign.lid;
        for (k = 0; k < JR.njt[i] && JR.jt[i][k] != m.u.assign.ticket.time; k++) {
        }
        if (k == JR.njt[i] && k < 16) {
            JR.jt[i][JR.njt[i]++] = m.u.assign.ticket.time;
        }
        /* 0.5..1.5 s: a join's first answer comes after 5..15 of its
         * HELLOs, whose answers span the switch's second boundaries */
        return JR.delay_assign ? (500 + rndn(&JR.rng, 1000)) * 1000000 : 0;
    case DN2F_T_ROUTES: {
        struct dn2f_iter it;
        struct dn2f_route r;
        if (JR.cur[i].ka_seen && m.h.dst_epoch == JR.cur[i].epoch) {
            JR.cur[i].joined = true;
        }
        dn2f_routes_iter(&m, &it);
        while (dn2f_routes_next_route(&it, &r)) {
            for (k = 0; k < JNB; k++) {
                if (JR.lid[k] && r.lid == JR.lid[k]) {
                    JR.pub_epoch[k] = r.epoch;
                    if (r.epoch == JR.cur[k].epoch) {
                        JR.cur[k].published = true;
                    } else if (JR.cur[k].published && JR.old[k].epoch &&
                               r.epoch == JR.old[k].epoch) {
                        JR.rollbacks++;
                    }
                }
            }
        }
        return 0;
    }
    case DN2F_T_BYE:
        JR.byes_to_u[i]++;
        /* fall through */
    case DN2F_T_KEEPALIVE:
        if (!JR.cur[i].ctl_len && len <= sizeof(JR.cur[i].ctl) && (m.h.flags & DN2F_F_MAC)) {
            memcpy(JR.cur[i].ctl, buf, len);
            JR.cur[i].ctl_len = len;
        }
        return 0;
    case DN2F_T_DATA:
    case DN2F_T_ACK:
        if (rndn(&JR.rng, 4) == 0) {
            JR.data_reordered++;
            return 1 + rndn(&JR.rng, 3000000);
        }
        return 0;
    default:
        return 0;
    }
}

static void jr_release(uint64_t t)
{
    unsigned k = 0;

    while (k < JR.nheld) {
        JHeld *h = &JR.held[k];
        if (h->due <= t) {
            (void)sendto(JR.lfd, h->buf, h->len, 0, &JR.b_addr[h->b].u.sa, JR.b_addr[h->b].len);
            free(h->buf);
            JR.held[k] = JR.held[--JR.nheld];
        } else {
            k++;
        }
    }
}

static void *jr_thread(void *arg)
{
    static uint8_t buf[DN2F_DGRAM_MAX + 64];
    (void)arg;

    while (!__atomic_load_n(&JR.stop, __ATOMIC_RELAXED)) {
        struct pollfd pf[1 + JNB];
        uint64_t t = qb_now_ns(), next = t + 5000000;
        int i, ms;

        pthread_mutex_lock(&JR.mu);
        jr_release(t);
        for (i = 0; i < (int)JR.nheld; i++) {
            if (JR.held[i].due < next) {
                next = JR.held[i].due;
            }
        }
        pthread_mutex_unlock(&JR.mu);
        ms = next > t ? (int)((next - t + 999999) / 1000000) : 0;
        pf[0].fd = JR.lfd;
        pf[0].events = POLLIN;
        for (i = 0; i < JNB; i++) {
            pf[1 + i].fd = JR.ufd[i];
            pf[1 + i].events = POLLIN;
        }
        if (poll(pf, 1 + JNB, ms) <= 0) {
            continue;
        }
        pthread_mutex_lock(&JR.mu);
        for (;;) {
            struct sockaddr_storage ss;
            socklen_t sl = sizeof(ss);
            struct dn2f_addr from;
            ssize_t n = recvfrom(JR.lfd, buf, sizeof(buf), MSG_DONTWAIT, (struct sockaddr *)&ss,
                                 &sl);
            if (n < 0) {
                break;
            }
            dn2f_addr_from_sa(&from, (struct sockaddr *)&ss, sl);
            for (i = 0; i < JNB; i++) {
                if (dn2f_addr_equal(&from, &JR.b_addr[i])) {
                    jr_from_board(i, buf, (size_t)n);
                    (void)sendto(JR.ufd[i], buf, (size_t)n, 0, &JR.sw_addr.u.sa, JR.sw_addr.len);
                    break;
                }
            }
        }
        for (i = 0; i < JNB; i++) {
            for (;;) {
                ssize_t n = recv(JR.ufd[i], buf, sizeof(buf), MSG_DONTWAIT);
                uint64_t d;
                if (n < 0) {
                    break;
                }
                d = jr_from_switch(i, buf, (size_t)n);
                if (!d || JR.nheld == J_HOLD) {
                    (void)sendto(JR.lfd, buf, (size_t)n, 0, &JR.b_addr[i].u.sa, JR.b_addr[i].len);
                } else {
                    JHeld *h = &JR.held[JR.nheld];
                    h->buf = malloc((size_t)n);
                    if (!h->buf) {
                        continue;
                    }
                    memcpy(h->buf, buf, (size_t)n);
                    h->len = (size_t)n;
                    h->b = i;
                    h->due = qb_now_ns() + d;
                    JR.nheld++;
                }
            }
        }
        pthread_mutex_unlock(&JR.mu);
    }
    return NULL;
}

static int jr_socket(int *port)
{
    struct dn2f_addr a;
    int fd;

    dn2f_addr_parse(&a, "127.0.0.1:0");
    fd = dn2f_udp_open(&a, 4 << 20);
    if (fd < 0) {
        die("UDP socket: %s", strerror(-fd));
    }
    if (port) {
        *port = dn2f_addr_port(&a);
    }
    return fd;
}

static void jr_start(int sw_port, uint64_t seed)
{
    char a[64];
    int i;

    memset(&JR, 0, sizeof(JR));
    pthread_mutex_init(&JR.mu, NULL);
    dn2f_rng_seed(&JR.rng, seed);
    snprintf(a, sizeof(a), "127.0.0.1:%d", sw_port);
    dn2f_addr_parse(&JR.sw_addr, a);
    JR.lfd = jr_socket(&JR.l_port);
    for (i = 0; i < JNB; i++) {
        JR.ufd[i] = jr_socket(NULL);
        JR.b_port[i] = free_udp_port();
        snprintf(a, sizeof(a), "127.0.0.1:%d", JR.b_port[i]);
        dn2f_addr_parse(&JR.b_addr[i], a);
    }
    JR.delay_assign = true;
    if (pthread_create(&JR.th, NULL, jr_thread, NULL) != 0) {
        die("pthread_create");
    }
    JR.running = true;
}

static void jr_stop(void)
{
    int i;

    if (!JR.running) {
        return;
    }
    __atomic_store_n(&JR.stop, 1, __ATOMIC_RELAXED);
    pthread_join(JR.th, NULL);
    JR.running = false;
    for (i = 0; i < (int)JR.nheld; i++) {
        free(JR.held[i].buf);
    }
    JR.nheld = 0;
    close(JR.lfd);
    for (i = 0; i < JNB; i++) {
        close(JR.ufd[i]);
    }
}

/* --- the strangers -------------------------------------------------- */

/* A raw IPv4 socket (root or CAP_NET_RAW): datagrams with any source. */
static int j_rawfd = -1;

static void j_raw_open(void)
{
    j_rawfd = socket(AF_INET, SOCK_RAW, IPPROTO_RAW);
    if (j_rawfd < 0) {
        snprintf(JP.raw_why, sizeof(JP.raw_why), "no raw socket (%s: needs root or "
                 "CAP_NET_RAW)", strerror(errno));
        return;
    }
    JP.raw = true;
}

/* To board i "from the switch" (127.0.0.1:L): forged source with a raw
 * socket, else from L itself. */
static void j_to_board(int i, const uint8_t *buf, size_t len)
{
    if (j_rawfd >= 0) {
        uint8_t pkt[20 + 8 + 512];
        struct sockaddr_in dst;
        size_t tot = 20 + 8 + len;
        if (len > 512) {
            return;
        }
        memset(pkt, 0, 28);
        pkt[0] = 0x45;                          /* IPv4, 20-byte header */
        pkt[2] = (uint8_t)(tot >> 8);
        pkt[3] = (uint8_t)tot;
        pkt[8] = 64;                            /* TTL */
        pkt[9] = IPPROTO_UDP;
        pkt[12] = 127, pkt[15] = 1;             /* source 127.0.0.1 */
        pkt[16] = 127, pkt[19] = 1;             /* destination 127.0.0.1 */
        pkt[20] = (uint8_t)(JR.l_port >> 8);    /* UDP source port: the "switch" */
        pkt[21] = (uint8_t)JR.l_port;
        pkt[22] = (uint8_t)(JR.b_port[i] >> 8);
        pkt[23] = (uint8_t)JR.b_port[i];
        pkt[24] = (uint8_t)((8 + len) >> 8);
        pkt[25] = (uint8_t)(8 + len);           /* checksum 0: none (IPv4) */
        memcpy(pkt + 28, buf, len);
        memset(&dst, 0, sizeof(dst));
        dst.sin_family = AF_INET;
        dst.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        (void)sendto(j_rawfd, pkt, tot, 0, (struct sockaddr *)&dst, sizeof(dst));
    } else {
        (void)sendto(JR.lfd, buf, len, 0, &JR.b_addr[i].u.sa, JR.b_addr[i].len);
    }
    JP.spoof_ctl++;
}

/* The MAC flag and 16 bytes that are no MAC (the switch does not check
 * DATA MACs; a stranger needs the flag to get past its first test). */
static size_t j_fake_mac(uint8_t *buf, size_t len, Rng *r)
{
    size_t k;

    buf[6] |= DN2F_F_MAC;
    for (k = 0; k < DN2F_MAC_LEN; k++) {
        buf[len + k] = (uint8_t)rnd(r);
    }
    len += DN2F_MAC_LEN;
    buf[12] = (uint8_t)len;
    buf[13] = (uint8_t)(len >> 8);
    buf[14] = (uint8_t)(len >> 16);
    buf[15] = (uint8_t)(len >> 24);
    return len;
}

static void j_ctl(int i, unsigned type, uint64_t src_ep, uint64_t dst_ep, uint32_t a)
{
    uint8_t buf[128];
    struct dn2f_wbuf w;
    uint16_t lid;

    pthread_mutex_lock(&JR.mu);
    lid = JR.lid[i];
    pthread_mutex_unlock(&JR.mu);
    dn2f_wbuf_init(&w, buf, sizeof(buf));
    dn2f_put_hdr(&w, type, 0, 0, lid, src_ep, dst_ep);
    if (type == DN2F_T_KEEPALIVE) {
        dn2f_put_keepalive(&w, a, 0, NULL);
    } else {
        dn2f_put_u32pair(&w, a, 0);
    }
    j_to_board(i, buf, dn2f_finish(&w));
}

/* One burst of the spoofing stranger at both boards and at the switch. */
static void j_spoof_burst(Rng *r)
{
    int i;

    for (i = 0; i < JNB; i++) {
        uint64_t me, swe;
        uint8_t buf[256], pkt[64], ctl_old[256], ctl_other[256];
        size_t ctl_old_len, ctl_other_len;
        struct dn2f_wbuf w;
        size_t len;
        uint16_t src = dn2_clid_to_lid((uint16_t)(0x300 + rndn(r, 0x100))), dst;

        pthread_mutex_lock(&JR.mu);
        me = JR.cur[i].epoch;
        swe = JR.sw_epoch;
        dst = JR.lid[1 - i];
        ctl_old_len = JR.old[i].ctl_len;
        memcpy(ctl_old, JR.old[i].ctl, ctl_old_len);
        ctl_other_len = JR.cur[1 - i].ctl_len;
        memcpy(ctl_other, JR.cur[1 - i].ctl, ctl_other_len);
        pthread_mutex_unlock(&JR.mu);
        j_ctl(i, DN2F_T_BYE, rnd(r), rnd(r), DN2F_BYE_UNKNOWN);
        j_ctl(i, DN2F_T_BYE, swe, rnd(r), DN2F_BYE_UNKNOWN);
        j_ctl(i, DN2F_T_BYE, rnd(r), me, DN2F_BYE_SHUTDOWN);
        j_ctl(i, DN2F_T_KEEPALIVE, rnd(r), me, 1);
        j_ctl(i, DN2F_T_KEEPALIVE, swe, rnd(r), 1);
        /* on the path without the secret (it reads the epochs): checked by
         * the board with a KEEPALIVE; with the secret: no MAC, dropped */
        j_ctl(i, DN2F_T_BYE, swe, me, DN2F_BYE_UNKNOWN);
        /* signed control datagrams of other incarnations, replayed */
        if (ctl_old_len) {
            j_to_board(i, ctl_old, ctl_old_len);
        }
        if (ctl_other_len) {
            j_to_board(i, ctl_other, ctl_other_len);
        }
        /* DATA of an unknown LID "from" board i (as the switch sees it) */
        dn2f_wbuf_init(&w, buf, sizeof(buf) - DN2F_MAC_LEN);
        dn2f_put_hdr(&w, DN2F_T_DATA, 0, src, dst, rnd(r) | 1, rnd(r) | 1);
        dn2f_hdr_set_sessions(&w, 7, 0);
        {
            struct dn2_hdr h;
            uint64_t w0;
            unsigned k;
            memset(&h, 0, sizeof(h));
            h.type = DN2_OP_RVS;
            h.pgid = PG2;
            h.dlid = dst;
            w0 = dn2_hdr0_encode(&h);
            memset(pkt, 0, sizeof(pkt));
            for (k = 0; k < 8; k++) {
                pkt[k] = (uint8_t)(w0 >> (8 * k));
            }
        }
        dn2f_put_rec(&w, DN2F_REC_UNICAST, 0, 0, 0, 0, NULL, NULL, NULL, pkt, 16);
        len = dn2f_finish(&w);
        if (use_secret) {
            len = j_fake_mac(buf, len, r);
        }
        (void)sendto(JR.ufd[i], buf, len, 0, &JR.sw_addr.u.sa, JR.sw_addr.len);
        JP.spoof_data++;
    }
}

/* --- the passes ----------------------------------------------------- */

static uint64_t j_region_next;
static int j_stage;                     /* 0 joins and round trips, 1 replays, 2 spoofs */

/* The switch's table gives board i's LID its current epoch, which is not
 * not_epoch (the incarnation before a reset). */
static bool j_published(int i, uint64_t not_epoch, unsigned ms)
{
    uint64_t end = now_ms() + ms;

    for (;;) {
        bool ok;
        pthread_mutex_lock(&JR.mu);
        ok = JR.lid[i] && JR.cur[i].epoch && JR.cur[i].epoch != not_epoch &&
             JR.pub_epoch[i] == JR.cur[i].epoch;
        pthread_mutex_unlock(&JR.mu);
        if (ok) {
            return true;
        }
        if (now_ms() > end) {
            return false;
        }
        idle();
        msleep(5);
    }
}

/* An incarnation's first transfer: 4 KiB RVS into a region of the peer
 * of its own, zeroed afterwards (a replay of it must not write it again). */
static void j_first_transfer(Board *b, Board *peer, int i)
{
    uint8_t data[4096];
    char what[96];
    uint64_t reg = J_REGION + (j_region_next % 128) * 64 * KiB;

    fill_bytes(data, sizeof(data), 0xf1257000 + j_region_next++);
    snprintf(what, sizeof(what), "join: the first RVS of board %s's incarnation", b->name);
    known_good(b, DN2_OP_RVS, b, peer, reg, reg, data, sizeof(data), what);
    sd_zero(peer, reg, sizeof(data));
    pthread_mutex_lock(&JR.mu);
    JR.cur[i].region = reg;
    pthread_mutex_unlock(&JR.mu);
}

static void j_round_trips(Board *a, Board *b)
{
    round_trip(a, b, 1 * MiB, 2 * MiB, 3 * MiB, 4 * MiB, 64 * KiB);
    round_trip(b, a, 5 * MiB, 6 * MiB, 7 * MiB, 8 * MiB, 64 * KiB);
    JP.trips += 2;
}

/* The replaying stranger: the previous incarnation of board i joins again
 * and sends its first DATA again, as board i (from U_i). */
static void j_replay(int i, Board *b, Board *peer)
{
    static JRec o;
    uint64_t age, pub, rollbacks;
    unsigned k, n;
    int64_t first;

    pthread_mutex_lock(&JR.mu);
    o = JR.old[i];
    pthread_mutex_unlock(&JR.mu);
    if (!o.ka_len || !o.ndata || !o.region) {
        phase_fail("join: nothing recorded of board %s's previous incarnation (join %zu bytes, "
                   "%u DATA, region 0x%" PRIx64 ")", b->name, o.ka_len, o.ndata, o.region);
    }
    age = now_ms() - o.ka_ms;
    if (age > 9000) {
        JP.rep_late++;
        note("join: board %s's previous join is %.1f s old: the switch refuses the ticket "
             "anyway (a slow round)", b->name, age / 1e3);
    }
    JP.replays++;
    for (k = 0; k < 3; k++) {
        (void)sendto(JR.ufd[i], o.ka, o.ka_len, 0, &JR.sw_addr.u.sa, JR.sw_addr.len);
        JP.rep_ka++;
        msleep(30);
    }
    msleep(100);                /* a new table would be out by now */
    for (k = 0; k < 2; k++) {
        for (n = 0; n < o.ndata; n++) {
            (void)sendto(JR.ufd[i], o.data[n], o.data_len[n], 0, &JR.sw_addr.u.sa,
                         JR.sw_addr.len);
            JP.rep_data++;
        }
        msleep(50);
    }
    msleep(200);
    pthread_mutex_lock(&JR.mu);
    pub = JR.pub_epoch[i];
    rollbacks = JR.rollbacks;
    pthread_mutex_unlock(&JR.mu);
    if (rollbacks) {
        phase_fail("join: the switch published board %s's previous epoch 0x%016" PRIx64
                   " again after its replayed join (%" PRIu64 " table entries)", b->name,
                   o.epoch, rollbacks);
    }
    if (!sd_is_zero(peer, o.region, 4096, &first)) {
        phase_fail("join: the replayed first DATA of board %s's previous incarnation wrote "
                   "board %s's SO-DIMM again (0x%" PRIx64 " + 0x%" PRIx64 ")", b->name,
                   peer->name, o.region, (uint64_t)first);
    }
    vnote("join: replayed board %s's previous join (%.1f s old) and %u DATA: table epoch "
          "0x%016" PRIx64 ", nothing written", b->name, age / 1e3, o.ndata, pub);
}

static void j_check_flaps(const char *when)
{
    uint64_t f[JNB];

    pthread_mutex_lock(&JR.mu);
    f[0] = JR.flaps[0];
    f[1] = JR.flaps[1];
    pthread_mutex_unlock(&JR.mu);
    if (f[0] || f[1]) {
        phase_fail("join: %s: board links went down and joined again (A %" PRIu64 ", B %"
                   PRIu64 " times)", when, f[0], f[1]);
    }
}

static void join_pass(bool secret)
{
    static Sw sw;
    static Board A, B;
    Board *bs[JNB] = { &A, &B };
    char props[256];
    Rng r;
    uint64_t k, t0 = qb_now_ns(), byes0[JNB], byes1[JNB];
    uint64_t rep_ka0 = JP.rep_ka, rep_data0 = JP.rep_data, ctl0 = JP.spoof_ctl;
    uint64_t data0 = JP.spoof_data;
    int i;

    use_secret = secret;
    j_stage = 0;
    memset(&sw, 0, sizeof(sw));
    sw.args[sw.nargs++] = "--route";
    sw.args[sw.nargs++] = "switch";
    psw = &sw;
    if (!sw_start(&sw, 0)) {
        phase_fail("dn2-switch did not start");
    }
    dn2f_rng_seed(&r, opt_seed ^ 0x6a6f696eull ^ (secret ? 0x5ec : 0));
    jr_start(sw.port, opt_seed ^ 0x72656c6179ull ^ (secret ? 1 : 0));
    for (i = 0; i < JNB; i++) {
        snprintf(props, sizeof(props), "switch=127.0.0.1:%d,local=127.0.0.1:%d,guid=0x%x",
                 JR.l_port, JR.b_port[i], 0xd1 + i);
        board_start(bs[i], i ? "B" : "A", 256 * MiB, props);
        bs[i]->udp_port = JR.b_port[i];
    }
    for (i = 0; i < JNB; i++) {
        if (!wait_link(bs[i], T_LINK)) {
            hang("board %s: no link through the late switch at start", bs[i]->name);
        }
        board_bringup(bs[i], PG, PG);
        if (!j_published(i, 0, T_LINK)) {
            phase_fail("join: board %s's epoch never published", bs[i]->name);
        }
    }
    note("join%s: boards A (LID 0x%x) and B (LID 0x%x) through a relay that holds ASSIGNs "
         "0.5-1.5 s (dn2-switch port %d, --route switch); spoofing %s",
         secret ? " (cluster secret)" : "", A.lid, B.lid, sw.port,
         JP.raw ? "with a raw socket (forged source 127.0.0.1:L)" : "from the relay's socket");
    j_first_transfer(&A, &B, 0);
    j_first_transfer(&B, &A, 1);
    j_round_trips(&A, &B);
    for (k = 0; k < opt_join_rounds; k++) {
        Board *b = bs[k % 2], *peer = bs[1 - k % 2];
        int bi = (int)(k % 2);
        uint16_t lid = b->lid;
        uint64_t e_prev, end;

        j_stage = 0;
        pthread_mutex_lock(&JR.mu);
        e_prev = JR.cur[bi].epoch;
        pthread_mutex_unlock(&JR.mu);
        /* an SMA reset: the port renegotiates, a new incarnation (epoch) */
        sr_w(b, DN2_SR_SMA, 1);
        JP.resets++;
        if (!j_published(bi, e_prev, 2 * T_LINK) || !wait_link(b, T_LINK)) {
            hang("join: board %s did not join again through the late switch after its reset",
                 b->name);
        }
        if (b->lid != lid) {
            phase_fail("board %s came back with LID 0x%x, not 0x%x", b->name, b->lid, lid);
        }
        j_first_transfer(b, peer, bi);
        j_stage = 1;
        j_replay(bi, b, peer);
        j_stage = 2;
        pthread_mutex_lock(&JR.mu);
        for (i = 0; i < JNB; i++) {
            byes0[i] = JR.byes_to_u[i];
        }
        pthread_mutex_unlock(&JR.mu);
        end = now_ms() + opt_join_spoof_ms;
        while (now_ms() < end) {
            j_spoof_burst(&r);
            usleep(2000);
        }
        msleep(150);            /* a board's check of a BYE takes up to 100 ms */
        pthread_mutex_lock(&JR.mu);
        for (i = 0; i < JNB; i++) {
            byes1[i] = JR.byes_to_u[i] - byes0[i];
        }
        pthread_mutex_unlock(&JR.mu);
        if (secret) {
            JP.byes_unauth_secret += byes1[0] + byes1[1];
            if (byes1[0] + byes1[1]) {
                phase_fail("join: with the secret the switch signed %" PRIu64 " BYEs to "
                           "unauthenticated DATA", byes1[0] + byes1[1]);
            }
        } else {
            JP.byes_unauth_plain += byes1[0] + byes1[1];
        }
        j_check_flaps("after the spoofing stranger");
        j_stage = 0;
        j_round_trips(&A, &B);
        JP.rounds++;
    }
    j_check_flaps("at the end");
    pthread_mutex_lock(&JR.mu);
    for (i = 0; i < JNB; i++) {
        if (JR.cur[i].joined) {
            jr_close_join(i);
            JR.cur[i].joined = false;
        }
    }
    JP.joins += JR.joins;
    JP.joins_multi += JR.joins_multi;
    JP.assigns += JR.assigns;
    JP.reordered += JR.data_reordered;
    JP.flaps += JR.flaps[0] + JR.flaps[1];
    pthread_mutex_unlock(&JR.mu);
    for (i = 0; i < JNB; i++) {
        JP.auth_drops += qom(bs[i], "stat-link-auth-drops");
    }
    JP.secs += (qb_now_ns() - t0) / 1e9;
    JP.passes++;
    note("join%s: %u joins (%u with ASSIGNs of >= 2 switch seconds), %" PRIu64 " ASSIGNs, %"
         PRIu64 " DATA/ACK reordered; replayed %" PRIu64 " join and %" PRIu64 " DATA datagrams; "
         "spoofed %" PRIu64 " BYE/KEEPALIVE, %" PRIu64 " DATA at the switch; no flap", secret ?
         " (cluster secret)" : "", JR.joins, JR.joins_multi, JR.assigns, JR.data_reordered,
         JP.rep_ka - rep_ka0, JP.rep_data - rep_data0, JP.spoof_ctl - ctl0,
         JP.spoof_data - data0);
}

static void phase_join(void)
{
    static jmp_buf outer;
    static bool failed;
    static int pass, stage;

    memcpy(outer, phase_env, sizeof(jmp_buf));
    failed = false;
    stage = 0;
    JP.ran = true;
    j_raw_open();
    if (!JP.raw) {
        note("join: %s: the spoofed BYE/KEEPALIVE come from the relay's own socket at the "
             "switch's address, not from a forged source", JP.raw_why);
    }
    for (pass = 0; pass < 2 && !failed; pass++) {
        if (!setjmp(phase_env)) {
            join_pass(pass == 1);
        } else {
            failed = true;
            stage = j_stage;
        }
        jr_stop();
        phase_cleanup();
        use_secret = false;
    }
    if (j_rawfd >= 0) {
        close(j_rawfd);
        j_rawfd = -1;
    }
    /* a failure fails its own property; the others were not all checked */
    JP.up_ok = JP.replay_ok = JP.spoof_ok = !failed;
    JP.failed_stage = failed ? stage : -1;
    memcpy(phase_env, outer, sizeof(jmp_buf));
    if (failed) {
        longjmp(phase_env, 1);
    }
}

/* ================================================================== */
/* main                                                                */
/* ================================================================== */

static void run_phase(const char *name, void (*fn)(void))
{
    phase_name = name;
    phase_why[0] = 0;
    foreign_records = 0;
    in_phase = true;
    if (!setjmp(phase_env)) {
        fn();
    }
    in_phase = false;
    idle_hook = NULL;
    phase_cleanup();
    use_secret = false;
}

static void usage(void)
{
    fprintf(stderr,
            "usage: dn2-soak --qemu BIN --switch BIN --fw DIR [--quick] [--seed S]\n"
            "                [--phases mmio,hostile,secret,rvs,join] [--mmio-ops N] [--datagrams N]\n"
            "                [--rvs-mib N] [--reset-board 0..3] [--join-rounds N]\n"
            "                [--join-spoof-ms N] [--keep] [--verbose]\n");
    exit(2);
}

int main(int argc, char **argv)
{
    const char *phases = "mmio,hostile,secret,rvs,join";
    bool quick = false, seeded = false;
    int i;
    unsigned nplan = 0;
    bool do_mmio, do_hostile, do_secret, do_rvs, do_join;

    setvbuf(stdout, NULL, _IOLBF, 0);
    t_start = qb_now_ns();
    fw_dir = getenv("DN2_FIRMWARE_DIR");
    for (i = 1; i < argc; i++) {
        const char *a = argv[i];
        bool has = i + 1 < argc;
        if (!strcmp(a, "--qemu") && has) {
            qemu_bin = argv[++i];
        } else if (!strcmp(a, "--switch") && has) {
            switch_bin = argv[++i];
        } else if (!strcmp(a, "--fw") && has) {
            fw_dir = argv[++i];
        } else if (!strcmp(a, "--seed") && has) {
            opt_seed = strtoull(argv[++i], NULL, 0);
            seeded = true;
        } else if (!strcmp(a, "--quick")) {
            quick = true;
        } else if (!strcmp(a, "--phases") && has) {
            phases = argv[++i];
        } else if (!strcmp(a, "--mmio-ops") && has) {
            opt_mmio_ops = strtoull(argv[++i], NULL, 0);
        } else if (!strcmp(a, "--datagrams") && has) {
            opt_datagrams = strtoull(argv[++i], NULL, 0);
        } else if (!strcmp(a, "--rvs-mib") && has) {
            opt_rvs_mib = strtoull(argv[++i], NULL, 0);
        } else if (!strcmp(a, "--join-rounds") && has) {
            opt_join_rounds = strtoull(argv[++i], NULL, 0);
        } else if (!strcmp(a, "--join-spoof-ms") && has) {
            opt_join_spoof_ms = (unsigned)strtoul(argv[++i], NULL, 0);
        } else if (!strcmp(a, "--reset-board") && has) {
            opt_reset_board = atoi(argv[++i]) & 3;
        } else if (!strcmp(a, "--keep")) {
            keep_tmp = true;
        } else if (!strcmp(a, "--verbose")) {
            verbose = true;
        } else {
            usage();
        }
    }
    if (quick) {
        /* unless given explicitly after --quick... they are given before:
         * --quick only lowers the defaults */
        if (opt_mmio_ops == 1000000) {
            opt_mmio_ops = 100000;
        }
        if (opt_datagrams == 1000000) {
            opt_datagrams = 100000;
        }
        if (opt_rvs_mib == 1024) {
            opt_rvs_mib = 64;
        }
        if (opt_join_rounds == 10) {
            opt_join_rounds = 4;
        }
        if (opt_join_spoof_ms == 2000) {
            opt_join_spoof_ms = 500;
        }
    }
    if (!qemu_bin || !switch_bin || !fw_dir) {
        usage();
    }
    /* absolute: the QEMUs run in directories of their own (core files) */
    {
        static char q[PATH_MAX], sw[PATH_MAX], fw[PATH_MAX];
        if (!realpath(qemu_bin, q) || access(q, X_OK)) {
            die("--qemu %s: not an executable", qemu_bin);
        }
        if (!realpath(switch_bin, sw) || access(sw, X_OK)) {
            die("--switch %s: not an executable", switch_bin);
        }
        if (!realpath(fw_dir, fw)) {
            die("--fw %s: %s", fw_dir, strerror(errno));
        }
        qemu_bin = q;
        switch_bin = sw;
        fw_dir = fw;
    }
    if (!seeded) {
        opt_seed = dn2f_random_u64() & 0xffffffffffffull;
    }
    do_mmio = strstr(phases, "mmio") != NULL;
    do_hostile = strstr(phases, "hostile") != NULL;
    do_secret = strstr(phases, "secret") != NULL;
    do_rvs = strstr(phases, "rvs") != NULL;
    do_join = strstr(phases, "join") != NULL;
    nplan = (do_mmio ? 2 : 0) + (do_hostile ? 4 : 0) + (do_secret ? 1 : 0) + (do_rvs ? 4 : 0) +
            (do_join ? 3 : 0) + 2;

    /* in scripts/soak.sh's own directory when it gives one */
    snprintf(tmpdir, sizeof(tmpdir), "%s/dn2-soak-XXXXXX",
             getenv("DN2_SOAK_TMP") && *getenv("DN2_SOAK_TMP") ? getenv("DN2_SOAK_TMP") :
             access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp");
    if (!mkdtemp(tmpdir)) {
        die("mkdtemp: %s", strerror(errno));
    }
    atexit(cleanup);
    {
        /* a cluster secret for the pass that uses one (0600, as the switch wants) */
        int fd;
        FILE *f;
        snprintf(secret_file, sizeof(secret_file), "%s/cluster-secret", tmpdir);
        fd = open(secret_file, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        f = fd >= 0 ? fdopen(fd, "w") : NULL;
        if (!f) {
            die("%s: %s", secret_file, strerror(errno));
        }
        fprintf(f, "soak-%016" PRIx64 "%016" PRIx64 "\n", dn2f_random_u64(), dn2f_random_u64());
        fclose(f);
    }
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    signal(SIGHUP, on_signal);
    signal(SIGPIPE, SIG_IGN);

    printf("TAP version 13\n");
    tap_plan((int)nplan);
    note("dn2-soak %s seed=%" PRIu64 " (reproduce: scripts/soak.sh%s --seed %" PRIu64 ")",
         quick ? "quick" : "full", opt_seed, quick ? " --quick" : "", opt_seed);
    note("qemu=%s switch=%s tmp=%s", qemu_bin, switch_bin, tmpdir);

    if (do_mmio) {
        run_phase("mmio", phase_mmio);
        tap_result(P1.ops_ok, "mmio: %" PRIu64 " random MMIO operations on 3 boards (2 on a switch, 1 "
            "in loopback; %" PRIu64 " doorbells, %" PRIu64 " Controller Resets, %" PRIu64
            " SMA resets) in %.1f s; %u crashed or hung boards (%u board sets)", P1.ops,
            P1.doorbells, P1.ctl_resets, P1.sma_resets, P1.secs, P1.fuzz_failures,
            P1.segments);
        tap_result(P1.checks_ok, "mmio: %" PRIu64 " checks passed, %u failed: every board still "
            "answers; after a Controller Reset and bring-up, and after a Controller Reset of a "
            "board back-pressuring its peer (%u rings filled), RVS and RVL round trips are "
            "byte-exact", P1.checks, P1.check_failures, bp_seen);
    }
    if (do_hostile) {
        run_phase("hostile", phase_hostile);
        tap_result(P2.sent_ok, "hostile: %" PRIu64 " hostile datagrams to 2 boards' UDP ports and the "
            "switch's, %" PRIu64 " of them from a peer that joined the switch (%u round-trip "
            "checks in between)%s", P2.sent, P2.kind[5], P2.checks,
            P2.ran && !P2.peer_ok ? "; the hostile peer could NOT join (wire format?)" : "");
        tap_result(P2.guard_ok, "hostile: forged DATA (another board's LID and epochs from a "
            "stranger's socket) wrote nothing");
        tap_result(P2.after_ok, "hostile: afterwards RVS and RVL round trips both ways, the switch "
            "answers --stats, an SMA reset re-links with the same LID");
        tap_result(P2.silent_ok, "hostile: a joined peer that asks for data and acknowledges nothing "
            "holds no board hostage: known-good round trips done in %" PRIu64 " ms, its "
            "answers abandoned after %" PRIu64 " ms (rc-timeout-ms %" PRIu64 ", %" PRIu64
            " abandoned)", P2.silent_ms, P2.abandon_ms, P2.rc_timeout_ms, P2.rc_abandoned);
    }
    if (do_secret) {
        run_phase("secret", phase_hostile_secret);
        P2p = &P2v[1];
        tap_result(P2.sent_ok && P2.guard_ok && P2.after_ok, "hostile, cluster secret: %" PRIu64
            " datagrams from strangers without the secret: the hostile peer %s (switch: %s), "
            "forged DATA wrote nothing, round trips and an SMA re-link work", P2.sent,
            P2.ran && !P2.peer_ok ? "could not join" : "JOINED",
            P2.bye_reason < 0 ? "no BYE" : dn2f_bye_name((unsigned)P2.bye_reason));
        P2p = &P2v[0];
    }
    if (do_rvs) {
        run_phase("rvs", phase_rvs);
        tap_result(P3.data_ok, "rvs: %" PRIu64 " MiB of RVS across 4 boards through a switch with 20 %% "
            "drop+dup+reorder, every byte verified (%" PRIu64 " MiB checked; %" PRIu64
            " unexpected records)", P3.moved / MiB, P3.verified / MiB, P3.unexpected);
        tap_result(P3.restart_ok, "rvs: dn2-switch killed and restarted on the same port mid-transfer "
            "(%u restart, %" PRIu64 " requests in flight): links back with the same LIDs, "
            "nothing lost", P3.restarts, P3.inflight_at_restart);
        tap_result(P3.reset_ok, "rvs: system_reset of board %c mid-transfer (%u reset, %" PRIu64
            " transfers aborted and re-issued): bring-up again, final state byte-exact",
            'A' + P3.reset_board, P3.resets, P3.aborted);
        tap_result(P3.faults_ok, "rvs: faults took effect: switch injected %" PRIu64 " drops, %" PRIu64
            " duplicates, %" PRIu64 " reorders; boards retransmitted %" PRIu64 " packets and "
            "dropped %" PRIu64 " duplicates", P3.inj_drop, P3.inj_dup, P3.inj_reorder, P3.link[0],
            P3.link[3]);
    }
    if (do_join) {
        run_phase("join", phase_join);
        tap_result(JP.up_ok, "join: %" PRIu64 " joins (%u SMA resets: new incarnations; without and "
            "with the cluster "
            "secret) through a switch whose ASSIGNs came 0.5-1.5 s late and out of order (%"
            PRIu64 " ASSIGNs; %" PRIu64 " joins answered with tickets of >= 2 switch seconds), "
            "%" PRIu64 " DATA/ACK reordered: every board up and authenticated, %" PRIu64
            " RVS/RVL round trips byte-exact", JP.joins, JP.resets, JP.assigns, JP.joins_multi,
            JP.reordered, JP.trips);
        tap_result(JP.replay_ok, "join: a replaying stranger sent the joins of %" PRIu64 " earlier "
            "incarnations again (%" PRIu64 " datagrams, as those boards, within the ticket's "
            "life) and their first DATA (%" PRIu64 " datagrams): no table gave a board an older "
            "epoch, nothing old was written", JP.replays, JP.rep_ka, JP.rep_data);
        tap_result(JP.spoof_ok, "join: a spoofing stranger (%s) sent %" PRIu64 " BYE/KEEPALIVE at the "
            "boards and %" PRIu64 " DATA of unknown LIDs at the switch: no link went down; "
            "with the secret the switch signed %" PRIu64 " answers (without it %" PRIu64
            " BYEs, ignored by the boards)", JP.raw ? "raw socket, forged source" :
            "no raw socket: from the relay", JP.spoof_ctl, JP.spoof_data,
            JP.byes_unauth_secret, JP.byes_unauth_plain);
    }
    tap_result(n_crashes == 0, "no crash: %u (QEMU and dn2-switch exit statuses, logs free of "
        "Assertion/Segmentation/sanitizer lines)%s%s", n_crashes, n_crashes ? ": " : "",
        crash_notes);
    tap_result(n_hangs == 0, "no hang: %u (every qtest/QMP answer and every wait within its "
        "timeout)%s%s", n_hangs, n_hangs ? ": " : "", hang_notes);
    printf("# ---------------------------------------------------------------- summary\n");
    printf("# seed %" PRIu64 " (%s run; reproduce: scripts/soak.sh%s --seed %" PRIu64 ")\n",
           opt_seed, quick ? "quick" : "full", quick ? " --quick" : "", opt_seed);
    if (P1.ran) {
        printf("# mmio      %" PRIu64 " random MMIO operations (%" PRIu64 " doorbells) on 3 boards"
               " in %.1f s (%.0f/s); %" PRIu64 " checks passed, %u failed; %u board sets\n",
               P1.ops, P1.doorbells, P1.secs, P1.secs > 0 ? P1.ops / P1.secs : 0, P1.checks,
               P1.check_failures, P1.segments);
    }
    if (P2.ran) {
        printf("# hostile   %" PRIu64 " datagrams sent (A %" PRIu64 ", B %" PRIu64 ", switch %"
               PRIu64 ") in %.1f s; received by the boards %" PRIu64 " + %" PRIu64
               "; fabric drops %" PRIu64 " + %" PRIu64 "; peer packets accepted %" PRIu64
               " + %" PRIu64 "; switch 'bad' %" PRIu64 "\n", P2.sent, P2.to_board[0],
               P2.to_board[1], P2.to_switch, P2.secs, P2.rx_board[0], P2.rx_board[1],
               P2.drops_board[0], P2.drops_board[1], P2.accepted_board[0],
               P2.accepted_board[1], P2.sw_bad);
    }
    if (P2v[1].ran) {
        printf("# secret    %" PRIu64 " datagrams from strangers with a cluster secret configured "
               "in %.1f s; the hostile peer %s; fabric drops %" PRIu64 " + %" PRIu64 "\n",
               P2v[1].sent, P2v[1].secs, P2v[1].peer_ok ? "JOINED" : "was refused",
               P2v[1].drops_board[0], P2v[1].drops_board[1]);
    }
    if (P3.ran) {
        printf("# rvs       %" PRIu64 " MiB moved (each transfer compared on its status record), %"
               PRIu64 " MiB compared again at the end of the rounds, in %.1f s (%.0f MB/s) "
               "through 20 %% faults; %" PRIu64 " transfers (%" PRIu64 " re-issued)\n",
               P3.moved / MiB, P3.verified / MiB, P3.secs,
               P3.secs > 0 ? P3.moved / (P3.secs * 1e6) : 0, P3.transfers, P3.reissued);
        printf("# links     retransmissions %" PRIu64 " (timeouts %" PRIu64 ", fast %" PRIu64
               "), duplicates dropped %" PRIu64 ", drops %" PRIu64 ", busy %" PRIu64
               " (stat-link-*, 4 boards); switch injected drop %" PRIu64 " dup %" PRIu64
               " reorder %" PRIu64 "\n", P3.link[0], P3.link[1], P3.link[2], P3.link[3],
               P3.link[4], P3.link[5], P3.inj_drop, P3.inj_dup, P3.inj_reorder);
    }
    if (JP.ran) {
        printf("# join      %u passes in %.1f s: %" PRIu64 " joins (%" PRIu64 " with tickets of "
               ">= 2 switch seconds) after %u SMA resets, %" PRIu64 " round trips; replayed %"
               PRIu64 " joins (%" PRIu64 " + %" PRIu64 " datagrams); spoofed %" PRIu64
               " BYE/KEEPALIVE (%s) + %" PRIu64 " DATA; flaps %" PRIu64 "; board auth drops %"
               PRIu64 "\n", JP.passes, JP.secs, JP.joins, JP.joins_multi, JP.resets, JP.trips,
               JP.replays, JP.rep_ka, JP.rep_data, JP.spoof_ctl, JP.raw ? "raw socket" :
               JP.raw_why, JP.spoof_data, JP.flaps, JP.auth_drops);
    }
    printf("# resets    %" PRIu64 " Controller Resets and %" PRIu64 " SMA resets (mmio), %" PRIu64
           " checks' Controller Resets, %u system_reset, %u switch restart\n",
           P1.ctl_resets, P1.sma_resets, P1.checks * 3, P3.resets, P3.restarts);
    printf("# result    crashes %u, hangs %u, failed properties %d of %d; elapsed %.1f s; %" PRIu64
           " qtest commands\n", n_crashes, n_hangs, tap_failures(), tap_count(), elapsed_s(),
           total_qtest_cmds);
    return tap_exit_code();
}
