/* SPDX-License-Identifier: MIT */
/*
 * dn2fab send batch: datagrams for one UDP socket queued while the switch
 * handles one batch of input, then handed to the kernel with sendmmsg(),
 * in the order they were queued (so per destination too), before the next
 * batch is read.  docs/fabric.md, "Batched input and output".
 *
 * A datagram is either copied into the batch's arena, or referenced when
 * the caller guarantees its bytes stay put until the flush (the switch's
 * receive buffers, which it refills only after flushing).  The batch never
 * drops a datagram because the socket is momentarily full: on EAGAIN /
 * ENOBUFS it waits for the socket to become writable and goes on where
 * it stopped (it gives the rest up only after DN2F_TXB_WAITS waits of up
 * to DN2F_TXB_WAIT_MS in a row without progress: a socket stuck for a
 * tenth of a second, which the boards' retransmissions cover); a
 * datagram the kernel refuses for itself (EMSGSIZE, no route...) is
 * counted and skipped, as a failed sendto() was.
 */
#ifndef DN2FAB_BATCH_H
#define DN2FAB_BATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "dn2fab.h"

#ifdef __cplusplus
extern "C" {
#endif

#define DN2F_RX_BATCH       32          /* datagrams per recvmmsg() */
#define DN2F_TXB_MSGS       64          /* datagrams per sendmmsg() */
#define DN2F_TXB_ARENA      (1u << 20)  /* bytes of copied datagrams per flush */
#define DN2F_TXB_WAIT_MS    10          /* one wait for a full socket ... */
#define DN2F_TXB_WAITS      10          /* ... and how many in a row without progress */

struct dn2f_txb_stats {
    uint64_t queued;            /* datagrams added */
    uint64_t sent;              /* datagrams the kernel took */
    uint64_t errors;            /* refused by the kernel (skipped), or left after the wait */
    uint64_t calls;             /* sendmmsg() calls */
    uint64_t flushes;           /* non-empty flushes */
    uint64_t waits;             /* waits for a full socket */
};

struct dn2f_txbatch {
    int fd;
    /* sendmmsg(fd, msgs, n, 0) by default: datagrams taken (> 0) or -errno */
    int (*sendmmsg)(void *opaque, struct mmsghdr *msgs, unsigned n);
    /* poll(fd, POLLOUT, ms) by default: > 0 writable, 0 timed out, < 0 error */
    int (*wait_writable)(void *opaque, int ms);
    void *opaque;
    unsigned n;
    struct mmsghdr msgs[DN2F_TXB_MSGS];
    struct iovec iov[DN2F_TXB_MSGS];
    struct dn2f_addr to[DN2F_TXB_MSGS];
    uint8_t *arena;
    size_t arena_used;
    struct dn2f_txb_stats st;
};

/* A batch for socket fd (the default sendmmsg / wait_writable use it);
 * 0 or -ENOMEM. */
int dn2f_txbatch_init(struct dn2f_txbatch *b, int fd);
void dn2f_txbatch_destroy(struct dn2f_txbatch *b);
/* Queue one datagram (copied unless stable: then buf must stay valid and
 * unchanged until the next flush).  A full batch is flushed first. */
void dn2f_txbatch_add(struct dn2f_txbatch *b, const struct dn2f_addr *to,
                      const void *buf, size_t len, bool stable);
/* Send everything queued, in order; the batch is empty afterwards. */
void dn2f_txbatch_flush(struct dn2f_txbatch *b);

#ifdef __cplusplus
}
#endif
#endif
