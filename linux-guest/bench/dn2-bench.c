/* SPDX-License-Identifier: MIT */
/*
 * dn2-bench: the thesis's chapter 6/7 measurements on two DIMMnet-2 boards
 * driven through the Linux driver (docs/benchmarks-guest.md).
 *
 *   DN2_RANKS=f DN2_RANK=r dn2-bench [options]   one rank per node (cluster)
 *   dn2-bench [options]                          one board cabled to itself
 *                                                (loopback=on): WID 0 and
 *                                                WID 1, forked
 *
 *   --full          longer sweeps (every thesis size range, more iterations)
 *   --only LIST     comma list of: botf, botf-big (default with --full), rvs,
 *                   ipush, lhs; probe (only when named: where the time goes)
 *   --udp FILE      udp-bench results measured in the same run: printed next
 *                   to the DIMMnet-2 figures with ratios
 *   --sizes LIST    only these sizes (each table keeps those in its range)
 *   --scale X       multiply every iteration count by X (default 1)
 *   --poll P        how the host waits for the board:
 *                     sleep[:US]  (default, 1 µs) poll, nanosleep between looks
 *                     hybrid[:US] spin for US µs (default 30), then as sleep
 *                     spin[:US]   spin, re-reading a register every US µs
 *                     tight       the library's loops (registers back to back)
 *                   (all but tight poll the status ring in LLCM memory)
 *   -q              rank 0 prints only the tables (no progress on stderr)
 *   --stream-detail every unidirectional stream, on stderr: rank 0 the time
 *                   to issue it and to see the answer, its naps, the longest
 *                   nap; rank 1 its naps since its previous stream (the
 *                   barrier before this one included) ("Finding where the
 *                   time goes" in docs/benchmarks-guest.md)
 *
 * Ping-pong figures are the median round trip / 2; a bandwidth is the
 * median of 3 streams of N messages each.
 *
 * The board must be up (insmod dimmnet2.ko; dn2-up).  Both ranks run the
 * same schedule; rank 0 prints the tables, with the thesis's figures
 * (thesis ch. 6 and 7, by table and page) beside ours.  What is measured:
 *
 *  BOTF   a message of S bytes is ceil(S / 496) BOTF images sent round robin
 *         over 1, 2 or 4 Write Windows (dn2_botf_rr); the last image carries
 *         eflag, and the receiver polls its receive-status ring for that
 *         record (one per message).
 *           uni:  rank 0 sends N messages; rank 1 takes N records and
 *                 answers with one BOTF into rank 0's LLCM; MB/s = N*S /
 *                 (first issue .. answer seen), i.e. delivered bandwidth
 *                 (the thesis timed the sender only);
 *           bi:   both send N messages, then take the peer's N records;
 *                 MB/s = 2*N*S / the slower rank's time;
 *           ping-pong: RTT/2 in µs; MB/s = S / (RTT/2).
 *  RVS    SO-DIMM to SO-DIMM RDMA write of S bytes with eflag; the same
 *         three patterns; ping-pong also "+copy": the receiver copies the
 *         message out of its SO-DIMM into host memory (VL through the four
 *         Prefetch Windows, then CPU copy), as the thesis's §6.4.
 *  IPUSH vs PUSH  ping-pong: PUSH = RVS to a fixed address with eflag;
 *         IPUSH = the receiver's ring (per-packet status records, summed to
 *         S, then the ring head advanced); "+copy" as above.
 *  LHS    one tagged message (8-byte envelope + S bytes) each way, received
 *         into host memory, the four patterns of Fig 7.9 (7.2.2): IPUSH-only
 *         (BOTF of an IPUSH packet; status record, the envelope's VL out of
 *         the ring, then the data's), IPUSH+LHSv1 (BOTF with lflag; the LH
 *         entry's flags polled, envelope + 48 bytes from it, a VL for the
 *         rest), VL+IPUSH+LHSv1 (the data VLed out of the sender's SO-DIMM
 *         into that BOTF) and LHSv2 (envelope from the Write Window, data
 *         from SO-DIMM).
 *
 * The last message of every ping-pong is checked against the sender's
 * pattern (LHS: every message), every status record's sender, type and
 * size too; a mismatch, a 10 s timeout or a board error (Controller Status
 * bits 17-20) stops the run with the board's state printed.
 *
 * Synchronisation between the ranks needs no other network: a start
 * handshake and barriers are BOTFs (no eflag) into the peer's LLCM.
 */
#define _GNU_SOURCE
#include "libdimmnet2.h"
#include "dn2msg.h"
#include "bench-sizes.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* ------------------------------------------------------------ layout */

/* LLCM (ours; the library's LLCM map, libdimmnet2.h): the peer writes
 * the control words with BOTF */
#define LL_HELLO     (DN2_LLCM_MAP_CTL + 0x000u)
#define LL_BARRIER   (DN2_LLCM_MAP_CTL + 0x010u)
#define LL_ACK       (DN2_LLCM_MAP_CTL + 0x020u)
#define LL_XCHG      (DN2_LLCM_MAP_CTL + 0x030u)  /* value at +0, sequence at +8 */
#define LL_AMT       DN2_LLCM_MAP_AMT             /* our IPUSH ring's AMT entry */
#define LL_STATUS    DN2_LLCM_MAP_STATUS
#define LL_STATUS_LEN DN2_LLCM_MAP_STATUS_LEN     /* 255 records */

/* SO-DIMM (ours) */
#define SD_RING      0x0000000u /* IPUSH ring */
#define SD_RING_LEN  (4u << 20)
#define SD_SRC       0x0800000u /* our pattern, 2 MiB */
#define SD_DST       0x1000000u /* the peer writes here */
#define SD_STAGE     0x1800000u /* LHS / IPUSH-only staging */
#define SD_SPAN      (2u << 20)

#define BOTF_DATA    (DN2_BOTF_MAX - 2 * DN2_LINE)  /* 496 */
#define TMO          10000000L                      /* 10 s for any wait */
#define MAXMSG       (1u << 20)
#define MAX_STREAM   200        /* messages in flight < status ring room */

/* ------------------------------------------------------------ state */

static dn2_t *d;
static int me, peer_wid, quiet, full;
static uint16_t my_lid, peer_lid;
static double scale = 1.0;
static struct dn2_ring ring;
static uint64_t bar_seq, ack_seq, xchg_seq;
static uint8_t *my_pat, *peer_pat, *rxbuf;
static const char *cur_test = "setup";

/* udp-bench results (size -> figure) */
#define UDP_MAX 64
static struct { size_t size; double pp_us, st_mbs, st_loss; unsigned pp_lost; } udp[UDP_MAX];
static int n_udp;

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static void progress(const char *fmt, ...)
{
    va_list ap;

    if (quiet || me) {
        return;
    }
    va_start(ap, fmt);
    fprintf(stderr, "[dn2-bench] ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
}

/* Everything the board tells about itself, for a failure report. */
static void board_state(FILE *f)
{
    uint64_t cs = dn2_ctl_status(d), pc = dn2_prim_counter(d);
    volatile uint32_t *amt = (volatile uint32_t *)(dn2_llcm(d) + LL_AMT);

    fprintf(f, "  rank %d (LID %u WID %d): Controller Status 0x%llx "
            "(rx error state %llu, rx overflow %llu, refused %llu, status ring %s)\n",
            me, my_lid, dn2_wid(d), (unsigned long long)cs,
            (unsigned long long)dn2_cs_rx_err(cs), (unsigned long long)!!(cs & DN2_CS_RX_OVF),
            (unsigned long long)!!(cs & DN2_CS_REQ_ERROR),
            cs & DN2_CS_STATUS_FULL ? "full" : cs & DN2_CS_STATUS_EMPTY ? "empty" : "non-empty");
    fprintf(f, "  Primitive Counter: BOTF %u VL %u VS %u RVL %u RVS %u IPUSH %u; "
            "Packet Counter %llu\n",
            dn2_pc_field(pc, DN2_PC_BOTF), dn2_pc_field(pc, DN2_PC_VL),
            dn2_pc_field(pc, DN2_PC_VS), dn2_pc_field(pc, DN2_PC_RVL),
            dn2_pc_field(pc, DN2_PC_RVS), dn2_pc_field(pc, DN2_PC_IPUSH),
            (unsigned long long)dn2_packet_counter(d));
    fprintf(f, "  status tail 0x%llx, LH tail 0x%llx, Module State 0x%llx, PW flags 0x%llx, "
            "IPUSH ring head %u tail %u\n",
            (unsigned long long)dn2_ur_read(d, DN2_UR_STATUS_ADDR),
            (unsigned long long)dn2_ur_read(d, DN2_UR_LHB_ADDR),
            (unsigned long long)dn2_ur_read(d, DN2_UR_MODULE_STATE),
            (unsigned long long)dn2_ur_read(d, DN2_UR_PW_FLAG),
            amt[DN2_AMT_HEAD / 4], amt[DN2_AMT_TAIL / 4]);
    fprintf(f, "  control words: hello %llu barrier %llu ack %llu xchg %llu "
            "(expected barrier %llu ack %llu)\n",
            (unsigned long long)*(volatile uint64_t *)(dn2_llcm(d) + LL_HELLO),
            (unsigned long long)*(volatile uint64_t *)(dn2_llcm(d) + LL_BARRIER),
            (unsigned long long)*(volatile uint64_t *)(dn2_llcm(d) + LL_ACK),
            (unsigned long long)*(volatile uint64_t *)(dn2_llcm(d) + LL_XCHG + 8),
            (unsigned long long)bar_seq, (unsigned long long)ack_seq);
}

static void fail(const char *fmt, ...)
{
    va_list ap;
    char msg[512];

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    fflush(stdout);
    fprintf(stderr, "dn2-bench: rank %d: FAILED in %s: %s\n", me, cur_test, msg);
    board_state(stderr);
    printf("FAILED (rank %d) in %s: %s\n", me, cur_test, msg);
    board_state(stdout);
    fflush(stdout);
    exit(1);
}

static void check(int r, const char *what)
{
    if (r < 0) {
        fail("%s: %s", what, dn2_strerror(r));
    }
}

static void check_board(void)
{
    uint64_t cs = dn2_ctl_status(d);

    if (cs & (DN2_CS_RX_OVF | DN2_CS_RX_ERR_MASK | DN2_CS_REQ_ERROR)) {
        fail("the board reports an error (Controller Status 0x%llx)", (unsigned long long)cs);
    }
}

/* ------------------------------------------------------------ patterns */

static uint8_t pat(int rank, size_t i)
{
    uint32_t x = (uint32_t)i * 2654435761u + (uint32_t)rank * 0x9e3779b9u;
    return (uint8_t)(x >> 24 ^ x >> 11 ^ (uint32_t)rank);
}

/* First differing byte, or -1. */
static long mismatch(const uint8_t *got, const uint8_t *want, size_t n)
{
    size_t i;

    for (i = 0; i < n; i++) {
        if (got[i] != want[i]) {
            return (long)i;
        }
    }
    return -1;
}

/* ------------------------------------------------------------ waiting */

/* How the host waits for the board.  gap_us 0: the library's own loops
 * (User Register polled back to back, "tight").  gap_us > 0 ("gentle"):
 * the receive-status ring is polled in LLCM memory, and a register is
 * re-read only every gap_us µs, before the library's wait is called
 * (which then finds the condition true at once).  Under the emulator every
 * register read takes QEMU's global lock, which the device model needs to
 * run the Window and Receive Controllers; see docs/benchmarks-guest.md. */
static double gap_us = 2.0;
static const char *poll_name = "sleep:1";
/* > 0: wait by sleeping this long between looks instead of spinning
 * (the guest's vCPU halts, so the host runs QEMU's device threads). */
static double sleep_us = 1;
/* ... after spinning this long first (short waits stay short) */
static double spin_first_us = 0;

/* --stream-detail: naps taken since the last report, and the longest */
static int stream_detail;
static unsigned long naps;
static double nap_max_us;

static void nap(void)
{
    struct timespec ts = { 0, (long)(sleep_us * 1000) };

    if (stream_detail) {
        double t0 = now_us(), t;

        nanosleep(&ts, NULL);
        t = now_us() - t0;
        naps++;
        nap_max_us = t > nap_max_us ? t : nap_max_us;
        return;
    }
    nanosleep(&ts, NULL);
}

static void nap_report(const char *what, size_t size, const char *more)
{
    if (stream_detail) {
        fprintf(stderr, "stream: %s %zu B%s naps %lu longest %.0f us\n", what, size, more,
                naps, nap_max_us);
        naps = 0;
        nap_max_us = 0;
    }
}

static void spin_us(double us)
{
    double t0 = now_us();
    while (now_us() - t0 < us) {
        dn2_cpu_relax();
    }
}

#define WAIT_UNTIL(cond)                                                 \
    do {                                                                 \
        if (gap_us > 0) {                                                \
            double _t0 = now_us();                                       \
            while (!(cond) && now_us() - _t0 < TMO) {                    \
                if (sleep_us > 0 && now_us() - _t0 >= spin_first_us) {   \
                    nap();                                               \
                } else {                                                 \
                    spin_us(gap_us);                                     \
                }                                                        \
            }                                                            \
        }                                                                \
    } while (0)

/* BOTFs issued through rr that have not left the board yet (reads the
 * Primitive Counter). */
static unsigned rr_inflight(struct dn2_botf_rr *rr)
{
    rr->left = (dn2_count(d, DN2_PC_BOTF) - rr->base) & DN2_PC_MASK;
    return (rr->issued - rr->left) & DN2_PC_MASK;
}

static void rr_drain(struct dn2_botf_rr *rr)
{
    WAIT_UNTIL(rr_inflight(rr) == 0);
    check(dn2_botf_rr_drain(d, rr, TMO), "BOTF completion (Primitive Counter)");
}

/* Room in the Request FIFO (what dn2_issue polls for). */
static void fifo_room(void)
{
    WAIT_UNTIL(!(dn2_ctl_status(d) & (DN2_CS_REQ_PENDING | DN2_CS_FIFO_AFULL)));
}

/* ------------------------------------------------------ SO-DIMM access */

/* Write len bytes at SO-DIMM sd through the four Write Windows (VS). */
static void sd_write(uint32_t sd, const uint8_t *buf, size_t len)
{
    check(dn2_sd_write(d, sd, buf, len, DN2_WIN_ALL, TMO), "VS (SO-DIMM fill)");
}

/* Read len bytes at SO-DIMM sd into host memory: VL into the four
 * Prefetch Windows, pipelined (the thesis's receive-with-copy path). */
static void sd_read(uint32_t sd, uint8_t *buf, size_t len)
{
    check(dn2_sd_read(d, sd, buf, len, DN2_WIN_ALL, TMO), "VL (Prefetch Window flags)");
}

/* Read len bytes of our IPUSH ring starting at SO-DIMM offset at. */
static void ring_read(uint32_t at, uint8_t *buf, size_t len)
{
    uint32_t pos = at - ring.base;
    size_t first = len < ring.size - pos ? len : ring.size - pos;

    sd_read(at, buf, first);
    if (first < len) {
        sd_read(ring.base, buf + first, len - first);
    }
}

/* Read our Prefetch Window area (BOTF with rflag landed there). */
static void pw_read_fresh(uint8_t *buf, size_t len)
{
    dn2_cpu_flush(dn2_pw(d), len);
    dn2_pw_read(d, 0, buf, len);
}

/* ------------------------------------------------------ control words */

static volatile uint64_t *llcm64(uint32_t off)
{
    return (volatile uint64_t *)(dn2_llcm(d) + off);
}

/* One BOTF of len bytes into the peer's LLCM at off, from Write Window 0,
 * waited for.  Only between tests: no other BOTF may be in flight. */
static void ctl_send(uint32_t off, const void *data, size_t len)
{
    struct dn2_botf_rr rr;

    dn2_botf_rr_init(d, &rr, 1);
    fifo_room();
    check(dn2_botf_rr_send(d, &rr, peer_lid, peer_wid, DN2_TO_LLCM, off, data, len, 0),
          "BOTF (control word)");
    rr_drain(&rr);
}

static void ctl_wait(uint32_t off, uint64_t want, const char *what)
{
    double t0 = now_us();

    while (*llcm64(off) < want) {
        if (sleep_us > 0 && now_us() - t0 >= spin_first_us) {
            nap();
        }
        if (now_us() - t0 > TMO) {
            fail("timed out waiting for the peer's %s (word %llu, want %llu)", what,
                 (unsigned long long)*llcm64(off), (unsigned long long)want);
        }
        dn2_cpu_relax();
    }
}

static void barrier(void)
{
    bar_seq++;
    ctl_send(LL_BARRIER, &bar_seq, 8);
    ctl_wait(LL_BARRIER, bar_seq, "barrier");
}

/* Rank 1 hands rank 0 a number (e.g. its elapsed time). */
static double xchg_to0(double v)
{
    xchg_seq++;
    if (me) {
        uint64_t w[2];
        memcpy(&w[0], &v, 8);
        w[1] = xchg_seq;
        ctl_send(LL_XCHG, w, 16);
        return v;
    }
    ctl_wait(LL_XCHG + 8, xchg_seq, "exchange");
    dn2_cpu_mfence();
    {
        uint64_t w = *llcm64(LL_XCHG);
        double r;
        memcpy(&r, &w, 8);
        return r;
    }
}

/* Start handshake: each rank's word in the other's LLCM says 1 "I am
 * here", 2 "I have seen you".  Resent every 2 ms: the peer may not have
 * started (or may still be clearing its control words). */
static void hello(void)
{
    double t0 = now_us(), last = 0;
    uint64_t mine = 1;

    for (;;) {
        uint64_t his = *llcm64(LL_HELLO);
        if (his >= 1) {
            mine = 2;
        }
        if (his >= 2) {
            ctl_send(LL_HELLO, &mine, 8);
            return;
        }
        if (now_us() - last > 2000) {
            ctl_send(LL_HELLO, &mine, 8);
            last = now_us();
        }
        if (now_us() - t0 > 60e6) {
            fail("the peer (LID %u WID %d) did not answer within 60 s", peer_lid, peer_wid);
        }
        usleep(200);
    }
}

/* ------------------------------------------------------ receive side */

/* Where the next status record will be written (we follow the ring as
 * the library does: 16-byte records from LL_STATUS, wrapping). */
static uint32_t st_next = LL_STATUS;
static uint32_t lh_head;            /* the LH Buffer head, as the library has it */

static void status_wait(struct dn2_rx_status *st, unsigned type, const char *what)
{
    int r;

    if (gap_us > 0) {
        /* Poll the record's memory in LLCM (RAM to the emulator), not the
         * Status Next Write Address register; the slot is zeroed after use. */
        volatile uint64_t *slot = llcm64(st_next);
        double t0 = now_us();
        while (!*slot) {
            if (now_us() - t0 > TMO) {
                break;
            }
            if (sleep_us > 0 && now_us() - t0 >= spin_first_us) {
                nap();
            } else {
                dn2_cpu_relax();
            }
        }
    }
    r = dn2_status_next(d, st, TMO);
    if (r > 0) {
        if (gap_us > 0) {
            /* only the polls above look at the slot (two uncached stores
             * that the library's own loop, "tight", does not need) */
            llcm64(st_next)[0] = 0;
            llcm64(st_next)[1] = 0;
        }
        st_next = LL_STATUS + (st_next - LL_STATUS + DN2_STATUS_REC_SIZE) % LL_STATUS_LEN;
    }

    if (r == 0) {
        fail("no receive-status record within %ld s (%s)", TMO / 1000000, what);
    }
    check(r, what);
    if (type && st->type != type) {
        fail("status record of type 0x%x, expected 0x%x (%s)", st->type, type, what);
    }
    if (st->src_clid != dn2_lid_to_clid(peer_lid) || st->src_wid != peer_wid) {
        fail("status record from CLID %u WID %d, expected the peer CLID %u WID %d (%s)",
             st->src_clid, st->src_wid, dn2_lid_to_clid(peer_lid), peer_wid, what);
    }
}

/* ------------------------------------------------------- round trips */

/* Round-trip times of the current ping-pong (rank 0's view); the figure
 * reported is the median (the emulator has long scheduling outliers). */
#define MAX_RT 8192
static double rt[MAX_RT];
static unsigned n_rt;

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void rt_add(double us)
{
    if (n_rt < MAX_RT) {
        rt[n_rt++] = us;
    }
}

/* Spread of the last ping-pong: half the interquartile range of its round
 * trips (in RTT/2 terms). */
static double last_iqr2;

/* Median RTT/2 of the round trips recorded since the last call. */
static double rt_half_median(void)
{
    double m;

    if (!n_rt) {
        return NAN;
    }
    qsort(rt, n_rt, sizeof(rt[0]), cmp_d);
    m = n_rt & 1 ? rt[n_rt / 2] : (rt[n_rt / 2 - 1] + rt[n_rt / 2]) / 2;
    last_iqr2 = (rt[(3 * n_rt) / 4] - rt[n_rt / 4]) / 2 / 2;
    n_rt = 0;
    return m / 2;
}

#define ROUNDS 3

static double median_of(double *v, int n)
{
    qsort(v, (size_t)n, sizeof(v[0]), cmp_d);
    return n & 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* ------------------------------------------------------------- sizes */

static unsigned iters(size_t size, double bytes, unsigned lo, unsigned hi)
{
    double n = bytes / (double)size * scale;

    if (full) {
        n *= 4;
    }
    if (n < lo) n = lo;
    if (n > hi * (scale > 1 ? scale : 1)) n = hi * (scale > 1 ? scale : 1);
    return (unsigned)n;
}

static unsigned stream_n(size_t size)
{
    unsigned n = iters(size, 1.0 * (1 << 20), 8, 160);
    return n > MAX_STREAM ? MAX_STREAM : n;
}

static unsigned pp_n(size_t size)
{
    return iters(size, 4.0 * (1 << 20), 8, 300);
}

static const char *fmt_size(size_t s)
{
    static char b[8][32];
    static int k;
    char *p = b[k++ & 7];

    if (s >= (1u << 20) && !(s % (1u << 20))) {
        snprintf(p, 32, "%zu MiB", s >> 20);
    } else if (s >= 1024 && !(s % 1024)) {
        snprintf(p, 32, "%zu KiB", s >> 10);
    } else {
        snprintf(p, 32, "%zu B", s);
    }
    return p;
}

/* ------------------------------------------------------------- UDP */

static int udp_find(size_t size)
{
    int i;

    for (i = 0; i < n_udp; i++) {
        if (udp[i].size == size) {
            return i;
        }
    }
    return -1;
}

static double udp_pp(size_t size)
{
    int i = udp_find(size);
    return i < 0 ? NAN : udp[i].pp_us;
}

static double udp_st(size_t size)
{
    int i = udp_find(size);
    return i < 0 ? NAN : udp[i].st_mbs;
}

static void load_udp(const char *path)
{
    FILE *f = fopen(path, "r");
    char line[256], kind[32];
    size_t size;
    double v;

    if (!f) {
        fprintf(stderr, "dn2-bench: no UDP results in %s: %s\n", path, strerror(errno));
        return;
    }
    while (fgets(line, sizeof(line), f)) {
        int i;
        if (sscanf(line, "udp %31s %zu %lf", kind, &size, &v) != 3) {
            continue;
        }
        i = udp_find(size);
        if (i < 0 && n_udp < UDP_MAX) {
            i = n_udp++;
            udp[i].size = size;
            udp[i].pp_us = udp[i].st_mbs = udp[i].st_loss = NAN;
            udp[i].pp_lost = 0;
        }
        if (i < 0) {
            continue;
        }
        if (!strcmp(kind, "pingpong")) {
            const char *l = strstr(line, "lost=");
            udp[i].pp_us = v;
            udp[i].pp_lost = l ? (unsigned)atoi(l + 5) : 0;
        } else if (!strcmp(kind, "stream")) {
            const char *l = strstr(line, "loss=");
            udp[i].st_mbs = v;
            udp[i].st_loss = l ? atof(l + 5) : NAN;
        }
    }
    fclose(f);
}

/* ------------------------------------------------------------ output */

static void out(const char *fmt, ...)
{
    va_list ap;

    if (me) {
        return;
    }
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    fflush(stdout);
}

static const char *num(double v, int prec)
{
    static char b[16][24];
    static int k;
    char *p = b[k++ & 15];

    if (isnan(v)) {
        snprintf(p, 24, "-");
    } else if (v >= 10000) {
        snprintf(p, 24, "%.0f", v);
    } else {
        snprintf(p, 24, "%.*f", prec, v);
    }
    return p;
}

static const char *ratio(double v)
{
    static char b[8][24];
    static int k;
    char *p = b[k++ & 7];

    if (isnan(v) || isinf(v) || v <= 0) {
        snprintf(p, 24, "-");
    } else if (v >= 10) {
        snprintf(p, 24, "x%.0f", v);
    } else {
        snprintf(p, 24, "x%.2g", v);
    }
    return p;
}

static void title(const char *t, const char *how)
{
    out("\n== %s ==\n", t);
    if (how) {
        out("   %s\n", how);
    }
}

/* ========================================================= harness */

/* What one benchmark moves, as callbacks: the stream and ping-pong
 * drivers below are the same for BOTF, RVS, IPUSH and LHS. */
struct xfer {
    const char *what;                   /* for a timeout message */
    size_t size;
    void (*start)(struct xfer *x);      /* after the barrier (NULL: none) */
    void (*send)(struct xfer *x);       /* one message out */
    void (*sent)(struct xfer *x);       /* the messages sent left (NULL: none) */
    void (*recv)(struct xfer *x);       /* one message in */
    void (*round)(struct xfer *x);      /* ping-pong: after each round (NULL: none) */
    int sent_only;                      /* bidirectional: timed until sent, not received */
};

static void xfer_start(struct xfer *x)
{
    barrier();
    if (x->start) {
        x->start(x);
    }
}

static void xfer_sent(struct xfer *x)
{
    if (x->sent) {
        x->sent(x);
    }
}

/* Delivered bandwidth of n messages from rank 0 to rank 1, MB/s. */
static double stream_uni_once(struct xfer *x)
{
    unsigned n = stream_n(x->size), i;
    double t0, t = 0;

    xfer_start(x);
    if (me == 0) {
        double ti;
        char more[96];

        naps = 0;                       /* count from here */
        nap_max_us = 0;
        t0 = now_us();
        for (i = 0; i < n; i++) {
            x->send(x);
        }
        xfer_sent(x);
        ti = now_us() - t0;
        ctl_wait(LL_ACK, ++ack_seq, "end-of-stream answer");
        t = now_us() - t0;
        snprintf(more, sizeof(more), " x %u: issued in %.0f us (%.1f MB/s), answer at %.0f us;",
                 n, ti, n * (double)x->size / ti, t);
        nap_report(x->what, x->size, more);
    } else {
        for (i = 0; i < n; i++) {
            x->recv(x);
        }
        ++ack_seq;
        ctl_send(LL_ACK, &ack_seq, 8);
        nap_report(x->what, x->size, " received;");
    }
    check_board();
    return n * (double)x->size / t;
}

/* Both ranks stream n messages at once; the sum, MB/s. */
static double stream_bi_once(struct xfer *x)
{
    unsigned n = stream_n(x->size), i;
    double t0, t, t1;

    xfer_start(x);
    t0 = now_us();
    for (i = 0; i < n; i++) {
        x->send(x);
    }
    xfer_sent(x);
    t = now_us() - t0;
    for (i = 0; i < n; i++) {
        x->recv(x);
    }
    if (!x->sent_only) {
        t = now_us() - t0;
    }
    t1 = xchg_to0(t);
    check_board();
    return 2.0 * n * (double)x->size / (t > t1 ? t : t1);
}

/* The median of ROUNDS streams (each stream is short: at most MAX_STREAM
 * messages, so that the receive-status ring never fills). */
static double stream_median(double (*once)(struct xfer *x), struct xfer *x)
{
    double r[ROUNDS];
    int k;

    for (k = 0; k < ROUNDS; k++) {
        r[k] = once(x);
    }
    return median_of(r, ROUNDS);
}

/* n timed rounds after warm ones: rank 0 sends then receives, rank 1
 * receives then sends.  The round trips go to rt_add(). */
static void pingpong(struct xfer *x, unsigned n, unsigned warm)
{
    unsigned i;
    int k;

    xfer_start(x);
    n_rt = 0;
    for (i = 0; i < n + warm; i++) {
        double ti = now_us();

        for (k = 0; k < 2; k++) {
            if ((k == 0) == (me == 0)) {
                x->send(x);
            } else {
                x->recv(x);
            }
        }
        if (x->round) {
            x->round(x);
        }
        if (i >= warm) {
            rt_add(now_us() - ti);
        }
    }
}

/* ============================================================ BOTF */

/* One message: ceil(size / 496) images, eflag on the last. */
static void botf_msg(struct dn2_botf_rr *rr, enum dn2_target to, uint32_t dst,
                     const uint8_t *buf, size_t size)
{
    size_t off;

    for (off = 0; off < size; off += BOTF_DATA) {
        size_t len = size - off < BOTF_DATA ? size - off : BOTF_DATA;
        /* the library checks the window (a counter read only when its
         * last reading shows none free) and the FIFO before each image;
         * waiting here first applies the --poll policy */
        WAIT_UNTIL(dn2_botf_rr_ready(d, rr));
        check(dn2_botf_rr_send(d, rr, peer_lid, peer_wid, to, dst + (uint32_t)off,
                               buf + off, len, off + len == size), "BOTF");
    }
}

/* BOTF messages (botf_msg) through ww Write Windows, to dst. */
struct botf_xfer {
    struct xfer x;
    struct dn2_botf_rr rr;
    int ww;
    int each;                           /* each message seen sent before the next */
    enum dn2_target to;
    uint32_t dst;
};

static void botf_start(struct xfer *x)
{
    struct botf_xfer *b = (struct botf_xfer *)x;

    dn2_botf_rr_init(d, &b->rr, b->ww);
}

static void botf_send(struct xfer *x)
{
    struct botf_xfer *b = (struct botf_xfer *)x;

    botf_msg(&b->rr, b->to, b->dst, my_pat, x->size);
    if (b->each) {
        rr_drain(&b->rr);
    }
}

static void botf_sent(struct xfer *x)
{
    rr_drain(&((struct botf_xfer *)x)->rr);
}

static void botf_recv(struct xfer *x)
{
    struct dn2_rx_status st;

    status_wait(&st, DN2_OP_RVS, x->what);
}

static struct botf_xfer botf_xfer(const char *what, size_t size, int ww, enum dn2_target to)
{
    struct botf_xfer b = {
        .x = { .what = what, .size = size, .start = botf_start, .send = botf_send,
               .sent = botf_sent, .recv = botf_recv },
        .ww = ww,
        .to = to,
        .dst = to == DN2_TO_PW ? 0 : SD_DST,
    };

    return b;
}

/* Delivered bandwidth, MB/s: the median of ROUNDS streams.  As the
 * thesis takes its BOTF throughput and latency curves (6.2.1-6.2.2, Figs
 * 6.3-6.6; the one-way latency above is the curve's smallest size): the
 * images of a message go as soon as a window is free, and the message is
 * seen sent on the sender (the Primitive Counter) before the next starts. */
static double botf_uni(size_t size, int ww)
{
    struct botf_xfer b = botf_xfer("BOTF stream", size, ww, DN2_TO_SDIMM);

    b.each = 1;
    return stream_median(stream_uni_once, &b.x);
}

/* Both ranks at once, each as botf_uni (the thesis's bidirectional loop is
 * its unidirectional one on both nodes, 6.2.2 p.93), each timed on its own
 * sending side: until its last message is seen sent; the messages it
 * received are taken from the status ring after that.  The sum. */
static double botf_bi(size_t size, int ww)
{
    struct botf_xfer b = botf_xfer("BOTF bidirectional", size, ww, DN2_TO_SDIMM);

    b.each = 1;
    b.x.sent_only = 1;
    return stream_median(stream_bi_once, &b.x);
}

/* RTT/2 in µs; checks the last message received. */
static double botf_pp(size_t size, int ww, enum dn2_target to)
{
    struct botf_xfer b = botf_xfer("BOTF ping-pong", size, ww, to);
    long bad;

    pingpong(&b.x, pp_n(size), 3);
    rr_drain(&b.rr);
    if (to == DN2_TO_PW) {
        pw_read_fresh(rxbuf, size);
    } else {
        sd_read(SD_DST, rxbuf, size);
    }
    if ((bad = mismatch(rxbuf, peer_pat, size)) >= 0) {
        fail("BOTF %zu B to the %s: received byte %ld is 0x%02x, the peer sent 0x%02x",
             size, to == DN2_TO_PW ? "Prefetch Window" : "SO-DIMM", bad, rxbuf[bad],
             peer_pat[bad]);
    }
    check_board();
    return rt_half_median();
}

static void verdict_lat(const char *what, double ours, double thesis, double udp_us)
{
    out("verdict: %s %s µs (thesis %s µs, %s slower under emulation)", what,
        num(ours, 1), num(thesis, 2), ratio(ours / thesis));
    if (!isnan(udp_us)) {
        out("; UDP over virtio-net %s µs: DIMMnet-2 %s %s\n", num(udp_us, 1),
            ours < udp_us ? "faster" : "slower",
            ratio(ours < udp_us ? udp_us / ours : ours / udp_us));
    } else {
        out("\n");
    }
}

static void verdict_bw(const char *what, double ours, double thesis, double udp_mbs)
{
    out("verdict: %s %s MB/s (thesis %s MB/s, %s of it)", what, num(ours, 1),
        num(thesis, 2), ratio(ours / thesis));
    if (!isnan(udp_mbs)) {
        out("; UDP stream over virtio-net %s MB/s: DIMMnet-2 %s %s\n", num(udp_mbs, 1),
            ours > udp_mbs ? "ahead" : "behind",
            ratio(ours > udp_mbs ? ours / udp_mbs : udp_mbs / ours));
    } else {
        out("\n");
    }
}

/* The rows that the timing model's [calibrated] parameters were solved from
 * (docs/timing.md, "The parameters"): under timing=thesis they check the
 * model's consistency, not its prediction, so they are marked and never
 * counted as agreement. */
static const struct {
    const char *row, *param;
} calibration_rows[] = {
    { "rvs-uni", "sdimm-read-mbps" },   /* the RVS unidirectional row itself */
    { "rvs-bi", "sdimm-write-mbps" },   /* solved from the bidirectional row */
};

/* One machine-readable line per row of the thesis's tables that this run
 * measured (scripts/bench-cluster.sh prints and counts them;
 * docs/timing.md):
 *   row NAME measured V thesis T UNIT error E%[ calibrates PARAM] */
static void row(const char *name, double v, double thesis, const char *unit)
{
    const char *param = NULL;
    size_t i;

    if (isnan(v)) {
        return;
    }
    for (i = 0; i < sizeof(calibration_rows) / sizeof(calibration_rows[0]); i++) {
        if (!strcmp(calibration_rows[i].row, name)) {
            param = calibration_rows[i].param;
        }
    }
    out("row %s measured %.3f thesis %.3f %s error %+.1f%%%s%s\n", name, v, thesis, unit,
        100.0 * (v - thesis) / thesis, param ? " calibrates " : "", param ? param : "");
}

/* The BOTF minimum one-way latency as the thesis measures it on the
 * sending host (6.2.1 p.92-93: 0.632 µs for a 16-byte header and 8 bytes
 * of data), in the thesis's three steps: (1) write the image, (2) issue
 * the BOTF (the Lower word: a store, 0.060 µs as the program measured it,
 * no Controller Status poll before it), (3) see it sent (the Primitive
 * Counter); the mean over n in a row.  Each BOTF is seen sent before the
 * next is issued, so the Request FIFO is empty at every issue.  Into the
 * peer's LLCM, no status: the peer only waits at the barriers. */
static double botf_oneway(void)
{
    uint8_t img[2 * DN2_LINE + 8];
    struct dn2_hdr h;
    uint64_t w;
    unsigned i, n = 2000, base;
    double t0, t = NAN;

    memset(&h, 0, sizeof(h));
    h.type = DN2_OP_RVS;
    h.dlid = peer_lid;
    h.dwid = peer_wid;
    h.swid = dn2_wid(d);
    h.lflag = 1;
    h.size = sizeof(img);
    w = dn2_hdr0_encode(&h);
    memcpy(img, &w, 8);
    w = dn2_hdr1_encode(0x80, 0x80);
    memcpy(img + 8, &w, 8);
    memset(img + 16, 0, 8);
    barrier();
    if (me == 0) {
        fifo_room();
        base = dn2_count(d, DN2_PC_BOTF);
        t0 = now_us();
        for (i = 0; i < n; i++) {
            dn2_ww_write(d, 0, img, sizeof(img));               /* (1) */
            dn2_ur_write(d, DN2_UR_CMD0_LOWER, dn2_botf_lower(0, sizeof(img))); /* (2) */
            check(dn2_wait_count(d, DN2_PC_BOTF, (base + i) & DN2_PC_MASK, 1, TMO), /* (3) */
                  "BOTF completion (Primitive Counter)");
        }
        t = (now_us() - t0) / n;
    }
    barrier();
    check_board();
    return t;
}

static const size_t botf_sizes_q[] = { 8, 16, 32, 64, 128, 256, 496, 512, 992, 1008, 1488, 1984 };
static const size_t botf_sizes_f[] = { 8, 16, 24, 32, 48, 64, 96, 128, 192, 256, 320, 384, 448,
                                       496, 512, 744, 992, 1240, 1488, 1736, 1984 };
static const size_t big_sizes_q[] = { 2048, 8192, 32768, 65536 };
static const size_t big_sizes_f[] = { 2048, 4096, 8192, 16384, 32768, 65536 };

#define NEL(a) (sizeof(a) / sizeof((a)[0]))

/* --sizes: the user's list, each table keeping the sizes in its range. */
static size_t user_sizes[64], n_user;

static const size_t *pick(const size_t *q, size_t nq, const size_t *f, size_t nf,
                          size_t lo, size_t hi, size_t *ns)
{
    static size_t out_s[5][64];
    static int k;
    size_t *o = out_s[k++ % 5], i, n = 0;

    if (!n_user) {
        *ns = full ? nf : nq;
        return full ? f : q;
    }
    for (i = 0; i < n_user; i++) {
        if (user_sizes[i] >= lo && user_sizes[i] <= hi) {
            o[n++] = user_sizes[i];
        }
    }
    *ns = n;
    return o;
}

static void run_botf(void)
{
    size_t ns, i;
    const size_t *sz = pick(botf_sizes_q, NEL(botf_sizes_q), botf_sizes_f, NEL(botf_sizes_f), 8, 1984, &ns);
    static const int wws[3] = { 1, 2, 4 };
    double best[4] = { 0 }, best_udp = NAN, small = NAN, small_pw = NAN, v;
    double at496 = NAN, at512 = NAN;
    size_t small_sz = 0;
    int w;

    /* ---- one-way latency on the sender */
    cur_test = "BOTF one-way";
    progress("%s", cur_test);
    v = botf_oneway();
    title("BOTF one-way latency on the sender: write the image, issue, see it sent (µs)",
          "24-byte image (16 B header + 8 B data) from 1 Write Window, the mean of 2000");
    out("%10s %9s\n%10s %9s\n", "measured", num(v, 3), "thesis", "0.632");
    row("botf-oneway-min", v, 0.632, "us");

    /* ---- unidirectional */
    cur_test = "BOTF unidirectional";
    progress("%s", cur_test);
    title("BOTF unidirectional: delivered MB/s (N messages, receiver polls the eflag status)",
          "a message > 496 B is several BOTF images round robin over the Write Windows");
    out("%10s %9s %9s %9s %11s %9s\n", "size", "1 WW", "2 WW", "4 WW", "UDP stream", "4WW/UDP");
    for (i = 0; i < ns; i++) {
        double r[3];
        for (w = 0; w < 3; w++) {
            r[w] = botf_uni(sz[i], wws[w]);
            if (r[w] > best[w]) best[w] = r[w];
        }
        if (sz[i] == BOTF_DATA) at496 = r[0];
        if (sz[i] == BOTF_DATA + 16) at512 = r[0];
        v = udp_st(sz[i]);
        if (!isnan(v) && (isnan(best_udp) || v > best_udp)) best_udp = v;
        out("%10s %9s %9s %9s %11s %9s\n", fmt_size(sz[i]), num(r[0], 2), num(r[1], 2),
            num(r[2], 2), num(v, 2), ratio(r[2] / v));
    }
    out("%10s %9s %9s %9s %11s\n", "max", num(best[0], 2), num(best[1], 2), num(best[2], 2),
        num(best_udp, 2));
    out("%10s %9s %9s %9s\n", "thesis max", "297.44", "463.55", "520.31");
    verdict_bw("BOTF uni max (4 WW)", best[2], 520.31, best_udp);
    if (!isnan(at496) && !isnan(at512)) {
        /* The thesis (6.2.1): with 1 WW the throughput drops every ~496 B,
         * where a message needs one image more. */
        out("shape botf-1ww-drop-496 %s: 1 WW %.2f MB/s at 496 B, %.2f at 512 B (thesis 6.2.1: drops every ~496 B)\n",
            at512 < at496 ? "holds" : "fails", at496, at512);
    }
    if (best[0] > 0 && best[1] > 0 && best[2] > 0) {
        int holds = best[2] > best[1] && best[1] > best[0];
        out("shape botf-ww-order %s: 4 WW %.2f > 2 WW %.2f > 1 WW %.2f MB/s (thesis 6.2.1: 520 > 464 > 297)\n",
            holds ? "holds" : "fails", best[2], best[1], best[0]);
    }
    row("botf-uni-1ww", best[0], 297.44, "MB/s");
    row("botf-uni-2ww", best[1], 463.55, "MB/s");
    row("botf-uni-4ww", best[2], 520.31, "MB/s");

    /* ---- bidirectional */
    cur_test = "BOTF bidirectional";
    progress("%s", cur_test);
    memset(best, 0, sizeof(best));
    title("BOTF bidirectional: MB/s, both directions together", NULL);
    out("%10s %9s %9s %9s %11s %9s\n", "size", "1 WW", "2 WW", "4 WW", "2xUDP uni*", "4WW/UDP");
    for (i = 0; i < ns; i++) {
        double r[3];
        for (w = 0; w < 3; w++) {
            r[w] = botf_bi(sz[i], wws[w]);
            if (r[w] > best[w]) best[w] = r[w];
        }
        v = 2 * udp_st(sz[i]);
        out("%10s %9s %9s %9s %11s %9s\n", fmt_size(sz[i]), num(r[0], 2), num(r[1], 2),
            num(r[2], 2), num(v, 2), ratio(r[2] / v));
    }
    out("%10s %9s %9s %9s\n", "max", num(best[0], 2), num(best[1], 2), num(best[2], 2));
    out("%10s %9s %9s %9s\n", "thesis max", "556.08", "908.20", "1037.18");
    out("   * udp-bench streams one way; twice that stands in for both directions\n");
    verdict_bw("BOTF bi max (4 WW)", best[2], 1037.18, NAN);
    row("botf-bi-1ww", best[0], 556.08, "MB/s");
    row("botf-bi-2ww", best[1], 908.20, "MB/s");
    row("botf-bi-4ww", best[2], 1037.18, "MB/s");

    /* ---- ping-pong */
    cur_test = "BOTF ping-pong";
    progress("%s", cur_test);
    memset(best, 0, sizeof(best));
    title("BOTF ping-pong: RTT/2 in µs (MB/s = size / RTT/2)",
          "receiver polls the status ring for the eflag'd last image, then answers");
    out("%10s %9s %9s %9s %10s %9s %9s %9s\n", "size", "1 WW", "2 WW", "4 WW", "4 WW->PW",
        "UDP", "UDP/4WW", "4WW MB/s");
    for (i = 0; i < ns; i++) {
        double r[4];
        for (w = 0; w < 3; w++) {
            r[w] = botf_pp(sz[i], wws[w], DN2_TO_SDIMM);
        }
        r[3] = botf_pp(sz[i], 4, DN2_TO_PW);
        for (w = 0; w < 4; w++) {
            if (sz[i] / r[w] > best[w]) best[w] = sz[i] / r[w];
        }
        if (sz[i] <= 64 && (isnan(small) || r[2] < small)) {
            small = r[2];
            small_sz = sz[i];
        }
        if (sz[i] <= 64 && (isnan(small_pw) || r[3] < small_pw)) {
            small_pw = r[3];
        }
        v = udp_pp(sz[i]);
        out("%10s %9s %9s %9s %10s %9s %9s %9s\n", fmt_size(sz[i]), num(r[0], 1), num(r[1], 1),
            num(r[2], 1), num(r[3], 1), num(v, 1), ratio(v / r[2]), num(sz[i] / r[2], 2));
    }
    out("%10s %9s %9s %9s %10s   (max MB/s)\n", "max MB/s", num(best[0], 2), num(best[1], 2),
        num(best[2], 2), num(best[3], 2));
    out("%10s %9s %9s %9s %10s   (max MB/s)\n", "thesis", "209.71", "296.52", "298.95", "323.22");
    out("%10s %9s %9s %9s %10s   (min RTT/2 µs)\n", "thesis", "-", "-", "1.82", "1.76");
    {
        char what[96];
        snprintf(what, sizeof(what), "BOTF ping-pong, best message <= 64 B (%s, 4 WW, to SO-DIMM)",
                 fmt_size(small_sz));
        verdict_lat(what, small, 1.82, udp_pp(small_sz));
    }
    row("botf-pp-rtt2-sdimm", small, 1.82, "us");
    row("botf-pp-rtt2-pw", small_pw, 1.76, "us");
}

static void run_botf_big(void)
{
    size_t ns, i;
    const size_t *sz = pick(big_sizes_q, NEL(big_sizes_q), big_sizes_f, NEL(big_sizes_f), 1985, 65536, &ns);
    double b[6] = { 0 }, r[6];
    int k;

    cur_test = "BOTF 2-64 KiB";
    progress("%s", cur_test);
    title("BOTF, multi-packet messages 2-64 KiB: MB/s (2 and 4 Write Windows)", NULL);
    out("%10s %9s %9s %9s %9s %9s %9s %11s\n", "size", "uni 2WW", "uni 4WW", "bi 2WW", "bi 4WW",
        "pp 2WW", "pp 4WW", "UDP stream");
    for (i = 0; i < ns; i++) {
        r[0] = botf_uni(sz[i], 2);
        r[1] = botf_uni(sz[i], 4);
        r[2] = botf_bi(sz[i], 2);
        r[3] = botf_bi(sz[i], 4);
        r[4] = sz[i] / botf_pp(sz[i], 2, DN2_TO_SDIMM);
        r[5] = sz[i] / botf_pp(sz[i], 4, DN2_TO_SDIMM);
        for (k = 0; k < 6; k++) {
            if (r[k] > b[k]) b[k] = r[k];
        }
        out("%10s %9s %9s %9s %9s %9s %9s %11s\n", fmt_size(sz[i]), num(r[0], 2), num(r[1], 2),
            num(r[2], 2), num(r[3], 2), num(r[4], 2), num(r[5], 2), num(udp_st(sz[i]), 2));
    }
    out("%10s %9s %9s %9s %9s %9s %9s\n", "max", num(b[0], 2), num(b[1], 2), num(b[2], 2),
        num(b[3], 2), num(b[4], 2), num(b[5], 2));
    out("%10s %9s %9s %9s %9s %9s %9s\n", "thesis max", "521.89", "631.11", "1049.84", "1163.70",
        "517.22", "564.91");
    verdict_bw("BOTF 2-64 KiB uni max (4 WW)", b[1], 631.11, udp_st(65536));
    row("botf-big-uni-4ww", b[1], 631.11, "MB/s");
}

/* ============================================================ RVS */

/* RVS (eflag) of size bytes from SD_SRC to the peer's SD_DST; IPUSH
 * into the peer's ring with ipush; copy: the receiver copies each message
 * into host memory. */
struct push_xfer {
    struct xfer x;
    int ipush, copy;
    uint32_t at;                        /* IPUSH: where the last message is */
};

static void push_send(struct xfer *x)
{
    struct push_xfer *p = (struct push_xfer *)x;

    fifo_room();
    if (p->ipush) {
        check(dn2_ipush(d, peer_lid, peer_wid, SD_SRC, (uint32_t)x->size, DN2_F_EFLAG),
              "IPUSH");
    } else {
        check(dn2_rvs(d, peer_lid, peer_wid, SD_SRC, SD_DST, (uint32_t)x->size, NULL,
                      DN2_F_EFLAG), "RVS");
    }
}

static void push_recv(struct xfer *x)
{
    struct push_xfer *p = (struct push_xfer *)x;
    struct dn2_rx_status st;
    size_t got = 0;

    if (!p->ipush) {
        status_wait(&st, DN2_OP_RVS, x->what);
        if (st.size != x->size) {
            fail("RVS status record says %u bytes, %zu were sent", st.size, x->size);
        }
        if (p->copy) {
            sd_read(SD_DST, rxbuf, x->size);
        }
        return;
    }
    /* IPUSH: per-packet records until the whole message */
    while (got < x->size) {
        status_wait(&st, DN2_OP_IPUSH, x->what);
        if (!got) {
            p->at = st.addr;
        }
        got += st.size;
    }
    if (got != x->size) {
        fail("IPUSH status records add up to %zu bytes, %zu were sent", got, x->size);
    }
    if (p->copy) {
        ring_read(p->at, rxbuf, x->size);
    }
    dn2_ring_consume(d, &ring, (uint32_t)x->size);
}

static struct push_xfer push_xfer(const char *what, size_t size, int ipush, int copy)
{
    struct push_xfer p = {
        .x = { .what = what, .size = size, .send = push_send, .recv = push_recv },
        .ipush = ipush,
        .copy = copy,
    };

    return p;
}

/* Delivered bandwidth, MB/s: the median of ROUNDS streams. */
static double rvs_uni(size_t size)
{
    struct push_xfer p = push_xfer("RVS stream", size, 0, 0);

    return stream_median(stream_uni_once, &p.x);
}

static double rvs_bi(size_t size)
{
    struct push_xfer p = push_xfer("RVS bidirectional", size, 0, 0);

    return stream_median(stream_bi_once, &p.x);
}

/* The RVS send-side time as the thesis's RVS rows take it (ch. 6: 0.81 µs
 * at 64 B; its unidirectional curve, half-peak 564 B, is the size over
 * this time): issue one RVS, wait until the Primitive Counter counts it
 * (its data read and sent), then the next; the mean of n, µs.  No eflag:
 * the receiver only takes the data, rank 1 waits at the barriers. */
static double rvs_oneway(size_t size)
{
    unsigned i, n = size <= 4096 ? 400 : size <= 65536 ? 40 : 8, base;
    double t0, t = NAN;

    barrier();
    if (me == 0) {
        base = dn2_count(d, DN2_PC_RVS);
        t0 = now_us();
        for (i = 0; i < n; i++) {
            check(dn2_rvs(d, peer_lid, peer_wid, SD_SRC, SD_DST, (uint32_t)size, NULL, 0),
                  "RVS");
            check(dn2_wait_count(d, DN2_PC_RVS, base, i + 1, TMO),
                  "RVS completion (Primitive Counter)");
        }
        t = (now_us() - t0) / n;
    }
    barrier();
    check_board();
    return t;
}

/* Ping-pong with PUSH (RVS, eflag) or IPUSH; copy: the receiver copies the
 * message into host memory.  RTT/2 in µs. */
static double push_pp(size_t size, int ipush, int copy)
{
    struct push_xfer p = push_xfer(ipush ? "IPUSH ping-pong" : "PUSH ping-pong", size, ipush,
                                   copy);
    long bad;

    pingpong(&p.x, copy ? iters(size, 1.0 * (1 << 20), 6, 200) : pp_n(size), 2);
    if (!copy) {
        /* the last message is still where it landed (a consumed ring
         * slot is only overwritten by a later IPUSH) */
        if (ipush) {
            ring_read(p.at, rxbuf, size);
        } else {
            sd_read(SD_DST, rxbuf, size);
        }
    }
    if ((bad = mismatch(rxbuf, peer_pat, size)) >= 0) {
        fail("%s %zu B: received byte %ld is 0x%02x, the peer sent 0x%02x",
             ipush ? "IPUSH" : "RVS", size, bad, rxbuf[bad], peer_pat[bad]);
    }
    check_board();
    return rt_half_median();
}

static const size_t rvs_sizes_q[] = { 8, 64, 256, 512, 1024, 4096, 16384, 65536, 262144, 1048576 };
static const size_t rvs_sizes_f[] = { 8, 16, 32, 64, 128, 256, 512, 768, 1024, 2048, 4096, 8192,
                                      16384, 32768, 65536, 131072, 262144, 524288, 1048576 };

/* Size where the curve first reaches half its peak (linear interpolation). */
static double half_peak(const size_t *sz, const double *bw, size_t n)
{
    double peak = 0;
    size_t i;

    for (i = 0; i < n; i++) {
        if (bw[i] > peak) peak = bw[i];
    }
    for (i = 0; i < n; i++) {
        if (bw[i] >= peak / 2) {
            if (!i) return (double)sz[0];
            return sz[i - 1] + (peak / 2 - bw[i - 1]) / (bw[i] - bw[i - 1]) *
                   (double)(sz[i] - sz[i - 1]);
        }
    }
    return NAN;
}

static void run_rvs(void)
{
    size_t ns, i;
    const size_t *sz = pick(rvs_sizes_q, NEL(rvs_sizes_q), rvs_sizes_f, NEL(rvs_sizes_f), 8, MAXMSG, &ns);
    double uni[32], bi[32], pp[32], ppc[32], bu = 0, bb = 0, bp = 0, bpc = 0, bud = NAN;
    double lat[32], lbw[32], lat64 = NAN;
    double lat_pp = NAN;
    size_t lat_sz = 0;

    cur_test = "RVS unidirectional / bidirectional";
    progress("%s", cur_test);
    title("RVS SO-DIMM to SO-DIMM: unidirectional and bidirectional MB/s",
          "uni: N RDMA writes with eflag, delivered; bi: both ranks at once (sum)");
    out("%10s %10s %10s %11s %9s\n", "size", "uni", "bi", "UDP stream", "uni/UDP");
    for (i = 0; i < ns; i++) {
        double v = udp_st(sz[i]);
        uni[i] = rvs_uni(sz[i]);
        bi[i] = rvs_bi(sz[i]);
        if (uni[i] > bu) bu = uni[i];
        if (bi[i] > bb) bb = bi[i];
        if (!isnan(v) && (isnan(bud) || v > bud)) bud = v;
        out("%10s %10s %10s %11s %9s\n", fmt_size(sz[i]), num(uni[i], 2), num(bi[i], 2),
            num(v, 2), ratio(uni[i] / v));
    }
    out("%10s %10s %10s %11s\n", "max", num(bu, 2), num(bb, 2), num(bud, 2));
    out("%10s %10s %10s\n", "thesis max", "727.20", "953.50");
    if (ns >= 8) {     /* the interpolation wants a dense sweep */
        out("%10s %10s %10s   (uni half-peak size, B)\n", "half-peak",
            num(half_peak(sz, uni, ns), 0), "");
        out("%10s %10s\n", "thesis", "564");
    }
    verdict_bw("RVS uni max", bu, 727.20, bud);
    row("rvs-uni", bu, 727.20, "MB/s");
    row("rvs-bi", bb, 953.50, "MB/s");

    cur_test = "RVS one request at a time";
    progress("%s", cur_test);
    title("RVS one request at a time (how the thesis's RVS rows are taken): µs per request",
          "issue an RVS, wait until the Primitive Counter counts it, then the next; MB/s = size / time");
    out("%10s %10s %10s\n", "size", "µs", "MB/s");
    for (i = 0; i < ns; i++) {
        lat[i] = rvs_oneway(sz[i]);
        lbw[i] = sz[i] / lat[i];
        if (sz[i] == 64) {
            lat64 = lat[i];
        }
        out("%10s %10s %10s\n", fmt_size(sz[i]), num(lat[i], 3), num(lbw[i], 2));
    }
    out("%10s %10s %10s   (64 B; the curve's max)\n", "thesis", "0.81", "727.20");
    row("rvs-oneway-64", lat64, 0.81, "us");
    if (ns >= 8) {
        double hp = half_peak(sz, lbw, ns);

        out("%10s %10s\n%10s %10s   (half-peak size, B)\n", "half-peak", num(hp, 0), "thesis", "564");
        row("rvs-half-peak", hp, 564, "B");
    }

    cur_test = "RVS ping-pong";
    progress("%s", cur_test);
    title("RVS ping-pong: RTT/2 µs and MB/s, SO-DIMM to SO-DIMM and with the copy to host memory",
          "+copy: the receiver VLs the message through the 4 Prefetch Windows into host RAM");
    out("%10s %9s %9s %10s %10s %9s %9s\n", "size", "RTT/2", "MB/s", "+copy RTT/2", "+copy MB/s",
        "UDP RTT/2", "UDP/DN2");
    for (i = 0; i < ns; i++) {
        double a = push_pp(sz[i], 0, 0), c = push_pp(sz[i], 0, 1), v = udp_pp(sz[i]);
        pp[i] = sz[i] / a;
        ppc[i] = sz[i] / c;
        if (pp[i] > bp) bp = pp[i];
        if (ppc[i] > bpc) bpc = ppc[i];
        if (sz[i] <= 64 && (isnan(lat_pp) || a < lat_pp)) {
            lat_pp = a;
            lat_sz = sz[i];
        }
        out("%10s %9s %9s %10s %10s %9s %9s\n", fmt_size(sz[i]), num(a, 1), num(pp[i], 2),
            num(c, 1), num(ppc[i], 2), num(v, 1), ratio(v / a));
    }
    out("%10s %9s %9s %10s %10s\n", "max", "", num(bp, 2), "", num(bpc, 2));
    out("%10s %9s %9s %10s %10s\n", "thesis max", "", "650.43", "", "226.36");
    {
        char what[80];
        snprintf(what, sizeof(what), "RVS ping-pong, best message <= 64 B (%s)", fmt_size(lat_sz));
        verdict_lat(what, lat_pp, 1.75, udp_pp(lat_sz));
    }
    verdict_bw("RVS ping-pong max", bp, 650.43, NAN);
    row("rvs-pp", bp, 650.43, "MB/s");
    row("rvs-pp-copy", bpc, 226.36, "MB/s");
}

/* ============================================================ IPUSH */

static const size_t ip_sizes_q[] = { 8, 24, 64, 512, 4096, 32768, 262144 };
static const size_t ip_sizes_f[] = { 8, 24, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384,
                                     32768, 65536, 131072, 262144, 524288, 1048576 };

static void run_ipush(void)
{
    size_t ns, i;
    const size_t *sz = pick(ip_sizes_q, NEL(ip_sizes_q), ip_sizes_f, NEL(ip_sizes_f), 8, MAXMSG, &ns);
    double bp = 0, bi = 0, bpc = 0, bic = 0, p24 = NAN, i24 = NAN;

    cur_test = "IPUSH vs PUSH";
    progress("%s", cur_test);
    title("IPUSH vs PUSH (RVS) ping-pong: RTT/2 µs",
          "IPUSH: into the receiver's ring, per-packet status records; +copy: into host RAM");
    out("%10s %9s %9s %8s %11s %11s %9s %10s\n", "size", "PUSH", "IPUSH", "delta", "PUSH+copy",
        "IPUSH+copy", "UDP", "UDP/IPUSH");
    for (i = 0; i < ns; i++) {
        double p = push_pp(sz[i], 0, 0), q = push_pp(sz[i], 1, 0);
        double pc = push_pp(sz[i], 0, 1), qc = push_pp(sz[i], 1, 1), v = udp_pp(sz[i]);
        if (sz[i] / p > bp) bp = sz[i] / p;
        if (sz[i] / q > bi) bi = sz[i] / q;
        if (sz[i] / pc > bpc) bpc = sz[i] / pc;
        if (sz[i] / qc > bic) bic = sz[i] / qc;
        if (sz[i] == 8) {
            /* the thesis's 24-byte message: a 16-byte header and 8 bytes
             * of data (7.1.6 p.111) */
            p24 = p;
            i24 = q;
        }
        out("%10s %9s %9s %8s %11s %11s %9s %10s\n", fmt_size(sz[i]), num(p, 1), num(q, 1),
            num(q - p, 1), num(pc, 1), num(qc, 1), num(v, 1), ratio(v / q));
    }
    out("%10s %9s %9s %8s %11s %11s   (max MB/s)\n", "max MB/s", num(bp, 2), num(bi, 2), "",
        num(bpc, 2), num(bic, 2));
    out("%10s %9s %9s %8s %11s %11s   (max MB/s)\n", "thesis", "650.43", "650.56", "", "226.36",
        "225.85");
    out("%10s %9s %9s %8s %11s %11s   (8 B of data + 16 B header RTT/2 µs; +copy: min)\n",
        "thesis", "1.75", "1.79",
        "0.04", "2.80", "2.84");
    out("verdict: 24 B message (8 B of data) RTT/2 PUSH %s µs, IPUSH %s µs: IPUSH - PUSH = %s µs (thesis +0.04 µs, "
        "below what the emulator resolves)\n", num(p24, 1), num(i24, 1), num(i24 - p24, 1));
    row("push-rtt2-24", p24, 1.75, "us");
    row("ipush-rtt2-24", i24, 1.79, "us");
}

/* ============================================================ LHS */

/* The four patterns of Fig 7.9 (thesis 7.2.2 p.114-115), each a tagged
 * message (8-byte envelope + size bytes) each way:
 *   V_IPUSH    IPUSH Only: the sender writes the packet (an IPUSH header,
 *              the envelope, the data) into a Write Window and sends it by
 *              BOTF; the receiver polls the status ring, reads the record,
 *              reads the envelope from the ring in SO-DIMM (a VL), compares
 *              it, then reads the data (a second VL) into host memory;
 *   V_LHSV1    IPUSH + LHSv1: the same BOTF with lflag; the receiver polls
 *              the LH entry's Valid and Complete flags, reads the envelope
 *              and the first 48 bytes from the entry, the rest (a VL) from
 *              the ring;
 *   V_VLLHSV1  VL + IPUSH + LHSv1: the data is in the sender's SO-DIMM; it
 *              VLs it into a Prefetch Window, writes the header into the
 *              Write Window meanwhile, polls the Prefetch Window Flag,
 *              writes the data after the envelope and sends by BOTF;
 *   V_LHSV2    IPUSH + LHSv2: the sender writes the envelope into the Write
 *              Window and issues LHSv2 (the envelope from the Write Window,
 *              the data from SO-DIMM).
 * The last three are received alike. */
enum { V_IPUSH, V_LHSV1, V_VLLHSV1, V_LHSV2 };

struct lhs_xfer {
    struct xfer x;
    int v;                              /* V_IPUSH .. V_LHSV2 */
    size_t len;                         /* 8 + size */
    uint64_t env;
    uint8_t msg[DN2_BOTF_MAX], in[DN2_BOTF_MAX];
    unsigned c0, sent;                  /* counter of our family before the loop; sends */
    int w;                              /* the Write Window of our last send */
};

/* The two header lines of an IPUSH packet carried by BOTF (the NIC stamps
 * the size, PGID and SWID, choice #45): the message's total size and the
 * offset 0 in the 2nd line, as the NIC's own IPUSH packets carry them. */
static void lhs_header(uint8_t *img, size_t len, int lflag)
{
    struct dn2_hdr h;
    uint64_t w;

    memset(&h, 0, sizeof(h));
    h.type = DN2_OP_IPUSH;
    h.dlid = peer_lid;
    h.dwid = (uint8_t)peer_wid;
    h.swid = (uint8_t)dn2_wid(d);
    h.size = (uint16_t)(2 * DN2_LINE + len);
    h.lflag = (uint8_t)lflag;
    h.eflag = h.pflag = !lflag;         /* IPUSH Only: its status record */
    w = dn2_hdr0_encode(&h);
    memcpy(img, &w, 8);
    w = dn2_hdr1_encode((uint32_t)len, 0);
    memcpy(img + 8, &w, 8);
}

/* Between two polls of a loop begun at t0: nothing with --poll tight (the
 * thesis's host), else what WAIT_UNTIL does. */
static void poll_pause(double t0)
{
    if (gap_us > 0) {
        if (sleep_us > 0 && now_us() - t0 >= spin_first_us) {
            nap();
        } else {
            spin_us(gap_us);
        }
    }
}

static void lhs_send(struct xfer *x)
{
    struct lhs_xfer *l = (struct lhs_xfer *)x;
    uint8_t img[DN2_BOTF_MAX];
    uint32_t ww;

    /* a fresh window each time (LHSv2 and the BOTFs read it later) */
    l->w = (l->w + 1) % DN2_NUM_WW;
    ww = (uint32_t)l->w * DN2_WIN_SIZE;
    l->sent++;
    if (l->v == V_LHSV2) {
        dn2_ww_write(d, ww, &l->env, 8);
        check(dn2_lhsv2(d, peer_lid, peer_wid, ww, 8, SD_STAGE, (uint32_t)l->len, 0), "LHSv2");
        return;
    }
    if (l->v == V_VLLHSV1) {
        uint32_t pw = (uint32_t)l->w * DN2_WIN_SIZE;
        uint64_t mask = DN2_PWF_WIN_MASK(l->w);
        double t0 = now_us();
        unsigned k = 0;
        struct dn2_cmd c = { .lower = dn2_botf_lower((unsigned)l->w, 2 * DN2_LINE + l->len) };

        check(dn2_vl(d, SD_STAGE, pw, (uint32_t)x->size), "VL (sender)");
        lhs_header(img, l->len, 1);
        memcpy(img + 2 * DN2_LINE, &l->env, 8);
        dn2_ww_write(d, ww, img, 2 * DN2_LINE + 8);
        while ((dn2_ur_read(d, DN2_UR_PW_FLAG) & mask) != mask) {
            if (!(++k & 1023) && now_us() - t0 > TMO) {
                fail("VL (sender): no Prefetch Window flags within %ld s", TMO / 1000000);
            }
            poll_pause(t0);
        }
        dn2_pw_read(d, pw, img + 3 * DN2_LINE, x->size);
        dn2_ww_write(d, ww + 3 * DN2_LINE, img + 3 * DN2_LINE, x->size);
        check(dn2_issue(d, &c, TMO), "BOTF (VL + IPUSH + LHSv1)");
        return;
    }
    lhs_header(img, l->len, l->v == V_LHSV1);
    memcpy(img + 2 * DN2_LINE, l->msg, l->len);
    check(dn2_botf_raw(d, l->w, img, 2 * DN2_LINE + l->len), "BOTF (IPUSH)");
}

/* The ring address off bytes after at. */
static uint32_t ring_at(uint32_t at, uint32_t off)
{
    return ring.base + (at - ring.base + off) % ring.size;
}

/* The current LH entry's first line, from the board (the line is flushed
 * first: the thesis's poll of a write-back line). */
static uint64_t lh_line0(void)
{
    const volatile uint8_t *e = dn2_lhb(d) + lh_head;

    dn2_cpu_clflush(e);
    dn2_cpu_mfence();
    return *(const volatile uint64_t *)e;
}

static void lhs_recv(struct xfer *x)
{
    struct lhs_xfer *l = (struct lhs_xfer *)x;
    size_t size = x->size;
    const volatile uint8_t *e;
    struct dn2_rx_status st;
    struct dn2_lh_entry ent;
    double t0;
    unsigned k = 0;

    if (l->v == V_IPUSH) {
        uint64_t env;

        status_wait(&st, DN2_OP_IPUSH, "IPUSH message");
        if (st.size != l->len) {
            fail("IPUSH status record says %u bytes, %zu were sent", st.size, l->len);
        }
        ring_read(st.addr, (uint8_t *)&env, 8);
        if (env != dn2_envelope(0x5, (unsigned)(me ^ 1), (uint32_t)size)) {
            fail("IPUSH envelope 0x%llx, expected context 5 rank %d tag %zu",
                 (unsigned long long)env, me ^ 1, size);
        }
        ring_read(ring_at(st.addr, 8), l->in + 8, size);
        memcpy(l->in, &env, 8);
        dn2_ring_consume(d, &ring, (uint32_t)l->len);
        return;
    }
    /* Valid and Complete toggled (both toggle once per message) */
    t0 = now_us();
    for (;;) {
        if (dn2_lh_ready(d)) {
            dn2_lh_unpack(lh_line0(), 0, &ent);
            if (ent.valid == ent.complete) {
                break;
            }
        }
        if (!(++k & 1023) && now_us() - t0 > TMO) {
            fail("no LH Buffer entry within %ld s", TMO / 1000000);
        }
        poll_pause(t0);
    }
    e = dn2_lhb(d) + lh_head;
    dn2_lh_unpack(*(const volatile uint64_t *)e, *(const volatile uint64_t *)(e + DN2_LINE), &ent);
    if (ent.rank != (unsigned)(me ^ 1) || ent.tag != size || ent.context != 0x5 ||
        ent.size != size) {
        fail("LH entry: context %u rank %u tag %u size %u; expected 5 %d %zu %zu",
             ent.context, ent.rank, ent.tag, ent.size, me ^ 1, size, size);
    }
    memcpy(l->in + 8, (const void *)(e + DN2_LHB_DATA_OFF),
           size < DN2_LHB_DATA ? size : DN2_LHB_DATA);
    if (size > DN2_LHB_DATA) {
        ring_read(ent.pointer, l->in + 8 + DN2_LHB_DATA, size - DN2_LHB_DATA);
        dn2_ring_consume(d, &ring, (uint32_t)(size - DN2_LHB_DATA));
    }
    dn2_lh_release(d);
    lh_head = (lh_head + DN2_LHB_ENTRY) % DN2_LHB_AREA;
    memcpy(l->in, &l->env, 8);          /* the envelope was decoded, not copied */
}

static void lhs_round(struct xfer *x)
{
    struct lhs_xfer *l = (struct lhs_xfer *)x;
    long bad = mismatch(l->in + 8, peer_pat, x->size);

    if (bad >= 0) {
        fail("LHS variant %d, %zu B: received byte %ld is 0x%02x, the peer sent 0x%02x",
             l->v, x->size, bad, l->in[8 + bad], peer_pat[bad]);
    }
}

static void lhs_start(struct xfer *x)
{
    struct lhs_xfer *l = (struct lhs_xfer *)x;

    l->c0 = dn2_count(d, l->v == V_LHSV2 ? DN2_PC_IPUSH : DN2_PC_BOTF);
    l->sent = 0;
}

static double lhs_pp(size_t size, int v)
{
    static struct lhs_xfer l;
    unsigned n = full ? 600 : 250;

    memset(&l, 0, sizeof(l));
    l.x = (struct xfer){ .what = "LHS ping-pong", .size = size, .start = lhs_start,
                         .send = lhs_send, .recv = lhs_recv, .round = lhs_round };
    l.v = v;
    l.len = 8 + size;
    l.env = dn2_envelope(0x5, (unsigned)me, (uint32_t)size);
    memcpy(l.msg, &l.env, 8);
    memcpy(l.msg + 8, my_pat, size);
    if (v == V_VLLHSV1 || v == V_LHSV2) {
        sd_write(SD_STAGE, my_pat, size);       /* the data is in SO-DIMM */
    }
    n = (unsigned)(n * scale) < 3 ? 3 : (unsigned)(n * scale);
    pingpong(&l.x, n, 3);
    /* Our last message may still be waiting in the Request FIFO; the next
     * control BOTF rewrites Write Window 0. */
    if (me == 1) {
        check(dn2_wait_count(d, v == V_LHSV2 ? DN2_PC_IPUSH : DN2_PC_BOTF, l.c0, l.sent, TMO),
              "last LHS/IPUSH to leave");
    }
    check_board();
    return rt_half_median();
}

static const size_t lhs_sizes_q[] = { 8, 24, 40, 48, 56, 72, 96, 120 };
static const size_t lhs_sizes_f[] = { 8, 16, 24, 32, 40, 48, 56, 64, 72, 80, 88, 96, 104, 112, 120 };

static void run_lhs(void)
{
    size_t ns, i;
    const size_t *sz = pick(lhs_sizes_q, NEL(lhs_sizes_q), lhs_sizes_f, NEL(lhs_sizes_f), 8, 120, &ns);
    double g_in = 0, g_out = 0, g2 = 0, spread = 0;
    int n_in = 0, n_out = 0;

    cur_test = "LHS";
    progress("%s", cur_test);
    title("LHS: tagged-message latency (RTT/2 µs), 8-byte envelope + data, received into host RAM "
          "(Fig 7.9)",
          "IPUSH-only: BOTF, status + envelope VL + data VL; IPUSH+LHSv1: BOTF, LH entry + VL "
          "beyond 48 B; VL+IPUSH+LHSv1: data VLed from SO-DIMM into the BOTF; LHSv2: envelope "
          "from the WW, data from SO-DIMM");
    out("%10s %11s %12s %12s %9s %13s %13s %9s\n", "data", "IPUSH-only", "IPUSH+LHSv1",
        "VL+LHSv1", "LHSv2", "IPUSH-LHSv1", "VLLHSv1-v2", "UDP");
    for (i = 0; i < ns; i++) {
        double a = lhs_pp(sz[i], V_IPUSH), b, c, e;
        spread += last_iqr2;
        b = lhs_pp(sz[i], V_LHSV1);
        spread += last_iqr2;
        c = lhs_pp(sz[i], V_VLLHSV1);
        spread += last_iqr2;
        e = lhs_pp(sz[i], V_LHSV2);
        spread += last_iqr2;
        if (sz[i] <= DN2_LHB_DATA) {
            g_in += a - b;
            n_in++;
        } else {
            g_out += a - b;
            n_out++;
        }
        g2 += c - e;
        out("%10s %11s %12s %12s %9s %13s %13s %9s\n", fmt_size(sz[i]), num(a, 2), num(b, 2),
            num(c, 2), num(e, 2), num(a - b, 2), num(c - e, 2), num(udp_pp(sz[i] + 8), 1));
    }
    out("%10s %11s %12s %12s %9s %13s %13s\n", "thesis", "", "", "", "", "~3 (<=48 B)", "~1-1.5");
    out("%10s %11s %12s %12s %9s %13s\n", "", "", "", "", "", "~2 (>48 B)");
    out("verdict: IPUSH+LHSv1 saves %s µs over IPUSH-only while the data fits the LH entry, %s µs "
        "beyond (thesis ~3 / ~2 µs); LHSv2 saves %s µs over VL+IPUSH+LHSv1 (thesis ~1-1.5 µs); "
        "spread of one figure (IQR/2) %s µs\n",
        num(n_in ? g_in / n_in : NAN, 2), num(n_out ? g_out / n_out : NAN, 2),
        num(ns ? g2 / ns : NAN, 2), num(ns ? spread / (4 * ns) : NAN, 2));
    /* Fig 7.9 (read off its plot, 0-6 µs): about 3 µs and 2 µs; LHSv2 over
     * VL+IPUSH+LHSv1 about 1-1.5 µs, taken as 1.25 */
    row("lhs-gain-v1-in", n_in ? g_in / n_in : NAN, 3.0, "us");
    row("lhs-gain-v1-out", n_out ? g_out / n_out : NAN, 2.0, "us");
    row("lhs-gain-v2", ns ? g2 / ns : NAN, 1.25, "us");
}


/* ============================================================ probe */

/* Where the time of one primitive goes in the emulator: the cost of one
 * User Register read, and a primitive's issue-to-completion time when the
 * host polls the board back to back (as the library does) or with gaps. */
static void run_probe(void)
{
    unsigned i, n = 2000, k;
    double t0, t, gaps[] = { 0, 5, 20, 50 };
    volatile uint64_t sink = 0;
    uint8_t b[512] = { 0 };

    cur_test = "probe";
    title("Where the time goes (emulator probe, rank 0's board)", NULL);
    if (me == 0) {
        char cs[64] = "?";
        FILE *f = fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource", "r");
        if (f) {
            if (fgets(cs, sizeof(cs), f)) {
                cs[strcspn(cs, "\n")] = 0;
            }
            fclose(f);
        }
        t0 = now_us();
        for (i = 0; i < 20000; i++) {
            sink += (uint64_t)now_us();
        }
        out("   clock_gettime(CLOCK_MONOTONIC): %.3f µs each (clocksource %s)\n",
            (now_us() - t0) / 20000, cs);
        t0 = now_us();
        for (i = 0; i < 20000; i++) {
            sink += dn2_ctl_status(d);
        }
        out("   User Register read (Controller Status): %.2f µs each\n", (now_us() - t0) / 20000);
        t0 = now_us();
        for (i = 0; i < 20000; i++) {
            sink += *llcm64(0x40);
        }
        out("   LLCM read (UC mapping, RAM in the emulator): %.3f µs each\n", (now_us() - t0) / 20000);
        {
            /* a nap of the sleep policy: what a wait that fails once costs */
            enum { NN = 1000 };
            static double nt[NN];
            struct timespec ts = { 0, 1000 };

            for (i = 0; i < NN; i++) {
                t0 = now_us();
                nanosleep(&ts, NULL);
                nt[i] = now_us() - t0;
            }
            qsort(nt, NN, sizeof(nt[0]), cmp_d);
            out("   nanosleep(1 µs), the sleep policy's nap: median %.0f µs, p90 %.0f, "
                "p99 %.0f, max %.0f (%d naps)\n", nt[NN / 2], nt[NN * 9 / 10],
                nt[NN * 99 / 100], nt[NN - 1], NN);
        }
        for (i = 0; i < 300; i++) {         /* warm-up: translation, first touch */
            dn2_ww_write(d, 0, b, 512);
            check(dn2_vs(d, 0, SD_STAGE, 512), "VS");
            check(dn2_wait_vs(d, 0, TMO), "VS");
            check(dn2_botf(d, 0, peer_lid, peer_wid, DN2_TO_LLCM, 0x80, b, 8, 0), "BOTF");
            check(dn2_wait_count(d, DN2_PC_BOTF, dn2_count(d, DN2_PC_BOTF) - 1, 1, TMO), "BOTF");
        }
        for (k = 0; k < sizeof(gaps) / sizeof(gaps[0]); k++) {
            n = 300;
            t0 = now_us();
            for (i = 0; i < n; i++) {
                dn2_ww_write(d, 0, b, 512);
                check(dn2_vs(d, 0, SD_STAGE, 512), "VS");
                if (gaps[k] == 0) {
                    check(dn2_wait_vs(d, 0, TMO), "VS");
                } else {
                    while (!(dn2_ctl_status(d) & DN2_CS_WW_DONE(0))) {
                        spin_us(gaps[k]);
                    }
                }
            }
            t = (now_us() - t0) / n;
            out("   VS 512 B issue -> Controller Status done, polling %s: %.1f µs\n",
                gaps[k] == 0 ? "back to back  " : gaps[k] == 5 ? "every  5 µs" :
                gaps[k] == 20 ? "every 20 µs" : "every 50 µs", t);
        }
        for (k = 0; k < sizeof(gaps) / sizeof(gaps[0]); k++) {
            struct dn2_botf_rr rr;
            n = 300;
            dn2_botf_rr_init(d, &rr, 1);
            t0 = now_us();
            for (i = 0; i < n; i++) {
                unsigned c = dn2_count(d, DN2_PC_BOTF);
                check(dn2_botf(d, 0, peer_lid, peer_wid, DN2_TO_LLCM, 0x80, b, 8, 0), "BOTF");
                if (gaps[k] == 0) {
                    check(dn2_wait_count(d, DN2_PC_BOTF, c, 1, TMO), "BOTF");
                } else {
                    while (((dn2_count(d, DN2_PC_BOTF) - c) & DN2_PC_MASK) < 1) {
                        spin_us(gaps[k]);
                    }
                }
            }
            t = (now_us() - t0) / n;
            out("   BOTF 8 B issue -> handed to the port (counter), polling %s: %.1f µs\n",
                gaps[k] == 0 ? "back to back  " : gaps[k] == 5 ? "every  5 µs" :
                gaps[k] == 20 ? "every 20 µs" : "every 50 µs", t);
        }
    }
    (void)sink;
    barrier();
}

/* ============================================================ main */

static int want(const char *only, const char *name)
{
    const char *p = only;
    size_t l = strlen(name);

    if (!only) {
        return strcmp(name, "botf-big") != 0 || full;
    }
    while ((p = strstr(p, name))) {
        if ((p == only || p[-1] == ',') && (p[l] == ',' || !p[l])) {
            return 1;
        }
        p += l;
    }
    return 0;
}

static void setup(void)
{
    unsigned value = (dn2_wid(d) * DN2_LLCM_WID_STRIDE + LL_AMT) / DN2_AMT_UNIT;
    uint8_t *fill;
    size_t i;

    my_lid = dn2_lid(d);
    if (!my_lid) {
        fail("the board has no LID: is the link up (dn2-up)?");
    }
    if (dn2_sdimm_bytes(d) && dn2_sdimm_bytes(d) < SD_STAGE + SD_SPAN) {
        fail("only %llu bytes of SO-DIMM: dn2-up -c 256 or more",
             (unsigned long long)dn2_sdimm_bytes(d));
    }
    /* Our control words first, then we may be seen. */
    for (i = 0; i < 0x40; i += 8) {
        *llcm64((uint32_t)i) = 0;
    }
    for (i = 0; i < LL_STATUS_LEN; i += 8) {
        *llcm64(LL_STATUS + (uint32_t)i) = 0;
    }
    check(dn2_status_ring_init(d, LL_STATUS, LL_STATUS_LEN), "status ring");
    lh_head = (uint32_t)(dn2_ur_read(d, DN2_UR_LHB_ADDR) & DN2_LHB_ADDR_MASK);
    check(dn2_ring_init(d, &ring, value, SD_RING, SD_RING_LEN), "IPUSH ring");
    check(dn2_admin_amt(d, peer_lid, peer_wid, value), "AMT Address Table (needs root)");
    my_pat = malloc(MAXMSG);
    peer_pat = malloc(MAXMSG);
    rxbuf = malloc(MAXMSG);
    fill = malloc(SD_SPAN);
    if (!my_pat || !peer_pat || !rxbuf || !fill) {
        fail("out of memory");
    }
    for (i = 0; i < MAXMSG; i++) {
        my_pat[i] = pat(me, i);
        peer_pat[i] = pat(me ^ 1, i);
    }
    for (i = 0; i < SD_SPAN; i++) {
        fill[i] = pat(me, i);
    }
    sd_write(SD_SRC, fill, SD_SPAN);
    /* Check the fill (and the VS/VL path) once. */
    sd_read(SD_SRC, rxbuf, 4096);
    if (mismatch(rxbuf, fill, 4096) >= 0) {
        fail("SO-DIMM VS/VL round trip: byte %ld differs", mismatch(rxbuf, fill, 4096));
    }
    free(fill);
    dn2_reset_counters(d);
}

static int run(const char *only, const char *udp_file)
{
    double t0 = now_us();

    setup();
    progress("rank %d: LID %u WID %d, peer LID %u WID %d; waiting for the peer", me, my_lid,
             dn2_wid(d), peer_lid, peer_wid);
    hello();
    barrier();
    if (udp_file && me == 0) {
        load_udp(udp_file);
    }
    out("DIMMnet-2 guest benchmark (dn2-bench%s): rank 0 LID %u WID %d <-> rank 1 LID %u WID %d\n",
        full ? " --full" : "", my_lid, dn2_wid(d), peer_lid, peer_wid);
    out("figures: ours under emulation | thesis (Pentium 4 2.6 GHz, PC-1600, real board) | "
        "UDP between the same guests%s\n", n_udp ? "" : " (not measured)");
    out("MB/s = 10^6 bytes/s; RTT/2 = half the round trip of a ping-pong, median; waiting: %s%s\n",
        poll_name, sleep_us > 0 ? " (poll, nanosleep between looks)" : gap_us > 0 ?
        " (poll with gaps)" : " (the library's polling loops)");
    if (n_udp) {
        int i;
        title("Baseline: UDP between the two guests over virtio-net (udp-bench, same run)",
              "ping-pong RTT/2 median; stream: datagrams of min(size, 1472) B, delivered MB/s");
        out("%10s %10s %12s %10s %10s\n", "size", "RTT/2 µs", "lost trips", "MB/s",
            "loss %");
        for (i = 0; i < n_udp; i++) {
            out("%10s %10s %12u %10s %10s\n", fmt_size(udp[i].size), num(udp[i].pp_us, 1),
                udp[i].pp_lost, num(udp[i].st_mbs, 2), num(udp[i].st_loss, 1));
        }
    }
    if (only && want(only, "probe")) run_probe();
    if (want(only, "botf")) run_botf();
    if (want(only, "botf-big")) run_botf_big();
    if (want(only, "rvs")) run_rvs();
    if (want(only, "ipush")) run_ipush();
    if (want(only, "lhs")) run_lhs();
    cur_test = "end";
    barrier();
    out("\ndn2-bench: done in %.1f s, data checked, no errors\n", (now_us() - t0) / 1e6);
    if (me) {
        printf("dn2-bench: rank %d done in %.1f s\n", me, (now_us() - t0) / 1e6);
    }
    return 0;
}

/* --poll tight | spin[:GAP_US] | sleep[:NAP_US] | hybrid[:SPIN_US] */
static int set_poll(const char *a)
{
    const char *c = strchr(a, ':');
    double v = c ? strtod(c + 1, NULL) : -1;
    size_t l = c ? (size_t)(c - a) : strlen(a);

    if (c && v <= 0) {
        return -1;
    }
    if (l == 5 && !strncmp(a, "tight", 5) && !c) {
        gap_us = 0, sleep_us = 0, spin_first_us = 0;
    } else if (l == 4 && !strncmp(a, "spin", 4)) {
        gap_us = c ? v : 2, sleep_us = 0, spin_first_us = 0;
    } else if (l == 5 && !strncmp(a, "sleep", 5)) {
        gap_us = 2, sleep_us = c ? v : 1, spin_first_us = 0;
    } else if (l == 6 && !strncmp(a, "hybrid", 6)) {
        gap_us = 2, sleep_us = 1, spin_first_us = c ? v : 30;
    } else {
        return -1;
    }
    poll_name = a;
    return 0;
}

static void usage(void)
{
    fprintf(stderr, "usage: dn2-bench [--full] [--only probe,botf,botf-big,rvs,ipush,lhs] "
            "[--sizes LIST] [--udp FILE] [--scale X]\n"
            "                 [--poll tight|spin[:US]|sleep[:US]|hybrid[:US]] [--stream-detail] [-q]\n");
}

int main(int argc, char **argv)
{
    static const struct option lo[] = {
        { "full", no_argument, NULL, 'f' },
        { "only", required_argument, NULL, 'o' },
        { "udp", required_argument, NULL, 'u' },
        { "scale", required_argument, NULL, 's' },
        { "poll", required_argument, NULL, 'P' },
        { "sizes", required_argument, NULL, 'S' },
        { "stream-detail", no_argument, NULL, 'D' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    const char *only = NULL, *udp_file = NULL, *ranks = getenv("DN2_RANKS");
    int opt, r;

    while ((opt = getopt_long(argc, argv, "qh", lo, NULL)) != -1) {
        switch (opt) {
        case 'f': full = 1; break;
        case 'o': only = optarg; break;
        case 'u': udp_file = optarg; break;
        case 's': scale = strtod(optarg, NULL); break;
        case 'q': quiet = 1; break;
        case 'D': stream_detail = 1; break;
        case 'S':
            n_user = bench_parse_sizes(optarg, user_sizes, 64, 8, MAXMSG);
            break;
        case 'P':
            if (set_poll(optarg)) {
                usage();
                return 2;
            }
            break;
        default: usage(); return 2;
        }
    }
    if (scale <= 0) {
        usage();
        return 2;
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    prctl(PR_SET_TIMERSLACK, 1UL);      /* short naps really short */

    if (ranks) {
        struct dn2_rank tab[DN2_MAX_RANKS > 64 ? 64 : DN2_MAX_RANKS];
        const char *rs = getenv("DN2_RANK") ? getenv("DN2_RANK") : getenv("DN2_NODE");
        int n = dn2_read_rank_table(ranks, tab, 64);

        me = rs ? atoi(rs) : 0;
        if (n < 2 || me < 0 || me > 1) {
            if (me > 1) {
                printf("dn2-bench: rank %d has nothing to do (ranks 0 and 1 measure)\n", me);
                return 0;
            }
            fprintf(stderr, "dn2-bench: rank table %s has %d ranks; need 2\n", ranks, n);
            return 1;
        }
        peer_lid = tab[me ^ 1].lid;
        peer_wid = tab[me ^ 1].wid;
        r = dn2_open(&d, NULL);
        if (r) {
            fprintf(stderr, "dn2-bench: cannot open /dev/dimmnet2-0: %s "
                    "(insmod dimmnet2.ko and dn2-up first)\n", dn2_strerror(r));
            return 1;
        }
        if (dn2_wid(d) != tab[me].wid) {
            fprintf(stderr, "dn2-bench: got WID %d, the rank table says %d\n", dn2_wid(d),
                    tab[me].wid);
            return 1;
        }
        return run(only, udp_file);
    }

    /* Loopback: one board cabled to itself; WID 0 is rank 0, WID 1 rank 1. */
    {
        pid_t pid = fork();
        int st = 0;

        if (pid < 0) {
            perror("fork");
            return 1;
        }
        if (pid == 0) {
            usleep(100000);     /* the parent takes WID 0 */
        }
        r = dn2_open(&d, NULL);
        if (r) {
            fprintf(stderr, "dn2-bench: cannot open /dev/dimmnet2-0: %s\n", dn2_strerror(r));
            return 1;
        }
        me = dn2_wid(d);
        peer_wid = me ^ 1;
        peer_lid = dn2_lid(d);
        r = run(only, udp_file);
        if (pid > 0) {
            waitpid(pid, &st, 0);
            if (!WIFEXITED(st) || WEXITSTATUS(st)) {
                r = 1;
            }
        }
        return r;
    }
}
