/* SPDX-License-Identifier: MIT */
/*
 * ofi-pingpong: the libfabric provider's own 8-byte ping-pong, no MPI: two
 * ranks open the native RDM endpoint with the hints Open MPI's ofi MTL
 * gives and exchange tagged messages with fi_tsend / fi_trecv, each side
 * waiting in fi_cq_read (the provider's own wait: its spin with PAUSE, then
 * its sleeping reads) for the receive and the send completion.  Measured as
 * tests/mpi/mpi-bench.c measures MPI's: 10 warm-up exchanges, then ITERS
 * timed ones, each half its round trip; rank 0 prints the median as
 *
 *   figure ofi_lat8_us X
 *
 * (the line scripts/bench-mpi.sh --split reads).  Ranks and peers as
 * ofi-test: $DN2_RANK (or $DN2_PMI_RANK under scripts/mpirun.sh) and the
 * rank table $DN2_RANKS; pairs (0,1) only.
 *
 *   ofi-pingpong [ITERS]     (default 200)
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>

#include "ofi-common.h"

#define VER     FI_VERSION(1, 17)
#define TMO_MS  20000
#define TAG     0x51

static int me;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Wait until the completions with contexts a and b (b may be NULL) have
 * come: 0, or -1 on an error or after TMO_MS. */
static int wait_two(struct ctx *c, void *a, void *b)
{
    struct fi_cq_tagged_entry e;
    uint64_t t0 = now_ms();
    int need = b ? 2 : 1;
    ssize_t r;

    for (;;) {
        r = fi_cq_read(c->cq, &e, 1);
        if (r == 1) {
            if (e.op_context == a || (b && e.op_context == b)) need--;
            if (!need) return 0;
            continue;
        }
        if (r != -FI_EAGAIN) {
            fprintf(stderr, "ofi-pingpong: fi_cq_read: %s\n", fi_strerror((int)-r));
            return -1;
        }
        if (now_ms() - t0 > TMO_MS) {
            fprintf(stderr, "ofi-pingpong: no completion in %d ms\n", TMO_MS);
            return -1;
        }
    }
}

static int wait_for(struct ctx *c, void *want) { return wait_two(c, want, NULL); }

static int tsend(struct ctx *c, const void *buf, size_t len, uint64_t tag, void *ctxp)
{
    uint64_t t0 = now_ms();
    ssize_t r;

    while ((r = fi_tsend(c->ep, buf, len, NULL, c->peer, tag, ctxp)) == -FI_EAGAIN) {
        struct fi_cq_tagged_entry e;
        if (fi_cq_read(c->cq, &e, 0) == -FI_EAVAIL || now_ms() - t0 > TMO_MS) break;
    }
    if (r) fprintf(stderr, "ofi-pingpong: fi_tsend: %s\n", fi_strerror((int)-r));
    return r ? -1 : 0;
}

int main(int argc, char **argv)
{
    struct fi_info *h = fi_allocinfo(), *all = NULL, *cur;
    struct ctx c;
    struct addr4 pa;
    const char *rk = getenv("DN2_RANK");
    int iters = argc > 1 ? atoi(argv[1]) : 200, i, ok = 1;
    char sbuf[8], rbuf[8], sc, rc;
    double *t;

    if (!rk) rk = getenv("DN2_PMI_RANK");
    me = rk ? atoi(rk) : 0;
    if (argc > 2 || iters < 1) {
        fprintf(stderr, "usage: ofi-pingpong [ITERS]\n");
        return 2;
    }
    if (me > 1) return 0;
    if (rank_addr(me ^ 1, &pa)) {
        fprintf(stderr, "ofi-pingpong: rank %d not in the rank table $DN2_RANKS\n", me ^ 1);
        return 1;
    }
    /* the hints of Open MPI 4.1's ofi MTL (as ofi-test's hints_native) */
    h->mode = FI_CONTEXT | FI_CONTEXT2;
    h->ep_attr->type = FI_EP_RDM;
    h->caps = FI_TAGGED | FI_LOCAL_COMM | FI_REMOTE_COMM | FI_DIRECTED_RECV;
    h->tx_attr->msg_order = FI_ORDER_SAS;
    h->rx_attr->msg_order = FI_ORDER_SAS;
    h->rx_attr->op_flags = FI_COMPLETION;
    h->tx_attr->op_flags = FI_COMPLETION;
    h->domain_attr->threading = FI_THREAD_DOMAIN;
    h->domain_attr->cq_data_size = sizeof(int);
    h->domain_attr->av_type = FI_AV_MAP;
    h->domain_attr->resource_mgmt = FI_RM_ENABLED;
    h->fabric_attr->prov_name = strdup("dimmnet2");
    memset(&c, 0, sizeof(c));
    if (fi_getinfo(VER, NULL, NULL, 0, h, &all)) {
        fprintf(stderr, "ofi-pingpong: no dimmnet2 provider (FI_PROVIDER_PATH?)\n");
        return 1;
    }
    for (cur = all; cur && strcmp(cur->fabric_attr->prov_name, "dimmnet2"); cur = cur->next) {
    }
    if (!cur) {
        fprintf(stderr, "ofi-pingpong: no native dimmnet2 RDM endpoint offered\n");
        return 1;
    }
    c.info = fi_dupinfo(cur);
    fi_freeinfo(all);
    fi_freeinfo(h);
    if (open_objects(&c) || fi_av_insert(c.av, &pa, 1, &c.peer, 0, NULL) != 1) {
        fprintf(stderr, "ofi-pingpong: endpoint or peer address failed\n");
        return 1;
    }
    /* start: rank 1 announces itself until rank 0 answers GO (a message to
     * an endpoint not yet open is not delivered) */
    if (me == 0) {
        if (fi_trecv(c.ep, rbuf, sizeof(rbuf), NULL, c.peer, 0xAA, 0, &rc) || wait_for(&c, &rc) ||
            tsend(&c, "GO", 3, 0xAB, &sc) || wait_for(&c, &sc)) return 1;
    } else {
        struct fi_cq_tagged_entry e;
        uint64_t t0 = now_ms();
        int go = 0;
        if (fi_trecv(c.ep, rbuf, sizeof(rbuf), NULL, c.peer, 0xAB, 0, &rc)) return 1;
        while (!go && now_ms() - t0 < TMO_MS) {
            if (fi_tinject(c.ep, "READY", 6, c.peer, 0xAA)) return 1;
            for (uint64_t t1 = now_ms(); !go && now_ms() - t1 < 100;) {
                go = fi_cq_read(c.cq, &e, 1) == 1 && e.op_context == &rc;
            }
        }
        if (!go) return 1;
    }

    t = calloc((size_t)iters, sizeof(double));
    for (i = -10; i < iters && ok; i++) {
        double t0 = now_s();
        if (fi_trecv(c.ep, rbuf, 8, NULL, c.peer, TAG, 0, &rc)) { ok = 0; break; }
        if (me == 0) {
            memcpy(sbuf, &i, sizeof(i));
            ok = !tsend(&c, sbuf, 8, TAG, &sc) && !wait_two(&c, &sc, &rc);
            int back;
            memcpy(&back, rbuf, sizeof(back));
            ok = ok && back == i + 1;
        } else {
            int v;
            ok = !wait_for(&c, &rc);
            memcpy(&v, rbuf, sizeof(v));
            v++;
            memcpy(sbuf, &v, sizeof(v));
            ok = ok && !tsend(&c, sbuf, 8, TAG, &sc) && !wait_for(&c, &sc);
        }
        if (i >= 0) t[i] = (now_s() - t0) / 2;
    }
    if (!ok) {
        fprintf(stderr, "ofi-pingpong: rank %d: exchange %d failed\n", me, i);
        return 1;
    }
    qsort(t, (size_t)iters, sizeof(double), cmp);
    if (me == 0) printf("figure ofi_lat8_us %.1f\n", t[iters / 2] * 1e6);
    fflush(stdout);
    close_ctx(&c);
    free(t);
    return 0;
}
