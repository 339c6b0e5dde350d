/* SPDX-License-Identifier: MIT */
/*
 * libdimmnet2-fi: the DGRAM endpoint's data operations (FI_EP_DGRAM,
 * FI_MSG): posted receives filled in order from the LH Buffer and the
 * receive ring, sends as one datagram each through the engine below
 * (dn2fi_xmit.c).  The endpoint object itself (open, bind, enable, close)
 * is dn2fi_ep.c's, which installs this file's message table.
 */
#define _GNU_SOURCE
#include "dn2fi.h"
#include "dimmnet2/dn2_uapi.h"

#include <string.h>

static inline struct dn2fi_ep *ep_of(struct fid_ep *fid)
{
    return container_of(fid, struct dn2fi_ep, ep);
}

/* --------------------------------------------------------- receiving */

static size_t iov_len(const struct iovec *iov, size_t n)
{
    size_t i, t = 0;

    for (i = 0; i < n; i++) {
        t += iov[i].iov_len;
    }
    return t;
}

/* Deliver arrived datagrams to posted receives, in order.  A datagram
 * with no receive posted stays in the LH Buffer (the board holds what
 * comes after it): nothing is dropped. */
void dn2fi_dgram_progress(struct dn2fi_ep *ep)
{
    uint8_t *scratch = ep->scratch;

    if (!ep->enabled) {
        return;
    }

    while (ep->rx_count && !dn2fi_cq_full(ep->rxcq)) {
        struct dn2_lh_msg m;
        struct dn2fi_rx *rx;
        uint8_t *buf;
        size_t cap, n, over;
        int r, err = 0;

        /* spin on memory (the LH Buffer), not on a register */
        if (!dn2_lh_ready(ep->d)) {
            return;
        }
        r = dn2_lh_next(ep->d, &m, 0);
        if (r <= 0) {
            return;
        }
        if (!m.complete) {
            return;     /* the rest of it is still arriving */
        }
        rx = &ep->rxq[ep->rx_head];
        cap = iov_len(rx->iov, rx->iov_count);
        /* single buffer: straight in; several: through the scratch */
        buf = rx->iov_count == 1 ? rx->iov[0].iov_base : scratch;
        n = m.size < cap ? m.size : cap;
        if (m.size > DN2FI_MAX_MSG) {
            err = FI_EIO;   /* not ours: a sender outside the protocol */
            n = 0;
        }
        memcpy(buf, m.data, n < DN2_LHB_DATA ? n : DN2_LHB_DATA);
        over = m.size > DN2_LHB_DATA ? m.size - DN2_LHB_DATA : 0;
        if (n > DN2_LHB_DATA) {
            r = dn2fi_ring_read(ep, m.pointer, buf + DN2_LHB_DATA, n - DN2_LHB_DATA);
            if (r) {
                err = FI_EIO;
                DN2FI_WARN(FI_LOG_EP_DATA, "reading the receive ring: %s\n", dn2_strerror(r));
            }
        }
        if (over) {
            dn2_ring_consume(ep->d, &ep->ring, over);
        }
        dn2_lh_release(ep->d);
        if (buf == scratch) {
            size_t i, off = 0;
            for (i = 0; i < rx->iov_count && off < n; i++) {
                size_t k = n - off < rx->iov[i].iov_len ? n - off : rx->iov[i].iov_len;
                memcpy(rx->iov[i].iov_base, scratch + off, k);
                off += k;
            }
        }
        ep->rx_head = (ep->rx_head + 1) % ep->rx_size;
        ep->rx_count--;
        ep->rx_msgs++;
        ep->rx_bytes += n;
        {
            uint64_t flags = FI_RECV | FI_MSG;
            uint64_t data = 0;
            if (m.context & DN2FI_CTX_DATA) {
                flags |= FI_REMOTE_CQ_DATA;
                data = m.tag;
            }
            if (!err && m.size > cap) {
                err = FI_ETRUNC;
            }
            if (err) {
                dn2fi_cq_write_err(ep->rxcq, rx->context, flags, n,
                                   rx->iov[0].iov_base, data, err,
                                   m.size > n ? m.size - n : 0);
            } else if (!ep->rx_selective || (rx->flags & FI_COMPLETION)) {
                dn2fi_cq_write(ep->rxcq, rx->context, flags, n, rx->iov[0].iov_base,
                               data, FI_ADDR_NOTAVAIL);
            }
        }
    }
}

static ssize_t ep_post_recv(struct dn2fi_ep *ep, const struct iovec *iov, size_t count,
                            void *context, uint64_t flags)
{
    struct dn2fi_rx *rx;
    size_t i;

    if (count > DN2FI_IOV_LIMIT || (count && !iov)) {
        return -FI_EINVAL;
    }
    pthread_mutex_lock(&ep->dom->lock);
    if (!ep->enabled) {
        pthread_mutex_unlock(&ep->dom->lock);
        return -FI_EOPBADSTATE;
    }
    if (ep->rx_count == ep->rx_size) {
        dn2fi_dgram_progress(ep);
        pthread_mutex_unlock(&ep->dom->lock);
        return -FI_EAGAIN;
    }
    rx = &ep->rxq[(ep->rx_head + ep->rx_count) % ep->rx_size];
    for (i = 0; i < count; i++) {
        rx->iov[i] = iov[i];
    }
    if (!count) {
        rx->iov[0].iov_base = NULL;
        rx->iov[0].iov_len = 0;
        count = 1;
    }
    rx->iov_count = count;
    rx->context = context;
    rx->flags = flags;
    ep->rx_count++;
    pthread_mutex_unlock(&ep->dom->lock);
    return 0;
}

static ssize_t ep_recv(struct fid_ep *fid, void *buf, size_t len, void *desc,
                       fi_addr_t src, void *context)
{
    struct iovec iov = { .iov_base = buf, .iov_len = len };

    (void)desc; (void)src;
    return ep_post_recv(ep_of(fid), &iov, 1, context, ep_of(fid)->rx_op_flags);
}

static ssize_t ep_recvv(struct fid_ep *fid, const struct iovec *iov, void **desc,
                        size_t count, fi_addr_t src, void *context)
{
    (void)desc; (void)src;
    return ep_post_recv(ep_of(fid), iov, count, context, ep_of(fid)->rx_op_flags);
}

static ssize_t ep_recvmsg(struct fid_ep *fid, const struct fi_msg *msg, uint64_t flags)
{
    if (flags & ~(FI_COMPLETION | FI_MORE | FI_REMOTE_CQ_DATA | FI_MSG | FI_RECV)) {
        return -FI_EBADFLAGS;
    }
    return ep_post_recv(ep_of(fid), msg->msg_iov, msg->iov_count, msg->context, flags);
}

/* Cancel the posted receive of this context (the domain lock held). */
ssize_t dn2fi_dgram_cancel(struct dn2fi_ep *ep, void *context)
{
    size_t i;

    for (i = 0; i < ep->rx_count; i++) {
        struct dn2fi_rx *rx = &ep->rxq[(ep->rx_head + i) % ep->rx_size];
        if (rx->context == context) {
            struct dn2fi_rx keep = *rx;
            size_t j;
            for (j = i; j + 1 < ep->rx_count; j++) {
                ep->rxq[(ep->rx_head + j) % ep->rx_size] =
                    ep->rxq[(ep->rx_head + j + 1) % ep->rx_size];
            }
            ep->rx_count--;
            dn2fi_cq_write_err(ep->rxcq, keep.context, FI_RECV | FI_MSG, 0, NULL, 0,
                               FI_ECANCELED, 0);
            return 0;
        }
    }
    return -FI_ENOENT;
}

/* ----------------------------------------------------------- sending */

static ssize_t ep_sendv_flags(struct dn2fi_ep *ep, const struct iovec *iov, size_t count,
                              fi_addr_t dest, void *context, uint64_t data, uint64_t flags)
{
    const struct dn2fi_addr *a;
    size_t len;
    uint64_t env;
    unsigned ctx = DN2FI_CTX_MSG;
    int want_comp;
    ssize_t ret = dn2fi_send_check(iov, count, flags, DN2FI_MAX_MSG, DN2FI_INJECT, &len);

    if (ret) {
        return ret;
    }
    pthread_mutex_lock(&ep->dom->lock);
    if (!ep->enabled) {
        ret = -FI_EOPBADSTATE;
        goto out;
    }
    a = dn2fi_av_get(ep->av, dest);
    if (!a) {
        DN2FI_INFO(FI_LOG_EP_DATA, "destination %llu is not in the AV\n",
                   (unsigned long long)dest);
        ret = -FI_EADDRNOTAVAIL;
        goto out;
    }
    want_comp = !(flags & FI_INJECT) && (!ep->tx_selective || (flags & FI_COMPLETION));
    if (want_comp && dn2fi_cq_full(ep->txcq)) {
        ret = -FI_EAGAIN;
        goto out;
    }
    if (flags & FI_REMOTE_CQ_DATA) {
        ctx |= DN2FI_CTX_DATA;
    }
    env = dn2_envelope(ctx, (unsigned)((ep->wid << 12) | dn2_lid_to_clid(ep->lid)),
                       (uint32_t)data);
    ret = dn2fi_xmit(ep, a->lid, a->wid, env, iov, count, len);
    if (ret == -FI_EAGAIN) {
        dn2fi_dgram_progress(ep);
        goto out;
    }
    if (ret) {
        goto out;
    }
    /* The data is on the board: the buffer may be reused now. */
    if (want_comp) {
        dn2fi_cq_write(ep->txcq, context, FI_SEND | FI_MSG, len, NULL, 0, FI_ADDR_NOTAVAIL);
    }
out:
    pthread_mutex_unlock(&ep->dom->lock);
    return ret;
}

static ssize_t ep_send(struct fid_ep *fid, const void *buf, size_t len, void *desc,
                       fi_addr_t dest, void *context)
{
    struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };

    (void)desc;
    return ep_sendv_flags(ep_of(fid), &iov, 1, dest, context, 0, ep_of(fid)->tx_op_flags);
}

static ssize_t ep_sendv(struct fid_ep *fid, const struct iovec *iov, void **desc,
                        size_t count, fi_addr_t dest, void *context)
{
    (void)desc;
    return ep_sendv_flags(ep_of(fid), iov, count, dest, context, 0, ep_of(fid)->tx_op_flags);
}

static ssize_t ep_sendmsg(struct fid_ep *fid, const struct fi_msg *msg, uint64_t flags)
{
    if (flags & ~(FI_COMPLETION | FI_INJECT | FI_INJECT_COMPLETE | FI_TRANSMIT_COMPLETE |
                  FI_DELIVERY_COMPLETE | FI_REMOTE_CQ_DATA | FI_MORE | FI_MSG | FI_SEND)) {
        return -FI_EBADFLAGS;
    }
    return ep_sendv_flags(ep_of(fid), msg->msg_iov, msg->iov_count, msg->addr,
                          msg->context, msg->data, flags);
}

static ssize_t ep_inject(struct fid_ep *fid, const void *buf, size_t len, fi_addr_t dest)
{
    struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };

    return ep_sendv_flags(ep_of(fid), &iov, 1, dest, NULL, 0, FI_INJECT);
}

static ssize_t ep_senddata(struct fid_ep *fid, const void *buf, size_t len, void *desc,
                           uint64_t data, fi_addr_t dest, void *context)
{
    struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };

    (void)desc;
    return ep_sendv_flags(ep_of(fid), &iov, 1, dest, context, data,
                          ep_of(fid)->tx_op_flags | FI_REMOTE_CQ_DATA);
}

static ssize_t ep_injectdata(struct fid_ep *fid, const void *buf, size_t len,
                             uint64_t data, fi_addr_t dest)
{
    struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };

    return ep_sendv_flags(ep_of(fid), &iov, 1, dest, NULL, data,
                          FI_INJECT | FI_REMOTE_CQ_DATA);
}

/* The DGRAM endpoint's message operations (dn2fi_ep.c installs them). */
const struct fi_ops_msg dn2fi_dgram_msg_ops = {
    .size = sizeof(struct fi_ops_msg),
    .recv = ep_recv,
    .recvv = ep_recvv,
    .recvmsg = ep_recvmsg,
    .send = ep_send,
    .sendv = ep_sendv,
    .sendmsg = ep_sendmsg,
    .inject = ep_inject,
    .senddata = ep_senddata,
    .injectdata = ep_injectdata,
};
