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
 * HOW TO USE IT: every layout has one codec here; nobody else writes a bit
 * number.
 *
 *  - Every field of every layout is a named inclusive bit range, a pair of
 *    constants FIELD_HI / FIELD_LO (single bits too: HI == LO).  Read or
 *    build a word by field name, without the _HI/_LO suffix:
 *        DN2_FGET(word, DN2_H0_DLID)        the field's value
 *        DN2_FPUT(value, DN2_H0_DLID)       the value in place (truncated)
 *        DN2_FMASK(DN2_H0_DLID)             the field's mask in the word
 *        DN2_FSET(word, DN2_H0_DLID, value) the word with the field replaced
 *    DN2_GET/DN2_PUT(v, hi, lo) stay as the primitives underneath.
 *  - Each layout has a decoded struct and a pack / unpack pair:
 *        request Lower/Upper   struct dn2_req     dn2_req_lower() dn2_req_upper()
 *                                                 dn2_req_decode() dn2_req_otype()
 *        Command Ex            struct dn2_cmd_ex  dn2_ex_pack() dn2_ex_unpack()
 *                                                 (dn2_req_ex() builds it too)
 *        BOTF request          -                  dn2_botf_lower() dn2_botf_ww()
 *                                                 dn2_botf_size()
 *        LHSv2 DSTOff          -                  dn2_lhsv2_dst() dn2_lhsv2_ww_bytes()
 *                                                 dn2_lhsv2_ww_off()
 *        packet header lines   struct dn2_hdr     dn2_hdr_pack() dn2_hdr_unpack()
 *          1-4 (whole header)                     (line by line: dn2_hdr0_encode/
 *                                                 _decode, dn2_hdr1_encode/_decode,
 *                                                 dn2_hdr2_encode/_decode, line 4 =
 *                                                 Command Ex)
 *        receive-status record struct dn2_status_fields
 *                                                 dn2_status_pack() dn2_status_unpack()
 *        LH Buffer entry       struct dn2_lh_entry
 *                                                 dn2_lh_line0() dn2_lh_line1()
 *                                                 dn2_lh_unpack()
 *        LHS envelope word     struct dn2_env     dn2_envelope() dn2_env_unpack()
 *        SMA LID read-back     -                  dn2_sma_encode() dn2_sma_lid()
 *                                                 dn2_sma_link() dn2_sma_link_ready()
 *        Module State          struct dn2_module_state
 *                                                 dn2_ms_pack() dn2_ms_unpack()
 *        Controller Status     -                  dn2_cs_rx_err() dn2_cs_ww()
 *        AMT Address Table     struct dn2_amt_req dn2_amt_encode() dn2_amt_encode_dwid()
 *          write                                  dn2_amt_decode()
 *        AMT table slot (the   -                  dn2_amt_slot() dn2_amt_slot_valid()
 *          device's, 16 bits)                     dn2_amt_slot_value()
 *        CLID <-> LID          -                  dn2_lid_to_clid() dn2_clid_to_lid()
 *  - The OTYPE family (Table 4.13) as predicates, never a bare mask:
 *        dn2_otype_form()  (low bits: contiguous / stride / list)
 *        dn2_otype_family() (OTYPE without its form: DN2_OP_VL, _VS, _RVL,
 *                            _RVS, _IPUSH; mask DN2_OTYPE_FAMILY_MASK = 0x1c)
 *        dn2_otype_is_msg() (IPUSH, LHSv1, LHSv2; DN2_OTYPE_CLASS_MASK = 0x18)
 *        dn2_otype_is_rvl() dn2_otype_is_rvs() dn2_otype_is_local()
 *        dn2_otype_is_lhs() dn2_otype_valid() dn2_otype_name()
 *        DN2_OTYPE_MASK (= 0x1f, the OTYPE field) for a whole word.
 *  - The one-hot configuration codes, both ways:
 *        MTU             dn2_mtu_bytes(reg)            dn2_mtu_reg(bytes)
 *        SO-DIMM capacity dn2_sdimm_module_bytes(reg)  dn2_sdimm_capacity_reg(bytes)
 *        status ring size dn2_status_area_bytes(reg)   dn2_status_size_reg(bytes)
 *    An encoder returns 0 for a size the board cannot express (0 is never
 *    a valid one-hot code).
 *
 * Source: Tsuji (Kitamura), Keio University PhD thesis 2007, cited by
 * section, figure, table and page.  Every place where the thesis is
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
/* The same by field name: F is a field whose bits are F##_HI .. F##_LO. */
#define DN2_FMASK(F)           DN2_MASK(F##_HI, F##_LO)
#define DN2_FGET(v, F)         DN2_GET(v, F##_HI, F##_LO)
#define DN2_FPUT(x, F)         DN2_PUT(x, F##_HI, F##_LO)
#define DN2_FSET(v, F, x)      (((uint64_t)(v) & ~DN2_FMASK(F)) | DN2_FPUT(x, F))
#define DN2_FBITS(F)           ((F##_HI) - (F##_LO) + 1)
/* DN2_FBITS(F) is also the number of codes of a one-hot field F. */

/* One-hot codes: reg == 1 << k means unit << k, for k < ncodes.  -1 when
 * reg is not one-hot inside the field (the callers then use their default). */
static inline int dn2_onehot_k(uint64_t reg, int ncodes)
{
    int k;

    for (k = 0; k < ncodes; k++) {
        if (reg == DN2_BIT(k)) {
            return k;
        }
    }
    return -1;
}
/* The one-hot register value for bytes = unit << k, k < ncodes; 0 if none. */
static inline uint64_t dn2_onehot_reg(uint64_t unit, int ncodes, uint64_t bytes)
{
    int k;

    for (k = 0; k < ncodes; k++) {
        if ((unit << k) == bytes) {
            return DN2_BIT(k);
        }
    }
    return 0;
}

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
#define DN2_CS_REQ_PENDING_BIT 0   /* request not yet moved to the FIFO */
#define DN2_CS_SDIMM_READY_BIT 1   /* SO-DIMM initialisation complete */
#define DN2_CS_FIFO_AFULL_BIT  2   /* Request FIFO almost full */
#define DN2_CS_STATUS_FULL_BIT 3   /* receive-status ring full */
#define DN2_CS_STATUS_EMPTY_BIT 4  /* receive-status ring empty */
#define DN2_CS_WW0_LO          5   /* WW#0 status: 3 bits, then WW#1 ... WW#3 */
#define DN2_CS_WW_BITS         3   /* per window: done, src overflow, dst overflow */
#define DN2_CS_WW_DONE_OFF     0   /* SO-DIMM write complete */
#define DN2_CS_WW_SRC_OVF_OFF  1   /* src+size past window end */
#define DN2_CS_WW_DST_OVF_OFF  2   /* dst+size past SO-DIMM area */
#define DN2_CS_RX_OVF_BIT      17  /* data ran past the receive area */
#define DN2_CS_RX_ERR_HI       19  /* [19:18] receive error state */
#define DN2_CS_RX_ERR_LO       18
/* [EMU] extension: a request was refused because of invalid parameters
 * (offset outside the process's window area or SO-DIMM area, no SO-DIMM
 * initialised, unpaired SO-DIMM copy...).  Sticky until a write to the
 * Primitive Counter reset register or a Controller Reset. */
#define DN2_CS_REQ_ERROR_BIT   20

#define DN2_CS_REQ_PENDING     DN2_BIT(DN2_CS_REQ_PENDING_BIT)
#define DN2_CS_SDIMM_READY     DN2_BIT(DN2_CS_SDIMM_READY_BIT)
#define DN2_CS_FIFO_AFULL      DN2_BIT(DN2_CS_FIFO_AFULL_BIT)
#define DN2_CS_STATUS_FULL     DN2_BIT(DN2_CS_STATUS_FULL_BIT)
#define DN2_CS_STATUS_EMPTY    DN2_BIT(DN2_CS_STATUS_EMPTY_BIT)
#define DN2_CS_WW_SHIFT(n)     (DN2_CS_WW0_LO + DN2_CS_WW_BITS * (n))  /* WW#n base bit */
#define DN2_CS_WW_DONE(n)      DN2_BIT(DN2_CS_WW_SHIFT(n) + DN2_CS_WW_DONE_OFF)
#define DN2_CS_WW_SRC_OVF(n)   DN2_BIT(DN2_CS_WW_SHIFT(n) + DN2_CS_WW_SRC_OVF_OFF)
#define DN2_CS_WW_DST_OVF(n)   DN2_BIT(DN2_CS_WW_SHIFT(n) + DN2_CS_WW_DST_OVF_OFF)
#define DN2_CS_WW_MASK(n)      DN2_MASK(DN2_CS_WW_SHIFT(n) + DN2_CS_WW_BITS - 1, \
                                        DN2_CS_WW_SHIFT(n))
#define DN2_CS_RX_OVF          DN2_BIT(DN2_CS_RX_OVF_BIT)
#define DN2_CS_RX_ERR_SHIFT    DN2_CS_RX_ERR_LO
#define DN2_CS_RX_ERR_MASK     DN2_FMASK(DN2_CS_RX_ERR)
#define DN2_CS_REQ_ERROR       DN2_BIT(DN2_CS_REQ_ERROR_BIT)
#define DN2_RX_ERR_NONE        0u
#define DN2_RX_ERR_EARLY_SOP   1u  /* 1st DW of the next packet before EOP */
#define DN2_RX_ERR_HFLAG       2u  /* hflag does not match header line count */
#define DN2_RX_ERR_RVL_DATA    3u  /* illegal RVL-type packet (with data) */
/* The receive error state (DN2_RX_ERR_*) of a Controller Status value. */
static inline unsigned dn2_cs_rx_err(uint64_t cs)
{
    return (unsigned)DN2_FGET(cs, DN2_CS_RX_ERR);
}
/* The 3 status bits of Write Window n ({dst ovf, src ovf, done}). */
static inline unsigned dn2_cs_ww(uint64_t cs, unsigned n)
{
    return (unsigned)((cs & DN2_CS_WW_MASK(n)) >> DN2_CS_WW_SHIFT(n));
}

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
#define DN2_PWF_WIN_SHIFT(n)   (DN2_PW_LINES_PER_WIN * (n))
#define DN2_PWF_WIN_MASK(n)    (DN2_MASK(DN2_PW_LINES_PER_WIN - 1, 0) << DN2_PWF_WIN_SHIFT(n))
#define DN2_PWF_ALL            DN2_MASK(DN2_PW_LINES_PER_WIN * DN2_NUM_WW - 1, 0)

/* Status Area Size (Table A.5): one-hot [6:0], 64 B << k; 0/other = 1024 B. */
#define DN2_STATUS_SIZE_CODE_HI 6
#define DN2_STATUS_SIZE_CODE_LO 0
#define DN2_STATUS_SIZE_MIN    64u
#define DN2_STATUS_SIZE_DEFAULT 1024u
static inline uint32_t dn2_status_area_bytes(uint64_t reg)
{
    int k = dn2_onehot_k(DN2_FGET(reg, DN2_STATUS_SIZE_CODE),
                         DN2_FBITS(DN2_STATUS_SIZE_CODE));

    return k < 0 ? DN2_STATUS_SIZE_DEFAULT : DN2_STATUS_SIZE_MIN << k;
}
/* The Status Area Size value for a ring of 'bytes'; 0 if not a size. */
static inline uint64_t dn2_status_size_reg(uint32_t bytes)
{
    return dn2_onehot_reg(DN2_STATUS_SIZE_MIN, DN2_FBITS(DN2_STATUS_SIZE_CODE), bytes);
}
#define DN2_STATUS_INIT_MASK   0x7fffu
#define DN2_STATUS_ADDR_MASK   0x7fffu
#define DN2_LHB_ADDR_MASK      0xfffu
#define DN2_IPUSH_AREA_MASK    0xffffu

/* Module State (Table A.4): debug fields. */
#define DN2_MS_WC_HI           16  /* [16:0] Window Controller */
#define DN2_MS_WC_LO           0
#define DN2_MS_RC_HI           36  /* [36:17] Receive Controller */
#define DN2_MS_RC_LO           17
#define DN2_MS_WU_HI           50  /* [50:37] Write Unit */
#define DN2_MS_WU_LO           37
#define DN2_MS_PU_HI           57  /* [57:51] Prefetch Unit */
#define DN2_MS_PU_LO           51
#define DN2_MS_WC_SHIFT        DN2_MS_WC_LO
#define DN2_MS_RC_SHIFT        DN2_MS_RC_LO
#define DN2_MS_WU_SHIFT        DN2_MS_WU_LO
#define DN2_MS_PU_SHIFT        DN2_MS_PU_LO
/* [EMU] encodings: each field is 0 when idle; the Window Controller field
 * holds 1 + the OTYPE being executed.  Receive Controller: bit 0 = it holds
 * a packet back (a ring or the RC FIFO full), bit 1 = it answers an RVL
 * (its own executor, choice #44).  Write Unit: 1 while a VS-family request
 * or a SO-DIMM copy writes the SO-DIMM.  Prefetch Unit: 1 while a request
 * reads the SO-DIMM (VL family, a copy, RVS/IPUSH/LHS data, an RVL answer). */
#define DN2_MS_RC_HOLDING      1u
#define DN2_MS_RC_ANSWERING    2u
#define DN2_MS_UNIT_BUSY       1u
#define DN2_MS_WC_OTYPE_BIAS   1u  /* WC field = OTYPE + this while busy */
struct dn2_module_state {
    uint32_t wc;        /* 0 idle, else DN2_MS_WC_OTYPE_BIAS + OTYPE */
    uint32_t rc;        /* DN2_MS_RC_HOLDING | DN2_MS_RC_ANSWERING */
    uint32_t wu;        /* DN2_MS_UNIT_BUSY or 0 */
    uint32_t pu;        /* DN2_MS_UNIT_BUSY or 0 */
};
static inline uint64_t dn2_ms_pack(const struct dn2_module_state *m)
{
    return DN2_FPUT(m->wc, DN2_MS_WC) | DN2_FPUT(m->rc, DN2_MS_RC) |
           DN2_FPUT(m->wu, DN2_MS_WU) | DN2_FPUT(m->pu, DN2_MS_PU);
}
static inline void dn2_ms_unpack(uint64_t v, struct dn2_module_state *m)
{
    m->wc = (uint32_t)DN2_FGET(v, DN2_MS_WC);
    m->rc = (uint32_t)DN2_FGET(v, DN2_MS_RC);
    m->wu = (uint32_t)DN2_FGET(v, DN2_MS_WU);
    m->pu = (uint32_t)DN2_FGET(v, DN2_MS_PU);
}
/* The Window Controller field for a request of otype being executed. */
static inline uint32_t dn2_ms_wc_busy(unsigned otype)
{
    return DN2_MS_WC_OTYPE_BIAS + otype;
}

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
/* The value fields of the LID and PGID registers. */
#define DN2_SR_LID_VALUE_HI    15
#define DN2_SR_LID_VALUE_LO    0
#define DN2_SR_PGID_VALUE_HI   7
#define DN2_SR_PGID_VALUE_LO   0

/* SMA LID read-back: [15:0] LID from the subnet manager, [17:16] link. */
#define DN2_SMA_LID_HI         15
#define DN2_SMA_LID_LO         0
#define DN2_SMA_LINK_HI        17
#define DN2_SMA_LINK_LO        16
#define DN2_SMA_LID_MASK       DN2_FMASK(DN2_SMA_LID)
#define DN2_SMA_LINK_SHIFT     DN2_SMA_LINK_LO
#define DN2_SMA_LINK_MASK      DN2_FMASK(DN2_SMA_LINK)
#define DN2_SMA_LINK_READY     3u      /* 2'b11: ready to communicate */
static inline uint64_t dn2_sma_encode(uint16_t lid, unsigned link)
{
    return DN2_FPUT(lid, DN2_SMA_LID) | DN2_FPUT(link, DN2_SMA_LINK);
}
static inline uint16_t dn2_sma_lid(uint64_t v) { return (uint16_t)DN2_FGET(v, DN2_SMA_LID); }
static inline unsigned dn2_sma_link(uint64_t v) { return (unsigned)DN2_FGET(v, DN2_SMA_LINK); }
static inline int dn2_sma_link_ready(uint64_t v)
{
    return dn2_sma_link(v) == DN2_SMA_LINK_READY;
}

/* SO-DIMM Capacity (Table 4.10): per module, one-hot [5:0], 256 MiB << k. */
#define DN2_SDIMM_CAP_CODE_HI  5
#define DN2_SDIMM_CAP_CODE_LO  0
#define DN2_SDIMM_CAP_MIN      (256ULL << 20)
#define DN2_SDIMM_MODULES      2
#define DN2_SDIMM_CAP_DEFAULT  DN2_SDIMM_CAP_MIN
static inline uint64_t dn2_sdimm_module_bytes(uint64_t reg)
{
    int k = dn2_onehot_k(DN2_FGET(reg, DN2_SDIMM_CAP_CODE), DN2_FBITS(DN2_SDIMM_CAP_CODE));

    return k < 0 ? DN2_SDIMM_CAP_DEFAULT : DN2_SDIMM_CAP_MIN << k;
}
/* The SO-DIMM Capacity value for modules of 'bytes'; 0 if not a size. */
static inline uint64_t dn2_sdimm_capacity_reg(uint64_t bytes)
{
    return dn2_onehot_reg(DN2_SDIMM_CAP_MIN, DN2_FBITS(DN2_SDIMM_CAP_CODE), bytes);
}
/* Two modules interleaved in 8-byte units: SO-DIMM1 holds 0x0-0x7, SO-DIMM2
 * 0x8-0xf, ...  Capacity is split evenly between WID 0 and WID 1; every
 * SO-DIMM offset in a request is relative to the issuing process's half
 * [EMU].  These give the module and the offset inside it of a board-global
 * SO-DIMM byte address. */
#define DN2_SDIMM_INTERLEAVE   8u
static inline unsigned dn2_sdimm_module(uint64_t addr)
{
    return (unsigned)((addr / DN2_SDIMM_INTERLEAVE) % DN2_SDIMM_MODULES);
}
static inline uint64_t dn2_sdimm_module_offset(uint64_t addr)
{
    return addr / (DN2_SDIMM_INTERLEAVE * DN2_SDIMM_MODULES) * DN2_SDIMM_INTERLEAVE +
           addr % DN2_SDIMM_INTERLEAVE;
}

/* MTU (Table 4.11): one-hot [4:0], 256 B << k; "10100" in the thesis read
 * as 00100 [EMU]. */
#define DN2_MTU_CODE_HI        4
#define DN2_MTU_CODE_LO        0
#define DN2_MTU_MIN            256u
#define DN2_MTU_DEFAULT        2048u
#define DN2_MTU_THESIS_1024    0x14u   /* the thesis's literal "10100" ... */
#define DN2_MTU_THESIS_1024_AS 0x04u   /* ... read as this code (1024 B) */
static inline uint32_t dn2_mtu_bytes(uint64_t reg)
{
    uint64_t code = DN2_FGET(reg, DN2_MTU_CODE);
    int k;

    if (code == DN2_MTU_THESIS_1024) {
        code = DN2_MTU_THESIS_1024_AS;
    }
    k = dn2_onehot_k(code, DN2_FBITS(DN2_MTU_CODE));
    return k < 0 ? DN2_MTU_DEFAULT : DN2_MTU_MIN << k;
}
/* The MTU register value for 'bytes' (256..4096); 0 if not an MTU. */
static inline uint64_t dn2_mtu_reg(uint32_t bytes)
{
    return dn2_onehot_reg(DN2_MTU_MIN, DN2_FBITS(DN2_MTU_CODE), bytes);
}

/* AMT Address Table interface (App. B, Fig B.1) [R]. */
#define DN2_AMT_VALUE_HI       11   /* [11:0] AMT entry address */
#define DN2_AMT_VALUE_LO       0
#define DN2_AMT_WID_HI         13   /* [13:12] sender WID */
#define DN2_AMT_WID_LO         12
#define DN2_AMT_LID_HI         29   /* [29:14] sender LID */
#define DN2_AMT_LID_LO         14
/* [EMU] extension (choice #52): the entry belongs to one receiving process.
 * Bit 31 set: only the entry of DWID = bit 30 is written; clear: both
 * processes' entries, as on the thesis's per-board table. */
#define DN2_AMT_DWID_HI        30
#define DN2_AMT_DWID_LO        30
#define DN2_AMT_DWID_GIVEN_HI  31
#define DN2_AMT_DWID_GIVEN_LO  31
#define DN2_AMT_VALUE_MASK     DN2_FMASK(DN2_AMT_VALUE)
#define DN2_AMT_WID_SHIFT      DN2_AMT_WID_LO
#define DN2_AMT_LID_SHIFT      DN2_AMT_LID_LO
#define DN2_AMT_DWID_BIT       DN2_AMT_DWID_LO
#define DN2_AMT_DWID_GIVEN_BIT DN2_AMT_DWID_GIVEN_LO
struct dn2_amt_req {
    uint32_t value;     /* AMT entry address, in DN2_AMT_UNIT from the LLCM base */
    uint8_t  wid;       /* sender WID */
    uint16_t lid;       /* sender LID */
    uint8_t  dwid;      /* the receiving WID, when dwid_given */
    uint8_t  dwid_given;
};
static inline uint64_t dn2_amt_encode(uint32_t value, uint32_t wid, uint32_t lid)
{
    return DN2_FPUT(value, DN2_AMT_VALUE) | DN2_FPUT(wid, DN2_AMT_WID) |
           DN2_FPUT(lid, DN2_AMT_LID);
}
/* The same for the receiving process dwid only. */
static inline uint64_t dn2_amt_encode_dwid(uint32_t value, uint32_t wid, uint32_t lid,
                                           uint32_t dwid)
{
    return dn2_amt_encode(value, wid, lid) | DN2_FPUT(dwid, DN2_AMT_DWID) |
           DN2_FPUT(1, DN2_AMT_DWID_GIVEN);
}
static inline void dn2_amt_decode(uint64_t v, struct dn2_amt_req *a)
{
    a->value = (uint32_t)DN2_FGET(v, DN2_AMT_VALUE);
    a->wid = (uint8_t)DN2_FGET(v, DN2_AMT_WID);
    a->lid = (uint16_t)DN2_FGET(v, DN2_AMT_LID);
    a->dwid = (uint8_t)DN2_FGET(v, DN2_AMT_DWID);
    a->dwid_given = (uint8_t)DN2_FGET(v, DN2_AMT_DWID_GIVEN);
}
/* Whether an AMT write with these fields sets the entry of receiving WID
 * 'dwid' (choice #52: bit 31 clear = both processes' entries). */
static inline int dn2_amt_req_for(const struct dn2_amt_req *a, unsigned dwid)
{
    return !a->dwid_given || a->dwid == dwid;
}
/* [EMU] the board's table holds one 16-bit slot per {sender, receiving
 * WID}: bit 15 = written (else empty), [11:0] = the Value written. */
#define DN2_AMT_SLOT_VALID_HI  15
#define DN2_AMT_SLOT_VALID_LO  15
#define DN2_AMT_SLOT_VALUE_HI  DN2_AMT_VALUE_HI
#define DN2_AMT_SLOT_VALUE_LO  DN2_AMT_VALUE_LO
#define DN2_AMT_SLOT_VALID     DN2_FMASK(DN2_AMT_SLOT_VALID)   /* 0x8000 */
/* The bits a slot may hold (anything else is a corrupt slot). */
#define DN2_AMT_SLOT_MASK      (DN2_AMT_SLOT_VALID | DN2_FMASK(DN2_AMT_SLOT_VALUE))
static inline uint16_t dn2_amt_slot(uint32_t value)
{
    return (uint16_t)(DN2_AMT_SLOT_VALID | DN2_FPUT(value, DN2_AMT_SLOT_VALUE));
}
static inline int dn2_amt_slot_valid(uint16_t slot)
{
    return (int)DN2_FGET(slot, DN2_AMT_SLOT_VALID);
}
static inline uint32_t dn2_amt_slot_value(uint16_t slot)
{
    return (uint32_t)DN2_FGET(slot, DN2_AMT_SLOT_VALUE);
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
/* Fields of an OTYPE value (5 bits, Table 4.13):
 *   [1:0] FORM    access form of the VL/VS/RVL/RVS families
 *   [4:2] FAMILY  the OTYPE without its form: VL, VS, RVL, RVS, IPUSH (the
 *                 IPUSH family holds IPUSH, LHSv1 and LHSv2)
 *   [4:3] CLASS   3 = the message primitives (IPUSH, LHSv1, LHSv2) */
#define DN2_OTYPE_FORM_HI      1
#define DN2_OTYPE_FORM_LO      0
#define DN2_OTYPE_FAMILY_HI    4
#define DN2_OTYPE_FAMILY_LO    2
#define DN2_OTYPE_CLASS_HI     4
#define DN2_OTYPE_CLASS_LO     3
#define DN2_OTYPE_CLASS_MSG    3u
#define DN2_OTYPE_FAMILY_MASK  DN2_FMASK(DN2_OTYPE_FAMILY)   /* 0x1c */
#define DN2_OTYPE_CLASS_MASK   DN2_FMASK(DN2_OTYPE_CLASS)    /* 0x18 */
/* Access form: the low 2 bits of the VL/VS/RVL/RVS OTYPEs. */
#define DN2_FORM_CONTIG        0
#define DN2_FORM_STRIDE        1
#define DN2_FORM_LIST          2
static inline int dn2_otype_form(unsigned otype)
{
    return (int)DN2_FGET(otype, DN2_OTYPE_FORM);
}
/* The OTYPE without its form bits: DN2_OP_VL, _VS, _RVL, _RVS or _IPUSH
 * (also for LHSv1/LHSv2), DN2_OP_NOP for NOP and BOTF. */
static inline unsigned dn2_otype_family(unsigned otype)
{
    return (unsigned)(otype & DN2_OTYPE_FAMILY_MASK);
}
/* IPUSH, LHSv1, LHSv2 (and the unused OTYPEs of their class). */
static inline int dn2_otype_is_msg(unsigned otype)
{
    return DN2_FGET(otype, DN2_OTYPE_CLASS) == DN2_OTYPE_CLASS_MSG;
}
static inline int dn2_otype_is_lhs(unsigned otype)
{
    return otype == DN2_OP_LHSV1 || otype == DN2_OP_LHSV2;
}
/* The RVL family (RVL, RVLS, RVLI): a request the receiver answers. */
static inline int dn2_otype_is_rvl(unsigned otype)
{
    return otype == DN2_OP_RVL || otype == DN2_OP_RVLS || otype == DN2_OP_RVLI;
}
/* The RVS family (RVS, RVSS, RVSI). */
static inline int dn2_otype_is_rvs(unsigned otype)
{
    return otype == DN2_OP_RVS || otype == DN2_OP_RVSS || otype == DN2_OP_RVSI;
}
/* The local families VL and VS (and their strided / list forms). */
static inline int dn2_otype_is_local(unsigned otype)
{
    return otype == DN2_OP_VL || otype == DN2_OP_VLS || otype == DN2_OP_VLI ||
           otype == DN2_OP_VS || otype == DN2_OP_VSS || otype == DN2_OP_VSI;
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
#define DN2_DTYPE_MASK 7u   /* the 3-bit DTYPE field */
static inline uint32_t dn2_dtype_bytes(unsigned dtype) { return 1u << (dtype & DN2_DTYPE_MASK); }

/* Lower word. [EMU] DWID is bit 30 and eflag bit 31. */
#define DN2_REQ_OTYPE_HI 4
#define DN2_REQ_OTYPE_LO 0
#define DN2_REQ_DTYPE_HI 7
#define DN2_REQ_DTYPE_LO 5
#define DN2_REQ_ITER_HI  15
#define DN2_REQ_ITER_LO  8
#define DN2_REQ_DCLID_HI 29
#define DN2_REQ_DCLID_LO 18
#define DN2_REQ_DWID_HI  30
#define DN2_REQ_DWID_LO  30
#define DN2_REQ_EFLAG_HI 31
#define DN2_REQ_EFLAG_LO 31
#define DN2_REQ_ARG_HI   63   /* Size, Stride or List address */
#define DN2_REQ_ARG_LO   32
#define DN2_REQ_DWID_BIT DN2_REQ_DWID_LO
#define DN2_REQ_EFLAG_BIT DN2_REQ_EFLAG_LO
#define DN2_ITER_MAX     255u
/* Upper word. */
#define DN2_REQ_SRC_HI   31   /* SRCOff */
#define DN2_REQ_SRC_LO   0
#define DN2_REQ_DST_HI   63   /* DSTOff */
#define DN2_REQ_DST_LO   32
/* Command Ex: the Lower layout's OTYPE / DTYPE / Iteration / arg fields. */
#define DN2_EX_OTYPE_HI  DN2_REQ_OTYPE_HI
#define DN2_EX_OTYPE_LO  DN2_REQ_OTYPE_LO
#define DN2_EX_DTYPE_HI  DN2_REQ_DTYPE_HI
#define DN2_EX_DTYPE_LO  DN2_REQ_DTYPE_LO
#define DN2_EX_ITER_HI   DN2_REQ_ITER_HI
#define DN2_EX_ITER_LO   DN2_REQ_ITER_LO
#define DN2_EX_ARG_HI    DN2_REQ_ARG_HI
#define DN2_EX_ARG_LO    DN2_REQ_ARG_LO
/* The OTYPE field of a whole word (0x1f). */
#define DN2_OTYPE_MASK   DN2_FMASK(DN2_REQ_OTYPE)

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
/* A decoded Command Ex word (also the 4th header line of the RVL family). */
struct dn2_cmd_ex {
    uint8_t  otype;     /* 0 = none */
    uint8_t  dtype;
    uint8_t  iter;
    uint32_t arg;       /* Size / Stride / List address */
};

static inline uint64_t dn2_req_lower(unsigned otype, unsigned dtype, unsigned iter,
                                     unsigned dclid, unsigned dwid, unsigned eflag,
                                     uint32_t arg)
{
    return DN2_FPUT(otype, DN2_REQ_OTYPE) | DN2_FPUT(dtype, DN2_REQ_DTYPE) |
           DN2_FPUT(iter, DN2_REQ_ITER) | DN2_FPUT(dclid, DN2_REQ_DCLID) |
           DN2_FPUT(dwid, DN2_REQ_DWID) | DN2_FPUT(eflag, DN2_REQ_EFLAG) |
           DN2_FPUT(arg, DN2_REQ_ARG);
}
static inline uint64_t dn2_req_upper(uint32_t src, uint32_t dst)
{
    return DN2_FPUT(src, DN2_REQ_SRC) | DN2_FPUT(dst, DN2_REQ_DST);
}
static inline uint64_t dn2_req_ex(unsigned otype, unsigned dtype, unsigned iter, uint32_t arg)
{
    return DN2_FPUT(otype, DN2_EX_OTYPE) | DN2_FPUT(dtype, DN2_EX_DTYPE) |
           DN2_FPUT(iter, DN2_EX_ITER) | DN2_FPUT(arg, DN2_EX_ARG);
}
static inline uint64_t dn2_ex_pack(const struct dn2_cmd_ex *x)
{
    return dn2_req_ex(x->otype, x->dtype, x->iter, x->arg);
}
static inline void dn2_ex_unpack(uint64_t ex, struct dn2_cmd_ex *x)
{
    x->otype = (uint8_t)DN2_FGET(ex, DN2_EX_OTYPE);
    x->dtype = (uint8_t)DN2_FGET(ex, DN2_EX_DTYPE);
    x->iter = (uint8_t)DN2_FGET(ex, DN2_EX_ITER);
    x->arg = (uint32_t)DN2_FGET(ex, DN2_EX_ARG);
}
static inline void dn2_req_decode(struct dn2_req *r, uint64_t lower, uint64_t upper,
                                  uint64_t ex, int has_ex, int rflag, int wid)
{
    struct dn2_cmd_ex x;

    r->otype = (uint8_t)DN2_FGET(lower, DN2_REQ_OTYPE);
    r->dtype = (uint8_t)DN2_FGET(lower, DN2_REQ_DTYPE);
    r->iter = (uint8_t)DN2_FGET(lower, DN2_REQ_ITER);
    r->dclid = (uint16_t)DN2_FGET(lower, DN2_REQ_DCLID);
    r->dwid = (uint8_t)DN2_FGET(lower, DN2_REQ_DWID);
    r->eflag = (uint8_t)DN2_FGET(lower, DN2_REQ_EFLAG);
    r->arg = (uint32_t)DN2_FGET(lower, DN2_REQ_ARG);
    r->src = (uint32_t)DN2_FGET(upper, DN2_REQ_SRC);
    r->dst = (uint32_t)DN2_FGET(upper, DN2_REQ_DST);
    r->rflag = (uint8_t)(rflag & 1);
    r->wid = (uint8_t)(wid & 1);
    r->has_ex = (uint8_t)(has_ex ? 1 : 0);
    dn2_ex_unpack(ex, &x);
    r->ex_otype = x.otype;
    r->ex_dtype = x.dtype;
    r->ex_iter = x.iter;
    r->ex_arg = x.arg;
}
/* The OTYPE of a request's Lower word (also of a status record's Lower). */
static inline unsigned dn2_req_otype(uint64_t lower)
{
    return (unsigned)DN2_FGET(lower, DN2_REQ_OTYPE);
}
/* The destination CLID of a request's Lower word. */
static inline unsigned dn2_req_dclid(uint64_t lower)
{
    return (unsigned)DN2_FGET(lower, DN2_REQ_DCLID);
}
static inline uint64_t dn2_req_encode_lower(const struct dn2_req *r)
{
    return dn2_req_lower(r->otype, r->dtype, r->iter, r->dclid, r->dwid, r->eflag, r->arg);
}

/* BOTF request (Fig 4.14, Table 4.7): Lower only. */
#define DN2_BOTF_MAX           512u
#define DN2_BOTF_OTYPE_HI      DN2_REQ_OTYPE_HI
#define DN2_BOTF_OTYPE_LO      DN2_REQ_OTYPE_LO
#define DN2_BOTF_WW_HI         6    /* Write Window number */
#define DN2_BOTF_WW_LO         5
#define DN2_BOTF_SIZE_HI       41   /* bytes of the image */
#define DN2_BOTF_SIZE_LO       32
static inline uint64_t dn2_botf_lower(unsigned ww, unsigned size)
{
    return DN2_FPUT(DN2_OP_BOTF, DN2_BOTF_OTYPE) | DN2_FPUT(ww, DN2_BOTF_WW) |
           DN2_FPUT(size, DN2_BOTF_SIZE);
}
static inline unsigned dn2_botf_ww(uint64_t lower) { return (unsigned)DN2_FGET(lower, DN2_BOTF_WW); }
static inline unsigned dn2_botf_size(uint64_t lower) { return (unsigned)DN2_FGET(lower, DN2_BOTF_SIZE); }

/* LHSv2 reuses DSTOff: [9:0] bytes from the WW, [21:10] WW offset. */
#define DN2_LHSV2_WW_BYTES_HI  9
#define DN2_LHSV2_WW_BYTES_LO  0
#define DN2_LHSV2_WW_OFF_HI    21
#define DN2_LHSV2_WW_OFF_LO    10
static inline uint32_t dn2_lhsv2_dst(unsigned ww_bytes, unsigned ww_off)
{
    return (uint32_t)(DN2_FPUT(ww_bytes, DN2_LHSV2_WW_BYTES) | DN2_FPUT(ww_off, DN2_LHSV2_WW_OFF));
}
static inline unsigned dn2_lhsv2_ww_bytes(uint32_t dst)
{
    return (unsigned)DN2_FGET(dst, DN2_LHSV2_WW_BYTES);
}
static inline unsigned dn2_lhsv2_ww_off(uint32_t dst)
{
    return (unsigned)DN2_FGET(dst, DN2_LHSV2_WW_OFF);
}

/* CLID <-> LID (Table 4.6): CLID = {LID[15:12], LID[7:0]}; LID[11:8] = 0. */
#define DN2_LID_TOP_HI         15
#define DN2_LID_TOP_LO         12
#define DN2_LID_MID_HI         11   /* zero in every assignable LID */
#define DN2_LID_MID_LO         8
#define DN2_LID_LOW_HI         7
#define DN2_LID_LOW_LO         0
#define DN2_CLID_TOP_HI        11
#define DN2_CLID_TOP_LO        8
#define DN2_CLID_LOW_HI        DN2_LID_LOW_HI
#define DN2_CLID_LOW_LO        DN2_LID_LOW_LO
#define DN2_CLID_MCAST_FIRST   0xc00u
#define DN2_CLID_MCAST_LAST    0xffeu
#define DN2_CLID_INIT          0xfffu
static inline uint16_t dn2_lid_to_clid(uint16_t lid)
{
    return (uint16_t)(DN2_FPUT(DN2_FGET(lid, DN2_LID_TOP), DN2_CLID_TOP) |
                      DN2_FPUT(DN2_FGET(lid, DN2_LID_LOW), DN2_CLID_LOW));
}
static inline uint16_t dn2_clid_to_lid(uint16_t clid)
{
    return (uint16_t)(DN2_FPUT(DN2_FGET(clid, DN2_CLID_TOP), DN2_LID_TOP) |
                      DN2_FPUT(DN2_FGET(clid, DN2_CLID_LOW), DN2_LID_LOW));
}
/* A LID the subnet manager may hand out: bits [11:8] zero, not 0. */
static inline int dn2_lid_assignable(uint16_t lid)
{
    return lid != 0 && DN2_FGET(lid, DN2_LID_MID) == 0 &&
           dn2_lid_to_clid(lid) < DN2_CLID_MCAST_FIRST;
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
#define DN2_HDR_LINES_MAX      DN2_HDR_LINES_RVL
#define DN2_LINE_ID_FIRST      1u  /* 2'b01 */
#define DN2_LINE_ID_LAST       2u  /* 2'b10 */
#define DN2_LINE_ID_MID        3u  /* 2'b11 */

/* 1st DW (line 1) */
#define DN2_H0_SIZE_HI   11   /* Packet Size incl. header; 0 means 4096 [EMU] */
#define DN2_H0_SIZE_LO   0
#define DN2_H0_TYPE_HI   16
#define DN2_H0_TYPE_LO   12
#define DN2_H0_DTYPE_HI  19
#define DN2_H0_DTYPE_LO  17
#define DN2_H0_PGID_HI   27
#define DN2_H0_PGID_LO   20
#define DN2_H0_DWID_HI   28
#define DN2_H0_DWID_LO   28
#define DN2_H0_SWID_HI   29
#define DN2_H0_SWID_LO   29
#define DN2_H0_DLID_HI   47
#define DN2_H0_DLID_LO   32
#define DN2_H0_ITER_HI   58
#define DN2_H0_ITER_LO   51
#define DN2_H0_RFLAG_HI  59
#define DN2_H0_RFLAG_LO  59
#define DN2_H0_EFLAG_HI  60
#define DN2_H0_EFLAG_LO  60
#define DN2_H0_HFLAG_HI  61
#define DN2_H0_HFLAG_LO  61
#define DN2_H0_LFLAG_HI  62
#define DN2_H0_LFLAG_LO  62
#define DN2_H0_PFLAG_HI  63   /* [EMU] write a status for this packet too */
#define DN2_H0_PFLAG_LO  63
#define DN2_H0_DWID_BIT  DN2_H0_DWID_LO
#define DN2_H0_SWID_BIT  DN2_H0_SWID_LO
#define DN2_H0_RFLAG_BIT DN2_H0_RFLAG_LO
#define DN2_H0_EFLAG_BIT DN2_H0_EFLAG_LO
#define DN2_H0_HFLAG_BIT DN2_H0_HFLAG_LO
#define DN2_H0_LFLAG_BIT DN2_H0_LFLAG_LO
#define DN2_H0_PFLAG_BIT DN2_H0_PFLAG_LO
/* 2nd DW (line 2): two 32-bit halves, their meaning per TYPE below. */
#define DN2_H1_LO_HI     31
#define DN2_H1_LO_LO     0
#define DN2_H1_HI_HI     63
#define DN2_H1_HI_LO     32
/* 3rd DW (line 3, RVSS/RVSI and the RVL family). */
#define DN2_H2_TOTAL_HI  31   /* Total Transfer Size */
#define DN2_H2_TOTAL_LO  0
#define DN2_H2_STRIDE_HI 63   /* Stride or List Address */
#define DN2_H2_STRIDE_LO 32
/* 4th DW (line 4, the RVL family): a Command Ex word (DN2_EX_*). */

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
    return DN2_FPUT(h->size, DN2_H0_SIZE) | DN2_FPUT(h->type, DN2_H0_TYPE) |
           DN2_FPUT(h->dtype, DN2_H0_DTYPE) | DN2_FPUT(h->pgid, DN2_H0_PGID) |
           DN2_FPUT(h->dwid, DN2_H0_DWID) | DN2_FPUT(h->swid, DN2_H0_SWID) |
           DN2_FPUT(h->dlid, DN2_H0_DLID) | DN2_FPUT(h->iter, DN2_H0_ITER) |
           DN2_FPUT(h->rflag, DN2_H0_RFLAG) | DN2_FPUT(h->eflag, DN2_H0_EFLAG) |
           DN2_FPUT(h->hflag, DN2_H0_HFLAG) | DN2_FPUT(h->lflag, DN2_H0_LFLAG) |
           DN2_FPUT(h->pflag, DN2_H0_PFLAG);
}
static inline void dn2_hdr0_decode(struct dn2_hdr *h, uint64_t w)
{
    h->size = (uint16_t)DN2_FGET(w, DN2_H0_SIZE);
    h->type = (uint8_t)DN2_FGET(w, DN2_H0_TYPE);
    h->dtype = (uint8_t)DN2_FGET(w, DN2_H0_DTYPE);
    h->pgid = (uint8_t)DN2_FGET(w, DN2_H0_PGID);
    h->dwid = (uint8_t)DN2_FGET(w, DN2_H0_DWID);
    h->swid = (uint8_t)DN2_FGET(w, DN2_H0_SWID);
    h->dlid = (uint16_t)DN2_FGET(w, DN2_H0_DLID);
    h->iter = (uint8_t)DN2_FGET(w, DN2_H0_ITER);
    h->rflag = (uint8_t)DN2_FGET(w, DN2_H0_RFLAG);
    h->eflag = (uint8_t)DN2_FGET(w, DN2_H0_EFLAG);
    h->hflag = (uint8_t)DN2_FGET(w, DN2_H0_HFLAG);
    h->lflag = (uint8_t)DN2_FGET(w, DN2_H0_LFLAG);
    h->pflag = (uint8_t)DN2_FGET(w, DN2_H0_PFLAG);
}
/* Single fields of a 1st DW, for code that routes on them. */
static inline unsigned dn2_hdr0_type(uint64_t w) { return (unsigned)DN2_FGET(w, DN2_H0_TYPE); }
static inline uint16_t dn2_hdr0_dlid(uint64_t w) { return (uint16_t)DN2_FGET(w, DN2_H0_DLID); }
static inline unsigned dn2_hdr0_dwid(uint64_t w) { return (unsigned)DN2_FGET(w, DN2_H0_DWID); }
/* Fields of the 1st DW that BOTF overwrites: Packet Size and PGID. */
#define DN2_H0_BOTF_PATCH_MASK (DN2_FMASK(DN2_H0_SIZE) | DN2_FMASK(DN2_H0_PGID))
static inline uint64_t dn2_hdr1_encode(uint32_t lo, uint32_t hi)
{
    return DN2_FPUT(lo, DN2_H1_LO) | DN2_FPUT(hi, DN2_H1_HI);
}
static inline void dn2_hdr1_decode(struct dn2_hdr *h, uint64_t w)
{
    h->w1_lo = (uint32_t)DN2_FGET(w, DN2_H1_LO);
    h->w1_hi = (uint32_t)DN2_FGET(w, DN2_H1_HI);
}
static inline uint64_t dn2_hdr2_encode(uint32_t total, uint32_t stride)
{
    return DN2_FPUT(total, DN2_H2_TOTAL) | DN2_FPUT(stride, DN2_H2_STRIDE);
}
static inline void dn2_hdr2_decode(struct dn2_hdr *h, uint64_t w)
{
    h->total = (uint32_t)DN2_FGET(w, DN2_H2_TOTAL);
    h->stride = (uint32_t)DN2_FGET(w, DN2_H2_STRIDE);
}
/* Header lines for a given TYPE (hflag = 1 when more than 2). */
static inline unsigned dn2_hdr_lines(unsigned type)
{
    if (dn2_otype_is_rvl(type)) {
        return DN2_HDR_LINES_RVL;
    }
    if (type == DN2_OP_RVSS || type == DN2_OP_RVSI) {
        return DN2_HDR_LINES_LONG;
    }
    return DN2_HDR_LINES_SHORT;
}
/* The whole header: the lines its TYPE has (dn2_hdr_lines), in order.
 * Returns that count; line[] must hold DN2_HDR_LINES_MAX words. */
static inline unsigned dn2_hdr_pack(const struct dn2_hdr *h, uint64_t line[DN2_HDR_LINES_MAX])
{
    unsigned n = dn2_hdr_lines(h->type);

    line[0] = dn2_hdr0_encode(h);
    line[1] = dn2_hdr1_encode(h->w1_lo, h->w1_hi);
    if (n >= DN2_HDR_LINES_LONG) {
        line[2] = dn2_hdr2_encode(h->total, h->stride);
    }
    if (n >= DN2_HDR_LINES_RVL) {
        line[3] = h->ex;
    }
    return n;
}
/* Decode nlines header lines (fields of absent lines read 0).  Returns the
 * count the TYPE of line 1 asks for: the caller checks it against nlines. */
static inline unsigned dn2_hdr_unpack(struct dn2_hdr *h, const uint64_t *line, unsigned nlines)
{
    uint64_t w[DN2_HDR_LINES_MAX] = { 0, 0, 0, 0 };
    unsigned i;

    for (i = 0; i < nlines && i < DN2_HDR_LINES_MAX; i++) {
        w[i] = line[i];
    }
    dn2_hdr0_decode(h, w[0]);
    dn2_hdr1_decode(h, w[1]);
    dn2_hdr2_decode(h, w[2]);
    h->ex = w[3];
    return dn2_hdr_lines(h->type);
}
/* Packet Size field <-> bytes (12 bits; 0 encodes 4096 [EMU]). */
static inline uint32_t dn2_pkt_size_bytes(uint16_t field) { return field ? field : DN2_PKT_MAX; }
static inline uint16_t dn2_pkt_size_field(uint32_t bytes)
{
    return (uint16_t)DN2_FGET(bytes, DN2_H0_SIZE);
}

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
    return (uint32_t)((value * DN2_AMT_UNIT) / DN2_LLCM_WID_STRIDE) % DN2_NUM_WID;
}
#define DN2_IPUSH_AREA_UNIT    4096u
#define DN2_RING_ALIGN         8u

/* ======================================================================
 * 6. Receive-status record (§2.3, Table 4.9): 16 bytes in the LLCM ring,
 *    laid out like a request: Lower word at +0, Upper word at +8 [EMU].
 *    DCLID/DWID = the sender, SRCOff = first address the data was written
 *    to, DSTOff = 0, Size = total bytes of the primitive (or of the packet
 *    when written per packet).  The device sets the Lower's eflag bit.
 * ====================================================================== */
#define DN2_STATUS_REC_SIZE    16u
#define DN2_ST_TYPE_HI         DN2_REQ_OTYPE_HI   /* Lower: OTYPE of the packet */
#define DN2_ST_TYPE_LO         DN2_REQ_OTYPE_LO
#define DN2_ST_DTYPE_HI        DN2_REQ_DTYPE_HI
#define DN2_ST_DTYPE_LO        DN2_REQ_DTYPE_LO
#define DN2_ST_ITER_HI         DN2_REQ_ITER_HI
#define DN2_ST_ITER_LO         DN2_REQ_ITER_LO
#define DN2_ST_CLID_HI         DN2_REQ_DCLID_HI   /* the sender's CLID */
#define DN2_ST_CLID_LO         DN2_REQ_DCLID_LO
#define DN2_ST_WID_HI          DN2_REQ_DWID_HI    /* the sender's WID */
#define DN2_ST_WID_LO          DN2_REQ_DWID_LO
#define DN2_ST_EFLAG_HI        DN2_REQ_EFLAG_HI
#define DN2_ST_EFLAG_LO        DN2_REQ_EFLAG_LO
#define DN2_ST_SIZE_HI         DN2_REQ_ARG_HI     /* bytes */
#define DN2_ST_SIZE_LO         DN2_REQ_ARG_LO
#define DN2_ST_ADDR_HI         DN2_REQ_SRC_HI     /* Upper: where the data went */
#define DN2_ST_ADDR_LO         DN2_REQ_SRC_LO
#define DN2_ST_DST_HI          DN2_REQ_DST_HI     /* Upper: 0 */
#define DN2_ST_DST_LO          DN2_REQ_DST_LO
struct dn2_status_rec {
    uint64_t lower;
    uint64_t upper;
};
/* A decoded status record. */
struct dn2_status_fields {
    uint8_t  type;      /* OTYPE of the primitive */
    uint8_t  dtype;
    uint8_t  iter;
    uint8_t  wid;       /* sender WID */
    uint8_t  eflag;
    uint16_t clid;      /* sender CLID */
    uint32_t size;      /* bytes */
    uint32_t addr;      /* first SO-DIMM/PW/LLCM offset written */
};
static inline void dn2_status_pack(const struct dn2_status_fields *f, struct dn2_status_rec *r)
{
    r->lower = dn2_req_lower(f->type, f->dtype, f->iter, f->clid, f->wid, f->eflag, f->size);
    r->upper = DN2_FPUT(f->addr, DN2_ST_ADDR);
}
static inline void dn2_status_unpack(const struct dn2_status_rec *r, struct dn2_status_fields *f)
{
    f->type = (uint8_t)DN2_FGET(r->lower, DN2_ST_TYPE);
    f->dtype = (uint8_t)DN2_FGET(r->lower, DN2_ST_DTYPE);
    f->iter = (uint8_t)DN2_FGET(r->lower, DN2_ST_ITER);
    f->clid = (uint16_t)DN2_FGET(r->lower, DN2_ST_CLID);
    f->wid = (uint8_t)DN2_FGET(r->lower, DN2_ST_WID);
    f->eflag = (uint8_t)DN2_FGET(r->lower, DN2_ST_EFLAG);
    f->size = (uint32_t)DN2_FGET(r->lower, DN2_ST_SIZE);
    f->addr = (uint32_t)DN2_FGET(r->upper, DN2_ST_ADDR);
}

/* ======================================================================
 * 7. LH Buffer entry (Fig 7.7): 64 bytes; [EMU] line placement:
 *    line0 = {Pointer[63:32], Context[31:16], Rank[15:2], Valid[1], Complete[0]}
 *    line1 = {Tag[63:32], Size[31:0]}, lines 2..7 = 48 B of user data.
 *    Sender's first message word: Context[63:48], Rank[45:32], Tag[31:0].
 *    Valid and Complete toggle (the host keeps the last values it saw).
 * ====================================================================== */
#define DN2_LHB_ENTRIES        64u
#define DN2_LHB_ENTRY          64u
#define DN2_LHB_DATA           48u
#define DN2_LHB_DATA_OFF       (2 * DN2_LINE)
#define DN2_LH_POINTER_HI      63   /* line 0 */
#define DN2_LH_POINTER_LO      32
#define DN2_LH_CONTEXT_HI      31
#define DN2_LH_CONTEXT_LO      16
#define DN2_LH_RANK_HI         15
#define DN2_LH_RANK_LO         2
#define DN2_LH_VALID_HI        1
#define DN2_LH_VALID_LO        1
#define DN2_LH_COMPLETE_HI     0
#define DN2_LH_COMPLETE_LO     0
#define DN2_LH_TAG_HI          63   /* line 1 */
#define DN2_LH_TAG_LO          32
#define DN2_LH_SIZE_HI         31
#define DN2_LH_SIZE_LO         0
#define DN2_LH_COMPLETE        DN2_BIT(DN2_LH_COMPLETE_LO)
#define DN2_LH_VALID           DN2_BIT(DN2_LH_VALID_LO)
#define DN2_LH_FLAGS           (DN2_LH_VALID | DN2_LH_COMPLETE)
struct dn2_lh_entry {
    uint32_t pointer;   /* SO-DIMM offset of the message's overflow */
    uint16_t context;
    uint16_t rank;
    uint8_t  valid;
    uint8_t  complete;
    uint32_t tag;
    uint32_t size;      /* message bytes after the envelope word */
};
static inline uint64_t dn2_lh_line0(const struct dn2_lh_entry *e)
{
    return DN2_FPUT(e->pointer, DN2_LH_POINTER) | DN2_FPUT(e->context, DN2_LH_CONTEXT) |
           DN2_FPUT(e->rank, DN2_LH_RANK) | DN2_FPUT(e->valid, DN2_LH_VALID) |
           DN2_FPUT(e->complete, DN2_LH_COMPLETE);
}
static inline uint64_t dn2_lh_line1(const struct dn2_lh_entry *e)
{
    return DN2_FPUT(e->tag, DN2_LH_TAG) | DN2_FPUT(e->size, DN2_LH_SIZE);
}
static inline void dn2_lh_unpack(uint64_t l0, uint64_t l1, struct dn2_lh_entry *e)
{
    e->pointer = (uint32_t)DN2_FGET(l0, DN2_LH_POINTER);
    e->context = (uint16_t)DN2_FGET(l0, DN2_LH_CONTEXT);
    e->rank = (uint16_t)DN2_FGET(l0, DN2_LH_RANK);
    e->valid = (uint8_t)DN2_FGET(l0, DN2_LH_VALID);
    e->complete = (uint8_t)DN2_FGET(l0, DN2_LH_COMPLETE);
    e->tag = (uint32_t)DN2_FGET(l1, DN2_LH_TAG);
    e->size = (uint32_t)DN2_FGET(l1, DN2_LH_SIZE);
}

/* The sender's envelope word (the first 8 bytes of an LHS message). */
#define DN2_ENV_CONTEXT_HI     63
#define DN2_ENV_CONTEXT_LO     48
#define DN2_ENV_RANK_HI        45
#define DN2_ENV_RANK_LO        32
#define DN2_ENV_TAG_HI         31
#define DN2_ENV_TAG_LO         0
struct dn2_env {
    uint16_t context;
    uint16_t rank;
    uint32_t tag;
};
static inline uint64_t dn2_envelope(unsigned context, unsigned rank, uint32_t tag)
{
    return DN2_FPUT(context, DN2_ENV_CONTEXT) | DN2_FPUT(rank, DN2_ENV_RANK) |
           DN2_FPUT(tag, DN2_ENV_TAG);
}
static inline void dn2_env_unpack(uint64_t w, struct dn2_env *e)
{
    e->context = (uint16_t)DN2_FGET(w, DN2_ENV_CONTEXT);
    e->rank = (uint16_t)DN2_FGET(w, DN2_ENV_RANK);
    e->tag = (uint32_t)DN2_FGET(w, DN2_ENV_TAG);
}

#endif /* DIMMNET2_DN2_ABI_H */
