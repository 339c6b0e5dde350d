/*
 * DIMMnet-2 local primitives (thesis §4.6.3, §4.6.4, §4.6.8): the VL family
 * (SO-DIMM to Prefetch Window), the VS family (Write Window to SO-DIMM) and
 * the SO-DIMM to SO-DIMM copy, a VL-family half paired with a VS-family
 * half.
 *
 * Every offset, size, stride, iteration and list entry comes from the guest
 * and is checked against the 512-byte window and the issuing process's
 * SO-DIMM area before any byte moves; what does not fit is clipped and
 * flagged in the Controller Status bits the thesis defines.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/atomic.h"
#include "qemu/host-utils.h"
#include "exec/memory.h"
#include "dimmnet2-int.h"
#include "trace.h"

/* ------------------------------------------------------------------ */
/* VL family: local SO-DIMM -> Prefetch Window                          */
/* ------------------------------------------------------------------ */

/* Bytes a VL-family request puts into its window: clipped at the end of
 * the 512-byte window holding DSTOff (bytes for VL, whole elements for
 * VLS/VLI); *elems gets the element count of the strided/list forms. */
static uint32_t dimmnet2_vl_len(const struct dn2_req *r, uint32_t *elems)
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
static uint16_t dimmnet2_vl_lines(uint32_t woff, uint32_t len)
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
static DN2Step dimmnet2_exec_vl_line(DN2State *s, const struct dn2_req *r, uint8_t *pw,
                            uint32_t woff, uint32_t len, uint64_t *budget)
{
    DN2Wid *w = &s->wid[r->wid];
    DN2Exec *x = &s->wc.exec;
    unsigned n = r->dst / DN2_WIN_SIZE, line;
    uint64_t left = x->total & ~x->done;
    uint32_t lo, hi;

    if (left) {
        line = ctz64(left);
        lo = MAX(woff, line * DN2_PW_LINE);
        hi = MIN(woff + len, (line + 1) * DN2_PW_LINE);
        memcpy(pw + lo, s->wc.copy_buf + lo, hi - lo);
        memory_region_set_dirty(&s->win.pw, r->wid * DN2_PW_WID_STRIDE + n * DN2_WIN_SIZE + lo,
                                hi - lo);
        dimmnet2_timing_cached_written(s, false, r->wid * DN2_PW_WID_STRIDE +
                                       n * DN2_WIN_SIZE + lo, hi - lo);
        smp_wmb();
        w->pw_flag |= 1u << (DN2_PWF_WIN_SHIFT(n) + line);
        x->done |= 1u << line;
        *budget -= MIN(*budget, (uint64_t)(hi - lo) + 64);
        if (x->total & ~x->done) {
            return DIMMNET2_STEP_MORE;
        }
    }
    dimmnet2_prim_count(s, r->wid, DN2_PC_VL);
    s->stat[DN2_STAT_BYTES_LOCAL] += len;
    trace_dimmnet2_done(s->index, r->wid, dn2_otype_name(r->otype), len);
    return DIMMNET2_STEP_DONE;
}

static DN2Step dimmnet2_exec_vl(DN2State *s, const struct dn2_req *r, uint64_t *budget)
{
    DN2Wid *w = &s->wid[r->wid];
    int form = dn2_otype_form(r->otype);
    uint32_t esz = dn2_dtype_bytes(r->dtype);
    uint32_t n, woff, len, elems = 0;
    uint16_t touched;
    uint8_t *pw, *dstw;
    DN2Pattern pat;

    if (r->dst == DN2_COPY_OFF) {
        /* Source half of a SO-DIMM to SO-DIMM copy: remember the pattern;
         * the VS-family half moves the data.  VLI cannot pair. */
        if (form == DN2_FORM_LIST) {
            dimmnet2_refuse(s, r, DN2_REFUSE_VLI_COPY);
            return DIMMNET2_STEP_DONE;
        }
        w->copy.valid = 1;
        w->copy.form = form;
        w->copy.dtype = r->dtype;
        w->copy.iter = r->iter;
        w->copy.src = r->src;
        w->copy.arg = r->arg;
        dimmnet2_prim_count(s, r->wid, DN2_PC_VL);
        trace_dimmnet2_done(s->index, r->wid, dn2_otype_name(r->otype), 0);
        return DIMMNET2_STEP_DONE;
    }
    if (!s->sys.sdimm_ready) {
        dimmnet2_refuse(s, r, DN2_REFUSE_SDIMM_NOT_READY);
        return DIMMNET2_STEP_DONE;
    }
    if (r->dst >= DN2_WIN_AREA) {
        dimmnet2_refuse(s, r, DN2_REFUSE_DST_OUTSIDE_PW);
        return DIMMNET2_STEP_DONE;
    }

    n = r->dst / DN2_WIN_SIZE;
    woff = r->dst % DN2_WIN_SIZE;
    pw = s->win.pw_ptr + r->wid * DN2_PW_WID_STRIDE + n * DN2_WIN_SIZE;
    len = dimmnet2_vl_len(r, &elems);
    /* The span the VL reads (strided: first to last element; a list's
     * entries are not known before they are read: not held). */
    if (form != DN2_FORM_LIST &&
        dimmnet2_rx_lhs_filling(s, r->wid, r->src, form == DN2_FORM_CONTIG ? len :
                        (elems ? (uint64_t)(elems - 1) * r->arg + esz : 0))) {
        if (!s->wc.exec.stalled) {
            trace_dimmnet2_vl_held(s->index, r->wid, r->src);
            dimmnet2_strict_report(s, DN2_SV_EARLY_LHS_VL, r->wid, DN2_UR_CMD0_LOWER,
                              "VL of an LHS overflow before Complete");
        }
        return DIMMNET2_STEP_STALL;      /* the message's last packet kicks */
    }
    if (s->params.strict && s->wc.exec.started == 1) {
        return dimmnet2_exec_vl_line(s, r, pw, woff, len, budget);
    }
    /* timing=thesis: the Prefetch Unit reads the data from the SO-DIMMs
     * (after what they are busy with) before the window gets it */
    if (s->timing.timing_on && s->wc.exec.started != 2) {
        dimmnet2_timing_vl_read(s, len);
        s->wc.exec.started = 2;
    }
    if (!dimmnet2_timing_wc_ready(s)) {
        return DIMMNET2_STEP_STALL;
    }
    if (len < (form == DN2_FORM_CONTIG ? r->arg : (uint32_t)r->iter * esz)) {
        trace_dimmnet2_clip(s->index, r->wid, dn2_otype_name(r->otype),
                            "window end");
    }
    touched = dimmnet2_vl_lines(woff, len);

    /* Flag protocol (§4.5.5.2): the window's flags were reset and the
     * untouched lines pre-set at issue (dn2_on_issue); do it again in case
     * another VL into this window ran in between, then set each line once
     * it is written. */
    w->pw_flag = (w->pw_flag & ~DN2_PWF_WIN_MASK(n)) |
                 ((uint16_t)(~touched & 0xf) << DN2_PWF_WIN_SHIFT(n));

    /* strict: the data is gathered first and handed to the window a line at
     * a time, each flag set as its line arrives (dimmnet2_exec_vl_line) */
    dstw = s->params.strict ? s->wc.copy_buf : pw;
    dimmnet2_pattern_init(&pat, form, r->src, r->arg, r->dtype);
    if (dimmnet2_pattern_read(s, r->wid, &pat, 0, dstw + woff, len, NULL)) {
        /* No status bit exists for this; flag it in the extension bit. */
        w->req_error = 1;
        trace_dimmnet2_clip(s->index, r->wid, dn2_otype_name(r->otype),
                            "source past the SO-DIMM area");
    }
    if (s->params.strict) {
        s->wc.exec.started = 1;
        s->wc.exec.total = touched;            /* lines to hand over */
        s->wc.exec.done = 0;                   /* lines handed over */
        return DIMMNET2_STEP_MORE;
    }
    memory_region_set_dirty(&s->win.pw, r->wid * DN2_PW_WID_STRIDE + n * DN2_WIN_SIZE
                            + woff, len);
    dimmnet2_timing_cached_written(s, false, r->wid * DN2_PW_WID_STRIDE +
                                   n * DN2_WIN_SIZE + woff, len);
    smp_wmb();
    w->pw_flag |= touched << DN2_PWF_WIN_SHIFT(n);
    dimmnet2_prim_count(s, r->wid, DN2_PC_VL);
    s->stat[DN2_STAT_BYTES_LOCAL] += len;
    *budget -= MIN(*budget, (uint64_t)len + 64);
    trace_dimmnet2_done(s->index, r->wid, dn2_otype_name(r->otype), len);
    return DIMMNET2_STEP_DONE;
}

/* ------------------------------------------------------------------ */
/* SO-DIMM to SO-DIMM copy (§4.6.8): the VS-family half                */
/* ------------------------------------------------------------------ */

static uint64_t dimmnet2_pattern_bytes(int form, uint32_t arg, unsigned dtype,
                                  unsigned iter)
{
    return form == DN2_FORM_CONTIG ? arg : (uint64_t)iter * dn2_dtype_bytes(dtype);
}

static DN2Step dimmnet2_exec_copy(DN2State *s, DN2Exec *x, const struct dn2_req *r,
                         uint64_t *budget)
{
    DN2Wid *w = &s->wid[r->wid];
    DN2CopySrc *c = &w->copy;
    const int n = (DN2_COPY_OFF / DN2_WIN_SIZE) % DN2_NUM_WW; /* WW#3 */
    int form = dn2_otype_form(r->otype);
    uint64_t area = dimmnet2_sdimm_area(s);
    uint64_t amount;

    if (x->done == 0) {
        w->ww_status &= ~DN2_CS_WW_MASK(n);
        if (form == DN2_FORM_LIST) {
            dimmnet2_refuse(s, r, DN2_REFUSE_VSI_COPY);
            return DIMMNET2_STEP_DONE;
        }
        if (!c->valid) {
            dimmnet2_refuse(s, r, DN2_REFUSE_COPY_NO_SOURCE);
            return DIMMNET2_STEP_DONE;
        }
        if (!s->sys.sdimm_ready) {
            dimmnet2_refuse(s, r, DN2_REFUSE_SDIMM_NOT_READY);
            c->valid = 0;
            return DIMMNET2_STEP_DONE;
        }
        /* The data stream is as long as the shorter of the two patterns. */
        amount = MIN(dimmnet2_pattern_bytes(c->form, c->arg, c->dtype, c->iter),
                     dimmnet2_pattern_bytes(form, r->arg, r->dtype, r->iter));
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
            uint64_t chunk = MIN(DIMMNET2_COPY_CHUNK, x->total - x->done);
            /* The area may have shrunk since the start (a smaller SO-DIMM
             * Capacity written meanwhile): stop there rather than write a
             * stale buffer, and say so. */
            if (!dimmnet2_sdimm_rw(s, r->wid, c->src + x->done, s->wc.copy_buf, chunk,
                              false)) {
                w->req_error = 1;
                x->total = x->done;
                break;
            }
            if (!dimmnet2_sdimm_rw(s, r->wid, r->dst + x->done, s->wc.copy_buf, chunk,
                              true)) {
                w->ww_status |= DN2_CS_WW_DST_OVF(n);
                x->total = x->done;
                break;
            }
            x->done += chunk;
            *budget -= MIN(*budget, chunk);
            if (!*budget && x->done < x->total) {
                return DIMMNET2_STEP_MORE;
            }
        }
    } else {
        /* One side is strided: at most 255 x 128 bytes.  Gather the source
         * stream into the buffer, then scatter it. */
        uint32_t total = (uint32_t)MIN(x->total, DIMMNET2_COPY_CHUNK);
        DN2Pattern from, to;

        memset(s->wc.copy_buf, 0, total);
        dimmnet2_pattern_init(&from, c->form, c->src, c->arg, c->dtype);
        dimmnet2_pattern_init(&to, form, r->dst, r->arg, r->dtype);
        if (dimmnet2_pattern_read(s, r->wid, &from, 0, s->wc.copy_buf, total, NULL)) {
            w->req_error = 1;
        }
        if (dimmnet2_pattern_write(s, r->wid, &to, 0, s->wc.copy_buf, total, NULL)) {
            w->ww_status |= DN2_CS_WW_DST_OVF(n);
        }
        x->done = total;
        *budget -= MIN(*budget, (uint64_t)total);
    }

    c->valid = 0;
    w->ww_status |= DN2_CS_WW_DONE(n);
    dimmnet2_prim_count(s, r->wid, DN2_PC_VS);
    s->stat[DN2_STAT_BYTES_LOCAL] += x->total;
    trace_dimmnet2_done(s->index, r->wid, "COPY", x->total);
    return DIMMNET2_STEP_DONE;
}

/* ------------------------------------------------------------------ */
/* VS family: Write Window -> local SO-DIMM                             */
/* ------------------------------------------------------------------ */

static DN2Step dimmnet2_exec_vs(DN2State *s, DN2Exec *x, const struct dn2_req *r,
                       uint64_t *budget)
{
    DN2Wid *w = &s->wid[r->wid];
    int form = dn2_otype_form(r->otype);
    uint32_t esz = dn2_dtype_bytes(r->dtype);
    uint32_t n, woff, room, len, elems;
    uint64_t written;
    unsigned bad;
    const uint8_t *ww;
    DN2Pattern pat;

    if (r->src == DN2_COPY_OFF) {
        return dimmnet2_exec_copy(s, x, r, budget);
    }

    /* Per-window status is keyed by the source window, SRCOff[10:9]; a new
     * request from a window clears that window's three bits [EMU]. */
    n = (r->src / DN2_WIN_SIZE) % DN2_NUM_WW;
    w->ww_status &= ~DN2_CS_WW_MASK(n);
    if (!s->sys.sdimm_ready) {
        dimmnet2_refuse(s, r, DN2_REFUSE_SDIMM_NOT_READY);
        return DIMMNET2_STEP_DONE;
    }
    if (r->src >= DN2_WIN_AREA) {
        w->ww_status |= DN2_CS_WW_SRC_OVF(n);
        dimmnet2_refuse(s, r, DN2_REFUSE_SRC_OUTSIDE_WW);
        return DIMMNET2_STEP_DONE;
    }
    woff = r->src % DN2_WIN_SIZE;
    room = DN2_WIN_SIZE - woff;
    ww = s->win.ww_ptr + r->wid * DN2_WW_WID_STRIDE + n * DN2_WIN_SIZE + woff;

    if (form == DN2_FORM_CONTIG) {
        len = r->arg;
        if (len > room) {
            len = room;
            w->ww_status |= DN2_CS_WW_SRC_OVF(n);
        }
    } else {
        elems = r->iter;
        if ((uint64_t)elems * esz > room) {
            elems = room / esz;
            w->ww_status |= DN2_CS_WW_SRC_OVF(n);
        }
        len = elems * esz;
    }
    dimmnet2_pattern_init(&pat, form, r->dst, r->arg, r->dtype);
    bad = dimmnet2_pattern_write(s, r->wid, &pat, 0, ww, len, &written);
    if (bad & DIMMNET2_PAT_LIST_BAD) {
        w->req_error = 1;
    }
    if (bad & DIMMNET2_PAT_OUTSIDE) {
        w->ww_status |= DN2_CS_WW_DST_OVF(n);
    }
    if (w->ww_status & (DN2_CS_WW_SRC_OVF(n) | DN2_CS_WW_DST_OVF(n))) {
        trace_dimmnet2_clip(s->index, r->wid, dn2_otype_name(r->otype),
                            (w->ww_status & DN2_CS_WW_SRC_OVF(n)) ?
                            "window end" : "SO-DIMM area end");
    }
    w->ww_status |= DN2_CS_WW_DONE(n);
    dimmnet2_prim_count(s, r->wid, DN2_PC_VS);
    s->stat[DN2_STAT_BYTES_LOCAL] += written;
    *budget -= MIN(*budget, (uint64_t)len + 64);
    trace_dimmnet2_done(s->index, r->wid, dn2_otype_name(r->otype), written);
    return DIMMNET2_STEP_DONE;
}


/* ------------------------------------------------------------------ */
/* Issue and execution                                                 */
/* ------------------------------------------------------------------ */

/*
 * What the hardware does the moment a local request is written, before the
 * Window Controller executes it:
 *  - a VL-family request resets its window's Prefetch Window flags and
 *    pre-sets the lines it will not touch (§4.5.5.2 steps 1-2), so a host
 *    polling for 4'b1111 never sees a previous transfer's flags;
 *  - a VS-family request clears its source window's three status bits
 *    (choice #13), so "done" always refers to the latest request.
 */
void dimmnet2_local_on_issue(DN2State *s, const struct dn2_req *r)
{
    DN2Wid *w = &s->wid[r->wid];
    uint32_t elems, n;

    if (dimmnet2_is_vl(r->otype)) {
        if (r->dst != DN2_COPY_OFF && r->dst < DN2_WIN_AREA && s->sys.sdimm_ready) {
            n = r->dst / DN2_WIN_SIZE;
            w->pw_flag = (w->pw_flag & ~DN2_PWF_WIN_MASK(n)) |
                ((uint16_t)(~dimmnet2_vl_lines(r->dst % DN2_WIN_SIZE,
                                               dimmnet2_vl_len(r, &elems)) & 0xf)
                 << DN2_PWF_WIN_SHIFT(n));
        }
    } else if (dimmnet2_is_vs(r->otype)) {
        w->ww_status &= ~DN2_CS_WW_MASK((r->src / DN2_WIN_SIZE) % DN2_NUM_WW);
    }
}

/* One step of a local request (a VL- or VS-family OTYPE). */
DN2Step dimmnet2_local_step(DN2State *s, DN2Exec *x, const struct dn2_req *r,
                            uint64_t *budget)
{
    if (dimmnet2_is_vl(r->otype)) {
        return dimmnet2_exec_vl(s, r, budget);
    }
    return dimmnet2_exec_vs(s, x, r, budget);
}
