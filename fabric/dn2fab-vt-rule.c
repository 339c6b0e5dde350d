/*
 * The lock-step's grant rule (docs/fabric.md "Virtual time"), one copy for
 * the switch (dn2fab-sw-vt.c, over UDP) and the same-host sync domain
 * (dn2fab-shm.c, in the board's build, which has no switch core).
 *
 * SPDX-License-Identifier: MIT
 */
#include <stdint.h>

#include "dn2fab.h"

/* -------------------------------------------------------------- formula */
uint64_t dn2f_vt_d(uint64_t t, uint64_t lookahead, uint64_t quantum)
{
    uint64_t x, r;

    if (t > DN2F_VT_INFINITY - lookahead) {
        return DN2F_VT_INFINITY;
    }
    x = t + lookahead;
    if (quantum <= 1) {
        return x;
    }
    r = x % quantum;
    if (r == 0) {
        return x;
    }
    if (x > DN2F_VT_INFINITY - (quantum - r)) {
        return DN2F_VT_INFINITY;
    }
    return x + (quantum - r);
}


/* The smallest value of v[0..n) and where it is, and the second smallest
 * (the smallest of the others; UINT64_MAX when n == 1). */
static void two_min(const uint64_t *v, unsigned n, uint64_t *m1, unsigned *i1, uint64_t *m2)
{
    unsigned i;

    *m1 = *m2 = DN2F_VT_INFINITY;
    *i1 = 0;
    for (i = 0; i < n; i++) {
        if (v[i] < *m1) {
            *m2 = *m1;
            *m1 = v[i];
            *i1 = i;
        } else if (v[i] < *m2) {
            *m2 = v[i];
        }
    }
    if (n && *m1 == DN2F_VT_INFINITY) {
        *i1 = 0;                /* every value infinite: any index holds it */
    }
}


void dn2f_vt_grants(const uint64_t *e, unsigned n, uint64_t lookahead, uint64_t quantum,
                    uint64_t *g)
{
    uint64_t m1, m2, s1, s2;
    unsigned i, i1, j1;

    if (n == 0) {
        return;
    }
    if (n == 1) {
        g[0] = DN2F_VT_INFINITY;
        return;
    }
    two_min(e, n, &m1, &i1, &m2);
    /* S_i into g (as scratch): min over k != i of E_k is m1, or m2 for i1 */
    for (i = 0; i < n; i++) {
        uint64_t d = dn2f_vt_d(i == i1 ? m2 : m1, lookahead, quantum);
        g[i] = e[i] < d ? e[i] : d;
    }
    two_min(g, n, &s1, &j1, &s2);
    for (i = 0; i < n; i++) {
        g[i] = dn2f_vt_d(i == j1 ? s2 : s1, lookahead, quantum);
    }
}
