/*
 * DIMMnet-2 memory-slot network interface board: device-model internals.
 *
 * Files:
 *   dimmnet2.c       QOM type, the 0x60000 window (RAM buffers + register
 *                    MMIO), User/System Registers, ACPI, VMState, reset
 *   dimmnet2-prim.c  the Window Controller: Request FIFO, executor, local
 *                    primitives (VL/VS families, SO-DIMM copy), SO-DIMM access
 *
 * The request engine talks to the network only through the "link" hooks
 * declared at the end of this file, so the fabric plugs in without touching
 * the primitive code.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef HW_DIMMNET2_H
#define HW_DIMMNET2_H

#include "hw/isa/isa.h"
#include "exec/memory.h"
#include "dimmnet2/dn2_abi.h"

#define TYPE_DIMMNET2 "dimmnet2"
OBJECT_DECLARE_SIMPLE_TYPE(DN2State, DIMMNET2)

#define DN2_FIFO_MAX          64      /* upper bound of the fifo-depth property */
#define DN2_FIFO_DEFAULT      16      /* [EMU] Request FIFO depth */
#define DN2_AMT_ENTRIES       8192    /* index {CLID(12), WID(1)} */
#define DN2_SODIMM_DEFAULT    (2 * DN2_SDIMM_CAP_DEFAULT)   /* 2 x 256 MiB */
#define DN2_EXEC_BUDGET       (1u << 20)  /* bytes moved per executor run */
#define DN2_COPY_CHUNK        (64u * 1024)

/* One Request FIFO entry: the 130-bit request plus Command Ex. */
typedef struct DN2FifoEntry {
    uint64_t lower;
    uint64_t upper;
    uint64_t ex;
    uint8_t rflag;
    uint8_t wid;
    uint8_t has_ex;
    uint8_t pad;
} DN2FifoEntry;

/* The source half of a SO-DIMM to SO-DIMM copy (VL-family with
 * DSTOff = 0xffffffff), held until the VS-family half arrives. */
typedef struct DN2CopySrc {
    uint8_t valid;
    uint8_t form;
    uint8_t dtype;
    uint8_t iter;
    uint32_t src;
    uint32_t arg;
} DN2CopySrc;

/* Per-process (WID) User Register state. */
typedef struct DN2Wid {
    uint64_t upper[2];          /* Command0 / Command1 Upper */
    uint64_t ex;                /* Command Ex */
    uint8_t ex_flag;            /* Command Ex Flag bit 0 */
    uint8_t pending;            /* Controller Status bit 0 */
    uint8_t req_error;          /* [EMU] Controller Status bit 20 */
    uint8_t pad;
    DN2FifoEntry pending_req;   /* waiting in the register for FIFO room */
    uint32_t ww_status;         /* Controller Status bits 5..16 */
    uint16_t prim_counter[DN2_PC_NUM];
    uint16_t pw_flag;
    uint64_t pkt_counter;
    uint16_t ipush_area;
    uint16_t lhb_head;
    uint16_t lhb_tail;
    uint16_t status_init;
    uint16_t status_size_reg;
    uint16_t status_head;
    uint16_t status_tail;
    DN2CopySrc copy;
} DN2Wid;

/* Progress of the request being executed (resumable, for long copies and
 * for primitives that wait on the link). */
typedef struct DN2Exec {
    uint8_t active;
    uint8_t stalled;            /* waiting for the link */
    DN2FifoEntry ent;
    uint64_t done;              /* bytes completed so far (copy) */
    uint64_t total;
} DN2Exec;

struct DN2State {
    ISADevice parent_obj;

    /* properties */
    uint64_t base;
    uint64_t sodimm_size;       /* used when no memdev is given */
    uint32_t fifo_depth;
    HostMemoryBackend *hostmem;

    /* the window */
    int index;                  /* board number in this VM: AML DN2<n> */
    MemoryRegion container;
    MemoryRegion ww, pw, llcm, lhb;
    MemoryRegion ur, sr;
    MemoryRegion sodimm_own;    /* when no memdev */
    MemoryRegion *sodimm_mr;
    uint8_t *ww_ptr, *pw_ptr, *llcm_ptr, *lhb_ptr, *sodimm_ptr;
    uint64_t sodimm_bytes;      /* backing size: two modules */

    /* System Register */
    uint8_t sdimm_ready;
    uint8_t pgid[DN2_NUM_WID];
    uint32_t sdimm_cap_reg;
    uint32_t mtu_reg;
    uint16_t lid;
    uint16_t sma_lid;           /* LID assigned by the subnet manager */
    uint8_t link_state;         /* SMA LID [17:16] */
    uint8_t rx_err;             /* Controller Status [19:18] */
    uint8_t rx_ovf;             /* Controller Status bit 17 */
    uint16_t amt[DN2_AMT_ENTRIES]; /* bit 15 = valid, [11:0] = value */

    /* User Registers */
    DN2Wid wid[DN2_NUM_WID];

    /* Window Controller */
    DN2FifoEntry fifo[DN2_FIFO_MAX];
    uint32_t fifo_head;
    uint32_t fifo_count;
    DN2Exec exec;
    QEMUBH *bh;
    uint8_t *copy_buf;

    /* statistics (QOM read-only properties) */
    uint64_t stat_requests;
    uint64_t stat_refused;
    uint64_t stat_ignored;
    uint64_t stat_overrun;
    uint64_t stat_bad_access;
    uint64_t stat_bytes_local;
};

/* dimmnet2-prim.c */
void dn2_prim_init(DN2State *s);
void dn2_prim_reset(DN2State *s);
void dn2_doorbell(DN2State *s, int wid, int rflag, uint64_t lower);
void dn2_kick(DN2State *s);
bool dn2_fifo_almost_full(DN2State *s);
uint64_t dn2_module_state(DN2State *s);
uint64_t dn2_sdimm_area(DN2State *s);
bool dn2_sdimm_rw(DN2State *s, int wid, uint64_t off, void *buf, uint64_t len,
                  bool is_write);

/* Link hooks (the fabric).  Until a link is attached the board has no
 * cable: remote primitives wait, as the real board's Window Controller
 * waits on a SWIF FIFO that never drains, until a Controller Reset. */
bool dn2_link_ready(DN2State *s);

#endif
