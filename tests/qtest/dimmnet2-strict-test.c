/*
 * strict=on: deliberately wrong guest programs, one rule broken each, that
 * work on a forgiving board and are each reported, by name, by a strict one
 * (docs/device-model.md, "Strict mode").  With strict=on the Window
 * Controller runs on the virtual clock, which only qtest's clock_step moves
 * here: every wait below steps it.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "libqtest.h"
#include "qemu/bswap.h"
#include "qobject/qdict.h"
#include "qobject/qlist.h"
#include "qobject/qstring.h"
#include "dimmnet2-qtest-util.h"

#define SD_BYTES   (8 * MiB_)
#define LID        1
#define MY_CLID    dn2_lid_to_clid(LID)
#define PGID       0x42
#define STEP_NS    1000         /* strict-delay-ns of these boards */
#define MAX_STEPS  20000

typedef struct Rig {
    DN2 d;
    DN2SdFile mem;
    bool strict;
} Rig;

/* Move the virtual clock (strict boards only). */
static void settle(Rig *r, int steps)
{
    int i;

    for (i = 0; r->strict && i < steps; i++) {
        qtest_clock_step(r->d.qts, STEP_NS);
    }
}

/* Wait for the family's Primitive Counter, stepping the clock. */
static bool wait_pc(Rig *r, int wid, int fam, unsigned target, const char *what)
{
    int i;

    for (i = 0; i < MAX_STEPS; i++) {
        if (dn2q_pcf(&r->d, wid, fam) == (target & DN2_PC_MASK)) {
            return true;
        }
        settle(r, 1);
    }
    g_test_message("FAIL %s: Primitive Counter field %d = %u, wanted %u", what, fam,
                   dn2q_pcf(&r->d, wid, fam), target);
    g_test_fail();
    return false;
}

/* Issue once Controller Status bits 0 and 2 are clear. */
static void issue(Rig *r, int wid, uint64_t upper, uint64_t lower)
{
    int i;

    for (i = 0; i < MAX_STEPS && (dn2q_cs(&r->d, wid) &
                                  (DN2_CS_REQ_PENDING | DN2_CS_FIFO_AFULL)); i++) {
        settle(r, 1);
    }
    dn2q_doorbell(&r->d, wid, 0, upper, lower);
}

/* A loopback board with file-backed SO-DIMMs, brought up correctly (the
 * LID register written unless skip_lid). */
static void rig_up(Rig *r, bool strict, bool skip_lid)
{
    g_autofree char *props = g_strdup_printf(",loopback=on%s",
        strict ? ",strict=on,strict-delay-ns=1000" : "");
    int wid, i;

    memset(r, 0, sizeof(*r));
    r->strict = strict;
    dn2q_sdfile_create(&r->mem, SD_BYTES, "dn2-strict-XXXXXX", true);
    dn2q_open(&r->d, dn2q_start_memdev(&r->mem, props), DN2_DEFAULT_BASE0);
    unlink(r->mem.path);
    dn2q_sdimm_init(&r->d, 0x01);
    for (i = 0; i < MAX_STEPS && !(dn2q_cs(&r->d, 0) & DN2_CS_SDIMM_READY); i++) {
        settle(r, 1);
    }
    if (!skip_lid) {
        dn2q_sr_wr(&r->d, DN2_SR_LID, LID);
    }
    dn2q_set_pgids(&r->d, PGID, PGID);
    dn2q_sr_wr(&r->d, DN2_SR_MTU, DN2Q_MTU_2K);
    for (wid = 0; wid < 2; wid++) {
        dn2q_status_setup(&r->d, wid, 0x1000, 0x40);
    }
}

static void rig_down(Rig *r)
{
    qtest_quit(r->d.qts);
    dn2q_sdfile_destroy(&r->mem);
}

/* The strict-violations list has an entry of this kind (or, forgiving,
 * has none at all). */
static bool reported(Rig *r, const char *kind)
{
    QDict *rsp = qtest_qmp(r->d.qts, "{'execute': 'qom-get', 'arguments': "
                           "{'path': '/machine/peripheral/dn', "
                           "'property': 'strict-violations'}}");
    QList *l = qdict_get_qlist(rsp, "return");
    const QListEntry *e;
    bool found = false;

    for (e = l ? qlist_first(l) : NULL; e; e = qlist_next(e)) {
        const char *line = qstring_get_str(qobject_to(QString, qlist_entry_obj(e)));
        if (!kind || g_str_has_prefix(line, kind)) {
            found = true;
            g_test_message("strict-violations: %s", line);
        }
    }
    qobject_unref(rsp);
    return found;
}

/* Run one wrong program on a forgiving and on a strict board: it works (or
 * at least is not refused) on the first, which reports nothing, and the
 * second names the rule. */
typedef void (*Program)(Rig *r, bool *works);

static void both(Program p, const char *kind, bool skip_lid)
{
    Rig r;
    bool works = false;

    rig_up(&r, false, skip_lid);
    p(&r, &works);
    EXPECT_TRUE(works, "%s: the wrong program works on a forgiving board", kind);
    EXPECT_TRUE(!reported(&r, NULL), "%s: a forgiving board reports nothing", kind);
    rig_down(&r);

    rig_up(&r, true, skip_lid);
    p(&r, &works);
    EXPECT_TRUE(reported(&r, kind), "%s: the strict board reports it by name", kind);
    rig_down(&r);
}

/* 1. Reuse a Write Window without waiting for its request to complete. */
static void prog_ww_reuse(Rig *r, bool *works)
{
    uint8_t a[64], b[64], got[64];

    dn2q_pattern(a, sizeof(a), 1);
    dn2q_pattern(b, sizeof(b), 2);
    qtest_memwrite(r->d.qts, dn2q_ww_addr(&r->d, 0, 0), a, sizeof(a));
    issue(r, 0, dn2_req_upper(0, 0x1000), dn2_req_lower(DN2_OP_VS, 0, 0, 0, 0, 0, 64));
    /* wrong: window 0 rewritten at once, no Primitive Counter check */
    qtest_memwrite(r->d.qts, dn2q_ww_addr(&r->d, 0, 0), b, sizeof(b));
    issue(r, 0, dn2_req_upper(0, 0x2000), dn2_req_lower(DN2_OP_VS, 0, 0, 0, 0, 0, 64));
    wait_pc(r, 0, DN2_PC_VS, 2, "two VS from window 0");
    dn2q_sdfile_get(&r->mem, 0, 0x1000, got, sizeof(got));
    *works = !memcmp(got, a, sizeof(a));
}

static void test_ww_reuse(void)
{
    both(prog_ww_reuse, "ww-reused", false);
}

/* 2. Never write the LID register, then use the network. */
static void prog_no_lid(Rig *r, bool *works)
{
    issue(r, 0, dn2_req_upper(0, 0x1000),
          dn2_req_lower(DN2_OP_RVS, 0, 0, MY_CLID, 1, 0, 256));
    settle(r, 50);
    *works = !(dn2q_cs(&r->d, 0) & DN2_CS_REQ_ERROR);
    wait_pc(r, 0, DN2_PC_RVS, r->strict ? 0 : 1, "the RVS");
}

static void test_no_lid(void)
{
    both(prog_no_lid, "no-lid", true);
}

/* 3. Elements under 4 bytes. */
static void prog_small_element(Rig *r, bool *works)
{
    issue(r, 0, dn2_req_upper(0, 0x1000),
          dn2_req_lower(DN2_OP_VSS, DN2_DTYPE_2B, 16, 0, 0, 0, 8));
    settle(r, 50);
    *works = !(dn2q_cs(&r->d, 0) & DN2_CS_REQ_ERROR);
}

static void test_small_element(void)
{
    both(prog_small_element, "small-element", false);
}

/* 4. A SO-DIMM offset off the 4-byte grain. */
static void prog_misaligned(Rig *r, bool *works)
{
    issue(r, 0, dn2_req_upper(0x1002, 0), dn2_req_lower(DN2_OP_VL, 0, 0, 0, 0, 0, 64));
    settle(r, 50);
    *works = !(dn2q_cs(&r->d, 0) & DN2_CS_REQ_ERROR);
}

static void test_misaligned(void)
{
    both(prog_misaligned, "misaligned", false);
}

/* 5. Command Ex written before Command Upper (the thesis's order is Upper,
 * Ex, Lower). */
static void prog_ex_order(Rig *r, bool *works)
{
    dn2q_ur_wr(&r->d, 0, DN2_UR_CMD_EX_FLAG, 1);
    dn2q_ur_wr(&r->d, 0, DN2_UR_CMD_EX, dn2_req_ex(DN2_OP_VS, 0, 0, 64));
    dn2q_ur_wr(&r->d, 0, DN2_UR_CMD0_UPPER, dn2_req_upper(0, 0x1000));
    dn2q_ur_wr(&r->d, 0, DN2_UR_CMD0_LOWER, dn2_req_lower(DN2_OP_VS, 0, 0, 0, 0, 0, 64));
    wait_pc(r, 0, DN2_PC_VS, 1, "the VS");
    dn2q_ur_wr(&r->d, 0, DN2_UR_CMD_EX_FLAG, 0);
    *works = !(dn2q_cs(&r->d, 0) & DN2_CS_REQ_ERROR);
}

static void test_ex_order(void)
{
    both(prog_ex_order, "ex-order", false);
}

/* 6. Two requests back to back after one Controller Status read, the
 * second while the Request FIFO is almost full: the other process of the
 * board (here WID 1, whose requests fill the FIFO on the paced board)
 * could have taken the last entries in between, and then the second
 * request would overrun the first. */
static void prog_unpolled(Rig *r, bool *works)
{
    const uint64_t vl = dn2_req_lower(DN2_OP_VL, 0, 0, 0, 0, 0, 64);
    int i, n = 16 - 2;                  /* fifo-depth 16: leave two entries */

    for (i = 0; i < n; i++) {
        issue(r, 1, dn2_req_upper(0x1000, (uint32_t)(i % 4) * DN2_WIN_SIZE), vl);
    }
    issue(r, 0, dn2_req_upper(0x1000, 0), vl);            /* polled first */
    /* wrong: no Controller Status read before the second request */
    dn2q_doorbell(&r->d, 0, 0, dn2_req_upper(0x1000, DN2_WIN_SIZE), vl);
    wait_pc(r, 0, DN2_PC_VL, 2, "WID 0's two VLs");
    wait_pc(r, 1, DN2_PC_VL, (unsigned)n, "WID 1's VLs");
    *works = !(dn2q_cs(&r->d, 0) & DN2_CS_REQ_ERROR);
}

static void test_unpolled(void)
{
    both(prog_unpolled, "unpolled", false);
}

/* 7. A network primitive before bring-up: the PGID of WID 1 is never
 * written. */
static void prog_not_up(Rig *r, bool *works)
{
    dn2q_sr_rd(&r->d, DN2_SR_CTL_RESET);
    dn2q_sdimm_init(&r->d, 0x01);
    settle(r, 10);
    issue(r, 1, dn2_req_upper(0, 0x1000),
          dn2_req_lower(DN2_OP_RVS, 0, 0, MY_CLID, 0, 0, 64));
    settle(r, 50);
    *works = !(dn2q_cs(&r->d, 1) & DN2_CS_REQ_ERROR);
}

static void test_not_up(void)
{
    both(prog_not_up, "not-up", false);
}

/* 8. VL of an LHS message's overflow before Complete: WID 1's status ring
 * has room for one record, so the message's first packet lands (Valid)
 * and the rest waits; the VL is held (both modes), and strict reports it. */
static void prog_early_lhs_vl(Rig *r, bool *works)
{
    uint8_t msg[600];
    uint64_t l0 = 0, lo, up;
    int i;

    dn2q_ur_wr(&r->d, 1, DN2_UR_IPUSH_AREA_SIZE, 32);
    dn2q_amt_setup(&r->d, 1, 0x100, 0, LID, 0x4000, 8192);
    dn2q_status_setup(&r->d, 1, 0x1000, 0x01);              /* 3 records */
    for (i = 0; i < 2; i++) {                                /* two used */
        issue(r, 0, dn2_req_upper(0x100000, 0x200000),
              dn2_req_lower(DN2_OP_RVS, 0, 0, MY_CLID, 1, 1, 64));
    }
    dn2q_pattern(msg, sizeof(msg), 7);
    stq_le_p(msg, dn2_envelope(1, 2, 3));
    dn2q_sdfile_put(&r->mem, 0, 0x300000, msg, sizeof(msg));
    dn2q_sr_wr(&r->d, DN2_SR_MTU, DN2Q_MTU_256);
    issue(r, 0, dn2_req_upper(0x300000, 0),
          dn2_req_lower(DN2_OP_LHSV1, 0, 0, MY_CLID, 1, 1, sizeof(msg)));
    for (i = 0; i < MAX_STEPS && !(l0 & DN2_LH_VALID); i++) {
        l0 = qtest_readq(r->d.qts, dn2q_lhb_addr(&r->d, 1, 0));
        settle(r, 1);
    }
    /* wrong: VL of the overflow as soon as Valid toggled, reading at once */
    issue(r, 1, dn2_req_upper(l0 >> 32, 0), dn2_req_lower(DN2_OP_VL, 0, 0, 0, 0, 0, 512));
    settle(r, 50);
    for (i = 0; i < 3; i++) {
        dn2q_status_take(&r->d, 1, &lo, &up);
    }
    wait_pc(r, 1, DN2_PC_VL, 1, "the held VL completes once the message is in");
    *works = true;
}

static void test_early_lhs_vl(void)
{
    both(prog_early_lhs_vl, "early-lhs-vl", false);
}

/* Strict timing: nothing runs inside the doorbell, and a VL's Prefetch
 * Window flags come on one line at a time. */
static void test_paced(void)
{
    Rig r;
    uint64_t seen = 0, f;
    int i;

    rig_up(&r, true, false);
    dn2q_doorbell(&r.d, 0, 0, dn2_req_upper(0, 0x1000),
                  dn2_req_lower(DN2_OP_VS, 0, 0, 0, 0, 0, 64));
    EXPECT_HEX(dn2q_pcf(&r.d, 0, DN2_PC_VS), 0, "the VS has not run in its doorbell");
    EXPECT_TRUE(!(dn2q_cs(&r.d, 0) & DN2_CS_WW_DONE(0)), "WW0 not done yet");
    wait_pc(&r, 0, DN2_PC_VS, 1, "the VS runs after the delay");
    dn2q_doorbell(&r.d, 0, 0, dn2_req_upper(0, 0), dn2_req_lower(DN2_OP_VL, 0, 0, 0, 0, 0, 512));
    for (i = 0; i < 100 && (dn2q_pwf(&r.d, 0) & 0xf) != 0xf; i++) {
        f = dn2q_pwf(&r.d, 0) & 0xf;
        seen |= 1ULL << f;
        settle(&r, 1);
    }
    EXPECT_HEX(dn2q_pwf(&r.d, 0) & 0xf, 0xf, "all four lines arrive");
    EXPECT_TRUE(seen & (1ULL << 0x1) && seen & (1ULL << 0x3) && seen & (1ULL << 0x7),
                "the flags came on line by line (seen 0x%" PRIx64 ")", seen);
    EXPECT_TRUE(!reported(&r, NULL), "a correct program is not reported");
    rig_down(&r);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_set_nonfatal_assertions();
    qtest_add_func("/dimmnet2-strict/paced", test_paced);
    qtest_add_func("/dimmnet2-strict/ww-reused", test_ww_reuse);
    qtest_add_func("/dimmnet2-strict/no-lid", test_no_lid);
    qtest_add_func("/dimmnet2-strict/small-element", test_small_element);
    qtest_add_func("/dimmnet2-strict/misaligned", test_misaligned);
    qtest_add_func("/dimmnet2-strict/ex-order", test_ex_order);
    qtest_add_func("/dimmnet2-strict/unpolled", test_unpolled);
    qtest_add_func("/dimmnet2-strict/not-up", test_not_up);
    qtest_add_func("/dimmnet2-strict/early-lhs-vl", test_early_lhs_vl);
    return g_test_run();
}
