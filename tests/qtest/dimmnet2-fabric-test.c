/*
 * qtest: several DIMMnet-2 boards, each in its own QEMU, on one UDP fabric
 * through a real dn2-switch (docs/fabric.md, docs/device-model.md "The port
 * and the network primitives").
 *
 * Every case starts its own switch (`--listen 127.0.0.1:0 --ready-file F`,
 * killed and reaped at the end; PR_SET_PDEATHSIG kills it if this process
 * dies) and two or three QEMUs with -device dimmnet2,switch=...  `-accel
 * qtest` drives the link with QEMU_CLOCK_REALTIME, so the boards talk to
 * each other while this program polls them.  Every wait is bounded in wall
 * clock time; after one wait has timed out, later waits of the same case
 * give up at once so a broken build cannot take minutes.
 *
 * The SO-DIMMs are file-backed (memory-backend-file, share=on) and mapped
 * here as well: source data is put straight into the sender's file and the
 * receiver's file is compared byte for byte (interleave: choice #10).
 *
 * Single-QEMU loopback tests of each primitive are in dimmnet2-remote-test;
 * this file is about what needs several boards: LIDs, cross-board data and
 * status records, multicast, protection, back-pressure, faults, a switch
 * restart and hostile datagrams.
 *
 * Environment: DN2_FIRMWARE_DIR (-L for QEMU), DN2_SWITCH_BINARY (default:
 * build/fabric/dn2-switch found above this executable or the cwd),
 * DN2_SWITCH_VERBOSE=1 (do not pass --quiet to the switch).
 *
 * The helpers shared with the other qtests (checks, registers, SO-DIMM
 * files) are in dimmnet2-qtest-util.c.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include "libqtest.h"
#include "qobject/qdict.h"
#include "qobject/qlist.h"
#include "qobject/qstring.h"
#include "qemu/bswap.h"
#include "qemu/atomic.h"
#include "dimmnet2-qtest-util.h"
/* The fabric wire format (fabric/dn2fab.h), for the hostile peer. */
#include "../../hw/dimmnet2/fabric/dn2fab.h"

#define PG          0x5a        /* the process group of every test process */
#define ST_OFF      0x7000u     /* status ring in LLCM: the last 4 KiB */
#define ST_BYTES    4096u
#define ST_SIZE_REG dn2_status_size_reg(ST_BYTES)
#define T_SHORT     5000        /* ms: a packet or a small primitive */
#define T_LONG      60000       /* ms: megabytes, with faults */
#define DN2Q_LHS_TIMEOUT_MS 1000 /* the device's silent-LHS-sender timeout */

/* ------------------------------------------------------------------ */
/* Bounded waits                                                       */
/* ------------------------------------------------------------------ */

/* After a wait timed out, the other waits of the case fail fast. */
static bool g_dead;

static int64_t now_ms(void)
{
    return g_get_monotonic_time() / 1000;
}

/* Deadline for a wait of `ms` (immediate once a wait has failed). */
static int64_t deadline(int ms)
{
    return now_ms() + (g_dead ? 0 : ms);
}

static void wait_failed(const char *fmt, ...) G_GNUC_PRINTF(1, 2);
static void wait_failed(const char *fmt, ...)
{
    va_list ap;
    g_autofree char *msg = NULL;

    va_start(ap, fmt);
    msg = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    g_test_message("FAIL timed out waiting for %s", msg);
    g_test_fail();
    g_dead = true;
}

/* ------------------------------------------------------------------ */
/* The switch                                                          */
/* ------------------------------------------------------------------ */

typedef struct Switch {
    GPid pid;
    int port;
    char *dir;
} Switch;

static char *switch_path;

static char *find_switch(void)
{
    const char *e = g_getenv("DN2_SWITCH_BINARY");
    g_autofree char *exe = g_file_read_link("/proc/self/exe", NULL);
    g_autofree char *cwd = g_get_current_dir();
    const char *starts[2] = { exe, cwd };
    int i;

    if (e && *e) {
        return g_strdup(e);
    }
    /* The executable lives in build/qemu/qemu-<v>/build/tests/qtest/ of
     * the project's build directory, which holds fabric/dn2-switch. */
    for (i = 0; i < 2; i++) {
        g_autofree char *dir = starts[i] ? g_path_get_dirname(starts[i]) : NULL;
        int up;
        if (i == 1 && starts[i]) {
            g_free(dir);
            dir = g_strdup(starts[i]);
        }
        for (up = 0; dir && up < 10; up++) {
            g_autofree char *c1 = g_build_filename(dir, "fabric", "dn2-switch", NULL);
            g_autofree char *c2 = g_build_filename(dir, "build", "fabric", "dn2-switch",
                                                   NULL);
            char *parent;
            if (g_file_test(c1, G_FILE_TEST_IS_EXECUTABLE)) {
                return g_steal_pointer(&c1);
            }
            if (g_file_test(c2, G_FILE_TEST_IS_EXECUTABLE)) {
                return g_steal_pointer(&c2);
            }
            parent = g_path_get_dirname(dir);
            if (!strcmp(parent, dir)) {
                g_free(parent);
                break;
            }
            g_free(dir);
            dir = parent;
        }
    }
    return NULL;
}

static void child_setup(gpointer data)
{
    /* The switch must not outlive an aborted test. */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
}

/* Start the switch on 127.0.0.1:port (0 = any) with extra arguments
 * (NULL-terminated).  Waits for its ready file. */
static bool switch_start(Switch *sw, int port, const char *const *extra)
{
    g_autoptr(GPtrArray) argv = g_ptr_array_new_with_free_func(g_free);
    g_autofree char *ready = NULL;
    GError *err = NULL;
    int64_t end;
    int i;

    if (!sw->dir) {
        sw->dir = g_dir_make_tmp("dn2-fabric-XXXXXX", &err);
        g_assert_no_error(err);
    }
    ready = g_build_filename(sw->dir, "ready", NULL);
    unlink(ready);
    g_ptr_array_add(argv, g_strdup(switch_path));
    g_ptr_array_add(argv, g_strdup("--listen"));
    g_ptr_array_add(argv, g_strdup_printf("127.0.0.1:%d", port));
    g_ptr_array_add(argv, g_strdup("--ready-file"));
    g_ptr_array_add(argv, g_strdup(ready));
    if (!g_getenv("DN2_SWITCH_VERBOSE")) {
        g_ptr_array_add(argv, g_strdup("--quiet"));
    }
    for (i = 0; extra && extra[i]; i++) {
        g_ptr_array_add(argv, g_strdup(extra[i]));
    }
    g_ptr_array_add(argv, NULL);
    if (!g_spawn_async(NULL, (char **)argv->pdata, NULL,
                       G_SPAWN_DO_NOT_REAP_CHILD | G_SPAWN_STDOUT_TO_DEV_NULL,
                       child_setup, NULL, &sw->pid, &err)) {
        g_test_message("FAIL cannot start %s: %s", switch_path, err->message);
        g_error_free(err);
        g_test_fail();
        sw->pid = 0;
        return false;
    }
    end = now_ms() + 10000;
    while (now_ms() < end) {
        g_autofree char *txt = NULL;
        int st;
        if (g_file_get_contents(ready, &txt, NULL, NULL) && atoi(txt) > 0) {
            sw->port = atoi(txt);
            return true;
        }
        if (waitpid(sw->pid, &st, WNOHANG) == sw->pid) {
            g_test_message("FAIL dn2-switch exited at start (status 0x%x)", st);
            g_test_fail();
            g_spawn_close_pid(sw->pid);
            sw->pid = 0;
            return false;
        }
        g_usleep(5000);
    }
    g_test_message("FAIL dn2-switch did not write its ready file");
    g_test_fail();
    return false;
}

/* Stop the switch with sig (SIGTERM: it says BYE; SIGKILL: it vanishes)
 * and reap it. */
static void switch_stop(Switch *sw, int sig)
{
    int st;
    int64_t end = now_ms() + 3000;

    if (!sw->pid) {
        return;
    }
    kill(sw->pid, sig);
    while (sig != SIGKILL && now_ms() < end) {
        if (waitpid(sw->pid, &st, WNOHANG) == sw->pid) {
            goto reaped;
        }
        g_usleep(2000);
    }
    kill(sw->pid, SIGKILL);
    waitpid(sw->pid, &st, 0);
reaped:
    g_spawn_close_pid(sw->pid);
    sw->pid = 0;
}

static void switch_free(Switch *sw)
{
    switch_stop(sw, SIGTERM);
    if (sw->dir) {
        g_autofree char *ready = g_build_filename(sw->dir, "ready", NULL);
        unlink(ready);
        rmdir(sw->dir);
        g_free(sw->dir);
        sw->dir = NULL;
    }
}

/* `dn2-switch --stats`: the value of key=N in its summary line, or -1. */
static int64_t switch_stat(Switch *sw, const char *key)
{
    g_autofree char *addr = g_strdup_printf("127.0.0.1:%d", sw->port);
    g_autofree char *out = NULL;
    g_autofree char *pat = g_strdup_printf(" %s=", key);
    const char *argv[] = { switch_path, "--stats", addr, NULL };
    const char *p;
    int status = 0;

    if (!g_spawn_sync(NULL, (char **)argv, NULL, G_SPAWN_STDERR_TO_DEV_NULL, NULL, NULL,
                      &out, NULL, &status, NULL) || !out) {
        return -1;
    }
    p = strstr(out, pat);
    return p ? g_ascii_strtoll(p + strlen(pat), NULL, 10) : -1;
}

/* ------------------------------------------------------------------ */
/* Boards                                                              */
/* ------------------------------------------------------------------ */

typedef struct Board {
    DN2 d;                      /* the window and our view of its status rings */
    char name;
    DN2SdFile mem;              /* its SO-DIMMs, mapped here too */
    uint64_t guid;
    int local_port;
    uint16_t lid;
    int64_t vclock;             /* virtual-time cases: the board's clock */
} Board;

/* Extra -device properties for every board a case starts (",prop=v"). */
static const char *g_board_props = "";
/* When set, every board writes its delivery trace to DIR/<name>.pcap. */
static const char *g_board_pcap_dir;

static void board_start(Board *b, char name, int sw_port, uint64_t guid, int local_port,
                        uint64_t memsize)
{
    g_autofree char *local = local_port ?
        g_strdup_printf(",local=127.0.0.1:%d", local_port) : g_strdup("");
    /* Board B receives in a thread of its own (rx-thread=on), the others
     * in the main loop (the default): every case crossing boards exercises
     * both receive paths. */
    g_autofree char *pcap = g_board_pcap_dir ?
        g_strdup_printf(",pcap=%s/%c.pcap", g_board_pcap_dir, name) : g_strdup("");
    g_autofree char *props = g_strdup_printf(",switch=127.0.0.1:%d,guid=0x%" PRIx64 "%s%s%s%s",
                                             sw_port, guid, local,
                                             name == 'B' ? ",rx-thread=on" : "",
                                             g_board_props, pcap);

    memset(b, 0, sizeof(*b));
    b->name = name;
    b->guid = guid;
    b->local_port = local_port;
    dn2q_sdfile_create(&b->mem, memsize, "dn2-fabric-sodimm-XXXXXX", true);
    dn2q_open(&b->d, dn2q_start_memdev(&b->mem, props), DN2_DEFAULT_BASE0);
    /* QEMU has the file open and mapped now: nothing to leak if we abort */
    unlink(b->mem.path);
}

static void board_stop(Board *b)
{
    if (b->d.qts) {
        qtest_quit(b->d.qts);
        b->d.qts = NULL;
    }
    dn2q_sdfile_destroy(&b->mem);
}

static uint64_t qom_u64(Board *b, const char *prop)
{
    g_autofree char *who = g_strdup_printf("board %c: qom-get %s", b->name, prop);

    return dn2q_qom_get_u64(b->d.qts, "/machine/peripheral/dn", prop, who);
}

/* Names of the device's QOM properties. */
static GPtrArray *qom_props(Board *b)
{
    GPtrArray *names = g_ptr_array_new_with_free_func(g_free);
    QDict *rsp = qtest_qmp(b->d.qts, "{'execute': 'qom-list', 'arguments': "
                           "{'path': '/machine/peripheral/dn'}}");
    QList *l = qdict_haskey(rsp, "return") ? qdict_get_qlist(rsp, "return") : NULL;
    QListEntry *e;

    if (l) {
        QLIST_FOREACH_ENTRY(l, e) {
            QDict *d = qobject_to(QDict, qlist_entry_obj(e));
            if (d && qdict_haskey(d, "name")) {
                g_ptr_array_add(names, g_strdup(qdict_get_str(d, "name")));
            }
        }
    }
    qobject_unref(rsp);
    return names;
}

/* SO-DIMM bytes through the backing file (choice #10 interleave). */
static bool sd_expect(Board *b, int wid, uint64_t off, const void *want, size_t len,
                      const char *what)
{
    g_autofree char *who = g_strdup_printf("board %c ", b->name);

    return dn2q_sdfile_expect(&b->mem, wid, off, want, len, who, what);
}

static bool sd_expect_zero(Board *b, int wid, uint64_t off, size_t len, const char *what)
{
    g_autofree uint8_t *z = g_malloc0(len ? len : 1);

    return sd_expect(b, wid, off, z, len, what);
}

/* Wait until the receiver's SO-DIMM holds `want` (no status record). */
static bool sd_wait(Board *b, int wid, uint64_t off, const void *want, size_t len,
                    int ms, const char *what)
{
    g_autofree uint8_t *got = g_malloc(len);
    int64_t end = deadline(ms);

    do {
        dn2q_sdfile_get(&b->mem, wid, off, got, len);
        if (!memcmp(got, want, len)) {
            return true;
        }
        g_usleep(500);
    } while (now_ms() < end);
    wait_failed("%s: data at board %c WID %d SO-DIMM 0x%" PRIx64, what, b->name, wid,
                off);
    return sd_expect(b, wid, off, want, len, what);
}

/* Poll a User Register until (value & mask) == want. */
static bool poll_ur(Board *b, int wid, uint32_t off, uint64_t mask, uint64_t want, int ms,
                    const char *what)
{
    int64_t end = deadline(ms);
    uint64_t v;

    do {
        v = dn2q_ur_rd(&b->d, wid, off);
        if ((v & mask) == want) {
            return true;
        }
    } while (now_ms() < end);
    wait_failed("%s: board %c UR%d+0x%03x = 0x%" PRIx64 ", wanted (v & 0x%" PRIx64
                ") == 0x%" PRIx64, what, b->name, wid, off, v, mask, want);
    return false;
}

static bool wait_pc(Board *b, int wid, int fam, unsigned target, int ms, const char *what)
{
    return poll_ur(b, wid, DN2_UR_PRIM_COUNTER, dn2q_pc_mask(fam), dn2q_pc_value(fam, target),
                   ms, what);
}

static bool wait_qom(Board *b, const char *prop, uint64_t want_at_least, int ms,
                     const char *what)
{
    int64_t end = deadline(ms);
    uint64_t v;

    do {
        v = qom_u64(b, prop);
        if (v >= want_at_least) {
            return true;
        }
        g_usleep(1000);
    } while (now_ms() < end);
    wait_failed("%s: board %c %s = %" PRIu64 ", wanted >= %" PRIu64, what, b->name, prop,
                v, want_at_least);
    return false;
}

/* SMA LID register: link ready and a LID. */
static bool board_wait_link(Board *b, int ms)
{
    int64_t end = deadline(ms);
    uint64_t v;

    do {
        v = dn2q_sr_rd(&b->d, DN2_SR_SMA);
        if (dn2_sma_link(v) == DN2_SMA_LINK_READY) {
            b->lid = (uint16_t)(v & DN2_SMA_LID_MASK);
            return true;
        }
        g_usleep(1000);
    } while (now_ms() < end);
    wait_failed("board %c link ready (SMA LID register = 0x%" PRIx64 ")", b->name, v);
    return false;
}

static bool poll_sma_down(Board *b, int ms)
{
    int64_t end = deadline(ms);
    uint64_t v;

    do {
        v = dn2q_sr_rd(&b->d, DN2_SR_SMA);
        if (dn2_sma_link(v) != DN2_SMA_LINK_READY) {
            return true;
        }
        g_usleep(500);
    } while (now_ms() < end);
    wait_failed("board %c link going down (SMA LID register = 0x%" PRIx64 ")", b->name, v);
    return false;
}

/* Configure a board for the network: SO-DIMMs, MTU 4096, PGIDs, status
 * rings.  pgid1 < 0: WID 1 has no process (choice #32). */
static void board_net_init(Board *b, int pgid0, int pgid1)
{
    const struct dn2_bringup c = {
        .cap_reg = dn2_sdimm_capacity_reg(256 * MiB_),
        .mtu_reg = dn2_mtu_reg(4096),
        .pgid0 = pgid0, .pgid1 = pgid1,
        .st_wids = (1u << DN2_NUM_WID) - 1, .st_init = ST_OFF, .st_size_reg = ST_SIZE_REG,
    };

    dn2q_bringup(&b->d, &c);
    poll_ur(b, 0, DN2_UR_CTL_STATUS, DN2_CS_SDIMM_READY, DN2_CS_SDIMM_READY, T_SHORT,
            "SO-DIMM ready");
}

/* Requests ------------------------------------------------------------ */

static void issue(Board *b, int wid, int cmd, uint64_t upper, uint64_t lower,
                  bool has_ex, uint64_t ex)
{
    poll_ur(b, wid, DN2_UR_CTL_STATUS, DN2_CS_REQ_PENDING | DN2_CS_FIFO_AFULL, 0, T_LONG,
            "room in the Request FIFO");
    if (has_ex) {
        dn2q_doorbell_ex(&b->d, wid, cmd, upper, ex, lower);
    } else {
        dn2q_doorbell(&b->d, wid, cmd, upper, lower);
    }
}

/* A remote request to board LID dlid. */
static void rreq(Board *b, int wid, int cmd, unsigned otype, unsigned dtype, unsigned iter,
                 uint16_t dlid, int dwid, int eflag, uint32_t arg, uint32_t src,
                 uint32_t dst)
{
    issue(b, wid, cmd, dn2_req_upper(src, dst),
          dn2_req_lower(otype, dtype, iter, dn2_lid_to_clid(dlid), dwid, eflag, arg),
          false, 0);
}

static void rreq_ex(Board *b, int wid, int cmd, unsigned otype, unsigned dtype,
                    unsigned iter, uint16_t dlid, int dwid, int eflag, uint32_t arg,
                    uint32_t src, uint32_t dst, uint64_t ex)
{
    issue(b, wid, cmd, dn2_req_upper(src, dst),
          dn2_req_lower(otype, dtype, iter, dn2_lid_to_clid(dlid), dwid, eflag, arg),
          true, ex);
}

/* BOTF of the packet image already in Write Window n of the WID. */
static void botf(Board *b, int wid, unsigned n, unsigned size)
{
    issue(b, wid, 0, 0, dn2_botf_lower(n, size), false, 0);
}

/* Build a DIMMnet-2 packet image: header lines, then data.  Returns bytes. */
static size_t mkpkt(uint8_t *buf, const struct dn2_hdr *h0, const void *data, size_t dlen)
{
    struct dn2_hdr h = *h0;
    unsigned lines = dn2_hdr_lines(h.type);
    size_t bytes = lines * DN2_LINE + dlen;

    if (!h.size) {
        h.size = dn2_pkt_size_field(bytes);
    }
    stq_le_p(buf, dn2_hdr0_encode(&h));
    stq_le_p(buf + 8, dn2_hdr1_encode(h.w1_lo, h.w1_hi));
    if (lines > 2) {
        stq_le_p(buf + 16, dn2_hdr1_encode(h.total, h.stride));
    }
    if (lines > 3) {
        stq_le_p(buf + 24, h.ex);
    }
    if (dlen) {
        memcpy(buf + lines * DN2_LINE, data, dlen);
    }
    return bytes;
}

/* The header of an RVS packet with eflag to dlid, landing at dst (2nd DW
 * = {dst, dst}); the caller adds flags. */
static struct dn2_hdr rvs_hdr(uint16_t dlid, uint32_t dst)
{
    struct dn2_hdr h;

    memset(&h, 0, sizeof(h));
    h.type = DN2_OP_RVS;
    h.dlid = dlid;
    h.eflag = 1;
    h.w1_lo = h.w1_hi = dst;
    return h;
}

/* BOTF of a packet image built in Write Window n of the WID. */
static void botf_send(Board *b, int wid, unsigned n, const struct dn2_hdr *h,
                      const void *data, size_t dlen)
{
    uint8_t img[DN2_BOTF_MAX];
    size_t len = mkpkt(img, h, data, dlen);

    qtest_memwrite(b->d.qts, dn2q_ww_addr(&b->d, wid, n * DN2_WIN_SIZE), img, len);
    botf(b, wid, n, len);
}

/* Status rings ---------------------------------------------------------- */

/* Take the next receive-status record (waits up to ms). */
static bool st_pop(Board *b, int wid, uint64_t *lower, uint64_t *upper, int ms,
                   const char *what)
{
    int64_t end = deadline(ms);
    uint32_t head = b->d.st[wid].head;
    uint64_t tail;

    do {
        tail = dn2q_ur_rd(&b->d, wid, DN2_UR_STATUS_ADDR);
        if (tail != head) {
            dn2q_status_take(&b->d, wid, lower, upper);
            return true;
        }
    } while (now_ms() < end);
    wait_failed("%s: a status record on board %c WID %d (tail 0x%" PRIx64 ")", what,
                b->name, wid, tail);
    return false;
}

static void st_expect(Board *b, int wid, unsigned otype, unsigned dtype, unsigned iter,
                      uint16_t slid, unsigned swid, uint32_t size, uint32_t first, int ms,
                      const char *what)
{
    uint64_t lo, up;

    if (!st_pop(b, wid, &lo, &up, ms, what)) {
        return;
    }
    EXPECT_HEX(lo, dn2_req_lower(otype, dtype, iter, dn2_lid_to_clid(slid), swid, 1, size),
               "%s: board %c WID %d status Lower {OTYPE 0x%x DTYPE %u Iter %u CLID 0x%x "
               "SWID %u eflag Size %u}", what, b->name, wid, otype, dtype, iter,
               dn2_lid_to_clid(slid), swid, size);
    EXPECT_HEX(up, dn2_req_upper(first, 0), "%s: board %c WID %d status Upper "
               "{first address 0x%x}", what, b->name, wid, first);
}

static void st_expect_empty(Board *b, int wid, const char *what)
{
    EXPECT_HEX(dn2q_ur_rd(&b->d, wid, DN2_UR_STATUS_ADDR), b->d.st[wid].head,
               "%s: board %c WID %d status ring empty (tail == head)", what, b->name, wid);
}

/* ------------------------------------------------------------------ */
/* A fabric: one switch and n boards                                   */
/* ------------------------------------------------------------------ */

#define MAXB 3

typedef struct Fab {
    Switch sw;
    Board b[MAXB];
    int n;
} Fab;

static uint64_t guid_of(int i)
{
    return 0xd1aa0e7200000000ULL | ((uint64_t)getpid() << 8) | (uint64_t)(i + 1);
}

/* Returns false (the case should end) when the fabric did not come up. */
static bool fab_up(Fab *f, int n, const char *const *sw_args, uint64_t memsize,
                   const int *local_ports)
{
    int i;

    g_dead = false;             /* a new case */
    memset(f, 0, sizeof(*f));
    f->n = n;
    if (!switch_start(&f->sw, 0, sw_args)) {
        return false;
    }
    for (i = 0; i < n; i++) {
        /* one at a time: LIDs come in start order from an empty switch */
        board_start(&f->b[i], 'A' + i, f->sw.port, guid_of(i),
                    local_ports ? local_ports[i] : 0, memsize);
        if (!board_wait_link(&f->b[i], T_SHORT)) {
            return false;
        }
        board_net_init(&f->b[i], PG, PG);
    }
    return true;
}

/* The same with two boards, A and B. */
static bool fab_up_ab(Fab *f, const char *const *sw_args, uint64_t memsize,
                      const int *local_ports, Board **a, Board **b)
{
    bool up = fab_up(f, 2, sw_args, memsize, local_ports);

    *a = &f->b[0];
    *b = &f->b[1];
    return up;
}

static void fab_down(Fab *f)
{
    int i;

    for (i = 0; i < f->n; i++) {
        board_stop(&f->b[i]);
    }
    switch_free(&f->sw);
}

/* ------------------------------------------------------------------ */
/* Link-up: LIDs, link state, SMA software reset                       */
/* ------------------------------------------------------------------ */

static void test_link_up(void)
{
    Fab f;
    int i, j;
    uint16_t lid_a;
    uint8_t data[3000];

    if (!fab_up(&f, 3, NULL, 32 * MiB_, NULL)) {
        goto out;
    }
    for (i = 0; i < 3; i++) {
        uint64_t v = dn2q_sr_rd(&f.b[i].d, DN2_SR_SMA);
        EXPECT_HEX(dn2_sma_link(v), DN2_SMA_LINK_READY, "board %c SMA [17:16]",
                   f.b[i].name);
        EXPECT_HEX((v & ~(DN2_SMA_LID_MASK | DN2_SMA_LINK_MASK)), 0, "board %c SMA [63:18]", f.b[i].name);
        EXPECT_TRUE(dn2_lid_assignable(f.b[i].lid), "board %c LID 0x%x is assignable",
                    f.b[i].name, f.b[i].lid);
        for (j = 0; j < i; j++) {
            EXPECT_TRUE(f.b[i].lid != f.b[j].lid, "boards %c and %c have distinct LIDs "
                        "(0x%x)", f.b[i].name, f.b[j].name, f.b[i].lid);
        }
    }

    /* SMA software reset of A: the link renegotiates, the switch gives the
     * GUID its LID again, and the others accept A's new incarnation. */
    lid_a = f.b[0].lid;
    dn2q_sr_wr(&f.b[0].d, DN2_SR_SMA, 1);
    if (board_wait_link(&f.b[0], T_SHORT)) {
        EXPECT_HEX(f.b[0].lid, lid_a, "board A keeps its LID after an SMA reset");
    }
    /* A's new epoch reaches the others in the next routing table; what
     * they queued for A's old incarnation would be dropped (peer reset) */
    g_usleep(100 * 1000);
    dn2q_pattern(data, sizeof(data), 1);
    dn2q_sdfile_put(&f.b[1].mem, 0, 0x1000, data, sizeof(data));
    rreq(&f.b[1], 0, 0, DN2_OP_RVS, 0, 0, f.b[0].lid, 0, 1, sizeof(data), 0x1000, 0x2000);
    st_expect(&f.b[0], 0, DN2_OP_RVS, 0, 0, f.b[1].lid, 0, sizeof(data), 0x2000, T_SHORT,
              "RVS B->A after A's SMA reset");
    sd_expect(&f.b[0], 0, 0x2000, data, sizeof(data), "RVS B->A after A's SMA reset");
    rreq(&f.b[0], 0, 0, DN2_OP_RVS, 0, 0, f.b[2].lid, 0, 1, sizeof(data), 0x2000, 0x3000);
    st_expect(&f.b[2], 0, DN2_OP_RVS, 0, 0, f.b[0].lid, 0, sizeof(data), 0x3000, T_SHORT,
              "RVS A->C after A's SMA reset");
    sd_expect(&f.b[2], 0, 0x3000, data, sizeof(data), "RVS A->C after A's SMA reset");
out:
    fab_down(&f);
}

/* ------------------------------------------------------------------ */
/* RVS family across boards                                            */
/* ------------------------------------------------------------------ */

static bool rvs_up(Fab *f, Board **A, Board **B, uint8_t *src)
{
    if (!fab_up_ab(f, NULL, 32 * MiB_, NULL, A, B)) {
        return false;
    }
    dn2q_pattern(src, 64 * KiB_, 2);
    dn2q_sdfile_put(&(*A)->mem, 0, 0x10000, src, 64 * KiB_);
    dn2q_sdfile_put(&(*A)->mem, 1, 0x10000, src, 64 * KiB_);
    return true;
}

/* After each case: neither board reports an error. */
static void rvs_no_error(Board *A, Board *B)
{
    EXPECT_HEX(dn2q_cs(&A->d, 0) & (DN2_CS_REQ_ERROR | DN2_CS_RX_OVF | DN2_CS_RX_ERR_MASK), 0,
               "sender Controller Status: no error");
    EXPECT_HEX(dn2q_cs(&B->d, 0) & (DN2_CS_REQ_ERROR | DN2_CS_RX_OVF | DN2_CS_RX_ERR_MASK), 0,
               "receiver Controller Status: no error");
}

static void rvs_contiguous(Board *A, Board *B, const uint8_t *src)
{
    unsigned pkts0;
    const char *w;

    /* RVS, contiguous, 3 packets at MTU 4096, odd offsets and size */
    w = "RVS 10000 bytes A->B";
    pkts0 = dn2q_ur_rd(&B->d, 0, DN2_UR_PKT_COUNTER);
    rreq(A, 0, 0, DN2_OP_RVS, 0, 0, B->lid, 0, 1, 10000, 0x10005, 0x200003);
    st_expect(B, 0, DN2_OP_RVS, 0, 0, A->lid, 0, 10000, 0x200003, T_SHORT, w);
    sd_expect(B, 0, 0x200003, src + 5, 10000, w);
    sd_expect_zero(B, 0, 0x200000, 3, "bytes before the RVS");
    sd_expect_zero(B, 0, 0x200003 + 10000, 64, "bytes after the RVS");
    EXPECT_HEX(dn2q_ur_rd(&B->d, 0, DN2_UR_PKT_COUNTER) - pkts0, 3,
               "%s: receiver's Packet Counter (3 packets of <= 4096 bytes)", w);
    EXPECT_HEX(dn2q_pcf(&A->d, 0, DN2_PC_RVS), 1, "%s: sender's Primitive Counter RVS", w);
    EXPECT_HEX(dn2q_pcf(&B->d, 0, DN2_PC_RVS), 0, "%s: receiver's Primitive Counter RVS", w);
    st_expect_empty(B, 0, w);
}

static void rvs_wid1(Board *A, Board *B, const uint8_t *src)
{
    const char *w;

    /* WID 1 to WID 1: the record names the sender's WID */
    w = "RVS WID 1 -> WID 1";
    rreq(A, 1, 0, DN2_OP_RVS, 0, 0, B->lid, 1, 1, 100, 0x10100, 0x1000);
    st_expect(B, 1, DN2_OP_RVS, 0, 0, A->lid, 1, 100, 0x1000, T_SHORT, w);
    sd_expect(B, 1, 0x1000, src + 0x100, 100, w);
    sd_expect_zero(B, 0, 0x1000, 100, "WID 0 untouched by an RVS to WID 1");
    st_expect_empty(B, 0, w);
}

static void rvs_eflag(Board *A, Board *B, const uint8_t *src)
{
    const char *w;

    /* no eflag: data, no record; then one with eflag: one record */
    w = "RVS without eflag";
    rreq(A, 0, 0, DN2_OP_RVS, 0, 0, B->lid, 0, 0, 5000, 0x11000, 0x210000);
    sd_wait(B, 0, 0x210000, src + 0x1000, 5000, T_SHORT, w);
    rreq(A, 0, 0, DN2_OP_RVS, 0, 0, B->lid, 0, 1, 8, 0x12000, 0x211000);
    st_expect(B, 0, DN2_OP_RVS, 0, 0, A->lid, 0, 8, 0x211000, T_SHORT,
              "RVS with eflag after one without");
    st_expect_empty(B, 0, w);
}

static void rvs_command1(Board *A, Board *B, const uint8_t *src)
{
    g_autofree uint8_t *got = g_malloc(64 * KiB_);
    const char *w;

    /* Command1: into the receiver's Prefetch Window area */
    w = "RVS through Command1 (PW)";
    rreq(A, 0, 1, DN2_OP_RVS, 0, 0, B->lid, 0, 1, 700, 0x13000, 0x100);
    st_expect(B, 0, DN2_OP_RVS, 0, 0, A->lid, 0, 700, 0x100, T_SHORT, w);
    qtest_memread(B->d.qts, dn2q_pw_addr(&B->d, 0, 0x100), got, 700);
    dn2q_mem_eq(w, got, src + 0x3000, 700, 0x100);
    EXPECT_HEX(dn2q_ur_rd(&B->d, 0, DN2_UR_PW_FLAG), DN2_PWF_ALL, "%s: PW flags", w);
}

static void rvss_one_packet(Board *A, Board *B, const uint8_t *src)
{
    unsigned i;
    const char *w;

    /* RVSS: 200 x 8 bytes to stride 24 (one packet) */
    w = "RVSS 200 x 8 B stride 24";
    rreq(A, 0, 0, DN2_OP_RVSS, DN2_DTYPE_8B, 200, B->lid, 0, 1, 24, 0x14000, 0x220000);
    st_expect(B, 0, DN2_OP_RVSS, DN2_DTYPE_8B, 200, A->lid, 0, 1600, 0x220000, T_SHORT, w);
    for (i = 0; i < 200; i++) {
        g_autofree char *e = g_strdup_printf("%s element %u", w, i);
        sd_expect(B, 0, 0x220000 + i * 24, src + 0x4000 + i * 8, 8, e);
        sd_expect_zero(B, 0, 0x220000 + i * 24 + 8, 16, e);
        if (g_test_failed()) {
            break;
        }
    }
}

static void rvss_packets(Board *A, Board *B, const uint8_t *src)
{
    unsigned pkts0, i;
    const char *w;

    /* RVSS spanning 5 packets: 255 x 64 bytes, stride 100 */
    w = "RVSS 255 x 64 B stride 100 (5 packets)";
    pkts0 = dn2q_ur_rd(&B->d, 0, DN2_UR_PKT_COUNTER);
    rreq(A, 0, 0, DN2_OP_RVSS, DN2_DTYPE_64B, 255, B->lid, 0, 1, 100, 0x10000, 0x240000);
    /* The record is the primitive's: Iteration 255, Size = Total */
    st_expect(B, 0, DN2_OP_RVSS, DN2_DTYPE_64B, 255, A->lid, 0, 255 * 64, 0x240000,
              T_SHORT, w);
    for (i = 0; i < 255; i++) {
        g_autofree char *e = g_strdup_printf("%s element %u", w, i);
        if (!sd_expect(B, 0, 0x240000 + i * 100, src + i * 64, 64, e)) {
            break;
        }
    }
    EXPECT_HEX(dn2q_ur_rd(&B->d, 0, DN2_UR_PKT_COUNTER) - pkts0, 5, "%s: packets", w);
    st_expect_empty(B, 0, w);
}

static void rvsi_list(Board *A, Board *B, const uint8_t *src)
{
    uint32_t list[64];
    unsigned i;
    const char *w;

    /* RVSI: the list lives in the receiver's SO-DIMM */
    w = "RVSI 64 x 4 B through a list on the receiver";
    for (i = 0; i < 64; i++) {
        uint32_t le;
        list[i] = ((i * 37) % 64) * 12;
        le = cpu_to_le32(list[i]);
        dn2q_sdfile_put(&B->mem, 0, 0x300000 + i * 4, &le, 4);
    }
    rreq(A, 0, 0, DN2_OP_RVSI, DN2_DTYPE_4B, 64, B->lid, 0, 1, 0x300000, 0x15000,
         0x310000);
    st_expect(B, 0, DN2_OP_RVSI, DN2_DTYPE_4B, 64, A->lid, 0, 256, 0x310000, T_SHORT, w);
    for (i = 0; i < 64; i++) {
        g_autofree char *e = g_strdup_printf("%s element %u", w, i);
        if (!sd_expect(B, 0, 0x310000 + list[i], src + 0x5000 + i * 4, 4, e)) {
            break;
        }
    }
}

static void rvs_command_ex(Board *A, Board *B, const uint8_t *src)
{
    g_autofree uint8_t *got = g_malloc(64 * KiB_);
    unsigned i;
    const char *w;

    /* Command Ex: the sender gathers strided (VLS pattern), lands contiguous */
    w = "RVS with a strided local pattern (Command Ex)";
    rreq_ex(A, 0, 0, DN2_OP_RVS, 0, 0, B->lid, 0, 1, 256, 0x16000, 0x320000,
            dn2_req_ex(DN2_OP_VLS, DN2_DTYPE_4B, 64, 12));
    st_expect(B, 0, DN2_OP_RVS, 0, 0, A->lid, 0, 256, 0x320000, T_SHORT, w);
    for (i = 0; i < 64; i++) {
        memcpy(got + i * 4, src + 0x6000 + i * 12, 4);
    }
    sd_expect(B, 0, 0x320000, got, 256, w);
}

static void rvs_zero(Board *A, Board *B, const uint8_t *src)
{
    const char *w;

    /* size 0: a header-only notification (choice #39) */
    w = "RVS of 0 bytes";
    rreq(A, 0, 0, DN2_OP_RVS, 0, 0, B->lid, 0, 1, 0, 0x10000, 0x330000);
    st_expect(B, 0, DN2_OP_RVS, 0, 0, A->lid, 0, 0, 0x330000, T_SHORT, w);
    sd_expect_zero(B, 0, 0x330000, 64, w);
}

static void rvs_1mib(Board *A, Board *B, const uint8_t *src)
{
    g_autofree uint8_t *big = g_malloc(MiB_);
    const char *w;

    /* 1 MiB in one request (257 packets) */
    w = "RVS 1 MiB";
    dn2q_pattern(big, MiB_, 3);
    dn2q_sdfile_put(&A->mem, 0, 0x400000, big, MiB_);
    rreq(A, 0, 0, DN2_OP_RVS, 0, 0, B->lid, 0, 1, MiB_, 0x400000, 0x500000);
    st_expect(B, 0, DN2_OP_RVS, 0, 0, A->lid, 0, MiB_, 0x500000, T_LONG, w);
    sd_expect(B, 0, 0x500000, big, MiB_, w);
}

/* One RVS-family path per test: A and B up, A's source pattern in place,
 * the path, then neither board reports an error. */
typedef struct RvsCase {
    const char *path;
    void (*run)(Board *A, Board *B, const uint8_t *src);
} RvsCase;

static const RvsCase rvs_cases[] = {
    { "/dimmnet2-fabric/rvs-family/contiguous", rvs_contiguous },
    { "/dimmnet2-fabric/rvs-family/wid1", rvs_wid1 },
    { "/dimmnet2-fabric/rvs-family/eflag", rvs_eflag },
    { "/dimmnet2-fabric/rvs-family/command1-pw", rvs_command1 },
    { "/dimmnet2-fabric/rvs-family/rvss", rvss_one_packet },
    { "/dimmnet2-fabric/rvs-family/rvss-5-packets", rvss_packets },
    { "/dimmnet2-fabric/rvs-family/rvsi", rvsi_list },
    { "/dimmnet2-fabric/rvs-family/command-ex", rvs_command_ex },
    { "/dimmnet2-fabric/rvs-family/zero-bytes", rvs_zero },
    { "/dimmnet2-fabric/rvs-family/1mib", rvs_1mib },
};

static void test_rvs_case(const void *opaque)
{
    const RvsCase *c = opaque;
    Fab f;
    Board *A, *B;
    g_autofree uint8_t *src = g_malloc(64 * KiB_);

    if (rvs_up(&f, &A, &B, src)) {
        c->run(A, B, src);
        rvs_no_error(A, B);
    }
    fab_down(&f);
}

/* ------------------------------------------------------------------ */
/* RVL family: B asks A for data                                       */
/* ------------------------------------------------------------------ */

static void test_rvl_family(void)
{
    Fab f;
    Board *A, *B;
    g_autofree uint8_t *src = g_malloc(64 * KiB_);
    g_autofree uint8_t *want = g_malloc(64 * KiB_);
    g_autofree uint8_t *got = g_malloc(64 * KiB_);
    uint32_t list[30];
    unsigned i, rvl0;
    const char *w;

    if (!fab_up_ab(&f, NULL, 32 * MiB_, NULL, &A, &B)) {
        goto out;
    }
    dn2q_pattern(src, 64 * KiB_, 4);
    dn2q_sdfile_put(&A->mem, 0, 0x20000, src, 64 * KiB_);
    dn2q_sdfile_put(&A->mem, 1, 0x20000, src, 64 * KiB_);

    /* RVL contiguous: 9000 bytes from A 0x20000 to B 0x100000 */
    w = "RVL 9000 bytes";
    rreq(B, 0, 0, DN2_OP_RVL, 0, 0, A->lid, 0, 1, 9000, 0x20000, 0x100000);
    wait_pc(B, 0, DN2_PC_RVL, 1, T_SHORT, "RVL counted on the requester");
    st_expect(B, 0, DN2_OP_RVS, 0, 0, A->lid, 0, 9000, 0x100000, T_SHORT, w);
    sd_expect(B, 0, 0x100000, src, 9000, w);
    sd_expect_zero(B, 0, 0x100000 + 9000, 64, "after the RVL data");
    EXPECT_HEX(dn2q_pcf(&A->d, 0, DN2_PC_RVS), 0,
               "%s: the responder's RVS (from the Receive Controller) is not counted", w);
    st_expect_empty(A, 0, "RVL: nothing in the responder's status ring");

    /* from the responder's WID 1 (DWID) into the requester's WID 1 */
    w = "RVL WID 1 -> responder WID 1";
    rreq(B, 1, 0, DN2_OP_RVL, 0, 0, A->lid, 1, 1, 300, 0x20100, 0x2000);
    st_expect(B, 1, DN2_OP_RVS, 0, 0, A->lid, 1, 300, 0x2000, T_SHORT, w);
    sd_expect(B, 1, 0x2000, src + 0x100, 300, w);

    /* RVLS: the responder gathers 100 x 8 bytes at stride 40 */
    w = "RVLS 100 x 8 B stride 40";
    rreq(B, 0, 0, DN2_OP_RVLS, DN2_DTYPE_8B, 100, A->lid, 0, 1, 40, 0x20000, 0x110000);
    for (i = 0; i < 100; i++) {
        memcpy(want + i * 8, src + i * 40, 8);
    }
    st_expect(B, 0, DN2_OP_RVS, 0, 0, A->lid, 0, 800, 0x110000, T_SHORT, w);
    sd_expect(B, 0, 0x110000, want, 800, w);

    /* RVLI: the list lives in the responder's SO-DIMM */
    w = "RVLI 30 x 16 B through a list on the responder";
    for (i = 0; i < 30; i++) {
        uint32_t le;
        list[i] = ((i * 7) % 30) * 48 + 16;
        le = cpu_to_le32(list[i]);
        dn2q_sdfile_put(&A->mem, 0, 0x80000 + i * 4, &le, 4);
        memcpy(want + i * 16, src + list[i], 16);
    }
    rreq(B, 0, 0, DN2_OP_RVLI, DN2_DTYPE_16B, 30, A->lid, 0, 1, 0x80000, 0x20000,
         0x120000);
    st_expect(B, 0, DN2_OP_RVS, 0, 0, A->lid, 0, 480, 0x120000, T_SHORT, w);
    sd_expect(B, 0, 0x120000, want, 480, w);

    /* Command1: into the requester's Prefetch Window, flags track lines */
    w = "RVL through Command1 (PW window 1)";
    rreq(B, 0, 1, DN2_OP_RVL, 0, 0, A->lid, 0, 0, 512, 0x21000, DN2_WIN_SIZE);
    poll_ur(B, 0, DN2_UR_PW_FLAG, DN2_PWF_WIN_MASK(1), DN2_PWF_WIN_MASK(1), T_SHORT,
            "PW window 1 flags all set after the RVL data");
    qtest_memread(B->d.qts, dn2q_pw_addr(&B->d, 0, DN2_WIN_SIZE), got, 512);
    dn2q_mem_eq(w, got, src + 0x1000, 512, DN2_WIN_SIZE);
    EXPECT_HEX(dn2q_ur_rd(&B->d, 0, DN2_UR_PW_FLAG), DN2_PWF_ALL, "%s: all PW flags", w);
    st_expect_empty(B, 0, "RVL without eflag: no record");

    /* the requester's Command Ex = the landing pattern (strided) */
    w = "RVL landing strided on the requester (Command Ex VSS)";
    rreq_ex(B, 0, 0, DN2_OP_RVL, 0, 0, A->lid, 0, 1, 400, 0x22000, 0x130000,
            dn2_req_ex(DN2_OP_VSS, DN2_DTYPE_8B, 50, 32));
    st_expect(B, 0, DN2_OP_RVSS, DN2_DTYPE_8B, 50, A->lid, 0, 400, 0x130000, T_SHORT, w);
    for (i = 0; i < 50; i++) {
        g_autofree char *e = g_strdup_printf("%s element %u", w, i);
        if (!sd_expect(B, 0, 0x130000 + i * 32, src + 0x2000 + i * 8, 8, e)) {
            break;
        }
    }

    /* 16 RVLs queued back to back (the RC Request FIFO is 16 deep) */
    w = "16 RVLs back to back";
    rvl0 = dn2q_pcf(&B->d, 0, DN2_PC_RVL);
    for (i = 0; i < 16; i++) {
        rreq(B, 0, 0, DN2_OP_RVL, 0, 0, A->lid, 0, 1, 2048, 0x20000 + i * 2048,
             0x140000 + i * 4096);
    }
    wait_pc(B, 0, DN2_PC_RVL, rvl0 + 16, T_SHORT, "16 RVLs sent");
    for (i = 0; i < 16; i++) {
        g_autofree char *e = g_strdup_printf("%s #%u", w, i);
        st_expect(B, 0, DN2_OP_RVS, 0, 0, A->lid, 0, 2048, 0x140000 + i * 4096, T_SHORT, e);
        sd_expect(B, 0, 0x140000 + i * 4096, src + i * 2048, 2048, e);
    }
    EXPECT_HEX(dn2q_cs(&B->d, 0) & (DN2_CS_REQ_ERROR | DN2_CS_RX_OVF | DN2_CS_RX_ERR_MASK), 0,
               "requester Controller Status: no error");
out:
    fab_down(&f);
}

/* ------------------------------------------------------------------ */
/* IPUSH, LHSv1, LHSv2                                                  */
/* ------------------------------------------------------------------ */

#define AMT_OFF     0x100u          /* the AMT entry: WID 0's LLCM 0x100 */
#define RING_BASE   0x40000u
#define RING_SIZE   0x8000u

/* An IPUSH ring on the receiver's WID 0 for the sender's (LID, WID). */
static void ipush_setup(Board *recv, uint16_t sender_lid, int sender_wid)
{
    dn2q_ur_wr(&recv->d, 0, DN2_UR_IPUSH_AREA_SIZE, 0x100);     /* 1 MiB */
    dn2q_amt_setup(&recv->d, 0, AMT_OFF, sender_wid, sender_lid, RING_BASE, RING_SIZE);
}

static uint32_t amt_tail(Board *b)
{
    return dn2q_amt_get(&b->d, 0, AMT_OFF, DN2_AMT_TAIL);
}

/* The host consumed the ring up to `head`. */
static void amt_set_head(Board *b, uint32_t head)
{
    dn2q_amt_set(&b->d, 0, AMT_OFF, DN2_AMT_HEAD, head);
}

static void ring_expect(Board *b, uint32_t pos, const uint8_t *want, uint32_t len,
                        const char *what)
{
    uint32_t n = MIN(len, RING_SIZE - pos);

    sd_expect(b, 0, RING_BASE + pos, want, n, what);
    if (n < len) {
        sd_expect(b, 0, RING_BASE, want + n, len - n, what);
    }
}

/* Ring positions each IPUSH/LHS path starts from: where the one before
 * it in the sequence left the ring (every packet rounded up to 8). */
#define POS_AFTER_100     104u
#define POS_AFTER_10000   (POS_AFTER_100 + 10000u)
#define POS_AFTER_WRAP    ((POS_AFTER_10000 + 25000u) % RING_SIZE)
#define POS_AFTER_LHSV1   (POS_AFTER_WRAP + ROUND_UP(200u - DN2_LHB_DATA, 8))
#define POS_AFTER_LHSV2   (POS_AFTER_LHSV1 + ROUND_UP(140u - 56u, 8))

/* The host consumed the ring up to `pos` and the NIC writes there next. */
static void ring_at(Board *b, uint32_t pos)
{
    dn2q_amt_set(&b->d, 0, AMT_OFF, DN2_AMT_TAIL, pos);
    amt_set_head(b, pos);
}

/* Fill the receiver's first `n` LH Buffer entries with envelope-only
 * LHSv1 messages (no record), so the next message lands in entry n. */
static void lhb_fill(Board *A, Board *B, unsigned n)
{
    uint64_t le = cpu_to_le64(dn2_envelope(0, 0, 0));
    unsigned i;

    dn2q_sdfile_put(&A->mem, 0, 0x70000, &le, 8);
    for (i = 0; i < n; i++) {
        rreq(A, 0, 0, DN2_OP_LHSV1, 0, 0, B->lid, 0, 0, 8, 0x70000, 0);
        poll_ur(B, 0, DN2_UR_LHB_ADDR, ~0ULL, (i + 1) * DN2_LHB_ENTRY, T_SHORT,
                "LH Buffer filled up to the entry under test");
    }
}

/* IPUSH, one packet, pflag (eflag) -> one record per packet */
static void ipush_one_packet(Board *A, Board *B, const uint8_t *src)
{
    const char *w = "IPUSH 100 bytes";

    rreq(A, 0, 0, DN2_OP_IPUSH, 0, 0, B->lid, 0, 1, 100, 0x30000, 0);
    st_expect(B, 0, DN2_OP_IPUSH, 0, 0, A->lid, 0, 100, RING_BASE, T_SHORT, w);
    ring_expect(B, 0, src, 100, w);
    EXPECT_HEX(amt_tail(B), POS_AFTER_100, "%s: Tail rounded up to 8", w);
    EXPECT_HEX(dn2q_pcf(&A->d, 0, DN2_PC_IPUSH), 1, "%s: sender's IPUSH counter", w);
}

/* 10000 bytes: 3 packets, 3 records */
static void ipush_three_packets(Board *A, Board *B, const uint8_t *src)
{
    const char *w = "IPUSH 10000 bytes";

    ring_at(B, POS_AFTER_100);
    rreq(A, 0, 0, DN2_OP_IPUSH, 0, 0, B->lid, 0, 1, 10000, 0x30100, 0);
    st_expect(B, 0, DN2_OP_IPUSH, 0, 0, A->lid, 0, 4080, RING_BASE + 104, T_SHORT, w);
    st_expect(B, 0, DN2_OP_IPUSH, 0, 0, A->lid, 0, 4080, RING_BASE + 104 + 4080, T_SHORT,
              w);
    st_expect(B, 0, DN2_OP_IPUSH, 0, 0, A->lid, 0, 1840, RING_BASE + 104 + 8160, T_SHORT,
              w);
    ring_expect(B, 104, src + 0x100, 10000, w);
    EXPECT_HEX(amt_tail(B), 104 + 10000, "%s: Tail", w);
}

/* consumed, then wrap around the ring end */
static void ipush_ring_wrap(Board *A, Board *B, const uint8_t *src)
{
    const char *w = "IPUSH wrapping the ring";
    uint32_t pos = POS_AFTER_10000, n, i;

    ring_at(B, pos);
    rreq(A, 0, 0, DN2_OP_IPUSH, 0, 0, B->lid, 0, 1, 25000, 0x30000, 0);
    for (i = 0; i < 7; i++) {
        n = MIN(4080u, 25000 - i * 4080);
        st_expect(B, 0, DN2_OP_IPUSH, 0, 0, A->lid, 0, n, RING_BASE + pos, T_SHORT, w);
        ring_expect(B, pos, src + i * 4080, n, w);
        pos = (pos + ROUND_UP(n, 8)) % RING_SIZE;
    }
    EXPECT_HEX(amt_tail(B), pos, "%s: Tail after the wrap", w);
    EXPECT_HEX(pos, POS_AFTER_WRAP, "%s: where the next path starts", w);
}

/* LHSv1: envelope + 200 bytes: 48 in the entry, 152 in the ring */
static void lhsv1_entry_and_ring(Board *A, Board *B, const uint8_t *src)
{
    const char *w = "LHSv1 208-byte message";
    uint32_t tail = POS_AFTER_WRAP;
    uint8_t ent[DN2_LHB_ENTRY];
    uint64_t le = cpu_to_le64(dn2_envelope(0x1234, 5, 0xdeadbeef));
    uint64_t l0;

    ring_at(B, tail);
    dn2q_sdfile_put(&A->mem, 0, 0x50000, &le, 8);
    dn2q_sdfile_put(&A->mem, 0, 0x50008, src + 0x8000, 200);
    rreq(A, 0, 0, DN2_OP_LHSV1, 0, 0, B->lid, 0, 1, 208, 0x50000, 0);
    st_expect(B, 0, DN2_OP_IPUSH, 0, 0, A->lid, 0, 208, 0, T_SHORT, w);
    EXPECT_HEX(dn2q_ur_rd(&B->d, 0, DN2_UR_LHB_ADDR), DN2_LHB_ENTRY, "%s: LH Buffer tail", w);
    qtest_memread(B->d.qts, dn2q_lhb_addr(&B->d, 0, 0), ent, sizeof(ent));
    l0 = ldq_le_p(ent);
    EXPECT_HEX(DN2_FGET(l0, DN2_LH_POINTER), RING_BASE + tail, "%s: entry Pointer", w);
    EXPECT_HEX(DN2_FGET(l0, DN2_LH_CONTEXT), 0x1234, "%s: entry Context", w);
    EXPECT_HEX(DN2_FGET(l0, DN2_LH_RANK), 5, "%s: entry Rank", w);
    EXPECT_HEX(l0 & (DN2_LH_VALID | DN2_LH_COMPLETE), DN2_LH_VALID | DN2_LH_COMPLETE,
               "%s: Valid and Complete toggled", w);
    EXPECT_HEX(ldq_le_p(ent + 8), DN2_FPUT(0xdeadbeefu, DN2_LH_TAG) | 200, "%s: Tag, Size", w);
    dn2q_mem_eq("LHSv1 inline data", ent + 16, src + 0x8000, DN2_LHB_DATA, 0);
    ring_expect(B, tail, src + 0x8000 + DN2_LHB_DATA, 200 - DN2_LHB_DATA, w);
    tail = (tail + ROUND_UP(200 - DN2_LHB_DATA, 8)) % RING_SIZE;
    EXPECT_HEX(amt_tail(B), tail, "%s: ring Tail", w);
}

/* LHSv2: 40 bytes (envelope + 32) from the Write Window, 100 from SO-DIMM */
static void lhsv2_window_and_sodimm(Board *A, Board *B, const uint8_t *src)
{
    const char *w = "LHSv2 40 WW bytes + 100 SO-DIMM bytes";
    uint32_t tail = POS_AFTER_LHSV1;
    uint8_t ent[DN2_LHB_ENTRY];
    uint8_t wwb[40];
    uint8_t msg[140];
    uint64_t l0;

    lhb_fill(A, B, 1);
    ring_at(B, tail);
    stq_le_p(wwb, dn2_envelope(0x55, 9, 0x01020304));
    memcpy(wwb + 8, src + 0x9000, 32);
    qtest_memwrite(A->d.qts, dn2q_ww_addr(&A->d, 0, 0x200), wwb, sizeof(wwb));
    memcpy(msg, wwb, 40);
    memcpy(msg + 40, src + 0xa000, 100);
    rreq(A, 0, 0, DN2_OP_LHSV2, 0, 0, B->lid, 0, 1, 140, 0x30000 + 0xa000,
         dn2_lhsv2_dst(40, 0x200));
    st_expect(B, 0, DN2_OP_IPUSH, 0, 0, A->lid, 0, 140, DN2_LHB_ENTRY, T_SHORT, w);
    qtest_memread(B->d.qts, dn2q_lhb_addr(&B->d, 0, DN2_LHB_ENTRY), ent, sizeof(ent));
    l0 = ldq_le_p(ent);
    EXPECT_HEX(DN2_FGET(l0, DN2_LH_POINTER), RING_BASE + tail, "%s: entry Pointer", w);
    EXPECT_HEX(DN2_FGET(l0, DN2_LH_CONTEXT), 0x55, "%s: entry Context", w);
    EXPECT_HEX(DN2_FGET(l0, DN2_LH_RANK), 9, "%s: entry Rank", w);
    EXPECT_HEX(l0 & DN2_LH_FLAGS, DN2_LH_FLAGS, "%s: Valid and Complete toggled", w);
    EXPECT_HEX(ldq_le_p(ent + 8), DN2_FPUT(0x01020304u, DN2_LH_TAG) | 132, "%s: Tag, Size",
               w);
    dn2q_mem_eq("LHSv2 inline data", ent + 16, msg + 8, DN2_LHB_DATA, 0);
    ring_expect(B, tail, msg + 56, 140 - 56, w);
}

/* LHSv1 over 3 packets: Complete toggles once, at the end */
static void lhsv1_three_packets(Board *A, Board *B, const uint8_t *src)
{
    const char *w = "LHSv1 9000-byte message (3 packets)";
    uint32_t tail = POS_AFTER_LHSV2;
    uint64_t le = cpu_to_le64(dn2_envelope(7, 1, 0x77));
    uint8_t ent[DN2_LHB_ENTRY];
    uint64_t l0;
    int64_t end;

    lhb_fill(A, B, 2);
    ring_at(B, tail);
    dn2q_sdfile_put(&A->mem, 0, 0x60000, &le, 8);
    dn2q_sdfile_put(&A->mem, 0, 0x60008, src, 8992);
    rreq(A, 0, 0, DN2_OP_LHSV1, 0, 0, B->lid, 0, 0, 9000, 0x60000, 0);
    poll_ur(B, 0, DN2_UR_LHB_ADDR, ~0ULL, 3 * DN2_LHB_ENTRY, T_SHORT,
            "the third LH Buffer entry");
    /* Complete is written after the last byte: wait for it */
    end = deadline(T_SHORT);
    do {
        qtest_memread(B->d.qts, dn2q_lhb_addr(&B->d, 0, 2 * DN2_LHB_ENTRY), ent,
                      sizeof(ent));
    } while ((ldq_le_p(ent) & DN2_LH_FLAGS) != DN2_LH_FLAGS && now_ms() < end);
    l0 = ldq_le_p(ent);
    EXPECT_HEX(l0 & DN2_LH_FLAGS, DN2_LH_FLAGS, "%s: Valid and Complete toggled", w);
    EXPECT_HEX(DN2_FGET(l0, DN2_LH_POINTER), RING_BASE + tail, "%s: entry Pointer", w);
    EXPECT_HEX(ldq_le_p(ent + 8), DN2_FPUT(0x77u, DN2_LH_TAG) | 8992, "%s: Tag, Size", w);
    dn2q_mem_eq("LHSv1 3-packet inline data", ent + 16, src, DN2_LHB_DATA, 0);
    ring_expect(B, tail, src + DN2_LHB_DATA, 8992 - DN2_LHB_DATA, w);
    st_expect_empty(B, 0, "LHS without eflag: no record");
}

/* One IPUSH/LHS path per test: A and B up, A's source pattern in place,
 * B's ring for A, the path, then the receiver reports no error. */
static const RvsCase ipush_cases[] = {
    { "/dimmnet2-fabric/ipush-lhs/ipush-one-packet", ipush_one_packet },
    { "/dimmnet2-fabric/ipush-lhs/ipush-three-packets", ipush_three_packets },
    { "/dimmnet2-fabric/ipush-lhs/ipush-ring-wrap", ipush_ring_wrap },
    { "/dimmnet2-fabric/ipush-lhs/lhsv1-entry-and-ring", lhsv1_entry_and_ring },
    { "/dimmnet2-fabric/ipush-lhs/lhsv2-window-and-sodimm", lhsv2_window_and_sodimm },
    { "/dimmnet2-fabric/ipush-lhs/lhsv1-three-packets", lhsv1_three_packets },
};

static void test_ipush_case(const void *opaque)
{
    const RvsCase *c = opaque;
    Fab f;
    Board *A, *B;
    g_autofree uint8_t *src = g_malloc(64 * KiB_);

    if (fab_up_ab(&f, NULL, 32 * MiB_, NULL, &A, &B)) {
        dn2q_pattern(src, 64 * KiB_, 5);
        dn2q_sdfile_put(&A->mem, 0, 0x30000, src, 64 * KiB_);
        ipush_setup(B, A->lid, 0);
        c->run(A, B, src);
        EXPECT_HEX(dn2q_cs(&B->d, 0) & (DN2_CS_RX_OVF | DN2_CS_RX_ERR_MASK), 0,
                   "receiver Controller Status: no error");
    }
    fab_down(&f);
}

/* ------------------------------------------------------------------ */
/* BOTF: packet images from the Write Window                            */
/* ------------------------------------------------------------------ */

static void test_botf(void)
{
    Fab f;
    Board *A, *B;
    uint8_t data[DN2_BOTF_MAX], got[DN2_BOTF_MAX];
    struct dn2_hdr h;
    unsigned i, n0;
    const char *w;

    if (!fab_up_ab(&f, NULL, 32 * MiB_, NULL, &A, &B)) {
        goto out;
    }

    /* into the receiver's LLCM (lflag), from Write Window 0 */
    w = "BOTF into LLCM";
    dn2q_pattern(data, sizeof(data), 6);
    h = rvs_hdr(B->lid, 0x1000);
    h.lflag = 1;
    n0 = dn2q_pcf(&A->d, 0, DN2_PC_BOTF);
    botf_send(A, 0, 0, &h, data, 200);
    st_expect(B, 0, DN2_OP_RVS, 0, 0, A->lid, 0, 200, 0x1000, T_SHORT, w);
    qtest_memread(B->d.qts, dn2q_llcm_addr(&B->d, 0, 0x1000), got, 200);
    dn2q_mem_eq(w, got, data, 200, 0x1000);
    EXPECT_HEX(dn2q_pcf(&A->d, 0, DN2_PC_BOTF), n0 + 1, "%s: sender's BOTF counter", w);

    /* into SO-DIMM, the largest image (512 bytes), Write Window 1; the
     * image's PGID is overwritten by the sender's NIC (PGID0) */
    w = "BOTF 512 bytes into SO-DIMM";
    dn2q_pattern(data, sizeof(data), 7);
    h = rvs_hdr(B->lid, 0x700008);
    h.pgid = 0x77;
    botf_send(A, 0, 1, &h, data, DN2_BOTF_MAX - 16);
    st_expect(B, 0, DN2_OP_RVS, 0, 0, A->lid, 0, DN2_BOTF_MAX - 16, 0x700008, T_SHORT, w);
    sd_expect(B, 0, 0x700008, data, DN2_BOTF_MAX - 16, w);
    EXPECT_HEX(qom_u64(B, "stat-rx-drop-pgid"), 0, "%s: no PGID drop", w);

    /* into the Prefetch Window (rflag), Write Window 2 */
    w = "BOTF into the Prefetch Window";
    h = rvs_hdr(B->lid, 0x680);
    h.rflag = 1;
    botf_send(A, 0, 2, &h, data + 100, 128);
    st_expect(B, 0, DN2_OP_RVS, 0, 0, A->lid, 0, 128, 0x680, T_SHORT, w);
    qtest_memread(B->d.qts, dn2q_pw_addr(&B->d, 0, 0x680), got, 128);
    dn2q_mem_eq(w, got, data + 100, 128, 0x680);

    /* an RVSS image (3 header lines): 10 x 4 bytes to stride 16, WW 3 */
    w = "BOTF carrying an RVSS packet";
    memset(&h, 0, sizeof(h));
    h.type = DN2_OP_RVSS;
    h.dtype = DN2_DTYPE_4B;
    h.iter = 10;
    h.hflag = 1;
    h.dlid = B->lid;
    h.eflag = 1;
    h.w1_lo = 0x710000;         /* Initial DSTOff */
    h.w1_hi = 0;                /* first element index */
    h.total = 40;
    h.stride = 16;
    botf_send(A, 0, 3, &h, data, 40);
    st_expect(B, 0, DN2_OP_RVSS, DN2_DTYPE_4B, 10, A->lid, 0, 40, 0x710000, T_SHORT, w);
    for (i = 0; i < 10; i++) {
        g_autofree char *e = g_strdup_printf("%s element %u", w, i);
        sd_expect(B, 0, 0x710000 + i * 16, data + i * 4, 4, e);
        sd_expect_zero(B, 0, 0x710000 + i * 16 + 4, 12, e);
    }

    /* WID 1 to WID 1 (DWID and SWID in the image), LLCM */
    w = "BOTF WID 1 -> WID 1";
    h = rvs_hdr(B->lid, 0x40);
    h.dwid = 1;
    h.swid = 1;
    h.lflag = 1;
    botf_send(A, 1, 0, &h, data + 8, 64);
    st_expect(B, 1, DN2_OP_RVS, 0, 0, A->lid, 1, 64, 0x40, T_SHORT, w);
    qtest_memread(B->d.qts, dn2q_llcm_addr(&B->d, 1, 0x40), got, 64);
    dn2q_mem_eq(w, got, data + 8, 64, 0x40);
    st_expect_empty(B, 0, w);

    /* a burst of 100 BOTFs from one window, rewritten between them: every
     * one arrives, once, in order (sequence number in the data) */
    w = "100 BOTFs in a row";
    for (i = 0; i < 100; i++) {
        uint8_t seq[8];
        stq_le_p(seq, 0x5e0000 + i);
        h = rvs_hdr(B->lid, 0x2000 + (i % 16) * 8);
        h.lflag = 1;
        /* wait for the previous BOTF to leave before rewriting the image */
        wait_pc(A, 0, DN2_PC_BOTF, n0 + 4 + i, T_SHORT, "previous BOTF sent");
        botf_send(A, 0, 0, &h, seq, 8);
    }
    for (i = 0; i < 100; i++) {
        uint64_t lo, up;
        if (!st_pop(B, 0, &lo, &up, T_SHORT, w)) {
            break;
        }
        EXPECT_HEX(up, 0x2000 + (i % 16) * 8, "%s: record %u in order", w, i);
        EXPECT_HEX(DN2_FGET(lo, DN2_ST_SIZE), 8, "%s: record %u size", w, i);
    }
    st_expect_empty(B, 0, w);
out:
    fab_down(&f);
}

/* ------------------------------------------------------------------ */
/* Three boards, all to all, at once                                    */
/* ------------------------------------------------------------------ */

static void test_all_to_all(void)
{
    Fab f;
    const uint32_t len = 768 * KiB_;
    g_autofree uint8_t *data[MAXB] = { NULL };
    int s, r, k;

    if (!fab_up(&f, 3, NULL, 32 * MiB_, NULL)) {
        goto out;
    }
    for (s = 0; s < 3; s++) {
        data[s] = g_malloc(len);
        dn2q_pattern(data[s], len, 10 + s);
        dn2q_sdfile_put(&f.b[s].mem, 0, 0, data[s], len);
    }
    /* every board sends to both others: sender s lands at (s + 1) MiB */
    for (k = 1; k <= 2; k++) {
        for (s = 0; s < 3; s++) {
            r = (s + k) % 3;
            rreq(&f.b[s], 0, 0, DN2_OP_RVS, 0, 0, f.b[r].lid, 0, 1, len, 0,
                 (s + 1) * MiB_);
        }
    }
    for (r = 0; r < 3; r++) {
        bool seen[MAXB] = { false };
        for (k = 0; k < 2; k++) {
            uint64_t lo, up;
            uint16_t clid;
            if (!st_pop(&f.b[r], 0, &lo, &up, T_LONG, "all-to-all record")) {
                break;
            }
            clid = DN2_FGET(lo, DN2_ST_CLID);
            for (s = 0; s < 3; s++) {
                if (s != r && dn2_lid_to_clid(f.b[s].lid) == clid && !seen[s]) {
                    seen[s] = true;
                    EXPECT_HEX(lo, dn2_req_lower(DN2_OP_RVS, 0, 0, clid, 0, 1, len),
                               "board %c: record from %c", f.b[r].name, f.b[s].name);
                    EXPECT_HEX(up, (s + 1) * MiB_, "board %c: record from %c address",
                               f.b[r].name, f.b[s].name);
                    break;
                }
            }
            EXPECT_TRUE(s < 3, "board %c: a record from an expected sender (CLID 0x%x)",
                        f.b[r].name, clid);
        }
        for (s = 0; s < 3; s++) {
            g_autofree char *wh = g_strdup_printf("all-to-all %c -> %c", f.b[s].name,
                                                  f.b[r].name);
            if (s != r) {
                sd_expect(&f.b[r], 0, (s + 1) * MiB_, data[s], len, wh);
            } else {
                sd_expect_zero(&f.b[r], 0, (s + 1) * MiB_, 4096, "nothing to itself");
            }
        }
        st_expect_empty(&f.b[r], 0, "all-to-all: two records each");
    }
out:
    for (s = 0; s < MAXB; s++) {
        g_free(data[s]);
        data[s] = NULL;
    }
    fab_down(&f);
}

/* ------------------------------------------------------------------ */
/* Multicast                                                            */
/* ------------------------------------------------------------------ */

static void test_multicast(void)
{
    Fab f;
    Board *A, *B, *C;
    g_autofree char *g1 = NULL, *g2 = NULL, *port = NULL;
    uint16_t lids[3];
    uint8_t data[4096], got[256];
    struct dn2_hdr h;
    int i;

    if (!fab_up(&f, 3, NULL, 32 * MiB_, NULL)) {
        goto out;
    }
    A = &f.b[0];
    B = &f.b[1];
    C = &f.b[2];
    for (i = 0; i < 3; i++) {
        lids[i] = f.b[i].lid;
    }
    /* The boards cannot join groups themselves (no register for it): the
     * LIDs are known now, so restart the switch on the same port with the
     * groups; the boards come back with their LIDs as hints. */
    g1 = g_strdup_printf("0xc01=0x%x,0x%x", B->lid, C->lid);
    g2 = g_strdup_printf("0xc02=0x%x,0x%x,0x%x", A->lid, B->lid, C->lid);
    {
        const char *args[] = { "--mcast", g1, "--mcast", g2, NULL };
        int p = f.sw.port;
        switch_stop(&f.sw, SIGTERM);
        /* the switch's BYE takes every link down */
        for (i = 0; i < 3; i++) {
            poll_sma_down(&f.b[i], T_SHORT);
        }
        if (!switch_start(&f.sw, p, args)) {
            goto out;
        }
    }
    for (i = 0; i < 3; i++) {
        if (board_wait_link(&f.b[i], T_SHORT)) {
            EXPECT_HEX(f.b[i].lid, lids[i], "board %c keeps its LID over a switch restart",
                       f.b[i].name);
        }
    }
    /* Each registration publishes a new routing table; let the last one
     * (all three members live) reach every board before sending to a
     * group, or the fabric sends to the members it knows so far. */
    g_usleep(200 * 1000);

    /* RVS to group 0xc01 = {B, C}: both get it, the sender A does not */
    dn2q_pattern(data, sizeof(data), 20);
    dn2q_sdfile_put(&A->mem, 0, 0x1000, data, sizeof(data));
    rreq(A, 0, 0, DN2_OP_RVS, 0, 0, dn2_clid_to_lid(0xc01), 0, 1, 3000, 0x1000, 0x90000);
    st_expect(B, 0, DN2_OP_RVS, 0, 0, A->lid, 0, 3000, 0x90000, T_SHORT,
              "RVS to group 0xc01 at member B");
    st_expect(C, 0, DN2_OP_RVS, 0, 0, A->lid, 0, 3000, 0x90000, T_SHORT,
              "RVS to group 0xc01 at member C");
    sd_expect(B, 0, 0x90000, data, 3000, "RVS to group 0xc01 at B");
    sd_expect(C, 0, 0x90000, data, 3000, "RVS to group 0xc01 at C");
    g_usleep(50 * 1000);
    st_expect_empty(A, 0, "group 0xc01: the non-member sender gets nothing");
    sd_expect_zero(A, 0, 0x90000, 3000, "group 0xc01: nothing at the non-member");

    /* BOTF to group 0xc02 = {A, B, C}: everyone, the sender too */
    h = rvs_hdr(dn2_clid_to_lid(0xc02), 0x3000);
    h.lflag = 1;
    botf_send(A, 0, 0, &h, data + 64, 256);
    for (i = 0; i < 3; i++) {
        g_autofree char *w = g_strdup_printf("BOTF to group 0xc02 at %c", f.b[i].name);
        st_expect(&f.b[i], 0, DN2_OP_RVS, 0, 0, A->lid, 0, 256, 0x3000, T_SHORT, w);
        qtest_memread(f.b[i].d.qts, dn2q_llcm_addr(&f.b[i].d, 0, 0x3000), got, 256);
        dn2q_mem_eq(w, got, data + 64, 256, 0x3000);
    }

    /* a larger multicast, and unicast after it stays in order at B:
     * the unicast overwrites part of the multicast region */
    {
        g_autofree uint8_t *big = g_malloc(256 * KiB_);
        dn2q_pattern(big, 256 * KiB_, 21);
        dn2q_sdfile_put(&B->mem, 0, 0x100000, big, 256 * KiB_);
        dn2q_sdfile_put(&C->mem, 0, 0x100000, big, 256 * KiB_);
        rreq(B, 0, 0, DN2_OP_RVS, 0, 0, dn2_clid_to_lid(0xc02), 0, 1, 256 * KiB_,
             0x100000, 0x200000);
        rreq(B, 0, 0, DN2_OP_RVS, 0, 0, C->lid, 0, 1, 4096, 0x100000 + 128 * KiB_,
             0x200000);
        for (i = 0; i < 3; i++) {
            g_autofree char *w = g_strdup_printf("256 KiB RVS to group 0xc02 at %c",
                                                 f.b[i].name);
            st_expect(&f.b[i], 0, DN2_OP_RVS, 0, 0, B->lid, 0, 256 * KiB_, 0x200000,
                      T_LONG, w);
        }
        st_expect(C, 0, DN2_OP_RVS, 0, 0, B->lid, 0, 4096, 0x200000, T_SHORT,
                  "unicast after the multicast");
        sd_expect(A, 0, 0x200000, big, 256 * KiB_, "multicast data at A");
        sd_expect(B, 0, 0x200000, big, 256 * KiB_, "multicast data at B (own copy)");
        sd_expect(C, 0, 0x200000, big + 128 * KiB_, 4096,
                  "unicast after multicast: the later data wins at C");
        sd_expect(C, 0, 0x200000 + 4096, big + 4096, 256 * KiB_ - 4096,
                  "multicast data at C");
    }
out:
    fab_down(&f);
}

/* ------------------------------------------------------------------ */
/* Protection: PGID mismatch and missing processes                     */
/* ------------------------------------------------------------------ */

static void test_pgid(void)
{
    Fab f;
    Board *A, *B;
    uint8_t data[10000];
    struct dn2_hdr h;
    uint64_t pkts0;
    const char *w;

    if (!fab_up_ab(&f, NULL, 32 * MiB_, NULL, &A, &B)) {
        goto out;
    }
    /* B's WID 0 belongs to another group; its WID 1 has no process */
    dn2q_sr_rd(&B->d, DN2_SR_CTL_RESET);
    board_net_init(B, PG + 1, -1);
    dn2q_pattern(data, sizeof(data), 30);
    dn2q_sdfile_put(&A->mem, 0, 0, data, sizeof(data));
    pkts0 = dn2q_ur_rd(&B->d, 0, DN2_UR_PKT_COUNTER);

    w = "RVS with a PGID the receiver does not have";
    rreq(A, 0, 0, DN2_OP_RVS, 0, 0, B->lid, 0, 1, sizeof(data), 0, 0x10000);
    wait_pc(A, 0, DN2_PC_RVS, 1, T_SHORT, "the RVS left A");
    wait_qom(B, "stat-rx-drop-pgid", 3, T_SHORT, w);
    EXPECT_HEX(qom_u64(B, "stat-rx-drop-pgid"), 3, "%s: 3 packets counted", w);

    w = "BOTF with a PGID the receiver does not have";
    h = rvs_hdr(B->lid, 0x20000);
    h.pgid = PG + 1;            /* the NIC overwrites it with A's PGID0 */
    botf_send(A, 0, 0, &h, data, 32);
    wait_qom(B, "stat-rx-drop-pgid", 4, T_SHORT, w);

    w = "RVL from a requester of another group";
    rreq(A, 0, 0, DN2_OP_RVL, 0, 0, B->lid, 0, 1, 4096, 0, 0x30000);
    wait_qom(B, "stat-rx-drop-pgid", 5, T_SHORT, w);

    w = "RVS to a WID without a process";
    rreq(A, 0, 0, DN2_OP_RVS, 0, 0, B->lid, 1, 1, 100, 0, 0x10000);
    wait_qom(B, "stat-rx-drop-noproc", 1, T_SHORT, w);

    /* nothing written anywhere, no record, no packet counted */
    g_usleep(100 * 1000);
    sd_expect_zero(B, 0, 0x10000, sizeof(data), "PGID mismatch: nothing written");
    sd_expect_zero(B, 0, 0x20000, 32, "PGID mismatch (BOTF): nothing written");
    sd_expect_zero(B, 1, 0x10000, 100, "no process: nothing written");
    sd_expect_zero(A, 0, 0x30000, 4096, "refused RVL: no data back");
    st_expect_empty(B, 0, "PGID mismatch: no status record");
    st_expect_empty(B, 1, "no process: no status record");
    st_expect_empty(A, 0, "refused RVL: no status record");
    EXPECT_HEX(dn2q_ur_rd(&B->d, 0, DN2_UR_PKT_COUNTER), pkts0,
               "PGID mismatch: Packet Counter");
    EXPECT_HEX(dn2q_ur_rd(&B->d, 1, DN2_UR_PKT_COUNTER), 0, "no process: Packet Counter");
    EXPECT_HEX(qom_u64(B, "stat-rx-drop-pgid"), 5, "stat-rx-drop-pgid in the end");
    EXPECT_HEX(qom_u64(B, "stat-rx-drop-noproc"), 1, "stat-rx-drop-noproc in the end");
    EXPECT_HEX(qom_u64(B, "stat-rx-packets"), 0, "stat-rx-packets: nothing accepted");

    /* the same RVS once the groups agree */
    w = "RVS once the PGIDs agree";
    dn2q_sr_wr(&B->d, DN2_SR_PGID0, PG);
    rreq(A, 0, 0, DN2_OP_RVS, 0, 0, B->lid, 0, 1, sizeof(data), 0, 0x10000);
    st_expect(B, 0, DN2_OP_RVS, 0, 0, A->lid, 0, sizeof(data), 0x10000, T_SHORT, w);
    sd_expect(B, 0, 0x10000, data, sizeof(data), w);
    EXPECT_HEX(qom_u64(B, "stat-rx-drop-pgid"), 5, "%s: no new PGID drop", w);
out:
    fab_down(&f);
}

/* ------------------------------------------------------------------ */
/* Back-pressure                                                        */
/* ------------------------------------------------------------------ */

static void test_back_pressure(void)
{
    Fab f;
    Board *A, *B;
    const uint32_t big = 4 * MiB_;      /* 1028 packets: beyond the 512 credits */
    g_autofree uint8_t *data = g_malloc(big);
    unsigned i, rvs0;
    uint64_t ms, lo, up;
    const char *w;

    if (!fab_up_ab(&f, NULL, 32 * MiB_, NULL, &A, &B)) {
        goto out;
    }
    dn2q_pattern(data, big, 40);
    dn2q_sdfile_put(&A->mem, 0, 0x100000, data, big);
    /* the smallest status ring: 64 bytes, 3 usable records (choice #24) */
    dn2q_status_setup(&B->d, 0, ST_OFF, 0x01);

    w = "status ring full";
    for (i = 0; i < 4; i++) {
        rreq(A, 0, 0, DN2_OP_RVS, 0, 0, B->lid, 0, 1, 64, 0x100000 + i * 64, i * 64);
    }
    rreq(A, 0, 0, DN2_OP_RVS, 0, 0, B->lid, 0, 1, big, 0x100000, 0x800000);
    wait_pc(A, 0, DN2_PC_RVS, 4, T_SHORT, "the four small RVS left A");
    poll_ur(B, 0, DN2_UR_CTL_STATUS, DN2_CS_STATUS_FULL, DN2_CS_STATUS_FULL, T_SHORT,
            "receiver's status ring full (bit 3)");
    wait_qom(B, "stat-rx-stalls", 1, T_SHORT, "a receive stall counted");
    /* the sender runs out of credits and its Window Controller waits */
    g_usleep(300 * 1000);
    rvs0 = dn2q_pcf(&A->d, 0, DN2_PC_RVS);
    EXPECT_HEX(rvs0, 4, "%s: the big RVS has not completed on the sender", w);
    EXPECT_HEX(DN2_FGET(dn2q_ur_rd(&A->d, 0, DN2_UR_MODULE_STATE), DN2_MS_WC), 1 + DN2_OP_RVS,
               "%s: the sender's Window Controller waits in the RVS", w);
    ms = qom_u64(A, "stat-tx-packets");
    g_usleep(200 * 1000);
    EXPECT_HEX(qom_u64(A, "stat-tx-packets"), ms, "%s: the sender sends nothing more", w);
    EXPECT_TRUE(ms < 4 + 1028, "%s: the sender stalled before the end (%" PRIu64
                " packets sent)", w, ms);
    EXPECT_TRUE(qom_u64(A, "stat-exec-stalls") >= 1, "%s: stat-exec-stalls counts the wait", w);
    {
        /* a request behind the stalled one cannot run in its doorbell */
        uint64_t def0 = qom_u64(A, "stat-deferred");
        qtest_memwrite(A->d.qts, dn2q_ww_addr(&A->d, 0, 1), data, 64);
        issue(A, 0, 0, dn2_req_upper(DN2_WIN_SIZE, 0x1f00000),
              dn2_req_lower(DN2_OP_VS, 0, 0, 0, 0, 0, 64), false, 0);
        EXPECT_HEX(qom_u64(A, "stat-deferred"), def0 + 1,
                   "%s: stat-deferred counts the VS queued behind the RVS", w);
        EXPECT_HEX(dn2q_pcf(&A->d, 0, DN2_PC_VS), 0, "%s: the VS waits its turn", w);
    }
    sd_expect_zero(B, 0, 3 * 64, 64, "the refused 4th RVS is not written");
    sd_expect_zero(B, 0, 0x800000, 4096, "nothing of the big RVS is written yet");
    EXPECT_HEX(dn2q_ur_rd(&B->d, 0, DN2_UR_PKT_COUNTER), 3, "%s: Packet Counter = 3 accepted",
               w);

    /* free the ring: everything arrives, in order */
    w = "after the receiver frees its ring";
    for (i = 0; i < 4; i++) {
        g_autofree char *e = g_strdup_printf("%s: small RVS %u", w, i);
        st_expect(B, 0, DN2_OP_RVS, 0, 0, A->lid, 0, 64, i * 64, T_SHORT, e);
        sd_expect(B, 0, i * 64, data + i * 64, 64, e);
    }
    if (st_pop(B, 0, &lo, &up, T_LONG, "the big RVS's record")) {
        EXPECT_HEX(lo, dn2_req_lower(DN2_OP_RVS, 0, 0, dn2_lid_to_clid(A->lid), 0, 1, big),
                   "%s: big RVS record", w);
        EXPECT_HEX(up, 0x800000, "%s: big RVS record address", w);
    }
    sd_expect(B, 0, 0x800000, data, big, w);
    wait_pc(A, 0, DN2_PC_RVS, 5, T_SHORT, "the big RVS completes on the sender");
    wait_pc(A, 0, DN2_PC_VS, 1, T_SHORT, "the deferred VS ran after it");

    /* the same with the IPUSH ring: full ring -> stall -> head moves -> data */
    w = "IPUSH ring full";
    dn2q_status_setup(&B->d, 0, ST_OFF, ST_SIZE_REG);
    ipush_setup(B, A->lid, 0);
    {
        /* packets of 4080 bytes; one 8-byte slot stays free: the 32 KiB
         * ring takes `fit` packets, 40 KiB do not fit */
        const uint32_t fit = (RING_SIZE - DN2_RING_ALIGN) / 4080 * 4080;
        const uint32_t msg = 40 * KiB_;
        int64_t end;

        rreq(A, 0, 0, DN2_OP_IPUSH, 0, 0, B->lid, 0, 0, msg, 0x100000, 0);
        wait_pc(A, 0, DN2_PC_IPUSH, 1, T_SHORT, "the IPUSH left A");
        g_usleep(200 * 1000);
        EXPECT_HEX(amt_tail(B), fit, "%s: Tail stops when the ring is full", w);
        ring_expect(B, 0, data, fit, w);
        amt_set_head(B, fit);
        end = deadline(T_SHORT);
        while (amt_tail(B) != msg % RING_SIZE && now_ms() < end) {
            g_usleep(1000);
        }
        EXPECT_HEX(amt_tail(B), msg % RING_SIZE,
                   "%s: the rest arrives once Head moves (no register write: the "
                   "100 us check)", w);
        ring_expect(B, fit, data + fit, msg - fit, w);
    }
out:
    fab_down(&f);
}

/* ------------------------------------------------------------------ */
/* Faults: drop, duplicate, reorder in the switch                      */
/* ------------------------------------------------------------------ */

/* A large transfer: digests first, the byte report only if they differ. */
static void expect_digest(const char *what, const uint8_t *got, const uint8_t *want,
                          size_t len, uint64_t off)
{
    GChecksum *ck = g_checksum_new(G_CHECKSUM_SHA256);
    g_autofree char *h1 = NULL;

    g_checksum_update(ck, want, len);
    h1 = g_strdup(g_checksum_get_string(ck));
    g_checksum_reset(ck);
    g_checksum_update(ck, got, len);
    if (strcmp(h1, g_checksum_get_string(ck))) {
        dn2q_mem_eq(what, got, want, len, off);
    }
    g_checksum_free(ck);
}

static void test_faults(void)
{
    static const char *const args[] = {
        "--drop", "0.1", "--dup", "0.05", "--reorder", "0.1", "--seed", "1", NULL
    };
    Fab f;
    Board *A, *B;
    const uint32_t total = 8 * MiB_, chunk = 128 * KiB_;
    const unsigned nchunks = total / chunk;
    g_autofree uint8_t *data = g_malloc(total);
    g_autofree uint8_t *got = g_malloc(total);
    unsigned i;
    struct dn2_hdr h;
    int64_t t0;

    if (!fab_up_ab(&f, args, 32 * MiB_, NULL, &A, &B)) {
        goto out;
    }
    dn2q_pattern(data, total, 50);
    dn2q_sdfile_put(&A->mem, 0, 0, data, total);

    t0 = now_ms();
    for (i = 0; i < nchunks; i++) {
        rreq(A, 0, 0, DN2_OP_RVS, 0, 0, B->lid, 0, 1, chunk, i * chunk, 0x800000 + i * chunk);
    }
    /* the records come in issue order: exactly once, in order */
    for (i = 0; i < nchunks; i++) {
        uint64_t lo, up;
        if (!st_pop(B, 0, &lo, &up, T_LONG, "8 MiB through a faulty switch")) {
            break;
        }
        EXPECT_HEX(up, 0x800000 + i * chunk, "faults: record %u in order", i);
        EXPECT_HEX(lo, dn2_req_lower(DN2_OP_RVS, 0, 0, dn2_lid_to_clid(A->lid), 0, 1, chunk),
                   "faults: record %u", i);
    }
    g_test_message("8 MiB with 10%% drop, 5%% dup, 10%% reorder: %" PRId64 " ms",
                   now_ms() - t0);
    st_expect_empty(B, 0, "faults: one record per chunk");
    dn2q_sdfile_get(&B->mem, 0, 0x800000, got, total);
    expect_digest("8 MiB through a faulty switch", got, data, total, 0x800000);
    EXPECT_HEX(dn2q_ur_rd(&B->d, 0, DN2_UR_PKT_COUNTER), nchunks * 33,
               "faults: every packet accepted exactly once (33 per 128 KiB chunk)");

    /* small packets: 200 BOTFs, each exactly once and in order */
    for (i = 0; i < 200; i++) {
        uint8_t seq[8];
        stq_le_p(seq, i);
        h = rvs_hdr(B->lid, 0x100 + (i % 64) * 8);
        h.lflag = 1;
        wait_pc(A, 0, DN2_PC_BOTF, i, T_SHORT, "previous BOTF sent");
        botf_send(A, 0, 0, &h, seq, 8);
    }
    for (i = 0; i < 200; i++) {
        uint64_t lo, up;
        if (!st_pop(B, 0, &lo, &up, T_LONG, "BOTF through a faulty switch")) {
            break;
        }
        EXPECT_HEX(up, 0x100 + (i % 64) * 8, "faults: BOTF record %u in order", i);
    }
    st_expect_empty(B, 0, "faults: one record per BOTF");
    EXPECT_TRUE(switch_stat(&f.sw, "injected_drop") > 0,
                "the switch injected drops (--stats injected_drop=%" PRId64 ")",
                switch_stat(&f.sw, "injected_drop"));
    EXPECT_TRUE(switch_stat(&f.sw, "injected_dup") > 0, "the switch injected duplicates");
    EXPECT_TRUE(switch_stat(&f.sw, "injected_reorder") > 0, "the switch reordered");
    /* The boards' own view (QOM stat-link-*): B dropped the duplicates, A
     * resent what was lost, on SACK evidence or a timer. */
    EXPECT_TRUE(qom_u64(B, "stat-link-duplicates") > 0,
                "B counted duplicates (stat-link-duplicates=%" PRIu64 ")",
                qom_u64(B, "stat-link-duplicates"));
    EXPECT_TRUE(qom_u64(A, "stat-link-retransmits") > 0 &&
                qom_u64(A, "stat-link-fast-retransmits") + qom_u64(A, "stat-link-timeouts") > 0,
                "A retransmitted (retransmits=%" PRIu64 " fast=%" PRIu64 " timeouts=%" PRIu64 ")",
                qom_u64(A, "stat-link-retransmits"), qom_u64(A, "stat-link-fast-retransmits"),
                qom_u64(A, "stat-link-timeouts"));
out:
    fab_down(&f);
}

/* ------------------------------------------------------------------ */
/* Switch restart mid-transfer                                          */
/* ------------------------------------------------------------------ */

static void test_switch_restart(void)
{
    static const char *const args[] = { "--route", "switch", NULL };
    Fab f;
    Board *A, *B;
    const uint32_t chunk = MiB_, nchunks = 48;
    const uint64_t total = (uint64_t)chunk * nchunks;
    g_autofree uint8_t *data = g_malloc(total);
    g_autofree uint8_t *got = g_malloc(total);
    uint16_t la, lb;
    unsigned i, done = 0;
    int port;
    uint64_t rx_at_kill;

    if (!fab_up_ab(&f, args, 256 * MiB_, NULL, &A, &B)) {
        goto out;
    }
    la = A->lid;
    lb = B->lid;
    dn2q_pattern(data, total, 60);
    dn2q_sdfile_put(&A->mem, 0, 0, data, total);
    for (i = 0; i < nchunks; i++) {
        rreq(A, 0, 0, DN2_OP_RVS, 0, 0, B->lid, 0, 1, chunk, i * chunk,
             0x3000000 + i * chunk);
        if (i == 2) {
            /* some data has crossed the switch: kill it */
            wait_qom(B, "stat-rx-bytes", 256 * KiB_, T_SHORT, "data before the kill");
            port = f.sw.port;
            switch_stop(&f.sw, SIGKILL);
            rx_at_kill = qom_u64(B, "stat-rx-bytes");
            g_test_message("switch killed after %" PRIu64 " bytes received", rx_at_kill);
            EXPECT_TRUE(rx_at_kill < total, "the kill happens mid-transfer");
            g_usleep(300 * 1000);
            if (!switch_start(&f.sw, port, args)) {
                goto out;
            }
        }
    }
    for (i = 0; i < nchunks; i++) {
        uint64_t lo, up;
        if (!st_pop(B, 0, &lo, &up, T_LONG, "48 MiB over a switch restart")) {
            break;
        }
        EXPECT_HEX(up, 0x3000000 + i * chunk, "restart: record %u in order", i);
        done++;
    }
    EXPECT_HEX(done, nchunks, "restart: every chunk completed");
    st_expect_empty(B, 0, "restart: one record per chunk");
    dn2q_sdfile_get(&B->mem, 0, 0x3000000, got, total);
    expect_digest("48 MiB over a switch restart", got, data, total, 0x3000000);
    board_wait_link(A, T_SHORT);
    board_wait_link(B, T_SHORT);
    EXPECT_HEX(A->lid, la, "board A keeps its LID over the restart");
    EXPECT_HEX(B->lid, lb, "board B keeps its LID over the restart");
    /* and traffic flows both ways afterwards */
    rreq(B, 0, 0, DN2_OP_RVS, 0, 0, A->lid, 0, 1, 4096, 0x3000000, 0x7000000);
    st_expect(A, 0, DN2_OP_RVS, 0, 0, B->lid, 0, 4096, 0x7000000, T_SHORT,
              "B->A after the restart");
    sd_expect(A, 0, 0x7000000, data, 4096, "B->A after the restart");
out:
    fab_down(&f);
}

/* ------------------------------------------------------------------ */
/* Hostile datagrams at a board's socket                                */
/* ------------------------------------------------------------------ */

static int free_udp_port(void)
{
    struct dn2f_addr a;
    int fd, port;

    dn2f_addr_parse(&a, "127.0.0.1:0");
    fd = dn2f_udp_open(&a, 0);
    g_assert_cmpint(fd, >=, 0);
    port = dn2f_addr_port(&a);
    close(fd);
    return port;
}

static void raw_send(int fd, const struct dn2f_addr *to, const void *buf, size_t len)
{
    ssize_t r = sendto(fd, buf, len, 0, &to->u.sa, to->len);

    if (r < 0 && errno != EAGAIN && errno != ENOBUFS && errno != EMSGSIZE) {
        g_test_message("sendto: %s", strerror(errno));
    }
}

/* Receive one decodable datagram within ms; 0 = nothing. */
static size_t raw_recv(int fd, uint8_t *buf, size_t cap, struct dn2f_msg *m, int ms)
{
    int64_t end = now_ms() + ms;

    while (now_ms() < end) {
        struct pollfd p = { .fd = fd, .events = POLLIN };
        ssize_t n;
        if (poll(&p, 1, MAX(1, (int)(end - now_ms()))) <= 0) {
            continue;
        }
        n = recv(fd, buf, cap, 0);
        if (n > 0 && dn2f_decode(buf, n, m) == 0) {
            return n;
        }
    }
    return 0;
}

/* A hostile board: registers with the switch like a board does (HELLO),
 * learns the victim's epoch and address from ROUTES, then talks to the
 * victim directly with fabric-valid datagrams. */
typedef struct RawPeer {
    int fd;
    struct dn2f_addr sw;
    uint64_t epoch;
    uint16_t lid;
    struct dn2f_addr victim_addr;
    uint16_t victim_lid;
    uint64_t victim_epoch;
    uint32_t seq[DN2F_NUM_LANES];   /* next sequence number, per lane (DWID) */
    uint64_t guid, sw_epoch;
    uint32_t sess;                  /* our session toward the victim */
    uint32_t victim_sess;           /* the victim's toward us (0: not known) */
} RawPeer;

static unsigned rawpeer_count;

static bool rawpeer_register(RawPeer *rp, int sw_port, uint16_t victim)
{
    g_autofree uint8_t *buf = g_malloc(DN2F_DGRAM_MAX);
    g_autofree char *sws = g_strdup_printf("127.0.0.1:%d", sw_port);
    struct dn2f_addr me;
    struct dn2f_ticket ticket;
    bool joined = false, have_ticket = false;
    int64_t end = now_ms() + T_SHORT, next = 0;

    memset(rp, 0, sizeof(*rp));
    rawpeer_count++;
    dn2f_addr_parse(&me, "127.0.0.1:0");
    rp->fd = dn2f_udp_open(&me, 0);
    g_assert_cmpint(rp->fd, >=, 0);
    dn2f_addr_parse(&rp->sw, sws);
    rp->epoch = 0x4057113e00000000ULL | ((uint64_t)getpid() << 8) | rawpeer_count;
    /* a GUID of its own per hostile peer */
    rp->guid = 0xbadbad0000000000ULL | ((uint64_t)getpid() << 16) | rawpeer_count;
    rp->sess = 1;
    rp->victim_lid = victim;
    /* HELLO -> ASSIGN (a ticket) -> KEEPALIVE with the ticket -> we are a
     * port, in the ROUTES with the victim (docs/fabric.md) */
    while (now_ms() < end && !(joined && rp->victim_epoch)) {
        struct dn2f_msg m;
        if (now_ms() >= next) {
            struct dn2f_wbuf w;
            dn2f_wbuf_init(&w, buf, 256);
            if (!have_ticket) {
                struct dn2f_hello hl = { .guid = rp->guid, .lid_hint = 0 };
                dn2f_put_hdr(&w, DN2F_T_HELLO, 0, 0, 0, rp->epoch, 0);
                dn2f_put_hello(&w, &hl);
            } else {
                dn2f_put_hdr(&w, DN2F_T_KEEPALIVE, 0, rp->lid, 0, rp->epoch, rp->sw_epoch);
                dn2f_put_keepalive(&w, 0xffffffffu, rp->guid, joined ? NULL : &ticket);
            }
            raw_send(rp->fd, &rp->sw, buf, dn2f_finish(&w));
            next = now_ms() + (have_ticket ? 50 : 100);
        }
        if (!raw_recv(rp->fd, buf, DN2F_DGRAM_MAX, &m, 20)) {
            continue;
        }
        if (m.h.type == DN2F_T_ASSIGN) {
            rp->lid = m.u.assign.lid;
            rp->sw_epoch = m.h.src_epoch;
            ticket = m.u.assign.ticket;
            have_ticket = true;
            next = 0;
        } else if (m.h.type == DN2F_T_ROUTES) {
            struct dn2f_iter it;
            struct dn2f_route r;
            dn2f_routes_iter(&m, &it);
            while (dn2f_routes_next_route(&it, &r)) {
                if (r.lid == rp->lid) {
                    joined = true;
                }
                if (r.lid == victim && (r.flags & DN2F_RT_DIRECT)) {
                    rp->victim_epoch = r.epoch;
                    rp->victim_addr = r.addr;
                }
            }
        }
    }
    if (!joined || !rp->victim_epoch) {
        g_test_message("FAIL hostile peer: not joined (LID 0x%x) or no route to the victim",
                       rp->lid);
        g_test_fail();
        return false;
    }
    return true;
}

/* Send DIMMnet-2 packets to the victim in its stream, one datagram, and
 * wait for the victim's cumulative ACK; resend while it does not come
 * (the victim may not have our route yet). */
static bool rawpeer_send(RawPeer *rp, uint8_t **pkts, const size_t *lens, unsigned n,
                         uint64_t src_epoch, uint64_t dst_epoch, int from_fd,
                         bool want_ack)
{
    g_autofree uint8_t *buf = g_malloc(DN2F_DGRAM_MAX);
    g_autofree uint8_t *rbuf = g_malloc(DN2F_DGRAM_MAX);
    int64_t end = now_ms() + (want_ack ? 2000 : 0), next = 0;
    unsigned cnt[DN2F_NUM_LANES] = { 0 };
    bool acked[DN2F_NUM_LANES] = { false };
    unsigned i, l;

    for (i = 0; i < n; i++) {
        cnt[dn2f_pkt_dwid(pkts[i])]++;
    }
    for (l = 0; l < DN2F_NUM_LANES; l++) {
        acked[l] = !cnt[l];
    }
    do {
        if (now_ms() >= next) {
            struct dn2f_wbuf w;
            unsigned k[DN2F_NUM_LANES] = { 0 };
            dn2f_wbuf_init(&w, buf, DN2F_DGRAM_MAX);
            dn2f_put_hdr(&w, DN2F_T_DATA, 0, rp->lid, rp->victim_lid, src_epoch, dst_epoch);
            dn2f_hdr_set_sessions(&w, rp->sess, rp->victim_sess);
            for (i = 0; i < n; i++) {
                /* each packet in the lane of its DWID, with that lane's seq */
                l = dn2f_pkt_dwid(pkts[i]);
                g_assert_true(dn2f_put_rec(&w, DN2F_REC_UNICAST, l ? DN2F_RF_LANE1 : 0,
                                           rp->seq[l] + k[l]++, 0, 0, NULL, NULL, NULL,
                                           pkts[i], lens[i]));
            }
            raw_send(from_fd, &rp->victim_addr, buf, dn2f_finish(&w));
            next = now_ms() + 100;
        }
        while (want_ack) {
            struct dn2f_msg m;
            const struct dn2f_acks *as = NULL;
            if (!raw_recv(rp->fd, rbuf, DN2F_DGRAM_MAX, &m, 10)) {
                break;
            }
            if (m.h.type == DN2F_T_ACK) {
                as = &m.u.acks;
            } else if (m.h.type == DN2F_T_DATA) {
                as = &m.u.data.acks;
            }
            if (as && m.h.src_lid == rp->victim_lid && m.h.src_sess != rp->victim_sess) {
                rp->victim_sess = m.h.src_sess;     /* learnt: send with it */
                next = 0;
            }
            for (i = 0; as && m.h.src_lid == rp->victim_lid && i < as->n; i++) {
                l = as->a[i].lane;
                if (cnt[l] && as->a[i].cum >= rp->seq[l] + cnt[l]) {
                    acked[l] = true;
                }
            }
            if (acked[0] && acked[1]) {
                for (l = 0; l < DN2F_NUM_LANES; l++) {
                    rp->seq[l] += cnt[l];
                }
                return true;
            }
        }
    } while (now_ms() < end);
    if (want_ack) {
        g_test_message("FAIL hostile peer: the victim did not acknowledge seq %u.. (lane 0) / "
                       "%u.. (lane 1)", rp->seq[0], rp->seq[1]);
        g_test_fail();
    }
    return false;
}

static uint8_t *rvs_pkt(size_t *len, uint16_t dlid, uint8_t pgid, int dwid,
                        uint32_t dst, const void *data, size_t dlen)
{
    uint8_t *p = g_malloc0(DN2_PKT_MAX);
    struct dn2_hdr h = rvs_hdr(dlid, dst);

    h.pgid = pgid;
    h.dwid = dwid;
    *len = mkpkt(p, &h, data, dlen);
    return p;
}

/* Sum of the device's fabric-level drop counters, or -1 if it exposes none
 * (the Receive Controller's stat-rx-drop-* count DIMMnet-2 packets only). */
static int64_t link_drops(Board *b)
{
    g_autoptr(GPtrArray) names = qom_props(b);
    int64_t sum = -1;
    guint i;

    for (i = 0; i < names->len; i++) {
        const char *nm = g_ptr_array_index(names, i);
        if (g_str_has_prefix(nm, "stat-") && strstr(nm, "drop") &&
            !g_str_has_prefix(nm, "stat-rx-drop-") && strcmp(nm, "stat-tx-drops")) {
            sum = MAX(sum, 0) + (int64_t)qom_u64(b, nm);
        }
    }
    return sum;
}

/*
 * coalesce-us > 0 (the default 100): BOTFs to a peer that still has
 * packets in flight wait for its ACK and leave together; coalesce-us=0
 * sends each Window Controller run at once.  (The case waits a second, as
 * qtest commands are far slower than a guest's stores.)  B is stopped (SIGSTOP) while A sends, so
 * no ACK comes back: with coalescing the first BOTF leaves alone and the
 * rest in few datagrams; without, one datagram each (and retransmissions).
 * Either way every byte arrives once B runs again.
 */
static void coalesce_case(bool on)
{
    enum { N = 12, LEN = DN2_BOTF_MAX - 16 };
    Fab f;
    Board *A, *B;
    uint8_t data[N][LEN];
    struct dn2_hdr h;
    uint64_t pk0, dg0, rt0, pk, dg, rt;
    unsigned i;
    const char *w = on ? "coalesce-us=1000000" : "coalesce-us=0";

    g_board_props = on ? ",coalesce-us=1000000" : ",coalesce-us=0";
    if (!fab_up_ab(&f, NULL, 32 * MiB_, NULL, &A, &B)) {
        goto out;
    }
    pk0 = qom_u64(A, "stat-tx-packets");
    dg0 = qom_u64(A, "stat-link-dgrams-tx");
    rt0 = qom_u64(A, "stat-link-retransmits");
    kill(qtest_pid(B->d.qts), SIGSTOP);
    for (i = 0; i < N; i++) {
        dn2q_pattern(data[i], LEN, 80 + i);
        h = rvs_hdr(B->lid, 0x10000 + i * LEN);
        h.eflag = i == N - 1;
        botf_send(A, 0, i % DN2_NUM_WW, &h, data[i], LEN);
    }
    pk = qom_u64(A, "stat-tx-packets") - pk0;
    dg = qom_u64(A, "stat-link-dgrams-tx") - dg0;
    rt = qom_u64(A, "stat-link-retransmits") - rt0;
    kill(qtest_pid(B->d.qts), SIGCONT);
    g_test_message("%s: %" PRIu64 " datagrams for %" PRIu64 " packets, %" PRIu64
                   " of them retransmission probes", w, dg, pk, rt);
    EXPECT_HEX(pk, N, "%s: A sent %u packets", w, N);
    if (on) {
        /* On an idle host: the first alone, the rest together (2).  On a
         * loaded one the qtest's sends are milliseconds apart, long enough
         * for the endpoint's timer to run between them: an expiry sends a
         * probe datagram of its own, and any input or timer flushes what
         * waits (the full suite, tests in parallel, saw 8 datagrams, and
         * 6 with six busy loops beside it).  Without coalescing it is
         * always one datagram per packet or more. */
        EXPECT_TRUE(dg - MIN(rt, dg) < N, "%s: %" PRIu64 " datagrams (%" PRIu64
                    " of them probes) for %u packets to a silent peer: some "
                    "packets shared a datagram", w, dg, rt, N);
    } else {
        EXPECT_TRUE(dg >= N, "%s: %" PRIu64 " datagrams for %u packets (one each)", w,
                    dg, N);
    }
    st_expect(B, 0, DN2_OP_RVS, 0, 0, A->lid, 0, LEN, 0x10000 + (N - 1) * LEN, T_SHORT, w);
    for (i = 0; i < N; i++) {
        sd_expect(B, 0, 0x10000 + i * LEN, data[i], LEN, w);
    }
out:
    g_board_props = "";
    fab_down(&f);
}

static void test_coalesce_on(void)
{
    coalesce_case(true);
}

static void test_coalesce_off(void)
{
    coalesce_case(false);
}

/*
 * A hostile network: one path per behaviour, each on a fresh pair of
 * boards (B with no process at WID 1), ending with legitimate traffic both
 * ways.  hostile_up() opens the raw socket the attacker sends from.
 */
typedef struct Hostile {
    Fab f;
    Board *A, *B;
    int ports[2];
    int fd;
    uint16_t lid_b;
    struct dn2f_addr me, victim;
    uint8_t marker[64];
} Hostile;

static bool hostile_up(Hostile *t)
{
    g_autofree char *vs = NULL;

    memset(t, 0, sizeof(*t));
    t->fd = -1;
    t->ports[1] = free_udp_port();
    if (!fab_up_ab(&t->f, NULL, 32 * MiB_, t->ports, &t->A, &t->B)) {
        return false;
    }
    t->lid_b = t->B->lid;
    /* B's WID 1 has no process */
    dn2q_sr_rd(&t->B->d, DN2_SR_CTL_RESET);
    board_net_init(t->B, PG, -1);
    vs = g_strdup_printf("127.0.0.1:%d", t->ports[1]);
    dn2f_addr_parse(&t->victim, vs);
    dn2f_addr_parse(&t->me, "127.0.0.1:0");
    t->fd = dn2f_udp_open(&t->me, 0);
    g_assert_cmpint(t->fd, >=, 0);
    dn2q_pattern(t->marker, sizeof(t->marker), 70);
    return true;
}

/* Legitimate traffic still flows both ways; then everything goes down. */
static void hostile_down(Hostile *t)
{
    Board *A = t->A, *B = t->B;
    uint8_t data[256];

    if (A && B) {
        EXPECT_TRUE(qtest_probe_child(B->d.qts), "QEMU B still running");
        dn2q_pattern(data, sizeof(data), 72);
        dn2q_sdfile_put(&A->mem, 0, 0x5000, data, sizeof(data));
        rreq(A, 0, 0, DN2_OP_RVS, 0, 0, B->lid, 0, 1, sizeof(data), 0x5000, 0x6000);
        st_expect(B, 0, DN2_OP_RVS, 0, 0, A->lid, 0, sizeof(data), 0x6000, T_SHORT,
                  "A->B after the hostile traffic");
        sd_expect(B, 0, 0x6000, data, sizeof(data), "A->B after the hostile traffic");
        rreq(B, 0, 0, DN2_OP_RVS, 0, 0, A->lid, 0, 1, sizeof(data), 0x6000, 0x7000);
        st_expect(A, 0, DN2_OP_RVS, 0, 0, B->lid, 0, sizeof(data), 0x7000, T_SHORT,
                  "B->A after the hostile traffic");
        sd_expect(A, 0, 0x7000, data, sizeof(data), "B->A after the hostile traffic");
    }
    if (t->fd >= 0) {
        close(t->fd);
    }
    fab_down(&t->f);
}

/* An unregistered socket: garbage, truncated and forged datagrams, a forged
 * BYE and forged DATA; all dropped and counted by the fabric layer. */
static void test_hostile_garbage(void)
{
    Hostile t;
    Board *A, *B;
    int fd, i, k;
    g_autofree uint8_t *buf = g_malloc(DN2F_DGRAM_MAX);
    GRand *r = g_rand_new_with_seed(1234);
    uint16_t lid_b;
    int64_t drops0, drops1;
    uint64_t rx0, rx1;
    uint8_t *pk[1], *marker = t.marker;
    size_t pl[1];
    struct dn2f_addr victim;

    if (!hostile_up(&t)) {
        goto out;
    }
    A = t.A;
    B = t.B;
    fd = t.fd;
    lid_b = t.lid_b;
    victim = t.victim;
    drops0 = link_drops(B);
    rx0 = qom_u64(B, "stat-link-dgrams-rx");

    for (i = 0; i < 2000; i++) {
        size_t n = g_rand_int_range(r, 0, 2048);
        for (k = 0; k < (int)n; k++) {
            buf[k] = g_rand_int_range(r, 0, 256);
        }
        if (i % 4 == 1 && n >= 4) {
            stl_le_p(buf, DN2F_MAGIC);         /* right magic, junk after it */
        }
        if (i % 4 == 2 && n >= DN2F_HDR_LEN) { /* a plausible header, bad body */
            struct dn2f_wbuf wb;
            dn2f_wbuf_init(&wb, buf, DN2F_HDR_LEN);
            dn2f_put_hdr(&wb, g_rand_int_range(r, 0, 16), g_rand_int_range(r, 0, 4),
                         A->lid, lid_b, g_rand_int(r), g_rand_int(r));
            stl_le_p(buf + 12, n);
        }
        raw_send(fd, &victim, buf, n);
        if (i % 200 == 0) {
            g_usleep(1000);     /* let the board's socket drain */
        }
    }
    raw_send(fd, &victim, buf, DN2F_DGRAM_MAX);     /* the largest datagram */
    {
        /* a BYE "from the switch" from the wrong address: ignored */
        struct dn2f_wbuf wb;
        dn2f_wbuf_init(&wb, buf, 64);
        dn2f_put_hdr(&wb, DN2F_T_BYE, 0, 0, lid_b, 1, 0);
        dn2f_put_u32pair(&wb, DN2F_BYE_SHUTDOWN, 0);
        raw_send(fd, &victim, buf, dn2f_finish(&wb));
        /* DATA claiming to come from board A, from our address: an RVS
         * that would write the marker */
        dn2f_wbuf_init(&wb, buf, DN2F_DGRAM_MAX);
        dn2f_put_hdr(&wb, DN2F_T_DATA, 0, A->lid, lid_b, 0, 0);
        pk[0] = rvs_pkt(&pl[0], lid_b, PG, 0, 0x1000, marker, sizeof(t.marker));
        for (k = 0; k < 8; k++) {
            dn2f_put_rec(&wb, DN2F_REC_UNICAST, 0, k, 0, 0, NULL, NULL, NULL, pk[0], pl[0]);
        }
        raw_send(fd, &victim, buf, dn2f_finish(&wb));
        g_free(pk[0]);
    }
    g_usleep(200 * 1000);
    EXPECT_TRUE(qtest_probe_child(B->d.qts), "QEMU B survived the garbage");
    board_wait_link(B, T_SHORT);
    EXPECT_HEX(B->lid, lid_b, "B keeps its link and LID after garbage and a forged BYE");
    sd_expect_zero(B, 0, 0x1000, sizeof(t.marker), "forged DATA did not write anything");
    st_expect_empty(B, 0, "forged DATA: no status record");
    drops1 = link_drops(B);
    rx1 = qom_u64(B, "stat-link-dgrams-rx");
    if (drops0 < 0) {
        g_test_message("FAIL the device exposes no fabric-level drop counter in QOM "
                       "(stat-* with 'drop' besides stat-rx-drop-*/stat-tx-drops): the "
                       "endpoint's dn2f_ep_stats.drop[] is invisible");
        g_test_fail();
    } else {
        /* Every datagram that reached B's socket was dropped and counted,
         * but for the switch's own few (keepalives); under valgrind some of
         * the 2000 overflow the socket before B reads them. */
        EXPECT_TRUE(rx1 - rx0 >= 500, "most of the 2000 garbage datagrams reached B "
                    "(%" PRIu64 ")", rx1 - rx0);
        EXPECT_TRUE((uint64_t)(drops1 - drops0) + 100 >= rx1 - rx0,
                    "fabric drop counters grew with every datagram received (%" PRId64
                    " -> %" PRId64 " for %" PRIu64 " received)", drops0, drops1, rx1 - rx0);
    }

out:
    g_rand_free(r);
    hostile_down(&t);
}

/* The eight bad packets for B (lid_b): (a)-(e) malformed, (f) wrong PGID,
 * (g) a WID without a process, (h) an LHS continuation without its start. */
static void bad_packets_build(uint8_t **pk, size_t *pl, uint16_t lid_b, const uint8_t *data)
{
    struct dn2_hdr h;

    /* (a) TYPE BOTF is not a packet type */
    memset(&h, 0, sizeof(h));
    h.type = DN2_OP_BOTF;
    h.dlid = lid_b;
    h.pgid = PG;
    h.eflag = 1;
    h.w1_lo = h.w1_hi = 0x2000;
    pk[0] = g_malloc0(DN2_PKT_MAX);
    pl[0] = mkpkt(pk[0], &h, data, 64);
    /* (b) RVS with hflag set */
    h.type = DN2_OP_RVS;
    h.hflag = 1;
    pk[1] = g_malloc0(DN2_PKT_MAX);
    pl[1] = mkpkt(pk[1], &h, data, 64);
    /* (c) RVL carrying data */
    memset(&h, 0, sizeof(h));
    h.type = DN2_OP_RVL;
    h.hflag = 1;
    h.dlid = lid_b;
    h.pgid = PG;
    h.total = 64;
    pk[2] = g_malloc0(DN2_PKT_MAX);
    pl[2] = mkpkt(pk[2], &h, data, 64);
    /* (d) Packet Size beyond the packet */
    memset(&h, 0, sizeof(h));
    h.type = DN2_OP_RVS;
    h.dlid = lid_b;
    h.pgid = PG;
    h.eflag = 1;
    h.size = 1000;
    h.w1_lo = h.w1_hi = 0x2000;
    pk[3] = g_malloc0(DN2_PKT_MAX);
    pl[3] = mkpkt(pk[3], &h, data, 64);
    /* (e) RVSS whose Iteration needs more data than it carries */
    memset(&h, 0, sizeof(h));
    h.type = DN2_OP_RVSS;
    h.hflag = 1;
    h.dtype = DN2_DTYPE_8B;
    h.iter = 200;
    h.dlid = lid_b;
    h.pgid = PG;
    h.eflag = 1;
    h.w1_lo = 0x2000;
    h.total = 1600;
    h.stride = 8;
    pk[4] = g_malloc0(DN2_PKT_MAX);
    pl[4] = mkpkt(pk[4], &h, data, 64);
    /* (f) wrong PGID, (g) a WID without a process */
    pk[5] = rvs_pkt(&pl[5], lid_b, PG ^ 0xff, 0, 0x2000, data, 64);
    pk[6] = rvs_pkt(&pl[6], lid_b, PG, 1, 0x2000, data, 64);
    /* (h) an LHS continuation without its start (no IPUSH ring: noproc) */
    memset(&h, 0, sizeof(h));
    h.type = DN2_OP_IPUSH;
    h.lflag = 1;
    h.dlid = lid_b;
    h.pgid = PG;
    h.w1_lo = 1000;
    h.w1_hi = 500;
    pk[7] = g_malloc0(DN2_PKT_MAX);
    pl[7] = mkpkt(pk[7], &h, data, 64);
}

/* A run of the bad packets from a registered peer, and the counter each
 * kind of drop goes to. */
typedef struct BadCase {
    const char *path;
    int first, n;                   /* packets [first, first + n) */
    uint64_t bad, pgid, noproc;     /* the drops they count */
} BadCase;

/* direct children of /hostile: the memcheck suite runs that path's own
 * cases (-p does not descend into a nested suite) */
static const BadCase bad_cases[] = {
    { "/dimmnet2-fabric/hostile/bad-packets-malformed", 0, 5, 5, 0, 0 },
    { "/dimmnet2-fabric/hostile/bad-packets-wrong-pgid", 5, 1, 0, 1, 0 },
    { "/dimmnet2-fabric/hostile/bad-packets-no-process", 6, 2, 0, 0, 2 },
};

/* A registered peer with fabric-valid datagrams carrying bad DIMMnet-2
 * packets: the Receive Controller drops and counts each under its reason,
 * sets the receive error state the thesis defines, writes nothing.  Each
 * path sends one kind of bad packet (one row of bad_cases[]). */
static void test_hostile_bad_packets(const void *opaque)
{
    static const unsigned want_err[8] = {
        0, DN2_RX_ERR_HFLAG, DN2_RX_ERR_RVL_DATA, DN2_RX_ERR_EARLY_SOP,
        DN2_RX_ERR_EARLY_SOP, 0, 0, 0,
    };
    const BadCase *c = opaque;
    Hostile t;
    Board *B;
    int k;
    uint8_t data[256];
    RawPeer rp;
    uint8_t *pk[8];
    size_t pl[8];
    uint64_t bad0, pgid0, noproc0, acc0;
    const char *w = "bad packets from a registered peer";

    if (!hostile_up(&t)) {
        goto out;
    }
    B = t.B;
    if (!rawpeer_register(&rp, t.f.sw.port, t.lid_b)) {
        goto out;
    }
    bad0 = qom_u64(B, "stat-rx-drop-bad");
    pgid0 = qom_u64(B, "stat-rx-drop-pgid");
    noproc0 = qom_u64(B, "stat-rx-drop-noproc");
    acc0 = qom_u64(B, "stat-rx-packets");
    dn2q_pattern(data, sizeof(data), 71);
    bad_packets_build(pk, pl, t.lid_b, data);

    for (k = c->first; k < c->first + c->n; k++) {
        rawpeer_send(&rp, &pk[k], &pl[k], 1, rp.epoch, rp.victim_epoch, rp.fd, true);
        if (want_err[k]) {
            EXPECT_HEX(dn2_cs_rx_err(dn2q_cs(&B->d, 0)), want_err[k],
                       "%s: packet %d sets receive error state", w, k);
        }
    }
    EXPECT_HEX(qom_u64(B, "stat-rx-drop-bad") - bad0, c->bad, "%s: stat-rx-drop-bad", w);
    EXPECT_HEX(qom_u64(B, "stat-rx-drop-pgid") - pgid0, c->pgid, "%s: stat-rx-drop-pgid", w);
    EXPECT_HEX(qom_u64(B, "stat-rx-drop-noproc") - noproc0, c->noproc,
               "%s: stat-rx-drop-noproc", w);
    EXPECT_HEX(qom_u64(B, "stat-rx-packets"), acc0, "%s: none accepted", w);
    sd_expect_zero(B, 0, 0x2000, 2048, "bad packets wrote nothing (WID 0)");
    sd_expect_zero(B, 1, 0x2000, 64, "bad packets wrote nothing (WID 1)");
    st_expect_empty(B, 0, w);
    for (k = 0; k < 8; k++) {
        g_free(pk[k]);
    }

    close(rp.fd);
out:
    hostile_down(&t);
}

/* A right packet with a stale epoch, a stale victim epoch, or from a
 * forged address is dropped by the fabric layer; the right one is written. */
static void test_hostile_forged(void)
{
    Hostile t;
    Board *B;
    int fd;
    uint16_t lid_b;
    RawPeer rp;
    uint8_t *pk[1], *marker = t.marker;
    size_t pl[1];

    if (!hostile_up(&t)) {
        goto out;
    }
    B = t.B;
    fd = t.fd;
    lid_b = t.lid_b;
    if (!rawpeer_register(&rp, t.f.sw.port, lid_b)) {
        goto out;
    }
    /* a right packet with a wrong epoch, then from a wrong address:
     * dropped by the fabric layer; then the right one: written */
    pk[0] = rvs_pkt(&pl[0], lid_b, PG, 0, 0x1000, marker, sizeof(t.marker));
    rawpeer_send(&rp, pk, pl, 1, rp.epoch ^ 1, rp.victim_epoch, rp.fd, false);
    rawpeer_send(&rp, pk, pl, 1, rp.epoch, rp.victim_epoch ^ 1, rp.fd, false);
    rawpeer_send(&rp, pk, pl, 1, rp.epoch, rp.victim_epoch, fd, false);
    g_usleep(100 * 1000);
    sd_expect_zero(B, 0, 0x1000, sizeof(t.marker),
                   "stale epochs / forged address: nothing written");
    rawpeer_send(&rp, pk, pl, 1, rp.epoch, rp.victim_epoch, rp.fd, true);
    st_expect(B, 0, DN2_OP_RVS, 0, 0, rp.lid, 0, sizeof(t.marker), 0x1000, T_SHORT,
              "the hostile peer's valid packet");
    sd_expect(B, 0, 0x1000, marker, sizeof(t.marker), "the hostile peer's valid packet");
    g_free(pk[0]);
    close(rp.fd);

out:
    hostile_down(&t);
}

/* ------------------------------------------------------------------ */
/* Resets and hostile requesters                                       */
/* ------------------------------------------------------------------ */

/* An RVS of len bytes from `from`'s WID 0 SO-DIMM src to `to`'s WID dwid at
 * dst, with a status record: check the record and the bytes (data). */
static void rvs_check(Board *from, Board *to, int dwid, uint32_t len, uint32_t src,
                      uint32_t dst, const uint8_t *data, const char *what)
{
    rreq(from, 0, 0, DN2_OP_RVS, 0, 0, to->lid, dwid, 1, len, src, dst);
    st_expect(to, dwid, DN2_OP_RVS, 0, 0, from->lid, 0, len, dst, T_SHORT, what);
    sd_expect(to, dwid, dst, data, len, what);
}

/* A and B up; A's WID 0 SO-DIMM 0x100000 holds data (seed); B's WID 0 has
 * a 3-record status ring and A sends it 6 small RVS with records, so that
 * B holds A's lane back.  False when the fabric did not come up. */
static bool hold_b_wid0(Fab *f, Board **A, Board **B, uint8_t *data, size_t len,
                        uint32_t seed, const char *what)
{
    int i;

    if (!fab_up_ab(f, NULL, 32 * MiB_, NULL, A, B)) {
        return false;
    }
    dn2q_pattern(data, len, seed);
    dn2q_sdfile_put(&(*A)->mem, 0, 0x100000, data, len);
    dn2q_status_setup(&(*B)->d, 0, ST_OFF, 0x01);
    for (i = 0; i < 6; i++) {
        rreq(*A, 0, 0, DN2_OP_RVS, 0, 0, (*B)->lid, 0, 1, 64, 0x100000, i * 64);
    }
    return wait_qom(*B, "stat-rx-stalls", 1, T_SHORT, what);
}

/*
 * B holds A's stream (its status ring is full) and gets a Controller
 * Reset, the first step of every driver load.  The packets it held are
 * dropped and counted (no process is set up at that moment), and A's
 * stream flows again: nothing waits for a resume that never comes.
 */
static void test_reset_backpressured(void)
{
    Fab f;
    Board *A, *B;
    uint8_t data[256];
    uint64_t noproc0;

    if (!hold_b_wid0(&f, &A, &B, data, sizeof(data), 80,
                     "B's full ring holds A's stream")) {
        goto out;
    }
    noproc0 = qom_u64(B, "stat-rx-drop-noproc");
    dn2q_sr_rd(&B->d, DN2_SR_CTL_RESET);
    board_net_init(B, PG, PG);
    wait_qom(B, "stat-rx-drop-noproc", noproc0 + 1, T_SHORT,
             "the held packets are dropped and counted by the reset");
    rvs_check(A, B, 0, 256, 0x100000, 0x20000, data,
              "an RVS from A after B's Controller Reset");
out:
    fab_down(&f);
}

/*
 * A guest reboot (system_reset) of B: the cable stays plugged, so the SMA
 * shows the same LID, link ready, at once; after the driver's bring-up
 * both directions work and nothing is dropped as "not for this LID".
 */
static void test_reboot_keeps_link(void)
{
    Fab f;
    Board *A, *B;
    uint8_t data[512];
    uint16_t lid;
    uint64_t route0;

    if (!fab_up_ab(&f, NULL, 32 * MiB_, NULL, &A, &B)) {
        goto out;
    }
    lid = B->lid;
    dn2q_pattern(data, sizeof(data), 81);
    dn2q_sdfile_put(&A->mem, 0, 0x100000, data, sizeof(data));
    dn2q_sdfile_put(&B->mem, 0, 0x100000, data, sizeof(data));
    qtest_qmp_assert_success(B->d.qts, "{'execute': 'system_reset'}");
    /* the reset happens in B's main loop: wait for its effect (PGIDs gone) */
    poll_ur(B, 0, DN2_UR_CTL_STATUS, DN2_CS_SDIMM_READY, 0, T_SHORT,
            "B's reset took effect (SO-DIMM not ready)");
    if (board_wait_link(B, T_SHORT)) {
        EXPECT_HEX(B->lid, lid, "the same LID after the reboot");
    }
    board_net_init(B, PG, PG);
    route0 = qom_u64(B, "stat-rx-drop-route");
    rvs_check(A, B, 0, 512, 0x100000, 0x40000, data,
              "A -> B after B's reboot");
    rvs_check(B, A, 0, 512, 0x100000, 0x40000, data,
              "B -> A after B's reboot");
    EXPECT_HEX(qom_u64(B, "stat-rx-drop-route"), route0,
               "nothing dropped as not for B's LID");
out:
    fab_down(&f);
}

/*
 * A silent member for the RVL hostage tests: a raw peer joined to A and
 * B's switch, with B's SO-DIMM 0x100000 holding a known pattern, and one
 * RVL packet that asks B for 2 MiB from its SO-DIMM 0.  The peer never
 * acknowledges the answer.
 */
typedef struct SilentPeer {
    RawPeer rp;
    uint8_t *pk[1];
    size_t pl[1];
    uint8_t data[1024];
} SilentPeer;

static bool silent_peer_up(SilentPeer *sp, Fab *f, Board *B, uint8_t seed)
{
    struct dn2_hdr h;

    memset(sp, 0, sizeof(*sp));
    if (!rawpeer_register(&sp->rp, f->sw.port, B->lid)) {
        return false;
    }
    dn2q_pattern(sp->data, sizeof(sp->data), seed);
    dn2q_sdfile_put(&B->mem, 0, 0x100000, sp->data, sizeof(sp->data));
    memset(&h, 0, sizeof(h));
    h.type = DN2_OP_RVL;
    h.hflag = 1;
    h.dlid = B->lid;
    h.pgid = PG;
    h.w1_lo = 0;                    /* from B's SO-DIMM 0 ... */
    h.w1_hi = 0;
    h.total = 2 * MiB_;             /* ... 2 MiB */
    sp->pk[0] = g_malloc0(64);
    sp->pl[0] = mkpkt(sp->pk[0], &h, NULL, 0);
    return true;
}

/* The peer asks B for its 2 MiB again (B acknowledges the request). */
static void silent_peer_ask(SilentPeer *sp)
{
    rawpeer_send(&sp->rp, sp->pk, sp->pl, 1, sp->rp.epoch, sp->rp.victim_epoch, sp->rp.fd,
                 true);
}

static void silent_peer_down(SilentPeer *sp)
{
    g_free(sp->pk[0]);
    close(sp->rp.fd);
}

/* A and B up with the board properties props, and a silent member that
 * has asked B for its 2 MiB once.  Either way the caller ends with
 * g_board_props = "" and fab_down(); silent_peer_down() after true. */
static bool hostage_up(Fab *f, const char *props, Board **A, Board **B, SilentPeer *sp,
                       uint8_t seed)
{
    g_board_props = props;
    if (!fab_up_ab(f, NULL, 32 * MiB_, NULL, A, B) || !silent_peer_up(sp, f, *B, seed)) {
        return false;
    }
    silent_peer_ask(sp);
    return true;
}

/* A asks B for 1 KiB (RVL) and must get B's pattern back at dst. */
static void rvl_from_b(Board *A, Board *B, const uint8_t *data, uint32_t dst, const char *what)
{
    rreq(A, 0, 0, DN2_OP_RVL, 0, 0, B->lid, 0, 1, 1024, 0x100000, dst);
    st_expect(A, 0, DN2_OP_RVS, 0, 0, B->lid, 0, 1024, dst, T_SHORT, what);
    sd_expect(A, 0, dst, data, 1024, what);
}

/*
 * A fabric member asks B for 2 MiB (one RVL) and never acknowledges the
 * answer.  B's own process keeps working meanwhile, the answer is
 * abandoned and counted after rc-timeout-ms, and B answers others again.
 */
static void test_rc_hostage(void)
{
    Fab f;
    Board *A, *B;
    SilentPeer sp;
    int64_t t0;

    if (!hostage_up(&f, ",rc-timeout-ms=500", &A, &B, &sp, 82)) {
        goto out;
    }
    poll_ur(B, 0, DN2_UR_MODULE_STATE, DN2_MASK(16, 0), 1 + DN2_OP_RVS, T_SHORT,
            "B answers the RVL and waits for credits that never come");
    /* B's own process: a local VS runs while the answer is stuck */
    t0 = now_ms();
    qtest_memwrite(B->d.qts, dn2q_ww_addr(&B->d, 0, 0), sp.data, 256);
    issue(B, 0, 0, dn2_req_upper(0, 0x200000),
          dn2_req_lower(DN2_OP_VS, 0, 0, 0, 0, 0, 256), false, 0);
    wait_pc(B, 0, DN2_PC_VS, 1, 400, "B's own VS does not wait behind the RC answer");
    EXPECT_TRUE(now_ms() - t0 < 400, "B's VS took %" PRId64 " ms", now_ms() - t0);
    wait_qom(B, "stat-rc-abandoned", 1, T_SHORT, "the stuck answer is abandoned");
    rvl_from_b(A, B, sp.data, 0x50000, "B answers A's RVL after abandoning the hostage");
    silent_peer_down(&sp);
out:
    g_board_props = "";
    fab_down(&f);
}

/*
 * The grace is per requester, not per answer: a member that keeps sending
 * RVLs it never acknowledges would otherwise hold B's RVL answers for
 * rc-timeout-ms each, one after another.  Its first answer is abandoned
 * after rc-timeout-ms; its later ones at their first stall; A, whose
 * answers make progress, is served throughout.
 */
static void test_rc_hostage_repeat(void)
{
    const unsigned timeout_ms = 3000;
    Fab f;
    Board *A, *B;
    SilentPeer sp;
    int64_t t0;
    unsigned i;

    if (!hostage_up(&f, ",rc-timeout-ms=3000", &A, &B, &sp, 84)) {
        goto out;
    }
    wait_qom(B, "stat-rc-abandoned", 1, timeout_ms + T_SHORT,
             "the silent member's first answer is abandoned after rc-timeout-ms");
    for (i = 2; i <= 4; i++) {
        g_autofree char *w = g_strdup_printf("its RVL %u is abandoned without a new grace", i);
        t0 = now_ms();
        silent_peer_ask(&sp);
        wait_qom(B, "stat-rc-abandoned", i, timeout_ms + T_SHORT, w);
        EXPECT_TRUE(now_ms() - t0 < timeout_ms - 500,
                    "RVL %u held B's answers for %" PRId64 " ms (rc-timeout-ms %u)",
                    i, now_ms() - t0, timeout_ms);
        /* A's answers make progress meanwhile */
        rvl_from_b(A, B, sp.data, 0x50000 + i * 0x1000,
                   "B answers A's RVL between the silent member's");
    }
    silent_peer_down(&sp);
out:
    g_board_props = "";
    fab_down(&f);
}

/*
 * One process's full status ring holds back only its own traffic: while
 * B's WID 0 refuses A's packets, A's packets for B's WID 1 still arrive
 * (the fabric's lanes, one per DWID).
 */
static void test_per_wid_backpressure(void)
{
    Fab f;
    Board *A, *B;
    uint8_t data[256];
    int i;

    if (!hold_b_wid0(&f, &A, &B, data, sizeof(data), 83, "B's WID 0 ring is full")) {
        goto out;
    }
    rvs_check(A, B, 1, 256, 0x100000, 0x30000, data,
              "A -> B WID 1 while B's WID 0 holds its traffic back");
    /* WID 0 frees its ring: all six arrive, in order */
    for (i = 0; i < 6; i++) {
        g_autofree char *w = g_strdup_printf("A -> B WID 0 RVS %d after the ring is freed", i);
        st_expect(B, 0, DN2_OP_RVS, 0, 0, A->lid, 0, 64, i * 64, T_SHORT, w);
    }
out:
    fab_down(&f);
}

/*
 * Two boards storm each other with RVLs, 60 leaving each board at once.
 * Each board's host requests are first held back (an RVS to the other
 * board's WID 1, whose ring is full, runs out of credits), so the RVLs
 * pile up in the 64-deep Request FIFO; freeing both rings lets them all
 * go.  A's RC FIFO fills with B's requests while B's answers to A must
 * still get through, and the other way round: every answer arrives, none
 * is abandoned.
 */
static void test_rvl_storm_pair(void)
{
    const unsigned n = 60;
    const uint32_t sz = 1 * MiB_, big = 4 * MiB_;
    Fab f;
    Board *A, *B, *X[2];
    int64_t end;
    unsigned i, k, r;

    g_board_props = ",fifo-depth=64";
    if (!fab_up_ab(&f, NULL, 256 * MiB_, NULL, &A, &B)) {
        goto out;
    }
    X[0] = A;
    X[1] = B;
    for (k = 0; k < 2; k++) {
        dn2q_status_setup(&X[k]->d, 1, ST_OFF, 0x01);       /* 3 records */
    }
    for (k = 0; k < 2; k++) {
        for (i = 0; i < 4; i++) {
            rreq(X[k], 1, 0, DN2_OP_RVS, 0, 0, X[!k]->lid, 1, 1, 64, 0, i * 64);
        }
        rreq(X[k], 1, 0, DN2_OP_RVS, 0, 0, X[!k]->lid, 1, 0, big, 0, 0x800000);
    }
    for (k = 0; k < 2; k++) {
        poll_ur(X[k], 0, DN2_UR_MODULE_STATE, DN2_MASK(16, 0), 1 + DN2_OP_RVS, T_SHORT,
                "the host's RVS waits for credits");
    }
    for (i = 0; i < n; i++) {
        for (k = 0; k < 2; k++) {
            rreq(X[k], 0, 0, DN2_OP_RVL, 0, 0, X[!k]->lid, 0, 0, sz, 0,
                 0x1000000 + i * sz);
        }
    }
    /* free both rings: the big RVS goes on, then 60 RVLs each way at once */
    for (k = 0; k < 2; k++) {
        for (r = 0; r < 4; r++) {
            uint64_t lo, up;
            st_pop(X[k], 1, &lo, &up, T_SHORT, "a record in WID 1's ring");
        }
    }
    /* each side receives n RVLs and n answers of sz / 4080 packets */
    end = deadline(T_LONG);
    for (k = 0; k < 2; k++) {
        uint64_t want = n + n * DIV_ROUND_UP(sz, 4080);
        while (dn2q_pkts(&X[k]->d, 0) < want && now_ms() < end) {
            g_usleep(2000);
        }
        EXPECT_HEX(dn2q_pkts(&X[k]->d, 0), want, "board %c received every RVL and answer",
                   X[k]->name);
        EXPECT_HEX(qom_u64(X[k], "stat-rc-abandoned"), 0, "board %c abandoned no answer",
                   X[k]->name);
    }
out:
    g_board_props = "";
    fab_down(&f);
}

/*
 * Eight senders (four hostile peers, two WIDs each) start an LHS message
 * to B's WID 0 and die before finishing it: every reassembly slot is
 * taken.  A live sender's LHS must still get through: the oldest silent
 * message gives its slot up (its LH entry completed, bit 17 set, counted).
 */
static void test_lhs_slot_leak(void)
{
    Fab f;
    Board *A, *B;
    RawPeer rp[4];
    uint8_t env[64];
    int p, w;

    if (!fab_up_ab(&f, NULL, 32 * MiB_, NULL, &A, &B)) {
        goto out;
    }
    ipush_setup(B, A->lid, 0);
    dn2q_pattern(env, sizeof(env), 84);
    for (p = 0; p < 4; p++) {
        if (!rawpeer_register(&rp[p], f.sw.port, B->lid)) {
            goto out;
        }
        for (w = 0; w < 2; w++) {
            struct dn2_hdr h;
            uint8_t *pk[1];
            size_t pl[1];

            dn2q_amt_setup(&B->d, 0, AMT_OFF, w, rp[p].lid, RING_BASE, RING_SIZE);
            memset(&h, 0, sizeof(h));
            h.type = DN2_OP_IPUSH;
            h.lflag = 1;
            h.dlid = B->lid;
            h.pgid = PG;
            h.swid = w;
            h.w1_lo = 1000;             /* a 1000-byte message ... */
            h.w1_hi = 0;                /* ... whose first 64 bytes come */
            pk[0] = g_malloc0(DN2_PKT_MAX);
            pl[0] = mkpkt(pk[0], &h, env, sizeof(env));
            rawpeer_send(&rp[p], pk, pl, 1, rp[p].epoch, rp[p].victim_epoch, rp[p].fd, true);
            g_free(pk[0]);
        }
    }
    EXPECT_HEX(dn2q_ur_rd(&B->d, 0, DN2_UR_LHB_ADDR), 8 * DN2_LHB_ENTRY,
               "eight unfinished messages hold eight LH entries");
    /* A's message needs a slot: it waits for the oldest to time out */
    ipush_setup(B, A->lid, 0);
    issue(A, 0, 0, dn2_req_upper(0x100000, 0),
          dn2_req_lower(DN2_OP_LHSV1, 0, 0, dn2_lid_to_clid(B->lid), 0, 1, 40), false, 0);
    st_expect(B, 0, DN2_OP_IPUSH, 0, 0, A->lid, 0, 40, 8 * DN2_LHB_ENTRY,
              T_SHORT + DN2Q_LHS_TIMEOUT_MS, "A's LHS once a silent sender's slot is freed");
    EXPECT_TRUE(qom_u64(B, "stat-lhs-abandoned") >= 1, "the silent message is counted");
    EXPECT_TRUE(dn2q_cs(&B->d, 0) & DN2_CS_RX_OVF, "and flagged (bit 17)");
    for (p = 0; p < 4; p++) {
        close(rp[p].fd);
    }
out:
    fab_down(&f);
}

/*
 * The cluster secret: the switch reads it from a file (--secret-file), the
 * boards from a -object secret (secret=).  Boards with the secret join and
 * talk; a board with another secret, or none, never comes up and counts
 * the switch's refusals.
 */
static void test_secret(void)
{
    Fab f;
    Board *A, *B, C;
    g_autofree char *dir = g_dir_make_tmp("dn2-secret-XXXXXX", NULL);
    g_autofree char *good = g_build_filename(dir, "cluster.key", NULL);
    g_autofree char *bad = g_build_filename(dir, "other.key", NULL);
    g_autofree char *props = g_strdup_printf(",secret=sec -object secret,id=sec,file=%s",
                                             good);
    g_autofree char *bad_props = g_strdup_printf(
        ",secret=sec -object secret,id=sec,file=%s", bad);
    const char *sw_args[] = { "--secret-file", good, NULL };
    uint8_t data[512];
    int pass;

    /* a Windows line end: the switch and the boards both drop it */
    g_assert_true(g_file_set_contents(good, "correct horse battery staple\r\n", -1, NULL));
    g_assert_true(g_file_set_contents(bad, "incorrect horse\n", -1, NULL));
    chmod(good, 0600);
    chmod(bad, 0600);
    memset(&C, 0, sizeof(C));
    g_board_props = props;
    if (!fab_up_ab(&f, sw_args, 32 * MiB_, NULL, &A, &B)) {
        goto out;
    }
    dn2q_pattern(data, sizeof(data), 85);
    dn2q_sdfile_put(&A->mem, 0, 0x100000, data, sizeof(data));
    rvs_check(A, B, 0, 512, 0x100000, 0x10000, data,
              "members with the secret talk");
    for (pass = 0; pass < 2; pass++) {
        /* another secret, then none */
        g_board_props = pass ? "" : bad_props;
        board_start(&C, 'C', f.sw.port, guid_of(2 + pass), 0, 32 * MiB_);
        wait_qom(&C, "stat-link-refusals", 1, T_SHORT,
                 pass ? "a board without the secret is refused"
                      : "a board with another secret is refused");
        g_usleep(300 * 1000);
        EXPECT_HEX(dn2q_sr_rd(&C.d, DN2_SR_SMA) & DN2_SMA_LINK_MASK, 0,
                   "%s: its link stays down", pass ? "no secret" : "another secret");
        board_stop(&C);
    }
out:
    g_board_props = "";
    fab_down(&f);
    unlink(good);
    unlink(bad);
    rmdir(dir);
}

/* ------------------------------------------------------------------ */
/* Virtual time: a packet is delivered at its send time + the latency  */
/* ------------------------------------------------------------------ */

typedef struct VtCase {
    const char *path;
    const char *quantum;        /* --vt-quantum (NULL: exact) */
    uint64_t latency;           /* vt-latency-ns = --vt-lookahead */
    bool timing;                /* timing=thesis */
} VtCase;

static const VtCase vt_cases[] = {
    { "/dimmnet2-fabric/vtime/exact", NULL, 1000, false },
    { "/dimmnet2-fabric/vtime/latency-5us", NULL, 5000, false },
    { "/dimmnet2-fabric/vtime/quantum", "4096", 1000, false },
    /* not a power of two: rounding by masking would go wrong */
    { "/dimmnet2-fabric/vtime/quantum-100us", "100000", 1000, false },
    /* the lookahead at the model's least latency (625 ns, docs/timing.md) */
    { "/dimmnet2-fabric/vtime/timing-thesis", NULL, 625, true },
};

/* timing=thesis, a packet of `bytes` into the LLCM with a status record,
 * sent with the port free: Core Logic 100 ns, 10 ns per 8-byte line, two
 * 10 ns cables, the switch's 385 ns, 20 receive clocks (their status write
 * included, Tables 7.4/7.5) less the 6 of the SO-DIMM write (the LLCM), of
 * 10 ns. */
#define VT_THESIS_RX_NS ((20 - 6) * 10)
#define VT_THESIS_NS(bytes) (100 + (bytes) / 8 * 10 + 10 + 385 + 10 + VT_THESIS_RX_NS)

typedef struct VtStep {
    Board *b;
    int64_t to;                 /* step the board's virtual clock to this */
} VtStep;

/*
 * Step one board to `to`.  Where the clock stops the board reports it to
 * the switch (a vCPU would run on to the horizon and report there; the
 * board does it for a qtest: dimmnet2_vt_qtest_stopped), so a board
 * stopped below its horizon never keeps another waiting at its own.
 */
static gpointer vt_step_thread(gpointer opaque)
{
    VtStep *st = opaque;

    if (st->b->vclock < st->to) {
        st->b->vclock = qtest_clock_set(st->b->d.qts, st->to);
    }
    return NULL;
}

/* Move both boards' virtual clocks to `to` at once (each may wait at its
 * horizon for the other on the way). */
static void vt_step_both(Board *a, Board *b, int64_t to)
{
    VtStep sa = { .b = a, .to = to };
    VtStep sb = { .b = b, .to = to };
    GThread *t = g_thread_new("vt-step", vt_step_thread, &sb);

    vt_step_thread(&sa);
    g_thread_join(t);
    EXPECT_TRUE(a->vclock >= to, "board %c's virtual clock %" PRId64 " reached %" PRId64,
                a->name, a->vclock, to);
    EXPECT_TRUE(b->vclock >= to, "board %c's virtual clock %" PRId64 " reached %" PRId64,
                b->name, b->vclock, to);
}

/* The virtual delivery times in a board's pcap trace (at most max). */
static unsigned vt_pcap_times(const char *path, int64_t *ts, unsigned max)
{
    g_autofree char *buf = NULL;
    gsize len = 0, off = 24;
    unsigned n = 0;

    if (!g_file_get_contents(path, &buf, &len, NULL) || len < 24 ||
        ldl_le_p(buf) != 0xa1b23c4d) {
        g_test_message("FAIL %s: not a nanosecond pcap", path);
        g_test_fail();
        return 0;
    }
    while (off + 16 <= len && n < max) {
        uint32_t cap = ldl_le_p(buf + off + 8);
        ts[n++] = (int64_t)ldl_le_p(buf + off) * 1000000000 + ldl_le_p(buf + off + 4);
        off += 16 + cap;
    }
    return n;
}

/* Two boards A and C in virtual time: the switch, the boards (each tracing
 * its deliveries into dir/<name>.pcap), the lock-step begun at 1 µs with
 * the links up, both brought up for the network.  False: the case ends. */
static bool vt_rig_up(Fab *f, const char *const *sw_args, const char *props,
                      const char *dir)
{
    int i;

    g_dead = false;
    memset(f, 0, sizeof(*f));
    f->n = 2;
    g_board_props = props;
    g_board_pcap_dir = dir;
    if (!switch_start(&f->sw, 0, sw_args)) {
        return false;
    }
    /* A and C: the second board of the other cases receives in a thread,
     * which virtual time does not take */
    for (i = 0; i < 2; i++) {
        board_start(&f->b[i], i ? 'C' : 'A', f->sw.port, guid_of(i), 0, 32 * MiB_);
    }
    /* Before the lock-step begins the link is down for the guest; at its
     * start both wait for the switch's first grant and the link comes up. */
    EXPECT_TRUE(dn2_sma_link(dn2q_sr_rd(&f->b[0].d, DN2_SR_SMA)) != DN2_SMA_LINK_READY,
                "board A: the link is down before the lock-step begins");
    vt_step_both(&f->b[0], &f->b[1], 1000);
    if (!board_wait_link(&f->b[0], T_SHORT) || !board_wait_link(&f->b[1], T_SHORT)) {
        return false;
    }
    board_net_init(&f->b[0], PG, PG);
    board_net_init(&f->b[1], PG, PG);
    return true;
}

static void vt_rig_down(Fab *f, const char *dir)
{
    g_autofree char *pa = g_build_filename(dir, "A.pcap", NULL);
    g_autofree char *pc = g_build_filename(dir, "C.pcap", NULL);

    g_board_props = "";
    g_board_pcap_dir = NULL;
    fab_down(f);
    unlink(pa);
    unlink(pc);
    rmdir(dir);
}

static void test_vtime(const void *opaque)
{
    const VtCase *c = opaque;
    g_autofree char *look = g_strdup_printf("%" PRIu64, c->latency);
    const char *sw_args[] = { "--virtual-time", "--vt-boards", "2", "--vt-lookahead", look,
                              c->quantum ? "--vt-quantum" : NULL, c->quantum, NULL };
    /* The lock-step begins at 1 µs: a timer due at 0 would fire (and wait
     * for the other board) before this program has started that board. */
    g_autofree char *props = g_strdup_printf(",vtime=on,vt-latency-ns=%" PRIu64
                                             ",vt-start-ns=1000%s", c->latency,
                                             c->timing ? ",timing=thesis" : "");
    g_autofree char *dir = g_dir_make_tmp("dn2-vt-XXXXXX", NULL);
    g_autofree char *pcap = g_build_filename(dir, "C.pcap", NULL);
    uint64_t q = c->quantum ? g_ascii_strtoull(c->quantum, NULL, 10) : 1;
#define VT_ROUND_UP(x, m) (((x) + (m) - 1) / (m) * (m))
    /* the packet: the BOTF image, 2 header lines + the data */
    const size_t bytes = 16 + 64;
    const int64_t wire = bytes / 8 * 10;
    const int64_t t0 = 20000, t1 = 60000;
    int64_t lat, want[3], ts[4];
    uint8_t data[64];
    unsigned n, npk;
    Fab f;
    Board *A, *C;
    struct dn2_hdr h;
    int i;

    if (!vt_rig_up(&f, sw_args, props, dir)) {
        goto out;
    }
    A = &f.b[0];
    C = &f.b[1];
    vt_step_both(A, C, t0);

    /* A BOTF into C's LLCM at A's clock: delivered at that time + the
     * latency (the model's with timing=thesis), rounded up to the quantum. */
    dn2q_pattern(data, sizeof(data), 25);
    lat = c->timing ? VT_THESIS_NS(bytes) : (int64_t)c->latency;
    want[0] = VT_ROUND_UP(A->vclock + lat, (int64_t)q);
    h = rvs_hdr(C->lid, 0x1000);
    h.lflag = 1;
    botf_send(A, 0, 0, &h, data, sizeof(data));
    npk = 1;
    if (c->timing) {
        /* The Write Window is busy, and the Primitive Counter has not
         * counted the BOTF, until the Window Controller has read the image:
         * 2 clocks and 10 lines (120 ns) after the doorbell. */
        int64_t t_bell = A->vclock;

        EXPECT_HEX(dn2q_pcf(&A->d, 0, DN2_PC_BOTF), 0, "BOTF not counted at its doorbell");
        vt_step_both(A, C, t_bell + 60);
        EXPECT_HEX(A->vclock - t_bell, 60, "board A stepped to 60 ns after the doorbell");
        EXPECT_HEX(dn2q_pcf(&A->d, 0, DN2_PC_BOTF), 0,
                   "BOTF not counted 60 ns after its doorbell (the image takes 120 ns)");
        vt_step_both(A, C, t_bell + 200);
        EXPECT_HEX(dn2q_pcf(&A->d, 0, DN2_PC_BOTF), 1,
                   "BOTF counted once the image is read (120 ns)");
    }
    if (c->timing) {
        /* Two packets back to back: the second waits for the sender's
         * Window Controller, which reads the first's image (2 clocks and
         * its 10 lines: 120 ns; the port is busy 100 ns of that), and then
         * for the receiver's Receive Controller, which takes one packet at
         * a time: the first's 14 clocks, its status write included (140 ns). */
        vt_step_both(A, C, t1);
        want[1] = A->vclock + lat;
        want[2] = want[1] + MAX(MAX(wire, (2 + (int64_t)bytes / 8) * 10), VT_THESIS_RX_NS);
        h = rvs_hdr(C->lid, 0x1100);
        h.lflag = 1;
        botf_send(A, 0, 1, &h, data, sizeof(data));
        h = rvs_hdr(C->lid, 0x1200);
        h.lflag = 1;
        botf_send(A, 0, 2, &h, data, sizeof(data));
        npk = 3;
    }
    vt_step_both(A, C, want[npk - 1] + 20000);
    st_expect(C, 0, DN2_OP_RVS, 0, 0, A->lid, 0, sizeof(data), 0x1000, T_SHORT,
              "the packet in virtual time");
    EXPECT_HEX(qom_u64(C, "stat-rx-packets"), npk, "board C: every packet delivered");
    n = vt_pcap_times(pcap, ts, G_N_ELEMENTS(ts));
    EXPECT_HEX(n, npk, "board C's trace: one record per packet");
    for (i = 0; i < (int)MIN(n, npk); i++) {
        EXPECT_HEX(ts[i], want[i], "packet %d delivered at its virtual time (ns)", i);
    }
    EXPECT_HEX(qom_u64(C, "stat-vt-late"), 0, "board C: no packet came after its time");
    EXPECT_HEX(qom_u64(A, "stat-vt-late"), 0, "board A: no packet came after its time");
    EXPECT_TRUE(qom_u64(A, "stat-vt-waits") > 0, "board A waited for grants");
out:
    vt_rig_down(&f, dir);
}

/*
 * A full status ring in virtual time: the receiver (R) holds the fourth
 * packet in virtual time (no wait tuned to the host) and takes it at the
 * very virtual time its host frees a record.
 *   back-pressure: A sends R = C four RVS;
 *   rvl-ring-full: A asks C for four RVL answers, so R = A: the answers
 *     wait at the requester and the answering board is never held (no
 *     rc-timeout-ms needed, none reached): its own requests run at once.
 */
static void vtime_ring_full(bool rvl)
{
    const char *sw_args[] = { "--virtual-time", "--vt-boards", "2", "--vt-lookahead", "1000",
                              NULL };
    g_autofree char *dir = g_dir_make_tmp("dn2-vt-XXXXXX", NULL);
    g_autofree char *pcap = g_build_filename(dir, rvl ? "A.pcap" : "C.pcap", NULL);
    uint8_t data[256];
    int64_t ts[6], t_free;
    unsigned i, n;
    Fab f;
    Board *A, *C, *R, *S;

    if (!vt_rig_up(&f, sw_args, ",vtime=on,vt-latency-ns=1000,vt-start-ns=1000", dir)) {
        goto out;
    }
    A = &f.b[0];
    C = &f.b[1];
    R = rvl ? A : C;            /* the receiver, whose ring fills */
    S = rvl ? C : A;            /* the board the data comes from */
    dn2q_pattern(data, sizeof(data), 41);
    dn2q_sdfile_put(&S->mem, 0, 0x100000, data, sizeof(data));
    /* the smallest status ring: 3 usable records (choice #24) */
    dn2q_status_setup(&R->d, 0, ST_OFF, 0x01);
    vt_step_both(A, C, 20000);
    for (i = 0; i < 4; i++) {
        rreq(A, 0, 0, rvl ? DN2_OP_RVL : DN2_OP_RVS, 0, 0, C->lid, 0, 1, 64,
             0x100000 + i * 64, i * 64);
    }
    vt_step_both(A, C, 60000);
    EXPECT_HEX(dn2q_ur_rd(&R->d, 0, DN2_UR_PKT_COUNTER), 3,
               "ring full: 3 packets taken, the 4th held at the receiver");
    EXPECT_TRUE(qom_u64(R, "stat-rx-stalls") >= 1, "ring full: a receive stall counted");
    sd_expect_zero(R, 0, 3 * 64, 64, "ring full: the 4th is not written");
    if (rvl) {
        EXPECT_HEX(DN2_FGET(dn2q_ur_rd(&C->d, 0, DN2_UR_MODULE_STATE), DN2_MS_WC), 0,
                   "C's Window Controller is idle: it sent every answer");
        /* C's own process: a local VS runs at once */
        qtest_memwrite(C->d.qts, dn2q_ww_addr(&C->d, 0, 0), data, 64);
        issue(C, 0, 0, dn2_req_upper(0, 0x200000),
              dn2_req_lower(DN2_OP_VS, 0, 0, 0, 0, 0, 64), false, 0);
        EXPECT_HEX(dn2q_pcf(&C->d, 0, DN2_PC_VS), 1, "C's VS ran in its doorbell");
    }
    /* R's host frees a record at its clock: the held packet is taken then */
    t_free = R->vclock;
    st_expect(R, 0, DN2_OP_RVS, 0, 0, S->lid, 0, 64, 0, 0, "the first record");
    vt_step_both(A, C, t_free + 20000);
    EXPECT_HEX(dn2q_ur_rd(&R->d, 0, DN2_UR_PKT_COUNTER), 4, "the held packet taken");
    sd_expect(R, 0, 3 * 64, data + 3 * 64, 64, "the held packet written");
    n = vt_pcap_times(pcap, ts, G_N_ELEMENTS(ts));
    EXPECT_HEX(n, 4, "the receiver's trace: four deliveries");
    if (n == 4) {
        EXPECT_HEX(ts[3], t_free, "the held one at the virtual time its record was freed");
    }
    EXPECT_HEX(qom_u64(R, "stat-vt-late"), 0, "no packet came after its time");
    EXPECT_HEX(qom_u64(C, "stat-rc-abandoned"), 0, "no answer abandoned");
out:
    vt_rig_down(&f, dir);
}

/*
 * A board this program stops below its horizon reports where it stopped,
 * as a vCPU that ran on would at its horizon.  Both boards at 1 us with
 * the horizon 2 us (lookahead 1 us); C is stopped at 1.5 us; A is stepped
 * to 2.4 us, past its horizon: it gets there once C's report at 1.5 us
 * lets the switch grant it 2.5 us.  (Were C's clock not reported, A would
 * wait at 2 us for ever: this program then says so and steps C to its
 * own horizon, where it reports, to end the case.)
 */
typedef struct VtStopWait {
    Board *b;
    int64_t to;
    int done;
} VtStopWait;

static gpointer vt_stop_thread(gpointer opaque)
{
    VtStopWait *w = opaque;

    w->b->vclock = qtest_clock_set(w->b->d.qts, w->to);
    qatomic_set(&w->done, 1);
    return NULL;
}

static void test_vtime_stop_below_horizon(void)
{
    const char *sw_args[] = { "--virtual-time", "--vt-boards", "2", "--vt-lookahead", "1000",
                              NULL };
    const char *props = ",vtime=on,vt-latency-ns=1000,vt-start-ns=1000";
    g_autofree char *dir = g_dir_make_tmp("dn2-vt-XXXXXX", NULL);
    VtStopWait w = { 0 };
    GThread *t;
    int64_t end;
    Fab f;
    Board *A, *C;

    if (!vt_rig_up(&f, sw_args, props, dir)) {
        goto out;
    }
    A = &f.b[0];
    C = &f.b[1];
    C->vclock = qtest_clock_set(C->d.qts, 1500);
    w.b = A;
    w.to = 2400;
    t = g_thread_new("vt-stop", vt_stop_thread, &w);
    end = now_ms() + 10000;
    while (!qatomic_read(&w.done) && now_ms() < end) {
        g_usleep(10000);
    }
    EXPECT_TRUE(qatomic_read(&w.done),
                "board A stepped past its horizon (2 us) to 2.4 us with C stopped at "
                "1.5 us: C's clock reported where the test stopped it");
    if (!qatomic_read(&w.done)) {
        C->vclock = qtest_clock_set(C->d.qts, 2000);    /* C reports at its horizon */
    }
    g_thread_join(t);
    EXPECT_HEX(A->vclock, 2400, "board A's virtual clock (ns)");
    EXPECT_HEX(qom_u64(A, "stat-vt-waits") > 0, 1, "board A waited at its horizon");
out:
    vt_rig_down(&f, dir);
}

static void test_vtime_back_pressure(void)
{
    vtime_ring_full(false);
}

static void test_vtime_rvl_ring_full(void)
{
    vtime_ring_full(true);
}


int main(int argc, char **argv)
{
    unsigned i;
    int ret;

    g_test_init(&argc, &argv, NULL);
    g_test_set_nonfatal_assertions();
    signal(SIGPIPE, SIG_IGN);

    switch_path = find_switch();
    if (!switch_path || !g_file_test(switch_path, G_FILE_TEST_IS_EXECUTABLE)) {
        g_test_message("dn2-switch not found (set DN2_SWITCH_BINARY): %s",
                       switch_path ? switch_path : "no build/fabric/dn2-switch");
        if (g_getenv("DN2_SWITCH_BINARY")) {
            return 1;           /* asked for and missing: an error */
        }
    } else {
        qtest_add_func("/dimmnet2-fabric/link-up", test_link_up);
        for (i = 0; i < G_N_ELEMENTS(rvs_cases); i++) {
            qtest_add_data_func(rvs_cases[i].path, &rvs_cases[i], test_rvs_case);
        }
        qtest_add_func("/dimmnet2-fabric/rvl-family", test_rvl_family);
        for (i = 0; i < G_N_ELEMENTS(ipush_cases); i++) {
            qtest_add_data_func(ipush_cases[i].path, &ipush_cases[i], test_ipush_case);
        }
        qtest_add_func("/dimmnet2-fabric/botf", test_botf);
        qtest_add_func("/dimmnet2-fabric/coalesce/on", test_coalesce_on);
        qtest_add_func("/dimmnet2-fabric/coalesce/off", test_coalesce_off);
        qtest_add_func("/dimmnet2-fabric/all-to-all", test_all_to_all);
        qtest_add_func("/dimmnet2-fabric/multicast", test_multicast);
        qtest_add_func("/dimmnet2-fabric/pgid", test_pgid);
        qtest_add_func("/dimmnet2-fabric/back-pressure", test_back_pressure);
        qtest_add_func("/dimmnet2-fabric/faults", test_faults);
        qtest_add_func("/dimmnet2-fabric/switch-restart", test_switch_restart);
        qtest_add_func("/dimmnet2-fabric/hostile/garbage", test_hostile_garbage);
        for (i = 0; i < G_N_ELEMENTS(bad_cases); i++) {
            qtest_add_data_func(bad_cases[i].path, &bad_cases[i], test_hostile_bad_packets);
        }
        qtest_add_func("/dimmnet2-fabric/hostile/forged", test_hostile_forged);
        qtest_add_func("/dimmnet2-fabric/reset-backpressured", test_reset_backpressured);
        qtest_add_func("/dimmnet2-fabric/reboot-keeps-link", test_reboot_keeps_link);
        qtest_add_func("/dimmnet2-fabric/rc-hostage", test_rc_hostage);
        qtest_add_func("/dimmnet2-fabric/rc-hostage-repeat", test_rc_hostage_repeat);
        qtest_add_func("/dimmnet2-fabric/per-wid-backpressure", test_per_wid_backpressure);
        qtest_add_func("/dimmnet2-fabric/rvl-storm-pair", test_rvl_storm_pair);
        qtest_add_func("/dimmnet2-fabric/lhs-slot-leak", test_lhs_slot_leak);
        qtest_add_func("/dimmnet2-fabric/secret", test_secret);
        for (i = 0; i < G_N_ELEMENTS(vt_cases); i++) {
            qtest_add_data_func(vt_cases[i].path, &vt_cases[i], test_vtime);
        }
        qtest_add_func("/dimmnet2-fabric/vtime/stop-below-horizon",
                       test_vtime_stop_below_horizon);
        qtest_add_func("/dimmnet2-fabric/vtime/back-pressure", test_vtime_back_pressure);
        qtest_add_func("/dimmnet2-fabric/vtime/rvl-ring-full", test_vtime_rvl_ring_full);
    }
    ret = g_test_run();
    g_free(switch_path);
    return ret;
}
