/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of libdn2fab (TAP, tests/tap/dn2-tap.h's table runner):
 * endpoints on the simulated network (fab-sim.c): transfers at 0-20 %
 * loss + dup + reorder, back-pressure, restarts, the switch lost and
 * back, multicast, hostile input, a peer gone, sessions, packets held
 * while the link is down, the ACK on the answer.
 */
#define _GNU_SOURCE 1
#include "fab-test.h"

static bool transfer(uint64_t seed, double loss, int mode, uint32_t n)
{
    char msg[200];
    sim_reset(seed, loss, loss / 2, loss);
    CHECK(bring_up(mode, 2), "link did not come up");
    CHECK(dn2f_ep_lid(EP(1)) != dn2f_ep_lid(EP(2)) && dn2_lid_assignable(dn2f_ep_lid(EP(1))),
          "LIDs 0x%x 0x%x", dn2f_ep_lid(EP(1)), dn2f_ep_lid(EP(2)));
    CHECK(dn2f_ep_route_mode(EP(1)) == mode, "route mode");
    stream(1, 2, n);
    stream(2, 1, n);
    CHECK(sim_run(cond_received, 600ULL * 1000000000), "incomplete: got %u/%u and %u/%u",
          APP(2)->got_total, n, APP(1)->got_total, n);
    CHECK(!any_error(msg, sizeof(msg)), "%s", msg);
    CHECK(sim_run(cond_idle, 20ULL * 1000000000), "not idle at the end");
    CHECK(APP(1)->got_total == n && APP(2)->got_total == n, "exactly once: %u %u",
          APP(1)->got_total, APP(2)->got_total);
    if (loss > 0) {
        CHECK(dn2f_ep_stats(EP(1))->retransmits > 0, "no retransmission at %.0f%% loss",
              loss * 100);
    }
    print_stats(mode == DN2F_ROUTE_SWITCH ? "via switch" : "direct", 1);
    fprintf(stderr, "#   simulated time %.3f s, datagrams delivered %llu, dropped %llu, duplicated %llu\n",
            (double)(sim.now - 1000000000ULL) / 1e9, (unsigned long long)sim.delivered,
            (unsigned long long)sim.dropped, (unsigned long long)sim.dups);
    return true;
}

static bool t_transfer_clean_direct(void) { return transfer(1, 0, DN2F_ROUTE_DIRECT, 5000); }

static bool t_transfer_5(void) { return transfer(2, 0.05, DN2F_ROUTE_SWITCH, 4000); }

static bool t_transfer_10(void) { return transfer(3, 0.10, DN2F_ROUTE_DIRECT, 4000); }

static bool t_transfer_20(void) { return transfer(4, 0.20, DN2F_ROUTE_SWITCH, 3000); }

static bool t_three_way(void)
{
    char msg[200];
    int i, j;
    sim_reset(5, 0.10, 0.05, 0.10);
    CHECK(bring_up(DN2F_ROUTE_DIRECT, 3), "link did not come up");
    for (i = 1; i <= 3; i++) {
        for (j = 1; j <= 3; j++) {
            if (i != j) {
                stream(i, j, 1500);
            }
        }
    }
    CHECK(sim_run(cond_received, 600ULL * 1000000000), "incomplete");
    CHECK(!any_error(msg, sizeof(msg)), "%s", msg);
    for (i = 1; i <= 3; i++) {
        CHECK(APP(i)->got_total == 3000, "ep%d got %u", i, APP(i)->got_total);
    }
    return true;
}

static bool t_backpressure(void)
{
    char msg[200];
    uint64_t stalls;
    sim_reset(6, 0.02, 0.01, 0.02);
    CHECK(bring_up(DN2F_ROUTE_SWITCH, 2), "link did not come up");
    APP(2)->busy_every = 700;           /* every 700 packets the board is full ... */
    APP(2)->busy_ns = 30000000;         /* ... for 30 ms */
    stream(1, 2, 4000);
    CHECK(sim_run(cond_received, 600ULL * 1000000000), "incomplete: %u", APP(2)->got_total);
    CHECK(!any_error(msg, sizeof(msg)), "%s", msg);
    CHECK(APP(2)->got_total == 4000, "got %u", APP(2)->got_total);
    CHECK(dn2f_ep_stats(EP(2))->busy > 0, "deliver never refused");
    CHECK(APP(1)->stall_seen > 0, "the sender never stalled");
    print_stats("backpressure", 2);

    /* A board that stays full: the sender stops at the credit limit, probes
     * at a bounded rate, and resumes when the board drains. */
    APP(2)->busy_every = 0;
    APP(2)->busy = true;
    APP(2)->busy_until = 0;
    APP(1)->to_send[0] += 3000;
    g_want[2] += 3000;
    stalls = APP(1)->stall_seen;
    {
        uint64_t acks0 = dn2f_ep_stats(EP(1))->tx_ack_dgrams;
        sim_run(NULL, 10ULL * 1000000000);
        CHECK(dn2f_ep_pending(EP(1), dn2f_ep_lid(EP(2))) <= 512, "pending %u",
              dn2f_ep_pending(EP(1), dn2f_ep_lid(EP(2))));
        CHECK(APP(1)->stall_seen > stalls, "no stall while the board is full");
        CHECK(dn2f_ep_stats(EP(1))->tx_ack_dgrams - acks0 < 400, "probe storm: %llu",
              (unsigned long long)(dn2f_ep_stats(EP(1))->tx_ack_dgrams - acks0));
        CHECK(APP(2)->got_total == 4000, "delivered while busy");
    }
    APP(2)->busy = false;
    dn2f_ep_resume(EP(2));
    CHECK(sim_run(cond_received, 600ULL * 1000000000), "incomplete after resume: %u",
          APP(2)->got_total);
    CHECK(!any_error(msg, sizeof(msg)), "%s", msg);
    CHECK(APP(2)->got_total == 7000, "got %u", APP(2)->got_total);
    return true;
}

static bool cond_b_half(void) { return APP(2)->got_total >= 800 || APP(2)->error; }

static bool cond_pending_zero(void)
{
    return dn2f_ep_pending(EP(1), dn2f_ep_lid(EP(2))) == 0 &&
           dn2f_ep_link(EP(2)) == DN2F_LINK_UP;
}

static bool t_peer_restart(void)
{
    char msg[200];
    uint16_t lid2;
    sim_reset(7, 0.05, 0.02, 0.05);
    CHECK(bring_up(DN2F_ROUTE_DIRECT, 2), "link did not come up");
    lid2 = dn2f_ep_lid(EP(2));
    stream(1, 2, 3000);
    CHECK(sim_run(cond_b_half, 60ULL * 1000000000), "first half");
    /* board 2 is reset (guest reboot): new epoch, everything in flight lost */
    APP(1)->to_send[0] = APP(1)->sent[0];   /* the old stream stops */
    dn2f_ep_reset(EP(2), 0xbeef);
    memset(APP(2)->expect, 0, sizeof(APP(2)->expect));
    APP(2)->got_total = 0;
    CHECK(sim_run(cond_pending_zero, 30ULL * 1000000000), "old stream not discarded");
    CHECK(dn2f_ep_lid(EP(2)) == lid2, "LID changed after restart: 0x%x", dn2f_ep_lid(EP(2)));
    CHECK(dn2f_ep_epoch(EP(2)) == 0xbeef, "epoch");
    /* a fresh stream in both directions */
    APP(1)->stream_id = 2;
    APP(1)->ndst = 0;
    APP(2)->ndst = 0;
    memset(APP(1)->expect, 0, sizeof(APP(1)->expect));
    APP(1)->got_total = 0;
    memset(g_want, 0, sizeof(g_want));
    stream(1, 2, 1500);
    stream(2, 1, 1500);
    CHECK(sim_run(cond_received, 600ULL * 1000000000), "new stream incomplete %u %u",
          APP(2)->got_total, APP(1)->got_total);
    CHECK(!any_error(msg, sizeof(msg)), "%s", msg);
    CHECK(APP(2)->got_total == 1500 && APP(1)->got_total == 1500, "exactly once");
    fprintf(stderr, "#   dropped at the restart: peer_reset %llu, stale epoch at ep2 %llu\n",
            (unsigned long long)dn2f_ep_stats(EP(1))->drop[DN2F_DROP_PEER_RESET],
            (unsigned long long)dn2f_ep_stats(EP(2))->drop[DN2F_DROP_STALE_EPOCH]);
    return true;
}

static bool switch_loss(int mode)
{
    char msg[200];
    uint16_t l1, l2;
    sim_reset(8 + (uint64_t)mode, 0.05, 0.02, 0.05);
    CHECK(bring_up(mode, 2), "link did not come up");
    l1 = dn2f_ep_lid(EP(1));
    l2 = dn2f_ep_lid(EP(2));
    stream(1, 2, 4000);
    stream(2, 1, 4000);
    CHECK(sim_run(cond_quarter, 60ULL * 1000000000), "first part");
    /* the switch dies (kill -9): silence for 2.5 s */
    sim.nodes[0].alive = false;
    sim_run(NULL, 2500000000ULL);
    CHECK(APP(1)->link_downs >= 1 && APP(2)->link_downs >= 1, "link down not seen (%u %u)",
          APP(1)->link_downs, APP(2)->link_downs);
    CHECK(!APP(1)->link_up && !APP(2)->link_up, "links still up");
    /* a new switch on the same address */
    add_switch(mode);
    CHECK(sim_run(cond_received, 600ULL * 1000000000), "incomplete %u %u", APP(2)->got_total,
          APP(1)->got_total);
    CHECK(!any_error(msg, sizeof(msg)), "%s", msg);
    CHECK(APP(1)->got_total == 4000 && APP(2)->got_total == 4000, "exactly once");
    CHECK(dn2f_ep_lid(EP(1)) == l1 && dn2f_ep_lid(EP(2)) == l2, "LIDs changed");
    CHECK(dn2f_ep_stats(EP(1))->drop[DN2F_DROP_PEER_RESET] == 0 &&
          dn2f_ep_stats(EP(1))->drop[DN2F_DROP_PEER_GONE] == 0, "packets dropped");
    return true;
}

static bool t_switch_loss_switched(void) { return switch_loss(DN2F_ROUTE_SWITCH); }

static bool t_switch_loss_direct(void) { return switch_loss(DN2F_ROUTE_DIRECT); }

static bool cond_group3(void)
{
    return dn2f_ep_group_members(EP(1), g_group) == 3;
}

static bool t_multicast(void)
{
    char msg[200];
    int i;
    sim_reset(10, 0.10, 0.05, 0.10);
    CHECK(bring_up(DN2F_ROUTE_DIRECT, 4), "link did not come up");
    g_group = dn2_clid_to_lid(0xc05);
    /* two members join from the board side, one is configured on the switch */
    CHECK(dn2f_ep_mcast_join(EP(2), g_group) == 0, "join");
    CHECK(dn2f_ep_mcast_join(EP(3), g_group) == 0, "join");
    CHECK(dn2f_sw_mcast_add(sim.nodes[0].sw, g_group, dn2f_ep_lid(EP(4))) == 0, "static");
    CHECK(sim_run(cond_group3, 30ULL * 1000000000), "membership not propagated (%u)",
          dn2f_ep_group_members(EP(1), g_group));
    APP(1)->dst[0] = g_group;
    APP(1)->to_send[0] = 2000;
    APP(1)->ndst = 1;
    g_want[2] = g_want[3] = g_want[4] = 2000;
    CHECK(sim_run(cond_received, 600ULL * 1000000000), "incomplete %u %u %u",
          APP(2)->got_total, APP(3)->got_total, APP(4)->got_total);
    CHECK(!any_error(msg, sizeof(msg)), "%s", msg);
    for (i = 2; i <= 4; i++) {
        CHECK(APP(i)->got_total == 2000, "member %d got %u", i, APP(i)->got_total);
    }
    CHECK(APP(1)->got_total == 0, "the sender got its own packets");
    CHECK(dn2f_ep_stats(EP(1))->mcast_tx == 2000, "mcast_tx");
    print_stats("multicast sender", 1);
    return true;
}

static bool cond_group1(void)
{
    return dn2f_ep_group_members(EP(1), g_group) == 1;
}


/* Direct routing: a multicast copy takes the switch while unicast to the
 * same member goes straight there, on the same lane.  With the switch path
 * 2 ms slower, unicast sent after a multicast copy arrives first: not a
 * loss, so nothing may be fast-retransmitted (the scale benchmark's
 * spurious fast retransmissions at 16-32 boards in direct mode). */
static bool t_mcast_second_path(void)
{
    char msg[200];
    const struct dn2f_ep_stats *s1, *s2;
    uint64_t timeouts;

    sim_reset(29, 0, 0, 0);
    CHECK(bring_up(DN2F_ROUTE_DIRECT, 2), "link did not come up");
    g_group = dn2_clid_to_lid(0xc08);
    CHECK(dn2f_ep_mcast_join(EP(2), g_group) == 0, "join");
    CHECK(sim_run(cond_group1, 30ULL * 1000000000), "membership not propagated");
    sim.sw_extra = 2000000;
    stream(1, 2, 300);                          /* unicast, DWID 0 */
    APP(1)->dst[1] = g_group;                   /* multicast, DWID 0: the same lane */
    APP(1)->dwid[1] = 0;
    APP(1)->to_send[1] = 300;
    APP(1)->sent[1] = 0;
    APP(1)->ndst = 2;
    APP(1)->one_counter = true;                 /* one stream of numbers at node 2 */
    APP(1)->round_robin = true;                 /* unicast, multicast, unicast, ... */
    g_want[2] += 300;
    CHECK(sim_run(cond_received, 600ULL * 1000000000), "incomplete: %u", APP(2)->got_total);
    CHECK(!any_error(msg, sizeof(msg)), "%s", msg);
    CHECK(APP(2)->got_total == 600, "member got %u", APP(2)->got_total);
    s1 = dn2f_ep_stats(EP(1));
    s2 = dn2f_ep_stats(EP(2));
    CHECK(s1->fast_retransmits == 0,
          "%llu fast retransmissions of packets that were only late (timeouts %llu, "
          "duplicates at the member %llu)", (unsigned long long)s1->fast_retransmits,
          (unsigned long long)s1->timeouts, (unsigned long long)s2->duplicates);
    print_stats("second path sender, first 600", 1);
    /* Once both paths have round-trip samples, the copies' timer runs on
     * the switch path's own estimate: after an idle half minute (the RTO
     * floor that the first spurious timeouts raised decays) and a run of
     * unicast only (the direct path's estimate falls to its 30 us), a
     * burst of multicast copies times out no more. */
    sim_run(NULL, 30ULL * 1000000000);
    timeouts = s1->timeouts;
    APP(1)->to_send[0] += 600;
    g_want[2] += 600;
    CHECK(sim_run(cond_received, 600ULL * 1000000000), "incomplete: %u", APP(2)->got_total);
    APP(1)->to_send[1] += 50;
    g_want[2] += 50;
    CHECK(sim_run(cond_received, 600ULL * 1000000000), "incomplete: %u", APP(2)->got_total);
    CHECK(!any_error(msg, sizeof(msg)), "%s", msg);
    CHECK(s1->fast_retransmits == 0 && s1->timeouts == timeouts,
          "after the paths were learnt: %llu fast retransmissions, %llu more timeouts",
          (unsigned long long)s1->fast_retransmits,
          (unsigned long long)(s1->timeouts - timeouts));
    print_stats("second path sender, after the bursts", 1);
    return true;
}


/* Direct routing, and the switch's queue suddenly 30 ms long (32 boards
 * multicasting through a switch that gets 1/33 of two CPUs): the copies
 * in it time out, and each timeout's probe goes straight to the member,
 * arrives first and is acknowledged.  That ACK is for a retransmitted
 * packet, so it must not end the backoff (Karn): otherwise every copy
 * still in the switch expires at once after it, and the lane resends the
 * whole burst one probe per round trip (the scale benchmark's 150 000-235 000
 * timeouts at 32 boards, all duplicates). */
static bool t_mcast_switch_queue(void)
{
    char msg[200];
    const struct dn2f_ep_stats *s1;
    uint64_t retx, dup;

    sim_reset(36, 0, 0, 0);
    CHECK(bring_up(DN2F_ROUTE_DIRECT, 3), "link did not come up");
    g_group = dn2_clid_to_lid(0xc09);
    CHECK(dn2f_ep_mcast_join(EP(2), g_group) == 0, "join");
    CHECK(dn2f_ep_mcast_join(EP(3), g_group) == 0, "join");
    CHECK(sim_run(cond_group2, 30ULL * 1000000000), "membership not propagated");
    APP(1)->dst[0] = g_group;                   /* warm up: the switch path is quick */
    APP(1)->to_send[0] = 200;
    APP(1)->ndst = 1;
    g_want[2] = g_want[3] = 200;
    CHECK(sim_run(cond_received, 600ULL * 1000000000), "incomplete %u %u",
          APP(2)->got_total, APP(3)->got_total);
    s1 = dn2f_ep_stats(EP(1));
    retx = s1->retransmits;
    dup = dn2f_ep_stats(EP(2))->duplicates + dn2f_ep_stats(EP(3))->duplicates;
    sim.sw_extra = 30000000;                    /* now 30 ms each way through it */
    APP(1)->to_send[0] += 100;
    g_want[2] = g_want[3] = 300;
    CHECK(sim_run(cond_received, 600ULL * 1000000000), "incomplete %u %u",
          APP(2)->got_total, APP(3)->got_total);
    CHECK(!any_error(msg, sizeof(msg)), "%s", msg);
    CHECK(APP(2)->got_total == 300 && APP(3)->got_total == 300, "members got %u %u",
          APP(2)->got_total, APP(3)->got_total);
    print_stats("switch queue sender", 1);
    retx = s1->retransmits - retx;
    dup = dn2f_ep_stats(EP(2))->duplicates + dn2f_ep_stats(EP(3))->duplicates - dup;
    fprintf(stderr, "#   burst of 100 copies to 2 members, switch 30 ms late: %llu resent, "
            "%llu duplicates\n", (unsigned long long)retx, (unsigned long long)dup);
    CHECK(retx <= 2 * 8, "%llu copies resent for a 30 ms switch queue (%llu duplicates): "
          "the backoff ended with the ACK of a retransmission", (unsigned long long)retx,
          (unsigned long long)dup);
    return true;
}

static bool t_hostile_input(void)
{
    char msg[200];
    struct dn2f_rng r;
    struct dn2f_addr evil;
    unsigned i, j;
    uint8_t buf[2048], pkt[64];
    struct dn2f_wbuf w;
    uint16_t l1, l2;

    sim_reset(11, 0, 0, 0);
    CHECK(bring_up(DN2F_ROUTE_DIRECT, 2), "link did not come up");
    l1 = dn2f_ep_lid(EP(1));
    l2 = dn2f_ep_lid(EP(2));
    stream(1, 2, 2000);
    dn2f_rng_seed(&r, 1234);
    mkaddr(&evil, 7);
    for (i = 0; i < 20000; i++) {
        size_t len;
        const struct dn2f_addr *from = (i % 3 == 0) ? &sim.nodes[1].addr : &evil;
        switch (i % 4) {
        case 0:                         /* garbage */
            len = dn2f_rng_next(&r) % sizeof(buf);
            for (j = 0; j < len; j++) {
                buf[j] = (uint8_t)dn2f_rng_next(&r);
            }
            break;
        case 1:                         /* forged DATA: right LIDs and epochs, any seq */
            dn2f_wbuf_init(&w, buf, sizeof(buf));
            dn2f_put_hdr(&w, DN2F_T_DATA, 0, l1, l2, dn2f_ep_epoch(EP(1)), dn2f_ep_epoch(EP(2)));
            dn2f_hdr_set_sessions(&w, (uint32_t)dn2f_rng_next(&r) | 1, (uint32_t)dn2f_rng_next(&r));
            fill_pkt(pkt, 64, l2, l1, 99, 0);
            dn2f_put_rec(&w, DN2F_REC_UNICAST, 0, (uint32_t)dn2f_rng_next(&r), 0, 0, NULL, NULL,
                         NULL, pkt, 64);
            len = dn2f_finish(&w);
            break;
        case 2:                         /* forged ACK far ahead */
            dn2f_wbuf_init(&w, buf, sizeof(buf));
            dn2f_put_hdr(&w, DN2F_T_ACK, 0, l1, l2, dn2f_ep_epoch(EP(1)), dn2f_ep_epoch(EP(2)));
            dn2f_hdr_set_sessions(&w, (uint32_t)dn2f_rng_next(&r) | 1, (uint32_t)dn2f_rng_next(&r));
            dn2f_put_ack(&w, 0, false, (uint32_t)dn2f_rng_next(&r), 0, 0, NULL);
            len = dn2f_finish(&w);
            break;
        default:                        /* forged control "from the switch" */
            dn2f_wbuf_init(&w, buf, sizeof(buf));
            dn2f_put_hdr(&w, DN2F_T_BYE, 0, 0, l2, 0, dn2f_ep_epoch(EP(2)));
            dn2f_put_u32pair(&w, DN2F_BYE_UNKNOWN, 0);
            len = dn2f_finish(&w);
            break;
        }
        dn2f_ep_input(EP(2), from, buf, len);
    }
    CHECK(sim_run(cond_received, 600ULL * 1000000000), "transfer broken by hostile input");
    CHECK(!any_error(msg, sizeof(msg)), "%s", msg);
    CHECK(APP(2)->got_total == 2000, "got %u", APP(2)->got_total);
    CHECK(APP(2)->link_downs == 0, "a forged BYE took the link down");
    fprintf(stderr, "#   hostile: bad %llu forged %llu window %llu bad_ack %llu\n",
            (unsigned long long)dn2f_ep_stats(EP(2))->drop[DN2F_DROP_BAD_DGRAM],
            (unsigned long long)dn2f_ep_stats(EP(2))->drop[DN2F_DROP_FORGED],
            (unsigned long long)dn2f_ep_stats(EP(2))->drop[DN2F_DROP_WINDOW],
            (unsigned long long)dn2f_ep_stats(EP(2))->drop[DN2F_DROP_BAD_ACK]);
    return true;
}

static bool t_peer_gone(void)
{
    uint8_t pkt[64];
    uint16_t l2;
    int rc;
    sim_reset(12, 0, 0, 0);
    CHECK(bring_up(DN2F_ROUTE_DIRECT, 2), "link did not come up");
    l2 = dn2f_ep_lid(EP(2));
    /* board 2 dies silently (its QEMU is killed) while board 1 sends */
    sim.nodes[2].alive = false;
    g_neps = 1;
    stream(1, 2, 1000);
    sim_run(NULL, 100000000ULL);
    CHECK(dn2f_ep_pending(EP(1), l2) > 0, "nothing pending");
    CHECK(!dn2f_ep_can_send(EP(1), l2, 64), "credits should be exhausted");
    sim_run(NULL, 4ULL * 1000000000);   /* the switch times board 2 out */
    CHECK(dn2f_ep_pending(EP(1), l2) > 0, "dropped too early");
    CHECK(!dn2f_ep_can_send(EP(1), l2, 64), "orphan peer must stall, not drop");
    sim_run(NULL, 11ULL * 1000000000);  /* past peer_grace_ns */
    CHECK(dn2f_ep_pending(EP(1), l2) == 0, "queue not released");
    CHECK(dn2f_ep_stats(EP(1))->drop[DN2F_DROP_PEER_GONE] > 0, "no peer_gone drops");
    fill_pkt(pkt, 64, l2, dn2f_ep_lid(EP(1)), 0, 0);
    CHECK(dn2f_ep_can_send(EP(1), l2, 64), "unroutable LID must not stall");
    rc = dn2f_ep_send(EP(1), l2, pkt, 64);
    CHECK(rc == -EHOSTUNREACH, "send to a gone LID: %d", rc);
    fill_pkt(pkt, 64, l2 + 1, dn2f_ep_lid(EP(1)), 0, 0);
    CHECK(dn2f_ep_send(EP(1), l2, pkt, 64) == -EINVAL, "DLID mismatch accepted");
    /* the BYE path: board 1 leaves cleanly, the switch forgets it at once */
    dn2f_ep_free(EP(1));
    sim.nodes[1].ep = NULL;
    sim.nodes[1].alive = false;
    sim_run(NULL, 100000000ULL);
    CHECK(dn2f_sw_active_ports(sim.nodes[0].sw) == 0, "ports still active: %u",
          dn2f_sw_active_ports(sim.nodes[0].sw));
    return true;
}


/* Defect 5b: a one-sided reset.  Board B is stopped (SIGSTOP, a long host
 * stall) longer than the switch's port timeout and A's peer grace: A drops
 * its state toward B; B, when it runs again, re-joins with the same epoch
 * and keeps its own state toward A.  Before sessions, A started again at
 * sequence 0 while B expected the next one: A's packets were acknowledged
 * and dropped as duplicates and B's were beyond A's window, forever (this
 * test then fails at "no traffic after B came back").  With sessions, B sees
 * A's new one and resets too; both directions recover. */
static bool t_one_sided_reset(void)
{
    char msg[200];
    struct dn2f_ep_config c1 = ep_cfg(1);

    sim_reset(32, 0, 0, 0);
    add_switch(DN2F_ROUTE_DIRECT);
    c1.peer_grace_ns = 1000000000ULL;
    g_neps = 0;
    CHECK(add_ep(1, &c1) == 1 && add_ep(2, NULL) == 2, "eps");
    g_eps[g_neps++] = 1;
    g_eps[g_neps++] = 2;
    memset(g_want, 0, sizeof(g_want));
    CHECK(sim_run(cond_all_up, 20ULL * 1000000000), "link did not come up");
    stream(1, 2, 500);
    stream(2, 1, 500);
    CHECK(sim_run(cond_received, 60ULL * 1000000000), "first exchange");
    CHECK(sim_run(cond_idle, 20ULL * 1000000000), "not idle");
    /* B stops for 6 s: the switch times it out (3 s), A forgets it (1 s) */
    sim.nodes[2].alive = false;
    g_neps = 1;
    sim_run(NULL, 6ULL * 1000000000);
    CHECK(dn2f_ep_pending(EP(1), dn2f_ep_lid(EP(2))) == 0, "A still has B");
    sim.nodes[2].alive = true;
    g_neps = 2;
    CHECK(sim_run(cond_all_up, 20ULL * 1000000000), "B did not come back");
    /* New streams: A -> B first (B resets its side when it sees A's new
     * session; what B had queued toward A then is dropped, counted as
     * peer_reset, as when a peer restarts), then B -> A. */
    APP(1)->stream_id = APP(2)->stream_id = 2;
    APP(1)->ndst = APP(2)->ndst = 0;
    memset(APP(1)->expect, 0, sizeof(APP(1)->expect));
    memset(APP(2)->expect, 0, sizeof(APP(2)->expect));
    APP(1)->got_total = APP(2)->got_total = 0;
    memset(g_want, 0, sizeof(g_want));
    stream(1, 2, 1000);
    CHECK(sim_run(cond_received, 60ULL * 1000000000), "no traffic A->B after B came back: "
          "%u/1000 (B counted %llu duplicates)", APP(2)->got_total,
          (unsigned long long)dn2f_ep_stats(EP(2))->duplicates);
    stream(2, 1, 1000);
    CHECK(sim_run(cond_received, 60ULL * 1000000000), "no traffic B->A after B came back: "
          "%u/1000 (A dropped %llu beyond its window)", APP(1)->got_total,
          (unsigned long long)dn2f_ep_stats(EP(1))->drop[DN2F_DROP_WINDOW]);
    CHECK(!any_error(msg, sizeof(msg)), "%s", msg);
    CHECK(APP(1)->got_total == 1000 && APP(2)->got_total == 1000, "exactly once");
    CHECK(dn2f_ep_stats(EP(2))->session_resets >= 1, "B did not reset");
    fprintf(stderr, "#   B reset its side %llu time(s) on A's new session\n",
            (unsigned long long)dn2f_ep_stats(EP(2))->session_resets);
    return true;
}


/* Defect 4: acknowledge only what is delivered, deliberately refused, or
 * held.  Board 2's link goes down (a BYE from the switch, then the switch
 * is silent for 50 ms) while board 1, still up, streams to it directly.
 * The device's LID register is 0 while its link is down, so its deliver()
 * drops packets "not for this LID" (like_device).  Before, the endpoint
 * handed it the packets that arrived meanwhile and acknowledged them: they
 * were lost (this test then fails with refused_link_down > 0 and a gap).
 * Now they wait in the endpoint until the link is up again; RVLs (request
 * lanes, interleaved with the data) too. */
static bool cond_got2(void)
{
    return APP(2)->got_total >= g_lane_want;
}

static bool t_hold_while_down(void)
{
    char msg[200];
    uint8_t buf[128];
    struct dn2f_wbuf w;

    sim_reset(41, 0, 0, 0);
    CHECK(bring_up(DN2F_ROUTE_DIRECT, 2), "link did not come up");
    APP(2)->like_device = true;
    APP(1)->round_robin = true;
    stream(1, 2, 20000);
    stream_cls(1, 2, 0, true, 2000);
    g_lane_want = 2000;
    CHECK(sim_run(cond_got2, 10ULL * 1000000000), "no traffic");
    CHECK(APP(2)->got_total > 0 && APP(2)->got_cls[2] < 2000, "mid-stream: %u",
          APP(2)->got_total);
    dn2f_wbuf_init(&w, buf, sizeof(buf));
    dn2f_put_hdr(&w, DN2F_T_BYE, 0, 0, dn2f_ep_lid(EP(2)), dn2f_sw_epoch(sim.nodes[0].sw),
                 dn2f_ep_epoch(EP(2)));
    dn2f_put_u32pair(&w, DN2F_BYE_SHUTDOWN, 0);
    dn2f_ep_input(EP(2), &sim.nodes[0].addr, buf, dn2f_finish(&w));
    CHECK(!APP(2)->link_up, "BYE did not take the link down");
    sim.nodes[0].alive = false;
    sim_run(NULL, 50000000ULL);
    sim.nodes[0].alive = true;
    CHECK(sim_run(cond_received, 600ULL * 1000000000), "incomplete: %u (refused while down "
          "%u)", APP(2)->got_total, APP(2)->refused_link_down);
    CHECK(!any_error(msg, sizeof(msg)), "%s", msg);
    CHECK(APP(2)->refused_link_down == 0, "%u packets handed over while the link was down",
          APP(2)->refused_link_down);
    CHECK(APP(2)->got_total == 22000 && APP(2)->got_cls[2] == 2000 &&
          APP(2)->link_downs == 1, "exactly once");
    return true;
}


/* Datagrams from node `from` still queued; *data_ack: one of them is DATA
 * carrying an ACK block, *acks: how many are bare ACKs. */
static unsigned queued_from(int from, bool *data_ack, unsigned *acks)
{
    unsigned i, n = 0;

    *data_ack = false;
    *acks = 0;
    for (i = 0; i < sim.nq; i++) {
        struct dn2f_msg m;
        if (!dn2f_addr_equal(&sim.heap[i].from, &sim.nodes[from].addr) ||
            dn2f_decode(sim.heap[i].buf, sim.heap[i].len, &m)) {
            continue;
        }
        n++;
        if (m.h.type == DN2F_T_DATA && m.u.data.acks.n) {
            *data_ack = true;
        } else if (m.h.type == DN2F_T_ACK) {
            (*acks)++;
        }
    }
    return n;
}


/* dn2f_ep_input_noflush: what the input makes due (the ACK) waits for the
 * caller's flush, so a board that answers in the same burst (an RVL turned
 * into RVS) sends one datagram, the answer with the ACK in it, instead of
 * a bare ACK ahead of the answer.  dn2f_ep_input still ACKs at once. */
static bool t_ack_rides_answer(void)
{
    uint8_t pkt[4096];
    uint16_t l1, l2;
    unsigned before, after, acks, round;
    bool data_ack;
    struct qitem it;
    size_t len;
    char msg[200];

    sim_reset(13, 0, 0, 0);
    CHECK(bring_up(DN2F_ROUTE_DIRECT, 2), "link did not come up");
    sim_run(NULL, 10000000ULL);
    l1 = dn2f_ep_lid(EP(1));
    l2 = dn2f_ep_lid(EP(2));
    for (round = 0; round < 2; round++) {
        /* node 1 -> node 2: packet #round */
        len = pkt_len_for(l1, round);
        fill_pkt(pkt, len, l2, l1, 0, round);
        CHECK(dn2f_ep_send(EP(1), l2, pkt, len) == 0, "send 1->2");
        dn2f_ep_flush(EP(1));
        CHECK(take_dgram(2, DN2F_T_DATA, &it), "no DATA on its way to node 2");
        before = queued_from(2, &data_ack, &acks);
        if (round == 0) {
            dn2f_ep_input_noflush(EP(2), &it.from, it.buf, it.len);
        } else {
            dn2f_ep_input(EP(2), &it.from, it.buf, it.len);
        }
        free(it.buf);
        CHECK(APP(2)->got_total == round + 1, "round %u: not delivered", round);
        after = queued_from(2, &data_ack, &acks);
        if (round == 0) {
            CHECK(after == before, "noflush: node 2 sent %u datagram(s) before answering",
                  after - before);
        } else {
            CHECK(after == before + 1 && acks == 1, "input: expected one bare ACK at once, "
                  "got %u datagram(s), %u ACK(s)", after - before, acks);
        }
        /* node 2 answers: packet #round back to node 1, then flushes */
        len = pkt_len_for(l2, round);
        fill_pkt(pkt, len, l1, l2, 0, round);
        CHECK(dn2f_ep_send(EP(2), l1, pkt, len) == 0, "send 2->1");
        dn2f_ep_flush(EP(2));
        if (round == 0) {
            after = queued_from(2, &data_ack, &acks);
            CHECK(after == before + 1 && data_ack && acks == 0,
                  "noflush: expected one DATA with the ACK in it, got %u datagram(s), "
                  "ACK in DATA %d, bare ACKs %u", after - before, data_ack, acks);
        }
        CHECK(sim_run(NULL, 50000000ULL), "simulation stuck");
        CHECK(!any_error(msg, sizeof(msg)), "%s", msg);
        CHECK(APP(1)->got_total == round + 1, "round %u: answer not delivered", round);
        CHECK(dn2f_ep_pending(EP(1), l2) == 0 && dn2f_ep_pending(EP(2), l1) == 0,
              "round %u: unacknowledged packets left (%u, %u)", round,
              dn2f_ep_pending(EP(1), l2), dn2f_ep_pending(EP(2), l1));
    }
    CHECK(dn2f_ep_stats(EP(1))->retransmits == 0 && dn2f_ep_stats(EP(2))->retransmits == 0,
          "retransmissions on a clean network");
    return true;
}

/* ================================================================ main */
static const struct tap_case tests[] = {
    { "transfer 2x5000 pkts, no loss, direct", t_transfer_clean_direct },
    { "transfer 2x4000 pkts, 5% loss + dup + reorder, via switch", t_transfer_5 },
    { "transfer 2x4000 pkts, 10% loss + dup + reorder, direct", t_transfer_10 },
    { "transfer 2x3000 pkts, 20% loss + dup + reorder, via switch", t_transfer_20 },
    { "three endpoints all-to-all, 10% loss", t_three_way },
    { "back-pressure: -EBUSY stalls the sender, nothing lost", t_backpressure },
    { "peer restart: new epoch, fresh state, same LID", t_peer_restart },
    { "switch loss and return (via switch): link down/up, no loss", t_switch_loss_switched },
    { "switch loss and return (direct): link down/up, no loss", t_switch_loss_direct },
    { "multicast to 3 members, 10% loss", t_multicast },
    { "multicast copies through the switch, unicast direct: no false losses", t_mcast_second_path },
    { "multicast copies in a 30 ms switch queue, direct routing: backed-off probes, not the "
      "burst again", t_mcast_switch_queue },
    { "hostile input to an endpoint", t_hostile_input },
    { "peer gone: orphan grace, then drop", t_peer_gone },
    { "input without flush: the ACK rides on the answer", t_ack_rides_answer },
    { "sessions: a one-sided reset (peer stopped past the grace) heals both ways", t_one_sided_reset },
    { "endpoint: packets that arrive while the link is down wait for it", t_hold_while_down },
};

int main(int argc, char **argv)
{
    return fab_test_main(tests, TAP_NCASES(tests), argc, argv);
}
