/*
 * qtest: several DIMMnet-2 boards, each in its own QEMU, on one UDP fabric
 * through a real dn2-switch (docs/fabric.md, docs/device-model.md "The port
 * and the network primitives"): the primitives across boards.  LIDs and
 * the link, RVS, RVL, IPUSH, LHS and BOTF from one board into another's
 * memory and status ring, three boards all to all, multicast, and the
 * receiver's protection (PGID, missing processes).
 *
 * The other fabric qtests: dimmnet2-fabric-reliability-test (back-pressure,
 * faults, restarts, resets, coalescing), dimmnet2-fabric-hostile-test
 * (hostile datagrams, the cluster secret), dimmnet2-fabric-vt-test (virtual
 * time).  What they share, and how a case runs, is in
 * dimmnet2-fabric-util.h; single-QEMU loopback tests of each primitive are
 * in dimmnet2-remote-test.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include "libqtest.h"
#include "qobject/qdict.h"
#include "qobject/qlist.h"
#include "qobject/qstring.h"
#include "qemu/bswap.h"
#include "qemu/atomic.h"
#include "dimmnet2-fabric-util.h"

/* ------------------------------------------------------------------ */
/* Link-up: LIDs, link state, SMA software reset                       */
/* ------------------------------------------------------------------ */

static void test_link_up(void)
{
    Fab f;
    int i, j;
    uint16_t lid_a;
    uint8_t data[3000];

    if (!fab_up(&f, 3, NULL, 32 * MiB_, NULL)) {
        goto out;
    }
    for (i = 0; i < 3; i++) {
        uint64_t v = dn2q_sr_rd(&f.b[i].d, DN2_SR_SMA);
        EXPECT_HEX(dn2_sma_link(v), DN2_SMA_LINK_READY, "board %c SMA [17:16]",
                   f.b[i].name);
        EXPECT_HEX((v & ~(DN2_SMA_LID_MASK | DN2_SMA_LINK_MASK)), 0, "board %c SMA [63:18]", f.b[i].name);
        EXPECT_TRUE(dn2_lid_assignable(f.b[i].lid), "board %c LID 0x%x is assignable",
                    f.b[i].name, f.b[i].lid);
        for (j = 0; j < i; j++) {
            EXPECT_TRUE(f.b[i].lid != f.b[j].lid, "boards %c and %c have distinct LIDs "
                        "(0x%x)", f.b[i].name, f.b[j].name, f.b[i].lid);
        }
    }

    /* SMA software reset of A: the link renegotiates, the switch gives the
     * GUID its LID again, and the others accept A's new incarnation. */
    lid_a = f.b[0].lid;
    dn2q_sr_wr(&f.b[0].d, DN2_SR_SMA, 1);
    if (board_wait_link(&f.b[0], T_SHORT)) {
        EXPECT_HEX(f.b[0].lid, lid_a, "board A keeps its LID after an SMA reset");
    }
    /* A's new epoch reaches the others in the next routing table; what
     * they queued for A's old incarnation would be dropped (peer reset) */
    g_usleep(100 * 1000);
    dn2q_pattern(data, sizeof(data), 1);
    dn2q_sdfile_put(&f.b[1].mem, 0, 0x1000, data, sizeof(data));
    rreq(&f.b[1], 0, 0, DN2_OP_RVS, 0, 0, f.b[0].lid, 0, 1, sizeof(data), 0x1000, 0x2000);
    st_expect(&f.b[0], 0, DN2_OP_RVS, 0, 0, f.b[1].lid, 0, sizeof(data), 0x2000, T_SHORT,
              "RVS B->A after A's SMA reset");
    sd_expect(&f.b[0], 0, 0x2000, data, sizeof(data), "RVS B->A after A's SMA reset");
    rreq(&f.b[0], 0, 0, DN2_OP_RVS, 0, 0, f.b[2].lid, 0, 1, sizeof(data), 0x2000, 0x3000);
    st_expect(&f.b[2], 0, DN2_OP_RVS, 0, 0, f.b[0].lid, 0, sizeof(data), 0x3000, T_SHORT,
              "RVS A->C after A's SMA reset");
    sd_expect(&f.b[2], 0, 0x3000, data, sizeof(data), "RVS A->C after A's SMA reset");
out:
    fab_down(&f);
}

/* ------------------------------------------------------------------ */
/* RVS family across boards                                            */
/* ------------------------------------------------------------------ */

static bool rvs_up(Fab *f, Board **A, Board **B, uint8_t *src)
{
    if (!fab_up_ab(f, NULL, 32 * MiB_, NULL, A, B)) {
        return false;
    }
    dn2q_pattern(src, 64 * KiB_, 2);
    dn2q_sdfile_put(&(*A)->mem, 0, 0x10000, src, 64 * KiB_);
    dn2q_sdfile_put(&(*A)->mem, 1, 0x10000, src, 64 * KiB_);
    return true;
}

/* After each case: neither board reports an error. */
static void rvs_no_error(Board *A, Board *B)
{
    EXPECT_HEX(dn2q_cs(&A->d, 0) & (DN2_CS_REQ_ERROR | DN2_CS_RX_OVF | DN2_CS_RX_ERR_MASK), 0,
               "sender Controller Status: no error");
    EXPECT_HEX(dn2q_cs(&B->d, 0) & (DN2_CS_REQ_ERROR | DN2_CS_RX_OVF | DN2_CS_RX_ERR_MASK), 0,
               "receiver Controller Status: no error");
}

static void rvs_contiguous(Board *A, Board *B, const uint8_t *src)
{
    unsigned pkts0;
    const char *w;

    /* RVS, contiguous, 3 packets at MTU 4096, odd offsets and size */
    w = "RVS 10000 bytes A->B";
    pkts0 = dn2q_ur_rd(&B->d, 0, DN2_UR_PKT_COUNTER);
    rreq(A, 0, 0, DN2_OP_RVS, 0, 0, B->lid, 0, 1, 10000, 0x10005, 0x200003);
    st_expect(B, 0, DN2_OP_RVS, 0, 0, A->lid, 0, 10000, 0x200003, T_SHORT, w);
    sd_expect(B, 0, 0x200003, src + 5, 10000, w);
    sd_expect_zero(B, 0, 0x200000, 3, "bytes before the RVS");
    sd_expect_zero(B, 0, 0x200003 + 10000, 64, "bytes after the RVS");
    EXPECT_HEX(dn2q_ur_rd(&B->d, 0, DN2_UR_PKT_COUNTER) - pkts0, 3,
               "%s: receiver's Packet Counter (3 packets of <= 4096 bytes)", w);
    EXPECT_HEX(dn2q_pcf(&A->d, 0, DN2_PC_RVS), 1, "%s: sender's Primitive Counter RVS", w);
    EXPECT_HEX(dn2q_pcf(&B->d, 0, DN2_PC_RVS), 0, "%s: receiver's Primitive Counter RVS", w);
    st_expect_empty(B, 0, w);
}

static void rvs_wid1(Board *A, Board *B, const uint8_t *src)
{
    const char *w;

    /* WID 1 to WID 1: the record names the sender's WID */
    w = "RVS WID 1 -> WID 1";
    rreq(A, 1, 0, DN2_OP_RVS, 0, 0, B->lid, 1, 1, 100, 0x10100, 0x1000);
    st_expect(B, 1, DN2_OP_RVS, 0, 0, A->lid, 1, 100, 0x1000, T_SHORT, w);
    sd_expect(B, 1, 0x1000, src + 0x100, 100, w);
    sd_expect_zero(B, 0, 0x1000, 100, "WID 0 untouched by an RVS to WID 1");
    st_expect_empty(B, 0, w);
}

static void rvs_eflag(Board *A, Board *B, const uint8_t *src)
{
    const char *w;

    /* no eflag: data, no record; then one with eflag: one record */
    w = "RVS without eflag";
    rreq(A, 0, 0, DN2_OP_RVS, 0, 0, B->lid, 0, 0, 5000, 0x11000, 0x210000);
    sd_wait(B, 0, 0x210000, src + 0x1000, 5000, T_SHORT, w);
    rreq(A, 0, 0, DN2_OP_RVS, 0, 0, B->lid, 0, 1, 8, 0x12000, 0x211000);
    st_expect(B, 0, DN2_OP_RVS, 0, 0, A->lid, 0, 8, 0x211000, T_SHORT,
              "RVS with eflag after one without");
    st_expect_empty(B, 0, w);
}

static void rvs_command1(Board *A, Board *B, const uint8_t *src)
{
    g_autofree uint8_t *got = g_malloc(64 * KiB_);
    const char *w;

    /* Command1: into the receiver's Prefetch Window area */
    w = "RVS through Command1 (PW)";
    rreq(A, 0, 1, DN2_OP_RVS, 0, 0, B->lid, 0, 1, 700, 0x13000, 0x100);
    st_expect(B, 0, DN2_OP_RVS, 0, 0, A->lid, 0, 700, 0x100, T_SHORT, w);
    qtest_memread(B->d.qts, dn2q_pw_addr(&B->d, 0, 0x100), got, 700);
    dn2q_mem_eq(w, got, src + 0x3000, 700, 0x100);
    EXPECT_HEX(dn2q_ur_rd(&B->d, 0, DN2_UR_PW_FLAG), DN2_PWF_ALL, "%s: PW flags", w);
}

static void rvss_one_packet(Board *A, Board *B, const uint8_t *src)
{
    unsigned i;
    const char *w;

    /* RVSS: 200 x 8 bytes to stride 24 (one packet) */
    w = "RVSS 200 x 8 B stride 24";
    rreq(A, 0, 0, DN2_OP_RVSS, DN2_DTYPE_8B, 200, B->lid, 0, 1, 24, 0x14000, 0x220000);
    st_expect(B, 0, DN2_OP_RVSS, DN2_DTYPE_8B, 200, A->lid, 0, 1600, 0x220000, T_SHORT, w);
    for (i = 0; i < 200; i++) {
        g_autofree char *e = g_strdup_printf("%s element %u", w, i);
        sd_expect(B, 0, 0x220000 + i * 24, src + 0x4000 + i * 8, 8, e);
        sd_expect_zero(B, 0, 0x220000 + i * 24 + 8, 16, e);
        if (g_test_failed()) {
            break;
        }
    }
}

static void rvss_packets(Board *A, Board *B, const uint8_t *src)
{
    unsigned pkts0, i;
    const char *w;

    /* RVSS spanning 5 packets: 255 x 64 bytes, stride 100 */
    w = "RVSS 255 x 64 B stride 100 (5 packets)";
    pkts0 = dn2q_ur_rd(&B->d, 0, DN2_UR_PKT_COUNTER);
    rreq(A, 0, 0, DN2_OP_RVSS, DN2_DTYPE_64B, 255, B->lid, 0, 1, 100, 0x10000, 0x240000);
    /* The record is the primitive's: Iteration 255, Size = Total */
    st_expect(B, 0, DN2_OP_RVSS, DN2_DTYPE_64B, 255, A->lid, 0, 255 * 64, 0x240000,
              T_SHORT, w);
    for (i = 0; i < 255; i++) {
        g_autofree char *e = g_strdup_printf("%s element %u", w, i);
        if (!sd_expect(B, 0, 0x240000 + i * 100, src + i * 64, 64, e)) {
            break;
        }
    }
    EXPECT_HEX(dn2q_ur_rd(&B->d, 0, DN2_UR_PKT_COUNTER) - pkts0, 5, "%s: packets", w);
    st_expect_empty(B, 0, w);
}

static void rvsi_list(Board *A, Board *B, const uint8_t *src)
{
    uint32_t list[64];
    unsigned i;
    const char *w;

    /* RVSI: the list lives in the receiver's SO-DIMM */
    w = "RVSI 64 x 4 B through a list on the receiver";
    for (i = 0; i < 64; i++) {
        uint32_t le;
        list[i] = ((i * 37) % 64) * 12;
        le = cpu_to_le32(list[i]);
        dn2q_sdfile_put(&B->mem, 0, 0x300000 + i * 4, &le, 4);
    }
    rreq(A, 0, 0, DN2_OP_RVSI, DN2_DTYPE_4B, 64, B->lid, 0, 1, 0x300000, 0x15000,
         0x310000);
    st_expect(B, 0, DN2_OP_RVSI, DN2_DTYPE_4B, 64, A->lid, 0, 256, 0x310000, T_SHORT, w);
    for (i = 0; i < 64; i++) {
        g_autofree char *e = g_strdup_printf("%s element %u", w, i);
        if (!sd_expect(B, 0, 0x310000 + list[i], src + 0x5000 + i * 4, 4, e)) {
            break;
        }
    }
}

static void rvs_command_ex(Board *A, Board *B, const uint8_t *src)
{
    g_autofree uint8_t *got = g_malloc(64 * KiB_);
    unsigned i;
    const char *w;

    /* Command Ex: the sender gathers strided (VLS pattern), lands contiguous */
    w = "RVS with a strided local pattern (Command Ex)";
    rreq_ex(A, 0, 0, DN2_OP_RVS, 0, 0, B->lid, 0, 1, 256, 0x16000, 0x320000,
            dn2_req_ex(DN2_OP_VLS, DN2_DTYPE_4B, 64, 12));
    st_expect(B, 0, DN2_OP_RVS, 0, 0, A->lid, 0, 256, 0x320000, T_SHORT, w);
    for (i = 0; i < 64; i++) {
        memcpy(got + i * 4, src + 0x6000 + i * 12, 4);
    }
    sd_expect(B, 0, 0x320000, got, 256, w);
}

static void rvs_zero(Board *A, Board *B, const uint8_t *src)
{
    const char *w;

    /* size 0: a header-only notification (choice #39) */
    w = "RVS of 0 bytes";
    rreq(A, 0, 0, DN2_OP_RVS, 0, 0, B->lid, 0, 1, 0, 0x10000, 0x330000);
    st_expect(B, 0, DN2_OP_RVS, 0, 0, A->lid, 0, 0, 0x330000, T_SHORT, w);
    sd_expect_zero(B, 0, 0x330000, 64, w);
}

static void rvs_1mib(Board *A, Board *B, const uint8_t *src)
{
    g_autofree uint8_t *big = g_malloc(MiB_);
    const char *w;

    /* 1 MiB in one request (257 packets) */
    w = "RVS 1 MiB";
    dn2q_pattern(big, MiB_, 3);
    dn2q_sdfile_put(&A->mem, 0, 0x400000, big, MiB_);
    rreq(A, 0, 0, DN2_OP_RVS, 0, 0, B->lid, 0, 1, MiB_, 0x400000, 0x500000);
    st_expect(B, 0, DN2_OP_RVS, 0, 0, A->lid, 0, MiB_, 0x500000, T_LONG, w);
    sd_expect(B, 0, 0x500000, big, MiB_, w);
}

/* One RVS-family path per test: A and B up, A's source pattern in place,
 * the path, then neither board reports an error. */
typedef struct RvsCase {
    const char *path;
    void (*run)(Board *A, Board *B, const uint8_t *src);
} RvsCase;

static const RvsCase rvs_cases[] = {
    { "/dimmnet2-fabric/rvs-family/contiguous", rvs_contiguous },
    { "/dimmnet2-fabric/rvs-family/wid1", rvs_wid1 },
    { "/dimmnet2-fabric/rvs-family/eflag", rvs_eflag },
    { "/dimmnet2-fabric/rvs-family/command1-pw", rvs_command1 },
    { "/dimmnet2-fabric/rvs-family/rvss", rvss_one_packet },
    { "/dimmnet2-fabric/rvs-family/rvss-5-packets", rvss_packets },
    { "/dimmnet2-fabric/rvs-family/rvsi", rvsi_list },
    { "/dimmnet2-fabric/rvs-family/command-ex", rvs_command_ex },
    { "/dimmnet2-fabric/rvs-family/zero-bytes", rvs_zero },
    { "/dimmnet2-fabric/rvs-family/1mib", rvs_1mib },
};

static void test_rvs_case(const void *opaque)
{
    const RvsCase *c = opaque;
    Fab f;
    Board *A, *B;
    g_autofree uint8_t *src = g_malloc(64 * KiB_);

    if (rvs_up(&f, &A, &B, src)) {
        c->run(A, B, src);
        rvs_no_error(A, B);
    }
    fab_down(&f);
}

/* ------------------------------------------------------------------ */
/* RVL family: B asks A for data                                       */
/* ------------------------------------------------------------------ */

static void test_rvl_family(void)
{
    Fab f;
    Board *A, *B;
    g_autofree uint8_t *src = g_malloc(64 * KiB_);
    g_autofree uint8_t *want = g_malloc(64 * KiB_);
    g_autofree uint8_t *got = g_malloc(64 * KiB_);
    uint32_t list[30];
    unsigned i, rvl0;
    const char *w;

    if (!fab_up_ab(&f, NULL, 32 * MiB_, NULL, &A, &B)) {
        goto out;
    }
    dn2q_pattern(src, 64 * KiB_, 4);
    dn2q_sdfile_put(&A->mem, 0, 0x20000, src, 64 * KiB_);
    dn2q_sdfile_put(&A->mem, 1, 0x20000, src, 64 * KiB_);

    /* RVL contiguous: 9000 bytes from A 0x20000 to B 0x100000 */
    w = "RVL 9000 bytes";
    rreq(B, 0, 0, DN2_OP_RVL, 0, 0, A->lid, 0, 1, 9000, 0x20000, 0x100000);
    wait_pc(B, 0, DN2_PC_RVL, 1, T_SHORT, "RVL counted on the requester");
    st_expect(B, 0, DN2_OP_RVS, 0, 0, A->lid, 0, 9000, 0x100000, T_SHORT, w);
    sd_expect(B, 0, 0x100000, src, 9000, w);
    sd_expect_zero(B, 0, 0x100000 + 9000, 64, "after the RVL data");
    EXPECT_HEX(dn2q_pcf(&A->d, 0, DN2_PC_RVS), 0,
               "%s: the responder's RVS (from the Receive Controller) is not counted", w);
    st_expect_empty(A, 0, "RVL: nothing in the responder's status ring");

    /* from the responder's WID 1 (DWID) into the requester's WID 1 */
    w = "RVL WID 1 -> responder WID 1";
    rreq(B, 1, 0, DN2_OP_RVL, 0, 0, A->lid, 1, 1, 300, 0x20100, 0x2000);
    st_expect(B, 1, DN2_OP_RVS, 0, 0, A->lid, 1, 300, 0x2000, T_SHORT, w);
    sd_expect(B, 1, 0x2000, src + 0x100, 300, w);

    /* RVLS: the responder gathers 100 x 8 bytes at stride 40 */
    w = "RVLS 100 x 8 B stride 40";
    rreq(B, 0, 0, DN2_OP_RVLS, DN2_DTYPE_8B, 100, A->lid, 0, 1, 40, 0x20000, 0x110000);
    for (i = 0; i < 100; i++) {
        memcpy(want + i * 8, src + i * 40, 8);
    }
    st_expect(B, 0, DN2_OP_RVS, 0, 0, A->lid, 0, 800, 0x110000, T_SHORT, w);
    sd_expect(B, 0, 0x110000, want, 800, w);

    /* RVLI: the list lives in the responder's SO-DIMM */
    w = "RVLI 30 x 16 B through a list on the responder";
    for (i = 0; i < 30; i++) {
        uint32_t le;
        list[i] = ((i * 7) % 30) * 48 + 16;
        le = cpu_to_le32(list[i]);
        dn2q_sdfile_put(&A->mem, 0, 0x80000 + i * 4, &le, 4);
        memcpy(want + i * 16, src + list[i], 16);
    }
    rreq(B, 0, 0, DN2_OP_RVLI, DN2_DTYPE_16B, 30, A->lid, 0, 1, 0x80000, 0x20000,
         0x120000);
    st_expect(B, 0, DN2_OP_RVS, 0, 0, A->lid, 0, 480, 0x120000, T_SHORT, w);
    sd_expect(B, 0, 0x120000, want, 480, w);

    /* Command1: into the requester's Prefetch Window, flags track lines */
    w = "RVL through Command1 (PW window 1)";
    rreq(B, 0, 1, DN2_OP_RVL, 0, 0, A->lid, 0, 0, 512, 0x21000, DN2_WIN_SIZE);
    poll_ur(B, 0, DN2_UR_PW_FLAG, DN2_PWF_WIN_MASK(1), DN2_PWF_WIN_MASK(1), T_SHORT,
            "PW window 1 flags all set after the RVL data");
    qtest_memread(B->d.qts, dn2q_pw_addr(&B->d, 0, DN2_WIN_SIZE), got, 512);
    dn2q_mem_eq(w, got, src + 0x1000, 512, DN2_WIN_SIZE);
    EXPECT_HEX(dn2q_ur_rd(&B->d, 0, DN2_UR_PW_FLAG), DN2_PWF_ALL, "%s: all PW flags", w);
    st_expect_empty(B, 0, "RVL without eflag: no record");

    /* the requester's Command Ex = the landing pattern (strided) */
    w = "RVL landing strided on the requester (Command Ex VSS)";
    rreq_ex(B, 0, 0, DN2_OP_RVL, 0, 0, A->lid, 0, 1, 400, 0x22000, 0x130000,
            dn2_req_ex(DN2_OP_VSS, DN2_DTYPE_8B, 50, 32));
    st_expect(B, 0, DN2_OP_RVSS, DN2_DTYPE_8B, 50, A->lid, 0, 400, 0x130000, T_SHORT, w);
    for (i = 0; i < 50; i++) {
        g_autofree char *e = g_strdup_printf("%s element %u", w, i);
        if (!sd_expect(B, 0, 0x130000 + i * 32, src + 0x2000 + i * 8, 8, e)) {
            break;
        }
    }

    /* 16 RVLs queued back to back (the RC Request FIFO is 16 deep) */
    w = "16 RVLs back to back";
    rvl0 = dn2q_pcf(&B->d, 0, DN2_PC_RVL);
    for (i = 0; i < 16; i++) {
        rreq(B, 0, 0, DN2_OP_RVL, 0, 0, A->lid, 0, 1, 2048, 0x20000 + i * 2048,
             0x140000 + i * 4096);
    }
    wait_pc(B, 0, DN2_PC_RVL, rvl0 + 16, T_SHORT, "16 RVLs sent");
    for (i = 0; i < 16; i++) {
        g_autofree char *e = g_strdup_printf("%s #%u", w, i);
        st_expect(B, 0, DN2_OP_RVS, 0, 0, A->lid, 0, 2048, 0x140000 + i * 4096, T_SHORT, e);
        sd_expect(B, 0, 0x140000 + i * 4096, src + i * 2048, 2048, e);
    }
    EXPECT_HEX(dn2q_cs(&B->d, 0) & (DN2_CS_REQ_ERROR | DN2_CS_RX_OVF | DN2_CS_RX_ERR_MASK), 0,
               "requester Controller Status: no error");
out:
    fab_down(&f);
}

/* ------------------------------------------------------------------ */
/* IPUSH, LHSv1, LHSv2                                                  */
/* ------------------------------------------------------------------ */

/* Ring positions each IPUSH/LHS path starts from: where the one before
 * it in the sequence left the ring (every packet rounded up to 8). */
#define POS_AFTER_100     104u
#define POS_AFTER_10000   (POS_AFTER_100 + 10000u)
#define POS_AFTER_WRAP    ((POS_AFTER_10000 + 25000u) % RING_SIZE)
#define POS_AFTER_LHSV1   (POS_AFTER_WRAP + ROUND_UP(200u - DN2_LHB_DATA, 8))
#define POS_AFTER_LHSV2   (POS_AFTER_LHSV1 + ROUND_UP(140u - 56u, 8))

/* The host consumed the ring up to `pos` and the NIC writes there next. */
static void ring_at(Board *b, uint32_t pos)
{
    dn2q_amt_set(&b->d, 0, AMT_OFF, DN2_AMT_TAIL, pos);
    amt_set_head(b, pos);
}

/* Fill the receiver's first `n` LH Buffer entries with envelope-only
 * LHSv1 messages (no record), so the next message lands in entry n. */
static void lhb_fill(Board *A, Board *B, unsigned n)
{
    uint64_t le = cpu_to_le64(dn2_envelope(0, 0, 0));
    unsigned i;

    dn2q_sdfile_put(&A->mem, 0, 0x70000, &le, 8);
    for (i = 0; i < n; i++) {
        rreq(A, 0, 0, DN2_OP_LHSV1, 0, 0, B->lid, 0, 0, 8, 0x70000, 0);
        poll_ur(B, 0, DN2_UR_LHB_ADDR, ~0ULL, (i + 1) * DN2_LHB_ENTRY, T_SHORT,
                "LH Buffer filled up to the entry under test");
    }
}

/* IPUSH, one packet, pflag (eflag) -> one record per packet */
static void ipush_one_packet(Board *A, Board *B, const uint8_t *src)
{
    const char *w = "IPUSH 100 bytes";

    rreq(A, 0, 0, DN2_OP_IPUSH, 0, 0, B->lid, 0, 1, 100, 0x30000, 0);
    st_expect(B, 0, DN2_OP_IPUSH, 0, 0, A->lid, 0, 100, RING_BASE, T_SHORT, w);
    ring_expect(B, 0, src, 100, w);
    EXPECT_HEX(amt_tail(B), POS_AFTER_100, "%s: Tail rounded up to 8", w);
    EXPECT_HEX(dn2q_pcf(&A->d, 0, DN2_PC_IPUSH), 1, "%s: sender's IPUSH counter", w);
}

/* 10000 bytes: 3 packets, 3 records */
static void ipush_three_packets(Board *A, Board *B, const uint8_t *src)
{
    const char *w = "IPUSH 10000 bytes";

    ring_at(B, POS_AFTER_100);
    rreq(A, 0, 0, DN2_OP_IPUSH, 0, 0, B->lid, 0, 1, 10000, 0x30100, 0);
    st_expect(B, 0, DN2_OP_IPUSH, 0, 0, A->lid, 0, 4080, RING_BASE + 104, T_SHORT, w);
    st_expect(B, 0, DN2_OP_IPUSH, 0, 0, A->lid, 0, 4080, RING_BASE + 104 + 4080, T_SHORT,
              w);
    st_expect(B, 0, DN2_OP_IPUSH, 0, 0, A->lid, 0, 1840, RING_BASE + 104 + 8160, T_SHORT,
              w);
    ring_expect(B, 104, src + 0x100, 10000, w);
    EXPECT_HEX(amt_tail(B), 104 + 10000, "%s: Tail", w);
}

/* consumed, then wrap around the ring end */
static void ipush_ring_wrap(Board *A, Board *B, const uint8_t *src)
{
    const char *w = "IPUSH wrapping the ring";
    uint32_t pos = POS_AFTER_10000, n, i;

    ring_at(B, pos);
    rreq(A, 0, 0, DN2_OP_IPUSH, 0, 0, B->lid, 0, 1, 25000, 0x30000, 0);
    for (i = 0; i < 7; i++) {
        n = MIN(4080u, 25000 - i * 4080);
        st_expect(B, 0, DN2_OP_IPUSH, 0, 0, A->lid, 0, n, RING_BASE + pos, T_SHORT, w);
        ring_expect(B, pos, src + i * 4080, n, w);
        pos = (pos + ROUND_UP(n, 8)) % RING_SIZE;
    }
    EXPECT_HEX(amt_tail(B), pos, "%s: Tail after the wrap", w);
    EXPECT_HEX(pos, POS_AFTER_WRAP, "%s: where the next path starts", w);
}

/* LHSv1: envelope + 200 bytes: 48 in the entry, 152 in the ring */
static void lhsv1_entry_and_ring(Board *A, Board *B, const uint8_t *src)
{
    const char *w = "LHSv1 208-byte message";
    uint32_t tail = POS_AFTER_WRAP;
    uint8_t ent[DN2_LHB_ENTRY];
    uint64_t le = cpu_to_le64(dn2_envelope(0x1234, 5, 0xdeadbeef));
    uint64_t l0;

    ring_at(B, tail);
    dn2q_sdfile_put(&A->mem, 0, 0x50000, &le, 8);
    dn2q_sdfile_put(&A->mem, 0, 0x50008, src + 0x8000, 200);
    rreq(A, 0, 0, DN2_OP_LHSV1, 0, 0, B->lid, 0, 1, 208, 0x50000, 0);
    st_expect(B, 0, DN2_OP_IPUSH, 0, 0, A->lid, 0, 208, 0, T_SHORT, w);
    EXPECT_HEX(dn2q_ur_rd(&B->d, 0, DN2_UR_LHB_ADDR), DN2_LHB_ENTRY, "%s: LH Buffer tail", w);
    qtest_memread(B->d.qts, dn2q_lhb_addr(&B->d, 0, 0), ent, sizeof(ent));
    l0 = ldq_le_p(ent);
    EXPECT_HEX(DN2_FGET(l0, DN2_LH_POINTER), RING_BASE + tail, "%s: entry Pointer", w);
    EXPECT_HEX(DN2_FGET(l0, DN2_LH_CONTEXT), 0x1234, "%s: entry Context", w);
    EXPECT_HEX(DN2_FGET(l0, DN2_LH_RANK), 5, "%s: entry Rank", w);
    EXPECT_HEX(l0 & (DN2_LH_VALID | DN2_LH_COMPLETE), DN2_LH_VALID | DN2_LH_COMPLETE,
               "%s: Valid and Complete toggled", w);
    EXPECT_HEX(ldq_le_p(ent + 8), DN2_FPUT(0xdeadbeefu, DN2_LH_TAG) | 200, "%s: Tag, Size", w);
    dn2q_mem_eq("LHSv1 inline data", ent + 16, src + 0x8000, DN2_LHB_DATA, 0);
    ring_expect(B, tail, src + 0x8000 + DN2_LHB_DATA, 200 - DN2_LHB_DATA, w);
    tail = (tail + ROUND_UP(200 - DN2_LHB_DATA, 8)) % RING_SIZE;
    EXPECT_HEX(amt_tail(B), tail, "%s: ring Tail", w);
}

/* LHSv2: 40 bytes (envelope + 32) from the Write Window, 100 from SO-DIMM */
static void lhsv2_window_and_sodimm(Board *A, Board *B, const uint8_t *src)
{
    const char *w = "LHSv2 40 WW bytes + 100 SO-DIMM bytes";
    uint32_t tail = POS_AFTER_LHSV1;
    uint8_t ent[DN2_LHB_ENTRY];
    uint8_t wwb[40];
    uint8_t msg[140];
    uint64_t l0;

    lhb_fill(A, B, 1);
    ring_at(B, tail);
    stq_le_p(wwb, dn2_envelope(0x55, 9, 0x01020304));
    memcpy(wwb + 8, src + 0x9000, 32);
    qtest_memwrite(A->d.qts, dn2q_ww_addr(&A->d, 0, 0x200), wwb, sizeof(wwb));
    memcpy(msg, wwb, 40);
    memcpy(msg + 40, src + 0xa000, 100);
    rreq(A, 0, 0, DN2_OP_LHSV2, 0, 0, B->lid, 0, 1, 140, 0x30000 + 0xa000,
         dn2_lhsv2_dst(40, 0x200));
    st_expect(B, 0, DN2_OP_IPUSH, 0, 0, A->lid, 0, 140, DN2_LHB_ENTRY, T_SHORT, w);
    qtest_memread(B->d.qts, dn2q_lhb_addr(&B->d, 0, DN2_LHB_ENTRY), ent, sizeof(ent));
    l0 = ldq_le_p(ent);
    EXPECT_HEX(DN2_FGET(l0, DN2_LH_POINTER), RING_BASE + tail, "%s: entry Pointer", w);
    EXPECT_HEX(DN2_FGET(l0, DN2_LH_CONTEXT), 0x55, "%s: entry Context", w);
    EXPECT_HEX(DN2_FGET(l0, DN2_LH_RANK), 9, "%s: entry Rank", w);
    EXPECT_HEX(l0 & DN2_LH_FLAGS, DN2_LH_FLAGS, "%s: Valid and Complete toggled", w);
    EXPECT_HEX(ldq_le_p(ent + 8), DN2_FPUT(0x01020304u, DN2_LH_TAG) | 132, "%s: Tag, Size",
               w);
    dn2q_mem_eq("LHSv2 inline data", ent + 16, msg + 8, DN2_LHB_DATA, 0);
    ring_expect(B, tail, msg + 56, 140 - 56, w);
}

/* LHSv1 over 3 packets: Complete toggles once, at the end */
static void lhsv1_three_packets(Board *A, Board *B, const uint8_t *src)
{
    const char *w = "LHSv1 9000-byte message (3 packets)";
    uint32_t tail = POS_AFTER_LHSV2;
    uint64_t le = cpu_to_le64(dn2_envelope(7, 1, 0x77));
    uint8_t ent[DN2_LHB_ENTRY];
    uint64_t l0;
    int64_t end;

    lhb_fill(A, B, 2);
    ring_at(B, tail);
    dn2q_sdfile_put(&A->mem, 0, 0x60000, &le, 8);
    dn2q_sdfile_put(&A->mem, 0, 0x60008, src, 8992);
    rreq(A, 0, 0, DN2_OP_LHSV1, 0, 0, B->lid, 0, 0, 9000, 0x60000, 0);
    poll_ur(B, 0, DN2_UR_LHB_ADDR, ~0ULL, 3 * DN2_LHB_ENTRY, T_SHORT,
            "the third LH Buffer entry");
    /* Complete is written after the last byte: wait for it */
    end = deadline(T_SHORT);
    do {
        qtest_memread(B->d.qts, dn2q_lhb_addr(&B->d, 0, 2 * DN2_LHB_ENTRY), ent,
                      sizeof(ent));
    } while ((ldq_le_p(ent) & DN2_LH_FLAGS) != DN2_LH_FLAGS && now_ms() < end);
    l0 = ldq_le_p(ent);
    EXPECT_HEX(l0 & DN2_LH_FLAGS, DN2_LH_FLAGS, "%s: Valid and Complete toggled", w);
    EXPECT_HEX(DN2_FGET(l0, DN2_LH_POINTER), RING_BASE + tail, "%s: entry Pointer", w);
    EXPECT_HEX(ldq_le_p(ent + 8), DN2_FPUT(0x77u, DN2_LH_TAG) | 8992, "%s: Tag, Size", w);
    dn2q_mem_eq("LHSv1 3-packet inline data", ent + 16, src, DN2_LHB_DATA, 0);
    ring_expect(B, tail, src + DN2_LHB_DATA, 8992 - DN2_LHB_DATA, w);
    st_expect_empty(B, 0, "LHS without eflag: no record");
}

/* One IPUSH/LHS path per test: A and B up, A's source pattern in place,
 * B's ring for A, the path, then the receiver reports no error. */
static const RvsCase ipush_cases[] = {
    { "/dimmnet2-fabric/ipush-lhs/ipush-one-packet", ipush_one_packet },
    { "/dimmnet2-fabric/ipush-lhs/ipush-three-packets", ipush_three_packets },
    { "/dimmnet2-fabric/ipush-lhs/ipush-ring-wrap", ipush_ring_wrap },
    { "/dimmnet2-fabric/ipush-lhs/lhsv1-entry-and-ring", lhsv1_entry_and_ring },
    { "/dimmnet2-fabric/ipush-lhs/lhsv2-window-and-sodimm", lhsv2_window_and_sodimm },
    { "/dimmnet2-fabric/ipush-lhs/lhsv1-three-packets", lhsv1_three_packets },
};

static void test_ipush_case(const void *opaque)
{
    const RvsCase *c = opaque;
    Fab f;
    Board *A, *B;
    g_autofree uint8_t *src = g_malloc(64 * KiB_);

    if (fab_up_ab(&f, NULL, 32 * MiB_, NULL, &A, &B)) {
        dn2q_pattern(src, 64 * KiB_, 5);
        dn2q_sdfile_put(&A->mem, 0, 0x30000, src, 64 * KiB_);
        ipush_setup(B, A->lid, 0);
        c->run(A, B, src);
        EXPECT_HEX(dn2q_cs(&B->d, 0) & (DN2_CS_RX_OVF | DN2_CS_RX_ERR_MASK), 0,
                   "receiver Controller Status: no error");
    }
    fab_down(&f);
}

/* ------------------------------------------------------------------ */
/* BOTF: packet images from the Write Window                            */
/* ------------------------------------------------------------------ */

static void test_botf(void)
{
    Fab f;
    Board *A, *B;
    uint8_t data[DN2_BOTF_MAX], got[DN2_BOTF_MAX];
    struct dn2_hdr h;
    unsigned i, n0;
    const char *w;

    if (!fab_up_ab(&f, NULL, 32 * MiB_, NULL, &A, &B)) {
        goto out;
    }

    /* into the receiver's LLCM (lflag), from Write Window 0 */
    w = "BOTF into LLCM";
    dn2q_pattern(data, sizeof(data), 6);
    h = rvs_hdr(B->lid, 0x1000);
    h.lflag = 1;
    n0 = dn2q_pcf(&A->d, 0, DN2_PC_BOTF);
    botf_send(A, 0, 0, &h, data, 200);
    st_expect(B, 0, DN2_OP_RVS, 0, 0, A->lid, 0, 200, 0x1000, T_SHORT, w);
    qtest_memread(B->d.qts, dn2q_llcm_addr(&B->d, 0, 0x1000), got, 200);
    dn2q_mem_eq(w, got, data, 200, 0x1000);
    EXPECT_HEX(dn2q_pcf(&A->d, 0, DN2_PC_BOTF), n0 + 1, "%s: sender's BOTF counter", w);

    /* into SO-DIMM, the largest image (512 bytes), Write Window 1; the
     * image's PGID is overwritten by the sender's NIC (PGID0) */
    w = "BOTF 512 bytes into SO-DIMM";
    dn2q_pattern(data, sizeof(data), 7);
    h = rvs_hdr(B->lid, 0x700008);
    h.pgid = 0x77;
    botf_send(A, 0, 1, &h, data, DN2_BOTF_MAX - 16);
    st_expect(B, 0, DN2_OP_RVS, 0, 0, A->lid, 0, DN2_BOTF_MAX - 16, 0x700008, T_SHORT, w);
    sd_expect(B, 0, 0x700008, data, DN2_BOTF_MAX - 16, w);
    EXPECT_HEX(qom_u64(B, "stat-rx-drop-pgid"), 0, "%s: no PGID drop", w);

    /* into the Prefetch Window (rflag), Write Window 2 */
    w = "BOTF into the Prefetch Window";
    h = rvs_hdr(B->lid, 0x680);
    h.rflag = 1;
    botf_send(A, 0, 2, &h, data + 100, 128);
    st_expect(B, 0, DN2_OP_RVS, 0, 0, A->lid, 0, 128, 0x680, T_SHORT, w);
    qtest_memread(B->d.qts, dn2q_pw_addr(&B->d, 0, 0x680), got, 128);
    dn2q_mem_eq(w, got, data + 100, 128, 0x680);

    /* an RVSS image (3 header lines): 10 x 4 bytes to stride 16, WW 3 */
    w = "BOTF carrying an RVSS packet";
    memset(&h, 0, sizeof(h));
    h.type = DN2_OP_RVSS;
    h.dtype = DN2_DTYPE_4B;
    h.iter = 10;
    h.hflag = 1;
    h.dlid = B->lid;
    h.eflag = 1;
    h.w1_lo = 0x710000;         /* Initial DSTOff */
    h.w1_hi = 0;                /* first element index */
    h.total = 40;
    h.stride = 16;
    botf_send(A, 0, 3, &h, data, 40);
    st_expect(B, 0, DN2_OP_RVSS, DN2_DTYPE_4B, 10, A->lid, 0, 40, 0x710000, T_SHORT, w);
    for (i = 0; i < 10; i++) {
        g_autofree char *e = g_strdup_printf("%s element %u", w, i);
        sd_expect(B, 0, 0x710000 + i * 16, data + i * 4, 4, e);
        sd_expect_zero(B, 0, 0x710000 + i * 16 + 4, 12, e);
    }

    /* WID 1 to WID 1 (DWID and SWID in the image), LLCM */
    w = "BOTF WID 1 -> WID 1";
    h = rvs_hdr(B->lid, 0x40);
    h.dwid = 1;
    h.swid = 1;
    h.lflag = 1;
    botf_send(A, 1, 0, &h, data + 8, 64);
    st_expect(B, 1, DN2_OP_RVS, 0, 0, A->lid, 1, 64, 0x40, T_SHORT, w);
    qtest_memread(B->d.qts, dn2q_llcm_addr(&B->d, 1, 0x40), got, 64);
    dn2q_mem_eq(w, got, data + 8, 64, 0x40);
    st_expect_empty(B, 0, w);

    /* a burst of 100 BOTFs from one window, rewritten between them: every
     * one arrives, once, in order (sequence number in the data) */
    w = "100 BOTFs in a row";
    for (i = 0; i < 100; i++) {
        uint8_t seq[8];
        stq_le_p(seq, 0x5e0000 + i);
        h = rvs_hdr(B->lid, 0x2000 + (i % 16) * 8);
        h.lflag = 1;
        /* wait for the previous BOTF to leave before rewriting the image */
        wait_pc(A, 0, DN2_PC_BOTF, n0 + 4 + i, T_SHORT, "previous BOTF sent");
        botf_send(A, 0, 0, &h, seq, 8);
    }
    for (i = 0; i < 100; i++) {
        uint64_t lo, up;
        if (!st_pop(B, 0, &lo, &up, T_SHORT, w)) {
            break;
        }
        EXPECT_HEX(up, 0x2000 + (i % 16) * 8, "%s: record %u in order", w, i);
        EXPECT_HEX(DN2_FGET(lo, DN2_ST_SIZE), 8, "%s: record %u size", w, i);
    }
    st_expect_empty(B, 0, w);
out:
    fab_down(&f);
}

/* ------------------------------------------------------------------ */
/* Three boards, all to all, at once                                    */
/* ------------------------------------------------------------------ */

static void test_all_to_all(void)
{
    Fab f;
    const uint32_t len = 768 * KiB_;
    g_autofree uint8_t *data[MAXB] = { NULL };
    int s, r, k;

    if (!fab_up(&f, 3, NULL, 32 * MiB_, NULL)) {
        goto out;
    }
    for (s = 0; s < 3; s++) {
        data[s] = g_malloc(len);
        dn2q_pattern(data[s], len, 10 + s);
        dn2q_sdfile_put(&f.b[s].mem, 0, 0, data[s], len);
    }
    /* every board sends to both others: sender s lands at (s + 1) MiB */
    for (k = 1; k <= 2; k++) {
        for (s = 0; s < 3; s++) {
            r = (s + k) % 3;
            rreq(&f.b[s], 0, 0, DN2_OP_RVS, 0, 0, f.b[r].lid, 0, 1, len, 0,
                 (s + 1) * MiB_);
        }
    }
    for (r = 0; r < 3; r++) {
        bool seen[MAXB] = { false };
        for (k = 0; k < 2; k++) {
            uint64_t lo, up;
            uint16_t clid;
            if (!st_pop(&f.b[r], 0, &lo, &up, T_LONG, "all-to-all record")) {
                break;
            }
            clid = DN2_FGET(lo, DN2_ST_CLID);
            for (s = 0; s < 3; s++) {
                if (s != r && dn2_lid_to_clid(f.b[s].lid) == clid && !seen[s]) {
                    seen[s] = true;
                    EXPECT_HEX(lo, dn2_req_lower(DN2_OP_RVS, 0, 0, clid, 0, 1, len),
                               "board %c: record from %c", f.b[r].name, f.b[s].name);
                    EXPECT_HEX(up, (s + 1) * MiB_, "board %c: record from %c address",
                               f.b[r].name, f.b[s].name);
                    break;
                }
            }
            EXPECT_TRUE(s < 3, "board %c: a record from an expected sender (CLID 0x%x)",
                        f.b[r].name, clid);
        }
        for (s = 0; s < 3; s++) {
            g_autofree char *wh = g_strdup_printf("all-to-all %c -> %c", f.b[s].name,
                                                  f.b[r].name);
            if (s != r) {
                sd_expect(&f.b[r], 0, (s + 1) * MiB_, data[s], len, wh);
            } else {
                sd_expect_zero(&f.b[r], 0, (s + 1) * MiB_, 4096, "nothing to itself");
            }
        }
        st_expect_empty(&f.b[r], 0, "all-to-all: two records each");
    }
out:
    for (s = 0; s < MAXB; s++) {
        g_free(data[s]);
        data[s] = NULL;
    }
    fab_down(&f);
}

/* ------------------------------------------------------------------ */
/* Multicast                                                            */
/* ------------------------------------------------------------------ */

static void test_multicast(void)
{
    Fab f;
    Board *A, *B, *C;
    g_autofree char *g1 = NULL, *g2 = NULL, *port = NULL;
    uint16_t lids[3];
    uint8_t data[4096], got[256];
    struct dn2_hdr h;
    int i;

    if (!fab_up(&f, 3, NULL, 32 * MiB_, NULL)) {
        goto out;
    }
    A = &f.b[0];
    B = &f.b[1];
    C = &f.b[2];
    for (i = 0; i < 3; i++) {
        lids[i] = f.b[i].lid;
    }
    /* The boards cannot join groups themselves (no register for it): the
     * LIDs are known now, so restart the switch on the same port with the
     * groups; the boards come back with their LIDs as hints. */
    g1 = g_strdup_printf("0xc01=0x%x,0x%x", B->lid, C->lid);
    g2 = g_strdup_printf("0xc02=0x%x,0x%x,0x%x", A->lid, B->lid, C->lid);
    {
        const char *args[] = { "--mcast", g1, "--mcast", g2, NULL };
        int p = f.sw.port;
        switch_stop(&f.sw, SIGTERM);
        /* the switch's BYE takes every link down */
        for (i = 0; i < 3; i++) {
            poll_sma_down(&f.b[i], T_SHORT);
        }
        if (!switch_start(&f.sw, p, args)) {
            goto out;
        }
    }
    for (i = 0; i < 3; i++) {
        if (board_wait_link(&f.b[i], T_SHORT)) {
            EXPECT_HEX(f.b[i].lid, lids[i], "board %c keeps its LID over a switch restart",
                       f.b[i].name);
        }
    }
    /* Each registration publishes a new routing table; let the last one
     * (all three members live) reach every board before sending to a
     * group, or the fabric sends to the members it knows so far. */
    g_usleep(200 * 1000);

    /* RVS to group 0xc01 = {B, C}: both get it, the sender A does not */
    dn2q_pattern(data, sizeof(data), 20);
    dn2q_sdfile_put(&A->mem, 0, 0x1000, data, sizeof(data));
    rreq(A, 0, 0, DN2_OP_RVS, 0, 0, dn2_clid_to_lid(0xc01), 0, 1, 3000, 0x1000, 0x90000);
    st_expect(B, 0, DN2_OP_RVS, 0, 0, A->lid, 0, 3000, 0x90000, T_SHORT,
              "RVS to group 0xc01 at member B");
    st_expect(C, 0, DN2_OP_RVS, 0, 0, A->lid, 0, 3000, 0x90000, T_SHORT,
              "RVS to group 0xc01 at member C");
    sd_expect(B, 0, 0x90000, data, 3000, "RVS to group 0xc01 at B");
    sd_expect(C, 0, 0x90000, data, 3000, "RVS to group 0xc01 at C");
    g_usleep(50 * 1000);
    st_expect_empty(A, 0, "group 0xc01: the non-member sender gets nothing");
    sd_expect_zero(A, 0, 0x90000, 3000, "group 0xc01: nothing at the non-member");

    /* BOTF to group 0xc02 = {A, B, C}: everyone, the sender too */
    h = rvs_hdr(dn2_clid_to_lid(0xc02), 0x3000);
    h.lflag = 1;
    botf_send(A, 0, 0, &h, data + 64, 256);
    for (i = 0; i < 3; i++) {
        g_autofree char *w = g_strdup_printf("BOTF to group 0xc02 at %c", f.b[i].name);
        st_expect(&f.b[i], 0, DN2_OP_RVS, 0, 0, A->lid, 0, 256, 0x3000, T_SHORT, w);
        qtest_memread(f.b[i].d.qts, dn2q_llcm_addr(&f.b[i].d, 0, 0x3000), got, 256);
        dn2q_mem_eq(w, got, data + 64, 256, 0x3000);
    }

    /* a larger multicast, and unicast after it stays in order at B:
     * the unicast overwrites part of the multicast region */
    {
        g_autofree uint8_t *big = g_malloc(256 * KiB_);
        dn2q_pattern(big, 256 * KiB_, 21);
        dn2q_sdfile_put(&B->mem, 0, 0x100000, big, 256 * KiB_);
        dn2q_sdfile_put(&C->mem, 0, 0x100000, big, 256 * KiB_);
        rreq(B, 0, 0, DN2_OP_RVS, 0, 0, dn2_clid_to_lid(0xc02), 0, 1, 256 * KiB_,
             0x100000, 0x200000);
        rreq(B, 0, 0, DN2_OP_RVS, 0, 0, C->lid, 0, 1, 4096, 0x100000 + 128 * KiB_,
             0x200000);
        for (i = 0; i < 3; i++) {
            g_autofree char *w = g_strdup_printf("256 KiB RVS to group 0xc02 at %c",
                                                 f.b[i].name);
            st_expect(&f.b[i], 0, DN2_OP_RVS, 0, 0, B->lid, 0, 256 * KiB_, 0x200000,
                      T_LONG, w);
        }
        st_expect(C, 0, DN2_OP_RVS, 0, 0, B->lid, 0, 4096, 0x200000, T_SHORT,
                  "unicast after the multicast");
        sd_expect(A, 0, 0x200000, big, 256 * KiB_, "multicast data at A");
        sd_expect(B, 0, 0x200000, big, 256 * KiB_, "multicast data at B (own copy)");
        sd_expect(C, 0, 0x200000, big + 128 * KiB_, 4096,
                  "unicast after multicast: the later data wins at C");
        sd_expect(C, 0, 0x200000 + 4096, big + 4096, 256 * KiB_ - 4096,
                  "multicast data at C");
    }
out:
    fab_down(&f);
}

/* ------------------------------------------------------------------ */
/* Protection: PGID mismatch and missing processes                     */
/* ------------------------------------------------------------------ */

static void test_pgid(void)
{
    Fab f;
    Board *A, *B;
    uint8_t data[10000];
    struct dn2_hdr h;
    uint64_t pkts0;
    const char *w;

    if (!fab_up_ab(&f, NULL, 32 * MiB_, NULL, &A, &B)) {
        goto out;
    }
    /* B's WID 0 belongs to another group; its WID 1 has no process */
    dn2q_sr_rd(&B->d, DN2_SR_CTL_RESET);
    board_net_init(B, PG + 1, -1);
    dn2q_pattern(data, sizeof(data), 30);
    dn2q_sdfile_put(&A->mem, 0, 0, data, sizeof(data));
    pkts0 = dn2q_ur_rd(&B->d, 0, DN2_UR_PKT_COUNTER);

    w = "RVS with a PGID the receiver does not have";
    rreq(A, 0, 0, DN2_OP_RVS, 0, 0, B->lid, 0, 1, sizeof(data), 0, 0x10000);
    wait_pc(A, 0, DN2_PC_RVS, 1, T_SHORT, "the RVS left A");
    wait_qom(B, "stat-rx-drop-pgid", 3, T_SHORT, w);
    EXPECT_HEX(qom_u64(B, "stat-rx-drop-pgid"), 3, "%s: 3 packets counted", w);

    w = "BOTF with a PGID the receiver does not have";
    h = rvs_hdr(B->lid, 0x20000);
    h.pgid = PG + 1;            /* the NIC overwrites it with A's PGID0 */
    botf_send(A, 0, 0, &h, data, 32);
    wait_qom(B, "stat-rx-drop-pgid", 4, T_SHORT, w);

    w = "RVL from a requester of another group";
    rreq(A, 0, 0, DN2_OP_RVL, 0, 0, B->lid, 0, 1, 4096, 0, 0x30000);
    wait_qom(B, "stat-rx-drop-pgid", 5, T_SHORT, w);

    w = "RVS to a WID without a process";
    rreq(A, 0, 0, DN2_OP_RVS, 0, 0, B->lid, 1, 1, 100, 0, 0x10000);
    wait_qom(B, "stat-rx-drop-noproc", 1, T_SHORT, w);

    /* nothing written anywhere, no record, no packet counted */
    g_usleep(100 * 1000);
    sd_expect_zero(B, 0, 0x10000, sizeof(data), "PGID mismatch: nothing written");
    sd_expect_zero(B, 0, 0x20000, 32, "PGID mismatch (BOTF): nothing written");
    sd_expect_zero(B, 1, 0x10000, 100, "no process: nothing written");
    sd_expect_zero(A, 0, 0x30000, 4096, "refused RVL: no data back");
    st_expect_empty(B, 0, "PGID mismatch: no status record");
    st_expect_empty(B, 1, "no process: no status record");
    st_expect_empty(A, 0, "refused RVL: no status record");
    EXPECT_HEX(dn2q_ur_rd(&B->d, 0, DN2_UR_PKT_COUNTER), pkts0,
               "PGID mismatch: Packet Counter");
    EXPECT_HEX(dn2q_ur_rd(&B->d, 1, DN2_UR_PKT_COUNTER), 0, "no process: Packet Counter");
    EXPECT_HEX(qom_u64(B, "stat-rx-drop-pgid"), 5, "stat-rx-drop-pgid in the end");
    EXPECT_HEX(qom_u64(B, "stat-rx-drop-noproc"), 1, "stat-rx-drop-noproc in the end");
    EXPECT_HEX(qom_u64(B, "stat-rx-packets"), 0, "stat-rx-packets: nothing accepted");

    /* the same RVS once the groups agree */
    w = "RVS once the PGIDs agree";
    dn2q_sr_wr(&B->d, DN2_SR_PGID0, PG);
    rreq(A, 0, 0, DN2_OP_RVS, 0, 0, B->lid, 0, 1, sizeof(data), 0, 0x10000);
    st_expect(B, 0, DN2_OP_RVS, 0, 0, A->lid, 0, sizeof(data), 0x10000, T_SHORT, w);
    sd_expect(B, 0, 0x10000, data, sizeof(data), w);
    EXPECT_HEX(qom_u64(B, "stat-rx-drop-pgid"), 5, "%s: no new PGID drop", w);
out:
    fab_down(&f);
}

int main(int argc, char **argv)
{
    unsigned i;
    int r = fab_test_init(&argc, &argv);

    if (r < 0) {
        return 1;
    }
    if (r > 0) {
        qtest_add_func("/dimmnet2-fabric/link-up", test_link_up);
        for (i = 0; i < G_N_ELEMENTS(rvs_cases); i++) {
            qtest_add_data_func(rvs_cases[i].path, &rvs_cases[i], test_rvs_case);
        }
        qtest_add_func("/dimmnet2-fabric/rvl-family", test_rvl_family);
        for (i = 0; i < G_N_ELEMENTS(ipush_cases); i++) {
            qtest_add_data_func(ipush_cases[i].path, &ipush_cases[i], test_ipush_case);
        }
        qtest_add_func("/dimmnet2-fabric/botf", test_botf);
        qtest_add_func("/dimmnet2-fabric/all-to-all", test_all_to_all);
        qtest_add_func("/dimmnet2-fabric/multicast", test_multicast);
        qtest_add_func("/dimmnet2-fabric/pgid", test_pgid);
    }
    return fab_test_run();
}
