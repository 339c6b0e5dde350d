/* SPDX-License-Identifier: MIT */
/*
 * dn2msg: tagged message passing between processes on DIMMnet-2 boards,
 * built on libdimmnet2 the way the thesis's DIMMnet-2 MPI used the board
 * (IPUSH + LHS, envelope Context 16 / Rank 14 / Tag 32):
 *
 *  - every rank owns one IPUSH receive ring in its SO-DIMM and receives
 *    envelopes in its LH Buffer;
 *  - eager (len <= eager_limit): one LHSv2 carries the envelope and up to
 *    504 bytes straight from the Write Window; longer eager messages add
 *    the rest from a SO-DIMM staging area (LHSv2's SO-DIMM part);
 *  - rendezvous (longer): the sender stages the data in its SO-DIMM and
 *    sends a request-to-send; the receiver pulls it with RVL straight into
 *    its SO-DIMM landing area and answers FIN; the sender returns then;
 *  - messages from one source are matched in the order they were sent;
 *    unmatched ones wait in an unexpected-message queue;
 *  - barrier: a dissemination barrier on reserved envelopes.
 *
 * One process per WID; one communicator per process.  See docs/library.md.
 */
#ifndef DN2MSG_H
#define DN2MSG_H

#include <stddef.h>
#include <stdint.h>
#include "libdimmnet2.h"

#ifdef __cplusplus
extern "C" {
#endif

#define DN2_ANY_SOURCE (-1)
#define DN2_ANY_TAG    (-1)
#define DN2_MAX_RANKS  16384            /* the envelope's Rank is 14 bits */

/* The rank table entry: where a rank lives (set up at job start). */
struct dn2_rank {
    uint16_t lid;
    uint8_t wid;
};

struct dn2_comm_opts {
    uint32_t eager_limit;       /* bytes; default 16 KiB */
    uint32_t ring_bytes;        /* receive ring; default 1 MiB */
    uint32_t chunk_bytes;       /* rendezvous staging/landing; default 16 MiB */
    long timeout_us;            /* per blocking call; default forever (-1) */
    uint8_t job;                /* job token (nonzero); default from $DN2_JOB */
};

struct dn2_msg_status {
    int source;
    int tag;
    size_t len;                 /* bytes of the message */
};

typedef struct dn2_comm dn2_comm_t;

/* Build a communicator over an open board handle.  table[rank] gives each
 * rank's board and WID; table[rank_self] must be this process.  Sets the
 * board's AMT Address Table for every rank (administration rights
 * needed), the receive ring, status ring and LH Buffer. */
int dn2_comm_init(dn2_comm_t **out, dn2_t *d, int rank_self, int nranks,
                  const struct dn2_rank *table, const struct dn2_comm_opts *opts);

/* The job launcher convention (docs/cluster.md): DN2_RANKS names a file of
 * lines "rank lid wid"; DN2_RANK (or DN2_NODE) is this process's rank. */
int dn2_comm_init_env(dn2_comm_t **out, dn2_t *d, const struct dn2_comm_opts *opts);
/* Read a rank table file; returns the number of ranks or a negative error. */
int dn2_read_rank_table(const char *path, struct dn2_rank *table, int max);

int dn2_comm_rank(const dn2_comm_t *c);
int dn2_comm_size(const dn2_comm_t *c);

int dn2_send(dn2_comm_t *c, int dest, int tag, const void *buf, size_t len);
/* Receive into buf (capacity cap); a longer message is an error (-EMSGSIZE,
 * the message is consumed).  src/tag may be DN2_ANY_SOURCE/DN2_ANY_TAG. */
int dn2_recv(dn2_comm_t *c, int src, int tag, void *buf, size_t cap,
             struct dn2_msg_status *st);
int dn2_barrier(dn2_comm_t *c);
void dn2_comm_free(dn2_comm_t *c);

#ifdef __cplusplus
}
#endif
#endif
