/* SPDX-License-Identifier: MIT */
/*
 * libdimmnet2: opening, primitives, completion polling, status ring, IPUSH
 * rings, LH Buffer and bring-up.  See libdimmnet2.h for the API; the
 * board's behaviour is docs/device-model.md.  The top layer of the library
 * (dn2-internal.h): it reaches a board only through the handle's pieces
 * and its board-access operations (board-dev.c, board-mem.c).
 */
#define _GNU_SOURCE
#include "libdimmnet2.h"
#include "dn2-internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ------------------------------------------------------------ errors */

const char *dn2_strerror(int err)
{
    switch (err) {
    case 0: return "success";
    case DN2_E_REFUSED: return "the board refused the request (Controller Status bit 20)";
    case DN2_E_SRC_OVF: return "the source ran past the end of its Write Window; the data that fit was written";
    case DN2_E_DST_OVF: return "the destination ran past the process's SO-DIMM area; the data that fit was written";
    case DN2_E_LINK: return "the board's link is not up";
    case DN2_E_RXERR: return "the board's Receive Controller reports an error";
    case -ETIMEDOUT: return "timed out waiting for the board";
    case -EBUSY: return "both WIDs of the board are in use";
    case -EPERM: return "not permitted (administration needs root and the System Register)";
    case -EINVAL: return "invalid argument";
    case -ERANGE: return "offset or size outside the process's area";
    default: return err < 0 ? strerror(-err) : "unknown error";
    }
}

/* ------------------------------------------------------------ opening */

static struct dn2 *dn2_alloc(void)
{
    struct dn2 *d = calloc(1, sizeof(*d));

    if (d) {
        d->fd = -1;
    }
    return d;
}

/* Learn the LH Buffer's state from the board: the head, and each entry's
 * toggle parity (an earlier process on this WID may have used entries). */
static void dn2_lh_sync(struct dn2 *d)
{
    unsigned i;

    d->lh_head = dn2_ur_read(d, DN2_UR_LHB_ADDR) & DN2_LHB_ADDR_MASK;
    for (i = 0; i < DN2_LHB_ENTRIES; i++) {
        uint64_t l0 = *(const volatile uint64_t *)(d->lhb + i * DN2_LHB_ENTRY);
        d->lh_uses[i] = (uint8_t)DN2_FGET(l0, DN2_LH_VALID);
    }
}

/* Through the driver: a process handle (lh_sync: the LH Buffer's state)
 * or the control handle. */
static int dn2_open_dev(dn2_t **out, const char *path, int control)
{
    struct dn2 *d = dn2_alloc();
    int r;

    if (!d) {
        return -ENOMEM;
    }
    if ((r = dn2b_dev_open(d, path, control))) {
        free(d);
        return r;
    }
    if (!control) {
        dn2_lh_sync(d);
    }
    d->ops->refresh(d);
    *out = d;
    return 0;
}

int dn2_open(dn2_t **out, const char *path)
{
    return dn2_open_dev(out, path, 0);
}

int dn2_open_control(dn2_t **out, const char *path)
{
    return dn2_open_dev(out, path, 1);
}

int dn2_open_mem(dn2_t **out, uint64_t phys_base, int wid)
{
    struct dn2 *d;
    int r;

    if ((wid != 0 && wid != 1) || (phys_base & (DN2_BASE_ALIGN - 1))) {
        return -EINVAL;
    }
    if (!(d = dn2_alloc())) {
        return -ENOMEM;
    }
    if ((r = dn2b_mem_open(d, phys_base, wid))) {
        free(d);
        return r;
    }
    /* Where the driver is absent, software owns the whole board: learn
     * what it can from the registers. */
    dn2_lh_sync(d);
    *out = d;
    return 0;
}

void dn2_close(dn2_t *d)
{
    if (!d) {
        return;
    }
    if (d->ops) {
        d->ops->close(d);
    }
    free(d);
}

/* ------------------------------------------------------ raw access */

int dn2_wid(const dn2_t *d) { return d->wid; }
uint64_t dn2_sdimm_bytes(const dn2_t *d) { return d->sdimm_bytes; }
volatile uint8_t *dn2_ww(dn2_t *d) { return d->ww; }
const volatile uint8_t *dn2_pw(dn2_t *d) { return d->pw; }
volatile uint8_t *dn2_llcm(dn2_t *d) { return d->llcm; }
const volatile uint8_t *dn2_lhb(dn2_t *d) { return d->lhb; }

uint64_t dn2_ur_read(dn2_t *d, unsigned off)
{
    return dn2i_ur_rd(d, off);
}

void dn2_ur_write(dn2_t *d, unsigned off, uint64_t v)
{
    dn2i_ur_wr(d, off, v);
}

int dn2_sr_read(dn2_t *d, unsigned off, uint64_t *v)
{
    if (!d->sr || off >= DN2_SR_PAGE || (off & 7)) {
        return d->sr ? -EINVAL : -EPERM;
    }
    *v = dn2i_sr_rd(d, off);
    return 0;
}

int dn2_sr_write(dn2_t *d, unsigned off, uint64_t v)
{
    if (!d->sr || off >= DN2_SR_PAGE || (off & 7)) {
        return d->sr ? -EINVAL : -EPERM;
    }
    dn2i_sr_wr(d, off, v);
    return 0;
}

uint64_t dn2_ctl_status(dn2_t *d) { return dn2_ur_read(d, DN2_UR_CTL_STATUS); }
uint64_t dn2_prim_counter(dn2_t *d) { return dn2_ur_read(d, DN2_UR_PRIM_COUNTER); }
uint64_t dn2_packet_counter(dn2_t *d) { return dn2_ur_read(d, DN2_UR_PKT_COUNTER); }

void dn2_reset_counters(dn2_t *d)
{
    dn2_ur_write(d, DN2_UR_PRIM_COUNTER, 0);
    dn2_ur_write(d, DN2_UR_PKT_COUNTER, 0);
}

uint16_t dn2_lid(dn2_t *d)
{
    if (!d->lid) {
        d->ops->refresh(d);
    }
    return d->lid;
}

/* The Write Window is write-combining: 64-bit stores, then a fence so the
 * data is on the board before the doorbell. */
void dn2_ww_write(dn2_t *d, uint32_t ww_off, const void *src, size_t len)
{
    volatile uint8_t *p = d->ww + ww_off;
    const uint8_t *s = src;
    size_t i = 0;

    if (!((uintptr_t)p & 7)) {
        for (; i + 8 <= len; i += 8) {
            uint64_t v;
            memcpy(&v, s + i, 8);
            *(volatile uint64_t *)(p + i) = v;
        }
    }
    for (; i < len; i++) {
        p[i] = s[i];
    }
    dn2_cpu_sfence();
}

void dn2_pw_read(dn2_t *d, uint32_t pw_off, void *dst, size_t len)
{
    memcpy(dst, (const void *)(d->pw + pw_off), len);
}

/* ------------------------------------------------------ issuing */

int dn2_issue(dn2_t *d, const struct dn2_cmd *c, long timeout_us)
{
    unsigned upper = c->cmd ? DN2_UR_CMD1_UPPER : DN2_UR_CMD0_UPPER;
    unsigned lower = c->cmd ? DN2_UR_CMD1_LOWER : DN2_UR_CMD0_LOWER;
    int r;

    /* Thesis §5.2.2: poll "request pending" and "FIFO almost full". */
    r = DN2_POLL(d, timeout_us, !(dn2_ctl_status(d) &
                                  (DN2_CS_REQ_PENDING | DN2_CS_FIFO_AFULL)));
    if (r) {
        return r;
    }
    /* The thesis's order (§5.2.2): Upper, then Command Ex, then Lower.
     * BOTF uses the Lower word only. */
    if (dn2_req_otype(c->lower) != DN2_OP_BOTF) {
        dn2_ur_write(d, upper, c->upper);
    }
    if (c->ex_valid) {
        if (!d->ex_flag) {
            dn2_ur_write(d, DN2_UR_CMD_EX_FLAG, 1);
            d->ex_flag = 1;
        }
        dn2_ur_write(d, DN2_UR_CMD_EX, c->ex);
    } else if (d->ex_flag) {
        dn2_ur_write(d, DN2_UR_CMD_EX_FLAG, 0);
        d->ex_flag = 0;
    }
    dn2_cpu_sfence();
    dn2_ur_write(d, lower, c->lower);
    return 0;
}

static int dn2_simple(dn2_t *d, uint64_t lower, uint64_t upper, int cmd,
                      const struct dn2_pattern *ex)
{
    struct dn2_cmd c = { .lower = lower, .upper = upper, .cmd = cmd };

    if (ex) {
        unsigned op = (ex->form == DN2_FORM_CONTIG ? DN2_OP_VL : DN2_OP_VL | ex->form);
        c.ex = dn2_req_ex(op, ex->dtype, ex->iter, ex->arg);
        c.ex_valid = 1;
    }
    return dn2_issue(d, &c, DN2_ISSUE_TIMEOUT_US);
}

/* ------------------------------------------- local primitives (VL/VS) */

int dn2_vs(dn2_t *d, uint32_t ww_off, uint32_t sd_dst, uint32_t size)
{
    return dn2_simple(d, dn2_req_lower(DN2_OP_VS, 0, 0, 0, 0, 0, size),
                      dn2_req_upper(ww_off, sd_dst), 0, NULL);
}

int dn2_vss(dn2_t *d, uint32_t ww_off, uint32_t sd_dst, unsigned dtype,
            unsigned iter, uint32_t stride)
{
    return dn2_simple(d, dn2_req_lower(DN2_OP_VSS, dtype, iter, 0, 0, 0, stride),
                      dn2_req_upper(ww_off, sd_dst), 0, NULL);
}

int dn2_vsi(dn2_t *d, uint32_t ww_off, uint32_t sd_dst, unsigned dtype,
            unsigned iter, uint32_t sd_list)
{
    return dn2_simple(d, dn2_req_lower(DN2_OP_VSI, dtype, iter, 0, 0, 0, sd_list),
                      dn2_req_upper(ww_off, sd_dst), 0, NULL);
}

/* Before the NIC fills Prefetch Window lines, drop them from the cache
 * (the window is write-back; §4.2.1's software coherence). */
static void dn2_pw_forget(dn2_t *d, uint32_t pw_off, uint32_t len)
{
    uint32_t end = pw_off + len;

    if (end > DN2_WIN_AREA) {
        end = DN2_WIN_AREA;
    }
    dn2_cpu_flush(d->pw + pw_off, end > pw_off ? end - pw_off : 0);
}

static uint32_t dn2_vl_bytes(uint32_t pw_off, uint32_t want)
{
    uint32_t room = DN2_WIN_SIZE - pw_off % DN2_WIN_SIZE;
    return want < room ? want : room;
}

int dn2_vl(dn2_t *d, uint32_t sd_src, uint32_t pw_off, uint32_t size)
{
    dn2_pw_forget(d, pw_off, dn2_vl_bytes(pw_off, size));
    return dn2_simple(d, dn2_req_lower(DN2_OP_VL, 0, 0, 0, 0, 0, size),
                      dn2_req_upper(sd_src, pw_off), 0, NULL);
}

int dn2_vls(dn2_t *d, uint32_t sd_src, uint32_t pw_off, unsigned dtype,
            unsigned iter, uint32_t stride)
{
    dn2_pw_forget(d, pw_off, dn2_vl_bytes(pw_off, iter * dn2_dtype_bytes(dtype)));
    return dn2_simple(d, dn2_req_lower(DN2_OP_VLS, dtype, iter, 0, 0, 0, stride),
                      dn2_req_upper(sd_src, pw_off), 0, NULL);
}

int dn2_vli(dn2_t *d, uint32_t sd_src, uint32_t pw_off, unsigned dtype,
            unsigned iter, uint32_t sd_list)
{
    dn2_pw_forget(d, pw_off, dn2_vl_bytes(pw_off, iter * dn2_dtype_bytes(dtype)));
    return dn2_simple(d, dn2_req_lower(DN2_OP_VLI, dtype, iter, 0, 0, 0, sd_list),
                      dn2_req_upper(sd_src, pw_off), 0, NULL);
}

int dn2_copy(dn2_t *d, uint32_t sd_src, const struct dn2_pattern *sp,
             uint32_t sd_dst, const struct dn2_pattern *dp, uint32_t size)
{
    int r;

    if ((sp && sp->form == DN2_FORM_LIST) || (dp && dp->form == DN2_FORM_LIST)) {
        return -EINVAL;     /* VLI/VSI cannot pair (§4.6.8) */
    }
    r = dn2_simple(d, sp && sp->form == DN2_FORM_STRIDE ?
                   dn2_req_lower(DN2_OP_VLS, sp->dtype, sp->iter, 0, 0, 0, sp->arg) :
                   dn2_req_lower(DN2_OP_VL, 0, 0, 0, 0, 0, size),
                   dn2_req_upper(sd_src, DN2_COPY_OFF), 0, NULL);
    if (r) {
        return r;
    }
    return dn2_simple(d, dp && dp->form == DN2_FORM_STRIDE ?
                      dn2_req_lower(DN2_OP_VSS, dp->dtype, dp->iter, 0, 0, 0, dp->arg) :
                      dn2_req_lower(DN2_OP_VS, 0, 0, 0, 0, 0, size),
                      dn2_req_upper(DN2_COPY_OFF, sd_dst), 0, NULL);
}

int dn2_wait_vs(dn2_t *d, int window, long timeout_us)
{
    uint64_t st = 0;
    int r = DN2_POLL(d, timeout_us,
                     (st = dn2_ctl_status(d)) & (DN2_CS_WW_DONE(window) |
                                                 DN2_CS_REQ_ERROR));

    if (r) {
        return r;
    }
    if (!(st & DN2_CS_WW_DONE(window))) {
        return DN2_E_REFUSED;
    }
    if (st & DN2_CS_WW_SRC_OVF(window)) {
        return DN2_E_SRC_OVF;
    }
    if (st & DN2_CS_WW_DST_OVF(window)) {
        return DN2_E_DST_OVF;
    }
    return 0;
}

int dn2_wait_pw(dn2_t *d, int window, long timeout_us)
{
    uint64_t mask = DN2_PWF_WIN_MASK(window);
    int r = DN2_POLL(d, timeout_us,
                     (dn2_ur_read(d, DN2_UR_PW_FLAG) & mask) == mask);

    if (!r) {
        /* Stale lines were flushed at issue; bring the new ones in. */
        uint32_t a;
        for (a = window * DN2_WIN_SIZE; a < (window + 1) * DN2_WIN_SIZE; a += DN2_CPU_LINE) {
            dn2_cpu_prefetchnta(d->pw + a);
        }
    } else if (dn2_ctl_status(d) & DN2_CS_REQ_ERROR) {
        r = DN2_E_REFUSED;
    }
    return r;
}

/* Issue a VL or VS whose window is ready (Prefetch Window lines flushed,
 * Write Window written), without the Request FIFO check: the caller made
 * sure there is room. */
static void dn2_issue_unchecked(dn2_t *d, uint64_t upper, uint64_t lower)
{
    /* the thesis's order (§5.2.2), as dn2_issue: Upper, Command Ex, Lower */
    dn2_ur_write(d, DN2_UR_CMD0_UPPER, upper);
    if (d->ex_flag) {
        dn2_ur_write(d, DN2_UR_CMD_EX_FLAG, 0);
        d->ex_flag = 0;
    }
    dn2_cpu_sfence();
    dn2_ur_write(d, DN2_UR_CMD0_LOWER, lower);
}

static void dn2_vl_issue_unchecked(dn2_t *d, uint32_t sd_src, uint32_t pw_off, uint32_t size)
{
    dn2_issue_unchecked(d, dn2_req_upper(sd_src, pw_off),
                        dn2_req_lower(DN2_OP_VL, 0, 0, 0, 0, 0, size));
}

/* The windows whose bits are set in mask, in order; their count. */
static int dn2_windows(unsigned mask, int win[DN2_NUM_WW])
{
    int i, n = 0;

    for (i = 0; i < DN2_NUM_WW; i++) {
        if (mask & (1u << i)) {
            win[n++] = i;
        }
    }
    return n;
}

/*
 * Wait until the Write Windows whose DONE bits are in `done` have been
 * stored to SO-DIMM and the Request FIFO has room for two requests: one
 * Controller Status read answers both, normally at once (an idle board
 * executes a VS inside its doorbell write).
 */
static int dn2_vs_batch_wait(dn2_t *d, uint64_t done, long timeout_us)
{
    const uint64_t busy = DN2_CS_REQ_PENDING | DN2_CS_FIFO_AFULL;
    uint64_t st = 0;
    int w, r = DN2_POLL(d, timeout_us,
                        (((st = dn2_ctl_status(d)) & done) == done && !(st & busy)) ||
                        (st & DN2_CS_REQ_ERROR));

    if (r) {
        return r;
    }
    if ((st & done) != done) {
        return DN2_E_REFUSED;
    }
    for (w = 0; w < DN2_NUM_WW; w++) {
        if (!(done & DN2_CS_WW_DONE(w))) {
            continue;
        }
        if (st & DN2_CS_WW_SRC_OVF(w)) {
            return DN2_E_SRC_OVF;
        }
        if (st & DN2_CS_WW_DST_OVF(w)) {
            return DN2_E_DST_OVF;
        }
    }
    return 0;
}

/*
 * The send-side staging path, with as few board accesses as the protocol
 * allows (the mirror of dn2_sd_read): per batch of the given windows, the
 * first Controller Status read checks both that the previous batch is
 * stored and that the Request FIFO has room (checked again before every
 * further request: the board's other process shares the FIFO), then each
 * window is written and its VS issued; the last batch is waited for.
 */
int dn2_sd_write(dn2_t *d, uint32_t sd_dst, const void *src, size_t len,
                 unsigned ww_mask, long timeout_us)
{
    int win[DN2_NUM_WW], nwin = dn2_windows(ww_mask, win), n, r;
    const uint8_t *in = src;
    uint64_t done = 0;
    size_t off = 0;

    if (!nwin) {
        return -EINVAL;
    }
    while (off < len) {
        if ((r = dn2_vs_batch_wait(d, done, timeout_us))) {
            return r;
        }
        done = 0;
        for (n = 0; n < nwin && off < len; n++) {
            uint32_t k = len - off < DN2_WIN_SIZE ? (uint32_t)(len - off) : DN2_WIN_SIZE;
            uint32_t base = (uint32_t)win[n] * DN2_WIN_SIZE;

            if (n && (r = dn2_vs_batch_wait(d, 0, DN2_ISSUE_TIMEOUT_US))) {
                return r;
            }
            dn2_ww_write(d, base, in + off, k);
            dn2_issue_unchecked(d, dn2_req_upper(base, sd_dst + (uint32_t)off),
                                dn2_req_lower(DN2_OP_VS, 0, 0, 0, 0, 0, k));
            done |= DN2_CS_WW_DONE(win[n]);
            off += k;
        }
    }
    return done ? dn2_vs_batch_wait(d, done, timeout_us) : 0;
}

/*
 * The receive-with-copy path, with as few board accesses as the protocol
 * allows (docs/ofi-provider.md, "The copy path"): per batch of up to four
 * windows, the lines are flushed with one fence, the Request FIFO is
 * checked before each request (once per two would let the board's other
 * process take the room in between: an overrun), the VLs are issued, and
 * one read of the
 * Prefetch Window Flag register (normally already complete: an idle board
 * executes a VL inside its doorbell write) covers the whole batch.
 */
int dn2_sd_read(dn2_t *d, uint32_t sd_src, void *dst, size_t len,
                unsigned pw_mask, long timeout_us)
{
    int win[DN2_NUM_WW], nwin = dn2_windows(pw_mask, win), i, r;
    size_t off = 0;
    uint8_t *out = dst;

    if (!nwin) {
        return -EINVAL;
    }
    while (off < len) {
        uint32_t k[DN2_NUM_WW];
        uint64_t mask = 0;
        int n;

        for (n = 0; n < nwin && off + (size_t)n * DN2_WIN_SIZE < len; n++) {
            size_t left = len - off - (size_t)n * DN2_WIN_SIZE;
            uint32_t a, base = win[n] * DN2_WIN_SIZE;
            k[n] = left < DN2_WIN_SIZE ? (uint32_t)left : DN2_WIN_SIZE;
            for (a = 0; a < k[n]; a += DN2_CPU_LINE) {
                dn2_cpu_clflush(d->pw + base + a);
            }
            mask |= DN2_PWF_WIN_MASK(win[n]);
        }
        dn2_cpu_mfence();
        for (i = 0; i < n; i++) {
            /* Before every request (thesis §5.2.2): the other process of
             * the board may have taken the room this process saw. */
            r = DN2_POLL(d, DN2_ISSUE_TIMEOUT_US,
                         !(dn2_ctl_status(d) & (DN2_CS_REQ_PENDING | DN2_CS_FIFO_AFULL)));
            if (r) {
                return r;
            }
            dn2_vl_issue_unchecked(d, sd_src + (uint32_t)(off + (size_t)i * DN2_WIN_SIZE),
                                   win[i] * DN2_WIN_SIZE, k[i]);
        }
        r = DN2_POLL(d, timeout_us, (dn2_ur_read(d, DN2_UR_PW_FLAG) & mask) == mask);
        if (r) {
            return dn2_ctl_status(d) & DN2_CS_REQ_ERROR ? DN2_E_REFUSED : r;
        }
        for (i = 0; i < n; i++) {
            memcpy(out + off, (const void *)(d->pw + win[i] * DN2_WIN_SIZE), k[i]);
            off += k[i];
        }
    }
    return 0;
}

unsigned dn2_count(dn2_t *d, int family)
{
    return dn2_pc_field(dn2_prim_counter(d), family);
}

int dn2_wait_count(dn2_t *d, int family, unsigned since, unsigned n,
                   long timeout_us)
{
    return DN2_POLL(d, timeout_us,
                    ((dn2_count(d, family) - since) & DN2_PC_MASK) >= n);
}

/* ---------------------------------------------------------- BOTF */

int dn2_botf_raw(dn2_t *d, int window, const void *image, size_t size)
{
    struct dn2_cmd c = { 0 };

    if (window < 0 || window >= DN2_NUM_WW || !size || size > DN2_BOTF_MAX) {
        return -EINVAL;
    }
    dn2_ww_write(d, window * DN2_WIN_SIZE, image, size);
    c.lower = dn2_botf_lower(window, size);
    return dn2_issue(d, &c, DN2_ISSUE_TIMEOUT_US);
}

int dn2_botf(dn2_t *d, int window, uint16_t dlid, int dwid,
             enum dn2_target to, uint32_t dst, const void *data, size_t len,
             int eflag)
{
    uint8_t img[DN2_BOTF_MAX];
    struct dn2_hdr h;
    uint64_t w;

    if (len > DN2_BOTF_MAX - 2 * DN2_LINE) {
        return -EINVAL;
    }
    memset(&h, 0, sizeof(h));
    h.type = DN2_OP_RVS;
    h.dlid = dlid;
    h.dwid = dwid;
    h.swid = d->wid;
    h.rflag = to == DN2_TO_PW;
    h.lflag = to == DN2_TO_LLCM;
    h.eflag = !!eflag;
    h.size = (uint16_t)(2 * DN2_LINE + len);
    w = dn2_hdr0_encode(&h);
    memcpy(img, &w, 8);
    w = dn2_hdr1_encode(dst, dst);
    memcpy(img + 8, &w, 8);
    memcpy(img + 16, data, len);
    return dn2_botf_raw(d, window, img, 2 * DN2_LINE + len);
}

void dn2_botf_rr_init(dn2_t *d, struct dn2_botf_rr *rr, int windows)
{
    rr->windows = (windows == 2 || windows == 4) ? windows : 1;
    rr->next = 0;
    rr->issued = 0;
    rr->left = 0;
    rr->base = dn2_count(d, DN2_PC_BOTF);
}

/* BOTFs issued through rr that have not left the board: from the last
 * reading, or (fresh) from a new read of the Primitive Counter. */
static unsigned dn2_rr_inflight(dn2_t *d, struct dn2_botf_rr *rr, int fresh)
{
    if (fresh) {
        rr->left = (dn2_count(d, DN2_PC_BOTF) - rr->base) & DN2_PC_MASK;
    }
    return (rr->issued - rr->left) & DN2_PC_MASK;
}

int dn2_botf_rr_ready(dn2_t *d, struct dn2_botf_rr *rr)
{
    return dn2_rr_inflight(d, rr, 0) < (unsigned)rr->windows ||
           dn2_rr_inflight(d, rr, 1) < (unsigned)rr->windows;
}

int dn2_botf_rr_send(dn2_t *d, struct dn2_botf_rr *rr, uint16_t dlid, int dwid,
                     enum dn2_target to, uint32_t dst, const void *data,
                     size_t len, int eflag)
{
    int r;

    /* The window about to be reused must have been read by the NIC. */
    r = DN2_POLL(d, DN2_ISSUE_TIMEOUT_US, dn2_botf_rr_ready(d, rr));
    if (r) {
        return r;
    }
    r = dn2_botf(d, rr->next, dlid, dwid, to, dst, data, len, eflag);
    if (!r) {
        rr->issued = (rr->issued + 1) & DN2_PC_MASK;
        rr->next = (rr->next + 1) % rr->windows;
    }
    return r;
}

int dn2_botf_rr_drain(dn2_t *d, struct dn2_botf_rr *rr, long timeout_us)
{
    return DN2_POLL(d, timeout_us, dn2_rr_inflight(d, rr, 1) == 0);
}

/* --------------------------------------------- RVS / RVL / IPUSH / LHS */

static int dn2_net(dn2_t *d, unsigned op, unsigned dtype, unsigned iter,
                   uint16_t dlid, int dwid, uint32_t arg, uint32_t src,
                   uint32_t dst, const struct dn2_pattern *ex, int flags)
{
    struct dn2_cmd c = {
        .lower = dn2_req_lower(op, dtype, iter, dn2_lid_to_clid(dlid), dwid & 1,
                               !!(flags & DN2_F_EFLAG), arg),
        .upper = dn2_req_upper(src, dst),
        .cmd = !!(flags & DN2_F_TO_PW),
    };

    if (ex) {
        /* Command Ex OTYPE: the VL family for a gather on the sender, the
         * VS family for a landing pattern; the form is what counts. */
        c.ex = dn2_req_ex(dn2_otype_is_rvl(op) ? (DN2_OP_VS | ex->form)
                                                    : (DN2_OP_VL | ex->form),
                          ex->dtype, ex->iter, ex->arg);
        c.ex_valid = 1;
    }
    return dn2_issue(d, &c, DN2_ISSUE_TIMEOUT_US);
}

int dn2_rvs(dn2_t *d, uint16_t dlid, int dwid, uint32_t sd_src, uint32_t dst,
            uint32_t size, const struct dn2_pattern *local, int flags)
{
    return dn2_net(d, DN2_OP_RVS, 0, 0, dlid, dwid, size, sd_src, dst, local, flags);
}

int dn2_rvss(dn2_t *d, uint16_t dlid, int dwid, uint32_t sd_src, uint32_t dst,
             unsigned dtype, unsigned iter, uint32_t stride,
             const struct dn2_pattern *local, int flags)
{
    return dn2_net(d, DN2_OP_RVSS, dtype, iter, dlid, dwid, stride, sd_src, dst,
                   local, flags);
}

int dn2_rvsi(dn2_t *d, uint16_t dlid, int dwid, uint32_t sd_src, uint32_t dst,
             unsigned dtype, unsigned iter, uint32_t remote_list,
             const struct dn2_pattern *local, int flags)
{
    return dn2_net(d, DN2_OP_RVSI, dtype, iter, dlid, dwid, remote_list, sd_src,
                   dst, local, flags);
}

static void dn2_rvl_pw_prepare(dn2_t *d, uint32_t dst, uint32_t total, int flags)
{
    if (flags & DN2_F_TO_PW) {
        dn2_pw_forget(d, dst, total);
    }
}

int dn2_rvl(dn2_t *d, uint16_t dlid, int dwid, uint32_t sd_src, uint32_t dst,
            uint32_t size, const struct dn2_pattern *landing, int flags)
{
    dn2_rvl_pw_prepare(d, dst, size, flags);
    return dn2_net(d, DN2_OP_RVL, 0, 0, dlid, dwid, size, sd_src, dst, landing,
                   flags);
}

int dn2_rvls(dn2_t *d, uint16_t dlid, int dwid, uint32_t sd_src, uint32_t dst,
             unsigned dtype, unsigned iter, uint32_t stride,
             const struct dn2_pattern *landing, int flags)
{
    dn2_rvl_pw_prepare(d, dst, iter * dn2_dtype_bytes(dtype), flags);
    return dn2_net(d, DN2_OP_RVLS, dtype, iter, dlid, dwid, stride, sd_src, dst,
                   landing, flags);
}

int dn2_rvli(dn2_t *d, uint16_t dlid, int dwid, uint32_t sd_src, uint32_t dst,
             unsigned dtype, unsigned iter, uint32_t remote_list,
             const struct dn2_pattern *landing, int flags)
{
    dn2_rvl_pw_prepare(d, dst, iter * dn2_dtype_bytes(dtype), flags);
    return dn2_net(d, DN2_OP_RVLI, dtype, iter, dlid, dwid, remote_list, sd_src,
                   dst, landing, flags);
}

int dn2_ipush(dn2_t *d, uint16_t dlid, int dwid, uint32_t sd_src,
              uint32_t size, int flags)
{
    return dn2_net(d, DN2_OP_IPUSH, flags & DN2_F_PER_MESSAGE ? DN2_IPUSH_PER_MESSAGE : 0, 0,
                   dlid, dwid, size, sd_src, 0, NULL, flags);
}

int dn2_lhsv1(dn2_t *d, uint16_t dlid, int dwid, uint32_t sd_src,
              uint32_t size, int flags)
{
    return dn2_net(d, DN2_OP_LHSV1, flags & DN2_F_PER_MESSAGE ? DN2_IPUSH_PER_MESSAGE : 0, 0,
                   dlid, dwid, size, sd_src, 0, NULL, flags);
}

int dn2_lhsv2(dn2_t *d, uint16_t dlid, int dwid, uint32_t ww_off,
              uint32_t ww_bytes, uint32_t sd_src, uint32_t size, int flags)
{
    /* The prefix is DSTOff[9:0] bytes and may run over window boundaries
     * up to the end of the process's 2 KiB window area (choice #46). */
    if (ww_bytes > DN2_FMASK(DN2_LHSV2_WW_BYTES) || ww_off >= DN2_WIN_AREA || ww_off + ww_bytes > DN2_WIN_AREA ||
        ww_bytes > size) {
        return -EINVAL;
    }
    return dn2_net(d, DN2_OP_LHSV2, flags & DN2_F_PER_MESSAGE ? DN2_IPUSH_PER_MESSAGE : 0, 0,
                   dlid, dwid, size, sd_src, dn2_lhsv2_dst(ww_bytes, ww_off), NULL, flags);
}

/* -------------------------------------------- receive-status ring */

int dn2_status_ring_init(dn2_t *d, uint32_t llcm_off, uint32_t bytes)
{
    uint64_t code = dn2_status_size_reg(bytes);

    if (!code || (llcm_off % DN2_STATUS_REC_SIZE) || llcm_off + bytes > DN2_LLCM_AREA) {
        return -EINVAL;
    }
    dn2_ur_write(d, DN2_UR_STATUS_INIT, llcm_off);
    dn2_ur_write(d, DN2_UR_STATUS_SIZE, code);
    d->st_init = llcm_off;
    d->st_size = bytes;
    d->st_head = llcm_off;
    return 0;
}

int dn2_status_next(dn2_t *d, struct dn2_rx_status *st, long timeout_us)
{
    struct dn2_status_rec rec;
    struct dn2_status_fields f;
    int r;

    if (!d->st_size) {
        return -EINVAL;
    }
    r = DN2_POLL(d, timeout_us, dn2_ur_read(d, DN2_UR_STATUS_ADDR) != d->st_head);
    if (r) {
        return r == -ETIMEDOUT ? 0 : r;
    }
    rec.lower = *(volatile uint64_t *)(d->llcm + d->st_head);
    rec.upper = *(volatile uint64_t *)(d->llcm + d->st_head + 8);
    dn2_status_unpack(&rec, &f);
    st->type = f.type;
    st->dtype = f.dtype;
    st->iter = f.iter;
    st->src_clid = f.clid;
    st->src_wid = f.wid;
    st->size = f.size;
    st->addr = f.addr;
    d->st_head = d->st_init + (d->st_head - d->st_init + DN2_STATUS_REC_SIZE) %
                 d->st_size;
    dn2_ur_write(d, DN2_UR_STATUS_ADDR, d->st_head);
    return 1;
}

/* ----------------------------------------------------- IPUSH rings */

static volatile uint32_t *dn2_amt_entry(dn2_t *d, unsigned amt_value)
{
    uint32_t off = amt_value * DN2_AMT_UNIT;
    uint32_t lo = d->wid * DN2_LLCM_WID_STRIDE;

    if (off < lo || off + DN2_AMT_ENTRY > lo + DN2_LLCM_AREA) {
        return NULL;
    }
    return (volatile uint32_t *)(d->llcm + (off - lo));
}

int dn2_ring_init(dn2_t *d, struct dn2_ring *r, unsigned amt_value,
                  uint32_t base, uint32_t size)
{
    volatile uint32_t *e = dn2_amt_entry(d, amt_value);
    uint32_t units;

    if (!e || size < 16 || (size & 7) || (base & 7) ||
        (d->sdimm_bytes && (uint64_t)base + size > d->sdimm_bytes)) {
        return -EINVAL;
    }
    units = (uint32_t)(((uint64_t)base + size + DN2_IPUSH_AREA_UNIT - 1) /
                       DN2_IPUSH_AREA_UNIT);
    if (units > DN2_IPUSH_AREA_MASK) {
        return -ERANGE;
    }
    if (units > d->ipush_units) {
        dn2_ur_write(d, DN2_UR_IPUSH_AREA_SIZE, units);
        d->ipush_units = units;
    }
    e[DN2_AMT_BASE / 4] = base;
    e[DN2_AMT_SIZE / 4] = size;
    e[DN2_AMT_HEAD / 4] = 0;
    e[DN2_AMT_TAIL / 4] = 0;
    r->amt_value = amt_value;
    r->base = base;
    r->size = size;
    r->head = 0;
    return 0;
}

uint32_t dn2_ring_avail(dn2_t *d, const struct dn2_ring *r, uint32_t *at)
{
    volatile uint32_t *e = dn2_amt_entry(d, r->amt_value);
    uint32_t head = r->head, tail = e[DN2_AMT_TAIL / 4];  /* the head is ours */

    if (at) {
        *at = r->base + head;
    }
    return (tail - head + r->size) % r->size;
}

void dn2_ring_consume(dn2_t *d, struct dn2_ring *r, uint32_t len)
{
    volatile uint32_t *e = dn2_amt_entry(d, r->amt_value);

    len = (len + DN2_RING_ALIGN - 1) & ~(DN2_RING_ALIGN - 1);
    r->head = (r->head + len) % r->size;
    e[DN2_AMT_HEAD / 4] = r->head;     /* stored, never read back */
}

/* ------------------------------------------------------ LH Buffer */

static void dn2_lh_decode(dn2_t *d, uint32_t slot, struct dn2_lh_msg *m)
{
    const volatile uint8_t *e = d->lhb + slot * DN2_LHB_ENTRY;
    struct dn2_lh_entry ent;

    dn2_lh_unpack(*(const volatile uint64_t *)e, *(const volatile uint64_t *)(e + DN2_LINE),
                  &ent);
    m->pointer = ent.pointer;
    m->context = ent.context;
    m->rank = ent.rank;
    m->tag = ent.tag;
    m->size = ent.size;
    memcpy(m->data, (const void *)(e + DN2_LHB_DATA_OFF), DN2_LHB_DATA);
}

static int dn2_lh_flag(dn2_t *d, uint32_t slot, uint64_t flag)
{
    dn2_cpu_clflush(d->lhb + slot * DN2_LHB_ENTRY);
    dn2_cpu_mfence();
    return !!(*(const volatile uint64_t *)(d->lhb + slot * DN2_LHB_ENTRY) & flag);
}

int dn2_lh_next(dn2_t *d, struct dn2_lh_msg *m, long timeout_us)
{
    uint32_t slot = d->lh_head / DN2_LHB_ENTRY;
    int want = (d->lh_uses[slot] + 1) & 1;
    int r;

    /* The tail register says an entry is allocated; its Valid toggle says
     * the envelope is readable (the flags are the thesis's cheap poll). */
    r = DN2_POLL(d, timeout_us,
                 (dn2_ur_read(d, DN2_UR_LHB_ADDR) & DN2_LHB_ADDR_MASK) != d->lh_head &&
                 dn2_lh_flag(d, slot, DN2_LH_VALID) == want);
    if (r) {
        return r == -ETIMEDOUT ? 0 : r;
    }
    dn2_lh_decode(d, slot, m);
    m->complete = dn2_lh_flag(d, slot, DN2_LH_COMPLETE) == want;
    return 1;
}

int dn2_lh_ready(dn2_t *d)
{
    uint32_t slot = d->lh_head / DN2_LHB_ENTRY;

    return dn2_lh_flag(d, slot, DN2_LH_VALID) == ((d->lh_uses[slot] + 1) & 1);
}

int dn2_lh_wait_complete(dn2_t *d, struct dn2_lh_msg *m, long timeout_us)
{
    uint32_t slot = d->lh_head / DN2_LHB_ENTRY;
    int want = (d->lh_uses[slot] + 1) & 1;
    int r = DN2_POLL(d, timeout_us, dn2_lh_flag(d, slot, DN2_LH_COMPLETE) == want);

    if (!r) {
        dn2_lh_decode(d, slot, m);
        m->complete = 1;
    }
    return r;
}

void dn2_lh_release(dn2_t *d)
{
    uint32_t slot = d->lh_head / DN2_LHB_ENTRY;

    d->lh_uses[slot]++;
    d->lh_head = (d->lh_head + DN2_LHB_ENTRY) % DN2_LHB_AREA;
    dn2_ur_write(d, DN2_UR_LHB_ADDR, d->lh_head);
}

/* -------------------------------------------- administration (root) */

/* After a Controller Reset, the board's per-process state is gone. */
static void dn2_forget_state(struct dn2 *d)
{
    d->ex_flag = 0;
    d->ipush_units = 0;
    d->st_init = d->st_size = d->st_head = 0;
    d->lh_head = 0;
    memset(d->lh_uses, 0, sizeof(d->lh_uses));
    d->lid = 0;
    d->sdimm_bytes = 0;
}

int dn2_admin_reset(dn2_t *d)
{
    int r = d->ops->reset(d);

    if (!r) {
        dn2_forget_state(d);
    }
    return r;
}

int dn2_admin_sdimm_init(dn2_t *d, unsigned capacity_code, long timeout_us)
{
    return d->ops->sdimm_init(d, capacity_code, timeout_us);
}

int dn2_admin_mtu(dn2_t *d, unsigned mtu_code)
{
    return d->ops->mtu(d, mtu_code);
}

int dn2_admin_wait_link(dn2_t *d, uint16_t *lid, long timeout_us)
{
    return d->ops->wait_link(d, lid, timeout_us);
}

int dn2_admin_pgid(dn2_t *d, int wid, unsigned pgid)
{
    return d->ops->pgid(d, wid, pgid);
}

int dn2_admin_amt(dn2_t *d, uint16_t sender_lid, int sender_wid, unsigned value)
{
    return d->ops->amt(d, sender_lid, sender_wid, value);
}
