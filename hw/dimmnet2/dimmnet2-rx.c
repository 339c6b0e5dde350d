/*
 * DIMMnet-2 Receive Controller (thesis §5.4, §7.1.5, §7.2): takes packets
 * from the port, checks them, and writes their data into the destination
 * process's SO-DIMM area, Prefetch Window or LLCM, its IPUSH ring and LH
 * Buffer, then the receive-status ring.
 *
 * Every field of a packet comes from the network and is untrusted: sizes,
 * offsets, strides, element counts and list entries are checked against
 * the receiving process's areas; malformed packets are dropped and counted
 * (and set the error state the thesis defines, Controller Status [19:17]).
 *
 * When the host has not yet freed room (status ring, IPUSH ring, LH Buffer,
 * RC request FIFO), the packet is refused (DIMMNET2_RX_BUSY) and nothing of
 * it is written; the port keeps it, grants the sender no more credit, and
 * offers it again when the Receive Controller resumes: at once when the host
 * frees room through a register or the Window Controller takes a request
 * from the RC FIFO (dimmnet2_rx_resume), else from its own retry timer
 * (an IPUSH ring's head lives in LLCM, which the host writes without any
 * register).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/log.h"
#include "qemu/bswap.h"
#include "qemu/atomic.h"
#include "qemu/timer.h"
#include "qemu/main-loop.h"
#include "exec/memory.h"
#include "dimmnet2-int.h"
#include "trace.h"

/* Retry delays while the host keeps a ring full: from 100 us, doubling up
 * to 2 ms, so a long wait costs next to no CPU (a register write that frees
 * room resumes at once anyway). */
#define DN2_RX_RETRY_MIN_NS (100 * SCALE_US)
#define DN2_RX_RETRY_MAX_NS (2 * SCALE_MS)

/* Every reason to drop a packet, the statistic it counts in, and whether
 * it is malformed (a peer's error: logged as a guest error). */
static const struct {
    const char *name;
    DN2Stat stat;
    bool malformed;
} dimmnet2_rx_drops[DN2_RXD__MAX] = {
    [DN2_RXD_TOO_LONG] = { "packet longer than the largest MTU",
                           DN2_STAT_RX_DROP_BAD, true },
    [DN2_RXD_TOO_SHORT] = { "packet shorter than a 2-line header",
                            DN2_STAT_RX_DROP_BAD, true },
    [DN2_RXD_NOT_NETWORK] = { "TYPE is not a network primitive",
                              DN2_STAT_RX_DROP_BAD, true },
    [DN2_RXD_HFLAG] = { "hflag does not match TYPE", DN2_STAT_RX_DROP_BAD, true },
    [DN2_RXD_SHORT_SIZE] = { "packet shorter than its header or Packet Size",
                             DN2_STAT_RX_DROP_BAD, true },
    [DN2_RXD_RVL_DATA] = { "RVL packet with data", DN2_STAT_RX_DROP_BAD, true },
    [DN2_RXD_FEW_ELEMENTS] = { "fewer data bytes than Iteration elements",
                               DN2_STAT_RX_DROP_BAD, true },
    [DN2_RXD_LHS_OUTSIDE] = { "LHS packet outside its message",
                              DN2_STAT_RX_DROP_BAD, true },
    [DN2_RXD_LHS_NO_ENVELOPE] = { "LHS first packet without envelope",
                                  DN2_STAT_RX_DROP_BAD, true },
    [DN2_RXD_LHS_NO_START] = { "LHS continuation without its start",
                               DN2_STAT_RX_DROP_BAD, true },
    [DN2_RXD_NOT_FOR_LID] = { "not for this LID", DN2_STAT_RX_DROP_ROUTE },
    [DN2_RXD_STRICT_LID] = { "strict: LID register not set", DN2_STAT_RX_DROP_ROUTE },
    [DN2_RXD_NO_PROCESS] = { "no process at DWID (PGID not set)",
                             DN2_STAT_RX_DROP_NOPROC },
    [DN2_RXD_PGID] = { "PGID mismatch", DN2_STAT_RX_DROP_PGID },
    [DN2_RXD_SDIMM_NOT_READY] = { "SO-DIMM not ready", DN2_STAT_RX_DROP_NOPROC },
    [DN2_RXD_NO_RING] = { "no valid IPUSH ring for this sender",
                          DN2_STAT_RX_DROP_NOPROC },
    [DN2_RXD_RING_TOO_SMALL] = { "packet larger than the IPUSH ring",
                                 DN2_STAT_RX_DROP_NOPROC },
};

/*
 * Drop a packet: counted under its reason's statistic and traced; a
 * malformed one is also logged, and its error state err (Controller Status
 * [19:18], 0 for none) shown to the process it was for (wid), or to both
 * when it is too short to say (wid < 0), never to the other process
 * (choice #47).
 */
static DN2RxResult dimmnet2_rx_drop(DN2State *s, DN2RxDrop why, int wid,
                                    uint16_t slid, unsigned err)
{
    int i;

    for (i = 0; err && i < DN2_NUM_WID; i++) {
        if (wid < 0 || wid == i) {
            s->wid[i].rx_err = err;
        }
    }
    if (dimmnet2_rx_drops[why].malformed) {
        DIMMNET2_GUEST_ERROR(s, dimmnet2_rx_drops[why].stat, rx_malformed,
                             "packet from LID 0x%x dropped: %s", slid,
                             dimmnet2_rx_drops[why].name);
    } else {
        s->stat[dimmnet2_rx_drops[why].stat]++;
        trace_dimmnet2_rx_drop(s->index, slid, dimmnet2_rx_drops[why].name);
    }
    return DIMMNET2_RX_DROPPED;
}

/* No room yet: nothing of the packet is written.  Host-owned memory (an
 * IPUSH ring's head lives in LLCM) changes without any register write, so
 * the retry timer looks again shortly, backing off. */
static DN2RxResult dimmnet2_rx_busy(DN2State *s, const char *why, uint16_t slid)
{
    if (!s->rx.stalled) {
        s->stat[DN2_STAT_RX_STALLS]++;
        trace_dimmnet2_rx_stall(s->index, slid, why);
    }
    s->rx.stalled = 1;
    s->rx.retry_ns = !s->rx.retry_ns ? DN2_RX_RETRY_MIN_NS :
                     MIN(2 * s->rx.retry_ns, DN2_RX_RETRY_MAX_NS);
    timer_mod(s->rx.retry, dimmnet2_now(s) + s->rx.retry_ns);
    return DIMMNET2_RX_BUSY;
}

/* ------------------------------------------------------------------ */
/* The receive-status ring in LLCM                                     */
/* ------------------------------------------------------------------ */

static bool dimmnet2_status_has_room(DN2State *s, DN2Wid *w)
{
    uint32_t size = dimmnet2_status_ring_bytes(w);

    return size >= 2 * DN2_STATUS_REC_SIZE &&
           dimmnet2_status_ring_used(w) + 2 * DN2_STATUS_REC_SIZE <= size;
}

static void dimmnet2_status_write(DN2State *s, int wid, uint64_t lower, uint64_t upper)
{
    DN2Wid *w = &s->wid[wid];
    uint32_t size = dimmnet2_status_ring_bytes(w);
    uint32_t pos = w->status_init +
                   (uint32_t)((w->status_tail - w->status_init) % size);
    uint8_t *p = s->win.llcm_ptr + wid * DN2_LLCM_WID_STRIDE + pos;

    /* Lower at +0, Upper at +8 (choice #26); data first, then the tail. */
    stq_le_p(p, lower);
    stq_le_p(p + 8, upper);
    memory_region_set_dirty(&s->win.llcm, wid * DN2_LLCM_WID_STRIDE + pos,
                            DN2_STATUS_REC_SIZE);
    smp_wmb();
    w->status_tail = w->status_init +
                     (pos - w->status_init + DN2_STATUS_REC_SIZE) % size;
    trace_dimmnet2_rx_status(s->index, wid, pos, lower, upper);
}

static void dimmnet2_status_post(DN2State *s, const struct dn2_hdr *h, uint16_t slid,
                            uint32_t first, uint32_t size)
{
    struct dn2_status_fields f = {
        .type = h->type, .dtype = h->dtype, .iter = h->iter, .wid = h->swid,
        .eflag = 1, .clid = dn2_lid_to_clid(slid), .size = size, .addr = first,
    };
    struct dn2_status_rec rec;

    dn2_status_pack(&f, &rec);
    dimmnet2_status_write(s, h->dwid, rec.lower, rec.upper);
}

/* ------------------------------------------------------------------ */
/* Stores into the receiving process's areas                           */
/* ------------------------------------------------------------------ */

enum { DN2_TGT_SDIMM, DN2_TGT_PW, DN2_TGT_LLCM };

/* Store len bytes at process-relative address a of the target, clipping
 * at the area end (Controller Status bit 17). */
static void dimmnet2_rx_store(DN2State *s, int wid, int tgt, uint64_t a,
                         const uint8_t *data, uint32_t len)
{
    uint64_t area, n;

    switch (tgt) {
    case DN2_TGT_SDIMM:
        area = dimmnet2_sdimm_area(s);
        break;
    case DN2_TGT_PW:
        area = DN2_WIN_AREA;
        break;
    default:
        area = DN2_LLCM_AREA;
        break;
    }
    n = a < area ? MIN((uint64_t)len, area - a) : 0;
    if (n < len) {
        s->wid[wid].rx_ovf = 1;
        trace_dimmnet2_rx_clip(s->index, wid, a, len);
    }
    if (!n) {
        return;
    }
    switch (tgt) {
    case DN2_TGT_SDIMM:
        dimmnet2_sdimm_rw(s, wid, a, (void *)data, n, true);
        break;
    case DN2_TGT_PW: {
        uint32_t off = wid * DN2_PW_WID_STRIDE + a, i;
        memcpy(s->win.pw_ptr + off, data, n);
        memory_region_set_dirty(&s->win.pw, off, n);
        dimmnet2_timing_cached_written(s, false, off, n);
        smp_wmb();
        for (i = a / DN2_PW_LINE; i <= (a + n - 1) / DN2_PW_LINE; i++) {
            s->wid[wid].pw_flag |= 1u << i;
        }
        break;
    }
    default: {
        uint32_t off = wid * DN2_LLCM_WID_STRIDE + a;
        memcpy(s->win.llcm_ptr + off, data, n);
        memory_region_set_dirty(&s->win.llcm, off, n);
        break;
    }
    }
}

/* ------------------------------------------------------------------ */
/* RVS family: remote VS / VSS / VSI (§4.6.6)                           */
/* ------------------------------------------------------------------ */

static DN2RxResult dimmnet2_rx_rvs(DN2State *s, const struct dn2_hdr *h, uint16_t slid,
                      const uint8_t *data, uint32_t dlen)
{
    int form = dn2_otype_form(h->type);
    int tgt = h->lflag ? DN2_TGT_LLCM : h->rflag ? DN2_TGT_PW : DN2_TGT_SDIMM;
    DN2Wid *w = &s->wid[h->dwid];
    bool status = h->eflag || h->pflag;
    uint32_t esz = dn2_dtype_bytes(h->dtype), size, i, a;
    DN2Pattern pat;

    if (tgt == DN2_TGT_SDIMM && !s->sys.sdimm_ready) {
        return dimmnet2_rx_drop(s, DN2_RXD_SDIMM_NOT_READY, h->dwid, slid, 0);
    }
    if (form != DN2_FORM_CONTIG && (uint64_t)h->iter * esz > dlen) {
        return dimmnet2_rx_drop(s, DN2_RXD_FEW_ELEMENTS, h->dwid, slid, DN2_RX_ERR_EARLY_SOP);
    }
    if (status && !dimmnet2_status_has_room(s, w)) {
        return dimmnet2_rx_busy(s, "status ring full", slid);
    }

    if (form == DN2_FORM_CONTIG) {
        dimmnet2_rx_store(s, h->dwid, tgt, h->w1_hi, data, dlen);
        size = h->w1_hi + dlen - h->w1_lo;
    } else {
        /* 2nd DW [63:32]: the index of this packet's first element */
        dimmnet2_pattern_init(&pat, form, h->w1_lo, h->stride, h->dtype);
        for (i = 0; i < h->iter; i++) {
            if ((form == DN2_FORM_LIST && !s->sys.sdimm_ready) ||
                !dimmnet2_pattern_addr(s, h->dwid, &pat, h->w1_hi + i, &a)) {
                s->wid[h->dwid].rx_ovf = 1;
                continue;
            }
            dimmnet2_rx_store(s, h->dwid, tgt, a, data + i * esz, esz);
        }
        size = h->total;
    }
    if (status) {
        struct dn2_hdr rec = *h;
        if (form != DN2_FORM_CONTIG) {
            /* The record describes the primitive, not its last packet. */
            rec.iter = MIN(h->total / esz, DN2_ITER_MAX);
        }
        dimmnet2_status_post(s, &rec, slid, h->w1_lo, size);
    }
    return DIMMNET2_RX_DELIVERED;
}

/* ------------------------------------------------------------------ */
/* RVL family: the responder turns the request into RVS (§5.3.6)        */
/* ------------------------------------------------------------------ */

static DN2RxResult dimmnet2_rx_rvl(DN2State *s, const struct dn2_hdr *h, uint16_t slid)
{
    int form = dn2_otype_form(h->type);
    struct dn2_req ex;          /* the requester's Command Ex (Lower layout) */
    DN2FifoEntry e;

    if (!s->sys.sdimm_ready) {
        return dimmnet2_rx_drop(s, DN2_RXD_SDIMM_NOT_READY, h->dwid, slid, 0);
    }
    if (s->rx.rc_count >= DIMMNET2_RC_FIFO) {
        return dimmnet2_rx_busy(s, "RC request FIFO full", slid);
    }
    memset(&e, 0, sizeof(e));
    /* The requester's pattern (its Command Ex) becomes the remote side of
     * the RVS; the RVL's own pattern becomes the local side (as Ex). */
    dn2_req_decode(&ex, h->ex, 0, 0, 0, 0, 0);
    if (ex.otype) {
        e.lower = dn2_req_lower(DN2_OP_RVS | dn2_otype_form(ex.otype), ex.dtype,
                                ex.iter, dn2_lid_to_clid(slid), h->swid, h->eflag,
                                dn2_otype_form(ex.otype) == DN2_FORM_CONTIG ?
                                h->total : ex.arg);
    } else {
        e.lower = dn2_req_lower(DN2_OP_RVS, 0, 0, dn2_lid_to_clid(slid),
                                h->swid, h->eflag, h->total);
    }
    e.upper = dn2_req_upper(h->w1_lo, h->w1_hi);
    e.ex = dn2_req_ex(DN2_OP_VL | form, h->dtype, h->iter,
                      form == DN2_FORM_CONTIG ? h->total : h->stride);
    e.has_ex = 1;
    e.rflag = h->rflag;
    e.wid = h->dwid;
    e.from_rc = 1;
    s->rx.rc_fifo[(s->rx.rc_head + s->rx.rc_count) % DIMMNET2_RC_FIFO] = e;
    s->rx.rc_count++;
    /* The port runs the Window Controller once this burst of input is in
     * (DN2PortOps.news). */
    return DIMMNET2_RX_DELIVERED;
}

/* ------------------------------------------------------------------ */
/* IPUSH: the receiver picks the destination through its AMT (§7.1)     */
/* ------------------------------------------------------------------ */

typedef struct DN2Ring {
    uint8_t *entry;             /* the AMT entry in LLCM */
    uint32_t entry_off;
    uint32_t head, tail, base, size;
} DN2Ring;

static bool dimmnet2_ring_lookup(DN2State *s, const struct dn2_hdr *h, uint16_t slid,
                            DN2Ring *r)
{
    DN2Wid *w = &s->wid[h->dwid];
    uint16_t v = s->sys.amt[dimmnet2_amt_index(slid, h->swid, h->dwid)];
    uint64_t limit = MIN((uint64_t)w->ipush_area * DN2_IPUSH_AREA_UNIT,
                         dimmnet2_sdimm_area(s));
    uint32_t lo = h->dwid * DN2_LLCM_WID_STRIDE;

    if (!dn2_amt_slot_valid(v) || !w->ipush_area || !s->sys.sdimm_ready) {
        return false;
    }
    r->entry_off = dn2_amt_slot_value(v) * DN2_AMT_UNIT;
    if (r->entry_off < lo || r->entry_off + DN2_AMT_ENTRY > lo + DN2_LLCM_AREA) {
        return false;           /* the entry must be in the receiver's LLCM */
    }
    r->entry = s->win.llcm_ptr + r->entry_off;
    r->head = ldl_le_p(r->entry + DN2_AMT_HEAD);
    r->tail = ldl_le_p(r->entry + DN2_AMT_TAIL);
    r->base = ldl_le_p(r->entry + DN2_AMT_BASE);
    r->size = ldl_le_p(r->entry + DN2_AMT_SIZE);
    return r->size >= 2 * DN2_RING_ALIGN && !(r->size % DN2_RING_ALIGN) &&
           !(r->base % DN2_RING_ALIGN) && (uint64_t)r->base + r->size <= limit &&
           r->head < r->size && r->tail < r->size &&
           !(r->head % DN2_RING_ALIGN) && !(r->tail % DN2_RING_ALIGN);
}

static uint32_t dimmnet2_ring_free(const DN2Ring *r)
{
    return r->size - DN2_RING_ALIGN - (r->tail - r->head + r->size) % r->size;
}

/* Write data at ring offset pos (wrapping). */
static void dimmnet2_ring_write(DN2State *s, int wid, const DN2Ring *r, uint32_t pos,
                           const uint8_t *data, uint32_t len)
{
    uint32_t n = MIN(len, r->size - pos);

    dimmnet2_sdimm_rw(s, wid, r->base + pos, (void *)data, n, true);
    if (n < len) {
        dimmnet2_sdimm_rw(s, wid, r->base, (void *)(data + n), len - n, true);
    }
}

static void dimmnet2_ring_set_tail(DN2State *s, DN2Ring *r, uint32_t tail)
{
    smp_wmb();
    r->tail = tail;
    stl_le_p(r->entry + DN2_AMT_TAIL, tail);
    memory_region_set_dirty(&s->win.llcm, r->entry_off + DN2_AMT_TAIL, 4);
}

static DN2RxResult dimmnet2_rx_ipush(DN2State *s, const struct dn2_hdr *h, uint16_t slid,
                        const uint8_t *data, uint32_t dlen)
{
    DN2Wid *w = &s->wid[h->dwid];
    bool status = h->eflag || h->pflag;
    uint32_t need = ROUND_UP(dlen, DN2_RING_ALIGN), pos;
    DN2Ring r;

    if (!dimmnet2_ring_lookup(s, h, slid, &r)) {
        return dimmnet2_rx_drop(s, DN2_RXD_NO_RING, h->dwid, slid, 0);
    }
    if (need > r.size - DN2_RING_ALIGN) {
        s->wid[h->dwid].rx_ovf = 1;
        return dimmnet2_rx_drop(s, DN2_RXD_RING_TOO_SMALL, h->dwid, slid, 0);
    }
    if (need > dimmnet2_ring_free(&r)) {
        return dimmnet2_rx_busy(s, "IPUSH ring full", slid);
    }
    if (status && !dimmnet2_status_has_room(s, w)) {
        return dimmnet2_rx_busy(s, "status ring full", slid);
    }
    pos = r.tail;
    dimmnet2_ring_write(s, h->dwid, &r, pos, data, dlen);
    dimmnet2_ring_set_tail(s, &r, (pos + need) % r.size);
    if (status && !h->pflag) {
        /* one record per message (choice #55): where the message began
         * (its earlier packets filled whole 8-byte slots: 2nd DW offset
         * bytes before this one) and its size */
        dimmnet2_status_post(s, h, slid,
                        r.base + (pos + r.size - h->w1_hi % r.size) % r.size, h->w1_lo);
    } else if (status) {
        dimmnet2_status_post(s, h, slid, r.base + pos, dlen);
    }
    return DIMMNET2_RX_DELIVERED;
}

/* ------------------------------------------------------------------ */
/* LHS: envelope + 48 bytes into the LH Buffer, the rest into the ring  */
/* ------------------------------------------------------------------ */

static DN2LhsMsg *dimmnet2_lhs_find(DN2Wid *w, uint16_t slid, uint8_t swid)
{
    int i;

    for (i = 0; i < DIMMNET2_LHS_SLOTS; i++) {
        if (w->lhs[i].valid && w->lhs[i].slid == slid && w->lhs[i].swid == swid) {
            return &w->lhs[i];
        }
    }
    return NULL;
}

static uint8_t *dimmnet2_lhb_entry(DN2State *s, int wid, uint32_t off)
{
    return s->win.lhb_ptr + wid * DN2_LHB_WID_STRIDE + off;
}

/*
 * Every reassembly slot is taken.  A sender that died (or was reset) in
 * the middle of a message never finishes it; one whose last packet is
 * older than DIMMNET2_LHS_TIMEOUT_MS gives its slot up: its LH entry is
 * completed with what arrived, and the process's Controller Status bit 17
 * says data was lost (choice #48).  NULL while every slot is recent.
 */
static DN2LhsMsg *dimmnet2_lhs_reclaim(DN2State *s, int wid, uint16_t slid)
{
    DN2Wid *w = &s->wid[wid];
    int64_t now = dimmnet2_now(s);
    DN2LhsMsg *old = NULL;
    uint8_t *ent;
    int i;

    for (i = 0; i < DIMMNET2_LHS_SLOTS; i++) {
        DN2LhsMsg *m = &w->lhs[i];
        if (m->valid && now - m->last_ns >= (int64_t)DIMMNET2_LHS_TIMEOUT_MS * SCALE_MS &&
            (!old || m->last_ns < old->last_ns)) {
            old = m;
        }
    }
    if (!old) {
        return NULL;
    }
    ent = dimmnet2_lhb_entry(s, wid, old->entry);
    smp_wmb();
    stq_le_p(ent, ldq_le_p(ent) ^ DN2_LH_COMPLETE);
    memory_region_set_dirty(&s->win.lhb, wid * DN2_LHB_WID_STRIDE + old->entry, DN2_LHB_ENTRY);
    dimmnet2_timing_cached_written(s, true, wid * DN2_LHB_WID_STRIDE + old->entry,
                                   DN2_LHB_ENTRY);
    w->rx_ovf = 1;
    DIMMNET2_GUEST_ERROR(s, DN2_STAT_LHS_ABANDONED, lhs_abandoned,
                         "WID %d: LHS message from LID 0x%x abandoned after %u of "
                         "%u bytes (no packet for %d ms; its slot is needed by LID "
                         "0x%x)", wid, old->slid, old->got, old->total,
                         DIMMNET2_LHS_TIMEOUT_MS, slid);
    old->valid = 0;             /* a VL of its overflow held goes on (the
                                 * port's news after this input runs it) */
    return old;
}

/* [a, a + alen) and [b, b + blen) overlap. */
static bool dimmnet2_overlap(uint64_t a, uint64_t alen, uint64_t b, uint64_t blen)
{
    return alen && blen && a < b + blen && b < a + alen;
}

/*
 * The thesis lets the host issue the VL of an LHS message's overflow as
 * soon as Valid toggles; the NIC holds that VL until the message is in
 * (both modes, choice #53).  A message silent for DIMMNET2_LHS_TIMEOUT_MS no
 * longer holds anything.
 */
bool dimmnet2_rx_lhs_filling(DN2State *s, int wid, uint64_t off, uint64_t len)
{
    const uint32_t inline_end = DN2_LINE + DN2_LHB_DATA;
    DN2Wid *w = &s->wid[wid];
    int64_t now = dimmnet2_now(s);
    int i;

    for (i = 0; i < DIMMNET2_LHS_SLOTS; i++) {
        DN2LhsMsg *m = &w->lhs[i];
        uint64_t over, first;

        if (!m->valid || m->got >= m->total || m->total <= inline_end ||
            now - m->last_ns >= (int64_t)DIMMNET2_LHS_TIMEOUT_MS * SCALE_MS) {
            continue;
        }
        over = ROUND_UP(m->total - inline_end, DN2_RING_ALIGN);
        first = over;
        if (m->ring_size && m->pointer + over > (uint64_t)m->ring_base + m->ring_size) {
            first = (uint64_t)m->ring_base + m->ring_size - m->pointer;
            if (dimmnet2_overlap(off, len, m->ring_base, over - first)) {
                return true;    /* the wrapped part */
            }
        }
        if (dimmnet2_overlap(off, len, m->pointer, first)) {
            return true;
        }
    }
    return false;
}

/* Put message bytes [off, off + len) of an LHS message where they belong:
 * [0, 8) is the envelope (already decoded), [8, 56) the entry's data lines,
 * the rest the overflow area in the ring. */
static void dimmnet2_lhs_place(DN2State *s, int wid, DN2LhsMsg *m, DN2Ring *r,
                          uint32_t off, const uint8_t *data, uint32_t len)
{
    const uint32_t inline_end = DN2_LINE + DN2_LHB_DATA;

    while (len) {
        uint32_t n;
        if (off < DN2_LINE) {
            n = MIN(len, DN2_LINE - off);
        } else if (off < inline_end) {
            n = MIN(len, inline_end - off);
            memcpy(dimmnet2_lhb_entry(s, wid, m->entry) + DN2_LHB_DATA_OFF + (off - DN2_LINE),
                   data, n);
        } else {
            n = len;
            dimmnet2_ring_write(s, wid, r, (m->pointer - r->base + (off - inline_end)) %
                           r->size, data, n);
        }
        off += n;
        data += n;
        len -= n;
    }
}

static DN2RxResult dimmnet2_rx_lhs(DN2State *s, const struct dn2_hdr *h, uint16_t slid,
                      const uint8_t *data, uint32_t dlen)
{
    DN2Wid *w = &s->wid[h->dwid];
    bool status = h->eflag || h->pflag;
    uint32_t total = h->w1_lo, off = h->w1_hi;
    const uint32_t inline_end = DN2_LINE + DN2_LHB_DATA;
    DN2LhsMsg *m = dimmnet2_lhs_find(w, slid, h->swid);
    uint8_t *ent;
    uint64_t old;
    struct dn2_lh_entry lh;
    struct dn2_env e;
    DN2Ring r;

    if (!dimmnet2_ring_lookup(s, h, slid, &r)) {
        return dimmnet2_rx_drop(s, DN2_RXD_NO_RING, h->dwid, slid, 0);
    }
    if (off + (uint64_t)dlen > total || (off == 0 && total < DN2_LINE)) {
        return dimmnet2_rx_drop(s, DN2_RXD_LHS_OUTSIDE, h->dwid, slid, 0);
    }
    if (status && !dimmnet2_status_has_room(s, w)) {
        return dimmnet2_rx_busy(s, "status ring full", slid);
    }

    if (off == 0) {
        uint32_t over = total > inline_end ? ROUND_UP(total - inline_end,
                                                       DN2_RING_ALIGN) : 0;
        uint32_t used = (w->lhb_tail - w->lhb_head + DN2_LHB_AREA) % DN2_LHB_AREA;
        uint64_t env;
        int i;

        if (dlen < DN2_LINE) {
            return dimmnet2_rx_drop(s, DN2_RXD_LHS_NO_ENVELOPE, h->dwid, slid, 0);
        }
        env = ldq_le_p(data);   /* only now: the packet may end at its header */
        if (used + DN2_LHB_ENTRY >= DN2_LHB_AREA) {
            return dimmnet2_rx_busy(s, "LH Buffer full", slid);
        }
        if (over > r.size - DN2_RING_ALIGN) {
            s->wid[h->dwid].rx_ovf = 1;
            return dimmnet2_rx_drop(s, DN2_RXD_RING_TOO_SMALL, h->dwid, slid, 0);
        }
        if (over > dimmnet2_ring_free(&r)) {
            return dimmnet2_rx_busy(s, "IPUSH ring full", slid);
        }
        if (!m) {
            for (i = 0; i < DIMMNET2_LHS_SLOTS && w->lhs[i].valid; i++) {
            }
            m = i < DIMMNET2_LHS_SLOTS ? &w->lhs[i] : dimmnet2_lhs_reclaim(s, h->dwid, slid);
            if (!m) {
                return dimmnet2_rx_busy(s, "too many LHS messages in progress", slid);
            }
        }
        /* A sender's new message abandons an unfinished one: the NIC has
         * no way to recover it (it cannot happen with in-order delivery). */
        m->valid = 1;
        m->slid = slid;
        m->swid = h->swid;
        m->entry = w->lhb_tail;
        m->pointer = r.base + r.tail;
        m->ring_base = r.base;
        m->ring_size = r.size;
        m->total = total;
        m->got = 0;
        m->last_ns = dimmnet2_now(s);
        w->lhb_tail = (w->lhb_tail + DN2_LHB_ENTRY) % DN2_LHB_AREA;
        if (over) {
            dimmnet2_ring_set_tail(s, &r, (r.tail + over) % r.size);
        }

        ent = dimmnet2_lhb_entry(s, h->dwid, m->entry);
        memset(ent + DN2_LHB_DATA_OFF, 0, DN2_LHB_DATA);
        dimmnet2_lhs_place(s, h->dwid, m, &r, 0, data, dlen);
        /* Envelope valid: toggle Valid (the host may VL the overflow now);
         * Complete keeps the value the host last saw. */
        dn2_env_unpack(env, &e);
        old = ldq_le_p(ent);
        lh = (struct dn2_lh_entry) {
            .pointer = m->pointer, .context = e.context, .rank = e.rank,
            .valid = !(old & DN2_LH_VALID), .complete = !!(old & DN2_LH_COMPLETE),
            .tag = e.tag, .size = total - DN2_LINE,
        };
        stq_le_p(ent + DN2_LINE, dn2_lh_line1(&lh));
        smp_wmb();
        stq_le_p(ent, dn2_lh_line0(&lh));
    } else {
        if (!m || off != m->got) {
            return dimmnet2_rx_drop(s, DN2_RXD_LHS_NO_START, h->dwid, slid, 0);
        }
        m->last_ns = dimmnet2_now(s);
        dimmnet2_lhs_place(s, h->dwid, m, &r, off, data, dlen);
    }
    m->got += dlen;
    ent = dimmnet2_lhb_entry(s, h->dwid, m->entry);
    if (m->got >= m->total) {
        smp_wmb();
        stq_le_p(ent, ldq_le_p(ent) ^ DN2_LH_COMPLETE);
        m->valid = 0;           /* a VL of this overflow held goes on (the
                                 * port's news after this input runs it) */
    }
    memory_region_set_dirty(&s->win.lhb, h->dwid * DN2_LHB_WID_STRIDE + m->entry,
                            DN2_LHB_ENTRY);
    dimmnet2_timing_cached_written(s, true, h->dwid * DN2_LHB_WID_STRIDE + m->entry,
                                   DN2_LHB_ENTRY);
    if (status) {
        dimmnet2_status_post(s, h, slid, m->entry, total);
    }
    return DIMMNET2_RX_DELIVERED;
}

/* ------------------------------------------------------------------ */
/* Entry point                                                         */
/* ------------------------------------------------------------------ */

static bool dimmnet2_rx_is_network(unsigned type)
{
    switch (type) {
    case DN2_OP_RVL: case DN2_OP_RVLS: case DN2_OP_RVLI:
    case DN2_OP_RVS: case DN2_OP_RVSS: case DN2_OP_RVSI:
    case DN2_OP_IPUSH:
        return true;
    default:
        return false;
    }
}

static DN2RxResult dimmnet2_rx_packet_now(DN2State *s, uint16_t slid,
                                          const uint8_t *pkt, size_t len, int dwid);

DN2RxResult dimmnet2_rx_packet(DN2State *s, uint16_t slid, const uint8_t *pkt,
                               size_t len)
{
    struct dn2_hdr h;
    DN2RxResult ret;
    int dwid = -1;      /* the process a malformed packet was for, if it says */

    if (len >= DN2_LINE) {
        dn2_hdr0_decode(&h, ldq_le_p(pkt));
        dwid = h.dwid;
    }
    if (s->timing.timing_on && len <= DN2_PKT_MAX) {
        /* timing=thesis: the Receive Controller and the SO-DIMMs may still
         * be busy; the packet waits, in virtual time, until they are not. */
        uint64_t at = dimmnet2_timing_rx_hold(s, pkt, len, false);

        if (at > (uint64_t)qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL) && s->rx.kick) {
            s->rx.stalled = 1;
            timer_mod_anticipate_ns(s->rx.kick, at);
            return DIMMNET2_RX_BUSY;
        }
    }
    ret = dimmnet2_rx_packet_now(s, slid, pkt, len, dwid);
    if (ret != DIMMNET2_RX_BUSY) {
        dimmnet2_timing_rx_hold(s, pkt, len, true);
        /* Publish the register mirror after every packet, not only at the
         * end of the batch: the next packet's effects in memory (an LH
         * Buffer entry's Valid toggle, a status record, data with a PW
         * flag) must not be visible to a polling vCPU before this packet's
         * registers (Status Address, LH Buffer address, Packet Counter,
         * Controller Status).  Choice #56; docs/device-model.md. */
        s->entry_done(s);
    }
    return ret;
}

static DN2RxResult dimmnet2_rx_packet_now(DN2State *s, uint16_t slid,
                                          const uint8_t *pkt, size_t len, int dwid)
{
    struct dn2_hdr h;
    unsigned lines;
    uint32_t psize, dlen;
    uint16_t own;
    DN2RxResult ret;

    if (len > DN2_PKT_MAX) {
        return dimmnet2_rx_drop(s, DN2_RXD_TOO_LONG, dwid, slid, 0);
    }
    if (len < DN2_HDR_LINES_SHORT * DN2_LINE) {
        /* Fewer lines than any header: the packet ended early. */
        return dimmnet2_rx_drop(s, DN2_RXD_TOO_SHORT, dwid, slid,
                                DN2_RX_ERR_EARLY_SOP);
    }
    dn2_hdr0_decode(&h, ldq_le_p(pkt));
    if (!dimmnet2_rx_is_network(h.type)) {
        return dimmnet2_rx_drop(s, DN2_RXD_NOT_NETWORK, h.dwid, slid, 0);
    }
    lines = dn2_hdr_lines(h.type);
    if (h.hflag != (lines > DN2_HDR_LINES_SHORT)) {
        return dimmnet2_rx_drop(s, DN2_RXD_HFLAG, h.dwid, slid, DN2_RX_ERR_HFLAG);
    }
    psize = dn2_pkt_size_bytes(h.size);
    if (len < lines * DN2_LINE || psize < lines * DN2_LINE || psize > len) {
        return dimmnet2_rx_drop(s, DN2_RXD_SHORT_SIZE, h.dwid, slid, DN2_RX_ERR_EARLY_SOP);
    }
    dlen = psize - lines * DN2_LINE;
    if (lines == DN2_HDR_LINES_RVL && dlen) {
        return dimmnet2_rx_drop(s, DN2_RXD_RVL_DATA, h.dwid, slid, DN2_RX_ERR_RVL_DATA);
    }
    {
        uint64_t line[DN2_HDR_LINES_MAX];
        unsigned i;

        for (i = 0; i < lines; i++) {
            line[i] = ldq_le_p(pkt + i * DN2_LINE);
        }
        dn2_hdr_unpack(&h, line, lines);
    }

    own = dimmnet2_port_lid(s);
    if (h.dlid != own && !dn2_clid_is_mcast(dn2_lid_to_clid(h.dlid))) {
        return dimmnet2_rx_drop(s, DN2_RXD_NOT_FOR_LID, h.dwid, slid, 0);
    }
    if (s->params.strict && s->sys.lid != own) {
        /* strict: the port accepts nothing until the LID register holds the
         * subnet manager's LID */
        g_autofree char *d = g_strdup_printf("a packet from LID 0x%x refused: LID "
                                             "register 0x%x, the port's LID 0x%x",
                                             slid, s->sys.lid, own);
        dimmnet2_strict_report(s, DN2_SV_NO_LID, h.dwid, DN2_SR_LID, d);
        return dimmnet2_rx_drop(s, DN2_RXD_STRICT_LID, h.dwid, slid, 0);
    }
    if (!s->wid[h.dwid].pgid_set) {
        return dimmnet2_rx_drop(s, DN2_RXD_NO_PROCESS, h.dwid, slid, 0);
    }
    if (h.pgid != s->sys.pgid[h.dwid]) {
        /* Protection (§4.4): only equal PGIDs communicate; choice #31. */
        return dimmnet2_rx_drop(s, DN2_RXD_PGID, h.dwid, slid, 0);
    }

    if (dn2_otype_is_rvl(h.type)) {
        ret = dimmnet2_rx_rvl(s, &h, slid);
    } else if (h.type == DN2_OP_IPUSH) {
        ret = h.lflag ? dimmnet2_rx_lhs(s, &h, slid, pkt + lines * DN2_LINE, dlen)
                      : dimmnet2_rx_ipush(s, &h, slid, pkt + lines * DN2_LINE, dlen);
    } else {
        ret = dimmnet2_rx_rvs(s, &h, slid, pkt + lines * DN2_LINE, dlen);
    }
    if (ret == DIMMNET2_RX_BUSY) {
        return ret;
    }
    s->rx.retry_ns = 0;
    if (ret == DIMMNET2_RX_DELIVERED) {
        s->wid[h.dwid].pkt_counter++;
        s->stat[DN2_STAT_RX_PACKETS]++;
        s->stat[DN2_STAT_RX_BYTES] += psize;
        trace_dimmnet2_rx(s->index, slid, h.dwid, dn2_otype_name(h.type), dlen);
    }
    return ret;
}

/* ------------------------------------------------------------------ */
/* Stall and resume                                                    */
/* ------------------------------------------------------------------ */

/* Offer the port's held packets again. */
static void dimmnet2_rx_resume_now(void *opaque)
{
    DN2State *s = opaque;

    s->rx.stalled = 0;
    dimmnet2_port_resume(s);
    s->entry_done(s);
}

/*
 * Room may have appeared (the host moved a head register, the Window
 * Controller took a request from the RC FIFO): resume a stalled receive,
 * from a bottom half of the Receive Controller's own, so that no register
 * write or executor run delivers packets in the middle of itself.
 */
void dimmnet2_rx_resume(DN2State *s)
{
    if (s->rx.stalled && s->rx.kick) {
        timer_mod_anticipate_ns(s->rx.kick, qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL));
    } else if (s->rx.stalled && s->rx.bh) {
        qemu_bh_schedule(s->rx.bh);
    }
}

/* Is the Receive Controller holding a packet it refused (Module State)? */
bool dimmnet2_rx_holding(DN2State *s)
{
    return s->rx.stalled || s->rx.retry_ns;
}

/* ------------------------------------------------------------------ */
/* The RC request FIFO, read by the Window Controller                  */
/* ------------------------------------------------------------------ */

bool dimmnet2_rx_rc_pop(DN2State *s, DN2FifoEntry *e)
{
    if (!s->rx.rc_count) {
        return false;
    }
    *e = s->rx.rc_fifo[s->rx.rc_head];
    s->rx.rc_head = (s->rx.rc_head + 1) % DIMMNET2_RC_FIFO;
    s->rx.rc_count--;
    dimmnet2_rx_resume(s);          /* an RVL may wait for this room */
    return true;
}

/* Drop the queued answers to CLID dclid (their requester is gone); the
 * number dropped. */
unsigned dimmnet2_rx_rc_abandon(DN2State *s, unsigned dclid)
{
    DN2FifoEntry keep[DIMMNET2_RC_FIFO];
    uint32_t i, kept = 0, dropped = 0;

    for (i = 0; i < s->rx.rc_count; i++) {
        DN2FifoEntry *e = &s->rx.rc_fifo[(s->rx.rc_head + i) % DIMMNET2_RC_FIFO];
        if (dn2_req_dclid(e->lower) == dclid) {
            dropped++;
        } else {
            keep[kept++] = *e;
        }
    }
    memset(s->rx.rc_fifo, 0, sizeof(s->rx.rc_fifo));
    memcpy(s->rx.rc_fifo, keep, kept * sizeof(keep[0]));
    s->rx.rc_head = 0;
    s->rx.rc_count = kept;
    if (dropped) {
        dimmnet2_rx_resume(s);
    }
    return dropped;
}

/* ------------------------------------------------------------------ */
/* Life cycle                                                          */
/* ------------------------------------------------------------------ */

static void dimmnet2_rx_retry_cb(void *opaque)
{
    dimmnet2_port_due_first(opaque);    /* deliveries due now come first */
    dimmnet2_rx_resume_now(opaque);
}

void dimmnet2_rx_init(DN2State *s)
{
    s->rx.retry = timer_new_ns(dimmnet2_clock(s), dimmnet2_rx_retry_cb, s);
    if (s->vt.on) {
        s->rx.kick = timer_new_ns(QEMU_CLOCK_VIRTUAL, dimmnet2_rx_retry_cb, s);
    } else {
        s->rx.bh = qemu_bh_new_guarded(dimmnet2_rx_resume_now, s,
                                       &DEVICE(s)->mem_reentrancy_guard);
    }
}

void dimmnet2_rx_fini(DN2State *s)
{
    if (s->rx.retry) {
        timer_free(s->rx.retry);
        s->rx.retry = NULL;
    }
    if (s->rx.bh) {
        qemu_bh_delete(s->rx.bh);
        s->rx.bh = NULL;
    }
    if (s->rx.kick) {
        timer_free(s->rx.kick);
        s->rx.kick = NULL;
    }
}

/* Power-on and Controller Reset: nothing held, the RC FIFO empty.  (The
 * port, reset after this, offers what it holds again.) */
void dimmnet2_rx_reset(DN2State *s)
{
    s->rx.stalled = 0;
    s->rx.retry_ns = 0;
    if (s->rx.retry) {
        timer_del(s->rx.retry);
    }
    memset(s->rx.rc_fifo, 0, sizeof(s->rx.rc_fifo));
    s->rx.rc_head = 0;
    s->rx.rc_count = 0;
}
