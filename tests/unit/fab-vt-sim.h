/* SPDX-License-Identifier: MIT */
/*
 * A virtual-time board model for the fabric's unit tests (fab-vt-sim.c),
 * a sim_model above the simulated network of fab-sim.h; the tests that run
 * it are test-fabric-vt.c.
 *
 * Each board runs a deterministic program in virtual time: it starts
 * VT_TOKENS tokens at fixed virtual times; each delivered token (vtime v,
 * hop h) is logged and, while h < VT_HOPS, sent on at clock v to the next
 * board chosen from its contents, with vtime v + L + a delay from its
 * contents.  The board processes its events in (vtime, source LID, vseq)
 * order, only below its horizon, and reports when it has to wait: its
 * clock, and as earliest its clock (g_vt_idle 0: a board whose vCPU runs)
 * or its next event, a token to start or the first queued delivery
 * (g_vt_idle 1: an idle board's promise, as the device makes it).  A
 * packet that arrives below the promise makes it send a lowering report
 * (the same now, earliest = the packet's vtime) at once.  Optionally a last
 * timer event at g_vt_end.  The logs must be the same whatever the network
 * does, and no packet may arrive below its receiver's clock.
 */
#ifndef FAB_VT_SIM_H
#define FAB_VT_SIM_H

#include "fab-sim.h"

#define VT_BOARDS_MAX 4
#define VT_TOKENS 3
#define VT_HOPS 16
#define VT_L 1000
#define VT_LOG_MAX 512

struct vt_ev { uint64_t vtime; uint16_t slid; uint32_t vseq; uint32_t hop, id; };

struct vt_board {
    bool on;
    uint64_t vnow;
    uint32_t vseq;
    unsigned started;                   /* tokens started */
    struct vt_ev q[256];                /* delivered, not processed: sorted */
    unsigned nq;
    struct vt_ev out[64];               /* to send (the endpoint said -EAGAIN) */
    uint16_t out_dst[64];
    unsigned nout;
    uint32_t last_vseq[4096];           /* per source: increasing */
    bool seen[4096];
    struct vt_ev log[VT_LOG_MAX];
    unsigned nlog;
    bool error;
    char err[160];
    uint64_t grants_cb;
    bool r_have;                        /* the last report: (r_now, r_e) */
    uint64_t r_now, r_e;
    unsigned lowerings;
    bool ended;                         /* the g_vt_end event ran */
};

extern unsigned g_vt_tokens, g_vt_hops;
extern struct vt_board g_vtb[MAX_NODES];
extern unsigned g_vt_total;
bool vt_ev_less(const struct vt_ev *a, const struct vt_ev *b);
void vt_queue_send(struct node *nd, uint16_t dst, uint64_t vtime, uint32_t hop, uint32_t id);
void vt_flush_out(struct node *nd);
void vt_board_report(struct node *nd, uint64_t vnow, uint64_t earliest);
extern const struct sim_model vt_model;
bool cond_vt_done(void);
void vt_program(unsigned tokens, uint64_t base, uint64_t step, unsigned hops,
                uint64_t end, bool idle);
void vt_program_default(void);
void vt_setup(unsigned n, uint64_t seed, double faults, int route, uint64_t quantum);
void vt_report_hook(int from, int to, const uint8_t *buf, size_t len, uint64_t *extra);
extern void (*g_vt_run_hook)(int from, int to, const uint8_t *buf, size_t len, uint64_t *extra);
extern struct vt_ev g_vt_log_a[MAX_NODES][VT_LOG_MAX], g_vt_log_b[MAX_NODES][VT_LOG_MAX];
extern unsigned g_vt_bad_reports, g_vt_first_reports, g_vt_resent, g_vt_early_lowering;
extern unsigned g_vt_new_reports[MAX_NODES];
void vt_hook_reset(void);

#endif
