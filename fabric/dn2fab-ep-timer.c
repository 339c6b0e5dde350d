/* SPDX-License-Identifier: MIT */
/*
 * dn2fab endpoint, time: dn2f_ep_next_deadline and dn2f_ep_tick (HELLO,
 * keepalive, switch loss, retransmissions, probes, delayed ACKs, orphaned
 * peers).  A lane's RTO and deadlines are computed in dn2fab-ep-rto.c.
 * See dn2fab-ep.h for the other files.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1
#endif
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "dn2fab-ep.h"

/* --------------------------------------------------------------- timers */
static uint64_t min64(uint64_t a, uint64_t b)
{
    return a < b ? a : b;
}


uint64_t dn2f_ep_next_deadline(struct dn2f_ep *ep)
{
    uint64_t d = NO_DEADLINE, t = now(ep);
    struct peer *p;

    if (ep->blocked_until) {
        d = ep->blocked_until;
    }
    switch (ep->link) {
    case DN2F_LINK_DOWN:
        d = min64(d, ep->hello_due);
        break;
    case DN2F_LINK_ASSIGNED:
    case DN2F_LINK_UP:
        d = min64(d, ep->ka_due);
        d = min64(d, ep->last_sw_rx + ep->cfg.keepalive_timeout_ns);
        break;
    }
    for (p = ep->plist; p; p = p->next) {
        if (p->ack_pending && !ep_acks_held(ep)) {
            d = min64(d, p->ack_due);
        }
        if (p->st == PEER_ORPHAN) {
            d = min64(d, p->orphan_since + ep->cfg.peer_grace_ns);
            continue;
        }
        if (ep->link == DN2F_LINK_UP) {
            unsigned l;
            for (l = 0; l < DN2F_NUM_LANES; l++) {
                struct lane *L = &p->ln[l];
                d = min64(d, L->rto_due);
                d = min64(d, L->probe_due);
                if (!ep->blocked_until && L->tx && L->nxt != L->end) {
                    struct txslot *ts = txs(ep, L, L->nxt);
                    if (ts->pb && !ts->sent && !ts->mc_pending &&
                        (L->inflight == 0 || L->inflight + ts->pb->len <= L->cwnd)) {
                        d = min64(d, t);        /* sendable: flush due */
                    }
                }
            }
        }
    }
    d = min64(d, ep_vt_deadline(ep));
    if (ep->blocked_until && d < ep->blocked_until) {
        d = ep->blocked_until;  /* nothing can go out before that */
    }
    return d;
}


static bool lane_tick(struct dn2f_ep *ep, struct peer *p, unsigned lane, uint64_t t)
{
    struct lane *L = &p->ln[lane];
    if (!L->tx) {
        L->rto_due = NO_DEADLINE;
        L->force_retx = false;
    }
    if (L->tx && L->rto_due != NO_DEADLINE && t >= L->rto_due) {
        uint64_t r = ep_cur_rto(ep, L);
        uint32_t s;
        if (L->force_retx) {
            /* The link or the peer is back: resend everything outstanding.
             * (Collect first, txb uses txb_seqs itself: in chunks.) */
            uint32_t list[256];
            unsigned n = 0;
            for (s = L->una; s != L->end; s++) {
                struct txslot *ts = txs(ep, L, s);
                if (ts->pb && ts->sent && !ts->sacked) {
                    list[n++] = s;
                    if (n == 256) {
                        if (!ep_lane_retransmit(ep, p, lane, list, n)) {
                            return false;
                        }
                        n = 0;
                    }
                }
            }
            if (n && !ep_lane_retransmit(ep, p, lane, list, n)) {
                return false;
            }
            L->force_retx = false;
        } else {
            /* A timeout resends one packet, the oldest expired: its ACK's
             * echo tells whether the flight was lost (RACK then resends
             * the rest at once) or only its ACK was late (nothing more is
             * resent; ep_spurious_timeout()).  So does a second timeout
             * in a row, backed off (RFC 6298 5.4-5.6): a receiver that
             * waits for a CPU for several RTOs gets one probe per RTO, not
             * its whole flight again each time; the probe that gets
             * through brings the ACK that either ends it (the flight had
             * arrived) or lets RACK resend the rest. */
            for (s = L->una; s != L->end; s++) {
                struct txslot *ts = txs(ep, L, s);
                uint64_t from;
                if (!ts->pb || !ts->sent || ts->sacked) {
                    continue;
                }
                from = ts->last_tx > L->rto_restart ? ts->last_tx : L->rto_restart;
                if (from + ep_slot_rto(ep, L, ts, r) <= t) {
                    break;
                }
            }
            if (s != L->end) {
                if (!L->rto_check) {
                    L->rto_check = true;
                    L->rto_seq = s;
                    L->rto_ts = dn2f_ts_us(t);  /* <= the retransmission's stamp */
                    L->rto_prev_tx = txs(ep, L, s)->last_tx;
                    L->undo_cwnd = L->cwnd;
                    L->undo_ssthresh = L->ssthresh;
                }
                if (!ep_lane_retransmit(ep, p, lane, &s, 1)) {
                    return false;
                }
                ep->st.timeouts++;
                if (L->backoff < 16) {
                    L->backoff++;
                }
                L->ssthresh = L->cwnd / 2 > ep->cfg.max_dgram ? L->cwnd / 2 : ep->cfg.max_dgram;
                L->cwnd = ep->cfg.max_dgram;
                L->recovery = false;
                L->rto_restart = t;
            }
        }
        ep_lane_rearm(ep, L);
    }
    if (L->probe_due != NO_DEADLINE && t >= L->probe_due) {
        ep_send_ack(ep, p, true);
        L->probe_due = NO_DEADLINE;
        if (L->probe_backoff < 16) {
            L->probe_backoff++;
        }
        ep_lane_rearm(ep, L);
    }
    return true;
}


static void peer_tick(struct dn2f_ep *ep, struct peer *p, uint64_t t)
{
    unsigned l;
    for (l = 0; l < DN2F_NUM_LANES; l++) {
        if (!lane_tick(ep, p, l, t)) {
            return;
        }
    }
}


void dn2f_ep_tick(struct dn2f_ep *ep)
{
    uint64_t t = now(ep);
    struct peer *p, *nx;

    switch (ep->link) {
    case DN2F_LINK_DOWN:
        if (t >= ep->hello_due) {
            ep_send_ctrl(ep, DN2F_T_HELLO, 0, 0);
            ep->hello_due = t + ep->cfg.hello_interval_ns;
        }
        break;
    case DN2F_LINK_ASSIGNED:
    case DN2F_LINK_UP:
        if (t >= ep->last_sw_rx + ep->cfg.keepalive_timeout_ns) {
            ep_link_set_down(ep);
            ep_send_ctrl(ep, DN2F_T_HELLO, 0, 0);
            ep->hello_due = t + ep->cfg.hello_interval_ns;
            break;
        }
        if (t >= ep->ka_due) {
            /* ASSIGNED: an unknown generation asks for the routing table */
            ep_send_ctrl(ep, DN2F_T_KEEPALIVE,
                      ep->link == DN2F_LINK_UP ? ep->routes_gen : ROUTES_GEN_NONE, 0);
            ep->ka_due = t + (ep->link == DN2F_LINK_UP ? ep->cfg.keepalive_ns
                                                       : ep->cfg.hello_interval_ns);
            if (ep->link == DN2F_LINK_UP) {
                ep_joins_sync(ep);
            }
        }
        break;
    }
    for (p = ep->plist; p; p = nx) {
        nx = p->next;
        if (p->st == PEER_ORPHAN) {
            if (t >= p->orphan_since + ep->cfg.peer_grace_ns) {
                ep_peer_free(ep, p, DN2F_DROP_PEER_GONE);
            }
            continue;
        }
        if (ep->link == DN2F_LINK_UP && !ep->blocked_until) {
            peer_tick(ep, p, t);
        }
    }
    ep_flush_internal(ep);
    ep_vt_pump(ep);
}
