/* SPDX-License-Identifier: MIT */
/*
 * DIMMnet-2 ABI: the one definition of everything a host, a board and the
 * network agree on -- the host-visible window layout, every register offset
 * and bit field, opcodes, DTYPE sizes, the request words (Lower / Upper /
 * Command Ex), the BOTF request, the packet header, the receive-status
 * record and the LH Buffer entry.
 *
 * Pure C99: <stdint.h> only.  Included by the QEMU device model, the fabric,
 * the Linux driver (stdint.h is mapped to linux/types.h there), the user
 * library and every test.  Never duplicate a constant from here.
 *
 * Source: Tsuji (Kitamura), Keio PhD thesis 2007, via
 * shared/spec/dimmnet2-thesis-digest.md.  Every place where the thesis is
 * ambiguous and a choice was made is marked "[EMU]" here and explained in
 * docs/thesis-choices.md.
 */
#ifndef DIMMNET2_DN2_ABI_H
#define DIMMNET2_DN2_ABI_H

#ifdef __KERNEL__
#include <linux/types.h>
#else
#include <stdint.h>
#endif

#define DN2_ABI_VERSION 1

/* Bit-field helpers (64-bit, inclusive ranges as the thesis writes them). */
#define DN2_BIT(n)             (1ULL << (n))
#define DN2_MASK(hi, lo)       ((~0ULL >> (63 - (hi))) & ~((1ULL << (lo)) - 1))
#define DN2_GET(v, hi, lo)     (((uint64_t)(v) & DN2_MASK(hi, lo)) >> (lo))
#define DN2_PUT(v, hi, lo)     (((uint64_t)(v) << (lo)) & DN2_MASK(hi, lo))

/* ======================================================================
 * 1. The host-visible window (Table 4.3)
 * ====================================================================== */
#define DN2_WINDOW_SIZE        0x60000u   /* six regions of 64 KiB */
#define DN2_REGION_SIZE        0x10000u
#define DN2_NUM_WID            2          /* processes per board */
#define DN2_NUM_WW             4          /* Write/Prefetch Windows per WID */
#define DN2_WIN_SIZE           512u       /* one Write/Prefetch Window */
#define DN2_WIN_AREA           (DN2_NUM_WW * DN2_WIN_SIZE) /* 2 KiB per WID */

#define DN2_WW_BASE            0x00000u   /* Write Window: host W, NIC R, WC */
#define DN2_PW_BASE            0x10000u   /* Prefetch Window: host R, NIC W, WB */
#define DN2_LLCM_BASE          0x20000u   /* LLCM: host R/W, NIC R/W, UC */
#define DN2_LHB_BASE           0x30000u   /* LH Buffer: host R, NIC W, WB */
#define DN2_UR_BASE            0x40000u   /* User Register pages, UC */
#define DN2_SR_BASE            0x50000u   /* System Register (privileged), UC */

#define DN2_WW_WID_STRIDE      0x2000u    /* WW0 @0x00000, WW1 @0x02000 */
#define DN2_PW_WID_STRIDE      0x2000u    /* PW0 @0x10000, PW1 @0x12000 */
#define DN2_LLCM_WID_STRIDE    0x8000u    /* LLCM0 @0x20000, LLCM1 @0x28000 */
#define DN2_LLCM_AREA          0x8000u    /* 32 KiB per WID */
#define DN2_LHB_WID_STRIDE     0x8000u    /* LHB0 @0x30000, LHB1 @0x38000 */
#define DN2_LHB_AREA           0x1000u    /* 4 KiB per WID */
#define DN2_UR_WID_STRIDE      0x1000u    /* UR0 @0x40000, UR1 @0x41000 */
#define DN2_UR_PAGE            0x1000u
#define DN2_SR_PAGE            0x1000u
#define DN2_PW_LINE            128u       /* one Prefetch Window flag per line */
#define DN2_PW_LINES_PER_WIN   (DN2_WIN_SIZE / DN2_PW_LINE)

/* Offsets of the per-WID pieces, from the window base. */
#define DN2_WW_OFF(wid, n)     (DN2_WW_BASE + (wid) * DN2_WW_WID_STRIDE + (n) * DN2_WIN_SIZE)
#define DN2_PW_OFF(wid, n)     (DN2_PW_BASE + (wid) * DN2_PW_WID_STRIDE + (n) * DN2_WIN_SIZE)
#define DN2_LLCM_OFF(wid)      (DN2_LLCM_BASE + (wid) * DN2_LLCM_WID_STRIDE)
#define DN2_LHB_OFF(wid)       (DN2_LHB_BASE + (wid) * DN2_LHB_WID_STRIDE)
#define DN2_UR_OFF(wid)        (DN2_UR_BASE + (wid) * DN2_UR_WID_STRIDE)

/*
 * [EMU] Guest-physical placement (the thesis never gives the base): the
 * first board defaults to 0xFEC10000, just above the q35/pc PCI hole and the
 * IOAPIC; a second board to 0xFEC70000.  Both end below the HPET.  The
 * guest finds the window through ACPI (_HID below, _CRS = the window).
 */
#define DN2_DEFAULT_BASE0      0xFEC10000u
#define DN2_DEFAULT_BASE1      0xFEC70000u
#define DN2_BASE_ALIGN         0x10000u
#define DN2_ACPI_HID           "DNET0002"  /* [EMU] ACPI ID: vendor "DNET", product 0002 */
#define DN2_ACPI_NAME          "DN2"       /* AML device name prefix: DN20, DN21 */

/* ======================================================================
 * 2. User Register page (Fig 4.12, Table 4.8, App. A). One page per WID;
 *    offsets are from the page.  64-bit registers, 8-byte accesses.
 * ====================================================================== */
#define DN2_UR_CMD0_LOWER      0x000u  /* W: doorbell; data to remote SO-DIMM */
#define DN2_UR_CMD0_UPPER      0x010u  /* W: write before Lower */
#define DN2_UR_CMD_EX          0x020u  /* W: third word, when Command Ex Flag=1 */
#define DN2_UR_CMD1_LOWER      0x100u  /* W: doorbell; data to remote PW (rflag) */
#define DN2_UR_CMD1_UPPER      0x110u
#define DN2_UR_CTL_STATUS      0x200u  /* R: Controller Status */
#define DN2_UR_PRIM_COUNTER    0x300u  /* R: counters / W: reset */
#define DN2_UR_PW_FLAG         0x400u  /* R: Prefetch Window line flags */
#define DN2_UR_PKT_COUNTER     0x500u  /* R: packets received / W: reset */
#define DN2_UR_IPUSH_AREA_SIZE 0x600u  /* W: [15:0] */
#define DN2_UR_LHB_ADDR        0x700u  /* W: Next Read (head) / R: Next Write (tail) */
#define DN2_UR_MODULE_STATE    0x800u  /* R: debug state */
#define DN2_UR_STATUS_INIT     0x900u  /* W: [14:0] LLCM offset of status ring */
#define DN2_UR_STATUS_SIZE     0xa00u  /* W: [6:0] one-hot ring size */
#define DN2_UR_STATUS_ADDR     0xb00u  /* W: Next Read (head) / R: Next Write (tail) */
#define DN2_UR_CMD_EX_FLAG     0xc00u  /* W: bit 0 enables Command Ex */

/* Controller Status (Table A.1). */
#define DN2_CS_REQ_PENDING     DN2_BIT(0)  /* request not yet moved to the FIFO */
#define DN2_CS_SDIMM_READY     DN2_BIT(1)  /* SO-DIMM initialisation complete */
#define DN2_CS_FIFO_AFULL      DN2_BIT(2)  /* Request FIFO almost full */
#define DN2_CS_STATUS_FULL     DN2_BIT(3)  /* receive-status ring full */
#define DN2_CS_STATUS_EMPTY    DN2_BIT(4)  /* receive-status ring empty */
#define DN2_CS_WW_SHIFT(n)     (5 + 3 * (n))           /* WW#n status base bit */
#define DN2_CS_WW_DONE(n)      DN2_BIT(5 + 3 * (n))    /* SO-DIMM write complete */
#define DN2_CS_WW_SRC_OVF(n)   DN2_BIT(6 + 3 * (n))    /* src+size past window end */
#define DN2_CS_WW_DST_OVF(n)   DN2_BIT(7 + 3 * (n))    /* dst+size past SO-DIMM area */
#define DN2_CS_WW_MASK(n)      (7ULL << (5 + 3 * (n)))
#define DN2_CS_RX_OVF          DN2_BIT(17) /* data ran past the receive area */
#define DN2_CS_RX_ERR_SHIFT    18          /* [19:18] receive error state */
#define DN2_CS_RX_ERR_MASK     (3ULL << 18)
#define DN2_RX_ERR_NONE        0u
#define DN2_RX_ERR_EARLY_SOP   1u  /* 1st DW of the next packet before EOP */
#define DN2_RX_ERR_HFLAG       2u  /* hflag does not match header line count */
#define DN2_RX_ERR_RVL_DATA    3u  /* illegal RVL-type packet (with data) */
/* [EMU] extension: a request was refused because of invalid parameters
 * (offset outside the process's window area or SO-DIMM area, no SO-DIMM
 * initialised, unpaired SO-DIMM copy...).  Sticky until a write to the
 * Primitive Counter reset register or a Controller Reset. */
#define DN2_CS_REQ_ERROR       DN2_BIT(20)

/* Primitive Counter (Table A.2): six 10-bit per-WID completion counters. */
#define DN2_PC_BITS            10
#define DN2_PC_MASK            0x3ffu
#define DN2_PC_BOTF            0
#define DN2_PC_VL              1
#define DN2_PC_VS              2
#define DN2_PC_RVL             3
#define DN2_PC_RVS             4
#define DN2_PC_IPUSH           5
#define DN2_PC_NUM             6
static inline unsigned dn2_pc_field(uint64_t v, int family)
{
    return (unsigned)((v >> (family * DN2_PC_BITS)) & DN2_PC_MASK);
}

/* Prefetch Window Flag (Table A.3): 4 bits per window, 1 per 128 B line. */
#define DN2_PWF_WIN_SHIFT(n)   (4 * (n))
#define DN2_PWF_WIN_MASK(n)    (0xfULL << (4 * (n)))
#define DN2_PWF_ALL            0xffffULL

/* Status Area Size (Table A.5): one-hot, 64 B << k; 0/other = 1024 B. */
#define DN2_STATUS_SIZE_DEFAULT 1024u
static inline uint32_t dn2_status_area_bytes(uint64_t reg)
{
    uint32_t v = (uint32_t)(reg & 0x7f);
    int k;
    for (k = 0; k < 7; k++) {
        if (v == (1u << k)) {
            return 64u << k;
        }
    }
    return DN2_STATUS_SIZE_DEFAULT;
}
#define DN2_STATUS_INIT_MASK   0x7fffu
#define DN2_STATUS_ADDR_MASK   0x7fffu
#define DN2_LHB_ADDR_MASK      0xfffu
#define DN2_IPUSH_AREA_MASK    0xffffu
#define DN2_STATUS_SIZE_MASK   0x7fu    /* Status Area Size [6:0] */

/* Module State (Table A.4): debug fields. */
#define DN2_MS_WC_SHIFT        0   /* [16:0] Window Controller */
#define DN2_MS_RC_SHIFT        17  /* [36:17] Receive Controller */
#define DN2_MS_WU_SHIFT        37  /* [50:37] Write Unit */
#define DN2_MS_PU_SHIFT        51  /* [57:51] Prefetch Unit */
/* [EMU] encodings: each field is 0 when idle; the Window Controller field
 * holds 1 + the OTYPE being executed.  Receive Controller: bit 0 = it holds
 * a packet back (a ring or the RC FIFO full), bit 1 = it answers an RVL
 * (its own executor, choice #44).  Write Unit: 1 while a VS-family request
 * or a SO-DIMM copy writes the SO-DIMM.  Prefetch Unit: 1 while a request
 * reads the SO-DIMM (VL family, a copy, RVS/IPUSH/LHS data, an RVL answer). */
#define DN2_MS_RC_HOLDING      1u
#define DN2_MS_RC_ANSWERING    2u
#define DN2_MS_UNIT_BUSY       1u

/* ======================================================================
 * 3. System Register page (Fig 4.15, Table 4.12, App. B)
 * ====================================================================== */
#define DN2_SR_SDIMM_INIT      0x000u  /* W: bit 0 = 1 enables SO-DIMM access */
#define DN2_SR_SDIMM_CAPACITY  0x100u  /* W: [5:0] one-hot per module */
#define DN2_SR_MTU             0x200u  /* W: [4:0] one-hot */
#define DN2_SR_SMA             0x300u  /* W: SMA software reset / R: SMA LID */
#define DN2_SR_LID             0x700u  /* W: [15:0] this node's LID */
#define DN2_SR_PGID0           0x800u  /* W: [7:0] */
#define DN2_SR_PGID1           0x900u  /* W: [7:0] */
#define DN2_SR_CTL_RESET       0xa00u  /* any read or write resets the controller */
#define DN2_SR_AMT             0xb00u  /* W: AMT Address Table interface */
#define DN2_SDIMM_CAP_MASK     0x3fu   /* SO-DIMM Capacity [5:0] */
#define DN2_MTU_MASK           0x1fu   /* MTU [4:0] */
#define DN2_PGID_MASK          0xffu   /* PGID [7:0] */

/* SMA LID read-back: [15:0] LID from the subnet manager, [17:16] link. */
#define DN2_SMA_LID_MASK       0xffffu
#define DN2_SMA_LINK_SHIFT     16
#define DN2_SMA_LINK_MASK      (3ULL << 16)
#define DN2_SMA_LINK_READY     3u      /* 2'b11: ready to communicate */

/* SO-DIMM Capacity (Table 4.10): per module, one-hot, 256 MiB << k. */
#define DN2_SDIMM_MODULES      2
#define DN2_SDIMM_CAP_DEFAULT  (256ULL << 20)
static inline uint64_t dn2_sdimm_module_bytes(uint64_t reg)
{
    uint32_t v = (uint32_t)(reg & 0x3f);
    int k;
    for (k = 0; k < 6; k++) {
        if (v == (1u << k)) {
            return (256ULL << 20) << k;
        }
    }
    return DN2_SDIMM_CAP_DEFAULT;
}
/* Two modules interleaved in 8-byte units: SO-DIMM1 holds 0x0-0x7, SO-DIMM2
 * 0x8-0xf, ...  Capacity is split evenly between WID 0 and WID 1; every
 * SO-DIMM offset in a request is relative to the issuing process's half
 * [EMU].  These give the module and the offset inside it of a board-global
 * SO-DIMM byte address. */
#define DN2_SDIMM_INTERLEAVE   8u
static inline unsigned dn2_sdimm_module(uint64_t addr)
{
    return (unsigned)((addr >> 3) & 1);
}
static inline uint64_t dn2_sdimm_module_offset(uint64_t addr)
{
    return ((addr >> 4) << 3) | (addr & 7);
}

/* MTU (Table 4.11): one-hot; "10100" in the thesis read as 00100 [EMU]. */
#define DN2_MTU_DEFAULT        2048u
static inline uint32_t dn2_mtu_bytes(uint64_t reg)
{
    switch (reg & 0x1f) {
    case 0x01: return 256;
    case 0x02: return 512;
    case 0x04: return 1024;
    case 0x14: return 1024;  /* the thesis's literal "10100" */
    case 0x08: return 2048;
    case 0x10: return 4096;
    default:   return DN2_MTU_DEFAULT;
    }
}

/* AMT Address Table interface (App. B, Fig B.1) [R]. */
#define DN2_AMT_VALUE_MASK     0xfffULL        /* [11:0] AMT entry address */
#define DN2_AMT_WID_SHIFT      12              /* [13:12] sender WID */
#define DN2_AMT_LID_SHIFT      14              /* [29:14] sender LID */
/* [EMU] extension (choice #52): the entry belongs to one receiving process.
 * Bit 31 set: only the entry of DWID = bit 30 is written; clear: both
 * processes' entries, as on the thesis's per-board table. */
#define DN2_AMT_DWID_BIT       30
#define DN2_AMT_DWID_GIVEN_BIT 31
static inline uint64_t dn2_amt_encode(uint32_t value, uint32_t wid, uint32_t lid)
{
    return DN2_PUT(value, 11, 0) | DN2_PUT(wid, 13, 12) | DN2_PUT(lid, 29, 14);
}
/* The same for the receiving process dwid only. */
static inline uint64_t dn2_amt_encode_dwid(uint32_t value, uint32_t wid, uint32_t lid,
                                           uint32_t dwid)
{
    return dn2_amt_encode(value, wid, lid) | DN2_PUT(dwid, DN2_AMT_DWID_BIT, DN2_AMT_DWID_BIT) |
           DN2_BIT(DN2_AMT_DWID_GIVEN_BIT);
}

/* ======================================================================
 * 4. Requests (Fig 4.13, Table 4.4, Table 4.13)
 * ====================================================================== */
enum dn2_otype {
    DN2_OP_NOP    = 0x00,
    DN2_OP_BOTF   = 0x01,
    DN2_OP_VL     = 0x04,
    DN2_OP_VLS    = 0x05,
    DN2_OP_VLI    = 0x06,
    DN2_OP_VS     = 0x08,
    DN2_OP_VSS    = 0x09,
    DN2_OP_VSI    = 0x0a,
    DN2_OP_RVL    = 0x10,
    DN2_OP_RVLS   = 0x11,
    DN2_OP_RVLI   = 0x12,
    DN2_OP_RVS    = 0x14,
    DN2_OP_RVSS   = 0x15,
    DN2_OP_RVSI   = 0x16,
    DN2_OP_IPUSH  = 0x18,
    DN2_OP_LHSV1  = 0x19,
    DN2_OP_LHSV2  = 0x1a,
};
/* Access form: the low 2 bits of the VL/VS/RVL/RVS OTYPEs. */
#define DN2_FORM_CONTIG        0
#define DN2_FORM_STRIDE        1
#define DN2_FORM_LIST          2
static inline int dn2_otype_form(unsigned otype) { return (int)(otype & 3); }
/* The RVL family (RVL, RVLS, RVLI): a request the receiver answers. */
static inline int dn2_otype_is_rvl(unsigned otype)
{
    return otype == DN2_OP_RVL || otype == DN2_OP_RVLS || otype == DN2_OP_RVLI;
}
/* The VL family (VL, VLS, VLI): local SO-DIMM to Prefetch Window. */
static inline int dn2_otype_is_vl(unsigned otype)
{
    return otype == DN2_OP_VL || otype == DN2_OP_VLS || otype == DN2_OP_VLI;
}
/* The VS family (VS, VSS, VSI): Write Window to local SO-DIMM. */
static inline int dn2_otype_is_vs(unsigned otype)
{
    return otype == DN2_OP_VS || otype == DN2_OP_VSS || otype == DN2_OP_VSI;
}
/* The IPUSH family (IPUSH, LHSv1, LHSv2): the receiver's ring decides. */
static inline int dn2_otype_is_ipush(unsigned otype)
{
    return otype == DN2_OP_IPUSH || otype == DN2_OP_LHSV1 || otype == DN2_OP_LHSV2;
}
static inline int dn2_otype_valid(unsigned otype)
{
    switch (otype) {
    case DN2_OP_BOTF: case DN2_OP_VL: case DN2_OP_VLS: case DN2_OP_VLI:
    case DN2_OP_VS: case DN2_OP_VSS: case DN2_OP_VSI: case DN2_OP_RVL:
    case DN2_OP_RVLS: case DN2_OP_RVLI: case DN2_OP_RVS: case DN2_OP_RVSS:
    case DN2_OP_RVSI: case DN2_OP_IPUSH: case DN2_OP_LHSV1: case DN2_OP_LHSV2:
        return 1;
    default:
        return 0;
    }
}
static inline const char *dn2_otype_name(unsigned otype)
{
    switch (otype) {
    case DN2_OP_NOP: return "NOP";
    case DN2_OP_BOTF: return "BOTF";
    case DN2_OP_VL: return "VL";
    case DN2_OP_VLS: return "VLS";
    case DN2_OP_VLI: return "VLI";
    case DN2_OP_VS: return "VS";
    case DN2_OP_VSS: return "VSS";
    case DN2_OP_VSI: return "VSI";
    case DN2_OP_RVL: return "RVL";
    case DN2_OP_RVLS: return "RVLS";
    case DN2_OP_RVLI: return "RVLI";
    case DN2_OP_RVS: return "RVS";
    case DN2_OP_RVSS: return "RVSS";
    case DN2_OP_RVSI: return "RVSI";
    case DN2_OP_IPUSH: return "IPUSH";
    case DN2_OP_LHSV1: return "LHSv1";
    case DN2_OP_LHSV2: return "LHSv2";
    default: return "?";
    }
}

/* DTYPE -> element bytes (Table 4.5): 1 << dtype, 1..128. */
#define DN2_DTYPE_1B  0
#define DN2_DTYPE_2B  1
#define DN2_DTYPE_4B  2
#define DN2_DTYPE_8B  3
#define DN2_DTYPE_16B 4
#define DN2_DTYPE_32B 5
#define DN2_DTYPE_64B 6
#define DN2_DTYPE_128B 7
static inline uint32_t dn2_dtype_bytes(unsigned dtype) { return 1u << (dtype & 7); }

/* Lower word. [EMU] DWID is bit 30 and eflag bit 31. */
#define DN2_REQ_OTYPE_HI 4
#define DN2_REQ_OTYPE_LO 0
#define DN2_REQ_DTYPE_HI 7
#define DN2_REQ_DTYPE_LO 5
#define DN2_REQ_ITER_HI  15
#define DN2_REQ_ITER_LO  8
#define DN2_REQ_DCLID_HI 29
#define DN2_REQ_DCLID_LO 18
#define DN2_REQ_DWID_BIT 30
#define DN2_REQ_EFLAG_BIT 31
#define DN2_REQ_ARG_HI   63   /* Size, Stride or List address */
#define DN2_REQ_ARG_LO   32
#define DN2_ITER_MAX     255u

/* The special SO-DIMM copy offset (§4.6.8): VL-family with DSTOff = this,
 * then VS-family with SRCOff = this. */
#define DN2_COPY_OFF     0xffffffffu

/* A decoded request (the 130-bit FIFO entry plus Command Ex). */
struct dn2_req {
    uint8_t  otype;
    uint8_t  dtype;
    uint8_t  iter;
    uint8_t  dwid;
    uint8_t  eflag;
    uint8_t  rflag;     /* bit 128: 0 = Command0 (SO-DIMM), 1 = Command1 (PW) */
    uint8_t  wid;       /* bit 129: issuing WID */
    uint8_t  has_ex;
    uint16_t dclid;
    uint32_t arg;       /* Size / Stride / List address */
    uint32_t src;       /* SRCOff */
    uint32_t dst;       /* DSTOff */
    /* Command Ex: local-side access pattern */
    uint8_t  ex_otype;
    uint8_t  ex_dtype;
    uint8_t  ex_iter;
    uint32_t ex_arg;
};

static inline uint64_t dn2_req_lower(unsigned otype, unsigned dtype, unsigned iter,
                                     unsigned dclid, unsigned dwid, unsigned eflag,
                                     uint32_t arg)
{
    return DN2_PUT(otype, 4, 0) | DN2_PUT(dtype, 7, 5) | DN2_PUT(iter, 15, 8) |
           DN2_PUT(dclid, 29, 18) | DN2_PUT(dwid, 30, 30) |
           DN2_PUT(eflag, 31, 31) | DN2_PUT(arg, 63, 32);
}
static inline uint64_t dn2_req_upper(uint32_t src, uint32_t dst)
{
    return DN2_PUT(src, 31, 0) | DN2_PUT(dst, 63, 32);
}
/* Command Ex has the Lower layout's OTYPE/DTYPE/Iteration/arg fields. */
static inline uint64_t dn2_req_ex(unsigned otype, unsigned dtype, unsigned iter, uint32_t arg)
{
    return DN2_PUT(otype, 4, 0) | DN2_PUT(dtype, 7, 5) | DN2_PUT(iter, 15, 8) |
           DN2_PUT(arg, 63, 32);
}
static inline void dn2_req_decode(struct dn2_req *r, uint64_t lower, uint64_t upper,
                                  uint64_t ex, int has_ex, int rflag, int wid)
{
    r->otype = (uint8_t)DN2_GET(lower, 4, 0);
    r->dtype = (uint8_t)DN2_GET(lower, 7, 5);
    r->iter = (uint8_t)DN2_GET(lower, 15, 8);
    r->dclid = (uint16_t)DN2_GET(lower, 29, 18);
    r->dwid = (uint8_t)DN2_GET(lower, 30, 30);
    r->eflag = (uint8_t)DN2_GET(lower, 31, 31);
    r->arg = (uint32_t)DN2_GET(lower, 63, 32);
    r->src = (uint32_t)DN2_GET(upper, 31, 0);
    r->dst = (uint32_t)DN2_GET(upper, 63, 32);
    r->rflag = (uint8_t)(rflag & 1);
    r->wid = (uint8_t)(wid & 1);
    r->has_ex = (uint8_t)(has_ex ? 1 : 0);
    r->ex_otype = (uint8_t)DN2_GET(ex, 4, 0);
    r->ex_dtype = (uint8_t)DN2_GET(ex, 7, 5);
    r->ex_iter = (uint8_t)DN2_GET(ex, 15, 8);
    r->ex_arg = (uint32_t)DN2_GET(ex, 63, 32);
}
/* The destination CLID of a request's Lower word. */
static inline unsigned dn2_req_dclid(uint64_t lower)
{
    return (unsigned)DN2_GET(lower, 29, 18);
}
static inline uint64_t dn2_req_encode_lower(const struct dn2_req *r)
{
    return dn2_req_lower(r->otype, r->dtype, r->iter, r->dclid, r->dwid, r->eflag, r->arg);
}

/* BOTF request (Fig 4.14, Table 4.7): Lower only. */
#define DN2_BOTF_MAX           512u
static inline uint64_t dn2_botf_lower(unsigned ww, unsigned size)
{
    return DN2_PUT(DN2_OP_BOTF, 4, 0) | DN2_PUT(ww, 6, 5) | DN2_PUT(size, 41, 32);
}
static inline unsigned dn2_botf_ww(uint64_t lower) { return (unsigned)DN2_GET(lower, 6, 5); }
static inline unsigned dn2_botf_size(uint64_t lower) { return (unsigned)DN2_GET(lower, 41, 32); }

/* LHSv2 reuses DSTOff: [9:0] bytes from the WW, [21:10] WW offset. */
static inline uint32_t dn2_lhsv2_dst(unsigned ww_bytes, unsigned ww_off)
{
    return (uint32_t)(DN2_PUT(ww_bytes, 9, 0) | DN2_PUT(ww_off, 21, 10));
}

/* CLID <-> LID (Table 4.6): CLID = {LID[15:12], LID[7:0]}. */
#define DN2_CLID_MCAST_FIRST   0xc00u
#define DN2_CLID_MCAST_LAST    0xffeu
#define DN2_CLID_INIT          0xfffu
static inline uint16_t dn2_lid_to_clid(uint16_t lid)
{
    return (uint16_t)(((lid >> 4) & 0xf00) | (lid & 0xff));
}
static inline uint16_t dn2_clid_to_lid(uint16_t clid)
{
    return (uint16_t)(((clid & 0xf00u) << 4) | (clid & 0xffu));
}
/* A LID the subnet manager may hand out: bits [11:8] zero, not 0. */
static inline int dn2_lid_assignable(uint16_t lid)
{
    return lid != 0 && (lid & 0x0f00) == 0 && dn2_lid_to_clid(lid) < DN2_CLID_MCAST_FIRST;
}
static inline int dn2_clid_is_mcast(uint16_t clid)
{
    return clid >= DN2_CLID_MCAST_FIRST && clid <= DN2_CLID_MCAST_LAST;
}

/* ======================================================================
 * 5. Packet format (Fig 4.23, Tables 4.14-4.15): lines of 64 data bits.
 *    The BOTF image in a Write Window is this, without the 2-bit line IDs.
 *    [R]/[EMU] bit positions of the 1st DW; see docs/thesis-choices.md.
 * ====================================================================== */
#define DN2_LINE               8u
#define DN2_PKT_MAX            4096u  /* the largest MTU, header included */
#define DN2_HDR_LINES_SHORT    2   /* hflag = 0 */
#define DN2_HDR_LINES_LONG     3   /* hflag = 1: RVSS / RVSI */
#define DN2_HDR_LINES_RVL      4   /* RVL family: always 4, no data */
#define DN2_LINE_ID_FIRST      1u  /* 2'b01 */
#define DN2_LINE_ID_LAST       2u  /* 2'b10 */
#define DN2_LINE_ID_MID        3u  /* 2'b11 */

/* 1st DW */
#define DN2_H0_SIZE_HI   11   /* Packet Size incl. header; 0 means 4096 [EMU] */
#define DN2_H0_SIZE_LO   0
#define DN2_H0_TYPE_HI   16
#define DN2_H0_TYPE_LO   12
#define DN2_H0_DTYPE_HI  19
#define DN2_H0_DTYPE_LO  17
#define DN2_H0_PGID_HI   27
#define DN2_H0_PGID_LO   20
#define DN2_H0_DWID_BIT  28
#define DN2_H0_SWID_BIT  29
#define DN2_H0_DLID_HI   47
#define DN2_H0_DLID_LO   32
#define DN2_H0_ITER_HI   58
#define DN2_H0_ITER_LO   51
#define DN2_H0_RFLAG_BIT 59
#define DN2_H0_EFLAG_BIT 60
#define DN2_H0_HFLAG_BIT 61
#define DN2_H0_LFLAG_BIT 62
#define DN2_H0_PFLAG_BIT 63   /* [EMU] write a status for this packet too */
/* [EMU] IPUSH/LHS request: DTYPE bit 0 (DTYPE means nothing to these
 * contiguous primitives) asks for one status record per message, written
 * by the last packet and describing the whole message, instead of one per
 * packet (the thesis's sender-chosen per-message status; choice #55). */
#define DN2_IPUSH_PER_MESSAGE  1u

struct dn2_hdr {
    uint16_t size;      /* Packet Size, bytes including the header */
    uint8_t  type;      /* OTYPE */
    uint8_t  dtype;
    uint8_t  pgid;
    uint8_t  dwid;
    uint8_t  swid;
    uint16_t dlid;
    uint8_t  iter;
    uint8_t  rflag, eflag, hflag, lflag, pflag;
    uint32_t w1_lo;     /* 2nd DW [31:0]: SRCOff (RVL) / Initial DSTOff (RVS) */
    uint32_t w1_hi;     /* 2nd DW [63:32]: DSTOff */
    uint32_t total;     /* 3rd DW [31:0]: Total Transfer Size */
    uint32_t stride;    /* 3rd DW [63:32]: Stride or List Address */
    uint64_t ex;        /* 4th DW: Command Ex parameters (RVL family) */
};

static inline uint64_t dn2_hdr0_encode(const struct dn2_hdr *h)
{
    return DN2_PUT(h->size, 11, 0) | DN2_PUT(h->type, 16, 12) |
           DN2_PUT(h->dtype, 19, 17) | DN2_PUT(h->pgid, 27, 20) |
           DN2_PUT(h->dwid, 28, 28) | DN2_PUT(h->swid, 29, 29) |
           DN2_PUT(h->dlid, 47, 32) | DN2_PUT(h->iter, 58, 51) |
           DN2_PUT(h->rflag, 59, 59) | DN2_PUT(h->eflag, 60, 60) |
           DN2_PUT(h->hflag, 61, 61) | DN2_PUT(h->lflag, 62, 62) |
           DN2_PUT(h->pflag, 63, 63);
}
static inline void dn2_hdr0_decode(struct dn2_hdr *h, uint64_t w)
{
    h->size = (uint16_t)DN2_GET(w, 11, 0);
    h->type = (uint8_t)DN2_GET(w, 16, 12);
    h->dtype = (uint8_t)DN2_GET(w, 19, 17);
    h->pgid = (uint8_t)DN2_GET(w, 27, 20);
    h->dwid = (uint8_t)DN2_GET(w, 28, 28);
    h->swid = (uint8_t)DN2_GET(w, 29, 29);
    h->dlid = (uint16_t)DN2_GET(w, 47, 32);
    h->iter = (uint8_t)DN2_GET(w, 58, 51);
    h->rflag = (uint8_t)DN2_GET(w, 59, 59);
    h->eflag = (uint8_t)DN2_GET(w, 60, 60);
    h->hflag = (uint8_t)DN2_GET(w, 61, 61);
    h->lflag = (uint8_t)DN2_GET(w, 62, 62);
    h->pflag = (uint8_t)DN2_GET(w, 63, 63);
}
/* Fields of the 1st DW that BOTF overwrites: Packet Size and PGID. */
#define DN2_H0_BOTF_PATCH_MASK (DN2_MASK(11, 0) | DN2_MASK(27, 20))
static inline uint64_t dn2_hdr1_encode(uint32_t lo, uint32_t hi)
{
    return DN2_PUT(lo, 31, 0) | DN2_PUT(hi, 63, 32);
}
/* Header lines for a given TYPE (hflag = 1 when more than 2). */
static inline unsigned dn2_hdr_lines(unsigned type)
{
    switch (type) {
    case DN2_OP_RVL: case DN2_OP_RVLS: case DN2_OP_RVLI:
        return DN2_HDR_LINES_RVL;
    case DN2_OP_RVSS: case DN2_OP_RVSI:
        return DN2_HDR_LINES_LONG;
    default:
        return DN2_HDR_LINES_SHORT;
    }
}
/* Packet Size field <-> bytes (12 bits; 0 encodes 4096 [EMU]). */
static inline uint32_t dn2_pkt_size_bytes(uint16_t field) { return field ? field : 4096u; }
static inline uint16_t dn2_pkt_size_field(uint32_t bytes) { return (uint16_t)(bytes & 0xfff); }

/*
 * How the 2nd/3rd DW are used per packet TYPE [EMU where marked]:
 *  RVS  (2 lines): 2nd = {DSTOff of this packet [63:32], Initial DSTOff [31:0]}
 *  RVSS/RVSI (3):  2nd = {index of the first element in this packet [63:32] [EMU],
 *                         Initial DSTOff [31:0]}; 3rd = {Stride/List, Total};
 *                  Iteration = elements in this packet.
 *  RVL family (4): 2nd = {DSTOff on the requester, SRCOff on the responder};
 *                  3rd = {Stride/List, Total}; 4th = Command Ex of the
 *                  requester (the requester-side pattern), 0 if none.
 *  IPUSH (2):      2nd = {byte offset of this packet in the message [63:32],
 *                         message bytes [31:0]} [EMU] (DSTOff is ignored).
 */

/* ======================================================================
 * 5b. IPUSH receive rings [EMU] (the thesis leaves the entry open).
 *  The AMT Address Table maps a sender {LID, WID} to an AMT entry address:
 *  Value x 16 bytes from the LLCM region base (it must lie in the receiving
 *  process's LLCM).  An AMT entry, 16 bytes in LLCM, all 32-bit LE:
 *    +0 Head  byte offset in the ring of the oldest unread data (host writes)
 *    +4 Tail  byte offset in the ring where the next data goes (NIC writes)
 *    +8 Base  SO-DIMM offset of the ring in the receiving process's area
 *    +12 Size ring bytes, a multiple of 8; one 8-byte slot stays free
 *  Each packet's data lands at Tail (wrapping), rounded up to 8 bytes.
 *  The ring must lie inside the first IPUSH Area Size x 4 KiB of the
 *  process's SO-DIMM area; IPUSH Area Size 0 disables IPUSH reception.
 * ====================================================================== */
#define DN2_AMT_UNIT           16u
#define DN2_AMT_ENTRY          16u
#define DN2_AMT_HEAD           0u
#define DN2_AMT_TAIL           4u
#define DN2_AMT_BASE           8u
#define DN2_AMT_SIZE           12u
/* The receiving process an AMT entry serves: the one whose LLCM holds it
 * (an entry in the other process's LLCM is refused at lookup anyway). */
static inline uint32_t dn2_amt_value_wid(uint32_t value)
{
    return (uint32_t)((value * DN2_AMT_UNIT) / DN2_LLCM_WID_STRIDE) & 1;
}
#define DN2_IPUSH_AREA_UNIT    4096u
#define DN2_RING_ALIGN         8u

/* ======================================================================
 * 6. Receive-status record (§2.3, Table 4.9): 16 bytes in the LLCM ring,
 *    laid out like a request: Lower word at +0, Upper word at +8 [EMU].
 *    DCLID/DWID = the sender, SRCOff = first address the data was written
 *    to, DSTOff = 0, Size = total bytes of the primitive (or of the packet
 *    when written per packet).
 * ====================================================================== */
#define DN2_STATUS_REC_SIZE    16u
struct dn2_status_rec {
    uint64_t lower;
    uint64_t upper;
};

/* ======================================================================
 * 7. LH Buffer entry (Fig 7.7): 64 bytes; [EMU] line placement:
 *    line0 = {Pointer[63:32], Context[31:16], Rank[15:2], Valid[1], Complete[0]}
 *    line1 = {Tag[63:32], Size[31:0]}, lines 2..7 = 48 B of user data.
 *    Sender's first message word: Context[63:48], Rank[45:32], Tag[31:0].
 * ====================================================================== */
#define DN2_LHB_ENTRIES        64u
#define DN2_LHB_ENTRY          64u
#define DN2_LHB_DATA           48u
#define DN2_LH_COMPLETE        DN2_BIT(0)
#define DN2_LH_VALID           DN2_BIT(1)
static inline uint64_t dn2_envelope(unsigned context, unsigned rank, uint32_t tag)
{
    return DN2_PUT(context, 63, 48) | DN2_PUT(rank, 45, 32) | DN2_PUT(tag, 31, 0);
}

#endif /* DIMMNET2_DN2_ABI_H */
