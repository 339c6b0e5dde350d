/*
 * dn2-soak: a bounded soak / fuzz run of DIMMnet-2 boards (docs/reliability.md,
 * scripts/soak.sh).
 *
 * It starts QEMUs with -accel qtest and drives them through the host
 * tools' qtest client (tools/common/qtest-client.c, shared with
 * dn2-bench-qtest and dn2-scale): the qtest text protocol on the UNIX socket
 * each QEMU connects to (commands pipelined: a batch of commands is written
 * at once and the answers read back together) and QMP on a second socket
 * (qom-get of the board's counters, system_reset).  No guest OS.
 *
 *   dn2-soak --qemu BIN --switch BIN --fw DIR [--quick] [--seed S]
 *            [--phases mmio,hostile,secret,rvs,join] [--mmio-ops N] [--datagrams N]
 *            [--rvs-mib N] [--reset-board N] [--join-rounds N] [--join-spoof-ms N]
 *            [--keep] [--verbose]
 *
 * Five phases, each with QEMUs and a switch of its own and each in a file
 * of its own (soak-mmio.c, soak-hostile.c for hostile and secret,
 * soak-rvs.c, soak-join.c; what they share: soak.h); a failed phase is
 * reported with the boards' state and the run goes on with the next:
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
 *   secret   the hostile phase again with a cluster secret the hostile
 *            side lacks.
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
#include "soak.h"
#include "../../tests/tap/dn2-tap.h"


/* ================================================================== */
/* Basics                                                              */
/* ================================================================== */

static const char *qemu_bin, *switch_bin, *fw_dir;

static char tmpdir[128];

/* The cluster secret of the run (a file in the temporary directory), and
 * whether the boards and switch being started use it. */
static char secret_file[300];

bool use_secret;

bool keep_tmp, verbose;

static uint64_t t_start;

uint64_t now_ms(void)
{
    return qb_now_ns() / 1000000;
}

static double elapsed_s(void)
{
    return (qb_now_ns() - t_start) / 1e9;
}

void msleep(unsigned ms)
{
    usleep(ms * 1000);
}


/* "# " lines: diagnostics in the TAP stream. */

void note(const char *fmt, ...)
{
    va_list ap;

    printf("# [%7.1fs] ", elapsed_s());
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
    fflush(stdout);
}

void vnote(const char *fmt, ...)
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

void die(const char *fmt, ...)
{
    va_list ap;

    fprintf(stderr, "dn2-soak: ");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n");
    exit(2);
}

uint64_t rnd(Rng *r)
{
    return dn2f_rng_next(r);
}


/* [0, n) */
uint64_t rndn(Rng *r, uint64_t n)
{
    return n ? rnd(r) % n : 0;
}

void fill_bytes(uint8_t *p, size_t n, uint64_t seed)
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
jmp_buf phase_env;

static bool in_phase;

int diag;

static const char *phase_name = "-";

static char phase_why[512];

static void dump_state(void);

void phase_fail(const char *fmt, ...)
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

void hang(const char *fmt, ...)
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
void (*idle_hook)(void);

void idle(void)
{
    if (idle_hook) {
        idle_hook();
    }
}

bool sw_start(Sw *s, int port)
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
void sw_stop(Sw *s, int sig)
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
bool sw_stats(Sw *s, char *out, size_t cap)
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

int64_t stat_key(const char *text, const char *key)
{
    char pat[64];
    const char *p;

    snprintf(pat, sizeof(pat), " %s=", key);
    p = strstr(text, pat);
    return p ? strtoll(p + strlen(pat), NULL, 10) : -1;
}

int free_udp_port(void)
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

static Board *pboards[MAXB];    /* the boards of the running phase */

static int npboards;

Sw *psw;                 /* ... and its switch */

static uint64_t total_qtest_cmds;

const char *proc_state(pid_t pid)
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

void qq(Board *b, const char *fmt, ...)
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
bool q_flush(Board *b, unsigned timeout_ms)
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

uint64_t rdq(Board *b, uint64_t addr)
{
    return qc_answer_u64(q1(b, "readq 0x%" PRIx64, addr));
}

void wrq(Board *b, uint64_t addr, uint64_t v)
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

uint64_t ur_addr(Board *b, int wid, uint32_t off)
{
    return dn2_bio_ur_addr(&b->io, wid, off);
}

uint64_t sr_addr(Board *b, uint32_t off)
{
    return dn2_bio_sr_addr(&b->io, off);
}

uint64_t ur(Board *b, int wid, uint32_t off)
{
    return dn2_bio_ur(&b->io, wid, off);
}

void ur_w(Board *b, int wid, uint32_t off, uint64_t v)
{
    dn2_bio_ur_w(&b->io, wid, off, v);
}

uint64_t sr(Board *b, uint32_t off)
{
    return dn2_bio_sr(&b->io, off);
}

void sr_w(Board *b, uint32_t off, uint64_t v)
{
    dn2_bio_sr_w(&b->io, off, v);
}


/* Read len bytes of guest memory (one `read` command). */
static bool q_read(Board *b, uint64_t addr, uint8_t *out, size_t len)
{
    return qc_answer_bytes(q1(b, "read 0x%" PRIx64 " 0x%zx", addr, len), out, len);
}

void qq_write(Board *b, uint64_t addr, const uint8_t *data, size_t len)
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
const char *qmp(Board *b, const char *json)
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
bool qmp_wait_reset(Board *b, unsigned seen_before, unsigned ms)
{
    int e = qc_qmp_wait_reset(&b->m, seen_before, ms);

    if (e == QC_CLOSED) {
        board_died(b, "(QMP connection closed)");
    }
    return e == QC_OK;
}

uint64_t qom(Board *b, const char *prop)
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
bool qom_try(Board *b, const char *prop, uint64_t *v)
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
void board_start(Board *b, const char *name, uint64_t memsz, const char *devprops)
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

void sd_zero(Board *b, uint64_t g, size_t len)
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
void sd_fill_pattern(Board *b, uint64_t g, uint64_t len, uint64_t seed)
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
int64_t sd_check_pattern(Board *b, uint64_t g, uint64_t len, uint64_t seed)
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
uint64_t sd_compare(Board *d, uint64_t gd, Board *s, uint64_t gs, uint64_t len,
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

bool sd_is_zero(Board *b, uint64_t g, uint64_t len, int64_t *first)
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


void board_dump(Board *b)
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

bool wait_link(Board *b, unsigned ms)
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
void board_bringup(Board *b, int pgid0, int pgid1)
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


/* Take every record in WID wid's status ring (at most max); frees them. */
unsigned st_take(Board *b, int wid, Rec *out, unsigned max)
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

uint64_t rec_lower(unsigned otype, uint16_t slid, unsigned swid, uint32_t size)
{
    return dn2_req_lower(otype, 0, 0, dn2_lid_to_clid(slid), swid, 1, size);
}


/* Room in the Request FIFO (bits 0 and 2 clear), within ms. */
bool fifo_room(Board *b, int wid, unsigned ms)
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

void issue(Board *b, int wid, uint64_t upper, uint64_t lower)
{
    qq(b, "writeq 0x%" PRIx64 " 0x%" PRIx64, ur_addr(b, wid, DN2_UR_CMD0_UPPER), upper);
    qq(b, "writeq 0x%" PRIx64 " 0x%" PRIx64, ur_addr(b, wid, DN2_UR_CMD0_LOWER), lower);
    q_flush(b, T_CMD);
}

static uint64_t known_good_seq;     /* patterns of the known-good transfers */

uint64_t last_rvl_ms;        /* how long the last round trip's RVL took */


/*
 * A known-good round trip: RVS src -> dst of len bytes (src's WID 0 soff
 * to dst's WID 0 doff, eflag: a record at dst), then an RVL by dst from
 * src (src's roff lands at dst's loff: a record at dst again).  Data is
 * put in place through the SO-DIMM files, the landing areas zeroed first;
 * records that are not ours are counted and skipped.  Fails the phase on a
 * timeout (a hang) or a wrong byte.
 */
unsigned foreign_records;

const char *check_ctx = "";     /* what came before, for a report */

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
uint64_t known_good(Board *by, unsigned op, Board *s, Board *d, uint64_t soff,
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

void round_trip(Board *s, Board *d, uint64_t soff, uint64_t doff, uint64_t roff,
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
void phase_cleanup(void)
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

uint64_t opt_mmio_ops = 1000000, opt_datagrams = 1000000, opt_rvs_mib = 1024;

uint64_t opt_seed;

int opt_reset_board = 3;

uint64_t opt_join_rounds = 10;

unsigned opt_join_spoof_ms = 2000;


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
