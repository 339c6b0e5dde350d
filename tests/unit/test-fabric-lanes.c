/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of libdn2fab (TAP, tests/tap/dn2-tap.h's table runner): the
 * lanes: WIDs refused and flowing, multicast copies in their lane, the
 * request lane (a full RC FIFO, read after write, two boards storming
 * RVLs at each other, a restart).
 */
#define _GNU_SOURCE 1
#include "fab-test.h"

static bool cond_wid1_done(void)
{
    return APP(2)->got_cls[1] >= g_lane_want || APP(2)->error;
}

static bool lanes(int mode, uint64_t seed, double loss)
{
    char msg[200];
    const uint32_t n = 3000;
    uint64_t t0, t_done;
    const uint64_t refuse_ns = 20ULL * 1000000000;

    sim_reset(seed, loss, loss / 2, loss);
    CHECK(bring_up(mode, 2), "link did not come up");
    APP(2)->refuse_cls = 1;            /* WID 0's ring is full ... */
    stream_wid(1, 2, 0, n);
    stream_wid(1, 2, 1, n);
    g_lane_want = n;
    t0 = sim.now;
    CHECK(sim_run(cond_wid1_done, refuse_ns), "WID 1 starved while WID 0 refused: "
          "WID 1 got %u/%u, WID 0 %u", APP(2)->got_cls[1], n, APP(2)->got_cls[0]);
    t_done = sim.now;
    CHECK(!any_error(msg, sizeof(msg)), "%s", msg);
    CHECK(APP(2)->got_cls[0] == 0, "WID 0 got %u packets while refusing", APP(2)->got_cls[0]);
    CHECK(dn2f_ep_stats(EP(2))->busy > 0, "deliver never refused");
    /* the sender: lane 0 waits for credits, lane 1 does not */
    CHECK(!dn2f_ep_can_send_lane(EP(1), dn2f_ep_lid(EP(2)), 0, 64),
          "lane 0 should be out of credits");
    CHECK(!dn2f_ep_can_send(EP(1), dn2f_ep_lid(EP(2)), 64), "can_send: both lanes");
    CHECK(dn2f_ep_can_send_lane(EP(1), dn2f_ep_lid(EP(2)), 1, 64), "lane 1 stalled");
    /* ... for a long while more: WID 0 stays refused, nothing is lost */
    sim_run(NULL, 5ULL * 1000000000);
    CHECK(APP(2)->got_cls[0] == 0, "delivered while refused");
    APP(2)->refuse_cls = 0;
    dn2f_ep_resume(EP(2));
    CHECK(sim_run(cond_received, 600ULL * 1000000000), "incomplete after resume: WID 0 %u/%u",
          APP(2)->got_cls[0], n);
    CHECK(!any_error(msg, sizeof(msg)), "%s", msg);
    CHECK(APP(2)->got_cls[0] == n && APP(2)->got_cls[1] == n, "exactly once: %u %u",
          APP(2)->got_cls[0], APP(2)->got_cls[1]);
    CHECK(sim_run(cond_idle, 20ULL * 1000000000), "not idle at the end");
    fprintf(stderr, "#   WID 1 complete after %.3f s with WID 0 refused; %llu refusals, "
            "probes kept it alive\n", (double)(t_done - t0) / 1e9,
            (unsigned long long)dn2f_ep_stats(EP(2))->busy);
    return true;
}

static bool t_lanes_direct(void) { return lanes(DN2F_ROUTE_DIRECT, 21, 0); }

static bool t_lanes_lossy(void) { return lanes(DN2F_ROUTE_SWITCH, 22, 0.05); }


/* Multicast copies travel in the lane of their DWID: a member whose WID 0
 * refuses still gets the group's DWID 1 packets. */
static bool cond_mc_lane(void)
{
    return (APP(2)->got_cls[1] >= 1000 && APP(3)->got_cls[1] >= 1000) || APP(2)->error ||
           APP(3)->error;
}

static bool t_lanes_mcast(void)
{
    char msg[200];
    sim_reset(23, 0.05, 0.02, 0.05);
    CHECK(bring_up(DN2F_ROUTE_DIRECT, 3), "link did not come up");
    g_group = dn2_clid_to_lid(0xc07);
    CHECK(dn2f_ep_mcast_join(EP(2), g_group) == 0 && dn2f_ep_mcast_join(EP(3), g_group) == 0,
          "join");
    CHECK(sim_run(cond_group2, 30ULL * 1000000000), "membership not propagated");
    APP(2)->refuse_cls = 1;
    stream_wid(1, 2, 0, 1000);                  /* unicast to WID 0 of node 2: blocked */
    APP(1)->dst[1] = g_group;                   /* the group, DWID 1 */
    APP(1)->dwid[1] = 1;
    APP(1)->to_send[1] = 1000;
    APP(1)->sent[1] = 0;
    APP(1)->ndst = 2;
    CHECK(sim_run(cond_mc_lane, 20ULL * 1000000000), "multicast lane starved: %u %u",
          APP(2)->got_cls[1], APP(3)->got_cls[1]);
    CHECK(!any_error(msg, sizeof(msg)), "%s", msg);
    CHECK(APP(2)->got_cls[0] == 0, "WID 0 delivered while refused");
    APP(2)->refuse_cls = 0;
    dn2f_ep_resume(EP(2));
    g_want[2] = 2000;
    g_want[3] = 1000;
    CHECK(sim_run(cond_received, 600ULL * 1000000000), "incomplete after resume");
    CHECK(!any_error(msg, sizeof(msg)), "%s", msg);
    CHECK(APP(2)->got_cls[0] == 1000 && APP(2)->got_cls[1] == 1000 &&
          APP(3)->got_cls[1] == 1000, "exactly once");
    return true;
}


/* Test 1: the RC FIFO of board 2's WID 0 is full (deliver() refuses every
 * RVL with -EBUSY) while board 1 sends it requests and data for WID 0,
 * interleaved.  Only the request lane stops: the data keeps being
 * delivered.  With one lane per DWID, the first refused RVL held every
 * packet queued behind it, data included (this test then fails at "data
 * starved").  After resume every request arrives, in order, once. */
static bool cond_data0_done(void)
{
    return APP(2)->got_cls[0] >= g_lane_want || APP(2)->error;
}

static bool req_lane(int mode, uint64_t seed, double loss)
{
    char msg[200];
    const uint32_t n = 3000, nreq = 1000;
    uint16_t lid2;

    sim_reset(seed, loss, loss / 2, loss);
    CHECK(bring_up(mode, 2), "link did not come up");
    lid2 = dn2f_ep_lid(EP(2));
    APP(2)->refuse_cls = 1u << 2;       /* WID 0's RC FIFO is full */
    APP(1)->round_robin = true;         /* data and requests interleaved */
    stream_cls(1, 2, 0, false, n);
    stream_cls(1, 2, 0, true, nreq);
    g_lane_want = n;
    CHECK(sim_run(cond_data0_done, 20ULL * 1000000000), "data starved behind refused "
          "requests: data %u/%u, requests %u", APP(2)->got_cls[0], n, APP(2)->got_cls[2]);
    CHECK(!any_error(msg, sizeof(msg)), "%s", msg);
    CHECK(APP(2)->got_cls[2] == 0, "%u requests delivered while refused", APP(2)->got_cls[2]);
    CHECK(dn2f_ep_stats(EP(2))->busy > 0, "deliver never refused");
    CHECK(!dn2f_ep_can_send_lane(EP(1), lid2, 2, REQ_LEN), "request lane should be out of "
          "credits");
    CHECK(dn2f_ep_can_send_lane(EP(1), lid2, 0, 4096), "data lane stalled");
    CHECK(!dn2f_ep_can_send(EP(1), lid2, 64), "can_send: every lane");
    sim_run(NULL, 5ULL * 1000000000);
    CHECK(APP(2)->got_cls[2] == 0, "delivered while refused");
    APP(2)->refuse_cls = 0;
    dn2f_ep_resume(EP(2));
    CHECK(sim_run(cond_received, 600ULL * 1000000000), "incomplete after resume: requests "
          "%u/%u", APP(2)->got_cls[2], nreq);
    CHECK(!any_error(msg, sizeof(msg)), "%s", msg);
    CHECK(APP(2)->got_cls[0] == n && APP(2)->got_cls[2] == nreq, "exactly once: %u %u",
          APP(2)->got_cls[0], APP(2)->got_cls[2]);
    CHECK(sim_run(cond_idle, 20ULL * 1000000000), "not idle at the end");
    CHECK(dn2f_ep_pending(EP(1), lid2) == 0, "pending");
    return true;
}

static bool t_req_lane_direct(void) { return req_lane(DN2F_ROUTE_DIRECT, 61, 0); }

static bool t_req_lane_lossy(void) { return req_lane(DN2F_ROUTE_SWITCH, 62, 0.05); }


/* Test 2: read after write.  Board 2's WID 0 status ring is full (data for
 * WID 0 refused); board 1 queues a data packet, then an RVL of the same
 * WID.  The RVL must not be delivered before the data packet (it would
 * read what the data packet was to overwrite): it waits, acknowledged and
 * held, and after resume both arrive, data first.  Then the same at 10 %
 * loss + dup + reorder via the switch, both directions, data and RVLs
 * interleaved, the receiver refusing everything now and then: every RVL's
 * delivery is checked against the data queued before it (s_deliver). */
static bool t_read_after_write(void)
{
    char msg[200];
    uint8_t pkt[4096];
    uint16_t l1, l2;
    uint32_t before = 1;
    size_t len;

    sim_reset(51, 0, 0, 0);
    CHECK(bring_up(DN2F_ROUTE_DIRECT, 2), "link did not come up");
    l1 = dn2f_ep_lid(EP(1));
    l2 = dn2f_ep_lid(EP(2));
    APP(2)->refuse_cls = 1u << 0;       /* WID 0's status ring is full */
    len = pkt_len_for(l1, 0);
    fill_pkt(pkt, len, l2, l1, 0, 0);
    CHECK(dn2f_ep_send(EP(1), l2, pkt, len) == 0, "send data");
    fill_pkt(pkt, REQ_LEN, l2, l1, 0, 0);
    set_type(pkt, DN2_OP_RVL);
    memcpy(pkt + 16, &before, 4);
    CHECK(dn2f_pkt_lane(pkt) == 2, "lane %u", dn2f_pkt_lane(pkt));
    CHECK(dn2f_ep_send(EP(1), l2, pkt, REQ_LEN) == 0, "send RVL");
    dn2f_ep_flush(EP(1));
    sim_run(NULL, 1000000000ULL);
    CHECK(!any_error(msg, sizeof(msg)), "%s", msg);
    CHECK(APP(2)->got_total == 0, "%u delivered while the data was refused",
          APP(2)->got_total);
    CHECK(dn2f_ep_stats(EP(2))->req_held == 1, "req_held %llu",
          (unsigned long long)dn2f_ep_stats(EP(2))->req_held);
    CHECK(dn2f_ep_pending(EP(1), l2) == 0, "not acknowledged (%u pending): held packets are",
          dn2f_ep_pending(EP(1), l2));
    /* (the sender idle, the two packets only in the receiver: what a
     * snapshot's hold must see, or a restored board would never get them) */
    CHECK(dn2f_ep_idle(EP(1)) && dn2f_ep_rx_held(EP(2)) == 2 && dn2f_ep_rx_held(EP(1)) == 0,
          "held: sender idle %d, receiver holds %u", dn2f_ep_idle(EP(1)), dn2f_ep_rx_held(EP(2)));
    APP(2)->refuse_cls = 0;
    dn2f_ep_resume(EP(2));
    sim_run(NULL, 100000000ULL);
    CHECK(dn2f_ep_rx_held(EP(2)) == 0, "still held after resume: %u", dn2f_ep_rx_held(EP(2)));
    CHECK(!any_error(msg, sizeof(msg)), "%s", msg);
    CHECK(APP(2)->log_n == 2 && APP(2)->log[0] == (0u << 24 | 0) &&
          APP(2)->log[1] == (2u << 24 | 0), "order after resume: %u deliveries, 0x%x 0x%x",
          APP(2)->log_n, APP(2)->log[0], APP(2)->log[1]);

    /* lossy, both directions, interleaved, the receivers now and then full */
    sim_reset(52, 0.10, 0.05, 0.10);
    CHECK(bring_up(DN2F_ROUTE_SWITCH, 2), "link did not come up");
    APP(1)->round_robin = APP(2)->round_robin = true;
    APP(2)->busy_every = 300;
    APP(2)->busy_ns = 3000000;
    APP(1)->busy_every = 450;
    APP(1)->busy_ns = 2000000;
    stream_cls(1, 2, 0, false, 2000);
    stream_cls(1, 2, 0, true, 2000);
    stream_cls(1, 2, 1, true, 500);
    stream_cls(1, 2, 1, false, 500);
    stream_cls(2, 1, 1, false, 1500);
    stream_cls(2, 1, 1, true, 1500);
    CHECK(sim_run(cond_received, 600ULL * 1000000000), "incomplete: %u %u",
          APP(1)->got_total, APP(2)->got_total);
    CHECK(!any_error(msg, sizeof(msg)), "%s", msg);
    CHECK(APP(2)->got_total == 5000 && APP(1)->got_total == 3000, "exactly once");
    CHECK(dn2f_ep_stats(EP(1))->req_held + dn2f_ep_stats(EP(2))->req_held > 0,
          "no request ever had to wait: the order was not exercised");
    fprintf(stderr, "#   requests that waited for their data: %llu + %llu\n",
            (unsigned long long)dn2f_ep_stats(EP(1))->req_held,
            (unsigned long long)dn2f_ep_stats(EP(2))->req_held);
    return true;
}


/* Test 3: two boards storm RVLs at each other.  A model board: an RVL takes
 * one of 16 RC FIFO slots (-EBUSY when full); the RC executor answers the
 * FIFO's head with n data packets (RVS) sent back to the requester while
 * dn2f_ep_can_send_lane() allows, and frees the slot once the answer's last
 * packet is queued (then dn2f_ep_resume()).  Each board sends m RVLs to the
 * other at once.  Every answer must complete.  With requests in the data
 * lanes (single_class: the requests carry a non-RVL TYPE, so they share the
 * lane with the answers, as before the request lanes) the same exchange
 * deadlocks: each board's full RC FIFO blocks the lane where the other's
 * answers wait behind the next RVL, and its own answers need the credits
 * of the lane the other blocks the same way. */
#define RC_FIFO 16

#define ANS_LEN 4096

static struct storm {
    bool on, single_class;
    uint16_t peer;
    unsigned m, n;
    unsigned issued;
    unsigned fifo[RC_FIFO], fhead, fn;
    unsigned ans_sent;
    unsigned got[64];
    unsigned done, busy;
} g_storm[MAX_NODES];

static bool storm_on(int idx)
{
    return idx >= 0 && idx < MAX_NODES && g_storm[idx].on;
}

static void storm_clear(void)
{
    memset(g_storm, 0, sizeof(g_storm));
}

static void storm_pkt(uint8_t *p, size_t len, uint16_t dlid, unsigned type, char what,
                      uint32_t id, uint32_t idx)
{
    uint64_t h0 = (len & 0xfff) | (uint64_t)type << 12 | (uint64_t)dlid << 32;
    memcpy(p, &h0, 8);          /* little-endian host */
    p[8] = (uint8_t)what;
    memcpy(p + 12, &id, 4);
    memcpy(p + 16, &idx, 4);
}

static int storm_deliver(struct node *nd, uint16_t slid, const uint8_t *pkt, size_t len)
{
    struct storm *st = &g_storm[nd->idx];
    struct app *a = &nd->app;
    uint32_t id, idx;

    memcpy(&id, pkt + 12, 4);
    memcpy(&idx, pkt + 16, 4);
    if (len < 20 || slid != st->peer || id >= st->m) {
        a->error = true;
        snprintf(a->errmsg, sizeof(a->errmsg), "storm: stray packet");
        return 0;
    }
    if (pkt[8] == 'Q') {                /* an RVL: into the RC FIFO */
        if (st->fn == RC_FIFO) {
            st->busy++;
            return -EBUSY;
        }
        st->fifo[(st->fhead + st->fn++) % RC_FIFO] = id;
        return 0;
    }
    if (idx != st->got[id]) {           /* an answer packet */
        a->error = true;
        snprintf(a->errmsg, sizeof(a->errmsg), "storm: answer %u packet %u, expected %u",
                 id, idx, st->got[id]);
        return 0;
    }
    if (++st->got[id] == st->n) {
        st->done++;
    }
    return 0;
}

static void storm_pump(struct node *nd)
{
    static uint8_t pkt[ANS_LEN];
    struct storm *st = &g_storm[nd->idx];
    struct dn2f_ep *ep = nd->ep;

    for (;;) {
        bool freed = false;
        /* the host's requests */
        while (st->issued < st->m) {
            storm_pkt(pkt, REQ_LEN, st->peer, st->single_class ? DN2_OP_VS : DN2_OP_RVL, 'Q',
                      st->issued, 0);
            if (!dn2f_ep_can_send_lane(ep, st->peer, dn2f_pkt_lane(pkt), REQ_LEN) ||
                dn2f_ep_send(ep, st->peer, pkt, REQ_LEN) != 0) {
                break;
            }
            st->issued++;
        }
        /* the RC executor: the FIFO's head, answered */
        while (st->fn) {
            uint32_t id = st->fifo[st->fhead];
            while (st->ans_sent < st->n) {
                storm_pkt(pkt, ANS_LEN, st->peer, DN2_OP_RVS, 'A', id, st->ans_sent);
                if (!dn2f_ep_can_send_lane(ep, st->peer, dn2f_pkt_lane(pkt), ANS_LEN) ||
                    dn2f_ep_send(ep, st->peer, pkt, ANS_LEN) != 0) {
                    break;
                }
                st->ans_sent++;
            }
            if (st->ans_sent < st->n) {
                break;
            }
            st->ans_sent = 0;
            st->fhead = (st->fhead + 1) % RC_FIFO;
            st->fn--;
            freed = true;
        }
        dn2f_ep_flush(ep);
        if (!freed) {
            break;
        }
        dn2f_ep_resume(ep);             /* a slot is free: the refused RVL again */
    }
}


/* The storm's nodes run this model instead of the simulator's test board. */
static const struct sim_model storm_model = {
    .on = storm_on, .deliver = storm_deliver, .pump = storm_pump, .clear = storm_clear,
};

static bool cond_storm(void)
{
    return (g_storm[1].done == g_storm[1].m && g_storm[2].done == g_storm[2].m) ||
           APP(1)->error || APP(2)->error;
}

static bool storm(int mode, uint64_t seed, double loss, bool single_class, unsigned m,
                  unsigned n, uint64_t limit_ns)
{
    char msg[200];
    int i;

    sim_reset(seed, loss, loss / 2, loss);
    CHECK(bring_up(mode, 2), "link did not come up");
    for (i = 1; i <= 2; i++) {
        struct storm *st = &g_storm[i];
        memset(st, 0, sizeof(*st));
        st->peer = dn2f_ep_lid(EP(3 - i));
        st->m = m;
        st->n = n;
        st->single_class = single_class;
        st->on = true;
    }
    sim_run(cond_storm, limit_ns);
    CHECK(!any_error(msg, sizeof(msg)), "%s", msg);
    fprintf(stderr, "#   %s, %u RVLs of %u KiB each way: answers complete %u and %u, RC FIFO "
            "refusals %u and %u, %.3f s simulated\n",
            single_class ? "requests in the data lanes" : "request lanes", m, n * ANS_LEN / 1024,
            g_storm[1].done, g_storm[2].done, g_storm[1].busy, g_storm[2].busy,
            (double)(sim.now - 1000000000ULL) / 1e9);
    return true;
}

static bool t_storm(void)
{
    CHECK(storm(DN2F_ROUTE_DIRECT, 71, 0, false, 60, 256, 120ULL * 1000000000), "storm");
    CHECK(g_storm[1].done == 60 && g_storm[2].done == 60, "deadlock: %u and %u of 60 answers "
          "complete", g_storm[1].done, g_storm[2].done);
    CHECK(g_storm[1].busy > 0 && g_storm[2].busy > 0, "the RC FIFOs never filled");
    CHECK(sim_run(cond_idle, 20ULL * 1000000000), "not idle at the end");
    return true;
}

static bool t_storm_lossy(void)
{
    CHECK(storm(DN2F_ROUTE_SWITCH, 72, 0.05, false, 60, 64, 300ULL * 1000000000), "storm");
    CHECK(g_storm[1].done == 60 && g_storm[2].done == 60, "deadlock: %u and %u of 60 answers "
          "complete", g_storm[1].done, g_storm[2].done);
    CHECK(sim_run(cond_idle, 20ULL * 1000000000), "not idle at the end");
    return true;
}


/* The control: the same storm with the requests in the data lanes stops
 * for good (no answer completes in the last 20 simulated seconds). */
static bool t_storm_single_class(void)
{
    unsigned d1, d2;
    CHECK(storm(DN2F_ROUTE_DIRECT, 71, 0, true, 60, 256, 10ULL * 1000000000), "storm");
    d1 = g_storm[1].done;
    d2 = g_storm[2].done;
    sim_run(cond_storm, 20ULL * 1000000000);
    CHECK(d1 < 60 && d2 < 60 && g_storm[1].done == d1 && g_storm[2].done == d2,
          "expected a deadlock with one lane per DWID, got %u and %u of 60 (%u and %u "
          "20 s earlier)", g_storm[1].done, g_storm[2].done, d1, d2);
    return true;
}


/* Resets and the request lanes: requests held for their data lane or
 * refused by a full RC FIFO are dropped with the rest of the pair's state
 * when the sender restarts (new epoch); the new incarnation's lanes start
 * clean (sequence 0, its requests ordered after its own data only). */
static bool t_req_reset(void)
{
    char msg[200];
    uint16_t l1, l2;

    sim_reset(53, 0, 0, 0);
    CHECK(bring_up(DN2F_ROUTE_DIRECT, 2), "link did not come up");
    l1 = dn2f_ep_lid(EP(1));
    l2 = dn2f_ep_lid(EP(2));
    APP(2)->refuse_cls = 1u << 0 | 1u << 3;     /* WID 0 data, WID 1 requests */
    APP(1)->round_robin = true;
    stream_cls(1, 2, 0, false, 200);
    stream_cls(1, 2, 0, true, 200);             /* held for the refused data */
    stream_cls(1, 2, 1, true, 200);             /* refused by the RC FIFO */
    sim_run(NULL, 1000000000ULL);
    CHECK(APP(2)->got_total == 0, "delivered while refused: %u", APP(2)->got_total);
    CHECK(dn2f_ep_stats(EP(2))->req_held >= 1 && dn2f_ep_stats(EP(2))->busy >= 1,
          "held %llu busy %llu", (unsigned long long)dn2f_ep_stats(EP(2))->req_held,
          (unsigned long long)dn2f_ep_stats(EP(2))->busy);
    /* board 1 restarts; board 2 drops what it held from the old one */
    APP(1)->ndst = 0;
    dn2f_ep_reset(EP(1), 0xe1111);
    CHECK(sim_run(cond_all_up, 20ULL * 1000000000), "board 1 did not come back");
    sim_run(NULL, 100000000ULL);
    CHECK(dn2f_ep_lid(EP(1)) == l1, "LID changed");
    APP(2)->refuse_cls = 0;
    dn2f_ep_resume(EP(2));
    sim_run(NULL, 100000000ULL);
    CHECK(APP(2)->got_total == 0, "%u old packets delivered after the restart",
          APP(2)->got_total);
    /* fresh streams; requests now wait only for the new incarnation's data */
    memset(APP(2)->expect, 0, sizeof(APP(2)->expect));
    memset(g_want, 0, sizeof(g_want));
    APP(1)->stream_id = 2;
    stream_cls(1, 2, 0, false, 300);
    stream_cls(1, 2, 0, true, 300);
    stream_cls(1, 2, 1, true, 300);
    CHECK(sim_run(cond_received, 60ULL * 1000000000), "new streams incomplete: %u",
          APP(2)->got_total);
    CHECK(!any_error(msg, sizeof(msg)), "%s", msg);
    CHECK(APP(2)->got_total == 900 && APP(2)->got_cls[2] == 300 && APP(2)->got_cls[3] == 300,
          "exactly once");
    CHECK(dn2f_ep_pending(EP(1), l2) == 0 || sim_run(cond_idle, 20ULL * 1000000000), "idle");
    return true;
}

/* ================================================================ main */
static const struct tap_case tests[] = {
    { "lanes: WID 0 refused for 25 s, WID 1 flows, then all in order (direct)", t_lanes_direct },
    { "lanes: the same at 5% loss + dup + reorder via the switch", t_lanes_lossy },
    { "lanes: multicast copies in the lane of their DWID", t_lanes_mcast },
    { "request lane: a full RC FIFO refuses RVLs, data for the WID flows (direct)", t_req_lane_direct },
    { "request lane: the same at 5% loss + dup + reorder via the switch", t_req_lane_lossy },
    { "request lane: an RVL is not delivered before the data queued ahead of it", t_read_after_write },
    { "request lane: two boards storm 60 RVLs of 1 MiB at each other, no deadlock", t_storm },
    { "request lane: the storm at 5% loss via the switch", t_storm_lossy },
    { "request lane: control, requests in the data lanes deadlock the storm", t_storm_single_class },
    { "request lane: a restart drops held and refused requests, fresh lanes after", t_req_reset },
};

int main(int argc, char **argv)
{
    sim_model = &storm_model;     /* the storm's nodes; the others keep the test board */
    return fab_test_main(tests, TAP_NCASES(tests), argc, argv);
}
