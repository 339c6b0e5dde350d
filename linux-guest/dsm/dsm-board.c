/* SPDX-License-Identifier: MIT */
/* libdn2dsm's board transport.  SO-DIMM layout of each process (offsets
 * in its half; dn2msg keeps the first MiB and a bit, docs/dsm.md):
 *   SD_DSM .. +R        home copies: page p at SD_DSM + p x 4 KiB (only the
 *                       pages this node is home of are used)
 *   +R .. +2R           staging: a dirty page's copy, the source of its RVS
 *   +2R .. +2R+4K       landing slot for a page pulled with RVL
 *   +2R+4K .. +8        landing word of a flush read
 * get_page: RVL of the home's copy into the landing slot (receive-status
 * record on completion), then VL through the Prefetch Windows;
 * put_runs: VS of the page into staging, one RVS per changed run into the
 * home's copy (one-sided); flush: an 8-byte RVL from the home, whose reply
 * leaves the home after the RVSs before it were written.
 * Control messages: dn2msg (LHS into the LH Buffer and IPUSH ring). */
#define _GNU_SOURCE
#include "dsm-tp.h"
#include "dn2dsm.h"
#include "dn2msg.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SD_DSM     0x200000u          /* above dn2msg's areas */
#define PW_MASK    0x7u               /* Prefetch Windows 0-2 (dn2msg reads through 3) */
#define MSG_TAG    0x44534d           /* "DSM" */

struct board_tp {
    struct dsm_tp t;
    dn2_t *d;
    dn2_comm_t *c;
    struct dn2_rank tab[DSM_MAX_NODES];
    uint32_t sd_home, sd_stage, sd_land, sd_flush;
    long timeout_us;
};

/* Wait for the receive-status record of our RVL landing at addr. */
static int wait_landed(struct board_tp *b, uint32_t addr)
{
    struct dn2_rx_status rs;

    for (;;) {
        int n = dn2_status_next(b->d, &rs, b->timeout_us);
        if (n < 0) {
            return n;
        }
        if (n == 0) {
            return -ETIMEDOUT;
        }
        if (rs.addr == addr) {
            return 0;
        }
    }
}

static int board_get_page(struct dsm_tp *t, int home, uint32_t p, void *dst)
{
    struct board_tp *b = (struct board_tp *)t;
    uint32_t src = b->sd_home + p * DSM_PAGE;
    int r;

    if (home != t->rank) {
        r = dn2_rvl(b->d, b->tab[home].lid, b->tab[home].wid, src, b->sd_land, DSM_PAGE,
                    NULL, DN2_F_EFLAG);
        if (r || (r = wait_landed(b, b->sd_land))) {
            return r;
        }
        src = b->sd_land;
    }
    return dn2_sd_read(b->d, src, dst, DSM_PAGE, PW_MASK, b->timeout_us);
}

static int board_put_runs(struct dsm_tp *t, int home, uint32_t p, const void *data,
                          const struct dsm_run *runs, int nruns)
{
    struct board_tp *b = (struct board_tp *)t;
    uint32_t lo = runs[0].off, hi = runs[nruns - 1].off + runs[nruns - 1].len;
    int k, r;

    if (home == t->rank) {
        for (k = 0; k < nruns; k++) {
            r = dn2_sd_write(b->d, b->sd_home + p * DSM_PAGE + runs[k].off,
                             (const uint8_t *)data + runs[k].off, runs[k].len,
                             DN2_WIN_ALL, b->timeout_us);
            if (r) {
                return r;
            }
        }
        return 0;
    }
    /* The span of the changes into staging, then one RVS per run. */
    r = dn2_sd_write(b->d, b->sd_stage + p * DSM_PAGE + lo, (const uint8_t *)data + lo,
                     hi - lo, DN2_WIN_ALL, b->timeout_us);
    for (k = 0; !r && k < nruns; k++) {
        r = dn2_rvs(b->d, b->tab[home].lid, b->tab[home].wid,
                    b->sd_stage + p * DSM_PAGE + runs[k].off,
                    b->sd_home + p * DSM_PAGE + runs[k].off, runs[k].len, NULL, 0);
    }
    return r;
}

static int board_flush(struct dsm_tp *t, int home)
{
    struct board_tp *b = (struct board_tp *)t;
    int r;

    if (home == t->rank) {
        return 0;
    }
    r = dn2_rvl(b->d, b->tab[home].lid, b->tab[home].wid, b->sd_home, b->sd_flush, 8,
                NULL, DN2_F_EFLAG);
    return r ? r : wait_landed(b, b->sd_flush);
}

static int board_send(struct dsm_tp *t, int dest, const void *msg, size_t len)
{
    return dn2_send(((struct board_tp *)t)->c, dest, MSG_TAG, msg, len);
}

static int board_recv(struct dsm_tp *t, void *msg, size_t cap, int *src, long timeout_us)
{
    struct dn2_msg_status st;
    int r = dn2_recv(((struct board_tp *)t)->c, DN2_ANY_SOURCE, MSG_TAG, msg, cap, &st);

    (void)timeout_us;   /* the communicator's timeout (set at open) */
    if (r) {
        return r;
    }
    *src = st.source;
    return (int)st.len;
}

static void board_close(struct dsm_tp *t)
{
    struct board_tp *b = (struct board_tp *)t;

    dn2_comm_free(b->c);
    dn2_close(b->d);
    free(b);
}

static const struct dsm_tp_ops board_ops = {
    board_get_page, board_put_runs, board_flush, board_send, board_recv, board_close,
};

int dsm_tp_board_open(struct dsm_tp **out, int rank, int nodes, size_t bytes,
                      unsigned home_block, long timeout_us)
{
    struct board_tp *b = calloc(1, sizeof(*b));
    struct dn2_comm_opts co = { 0 };
    const char *path = getenv("DN2_RANKS");
    static const uint8_t zero[DSM_PAGE];
    uint64_t need;
    uint32_t p;
    int r, n;

    if (!b) {
        return -ENOMEM;
    }
    b->t.ops = &board_ops;
    b->t.rank = rank;
    b->t.nodes = nodes;
    b->t.bytes = bytes;
    b->timeout_us = timeout_us;
    if ((r = dn2_open(&b->d, NULL))) {
        fprintf(stderr, "dsm board: cannot open the board: %s\n", dn2_strerror(r));
        free(b);
        return r;
    }
    n = path ? dn2_read_rank_table(path, b->tab, DSM_MAX_NODES) : -ENOENT;
    if (n < nodes) {
        fprintf(stderr, "dsm board: no rank table for %d nodes ($DN2_RANKS)\n", nodes);
        dn2_close(b->d);
        free(b);
        return n < 0 ? n : -EINVAL;
    }
    b->sd_home = SD_DSM;
    b->sd_stage = SD_DSM + (uint32_t)bytes;
    b->sd_land = SD_DSM + 2 * (uint32_t)bytes;
    b->sd_flush = b->sd_land + DSM_PAGE;
    need = (uint64_t)b->sd_flush + 64;
    if (dn2_sdimm_bytes(b->d) && need > dn2_sdimm_bytes(b->d)) {
        fprintf(stderr, "dsm board: %zu bytes need %llu of SO-DIMM, this process has %llu\n",
                bytes, (unsigned long long)need,
                (unsigned long long)dn2_sdimm_bytes(b->d));
        dn2_close(b->d);
        free(b);
        return -ERANGE;
    }
    /* Our home pages start as zeros. */
    for (p = 0; p < bytes / DSM_PAGE; p++) {
        if ((int)((p / home_block) % (uint32_t)nodes) == rank &&
            (r = dn2_sd_write(b->d, b->sd_home + p * DSM_PAGE, zero, DSM_PAGE, DN2_WIN_ALL,
                              timeout_us))) {
            dn2_close(b->d);
            free(b);
            return r;
        }
    }
    co.eager_limit = DSM_MSG_MAX + 64;
    co.ring_bytes = 256 * 1024;
    co.chunk_bytes = 64 * 1024;
    co.timeout_us = timeout_us;
    if ((r = dn2_comm_init(&b->c, b->d, rank, nodes, b->tab, &co))) {
        fprintf(stderr, "dsm board: dn2_comm_init: %s\n", dn2_strerror(r));
        dn2_close(b->d);
        free(b);
        return r;
    }
    *out = &b->t;
    return 0;
}
