/* SPDX-License-Identifier: MIT */
/*
 * dn2fab endpoint, lock-step virtual time (config vtime): the board's
 * reports to the switch and the grants it gets back (docs/fabric.md
 * "Virtual time").
 *
 * A report says "my virtual clock is at now, I send nothing before
 * earliest".  The switch computes every board's horizon from the reports,
 * and a horizon is only safe if every packet a board sent before its
 * report is already at its receiver when the switch reads the report: so
 * a recorded report stays here until every packet this board sent has
 * been acknowledged (cumulatively or by SACK: buffered at the receiver's
 * endpoint), and ACKREQ probes ask for the ACKs when that takes a
 * vt_retry_ns.  Once sent, the report goes again every vt_retry_ns
 * until a grant answers it (echoes its rseq or a newer one) and the
 * horizon is beyond its now: a lost REPORT, a lost answer or a lost
 * unsolicited grant all cost at most one retry period.  Grants only ever
 * raise the horizon (max()).
 * See dn2fab-ep.h for the other files.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1
#endif
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "dn2fab-ep.h"

unsigned dn2f_ep_unacked(const struct dn2f_ep *ep)
{
    const struct peer *p;
    unsigned n = 0;

    for (p = ep->plist; p; p = p->next) {
        unsigned l;
        for (l = 0; l < DN2F_NUM_LANES; l++) {
            const struct lane *L = &p->ln[l];
            uint32_t s;
            if (!L->tx) {
                continue;
            }
            for (s = L->una; s != L->end; s++) {
                const struct txslot *t = &L->tx[s & (ep->cfg.tx_window - 1)];
                if (t->pb && !t->sacked) {
                    n++;
                }
            }
        }
    }
    return n;
}


uint64_t dn2f_ep_vt_horizon(const struct dn2f_ep *ep)
{
    return ep->vt.horizon;
}


int dn2f_ep_send_vt(struct dn2f_ep *ep, uint16_t dlid, const void *pkt, size_t len,
                    uint64_t vtime, uint32_t vseq)
{
    if (!ep->cfg.vtime) {
        return -EINVAL;
    }
    return ep_send_pkt(ep, dlid, pkt, len, true, vtime, vseq);
}


/* The board still waits for the switch on its report. */
static bool vt_waiting(const struct dn2f_ep *ep)
{
    return !ep->vt.answered || ep->vt.horizon <= ep->vt.now;
}


static bool vt_active(const struct dn2f_ep *ep)
{
    return ep->cfg.vtime && ep->vt.have && ep->link == DN2F_LINK_UP;
}


/* Ask every peer we wait on for an ACK (an ACK datagram with ACKREQ). */
static void vt_probe(struct dn2f_ep *ep)
{
    struct peer *p;

    for (p = ep->plist; p; p = p->next) {
        unsigned l;
        bool any = false;
        for (l = 0; l < DN2F_NUM_LANES; l++) {
            any |= p->ln[l].tx && p->ln[l].una != p->ln[l].nxt;
        }
        if (any && p->st == PEER_ACTIVE) {
            ep_send_ack(ep, p, true);
            ep->st.vt_ack_probes++;
        }
    }
}


static void vt_send(struct dn2f_ep *ep, uint64_t t)
{
    ep_send_ctrl(ep, DN2F_T_VT_REPORT, 0, 0);
    ep->st.vt_reports_tx++;
    ep->vt.sent = true;
    ep->vt.retry_due = t + ep->cfg.vt_retry_ns;
}


void ep_vt_pump(struct dn2f_ep *ep)
{
    uint64_t t;

    if (!vt_active(ep)) {
        return;
    }
    t = now(ep);
    if (!ep->vt.sent) {
        if (dn2f_ep_unacked(ep)) {
            if (t >= ep->vt.probe_due) {
                vt_probe(ep);
                ep->vt.probe_due = t + ep->cfg.vt_retry_ns;
            }
            return;
        }
        vt_send(ep, t);
        return;
    }
    if (vt_waiting(ep) && t >= ep->vt.retry_due) {
        vt_send(ep, t);
    }
}


uint64_t ep_vt_deadline(struct dn2f_ep *ep)
{
    if (!vt_active(ep)) {
        return NO_DEADLINE;
    }
    if (!ep->vt.sent) {
        return dn2f_ep_unacked(ep) ? ep->vt.probe_due : now(ep);
    }
    return vt_waiting(ep) ? ep->vt.retry_due : NO_DEADLINE;
}


int dn2f_ep_vt_report(struct dn2f_ep *ep, uint64_t vnow, uint64_t earliest)
{
    if (!ep->cfg.vtime || earliest < vnow) {
        return -EINVAL;
    }
    if (ep->vt.have && ep->vt.now == vnow && ep->vt.earliest == earliest) {
        return 0;               /* the same report: it is on its way already */
    }
    ep->vt.have = true;
    ep->vt.sent = false;
    ep->vt.answered = false;
    ep->vt.rseq++;
    ep->vt.now = vnow;
    ep->vt.earliest = earliest;
    ep->vt.probe_due = now(ep) + ep->cfg.vt_retry_ns;
    if (vt_active(ep) && dn2f_ep_unacked(ep)) {
        ep->st.vt_reports_held++;
    }
    ep_vt_pump(ep);
    return 0;
}


void ep_vt_input(struct dn2f_ep *ep, const struct dn2f_msg *m)
{
    const struct dn2f_vt_grant *g = &m->u.vt_grant;

    if (!ep->cfg.vtime || ep->link == DN2F_LINK_DOWN || m->h.dst_lid != ep->lid) {
        ep->st.drop[DN2F_DROP_NOT_FOR_US]++;
        return;
    }
    if (m->h.src_epoch != ep->sw_epoch || m->h.dst_epoch != ep->epoch) {
        ep->st.drop[DN2F_DROP_STALE_EPOCH]++;
        return;
    }
    ep->st.vt_grants_rx++;
    ep->last_sw_rx = now(ep);
    if (ep->vt.sent && dn2f_seqdiff(g->rseq, ep->vt.rseq) >= 0) {
        ep->vt.answered = true;
    }
    ep->vt.lookahead_ns = g->lookahead_ns;
    ep->vt.quantum_ns = g->quantum_ns;
    if (g->slowest > ep->vt.slowest) {
        ep->vt.slowest = g->slowest;
    }
    if (g->horizon > ep->vt.horizon) {
        ep->vt.horizon = g->horizon;
        if (ep->ops.vt_grant) {
            ep->ops.vt_grant(ep->opaque, ep->vt.horizon, g->lookahead_ns, g->quantum_ns,
                             ep->vt.slowest);
        }
    }
}
