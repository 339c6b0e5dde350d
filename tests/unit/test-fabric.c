/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of libdn2fab (TAP): the wire format, and endpoints + the switch
 * core on an in-memory, deterministic, simulated network with seeded
 * drop / duplicate / reorder / delay (fab-sim.c).
 */
#define _GNU_SOURCE 1
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>

#include <poll.h>
#include <unistd.h>

#include "dn2fab.h"
#include "dn2fab-batch.h"
#include "dn2fab-hmac.h"
#include "dn2fab-sw.h"
#include "fab-pkt.h"
#include "fab-sim.h"
#include "../tap/dn2-tap.h"

/* ================================================================ TAP */
/* CHECK(cond, fmt, ...): the case fails here with that reason (the table
 * runner prints it after the case's name). */
#undef CHECK
#define CHECK(cond, ...) TAP_REQUIRE(cond, __VA_ARGS__)

/* ============================================================ wire tests */
static uint8_t g_buf[DN2F_DGRAM_MAX + 64];

static size_t build_sample(int kind, uint8_t *buf)
{
    struct dn2f_wbuf w;
    uint8_t pkt[600];
    dn2f_wbuf_init(&w, buf, DN2F_DGRAM_MAX);
    switch (kind) {
    case 0: {
        struct dn2f_hello h = { .guid = 0x1122334455667788ULL, .lid_hint = 0x1005 };
        dn2f_put_hdr(&w, DN2F_T_HELLO, 0, 0, 0, 0xabcdef, 0);
        dn2f_put_hello(&w, &h);
        break;
    }
    case 1: {
        struct dn2f_assign a = { .guid = 9, .lid = 0x2003, .link_state = 3,
                                 .route_mode = DN2F_ROUTE_SWITCH };
        dn2f_put_hdr(&w, DN2F_T_ASSIGN, 0, 0, 0x2003, 5, 6);
        dn2f_put_assign(&w, &a);
        break;
    }
    case 2: {
        struct dn2f_route r;
        uint16_t lids[3] = { 1, 2, 0x3001 };
        memset(&r, 0, sizeof(r));
        dn2f_put_hdr(&w, DN2F_T_ROUTES, 0, 0, 1, 5, 6);
        dn2f_put_routes_hdr(&w, 42, 0, 1, 2, 2);
        r.lid = 1;
        r.flags = DN2F_RT_DIRECT;
        dn2f_addr_parse(&r.addr, "127.0.0.1:4000");
        r.epoch = 77;
        dn2f_put_route(&w, &r);
        r.lid = 0x3001;
        dn2f_addr_parse(&r.addr, "[::1]:4001");
        dn2f_put_route(&w, &r);
        dn2f_put_group(&w, 0xc005, 3, lids);
        dn2f_put_group(&w, 0xf0fe, 0, NULL);
        break;
    }
    case 3: {
        uint8_t bits[8] = { 0x05, 0, 0, 0x80 };
        uint16_t ml[2] = { 2, 3 };
        uint32_t ms[2] = { 10, 20 };
        uint64_t me[2] = { 100, 200 };
        (void)ml; (void)ms; (void)me;
        dn2f_put_hdr(&w, DN2F_T_DATA, DN2F_F_ACK, 1, 2, 11, 22);
        dn2f_hdr_set_sessions(&w, 0x51, 0x52);
        dn2f_data_set_ts(&w, 0xc0ffee01u);
        dn2f_put_ack_echo(&w, 0, false, 100, 612, 0xbeef0002u, 32, bits);
        fill_pkt(pkt, 37, 2, 1, 0, 0);
        dn2f_put_rec(&w, DN2F_REC_UNICAST, 0, 100, 0, 0, NULL, NULL, NULL, pkt, 37);
        fill_pkt(pkt, 600, 0xc005, 1, 0, 1);
        dn2f_put_rec(&w, DN2F_REC_MCAST_COPY, DN2F_RF_RETX, 101, 0xc005, 0, NULL, NULL, NULL,
                     pkt, 600);
        break;
    }
    case 4: {
        uint16_t ml[2] = { 2, 3 };
        uint32_t ms[2] = { 10, 20 };
        uint64_t me[2] = { 100, 200 };
        dn2f_put_hdr(&w, DN2F_T_DATA, 0, 1, 0xc005, 11, 0);
        fill_pkt(pkt, 64, 0xc005, 1, 0, 0);
        dn2f_put_rec(&w, DN2F_REC_MCAST_ORIGIN, 0, 0, 0xc005, 2, ml, ms, me, pkt, 64);
        break;
    }
    case 5:
        dn2f_put_hdr(&w, DN2F_T_ACK, DN2F_F_ACKREQ, 1, 2, 3, 4);
        dn2f_hdr_set_sessions(&w, 7, 0);
        dn2f_put_ack(&w, 1, false, 5, 69, 0, NULL);
        break;
    case 6:
        dn2f_put_hdr(&w, DN2F_T_KEEPALIVE, 0, 1, 0, 3, 4);
        dn2f_put_keepalive(&w, 12, 0, NULL);
        break;
    case 7:
        dn2f_put_hdr(&w, DN2F_T_BYE, 0, 1, 0, 3, 4);
        dn2f_put_u32pair(&w, DN2F_BYE_UNKNOWN, 0);
        break;
    case 8:
        dn2f_put_hdr(&w, DN2F_T_STATS_REQ, 0, 0, 0, 0, 0);
        dn2f_put_stats_req(&w, 0xdead, 3, DN2F_STATS_REQ_MIN);
        break;
    case 9: {
        struct dn2f_swsummary s = { .route_mode = DN2F_ROUTE_DIRECT, .routes_gen = 3,
                                    .uptime_ms = 1234, .dgrams_in = 5 };
        struct dn2f_portstat ps;
        memset(&ps, 0, sizeof(ps));
        ps.lid = 1;
        ps.state = 1;
        dn2f_addr_parse(&ps.addr, "127.0.0.1:9");
        ps.guid = 0x42;
        ps.rx_pkts = 1000;
        ps.retx = 7;
        dn2f_put_hdr(&w, DN2F_T_STATS_RESP, 0, 0, 0, 1, 0);
        dn2f_put_stats_hdr(&w, 0xdead, 0, 1, 1, &s);
        dn2f_put_portstat(&w, &ps);
        break;
    }
    case 10:
        dn2f_put_hdr(&w, DN2F_T_MCAST_JOIN, 0, 3, 0, 3, 4);
        dn2f_put_mcast(&w, 0xc005);
        break;
    default:
        return 0;
    }
    return dn2f_finish(&w);
}
#define NSAMPLES 11

static bool t_wire_roundtrip(void)
{
    struct dn2f_msg m;
    struct dn2f_iter it;
    struct dn2f_rec r;
    struct dn2f_route rt;
    struct dn2f_portstat ps;
    uint16_t g, n, lid;
    uint32_t seq;
    uint64_t ep;
    const uint8_t *mem;
    size_t len;
    int k, rc;

    for (k = 0; k < NSAMPLES; k++) {
        len = build_sample(k, g_buf);
        CHECK(len >= DN2F_HDR_LEN, "sample %d did not build", k);
        rc = dn2f_decode(g_buf, len, &m);
        CHECK(rc == 0, "sample %d: %s", k, dn2f_strerror(rc));
    }
    len = build_sample(0, g_buf);
    dn2f_decode(g_buf, len, &m);
    CHECK(m.h.type == DN2F_T_HELLO && m.u.hello.guid == 0x1122334455667788ULL &&
          m.u.hello.lid_hint == 0x1005 && m.h.src_epoch == 0xabcdef, "hello fields");
    len = build_sample(1, g_buf);
    dn2f_decode(g_buf, len, &m);
    CHECK(m.u.assign.lid == 0x2003 && m.u.assign.route_mode == DN2F_ROUTE_SWITCH &&
          m.u.assign.link_state == 3 && m.h.dst_epoch == 6, "assign fields");
    len = build_sample(2, g_buf);
    dn2f_decode(g_buf, len, &m);
    CHECK(m.u.routes.gen == 42 && m.u.routes.nroutes == 2 && m.u.routes.ngroups == 2, "routes hdr");
    dn2f_routes_iter(&m, &it);
    CHECK(dn2f_routes_next_route(&it, &rt) && rt.lid == 1 && rt.epoch == 77 &&
          dn2f_addr_port(&rt.addr) == 4000 && rt.addr.u.sa.sa_family == AF_INET, "route 1");
    CHECK(dn2f_routes_next_route(&it, &rt) && rt.lid == 0x3001 &&
          rt.addr.u.sa.sa_family == AF_INET6 && dn2f_addr_port(&rt.addr) == 4001, "route 2");
    CHECK(!dn2f_routes_next_route(&it, &rt), "only 2 routes");
    CHECK(dn2f_routes_next_group(&it, &g, &n, &mem) && g == 0xc005 && n == 3 &&
          mem[4] == 0x01 && mem[5] == 0x30, "group 1");
    CHECK(dn2f_routes_next_group(&it, &g, &n, &mem) && g == 0xf0fe && n == 0, "group 2");
    CHECK(!dn2f_routes_next_group(&it, &g, &n, &mem), "only 2 groups");

    len = build_sample(3, g_buf);
    dn2f_decode(g_buf, len, &m);
    CHECK(m.u.data.acks.n == 1 && m.u.data.acks.a[0].cum == 100 &&
          m.u.data.acks.a[0].limit == 612 && m.u.data.acks.a[0].lane == 0 &&
          m.u.data.acks.a[0].nbits == 32 && dn2f_ack_sacked(&m.u.data.acks.a[0], 0) &&
          !dn2f_ack_sacked(&m.u.data.acks.a[0], 1) && dn2f_ack_sacked(&m.u.data.acks.a[0], 2) &&
          dn2f_ack_sacked(&m.u.data.acks.a[0], 31) && m.u.data.nrecs == 2, "data+ack");
    CHECK(m.u.data.ts == 0xc0ffee01u && m.u.data.acks.a[0].echo == 0xbeef0002u,
          "timestamp 0x%x, echo 0x%x", m.u.data.ts, m.u.data.acks.a[0].echo);
    CHECK(dn2f_ts_us(0) == 1 && dn2f_ts_us(5000) == 5 &&
          dn2f_ts_us(4294967296000ULL) == 1, "dn2f_ts_us: never 0");
    dn2f_data_iter(&m, &it);
    CHECK(dn2f_data_next(&it, &r) && r.seq == 100 && r.len == 37 && r.kind == DN2F_REC_UNICAST
          && dn2f_pkt_dlid(r.pkt) == 2, "rec 1");
    CHECK(dn2f_data_next(&it, &r) && r.seq == 101 && r.len == 600 &&
          r.kind == DN2F_REC_MCAST_COPY && r.group == 0xc005 && r.rflags == DN2F_RF_RETX,
          "rec 2");
    CHECK(!dn2f_data_next(&it, &r), "2 recs");
    len = build_sample(4, g_buf);
    dn2f_decode(g_buf, len, &m);
    dn2f_data_iter(&m, &it);
    CHECK(dn2f_data_next(&it, &r) && r.kind == DN2F_REC_MCAST_ORIGIN && r.nmemb == 2, "origin");
    dn2f_rec_member(&r, 1, &lid, &seq, &ep);
    CHECK(lid == 3 && seq == 20 && ep == 200, "member 2");
    len = build_sample(9, g_buf);
    dn2f_decode(g_buf, len, &m);
    dn2f_stats_iter(&m, &it);
    CHECK(m.u.stats.sum.uptime_ms == 1234 && dn2f_stats_next(&it, &ps) && ps.rx_pkts == 1000 &&
          ps.retx == 7 && ps.guid == 0x42, "stats");
    return true;
}

static bool t_wire_truncated(void)
{
    struct dn2f_msg m;
    size_t len, l;
    int k, rc;
    uint8_t *copy = malloc(DN2F_DGRAM_MAX + 8);

    for (k = 0; k < NSAMPLES; k++) {
        len = build_sample(k, g_buf);
        for (l = 0; l < len; l++) {
            /* plain truncation: the length field no longer matches */
            memcpy(copy, g_buf, l);
            rc = dn2f_decode(copy, l, &m);
            CHECK(rc != 0, "sample %d truncated to %zu accepted", k, l);
            /* truncation with a patched length field: the body is short */
            if (l >= DN2F_HDR_LEN) {
                copy[12] = (uint8_t)l;
                copy[13] = (uint8_t)(l >> 8);
                copy[14] = copy[15] = 0;
                rc = dn2f_decode(copy, l, &m);
                /* DATA (3) may lose whole records; a STATS_REQ (8) its padding */
                CHECK(rc != 0 || (k == 3 && l > DN2F_HDR_LEN) || (k == 8 && l >= DN2F_HDR_LEN + 8),
                      "sample %d cut to %zu accepted",
                      k, l);
            }
        }
        /* one byte more than declared */
        memcpy(copy, g_buf, len);
        copy[len] = 0;
        CHECK(dn2f_decode(copy, len + 1, &m) == -DN2F_E_LENGTH, "sample %d +1 byte", k);
    }
    free(copy);
    CHECK(dn2f_decode(NULL, 0, &m) == -DN2F_E_SHORT, "NULL");
    return true;
}

/* Every field of every record, each with its own value, through the
 * encoder, the validating decoder and the iterators (one decoder per
 * record serves the last two): a field read or written at another field's
 * offset shows as a wrong value here. */
static size_t wire_fields_sample(int kind, uint8_t *buf)
{
    struct dn2f_wbuf w;
    uint8_t pkt[64];
    dn2f_wbuf_init(&w, buf, DN2F_DGRAM_MAX);
    switch (kind) {
    case 0: {                   /* ASSIGN: ticket and token too */
        struct dn2f_assign a = { .guid = 0x0102030405060708ULL, .lid = 0x2003,
                                 .link_state = 2, .route_mode = DN2F_ROUTE_DIRECT,
                                 .ticket.time = 0x11121314u };
        unsigned i;
        for (i = 0; i < DN2F_TICKET_LEN; i++) {
            a.ticket.mac[i] = (uint8_t)(0x20 + i);
            a.token[i] = (uint8_t)(0x40 + i);
        }
        dn2f_put_hdr(&w, DN2F_T_ASSIGN, 0, 0x0fff, 0x2003, 0x5152535455565758ULL,
                     0x6162636465666768ULL);
        dn2f_put_assign(&w, &a);
        break;
    }
    case 1: {                   /* KEEPALIVE with a ticket */
        struct dn2f_ticket t = { .time = 0x31323334u };
        unsigned i;
        for (i = 0; i < DN2F_TICKET_LEN; i++) {
            t.mac[i] = (uint8_t)(0x70 + i);
        }
        dn2f_put_hdr(&w, DN2F_T_KEEPALIVE, 0, 1, 0, 3, 4);
        dn2f_put_keepalive(&w, 0x41424344u, 0x8182838485868788ULL, &t);
        break;
    }
    case 2: {                   /* ROUTES: one route with token, one group */
        struct dn2f_route r;
        uint16_t lids[2] = { 0x1003, 0x2004 };
        unsigned i;
        memset(&r, 0, sizeof(r));
        r.lid = 0x3001;
        r.flags = DN2F_RT_DIRECT;
        dn2f_addr_parse(&r.addr, "[::1]:4321");
        r.epoch = 0x9192939495969798ULL;
        for (i = 0; i < DN2F_TOKEN_LEN; i++) {
            r.token[i] = (uint8_t)(0xa0 + i);
        }
        dn2f_put_hdr(&w, DN2F_T_ROUTES, 0, 0, 1, 5, 6);
        dn2f_put_routes_hdr(&w, 0x01020304u, 2, 3, 1, 1);
        dn2f_put_route(&w, &r);
        dn2f_put_group(&w, 0xc007, 2, lids);
        break;
    }
    case 3: {                   /* STATS_RESP: every summary and port counter */
        struct dn2f_swsummary sm = { .route_mode = DN2F_ROUTE_SWITCH, .routes_gen = 0x0a0b0c0d,
                                     .uptime_ms = 11, .dgrams_in = 12, .dgrams_fwd = 13,
                                     .bad = 14, .inj_drop = 15, .inj_dup = 16,
                                     .inj_reorder = 17, .inj_delay = 18 };
        struct dn2f_portstat ps;
        memset(&ps, 0, sizeof(ps));
        ps.lid = 0x1002;
        ps.state = 2;
        dn2f_addr_parse(&ps.addr, "127.0.0.2:999");
        ps.guid = 21;
        ps.epoch = 22;
        ps.rx_pkts = 23;
        ps.rx_bytes = 24;
        ps.tx_pkts = 25;
        ps.tx_bytes = 26;
        ps.drops = 27;
        ps.retx = 28;
        dn2f_put_hdr(&w, DN2F_T_STATS_RESP, 0, 0, 0, 1, 0);
        dn2f_put_stats_hdr(&w, 0x5a5b5c5du, 1, 2, 1, &sm);
        dn2f_put_portstat(&w, &ps);
        break;
    }
    case 4: {                   /* a multicast origin: members with sessions */
        struct dn2f_member mb[2] = {
            { .lid = 2, .seq = 0x71727374u, .epoch = 0x75767778797a7b7cULL,
              .src_sess = 0x7d7e7f80u, .dst_sess = 0x81828384u },
            { .lid = 0x1003, .seq = 0x91929394u, .epoch = 0x95969798999a9b9cULL,
              .src_sess = 0x9d9e9fa0u, .dst_sess = 0xa1a2a3a4u },
        };
        dn2f_put_hdr(&w, DN2F_T_DATA, 0, 1, 0xc005, 11, 0);
        fill_pkt(pkt, 44, 0xc005, 1, 0, 0);
        dn2f_put_origin(&w, 0, 0xc005, 2, mb, pkt, 44);
        break;
    }
    case 5:                     /* a request record: its "after" */
        dn2f_put_hdr(&w, DN2F_T_DATA, 0, 1, 2, 11, 22);
        dn2f_hdr_set_sessions(&w, 0xd1d2d3d4u, 0xe1e2e3e4u);
        fill_pkt(pkt, 24, 2, 1, 0, 0);
        set_type(pkt, DN2_OP_RVL);
        dn2f_put_req(&w, 0, 0x12345678u, 0x23456789u, pkt, 24);
        break;
    case 6:                     /* an ACK of two lanes with SACK bits and echoes */
    {
        uint8_t bits[4] = { 0x81, 0, 0, 0x40 };
        dn2f_put_hdr(&w, DN2F_T_ACK, DN2F_F_ACKREQ, 1, 2, 3, 4);
        dn2f_hdr_set_sessions(&w, 7, 8);
        dn2f_put_ack_echo(&w, 3, true, 0x100, 0x140, 0xb1b2b3b4u, 32, bits);
        dn2f_put_ack_echo(&w, 1, false, 0x200, 0x200, 0xc1c2c3c4u, 0, NULL);
        break;
    }
    case 7:                     /* STATS_REQ (unpadded), BYE, MCAST_LEAVE */
        dn2f_put_hdr(&w, DN2F_T_STATS_REQ, 0, 0, 0, 0, 0);
        dn2f_put_stats_req(&w, 0xcafe0001u, 0x0102, 0);
        break;
    case 8:
        dn2f_put_hdr(&w, DN2F_T_BYE, 0, 1, 0, 3, 4);
        dn2f_put_u32pair(&w, DN2F_BYE_FULL, 0);
        break;
    case 9:
        dn2f_put_hdr(&w, DN2F_T_MCAST_LEAVE, 0, 3, 0, 3, 4);
        dn2f_put_mcast(&w, 0xc00a);
        break;
    default:
        return 0;
    }
    return dn2f_finish(&w);
}
#define NFIELDS_SAMPLES 10

static bool t_wire_every_field(void)
{
    struct dn2f_msg m;
    struct dn2f_iter it;
    struct dn2f_rec r;
    struct dn2f_route rt;
    struct dn2f_portstat ps;
    struct dn2f_member mb;
    struct dn2f_addr a;
    const uint8_t *mem;
    uint16_t g, n;
    size_t len;
    unsigned i;
    int rc;

    len = wire_fields_sample(0, g_buf);
    rc = dn2f_decode(g_buf, len, &m);
    CHECK(rc == 0, "assign: %s", dn2f_strerror(rc));
    CHECK(m.h.version == DN2F_VERSION && m.h.type == DN2F_T_ASSIGN && m.h.src_lid == 0x0fff &&
          m.h.dst_lid == 0x2003 && m.h.length == len &&
          m.h.src_epoch == 0x5152535455565758ULL && m.h.dst_epoch == 0x6162636465666768ULL,
          "header fields");
    CHECK(m.u.assign.guid == 0x0102030405060708ULL && m.u.assign.lid == 0x2003 &&
          m.u.assign.link_state == 2 && m.u.assign.route_mode == DN2F_ROUTE_DIRECT &&
          m.u.assign.ticket.time == 0x11121314u, "assign fields");
    for (i = 0; i < DN2F_TICKET_LEN; i++) {
        CHECK(m.u.assign.ticket.mac[i] == 0x20 + i && m.u.assign.token[i] == 0x40 + i,
              "assign ticket / token byte %u", i);
    }

    len = wire_fields_sample(1, g_buf);
    CHECK(dn2f_decode(g_buf, len, &m) == 0, "keepalive");
    CHECK(m.u.keepalive.gen == 0x41424344u && m.u.keepalive.guid == 0x8182838485868788ULL &&
          m.u.keepalive.ticket.time == 0x31323334u && m.u.keepalive.ticket.mac[0] == 0x70 &&
          m.u.keepalive.ticket.mac[DN2F_TICKET_LEN - 1] == 0x70 + DN2F_TICKET_LEN - 1,
          "keepalive fields");

    len = wire_fields_sample(2, g_buf);
    CHECK(dn2f_decode(g_buf, len, &m) == 0, "routes");
    CHECK(m.u.routes.gen == 0x01020304u && m.u.routes.chunk == 2 && m.u.routes.nchunks == 3 &&
          m.u.routes.nroutes == 1 && m.u.routes.ngroups == 1, "routes header");
    dn2f_routes_iter(&m, &it);
    dn2f_addr_parse(&a, "[::1]:4321");
    CHECK(dn2f_routes_next_route(&it, &rt) && rt.lid == 0x3001 && rt.flags == DN2F_RT_DIRECT &&
          dn2f_addr_equal(&rt.addr, &a) && rt.epoch == 0x9192939495969798ULL &&
          rt.token[0] == 0xa0 && rt.token[DN2F_TOKEN_LEN - 1] == 0xa0 + DN2F_TOKEN_LEN - 1,
          "route fields");
    CHECK(dn2f_routes_next_group(&it, &g, &n, &mem) && g == 0xc007 && n == 2 &&
          mem[0] == 0x03 && mem[1] == 0x10 && mem[2] == 0x04 && mem[3] == 0x20, "group fields");
    CHECK(!dn2f_routes_next_group(&it, &g, &n, &mem), "one group");

    len = wire_fields_sample(3, g_buf);
    CHECK(dn2f_decode(g_buf, len, &m) == 0, "stats");
    CHECK(m.u.stats.cookie == 0x5a5b5c5du && m.u.stats.chunk == 1 && m.u.stats.nchunks == 2 &&
          m.u.stats.nports == 1 && m.u.stats.sum.route_mode == DN2F_ROUTE_SWITCH &&
          m.u.stats.sum.routes_gen == 0x0a0b0c0d && m.u.stats.sum.uptime_ms == 11 &&
          m.u.stats.sum.dgrams_in == 12 && m.u.stats.sum.dgrams_fwd == 13 &&
          m.u.stats.sum.bad == 14 && m.u.stats.sum.inj_drop == 15 &&
          m.u.stats.sum.inj_dup == 16 && m.u.stats.sum.inj_reorder == 17 &&
          m.u.stats.sum.inj_delay == 18, "stats summary fields");
    dn2f_stats_iter(&m, &it);
    dn2f_addr_parse(&a, "127.0.0.2:999");
    CHECK(dn2f_stats_next(&it, &ps) && ps.lid == 0x1002 && ps.state == 2 &&
          dn2f_addr_equal(&ps.addr, &a) && ps.guid == 21 && ps.epoch == 22 &&
          ps.rx_pkts == 23 && ps.rx_bytes == 24 && ps.tx_pkts == 25 && ps.tx_bytes == 26 &&
          ps.drops == 27 && ps.retx == 28, "port statistics fields");
    CHECK(!dn2f_stats_next(&it, &ps), "one port");

    len = wire_fields_sample(4, g_buf);
    CHECK(dn2f_decode(g_buf, len, &m) == 0, "origin");
    dn2f_data_iter(&m, &it);
    CHECK(dn2f_data_next(&it, &r) && r.kind == DN2F_REC_MCAST_ORIGIN && r.group == 0xc005 &&
          r.nmemb == 2 && r.len == 44 && r.seq == 0, "origin record fields");
    dn2f_rec_member_full(&r, 0, &mb);
    CHECK(mb.lid == 2 && mb.seq == 0x71727374u && mb.epoch == 0x75767778797a7b7cULL &&
          mb.src_sess == 0x7d7e7f80u && mb.dst_sess == 0x81828384u, "member 1 fields");
    dn2f_rec_member_full(&r, 1, &mb);
    CHECK(mb.lid == 0x1003 && mb.seq == 0x91929394u && mb.epoch == 0x95969798999a9b9cULL &&
          mb.src_sess == 0x9d9e9fa0u && mb.dst_sess == 0xa1a2a3a4u, "member 2 fields");
    CHECK(!dn2f_data_next(&it, &r), "one record");

    len = wire_fields_sample(5, g_buf);
    rc = dn2f_decode(g_buf, len, &m);
    CHECK(rc == 0, "request: %s", dn2f_strerror(rc));
    CHECK(m.h.src_sess == 0xd1d2d3d4u && m.h.dst_sess == 0xe1e2e3e4u, "header sessions");
    dn2f_data_iter(&m, &it);
    CHECK(dn2f_data_next(&it, &r) && r.kind == DN2F_REC_UNICAST &&
          (r.rflags & DN2F_RF_REQ) && r.lane == DN2F_LANE_REQ && r.seq == 0x12345678u &&
          r.after == 0x23456789u && r.len == 24 && dn2f_pkt_dlid(r.pkt) == 2,
          "request record fields");

    len = wire_fields_sample(6, g_buf);
    CHECK(dn2f_decode(g_buf, len, &m) == 0, "ack");
    CHECK(m.h.flags == DN2F_F_ACKREQ && m.u.acks.n == 2 && m.u.acks.a[0].lane == 3 &&
          m.u.acks.a[0].cum == 0x100 && m.u.acks.a[0].limit == 0x140 &&
          m.u.acks.a[0].echo == 0xb1b2b3b4u && m.u.acks.a[0].nbits == 32 &&
          dn2f_ack_sacked(&m.u.acks.a[0], 0) && dn2f_ack_sacked(&m.u.acks.a[0], 7) &&
          !dn2f_ack_sacked(&m.u.acks.a[0], 8) && dn2f_ack_sacked(&m.u.acks.a[0], 30) &&
          m.u.acks.a[1].lane == 1 && m.u.acks.a[1].cum == 0x200 &&
          m.u.acks.a[1].limit == 0x200 && m.u.acks.a[1].echo == 0xc1c2c3c4u &&
          m.u.acks.a[1].nbits == 0, "ack block fields");

    len = wire_fields_sample(7, g_buf);
    CHECK(dn2f_decode(g_buf, len, &m) == 0 && m.u.stats_req.cookie == 0xcafe0001u &&
          m.u.stats_req.chunk == 0x0102, "stats request fields");
    len = wire_fields_sample(8, g_buf);
    CHECK(dn2f_decode(g_buf, len, &m) == 0 && m.u.bye.reason == DN2F_BYE_FULL, "bye fields");
    len = wire_fields_sample(9, g_buf);
    CHECK(dn2f_decode(g_buf, len, &m) == 0 && m.h.type == DN2F_T_MCAST_LEAVE &&
          m.u.mcast.group == 0xc00a, "mcast fields");
    return true;
}

/* Each of those datagrams holds exactly one of its variable records, so
 * every cut (with the length field patched to match) must be refused:
 * nothing decodes from part of a record, and the iterators never see one. */
static bool t_wire_every_cut(void)
{
    struct dn2f_msg m;
    uint8_t *copy = malloc(DN2F_DGRAM_MAX + 8);
    size_t len, l;
    int k, rc;

    for (k = 0; k < NFIELDS_SAMPLES; k++) {
        len = wire_fields_sample(k, g_buf);
        CHECK(len >= DN2F_HDR_LEN && dn2f_decode(g_buf, len, &m) == 0, "sample %d", k);
        for (l = DN2F_HDR_LEN; l < len; l++) {
            memcpy(copy, g_buf, l);
            copy[12] = (uint8_t)l;
            copy[13] = (uint8_t)(l >> 8);
            copy[14] = copy[15] = 0;
            rc = dn2f_decode(copy, l, &m);
            CHECK(rc < 0, "sample %d cut to %zu bytes accepted", k, l);
        }
    }
    free(copy);
    return true;
}

static bool t_wire_oversized_and_fields(void)
{
    struct dn2f_msg m;
    uint8_t *big = calloc(1, DN2F_DGRAM_MAX + 100);
    struct dn2f_wbuf w;
    uint8_t pkt[4096];
    size_t len;
    int k;

    /* a datagram longer than any UDP payload */
    len = build_sample(6, big);
    big[12] = (uint8_t)((DN2F_DGRAM_MAX + 8) & 0xff);
    big[13] = (uint8_t)((DN2F_DGRAM_MAX + 8) >> 8);
    big[14] = (uint8_t)((DN2F_DGRAM_MAX + 8) >> 16);
    CHECK(dn2f_decode(big, DN2F_DGRAM_MAX + 8, &m) != 0, "oversized accepted");
    (void)len;
    /* packets above DN2F_PKT_MAX are rejected (length 4097 hand-made) */
    dn2f_wbuf_init(&w, big, DN2F_DGRAM_MAX);
    dn2f_put_hdr(&w, DN2F_T_DATA, 0, 1, 2, 1, 1);
    dn2f_hdr_set_sessions(&w, 1, 1);
    fill_pkt(pkt, 4096, 2, 1, 0, 0);
    CHECK(dn2f_put_rec(&w, DN2F_REC_UNICAST, 0, 0, 0, 0, NULL, NULL, NULL, pkt, 4096), "put");
    len = dn2f_finish(&w);
    CHECK(dn2f_decode(big, len, &m) == 0, "4096-byte packet rejected");
    big[DN2F_HDR_LEN + DN2F_DATA_TS_LEN + 4] = 0x01;
    big[DN2F_HDR_LEN + DN2F_DATA_TS_LEN + 5] = 0x10;       /* len 4097 */
    CHECK(dn2f_decode(big, len, &m) != 0, "4097-byte packet accepted");
    /* field checks on each sample: bad magic, version, type, flags, reserved */
    for (k = 0; k < NSAMPLES; k++) {
        len = build_sample(k, g_buf);
        g_buf[0] ^= 1;
        CHECK(dn2f_decode(g_buf, len, &m) == -DN2F_E_MAGIC, "magic %d", k);
        g_buf[0] ^= 1;
        g_buf[4] = DN2F_VERSION + 1;
        CHECK(dn2f_decode(g_buf, len, &m) == -DN2F_E_VERSION, "version %d", k);
        g_buf[4] = DN2F_VERSION;
        g_buf[5] = 0;
        CHECK(dn2f_decode(g_buf, len, &m) == -DN2F_E_TYPE, "type %d", k);
        len = build_sample(k, g_buf);
        g_buf[7] = 0x80;
        CHECK(dn2f_decode(g_buf, len, &m) == -DN2F_E_FLAGS, "flags %d", k);
    }
    /* DATA: the packet's DLID must match the header */
    len = build_sample(3, g_buf);
    g_buf[10] = 3;                      /* dst LID 2 -> 3 */
    CHECK(dn2f_decode(g_buf, len, &m) == -DN2F_E_FIELD, "dlid mismatch");
    /* HELLO: reserved bytes */
    len = build_sample(0, g_buf);
    g_buf[DN2F_HDR_LEN + 12] = 1;
    CHECK(dn2f_decode(g_buf, len, &m) == -DN2F_E_RESERVED, "reserved");
    /* ASSIGN: a LID with bits [11:8] set is not assignable */
    len = build_sample(1, g_buf);
    g_buf[DN2F_HDR_LEN + 9] = 0x21;
    g_buf[11] = 0x21;
    CHECK(dn2f_decode(g_buf, len, &m) == -DN2F_E_FIELD, "unassignable lid");
    /* ACK: credit limit behind cum */
    len = build_sample(5, g_buf);
    g_buf[DN2F_HDR_LEN + 4] = 1;
    g_buf[DN2F_HDR_LEN + 5] = 0;
    CHECK(dn2f_decode(g_buf, len, &m) == -DN2F_E_FIELD, "limit < cum");
    free(big);
    return true;
}

static bool t_wire_garbage(void)
{
    struct dn2f_rng r;
    struct dn2f_msg m;
    uint8_t buf[2048];
    unsigned i, j, accepted = 0;
    size_t len;

    dn2f_rng_seed(&r, 99);
    for (i = 0; i < 200000; i++) {
        len = dn2f_rng_next(&r) % sizeof(buf);
        for (j = 0; j < len; j++) {
            buf[j] = (uint8_t)dn2f_rng_next(&r);
        }
        if (i & 1 && len >= 16) {       /* plausible header, random body */
            buf[0] = 'D'; buf[1] = 'N'; buf[2] = '2'; buf[3] = 'F';
            buf[4] = DN2F_VERSION;
            buf[5] = (uint8_t)(1 + dn2f_rng_next(&r) % (DN2F_T_MAX - 1));
            buf[6] = buf[7] = 0;
            if (len >= 16) {
                buf[12] = (uint8_t)len;
                buf[13] = (uint8_t)(len >> 8);
                buf[14] = buf[15] = 0;
            }
        }
        if (dn2f_decode(buf, len, &m) == 0) {
            accepted++;
        }
    }
    /* bit flips of valid datagrams: anything accepted must iterate cleanly */
    for (i = 0; i < 100000; i++) {
        int k = (int)(i % NSAMPLES);
        struct dn2f_iter it;
        struct dn2f_rec rec;
        len = build_sample(k, g_buf);
        for (j = 0; j < 1 + i % 4; j++) {
            size_t pos = dn2f_rng_next(&r) % len;
            g_buf[pos] ^= (uint8_t)(1u << (dn2f_rng_next(&r) % 8));
        }
        if (dn2f_decode(g_buf, len, &m) == 0 && m.h.type == DN2F_T_DATA) {
            unsigned cnt = 0;
            dn2f_data_iter(&m, &it);
            while (dn2f_data_next(&it, &rec)) {
                cnt++;
                CHECK(rec.pkt >= g_buf && rec.pkt + rec.len <= g_buf + len, "rec out of bounds");
            }
            CHECK(cnt == m.u.data.nrecs, "iteration count %u != %u", cnt, m.u.data.nrecs);
        }
    }
    fprintf(stderr, "#   %u of 200000 random datagrams decoded (header-shaped KEEPALIVE etc.)\n",
            accepted);
    return true;
}

static bool t_addr(void)
{
    struct dn2f_addr a, b;
    char s[80];
    CHECK(dn2f_addr_parse(&a, "127.0.0.1:0") == 0 && dn2f_addr_port(&a) == 0, "v4 port 0");
    CHECK(dn2f_addr_parse(&a, "[::1]:65535") == 0 && a.u.sa.sa_family == AF_INET6, "v6");
    CHECK(dn2f_addr_parse(&a, "::1:5") < 0, "bare v6 rejected");
    CHECK(dn2f_addr_parse(&a, "1.2.3.4:65536") < 0, "port range");
    CHECK(dn2f_addr_parse(&a, "1.2.3.4:") < 0 && dn2f_addr_parse(&a, ":5") < 0 &&
          dn2f_addr_parse(&a, "1.2.3.4:-1") < 0 && dn2f_addr_parse(&a, "") < 0, "junk");
    CHECK(dn2f_addr_parse(&a, "127.0.0.1:77") == 0 && dn2f_addr_parse(&b, "[::ffff:127.0.0.1]:77") == 0
          && dn2f_addr_equal(&a, &b), "v4-mapped equal");
    CHECK(strcmp(dn2f_addr_str(&b, s, sizeof(s)), "127.0.0.1:77") == 0, "str %s", s);
    CHECK(dn2f_addr_parse(&b, "127.0.0.1:78") == 0 && !dn2f_addr_equal(&a, &b), "port differs");
    return true;
}

/* ======================================================= endpoint tests */
static bool bring_up(int mode, int neps)
{
    int i;
    add_switch(mode);
    g_neps = 0;
    for (i = 1; i <= neps; i++) {
        if (add_ep(i, NULL) < 0) {
            return false;
        }
        g_eps[g_neps++] = i;
    }
    memset(g_want, 0, sizeof(g_want));
    return sim_run(cond_all_up, 20ULL * 1000000000);
}

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

static bool cond_quarter(void) { return APP(2)->got_total >= 1000 || APP(2)->error; }

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

static uint16_t g_group;
static bool cond_group3(void)
{
    return dn2f_ep_group_members(EP(1), g_group) == 3;
}

static bool cond_group2(void)
{
    return dn2f_ep_group_members(EP(1), g_group) == 2;
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

/* Defect 9: a board's two processes (WID 0 and WID 1) share the link to a
 * peer.  WID 0's receive ring stays full for a long time (deliver() says
 * -EBUSY to every DWID 0 packet); WID 1's packets from the same peer must
 * keep flowing meanwhile.  Before the lanes, one -EBUSY blocked the peer's
 * whole stream (rx_blocked per peer, and the credit limit with it), so WID 1
 * received nothing until WID 0 had room: this test then fails at "WID 1
 * starved".  Afterwards WID 0 resumes and gets everything, in order. */
static uint32_t g_lane_want;
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

/* ====================================================== request lanes */
/* The wire: a record's lane is DWID + 2 * REQ; REQ requires an RVL-family
 * TYPE and is refused on multicast records (multicast travels in the data
 * lanes); a request carries its "after"; ACK blocks name lanes 0..3, up to
 * four per datagram. */
static size_t lane_sample(uint8_t *buf, unsigned kind, unsigned type, unsigned dwid,
                          unsigned rflags, const unsigned *ack_lanes, unsigned nacks)
{
    struct dn2f_wbuf w;
    uint8_t pkt[REQ_LEN];
    uint16_t dlid = kind == DN2F_REC_UNICAST ? 2 : 0xc005;
    unsigned i;

    dn2f_wbuf_init(&w, buf, DN2F_DGRAM_MAX);
    dn2f_put_hdr(&w, DN2F_T_DATA, nacks ? DN2F_F_ACK : 0, 1, 2, 11, 22);
    dn2f_hdr_set_sessions(&w, 0x51, 0x52);
    for (i = 0; i < nacks; i++) {
        dn2f_put_ack(&w, ack_lanes[i], i + 1 < nacks, 100 + i, 612 + i, 0, NULL);
    }
    fill_pkt(pkt, REQ_LEN, dlid, 1, 0, 7);
    set_dwid(pkt, dwid);
    set_type(pkt, type);
    if (kind == DN2F_REC_UNICAST && (rflags & DN2F_RF_REQ)) {
        dn2f_put_req(&w, rflags, 5, 0x12345678u, pkt, REQ_LEN);
    } else {
        dn2f_put_rec(&w, kind, rflags, 5, kind ? dlid : 0, 0, NULL, NULL, NULL, pkt, REQ_LEN);
    }
    return dn2f_finish(&w);
}

static bool t_wire_lanes(void)
{
    static const unsigned four[4] = { 3, 0, 2, 1 }, dup[2] = { 2, 2 }, five[5] = { 0, 1, 2, 3, 0 };
    static const unsigned rvl[3] = { DN2_OP_RVL, DN2_OP_RVLS, DN2_OP_RVLI };
    struct dn2f_msg m;
    struct dn2f_iter it;
    struct dn2f_rec r;
    uint8_t pkt[16];
    size_t len;
    unsigned i, w;

    /* dn2f_h0_lane: DWID + 2 for the RVL family to a unicast DLID */
    for (w = 0; w < 2; w++) {
        for (i = 0; i < 3; i++) {
            uint64_t h0 = (uint64_t)2 << 32 | (uint64_t)w << 28 | (uint64_t)rvl[i] << 12 | 32;
            CHECK(dn2f_h0_lane(h0) == 2 + w, "%s DWID %u: lane %u", dn2_otype_name(rvl[i]), w,
                  dn2f_h0_lane(h0));
            memset(pkt, 0, sizeof(pkt));
            memcpy(pkt, &h0, 8);        /* little-endian host */
            CHECK(dn2f_pkt_lane(pkt) == 2 + w, "pkt_lane");
            h0 = (uint64_t)0xc005 << 32 | (uint64_t)w << 28 | (uint64_t)rvl[i] << 12 | 32;
            CHECK(dn2f_h0_lane(h0) == w, "RVL to a group: data lane %u, got %u", w,
                  dn2f_h0_lane(h0));
        }
        CHECK(dn2f_h0_lane((uint64_t)2 << 32 | (uint64_t)w << 28 | (uint64_t)DN2_OP_RVS << 12)
              == w, "RVS: data lane");
        CHECK(dn2f_h0_lane((uint64_t)2 << 32 | (uint64_t)w << 28 | (uint64_t)DN2_OP_VS << 12)
              == w, "VS: data lane");
    }
    CHECK(dn2f_lane_rflags(0) == 0 && dn2f_lane_rflags(1) == DN2F_RF_LANE1 &&
          dn2f_lane_rflags(2) == DN2F_RF_REQ &&
          dn2f_lane_rflags(3) == (DN2F_RF_REQ | DN2F_RF_LANE1), "lane_rflags");
    CHECK(DN2F_VERSION == 4, "wire version");

    /* a request in lane 3 with four ACK blocks: round trip */
    len = lane_sample(g_buf, DN2F_REC_UNICAST, DN2_OP_RVLS, 1, DN2F_RF_REQ | DN2F_RF_LANE1,
                      four, 4);
    CHECK(dn2f_decode(g_buf, len, &m) == 0, "request record rejected: %s",
          dn2f_strerror(dn2f_decode(g_buf, len, &m)));
    CHECK(m.u.data.acks.n == 4, "ACK blocks %u", m.u.data.acks.n);
    for (i = 0; i < 4; i++) {
        CHECK(m.u.data.acks.a[i].lane == four[i] && m.u.data.acks.a[i].cum == 100 + i,
              "ACK block %u", i);
    }
    dn2f_data_iter(&m, &it);
    CHECK(dn2f_data_next(&it, &r) && r.lane == 3 && r.after == 0x12345678u && r.seq == 5 &&
          r.len == REQ_LEN && (r.rflags & DN2F_RF_REQ) && pkt_class(r.pkt) == 3, "request rec");
    CHECK(!dn2f_data_next(&it, &r), "one record");
    CHECK(len == DN2F_HDR_LEN + DN2F_DATA_TS_LEN + 4 * DN2F_ACK_HDR_LEN + DN2F_REC_HDR_LEN + DN2F_REQ_AFTER_LEN +
                 REQ_LEN, "request record length %zu", len);
    CHECK(dn2f_rec_len_rf(DN2F_REC_UNICAST, DN2F_RF_REQ, 0, REQ_LEN) ==
          dn2f_rec_len(DN2F_REC_UNICAST, 0, REQ_LEN) + DN2F_REQ_AFTER_LEN, "rec_len_rf");
    /* dn2f_put_rec with REQ: after = 0, still valid */
    {
        struct dn2f_wbuf wb;
        uint8_t p2[REQ_LEN];
        dn2f_wbuf_init(&wb, g_buf, DN2F_DGRAM_MAX);
        dn2f_put_hdr(&wb, DN2F_T_DATA, 0, 1, 2, 11, 22);
        dn2f_hdr_set_sessions(&wb, 1, 0);
        fill_pkt(p2, REQ_LEN, 2, 1, 0, 0);
        set_type(p2, DN2_OP_RVLI);
        CHECK(dn2f_put_rec(&wb, DN2F_REC_UNICAST, DN2F_RF_REQ, 9, 0, 0, NULL, NULL, NULL, p2,
                           REQ_LEN), "put_rec REQ");
        len = dn2f_finish(&wb);
        CHECK(dn2f_decode(g_buf, len, &m) == 0, "put_rec REQ rejected");
        dn2f_data_iter(&m, &it);
        CHECK(dn2f_data_next(&it, &r) && r.lane == 2 && r.after == 0 && r.seq == 9, "after 0");
    }
    /* TYPE and REQ must agree on unicast records */
    len = lane_sample(g_buf, DN2F_REC_UNICAST, DN2_OP_RVS, 0, DN2F_RF_REQ, NULL, 0);
    CHECK(dn2f_decode(g_buf, len, &m) == -DN2F_E_FIELD, "REQ on an RVS accepted");
    /* an RVL without REQ: accepted in its data lane (hand-made datagrams
     * from raw peers put it there, as version 2 did) */
    len = lane_sample(g_buf, DN2F_REC_UNICAST, DN2_OP_RVL, 1, DN2F_RF_LANE1, NULL, 0);
    CHECK(dn2f_decode(g_buf, len, &m) == 0, "RVL in a data lane rejected");
    dn2f_data_iter(&m, &it);
    CHECK(dn2f_data_next(&it, &r) && r.lane == 1 && r.after == 0, "RVL in data lane 1");
    len = lane_sample(g_buf, DN2F_REC_UNICAST, DN2_OP_RVL, 1, DN2F_RF_REQ, NULL, 0);
    CHECK(dn2f_decode(g_buf, len, &m) == -DN2F_E_FIELD, "REQ: lane bit != DWID accepted");
    /* multicast: data lanes only, any TYPE */
    len = lane_sample(g_buf, DN2F_REC_MCAST_COPY, DN2_OP_RVL, 1, DN2F_RF_LANE1, NULL, 0);
    CHECK(dn2f_decode(g_buf, len, &m) == 0, "RVL multicast copy in its data lane rejected");
    len = lane_sample(g_buf, DN2F_REC_MCAST_COPY, DN2_OP_RVL, 1, DN2F_RF_LANE1 | DN2F_RF_REQ,
                      NULL, 0);
    CHECK(dn2f_decode(g_buf, len, &m) == -DN2F_E_FIELD, "REQ on a multicast copy accepted");
    /* ACK blocks: lanes 0..3, distinct, at most four */
    len = lane_sample(g_buf, DN2F_REC_UNICAST, DN2_OP_RVS, 0, 0, dup, 2);
    CHECK(dn2f_decode(g_buf, len, &m) == -DN2F_E_FIELD, "two blocks for lane 2 accepted");
    len = lane_sample(g_buf, DN2F_REC_UNICAST, DN2_OP_RVS, 0, 0, five, 5);
    CHECK(dn2f_decode(g_buf, len, &m) == -DN2F_E_FIELD, "five ACK blocks accepted");
    len = lane_sample(g_buf, DN2F_REC_UNICAST, DN2_OP_RVS, 0, 0, four, 1);
    g_buf[DN2F_HDR_LEN + DN2F_DATA_TS_LEN + 10] = 4;
    CHECK(dn2f_decode(g_buf, len, &m) == -DN2F_E_FIELD, "ACK for lane 4 accepted");
    /* a truncated "after" */
    len = lane_sample(g_buf, DN2F_REC_UNICAST, DN2_OP_RVL, 0, DN2F_RF_REQ, NULL, 0);
    g_buf[DN2F_HDR_LEN + DN2F_DATA_TS_LEN + 7] = 0;    /* REQ off: "after" is now packet bytes */
    CHECK(dn2f_decode(g_buf, len, &m) != 0, "request without REQ accepted");
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
    APP(2)->refuse_cls = 0;
    dn2f_ep_resume(EP(2));
    sim_run(NULL, 100000000ULL);
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

/* ============================================================ secret */
static void hex(const char *h, uint8_t *out, size_t *n)
{
    size_t i;
    for (i = 0; h[2 * i] && h[2 * i + 1]; i++) {
        unsigned v;
        sscanf(h + 2 * i, "%2x", &v);
        out[i] = (uint8_t)v;
    }
    *n = i;
}

/* SHA-256 (FIPS 180-4 examples) and HMAC-SHA256 (RFC 4231 cases 1-4, 6, 7). */
static bool t_hmac_vectors(void)
{
    static const struct { const char *key, *data, *mac; } v[] = {
        { "0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b", "4869205468657265",
          "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7" },
        { "4a656665", "7768617420646f2079612077616e7420666f72206e6f7468696e673f",
          "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843" },
        { "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
          "dddddddddddddddddddddddddddddddddddddddddddddddddd"
          "dddddddddddddddddddddddddddddddddddddddddddddddddd",
          "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe" },
        { "0102030405060708090a0b0c0d0e0f10111213141516171819",
          "cdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcd"
          "cdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcd",
          "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b" },
        { NULL, "54657374205573696e67204c6172676572205468616e20426c6f636b2d53697a65204b6579"
                "202d2048617368204b6579204669727374",
          "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54" },
        { NULL, "5468697320697320612074657374207573696e672061206c6172676572207468616e20626c"
                "6f636b2d73697a65206b657920616e642061206c6172676572207468616e20626c6f636b2d"
                "73697a6520646174612e20546865206b6579206e6565647320746f20626520686173686564"
                "206265666f7265206265696e6720757365642062792074686520484d414320616c676f7269"
                "74686d2e",
          "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2" },
    };
    uint8_t key[200], data[400], want[32], got[32];
    size_t kl, dl, wl;
    unsigned i;

    dn2f_sha256("abc", 3, got);
    hex("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad", want, &wl);
    CHECK(memcmp(got, want, 32) == 0, "sha256(abc)");
    dn2f_sha256("", 0, got);
    hex("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", want, &wl);
    CHECK(memcmp(got, want, 32) == 0, "sha256()");
    dn2f_sha256("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", 56, got);
    hex("248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1", want, &wl);
    CHECK(memcmp(got, want, 32) == 0, "sha256(448 bits)");
    for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
        if (v[i].key) {
            hex(v[i].key, key, &kl);
        } else {
            memset(key, 0xaa, 131);
            kl = 131;
        }
        hex(v[i].data, data, &dl);
        hex(v[i].mac, want, &wl);
        dn2f_hmac_sha256(key, kl, data, dl, got);
        CHECK(memcmp(got, want, 32) == 0, "RFC 4231 vector %u", i);
    }
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

/* Take the first queued datagram to node `to` of the given type out of the
 * simulated network (the others stay queued). */
static bool take_dgram(int to, unsigned type, struct qitem *out)
{
    static struct qitem keep[4096];
    unsigned nk = 0, i;
    bool found = false;

    while (sim.nq && nk < sizeof(keep) / sizeof(keep[0])) {
        struct qitem it = heap_pop();
        struct dn2f_msg m;
        if (!found && it.to == to && dn2f_decode(it.buf, it.len, &m) == 0 && m.h.type == type) {
            *out = it;
            found = true;
        } else {
            keep[nk++] = it;
        }
    }
    for (i = 0; i < nk; i++) {
        heap_push(keep[i]);
    }
    return found;
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

/* ======================================================= send batches */
/* A fake sendmmsg(): each call follows the script (a datagram count to
 * take, at most; or -errno), then takes as many as asked; what it takes is
 * logged as (destination port, the datagram's first 4 bytes, length). */
#define TXB_LOG 1024
static struct {
    int script[64];
    unsigned nscript, call, waits;
    int refuse_id;              /* a datagram refused with EMSGSIZE (-1: none) */
    unsigned n;
    uint16_t port[TXB_LOG];
    uint32_t id[TXB_LOG];
    size_t len[TXB_LOG];
} fk;

static int fake_sendmmsg(void *opaque, struct mmsghdr *m, unsigned n)
{
    int take = fk.call < fk.nscript ? fk.script[fk.call] : (int)n;
    unsigned i;
    (void)opaque;
    fk.call++;
    if (take < 0) {
        return take;
    }
    for (i = 0; i < n && i < (unsigned)take; i++) {
        struct dn2f_addr a;
        uint32_t id;
        memcpy(&id, m[i].msg_hdr.msg_iov[0].iov_base, 4);
        if ((int)id == fk.refuse_id) {
            return i ? (int)i : -EMSGSIZE;      /* as the kernel: the count so far */
        }
        dn2f_addr_from_sa(&a, m[i].msg_hdr.msg_name, m[i].msg_hdr.msg_namelen);
        fk.port[fk.n] = dn2f_addr_port(&a);
        fk.id[fk.n] = id;
        fk.len[fk.n] = m[i].msg_hdr.msg_iov[0].iov_len;
        fk.n++;
    }
    return (int)i;
}

static int fake_wait(void *opaque, int ms)
{
    (void)opaque;
    (void)ms;
    fk.waits++;
    return 1;
}

static void fake_reset(struct dn2f_txbatch *b, const int *script, unsigned nscript)
{
    memset(&fk, 0, sizeof(fk));
    fk.refuse_id = -1;
    if (nscript) {
        memcpy(fk.script, script, nscript * sizeof(int));
    }
    fk.nscript = nscript;
    b->sendmmsg = fake_sendmmsg;
    b->wait_writable = fake_wait;
}

/* Datagram id for destination d: d * 1000 + its number; 4 destinations. */
static void txb_add(struct dn2f_txbatch *b, unsigned id, size_t len, bool stable,
                    uint8_t *space)
{
    struct dn2f_addr to;
    char s[32];
    snprintf(s, sizeof(s), "127.0.0.1:%u", 7000 + id / 1000);
    dn2f_addr_parse(&to, s);
    memcpy(space, &id, 4);
    dn2f_txbatch_add(b, &to, space, len, stable);
}

/* Every datagram of the fake's log, per destination in the order added. */
static bool txb_check_order(unsigned per_dst, unsigned ndst)
{
    unsigned next[8] = { 0 }, i, d;
    for (i = 0; i < fk.n; i++) {
        d = fk.id[i] / 1000;
        CHECK(d < ndst && fk.port[i] == 7000 + d, "datagram %u: id %u to port %u", i,
              fk.id[i], fk.port[i]);
        CHECK(fk.id[i] % 1000 == next[d], "destination %u: got %u, expected %u", d,
              fk.id[i] % 1000, next[d]);
        next[d]++;
    }
    for (d = 0; d < ndst; d++) {
        CHECK(next[d] == per_dst, "destination %u: %u of %u datagrams", d, next[d], per_dst);
    }
    return true;
}

static bool t_txbatch_mixed(void)
{
    /* partial sends (3, 1, 0 = full), EAGAIN twice in the middle, ENOBUFS */
    static const int script[] = { 3, 1, -EAGAIN, -EAGAIN, 5, -ENOBUFS, 2, 0, 7 };
    struct dn2f_txbatch b;
    uint8_t *space = malloc(200 * 64);
    unsigned i;

    CHECK(space && dn2f_txbatch_init(&b, -1) == 0, "init");
    fake_reset(&b, script, sizeof(script) / sizeof(script[0]));
    /* 4 destinations interleaved, 40 each, in one batch (flushed at 64 and at the end) */
    for (i = 0; i < 160; i++) {
        unsigned id = (i % 4) * 1000 + i / 4;
        txb_add(&b, id, 16 + (i % 7), i % 2, space + 64 * i);
    }
    dn2f_txbatch_flush(&b);
    CHECK(b.n == 0 && b.arena_used == 0, "batch empty after the flush");
    if (!txb_check_order(40, 4)) {
        return false;
    }
    CHECK(b.st.queued == 160 && b.st.sent == 160 && b.st.errors == 0,
          "queued %llu sent %llu errors %llu", (unsigned long long)b.st.queued,
          (unsigned long long)b.st.sent, (unsigned long long)b.st.errors);
    CHECK(fk.waits == 4 && b.st.waits == 4, "waits %u (EAGAIN x2, ENOBUFS, 0 taken)", fk.waits);
    CHECK(b.st.flushes == 3, "flushes %llu (64, 64, 32)", (unsigned long long)b.st.flushes);
    for (i = 0; i < fk.n; i++) {
        CHECK(fk.len[i] == 16 + ((fk.id[i] % 1000) * 4 + fk.id[i] / 1000) % 7,
              "datagram %u: length %zu", i, fk.len[i]);
    }
    dn2f_txbatch_destroy(&b);
    free(space);
    return true;
}

static bool t_txbatch_copy_and_refuse(void)
{
    struct dn2f_txbatch b;
    static uint8_t big[60000];
    uint8_t one[64];
    unsigned i;

    CHECK(dn2f_txbatch_init(&b, -1) == 0, "init");
    /* copied datagrams: the caller's buffer is reused at once */
    fake_reset(&b, NULL, 0);
    for (i = 0; i < 10; i++) {
        txb_add(&b, i, 8, false, one);          /* same buffer each time */
    }
    CHECK(b.n == 10 && fk.n == 0, "nothing sent before the flush (%u sent)", fk.n);
    dn2f_txbatch_flush(&b);
    if (!txb_check_order(10, 1)) {
        return false;
    }
    /* stable datagrams are referenced, not copied */
    txb_add(&b, 0, 8, true, one);
    CHECK(b.iov[0].iov_base == one && b.arena_used == 0, "stable: referenced");
    dn2f_txbatch_flush(&b);
    /* the arena fills at ~17 datagrams of 60000: flushed early, in order */
    fake_reset(&b, NULL, 0);
    memset(&b.st, 0, sizeof(b.st));
    for (i = 0; i < 40; i++) {
        txb_add(&b, i, sizeof(big), false, big);
    }
    dn2f_txbatch_flush(&b);
    CHECK(b.st.flushes == 3 && fk.n == 40, "flushes %llu, %u sent",
          (unsigned long long)b.st.flushes, fk.n);
    if (!txb_check_order(40, 1)) {
        return false;
    }
    /* one datagram refused by the kernel: skipped, the rest sent in order */
    fake_reset(&b, NULL, 0);
    fk.refuse_id = 5;
    memset(&b.st, 0, sizeof(b.st));
    for (i = 0; i < 12; i++) {
        txb_add(&b, i, 8, false, one);
    }
    dn2f_txbatch_flush(&b);
    CHECK(fk.n == 11 && b.st.errors == 1 && b.st.sent == 11, "%u sent, %llu errors", fk.n,
          (unsigned long long)b.st.errors);
    for (i = 0; i < fk.n; i++) {
        CHECK(fk.id[i] == (i < 5 ? i : i + 1), "datagram %u: id %u", i, fk.id[i]);
    }
    /* a socket stuck full: bounded waits, then the rest is counted, no hang */
    {
        int stuck[DN2F_TXB_WAITS + 2];
        for (i = 0; i < DN2F_TXB_WAITS + 2; i++) {
            stuck[i] = -EAGAIN;
        }
        fake_reset(&b, stuck, DN2F_TXB_WAITS + 2);
        memset(&b.st, 0, sizeof(b.st));
        for (i = 0; i < 5; i++) {
            txb_add(&b, i, 8, false, one);
        }
        dn2f_txbatch_flush(&b);
        CHECK(fk.n == 0 && b.st.errors == 5 && fk.waits == DN2F_TXB_WAITS && b.n == 0,
              "%u sent, %llu errors, %u waits", fk.n, (unsigned long long)b.st.errors, fk.waits);
    }
    dn2f_txbatch_destroy(&b);
    return true;
}

/* The real sendmmsg() on 127.0.0.1: two receivers, 300 datagrams
 * interleaved, some of 60000 bytes (the arena flushes early): each
 * receiver gets its own, in order, byte-exact. */
static bool t_txbatch_udp(void)
{
    struct dn2f_addr la, ra[2];
    struct dn2f_txbatch b;
    int fd, rfd[2], i;
    unsigned next[2] = { 0, 0 };
    static uint8_t buf[60000], rb[65536];

    dn2f_addr_parse(&la, "127.0.0.1:0");
    fd = dn2f_udp_open(&la, 4 << 20);
    CHECK(fd >= 0, "socket: %s", strerror(-fd));
    for (i = 0; i < 2; i++) {
        dn2f_addr_parse(&ra[i], "127.0.0.1:0");
        rfd[i] = dn2f_udp_open(&ra[i], 8 << 20);
        CHECK(rfd[i] >= 0, "socket: %s", strerror(-rfd[i]));
    }
    CHECK(dn2f_txbatch_init(&b, fd) == 0, "init");
    for (i = 0; i < 300; i++) {
        uint32_t id = (uint32_t)i;
        size_t len = i % 50 == 7 ? sizeof(buf) : 100 + (size_t)i;
        memset(buf, (int)(i & 0xff), len);
        memcpy(buf, &id, 4);
        dn2f_txbatch_add(&b, &ra[i % 2], buf, len, false);
        if (i % 100 == 99) {
            dn2f_txbatch_flush(&b);
        }
    }
    dn2f_txbatch_flush(&b);
    CHECK(b.st.sent == 300 && b.st.errors == 0, "sent %llu errors %llu",
          (unsigned long long)b.st.sent, (unsigned long long)b.st.errors);
    for (i = 0; i < 2; i++) {
        for (;;) {
            struct pollfd p = { .fd = rfd[i], .events = POLLIN };
            ssize_t n;
            uint32_t id;
            size_t want, k;
            if (poll(&p, 1, 200) <= 0) {
                break;
            }
            n = recv(rfd[i], rb, sizeof(rb), 0);
            CHECK(n >= 4, "receiver %d: recv %zd", i, n);
            memcpy(&id, rb, 4);
            CHECK(id == next[i] * 2 + (unsigned)i, "receiver %d: datagram %u, expected %u", i,
                  id, next[i] * 2 + (unsigned)i);
            want = id % 50 == 7 ? sizeof(buf) : 100 + id;
            CHECK((size_t)n == want, "datagram %u: %zd bytes, expected %zu", id, n, want);
            for (k = 4; k < want; k++) {
                CHECK(rb[k] == (id & 0xff), "datagram %u: byte %zu wrong", id, k);
            }
            next[i]++;
        }
        CHECK(next[i] == 150, "receiver %d got %u of 150", i, next[i]);
        close(rfd[i]);
    }
    dn2f_txbatch_destroy(&b);
    close(fd);
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

/* ======================================================== virtual time */
static void vt_st32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
}

/* A VT datagram from a board (src 2) to the switch or the reverse. */
static size_t vt_ctrl(uint8_t *buf, unsigned type, const struct dn2f_vt_report *r,
                      const struct dn2f_vt_grant *g)
{
    struct dn2f_wbuf w;
    dn2f_wbuf_init(&w, buf, DN2F_DGRAM_MAX);
    if (type == DN2F_T_VT_REPORT) {
        dn2f_put_hdr(&w, type, 0, 2, 0, 0x1111, 0x2222);
        dn2f_put_vt_report(&w, r);
    } else {
        dn2f_put_hdr(&w, type, 0, 0, 2, 0x2222, 0x1111);
        dn2f_put_vt_grant(&w, g);
    }
    return dn2f_finish(&w);
}

/* A DATA datagram to LID 2 (or group 0xc005 for kind 1) with records of
 * the given kinds, each with VT when vt bit i is set. */
static size_t vt_data(uint8_t *buf, unsigned kind, unsigned rflags, unsigned nrec, unsigned vtmask)
{
    struct dn2f_wbuf w;
    struct dn2f_member mb[2] = {
        { .lid = 3, .seq = 9, .epoch = 0x33, .src_sess = 5, .dst_sess = 6 },
        { .lid = 4, .seq = 10, .epoch = 0x44, .src_sess = 7, .dst_sess = 8 },
    };
    uint8_t pkt[64];
    unsigned i;
    uint16_t dst = kind == DN2F_REC_UNICAST ? 2 : 0xc005;

    dn2f_wbuf_init(&w, buf, DN2F_DGRAM_MAX);
    dn2f_put_hdr(&w, DN2F_T_DATA, 0, 1, kind == DN2F_REC_MCAST_ORIGIN ? 0xc005 : 2, 0x11, 0x22);
    if (kind != DN2F_REC_MCAST_ORIGIN) {
        dn2f_hdr_set_sessions(&w, 1, 0);
    }
    for (i = 0; i < nrec; i++) {
        struct dn2f_rec r = {
            .kind = (uint8_t)kind, .seq = kind == DN2F_REC_MCAST_ORIGIN ? 0 : 40 + i,
            .after = 77 + i, .group = 0xc005, .nmemb = 2, .len = 37,
            .vtime = 0x0123456789abcdefULL + i, .vseq = 0xfedcba98u + i, .pkt = pkt,
        };
        r.rflags = (uint8_t)(rflags | (((vtmask >> i) & 1) ? DN2F_RF_VT : 0));
        fill_pkt(pkt, sizeof(pkt), dst, 1, 0, i);
        if (rflags & DN2F_RF_REQ) {
            set_type(pkt, DN2_OP_RVL);  /* the request lane's TYPE */
            r.len = 32;
        }
        if (!dn2f_put_record(&w, &r, mb)) {
            return 0;
        }
    }
    return dn2f_finish(&w);
}

static bool t_vt_wire(void)
{
    struct dn2f_vt_report r = { .rseq = 0x89abcdefu, .now = 0x1122334455667788ULL,
                                .earliest = 0x1122334455667799ULL };
    struct dn2f_vt_grant g = { .rseq = 0x01020304u, .horizon = 0xa1a2a3a4a5a6a7a8ULL,
                               .lookahead_ns = 0xb1b2b3b4u, .quantum_ns = 0xc1c2c3c4u,
                               .slowest = 0xd1d2d3d4d5d6d7d8ULL };
    static const unsigned kinds[] = { DN2F_REC_UNICAST, DN2F_REC_MCAST_ORIGIN,
                                      DN2F_REC_MCAST_COPY, DN2F_REC_UNICAST };
    struct dn2f_msg m;
    struct dn2f_iter it;
    struct dn2f_rec rec;
    size_t len;
    unsigned k, i, off;
    int rc;

    /* every field of the two new types */
    len = vt_ctrl(g_buf, DN2F_T_VT_REPORT, &r, NULL);
    CHECK(len == DN2F_HDR_LEN + DN2F_VT_REPORT_LEN, "report length %zu", len);
    rc = dn2f_decode(g_buf, len, &m);
    CHECK(rc == 0 && m.h.type == DN2F_T_VT_REPORT && m.u.vt_report.rseq == r.rseq &&
          m.u.vt_report.now == r.now && m.u.vt_report.earliest == r.earliest,
          "report round trip: %s", dn2f_strerror(rc));
    CHECK(!strcmp(dn2f_type_name(DN2F_T_VT_REPORT), "VT_REPORT") &&
          !strcmp(dn2f_type_name(DN2F_T_VT_GRANT), "VT_GRANT"), "type names");
    len = vt_ctrl(g_buf, DN2F_T_VT_GRANT, NULL, &g);
    CHECK(len == DN2F_HDR_LEN + DN2F_VT_GRANT_LEN, "grant length %zu", len);
    rc = dn2f_decode(g_buf, len, &m);
    CHECK(rc == 0 && m.u.vt_grant.rseq == g.rseq && m.u.vt_grant.horizon == g.horizon &&
          m.u.vt_grant.lookahead_ns == g.lookahead_ns && m.u.vt_grant.quantum_ns == g.quantum_ns &&
          m.u.vt_grant.slowest == g.slowest, "grant round trip: %s", dn2f_strerror(rc));

    /* malformed reports and grants: each byte of the zero fields, lengths,
     * earliest < now, the LIDs */
    for (off = 4; off < 8; off++) {
        len = vt_ctrl(g_buf, DN2F_T_VT_REPORT, &r, NULL);
        g_buf[DN2F_HDR_LEN + off] = 1;
        CHECK(dn2f_decode(g_buf, len, &m) == -DN2F_E_FLAGS, "report flags byte %u", off);
        len = vt_ctrl(g_buf, DN2F_T_VT_GRANT, NULL, &g);
        g_buf[DN2F_HDR_LEN + off] = 1;
        CHECK(dn2f_decode(g_buf, len, &m) == -DN2F_E_FLAGS, "grant flags byte %u", off);
    }
    for (off = 24; off < 32; off++) {
        len = vt_ctrl(g_buf, DN2F_T_VT_REPORT, &r, NULL);
        g_buf[DN2F_HDR_LEN + off] = 0x80;
        CHECK(dn2f_decode(g_buf, len, &m) == -DN2F_E_RESERVED, "report reserved byte %u", off);
        len = vt_ctrl(g_buf, DN2F_T_VT_GRANT, NULL, &g);
        g_buf[DN2F_HDR_LEN + off + 8] = 0x80;
        CHECK(dn2f_decode(g_buf, len, &m) == -DN2F_E_RESERVED, "grant reserved byte %u", off + 8);
    }
    r.earliest = r.now - 1;
    len = vt_ctrl(g_buf, DN2F_T_VT_REPORT, &r, NULL);
    CHECK(dn2f_decode(g_buf, len, &m) == -DN2F_E_FIELD, "earliest < now accepted");
    r.earliest = r.now;
    len = vt_ctrl(g_buf, DN2F_T_VT_REPORT, &r, NULL);
    CHECK(dn2f_decode(g_buf, len, &m) == 0, "earliest == now refused");
    g_buf[10] = 1;              /* dst LID: a report goes to the switch */
    CHECK(dn2f_decode(g_buf, len, &m) == -DN2F_E_FIELD, "report to a board accepted");
    len = vt_ctrl(g_buf, DN2F_T_VT_GRANT, NULL, &g);
    g_buf[8] = 1;               /* src LID: a grant comes from the switch */
    CHECK(dn2f_decode(g_buf, len, &m) == -DN2F_E_FIELD, "grant from a board accepted");
    len = vt_ctrl(g_buf, DN2F_T_VT_GRANT, NULL, &g);
    g_buf[11] = 0x0f;           /* dst LID 0x0f02: not assignable */
    CHECK(dn2f_decode(g_buf, len, &m) == -DN2F_E_FIELD, "grant to a bad LID accepted");
    for (k = 0; k < 2; k++) {
        unsigned type = k ? DN2F_T_VT_GRANT : DN2F_T_VT_REPORT;
        size_t full = vt_ctrl(g_buf, type, &r, &g);
        /* shorter and longer bodies, length field kept consistent */
        for (len = DN2F_HDR_LEN; len < full + 8; len += 4) {
            if (len == full) {
                continue;
            }
            vt_st32(g_buf + 12, (uint32_t)len);
            CHECK(dn2f_decode(g_buf, len, &m) < 0, "%s of %zu bytes accepted",
                  dn2f_type_name(type), len);
        }
        vt_st32(g_buf + 12, (uint32_t)full);
        CHECK(dn2f_decode(g_buf, full - 1, &m) < 0, "cut %s accepted", dn2f_type_name(type));
    }

    /* VT records of every kind (and a request) round-trip */
    for (k = 0; k < 4; k++) {
        unsigned rf = k == 3 ? DN2F_RF_REQ : (k == 2 ? DN2F_RF_RETX : 0);
        len = vt_data(g_buf, kinds[k], rf, 2, 3);
        CHECK(len, "kind %u built", kinds[k]);
        rc = dn2f_decode(g_buf, len, &m);
        CHECK(rc == 0 && m.u.data.vt && m.u.data.nrecs == 2, "kind %u%s: %s", kinds[k],
              k == 3 ? " REQ" : "", dn2f_strerror(rc));
        dn2f_data_iter(&m, &it);
        for (i = 0; i < 2; i++) {
            CHECK(dn2f_data_next(&it, &rec), "record %u", i);
            CHECK(rec.kind == kinds[k] && (rec.rflags & DN2F_RF_VT) &&
                  rec.vtime == 0x0123456789abcdefULL + i && rec.vseq == 0xfedcba98u + i &&
                  rec.len == (k == 3 ? 32 : 37) &&
                  dn2f_pkt_dlid(rec.pkt) == (kinds[k] == DN2F_REC_UNICAST ? 2 : 0xc005),
                  "kind %u record %u fields", kinds[k], i);
            CHECK(k != 3 || rec.after == 77 + i, "after %u", rec.after);
            CHECK(k != 1 || (rec.nmemb == 2 && rec.group == 0xc005), "origin members");
            CHECK(k != 2 || (rec.seq == 40 + i && rec.group == 0xc005), "copy fields");
        }
        /* without VT: same records, 16 bytes each shorter, vt false */
        CHECK(vt_data(g_buf, kinds[k], rf, 2, 0) + 2 * DN2F_VT_LEN == len, "VT part size");
        CHECK(dn2f_decode(g_buf, len - 2 * DN2F_VT_LEN, &m) == 0 && !m.u.data.vt, "no VT");
        /* mixed: one record with VT, one without */
        len = vt_data(g_buf, kinds[k], rf, 2, 1);
        CHECK(dn2f_decode(g_buf, len, &m) == -DN2F_E_FIELD, "kind %u mixed accepted", kinds[k]);
        len = vt_data(g_buf, kinds[k], rf, 2, 2);
        CHECK(dn2f_decode(g_buf, len, &m) == -DN2F_E_FIELD, "kind %u mixed (2) accepted",
              kinds[k]);
        /* the VT part's reserved word, and every cut through the record */
        len = vt_data(g_buf, kinds[k], rf, 1, 1);
        for (off = 0; off < 4; off++) {
            size_t at = len - (size_t)(k == 3 ? 32 : 40) - 4 + off;
            g_buf[at] = 1;
            CHECK(dn2f_decode(g_buf, len, &m) == -DN2F_E_RESERVED, "kind %u VT reserved byte %u",
                  kinds[k], off);
            g_buf[at] = 0;
        }
        for (off = DN2F_HDR_LEN + DN2F_DATA_TS_LEN + 1; off < len; off++) {
            vt_st32(g_buf + 12, (uint32_t)off);
            CHECK(dn2f_decode(g_buf, off, &m) < 0, "kind %u cut at %u accepted", kinds[k], off);
        }
    }
    /* a switch-built copy of a VT origin keeps the VT part (dn2fab-sw-fwd.c
     * does it the same way: the record with kind 2 and the member's seq) */
    len = vt_data(g_buf, DN2F_REC_MCAST_ORIGIN, 0, 1, 1);
    CHECK(dn2f_decode(g_buf, len, &m) == 0, "origin");
    dn2f_data_iter(&m, &it);
    CHECK(dn2f_data_next(&it, &rec), "origin record");
    {
        static uint8_t out[256];
        struct dn2f_wbuf w;
        struct dn2f_rec c = rec;
        struct dn2f_msg m2;
        struct dn2f_rec r2;
        c.kind = DN2F_REC_MCAST_COPY;
        c.seq = 9;
        c.nmemb = 0;
        dn2f_wbuf_init(&w, out, sizeof(out));
        dn2f_put_hdr(&w, DN2F_T_DATA, 0, 1, 3, 0x11, 0x33);
        dn2f_hdr_set_sessions(&w, 5, 6);
        CHECK(dn2f_put_record(&w, &c, NULL), "copy built");
        len = dn2f_finish(&w);
        CHECK(dn2f_decode(out, len, &m2) == 0 && m2.u.data.vt, "copy decodes");
        dn2f_data_iter(&m2, &it);
        CHECK(dn2f_data_next(&it, &r2) && r2.kind == DN2F_REC_MCAST_COPY && r2.seq == 9 &&
              r2.vtime == rec.vtime && r2.vseq == rec.vseq, "copy keeps vtime / vseq");
    }
    /* STATS_RESP with the virtual-time block */
    {
        struct dn2f_wbuf w;
        struct dn2f_swsummary s = { .route_mode = DN2F_ROUTE_SWITCH, .vt = true,
                                    .vt_boards = 0x01020304u, .vt_reports = 0x1111111122222222ULL,
                                    .vt_grants = 0x3333333344444444ULL,
                                    .vt_time = 0x5555555566666666ULL };
        struct dn2f_portstat ps = { .lid = 7, .state = 1, .guid = 0x99, .retx = 5 };
        struct dn2f_portstat ps2;
        dn2f_wbuf_init(&w, g_buf, DN2F_DGRAM_MAX);
        dn2f_put_hdr(&w, DN2F_T_STATS_RESP, 0, 0, 0, 1, 0);
        dn2f_put_stats_hdr(&w, 5, 0, 1, 1, &s);
        dn2f_put_stats_vt(&w, &s);
        dn2f_put_portstat(&w, &ps);
        len = dn2f_finish(&w);
        rc = dn2f_decode(g_buf, len, &m);
        CHECK(rc == 0 && m.u.stats.sum.vt && m.u.stats.sum.vt_boards == s.vt_boards &&
              m.u.stats.sum.vt_reports == s.vt_reports && m.u.stats.sum.vt_grants == s.vt_grants &&
              m.u.stats.sum.vt_time == s.vt_time, "stats VT block: %s", dn2f_strerror(rc));
        dn2f_stats_iter(&m, &it);
        CHECK(dn2f_stats_next(&it, &ps2) && ps2.lid == 7 && ps2.guid == 0x99 && ps2.retx == 5,
              "port after the VT block");
        g_buf[DN2F_HDR_LEN + DN2F_STATS_HDR_LEN + 28] = 1;
        CHECK(dn2f_decode(g_buf, len, &m) == -DN2F_E_RESERVED, "stats VT reserved");
        g_buf[DN2F_HDR_LEN + DN2F_STATS_HDR_LEN + 28] = 0;
        g_buf[DN2F_HDR_LEN + 11] = 3;
        CHECK(dn2f_decode(g_buf, len, &m) == -DN2F_E_FLAGS, "stats unknown flag");
        g_buf[DN2F_HDR_LEN + 11] = 0;
        CHECK(dn2f_decode(g_buf, len, &m) < 0, "VT block without its flag accepted");
    }
    return true;
}

/* The grant formula, by hand and against the O(N^2) definition. */
static bool vt_check_grants(const uint64_t *e, unsigned n, uint64_t l, uint64_t q,
                            const uint64_t *want, const char *what)
{
    uint64_t g[8];
    unsigned i;
    dn2f_vt_grants(e, n, l, q, g);
    for (i = 0; i < n; i++) {
        CHECK(g[i] == want[i], "%s: G_%u = %llu, want %llu", what, i,
              (unsigned long long)g[i], (unsigned long long)want[i]);
    }
    return true;
}

static bool t_vt_formula(void)
{
    static const uint64_t e1[] = { 5000 }, w1[] = { DN2F_VT_INFINITY };
    static const uint64_t e2[] = { 100, 500 }, w2[] = { 1500, 1100 };
    static const uint64_t e3[] = { 100, 1000000000 }, w3[] = { 2100, 1100 };
    static const uint64_t e4[] = { 0, 300, 5000 }, w4[] = { 1300, 1000, 1000 };
    static const uint64_t e5[] = { 100, 500 }, w5[] = { 1536, 1536 };
    static const uint64_t e6[] = { 700, 700 }, w6[] = { 1700, 1700 };
    static const uint64_t e7[] = { 0, 300 }, w7[] = { 1300, 1000 };    /* e4 without board 2 */
    static const uint64_t e8[] = { DN2F_VT_INFINITY, DN2F_VT_INFINITY },
                          w8[] = { DN2F_VT_INFINITY, DN2F_VT_INFINITY };
    struct dn2f_rng rng;
    unsigned t, n, i, j, k;

    if (!vt_check_grants(e1, 1, 1000, 0, w1, "one board") ||
        !vt_check_grants(e2, 2, 1000, 0, w2, "two running boards") ||
        !vt_check_grants(e3, 2, 1000, 0, w3, "an idle board with a far timer") ||
        !vt_check_grants(e4, 3, 1000, 0, w4, "three boards") ||
        !vt_check_grants(e5, 2, 1000, 512, w5, "quantum 512") ||
        !vt_check_grants(e6, 2, 1000, 0, w6, "a tie") ||
        !vt_check_grants(e7, 2, 1000, 0, w7, "board 2 left") ||
        !vt_check_grants(e8, 2, 1000, 7, w8, "all idle forever")) {
        return false;
    }
    CHECK(dn2f_vt_d(1, 1000, 1) == 1001 && dn2f_vt_d(24, 1000, 1024) == 1024 &&
          dn2f_vt_d(25, 1000, 1024) == 2048 && dn2f_vt_d(UINT64_MAX - 5, 1000, 0) == UINT64_MAX &&
          dn2f_vt_d(UINT64_MAX - 1500, 1000, 1024) == UINT64_MAX, "D()");
    /* O(N) equals the definition on random sets with ties */
    dn2f_rng_seed(&rng, 99);
    for (t = 0; t < 2000; t++) {
        uint64_t e[8], g[8], s[8], l = 1 + dn2f_rng_next(&rng) % 3000;
        uint64_t q = dn2f_rng_next(&rng) % 3 ? 0 : dn2f_rng_next(&rng) % 700;
        n = 2 + (unsigned)(dn2f_rng_next(&rng) % 7);
        for (i = 0; i < n; i++) {
            e[i] = dn2f_rng_next(&rng) % 5 == 0 ? DN2F_VT_INFINITY
                                                : dn2f_rng_next(&rng) % 20 * 250;
        }
        dn2f_vt_grants(e, n, l, q, g);
        for (i = 0; i < n; i++) {
            s[i] = e[i];
            for (k = 0; k < n; k++) {
                if (k != i && dn2f_vt_d(e[k], l, q) < s[i]) {
                    s[i] = dn2f_vt_d(e[k], l, q);
                }
            }
        }
        for (j = 0; j < n; j++) {
            uint64_t want = DN2F_VT_INFINITY;
            for (i = 0; i < n; i++) {
                if (i != j && dn2f_vt_d(s[i], l, q) < want) {
                    want = dn2f_vt_d(s[i], l, q);
                }
            }
            CHECK(g[j] == want, "random set %u: G_%u %llu, definition %llu", t, j,
                  (unsigned long long)g[j], (unsigned long long)want);
        }
    }
    return true;
}

/* ---------------------------------------------- a virtual-time board model
 * Each board runs a deterministic program in virtual time: it starts
 * VT_TOKENS tokens at fixed virtual times; each delivered token (vtime v,
 * hop h) is logged and, while h < VT_HOPS, sent on at clock v to the next
 * board chosen from its contents, with vtime v + L + a delay from its
 * contents.  The board processes its events in (vtime, source LID, vseq)
 * order, only below its horizon, and reports when it has to wait: its
 * clock, and as earliest its clock (g_vt_idle 0: a board whose vCPU runs)
 * or its next event, a token to start or the first queued delivery
 * (g_vt_idle 1: an idle board's promise, as the device makes it).  A
 * packet that arrives below the promise makes it send a lowering report
 * (the same now, earliest = the packet's vtime) at once.  Optionally a last
 * timer event at g_vt_end.  The logs must be the same whatever the network
 * does, and no packet may arrive below its receiver's clock. */
#define VT_BOARDS_MAX 4
#define VT_TOKENS 3
#define VT_HOPS 16
#define VT_L 1000
#define VT_LOG_MAX 512

struct vt_ev { uint64_t vtime; uint16_t slid; uint32_t vseq; uint32_t hop, id; };

/* the program (vt_program() sets it; vt_clear() does not touch it) */
static unsigned g_vt_tokens = VT_TOKENS, g_vt_hops = VT_HOPS;
static uint64_t g_vt_tok_base, g_vt_tok_step = 7000;
static uint64_t g_vt_end;               /* a last timer event (0 = none) */
static bool g_vt_idle;                  /* idle promises (earliest = next event) */

struct vt_board {
    bool on;
    uint64_t vnow;
    uint32_t vseq;
    unsigned started;                   /* tokens started */
    struct vt_ev q[256];                /* delivered, not processed: sorted */
    unsigned nq;
    struct vt_ev out[64];               /* to send (the endpoint said -EAGAIN) */
    uint16_t out_dst[64];
    unsigned nout;
    uint32_t last_vseq[4096];           /* per source: increasing */
    bool seen[4096];
    struct vt_ev log[VT_LOG_MAX];
    unsigned nlog;
    bool error;
    char err[160];
    uint64_t grants_cb;
    bool r_have;                        /* the last report: (r_now, r_e) */
    uint64_t r_now, r_e;
    unsigned lowerings;
    bool ended;                         /* the g_vt_end event ran */
};
static struct vt_board g_vtb[MAX_NODES];
static unsigned g_vt_n;                 /* boards 1..g_vt_n */
static unsigned g_vt_total;             /* deliveries logged, all boards */
static uint64_t g_vt_quantum;

static void vt_fail(struct vt_board *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void vt_fail(struct vt_board *b, const char *fmt, ...)
{
    va_list ap;
    if (b->error) {
        return;
    }
    b->error = true;
    va_start(ap, fmt);
    vsnprintf(b->err, sizeof(b->err), fmt, ap);
    va_end(ap);
}

static uint64_t vt_ceil(uint64_t t)
{
    return g_vt_quantum > 1 ? (t + g_vt_quantum - 1) / g_vt_quantum * g_vt_quantum : t;
}

static bool vt_ev_less(const struct vt_ev *a, const struct vt_ev *b)
{
    if (a->vtime != b->vtime) {
        return a->vtime < b->vtime;
    }
    if (a->slid != b->slid) {
        return a->slid < b->slid;
    }
    return a->vseq < b->vseq;
}

static int vt_deliver_vt(void *o, uint16_t slid, const uint8_t *pkt, size_t len,
                         uint64_t vtime, uint32_t vseq)
{
    struct node *nd = o;
    struct vt_board *b = &g_vtb[nd->idx];
    struct vt_ev e;
    uint64_t pv;
    uint32_t ps;
    unsigned i;

    if (len < 40) {
        vt_fail(b, "short packet");
        return -EINVAL;
    }
    memcpy(&pv, pkt + 16, 8);
    memcpy(&ps, pkt + 24, 4);
    if (pv != vtime || ps != vseq) {
        vt_fail(b, "vtime/vseq %llu/%u, the packet says %llu/%u", (unsigned long long)vtime,
                vseq, (unsigned long long)pv, ps);
    }
    if (b->seen[slid] && (int32_t)(vseq - b->last_vseq[slid]) <= 0) {
        vt_fail(b, "from 0x%x vseq %u after %u: not in order", slid, vseq, b->last_vseq[slid]);
    }
    b->seen[slid] = true;
    b->last_vseq[slid] = vseq;
    if (vtime < b->vnow) {
        vt_fail(b, "packet from 0x%x at vtime %llu arrived at clock %llu: causality", slid,
                (unsigned long long)vtime, (unsigned long long)b->vnow);
    }
    if (b->r_have && vtime < b->r_e && vtime >= b->r_now) {
        /* it wakes us before our promise: lower it, at once */
        b->r_e = vtime;
        b->lowerings++;
        if (dn2f_ep_vt_report(nd->ep, b->r_now, vtime)) {
            vt_fail(b, "lowering report refused");
        }
    }
    if (b->nq == sizeof(b->q) / sizeof(b->q[0])) {
        return -EBUSY;
    }
    e.vtime = vtime;
    e.slid = slid;
    e.vseq = vseq;
    memcpy(&e.hop, pkt + 28, 4);
    memcpy(&e.id, pkt + 32, 4);
    for (i = b->nq; i > 0 && vt_ev_less(&e, &b->q[i - 1]); i--) {
        b->q[i] = b->q[i - 1];
    }
    b->q[i] = e;
    b->nq++;
    return 0;
}

static int vt_deliver_plain(void *o, uint16_t slid, const uint8_t *pkt, size_t len)
{
    struct node *nd = o;
    (void)slid; (void)pkt; (void)len;
    vt_fail(&g_vtb[nd->idx], "a packet without virtual time");
    return -EINVAL;
}

static void vt_grant_cb(void *o, uint64_t horizon, uint32_t l, uint32_t q, uint64_t slowest)
{
    struct node *nd = o;
    (void)horizon; (void)slowest;
    g_vtb[nd->idx].grants_cb++;
    if (l != VT_L || q != g_vt_quantum) {
        vt_fail(&g_vtb[nd->idx], "grant says L %u Q %u", l, q);
    }
}

static const struct dn2f_ep_ops vt_ep_ops = {
    .now_ns = s_now, .send_datagram = s_send, .deliver = vt_deliver_plain, .link_state = s_link,
    .deliver_vt = vt_deliver_vt, .vt_grant = vt_grant_cb,
};

static void vt_queue_send(struct node *nd, uint16_t dst, uint64_t vtime, uint32_t hop, uint32_t id)
{
    struct vt_board *b = &g_vtb[nd->idx];
    struct vt_ev e = { .vtime = vtime, .vseq = b->vseq++, .hop = hop, .id = id };
    if (b->nout == 64) {
        vt_fail(b, "send queue full");
        return;
    }
    b->out[b->nout] = e;
    b->out_dst[b->nout++] = dst;
}

static void vt_flush_out(struct node *nd)
{
    struct vt_board *b = &g_vtb[nd->idx];
    uint16_t me = dn2f_ep_lid(nd->ep);
    unsigned i;

    while (b->nout) {
        uint8_t pkt[40];
        struct vt_ev *e = &b->out[0];
        int rc;
        fill_pkt(pkt, sizeof(pkt), b->out_dst[0], me, 0, e->vseq);
        memcpy(pkt + 16, &e->vtime, 8);
        memcpy(pkt + 24, &e->vseq, 4);
        memcpy(pkt + 28, &e->hop, 4);
        memcpy(pkt + 32, &e->id, 4);
        rc = dn2f_ep_send_vt(nd->ep, b->out_dst[0], pkt, sizeof(pkt), e->vtime, e->vseq);
        if (rc == -EAGAIN) {
            break;
        }
        if (rc) {
            vt_fail(b, "send_vt: %d", rc);
        }
        for (i = 1; i < b->nout; i++) {
            b->out[i - 1] = b->out[i];
            b->out_dst[i - 1] = b->out_dst[i];
        }
        b->nout--;
    }
    dn2f_ep_flush(nd->ep);
}

/* Board k's boards are at nodes 1..g_vt_n with LID = node index (lid hint). */
static uint64_t vt_token_time(unsigned idx, unsigned t)
{
    return g_vt_tok_base + g_vt_tok_step * t + 137ULL * idx;
}

/* A report as the board makes it (remembered for lowering). */
static void vt_board_report(struct node *nd, uint64_t vnow, uint64_t earliest)
{
    struct vt_board *b = &g_vtb[nd->idx];
    b->r_have = true;
    b->r_now = vnow;
    b->r_e = earliest;
    if (dn2f_ep_vt_report(nd->ep, vnow, earliest)) {
        vt_fail(b, "report (%llu, %llu) refused", (unsigned long long)vnow,
                (unsigned long long)earliest);
    }
}

static void vt_pump(struct node *nd)
{
    struct vt_board *b = &g_vtb[nd->idx];

    for (;;) {
        uint64_t g, next = DN2F_VT_INFINITY, tt = DN2F_VT_INFINITY;
        vt_flush_out(nd);
        if (b->nout) {
            return;             /* no report while packets wait to go out */
        }
        g = dn2f_ep_vt_horizon(nd->ep);
        if (b->started < g_vt_tokens) {
            tt = vt_token_time((unsigned)nd->idx, b->started);
        } else if (g_vt_end && !b->ended) {
            tt = g_vt_end;
        }
        next = tt;
        if (b->nq && b->q[0].vtime < next) {
            next = b->q[0].vtime;
        }
        if (next < g) {
            b->vnow = next;
            if (next == tt && b->started >= g_vt_tokens && (!b->nq || tt < b->q[0].vtime)) {
                b->ended = true;        /* the last timer event */
            } else if (next == tt && (!b->nq || tt < b->q[0].vtime)) {
                uint32_t id = (uint32_t)(nd->idx * 100 + b->started);
                unsigned to = 1 + (unsigned)(nd->idx + b->started) % g_vt_n;
                if (to == (unsigned)nd->idx) {
                    to = 1 + to % g_vt_n;
                }
                b->started++;
                vt_queue_send(nd, (uint16_t)to, vt_ceil(b->vnow + VT_L), 0, id);
            } else {
                struct vt_ev e = b->q[0];
                unsigned i;
                for (i = 1; i < b->nq; i++) {
                    b->q[i - 1] = b->q[i];
                }
                b->nq--;
                if (b->nlog < VT_LOG_MAX) {
                    b->log[b->nlog++] = e;
                }
                g_vt_total++;
                if (e.hop + 1 < g_vt_hops) {
                    uint32_t h = e.id * 2654435761u ^ e.hop * 40503u;
                    unsigned to = 1 + h % g_vt_n;
                    if (to == (unsigned)nd->idx) {
                        to = 1 + to % g_vt_n;
                    }
                    vt_queue_send(nd, (uint16_t)to, vt_ceil(b->vnow + VT_L + (h >> 8) % 3000),
                                  e.hop + 1, e.id);
                }
            }
            continue;
        }
        if (g > b->vnow && g != DN2F_VT_INFINITY) {
            b->vnow = g;        /* the clock runs to the horizon */
        }
        /* earliest = now (a board whose vCPU runs), or the next event (an
         * idle board: a packet that arrives below it lowers it) */
        vt_board_report(nd, b->vnow, g_vt_idle && next > b->vnow ? next : b->vnow);
        return;
    }
}

static bool vt_on(int idx)
{
    return idx >= 0 && idx < MAX_NODES && g_vtb[idx].on;
}

static void vt_clear(void)
{
    memset(g_vtb, 0, sizeof(g_vtb));
    g_vt_total = 0;
}

static int vt_model_deliver(struct node *nd, uint16_t slid, const uint8_t *pkt, size_t len)
{
    return vt_deliver_plain(nd, slid, pkt, len);
}

static const struct sim_model vt_model = {
    .on = vt_on, .deliver = vt_model_deliver, .pump = vt_pump, .clear = vt_clear,
};

static bool cond_vt_done(void)
{
    unsigned i;
    for (i = 1; i <= g_vt_n; i++) {
        if (g_vtb[i].error) {
            return true;
        }
    }
    if (g_vt_total != g_vt_n * g_vt_tokens * g_vt_hops) {
        return false;
    }
    for (i = 1; i <= g_vt_n && g_vt_end; i++) {
        if (!g_vtb[i].ended) {
            return false;
        }
    }
    return true;
}

/* The program: tokens per board from base every step, hops, a last timer
 * event, idle promises; vt_program_default() is the one the tests began with. */
static void vt_program(unsigned tokens, uint64_t base, uint64_t step, unsigned hops,
                       uint64_t end, bool idle)
{
    g_vt_tokens = tokens;
    g_vt_tok_base = base;
    g_vt_tok_step = step;
    g_vt_hops = hops;
    g_vt_end = end;
    g_vt_idle = idle;
}

static void vt_program_default(void)
{
    vt_program(VT_TOKENS, 0, 7000, VT_HOPS, 0, false);
}

/* The switch in virtual-time mode as node 0, boards 1..n with LID i. */
static void vt_setup(unsigned n, uint64_t seed, double faults, int route, uint64_t quantum)
{
    struct dn2f_sw_config c;
    struct node *nd = &sim.nodes[0];
    unsigned i;

    sim_reset(seed, faults, faults, faults);
    dn2f_sw_config_default(&c);
    c.route_mode = route;
    c.seed = seed;
    c.vt = true;
    c.vt_boards = n;
    c.vt_lookahead_ns = VT_L;
    c.vt_quantum_ns = (uint32_t)quantum;
    nd->used = nd->alive = true;
    nd->idx = 0;
    mkaddr(&nd->addr, 0);
    nd->sw = dn2f_sw_new(&c, &sw_ops, nd);
    sim.sw_node = 0;
    g_vt_n = n;
    g_vt_quantum = quantum;
    for (i = 1; i <= n; i++) {
        struct dn2f_ep_config ec = ep_cfg((int)i);
        struct node *b = &sim.nodes[i];
        ec.vtime = true;
        ec.lid_hint = (uint16_t)i;
        ec.ack_delay_ns = 50000;        /* vtime must override it */
        b->used = b->alive = true;
        b->idx = (int)i;
        mkaddr(&b->addr, (int)i);
        b->ep = dn2f_ep_new(&ec, &vt_ep_ops, b);
        g_vtb[i].on = true;
    }
}

static void vt_report_hook(int from, int to, const uint8_t *buf, size_t len, uint64_t *extra);
static void (*g_vt_run_hook)(int from, int to, const uint8_t *buf, size_t len, uint64_t *extra);

/* One run; its logs (receiver, vtime, source, vseq) into out. */
static bool vt_run(unsigned n, uint64_t seed, double faults, int route, uint64_t quantum,
                   struct vt_ev (*out)[VT_LOG_MAX], unsigned *nout, uint64_t *retries)
{
    const struct dn2f_sw_vt_stats *vs;
    struct dn2f_sw_vt_stats s;
    unsigned i;
    uint64_t tx = 0;

    vt_setup(n, seed, faults, route, quantum);
    g_send_hook = g_vt_run_hook;
    CHECK(sim_run(cond_vt_done, 3600ULL * 1000000000ULL), "not done: %u of %u deliveries "
          "(seed %llu)", g_vt_total, n * g_vt_tokens * g_vt_hops, (unsigned long long)seed);
    for (i = 1; i <= n; i++) {
        CHECK(!g_vtb[i].error, "board %u: %s", i, g_vtb[i].err);
        memcpy(out[i], g_vtb[i].log, sizeof(g_vtb[i].log));
        nout[i] = g_vtb[i].nlog;
        tx += dn2f_ep_stats(EP((int)i))->vt_reports_tx;
        CHECK(dn2f_ep_stats(EP((int)i))->vt_pkts_rx == g_vtb[i].nlog + g_vtb[i].nq,
              "board %u: %llu vt packets delivered, %u logged", i,
              (unsigned long long)dn2f_ep_stats(EP((int)i))->vt_pkts_rx, g_vtb[i].nlog);
        CHECK(g_vtb[i].grants_cb > 0, "board %u: no vt_grant callback", i);
    }
    dn2f_sw_vt_stats(sim.nodes[0].sw, &s);
    vs = &s;
    *retries = tx - vs->reports - vs->stale_reports;
    fprintf(stderr, "#   seed %llu: %u deliveries, %llu s simulated, %llu reports "
            "(%llu sent: %llu duplicates at the switch), %llu grants\n",
            (unsigned long long)seed, g_vt_total, (unsigned long long)(sim.now / 1000000000ULL),
            (unsigned long long)vs->reports, (unsigned long long)tx,
            (unsigned long long)vs->dup_reports, (unsigned long long)vs->grants);
    return true;
}

static struct vt_ev g_vt_log_a[MAX_NODES][VT_LOG_MAX], g_vt_log_b[MAX_NODES][VT_LOG_MAX];

static bool vt_same(unsigned n, const struct vt_ev (*a)[VT_LOG_MAX], const unsigned *na,
                    const struct vt_ev (*b)[VT_LOG_MAX], const unsigned *nb)
{
    unsigned i, j;
    for (i = 1; i <= n; i++) {
        CHECK(na[i] == nb[i], "board %u: %u vs %u deliveries", i, na[i], nb[i]);
        for (j = 0; j < na[i]; j++) {
            CHECK(a[i][j].vtime == b[i][j].vtime && a[i][j].slid == b[i][j].slid &&
                  a[i][j].vseq == b[i][j].vseq, "board %u delivery %u: (%llu, 0x%x, %u) vs "
                  "(%llu, 0x%x, %u)", i, j, (unsigned long long)a[i][j].vtime, a[i][j].slid,
                  a[i][j].vseq, (unsigned long long)b[i][j].vtime, b[i][j].slid, b[i][j].vseq);
            CHECK(j == 0 || !vt_ev_less(&a[i][j], &a[i][j - 1]), "board %u: delivery %u out of "
                  "(vtime, source, vseq) order", i, j);
        }
    }
    return true;
}

/* Two and three boards, the same program under different faults: the same
 * deliveries at the same virtual times in the same order. */
static bool t_vt_deterministic(void)
{
    unsigned na[MAX_NODES], nb[MAX_NODES], n;
    uint64_t ra, rb;
    const struct sim_model *saved = sim_model;
    bool ok = false;

    sim_model = &vt_model;
    for (n = 2; n <= 3; n++) {
        if (!vt_run(n, 11, 0.0, DN2F_ROUTE_DIRECT, 0, g_vt_log_a, na, &ra) ||
            !vt_run(n, 12 + n, 0.1, DN2F_ROUTE_SWITCH, 0, g_vt_log_b, nb, &rb) ||
            !vt_same(n, (const struct vt_ev (*)[VT_LOG_MAX])g_vt_log_a, na,
                     (const struct vt_ev (*)[VT_LOG_MAX])g_vt_log_b, nb)) {
            goto out;
        }
        if (!vt_run(n, 99 + n, 0.1, DN2F_ROUTE_DIRECT, 0, g_vt_log_b, nb, &rb) ||
            !vt_same(n, (const struct vt_ev (*)[VT_LOG_MAX])g_vt_log_a, na,
                     (const struct vt_ev (*)[VT_LOG_MAX])g_vt_log_b, nb)) {
            goto out;
        }
        if (rb == 0) {
            tap_case_why("10%% loss and no report was ever re-sent");
            goto out;
        }
    }
    /* with a quantum: its own (coarser) result, again the same under faults */
    if (!vt_run(3, 5, 0.0, DN2F_ROUTE_DIRECT, 4096, g_vt_log_a, na, &ra) ||
        !vt_run(3, 6, 0.1, DN2F_ROUTE_SWITCH, 4096, g_vt_log_b, nb, &rb) ||
        !vt_same(3, (const struct vt_ev (*)[VT_LOG_MAX])g_vt_log_a, na,
                 (const struct vt_ev (*)[VT_LOG_MAX])g_vt_log_b, nb)) {
        goto out;
    }
    ok = true;
out:
    sim_reset(0, 0, 0, 0);
    sim_model = saved;
    return ok;
}

/* Every REPORT leaves only when nothing this board sent is unacknowledged
 * (its first transmission; re-sends repeat what was true then), under 10 %
 * drop / dup / reorder; reports are re-sent until granted.  A lowering
 * report may leave with packets unacknowledged when its earliest is at or
 * below the earliest of the board's previous report (its promise covers
 * them). */
static unsigned g_vt_bad_reports, g_vt_first_reports, g_vt_resent, g_vt_early_lowering;
static uint32_t g_vt_last_rseq[MAX_NODES];
static uint64_t g_vt_last_e[MAX_NODES];
static unsigned g_vt_new_reports[MAX_NODES];

static void vt_report_hook(int from, int to, const uint8_t *buf, size_t len, uint64_t *extra)
{
    struct dn2f_msg m;
    (void)to; (void)extra;
    if (len > 5 && buf[5] == DN2F_T_VT_REPORT && dn2f_decode(buf, len, &m) == 0) {
        if (m.u.vt_report.rseq != g_vt_last_rseq[from]) {
            g_vt_last_rseq[from] = m.u.vt_report.rseq;
            g_vt_first_reports++;
            g_vt_new_reports[from]++;
            if (dn2f_ep_unacked(sim.nodes[from].ep)) {
                if (g_vt_new_reports[from] > 1 && m.u.vt_report.earliest <= g_vt_last_e[from]) {
                    g_vt_early_lowering++;
                } else {
                    g_vt_bad_reports++;
                }
            }
            g_vt_last_e[from] = m.u.vt_report.earliest;
        } else {
            g_vt_resent++;
        }
    }
}

static void vt_hook_reset(void)
{
    g_vt_bad_reports = g_vt_first_reports = g_vt_resent = g_vt_early_lowering = 0;
    memset(g_vt_last_rseq, 0, sizeof(g_vt_last_rseq));
    memset(g_vt_last_e, 0, sizeof(g_vt_last_e));
    memset(g_vt_new_reports, 0, sizeof(g_vt_new_reports));
}

static bool t_vt_report_held(void)
{
    const struct sim_model *saved = sim_model;
    bool ok = false;
    unsigned i;
    uint64_t held = 0, probes = 0, dl;

    sim_model = &vt_model;
    vt_setup(3, 77, 0.1, DN2F_ROUTE_SWITCH, 0);
    vt_hook_reset();
    g_send_hook = vt_report_hook;
    if (!sim_run(cond_vt_done, 3600ULL * 1000000000ULL)) {
        tap_case_why("not done: %u deliveries", g_vt_total);
        goto out;
    }
    for (i = 1; i <= 3; i++) {
        if (g_vtb[i].error) {
            tap_case_why("board %u: %s", i, g_vtb[i].err);
            goto out;
        }
        held += dn2f_ep_stats(EP((int)i))->vt_reports_held;
        probes += dn2f_ep_stats(EP((int)i))->vt_ack_probes;
    }
    if (g_vt_bad_reports || !g_vt_first_reports || !held || !g_vt_resent) {
        tap_case_why("%u of %u reports left with packets unacknowledged; %llu held; %u re-sent",
             g_vt_bad_reports, g_vt_first_reports, (unsigned long long)held, g_vt_resent);
        goto out;
    }
    /* a report recorded now with a packet in flight waits for it: the
     * deadline includes the ACKREQ probe */
    {
        struct node *nd = &sim.nodes[1];
        uint8_t pkt[40];
        uint64_t before = dn2f_ep_stats(nd->ep)->vt_reports_tx;
        g_vtb[1].on = false;    /* the test drives board 1 by hand now */
        g_send_hook = NULL;
        sim.drop = 1.0;         /* nothing arrives: the ACK never comes */
        fill_pkt(pkt, sizeof(pkt), 2, 1, 0, 0);
        if (dn2f_ep_send_vt(nd->ep, 2, pkt, sizeof(pkt), DN2F_VT_INFINITY - 1, 12345) ||
            dn2f_ep_vt_report(nd->ep, g_vtb[1].vnow + 1, DN2F_VT_INFINITY) ||
            dn2f_ep_vt_report(nd->ep, 5, 4) != -EINVAL) {
            tap_case_why("send_vt / vt_report");
            goto out;
        }
        dn2f_ep_flush(nd->ep);
        dl = dn2f_ep_next_deadline(nd->ep);
        if (dn2f_ep_unacked(nd->ep) != 1 || dn2f_ep_stats(nd->ep)->vt_reports_tx != before ||
            dl > sim.now + 20000000ULL) {
            tap_case_why("held report: unacked %u, reports %llu -> %llu, deadline in %lld ns",
                 dn2f_ep_unacked(nd->ep), (unsigned long long)before,
                 (unsigned long long)dn2f_ep_stats(nd->ep)->vt_reports_tx,
                 (long long)(dl - sim.now));
            goto out;
        }
        sim_run(NULL, 100000000ULL);
        if (dn2f_ep_stats(nd->ep)->vt_ack_probes < 2 ||
            dn2f_ep_stats(nd->ep)->vt_reports_tx != before) {
            tap_case_why("100 ms without ACKs: %llu probes, %llu reports sent",
                 (unsigned long long)dn2f_ep_stats(nd->ep)->vt_ack_probes,
                 (unsigned long long)(dn2f_ep_stats(nd->ep)->vt_reports_tx - before));
            goto out;
        }
        sim.drop = 0;
        sim_run(NULL, 300000000ULL);
        if (dn2f_ep_unacked(nd->ep) || dn2f_ep_stats(nd->ep)->vt_reports_tx == before) {
            tap_case_why("the ACK came: unacked %u, report not sent", dn2f_ep_unacked(nd->ep));
            goto out;
        }
    }
    fprintf(stderr, "#   %u reports, every one sent with nothing unacknowledged; %llu waited "
            "for ACKs, %llu ACKREQ probes; %u re-sent until granted\n", g_vt_first_reports,
            (unsigned long long)held, (unsigned long long)probes, g_vt_resent);
    ok = true;
out:
    g_send_hook = NULL;
    sim_reset(0, 0, 0, 0);
    sim_model = saved;
    return ok;
}

/* The switch: grants held at 0 until the boards are up, the formula on the
 * live reports, duplicates answered, a board that leaves taken out. */
static bool t_vt_switch(void)
{
    const struct sim_model *saved = sim_model;
    struct dn2f_sw_vt_stats s;
    uint64_t vn, e, g[4], want[3];
    static const uint64_t ev[3] = { 0, 300, 5000 };
    bool ok = false;
    unsigned i;

    sim_model = &vt_model;
    vt_setup(3, 1, 0.0, DN2F_ROUTE_DIRECT, 0);
    for (i = 1; i <= 3; i++) {
        g_vtb[i].on = false;    /* reports by hand */
    }
    sim.nodes[3].alive = false;    /* the third board comes later */
    sim_run(NULL, 500000000ULL);
    if (dn2f_ep_link(EP(1)) != DN2F_LINK_UP || dn2f_ep_link(EP(2)) != DN2F_LINK_UP) {
        tap_case_why("boards not up");
        goto out;
    }
    dn2f_ep_vt_report(EP(1), 0, 0);
    dn2f_ep_vt_report(EP(2), 300, 300);
    sim_run(NULL, 50000000ULL);
    dn2f_sw_vt_stats(sim.nodes[0].sw, &s);
    if (s.started || dn2f_ep_vt_horizon(EP(1)) || dn2f_ep_vt_horizon(EP(2)) || s.grants < 2) {
        tap_case_why("2 of 3 boards: started %d, horizons %llu %llu, %llu grants", s.started,
             (unsigned long long)dn2f_ep_vt_horizon(EP(1)),
             (unsigned long long)dn2f_ep_vt_horizon(EP(2)), (unsigned long long)s.grants);
        goto out;
    }
    sim.nodes[3].alive = true;
    sim_run(NULL, 500000000ULL);
    dn2f_ep_vt_report(EP(3), 5000, 5000);
    sim_run(NULL, 50000000ULL);
    dn2f_vt_grants(ev, 3, VT_L, 0, want);
    /* boards 1 and 2 got grants when board 3 came (its E was 0 then): they
     * run, and get the rest at their next report; board 3 got its own */
    for (i = 1; i <= 3; i++) {
        if (!dn2f_sw_vt_port(sim.nodes[0].sw, (uint16_t)i, &vn, &e, &g[i]) ||
            g[i] != want[i - 1] || dn2f_ep_vt_horizon(EP((int)i)) > want[i - 1] ||
            (i == 3 && dn2f_ep_vt_horizon(EP((int)i)) != want[i - 1])) {
            tap_case_why("board %u: switch grant %llu, board horizon %llu, want %llu", i,
                 (unsigned long long)g[i], (unsigned long long)dn2f_ep_vt_horizon(EP((int)i)),
                 (unsigned long long)want[i - 1]);
            goto out;
        }
    }
    /* a duplicate REPORT (its answer lost) is answered with the current grant */
    {
        uint8_t buf[128];
        struct dn2f_wbuf w;
        struct dn2f_vt_report r = { .rseq = 1, .now = 300, .earliest = 300 };
        uint64_t before, dup0, stale0;
        dn2f_sw_vt_stats(sim.nodes[0].sw, &s);
        before = s.grants;
        dup0 = s.dup_reports;
        stale0 = s.stale_reports;
        dn2f_wbuf_init(&w, buf, sizeof(buf));
        dn2f_put_hdr(&w, DN2F_T_VT_REPORT, 0, 2, 0, dn2f_ep_epoch(EP(2)),
                     dn2f_sw_epoch(sim.nodes[0].sw));
        dn2f_put_vt_report(&w, &r);
        dn2f_sw_input(sim.nodes[0].sw, &sim.nodes[2].addr, buf, dn2f_finish(&w));
        r.rseq = 0;             /* older: ignored */
        dn2f_wbuf_init(&w, buf, sizeof(buf));
        dn2f_put_hdr(&w, DN2F_T_VT_REPORT, 0, 2, 0, dn2f_ep_epoch(EP(2)),
                     dn2f_sw_epoch(sim.nodes[0].sw));
        dn2f_put_vt_report(&w, &r);
        dn2f_sw_input(sim.nodes[0].sw, &sim.nodes[2].addr, buf, dn2f_finish(&w));
        dn2f_sw_vt_stats(sim.nodes[0].sw, &s);
        if (s.dup_reports != dup0 + 1 || s.stale_reports != stale0 + 1 ||
            s.grants != before + 1) {
            tap_case_why("duplicate +%llu stale +%llu grants +%llu",
                 (unsigned long long)(s.dup_reports - dup0),
                 (unsigned long long)(s.stale_reports - stale0),
                 (unsigned long long)(s.grants - before));
            goto out;
        }
    }
    /* board 3 leaves: boards 1 and 2 are granted as a pair (both wait) */
    dn2f_ep_free(EP(3));
    sim.nodes[3].ep = NULL;
    sim.nodes[3].used = false;
    sim_run(NULL, 50000000ULL);
    dn2f_sw_vt_stats(sim.nodes[0].sw, &s);
    dn2f_vt_grants(ev, 2, VT_L, 0, want);
    if (s.boards != 2 || !dn2f_sw_vt_port(sim.nodes[0].sw, 1, &vn, &e, &g[1]) ||
        !dn2f_sw_vt_port(sim.nodes[0].sw, 2, &vn, &e, &g[2]) || g[1] != want[0] ||
        g[2] != want[1]) {
        tap_case_why("after the leave: %u boards, grants %llu %llu, want %llu %llu", s.boards,
             (unsigned long long)g[1], (unsigned long long)g[2], (unsigned long long)want[0],
             (unsigned long long)want[1]);
        goto out;
    }
    /* grants never go down: board 1 reports an earlier earliest */
    dn2f_ep_vt_report(EP(1), 0, 10);
    dn2f_ep_vt_report(EP(2), 250, 250);
    sim_run(NULL, 50000000ULL);
    /* now E = (10, 250): the formula gives (1250, 1010); board 1 keeps 1300 */
    if (!dn2f_sw_vt_port(sim.nodes[0].sw, 1, &vn, &e, &g[1]) ||
        !dn2f_sw_vt_port(sim.nodes[0].sw, 2, &vn, &e, &g[2]) || g[1] != want[0] ||
        g[2] != 1010 || dn2f_ep_vt_horizon(EP(1)) != want[0] ||
        dn2f_ep_vt_horizon(EP(2)) != 1010) {
        tap_case_why("grants %llu %llu, horizons %llu %llu (want 1300 1010)", (unsigned long long)g[1],
             (unsigned long long)g[2], (unsigned long long)dn2f_ep_vt_horizon(EP(1)),
             (unsigned long long)dn2f_ep_vt_horizon(EP(2)));
        goto out;
    }
    ok = true;
out:
    sim_reset(0, 0, 0, 0);
    sim_model = saved;
    return ok;
}

/* ------------------------------------------------- idle promises, safely
 * An idle board promises its next event as earliest (> now).  A packet that
 * arrives below it makes a lowering report, sent at once, and the receiver
 * holds every ACK until the switch answered it: the sender reports only
 * after that ACK, so the switch never combines the sender's new promise
 * with the receiver's stale one (docs/fabric.md "Virtual time"). */
static void vt_delay_hook(int from, int to, const uint8_t *buf, size_t len, uint64_t *extra)
{
    struct dn2f_msg m;
    vt_report_hook(from, to, buf, len, extra);
    if (from == 1 && len > 5 && buf[5] == DN2F_T_VT_REPORT && dn2f_decode(buf, len, &m) == 0 &&
        m.u.vt_report.earliest < 5000) {
        *extra += 100000000ULL;         /* board 1's lowering report: 100 ms late */
    }
}

/* The case that broke causality: board 1 idle promises 5000; board 2 sends
 * it a packet with vtime 1100 and then promises 1e9; board 3 waits at its
 * horizon; board 1's lowering report is 100 ms late at the switch.  Without
 * the ACK hold board 2's report comes first, board 3 is granted D(5000) =
 * 6000, and board 1's packet sent at 1100 arrives at board 3 at 2100,
 * behind its clock.  With it board 3 gets exactly D(1100) = 2100. */
static bool t_vt_idle_stale_promise(void)
{
    const struct sim_model *saved = sim_model;
    const struct dn2f_ep_stats *st1;
    struct dn2f_sw_vt_stats s;
    uint64_t vn, e, g, h3;
    bool ok = false;
    unsigned i;

    sim_model = &vt_model;
    vt_program_default();
    vt_setup(3, 1, 0.0, DN2F_ROUTE_DIRECT, 0);
    for (i = 1; i <= 3; i++) {
        g_vtb[i].on = false;    /* driven by hand */
    }
    sim_run(NULL, 500000000ULL);
    for (i = 1; i <= 3; i++) {
        if (dn2f_ep_link(EP((int)i)) != DN2F_LINK_UP) {
            tap_case_why("board %u not up", i);
            goto out;
        }
    }
    g_send_hook = vt_delay_hook;
    vt_board_report(&sim.nodes[1], 0, 5000);
    vt_board_report(&sim.nodes[2], 0, 100);
    vt_board_report(&sim.nodes[3], 0, 1000000000ULL);
    sim_run(NULL, 50000000ULL);
    /* E = (5000, 100, 1e9): G = (1100, 2100, 1100) at the switch (boards 1
     * and 2 do not wait: they get theirs at their next report) */
    for (i = 1; i <= 3; i++) {
        static const uint64_t want[4] = { 0, 1100, 2100, 1100 };
        if (!dn2f_sw_vt_port(sim.nodes[0].sw, (uint16_t)i, &vn, &e, &g) || g != want[i] ||
            (i == 3 && dn2f_ep_vt_horizon(EP(3)) != 1100)) {
            tap_case_why("board %u: grant %llu, want %llu; board 3 horizon %llu", i,
                 (unsigned long long)g, (unsigned long long)want[i],
                 (unsigned long long)dn2f_ep_vt_horizon(EP(3)));
            goto out;
        }
    }
    g_vtb[3].vnow = 1100;       /* board 3 runs to its horizon and waits */
    vt_board_report(&sim.nodes[3], 1100, 1000000000ULL);
    g_vtb[2].vnow = 100;        /* board 2 at 100 sends to board 1, then idles */
    vt_queue_send(&sim.nodes[2], 1, 1100, 0, 42);
    vt_flush_out(&sim.nodes[2]);
    vt_hook_reset();
    vt_board_report(&sim.nodes[2], 100, 1000000000ULL);
    sim_run(NULL, 50000000ULL);
    /* board 1 has the packet and lowered its promise; the switch does not
     * have that yet, so board 1 holds the ACK and board 2 its report */
    st1 = dn2f_ep_stats(EP(1));
    if (g_vtb[1].nq != 1 || g_vtb[1].lowerings != 1 || st1->vt_lowering_reports != 1 ||
        st1->vt_ack_holds != 1 || dn2f_ep_unacked(EP(2)) != 1 ||
        !dn2f_sw_vt_port(sim.nodes[0].sw, 1, &vn, &e, &g) || e != 5000 ||
        !dn2f_sw_vt_port(sim.nodes[0].sw, 2, &vn, &e, &g) || e != 100) {
        tap_case_why("after 50 ms: board 1 queue %u, lowerings %u/%llu, holds %llu; board 2 unacked %u",
             g_vtb[1].nq, g_vtb[1].lowerings, (unsigned long long)st1->vt_lowering_reports,
             (unsigned long long)st1->vt_ack_holds, dn2f_ep_unacked(EP(2)));
        goto out;
    }
    if (g_vt_new_reports[1] != 1 || g_vt_new_reports[2] != 0 || g_vt_bad_reports) {
        tap_case_why("reports sent: board 1 %u (want 1: the lowering one, at once), board 2 %u (want "
             "0: held for its ACK); %u with packets unacked", g_vt_new_reports[1],
             g_vt_new_reports[2], g_vt_bad_reports);
        goto out;
    }
    sim_run(NULL, 300000000ULL);
    /* the switch took the lower earliest of the newer report, the hold
     * ended, the ACK went, board 2 reported */
    h3 = dn2f_ep_vt_horizon(EP(3));
    if (!dn2f_sw_vt_port(sim.nodes[0].sw, 1, &vn, &e, &g) || e != 1100 ||
        !dn2f_sw_vt_port(sim.nodes[0].sw, 2, &vn, &e, &g) || e != 1000000000ULL ||
        dn2f_ep_unacked(EP(2)) || st1->vt_ack_hold_ns < 100000000ULL || h3 != 2100) {
        tap_case_why("after 350 ms: switch E_1 %llu? board 2 unacked %u, hold %llu ns, board 3 "
             "horizon %llu (want 2100)", (unsigned long long)e, dn2f_ep_unacked(EP(2)),
             (unsigned long long)st1->vt_ack_hold_ns, (unsigned long long)h3);
        goto out;
    }
    /* board 1 runs to its packet and sends on; board 3 ran to its horizon */
    vt_board_report(&sim.nodes[1], 1100, 1100);
    sim_run(NULL, 50000000ULL);
    if (dn2f_ep_vt_horizon(EP(1)) <= 1100) {
        tap_case_why("board 1 horizon %llu", (unsigned long long)dn2f_ep_vt_horizon(EP(1)));
        goto out;
    }
    g_vtb[1].vnow = 1100;
    g_vtb[1].nq = 0;
    g_vtb[3].vnow = h3;
    vt_queue_send(&sim.nodes[1], 3, 1100 + VT_L, 1, 42);
    vt_flush_out(&sim.nodes[1]);
    sim_run(NULL, 50000000ULL);
    if (g_vtb[3].error || g_vtb[3].nq != 1) {
        tap_case_why("board 3: %s (queue %u)", g_vtb[3].error ? g_vtb[3].err : "no packet", g_vtb[3].nq);
        goto out;
    }
    dn2f_sw_vt_stats(sim.nodes[0].sw, &s);
    fprintf(stderr, "#   board 1's ACK held %.1f ms until its lowered promise was at the "
            "switch; board 3 granted %llu, the packet arrived at 2100\n",
            (double)st1->vt_ack_hold_ns / 1e6, (unsigned long long)h3);
    ok = true;
out:
    g_send_hook = NULL;
    sim_reset(0, 0, 0, 0);
    sim_model = saved;
    return ok;
}

/* The lowering report's paths, by hand on two boards:
 *  1. each board lowers while its own packet to the other is unacknowledged
 *     (each holds the ACK the other waits for): both lowering reports go at
 *     once, both holds end with their grants, both packets get ACKed;
 *  2. a lowering of a report still held for ACKs, above the last report
 *     the switch has: held like any report, no ACK hold;
 *  3. the switch may still hold a higher promise (the last report that went
 *     out is lost): the hold waits for that report's answer, and the report
 *     is re-sent until it comes. */
static bool t_vt_lowering_paths(void)
{
    const struct sim_model *saved = sim_model;
    uint64_t vn, e, g, holds, rx;
    bool ok = false;
    unsigned i;

    sim_model = &vt_model;
    vt_program_default();
    vt_setup(2, 3, 0.0, DN2F_ROUTE_DIRECT, 0);
    g_vtb[1].on = g_vtb[2].on = false;
    sim_run(NULL, 500000000ULL);
    if (dn2f_ep_link(EP(1)) != DN2F_LINK_UP || dn2f_ep_link(EP(2)) != DN2F_LINK_UP) {
        tap_case_why("boards not up");
        goto out;
    }
    vt_hook_reset();
    g_send_hook = vt_report_hook;
    /* 1 */
    vt_board_report(&sim.nodes[1], 0, 5000);
    vt_board_report(&sim.nodes[2], 0, 5000);
    sim_run(NULL, 50000000ULL);
    vt_queue_send(&sim.nodes[1], 2, 3000, 0, 1);
    vt_queue_send(&sim.nodes[2], 1, 3000, 0, 2);
    vt_flush_out(&sim.nodes[1]);
    vt_flush_out(&sim.nodes[2]);
    sim_run(NULL, 50000000ULL);
    for (i = 1; i <= 2; i++) {
        const struct dn2f_ep_stats *st = dn2f_ep_stats(EP((int)i));
        if (g_vtb[i].lowerings != 1 || st->vt_ack_holds != 1 || dn2f_ep_unacked(EP((int)i)) ||
            !dn2f_sw_vt_port(sim.nodes[0].sw, (uint16_t)i, &vn, &e, &g) || e != 3000) {
            tap_case_why("mutual: board %u lowerings %u holds %llu unacked %u, switch E %llu", i,
                 g_vtb[i].lowerings, (unsigned long long)st->vt_ack_holds,
                 dn2f_ep_unacked(EP((int)i)), (unsigned long long)e);
            goto out;
        }
    }
    if (g_vt_early_lowering != 2 || g_vt_bad_reports) {
        tap_case_why("mutual: %u lowering reports left before their board's ACKs (want 2), %u other "
             "reports with packets unacked", g_vt_early_lowering, g_vt_bad_reports);
        goto out;
    }
    g_vtb[1].nq = g_vtb[2].nq = 0;
    /* 2: board 1 at 4000, its packet unacknowledged (lost), then idle */
    vt_board_report(&sim.nodes[1], 4000, 4000);
    sim_run(NULL, 50000000ULL);
    sim.drop = 1.0;
    vt_queue_send(&sim.nodes[1], 2, 5000, 0, 3);
    vt_flush_out(&sim.nodes[1]);
    vt_board_report(&sim.nodes[1], 4000, 9000);
    holds = dn2f_ep_stats(EP(1))->vt_ack_holds;
    rx = g_vt_new_reports[1];
    vt_board_report(&sim.nodes[1], 4000, 6000);       /* lowers the held one */
    sim_run(NULL, 10000000ULL);
    if (dn2f_ep_stats(EP(1))->vt_lowering_reports != 2 ||
        dn2f_ep_stats(EP(1))->vt_ack_holds != holds || g_vt_new_reports[1] != rx ||
        dn2f_ep_unacked(EP(1)) != 1) {
        tap_case_why("held lowering: %llu lowerings, holds %llu -> %llu, reports sent %llu -> %u",
             (unsigned long long)dn2f_ep_stats(EP(1))->vt_lowering_reports,
             (unsigned long long)holds, (unsigned long long)dn2f_ep_stats(EP(1))->vt_ack_holds,
             (unsigned long long)rx, g_vt_new_reports[1]);
        goto out;
    }
    sim.drop = 0;
    sim_run(NULL, 300000000ULL);
    if (dn2f_ep_unacked(EP(1)) || !dn2f_sw_vt_port(sim.nodes[0].sw, 1, &vn, &e, &g) ||
        vn != 4000 || e != 6000) {
        tap_case_why("held lowering: unacked %u, switch (%llu, %llu), want (4000, 6000)",
             dn2f_ep_unacked(EP(1)), (unsigned long long)vn, (unsigned long long)e);
        goto out;
    }
    g_vtb[2].nq = 0;
    /* 3: board 1 promised 9000 (answered); its next report (at 7000) is
     * lost, then a packet of its own is, and a report held for it is
     * lowered below 9000: the switch may still have 9000 */
    vt_board_report(&sim.nodes[1], 5000, 9000);
    sim_run(NULL, 50000000ULL);
    sim.drop = 1.0;
    vt_board_report(&sim.nodes[1], 7000, 7000);
    vt_queue_send(&sim.nodes[1], 2, 8000, 0, 4);
    vt_flush_out(&sim.nodes[1]);
    vt_board_report(&sim.nodes[1], 7000, 20000);
    holds = dn2f_ep_stats(EP(1))->vt_ack_holds;
    vt_board_report(&sim.nodes[1], 7000, 8500);
    rx = dn2f_ep_stats(EP(1))->vt_reports_tx;
    sim_run(NULL, 100000000ULL);
    if (dn2f_ep_stats(EP(1))->vt_ack_holds != holds + 1 ||
        dn2f_ep_stats(EP(1))->vt_reports_tx < rx + 3) {
        tap_case_why("possible higher promise: holds %llu -> %llu, %llu re-sends in 100 ms",
             (unsigned long long)holds, (unsigned long long)dn2f_ep_stats(EP(1))->vt_ack_holds,
             (unsigned long long)(dn2f_ep_stats(EP(1))->vt_reports_tx - rx));
        goto out;
    }
    sim.drop = 0;
    sim_run(NULL, 300000000ULL);
    if (dn2f_ep_unacked(EP(1)) || !dn2f_sw_vt_port(sim.nodes[0].sw, 1, &vn, &e, &g) ||
        vn != 7000 || e != 8500 || dn2f_ep_stats(EP(1))->vt_ack_hold_ns < 100000000ULL) {
        tap_case_why("possible higher promise: unacked %u, switch (%llu, %llu), want (7000, 8500)",
             dn2f_ep_unacked(EP(1)), (unsigned long long)vn, (unsigned long long)e);
        goto out;
    }
    ok = true;
out:
    g_send_hook = NULL;
    sim.drop = 0;
    sim_reset(0, 0, 0, 0);
    sim_model = saved;
    return ok;
}

/* Idle promises in the random program: 2, 3 and 4 boards, several seeds,
 * 10 % drop / dup / reorder, direct and via the switch, with and without a
 * quantum: no packet ever arrives behind its receiver's clock (vt_deliver_vt
 * checks each one), and the deliveries are the same as those of boards
 * that always report earliest = now. */
static bool t_vt_idle_deterministic(void)
{
    unsigned na[MAX_NODES], nb[MAX_NODES], n, k, lowerings = 0, i;
    uint64_t ra, rb, holds = 0, early = 0;
    const struct sim_model *saved = sim_model;
    bool ok = false;

    sim_model = &vt_model;
    for (n = 2; n <= 4; n++) {
        vt_program_default();
        if (!vt_run(n, 11, 0.0, DN2F_ROUTE_DIRECT, 0, g_vt_log_a, na, &ra)) {
            goto out;
        }
        vt_program(VT_TOKENS, 0, 7000, VT_HOPS, 0, true);
        for (k = 0; k < 4; k++) {
            vt_hook_reset();
            g_vt_run_hook = vt_report_hook;
            if (!vt_run(n, 300 + 10 * n + k, k ? 0.1 : 0.0,
                        k & 1 ? DN2F_ROUTE_SWITCH : DN2F_ROUTE_DIRECT, 0, g_vt_log_b, nb, &rb) ||
                !vt_same(n, (const struct vt_ev (*)[VT_LOG_MAX])g_vt_log_a, na,
                         (const struct vt_ev (*)[VT_LOG_MAX])g_vt_log_b, nb)) {
                goto out;
            }
            if (g_vt_bad_reports) {
                tap_case_why("%u reports left with packets unacknowledged", g_vt_bad_reports);
                goto out;
            }
            early += g_vt_early_lowering;
            for (i = 1; i <= n; i++) {
                lowerings += g_vtb[i].lowerings;
                holds += dn2f_ep_stats(EP((int)i))->vt_ack_holds;
            }
        }
    }
    vt_program_default();
    if (!vt_run(3, 5, 0.0, DN2F_ROUTE_DIRECT, 4096, g_vt_log_a, na, &ra)) {
        goto out;
    }
    vt_program(VT_TOKENS, 0, 7000, VT_HOPS, 0, true);
    for (k = 0; k < 2; k++) {
        if (!vt_run(3, 50 + k, 0.1, k ? DN2F_ROUTE_SWITCH : DN2F_ROUTE_DIRECT, 4096, g_vt_log_b,
                    nb, &rb) ||
            !vt_same(3, (const struct vt_ev (*)[VT_LOG_MAX])g_vt_log_a, na,
                     (const struct vt_ev (*)[VT_LOG_MAX])g_vt_log_b, nb)) {
            goto out;
        }
    }
    if (!lowerings || !holds) {
        tap_case_why("no lowering report (%u) or no ACK hold (%llu): the test does not test them",
             lowerings, (unsigned long long)holds);
        goto out;
    }
    fprintf(stderr, "#   %u lowering reports (%llu sent before the board's own ACKs came), "
            "%llu ACK holds\n", lowerings, (unsigned long long)early, (unsigned long long)holds);
    ok = true;
out:
    g_vt_run_hook = NULL;
    vt_program_default();
    sim_reset(0, 0, 0, 0);
    sim_model = saved;
    return ok;
}

/* What idle promises are for: boards with far timers cross 1 s of virtual
 * time (one timer event each at 0.5 s that sends a packet to another board,
 * a last one at 1 s) in a few reports, not one round per lookahead (1e6). */
static bool t_vt_idle_rounds(void)
{
    static const unsigned ns[] = { 2, 4 };
    unsigned na[MAX_NODES], n, k, i, worst;
    uint64_t ra;
    const struct sim_model *saved = sim_model;
    bool ok = false;

    sim_model = &vt_model;
    vt_program(1, 500000000ULL, 0, 1, 1000000000ULL, true);
    for (k = 0; k < 4; k++) {
        n = ns[k & 1];
        vt_hook_reset();
        g_vt_run_hook = vt_report_hook;
        if (!vt_run(n, 400 + k, k < 2 ? 0.0 : 0.1, k & 1 ? DN2F_ROUTE_SWITCH : DN2F_ROUTE_DIRECT,
                    0, g_vt_log_a, na, &ra)) {
            goto out;
        }
        worst = 0;
        for (i = 1; i <= n; i++) {
            worst = g_vt_new_reports[i] > worst ? g_vt_new_reports[i] : worst;
            if (g_vtb[i].vnow < 1000000000ULL) {
                tap_case_why("board %u at %llu", i, (unsigned long long)g_vtb[i].vnow);
                goto out;
            }
        }
        fprintf(stderr, "#   %u boards%s: at most %u reports per board to cross 1 s\n", n,
                k < 2 ? "" : ", 10% faults", worst);
        if (worst >= 10 || g_vt_bad_reports) {
            tap_case_why("%u reports by one board (want < 10); %u left with packets unacknowledged",
                 worst, g_vt_bad_reports);
            goto out;
        }
    }
    ok = true;
out:
    g_vt_run_hook = NULL;
    vt_program_default();
    sim_reset(0, 0, 0, 0);
    sim_model = saved;
    return ok;
}

/* ================================================================ main */
static const struct tap_case tests[] = {
    { "wire: encode/decode round trip of every type", t_wire_roundtrip },
    { "wire: truncated datagrams rejected", t_wire_truncated },
    { "wire: every field of every record round-trips through encoder, decoder, iterators",
      t_wire_every_field },
    { "wire: every cut through a record is refused", t_wire_every_cut },
    { "wire: oversized datagrams and bad fields rejected", t_wire_oversized_and_fields },
    { "wire: random garbage and bit flips never crash", t_wire_garbage },
    { "addresses: parse / compare / print", t_addr },
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
    { "lanes: WID 0 refused for 25 s, WID 1 flows, then all in order (direct)", t_lanes_direct },
    { "lanes: the same at 5% loss + dup + reorder via the switch", t_lanes_lossy },
    { "lanes: multicast copies in the lane of their DWID", t_lanes_mcast },
    { "switch: an impostor HELLO and a same-GUID twin cannot take a live port", t_hijack_and_twin },
    { "sessions: a one-sided reset (peer stopped past the grace) heals both ways", t_one_sided_reset },
    { "switch: STATS only to this host or members, padded, one chunk, rate-limited", t_stats_restricted },
    { "endpoint: packets that arrive while the link is down wait for it", t_hold_while_down },
    { "wire: request lanes (REQ flag vs TYPE, after, ACK lanes 0..3)", t_wire_lanes },
    { "request lane: a full RC FIFO refuses RVLs, data for the WID flows (direct)",
      t_req_lane_direct },
    { "request lane: the same at 5% loss + dup + reorder via the switch", t_req_lane_lossy },
    { "request lane: an RVL is not delivered before the data queued ahead of it",
      t_read_after_write },
    { "request lane: two boards storm 60 RVLs of 1 MiB at each other, no deadlock",
      t_storm },
    { "request lane: the storm at 5% loss via the switch", t_storm_lossy },
    { "request lane: control, requests in the data lanes deadlock the storm",
      t_storm_single_class },
    { "request lane: a restart drops held and refused requests, fresh lanes after",
      t_req_reset },
    { "switch: a HELLO flood takes no LID; one host is capped; members join", t_lid_flood },
    { "crypto: SHA-256 and HMAC-SHA256 test vectors (FIPS 180-4, RFC 4231)", t_hmac_vectors },
    { "secret: members only; wrong or no secret refused; forged DATA/ACK; replay", t_secret },
    { "spurious timeout: a late ACK resends one packet, the window is restored, the RTO "
      "floor holds the next", t_spurious_late_ack },
    { "spurious timeout: a lost flight: the timeout resends its head, RACK the rest",
      t_lost_resent },
    { "spurious timeout: loss + dup + reorder with starved boards, byte-exact, counted",
      t_spurious_mixed },
    { "spurious timeout: starved receivers, no loss: < 0.5 % retransmitted", t_starved_no_loss },
    { "spurious timeout: a receiver starved for two backed-off RTOs gets one probe per "
      "expiry, not its flight again", t_spurious_long_stall },
    { "spurious timeout: the RTO floor a late ACK taught holds for every board of that host",
      t_spurious_host_floor },
    { "send batch: mixed destinations, partial sendmmsg, EAGAIN mid-batch: all sent, "
      "in order per destination", t_txbatch_mixed },
    { "send batch: copies vs references, early flush, a refused datagram, a stuck socket",
      t_txbatch_copy_and_refuse },
    { "send batch: real sendmmsg on 127.0.0.1 to two receivers, in order, byte-exact",
      t_txbatch_udp },
    { "join: a late switch's ASSIGNs across a second boundary leave no board cut off",
      t_join_late_assigns },
    { "join: three boards join at once through a late switch: late ASSIGNs of a refused "
      "attempt move no board", t_join_contended },
    { "join: a replayed join and DATA of an earlier incarnation change nothing",
      t_replayed_join },
    { "join: a replayed join does not bring back the port of a board that is gone",
      t_replayed_join_gone },
    { "stranger: spoofed BYE/KEEPALIVE with wrong epochs take no link down", t_spoofed_bye },
    { "stranger: with a secret, unauthenticated DATA gets no signed BYE", t_spoofed_data_secret },
    { "switch: all of loopback is one host for the quota", t_loopback_quota },
    { "virtual time: VT records of every kind, VT_REPORT, VT_GRANT, the STATS_RESP block: "
      "every field round-trips, every malformed variant is refused", t_vt_wire },
    { "virtual time: the grant formula by hand (1 board, 2 running, an idle one, 3, quantum, "
      "ties, a board leaving) and O(N) against the definition", t_vt_formula },
    { "virtual time: the switch holds grants at 0 until the boards are up, grants by the "
      "formula, answers duplicates, never lowers a grant, drops a board that leaves",
      t_vt_switch },
    { "virtual time: a report leaves only with nothing unacknowledged (10% drop/dup/reorder), "
      "probes for its ACKs, is re-sent until granted", t_vt_report_held },
    { "virtual time: 2 and 3 boards, the same deliveries (receiver, vtime, source, vseq) "
      "with and without 10% faults, direct and via the switch, with a quantum",
      t_vt_deterministic },
    { "virtual time: an idle promise made stale by a packet: the lowering report goes at once "
      "and the ACK waits for its grant (no late delivery)", t_vt_idle_stale_promise },
    { "virtual time: lowering reports: two boards lower at once with their own packets "
      "unacknowledged (no deadlock); a held report lowered stays held; a hold waits for the "
      "last report that went out", t_vt_lowering_paths },
    { "virtual time: idle promises, 2-4 boards, 10% faults, direct and via the switch: no late "
      "delivery, the same deliveries as boards that never promise ahead", t_vt_idle_deterministic },
    { "virtual time: idle boards with far timers cross 1 s in fewer than 10 reports each",
      t_vt_idle_rounds },
};

/* An argument runs only the tests whose name contains it. */
int main(int argc, char **argv)
{
    int rc;

    setvbuf(stdout, NULL, _IOLBF, 0);
    sim_model = &storm_model;
    rc = tap_run_cases(tests, TAP_NCASES(tests), argc > 1 ? argv[1] : NULL);
    sim_reset(0, 0, 0, 0);
    free(sim.heap);
    return rc;
}
