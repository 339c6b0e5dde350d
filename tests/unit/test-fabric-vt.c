/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of libdn2fab (TAP, tests/tap/dn2-tap.h's table runner):
 * virtual time: the VT records on the wire, the grant formula, the
 * switch's grants, reports held until acknowledged, deterministic
 * deliveries with and without faults, idle promises (the board model:
 * fab-vt-sim.c).
 */
#define _GNU_SOURCE 1
#include "fab-test.h"
#include "fab-vt-sim.h"


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
/* A board whose process stops (a debugger's breakpoint, a host that does
 * not schedule it) for longer than the switch's port timeout: under virtual
 * time the others wait for it, and the run is the one it would have been.
 * Without the hold the switch drops the silent board from the sync set,
 * the others run on alone and the deliveries differ (or never happen). */
static bool cond_vt_half(void)
{
    return g_vt_total >= 2 * g_vt_tokens * g_vt_hops / 2;
}

static bool t_vt_stopped_board(void)
{
    unsigned na[MAX_NODES], nb[MAX_NODES];
    uint64_t ra;
    struct dn2f_sw_vt_stats s;
    const struct sim_model *saved = sim_model;
    bool ok = false;

    sim_model = &vt_model;
    if (!vt_run(2, 21, 0.0, DN2F_ROUTE_DIRECT, 0, g_vt_log_a, na, &ra)) {
        goto out;
    }
    vt_setup(2, 21, 0.0, DN2F_ROUTE_DIRECT, 0);
    g_send_hook = g_vt_run_hook;
    if (!sim_run(cond_vt_half, 3600ULL * 1000000000ULL)) {
        tap_case_why("half the deliveries never happened");
        goto out;
    }
    /* board 2 stops for 10 s of host time (3 s is the port timeout) */
    sim.nodes[2].stalled_until = sim.now + 10ULL * 1000000000ULL;
    if (!sim_run(cond_vt_done, 3600ULL * 1000000000ULL)) {
        tap_case_why("after board 2 stopped for 10 s: %u of %u deliveries", g_vt_total,
                     2 * g_vt_tokens * g_vt_hops);
        goto out;
    }
    dn2f_sw_vt_stats(sim.nodes[0].sw, &s);
    if (s.boards != 2) {
        tap_case_why("the switch has %u boards in the sync set after the stop", s.boards);
        goto out;
    }
    memcpy(g_vt_log_b[1], g_vtb[1].log, sizeof(g_vtb[1].log));
    memcpy(g_vt_log_b[2], g_vtb[2].log, sizeof(g_vtb[2].log));
    nb[1] = g_vtb[1].nlog;
    nb[2] = g_vtb[2].nlog;
    ok = vt_same(2, (const struct vt_ev (*)[VT_LOG_MAX])g_vt_log_a, na,
                 (const struct vt_ev (*)[VT_LOG_MAX])g_vt_log_b, nb);
out:
    sim_reset(0, 0, 0, 0);
    sim_model = saved;
    return ok;
}

static const struct tap_case tests[] = {
    { "virtual time: VT records of every kind, VT_REPORT, VT_GRANT, the STATS_RESP block: "
      "every field round-trips, every malformed variant is refused", t_vt_wire },
    { "virtual time: the grant formula by hand (1 board, 2 running, an idle one, 3, quantum, "
      "ties, a board leaving) and O(N) against the definition", t_vt_formula },
    { "virtual time: the switch holds grants at 0 until the boards are up, grants by the "
      "formula, answers duplicates, never lowers a grant, drops a board that leaves", t_vt_switch },
    { "virtual time: a report leaves only with nothing unacknowledged (10% drop/dup/reorder), "
      "probes for its ACKs, is re-sent until granted", t_vt_report_held },
    { "virtual time: 2 and 3 boards, the same deliveries (receiver, vtime, source, vseq) "
      "with and without 10% faults, direct and via the switch, with a quantum", t_vt_deterministic },
    { "virtual time: an idle promise made stale by a packet: the lowering report goes at once "
      "and the ACK waits for its grant (no late delivery)", t_vt_idle_stale_promise },
    { "virtual time: lowering reports: two boards lower at once with their own packets "
      "unacknowledged (no deadlock); a held report lowered stays held; a hold waits for the "
      "last report that went out", t_vt_lowering_paths },
    { "virtual time: idle promises, 2-4 boards, 10% faults, direct and via the switch: no late "
      "delivery, the same deliveries as boards that never promise ahead", t_vt_idle_deterministic },
    { "virtual time: idle boards with far timers cross 1 s in fewer than 10 reports each", t_vt_idle_rounds },
    { "virtual time: a board stopped for 10 s (beyond the port timeout) is waited for, not "
      "dropped: the same deliveries as without the stop", t_vt_stopped_board },
};

int main(int argc, char **argv)
{
    return fab_test_main(tests, TAP_NCASES(tests), argc, argv);
}
