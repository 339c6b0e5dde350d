/* SPDX-License-Identifier: MIT */
/*
 * dn2fab endpoint, the outgoing side: control datagrams to the switch, ACK
 * blocks, batching of queued packets into DATA datagrams (first
 * transmissions and retransmissions), multicast origin datagrams, flush,
 * and dn2f_ep_send / dn2f_ep_can_send (the requester).
 * See dn2fab-ep.h for the other files.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1
#endif
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "dn2fab-ep.h"

/* ------------------------------------------------------------ datagrams */
static int send_dgram(struct dn2f_ep *ep, const struct dn2f_addr *to, const void *buf, size_t len)
{
    int rc;
    if (!len || !to->len) {
        return -EINVAL;
    }
    if (ep->left) {
        return 0;               /* the board has left: as if lost on the wire */
    }
    rc = ep->ops.send_datagram(ep->opaque, to, buf, len);
    if (rc == -EAGAIN || rc == -EWOULDBLOCK || rc == -ENOBUFS) {
        ep->st.send_eagain++;
        ep->blocked_until = now(ep) + 200000;
        return -EAGAIN;
    }
    ep->st.tx_dgrams++;         /* other errors: as if lost on the wire */
    return 0;
}

static const struct dn2f_addr *next_hop(struct dn2f_ep *ep, struct peer *p)
{
    if (ep->mode == DN2F_ROUTE_DIRECT && p->direct) {
        return &p->addr;
    }
    return &ep->cfg.sw;
}

/* The length, and the MAC when a secret is set. */
static size_t finish_ctrl(struct dn2f_ep *ep, struct dn2f_wbuf *w)
{
    return ep->auth ? dn2f_finish_mac(w, &ep->kctl) : dn2f_finish(w);
}

static size_t finish_data(struct dn2f_ep *ep, const struct dn2f_hmac_key *k, struct dn2f_wbuf *w)
{
    return ep->auth ? dn2f_finish_mac(w, k) : dn2f_finish(w);
}

/* ------------------------------------------------------------ control tx */
void ep_send_ctrl(struct dn2f_ep *ep, unsigned type, uint32_t a, uint32_t b)
{
    uint8_t buf[128];
    struct dn2f_wbuf w;
    size_t len;

    dn2f_wbuf_init(&w, buf, sizeof(buf));
    dn2f_put_hdr(&w, type, 0, ep->lid, 0, ep->epoch, ep->sw_epoch);
    if (type == DN2F_T_HELLO) {
        struct dn2f_hello h = { .guid = ep->cfg.guid, .lid_hint = ep->lid_hint };
        dn2f_put_hello(&w, &h);
    } else if (type == DN2F_T_MCAST_JOIN || type == DN2F_T_MCAST_LEAVE) {
        dn2f_put_mcast(&w, (uint16_t)a);
    } else if (type == DN2F_T_VT_REPORT) {
        struct dn2f_vt_report r = {
            .rseq = ep->vt.s_rseq, .now = ep->vt.s_now, .earliest = ep->vt.s_earliest,
        };
        dn2f_put_vt_report(&w, &r);
    } else if (type == DN2F_T_KEEPALIVE) {
        /* while joining, the ASSIGN's ticket proves we receive at our address */
        dn2f_put_keepalive(&w, a, ep->cfg.guid,
                           ep->link == DN2F_LINK_ASSIGNED ? &ep->ticket : NULL);
    } else {
        dn2f_put_u32pair(&w, a, b);
    }
    len = finish_ctrl(ep, &w);
    if (send_dgram(ep, &ep->cfg.sw, buf, len) == 0) {
        ep->st.tx_ctrl_dgrams++;
    }
}


/* ------------------------------------------------------------- ACK build */
static void put_ack_lane(struct dn2f_ep *ep, struct lane *L, unsigned lane, bool more,
                         struct dn2f_wbuf *w)
{
    uint8_t bits[DN2F_SACK_MAX_BITS / 8];
    unsigned nbits = 0, i, span;
    uint32_t limit = L->base + ep->cfg.rx_window;

    if (L->rx_ooo && L->rx) {
        span = (unsigned)dn2f_seqdiff(limit, L->cum);
        span = span ? span - 1 : 0;
        if (span > DN2F_SACK_MAX_BITS) {
            span = DN2F_SACK_MAX_BITS;
        }
        memset(bits, 0, sizeof(bits));
        for (i = 0; i < span; i++) {
            if (rxs(ep, L, L->cum + 1 + i)->present) {
                bits[i >> 3] |= (uint8_t)(1u << (i & 7));
                nbits = i + 1;
            }
        }
        nbits = (nbits + 31) & ~31u;
    }
    dn2f_put_ack_echo(w, lane, more, L->cum, limit, L->echo, (uint16_t)nbits, bits);
}


/* The ACK blocks toward p: one per lane that has received anything (lane 0
 * alone when none has), so one datagram carries the state of every lane. */
static void put_acks(struct dn2f_ep *ep, struct peer *p, struct dn2f_wbuf *w)
{
    unsigned l, want[DN2F_NUM_LANES], n = 0, i;
    for (l = 0; l < DN2F_NUM_LANES; l++) {
        if (p->ln[l].rx) {
            want[n++] = l;
        }
    }
    if (!n) {
        want[n++] = 0;
    }
    for (i = 0; i < n; i++) {
        put_ack_lane(ep, &p->ln[want[i]], want[i], i + 1 < n, w);
    }
}


void ep_send_ack(struct dn2f_ep *ep, struct peer *p, bool ackreq)
{
    struct dn2f_wbuf w;
    size_t len;

    if (ep_acks_held(ep)) {
        return;                 /* owed: sent when the hold ends */
    }
    dn2f_wbuf_init(&w, ep->dgbuf, DN2F_DGRAM_MAX);
    dn2f_put_hdr(&w, DN2F_T_ACK, ackreq ? DN2F_F_ACKREQ : 0, ep->lid, p->lid,
                 ep->epoch, p->epoch);
    dn2f_hdr_set_sessions(&w, my_sess(p), p->peer_sess);
    put_acks(ep, p, &w);
    len = finish_data(ep, &p->ktx, &w);
    if (send_dgram(ep, next_hop(ep, p), ep->dgbuf, len) == 0) {
        ep->st.tx_ack_dgrams++;
        p->ack_pending = false;
        p->ack_due = NO_DEADLINE;
    }
}


/* ------------------------------------------------- unicast data builder */
/* Records of any lane toward one peer, batched into datagrams. */
struct txb {
    struct dn2f_ep *ep;
    struct peer *p;
    struct dn2f_wbuf w;
    unsigned n;
    bool open, retx, with_ack, failed;
    bool vt;                    /* the open datagram's records carry VT (all or none) */
};

static void txb_open(struct txb *b)
{
    struct dn2f_ep *ep = b->ep;
    struct peer *p = b->p;

    dn2f_wbuf_init(&b->w, ep->dgbuf, ep->cfg.max_dgram - (ep->auth ? DN2F_MAC_LEN : 0));
    b->with_ack = p->ack_pending && !ep_acks_held(ep);
    dn2f_put_hdr(&b->w, DN2F_T_DATA, b->with_ack ? DN2F_F_ACK : 0, ep->lid, p->lid,
                 ep->epoch, p->epoch);
    dn2f_hdr_set_sessions(&b->w, my_sess(p), p->peer_sess);
    if (b->with_ack) {
        put_acks(ep, p, &b->w);
    }
    b->n = 0;
    b->open = true;
}


static bool txb_emit(struct txb *b)
{
    struct dn2f_ep *ep = b->ep;
    struct peer *p = b->p;
    size_t len;
    uint64_t t;
    unsigned i;

    if (!b->open || b->n == 0) {
        b->open = false;
        return !b->failed;
    }
    b->open = false;
    t = now(ep);
    dn2f_data_set_ts(&b->w, dn2f_ts_us(t));    /* echoed back: which transmission */
    len = finish_data(ep, &p->ktx, &b->w);
    if (send_dgram(ep, next_hop(ep, p), ep->dgbuf, len) != 0) {
        b->failed = true;
        return false;
    }
    ep->st.tx_data_dgrams++;
    if (b->with_ack) {
        p->ack_pending = false;
        p->ack_due = NO_DEADLINE;
    }
    for (i = 0; i < b->n; i++) {
        struct lane *L = &p->ln[ep->txb_lanes[i]];
        struct txslot *s = txs(ep, L, ep->txb_seqs[i]);
        if (!s->sent) {
            s->sent = 1;
            L->inflight += s->pb->len;
        } else {
            ep->st.retransmits++;
        }
        s->last_tx = t;
        s->via_sw = 0;
        if (s->ntx < UINT16_MAX) {
            s->ntx++;
        }
        if (L->rto_due == NO_DEADLINE || L->rto_due > t + ep_cur_rto(ep, L)) {
            L->rto_due = t + ep_cur_rto(ep, L);
        }
    }
    return true;
}


static bool txb_put(struct txb *b, unsigned kind, unsigned rf, uint32_t seq,
                    const struct txslot *s)
{
    struct dn2f_rec r = {
        .kind = (uint8_t)kind, .rflags = (uint8_t)(rf | (s->pb->vt ? DN2F_RF_VT : 0)),
        .seq = seq, .after = s->after, .group = s->group,
        .pkt = s->pb->data, .len = s->pb->len,
        .vtime = s->pb->vtime, .vseq = s->pb->vseq,
    };
    return dn2f_put_record(&b->w, &r, NULL);
}


/* Add (lane, seq) to the datagram being built; false if sending failed. */
static bool txb_add(struct txb *b, unsigned lane, uint32_t seq)
{
    struct txslot *s = txs(b->ep, &b->p->ln[lane], seq);
    unsigned kind = s->group ? DN2F_REC_MCAST_COPY : DN2F_REC_UNICAST;
    unsigned rf = ((b->retx || s->sent) ? DN2F_RF_RETX : 0) | dn2f_lane_rflags(lane);

    if (b->failed) {
        return false;
    }
    if (b->open && b->n && b->vt != (s->pb->vt != 0)) {
        if (!txb_emit(b)) {     /* a datagram's records all carry VT or none */
            return false;
        }
    }
    if (!b->open) {
        txb_open(b);
    }
    b->vt = s->pb->vt != 0;
    if (b->n >= MAX_RECS_PER_DGRAM || !txb_put(b, kind, rf, seq, s)) {
        if (!txb_emit(b)) {
            return false;
        }
        txb_open(b);
        if (!txb_put(b, kind, rf, seq, s)) {
            return false;       /* cannot happen: max_dgram >= 8 KiB */
        }
    }
    b->ep->txb_seqs[b->n] = seq;
    b->ep->txb_lanes[b->n] = (uint8_t)lane;
    b->n++;
    return true;
}





/* First transmission of queued packets, each lane within its congestion
 * window; the lanes share the datagrams. */
static bool peer_transmit_new(struct dn2f_ep *ep, struct peer *p)
{
    struct txb b = { .ep = ep, .p = p };
    uint32_t s;
    unsigned l;
    bool ok = true;

    if (p->st != PEER_ACTIVE) {
        return true;
    }
    for (l = 0; l < DN2F_NUM_LANES && ok; l++) {
        struct lane *L = &p->ln[l];
        size_t new_bytes = 0;
        if (!L->tx) {
            continue;
        }
        for (s = L->nxt; s != L->end; s++) {
            struct txslot *t = txs(ep, L, s);
            if (!t->pb || t->sent || t->mc_pending) {
                continue;
            }
            if (L->inflight + new_bytes > 0 &&
                L->inflight + new_bytes + t->pb->len > L->cwnd) {
                break;
            }
            if (!txb_add(&b, l, s)) {
                ok = false;
                break;
            }
            new_bytes += t->pb->len;
        }
    }
    if (ok) {
        ok = txb_emit(&b);
    }
    for (l = 0; l < DN2F_NUM_LANES; l++) {
        struct lane *L = &p->ln[l];
        while (L->tx && L->nxt != L->end) {
            struct txslot *t = txs(ep, L, L->nxt);
            if (t->pb && !t->sent) {
                break;
            }
            L->nxt++;
        }
    }
    return ok;
}


bool ep_lane_retransmit(struct dn2f_ep *ep, struct peer *p, unsigned lane,
                        const uint32_t *seqs, unsigned n)
{
    struct txb b = { .ep = ep, .p = p, .retx = true };
    unsigned i;
    for (i = 0; i < n; i++) {
        if (!txb_add(&b, lane, seqs[i])) {
            return false;
        }
    }
    return txb_emit(&b);
}


/* ------------------------------------------------------- multicast build */
void ep_mc_discard(struct dn2f_ep *ep)
{
    unsigned i;
    for (i = 0; i < ep->mc_nrefs; i++) {
        struct mcref *r = &ep->mcrefs[i];
        struct peer *p = ep_peer_get(ep, r->lid);
        if (p && p->gen == r->gen && p->ln[r->lane].tx) {
            struct txslot *t = txs(ep, &p->ln[r->lane], r->seq);
            if (t->pb == r->pb) {
                t->mc_pending = 0;      /* falls back to unicast copies */
            }
        }
    }
    ep->mc_nrefs = 0;
    ep->mc_nrecs = 0;
    ep->mc_group = 0;
}


static void mc_emit(struct dn2f_ep *ep)
{
    size_t len;
    unsigned i;
    uint64_t t;

    if (!ep->mc_nrecs) {
        return;
    }
    t = now(ep);
    dn2f_data_set_ts(&ep->mcw, dn2f_ts_us(t));  /* the switch copies it to each member */
    len = finish_data(ep, &ep->kmc, &ep->mcw);
    if (ep->link != DN2F_LINK_UP || send_dgram(ep, &ep->cfg.sw, ep->mcbuf, len) != 0) {
        ep_mc_discard(ep);
        return;
    }
    ep->st.tx_data_dgrams++;
    for (i = 0; i < ep->mc_nrefs; i++) {
        struct mcref *r = &ep->mcrefs[i];
        struct peer *p = ep_peer_get(ep, r->lid);
        if (p && p->gen == r->gen && p->ln[r->lane].tx) {
            struct lane *L = &p->ln[r->lane];
            struct txslot *s = txs(ep, L, r->seq);
            if (s->pb == r->pb && s->mc_pending && !s->sent) {
                s->mc_pending = 0;
                s->sent = 1;
                s->ntx = 1;
                s->last_tx = t;
                s->via_sw = ep->mode == DN2F_ROUTE_DIRECT && p->direct;
                L->inflight += s->pb->len;
                if (L->rto_due == NO_DEADLINE) {
                    L->rto_due = t + ep_slot_rto(ep, L, s, ep_cur_rto(ep, L));
                }
            }
        }
    }
    ep->mc_nrefs = 0;
    ep->mc_nrecs = 0;
    ep->mc_group = 0;
}


/* ---------------------------------------------------------------- flush */
static bool peer_has_new(const struct peer *p)
{
    unsigned l;
    for (l = 0; l < DN2F_NUM_LANES; l++) {
        if (p->ln[l].tx && p->ln[l].nxt != p->ln[l].end) {
            return true;
        }
    }
    return false;
}


void ep_flush_internal(struct dn2f_ep *ep)
{
    struct peer *p;
    uint64_t t = now(ep);

    if (ep->blocked_until != 0) {
        if (t < ep->blocked_until) {
            return;
        }
        ep->blocked_until = 0;
    }
    if (ep->link == DN2F_LINK_UP) {
        mc_emit(ep);
        for (p = ep->plist; p; p = p->next) {
            if (!ep->blocked_until && peer_has_new(p)) {
                if (!peer_transmit_new(ep, p)) {
                    return;
                }
                ep_peer_rearm(ep, p);
            }
        }
    }
    for (p = ep->plist; p; p = p->next) {
        if (p->ack_pending && (ep->cfg.ack_delay_ns == 0 || t >= p->ack_due)) {
            ep_send_ack(ep, p, false);
            if (ep->blocked_until) {
                return;
            }
        }
    }
}


/* ----------------------------------------------------------------- send */
static bool lane_room(struct dn2f_ep *ep, struct peer *p, unsigned lane, size_t len)
{
    struct lane *L = &p->ln[lane];
    if (p->st != PEER_ACTIVE) {
        return false;
    }
    if ((uint32_t)(L->end - L->una) >= ep->cfg.tx_window) {
        return false;
    }
    if (dn2f_seqdiff(L->limit, L->end) <= 0) {
        return false;           /* no credits */
    }
    if (L->tx_bytes + len > (size_t)ep->cfg.tx_window * DN2F_PKT_MAX) {
        return false;
    }
    return true;
}


unsigned ep_group_members(struct dn2f_ep *ep, uint16_t glid, struct peer **out)
{
    struct group *g = ep->groups[dn2f_lid_index(glid) - DN2_CLID_MCAST_FIRST];
    unsigned i, n = 0;
    if (!g) {
        return 0;
    }
    for (i = 0; i < g->n; i++) {
        struct peer *p = ep_peer_get(ep, g->lids[i]);
        if (p && p->st == PEER_ACTIVE) {
            out[n++] = p;
        }
    }
    return n;
}


/* lanes: bit l = lane l must have room. */
static bool can_send_lanes(struct dn2f_ep *ep, uint16_t dlid, unsigned lanes, size_t len)
{
    struct peer *p;
    unsigned l;

    if (ep->link != DN2F_LINK_UP || len < DN2F_PKT_MIN || len > DN2F_PKT_MAX) {
        return false;
    }
    if (ep->tx_total + len > ep->cfg.tx_budget) {
        return false;
    }
    if (dn2f_lid_is_mcast(dlid)) {
        struct peer *m[DN2F_MCAST_MAX_MEMBERS];
        unsigned i, n = ep_group_members(ep, dlid, m);
        lanes = (lanes | (lanes >> DN2F_LANE_REQ)) & ((1u << DN2F_LANE_REQ) - 1);
        for (i = 0; i < n; i++) {
            for (l = 0; l < DN2F_NUM_LANES; l++) {
                if (((lanes >> l) & 1) && !lane_room(ep, m[i], l, len)) {
                    return false;
                }
            }
        }
        return true;
    }
    p = ep_peer_get(ep, dlid);
    if (!p) {
        return true;            /* not routable: dn2f_ep_send drops it */
    }
    for (l = 0; l < DN2F_NUM_LANES; l++) {
        if (((lanes >> l) & 1) && !lane_room(ep, p, l, len)) {
            return false;
        }
    }
    return true;
}


/* Every lane (for a group: both data lanes). */
bool dn2f_ep_can_send(struct dn2f_ep *ep, uint16_t dlid, size_t len)
{
    return can_send_lanes(ep, dlid, (1u << DN2F_NUM_LANES) - 1, len);
}


bool dn2f_ep_can_send_lane(struct dn2f_ep *ep, uint16_t dlid, unsigned lane, size_t len)
{
    if (lane >= DN2F_NUM_LANES) {
        return false;
    }
    return can_send_lanes(ep, dlid, 1u << lane, len);
}


static struct pbuf *pb_new(const void *pkt, size_t len, bool vt, uint64_t vtime, uint32_t vseq)
{
    struct pbuf *pb = malloc(sizeof(*pb) + len);
    if (pb) {
        pb->refs = 0;
        pb->len = (uint16_t)len;
        pb->vt = vt;
        pb->vtime = vt ? vtime : 0;
        pb->vseq = vt ? vseq : 0;
        memcpy(pb->data, pkt, len);
    }
    return pb;
}


static void slot_fill(struct dn2f_ep *ep, struct lane *L, struct pbuf *pb, uint16_t group,
                      uint32_t after)
{
    struct txslot *t = txs(ep, L, L->end);
    memset(t, 0, sizeof(*t));
    t->pb = pb;
    t->after = after;
    pb->refs++;
    t->group = group;
    t->mc_pending = group ? 1 : 0;
    L->end++;
    L->tx_bytes += pb->len;
    ep->tx_total += pb->len;
}


static int send_mcast(struct dn2f_ep *ep, uint16_t dlid, unsigned lane, const void *pkt,
                      size_t len, bool vt, uint64_t vtime, uint32_t vseq)
{
    struct dn2f_rec rec = {
        .kind = DN2F_REC_MCAST_ORIGIN,
        .rflags = (uint8_t)(dn2f_lane_rflags(lane) | (vt ? DN2F_RF_VT : 0)),
        .group = dlid, .pkt = pkt, .len = (uint16_t)len, .vtime = vtime, .vseq = vseq,
    };
    struct peer *m[DN2F_MCAST_MAX_MEMBERS];
    struct dn2f_member mb[DN2F_MCAST_MAX_MEMBERS];
    unsigned i, n = ep_group_members(ep, dlid, m);
    struct pbuf *pb;

    if (n == 0) {
        ep->st.drop[DN2F_DROP_NO_ROUTE]++;
        return -EHOSTUNREACH;
    }
    for (i = 0; i < n; i++) {
        if (!ep_lane_tx_alloc(ep, &m[i]->ln[lane])) {
            return -ENOMEM;
        }
    }
    pb = pb_new(pkt, len, vt, vtime, vseq);
    if (!pb) {
        return -ENOMEM;
    }
    if (ep->mc_nrecs && (ep->mc_group != dlid || ep->mc_nrefs + n > MC_MAX_REFS ||
                         ep->mc_vt != vt ||
                         ep->mcw.cap - ep->mcw.len <
                         dn2f_rec_len_rf(DN2F_REC_MCAST_ORIGIN, rec.rflags, n, len))) {
        mc_emit(ep);
    }
    if (!ep->mc_nrecs) {
        dn2f_wbuf_init(&ep->mcw, ep->mcbuf, ep->cfg.max_dgram - (ep->auth ? DN2F_MAC_LEN : 0));
        dn2f_put_hdr(&ep->mcw, DN2F_T_DATA, 0, ep->lid, dlid, ep->epoch, 0);
        ep->mc_group = dlid;
        ep->mc_vt = vt;
    }
    for (i = 0; i < n; i++) {
        struct lane *L = &m[i]->ln[lane];
        mb[i].lid = m[i]->lid;
        mb[i].seq = L->end;
        mb[i].epoch = m[i]->epoch;
        mb[i].src_sess = my_sess(m[i]);
        mb[i].dst_sess = m[i]->peer_sess;
        ep->mcrefs[ep->mc_nrefs].lid = m[i]->lid;
        ep->mcrefs[ep->mc_nrefs].lane = (uint8_t)lane;
        ep->mcrefs[ep->mc_nrefs].seq = L->end;
        ep->mcrefs[ep->mc_nrefs].gen = m[i]->gen;
        ep->mcrefs[ep->mc_nrefs].pb = pb;
        ep->mc_nrefs++;
        slot_fill(ep, L, pb, dlid, 0);
    }
    rec.nmemb = (uint16_t)n;
    if (!dn2f_put_record(&ep->mcw, &rec, mb)) {
        /* cannot happen (checked above); the slots go out as unicast copies */
        ep_mc_discard(ep);
    } else {
        ep->mc_nrecs++;
    }
    ep->st.mcast_tx++;
    ep->st.tx_pkts++;
    ep->st.tx_bytes += len;
    ep->st.vt_pkts_tx += vt ? 1 : 0;
    return 0;
}


int ep_send_pkt(struct dn2f_ep *ep, uint16_t dlid, const void *pkt, size_t len, bool vt,
                uint64_t vtime, uint32_t vseq)
{
    struct peer *p;
    struct pbuf *pb;
    unsigned lane;

    if (!pkt || len < DN2F_PKT_MIN || len > DN2F_PKT_MAX ||
        dn2f_pkt_dlid(pkt) != dlid) {
        return -EINVAL;
    }
    lane = dn2f_pkt_lane(pkt);         /* a data lane for a group */
    if (!can_send_lanes(ep, dlid, 1u << lane, len)) {
        return -EAGAIN;
    }
    if (dn2f_lid_is_mcast(dlid)) {
        return send_mcast(ep, dlid, lane, pkt, len, vt, vtime, vseq);
    }
    p = ep_peer_get(ep, dlid);
    if (!p) {
        ep->st.drop[DN2F_DROP_NO_ROUTE]++;
        return -EHOSTUNREACH;
    }
    if (!ep_lane_tx_alloc(ep, &p->ln[lane])) {
        return -ENOMEM;
    }
    pb = pb_new(pkt, len, vt, vtime, vseq);
    if (!pb) {
        return -ENOMEM;
    }
    /* A request carries the position of its DWID's data lane: the peer
     * delivers it only after everything queued there before it. */
    slot_fill(ep, &p->ln[lane], pb, 0,
              (lane & DN2F_LANE_REQ) ? p->ln[lane & ~DN2F_LANE_REQ].end : 0);
    ep->st.tx_pkts++;
    ep->st.tx_bytes += len;
    ep->st.vt_pkts_tx += vt ? 1 : 0;
    return 0;
}


int dn2f_ep_send(struct dn2f_ep *ep, uint16_t dlid, const void *pkt, size_t len)
{
    return ep_send_pkt(ep, dlid, pkt, len, false, 0, 0);
}
