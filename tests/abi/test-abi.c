/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the DIMMnet-2 ABI header (include/dimmnet2/dn2_abi.h):
 * field encoders/decoders, decoders of the configuration registers, the
 * CLID/LID mapping, the window layout against Table 4.3 and the dsh dumps
 * of the thesis (App. C), and the [EMU] choices of docs/thesis-choices.md.
 *
 * Plain C, no QEMU.  Output is TAP (tests/tap/dn2-tap.h's table runner):
 * one "ok N - description" line per test case, failed checks printed as "#"
 * diagnostics before it.  An argument runs only the cases whose description
 * contains it (the others are skips "not selected").
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dimmnet2/dn2_abi.h"
#include "../tap/dn2-tap.h"

static int case_failures;

static void fail_at(const char *file, int line, const char *fmt, ...)
{
    va_list ap;

    printf("#   %s:%d: ", file, line);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
    case_failures++;
}

/* CHECK(cond): record a failure (and keep going inside the case); the
 * header's CHECK (a point of its own) is not used here. */
#undef CHECK
#define CHECK(cond) do { \
        if (!(cond)) { \
            fail_at(__FILE__, __LINE__, "check failed: %s", #cond); \
        } \
    } while (0)

/* CHECK_EQ(a, b): 64-bit unsigned equality with both values printed. */
#define CHECK_EQ(a, b) do { \
        uint64_t a_ = (uint64_t)(a), b_ = (uint64_t)(b); \
        if (a_ != b_) { \
            fail_at(__FILE__, __LINE__, "%s == %s: 0x%" PRIx64 " != 0x%" PRIx64, \
                    #a, #b, a_, b_); \
        } \
    } while (0)

/* Deterministic pseudo-random numbers (xorshift64*), fixed seed. */
static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;
static uint64_t rnd64(void)
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 0x2545f4914f6cdd1dULL;
}

/* ------------------------------------------------------------------ */
/* Bit-field helpers                                                   */
/* ------------------------------------------------------------------ */

static void test_bit_helpers(void)
{
    CHECK_EQ(DN2_BIT(0), 1);
    CHECK_EQ(DN2_BIT(63), 0x8000000000000000ULL);
    CHECK_EQ(DN2_MASK(0, 0), 1);
    CHECK_EQ(DN2_MASK(63, 63), 0x8000000000000000ULL);
    CHECK_EQ(DN2_MASK(63, 0), ~0ULL);
    CHECK_EQ(DN2_MASK(31, 0), 0xffffffffULL);
    CHECK_EQ(DN2_MASK(63, 32), 0xffffffff00000000ULL);
    CHECK_EQ(DN2_MASK(4, 0), 0x1f);
    CHECK_EQ(DN2_MASK(7, 5), 0xe0);
    CHECK_EQ(DN2_MASK(29, 18), 0x3ffc0000ULL);
    CHECK_EQ(DN2_MASK(62, 1), 0x7ffffffffffffffeULL);

    /* {value, hi, lo, GET, PUT}: bits 0 and 63, excess dropped by PUT */
    {
        static const struct {
            uint64_t v;
            int hi, lo;
            uint64_t get, put;
        } t[] = {
            { ~0ULL, 63, 63, 1, 0x8000000000000000ULL },
            { ~0ULL, 0, 0, 1, 1 },
            { 0x8000000000000000ULL, 63, 63, 1, 0 },
            { 0x7fffffffffffffffULL, 63, 63, 0, 0x8000000000000000ULL },
            { 0xfffffffffffffffeULL, 0, 0, 0, 0 },
            { 0x0123456789abcdefULL, 63, 0, 0x0123456789abcdefULL, 0x0123456789abcdefULL },
            { 0x0123456789abcdefULL, 63, 32, 0x01234567, 0x89abcdef00000000ULL },
            { 0x0123456789abcdefULL, 31, 0, 0x89abcdef, 0x89abcdef },
            { 0x0123456789abcdefULL, 7, 4, 0xe, 0xf0 },
            { 1, 63, 63, 0, 0x8000000000000000ULL },
            { 3, 63, 63, 0, 0x8000000000000000ULL },
            { 3, 0, 0, 1, 1 },
            { ~0ULL, 7, 5, 7, 0xe0 },
            { 0x1ff, 4, 0, 0x1f, 0x1f },
            { 0xffffffffULL, 63, 32, 0, 0xffffffff00000000ULL },
            { 0x1ffffffffULL, 63, 32, 1, 0xffffffff00000000ULL },
        };
        for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
            CHECK_EQ(DN2_GET(t[i].v, t[i].hi, t[i].lo), t[i].get);
            CHECK_EQ(DN2_PUT(t[i].v, t[i].hi, t[i].lo), t[i].put);
        }
    }
    /* a negative int is taken as its 64-bit two's complement */
    {
        int hi = 63, lo = 60;
        CHECK_EQ(DN2_GET(-1, hi, lo), 0xf);
    }

    /* GET(PUT(x)) == x truncated, for every field position */
    for (int hi = 0; hi < 64; hi++) {
        for (int lo = 0; lo <= hi; lo++) {
            uint64_t x = rnd64();
            uint64_t w = hi - lo + 1;
            uint64_t trunc = w == 64 ? x : (x & ((1ULL << w) - 1));
            if (DN2_GET(DN2_PUT(x, hi, lo), hi, lo) != trunc ||
                (DN2_PUT(x, hi, lo) & ~DN2_MASK(hi, lo)) != 0) {
                fail_at(__FILE__, __LINE__, "PUT/GET [%d:%d] of 0x%" PRIx64, hi, lo, x);
            }
        }
    }
}

/* ------------------------------------------------------------------ */
/* Window layout (Table 4.3, Figs 4.8/4.9, dsh dumps in App. C)        */
/* ------------------------------------------------------------------ */

static void test_region_layout(void)
{
    CHECK_EQ(DN2_WINDOW_SIZE, 0x60000);
    CHECK_EQ(DN2_REGION_SIZE, 0x10000);
    CHECK_EQ(DN2_WW_BASE, 0x00000);
    CHECK_EQ(DN2_PW_BASE, 0x10000);
    CHECK_EQ(DN2_LLCM_BASE, 0x20000);
    CHECK_EQ(DN2_LHB_BASE, 0x30000);
    CHECK_EQ(DN2_UR_BASE, 0x40000);
    CHECK_EQ(DN2_SR_BASE, 0x50000);
    CHECK_EQ(DN2_NUM_WID, 2);
    CHECK_EQ(DN2_NUM_WW, 4);
    CHECK_EQ(DN2_WIN_SIZE, 512);
    CHECK_EQ(DN2_WIN_AREA, 2048);

    /* Table 4.3 per-WID instances */
    CHECK_EQ(DN2_WW_OFF(0, 0), 0x00000);
    CHECK_EQ(DN2_WW_OFF(1, 0), 0x02000);
    CHECK_EQ(DN2_PW_OFF(0, 0), 0x10000);
    CHECK_EQ(DN2_PW_OFF(1, 0), 0x12000);
    CHECK_EQ(DN2_LLCM_OFF(0), 0x20000);
    CHECK_EQ(DN2_LLCM_OFF(1), 0x28000);
    CHECK_EQ(DN2_LLCM_AREA, 32 * 1024);
    CHECK_EQ(DN2_LHB_OFF(0), 0x30000);
    CHECK_EQ(DN2_LHB_OFF(1), 0x38000);
    CHECK_EQ(DN2_LHB_AREA, 4096);
    CHECK_EQ(DN2_UR_OFF(0), 0x40000);
    CHECK_EQ(DN2_UR_OFF(1), 0x41000);

    /* Figs 4.8/4.9 sub-window addresses */
    {
        static const uint32_t ww[2][4] = {
            { 0x00000, 0x00200, 0x00400, 0x00600 },
            { 0x02000, 0x02200, 0x02400, 0x02600 },
        };
        static const uint32_t pw[2][4] = {
            { 0x10000, 0x10200, 0x10400, 0x10600 },
            { 0x12000, 0x12200, 0x12400, 0x12600 },
        };
        for (int w = 0; w < 2; w++) {
            for (int n = 0; n < 4; n++) {
                CHECK_EQ(DN2_WW_OFF(w, n), ww[w][n]);
                CHECK_EQ(DN2_PW_OFF(w, n), pw[w][n]);
            }
        }
    }

    /* Every per-WID piece starts on its own 4 KiB page (§4.5, MTRR/PAT) */
    for (int w = 0; w < 2; w++) {
        CHECK_EQ(DN2_WW_OFF(w, 0) & 0xfff, 0);
        CHECK_EQ(DN2_PW_OFF(w, 0) & 0xfff, 0);
        CHECK_EQ(DN2_LLCM_OFF(w) & 0xfff, 0);
        CHECK_EQ(DN2_LHB_OFF(w) & 0xfff, 0);
        CHECK_EQ(DN2_UR_OFF(w) & 0xfff, 0);
        /* WID 1's pieces do not overlap WID 0's */
        CHECK(DN2_WW_OFF(w, 3) + DN2_WIN_SIZE <= DN2_WW_BASE + (w + 1) * DN2_WW_WID_STRIDE);
        CHECK(DN2_LHB_OFF(w) + DN2_LHB_AREA <= DN2_LHB_BASE + (w + 1) * DN2_LHB_WID_STRIDE);
    }
    CHECK(DN2_LLCM_OFF(1) + DN2_LLCM_AREA <= DN2_LHB_BASE);
    CHECK(DN2_UR_OFF(1) + DN2_UR_PAGE <= DN2_SR_BASE);
    CHECK(DN2_SR_BASE + DN2_SR_PAGE <= DN2_WINDOW_SIZE);

    /* App. C dsh dumps: whole window mapped at VA 0x4213c000 */
    {
        const uint64_t va = 0x4213c000ULL;
        CHECK_EQ(va + DN2_PW_OFF(0, 0), 0x4214c000ULL);
        CHECK_EQ(va + DN2_LLCM_OFF(0), 0x4215c000ULL);
        CHECK_EQ(va + DN2_LHB_OFF(0), 0x4216c000ULL);
        CHECK_EQ(va + DN2_UR_OFF(0), 0x4217c000ULL);
        CHECK_EQ(va + DN2_UR_OFF(0) + DN2_UR_CTL_STATUS, 0x4217c200ULL);
        CHECK_EQ(va + DN2_UR_OFF(0) + DN2_UR_PRIM_COUNTER, 0x4217c300ULL);
        CHECK_EQ(va + DN2_UR_OFF(0) + DN2_UR_MODULE_STATE, 0x4217c800ULL);
        CHECK_EQ(va + DN2_SR_BASE, 0x4218c000ULL);
        CHECK_EQ(va + DN2_SR_BASE + DN2_SR_SMA, 0x4218c300ULL);
    }

    /* PW line flags: 4 lines of 128 B per window */
    CHECK_EQ(DN2_PW_LINE, 128);
    CHECK_EQ(DN2_PW_LINES_PER_WIN, 4);

    /* Default bases [EMU #1] */
    CHECK_EQ(DN2_DEFAULT_BASE0, 0xFEC10000u);
    CHECK_EQ(DN2_DEFAULT_BASE1, 0xFEC70000u);
    CHECK_EQ(DN2_DEFAULT_BASE0 % DN2_BASE_ALIGN, 0);
    CHECK_EQ(DN2_DEFAULT_BASE1 % DN2_BASE_ALIGN, 0);
    CHECK(DN2_DEFAULT_BASE0 + DN2_WINDOW_SIZE <= DN2_DEFAULT_BASE1);
    CHECK(DN2_DEFAULT_BASE1 + DN2_WINDOW_SIZE <= 0xFED00000u);  /* below HPET */
    CHECK(DN2_DEFAULT_BASE0 >= 0xFEC01000u);                    /* above IOAPIC */
    CHECK(strcmp(DN2_ACPI_HID, "DNET0002") == 0);
    CHECK_EQ(strlen(DN2_ACPI_HID), 8);
}

static void test_register_offsets(void)
{
    /* User Register page (Fig 4.12, Table 4.8) */
    CHECK_EQ(DN2_UR_CMD0_LOWER, 0x000);
    CHECK_EQ(DN2_UR_CMD0_UPPER, 0x010);
    CHECK_EQ(DN2_UR_CMD_EX, 0x020);
    CHECK_EQ(DN2_UR_CMD1_LOWER, 0x100);
    CHECK_EQ(DN2_UR_CMD1_UPPER, 0x110);
    CHECK_EQ(DN2_UR_CTL_STATUS, 0x200);
    CHECK_EQ(DN2_UR_PRIM_COUNTER, 0x300);
    CHECK_EQ(DN2_UR_PW_FLAG, 0x400);
    CHECK_EQ(DN2_UR_PKT_COUNTER, 0x500);
    CHECK_EQ(DN2_UR_IPUSH_AREA_SIZE, 0x600);
    CHECK_EQ(DN2_UR_LHB_ADDR, 0x700);
    CHECK_EQ(DN2_UR_MODULE_STATE, 0x800);
    CHECK_EQ(DN2_UR_STATUS_INIT, 0x900);
    CHECK_EQ(DN2_UR_STATUS_SIZE, 0xa00);
    CHECK_EQ(DN2_UR_STATUS_ADDR, 0xb00);
    CHECK_EQ(DN2_UR_CMD_EX_FLAG, 0xc00);
    /* System Register page (Fig 4.15, Table 4.12, App. B) */
    CHECK_EQ(DN2_SR_SDIMM_INIT, 0x000);
    CHECK_EQ(DN2_SR_SDIMM_CAPACITY, 0x100);
    CHECK_EQ(DN2_SR_MTU, 0x200);
    CHECK_EQ(DN2_SR_SMA, 0x300);
    CHECK_EQ(DN2_SR_LID, 0x700);
    CHECK_EQ(DN2_SR_PGID0, 0x800);
    CHECK_EQ(DN2_SR_PGID1, 0x900);
    CHECK_EQ(DN2_SR_CTL_RESET, 0xa00);
    CHECK_EQ(DN2_SR_AMT, 0xb00);
    /* all registers are 64-bit aligned and inside their page */
    {
        static const uint32_t regs[] = {
            DN2_UR_CMD0_LOWER, DN2_UR_CMD0_UPPER, DN2_UR_CMD_EX, DN2_UR_CMD1_LOWER,
            DN2_UR_CMD1_UPPER, DN2_UR_CTL_STATUS, DN2_UR_PRIM_COUNTER, DN2_UR_PW_FLAG,
            DN2_UR_PKT_COUNTER, DN2_UR_IPUSH_AREA_SIZE, DN2_UR_LHB_ADDR,
            DN2_UR_MODULE_STATE, DN2_UR_STATUS_INIT, DN2_UR_STATUS_SIZE,
            DN2_UR_STATUS_ADDR, DN2_UR_CMD_EX_FLAG, DN2_SR_SDIMM_INIT,
            DN2_SR_SDIMM_CAPACITY, DN2_SR_MTU, DN2_SR_SMA, DN2_SR_LID, DN2_SR_PGID0,
            DN2_SR_PGID1, DN2_SR_CTL_RESET, DN2_SR_AMT,
        };
        for (size_t i = 0; i < sizeof(regs) / sizeof(regs[0]); i++) {
            CHECK_EQ(regs[i] & 7, 0);
            CHECK(regs[i] < DN2_UR_PAGE);
        }
    }
    CHECK_EQ(DN2_UR_PAGE, 0x1000);
    CHECK_EQ(DN2_UR_WID_STRIDE, 0x1000);
    CHECK_EQ(DN2_SR_PAGE, 0x1000);
    /* register masks */
    CHECK_EQ(DN2_STATUS_INIT_MASK, 0x7fff);   /* 15 bits */
    CHECK_EQ(DN2_STATUS_ADDR_MASK, 0x7fff);
    CHECK_EQ(DN2_LHB_ADDR_MASK, 0xfff);        /* 12 bits */
    CHECK_EQ(DN2_IPUSH_AREA_MASK, 0xffff);     /* 16 bits */
    /* SMA LID read-back: [15:0] LID, [17:16] link, 2'b11 = ready */
    CHECK_EQ(DN2_SMA_LID_MASK, 0xffff);
    CHECK_EQ(DN2_SMA_LINK_MASK, 0x30000);
    CHECK_EQ(DN2_SMA_LINK_SHIFT, 16);
    CHECK_EQ(DN2_SMA_LINK_READY, 3);
}

/* Controller Status bits (Table A.1) */
static void test_ctl_status_bits(void)
{
    CHECK_EQ(DN2_CS_REQ_PENDING, 1u << 0);
    CHECK_EQ(DN2_CS_SDIMM_READY, 1u << 1);
    CHECK_EQ(DN2_CS_FIFO_AFULL, 1u << 2);
    CHECK_EQ(DN2_CS_STATUS_FULL, 1u << 3);
    CHECK_EQ(DN2_CS_STATUS_EMPTY, 1u << 4);
    for (int n = 0; n < 4; n++) {
        CHECK_EQ(DN2_CS_WW_SHIFT(n), 5 + 3 * n);
        CHECK_EQ(DN2_CS_WW_DONE(n), 1ULL << (5 + 3 * n));
        CHECK_EQ(DN2_CS_WW_SRC_OVF(n), 1ULL << (6 + 3 * n));
        CHECK_EQ(DN2_CS_WW_DST_OVF(n), 1ULL << (7 + 3 * n));
        CHECK_EQ(DN2_CS_WW_MASK(n), 7ULL << (5 + 3 * n));
    }
    CHECK_EQ(DN2_CS_WW_DST_OVF(3), 1u << 16);
    CHECK_EQ(DN2_CS_RX_OVF, 1u << 17);
    CHECK_EQ(DN2_CS_RX_ERR_SHIFT, 18);
    CHECK_EQ(DN2_CS_RX_ERR_MASK, 3u << 18);
    CHECK_EQ(DN2_RX_ERR_NONE, 0);
    CHECK_EQ(DN2_RX_ERR_EARLY_SOP, 1);
    CHECK_EQ(DN2_RX_ERR_HFLAG, 2);
    CHECK_EQ(DN2_RX_ERR_RVL_DATA, 3);
    CHECK_EQ(DN2_CS_REQ_ERROR, 1u << 20);   /* [EMU #14] above the thesis's 0..19 */
    /* the dsh example: 0x832 = ready, status empty, WW#0 and WW#2 done */
    CHECK_EQ(DN2_CS_SDIMM_READY | DN2_CS_STATUS_EMPTY | DN2_CS_WW_DONE(0) |
             DN2_CS_WW_DONE(2), 0x832);
    /* the WW status masks tile bits 5..16 exactly */
    CHECK_EQ(DN2_CS_WW_MASK(0) | DN2_CS_WW_MASK(1) | DN2_CS_WW_MASK(2) |
             DN2_CS_WW_MASK(3), DN2_MASK(16, 5));
}

/* Primitive Counter (Table A.2), PW flags (Table A.3), Module State (A.4) */
static void test_counters_and_flags(void)
{
    CHECK_EQ(DN2_PC_BITS, 10);
    CHECK_EQ(DN2_PC_MASK, 0x3ff);
    CHECK_EQ(DN2_PC_BOTF, 0);
    CHECK_EQ(DN2_PC_VL, 1);
    CHECK_EQ(DN2_PC_VS, 2);
    CHECK_EQ(DN2_PC_RVL, 3);
    CHECK_EQ(DN2_PC_RVS, 4);
    CHECK_EQ(DN2_PC_IPUSH, 5);
    CHECK_EQ(DN2_PC_NUM, 6);
    /* dsh: 0x100001 = BOTF 1, VS 1 */
    CHECK_EQ(dn2_pc_field(0x100001, DN2_PC_BOTF), 1);
    CHECK_EQ(dn2_pc_field(0x100001, DN2_PC_VL), 0);
    CHECK_EQ(dn2_pc_field(0x100001, DN2_PC_VS), 1);
    CHECK_EQ(dn2_pc_field(0x100001, DN2_PC_RVL), 0);
    CHECK_EQ(dn2_pc_field(0x100001, DN2_PC_RVS), 0);
    CHECK_EQ(dn2_pc_field(0x100001, DN2_PC_IPUSH), 0);
    /* field positions [9:0] [19:10] [29:20] [39:30] [49:40] [59:50] */
    for (int f = 0; f < DN2_PC_NUM; f++) {
        uint64_t v = DN2_PUT(0x3ff, 10 * f + 9, 10 * f);
        CHECK_EQ(dn2_pc_field(v, f), 0x3ff);
        for (int g = 0; g < DN2_PC_NUM; g++) {
            if (g != f) {
                CHECK_EQ(dn2_pc_field(v, g), 0);
            }
        }
        CHECK_EQ(dn2_pc_field(~0ULL, f), 0x3ff);
    }
    /* PW flags: [3:0] PW#0 ... [15:12] PW#3 */
    for (int n = 0; n < 4; n++) {
        CHECK_EQ(DN2_PWF_WIN_SHIFT(n), 4 * n);
        CHECK_EQ(DN2_PWF_WIN_MASK(n), 0xfULL << (4 * n));
    }
    CHECK_EQ(DN2_PWF_ALL, 0xffff);
    /* Module State fields: [16:0] WC, [36:17] RC, [50:37] WU, [57:51] PU */
    CHECK_EQ(DN2_MS_WC_SHIFT, 0);
    CHECK_EQ(DN2_MS_RC_SHIFT, 17);
    CHECK_EQ(DN2_MS_WU_SHIFT, 37);
    CHECK_EQ(DN2_MS_PU_SHIFT, 51);
}

/* ------------------------------------------------------------------ */
/* Configuration register decoders                                     */
/* ------------------------------------------------------------------ */

static void test_status_area_size(void)
{
    /* Table A.5: one-hot 64..4096, default 1024; 0 or other -> default */
    static const struct { uint64_t reg; uint32_t bytes; } t[] = {
        { 0x01, 64 }, { 0x02, 128 }, { 0x04, 256 }, { 0x08, 512 },
        { 0x10, 1024 }, { 0x20, 2048 }, { 0x40, 4096 },
        { 0x00, 1024 }, { 0x03, 1024 }, { 0x41, 1024 }, { 0x7f, 1024 },
        { 0x80, 1024 },                /* bit 7 is outside the 7-bit field */
        { 0x81, 64 },                  /* only the low 7 bits count */
        { 0xffffffffffffff20ULL, 2048 },
        { 0x30, 1024 }, { 0x06, 1024 },
    };
    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
        if (dn2_status_area_bytes(t[i].reg) != t[i].bytes) {
            fail_at(__FILE__, __LINE__, "status size reg 0x%" PRIx64 " -> %u, want %u",
                    t[i].reg, dn2_status_area_bytes(t[i].reg), t[i].bytes);
        }
    }
    CHECK_EQ(DN2_STATUS_SIZE_DEFAULT, 1024);
    /* a ring holds a whole number of 16-byte records */
    for (int k = 0; k < 7; k++) {
        CHECK_EQ(dn2_status_area_bytes(1u << k) % DN2_STATUS_REC_SIZE, 0);
    }
}

static void test_capacity(void)
{
    /* Table 4.10: per module, one-hot, 256 MB default */
    static const struct { uint64_t reg; uint64_t bytes; } t[] = {
        { 0x01, 256ULL << 20 }, { 0x02, 512ULL << 20 }, { 0x04, 1ULL << 30 },
        { 0x08, 2ULL << 30 }, { 0x10, 4ULL << 30 }, { 0x20, 8ULL << 30 },
        { 0x00, 256ULL << 20 }, { 0x03, 256ULL << 20 }, { 0x3f, 256ULL << 20 },
        { 0x40, 256ULL << 20 },        /* bit 6 is outside the 6-bit field */
        { 0x42, 512ULL << 20 },
        { 0x30, 256ULL << 20 },
    };
    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
        if (dn2_sdimm_module_bytes(t[i].reg) != t[i].bytes) {
            fail_at(__FILE__, __LINE__, "capacity reg 0x%" PRIx64 " -> 0x%" PRIx64
                    ", want 0x%" PRIx64, t[i].reg, dn2_sdimm_module_bytes(t[i].reg),
                    t[i].bytes);
        }
    }
    CHECK_EQ(DN2_SDIMM_CAP_DEFAULT, 256ULL << 20);
    CHECK_EQ(DN2_SDIMM_MODULES, 2);
}

static void test_mtu(void)
{
    /* Table 4.11; "10100" read as 1024 [EMU #23]; default 2048 */
    static const struct { uint64_t reg; uint32_t bytes; } t[] = {
        { 0x01, 256 }, { 0x02, 512 }, { 0x04, 1024 }, { 0x14, 1024 },
        { 0x08, 2048 }, { 0x10, 4096 },
        { 0x00, 2048 }, { 0x03, 2048 }, { 0x1f, 2048 }, { 0x18, 2048 },
        { 0x21, 256 },                 /* only the low 5 bits count */
        { 0x20, 2048 },
        { 0xffffffffffffffe4ULL, 1024 },
    };
    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
        if (dn2_mtu_bytes(t[i].reg) != t[i].bytes) {
            fail_at(__FILE__, __LINE__, "MTU reg 0x%" PRIx64 " -> %u, want %u",
                    t[i].reg, dn2_mtu_bytes(t[i].reg), t[i].bytes);
        }
    }
    CHECK_EQ(DN2_MTU_DEFAULT, 2048);
}

static void test_amt_encode(void)
{
    /* App. B: [11:0] value, [13:12] WID, [29:14] LID */
    CHECK_EQ(dn2_amt_encode(0xabc, 1, 0x1234), 0xabcULL | (1ULL << 12) | (0x1234ULL << 14));
    CHECK_EQ(dn2_amt_encode(0xfff, 3, 0xffff), DN2_MASK(29, 0));
    CHECK_EQ(dn2_amt_encode(0x1fff, 0, 0), 0xfff);       /* value truncated */
    /* per receiving process (choice #52) */
    CHECK_EQ(dn2_amt_encode_dwid(0xabc, 1, 0x1234, 1),
             dn2_amt_encode(0xabc, 1, 0x1234) | (1ULL << 30) | (1ULL << 31));
    CHECK_EQ(dn2_amt_encode_dwid(0x10, 0, 1, 0), 0x10ULL | (1ULL << 14) | (1ULL << 31));
    CHECK_EQ(dn2_amt_value_wid(0x100 / DN2_AMT_UNIT), 0);
    CHECK_EQ(dn2_amt_value_wid((DN2_LLCM_WID_STRIDE + 0x100) / DN2_AMT_UNIT), 1);
    CHECK_EQ(dn2_amt_encode(0, 0, 0x1ffff), DN2_MASK(29, 14));
    CHECK_EQ(DN2_AMT_VALUE_MASK, 0xfff);
    CHECK_EQ(DN2_AMT_WID_SHIFT, 12);
    CHECK_EQ(DN2_AMT_LID_SHIFT, 14);
    for (int i = 0; i < 10000; i++) {
        uint32_t v = rnd64() & 0xfff, w = rnd64() & 3, l = rnd64() & 0xffff;
        uint64_t e = dn2_amt_encode(v, w, l);
        if ((e & DN2_AMT_VALUE_MASK) != v || ((e >> DN2_AMT_WID_SHIFT) & 3) != w ||
            ((e >> DN2_AMT_LID_SHIFT) & 0xffff) != l || (e >> 30) != 0) {
            fail_at(__FILE__, __LINE__, "AMT encode %x %x %x", v, w, l);
            break;
        }
    }
}

/* ------------------------------------------------------------------ */
/* Opcodes and requests                                                */
/* ------------------------------------------------------------------ */

static void test_opcodes(void)
{
    /* Table 4.13 */
    CHECK_EQ(DN2_OP_NOP, 0x00);
    CHECK_EQ(DN2_OP_BOTF, 0x01);
    CHECK_EQ(DN2_OP_VL, 0x04);
    CHECK_EQ(DN2_OP_VLS, 0x05);
    CHECK_EQ(DN2_OP_VLI, 0x06);
    CHECK_EQ(DN2_OP_VS, 0x08);
    CHECK_EQ(DN2_OP_VSS, 0x09);
    CHECK_EQ(DN2_OP_VSI, 0x0a);
    CHECK_EQ(DN2_OP_RVL, 0x10);
    CHECK_EQ(DN2_OP_RVLS, 0x11);
    CHECK_EQ(DN2_OP_RVLI, 0x12);
    CHECK_EQ(DN2_OP_RVS, 0x14);
    CHECK_EQ(DN2_OP_RVSS, 0x15);
    CHECK_EQ(DN2_OP_RVSI, 0x16);
    CHECK_EQ(DN2_OP_IPUSH, 0x18);
    CHECK_EQ(DN2_OP_LHSV1, 0x19);
    CHECK_EQ(DN2_OP_LHSV2, 0x1a);

    /* exactly the 16 user opcodes are valid; NOP and holes are not */
    {
        static const unsigned valid[] = {
            0x01, 0x04, 0x05, 0x06, 0x08, 0x09, 0x0a, 0x10, 0x11, 0x12,
            0x14, 0x15, 0x16, 0x18, 0x19, 0x1a,
        };
        int nvalid = 0;
        for (unsigned op = 0; op < 32; op++) {
            int want = 0;
            for (size_t i = 0; i < sizeof(valid) / sizeof(valid[0]); i++) {
                want |= valid[i] == op;
            }
            if (!!dn2_otype_valid(op) != want) {
                fail_at(__FILE__, __LINE__, "dn2_otype_valid(0x%02x) = %d", op,
                        dn2_otype_valid(op));
            }
            nvalid += !!dn2_otype_valid(op);
            if (want && strcmp(dn2_otype_name(op), "?") == 0) {
                fail_at(__FILE__, __LINE__, "no name for OTYPE 0x%02x", op);
            }
            if (!want && op != DN2_OP_NOP && strcmp(dn2_otype_name(op), "?") != 0) {
                fail_at(__FILE__, __LINE__, "undefined OTYPE 0x%02x named %s", op,
                        dn2_otype_name(op));
            }
        }
        CHECK_EQ(nvalid, 16);
    }
    CHECK(strcmp(dn2_otype_name(DN2_OP_VS), "VS") == 0);
    CHECK(strcmp(dn2_otype_name(DN2_OP_VLI), "VLI") == 0);
    CHECK(strcmp(dn2_otype_name(DN2_OP_NOP), "NOP") == 0);
    CHECK(strcmp(dn2_otype_name(DN2_OP_LHSV2), "LHSv2") == 0);

    /* families by the top two bits (note 2 p.76) */
    CHECK_EQ(DN2_OP_VL >> 3, 0);
    CHECK_EQ(DN2_OP_VS >> 3, 1);
    CHECK_EQ(DN2_OP_VSI >> 3, 1);
    CHECK_EQ(DN2_OP_RVL >> 3, 2);
    CHECK_EQ(DN2_OP_RVSI >> 3, 2);
    CHECK_EQ(DN2_OP_IPUSH >> 3, 3);
    CHECK_EQ(DN2_OP_LHSV2 >> 3, 3);

    /* access form = low two bits, in each of the four families */
    {
        static const unsigned fam[] = { DN2_OP_VL, DN2_OP_VS, DN2_OP_RVL, DN2_OP_RVS };
        static const int form[] = { DN2_FORM_CONTIG, DN2_FORM_STRIDE, DN2_FORM_LIST };

        for (unsigned f = 0; f < 4; f++) {
            for (unsigned k = 0; k < 3; k++) {
                CHECK_EQ(dn2_otype_form(fam[f] + k), form[k]);
            }
        }
        CHECK_EQ(DN2_OP_VLI, DN2_OP_VL + 2);
        CHECK_EQ(DN2_OP_RVSS, DN2_OP_RVS + 1);
    }

    /* DTYPE (Table 4.5) */
    for (unsigned d = 0; d < 8; d++) {
        CHECK_EQ(dn2_dtype_bytes(d), 1u << d);
    }
    CHECK_EQ(dn2_dtype_bytes(DN2_DTYPE_1B), 1);
    CHECK_EQ(dn2_dtype_bytes(DN2_DTYPE_4B), 4);   /* dsh dt=2 -> 4 B */
    CHECK_EQ(dn2_dtype_bytes(DN2_DTYPE_128B), 128);
    CHECK_EQ(dn2_dtype_bytes(8), 1);              /* 3-bit field */
    CHECK_EQ(DN2_ITER_MAX, 255);
    /* SO-DIMM copy offset (§4.6.8) and the window it reports in [EMU #15] */
    CHECK_EQ(DN2_COPY_OFF, 0xffffffffu);
    CHECK_EQ((DN2_COPY_OFF / DN2_WIN_SIZE) % DN2_NUM_WW, 3);
}

/* The thesis's worked example (§3.1, App. C): dsh
 * "prim VS ... size=0x200 src=0x400 dst=0x600" -> "cmd:60000000400_20000000008" */
static void test_dsh_example(void)
{
    uint64_t lower = dn2_req_lower(DN2_OP_VS, 0, 0, 0, 0, 0, 0x200);
    uint64_t upper = dn2_req_upper(0x400, 0x600);
    char buf[64];
    struct dn2_req r;

    CHECK_EQ(lower, 0x0000020000000008ULL);
    CHECK_EQ(upper, 0x0000060000000400ULL);
    snprintf(buf, sizeof(buf), "cmd:%" PRIx64 "_%" PRIx64, upper, lower);
    CHECK(strcmp(buf, "cmd:60000000400_20000000008") == 0);

    dn2_req_decode(&r, lower, upper, 0, 0, 0, 0);
    CHECK_EQ(r.otype, DN2_OP_VS);
    CHECK_EQ(r.arg, 0x200);
    CHECK_EQ(r.src, 0x400);
    CHECK_EQ(r.dst, 0x600);
    CHECK_EQ(r.src / DN2_WIN_SIZE, 2);      /* WW#2 -> Controller Status bit 11 */
    CHECK_EQ(DN2_CS_WW_DONE(r.src / DN2_WIN_SIZE), 1u << 11);
}

static void test_request_fields(void)
{
    /* positions of Fig 4.13 / Table 4.4 with [EMU #7] DWID=30, eflag=31 */
    CHECK_EQ(dn2_req_lower(0x1f, 0, 0, 0, 0, 0, 0), DN2_MASK(4, 0));
    CHECK_EQ(dn2_req_lower(0, 7, 0, 0, 0, 0, 0), DN2_MASK(7, 5));
    CHECK_EQ(dn2_req_lower(0, 0, 255, 0, 0, 0, 0), DN2_MASK(15, 8));
    CHECK_EQ(dn2_req_lower(0, 0, 0, 0xfff, 0, 0, 0), DN2_MASK(29, 18));
    CHECK_EQ(dn2_req_lower(0, 0, 0, 0, 1, 0, 0), DN2_BIT(30));
    CHECK_EQ(dn2_req_lower(0, 0, 0, 0, 0, 1, 0), DN2_BIT(31));
    CHECK_EQ(dn2_req_lower(0, 0, 0, 0, 0, 0, 0xffffffffu), DN2_MASK(63, 32));
    /* bits 17:16 are never set, oversized values do not spill */
    CHECK_EQ(dn2_req_lower(0xff, 0xff, 0xffff, 0xffff, 0xff, 0xff, 0xffffffffu),
             ~DN2_MASK(17, 16));
    CHECK_EQ(dn2_req_lower(0x3f, 0, 0, 0, 0, 0, 0), 0x1f);
    CHECK_EQ(dn2_req_lower(0, 8, 0, 0, 0, 0, 0), 0);
    CHECK_EQ(dn2_req_lower(0, 0, 0x100, 0, 0, 0, 0), 0);
    CHECK_EQ(dn2_req_lower(0, 0, 0, 0x1000, 0, 0, 0), 0);
    CHECK_EQ(dn2_req_lower(0, 0, 0, 0, 2, 2, 0), 0);
    CHECK_EQ(dn2_req_upper(0xffffffffu, 0), DN2_MASK(31, 0));
    CHECK_EQ(dn2_req_upper(0, 0xffffffffu), DN2_MASK(63, 32));
    CHECK_EQ(dn2_req_upper(0x12345678, 0x9abcdef0), 0x9abcdef012345678ULL);
    CHECK_EQ(dn2_req_ex(0x1f, 0, 0, 0), 0x1f);
    CHECK_EQ(dn2_req_ex(0, 7, 0, 0), 0xe0);
    CHECK_EQ(dn2_req_ex(0, 0, 0xff, 0), 0xff00);
    CHECK_EQ(dn2_req_ex(0, 0, 0, 0xffffffffu), DN2_MASK(63, 32));
    CHECK_EQ(dn2_req_ex(0xff, 0xff, 0xfff, 0xffffffffu) & DN2_MASK(31, 16), 0);
    CHECK_EQ(DN2_REQ_OTYPE_HI, 4);
    CHECK_EQ(DN2_REQ_OTYPE_LO, 0);
    CHECK_EQ(DN2_REQ_DTYPE_HI, 7);
    CHECK_EQ(DN2_REQ_DTYPE_LO, 5);
    CHECK_EQ(DN2_REQ_ITER_HI, 15);
    CHECK_EQ(DN2_REQ_ITER_LO, 8);
    CHECK_EQ(DN2_REQ_DCLID_HI, 29);
    CHECK_EQ(DN2_REQ_DCLID_LO, 18);
    CHECK_EQ(DN2_REQ_DWID_BIT, 30);
    CHECK_EQ(DN2_REQ_EFLAG_BIT, 31);
    CHECK_EQ(DN2_REQ_ARG_HI, 63);
    CHECK_EQ(DN2_REQ_ARG_LO, 32);
}

static void test_request_roundtrip(void)
{
    for (int i = 0; i < 200000; i++) {
        uint64_t x = rnd64(), y = rnd64(), z = rnd64();
        unsigned otype = x & 0x1f, dtype = (x >> 5) & 7, iter = (x >> 8) & 0xff;
        unsigned dclid = (x >> 16) & 0xfff, dwid = (x >> 28) & 1, eflag = (x >> 29) & 1;
        uint32_t arg = (uint32_t)(x >> 32), src = (uint32_t)y, dst = (uint32_t)(y >> 32);
        unsigned eo = z & 0x1f, ed = (z >> 5) & 7, ei = (z >> 8) & 0xff;
        uint32_t ea = (uint32_t)(z >> 32);
        int has_ex = (z >> 20) & 1, rflag = (z >> 21) & 1, wid = (z >> 22) & 1;
        uint64_t lower = dn2_req_lower(otype, dtype, iter, dclid, dwid, eflag, arg);
        uint64_t upper = dn2_req_upper(src, dst);
        uint64_t ex = dn2_req_ex(eo, ed, ei, ea);
        struct dn2_req r;

        memset(&r, 0xa5, sizeof(r));
        dn2_req_decode(&r, lower, upper, ex, has_ex, rflag, wid);
        if (r.otype != otype || r.dtype != dtype || r.iter != iter ||
            r.dclid != dclid || r.dwid != dwid || r.eflag != eflag ||
            r.arg != arg || r.src != src || r.dst != dst ||
            r.ex_otype != eo || r.ex_dtype != ed || r.ex_iter != ei ||
            r.ex_arg != ea || r.has_ex != has_ex || r.rflag != rflag ||
            r.wid != wid) {
            fail_at(__FILE__, __LINE__, "request round trip %d: lower 0x%" PRIx64
                    " upper 0x%" PRIx64 " ex 0x%" PRIx64, i, lower, upper, ex);
            return;
        }
        if (dn2_req_encode_lower(&r) != lower) {
            fail_at(__FILE__, __LINE__, "re-encode of 0x%" PRIx64 " gave 0x%" PRIx64,
                    lower, dn2_req_encode_lower(&r));
            return;
        }
        /* decoding an arbitrary 64-bit word and re-encoding it keeps every
         * defined bit (and only drops the unused [17:16]) */
        dn2_req_decode(&r, x, y, z, 1, 1, 1);
        if (dn2_req_encode_lower(&r) != (x & ~DN2_MASK(17, 16)) ||
            dn2_req_upper(r.src, r.dst) != y ||
            dn2_req_ex(r.ex_otype, r.ex_dtype, r.ex_iter, r.ex_arg) !=
            (z & ~DN2_MASK(31, 16))) {
            fail_at(__FILE__, __LINE__, "decode/encode of raw words %d", i);
            return;
        }
    }
    /* rflag / wid / has_ex are normalised to 0/1 */
    {
        struct dn2_req r;
        dn2_req_decode(&r, 0, 0, 0, 7, 3, 2);
        CHECK_EQ(r.has_ex, 1);
        CHECK_EQ(r.rflag, 1);
        CHECK_EQ(r.wid, 0);
    }
}

static void test_botf(void)
{
    /* Fig 4.14 / Table 4.7: [4:0] = 00001, [6:5] WW#, [41:32] Size */
    CHECK_EQ(dn2_botf_lower(0, 0), 0x01);
    CHECK_EQ(dn2_botf_lower(3, 0), 0x01 | (3 << 5));
    CHECK_EQ(dn2_botf_lower(0, 0x3ff), 0x01 | (0x3ffULL << 32));
    CHECK_EQ(dn2_botf_lower(2, DN2_BOTF_MAX), 0x41 | (512ULL << 32));
    CHECK_EQ(dn2_botf_lower(4, 0x400), 0x01);   /* truncated to 2 and 10 bits */
    CHECK_EQ(DN2_BOTF_MAX, 512);
    for (unsigned ww = 0; ww < 4; ww++) {
        for (unsigned size = 0; size < 1024; size++) {
            uint64_t l = dn2_botf_lower(ww, size);
            if (dn2_botf_ww(l) != ww || dn2_botf_size(l) != size ||
                (l & 0x1f) != DN2_OP_BOTF ||
                (l & ~(DN2_MASK(6, 0) | DN2_MASK(41, 32))) != 0) {
                fail_at(__FILE__, __LINE__, "BOTF ww %u size %u -> 0x%" PRIx64, ww, size, l);
                return;
            }
            /* a BOTF decodes as a normal request with OTYPE BOTF */
            struct dn2_req r;
            dn2_req_decode(&r, l, 0, 0, 0, 0, 0);
            if (r.otype != DN2_OP_BOTF) {
                fail_at(__FILE__, __LINE__, "BOTF OTYPE");
                return;
            }
        }
    }
    /* decoders ignore the other bits */
    CHECK_EQ(dn2_botf_ww(~0ULL), 3);
    CHECK_EQ(dn2_botf_size(~0ULL), 0x3ff);
}

static void test_lhsv2(void)
{
    /* DSTOff reused: Upper[41:32] = WW bytes, Upper[53:42] = WW offset */
    for (int i = 0; i < 10000; i++) {
        unsigned bytes = rnd64() & 0x3ff, off = rnd64() & 0xfff;
        uint32_t src = (uint32_t)rnd64();
        uint64_t upper = dn2_req_upper(src, dn2_lhsv2_dst(bytes, off));
        if (((upper >> 32) & 0x3ff) != bytes || ((upper >> 42) & 0xfff) != off ||
            (upper >> 54) != 0 || (uint32_t)upper != src ||
            dn2_lhsv2_ww_bytes(dn2_lhsv2_dst(bytes, off)) != bytes ||
            dn2_lhsv2_ww_off(dn2_lhsv2_dst(bytes, off)) != off) {
            fail_at(__FILE__, __LINE__, "LHSv2 dst %u %u", bytes, off);
            return;
        }
    }
    CHECK_EQ(dn2_lhsv2_dst(512, 0x600), 512 | (0x600 << 10));
    CHECK_EQ(dn2_lhsv2_dst(0x400, 0x1000), 0);   /* truncated */
}

/* ------------------------------------------------------------------ */
/* CLID / LID (Table 4.6)                                              */
/* ------------------------------------------------------------------ */

static void test_clid_lid(void)
{
    /* the thesis table */
    CHECK_EQ(dn2_lid_to_clid(0xBFFF), 0xBFF);
    CHECK_EQ(dn2_lid_to_clid(0xC000), 0xC00);
    CHECK_EQ(dn2_lid_to_clid(0xFFFF), 0xFFF);
    CHECK_EQ(dn2_lid_to_clid(0x0001), 0x001);
    CHECK_EQ(dn2_lid_to_clid(0x0000), 0x000);
    /* bits 9..12 of the 1-based numbering = LID[11:8] are removed */
    CHECK_EQ(dn2_lid_to_clid(0x0f00), 0x000);
    CHECK_EQ(dn2_lid_to_clid(0x10ff), 0x1ff);
    CHECK_EQ(dn2_clid_to_lid(0xBFF), 0xB0FF);
    CHECK_EQ(dn2_clid_to_lid(0xC00), 0xC000);
    CHECK_EQ(dn2_clid_to_lid(0xFFF), 0xF0FF);
    CHECK_EQ(dn2_clid_to_lid(0x001), 0x0001);
    /* every CLID maps to a LID with [11:8] = 0 and back */
    for (unsigned c = 0; c < 0x1000; c++) {
        uint16_t lid = dn2_clid_to_lid((uint16_t)c);
        if ((lid & 0x0f00) != 0 || dn2_lid_to_clid(lid) != c) {
            fail_at(__FILE__, __LINE__, "CLID 0x%x -> LID 0x%x -> 0x%x", c, lid,
                    dn2_lid_to_clid(lid));
            return;
        }
    }
    /* every LID maps to a 12-bit CLID; LIDs with [11:8] = 0 map back */
    for (unsigned l = 0; l < 0x10000; l++) {
        uint16_t c = dn2_lid_to_clid((uint16_t)l);
        if (c > 0xfff) {
            fail_at(__FILE__, __LINE__, "LID 0x%x -> CLID 0x%x", l, c);
            return;
        }
        if ((l & 0x0f00) == 0 && dn2_clid_to_lid(c) != l) {
            fail_at(__FILE__, __LINE__, "LID 0x%x -> CLID 0x%x -> 0x%x", l, c,
                    dn2_clid_to_lid(c));
            return;
        }
        if ((l & 0x0f00) != 0 && dn2_lid_assignable((uint16_t)l)) {
            fail_at(__FILE__, __LINE__, "LID 0x%x with [11:8] != 0 assignable", l);
            return;
        }
    }
    /* ranges: 0x000 reserved, 0x001-0xBFF unicast, 0xC00-0xFFE multicast, 0xFFF init */
    CHECK(!dn2_lid_assignable(0x0000));
    CHECK(dn2_lid_assignable(0x0001));
    CHECK(dn2_lid_assignable(0x00ff));
    CHECK(!dn2_lid_assignable(0x0100));
    CHECK(dn2_lid_assignable(0xB0FF));
    CHECK(!dn2_lid_assignable(0xBFFF));
    CHECK(!dn2_lid_assignable(0xC000));
    CHECK(!dn2_lid_assignable(0xF0FF));
    CHECK(!dn2_clid_is_mcast(0x000));
    CHECK(!dn2_clid_is_mcast(0xBFF));
    CHECK(dn2_clid_is_mcast(0xC00));
    CHECK(dn2_clid_is_mcast(0xFFE));
    CHECK(!dn2_clid_is_mcast(0xFFF));
    CHECK_EQ(DN2_CLID_MCAST_FIRST, 0xC00);
    CHECK_EQ(DN2_CLID_MCAST_LAST, 0xFFE);
    CHECK_EQ(DN2_CLID_INIT, 0xFFF);
    {
        int unicast = 0;
        for (unsigned l = 0; l < 0x10000; l++) {
            unicast += dn2_lid_assignable((uint16_t)l);
        }
        CHECK_EQ(unicast, 0xBFF);      /* CLIDs 0x001..0xBFF */
    }
}

/* ------------------------------------------------------------------ */
/* Packet header (Fig 4.23, [EMU #27/#28])                             */
/* ------------------------------------------------------------------ */

static void test_hdr0_positions(void)
{
    struct dn2_hdr h;

#define ONLY(field, val, mask) do { \
        memset(&h, 0, sizeof(h)); \
        h.field = (val); \
        CHECK_EQ(dn2_hdr0_encode(&h), (mask)); \
    } while (0)
    ONLY(size, 0xfff, DN2_MASK(11, 0));
    ONLY(type, 0x1f, DN2_MASK(16, 12));
    ONLY(dtype, 7, DN2_MASK(19, 17));
    ONLY(pgid, 0xff, DN2_MASK(27, 20));
    ONLY(dwid, 1, DN2_BIT(28));
    ONLY(swid, 1, DN2_BIT(29));
    ONLY(dlid, 0xffff, DN2_MASK(47, 32));
    ONLY(iter, 0xff, DN2_MASK(58, 51));
    ONLY(rflag, 1, DN2_BIT(59));
    ONLY(eflag, 1, DN2_BIT(60));
    ONLY(hflag, 1, DN2_BIT(61));
    ONLY(lflag, 1, DN2_BIT(62));
    ONLY(pflag, 1, DN2_BIT(63));
    /* oversized values do not spill into neighbours */
    ONLY(size, 0xffff, DN2_MASK(11, 0));
    ONLY(type, 0xff, DN2_MASK(16, 12));
    ONLY(dtype, 0xff, DN2_MASK(19, 17));
    ONLY(dwid, 3, DN2_BIT(28));
    ONLY(iter, 0xff, DN2_MASK(58, 51));
#undef ONLY
    CHECK_EQ(DN2_H0_SIZE_HI, 11);
    CHECK_EQ(DN2_H0_SIZE_LO, 0);
    CHECK_EQ(DN2_H0_TYPE_HI, 16);
    CHECK_EQ(DN2_H0_TYPE_LO, 12);
    CHECK_EQ(DN2_H0_DTYPE_HI, 19);
    CHECK_EQ(DN2_H0_DTYPE_LO, 17);
    CHECK_EQ(DN2_H0_PGID_HI, 27);
    CHECK_EQ(DN2_H0_PGID_LO, 20);
    CHECK_EQ(DN2_H0_DWID_BIT, 28);
    CHECK_EQ(DN2_H0_SWID_BIT, 29);
    CHECK_EQ(DN2_H0_DLID_HI, 47);
    CHECK_EQ(DN2_H0_DLID_LO, 32);
    CHECK_EQ(DN2_H0_ITER_HI, 58);
    CHECK_EQ(DN2_H0_ITER_LO, 51);
    CHECK_EQ(DN2_H0_RFLAG_BIT, 59);
    CHECK_EQ(DN2_H0_EFLAG_BIT, 60);
    CHECK_EQ(DN2_H0_HFLAG_BIT, 61);
    CHECK_EQ(DN2_H0_LFLAG_BIT, 62);
    CHECK_EQ(DN2_H0_PFLAG_BIT, 63);
    /* BOTF patches exactly Packet Size and PGID */
    CHECK_EQ(DN2_H0_BOTF_PATCH_MASK, DN2_MASK(11, 0) | DN2_MASK(27, 20));
    /* unused bits: [31:30], [50:48] */
    memset(&h, 0xff, sizeof(h));
    CHECK_EQ(dn2_hdr0_encode(&h) & (DN2_MASK(31, 30) | DN2_MASK(50, 48)), 0);
    /* 2nd DW */
    CHECK_EQ(dn2_hdr1_encode(0x11223344, 0x55667788), 0x5566778811223344ULL);
}

static void test_hdr0_roundtrip(void)
{
    for (int i = 0; i < 200000; i++) {
        struct dn2_hdr a, b;
        uint64_t x = rnd64(), y = rnd64();

        memset(&a, 0, sizeof(a));
        a.size = x & 0xfff;
        a.type = (x >> 12) & 0x1f;
        a.dtype = (x >> 17) & 7;
        a.pgid = (x >> 20) & 0xff;
        a.dwid = (x >> 28) & 1;
        a.swid = (x >> 29) & 1;
        a.dlid = (uint16_t)(x >> 32);
        a.iter = (x >> 48) & 0xff;
        a.rflag = (x >> 56) & 1;
        a.eflag = (x >> 57) & 1;
        a.hflag = (x >> 58) & 1;
        a.lflag = (x >> 59) & 1;
        a.pflag = (x >> 60) & 1;
        memset(&b, 0x5a, sizeof(b));
        dn2_hdr0_decode(&b, dn2_hdr0_encode(&a));
        if (a.size != b.size || a.type != b.type || a.dtype != b.dtype ||
            a.pgid != b.pgid || a.dwid != b.dwid || a.swid != b.swid ||
            a.dlid != b.dlid || a.iter != b.iter || a.rflag != b.rflag ||
            a.eflag != b.eflag || a.hflag != b.hflag || a.lflag != b.lflag ||
            a.pflag != b.pflag) {
            fail_at(__FILE__, __LINE__, "header round trip %d (word 0x%" PRIx64 ")",
                    i, dn2_hdr0_encode(&a));
            return;
        }
        /* raw word -> decode -> encode keeps every defined bit */
        dn2_hdr0_decode(&b, y);
        if (dn2_hdr0_encode(&b) != (y & ~(DN2_MASK(31, 30) | DN2_MASK(50, 48)))) {
            fail_at(__FILE__, __LINE__, "raw header 0x%" PRIx64 " -> 0x%" PRIx64, y,
                    dn2_hdr0_encode(&b));
            return;
        }
    }
}

static void test_hdr_lines_and_size(void)
{
    /* 4 lines for the RVL family, 3 for RVSS/RVSI, 2 otherwise */
    CHECK_EQ(dn2_hdr_lines(DN2_OP_RVL), 4);
    CHECK_EQ(dn2_hdr_lines(DN2_OP_RVLS), 4);
    CHECK_EQ(dn2_hdr_lines(DN2_OP_RVLI), 4);
    CHECK_EQ(dn2_hdr_lines(DN2_OP_RVS), 2);
    CHECK_EQ(dn2_hdr_lines(DN2_OP_RVSS), 3);
    CHECK_EQ(dn2_hdr_lines(DN2_OP_RVSI), 3);
    CHECK_EQ(dn2_hdr_lines(DN2_OP_IPUSH), 2);
    CHECK_EQ(dn2_hdr_lines(DN2_OP_LHSV1), 2);
    CHECK_EQ(dn2_hdr_lines(DN2_OP_LHSV2), 2);
    CHECK_EQ(dn2_hdr_lines(DN2_OP_BOTF), 2);
    CHECK_EQ(DN2_HDR_LINES_SHORT, 2);
    CHECK_EQ(DN2_HDR_LINES_LONG, 3);
    CHECK_EQ(DN2_HDR_LINES_RVL, 4);
    CHECK_EQ(DN2_LINE, 8);
    CHECK_EQ(DN2_LINE_ID_FIRST, 1);
    CHECK_EQ(DN2_LINE_ID_LAST, 2);
    CHECK_EQ(DN2_LINE_ID_MID, 3);
    /* max BOTF data with a 2-line header is 496 B */
    CHECK_EQ(DN2_BOTF_MAX - DN2_HDR_LINES_SHORT * DN2_LINE, 496);
    /* Packet Size: 0 encodes 4096 [EMU #28] */
    CHECK_EQ(dn2_pkt_size_bytes(0), 4096);
    CHECK_EQ(dn2_pkt_size_bytes(16), 16);
    CHECK_EQ(dn2_pkt_size_bytes(0xfff), 4095);
    CHECK_EQ(dn2_pkt_size_field(4096), 0);
    CHECK_EQ(dn2_pkt_size_field(4095), 0xfff);
    CHECK_EQ(dn2_pkt_size_field(24), 24);
    for (uint32_t b = 1; b <= 4096; b++) {
        if (dn2_pkt_size_bytes(dn2_pkt_size_field(b)) != b) {
            fail_at(__FILE__, __LINE__, "packet size %u", b);
            return;
        }
    }
}

/* ------------------------------------------------------------------ */
/* SO-DIMM interleave, status record, LH entry                          */
/* ------------------------------------------------------------------ */

static void test_interleave(void)
{
    static uint8_t seen[2][4096];

    /* SO-DIMM1 holds 0x0-0x7, SO-DIMM2 0x8-0xf, ... (§4.5.6) */
    CHECK_EQ(DN2_SDIMM_INTERLEAVE, 8);
    CHECK_EQ(dn2_sdimm_module(0x0), 0);
    CHECK_EQ(dn2_sdimm_module(0x7), 0);
    CHECK_EQ(dn2_sdimm_module(0x8), 1);
    CHECK_EQ(dn2_sdimm_module(0xf), 1);
    CHECK_EQ(dn2_sdimm_module(0x10), 0);
    CHECK_EQ(dn2_sdimm_module_offset(0x0), 0);
    CHECK_EQ(dn2_sdimm_module_offset(0x7), 7);
    CHECK_EQ(dn2_sdimm_module_offset(0x8), 0);
    CHECK_EQ(dn2_sdimm_module_offset(0xf), 7);
    CHECK_EQ(dn2_sdimm_module_offset(0x10), 8);
    CHECK_EQ(dn2_sdimm_module_offset(0x1f), 15);
    CHECK_EQ(dn2_sdimm_module_offset(0x20), 16);
    CHECK_EQ(dn2_sdimm_module(0x1FFFFFFFULL), 1);
    CHECK_EQ(dn2_sdimm_module_offset(0x1FFFFFFFULL), 0x0FFFFFFFULL);
    CHECK_EQ(dn2_sdimm_module_offset(0x3FFFFFFF8ULL), 0x1FFFFFFF8ULL);  /* > 4 GiB */
    /* a bijection of [0, 8192) onto 2 x [0, 4096) */
    memset(seen, 0, sizeof(seen));
    for (uint64_t a = 0; a < 8192; a++) {
        unsigned m = dn2_sdimm_module(a);
        uint64_t o = dn2_sdimm_module_offset(a);
        if (m > 1 || o >= 4096 || seen[m][o]) {
            fail_at(__FILE__, __LINE__, "address 0x%" PRIx64 " -> module %u offset 0x%"
                    PRIx64, a, m, o);
            return;
        }
        seen[m][o] = 1;
    }
}

static void test_records(void)
{
    struct dn2_status_rec rec;

    CHECK_EQ(sizeof(struct dn2_status_rec), 16);
    CHECK_EQ(DN2_STATUS_REC_SIZE, 16);
    CHECK_EQ((char *)&rec.lower - (char *)&rec, 0);    /* Lower at +0 [EMU #26] */
    CHECK_EQ((char *)&rec.upper - (char *)&rec, 8);
    /* LH Buffer: 64 entries x 64 B = 4 KiB; 2 lines metadata + 48 B data */
    CHECK_EQ(DN2_LHB_ENTRIES, 64);
    CHECK_EQ(DN2_LHB_ENTRY, 64);
    CHECK_EQ(DN2_LHB_DATA, 48);
    CHECK_EQ(DN2_LHB_ENTRIES * DN2_LHB_ENTRY, DN2_LHB_AREA);
    CHECK_EQ(2 * DN2_LINE + DN2_LHB_DATA, DN2_LHB_ENTRY);
    CHECK_EQ(DN2_LH_COMPLETE, 1);
    CHECK_EQ(DN2_LH_VALID, 2);
    /* the status rings fit the LLCM */
    CHECK(dn2_status_area_bytes(0x40) <= DN2_LLCM_AREA);
    CHECK_EQ(DN2_STATUS_INIT_MASK + 1, DN2_LLCM_AREA);
    CHECK_EQ(DN2_LHB_ADDR_MASK + 1, DN2_LHB_AREA);
    /* struct dn2_req holds every field (smoke: 32-bit fields are 32 bits) */
    CHECK_EQ(sizeof(((struct dn2_req *)0)->arg), 4);
    CHECK_EQ(sizeof(((struct dn2_req *)0)->src), 4);
    CHECK_EQ(sizeof(((struct dn2_req *)0)->dst), 4);
    CHECK_EQ(sizeof(((struct dn2_req *)0)->ex_arg), 4);
    CHECK(sizeof(((struct dn2_req *)0)->dclid) >= 2);
    CHECK(sizeof(((struct dn2_hdr *)0)->dlid) >= 2);
    CHECK(sizeof(((struct dn2_hdr *)0)->size) >= 2);
}

static void test_envelope(void)
{
    /* Fig 7.6: Context [63:48], Rank [45:32], Tag [31:0]; [47:46] unused */
    CHECK_EQ(dn2_envelope(0xffff, 0, 0), DN2_MASK(63, 48));
    CHECK_EQ(dn2_envelope(0, 0x3fff, 0), DN2_MASK(45, 32));
    CHECK_EQ(dn2_envelope(0, 0, 0xffffffffu), DN2_MASK(31, 0));
    CHECK_EQ(dn2_envelope(0xffff, 0xffff, 0xffffffffu) & DN2_MASK(47, 46), 0);
    CHECK_EQ(dn2_envelope(0x1234, 0x0567, 0x89abcdef), 0x1234056789abcdefULL);
    for (int i = 0; i < 10000; i++) {
        unsigned c = rnd64() & 0xffff, r = rnd64() & 0x3fff;
        uint32_t t = (uint32_t)rnd64();
        uint64_t e = dn2_envelope(c, r, t);
        struct dn2_env env;

        dn2_env_unpack(e, &env);
        if ((e >> 48) != c || ((e >> 32) & 0x3fff) != r || (uint32_t)e != t ||
            env.context != c || env.rank != r || env.tag != t) {
            fail_at(__FILE__, __LINE__, "envelope %x %x %x", c, r, t);
            return;
        }
    }
}

/* ------------------------------------------------------------------ */
/* Codecs by field name (issue 12): every layout packs and unpacks      */
/* through named fields; the expected positions below are written      */
/* independently of the header, from the thesis's figures.             */
/* ------------------------------------------------------------------ */

#define TEST_F_HI 11
#define TEST_F_LO 4
static void test_field_macros(void)
{
    CHECK_EQ(DN2_FMASK(TEST_F), 0xff0);
    CHECK_EQ(DN2_FBITS(TEST_F), 8);
    CHECK_EQ(DN2_FGET(0x12345, TEST_F), 0x34);
    CHECK_EQ(DN2_FPUT(0x1ab, TEST_F), 0xab0);     /* truncated to 8 bits */
    CHECK_EQ(DN2_FSET(0xfffff, TEST_F, 0x12), 0xff12f);
    for (int i = 0; i < 1000; i++) {
        uint64_t w = rnd64(), x = rnd64();
        uint64_t s = DN2_FSET(w, TEST_F, x);
        if (DN2_FGET(s, TEST_F) != (x & 0xff) || (s & ~0xff0ULL) != (w & ~0xff0ULL)) {
            fail_at(__FILE__, __LINE__, "FSET 0x%" PRIx64 " 0x%" PRIx64, w, x);
            return;
        }
    }
}

static void test_onehot_codes(void)
{
    CHECK_EQ(dn2_onehot_k(1, 5), 0);
    CHECK_EQ(dn2_onehot_k(0x10, 5), 4);
    CHECK_EQ(dn2_onehot_k(0x20, 5), -1);
    CHECK_EQ(dn2_onehot_k(0, 5), -1);
    CHECK_EQ(dn2_onehot_k(3, 5), -1);
    CHECK_EQ(dn2_onehot_reg(64, 7, 64), 1);
    CHECK_EQ(dn2_onehot_reg(64, 7, 4096), 0x40);
    CHECK_EQ(dn2_onehot_reg(64, 7, 8192), 0);
    CHECK_EQ(dn2_onehot_reg(64, 7, 100), 0);
    /* MTU (Table 4.11): 256..4096, encoder <-> decoder */
    CHECK_EQ(dn2_mtu_reg(256), 0x01);
    CHECK_EQ(dn2_mtu_reg(512), 0x02);
    CHECK_EQ(dn2_mtu_reg(1024), 0x04);
    CHECK_EQ(dn2_mtu_reg(2048), 0x08);
    CHECK_EQ(dn2_mtu_reg(4096), 0x10);
    CHECK_EQ(dn2_mtu_reg(128), 0);
    CHECK_EQ(dn2_mtu_reg(8192), 0);
    CHECK_EQ(dn2_mtu_reg(1500), 0);
    CHECK_EQ(DN2_MTU_THESIS_1024, 0x14);
    CHECK_EQ(dn2_mtu_bytes(DN2_MTU_THESIS_1024), 1024);
    for (uint32_t b = 256; b <= 4096; b <<= 1) {
        CHECK_EQ(dn2_mtu_bytes(dn2_mtu_reg(b)), b);
    }
    /* Status Area Size (Table A.5): 64..4096 */
    CHECK_EQ(dn2_status_size_reg(64), 0x01);
    CHECK_EQ(dn2_status_size_reg(1024), 0x10);
    CHECK_EQ(dn2_status_size_reg(4096), 0x40);
    CHECK_EQ(dn2_status_size_reg(32), 0);
    CHECK_EQ(dn2_status_size_reg(8192), 0);
    CHECK_EQ(dn2_status_size_reg(1000), 0);
    for (uint32_t b = 64; b <= 4096; b <<= 1) {
        CHECK_EQ(dn2_status_area_bytes(dn2_status_size_reg(b)), b);
    }
    /* SO-DIMM Capacity (Table 4.10): 256 MiB .. 8 GiB per module */
    CHECK_EQ(dn2_sdimm_capacity_reg(256ULL << 20), 0x01);
    CHECK_EQ(dn2_sdimm_capacity_reg(8192ULL << 20), 0x20);
    CHECK_EQ(dn2_sdimm_capacity_reg(128ULL << 20), 0);
    CHECK_EQ(dn2_sdimm_capacity_reg(16384ULL << 20), 0);
    CHECK_EQ(dn2_sdimm_capacity_reg(300ULL << 20), 0);
    for (uint64_t b = 256ULL << 20; b <= (8192ULL << 20); b <<= 1) {
        CHECK_EQ(dn2_sdimm_module_bytes(dn2_sdimm_capacity_reg(b)), b);
    }
}

static void test_otype_family(void)
{
    CHECK_EQ(DN2_OTYPE_MASK, 0x1f);
    CHECK_EQ(DN2_OTYPE_FAMILY_MASK, 0x1c);
    CHECK_EQ(DN2_OTYPE_CLASS_MASK, 0x18);
    CHECK_EQ(dn2_req_otype(dn2_req_lower(DN2_OP_RVSI, 7, 255, 0xfff, 1, 1, ~0u)), DN2_OP_RVSI);
    for (unsigned o = 0; o < 32; o++) {
        unsigned fam = o & 0x1c;
        int rvl = o == 0x10 || o == 0x11 || o == 0x12;
        int rvs = o == 0x14 || o == 0x15 || o == 0x16;
        int local = (o >= 0x04 && o <= 0x06) || (o >= 0x08 && o <= 0x0a);
        int msg = (o & 0x18) == 0x18;
        int lhs = o == 0x19 || o == 0x1a;

        if (dn2_otype_family(o) != fam || !!dn2_otype_is_rvl(o) != rvl ||
            !!dn2_otype_is_rvs(o) != rvs || !!dn2_otype_is_local(o) != local ||
            !!dn2_otype_is_msg(o) != msg || !!dn2_otype_is_lhs(o) != lhs ||
            dn2_otype_form(o) != (int)(o & 3)) {
            fail_at(__FILE__, __LINE__, "OTYPE 0x%02x predicates", o);
        }
    }
    CHECK_EQ(dn2_otype_family(DN2_OP_VLI), DN2_OP_VL);
    CHECK_EQ(dn2_otype_family(DN2_OP_VSS), DN2_OP_VS);
    CHECK_EQ(dn2_otype_family(DN2_OP_RVLS), DN2_OP_RVL);
    CHECK_EQ(dn2_otype_family(DN2_OP_RVSI), DN2_OP_RVS);
    CHECK_EQ(dn2_otype_family(DN2_OP_LHSV2), DN2_OP_IPUSH);
    CHECK(dn2_otype_is_msg(DN2_OP_IPUSH));
    CHECK(dn2_otype_is_msg(DN2_OP_LHSV1));
    CHECK(!dn2_otype_is_msg(DN2_OP_RVS));
}

static void test_cmd_ex_codec(void)
{
    struct dn2_cmd_ex x = { DN2_OP_VSS, 3, 0x42, 0x12345678 }, y;

    CHECK_EQ(dn2_ex_pack(&x), 0x1234567800004269ULL);
    for (int i = 0; i < 10000; i++) {
        uint64_t w = rnd64() & ~DN2_MASK(31, 16);   /* [31:16] unused */
        dn2_ex_unpack(w, &y);
        if (dn2_ex_pack(&y) != w || y.otype != (w & 0x1f) || y.dtype != ((w >> 5) & 7) ||
            y.iter != ((w >> 8) & 0xff) || y.arg != (w >> 32)) {
            fail_at(__FILE__, __LINE__, "Command Ex 0x%" PRIx64, w);
            return;
        }
    }
}

/* A random header of the given type, with only the fields its lines carry. */
static void random_hdr(struct dn2_hdr *h, unsigned type)
{
    unsigned n = dn2_hdr_lines(type);

    memset(h, 0, sizeof(*h));
    h->size = rnd64() & 0xfff;
    h->type = (uint8_t)type;
    h->dtype = rnd64() & 7;
    h->pgid = rnd64() & 0xff;
    h->dwid = rnd64() & 1;
    h->swid = rnd64() & 1;
    h->dlid = rnd64() & 0xffff;
    h->iter = rnd64() & 0xff;
    h->rflag = rnd64() & 1;
    h->eflag = rnd64() & 1;
    h->hflag = n > DN2_HDR_LINES_SHORT;
    h->lflag = rnd64() & 1;
    h->pflag = rnd64() & 1;
    h->w1_lo = (uint32_t)rnd64();
    h->w1_hi = (uint32_t)rnd64();
    if (n >= DN2_HDR_LINES_LONG) {
        h->total = (uint32_t)rnd64();
        h->stride = (uint32_t)rnd64();
    }
    if (n >= DN2_HDR_LINES_RVL) {
        h->ex = rnd64();
    }
}

static void test_hdr_codec(void)
{
    static const unsigned types[] = {
        DN2_OP_RVL, DN2_OP_RVLS, DN2_OP_RVLI, DN2_OP_RVS, DN2_OP_RVSS, DN2_OP_RVSI,
        DN2_OP_IPUSH, DN2_OP_LHSV1, DN2_OP_LHSV2,
    };
    uint64_t line[DN2_HDR_LINES_MAX];
    struct dn2_hdr h, g;

    /* the decoder sets fields, not the padding byte that memcmp compares
     * (random_hdr clears h's) */
    memset(&g, 0, sizeof(g));
    /* lines 2 and 3: {hi [63:32], lo [31:0]} */
    CHECK_EQ(dn2_hdr1_encode(0x89abcdef, 0x01234567), 0x0123456789abcdefULL);
    CHECK_EQ(dn2_hdr2_encode(0x89abcdef, 0x01234567), 0x0123456789abcdefULL);
    CHECK_EQ(dn2_hdr_lines(DN2_OP_RVS), 2);
    CHECK_EQ(dn2_hdr_lines(DN2_OP_RVSS), 3);
    CHECK_EQ(dn2_hdr_lines(DN2_OP_RVLI), 4);
    CHECK_EQ(dn2_hdr_lines(DN2_OP_LHSV2), 2);
    for (int i = 0; i < 20000; i++) {
        unsigned type = types[i % (sizeof(types) / sizeof(types[0]))];
        unsigned n;

        random_hdr(&h, type);
        memset(line, 0xa5, sizeof(line));
        n = dn2_hdr_pack(&h, line);
        if (n != dn2_hdr_lines(type) || dn2_hdr_unpack(&g, line, n) != n ||
            memcmp(&g, &h, sizeof(g)) != 0 || line[0] != dn2_hdr0_encode(&h) ||
            (uint32_t)line[1] != h.w1_lo || (line[1] >> 32) != h.w1_hi ||
            (n > 2 && ((uint32_t)line[2] != h.total || (line[2] >> 32) != h.stride)) ||
            (n > 3 && line[3] != h.ex) ||
            dn2_hdr0_type(line[0]) != type || dn2_hdr0_dlid(line[0]) != h.dlid ||
            dn2_hdr0_dwid(line[0]) != h.dwid) {
            fail_at(__FILE__, __LINE__, "header of %s, case %d", dn2_otype_name(type), i);
            return;
        }
    }
    /* absent lines read as 0 */
    random_hdr(&h, DN2_OP_RVLS);
    dn2_hdr_pack(&h, line);
    CHECK_EQ(dn2_hdr_unpack(&g, line, 2), 4);
    CHECK_EQ(g.total, 0);
    CHECK_EQ(g.stride, 0);
    CHECK_EQ(g.ex, 0);
    CHECK_EQ(dn2_pkt_size_field(4096), 0);
    CHECK_EQ(dn2_pkt_size_bytes(dn2_pkt_size_field(4096)), 4096);
    CHECK_EQ(dn2_pkt_size_field(4095), 4095);
    CHECK_EQ(DN2_H0_BOTF_PATCH_MASK, 0x0ff00fffULL);
}

static void test_status_codec(void)
{
    struct dn2_status_fields f = { DN2_OP_RVS, 2, 7, 1, 1, 0x123, 0x200, 0x4000 }, g;
    struct dn2_status_rec r;

    /* laid out like a request: Lower = {Size, e, WID, CLID, Iter, DTYPE, TYPE} */
    dn2_status_pack(&f, &r);
    CHECK_EQ(r.lower, (0x200ULL << 32) | (1ULL << 31) | (1ULL << 30) | (0x123ULL << 18) |
                      (7 << 8) | (2 << 5) | DN2_OP_RVS);
    CHECK_EQ(r.upper, 0x4000);
    CHECK_EQ(r.lower, dn2_req_lower(DN2_OP_RVS, 2, 7, 0x123, 1, 1, 0x200));
    for (int i = 0; i < 10000; i++) {
        r.lower = rnd64() & ~DN2_MASK(17, 16);  /* [17:16] unused */
        r.upper = (uint32_t)rnd64();            /* DSTOff is 0 */
        dn2_status_unpack(&r, &g);
        {
            struct dn2_status_rec q;
            dn2_status_pack(&g, &q);
            if (q.lower != r.lower || q.upper != r.upper || g.clid != ((r.lower >> 18) & 0xfff) ||
                g.size != (r.lower >> 32) || g.addr != r.upper || g.wid != ((r.lower >> 30) & 1)) {
                fail_at(__FILE__, __LINE__, "status 0x%" PRIx64 " 0x%" PRIx64, r.lower, r.upper);
                return;
            }
        }
    }
}

static void test_lh_codec(void)
{
    struct dn2_lh_entry e = { 0x1000, 0x5a5a, 0x1234, 1, 0, 0x87654321, 92 }, g;

    /* line0 = {Pointer[63:32], Context[31:16], Rank[15:2], Valid[1], Complete[0]} */
    CHECK_EQ(dn2_lh_line0(&e), (0x1000ULL << 32) | (0x5a5aULL << 16) | (0x1234 << 2) | 2);
    CHECK_EQ(dn2_lh_line1(&e), (0x87654321ULL << 32) | 92);
    CHECK_EQ(DN2_LH_VALID, 2);
    CHECK_EQ(DN2_LH_COMPLETE, 1);
    CHECK_EQ(DN2_LH_FLAGS, 3);
    CHECK_EQ(DN2_LHB_DATA_OFF + DN2_LHB_DATA, DN2_LHB_ENTRY);
    for (int i = 0; i < 10000; i++) {
        uint64_t l0 = rnd64(), l1 = rnd64();
        dn2_lh_unpack(l0, l1, &g);
        if (dn2_lh_line0(&g) != l0 || dn2_lh_line1(&g) != l1 || g.rank != ((l0 >> 2) & 0x3fff) ||
            g.context != ((l0 >> 16) & 0xffff) || g.valid != ((l0 >> 1) & 1) ||
            g.complete != (l0 & 1) || g.tag != (l1 >> 32) || g.size != (uint32_t)l1) {
            fail_at(__FILE__, __LINE__, "LH entry 0x%" PRIx64 " 0x%" PRIx64, l0, l1);
            return;
        }
    }
}

static void test_sma_codec(void)
{
    CHECK_EQ(dn2_sma_encode(0x1234, DN2_SMA_LINK_READY), 0x31234);
    CHECK_EQ(dn2_sma_lid(0x31234), 0x1234);
    CHECK_EQ(dn2_sma_link(0x31234), 3);
    CHECK(dn2_sma_link_ready(0x30000));
    CHECK(!dn2_sma_link_ready(0x10000));
    CHECK(!dn2_sma_link_ready(0x2ffff));
    CHECK(dn2_sma_link_ready(~0ULL));
    CHECK_EQ(dn2_sma_encode(0xffff, 7), 0x3ffff);      /* link truncated */
}

static void test_module_state_codec(void)
{
    struct dn2_module_state m = { 0x1ffff, 0xfffff, 0x3fff, 0x7f }, g;

    CHECK_EQ(dn2_ms_pack(&m), DN2_MASK(57, 0));
    m.wc = dn2_ms_wc_busy(DN2_OP_RVS);
    m.rc = DN2_MS_RC_HOLDING | DN2_MS_RC_ANSWERING;
    m.wu = 0;
    m.pu = DN2_MS_UNIT_BUSY;
    CHECK_EQ(dn2_ms_pack(&m), 0x15 | (3ULL << 17) | (1ULL << 51));
    for (int i = 0; i < 10000; i++) {
        uint64_t v = rnd64() & DN2_MASK(57, 0);
        dn2_ms_unpack(v, &g);
        if (dn2_ms_pack(&g) != v || g.wc != (v & 0x1ffff) || g.rc != ((v >> 17) & 0xfffff) ||
            g.wu != ((v >> 37) & 0x3fff) || g.pu != ((v >> 51) & 0x7f)) {
            fail_at(__FILE__, __LINE__, "Module State 0x%" PRIx64, v);
            return;
        }
    }
}

static void test_ctl_status_codec(void)
{
    CHECK_EQ(dn2_cs_rx_err(3ULL << 18), DN2_RX_ERR_RVL_DATA);
    CHECK_EQ(dn2_cs_rx_err(~(3ULL << 18)), DN2_RX_ERR_NONE);
    CHECK_EQ(dn2_cs_rx_err(1ULL << 18), DN2_RX_ERR_EARLY_SOP);
    for (unsigned n = 0; n < DN2_NUM_WW; n++) {
        CHECK_EQ(dn2_cs_ww(7ULL << (5 + 3 * n), n), 7);
        CHECK_EQ(dn2_cs_ww(~(7ULL << (5 + 3 * n)), n), 0);
        CHECK_EQ(dn2_cs_ww(DN2_CS_WW_DST_OVF(n), n), 4);
    }
}

static void test_amt_codec(void)
{
    struct dn2_amt_req a;

    /* choice #52: bit 31 = DWID given, bit 30 = DWID */
    CHECK_EQ(dn2_amt_encode_dwid(0, 0, 0, 0), 1ULL << 31);
    CHECK_EQ(dn2_amt_encode_dwid(0, 0, 0, 1), (1ULL << 31) | (1ULL << 30));
    dn2_amt_decode(dn2_amt_encode_dwid(0xabc, 1, 0x1234, 1), &a);
    CHECK_EQ(a.value, 0xabc);
    CHECK_EQ(a.wid, 1);
    CHECK_EQ(a.lid, 0x1234);
    CHECK_EQ(a.dwid, 1);
    CHECK_EQ(a.dwid_given, 1);
    CHECK(dn2_amt_req_for(&a, 1));
    CHECK(!dn2_amt_req_for(&a, 0));
    dn2_amt_decode(dn2_amt_encode(0x10, 0, 7), &a);
    CHECK_EQ(a.dwid_given, 0);
    CHECK(dn2_amt_req_for(&a, 0));
    CHECK(dn2_amt_req_for(&a, 1));
    /* the device's 16-bit slot: bit 15 valid, [11:0] value */
    CHECK_EQ(DN2_AMT_SLOT_VALID, 0x8000);
    CHECK_EQ(DN2_AMT_SLOT_MASK, 0x8fff);
    CHECK_EQ(dn2_amt_slot(0xabc), 0x8abc);
    CHECK_EQ(dn2_amt_slot(0x1abc), 0x8abc);            /* truncated */
    CHECK(dn2_amt_slot_valid(dn2_amt_slot(0)));
    /* every 16-bit slot: valid = bit 15, value = [11:0], and a written
     * slot gives its value back */
    for (uint32_t slot = 0; slot <= 0xffff; slot++) {
        int valid = dn2_amt_slot_valid((uint16_t)slot);
        uint32_t value = dn2_amt_slot_value((uint16_t)slot);

        if (valid != (int)(slot >> 15) || value != (slot & 0xfff) ||
            dn2_amt_slot(value) != (0x8000 | (slot & 0xfff))) {
            fail_at(__FILE__, __LINE__, "slot 0x%04x", slot);
            return;
        }
    }
}

static void test_version(void)
{
    CHECK(DN2_ABI_VERSION >= 1);
}

/* Each case as the table runner wants it: true when none of its checks
 * failed. */
#define CASE_FN(fn) \
    static bool fn##_case(void) \
    { \
        case_failures = 0; \
        fn(); \
        return !case_failures; \
    }
CASE_FN(test_bit_helpers)
CASE_FN(test_region_layout)
CASE_FN(test_register_offsets)
CASE_FN(test_ctl_status_bits)
CASE_FN(test_counters_and_flags)
CASE_FN(test_status_area_size)
CASE_FN(test_capacity)
CASE_FN(test_mtu)
CASE_FN(test_amt_encode)
CASE_FN(test_opcodes)
CASE_FN(test_dsh_example)
CASE_FN(test_request_fields)
CASE_FN(test_request_roundtrip)
CASE_FN(test_botf)
CASE_FN(test_lhsv2)
CASE_FN(test_clid_lid)
CASE_FN(test_hdr0_positions)
CASE_FN(test_hdr0_roundtrip)
CASE_FN(test_hdr_lines_and_size)
CASE_FN(test_interleave)
CASE_FN(test_records)
CASE_FN(test_envelope)
CASE_FN(test_field_macros)
CASE_FN(test_onehot_codes)
CASE_FN(test_otype_family)
CASE_FN(test_cmd_ex_codec)
CASE_FN(test_hdr_codec)
CASE_FN(test_status_codec)
CASE_FN(test_lh_codec)
CASE_FN(test_sma_codec)
CASE_FN(test_module_state_codec)
CASE_FN(test_ctl_status_codec)
CASE_FN(test_amt_codec)
CASE_FN(test_version)

static const struct tap_case cases[] = {
    { "DN2_BIT/DN2_MASK/DN2_GET/DN2_PUT incl. bits 0 and 63", test_bit_helpers_case },
    { "window layout: Table 4.3, Figs 4.8/4.9, dsh dump addresses", test_region_layout_case },
    { "User/System Register offsets (Fig 4.12, Fig 4.15)", test_register_offsets_case },
    { "Controller Status bits (Table A.1), dsh 0x832", test_ctl_status_bits_case },
    { "Primitive Counter, PW flags, Module State fields", test_counters_and_flags_case },
    { "Status Area Size decoder (Table A.5) incl. default", test_status_area_size_case },
    { "SO-DIMM Capacity decoder (Table 4.10) incl. default", test_capacity_case },
    { "MTU decoder (Table 4.11) incl. 10100 and default", test_mtu_case },
    { "AMT Address Table interface encoding", test_amt_encode_case },
    { "opcode table (Table 4.13), forms, DTYPE sizes", test_opcodes_case },
    { "dsh worked example VS src=0x400 dst=0x600 size=0x200", test_dsh_example_case },
    { "request word field positions (Fig 4.13)", test_request_fields_case },
    { "request encode/decode round trips (random)", test_request_roundtrip_case },
    { "BOTF request encode/decode (Fig 4.14)", test_botf_case },
    { "LHSv2 DSTOff reuse", test_lhsv2_case },
    { "CLID <-> LID (Table 4.6)", test_clid_lid_case },
    { "packet header 1st DW field positions", test_hdr0_positions_case },
    { "packet header 1st DW round trips (random)", test_hdr0_roundtrip_case },
    { "header line counts and Packet Size field", test_hdr_lines_and_size_case },
    { "SO-DIMM 8-byte interleave", test_interleave_case },
    { "status record and LH entry sizes", test_records_case },
    { "LHS envelope word (Fig 7.6)", test_envelope_case },
    { "field access by name: DN2_FGET/FPUT/FMASK/FSET/FBITS", test_field_macros_case },
    { "one-hot encoders <-> decoders: MTU, status size, capacity", test_onehot_codes_case },
    { "OTYPE family predicates and masks (0x1f, 0x1c, 0x18)", test_otype_family_case },
    { "Command Ex codec round trips", test_cmd_ex_codec_case },
    { "packet header lines 1-4 pack/unpack, every packet type", test_hdr_codec_case },
    { "receive-status record codec", test_status_codec_case },
    { "LH Buffer entry codec", test_lh_codec_case },
    { "SMA LID / link codec", test_sma_codec_case },
    { "Module State codec", test_module_state_codec_case },
    { "Controller Status rx error / WW fields", test_ctl_status_codec_case },
    { "AMT request and table slot codecs (choice #52)", test_amt_codec_case },
    { "ABI version", test_version_case },
};

int main(int argc, char **argv)
{
    return tap_run_cases(cases, TAP_NCASES(cases), argc > 1 ? argv[1] : NULL);
}
