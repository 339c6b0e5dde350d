/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of libdn2fab (TAP, tests/tap/dn2-tap.h's table runner): the
 * switch core: impostor HELLOs and twins, STATS, a HELLO flood and the
 * per-host quota, the cluster secret, late and replayed joins, spoofed
 * BYE/KEEPALIVE and unauthenticated DATA.
 */
#define _GNU_SOURCE 1
#include "fab-test.h"


/* Defect 5a: the subnet manager trusted any HELLO.  One HELLO with board
 * B's GUID from another socket moved B's port there; A then reset its
 * state toward B twice (the impostor's epoch, then B's again when B
 * re-joined) and B->A stayed dead.  Here an impostor keeps sending HELLOs
 * with B's GUID (raw, from another address) and a twin board with B's GUID
 * runs the whole join, while A and B exchange 3000 packets each way.
 * Without the binding, the twin's ticketed KEEPALIVE takes B's port (and
 * before tickets, the raw HELLO alone did): A drops its queue toward B
 * (peer_reset) and the streams break.  With it the port stays bound, the
 * twin is refused with "GUID in use" and says so, nothing is reset. */
static int g_refused_reason;

static void s_refused(void *o, unsigned reason)
{
    (void)o;
    g_refused_reason = (int)reason;
}

static bool t_hijack_and_twin(void)
{
    char msg[200];
    struct dn2f_ep_ops ops = ep_ops;
    struct dn2f_ep_config tc;
    struct dn2f_portstat ps;
    struct dn2f_addr evil;
    uint16_t lb;
    uint64_t eb;
    unsigned i, k;
    int tw = 5;

    sim_reset(31, 0.02, 0.01, 0.02);
    CHECK(bring_up(DN2F_ROUTE_DIRECT, 2), "link did not come up");
    lb = dn2f_ep_lid(EP(2));
    eb = dn2f_ep_epoch(EP(2));
    stream(1, 2, 3000);
    stream(2, 1, 3000);
    /* the twin: same GUID as board 2, its own socket and epoch */
    tc = ep_cfg(2);
    tc.epoch = 0x7777;
    ops.refused = s_refused;
    g_refused_reason = 0;
    sim.nodes[tw].used = sim.nodes[tw].alive = true;
    sim.nodes[tw].idx = tw;
    mkaddr(&sim.nodes[tw].addr, tw);
    memset(&sim.nodes[tw].app, 0, sizeof(sim.nodes[tw].app));
    sim.nodes[tw].ep = dn2f_ep_new(&tc, &ops, &sim.nodes[tw]);
    CHECK(sim.nodes[tw].ep, "twin");
    /* the impostor: raw HELLOs with B's GUID from a socket of its own */
    mkaddr(&evil, 6);
    sim.nodes[6].used = sim.nodes[6].alive = true;      /* answers go nowhere */
    sim.nodes[6].addr = evil;
    for (k = 0; k < 20; k++) {
        uint8_t buf[128];
        struct dn2f_wbuf w;
        struct dn2f_hello h = { .guid = ep_cfg(2).guid, .lid_hint = lb };
        dn2f_wbuf_init(&w, buf, sizeof(buf));
        dn2f_put_hdr(&w, DN2F_T_HELLO, 0, 0, 0, 0x666 + k, 0);
        dn2f_put_hello(&w, &h);
        dn2f_sw_input(sim.nodes[0].sw, &evil, buf, dn2f_finish(&w));
        sim_run(NULL, 100000000ULL);
    }
    CHECK(sim_run(cond_received, 600ULL * 1000000000), "incomplete: %u %u", APP(1)->got_total,
          APP(2)->got_total);
    CHECK(!any_error(msg, sizeof(msg)), "%s", msg);
    CHECK(APP(1)->got_total == 3000 && APP(2)->got_total == 3000, "exactly once");
    /* B's port is where it was, with its epoch */
    for (i = 0; dn2f_sw_port(sim.nodes[0].sw, i, &ps); i++) {
        if (ps.lid == lb) {
            break;
        }
    }
    CHECK(ps.lid == lb && ps.state == 1 && ps.epoch == eb &&
          dn2f_addr_equal(&ps.addr, &sim.nodes[2].addr), "B's port moved (epoch 0x%llx)",
          (unsigned long long)ps.epoch);
    CHECK(dn2f_ep_stats(EP(1))->drop[DN2F_DROP_PEER_RESET] == 0, "A reset its state toward B");
    CHECK(APP(2)->link_downs == 0 && APP(1)->link_downs == 0, "a link went down");
    /* the twin never came up, and knows why */
    CHECK(dn2f_ep_link(sim.nodes[tw].ep) != DN2F_LINK_UP, "the twin came up");
    CHECK(dn2f_ep_refusal(sim.nodes[tw].ep) == DN2F_BYE_GUID_IN_USE &&
          g_refused_reason == DN2F_BYE_GUID_IN_USE, "twin refusal %u / %d",
          dn2f_ep_refusal(sim.nodes[tw].ep), g_refused_reason);
    fprintf(stderr, "#   twin: %s (%llu refusals)\n",
            dn2f_bye_name(dn2f_ep_refusal(sim.nodes[tw].ep)),
            (unsigned long long)dn2f_ep_stats(sim.nodes[tw].ep)->refusals);
    /* B leaves: its port is released, the twin's next HELLO gets it */
    dn2f_ep_free(EP(2));
    sim.nodes[2].ep = NULL;
    sim.nodes[2].alive = false;
    g_neps = 1;
    sim_run(NULL, 1000000000ULL);
    CHECK(dn2f_ep_link(sim.nodes[tw].ep) == DN2F_LINK_UP, "twin not up after B's BYE");
    CHECK(dn2f_ep_lid(sim.nodes[tw].ep) == lb, "twin LID 0x%x", dn2f_ep_lid(sim.nodes[tw].ep));
    CHECK(dn2f_ep_refusal(sim.nodes[tw].ep) == 0, "refusal not cleared");
    return true;
}


/* ------------------------------------------- a switch core on its own */
/* What the switch sent, for tests that drive dn2f_sw_input() directly. */
static struct {
    uint64_t now;
    unsigned n, n_by_type[DN2F_T_MAX];
    size_t bytes;
    struct dn2f_addr last_to;
    uint8_t last[DN2F_DGRAM_MAX];
    size_t last_len;
    uint8_t assign[256];        /* the last ASSIGN */
    size_t assign_len;
} hs;

static uint64_t h_now(void *o) { (void)o; return hs.now; }

static int h_send(void *o, const struct dn2f_addr *to, const void *buf, size_t len)
{
    const uint8_t *b = buf;
    (void)o;
    hs.n++;
    hs.bytes += len;
    if (len > 5 && b[5] < DN2F_T_MAX) {
        hs.n_by_type[b[5]]++;
    }
    hs.last_to = *to;
    memcpy(hs.last, buf, len);
    hs.last_len = len;
    if (len > 5 && b[5] == DN2F_T_ASSIGN && len <= sizeof(hs.assign)) {
        memcpy(hs.assign, buf, len);
        hs.assign_len = len;
    }
    return 0;
}

static struct dn2f_sw *h_switch(void)
{
    static const struct dn2f_sw_ops ops = { .now_ns = h_now, .send_datagram = h_send };
    struct dn2f_sw_config c;
    dn2f_sw_config_default(&c);
    memset(&hs, 0, sizeof(hs));
    hs.now = 1000000000ULL;
    return dn2f_sw_new(&c, &ops, NULL);
}

static void h_reset_counts(void)
{
    hs.n = 0;
    hs.bytes = 0;
    memset(hs.n_by_type, 0, sizeof(hs.n_by_type));
}

static void h_hello(struct dn2f_sw *sw, const struct dn2f_addr *from, uint64_t guid,
                    uint64_t epoch)
{
    uint8_t buf[128];
    struct dn2f_wbuf w;
    struct dn2f_hello h = { .guid = guid };
    dn2f_wbuf_init(&w, buf, sizeof(buf));
    dn2f_put_hdr(&w, DN2F_T_HELLO, 0, 0, 0, epoch, 0);
    dn2f_put_hello(&w, &h);
    dn2f_sw_input(sw, from, buf, dn2f_finish(&w));
}


/* A full join: HELLO, then the ticketed KEEPALIVE.  The LID, or 0. */
static uint16_t h_join(struct dn2f_sw *sw, const struct dn2f_addr *from, uint64_t guid,
                       uint64_t epoch)
{
    uint8_t buf[128];
    struct dn2f_wbuf w;
    struct dn2f_msg m;
    hs.assign_len = 0;
    h_hello(sw, from, guid, epoch);
    if (!hs.assign_len || dn2f_decode(hs.assign, hs.assign_len, &m) != 0 ||
        m.u.assign.guid != guid) {
        return 0;
    }
    dn2f_wbuf_init(&w, buf, sizeof(buf));
    dn2f_put_hdr(&w, DN2F_T_KEEPALIVE, 0, m.u.assign.lid, 0, epoch, m.h.src_epoch);
    dn2f_put_keepalive(&w, 0xffffffffu, guid, &m.u.assign.ticket);
    dn2f_sw_input(sw, from, buf, dn2f_finish(&w));
    return m.u.assign.lid;
}

static void h_stats_req(struct dn2f_sw *sw, const struct dn2f_addr *from, uint16_t chunk,
                        size_t total)
{
    uint8_t buf[2048];
    struct dn2f_wbuf w;
    dn2f_wbuf_init(&w, buf, sizeof(buf));
    dn2f_put_hdr(&w, DN2F_T_STATS_REQ, 0, 0, 0, 0, 0);
    dn2f_put_stats_req(&w, 0x1234, chunk, total);
    dn2f_sw_input(sw, from, buf, dn2f_finish(&w));
}


/* Defect 5c: STATS_REQ answered anyone, with every board's GUID, epoch and
 * address, and ~7000 times the request's size (a 40-byte request, 35
 * chunks of 8 KiB with 3000 ports).  Now: only this host or a live
 * member's host, only padded requests, one chunk each, rate-limited. */
static bool t_stats_restricted(void)
{
    struct dn2f_sw *sw = h_switch();
    struct dn2f_addr lo, stranger, member, member2;
    struct dn2f_msg m;
    char a[32];
    unsigned i, ports = 600;
    double amp;

    CHECK(sw, "switch");
    dn2f_addr_parse(&lo, "127.0.0.1:4000");
    dn2f_addr_parse(&stranger, "192.0.2.99:4000");
    dn2f_addr_parse(&member, "192.0.2.7:5000");
    dn2f_addr_parse(&member2, "192.0.2.7:6000");
    for (i = 0; i < ports; i++) {
        struct dn2f_addr pa;
        snprintf(a, sizeof(a), "10.0.%u.%u:%u", 1 + i / 200, 1 + i % 200, 7000 + i);
        dn2f_addr_parse(&pa, a);
        CHECK(h_join(sw, &pa, 0x5000 + i, 0xe000 + i), "join %u", i);
    }
    CHECK(h_join(sw, &member, 0x9999, 0x42), "member join");
    CHECK(dn2f_sw_active_ports(sw) == ports + 1, "ports %u", dn2f_sw_active_ports(sw));
    /* an unpadded request, even from this host: nothing */
    h_reset_counts();
    h_stats_req(sw, &lo, 0, DN2F_HDR_LEN + 8);
    CHECK(hs.n == 0, "unpadded STATS_REQ answered");
    /* a stranger: nothing */
    h_stats_req(sw, &stranger, 0, DN2F_STATS_REQ_MIN);
    CHECK(hs.n == 0, "a stranger got the port table");
    /* this host: exactly one chunk per request, at most ~8x the request */
    h_stats_req(sw, &lo, 0, DN2F_STATS_REQ_MIN);
    CHECK(hs.n == 1 && hs.n_by_type[DN2F_T_STATS_RESP] == 1, "answers %u", hs.n);
    CHECK(dn2f_decode(hs.last, hs.last_len, &m) == 0 && m.u.stats.chunk == 0 &&
          m.u.stats.nchunks > 1, "chunk 0 of several");
    amp = (double)hs.last_len / DN2F_STATS_REQ_MIN;
    CHECK(amp < 9, "amplification %.1f", amp);
    fprintf(stderr, "#   %u ports: %u chunks, one per %d-byte request, %zu bytes each "
            "(%.1fx; was %.0fx for one 40-byte request)\n", ports + 1, m.u.stats.nchunks,
            DN2F_STATS_REQ_MIN, hs.last_len, amp,
            (double)m.u.stats.nchunks * (double)hs.last_len / 40);
    /* a member's host (another port of it): answered */
    h_reset_counts();
    h_stats_req(sw, &member2, 1, DN2F_STATS_REQ_MIN);
    CHECK(hs.n == 1, "a member's host was not answered");
    /* a flood of requests: rate-limited */
    h_reset_counts();
    for (i = 0; i < 5000; i++) {
        h_stats_req(sw, &lo, 0, DN2F_STATS_REQ_MIN);
    }
    CHECK(hs.n <= 1000, "%u answers to 5000 requests at once", hs.n);
    dn2f_sw_free(sw);
    return true;
}


/* Defect 7: ~3000 sockets HELLOing with random GUIDs took every LID
 * (pick_lid() then returned 0 for a real board) and the switch spent its
 * time republishing tables.  Here 3000 "sockets" send 30000 HELLOs with
 * random GUIDs, and 400 more run complete joins from one other host, while
 * a real board joins: HELLOs alone create nothing (no port, no LID, no
 * table), complete joins from one host stop at max_ports_per_host, and the
 * real board gets a LID.  Before, the real join failed after 3071 HELLOs. */
static bool t_lid_flood(void)
{
    struct dn2f_sw *sw = h_switch();
    struct dn2f_addr real, a;
    struct dn2f_rng r;
    char s[40];
    unsigned i, routes_before;
    uint16_t lid;

    CHECK(sw, "switch");
    dn2f_rng_seed(&r, 77);
    dn2f_addr_parse(&real, "127.0.0.1:9000");
    for (i = 0; i < 30000; i++) {
        snprintf(s, sizeof(s), "127.0.%u.%u:%u", 1 + (i % 3000) / 250, 1 + (i % 250), 20000 + i % 3000);
        dn2f_addr_parse(&a, s);
        h_hello(sw, &a, dn2f_rng_next(&r) | 1, dn2f_rng_next(&r) | 1);
        hs.now += 1000;                 /* 1 us apart */
        if (i == 15000) {
            lid = h_join(sw, &real, 0xabcdef, 0x1234);
            CHECK(lid && dn2f_sw_active_ports(sw) == 1, "real board: LID 0x%x, %u ports", lid,
                  dn2f_sw_active_ports(sw));
        }
    }
    CHECK(dn2f_sw_active_ports(sw) == 1, "HELLOs created %u ports", dn2f_sw_active_ports(sw));
    /* complete joins (tickets returned) from one (remote) host: capped */
    for (i = 0; i < 400; i++) {
        snprintf(s, sizeof(s), "192.0.2.2:%u", 30000 + i);
        dn2f_addr_parse(&a, s);
        h_join(sw, &a, 0x77000000u + i, 0x99000000u + i);
        hs.now += 10000;
    }
    CHECK(dn2f_sw_active_ports(sw) == 1 + 256, "one host has %u ports",
          dn2f_sw_active_ports(sw) - 1);
    /* the routing table was not republished for each of them */
    h_reset_counts();
    for (i = 0; i < 100; i++) {
        hs.now += 1000000;
        dn2f_sw_tick(sw);
    }
    routes_before = hs.n_by_type[DN2F_T_ROUTES];
    CHECK(routes_before <= 2 * 257 * 4, "ROUTES datagrams %u", routes_before);
    /* and a second real board still joins */
    dn2f_addr_parse(&a, "127.0.0.1:9001");
    CHECK(h_join(sw, &a, 0xabcdf0, 0x5678), "second real board refused");
    fprintf(stderr, "#   30000 random HELLOs: 0 ports; 400 full joins from one host: 256 "
            "ports; real boards joined\n");
    dn2f_sw_free(sw);
    return true;
}

static const char SECRET[] = "correct horse battery staple 42";


/* A switch with the secret. */
static void add_switch_secret(int mode)
{
    g_sw_secret = SECRET;
    add_switch(mode);
    g_sw_secret = NULL;
}


/* Boards 1..neps with the secret, the members; nothing wanted yet. */
static bool add_eps_secret(int neps)
{
    struct dn2f_ep_config c;
    int n;
    g_neps = 0;
    for (n = 1; n <= neps; n++) {
        c = ep_cfg(n);
        c.secret = (const uint8_t *)SECRET;
        c.secret_len = strlen(SECRET);
        CHECK(add_ep(n, &c) == n, "ep %d", n);
        g_eps[g_neps++] = n;
    }
    memset(g_want, 0, sizeof(g_want));
    return true;
}


/* bring_up() with the secret. */
static bool bring_up_secret(int mode, int neps)
{
    add_switch_secret(mode);
    return add_eps_secret(neps) && sim_run(cond_all_up, 20ULL * 1000000000);
}

static bool cond_up_1_2(void)
{
    return APP(1)->link_up && APP(2)->link_up;
}


/* With a cluster secret: members exchange data (direct and through the
 * switch's multicast); a board with another secret, or none, never comes
 * up and is told why; forged DATA/ACK datagrams (right LIDs, epochs and
 * sessions, no or a wrong MAC) are dropped and counted; a HELLO recorded
 * from an old incarnation, replayed, takes nothing. */
static bool t_secret(void)
{
    char msg[200];
    struct dn2f_ep_config c;
    struct dn2f_ep_ops ops = ep_ops;
    struct dn2f_portstat ps;
    uint8_t buf[256], pkt[64];
    struct dn2f_wbuf w;
    uint16_t l1, l2;
    uint64_t e_old, e_new;
    unsigned i, k;
    int n;

    sim_reset(51, 0.05, 0.02, 0.05);
    add_switch_secret(DN2F_ROUTE_DIRECT);
    g_rec_node = 2;             /* record board 2's first HELLO */
    g_rec_len = 0;
    CHECK(add_eps_secret(3), "members not added");
    CHECK(sim_run(cond_all_up, 20ULL * 1000000000), "members did not come up");
    l1 = dn2f_ep_lid(EP(1));
    l2 = dn2f_ep_lid(EP(2));
    stream(1, 2, 2000);
    stream(2, 1, 2000);
    g_group = dn2_clid_to_lid(0xc09);
    CHECK(dn2f_ep_mcast_join(EP(2), g_group) == 0 && dn2f_ep_mcast_join(EP(3), g_group) == 0,
          "join");
    CHECK(sim_run(cond_group2, 30ULL * 1000000000), "membership");
    APP(3)->dst[0] = g_group;
    APP(3)->to_send[0] = 500;
    APP(3)->ndst = 1;
    g_want[2] += 500;
    g_want[3] += 500;
    /* forged DATA and ACK "from board 1" (its address): no MAC, wrong MAC */
    for (k = 0; k < 200; k++) {
        dn2f_wbuf_init(&w, buf, sizeof(buf));
        dn2f_put_hdr(&w, k & 1 ? DN2F_T_ACK : DN2F_T_DATA, 0, l1, l2, dn2f_ep_epoch(EP(1)),
                     dn2f_ep_epoch(EP(2)));
        dn2f_hdr_set_sessions(&w, 0x10000 + k, 0);
        if (k & 1) {
            dn2f_put_ack(&w, 0, false, 0, 64, 0, NULL);
        } else {
            fill_pkt(pkt, 64, l2, l1, 99, k);
            dn2f_put_rec(&w, DN2F_REC_UNICAST, 0, k, 0, 0, NULL, NULL, NULL, pkt, 64);
        }
        if (k & 2) {
            struct dn2f_hmac_key bad;
            dn2f_hmac_setkey(&bad, "not the tokens", 14);
            dn2f_ep_input(EP(2), &sim.nodes[1].addr, buf, dn2f_finish_mac(&w, &bad));
        } else {
            dn2f_ep_input(EP(2), &sim.nodes[1].addr, buf, dn2f_finish(&w));
        }
    }
    CHECK(dn2f_ep_stats(EP(2))->drop[DN2F_DROP_AUTH] >= 200, "forged datagrams: %llu auth drops",
          (unsigned long long)dn2f_ep_stats(EP(2))->drop[DN2F_DROP_AUTH]);
    CHECK(sim_run(cond_received, 600ULL * 1000000000), "incomplete with a secret: %u %u %u",
          APP(1)->got_total, APP(2)->got_total, APP(3)->got_total);
    CHECK(!any_error(msg, sizeof(msg)), "%s", msg);
    CHECK(dn2f_ep_stats(EP(2))->session_resets == 0, "a forged datagram reset a pair");
    /* a board with another secret, and one without: never up, told why */
    ops.refused = s_refused;
    for (n = 4; n <= 5; n++) {
        struct node *nd = &sim.nodes[n];
        c = ep_cfg(n);
        if (n == 4) {
            c.secret = (const uint8_t *)"another secret, same length....";
            c.secret_len = strlen((const char *)c.secret);
        }
        nd->used = nd->alive = true;
        nd->idx = n;
        mkaddr(&nd->addr, n);
        memset(&nd->app, 0, sizeof(nd->app));
        nd->ep = dn2f_ep_new(&c, &ops, nd);
        CHECK(nd->ep, "ep %d", n);
    }
    sim_run(NULL, 2ULL * 1000000000);
    for (n = 4; n <= 5; n++) {
        CHECK(dn2f_ep_link(sim.nodes[n].ep) != DN2F_LINK_UP && !sim.nodes[n].app.link_ups,
              "board %d joined without the secret", n);
        CHECK(dn2f_ep_refusal(sim.nodes[n].ep) == DN2F_BYE_AUTH, "board %d: refusal %u", n,
              dn2f_ep_refusal(sim.nodes[n].ep));
        CHECK(dn2f_ep_stats(sim.nodes[n].ep)->drop[DN2F_DROP_AUTH] > 0, "board %d: no auth drops",
              n);
    }
    CHECK(dn2f_sw_active_ports(sim.nodes[0].sw) == 3, "ports %u",
          dn2f_sw_active_ports(sim.nodes[0].sw));
    /* board 2 restarts its board (new epoch); its old HELLO, replayed from
     * its address and from another, takes nothing */
    e_old = dn2f_ep_epoch(EP(2));
    dn2f_ep_reset(EP(2), 0x2222);
    e_new = 0x2222;
    CHECK(sim_run(cond_up_1_2, 20ULL * 1000000000), "board 2 did not come back");
    CHECK(g_rec_len, "no HELLO recorded");
    {
        struct dn2f_msg m;
        CHECK(dn2f_decode(g_rec_buf, g_rec_len, &m) == 0 && m.h.src_epoch == e_old &&
              (m.h.flags & DN2F_F_MAC), "recorded HELLO");
        for (k = 0; k < 10; k++) {
            dn2f_sw_input(sim.nodes[0].sw, &sim.nodes[2].addr, g_rec_buf, g_rec_len);
            dn2f_sw_input(sim.nodes[0].sw, &sim.nodes[5].addr, g_rec_buf, g_rec_len);
            sim_run(NULL, 100000000ULL);
        }
    }
    g_rec_node = -1;
    for (i = 0; dn2f_sw_port(sim.nodes[0].sw, i, &ps); i++) {
        if (ps.lid == dn2f_ep_lid(EP(2))) {
            break;
        }
    }
    CHECK(ps.epoch == e_new && ps.state == 1 && dn2f_addr_equal(&ps.addr, &sim.nodes[2].addr),
          "replayed HELLO moved the port (epoch 0x%llx)", (unsigned long long)ps.epoch);
    CHECK(APP(2)->link_up && APP(1)->link_up, "a link went down on the replay");
    return true;
}


/* ===================================================== joins and strangers */
/* The switch's entry for a LID: its epoch, or 0. */
static uint64_t sw_port_epoch(uint16_t lid)
{
    struct dn2f_portstat ps;
    unsigned i;
    for (i = 0; dn2f_sw_port(sim.nodes[0].sw, i, &ps); i++) {
        if (ps.lid == lid && ps.state == 1) {
            return ps.epoch;
        }
    }
    return 0;
}


/* Ticket times of the ASSIGNs the switch sent to board 1 (distinct). */
static uint32_t g_asg_times[16];

static unsigned g_asg_n, g_asg_total;

static void hook_assign_times(int from, int to, const uint8_t *buf, size_t len, uint64_t *extra)
{
    struct dn2f_msg m;
    unsigned i;
    (void)extra;
    if (from != sim.sw_node || to != 1 || len < 6 || buf[5] != DN2F_T_ASSIGN ||
        dn2f_decode(buf, len, &m) != 0) {
        return;
    }
    g_asg_total++;
    for (i = 0; i < g_asg_n; i++) {
        if (g_asg_times[i] == m.u.assign.ticket.time) {
            return;
        }
    }
    if (g_asg_n < 16) {
        g_asg_times[g_asg_n++] = m.u.assign.ticket.time;
    }
}


/* A switch that answers late (0.4 s each way: backlogged, or waiting for a
 * CPU) answers several of a board's 100 ms HELLOs, across one of its
 * second boundaries, and the board gets ASSIGNs of one join after the join
 * is made.  Every ASSIGN of a join must carry the same token, and the board
 * keeps the one of the join's first: before, the token came from the
 * ticket (which holds the switch's second), the board took the newest and
 * the switch kept the first: the links were up and every DATA/ACK failed
 * authentication both ways, for good. */
static bool t_join_late_assigns(void)
{
    char msg[200];
    bool ok;

    sim_reset(71, 0, 0, 0);
    g_send_hook = hook_assign_times;
    g_asg_n = g_asg_total = 0;
    add_switch_secret(DN2F_ROUTE_DIRECT);
    sim.sw_extra = 400000000ULL;
    /* the boards start 0.3 s into the switch's life: their HELLOs reach it
     * from 0.7 s on, their answers carry ticket times 0 and 1 */
    sim_run(NULL, 300000000ULL);
    CHECK(add_eps_secret(2), "members not added");
    CHECK(sim_run(cond_all_up, 20ULL * 1000000000), "members did not come up");
    sim_run(NULL, 2000000000ULL);           /* the late ASSIGNs arrive */
    CHECK(g_asg_n >= 2, "the ASSIGNs to board 1 carry %u ticket time(s) (%u ASSIGNs): the "
          "condition was not reproduced", g_asg_n, g_asg_total);
    stream(1, 2, 500);
    stream(2, 1, 500);
    ok = sim_run(cond_received, 30ULL * 1000000000);
    CHECK(ok, "up but cut off: got %u/500 and %u/500; authentication drops %llu and %llu",
          APP(2)->got_total, APP(1)->got_total,
          (unsigned long long)dn2f_ep_stats(EP(1))->drop[DN2F_DROP_AUTH],
          (unsigned long long)dn2f_ep_stats(EP(2))->drop[DN2F_DROP_AUTH]);
    CHECK(!any_error(msg, sizeof(msg)), "%s", msg);
    CHECK(dn2f_ep_link(EP(1)) == DN2F_LINK_UP && dn2f_ep_link(EP(2)) == DN2F_LINK_UP,
          "links down at the end");
    fprintf(stderr, "#   %u ASSIGNs to board 1 with %u ticket times; 2x500 packets delivered "
            "(link downs %u %u)\n", g_asg_total, g_asg_n, APP(1)->link_downs,
            APP(2)->link_downs);
    return true;
}


/* A switch that answers HELLOs late and out of order: every ASSIGN is
 * held 0..1.5 s. */
static struct dn2f_rng g_hold_rng;

static void hook_hold_assigns(int from, int to, const uint8_t *buf, size_t len, uint64_t *extra)
{
    (void)to;
    if (from == sim.sw_node && len > 5 && buf[5] == DN2F_T_ASSIGN) {
        *extra = (dn2f_rng_next(&g_hold_rng) % 1500) * 1000000ULL;
    }
}


/* Three boards join at once through a late switch (ASSIGNs held): the
 * switch offers all of them the lowest free LID, the first to return its
 * ticket gets it, the others are refused and ask again, and get others;
 * the late ASSIGNs of their first attempt (that first LID) arrive after
 * they are up.  No board may take them: before, a board that was up took
 * a late ASSIGN of another LID as a new one, went down, joined with a LID
 * that was someone else's, was refused, and so on. */
static bool t_join_contended(void)
{
    char msg[200];
    uint16_t l1, l2, l3;

    sim_reset(75, 0, 0, 0);
    add_switch_secret(DN2F_ROUTE_DIRECT);
    dn2f_rng_seed(&g_hold_rng, 75);
    g_send_hook = hook_hold_assigns;
    CHECK(add_eps_secret(3), "members not added");
    CHECK(sim_run(cond_all_up, 30ULL * 1000000000), "members did not come up");
    sim_run(NULL, 3000000000ULL);           /* the late ASSIGNs arrive */
    l1 = dn2f_ep_lid(EP(1));
    l2 = dn2f_ep_lid(EP(2));
    l3 = dn2f_ep_lid(EP(3));
    CHECK(l1 != l2 && l2 != l3 && l1 != l3, "LIDs 0x%x 0x%x 0x%x", l1, l2, l3);
    CHECK(APP(1)->link_downs + APP(2)->link_downs + APP(3)->link_downs == 0,
          "late ASSIGNs took links down: %u %u %u times", APP(1)->link_downs,
          APP(2)->link_downs, APP(3)->link_downs);
    stream(1, 2, 300);
    stream(2, 3, 300);
    stream(3, 1, 300);
    CHECK(sim_run(cond_received, 30ULL * 1000000000), "incomplete: %u %u %u",
          APP(1)->got_total, APP(2)->got_total, APP(3)->got_total);
    CHECK(!any_error(msg, sizeof(msg)), "%s", msg);
    CHECK(APP(1)->link_downs + APP(2)->link_downs + APP(3)->link_downs == 0,
          "links went down later");
    fprintf(stderr, "#   LIDs 0x%x 0x%x 0x%x; 3x300 packets; no link down\n", l1, l2, l3);
    return true;
}


/* Board 2's ticketed KEEPALIVE (its join) and its first DATA to board 1. */
static uint8_t g_rka[256], g_rdata[DN2F_DGRAM_MAX];

static size_t g_rka_len, g_rdata_len;

static uint64_t g_rka_at;

static void hook_rec_join(int from, int to, const uint8_t *buf, size_t len, uint64_t *extra)
{
    struct dn2f_msg m;
    (void)extra;
    if (from != 2 || len < 6) {
        return;
    }
    if (buf[5] == DN2F_T_KEEPALIVE && !g_rka_len && len <= sizeof(g_rka) &&
        dn2f_decode(buf, len, &m) == 0 && m.u.keepalive.guid) {
        memcpy(g_rka, buf, len);
        g_rka_len = len;
        g_rka_at = sim.now;
    }
    if (buf[5] == DN2F_T_DATA && to == 1 && !g_rdata_len && len <= sizeof(g_rdata)) {
        memcpy(g_rdata, buf, len);
        g_rdata_len = len;
    }
}


/* Two members with the secret, board 2's join and first DATA recorded. */
static bool bring_up_rec_join(uint64_t seed)
{
    sim_reset(seed, 0, 0, 0);
    g_send_hook = hook_rec_join;
    g_rka_len = g_rdata_len = 0;
    return bring_up_secret(DN2F_ROUTE_DIRECT, 2);
}


/* A stranger recorded board 2's join (its ticketed KEEPALIVE) and its first
 * DATA datagram; board 2 restarts (a new incarnation) and joins again.  The
 * replayed join, within the ticket's 10 s, must not move the port back to
 * the old epoch (before: the switch took it as a restart and published the
 * old epoch and token, board 1 reset its session toward board 2, and the
 * replayed DATA, valid under the old token, was delivered again), and a
 * board refuses a table that moves a peer back to an epoch it had. */
static bool t_replayed_join(void)
{
    char msg[200];
    uint16_t l2;
    uint64_t e_old;
    unsigned k;

    CHECK(bring_up_rec_join(72), "members did not come up");
    l2 = dn2f_ep_lid(EP(2));
    stream(2, 1, 50);
    CHECK(sim_run(cond_received, 30ULL * 1000000000), "first stream");
    CHECK(g_rka_len && g_rdata_len, "nothing recorded (%zu %zu)", g_rka_len, g_rdata_len);
    e_old = dn2f_ep_epoch(EP(2));
    /* board 2 restarts: a new epoch, a new stream from #0 */
    APP(2)->ndst = 0;
    dn2f_ep_reset(EP(2), 0x2222);
    APP(2)->stream_id = 2;
    memset(APP(1)->expect, 0, sizeof(APP(1)->expect));
    APP(1)->got_total = 0;
    memset(g_want, 0, sizeof(g_want));
    stream(2, 1, 50);
    CHECK(sim_run(cond_received, 30ULL * 1000000000), "stream of the new incarnation");
    CHECK(sw_port_epoch(l2) == 0x2222, "port epoch 0x%llx after the restart",
          (unsigned long long)sw_port_epoch(l2));
    /* the replays, well within the old ticket's life */
    CHECK(sim.now - g_rka_at < 8ULL * 1000000000, "ticket too old for the test");
    for (k = 0; k < 5; k++) {
        dn2f_sw_input(sim.nodes[0].sw, &sim.nodes[2].addr, g_rka, g_rka_len);
        sim_run(NULL, 50000000ULL);
        dn2f_ep_input(EP(1), &sim.nodes[2].addr, g_rdata, g_rdata_len);
        sim_run(NULL, 50000000ULL);
    }
    CHECK(!any_error(msg, sizeof(msg)), "old data delivered again (port epoch 0x%llx, old "
          "0x%llx): %s", (unsigned long long)sw_port_epoch(l2), (unsigned long long)e_old, msg);
    CHECK(APP(1)->got_total == 50, "board 1 got %u packets of the new stream, not 50",
          APP(1)->got_total);
    CHECK(sw_port_epoch(l2) == 0x2222, "the replayed join moved the port back to epoch 0x%llx "
          "(old 0x%llx)", (unsigned long long)sw_port_epoch(l2), (unsigned long long)e_old);
    /* and the pair still works: 50 more of the new stream */
    APP(2)->to_send[0] += 50;
    g_want[1] += 50;
    CHECK(sim_run(cond_received, 30ULL * 1000000000), "stream after the replays: %u",
          APP(1)->got_total);
    CHECK(!any_error(msg, sizeof(msg)), "%s", msg);
    fprintf(stderr, "#   replayed join x5 and first DATA x5: port stays at the new epoch, "
            "nothing old delivered (board 1: stale epoch %llu, auth %llu, stale routes %llu)\n",
            (unsigned long long)dn2f_ep_stats(EP(1))->drop[DN2F_DROP_STALE_EPOCH],
            (unsigned long long)dn2f_ep_stats(EP(1))->drop[DN2F_DROP_AUTH],
            (unsigned long long)dn2f_ep_stats(EP(1))->stale_routes);
    return true;
}


/* Board 2 stops (its QEMU is stopped: no BYE) and its port times out; a
 * stranger replays its join (the ticketed KEEPALIVE), within the ticket's
 * 10 s: the port must stay gone (before, it was live again and listed to
 * the peers, a board that was not there).  When board 2 runs again it
 * joins with a new ticket and data flows. */
static bool t_replayed_join_gone(void)
{
    char msg[200];
    uint16_t l2;
    unsigned k;

    CHECK(bring_up_rec_join(76), "members did not come up");
    l2 = dn2f_ep_lid(EP(2));
    CHECK(g_rka_len, "no join recorded");
    sim.nodes[2].alive = false;
    sim_run(NULL, 3500000000ULL);
    CHECK(sw_port_epoch(l2) == 0, "board 2's port did not time out");
    CHECK(sim.now - g_rka_at < 8ULL * 1000000000, "ticket too old for the test");
    for (k = 0; k < 5; k++) {
        dn2f_sw_input(sim.nodes[0].sw, &sim.nodes[2].addr, g_rka, g_rka_len);
        sim_run(NULL, 50000000ULL);
    }
    CHECK(sw_port_epoch(l2) == 0, "a replayed join brought back the port of a board that is "
          "not there (epoch 0x%llx)", (unsigned long long)sw_port_epoch(l2));
    sim.nodes[2].alive = true;
    stream(1, 2, 100);
    stream(2, 1, 100);
    CHECK(sim_run(cond_received, 30ULL * 1000000000), "board 2 back: got %u and %u",
          APP(2)->got_total, APP(1)->got_total);
    CHECK(!any_error(msg, sizeof(msg)), "%s", msg);
    CHECK(sw_port_epoch(l2) == dn2f_ep_epoch(EP(2)), "board 2's port after it came back");
    return true;
}


/* A BYE or KEEPALIVE "from the switch" (its address), made by a stranger. */
static void spoof_ctrl(int to, unsigned type, uint64_t src_ep, uint64_t dst_ep, uint32_t a)
{
    uint8_t buf[128];
    struct dn2f_wbuf w;
    dn2f_wbuf_init(&w, buf, sizeof(buf));
    dn2f_put_hdr(&w, type, 0, 0, dn2f_ep_lid(EP(to)), src_ep, dst_ep);
    if (type == DN2F_T_KEEPALIVE) {
        dn2f_put_keepalive(&w, a, 0, NULL);
    } else {
        dn2f_put_u32pair(&w, a, 0);
    }
    dn2f_ep_input(EP(to), &sim.nodes[0].addr, buf, dn2f_finish(&w));
}


/* DATA from a LID the switch does not know, "from" node `as`'s address,
 * with random epochs and (secret) a MAC flag but a wrong MAC. */
static void spoof_data_to_switch(int as, struct dn2f_rng *r, bool mac)
{
    uint8_t buf[256], pkt[64];
    struct dn2f_wbuf w;
    uint16_t dst = dn2f_ep_lid(EP(as == 1 ? 2 : 1)), src = dn2_clid_to_lid(0x3a5);
    dn2f_wbuf_init(&w, buf, sizeof(buf));
    dn2f_put_hdr(&w, DN2F_T_DATA, 0, src, dst, dn2f_rng_next(r) | 1, dn2f_rng_next(r) | 1);
    dn2f_hdr_set_sessions(&w, 7, 0);
    fill_pkt(pkt, 64, dst, src, 9, 0);
    dn2f_put_rec(&w, DN2F_REC_UNICAST, 0, 0, 0, 0, NULL, NULL, NULL, pkt, 64);
    if (mac) {
        struct dn2f_hmac_key bad;
        dn2f_hmac_setkey(&bad, "not the tokens", 14);
        dn2f_sw_input(sim.nodes[0].sw, &sim.nodes[as].addr, buf, dn2f_finish_mac(&w, &bad));
    } else {
        dn2f_sw_input(sim.nodes[0].sw, &sim.nodes[as].addr, buf, dn2f_finish(&w));
    }
}

static unsigned g_sw_byes;

static void hook_count_byes(int from, int to, const uint8_t *buf, size_t len, uint64_t *extra)
{
    (void)to;
    (void)extra;
    if (from == sim.sw_node && len > 5 && buf[5] == DN2F_T_BYE) {
        g_sw_byes++;
    }
}


/* Two boards (with or without the secret), the switch's BYEs counted,
 * n packets each way under way. */
static bool bring_up_count_byes(uint64_t seed, bool secret, uint32_t n)
{
    sim_reset(seed, 0, 0, 0);
    g_send_hook = hook_count_byes;
    if (!(secret ? bring_up_secret(DN2F_ROUTE_DIRECT, 2) : bring_up(DN2F_ROUTE_DIRECT, 2))) {
        return false;
    }
    stream(1, 2, n);
    stream(2, 1, n);
    return true;
}


/* A stranger who can spoof source addresses, without the secret: BYEs and
 * KEEPALIVEs "from the switch" with epochs it cannot know (its own guess,
 * an old switch's), BYE "unknown" even with the right epochs (it reads
 * them on the path), and DATA from an unknown LID "from" a board to the
 * switch, which answers with BYE "unknown".  No board's link may go down
 * (before: every BYE "unknown" and every KEEPALIVE of another switch epoch
 * took it down, 1,500-2,400 flaps in 2 s on real boards). */
static bool t_spoofed_bye(void)
{
    char msg[200];
    struct dn2f_rng r;
    uint64_t swe;
    unsigned k;
    int b;

    CHECK(bring_up_count_byes(73, false, 3000), "link did not come up");
    CHECK(sim_run(cond_quarter, 60ULL * 1000000000), "first part");
    dn2f_rng_seed(&r, 99);
    swe = dn2f_sw_epoch(sim.nodes[0].sw);
    g_sw_byes = 0;
    for (k = 0; k < 100; k++) {
        for (b = 1; b <= 2; b++) {
            uint64_t me = dn2f_ep_epoch(EP(b));
            spoof_ctrl(b, DN2F_T_BYE, dn2f_rng_next(&r), dn2f_rng_next(&r), DN2F_BYE_UNKNOWN);
            spoof_ctrl(b, DN2F_T_BYE, swe, dn2f_rng_next(&r), DN2F_BYE_UNKNOWN);
            spoof_ctrl(b, DN2F_T_BYE, dn2f_rng_next(&r), me, DN2F_BYE_SHUTDOWN);
            spoof_ctrl(b, DN2F_T_KEEPALIVE, dn2f_rng_next(&r), me, 1);
            spoof_ctrl(b, DN2F_T_KEEPALIVE, swe, dn2f_rng_next(&r), 1);
            spoof_ctrl(b, DN2F_T_BYE, swe, me, DN2F_BYE_UNKNOWN);   /* on the path */
            spoof_data_to_switch(b, &r, false);
        }
        sim_run(NULL, 5000000ULL);
    }
    CHECK(g_sw_byes > 0, "the switch did not answer the forged DATA (no BYE to test with)");
    CHECK(APP(1)->link_downs == 0 && APP(2)->link_downs == 0,
          "spoofed BYE/KEEPALIVE took links down: %u and %u times", APP(1)->link_downs,
          APP(2)->link_downs);
    CHECK(sim_run(cond_received, 600ULL * 1000000000), "incomplete %u %u", APP(2)->got_total,
          APP(1)->got_total);
    CHECK(!any_error(msg, sizeof(msg)), "%s", msg);
    CHECK(APP(1)->link_downs == 0 && APP(2)->link_downs == 0, "links went down later");
    fprintf(stderr, "#   1400 spoofed BYE/KEEPALIVE + 200 forged DATA (%u BYEs from the "
            "switch): no link down; %llu BYE probes at board 1\n", g_sw_byes,
            (unsigned long long)dn2f_ep_stats(EP(1))->bye_probes);
    return true;
}


/* With the secret, the switch does not check DATA/ACK MACs (the boards
 * do): it must not answer a DATA from an unknown LID with a signed BYE,
 * which the board would have to believe (before: a stranger sending such
 * DATA "from" a board made the switch sign BYEs that took it down). */
static bool t_spoofed_data_secret(void)
{
    char msg[200];
    struct dn2f_rng r;
    unsigned k;

    CHECK(bring_up_count_byes(74, true, 2000), "members did not come up");
    dn2f_rng_seed(&r, 98);
    g_sw_byes = 0;
    for (k = 0; k < 1000; k++) {
        spoof_data_to_switch(1 + (int)(k & 1), &r, true);
        if (k % 20 == 19) {
            sim_run(NULL, 2000000ULL);
        }
    }
    sim_run(NULL, 100000000ULL);
    CHECK(g_sw_byes == 0, "the switch signed %u BYEs for unauthenticated DATA", g_sw_byes);
    CHECK(APP(1)->link_downs == 0 && APP(2)->link_downs == 0, "links went down: %u and %u",
          APP(1)->link_downs, APP(2)->link_downs);
    CHECK(sim_run(cond_received, 600ULL * 1000000000), "incomplete %u %u", APP(2)->got_total,
          APP(1)->got_total);
    CHECK(!any_error(msg, sizeof(msg)), "%s", msg);
    return true;
}


/* One local process could take every LID: the per-host quota compared
 * addresses exactly, and a process can bind any of 127.0.0.0/8.  All of
 * loopback (127/8, ::1, ::ffff:127.x) is one host now: complete joins from
 * 400 loopback aliases stop at the quota; other hosts still join. */
static bool t_loopback_quota(void)
{
    struct dn2f_sw *sw = h_switch();
    struct dn2f_addr a;
    char s[64];
    unsigned i, got = 0;

    CHECK(sw, "switch");
    for (i = 0; i < 400; i++) {
        if (i % 50 == 0) {
            snprintf(s, sizeof(s), "[::1]:%u", 20000 + i);
        } else if (i % 50 == 1) {
            snprintf(s, sizeof(s), "[::ffff:127.9.%u.%u]:%u", i / 250, 1 + i % 250, 20000 + i);
        } else {
            snprintf(s, sizeof(s), "127.%u.%u.%u:%u", 1 + i % 200, i / 200, 1 + i % 250,
                     20000 + i);
        }
        CHECK(dn2f_addr_parse(&a, s) == 0, "parse %s", s);
        if (h_join(sw, &a, 0x66000000u + i, 0x88000000u + i)) {
            got++;
        }
        hs.now += 10000;
    }
    CHECK(dn2f_sw_active_ports(sw) == 256, "400 joins from loopback aliases: %u ports (quota "
          "256)", dn2f_sw_active_ports(sw));
    dn2f_addr_parse(&a, "192.0.2.5:7000");
    CHECK(h_join(sw, &a, 0x123457, 0x99), "another host refused");
    dn2f_addr_parse(&a, "192.0.2.6:7000");
    CHECK(h_join(sw, &a, 0x123458, 0x9a), "a third host refused");
    CHECK(dn2f_sw_active_ports(sw) == 258, "ports %u", dn2f_sw_active_ports(sw));
    fprintf(stderr, "#   400 joins from 127.x / ::1 / ::ffff:127.x: %u ports; other hosts "
            "join\n", dn2f_sw_active_ports(sw) - 2);
    dn2f_sw_free(sw);
    return true;
}

/* ================================================================ main */
static const struct tap_case tests[] = {
    { "switch: an impostor HELLO and a same-GUID twin cannot take a live port", t_hijack_and_twin },
    { "switch: STATS only to this host or members, padded, one chunk, rate-limited", t_stats_restricted },
    { "switch: a HELLO flood takes no LID; one host is capped; members join", t_lid_flood },
    { "secret: members only; wrong or no secret refused; forged DATA/ACK; replay", t_secret },
    { "join: a late switch's ASSIGNs across a second boundary leave no board cut off", t_join_late_assigns },
    { "join: three boards join at once through a late switch: late ASSIGNs of a refused "
      "attempt move no board", t_join_contended },
    { "join: a replayed join and DATA of an earlier incarnation change nothing", t_replayed_join },
    { "join: a replayed join does not bring back the port of a board that is gone", t_replayed_join_gone },
    { "stranger: spoofed BYE/KEEPALIVE with wrong epochs take no link down", t_spoofed_bye },
    { "stranger: with a secret, unauthenticated DATA gets no signed BYE", t_spoofed_data_secret },
    { "switch: all of loopback is one host for the quota", t_loopback_quota },
};

int main(int argc, char **argv)
{
    return fab_test_main(tests, TAP_NCASES(tests), argc, argv);
}
