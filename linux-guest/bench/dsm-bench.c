/* SPDX-License-Identifier: MIT */
/*
 * dsm-bench: Fagus's two benchmarks (docs/dsm.md) on libdn2dsm.
 *
 *   dsm-bench --tp board|tcp barrier [--sizes K1,K2,...] [--iters N]
 *     2 nodes.  Per iteration rank 0 writes S bytes of the shared region,
 *     both pass a barrier, rank 1 reads the S bytes (and checks them), both
 *     pass a barrier: the data moved at one barrier.  Prints per size
 *     "BAR size_kib us_per_iter MB/s".
 *   dsm-bench --tp board|tcp lu [--size N]
 *     Doolittle LU without pivoting of an N x N double matrix (default 256)
 *     in the shared region, rows distributed cyclically in blocks of one
 *     page, a barrier per pivot step.  Prints "LU nodes N seconds checksum"
 *     and, for N <= 512, whether the result equals a sequential run bit for
 *     bit.  On 1 node the same code runs (over the DSM, one node).
 * Both print the library's wait figures: "WAIT waits us cpu_us yields".
 */
#define _GNU_SOURCE
#include "dn2dsm.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void print_wait(dsm_t *m, const char *what)
{
    struct dsm_stats st;

    dsm_get_stats(m, &st);
    printf("WAIT %s rank %d waits %llu wait_us %llu cpu_us %llu yields %llu faults %llu/%llu "
           "diffs %llu diff_bytes %llu barriers %llu\n", what, dsm_rank(m),
           (unsigned long long)st.wait_calls, (unsigned long long)st.wait_us,
           (unsigned long long)st.wait_cpu_us, (unsigned long long)st.yields,
           (unsigned long long)st.faults_read, (unsigned long long)st.faults_write,
           (unsigned long long)st.diffs_sent, (unsigned long long)st.diff_bytes,
           (unsigned long long)st.barriers);
}

static int die(const char *what, int r)
{
    fprintf(stderr, "dsm-bench: %s: %s\n", what, strerror(r < 0 ? -r : r));
    return 1;
}

static int bench_barrier(struct dsm_opts *o, const char *sizes, int iters)
{
    dsm_t *m;
    int r, me;
    const char *p = sizes;
    size_t maxk = 512;
    uint64_t bad = 0;

    o->bytes = maxk * 1024;
    if ((r = dsm_init(&m, o))) {
        return die("dsm_init", r);
    }
    me = dsm_rank(m);
    if (dsm_nodes(m) != 2) {
        fprintf(stderr, "dsm-bench barrier: 2 nodes, not %d\n", dsm_nodes(m));
        return 2;
    }
    while (p && *p) {
        size_t k = strtoul(p, NULL, 10), n, i;
        int it;
        double t0, t;
        volatile uint64_t *a = dsm_base(m);

        p = strchr(p, ',');
        p = p ? p + 1 : NULL;
        if (k == 0 || k > maxk) {
            continue;
        }
        n = k * 1024 / 8;
        dsm_reset_stats(m);
        if ((r = dsm_barrier(m))) {
            return die("barrier", r);
        }
        t0 = now_s();
        for (it = 0; it < iters; it++) {
            if (me == 0) {
                for (i = 0; i < n; i++) {
                    a[i] = ((uint64_t)k << 40) + (uint64_t)it * 1000003u + i;
                }
            }
            if ((r = dsm_barrier(m))) {
                return die("barrier", r);
            }
            if (me == 1) {
                for (i = 0; i < n; i++) {
                    bad += a[i] != ((uint64_t)k << 40) + (uint64_t)it * 1000003u + i;
                }
            }
            if ((r = dsm_barrier(m))) {
                return die("barrier", r);
            }
        }
        t = (now_s() - t0) / iters;
        if (me == 0) {
            printf("BAR %s %zu %.1f %.2f\n", dsm_tp_name(o->tp), k, t * 1e6,
                   (double)k * 1024 / t / 1e6);
            fflush(stdout);
        } else if (bad) {
            printf("BAR-ERROR %s %zu %llu words wrong\n", dsm_tp_name(o->tp), k,
                   (unsigned long long)bad);
        }
        print_wait(m, "barrier");
    }
    if ((r = dsm_finish(m))) {
        return die("finish", r);
    }
    return bad ? 1 : 0;
}

/* a[i][j] for the start matrix: diagonally dominant, no pivoting needed */
static double a0(int n, int i, int j)
{
    return i == j ? (double)n : 1.0 / (double)(1 + i + j) + (double)((i * 7 + j * 3) % 5) * 0.01;
}

static void lu_seq(double *a, int n)
{
    int i, j, k;

    for (k = 0; k < n; k++) {
        for (i = k + 1; i < n; i++) {
            double l = a[(size_t)i * n + k] / a[(size_t)k * n + k];
            a[(size_t)i * n + k] = l;
            for (j = k + 1; j < n; j++) {
                a[(size_t)i * n + j] -= l * a[(size_t)k * n + j];
            }
        }
    }
}

static int bench_lu(struct dsm_opts *o, int n)
{
    dsm_t *m;
    int r, me, nodes, i, j, k;
    size_t row = (size_t)n * 8;
    int rpb = row >= DSM_PAGE ? 1 : (int)(DSM_PAGE / row);     /* rows per block */
    double *a, t0, t, sum = 0;

    o->bytes = (size_t)n * row;
    o->home_block = row >= DSM_PAGE ? (unsigned)(row / DSM_PAGE) : 1;
    if ((r = dsm_init(&m, o))) {
        return die("dsm_init", r);
    }
    me = dsm_rank(m);
    nodes = dsm_nodes(m);
    a = dsm_base(m);
#define OWNER(i) (((i) / rpb) % nodes)
    for (i = 0; i < n; i++) {
        if (OWNER(i) == me) {
            for (j = 0; j < n; j++) {
                a[(size_t)i * n + j] = a0(n, i, j);
            }
        }
    }
    if ((r = dsm_barrier(m))) {
        return die("barrier", r);
    }
    dsm_reset_stats(m);
    t0 = now_s();
    for (k = 0; k < n; k++) {
        const double *ak = a + (size_t)k * n;
        for (i = k + 1; i < n; i++) {
            if (OWNER(i) == me) {
                double *ai = a + (size_t)i * n;
                double l = ai[k] / ak[k];
                ai[k] = l;
                for (j = k + 1; j < n; j++) {
                    ai[j] -= l * ak[j];
                }
            }
        }
        if ((r = dsm_barrier(m))) {
            return die("barrier", r);
        }
    }
    t = now_s() - t0;
    if (me == 0) {
        for (i = 0; i < n; i++) {
            sum += a[(size_t)i * n + i];
        }
        printf("LU %s nodes %d n %d seconds %.3f checksum %.10e\n", dsm_tp_name(o->tp), nodes,
               n, t, sum);
        if (n <= 512) {
            double *s = malloc((size_t)n * row);
            int same = 1;
            for (i = 0; i < n; i++) {
                for (j = 0; j < n; j++) {
                    s[(size_t)i * n + j] = a0(n, i, j);
                }
            }
            lu_seq(s, n);
            same = !memcmp(s, a, (size_t)n * row);
            printf("LU-CHECK %s %s\n", dsm_tp_name(o->tp),
                   same ? "equal to the sequential run bit for bit" : "DIFFERS from the sequential run");
            free(s);
            if (!same) {
                return 1;
            }
        }
    }
    print_wait(m, "lu");
    if ((r = dsm_finish(m))) {
        return die("finish", r);
    }
    return 0;
}

int main(int argc, char **argv)
{
    struct dsm_opts o = { 0 };
    const char *sizes = "1,2,4,8,16,32,64,128,256,512", *mode = NULL;
    int iters = 20, n = 256, i;

    o.tp = DSM_TP_BOARD;
    for (i = 1; i < argc; i++) {
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(argv[i], "--tp") && v) {
            o.tp = !strcmp(v, "tcp") ? DSM_TP_TCP : DSM_TP_BOARD;
            i++;
        } else if (!strcmp(argv[i], "--sizes") && v) {
            sizes = v;
            i++;
        } else if (!strcmp(argv[i], "--iters") && v) {
            iters = atoi(v);
            i++;
        } else if (!strcmp(argv[i], "--size") && v) {
            n = atoi(v);
            i++;
        } else if (!strcmp(argv[i], "barrier") || !strcmp(argv[i], "lu")) {
            mode = argv[i];
        } else {
            mode = NULL;
            break;
        }
    }
    if (!mode || iters < 1 || n < 8) {
        fprintf(stderr, "usage: dsm-bench [--tp board|tcp] barrier [--sizes K,...] [--iters N]\n"
                        "       dsm-bench [--tp board|tcp] lu [--size N]\n");
        return 2;
    }
    return !strcmp(mode, "barrier") ? bench_barrier(&o, sizes, iters) : bench_lu(&o, n);
}
