/* SPDX-License-Identifier: MIT */
/*
 * dn2-e2e: the cluster end-to-end suite, run on every node of a cluster
 * (scripts/cluster.sh) after `insmod dimmnet2.ko` and `dn2-up`.  Every rank
 * opens its board through the driver (WID 0) and takes part; rank 0 prints
 * TAP.  Ranks pair up (0,1), (2,3)...; the pair checks every network
 * primitive across the two boards with data verified byte for byte, then
 * all ranks run message passing over many sizes and tags and barriers.
 * Rank 1 also checks protection (a wrong-PGID packet is dropped) and that a
 * process killed in the middle of a transfer leaves the board usable.
 *
 * The data primitives use resources dn2msg does not: SO-DIMM from 64 MiB,
 * LLCM 0x5000-0x6fff, Prefetch Windows 0-2.  Completion is announced with
 * a dn2msg message after the data: the fabric delivers a sender's packets in
 * order, so when the note arrives the data is there.
 */
#include "libdimmnet2.h"
#include "dn2msg.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define SD_BASE   (64u << 20)        /* our data area in SO-DIMM */
#define LL_BASE   0x5000u            /* our LLCM area */
#define TMO       5000000L
#define TAG_NOTE  9000
#define TAG_SYNC  9001
#define ORDER_PAIRS 6000
#define ORDER_BULK  32768

#include "../tap/dn2-tap.h"

static int nranks;
static dn2_t *d;
static dn2_comm_t *c;

static void fill(uint8_t *p, size_t n, unsigned seed)
{
    size_t i;

    for (i = 0; i < n; i++) {
        p[i] = (uint8_t)(seed * 29 + i * 13 + (i >> 10));
    }
}

/* The sender's note after a primitive: "step s done". */
static int note(int peer, int step)
{
    return dn2_send(c, peer, TAG_NOTE, &step, sizeof(step));
}

static int wait_note(int peer, int step)
{
    struct dn2_msg_status st;
    int got = -1, r = dn2_recv(c, peer, TAG_NOTE, &got, sizeof(got), &st);

    return r ? r : (got == step ? 0 : -EPROTO);
}

/* One primitive test: the odd rank of a pair checks the data and sends its
 * verdict to the even rank (waiter), so rank 0 prints what rank 1 saw. */
static void verdict(int peer, int waiter, int ok, const char *what)
{
    int v = ok;

    if (waiter) {
        struct dn2_msg_status st;
        int r = dn2_recv(c, peer, TAG_SYNC, &v, sizeof(v), &st);
        CHECK(!r && v == 1 && ok, "%s", what);
    } else {
        dn2_send(c, peer, TAG_SYNC, &v, sizeof(v));
        CHECK(ok, "%s", what);
    }
}

/*
 * The pair's state, shared by its tests in the order pair_tests runs them:
 * the peer, which side this rank is (the even rank sends), the peer's LID,
 * the step counter of the notes, the data buffers (a holds the pattern the
 * SO-DIMM tests after pair_rvs read back), and WID 1's ring on the
 * receiving side (opened by pair_wid1_ipush_lhsv1, used and closed by
 * pair_register_order).
 */
static int peer, sender, step;
static uint16_t plid;
static uint8_t a[1 << 16], b[1 << 16];
static struct dn2_ring ring;
static dn2_t *w1r;
static uint64_t pkt_before;

/* BOTF into the peer's LLCM, 1/2/4 windows. */
static void pair_botf(void)
{
    int r, ok, i;

    for (i = 1; i <= 4; i <<= 1) {
        struct dn2_botf_rr rr;
        int k;
        step++;
        if (sender) {
            dn2_botf_rr_init(d, &rr, i);
            for (k = 0, r = 0; k < 8 && !r; k++) {
                fill(a, 200, 100 * i + k);
                r = dn2_botf_rr_send(d, &rr, plid, 0, DN2_TO_LLCM, LL_BASE + 256 * k, a, 200, 0);
            }
            if (!r) r = dn2_botf_rr_drain(d, &rr, TMO);
            note(peer, step);
            ok = !r;
        } else {
            ok = !wait_note(peer, step);
            for (k = 0; k < 8 && ok; k++) {
                fill(a, 200, 100 * i + k);
                ok = !memcmp((const void *)(dn2_llcm(d) + LL_BASE + 256 * k), a, 200);
            }
        }
        char what[80];
        snprintf(what, sizeof(what), "BOTF x8 to the peer's LLCM through %d Write Window(s)", i);
        verdict(peer, sender, ok, what);
    }
}

/* RVS, RVSS, RVSI into the peer's SO-DIMM.  pair_rvs writes the pattern
 * (seed 7) the SO-DIMM tests after it read back. */
static void pair_rvs(void)
{
    int r, ok;

    fill(a, sizeof(a), 7);
    if (sender) {
        r = dn2_sd_write(d, SD_BASE, a, sizeof(a), 1, TMO);
    }
    step++;
    if (sender) {
        r = dn2_rvs(d, plid, 0, SD_BASE, SD_BASE + 0x100000, sizeof(a), NULL, 0);
        note(peer, step);
        ok = !r;
    } else {
        ok = !wait_note(peer, step) && !dn2_sd_read(d, SD_BASE + 0x100000, b, sizeof(a), 1, TMO) &&
             !memcmp(a, b, sizeof(a));
    }
    verdict(peer, sender, ok, "RVS 64 KiB SO-DIMM to SO-DIMM across boards");
}

static void pair_rvss(void)
{
    int r, ok, i;

    step++;
    if (sender) {
        r = dn2_rvss(d, plid, 0, SD_BASE, SD_BASE + 0x200000, DN2_DTYPE_8B, 200, 32, NULL, 0);
        note(peer, step);
        ok = !r;
    } else {
        ok = !wait_note(peer, step) && !dn2_sd_read(d, SD_BASE + 0x200000, b, 200 * 32, 1, TMO);
        for (i = 0; i < 200 && ok; i++) {
            ok = !memcmp(b + 32 * i, a + 8 * i, 8);
        }
    }
    verdict(peer, sender, ok, "RVSS 200 x 8 bytes scattered with stride 32 on the peer");
}

static void pair_rvsi(void)
{
    int r, ok, i;

    step++;
    if (!sender) {
        /* The list lives in the receiver's SO-DIMM: element i -> 64*(15-i). */
        uint32_t list[16];
        for (i = 0; i < 16; i++) {
            list[i] = 64u * (15 - i);
        }
        dn2_sd_write(d, SD_BASE + 0x300000, (uint8_t *)list, sizeof(list), 1, TMO);
        note(peer, step);
    } else {
        wait_note(peer, step);
    }
    step++;
    if (sender) {
        r = dn2_rvsi(d, plid, 0, SD_BASE, SD_BASE + 0x310000, DN2_DTYPE_16B, 16,
                     SD_BASE + 0x300000, NULL, 0);
        note(peer, step);
        ok = !r;
    } else {
        ok = !wait_note(peer, step) && !dn2_sd_read(d, SD_BASE + 0x310000, b, 1024, 1, TMO);
        for (i = 0; i < 16 && ok; i++) {
            ok = !memcmp(b + 64 * (15 - i), a + 16 * i, 16);
        }
    }
    verdict(peer, sender, ok, "RVSI 16 x 16 bytes through a list in the peer's SO-DIMM");
}

/* RVL / RVLS: the receiver pulls from the sender's SO-DIMM. */
static void pair_rvl(void)
{
    int r, ok;

    step++;
    if (!sender) {
        r = dn2_rvl(d, plid, 0, SD_BASE + 0x100, 0x200, 512, NULL, DN2_F_TO_PW);
        if (!r) r = dn2_wait_pw(d, 1, TMO);
        dn2_pw_read(d, 0x200, b, 512);
        ok = !r && !memcmp(b, a + 0x100, 512);
        note(peer, step);
    } else {
        ok = !wait_note(peer, step);
    }
    verdict(peer, sender, ok, "RVL 512 bytes from the peer's SO-DIMM into our Prefetch Window");
}

static void pair_rvls(void)
{
    int r, ok, i;

    step++;
    if (!sender) {
        r = dn2_rvls(d, plid, 0, SD_BASE, 0x400, DN2_DTYPE_4B, 64, 8, NULL, DN2_F_TO_PW);
        if (!r) r = dn2_wait_pw(d, 2, TMO);
        dn2_pw_read(d, 0x400, b, 256);
        for (i = 0, ok = !r; i < 64 && ok; i++) {
            ok = !memcmp(b + 4 * i, a + 8 * i, 4);
        }
        note(peer, step);
    } else {
        ok = !wait_note(peer, step);
    }
    verdict(peer, sender, ok, "RVLS gathers 64 strided elements from the peer");
}

/* RVLI: the odd rank pulls 8 elements of 32 bytes listed in the
 * sender's SO-DIMM (the list lives on the responder). */
static void pair_rvli(void)
{
    int r, ok, i;

    step++;
    if (sender) {
        uint32_t list[8];
        for (i = 0; i < 8; i++) {
            list[i] = 256u * (7 - i) + 32u;
        }
        dn2_sd_write(d, SD_BASE + 0x500000, (uint8_t *)list, sizeof(list), 1, TMO);
        note(peer, step);
        ok = 1;
    } else {
        ok = !wait_note(peer, step);
    }
    step++;
    if (!sender) {
        r = dn2_rvli(d, plid, 0, SD_BASE, 0x600, DN2_DTYPE_32B, 8, SD_BASE + 0x500000,
                     NULL, DN2_F_TO_PW);
        if (!r) r = dn2_wait_pw(d, 3, TMO);
        dn2_pw_read(d, 0x600, b, 256);
        for (i = 0, ok = !r; i < 8 && ok; i++) {
            ok = !memcmp(b + 32 * i, a + 256 * (7 - i) + 32, 32);
        }
        note(peer, step);
    } else {
        ok = !wait_note(peer, step);
    }
    verdict(peer, sender, ok, "RVLI gathers 8 listed elements from the peer");
}

/* IPUSH and LHSv1 from the even rank's WID 1 to the odd rank's WID 1:
 * a second process on each board, with its own ring, status ring and
 * LH Buffer (dn2msg owns those of WID 0). */
static void pair_wid1_ipush_lhsv1(void)
{
    int r, ok;

    step++;
    if (!sender) {
        dn2_t *ctl;
        r = dn2_open(&w1r, NULL);
        if (!r && dn2_wid(w1r) != 1) r = -EBUSY;
        if (!r) r = dn2_ring_init(w1r, &ring, (DN2_LLCM_WID_STRIDE + 0x6800) / DN2_AMT_UNIT,
                                  SD_BASE + 0x700000, 64 * 1024);
        if (!r) r = dn2_status_ring_init(w1r, 0x7000, 1024);
        if (!r && !(r = dn2_open_control(&ctl, NULL))) {
            r = dn2_admin_amt(ctl, plid, 1, ring.amt_value);
            dn2_close(ctl);
        }
        ok = !r;
        note(peer, step);
    } else {
        ok = !wait_note(peer, step);
    }
    step++;
    if (sender) {
        dn2_t *w1;
        uint64_t env = dn2_envelope(4, 3, 0x5151);
        uint8_t msg[208];
        r = dn2_open(&w1, NULL);
        if (!r && dn2_wid(w1) != 1) r = -EBUSY;
        if (!r) {
            memcpy(msg, &env, 8);
            memcpy(msg + 8, a + 1000, 200);
            r = dn2_sd_write(w1, 0, a, 3000, 1, TMO);
            if (!r) r = dn2_sd_write(w1, 0x4000, msg, sizeof(msg), 1, TMO);
            if (!r) r = dn2_ipush(w1, plid, 1, 0, 3000, DN2_F_EFLAG);
            if (!r) r = dn2_lhsv1(w1, plid, 1, 0x4000, sizeof(msg), 0);
            dn2_close(w1);
        }
        ok = !r;
        note(peer, step);
    } else {
        uint32_t at, got = 0;
        struct dn2_lh_msg lh;
        ok = !wait_note(peer, step) && w1r;
        /* The IPUSH data lands packet by packet (a record for each). */
        while (ok && got < 3000) {
            struct dn2_rx_status st;
            if (dn2_status_next(w1r, &st, TMO) != 1 || st.type != DN2_OP_IPUSH ||
                dn2_ring_avail(w1r, &ring, &at) < st.size || at != st.addr ||
                dn2_sd_read(w1r, at, b + got, st.size, 1, TMO)) {
                ok = 0;
                break;
            }
            dn2_ring_consume(w1r, &ring, st.size);
            got += st.size;
        }
        ok = ok && got == 3000 && !memcmp(b, a, 3000);
        if (ok) {
            int n = dn2_lh_next(w1r, &lh, TMO);
            ok = n == 1 && !dn2_lh_wait_complete(w1r, &lh, TMO) && lh.context == 4 &&
                 lh.rank == 3 && lh.tag == 0x5151 && lh.size == 200 &&
                 !memcmp(lh.data, a + 1000, 48) && !dn2_sd_read(w1r, lh.pointer, b, 152, 1, TMO) &&
                 !memcmp(b, a + 1048, 152);
            if (n == 1) {
                dn2_lh_release(w1r);
                dn2_ring_consume(w1r, &ring, 152);
            }
        }
    }
    verdict(peer, sender, ok, "IPUSH 3000 bytes and an LHSv1 message between the two "
            "boards' WID 1, through an IPUSH ring and the LH Buffer");
}

/* A later packet's effect in memory never precedes an earlier packet's
 * registers, as on the board: pairs "RVS with a status record, then an
 * LHSv1 message" back to back; each time the receiver sees an LH
 * Buffer entry (its Valid toggle, memory only: dn2_lh_ready), the
 * Status Address register must already show the RVS's record (an RVS
 * of ORDER_BULK bytes follows each pair, so that the receiver's batch
 * goes on after the entry).  The
 * receiving vCPU polls while the board takes a batch of packets in, so
 * this catches a register mirror published only at the end of the
 * batch (choice #56), which a qtest cannot. */
static void pair_register_order(void)
{
    int r, ok, i;

    step++;
    if (sender) {
        dn2_t *w1 = NULL;
        uint64_t env = dn2_envelope(5, 3, 0x6262);
        uint8_t msg[56];
        r = dn2_open(&w1, NULL);
        if (!r && dn2_wid(w1) != 1) r = -EBUSY;
        if (!r) {
            memset(msg, 0x5a, sizeof(msg));
            memcpy(msg, &env, 8);
            r = dn2_sd_write(w1, 0x5000, msg, sizeof(msg), 1, TMO);
            for (i = 0; i < ORDER_PAIRS && !r; i++) {
                r = dn2_rvs(w1, plid, 1, 0, 0x10000, 64, NULL, DN2_F_EFLAG);
                if (!r) r = dn2_lhsv1(w1, plid, 1, 0x5000, sizeof(msg), 0);
                /* bulk after the entry: the receiver's batch goes on while
                 * the entry is already visible (the window this catches) */
                if (!r) r = dn2_rvs(w1, plid, 1, 0, 0x20000, ORDER_BULK, NULL, 0);
            }
        }
        {
            struct dn2_msg_status st;
            int v[3] = { 0, -1, -1 };   /* the receiver's ok, early, entries */
            int rr = dn2_recv(c, peer, TAG_SYNC, v, sizeof(v), &st);
            CHECK(!r && !rr && v[0] == 1, "the registers of each packet are visible "
                  "before the next packet's LH Buffer entry (RVS+eflag, LHSv1, RVS %d B; x%d: "
                  "%d of %d entries seen before the previous packet's status record)",
                  ORDER_BULK, ORDER_PAIRS, v[1], v[2]);
        }
        if (w1) {
            dn2_close(w1);
        }
    } else {
        unsigned early = 0;
        ok = w1r != NULL;
        for (i = 0; ok && i < ORDER_PAIRS; i++) {
            struct dn2_rx_status st;
            struct dn2_lh_msg lh;
            struct timespec t0, t1;
            int n;
            clock_gettime(CLOCK_MONOTONIC, &t0);
            while (!dn2_lh_ready(w1r)) {
                clock_gettime(CLOCK_MONOTONIC, &t1);
                if (t1.tv_sec - t0.tv_sec > TMO / 1000000) {
                    ok = 0;
                    break;
                }
            }
            if (!ok) {
                break;
            }
            n = dn2_status_next(w1r, &st, 0);      /* one register read */
            if (n != 1) {
                early++;
                n = dn2_status_next(w1r, &st, TMO);
            }
            ok = n == 1 && st.type == DN2_OP_RVS && dn2_lh_next(w1r, &lh, TMO) == 1 &&
                 lh.tag == 0x6262 && lh.context == 5;
            if (ok) {
                dn2_lh_release(w1r);
            }
        }
        {
            int v[3] = { ok && !early, (int)early, i };
            dn2_send(c, peer, TAG_SYNC, v, sizeof(v));
            CHECK(v[0], "the registers of each packet are visible before the next "
                  "packet's LH Buffer entry (%d of %d entries early)", v[1], v[2]);
        }
        if (w1r) {
            dn2_close(w1r);
            w1r = NULL;
        }
    }
}

/* Local strided/list forms and the SO-DIMM copy, on each board. */
static void pair_local_forms(void)
{
    int r, ok, i;

    {
        uint32_t list[16];
        step++;
        fill(a, 4096, 40 + me);
        r = dn2_sd_write(d, SD_BASE + 0x800000, a, 4096, 1, TMO);
        dn2_ww_write(d, 0, a, 512);         /* VSS/VSI take their data from WW0 */
        if (!r) r = dn2_vss(d, 0, SD_BASE + 0x810000, DN2_DTYPE_8B, 64, 24);
        if (!r) r = dn2_wait_vs(d, 0, TMO);
        if (!r) r = dn2_sd_read(d, SD_BASE + 0x810000, b, 64 * 24, 1, TMO);
        ok = !r;
        for (i = 0; i < 64 && ok; i++) {
            ok = !memcmp(b + 24 * i, a + 8 * i, 8);
        }
        for (i = 0; i < 16; i++) {
            list[i] = 128u * (15 - i);
        }
        if (ok) ok = !dn2_sd_write(d, SD_BASE + 0x820000, (uint8_t *)list, sizeof(list), 1, TMO);
        dn2_ww_write(d, 0, a, 512);
        if (ok) ok = !dn2_vsi(d, 0, SD_BASE + 0x830000, DN2_DTYPE_16B, 16, SD_BASE + 0x820000) &&
                     !dn2_wait_vs(d, 0, TMO) && !dn2_sd_read(d, SD_BASE + 0x830000, b, 2048, 1, TMO);
        for (i = 0; i < 16 && ok; i++) {
            ok = !memcmp(b + 128 * (15 - i), a + 16 * i, 16);
        }
        if (ok) ok = !dn2_vli(d, SD_BASE + 0x800000, 0x200, DN2_DTYPE_8B, 16,
                              SD_BASE + 0x820000) && !dn2_wait_pw(d, 1, TMO);
        if (ok) {
            dn2_pw_read(d, 0x200, b, 128);
            for (i = 0; i < 16 && ok; i++) {
                ok = !memcmp(b + 8 * i, a + 128 * (15 - i), 8);
            }
        }
        if (ok) ok = !dn2_copy(d, SD_BASE + 0x800000, NULL, SD_BASE + 0x840000, NULL, 4096) &&
                     !dn2_wait_vs(d, 3, TMO) && !dn2_sd_read(d, SD_BASE + 0x840000, b, 4096, 1, TMO) &&
                     !memcmp(a, b, 4096);
        verdict(peer, sender, ok, "local VSS, VSI, VLI and the SO-DIMM copy on the peer's board");
    }
}

/* Protection: the receiver gives WID 1 another PGID; a BOTF from the
 * sender to WID 1 must be dropped, not written. */
static void pair_pgid_drop(void)
{
    int r, ok;

    step++;
    if (!sender) {
        dn2_t *ctl;
        r = dn2_open_control(&ctl, NULL);
        if (!r) {
            dn2_t *t;
            r = dn2_admin_pgid(ctl, 1, 200);
            dn2_close(ctl);
            if (!r && !(r = dn2_open(&t, NULL))) {
                pkt_before = dn2_packet_counter(t);
                dn2_close(t);
            }
        }
        note(peer, step);
        ok = !r;
    } else {
        ok = !wait_note(peer, step);
    }
    step++;
    if (sender) {
        fill(a, 64, 77);
        r = dn2_botf(d, 0, plid, 1, DN2_TO_LLCM, LL_BASE, a, 64, 0);
        note(peer, step);
        ok = !r;
    } else {
        dn2_t *w1;
        ok = !wait_note(peer, step);
        /* Our WID 1's LLCM must not hold the packet. */
        r = dn2_open(&w1, NULL);
        if (!r && dn2_wid(w1) == 1) {
            fill(a, 64, 77);
            usleep(200000);
            ok = ok && memcmp((const void *)(dn2_llcm(w1) + LL_BASE), a, 64) &&
                 dn2_packet_counter(w1) == pkt_before;
            dn2_close(w1);
        } else {
            ok = 0;
            if (!r) dn2_close(w1);
        }
    }
    verdict(peer, sender, ok, "a packet whose PGID differs from the receiving WID's is dropped");
}

/* A process killed in the middle of a transfer leaves the board usable:
 * the receiver forks a child that takes WID 1 and streams RVS to the
 * sender, kills it, then a new process uses WID 1 for a round trip. */
static void pair_killed_process(void)
{
    int ok;

    step++;
    if (!sender) {
        pid_t pid = fork();
        if (pid == 0) {
            dn2_t *w1;
            if (dn2_open(&w1, NULL) == 0) {
                dn2_admin_pgid(w1, 1, 1);
                for (;;) {
                    dn2_rvs(w1, plid, 0, 0, SD_BASE + 0x400000, 1 << 20, NULL, 0);
                }
            }
            _exit(1);
        }
        usleep(300000);
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        {
            dn2_t *ctl, *w1;
            ok = dn2_open_control(&ctl, NULL) == 0 && dn2_admin_pgid(ctl, 1, 1) == 0;
            if (ok) dn2_close(ctl);
            ok = ok && dn2_open(&w1, NULL) == 0;
            if (ok) {
                ok = dn2_wid(w1) == 1;
                fill(a, 512, 3);
                dn2_ww_write(w1, 0, a, 512);
                ok = ok && !dn2_vs(w1, 0, 0x1000, 512) && !dn2_wait_vs(w1, 0, TMO) &&
                     !dn2_vl(w1, 0x1000, 0, 512) && !dn2_wait_pw(w1, 0, TMO);
                dn2_pw_read(w1, 0, b, 512);
                ok = ok && !memcmp(a, b, 512);
                dn2_close(w1);
            }
        }
        note(peer, step);
    } else {
        ok = !wait_note(peer, step);
    }
    verdict(peer, sender, ok, "after a process is killed mid-transfer, its WID is "
            "free and the board works");
}

/* The pair tests, one function each, in the order they run (each point's
 * number is the same on both ranks). */
static void (*const pair_table[])(void) = {
    pair_botf, pair_rvs, pair_rvss, pair_rvsi, pair_rvl, pair_rvls, pair_rvli,
    pair_wid1_ipush_lhsv1, pair_register_order, pair_local_forms, pair_pgid_drop,
    pair_killed_process,
};

static void pair_tests(int with)
{
    size_t k;

    peer = with;
    sender = !(me & 1);
    step = 0;
    w1r = NULL;
    pkt_before = 0;
    {
        /* The peer's LID comes from the rank table the job started with. */
        const char *path = getenv("DN2_RANKS");
        struct dn2_rank tab[64];
        int n = path ? dn2_read_rank_table(path, tab, 64) : -1;
        plid = (n > peer) ? tab[peer].lid : 0;
    }
    for (k = 0; k < sizeof(pair_table) / sizeof(pair_table[0]); k++) {
        pair_table[k]();
    }
}

int main(void)
{
    static uint8_t out[1 << 20], in[1 << 20];
    static const size_t sizes[] = { 0, 8, 100, 504, 505, 8000, 16384, 16385, 300000 };
    const char *rk = getenv("DN2_RANK") ? getenv("DN2_RANK") : getenv("DN2_NODE");
    struct dn2_msg_status st;
    int r, k;
    unsigned i;

    me = rk ? atoi(rk) : 0;
    r = dn2_open(&d, NULL);
    if (!r) {
        r = dn2_comm_init_env(&c, d, NULL);
    }
    if (r) {
        me = 0;                 /* this rank's failure is the report */
        tap_plan(1);
        tap_result(false, "rank %s cannot start: %s", rk ? rk : "0", dn2_strerror(r));
        return tap_exit_code();
    }
    nranks = dn2_comm_size(c);
    tap_plan(15 + (int)(sizeof(sizes) / sizeof(sizes[0])) + 3);
    CHECK(dn2_wid(d) == 0, "rank %d opened its board through the driver (WID %d) "
          "in a job of %d ranks", me, dn2_wid(d), nranks);

    if ((me ^ 1) < nranks) {
        pair_tests(me ^ 1);
    } else {
        for (k = 0; k < 14; k++) {
            CHECK(1, "rank %d has no pair partner (odd job size)", me);
        }
    }
    dn2_barrier(c);

    /* Message passing: a ring over all ranks, many sizes and tags. */
    for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        int to = (me + 1) % nranks, from = (me - 1 + nranks) % nranks;
        int ok = 1;
        fill(out, sizes[i], 1000 + me * 10 + i);
        if (nranks > 1) {
            if (me % 2 == 0) {
                r = dn2_send(c, to, (int)i, out, sizes[i]);
                if (!r) r = dn2_recv(c, from, (int)i, in, sizeof(in), &st);
            } else {
                r = dn2_recv(c, from, (int)i, in, sizeof(in), &st);
                if (!r) r = dn2_send(c, to, (int)i, out, sizes[i]);
            }
            fill(out, sizes[i], 1000 + from * 10 + i);
            ok = !r && st.len == sizes[i] && st.source == from && !memcmp(in, out, sizes[i]);
        }
        CHECK(ok, "ring exchange of %zu bytes over %d ranks: %s", sizes[i], nranks,
              dn2_strerror(r));
    }

    /* Tags received in reverse order, from every rank to rank 0. */
    if (me != 0) {
        for (k = 0; k < 4; k++) {
            fill(out, 3000, me * 100 + k);
            dn2_send(c, 0, 500 + k, out, 3000);
        }
        CHECK(1, "sent 4 tagged messages to rank 0");
    } else {
        int good = 0, want = 4 * (nranks - 1);
        int src;
        for (src = 1; src < nranks; src++) {
            for (k = 3; k >= 0; k--) {
                r = dn2_recv(c, src, 500 + k, in, sizeof(in), &st);
                fill(out, 3000, src * 100 + k);
                good += !r && st.len == 3000 && !memcmp(in, out, 3000);
            }
        }
        CHECK(good == want, "rank 0 matched %d of %d messages by source and tag, out of "
              "send order", good, want);
    }
    for (k = 0, r = 0; k < 10 && !r; k++) {
        r = dn2_barrier(c);
    }
    CHECK(!r, "10 barriers over %d ranks", nranks);
    CHECK(!(dn2_ctl_status(d) & (DN2_CS_RX_OVF | DN2_CS_RX_ERR_MASK | DN2_CS_REQ_ERROR)),
          "no error bits in Controller Status (0x%llx)",
          (unsigned long long)dn2_ctl_status(d));

    dn2_comm_free(c);
    dn2_close(d);
    tap_diag("%d of %d checks failed on rank 0", tap_failures(), tap_count());
    return tap_exit_code();
}
