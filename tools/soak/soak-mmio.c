/* SPDX-License-Identifier: MIT */
/*
 * Phase 1 of dn2-soak (tools/soak/dn2-soak.c, which documents every
 * phase): random guest MMIO.
 */
#define _GNU_SOURCE 1
#include "soak.h"

struct soak_p1 P1;

static const uint32_t ur_regs[] = {
    DN2_UR_CMD0_LOWER, DN2_UR_CMD0_UPPER, DN2_UR_CMD_EX, DN2_UR_CMD1_LOWER, DN2_UR_CMD1_UPPER,
    DN2_UR_CTL_STATUS, DN2_UR_PRIM_COUNTER, DN2_UR_PW_FLAG, DN2_UR_PKT_COUNTER,
    DN2_UR_IPUSH_AREA_SIZE, DN2_UR_LHB_ADDR, DN2_UR_MODULE_STATE, DN2_UR_STATUS_INIT,
    DN2_UR_STATUS_SIZE, DN2_UR_STATUS_ADDR, DN2_UR_CMD_EX_FLAG,
};

static const uint32_t sr_regs[] = {
    DN2_SR_SDIMM_INIT, DN2_SR_SDIMM_CAPACITY, DN2_SR_MTU, DN2_SR_SMA, DN2_SR_LID,
    DN2_SR_PGID0, DN2_SR_PGID1, DN2_SR_CTL_RESET, DN2_SR_AMT,
};

static const uint8_t valid_ops[] = {
    DN2_OP_BOTF, DN2_OP_VL, DN2_OP_VLS, DN2_OP_VLI, DN2_OP_VS, DN2_OP_VSS, DN2_OP_VSI,
    DN2_OP_RVL, DN2_OP_RVLS, DN2_OP_RVLI, DN2_OP_RVS, DN2_OP_RVSS, DN2_OP_RVSI,
    DN2_OP_IPUSH, DN2_OP_LHSV1, DN2_OP_LHSV2,
};

typedef struct FuzzCtx {
    Rng *r;
    uint16_t own, peer;         /* LIDs */
    uint8_t fp;                 /* the fuzz PGID (never PG) */
    uint64_t area;
} FuzzCtx;

static uint32_t fz_off(FuzzCtx *f)
{
    Rng *r = f->r;

    switch (rndn(r, 10)) {
    case 0: case 1: case 2: case 3:
        return (uint32_t)rndn(r, DN2_WIN_AREA + 64);            /* window offsets */
    case 4: case 5: case 6:
        return (uint32_t)rndn(r, f->area + 4096) & ~(uint32_t)(rndn(r, 2) ? 7 : 0);
    case 7:
        return DN2_COPY_OFF;
    default:
        return (uint32_t)rnd(r);
    }
}

static uint32_t fz_arg(FuzzCtx *f, bool remote)
{
    Rng *r = f->r;
    unsigned k = (unsigned)rndn(r, 100);

    if (k < 55) {
        return (uint32_t)rndn(r, 4097);
    }
    if (k < 85) {
        return (uint32_t)rndn(r, 64 * KiB);
    }
    if (k < 93) {
        return (uint32_t)rndn(r, remote ? MiB : 16 * MiB);
    }
    if (k < 96) {
        static const uint32_t sp[] = { 0, 1, 8, 512, 2048, 4096, 0xffffffffu, 0x80000000u };
        return sp[rndn(r, 8)];
    }
    return remote && rndn(r, 4) ? (uint32_t)rndn(r, 4 * MiB) : (uint32_t)rnd(r);
}

static uint64_t fz_lower(FuzzCtx *f)
{
    Rng *r = f->r;
    unsigned k = (unsigned)rndn(r, 100), otype, clid;

    otype = k < 75 ? valid_ops[rndn(r, sizeof(valid_ops))] : k < 85 ? 0 : (unsigned)rndn(r, 32);
    k = (unsigned)rndn(r, 100);
    clid = k < 45 ? dn2_lid_to_clid(f->peer) : k < 65 ? dn2_lid_to_clid(f->own) :
           k < 75 ? (unsigned)(DN2_CLID_MCAST_FIRST + rndn(r, 0x400)) : (unsigned)rndn(r, 4096);
    if (otype == DN2_OP_BOTF && rndn(r, 2)) {
        return dn2_botf_lower((unsigned)rndn(r, 4), (unsigned)rndn(r, 600));
    }
    return dn2_req_lower(otype, (unsigned)rndn(r, 8),
                         rndn(r, 2) ? (unsigned)rndn(r, 17) : (unsigned)rndn(r, 256), clid,
                         (unsigned)rndn(r, 2), (unsigned)rndn(r, 2), fz_arg(f, otype >= 0x10));
}

static uint64_t fz_ex(FuzzCtx *f)
{
    static const uint8_t ex_ops[] = { DN2_OP_VL, DN2_OP_VLS, DN2_OP_VLI, DN2_OP_VS, DN2_OP_VSS,
                                      DN2_OP_VSI };
    Rng *r = f->r;

    if (rndn(r, 8) == 0) {
        return rnd(r);
    }
    return dn2_req_ex(ex_ops[rndn(r, sizeof(ex_ops))], (unsigned)rndn(r, 8),
                      (unsigned)rndn(r, 256), fz_arg(f, false));
}


/* A register value: plausible for the register most of the time. */
static uint64_t fz_regval(FuzzCtx *f, bool system, uint32_t reg)
{
    Rng *r = f->r;

    if (rndn(r, 6) == 0) {
        return rnd(r);
    }
    if (system) {
        switch (reg) {
        case DN2_SR_SDIMM_CAPACITY: return 1u << rndn(r, 7);
        case DN2_SR_MTU: return 1u << rndn(r, 6);
        case DN2_SR_SDIMM_INIT: return rndn(r, 4);
        case DN2_SR_LID: return rndn(r, 2) ? f->own : rnd(r) & 0xffff;
        case DN2_SR_PGID0: case DN2_SR_PGID1: return rndn(r, 3) ? f->fp : rnd(r) & 0xff;
        case DN2_SR_AMT:
            /* the thesis's per-board form, or one receiving process's (#52) */
            return rndn(r, 2) ? dn2_amt_encode((uint32_t)rndn(r, 0x1000), (uint32_t)rndn(r, 2),
                                               rndn(r, 2) ? f->peer : f->own) :
                   dn2_amt_encode_dwid((uint32_t)rndn(r, 0x1000), (uint32_t)rndn(r, 2),
                                       rndn(r, 2) ? f->peer : f->own, (uint32_t)rndn(r, 2));
        default: return rnd(r);
        }
    }
    switch (reg) {
    case DN2_UR_CMD0_UPPER: case DN2_UR_CMD1_UPPER:
        return dn2_req_upper(fz_off(f), fz_off(f));
    case DN2_UR_CMD_EX: return fz_ex(f);
    case DN2_UR_CMD0_LOWER: case DN2_UR_CMD1_LOWER: return fz_lower(f);
    case DN2_UR_STATUS_INIT: return rndn(r, DN2_LLCM_AREA) & ~15ull;
    case DN2_UR_STATUS_SIZE: return 1u << rndn(r, 8);
    case DN2_UR_STATUS_ADDR: return rndn(r, DN2_LLCM_AREA) & ~15ull;
    case DN2_UR_LHB_ADDR: return rndn(r, 4096);
    case DN2_UR_IPUSH_AREA_SIZE: return rndn(r, 0x10000);
    case DN2_UR_CMD_EX_FLAG: return rndn(r, 2);
    default: return rnd(r);
    }
}


/*
 * Writes that would end the fuzzing's own premise are tamed: a PGID of PG
 * (the known-good traffic's) becomes the fuzz PGID; an SMA software reset
 * (the link renegotiates: ~0.1 s of waiting) stays rare.  Controller
 * Resets come from fz_step's own draw.
 */
static bool fz_tame(FuzzCtx *f, uint64_t addr_off, unsigned size, uint64_t *v)
{
    if (addr_off < DN2_SR_BASE || addr_off >= DN2_SR_BASE + DN2_SR_PAGE) {
        return true;
    }
    addr_off -= DN2_SR_BASE;
    if (size != 8 || (addr_off & 7)) {
        return true;                    /* ignored by the device */
    }
    if ((addr_off == DN2_SR_PGID0 || addr_off == DN2_SR_PGID1) && (*v & 0xff) == PG) {
        *v = (*v & ~0xffull) | f->fp;
    }
    if (addr_off == DN2_SR_SMA) {
        if (rndn(f->r, 100)) {
            return false;
        }
        P1.sma_resets++;
    }
    if (addr_off == DN2_SR_CTL_RESET) {
        if (rndn(f->r, 20)) {
            return false;
        }
        P1.ctl_resets++;
    }
    return true;
}

static const char *const wr_cmd[4] = { "writeb", "writew", "writel", "writeq" };

static const char *const rd_cmd[4] = { "readb", "readw", "readl", "readq" };


/* One step of fuzzing on board b: one or a few commands, queued. */
static void fz_step(Board *b, FuzzCtx *f)
{
    Rng *r = f->r;
    unsigned k = (unsigned)rndn(r, 1000), wid = (unsigned)rndn(r, 2);

    if (k < 380) {
        /* a request: [Ex Flag], Upper, [Ex], Lower */
        unsigned cmd = (unsigned)rndn(r, 2);
        bool ex = rndn(r, 4) == 0;
        if (ex || rndn(r, 10) == 0) {
            qq(b, "writeq 0x%" PRIx64 " 0x%x", ur_addr(b, wid, DN2_UR_CMD_EX_FLAG), ex);
        }
        if (rndn(r, 8)) {
            qq(b, "writeq 0x%" PRIx64 " 0x%" PRIx64,
               ur_addr(b, wid, cmd ? DN2_UR_CMD1_UPPER : DN2_UR_CMD0_UPPER),
               dn2_req_upper(fz_off(f), fz_off(f)));
        }
        if (ex) {
            qq(b, "writeq 0x%" PRIx64 " 0x%" PRIx64, ur_addr(b, wid, DN2_UR_CMD_EX), fz_ex(f));
        }
        qq(b, "writeq 0x%" PRIx64 " 0x%" PRIx64,
           ur_addr(b, wid, cmd ? DN2_UR_CMD1_LOWER : DN2_UR_CMD0_LOWER), fz_lower(f));
        P1.doorbells++;
    } else if (k < 600) {
        /* a register, plausible value, mostly 64-bit aligned */
        bool system = rndn(r, 4) == 0;
        uint32_t reg = system ? sr_regs[rndn(r, sizeof(sr_regs) / 4)] :
                                (uint32_t)(wid * DN2_UR_WID_STRIDE) +
                                ur_regs[rndn(r, sizeof(ur_regs) / 4)];
        uint64_t off = (system ? DN2_SR_BASE : DN2_UR_BASE) + reg;
        unsigned sz = rndn(r, 5) ? 3 : (unsigned)rndn(r, 4);
        if (rndn(r, 10) == 0) {
            off += rndn(r, 8);
        }
        if (rndn(r, 2)) {
            qq(b, "%s 0x%" PRIx64, rd_cmd[sz], b->base + off);
        } else {
            uint64_t v = fz_regval(f, system, reg);
            if (sz < 3) {
                v &= (1ull << (8u << sz)) - 1;
            }
            if (!fz_tame(f, off, 1u << sz, &v)) {
                qq(b, "readq 0x%" PRIx64, ur_addr(b, wid, DN2_UR_CTL_STATUS));
            } else {
                qq(b, "%s 0x%" PRIx64 " 0x%" PRIx64, wr_cmd[sz], b->base + off, v);
            }
        }
    } else if (k < 700) {
        /* a packet image in a Write Window, then a BOTF of it (or not) */
        uint8_t img[DN2_BOTF_MAX];
        struct dn2_hdr h;
        unsigned n = 16 + (unsigned)rndn(r, 200), ww = (unsigned)rndn(r, 4), i;
        uint64_t w0, w1;
        memset(&h, 0, sizeof(h));
        h.type = rndn(r, 4) ? valid_ops[7 + rndn(r, 9)] : (uint8_t)rndn(r, 32);
        h.dtype = (uint8_t)rndn(r, 8);
        h.pgid = f->fp;
        h.dlid = rndn(r, 3) ? f->peer : rndn(r, 2) ? f->own : (uint16_t)rnd(r);
        h.iter = (uint8_t)rnd(r);
        h.dwid = (uint8_t)rndn(r, 2);
        h.eflag = (uint8_t)rndn(r, 2);
        h.rflag = (uint8_t)rndn(r, 2);
        h.hflag = (uint8_t)rndn(r, 2);
        h.lflag = (uint8_t)rndn(r, 2);
        h.pflag = (uint8_t)rndn(r, 2);
        h.size = (uint16_t)(rndn(r, 4) ? n : rndn(r, 4096));
        w0 = dn2_hdr0_encode(&h);
        w1 = dn2_hdr1_encode(fz_off(f), fz_off(f));
        for (i = 0; i < 8; i++) {
            img[i] = (uint8_t)(w0 >> (8 * i));
            img[8 + i] = (uint8_t)(w1 >> (8 * i));
        }
        for (i = 16; i < n; i++) {
            img[i] = (uint8_t)rnd(r);
        }
        qq_write(b, b->base + DN2_WW_OFF(wid, ww), img, n);
        if (rndn(r, 3)) {
            qq(b, "writeq 0x%" PRIx64 " 0x%" PRIx64, ur_addr(b, wid, DN2_UR_CMD0_LOWER),
               dn2_botf_lower(ww, rndn(r, 5) ? n : (unsigned)rndn(r, 1024)));
            P1.doorbells++;
        }
    } else if (k < 850) {
        /* a read anywhere in the window */
        unsigned sz = (unsigned)rndn(r, 4);
        uint64_t off = rndn(r, 3) ? rndn(r, DN2_WINDOW_SIZE) :
                                    DN2_UR_BASE + rndn(r, 2 * DN2_REGION_SIZE);
        if (off == DN2_SR_BASE + DN2_SR_CTL_RESET && rndn(r, 20)) {
            off += 8;   /* a read of 0xa00 resets: keep those rare */
        }
        qq(b, "%s 0x%" PRIx64, rd_cmd[sz], b->base + off);
    } else if (k < 998) {
        /* a write anywhere in the window (buffers, registers, holes) */
        unsigned sz = (unsigned)rndn(r, 4);
        uint64_t off = rndn(r, 2) ? rndn(r, DN2_WINDOW_SIZE) :
                                    DN2_UR_BASE + rndn(r, 2 * DN2_REGION_SIZE);
        uint64_t v = rnd(r);
        if (sz < 3) {
            v &= (1ull << (8u << sz)) - 1;
        }
        if (fz_tame(f, off, 1u << sz, &v)) {
            qq(b, "%s 0x%" PRIx64 " 0x%" PRIx64, wr_cmd[sz], b->base + off, v);
        }
    } else {
        /* a Controller Reset (write or read of 0xa00), then maybe part
         * of a bring-up with fuzz values */
        if (rndn(r, 2)) {
            qq(b, "writeq 0x%" PRIx64 " 0x%" PRIx64, sr_addr(b, DN2_SR_CTL_RESET), rnd(r));
        } else {
            qq(b, "readq 0x%" PRIx64, sr_addr(b, DN2_SR_CTL_RESET));
        }
        P1.ctl_resets++;
        if (rndn(r, 2)) {
            qq(b, "writeq 0x%" PRIx64 " 0x%" PRIx64, sr_addr(b, DN2_SR_SDIMM_CAPACITY),
               (uint64_t)1 << rndn(r, 3));
            qq(b, "writeq 0x%" PRIx64 " 0x1", sr_addr(b, DN2_SR_SDIMM_INIT));
            qq(b, "writeq 0x%" PRIx64 " 0x%" PRIx64, sr_addr(b, DN2_SR_MTU),
               (uint64_t)1 << rndn(r, 5));
            qq(b, "writeq 0x%" PRIx64 " 0x%x", sr_addr(b, DN2_SR_PGID0), f->fp);
            qq(b, "writeq 0x%" PRIx64 " 0x%x", sr_addr(b, DN2_SR_PGID1), f->fp);
        }
    }
}


/*
 * Back-pressure, then a Controller Reset of the board that applies it: d's
 * status ring shrinks to 3 records, s streams 6 RVS with eflag at it, d's
 * ring fills and its port refuses packets (s stalls); then d is reset and
 * brought up again, as a guest driver reloading would.  The round trips
 * that follow must get through: no reset may leave s's stream hung.
 */
unsigned bp_seen;

static void backpressure_reset(Board *s, Board *d)
{
    static char ctx[160];
    uint64_t end, cs = 0;
    int k;

    dn2_bio_status_ring(&d->io, 0, ST_OFF, dn2_status_size_reg(64));  /* 3 usable records */
    d->st_head[0] = ST_OFF;
    for (k = 0; k < 6; k++) {
        if (!fifo_room(s, 0, T_XFER)) {
            hang("back-pressure setup: no room in board %s's Request FIFO", s->name);
        }
        issue(s, 0, dn2_req_upper(0x900000 + k * 4096, 0xa00000 + k * 4096),
              dn2_req_lower(DN2_OP_RVS, 0, 0, dn2_lid_to_clid(d->lid), 0, 1, 4096));
    }
    end = now_ms() + 5000;
    do {
        cs = ur(d, 0, DN2_UR_CTL_STATUS);
        if (cs & DN2_CS_STATUS_FULL) {
            bp_seen++;
            break;
        }
        usleep(500);
    } while (now_ms() < end);
    if (!(cs & DN2_CS_STATUS_FULL)) {
        note("mmio: board %s's 3-record status ring did not fill (Controller Status 0x%"
             PRIx64 ")", d->name, cs);
    }
    msleep(5);
    sr_w(d, DN2_SR_CTL_RESET, 0);
    board_bringup(d, PG, PG);
    snprintf(ctx, sizeof(ctx), " (after a Controller Reset of board %s while it back-"
             "pressured board %s's stream)", d->name, s->name);
    check_ctx = ctx;
}


/* Every board: Controller Reset, bring-up, link; back-pressure and a
 * reset; then the round trips. */
static void mmio_check(Board **bs, int n, Rng *r)
{
    int i;

    P1.in_check = true;
    size_t len = 4096 * (1 + rndn(r, 3)) + 1 + rndn(r, 4000);

    for (i = 0; i < n; i++) {
        sr_w(bs[i], DN2_SR_CTL_RESET, 0);
        board_bringup(bs[i], PG, PG);
        if (!wait_link(bs[i], T_LINK)) {
            hang("check %" PRIu64 ": board %s: link not ready %u ms after the bring-up",
                 P1.checks + 1, bs[i]->name, T_LINK);
        }
        qom(bs[i], "stat-requests");        /* QMP answers too */
    }
    backpressure_reset(bs[0], bs[1]);
    round_trip(bs[0], bs[1], 0x100000, 0x200000, 0x300000, 0x400000, len);
    backpressure_reset(bs[1], bs[0]);
    round_trip(bs[1], bs[0], 0x500000, 0x600000, 0x700000, 0x800000, len);
    backpressure_reset(bs[2], bs[2]);
    round_trip(bs[2], bs[2], 0x100000, 0x200000, 0x300000, 0x400000, len);
    check_ctx = "";
    P1.checks++;
    P1.in_check = false;
    vnote("mmio check %" PRIu64 " passed (%zu-byte round trips)", P1.checks, len);
}

static Rng p1_rng;


/* One set of boards, fuzzed until the operations are done or something
 * fails (a failure jumps back to phase_mmio). */
static void mmio_segment(void)
{
    /* static: the phase runner stops them after a longjmp out of here */
    static Sw sw;
    static Board A, B, L;
    Board *bs[3] = { &A, &B, &L };
    char props[256];
    Rng *r = &p1_rng;
    FuzzCtx fa, fb, fl;
    uint64_t t0, next_check, every = opt_mmio_ops >= 500000 ? 100000 : opt_mmio_ops / 4;
    uint8_t fp;

    memset(&sw, 0, sizeof(sw));
    P1.segments++;
    psw = &sw;
    if (!sw_start(&sw, 0)) {
        phase_fail("dn2-switch did not start");
    }
    snprintf(props, sizeof(props), "switch=127.0.0.1:%d,guid=0xa1", sw.port);
    board_start(&A, "A", 64 * MiB, props);
    snprintf(props, sizeof(props), "switch=127.0.0.1:%d,guid=0xb1,rx-thread=on", sw.port);
    board_start(&B, "B", 64 * MiB, props);
    board_start(&L, "L", 64 * MiB, "loopback=on");
    for (int i = 0; i < 3; i++) {
        if (!wait_link(bs[i], T_LINK)) {
            hang("board %s: no link at start", bs[i]->name);
        }
        board_bringup(bs[i], PG, PG);
    }
    note("mmio: boards A (LID 0x%x), B (LID 0x%x, rx-thread) on dn2-switch port %d; L in "
         "loopback (LID 0x%x); %" PRIu64 " operations, a check every %" PRIu64, A.lid, B.lid,
         sw.port, L.lid, opt_mmio_ops, every);
    mmio_check(bs, 3, r);
    do {
        fp = (uint8_t)rnd(r);
    } while (fp == PG || fp == 0);
    fa = (FuzzCtx){ r, A.lid, B.lid, fp, A.area };
    fb = (FuzzCtx){ r, B.lid, A.lid, fp, B.area };
    fl = (FuzzCtx){ r, L.lid, L.lid, fp, L.area };
    t0 = qb_now_ns() - (uint64_t)(P1.secs * 1e9);
    next_check = (P1.ops / every + 1) * every;
    while (P1.ops < opt_mmio_ops) {
        FuzzCtx *fc[3] = { &fa, &fb, &fl };
        int i;
        for (i = 0; i < 3; i++) {
            while (bs[i]->q.on < 384) {
                fz_step(bs[i], fc[i]);
            }
            P1.ops += bs[i]->q.on;
            q_flush(bs[i], T_CMD);
        }
        P1.secs = (qb_now_ns() - t0) / 1e9;
        if (P1.ops >= next_check || P1.ops >= opt_mmio_ops) {
            double s = (qb_now_ns() - t0) / 1e9;
            mmio_check(bs, 3, r);
            note("mmio: %" PRIu64 " operations in %.1f s (%.0f/s incl. checks), check %" PRIu64
                 " passed", P1.ops, s, P1.ops / s, P1.checks);
            next_check += every;
        }
    }
    P1.secs = (qb_now_ns() - t0) / 1e9;
    diag++;
    note("mmio: what the boards saw:");
    for (int i = 0; i < 3; i++) {
        board_dump(bs[i]);
    }
    diag--;
    P1.foreign = foreign_records;
}


/* A crash or a hang ends the segment; the fuzzing goes on with fresh
 * boards (the run is failed all the same), so that one defect does not
 * hide the next.  At most 4 segments. */
void phase_mmio(void)
{
    P1.ran = true;
    dn2f_rng_seed(&p1_rng, opt_seed ^ 0x6d6d696f);
    for (;;) {
        if (!setjmp(phase_env)) {
            mmio_segment();
            break;
        }
        if (P1.in_check) {
            P1.check_failures++;
        } else {
            P1.fuzz_failures++;
        }
        P1.in_check = false;
        phase_cleanup();
        if (P1.ops >= opt_mmio_ops || P1.segments >= 4) {
            break;
        }
        note("mmio: going on with fresh boards (%" PRIu64 " operations left)",
             opt_mmio_ops - P1.ops);
    }
    P1.ops_ok = P1.ops >= opt_mmio_ops && !P1.fuzz_failures && !P1.check_failures;
    P1.checks_ok = P1.checks > 0 && !P1.check_failures;
}
