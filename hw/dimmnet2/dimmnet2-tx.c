/*
 * DIMMnet-2 Window Controller, network side: BOTF, the RVS and RVL
 * families, IPUSH, LHSv1 and LHSv2 (thesis §4.6, §5.3, §7).
 *
 * A remote primitive becomes one or more DIMMnet-2 packets (header lines +
 * data, at most MTU bytes each) handed to the port (dimmnet2-port.c).  When
 * the port cannot take the next packet (link down, no credits from the
 * receiver), the step stalls and the Window Controller waits; the port's
 * news resumes it when room returns.  Progress is kept in the executor so a
 * long transfer resumes exactly where it stopped.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/log.h"
#include "qemu/bswap.h"
#include "exec/memory.h"
#include "dimmnet2-int.h"
#include "trace.h"

/* The sending process's local data: a contiguous run, a strided or a list
 * pattern in its SO-DIMM area (Command Ex), optionally preceded by bytes
 * from its Write Window (LHSv2). */
typedef struct DN2Pat {
    DN2Pattern pat;             /* in the SO-DIMM */
    uint64_t len;               /* bytes the pattern yields */
    uint32_t ww_off;            /* LHSv2: Write Window part */
    uint32_t ww_len;
} DN2Pat;

static void dimmnet2_pat_init(DN2State *s, const struct dn2_req *r, DN2Pat *p,
                              uint64_t want)
{
    memset(p, 0, sizeof(*p));
    if (r->has_ex && r->ex_otype) {
        dimmnet2_pattern_init(&p->pat, dn2_otype_form(r->ex_otype), r->src,
                              r->ex_arg, r->ex_dtype);
        p->len = p->pat.form == DN2_FORM_CONTIG ? r->ex_arg :
                 (uint64_t)r->ex_iter * p->pat.esz;
    } else {
        dimmnet2_pattern_init(&p->pat, DN2_FORM_CONTIG, r->src, 0, 0);
        p->len = want;
    }
}

/* Read bytes [off, off + len) of the pattern's stream.  What lies outside
 * the process's areas reads as zero and flags the request (bit 20). */
static void dimmnet2_pat_read(DN2State *s, int wid, const DN2Pat *p,
                              uint64_t off, uint8_t *buf, uint32_t len)
{
    if (off < p->ww_len) {
        uint32_t n = MIN(len, p->ww_len - off);
        memcpy(buf, s->win.ww_ptr + wid * DN2_WW_WID_STRIDE + p->ww_off + off, n);
        buf += n;
        off += n;
        len -= n;
    }
    memset(buf, 0, len);        /* nothing of an earlier packet goes out */
    if (dimmnet2_pattern_read(s, wid, &p->pat, off - p->ww_len, buf, len, NULL)) {
        s->wid[wid].req_error = 1;
    }
}

static uint32_t dimmnet2_mtu(DN2State *s)
{
    return dn2_mtu_bytes(s->sys.mtu_reg);
}

static void dimmnet2_hdr_base(DN2State *s, const struct dn2_req *r, struct dn2_hdr *h,
                         unsigned type)
{
    memset(h, 0, sizeof(*h));
    h->type = type;
    h->dtype = r->dtype;
    h->iter = r->iter;
    h->pgid = s->sys.pgid[r->wid];
    h->dwid = r->dwid;
    h->swid = r->wid;
    h->dlid = dn2_clid_to_lid(r->dclid);
    h->rflag = r->rflag;
    h->hflag = dn2_hdr_lines(type) > DN2_HDR_LINES_SHORT;
}

/* Emit one packet: header lines then data (already in s->wc.pkt_buf after the
 * header).  The caller has checked dimmnet2_port_can_send(). */
static void dimmnet2_emit(DN2State *s, struct dn2_hdr *h, unsigned lines,
                     uint32_t dlen)
{
    uint8_t *p = s->wc.pkt_buf;
    uint32_t bytes = lines * DN2_LINE + dlen;
    uint64_t line[DN2_HDR_LINES_MAX];
    unsigned i;

    h->size = dn2_pkt_size_field(bytes);
    g_assert(dn2_hdr_pack(h, line) == lines);
    for (i = 0; i < lines; i++) {
        stq_le_p(p + i * DN2_LINE, line[i]);
    }
    /* Whole lines on the wire; the last one may be partly padding. */
    bytes = ROUND_UP(bytes, DN2_LINE);
    memset(p + lines * DN2_LINE + dlen, 0, bytes - lines * DN2_LINE - dlen);
    dimmnet2_port_send(s, h->dlid, p, bytes);
    s->stat[DN2_STAT_TX_PACKETS]++;
    s->stat[DN2_STAT_TX_BYTES] += bytes;
}

/* ------------------------------------------------------------------ */
/* BOTF: send the packet image in a Write Window (§4.6.2)              */
/* ------------------------------------------------------------------ */

static DN2Step dimmnet2_exec_botf(DN2State *s, DN2Exec *x, const struct dn2_req *r,
                         uint64_t *budget)
{
    const DN2FifoEntry *e = &x->ent;
    unsigned n = dn2_botf_ww(e->lower);
    uint32_t size = MIN(dn2_botf_size(e->lower), DN2_BOTF_MAX);
    uint32_t bytes = ROUND_UP(size, DN2_LINE);
    uint64_t h0;
    uint16_t dlid;

    if (x->started) {
        /* timing=thesis: the image has been read; the window is free */
        dimmnet2_prim_count(s, r->wid, DN2_PC_BOTF);
        trace_dimmnet2_done(s->index, r->wid, "BOTF", size);
        return DIMMNET2_STEP_DONE;
    }
    memcpy(s->wc.pkt_buf, s->win.ww_ptr + r->wid * DN2_WW_WID_STRIDE + n * DN2_WIN_SIZE,
           bytes);
    memset(s->wc.pkt_buf + size, 0, bytes - size);
    /* The NIC stamps the privileged PGID, the requested size and the
     * issuing process's WID as SWID: a process cannot speak for the other
     * process of its board (choice #45). */
    h0 = ldq_le_p(s->wc.pkt_buf);
    h0 = DN2_FSET(h0, DN2_H0_SIZE, dn2_pkt_size_field(size));
    h0 = DN2_FSET(h0, DN2_H0_PGID, s->sys.pgid[r->wid]);
    h0 = DN2_FSET(h0, DN2_H0_SWID, r->wid);
    stq_le_p(s->wc.pkt_buf, h0);
    dlid = dn2_hdr0_dlid(h0);
    if (!dimmnet2_port_can_send(s, h0, bytes)) {
        return DIMMNET2_STEP_STALL;
    }
    dimmnet2_port_send(s, dlid, s->wc.pkt_buf, bytes);
    s->stat[DN2_STAT_TX_PACKETS]++;
    s->stat[DN2_STAT_TX_BYTES] += bytes;
    *budget -= MIN(*budget, (uint64_t)bytes + 64);
    if (s->timing.timing_on) {
        /* The Core Logic reads the image line by line: the Write Window is
         * busy, and the Primitive Counter counts, until it is done. */
        dimmnet2_timing_wc_busy(s, (uint64_t)(s->timing.tparam[DN2T_BOTF_READ_CLK] +
                                              bytes / DN2_LINE) *
                                   s->timing.tparam[DN2T_CLOCK_NS]);
        x->started = 1;
        return dimmnet2_timing_wc_ready(s) ? dimmnet2_exec_botf(s, x, r, budget)
                                           : DIMMNET2_STEP_STALL;
    }
    dimmnet2_prim_count(s, r->wid, DN2_PC_BOTF);
    trace_dimmnet2_done(s->index, r->wid, "BOTF", size);
    return DIMMNET2_STEP_DONE;
}

/* ------------------------------------------------------------------ */
/* RVL family: a 4-line request packet (§4.6.5, §5.3.6)                */
/* ------------------------------------------------------------------ */

static DN2Step dimmnet2_exec_rvl(DN2State *s, DN2Exec *x, const struct dn2_req *r,
                        uint64_t *budget)
{
    struct dn2_hdr h;

    dimmnet2_hdr_base(s, r, &h, r->otype);
    h.eflag = r->eflag;
    h.w1_lo = r->src;
    h.w1_hi = r->dst;
    if (dn2_otype_form(r->otype) == DN2_FORM_CONTIG) {
        h.total = r->arg;
        h.stride = 0;
    } else {
        h.total = r->iter * dn2_dtype_bytes(r->dtype);
        h.stride = r->arg;
    }
    h.ex = (r->has_ex && r->ex_otype) ? x->ent.ex : 0;
    if (!dimmnet2_port_can_send(s, dn2_hdr0_encode(&h), DN2_HDR_LINES_RVL * DN2_LINE)) {
        return DIMMNET2_STEP_STALL;
    }
    dimmnet2_emit(s, &h, DN2_HDR_LINES_RVL, 0);
    dimmnet2_prim_count(s, r->wid, DN2_PC_RVL);
    *budget -= MIN(*budget, 64);
    trace_dimmnet2_done(s->index, r->wid, dn2_otype_name(r->otype), 0);
    return DIMMNET2_STEP_DONE;
}

/* ------------------------------------------------------------------ */
/* RVS family and IPUSH family: data packets                            */
/* ------------------------------------------------------------------ */

static DN2Step dimmnet2_exec_stream(DN2State *s, DN2Exec *x, const struct dn2_req *r,
                           uint64_t *budget)
{
    bool ipush = dn2_otype_is_msg(r->otype);
    int form = ipush ? DN2_FORM_CONTIG : dn2_otype_form(r->otype);
    uint32_t esz = dn2_dtype_bytes(r->dtype);
    uint32_t mtu = dimmnet2_mtu(s);
    unsigned lines = ipush ? DN2_HDR_LINES_SHORT : dn2_hdr_lines(r->otype);
    uint64_t area = dimmnet2_sdimm_area(s);
    uint64_t want;
    DN2Pat p;

    /* The remote side's length; the local pattern may be shorter. */
    want = form == DN2_FORM_CONTIG ? r->arg : (uint64_t)r->iter * esz;
    dimmnet2_pat_init(s, r, &p, want);
    if (r->otype == DN2_OP_LHSV2) {
        uint32_t wwlen = dn2_lhsv2_ww_bytes(r->dst), wwoff = dn2_lhsv2_ww_off(r->dst);
        if (wwoff >= DN2_WIN_AREA) {
            wwlen = 0;
            s->wid[r->wid].req_error = 1;
        }
        p.ww_off = wwoff;
        p.ww_len = MIN(MIN(wwlen, DN2_WIN_AREA - wwoff), want);
        /* The message is the Write Window prefix followed by the SO-DIMM
         * part: with Command Ex, the Ex pattern's bytes; without, the rest
         * of Size, contiguous from SRCOff (choice #46). */
        p.len = p.ww_len + ((r->has_ex && r->ex_otype) ? p.len : want - p.ww_len);
    }
    if (x->started == 2) {
        goto sent;              /* timing=thesis: the last data was read */
    }
    if (!x->started) {
        uint64_t total = MIN(want, p.len);
        if (p.pat.form == DN2_FORM_CONTIG) {
            /* The SO-DIMM part stops at the end of the process's area,
             * whether or not a Write Window prefix comes first. */
            uint64_t room = r->src < area ? area - r->src : 0;
            if (total > p.ww_len + room) {
                total = p.ww_len + room;
                s->wid[r->wid].req_error = 1;
            }
        }
        if (form != DN2_FORM_CONTIG) {
            total = total / esz;        /* whole elements */
        }
        x->total = total;
        x->done = 0;
        x->started = 1;
    }

    do {
        struct dn2_hdr h;
        uint32_t dlen, k = 0;
        bool last;

        dimmnet2_hdr_base(s, r, &h, ipush ? DN2_OP_IPUSH : r->otype);
        if (form == DN2_FORM_CONTIG) {
            uint32_t payload = (mtu - lines * DN2_LINE) & ~(DN2_LINE - 1);
            dlen = MIN((uint64_t)payload, x->total - x->done);
            last = x->done + dlen >= x->total;
            if (ipush) {
                h.lflag = r->otype != DN2_OP_IPUSH;
                /* a record per packet, unless the request asks for one per
                 * message (the last packet's eflag then writes it) */
                h.pflag = r->eflag && !(r->dtype & DN2_IPUSH_PER_MESSAGE);
                h.w1_lo = (uint32_t)x->total;
                h.w1_hi = (uint32_t)x->done;
            } else {
                h.w1_lo = r->dst;
                h.w1_hi = r->dst + (uint32_t)x->done;
            }
            dimmnet2_pat_read(s, r->wid, &p, x->done, s->wc.pkt_buf + lines * DN2_LINE,
                         dlen);
        } else {
            uint32_t per = (mtu - lines * DN2_LINE) / esz;
            k = MIN((uint64_t)per, x->total - x->done);
            dlen = k * esz;
            last = x->done + k >= x->total;
            h.iter = k;
            h.w1_lo = r->dst;
            h.w1_hi = (uint32_t)x->done;
            h.total = (uint32_t)(x->total * esz);
            h.stride = r->arg;
            dimmnet2_pat_read(s, r->wid, &p, x->done * esz,
                         s->wc.pkt_buf + lines * DN2_LINE, dlen);
        }
        h.eflag = r->eflag && last;
        if (!dimmnet2_port_can_send(s, dn2_hdr0_encode(&h), lines * DN2_LINE + dlen)) {
            return DIMMNET2_STEP_STALL;
        }
        /* timing=thesis: the data is read from the SO-DIMMs (its Write
         * Window prefix, LHSv2's, at the line rate like a BOTF image) */
        if (s->timing.timing_on) {
            uint64_t ww = x->done < p.ww_len ? MIN(p.ww_len - x->done, dlen) : 0;

            dimmnet2_timing_sdimm_read(s, dlen - ww);
            dimmnet2_timing_wc_busy(s, DIV_ROUND_UP(ww, DN2_LINE) *
                                       (uint64_t)s->timing.tparam[DN2T_CLOCK_NS]);
        }
        dimmnet2_emit(s, &h, lines, dlen);
        x->done += form == DN2_FORM_CONTIG ? dlen : k;
        *budget -= MIN(*budget, (uint64_t)dlen + 64);
        if (last) {
            break;
        }
        if (!*budget) {
            return DIMMNET2_STEP_MORE;
        }
        if (!dimmnet2_timing_wc_ready(s)) {
            return DIMMNET2_STEP_STALL;     /* the next packet's read */
        }
    } while (1);

    if (s->timing.timing_on) {
        x->started = 2;
        if (!dimmnet2_timing_wc_ready(s)) {
            return DIMMNET2_STEP_STALL;     /* counts when its data is read */
        }
    }
sent:
    if (!x->ent.from_rc) {
        dimmnet2_prim_count(s, r->wid, ipush ? DN2_PC_IPUSH : DN2_PC_RVS);
    }
    trace_dimmnet2_done(s->index, r->wid, dn2_otype_name(r->otype),
                        form == DN2_FORM_CONTIG ? x->total : x->total * esz);
    return DIMMNET2_STEP_DONE;
}

/* One step of a remote request (BOTF, the RVL and RVS families, the IPUSH
 * family). */
DN2Step dimmnet2_tx_step(DN2State *s, DN2Exec *x, const struct dn2_req *r,
                         uint64_t *budget)
{
    if (!dimmnet2_port_ready(s) || !dimmnet2_timing_wc_ready(s)) {
        return DIMMNET2_STEP_STALL;     /* (timing=thesis: a step still busy) */
    }
    switch (r->otype) {
    case DN2_OP_BOTF:
        return dimmnet2_exec_botf(s, x, r, budget);
    case DN2_OP_RVL:
    case DN2_OP_RVLS:
    case DN2_OP_RVLI:
        return dimmnet2_exec_rvl(s, x, r, budget);
    default:
        return dimmnet2_exec_stream(s, x, r, budget);
    }
}

/*
 * At issue: an RVL whose data comes back into the Prefetch Window
 * (Command1) resets the flags of the lines it will fill and pre-sets the
 * rest of those windows, like a VL (§4.5.5.2); the incoming RVS packets set
 * each line as it is written [EMU], so the host polls RVL-to-PW like VL.
 */
void dimmnet2_tx_on_issue(DN2State *s, const struct dn2_req *r)
{
    DN2Wid *w = &s->wid[r->wid];
    uint64_t total, end;
    uint32_t first, last, i;

    if (!dn2_otype_is_rvl(r->otype) || !r->rflag || r->dst >= DN2_WIN_AREA) {
        return;
    }
    total = dn2_otype_form(r->otype) == DN2_FORM_CONTIG ? r->arg :
            (uint64_t)r->iter * dn2_dtype_bytes(r->dtype);
    if (r->has_ex && r->ex_otype && dn2_otype_form(r->ex_otype) != DN2_FORM_CONTIG) {
        return;     /* a scattered landing: no single range to track */
    }
    if (!total) {
        return;
    }
    end = MIN((uint64_t)r->dst + total, DN2_WIN_AREA);
    first = r->dst / DN2_PW_LINE;
    last = (end - 1) / DN2_PW_LINE;
    for (i = first / DN2_PW_LINES_PER_WIN * DN2_PW_LINES_PER_WIN;
         i <= last / DN2_PW_LINES_PER_WIN * DN2_PW_LINES_PER_WIN + 3; i++) {
        if (i >= first && i <= last) {
            w->pw_flag &= ~(1u << i);
        } else {
            w->pw_flag |= 1u << i;
        }
    }
}
