/* SPDX-License-Identifier: MIT */
/*
 * libdn2dsm: a page-based software distributed shared memory over
 * DIMMnet-2 boards (or, as the baseline, over TCP between the guests),
 * after Fagus on RHiNET (docs/dsm.md).
 *
 *  - one shared region, mapped at the same address on every node;
 *  - 4 KiB pages, each with a home node whose copy is the master: on the
 *    board it lives in the home's SO-DIMM, and other nodes read it with
 *    RVL and write their diffs into it with RVS (one-sided: the home's
 *    CPU takes no part); over TCP a service thread of the home does both;
 *  - release consistency: a write fault makes a twin, a release (unlock,
 *    barrier) sends each dirty page's changed 8-byte words to its home
 *    and the write notices to the manager (node 0); an acquire (lock,
 *    barrier) invalidates the pages others wrote;
 *  - page faults are caught in user space with mprotect + SIGSEGV.
 *
 * The program must be data-race free at 8-byte-word granularity: two
 * nodes may write different words of one page between synchronisations,
 * not different bytes of one word.
 */
#ifndef DN2DSM_H
#define DN2DSM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define DSM_PAGE       4096u
#define DSM_BASE_ADDR  0x500000000000ull   /* same address on every node */
#define DSM_MAX_NODES  64
#define DSM_MAX_LOCKS  64

enum dsm_transport { DSM_TP_BOARD = 0, DSM_TP_TCP = 1 };

struct dsm_opts {
    enum dsm_transport tp;
    size_t bytes;           /* region size (rounded up to pages) */
    unsigned home_block;    /* pages per home block: home(p) = (p / home_block) % nodes */
    long timeout_us;        /* any single wait; default 20 s; a dead peer fails it */
    int rank, nodes;        /* default: $DN2_NODE / $DN2_NODES */
    const char *tcp_hosts;  /* comma list, default $DSM_TCP_HOSTS or 192.168.77.(10+i) */
    int tcp_port;           /* default $DSM_TCP_PORT or 7350 */
};

/* How the library waited (docs/dsm.md, "How it waits"). */
struct dsm_stats {
    uint64_t faults_read, faults_write, pages_fetched, diffs_sent, diff_bytes;
    uint64_t barriers, locks;
    uint64_t wait_us;       /* wall time waiting for a message or a page */
    uint64_t wait_cpu_us;   /* CPU time this thread used during those waits */
    uint64_t wait_calls;    /* waits */
    uint64_t yields;        /* sched_yield() calls (the library makes none) */
};

typedef struct dsm dsm_t;

int dsm_init(dsm_t **out, const struct dsm_opts *o);
void *dsm_base(dsm_t *m);
int dsm_rank(const dsm_t *m);
int dsm_nodes(const dsm_t *m);
int dsm_barrier(dsm_t *m);
int dsm_lock(dsm_t *m, int id);
int dsm_unlock(dsm_t *m, int id);
void dsm_get_stats(const dsm_t *m, struct dsm_stats *s);
void dsm_reset_stats(dsm_t *m);
const char *dsm_tp_name(enum dsm_transport tp);
/* A last barrier, then unmap and close. */
int dsm_finish(dsm_t *m);

#ifdef __cplusplus
}
#endif
#endif
