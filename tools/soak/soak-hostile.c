/* SPDX-License-Identifier: MIT */
/*
 * Phase 2 of dn2-soak (tools/soak/dn2-soak.c, which documents every
 * phase): hostile datagrams, on the open fabric and with a cluster
 * secret.
 */
#define _GNU_SOURCE 1
#include "soak.h"


/* ================================================================== */
/* Phase 2: hostile datagrams                                          */
/* ================================================================== */

#define GUARD_OFF   (64 * MiB)  /* WID 0: only forged packets aim here */

#define GUARD_LEN   (16 * MiB)

#define CHK_OFF     (96 * MiB)  /* WID 0: the known-good round trips */

#define AMT_ENT     0x100u      /* WID 1's AMT entry (LLCM offset) */

#define IPR_BASE    0x100000u   /* WID 1's IPUSH ring (SO-DIMM offset) */

#define IPR_SIZE    0x10000u

#define NFUZZSOCK   4

/* [0]: the open fabric; [1]: with a cluster secret the hostile side lacks */
struct P2s P2v[2], *P2p = &P2v[0];



static const char *const kind_name[8] = {
    "random bytes", "magic + random", "header + random body", "mutated messages",
    "forged DATA/ACK", "peer DATA (random DIMMnet-2 packets)", "to the switch", "-",
};

typedef struct Victim {
    Board *b;
    uint16_t lid;
    uint64_t epoch;
    struct dn2f_addr addr;
    bool known;
    /* per lane (= the packets' DWID, docs/fabric.md 4.1) */
    uint32_t tx_seq[DN2F_NUM_LANES];    /* our next sequence number toward it */
    uint32_t rx_cum[DN2F_NUM_LANES];    /* the next one we expect from it */
    bool rx_seen[DN2F_NUM_LANES];
    uint32_t acked[DN2F_NUM_LANES];     /* its latest cumulative ACK of our packets */
    bool ack_seen;              /* an ACK block from it since this was cleared */
    uint32_t sess;              /* its session toward us (0: not known yet) */
} Victim;


/* A hostile board: registered with the switch like a board (HELLO), so
 * its DATA passes the fabric's checks and reaches the Receive Controller. */
typedef struct RawPeer {
    int fd;
    struct dn2f_addr sw;
    uint64_t guid, epoch, sw_epoch;
    uint16_t lid;
    uint32_t gen, sess;
    struct dn2f_ticket ticket;  /* the ASSIGN's, returned until we are in the table */
    bool joined;
    bool mute;                  /* acknowledge nothing (keepalives go on) */
    int bye_reason;             /* the last BYE from the switch (-1: none) */
    Victim v[2];
    uint64_t next_hello, next_ka;
} RawPeer;

static void raw_send(int fd, const struct dn2f_addr *to, const void *buf, size_t len)
{
    if (sendto(fd, buf, len, 0, &to->u.sa, to->len) < 0) {
        P2.send_err++;
    }
}

static Victim *rp_victim(RawPeer *rp, uint16_t lid)
{
    int i;

    for (i = 0; i < 2; i++) {
        if (rp->v[i].lid == lid) {
            return &rp->v[i];
        }
    }
    return NULL;
}


/* Answer the switch and the victims: HELLO until registered, KEEPALIVE,
 * the routing table (epochs, addresses), and an ACK for every DATA (an RVL
 * answered to us must not stall the victim). */
static void rp_service(RawPeer *rp)
{
    static uint8_t buf[DN2F_DGRAM_MAX + 1], out[256];
    struct dn2f_wbuf w;
    struct sockaddr_storage ss;
    uint64_t t = now_ms();
    int i;

    for (i = 0; i < 4096; i++) {
        socklen_t sl = sizeof(ss);
        ssize_t n = recvfrom(rp->fd, buf, sizeof(buf), MSG_DONTWAIT, (struct sockaddr *)&ss, &sl);
        struct dn2f_msg m;
        Victim *v;
        if (n < 0) {
            break;
        }
        if (dn2f_decode(buf, (size_t)n, &m)) {
            continue;
        }
        switch (m.h.type) {
        case DN2F_T_ASSIGN:
            /* a ticket: returned in a KEEPALIVE it makes us a port */
            rp->lid = m.u.assign.lid;
            rp->sw_epoch = m.h.src_epoch;
            rp->ticket = m.u.assign.ticket;
            rp->joined = false;
            rp->next_ka = 0;
            break;
        case DN2F_T_ROUTES: {
            struct dn2f_iter it;
            struct dn2f_route r;
            rp->gen = m.u.routes.gen;
            rp->sw_epoch = m.h.src_epoch;
            dn2f_routes_iter(&m, &it);
            while (dn2f_routes_next_route(&it, &r)) {
                if (r.lid == rp->lid) {
                    rp->joined = true;
                }
                if ((v = rp_victim(rp, r.lid))) {
                    if (v->epoch != r.epoch) {          /* new streams */
                        memset(v->tx_seq, 0, sizeof(v->tx_seq));
                        memset(v->rx_cum, 0, sizeof(v->rx_cum));
                        memset(v->rx_seen, 0, sizeof(v->rx_seen));
                        v->sess = 0;
                    }
                    v->epoch = r.epoch;
                    v->addr = r.addr;
                    v->known = true;
                }
            }
            break;
        }
        case DN2F_T_BYE:
            rp->bye_reason = (int)m.u.bye.reason;
            rp->lid = 0;            /* the switch forgot us: HELLO again */
            rp->joined = false;
            P2.peer_rehello++;
            break;
        case DN2F_T_DATA:
        case DN2F_T_ACK:
            if (!(v = rp_victim(rp, m.h.src_lid))) {
                break;
            }
            if (m.h.src_sess != v->sess) {
                /* the victim started over with us (a new session): both
                 * directions restart at 0 (docs/fabric.md, sessions) */
                v->sess = m.h.src_sess;
                memset(v->rx_cum, 0, sizeof(v->rx_cum));
                memset(v->rx_seen, 0, sizeof(v->rx_seen));
                memset(v->tx_seq, 0, sizeof(v->tx_seq));
                memset(v->acked, 0, sizeof(v->acked));
            }
            if (m.h.type == DN2F_T_DATA && !rp->mute) {
                struct dn2f_iter it;
                struct dn2f_rec r;
                unsigned ln, nl = 0;
                P2.peer_data_in++;
                dn2f_data_iter(&m, &it);
                while (dn2f_data_next(&it, &r)) {
                    ln = r.lane % DN2F_NUM_LANES;
                    v->rx_seen[ln] = true;
                    /* a sink: everything up to the highest sequence number
                     * seen counts as received (a hole would only make the
                     * victim wait for its timers) */
                    if (r.kind != DN2F_REC_MCAST_ORIGIN &&
                        (int32_t)(r.seq - v->rx_cum[ln]) >= 0 &&
                        (int32_t)(r.seq - v->rx_cum[ln]) < 65536) {
                        v->rx_cum[ln] = r.seq + 1;
                    }
                }
                dn2f_wbuf_init(&w, out, sizeof(out));
                dn2f_put_hdr(&w, DN2F_T_ACK, 0, rp->lid, v->lid, rp->epoch, v->epoch);
                dn2f_hdr_set_sessions(&w, rp->sess, v->sess);
                for (ln = 0; ln < DN2F_NUM_LANES; ln++) {
                    nl += v->rx_seen[ln];
                }
                for (ln = 0; ln < DN2F_NUM_LANES; ln++) {
                    if (v->rx_seen[ln] || (!nl && ln == 0)) {
                        nl = nl ? nl - 1 : 0;
                        dn2f_put_ack(&w, ln, nl > 0, v->rx_cum[ln], v->rx_cum[ln] + 512, 0,
                                     NULL);
                    }
                }
                raw_send(rp->fd, &v->addr, out, dn2f_finish(&w));
                P2.peer_acks++;
            }
            {
                const struct dn2f_acks *as = m.h.type == DN2F_T_ACK ? &m.u.acks :
                                             &m.u.data.acks;
                unsigned j;
                /* a naive sender: what the victim did not get is sent anew */
                for (j = 0; j < as->n; j++) {
                    unsigned ln = as->a[j].lane % DN2F_NUM_LANES;
                    v->acked[ln] = as->a[j].cum;
                    v->ack_seen = true;
                    if ((int32_t)(v->tx_seq[ln] - as->a[j].cum) > 0) {
                        v->tx_seq[ln] = as->a[j].cum;
                    }
                }
            }
            break;
        default:
            break;
        }
    }
    if (!rp->lid && t >= rp->next_hello) {
        struct dn2f_hello hl = { .guid = rp->guid, .lid_hint = 0 };
        dn2f_wbuf_init(&w, out, sizeof(out));
        dn2f_put_hdr(&w, DN2F_T_HELLO, 0, 0, 0, rp->epoch, 0);
        dn2f_put_hello(&w, &hl);
        raw_send(rp->fd, &rp->sw, out, dn2f_finish(&w));
        rp->next_hello = t + 100;
    }
    if (rp->lid && t >= rp->next_ka) {
        dn2f_wbuf_init(&w, out, sizeof(out));
        dn2f_put_hdr(&w, DN2F_T_KEEPALIVE, 0, rp->lid, 0, rp->epoch, rp->sw_epoch);
        dn2f_put_keepalive(&w, rp->joined ? rp->gen : 0xffffffffu, rp->guid,
                           rp->joined ? NULL : &rp->ticket);
        raw_send(rp->fd, &rp->sw, out, dn2f_finish(&w));
        rp->next_ka = t + (rp->joined ? 200 : 100);
    }
}

static bool rp_register(RawPeer *rp, int sw_port, Board *a, Board *b, uint64_t seed,
                        unsigned ms)
{
    char sws[64];
    struct dn2f_addr me;
    uint64_t end = now_ms() + ms;

    memset(rp, 0, sizeof(*rp));
    dn2f_addr_parse(&me, "127.0.0.1:0");
    rp->fd = dn2f_udp_open(&me, 4 << 20);
    if (rp->fd < 0) {
        die("UDP socket: %s", strerror(-rp->fd));
    }
    snprintf(sws, sizeof(sws), "127.0.0.1:%d", sw_port);
    dn2f_addr_parse(&rp->sw, sws);
    rp->guid = 0xbad0000000000000ull | (seed & 0xffffffffffull) | 1;
    rp->epoch = seed | 1;
    rp->sess = 1;
    rp->bye_reason = -1;
    rp->v[0] = (Victim){ .b = a, .lid = a->lid };
    rp->v[1] = (Victim){ .b = b, .lid = b->lid };
    while (now_ms() < end) {
        rp_service(rp);
        if (rp->lid && rp->joined && rp->v[0].known && rp->v[1].known) {
            return true;
        }
        msleep(2);
    }
    return false;
}


/* A random DIMMnet-2 packet for victim v from the registered peer: never
 * PG (the known-good traffic's group), mostly for WID 1 (PG2). */
static size_t hostile_pkt(Rng *r, uint8_t *p, uint16_t dlid)
{
    static const uint8_t types[] = { DN2_OP_RVS, DN2_OP_RVSS, DN2_OP_RVSI, DN2_OP_RVL,
                                     DN2_OP_RVLS, DN2_OP_RVLI, DN2_OP_IPUSH };
    struct dn2_hdr h;
    unsigned lines, dlen, i;
    uint64_t w[4];

    memset(&h, 0, sizeof(h));
    h.type = rndn(r, 10) < 7 ? types[rndn(r, sizeof(types))] : (uint8_t)rndn(r, 32);
    h.dtype = (uint8_t)rndn(r, 8);
    h.iter = rndn(r, 2) ? (uint8_t)rndn(r, 16) : (uint8_t)rnd(r);
    do {
        h.pgid = rndn(r, 10) < 6 ? PG2 : (uint8_t)rnd(r);
    } while (h.pgid == PG);
    h.dwid = rndn(r, 5) ? 1 : 0;
    h.swid = (uint8_t)rndn(r, 2);
    h.dlid = dlid;
    h.rflag = rndn(r, 4) == 0;
    h.eflag = (uint8_t)rndn(r, 2);
    h.hflag = rndn(r, 4) ? dn2_hdr_lines(h.type) > 2 : (uint8_t)rndn(r, 2);
    h.lflag = rndn(r, 5) == 0;
    h.pflag = rndn(r, 5) == 0;
    h.w1_lo = rndn(r, 5) ? (uint32_t)rndn(r, 128 * MiB) : (uint32_t)rnd(r);
    h.w1_hi = rndn(r, 3) ? (uint32_t)rndn(r, 300) : (uint32_t)rnd(r);
    h.total = rndn(r, 10) ? (uint32_t)rndn(r, 64 * KiB) : (uint32_t)rnd(r);
    h.stride = rndn(r, 3) ? (uint32_t)rndn(r, 4096) : (uint32_t)rnd(r);
    h.ex = rndn(r, 2) ? 0 : rnd(r);
    lines = rndn(r, 8) ? dn2_hdr_lines(h.type) : (unsigned)rndn(r, 5);
    if (lines < 1) {
        lines = 1;
    }
    dlen = rndn(r, 10) < 7 ? (unsigned)rndn(r, 513) : (unsigned)rndn(r, DN2_PKT_MAX - lines * 8 + 1);
    if (h.type >= DN2_OP_RVL && h.type <= DN2_OP_RVLI && rndn(r, 4)) {
        dlen = 0;
    }
    h.size = rndn(r, 10) < 7 ? (uint16_t)dn2_pkt_size_field(lines * 8 + dlen) :
                               (uint16_t)rndn(r, 4096);
    w[0] = dn2_hdr0_encode(&h);
    w[1] = dn2_hdr1_encode(h.w1_lo, h.w1_hi);
    w[2] = dn2_hdr1_encode(h.total, h.stride);
    w[3] = h.ex;
    for (i = 0; i < lines * 8; i++) {
        p[i] = i < 32 ? (uint8_t)(w[i / 8] >> (8 * (i % 8))) : (uint8_t)rnd(r);
    }
    for (i = 0; i < dlen; i++) {
        p[lines * 8 + i] = (uint8_t)rnd(r);
    }
    if (lines * 8 + dlen < DN2F_PKT_MIN) {
        memset(p + lines * 8 + dlen, 0, DN2F_PKT_MIN - lines * 8 - dlen);
        dlen = DN2F_PKT_MIN - lines * 8;
    }
    return lines * 8 + dlen;
}

static void mutate(Rng *r, uint8_t *buf, size_t *len, size_t cap)
{
    unsigned n = 1 + (unsigned)rndn(r, 4), i;

    for (i = 0; i < n; i++) {
        switch (rndn(r, 7)) {
        case 0: case 1:             /* flip a bit */
            if (*len) {
                size_t k = rndn(r, *len);
                buf[k] ^= (uint8_t)(1u << rndn(r, 8));
            }
            break;
        case 2:                     /* a random byte, biased to the header */
            if (*len) {
                size_t k = rndn(r, 2) ? rndn(r, *len < 48 ? *len : 48) : rndn(r, *len);
                buf[k] = (uint8_t)rnd(r);
            }
            break;
        case 3:                     /* truncate */
            *len = rndn(r, *len + 1);
            break;
        case 4:                     /* extend with random bytes */
            {
                size_t add = rndn(r, 64), k;
                for (k = 0; k < add && *len < cap; k++) {
                    buf[(*len)++] = (uint8_t)rnd(r);
                }
            }
            break;
        case 5:                     /* the length field lies */
            if (*len >= 16) {
                uint32_t l = rndn(r, 2) ? (uint32_t)(*len + rndn(r, 9) - 4) : (uint32_t)rnd(r);
                memcpy(buf + 12, &l, 4);
            }
            break;
        default:                    /* a 32-bit field gets an edge value */
            if (*len >= 8) {
                static const uint32_t e[] = { 0, 1, 0x7fffffff, 0x80000000, 0xffffffff,
                                              0xfffe, 0x10000 };
                size_t k = rndn(r, *len - 3) & ~(size_t)3;
                memcpy(buf + k, &e[rndn(r, 7)], 4);
            }
            break;
        }
    }
}


/* A well-formed message of a random type with random fields. */
static size_t random_msg(Rng *r, uint8_t *buf, size_t cap, uint16_t src, uint16_t dst,
                         uint64_t se, uint64_t de, bool to_switch)
{
    struct dn2f_wbuf w;
    unsigned type = 1 + (unsigned)rndn(r, DN2F_T_MAX - 1), flags = 0, i, n;

    if (type == DN2F_T_HELLO && to_switch && rndn(r, 8)) {
        type = DN2F_T_KEEPALIVE;    /* a HELLO makes a port: keep those rarer */
    }
    if (type == DN2F_T_DATA && rndn(r, 2)) {
        flags |= DN2F_F_ACK;
    }
    dn2f_wbuf_init(&w, buf, cap);
    dn2f_put_hdr(&w, type, flags, src, dst, se, de);
    if (rndn(r, 3) == 0) {
        dn2f_hdr_set_sessions(&w, (uint32_t)rndn(r, 4), (uint32_t)rndn(r, 4));
    }
    switch (type) {
    case DN2F_T_HELLO: {
        struct dn2f_hello h = { .guid = rnd(r) | 1,
                                .lid_hint = rndn(r, 2) ? 0 : (uint16_t)(1 + rndn(r, 0xff)) };
        dn2f_put_hello(&w, &h);
        break;
    }
    case DN2F_T_ASSIGN: {
        struct dn2f_assign a = { .guid = rnd(r), .lid = (uint16_t)rnd(r),
                                 .link_state = (uint8_t)rndn(r, 4),
                                 .route_mode = (uint8_t)rndn(r, 3) };
        dn2f_put_assign(&w, &a);
        break;
    }
    case DN2F_T_ROUTES: {
        unsigned nr = (unsigned)rndn(r, 6), ng = (unsigned)rndn(r, 3);
        dn2f_put_routes_hdr(&w, (uint32_t)rnd(r), 0, 1, (uint16_t)nr, (uint16_t)ng);
        for (i = 0; i < nr; i++) {
            struct dn2f_route rt;
            memset(&rt, 0, sizeof(rt));
            rt.lid = (uint16_t)(1 + rndn(r, 0xff));
            rt.flags = DN2F_RT_DIRECT;
            dn2f_addr_parse(&rt.addr, "127.0.0.1:9");
            rt.epoch = rnd(r);
            dn2f_put_route(&w, &rt);
        }
        for (i = 0; i < ng; i++) {
            uint16_t m[4] = { src, dst, 1, 2 };
            dn2f_put_group(&w, dn2_clid_to_lid((uint16_t)(DN2_CLID_MCAST_FIRST + rndn(r, 64))),
                           (uint16_t)rndn(r, 5), m);
        }
        break;
    }
    case DN2F_T_DATA: {
        uint8_t pkt[DN2_PKT_MAX];
        if (flags & DN2F_F_ACK) {
            bool two = rndn(r, 3) == 0;
            dn2f_put_ack(&w, (unsigned)rndn(r, 2), two, (uint32_t)rnd(r), (uint32_t)rnd(r), 0,
                         NULL);
            if (two) {
                dn2f_put_ack(&w, (unsigned)rndn(r, 3), false, (uint32_t)rnd(r),
                             (uint32_t)rnd(r), 0, NULL);
            }
        }
        n = 1 + (unsigned)rndn(r, 4);
        for (i = 0; i < n; i++) {
            size_t l = hostile_pkt(r, pkt, dst);
            unsigned kind = rndn(r, 4) ? DN2F_REC_UNICAST : (unsigned)rndn(r, 3);
            unsigned lane = dn2f_pkt_lane(pkt);
            uint16_t ml[2] = { dst, src };
            uint32_t ms[2] = { (uint32_t)rnd(r), 0 };
            uint64_t me[2] = { de, rnd(r) };
            if (kind == DN2F_REC_UNICAST && lane >= DN2F_LANE_REQ && rndn(r, 5)) {
                dn2f_put_req(&w, dn2f_lane_rflags(lane) | (unsigned)rndn(r, 2),
                             (uint32_t)rndn(r, 1000), (uint32_t)rndn(r, 1000), pkt, l);
                continue;
            }
            dn2f_put_rec(&w, kind,
                         rndn(r, 5) ? dn2f_lane_rflags(lane) | (unsigned)rndn(r, 2) :
                                      (unsigned)rndn(r, 256),
                         (uint32_t)rndn(r, 1000),
                         kind ? dn2_clid_to_lid(DN2_CLID_MCAST_FIRST) : 0,
                         kind == DN2F_REC_MCAST_ORIGIN ? 1 + (unsigned)rndn(r, 2) : 0,
                         ml, ms, me, pkt, l);
        }
        break;
    }
    case DN2F_T_ACK: {
        uint8_t bits[128];
        unsigned nb = 32 * (unsigned)rndn(r, 5);
        for (i = 0; i < nb / 8; i++) {
            bits[i] = (uint8_t)rnd(r);
        }
        dn2f_put_ack(&w, (unsigned)rndn(r, DN2F_NUM_LANES + 1), false, (uint32_t)rndn(r, 4096),
                     (uint32_t)rndn(r, 8192), (uint16_t)nb, bits);
        break;
    }
    case DN2F_T_KEEPALIVE: {
        struct dn2f_ticket tk;
        memset(&tk, 0, sizeof(tk));
        for (i = 0; i < sizeof(tk); i++) {
            ((uint8_t *)&tk)[i] = (uint8_t)rnd(r);
        }
        dn2f_put_keepalive(&w, (uint32_t)rnd(r), rnd(r), rndn(r, 2) ? &tk : NULL);
        break;
    }
    case DN2F_T_STATS_REQ:
        dn2f_put_stats_req(&w, (uint32_t)rnd(r), (uint16_t)rndn(r, 4),
                           rndn(r, 2) ? DN2F_STATS_REQ_MIN : 64);
        break;
    case DN2F_T_BYE:
        dn2f_put_u32pair(&w, rndn(r, 2) ? (uint32_t)rndn(r, 6) : (uint32_t)rnd(r), 0);
        break;
    case DN2F_T_STATS_RESP: {
        struct dn2f_swsummary su;
        memset(&su, 0, sizeof(su));
        su.uptime_ms = rnd(r);
        dn2f_put_stats_hdr(&w, (uint32_t)rnd(r), 0, 1, 0, &su);
        break;
    }
    default:
        dn2f_put_mcast(&w, dn2_clid_to_lid((uint16_t)(DN2_CLID_MCAST_FIRST + rndn(r, 0x3ff))));
        break;
    }
    return dn2f_finish(&w);
}


/* Forged traffic: claims to be the other victim (right LIDs, epochs when
 * known) from a socket that is not it: RVS into the guard region, ACKs. */
static size_t forged_msg(Rng *r, uint8_t *buf, size_t cap, Victim *to, Victim *as)
{
    struct dn2f_wbuf w;
    uint8_t pkt[1024];
    struct dn2_hdr h;
    unsigned i, n = 1 + (unsigned)rndn(r, 4);
    uint64_t se = rndn(r, 10) < 7 ? as->epoch : rnd(r);
    uint64_t de = rndn(r, 10) < 7 ? to->epoch : rnd(r);

    dn2f_wbuf_init(&w, buf, cap);
    if (rndn(r, 4) == 0) {
        dn2f_put_hdr(&w, DN2F_T_ACK, 0, as->lid, to->lid, se, de);
        dn2f_hdr_set_sessions(&w, (uint32_t)rndn(r, 8), (uint32_t)rndn(r, 8));
        dn2f_put_ack(&w, (unsigned)rndn(r, 2), false, (uint32_t)rndn(r, 100000),
                     (uint32_t)rndn(r, 100000), 0, NULL);
        return dn2f_finish(&w);
    }
    dn2f_put_hdr(&w, DN2F_T_DATA, 0, as->lid, to->lid, se, de);
    dn2f_hdr_set_sessions(&w, (uint32_t)rndn(r, 8), (uint32_t)rndn(r, 8));
    for (i = 0; i < n; i++) {
        size_t dlen = 8 * (1 + rndn(r, 100)), k;
        uint64_t w0, w1;
        uint32_t dst = (uint32_t)(GUARD_OFF + (rndn(r, GUARD_LEN - dlen) & ~7ull));
        memset(&h, 0, sizeof(h));
        h.type = DN2_OP_RVS;
        h.pgid = PG;
        h.dlid = to->lid;
        h.eflag = 1;
        h.w1_lo = h.w1_hi = dst;
        h.size = dn2_pkt_size_field(16 + dlen);
        w0 = dn2_hdr0_encode(&h);
        w1 = dn2_hdr1_encode(dst, dst);
        for (k = 0; k < 8; k++) {
            pkt[k] = (uint8_t)(w0 >> (8 * k));
            pkt[8 + k] = (uint8_t)(w1 >> (8 * k));
        }
        for (k = 16; k < 16 + dlen; k++) {
            pkt[k] = (uint8_t)(rnd(r) | 1);
        }
        dn2f_put_rec(&w, DN2F_REC_UNICAST, 0, (uint32_t)rndn(r, 4096), 0, 0, NULL, NULL, NULL,
                     pkt, 16 + dlen);
    }
    return dn2f_finish(&w);
}


/* DATA from the registered peer: in sequence (so it is delivered), now
 * and then out of the window or with a bogus ACK block. */
static size_t peer_data(Rng *r, RawPeer *rp, Victim *v, uint8_t *buf, size_t cap)
{
    struct dn2f_wbuf w;
    uint8_t pkt[DN2_PKT_MAX];
    unsigned i, n = 1 + (unsigned)rndn(r, 6), flags = rndn(r, 5) ? 0 : DN2F_F_ACK;

    dn2f_wbuf_init(&w, buf, cap);
    dn2f_put_hdr(&w, DN2F_T_DATA, flags, rp->lid, v->lid, rp->epoch, v->epoch);
    dn2f_hdr_set_sessions(&w, rp->sess, rndn(r, 20) ? v->sess : (uint32_t)rnd(r));
    if (flags) {
        unsigned ln = (unsigned)rndn(r, DN2F_NUM_LANES);
        dn2f_put_ack(&w, ln, false, rndn(r, 2) ? v->rx_cum[ln] : (uint32_t)rnd(r),
                     v->rx_cum[ln] + (uint32_t)rndn(r, 1024), 0, NULL);
    }
    for (i = 0; i < n; i++) {
        size_t l = hostile_pkt(r, pkt, v->lid);
        unsigned ln = dn2f_pkt_lane(pkt) % DN2F_NUM_LANES;
        uint32_t seq = rndn(r, 10) ? v->tx_seq[ln]++ : (uint32_t)rnd(r);
        bool ok = ln >= DN2F_LANE_REQ ?
            dn2f_put_req(&w, dn2f_lane_rflags(ln), seq,
                         rndn(r, 10) ? v->tx_seq[ln - DN2F_LANE_REQ] : (uint32_t)rnd(r), pkt, l) :
            dn2f_put_rec(&w, DN2F_REC_UNICAST, dn2f_lane_rflags(ln), seq, 0, 0, NULL, NULL, NULL,
                         pkt, l);
        if (!ok) {
            break;
        }
    }
    return dn2f_finish(&w);
}


/* WID 1 of a victim: its status ring, IPUSH ring and LH Buffer freed
 * (as a guest would consume them), so back-pressure comes and goes. */
static void victim_drain(Board *b)
{
    Rec rec[256];
    uint32_t tail;

    st_take(b, 1, rec, 256);
    tail = (uint32_t)rdq(b, b->base + DN2_LLCM_OFF(1) + AMT_ENT + DN2_AMT_TAIL) & 0xffffffffu;
    wrq(b, b->base + DN2_LLCM_OFF(1) + AMT_ENT + DN2_AMT_HEAD,
        (rdq(b, b->base + DN2_LLCM_OFF(1) + AMT_ENT) & 0xffffffff00000000ull) | tail);
    ur_w(b, 1, DN2_UR_LHB_ADDR, ur(b, 1, DN2_UR_LHB_ADDR));
}

static void victim_setup(Board *b, uint16_t peer_lid)
{
    uint8_t e[DN2_AMT_ENTRY];
    uint32_t v[4] = { 0, 0, IPR_BASE, IPR_SIZE };
    int swid;

    memcpy(e, v, sizeof(e));
    qq_write(b, b->base + DN2_LLCM_OFF(1) + AMT_ENT, e, sizeof(e));
    q_flush(b, T_CMD);
    ur_w(b, 1, DN2_UR_IPUSH_AREA_SIZE, 0x100);
    for (swid = 0; swid < 2; swid++) {
        sr_w(b, DN2_SR_AMT, dn2_amt_encode((DN2_LLCM_OFF(1) - DN2_LLCM_BASE + AMT_ENT) /
                                           DN2_AMT_UNIT, (uint32_t)swid, peer_lid));
    }
}

static void hostile_round_trips(Board *a, Board *b, Rng *r)
{
    size_t len = 4096 * (1 + rndn(r, 2)) + 1 + rndn(r, 3000);

    round_trip(a, b, CHK_OFF, CHK_OFF + 1 * MiB, CHK_OFF + 2 * MiB, CHK_OFF + 3 * MiB, len);
    round_trip(b, a, CHK_OFF + 4 * MiB, CHK_OFF + 5 * MiB, CHK_OFF + 6 * MiB,
               CHK_OFF + 7 * MiB, len);
}

static RawPeer *g_rp;

static void rp_idle(void)
{
    if (g_rp) {
        rp_service(g_rp);
    }
}


/* Learn where victim v's lanes from us stand: an ACK with ACKREQ, answered
 * by an ACK (acked[] updated).  While muted it acknowledges nothing new. */
static bool rp_probe(RawPeer *rp, Victim *v, unsigned ms)
{
    static uint8_t buf[256];
    struct dn2f_wbuf w;
    uint64_t e = now_ms() + ms, nx = 0;

    v->ack_seen = false;
    while (now_ms() < e && !v->ack_seen) {
        if (now_ms() >= nx) {
            dn2f_wbuf_init(&w, buf, sizeof(buf));
            dn2f_put_hdr(&w, DN2F_T_ACK, DN2F_F_ACKREQ, rp->lid, v->lid, rp->epoch, v->epoch);
            dn2f_hdr_set_sessions(&w, rp->sess, v->sess);
            dn2f_put_ack(&w, 0, false, v->rx_cum[0], v->rx_cum[0] + 512, 0, NULL);
            raw_send(rp->fd, &v->addr, buf, dn2f_finish(&w));
            nx = now_ms() + 50;
        }
        rp_service(rp);
        msleep(1);
    }
    return v->ack_seen;
}


/*
 * A joined peer that asks board a for data (4 RVLs of 1 MiB from a's WID 1)
 * and then acknowledges nothing, while it keeps itself in the switch's
 * table: a's Receive Controller answer stalls on credits.  The device
 * abandons such an answer after rc-timeout-ms (docs/security.md: "a remote
 * requester cannot hold a board's Window Controller hostage"); meanwhile
 * a known-good RVL from b must be answered, within that bound.
 */
static void silent_peer(RawPeer *rp, Board *a, Board *b, Rng *r)
{
    enum { RQ = DN2F_LANE_REQ + 1 };    /* the RVL lane to a's WID 1 */
    static uint8_t buf[DN2F_DGRAM_MAX];
    Victim *v = rp_victim(rp, a->lid);
    struct dn2f_wbuf w;
    uint64_t ab0 = 0, ab1 = 0, t0;
    int k, tries;

    if (!qom_try(a, "rc-timeout-ms", &P2.rc_timeout_ms)) {
        P2.rc_timeout_ms = 0;
    }
    static const char *const pr[] = { "stat-rx-packets", "stat-tx-packets", "stat-rx-drop-pgid",
                                      "stat-rx-drop-noproc", "stat-rx-drop-bad",
                                      "stat-rx-stalls", "stat-link-drops" };
    uint64_t c0[7] = { 0 };
    qom_try(a, "stat-rc-abandoned", &ab0);
    for (k = 0; k < 7 && verbose; k++) {
        c0[k] = qom(a, pr[k]);
    }
    for (t0 = now_ms(), tries = 0; now_ms() < t0 + 3000; tries++) {
    uint32_t base;
    /* where the victim's lane 1 from us stands (the storm's random sequence
     * numbers leave us no idea): probe (ACK with ACKREQ), then send exactly
     * there */
    if (!tries) {
        /* Start over with the victim: a newer session of ours makes it reset
         * every lane toward us (docs/fabric.md, sessions), so nothing the
         * storm left (random sequence numbers, requests waiting for an
         * "after" that never comes) is in the way. */
        rp->sess++;
        for (k = 0; k < 2; k++) {
            memset(rp->v[k].tx_seq, 0, sizeof(rp->v[k].tx_seq));
            memset(rp->v[k].rx_cum, 0, sizeof(rp->v[k].rx_cum));
            memset(rp->v[k].rx_seen, 0, sizeof(rp->v[k].rx_seen));
            memset(rp->v[k].acked, 0, sizeof(rp->v[k].acked));
        }
    }
    rp->mute = true;            /* from now on the victim's answers go unacknowledged */
    rp_probe(rp, v, 500);
    base = v->tx_seq[RQ] = v->acked[RQ];
    dn2f_wbuf_init(&w, buf, sizeof(buf));
    dn2f_put_hdr(&w, DN2F_T_DATA, DN2F_F_ACKREQ, rp->lid, v->lid, rp->epoch, v->epoch);
    dn2f_hdr_set_sessions(&w, rp->sess, v->sess);
    for (k = 0; k < 4; k++) {
        uint8_t pkt[32];
        struct dn2_hdr h;
        uint64_t wd[4];
        int j;
        memset(&h, 0, sizeof(h));
        h.type = DN2_OP_RVL;
        h.hflag = 1;
        h.pgid = PG2;
        h.dwid = 1;
        h.dlid = v->lid;
        h.size = sizeof(pkt);
        h.w1_lo = (uint32_t)(k * MiB);          /* source on a (WID 1) */
        h.w1_hi = (uint32_t)(k * MiB);          /* where it would land here */
        wd[0] = dn2_hdr0_encode(&h);
        wd[1] = dn2_hdr1_encode(h.w1_lo, h.w1_hi);
        wd[2] = dn2_hdr1_encode((uint32_t)MiB, 0);
        wd[3] = 0;
        for (j = 0; j < 32; j++) {
            pkt[j] = (uint8_t)(wd[j / 8] >> (8 * (j % 8)));
        }
        /* a request lane: delivered after our data lane 1 up to tx_seq[1] */
        dn2f_put_req(&w, dn2f_lane_rflags(RQ), v->tx_seq[RQ]++, v->tx_seq[1], pkt, sizeof(pkt));
    }
    raw_send(rp->fd, &v->addr, buf, dn2f_finish(&w));
    for (uint64_t e = now_ms() + 100; now_ms() < e && (int32_t)(v->acked[RQ] - base) < 4;) {
        rp_service(rp);
        msleep(1);
    }
    if ((int32_t)(v->acked[RQ] - base) >= 4) {
        break;
    }
    }
    if ((int32_t)(v->acked[RQ] - v->tx_seq[RQ]) < 0) {
        note("hostile: board %s did not acknowledge the silent peer's RVLs (lane %u cum %u, "
             "sent up to %u; its session %u, ours %u; fabric drops %" PRIu64 ")", a->name, RQ,
             v->acked[RQ], v->tx_seq[RQ], v->sess, rp->sess, qom(a, "stat-link-drops"));
    }
    msleep(20);
    if (verbose) {
        for (k = 0; k < 7; k++) {
            vnote("silent peer: board %s %s +%" PRIu64, a->name, pr[k], qom(a, pr[k]) - c0[k]);
        }
        vnote("silent peer: board %s Module State 0x%" PRIx64 ", lane 1 tx-seq %u acked %u, "
              "lane %u tx-seq %u acked %u", a->name, ur(a, 0, DN2_UR_MODULE_STATE), v->tx_seq[1],
              v->acked[1], RQ, v->tx_seq[RQ], v->acked[RQ]);
    }
    t0 = now_ms();
    hostile_round_trips(a, b, r);
    P2.silent_ms = now_ms() - t0;
    /* and the silent peer's answers are given up on within the bound */
    for (uint64_t e = t0 + P2.rc_timeout_ms + 5000; now_ms() < e; msleep(20)) {
        rp_service(rp);
        if (qom_try(a, "stat-rc-abandoned", &ab1) && ab1 > ab0) {
            break;
        }
    }
    P2.abandon_ms = now_ms() - t0;
    rp->mute = false;
    qom_try(a, "stat-rc-abandoned", &ab1);
    P2.rc_abandoned = ab1 - ab0;
    P2.silent_ok = P2.rc_timeout_ms && P2.silent_ms <= P2.rc_timeout_ms + 5000 &&
                   P2.rc_abandoned > 0;
    note("hostile: a joined peer asked board %s for 4 MiB and acknowledged nothing: the "
         "known-good round trips took %" PRIu64 " ms (RVL %" PRIu64 " ms); %" PRIu64
         " RC answers to it abandoned after %" PRIu64 " ms (rc-timeout-ms %" PRIu64 ")",
         a->name, P2.silent_ms, last_rvl_ms, P2.rc_abandoned, P2.abandon_ms,
         P2.rc_timeout_ms);
}

static void hostile_run(bool secret)
{
    static Sw sw;
    static Board A, B;
    static RawPeer rp;
    static uint8_t buf[DN2F_DGRAM_MAX + 64];
    Board *bs[2] = { &A, &B };
    struct dn2f_addr board_addr[2], me;
    int fsock[NFUZZSOCK], i;
    char props[256], st[4096];
    Rng r;
    uint64_t t0, next_check, every, base_rx[2], base_drops[2], base_stalls[2], base_acc[2];
    int64_t first;

    uint64_t ndg = secret ? opt_datagrams / 4 : opt_datagrams;

    P2p = &P2v[secret];
    use_secret = secret;
    P2.ran = true;
    memset(&sw, 0, sizeof(sw));
    dn2f_rng_seed(&r, opt_seed ^ 0x686f7374 ^ (secret ? 0x5ec : 0));
    every = ndg / 10 ? ndg / 10 : 1;
    psw = &sw;
    if (!sw_start(&sw, 0)) {
        phase_fail("dn2-switch did not start");
    }
    for (i = 0; i < 2; i++) {
        char a[64];
        int port = free_udp_port();
        snprintf(props, sizeof(props), "switch=127.0.0.1:%d,local=127.0.0.1:%d,guid=0x%x%s",
                 sw.port, port, 0xc1 + i, i ? ",rx-thread=on" : "");
        board_start(bs[i], i ? "B" : "A", 256 * MiB, props);
        bs[i]->udp_port = port;
        snprintf(a, sizeof(a), "127.0.0.1:%d", port);
        dn2f_addr_parse(&board_addr[i], a);
        if (!wait_link(bs[i], T_LINK)) {
            hang("board %s: no link at start", bs[i]->name);
        }
        board_bringup(bs[i], PG, PG2);
    }
    P2.peer_ok = rp_register(&rp, sw.port, &A, &B, opt_seed ^ 0x7261770000ull,
                             secret ? 3000 : T_LINK);
    if (secret) {
        /* without the secret it must not get in; it becomes one more stranger */
        P2.bye_reason = rp.bye_reason;
        note("hostile (cluster secret): the hostile peer, which lacks the secret, %s (the "
             "switch's last BYE: %s)", P2.peer_ok ? "JOINED the switch" :
             "could not join (as it must not)", rp.bye_reason < 0 ? "none" :
             dn2f_bye_name((unsigned)rp.bye_reason));
        for (i = 0; i < 2; i++) {
            rp.v[i].epoch = rnd(&r);
            rp.v[i].addr = board_addr[i];
        }
    } else if (!P2.peer_ok) {
        /* go on with what strangers can send; the run fails all the same */
        note("FAIL: the hostile peer could not join the switch (LID 0x%x, joined %d, victims "
             "known %d %d); this tool speaks fabric wire version %d with %d-byte headers: are "
             "dn2-switch and QEMU built from the same sources as tools/soak?", rp.lid,
             rp.joined, rp.v[0].known, rp.v[1].known, DN2F_VERSION, DN2F_HDR_LEN);
        for (i = 0; i < 2; i++) {
            rp.v[i].epoch = rnd(&r);
            rp.v[i].addr = board_addr[i];
        }
    }
    if (P2.peer_ok && !secret) {
        g_rp = &rp;
        idle_hook = rp_idle;    /* the peer answers while we wait */
    }
    for (i = 0; i < 2 && P2.peer_ok && !secret; i++) {
        char a[64];
        if (!dn2f_addr_equal(&rp.v[i].addr, &board_addr[i])) {
            phase_fail("the routing table gives board %s the address %s, not 127.0.0.1:%d",
                       bs[i]->name, dn2f_addr_str(&rp.v[i].addr, a, sizeof(a)),
                       bs[i]->udp_port);
        }
        victim_setup(bs[i], rp.lid);
    }
    for (i = 0; i < NFUZZSOCK; i++) {
        dn2f_addr_parse(&me, "127.0.0.1:0");
        fsock[i] = dn2f_udp_open(&me, 4 << 20);
        if (fsock[i] < 0) {
            die("UDP socket: %s", strerror(-fsock[i]));
        }
    }
    note("hostile%s: boards A (127.0.0.1:%d, LID 0x%x) and B (127.0.0.1:%d, LID 0x%x, "
         "rx-thread) on dn2-switch port %d; hostile peer LID 0x%x; %" PRIu64 " datagrams",
         secret ? " (cluster secret)" : "", A.udp_port, A.lid, B.udp_port, B.lid, sw.port,
         rp.lid, ndg);
    hostile_round_trips(&A, &B, &r);
    for (i = 0; i < 2; i++) {
        base_rx[i] = qom(bs[i], "stat-link-dgrams-rx");
        base_drops[i] = qom(bs[i], "stat-link-drops");
        base_stalls[i] = qom(bs[i], "stat-rx-stalls");
        base_acc[i] = qom(bs[i], "stat-rx-packets");
    }
    t0 = qb_now_ns();
    next_check = every;
    while (P2.sent < ndg) {
        unsigned k = (unsigned)rndn(&r, 1000), tgt = (unsigned)rndn(&r, 10);
        int t = tgt < 4 ? 1 : tgt < 7 ? 0 : 2;      /* B, A, the switch */
        int fd = fsock[rndn(&r, NFUZZSOCK)], kind;
        size_t len = 0;
        Victim *v = t < 2 ? &rp.v[t] : &rp.v[rndn(&r, 2)];
        Victim *o = &rp.v[v == &rp.v[0]];
        const struct dn2f_addr *to = t < 2 ? &board_addr[t] : &rp.sw;

        if (k < 150) {
            kind = 0;
            len = rndn(&r, 10) < 7 ? rndn(&r, 200) : rndn(&r, 10) ? rndn(&r, 2000) :
                                                                   rndn(&r, DN2F_DGRAM_MAX + 1);
            for (size_t j = 0; j < len; j++) {
                buf[j] = (uint8_t)rnd(&r);
            }
        } else if (k < 250) {
            uint32_t magic = DN2F_MAGIC;
            kind = 1;
            len = 4 + rndn(&r, 200);
            memcpy(buf, &magic, 4);
            for (size_t j = 4; j < len; j++) {
                buf[j] = (uint8_t)rnd(&r);
            }
            if (len > 4 && rndn(&r, 2)) {
                buf[4] = DN2F_VERSION;
            }
        } else if (k < 400) {
            struct dn2f_wbuf w;
            size_t body = rndn(&r, 10) < 8 ? rndn(&r, 128) : rndn(&r, 8192);
            kind = 2;
            dn2f_wbuf_init(&w, buf, sizeof(buf));
            dn2f_put_hdr(&w, (unsigned)rndn(&r, 16), (unsigned)rndn(&r, 8),
                         rndn(&r, 2) ? o->lid : (uint16_t)rnd(&r),
                         rndn(&r, 2) ? v->lid : (uint16_t)rnd(&r),
                         rndn(&r, 2) ? o->epoch : rnd(&r), rndn(&r, 2) ? v->epoch : rnd(&r));
            len = DN2F_HDR_LEN + body;
            for (size_t j = DN2F_HDR_LEN; j < len; j++) {
                buf[j] = rndn(&r, 3) ? 0 : (uint8_t)rnd(&r);
            }
            {
                uint32_t l = rndn(&r, 10) < 7 ? (uint32_t)len : (uint32_t)rnd(&r);
                memcpy(buf + 12, &l, 4);
            }
        } else if (k < 600) {
            kind = 3;
            len = random_msg(&r, buf, sizeof(buf) - 64, rndn(&r, 2) ? o->lid : rp.lid,
                             t == 2 ? 0 : v->lid, rndn(&r, 2) ? o->epoch : rnd(&r),
                             rndn(&r, 2) ? v->epoch : rnd(&r), t == 2);
            if (rndn(&r, 10) < 6) {
                mutate(&r, buf, &len, sizeof(buf));
            }
        } else if (k < 700 && t < 2) {
            kind = 4;
            len = forged_msg(&r, buf, sizeof(buf), v, o);
        } else if ((!P2.peer_ok || secret) && (k < 950 || t < 2)) {
            kind = 3;
            len = random_msg(&r, buf, sizeof(buf) - 64, o->lid, t == 2 ? 0 : v->lid, o->epoch,
                             v->epoch, t == 2);
        } else if (k < 950 || t < 2) {
            /* the registered peer: to the victim, or through the switch */
            kind = 5;
            fd = rp.fd;
            len = peer_data(&r, &rp, v, buf, sizeof(buf));
            if (t == 2 && rndn(&r, 2)) {
                to = &v->addr;
            }
            if (t < 2 && rndn(&r, 10) == 0) {
                /* mutated, but not in its sessions: a "newer" session of
                 * ours from our own address would make the victim drop
                 * all our later datagrams as stale (as designed) */
                uint8_t sess[8];
                memcpy(sess, buf + 32, 8);
                mutate(&r, buf, &len, sizeof(buf));
                if (len >= 40) {
                    memcpy(buf + 32, sess, 8);
                }
            }
        } else {
            /* control traffic from strangers to the switch */
            struct dn2f_wbuf w;
            unsigned ty = (unsigned)rndn(&r, 4);
            static const unsigned tys[] = { DN2F_T_KEEPALIVE, DN2F_T_STATS_REQ, DN2F_T_MCAST_JOIN,
                                            DN2F_T_HELLO };
            kind = 6;
            dn2f_wbuf_init(&w, buf, sizeof(buf));
            dn2f_put_hdr(&w, tys[ty], 0, rndn(&r, 2) ? o->lid : (uint16_t)rndn(&r, 300), 0,
                         rnd(&r), rnd(&r));
            if (tys[ty] == DN2F_T_MCAST_JOIN) {
                dn2f_put_mcast(&w, dn2_clid_to_lid((uint16_t)(DN2_CLID_MCAST_FIRST +
                                                              rndn(&r, 0x3ff))));
            } else if (tys[ty] == DN2F_T_HELLO) {
                struct dn2f_hello hl = { .guid = rnd(&r) | 1, .lid_hint = 0 };
                dn2f_put_hello(&w, &hl);
            } else if (tys[ty] == DN2F_T_STATS_REQ) {
                dn2f_put_stats_req(&w, (uint32_t)rnd(&r), 0, DN2F_STATS_REQ_MIN);
            } else {
                dn2f_put_keepalive(&w, (uint32_t)rnd(&r), rnd(&r), NULL);
            }
            len = dn2f_finish(&w);
        }
        if (len > DN2F_DGRAM_MAX) {
            len = DN2F_DGRAM_MAX;
        }
        raw_send(fd, to, buf, len);
        P2.sent++;
        P2.kind[kind]++;
        if (to == &rp.sw) {
            P2.to_switch++;
        } else {
            P2.to_board[to == &board_addr[1] || to == &rp.v[1].addr]++;
        }
        if (!(P2.sent & 255)) {
            /* let the boards read what was sent; answer for the peer */
            rp_service(&rp);
            for (i = 0; i < NFUZZSOCK; i++) {
                while (recv(fsock[i], buf, sizeof(buf), MSG_DONTWAIT) > 0) {
                }
            }
            usleep(400);
        }
        if (!(P2.sent & 4095)) {
            for (i = 0; i < 2; i++) {
                victim_drain(bs[i]);
            }
        }
        if (P2.sent >= next_check) {
            hostile_round_trips(&A, &B, &r);
            if (!sw_stats(&sw, st, sizeof(st))) {
                hang("dn2-switch (pid %d, state %s) did not answer --stats", (int)sw.pid,
                     proc_state(sw.pid));
            }
            P2.checks++;
            note("hostile%s: %" PRIu64 " datagrams in %.1f s, round trips A<->B passed (check %u)",
                 secret ? " (cluster secret)" : "", P2.sent, (qb_now_ns() - t0) / 1e9, P2.checks);
            next_check += every;
        }
    }
    P2.secs = (qb_now_ns() - t0) / 1e9;
    P2.sent_ok = secret ? !P2.peer_ok : P2.peer_ok;
    /* afterwards: the peer stays polite for a while; then the checks */
    for (t0 = now_ms(); now_ms() < t0 + 500;) {
        rp_service(&rp);
        msleep(5);
    }
    for (i = 0; i < 2; i++) {
        victim_drain(bs[i]);
        P2.rx_board[i] = qom(bs[i], "stat-link-dgrams-rx") - base_rx[i];
        P2.drops_board[i] = qom(bs[i], "stat-link-drops") - base_drops[i];
        P2.stalls_board[i] = qom(bs[i], "stat-rx-stalls") - base_stalls[i];
        P2.accepted_board[i] = qom(bs[i], "stat-rx-packets") - base_acc[i];
    }
    if (sw_stats(&sw, st, sizeof(st))) {
        P2.sw_bad = (uint64_t)stat_key(st, "bad");
        P2.sw_in = (uint64_t)stat_key(st, "datagrams_in");
    }
    P2.guard_ok = true;
    for (i = 0; i < 2; i++) {
        if (!sd_is_zero(bs[i], GUARD_OFF, GUARD_LEN, &first)) {
            P2.guard_ok = false;
            note("FAIL: board %s: forged data in the guard region at SO-DIMM 0x%" PRIx64,
                 bs[i]->name, (uint64_t)(GUARD_OFF + (uint64_t)first));
        }
    }
    hostile_round_trips(&A, &B, &r);
    if (!sw_stats(&sw, st, sizeof(st))) {
        hang("dn2-switch (pid %d, state %s) did not answer --stats after the storm",
             (int)sw.pid, proc_state(sw.pid));
    }
    if (P2.peer_ok && !secret) {
        silent_peer(&rp, &A, &B, &r);
    }
    /* the switch still does its job: A renegotiates (SMA reset) */
    {
        uint16_t lid = A.lid;
        sr_w(&A, DN2_SR_SMA, 1);
        if (!wait_link(&A, T_LINK)) {
            hang("board A: no link within %u ms after an SMA reset (the switch after the "
                 "storm)", T_LINK);
        }
        if (A.lid != lid) {
            phase_fail("board A came back with LID 0x%x, not 0x%x", A.lid, lid);
        }
        msleep(100);    /* A's new epoch reaches B in the next routing table */
        hostile_round_trips(&A, &B, &r);
    }
    P2.after_ok = true;
    note("hostile%s: sent %" PRIu64 " (A %" PRIu64 ", B %" PRIu64 ", switch %" PRIu64
         ") in %.1f s; received by A %" PRIu64 ", B %" PRIu64 "; fabric drops A %" PRIu64
         " B %" PRIu64 "; packets accepted A %" PRIu64 " B %" PRIu64 "; receive stalls A %"
         PRIu64 " B %" PRIu64 "; switch bad=%" PRIu64 " of %" PRIu64,
         secret ? " (cluster secret)" : "", P2.sent, P2.to_board[0],
         P2.to_board[1], P2.to_switch, P2.secs, P2.rx_board[0], P2.rx_board[1],
         P2.drops_board[0], P2.drops_board[1], P2.accepted_board[0], P2.accepted_board[1],
         P2.stalls_board[0], P2.stalls_board[1], P2.sw_bad, P2.sw_in);
    for (i = 0; i < 7; i++) {
        note("hostile:   %-40s %" PRIu64, kind_name[i], P2.kind[i]);
    }
    note("hostile:   peer: %" PRIu64 " DATA from the victims acknowledged, %" PRIu64
         " re-HELLOs", P2.peer_data_in, P2.peer_rehello);
    for (i = 0; i < NFUZZSOCK; i++) {
        close(fsock[i]);
    }
    idle_hook = NULL;
    g_rp = NULL;
    close(rp.fd);
}

void phase_hostile(void)
{
    hostile_run(false);
}

void phase_hostile_secret(void)
{
    hostile_run(true);
}
