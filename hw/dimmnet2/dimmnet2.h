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
#define DN2_AMT_ENTRIES       16384   /* index {CLID(12), SWID(1), DWID(1)} */
#define DN2_AMT_VALID         0x8000u /* s->amt[]: entry written (else empty) */
#define DN2_SODIMM_DEFAULT    (2 * DN2_SDIMM_CAP_DEFAULT)   /* 2 x 256 MiB */
#define DN2_SODIMM_MAX        (2 * dn2_sdimm_module_bytes(0x20))  /* 2 x 8 GiB */
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
    uint8_t from_rc;            /* an RVL turned into RVS by the receiver */
    uint8_t ww_sum_valid;       /* strict: ww_sum taken at the doorbell */
    uint64_t ww_sum;            /* strict: its Write Window then (not migrated) */
} DN2FifoEntry;

/* strict=on: the protocol violations the device can observe. */
typedef enum DN2StrictKind {
    DN2_SV_WW_REUSED,           /* Write Window rewritten while pending */
    DN2_SV_NO_LID,              /* LID register not the port's LID */
    DN2_SV_SMALL_ELEMENT,       /* SO-DIMM element under 4 bytes */
    DN2_SV_MISALIGNED,          /* SO-DIMM offset not 4-byte aligned */
    DN2_SV_EARLY_LHS_VL,        /* VL of an LHS overflow still arriving */
    DN2_SV_NOT_UP,              /* a primitive before bring-up */
    DN2_SV_EX_ORDER,            /* Command Ex before Command Upper */
    DN2_SV_OVERRUN,             /* a request while one is pending */
    DN2_SV__MAX
} DN2StrictKind;
#define DN2_STRICT_PLACES     256     /* places remembered (and lines kept) */

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

/* An LHS message being received in several packets (per sender). */
#define DN2_LHS_SLOTS 8
typedef struct DN2LhsMsg {
    uint8_t valid;
    uint8_t swid;
    uint16_t slid;
    uint16_t entry;             /* LH Buffer byte offset of its entry */
    uint32_t pointer;           /* SO-DIMM offset of the overflow data */
    uint32_t total;             /* message bytes, envelope included */
    uint32_t got;               /* bytes received so far */
    int64_t last_ns;            /* realtime of its last packet (not migrated) */
    uint32_t ring_base;         /* its IPUSH ring, where the overflow wraps */
    uint32_t ring_size;         /* (not migrated: 0 = no wrap known) */
} DN2LhsMsg;
/* A message with no packet for this long gives its slot up when another
 * sender needs one (its sender died mid-message). */
#define DN2_LHS_TIMEOUT_MS    1000

/* Per-process (WID) User Register state. */
typedef struct DN2Wid {
    uint64_t upper[2];          /* Command0 / Command1 Upper */
    uint64_t ex;                /* Command Ex */
    uint8_t ex_flag;            /* Command Ex Flag bit 0 */
    uint8_t pending;            /* Controller Status bit 0 */
    uint8_t req_error;          /* [EMU] Controller Status bit 20 */
    uint8_t rx_err;             /* Controller Status [19:18], this WID's packets */
    uint8_t rx_ovf;             /* Controller Status bit 17, likewise */
    uint8_t upper_seen;         /* strict: Upper written since the doorbell */
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
    uint8_t pgid_set;           /* a process owns this WID (PGID written) */
    DN2LhsMsg lhs[DN2_LHS_SLOTS];
} DN2Wid;

/* Progress of the request being executed (resumable, for long copies and
 * for primitives that wait on the link).  The Window Controller has two:
 * one for the host's Request FIFO and one for the Receive Controller's
 * (RVL requests from the network turned into RVS answers), so that an
 * answer never waits behind a host request stalled on the link, and a host
 * request never waits behind an answer stalled on its requester (choice
 * #47). */
typedef struct DN2Exec {
    uint8_t active;
    uint8_t stalled;            /* waiting for the link */
    uint8_t started;            /* remote: totals computed, packets going out */
    DN2FifoEntry ent;
    uint64_t done;              /* bytes (or elements) completed so far */
    uint64_t total;
} DN2Exec;

#define DN2_RC_FIFO 16          /* Request FIFO for the Receive Controller */
#define DN2_LOOP_MAX 256        /* packets in flight per loopback queue */
/* Loopback queues: one per destination WID and class (RVL requests apart
 * from everything else), as the fabric's lanes, so that neither a full RC
 * FIFO nor one process's full ring holds the other traffic up. */
#define DN2_LOOP_QUEUES (DN2_NUM_WID * 2)
#define DN2_RC_TIMEOUT_MS_DEFAULT 5000  /* an RC answer with no progress */

typedef enum DN2LinkKind {
    DN2_LINK_NONE,              /* no cable */
    DN2_LINK_LOOPBACK,          /* the port is cabled to itself */
    DN2_LINK_FABRIC,            /* UDP fabric through a dn2-switch */
} DN2LinkKind;

typedef struct DN2Link DN2Link; /* dimmnet2-link.c */

struct DN2State {
    ISADevice parent_obj;

    /* properties */
    uint64_t base;
    uint64_t sodimm_size;       /* used when no memdev is given */
    uint32_t fifo_depth;
    HostMemoryBackend *hostmem;
    char *switch_addr;          /* HOST:PORT of the dn2-switch */
    char *local_addr;           /* HOST:PORT to bind, optional */
    bool loopback;              /* the port cabled to itself */
    bool rx_thread;             /* receive in a thread of its own */
    uint64_t guid;              /* board GUID for the subnet manager */
    uint32_t rc_timeout_ms;     /* abandon an RC answer stalled this long */
    char *secret_id;            /* -object secret id: the cluster secret */
    bool strict;                /* strict=on: dimmnet2-strict.c */
    uint32_t strict_delay_ns;   /* virtual-clock delay of each step */
    Error *blocker;             /* migration blocker while linked */

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
    uint16_t amt[DN2_AMT_ENTRIES]; /* bit 15 = valid, [11:0] = value */

    /* User Registers */
    DN2Wid wid[DN2_NUM_WID];

    /* Window Controller */
    DN2FifoEntry fifo[DN2_FIFO_MAX];
    uint32_t fifo_head;
    uint32_t fifo_count;
    DN2Exec exec;               /* host requests */
    DN2Exec rc_exec;            /* Receive Controller requests (RVL answers) */
    DN2FifoEntry rc_fifo[DN2_RC_FIFO];
    uint32_t rc_head;
    uint32_t rc_count;
    uint8_t rc_turn;            /* alternate host and RC requests */
    QEMUTimer *rc_timer;        /* abandons an RC answer that makes no progress */
    int64_t rc_stall_since;     /* realtime ns; 0 = making progress */
    uint64_t rc_stall_done;     /* rc_exec.done when the stall began */
    QEMUBH *bh;
    uint8_t *copy_buf;
    uint8_t *pkt_buf;           /* one outgoing packet */

    /* the port */
    DN2LinkKind link_kind;
    DN2Link *link;
    GQueue loop_q[DN2_LOOP_QUEUES]; /* loopback packets not yet delivered */
    QEMUBH *loop_bh;
    uint64_t loop_seq;          /* next loopback packet's sequence number */
    QEMUTimer *rx_retry;        /* receive stalled on host-owned memory */
    uint8_t rx_stalled;
    uint32_t rx_retry_ns;       /* next retry delay (backs off) */

    /* statistics (QOM read-only properties) */
    uint64_t stat_requests;
    uint64_t stat_refused;
    uint64_t stat_ignored;
    uint64_t stat_overrun;
    uint64_t stat_bad_access;
    uint64_t stat_bytes_local;
    uint64_t stat_tx_packets;
    uint64_t stat_tx_bytes;
    uint64_t stat_rx_packets;
    uint64_t stat_rx_bytes;
    uint64_t stat_rx_drop_bad;      /* malformed packets */
    uint64_t stat_rx_drop_pgid;     /* PGID mismatch */
    uint64_t stat_rx_drop_noproc;   /* no process at DWID / not set up */
    uint64_t stat_rx_drop_route;    /* not for this board */
    uint64_t stat_rx_stalls;        /* back-pressure events */
    uint64_t stat_tx_drops;         /* no route to the destination LID */
    uint64_t stat_rc_abandoned;     /* RVL answers abandoned (no progress) */
    uint64_t stat_lhs_abandoned;    /* LHS messages whose sender went silent */

    /* strict mode */
    QEMUTimer *strict_timer;        /* the paced Window Controller */
    Error *strict_blocker;
    uint64_t strict_count[DN2_SV__MAX];
    uint64_t strict_total;
    uint32_t strict_seen[DN2_STRICT_PLACES];
    unsigned strict_nseen;
    GPtrArray *strict_lines;        /* strict-violations */
};

/* The receive-status ring of a process: [init, init + size) in its LLCM,
 * cut short if it would run past the LLCM end. */
/* The AMT Address Table entry of sender {slid, swid} for receiving process
 * dwid (choice #52). */
static inline uint32_t dn2_amt_index(uint16_t slid, unsigned swid, unsigned dwid)
{
    return ((uint32_t)dn2_lid_to_clid(slid) << 2) | ((swid & 1) << 1) | (dwid & 1);
}

static inline uint32_t dn2_status_ring_bytes(const DN2Wid *w)
{
    uint32_t size = dn2_status_area_bytes(w->status_size_reg);

    if (w->status_init + size > DN2_LLCM_AREA) {
        size = (DN2_LLCM_AREA - w->status_init) & ~(DN2_STATUS_REC_SIZE - 1);
    }
    return size ? size : DN2_STATUS_REC_SIZE;
}

static inline uint32_t dn2_status_ring_used(const DN2Wid *w)
{
    uint32_t size = dn2_status_ring_bytes(w);

    return ((uint32_t)(w->status_tail - w->status_init) % size -
            (uint32_t)(w->status_head - w->status_init) % size + size) % size;
}

/* dimmnet2-strict.c */
void dn2_strict_instance_init(DN2State *s);
bool dn2_strict_init(DN2State *s, Error **errp);
void dn2_strict_fini(DN2State *s);
void dn2_strict_schedule(DN2State *s);
void dn2_strict_report(DN2State *s, DN2StrictKind kind, int wid, uint32_t reg,
                       const char *detail);
const char *dn2_strict_name(DN2StrictKind kind);
uint64_t dn2_strict_ww_sum(DN2State *s, int wid, unsigned n);
bool dn2_strict_refuse(DN2State *s, const struct dn2_req *r, const char **why);

/* dimmnet2-prim.c */
void dn2_exec_run(DN2State *s);
void dn2_prim_init(DN2State *s);
void dn2_prim_fini(DN2State *s);
void dn2_prim_reset(DN2State *s);
void dn2_doorbell(DN2State *s, int wid, int rflag, uint64_t lower);
void dn2_kick(DN2State *s);
bool dn2_link_news(DN2State *s);
bool dn2_fifo_almost_full(DN2State *s);
uint64_t dn2_module_state(DN2State *s);
uint64_t dn2_sdimm_area(DN2State *s);
bool dn2_sdimm_rw(DN2State *s, int wid, uint64_t off, void *buf, uint64_t len,
                  bool is_write);

int dn2_exec_remote(DN2State *s, DN2Exec *x, const struct dn2_req *r,
                    uint64_t *budget);
void dn2_remote_on_issue(DN2State *s, const struct dn2_req *r);
void dn2_count(DN2State *s, int wid, int family);
bool dn2_list_entry(DN2State *s, int wid, uint32_t list, uint32_t i,
                    uint32_t *out);

/* Would a read of SO-DIMM [off, off + len) of process wid see the overflow
 * of an LHS message that is still arriving?  (dimmnet2-rx.c) */
bool dn2_lhs_filling(DN2State *s, int wid, uint64_t off, uint64_t len);

/* dimmnet2-rx.c: the Receive Controller.  Returns 0 when the packet was
 * consumed (delivered or dropped and counted), -EBUSY when it must wait
 * for the host to free room (the link keeps it and retries). */
int dn2_rx_packet(DN2State *s, uint16_t slid, const uint8_t *pkt, size_t len);
void dn2_rx_init(DN2State *s);
void dn2_rx_reset(DN2State *s);

/* dimmnet2-link.c: the port.  With no cable remote primitives wait, as
 * the real board's Window Controller waits on a SWIF FIFO that never
 * drains, until a Controller Reset. */
bool dn2_link_init(DN2State *s, Error **errp);
void dn2_link_fini(DN2State *s);
void dn2_link_reset(DN2State *s);
bool dn2_link_ready(DN2State *s);
uint16_t dn2_link_lid(DN2State *s);
/* h0: the packet's first header word (DLID, DWID, TYPE are read). */
bool dn2_link_can_send(DN2State *s, uint64_t h0, size_t len);
void dn2_link_send(DN2State *s, uint16_t dlid, const uint8_t *pkt, size_t len);
void dn2_link_flush(DN2State *s);
void dn2_link_resume(DN2State *s);
void dn2_link_sma_reset(DN2State *s);
void dn2_link_refresh(DN2State *s);

/* Fabric endpoint counters shown as QOM stat-link-* properties. */
typedef enum DN2LinkStat {
    DN2_LS_DROPS,               /* datagrams / packets dropped, all reasons */
    DN2_LS_RETRANSMITS,         /* packets sent again, any cause */
    DN2_LS_TIMEOUTS,            /* retransmission timer expiries */
    DN2_LS_FAST_RETRANSMITS,    /* packets resent on SACK evidence */
    DN2_LS_DUPLICATES,          /* packets received twice */
    DN2_LS_BUSY,                /* offered to the board while it had no room */
    DN2_LS_DGRAMS_TX,
    DN2_LS_DGRAMS_RX,
    DN2_LS_AUTH_DROPS,          /* datagrams whose MAC was missing or wrong */
    DN2_LS_REFUSALS,            /* joins the switch refused */
    DN2_LS_SESSION_RESETS,      /* a peer's session changed: streams restarted */
    DN2_LS_SPURIOUS_TIMEOUTS,   /* timer expiries the ACK echo showed needless */
    DN2_LS__MAX
} DN2LinkStat;
uint64_t dn2_link_stat(DN2State *s, DN2LinkStat which);

#endif
