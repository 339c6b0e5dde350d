/* SPDX-License-Identifier: MIT */
/*
 * dn2fab switch core, lock-step virtual time: the boards' VT_REPORTs in,
 * the grants computed and sent (docs/fabric.md "Virtual time").
 *
 * The sync set is every live port.  With E_i = the earliest of board i's
 * newest report (0 before its first), D(t) = ceil_Q(t + L):
 *   S_i = min(E_i, min_{k != i} D(E_k))   the earliest i could send, a
 *                                         packet from k possibly waking it
 *   G_j = min_{i != j} D(S_i)             nothing can reach j before that
 * computed in O(N) per report from the two smallest values (dn2f_vt_grants).
 * Grants are monotone per board (max() with the one sent before), 0 for
 * everyone until --vt-boards boards are up (joined, and each one's
 * KEEPALIVE names the current routes generation: every board can reach
 * every other), infinite for a board alone.
 * Every new REPORT is answered with the current grant (a duplicate too: its
 * answer may have been lost; an older rseq is ignored), and a board that
 * waits (its last report's now >= its grant) gets a GRANT whenever its
 * grant rises.  A board that leaves is taken out of the set.
 * See dn2fab-sw-int.h for the other files.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1
#endif
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dn2fab-sw-int.h"

/* --------------------------------------------------------------- grants */
static void send_grant(struct dn2f_sw *sw, struct swport *p)
{
    uint8_t buf[128];
    struct dn2f_wbuf w;
    struct dn2f_vt_grant g = {
        .rseq = p->vt.rseq,
        .horizon = p->vt.grant,
        .lookahead_ns = sw->cfg.vt_lookahead_ns,
        .quantum_ns = sw->cfg.vt_quantum_ns,
        .slowest = sw->vt.slowest,
    };

    dn2f_wbuf_init(&w, buf, sizeof(buf));
    dn2f_put_hdr(&w, DN2F_T_VT_GRANT, 0, 0, p->lid, sw->epoch, p->epoch);
    dn2f_put_vt_grant(&w, &g);
    sw_send_ctrl_buf(sw, &p->addr, p->lid, buf, sw_finish(sw, &w));
    sw->vt.grants++;
}


static bool waiting(const struct swport *p)
{
    return p->vt.have && p->vt.now >= p->vt.grant;
}


void sw_vt_update(struct dn2f_sw *sw, struct swport *reporter)
{
    unsigned i, n = 0;

    if (!sw->cfg.vt) {
        return;
    }
    for (i = 1; i < DN2_CLID_MCAST_FIRST; i++) {
        struct swport *p = sw->ports[i];
        if (p && p->state == PORT_ACTIVE) {
            sw->vt_ports[n] = p;
            sw->vt_e[n] = p->vt.have ? p->vt.earliest : 0;
            n++;
        }
    }
    sw->vt.boards = n;
    sw->vt.slowest = n ? DN2F_VT_INFINITY : 0;
    sw->vt.slowest_lid = 0;
    for (i = 0; i < n; i++) {
        if (sw->vt_e[i] < sw->vt.slowest || !sw->vt.slowest_lid) {
            sw->vt.slowest = sw->vt_e[i];
            sw->vt.slowest_lid = sw->vt_ports[i]->lid;
        }
    }
    if (!sw->vt.started && n >= (sw->cfg.vt_boards ? sw->cfg.vt_boards : 1) && !sw->dirty) {
        /* up = joined and holding the current routing table (its KEEPALIVE
         * says so): no board may send to one its table does not have yet */
        bool all = true;
        for (i = 0; i < n; i++) {
            all &= sw->vt_ports[i]->vt.gen == sw->gen;
        }
        if (all) {
            sw->vt.started = true;
            sw_log(sw, "vt: %u boards up, virtual time starts", n);
        }
    }
    if (sw->vt.started) {
        dn2f_vt_grants(sw->vt_e, n, sw->cfg.vt_lookahead_ns, sw->cfg.vt_quantum_ns, sw->vt_g);
    } else {
        memset(sw->vt_g, 0, (size_t)n * sizeof(*sw->vt_g));
    }
    sw->vt.waiting = 0;
    for (i = 0; i < n; i++) {
        struct swport *p = sw->vt_ports[i];
        bool was_waiting = waiting(p), rose = sw->vt_g[i] > p->vt.grant;
        if (rose) {
            p->vt.grant = sw->vt_g[i];
        }
        if (p == reporter || (rose && was_waiting)) {
            send_grant(sw, p);
        }
        sw->vt.waiting += waiting(p) ? 1 : 0;
    }
}


void sw_vt_report(struct dn2f_sw *sw, struct swport *p, const struct dn2f_msg *m)
{
    const struct dn2f_vt_report *r = &m->u.vt_report;
    uint64_t t = now(sw);

    if (!sw->cfg.vt) {
        sw->sum.bad++;          /* not in virtual-time mode */
        return;
    }
    p->last_seen = t;
    if (p->vt.have && r->rseq == p->vt.rseq) {
        sw->vt.dup_reports++;
        send_grant(sw, p);      /* its answer may have been lost */
        return;
    }
    if (p->vt.have && dn2f_seqdiff(r->rseq, p->vt.rseq) < 0) {
        sw->vt.stale_reports++;
        return;
    }
    p->vt.have = true;
    p->vt.rseq = r->rseq;
    p->vt.now = r->now;
    p->vt.earliest = r->earliest;
    p->vt.last_rx = t;
    p->vt.warned = 0;
    sw->vt.reports++;
    sw_vt_update(sw, p);
}


void sw_vt_port_joined(struct dn2f_sw *sw, struct swport *p)
{
    memset(&p->vt, 0, sizeof(p->vt));
    p->vt.gen = UINT32_MAX;
    p->vt.last_rx = now(sw);
}


void sw_vt_port_gone(struct dn2f_sw *sw, struct swport *p)
{
    char a[80];

    if (!sw->cfg.vt) {
        return;
    }
    sw_log(sw, "vt: LID 0x%04x guid %llu (%s) left the sync set at %llu ns", p->lid,
           (unsigned long long)p->guid, dn2f_addr_str(&p->addr, a, sizeof(a)),
           (unsigned long long)(p->vt.have ? p->vt.now : 0));
    memset(&p->vt, 0, sizeof(p->vt));
    p->vt.gen = UINT32_MAX;
    sw_vt_update(sw, NULL);
}


/* A board silent for vt_stall_ns while another board waits: named once per
 * stall period (it holds the cluster back: its guest hangs, or its host
 * starves it). */
void sw_vt_housekeep(struct dn2f_sw *sw, uint64_t t)
{
    unsigned i;
    char a[80];

    if (!sw->cfg.vt || !sw->cfg.vt_stall_ns || !sw->vt.started || !sw->vt.waiting) {
        return;
    }
    for (i = 1; i < DN2_CLID_MCAST_FIRST; i++) {
        struct swport *p = sw->ports[i];
        if (!p || p->state != PORT_ACTIVE || waiting(p) ||
            t - p->vt.last_rx < sw->cfg.vt_stall_ns ||
            (p->vt.warned && t - p->vt.warned < sw->cfg.vt_stall_ns)) {
            continue;
        }
        p->vt.warned = t;
        sw_log(sw, "vt: warning: LID 0x%04x guid %llu (%s) has not reported for %.1f s "
               "(virtual time %llu ns) while %u board%s wait%s", p->lid,
               (unsigned long long)p->guid, dn2f_addr_str(&p->addr, a, sizeof(a)),
               (double)(t - p->vt.last_rx) / 1e9,
               (unsigned long long)(p->vt.have ? p->vt.now : 0), sw->vt.waiting,
               sw->vt.waiting == 1 ? "" : "s", sw->vt.waiting == 1 ? "s" : "");
    }
}


/* ------------------------------------------------------------- queries */
void dn2f_sw_vt_stats(const struct dn2f_sw *sw, struct dn2f_sw_vt_stats *s)
{
    *s = sw->vt;
}


bool dn2f_sw_vt_port(struct dn2f_sw *sw, uint16_t lid, uint64_t *vnow, uint64_t *earliest,
                     uint64_t *grant)
{
    struct swport *p = sw_live_port(sw, lid);

    if (!p) {
        return false;
    }
    *vnow = p->vt.now;
    *earliest = p->vt.earliest;
    *grant = p->vt.grant;
    return p->vt.have;
}
