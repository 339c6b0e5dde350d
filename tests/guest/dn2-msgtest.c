/* SPDX-License-Identifier: MIT */
/*
 * dn2-msgtest: dn2msg send/recv/barrier end to end.  TAP from rank 0.
 *
 *   dn2-msgtest                 one board cabled to itself (loopback=on):
 *                               rank 0 = WID 0, rank 1 = WID 1 (forked)
 *   DN2_RANKS=f DN2_RANK=r dn2-msgtest
 *                               one rank per node of a cluster (the job
 *                               launcher's convention, docs/cluster.md)
 *
 * Every rank runs the same schedule; rank 0 checks and prints.  Messages
 * cover the eager path (inline, Write Window, staged) and rendezvous, tags
 * out of order (unexpected queue), wildcards, truncation and barriers.
 */
#include "libdimmnet2.h"
#include "dn2msg.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../tap/dn2-tap.h"

static void fill(uint8_t *p, size_t n, unsigned seed)
{
    size_t i;

    for (i = 0; i < n; i++) {
        p[i] = (uint8_t)(seed * 37 + i * 11 + (i >> 9));
    }
}

static const size_t sizes[] = { 0, 1, 48, 49, 200, 504, 505, 4096, 16384, 16385,
                                100000, 1 << 20 };
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))
#define MAXLEN (1 << 20)

static int run(dn2_comm_t *c)
{
    static uint8_t out[MAXLEN], in[MAXLEN];
    int n = dn2_comm_size(c), peer = me ^ 1;
    struct dn2_msg_status st;
    unsigned i;
    int r, k;

    /* Ping-pong between rank pairs (0,1), (2,3), ...; an odd last rank
     * only joins the barriers. */
    if (peer < n) {
        for (i = 0; i < NSIZES; i++) {
            size_t len = sizes[i];
            int ok = 1;
            if (me & 1) {
                r = dn2_recv(c, peer, (int)i, in, MAXLEN, &st);
                ok = !r && st.len == len;
                if (!r) {
                    r = dn2_send(c, peer, (int)i, in, st.len);
                }
            } else {
                fill(out, len, i);
                r = dn2_send(c, peer, (int)i, out, len);
                if (!r) {
                    memset(in, 0xee, len);
                    r = dn2_recv(c, peer, (int)i, in, MAXLEN, &st);
                }
                ok = !r && st.len == len && st.source == peer && st.tag == (int)i &&
                     !memcmp(in, out, len);
            }
            CHECK(ok, "ping-pong %zu bytes (%s): %s", len,
                  len <= 504 ? "eager, Write Window" :
                  len <= 16384 ? "eager, staged" : "rendezvous", dn2_strerror(r));
        }

        /* Tags out of order: 3 messages, received 2, 0, 1. */
        if (!(me & 1)) {
            for (k = 0; k < 3; k++) {
                fill(out, 1000, 100 + k);
                r = dn2_send(c, peer, 1000 + k, out, 1000);
            }
            r = dn2_recv(c, peer, 2000, in, MAXLEN, &st);   /* the peer's ack */
            CHECK(!r && st.len == 3, "the peer matched three tags out of order (%s)",
                  r ? dn2_strerror(r) : (char *)in);
        } else {
            int good = 0;
            for (k = 2; k >= 0; k--) {
                r = dn2_recv(c, peer, 1000 + k, in, MAXLEN, &st);
                fill(out, 1000, 100 + k);
                good += !r && st.len == 1000 && !memcmp(in, out, 1000);
            }
            r = dn2_send(c, peer, 2000, good == 3 ? "ok" : "no", 3);
            CHECK(good == 3, "matched three tags out of order (%d good)", good);
        }

        /* Wildcards and truncation. */
        if (!(me & 1)) {
            r = dn2_send(c, peer, 77, "wildcard", 9);
            fill(out, 2000, 9);
            if (!r) r = dn2_send(c, peer, 78, out, 2000);
            if (!r) r = dn2_recv(c, DN2_ANY_SOURCE, DN2_ANY_TAG, in, MAXLEN, &st);
            CHECK(!r && st.tag == 79 && st.len == 2, "ANY_SOURCE/ANY_TAG receive, "
                  "and a too-small buffer reported as EMSGSIZE by the peer");
        } else {
            int ok;
            r = dn2_recv(c, DN2_ANY_SOURCE, DN2_ANY_TAG, in, MAXLEN, &st);
            ok = !r && st.tag == 77 && st.source == peer && !strcmp((char *)in, "wildcard");
            r = dn2_recv(c, peer, 78, in, 100, &st);
            ok = ok && r == -EMSGSIZE && st.len == 2000;
            dn2_send(c, peer, 79, ok ? "1" : "0", 2);
            CHECK(ok, "wildcards and truncation");
        }
    }

    /* Barriers. */
    for (k = 0, r = 0; k < 20 && !r; k++) {
        r = dn2_barrier(c);
    }
    CHECK(!r, "20 barriers over %d ranks: %s", n, dn2_strerror(r));
    return tap_failures();
}

static int open_board(dn2_t **d, int wid)
{
    if (access("/dev/dimmnet2-0", F_OK) == 0) {
        return dn2_open(d, NULL);
    }
    return dn2_open_mem(d, dn2_find_base(NULL), wid);
}

int main(void)
{
    const char *ranks = getenv("DN2_RANKS");
    struct dn2_rank tab[2] = { { 1, 0 }, { 1, 1 } };
    dn2_comm_t *c;
    dn2_t *d;
    int r, status;
    pid_t pid;

    if (ranks) {
        /* Cluster: the node's init brought the board up. */
        me = atoi(getenv("DN2_RANK") ? getenv("DN2_RANK") : getenv("DN2_NODE") ?: "0");
        tap_plan(NSIZES + 3);
        r = open_board(&d, 0);
        if (!r) {
            r = dn2_comm_init_env(&c, d, NULL);
        }
        if (r) {
            fprintf(stderr, "rank %d: cannot start: %s\n", me, dn2_strerror(r));
            printf("not ok 1 - rank %d could not join the job: %s\n", me, dn2_strerror(r));
            return 1;
        }
        r = run(c);
        dn2_comm_free(c);
        dn2_close(d);
        tap_diag("%d of %d checks failed on rank 0", tap_failures(), tap_count());
        return r ? 1 : 0;
    }

    /* One loopback board: bring it up, then one process per WID. */
    tap_plan(NSIZES + 4);
    r = dn2_open_mem(&d, dn2_find_base(NULL), 0);
    if (!r) r = dn2_admin_reset(d);
    if (!r) r = dn2_admin_sdimm_init(d, 1, 2000000);
    if (!r) r = dn2_admin_mtu(d, 0x08);
    if (!r) r = dn2_admin_wait_link(d, NULL, 2000000);
    if (!r) r = dn2_admin_pgid(d, 0, 7);
    if (!r) r = dn2_admin_pgid(d, 1, 7);
    CHECK(!r, "board up (loopback, LID 1), PGIDs set: %s", dn2_strerror(r));
    dn2_close(d);
    fflush(stdout);
    pid = fork();
    me = pid == 0 ? 1 : 0;
    r = dn2_open_mem(&d, dn2_find_base(NULL), me);
    if (!r) {
        r = dn2_comm_init(&c, d, me, 2, tab, NULL);
    }
    if (r) {
        fprintf(stderr, "rank %d: cannot start: %s\n", me, dn2_strerror(r));
        return 1;
    }
    r = run(c);
    dn2_comm_free(c);
    dn2_close(d);
    if (pid == 0) {
        _exit(r ? 1 : 0);
    }
    waitpid(pid, &status, 0);
    tap_diag("rank 1 exited with %d; %d of %d checks failed on rank 0",
             WEXITSTATUS(status), tap_failures(), tap_count());
    return (r || !WIFEXITED(status) || WEXITSTATUS(status)) ? 1 : 0;
}
