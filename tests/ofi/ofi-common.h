/* SPDX-License-Identifier: MIT */
/*
 * What ofi-test.c and ofi-hostile.c share: the provider's 4-byte address,
 * a libfabric endpoint with its objects, the clock, the data pattern, and
 * the launcher's rank table ($DN2_RANKS: "rank lid wid" a line).  Static
 * functions in a header: each program includes it and links nothing more.
 *
 * OFI_DIAG_FILE: where diagnostics ("# ...") go, stderr unless the program
 * defines it before the include (ofi-hostile: stdout, its TAP stream).
 */
#ifndef DN2_OFI_COMMON_H
#define DN2_OFI_COMMON_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>

#ifndef OFI_DIAG_FILE
#define OFI_DIAG_FILE stderr
#endif

struct addr4 { uint16_t lid; uint8_t wid, zero; };

struct ctx {
    struct fi_info *info;
    struct fid_fabric *fab;
    struct fid_domain *dom;
    struct fid_av *av;
    struct fid_cq *cq;
    struct fid_ep *ep;
    fi_addr_t peer;
};

static inline uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static inline void fill(uint8_t *p, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++) {
        p[i] = (uint8_t)(seed * 31 + i * 7 + (i >> 8));
    }
}

static inline int check_data(const uint8_t *p, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++) {
        if (p[i] != (uint8_t)(seed * 31 + i * 7 + (i >> 8))) {
            fprintf(OFI_DIAG_FILE, "# data differs at byte %zu of %zu\n", i, n);
            return 0;
        }
    }
    return 1;
}

/* The address of `rank` in the rank table (its last line): 0, or -1 when
 * the table or the rank is not there (*a untouched). */
static inline int rank_addr(int rank, struct addr4 *a)
{
    const char *path = getenv("DN2_RANKS");
    FILE *f = path ? fopen(path, "r") : NULL;
    char line[128];
    int r, found = -1;
    unsigned lid, wid;

    while (f && fgets(line, sizeof(line), f)) {
        if (sscanf(line, "%d %u %u", &r, &lid, &wid) != 3) continue;
        if (r == rank) {
            a->lid = (uint16_t)lid;
            a->wid = (uint8_t)wid;
            found = 0;
        }
    }
    if (f) fclose(f);
    return found;
}

/* Fabric, domain, AV, CQ and endpoint for c->info, bound and enabled:
 * 0 or the error. */
static inline int open_objects(struct ctx *c)
{
    struct fi_cq_attr cqa = { .format = FI_CQ_FORMAT_TAGGED, .size = 1024 };
    struct fi_av_attr ava = { .type = FI_AV_TABLE };
    int r;

    if ((r = fi_fabric(c->info->fabric_attr, &c->fab, NULL)) ||
        (r = fi_domain(c->fab, c->info, &c->dom, NULL)) ||
        (r = fi_av_open(c->dom, &ava, &c->av, NULL)) ||
        (r = fi_cq_open(c->dom, &cqa, &c->cq, NULL)) ||
        (r = fi_endpoint(c->dom, c->info, &c->ep, NULL)) ||
        (r = fi_ep_bind(c->ep, &c->av->fid, 0)) ||
        (r = fi_ep_bind(c->ep, &c->cq->fid, FI_TRANSMIT | FI_RECV)) ||
        (r = fi_enable(c->ep))) {
        fprintf(OFI_DIAG_FILE, "# open: %s\n", fi_strerror(-r));
        return r;
    }
    return 0;
}

static inline void close_ctx(struct ctx *c)
{
    if (c->ep) fi_close(&c->ep->fid);
    if (c->av) fi_close(&c->av->fid);
    if (c->cq) fi_close(&c->cq->fid);
    if (c->dom) fi_close(&c->dom->fid);
    if (c->fab) fi_close(&c->fab->fid);
    if (c->info) fi_freeinfo(c->info);
    memset(c, 0, sizeof(*c));
}

#endif
