/* SPDX-License-Identifier: MIT */
/*
 * dn2fab endpoint: the board side of the fabric.  This file: the API
 * (lifecycle, configuration, accessors, dn2f_ep_input's dispatch); the
 * peer store is dn2fab-ep-peer.c; dn2fab-ep.h lists the others.
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
    c->vt_retry_ns = 20000000;          /* 20 ms */
}


/* --------------------------------------------------------------- input */
/* One datagram in; what it makes due (ACKs, HELLO answers, credit
 * updates) is sent by the next flush. */
static void ep_input(struct dn2f_ep *ep, const struct dn2f_addr *from, const void *buf,
                     size_t len)
{
    struct dn2f_msg m;
    bool from_sw;
    int rc;

    ep->st.rx_dgrams++;
    rc = dn2f_decode(buf, len, &m);
    if (rc) {
        ep->st.drop[DN2F_DROP_BAD_DGRAM]++;
        return;
    }
    from_sw = dn2f_addr_equal(from, &ep->cfg.sw);
    /* With a secret every datagram has a MAC, without one none has.  A
     * switch's BYE "authentication failed" cannot be verified by a board
     * whose secret differs: it is only a hint, reported, nothing else. */
    if (!(m.h.flags & DN2F_F_MAC) != !ep->auth ||
        (ep->auth && m.h.type != DN2F_T_DATA && m.h.type != DN2F_T_ACK &&
         !dn2f_mac_ok(buf, &m, &ep->kctl))) {
        ep->st.drop[DN2F_DROP_AUTH]++;
        if (from_sw && m.h.type == DN2F_T_BYE && m.u.bye.reason == DN2F_BYE_AUTH &&
            m.h.dst_epoch == ep->epoch && ep->link != DN2F_LINK_UP) {
            ep_note_refusal(ep, DN2F_BYE_AUTH);
        }
        return;
    }
    switch (m.h.type) {
    case DN2F_T_ASSIGN:
    case DN2F_T_ROUTES:
    case DN2F_T_KEEPALIVE:
    case DN2F_T_BYE:
        if (!from_sw) {
            ep->st.drop[DN2F_DROP_FORGED]++;
            return;
        }
        ep_input_from_switch(ep, &m);
        break;
    case DN2F_T_DATA:
    case DN2F_T_ACK:
        ep_rx_input(ep, from, buf, &m, from_sw);
        break;
    case DN2F_T_VT_GRANT:
        if (!from_sw) {
            ep->st.drop[DN2F_DROP_FORGED]++;
            return;
        }
        ep_vt_input(ep, &m);
        break;
    default:
        ep->st.drop[DN2F_DROP_NOT_FOR_US]++;
        return;
    }
}

void dn2f_ep_input(struct dn2f_ep *ep, const struct dn2f_addr *from, const void *buf, size_t len)
{
    ep_input(ep, from, buf, len);
    ep_flush_internal(ep);
    ep_vt_pump(ep);             /* the ACKs a held report waited for may have come */
}


void dn2f_ep_flush(struct dn2f_ep *ep)
{
    ep_flush_internal(ep);
    ep_vt_pump(ep);
}

void dn2f_ep_input_noflush(struct dn2f_ep *ep, const struct dn2f_addr *from, const void *buf,
                           size_t len)
{
    ep_input(ep, from, buf, len);
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
    if (ep->cfg.vtime) {
        /* A sender's report waits for our ACKs: never hold them back. */
        ep->cfg.ack_delay_ns = 0;
        if (!ep->cfg.vt_retry_ns) {
            ep->cfg.vt_retry_ns = 20000000;
        }
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


void dn2f_ep_leave(struct dn2f_ep *ep)
{
    if (ep && !ep->left && ep->lid && ep->dgbuf) {
        ep_send_ctrl(ep, DN2F_T_BYE, DN2F_BYE_LEAVING, 0);
    }
    if (ep) {
        ep->left = true;
    }
}

void dn2f_ep_free(struct dn2f_ep *ep)
{
    if (!ep) {
        return;
    }
    dn2f_ep_leave(ep);
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


unsigned dn2f_ep_rx_held(const struct dn2f_ep *ep)
{
    const struct peer *p;
    unsigned n = 0;
    for (p = ep->plist; p; p = p->next) {
        unsigned l;
        for (l = 0; l < DN2F_NUM_LANES; l++) {
            const struct lane *L = &p->ln[l];
            n += (unsigned)(L->cum - L->base) + L->rx_ooo;
        }
    }
    return n;
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
