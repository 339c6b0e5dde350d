/*
 * qtest for the network primitives of the DIMMnet-2 board model, on one
 * QEMU with `-device dimmnet2,loopback=on` (choice #40): the port is cabled
 * to itself, the board has LID 1 (CLID 1) and every packet sent to LID 1
 * comes back to the same board, so WID 0 and WID 1 talk to each other (and
 * to themselves) through the whole send side, the port and the Receive
 * Controller.
 *
 * The specification tested is docs/device-model.md, "The port and the
 * network primitives", with docs/thesis-choices.md (#14, #26-#40) and the
 * layouts of include/dimmnet2/dn2_abi.h (§5 packet, §5b AMT entry / IPUSH
 * ring, §6 status record, §7 LH entry).  Every constant comes from that
 * header.
 *
 * The SO-DIMMs are a file-backed memdev (share=on) mapped by the test too:
 * source data is put straight into it and results are read straight from
 * it through the documented interleave (choice #10), so the Request FIFO
 * is free for the primitives under test (the IPUSH back-pressure test fills
 * it on purpose).
 *
 * Every wait is a bounded poll; assertions are non-fatal (a failing check
 * marks the case failed and prints "FAIL ..." with what/expected/got), and
 * once a wait has timed out, later waits of the case fail fast.  The
 * helpers shared with the other qtests are in dimmnet2-qtest-util.c.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "libqtest.h"
#include "qemu/bswap.h"
#include "dimmnet2-qtest-util.h"

#define STAT_POLL  20000    /* QOM reads before a statistics wait gives up */

#define SD_BYTES (8 * MiB_)       /* backing memory: two modules of 4 MiB */
#define AREA     (SD_BYTES / 2)   /* a process's SO-DIMM area (choice #9) */

#define LID       1               /* the loopback board (choice #40) */
#define MY_CLID   dn2_lid_to_clid(LID)
#define PGID      0x42

/* Layout used in every process's LLCM and SO-DIMM area */
#define ST_INIT     0x1000        /* status ring: LLCM offset ... */
#define ST_CODE     0x40          /* ... 4096 bytes */
#define AMT_ENTRY   0x100         /* AMT entries: LLCM 0x100 + 16 x sender WID */
#define IPUSH_UNITS 32            /* IPUSH Area Size: 128 KiB */
#define SRC         0x100000u     /* sender data */
#define DST         0x200000u     /* receiver data */
#define LIST        0x300000u     /* index lists */

/* ------------------------------------------------------------------ */
/* The rig: one board with a file-backed SO-DIMM memdev                */
/* ------------------------------------------------------------------ */

typedef struct Rig {
    DN2 d;
    DN2SdFile mem;
} Rig;

/* A board cabled to itself (loopback=on). */
static DN2 *rig_start(Rig *r)
{
    dn2q_sdfile_create(&r->mem, SD_BYTES, "dn2-remote-XXXXXX", false);
    dn2q_open(&r->d, dn2q_start_memdev(&r->mem, ",loopback=on"), DN2_DEFAULT_BASE0);
    return &r->d;
}

/* The same with more -device properties (props starts with a comma). */
static DN2 *rig_start_props(Rig *r, const char *props)
{
    g_autofree char *all = g_strdup_printf(",loopback=on%s", props);

    dn2q_sdfile_create(&r->mem, SD_BYTES, "dn2-remote-XXXXXX", false);
    dn2q_open(&r->d, dn2q_start_memdev(&r->mem, all), DN2_DEFAULT_BASE0);
    return &r->d;
}

static void rig_stop(Rig *r)
{
    qtest_quit(r->d.qts);
    dn2q_sdfile_destroy(&r->mem);
}

static uint64_t rstat(Rig *r, const char *name)
{
    return dn2q_qom_u64(r->d.qts, "dn", name);
}

/* Wait until statistic `name` reaches `want`; exact unless `at_least`. */
static bool wait_stat_x(Rig *r, const char *name, uint64_t want, bool at_least,
                        const char *what)
{
    uint64_t v = 0;
    int i, max = r->d.dead ? 1 : STAT_POLL;

    for (i = 0; i < max; i++) {
        v = rstat(r, name);
        if (v >= want) {
            break;
        }
    }
    if (at_least ? v < want : v != want) {
        g_test_message("FAIL %s: %s = %" PRIu64 ", expected %" PRIu64, what, name, v,
                       want);
        g_test_fail();
        return false;
    }
    return true;
}
#define wait_stat(r, name, want, what) wait_stat_x(r, name, want, false, what)
/* Back-pressure events are counted per refusal attempt: at least. */
#define wait_stalls(r, want, what) wait_stat_x(r, "stat-rx-stalls", want, true, what)

static bool sd_expect(Rig *r, int wid, uint64_t off, const void *want, size_t len,
                      const char *what)
{
    return dn2q_sdfile_expect(&r->mem, wid, off, want, len, "", what);
}
/* Fill [off, off + len) with background data; returns a model of it. */
static uint8_t *sd_bg(Rig *r, int wid, uint64_t off, size_t len, uint32_t seed)
{
    uint8_t *m = g_malloc(len + 1);

    dn2q_pattern(m, len, seed);
    dn2q_sdfile_put(&r->mem, wid, off, m, len);
    return m;
}
static void sd_put_le32(Rig *r, int wid, uint64_t off, uint32_t v)
{
    uint8_t b[4];

    stl_le_p(b, v);
    dn2q_sdfile_put(&r->mem, wid, off, b, 4);
}

/* ------------------------------------------------------------------ */
/* Bring-up, status rings, IPUSH rings                                 */
/* ------------------------------------------------------------------ */

/* pgid < 0: the PGID register of that WID is not written (no process). */
static void bringup(DN2 *d, unsigned mtu_code, int pgid0, int pgid1)
{
    int wid;

    dn2q_board_init(d, 0x01);
    dn2q_sr_wr(d, DN2_SR_LID, LID);
    dn2q_set_pgids(d, pgid0, pgid1);
    dn2q_sr_wr(d, DN2_SR_MTU, mtu_code);
    for (wid = 0; wid < 2; wid++) {
        dn2q_status_setup(d, wid, ST_INIT, ST_CODE);
        dn2q_ur_wr(d, wid, DN2_UR_IPUSH_AREA_SIZE, IPUSH_UNITS);
        dn2q_ur_wr(d, wid, DN2_UR_PKT_COUNTER, 0);
        dn2q_ur_wr(d, wid, DN2_UR_PRIM_COUNTER, 0);
    }
}

/* The loopback rig brought up with both WIDs in process group PGID. */
static DN2 *rig_up(Rig *r, unsigned mtu_code)
{
    DN2 *d = rig_start(r);

    bringup(d, mtu_code, PGID, PGID);
    return d;
}

/* Compare the record at the host's head with {lower, upper} (Lower bits
 * in lmask), then free it. */
static void check_status(DN2 *d, int wid, uint64_t lower, uint64_t lmask, uint64_t upper,
                         const char *w)
{
    uint64_t lo, up;

    dn2q_status_take(d, wid, &lo, &up);
    EXPECT_HEX(lo & lmask, lower & lmask, "%s: Lower word (at +0)", w);
    EXPECT_HEX(up, upper, "%s: Upper word (at +8)", w);
}

/* The status ring: wait for the next record, compare it, free it (head). */
static bool expect_status(Rig *r, int wid, uint64_t lower, uint64_t lmask,
                          uint64_t upper, const char *what)
{
    DN2 *d = &r->d;
    uint32_t h = d->st[wid].head;
    g_autofree char *w = g_strdup_printf("status record for %s (WID %d ring slot 0x%x)",
                                         what, wid, h);

    if (!dn2q_poll_ur(d, wid, DN2_UR_STATUS_ADDR, DN2_STATUS_ADDR_MASK,
                      dn2q_status_next(d, wid, h), DN2Q_MAX_POLL, w)) {
        return false;
    }
    check_status(d, wid, lower, lmask, upper, w);
    return true;
}

/* Several records may be outstanding (per-packet status): the next one. */
static bool expect_status_any(Rig *r, int wid, uint64_t lower, uint64_t lmask,
                              uint64_t upper, const char *what)
{
    DN2 *d = &r->d;
    uint32_t h = d->st[wid].head;
    int i;
    g_autofree char *w = g_strdup_printf("status record for %s (WID %d ring slot 0x%x)",
                                         what, wid, h);

    bool found = false;
    int max = d->dead ? 1 : DN2Q_MAX_POLL;

    for (i = 0; i < max && !found; i++) {
        found = (dn2q_ur_rd(d, wid, DN2_UR_STATUS_ADDR) & DN2_STATUS_ADDR_MASK) != h;
    }
    if (!found) {
        g_test_message("FAIL waiting for %s: Status NWA still 0x%x", w, h);
        g_test_fail();
        d->dead = true;
        return false;
    }
    check_status(d, wid, lower, lmask, upper, w);
    return true;
}

static void expect_no_status(Rig *r, int wid, const char *what)
{
    EXPECT_HEX(dn2q_ur_rd(&r->d, wid, DN2_UR_STATUS_ADDR) & DN2_STATUS_ADDR_MASK,
               r->d.st[wid].head, "%s: no (further) status record on WID %d", what, wid);
}

/* Table 4.9 / docs: Lower = {OTYPE, DTYPE, Iteration, sender CLID, sender
 * WID, eflag = 1, Size}; Upper = {first address, 0}. */
static uint64_t st_lower(unsigned otype, unsigned dtype, unsigned iter, int swid,
                         uint32_t size)
{
    return dn2_req_lower(otype, dtype, iter, MY_CLID, swid, 1, size);
}
#define LM_ALL    (~0ULL)
#define LM_NO_IT  (~DN2_MASK(15, 8))       /* Iteration not checked */
#define LM_NO_DI  (~DN2_MASK(15, 5))       /* DTYPE and Iteration not checked */

static bool wait_pkts(Rig *r, int wid, uint64_t n, const char *what)
{
    g_autofree char *w = g_strdup_printf("Packet Counter of WID %d = %" PRIu64 " (%s)",
                                         wid, n, what);

    return dn2q_poll_ur(&r->d, wid, DN2_UR_PKT_COUNTER, ~0ULL, n, DN2Q_MAX_POLL, w);
}

/* Wait for the sender's Primitive Counter (choice #37) to pass `before`. */
static void wait_sent(Rig *r, int wid, int fam, unsigned before, const char *what)
{
    g_autofree char *w = g_strdup_printf("sender's Primitive Counter for %s", what);

    dn2q_wait_pc(&r->d, wid, fam, before + 1, w);
}

/* Issue (once bits 0 and 2 are clear, §5.2.2) and wait until sent. */
static void rsend(Rig *r, int wid, int cmd, uint64_t upper, uint64_t lower, int fam,
                  const char *what)
{
    unsigned before = dn2q_pcf(&r->d, wid, fam);

    dn2q_issue(&r->d, wid, cmd, upper, lower);
    wait_sent(r, wid, fam, before, what);
}

static void rsend_ex(Rig *r, int wid, int cmd, uint64_t upper, uint64_t ex,
                     uint64_t lower, int fam, const char *what)
{
    unsigned before = dn2q_pcf(&r->d, wid, fam);

    dn2q_issue_ex(&r->d, wid, cmd, upper, ex, lower);
    wait_sent(r, wid, fam, before, what);
}

/* BOTF: a packet image in Write Window n of `wid`. */
static void botf_image(Rig *r, int wid, int n, const struct dn2_hdr *h,
                       const uint64_t *more, unsigned nmore, const void *data,
                       uint32_t dlen)
{
    uint8_t img[DN2_WIN_SIZE];
    unsigned i, hl = (1 + nmore) * DN2_LINE;

    g_assert(hl + dlen <= sizeof(img));
    stq_le_p(img, dn2_hdr0_encode(h));
    for (i = 0; i < nmore; i++) {
        stq_le_p(img + DN2_LINE * (1 + i), more[i]);
    }
    if (dlen) {
        memcpy(img + hl, data, dlen);
    }
    qtest_memwrite(r->d.qts, dn2q_ww_addr(&r->d, wid, n * DN2_WIN_SIZE), img, hl + dlen);
}

static void botf_issue(Rig *r, int wid, int n, unsigned size)
{
    dn2q_wait_fifo_room(&r->d, wid);
    dn2q_ur_wr(&r->d, wid, DN2_UR_CMD0_LOWER, dn2_botf_lower(n, size));
}

static void botf(Rig *r, int wid, int n, unsigned size, const char *what)
{
    unsigned before = dn2q_pcf(&r->d, wid, DN2_PC_BOTF);
    g_autofree char *w = g_strdup_printf("Primitive Counter BOTF for %s", what);

    botf_issue(r, wid, n, size);
    dn2q_wait_pc(&r->d, wid, DN2_PC_BOTF, before + 1, w);
}

/* A header for a BOTF image.  PGID and Packet Size are deliberately wrong:
 * the board overwrites both. */
static struct dn2_hdr mkhdr(unsigned type, int swid, int dwid, uint16_t dlid)
{
    struct dn2_hdr h;

    memset(&h, 0, sizeof(h));
    h.size = 0x7ff;
    h.type = type;
    h.pgid = 0x99;
    h.swid = swid;
    h.dwid = dwid;
    h.dlid = dlid;
    h.hflag = dn2_hdr_lines(type) > DN2_HDR_LINES_SHORT;
    return h;
}

/* IPUSH rings (dn2_abi.h §5b) */
typedef struct RingM {
    int swid, dwid;
    uint32_t entry, base, size, head, tail;
} RingM;

static void ring_setup(Rig *r, RingM *m, int swid, int dwid, uint32_t base,
                       uint32_t size)
{
    m->swid = swid;
    m->dwid = dwid;
    m->entry = AMT_ENTRY + DN2_AMT_ENTRY * swid;
    m->base = base;
    m->size = size;
    m->head = m->tail = 0;
    dn2q_amt_setup(&r->d, dwid, m->entry, swid, LID, base, size);
}

static uint32_t ring_tail(Rig *r, RingM *m)
{
    return dn2q_amt_get(&r->d, m->dwid, m->entry, DN2_AMT_TAIL);
}

static void ring_set_head(Rig *r, RingM *m, uint32_t head)
{
    m->head = head;
    dn2q_amt_set(&r->d, m->dwid, m->entry, DN2_AMT_HEAD, head);
}

static void ring_get(Rig *r, RingM *m, uint32_t pos, uint8_t *buf, uint32_t len)
{
    uint32_t i;

    for (i = 0; i < len; i++) {
        buf[i] = *dn2q_sdfile_byte(&r->mem, m->dwid, m->base + (pos + i) % m->size);
    }
}

static bool ring_expect(Rig *r, RingM *m, uint32_t pos, const void *want, uint32_t len,
                        const char *what)
{
    g_autofree uint8_t *got = g_malloc(len + 1);
    g_autofree char *w = g_strdup_printf("%s (ring at SO-DIMM 0x%x, offset 0x%x, WID %d)",
                                         what, m->base, pos, m->dwid);

    ring_get(r, m, pos, got, len);
    return dn2q_mem_eq(w, got, want, len, pos);
}

/* ================================================================== */
/* The port                                                            */
/* ================================================================== */

static void test_link_loopback(void)
{
    const uint64_t sma_up = ((uint64_t)DN2_SMA_LINK_READY << DN2_SMA_LINK_SHIFT) | LID;
    Rig r;
    DN2 *d;

    d = rig_start(&r);
    EXPECT_HEX(dn2q_sr_rd(d, DN2_SR_SMA), sma_up, "loopback: SMA LID = LID 1, link ready");
    dn2q_sr_wr(d, DN2_SR_SMA, 1);
    EXPECT_HEX(dn2q_sr_rd(d, DN2_SR_SMA), sma_up,
               "loopback: SMA LID after an SMA software reset");
    dn2q_sr_rd(d, DN2_SR_CTL_RESET);
    EXPECT_HEX(dn2q_sr_rd(d, DN2_SR_SMA), sma_up,
               "loopback: Controller Reset keeps the SMA (choice #20)");
    rig_stop(&r);
}

/* ------------------------------------------------------------------ */
/* Snapshots: a linked board migrates only held at a consistent cut     */
/* ------------------------------------------------------------------ */

/* The error description of a QMP command, or NULL when it succeeded. */
static char *qmp_err(QDict *rsp)
{
    char *e = NULL;

    if (qdict_haskey(rsp, "error")) {
        e = g_strdup(qdict_get_str(qdict_get_qdict(rsp, "error"), "desc"));
    }
    qobject_unref(rsp);
    return e;
}

static char *snap_hold(QTestState *qts, bool on)
{
    return qmp_err(qtest_qmp(qts, "{'execute': 'qom-set', 'arguments': {"
                             "'path': '/machine/peripheral/dn', "
                             "'property': 'snapshot-hold', 'value': %i}}", on));
}

static bool snap_held(QTestState *qts)
{
    QDict *rsp = qtest_qmp(qts, "{'execute': 'qom-get', 'arguments': {"
                           "'path': '/machine/peripheral/dn', 'property': 'snapshot-hold'}}");
    bool v = qdict_haskey(rsp, "return") && qdict_get_bool(rsp, "return");

    qobject_unref(rsp);
    return v;
}

static void expect_err(char *e, const char *want, const char *what)
{
    if (!e || !strstr(e, want)) {
        g_test_message("FAIL %s: got %s, expected an error with \"%s\"", what,
                       e ? e : "success", want);
        g_test_fail();
    }
    g_free(e);
}

static void expect_ok(char *e, const char *what)
{
    if (e) {
        g_test_message("FAIL %s: %s", what, e);
        g_test_fail();
    }
    g_free(e);
}

static void snap_wait_migration(QTestState *qts, const char *who)
{
    int i;

    for (i = 0; i < 60000; i++) {
        QDict *rsp = qtest_qmp(qts, "{'execute': 'query-migrate'}");
        QDict *ret = qdict_get_qdict(rsp, "return");
        g_autofree char *st = g_strdup(ret && qdict_haskey(ret, "status") ?
                                       qdict_get_str(ret, "status") : "");

        qobject_unref(rsp);
        if (!strcmp(st, "completed")) {
            return;
        }
        if (!strcmp(st, "failed") || !strcmp(st, "cancelled")) {
            break;
        }
        g_usleep(1000);
    }
    g_test_message("FAIL %s migration did not complete", who);
    g_test_fail();
}

/*
 * cluster.sh snapshot's cut on one board (docs/fabric.md "Snapshots"):
 * a linked board (loopback=on) refuses to migrate until held; holding
 * needs the VM stopped and the board idle (an IPUSH held by a full ring
 * keeps the Window Controller busy: refused with that reason); once the
 * host drains the ring, the stopped board goes idle, is held and migrates
 * to a file.  Released and run again, the source refuses to migrate again.
 * The restored board runs, is not held, has its link (SMA read from its
 * own port), the migrated Primitive Counter, and moves the next IPUSH
 * through the same ring, data checked.
 */
static void test_snapshot_hold(void)
{
    const uint64_t sma_up = ((uint64_t)DN2_SMA_LINK_READY << DN2_SMA_LINK_SHIFT) | LID;
    const uint32_t big = 300 * 240, small = 64;
    g_autofree char *dir = g_dir_make_tmp("dn2-snap-XXXXXX", NULL);
    g_autofree char *file = g_build_filename(dir, "node.mig", NULL);
    g_autofree char *uri = g_strdup_printf("file:%s", file);
    g_autofree uint8_t *want = g_malloc(big + small);
    g_autofree uint8_t *got = g_malloc(big + small);
    QTestState *src, *dst;
    uint32_t head = 0, done = 0;
    int idle = 0;
    Rig r;
    DN2 *d;
    RingM a;

    d = rig_up(&r, DN2Q_MTU_256);
    src = d->qts;
    expect_err(qmp_err(qtest_qmp(src, "{'execute': 'migrate', 'arguments': {'uri': %s}}", uri)),
               "consistent cut", "migrate of a linked board that is not held");
    expect_err(snap_hold(src, true), "stop the VM first", "hold while the VM runs");

    /* an IPUSH that a full ring holds back */
    ring_setup(&r, &a, 0, 1, 0x10000, 4096);
    dn2q_pattern(want, big + small, 811);
    dn2q_sdfile_put(&r.mem, 0, SRC, want, big);
    dn2q_sdfile_put(&r.mem, 0, SRC + 0x20000, want + big, small);
    dn2q_issue(d, 0, 0, dn2_req_upper(SRC, 0),
               dn2_req_lower(DN2_OP_IPUSH, 0, 0, MY_CLID, 1, 0, big));
    wait_stalls(&r, 1, "the IPUSH ring fills up");
    qtest_qmp_assert_success(src, "{'execute': 'stop'}");
    expect_err(snap_hold(src, true), "Window Controller is busy",
               "hold while an IPUSH waits for ring room");
    EXPECT_TRUE(!snap_held(src), "not held after the refusal");

    /* the host drains the ring while the VM is stopped: the board runs on */
    while (done < big && idle < 200000) {
        uint32_t tail = ring_tail(&r, &a), n;

        if (tail == head) {
            idle++;
            continue;
        }
        idle = 0;
        n = (tail - head + a.size) % a.size;
        ring_get(&r, &a, head, got + done, MIN(n, big - done));
        done += n;
        head = tail;
        ring_set_head(&r, &a, head);
    }
    EXPECT_HEX(done, big, "bytes through the ring before the cut");
    dn2q_mem_eq("IPUSH before the cut", got, want, big, 0);
    dn2q_wait_pc(d, 0, DN2_PC_IPUSH, 1, "the IPUSH completes with the VM stopped");
    EXPECT_HEX(dn2q_wc_state(d), 0, "Window Controller idle");

    expect_ok(snap_hold(src, true), "hold of an idle stopped board");
    EXPECT_TRUE(snap_held(src), "held");
    qtest_qmp_assert_success(src, "{'execute': 'migrate', 'arguments': {'uri': %s}}", uri);
    snap_wait_migration(src, "outgoing");

    /* the source, released and running again, is blocked again */
    expect_ok(snap_hold(src, false), "release");
    qtest_qmp_assert_success(src, "{'execute': 'cont'}");
    expect_err(qmp_err(qtest_qmp(src, "{'execute': 'migrate', 'arguments': {'uri': %s}}", uri)),
               "consistent cut", "migrate after the release");
    qtest_quit(src);

    /* the restore, on the same SO-DIMM file */
    dst = dn2q_vm_start("q35", "-object memory-backend-file,id=m,size=%" PRIu64
                        ",mem-path=%s,share=on -device dimmnet2,id=dn,memdev=m,loopback=on "
                        "-incoming defer", r.mem.size, r.mem.path);
    qtest_qmp_assert_success(dst, "{'execute': 'migrate-incoming', 'arguments': {'uri': %s}}",
                             uri);
    snap_wait_migration(dst, "incoming");
    dn2q_open(&r.d, dst, DN2_DEFAULT_BASE0);
    d = &r.d;
    EXPECT_TRUE(!snap_held(dst), "the restored board is not held");
    EXPECT_HEX(dn2q_sr_rd(d, DN2_SR_SMA), sma_up, "restored: SMA LID and link from its port");
    EXPECT_HEX(dn2q_pcf(d, 0, DN2_PC_IPUSH), 1, "restored: the Primitive Counter");
    dn2q_issue(d, 0, 0, dn2_req_upper(SRC + 0x20000, 0),
               dn2_req_lower(DN2_OP_IPUSH, 0, 0, MY_CLID, 1, 0, small));
    dn2q_wait_pc(d, 0, DN2_PC_IPUSH, 2, "restored: the next IPUSH completes");
    EXPECT_HEX(ring_tail(&r, &a), (head + small) % a.size, "restored: the ring's tail moved on");
    ring_get(&r, &a, head, got, small);
    dn2q_mem_eq("restored: the next IPUSH's data in the ring", got, want + big, small, 0);
    rig_stop(&r);
    unlink(file);
    rmdir(dir);
}

/* No cable: remote primitives wait (choice #22) */
static void test_link_none_waits(void)
{
    QTestState *qts;
    DN2 nd;

    qts = dn2q_vm_start("q35", "-device dimmnet2,id=dn");
    dn2q_open(&nd, qts, DN2_DEFAULT_BASE0);
    EXPECT_HEX(dn2q_sr_rd(&nd, DN2_SR_SMA), 0, "no link: SMA LID 0, link down");
    dn2q_sr_wr(&nd, DN2_SR_SDIMM_INIT, 1);
    dn2q_sr_wr(&nd, DN2_SR_PGID0, PGID);
    dn2q_doorbell(&nd, 0, 0, dn2_req_upper(0, 0),
                  dn2_req_lower(DN2_OP_RVS, 0, 0, MY_CLID, 0, 1, 64));
    dn2q_poll_ur(&nd, 0, DN2_UR_MODULE_STATE, DN2_MASK(16, 0), 1 + DN2_OP_RVS, DN2Q_MAX_POLL,
                 "no link: Module State shows the waiting RVS");
    EXPECT_HEX(dn2q_pcf(&nd, 0, DN2_PC_RVS), 0, "no link: RVS not counted");
    EXPECT_HEX(dn2q_qom_u64(qts, "dn", "stat-tx-packets"), 0, "no link: nothing sent");
    EXPECT_HEX(dn2q_wc_state(&nd), 1 + DN2_OP_RVS, "no link: still waiting");
    dn2q_sr_rd(&nd, DN2_SR_CTL_RESET);
    EXPECT_HEX(dn2q_wc_state(&nd), 0, "no link: Controller Reset ends the wait");
    qtest_quit(qts);
}

/* ================================================================== */
/* BOTF                                                                */
/* ================================================================== */

/* Each of the 4 Write Windows of both WIDs, to SO-DIMM / PW / LLCM. */
/* ------------------------------------------------------------------ */
/* The read mirror (choice #56)                                        */
/* ------------------------------------------------------------------ */

static const uint32_t mirror_regs[] = {
    DN2_UR_CTL_STATUS, DN2_UR_PRIM_COUNTER, DN2_UR_PW_FLAG, DN2_UR_PKT_COUNTER,
    DN2_UR_LHB_ADDR, DN2_UR_MODULE_STATE, DN2_UR_STATUS_ADDR,
    DN2_UR_CMD0_LOWER,          /* write-only: reads 0 (choice #3) */
};
#define MIRROR_NREGS G_N_ELEMENTS(mirror_regs)

/* One step of the script, the same on both boards; it waits until the
 * board is quiet (the step's counter reached) before returning. */
static void mirror_step(Rig *r, int step)
{
    DN2 *d = &r->d;
    uint8_t data[DN2_WIN_SIZE];
    struct dn2_hdr h;
    uint64_t l1;
    uint64_t p1 = dn2q_pkts(d, 1);

    switch (step) {
    case 0:                     /* bring-up */
        bringup(d, DN2Q_MTU_2K, PGID, PGID);
        break;
    case 1:                     /* BOTF WID 0 -> WID 1 SO-DIMM, with status */
        h = mkhdr(DN2_OP_RVS, 0, 1, LID);
        h.eflag = 1;
        l1 = dn2_hdr1_encode(DST, DST);
        dn2q_pattern(data, 200, 56);
        botf_image(r, 0, 2, &h, &l1, 1, data, 200);
        botf(r, 0, 2, 2 * DN2_LINE + 200, "mirror: BOTF");
        wait_pkts(r, 1, p1 + 1, "mirror: BOTF");
        dn2q_poll_ur(d, 1, DN2_UR_STATUS_ADDR, ~0ULL,
                     dn2q_status_next(d, 1, d->st[1].head), DN2Q_MAX_POLL,
                     "mirror: the BOTF's status record");
        break;
    case 2:                     /* the host frees the record (head write) */
        expect_status(r, 1, st_lower(DN2_OP_RVS, 0, 0, 0, 200), LM_ALL,
                      dn2_req_upper(DST, 0), "mirror: BOTF");
        break;
    case 3:                     /* RVS of 3000 bytes: 2 packets (2 KiB MTU) */
        rsend(r, 0, 0, dn2_req_upper(SRC, DST + 0x1000),
              dn2_req_lower(DN2_OP_RVS, 0, 0, MY_CLID, 1, 0, 3000), DN2_PC_RVS,
              "mirror: RVS");
        wait_pkts(r, 1, p1 + 2, "mirror: RVS");
        break;
    case 4:                     /* local VS from Write Window 1 of WID 1 */
        dn2q_pattern(data, 256, 57);
        qtest_memwrite(d->qts, dn2q_ww_addr(d, 1, DN2_WIN_SIZE), data, 256);
        rsend(r, 1, 0, dn2_req_upper(DN2_WIN_SIZE, SRC),
              dn2_req_lower(DN2_OP_VS, 0, 0, 0, 0, 0, 256), DN2_PC_VS, "mirror: VS");
        break;
    case 5:                     /* local VL into Prefetch Window 2 of WID 1 */
        rsend(r, 1, 0, dn2_req_upper(SRC, 2 * DN2_WIN_SIZE + 128),
              dn2_req_lower(DN2_OP_VL, 0, 0, 0, 0, 0, 256), DN2_PC_VL, "mirror: VL");
        dn2q_poll_ur(d, 1, DN2_UR_PW_FLAG, ~0ULL, DN2_PWF_ALL, DN2Q_MAX_POLL,
                     "mirror: VL done (PW flags)");
        break;
    case 6:                     /* Primitive Counter reset of WID 0 */
        dn2q_ur_wr(d, 0, DN2_UR_PRIM_COUNTER, 0);
        break;
    case 7:                     /* Controller Reset by a read (§B) */
        (void)dn2q_sr_rd(d, DN2_SR_CTL_RESET);
        break;
    }
}

/*
 * read-mirror=on (the default) serves User Register reads from a RAM copy
 * the board keeps; read-mirror=off reads every one from the device.  One
 * script on two boards, one of each: after every step every readable
 * register of both WIDs must read the same, whole and in 1/2/4-byte
 * pieces (which the mirror serves as the register's bytes, not counted
 * as bad accesses).
 */
static void test_read_mirror(void)
{
    Rig r[2];
    int step, i, wid;
    unsigned k;

    rig_start_props(&r[0], "");
    rig_start_props(&r[1], ",read-mirror=off");
    for (step = 0; step <= 7; step++) {
        uint64_t v[2][2][MIRROR_NREGS];

        for (i = 0; i < 2; i++) {
            mirror_step(&r[i], step);
            for (wid = 0; wid < 2; wid++) {
                for (k = 0; k < MIRROR_NREGS; k++) {
                    v[i][wid][k] = dn2q_ur_rd(&r[i].d, wid, mirror_regs[k]);
                }
            }
        }
        for (wid = 0; wid < 2; wid++) {
            for (k = 0; k < MIRROR_NREGS; k++) {
                uint64_t a = dn2q_ur_addr(&r[0].d, wid, mirror_regs[k]);
                uint64_t m = v[0][wid][k];

                EXPECT_HEX(m, v[1][wid][k], "step %d: WID %d register 0x%x, mirror vs "
                           "device", step, wid, mirror_regs[k]);
                EXPECT_HEX(qtest_readb(r[0].d.qts, a + 1), (m >> 8) & 0xff,
                           "step %d: WID %d register 0x%x byte 1 from the mirror", step,
                           wid, mirror_regs[k]);
                EXPECT_HEX(qtest_readw(r[0].d.qts, a + 2), (m >> 16) & 0xffff,
                           "step %d: WID %d register 0x%x bytes 2-3 from the mirror", step,
                           wid, mirror_regs[k]);
                EXPECT_HEX(qtest_readl(r[0].d.qts, a + 4), m >> 32,
                           "step %d: WID %d register 0x%x upper half from the mirror", step,
                           wid, mirror_regs[k]);
            }
        }
    }
    EXPECT_HEX(rstat(&r[0], "stat-bad-access"), 0,
               "narrow reads of the mirror are no bad accesses");
    /* writes still reach the device: a 4-byte one is still refused */
    qtest_writel(r[0].d.qts, dn2q_ur_addr(&r[0].d, 0, DN2_UR_PKT_COUNTER), 0);
    EXPECT_HEX(rstat(&r[0], "stat-bad-access"), 1, "a 4-byte write is still counted");
    rig_stop(&r[0]);
    rig_stop(&r[1]);
}

static void test_botf_windows(void)
{
    static const uint32_t dlens[2][4] = { { 496, 1, 77, 200 }, { 13, 255, 8, 333 } };
    Rig r;
    DN2 *d;
    int wid, n;

    d = rig_up(&r, DN2Q_MTU_2K);
    for (wid = 0; wid < 2; wid++) {
        for (n = 0; n < 4; n++) {
            int dwid = wid ^ (n & 1), kind = n;      /* 0 SO-DIMM, 1 PW, 2 LLCM, 3 +status */
            uint32_t dl = dlens[wid][n];
            uint32_t dst = kind == 1 ? 0x300 + 8 * n + 3 * wid :
                           kind == 2 ? 0x4000 + 0x400 * n + wid :
                           DST + 0x1000 * n + 0x10000 * wid + 5;
            uint8_t data[DN2_WIN_SIZE], got[DN2_WIN_SIZE + 32], model[DN2_WIN_SIZE + 32];
            uint64_t l1 = dn2_hdr1_encode(dst, dst);
            struct dn2_hdr h = mkhdr(DN2_OP_RVS, wid, dwid, LID);
            uint64_t p0 = dn2q_pkts(d, dwid);
            g_autofree char *what = g_strdup_printf(
                "BOTF from WW%d#%d (%u data bytes) to WID %d %s", wid, n, dl, dwid,
                kind == 1 ? "Prefetch Window" : kind == 2 ? "LLCM" : "SO-DIMM");

            g_assert(dl <= DN2_WIN_SIZE - 2 * DN2_LINE);
            h.rflag = kind == 1;
            h.lflag = kind == 2;
            h.eflag = kind == 3;
            dn2q_pattern(data, dl, 100 + 10 * wid + n);
            dn2q_pattern(model, dl + 32, 200 + 10 * wid + n);
            if (kind == 1) {
                /* the PW is read-only to the host: read what is there */
                qtest_memread(r.d.qts, dn2q_pw_addr(d, dwid, dst - 16), model, dl + 32);
            } else if (kind == 2) {
                qtest_memwrite(r.d.qts, dn2q_llcm_addr(d, dwid, dst - 16), model, dl + 32);
            } else {
                dn2q_sdfile_put(&r.mem, dwid, dst - 16, model, dl + 32);
            }
            memcpy(model + 16, data, dl);
            botf_image(&r, wid, n, &h, &l1, 1, data, dl);
            botf(&r, wid, n, 2 * DN2_LINE + dl, what);
            wait_pkts(&r, dwid, p0 + 1, what);
            if (kind == 1) {
                qtest_memread(r.d.qts, dn2q_pw_addr(d, dwid, dst - 16), got, dl + 32);
                dn2q_mem_eq(what, got, model, dl + 32, dst - 16);
            } else if (kind == 2) {
                qtest_memread(r.d.qts, dn2q_llcm_addr(d, dwid, dst - 16), got, dl + 32);
                dn2q_mem_eq(what, got, model, dl + 32, dst - 16);
            } else {
                sd_expect(&r, dwid, dst - 16, model, dl + 32, what);
            }
            if (kind == 3) {
                uint32_t t0 = r.d.st[dwid].head;
                g_autofree char *w = g_strdup_printf("%s: Status NWA advanced by 16", what);
                dn2q_poll_ur(d, dwid, DN2_UR_STATUS_ADDR, ~0ULL, dn2q_status_next(d, dwid, t0),
                             DN2Q_MAX_POLL, w);
                EXPECT_HEX(dn2q_cs(d, dwid) & (DN2_CS_STATUS_EMPTY | DN2_CS_STATUS_FULL), 0,
                           "%s: status ring neither empty nor full", what);
                expect_status(&r, dwid, st_lower(DN2_OP_RVS, 0, 0, wid, dl), LM_ALL,
                              dn2_req_upper(dst, 0), what);
                EXPECT_HEX(dn2q_cs(d, dwid) & DN2_CS_STATUS_EMPTY, DN2_CS_STATUS_EMPTY,
                           "%s: head write frees the record (bit 4)", what);
            }
            expect_no_status(&r, dwid, what);
        }
    }
    EXPECT_HEX(dn2q_pcf(d, 0, DN2_PC_BOTF), 4, "Primitive Counter BOTF of WID 0");
    EXPECT_HEX(dn2q_pcf(d, 1, DN2_PC_BOTF), 4, "Primitive Counter BOTF of WID 1");
    EXPECT_HEX(dn2q_pcf(d, 0, DN2_PC_RVS), 0, "BOTF does not count as RVS");
    rig_stop(&r);
}

/* vtime=on on the loopback cable: a packet arrives vt-latency-ns of virtual
 * time after it left, not a nanosecond before (the board needs no switch
 * to be deterministic alone). */
static void test_vtime_loopback(void)
{
    Rig r;
    DN2 *d;
    uint8_t data[64];
    uint64_t l1 = dn2_hdr1_encode(0x4000, 0x4000);
    struct dn2_hdr h = mkhdr(DN2_OP_RVS, 0, 1, LID);
    const char *what = "BOTF to itself in virtual time";
    int64_t t0;

    d = rig_start_props(&r, ",vtime=on,vt-latency-ns=2500");
    bringup(d, DN2Q_MTU_2K, PGID, PGID);
    t0 = qtest_clock_step(r.d.qts, 10000);
    h.lflag = 1;
    dn2q_pattern(data, sizeof(data), 77);
    botf_image(&r, 0, 0, &h, &l1, 1, data, sizeof(data));
    botf(&r, 0, 0, 2 * DN2_LINE + sizeof(data), what);
    EXPECT_HEX(dn2q_pkts(d, 1), 0, "%s: nothing at the send time", what);
    EXPECT_HEX(qtest_clock_step(r.d.qts, 2499), t0 + 2499, "%s: the clock", what);
    EXPECT_HEX(dn2q_pkts(d, 1), 0, "%s: nothing 1 ns before the latency", what);
    qtest_clock_step(r.d.qts, 1);
    EXPECT_HEX(dn2q_pkts(d, 1), 1, "%s: delivered at send + 2500 ns", what);
    rig_stop(&r);
}

/*
 * timing=thesis: the Prefetch Window is write-back memory to the host, so a
 * line the board wrote costs the host a fill across the memory bus the
 * first time it reads it, and nothing after that: the first read of a
 * window's stale line fills the window's stale lines, that line after
 * uc-read-ns (189 ns), the others fill-next-ns (40 ns) apart behind it
 * (docs/timing.md, "The host's accesses").  The qtest accelerator has no vCPU to charge: the fills and
 * what they cost are counted (stat-host-fills, stat-host-fill-ns), and the
 * clock is stepped as a vCPU that waited would have been.  Without the
 * model the PW is RAM: nothing is counted.
 */
static void pw_fill_case(bool timing)
{
    const char *what = timing ? "timing=thesis" : "timing=off";
    Rig r;
    DN2 *d;
    uint8_t data[DN2_WIN_SIZE];
    int k;

    d = rig_start_props(&r, timing ? ",vtime=on,timing=thesis" : ",vtime=on");
    bringup(d, DN2Q_MTU_2K, PGID, PGID);
    dn2q_pattern(data, sizeof(data), 91);
    dn2q_sdfile_put(&r.mem, 0, 0x1000, data, sizeof(data));
    qtest_clock_step(r.d.qts, 10000);
    dn2q_issue(d, 0, 0, dn2_req_upper(0x1000, 0),
               dn2_req_lower(DN2_OP_VL, 0, 0, 0, 0, 0, DN2_WIN_SIZE));
    for (k = 0; k < 1000 && (dn2q_pwf(d, 0) & DN2_PWF_WIN_MASK(0)) != DN2_PWF_WIN_MASK(0);
         k++) {
        qtest_clock_step(r.d.qts, 100);
    }
    EXPECT_HEX(dn2q_pwf(d, 0) & DN2_PWF_WIN_MASK(0), DN2_PWF_WIN_MASK(0),
               "%s: the VL filled PW window 0", what);
    EXPECT_HEX(rstat(&r, "stat-host-fills"), 0, "%s: no fill before a read", what);

    /* line 0: its window's 8 lines come across the bus, line 0 first */
    EXPECT_HEX(qtest_readq(r.d.qts, dn2q_pw_addr(d, 0, 0)), ldq_le_p(data),
               "%s: PW word 0", what);
    EXPECT_HEX(rstat(&r, "stat-host-fills"), 8 * timing,
               "%s: the first read fills the window's 8 lines", what);
    EXPECT_HEX(rstat(&r, "stat-host-fill-ns"), timing ? 189 : 0,
               "%s: the first line read is in after uc-read-ns", what);
    qtest_clock_step(r.d.qts, 189);
    /* line 0 again, another word of it: in the cache */
    EXPECT_HEX(qtest_readq(r.d.qts, dn2q_pw_addr(d, 0, 8)), ldq_le_p(data + 8),
               "%s: PW word 1", what);
    qtest_readq(r.d.qts, dn2q_pw_addr(d, 0, 0));
    EXPECT_HEX(rstat(&r, "stat-host-fill-ns"), timing ? 189 : 0,
               "%s: line 0 read again: free", what);
    /* line 1: in fill-next-ns after line 0 */
    EXPECT_HEX(qtest_readq(r.d.qts, dn2q_pw_addr(d, 0, 64)), ldq_le_p(data + 64),
               "%s: PW line 1", what);
    EXPECT_HEX(rstat(&r, "stat-host-fill-ns"), timing ? 189 + 40 : 0,
               "%s: the next line of the window costs fill-next-ns", what);
    /* line 5 long after: it came in meanwhile */
    qtest_clock_step(r.d.qts, 1000);
    EXPECT_HEX(qtest_readq(r.d.qts, dn2q_pw_addr(d, 0, 5 * 64)), ldq_le_p(data + 5 * 64),
               "%s: PW line 5", what);
    EXPECT_HEX(rstat(&r, "stat-host-fill-ns"), timing ? 189 + 40 : 0,
               "%s: a line that came in before it was read costs nothing", what);
    /* window 1: the board wrote nothing there */
    qtest_readq(r.d.qts, dn2q_pw_addr(d, 0, DN2_WIN_SIZE));
    EXPECT_HEX(rstat(&r, "stat-host-fills"), 8 * timing,
               "%s: a line the board did not write: free", what);
    /* a second VL into window 0, of line 0 only: that line is stale again */
    dn2q_issue(d, 0, 0, dn2_req_upper(0x1000, 0),
               dn2_req_lower(DN2_OP_VL, 0, 0, 0, 0, 0, 64));
    for (k = 0; k < 1000 && dn2q_pcf(d, 0, DN2_PC_VL) < 2; k++) {
        qtest_clock_step(r.d.qts, 100);
    }
    qtest_readq(r.d.qts, dn2q_pw_addr(d, 0, 0));
    qtest_readq(r.d.qts, dn2q_pw_addr(d, 0, 64));
    EXPECT_HEX(rstat(&r, "stat-host-fills"), 9 * timing,
               "%s: after a VL of line 0, line 0 alone is filled again", what);
    EXPECT_HEX(rstat(&r, "stat-host-fill-ns"), timing ? 2 * 189 + 40 : 0,
               "%s: ... at uc-read-ns", what);
    rig_stop(&r);
}

static void test_vtime_pw_fill(void)
{
    pw_fill_case(true);
    pw_fill_case(false);
}

/* Size 0 dropped, > 512 clipped, odd sizes, and BOTF-borne RVL. */
static void test_botf_sizes(void)
{
    Rig r;
    DN2 *d;
    uint8_t img[DN2_WIN_SIZE], model[DN2_WIN_SIZE + 64];
    uint64_t ign, tx, l1, more[3];
    struct dn2_hdr h;
    uint32_t dst = DST + 0x100;
    g_autofree uint8_t *src = NULL;
    g_autofree uint8_t *bg = NULL;

    d = rig_up(&r, DN2Q_MTU_2K);

    /* size 0: an invalid request, dropped (stat-ignored), nothing sent */
    h = mkhdr(DN2_OP_RVS, 0, 1, LID);
    l1 = dn2_hdr1_encode(dst, dst);
    dn2q_pattern(img, sizeof(img), 301);
    botf_image(&r, 0, 1, &h, &l1, 1, img, 64);
    ign = rstat(&r, "stat-ignored");
    tx = rstat(&r, "stat-tx-packets");
    botf_issue(&r, 0, 1, 0);
    botf(&r, 0, 1, 16 + 8, "BOTF after a size-0 BOTF");
    wait_pkts(&r, 1, 1, "only the non-empty BOTF arrives");
    EXPECT_HEX(dn2q_pcf(d, 0, DN2_PC_BOTF), 1, "size-0 BOTF not counted");
    EXPECT_HEX(rstat(&r, "stat-ignored"), ign + 1, "size-0 BOTF: stat-ignored");
    EXPECT_HEX(rstat(&r, "stat-tx-packets"), tx + 1, "size-0 BOTF: no packet");

    /* size > 512 clipped to 512: 496 data bytes from the window, no more */
    dn2q_pattern(img, sizeof(img), 302);
    botf_image(&r, 0, 3, &h, &l1, 1, img, DN2_WIN_SIZE - 16);
    bg = sd_bg(&r, 1, dst - 16, DN2_WIN_SIZE + 32, 303);
    memcpy(model, bg, DN2_WIN_SIZE + 32);
    memcpy(model + 16, img, DN2_WIN_SIZE - 16);
    botf(&r, 0, 3, 1000, "BOTF of 1000 bytes from WW0#3");
    wait_pkts(&r, 1, 2, "clipped BOTF");
    sd_expect(&r, 1, dst - 16, model, DN2_WIN_SIZE + 32,
              "BOTF size 1000 clipped to 512 (496 data bytes)");

    /* maximum field value 1023 too, from WW1#0 */
    h = mkhdr(DN2_OP_RVS, 1, 0, LID);
    dn2q_pattern(img, sizeof(img), 304);
    botf_image(&r, 1, 0, &h, &l1, 1, img, DN2_WIN_SIZE - 16);
    g_free(bg);
    bg = sd_bg(&r, 0, dst - 16, DN2_WIN_SIZE + 32, 305);
    memcpy(model, bg, DN2_WIN_SIZE + 32);
    memcpy(model + 16, img, DN2_WIN_SIZE - 16);
    botf(&r, 1, 0, 1023, "BOTF of 1023 bytes from WW1#0");
    wait_pkts(&r, 0, 1, "clipped BOTF (1023)");
    sd_expect(&r, 0, dst - 16, model, DN2_WIN_SIZE + 32, "BOTF size 1023 clipped to 512");

    /* TYPE = RVL in a BOTF image makes the remote read (§4.6.2): WID 0
     * asks WID 1 for 300 bytes at SRC, landing at WID 0's dst, eflag. */
    src = sd_bg(&r, 1, SRC, 300, 306);
    g_free(bg);
    bg = sd_bg(&r, 0, dst + 0x1000 - 8, 316, 307);
    memcpy(model, bg, 316);
    memcpy(model + 8, src, 300);
    h = mkhdr(DN2_OP_RVL, 0, 1, LID);
    h.eflag = 1;
    more[0] = dn2_hdr1_encode(SRC, dst + 0x1000);
    more[1] = dn2_hdr1_encode(300, 0);
    more[2] = 0;
    botf_image(&r, 0, 2, &h, more, 3, NULL, 0);
    botf(&r, 0, 2, 4 * DN2_LINE, "BOTF-borne RVL");
    expect_status(&r, 0, st_lower(DN2_OP_RVS, 0, 0, 1, 300), LM_NO_DI,
                  dn2_req_upper(dst + 0x1000, 0), "data of a BOTF-borne RVL");
    sd_expect(&r, 0, dst + 0x1000 - 8, model, 316, "data read by a BOTF-borne RVL");
    EXPECT_HEX(dn2q_pcf(d, 0, DN2_PC_RVL), 0, "a BOTF-borne RVL counts as BOTF only");
    rig_stop(&r);
}

/* The receiver's reading of the header words (dn2_abi.h §5, choices #27,
 * #35, #36), with packets built by hand: independent of the send side.
 * Every path runs on a fresh rig (MTU 2 KiB) with `data` a known pattern. */

/* RVS, a later packet of a primitive: 2nd DW = {DSTOff of this packet,
 * Initial DSTOff}; the record gives the bytes so far and the first address */
static void wire_rvs_later_packet(Rig *r, DN2 *d, uint8_t *data)
{
    const uint32_t D = DST + 0x4000;
    struct dn2_hdr h;
    uint64_t more[3];
    g_autofree uint8_t *m = NULL;

    m = sd_bg(r, 1, D, 0x100, 1501);
    memcpy(m + 100, data, 50);
    h = mkhdr(DN2_OP_RVS, 0, 1, LID);
    h.eflag = 1;
    more[0] = dn2_hdr1_encode(D, D + 100);
    botf_image(r, 0, 0, &h, more, 1, data, 50);
    botf(r, 0, 0, 16 + 50, "hand-made RVS packet at DSTOff + 100");
    expect_status(r, 1, st_lower(DN2_OP_RVS, 0, 0, 0, 150), LM_ALL, dn2_req_upper(D, 0),
                  "hand-made RVS packet at DSTOff + 100");
    sd_expect(r, 1, D, m, 0x100, "hand-made RVS packet: data at its DSTOff");
}

/* RVSS: 2nd DW = {index of the first element, Initial DSTOff}, 3rd =
 * {Stride, Total}, Iteration = elements in this packet (choice #35) */
static void wire_rvss(Rig *r, DN2 *d, uint8_t *data)
{
    const uint32_t D = DST + 0x4000;
    struct dn2_hdr h;
    uint64_t more[3];
    g_autofree uint8_t *m = NULL;
    uint32_t i;

    m = sd_bg(r, 1, D + 0x1000, 0x100, 1502);
    for (i = 0; i < 3; i++) {
        memcpy(m + (5 + i) * 16, data + 4 * i, 4);
    }
    h = mkhdr(DN2_OP_RVSS, 0, 1, LID);
    h.dtype = DN2_DTYPE_4B;
    h.iter = 3;
    h.eflag = 1;
    more[0] = dn2_hdr1_encode(D + 0x1000, 5);
    more[1] = dn2_hdr1_encode(32, 16);
    botf_image(r, 0, 1, &h, more, 2, data, 12);
    botf(r, 0, 1, 24 + 12, "hand-made RVSS packet (elements 5..7)");
    expect_status(r, 1, st_lower(DN2_OP_RVSS, DN2_DTYPE_4B, 3, 0, 32), LM_NO_IT,
                  dn2_req_upper(D + 0x1000, 0), "hand-made RVSS packet");
    sd_expect(r, 1, D + 0x1000, m, 0x100, "hand-made RVSS packet: elements 5..7");
}

/* RVSI: element i goes to Initial + List[first + i], list in the
 * receiver's SO-DIMM */
static void wire_rvsi(Rig *r, DN2 *d, uint8_t *data)
{
    const uint32_t D = DST + 0x4000;
    struct dn2_hdr h;
    uint64_t more[3];
    g_autofree uint8_t *m = NULL;
    uint32_t i, L[8] = { 0x70, 0x10, 0x60, 0x28, 0x00, 0x48, 0x38, 0x18 };

    m = sd_bg(r, 1, D + 0x2000, 0x100, 1503);
    for (i = 0; i < 8; i++) {
        sd_put_le32(r, 1, LIST + 4 * i, L[i]);
    }
    for (i = 0; i < 4; i++) {
        memcpy(m + L[2 + i], data + 100 + 8 * i, 8);
    }
    h = mkhdr(DN2_OP_RVSI, 0, 1, LID);
    h.dtype = DN2_DTYPE_8B;
    h.iter = 4;
    h.eflag = 1;
    more[0] = dn2_hdr1_encode(D + 0x2000, 2);
    more[1] = dn2_hdr1_encode(64, LIST);
    botf_image(r, 0, 2, &h, more, 2, data + 100, 32);
    botf(r, 0, 2, 24 + 32, "hand-made RVSI packet (elements 2..5)");
    expect_status(r, 1, st_lower(DN2_OP_RVSI, DN2_DTYPE_8B, 4, 0, 64), LM_NO_IT,
                  dn2_req_upper(D + 0x2000, 0), "hand-made RVSI packet");
    sd_expect(r, 1, D + 0x2000, m, 0x100, "hand-made RVSI packet: elements 2..5");
}

/* RVL with a 4th DW: the requester's landing pattern (VSS 8 x 8 B,
 * stride 24), the data read at SRCOff of the responder */
static void wire_rvl_landing(Rig *r, DN2 *d, uint8_t *data)
{
    const uint32_t D = DST + 0x4000;
    struct dn2_hdr h;
    uint64_t more[3];
    g_autofree uint8_t *m = NULL;
    uint32_t i;

    dn2q_sdfile_put(&r->mem, 1, SRC + 0x500, data + 128, 64);
    m = sd_bg(r, 0, D + 0x3000, 0x100, 1504);
    for (i = 0; i < 8; i++) {
        memcpy(m + 24 * i, data + 128 + 8 * i, 8);
    }
    h = mkhdr(DN2_OP_RVL, 0, 1, LID);
    h.eflag = 1;
    more[0] = dn2_hdr1_encode(SRC + 0x500, D + 0x3000);
    more[1] = dn2_hdr1_encode(64, 0);
    more[2] = dn2_req_ex(DN2_OP_VSS, DN2_DTYPE_8B, 8, 24);
    botf_image(r, 0, 3, &h, more, 3, NULL, 0);
    botf(r, 0, 3, 32, "hand-made RVL packet with a landing pattern");
    expect_status(r, 0, st_lower(DN2_OP_RVSS, DN2_DTYPE_8B, 8, 1, 64), LM_NO_IT,
                  dn2_req_upper(D + 0x3000, 0), "hand-made RVL with a landing pattern");
    sd_expect(r, 0, D + 0x3000, m, 0x100, "hand-made RVL: strided landing");
}

/* IPUSH: 2nd DW = {offset in the message, message bytes} (choice #36);
 * pflag asks for a record for this packet (choice #34) */
static void wire_ipush_pflag(Rig *r, DN2 *d, uint8_t *data)
{
    RingM ring, *a = &ring;
    struct dn2_hdr h;
    uint64_t more[3];
    uint64_t p0;

    ring_setup(r, a, 0, 1, 0x1000, 1024);
    h = mkhdr(DN2_OP_IPUSH, 0, 1, LID);
    h.pflag = 1;
    more[0] = dn2_hdr1_encode(100, 0);
    botf_image(r, 0, 0, &h, more, 1, data, 40);
    botf(r, 0, 0, 16 + 40, "hand-made IPUSH packet with pflag");
    expect_status(r, 1, st_lower(DN2_OP_IPUSH, 0, 0, 0, 40), LM_ALL,
                  dn2_req_upper(0x1000, 0), "hand-made IPUSH packet with pflag");
    EXPECT_HEX(ring_tail(r, a), 40, "hand-made IPUSH: Tail");
    ring_expect(r, a, 0, data, 40, "hand-made IPUSH packet");
    h.pflag = 0;
    more[0] = dn2_hdr1_encode(100, 40);
    botf_image(r, 0, 1, &h, more, 1, data + 40, 60);
    p0 = dn2q_pkts(d, 1);
    botf(r, 0, 1, 16 + 60, "hand-made IPUSH packet without pflag");
    wait_pkts(r, 1, p0 + 1, "hand-made IPUSH packet without pflag");
    expect_no_status(r, 1, "IPUSH packet without pflag or eflag");
    EXPECT_HEX(ring_tail(r, a), 104, "hand-made IPUSH: Tail rounded up to 8");
    ring_expect(r, a, 40, data + 40, 60, "second hand-made IPUSH packet");
}

/* The ring where the two hand-made IPUSH packets left it (Tail 104). */
static void wire_ring_at_104(Rig *r, RingM *a)
{
    ring_setup(r, a, 0, 1, 0x1000, 1024);
    dn2q_amt_set(&r->d, a->dwid, a->entry, DN2_AMT_TAIL, 104);
    ring_set_head(r, a, 104);
}

/* LHS in two packets: Valid toggles with the first, Complete with the
 * last; 100 bytes: 48 inline, 44 in the ring at Pointer */
static void wire_lhs_two_packets(Rig *r, DN2 *d, uint8_t *data)
{
    RingM ring, *a = &ring;
    struct dn2_hdr h;
    uint64_t more[3];
    uint8_t e[DN2_LHB_ENTRY];

    wire_ring_at_104(r, a);
    stq_le_p(data, dn2_envelope(0x5a5a, 0x1234, 0x87654321));
    h = mkhdr(DN2_OP_IPUSH, 0, 1, LID);
    h.lflag = 1;
    h.pflag = 1;
    more[0] = dn2_hdr1_encode(100, 0);
    botf_image(r, 0, 2, &h, more, 1, data, 60);
    botf(r, 0, 2, 16 + 60, "hand-made LHS first packet");
    expect_status(r, 1, st_lower(DN2_OP_IPUSH, 0, 0, 0, 100), LM_ALL,
                  dn2_req_upper(0, 0), "hand-made LHS first packet");
    EXPECT_HEX(dn2q_ur_rd(d, 1, DN2_UR_LHB_ADDR), DN2_LHB_ENTRY, "LHS: LH Buffer tail");
    qtest_memread(r->d.qts, dn2q_lhb_addr(d, 1, 0), e, sizeof(e));
    EXPECT_HEX(ldq_le_p(e) & (DN2_LH_VALID | DN2_LH_COMPLETE), DN2_LH_VALID,
               "LHS after the first packet: Valid toggled, Complete not yet");
    EXPECT_HEX(DN2_FGET(ldq_le_p(e), DN2_LH_POINTER), 0x1000 + 104,
               "LHS Pointer = the ring's Tail when the message started");
    EXPECT_HEX(DN2_FGET(ldq_le_p(e), DN2_LH_CONTEXT), 0x5a5a, "LHS Context");
    EXPECT_HEX(DN2_FGET(ldq_le_p(e), DN2_LH_RANK), 0x1234, "LHS Rank");
    EXPECT_HEX(ldq_le_p(e + 8), DN2_FPUT(0x87654321, DN2_LH_TAG) | 92, "LHS Tag and Size");
    dn2q_mem_eq("LHS inline data", e + 16, data + 8, 48, 0);
    EXPECT_HEX(ring_tail(r, a), 104 + 48, "LHS: ring space for the whole overflow taken");
    more[0] = dn2_hdr1_encode(100, 60);
    h.eflag = 1;
    botf_image(r, 0, 3, &h, more, 1, data + 60, 40);
    botf(r, 0, 3, 16 + 40, "hand-made LHS last packet");
    expect_status(r, 1, st_lower(DN2_OP_IPUSH, 0, 0, 0, 100), LM_ALL,
                  dn2_req_upper(0, 0), "hand-made LHS last packet");
    qtest_memread(r->d.qts, dn2q_lhb_addr(d, 1, 0), e, sizeof(e));
    EXPECT_HEX(ldq_le_p(e) & (DN2_LH_VALID | DN2_LH_COMPLETE),
               DN2_LH_VALID | DN2_LH_COMPLETE, "LHS after the last packet: Complete toggled");
    ring_expect(r, a, 104, data + 56, 44, "LHS overflow at Pointer");
    expect_no_status(r, 1, "hand-made LHS");
}

typedef struct WireCase {
    const char *path;
    void (*run)(Rig *r, DN2 *d, uint8_t *data);
} WireCase;

static const WireCase wire_cases[] = {
    { "/dimmnet2-remote/botf/wire-format/rvs-later-packet", wire_rvs_later_packet },
    { "/dimmnet2-remote/botf/wire-format/rvss", wire_rvss },
    { "/dimmnet2-remote/botf/wire-format/rvsi", wire_rvsi },
    { "/dimmnet2-remote/botf/wire-format/rvl-landing-pattern", wire_rvl_landing },
    { "/dimmnet2-remote/botf/wire-format/ipush-pflag", wire_ipush_pflag },
    { "/dimmnet2-remote/botf/wire-format/lhs-two-packets", wire_lhs_two_packets },
};

static void test_botf_wire_case(const void *opaque)
{
    const WireCase *c = opaque;
    Rig r;
    DN2 *d = rig_up(&r, DN2Q_MTU_2K);
    uint8_t data[256];

    dn2q_pattern(data, sizeof(data), 1500);
    c->run(&r, d, data);
    rig_stop(&r);
}

/* ================================================================== */
/* The receive-status ring: records, full/empty, back-pressure          */
/* ================================================================== */

/* The record in ring slot `slot` (LLCM offset) of WID wid, in place. */
static void expect_record_at(DN2 *d, int wid, uint32_t slot, uint64_t lower,
                             uint64_t upper, const char *what)
{
    uint64_t lo = qtest_readq(d->qts, dn2q_llcm_addr(d, wid, slot));
    uint64_t up = qtest_readq(d->qts, dn2q_llcm_addr(d, wid, slot + 8));

    EXPECT_HEX(lo, lower, "%s: Lower", what);
    EXPECT_HEX(up, upper, "%s: Upper", what);
}

static void test_status_ring(void)
{
    Rig r;
    DN2 *d;
    const uint32_t ring = 0x600;
    uint8_t data[6][100], bg[6][100];
    uint64_t stalls;
    int i;

    d = rig_up(&r, DN2Q_MTU_2K);
    dn2q_status_setup(d, 1, ring, 0x01);            /* 64 bytes: 3 records usable */
    EXPECT_HEX(dn2q_ur_rd(d, 1, DN2_UR_STATUS_ADDR), ring, "NWA = Status Initial Address");
    EXPECT_HEX(dn2q_cs(d, 1) & (DN2_CS_STATUS_EMPTY | DN2_CS_STATUS_FULL), DN2_CS_STATUS_EMPTY,
               "ring empty");
    for (i = 0; i < 6; i++) {
        dn2q_pattern(data[i], 100, 400 + i);
        dn2q_sdfile_put(&r.mem, 0, SRC + 0x100 * i, data[i], 100);
        dn2q_pattern(bg[i], 100, 410 + i);
        dn2q_sdfile_put(&r.mem, 1, DST + 0x100 * i, bg[i], 100);
    }
    /* three RVS with eflag fill the ring: records at 0x600, 0x610, 0x620 */
    for (i = 0; i < 3; i++) {
        g_autofree char *what = g_strdup_printf("RVS #%d into a 64-byte ring", i);

        rsend(&r, 0, 0, dn2_req_upper(SRC + 0x100 * i, DST + 0x100 * i),
              dn2_req_lower(DN2_OP_RVS, 0, 0, MY_CLID, 1, 1, 100 - i), DN2_PC_RVS, what);
        wait_pkts(&r, 1, i + 1, what);
        dn2q_poll_ur(d, 1, DN2_UR_STATUS_ADDR, ~0ULL, ring + 16 * (i + 1), DN2Q_MAX_POLL, what);
        expect_record_at(d, 1, ring + 16 * i, st_lower(DN2_OP_RVS, 0, 0, 0, 100 - i),
                         dn2_req_upper(DST + 0x100 * i, 0), what);
        EXPECT_HEX(dn2q_cs(d, 1) & (DN2_CS_STATUS_EMPTY | DN2_CS_STATUS_FULL),
                   i == 2 ? DN2_CS_STATUS_FULL : 0, "%s: Controller Status bits 3/4", what);
        memcpy(bg[i], data[i], 100 - i);
        sd_expect(&r, 1, DST + 0x100 * i, bg[i], 100, what);
    }
    /* a record-less RVS passes a full ring */
    rsend(&r, 0, 0, dn2_req_upper(SRC + 0x300, DST + 0x300),
          dn2_req_lower(DN2_OP_RVS, 0, 0, MY_CLID, 1, 0, 100), DN2_PC_RVS, "RVS without eflag");
    wait_pkts(&r, 1, 4, "an RVS without eflag is not held by a full status ring");
    memcpy(bg[3], data[3], 100);
    sd_expect(&r, 1, DST + 0x300, bg[3], 100, "RVS without eflag, ring full");

    /* two more with eflag: back-pressure, nothing of them written */
    stalls = rstat(&r, "stat-rx-stalls");
    for (i = 4; i < 6; i++) {
        rsend(&r, 0, 0, dn2_req_upper(SRC + 0x100 * i, DST + 0x100 * i),
              dn2_req_lower(DN2_OP_RVS, 0, 0, MY_CLID, 1, 1, 100), DN2_PC_RVS,
              "RVS into a full ring");
    }
    wait_stalls(&r, stalls + 1, "status ring full: the packet is refused");
    EXPECT_HEX(dn2q_pkts(d, 1), 4, "nothing accepted while the status ring is full");
    EXPECT_HEX(dn2q_ur_rd(d, 1, DN2_UR_STATUS_ADDR), ring + 0x30, "NWA stays");
    sd_expect(&r, 1, DST + 0x400, bg[4], 100, "data of the refused RVS not written");
    sd_expect(&r, 1, DST + 0x500, bg[5], 100, "data of the next RVS not written");

    /* the host frees one record: the first refused RVS lands, in slot 0x630 */
    dn2q_ur_wr(d, 1, DN2_UR_STATUS_ADDR, ring + 0x10);
    wait_pkts(&r, 1, 5, "after the head write");
    dn2q_poll_ur(d, 1, DN2_UR_STATUS_ADDR, ~0ULL, ring, DN2Q_MAX_POLL,
                 "NWA wraps to the ring start after the last slot");
    expect_record_at(d, 1, ring + 0x30, st_lower(DN2_OP_RVS, 0, 0, 0, 100),
                     dn2_req_upper(DST + 0x400, 0), "record in the last slot");
    memcpy(bg[4], data[4], 100);
    sd_expect(&r, 1, DST + 0x400, bg[4], 100, "refused RVS delivered after the head write");
    EXPECT_HEX(dn2q_cs(d, 1) & DN2_CS_STATUS_FULL, DN2_CS_STATUS_FULL, "full again");
    EXPECT_HEX(dn2q_pkts(d, 1), 5, "the last RVS still held");
    sd_expect(&r, 1, DST + 0x500, bg[5], 100, "the last RVS still not written");
    dn2q_ur_wr(d, 1, DN2_UR_STATUS_ADDR, ring + 0x20);
    wait_pkts(&r, 1, 6, "after the second head write");
    dn2q_poll_ur(d, 1, DN2_UR_STATUS_ADDR, ~0ULL, ring + 0x10, DN2Q_MAX_POLL,
                 "record at the ring start");
    expect_record_at(d, 1, ring, st_lower(DN2_OP_RVS, 0, 0, 0, 100),
                     dn2_req_upper(DST + 0x500, 0), "wrapped record");
    memcpy(bg[5], data[5], 100);
    sd_expect(&r, 1, DST + 0x500, bg[5], 100, "last RVS delivered");
    dn2q_ur_wr(d, 1, DN2_UR_STATUS_ADDR, ring + 0x10);
    EXPECT_HEX(dn2q_cs(d, 1) & (DN2_CS_STATUS_EMPTY | DN2_CS_STATUS_FULL), DN2_CS_STATUS_EMPTY,
               "all records consumed: empty");
    EXPECT_HEX(dn2q_cs(d, 0) & (DN2_CS_STATUS_EMPTY | DN2_CS_STATUS_FULL), DN2_CS_STATUS_EMPTY,
               "WID 0's ring untouched");
    rig_stop(&r);
}

/* ================================================================== */
/* RVS: lengths x MTU, both directions                                 */
/* ================================================================== */

static void test_rvs_lengths(void)
{
    static const unsigned codes[] = {
        DN2Q_MTU_256, DN2Q_MTU_512, DN2Q_MTU_1K, DN2Q_MTU_2K, DN2Q_MTU_4K,
    };
    Rig r;
    DN2 *d;
    unsigned m, k;
    int dir;

    d = rig_up(&r, DN2Q_MTU_2K);
    for (m = 0; m < G_N_ELEMENTS(codes) && !d->dead; m++) {
        uint32_t mtu = dn2_mtu_bytes(codes[m]), P = mtu - 2 * DN2_LINE;
        const uint32_t lens[] = { 0, 1, 7, P, P + 1, 3 * P + 100, 9216 };

        dn2q_sr_wr(d, DN2_SR_MTU, codes[m]);
        for (dir = 0; dir < 2; dir++) {
            int s = dir, t = !dir;
            for (k = 0; k < G_N_ELEMENTS(lens); k++) {
                uint32_t len = lens[k];
                uint32_t src = SRC + 3 + 0x10 * k, dst = DST + 5 + 0x20 * k;
                unsigned npk = len ? DIV_ROUND_UP(len, P) : 1;
                int eflag = k != 2;
                uint32_t seed = 1000 + 100 * m + 10 * dir + k;
                g_autofree uint8_t *data = g_malloc(len + 1);
                g_autofree uint8_t *model = NULL;
                g_autofree char *what = g_strdup_printf(
                    "RVS WID %d -> WID %d, %u bytes, MTU %u%s", s, t, len, mtu,
                    eflag ? "" : ", no eflag");

                dn2q_pattern(data, len, seed);
                dn2q_sdfile_put(&r.mem, s, src, data, len);
                model = sd_bg(&r, t, dst - 32, len + 64, seed + 50000);
                memcpy(model + 32, data, len);
                dn2q_ur_wr(d, t, DN2_UR_PKT_COUNTER, 0);
                rsend(&r, s, 0, dn2_req_upper(src, dst),
                      dn2_req_lower(DN2_OP_RVS, 0, 0, MY_CLID, t, eflag, len),
                      DN2_PC_RVS, what);
                if (eflag) {
                    expect_status(&r, t, st_lower(DN2_OP_RVS, 0, 0, s, len), LM_ALL,
                                  dn2_req_upper(dst, 0), what);
                }
                wait_pkts(&r, t, npk, what);
                sd_expect(&r, t, dst - 32, model, len + 64, what);
                expect_no_status(&r, t, what);
            }
        }
    }
    /* thesis example: 9 KB at MTU 2048 is 5 packets, eflag only on the last */
    dn2q_sr_wr(d, DN2_SR_MTU, DN2Q_MTU_2K);
    dn2q_ur_wr(d, 1, DN2_UR_PKT_COUNTER, 0);
    rsend(&r, 0, 0, dn2_req_upper(SRC, DST), dn2_req_lower(DN2_OP_RVS, 0, 0, MY_CLID, 1, 1,
          9 * 1024), DN2_PC_RVS, "9 KB RVS at MTU 2048");
    expect_status(&r, 1, st_lower(DN2_OP_RVS, 0, 0, 0, 9 * 1024), LM_ALL,
                  dn2_req_upper(DST, 0), "9 KB RVS at MTU 2048");
    EXPECT_HEX(dn2q_pkts(d, 1), 5, "9 KB at MTU 2048 = 5 packets (Table 4.15)");
    expect_no_status(&r, 1, "9 KB RVS: one record only");
    rig_stop(&r);
}

/* ================================================================== */
/* RVSS / RVSI: DTYPE 0..7, Iteration 1..255                            */
/* ================================================================== */

static uint32_t perm(uint32_t i, uint32_t n)
{
    return (i * 37 + 11) % n;
}

static void test_rvs_strided_list(void)
{
    static const unsigned iters[] = { 1, 7, 255 };
    Rig r;
    DN2 *d;
    int dir, form;
    unsigned dt, k;

    d = rig_up(&r, DN2Q_MTU_256);
    for (dir = 0; dir < 2 && !d->dead; dir++) {
        int s = dir, t = !dir;
        unsigned code = dir ? DN2Q_MTU_4K : DN2Q_MTU_256;
        uint32_t mtu = dn2_mtu_bytes(code);

        dn2q_sr_wr(d, DN2_SR_MTU, code);
        for (dt = 0; dt < 8; dt++) {
            uint32_t esz = dn2_dtype_bytes(dt);
            for (k = 0; k < G_N_ELEMENTS(iters); k++) {
                for (form = DN2_FORM_STRIDE; form <= DN2_FORM_LIST; form++) {
                    unsigned n = iters[k], op = DN2_OP_RVS | form, i;
                    uint32_t stride = 2 * esz + 4, slot = esz + 4;
                    uint32_t span = form == DN2_FORM_STRIDE ? (n - 1) * stride + esz
                                                            : n * slot;
                    uint32_t per = (mtu - 3 * DN2_LINE) / esz;
                    unsigned npk = DIV_ROUND_UP(n, per);
                    uint32_t seed = 2000 + 100 * dir + 10 * dt + 3 * k + form;
                    g_autofree uint8_t *data = g_malloc(n * esz);
                    g_autofree uint8_t *model = NULL;
                    g_autofree char *what = g_strdup_printf(
                        "%s WID %d -> WID %d, DTYPE %u, Iteration %u, MTU %u",
                        dn2_otype_name(op), s, t, dt, n, mtu);

                    dn2q_pattern(data, n * esz, seed);
                    dn2q_sdfile_put(&r.mem, s, SRC + 1, data, n * esz);
                    model = sd_bg(&r, t, DST - 32, span + 64, seed + 7);
                    for (i = 0; i < n; i++) {
                        uint32_t pos = form == DN2_FORM_STRIDE ? i * stride
                                                               : perm(i, n) * slot;
                        memcpy(model + 32 + pos, data + i * esz, esz);
                        if (form == DN2_FORM_LIST) {
                            sd_put_le32(&r, t, LIST + 4 * i, perm(i, n) * slot);
                        }
                    }
                    dn2q_ur_wr(d, t, DN2_UR_PKT_COUNTER, 0);
                    rsend(&r, s, 0, dn2_req_upper(SRC + 1, DST),
                          dn2_req_lower(op, dt, n, MY_CLID, t, 1,
                                        form == DN2_FORM_STRIDE ? stride : LIST),
                          DN2_PC_RVS, what);
                    /* Iteration of the record: only unambiguous for one packet */
                    expect_status(&r, t, st_lower(op, dt, n, s, n * esz),
                                  npk == 1 ? LM_ALL : LM_NO_IT, dn2_req_upper(DST, 0), what);
                    wait_pkts(&r, t, npk, what);
                    sd_expect(&r, t, DST - 32, model, span + 64, what);
                    expect_no_status(&r, t, what);
                }
            }
        }
    }

    /* a "negative" stride walks backwards (choice #17) */
    {
        const uint32_t esz = 8, n = 40, top = DST + 0x8000;
        const uint32_t stride = (uint32_t)-24;
        uint8_t data[40 * 8];
        g_autofree uint8_t *model = NULL;
        uint32_t lo = top - (n - 1) * 24, i;

        dn2q_sr_wr(d, DN2_SR_MTU, DN2Q_MTU_256);
        dn2q_pattern(data, sizeof(data), 2999);
        dn2q_sdfile_put(&r.mem, 0, SRC, data, sizeof(data));
        model = sd_bg(&r, 1, lo - 16, (n - 1) * 24 + esz + 32, 2998);
        for (i = 0; i < n; i++) {
            memcpy(model + 16 + (top - lo) - i * 24, data + i * esz, esz);
        }
        rsend(&r, 0, 0, dn2_req_upper(SRC, top),
              dn2_req_lower(DN2_OP_RVSS, DN2_DTYPE_8B, n, MY_CLID, 1, 1, stride),
              DN2_PC_RVS, "RVSS with stride -24");
        expect_status(&r, 1, st_lower(DN2_OP_RVSS, DN2_DTYPE_8B, n, 0, n * esz), LM_NO_IT,
                      dn2_req_upper(top, 0), "RVSS with stride -24");
        sd_expect(&r, 1, lo - 16, model, (n - 1) * 24 + esz + 32, "RVSS with stride -24");
    }
    rig_stop(&r);
}

/* ================================================================== */
/* RVS through Command1 into the Prefetch Window                       */
/* ================================================================== */

static void test_rvs_command1(void)
{
    Rig r;
    DN2 *d;
    uint8_t data[1024], pw[DN2_WIN_AREA];
    uint64_t drops;

    d = rig_up(&r, DN2Q_MTU_256);

    /* Clear WID 1's flags of windows 0..2 with an RVL through Command1
     * whose request can never be answered (LID 2 does not exist). */
    drops = rstat(&r, "stat-rx-drop-route") + rstat(&r, "stat-tx-drops");
    rsend(&r, 1, 1, dn2_req_upper(0, 0),
          dn2_req_lower(DN2_OP_RVL, 0, 0, dn2_lid_to_clid(2), 0, 0, 3 * DN2_WIN_SIZE),
          DN2_PC_RVL, "RVL (Command1) to LID 2");
    EXPECT_HEX(dn2q_pwf(d, 1), 0xf000,
               "RVL through Command1 resets the flags of the lines it will fill (choice #38)");
    EXPECT_HEX(rstat(&r, "stat-rx-drop-route") + rstat(&r, "stat-tx-drops"), drops + 1,
               "RVL to a LID that does not exist is dropped");

    /* RVS WID 0 -> WID 1 PW 0x90..0x18f: lines 1, 2 and 3 of window 0 */
    qtest_memread(r.d.qts, dn2q_pw_addr(d, 1, 0), pw, sizeof(pw));
    dn2q_pattern(data, sizeof(data), 501);
    dn2q_sdfile_put(&r.mem, 0, SRC, data, sizeof(data));
    rsend(&r, 0, 1, dn2_req_upper(SRC, 0x90),
          dn2_req_lower(DN2_OP_RVS, 0, 0, MY_CLID, 1, 1, 0x100), DN2_PC_RVS,
          "RVS (Command1) to WID 1's PW 0x90");
    expect_status(&r, 1, st_lower(DN2_OP_RVS, 0, 0, 0, 0x100), LM_ALL,
                  dn2_req_upper(0x90, 0), "RVS (Command1) to PW 0x90");
    memcpy(pw + 0x90, data, 0x100);
    dn2q_pw_expect(d, 1, pw, "RVS (Command1) into WID 1's Prefetch Window");
    EXPECT_HEX(dn2q_pwf(d, 1), 0xf00e, "line flags set for the lines written (1, 2, 3 of PW#0)");

    /* 1 KiB into windows 1 and 2, five packets at MTU 256 */
    dn2q_pattern(data, sizeof(data), 502);
    dn2q_sdfile_put(&r.mem, 0, SRC + 0x1000, data, sizeof(data));
    dn2q_ur_wr(d, 1, DN2_UR_PKT_COUNTER, 0);
    rsend(&r, 0, 1, dn2_req_upper(SRC + 0x1000, 0x200),
          dn2_req_lower(DN2_OP_RVS, 0, 0, MY_CLID, 1, 1, 1024), DN2_PC_RVS,
          "RVS (Command1) of 1 KiB to PW 0x200");
    expect_status(&r, 1, st_lower(DN2_OP_RVS, 0, 0, 0, 1024), LM_ALL,
                  dn2_req_upper(0x200, 0), "RVS (Command1) of 1 KiB");
    EXPECT_HEX(dn2q_pkts(d, 1), DIV_ROUND_UP(1024, 240), "packets of the 1 KiB RVS");
    memcpy(pw + 0x200, data, 1024);
    dn2q_pw_expect(d, 1, pw, "1 KiB RVS into PW#1 and PW#2");
    EXPECT_HEX(dn2q_pwf(d, 1), 0xfffe, "flags of PW#1 and PW#2 set");

    /* WID 1 -> WID 0, Command1, and the same WID (0 -> 0) */
    qtest_memread(r.d.qts, dn2q_pw_addr(d, 0, 0), pw, sizeof(pw));
    dn2q_pattern(data, sizeof(data), 503);
    dn2q_sdfile_put(&r.mem, 1, SRC + 0x2000, data, 300);
    rsend(&r, 1, 1, dn2_req_upper(SRC + 0x2000, 0x677),
          dn2_req_lower(DN2_OP_RVS, 0, 0, MY_CLID, 0, 1, 300), DN2_PC_RVS,
          "RVS (Command1) WID 1 -> WID 0 PW 0x677");
    expect_status(&r, 0, st_lower(DN2_OP_RVS, 0, 0, 1, 300), LM_ALL,
                  dn2_req_upper(0x677, 0), "RVS (Command1) WID 1 -> WID 0");
    memcpy(pw + 0x677, data, 300);
    dn2q_sdfile_put(&r.mem, 0, SRC + 0x3000, data + 300, 200);
    rsend(&r, 0, 1, dn2_req_upper(SRC + 0x3000, 0x10),
          dn2_req_lower(DN2_OP_RVS, 0, 0, MY_CLID, 0, 1, 200), DN2_PC_RVS,
          "RVS (Command1) WID 0 -> WID 0 PW 0x10");
    expect_status(&r, 0, st_lower(DN2_OP_RVS, 0, 0, 0, 200), LM_ALL,
                  dn2_req_upper(0x10, 0), "RVS (Command1) WID 0 -> WID 0");
    memcpy(pw + 0x10, data + 300, 200);
    dn2q_pw_expect(d, 0, pw, "RVS (Command1) into WID 0's Prefetch Window");
    EXPECT_HEX(dn2q_pwf(d, 0), 0xffff, "WID 0's flags");
    rig_stop(&r);
}

/* ================================================================== */
/* RVS with Command Ex: local gather                                    */
/* ================================================================== */

typedef struct ExCase {
    int form;           /* of the local (Ex) pattern */
    unsigned dt, n;
    int remote_form;    /* of the RVS itself */
    unsigned code;      /* MTU */
} ExCase;

static void test_rvs_command_ex(void)
{
    static const ExCase cases[] = {
        { DN2_FORM_STRIDE, DN2_DTYPE_4B, 100, DN2_FORM_CONTIG, DN2Q_MTU_512 },
        { DN2_FORM_STRIDE, DN2_DTYPE_8B, 200, DN2_FORM_CONTIG, DN2Q_MTU_512 },
        { DN2_FORM_STRIDE, DN2_DTYPE_1B, 255, DN2_FORM_CONTIG, DN2Q_MTU_256 },
        { DN2_FORM_LIST, DN2_DTYPE_4B, 50, DN2_FORM_CONTIG, DN2Q_MTU_512 },
        { DN2_FORM_LIST, DN2_DTYPE_128B, 9, DN2_FORM_CONTIG, DN2Q_MTU_256 },
        { DN2_FORM_LIST, DN2_DTYPE_16B, 255, DN2_FORM_CONTIG, DN2Q_MTU_4K },
        { DN2_FORM_STRIDE, DN2_DTYPE_8B, 60, DN2_FORM_STRIDE, DN2Q_MTU_256 },
        { DN2_FORM_LIST, DN2_DTYPE_32B, 30, DN2_FORM_STRIDE, DN2Q_MTU_1K },
        { DN2_FORM_STRIDE, DN2_DTYPE_4B, 77, DN2_FORM_LIST, DN2Q_MTU_512 },
    };
    Rig r;
    DN2 *d;
    unsigned c, i;

    d = rig_up(&r, DN2Q_MTU_512);
    for (c = 0; c < G_N_ELEMENTS(cases) && !d->dead; c++) {
        const ExCase *x = &cases[c];
        int s = c & 1, t = !s;
        uint32_t esz = dn2_dtype_bytes(x->dt), n = x->n, bytes = n * esz;
        uint32_t lstride = 3 * esz + 8, lslot = esz + 8;
        uint32_t rstride = 2 * esz + 4, rslot = esz + 4;
        uint32_t sspan = x->form == DN2_FORM_STRIDE ? (n - 1) * lstride + esz : n * lslot;
        uint32_t dspan = x->remote_form == DN2_FORM_CONTIG ? bytes :
                         x->remote_form == DN2_FORM_STRIDE ? (n - 1) * rstride + esz :
                         n * rslot;
        unsigned op = DN2_OP_RVS | x->remote_form, lop = DN2_OP_VL | x->form;
        g_autofree uint8_t *srcimg = NULL;
        g_autofree uint8_t *model = NULL;
        g_autofree uint8_t *gathered = g_malloc(bytes);
        g_autofree char *what = g_strdup_printf(
            "%s WID %d -> WID %d with Command Ex %s (DTYPE %u, Iteration %u), MTU %u",
            dn2_otype_name(op), s, t, dn2_otype_name(lop), x->dt, n,
            dn2_mtu_bytes(x->code));
        uint64_t lower;

        dn2q_sr_wr(d, DN2_SR_MTU, x->code);
        srcimg = sd_bg(&r, s, SRC, sspan, 3000 + c);
        for (i = 0; i < n; i++) {
            uint32_t pos = x->form == DN2_FORM_STRIDE ? i * lstride : perm(n - 1 - i, n) * lslot;
            memcpy(gathered + i * esz, srcimg + pos, esz);
            if (x->form == DN2_FORM_LIST) {
                sd_put_le32(&r, s, LIST + 4 * i, pos);
            }
        }
        model = sd_bg(&r, t, DST - 16, dspan + 32, 3100 + c);
        for (i = 0; i < n; i++) {
            uint32_t pos = x->remote_form == DN2_FORM_CONTIG ? i * esz :
                           x->remote_form == DN2_FORM_STRIDE ? i * rstride :
                           perm(i, n) * rslot;
            memcpy(model + 16 + pos, gathered + i * esz, esz);
            if (x->remote_form == DN2_FORM_LIST) {
                sd_put_le32(&r, t, LIST + 0x10000 + 4 * i, perm(i, n) * rslot);
            }
        }
        lower = x->remote_form == DN2_FORM_CONTIG ?
                dn2_req_lower(op, 0, 0, MY_CLID, t, 1, bytes) :
                dn2_req_lower(op, x->dt, n, MY_CLID, t, 1,
                              x->remote_form == DN2_FORM_STRIDE ? rstride : LIST + 0x10000);
        rsend_ex(&r, s, 0, dn2_req_upper(SRC, DST),
                 dn2_req_ex(lop, x->dt, n, x->form == DN2_FORM_STRIDE ? lstride : LIST),
                 lower, DN2_PC_RVS, what);
        expect_status(&r, t, st_lower(op, x->remote_form == DN2_FORM_CONTIG ? 0 : x->dt,
                                      x->remote_form == DN2_FORM_CONTIG ? 0 : n, s, bytes),
                      x->remote_form == DN2_FORM_CONTIG ? LM_ALL : LM_NO_IT,
                      dn2_req_upper(DST, 0), what);
        sd_expect(&r, t, DST - 16, model, dspan + 32, what);
        EXPECT_HEX(dn2q_cs(d, s) & DN2_CS_REQ_ERROR, 0, "%s: no request error", what);
    }
    rig_stop(&r);
}

/* ================================================================== */
/* RVL / RVLS / RVLI                                                    */
/* ================================================================== */

typedef struct RvlCase {
    int q, p;           /* requester, responder */
    int form;           /* RVL family form (responder side) */
    unsigned dt, n;     /* strided/list: element type and count */
    uint32_t len;       /* contiguous: bytes */
    int ex_form;        /* requester's landing pattern (Command Ex), -1 none */
    unsigned code;
} RvlCase;

static const RvlCase rvl_cases[] = {
    { 0, 1, DN2_FORM_CONTIG, 0, 0, 1, -1, DN2Q_MTU_1K },
    { 0, 1, DN2_FORM_CONTIG, 0, 0, 100, -1, DN2Q_MTU_1K },
    { 0, 1, DN2_FORM_CONTIG, 0, 0, 3000, -1, DN2Q_MTU_1K },
    { 1, 0, DN2_FORM_CONTIG, 0, 0, 1008, -1, DN2Q_MTU_1K },
    { 1, 0, DN2_FORM_CONTIG, 0, 0, 1009, -1, DN2Q_MTU_1K },
    { 0, 0, DN2_FORM_CONTIG, 0, 0, 5000, -1, DN2Q_MTU_4K },
    { 1, 1, DN2_FORM_CONTIG, 0, 0, 0, -1, DN2Q_MTU_256 },
    { 0, 1, DN2_FORM_STRIDE, DN2_DTYPE_4B, 100, 0, -1, DN2Q_MTU_256 },
    { 1, 0, DN2_FORM_STRIDE, DN2_DTYPE_128B, 20, 0, -1, DN2Q_MTU_512 },
    { 0, 0, DN2_FORM_STRIDE, DN2_DTYPE_1B, 255, 0, -1, DN2Q_MTU_2K },
    { 0, 1, DN2_FORM_LIST, DN2_DTYPE_8B, 255, 0, -1, DN2Q_MTU_1K },
    { 1, 0, DN2_FORM_LIST, DN2_DTYPE_2B, 33, 0, -1, DN2Q_MTU_256 },
    /* Command Ex on the requester: the landing pattern */
    { 0, 1, DN2_FORM_CONTIG, DN2_DTYPE_8B, 100, 800, DN2_FORM_STRIDE, DN2Q_MTU_256 },
    { 1, 0, DN2_FORM_CONTIG, DN2_DTYPE_4B, 60, 240, DN2_FORM_LIST, DN2Q_MTU_512 },
    { 0, 1, DN2_FORM_STRIDE, DN2_DTYPE_16B, 40, 0, DN2_FORM_STRIDE, DN2Q_MTU_1K },
    { 1, 1, DN2_FORM_LIST, DN2_DTYPE_4B, 90, 0, DN2_FORM_STRIDE, DN2Q_MTU_256 },
};

/* One RVL-family case of rvl_cases[] (its index c seeds the data). */
static void rvl_case(Rig *r, DN2 *d, unsigned c)
{
    const RvlCase *x = &rvl_cases[c];
    int q = x->q, p = x->p;
    uint32_t esz = dn2_dtype_bytes(x->dt), n = x->n;
    uint32_t bytes = x->form == DN2_FORM_CONTIG ? x->len : n * esz;
    uint32_t sstride = 3 * esz + 4, sslot = esz + 8;
    uint32_t lstride = 2 * esz + 8, lslot = esz + 4;
    uint32_t sspan = x->form == DN2_FORM_CONTIG ? bytes :
                     x->form == DN2_FORM_STRIDE ? (n - 1) * sstride + esz : n * sslot;
    uint32_t dspan = x->ex_form < 0 ? bytes :
                     x->ex_form == DN2_FORM_STRIDE ? (n - 1) * lstride + esz : n * lslot;
    uint32_t mtu = dn2_mtu_bytes(x->code);
    unsigned op = DN2_OP_RVL | x->form;
    unsigned rop = DN2_OP_RVS | (x->ex_form < 0 ? 0 : x->ex_form);
    unsigned npk;
    uint32_t src = SRC + 0x20000 * p + 0x8000 * q + 3, dst = DST + 0x20000 * q + 7;
    uint64_t pq, pp, lower, upper;
    g_autofree uint8_t *srcimg = NULL;
    g_autofree uint8_t *model = NULL;
    g_autofree uint8_t *stream = g_malloc(bytes + 1);
    g_autofree char *what = g_strdup_printf(
        "%s WID %d reads WID %d: %u bytes%s%s, MTU %u", dn2_otype_name(op), q, p, bytes,
        x->ex_form < 0 ? "" : ", landing pattern ",
        x->ex_form < 0 ? "" : dn2_otype_name(DN2_OP_VS | x->ex_form), mtu);
    unsigned i;

    if (x->ex_form < 0) {
        npk = bytes ? DIV_ROUND_UP(bytes, mtu - 2 * DN2_LINE) : 1;
    } else {
        npk = DIV_ROUND_UP(n, (mtu - 3 * DN2_LINE) / esz);
    }
    dn2q_sr_wr(d, DN2_SR_MTU, x->code);
    /* the responder's data */
    srcimg = sd_bg(r, p, src, sspan + 1, 4000 + c);
    for (i = 0; i < (x->form == DN2_FORM_CONTIG ? 1 : n); i++) {
        if (x->form == DN2_FORM_CONTIG) {
            memcpy(stream, srcimg, bytes);
        } else if (x->form == DN2_FORM_STRIDE) {
            memcpy(stream + i * esz, srcimg + i * sstride, esz);
        } else {
            uint32_t pos = perm(i, n) * sslot;
            memcpy(stream + i * esz, srcimg + pos, esz);
            sd_put_le32(r, p, LIST + 0x40000 * q + 4 * i, pos);
        }
    }
    /* the requester's landing area */
    model = sd_bg(r, q, dst - 16, dspan + 32, 4100 + c);
    for (i = 0; i < (x->ex_form < 0 ? 1 : n); i++) {
        if (x->ex_form < 0) {
            memcpy(model + 16, stream, bytes);
        } else if (x->ex_form == DN2_FORM_STRIDE) {
            memcpy(model + 16 + i * lstride, stream + i * esz, esz);
        } else {
            memcpy(model + 16 + perm(n - 1 - i, n) * lslot, stream + i * esz, esz);
            sd_put_le32(r, q, LIST + 0x80000 + 4 * i, perm(n - 1 - i, n) * lslot);
        }
    }
    upper = dn2_req_upper(src, dst);
    lower = dn2_req_lower(op, x->form == DN2_FORM_CONTIG ? 0 : x->dt,
                          x->form == DN2_FORM_CONTIG ? 0 : n, MY_CLID, p, 1,
                          x->form == DN2_FORM_CONTIG ? bytes :
                          x->form == DN2_FORM_STRIDE ? sstride : LIST + 0x40000 * q);
    dn2q_ur_wr(d, q, DN2_UR_PKT_COUNTER, 0);
    dn2q_ur_wr(d, p, DN2_UR_PKT_COUNTER, 0);
    if (x->ex_form < 0) {
        rsend(r, q, 0, upper, lower, DN2_PC_RVL, what);
    } else {
        rsend_ex(r, q, 0, upper,
                 dn2_req_ex(DN2_OP_VS | x->ex_form, x->dt, n,
                            x->ex_form == DN2_FORM_STRIDE ? lstride : LIST + 0x80000),
                 lower, DN2_PC_RVL, what);
    }
    /* eflag: one status record on the requester, from the responder */
    expect_status(r, q, st_lower(rop, x->ex_form < 0 ? 0 : x->dt,
                                 x->ex_form < 0 ? 0 : n, p, bytes),
                  x->ex_form < 0 ? LM_NO_DI : LM_NO_IT, dn2_req_upper(dst, 0), what);
    pq = dn2q_pkts(d, q);
    pp = dn2q_pkts(d, p);
    if (q == p) {
        EXPECT_HEX(pq, npk + 1, "%s: Packet Counter (request + data packets)", what);
    } else {
        EXPECT_HEX(pq, npk, "%s: requester's Packet Counter (data packets)", what);
        EXPECT_HEX(pp, 1, "%s: responder's Packet Counter (the request)", what);
    }
    sd_expect(r, q, dst - 16, model, dspan + 32, what);
    expect_no_status(r, q, what);
    expect_no_status(r, p, what);
    EXPECT_HEX(dn2q_cs(d, q) & DN2_CS_REQ_ERROR, 0, "%s: no request error", what);
}

/* RVL-family paths: a run of rvl_cases[], or the no-eflag request */
typedef struct RvlGroup {
    const char *path;
    unsigned first, n;      /* rvl_cases[first, first + n) */
} RvlGroup;

static const RvlGroup rvl_groups[] = {
    { "/dimmnet2-remote/rvl/families/contiguous", 0, 7 },
    { "/dimmnet2-remote/rvl/families/strided", 7, 3 },
    { "/dimmnet2-remote/rvl/families/list", 10, 2 },
    { "/dimmnet2-remote/rvl/families/landing-pattern", 12, 4 },
    { "/dimmnet2-remote/rvl/families/no-eflag", 0, 0 },
};

/* no eflag: no record, the data still arrives */
static void rvl_no_eflag(Rig *r, DN2 *d)
{
    g_autofree uint8_t *m = NULL;
    uint8_t data[64];

    dn2q_sr_wr(d, DN2_SR_MTU, DN2Q_MTU_2K);
    dn2q_pattern(data, sizeof(data), 4500);
    dn2q_sdfile_put(&r->mem, 1, SRC, data, sizeof(data));
    m = sd_bg(r, 0, DST, 80, 4501);
    memcpy(m + 8, data, 64);
    dn2q_ur_wr(d, 0, DN2_UR_PKT_COUNTER, 0);
    rsend(r, 0, 0, dn2_req_upper(SRC, DST + 8),
          dn2_req_lower(DN2_OP_RVL, 0, 0, MY_CLID, 1, 0, 64), DN2_PC_RVL,
          "RVL without eflag");
    wait_pkts(r, 0, 1, "RVL without eflag");
    sd_expect(r, 0, DST, m, 80, "RVL without eflag");
    expect_no_status(r, 0, "RVL without eflag");
}

/* One RVL-family path per test on a fresh rig (MTU 1 KiB); no path's
 * replies count as the host's RVS. */
static void test_rvl_group(const void *opaque)
{
    const RvlGroup *g = opaque;
    Rig r;
    DN2 *d = rig_up(&r, DN2Q_MTU_1K);
    unsigned c;

    if (!g->n) {
        rvl_no_eflag(&r, d);
    }
    for (c = g->first; c < g->first + g->n && !d->dead; c++) {
        rvl_case(&r, d, c);
    }
    EXPECT_HEX(dn2q_pcf(d, 0, DN2_PC_RVS) + dn2q_pcf(d, 1, DN2_PC_RVS), 0,
               "RVL replies do not count as the host's RVS");
    rig_stop(&r);
}

/* RVL through Command1: data into the requester's Prefetch Window. */
static void test_rvl_command1(void)
{
    Rig r;
    DN2 *d;
    uint8_t data[1024], pw[DN2_WIN_AREA];
    uint64_t stalls;
    int i;

    d = rig_up(&r, DN2Q_MTU_1K);

    /* WID 1 reads 0x1f0 bytes of WID 0 into its PW 0x210 (window 1) */
    dn2q_pattern(data, sizeof(data), 600);
    dn2q_sdfile_put(&r.mem, 0, SRC, data, sizeof(data));
    qtest_memread(r.d.qts, dn2q_pw_addr(d, 1, 0), pw, sizeof(pw));
    rsend(&r, 1, 1, dn2_req_upper(SRC, 0x210),
          dn2_req_lower(DN2_OP_RVL, 0, 0, MY_CLID, 0, 1, 0x1f0), DN2_PC_RVL,
          "RVL (Command1) into PW 0x210");
    dn2q_poll_ur(d, 1, DN2_UR_PW_FLAG, ~0ULL, DN2_PWF_ALL, DN2Q_MAX_POLL,
                 "PW flags all set once the RVL data is in");
    expect_status(&r, 1, st_lower(DN2_OP_RVS, 0, 0, 0, 0x1f0), LM_NO_DI,
                  dn2_req_upper(0x210, 0), "RVL (Command1) into PW 0x210");
    memcpy(pw + 0x210, data, 0x1f0);
    dn2q_pw_expect(d, 1, pw, "RVL (Command1) data in WID 1's PW");

    /* Make the flags observable in flight: WID 1's status ring is full, so
     * the last (eflag) packet waits; packet 1 (PW 0x210..0x2ff, lines 0-1
     * of window 1) is in, packet 2 (0x300..0x3ef, lines 2-3) is not. */
    dn2q_sr_wr(d, DN2_SR_MTU, DN2Q_MTU_256);
    dn2q_status_setup(d, 1, 0x600, 0x01);
    for (i = 0; i < 3; i++) {
        rsend(&r, 0, 0, dn2_req_upper(SRC, DST),
              dn2_req_lower(DN2_OP_RVS, 0, 0, MY_CLID, 1, 1, 8), DN2_PC_RVS,
              "RVS filling WID 1's status ring");
    }
    dn2q_poll_ur(d, 1, DN2_UR_CTL_STATUS, DN2_CS_STATUS_FULL, DN2_CS_STATUS_FULL, DN2Q_MAX_POLL,
                 "WID 1's status ring full");
    dn2q_pattern(data, sizeof(data), 601);
    dn2q_sdfile_put(&r.mem, 0, SRC + 0x1000, data, 480);
    stalls = rstat(&r, "stat-rx-stalls");
    rsend(&r, 1, 1, dn2_req_upper(SRC + 0x1000, 0x210),
          dn2_req_lower(DN2_OP_RVL, 0, 0, MY_CLID, 0, 1, 480), DN2_PC_RVL,
          "RVL (Command1) of 480 bytes with WID 1's status ring full");
    wait_stalls(&r, stalls + 1, "the eflag packet waits for the status ring");
    EXPECT_HEX(dn2q_pwf(d, 1), 0xff3f,
               "PW#1 flags: lines 0-1 written, lines 2-3 reset at issue and not yet written");
    memcpy(pw + 0x210, data, 240);
    dn2q_pw_expect(d, 1, pw, "first packet in, second not yet");
    dn2q_ur_wr(d, 1, DN2_UR_STATUS_ADDR, 0x630);     /* free everything */
    r.d.st[1].head = 0x630;
    dn2q_poll_ur(d, 1, DN2_UR_PW_FLAG, ~0ULL, DN2_PWF_ALL, DN2Q_MAX_POLL,
                 "PW flags 0xf once the last packet is in");
    expect_status(&r, 1, st_lower(DN2_OP_RVS, 0, 0, 0, 480), LM_NO_DI,
                  dn2_req_upper(0x210, 0), "RVL (Command1) of 480 bytes");
    memcpy(pw + 0x210, data, 480);
    dn2q_pw_expect(d, 1, pw, "RVL (Command1) complete");

    /* WID 0 reads its own SO-DIMM into its PW, across windows 2 and 3 */
    qtest_memread(r.d.qts, dn2q_pw_addr(d, 0, 0), pw, sizeof(pw));
    dn2q_sdfile_put(&r.mem, 0, SRC + 0x3000, data, 700);
    rsend(&r, 0, 1, dn2_req_upper(SRC + 0x3000, 0x500),
          dn2_req_lower(DN2_OP_RVL, 0, 0, MY_CLID, 0, 1, 700), DN2_PC_RVL,
          "RVL (Command1) WID 0 from itself into PW 0x500");
    expect_status(&r, 0, st_lower(DN2_OP_RVS, 0, 0, 0, 700), LM_NO_DI,
                  dn2_req_upper(0x500, 0), "RVL (Command1) WID 0 from itself");
    EXPECT_HEX(dn2q_pwf(d, 0), DN2_PWF_ALL, "WID 0's flags after the RVL");
    memcpy(pw + 0x500, data, 700);
    dn2q_pw_expect(d, 0, pw, "RVL (Command1) WID 0 from itself");
    rig_stop(&r);
}

/* ================================================================== */
/* IPUSH                                                               */
/* ================================================================== */

/* Send an IPUSH of len bytes from `s`'s SO-DIMM at src to `m` (eflag =
 * per-packet status) and check ring, Tail, status records. */
static void ipush_one(Rig *r, RingM *m, uint32_t src, const uint8_t *data, uint32_t len,
                      bool eflag, uint32_t mtu, const char *what)
{
    DN2 *d = &r->d;
    uint32_t P = (mtu - 2 * DN2_LINE) & ~(DN2_LINE - 1);
    unsigned npk = len ? DIV_ROUND_UP(len, P) : 1, k;
    uint64_t p0 = dn2q_pkts(d, m->dwid);
    uint32_t pos = m->tail;

    dn2q_sdfile_put(&r->mem, m->swid, src, data, len);
    rsend(r, m->swid, 0, dn2_req_upper(src, 0xdead0000),
          dn2_req_lower(DN2_OP_IPUSH, 0, 0, MY_CLID, m->dwid, eflag, len), DN2_PC_IPUSH,
          what);
    for (k = 0; k < npk; k++) {
        uint32_t pl = MIN(P, len - k * P);
        g_autofree char *w = g_strdup_printf("%s, packet %u", what, k);
        if (eflag) {
            expect_status_any(r, m->dwid, st_lower(DN2_OP_IPUSH, 0, 0, m->swid, pl), LM_ALL,
                              dn2_req_upper(m->base + m->tail, 0), w);
        }
        m->tail = (m->tail + ROUND_UP(pl, DN2_RING_ALIGN)) % m->size;
    }
    wait_pkts(r, m->dwid, p0 + npk, what);
    EXPECT_HEX(ring_tail(r, m), m->tail, "%s: AMT Tail", what);
    ring_expect(r, m, pos, data, len, what);
    expect_no_status(r, m->dwid, what);
}

/*
 * Two processes of one board each have an IPUSH ring for the same sender
 * (choice #52): AMT Address Table writes naming the receiving WID keep
 * the two entries apart, so two ranks can share a board.
 */
static void test_ipush_per_wid_amt(void)
{
    Rig r;
    DN2 *d;
    RingM to0, to1;
    uint8_t data[300];
    int w;

    d = rig_up(&r, DN2Q_MTU_256);
    ring_setup(&r, &to1, 0, 1, 0x1000, 1024);
    ring_setup(&r, &to0, 0, 0, 0x2000, 1024);       /* board-wide: overwrites to1's */
    for (w = 0; w < 2; w++) {
        RingM *m = w ? &to1 : &to0;
        dn2q_sr_wr(d, DN2_SR_AMT, dn2_amt_encode_dwid(
            (DN2_LLCM_OFF(w) - DN2_LLCM_BASE + m->entry) / DN2_AMT_UNIT, 0, LID, w));
    }
    dn2q_pattern(data, sizeof(data), 4500);
    ipush_one(&r, &to1, SRC, data, 200, true, 256, "IPUSH WID 0 -> WID 1, own AMT entry");
    ipush_one(&r, &to0, SRC + 0x1000, data + 50, 120, true, 256,
              "IPUSH WID 0 -> WID 0, own AMT entry for the same sender");
    ipush_one(&r, &to1, SRC + 0x2000, data + 100, 64, true, 256,
              "IPUSH WID 0 -> WID 1 again");
    rig_stop(&r);
}

/*
 * The sender chooses per-packet or per-message status (thesis §7.1; choice
 * #55): a 600-byte IPUSH in three 256-byte packets writes three records,
 * or, with the request's DTYPE bit 0, one record from the last packet that
 * gives the message's start and size.
 */
static void test_ipush_per_message(void)
{
    Rig r;
    RingM m;
    uint8_t data[600];
    int k;

    rig_up(&r, DN2Q_MTU_256);
    ring_setup(&r, &m, 0, 1, 0x1000, 4096);
    dn2q_pattern(data, sizeof(data), 4700);
    dn2q_sdfile_put(&r.mem, 0, SRC, data, sizeof(data));
    rsend(&r, 0, 0, dn2_req_upper(SRC, 0),
          dn2_req_lower(DN2_OP_IPUSH, 0, 0, MY_CLID, 1, 1, 600), DN2_PC_IPUSH,
          "IPUSH of 600 bytes, a record per packet");
    for (k = 0; k < 3; k++) {
        expect_status_any(&r, 1, st_lower(DN2_OP_IPUSH, 0, 0, 0, k < 2 ? 240 : 120), LM_ALL,
                          dn2_req_upper(0x1000 + 240 * k, 0), "per-packet record");
    }
    rsend(&r, 0, 0, dn2_req_upper(SRC, 0),
          dn2_req_lower(DN2_OP_IPUSH, DN2_IPUSH_PER_MESSAGE, 0, MY_CLID, 1, 1, 600),
          DN2_PC_IPUSH, "IPUSH of 600 bytes, a record per message");
    wait_pkts(&r, 1, 6, "the second message's three packets");
    expect_status(&r, 1, st_lower(DN2_OP_IPUSH, DN2_IPUSH_PER_MESSAGE, 0, 0, 600), LM_ALL,
                  dn2_req_upper(0x1000 + 600, 0),
                  "one record: the message's start and size");
    expect_no_status(&r, 1, "no per-packet records");
    rig_stop(&r);
}

static void test_ipush(void)
{
    Rig r;
    DN2 *d;
    RingM a, b;
    uint8_t data[1024];
    static const uint32_t lens[] = { 13, 200, 0, 8, 600 };
    uint64_t st0, noproc;
    unsigned k;

    d = rig_up(&r, DN2Q_MTU_256);
    ring_setup(&r, &a, 0, 1, 0x1000, 1024);
    ring_setup(&r, &b, 1, 0, 0x2000, 512);

    for (k = 0; k < G_N_ELEMENTS(lens); k++) {
        g_autofree char *what = g_strdup_printf("IPUSH of %u bytes WID 0 -> WID 1", lens[k]);
        dn2q_pattern(data, lens[k], 700 + k);
        ipush_one(&r, &a, SRC + 0x1000 * k, data, lens[k], true, 256, what);
    }
    EXPECT_HEX(a.tail, 824, "(model) ring tail after the first messages");

    /* 192 bytes free (one 8-byte slot stays free): a 232-byte message
     * waits until the host advances Head in LLCM, then wraps. */
    {
        uint64_t stalls = rstat(&r, "stat-rx-stalls"), p0 = dn2q_pkts(d, 1);
        dn2q_pattern(data, 232, 710);
        dn2q_sdfile_put(&r.mem, 0, SRC + 0x8000, data, 232);
        rsend(&r, 0, 0, dn2_req_upper(SRC + 0x8000, 0),
              dn2_req_lower(DN2_OP_IPUSH, 0, 0, MY_CLID, 1, 1, 232), DN2_PC_IPUSH,
              "IPUSH into a full ring");
        wait_stalls(&r, stalls + 1, "IPUSH ring full: back-pressure");
        EXPECT_HEX(dn2q_pkts(d, 1), p0, "nothing accepted while the ring is full");
        EXPECT_HEX(ring_tail(&r, &a), 824, "Tail unchanged while the ring is full");
        expect_no_status(&r, 1, "IPUSH into a full ring");
        ring_set_head(&r, &a, 216);
        wait_pkts(&r, 1, p0 + 1, "the IPUSH arrives after Head moved (100 us retry)");
        expect_status(&r, 1, st_lower(DN2_OP_IPUSH, 0, 0, 0, 232), LM_ALL,
                      dn2_req_upper(a.base + 824, 0), "wrapping IPUSH");
        EXPECT_HEX(ring_tail(&r, &a), (824 + 232) % 1024, "Tail after the wrap");
        ring_expect(&r, &a, 824, data, 232, "IPUSH data wrapping the ring end");
        a.tail = (824 + 232) % 1024;
    }
    /* the other direction, a message that is not a multiple of 8, and one
     * gathered with Command Ex (strided), without status */
    dn2q_pattern(data, 300, 720);
    ipush_one(&r, &b, SRC + 0x9000, data, 300, true, 256, "IPUSH WID 1 -> WID 0 (300 bytes)");
    dn2q_pattern(data, 21, 721);
    ipush_one(&r, &b, SRC + 0xa000, data, 21, false, 256, "IPUSH WID 1 -> WID 0 (21 bytes)");
    {
        uint8_t gathered[40 * 4];
        g_autofree uint8_t *img = sd_bg(&r, 1, SRC + 0xb000, 40 * 12, 722);
        uint64_t p0 = dn2q_pkts(d, 0);
        uint32_t pos = b.tail, i;

        for (i = 0; i < 40; i++) {
            memcpy(gathered + 4 * i, img + 12 * i, 4);
        }
        rsend_ex(&r, 1, 0, dn2_req_upper(SRC + 0xb000, 0),
                 dn2_req_ex(DN2_OP_VLS, DN2_DTYPE_4B, 40, 12),
                 dn2_req_lower(DN2_OP_IPUSH, 0, 0, MY_CLID, 0, 1, 160), DN2_PC_IPUSH,
                 "IPUSH with Command Ex (strided gather)");
        expect_status(&r, 0, st_lower(DN2_OP_IPUSH, 0, 0, 1, 160), LM_ALL,
                      dn2_req_upper(b.base + pos, 0), "IPUSH with Command Ex");
        wait_pkts(&r, 0, p0 + 1, "IPUSH with Command Ex");
        b.tail = (pos + 160) % b.size;
        EXPECT_HEX(ring_tail(&r, &b), b.tail, "Tail after the gathered IPUSH");
        ring_expect(&r, &b, pos, gathered, 160, "IPUSH with Command Ex (strided gather)");
    }

    /* IPUSH Area Size 0 disables IPUSH reception: dropped, nothing written */
    noproc = rstat(&r, "stat-rx-drop-noproc");
    st0 = dn2q_pkts(d, 1);
    dn2q_ur_wr(d, 1, DN2_UR_IPUSH_AREA_SIZE, 0);
    dn2q_pattern(data, 64, 730);
    dn2q_sdfile_put(&r.mem, 0, SRC, data, 64);
    rsend(&r, 0, 0, dn2_req_upper(SRC, 0), dn2_req_lower(DN2_OP_IPUSH, 0, 0, MY_CLID, 1, 1, 64),
          DN2_PC_IPUSH, "IPUSH with IPUSH Area Size 0");
    wait_stat(&r, "stat-rx-drop-noproc", noproc + 1, "IPUSH with IPUSH Area Size 0 dropped");
    EXPECT_HEX(ring_tail(&r, &a), a.tail, "IPUSH Area Size 0: Tail unchanged");
    EXPECT_HEX(dn2q_pkts(d, 1), st0, "IPUSH Area Size 0: not counted as received");
    expect_no_status(&r, 1, "IPUSH with IPUSH Area Size 0");
    dn2q_ur_wr(d, 1, DN2_UR_IPUSH_AREA_SIZE, IPUSH_UNITS);
    ipush_one(&r, &a, SRC, data, 64, true, 256, "IPUSH after restoring IPUSH Area Size");

    /* no AMT entry for the sender: Controller Reset empties the table */
    dn2q_sr_wr(d, DN2_SR_CTL_RESET, 0);
    bringup(d, DN2Q_MTU_256, PGID, PGID);
    noproc = rstat(&r, "stat-rx-drop-noproc");
    rsend(&r, 0, 0, dn2_req_upper(SRC, 0), dn2_req_lower(DN2_OP_IPUSH, 0, 0, MY_CLID, 1, 1, 64),
          DN2_PC_IPUSH, "IPUSH with no AMT entry");
    wait_stat(&r, "stat-rx-drop-noproc", noproc + 1, "IPUSH with no AMT entry dropped");
    rsend(&r, 0, 0, dn2_req_upper(SRC, 0), dn2_req_lower(DN2_OP_LHSV1, 0, 0, MY_CLID, 1, 1, 64),
          DN2_PC_IPUSH, "LHSv1 with no AMT entry");
    wait_stat(&r, "stat-rx-drop-noproc", noproc + 2, "LHSv1 with no AMT entry dropped");
    EXPECT_HEX(ring_tail(&r, &a), a.tail, "no AMT entry: Tail in LLCM unchanged");
    EXPECT_HEX(dn2q_pkts(d, 1), 0, "no AMT entry: nothing received");
    EXPECT_HEX(dn2q_ur_rd(d, 1, DN2_UR_LHB_ADDR), 0, "no AMT entry: no LH entry");
    expect_no_status(&r, 1, "IPUSH with no AMT entry");
    rig_stop(&r);
}

/* IPUSH ring full: the sender stalls, nothing is lost. */
static void test_ipush_backpressure(void)
{
    Rig r;
    DN2 *d;
    RingM a;
    const uint32_t big = 300 * 240, nsmall = 17, total = big + nsmall * 8;
    g_autofree uint8_t *want = g_malloc(total);
    g_autofree uint8_t *got = g_malloc(total);
    uint32_t head = 0, done = 0, k;
    uint64_t c0, c1;
    int idle = 0;

    d = rig_up(&r, DN2Q_MTU_256);
    ring_setup(&r, &a, 0, 1, 0x10000, 4096);
    dn2q_pattern(want, total, 800);
    dn2q_sdfile_put(&r.mem, 0, SRC, want, big);
    for (k = 0; k < nsmall; k++) {
        dn2q_sdfile_put(&r.mem, 0, SRC + 0x20000 + 8 * k, want + big + 8 * k, 8);
    }
    dn2q_issue(d, 0, 0, dn2_req_upper(SRC, 0),
               dn2_req_lower(DN2_OP_IPUSH, 0, 0, MY_CLID, 1, 0, big));
    wait_stalls(&r, 1, "the IPUSH ring fills up");
    dn2q_poll_ur(d, 0, DN2_UR_MODULE_STATE, DN2_MASK(16, 0), 1 + DN2_OP_IPUSH, DN2Q_MAX_POLL,
                 "Module State: the Window Controller holds the IPUSH");
    /* keep issuing: the Request FIFO fills (bit 2), then bit 0 */
    for (k = 0; k < nsmall; k++) {
        dn2q_doorbell(d, 0, 0, dn2_req_upper(SRC + 0x20000 + 8 * k, 0),
                      dn2_req_lower(DN2_OP_IPUSH, 0, 0, MY_CLID, 1, 0, 8));
    }
    c0 = dn2q_cs(d, 0);
    c1 = dn2q_cs(d, 1);
    EXPECT_HEX(c0 & (DN2_CS_REQ_PENDING | DN2_CS_FIFO_AFULL),
               DN2_CS_REQ_PENDING | DN2_CS_FIFO_AFULL,
               "sender stalled: Request FIFO almost full and a request pending (WID 0)");
    EXPECT_HEX(c1 & (DN2_CS_REQ_PENDING | DN2_CS_FIFO_AFULL), DN2_CS_FIFO_AFULL,
               "the Request FIFO is shared (WID 1 sees bit 2, not bit 0)");
    EXPECT_HEX(dn2q_wc_state(d), 1 + DN2_OP_IPUSH, "Module State still shows the IPUSH");
    EXPECT_HEX(dn2q_pcf(d, 0, DN2_PC_IPUSH), 0, "the IPUSH has not completed");
    EXPECT_HEX(rstat(&r, "stat-overrun"), 0, "no request lost to an overrun");

    /* the host drains the ring: read [Head, Tail), then advance Head */
    while (done < total && idle < 200000) {
        uint32_t tail = ring_tail(&r, &a), n;
        if (tail == head) {
            idle++;
            continue;
        }
        idle = 0;
        n = (tail - head + a.size) % a.size;
        if (n > total - done) {
            EXPECT_HEX(n, total - done, "more data in the ring than was sent");
            break;
        }
        ring_get(&r, &a, head, got + done, n);
        done += n;
        head = tail;
        ring_set_head(&r, &a, head);
    }
    EXPECT_HEX(done, total, "bytes received through the ring");
    dn2q_mem_eq("IPUSH stream through a full ring (nothing lost, in order)", got, want, done, 0);
    dn2q_wait_pc(d, 0, DN2_PC_IPUSH, 1 + nsmall, "every IPUSH completes");
    EXPECT_HEX(dn2q_cs(d, 0) & (DN2_CS_REQ_PENDING | DN2_CS_FIFO_AFULL), 0, "FIFO drained");
    EXPECT_HEX(dn2q_wc_state(d), 0, "Window Controller idle");
    EXPECT_HEX(dn2q_pkts(d, 1), 300 + nsmall, "packets received");
    expect_no_status(&r, 1, "IPUSH without eflag");
    rig_stop(&r);
}

/* ================================================================== */
/* LHS                                                                 */
/* ================================================================== */

typedef struct LhMsg {
    unsigned ctx, rank;
    uint32_t tag;
    uint32_t len;           /* message bytes, envelope included */
} LhMsg;

/* Build a message: envelope + pattern. */
static void lh_build(uint8_t *buf, const LhMsg *m, uint32_t seed)
{
    dn2q_pattern(buf, m->len, seed);
    if (m->len >= 8) {
        stq_le_p(buf, dn2_envelope(m->ctx, m->rank, m->tag));
    }
}

/* Check the LH entry at `entry` of WID `wid` for message `msg` (bytes
 * `buf`), flags `vc` (Valid << 1 | Complete); the overflow in ring m at
 * Pointer. */
static void lh_check(Rig *r, int wid, uint32_t entry, const LhMsg *msg, const uint8_t *buf,
                     unsigned vc, RingM *m, const char *what)
{
    uint8_t e[DN2_LHB_ENTRY];
    uint64_t l0, l1, ptr;
    uint32_t in = MIN(msg->len, DN2_LINE + DN2_LHB_DATA) - DN2_LINE;

    qtest_memread(r->d.qts, dn2q_lhb_addr(&r->d, wid, entry), e, sizeof(e));
    l0 = ldq_le_p(e);
    l1 = ldq_le_p(e + 8);
    EXPECT_HEX(DN2_FGET(l0, DN2_LH_CONTEXT), msg->ctx, "%s: LH entry Context", what);
    EXPECT_HEX(DN2_FGET(l0, DN2_LH_RANK), msg->rank, "%s: LH entry Rank", what);
    EXPECT_HEX(l0 & (DN2_LH_VALID | DN2_LH_COMPLETE), vc, "%s: LH entry Valid/Complete", what);
    EXPECT_HEX(DN2_FGET(l1, DN2_LH_TAG), msg->tag, "%s: LH entry Tag", what);
    EXPECT_HEX(DN2_FGET(l1, DN2_LH_SIZE), msg->len - DN2_LINE, "%s: LH entry Size", what);
    dn2q_mem_eq(what, e + 2 * DN2_LINE, buf + DN2_LINE, in, 0);
    if (msg->len > DN2_LINE + DN2_LHB_DATA) {
        ptr = DN2_FGET(l0, DN2_LH_POINTER);
        EXPECT_TRUE(ptr >= m->base && ptr < m->base + m->size,
                    "%s: Pointer 0x%" PRIx64 " inside the IPUSH ring", what, ptr);
        ring_expect(r, m, ptr - m->base, buf + DN2_LINE + DN2_LHB_DATA,
                    msg->len - DN2_LINE - DN2_LHB_DATA, what);
    }
}

/* Build `msg` in buf, put it in the sender's SO-DIMM and send it to m's
 * receiver as an LHSv1. */
static void lhs1_send(Rig *r, RingM *m, const LhMsg *msg, uint8_t *buf, uint32_t seed,
                      bool eflag, const char *what)
{
    lh_build(buf, msg, seed);
    dn2q_sdfile_put(&r->mem, m->swid, SRC + 0x40000, buf, msg->len);
    rsend(r, m->swid, 0, dn2_req_upper(SRC + 0x40000, 0),
          dn2_req_lower(DN2_OP_LHSV1, 0, 0, MY_CLID, m->dwid, eflag, msg->len),
          DN2_PC_IPUSH, what);
}

/* Send an LHSv1 message and check everything about it. */
static void lhs1_one(Rig *r, RingM *m, const LhMsg *msg, uint32_t seed, bool eflag,
                     uint32_t mtu, unsigned vc, const char *what)
{
    DN2 *d = &r->d;
    g_autofree uint8_t *buf = g_malloc(msg->len + 1);
    uint32_t P = mtu - 2 * DN2_LINE;
    unsigned npk = DIV_ROUND_UP(msg->len, P), k;
    uint32_t entry = dn2q_ur_rd(d, m->dwid, DN2_UR_LHB_ADDR);
    uint32_t over = msg->len > 56 ? ROUND_UP(msg->len - 56, DN2_RING_ALIGN) : 0;
    uint32_t ptr = m->base + m->tail;
    uint64_t p0 = dn2q_pkts(d, m->dwid);

    lhs1_send(r, m, msg, buf, seed, eflag, what);
    if (eflag) {
        for (k = 0; k < npk; k++) {
            expect_status_any(r, m->dwid, st_lower(DN2_OP_IPUSH, 0, 0, m->swid, msg->len),
                              LM_ALL, dn2_req_upper(entry, 0), what);
        }
    }
    wait_pkts(r, m->dwid, p0 + npk, what);
    EXPECT_HEX(dn2q_ur_rd(d, m->dwid, DN2_UR_LHB_ADDR), (entry + DN2_LHB_ENTRY) % DN2_LHB_AREA,
               "%s: LH Buffer tail advanced by 64", what);
    m->tail = (m->tail + over) % m->size;
    EXPECT_HEX(ring_tail(r, m), m->tail, "%s: IPUSH ring Tail after the overflow", what);
    lh_check(r, m->dwid, entry, msg, buf, vc, m, what);
    if (over) {
        EXPECT_HEX(qtest_readl(r->d.qts, dn2q_lhb_addr(d, m->dwid, entry + 4)), ptr,
                   "%s: Pointer = where the overflow went", what);
    }
    expect_no_status(r, m->dwid, what);
}

static void test_lhs_v1(void)
{
    static const LhMsg first[] = {
        { 0x1234, 0x0005, 0xdeadbeef, 8 },
        { 0xffff, 0x3fff, 0x00000001, 30 },
        { 0x0001, 0x2aaa, 0x80000000, 56 },
        { 0x6777, 0x0123, 0x12345678, 57 },
        { 0x0abc, 0x1000, 0xcafef00d, 600 },
    };
    Rig r;
    DN2 *d;
    RingM m;
    unsigned k;
    uint64_t stalls, p0;

    d = rig_up(&r, DN2Q_MTU_256);
    ring_setup(&r, &m, 0, 1, 0x4000, 8192);
    EXPECT_HEX(dn2q_ur_rd(d, 1, DN2_UR_LHB_ADDR), 0, "LH Buffer tail at start");
    for (k = 0; k < G_N_ELEMENTS(first); k++) {
        g_autofree char *what = g_strdup_printf("LHSv1 message of %u bytes (entry %u)",
                                                first[k].len, k);
        lhs1_one(&r, &m, &first[k], 900 + k, true, 256, DN2_LH_VALID | DN2_LH_COMPLETE, what);
    }
    /* fill the LH Buffer: full at 63 used entries */
    for (k = G_N_ELEMENTS(first); k < 63 && !d->dead; k++) {
        LhMsg msg = { k, k * 3, 0x1000 + k, 8 + (k * 7) % 100 };
        g_autofree char *what = g_strdup_printf("LHSv1 message %u (%u bytes)", k, msg.len);
        lhs1_one(&r, &m, &msg, 900 + k, false, 256, DN2_LH_VALID | DN2_LH_COMPLETE, what);
    }
    EXPECT_HEX(dn2q_ur_rd(d, 1, DN2_UR_LHB_ADDR), 63 * DN2_LHB_ENTRY, "63 entries used");
    {
        LhMsg msg = { 0x63, 0x63, 0x6363, 40 };
        g_autofree uint8_t *buf = g_malloc(40);
        stalls = rstat(&r, "stat-rx-stalls");
        p0 = dn2q_pkts(d, 1);
        lhs1_send(&r, &m, &msg, buf, 963, false, "LHSv1 into a full LH Buffer");
        wait_stalls(&r, stalls + 1, "LH Buffer full: back-pressure");
        EXPECT_HEX(dn2q_pkts(d, 1), p0, "nothing accepted while the LH Buffer is full");
        EXPECT_HEX(dn2q_ur_rd(d, 1, DN2_UR_LHB_ADDR), 63 * DN2_LHB_ENTRY, "tail stays");
        dn2q_ur_wr(d, 1, DN2_UR_LHB_ADDR, DN2_LHB_ENTRY);        /* host consumed entry 0 */
        wait_pkts(&r, 1, p0 + 1, "the LHSv1 arrives after the head write");
        EXPECT_HEX(dn2q_ur_rd(d, 1, DN2_UR_LHB_ADDR), 0, "tail wraps to 0");
        lh_check(&r, 1, 63 * DN2_LHB_ENTRY, &msg, buf, DN2_LH_VALID | DN2_LH_COMPLETE, &m,
                 "LHSv1 in the last entry");
    }
    /* entry 0 again: Valid and Complete toggle back to 0 */
    {
        LhMsg msg = { 0x4242, 0x0042, 0x42424242, 120 };
        g_autofree uint8_t *buf = g_malloc(120);
        stalls = rstat(&r, "stat-rx-stalls");
        p0 = dn2q_pkts(d, 1);
        lhs1_send(&r, &m, &msg, buf, 964, true, "LHSv1 into entry 0 the second time");
        wait_stalls(&r, stalls + 1, "LH Buffer full again (63 used)");
        dn2q_ur_wr(d, 1, DN2_UR_LHB_ADDR, 2 * DN2_LHB_ENTRY);
        expect_status(&r, 1, st_lower(DN2_OP_IPUSH, 0, 0, 0, 120), LM_ALL,
                      dn2_req_upper(0, 0), "LHSv1 into entry 0 the second time");
        wait_pkts(&r, 1, p0 + 1, "LHSv1 into entry 0 the second time");
        EXPECT_HEX(dn2q_ur_rd(d, 1, DN2_UR_LHB_ADDR), DN2_LHB_ENTRY, "tail 0x40");
        lh_check(&r, 1, 0, &msg, buf, 0, &m, "LHSv1 into entry 0 after the wrap (toggled)");
        m.tail = (m.tail + ROUND_UP(120 - 56, 8)) % m.size;
        EXPECT_HEX(ring_tail(&r, &m), m.tail, "ring tail after the toggled entry");
    }
    rig_stop(&r);
}

static void test_lhs_v2(void)
{
    typedef struct { uint32_t ww_off, ww_len, sd_len; } V2;
    static const V2 cases[] = {
        { 0x230, 40, 100 },     /* envelope from the WW, overflow from SO-DIMM */
        { 0x000, 0, 20 },       /* SO-DIMM only */
        { 0x010, 200, 300 },    /* several packets, overflow from both */
        { 0x600, 512, 0 },      /* a whole Write Window, no SO-DIMM */
        { 0x5f8, 8, 48 },       /* envelope from the WW, exactly 56 bytes */
    };
    Rig r;
    DN2 *d;
    RingM m;
    uint8_t ww[DN2_WIN_AREA];
    unsigned c, k;

    d = rig_up(&r, DN2Q_MTU_256);
    ring_setup(&r, &m, 1, 0, 0x8000, 4096);
    for (c = 0; c < G_N_ELEMENTS(cases) && !d->dead; c++) {
        const V2 *x = &cases[c];
        uint32_t len = x->ww_len + x->sd_len;
        LhMsg msg = { 0x100 + c, 0x200 + c, 0xabc00000 + c, len };
        g_autofree uint8_t *buf = g_malloc(len + 8);
        uint32_t entry = dn2q_ur_rd(d, 0, DN2_UR_LHB_ADDR);
        uint32_t over = len > 56 ? ROUND_UP(len - 56, DN2_RING_ALIGN) : 0;
        unsigned npk = DIV_ROUND_UP(len, 240);
        uint64_t p0 = dn2q_pkts(d, 0);
        g_autofree char *what = g_strdup_printf(
            "LHSv2 WID 1 -> WID 0: %u bytes from WW offset 0x%x + %u from SO-DIMM",
            x->ww_len, x->ww_off, x->sd_len);

        lh_build(buf, &msg, 1000 + c);
        dn2q_pattern(ww, sizeof(ww), 1100 + c);
        memcpy(ww + x->ww_off, buf, x->ww_len);
        qtest_memwrite(r.d.qts, dn2q_ww_addr(d, 1, 0), ww, sizeof(ww));
        dn2q_sdfile_put(&r.mem, 1, SRC + 0x100 * c, buf + x->ww_len, x->sd_len);
        rsend(&r, 1, 0, dn2_req_upper(SRC + 0x100 * c, dn2_lhsv2_dst(x->ww_len, x->ww_off)),
              dn2_req_lower(DN2_OP_LHSV2, 0, 0, MY_CLID, 0, 1, len), DN2_PC_IPUSH, what);
        for (k = 0; k < npk; k++) {
            expect_status_any(&r, 0, st_lower(DN2_OP_IPUSH, 0, 0, 1, len), LM_ALL,
                              dn2_req_upper(entry, 0), what);
        }
        wait_pkts(&r, 0, p0 + npk, what);
        EXPECT_HEX(dn2q_ur_rd(d, 0, DN2_UR_LHB_ADDR), entry + DN2_LHB_ENTRY,
                   "%s: LH Buffer tail", what);
        lh_check(&r, 0, entry, &msg, buf, DN2_LH_VALID | DN2_LH_COMPLETE, &m, what);
        m.tail = (m.tail + over) % m.size;
        EXPECT_HEX(ring_tail(&r, &m), m.tail, "%s: IPUSH ring Tail", what);
        expect_no_status(&r, 0, what);
        EXPECT_HEX(dn2q_cs(d, 1) & DN2_CS_REQ_ERROR, 0, "%s: no request error", what);
    }
    rig_stop(&r);
}

/* ================================================================== */
/* Protection                                                          */
/* ================================================================== */

/* The protection rig: WID 0's and WID 1's PGIDs (-1: never written), a
 * pattern in data and at SRC of WID 0, and the returned background of
 * bglen bytes at DST of WID 1 */
static uint8_t *prot_start(Rig *r, int pgid0, int pgid1, uint8_t *data, size_t len,
                           size_t bglen, uint32_t bgseed)
{
    bringup(rig_start(r), DN2Q_MTU_2K, pgid0, pgid1);
    dn2q_pattern(data, len, 1200);
    dn2q_sdfile_put(&r->mem, 0, SRC, data, len);
    return sd_bg(r, 1, DST, bglen, bgseed);
}

/* End of a dropped path: WID 1 accepted nothing, its SO-DIMM at off still
 * holds bg, and it has no status record */
static void prot_expect_dropped(Rig *r, uint64_t off, const uint8_t *bg, size_t len,
                                const char *what)
{
    g_autofree char *w = g_strdup_printf("%s: WID 1's SO-DIMM not written", what);

    EXPECT_HEX(dn2q_pkts(&r->d, 1), 0, "%s: nothing accepted by WID 1", what);
    sd_expect(r, 1, off, bg, len, w);
    expect_no_status(r, 1, what);
}

/* PGID mismatch: dropped, never written; equal PGIDs open the path */
static void test_protection_pgid(void)
{
    Rig r;
    DN2 *d = &r.d;
    RingM a;
    uint8_t data[200];
    g_autofree uint8_t *bg = prot_start(&r, 0x11, 0x22, data, sizeof(data), 0x400, 1201);
    struct dn2_hdr h;
    uint64_t l1, v;

    ring_setup(&r, &a, 0, 1, 0x1000, 1024);
    dn2q_sdfile_put(&r.mem, 1, SRC, data, sizeof(data));
    g_free(sd_bg(&r, 0, DST, 0x400, 1202));

    /* PGID mismatch: RVS, RVSS, IPUSH, LHSv1 and RVL from WID 0 (PGID 0x11)
     * to WID 1 (PGID 0x22) are dropped, never written */
    v = rstat(&r, "stat-rx-drop-pgid");
    rsend(&r, 0, 0, dn2_req_upper(SRC, DST), dn2_req_lower(DN2_OP_RVS, 0, 0, MY_CLID, 1, 1, 100),
          DN2_PC_RVS, "RVS across PGIDs");
    rsend(&r, 0, 0, dn2_req_upper(SRC, DST + 0x100),
          dn2_req_lower(DN2_OP_RVSS, DN2_DTYPE_4B, 10, MY_CLID, 1, 1, 8), DN2_PC_RVS,
          "RVSS across PGIDs");
    rsend(&r, 0, 1, dn2_req_upper(SRC, 0x100), dn2_req_lower(DN2_OP_RVS, 0, 0, MY_CLID, 1, 1, 64),
          DN2_PC_RVS, "RVS (Command1) across PGIDs");
    rsend(&r, 0, 0, dn2_req_upper(SRC, 0), dn2_req_lower(DN2_OP_IPUSH, 0, 0, MY_CLID, 1, 1, 64),
          DN2_PC_IPUSH, "IPUSH across PGIDs");
    rsend(&r, 0, 0, dn2_req_upper(SRC, 0), dn2_req_lower(DN2_OP_LHSV1, 0, 0, MY_CLID, 1, 1, 64),
          DN2_PC_IPUSH, "LHSv1 across PGIDs");
    rsend(&r, 0, 0, dn2_req_upper(SRC, DST), dn2_req_lower(DN2_OP_RVL, 0, 0, MY_CLID, 1, 1, 100),
          DN2_PC_RVL, "RVL across PGIDs (the request is dropped)");
    /* BOTF with a forged PGID in the image: the board stamps its own */
    h = mkhdr(DN2_OP_RVS, 0, 1, LID);
    h.pgid = 0x22;
    h.eflag = 1;
    l1 = dn2_hdr1_encode(DST + 0x200, DST + 0x200);
    botf_image(&r, 0, 0, &h, &l1, 1, data, 64);
    botf(&r, 0, 0, 80, "BOTF with the receiver's PGID forged in the image");
    wait_stat(&r, "stat-rx-drop-pgid", v + 7, "packets dropped for a PGID mismatch");
    prot_expect_dropped(&r, DST, bg, 0x400, "PGID mismatch");
    EXPECT_HEX(dn2q_pkts(d, 0), 0, "PGID mismatch: nothing came back to WID 0");
    EXPECT_HEX(ring_tail(&r, &a), 0, "PGID mismatch: IPUSH ring untouched");
    EXPECT_HEX(dn2q_ur_rd(d, 1, DN2_UR_LHB_ADDR), 0, "PGID mismatch: no LH entry");
    expect_no_status(&r, 0, "PGID mismatch (RVL)");
    EXPECT_HEX(dn2q_pwf(d, 1), DN2_PWF_ALL, "PGID mismatch: PW flags untouched");
    {
        uint8_t pw[64], zero[64] = { 0 };
        qtest_memread(r.d.qts, dn2q_pw_addr(d, 1, 0x100), pw, sizeof(pw));
        dn2q_mem_eq("PGID mismatch: WID 1's Prefetch Window not written", pw, zero, 64, 0x100);
    }
    /* equal PGIDs (same WID) still work */
    rsend(&r, 0, 0, dn2_req_upper(SRC, DST), dn2_req_lower(DN2_OP_RVS, 0, 0, MY_CLID, 0, 1, 100),
          DN2_PC_RVS, "RVS WID 0 -> WID 0");
    expect_status(&r, 0, st_lower(DN2_OP_RVS, 0, 0, 0, 100), LM_ALL, dn2_req_upper(DST, 0),
                  "RVS WID 0 -> WID 0");
    sd_expect(&r, 0, DST, data, 100, "RVS WID 0 -> WID 0");
    /* making the PGIDs equal opens the path */
    dn2q_sr_wr(d, DN2_SR_PGID1, 0x11);
    rsend(&r, 0, 0, dn2_req_upper(SRC, DST), dn2_req_lower(DN2_OP_RVS, 0, 0, MY_CLID, 1, 1, 100),
          DN2_PC_RVS, "RVS WID 0 -> WID 1 with equal PGIDs");
    expect_status(&r, 1, st_lower(DN2_OP_RVS, 0, 0, 0, 100), LM_ALL, dn2_req_upper(DST, 0),
                  "RVS WID 0 -> WID 1 with equal PGIDs");
    sd_expect(&r, 1, DST, data, 100, "RVS WID 0 -> WID 1 with equal PGIDs");
    rig_stop(&r);
}

/* to another LID: dropped by the port (route) */
static void test_protection_route(void)
{
    Rig r;
    uint8_t data[200];
    g_autofree uint8_t *bg = prot_start(&r, 0x11, 0x11, data, sizeof(data), 0x400, 1201);
    struct dn2_hdr h;
    uint64_t l1, rt;

    rt = rstat(&r, "stat-rx-drop-route") + rstat(&r, "stat-tx-drops");
    h = mkhdr(DN2_OP_RVS, 0, 1, 2);
    h.eflag = 1;
    l1 = dn2_hdr1_encode(DST + 0x300, DST + 0x300);
    botf_image(&r, 0, 1, &h, &l1, 1, data, 64);
    botf(&r, 0, 1, 80, "BOTF to LID 2");
    rsend(&r, 0, 0, dn2_req_upper(SRC, DST + 0x300),
          dn2_req_lower(DN2_OP_RVS, 0, 0, dn2_lid_to_clid(0x22), 1, 1, 64), DN2_PC_RVS,
          "RVS to LID 0x22");
    EXPECT_HEX(rstat(&r, "stat-rx-drop-route") + rstat(&r, "stat-tx-drops"), rt + 2,
               "packets to other LIDs dropped (stat-rx-drop-route / stat-tx-drops)");
    prot_expect_dropped(&r, DST + 0x300, bg + 0x300, 0x100, "packets to other LIDs");
    rig_stop(&r);
}

/* a WID whose PGID was never written has no process (choice #32) */
static void test_protection_noproc(void)
{
    Rig r;
    uint8_t data[200];
    g_autofree uint8_t *bg = prot_start(&r, PGID, -1, data, sizeof(data), 0x100, 1203);
    struct dn2_hdr h;
    uint64_t l1, v;

    v = rstat(&r, "stat-rx-drop-noproc");
    rsend(&r, 0, 0, dn2_req_upper(SRC, DST), dn2_req_lower(DN2_OP_RVS, 0, 0, MY_CLID, 1, 1, 100),
          DN2_PC_RVS, "RVS to a WID with no process");
    h = mkhdr(DN2_OP_RVS, 0, 1, LID);
    l1 = dn2_hdr1_encode(DST, DST);
    botf_image(&r, 0, 0, &h, &l1, 1, data, 64);
    botf(&r, 0, 0, 80, "BOTF to a WID with no process");
    wait_stat(&r, "stat-rx-drop-noproc", v + 2, "packets for a WID with no process");
    EXPECT_HEX(rstat(&r, "stat-rx-drop-pgid"), 0, "counted as noproc, not as PGID mismatch");
    prot_expect_dropped(&r, DST, bg, 0x100, "no process");
    rig_stop(&r);
}

/* ================================================================== */
/* Receive errors (Controller Status [19:17])                          */
/* ================================================================== */

#define RX_BITS (DN2_CS_RX_OVF | DN2_CS_RX_ERR_MASK)

static void err_reset(Rig *r, const char *what)
{
    dn2q_sr_wr(&r->d, DN2_SR_CTL_RESET, 0);
    EXPECT_HEX(dn2q_cs(&r->d, 0) & RX_BITS, 0, "%s: Controller Reset clears bits 17-19 (WID 0)",
               what);
    EXPECT_HEX(dn2q_cs(&r->d, 1) & RX_BITS, 0, "%s: Controller Reset clears bits 17-19 (WID 1)",
               what);
    bringup(&r->d, DN2Q_MTU_2K, PGID, PGID);
}

/* A malformed BOTF image: dropped (stat-rx-drop-bad), error state `err`. */
static void bad_botf(Rig *r, const struct dn2_hdr *h, const uint64_t *more, unsigned nmore,
                     uint32_t dlen, uint32_t size, unsigned err, const char *what)
{
    uint8_t data[256];
    g_autofree uint8_t *bg = NULL;
    uint64_t bad = rstat(r, "stat-rx-drop-bad");

    dn2q_pattern(data, sizeof(data), 1300);
    bg = sd_bg(r, h->dwid, DST, 0x400, 1301);
    botf_image(r, 0, 2, h, more, nmore, data, dlen);
    botf(r, 0, 2, size, what);
    wait_stat(r, "stat-rx-drop-bad", bad + 1, what);
    EXPECT_HEX(dn2q_cs(&r->d, h->dwid) & RX_BITS, (uint64_t)err << DN2_CS_RX_ERR_SHIFT,
               "%s: Controller Status [19:17]", what);
    EXPECT_HEX(dn2q_pkts(&r->d, h->dwid), 0, "%s: not received", what);
    sd_expect(r, h->dwid, DST, bg, 0x400, what);
    expect_no_status(r, h->dwid, what);
    err_reset(r, what);
}

/* hflag does not match TYPE: 10 */
static void rx_hflag_mismatch(Rig *r, DN2 *d)
{
    struct dn2_hdr h;
    uint64_t more[2];

    h = mkhdr(DN2_OP_RVS, 0, 1, LID);
    h.hflag = 1;
    more[0] = dn2_hdr1_encode(DST, DST);
    more[1] = dn2_hdr1_encode(64, 0);
    bad_botf(r, &h, more, 2, 64, 24 + 64, DN2_RX_ERR_HFLAG, "RVS with hflag 1");
    h = mkhdr(DN2_OP_RVSS, 0, 1, LID);
    h.hflag = 0;
    h.dtype = DN2_DTYPE_8B;
    h.iter = 2;
    more[0] = dn2_hdr1_encode(DST, 0);
    bad_botf(r, &h, more, 1, 16, 16 + 16, DN2_RX_ERR_HFLAG, "RVSS with hflag 0");
}

/* an RVL-type packet with data: 11 */
static void rx_rvl_data(Rig *r, DN2 *d)
{
    struct dn2_hdr h = mkhdr(DN2_OP_RVL, 0, 1, LID);
    uint64_t more[3];

    more[0] = dn2_hdr1_encode(SRC, DST);
    more[1] = dn2_hdr1_encode(64, 0);
    more[2] = 0;
    bad_botf(r, &h, more, 3, 8, 32 + 8, DN2_RX_ERR_RVL_DATA, "RVL carrying 8 data bytes");
}

/* packets shorter than their header / their contents: 01 */
static void rx_short_packets(Rig *r, DN2 *d)
{
    struct dn2_hdr h;
    uint64_t more[2];

    h = mkhdr(DN2_OP_RVSS, 0, 1, LID);
    h.dtype = DN2_DTYPE_8B;
    h.iter = 1;
    more[0] = dn2_hdr1_encode(DST, 0);
    more[1] = dn2_hdr1_encode(8, 8);
    bad_botf(r, &h, more, 2, 0, 16, DN2_RX_ERR_EARLY_SOP,
             "RVSS packet of 16 bytes (3-line header)");
    h = mkhdr(DN2_OP_RVL, 0, 1, LID);
    more[0] = dn2_hdr1_encode(SRC, DST);
    more[1] = dn2_hdr1_encode(64, 0);
    bad_botf(r, &h, more, 2, 0, 24, DN2_RX_ERR_EARLY_SOP,
             "RVL packet of 24 bytes (4-line header)");
    h = mkhdr(DN2_OP_RVS, 0, 1, LID);
    bad_botf(r, &h, NULL, 0, 0, 8, DN2_RX_ERR_EARLY_SOP,
             "RVS packet of 8 bytes (2-line header)");
    h = mkhdr(DN2_OP_RVSS, 0, 1, LID);
    h.dtype = DN2_DTYPE_8B;
    h.iter = 4;
    more[0] = dn2_hdr1_encode(DST, 0);
    more[1] = dn2_hdr1_encode(32, 8);
    bad_botf(r, &h, more, 2, 8, 24 + 8, DN2_RX_ERR_EARLY_SOP,
             "RVSS whose Iteration needs more bytes than the packet holds");
}

/* TYPEs that are not network primitives: dropped, no error state */
static void rx_not_network_types(Rig *r, DN2 *d)
{
    struct dn2_hdr h;
    uint64_t more[1];

    h = mkhdr(DN2_OP_VS, 0, 1, LID);
    more[0] = dn2_hdr1_encode(DST, DST);
    bad_botf(r, &h, more, 1, 64, 80, DN2_RX_ERR_NONE, "TYPE = VS");
    h = mkhdr(0x1f, 0, 1, LID);
    bad_botf(r, &h, more, 1, 64, 80, DN2_RX_ERR_NONE, "TYPE = 0x1f");
    h = mkhdr(DN2_OP_BOTF, 0, 1, LID);
    bad_botf(r, &h, more, 1, 64, 80, DN2_RX_ERR_NONE, "TYPE = BOTF");
    h = mkhdr(DN2_OP_NOP, 0, 1, LID);
    bad_botf(r, &h, more, 1, 64, 80, DN2_RX_ERR_NONE, "TYPE = NOP");
}

/* data past the receive area: bit 17, only what fits written */
static void rx_past_sodimm_area(Rig *r, DN2 *d)
{
    uint8_t data[512];
    g_autofree uint8_t *bg = NULL;
    g_autofree uint8_t *bg1 = NULL;

    dn2q_pattern(data, sizeof(data), 1400);
    dn2q_sdfile_put(&r->mem, 0, SRC, data, 300);
    bg = sd_bg(r, 0, AREA - 200, 200, 1401);
    bg1 = sd_bg(r, 1, 0, 256, 1402);
    rsend(r, 0, 0, dn2_req_upper(SRC, AREA - 100),
          dn2_req_lower(DN2_OP_RVS, 0, 0, MY_CLID, 0, 0, 300), DN2_PC_RVS,
          "RVS running past the SO-DIMM area end");
    wait_pkts(r, 0, 1, "RVS running past the SO-DIMM area end");
    memcpy(bg + 100, data, 100);
    sd_expect(r, 0, AREA - 200, bg, 200, "RVS past the area end: the part that fits");
    sd_expect(r, 1, 0, bg1, 256, "RVS past the area end: WID 1's area untouched");
    EXPECT_HEX(dn2q_cs(d, 0) & RX_BITS, DN2_CS_RX_OVF, "RVS past the area end: bit 17");
    err_reset(r, "RVS past the SO-DIMM area end");
}

static void rx_past_pw_end(Rig *r, DN2 *d)
{
    struct dn2_hdr h = mkhdr(DN2_OP_RVS, 0, 1, LID);
    uint64_t more[1];
    uint8_t data[512], got[64], pw[16], after[64];

    dn2q_pattern(data, sizeof(data), 1400);
    h.rflag = 1;
    more[0] = dn2_hdr1_encode(DN2_WIN_AREA - 16, DN2_WIN_AREA - 16);
    qtest_memread(r->d.qts, dn2q_pw_addr(d, 1, DN2_WIN_AREA), got, 64);   /* beyond WID 1's PW */
    botf_image(r, 0, 0, &h, more, 1, data, 64);
    botf(r, 0, 0, 80, "BOTF into the PW past its end");
    wait_pkts(r, 1, 1, "BOTF into the PW past its end");
    EXPECT_HEX(dn2q_cs(d, 1) & RX_BITS, DN2_CS_RX_OVF, "PW past its end: bit 17");
    qtest_memread(r->d.qts, dn2q_pw_addr(d, 1, DN2_WIN_AREA - 16), pw, 16);
    dn2q_mem_eq("PW past its end: the 16 bytes that fit", pw, data, 16, DN2_WIN_AREA - 16);
    qtest_memread(r->d.qts, dn2q_pw_addr(d, 1, DN2_WIN_AREA), after, 64);
    dn2q_mem_eq("PW past its end: nothing beyond WID 1's PW area", after, got, 64, 0);
    err_reset(r, "PW past its end");
}

static void rx_past_llcm_end(Rig *r, DN2 *d)
{
    struct dn2_hdr h = mkhdr(DN2_OP_RVS, 1, 0, LID);
    uint64_t more[1];
    uint8_t data[512], got[64], l[16], after[64];

    dn2q_pattern(data, sizeof(data), 1400);
    h.lflag = 1;
    more[0] = dn2_hdr1_encode(DN2_LLCM_AREA - 16, DN2_LLCM_AREA - 16);
    qtest_memread(r->d.qts, dn2q_llcm_addr(d, 1, 0), got, 64);       /* WID 1's LLCM start */
    botf_image(r, 1, 3, &h, more, 1, data + 100, 64);
    botf(r, 1, 3, 80, "BOTF into the LLCM past its end");
    wait_pkts(r, 0, 1, "BOTF into the LLCM past its end");
    EXPECT_HEX(dn2q_cs(d, 0) & RX_BITS, DN2_CS_RX_OVF, "LLCM past its end: bit 17");
    qtest_memread(r->d.qts, dn2q_llcm_addr(d, 0, DN2_LLCM_AREA - 16), l, 16);
    dn2q_mem_eq("LLCM past its end: the 16 bytes that fit", l, data + 100, 16, 0);
    qtest_memread(r->d.qts, dn2q_llcm_addr(d, 1, 0), after, 64);
    dn2q_mem_eq("LLCM past its end: WID 1's LLCM untouched", after, got, 64, 0);
    err_reset(r, "LLCM past its end");
}

/* One receive-error path per test, on a fresh loopback rig (MTU 2 KiB);
 * every path ends with a Controller Reset that clears bits 17-19. */
typedef struct RxErrCase {
    const char *path;
    void (*run)(Rig *r, DN2 *d);
} RxErrCase;

static const RxErrCase rx_err_cases[] = {
    { "/dimmnet2-remote/rx-errors/hflag-mismatch", rx_hflag_mismatch },
    { "/dimmnet2-remote/rx-errors/rvl-with-data", rx_rvl_data },
    { "/dimmnet2-remote/rx-errors/short-packets", rx_short_packets },
    { "/dimmnet2-remote/rx-errors/not-network-types", rx_not_network_types },
    { "/dimmnet2-remote/rx-errors/past-sodimm-area", rx_past_sodimm_area },
    { "/dimmnet2-remote/rx-errors/past-pw-end", rx_past_pw_end },
    { "/dimmnet2-remote/rx-errors/past-llcm-end", rx_past_llcm_end },
};

static void test_rx_error_case(const void *opaque)
{
    const RxErrCase *c = opaque;
    Rig r;
    DN2 *d = rig_up(&r, DN2Q_MTU_2K);

    c->run(&r, d);
    rig_stop(&r);
}

/* ================================================================== */
/* Hardening: request sequences that must not wedge or corrupt a board */
/* ================================================================== */

/*
 * A process storms its own board with RVLs.  While a long SO-DIMM copy
 * keeps the Window Controller busy, 60 RVL doorbells of 64 KiB each fill
 * a 64-deep Request FIFO; then they all go out at once.  With one loopback
 * queue for requests and answers, the 17th RVL waited at the head for room
 * in the 16-entry RC FIFO while the answers that would have made room
 * queued behind it: the board stayed in RVL for ever.  Every answer must
 * land, and the board must be idle again.
 */
static void test_hard_rvl_storm(void)
{
    const unsigned n = 60;
    const uint32_t sz = 256 * KiB_, copy = 192 * MiB_;
    DN2 dd, *d = &dd;
    unsigned i;
    int64_t end;

    dn2q_open(d, dn2q_vm_start("q35", "-device dimmnet2,id=dn,loopback=on,fifo-depth=64"),
              DN2_DEFAULT_BASE0);
    bringup(d, DN2Q_MTU_4K, PGID, PGID);
    /* the copy: VL half (source) then VS half (destination) */
    dn2q_issue(d, 0, 0, dn2_req_upper(0, DN2_COPY_OFF),
               dn2_req_lower(DN2_OP_VL, 0, 0, 0, 0, 0, copy));
    dn2q_issue(d, 0, 0, dn2_req_upper(DN2_COPY_OFF, 0x8000000),
               dn2_req_lower(DN2_OP_VS, 0, 0, 0, 0, 0, copy));
    for (i = 0; i < n && !d->dead; i++) {
        dn2q_issue(d, 0, 0, dn2_req_upper(0, 0x4000000 + i * sz),
                   dn2_req_lower(DN2_OP_RVL, 0, 0, MY_CLID, 0, 0, sz));
    }
    dn2q_wait_pc(d, 0, DN2_PC_RVL, n, "every RVL of the storm sent");
    /* each RVL is one packet in, its answer 16 more (4 KiB MTU) */
    end = g_get_monotonic_time() + 10 * G_USEC_PER_SEC;
    while ((dn2q_pkts(d, 0) != n * 66 || dn2q_wc_state(d)) &&
           g_get_monotonic_time() < end) {
        g_usleep(1000);
    }
    EXPECT_HEX(dn2q_pkts(d, 0), n * 66, "every RVL answered (Packet Counter)");
    EXPECT_HEX(dn2q_wc_state(d), 0, "Window Controller idle after the storm");
    EXPECT_HEX(dn2q_cs(d, 0) & DN2_CS_REQ_ERROR, 0, "no request refused");
    qtest_quit(d->qts);
}

/*
 * An RVL queued behind a write to the same process must read what the
 * write wrote, even when the write waits (a full status ring) and the RVL
 * could have gone first.
 */
static void test_hard_rvl_after_write(void)
{
    Rig r;
    DN2 *d;
    g_autofree uint8_t *a = NULL;
    g_autofree uint8_t *b = NULL;
    uint64_t stalls;
    int k;

    d = rig_up(&r, DN2Q_MTU_2K);
    a = sd_bg(&r, 0, SRC, 256, 4200);           /* what the RVS writes */
    b = sd_bg(&r, 1, DST, 256, 4201);           /* what WID 1 had there */
    /* WID 1's status ring: 64 bytes, so three records fill it */
    dn2q_status_setup(d, 1, ST_INIT, 0x01);
    stalls = rstat(&r, "stat-rx-stalls");
    for (k = 0; k < 4; k++) {
        /* RVS WID 0 -> WID 1 with a status record each: the 4th waits */
        dn2q_issue(d, 0, 0, dn2_req_upper(SRC, DST),
                   dn2_req_lower(DN2_OP_RVS, 0, 0, MY_CLID, 1, 1, 256));
    }
    wait_stalls(&r, stalls + 1, "the 4th RVS waits for room in WID 1's ring");
    /* WID 0 reads WID 1's DST back into its own SO-DIMM */
    dn2q_issue(d, 0, 0, dn2_req_upper(DST, DST + 0x10000),
               dn2_req_lower(DN2_OP_RVL, 0, 0, MY_CLID, 1, 0, 256));
    g_usleep(100 * 1000);
    /* free the ring: the 4th RVS lands, then the RVL reads */
    for (k = 0; k < 4; k++) {
        g_autofree char *w = g_strdup_printf("RVS %d's status record on WID 1", k);
        expect_status_any(&r, 1, st_lower(DN2_OP_RVS, 0, 0, 0, 256), LM_ALL,
                          dn2_req_upper(DST, 0), w);
    }
    wait_pkts(&r, 0, 1, "the RVL's answer");
    sd_expect(&r, 0, DST + 0x10000, a, 256,
              "the RVL read what the RVS before it wrote, not the old data");
    (void)b;
    rig_stop(&r);
}

/* An LHS first packet that ends at its header (no envelope): dropped as
 * malformed, and never read past its end (this case runs under a memory
 * checker in the memcheck suite). */
static void test_hard_lhs_empty_first(void)
{
    Rig r;
    DN2 *d;
    RingM m;
    struct dn2_hdr h;
    uint64_t more[1];
    uint64_t bad;

    d = rig_up(&r, DN2Q_MTU_2K);
    ring_setup(&r, &m, 0, 1, 0x4000, 8192);
    h = mkhdr(DN2_OP_IPUSH, 0, 1, LID);
    h.lflag = 1;
    more[0] = dn2_hdr1_encode(64, 0);           /* a 64-byte message, offset 0 */
    bad = rstat(&r, "stat-rx-drop-bad");
    botf_image(&r, 0, 1, &h, more, 1, NULL, 0);
    botf(&r, 0, 1, 2 * DN2_LINE, "LHS first packet with no data");
    wait_stat(&r, "stat-rx-drop-bad", bad + 1, "LHS first packet with no data");
    EXPECT_HEX(dn2q_ur_rd(d, 1, DN2_UR_LHB_ADDR), 0, "no LH entry taken");
    EXPECT_HEX(dn2q_pkts(d, 1), 0, "nothing received");
    rig_stop(&r);
}

/* LHSv2 of Size 0xffffffff with a Write Window prefix: the SO-DIMM part
 * stops at the end of the area, as for LHSv1, instead of 4 GiB of packets. */
static void test_hard_lhsv2_clip(void)
{
    const uint32_t src = AREA - 64, ww_len = 40;
    Rig r;
    DN2 *d;
    RingM m;
    uint8_t ww[DN2_WIN_SIZE];
    LhMsg msg = { 0x77, 0x7, 0x7777, ww_len + 64 };
    g_autofree uint8_t *buf = g_malloc(msg.len);
    int64_t end;

    d = rig_up(&r, DN2Q_MTU_2K);
    ring_setup(&r, &m, 0, 1, 0x4000, 8192);
    lh_build(buf, &msg, 4300);
    memset(ww, 0, sizeof(ww));
    memcpy(ww, buf, ww_len);
    qtest_memwrite(r.d.qts, dn2q_ww_addr(d, 0, 0), ww, sizeof(ww));
    dn2q_sdfile_put(&r.mem, 0, src, buf + ww_len, 64);
    dn2q_issue(d, 0, 0, dn2_req_upper(src, dn2_lhsv2_dst(ww_len, 0)),
               dn2_req_lower(DN2_OP_LHSV2, 0, 0, MY_CLID, 1, 0, 0xffffffffu));
    end = g_get_monotonic_time() + 2 * G_USEC_PER_SEC;
    while (dn2q_wc_state(d) && g_get_monotonic_time() < end) {
        g_usleep(1000);
    }
    EXPECT_HEX(dn2q_wc_state(d), 0, "the clipped LHSv2 is done within 2 s");
    EXPECT_TRUE(dn2q_cs(d, 0) & DN2_CS_REQ_ERROR, "clipped: Controller Status bit 20");
    wait_pkts(&r, 1, 1, "the clipped message, one packet");
    lh_check(&r, 1, 0, &msg, buf, DN2_LH_VALID | DN2_LH_COMPLETE, &m,
             "LHSv2 clipped to the prefix + what is left of the area");
    rig_stop(&r);
}

/* A BOTF image that claims the other WID of its board as SWID: the board
 * stamps the issuing WID (as it stamps PGID). */
static void test_hard_botf_swid(void)
{
    Rig r;
    struct dn2_hdr h;
    uint64_t more[1];
    uint8_t data[64];

    rig_up(&r, DN2Q_MTU_2K);
    dn2q_pattern(data, sizeof(data), 4400);
    h = mkhdr(DN2_OP_RVS, 1, 1, LID);           /* WID 0 claims to be WID 1 */
    h.eflag = 1;
    more[0] = dn2_hdr1_encode(DST, DST);
    botf_image(&r, 0, 0, &h, more, 1, data, sizeof(data));
    botf(&r, 0, 0, 16 + sizeof(data), "BOTF claiming SWID 1 from WID 0");
    expect_status(&r, 1, st_lower(DN2_OP_RVS, 0, 0, 0, 64), LM_ALL,
                  dn2_req_upper(DST, 0), "the record names the real sender, WID 0");
    rig_stop(&r);
}

/* A malformed packet for WID 1 shows in WID 1's Controller Status only,
 * and a Primitive Counter Reset clears it (not only a Controller Reset). */
static void test_hard_rx_error_per_wid(void)
{
    Rig r;
    DN2 *d;
    struct dn2_hdr h;
    uint64_t more[3];
    uint8_t data[8] = { 0 };
    uint64_t bad;

    d = rig_up(&r, DN2Q_MTU_2K);
    h = mkhdr(DN2_OP_RVL, 0, 1, LID);
    more[0] = dn2_hdr1_encode(SRC, DST);
    more[1] = dn2_hdr1_encode(64, 0);
    more[2] = 0;
    bad = rstat(&r, "stat-rx-drop-bad");
    botf_image(&r, 0, 2, &h, more, 3, data, 8);
    botf(&r, 0, 2, 32 + 8, "RVL with data for WID 1");
    wait_stat(&r, "stat-rx-drop-bad", bad + 1, "RVL with data for WID 1");
    EXPECT_HEX(dn2q_cs(d, 1) & RX_BITS, (uint64_t)DN2_RX_ERR_RVL_DATA << DN2_CS_RX_ERR_SHIFT,
               "WID 1 shows the error");
    EXPECT_HEX(dn2q_cs(d, 0) & RX_BITS, 0, "WID 0 does not show WID 1's error");
    dn2q_ur_wr(d, 1, DN2_UR_PRIM_COUNTER, 0);
    EXPECT_HEX(dn2q_cs(d, 1) & RX_BITS, 0, "a Primitive Counter Reset clears WID 1's bits");
    rig_stop(&r);
}

/*
 * The thesis lets the host VL an LHS message's overflow as soon as Valid
 * toggles; the NIC holds that VL until the message is in (choice #53).
 * WID 1's status ring has room for one more record, so the message's
 * first packet lands (Valid toggles) and its second waits; the VL issued
 * then must not read the ring before the rest has arrived.
 */
static void test_hard_lhs_vl_held(void)
{
    Rig r;
    DN2 *d;
    RingM m;
    LhMsg msg = { 0x31, 0x3, 0x3333, 600 };
    g_autofree uint8_t *buf = g_malloc(600);
    uint8_t pw[DN2_WIN_SIZE];
    uint32_t entry, ptr;
    uint64_t l0;
    unsigned vl0;
    int k;

    d = rig_up(&r, DN2Q_MTU_256);
    ring_setup(&r, &m, 0, 1, 0x4000, 8192);
    dn2q_status_setup(d, 1, ST_INIT, 0x01);          /* 3 records */
    for (k = 0; k < 2; k++) {                       /* two of them used */
        rsend(&r, 0, 0, dn2_req_upper(SRC, DST),
              dn2_req_lower(DN2_OP_RVS, 0, 0, MY_CLID, 1, 1, 64), DN2_PC_RVS, "filler RVS");
    }
    entry = dn2q_ur_rd(d, 1, DN2_UR_LHB_ADDR);
    lhs1_send(&r, &m, &msg, buf, 4600, true, "LHSv1 of 600 bytes in 3 packets");
    /* the first packet: Valid toggles, Complete does not */
    for (k = 0; k < DN2Q_MAX_POLL; k++) {
        l0 = qtest_readq(r.d.qts, dn2q_lhb_addr(d, 1, entry));
        if (l0 & DN2_LH_VALID) {
            break;
        }
    }
    EXPECT_HEX(l0 & (DN2_LH_VALID | DN2_LH_COMPLETE), DN2_LH_VALID,
               "the first packet is in (Valid), the rest waits (not Complete)");
    ptr = l0 >> 32;
    vl0 = dn2q_pcf(d, 1, DN2_PC_VL);
    dn2q_issue(d, 1, 0, dn2_req_upper(ptr, 0), dn2_req_lower(DN2_OP_VL, 0, 0, 0, 0, 0, 512));
    g_usleep(100 * 1000);
    EXPECT_HEX(dn2q_pcf(d, 1, DN2_PC_VL), vl0, "the VL of the overflow is held");
    EXPECT_HEX(dn2q_wc_state(d), 1 + DN2_OP_VL, "Module State shows the held VL");
    EXPECT_HEX(dn2q_mstate(d),
               (1 + DN2_OP_VL) | ((uint64_t)DN2_MS_RC_HOLDING << DN2_MS_RC_SHIFT) |
               ((uint64_t)DN2_MS_UNIT_BUSY << DN2_MS_PU_SHIFT),
               "Module State: the VL, the Receive Controller holding a packet "
               "back, the Prefetch Unit busy");
    /* free the ring: the rest arrives, then the VL reads it */
    for (k = 0; k < 3; k++) {
        uint64_t lo, up;
        dn2q_status_take(d, 1, &lo, &up);
    }
    dn2q_wait_pc(d, 1, DN2_PC_VL, vl0 + 1, "the VL completes once the message is in");
    qtest_memread(r.d.qts, dn2q_pw_addr(d, 1, 0), pw, sizeof(pw));
    dn2q_mem_eq("the VL read the message's overflow, not stale ring bytes", pw, buf + 56,
                sizeof(pw), 0);
    rig_stop(&r);
}

int main(int argc, char **argv)
{
    unsigned i;

    g_test_init(&argc, &argv, NULL);
    g_test_set_nonfatal_assertions();

    qtest_add_func("/dimmnet2-remote/link/loopback-sma", test_link_loopback);
    qtest_add_func("/dimmnet2-remote/link/none-remote-waits", test_link_none_waits);
    qtest_add_func("/dimmnet2-remote/snapshot/hold", test_snapshot_hold);
    qtest_add_func("/dimmnet2-remote/regs/read-mirror", test_read_mirror);
    qtest_add_func("/dimmnet2-remote/botf/windows", test_botf_windows);
    qtest_add_func("/dimmnet2-remote/botf/sizes", test_botf_sizes);
    qtest_add_func("/dimmnet2-remote/vtime/loopback", test_vtime_loopback);
    qtest_add_func("/dimmnet2-remote/vtime/timing-pw-fill", test_vtime_pw_fill);
    for (i = 0; i < G_N_ELEMENTS(wire_cases); i++) {
        qtest_add_data_func(wire_cases[i].path, &wire_cases[i], test_botf_wire_case);
    }
    qtest_add_func("/dimmnet2-remote/status/ring", test_status_ring);
    qtest_add_func("/dimmnet2-remote/rvs/lengths", test_rvs_lengths);
    qtest_add_func("/dimmnet2-remote/rvs/strided-list", test_rvs_strided_list);
    qtest_add_func("/dimmnet2-remote/rvs/command1", test_rvs_command1);
    qtest_add_func("/dimmnet2-remote/rvs/command-ex", test_rvs_command_ex);
    for (i = 0; i < G_N_ELEMENTS(rvl_groups); i++) {
        qtest_add_data_func(rvl_groups[i].path, &rvl_groups[i], test_rvl_group);
    }
    qtest_add_func("/dimmnet2-remote/rvl/command1", test_rvl_command1);
    qtest_add_func("/dimmnet2-remote/ipush/ring", test_ipush);
    qtest_add_func("/dimmnet2-remote/ipush/per-wid-amt", test_ipush_per_wid_amt);
    qtest_add_func("/dimmnet2-remote/ipush/per-message-status", test_ipush_per_message);
    qtest_add_func("/dimmnet2-remote/ipush/backpressure", test_ipush_backpressure);
    qtest_add_func("/dimmnet2-remote/lhs/v1", test_lhs_v1);
    qtest_add_func("/dimmnet2-remote/lhs/v2", test_lhs_v2);
    qtest_add_func("/dimmnet2-remote/protection/pgid", test_protection_pgid);
    qtest_add_func("/dimmnet2-remote/protection/route", test_protection_route);
    qtest_add_func("/dimmnet2-remote/protection/no-process", test_protection_noproc);
    for (i = 0; i < G_N_ELEMENTS(rx_err_cases); i++) {
        qtest_add_data_func(rx_err_cases[i].path, &rx_err_cases[i], test_rx_error_case);
    }
    qtest_add_func("/dimmnet2-remote/hardening/rvl-storm", test_hard_rvl_storm);
    qtest_add_func("/dimmnet2-remote/hardening/rvl-after-write", test_hard_rvl_after_write);
    qtest_add_func("/dimmnet2-remote/hardening/lhs-empty-first", test_hard_lhs_empty_first);
    qtest_add_func("/dimmnet2-remote/hardening/lhsv2-clip", test_hard_lhsv2_clip);
    qtest_add_func("/dimmnet2-remote/hardening/botf-swid", test_hard_botf_swid);
    qtest_add_func("/dimmnet2-remote/hardening/rx-error-per-wid", test_hard_rx_error_per_wid);
    qtest_add_func("/dimmnet2-remote/lhs/vl-held", test_hard_lhs_vl_held);
    return g_test_run();
}
