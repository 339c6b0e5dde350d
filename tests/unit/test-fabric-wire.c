/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of libdn2fab (TAP, tests/tap/dn2-tap.h's table runner): the
 * wire format: every datagram type and field encoded and decoded,
 * truncated, cut, oversized and random input refused; addresses; the
 * request lanes' bits; SHA-256 and HMAC-SHA256.
 */
#define _GNU_SOURCE 1
#include "fab-test.h"

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

/* ================================================================ main */
static const struct tap_case tests[] = {
    { "wire: encode/decode round trip of every type", t_wire_roundtrip },
    { "wire: truncated datagrams rejected", t_wire_truncated },
    { "wire: every field of every record round-trips through encoder, decoder, iterators", t_wire_every_field },
    { "wire: every cut through a record is refused", t_wire_every_cut },
    { "wire: oversized datagrams and bad fields rejected", t_wire_oversized_and_fields },
    { "wire: random garbage and bit flips never crash", t_wire_garbage },
    { "addresses: parse / compare / print", t_addr },
    { "wire: request lanes (REQ flag vs TYPE, after, ACK lanes 0..3)", t_wire_lanes },
    { "crypto: SHA-256 and HMAC-SHA256 test vectors (FIPS 180-4, RFC 4231)", t_hmac_vectors },
};

int main(int argc, char **argv)
{
    return fab_test_main(tests, TAP_NCASES(tests), argc, argv);
}
