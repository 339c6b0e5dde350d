/*
 * qtest: the fabric's reliability and transport across boards, each board
 * in its own QEMU on one UDP fabric through a real dn2-switch
 * (docs/fabric.md, docs/reliability.md): coalescing (coalesce-us),
 * back-pressure from a full ring, drops, duplicates and reordering in the
 * switch, a switch restart mid-transfer, a Controller Reset and a reboot
 * with a held lane, requesters that stop granting credits (RC answers held
 * hostage), per-WID back-pressure, an RVL storm, a sender that dies in the
 * middle of an LHS message.
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

/* ------------------------------------------------------------------ */
/* Resets and hostile requesters                                       */
/* ------------------------------------------------------------------ */

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

/* ------------------------------------------------------------------ */
/* A board whose QEMU ends leaves at once                              */
/* ------------------------------------------------------------------ */

/*
 * QEMU ends (here SIGTERM, as a guest's poweroff or quit): the board says
 * BYE and the switch takes its port at once.  The switch's port timeout is
 * 10 minutes here, so only the BYE can end the port within the wait: under
 * virtual time the switch waits for a silent board, and a board that ended
 * without a word would hold the others for ever.
 */
static void test_leave_at_exit(void)
{
    static const char *const sw_args[] = { "--timeout-ms", "600000", NULL };
    Fab f;
    Board *A, *B;
    int64_t end;
    int active = -1;

    if (!fab_up_ab(&f, sw_args, 32 * MiB_, NULL, &A, &B)) {
        goto out;
    }
    EXPECT_TRUE(switch_ports(&f.sw, "active") == 2, "both boards' ports are active");
    board_stop(B);
    end = deadline(T_SHORT);
    while ((active = switch_ports(&f.sw, "active")) != 1 && now_ms() < end) {
        g_usleep(50 * 1000);
    }
    EXPECT_TRUE(active == 1 && switch_ports(&f.sw, "gone") == 1,
                "B's QEMU ended: its port gone long before the 10-minute timeout "
                "(active %d, gone %d)", active, switch_ports(&f.sw, "gone"));
out:
    fab_down(&f);
}

int main(int argc, char **argv)
{
    int r = fab_test_init(&argc, &argv);

    if (r < 0) {
        return 1;
    }
    if (r > 0) {
        qtest_add_func("/dimmnet2-fabric/coalesce/on", test_coalesce_on);
        qtest_add_func("/dimmnet2-fabric/coalesce/off", test_coalesce_off);
        qtest_add_func("/dimmnet2-fabric/back-pressure", test_back_pressure);
        qtest_add_func("/dimmnet2-fabric/faults", test_faults);
        qtest_add_func("/dimmnet2-fabric/switch-restart", test_switch_restart);
        qtest_add_func("/dimmnet2-fabric/reset-backpressured", test_reset_backpressured);
        qtest_add_func("/dimmnet2-fabric/reboot-keeps-link", test_reboot_keeps_link);
        qtest_add_func("/dimmnet2-fabric/rc-hostage", test_rc_hostage);
        qtest_add_func("/dimmnet2-fabric/rc-hostage-repeat", test_rc_hostage_repeat);
        qtest_add_func("/dimmnet2-fabric/per-wid-backpressure", test_per_wid_backpressure);
        qtest_add_func("/dimmnet2-fabric/rvl-storm-pair", test_rvl_storm_pair);
        qtest_add_func("/dimmnet2-fabric/lhs-slot-leak", test_lhs_slot_leak);
        qtest_add_func("/dimmnet2-fabric/leave-at-exit", test_leave_at_exit);
    }
    return fab_test_run();
}
