/* SPDX-License-Identifier: MIT */
/*
 * dn2fab endpoint, the link to the switch: ASSIGN, chunked ROUTES assembly
 * and the routing table applied to the peers, refusals, BYE, keepalive
 * replies, and multicast membership (dn2f_ep_mcast_join / leave).
 * See dn2fab-ep.h for the other files.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1
#endif
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "dn2fab-ep.h"

/* ------------------------------------------------------------- routing */
void ep_note_refusal(struct dn2f_ep *ep, unsigned reason)
{
    ep->st.refusals++;
    if (ep->refusal != reason) {
        ep->refusal = reason;
        if (ep->ops.refused) {
            ep->ops.refused(ep->opaque, reason);
        }
    }
}


void ep_link_set_down(struct dn2f_ep *ep)
{
    bool was_up = ep->link == DN2F_LINK_UP;
    ep_mc_discard(ep);
    ep->link = DN2F_LINK_DOWN;
    ep->routes_ok = false;
    ep->asm_active = false;
    ep->hello_due = now(ep);
    if (was_up) {
        ep->st.link_downs++;
        if (ep->ops.link_state) {
            ep->ops.link_state(ep->opaque, false, ep->lid);
        }
    }
}


void ep_reset_all_peers(struct dn2f_ep *ep, unsigned reason)
{
    unsigned i;
    ep_mc_discard(ep);
    while (ep->plist) {
        ep_peer_free(ep, ep->plist, reason);
    }
    for (i = 0; i < DN2F_NUM_GROUPS; i++) {
        free(ep->groups[i]);
        ep->groups[i] = NULL;
    }
}


static bool in_group(struct dn2f_ep *ep, uint16_t glid, uint16_t lid)
{
    struct group *g = ep->groups[dn2f_lid_index(glid) - DN2_CLID_MCAST_FIRST];
    unsigned i;
    if (!g) {
        return false;
    }
    for (i = 0; i < g->n; i++) {
        if (g->lids[i] == lid) {
            return true;
        }
    }
    return false;
}


void ep_joins_sync(struct dn2f_ep *ep)
{
    unsigned i;
    for (i = 0; i < ep->njoins; i++) {
        if (!in_group(ep, ep->joins[i], ep->lid)) {
            ep_send_ctrl(ep, DN2F_T_MCAST_JOIN, ep->joins[i], 0);
        }
    }
}


static void routes_apply(struct dn2f_ep *ep)
{
    unsigned i, j, mark = ++ep->mark_counter;
    struct peer *p, *nx;
    uint64_t t = now(ep);

    for (i = 0; i < ep->asm_nroutes; i++) {
        struct pend_route *r = &ep->asm_routes[i];
        struct dn2f_addr a = r->addr;
        int fam = ep->cfg.sock_family ? ep->cfg.sock_family : ep->cfg.sw.u.sa.sa_family;

        p = ep_peer_get(ep, r->lid);
        if (!p) {
            p = ep_peer_new(ep, r->lid, r->epoch);
            if (!p) {
                continue;
            }
        } else if (p->epoch != r->epoch) {
            /* Epochs are random per board start: one the peer had before
             * is a table that would roll it back to an earlier incarnation
             * (whose recorded datagrams would verify again).  Refused: the
             * peer is left out of this table (an orphan). */
            bool back = false;
            for (j = 0; j < PEER_OLD_EPOCHS; j++) {
                back |= r->epoch && p->old_epochs[j] == r->epoch;
            }
            if (back) {
                ep->st.stale_routes++;
                continue;
            }
            p->old_epochs[p->old_next] = p->epoch;
            p->old_next = (p->old_next + 1) % PEER_OLD_EPOCHS;
            ep_peer_reset(ep, p, DN2F_DROP_PEER_RESET);    /* the peer restarted */
            p->epoch = r->epoch;
        }
        p->direct = (r->flags & DN2F_RT_DIRECT) && dn2f_addr_to_family(&a, fam);
        p->addr = a;
        if (ep->auth) {
            uint8_t tok[DN2F_TOKEN_LEN];
            memcpy(tok, r->token, sizeof(tok));
            dn2f_seal(ep->kseal, 'R', ep->sw_epoch, r->epoch, r->lid, tok);
            if (memcmp(tok, p->tok, sizeof(tok)) != 0) {
                memcpy(p->tok, tok, sizeof(tok));
                ep_peer_keys(ep, p);
            }
        }
        if (p->st == PEER_ORPHAN) {
            for (j = 0; j < DN2F_NUM_LANES; j++) {
                p->ln[j].force_retx = true;     /* back: resend what is outstanding */
                p->ln[j].rto_due = t;
            }
        }
        p->st = PEER_ACTIVE;
        p->mark = mark;
    }
    for (p = ep->plist; p; p = p->next) {
        if (p->mark != mark && p->st == PEER_ACTIVE) {
            p->st = PEER_ORPHAN;
            p->orphan_since = t;
        }
    }
    for (i = 0; i < DN2F_NUM_GROUPS; i++) {
        free(ep->groups[i]);
        ep->groups[i] = NULL;
    }
    for (i = 0; i < ep->asm_ngroups; i++) {
        unsigned gi = dn2f_lid_index(ep->asm_groups[i].group) - DN2_CLID_MCAST_FIRST;
        struct group *g;
        if (ep->groups[gi]) {
            continue;           /* duplicate group entry: first wins */
        }
        g = calloc(1, sizeof(*g));
        if (!g) {
            continue;
        }
        for (j = 0; j < ep->asm_groups[i].n; j++) {
            unsigned k;
            bool dup = false;
            for (k = 0; k < g->n; k++) {
                dup |= g->lids[k] == ep->asm_groups[i].lids[j];
            }
            if (!dup) {
                g->lids[g->n++] = ep->asm_groups[i].lids[j];
            }
        }
        ep->groups[gi] = g;
    }
    ep->routes_gen = ep->asm_gen;
    ep->routes_ok = true;
    ep->asm_active = false;
    ep_joins_sync(ep);
    if (ep->cfg.vtime) {
        /* the switch starts virtual time once every board confirms the
         * current table (its KEEPALIVE carries the generation): at once */
        ep->ka_due = t;
    }
    if (ep->link == DN2F_LINK_ASSIGNED) {
        ep->link = DN2F_LINK_UP;
        ep->st.link_ups++;
        ep->refusal = 0;
        ep->ka_due = ep->cfg.vtime ? t : t + ep->cfg.keepalive_ns;
        for (p = ep->plist; p; p = nx) {
            nx = p->next;
            for (j = 0; j < DN2F_NUM_LANES; j++) {
                p->ln[j].force_retx = true;     /* resend what was in flight, now */
                p->ln[j].backoff = 0;
                p->ln[j].rto_due = t;
            }
        }
        if (ep->ops.link_state) {
            ep->ops.link_state(ep->opaque, true, ep->lid);
        }
        /* what arrived while the link was not up */
        for (p = ep->plist; p; p = p->next) {
            for (j = 0; j < DN2F_NUM_LANES; j++) {
                ep_rx_drain(ep, p, j);
            }
        }
    }
}


static void input_routes(struct dn2f_ep *ep, const struct dn2f_msg *m)
{
    struct dn2f_iter it;
    struct dn2f_route r;
    uint16_t g, n;
    const uint8_t *mem;
    unsigned c = m->u.routes.chunk;

    if (!ep->asm_active || ep->asm_gen != m->u.routes.gen ||
        ep->asm_nchunks != m->u.routes.nchunks) {
        ep->asm_active = true;
        ep->asm_gen = m->u.routes.gen;
        ep->asm_nchunks = m->u.routes.nchunks;
        ep->asm_got = 0;
        ep->asm_nroutes = 0;
        ep->asm_ngroups = 0;
        memset(ep->asm_have, 0, sizeof(ep->asm_have));
    }
    if (ep->asm_have[c >> 3] & (1u << (c & 7))) {
        return;
    }
    if (ep->asm_nroutes + m->u.routes.nroutes > DN2F_NUM_CLID ||
        ep->asm_ngroups + m->u.routes.ngroups > DN2F_NUM_GROUPS) {
        ep->asm_active = false;     /* inconsistent: wait for a resend */
        return;
    }
    ep->asm_have[c >> 3] |= (uint8_t)(1u << (c & 7));
    ep->asm_got++;
    dn2f_routes_iter(m, &it);
    while (dn2f_routes_next_route(&it, &r)) {
        struct pend_route *pr = &ep->asm_routes[ep->asm_nroutes++];
        pr->lid = r.lid;
        pr->flags = r.flags;
        pr->addr = r.addr;
        pr->epoch = r.epoch;
        memcpy(pr->token, r.token, DN2F_TOKEN_LEN);
    }
    while (dn2f_routes_next_group(&it, &g, &n, &mem)) {
        unsigned j;
        ep->asm_groups[ep->asm_ngroups].group = g;
        ep->asm_groups[ep->asm_ngroups].n = n;
        for (j = 0; j < n; j++) {
            ep->asm_groups[ep->asm_ngroups].lids[j] = dn2f_ld16(mem + 2 * j);
        }
        ep->asm_ngroups++;
    }
    if (ep->asm_got == ep->asm_nchunks) {
        routes_apply(ep);
    }
}


static void input_assign(struct dn2f_ep *ep, const struct dn2f_msg *m)
{
    const struct dn2f_assign *a = &m->u.assign;
    uint64_t t = now(ep);

    if (a->guid != ep->cfg.guid || m->h.dst_epoch != ep->epoch ||
        a->link_state != DN2_SMA_LINK_READY) {
        ep->st.drop[DN2F_DROP_NOT_FOR_US]++;
        return;
    }
    if (ep->link != DN2F_LINK_DOWN) {
        /* An ASSIGN answers a HELLO, and HELLOs go out only while DOWN:
         * this one is late (a switch that answered several of our HELLOs,
         * maybe of an earlier attempt with another LID, or a replay).  Its
         * ticket, token and LID are not taken: the switch made the port
         * with the ticket returned first and its token, and taking another
         * would leave the link up but every DATA/ACK failing
         * authentication both ways, or move us to a LID given to someone
         * else. */
        if (a->lid == ep->lid && m->h.src_epoch == ep->sw_epoch) {
            ep->last_sw_rx = t;
        }
        return;
    }
    ep->last_sw_rx = t;
    ep->ticket = a->ticket;
    if (ep->auth) {
        uint8_t tok[DN2F_TOKEN_LEN];
        struct peer *p;
        memcpy(tok, a->token, sizeof(tok));
        dn2f_seal(ep->kseal, 'A', m->h.src_epoch, ep->epoch, a->lid, tok);
        if (memcmp(tok, ep->my_tok, sizeof(tok)) != 0) {
            uint8_t zero[DN2F_TOKEN_LEN] = { 0 };
            memcpy(ep->my_tok, tok, sizeof(tok));
            dn2f_pair_key(&ep->kmc, ep->my_tok, zero);
            for (p = ep->plist; p; p = p->next) {
                ep_peer_keys(ep, p);
            }
        }
    }
    if (ep->lid && a->lid != ep->lid) {
        ep_reset_all_peers(ep, DN2F_DROP_PEER_RESET);  /* we are someone else now */
    }
    ep->lid = a->lid;
    ep->lid_hint = a->lid;
    ep->sw_epoch = m->h.src_epoch;
    ep->mode = a->route_mode;
    ep->link = DN2F_LINK_ASSIGNED;
    ep->routes_ok = false;
    ep->asm_active = false;
    ep->ka_due = t;             /* the ticket goes back at once */
}


void ep_input_from_switch(struct dn2f_ep *ep, const struct dn2f_msg *m)
{
    uint64_t t = now(ep);

    switch (m->h.type) {
    case DN2F_T_ASSIGN:
        input_assign(ep, m);
        return;
    case DN2F_T_ROUTES:
        if (ep->link == DN2F_LINK_DOWN || m->h.src_epoch != ep->sw_epoch ||
            m->h.dst_epoch != ep->epoch || m->h.dst_lid != ep->lid) {
            ep->st.drop[DN2F_DROP_STALE_EPOCH]++;
            return;
        }
        ep->last_sw_rx = t;
        input_routes(ep, m);
        return;
    case DN2F_T_KEEPALIVE:
        /* Only the current switch incarnation answers our KEEPALIVEs (a
         * restarted one answers them with BYE "unknown"): one of another
         * switch epoch, or for another epoch of ours, is recorded or
         * forged, and changes nothing. */
        if (ep->link == DN2F_LINK_DOWN || m->h.src_epoch != ep->sw_epoch ||
            m->h.dst_epoch != ep->epoch) {
            ep->st.drop[DN2F_DROP_STALE_EPOCH]++;
            return;
        }
        ep->last_sw_rx = t;
        return;
    case DN2F_T_BYE:
        if (m->u.bye.reason >= DN2F_BYE_GUID_IN_USE) {
            /* The switch refuses our join; we keep trying at the HELLO
             * interval (the GUID's old port may time out, a LID free up). */
            if (m->h.dst_epoch != ep->epoch || ep->link == DN2F_LINK_UP) {
                ep->st.drop[DN2F_DROP_NOT_FOR_US]++;
                return;
            }
            ep_note_refusal(ep, m->u.bye.reason);
            if (ep->link == DN2F_LINK_ASSIGNED) {
                ep_link_set_down(ep);
                ep->hello_due = t + ep->cfg.hello_interval_ns;
            }
            return;
        }
        /* A BYE counts only for this incarnation of ours (a stranger
         * does not know its epoch; one recorded for an earlier one is
         * stale). */
        if (m->h.dst_epoch != ep->epoch) {
            ep->st.drop[DN2F_DROP_STALE_EPOCH]++;
            return;
        }
        if (ep->link == DN2F_LINK_DOWN) {
            ep->hello_due = t;
        } else if (ep->link == DN2F_LINK_ASSIGNED && m->h.src_epoch == ep->sw_epoch) {
            ep_link_set_down(ep);   /* the join failed (a stale ticket, the LID taken) */
        } else if (m->u.bye.reason == DN2F_BYE_UNKNOWN) {
            /* "unknown": the switch restarted or timed our port out (any
             * switch epoch) -- or a signed BYE of such a moment is
             * replayed.  Ask at once: a switch that knows us answers the
             * KEEPALIVE; without an answer within the HELLO interval the
             * switch-loss timer takes the link down and we join again. */
            uint64_t due = t + ep->cfg.hello_interval_ns;
            if (ep->last_sw_rx + ep->cfg.keepalive_timeout_ns > due) {
                ep->last_sw_rx = due - ep->cfg.keepalive_timeout_ns;
                ep->ka_due = t;
                ep->st.bye_probes++;
            }
        } else if (m->h.src_epoch == ep->sw_epoch) {
            ep_link_set_down(ep);   /* the switch shuts down */
        } else {
            ep->st.drop[DN2F_DROP_STALE_EPOCH]++;
        }
        return;
    default:
        ep->st.drop[DN2F_DROP_NOT_FOR_US]++;
        return;
    }
}






int dn2f_ep_mcast_join(struct dn2f_ep *ep, uint16_t group_lid)
{
    int rc;
    if (!dn2f_lid_is_mcast(group_lid)) {
        return -EINVAL;
    }
    rc = dn2f_lidset_add(ep->joins, &ep->njoins, MAX_JOINS, group_lid);
    if (rc <= 0) {
        return rc;
    }
    if (ep->link == DN2F_LINK_UP) {
        ep_send_ctrl(ep, DN2F_T_MCAST_JOIN, group_lid, 0);
    }
    return 0;
}

int dn2f_ep_mcast_leave(struct dn2f_ep *ep, uint16_t group_lid)
{
    if (!dn2f_lidset_del(ep->joins, &ep->njoins, group_lid)) {
        return -ENOENT;
    }
    if (ep->link == DN2F_LINK_UP) {
        ep_send_ctrl(ep, DN2F_T_MCAST_LEAVE, group_lid, 0);
    }
    return 0;
}


unsigned dn2f_ep_group_lids(const struct dn2f_ep *ep, uint16_t group_lid, uint16_t *lids,
                            unsigned max)
{
    const struct group *g;
    unsigned i, n = 0;

    if (!dn2f_lid_is_mcast(group_lid)) {
        return 0;
    }
    g = ep->groups[dn2f_lid_index(group_lid) - DN2_CLID_MCAST_FIRST];
    for (i = 0; g && i < g->n && n < max; i++) {
        lids[n++] = g->lids[i];
    }
    return n;
}
