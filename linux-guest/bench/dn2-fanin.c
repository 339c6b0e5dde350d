/*
 * dn2-fanin: many boards sending to one (fan-in through the switch).
 *
 *   DN2_RANKS=f DN2_RANK=r dn2-fanin [--size BYTES] [--count N]
 *
 * One rank per node (scripts/cluster.sh -n K).  Ranks 1..K-1 each send N
 * RDMA writes (RVS, SO-DIMM to SO-DIMM, eflag) of BYTES (default 65536,
 * more than 8, at most 1 MiB; N default 32, at most 1000) to rank 0, all at once; rank 0 takes the
 * status records and prints the aggregate rate:
 *
 *   fanin senders S size B count N us T MBps R
 *   fanin-sender RANK done-us T          (when its last message was in)
 *
 * T runs from rank 0's "go" (sent once every sender has said it is ready)
 * to the last record.  Under lock-step virtual time with timing=thesis
 * (docs/timing.md) the figures are the model's, the same in every run:
 * the senders share the switch's output port to rank 0 (one packet at a
 * time at the port's 800 MB/s) and rank 0's SO-DIMMs.
 *
 * Exit status: 0 done; 1 a board operation failed or timed out; 2 usage.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "libdimmnet2.h"
#include "dn2msg.h"

#define SD_SRC       0x0800000u   /* the sender's data */
#define SD_DST       0x1000000u   /* rank 0: sender i writes at + (i % 8) MiB */
#define SD_SLOT      (1u << 20)
#define LL_STATUS    DN2_LLCM_MAP_STATUS
#define LL_STATUS_LEN DN2_LLCM_MAP_STATUS_LEN
#define TMO          20000000L     /* 20 s for any wait */
#define MAXRANKS     64

static dn2_t *d;

static double now_us(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static void check(int r, const char *what)
{
    if (r < 0) {
        fprintf(stderr, "dn2-fanin: %s: %s\n", what, dn2_strerror(r));
        exit(1);
    }
}

/* The next status record (within TMO), or exit. */
static void next_record(struct dn2_rx_status *st, const char *what)
{
    int r = dn2_status_next(d, st, TMO);

    if (r == 0) {
        fprintf(stderr, "dn2-fanin: no status record within %ld s (%s)\n", TMO / 1000000, what);
        exit(1);
    }
    check(r, what);
}

static int rank_of(const struct dn2_rank *tab, int n, uint16_t clid)
{
    int i;

    for (i = 0; i < n; i++) {
        if (dn2_lid_to_clid(tab[i].lid) == clid) {
            return i;
        }
    }
    return -1;
}

static void usage(void)
{
    fprintf(stderr, "usage: DN2_RANKS=FILE DN2_RANK=R dn2-fanin [--size BYTES] [--count N]\n");
}

int main(int argc, char **argv)
{
    static const struct option lo[] = {
        { "size", required_argument, NULL, 's' },
        { "count", required_argument, NULL, 'n' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    const char *ranks = getenv("DN2_RANKS");
    const char *rs = getenv("DN2_RANK") ? getenv("DN2_RANK") : getenv("DN2_NODE");
    struct dn2_rank tab[MAXRANKS];
    struct dn2_rx_status st;
    unsigned long size = 65536, count = 32;
    int opt, n, me, i;

    while ((opt = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
        switch (opt) {
        case 's': size = strtoul(optarg, NULL, 0); break;
        case 'n': count = strtoul(optarg, NULL, 0); break;
        case 'h': usage(); return 0;
        default: usage(); return 2;
        }
    }
    if (!ranks || size <= 8 || size > SD_SLOT || !count || count > 1000) {
        usage();
        return 2;
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    n = dn2_read_rank_table(ranks, tab, MAXRANKS);
    me = rs ? atoi(rs) : -1;
    if (n < 2 || me < 0 || me >= n) {
        fprintf(stderr, "dn2-fanin: rank table %s: %d ranks, rank %d\n", ranks, n, me);
        return 1;
    }
    check(dn2_open(&d, NULL), "open /dev/dimmnet2-0 (insmod dimmnet2.ko and dn2-up first)");
    check(dn2_status_ring_init(d, LL_STATUS, LL_STATUS_LEN), "status ring");

    if (me > 0) {
        uint32_t dst = SD_DST + (uint32_t)((me - 1) % 8) * SD_SLOT;
        unsigned long k;
        unsigned base;

        /* ready (again every 100 us: rank 0 may not have opened its board
         * yet, and a packet for a process that does not exist is
         * dropped), until rank 0's go */
        for (k = 0;; k++) {
            int r;

            check(dn2_rvs(d, tab[0].lid, tab[0].wid, SD_SRC, dst, 8, NULL, DN2_F_EFLAG),
                  "ready");
            r = dn2_status_next(d, &st, 100);
            check(r, "go");
            if (r > 0) {
                break;
            }
            if (k > 200000) {
                fprintf(stderr, "dn2-fanin: no go from rank 0\n");
                return 1;
            }
        }
        base = dn2_count(d, DN2_PC_RVS);
        for (k = 0; k < count; k++) {
            check(dn2_rvs(d, tab[0].lid, tab[0].wid, SD_SRC, dst, (uint32_t)size, NULL,
                          DN2_F_EFLAG), "RVS");
        }
        /* every request sent before the process lets go of the board */
        check(dn2_wait_count(d, DN2_PC_RVS, base, (unsigned)count, TMO), "the last RVS sent");
        return 0;
    }

    /* rank 0 */
    {
        double t0, t1, done[MAXRANKS] = { 0 };
        unsigned long got[MAXRANKS] = { 0 }, want = (unsigned long)(n - 1) * count, all = 0;
        int ready = 0, seen[MAXRANKS] = { 0 };

        /* every sender's first "ready" (8 bytes; later ones are ignored) */
        while (ready < n - 1) {
            int r;

            next_record(&st, "ready");
            r = rank_of(tab, n, st.src_clid);
            if (r > 0 && !seen[r]) {
                seen[r] = 1;
                ready++;
            }
        }
        t0 = now_us();
        for (i = 1; i < n; i++) {
            check(dn2_rvs(d, tab[i].lid, tab[i].wid, SD_SRC, SD_SRC, 8, NULL, DN2_F_EFLAG), "go");
        }
        while (all < want) {
            int r;

            next_record(&st, "data");
            r = rank_of(tab, n, st.src_clid);
            if (r > 0 && st.size == 8 && size != 8) {
                continue;       /* a late "ready" */
            }
            if (r <= 0 || st.size != size) {
                fprintf(stderr, "dn2-fanin: a record from CLID %u of %u bytes\n",
                        st.src_clid, st.size);
                return 1;
            }
            all++;
            if (++got[r] == count) {
                done[r] = now_us() - t0;
            }
        }
        t1 = now_us() - t0;
        printf("fanin senders %d size %lu count %lu us %.3f MBps %.2f\n", n - 1, size, count,
               t1, (double)want * size / t1);
        for (i = 1; i < n; i++) {
            printf("fanin-sender %d done-us %.3f\n", i, done[i]);
        }
    }
    return 0;
}
