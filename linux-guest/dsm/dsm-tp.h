/* SPDX-License-Identifier: MIT */
/* The transport under libdn2dsm: the one switch between board and TCP. */
#ifndef DSM_TP_H
#define DSM_TP_H

#include <stddef.h>
#include <stdint.h>

struct dsm_run { uint32_t off, len; };   /* bytes within a page, 8-aligned */

struct dsm_tp;

struct dsm_tp_ops {
    /* Copy home's master copy of page p into dst (DSM_PAGE bytes). */
    int (*get_page)(struct dsm_tp *t, int home, uint32_t p, void *dst);
    /* Write the runs of page data (the local copy) into home's copy. */
    int (*put_runs)(struct dsm_tp *t, int home, uint32_t p, const void *data,
                    const struct dsm_run *runs, int nruns);
    /* Return once every put to home so far is in home's copy. */
    int (*flush)(struct dsm_tp *t, int home);
    /* Small control messages (<= 8 KiB), in order per pair. */
    int (*send)(struct dsm_tp *t, int dest, const void *msg, size_t len);
    /* Next message from anyone: its length (> 0), -ETIMEDOUT, -EPIPE. */
    int (*recv)(struct dsm_tp *t, void *msg, size_t cap, int *src, long timeout_us);
    void (*close)(struct dsm_tp *t);
};

struct dsm_tp {
    const struct dsm_tp_ops *ops;
    int rank, nodes;
    size_t bytes;
};

#define DSM_MSG_MAX 8192u

int dsm_tp_board_open(struct dsm_tp **out, int rank, int nodes, size_t bytes,
                      unsigned home_block, long timeout_us);
int dsm_tp_tcp_open(struct dsm_tp **out, int rank, int nodes, size_t bytes,
                    const char *hosts, int port, long timeout_us);

#endif
