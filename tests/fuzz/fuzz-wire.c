/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: the fabric datagram decoder, the endpoint input path and
 * the switch core input path (tests/fuzz/fuzz-run.sh builds and runs it).
 *
 * Input layout: byte 0 selects who "sent" the datagram (bits 0-1: the switch,
 * the peer board, a stranger, or the switch core as receiver; bit 2: the
 * board refuses deliveries with -EBUSY; bits 3-7: time step), the rest is one
 * datagram.  Besides, the board's RC FIFO refuses every other RVL-family
 * packet (request lanes blocked while the data lanes go on).  The endpoint is brought up (ASSIGN + ROUTES with one peer, LID
 * 2, and a multicast group) before the first input and again whenever an
 * input took its link down, so inputs reach the data path.
 *
 * Built with -DFUZZ_GEN_CORPUS and no libFuzzer, main() writes the seed
 * corpus (tests/fuzz/corpus/) instead.
 */
#define _GNU_SOURCE 1
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dn2fab.h"
#include "dn2fab-sw.h"

#define FZ_GUID     0x00f0220000000001ULL
#define FZ_EPOCH    0x1111111111111111ULL
#define FZ_SWEPOCH  0x5555555555555555ULL
#define FZ_PEER_EP  0x2222222222222222ULL
#define FZ_LID      1
#define FZ_PEER     2
#define FZ_GROUP    0xc005

static uint64_t fz_now = 1000000000ULL;
static bool fz_busy;
static struct dn2f_addr fz_sw, fz_peer, fz_stranger;
static struct dn2f_ep *fz_ep;
static struct dn2f_sw *fz_swc;
static unsigned fz_sent;

static uint64_t f_now(void *o) { (void)o; return fz_now; }
static int f_send(void *o, const struct dn2f_addr *to, const void *b, size_t l)
{
    (void)o; (void)to; (void)b; (void)l;
    fz_sent++;
    return (fz_sent % 97) == 0 ? -EAGAIN : 0;
}
static int f_deliver(void *o, uint16_t s, const uint8_t *p, size_t l)
{
    static unsigned rvls;
    volatile uint8_t x = 0;
    size_t i;
    (void)o; (void)s;
    if (fz_busy) {
        return -EBUSY;
    }
    if (dn2f_pkt_lane(p) >= DN2F_LANE_REQ && (rvls++ & 1)) {
        return -EBUSY;          /* the RC FIFO is full */
    }
    for (i = 0; i < l; i++) {
        x ^= p[i];              /* touch every byte (ASan checks bounds) */
    }
    (void)x;
    return 0;
}

static size_t mk_assign(uint8_t *buf)
{
    struct dn2f_wbuf w;
    struct dn2f_assign a = { .guid = FZ_GUID, .lid = FZ_LID, .link_state = DN2_SMA_LINK_READY,
                             .route_mode = DN2F_ROUTE_DIRECT };
    dn2f_wbuf_init(&w, buf, 256);
    dn2f_put_hdr(&w, DN2F_T_ASSIGN, 0, 0, FZ_LID, FZ_SWEPOCH, FZ_EPOCH);
    dn2f_put_assign(&w, &a);
    return dn2f_finish(&w);
}

static size_t mk_routes(uint8_t *buf)
{
    struct dn2f_wbuf w;
    struct dn2f_route r;
    uint16_t lids[2] = { FZ_LID, FZ_PEER };
    dn2f_wbuf_init(&w, buf, 1024);
    dn2f_put_hdr(&w, DN2F_T_ROUTES, 0, 0, FZ_LID, FZ_SWEPOCH, FZ_EPOCH);
    dn2f_put_routes_hdr(&w, 1, 0, 1, 2, 1);
    memset(&r, 0, sizeof(r));
    r.lid = FZ_LID;
    r.flags = DN2F_RT_DIRECT;
    r.epoch = FZ_EPOCH;
    dn2f_addr_parse(&r.addr, "127.0.0.1:7001");
    dn2f_put_route(&w, &r);
    r.lid = FZ_PEER;
    r.epoch = FZ_PEER_EP;
    r.addr = fz_peer;
    dn2f_put_route(&w, &r);
    dn2f_put_group(&w, FZ_GROUP, 2, lids);
    return dn2f_finish(&w);
}

static void fz_bring_up(void)
{
    uint8_t buf[1024];
    size_t n = mk_assign(buf);
    dn2f_ep_input(fz_ep, &fz_sw, buf, n);
    n = mk_routes(buf);
    dn2f_ep_input(fz_ep, &fz_sw, buf, n);
}

static int f_deliver_vt(void *o, uint16_t s, const uint8_t *p, size_t l, uint64_t vtime,
                        uint32_t vseq)
{
    (void)vtime; (void)vseq;
    return f_deliver(o, s, p, l);
}

static void f_vt_grant(void *o, uint64_t horizon, uint32_t l, uint32_t q, uint64_t slowest)
{
    (void)o; (void)l; (void)q; (void)slowest;
    /* the board moves on: a new report at the horizon */
    if (horizon != UINT64_MAX) {
        dn2f_ep_vt_report(fz_ep, horizon, horizon + (horizon & 0xff));
    }
}

static void fz_init(void)
{
    struct dn2f_ep_config c;
    struct dn2f_sw_config sc;
    static const struct dn2f_ep_ops eops = {
        .now_ns = f_now, .send_datagram = f_send, .deliver = f_deliver,
        .deliver_vt = f_deliver_vt, .vt_grant = f_vt_grant,
    };
    static const struct dn2f_sw_ops sops = { .now_ns = f_now, .send_datagram = f_send };

    dn2f_addr_parse(&fz_sw, "127.0.0.1:7000");
    dn2f_addr_parse(&fz_peer, "127.0.0.1:7002");
    dn2f_addr_parse(&fz_stranger, "127.0.0.1:7003");
    dn2f_ep_config_default(&c);
    c.guid = FZ_GUID;
    c.epoch = FZ_EPOCH;
    c.sw = fz_sw;
    c.rx_budget = 4u << 20;     /* small, so budget paths are reached */
    c.vtime = true;             /* virtual-time records, reports and grants too */
    fz_ep = dn2f_ep_new(&c, &eops, NULL);
    dn2f_sw_config_default(&sc);
    sc.route_mode = DN2F_ROUTE_SWITCH;
    sc.drop = 0.1;
    sc.dup = 0.1;
    sc.reorder = 0.1;
    sc.delay_ns = 100000;
    sc.delay_frac = 0.2;
    sc.fault_queue_max = 64;
    sc.vt = true;
    sc.vt_quantum_ns = 100;
    fz_swc = dn2f_sw_new(&sc, &sops, NULL);
    dn2f_sw_mcast_add(fz_swc, FZ_GROUP, FZ_PEER);
    dn2f_ep_tick(fz_ep);
    fz_bring_up();
    dn2f_ep_vt_report(fz_ep, 0, 0);     /* a report waits for grants */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct dn2f_msg m;
    struct dn2f_iter it;
    uint8_t ctl;

    if (!fz_ep) {
        fz_init();
    }
    if (size < 1) {
        return 0;
    }
    ctl = data[0];
    data++;
    size--;
    /* 1. the decoder and its iterators on their own */
    if (dn2f_decode(data, size, &m) == 0) {
        struct dn2f_rec r;
        struct dn2f_route rt;
        struct dn2f_portstat ps;
        uint16_t g, n;
        const uint8_t *mem;
        switch (m.h.type) {
        case DN2F_T_DATA:
            dn2f_data_iter(&m, &it);
            while (dn2f_data_next(&it, &r)) {
                unsigned i;
                for (i = 0; i < r.nmemb; i++) {
                    uint16_t l;
                    uint32_t s;
                    uint64_t e;
                    dn2f_rec_member(&r, i, &l, &s, &e);
                }
            }
            break;
        case DN2F_T_ROUTES:
            dn2f_routes_iter(&m, &it);
            while (dn2f_routes_next_route(&it, &rt)) {
            }
            while (dn2f_routes_next_group(&it, &g, &n, &mem)) {
            }
            break;
        case DN2F_T_STATS_RESP:
            dn2f_stats_iter(&m, &it);
            while (dn2f_stats_next(&it, &ps)) {
            }
            break;
        default:
            break;
        }
    }
    /* 2. the endpoint or the switch core */
    fz_busy = (ctl & 4) != 0;
    fz_now += (uint64_t)(ctl >> 3) * 250000;     /* 0..7.75 ms */
    switch (ctl & 3) {
    case 0:
        dn2f_ep_input(fz_ep, &fz_sw, data, size);
        break;
    case 1:
        dn2f_ep_input(fz_ep, &fz_peer, data, size);
        break;
    case 2:
        dn2f_ep_input(fz_ep, &fz_stranger, data, size);
        break;
    default:
        dn2f_sw_input(fz_swc, (ctl & 4) ? &fz_peer : &fz_stranger, data, size);
        if (dn2f_sw_next_deadline(fz_swc) <= fz_now) {
            dn2f_sw_tick(fz_swc);
        }
        break;
    }
    if (!fz_busy) {
        dn2f_ep_resume(fz_ep);
    }
    if (dn2f_ep_next_deadline(fz_ep) <= fz_now) {
        dn2f_ep_tick(fz_ep);
    }
    /* keep the board sending a little, so ACK paths have something to ack
     * (data, and an RVL in a request lane now and then) */
    if (dn2f_ep_link(fz_ep) == DN2F_LINK_UP) {
        static unsigned nsent;
        uint8_t pkt[64];
        memset(pkt, 0, sizeof(pkt));
        pkt[4] = FZ_PEER;
        if (nsent++ % 3 == 0) {
            pkt[1] = (DN2_OP_RVL & 0x0f) << 4;
            pkt[2] = DN2_OP_RVL >> 4;
            pkt[3] = (nsent & 4) ? 0x10 : 0;    /* DWID */
        }
        if (dn2f_ep_can_send(fz_ep, FZ_PEER, sizeof(pkt))) {
            dn2f_ep_send(fz_ep, FZ_PEER, pkt, sizeof(pkt));
        }
        pkt[1] = pkt[2] = pkt[3] = 0;
        pkt[4] = FZ_GROUP & 0xff;
        pkt[5] = FZ_GROUP >> 8;
        if (dn2f_ep_can_send(fz_ep, FZ_GROUP, sizeof(pkt))) {
            dn2f_ep_send(fz_ep, FZ_GROUP, pkt, sizeof(pkt));
        }
        dn2f_ep_flush(fz_ep);
    } else {
        fz_bring_up();
    }
    return 0;
}

#ifdef FUZZ_GEN_CORPUS
/* Seeds: one datagram of each kind that the fuzzed endpoint accepts. */
static void put_seed(const char *dir, const char *name, uint8_t ctl, const uint8_t *b, size_t n)
{
    char path[4096];
    FILE *f;
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    f = fopen(path, "wb");
    if (!f) {
        perror(path);
        exit(1);
    }
    fputc(ctl, f);
    fwrite(b, n, 1, f);
    fclose(f);
}

int main(int argc, char **argv)
{
    const char *dir = argc > 1 ? argv[1] : ".";
    uint8_t buf[8192], pkt[600];
    struct dn2f_wbuf w;
    size_t n;

    dn2f_addr_parse(&fz_peer, "127.0.0.1:7002");
    n = mk_assign(buf);
    put_seed(dir, "assign", 0, buf, n);
    n = mk_routes(buf);
    put_seed(dir, "routes", 0, buf, n);
    {   /* DATA from the peer: ACK block + unicast + multicast copy */
        uint8_t bits[4] = { 0x05, 0, 0, 0 };
        dn2f_wbuf_init(&w, buf, sizeof(buf));
        dn2f_put_hdr(&w, DN2F_T_DATA, DN2F_F_ACK, FZ_PEER, FZ_LID, FZ_PEER_EP, FZ_EPOCH);
        dn2f_hdr_set_sessions(&w, 5, 0);
        dn2f_data_set_ts(&w, 1000);     /* version 4: timestamp, echoed in ACKs */
        dn2f_put_ack_echo(&w, 0, true, 0, 64, 900, 32, bits);
        dn2f_put_ack(&w, 1, false, 0, 64, 0, NULL);
        memset(pkt, 0x11, sizeof(pkt));
        pkt[3] = 0x01;          /* DWID 0: lane 0 */
        pkt[4] = FZ_LID;
        pkt[5] = 0;
        dn2f_put_rec(&w, DN2F_REC_UNICAST, 0, 0, 0, 0, NULL, NULL, NULL, pkt, 40);
        dn2f_put_rec(&w, DN2F_REC_UNICAST, DN2F_RF_RETX, 2, 0, 0, NULL, NULL, NULL, pkt, 100);
        pkt[3] = 0x10;          /* DWID 1: lane 1 */
        dn2f_put_rec(&w, DN2F_REC_UNICAST, DN2F_RF_LANE1, 0, 0, 0, NULL, NULL, NULL, pkt, 40);
        pkt[3] = 0x01;
        pkt[4] = FZ_GROUP & 0xff;
        pkt[5] = FZ_GROUP >> 8;
        dn2f_put_rec(&w, DN2F_REC_MCAST_COPY, 0, 1, FZ_GROUP, 0, NULL, NULL, NULL, pkt, 600);
        n = dn2f_finish(&w);
        put_seed(dir, "data-peer", 1, buf, n);
        put_seed(dir, "data-via-switch", 0, buf, n);
        put_seed(dir, "data-busy", 1 | 4, buf, n);
    }
    {   /* request lanes: ACK blocks for all four lanes, data, then RVLs in
         * lanes 2 and 3, one waiting for data not sent yet (after = 3) */
        dn2f_wbuf_init(&w, buf, sizeof(buf));
        dn2f_put_hdr(&w, DN2F_T_DATA, DN2F_F_ACK, FZ_PEER, FZ_LID, FZ_PEER_EP, FZ_EPOCH);
        dn2f_hdr_set_sessions(&w, 5, 0);
        dn2f_put_ack(&w, 0, true, 0, 64, 0, NULL);
        dn2f_put_ack(&w, 1, true, 0, 64, 0, NULL);
        dn2f_put_ack(&w, 2, true, 0, 64, 0, NULL);
        dn2f_put_ack(&w, 3, false, 0, 64, 0, NULL);
        memset(pkt, 0, sizeof(pkt));
        pkt[4] = FZ_LID;
        dn2f_put_rec(&w, DN2F_REC_UNICAST, 0, 0, 0, 0, NULL, NULL, NULL, pkt, 64);
        pkt[1] = (DN2_OP_RVLS & 0x0f) << 4;
        pkt[2] = DN2_OP_RVLS >> 4;
        dn2f_put_req(&w, 0, 0, 1, pkt, 32);
        dn2f_put_req(&w, 0, 1, 3, pkt, 32);
        pkt[3] = 0x10;          /* DWID 1: lane 3 */
        dn2f_put_req(&w, DN2F_RF_LANE1, 0, 0, pkt, 32);
        pkt[1] = pkt[2] = 0;
        dn2f_put_rec(&w, DN2F_REC_UNICAST, DN2F_RF_LANE1, 0, 0, 0, NULL, NULL, NULL, pkt, 40);
        n = dn2f_finish(&w);
        put_seed(dir, "data-requests", 1, buf, n);
        put_seed(dir, "data-requests-busy", 1 | 4 | (4 << 3), buf, n);
    }
    {   /* multicast origin, as a board sends it to the switch */
        struct dn2f_member mb[2] = {
            { .lid = FZ_LID, .epoch = FZ_EPOCH, .src_sess = 3, .dst_sess = 0 },
            { .lid = FZ_PEER, .epoch = FZ_PEER_EP, .src_sess = 4, .dst_sess = 9 },
        };
        dn2f_wbuf_init(&w, buf, sizeof(buf));
        dn2f_put_hdr(&w, DN2F_T_DATA, 0, FZ_PEER, FZ_GROUP, FZ_PEER_EP, 0);
        memset(pkt, 0x22, sizeof(pkt));
        pkt[4] = FZ_GROUP & 0xff;
        pkt[5] = FZ_GROUP >> 8;
        dn2f_put_origin(&w, 0, FZ_GROUP, 2, mb, pkt, 64);
        n = dn2f_finish(&w);
        put_seed(dir, "mcast-origin-to-switch", 3 | 4, buf, n);
    }
    {
        uint8_t bits[8] = { 0xff, 0x0f, 0, 0, 0, 0, 0, 0x80 };
        dn2f_wbuf_init(&w, buf, sizeof(buf));
        dn2f_put_hdr(&w, DN2F_T_ACK, DN2F_F_ACKREQ, FZ_PEER, FZ_LID, FZ_PEER_EP, FZ_EPOCH);
        dn2f_hdr_set_sessions(&w, 5, 0);
        dn2f_put_ack_echo(&w, 0, false, 1, 65, 1, 64, bits);
        n = dn2f_finish(&w);
        put_seed(dir, "ack-sack", 1 | (8 << 3), buf, n);
    }
    {
        struct dn2f_hello h = { .guid = 77, .lid_hint = 5 };
        dn2f_wbuf_init(&w, buf, sizeof(buf));
        dn2f_put_hdr(&w, DN2F_T_HELLO, 0, 0, 0, 99, 0);
        dn2f_put_hello(&w, &h);
        n = dn2f_finish(&w);
        put_seed(dir, "hello-to-switch", 3 | 4, buf, n);
    }
    dn2f_wbuf_init(&w, buf, sizeof(buf));
    dn2f_put_hdr(&w, DN2F_T_KEEPALIVE, 0, 0, FZ_LID, FZ_SWEPOCH, FZ_EPOCH);
    dn2f_put_keepalive(&w, 1, 0, NULL);
    put_seed(dir, "keepalive", 0 | (31 << 3), buf, dn2f_finish(&w));
    dn2f_wbuf_init(&w, buf, sizeof(buf));
    dn2f_put_hdr(&w, DN2F_T_BYE, 0, 0, FZ_LID, FZ_SWEPOCH, FZ_EPOCH);
    dn2f_put_u32pair(&w, DN2F_BYE_SHUTDOWN, 0);
    put_seed(dir, "bye", 0, buf, dn2f_finish(&w));
    dn2f_wbuf_init(&w, buf, sizeof(buf));
    dn2f_put_hdr(&w, DN2F_T_BYE, 0, 0, 0, FZ_SWEPOCH, FZ_EPOCH);
    dn2f_put_u32pair(&w, DN2F_BYE_GUID_IN_USE, 0);
    put_seed(dir, "bye-guid-in-use", 0, buf, dn2f_finish(&w));
    {   /* a joining board returns its ticket (garbage MAC: the switch says who are you) */
        struct dn2f_ticket tk = { .time = 1 };
        memset(tk.mac, 0xab, sizeof(tk.mac));
        dn2f_wbuf_init(&w, buf, sizeof(buf));
        dn2f_put_hdr(&w, DN2F_T_KEEPALIVE, 0, FZ_PEER, 0, FZ_PEER_EP, 0);
        dn2f_put_keepalive(&w, 0xffffffffu, 77, &tk);
        put_seed(dir, "keepalive-ticket", 3, buf, dn2f_finish(&w));
    }
    dn2f_wbuf_init(&w, buf, sizeof(buf));
    dn2f_put_hdr(&w, DN2F_T_STATS_REQ, 0, 0, 0, 0, 0);
    dn2f_put_stats_req(&w, 1234, 0, DN2F_STATS_REQ_MIN);
    put_seed(dir, "stats-req", 3, buf, dn2f_finish(&w));
    dn2f_wbuf_init(&w, buf, sizeof(buf));
    dn2f_put_hdr(&w, DN2F_T_MCAST_JOIN, 0, FZ_PEER, 0, FZ_PEER_EP, 0);
    dn2f_put_mcast(&w, FZ_GROUP);
    put_seed(dir, "mcast-join", 3 | 4, buf, dn2f_finish(&w));
    {
        struct dn2f_swsummary s = { .route_mode = DN2F_ROUTE_SWITCH, .routes_gen = 1 };
        struct dn2f_portstat ps;
        memset(&ps, 0, sizeof(ps));
        ps.lid = 1;
        ps.state = 1;
        ps.addr = fz_peer;
        dn2f_wbuf_init(&w, buf, sizeof(buf));
        dn2f_put_hdr(&w, DN2F_T_STATS_RESP, 0, 0, 0, FZ_SWEPOCH, 0);
        dn2f_put_stats_hdr(&w, 1234, 0, 1, 1, &s);
        dn2f_put_portstat(&w, &ps);
        put_seed(dir, "stats-resp", 2, buf, dn2f_finish(&w));
        s.vt = true;
        s.vt_boards = 2;
        s.vt_reports = 10;
        s.vt_grants = 12;
        s.vt_time = 123456;
        dn2f_wbuf_init(&w, buf, sizeof(buf));
        dn2f_put_hdr(&w, DN2F_T_STATS_RESP, 0, 0, 0, FZ_SWEPOCH, 0);
        dn2f_put_stats_hdr(&w, 1234, 0, 1, 1, &s);
        dn2f_put_stats_vt(&w, &s);
        dn2f_put_portstat(&w, &ps);
        put_seed(dir, "stats-resp-vt", 2, buf, dn2f_finish(&w));
    }
    {   /* virtual time: DATA with VT records from the peer (unicast, a
         * request, a multicast copy) */
        struct dn2f_rec r = { .kind = DN2F_REC_UNICAST, .rflags = DN2F_RF_VT, .len = 40,
                              .vtime = 5000, .vseq = 7, .pkt = pkt };
        dn2f_wbuf_init(&w, buf, sizeof(buf));
        dn2f_put_hdr(&w, DN2F_T_DATA, 0, FZ_PEER, FZ_LID, FZ_PEER_EP, FZ_EPOCH);
        dn2f_hdr_set_sessions(&w, 5, 0);
        dn2f_data_set_ts(&w, 1000);
        memset(pkt, 0x33, sizeof(pkt));
        pkt[3] = 0x01;
        pkt[4] = FZ_LID;
        pkt[5] = 0;
        dn2f_put_record(&w, &r, NULL);
        r.seq = 1;
        r.vtime = 5000;
        r.vseq = 8;
        dn2f_put_record(&w, &r, NULL);
        pkt[1] = (DN2_OP_RVLS & 0x0f) << 4;
        pkt[2] = DN2_OP_RVLS >> 4;
        r.rflags = DN2F_RF_VT | DN2F_RF_REQ;
        r.seq = 0;
        r.after = 1;
        r.len = 32;
        r.vseq = 9;
        dn2f_put_record(&w, &r, NULL);
        pkt[1] = pkt[2] = 0;
        pkt[4] = FZ_GROUP & 0xff;
        pkt[5] = FZ_GROUP >> 8;
        r.kind = DN2F_REC_MCAST_COPY;
        r.rflags = DN2F_RF_VT;
        r.group = FZ_GROUP;
        r.seq = 0;
        r.len = 64;
        r.vtime = 6000;
        r.vseq = 10;
        dn2f_put_record(&w, &r, NULL);
        n = dn2f_finish(&w);
        put_seed(dir, "data-vt", 1, buf, n);
    }
    {   /* virtual time: a grant from the switch, a report to it */
        struct dn2f_vt_grant g = { .rseq = 1, .horizon = 2000, .lookahead_ns = 1000,
                                   .quantum_ns = 100, .slowest = 0 };
        struct dn2f_vt_report rp = { .rseq = 1, .now = 0, .earliest = 500 };
        dn2f_wbuf_init(&w, buf, sizeof(buf));
        dn2f_put_hdr(&w, DN2F_T_VT_GRANT, 0, 0, FZ_LID, FZ_SWEPOCH, FZ_EPOCH);
        dn2f_put_vt_grant(&w, &g);
        put_seed(dir, "vt-grant", 0, buf, dn2f_finish(&w));
        dn2f_wbuf_init(&w, buf, sizeof(buf));
        dn2f_put_hdr(&w, DN2F_T_VT_REPORT, 0, FZ_PEER, 0, FZ_PEER_EP, 0);
        dn2f_put_vt_report(&w, &rp);
        put_seed(dir, "vt-report-to-switch", 3, buf, dn2f_finish(&w));
    }
    return 0;
}
#endif
