/* SPDX-License-Identifier: MIT */
/*
 * TAP: libdn2dsm's correctness on 2-3 nodes, over the boards or TCP
 * (tests/dsm/dsm-test.sh runs both in one cluster).  Every rank runs the
 * same checks; each records its failures in a shared slot, and rank 0
 * prints one point per check with every node's verdict:
 *   disjoint pages written by their own node, read byte for byte by all;
 *   one page false-shared word by word by every node, several rounds;
 *   a migratory page (a different writer each round);
 *   a counter incremented under a lock (and a page of log written under it);
 *   --kill: the last node exits; the others' next barrier fails, not hangs;
 *   on one node: no diff goes to a home copy (nobody else reads it).
 *
 *   dsm-test [--tp board|tcp] [--kill] [--timeout SECONDS]
 */
#define _GNU_SOURCE
#include "dn2dsm.h"
#include "dn2-tap.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PAGES     64
#define ROUNDS    4
#define INCS      40

/* Layout of the region (pages). */
#define P_VERDICT 0              /* one uint64 per node per check */
#define P_DISJ    1              /* PAGES/2 pages */
#define P_FALSE   (P_DISJ + PAGES / 2)
#define P_MIGR    (P_FALSE + 1)
#define P_LOCK    (P_MIGR + 1)   /* counter and log */

static uint64_t pat(int node, int round, uint32_t i)
{
    return ((uint64_t)(node + 1) << 48) ^ ((uint64_t)round << 32) ^ (i * 2654435761u);
}

static int nodes;
static volatile uint64_t *verdict;   /* [check][node] */

/* Record this node's failures for check k, barrier, and let rank 0 report. */
static int report(dsm_t *m, int k, long fails, const char *what)
{
    int r, i;
    long bad = 0;
    char who[128] = "";

    verdict[k * DSM_MAX_NODES + me] = (uint64_t)fails + 1;
    if ((r = dsm_barrier(m))) {
        fprintf(stderr, "dsm-test: barrier after '%s': %s\n", what, strerror(-r));
        tap_result(false, "%s (barrier failed: %s)", what, strerror(-r));
        return r;
    }
    for (i = 0; i < nodes; i++) {
        uint64_t v = verdict[k * DSM_MAX_NODES + i];
        if (v != 1) {
            bad++;
            snprintf(who + strlen(who), sizeof(who) - strlen(who), " node%d:%lld", i,
                     v ? (long long)v - 1 : -1LL);
        }
    }
    tap_result(bad == 0, "%s%s%s", what, bad ? " -- failures at" : "", who);
    return 0;
}

int main(int argc, char **argv)
{
    struct dsm_opts o = { 0 };
    struct dsm_stats st;
    dsm_t *m;
    uint8_t *base;
    int kill_mode = 0, solo, i, r, round, k = 0;
    long fails;
    uint32_t w;

    o.tp = DSM_TP_BOARD;
    for (i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--tp") && i + 1 < argc) {
            o.tp = !strcmp(argv[++i], "tcp") ? DSM_TP_TCP : DSM_TP_BOARD;
        } else if (!strncmp(argv[i], "--tp=", 5)) {
            o.tp = !strcmp(argv[i] + 5, "tcp") ? DSM_TP_TCP : DSM_TP_BOARD;
        } else if (!strcmp(argv[i], "--kill")) {
            kill_mode = 1;
        } else if (!strcmp(argv[i], "--timeout") && i + 1 < argc) {
            o.timeout_us = atol(argv[++i]) * 1000000L;
        } else {
            fprintf(stderr, "usage: dsm-test [--tp board|tcp] [--kill] [--timeout S]\n");
            return 2;
        }
    }
    me = atoi(getenv("DN2_NODE") ? getenv("DN2_NODE") : "0");
    solo = atoi(getenv("DN2_NODES") ? getenv("DN2_NODES") : "1") == 1;
    o.bytes = (size_t)(P_LOCK + 2) * DSM_PAGE;
    tap_plan(kill_mode ? 2 : 7 + solo);
    r = dsm_init(&m, &o);
    if (!tap_result(r == 0, "[%s] dsm_init: a region of %zu KiB at the same address",
                    dsm_tp_name(o.tp), o.bytes / 1024)) {
        fprintf(stderr, "dsm-test: dsm_init: %s\n", strerror(r < 0 ? -r : r));
        return 1;
    }
    nodes = dsm_nodes(m);
    base = dsm_base(m);
    verdict = (volatile uint64_t *)(base + P_VERDICT * DSM_PAGE);

    if (kill_mode) {
        if (me == nodes - 1) {
            _exit(0);       /* gone without a word */
        }
        r = dsm_barrier(m);
        tap_result(r < 0, "[%s] a killed node fails the others' next barrier with an error "
                   "(%s), no hang", dsm_tp_name(o.tp), r < 0 ? strerror(-r) : "it succeeded");
        return tap_exit_code();
    }

    /* 1. disjoint pages: page j belongs to node j % nodes. */
    for (round = 0; round < 2; round++) {
        for (i = 0; i < PAGES / 2; i++) {
            if (i % nodes == me) {
                uint64_t *pg = (uint64_t *)(base + (size_t)(P_DISJ + i) * DSM_PAGE);
                for (w = 0; w < DSM_PAGE / 8; w++) {
                    pg[w] = pat(me, round, w + (uint32_t)i * 512);
                }
            }
        }
        if ((r = dsm_barrier(m))) {
            break;
        }
    }
    fails = 0;
    for (i = 0; i < PAGES / 2; i++) {
        const uint64_t *pg = (const uint64_t *)(base + (size_t)(P_DISJ + i) * DSM_PAGE);
        for (w = 0; w < DSM_PAGE / 8; w++) {
            fails += pg[w] != pat(i % nodes, 1, w + (uint32_t)i * 512);
        }
    }
    if (report(m, k++, fails, "disjoint pages, each written by one node, read byte for byte by all")) {
        return 1;
    }

    /* 2. false sharing: word w of one page belongs to node w % nodes. */
    fails = 0;
    for (round = 0; round < ROUNDS; round++) {
        uint64_t *pg = (uint64_t *)(base + (size_t)P_FALSE * DSM_PAGE);
        for (w = (uint32_t)me; w < DSM_PAGE / 8; w += (uint32_t)nodes) {
            pg[w] = pat(me, round, w);
        }
        if ((r = dsm_barrier(m))) {
            return 1;
        }
        for (w = 0; w < DSM_PAGE / 8; w++) {
            fails += pg[w] != pat((int)(w % (uint32_t)nodes), round, w);
        }
        /* everyone has read this round before anyone writes the next */
        if ((r = dsm_barrier(m))) {
            return 1;
        }
    }
    if (report(m, k++, fails, "one page false-shared word by word by every node, 4 rounds")) {
        return 1;
    }

    /* 3. migratory page: round j's writer is node j % nodes. */
    fails = 0;
    for (round = 0; round < ROUNDS; round++) {
        uint64_t *pg = (uint64_t *)(base + (size_t)P_MIGR * DSM_PAGE);
        if (round % nodes == me) {
            for (w = 0; w < DSM_PAGE / 8; w++) {
                pg[w] = pg[w] + pat(me, round, w);
            }
        }
        if ((r = dsm_barrier(m))) {
            return 1;
        }
        for (w = 0; w < DSM_PAGE / 8; w++) {
            uint64_t want = 0;
            int j;
            for (j = 0; j <= round; j++) {
                want += pat(j % nodes, j, w);
            }
            fails += pg[w] != want;
        }
        if ((r = dsm_barrier(m))) {
            return 1;
        }
    }
    if (report(m, k++, fails, "a migratory page, a different writer each round, sums exact")) {
        return 1;
    }

    /* 4. a counter and a log under lock 0. */
    {
        volatile uint64_t *cnt = (volatile uint64_t *)(base + (size_t)P_LOCK * DSM_PAGE);
        volatile uint64_t *log = cnt + 1;
        fails = 0;
        for (i = 0; i < INCS; i++) {
            if ((r = dsm_lock(m, 0))) {
                fprintf(stderr, "dsm-test: lock: %s\n", strerror(-r));
                return 1;
            }
            uint64_t c = *cnt;
            if (c < (uint64_t)(DSM_PAGE * 2 / 8 - 1)) {
                log[c] = ((uint64_t)me << 32) | (uint64_t)i;
            }
            *cnt = c + 1;
            if ((r = dsm_unlock(m, 0))) {
                fprintf(stderr, "dsm-test: unlock: %s\n", strerror(-r));
                return 1;
            }
        }
        if ((r = dsm_barrier(m))) {
            return 1;
        }
        fails += *cnt != (uint64_t)INCS * (uint64_t)nodes;
        {
            /* every node's increments appear in order, each exactly once */
            int seen[DSM_MAX_NODES] = { 0 };
            uint64_t c;
            for (c = 0; c < *cnt && c < (uint64_t)(DSM_PAGE * 2 / 8 - 1); c++) {
                int who = (int)(log[c] >> 32);
                if (who >= nodes || (int)(uint32_t)log[c] != seen[who]) {
                    fails++;
                } else {
                    seen[who]++;
                }
            }
        }
        if (report(m, k++, fails, "a counter and a two-page log under one lock: count and order exact")) {
            return 1;
        }
    }

    /* 5. how this node waited (rank 0's figures). */
    dsm_get_stats(m, &st);
    tap_result(st.yields == 0, "[%s] waits: %llu, %llu us waited, %llu us of it on the CPU; "
               "%llu read and %llu write faults, %llu diffs (%llu B); no sched_yield",
               dsm_tp_name(o.tp), (unsigned long long)st.wait_calls,
               (unsigned long long)st.wait_us, (unsigned long long)st.wait_cpu_us,
               (unsigned long long)st.faults_read, (unsigned long long)st.faults_write,
               (unsigned long long)st.diffs_sent, (unsigned long long)st.diff_bytes);
    if (solo) {
        /* One node: its home copies have no reader, so none is written. */
        tap_result(st.diffs_sent == 0, "[%s] one node: %llu diffs (%llu B) sent to home copies "
                   "nobody else reads (want 0)", dsm_tp_name(o.tp),
                   (unsigned long long)st.diffs_sent, (unsigned long long)st.diff_bytes);
    }
    r = dsm_finish(m);
    tap_result(r == 0, "[%s] the last barrier and close", dsm_tp_name(o.tp));
    return tap_exit_code();
}
