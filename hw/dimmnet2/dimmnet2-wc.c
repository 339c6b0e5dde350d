/*
 * DIMMnet-2 Window Controller (thesis §5.2, §5.3): the Request FIFO, the
 * doorbell, and the executors that run requests.
 *
 * Requests written to a User Register go into a Request FIFO shared by both
 * processes (thesis §5.2.2).  The Window Controller takes them in order and
 * runs each as steps of the local (dimmnet2-local.c) or remote
 * (dimmnet2-tx.c) primitives, with a bounded amount of work per run, so no
 * guest request can hold the main loop.  A request that cannot proceed (a
 * remote primitive while the link cannot take a packet) stays current and
 * the controller waits, exactly as the hardware waits on its SWIF FIFO;
 * dimmnet2_wc_kick() and the port's news resume it.
 *
 * Two executors take turns: the host's requests and the Receive
 * Controller's (RVL requests from the network turned into RVS answers,
 * from its RC FIFO), so neither waits behind the other (choice #44).
 *
 * The doorbell only enqueues and, when the controller is idle, runs it at
 * once (no bottom-half round trip on the latency path).  With strict=on
 * the controller runs from a virtual-clock timer instead, a step at a time.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/log.h"
#include "qemu/main-loop.h"
#include "qemu/timer.h"
#include "exec/memory.h"
#include "dimmnet2-int.h"
#include "trace.h"

#define DIMMNET2_EXEC_MAX_REQS 64   /* requests per run */

/* ------------------------------------------------------------------ */
/* Request FIFO                                                        */
/* ------------------------------------------------------------------ */

/* "Almost full": fewer than two free entries [EMU]. */
bool dimmnet2_wc_fifo_almost_full(DN2State *s)
{
    return s->wc.fifo_count + 2 > s->params.fifo_depth;
}

static void dimmnet2_fifo_push(DN2State *s, const DN2FifoEntry *e)
{
    s->wc.fifo[(s->wc.fifo_head + s->wc.fifo_count) % s->params.fifo_depth] = *e;
    s->wc.fifo_count++;
}

static void dimmnet2_fifo_pop(DN2State *s, DN2FifoEntry *e)
{
    *e = s->wc.fifo[s->wc.fifo_head];
    s->wc.fifo_head = (s->wc.fifo_head + 1) % s->params.fifo_depth;
    s->wc.fifo_count--;
}

/* Move requests waiting in the User Registers into the FIFO. */
static void dimmnet2_fifo_refill(DN2State *s)
{
    int i;

    for (i = 0; i < DN2_NUM_WID && s->wc.fifo_count < s->params.fifo_depth; i++) {
        DN2Wid *w = &s->wid[i];
        if (w->pending) {
            dimmnet2_fifo_push(s, &w->pending_req);
            w->pending = 0;
        }
    }
}

/* What the hardware does the moment a request is written, before the
 * Window Controller executes it (the Prefetch Window flags, the window
 * status bits). */
static void dimmnet2_on_issue(DN2State *s, const DN2FifoEntry *e)
{
    struct dn2_req r;

    dimmnet2_req_of(&r, e);
    if (dn2_otype_is_local(r.otype)) {
        dimmnet2_local_on_issue(s, &r);
    } else {
        dimmnet2_tx_on_issue(s, &r);
    }
}

static void dimmnet2_wc_run(DN2State *s);

/* The Write Window a request reads (BOTF, the VS family, LHSv2), or -1. */
static int dimmnet2_req_ww(const DN2FifoEntry *e)
{
    struct dn2_req r;

    dimmnet2_req_of(&r, e);
    switch (r.otype) {
    case DN2_OP_BOTF:
        return dn2_botf_ww(e->lower);
    case DN2_OP_VS:
    case DN2_OP_VSS:
    case DN2_OP_VSI:
        return r.src == DN2_COPY_OFF ? -1 : (int)((r.src / DN2_WIN_SIZE) % DN2_NUM_WW);
    case DN2_OP_LHSV2:
        return (int)((dn2_lhsv2_ww_off(r.dst) / DN2_WIN_SIZE) % DN2_NUM_WW);
    default:
        return -1;
    }
}

void dimmnet2_wc_doorbell(DN2State *s, int wid, int rflag, uint64_t lower)
{
    DN2Wid *w = &s->wid[wid];
    DN2FifoEntry e = {
        .lower = lower,
        .upper = w->upper[rflag],
        .ex = w->ex,
        .rflag = rflag,
        .wid = wid,
        .has_ex = w->ex_flag,
        .t_land = dimmnet2_timing_land(s),
    };

    s->stat[DN2_STAT_REQUESTS]++;
    trace_dimmnet2_request(s->index, wid, rflag, lower, e.upper,
                           e.has_ex ? e.ex : 0);
    w->upper_seen = 0;
    if (s->params.strict && !w->polled && dimmnet2_wc_fifo_almost_full(s)) {
        dimmnet2_strict_report(s, DN2_SV_UNPOLLED, wid, rflag ? DN2_UR_CMD1_LOWER :
                               DN2_UR_CMD0_LOWER, "the request is taken, but the "
                               "other process could have filled the FIFO");
    }
    w->polled = 0;
    if (w->pending) {
        /* The thesis leaves this open; the new request is lost [EMU]. */
        w->req_error = 1;
        DIMMNET2_GUEST_ERROR(s, DN2_STAT_OVERRUN, overrun,
                             "WID %d wrote a request while the previous one was "
                             "still pending (Controller Status bit 0); the new "
                             "request is dropped", wid);
        dimmnet2_strict_report(s, DN2_SV_OVERRUN, wid, rflag ? DN2_UR_CMD1_LOWER :
                               DN2_UR_CMD0_LOWER, "the new request was dropped");
        return;
    }
    if (s->params.strict) {
        /* Remember the Write Window the request will read, to see it
         * rewritten before the request has run. */
        int ww = dimmnet2_req_ww(&e);
        if (ww >= 0) {
            e.ww_sum = dimmnet2_strict_ww_sum(s, wid, ww);
            e.ww_sum_valid = 1;
        }
    }
    dimmnet2_on_issue(s, &e);
    if (s->wc.fifo_count < s->params.fifo_depth) {
        dimmnet2_fifo_push(s, &e);
    } else {
        w->pending_req = e;
        w->pending = 1;
        trace_dimmnet2_fifo_wait(s->index, wid);
    }
    if (!s->params.strict && !s->wc.exec.active && !s->wc.rc_exec.active && s->wc.fifo_count == 1 &&
        !s->rx.rc_count) {
        /* An idle Window Controller takes the request at once, as the
         * hardware does: no bottom-half round trip on the latency path.
         * The run is bounded like any other; what is left goes on in the
         * bottom half. */
        dimmnet2_wc_run(s);
    } else {
        s->stat[DN2_STAT_DEFERRED]++;
        dimmnet2_wc_kick(s);
    }
}

/* Run the Window Controller soon: from its bottom half, or with strict=on
 * strict-delay-ns from now on the virtual clock (never sooner), or with
 * vtime=on at this very virtual time (a bottom half runs whenever the main
 * loop gets to it, at a virtual time the host decides). */
void dimmnet2_wc_kick(DN2State *s)
{
    if (s->wc.strict_timer) {
        timer_mod_anticipate_ns(s->wc.strict_timer, qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL) +
                                (s->params.strict ? s->params.strict_delay_ns : 0));
        return;
    }
    if (s->wc.bh) {
        qemu_bh_schedule(s->wc.bh);
    }
}

/*
 * The port had news (datagrams in, a timer): ACKs and credits may let a
 * stalled request go on, and a Receive Controller request (an RVL to
 * answer) may be waiting.  Run the Window Controller here, under the BQL
 * and outside any fabric endpoint call, so the answer leaves in the same
 * burst (and carries the ACK); with nothing to do, do nothing rather than
 * wake the main loop.  Returns whether it ran (and so flushed the port).
 */
bool dimmnet2_wc_news(DN2State *s)
{
    bool host = s->wc.exec.active ? s->wc.exec.stalled : s->wc.fifo_count != 0;
    bool rc = s->wc.rc_exec.active ? s->wc.rc_exec.stalled : s->rx.rc_count != 0;

    if (!host && !rc) {
        return false;
    }
    if (s->params.strict) {
        dimmnet2_wc_kick(s);        /* paced; the caller flushes */
        return false;
    }
    dimmnet2_wc_run(s);
    return true;
}

/* Does a request of this OTYPE write (VS family) or read (VL family,
 * remote data) the SO-DIMM?  (A copy does both.) */
static bool dimmnet2_otype_reads_sdimm(unsigned otype)
{
    return dimmnet2_is_vl(otype) ||
           (otype >= DN2_OP_RVS && otype != DN2_OP_BOTF && !dn2_otype_is_rvl(otype));
}

/* Module State (Table A.4): the Window Controller field shows the request
 * it is on (the host's when there is one, else the Receive Controller's);
 * the Receive Controller, Write Unit and Prefetch Unit fields whether they
 * are busy (encodings in dn2_abi.h). */
uint64_t dimmnet2_wc_module_state(DN2State *s)
{
    const DN2Exec *x = s->wc.exec.active ? &s->wc.exec :
                       s->wc.rc_exec.active ? &s->wc.rc_exec : NULL;
    struct dn2_module_state m = { 0 };
    struct dn2_req r;

    if (x) {
        dimmnet2_req_of(&r, &x->ent);
        m.wc = dn2_ms_wc_busy(r.otype);
    }
    if (dimmnet2_rx_holding(s)) {
        m.rc |= DN2_MS_RC_HOLDING;  /* refused a packet, none accepted since */
    }
    if (s->wc.rc_exec.active) {
        m.rc |= DN2_MS_RC_ANSWERING;
        m.pu = DN2_MS_UNIT_BUSY;    /* an answer reads */
    }
    if (s->wc.exec.active) {
        bool copy;

        dimmnet2_req_of(&r, &s->wc.exec.ent);
        copy = r.src == DN2_COPY_OFF && dimmnet2_is_vs(r.otype);
        if (dimmnet2_is_vs(r.otype)) {
            m.wu = DN2_MS_UNIT_BUSY;
        }
        if (copy || (dimmnet2_otype_reads_sdimm(r.otype) && r.dst != DN2_COPY_OFF)) {
            m.pu = DN2_MS_UNIT_BUSY;
        }
    }
    return dn2_ms_pack(&m);
}

/* ------------------------------------------------------------------ */
/* The executors                                                       */
/* ------------------------------------------------------------------ */

/* The checks before a request's first step: strict's refusals and its
 * Write Window watch.  True: refused (done). */
static bool dimmnet2_exec_first(DN2State *s, DN2Exec *x, const struct dn2_req *r)
{
    DN2FifoEntry *e = &x->ent;
    DN2Refusal why;

    trace_dimmnet2_exec(s->index, r->wid, dn2_otype_name(r->otype), r->src,
                        r->dst, r->arg, r->dtype, r->iter);
    if (!e->from_rc && dimmnet2_strict_refuse(s, r, &why)) {
        dimmnet2_refuse(s, r, why);
        return true;
    }
    if (e->ww_sum_valid) {
        int ww = dimmnet2_req_ww(e);
        if (dimmnet2_strict_ww_sum(s, r->wid, ww) != e->ww_sum) {
            g_autofree char *d = g_strdup_printf(
                "Write Window %d changed between the %s doorbell and its start",
                ww, dn2_otype_name(r->otype));
            dimmnet2_strict_report(s, DN2_SV_WW_REUSED, r->wid,
                                   DN2_WW_OFF(r->wid, ww), d);
        }
        e->ww_sum_valid = 0;
    }
    return false;
}

static DN2Step dimmnet2_exec_step(DN2State *s, DN2Exec *x, uint64_t *budget)
{
    struct dn2_req r;
    DN2Step ret;

    dimmnet2_req_of(&r, &x->ent);
    if (x->done == 0 && !x->stalled && !x->started &&
        dimmnet2_exec_first(s, x, &r)) {
        return DIMMNET2_STEP_DONE;
    }
    if (!dn2_otype_valid(r.otype) ||
        (r.otype == DN2_OP_BOTF && dn2_botf_size(x->ent.lower) == 0)) {
        /* NOP and undefined codes: ignored, wait for the next (§5.3.2);
         * "Size 0 is treated as an invalid request and dropped." */
        s->stat[DN2_STAT_IGNORED]++;
        trace_dimmnet2_ignored(s->index, r.wid, r.otype);
        return DIMMNET2_STEP_DONE;
    }
    if (dn2_otype_is_local(r.otype)) {
        return dimmnet2_local_step(s, x, &r, budget);
    }
    ret = dimmnet2_tx_step(s, x, &r, budget);
    if (ret == DIMMNET2_STEP_STALL && !x->stalled) {
        trace_dimmnet2_stall(s->index, r.wid, dn2_otype_name(r.otype));
    }
    return ret;
}

/* Give executor x its next request, from the host's Request FIFO or the
 * Receive Controller's.  False when that FIFO is empty. */
static bool dimmnet2_next_request(DN2State *s, DN2Exec *x)
{
    DN2FifoEntry e;

    if (x == &s->wc.rc_exec) {
        if (!dimmnet2_rx_rc_pop(s, &e)) {
            return false;
        }
    } else {
        dimmnet2_fifo_refill(s);
        if (!s->wc.fifo_count) {
            return false;
        }
        dimmnet2_fifo_pop(s, &e);
        dimmnet2_fifo_refill(s);
    }
    memset(x, 0, sizeof(*x));
    x->ent = e;
    x->active = 1;
    return true;
}

/*
 * An RC answer that stalls (no credits from its requester, or the link
 * down) is given rc-timeout-ms to make progress; the timer then abandons it.
 * The grace is per requester, not per answer (choice #49): a requester one
 * of whose answers was abandoned is "silent", and its next answer is
 * abandoned at its first stall, until one of its answers makes progress
 * again.  A new incarnation of any peer, or the link coming up, forgets
 * every silent requester (a restarted board that takes its old LID starts
 * with a clean slate).
 */
static bool dimmnet2_rc_silent(DN2State *s, unsigned dclid)
{
    uint64_t gen = dimmnet2_port_peer_gen(s);

    if (gen != s->wc.rc_silent_gen) {
        bitmap_zero(s->wc.rc_silent, DN2_CLID_INIT + 1);
        s->wc.rc_silent_gen = gen;
    }
    return test_bit(dclid, s->wc.rc_silent);
}

static void dimmnet2_rc_progress(DN2State *s, DN2Step ret)
{
    DN2Exec *x = &s->wc.rc_exec;
    unsigned dclid = dn2_req_dclid(x->ent.lower);

    if (ret != DIMMNET2_STEP_STALL) {
        s->wc.rc_stall_since = 0;
        clear_bit(dclid, s->wc.rc_silent);     /* it grants credits again */
        return;
    }
    if (!s->wc.rc_stall_since || x->done != s->wc.rc_stall_done) {
        s->wc.rc_stall_since = dimmnet2_now(s);
        s->wc.rc_stall_done = x->done;
        if (s->wc.rc_timer && s->params.rc_timeout_ms) {
            /* The grace is per requester, not per answer: one that let an
             * answer be abandoned and has granted nothing since loses the
             * next one at its first stall. */
            timer_mod(s->wc.rc_timer, s->wc.rc_stall_since +
                      (dimmnet2_rc_silent(s, dclid) ? 0 :
                       (int64_t)s->params.rc_timeout_ms * SCALE_MS));
        }
    }
}

/* One step of executor x; STALL also when it is idle. */
static DN2Step dimmnet2_exec_one(DN2State *s, DN2Exec *x, uint64_t *budget,
                                 int *reqs)
{
    DN2Step ret;

    if (!x->active && !dimmnet2_next_request(s, x)) {
        return DIMMNET2_STEP_STALL;     /* nothing to do */
    }
    if (!dimmnet2_timing_landed(s, &x->ent)) {
        return DIMMNET2_STEP_STALL;     /* its request word is still posted */
    }
    x->ent.t_land = 0;
    ret = dimmnet2_exec_step(s, x, budget);
    if (x == &s->wc.rc_exec) {
        dimmnet2_rc_progress(s, ret);
    }
    if (ret == DIMMNET2_STEP_STALL) {
        if (x == &s->wc.exec && !x->stalled) {
            s->stat[DN2_STAT_EXEC_STALLS]++;
        }
        x->stalled = 1;
        return ret;                     /* a kick or the port's news resumes */
    }
    x->stalled = 0;
    if (ret == DIMMNET2_STEP_DONE) {
        x->active = 0;
        (*reqs)++;
    }
    return ret;
}

/* A run of the Window Controller: the two executors take turns, a request
 * (or a budget's worth of one) at a time; one that is stalled does not hold
 * the other up.  Everything the run produced then leaves, batched. */
static void dimmnet2_wc_run(DN2State *s)
{
    uint64_t budget = DIMMNET2_EXEC_BUDGET;
    int reqs = 0;

    for (;;) {
        DN2Exec *first = s->wc.rc_turn ? &s->wc.rc_exec : &s->wc.exec;
        DN2Exec *second = s->wc.rc_turn ? &s->wc.exec : &s->wc.rc_exec;
        DN2Step a, b;

        if (reqs >= DIMMNET2_EXEC_MAX_REQS || !budget) {
            if (s->wc.exec.active || s->wc.rc_exec.active || s->wc.fifo_count ||
                s->rx.rc_count) {
                dimmnet2_wc_kick(s);    /* let the vCPUs run */
            }
            break;
        }
        a = dimmnet2_exec_one(s, first, &budget, &reqs);
        s->wc.rc_turn = !s->wc.rc_turn;
        if (s->params.strict && a != DIMMNET2_STEP_STALL) {
            dimmnet2_wc_kick(s);        /* paced: one step, then the delay */
            break;
        }
        if (!budget) {
            continue;
        }
        b = dimmnet2_exec_one(s, second, &budget, &reqs);
        if (s->params.strict && b != DIMMNET2_STEP_STALL) {
            dimmnet2_wc_kick(s);
            break;
        }
        if (a == DIMMNET2_STEP_STALL && b == DIMMNET2_STEP_STALL) {
            break;                      /* both idle or stalled */
        }
    }
    dimmnet2_port_flush(s);
}

static void dimmnet2_wc_run_cb(void *opaque)
{
    DN2State *s = opaque;

    dimmnet2_port_due_first(s);     /* deliveries due now come first */
    dimmnet2_wc_run(s);
    s->entry_done(s);
}

/* The RC answer made no progress for rc-timeout-ms: its requester stopped
 * granting credits (or went away).  Abandon it and the requests queued
 * from the same requester, count them, and go on with the others. */
static void dimmnet2_rc_timeout(void *opaque)
{
    DN2State *s = opaque;
    DN2Exec *x = &s->wc.rc_exec;
    int64_t now = dimmnet2_now(s);
    unsigned dclid, dropped;
    bool silent;

    if (!x->active || !x->stalled || !s->wc.rc_stall_since) {
        return;
    }
    dclid = dn2_req_dclid(x->ent.lower);
    silent = dimmnet2_rc_silent(s, dclid);
    if (!silent &&
        now - s->wc.rc_stall_since < (int64_t)s->params.rc_timeout_ms * SCALE_MS) {
        return;
    }
    set_bit(dclid, s->wc.rc_silent);
    dropped = 1 + dimmnet2_rx_rc_abandon(s, dclid);
    memset(x, 0, sizeof(*x));
    s->wc.rc_stall_since = 0;
    s->stat[DN2_STAT_RC_ABANDONED] += dropped - 1;
    DIMMNET2_GUEST_ERROR(s, DN2_STAT_RC_ABANDONED, rc_abandoned,
                         "abandoned %u RVL answer(s) to LID 0x%x after a grace "
                         "of %u ms (the requester grants no credits; no grace "
                         "once an answer to it was abandoned)", dropped,
                         dn2_clid_to_lid(dclid), silent ? 0 : s->params.rc_timeout_ms);
    dimmnet2_wc_kick(s);
    s->entry_done(s);
}

/* ------------------------------------------------------------------ */
/* Life cycle                                                          */
/* ------------------------------------------------------------------ */

void dimmnet2_wc_init(DN2State *s)
{
    s->wc.bh = qemu_bh_new_guarded(dimmnet2_wc_run_cb, s,
                                &DEVICE(s)->mem_reentrancy_guard);
    s->wc.rc_timer = timer_new_ns(dimmnet2_clock(s), dimmnet2_rc_timeout, s);
    if (s->params.strict || s->vt.on) {
        /* The paced Window Controller: a virtual-clock timer instead of
         * running in the doorbell or a bottom half (vtime: instead of the
         * bottom half only). */
        s->wc.strict_timer = timer_new_ns(QEMU_CLOCK_VIRTUAL, dimmnet2_wc_run_cb, s);
    }
    s->wc.copy_buf = g_malloc(DIMMNET2_COPY_CHUNK);
    s->wc.pkt_buf = g_malloc(DN2_PKT_MAX + DN2_LINE);
    dimmnet2_timing_map(s);     /* timing=thesis: the LLCM's accesses charged */
}

void dimmnet2_wc_fini(DN2State *s)
{
    dimmnet2_timing_unmap(s);
    if (s->wc.bh) {
        qemu_bh_delete(s->wc.bh);
        s->wc.bh = NULL;
    }
    if (s->wc.rc_timer) {
        timer_free(s->wc.rc_timer);
        s->wc.rc_timer = NULL;
    }
    if (s->wc.strict_timer) {
        timer_free(s->wc.strict_timer);
        s->wc.strict_timer = NULL;
    }
    g_free(s->wc.copy_buf);
    s->wc.copy_buf = NULL;
    g_free(s->wc.pkt_buf);
    s->wc.pkt_buf = NULL;
}

/* Power-on and Controller Reset: the FIFO empty, no request running. */
void dimmnet2_wc_reset(DN2State *s)
{
    memset(s->wc.fifo, 0, sizeof(s->wc.fifo));
    s->wc.fifo_head = 0;
    s->wc.fifo_count = 0;
    memset(&s->wc.exec, 0, sizeof(s->wc.exec));
    memset(&s->wc.rc_exec, 0, sizeof(s->wc.rc_exec));
    s->wc.rc_turn = 0;
    s->wc.rc_stall_since = 0;
    bitmap_zero(s->wc.rc_silent, DN2_CLID_INIT + 1);
    s->wc.rc_silent_gen = dimmnet2_port_peer_gen(s);
    if (s->wc.rc_timer) {
        timer_del(s->wc.rc_timer);
    }
    /* timing=thesis: no unit busy (the port's t_tx_free is the port's) */
    s->timing.t_wc_free = s->timing.t_sd_free = s->timing.t_rc_free = s->timing.t_status_last = 0;
    s->timing.t_link_out = s->timing.t_rx_offer = s->timing.t_rx_taken = 0;
    s->timing.rx_offered = s->timing.rx_backlog = s->timing.rx_offer_backlog = false;
    s->timing.t_data_start = s->timing.t_data_end = 0;
    dimmnet2_timing_cached_reset(s);
}
