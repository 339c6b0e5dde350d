/*
 * qtest: lock-step virtual time across boards (vtime=on,
 * docs/virtual-time.md), each board in its own QEMU on one UDP fabric
 * through a real dn2-switch: a packet is delivered at its sender's virtual
 * time plus the latency (vt-latency-ns, the switch's quantum, or the
 * timing model's, timing=thesis: docs/timing.md), to the nanosecond in the
 * boards' pcap traces; a board stopped below its horizon reports its
 * clock; back-pressure and a full ring under virtual time.  The same cases
 * again with vt-sync=shm (the boards' same-host sync domain in shared
 * memory, dn2-switch --vt-sync shm), which must give the same delivery
 * times and order to the nanosecond; and a member of a domain killed: the
 * other names it and stops, without hanging.
 *
 * What the fabric qtests share, and how a case runs, is in
 * dimmnet2-fabric-util.h.
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
/* Virtual time: a packet is delivered at its send time + the latency  */
/* ------------------------------------------------------------------ */

typedef struct VtCase {
    const char *path;
    const char *quantum;        /* --vt-quantum (NULL: exact) */
    uint64_t latency;           /* vt-latency-ns = --vt-lookahead */
    bool timing;                /* timing=thesis */
    bool shm;                   /* vt-sync=shm: the same-host sync domain */
} VtCase;

static const VtCase vt_cases[] = {
    { "/dimmnet2-fabric/vtime/exact", NULL, 1000, false, false },
    { "/dimmnet2-fabric/vtime/latency-5us", NULL, 5000, false, false },
    { "/dimmnet2-fabric/vtime/quantum", "4096", 1000, false, false },
    /* not a power of two: rounding by masking would go wrong */
    { "/dimmnet2-fabric/vtime/quantum-100us", "100000", 1000, false, false },
    /* the lookahead at the model's least latency (625 ns, docs/timing.md) */
    { "/dimmnet2-fabric/vtime/timing-thesis", NULL, 625, true, false },
    /* the same through the sync domain: the same times, the same order */
    { "/dimmnet2-fabric/vtime-shm/exact", NULL, 1000, false, true },
    { "/dimmnet2-fabric/vtime-shm/latency-5us", NULL, 5000, false, true },
    { "/dimmnet2-fabric/vtime-shm/quantum-100us", "100000", 1000, false, true },
    { "/dimmnet2-fabric/vtime-shm/timing-thesis", NULL, 625, true, true },
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
 * the links up, both brought up for the network.  shm: the switch makes
 * a sync domain at dir/vt.shm (--vt-sync shm), the boards join it as
 * members 0 and 1 (lid= CLID 1 and 2).  False: the case ends. */
/* Give the boards lid= (CLID 1 and 2) over UDP too (shm always does). */
static bool vt_fixed_lids;

static bool vt_rig_up_sync(Fab *f, const char *const *sw_args, const char *props,
                           const char *dir, bool shm)
{
    g_autofree char *path = g_build_filename(dir, "vt.shm", NULL);
    const char *args[16];
    int i, n = 0;

    g_dead = false;
    memset(f, 0, sizeof(*f));
    f->n = 2;
    g_board_pcap_dir = dir;
    for (i = 0; sw_args[i] && n < 11; i++) {
        args[n++] = sw_args[i];
    }
    if (shm) {
        args[n++] = "--vt-sync";
        args[n++] = "shm";
        args[n++] = "--vt-shm";
        args[n++] = path;
    }
    args[n] = NULL;
    if (!switch_start(&f->sw, 0, args)) {
        return false;
    }
    /* A and C: the second board of the other cases receives in a thread,
     * which virtual time does not take */
    for (i = 0; i < 2; i++) {
        g_autofree char *p = shm ? g_strdup_printf("%s,vt-sync=shm,vt-shm=%s,lid=0x%x",
                                                   props, path, dn2_clid_to_lid(i + 1))
                                 : vt_fixed_lids ? g_strdup_printf("%s,lid=0x%x", props,
                                                                   dn2_clid_to_lid(i + 1))
                                 : g_strdup(props);

        g_board_props = p;
        board_start(&f->b[i], i ? 'C' : 'A', f->sw.port, guid_of(i), 0, 32 * MiB_);
        g_board_props = "";
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
    g_autofree char *shm = g_build_filename(dir, "vt.shm", NULL);

    g_board_props = "";
    g_board_pcap_dir = NULL;
    fab_down(f);
    unlink(pa);
    unlink(pc);
    unlink(shm);
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

    if (!vt_rig_up_sync(&f, sw_args, props, dir, c->shm)) {
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
    if (!c->shm) {
        /* Over the sync domain whether A ever sleeps depends on which
         * board the host runs first (the other's publish may have raised
         * A's grant already): not asserted there. */
        EXPECT_TRUE(qom_u64(A, "stat-vt-waits") > 0, "board A waited for grants");
    }
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
static void vtime_ring_full(bool rvl, bool shm)
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

    if (!vt_rig_up_sync(&f, sw_args, ",vtime=on,vt-latency-ns=1000,vt-start-ns=1000", dir,
                        shm)) {
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

static void vtime_stop_below_horizon(bool shm)
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

    if (!vt_rig_up_sync(&f, sw_args, props, dir, shm)) {
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
    if (!shm) {
        /* Over the sync domain C's publish at 1.5 us has already raised
         * A's grant to 2.5 us when A reaches 2 us: it reads it and goes on
         * without a wait, which is what the domain is for. */
        EXPECT_HEX(qom_u64(A, "stat-vt-waits") > 0, 1, "board A waited at its horizon");
    }
out:
    vt_rig_down(&f, dir);
}

static void test_vtime_stop_below_horizon(void)
{
    vtime_stop_below_horizon(false);
}

static void test_vtime_back_pressure(void)
{
    vtime_ring_full(false, false);
}

static void test_vtime_rvl_ring_full(void)
{
    vtime_ring_full(true, false);
}

static void test_vtime_shm_stop_below_horizon(void)
{
    vtime_stop_below_horizon(true);
}

static void test_vtime_shm_back_pressure(void)
{
    vtime_ring_full(false, true);
}

static void test_vtime_shm_rvl_ring_full(void)
{
    vtime_ring_full(true, true);
}

/*
 * Multicast in virtual time: A sends a BOTF to group 0xc01 = {A, C}; both
 * members, the sender too, deliver it at A's clock plus the latency, over
 * the switch and over the sync domain alike (one ring entry per member,
 * the same vtime and vseq).
 */
static void vtime_mcast(bool shm)
{
    g_autofree char *grp = g_strdup_printf("0xc01=0x%x,0x%x", dn2_clid_to_lid(1),
                                           dn2_clid_to_lid(2));
    const char *sw_args[] = { "--virtual-time", "--vt-boards", "2", "--vt-lookahead", "1000",
                              "--mcast", grp, NULL };
    g_autofree char *dir = g_dir_make_tmp("dn2-vt-XXXXXX", NULL);
    uint8_t data[64];
    int64_t want, ts[2];
    unsigned i, n;
    Fab f;
    Board *A, *C;
    struct dn2_hdr h;

    vt_fixed_lids = true;
    if (!vt_rig_up_sync(&f, sw_args, ",vtime=on,vt-latency-ns=1000,vt-start-ns=1000", dir,
                        shm)) {
        goto out;
    }
    A = &f.b[0];
    C = &f.b[1];
    vt_step_both(A, C, 20000);
    dn2q_pattern(data, sizeof(data), 53);
    want = A->vclock + 1000;
    h = rvs_hdr(dn2_clid_to_lid(0xc01), 0x2000);
    h.lflag = 1;
    botf_send(A, 0, 0, &h, data, sizeof(data));
    vt_step_both(A, C, want + 20000);
    for (i = 0; i < 2; i++) {
        Board *b = &f.b[i];
        g_autofree char *pcap = g_strdup_printf("%s/%c.pcap", dir, b->name);

        st_expect(b, 0, DN2_OP_RVS, 0, 0, A->lid, 0, sizeof(data), 0x2000, T_SHORT,
                  "the multicast packet at a member");
        EXPECT_HEX(qom_u64(b, "stat-rx-packets"), 1, "board %c: one packet", b->name);
        n = vt_pcap_times(pcap, ts, G_N_ELEMENTS(ts));
        EXPECT_HEX(n, 1, "board %c's trace: one record", b->name);
        if (n) {
            EXPECT_HEX(ts[0], want, "board %c: delivered at A's clock + 1 us", b->name);
        }
        EXPECT_HEX(qom_u64(b, "stat-vt-late"), 0, "board %c: nothing late", b->name);
    }
out:
    vt_fixed_lids = false;
    vt_rig_down(&f, dir);
}

static void test_vtime_mcast(void)
{
    vtime_mcast(false);
}

static void test_vtime_shm_mcast(void)
{
    vtime_mcast(true);
}

/* A string QOM property of a board's device ("" if it cannot be read). */
static char *vt_qom_str(Board *b, const char *prop)
{
    QDict *rsp = qtest_qmp(b->d.qts, "{'execute': 'qom-get', 'arguments': "
                           "{'path': '/machine/peripheral/dn', 'property': %s}}", prop);
    QString *q = qobject_to(QString, qdict_get(rsp, "return"));
    char *v = g_strdup(q ? qstring_get_str(q) : "");

    qobject_unref(rsp);
    return v;
}

/* A board's QMP run state ("running", "internal-error", ...). */
static char *vt_run_state(Board *b)
{
    QDict *rsp = qtest_qmp(b->d.qts, "{'execute': 'query-status'}");
    QDict *ret = qdict_get_qdict(rsp, "return");
    char *st = g_strdup(ret && qdict_haskey(ret, "status") ? qdict_get_str(ret, "status")
                                                            : "");

    qobject_unref(rsp);
    return st;
}

/*
 * A member of the sync domain dies (its QEMU killed): the other board,
 * waiting at its horizon for it, finds it dead within the domain's death
 * check (100 ms slices), names it (member, LID, pid) in its error and in
 * vt-error, and stops its lock-step and its VM (under qtest: run state
 * internal-error; outside, QEMU exits with status 1) instead of waiting
 * for ever.
 */
static void test_vtime_shm_member_dies(void)
{
    const char *sw_args[] = { "--virtual-time", "--vt-boards", "2", "--vt-lookahead", "1000",
                              NULL };
    const char *props = ",vtime=on,vt-latency-ns=1000,vt-start-ns=1000";
    g_autofree char *dir = g_dir_make_tmp("dn2-vt-XXXXXX", NULL);
    g_autofree char *err = NULL, *want = NULL, *st = NULL, *before = NULL;
    VtStopWait w = { 0 };
    GThread *t;
    int64_t end;
    Fab f;
    Board *A, *C;

    if (!vt_rig_up_sync(&f, sw_args, props, dir, true)) {
        goto out;
    }
    A = &f.b[0];
    C = &f.b[1];
    before = vt_qom_str(A, "vt-error");
    EXPECT_TRUE(!strcmp(before, ""), "board A: no error before ('%s')", before);
    kill(qtest_pid(C->d.qts), SIGKILL);
    /* libqtest aborts on a QEMU killed by a signal: C's state is left
     * behind (its zombie is what A finds dead), never quit */
    C->d.qts = NULL;
    w.b = A;
    w.to = 50000;
    t = g_thread_new("vt-dead", vt_stop_thread, &w);
    end = now_ms() + 20000;
    while (!qatomic_read(&w.done) && now_ms() < end) {
        g_usleep(10000);
    }
    EXPECT_TRUE(qatomic_read(&w.done), "board A stepped past its horizon with C dead: "
                "it does not wait for a dead member");
    if (!qatomic_read(&w.done)) {
        /* the thread is stuck in A: end A too (the program then fails) */
        kill(qtest_pid(A->d.qts), SIGKILL);
        A->d.qts = NULL;
        g_thread_unref(t);
        goto out;
    }
    g_thread_join(t);
    err = vt_qom_str(A, "vt-error");
    want = g_strdup_printf("LID 0x%04x", dn2_clid_to_lid(2));
    EXPECT_TRUE(strstr(err, "member 1") && strstr(err, want) && strstr(err, "died"),
                "board A's vt-error names the dead member 1 (%s): '%s'", want, err);
    end = now_ms() + 10000;
    do {
        g_free(st);
        st = vt_run_state(A);
    } while (strcmp(st, "internal-error") && now_ms() < end && (g_usleep(10000), 1));
    EXPECT_TRUE(!strcmp(st, "internal-error"), "board A's VM stopped (state '%s')", st);
out:
    vt_rig_down(&f, dir);
}

int main(int argc, char **argv)
{
    unsigned i;
    int r = fab_test_init(&argc, &argv);

    if (r < 0) {
        return 1;
    }
    if (r > 0) {
        for (i = 0; i < G_N_ELEMENTS(vt_cases); i++) {
            qtest_add_data_func(vt_cases[i].path, &vt_cases[i], test_vtime);
        }
        qtest_add_func("/dimmnet2-fabric/vtime/stop-below-horizon",
                       test_vtime_stop_below_horizon);
        qtest_add_func("/dimmnet2-fabric/vtime/back-pressure", test_vtime_back_pressure);
        qtest_add_func("/dimmnet2-fabric/vtime/rvl-ring-full", test_vtime_rvl_ring_full);
        qtest_add_func("/dimmnet2-fabric/vtime/multicast", test_vtime_mcast);
        qtest_add_func("/dimmnet2-fabric/vtime-shm/multicast", test_vtime_shm_mcast);
        qtest_add_func("/dimmnet2-fabric/vtime-shm/stop-below-horizon",
                       test_vtime_shm_stop_below_horizon);
        qtest_add_func("/dimmnet2-fabric/vtime-shm/back-pressure",
                       test_vtime_shm_back_pressure);
        qtest_add_func("/dimmnet2-fabric/vtime-shm/rvl-ring-full",
                       test_vtime_shm_rvl_ring_full);
        qtest_add_func("/dimmnet2-fabric/vtime-shm/member-dies", test_vtime_shm_member_dies);
    }
    return fab_test_run();
}
