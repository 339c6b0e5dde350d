/*
 * qtest: a board on the UDP fabric under attack (docs/security.md): garbage,
 * truncated and forged datagrams from an unregistered socket, bad
 * DIMMnet-2 packets in fabric-valid datagrams from a registered peer, stale
 * epochs, and the cluster secret (boards with another secret, or none,
 * never come up).  Each case ends with legitimate traffic both ways.
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

int main(int argc, char **argv)
{
    unsigned i;
    int r = fab_test_init(&argc, &argv);

    if (r < 0) {
        return 1;
    }
    if (r > 0) {
        qtest_add_func("/dimmnet2-fabric/hostile/garbage", test_hostile_garbage);
        for (i = 0; i < G_N_ELEMENTS(bad_cases); i++) {
            qtest_add_data_func(bad_cases[i].path, &bad_cases[i], test_hostile_bad_packets);
        }
        qtest_add_func("/dimmnet2-fabric/hostile/forged", test_hostile_forged);
        qtest_add_func("/dimmnet2-fabric/secret", test_secret);
    }
    return fab_test_run();
}
