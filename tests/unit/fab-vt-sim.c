/* SPDX-License-Identifier: MIT */
/*
 * The virtual-time board model of the fabric's unit tests: see
 * fab-vt-sim.h.
 */
#define _GNU_SOURCE 1
#include "fab-test.h"
#include "fab-vt-sim.h"


/* the program (vt_program() sets it; vt_clear() does not touch it) */
unsigned g_vt_tokens = VT_TOKENS, g_vt_hops = VT_HOPS;
static uint64_t g_vt_tok_base, g_vt_tok_step = 7000;
static uint64_t g_vt_end;               /* a last timer event (0 = none) */
static bool g_vt_idle;                  /* idle promises (earliest = next event) */
struct vt_board g_vtb[MAX_NODES];
static unsigned g_vt_n;                 /* boards 1..g_vt_n */
unsigned g_vt_total;             /* deliveries logged, all boards */
static uint64_t g_vt_quantum;
static void vt_fail(struct vt_board *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void vt_fail(struct vt_board *b, const char *fmt, ...)
{
    va_list ap;
    if (b->error) {
        return;
    }
    b->error = true;
    va_start(ap, fmt);
    vsnprintf(b->err, sizeof(b->err), fmt, ap);
    va_end(ap);
}
static uint64_t vt_ceil(uint64_t t)
{
    return g_vt_quantum > 1 ? (t + g_vt_quantum - 1) / g_vt_quantum * g_vt_quantum : t;
}
bool vt_ev_less(const struct vt_ev *a, const struct vt_ev *b)
{
    if (a->vtime != b->vtime) {
        return a->vtime < b->vtime;
    }
    if (a->slid != b->slid) {
        return a->slid < b->slid;
    }
    return a->vseq < b->vseq;
}
static int vt_deliver_vt(void *o, uint16_t slid, const uint8_t *pkt, size_t len,
                         uint64_t vtime, uint32_t vseq)
{
    struct node *nd = o;
    struct vt_board *b = &g_vtb[nd->idx];
    struct vt_ev e;
    uint64_t pv;
    uint32_t ps;
    unsigned i;

    if (len < 40) {
        vt_fail(b, "short packet");
        return -EINVAL;
    }
    memcpy(&pv, pkt + 16, 8);
    memcpy(&ps, pkt + 24, 4);
    if (pv != vtime || ps != vseq) {
        vt_fail(b, "vtime/vseq %llu/%u, the packet says %llu/%u", (unsigned long long)vtime,
                vseq, (unsigned long long)pv, ps);
    }
    if (b->seen[slid] && (int32_t)(vseq - b->last_vseq[slid]) <= 0) {
        vt_fail(b, "from 0x%x vseq %u after %u: not in order", slid, vseq, b->last_vseq[slid]);
    }
    b->seen[slid] = true;
    b->last_vseq[slid] = vseq;
    if (vtime < b->vnow) {
        vt_fail(b, "packet from 0x%x at vtime %llu arrived at clock %llu: causality", slid,
                (unsigned long long)vtime, (unsigned long long)b->vnow);
    }
    if (b->r_have && vtime < b->r_e && vtime >= b->r_now) {
        /* it wakes us before our promise: lower it, at once */
        b->r_e = vtime;
        b->lowerings++;
        if (dn2f_ep_vt_report(nd->ep, b->r_now, vtime)) {
            vt_fail(b, "lowering report refused");
        }
    }
    if (b->nq == sizeof(b->q) / sizeof(b->q[0])) {
        return -EBUSY;
    }
    e.vtime = vtime;
    e.slid = slid;
    e.vseq = vseq;
    memcpy(&e.hop, pkt + 28, 4);
    memcpy(&e.id, pkt + 32, 4);
    for (i = b->nq; i > 0 && vt_ev_less(&e, &b->q[i - 1]); i--) {
        b->q[i] = b->q[i - 1];
    }
    b->q[i] = e;
    b->nq++;
    return 0;
}
static int vt_deliver_plain(void *o, uint16_t slid, const uint8_t *pkt, size_t len)
{
    struct node *nd = o;
    (void)slid; (void)pkt; (void)len;
    vt_fail(&g_vtb[nd->idx], "a packet without virtual time");
    return -EINVAL;
}
static void vt_grant_cb(void *o, uint64_t horizon, uint32_t l, uint32_t q, uint64_t slowest)
{
    struct node *nd = o;
    (void)horizon; (void)slowest;
    g_vtb[nd->idx].grants_cb++;
    if (l != VT_L || q != g_vt_quantum) {
        vt_fail(&g_vtb[nd->idx], "grant says L %u Q %u", l, q);
    }
}
static const struct dn2f_ep_ops vt_ep_ops = {
    .now_ns = s_now, .send_datagram = s_send, .deliver = vt_deliver_plain, .link_state = s_link,
    .deliver_vt = vt_deliver_vt, .vt_grant = vt_grant_cb,
};
void vt_queue_send(struct node *nd, uint16_t dst, uint64_t vtime, uint32_t hop, uint32_t id)
{
    struct vt_board *b = &g_vtb[nd->idx];
    struct vt_ev e = { .vtime = vtime, .vseq = b->vseq++, .hop = hop, .id = id };
    if (b->nout == 64) {
        vt_fail(b, "send queue full");
        return;
    }
    b->out[b->nout] = e;
    b->out_dst[b->nout++] = dst;
}
void vt_flush_out(struct node *nd)
{
    struct vt_board *b = &g_vtb[nd->idx];
    uint16_t me = dn2f_ep_lid(nd->ep);
    unsigned i;

    while (b->nout) {
        uint8_t pkt[40];
        struct vt_ev *e = &b->out[0];
        int rc;
        fill_pkt(pkt, sizeof(pkt), b->out_dst[0], me, 0, e->vseq);
        memcpy(pkt + 16, &e->vtime, 8);
        memcpy(pkt + 24, &e->vseq, 4);
        memcpy(pkt + 28, &e->hop, 4);
        memcpy(pkt + 32, &e->id, 4);
        rc = dn2f_ep_send_vt(nd->ep, b->out_dst[0], pkt, sizeof(pkt), e->vtime, e->vseq);
        if (rc == -EAGAIN) {
            break;
        }
        if (rc) {
            vt_fail(b, "send_vt: %d", rc);
        }
        for (i = 1; i < b->nout; i++) {
            b->out[i - 1] = b->out[i];
            b->out_dst[i - 1] = b->out_dst[i];
        }
        b->nout--;
    }
    dn2f_ep_flush(nd->ep);
}

/* Board k's boards are at nodes 1..g_vt_n with LID = node index (lid hint). */
static uint64_t vt_token_time(unsigned idx, unsigned t)
{
    return g_vt_tok_base + g_vt_tok_step * t + 137ULL * idx;
}

/* A report as the board makes it (remembered for lowering). */
void vt_board_report(struct node *nd, uint64_t vnow, uint64_t earliest)
{
    struct vt_board *b = &g_vtb[nd->idx];
    b->r_have = true;
    b->r_now = vnow;
    b->r_e = earliest;
    if (dn2f_ep_vt_report(nd->ep, vnow, earliest)) {
        vt_fail(b, "report (%llu, %llu) refused", (unsigned long long)vnow,
                (unsigned long long)earliest);
    }
}
static void vt_pump(struct node *nd)
{
    struct vt_board *b = &g_vtb[nd->idx];

    for (;;) {
        uint64_t g, next = DN2F_VT_INFINITY, tt = DN2F_VT_INFINITY;
        vt_flush_out(nd);
        if (b->nout) {
            return;             /* no report while packets wait to go out */
        }
        g = dn2f_ep_vt_horizon(nd->ep);
        if (b->started < g_vt_tokens) {
            tt = vt_token_time((unsigned)nd->idx, b->started);
        } else if (g_vt_end && !b->ended) {
            tt = g_vt_end;
        }
        next = tt;
        if (b->nq && b->q[0].vtime < next) {
            next = b->q[0].vtime;
        }
        if (next < g) {
            b->vnow = next;
            if (next == tt && b->started >= g_vt_tokens && (!b->nq || tt < b->q[0].vtime)) {
                b->ended = true;        /* the last timer event */
            } else if (next == tt && (!b->nq || tt < b->q[0].vtime)) {
                uint32_t id = (uint32_t)(nd->idx * 100 + b->started);
                unsigned to = 1 + (unsigned)(nd->idx + b->started) % g_vt_n;
                if (to == (unsigned)nd->idx) {
                    to = 1 + to % g_vt_n;
                }
                b->started++;
                vt_queue_send(nd, (uint16_t)to, vt_ceil(b->vnow + VT_L), 0, id);
            } else {
                struct vt_ev e = b->q[0];
                unsigned i;
                for (i = 1; i < b->nq; i++) {
                    b->q[i - 1] = b->q[i];
                }
                b->nq--;
                if (b->nlog < VT_LOG_MAX) {
                    b->log[b->nlog++] = e;
                }
                g_vt_total++;
                if (e.hop + 1 < g_vt_hops) {
                    uint32_t h = e.id * 2654435761u ^ e.hop * 40503u;
                    unsigned to = 1 + h % g_vt_n;
                    if (to == (unsigned)nd->idx) {
                        to = 1 + to % g_vt_n;
                    }
                    vt_queue_send(nd, (uint16_t)to, vt_ceil(b->vnow + VT_L + (h >> 8) % 3000),
                                  e.hop + 1, e.id);
                }
            }
            continue;
        }
        if (g > b->vnow && g != DN2F_VT_INFINITY) {
            b->vnow = g;        /* the clock runs to the horizon */
        }
        /* earliest = now (a board whose vCPU runs), or the next event (an
         * idle board: a packet that arrives below it lowers it) */
        vt_board_report(nd, b->vnow, g_vt_idle && next > b->vnow ? next : b->vnow);
        return;
    }
}
static bool vt_on(int idx)
{
    return idx >= 0 && idx < MAX_NODES && g_vtb[idx].on;
}
static void vt_clear(void)
{
    memset(g_vtb, 0, sizeof(g_vtb));
    g_vt_total = 0;
}
static int vt_model_deliver(struct node *nd, uint16_t slid, const uint8_t *pkt, size_t len)
{
    return vt_deliver_plain(nd, slid, pkt, len);
}
const struct sim_model vt_model = {
    .on = vt_on, .deliver = vt_model_deliver, .pump = vt_pump, .clear = vt_clear,
};
bool cond_vt_done(void)
{
    unsigned i;
    for (i = 1; i <= g_vt_n; i++) {
        if (g_vtb[i].error) {
            return true;
        }
    }
    if (g_vt_total != g_vt_n * g_vt_tokens * g_vt_hops) {
        return false;
    }
    for (i = 1; i <= g_vt_n && g_vt_end; i++) {
        if (!g_vtb[i].ended) {
            return false;
        }
    }
    return true;
}

/* The program: tokens per board from base every step, hops, a last timer
 * event, idle promises; vt_program_default() is the one the tests began with. */
void vt_program(unsigned tokens, uint64_t base, uint64_t step, unsigned hops,
                       uint64_t end, bool idle)
{
    g_vt_tokens = tokens;
    g_vt_tok_base = base;
    g_vt_tok_step = step;
    g_vt_hops = hops;
    g_vt_end = end;
    g_vt_idle = idle;
}
void vt_program_default(void)
{
    vt_program(VT_TOKENS, 0, 7000, VT_HOPS, 0, false);
}

/* The switch in virtual-time mode as node 0, boards 1..n with LID i. */
void vt_setup(unsigned n, uint64_t seed, double faults, int route, uint64_t quantum)
{
    struct dn2f_sw_config c;
    struct node *nd = &sim.nodes[0];
    unsigned i;

    sim_reset(seed, faults, faults, faults);
    dn2f_sw_config_default(&c);
    c.route_mode = route;
    c.seed = seed;
    c.vt = true;
    c.vt_boards = n;
    c.vt_lookahead_ns = VT_L;
    c.vt_quantum_ns = (uint32_t)quantum;
    nd->used = nd->alive = true;
    nd->idx = 0;
    mkaddr(&nd->addr, 0);
    nd->sw = dn2f_sw_new(&c, &sw_ops, nd);
    sim.sw_node = 0;
    g_vt_n = n;
    g_vt_quantum = quantum;
    for (i = 1; i <= n; i++) {
        struct dn2f_ep_config ec = ep_cfg((int)i);
        struct node *b = &sim.nodes[i];
        ec.vtime = true;
        ec.lid_hint = (uint16_t)i;
        ec.ack_delay_ns = 50000;        /* vtime must override it */
        b->used = b->alive = true;
        b->idx = (int)i;
        mkaddr(&b->addr, (int)i);
        b->ep = dn2f_ep_new(&ec, &vt_ep_ops, b);
        g_vtb[i].on = true;
    }
}
void vt_report_hook(int from, int to, const uint8_t *buf, size_t len, uint64_t *extra);
void (*g_vt_run_hook)(int from, int to, const uint8_t *buf, size_t len, uint64_t *extra);
struct vt_ev g_vt_log_a[MAX_NODES][VT_LOG_MAX], g_vt_log_b[MAX_NODES][VT_LOG_MAX];

/* Every REPORT leaves only when nothing this board sent is unacknowledged
 * (its first transmission; re-sends repeat what was true then), under 10 %
 * drop / dup / reorder; reports are re-sent until granted.  A lowering
 * report may leave with packets unacknowledged when its earliest is at or
 * below the earliest of the board's previous report (its promise covers
 * them). */
unsigned g_vt_bad_reports, g_vt_first_reports, g_vt_resent, g_vt_early_lowering;
static uint32_t g_vt_last_rseq[MAX_NODES];
static uint64_t g_vt_last_e[MAX_NODES];
unsigned g_vt_new_reports[MAX_NODES];
void vt_report_hook(int from, int to, const uint8_t *buf, size_t len, uint64_t *extra)
{
    struct dn2f_msg m;
    (void)to; (void)extra;
    if (len > 5 && buf[5] == DN2F_T_VT_REPORT && dn2f_decode(buf, len, &m) == 0) {
        if (m.u.vt_report.rseq != g_vt_last_rseq[from]) {
            g_vt_last_rseq[from] = m.u.vt_report.rseq;
            g_vt_first_reports++;
            g_vt_new_reports[from]++;
            if (dn2f_ep_unacked(sim.nodes[from].ep)) {
                if (g_vt_new_reports[from] > 1 && m.u.vt_report.earliest <= g_vt_last_e[from]) {
                    g_vt_early_lowering++;
                } else {
                    g_vt_bad_reports++;
                }
            }
            g_vt_last_e[from] = m.u.vt_report.earliest;
        } else {
            g_vt_resent++;
        }
    }
}
void vt_hook_reset(void)
{
    g_vt_bad_reports = g_vt_first_reports = g_vt_resent = g_vt_early_lowering = 0;
    memset(g_vt_last_rseq, 0, sizeof(g_vt_last_rseq));
    memset(g_vt_last_e, 0, sizeof(g_vt_last_e));
    memset(g_vt_new_reports, 0, sizeof(g_vt_new_reports));
}
