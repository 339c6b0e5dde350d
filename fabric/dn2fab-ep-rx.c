/* SPDX-License-Identifier: MIT */
/*
 * dn2fab endpoint, the incoming side: a DATA or ACK datagram that
 * dn2f_ep_input (dn2fab-ep.c) passed on is checked against its peer, DATA
 * records are buffered and delivered in order per lane
 * (credits, held requests, -EBUSY and dn2f_ep_resume), and ACK blocks
 * advance the send side (SACK, RACK, spurious-timeout undo).
 * See dn2fab-ep.h for the other files.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1
#endif
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "dn2fab-ep.h"

/* -------------------------------------------------------------- receive */
/* vt: the packet's virtual delivery time and its sender's vt counter go to
 * deliver_vt (when the embedder has one). */
static bool rx_deliver_one(struct dn2f_ep *ep, struct peer *p, struct lane *L,
                           const uint8_t *pkt, size_t len, bool vt, uint64_t vtime,
                           uint32_t vseq, bool *consumed)
{
    int rc;
    ep->in_deliver = true;
    if (vt && ep->ops.deliver_vt) {
        rc = ep->ops.deliver_vt(ep->opaque, p->lid, pkt, len, vtime, vseq);
    } else {
        rc = ep->ops.deliver(ep->opaque, p->lid, pkt, len);
    }
    ep->in_deliver = false;
    if (rc == -EBUSY) {
        ep->st.busy++;
        L->rx_blocked = true;   /* this lane only: the other WID goes on */
        *consumed = false;
        return false;
    }
    if (rc < 0) {
        ep->st.drop[DN2F_DROP_DELIVER_ERR]++;
    } else {
        ep->st.rx_pkts++;
        ep->st.rx_bytes += len;
        ep->st.vt_pkts_rx += vt ? 1 : 0;
    }
    *consumed = true;
    return true;
}


static void ack_due_now(struct dn2f_ep *ep, struct peer *p)
{
    p->ack_pending = true;
    if (p->ack_due == NO_DEADLINE) {
        p->ack_due = now(ep) + ep->cfg.ack_delay_ns;
    }
}


/* Packets are handed to deliver() only while the link is UP: the device
 * knows its LID (link_state(up, lid)) only then and refuses packets "not for
 * this LID" before.  Meanwhile they wait in the receive ring; they were
 * acknowledged because they are held here, and go to deliver() when the
 * link comes up.  So an ACK means: delivered, deliberately refused and
 * counted, or held by the endpoint. */
static inline bool can_deliver(const struct dn2f_ep *ep)
{
    return ep->link == DN2F_LINK_UP;
}


/* Read after write: a request (lanes 2/3) goes to deliver() only once its
 * sender's data lane of the same DWID has been delivered up to where it
 * was when the request was queued.  Data lanes never wait for requests. */
static inline bool req_ready(const struct peer *p, unsigned lane, uint32_t after)
{
    return !(lane & DN2F_LANE_REQ) ||
           dn2f_seqdiff(p->ln[lane & ~DN2F_LANE_REQ].base, after) >= 0;
}


/* Deliver buffered in-order packets [base, cum) of one lane; when a data
 * lane moved on, the requests that waited for it. */
void ep_rx_drain(struct dn2f_ep *ep, struct peer *p, unsigned lane)
{
    struct lane *L = &p->ln[lane];
    uint32_t old = L->base;
    while (can_deliver(ep) && !L->rx_blocked && L->base != L->cum && L->rx) {
        struct rxslot *s = rxs(ep, L, L->base);
        bool consumed;
        if (!s->present) {
            break;              /* cannot happen */
        }
        if (!req_ready(p, lane, s->after)) {
            if (!s->held) {
                s->held = 1;
                ep->st.req_held++;
            }
            break;              /* its data lane moving on drains it again */
        }
        rx_deliver_one(ep, p, L, s->data, s->len, s->vt, s->vtime, s->vseq, &consumed);
        if (!consumed) {
            break;
        }
        ep->rx_total -= s->len;
        L->rx_bytes -= s->len;
        free(s->data);
        memset(s, 0, sizeof(*s));
        L->base++;
        /* the lane may have been reset from the callback: re-check */
        if (!L->rx) {
            break;
        }
    }
    if (L->base != old) {
        ack_due_now(ep, p);     /* credits opened */
        if (!(lane & DN2F_LANE_REQ)) {
            ep_rx_drain(ep, p, lane | DN2F_LANE_REQ);
        }
    }
}


static void rx_advance_cum(struct dn2f_ep *ep, struct lane *L)
{
    while (dn2f_seqdiff(L->cum, L->base + ep->cfg.rx_window) < 0) {
        struct rxslot *s = rxs(ep, L, L->cum);
        if (!s->present) {
            break;
        }
        L->cum++;
        L->rx_ooo--;
    }
}


/* A datagram stamped ts brought lane L a packet it did not have: the ACK
 * echoes the newest such stamp (a late duplicate does not lower it). */
static inline void note_echo(struct lane *L, uint32_t ts)
{
    if (ts && (!L->echo || dn2f_seqdiff(ts, L->echo) > 0)) {
        L->echo = ts;
    }
}


static void rx_record(struct dn2f_ep *ep, struct peer *p, const struct dn2f_rec *r,
                      uint32_t ts)
{
    struct lane *L = &p->ln[r->lane];
    int32_t d = dn2f_seqdiff(r->seq, L->base);
    struct rxslot *s;
    bool consumed;

    if (r->kind == DN2F_REC_UNICAST ? dn2f_pkt_dlid(r->pkt) != ep->lid
                                    : dn2f_pkt_dlid(r->pkt) != r->group) {
        ep->st.drop[DN2F_DROP_BAD_DLID]++;
        return;
    }
    if (d < 0 || dn2f_seqdiff(r->seq, L->cum) < 0) {
        ep->st.duplicates++;
        return;
    }
    if ((uint32_t)d >= ep->cfg.rx_window) {
        ep->st.drop[DN2F_DROP_WINDOW]++;
        return;
    }
    if (!ep_lane_rx_alloc(ep, L)) {
        ep->st.drop[DN2F_DROP_NO_BUFFER]++;
        return;
    }
    s = rxs(ep, L, r->seq);
    if (s->present) {
        ep->st.duplicates++;
        return;
    }
    if (r->seq == L->base && L->base == L->cum && !L->rx_blocked && can_deliver(ep) &&
        req_ready(p, r->lane, r->after)) {
        /* The common case: in order, nothing waiting: no copy. */
        if (rx_deliver_one(ep, p, L, r->pkt, r->len, (r->rflags & DN2F_RF_VT) != 0, r->vtime,
                           r->vseq, &consumed)) {
            note_echo(L, ts);
            L->base++;
            L->cum++;
            rx_advance_cum(ep, L);
            ep_rx_drain(ep, p, r->lane);
            if (!(r->lane & DN2F_LANE_REQ)) {
                ep_rx_drain(ep, p, r->lane | DN2F_LANE_REQ);
            }
            return;
        }
        /* -EBUSY: keep a copy below. */
    }
    if (ep->rx_total + r->len > ep->cfg.rx_budget) {
        ep->st.drop[DN2F_DROP_NO_BUFFER]++;
        return;                 /* not acknowledged: retransmitted later */
    }
    s->data = malloc(r->len);
    if (!s->data) {
        ep->st.drop[DN2F_DROP_NO_BUFFER]++;
        return;
    }
    memcpy(s->data, r->pkt, r->len);
    note_echo(L, ts);
    s->len = r->len;
    s->after = r->after;
    s->vt = (r->rflags & DN2F_RF_VT) != 0;
    s->vtime = r->vtime;
    s->vseq = r->vseq;
    s->held = 0;
    s->present = 1;
    ep->rx_total += r->len;
    L->rx_bytes += r->len;
    if (r->seq != L->cum) {
        ep->st.out_of_order++;
    }
    L->rx_ooo++;
    rx_advance_cum(ep, L);
}


/* An acknowledged transmission for RACK: the newest send time known to have
 * arrived.  A retransmitted packet counts with its latest send time only if
 * the echo does not predate it: an echo older than the retransmission shows
 * an earlier transmission arrived (counted as a spurious retransmission),
 * and taking the retransmission's time would make RACK call the rest of the
 * flight lost. */
static void rack_note(struct dn2f_ep *ep, struct lane *L, const struct txslot *ts, uint32_t echo)
{
    if (ts->ntx > 1 && echo && dn2f_seqdiff(echo, dn2f_ts_us(ts->last_tx)) < 0) {
        ep->st.spurious_retransmits++;
        return;
    }
    if (ts->via_sw) {
        if (ts->last_tx > L->rack_ts_sw) {
            L->rack_ts_sw = ts->last_tx;
        }
    } else if (ts->last_tx > L->rack_ts) {
        L->rack_ts = ts->last_tx;
    }
}


/* Raise the RTO floor of every lane of peer q to at least fl. */
static void raise_floor(struct dn2f_ep *ep, struct peer *q, uint64_t fl, uint64_t t)
{
    unsigned l;
    for (l = 0; l < DN2F_NUM_LANES; l++) {
        struct lane *M = &q->ln[l];
        ep_floor_decay(ep, M);
        if (fl > M->rto_floor) {
            M->rto_floor = fl;
        }
        M->floor_t = t;         /* renewed: the host is still slow */
    }
}


/* The ACK of a timeout's retransmission echoes an older timestamp: the
 * packet had arrived, only its ACK was late.  Undo the window cut and the
 * backoff, and raise the RTO floor above the delay that ACK took, so the
 * next equally late ACK does not fire the timer: of every lane of that
 * peer (they share its ACK datagrams and its CPU) and of every peer at the
 * same host address (they share that host's CPUs: 31 boards on one host
 * would otherwise each fire a needless timeout to learn the same floor). */
void ep_spurious_timeout(struct dn2f_ep *ep, struct peer *p, struct lane *L, uint64_t t)
{
    uint64_t delay = t > L->rto_prev_tx ? t - L->rto_prev_tx : 0;
    uint64_t fl = delay + delay / 4 + ep->cfg.rto_min_ns;
    unsigned i;

    ep->st.spurious_timeouts++;
    if (L->undo_cwnd > L->cwnd) {
        L->cwnd = L->undo_cwnd;
    }
    if (L->undo_ssthresh > L->ssthresh) {
        L->ssthresh = L->undo_ssthresh;
    }
    L->recovery = false;
    L->backoff = 0;
    L->rto_restart = 0;
    if (fl > ep->cfg.rto_max_ns) {
        fl = ep->cfg.rto_max_ns;
    }
    raise_floor(ep, p, fl, t);
    for (i = 0; i < DN2F_NUM_CLID; i++) {
        struct peer *q = ep->peers[i];
        if (q && q != p && q->addr.len && dn2f_addr_same_host(&q->addr, &p->addr)) {
            raise_floor(ep, q, fl, t);
        }
    }
    ep->st.rto_floor_ns = fl;
}


/* A round-trip sample from a packet sent once, for the estimator of the
 * path it took (the multicast copies of direct routing take the switch). */
static void rtt_note(const struct txslot *ts, uint64_t t, uint64_t *sample, bool *have,
                     uint64_t *sample_sw, bool *have_sw)
{
    if (ts->via_sw) {
        *sample_sw = t - ts->last_tx;
        *have_sw = true;
    } else {
        *sample = t - ts->last_tx;
        *have = true;
    }
}

/* RFC 6298's estimator: smoothed RTT, its variation, the RTO from them. */
static void rtt_update(struct dn2f_ep *ep, uint64_t *srtt, uint64_t *rttvar, uint64_t *rto,
                       uint64_t sample)
{
    if (!*srtt) {
        *srtt = sample;
        *rttvar = sample / 2;
    } else {
        uint64_t dev = sample > *srtt ? sample - *srtt : *srtt - sample;
        *rttvar = (3 * *rttvar + dev) / 4;
        *srtt = (7 * *srtt + sample) / 8;
    }
    *rto = *srtt + 4 * *rttvar;
    if (*rto < ep->cfg.rto_min_ns) {
        *rto = ep->cfg.rto_min_ns;
    }
    if (*rto > ep->cfg.rto_max_ns) {
        *rto = ep->cfg.rto_max_ns;
    }
}

/* ACK processing, in stages as a completer's states: check the ACK against
 * the lane, free what its cumulative point covers, take the credit it
 * grants, mark its SACK blocks, tell a spurious timeout, find the losses
 * RACK sees, take the round-trip samples, then grow or cut the window and
 * resend.  The state of one ACK on its way through them: */
struct ack_state {
    struct dn2f_ep *ep;
    struct peer *p;
    const struct dn2f_ack *a;
    struct lane *L;             /* our send stream toward p on lane a->lane */
    uint64_t t;                 /* now */
    int32_t d;                  /* how far a->cum is beyond our una */
    uint64_t rack_before, rack_sw_before;       /* RACK clocks before this ACK */
    uint64_t sample, sample_sw; /* round-trip samples, direct / switch path */
    bool have_sample, have_sample_sw;
    size_t acked_bytes;         /* newly acknowledged, cumulative or SACK */
    uint32_t retx[DN2F_SACK_MAX_BITS];  /* RACK's losses */
    unsigned nretx;
};

enum ack_check { ACK_BOGUS, ACK_CREDIT_ONLY, ACK_OK };

/* Check the ACK against the lane.  A lane that never sent has no ring: the
 * ACK can only grant credit (ACK_CREDIT_ONLY, taken here).  Otherwise the
 * cumulative point may not pass what we queued, and every slot it covers
 * must have been sent; anything else is counted bad_ack (ACK_BOGUS). */
static enum ack_check ack_check(struct ack_state *s)
{
    struct dn2f_ep *ep = s->ep;
    const struct dn2f_ack *a = s->a;
    struct lane *L = s->L;
    uint32_t q;

    if (!L->tx) {
        if (a->cum != 0) {
            ep->st.drop[DN2F_DROP_BAD_ACK]++;
            return ACK_BOGUS;
        }
        if (dn2f_seqdiff(a->limit, L->limit) > 0) {
            L->limit = a->limit;
        }
        return ACK_CREDIT_ONLY;
    }
    s->d = dn2f_seqdiff(a->cum, L->una);
    if (dn2f_seqdiff(a->cum, L->end) > 0) {
        ep->st.drop[DN2F_DROP_BAD_ACK]++;
        return ACK_BOGUS;
    }
    if (s->d > 0) {
        for (q = L->una; q != a->cum; q++) {
            if (!txs(ep, L, q)->sent) {
                ep->st.drop[DN2F_DROP_BAD_ACK]++;
                return ACK_BOGUS;
            }
        }
    }
    return ACK_OK;
}

/* The cumulative point: free the slots [una, cum), each one that was not
 * SACKed before leaving the flight (and telling RACK it arrived), each one
 * sent once giving a round-trip sample; una moves to cum. */
static void ack_cumulative(struct ack_state *s)
{
    struct dn2f_ep *ep = s->ep;
    const struct dn2f_ack *a = s->a;
    struct lane *L = s->L;
    uint32_t q;

    if (s->d <= 0) {
        return;
    }
    for (q = L->una; q != a->cum; q++) {
        struct txslot *ts = txs(ep, L, q);
        if (!ts->sacked) {
            L->inflight -= ts->pb->len;
            rack_note(ep, L, ts, a->echo);
        }
        if (ts->ntx == 1) {
            rtt_note(ts, s->t, &s->sample, &s->have_sample, &s->sample_sw, &s->have_sample_sw);
        }
        s->acked_bytes += ts->pb->len;
        L->tx_bytes -= ts->pb->len;
        ep->tx_total -= ts->pb->len;
        ep_pb_unref(ts->pb);
        memset(ts, 0, sizeof(*ts));
    }
    L->una = a->cum;
    if (dn2f_seqdiff(L->nxt, L->una) < 0) {
        L->nxt = L->una;
    }
}

/* The credit the receiver grants: a higher limit also ends the zero-credit
 * probe's backoff. */
static void ack_credit(struct ack_state *s)
{
    struct lane *L = s->L;

    if (dn2f_seqdiff(s->a->limit, L->limit) > 0) {
        L->limit = s->a->limit;
        L->probe_backoff = 0;
    }
}

/* The SACK bitmap (only meaningful when relative to our current una): each
 * packet it names for the first time leaves the flight, tells RACK it
 * arrived and, sent once, gives a round-trip sample; its slot stays until
 * the cumulative point passes it. */
static void ack_sack(struct ack_state *s)
{
    struct dn2f_ep *ep = s->ep;
    const struct dn2f_ack *a = s->a;
    struct lane *L = s->L;
    unsigned i;

    if (s->d < 0 || !a->nbits) {
        return;
    }
    for (i = 0; i < a->nbits; i++) {
        uint32_t q = a->cum + 1 + i;
        struct txslot *ts;
        if (dn2f_seqdiff(q, L->end) >= 0) {
            break;
        }
        ts = txs(ep, L, q);
        if (dn2f_ack_sacked(a, i) && ts->pb && ts->sent && !ts->sacked) {
            ts->sacked = 1;
            L->inflight -= ts->pb->len;
            s->acked_bytes += ts->pb->len;
            rack_note(ep, L, ts, a->echo);
            if (ts->ntx == 1) {
                rtt_note(ts, s->t, &s->sample, &s->have_sample, &s->sample_sw,
                         &s->have_sample_sw);
            }
        }
    }
}

/* Spurious-timeout detection (Eifel): the first ACK of the packet a
 * timeout resent tells by its echo which transmission arrived. */
static void ack_spurious(struct ack_state *s)
{
    struct dn2f_ep *ep = s->ep;
    struct lane *L = s->L;

    if (L->rto_check &&
        (dn2f_seqdiff(L->una, L->rto_seq) > 0 ||
         (dn2f_seqdiff(L->rto_seq, L->end) < 0 && txs(ep, L, L->rto_seq)->sacked))) {
        L->rto_check = false;
        if (s->a->echo && dn2f_seqdiff(s->a->echo, L->rto_ts) < 0) {
            ep_spurious_timeout(ep, s->p, L, s->t);
        }
    }
}

/* Loss detection, time based (RACK): a packet is lost when one sent
 * after it (by more than a reordering window) is known to have arrived.
 * Packets batched in one datagram or flush share a send time, so
 * reordering inside the network is not taken for loss; a timeout's
 * retransmission that arrived makes the rest of its flight lost at once
 * (all of it, not only below the highest SACKed: a flight lost whole
 * has nothing SACKed).  In direct routing a multicast copy goes through
 * the switch while unicast goes straight to the peer: each path is
 * judged only by packets sent on it, or every multicast copy that the
 * switch delays would look lost behind the unicast that overtook it.
 * The losses go to s->retx. */
static void ack_rack_losses(struct ack_state *s)
{
    struct dn2f_ep *ep = s->ep;
    struct lane *L = s->L;
    uint64_t reo;
    uint32_t q;

    if ((L->rack_ts == s->rack_before && L->rack_ts_sw == s->rack_sw_before) ||
        L->una == L->end) {
        return;
    }
    reo = L->srtt / 4;
    if (reo < 20000) {
        reo = 20000;
    }
    if (reo > 1000000) {
        reo = 1000000;
    }
    for (q = L->una; q != L->end && s->nretx < DN2F_SACK_MAX_BITS; q++) {
        struct txslot *ts = txs(ep, L, q);
        if (ts->pb && ts->sent && !ts->sacked &&
            ts->last_tx + reo < (ts->via_sw ? L->rack_ts_sw : L->rack_ts)) {
            s->retx[s->nretx++] = q;
        }
    }
}

/* Round-trip samples update each path's estimator.  Karn: the backed-off
 * RTO holds until a packet sent only once is acknowledged.  The ACK of a
 * timeout's retransmission says nothing of the others still on their way:
 * in direct routing a multicast copy waits in the switch's queue while its
 * probe goes straight to the member; ending the backoff there made every
 * other copy in that queue expire at once, one probe per round trip, the
 * whole burst resent. */
static void ack_rtt(struct ack_state *s)
{
    struct lane *L = s->L;

    if (s->have_sample || s->have_sample_sw) {
        L->backoff = 0;
        L->rto_restart = 0;
    }
    if (s->have_sample) {
        rtt_update(s->ep, &L->srtt, &L->rttvar, &L->rto, s->sample);
    }
    if (s->have_sample_sw) {
        rtt_update(s->ep, &L->srtt_sw, &L->rttvar_sw, &L->rto_sw, s->sample_sw);
    }
}

/* The congestion window: grows with what was acknowledged (slow start
 * below ssthresh, then about a datagram per window) outside recovery;
 * recovery ends once una reaches the point it was entered at. */
static void ack_window(struct ack_state *s)
{
    struct dn2f_ep *ep = s->ep;
    struct lane *L = s->L;

    if (s->acked_bytes && !L->recovery) {
        uint64_t cmax = (uint64_t)ep->cfg.tx_window * DN2F_PKT_MAX;
        if (L->cwnd < L->ssthresh) {
            L->cwnd += s->acked_bytes;
        } else {
            L->cwnd += (uint64_t)ep->cfg.max_dgram * s->acked_bytes / L->cwnd + 1;
        }
        if (L->cwnd > cmax) {
            L->cwnd = cmax;
        }
    }
    if (L->recovery && dn2f_seqdiff(L->una, L->recover) >= 0) {
        L->recovery = false;
    }
}

/* RACK's losses: the first of a flight halves the window and enters
 * recovery (until una passes what is queued now); they are resent at once
 * while the link is up (otherwise when it comes back). */
static void ack_fast_retransmit(struct ack_state *s)
{
    struct dn2f_ep *ep = s->ep;
    struct lane *L = s->L;

    if (!s->nretx) {
        return;
    }
    if (!L->recovery) {
        uint64_t floor = ep->cfg.max_dgram;
        L->ssthresh = L->cwnd / 2 > floor ? L->cwnd / 2 : floor;
        L->cwnd = L->ssthresh;
        L->recovery = true;
        L->recover = L->end;
    }
    ep->st.fast_retransmits += s->nretx;
    if (ep->link == DN2F_LINK_UP) {
        ep_lane_retransmit(ep, s->p, s->a->lane, s->retx, s->nretx);
    }
}

/* One ACK block (our send stream toward p on lane a->lane) through the
 * stages, then the lane's timers rearmed.  False if bogus. */
static bool process_ack(struct dn2f_ep *ep, struct peer *p, const struct dn2f_ack *a)
{
    struct ack_state s = {
        .ep = ep, .p = p, .a = a, .L = &p->ln[a->lane], .t = now(ep),
    };

    switch (ack_check(&s)) {
    case ACK_BOGUS:
        return false;
    case ACK_CREDIT_ONLY:
        return true;
    case ACK_OK:
        break;
    }
    s.rack_before = s.L->rack_ts;
    s.rack_sw_before = s.L->rack_ts_sw;
    ack_cumulative(&s);
    ack_credit(&s);
    ack_sack(&s);
    ack_spurious(&s);
    ack_rack_losses(&s);
    ack_rtt(&s);
    ack_window(&s);
    ack_fast_retransmit(&s);
    ep_lane_rearm(ep, s.L);
    return true;
}


static bool process_acks(struct dn2f_ep *ep, struct peer *p, const struct dn2f_acks *as)
{
    unsigned i;
    bool ok = true;
    for (i = 0; i < as->n; i++) {
        ok &= process_ack(ep, p, &as->a[i]);
    }
    return ok;
}


/* A DATA or ACK datagram, decoded and its control MAC checked by
 * dn2fab-ep.c: its peer, source, MAC, epochs and sessions, then its ACKs
 * and its records. */
void ep_rx_input(struct dn2f_ep *ep, const struct dn2f_addr *from, const void *buf,
                 const struct dn2f_msg *m, bool from_sw)
{
    struct peer *p;

    if (!ep->lid) {
        ep->st.drop[DN2F_DROP_NOT_READY]++;
        return;
    }
    if (m->h.dst_lid != ep->lid) {
        ep->st.drop[DN2F_DROP_NOT_FOR_US]++;
        return;
    }
    p = ep_peer_get(ep, m->h.src_lid);
    if (!p) {
        ep->st.drop[DN2F_DROP_UNKNOWN_PEER]++;
        return;
    }
    if (!from_sw && !(p->direct && dn2f_addr_equal(from, &p->addr))) {
        ep->st.drop[DN2F_DROP_FORGED]++;
        return;
    }
    if (ep->auth && !dn2f_mac_ok(buf, m, &p->krx)) {
        ep->st.drop[DN2F_DROP_AUTH]++;
        return;
    }
    if (m->h.src_epoch != p->epoch || m->h.dst_epoch != ep->epoch) {
        ep->st.drop[DN2F_DROP_STALE_EPOCH]++;
        return;
    }
    /* Sessions (docs/fabric.md, "Lanes, streams, epochs and sessions").
     * dst_sess: ours as the sender knows it, 0 when it does not know it
     * yet (its state toward us is fresh); anything else is addressed to a
     * previous session of ours: drop, and tell it the current one. */
    if (m->h.dst_sess && m->h.dst_sess != my_sess(p)) {
        ep->st.drop[DN2F_DROP_STALE_SESSION]++;
        ack_due_now(ep, p);
        return;
    }
    /* src_sess: a newer one means the peer started over with us (its
     * sequence numbers begin again, it forgot what it had from us):
     * reset our side too, both directions, instead of taking its
     * packets for duplicates and it ours for out of window.  We keep
     * our session (our old datagrams name its old one, so it drops
     * them).  An older one is a late datagram of a previous session. */
    if (m->h.src_sess != p->peer_sess) {
        if (p->peer_sess && dn2f_seqdiff(m->h.src_sess, p->peer_sess) < 0) {
            ep->st.drop[DN2F_DROP_STALE_SESSION]++;
            return;
        }
        if (p->peer_sess) {
            ep_peer_clear(ep, p, DN2F_DROP_PEER_RESET);
            ep->st.session_resets++;
        }
        p->peer_sess = m->h.src_sess;
    }
    if (from_sw) {
        ep->last_sw_rx = now(ep);
    }
    if (m->h.type == DN2F_T_ACK) {
        process_acks(ep, p, &m->u.acks);
    } else {
        struct dn2f_iter it;
        struct dn2f_rec r;
        unsigned l;
        if (m->u.data.acks.n && !process_acks(ep, p, &m->u.data.acks)) {
            return;
        }
        dn2f_data_iter(m, &it);
        while (dn2f_data_next(&it, &r)) {
            rx_record(ep, p, &r, m->u.data.ts);
            if (ep->peers[dn2f_lid_index(m->h.src_lid)] != p) {
                return;     /* cannot happen: callbacks may not reset */
            }
        }
        for (l = 0; l < DN2F_NUM_LANES; l++) {
            ep_rx_drain(ep, p, l);
        }
    }
    if (m->h.type == DN2F_T_DATA || (m->h.flags & DN2F_F_ACKREQ)) {
        if (!p->ack_pending) {
            p->ack_due = now(ep) + ep->cfg.ack_delay_ns;
        }
        p->ack_pending = true;
    }
}


void dn2f_ep_resume(struct dn2f_ep *ep)
{
    struct peer *p;
    if (ep->in_deliver) {
        return;
    }
    for (p = ep->plist; p; p = p->next) {
        unsigned l;
        for (l = 0; l < DN2F_NUM_LANES; l++) {
            /* data lanes first: the requests that wait for them follow */
            if (p->ln[l].rx_blocked) {
                p->ln[l].rx_blocked = false;
                ep_rx_drain(ep, p, l);
            }
        }
    }
    ep_flush_internal(ep);
}
