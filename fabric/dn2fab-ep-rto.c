/* SPDX-License-Identifier: MIT */
/*
 * dn2fab endpoint, the retransmission timeout of a lane: its RTO (backoff,
 * the switch path's own estimate, the floor spurious timeouts set and its
 * decay) and arming the retransmission and zero-credit probe deadlines.
 * Arithmetic on a lane's state only: the transmitter, the receiver's ACK
 * processing and the timers use it.
 * See dn2fab-ep.h for the other files.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1
#endif
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "dn2fab-ep.h"

/* ------------------------------------------------------------------ RTO */
uint64_t ep_cur_rto(struct dn2f_ep *ep, struct lane *L)
{
    uint64_t r = L->rto > L->rto_floor ? L->rto : L->rto_floor;
    unsigned b = L->backoff;
    while (b-- && r < ep->cfg.rto_max_ns) {
        r <<= 1;
    }
    return r > ep->cfg.rto_max_ns ? ep->cfg.rto_max_ns : r;
}

uint64_t ep_slot_rto(struct dn2f_ep *ep, struct lane *L, const struct txslot *ts, uint64_t r)
{
    uint64_t s = L->rto_sw;
    unsigned b = L->backoff;

    if (!ts->via_sw || s <= L->rto) {
        return r;
    }
    while (b-- && s < ep->cfg.rto_max_ns) {
        s <<= 1;
    }
    s = s > ep->cfg.rto_max_ns ? ep->cfg.rto_max_ns : s;
    return s > r ? s : r;
}

void ep_floor_decay(struct dn2f_ep *ep, struct lane *L)
{
    uint64_t t;
    if (!L->rto_floor) {
        return;
    }
    t = now(ep);
    while (L->rto_floor && t - L->floor_t >= FLOOR_DECAY_NS) {
        L->floor_t += FLOOR_DECAY_NS;
        L->rto_floor -= L->rto_floor / 8;
        if (L->rto_floor <= ep->cfg.rto_min_ns) {
            L->rto_floor = 0;
        }
    }
}

/* Earliest retransmission deadline of a lane (scan of the outstanding slots). */
void ep_lane_rearm(struct dn2f_ep *ep, struct lane *L)
{
    uint32_t s;
    uint64_t due = NO_DEADLINE, r;
    bool outstanding = false;

    ep_floor_decay(ep, L);
    r = ep_cur_rto(ep, L);
    if (L->tx) {
        for (s = L->una; s != L->end; s++) {
            struct txslot *t = txs(ep, L, s);
            if (t->pb && t->sent && !t->sacked) {
                /* after a timeout, a full (backed-off) RTO from it */
                uint64_t from = t->last_tx > L->rto_restart ? t->last_tx : L->rto_restart;
                uint64_t rs = ep_slot_rto(ep, L, t, r);
                outstanding = true;
                if (from + rs < due) {
                    due = from + rs;
                }
            }
        }
    }
    L->rto_due = due;
    /* Zero-credit probe: the lane is held back by credits and nothing is
     * in flight that would bring an ACK back. */
    if (!outstanding && dn2f_seqdiff(L->limit, L->end) <= 0) {
        if (L->probe_due == NO_DEADLINE) {
            uint64_t iv = ep_cur_rto(ep, L);
            unsigned b = L->probe_backoff;
            while (b-- && iv < ep->cfg.rto_max_ns) {
                iv <<= 1;
            }
            if (iv > ep->cfg.rto_max_ns) {
                iv = ep->cfg.rto_max_ns;
            }
            L->probe_due = now(ep) + iv;
        }
    } else {
        L->probe_due = NO_DEADLINE;
        L->probe_backoff = 0;
    }
}

void ep_peer_rearm(struct dn2f_ep *ep, struct peer *p)
{
    unsigned l;
    for (l = 0; l < DN2F_NUM_LANES; l++) {
        ep_lane_rearm(ep, &p->ln[l]);
    }
}
