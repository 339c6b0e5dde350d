/*
 * qtest: the fabric qtests' shared helpers (dimmnet2-fabric-util.h says
 * what they are and how a case runs).
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
#include "dimmnet2-fabric-util.h"

/* ------------------------------------------------------------------ */
/* Bounded waits                                                       */
/* ------------------------------------------------------------------ */

/* After a wait timed out, the other waits of the case fail fast. */
bool g_dead;

int64_t now_ms(void)
{
    return g_get_monotonic_time() / 1000;
}

/* Deadline for a wait of `ms` (immediate once a wait has failed). */
int64_t deadline(int ms)
{
    return now_ms() + (g_dead ? 0 : ms);
}

void wait_failed(const char *fmt, ...)
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
bool switch_start(Switch *sw, int port, const char *const *extra)
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
void switch_stop(Switch *sw, int sig)
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

void switch_free(Switch *sw)
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
int64_t switch_stat(Switch *sw, const char *key)
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

/* `dn2-switch --stats`: how many ports are in STATE ("active", "gone"),
 * or -1 when the switch does not answer. */
int switch_ports(Switch *sw, const char *state)
{
    g_autofree char *addr = g_strdup_printf("127.0.0.1:%d", sw->port);
    g_autofree char *out = NULL;
    g_auto(GStrv) lines = NULL;
    const char *argv[] = { switch_path, "--stats", addr, NULL };
    int status = 0, n = 0;

    if (!g_spawn_sync(NULL, (char **)argv, NULL, G_SPAWN_STDERR_TO_DEV_NULL, NULL, NULL,
                      &out, NULL, &status, NULL) || !out || !WIFEXITED(status) || WEXITSTATUS(status)) {
        return -1;
    }
    lines = g_strsplit(out, "\n", -1);
    for (char **l = lines; *l; l++) {
        g_auto(GStrv) w = g_strsplit_set(*l, " ", -1);
        unsigned k = 0;

        /* "0x0001 active 0x... ADDRESS ...": the second word */
        for (char **x = w; *x; x++) {
            if (**x && ++k == 2) {
                n += g_str_has_prefix(w[0], "0x") && !strcmp(*x, state);
                break;
            }
        }
    }
    return n;
}

/* ------------------------------------------------------------------ */
/* Boards                                                              */
/* ------------------------------------------------------------------ */

/* Extra -device properties for every board a case starts (",prop=v"). */
const char *g_board_props = "";
/* When set, every board writes its delivery trace to DIR/<name>.pcap. */
const char *g_board_pcap_dir;

void board_start(Board *b, char name, int sw_port, uint64_t guid, int local_port,
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

void board_stop(Board *b)
{
    if (b->d.qts) {
        qtest_quit(b->d.qts);
        b->d.qts = NULL;
    }
    dn2q_sdfile_destroy(&b->mem);
}

uint64_t qom_u64(Board *b, const char *prop)
{
    g_autofree char *who = g_strdup_printf("board %c: qom-get %s", b->name, prop);

    return dn2q_qom_get_u64(b->d.qts, "/machine/peripheral/dn", prop, who);
}

/* Names of the device's QOM properties. */
GPtrArray *qom_props(Board *b)
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
bool sd_expect(Board *b, int wid, uint64_t off, const void *want, size_t len,
               const char *what)
{
    g_autofree char *who = g_strdup_printf("board %c ", b->name);

    return dn2q_sdfile_expect(&b->mem, wid, off, want, len, who, what);
}

bool sd_expect_zero(Board *b, int wid, uint64_t off, size_t len, const char *what)
{
    g_autofree uint8_t *z = g_malloc0(len ? len : 1);

    return sd_expect(b, wid, off, z, len, what);
}

/* Wait until the receiver's SO-DIMM holds `want` (no status record). */
bool sd_wait(Board *b, int wid, uint64_t off, const void *want, size_t len,
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
bool poll_ur(Board *b, int wid, uint32_t off, uint64_t mask, uint64_t want, int ms,
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

bool wait_pc(Board *b, int wid, int fam, unsigned target, int ms, const char *what)
{
    return poll_ur(b, wid, DN2_UR_PRIM_COUNTER, dn2q_pc_mask(fam), dn2q_pc_value(fam, target),
                   ms, what);
}

bool wait_qom(Board *b, const char *prop, uint64_t want_at_least, int ms,
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
bool board_wait_link(Board *b, int ms)
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

bool poll_sma_down(Board *b, int ms)
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
void board_net_init(Board *b, int pgid0, int pgid1)
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

void issue(Board *b, int wid, int cmd, uint64_t upper, uint64_t lower,
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
void rreq(Board *b, int wid, int cmd, unsigned otype, unsigned dtype, unsigned iter,
          uint16_t dlid, int dwid, int eflag, uint32_t arg, uint32_t src,
          uint32_t dst)
{
    issue(b, wid, cmd, dn2_req_upper(src, dst),
          dn2_req_lower(otype, dtype, iter, dn2_lid_to_clid(dlid), dwid, eflag, arg),
          false, 0);
}

void rreq_ex(Board *b, int wid, int cmd, unsigned otype, unsigned dtype,
             unsigned iter, uint16_t dlid, int dwid, int eflag, uint32_t arg,
             uint32_t src, uint32_t dst, uint64_t ex)
{
    issue(b, wid, cmd, dn2_req_upper(src, dst),
          dn2_req_lower(otype, dtype, iter, dn2_lid_to_clid(dlid), dwid, eflag, arg),
          true, ex);
}

/* BOTF of the packet image already in Write Window n of the WID. */
void botf(Board *b, int wid, unsigned n, unsigned size)
{
    issue(b, wid, 0, 0, dn2_botf_lower(n, size), false, 0);
}

/* Build a DIMMnet-2 packet image: header lines, then data.  Returns bytes. */
size_t mkpkt(uint8_t *buf, const struct dn2_hdr *h0, const void *data, size_t dlen)
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
struct dn2_hdr rvs_hdr(uint16_t dlid, uint32_t dst)
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
void botf_send(Board *b, int wid, unsigned n, const struct dn2_hdr *h,
               const void *data, size_t dlen)
{
    uint8_t img[DN2_BOTF_MAX];
    size_t len = mkpkt(img, h, data, dlen);

    qtest_memwrite(b->d.qts, dn2q_ww_addr(&b->d, wid, n * DN2_WIN_SIZE), img, len);
    botf(b, wid, n, len);
}

/* Status rings ---------------------------------------------------------- */

/* Take the next receive-status record (waits up to ms). */
bool st_pop(Board *b, int wid, uint64_t *lower, uint64_t *upper, int ms,
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

void st_expect(Board *b, int wid, unsigned otype, unsigned dtype, unsigned iter,
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

void st_expect_empty(Board *b, int wid, const char *what)
{
    EXPECT_HEX(dn2q_ur_rd(&b->d, wid, DN2_UR_STATUS_ADDR), b->d.st[wid].head,
               "%s: board %c WID %d status ring empty (tail == head)", what, b->name, wid);
}

/* ------------------------------------------------------------------ */
/* A fabric: one switch and n boards                                   */
/* ------------------------------------------------------------------ */

uint64_t guid_of(int i)
{
    return 0xd1aa0e7200000000ULL | ((uint64_t)getpid() << 8) | (uint64_t)(i + 1);
}

/* Returns false (the case should end) when the fabric did not come up. */
bool fab_up(Fab *f, int n, const char *const *sw_args, uint64_t memsize,
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
bool fab_up_ab(Fab *f, const char *const *sw_args, uint64_t memsize,
               const int *local_ports, Board **a, Board **b)
{
    bool up = fab_up(f, 2, sw_args, memsize, local_ports);

    *a = &f->b[0];
    *b = &f->b[1];
    return up;
}

void fab_down(Fab *f)
{
    int i;

    for (i = 0; i < f->n; i++) {
        board_stop(&f->b[i]);
    }
    switch_free(&f->sw);
}

/* ------------------------------------------------------------------ */
/* An IPUSH ring                                                      */
/* ------------------------------------------------------------------ */

/* An IPUSH ring on the receiver's WID 0 for the sender's (LID, WID). */
void ipush_setup(Board *recv, uint16_t sender_lid, int sender_wid)
{
    dn2q_ur_wr(&recv->d, 0, DN2_UR_IPUSH_AREA_SIZE, 0x100);     /* 1 MiB */
    dn2q_amt_setup(&recv->d, 0, AMT_OFF, sender_wid, sender_lid, RING_BASE, RING_SIZE);
}

uint32_t amt_tail(Board *b)
{
    return dn2q_amt_get(&b->d, 0, AMT_OFF, DN2_AMT_TAIL);
}

/* The host consumed the ring up to `head`. */
void amt_set_head(Board *b, uint32_t head)
{
    dn2q_amt_set(&b->d, 0, AMT_OFF, DN2_AMT_HEAD, head);
}

void ring_expect(Board *b, uint32_t pos, const uint8_t *want, uint32_t len,
                 const char *what)
{
    uint32_t n = MIN(len, RING_SIZE - pos);

    sd_expect(b, 0, RING_BASE + pos, want, n, what);
    if (n < len) {
        sd_expect(b, 0, RING_BASE, want + n, len - n, what);
    }
}

/* ------------------------------------------------------------------ */
/* A hostile peer: raw datagrams at a board's socket                  */
/* ------------------------------------------------------------------ */

int free_udp_port(void)
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

void raw_send(int fd, const struct dn2f_addr *to, const void *buf, size_t len)
{
    ssize_t r = sendto(fd, buf, len, 0, &to->u.sa, to->len);

    if (r < 0 && errno != EAGAIN && errno != ENOBUFS && errno != EMSGSIZE) {
        g_test_message("sendto: %s", strerror(errno));
    }
}

/* Receive one decodable datagram within ms; 0 = nothing. */
size_t raw_recv(int fd, uint8_t *buf, size_t cap, struct dn2f_msg *m, int ms)
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

static unsigned rawpeer_count;

bool rawpeer_register(RawPeer *rp, int sw_port, uint16_t victim)
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
bool rawpeer_send(RawPeer *rp, uint8_t **pkts, const size_t *lens, unsigned n,
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

uint8_t *rvs_pkt(size_t *len, uint16_t dlid, uint8_t pgid, int dwid,
                 uint32_t dst, const void *data, size_t dlen)
{
    uint8_t *p = g_malloc0(DN2_PKT_MAX);
    struct dn2_hdr h = rvs_hdr(dlid, dst);

    h.pgid = pgid;
    h.dwid = dwid;
    *len = mkpkt(p, &h, data, dlen);
    return p;
}

/* ------------------------------------------------------------------ */
/* An RVS checked at the receiver                                     */
/* ------------------------------------------------------------------ */

/* An RVS of len bytes from `from`'s WID 0 SO-DIMM src to `to`'s WID dwid at
 * dst, with a status record: check the record and the bytes (data). */
void rvs_check(Board *from, Board *to, int dwid, uint32_t len, uint32_t src,
               uint32_t dst, const uint8_t *data, const char *what)
{
    rreq(from, 0, 0, DN2_OP_RVS, 0, 0, to->lid, dwid, 1, len, src, dst);
    st_expect(to, dwid, DN2_OP_RVS, 0, 0, from->lid, 0, len, dst, T_SHORT, what);
    sd_expect(to, dwid, dst, data, len, what);
}

/* ------------------------------------------------------------------ */
/* main()                                                              */
/* ------------------------------------------------------------------ */

int fab_test_init(int *argc, char ***argv)
{
    g_test_init(argc, argv, NULL);
    g_test_set_nonfatal_assertions();
    signal(SIGPIPE, SIG_IGN);

    switch_path = find_switch();
    if (!switch_path || !g_file_test(switch_path, G_FILE_TEST_IS_EXECUTABLE)) {
        g_test_message("dn2-switch not found (set DN2_SWITCH_BINARY): %s",
                       switch_path ? switch_path : "no build/fabric/dn2-switch");
        return g_getenv("DN2_SWITCH_BINARY") ? -1 : 0;   /* asked for and missing: an error */
    }
    return 1;
}

int fab_test_run(void)
{
    int ret = g_test_run();

    g_free(switch_path);
    return ret;
}
