/* SPDX-License-Identifier: MIT */
/*
 * dn2fab endpoint: the board side of the fabric.  This file: lifecycle,
 * configuration, peers and accessors; dn2fab-ep.h lists the others.
 *
 *   link:      DOWN --HELLO/ASSIGN--> ASSIGNED --ROUTES complete--> UP
 *              UP --keepalive timeout / BYE / new switch epoch--> DOWN
 *   per peer:  ACTIVE (in the routing table) <-> ORPHAN (missing from it,
 *              kept peer_grace_ns so that a switch restart loses nothing)
 *
 * Reliability is end to end between boards: per peer, direction and lane (a
 * lane = DWID + 2 * request: lanes 0/1 carry data for WID 0/1, lanes 2/3
 * RVL-family requests for WID 0/1, so one process's back-pressure does not
 * stop the other's traffic, and a full RC FIFO does not stop the answers;
 * a request waits for the data queued before it, read after write) a 32-bit
 * sequence space starting at 0 for each pair of epochs, a send ring of
 * tx_window slots (the retransmit queue), cumulative ACK + SACK bitmap,
 * RTO with exponential backoff (never gives up while the peer exists),
 * time-based (RACK) fast retransmit, a loss-based congestion window, and
 * credits: the receiver grants seqs < delivered + rx_window, so a board that
 * refuses deliveries (-EBUSY) stops its senders without losing anything.
 *
 * Spurious timeouts (Eifel detection, RFC 3522, with RACK-style recovery):
 * every DATA datagram carries its send time, and each ACK block echoes the
 * newest send time of the datagrams that brought that lane something new.
 * A timeout resends only the oldest expired packet; when its ACK echoes a
 * time older than that retransmission, the original had arrived and only
 * the ACK was late (the receiving QEMU waited for a CPU): the window cut is
 * undone, nothing else of the flight is resent, and the peer's RTO floor
 * rises above the delay seen (decaying slowly).  When the echo shows the
 * retransmission arrived, RACK resends the rest of the flight at once.
 * See docs/fabric.md.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1
#endif
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "dn2fab-ep.h"

/* ---------------------------------------------------------------- names */
const char *dn2f_drop_name(unsigned reason)
{
    static const char *const names[DN2F_DROP_MAX] = {
        [DN2F_DROP_BAD_DGRAM] = "bad_datagram",
        [DN2F_DROP_NOT_FOR_US] = "not_for_us",
        [DN2F_DROP_FORGED] = "forged_source",
        [DN2F_DROP_UNKNOWN_PEER] = "unknown_peer",
        [DN2F_DROP_STALE_EPOCH] = "stale_epoch",
        [DN2F_DROP_BAD_ACK] = "bad_ack",
        [DN2F_DROP_BAD_DLID] = "bad_dlid",
        [DN2F_DROP_WINDOW] = "beyond_window",
        [DN2F_DROP_NO_BUFFER] = "no_buffer",
        [DN2F_DROP_NO_ROUTE] = "no_route",
        [DN2F_DROP_DELIVER_ERR] = "deliver_error",
        [DN2F_DROP_PEER_GONE] = "peer_gone",
        [DN2F_DROP_PEER_RESET] = "peer_reset",
        [DN2F_DROP_NOT_READY] = "link_not_ready",
        [DN2F_DROP_STALE_SESSION] = "stale_session",
        [DN2F_DROP_AUTH] = "auth",
    };
    return reason < DN2F_DROP_MAX && names[reason] ? names[reason] : "?";
}



/* ------------------------------------------------------------ utilities */

static bool pow2_in(uint32_t v, uint32_t lo, uint32_t hi)
{
    return v >= lo && v <= hi && (v & (v - 1)) == 0;
}


void dn2f_ep_config_default(struct dn2f_ep_config *c)
{
    memset(c, 0, sizeof(*c));
    c->tx_window = 512;
    c->rx_window = 512;
    c->max_dgram = DN2F_DGRAM_DEFAULT;
    c->tx_budget = 64u << 20;
    c->rx_budget = 64u << 20;
    c->rto_min_ns = 1000000;            /* 1 ms */
    c->rto_max_ns = 200000000;          /* 200 ms */
    c->rto_init_ns = 10000000;          /* 10 ms */
    c->ack_delay_ns = 0;
    c->hello_interval_ns = 100000000;   /* 100 ms */
    c->keepalive_ns = 250000000;        /* 250 ms */
    c->keepalive_timeout_ns = 1000000000; /* 1 s */
    c->peer_grace_ns = 10000000000ULL;  /* 10 s */
}







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


/* ------------------------------------------------------------ lifecycle */
struct dn2f_ep *dn2f_ep_new(const struct dn2f_ep_config *cfg,
                            const struct dn2f_ep_ops *ops, void *opaque)
{
    struct dn2f_ep *ep;

    if (!cfg || !ops || !ops->now_ns || !ops->send_datagram || !ops->deliver ||
        cfg->guid == 0 || !cfg->sw.len ||
        !pow2_in(cfg->tx_window, 64, 4096) || !pow2_in(cfg->rx_window, DN2F_INITIAL_CREDIT, 4096) ||
        cfg->max_dgram < 8192 || cfg->max_dgram > DN2F_DGRAM_MAX ||
        cfg->rto_min_ns == 0 || cfg->rto_max_ns < cfg->rto_min_ns ||
        (cfg->lid_hint && !dn2_lid_assignable(cfg->lid_hint))) {
        errno = EINVAL;
        return NULL;
    }
    ep = calloc(1, sizeof(*ep));
    if (!ep) {
        return NULL;
    }
    ep->cfg = *cfg;
    ep->ops = *ops;
    ep->opaque = opaque;
    if (ep->cfg.rto_init_ns < ep->cfg.rto_min_ns) {
        ep->cfg.rto_init_ns = ep->cfg.rto_min_ns;
    }
    ep->dgbuf = malloc(DN2F_DGRAM_MAX);
    ep->mcbuf = malloc(DN2F_DGRAM_MAX);
    ep->txb_seqs = malloc(MAX_RECS_PER_DGRAM * sizeof(uint32_t));
    ep->txb_lanes = malloc(MAX_RECS_PER_DGRAM);
    ep->mcrefs = malloc(MC_MAX_REFS * sizeof(struct mcref));
    ep->asm_routes = malloc(DN2F_NUM_CLID * sizeof(struct pend_route));
    ep->asm_groups = malloc(DN2F_NUM_GROUPS * sizeof(*ep->asm_groups));
    if (!ep->dgbuf || !ep->mcbuf || !ep->txb_seqs || !ep->txb_lanes || !ep->mcrefs ||
        !ep->asm_routes ||
        !ep->asm_groups) {
        dn2f_ep_free(ep);
        errno = ENOMEM;
        return NULL;
    }
    ep->epoch = cfg->epoch ? cfg->epoch : dn2f_random_u64();
    ep->lid_hint = cfg->lid_hint;
    if (cfg->secret && cfg->secret_len) {
        uint8_t zero[DN2F_TOKEN_LEN] = { 0 };
        ep->auth = true;
        dn2f_secret_keys(cfg->secret, cfg->secret_len, &ep->kctl, ep->kseal);
        dn2f_pair_key(&ep->kmc, ep->my_tok, zero);
    }
    ep->cfg.secret = NULL;      /* not kept */
    ep->cfg.secret_len = 0;
    ep->link = DN2F_LINK_DOWN;
    ep->mode = DN2F_ROUTE_SWITCH;
    ep->hello_due = now(ep);
    return ep;
}


void dn2f_ep_free(struct dn2f_ep *ep)
{
    if (!ep) {
        return;
    }
    if (ep->lid && ep->dgbuf) {
        ep_send_ctrl(ep, DN2F_T_BYE, DN2F_BYE_LEAVING, 0);
    }
    if (ep->mcrefs) {
        ep_reset_all_peers(ep, DN2F_DROP_PEER_GONE);
    }
    free(ep->dgbuf);
    free(ep->mcbuf);
    free(ep->txb_seqs);
    free(ep->txb_lanes);
    free(ep->mcrefs);
    free(ep->asm_routes);
    free(ep->asm_groups);
    free(ep);
}


void dn2f_ep_reset(struct dn2f_ep *ep, uint64_t new_epoch)
{
    ep_link_set_down(ep);
    ep_reset_all_peers(ep, DN2F_DROP_PEER_RESET);
    ep->epoch = new_epoch ? new_epoch : dn2f_random_u64();
    ep->sw_epoch = 0;
    ep->blocked_until = 0;
    ep->hello_due = now(ep);
}




enum dn2f_link dn2f_ep_link(const struct dn2f_ep *ep) { return ep->link; }
unsigned dn2f_ep_refusal(const struct dn2f_ep *ep) { return ep->refusal; }
uint16_t dn2f_ep_lid(const struct dn2f_ep *ep) { return ep->lid; }
uint64_t dn2f_ep_epoch(const struct dn2f_ep *ep) { return ep->epoch; }
int dn2f_ep_route_mode(const struct dn2f_ep *ep) { return ep->mode; }
const struct dn2f_ep_stats *dn2f_ep_stats(const struct dn2f_ep *ep) { return &ep->st; }

bool dn2f_ep_idle(const struct dn2f_ep *ep)
{
    const struct peer *p;
    if (ep->mc_nrecs) {
        return false;
    }
    for (p = ep->plist; p; p = p->next) {
        unsigned l;
        for (l = 0; l < DN2F_NUM_LANES; l++) {
            if (p->ln[l].una != p->ln[l].end) {
                return false;
            }
        }
    }
    return true;
}


unsigned dn2f_ep_pending(const struct dn2f_ep *ep, uint16_t lid)
{
    const struct peer *p;
    unsigned l, n = 0;
    if (!dn2_lid_assignable(lid)) {
        return 0;
    }
    p = ep->peers[dn2f_lid_index(lid)];
    if (!p) {
        return 0;
    }
    for (l = 0; l < DN2F_NUM_LANES; l++) {
        n += (unsigned)(p->ln[l].end - p->ln[l].una);
    }
    return n;
}


unsigned dn2f_ep_group_members(struct dn2f_ep *ep, uint16_t group_lid)
{
    struct peer *m[DN2F_MCAST_MAX_MEMBERS];
    if (!dn2f_lid_is_mcast(group_lid)) {
        return 0;
    }
    return ep_group_members(ep, group_lid, m);
}
