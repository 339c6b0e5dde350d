/* SPDX-License-Identifier: MIT */
/*
 * dn2fab send batch: sendmmsg() of the datagrams queued during one input
 * batch (see dn2fab-batch.h, docs/fabric.md, "Batched input and output").
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1
#endif
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>

#include "dn2fab-batch.h"

static int sys_sendmmsg(void *opaque, struct mmsghdr *msgs, unsigned n)
{
    struct dn2f_txbatch *b = opaque;
    int r = sendmmsg(b->fd, msgs, n, 0);
    return r < 0 ? -errno : r;
}

static int sys_wait_writable(void *opaque, int ms)
{
    struct dn2f_txbatch *b = opaque;
    struct pollfd p = { .fd = b->fd, .events = POLLOUT };
    int r = poll(&p, 1, ms);
    return r < 0 ? -errno : r;
}

int dn2f_txbatch_init(struct dn2f_txbatch *b, int fd)
{
    memset(b, 0, sizeof(*b));
    b->fd = fd;
    b->sendmmsg = sys_sendmmsg;
    b->wait_writable = sys_wait_writable;
    b->opaque = b;
    b->arena = malloc(DN2F_TXB_ARENA);
    return b->arena ? 0 : -ENOMEM;
}

void dn2f_txbatch_destroy(struct dn2f_txbatch *b)
{
    free(b->arena);
    b->arena = NULL;
    b->n = 0;
}

void dn2f_txbatch_add(struct dn2f_txbatch *b, const struct dn2f_addr *to,
                      const void *buf, size_t len, bool stable)
{
    unsigned i;

    if (!stable && len > DN2F_TXB_ARENA) {
        b->st.queued++;
        b->st.errors++;         /* no datagram is that long: the kernel refuses it */
        return;
    }
    if (b->n == DN2F_TXB_MSGS || (!stable && b->arena_used + len > DN2F_TXB_ARENA)) {
        dn2f_txbatch_flush(b);
    }
    i = b->n++;
    b->to[i] = *to;
    if (stable) {
        b->iov[i].iov_base = (void *)buf;
    } else {
        b->iov[i].iov_base = b->arena + b->arena_used;
        if (len) {
            memcpy(b->arena + b->arena_used, buf, len);
        }
        b->arena_used += len;
    }
    b->iov[i].iov_len = len;
    memset(&b->msgs[i], 0, sizeof(b->msgs[i]));
    b->msgs[i].msg_hdr.msg_name = &b->to[i].u.sa;
    b->msgs[i].msg_hdr.msg_namelen = b->to[i].len;
    b->msgs[i].msg_hdr.msg_iov = &b->iov[i];
    b->msgs[i].msg_hdr.msg_iovlen = 1;
    b->st.queued++;
}

void dn2f_txbatch_flush(struct dn2f_txbatch *b)
{
    unsigned i = 0, stuck = 0;

    if (!b->n) {
        return;
    }
    b->st.flushes++;
    while (i < b->n) {
        int r = b->sendmmsg(b->opaque, b->msgs + i, b->n - i);
        b->st.calls++;
        if (r > 0) {
            unsigned k = (unsigned)r > b->n - i ? b->n - i : (unsigned)r;
            i += k;
            b->st.sent += k;
            stuck = 0;
            continue;
        }
        if (r == -EINTR) {
            continue;
        }
        if (r == 0 || r == -EAGAIN || r == -EWOULDBLOCK || r == -ENOBUFS) {
            /* the socket is full: wait, then go on with datagram i */
            if (stuck++ == DN2F_TXB_WAITS) {
                b->st.errors += b->n - i;
                break;
            }
            b->st.waits++;
            (void)b->wait_writable(b->opaque, DN2F_TXB_WAIT_MS);
            continue;
        }
        /* datagram i itself was refused: skip it, as a failed sendto() */
        b->st.errors++;
        i++;
    }
    b->n = 0;
    b->arena_used = 0;
}
