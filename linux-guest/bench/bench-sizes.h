/* SPDX-License-Identifier: MIT */
/* The benchmarks' --sizes LIST: "8,64,1k,4K,1m" (k/K = KiB, m/M = MiB). */
#ifndef DN2_BENCH_SIZES_H
#define DN2_BENCH_SIZES_H

#include <stdlib.h>
#include <string.h>

/* Parse list into out[] (at most max sizes); sizes outside [lo, hi] are
 * dropped.  Returns how many were stored. */
static inline size_t bench_parse_sizes(const char *list, size_t *out, size_t max,
                                       size_t lo, size_t hi)
{
    char *l = strdup(list), *tok, *sp = NULL;
    size_t n = 0;

    if (!l) {
        return 0;
    }
    for (tok = strtok_r(l, ",", &sp); tok && n < max; tok = strtok_r(NULL, ",", &sp)) {
        char *e;
        size_t v = strtoul(tok, &e, 0);

        if (*e == 'k' || *e == 'K') {
            v <<= 10;
        }
        if (*e == 'm' || *e == 'M') {
            v <<= 20;
        }
        if (v >= lo && v <= hi) {
            out[n++] = v;
        }
    }
    free(l);
    return n;
}

#endif
