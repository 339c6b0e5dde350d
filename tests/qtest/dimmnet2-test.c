/*
 * qtest for the DIMMnet-2 board model (-device dimmnet2).
 *
 * Checks the device against the thesis (Tsuji/Kitamura, Keio University PhD
 * thesis 2007, by section, table and page) and the binding choices of
 * docs/thesis-choices.md ("choice #n" below).  Every constant comes from
 * include/dimmnet2/dn2_abi.h.
 *
 * Request completion is asynchronous (a bottom half plays the Window
 * Controller), so every wait is a bounded polling loop over a register.
 * Assertions are non-fatal: a failing check marks its test case failed and
 * the case goes on (polls fail fast once one has timed out), so one
 * discrepancy does not hide the others.
 *
 * Firmware: libqtest passes no -L, so every QEMU gets -L $DN2_FIRMWARE_DIR
 * (default ~/.cache/dimmnet2/firmware).  The helpers shared with the other
 * qtests are in dimmnet2-qtest-util.c.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include <sys/wait.h>
#include "libqtest.h"
#include "libqos/fw_cfg.h"
#include "qobject/qdict.h"
#include "qobject/qlist.h"
#include "qemu/bswap.h"
#include "dimmnet2-qtest-util.h"

#define QUICK_POLL 2000     /* for effects that must be (nearly) immediate */

#define AREA_DEFAULT (256 * MiB_)   /* per-process SO-DIMM area, 512M default */
#define DN2_COPY_CHUNK_QTEST (64 * KiB_) /* the device copies in chunks of this */

/* ------------------------------------------------------------------ */
/* Requests                                                            */
/* ------------------------------------------------------------------ */

/* Issue and wait until the Primitive Counter field `fam` advanced by one.
 * Returns the Controller Status after completion. */
static uint64_t run(DN2 *d, int wid, int fam, uint64_t upper, uint64_t lower)
{
    unsigned before = dn2q_pcf(d, wid, fam);
    g_autofree char *what = g_strdup_printf(
        "completion of %s (WID %d, lower 0x%" PRIx64 " upper 0x%" PRIx64 ")",
        dn2_otype_name(dn2_req_otype(lower)), wid, lower, upper);

    dn2q_issue(d, wid, 0, upper, lower);
    dn2q_wait_pc(d, wid, fam, before + 1, what);
    return dn2q_cs(d, wid);
}

static uint64_t vs(DN2 *d, int wid, uint32_t src, uint32_t dst, uint32_t size)
{
    return run(d, wid, DN2_PC_VS, dn2_req_upper(src, dst),
               dn2_req_lower(DN2_OP_VS, 0, 0, 0, 0, 0, size));
}
static uint64_t vl(DN2 *d, int wid, uint32_t src, uint32_t dst, uint32_t size)
{
    return run(d, wid, DN2_PC_VL, dn2_req_upper(src, dst),
               dn2_req_lower(DN2_OP_VL, 0, 0, 0, 0, 0, size));
}
static uint64_t vss(DN2 *d, int wid, uint32_t src, uint32_t dst, unsigned dtype,
                    unsigned iter, uint32_t stride)
{
    return run(d, wid, DN2_PC_VS, dn2_req_upper(src, dst),
               dn2_req_lower(DN2_OP_VSS, dtype, iter, 0, 0, 0, stride));
}
static uint64_t vsi(DN2 *d, int wid, uint32_t src, uint32_t dst, unsigned dtype,
                    unsigned iter, uint32_t list)
{
    return run(d, wid, DN2_PC_VS, dn2_req_upper(src, dst),
               dn2_req_lower(DN2_OP_VSI, dtype, iter, 0, 0, 0, list));
}
static uint64_t vls(DN2 *d, int wid, uint32_t src, uint32_t dst, unsigned dtype,
                    unsigned iter, uint32_t stride)
{
    return run(d, wid, DN2_PC_VL, dn2_req_upper(src, dst),
               dn2_req_lower(DN2_OP_VLS, dtype, iter, 0, 0, 0, stride));
}
static uint64_t vli(DN2 *d, int wid, uint32_t src, uint32_t dst, unsigned dtype,
                    unsigned iter, uint32_t list)
{
    return run(d, wid, DN2_PC_VL, dn2_req_upper(src, dst),
               dn2_req_lower(DN2_OP_VLI, dtype, iter, 0, 0, 0, list));
}

/* Issue a request that must be refused (choice #14): bit 20 appears and
 * the Primitive Counter does not move.  Leaves bit 20 set. */
static void expect_refused(DN2 *d, int wid, uint64_t upper, uint64_t lower,
                           const char *what)
{
    uint64_t pc0 = dn2q_pc(d, wid);

    EXPECT_HEX(dn2q_cs(d, wid) & DN2_CS_REQ_ERROR, 0, "%s: bit 20 clear beforehand", what);
    dn2q_issue(d, wid, 0, upper, lower);
    if (dn2q_poll_ur(d, wid, DN2_UR_CTL_STATUS, DN2_CS_REQ_ERROR, DN2_CS_REQ_ERROR,
                     DN2Q_MAX_POLL, what)) {
        EXPECT_HEX(dn2q_pc(d, wid), pc0, "%s: Primitive Counter unchanged", what);
    }
}

/* Clear bit 20 (and the counters): a write to the Primitive Counter. */
static void pc_reset(DN2 *d, int wid)
{
    dn2q_ur_wr(d, wid, DN2_UR_PRIM_COUNTER, 0);
}

/* Stall the Window Controller: a remote primitive waits forever without a
 * link (choice #22).  Module State shows 1 + OTYPE (ABI). */
static void stall(DN2 *d, int wid)
{
    dn2q_doorbell(d, wid, 0, dn2_req_upper(0, 0),
                  dn2_req_lower(DN2_OP_RVS, 0, 0, 1, 0, 1, 64));
    dn2q_poll_ur(d, wid, DN2_UR_MODULE_STATE, DN2_MASK(16, 0), 1 + DN2_OP_RVS,
                 DN2Q_MAX_POLL, "Module State showing the stalled RVS");
}

/* SO-DIMM access through the windows (WW#0 / PW#0 of the WID). */
static void sd_write(DN2 *d, int wid, uint32_t off, const void *buf, size_t len)
{
    size_t done = 0;

    while (done < len && !d->dead) {
        size_t n = MIN(DN2_WIN_SIZE, len - done);
        qtest_memwrite(d->qts, dn2q_ww_addr(d, wid, 0), (const uint8_t *)buf + done, n);
        vs(d, wid, 0, off + done, n);
        done += n;
    }
}

static void sd_read(DN2 *d, int wid, uint32_t off, void *buf, size_t len)
{
    size_t done = 0;

    while (done < len && !d->dead) {
        size_t n = MIN(DN2_WIN_SIZE, len - done);
        vl(d, wid, off + done, 0, n);
        qtest_memread(d->qts, dn2q_pw_addr(d, wid, 0), (uint8_t *)buf + done, n);
        done += n;
    }
}

static bool sd_check(DN2 *d, int wid, uint32_t off, const void *want, size_t len,
                     const char *what)
{
    g_autofree uint8_t *got = g_malloc(len);
    g_autofree char *w = g_strdup_printf("%s (WID %d SO-DIMM 0x%x..0x%zx)", what, wid,
                                         off, off + len);

    sd_read(d, wid, off, got, len);
    return dn2q_mem_eq(w, got, want, len, off);
}

/* ------------------------------------------------------------------ */
/* Register reset values and read/write behaviour                       */
/* ------------------------------------------------------------------ */

static const uint32_t ur_write_only[] = {
    DN2_UR_CMD0_LOWER, DN2_UR_CMD0_UPPER, DN2_UR_CMD_EX, DN2_UR_CMD1_LOWER,
    DN2_UR_CMD1_UPPER, DN2_UR_IPUSH_AREA_SIZE, DN2_UR_STATUS_INIT,
    DN2_UR_STATUS_SIZE, DN2_UR_CMD_EX_FLAG,
};
static const uint32_t ur_holes[] = {
    0x008, 0x018, 0x028, 0x030, 0x0f8, 0x108, 0x118, 0x1f8, 0x208, 0x2f8, 0x308,
    0x408, 0x508, 0x608, 0x708, 0x808, 0x908, 0xa08, 0xb08, 0xc08, 0xd00, 0xe00,
    0xf00, 0xff8,
};

/* The write-only registers of a WID read 0 (choice #3). */
static void expect_write_only_zero(DN2 *d, int wid, const char *when)
{
    size_t i;

    for (i = 0; i < G_N_ELEMENTS(ur_write_only); i++) {
        EXPECT_HEX(dn2q_ur_rd(d, wid, ur_write_only[i]), 0,
                   "UR%d write-only register 0x%03x reads 0%s", wid, ur_write_only[i], when);
    }
}

/* Every System Register but Controller Reset reads 0. */
static void expect_sr_zero(DN2 *d, const char *when)
{
    size_t i;

    for (i = 0; i < 16; i++) {
        if (i * 0x100 != DN2_SR_CTL_RESET) {
            EXPECT_HEX(dn2q_sr_rd(d, i * 0x100), 0, "System Register 0x%03zx %s",
                       i * 0x100, when);
        }
    }
}

static void test_reset_values(void)
{
    QTestState *qts = dn2q_vm_start("q35", "-device dimmnet2,id=dn");
    DN2 d;
    size_t i;
    int wid;

    dn2q_open(&d, qts, DN2_DEFAULT_BASE0);
    for (wid = 0; wid < 2; wid++) {
        EXPECT_HEX(dn2q_cs(&d, wid), DN2_CS_STATUS_EMPTY,
                   "UR%d Controller Status at reset (Table A.1: only bit 4)", wid);
        EXPECT_HEX(dn2q_pc(&d, wid), 0, "UR%d Primitive Counter at reset", wid);
        EXPECT_HEX(dn2q_pwf(&d, wid), DN2_PWF_ALL, "UR%d PW Flag at reset", wid);
        EXPECT_HEX(dn2q_ur_rd(&d, wid, DN2_UR_PKT_COUNTER), 0, "UR%d Packet Counter", wid);
        EXPECT_HEX(dn2q_ur_rd(&d, wid, DN2_UR_LHB_ADDR), 0, "UR%d LHB Next Write Address", wid);
        EXPECT_HEX(dn2q_ur_rd(&d, wid, DN2_UR_MODULE_STATE), 0, "UR%d Module State idle", wid);
        EXPECT_HEX(dn2q_ur_rd(&d, wid, DN2_UR_STATUS_ADDR), 0, "UR%d Status Next Write Address",
                   wid);
        expect_write_only_zero(&d, wid, " (choice #3)");
        for (i = 0; i < G_N_ELEMENTS(ur_holes); i++) {
            EXPECT_HEX(dn2q_ur_rd(&d, wid, ur_holes[i]), 0, "UR%d unused offset 0x%03x", wid,
                       ur_holes[i]);
        }
        /* aligned 32-bit reads return one half (choice #4) */
        EXPECT_HEX(qtest_readl(qts, dn2q_ur_addr(&d, wid, DN2_UR_CTL_STATUS)),
                   DN2_CS_STATUS_EMPTY, "UR%d 32-bit read of Controller Status", wid);
        EXPECT_HEX(qtest_readl(qts, dn2q_ur_addr(&d, wid, DN2_UR_CTL_STATUS + 4)), 0,
                   "UR%d 32-bit read of Controller Status high half", wid);
        EXPECT_HEX(qtest_readl(qts, dn2q_ur_addr(&d, wid, DN2_UR_PW_FLAG)), 0xffff,
                   "UR%d 32-bit read of PW Flag", wid);
        EXPECT_HEX(qtest_readl(qts, dn2q_ur_addr(&d, wid, DN2_UR_PW_FLAG + 4)), 0,
                   "UR%d 32-bit read of PW Flag high half", wid);
    }
    /* beyond the two UR pages */
    EXPECT_HEX(qtest_readq(qts, d.base + DN2_UR_BASE + 2 * DN2_UR_PAGE + DN2_UR_CTL_STATUS),
               0, "third UR page (no WID 2)");
    EXPECT_HEX(qtest_readq(qts, d.base + DN2_UR_BASE + 0xf200), 0, "UR region +0xf200");
    /* System Register: every offset but Controller Reset reads 0 at reset;
     * SMA LID reads 0 (no subnet manager, link down) */
    expect_sr_zero(&d, "at reset");
    EXPECT_HEX(dn2q_sr_rd(&d, 0x008), 0, "System Register 0x008");
    EXPECT_HEX(dn2q_sr_rd(&d, 0xff8), 0, "System Register 0xff8");

    /* write-only registers still read 0 after being written */
    for (wid = 0; wid < 2; wid++) {
        dn2q_ur_wr(&d, wid, DN2_UR_CMD0_UPPER, 0x1122334455667788ULL);
        dn2q_ur_wr(&d, wid, DN2_UR_CMD1_UPPER, 0x8877665544332211ULL);
        dn2q_ur_wr(&d, wid, DN2_UR_CMD_EX, 0xffffffffffffffffULL);
        dn2q_ur_wr(&d, wid, DN2_UR_IPUSH_AREA_SIZE, 0xffff);
        dn2q_ur_wr(&d, wid, DN2_UR_STATUS_INIT, 0x100);
        dn2q_ur_wr(&d, wid, DN2_UR_STATUS_SIZE, 0x08);
        dn2q_ur_wr(&d, wid, DN2_UR_CMD_EX_FLAG, 1);
        expect_write_only_zero(&d, wid, " after a write");
        /* read-only registers ignore writes */
        dn2q_ur_wr(&d, wid, DN2_UR_CTL_STATUS, ~0ULL);
        dn2q_ur_wr(&d, wid, DN2_UR_PW_FLAG, 0);
        dn2q_ur_wr(&d, wid, DN2_UR_MODULE_STATE, ~0ULL);
        EXPECT_HEX(dn2q_cs(&d, wid), DN2_CS_STATUS_EMPTY, "UR%d Controller Status after writes",
                   wid);
        EXPECT_HEX(dn2q_pwf(&d, wid), DN2_PWF_ALL, "UR%d PW Flag ignores writes", wid);
        EXPECT_HEX(dn2q_mstate(&d), 0, "Module State ignores writes");
    }
    dn2q_sr_wr(&d, DN2_SR_SDIMM_CAPACITY, 0x01);
    dn2q_sr_wr(&d, DN2_SR_MTU, 0x08);
    dn2q_sr_wr(&d, DN2_SR_LID, 0x0012);
    dn2q_sr_wr(&d, DN2_SR_PGID0, 0x12);
    dn2q_sr_wr(&d, DN2_SR_PGID1, 0x34);
    dn2q_sr_wr(&d, DN2_SR_AMT, dn2_amt_encode(0x100, 1, 0x0012));
    dn2q_sr_wr(&d, DN2_SR_SMA, 1);             /* SMA software reset */
    expect_sr_zero(&d, "reads 0 after writes");
    EXPECT_HEX(dn2q_cs(&d, 0) & DN2_CS_SDIMM_READY, 0, "no SO-DIMM Init written yet");
    EXPECT_HEX(dn2q_qom_u64(qts, "dn", "stat-bad-access"), 0, "stat-bad-access");
    EXPECT_HEX(dn2q_qom_u64(qts, "dn", "stat-requests"), 0, "stat-requests (no doorbell)");
    qtest_quit(qts);
}

/* Status ring / LH ring pointers, Status Area Size decoding, full/empty. */
static void test_ring_pointers(void)
{
    QTestState *qts = dn2q_vm_start("q35", "-device dimmnet2,id=dn");
    DN2 d;
    int k;
    static const uint64_t bad_sizes[] = { 0x00, 0x03, 0x7f, 0x80, 0x11, 0x60 };

    dn2q_open(&d, qts, DN2_DEFAULT_BASE0);

    /* LH Buffer: write = Next Read (head), read = Next Write (tail) */
    dn2q_ur_wr(&d, 0, DN2_UR_LHB_ADDR, 0x7c0);
    EXPECT_HEX(dn2q_ur_rd(&d, 0, DN2_UR_LHB_ADDR), 0, "LHB address reads the tail, not the head");
    dn2q_ur_wr(&d, 1, DN2_UR_LHB_ADDR, 0x040);
    EXPECT_HEX(dn2q_ur_rd(&d, 1, DN2_UR_LHB_ADDR), 0, "UR1 LHB address reads the tail");

    /* Status Initial Address write resets head and tail (choice #25) */
    dn2q_ur_wr(&d, 0, DN2_UR_STATUS_INIT, 0x1230);
    EXPECT_HEX(dn2q_ur_rd(&d, 0, DN2_UR_STATUS_ADDR), 0x1230, "tail = Status Initial Address");
    EXPECT_HEX(dn2q_cs(&d, 0) & (DN2_CS_STATUS_FULL | DN2_CS_STATUS_EMPTY), DN2_CS_STATUS_EMPTY,
               "empty ring after Status Initial Address");
    /* head one record ahead of the tail: one slot left = full (choice #24) */
    dn2q_ur_wr(&d, 0, DN2_UR_STATUS_ADDR, 0x1240);
    EXPECT_HEX(dn2q_ur_rd(&d, 0, DN2_UR_STATUS_ADDR), 0x1230,
               "head write does not move the tail");
    EXPECT_HEX(dn2q_cs(&d, 0) & (DN2_CS_STATUS_FULL | DN2_CS_STATUS_EMPTY), DN2_CS_STATUS_FULL,
               "ring with one free slot is full (bit 3), not empty");
    EXPECT_HEX(dn2q_cs(&d, 1), DN2_CS_STATUS_EMPTY, "WID 1's ring is independent");
    dn2q_ur_wr(&d, 0, DN2_UR_STATUS_ADDR, 0x1230);
    EXPECT_HEX(dn2q_cs(&d, 0) & (DN2_CS_STATUS_FULL | DN2_CS_STATUS_EMPTY), DN2_CS_STATUS_EMPTY,
               "head == tail: empty");
    dn2q_ur_wr(&d, 0, DN2_UR_STATUS_ADDR, 0x1250);
    EXPECT_HEX(dn2q_cs(&d, 0) & (DN2_CS_STATUS_FULL | DN2_CS_STATUS_EMPTY), 0,
               "two free slots: neither full nor empty");
    /* re-writing the initial address resets the head too */
    dn2q_ur_wr(&d, 0, DN2_UR_STATUS_ADDR, 0x1240);
    dn2q_ur_wr(&d, 0, DN2_UR_STATUS_INIT, 0x2000);
    EXPECT_HEX(dn2q_ur_rd(&d, 0, DN2_UR_STATUS_ADDR), 0x2000, "tail after a new initial address");
    EXPECT_HEX(dn2q_cs(&d, 0) & (DN2_CS_STATUS_FULL | DN2_CS_STATUS_EMPTY), DN2_CS_STATUS_EMPTY,
               "head reset by Status Initial Address");
    /* Status Area Size write resets head and tail (choice #25) */
    dn2q_ur_wr(&d, 0, DN2_UR_STATUS_ADDR, 0x2010);
    dn2q_ur_wr(&d, 0, DN2_UR_STATUS_SIZE, 0x10);
    EXPECT_HEX(dn2q_ur_rd(&d, 0, DN2_UR_STATUS_ADDR), 0x2000, "tail after Status Area Size");
    EXPECT_HEX(dn2q_cs(&d, 0) & (DN2_CS_STATUS_FULL | DN2_CS_STATUS_EMPTY), DN2_CS_STATUS_EMPTY,
               "head reset by Status Area Size");
    /* one-hot sizes (Table A.5): last slot of the ring = one record used */
    for (k = 0; k < 7; k++) {
        uint32_t size = 64u << k;
        dn2q_ur_wr(&d, 0, DN2_UR_STATUS_SIZE, 1u << k);
        EXPECT_HEX(dn2q_cs(&d, 0) & (DN2_CS_STATUS_FULL | DN2_CS_STATUS_EMPTY),
                   DN2_CS_STATUS_EMPTY, "size %u: empty after the size write", size);
        dn2q_ur_wr(&d, 0, DN2_UR_STATUS_ADDR, 0x2000 + size - 16);
        EXPECT_HEX(dn2q_cs(&d, 0) & (DN2_CS_STATUS_FULL | DN2_CS_STATUS_EMPTY), 0,
                   "size %u: head at the last record of the ring: one used", size);
        dn2q_ur_wr(&d, 0, DN2_UR_STATUS_ADDR, 0x2010);
        EXPECT_HEX(dn2q_cs(&d, 0) & (DN2_CS_STATUS_FULL | DN2_CS_STATUS_EMPTY),
                   DN2_CS_STATUS_FULL, "size %u: head one record ahead: full", size);
    }
    /* anything but a single bit of [6:0] selects 1024 */
    for (k = 0; k < (int)G_N_ELEMENTS(bad_sizes); k++) {
        dn2q_ur_wr(&d, 0, DN2_UR_STATUS_SIZE, bad_sizes[k]);
        dn2q_ur_wr(&d, 0, DN2_UR_STATUS_ADDR, 0x2000 + 1024 - 16);
        EXPECT_HEX(dn2q_cs(&d, 0) & (DN2_CS_STATUS_FULL | DN2_CS_STATUS_EMPTY), 0,
                   "size register 0x%" PRIx64 " = default 1024: last record", bad_sizes[k]);
        dn2q_ur_wr(&d, 0, DN2_UR_STATUS_ADDR, 0x2010);
        EXPECT_HEX(dn2q_cs(&d, 0) & (DN2_CS_STATUS_FULL | DN2_CS_STATUS_EMPTY),
                   DN2_CS_STATUS_FULL, "size register 0x%" PRIx64 ": full", bad_sizes[k]);
    }
    /* Status Initial Address is a 15-bit field */
    dn2q_ur_wr(&d, 0, DN2_UR_STATUS_INIT, 0xffffffff00012340ULL);
    EXPECT_HEX(dn2q_ur_rd(&d, 0, DN2_UR_STATUS_ADDR), 0x2340, "15-bit Status Initial Address");
    dn2q_ur_wr(&d, 1, DN2_UR_STATUS_INIT, 0x7ff0);
    EXPECT_HEX(dn2q_ur_rd(&d, 1, DN2_UR_STATUS_ADDR), 0x7ff0, "UR1 Status Initial Address");
    EXPECT_HEX(dn2q_ur_rd(&d, 0, DN2_UR_STATUS_ADDR), 0x2340, "UR0 unaffected by UR1");
    /* Packet Counter reset: any write, reads 0 */
    dn2q_ur_wr(&d, 0, DN2_UR_PKT_COUNTER, 0x1234);
    EXPECT_HEX(dn2q_ur_rd(&d, 0, DN2_UR_PKT_COUNTER), 0, "Packet Counter after reset write");
    qtest_quit(qts);
}

/* Bad access sizes, read-only buffers, RAM buffers. */
static void test_access_rules(void)
{
    /* read-mirror=off: every read reaches the device (choice #4) */
    QTestState *qts = dn2q_vm_start("q35", "-device dimmnet2,id=dn,read-mirror=off");
    DN2 d;
    uint64_t bad;
    int wid;
    g_autofree uint8_t *buf = g_malloc(DN2_LLCM_AREA);
    g_autofree uint8_t *got = g_malloc(DN2_LLCM_AREA);
    g_autofree uint8_t *zero = g_malloc0(DN2_LLCM_AREA);
    uint8_t pwdata[DN2_WIN_SIZE], pwgot[DN2_WIN_SIZE];

    dn2q_open(&d, qts, DN2_DEFAULT_BASE0);
    bad = dn2q_qom_u64(qts, "dn", "stat-bad-access");
    EXPECT_HEX(bad, 0, "stat-bad-access at start");

    EXPECT_HEX(qtest_readb(qts, dn2q_ur_addr(&d, 0, DN2_UR_CTL_STATUS)), 0,
               "1-byte read ignored");
    EXPECT_HEX(dn2q_qom_u64(qts, "dn", "stat-bad-access"), bad + 1, "1-byte read counted");
    EXPECT_HEX(qtest_readw(qts, dn2q_ur_addr(&d, 0, DN2_UR_PW_FLAG)), 0, "2-byte read ignored");
    EXPECT_HEX(dn2q_qom_u64(qts, "dn", "stat-bad-access"), bad + 2, "2-byte read counted");
    EXPECT_HEX(qtest_readl(qts, dn2q_ur_addr(&d, 0, DN2_UR_CTL_STATUS)), DN2_CS_STATUS_EMPTY,
               "aligned 4-byte read served");
    EXPECT_HEX(dn2q_qom_u64(qts, "dn", "stat-bad-access"), bad + 2, "4-byte read not counted");
    qtest_writeb(qts, d.base + DN2_SR_BASE + DN2_SR_SDIMM_INIT, 1);
    EXPECT_HEX(dn2q_qom_u64(qts, "dn", "stat-bad-access"), bad + 3, "1-byte write counted");
    qtest_writew(qts, d.base + DN2_SR_BASE + DN2_SR_SDIMM_INIT, 1);
    EXPECT_HEX(dn2q_qom_u64(qts, "dn", "stat-bad-access"), bad + 4, "2-byte write counted");
    qtest_writel(qts, d.base + DN2_SR_BASE + DN2_SR_SDIMM_INIT, 1);
    EXPECT_HEX(dn2q_qom_u64(qts, "dn", "stat-bad-access"), bad + 5, "4-byte write counted");
    EXPECT_HEX(dn2q_cs(&d, 0) & DN2_CS_SDIMM_READY, 0,
               "1/2/4-byte writes of SO-DIMM Init are ignored (choice #4)");
    qtest_writel(qts, dn2q_ur_addr(&d, 0, DN2_UR_CMD0_LOWER),
                 (uint32_t)dn2_req_lower(DN2_OP_VS, 0, 0, 0, 0, 0, 0));
    EXPECT_HEX(dn2q_qom_u64(qts, "dn", "stat-bad-access"), bad + 6, "4-byte doorbell counted");
    EXPECT_HEX(dn2q_qom_u64(qts, "dn", "stat-requests"), 0,
               "a 4-byte Lower write is no doorbell");
    /* misaligned 64-bit write */
    qtest_writeq(qts, d.base + DN2_SR_BASE + DN2_SR_SDIMM_INIT + 4, 0x0000000100000001ULL);
    EXPECT_TRUE(dn2q_qom_u64(qts, "dn", "stat-bad-access") >= bad + 7,
                "misaligned 8-byte write counted as a bad access");
    EXPECT_HEX(dn2q_cs(&d, 0) & DN2_CS_SDIMM_READY, 0, "misaligned 8-byte write ignored");
    bad = dn2q_qom_u64(qts, "dn", "stat-bad-access");
    dn2q_sr_wr(&d, DN2_SR_SDIMM_INIT, 1);
    EXPECT_HEX(dn2q_cs(&d, 0) & DN2_CS_SDIMM_READY, DN2_CS_SDIMM_READY, "8-byte write works");
    EXPECT_HEX(dn2q_qom_u64(qts, "dn", "stat-bad-access"), bad, "8-byte access not counted");

    /* Write Window and LLCM are RAM for the host (choice #5) */
    for (wid = 0; wid < 2; wid++) {
        dn2q_pattern(buf, DN2_WIN_AREA, 100 + wid);
        qtest_memwrite(qts, dn2q_ww_addr(&d, wid, 0), buf, DN2_WIN_AREA);
        qtest_memread(qts, dn2q_ww_addr(&d, wid, 0), got, DN2_WIN_AREA);
        dn2q_mem_eq("Write Window reads back what was written", got, buf, DN2_WIN_AREA, 0);
        dn2q_pattern(buf, DN2_LLCM_AREA, 200 + wid);
        qtest_memwrite(qts, dn2q_llcm_addr(&d, wid, 0), buf, DN2_LLCM_AREA);
        qtest_memread(qts, dn2q_llcm_addr(&d, wid, 0), got, DN2_LLCM_AREA);
        dn2q_mem_eq("LLCM reads back what was written", got, buf, DN2_LLCM_AREA, 0);
    }
    qtest_writeb(qts, dn2q_ww_addr(&d, 1, 0x7ff), 0x5a);
    EXPECT_HEX(qtest_readb(qts, dn2q_ww_addr(&d, 1, 0x7ff)), 0x5a, "byte access to WW");
    qtest_writel(qts, dn2q_llcm_addr(&d, 0, 0x7ffc), 0xa5a5c3c3);
    EXPECT_HEX(qtest_readl(qts, dn2q_llcm_addr(&d, 0, 0x7ffc)), 0xa5a5c3c3,
               "long access to LLCM");

    /* Prefetch Window and LH Buffer: host writes are discarded (choice #6) */
    for (wid = 0; wid < 2; wid++) {
        dn2q_pattern(buf, DN2_LHB_AREA, 300 + wid);
        qtest_memwrite(qts, dn2q_pw_addr(&d, wid, 0), buf, DN2_WIN_AREA);
        qtest_memread(qts, dn2q_pw_addr(&d, wid, 0), got, DN2_WIN_AREA);
        dn2q_mem_eq("Prefetch Window ignores host writes", got, zero, DN2_WIN_AREA, 0);
        qtest_memwrite(qts, dn2q_lhb_addr(&d, wid, 0), buf, DN2_LHB_AREA);
        qtest_memread(qts, dn2q_lhb_addr(&d, wid, 0), got, DN2_LHB_AREA);
        dn2q_mem_eq("LH Buffer ignores host writes", got, zero, DN2_LHB_AREA, 0);
        qtest_writeq(qts, dn2q_pw_addr(&d, wid, 8), ~0ULL);
        EXPECT_HEX(qtest_readq(qts, dn2q_pw_addr(&d, wid, 8)), 0, "8-byte PW write discarded");
        qtest_writeq(qts, dn2q_lhb_addr(&d, wid, 0xff8), ~0ULL);
        EXPECT_HEX(qtest_readq(qts, dn2q_lhb_addr(&d, wid, 0xff8)), 0, "LHB write discarded");
    }
    /* ... also over data the NIC put there */
    dn2q_pattern(pwdata, sizeof(pwdata), 7);
    qtest_memwrite(qts, dn2q_ww_addr(&d, 0, 0), pwdata, sizeof(pwdata));
    vs(&d, 0, 0, 0x1000, DN2_WIN_SIZE);
    vl(&d, 0, 0x1000, DN2_WIN_SIZE, DN2_WIN_SIZE);
    dn2q_pattern(buf, DN2_WIN_SIZE, 8);
    qtest_memwrite(qts, dn2q_pw_addr(&d, 0, DN2_WIN_SIZE), buf, DN2_WIN_SIZE);
    qtest_writeb(qts, dn2q_pw_addr(&d, 0, DN2_WIN_SIZE + 3), 0);
    qtest_memread(qts, dn2q_pw_addr(&d, 0, DN2_WIN_SIZE), pwgot, sizeof(pwgot));
    dn2q_mem_eq("PW data from a VL survives host writes", pwgot, pwdata, sizeof(pwgot), 0);
    EXPECT_HEX(qtest_readb(qts, dn2q_pw_addr(&d, 0, DN2_WIN_SIZE + 1)), pwdata[1],
               "1-byte PW read (a buffer, not a register)");
    qtest_quit(qts);
}

/* ------------------------------------------------------------------ */
/* Bring-up                                                            */
/* ------------------------------------------------------------------ */

/* A board before SO-DIMM Init; with data, a pattern written into WW#0 */
static QTestState *bringup_open(DN2 *d, uint8_t *data, size_t len)
{
    QTestState *qts = dn2q_vm_start("q35", "-device dimmnet2,id=dn");

    dn2q_open(d, qts, DN2_DEFAULT_BASE0);
    if (data) {
        dn2q_pattern(data, len, 11);
        qtest_memwrite(qts, dn2q_ww_addr(d, 0, 0), data, len);
    }
    return qts;
}

static void test_refused_before_init(void)
{
    DN2 d;
    uint8_t data[256];
    QTestState *qts = bringup_open(&d, data, sizeof(data));

    /* before SO-DIMM Init: refused, extension bit 20, counter unchanged */
    expect_refused(&d, 0, dn2_req_upper(0, 0x100),
                   dn2_req_lower(DN2_OP_VS, 0, 0, 0, 0, 0, sizeof(data)),
                   "VS before SO-DIMM Init refused");
    EXPECT_HEX(dn2q_cs(&d, 0) & DN2_CS_WW_DONE(0), 0, "refused VS does not report WW#0 done");
    EXPECT_HEX(dn2q_cs(&d, 1) & DN2_CS_REQ_ERROR, 0, "bit 20 is per WID");
    pc_reset(&d, 0);
    EXPECT_HEX(dn2q_cs(&d, 0), DN2_CS_STATUS_EMPTY, "Primitive Counter reset clears bit 20");
    expect_refused(&d, 0, dn2_req_upper(0x100, 0),
                   dn2_req_lower(DN2_OP_VL, 0, 0, 0, 0, 0, 64), "VL before Init refused");
    pc_reset(&d, 0);
    expect_refused(&d, 1, dn2_req_upper(0, 0),
                   dn2_req_lower(DN2_OP_VSS, 2, 4, 0, 0, 0, 16), "WID 1 VSS before Init");
    pc_reset(&d, 1);
    EXPECT_HEX(dn2q_mstate(&d), 0, "controller idle after refusals");
    EXPECT_HEX(dn2q_qom_u64(qts, "dn", "stat-refused"), 3, "stat-refused");
    qtest_quit(qts);
}

static void test_init_needs_bit0(void)
{
    DN2 d;
    QTestState *qts = bringup_open(&d, NULL, 0);

    /* SO-DIMM Init needs bit 0 */
    dn2q_sr_wr(&d, DN2_SR_SDIMM_CAPACITY, 0x01);
    dn2q_sr_wr(&d, DN2_SR_SDIMM_INIT, 0);
    dn2q_sr_wr(&d, DN2_SR_SDIMM_INIT, 2);
    EXPECT_HEX(dn2q_cs(&d, 0) & DN2_CS_SDIMM_READY, 0, "Init with bit 0 clear does nothing");
    dn2q_sr_wr(&d, DN2_SR_SDIMM_INIT, 1);
    dn2q_poll_ur(&d, 0, DN2_UR_CTL_STATUS, DN2_CS_SDIMM_READY, DN2_CS_SDIMM_READY, DN2Q_MAX_POLL,
                 "Controller Status bit 1 after Capacity + Init");
    EXPECT_HEX(dn2q_cs(&d, 0), DN2_CS_SDIMM_READY | DN2_CS_STATUS_EMPTY, "UR0 status after Init");
    EXPECT_HEX(dn2q_cs(&d, 1), DN2_CS_SDIMM_READY | DN2_CS_STATUS_EMPTY,
               "UR1 also sees SO-DIMM ready");
    qtest_quit(qts);
}

static void test_requests_after_refusal(void)
{
    DN2 d;
    uint8_t data[256], got[256];
    QTestState *qts = bringup_open(&d, data, sizeof(data));

    /* the VS refused before Init (checked by bringup/refused-before-init) */
    dn2q_issue(&d, 0, 0, dn2_req_upper(0, 0x100),
               dn2_req_lower(DN2_OP_VS, 0, 0, 0, 0, 0, sizeof(data)));
    dn2q_poll_ur(&d, 0, DN2_UR_CTL_STATUS, DN2_CS_REQ_ERROR, DN2_CS_REQ_ERROR, DN2Q_MAX_POLL,
                 "VS before SO-DIMM Init refused");
    pc_reset(&d, 0);
    dn2q_board_init(&d, 0x01);

    /* now the same requests work */
    EXPECT_HEX(vs(&d, 0, 0, 0x100, sizeof(data)),
               DN2_CS_SDIMM_READY | DN2_CS_STATUS_EMPTY | DN2_CS_WW_DONE(0),
               "Controller Status after VS");
    vl(&d, 0, 0x100, 0, sizeof(data));
    qtest_memread(qts, dn2q_pw_addr(&d, 0, 0), got, sizeof(got));
    dn2q_mem_eq("VS/VL round trip after Init", got, data, sizeof(data), 0);
    EXPECT_HEX(dn2q_pc(&d, 0), (1ULL << 10) | (1ULL << 20), "Primitive Counter: VL 1, VS 1");
    EXPECT_HEX(dn2q_cs(&d, 0) & DN2_CS_REQ_ERROR, 0, "no request error");
    qtest_quit(qts);
}

/* The thesis's dsh example: prim VS dt=? it=0 size=0x200 src=0x400 dst=0x600 */
static void test_dsh_example(void)
{
    QTestState *qts = dn2q_vm_start("q35", "-device dimmnet2,id=dn");
    DN2 d;
    const uint64_t upper = dn2_req_upper(0x400, 0x600);
    const uint64_t lower = dn2_req_lower(DN2_OP_VS, 0, 0, 0, 0, 0, 0x200);
    uint8_t a[512], b[512];

    EXPECT_HEX(upper, 0x0000060000000400ULL, "dsh Upper word");
    EXPECT_HEX(lower, 0x0000020000000008ULL, "dsh Lower word");
    dn2q_open(&d, qts, DN2_DEFAULT_BASE0);
    dn2q_board_init(&d, 0x01);
    dn2q_pattern(a, sizeof(a), 21);
    qtest_memwrite(qts, dn2q_ww_addr(&d, 0, 0x400), a, sizeof(a));
    EXPECT_HEX(run(&d, 0, DN2_PC_VS, upper, lower), 0x812,
               "Controller Status after the dsh VS from WW#2 (bits 1, 4, 11)");
    EXPECT_HEX(dn2q_pc(&d, 0), 1ULL << 20, "Primitive Counter after one VS");
    sd_check(&d, 0, 0x600, a, sizeof(a), "dsh VS data");
    EXPECT_HEX(dn2q_cs(&d, 0), 0x812, "VL does not touch the per-window write status");

    /* the thesis's dump read 0x832: WW#0 had completed a write earlier */
    dn2q_sr_rd(&d, DN2_SR_CTL_RESET);
    dn2q_board_init(&d, 0x01);
    EXPECT_HEX(dn2q_cs(&d, 0), 0x12, "status after Controller Reset + Init");
    dn2q_pattern(b, sizeof(b), 22);
    qtest_memwrite(qts, dn2q_ww_addr(&d, 0, 0), b, sizeof(b));
    EXPECT_HEX(vs(&d, 0, 0, 0x2000, 0x200), 0x32, "after VS from WW#0");
    EXPECT_HEX(run(&d, 0, DN2_PC_VS, upper, lower), 0x832,
               "dsh dump value 0x832 (ready, empty, WW#0 done, WW#2 done)");
    EXPECT_HEX(dn2q_pc(&d, 0), 2ULL << 20, "two VS completed");
    sd_check(&d, 0, 0x2000, b, sizeof(b), "VS from WW#0");
    sd_check(&d, 0, 0x600, a, sizeof(a), "dsh VS data kept across Controller Reset");
    qtest_quit(qts);
}

/* ------------------------------------------------------------------ */
/* Local primitives                                                    */
/* ------------------------------------------------------------------ */

#define CS_BASE (DN2_CS_SDIMM_READY | DN2_CS_STATUS_EMPTY)

/*
 * The contiguous VS and VL, one behaviour per test path.  Each path starts
 * its own board: WID 0 with a pattern in the first CONTIG_REG bytes of its
 * SO-DIMM, and model, the image those bytes should have.
 */
enum { CONTIG_REG = 0x4000 };

static const struct { uint32_t src, dst, size; } contig_vsc[] = {
    { 0x000, 0x0100, 1 }, { 0x003, 0x0205, 7 }, { 0x200, 0x0333, 100 },
    { 0x401, 0x0800, 511 }, { 0x600, 0x1000, 512 }, { 0x7ff, 0x1ffd, 1 },
    { 0x100, 0x2000, 0 }, { 0x208, 0x3ff8, 8 },
};
static const struct { uint32_t src, dst, size; } contig_vlc[] = {
    { 0x0100, 0x000, 1 }, { 0x0205, 0x003, 7 }, { 0x1000, 0x200, 512 },
    { 0x0333, 0x5ff, 1 }, { 0x0800, 0x7c0, 64 }, { 0x2000, 0x400, 0 },
    { 0x3fff, 0x601, 1 },
};

static QTestState *contig_start(DN2 *d, uint8_t *model)
{
    QTestState *qts = dn2q_vm_start("q35", "-device dimmnet2,id=dn");

    dn2q_open(d, qts, DN2_DEFAULT_BASE0);
    dn2q_board_init(d, 0x01);
    dn2q_pattern(model, CONTIG_REG, 31);
    sd_write(d, 0, 0, model, CONTIG_REG);
    return qts;
}

/* The contiguous VS requests of contig_vsc, each from a fresh WW image:
 * only the source window's done bit; their bytes into model. */
static void contig_vs_all(DN2 *d, uint8_t *model)
{
    uint8_t ww[DN2_WIN_AREA];
    size_t i;
    uint64_t st;

    for (i = 0; i < G_N_ELEMENTS(contig_vsc); i++) {
        unsigned n = contig_vsc[i].src / DN2_WIN_SIZE;
        dn2q_pattern(ww, sizeof(ww), 40 + i);
        qtest_memwrite(d->qts, dn2q_ww_addr(d, 0, 0), ww, sizeof(ww));
        st = vs(d, 0, contig_vsc[i].src, contig_vsc[i].dst, contig_vsc[i].size);
        EXPECT_HEX(st & (DN2_CS_WW_MASK(n) | DN2_CS_REQ_ERROR), DN2_CS_WW_DONE(n),
                   "VS #%zu src 0x%x size %u: only WW#%u done", i, contig_vsc[i].src,
                   contig_vsc[i].size, n);
        memcpy(model + contig_vsc[i].dst, ww + contig_vsc[i].src, contig_vsc[i].size);
    }
}

/* VS requests running past the end of WW#0 and of WW#1 (ww: the image
 * written); the Controller Status after the second. */
static uint64_t contig_vs_clipped(DN2 *d, uint8_t *model, uint8_t *ww)
{
    uint64_t st;

    dn2q_pattern(ww, DN2_WIN_AREA, 50);
    qtest_memwrite(d->qts, dn2q_ww_addr(d, 0, 0), ww, DN2_WIN_AREA);
    st = vs(d, 0, 0x1f0, 0x3000, 0x20);
    EXPECT_HEX(st & DN2_CS_WW_MASK(0), DN2_CS_WW_DONE(0) | DN2_CS_WW_SRC_OVF(0),
               "VS past the end of WW#0: bits 5 and 6");
    memcpy(model + 0x3000, ww + 0x1f0, 16);
    st = vs(d, 0, 0x300, 0x3100, 0x200);
    memcpy(model + 0x3100, ww + 0x300, 0x100);
    return st;
}

/* A VS from WW#2 running past the end of WID 0's SO-DIMM area (256 MiB per
 * process, choice #9), with a pattern in WID 1's area (tmp) and the WW
 * image written (ww); the Controller Status after it. */
static uint64_t contig_vs_area_end(DN2 *d, uint8_t *ww, uint8_t *tmp, size_t ntmp)
{
    dn2q_pattern(tmp, ntmp, 51);
    sd_write(d, 1, 0, tmp, ntmp);
    dn2q_pattern(ww, DN2_WIN_AREA, 52);
    qtest_memwrite(d->qts, dn2q_ww_addr(d, 0, 0), ww, DN2_WIN_AREA);
    return vs(d, 0, 0x400, AREA_DEFAULT - 8, 16);
}

static void test_contiguous_vs(void)
{
    g_autofree uint8_t *model = g_malloc(CONTIG_REG);
    DN2 d;
    QTestState *qts = contig_start(&d, model);

    contig_vs_all(&d, model);
    sd_check(&d, 0, 0, model, CONTIG_REG, "contiguous VS results");
    qtest_quit(qts);
}

static void test_contiguous_vl(void)
{
    g_autofree uint8_t *model = g_malloc(CONTIG_REG);
    uint8_t pwm[DN2_WIN_AREA];
    DN2 d;
    QTestState *qts = contig_start(&d, model);
    size_t i;
    uint64_t st;

    contig_vs_all(&d, model);
    qtest_memread(qts, dn2q_pw_addr(&d, 0, 0), pwm, sizeof(pwm));
    for (i = 0; i < G_N_ELEMENTS(contig_vlc); i++) {
        st = vl(&d, 0, contig_vlc[i].src, contig_vlc[i].dst, contig_vlc[i].size);
        memcpy(pwm + contig_vlc[i].dst, model + contig_vlc[i].src, contig_vlc[i].size);
        dn2q_pw_expect(&d, 0, pwm, "contiguous VL into the Prefetch Window");
        EXPECT_HEX(dn2q_pwf(&d, 0), DN2_PWF_ALL, "PW flags all 1 after VL #%zu", i);
        EXPECT_HEX(st & DN2_CS_REQ_ERROR, 0, "VL #%zu: no request error", i);
    }
    qtest_quit(qts);
}

/* contiguous clipping at the window end: bytes, bit 6 of the source window */
static void test_contiguous_vs_window_end(void)
{
    g_autofree uint8_t *model = g_malloc(CONTIG_REG);
    uint8_t ww[DN2_WIN_AREA];
    DN2 d;
    QTestState *qts = contig_start(&d, model);
    uint64_t st = contig_vs_clipped(&d, model, ww);

    EXPECT_HEX(st & DN2_CS_WW_MASK(1), DN2_CS_WW_DONE(1) | DN2_CS_WW_SRC_OVF(1),
               "VS past the end of WW#1: bits 8 and 9");
    EXPECT_HEX(st & DN2_CS_WW_MASK(0), DN2_CS_WW_DONE(0) | DN2_CS_WW_SRC_OVF(0),
               "WW#0 status untouched by a WW#1 request");
    sd_check(&d, 0, 0x3000, model + 0x3000, 0x300, "clipped VS wrote only the window's bytes");
    qtest_quit(qts);
}

/* a new request from WW#0 clears its three bits (choice #13) */
static void test_contiguous_vs_new_request_clears(void)
{
    g_autofree uint8_t *model = g_malloc(CONTIG_REG);
    uint8_t ww[DN2_WIN_AREA];
    DN2 d;
    QTestState *qts = contig_start(&d, model);
    uint64_t st;

    contig_vs_clipped(&d, model, ww);
    st = vs(&d, 0, 0x000, 0x3400, 16);
    memcpy(model + 0x3400, ww, 16);
    EXPECT_HEX(st & DN2_CS_WW_MASK(0), DN2_CS_WW_DONE(0), "WW#0 bits after a clean VS");
    EXPECT_HEX(st & DN2_CS_WW_MASK(1), DN2_CS_WW_DONE(1) | DN2_CS_WW_SRC_OVF(1),
               "WW#1 bits kept");
    EXPECT_HEX(st & DN2_CS_REQ_ERROR, 0, "window clipping is no request error");
    qtest_quit(qts);
}

/* VL clipping at the window end: bytes, the next window untouched */
static void test_contiguous_vl_window_end(void)
{
    g_autofree uint8_t *model = g_malloc(CONTIG_REG);
    uint8_t ww[DN2_WIN_AREA], pwm[DN2_WIN_AREA];
    DN2 d;
    QTestState *qts = contig_start(&d, model);
    uint64_t st;

    contig_vs_clipped(&d, model, ww);
    qtest_memread(qts, dn2q_pw_addr(&d, 0, 0), pwm, sizeof(pwm));
    st = vl(&d, 0, 0x3000, 0x5f0, 0x40);
    memcpy(pwm + 0x5f0, model + 0x3000, 16);
    dn2q_pw_expect(&d, 0, pwm, "VL clipped at the end of PW#2");
    EXPECT_HEX(st & DN2_CS_REQ_ERROR, 0, "VL window clipping is no request error");
    EXPECT_HEX(dn2q_pwf(&d, 0), DN2_PWF_ALL, "PW flags after a clipped VL");
    qtest_quit(qts);
}

/* default SO-DIMM area (256 MiB per process, choice #9): end of area */
static void test_contiguous_vs_area_end(void)
{
    g_autofree uint8_t *model = g_malloc(CONTIG_REG);
    uint8_t ww[DN2_WIN_AREA], tmp[64];
    DN2 d;
    QTestState *qts = contig_start(&d, model);
    uint64_t st = contig_vs_area_end(&d, ww, tmp, sizeof(tmp));

    EXPECT_HEX(st & DN2_CS_WW_MASK(2), DN2_CS_WW_DONE(2) | DN2_CS_WW_DST_OVF(2),
               "VS past the end of the SO-DIMM area: bits 11 and 13");
    sd_check(&d, 0, AREA_DEFAULT - 8, ww + 0x400, 8, "bytes up to the area end");
    sd_check(&d, 1, 0, tmp, sizeof(tmp), "WID 1's area untouched by WID 0's overflow");
    qtest_quit(qts);
}

/* VL reading past the area: part read, rest kept, bit 20 (choice #19) */
static void test_contiguous_vl_area_end(void)
{
    g_autofree uint8_t *model = g_malloc(CONTIG_REG);
    uint8_t ww[DN2_WIN_AREA], pwm[DN2_WIN_AREA], tmp[64];
    DN2 d;
    QTestState *qts = contig_start(&d, model);
    uint64_t st;

    contig_vs_area_end(&d, ww, tmp, sizeof(tmp));
    pc_reset(&d, 0);
    qtest_memread(qts, dn2q_pw_addr(&d, 0, 0), pwm, sizeof(pwm));
    st = vl(&d, 0, AREA_DEFAULT - 8, 0x100, 16);
    memcpy(pwm + 0x100, ww + 0x400, 8);
    dn2q_pw_expect(&d, 0, pwm, "VL past the SO-DIMM area end");
    EXPECT_HEX(st & DN2_CS_REQ_ERROR, DN2_CS_REQ_ERROR, "VL past the area end sets bit 20");
    qtest_quit(qts);
}

/* expected image of a strided store */
static void model_stride(uint8_t *model, uint32_t dst, uint32_t stride, uint32_t esz,
                         unsigned n, const uint8_t *src)
{
    unsigned i;

    for (i = 0; i < n; i++) {
        memcpy(model + (uint32_t)(dst + i * stride), src + i * esz, esz);
    }
}

/* Strided and list primitives: every path starts from a board whose
 * SO-DIMM [0, STR_REG) of WID 0 holds a known pattern (the model) and
 * ends checking the whole region against the model. */
enum { STR_REG = 0x22000, STR_LIST = 0x20000 };
static const unsigned str_iters[8] = { 200, 100, 60, 40, 20, 10, 6, 4 };

typedef struct StrRig {
    QTestState *qts;
    DN2 d;
    uint8_t *model;                 /* SO-DIMM [0, STR_REG) of WID 0 */
    uint8_t ww[DN2_WIN_AREA];       /* what the Write Windows hold */
    uint8_t pwm[DN2_WIN_AREA];      /* what the Prefetch Windows should hold */
} StrRig;

typedef struct StrCase {
    const char *path;
    void (*run)(StrRig *s);
} StrCase;

/* fill the Write Windows with pattern @seed */
static void str_ww(StrRig *s, unsigned seed)
{
    dn2q_pattern(s->ww, sizeof(s->ww), seed);
    qtest_memwrite(s->qts, dn2q_ww_addr(&s->d, 0, 0), s->ww, sizeof(s->ww));
}

/* the offset list at STR_LIST for @it elements of dtype @dt:
 * offsets permuted, element i at perm(i) * (esz + 5) */
static void str_list(StrRig *s, unsigned dt, uint8_t *lbuf)
{
    uint32_t esz = dn2_dtype_bytes(dt), it = str_iters[dt];
    unsigned i;

    for (i = 0; i < it; i++) {
        uint32_t off = ((i * 7) % it) * (esz + 5);
        stl_le_p(lbuf + 4 * i, off);
    }
    sd_write(&s->d, 0, STR_LIST, lbuf, 4 * it);
    memcpy(s->model + STR_LIST, lbuf, 4 * it);
}

/* VSS then VLS back, for every dtype */
static void str_dtypes_strided(StrRig *s)
{
    unsigned dt;
    uint64_t st;

    for (dt = 0; dt < 8 && !s->d.dead; dt++) {
        uint32_t esz = dn2_dtype_bytes(dt), it = str_iters[dt];
        uint32_t stride = 2 * esz + 3, sbase = 0x10000 + dt * 0x1000;

        /* VSS: WW#0 -> SO-DIMM, strided */
        str_ww(s, 70 + dt);
        st = vss(&s->d, 0, 0x000, sbase, dt, it, stride);
        EXPECT_HEX(st & (DN2_CS_WW_MASK(0) | DN2_CS_REQ_ERROR), DN2_CS_WW_DONE(0),
                   "VSS dtype %u: WW#0 done only", dt);
        model_stride(s->model, sbase, stride, esz, it, s->ww);
        sd_check(&s->d, 0, sbase - 16, s->model + sbase - 16, (it - 1) * stride + esz + 32,
                 "VSS result");
        /* VLS: back into PW#1, packed */
        st = vls(&s->d, 0, sbase, 0x200, dt, it, stride);
        memcpy(s->pwm + 0x200, s->ww, it * esz);
        /* sd_check used PW#0: refresh that part of the model */
        qtest_memread(s->qts, dn2q_pw_addr(&s->d, 0, 0), s->pwm, DN2_WIN_SIZE);
        dn2q_pw_expect(&s->d, 0, s->pwm, "VLS packs the elements into PW#1");
        EXPECT_HEX(dn2q_pwf(&s->d, 0), DN2_PWF_ALL, "PW flags after VLS dtype %u", dt);
        EXPECT_HEX(st & DN2_CS_REQ_ERROR, 0, "VLS dtype %u: no error", dt);
    }
}

/* VSI then VLI back through a permuted list, for every dtype */
static void str_dtypes_list(StrRig *s)
{
    uint8_t lbuf[4 * 256];
    unsigned dt, i;
    uint64_t st;

    for (dt = 0; dt < 8 && !s->d.dead; dt++) {
        uint32_t esz = dn2_dtype_bytes(dt), it = str_iters[dt];
        uint32_t lbase = 0x18000 + dt * 0x1000;

        str_list(s, dt, lbuf);
        str_ww(s, 80 + dt);
        st = vsi(&s->d, 0, 0x400, lbase, dt, it, STR_LIST);
        EXPECT_HEX(st & (DN2_CS_WW_MASK(2) | DN2_CS_REQ_ERROR), DN2_CS_WW_DONE(2),
                   "VSI dtype %u: WW#2 done only", dt);
        for (i = 0; i < it; i++) {
            memcpy(s->model + lbase + ldl_le_p(lbuf + 4 * i), s->ww + 0x400 + i * esz, esz);
        }
        sd_check(&s->d, 0, lbase, s->model + lbase, it * (esz + 5) + 16, "VSI result");
        st = vli(&s->d, 0, lbase, 0x400, dt, it, STR_LIST);
        qtest_memread(s->qts, dn2q_pw_addr(&s->d, 0, 0), s->pwm, DN2_WIN_SIZE);
        memcpy(s->pwm + 0x400, s->ww + 0x400, it * esz);
        dn2q_pw_expect(&s->d, 0, s->pwm, "VLI gathers the elements into PW#2");
        EXPECT_HEX(st & DN2_CS_REQ_ERROR, 0, "VLI dtype %u: no error", dt);
    }
}

/* Iteration 0: completes, moves nothing */
static void str_iteration0(StrRig *s)
{
    uint8_t lbuf[4 * 256];
    uint64_t st;

    str_list(s, 7, lbuf);
    str_ww(s, 90);
    st = vss(&s->d, 0, 0x200, 0x0, 2, 0, 4);
    EXPECT_HEX(st & (DN2_CS_WW_MASK(1) | DN2_CS_REQ_ERROR), DN2_CS_WW_DONE(1),
               "VSS with Iteration 0 completes");
    st = vsi(&s->d, 0, 0x200, 0x0, 2, 0, STR_LIST);
    EXPECT_HEX(st & (DN2_CS_WW_MASK(1) | DN2_CS_REQ_ERROR), DN2_CS_WW_DONE(1),
               "VSI with Iteration 0 completes");
    qtest_memread(s->qts, dn2q_pw_addr(&s->d, 0, 0), s->pwm, sizeof(s->pwm));
    vls(&s->d, 0, 0x0, 0x600, 2, 0, 4);
    vli(&s->d, 0, 0x0, 0x600, 2, 0, STR_LIST);
    dn2q_pw_expect(&s->d, 0, s->pwm, "VLS/VLI with Iteration 0 write nothing");
    EXPECT_HEX(dn2q_pwf(&s->d, 0), DN2_PWF_ALL, "PW flags after Iteration 0");
}

/* Iteration 255: one window's worth at most */
static void str_iteration255(StrRig *s)
{
    uint8_t pwgot[DN2_WIN_AREA];
    uint64_t st;

    str_ww(s, 90);
    st = vss(&s->d, 0, 0x200, 0x1000, 0, 255, 2);
    EXPECT_HEX(st & DN2_CS_WW_MASK(1), DN2_CS_WW_DONE(1), "VSS 1 B x 255 fits WW#1");
    model_stride(s->model, 0x1000, 2, 1, 255, s->ww + 0x200);
    st = vss(&s->d, 0, 0x000, 0x2000, 2, 255, 4);
    EXPECT_HEX(st & DN2_CS_WW_MASK(0), DN2_CS_WW_DONE(0) | DN2_CS_WW_SRC_OVF(0),
               "VSS 4 B x 255 from WW#0 start: clipped to 128 elements, bit 6");
    model_stride(s->model, 0x2000, 4, 4, 128, s->ww);
    sd_check(&s->d, 0, 0x1000, s->model + 0x1000, 0x1400, "Iteration 255 stores");
    st = vls(&s->d, 0, 0x1000, 0x000, 1, 255, 2);
    qtest_memread(s->qts, dn2q_pw_addr(&s->d, 0, 0), pwgot, 510);
    dn2q_mem_eq("VLS 2 B x 255 (510 bytes)", pwgot, s->model + 0x1000, 510, 0);
    qtest_memread(s->qts, dn2q_pw_addr(&s->d, 0, 0), s->pwm, sizeof(s->pwm));
    st = vls(&s->d, 0, 0x2000, 0x600, 2, 255, 4);
    memcpy(s->pwm + 0x600, s->model + 0x2000, 512);
    dn2q_pw_expect(&s->d, 0, s->pwm, "VLS 4 B x 255 clipped to one window");
    EXPECT_HEX(st & DN2_CS_REQ_ERROR, 0, "VLS window clipping is no request error");
}

/* whole-element clipping (choice #16, §4.6.4) */
static void str_element_clipping(StrRig *s)
{
    uint8_t lbuf[4 * 256];
    uint64_t st;

    str_list(s, 7, lbuf);
    str_ww(s, 90);
    st = vss(&s->d, 0, 0x1fa, 0x3000, 2, 3, 16);
    EXPECT_HEX(st & DN2_CS_WW_MASK(0), DN2_CS_WW_DONE(0) | DN2_CS_WW_SRC_OVF(0),
               "VSS with 6 bytes of room for 4-byte elements: bit 6");
    model_stride(s->model, 0x3000, 16, 4, 1, s->ww + 0x1fa);
    sd_check(&s->d, 0, 0x3000, s->model + 0x3000, 48, "only the whole element was stored");
    qtest_memread(s->qts, dn2q_pw_addr(&s->d, 0, 0), s->pwm, sizeof(s->pwm));
    st = vls(&s->d, 0, 0x3000, 0x1fc, 3, 2, 8);
    dn2q_pw_expect(&s->d, 0, s->pwm,
                   "VLS with 4 bytes of room for 8-byte elements writes nothing");
    EXPECT_HEX(dn2q_pwf(&s->d, 0), DN2_PWF_ALL, "PW flags after an empty VLS");
    st = vls(&s->d, 0, 0x3000, 0x3f0, 3, 4, 16);
    memcpy(s->pwm + 0x3f0, s->model + 0x3000, 8);
    memcpy(s->pwm + 0x3f8, s->model + 0x3010, 8);
    dn2q_pw_expect(&s->d, 0, s->pwm, "VLS clipped to 2 whole elements");
    EXPECT_HEX(st & DN2_CS_REQ_ERROR, 0, "VLS element clipping is no request error");
    st = vli(&s->d, 0, 0x18000, 0x7fe, 2, 4, STR_LIST);
    dn2q_pw_expect(&s->d, 0, s->pwm,
                   "VLI with 2 bytes of room for 4-byte elements writes nothing");
}

/* negative stride: 32-bit wrap-around (choice #17) */
static void str_negative_stride(StrRig *s)
{
    uint64_t st;

    str_ww(s, 91);
    st = vss(&s->d, 0, 0x600, 0x20c00, 2, 4, (uint32_t)-16);
    EXPECT_HEX(st & DN2_CS_WW_MASK(3), DN2_CS_WW_DONE(3), "VSS with stride -16");
    model_stride(s->model, 0x20c00, (uint32_t)-16, 4, 4, s->ww + 0x600);
    sd_check(&s->d, 0, 0x20b00, s->model + 0x20b00, 0x200, "negative stride store");
    qtest_memread(s->qts, dn2q_pw_addr(&s->d, 0, 0), s->pwm, sizeof(s->pwm));
    vls(&s->d, 0, 0x20c00, 0x300, 2, 4, (uint32_t)-16);
    memcpy(s->pwm + 0x300, s->ww + 0x600, 16);
    dn2q_pw_expect(&s->d, 0, s->pwm, "VLS with stride -16");
}

/* an element outside the area: skipped, bit 7, the others stored */
static void str_element_outside_area(StrRig *s)
{
    uint64_t st;

    str_ww(s, 91);
    st = vss(&s->d, 0, 0x600, 0x20e00, 2, 2, 0x80000000u);
    EXPECT_HEX(st & DN2_CS_WW_MASK(3), DN2_CS_WW_DONE(3) | DN2_CS_WW_DST_OVF(3),
               "VSS element beyond the SO-DIMM area: bit 16");
    memcpy(s->model + 0x20e00, s->ww + 0x600, 4);
    sd_check(&s->d, 0, 0x20e00, s->model + 0x20e00, 16, "in-area element stored");
}

static const StrCase str_cases[] = {
    { "/dimmnet2/prim/strided-list/strided-dtypes", str_dtypes_strided },
    { "/dimmnet2/prim/strided-list/list-dtypes", str_dtypes_list },
    { "/dimmnet2/prim/strided-list/iteration-0", str_iteration0 },
    { "/dimmnet2/prim/strided-list/iteration-255", str_iteration255 },
    { "/dimmnet2/prim/strided-list/element-clipping", str_element_clipping },
    { "/dimmnet2/prim/strided-list/negative-stride", str_negative_stride },
    { "/dimmnet2/prim/strided-list/element-outside-area", str_element_outside_area },
};

/* One strided/list path per test, on a fresh board holding the model */
static void test_strided_case(const void *opaque)
{
    const StrCase *sc = opaque;
    StrRig s;

    s.qts = dn2q_vm_start("q35", "-device dimmnet2,id=dn");
    dn2q_open(&s.d, s.qts, DN2_DEFAULT_BASE0);
    dn2q_board_init(&s.d, 0x01);
    s.model = g_malloc(STR_REG);
    dn2q_pattern(s.model, STR_REG, 60);
    sd_write(&s.d, 0, 0, s.model, STR_REG);
    qtest_memread(s.qts, dn2q_pw_addr(&s.d, 0, 0), s.pwm, sizeof(s.pwm));
    sc->run(&s);
    sd_check(&s.d, 0, 0, s.model, STR_REG, "whole model region after the strided/list path");
    g_free(s.model);
    qtest_quit(s.qts);
}

/* Small SO-DIMM (4 MiB memdev: 2 MiB per process) */
static void test_small_sodimm(void)
{
    QTestState *qts = dn2q_vm_start("q35", "-object memory-backend-ram,id=m,size=4M "
                                    "-device dimmnet2,id=dn,memdev=m");
    DN2 d;
    const uint32_t A = 2 * MiB_;
    uint8_t ww[DN2_WIN_AREA], p1[512], p0[64], pwm[DN2_WIN_AREA];
    uint8_t l[8];
    uint64_t st;

    dn2q_open(&d, qts, DN2_DEFAULT_BASE0);
    dn2q_board_init(&d, 0);        /* default capacity 256 MiB, clamped (choice #9) */
    dn2q_pattern(p1, sizeof(p1), 101);
    sd_write(&d, 1, 0, p1, sizeof(p1));
    dn2q_pattern(p0, sizeof(p0), 102);
    sd_write(&d, 0, 0, p0, sizeof(p0));
    dn2q_pattern(ww, sizeof(ww), 103);
    qtest_memwrite(qts, dn2q_ww_addr(&d, 0, 0), ww, sizeof(ww));

    st = vs(&d, 0, 0x200, A - 100, 200);
    EXPECT_HEX(st & (DN2_CS_WW_MASK(1) | DN2_CS_REQ_ERROR),
               DN2_CS_WW_DONE(1) | DN2_CS_WW_DST_OVF(1),
               "VS across the end of the 2 MiB area: bits 8 and 10");
    sd_check(&d, 0, A - 100, ww + 0x200, 100, "the part inside the area was written");
    EXPECT_HEX(dn2q_cs(&d, 0) & DN2_CS_REQ_ERROR, 0, "VL inside the area: no error");
    sd_check(&d, 1, 0, p1, sizeof(p1), "data beyond WID 0's area (WID 1's) not written");

    /* VL across the end (choice #19) */
    qtest_memread(qts, dn2q_pw_addr(&d, 0, 0), pwm, sizeof(pwm));
    st = vl(&d, 0, A - 50, 0x200, 100);
    memcpy(pwm + 0x200, ww + 0x200 + 50, 50);
    dn2q_pw_expect(&d, 0, pwm, "VL across the area end: part read, rest kept");
    EXPECT_HEX(st & DN2_CS_REQ_ERROR, DN2_CS_REQ_ERROR, "VL across the area end: bit 20");
    pc_reset(&d, 0);

    /* entirely outside the area */
    st = vs(&d, 0, 0x600, A + 0x1000, 16);
    EXPECT_HEX(st & DN2_CS_WW_MASK(3), DN2_CS_WW_DONE(3) | DN2_CS_WW_DST_OVF(3),
               "VS beyond the area: bits 14 and 16");
    st = vs(&d, 0, 0x600, 0xfffffff0u, 32);
    EXPECT_HEX(st & DN2_CS_WW_MASK(3), DN2_CS_WW_DONE(3) | DN2_CS_WW_DST_OVF(3),
               "VS at 0xfffffff0 (no 32-bit wrap into the area)");
    sd_check(&d, 0, 0, p0, sizeof(p0), "start of WID 0's area untouched");
    sd_check(&d, 1, 0, p1, sizeof(p1), "WID 1's area untouched");

    /* strided store/load across the end */
    st = vss(&d, 0, 0x000, A - 8, 3, 3, 8);
    EXPECT_HEX(st & DN2_CS_WW_MASK(0), DN2_CS_WW_DONE(0) | DN2_CS_WW_DST_OVF(0),
               "VSS across the area end: bits 5 and 7");
    sd_check(&d, 0, A - 8, ww, 8, "in-area element of the VSS");
    sd_check(&d, 1, 0, p1, sizeof(p1), "VSS did not spill into WID 1");
    qtest_memread(qts, dn2q_pw_addr(&d, 0, 0), pwm, sizeof(pwm));
    st = vls(&d, 0, A - 8, 0x100, 3, 3, 8);
    memcpy(pwm + 0x100, ww, 8);
    dn2q_pw_expect(&d, 0, pwm, "VLS across the area end");
    EXPECT_HEX(st & DN2_CS_REQ_ERROR, DN2_CS_REQ_ERROR, "VLS across the area end: bit 20");
    pc_reset(&d, 0);

    /* a list that runs past the area end: bit 20, in-area entries used */
    stl_le_p(l, 0x10);
    stl_le_p(l + 4, 0x10);
    sd_write(&d, 0, A - 8, l, 8);             /* (goes through WW#0) */
    st = vsi(&d, 0, 0x400, 0x100, 2, 2, A - 4);
    EXPECT_HEX(st & DN2_CS_REQ_ERROR, DN2_CS_REQ_ERROR,
               "VSI whose list leaves the area: bit 20");
    sd_check(&d, 0, 0x110, ww + 0x400, 4, "VSI element 0 (list entry inside the area)");
    pc_reset(&d, 0);

    /* a Capacity larger than what is installed still ends at the backing */
    dn2q_sr_wr(&d, DN2_SR_CTL_RESET, 0);
    dn2q_board_init(&d, 0x20);
    st = vs(&d, 0, 0x000, A - 8, 16);
    EXPECT_HEX(st & DN2_CS_WW_MASK(0), DN2_CS_WW_DONE(0) | DN2_CS_WW_DST_OVF(0),
               "Capacity 8 GiB on 4 MiB of SO-DIMM: area still 2 MiB");
    sd_check(&d, 1, 0, p1, sizeof(p1), "WID 1's area untouched");
    qtest_quit(qts);
}

static void test_wid_isolation(void)
{
    QTestState *qts = dn2q_vm_start("q35", "-device dimmnet2,id=dn");
    DN2 d;
    uint8_t x[512], y[512], got[512], pw0[DN2_WIN_AREA], pw0b[DN2_WIN_AREA], z[16];
    uint64_t st;

    dn2q_open(&d, qts, DN2_DEFAULT_BASE0);
    dn2q_board_init(&d, 0x01);
    dn2q_pattern(x, sizeof(x), 121);
    dn2q_pattern(y, sizeof(y), 122);
    qtest_memwrite(qts, dn2q_ww_addr(&d, 0, 0x200), x, sizeof(x));
    qtest_memwrite(qts, dn2q_ww_addr(&d, 1, 0x200), y, sizeof(y));
    st = vs(&d, 0, 0x200, 0x4000, 512);
    EXPECT_HEX(st, CS_BASE | DN2_CS_WW_DONE(1), "WID 0 status after its VS");
    st = vs(&d, 1, 0x200, 0x4000, 512);
    EXPECT_HEX(st, CS_BASE | DN2_CS_WW_DONE(1), "WID 1 status after its VS");
    st = vs(&d, 1, 0x400, 0x5000, 16);
    EXPECT_HEX(dn2q_cs(&d, 0), CS_BASE | DN2_CS_WW_DONE(1), "WID 1's WW#2 status not in UR0");
    EXPECT_HEX(dn2q_pc(&d, 0), 1ULL << 20, "WID 0 Primitive Counter");
    EXPECT_HEX(dn2q_pc(&d, 1), 2ULL << 20, "WID 1 Primitive Counter");

    vl(&d, 0, 0x4000, 0x200, 512);
    qtest_memread(qts, dn2q_pw_addr(&d, 0, 0x200), got, sizeof(got));
    dn2q_mem_eq("WID 0 reads its own data at 0x4000", got, x, sizeof(got), 0);
    qtest_memread(qts, dn2q_pw_addr(&d, 0, 0), pw0, sizeof(pw0));
    vl(&d, 1, 0x4000, 0x200, 512);
    qtest_memread(qts, dn2q_pw_addr(&d, 1, 0x200), got, sizeof(got));
    dn2q_mem_eq("WID 1 reads its own data at the same offset", got, y, sizeof(got), 0);
    qtest_memread(qts, dn2q_pw_addr(&d, 0, 0), pw0b, sizeof(pw0b));
    dn2q_mem_eq("WID 1's VL leaves PW0 alone", pw0b, pw0, sizeof(pw0), 0);
    EXPECT_HEX(dn2q_pcf(&d, 0, DN2_PC_VL), 1, "WID 0 VL count");
    EXPECT_HEX(dn2q_pcf(&d, 1, DN2_PC_VL), 1, "WID 1 VL count");

    /* WID 1 cannot reach past its own area into anything else */
    dn2q_pattern(z, sizeof(z), 123);
    sd_write(&d, 0, 0, z, sizeof(z));
    st = vs(&d, 1, 0x200, AREA_DEFAULT - 8, 16);
    EXPECT_HEX(st & DN2_CS_WW_MASK(1), DN2_CS_WW_DONE(1) | DN2_CS_WW_DST_OVF(1),
               "WID 1 VS past its area end");
    sd_check(&d, 0, 0, z, sizeof(z), "WID 0 offset 0 unaffected by WID 1's overflow");
    sd_check(&d, 1, AREA_DEFAULT - 8, y, 8, "WID 1's last bytes");
    /* bit 20 and the counters are per WID */
    expect_refused(&d, 1, dn2_req_upper(0x900, 0), dn2_req_lower(DN2_OP_VS, 0, 0, 0, 0, 0, 8),
                   "WID 1 VS from outside its Write Window area");
    EXPECT_HEX(dn2q_cs(&d, 0) & DN2_CS_REQ_ERROR, 0, "WID 0 has no request error");
    expect_refused(&d, 0, dn2_req_upper(0, 0x800), dn2_req_lower(DN2_OP_VL, 0, 0, 0, 0, 0, 8),
                   "VL into a DSTOff outside the PW area");
    pc_reset(&d, 1);
    EXPECT_HEX(dn2q_cs(&d, 0) & DN2_CS_REQ_ERROR, DN2_CS_REQ_ERROR,
               "WID 1's counter reset keeps WID 0's bit 20");
    EXPECT_HEX(dn2q_pcf(&d, 0, DN2_PC_VL), 2, "WID 0 counters kept by WID 1's reset");
    qtest_quit(qts);
}

/* Prefetch Window line flags (§4.5.5.2) */
static void test_pw_flags(void)
{
    QTestState *qts = dn2q_vm_start("q35", "-device dimmnet2,id=dn");
    DN2 d;
    g_autofree uint8_t *data = g_malloc(0x1000);
    uint8_t got[DN2_WIN_AREA];
    static const struct {
        int wid;
        uint8_t op, dtype, iter;
        uint32_t src, dst, arg;
        uint64_t flags0, flags1;     /* expected PW flags of WID 0 / 1 after issue */
    } c[] = {
        /* PW#1 lines 1,2 touched: 1001 */
        { 0, DN2_OP_VL, 0, 0, 0x000, 0x280, 0x100, 0xff9f, 0xffff },
        /* PW#0 lines 0,1: 1100 */
        { 0, DN2_OP_VL, 0, 0, 0x100, 0x000, 0x100, 0xff9c, 0xffff },
        /* PW#2 line 2 only: 1011 */
        { 0, DN2_OP_VL, 0, 0, 0x200, 0x500, 0x80, 0xfb9c, 0xffff },
        /* PW#3 strided 64 x 4 B = 256 B: lines 0,1: 1100 */
        { 0, DN2_OP_VLS, 2, 64, 0x300, 0x600, 8, 0xcb9c, 0xffff },
        /* WID 1: its own flags; PW#3 full window: 0000 */
        { 1, DN2_OP_VL, 0, 0, 0x000, 0x600, 0x200, 0xcb9c, 0x0fff },
        /* WID 1 PW#0, clipped at the window end: line 3 only: 0111 */
        { 1, DN2_OP_VL, 0, 0, 0x000, 0x1f0, 0x100, 0xcb9c, 0x0ff7 },
        /* WID 1 PW#1, size 0: nothing touched, all pre-set: 1111 */
        { 1, DN2_OP_VL, 0, 0, 0x000, 0x200, 0, 0xcb9c, 0x0ff7 },
        /* WID 1 PW#2 list, 3 x 16 B from offset 0x80: line 1: 1101 */
        { 1, DN2_OP_VLI, 4, 3, 0x000, 0x480, 0x800, 0xcb9c, 0x0df7 },
    };
    size_t i;

    dn2q_open(&d, qts, DN2_DEFAULT_BASE0);
    dn2q_board_init(&d, 0x01);
    dn2q_pattern(data, 0x1000, 131);
    sd_write(&d, 0, 0, data, 0x1000);
    sd_write(&d, 1, 0, data, 0x1000);
    {
        uint8_t l[12];
        stl_le_p(l, 0x40);
        stl_le_p(l + 4, 0x0);
        stl_le_p(l + 8, 0x20);
        sd_write(&d, 1, 0x800, l, sizeof(l));
    }
    EXPECT_HEX(dn2q_pwf(&d, 0), DN2_PWF_ALL, "flags all 1 when idle");

    /* hold the controller with a remote primitive, then issue the VLs:
     * the flags of the target window change when the request is issued */
    stall(&d, 0);
    for (i = 0; i < G_N_ELEMENTS(c) && !d.dead; i++) {
        g_autofree char *what = g_strdup_printf(
            "PW flags right after issuing %s #%zu (controller busy with RVS)",
            dn2_otype_name(c[i].op), i);
        dn2q_doorbell(&d, c[i].wid, 0, dn2_req_upper(c[i].src, c[i].dst),
                      dn2_req_lower(c[i].op, c[i].dtype, c[i].iter, 0, 0, 0, c[i].arg));
        if (dn2q_poll_ur(&d, 0, DN2_UR_PW_FLAG, ~0ULL, c[i].flags0, QUICK_POLL, what)) {
            dn2q_poll_ur(&d, 1, DN2_UR_PW_FLAG, ~0ULL, c[i].flags1, QUICK_POLL, what);
        }
    }
    EXPECT_HEX(dn2q_wc_state(&d), 1 + DN2_OP_RVS, "still stalled on the RVS");
    EXPECT_HEX(dn2q_pcf(&d, 0, DN2_PC_VL), 0, "no VL has completed");

    /* Controller Reset: flags back to all 1 */
    dn2q_sr_wr(&d, DN2_SR_CTL_RESET, 1);
    EXPECT_HEX(dn2q_pwf(&d, 0), DN2_PWF_ALL, "WID 0 flags after Controller Reset");
    EXPECT_HEX(dn2q_pwf(&d, 1), DN2_PWF_ALL, "WID 1 flags after Controller Reset");
    d.dead = false;

    /* without a stall: the same requests complete, flags end all 1, data ok */
    dn2q_board_init(&d, 0x01);
    for (i = 0; i < G_N_ELEMENTS(c) && !d.dead; i++) {
        run(&d, c[i].wid, DN2_PC_VL, dn2_req_upper(c[i].src, c[i].dst),
            dn2_req_lower(c[i].op, c[i].dtype, c[i].iter, 0, 0, 0, c[i].arg));
        EXPECT_HEX(dn2q_pwf(&d, c[i].wid), DN2_PWF_ALL, "flags all 1 after VL #%zu", i);
    }
    qtest_memread(qts, dn2q_pw_addr(&d, 0, 0x280), got, 0x100);
    dn2q_mem_eq("VL #0 data", got, data, 0x100, 0);
    qtest_memread(qts, dn2q_pw_addr(&d, 0, 0x600), got, 256);
    {
        uint8_t want[256];
        for (i = 0; i < 64; i++) {
            memcpy(want + 4 * i, data + 0x300 + 8 * i, 4);
        }
        dn2q_mem_eq("VLS #3 data", got, want, 256, 0);
    }
    qtest_memread(qts, dn2q_pw_addr(&d, 1, 0x600), got, 0x200);
    dn2q_mem_eq("WID 1 VL #4 data", got, data, 0x200, 0);
    qtest_memread(qts, dn2q_pw_addr(&d, 1, 0x1f0), got, 16);
    dn2q_mem_eq("WID 1 clipped VL #5 data", got, data, 16, 0);
    qtest_memread(qts, dn2q_pw_addr(&d, 1, 0x480), got, 48);
    {
        uint8_t want[48];
        memcpy(want, data + 0x40, 16);
        memcpy(want + 16, data, 16);
        memcpy(want + 32, data + 0x20, 16);
        dn2q_mem_eq("WID 1 VLI #7 data", got, want, 48, 0);
    }
    qtest_quit(qts);
}

/* Primitive Counter: 10-bit fields wrap at 1024 */
static void test_prim_counter(void)
{
    QTestState *qts = dn2q_vm_start("q35", "-device dimmnet2,id=dn");
    DN2 d;
    int i;
    uint8_t b[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };

    dn2q_open(&d, qts, DN2_DEFAULT_BASE0);
    dn2q_board_init(&d, 0x01);
    qtest_memwrite(qts, dn2q_ww_addr(&d, 0, 0), b, sizeof(b));
    for (i = 0; i < 1025 && !d.dead; i++) {
        dn2q_issue(&d, 0, 0, dn2_req_upper(0, 0x100), dn2_req_lower(DN2_OP_VS, 0, 0, 0, 0, 0, 8));
    }
    /* the last ~17 completions take the field through 1023 -> 0 -> 1 */
    dn2q_wait_pc(&d, 0, DN2_PC_VS, 1025, "VS field at 1025 mod 1024");
    vl(&d, 0, 0x100, 0, 8);           /* fence: all earlier requests done */
    EXPECT_HEX(dn2q_pc(&d, 0), (1ULL << 20) | (1ULL << 10),
               "Primitive Counter after 1025 VS and 1 VL (VS wrapped to 1)");
    EXPECT_HEX(dn2q_pc(&d, 1), 0, "WID 1 counter untouched");
    EXPECT_HEX(dn2q_cs(&d, 0) & DN2_CS_REQ_ERROR, 0, "no request error");
    for (i = 0; i < 5; i++) {
        vl(&d, 0, 0x100, 0, 8);
    }
    EXPECT_HEX(dn2q_pc(&d, 0), (1ULL << 20) | (6ULL << 10), "VL field counts separately");
    dn2q_ur_wr(&d, 0, DN2_UR_PRIM_COUNTER, 0xdeadbeef);
    EXPECT_HEX(dn2q_pc(&d, 0), 0, "Primitive Counter reset by a write of any value");
    vs(&d, 0, 0, 0x100, 8);
    EXPECT_HEX(dn2q_pc(&d, 0), 1ULL << 20, "counting resumes from 0");
    qtest_quit(qts);
}

/* The stats property: every stat-* counter in one read, the same values
 * as the counters one by one, and one line for each of them. */
static void test_stats_property(void)
{
    QTestState *qts = dn2q_vm_start("q35", "-device dimmnet2,id=dn");
    DN2 d;
    QDict *rsp;
    g_auto(GStrv) lines = NULL;
    unsigned n_stat = 0, i;
    const QListEntry *e;
    QList *props;

    dn2q_open(&d, qts, DN2_DEFAULT_BASE0);
    dn2q_board_init(&d, 0x01);
    for (i = 0; i < 3; i++) {
        vs(&d, 0, 0, 0x100, 8);             /* requests, bytes-local */
    }
    rsp = qtest_qmp(qts, "{'execute': 'qom-get', 'arguments': "
                    "{'path': '/machine/peripheral/dn', 'property': 'stats'}}");
    g_assert(qdict_haskey(rsp, "return"));
    lines = g_strsplit(qdict_get_str(rsp, "return"), "\n", -1);
    qobject_unref(rsp);
    for (i = 0; lines[i] && *lines[i]; i++) {
        g_auto(GStrv) kv = g_strsplit(lines[i], "=", 2);
        g_autofree char *prop = g_strdup_printf("stat-%s", kv[0]);

        g_assert(kv[1]);
        EXPECT_HEX(g_ascii_strtoull(kv[1], NULL, 10), dn2q_qom_u64(qts, "dn", prop),
                   "stats line %s against %s", lines[i], prop);
        if (!strcmp(kv[0], "requests")) {
            EXPECT_HEX(g_ascii_strtoull(kv[1], NULL, 10), 3, "requests counted");
        }
    }
    rsp = qtest_qmp(qts, "{'execute': 'qom-list', 'arguments': "
                    "{'path': '/machine/peripheral/dn'}}");
    props = qdict_get_qlist(rsp, "return");
    QLIST_FOREACH_ENTRY(props, e) {
        if (g_str_has_prefix(qdict_get_str(qobject_to(QDict, qlist_entry_obj(e)), "name"),
                             "stat-")) {
            n_stat++;
        }
    }
    qobject_unref(rsp);
    EXPECT_HEX(i, n_stat, "one stats line per stat-* property");
    g_assert_cmpuint(n_stat, >, 20);
    qtest_quit(qts);
}

/* ------------------------------------------------------------------ */
/* SO-DIMM to SO-DIMM copy (§4.6.8, choice #15)                         */
/* ------------------------------------------------------------------ */

static uint64_t copy_src(DN2 *d, int wid, uint8_t op, unsigned dtype, unsigned iter,
                         uint32_t src, uint32_t arg)
{
    return run(d, wid, DN2_PC_VL, dn2_req_upper(src, DN2_COPY_OFF),
               dn2_req_lower(op, dtype, iter, 0, 0, 0, arg));
}
static uint64_t copy_dst(DN2 *d, int wid, uint8_t op, unsigned dtype, unsigned iter,
                         uint32_t dst, uint32_t arg)
{
    return run(d, wid, DN2_PC_VS, dn2_req_upper(DN2_COPY_OFF, dst),
               dn2_req_lower(op, dtype, iter, 0, 0, 0, arg));
}

/* SO-DIMM to SO-DIMM copies (VL-family half to a VS-family half, WW#3):
 * every case starts from a board whose SO-DIMM [COPY_R0, + COPY_RLEN)
 * holds a known pattern, and ends checking that only what it copied
 * changed. */
enum { COPY_R0 = 0x10000, COPY_RLEN = 0x8000 };

typedef struct CopyRig {
    QTestState *qts;
    DN2 d;
    uint8_t *model;     /* SO-DIMM [COPY_R0, COPY_R0 + COPY_RLEN) */
    uint8_t *m;         /* ... indexed by SO-DIMM offset */
} CopyRig;

/* A copy path: d's SO-DIMM holds the model m (indexed by SO-DIMM offset) */
typedef struct CopyCase {
    const char *path;
    void (*run)(DN2 *d, uint8_t *m);
} CopyCase;

static DN2 *copy_start(CopyRig *c)
{
    c->qts = dn2q_vm_start("q35", "-device dimmnet2,id=dn");
    dn2q_open(&c->d, c->qts, DN2_DEFAULT_BASE0);
    dn2q_board_init(&c->d, 0x01);
    c->model = g_malloc(COPY_RLEN);
    dn2q_pattern(c->model, COPY_RLEN, 141);
    sd_write(&c->d, 0, COPY_R0, c->model, COPY_RLEN);
    c->m = c->model - COPY_R0;
    return &c->d;
}

static void copy_stop(CopyRig *c)
{
    sd_check(&c->d, 0, COPY_R0, c->model, COPY_RLEN, "whole model region after the copies");
    g_free(c->model);
    qtest_quit(c->qts);
}

static void copy_refused(DN2 *d, uint8_t *m)
{
    const uint32_t R0 = COPY_R0;

    /* an unpaired VS-family copy half is refused */
    expect_refused(d, 0, dn2_req_upper(DN2_COPY_OFF, R0),
                   dn2_req_lower(DN2_OP_VS, 0, 0, 0, 0, 0, 64), "VS copy half without a VL half");
    EXPECT_HEX(dn2q_cs(d, 0) & DN2_CS_WW_MASK(3), 0, "no WW#3 status for a refused copy");
    pc_reset(d, 0);
    /* VLI cannot be a copy source; the VS half then has nothing to pair */
    expect_refused(d, 0, dn2_req_upper(R0, DN2_COPY_OFF),
                   dn2_req_lower(DN2_OP_VLI, 2, 4, 0, 0, 0, R0), "VLI copy half");
    pc_reset(d, 0);
    expect_refused(d, 0, dn2_req_upper(DN2_COPY_OFF, R0 + 0x100),
                   dn2_req_lower(DN2_OP_VS, 0, 0, 0, 0, 0, 16), "VS half after a refused VLI");
    pc_reset(d, 0);
    /* VSI cannot be a copy destination */
    copy_src(d, 0, DN2_OP_VL, 0, 0, R0, 64);
    EXPECT_HEX(dn2q_cs(d, 0) & DN2_CS_REQ_ERROR, 0, "VL copy half accepted");
    expect_refused(d, 0, dn2_req_upper(DN2_COPY_OFF, R0 + 0x200),
                   dn2_req_lower(DN2_OP_VSI, 2, 4, 0, 0, 0, R0), "VSI copy half");
    pc_reset(d, 0);
    sd_check(d, 0, R0, m + R0, 0x1000, "refused copies wrote nothing");
}

/* VL + VS: contiguous copy longer than a window */
static void copy_contiguous(DN2 *d, uint8_t *m)
{
    const uint32_t R0 = COPY_R0;
    uint64_t st, pc0;

    pc0 = dn2q_pc(d, 0);
    copy_src(d, 0, DN2_OP_VL, 0, 0, R0 + 0x100, 0x300);
    st = copy_dst(d, 0, DN2_OP_VS, 0, 0, R0 + 0x1000, 0x300);
    EXPECT_HEX(st & (DN2_CS_WW_MASK(3) | DN2_CS_REQ_ERROR), DN2_CS_WW_DONE(3),
               "copy status goes to WW#3 (bit 14)");
    EXPECT_HEX(dn2q_pc(d, 0) - pc0, (1ULL << 10) | (1ULL << 20),
               "copy counts one VL and one VS");
    memmove(m + R0 + 0x1000, m + R0 + 0x100, 0x300);
    sd_check(d, 0, R0 + 0xff0, m + R0 + 0xff0, 0x320, "VL+VS copy");
    EXPECT_HEX(dn2q_pwf(d, 0), DN2_PWF_ALL, "PW flags untouched by the copy");
}

/* the shorter pattern decides the length */
static void copy_shorter_half(DN2 *d, uint8_t *m)
{
    const uint32_t R0 = COPY_R0;

    copy_src(d, 0, DN2_OP_VL, 0, 0, R0 + 0x2000, 100);
    copy_dst(d, 0, DN2_OP_VS, 0, 0, R0 + 0x1800, 40);
    memmove(m + R0 + 0x1800, m + R0 + 0x2000, 40);
    copy_src(d, 0, DN2_OP_VL, 0, 0, R0 + 0x2100, 40);
    copy_dst(d, 0, DN2_OP_VS, 0, 0, R0 + 0x1900, 100);
    memmove(m + R0 + 0x1900, m + R0 + 0x2100, 40);
    sd_check(d, 0, R0 + 0x1800, m + R0 + 0x1800, 0x200, "copy as long as the shorter half");
}

/* strided halves: VLS + VS, VL + VSS, VLS + VSS */
static void copy_strided(DN2 *d, uint8_t *m)
{
    const uint32_t R0 = COPY_R0;
    uint64_t st;
    unsigned r, k;

    /* VLS + VS: transpose of a 16 x 16 matrix of 4-byte elements */
    for (k = 0; k < 16 && !d->dead; k++) {
        copy_src(d, 0, DN2_OP_VLS, 2, 16, R0 + 0x3000 + 4 * k, 64);
        copy_dst(d, 0, DN2_OP_VS, 0, 0, R0 + 0x3400 + 64 * k, 64);
    }
    for (r = 0; r < 16; r++) {
        for (k = 0; k < 16; k++) {
            memcpy(m + R0 + 0x3400 + 64 * k + 4 * r, m + R0 + 0x3000 + 64 * r + 4 * k, 4);
        }
    }
    sd_check(d, 0, R0 + 0x3400, m + R0 + 0x3400, 0x400, "VLS+VS transpose");

    /* VL + VSS: scatter */
    copy_src(d, 0, DN2_OP_VL, 0, 0, R0 + 0x4000, 64);
    st = copy_dst(d, 0, DN2_OP_VSS, 2, 16, R0 + 0x4400, 12);
    EXPECT_HEX(st & (DN2_CS_WW_MASK(3) | DN2_CS_REQ_ERROR), DN2_CS_WW_DONE(3),
               "VL+VSS status");
    model_stride(m, R0 + 0x4400, 12, 4, 16, m + R0 + 0x4000);
    sd_check(d, 0, R0 + 0x4400, m + R0 + 0x4400, 0x100, "VL+VSS scatter");

    /* VLS + VSS */
    {
        uint8_t tmp[128];
        copy_src(d, 0, DN2_OP_VLS, 2, 32, R0 + 0x5000, 8);
        copy_dst(d, 0, DN2_OP_VSS, 2, 32, R0 + 0x5400, 12);
        for (r = 0; r < 32; r++) {
            memcpy(tmp + 4 * r, m + R0 + 0x5000 + 8 * r, 4);
        }
        model_stride(m, R0 + 0x5400, 12, 4, 32, tmp);
        sd_check(d, 0, R0 + 0x5400, m + R0 + 0x5400, 0x200, "VLS+VSS");
    }
}

/* the halves pair per WID, and a VS half consumes the pairing */
static void copy_pairing(DN2 *d, uint8_t *m)
{
    const uint32_t R0 = COPY_R0;

    copy_src(d, 0, DN2_OP_VL, 0, 0, R0 + 0x6000, 32);
    expect_refused(d, 1, dn2_req_upper(DN2_COPY_OFF, 0x100),
                   dn2_req_lower(DN2_OP_VS, 0, 0, 0, 0, 0, 32),
                   "WID 1 VS half does not pair with WID 0's VL half");
    pc_reset(d, 1);
    copy_dst(d, 0, DN2_OP_VS, 0, 0, R0 + 0x6100, 32);
    memmove(m + R0 + 0x6100, m + R0 + 0x6000, 32);
    sd_check(d, 0, R0 + 0x6000, m + R0 + 0x6000, 0x200, "WID 0 copy after WID 1's attempt");
    /* a VS half consumes the pairing: a second one is unpaired */
    expect_refused(d, 0, dn2_req_upper(DN2_COPY_OFF, R0 + 0x6200),
                   dn2_req_lower(DN2_OP_VS, 0, 0, 0, 0, 0, 32), "second VS half");
    pc_reset(d, 0);
}

/* destination past the area end: bit 16, only the part inside copied */
static void copy_past_end(DN2 *d, uint8_t *m)
{
    const uint32_t R0 = COPY_R0;
    uint8_t w1[64];
    uint64_t st;

    dn2q_pattern(w1, sizeof(w1), 142);
    sd_write(d, 1, 0, w1, sizeof(w1));
    copy_src(d, 0, DN2_OP_VL, 0, 0, R0 + 0x7000, 64);
    st = copy_dst(d, 0, DN2_OP_VS, 0, 0, AREA_DEFAULT - 16, 64);
    EXPECT_HEX(st & DN2_CS_WW_MASK(3), DN2_CS_WW_DONE(3) | DN2_CS_WW_DST_OVF(3),
               "copy past the area end: bits 14 and 16");
    sd_check(d, 0, AREA_DEFAULT - 16, m + R0 + 0x7000, 16, "copied part");
    sd_check(d, 1, 0, w1, sizeof(w1), "WID 1's area untouched by the copy");
}

static const CopyCase copy_cases[] = {
    { "/dimmnet2/prim/sodimm-copy/refused", copy_refused },
    { "/dimmnet2/prim/sodimm-copy/contiguous", copy_contiguous },
    { "/dimmnet2/prim/sodimm-copy/shorter-half", copy_shorter_half },
    { "/dimmnet2/prim/sodimm-copy/strided", copy_strided },
    { "/dimmnet2/prim/sodimm-copy/pairing-per-wid", copy_pairing },
    { "/dimmnet2/prim/sodimm-copy/past-area-end", copy_past_end },
};

/* One copy path per test, between copy_start() and copy_stop() */
static void test_copy_case(const void *opaque)
{
    const CopyCase *cc = opaque;
    CopyRig c;
    DN2 *d = copy_start(&c);

    cc->run(d, c.m);
    copy_stop(&c);
}

static void test_copy_large(void)
{
    DN2SdFile f;
    QTestState *qts;
    DN2 d;
    const uint32_t src = 0x100000, dst = 0x900000, len = 6 * MiB_;
    const uint32_t ssrc = 0x20000, sdst = 0x40000, slen = 64 * 1024;
    g_autofree uint8_t *data = g_malloc(len);
    g_autofree uint8_t *got = g_malloc(slen);
    uint64_t i, bad = 0, first = 0;
    uint64_t st;
    int k;

    dn2q_sdfile_create(&f, 32 * MiB_, "dn2-sodimm-XXXXXX", false);
    f.area = 16 * MiB_;
    qts = dn2q_start_memdev(&f, "");
    dn2q_open(&d, qts, DN2_DEFAULT_BASE0);
    dn2q_board_init(&d, 0x01);
    /* source data put straight into the backing file */
    dn2q_pattern(data, len, 151);
    dn2q_sdfile_put(&f, 0, src, data, len);
    copy_src(&d, 0, DN2_OP_VL, 0, 0, src, len);
    st = copy_dst(&d, 0, DN2_OP_VS, 0, 0, dst, len);
    EXPECT_HEX(st & (DN2_CS_WW_MASK(3) | DN2_CS_REQ_ERROR), DN2_CS_WW_DONE(3),
               "6 MiB copy: WW#3 done");
    for (i = 0; i < len; i++) {
        if (*dn2q_sdfile_byte(&f, 0, dst + i) != data[i]) {
            if (!bad++) {
                first = i;
            }
        }
    }
    EXPECT_HEX(bad, 0, "bytes of the 6 MiB copy that differ (first at 0x%" PRIx64 ")",
               first);
    EXPECT_HEX(*dn2q_sdfile_byte(&f, 0, dst - 1), 0, "byte before the copy");
    EXPECT_HEX(*dn2q_sdfile_byte(&f, 0, dst + len), 0, "byte after the copy");
    /* sampled through the board */
    for (k = 0; k < 24 && !d.dead; k++) {
        uint32_t o = k == 0 ? 0 : k == 1 ? len - DN2_WIN_SIZE :
                     (uint32_t)(((uint64_t)k * 2654435761u) % (len - DN2_WIN_SIZE));
        g_autofree char *w = g_strdup_printf("6 MiB copy sample at +0x%x", o);
        vl(&d, 0, dst + o, 0, DN2_WIN_SIZE);
        qtest_memread(qts, dn2q_pw_addr(&d, 0, 0), got, DN2_WIN_SIZE);
        dn2q_mem_eq(w, got, data + o, DN2_WIN_SIZE, dst + o);
    }
    /* a smaller copy, read back completely through the board */
    copy_src(&d, 0, DN2_OP_VL, 0, 0, src + ssrc, slen);
    copy_dst(&d, 0, DN2_OP_VS, 0, 0, sdst, slen);
    sd_read(&d, 0, sdst, got, slen);
    dn2q_mem_eq("64 KiB copy read back through the Prefetch Window", got, data + ssrc,
                slen, sdst);
    qtest_quit(qts);
    dn2q_sdfile_destroy(&f);
}

/* The backing file holds buf at offset off of WID wid's area, byte by byte
 * in the documented interleave; stops at the first difference.  Returns
 * the number of non-zero bytes checked. */
static uint64_t file_expect(DN2SdFile *f, int wid, uint64_t off, const uint8_t *buf,
                            size_t len)
{
    uint64_t i, nz = 0;

    for (i = 0; i < len; i++) {
        uint64_t p = dn2q_sdfile_pos(f, wid, off + i);
        if (f->map[p] != buf[i]) {
            EXPECT_HEX(f->map[p], buf[i], "WID %d byte 0x%" PRIx64 " at file offset 0x%"
                       PRIx64, wid, off + i, p);
            break;
        }
        nz += buf[i] != 0;
    }
    return nz;
}

/* memdev: file-backed SO-DIMMs in the documented interleave (choice #10) */
/*
 * A SO-DIMM copy whose source leaves the process's area mid-copy (the
 * host writes a smaller SO-DIMM Capacity while it runs): the copy stops
 * there and flags bit 20; it never writes a stale buffer where the rest
 * of the data would have gone.
 */
static void test_copy_shrink(void)
{
    const uint64_t src = 400 * MiB_, len = 64 * MiB_;
    DN2SdFile f;
    DN2 d;
    g_autofree uint8_t *pat = g_malloc(len);
    g_autofree uint8_t *got = g_malloc(len);
    uint64_t k, i;

    dn2q_sdfile_create(&f, 1024 * MiB_, "dn2-shrink-XXXXXX", true);
    dn2q_open(&d, dn2q_start_memdev(&f, ""), DN2_DEFAULT_BASE0);
    dn2q_board_init(&d, 0x02);                  /* 512 MiB per module */
    dn2q_pattern(pat, len, 77);
    dn2q_sdfile_put(&f, 0, src, pat, len);
    dn2q_issue(&d, 0, 0, dn2_req_upper(src, DN2_COPY_OFF),
               dn2_req_lower(DN2_OP_VL, 0, 0, 0, 0, 0, len));
    dn2q_issue(&d, 0, 0, dn2_req_upper(DN2_COPY_OFF, 0),
               dn2_req_lower(DN2_OP_VS, 0, 0, 0, 0, 0, len));
    dn2q_sr_wr(&d, DN2_SR_SDIMM_CAPACITY, 0x01);   /* 256 MiB: the source is gone */
    dn2q_wait_pc(&d, 0, DN2_PC_VS, 1, "the copy ends");
    dn2q_sdfile_get(&f, 0, 0, got, len);
    for (k = 0; k < len && got[k] == pat[k]; k++) {
    }
    k &= ~(uint64_t)(DN2_COPY_CHUNK_QTEST - 1);
    if (k >= len) {
        g_test_message("the capacity write came after the copy: nothing to check");
    } else {
        for (i = k; i < len && !got[i]; i++) {
        }
        EXPECT_HEX(i, len, "after the shrink (at 0x%" PRIx64 ") nothing more is written "
                   "(first non-zero byte past it)", k);
        EXPECT_TRUE(dn2q_cs(&d, 0) & DN2_CS_REQ_ERROR, "the cut copy sets bit 20");
    }
    qtest_quit(d.qts);
    dn2q_sdfile_destroy(&f);
}

static void test_memdev_file(void)
{
    DN2SdFile f;
    QTestState *qts;
    DN2 d;
    uint8_t a[500], b[300], got[16], w[16];
    uint64_t i, nz = 0, want_nz = 0;

    dn2q_sdfile_create(&f, 8 * MiB_, "dn2-sodimm-XXXXXX", false);
    f.area = 4 * MiB_;
    qts = dn2q_start_memdev(&f, "");
    dn2q_open(&d, qts, DN2_DEFAULT_BASE0);
    dn2q_board_init(&d, 0x01);
    dn2q_pattern(a, sizeof(a), 161);
    dn2q_pattern(b, sizeof(b), 162);
    qtest_memwrite(qts, dn2q_ww_addr(&d, 0, 0), a, sizeof(a));
    qtest_memwrite(qts, dn2q_ww_addr(&d, 1, 0x200), b, sizeof(b));
    vs(&d, 0, 0, 0x1003, sizeof(a));
    vs(&d, 1, 0x200, 0x25, sizeof(b));
    want_nz += file_expect(&f, 0, 0x1003, a, sizeof(a));
    want_nz += file_expect(&f, 1, 0x25, b, sizeof(b));
    /* the first 8 bytes of the store went to module 0, the next 8 to module 1 */
    EXPECT_HEX(f.map[0x803], a[0], "board byte 0x1003 = module 0 offset 0x803");
    EXPECT_HEX(f.map[4 * MiB_ + 0x800], a[5], "board byte 0x1008 = module 1 offset 0x800");
    EXPECT_HEX(f.map[0x808], a[13], "board byte 0x1010 = module 0 offset 0x808");
    for (i = 0; i < f.size; i++) {
        nz += f.map[i] != 0;
    }
    EXPECT_HEX(nz, want_nz, "nothing else in the backing file was written");
    /* and the other way: bytes put in the file are what a VL reads */
    dn2q_pattern(w, sizeof(w), 163);
    dn2q_sdfile_put(&f, 0, 0x3004, w, sizeof(w));
    vl(&d, 0, 0x3004, 0, sizeof(w));
    qtest_memread(qts, dn2q_pw_addr(&d, 0, 0), got, sizeof(got));
    dn2q_mem_eq("VL reads the interleaved file contents", got, w, sizeof(w), 0);
    qtest_quit(qts);
    dn2q_sdfile_destroy(&f);
}

/* ------------------------------------------------------------------ */
/* Command Ex, Command1, Upper snapshot                                */
/* ------------------------------------------------------------------ */

static void test_command_ex(void)
{
    QTestState *qts = dn2q_vm_start("q35", "-device dimmnet2,id=dn");
    DN2 d;
    uint8_t ww[DN2_WIN_AREA], got[1024], want[1024];
    int i;
    uint64_t st;

    dn2q_open(&d, qts, DN2_DEFAULT_BASE0);
    dn2q_board_init(&d, 0x01);
    dn2q_pattern(ww, sizeof(ww), 171);
    qtest_memwrite(qts, dn2q_ww_addr(&d, 0, 0), ww, sizeof(ww));

    dn2q_ur_wr(&d, 0, DN2_UR_CMD_EX_FLAG, 1);
    dn2q_ur_wr(&d, 0, DN2_UR_CMD_EX, dn2_req_ex(DN2_OP_VLS, 7, 255, 0xdeadbeef));
    EXPECT_HEX(dn2q_ur_rd(&d, 0, DN2_UR_CMD_EX_FLAG), 0, "Command Ex Flag is write-only");
    EXPECT_HEX(dn2q_ur_rd(&d, 0, DN2_UR_CMD_EX), 0, "Command Ex is write-only");
    st = vs(&d, 0, 0x000, 0x1000, 256);
    EXPECT_HEX(st & (DN2_CS_WW_MASK(0) | DN2_CS_REQ_ERROR), DN2_CS_WW_DONE(0),
               "VS with Command Ex Flag set");
    sd_check(&d, 0, 0x1000, ww, 256, "VS unaffected by Command Ex");
    st = vss(&d, 0, 0x200, 0x2000, 2, 16, 8);
    EXPECT_HEX(st & (DN2_CS_WW_MASK(1) | DN2_CS_REQ_ERROR), DN2_CS_WW_DONE(1),
               "VSS with Command Ex Flag set");
    vls(&d, 0, 0x2000, 0x200, 2, 16, 8);
    qtest_memread(qts, dn2q_pw_addr(&d, 0, 0x200), got, 64);
    dn2q_mem_eq("VSS/VLS unaffected by Command Ex", got, ww + 0x200, 64, 0);
    vl(&d, 0, 0x1000, 0x400, 256);
    qtest_memread(qts, dn2q_pw_addr(&d, 0, 0x400), got, 256);
    dn2q_mem_eq("VL unaffected by Command Ex", got, ww, 256, 0);
    dn2q_ur_wr(&d, 0, DN2_UR_CMD_EX_FLAG, 0);
    vs(&d, 0, 0x100, 0x1100, 16);
    sd_check(&d, 0, 0x1100, ww + 0x100, 16, "VS after clearing the flag");

    /* Command1 (rflag=1) uses its own Upper; local primitives work the same */
    dn2q_ur_wr(&d, 0, DN2_UR_CMD0_UPPER, dn2_req_upper(0x000, 0x3000));
    dn2q_ur_wr(&d, 0, DN2_UR_CMD1_UPPER, dn2_req_upper(0x600, 0x3200));
    i = dn2q_pcf(&d, 0, DN2_PC_VS);
    dn2q_ur_wr(&d, 0, DN2_UR_CMD1_LOWER, dn2_req_lower(DN2_OP_VS, 0, 0, 0, 0, 0, 64));
    dn2q_wait_pc(&d, 0, DN2_PC_VS, i + 1, "VS through Command1");
    dn2q_ur_wr(&d, 0, DN2_UR_CMD0_LOWER, dn2_req_lower(DN2_OP_VS, 0, 0, 0, 0, 0, 64));
    dn2q_wait_pc(&d, 0, DN2_PC_VS, i + 2, "VS through Command0");
    sd_read(&d, 0, 0x3000, got, 0x240);
    memset(want, 0, sizeof(want));
    memcpy(want, ww, 64);
    memcpy(want + 0x200, ww + 0x600, 64);
    dn2q_mem_eq("Command0 and Command1 Upper are separate registers", got, want, 0x240, 0x3000);

    /* Upper is taken when Lower is written: rewriting it later is harmless */
    for (i = 0; i < 8; i++) {
        unsigned before = dn2q_pcf(&d, 0, DN2_PC_VS);
        dn2q_issue(&d, 0, 0, dn2_req_upper(0x080 + 8 * i, 0x4000 + 8 * i),
                   dn2_req_lower(DN2_OP_VS, 0, 0, 0, 0, 0, 8));
        dn2q_ur_wr(&d, 0, DN2_UR_CMD0_UPPER, dn2_req_upper(0x700, 0x5000));
        dn2q_wait_pc(&d, 0, DN2_PC_VS, before + 1, "VS with Upper rewritten after Lower");
    }
    sd_check(&d, 0, 0x4000, ww + 0x80, 64, "requests used the Upper of their doorbell");
    memset(want, 0, 64);
    sd_check(&d, 0, 0x5000, want, 64, "the later Upper value was never used");
    qtest_quit(qts);
}

/* ------------------------------------------------------------------ */
/* Request FIFO (§5.2.2, choices #11, #12, #22)                         */
/* ------------------------------------------------------------------ */

static void fifo_fill(DN2 *d, unsigned depth, bool reset_by_read)
{
    QTestState *qts = d->qts;
    unsigned k;
    uint8_t data[64], got[64], zero[64];
    uint64_t ov0 = dn2q_qom_u64(qts, "dn", "stat-overrun");

    dn2q_board_init(d, 0x01);
    dn2q_pattern(data, sizeof(data), 181);
    qtest_memwrite(qts, dn2q_ww_addr(d, 0, 0), data, sizeof(data));
    EXPECT_HEX(dn2q_cs(d, 0) & (DN2_CS_REQ_PENDING | DN2_CS_FIFO_AFULL), 0, "FIFO idle");
    stall(d, 0);
    EXPECT_HEX(dn2q_cs(d, 0) & (DN2_CS_REQ_PENDING | DN2_CS_FIFO_AFULL), 0,
               "stalled RVS has left the FIFO");
    for (k = 1; k <= depth + 1; k++) {
        uint64_t want = 0;
        dn2q_doorbell(d, 0, 0, dn2_req_upper(0, 0x8000 + 64 * k),
                      dn2_req_lower(DN2_OP_VS, 0, 0, 0, 0, 0, 64));
        if (depth - MIN(k, depth) < 2) {
            want |= DN2_CS_FIFO_AFULL;        /* fewer than 2 free entries */
        }
        if (k > depth) {
            want |= DN2_CS_REQ_PENDING;       /* waits in the register */
        }
        EXPECT_HEX(dn2q_cs(d, 0) & (DN2_CS_REQ_PENDING | DN2_CS_FIFO_AFULL | DN2_CS_REQ_ERROR),
                   want, "depth %u: Controller Status bits 0/2 after %u queued requests",
                   depth, k);
        EXPECT_HEX(dn2q_cs(d, 1) & (DN2_CS_REQ_PENDING | DN2_CS_FIFO_AFULL),
                   want & DN2_CS_FIFO_AFULL,
                   "depth %u: WID 1 sees the shared FIFO's almost-full after %u", depth, k);
    }
    /* a further Lower while bit 0 is set: dropped, counted, bit 20 */
    dn2q_doorbell(d, 0, 0, dn2_req_upper(0, 0x9000), dn2_req_lower(DN2_OP_VS, 0, 0, 0, 0, 0, 64));
    EXPECT_HEX(dn2q_qom_u64(qts, "dn", "stat-overrun"), ov0 + 1, "stat-overrun");
    EXPECT_HEX(dn2q_cs(d, 0) & (DN2_CS_REQ_PENDING | DN2_CS_FIFO_AFULL | DN2_CS_REQ_ERROR),
               DN2_CS_REQ_PENDING | DN2_CS_FIFO_AFULL | DN2_CS_REQ_ERROR,
               "overrun sets bit 20, bit 0 stays");
    /* the other process can also park one request */
    dn2q_doorbell(d, 1, 0, dn2_req_upper(0, 0x100), dn2_req_lower(DN2_OP_VS, 0, 0, 0, 0, 0, 8));
    EXPECT_HEX(dn2q_cs(d, 1) & (DN2_CS_REQ_PENDING | DN2_CS_FIFO_AFULL | DN2_CS_REQ_ERROR),
               DN2_CS_REQ_PENDING | DN2_CS_FIFO_AFULL, "WID 1 request waits in its register");
    EXPECT_HEX(dn2q_wc_state(d), 1 + DN2_OP_RVS,
               "Module State: Window Controller on RVS");
    EXPECT_HEX(dn2q_pc(d, 0), 0, "nothing completed behind the RVS");

    /* Controller Reset clears everything */
    if (reset_by_read) {
        dn2q_sr_rd(d, DN2_SR_CTL_RESET);
    } else {
        dn2q_sr_wr(d, DN2_SR_CTL_RESET, 0xdead);
    }
    EXPECT_HEX(dn2q_cs(d, 0), DN2_CS_STATUS_EMPTY,
               "UR0 Controller Status after Controller Reset");
    EXPECT_HEX(dn2q_cs(d, 1), DN2_CS_STATUS_EMPTY,
               "UR1 Controller Status after Controller Reset");
    EXPECT_HEX(dn2q_mstate(d), 0, "Module State idle after Controller Reset");
    EXPECT_HEX(dn2q_pc(d, 0), 0, "Primitive Counter after Controller Reset");
    dn2q_board_init(d, 0x01);
    vs(d, 0, 0, 0x7000, 64);
    vl(d, 0, 0x7000, 0, 64);               /* fence */
    EXPECT_HEX(dn2q_pc(d, 0), (1ULL << 10) | (1ULL << 20),
               "only the new VS ran: the queued ones were discarded");
    EXPECT_HEX(dn2q_pc(d, 1), 0, "WID 1's parked request was discarded");
    qtest_memread(qts, dn2q_pw_addr(d, 0, 0), got, sizeof(got));
    dn2q_mem_eq("board works after the reset", got, data, sizeof(got), 0);
    memset(zero, 0, sizeof(zero));
    sd_check(d, 0, 0x8000 + 64, zero, 64, "a discarded request never wrote");
}

static void fifo_case(const char *args, unsigned depth, bool reset_by_read)
{
    QTestState *qts = dn2q_vm_start("q35", "%s", args);
    DN2 d;

    dn2q_open(&d, qts, DN2_DEFAULT_BASE0);
    fifo_fill(&d, depth, reset_by_read);
    qtest_quit(qts);
}

static void test_fifo(void)
{
    fifo_case("-device dimmnet2,id=dn", 16, true);
}

static void test_fifo_depth4(void)
{
    fifo_case("-device dimmnet2,id=dn,fifo-depth=4", 4, false);
}

/* Undefined opcodes and NOP are ignored; BOTF size 0 is dropped */
static void test_ignored_requests(void)
{
    QTestState *qts = dn2q_vm_start("q35", "-device dimmnet2,id=dn");
    DN2 d;
    static const uint8_t ops[] = {
        0x00, 0x02, 0x03, 0x07, 0x0b, 0x0c, 0x0d, 0x0e, 0x0f, 0x13, 0x17, 0x1b,
        0x1c, 0x1d, 0x1e, 0x1f,
    };
    uint8_t data[256], pw0[DN2_WIN_AREA], pw1[DN2_WIN_AREA];
    uint64_t ign0;
    size_t i;

    dn2q_open(&d, qts, DN2_DEFAULT_BASE0);
    dn2q_board_init(&d, 0x01);
    dn2q_pattern(data, sizeof(data), 191);
    sd_write(&d, 0, 0, data, sizeof(data));
    qtest_memset(qts, dn2q_ww_addr(&d, 0, 0), 0xee, DN2_WIN_AREA);
    pc_reset(&d, 0);
    qtest_memread(qts, dn2q_pw_addr(&d, 0, 0), pw0, sizeof(pw0));
    ign0 = dn2q_qom_u64(qts, "dn", "stat-ignored");
    for (i = 0; i < G_N_ELEMENTS(ops); i++) {
        dn2q_issue(&d, 0, 0, dn2_req_upper(0, 0), dn2_req_lower(ops[i], 2, 16, 0, 0, 0, 64));
    }
    dn2q_issue(&d, 0, 0, 0, dn2_botf_lower(1, 0));
    /* a VL behind them completes: the controller did not stop */
    vl(&d, 0, 0x80, 0x600, 16);
    EXPECT_HEX(dn2q_qom_u64(qts, "dn", "stat-ignored"), ign0 + G_N_ELEMENTS(ops) + 1,
               "stat-ignored counts %zu undefined/NOP requests and the BOTF of size 0",
               G_N_ELEMENTS(ops));
    EXPECT_HEX(dn2q_pc(&d, 0), 1ULL << 10, "only the VL counted");
    EXPECT_HEX(dn2q_cs(&d, 0), CS_BASE | DN2_CS_WW_DONE(0),
               "ignored requests set no status bits (WW#0 done is from the setup)");
    EXPECT_HEX(dn2q_mstate(&d), 0, "controller idle");
    memcpy(pw0 + 0x600, data + 0x80, 16);
    qtest_memread(qts, dn2q_pw_addr(&d, 0, 0), pw1, sizeof(pw1));
    dn2q_mem_eq("ignored requests wrote nothing to the PW", pw1, pw0, sizeof(pw1), 0);
    sd_check(&d, 0, 0, data, sizeof(data), "ignored requests wrote nothing to SO-DIMM");
    qtest_quit(qts);
}

/* ------------------------------------------------------------------ */
/* Resets                                                              */
/* ------------------------------------------------------------------ */

typedef struct Snap {
    uint8_t ww[2][DN2_WIN_AREA];
    uint8_t pw[2][DN2_WIN_AREA];
    uint8_t llcm[2][DN2_LLCM_AREA];
} Snap;

static void snap_take(DN2 *d, Snap *s)
{
    int w;

    for (w = 0; w < 2; w++) {
        qtest_memread(d->qts, dn2q_ww_addr(d, w, 0), s->ww[w], DN2_WIN_AREA);
        qtest_memread(d->qts, dn2q_pw_addr(d, w, 0), s->pw[w], DN2_WIN_AREA);
        qtest_memread(d->qts, dn2q_llcm_addr(d, w, 0), s->llcm[w], DN2_LLCM_AREA);
    }
}

static void snap_compare(const char *what, Snap *got, Snap *want)
{
    int w;

    for (w = 0; w < 2; w++) {
        g_autofree char *a = g_strdup_printf("%s: Write Window %d", what, w);
        g_autofree char *b = g_strdup_printf("%s: Prefetch Window %d", what, w);
        g_autofree char *c = g_strdup_printf("%s: LLCM %d", what, w);
        dn2q_mem_eq(a, got->ww[w], want->ww[w], DN2_WIN_AREA, 0);
        dn2q_mem_eq(b, got->pw[w], want->pw[w], DN2_WIN_AREA, 0);
        dn2q_mem_eq(c, got->llcm[w], want->llcm[w], DN2_LLCM_AREA, 0);
    }
}

/* State for the reset tests: SO-DIMM data, buffers, registers. */
static void reset_setup(DN2 *d, uint8_t *s0, uint8_t *s1)
{
    g_autofree uint8_t *buf = g_malloc(DN2_LLCM_AREA);
    int w;

    dn2q_board_init(d, 0x01);
    dn2q_pattern(s0, 1024, 201);
    dn2q_pattern(s1, 512, 202);
    sd_write(d, 0, 0x100, s0, 1024);
    sd_write(d, 1, 0x200, s1, 512);
    vl(d, 0, 0x100, 0x200, 512);
    vl(d, 1, 0x200, 0x600, 512);
    for (w = 0; w < 2; w++) {
        dn2q_pattern(buf, DN2_WIN_AREA, 203 + w);
        qtest_memwrite(d->qts, dn2q_ww_addr(d, w, 0), buf, DN2_WIN_AREA);
        dn2q_pattern(buf, DN2_LLCM_AREA, 205 + w);
        qtest_memwrite(d->qts, dn2q_llcm_addr(d, w, 0), buf, DN2_LLCM_AREA);
    }
    dn2q_ur_wr(d, 0, DN2_UR_STATUS_INIT, 0x400);
    dn2q_ur_wr(d, 0, DN2_UR_STATUS_ADDR, 0x410);         /* full */
    dn2q_ur_wr(d, 1, DN2_UR_STATUS_INIT, 0x7000);
    dn2q_ur_wr(d, 0, DN2_UR_LHB_ADDR, 0x40);
    dn2q_ur_wr(d, 0, DN2_UR_CMD_EX_FLAG, 1);
    vs(d, 0, 0x300, 0x8000, 0x200);                 /* WW#1 bits 5+6 */
    expect_refused(d, 0, dn2_req_upper(0, 0x900), dn2_req_lower(DN2_OP_VL, 0, 0, 0, 0, 0, 8),
                   "VL into a DSTOff outside the Prefetch Window area");
    copy_src(d, 0, DN2_OP_VL, 0, 0, 0x100, 64);     /* copy half recorded */
    EXPECT_HEX(dn2q_cs(d, 0), DN2_CS_SDIMM_READY | DN2_CS_STATUS_FULL | DN2_CS_WW_DONE(0) |
               DN2_CS_WW_DONE(1) | DN2_CS_WW_SRC_OVF(1) | DN2_CS_REQ_ERROR,
               "UR0 status before the reset");
    EXPECT_HEX(dn2q_ur_rd(d, 1, DN2_UR_STATUS_ADDR), 0x7000, "UR1 status tail before");
}

static void test_controller_reset_scope(void)
{
    QTestState *qts = dn2q_vm_start("q35", "-device dimmnet2,id=dn");
    DN2 d;
    uint8_t s0[1024], s1[512], z[64];
    static Snap before, after;
    int w;

    dn2q_open(&d, qts, DN2_DEFAULT_BASE0);
    reset_setup(&d, s0, s1);
    snap_take(&d, &before);

    dn2q_sr_wr(&d, DN2_SR_CTL_RESET, 0);
    for (w = 0; w < 2; w++) {
        EXPECT_HEX(dn2q_cs(&d, w), DN2_CS_STATUS_EMPTY,
                   "UR%d Controller Status after Controller Reset (choice #20: "
                   "configuration, status, ring pointers reset)", w);
        EXPECT_HEX(dn2q_pc(&d, w), 0, "UR%d Primitive Counter after Controller Reset", w);
        EXPECT_HEX(dn2q_pwf(&d, w), DN2_PWF_ALL, "UR%d PW flags after Controller Reset", w);
        EXPECT_HEX(dn2q_ur_rd(&d, w, DN2_UR_STATUS_ADDR), 0, "UR%d status ring tail reset", w);
        EXPECT_HEX(dn2q_ur_rd(&d, w, DN2_UR_LHB_ADDR), 0, "UR%d LHB tail reset", w);
    }
    EXPECT_HEX(dn2q_mstate(&d), 0, "Module State after Controller Reset");
    snap_take(&d, &after);
    snap_compare("kept by Controller Reset", &after, &before);
    {
        uint8_t lhb[DN2_LHB_AREA], zero[DN2_LHB_AREA];
        memset(zero, 0, sizeof(zero));
        for (w = 0; w < 2; w++) {
            qtest_memread(qts, dn2q_lhb_addr(&d, w, 0), lhb, sizeof(lhb));
            dn2q_mem_eq("LH Buffer cleared by Controller Reset", lhb, zero, sizeof(lhb), 0);
        }
    }
    /* SO-DIMM Init is configuration: primitives are refused until re-init */
    expect_refused(&d, 0, dn2_req_upper(0, 0x100), dn2_req_lower(DN2_OP_VS, 0, 0, 0, 0, 0, 8),
                   "VS after Controller Reset, before Init");
    pc_reset(&d, 0);
    dn2q_board_init(&d, 0x01);
    EXPECT_HEX(dn2q_cs(&d, 0), CS_BASE, "UR0 after re-init");
    /* the recorded copy half is gone */
    dn2q_pattern(z, sizeof(z), 209);
    sd_write(&d, 0, 0x9000, z, sizeof(z));
    expect_refused(&d, 0, dn2_req_upper(DN2_COPY_OFF, 0x9000),
                   dn2_req_lower(DN2_OP_VS, 0, 0, 0, 0, 0, 64),
                   "VS copy half after Controller Reset (VL half discarded)");
    pc_reset(&d, 0);
    sd_check(&d, 0, 0x9000, z, sizeof(z), "no copy happened");
    /* SO-DIMM contents kept */
    sd_check(&d, 0, 0x100, s0, sizeof(s0), "WID 0 SO-DIMM kept by Controller Reset");
    sd_check(&d, 1, 0x200, s1, sizeof(s1), "WID 1 SO-DIMM kept by Controller Reset");
    /* Controller Reset by a read */
    stall(&d, 0);
    EXPECT_HEX(dn2q_sr_rd(&d, DN2_SR_CTL_RESET), 0, "Controller Reset reads 0");
    EXPECT_HEX(dn2q_mstate(&d), 0, "a read of 0xa00 resets the controller too");
    EXPECT_HEX(dn2q_cs(&d, 0), DN2_CS_STATUS_EMPTY, "status after reset by read");
    qtest_quit(qts);
}

static void test_system_reset(void)
{
    QTestState *qts = dn2q_vm_start("q35", "-device dimmnet2,id=dn");
    DN2 d;
    uint8_t s0[1024], s1[512];
    static Snap after, zero;
    int w;

    dn2q_open(&d, qts, DN2_DEFAULT_BASE0);
    reset_setup(&d, s0, s1);
    stall(&d, 1);
    qtest_system_reset(qts);
    for (w = 0; w < 2; w++) {
        EXPECT_HEX(dn2q_cs(&d, w), DN2_CS_STATUS_EMPTY,
                   "UR%d Controller Status after system_reset", w);
        EXPECT_HEX(dn2q_pc(&d, w), 0, "UR%d Primitive Counter after system_reset", w);
        EXPECT_HEX(dn2q_pwf(&d, w), DN2_PWF_ALL, "UR%d PW flags after system_reset", w);
        EXPECT_HEX(dn2q_ur_rd(&d, w, DN2_UR_STATUS_ADDR), 0, "UR%d status tail", w);
    }
    EXPECT_HEX(dn2q_mstate(&d), 0, "Module State after system_reset");
    EXPECT_HEX(dn2q_sr_rd(&d, DN2_SR_SMA), 0, "SMA reset by power-on");
    memset(&zero, 0, sizeof(zero));
    snap_take(&d, &after);
    snap_compare("on-FPGA buffers zeroed by system_reset (choice #21)", &after, &zero);
    dn2q_board_init(&d, 0x01);
    sd_check(&d, 0, 0x100, s0, sizeof(s0), "WID 0 SO-DIMM kept across system_reset");
    sd_check(&d, 1, 0x200, s1, sizeof(s1), "WID 1 SO-DIMM kept across system_reset");
    qtest_quit(qts);
}

/* ------------------------------------------------------------------ */
/* ACPI, placement, properties                                         */
/* ------------------------------------------------------------------ */

static uint8_t *fetch_dsdt(QTestState *qts, size_t *len)
{
    QFWCFG *fw = pc_fw_cfg_init(qts);
    uint8_t head[4096];
    uint8_t *all, *dsdt = NULL, *p;
    size_t total, n, off;
    uint32_t dlen;

    *len = 0;
    total = qfw_cfg_get_file(fw, "etc/acpi/tables", head, sizeof(head));
    n = MIN(total, sizeof(head));
    p = memmem(head, n, "DSDT", 4);
    if (!total || !p || p + 8 > head + n) {
        g_test_message("FAIL no DSDT in the first %zu bytes of etc/acpi/tables (%zu)",
                       n, total);
        g_test_fail();
        pc_fw_cfg_uninit(fw);
        return NULL;
    }
    off = p - head;
    dlen = ldl_le_p(p + 4);
    if (off + dlen > total || dlen < 36) {
        g_test_message("FAIL bad DSDT length %u", dlen);
        g_test_fail();
        pc_fw_cfg_uninit(fw);
        return NULL;
    }
    all = g_malloc(off + dlen);
    qfw_cfg_get_file(fw, "etc/acpi/tables", all, off + dlen);
    dsdt = g_memdup2(all + off, dlen);
    g_free(all);
    pc_fw_cfg_uninit(fw);
    *len = dlen;
    return dsdt;
}

static size_t count_mem(const uint8_t *hay, size_t n, const void *needle, size_t nl)
{
    size_t c = 0;
    const uint8_t *p = hay;

    while (p < hay + n && (p = memmem(p, hay + n - p, needle, nl))) {
        c++;
        p++;
    }
    return c;
}

/* _HID "DNET0002" and _CRS Memory32Fixed(ReadWrite, base, 0x60000) */
static void check_acpi(QTestState *qts, const uint64_t *bases, int nboards)
{
    static const char hid[] = "_HID\x0d" DN2_ACPI_HID;     /* NameOp _HID String */
    size_t len;
    g_autofree uint8_t *dsdt = fetch_dsdt(qts, &len);
    int i;

    if (!dsdt) {
        return;
    }
    EXPECT_HEX(count_mem(dsdt, len, hid, sizeof(hid)), nboards,
               "occurrences of _HID \"%s\" in the DSDT", DN2_ACPI_HID);
    for (i = 0; i < nboards; i++) {
        uint8_t crs[12] = { 0x86, 0x09, 0x00, 0x01 };
        char name[5];
        const uint8_t *h, *m;

        stl_le_p(crs + 4, bases[i]);
        stl_le_p(crs + 8, DN2_WINDOW_SIZE);
        m = memmem(dsdt, len, crs, sizeof(crs));
        EXPECT_TRUE(m != NULL, "Memory32Fixed(ReadWrite, 0x%" PRIx64 ", 0x%x) in the DSDT",
                    bases[i], DN2_WINDOW_SIZE);
        snprintf(name, sizeof(name), "%s%d", DN2_ACPI_NAME, i);
        EXPECT_TRUE(memmem(dsdt, len, name, 4) != NULL, "device %s in the DSDT", name);
        /* the descriptor belongs to a DNET0002 device: it follows a _HID
         * closely (same Device() body) */
        if (m) {
            bool near = false;
            for (h = dsdt; h < m && (h = memmem(h, m - h, hid, sizeof(hid))); h++) {
                if (m - h < 200) {
                    near = true;
                }
            }
            EXPECT_TRUE(near, "_CRS for 0x%" PRIx64 " sits in a DNET0002 device", bases[i]);
        }
    }
}

static void round_trip(DN2 *d, int wid, uint32_t seed, uint32_t off)
{
    uint8_t a[512], got[512];

    dn2q_pattern(a, sizeof(a), seed);
    qtest_memwrite(d->qts, dn2q_ww_addr(d, wid, 0x200), a, sizeof(a));
    vs(d, wid, 0x200, off, sizeof(a));
    vl(d, wid, off, 0x400, sizeof(a));
    qtest_memread(d->qts, dn2q_pw_addr(d, wid, 0x400), got, sizeof(got));
    dn2q_mem_eq("VS/VL round trip", got, a, sizeof(got), off);
}

static void test_acpi_q35(void)
{
    QTestState *qts = dn2q_vm_start("q35", "-device dimmnet2,id=dn");
    const uint64_t bases[] = { DN2_DEFAULT_BASE0 };
    DN2 d;

    check_acpi(qts, bases, 1);
    EXPECT_HEX(dn2q_qom_u64(qts, "dn", "base"), DN2_DEFAULT_BASE0, "base property of the board");
    dn2q_open(&d, qts, DN2_DEFAULT_BASE0);
    dn2q_board_init(&d, 0x01);
    round_trip(&d, 0, 211, 0x1234);
    round_trip(&d, 1, 212, 0x1234);
    qtest_quit(qts);
}

static void test_pc_machine(void)
{
    QTestState *qts = dn2q_vm_start("pc", "-device dimmnet2,id=dn");
    const uint64_t bases[] = { DN2_DEFAULT_BASE0 };
    DN2 d;

    check_acpi(qts, bases, 1);
    dn2q_open(&d, qts, DN2_DEFAULT_BASE0);
    EXPECT_HEX(dn2q_cs(&d, 0), DN2_CS_STATUS_EMPTY, "Controller Status on -M pc");
    dn2q_board_init(&d, 0x01);
    round_trip(&d, 0, 221, 0x40000);
    round_trip(&d, 1, 222, 0x80);
    EXPECT_HEX(dn2q_cs(&d, 0), CS_BASE | DN2_CS_WW_DONE(1), "UR0 status on -M pc");
    qtest_quit(qts);
}

static void test_two_boards(void)
{
    QTestState *qts = dn2q_vm_start("q35", "-device dimmnet2,id=a -device dimmnet2,id=b");
    const uint64_t bases[] = { DN2_DEFAULT_BASE0, DN2_DEFAULT_BASE1 };
    DN2 a, b;
    uint8_t x[64], y[64], got[64];

    check_acpi(qts, bases, 2);
    EXPECT_HEX(dn2q_qom_u64(qts, "a", "base"), DN2_DEFAULT_BASE0, "first board's base");
    EXPECT_HEX(dn2q_qom_u64(qts, "b", "base"), DN2_DEFAULT_BASE1, "second board's base");
    dn2q_open(&a, qts, DN2_DEFAULT_BASE0);
    dn2q_open(&b, qts, DN2_DEFAULT_BASE1);
    dn2q_board_init(&a, 0x01);
    EXPECT_HEX(dn2q_cs(&b, 0) & DN2_CS_SDIMM_READY, 0,
               "board b not initialised by board a's Init");
    dn2q_board_init(&b, 0x01);
    dn2q_pattern(x, sizeof(x), 231);
    dn2q_pattern(y, sizeof(y), 232);
    qtest_memwrite(qts, dn2q_ww_addr(&a, 0, 0), x, sizeof(x));
    qtest_memwrite(qts, dn2q_ww_addr(&b, 0, 0), y, sizeof(y));
    vs(&a, 0, 0, 0x100, sizeof(x));
    EXPECT_HEX(dn2q_cs(&b, 0), CS_BASE, "board b's status unaffected by board a's VS");
    vs(&b, 0, 0, 0x100, sizeof(y));
    sd_check(&a, 0, 0x100, x, sizeof(x), "board a's SO-DIMM");
    sd_check(&b, 0, 0x100, y, sizeof(y), "board b's SO-DIMM (separate memory)");
    /* a stalled board a does not hold up board b */
    stall(&a, 0);
    round_trip(&b, 1, 233, 0x2000);
    EXPECT_HEX(dn2q_mstate(&b), 0, "board b idle");
    EXPECT_HEX(dn2q_wc_state(&a), 1 + DN2_OP_RVS,
               "board a still waiting on its RVS");
    dn2q_sr_wr(&b, DN2_SR_CTL_RESET, 0);
    EXPECT_HEX(dn2q_wc_state(&a), 1 + DN2_OP_RVS,
               "board b's Controller Reset leaves board a");
    EXPECT_HEX(dn2q_cs(&a, 0) & DN2_CS_SDIMM_READY, DN2_CS_SDIMM_READY, "board a still ready");
    dn2q_sr_rd(&a, DN2_SR_CTL_RESET);
    dn2q_board_init(&a, 0x01);
    vl(&a, 0, 0x100, 0, sizeof(got));
    qtest_memread(qts, dn2q_pw_addr(&a, 0, 0), got, sizeof(got));
    dn2q_mem_eq("board a after its reset", got, x, sizeof(got), 0);
    qtest_quit(qts);
}

static void test_explicit_base(void)
{
    /* choice #1: first board 0xFEC10000, base= otherwise */
    QTestState *qts = dn2q_vm_start("q35", "-device dimmnet2,id=a "
                                    "-device dimmnet2,id=b,base=0xfe000000");
    const uint64_t bases[] = { DN2_DEFAULT_BASE0, 0xfe000000 };
    DN2 a, b;

    EXPECT_HEX(dn2q_qom_u64(qts, "a", "base"), DN2_DEFAULT_BASE0, "first board, default base");
    EXPECT_HEX(dn2q_qom_u64(qts, "b", "base"), 0xfe000000, "explicit base");
    check_acpi(qts, bases, 2);
    dn2q_open(&a, qts, DN2_DEFAULT_BASE0);
    dn2q_open(&b, qts, 0xfe000000);
    EXPECT_HEX(dn2q_cs(&b, 0), DN2_CS_STATUS_EMPTY, "board at the explicit base answers");
    dn2q_board_init(&a, 0x01);
    dn2q_board_init(&b, 0x01);
    round_trip(&a, 0, 241, 0x10);
    round_trip(&b, 0, 242, 0x10);
    qtest_quit(qts);
}

/* Run the QEMU binary (bounded by timeout(1)); returns its exit status. */
static int spawn_qemu(const char *const *args, char **out, char **err)
{
    const char *qemu = g_getenv("QTEST_QEMU_BINARY");
    g_autofree char *fw = dn2q_fw_dir();
    g_autoptr(GPtrArray) argv = g_ptr_array_new();
    GError *e = NULL;
    int status = -1;

    g_assert_nonnull(qemu);
    g_ptr_array_add(argv, (char *)"timeout");
    g_ptr_array_add(argv, (char *)"30");
    g_ptr_array_add(argv, (char *)qemu);
    g_ptr_array_add(argv, (char *)"-L");
    g_ptr_array_add(argv, fw);
    for (; *args; args++) {
        g_ptr_array_add(argv, (char *)*args);
    }
    g_ptr_array_add(argv, NULL);
    if (!g_spawn_sync(NULL, (char **)argv->pdata, NULL,
                      G_SPAWN_SEARCH_PATH, NULL, NULL,
                      out, err, &status, &e)) {
        g_test_message("FAIL cannot run %s: %s", qemu, e->message);
        g_test_fail();
        g_error_free(e);
        return -1;
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/*
 * vt-shm= a file that is no sync domain (not dn2-switch --vt-sync shm's:
 * another magic, or too short for a header): QEMU refuses to start, naming
 * the file and what is wrong, never aborts.
 */
static void test_bad_shm_file(void)
{
    static const size_t sizes[] = { 4096, 16 };
    size_t i;

    for (i = 0; i < G_N_ELEMENTS(sizes); i++) {
        g_autofree char *path = NULL;
        g_autofree char *junk = g_malloc(sizes[i]);
        g_autofree char *dev = NULL;
        g_autofree char *out = NULL, *err = NULL;
        int fd = g_file_open_tmp("dn2-bad-shm-XXXXXX", &path, NULL);
        const char *args[] = { "-M", "q35", "-m", "64M", "-nodefaults", "-display", "none",
                               "-accel", "qtest", "-S", "-device", NULL, NULL };
        int rc;

        g_assert(fd >= 0);
        memset(junk, 'X', sizes[i]);        /* "XXXXXXXX", not DN2SHMVT */
        g_assert(write(fd, junk, sizes[i]) == (ssize_t)sizes[i]);
        close(fd);
        dev = g_strdup_printf("dimmnet2,switch=127.0.0.1:4791,vtime=on,vt-sync=shm,"
                              "vt-shm=%s,lid=1", path);
        args[11] = dev;
        rc = spawn_qemu(args, &out, &err);
        unlink(path);
        EXPECT_TRUE(rc != 0 && rc != 124 && rc < 128,
                    "QEMU exits with an error, not a signal, for vt-shm= a file of "
                    "%zu bytes with the wrong magic (exit %d)", sizes[i], rc);
        EXPECT_TRUE(err && strstr(err, "dimmnet2") && strstr(err, path) &&
                    strstr(err, "not a sync domain"),
                    "the message names dimmnet2 and the file, and says it is not a "
                    "sync domain (stderr: %s)", err ? err : "");
    }
}

/*
 * Every property's bad values: QEMU refuses to start with a message naming
 * the board and what is wrong, and never crashes (an exit by signal, e.g.
 * SIGSEGV in rom_reset for a window over the BIOS, or SIGABRT for a
 * zero-sized SO-DIMM, fails the case).
 */
typedef struct BadCase {
    const char *args[8];
    const char *want;           /* in stderr */
} BadCase;

static void test_bad_config(void)
{
    static const BadCase cases[] = {
        { { "-device", "dimmnet2,base=0xfec18000" }, "64 KiB aligned" },
        { { "-device", "dimmnet2,base=0xfec10001" }, "64 KiB aligned" },
        { { "-device", "dimmnet2,base=0xfffd0000" }, "above 4 GiB" },
        { { "-device", "dimmnet2,base=0x100000000" }, "above 4 GiB" },
        { { "-device", "dimmnet2,base=0xffffffffffff0000" }, "above 4 GiB" },
        { { "-device", "dimmnet2,base=0xfffa0000" }, "overlap" },      /* BIOS ROM */
        { { "-device", "dimmnet2,base=0xfec00000" }, "overlap" },      /* IOAPIC */
        { { "-device", "dimmnet2,base=0x100000" }, "overlap" },        /* RAM */
        { { "-device", "dimmnet2,base=0xfec10000", "-device", "dimmnet2,base=0xfec60000" },
          "another dimmnet2" },
        { { "-device", "dimmnet2,base=0xfec70000", "-device", "dimmnet2,base=0xfec70000" },
          "another dimmnet2" },
        { { "-device", "dimmnet2", "-device", "dimmnet2", "-device", "dimmnet2" },
          "both default addresses" },
        { { "-device", "dimmnet2,fifo-depth=1" }, "fifo-depth" },
        { { "-device", "dimmnet2,fifo-depth=65" }, "fifo-depth" },
        { { "-device", "dimmnet2,sodimm-size=3M" }, "sodimm-size" },
        { { "-device", "dimmnet2,sodimm-size=0" }, "sodimm-size" },
        { { "-device", "dimmnet2,sodimm-size=1M" }, "sodimm-size" },
        { { "-device", "dimmnet2,sodimm-size=32G" }, "sodimm-size" },
        { { "-object", "memory-backend-ram,id=m,size=3M", "-device", "dimmnet2,memdev=m" },
          "power of two" },
        { { "-device", "dimmnet2,memdev=nosuch" }, "nosuch" },
        { { "-device", "dimmnet2,switch=127.0.0.1:0" }, "port 0" },
        { { "-device", "dimmnet2,switch=127.0.0.1" }, "HOST:PORT" },
        { { "-device", "dimmnet2,switch=127.0.0.1:99999" }, "HOST:PORT" },
        { { "-device", "dimmnet2,switch=[::1]:4791,local=127.0.0.1:0" }, "IPv" },
        { { "-device", "dimmnet2,switch=127.0.0.1:4791,local=bad" }, "local=" },
        { { "-device", "dimmnet2,switch=127.0.0.1:4791,loopback=on" }, "either" },
        { { "-device", "dimmnet2,local=127.0.0.1:0" }, "needs switch" },
        { { "-device", "dimmnet2,rx-thread=on" }, "needs switch" },
        { { "-device", "dimmnet2,guid=5" }, "needs switch" },
        { { "-device", "dimmnet2,vtime=on,vt-latency-ns=2000000000" }, "vt-latency-ns" },
        { { "-device", "dimmnet2,lid=2" }, "needs switch" },
        { { "-device", "dimmnet2,switch=127.0.0.1:4791,lid=65535" }, "lid=" },
        { { "-device", "dimmnet2,switch=127.0.0.1:4791,vtime=on,rx-thread=on" },
          "rx-thread" },
        { { "-device", "dimmnet2,switch=127.0.0.1:4791,vtime=on,vt-latency-ns=0" },
          "vt-latency-ns" },
        { { "-device", "dimmnet2,loopback=on,pcap=/nonexistent-dir/x.pcap" }, "pcap=" },
        { { "-device", "dimmnet2,switch=127.0.0.1:4791,vtime=on,vt-sync=tcp" },
          "vt-sync=tcp" },
        { { "-device", "dimmnet2,switch=127.0.0.1:4791,vtime=on,vt-shm=/x" },
          "needs vt-sync=shm" },
        { { "-device", "dimmnet2,switch=127.0.0.1:4791,vt-sync=shm,vt-shm=/x,lid=1" },
          "needs vtime=on" },
        { { "-device", "dimmnet2,switch=127.0.0.1:4791,vtime=on,vt-sync=shm,lid=1" },
          "vt-shm=PATH" },
        { { "-device", "dimmnet2,switch=127.0.0.1:4791,vtime=on,vt-sync=shm,vt-shm=/x" },
          "needs lid=" },
        { { "-device", "dimmnet2,switch=127.0.0.1:4791,vtime=on,vt-sync=shm,"
            "vt-shm=/nonexistent-dir/vt.shm,lid=1" }, "no such file" },
        { { "-device", "dimmnet2,timing=thesis" }, "needs vtime=on" },
        { { "-device", "dimmnet2,timing=fast" }, "timing=fast" },
        { { "-device", "dimmnet2,timing-params=line-ns=5" }, "needs timing=thesis" },
        { { "-device", "dimmnet2,vtime=on,timing=thesis,timing-params=no-such=1" },
          "no-such=1" },
        { { "-device", "dimmnet2,vtime=on,timing=thesis,timing-params=switch-ns=x" },
          "switch-ns=x" },
        { { "-device", "dimmnet2,vtime=on,timing=thesis,timing-params=clock-ns=0" },
          "clock-ns" },
        { { "-device", "dimmnet2,rc-timeout-ms=4000000" }, "rc-timeout-ms" },
        { { "-object", "secret,id=s0,data=x", "-device", "dimmnet2,secret=s0" },
          "needs switch" },
        { { "-device", "dimmnet2,switch=127.0.0.1:4791,secret=nosuch" }, "nosuch" },
        { { "-object", "secret,id=s0,data=", "-device",
            "dimmnet2,switch=127.0.0.1:4791,secret=s0" }, "empty" },
    };
    size_t i;

    for (i = 0; i < G_N_ELEMENTS(cases); i++) {
        const char *args[24] = {
            "-M", "q35", "-m", "64M", "-nodefaults", "-display", "none", "-accel",
            "qtest", "-S",
        };
        g_autofree char *out = NULL, *err = NULL;
        g_autofree char *line = g_strjoinv(" ", (char **)cases[i].args);
        int j, n = 10, rc;

        for (j = 0; j < 8 && cases[i].args[j]; j++) {
            args[n++] = cases[i].args[j];
        }
        args[n] = NULL;
        rc = spawn_qemu(args, &out, &err);
        EXPECT_TRUE(rc != 0 && rc != 124 && rc < 128,
                    "QEMU exits with an error, not a signal, for %s (exit %d)", line, rc);
        EXPECT_TRUE(err && strstr(err, "dimmnet2") && strstr(err, cases[i].want),
                    "the message for %s names dimmnet2 and says '%s' (stderr: %s)", line,
                    cases[i].want, err ? err : "");
    }
    test_bad_shm_file();
}

static void test_device_help(void)
{
    static const char *const props[] = { "base", "sodimm-size", "fifo-depth", "memdev" };
    const char *args[] = { "-device", "dimmnet2,help", NULL };
    g_autofree char *out = NULL, *err = NULL;
    int rc = spawn_qemu(args, &out, &err);
    size_t i;

    EXPECT_HEX(rc, 0, "qemu -device dimmnet2,help exits 0");
    for (i = 0; i < G_N_ELEMENTS(props) && out; i++) {
        g_autofree char *key = g_strdup_printf("\n  %s=", props[i]);
        const char *p = strstr(out, key);
        const char *eol = p ? strchr(p + 1, '\n') : NULL;
        const char *dash = p ? strstr(p + 1, " - ") : NULL;

        EXPECT_TRUE(p != NULL, "property %s listed by -device dimmnet2,help", props[i]);
        EXPECT_TRUE(p && dash && (!eol || dash < eol) && dash[3] && dash[3] != '\n',
                    "property %s has a description", props[i]);
    }
}

/* ------------------------------------------------------------------ */
/* VMState                                                             */
/* ------------------------------------------------------------------ */

static void wait_migration(QTestState *qts, const char *who)
{
    int i;

    for (i = 0; i < 60000; i++) {
        QDict *rsp = qtest_qmp(qts, "{'execute': 'query-migrate'}");
        QDict *ret = qdict_get_qdict(rsp, "return");
        const char *st = ret && qdict_haskey(ret, "status") ?
                         qdict_get_str(ret, "status") : "";
        bool done = !strcmp(st, "completed");
        bool failed = !strcmp(st, "failed") || !strcmp(st, "cancelled");

        if (failed) {
            g_test_message("FAIL %s migration %s", who, st);
            g_test_fail();
        }
        qobject_unref(rsp);
        if (done || failed) {
            return;
        }
        g_usleep(1000);
    }
    g_test_message("FAIL %s migration did not complete", who);
    g_test_fail();
}

/* Migrate `src` through a file into a new QEMU started with `args`. */
static QTestState *migrate_via_file(QTestState *src, const char *args)
{
    g_autofree char *dir = g_dir_make_tmp("dn2-mig-XXXXXX", NULL);
    g_autofree char *file = g_build_filename(dir, "state", NULL);
    g_autofree char *uri = g_strdup_printf("file:%s", file);
    QTestState *dst;

    qtest_qmp_assert_success(src, "{'execute': 'migrate', 'arguments': {'uri': %s}}", uri);
    wait_migration(src, "outgoing");
    dst = dn2q_vm_start("q35", "%s -incoming defer", args);
    qtest_qmp_assert_success(dst, "{'execute': 'migrate-incoming', 'arguments': {'uri': %s}}",
                             uri);
    wait_migration(dst, "incoming");
    unlink(file);
    rmdir(dir);
    return dst;
}

typedef struct Regs {
    uint64_t cs[2], pc[2], pwf[2], stail[2], ltail[2], ms;
} Regs;

static void regs_take(DN2 *d, Regs *r)
{
    int w;

    for (w = 0; w < 2; w++) {
        r->cs[w] = dn2q_cs(d, w);
        r->pc[w] = dn2q_pc(d, w);
        r->pwf[w] = dn2q_pwf(d, w);
        r->stail[w] = dn2q_ur_rd(d, w, DN2_UR_STATUS_ADDR);
        r->ltail[w] = dn2q_ur_rd(d, w, DN2_UR_LHB_ADDR);
    }
    r->ms = dn2q_mstate(d);
}

static void regs_compare(Regs *got, Regs *want)
{
    int w;

    for (w = 0; w < 2; w++) {
        EXPECT_HEX(got->cs[w], want->cs[w], "migrated UR%d Controller Status", w);
        EXPECT_HEX(got->pc[w], want->pc[w], "migrated UR%d Primitive Counter", w);
        EXPECT_HEX(got->pwf[w], want->pwf[w], "migrated UR%d PW flags", w);
        EXPECT_HEX(got->stail[w], want->stail[w], "migrated UR%d status tail", w);
        EXPECT_HEX(got->ltail[w], want->ltail[w], "migrated UR%d LHB tail", w);
    }
    EXPECT_HEX(got->ms, want->ms, "migrated Module State");
}

static void test_vmstate(void)
{
    const char *args = "-device dimmnet2,id=dn,sodimm-size=4M";
    QTestState *src = dn2q_vm_start("q35", "%s", args), *dst;
    DN2 d;
    const uint32_t A = 2 * MiB_;
    uint8_t s0[2048], s1[2048], buf[DN2_LLCM_AREA];
    static Snap before, after;
    Regs r0, r1;
    int w, k;

    dn2q_open(&d, src, DN2_DEFAULT_BASE0);
    dn2q_board_init(&d, 0x01);
    dn2q_pattern(s0, sizeof(s0), 251);
    dn2q_pattern(s1, sizeof(s1), 252);
    sd_write(&d, 0, 0x1000, s0, sizeof(s0));
    sd_write(&d, 1, A - sizeof(s1), s1, sizeof(s1));
    for (k = 0; k < 4; k++) {
        vl(&d, 0, 0x1000 + 512 * k, 512 * k, 512);
        vl(&d, 1, A - sizeof(s1) + 512 * k, 512 * (3 - k), 512);
    }
    for (w = 0; w < 2; w++) {
        dn2q_pattern(buf, DN2_WIN_AREA, 253 + w);
        qtest_memwrite(src, dn2q_ww_addr(&d, w, 0), buf, DN2_WIN_AREA);
        dn2q_pattern(buf, DN2_LLCM_AREA, 255 + w);
        qtest_memwrite(src, dn2q_llcm_addr(&d, w, 0), buf, DN2_LLCM_AREA);
    }
    dn2q_ur_wr(&d, 0, DN2_UR_STATUS_INIT, 0x300);
    dn2q_ur_wr(&d, 0, DN2_UR_STATUS_SIZE, 0x08);
    dn2q_ur_wr(&d, 0, DN2_UR_STATUS_ADDR, 0x310);
    dn2q_ur_wr(&d, 1, DN2_UR_STATUS_INIT, 0x6000);
    dn2q_ur_wr(&d, 1, DN2_UR_STATUS_ADDR, 0x6020);
    dn2q_ur_wr(&d, 0, DN2_UR_CMD_EX_FLAG, 1);
    vs(&d, 0, 0x300, 0x3000, 0x200);                   /* WW#1: bits 8, 9 */
    vs(&d, 1, 0x400, A - 4, 16);                       /* WW#2: bits 11, 13 */
    expect_refused(&d, 1, dn2_req_upper(0, 0x900),
                   dn2_req_lower(DN2_OP_VL, 0, 0, 0, 0, 0, 8), "VL into DSTOff 0x900");
    copy_src(&d, 0, DN2_OP_VL, 0, 0, 0x1000, 256);     /* pending copy half */
    snap_take(&d, &before);
    regs_take(&d, &r0);
    EXPECT_TRUE(r0.cs[0] & DN2_CS_STATUS_FULL, "source UR0 ring full before migration");
    EXPECT_TRUE(r0.cs[1] & DN2_CS_REQ_ERROR, "source UR1 bit 20 before migration");

    dst = migrate_via_file(src, args);
    qtest_quit(src);
    dn2q_open(&d, dst, DN2_DEFAULT_BASE0);
    regs_take(&d, &r1);
    regs_compare(&r1, &r0);
    snap_take(&d, &after);
    snap_compare("migrated buffers", &after, &before);
    /* the copy half recorded before migration pairs after it */
    copy_dst(&d, 0, DN2_OP_VS, 0, 0, 0x8000, 256);
    EXPECT_HEX(dn2q_cs(&d, 0) & DN2_CS_WW_MASK(3), DN2_CS_WW_DONE(3), "copy across migration");
    sd_check(&d, 0, 0x8000, s0, 256, "copy with the VL half from before migration");
    sd_check(&d, 0, 0x1000, s0, sizeof(s0), "migrated WID 0 SO-DIMM");
    sd_check(&d, 1, A - sizeof(s1), s1, sizeof(s1) - 4, "migrated WID 1 SO-DIMM");
    qtest_quit(dst);
}

/*
 * A crafted migration stream: every field a guest could not have produced
 * is refused with a clean error (the destination keeps running), and the
 * SMA is never taken from the stream.  The stream is the real one, patched
 * at the offsets of the version 2 layout (found through a marker written
 * into the registers, and checked before use).
 */
#define MIG_MARK_LEN 13
#define MIG_WID0     (16 + 2 * 16384) /* after the marker's fields and the AMT */
#define MIG_WID_SIZE 254
#define MIG_FIFO     (MIG_WID0 + 2 * MIG_WID_SIZE)
#define MIG_FCOUNT   (MIG_FIFO + 64 * 28 + 4)
#define MIG_EXEC     (MIG_FCOUNT + 4)

typedef struct MigPatch {
    const char *what;
    int off;                        /* from the marker */
    int len;                        /* 1, 2, 4 or 8 (big endian) */
    uint64_t val;
    int off2, len2;                 /* a second field, len2 = 0: none */
    uint64_t val2;
    bool accepted;
} MigPatch;

static void put_be(uint8_t *p, int len, uint64_t v)
{
    int i;

    for (i = len - 1; i >= 0; i--, v >>= 8) {
        p[i] = v & 0xff;
    }
}

static uint64_t get_be(const uint8_t *p, int len)
{
    uint64_t v = 0;
    int i;

    for (i = 0; i < len; i++) {
        v = v << 8 | p[i];
    }
    return v;
}

static const char *incoming_status(QTestState *qts)
{
    static char st[32];
    int i;

    for (i = 0; i < 20000; i++) {
        QDict *rsp = qtest_qmp(qts, "{'execute': 'query-migrate'}");
        QDict *ret = qdict_get_qdict(rsp, "return");
        g_strlcpy(st, ret && qdict_haskey(ret, "status") ? qdict_get_str(ret, "status") : "",
                  sizeof(st));
        qobject_unref(rsp);
        if (!strcmp(st, "completed") || !strcmp(st, "failed")) {
            return st;
        }
        g_usleep(1000);
    }
    return "timeout";
}

static void test_vmstate_refuses(void)
{
    static const uint8_t mark[MIG_MARK_LEN] = {
        0x01, 0xa7, 0x5c, 0, 0, 0, 0x01, 0, 0, 0, 0x04, 0xd2, 0xe9,
    };
    const int w1 = MIG_WID0 + MIG_WID_SIZE;
    const MigPatch cases[] = {
        { "status ring not on 16-byte records (init 0x7fd8, head = tail 0x7ff7)",
          w1 + 89, 2, 0x7fd8, w1 + 95, 2, 0x7ff7 },
        { "status tail outside its ring", w1 + 95, 2, 0x0300 },
        { "LH Buffer tail not on an entry", MIG_WID0 + 87, 2, 0x0fff },
        { "LH Buffer head outside the buffer", MIG_WID0 + 85, 2, 0x2000 },
        { "LHS slot whose entry is outside the LH Buffer", MIG_WID0 + 110, 1, 1,
          MIG_WID0 + 114, 2, 0x2000 },
        { "a copy that never ends (2^40 bytes)", MIG_EXEC, 1, 1, MIG_EXEC + 39, 8,
          1ULL << 40 },
        { "an executor in no state the code has (started = 3)", MIG_EXEC, 1, 1,
          MIG_EXEC + 2, 1, 3 },
        /* timing=thesis saves a request whose last data is read and whose
         * step waits for the Window Controller's timer (a VL, or a remote
         * request's last packet) */
        { "an executor whose last data is read (started = 2, timing=thesis)", MIG_EXEC, 1, 1,
          MIG_EXEC + 2, 1, 2, true },
        { "a FIFO entry of WID 7", MIG_FCOUNT, 4, 1, MIG_FIFO + 25, 1, 7 },
        { "an AMT entry with bits no register write sets", 16 + 2 * 5, 2, 0xffff },
        { "SO-DIMM Capacity 0xff", 3, 4, 0xff },
        { "an SMA LID and link state (ignored: re-read from the port)", 13, 2, 0x1234, 15,
          1, 3, true },
    };
    const char *args = "-device dimmnet2,id=dn";
    QTestState *src = dn2q_vm_start("q35", "%s", args);
    g_autofree char *dir = g_dir_make_tmp("dn2-migbad-XXXXXX", NULL);
    g_autofree char *file = g_build_filename(dir, "state", NULL);
    g_autofree char *bad = g_build_filename(dir, "bad", NULL);
    g_autofree char *uri = g_strdup_printf("file:%s", file);
    g_autofree char *bad_uri = g_strdup_printf("file:%s", bad);
    g_autofree uint8_t *img = NULL;
    gsize len = 0;
    uint8_t *m = NULL;
    DN2 d;
    size_t i;

    dn2q_open(&d, src, DN2_DEFAULT_BASE0);
    dn2q_board_init(&d, 0x01);
    dn2q_sr_wr(&d, DN2_SR_MTU, 0x04);
    dn2q_sr_wr(&d, DN2_SR_LID, 0xd2e9);
    dn2q_set_pgids(&d, 0xa7, 0x5c);
    dn2q_status_setup(&d, 1, 0x0400, 0x40);
    qtest_qmp_assert_success(src, "{'execute': 'migrate', 'arguments': {'uri': %s}}", uri);
    wait_migration(src, "outgoing");
    qtest_quit(src);
    g_assert_true(g_file_get_contents(file, (gchar **)&img, &len, NULL));
    m = memmem(img, len, mark, sizeof(mark));
    EXPECT_TRUE(m && (size_t)(m - img) + MIG_EXEC + 47 < len,
                "the board's section is found in the stream");
    if (!m || (size_t)(m - img) + MIG_EXEC + 47 >= len) {
        goto out;
    }
    EXPECT_HEX(get_be(m + w1 + 89, 2), 0x0400, "layout check: WID 1 Status Initial Address");
    EXPECT_HEX(get_be(m + w1 + 91, 2), 0x40, "layout check: WID 1 Status Area Size");
    if (get_be(m + w1 + 89, 2) != 0x0400) {
        goto out;                   /* the layout moved: update the offsets above */
    }
    for (i = 0; i < G_N_ELEMENTS(cases); i++) {
        const MigPatch *c = &cases[i];
        g_autofree uint8_t *copy = g_memdup2(img, len);
        uint8_t *cm = copy + (m - img);
        QTestState *dst;
        const char *st;

        put_be(cm + c->off, c->len, c->val);
        if (c->len2) {
            put_be(cm + c->off2, c->len2, c->val2);
        }
        g_assert_true(g_file_set_contents(bad, (char *)copy, len, NULL));
        dst = dn2q_vm_start("q35", "%s -incoming defer", args);
        qtest_qmp_assert_success(dst, "{'execute': 'migrate-incoming', 'arguments': "
                                 "{'uri': %s, 'exit-on-error': false}}", bad_uri);
        st = incoming_status(dst);
        EXPECT_TRUE(!strcmp(st, c->accepted ? "completed" : "failed"),
                    "%s: incoming migration %s (wanted %s)", c->what, st,
                    c->accepted ? "completed" : "failed");
        if (c->accepted) {
            EXPECT_HEX(qtest_readq(dst, DN2_DEFAULT_BASE0 + DN2_SR_BASE + DN2_SR_SMA), 0,
                       "%s: the SMA reads the live port (no cable), not the stream", c->what);
        } else {
            /* still alive and answering */
            EXPECT_HEX(qtest_readq(dst, DN2_DEFAULT_BASE0 + DN2_SR_BASE + DN2_SR_SMA), 0,
                       "%s: the destination still answers", c->what);
        }
        qtest_quit(dst);
    }
out:
    unlink(file);
    unlink(bad);
    rmdir(dir);
}

static void test_vmstate_stalled(void)
{
    const char *args = "-device dimmnet2,id=dn,sodimm-size=4M";
    QTestState *src = dn2q_vm_start("q35", "%s", args), *dst;
    DN2 d;
    Regs r0, r1;
    uint8_t data[64];
    int k;

    dn2q_open(&d, src, DN2_DEFAULT_BASE0);
    dn2q_board_init(&d, 0x01);
    stall(&d, 0);
    for (k = 0; k < 16; k++) {
        dn2q_doorbell(&d, 0, 0, dn2_req_upper(0, 0x100 * k),
                      dn2_req_lower(DN2_OP_VS, 0, 0, 0, 0, 0, 8));
    }
    dn2q_doorbell(&d, 1, 0, dn2_req_upper(0, 0), dn2_req_lower(DN2_OP_VS, 0, 0, 0, 0, 0, 8));
    regs_take(&d, &r0);
    EXPECT_HEX(r0.cs[0] & (DN2_CS_FIFO_AFULL | DN2_CS_REQ_PENDING), DN2_CS_FIFO_AFULL,
               "source: FIFO full");
    EXPECT_HEX(r0.cs[1] & (DN2_CS_FIFO_AFULL | DN2_CS_REQ_PENDING),
               DN2_CS_FIFO_AFULL | DN2_CS_REQ_PENDING, "source: WID 1 request parked");

    dst = migrate_via_file(src, args);
    qtest_quit(src);
    dn2q_open(&d, dst, DN2_DEFAULT_BASE0);
    regs_take(&d, &r1);
    regs_compare(&r1, &r0);
    /* the FIFO came along: one more request from WID 0 has to wait */
    dn2q_doorbell(&d, 0, 0, dn2_req_upper(0, 0), dn2_req_lower(DN2_OP_VS, 0, 0, 0, 0, 0, 8));
    EXPECT_HEX(dn2q_cs(&d, 0) & DN2_CS_REQ_PENDING, DN2_CS_REQ_PENDING,
               "migrated FIFO is still full");
    dn2q_sr_rd(&d, DN2_SR_CTL_RESET);
    dn2q_board_init(&d, 0x01);
    dn2q_pattern(data, sizeof(data), 261);
    qtest_memwrite(dst, dn2q_ww_addr(&d, 0, 0), data, sizeof(data));
    vs(&d, 0, 0, 0x40000, sizeof(data));
    sd_check(&d, 0, 0x40000, data, sizeof(data), "board works after migration + reset");
    EXPECT_HEX(dn2q_pcf(&d, 0, DN2_PC_VS), 1, "only one VS ran");
    qtest_quit(dst);
}

/* ------------------------------------------------------------------ */
/* Hostile input                                                       */
/* ------------------------------------------------------------------ */

/*
 * Accesses that run past the end of a buffer into the next region (4 and
 * 8 bytes at the last 2, 4 and 6 bytes of each buffer, through the qtest
 * path, which does not split them): QEMU stays up and the bytes inside the
 * buffer read back right.  The Prefetch Window and LH Buffer used to be
 * ROM devices, whose reads QEMU did not clamp at the region's end: a read
 * there copied past the RAM block and crashed QEMU (found by soak.sh).
 */
static void test_straddle(void)
{
    /* DN2_SR_BASE: the end of the User Registers, a ROM device with
     * read-mirror=on (QEMU does not clamp a direct read of one) */
    static const uint32_t ends[] = { DN2_PW_BASE, DN2_LLCM_BASE, DN2_LHB_BASE, DN2_UR_BASE,
                                     DN2_SR_BASE };
    QTestState *qts = dn2q_vm_start("q35", "-device dimmnet2");
    DN2 d;
    unsigned i, k;

    dn2q_open(&d, qts, DN2_DEFAULT_BASE0);
    for (i = 0; i < G_N_ELEMENTS(ends); i++) {
        for (k = 2; k <= 6; k += 2) {
            uint64_t a = DN2_DEFAULT_BASE0 + ends[i] - k;
            (void)qtest_readl(qts, a);
            (void)qtest_readq(qts, a);
            qtest_writel(qts, a, 0x5a5a5a5a);
        }
    }
    /* still alive, and answering */
    EXPECT_HEX(dn2q_sr_rd(&d, DN2_SR_SMA), 0, "QEMU still answers after straddling reads");
    qtest_quit(qts);
}

static void test_fuzz(void)
{
    QTestState *qts = dn2q_vm_start("q35", "-device dimmnet2,id=dn,sodimm-size=4M");
    GRand *r = g_rand_new_with_seed(0xd1aa2007);
    static const uint8_t local_ops[] = {
        DN2_OP_VL, DN2_OP_VLS, DN2_OP_VLI, DN2_OP_VS, DN2_OP_VSS, DN2_OP_VSI,
    };
    DN2 d;
    int i;
    uint8_t junk[64];

    dn2q_open(&d, qts, DN2_DEFAULT_BASE0);
    for (i = 0; i < 6000; i++) {
        uint32_t kind = g_rand_int_range(r, 0, 100);
        uint64_t v = ((uint64_t)g_rand_int(r) << 32) | g_rand_int(r);
        int wid = g_rand_int_range(r, 0, 2);

        switch (g_rand_int_range(r, 0, 4)) {
        case 0:
            v &= 0xff;
            break;
        case 1:
            v &= 0xffffffff;
            break;
        default:
            break;
        }
        if (i % 500 == 0) {
            dn2q_sr_wr(&d, DN2_SR_SDIMM_INIT, 1);       /* keep primitives reachable */
        }
        if (kind < 30) {
            dn2q_ur_wr(&d, wid, g_rand_int_range(r, 0, DN2_UR_PAGE) & ~7, v);
        } else if (kind < 40) {
            dn2q_sr_wr(&d, g_rand_int_range(r, 0, DN2_SR_PAGE) & ~7, v);
        } else if (kind < 70) {
            /* structured doorbell: a local primitive with random fields */
            uint8_t op = g_rand_boolean(r) ? local_ops[g_rand_int_range(r, 0, 6)]
                                           : (uint8_t)g_rand_int_range(r, 0, 32);
            uint32_t src, dst, arg;
            static const uint32_t picks[] = { 0, 0x1ff, 0x7ff, 0x800, 0x1fffff, 0x200000,
                                              0xffffffff, 0x80000000 };
            src = g_rand_boolean(r) ? g_rand_int_range(r, 0, 0x800)
                                    : g_rand_boolean(r) ? picks[g_rand_int_range(r, 0, 8)]
                                                        : g_rand_int(r);
            dst = g_rand_boolean(r) ? g_rand_int_range(r, 0, 0x200000)
                                    : g_rand_boolean(r) ? picks[g_rand_int_range(r, 0, 8)]
                                                        : g_rand_int(r);
            arg = g_rand_boolean(r) ? g_rand_int_range(r, 0, 0x1000) : g_rand_int(r);
            dn2q_ur_wr(&d, wid, DN2_UR_CMD_EX, v);
            dn2q_doorbell(&d, wid, g_rand_int_range(r, 0, 2), dn2_req_upper(src, dst),
                          dn2_req_lower(op, g_rand_int_range(r, 0, 8),
                                        g_rand_int_range(r, 0, 256), g_rand_int_range(r, 0, 4096),
                                        g_rand_int_range(r, 0, 2), g_rand_int_range(r, 0, 2),
                                        arg));
        } else if (kind < 80) {
            /* odd-size or misaligned register access */
            uint64_t a = d.base + (g_rand_boolean(r) ? DN2_UR_BASE : DN2_SR_BASE) +
                         g_rand_int_range(r, 0, 2 * DN2_UR_PAGE);
            switch (g_rand_int_range(r, 0, 6)) {
            case 0: qtest_writeb(qts, a, v); break;
            case 1: qtest_writew(qts, a & ~1ULL, v); break;
            case 2: qtest_writel(qts, a & ~3ULL, v); break;
            case 3: qtest_readb(qts, a); break;
            case 4: qtest_readw(qts, a & ~1ULL); break;
            default: qtest_readl(qts, a & ~3ULL); break;
            }
        } else if (kind < 92) {
            /* reads of any register, including Controller Reset */
            if (g_rand_boolean(r)) {
                dn2q_ur_rd(&d, wid, g_rand_int_range(r, 0, DN2_UR_PAGE) & ~7);
            } else {
                dn2q_sr_rd(&d, g_rand_int_range(r, 0, DN2_SR_PAGE) & ~7);
            }
        } else {
            /* buffer writes anywhere in the four buffer regions */
            uint64_t a = d.base + g_rand_int_range(r, 0, 4 * DN2_REGION_SIZE - sizeof(junk));
            dn2q_pattern(junk, sizeof(junk), i);
            qtest_memwrite(qts, a, junk, g_rand_int_range(r, 1, sizeof(junk)));
        }
    }
    g_rand_free(r);
    /* still alive and still working after a Controller Reset */
    EXPECT_TRUE(qtest_probe_child(qts), "QEMU survived the register fuzzing");
    dn2q_sr_rd(&d, DN2_SR_CTL_RESET);
    EXPECT_HEX(dn2q_mstate(&d), 0, "idle after Controller Reset");
    EXPECT_HEX(dn2q_cs(&d, 0), DN2_CS_STATUS_EMPTY, "UR0 clean after Controller Reset");
    EXPECT_HEX(dn2q_cs(&d, 1), DN2_CS_STATUS_EMPTY, "UR1 clean after Controller Reset");
    dn2q_board_init(&d, 0x01);
    round_trip(&d, 0, 271, 0x1000);
    round_trip(&d, 1, 272, 0x1ffe00);
    EXPECT_HEX(dn2q_cs(&d, 0), CS_BASE | DN2_CS_WW_DONE(1), "UR0 status after the round trip");
    qtest_quit(qts);
}

int main(int argc, char **argv)
{
    unsigned i;

    g_test_init(&argc, &argv, NULL);
    g_test_set_nonfatal_assertions();

    qtest_add_func("/dimmnet2/regs/reset-values", test_reset_values);
    qtest_add_func("/dimmnet2/regs/ring-pointers", test_ring_pointers);
    qtest_add_func("/dimmnet2/regs/access-rules", test_access_rules);
    qtest_add_func("/dimmnet2/bringup/refused-before-init", test_refused_before_init);
    qtest_add_func("/dimmnet2/bringup/init-needs-bit0", test_init_needs_bit0);
    qtest_add_func("/dimmnet2/bringup/requests-after-refusal", test_requests_after_refusal);
    qtest_add_func("/dimmnet2/prim/dsh-example", test_dsh_example);
    qtest_add_func("/dimmnet2/prim/contiguous/vs", test_contiguous_vs);
    qtest_add_func("/dimmnet2/prim/contiguous/vl", test_contiguous_vl);
    qtest_add_func("/dimmnet2/prim/contiguous/vs-window-end", test_contiguous_vs_window_end);
    qtest_add_func("/dimmnet2/prim/contiguous/vs-new-request-clears",
                   test_contiguous_vs_new_request_clears);
    qtest_add_func("/dimmnet2/prim/contiguous/vl-window-end", test_contiguous_vl_window_end);
    qtest_add_func("/dimmnet2/prim/contiguous/vs-area-end", test_contiguous_vs_area_end);
    qtest_add_func("/dimmnet2/prim/contiguous/vl-area-end", test_contiguous_vl_area_end);
    for (i = 0; i < G_N_ELEMENTS(str_cases); i++) {
        qtest_add_data_func(str_cases[i].path, &str_cases[i], test_strided_case);
    }
    qtest_add_func("/dimmnet2/prim/small-sodimm", test_small_sodimm);
    qtest_add_func("/dimmnet2/prim/wid-isolation", test_wid_isolation);
    qtest_add_func("/dimmnet2/prim/pw-flags", test_pw_flags);
    qtest_add_func("/dimmnet2/prim/primitive-counter", test_prim_counter);
    qtest_add_func("/dimmnet2/qom/stats", test_stats_property);
    for (i = 0; i < G_N_ELEMENTS(copy_cases); i++) {
        qtest_add_data_func(copy_cases[i].path, &copy_cases[i], test_copy_case);
    }
    qtest_add_func("/dimmnet2/prim/copy-large", test_copy_large);
    qtest_add_func("/dimmnet2/prim/copy-shrink", test_copy_shrink);
    qtest_add_func("/dimmnet2/prim/command-ex", test_command_ex);
    qtest_add_func("/dimmnet2/fifo/depth16", test_fifo);
    qtest_add_func("/dimmnet2/fifo/depth4", test_fifo_depth4);
    qtest_add_func("/dimmnet2/fifo/ignored-requests", test_ignored_requests);
    qtest_add_func("/dimmnet2/reset/controller-reset", test_controller_reset_scope);
    qtest_add_func("/dimmnet2/reset/system-reset", test_system_reset);
    qtest_add_func("/dimmnet2/platform/acpi-q35", test_acpi_q35);
    qtest_add_func("/dimmnet2/platform/pc", test_pc_machine);
    qtest_add_func("/dimmnet2/platform/two-boards", test_two_boards);
    qtest_add_func("/dimmnet2/platform/explicit-base", test_explicit_base);
    qtest_add_func("/dimmnet2/platform/bad-config", test_bad_config);
    qtest_add_func("/dimmnet2/platform/device-help", test_device_help);
    qtest_add_func("/dimmnet2/memdev/file-interleave", test_memdev_file);
    qtest_add_func("/dimmnet2/migration/vmstate", test_vmstate);
    qtest_add_func("/dimmnet2/migration/vmstate-stalled", test_vmstate_stalled);
    qtest_add_func("/dimmnet2/migration/refuses-bad-fields", test_vmstate_refuses);
    qtest_add_func("/dimmnet2/hostile/fuzz", test_fuzz);
    qtest_add_func("/dimmnet2/hostile/straddle", test_straddle);
    return g_test_run();
}
