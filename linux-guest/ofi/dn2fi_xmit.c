/* SPDX-License-Identifier: MIT */
/*
 * libdimmnet2-fi: the datagram engine both endpoint types share, below
 * them and above the AV and the CQ (it calls neither).
 *
 * A datagram is one LHSv2 (thesis §7): the 8-byte envelope and the first
 * bytes straight from the Write Window, the rest (messages over 1015
 * bytes) staged in our SO-DIMM with VS first.  The receiving board puts
 * the envelope and 48 bytes into its LH Buffer (host-readable directly)
 * and the rest into the receiver's IPUSH ring in SO-DIMM, which the
 * receiver copies out through its Prefetch Windows.  The board refuses
 * (holds) packets while the LH Buffer or the ring is full, so nothing is
 * dropped once both ends are set up.  The RDM endpoint's LLCM path sends
 * BOTF images through the same four Write Windows (dn2fi_botf_llcm): each
 * window's last request is tracked so that the two kinds share them.
 */
#define _GNU_SOURCE
#include "dn2fi.h"
#include "dimmnet2/dn2_uapi.h"

#include <string.h>

#define DN2FI_TMO_US 5000000L

/* ---------------------------------------------------------- receiving */

/* Copy len bytes of our receive ring at SO-DIMM 'at' (wrapping) into
 * buf, through the four Prefetch Windows. */
int dn2fi_ring_read(struct dn2fi_ep *ep, uint32_t at, uint8_t *buf, size_t len)
{
    uint32_t pos = at - ep->ring.base;
    size_t first = len < ep->ring.size - pos ? len : ep->ring.size - pos;
    int r = dn2_sd_read(ep->d, at, buf, first, 0xf, DN2FI_TMO_US);

    if (!r && first < len) {
        r = dn2_sd_read(ep->d, ep->ring.base, buf + first, len - first, 0xf, DN2FI_TMO_US);
    }
    return r;
}

int dn2fi_dgram_read(struct dn2fi_ep *ep, const void *msg, size_t at, void *dst, size_t n)
{
    const struct dn2_lh_msg *m = msg;
    uint8_t *d = dst;

    if (!n) {
        return 0;
    }
    if (at < DN2_LHB_DATA) {
        size_t k = DN2_LHB_DATA - at < n ? DN2_LHB_DATA - at : n;
        memcpy(d, m->data + at, k);
        d += k;
        at += k;
        n -= k;
    }
    if (!n) {
        return 0;
    }
    {
        uint32_t pos = (m->pointer - ep->ring.base + (uint32_t)(at - DN2_LHB_DATA)) % ep->ring.size;
        uint64_t t0 = ep->stats ? dn2fi_ns() : 0;
        int r = dn2fi_ring_read(ep, ep->ring.base + pos, d, n);
        if (ep->stats) {
            ep->ns_read += dn2fi_ns() - t0;
        }
        if (r) {
            DN2FI_WARN(FI_LOG_EP_DATA, "reading the receive ring: %s\n", dn2_strerror(r));
            return -FI_EIO;
        }
    }
    return 0;
}

/* ------------------------------------------------------------ sending */

/* Has the last request that used Write Window w (an LHSv2, counted by
 * the IPUSH Primitive Counter, or a BOTF, by the BOTF counter) read it?
 * The counter is read from the register mirror (memory, no exit). */
static int win_free(struct dn2fi_ep *ep, int w)
{
    int f = ep->win_fam[w];
    unsigned left;

    if (!ep->win_busy[w]) {
        return 1;
    }
    left = (dn2_count(ep->d, f ? DN2_PC_BOTF : DN2_PC_IPUSH) - ep->pc_base[f]) & DN2_PC_MASK;
    if (((left - ep->win_seq[w]) & DN2_PC_MASK) <= DN2_PC_MASK / 2) {
        ep->win_busy[w] = 0;
        return 1;
    }
    return 0;
}

/* Write Window half h (windows 2h, 2h + 1) free for an LHSv2. */
static int half_free(struct dn2fi_ep *ep, int h)
{
    return win_free(ep, 2 * h) && win_free(ep, 2 * h + 1);
}

/* Copy the part of a message beyond the Write Window prefix into SO-DIMM
 * staging slot h with VS: through all four windows when the other half's
 * last LHSv2 has left (its prefix is no longer needed; normally so, since
 * an idle board runs the LHSv2 inside its doorbell), else through the two
 * windows of half h.  Four windows halve the Controller Status reads per
 * byte (dn2-copybench: 386 against 265 MB/s in one guest). */
static int stage(struct dn2fi_ep *ep, int h, const uint8_t *src, size_t len)
{
    unsigned mask = half_free(ep, h ^ 1) ? DN2_WIN_ALL : 3u << (2 * h);

    return dn2_sd_write(ep->d, DN2FI_SD_STAGE + (uint32_t)h * ep->slot, src, len, mask,
                        DN2FI_TMO_US);
}

/* One datagram: the envelope and up to 1015 bytes straight from the
 * Write Window, the rest staged in SO-DIMM first; one LHSv2.  Never
 * blocks on the board: a Write Window half still in use or a full
 * Request FIFO means -FI_EAGAIN (the peer may be waiting for us to drain
 * our own receive side). */
int dn2fi_xmit(struct dn2fi_ep *ep, uint16_t lid, int wid, uint64_t env,
               const struct iovec *iov, size_t count, size_t len)
{
    uint8_t *gather = ep->gather;
    size_t i, off;
    int h = ep->tx_next, r;

    if (len > DN2FI_INJECT + ep->slot) {
        return -FI_EMSGSIZE;
    }
    uint64_t t0 = ep->stats ? dn2fi_ns() : 0, t1 = 0, t2 = 0;

    if (!half_free(ep, h)) {
        ep->busy_half++;
        return -FI_EAGAIN;
    }
    if (dn2_ctl_status(ep->d) & (DN2_CS_REQ_PENDING | DN2_CS_FIFO_AFULL)) {
        ep->busy_fifo++;
        return -FI_EAGAIN;
    }
    {
        /* The staged part, message bytes [DN2FI_INJECT, len), goes to the
         * board straight from the caller's buffer when one iov holds it
         * all (the usual case: a header iov, then the user's data), so only
         * the Write Window prefix is gathered; else everything is. */
        const uint8_t *staged = gather + DN2FI_WW_PREFIX_MAX;
        size_t need = DN2FI_ENV + len, o = DN2FI_INJECT;

        if (len > DN2FI_INJECT) {
            for (i = 0; i < count && o >= iov[i].iov_len; i++) {
                o -= iov[i].iov_len;
            }
            if (i < count && iov[i].iov_len - o == len - DN2FI_INJECT) {
                staged = (const uint8_t *)iov[i].iov_base + o;
                need = DN2FI_WW_PREFIX_MAX;
            }
        }
        memcpy(gather, &env, DN2FI_ENV);
        for (i = 0, off = DN2FI_ENV; i < count && off < need; i++) {
            size_t n = iov[i].iov_len < need - off ? iov[i].iov_len : need - off;
            memcpy(gather + off, iov[i].iov_base, n);
            off += n;
        }
        if (len > DN2FI_INJECT && (r = stage(ep, h, staged, len - DN2FI_INJECT))) {
            return dn2fi_errno(r);
        }
    }
    {
        uint32_t pre = len > DN2FI_INJECT ? DN2FI_WW_PREFIX_MAX : (uint32_t)(DN2FI_ENV + len);
        uint32_t ww_off = (uint32_t)h * 2 * DN2_WIN_SIZE;
        if (ep->stats) {
            t1 = dn2fi_ns();
        }
        dn2_ww_write(ep->d, ww_off, gather, pre);
        if (ep->stats) {
            t2 = dn2fi_ns();
        }
        r = dn2_lhsv2(ep->d, lid, wid, ww_off, pre,
                      DN2FI_SD_STAGE + (uint32_t)h * ep->slot,
                      (uint32_t)(DN2FI_ENV + len), 0);
    }
    if (r) {
        return dn2fi_errno(r);
    }
    if (ep->stats) {
        uint64_t t3 = dn2fi_ns();
        ep->ns_stage += t1 - t0;    /* gather copy + VS staging */
        ep->ns_ww += t2 - t1;
        ep->ns_issue += t3 - t2;
        if (t3 - t2 > ep->ns_issue_max) {
            ep->ns_issue_max = t3 - t2;
        }
        ep->issue_slow += t3 - t2 > 1000000;
    }
    ep->tx_bytes += len;
    ep->pc_issued[0] = (ep->pc_issued[0] + 1) & DN2_PC_MASK;
    for (i = 0; i < 2; i++) {
        ep->win_busy[2 * h + i] = 1;
        ep->win_fam[2 * h + i] = 0;
        ep->win_seq[2 * h + i] = ep->pc_issued[0];
    }
    ep->tx_next = h ^ 1;
    ep->tx_msgs++;
    return 0;
}

/* One BOTF image (thesis Table 4.2: an image typed RVS with lflag=1
 * lands in the receiver's LLCM): bytes [off, off + n) of the iovs, n at
 * most DN2FI_BOTF_DATA, to LLCM offset dst of process (lid, wid).  The
 * header and the data are written straight into the next Write Window of
 * the round robin and the board is rung with the Lower word alone.
 * -FI_EAGAIN when that window's last request has not read it yet or the
 * Request FIFO is full: nothing was issued. */
int dn2fi_botf_llcm(struct dn2fi_ep *ep, uint16_t lid, int wid, uint32_t dst,
                    const struct iovec *iov, size_t count, size_t off, size_t n)
{
    int w = ep->bw_next, r;
    struct dn2_hdr hd;
    struct dn2_cmd c = { 0 };
    uint64_t hw[2], t0 = ep->stats ? dn2fi_ns() : 0;
    size_t i, base = 0, done = 0;

    if (!n || n > DN2FI_BOTF_DATA || dst + n > DN2_LLCM_AREA) {
        return -FI_EINVAL;
    }
    if (!win_free(ep, w)) {
        ep->busy_half++;
        return -FI_EAGAIN;
    }
    if (dn2_ctl_status(ep->d) & (DN2_CS_REQ_PENDING | DN2_CS_FIFO_AFULL)) {
        ep->busy_fifo++;
        return -FI_EAGAIN;
    }
    memset(&hd, 0, sizeof(hd));
    hd.type = DN2_OP_RVS;
    hd.dlid = lid;
    hd.dwid = (uint8_t)wid;
    hd.swid = (uint8_t)ep->wid;
    hd.lflag = 1;
    hd.size = (uint16_t)(2 * DN2_LINE + n);
    hw[0] = dn2_hdr0_encode(&hd);
    hw[1] = dn2_hdr1_encode(dst, dst);
    /* one piece of one iov (the usual case) goes straight in; else the
     * image is gathered first */
    for (i = 0; i < count && off >= base + iov[i].iov_len; i++) {
        base += iov[i].iov_len;
    }
    if (i < count && off + n <= base + iov[i].iov_len) {
        dn2_ww_write(ep->d, (uint32_t)w * DN2_WIN_SIZE + 2 * DN2_LINE,
                     (const uint8_t *)iov[i].iov_base + (off - base), n);
    } else {
        for (; i < count && done < n; i++) {
            size_t in = off + done - base, k = iov[i].iov_len - in;
            if (k > n - done) {
                k = n - done;
            }
            memcpy(ep->gather + done, (const uint8_t *)iov[i].iov_base + in, k);
            done += k;
            base += iov[i].iov_len;
        }
        if (done < n) {
            return -FI_EINVAL;
        }
        dn2_ww_write(ep->d, (uint32_t)w * DN2_WIN_SIZE + 2 * DN2_LINE, ep->gather, n);
    }
    dn2_ww_write(ep->d, (uint32_t)w * DN2_WIN_SIZE, hw, sizeof(hw));
    c.lower = dn2_botf_lower((unsigned)w, (unsigned)(2 * DN2_LINE + n));
    if ((r = dn2_issue(ep->d, &c, DN2FI_TMO_US))) {
        return dn2fi_errno(r);
    }
    ep->pc_issued[1] = (ep->pc_issued[1] + 1) & DN2_PC_MASK;
    ep->win_busy[w] = 1;
    ep->win_fam[w] = 1;
    ep->win_seq[w] = ep->pc_issued[1];
    ep->bw_next = (w + 1) % DN2_NUM_WW;
    ep->tx_bytes += n;
    ep->botf_images++;
    if (ep->stats) {
        ep->ns_botf += dn2fi_ns() - t0;
    }
    return 0;
}

int dn2fi_send_check(const struct iovec *iov, size_t count, uint64_t flags, size_t max,
                     size_t inject_max, size_t *len)
{
    size_t i, t = 0;

    if (count > DN2FI_IOV_LIMIT || (count && !iov)) {
        return -FI_EINVAL;
    }
    for (i = 0; i < count; i++) {
        t += iov[i].iov_len;
    }
    *len = t;
    if (t > max || ((flags & FI_INJECT) && t > inject_max)) {
        return -FI_EMSGSIZE;
    }
    return 0;
}
