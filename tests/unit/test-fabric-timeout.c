/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of libdn2fab (TAP, tests/tap/dn2-tap.h's table runner): the
 * endpoint's retransmission timer: spurious timeouts (a late ACK, a lost
 * flight, starved boards, a long stall, the per-host RTO floor).
 */
#define _GNU_SOURCE 1
#include "fab-test.h"


/* =================================================== spurious timeouts */
/* More packets in node from's first stream (numbering goes on). */
static void more(int from, int to, uint32_t n)
{
    APP(from)->to_send[0] += n;
    g_want[to] += n;
}


/* DATA records from node `from` waiting in the network. */
static unsigned queued_recs(int from)
{
    unsigned i, n = 0;
    for (i = 0; i < sim.nq; i++) {
        struct dn2f_msg m;
        if (dn2f_addr_equal(&sim.heap[i].from, &sim.nodes[from].addr) &&
            dn2f_decode(sim.heap[i].buf, sim.heap[i].len, &m) == 0 &&
            m.h.type == DN2F_T_DATA) {
            n += m.u.data.nrecs;
        }
    }
    return n;
}

static bool cond_timeout2(void)
{
    return dn2f_ep_stats(EP(1))->timeouts >= 2;
}

static bool settle(void)
{
    char msg[200];
    CHECK(sim_run(cond_received, 5ULL * 1000000000), "incomplete: got %u/%u",
          APP(2)->got_total, g_want[2]);
    CHECK(!any_error(msg, sizeof(msg)), "%s", msg);
    CHECK(sim_run(cond_idle, 5ULL * 1000000000), "not idle");
    return true;
}


/* Boards 1 and 2, direct, after 1000 packets 1 -> 2 on a clean network:
 * RTT ~35 us, RTO 1 ms, a large window, nothing resent. */
static bool warm_pair(void)
{
    sim_reset(31, 0, 0, 0);
    CHECK(bring_up(DN2F_ROUTE_DIRECT, 2), "link did not come up");
    stream(1, 2, 1000);
    if (!settle()) {
        return false;
    }
    CHECK(dn2f_ep_stats(EP(1))->retransmits == 0 && dn2f_ep_stats(EP(1))->timeouts == 0,
          "retransmissions on a clean network");
    return true;
}


/* (a) The data arrives but the receiver is starved (its QEMU waits for a
 * CPU) past the RTO, so the ACK is late.  The timeout resends one packet;
 * the ACK's echo shows the original arrived: the window cut is undone,
 * nothing else of the flight is resent, and the RTO floor rises so that a
 * second equally late ACK fires no timer. */
static bool t_spurious_late_ack(void)
{
    const struct dn2f_ep_stats *s1, *s2;
    unsigned sent_now;

    if (!warm_pair()) {
        return false;
    }
    s1 = dn2f_ep_stats(EP(1));
    s2 = dn2f_ep_stats(EP(2));

    /* a flight of 20; node 2 starved 2.5 ms (2.5 x the RTO) */
    sim.nodes[2].stalled_until = sim.now + 2500000;
    more(1, 2, 20);
    if (!settle()) {
        return false;
    }
    print_stats("late ACK", 1);
    CHECK(s1->timeouts == 1, "timeouts %llu, expected 1", (unsigned long long)s1->timeouts);
    CHECK(s1->retransmits == 1 && s2->duplicates == 1,
          "a late ACK made %llu retransmissions (%llu duplicates at the peer), expected 1: "
          "the rest of the flight was resent", (unsigned long long)s1->retransmits,
          (unsigned long long)s2->duplicates);
    CHECK(s1->spurious_timeouts == 1 && s1->spurious_retransmits == 1,
          "the echo did not identify the original (spurious timeouts %llu, retransmits %llu)",
          (unsigned long long)s1->spurious_timeouts,
          (unsigned long long)s1->spurious_retransmits);
    CHECK(s1->rto_floor_ns > 2500000, "RTO floor %llu ns, not above the 2.5 ms delay",
          (unsigned long long)s1->rto_floor_ns);

    /* The window is restored: 300 more packets leave at once (the cut
     * window, one datagram and the slow start of the late ACK, would let
     * some 50 out). */
    more(1, 2, 300);
    pump(&sim.nodes[1]);
    sent_now = queued_recs(1);
    CHECK(sent_now >= 290, "only %u of 300 packets sent at once: the window was not restored",
          sent_now);
    if (!settle()) {
        return false;
    }

    /* a second ACK as late: no timer fires */
    sim.nodes[2].stalled_until = sim.now + 2500000;
    more(1, 2, 20);
    if (!settle()) {
        return false;
    }
    CHECK(s1->timeouts == 1 && s1->retransmits == 1,
          "the second late ACK: timeouts %llu, retransmits %llu (the RTO floor did not hold)",
          (unsigned long long)s1->timeouts, (unsigned long long)s1->retransmits);
    return true;
}


/* The receiver is starved for several RTOs (32 boards on 2 CPUs): the
 * timer fires twice in a row, backed off.  Each expiry resends one packet
 * (the oldest), not the whole flight again: when the receiver runs, the
 * ACK's echo shows the originals arrived and nothing else is resent. */
static bool t_spurious_long_stall(void)
{
    const struct dn2f_ep_stats *s1, *s2;

    if (!warm_pair()) {
        return false;
    }
    s1 = dn2f_ep_stats(EP(1));
    s2 = dn2f_ep_stats(EP(2));

    /* a flight of 20; node 2 starved 5 ms: expiries at ~1 ms and ~3 ms */
    sim.nodes[2].stalled_until = sim.now + 5000000;
    more(1, 2, 20);
    if (!settle()) {
        return false;
    }
    print_stats("long stall", 1);
    CHECK(s1->timeouts == 2, "timeouts %llu, expected 2 (1 ms, then 2 ms backed off)",
          (unsigned long long)s1->timeouts);
    CHECK(s1->retransmits == 2 && s2->duplicates == 2,
          "two expiries made %llu retransmissions (%llu duplicates at the peer), expected "
          "2: the second expiry resent the flight", (unsigned long long)s1->retransmits,
          (unsigned long long)s2->duplicates);
    CHECK(s1->spurious_timeouts == 1, "the echo did not identify the originals "
          "(spurious timeouts %llu)", (unsigned long long)s1->spurious_timeouts);
    CHECK(APP(2)->got_total == 1020, "delivered %u of 1020", APP(2)->got_total);
    return true;
}


/* Node 1 sends flights to nodes 2 and 3; node 2 is starved (a late ACK, a
 * spurious timeout, the floor raised), then node 3 is.  On one host the
 * floor learnt from node 2 holds for node 3 too: no second timeout; on two
 * hosts node 3 fires its own. */
static bool host_floor_run(bool one_host, unsigned *timeouts)
{
    const struct dn2f_ep_stats *s1;
    bool up;

    g_one_host = one_host;
    sim_reset(34, 0, 0, 0);
    up = bring_up(DN2F_ROUTE_DIRECT, 3);
    g_one_host = false;
    CHECK(up, "link did not come up");
    s1 = dn2f_ep_stats(EP(1));
    stream(1, 2, 1000);
    stream(1, 3, 1000);
    if (!settle()) {
        return false;
    }
    CHECK(s1->timeouts == 0, "timeouts on a clean network");
    sim.nodes[2].stalled_until = sim.now + 2500000;
    more(1, 2, 20);
    if (!settle()) {
        return false;
    }
    CHECK(s1->timeouts == 1 && s1->spurious_timeouts == 1, "node 2's late ACK: timeouts %llu, "
          "spurious %llu", (unsigned long long)s1->timeouts,
          (unsigned long long)s1->spurious_timeouts);
    sim.nodes[3].stalled_until = sim.now + 2500000;
    APP(1)->to_send[1] += 20;           /* the stream to node 3 */
    g_want[3] += 20;
    if (!settle()) {
        return false;
    }
    print_stats(one_host ? "one host" : "two hosts", 1);
    *timeouts = (unsigned)s1->timeouts;
    return true;
}

static bool t_spurious_host_floor(void)
{
    unsigned one = 0, two = 0;
    if (!host_floor_run(true, &one) || !host_floor_run(false, &two)) {
        return false;
    }
    CHECK(one == 1, "one host: %u timeouts, expected 1 (node 3 did not get node 2's floor)", one);
    CHECK(two == 2, "two hosts: %u timeouts, expected 2 (node 3 on another host learns its "
          "own floor)", two);
    return true;
}


/* (b) A packet really lost is resent and delivered: the timeout resends
 * the head of the flight, its ACK echoes the retransmission (not spurious:
 * no undo, no floor), and RACK resends the rest of the flight at once.
 * Then the retransmission is lost as well: the second timeout resends
 * everything expired. */
static bool t_lost_resent(void)
{
    const struct dn2f_ep_stats *s1;
    struct qitem it;
    uint64_t t0;

    sim_reset(32, 0, 0, 0);
    CHECK(bring_up(DN2F_ROUTE_DIRECT, 2), "link did not come up");
    s1 = dn2f_ep_stats(EP(1));
    stream(1, 2, 200);
    if (!settle()) {
        return false;
    }
    /* a flight of 10 in one datagram, lost */
    more(1, 2, 10);
    pump(&sim.nodes[1]);
    CHECK(queued_recs(1) == 10, "the flight is not one datagram (%u records)", queued_recs(1));
    CHECK(take_dgram(2, DN2F_T_DATA, &it), "no DATA");
    free(it.buf);
    t0 = sim.now;
    if (!settle()) {
        return false;
    }
    print_stats("lost flight", 1);
    CHECK(s1->timeouts == 1 && s1->spurious_timeouts == 0 && s1->spurious_retransmits == 0 &&
          s1->rto_floor_ns == 0, "timeouts %llu, spurious %llu/%llu, floor %llu",
          (unsigned long long)s1->timeouts, (unsigned long long)s1->spurious_timeouts,
          (unsigned long long)s1->spurious_retransmits, (unsigned long long)s1->rto_floor_ns);
    CHECK(s1->retransmits == 10 && s1->fast_retransmits == 9,
          "retransmits %llu (fast %llu): expected the head by the timeout, 9 by RACK after "
          "the echo showed the retransmission arrived", (unsigned long long)s1->retransmits,
          (unsigned long long)s1->fast_retransmits);
    CHECK(sim.now - t0 < 3000000, "recovery took %.3f ms", (double)(sim.now - t0) / 1e6);

    /* lost, and its retransmission lost too */
    more(1, 2, 10);
    pump(&sim.nodes[1]);
    CHECK(take_dgram(2, DN2F_T_DATA, &it), "no DATA");
    free(it.buf);
    /* The recovery above acknowledged only retransmitted packets, so the
     * RTO is still backed off once (Karn): 2 ms. */
    CHECK(sim_run(cond_timeout2, 2500000), "no timeout (timeouts %llu)",
          (unsigned long long)s1->timeouts);
    CHECK(take_dgram(2, DN2F_T_DATA, &it), "no retransmission");
    free(it.buf);
    if (!settle()) {
        return false;
    }
    CHECK(s1->timeouts == 3 && s1->spurious_timeouts == 0, "timeouts %llu, spurious %llu",
          (unsigned long long)s1->timeouts, (unsigned long long)s1->spurious_timeouts);
    return true;
}


/* Boards 1 and 2 go off the CPU for min..max ns every ~gap ns, board i
 * first at now + first * i. */
static void starve_boards(uint64_t min, uint64_t max, uint64_t gap, uint64_t first)
{
    int i;

    for (i = 1; i <= 2; i++) {
        struct node *nd = &sim.nodes[i];
        nd->starve = true;
        nd->starve_min = min;
        nd->starve_max = max;
        nd->starve_gap = gap;
        nd->next_stall = sim.now + first * (uint64_t)i;
    }
}


/* (c) Loss, duplication and reordering, with both boards starved now and
 * then (late ACKs): everything delivered in order, exactly once and
 * byte-exact; the spurious resends are recognised and counted. */
static bool t_spurious_mixed(void)
{
    char msg[200];
    const struct dn2f_ep_stats *s1, *s2;

    sim_reset(33, 0.03, 0.02, 0.05);
    CHECK(bring_up(DN2F_ROUTE_SWITCH, 2), "link did not come up");
    starve_boards(1000000, 5000000, 4000000, 1000000);  /* 1..5 ms off the CPU, every ~4 ms */
    stream(1, 2, 3000);
    stream(2, 1, 3000);
    APP(1)->pace_ns = APP(2)->pace_ns = 40000;
    CHECK(sim_run(cond_received, 600ULL * 1000000000), "incomplete: %u/3000 and %u/3000",
          APP(2)->got_total, APP(1)->got_total);
    CHECK(!any_error(msg, sizeof(msg)), "%s", msg);
    CHECK(sim_run(cond_idle, 20ULL * 1000000000), "not idle");
    CHECK(APP(1)->got_total == 3000 && APP(2)->got_total == 3000, "exactly once: %u %u",
          APP(1)->got_total, APP(2)->got_total);
    s1 = dn2f_ep_stats(EP(1));
    s2 = dn2f_ep_stats(EP(2));
    print_stats("mixed", 1);
    print_stats("mixed", 2);
    fprintf(stderr, "#   stalls %u + %u, spurious timeouts %llu + %llu, spurious retransmits "
            "%llu + %llu, simulated %.3f s\n", sim.nodes[1].stalls, sim.nodes[2].stalls,
            (unsigned long long)s1->spurious_timeouts, (unsigned long long)s2->spurious_timeouts,
            (unsigned long long)s1->spurious_retransmits,
            (unsigned long long)s2->spurious_retransmits,
            (double)(sim.now - 1000000000ULL) / 1e9);
    CHECK(s1->retransmits > 0 && s2->retransmits > 0, "no retransmission at 3%% loss");
    CHECK(s1->spurious_timeouts + s2->spurious_timeouts > 0 &&
          s1->spurious_retransmits + s2->spurious_retransmits > 0,
          "no spurious resend recognised under starvation");
    return true;
}


/* The target: starved receivers, nothing lost in the network: fewer than
 * 0.5 % of the packets retransmitted, all delivered. */
static bool t_starved_no_loss(void)
{
    char msg[200];
    const struct dn2f_ep_stats *s1, *s2;
    uint64_t tx, retx;

    sim_reset(34, 0, 0, 0);
    CHECK(bring_up(DN2F_ROUTE_DIRECT, 2), "link did not come up");
    starve_boards(500000, 8000000, 5000000, 700000);    /* 0.5..8 ms off the CPU, every ~5 ms */
    stream(1, 2, 20000);
    stream(2, 1, 20000);
    APP(1)->pace_ns = APP(2)->pace_ns = 40000;  /* 25 000 packets/s each way */
    CHECK(sim_run(cond_received, 600ULL * 1000000000), "incomplete: %u and %u of 20000",
          APP(2)->got_total, APP(1)->got_total);
    CHECK(!any_error(msg, sizeof(msg)), "%s", msg);
    CHECK(sim_run(cond_idle, 20ULL * 1000000000), "not idle");
    s1 = dn2f_ep_stats(EP(1));
    s2 = dn2f_ep_stats(EP(2));
    tx = s1->tx_pkts + s2->tx_pkts;
    retx = s1->retransmits + s2->retransmits;
    print_stats("starved", 1);
    print_stats("starved", 2);
    fprintf(stderr, "#   stalls %u + %u; retransmitted %llu of %llu packets (%.3f %%), "
            "%llu of %llu datagrams; spurious timeouts %llu, RTO floor %.1f ms; %.3f s\n",
            sim.nodes[1].stalls, sim.nodes[2].stalls, (unsigned long long)retx,
            (unsigned long long)tx, 100.0 * (double)retx / (double)tx,
            (unsigned long long)(s1->timeouts + s2->timeouts + s1->fast_retransmits +
                                 s2->fast_retransmits),
            (unsigned long long)(s1->tx_data_dgrams + s2->tx_data_dgrams),
            (unsigned long long)(s1->spurious_timeouts + s2->spurious_timeouts),
            (double)s1->rto_floor_ns / 1e6, (double)(sim.now - 1000000000ULL) / 1e9);
    CHECK(retx * 200 < tx, "%.2f %% of the packets retransmitted (target < 0.5 %%)",
          100.0 * (double)retx / (double)tx);
    return true;
}

/* ================================================================ main */
static const struct tap_case tests[] = {
    { "spurious timeout: a late ACK resends one packet, the window is restored, the RTO "
      "floor holds the next", t_spurious_late_ack },
    { "spurious timeout: a lost flight: the timeout resends its head, RACK the rest", t_lost_resent },
    { "spurious timeout: loss + dup + reorder with starved boards, byte-exact, counted", t_spurious_mixed },
    { "spurious timeout: starved receivers, no loss: < 0.5 % retransmitted", t_starved_no_loss },
    { "spurious timeout: a receiver starved for two backed-off RTOs gets one probe per "
      "expiry, not its flight again", t_spurious_long_stall },
    { "spurious timeout: the RTO floor a late ACK taught holds for every board of that host", t_spurious_host_floor },
};

int main(int argc, char **argv)
{
    return fab_test_main(tests, TAP_NCASES(tests), argc, argv);
}
