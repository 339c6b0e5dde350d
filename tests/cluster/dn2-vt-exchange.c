/* SPDX-License-Identifier: MIT */
/*
 * dn2-vt-exchange: an all-to-all dn2msg exchange whose output shows the
 * order in which messages arrived: a probe for lock-step virtual time
 * (tests/cluster/vt-determinism-test.sh) and the busy load of
 * scripts/bench-vt.sh.  Run on every node of a cluster (DN2_RANKS,
 * DN2_RANK; the driver loaded and the board up: dn2-up).
 *
 *   dn2-vt-exchange [-k K] [-r ROUNDS] [-a SECONDS] [-q] [-b ROUND]
 *
 *   -k K       messages each rank sends to every other rank per round
 *              (default 4; eager sizes 8, 200, 1000, 3000 bytes in turn)
 *   -r ROUNDS  rounds, a barrier after each (default 1)
 *   -a SECONDS start the exchange when the guest's clock reads SECONDS
 *              since boot (CLOCK_MONOTONIC; under virtual time a fixed
 *              virtual time, whatever the boot took); exit 1 if that time
 *              has passed already
 *   -q         one line per round (its receive order as a checksum, its
 *              virtual duration) instead of one line per message
 *   -b ROUND   a fault, to see that a test notices one: from round ROUND
 *              (counted from 0) on, every message received counts as
 *              damaged, so the run goes on as ever and ends FAILED (exit 1),
 *              the same in every run
 *
 * Each round every rank sends its K messages to every other rank, then
 * receives (N-1)*K messages with DN2_ANY_SOURCE/DN2_ANY_TAG and prints,
 * for each, its source, tag, length and the time since the round began
 * (CLOCK_MONOTONIC: under virtual time the guest's virtual clock, so the
 * lines are the same in every run; in real time they differ).  Every
 * message's contents are checked.  Exit status 0 when all arrived intact.
 */
#include "libdimmnet2.h"
#include "dn2msg.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const size_t sizes[] = { 8, 200, 1000, 3000 };
#define NS (sizeof(sizes) / sizeof(sizes[0]))
#define MAXLEN 4096

static uint64_t now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void fill(uint8_t *p, size_t n, int src, int tag)
{
    size_t i;

    for (i = 0; i < n; i++) {
        p[i] = (uint8_t)(src * 131 + tag * 7 + i * 13);
    }
}

int main(int argc, char **argv)
{
    static uint8_t out[MAXLEN], in[MAXLEN], want[MAXLEN];
    int k_per = 4, rounds = 1, quiet = 0, bad_from = -1, opt, me, n, round, peer, k, r, bad = 0;
    double start_at = 0;
    dn2_comm_t *c;
    dn2_t *d;

    while ((opt = getopt(argc, argv, "k:r:a:b:qh")) != -1) {
        switch (opt) {
        case 'k': k_per = atoi(optarg); break;
        case 'r': rounds = atoi(optarg); break;
        case 'a': start_at = atof(optarg); break;
        case 'q': quiet = 1; break;
        case 'b': bad_from = atoi(optarg); break;
        default:
            fprintf(stderr, "usage: dn2-vt-exchange [-k K] [-r ROUNDS] [-a SECONDS] [-q] [-b ROUND]\n");
            return opt == 'h' ? 0 : 2;
        }
    }
    if (k_per < 1 || k_per > 1000 || rounds < 1 || start_at < 0 || start_at > 1e6) {
        fprintf(stderr, "dn2-vt-exchange: -k 1..1000, -r >= 1, -a 0..1000000 seconds\n");
        return 2;
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    r = dn2_open(&d, NULL);
    if (!r) {
        r = dn2_comm_init_env(&c, d, NULL);
    }
    if (r) {
        fprintf(stderr, "dn2-vt-exchange: cannot join the job: %s "
                "(insmod dimmnet2.ko, dn2-up, DN2_RANKS)\n", dn2_strerror(r));
        return 1;
    }
    me = dn2_comm_rank(c);
    n = dn2_comm_size(c);
    if (start_at > 0) {
        uint64_t at = (uint64_t)(start_at * 1e9);
        struct timespec ts = { .tv_sec = (time_t)(at / 1000000000u),
                               .tv_nsec = (long)(at % 1000000000u) };

        if (now_ns() > at) {
            fprintf(stderr, "dn2-vt-exchange: -a %.9g: the clock reads %.9f s already "
                    "(the boot took longer; give a later time)\n", start_at, now_ns() / 1e9);
            return 1;
        }
        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL)) {
        }
    }
    r = dn2_barrier(c);
    for (round = 0; round < rounds && !r; round++) {
        uint64_t t0 = now_ns(), sum = 0;
        int got;

        for (peer = 1; peer < n && !r; peer++) {
            int dest = (me + peer) % n;
            for (k = 0; k < k_per && !r; k++) {
                int tag = round * 1000 + k;
                fill(out, sizes[k % NS], me, tag);
                r = dn2_send(c, dest, tag, out, sizes[k % NS]);
            }
        }
        for (got = 0; got < (n - 1) * k_per && !r; got++) {
            struct dn2_msg_status st;
            r = dn2_recv(c, DN2_ANY_SOURCE, DN2_ANY_TAG, in, MAXLEN, &st);
            if (r) {
                break;
            }
            fill(want, st.len, st.source, st.tag);
            if (st.len != sizes[(st.tag % 1000) % NS] || memcmp(in, want, st.len) ||
                (bad_from >= 0 && round >= bad_from)) {
                bad++;
            }
            sum = sum * 31 + (uint64_t)st.source * 1000003u + (uint64_t)st.tag;
            if (!quiet) {
                printf("rank %d round %d recv %d: from %d tag %d len %zu at +%llu ns\n", me,
                       round, got, st.source, st.tag, st.len,
                       (unsigned long long)(now_ns() - t0));
            }
        }
        if (!r) {
            r = dn2_barrier(c);
        }
        if (quiet && !r) {
            printf("rank %d round %d: %d messages, order %016llx, %llu ns\n", me, round,
                   (n - 1) * k_per, (unsigned long long)sum,
                   (unsigned long long)(now_ns() - t0));
        }
    }
    if (r) {
        printf("rank %d: FAILED: %s\n", me, dn2_strerror(r));
    } else if (bad) {
        printf("rank %d: FAILED: %d messages with wrong contents or length\n", me, bad);
    } else {
        printf("rank %d: %d rounds, all messages intact\n", me, rounds);
    }
    dn2_comm_free(c);
    dn2_close(d);
    return r || bad ? 1 : 0;
}
