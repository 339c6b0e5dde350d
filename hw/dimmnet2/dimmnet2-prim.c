/*
 * DIMMnet-2 Window Controller: Request FIFO, request executor, SO-DIMM
 * access and the local primitives (VL, VLS, VLI, VS, VSS, VSI and the
 * SO-DIMM to SO-DIMM copy pairing).
 *
 * Requests written to a User Register go into a Request FIFO shared by both
 * processes (thesis §5.2.2).  A bottom half plays the Window Controller: it
 * takes requests in order and executes them with a bounded amount of work
 * per run, so no guest request can hold the main loop.  A request that
 * cannot proceed (a remote primitive while the link cannot take a packet)
 * stays current and the controller waits, exactly as the hardware waits on
 * its SWIF FIFO; dn2_kick() resumes it.
 *
 * Every offset, size, stride, iteration and list entry comes from the guest
 * and is checked against the 512-byte window and the issuing process's
 * SO-DIMM area before any byte moves.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/log.h"
#include "qemu/main-loop.h"
#include "qemu/atomic.h"
#include "qemu/host-utils.h"
#include "qemu/bswap.h"
#include "exec/memory.h"
#include "dimmnet2.h"
#include "trace.h"

enum {
    DN2_STEP_DONE,      /* request finished (completed, refused or ignored) */
    DN2_STEP_MORE,      /* budget used up; continue in the next run */
    DN2_STEP_STALL,     /* waiting for the link */
};

/* ------------------------------------------------------------------ */
/* SO-DIMM                                                             */
/* ------------------------------------------------------------------ */

/*
 * Bytes of SO-DIMM each process owns: the two modules are split evenly
 * between WID 0 and WID 1, so a process owns one module's worth.  The
 * Capacity register says what is installed; we cannot give more than the
 * backing memory holds.
 */
uint64_t dn2_sdimm_area(DN2State *s)
{
    return MIN(dn2_sdimm_module_bytes(s->sdimm_cap_reg), s->sodimm_bytes / 2);
}

/*
 * Copy between a buffer and the issuing process's SO-DIMM area, through
 * the 8-byte interleave of the two modules.  The backing memory holds
 * module 0 then module 1.  The caller has checked off + len <= area.
 */
bool dn2_sdimm_rw(DN2State *s, int wid, uint64_t off, void *buf, uint64_t len,
                  bool is_write)
{
    uint64_t area = dn2_sdimm_area(s);
    uint64_t half = s->sodimm_bytes / 2;
    uint64_t g, end;
    uint8_t *p = buf;

    if (off > area || len > area - off) {
        return false;
    }
    if (!len) {
        return true;
    }
    g = (uint64_t)wid * area + off;
    end = g + len;
    while (g < end) {
        uint64_t chunk;

        if (!(g & 15) && end - g >= 16) {
            /* Fast path: whole 16-byte blocks are 8 bytes in each module
             * at the same module offset. */
            uint64_t i, blocks = (end - g) >> 4;
            uint8_t *m0 = s->sodimm_ptr + ((g >> 4) << 3);
            uint8_t *m1 = m0 + half;

            if (is_write) {
                for (i = 0; i < blocks; i++, p += 16) {
                    memcpy(m0 + 8 * i, p, 8);
                    memcpy(m1 + 8 * i, p + 8, 8);
                }
            } else {
                for (i = 0; i < blocks; i++, p += 16) {
                    memcpy(p, m0 + 8 * i, 8);
                    memcpy(p + 8, m1 + 8 * i, 8);
                }
            }
            g += blocks << 4;
            continue;
        }
        chunk = MIN(DN2_SDIMM_INTERLEAVE - (g & 7), end - g);
        uint8_t *m = s->sodimm_ptr + dn2_sdimm_module(g) * half +
                     dn2_sdimm_module_offset(g);
        if (is_write) {
            memcpy(m, p, chunk);
        } else {
            memcpy(p, m, chunk);
        }
        p += chunk;
        g += chunk;
    }
    if (is_write) {
        /* Both modules hold part of [start, end): mark that span in each. */
        uint64_t start = (uint64_t)wid * area + off;
        uint64_t lo = (start >> 4) << 3;
        uint64_t hi = (((end - 1) >> 4) << 3) + 8;
        memory_region_set_dirty(s->sodimm_mr, lo, hi - lo);
        memory_region_set_dirty(s->sodimm_mr, half + lo, hi - lo);
    }
    return true;
}

/* ------------------------------------------------------------------ */
/* Request FIFO                                                        */
/* ------------------------------------------------------------------ */

/* "Almost full": fewer than two free entries [EMU]. */
bool dn2_fifo_almost_full(DN2State *s)
{
    return s->fifo_count + 2 > s->fifo_depth;
}

static void dn2_fifo_push(DN2State *s, const DN2FifoEntry *e)
{
    s->fifo[(s->fifo_head + s->fifo_count) % s->fifo_depth] = *e;
    s->fifo_count++;
}

static void dn2_fifo_pop(DN2State *s, DN2FifoEntry *e)
{
    *e = s->fifo[s->fifo_head];
    s->fifo_head = (s->fifo_head + 1) % s->fifo_depth;
    s->fifo_count--;
}

static uint32_t dn2_vl_len(const struct dn2_req *r, uint32_t *elems);
static uint16_t dn2_vl_lines(uint32_t woff, uint32_t len);

/* Move requests waiting in the User Registers into the FIFO. */
static void dn2_fifo_refill(DN2State *s)
{
    int i;

    for (i = 0; i < DN2_NUM_WID && s->fifo_count < s->fifo_depth; i++) {
        DN2Wid *w = &s->wid[i];
        if (w->pending) {
            dn2_fifo_push(s, &w->pending_req);
            w->pending = 0;
        }
    }
}

/*
 * What the hardware does the moment a request is written, before the
 * Window Controller executes it:
 *  - a VL-family request resets its window's Prefetch Window flags and
 *    pre-sets the lines it will not touch (§4.5.5.2 steps 1-2), so a host
 *    polling for 4'b1111 never sees a previous transfer's flags;
 *  - a VS-family request clears its source window's three status bits
 *    (choice #13), so "done" always refers to the latest request.
 */
static void dn2_on_issue(DN2State *s, const DN2FifoEntry *e)
{
    DN2Wid *w = &s->wid[e->wid];
    struct dn2_req r;
    uint32_t elems, n;

    dn2_req_decode(&r, e->lower, e->upper, e->ex, e->has_ex, e->rflag, e->wid);
    switch (r.otype) {
    case DN2_OP_VL:
    case DN2_OP_VLS:
    case DN2_OP_VLI:
        if (r.dst != DN2_COPY_OFF && r.dst < DN2_WIN_AREA && s->sdimm_ready) {
            n = r.dst / DN2_WIN_SIZE;
            w->pw_flag = (w->pw_flag & ~DN2_PWF_WIN_MASK(n)) |
                ((uint16_t)(~dn2_vl_lines(r.dst % DN2_WIN_SIZE,
                                          dn2_vl_len(&r, &elems)) & 0xf)
                 << DN2_PWF_WIN_SHIFT(n));
        }
        break;
    case DN2_OP_VS:
    case DN2_OP_VSS:
    case DN2_OP_VSI:
        w->ww_status &= ~DN2_CS_WW_MASK((r.src / DN2_WIN_SIZE) % DN2_NUM_WW);
        break;
    default:
        dn2_remote_on_issue(s, &r);
        break;
    }
}

static void dn2_exec_bh(void *opaque);

/* The Write Window a request reads (BOTF, the VS family, LHSv2), or -1. */
static int dn2_req_ww(const DN2FifoEntry *e)
{
    struct dn2_req r;

    dn2_req_decode(&r, e->lower, e->upper, e->ex, e->has_ex, e->rflag, e->wid);
    switch (r.otype) {
    case DN2_OP_BOTF:
        return dn2_botf_ww(e->lower);
    case DN2_OP_VS:
    case DN2_OP_VSS:
    case DN2_OP_VSI:
        return r.src == DN2_COPY_OFF ? -1 : (int)((r.src / DN2_WIN_SIZE) % DN2_NUM_WW);
    case DN2_OP_LHSV2:
        return (int)((DN2_GET(r.dst, 21, 10) / DN2_WIN_SIZE) % DN2_NUM_WW);
    default:
        return -1;
    }
}

void dn2_doorbell(DN2State *s, int wid, int rflag, uint64_t lower)
{
    DN2Wid *w = &s->wid[wid];
    DN2FifoEntry e = {
        .lower = lower,
        .upper = w->upper[rflag],
        .ex = w->ex,
        .rflag = rflag,
        .wid = wid,
        .has_ex = w->ex_flag,
    };

    s->stat_requests++;
    trace_dimmnet2_request(s->index, wid, rflag, lower, e.upper,
                           e.has_ex ? e.ex : 0);
    w->upper_seen = 0;
    if (w->pending) {
        /* The thesis leaves this open; the new request is lost [EMU]. */
        s->stat_overrun++;
        w->req_error = 1;
        trace_dimmnet2_overrun(s->index, wid);
        qemu_log_mask(LOG_GUEST_ERROR, "dimmnet2: WID %d wrote a request while "
                      "the previous one was still pending (Controller Status "
                      "bit 0); the new request is dropped\n", wid);
        dn2_strict_report(s, DN2_SV_OVERRUN, wid, rflag ? DN2_UR_CMD1_LOWER :
                          DN2_UR_CMD0_LOWER, "the new request was dropped");
        return;
    }
    if (s->strict) {
        /* Remember the Write Window the request will read, to see it
         * rewritten before the request has run. */
        int ww = dn2_req_ww(&e);
        if (ww >= 0) {
            e.ww_sum = dn2_strict_ww_sum(s, wid, ww);
            e.ww_sum_valid = 1;
        }
    }
    dn2_on_issue(s, &e);
    if (s->fifo_count < s->fifo_depth) {
        dn2_fifo_push(s, &e);
    } else {
        w->pending_req = e;
        w->pending = 1;
        trace_dimmnet2_fifo_wait(s->index, wid);
    }
    if (!s->strict && !s->exec.active && !s->rc_exec.active && s->fifo_count == 1 &&
        !s->rc_count && !s->rx_stalled) {
        /* An idle Window Controller takes the request at once, as the
         * hardware does: no bottom-half round trip on the latency path.
         * The run is bounded like any other; what is left goes on in the
         * bottom half. */
        dn2_exec_bh(s);
    } else {
        dn2_kick(s);
    }
}

void dn2_kick(DN2State *s)
{
    if (s->strict && s->strict_timer) {
        dn2_strict_schedule(s);     /* paced: never sooner than the delay */
        return;
    }
    if (s->bh) {
        qemu_bh_schedule(s->bh);
    }
}

/*
 * The link had news (datagrams in, a timer): ACKs and credits may let a
 * stalled request go on, and a Receive Controller request (an RVL to
 * answer) may be waiting.  Run the Window Controller here, under the BQL
 * and outside any fabric endpoint call, so the answer leaves in the same
 * burst (and carries the ACK); with nothing to do, do nothing rather than
 * wake the main loop.  Returns whether it ran (and so flushed the link).
 */
bool dn2_link_news(DN2State *s)
{
    bool host = s->exec.active ? s->exec.stalled : s->fifo_count != 0;
    bool rc = s->rc_exec.active ? s->rc_exec.stalled : s->rc_count != 0;

    if (!host && !rc) {
        return false;
    }
    if (s->strict) {
        dn2_kick(s);                /* paced; the caller flushes */
        return false;
    }
    dn2_exec_bh(s);
    return true;
}

/* Module State shows the request the Window Controller is on: the host's
 * when there is one, else the Receive Controller's. */
uint64_t dn2_module_state(DN2State *s)
{
    const DN2Exec *x = s->exec.active ? &s->exec :
                       s->rc_exec.active ? &s->rc_exec : NULL;

    if (!x) {
        return 0;
    }
    return (uint64_t)(1 + (x->ent.lower & 0x1f)) << DN2_MS_WC_SHIFT;
}

/* ------------------------------------------------------------------ */
/* Helpers for the primitives                                          */
/* ------------------------------------------------------------------ */

static void dn2_refuse(DN2State *s, const struct dn2_req *r, const char *why)
{
    s->wid[r->wid].req_error = 1;
    s->stat_refused++;
    trace_dimmnet2_refused(s->index, r->wid, dn2_otype_name(r->otype), why);
    qemu_log_mask(LOG_GUEST_ERROR, "dimmnet2: WID %d %s refused: %s\n",
                  r->wid, dn2_otype_name(r->otype), why);
}

void dn2_count(DN2State *s, int wid, int family)
{
    DN2Wid *w = &s->wid[wid];

    w->prim_counter[family] = (w->prim_counter[family] + 1) & DN2_PC_MASK;
}

/* Element address for strided/list access: 32-bit offset arithmetic, as
 * the hardware's adders; a "negative" stride wraps. */
static inline uint32_t dn2_elem_addr(uint32_t base, uint32_t i, uint32_t stride)
{
    return base + i * stride;
}

static inline bool dn2_in_area(uint64_t area, uint32_t addr, uint32_t len)
{
    return (uint64_t)addr + len <= area;
}

/* Read list entry i (a 32-bit little-endian SO-DIMM offset) at list+4i. */
bool dn2_list_entry(DN2State *s, int wid, uint32_t list, uint32_t i,
                    uint32_t *out)
{
    uint8_t b[4];
    uint32_t a = list + 4 * i;

    if (!dn2_in_area(dn2_sdimm_area(s), a, 4) ||
        !dn2_sdimm_rw(s, wid, a, b, 4, false)) {
        return false;
    }
    *out = ldl_le_p(b);
    return true;
}

/* ------------------------------------------------------------------ */
/* VL family: local SO-DIMM -> Prefetch Window                          */
/* ------------------------------------------------------------------ */

/* Bytes a VL-family request puts into its window: clipped at the end of
 * the 512-byte window holding DSTOff (bytes for VL, whole elements for
 * VLS/VLI); *elems gets the element count of the strided/list forms. */
static uint32_t dn2_vl_len(const struct dn2_req *r, uint32_t *elems)
{
    uint32_t room = DN2_WIN_SIZE - r->dst % DN2_WIN_SIZE;
    uint32_t esz = dn2_dtype_bytes(r->dtype);

    if (dn2_otype_form(r->otype) == DN2_FORM_CONTIG) {
        *elems = 0;
        return MIN(r->arg, room);
    }
    *elems = MIN((uint32_t)r->iter, room / esz);
    return *elems * esz;
}

/* The 128-byte lines of a window that [woff, woff + len) touches. */
static uint16_t dn2_vl_lines(uint32_t woff, uint32_t len)
{
    uint16_t touched = 0;
    uint32_t i;

    if (len) {
        for (i = woff / DN2_PW_LINE; i <= (woff + len - 1) / DN2_PW_LINE; i++) {
            touched |= 1u << i;
        }
    }
    return touched;
}

/* strict: hand the next 128-byte line of a gathered VL to the Prefetch
 * Window and set its flag; DONE after the last. */
static int dn2_exec_vl_line(DN2State *s, const struct dn2_req *r, uint8_t *pw,
                            uint32_t woff, uint32_t len, uint64_t *budget)
{
    DN2Wid *w = &s->wid[r->wid];
    DN2Exec *x = &s->exec;
    unsigned n = r->dst / DN2_WIN_SIZE, line;
    uint64_t left = x->total & ~x->done;
    uint32_t lo, hi;

    if (left) {
        line = ctz64(left);
        lo = MAX(woff, line * DN2_PW_LINE);
        hi = MIN(woff + len, (line + 1) * DN2_PW_LINE);
        memcpy(pw + lo, s->copy_buf + lo, hi - lo);
        memory_region_set_dirty(&s->pw, r->wid * DN2_PW_WID_STRIDE + n * DN2_WIN_SIZE + lo,
                                hi - lo);
        smp_wmb();
        w->pw_flag |= 1u << (DN2_PWF_WIN_SHIFT(n) + line);
        x->done |= 1u << line;
        *budget -= MIN(*budget, (uint64_t)(hi - lo) + 64);
        if (x->total & ~x->done) {
            return DN2_STEP_MORE;
        }
    }
    dn2_count(s, r->wid, DN2_PC_VL);
    s->stat_bytes_local += len;
    trace_dimmnet2_done(s->index, r->wid, dn2_otype_name(r->otype), len);
    return DN2_STEP_DONE;
}

static int dn2_exec_vl(DN2State *s, const struct dn2_req *r, uint64_t *budget)
{
    DN2Wid *w = &s->wid[r->wid];
    int form = dn2_otype_form(r->otype);
    uint32_t esz = dn2_dtype_bytes(r->dtype);
    uint64_t area = dn2_sdimm_area(s);
    uint32_t n, woff, len, elems = 0, i;
    uint16_t touched;
    uint8_t *pw, *dstw;
    bool short_read = false;

    if (r->dst == DN2_COPY_OFF) {
        /* Source half of a SO-DIMM to SO-DIMM copy: remember the pattern;
         * the VS-family half moves the data.  VLI cannot pair. */
        if (form == DN2_FORM_LIST) {
            dn2_refuse(s, r, "VLI cannot be the source of a SO-DIMM copy");
            return DN2_STEP_DONE;
        }
        w->copy.valid = 1;
        w->copy.form = form;
        w->copy.dtype = r->dtype;
        w->copy.iter = r->iter;
        w->copy.src = r->src;
        w->copy.arg = r->arg;
        dn2_count(s, r->wid, DN2_PC_VL);
        trace_dimmnet2_done(s->index, r->wid, dn2_otype_name(r->otype), 0);
        return DN2_STEP_DONE;
    }
    if (!s->sdimm_ready) {
        dn2_refuse(s, r, "SO-DIMM not initialised");
        return DN2_STEP_DONE;
    }
    if (r->dst >= DN2_WIN_AREA) {
        dn2_refuse(s, r, "DSTOff outside the process's Prefetch Window area");
        return DN2_STEP_DONE;
    }

    n = r->dst / DN2_WIN_SIZE;
    woff = r->dst % DN2_WIN_SIZE;
    pw = s->pw_ptr + r->wid * DN2_PW_WID_STRIDE + n * DN2_WIN_SIZE;
    len = dn2_vl_len(r, &elems);
    /* The span the VL reads (strided: first to last element; a list's
     * entries are not known before they are read: not held). */
    if (form != DN2_FORM_LIST &&
        dn2_lhs_filling(s, r->wid, r->src, form == DN2_FORM_CONTIG ? len :
                        (elems ? (uint64_t)(elems - 1) * r->arg + esz : 0))) {
        if (!s->exec.stalled) {
            trace_dimmnet2_vl_held(s->index, r->wid, r->src);
            dn2_strict_report(s, DN2_SV_EARLY_LHS_VL, r->wid, DN2_UR_CMD0_LOWER,
                              "VL of an LHS overflow before Complete");
        }
        return DN2_STEP_STALL;      /* the message's last packet kicks */
    }
    if (s->strict && s->exec.started) {
        return dn2_exec_vl_line(s, r, pw, woff, len, budget);
    }
    if (len < (form == DN2_FORM_CONTIG ? r->arg : (uint32_t)r->iter * esz)) {
        trace_dimmnet2_clip(s->index, r->wid, dn2_otype_name(r->otype),
                            "window end");
    }
    touched = dn2_vl_lines(woff, len);

    /* Flag protocol (§4.5.5.2): the window's flags were reset and the
     * untouched lines pre-set at issue (dn2_on_issue); do it again in case
     * another VL into this window ran in between, then set each line once
     * it is written. */
    w->pw_flag = (w->pw_flag & ~DN2_PWF_WIN_MASK(n)) |
                 ((uint16_t)(~touched & 0xf) << DN2_PWF_WIN_SHIFT(n));

    /* strict: the data is gathered first and handed to the window a line at
     * a time, each flag set as its line arrives (dn2_exec_vl_line) */
    dstw = s->strict ? s->copy_buf : pw;
    switch (form) {
    case DN2_FORM_CONTIG: {
        uint32_t rd = 0;
        if (r->src < area) {
            rd = MIN((uint64_t)len, area - r->src);
        }
        if (rd < len) {
            short_read = true;
        }
        dn2_sdimm_rw(s, r->wid, r->src, dstw + woff, rd, false);
        break;
    }
    case DN2_FORM_STRIDE:
        for (i = 0; i < elems; i++) {
            uint32_t a = dn2_elem_addr(r->src, i, r->arg);
            if (!dn2_in_area(area, a, esz)) {
                short_read = true;
                continue;
            }
            dn2_sdimm_rw(s, r->wid, a, dstw + woff + i * esz, esz, false);
        }
        break;
    default: /* DN2_FORM_LIST */
        for (i = 0; i < elems; i++) {
            uint32_t off, a;
            if (!dn2_list_entry(s, r->wid, r->arg, i, &off)) {
                short_read = true;
                continue;
            }
            a = r->src + off;
            if (!dn2_in_area(area, a, esz)) {
                short_read = true;
                continue;
            }
            dn2_sdimm_rw(s, r->wid, a, dstw + woff + i * esz, esz, false);
        }
        break;
    }
    if (short_read) {
        /* No status bit exists for this; flag it in the extension bit. */
        w->req_error = 1;
        trace_dimmnet2_clip(s->index, r->wid, dn2_otype_name(r->otype),
                            "source past the SO-DIMM area");
    }
    if (s->strict) {
        s->exec.started = 1;
        s->exec.total = touched;            /* lines to hand over */
        s->exec.done = 0;                   /* lines handed over */
        return DN2_STEP_MORE;
    }
    memory_region_set_dirty(&s->pw, r->wid * DN2_PW_WID_STRIDE + n * DN2_WIN_SIZE
                            + woff, len);
    smp_wmb();
    w->pw_flag |= touched << DN2_PWF_WIN_SHIFT(n);
    dn2_count(s, r->wid, DN2_PC_VL);
    s->stat_bytes_local += len;
    *budget -= MIN(*budget, (uint64_t)len + 64);
    trace_dimmnet2_done(s->index, r->wid, dn2_otype_name(r->otype), len);
    return DN2_STEP_DONE;
}

/* ------------------------------------------------------------------ */
/* SO-DIMM to SO-DIMM copy (§4.6.8): the VS-family half                */
/* ------------------------------------------------------------------ */

static uint64_t dn2_pattern_bytes(int form, uint32_t arg, unsigned dtype,
                                  unsigned iter)
{
    return form == DN2_FORM_CONTIG ? arg : (uint64_t)iter * dn2_dtype_bytes(dtype);
}

static int dn2_exec_copy(DN2State *s, DN2Exec *x, const struct dn2_req *r,
                         uint64_t *budget)
{
    DN2Wid *w = &s->wid[r->wid];
    DN2CopySrc *c = &w->copy;
    const int n = (DN2_COPY_OFF / DN2_WIN_SIZE) % DN2_NUM_WW; /* WW#3 */
    int form = dn2_otype_form(r->otype);
    uint64_t area = dn2_sdimm_area(s);
    uint64_t amount;
    uint32_t i;

    if (x->done == 0) {
        w->ww_status &= ~DN2_CS_WW_MASK(n);
        if (form == DN2_FORM_LIST) {
            dn2_refuse(s, r, "VSI cannot be the destination of a SO-DIMM copy");
            return DN2_STEP_DONE;
        }
        if (!c->valid) {
            dn2_refuse(s, r, "SO-DIMM copy without a preceding VL-family half");
            return DN2_STEP_DONE;
        }
        if (!s->sdimm_ready) {
            dn2_refuse(s, r, "SO-DIMM not initialised");
            c->valid = 0;
            return DN2_STEP_DONE;
        }
        /* The data stream is as long as the shorter of the two patterns. */
        amount = MIN(dn2_pattern_bytes(c->form, c->arg, c->dtype, c->iter),
                     dn2_pattern_bytes(form, r->arg, r->dtype, r->iter));
        if (c->form == DN2_FORM_CONTIG && form == DN2_FORM_CONTIG) {
            uint64_t src_room = c->src < area ? area - c->src : 0;
            uint64_t dst_room = r->dst < area ? area - r->dst : 0;
            if (amount > src_room) {
                amount = src_room;
                w->req_error = 1;
            }
            if (amount > dst_room) {
                amount = dst_room;
                w->ww_status |= DN2_CS_WW_DST_OVF(n);
            }
        }
        x->total = amount;
        trace_dimmnet2_exec(s->index, r->wid, "COPY", c->src, r->dst,
                            (uint32_t)amount, r->dtype, r->iter);
    }

    if (c->form == DN2_FORM_CONTIG && form == DN2_FORM_CONTIG) {
        /* Stream through the internal buffer, a chunk per step. */
        while (x->done < x->total) {
            uint64_t chunk = MIN(DN2_COPY_CHUNK, x->total - x->done);
            /* The area may have shrunk since the start (a smaller SO-DIMM
             * Capacity written meanwhile): stop there rather than write a
             * stale buffer, and say so. */
            if (!dn2_sdimm_rw(s, r->wid, c->src + x->done, s->copy_buf, chunk,
                              false)) {
                w->req_error = 1;
                x->total = x->done;
                break;
            }
            if (!dn2_sdimm_rw(s, r->wid, r->dst + x->done, s->copy_buf, chunk,
                              true)) {
                w->ww_status |= DN2_CS_WW_DST_OVF(n);
                x->total = x->done;
                break;
            }
            x->done += chunk;
            *budget -= MIN(*budget, chunk);
            if (!*budget && x->done < x->total) {
                return DN2_STEP_MORE;
            }
        }
    } else {
        /* One side is strided: at most 255 x 128 bytes.  Gather the source
         * stream into the buffer, then scatter it. */
        uint32_t total = (uint32_t)MIN(x->total, DN2_COPY_CHUNK);
        uint32_t esz, got = 0;

        memset(s->copy_buf, 0, total);
        if (c->form == DN2_FORM_CONTIG) {
            uint64_t rd = c->src < area ? MIN((uint64_t)total, area - c->src) : 0;
            dn2_sdimm_rw(s, r->wid, c->src, s->copy_buf, rd, false);
            if (rd < total) {
                w->req_error = 1;
            }
        } else {
            esz = dn2_dtype_bytes(c->dtype);
            for (i = 0; got < total; i++, got += esz) {
                uint32_t a = dn2_elem_addr(c->src, i, c->arg);
                uint32_t l = MIN(esz, total - got);
                if (!dn2_in_area(area, a, l)) {
                    w->req_error = 1;
                    continue;
                }
                dn2_sdimm_rw(s, r->wid, a, s->copy_buf + got, l, false);
            }
        }
        if (form == DN2_FORM_CONTIG) {
            uint64_t wr = r->dst < area ? MIN((uint64_t)total, area - r->dst) : 0;
            dn2_sdimm_rw(s, r->wid, r->dst, s->copy_buf, wr, true);
            if (wr < total) {
                w->ww_status |= DN2_CS_WW_DST_OVF(n);
            }
        } else {
            esz = dn2_dtype_bytes(r->dtype);
            for (i = 0, got = 0; got < total; i++, got += esz) {
                uint32_t a = dn2_elem_addr(r->dst, i, r->arg);
                uint32_t l = MIN(esz, total - got);
                if (!dn2_in_area(area, a, l)) {
                    w->ww_status |= DN2_CS_WW_DST_OVF(n);
                    continue;
                }
                dn2_sdimm_rw(s, r->wid, a, s->copy_buf + got, l, true);
            }
        }
        x->done = total;
        *budget -= MIN(*budget, (uint64_t)total);
    }

    c->valid = 0;
    w->ww_status |= DN2_CS_WW_DONE(n);
    dn2_count(s, r->wid, DN2_PC_VS);
    s->stat_bytes_local += x->total;
    trace_dimmnet2_done(s->index, r->wid, "COPY", x->total);
    return DN2_STEP_DONE;
}

/* ------------------------------------------------------------------ */
/* VS family: Write Window -> local SO-DIMM                             */
/* ------------------------------------------------------------------ */

static int dn2_exec_vs(DN2State *s, DN2Exec *x, const struct dn2_req *r,
                       uint64_t *budget)
{
    DN2Wid *w = &s->wid[r->wid];
    int form = dn2_otype_form(r->otype);
    uint32_t esz = dn2_dtype_bytes(r->dtype);
    uint64_t area = dn2_sdimm_area(s);
    uint32_t n, woff, room, len = 0, elems, i, written = 0;
    const uint8_t *ww;

    if (r->src == DN2_COPY_OFF) {
        return dn2_exec_copy(s, x, r, budget);
    }

    /* Per-window status is keyed by the source window, SRCOff[10:9]; a new
     * request from a window clears that window's three bits [EMU]. */
    n = (r->src / DN2_WIN_SIZE) % DN2_NUM_WW;
    w->ww_status &= ~DN2_CS_WW_MASK(n);
    if (!s->sdimm_ready) {
        dn2_refuse(s, r, "SO-DIMM not initialised");
        return DN2_STEP_DONE;
    }
    if (r->src >= DN2_WIN_AREA) {
        w->ww_status |= DN2_CS_WW_SRC_OVF(n);
        dn2_refuse(s, r, "SRCOff outside the process's Write Window area");
        return DN2_STEP_DONE;
    }
    woff = r->src % DN2_WIN_SIZE;
    room = DN2_WIN_SIZE - woff;
    ww = s->ww_ptr + r->wid * DN2_WW_WID_STRIDE + n * DN2_WIN_SIZE + woff;

    switch (form) {
    case DN2_FORM_CONTIG:
        len = r->arg;
        if (len > room) {
            len = room;
            w->ww_status |= DN2_CS_WW_SRC_OVF(n);
        }
        written = r->dst < area ? MIN((uint64_t)len, area - r->dst) : 0;
        if (written < len) {
            w->ww_status |= DN2_CS_WW_DST_OVF(n);
        }
        dn2_sdimm_rw(s, r->wid, r->dst, (void *)ww, written, true);
        break;
    case DN2_FORM_STRIDE:
    case DN2_FORM_LIST:
        elems = r->iter;
        if ((uint64_t)elems * esz > room) {
            elems = room / esz;
            w->ww_status |= DN2_CS_WW_SRC_OVF(n);
        }
        len = elems * esz;
        for (i = 0; i < elems; i++) {
            uint32_t a;
            if (form == DN2_FORM_STRIDE) {
                a = dn2_elem_addr(r->dst, i, r->arg);
            } else {
                uint32_t off;
                if (!dn2_list_entry(s, r->wid, r->arg, i, &off)) {
                    w->req_error = 1;
                    continue;
                }
                a = r->dst + off;
            }
            if (!dn2_in_area(area, a, esz)) {
                w->ww_status |= DN2_CS_WW_DST_OVF(n);
                continue;
            }
            dn2_sdimm_rw(s, r->wid, a, (void *)(ww + i * esz), esz, true);
            written += esz;
        }
        break;
    default:
        g_assert_not_reached();
    }
    if (w->ww_status & (DN2_CS_WW_SRC_OVF(n) | DN2_CS_WW_DST_OVF(n))) {
        trace_dimmnet2_clip(s->index, r->wid, dn2_otype_name(r->otype),
                            (w->ww_status & DN2_CS_WW_SRC_OVF(n)) ?
                            "window end" : "SO-DIMM area end");
    }
    w->ww_status |= DN2_CS_WW_DONE(n);
    dn2_count(s, r->wid, DN2_PC_VS);
    s->stat_bytes_local += written;
    *budget -= MIN(*budget, (uint64_t)len + 64);
    trace_dimmnet2_done(s->index, r->wid, dn2_otype_name(r->otype), written);
    return DN2_STEP_DONE;
}

/* ------------------------------------------------------------------ */
/* The executor                                                        */
/* ------------------------------------------------------------------ */

static int dn2_exec_step(DN2State *s, DN2Exec *x, uint64_t *budget)
{
    DN2FifoEntry *e = &x->ent;
    struct dn2_req r;

    dn2_req_decode(&r, e->lower, e->upper, e->ex, e->has_ex, e->rflag, e->wid);
    if (x->done == 0 && !x->stalled && !x->started) {
        const char *why;

        trace_dimmnet2_exec(s->index, r.wid, dn2_otype_name(r.otype), r.src,
                            r.dst, r.arg, r.dtype, r.iter);
        if (!e->from_rc && dn2_strict_refuse(s, &r, &why)) {
            dn2_refuse(s, &r, why);
            return DN2_STEP_DONE;
        }
        if (e->ww_sum_valid) {
            int ww = dn2_req_ww(e);
            if (dn2_strict_ww_sum(s, r.wid, ww) != e->ww_sum) {
                g_autofree char *d = g_strdup_printf(
                    "Write Window %d changed between the %s doorbell and its start",
                    ww, dn2_otype_name(r.otype));
                dn2_strict_report(s, DN2_SV_WW_REUSED, r.wid,
                                  DN2_WW_BASE + r.wid * DN2_WW_WID_STRIDE + ww * DN2_WIN_SIZE,
                                  d);
            }
            e->ww_sum_valid = 0;
        }
    }
    switch (r.otype) {
    case DN2_OP_VL:
    case DN2_OP_VLS:
    case DN2_OP_VLI:
        return dn2_exec_vl(s, &r, budget);
    case DN2_OP_VS:
    case DN2_OP_VSS:
    case DN2_OP_VSI:
        return dn2_exec_vs(s, x, &r, budget);
    case DN2_OP_BOTF:
        if (dn2_botf_size(e->lower) == 0) {
            /* "Size 0 is treated as an invalid request and dropped." */
            s->stat_ignored++;
            trace_dimmnet2_ignored(s->index, r.wid, r.otype);
            return DN2_STEP_DONE;
        }
        /* fall through */
    case DN2_OP_RVL:
    case DN2_OP_RVLS:
    case DN2_OP_RVLI:
    case DN2_OP_RVS:
    case DN2_OP_RVSS:
    case DN2_OP_RVSI:
    case DN2_OP_IPUSH:
    case DN2_OP_LHSV1:
    case DN2_OP_LHSV2: {
        int ret = dn2_exec_remote(s, x, &r, budget);
        if (ret == DN2_STEP_STALL && !x->stalled) {
            trace_dimmnet2_stall(s->index, r.wid, dn2_otype_name(r.otype));
        }
        return ret;
    }
    default:
        /* NOP and undefined codes: ignored, wait for the next (§5.3.2). */
        s->stat_ignored++;
        trace_dimmnet2_ignored(s->index, r.wid, r.otype);
        return DN2_STEP_DONE;
    }
}

#define DN2_EXEC_MAX_REQS 64

/* Give executor x its next request, from the host's Request FIFO or the
 * Receive Controller's.  False when that FIFO is empty. */
static bool dn2_next_request(DN2State *s, DN2Exec *x)
{
    if (x == &s->rc_exec) {
        if (!s->rc_count) {
            return false;
        }
        memset(x, 0, sizeof(*x));
        x->ent = s->rc_fifo[s->rc_head];
        s->rc_head = (s->rc_head + 1) % DN2_RC_FIFO;
        s->rc_count--;
    } else {
        dn2_fifo_refill(s);
        if (!s->fifo_count) {
            return false;
        }
        memset(x, 0, sizeof(*x));
        dn2_fifo_pop(s, &x->ent);
        dn2_fifo_refill(s);
    }
    x->active = 1;
    return true;
}

/*
 * An RC answer that stalls (no credits from its requester, or the link
 * down) is given rc-timeout-ms to make progress; the timer then abandons it.
 */
static void dn2_rc_progress(DN2State *s, int ret)
{
    DN2Exec *x = &s->rc_exec;

    if (ret != DN2_STEP_STALL) {
        s->rc_stall_since = 0;
        return;
    }
    if (!s->rc_stall_since || x->done != s->rc_stall_done) {
        s->rc_stall_since = qemu_clock_get_ns(QEMU_CLOCK_REALTIME);
        s->rc_stall_done = x->done;
        if (s->rc_timer && s->rc_timeout_ms) {
            timer_mod(s->rc_timer, s->rc_stall_since +
                      (int64_t)s->rc_timeout_ms * SCALE_MS);
        }
    }
}

/* One run of executor x: false when it could not go on (idle or stalled)
 * or the run's budget is spent. */
static int dn2_exec_one(DN2State *s, DN2Exec *x, uint64_t *budget, int *reqs)
{
    int ret;

    if (!x->active && !dn2_next_request(s, x)) {
        return DN2_STEP_STALL;          /* nothing to do */
    }
    ret = dn2_exec_step(s, x, budget);
    if (x == &s->rc_exec) {
        dn2_rc_progress(s, ret);
    }
    if (ret == DN2_STEP_STALL) {
        x->stalled = 1;
        return ret;                     /* dn2_kick() resumes */
    }
    x->stalled = 0;
    if (ret == DN2_STEP_DONE) {
        x->active = 0;
        (*reqs)++;
    }
    return ret;
}

void dn2_exec_run(DN2State *s)
{
    dn2_exec_bh(s);
}

static void dn2_exec_bh(void *opaque)
{
    DN2State *s = opaque;
    uint64_t budget = DN2_EXEC_BUDGET;
    int reqs = 0;

    if (s->rx_stalled) {
        /* The host may have freed what the Receive Controller waits for. */
        s->rx_stalled = 0;
        dn2_link_resume(s);
    }
    /* The two executors take turns, a request (or a budget's worth of one)
     * at a time; one that is stalled does not hold the other up. */
    for (;;) {
        DN2Exec *first = s->rc_turn ? &s->rc_exec : &s->exec;
        DN2Exec *second = s->rc_turn ? &s->exec : &s->rc_exec;
        int a, b;

        if (reqs >= DN2_EXEC_MAX_REQS || !budget) {
            if (s->exec.active || s->rc_exec.active || s->fifo_count ||
                s->rc_count) {
                qemu_bh_schedule(s->bh);    /* let the vCPUs run */
            }
            break;
        }
        a = dn2_exec_one(s, first, &budget, &reqs);
        s->rc_turn = !s->rc_turn;
        if (s->strict && a != DN2_STEP_STALL) {
            /* paced: one step, then strict-delay-ns until the next */
            dn2_strict_schedule(s);
            break;
        }
        if (!budget) {
            continue;
        }
        b = dn2_exec_one(s, second, &budget, &reqs);
        if (s->strict && b != DN2_STEP_STALL) {
            dn2_strict_schedule(s);
            break;
        }
        if (a == DN2_STEP_STALL && b == DN2_STEP_STALL) {
            break;                          /* both idle or stalled */
        }
    }
    /* Everything this run produced leaves now, batched. */
    dn2_link_flush(s);
}

/* The RC answer made no progress for rc-timeout-ms: its requester stopped
 * granting credits (or went away).  Abandon it and the requests queued
 * from the same requester, count them, and go on with the others. */
static void dn2_rc_timeout(void *opaque)
{
    DN2State *s = opaque;
    DN2Exec *x = &s->rc_exec;
    int64_t now = qemu_clock_get_ns(QEMU_CLOCK_REALTIME);
    uint32_t i, kept = 0, dropped = 1;
    unsigned dclid;
    DN2FifoEntry keep[DN2_RC_FIFO];

    if (!x->active || !x->stalled || !s->rc_stall_since ||
        now - s->rc_stall_since < (int64_t)s->rc_timeout_ms * SCALE_MS) {
        return;
    }
    dclid = dn2_req_dclid(x->ent.lower);
    for (i = 0; i < s->rc_count; i++) {
        DN2FifoEntry *e = &s->rc_fifo[(s->rc_head + i) % DN2_RC_FIFO];
        if (dn2_req_dclid(e->lower) == dclid) {
            dropped++;
        } else {
            keep[kept++] = *e;
        }
    }
    memset(s->rc_fifo, 0, sizeof(s->rc_fifo));
    memcpy(s->rc_fifo, keep, kept * sizeof(keep[0]));
    s->rc_head = 0;
    s->rc_count = kept;
    memset(x, 0, sizeof(*x));
    s->rc_stall_since = 0;
    s->stat_rc_abandoned += dropped;
    trace_dimmnet2_rc_abandoned(s->index, dn2_clid_to_lid(dclid), dropped);
    qemu_log_mask(LOG_GUEST_ERROR, "dimmnet2: board %d abandoned %u RVL "
                  "answer(s) to LID 0x%x: no progress for %u ms (the requester "
                  "grants no credits)\n", s->index, dropped,
                  dn2_clid_to_lid(dclid), s->rc_timeout_ms);
    dn2_kick(s);
}

void dn2_prim_init(DN2State *s)
{
    s->bh = qemu_bh_new_guarded(dn2_exec_bh, s,
                                &DEVICE(s)->mem_reentrancy_guard);
    s->rc_timer = timer_new_ns(QEMU_CLOCK_REALTIME, dn2_rc_timeout, s);
    s->copy_buf = g_malloc(DN2_COPY_CHUNK);
    s->pkt_buf = g_malloc(DN2_PKT_MAX + DN2_LINE);
}

void dn2_prim_fini(DN2State *s)
{
    if (s->bh) {
        qemu_bh_delete(s->bh);
        s->bh = NULL;
    }
    if (s->rc_timer) {
        timer_free(s->rc_timer);
        s->rc_timer = NULL;
    }
    g_free(s->copy_buf);
    s->copy_buf = NULL;
    g_free(s->pkt_buf);
    s->pkt_buf = NULL;
}

void dn2_prim_reset(DN2State *s)
{
    memset(s->fifo, 0, sizeof(s->fifo));
    s->fifo_head = 0;
    s->fifo_count = 0;
    memset(&s->exec, 0, sizeof(s->exec));
    memset(&s->rc_exec, 0, sizeof(s->rc_exec));
    s->rc_stall_since = 0;
    if (s->rc_timer) {
        timer_del(s->rc_timer);
    }
    dn2_rx_reset(s);
    dn2_link_reset(s);
}
