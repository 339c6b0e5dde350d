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
 * An idle board's promise (earliest > now) is lowered when a packet below
 * it arrives: that report goes at once, and no ACK leaves until the switch
 * answered it, so the packet's sender reports only after the switch has
 * the lower promise (vt_lowered()).
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


/* The recorded report goes out (again). */
static void vt_send(struct dn2f_ep *ep, uint64_t t)
{
    if (!ep->vt.sent || !ep->vt.s_have || ep->vt.s_rseq != ep->vt.rseq) {
        ep->vt.s_have = true;
        ep->vt.s_answered = false;
        ep->vt.s_rseq = ep->vt.rseq;
        ep->vt.s_now = ep->vt.now;
        ep->vt.s_earliest = ep->vt.earliest;
        if (ep->vt.earliest > ep->vt.sw_emax) {
            ep->vt.sw_emax = ep->vt.earliest;
        }
    }
    ep->vt.sent = true;
    ep->vt.urgent = false;
    ep_send_ctrl(ep, DN2F_T_VT_REPORT, 0, 0);
    ep->st.vt_reports_tx++;
    ep->vt.retry_due = t + ep->cfg.vt_retry_ns;
}


/* The newest report that went out, again (an ACK hold waits for its answer
 * while a newer report is held). */
static void vt_resend_last(struct dn2f_ep *ep, uint64_t t)
{
    ep_send_ctrl(ep, DN2F_T_VT_REPORT, 0, 0);
    ep->st.vt_reports_tx++;
    ep->vt.retry_due = t + ep->cfg.vt_retry_ns;
}


/* An ACK hold waits for the answer to the newest report that went out. */
static bool vt_hold_waits_sent(const struct dn2f_ep *ep)
{
    return ep->vt.hold && ep->vt.s_have && !ep->vt.s_answered;
}


void ep_vt_pump(struct dn2f_ep *ep)
{
    uint64_t t;

    if (!vt_active(ep)) {
        return;
    }
    t = now(ep);
    if (!ep->vt.sent) {
        if (!ep->vt.urgent && dn2f_ep_unacked(ep)) {
            if (vt_hold_waits_sent(ep) && t >= ep->vt.retry_due) {
                vt_resend_last(ep, t);
            }
            if (!ep->vt.hold && t >= ep->vt.probe_due) {
                vt_probe(ep);   /* (no ACK datagram leaves during a hold) */
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
    uint64_t d = NO_DEADLINE;

    if (!vt_active(ep)) {
        return NO_DEADLINE;
    }
    if (!ep->vt.sent) {
        if (ep->vt.urgent || !dn2f_ep_unacked(ep)) {
            return now(ep);
        }
        if (!ep->vt.hold) {
            d = ep->vt.probe_due;
        }
        if (vt_hold_waits_sent(ep) && ep->vt.retry_due < d) {
            d = ep->vt.retry_due;
        }
        return d;
    }
    return vt_waiting(ep) ? ep->vt.retry_due : NO_DEADLINE;
}


/* A grant answered what the hold waited for: the switch has a promise at or
 * below the lowered earliest, and the ACKs owed go out now. */
static void vt_hold_end(struct dn2f_ep *ep)
{
    struct peer *p;

    ep->vt.hold = false;
    ep->st.vt_ack_hold_ns += now(ep) - ep->vt.hold_since;
    for (p = ep->plist; p; p = p->next) {
        if (p->ack_pending) {
            ep_send_ack(ep, p, false);
        }
    }
}


/* A lowering report (the same now, a lower earliest: a packet arrived that
 * wakes the board before its promise), recorded as the newest report.
 * It may go before our own packets are acknowledged when its earliest is
 * at or below the earliest of the last report that went out: every packet
 * sent before that report was acknowledged, every packet sent after it has
 * a vtime >= D(that earliest) >= D(this one), so the report's promise
 * covers them (a report that raised earliest over that one would not: it
 * stays held like any other).  While the switch may still hold a promise
 * above the new earliest (sw_emax), no ACK leaves this endpoint until a
 * grant answers a report at or below it: the board whose packet woke us
 * waits for that ACK before it reports, so the switch cannot use its new
 * report with our stale promise. */
static void vt_lowered(struct dn2f_ep *ep)
{
    uint32_t want;

    ep->st.vt_lowering_reports++;
    ep->vt.urgent = ep->vt.s_have && ep->vt.earliest <= ep->vt.s_earliest;
    if (ep->vt.sw_emax <= ep->vt.earliest) {
        return;                 /* the switch has nothing above it */
    }
    /* urgent: this report goes now; else the last one that went out is at
     * or below (sw_emax > earliest needs one sent, and s_earliest < earliest) */
    want = ep->vt.urgent ? ep->vt.rseq : ep->vt.s_rseq;
    if (!ep->vt.hold) {
        ep->vt.hold = true;
        ep->vt.hold_since = now(ep);
        ep->vt.hold_rseq = want;
        ep->st.vt_ack_holds++;
    } else if (dn2f_seqdiff(want, ep->vt.hold_rseq) > 0) {
        ep->vt.hold_rseq = want;
    }
}


int dn2f_ep_vt_report(struct dn2f_ep *ep, uint64_t vnow, uint64_t earliest)
{
    bool lowering;

    if (!ep->cfg.vtime || earliest < vnow) {
        return -EINVAL;
    }
    if (ep->vt.have && ep->vt.now == vnow && ep->vt.earliest == earliest) {
        return 0;               /* the same report: it is on its way already */
    }
    lowering = ep->vt.have && ep->vt.now == vnow && earliest < ep->vt.earliest;
    ep->vt.have = true;
    ep->vt.sent = false;
    ep->vt.answered = false;
    ep->vt.urgent = false;
    ep->vt.rseq++;
    ep->vt.now = vnow;
    ep->vt.earliest = earliest;
    ep->vt.probe_due = now(ep) + ep->cfg.vt_retry_ns;
    if (lowering) {
        vt_lowered(ep);
    }
    if (vt_active(ep) && !ep->vt.urgent && dn2f_ep_unacked(ep)) {
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
    if (ep->vt.s_have && dn2f_seqdiff(g->rseq, ep->vt.s_rseq) >= 0) {
        /* the switch holds the newest report that went out */
        ep->vt.s_answered = true;
        ep->vt.sw_emax = ep->vt.s_earliest;
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
    if (ep->vt.hold && dn2f_seqdiff(g->rseq, ep->vt.hold_rseq) >= 0) {
        vt_hold_end(ep);
    }
}
