/* SPDX-License-Identifier: MIT */
/*
 * dn2fab endpoint, the peer store: the peers by LID and their list,
 * creating, clearing, resetting and freeing a peer, its lanes' rings, its
 * keys, and the packet buffers the send rings share.  Every other file of
 * the endpoint uses it; it calls none of them.
 * See dn2fab-ep.h for the other files.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1
#endif
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "dn2fab-ep.h"

/* ------------------------------------------------------------ buffers */
void ep_pb_unref(struct pbuf *pb)
{
    if (pb && --pb->refs == 0) {
        free(pb);
    }
}


void ep_peer_keys(struct dn2f_ep *ep, struct peer *p)
{
    if (ep->auth) {
        dn2f_pair_key(&p->ktx, ep->my_tok, p->tok);
        dn2f_pair_key(&p->krx, p->tok, ep->my_tok);
    }
}


/* --------------------------------------------------------------- peers */
static void lane_clear_tx(struct dn2f_ep *ep, struct lane *L, unsigned reason)
{
    uint32_t s;
    if (L->tx) {
        for (s = L->una; s != L->end; s++) {
            struct txslot *t = txs(ep, L, s);
            if (t->pb) {
                ep->st.drop[reason]++;
                ep->tx_total -= t->pb->len;
                ep_pb_unref(t->pb);
            }
            memset(t, 0, sizeof(*t));
        }
    }
    L->una = L->nxt = L->end = 0;
    L->limit = DN2F_INITIAL_CREDIT;
    L->tx_bytes = L->inflight = 0;
    L->srtt = L->rttvar = 0;
    L->rto = ep->cfg.rto_init_ns;
    L->backoff = L->probe_backoff = 0;
    L->rto_due = L->probe_due = NO_DEADLINE;
    L->force_retx = false;
    L->cwnd = 4ULL * ep->cfg.max_dgram;
    L->ssthresh = (uint64_t)ep->cfg.tx_window * DN2F_PKT_MAX;
    L->recovery = false;
    L->rack_ts = 0;
    L->rack_ts_sw = 0;
    L->srtt_sw = L->rttvar_sw = L->rto_sw = 0;
    L->rto_check = false;
    L->rto_restart = 0;
    /* rto_floor stays: it is about the peer's host (a starved CPU) */
}


static void lane_clear_rx(struct dn2f_ep *ep, struct lane *L)
{
    uint32_t i;
    if (L->rx) {
        for (i = 0; i < ep->cfg.rx_window; i++) {
            free(L->rx[i].data);
            memset(&L->rx[i], 0, sizeof(L->rx[i]));
        }
    }
    ep->rx_total -= L->rx_bytes;
    L->rx_bytes = 0;
    L->base = L->cum = 0;
    L->rx_ooo = 0;
    L->rx_blocked = false;
    L->echo = 0;
}


/* Forget everything exchanged with p (both directions, all lanes). */
void ep_peer_clear(struct dn2f_ep *ep, struct peer *p, unsigned reason)
{
    unsigned l;
    for (l = 0; l < DN2F_NUM_LANES; l++) {
        lane_clear_tx(ep, &p->ln[l], reason);
        lane_clear_rx(ep, &p->ln[l]);
    }
    p->ack_pending = false;
    p->ack_due = NO_DEADLINE;
}


/* Our own decision to start over with p (it restarted, it left, we are
 * someone else now): a new session, so that p resets its side too when it
 * sees it, and p's session is unknown until it tells us. */
void ep_peer_reset(struct dn2f_ep *ep, struct peer *p, unsigned reason)
{
    ep_peer_clear(ep, p, reason);
    do {
        p->gen = ++ep->gen_counter;
    } while ((uint32_t)p->gen == 0);
    p->peer_sess = 0;
}


struct peer *ep_peer_new(struct dn2f_ep *ep, uint16_t lid, uint64_t epoch)
{
    struct peer *p = calloc(1, sizeof(*p));
    if (!p) {
        return NULL;
    }
    p->lid = lid;
    p->epoch = epoch;
    p->st = PEER_ACTIVE;
    ep_peer_reset(ep, p, DN2F_DROP_PEER_RESET);
    p->next = ep->plist;
    if (ep->plist) {
        ep->plist->prev = p;
    }
    ep->plist = p;
    ep->peers[dn2f_lid_index(lid)] = p;
    ep->npeers++;
    return p;
}


void ep_peer_free(struct dn2f_ep *ep, struct peer *p, unsigned reason)
{
    unsigned l;
    ep_peer_reset(ep, p, reason);
    if (p->prev) {
        p->prev->next = p->next;
    } else {
        ep->plist = p->next;
    }
    if (p->next) {
        p->next->prev = p->prev;
    }
    ep->peers[dn2f_lid_index(p->lid)] = NULL;
    ep->npeers--;
    for (l = 0; l < DN2F_NUM_LANES; l++) {
        free(p->ln[l].tx);
        free(p->ln[l].rx);
    }
    free(p);
}


bool ep_lane_tx_alloc(struct dn2f_ep *ep, struct lane *L)
{
    if (!L->tx) {
        L->tx = calloc(ep->cfg.tx_window, sizeof(*L->tx));
    }
    return L->tx != NULL;
}


bool ep_lane_rx_alloc(struct dn2f_ep *ep, struct lane *L)
{
    if (!L->rx) {
        L->rx = calloc(ep->cfg.rx_window, sizeof(*L->rx));
    }
    return L->rx != NULL;
}


struct peer *ep_peer_get(struct dn2f_ep *ep, uint16_t lid)
{
    if (!dn2_lid_assignable(lid)) {
        return NULL;
    }
    return ep->peers[dn2f_lid_index(lid)];
}
