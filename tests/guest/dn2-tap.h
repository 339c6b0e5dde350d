/* SPDX-License-Identifier: MIT */
/*
 * TAP helpers for the multi-rank guest test programs: every rank counts
 * the same checks; rank 0 prints them, other ranks report failures on
 * stderr (which the launchers keep in the node's log).
 */
#ifndef DN2_TAP_H
#define DN2_TAP_H

#include <stdio.h>

static int t_num, t_fail, me;

#define CHECK(cond, ...)                                                  \
    do {                                                                  \
        int _ok = !!(cond);                                               \
        t_num++;                                                          \
        if (!_ok) t_fail++;                                               \
        if (me == 0) {                                                    \
            printf("%s %d - ", _ok ? "ok" : "not ok", t_num);             \
            printf(__VA_ARGS__);                                          \
            printf("\n");                                                 \
            fflush(stdout);                                               \
        } else if (!_ok) {                                                \
            fprintf(stderr, "# rank %d: check %d failed: ", me, t_num);   \
            fprintf(stderr, __VA_ARGS__);                                 \
            fprintf(stderr, "\n");                                        \
        }                                                                 \
    } while (0)

#endif
