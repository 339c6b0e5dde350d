/*
 * DIMMnet-2 memory-slot network interface board: device-model internals
 * (the header every file of hw/dimmnet2 includes, and nothing else).
 *
 * The files, top to bottom; each calls only files below it (the port
 * reports upward through DN2PortOps, as the fabric library's endpoint does
 * through its ops table, and the units' main-loop entries end with
 * s->entry_done).  The order is declared again in tests/layering/layers.txt
 * and checked from the object files (meson test 'layering').
 * docs/architecture.md draws the data path.
 *
 *   dimmnet2.c         QOM type, properties, realize/unrealize, power-on
 *                      reset, ACPI, VMState, the statistics table
 *   dimmnet2-regs.c    the host interface: User and System Registers,
 *                      access rules, Controller Reset (the one reset
 *                      orchestration: every unit resets itself once)
 *   dimmnet2-wc.c      Window Controller: Request FIFO, the two executors
 *                      (host requests, Receive Controller requests), the
 *                      doorbell, Module State, strict pacing
 *   dimmnet2-local.c   local primitives: the VL and VS families and the
 *                      SO-DIMM to SO-DIMM copy
 *   dimmnet2-tx.c      remote primitives to packets: BOTF, RVL, RVS, IPUSH,
 *                      LHSv1, LHSv2
 *   dimmnet2-rx.c      Receive Controller: packets into the receiving
 *                      process's areas, its RC request FIFO, its own stall,
 *                      retry timer and resume
 *   dimmnet2-strict.c  request errors: refusals (Controller Status bit 20),
 *                      and strict=on: violation reports and the checks that
 *                      refuse a request
 *   dimmnet2-port.c    the port: no cable, the loopback cable, the UDP
 *                      fabric (fabric/dn2fab.h), through the three below
 *   dimmnet2-vt.c      the lock-step client of virtual time (vtime=on)
 *   dimmnet2-transport.c  UDP and the fabric endpoint; up through an ops
 *                      table (dimmnet2-fab.h)
 *   dimmnet2-deliver.c delivery to the Receive Controller, pcap=, the SMA
 *   dimmnet2-sdimm.c   the SO-DIMMs: process areas, the module interleave,
 *                      list entries, the one pattern iterator
 *   dimmnet2-timing.c  the timing model (timing=thesis): the time a packet
 *                      takes on the real board, from the thesis's figures
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef HW_DIMMNET2_INT_H
#define HW_DIMMNET2_INT_H

#include "hw/isa/isa.h"
#include "exec/memory.h"
#include "qemu/log.h"
#include "qemu/timer.h"
#include "dimmnet2/dn2_abi.h"

#define TYPE_DIMMNET2 "dimmnet2"
OBJECT_DECLARE_SIMPLE_TYPE(DN2State, DIMMNET2)

#define DIMMNET2_FIFO_MAX       64      /* upper bound of the fifo-depth property */
#define DIMMNET2_FIFO_DEFAULT   16      /* [EMU] Request FIFO depth */
#define DIMMNET2_AMT_ENTRIES    16384   /* index {CLID(12), SWID(1), DWID(1)} */
#define DIMMNET2_SODIMM_DEFAULT (2 * DN2_SDIMM_CAP_DEFAULT)   /* 2 x 256 MiB */
#define DIMMNET2_SODIMM_MAX     (2 * dn2_sdimm_module_bytes(0x20))  /* 2 x 8 GiB */
#define DIMMNET2_EXEC_BUDGET    (1u << 20)  /* bytes moved per executor run */
#define DIMMNET2_COPY_CHUNK     (64u * 1024)
#define DIMMNET2_RC_FIFO        16      /* the Receive Controller's request FIFO */
#define DIMMNET2_LOOP_MAX       256     /* packets in flight per loopback queue */
/* Loopback queues: one per destination WID and class (RVL requests apart
 * from everything else), as the fabric's lanes, so that neither a full RC
 * FIFO nor one process's full ring holds the other traffic up. */
#define DIMMNET2_LOOP_QUEUES    (DN2_NUM_WID * 2)
#define DIMMNET2_LOOP_LID       1       /* the loopback cable's LID */
#define DIMMNET2_RC_TIMEOUT_MS_DEFAULT 5000  /* an RC answer with no progress */
#define DIMMNET2_COALESCE_US_DEFAULT 100     /* packets wait this long for an ACK */
#define DIMMNET2_STRICT_PLACES  256     /* strict: places remembered (and lines kept) */
/* An LHS message being received in several packets (per sender). */
#define DIMMNET2_LHS_SLOTS      8
/* A message with no packet for this long gives its slot up when another
 * sender needs one (its sender died mid-message). */
#define DIMMNET2_LHS_TIMEOUT_MS 1000

/* ------------------------------------------------------------------ */
/* State                                                               */
/* ------------------------------------------------------------------ */

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
    uint64_t t_land;            /* timing=thesis: the request word reaches the
                                 * board then (virtual ns; 0: at once) */
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
    uint8_t polled;             /* strict: Controller Status read since the doorbell */
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
    DN2LhsMsg lhs[DIMMNET2_LHS_SLOTS];
} DN2Wid;

/* Progress of the request being executed (resumable, for long copies and
 * for primitives that wait on the link).  The Window Controller has two:
 * one for the host's Request FIFO and one for the Receive Controller's
 * (RVL requests from the network turned into RVS answers), so that an
 * answer never waits behind a host request stalled on the link, and a host
 * request never waits behind an answer stalled on its requester (choice
 * #44). */
typedef struct DN2Exec {
    uint8_t active;
    uint8_t stalled;            /* waiting for the link */
    uint8_t started;            /* remote: totals computed, packets going out;
                                 * strict VL: its lines being handed over;
                                 * 2, timing=thesis: the last data read (a VL's,
                                 * or a remote request's last packet's) */
    DN2FifoEntry ent;
    uint64_t done;              /* bytes (or elements) completed so far */
    uint64_t total;
} DN2Exec;

/* What one step of a primitive came to. */
typedef enum DN2Step {
    DIMMNET2_STEP_DONE,         /* finished (completed, refused or ignored) */
    DIMMNET2_STEP_MORE,         /* budget used up; continue in the next run */
    DIMMNET2_STEP_STALL,        /* waiting (the link, an LHS still arriving) */
} DN2Step;

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
    DN2_SV_UNPOLLED,            /* FIFO almost full, no status read first */
    DN2_SV__MAX
} DN2StrictKind;

/* Why a request was refused (Controller Status bit 20): one reason per
 * condition, named in dimmnet2-wc.c (dimmnet2_refusal_name). */
typedef enum DN2Refusal {
    DN2_REFUSE_SDIMM_NOT_READY,
    DN2_REFUSE_DST_OUTSIDE_PW,      /* VL family: DSTOff past the PW area */
    DN2_REFUSE_SRC_OUTSIDE_WW,      /* VS family: SRCOff past the WW area */
    DN2_REFUSE_VLI_COPY,            /* VLI as a copy's source half */
    DN2_REFUSE_VSI_COPY,            /* VSI as a copy's destination half */
    DN2_REFUSE_COPY_NO_SOURCE,      /* copy's VS half without its VL half */
    DN2_REFUSE_STRICT_LID,          /* strict: LID register not the port's */
    DN2_REFUSE_STRICT_SMALL,        /* strict: elements under 4 bytes */
    DN2_REFUSE_STRICT_MISALIGNED,   /* strict: SO-DIMM offset off the grain */
    DN2_REFUSE_STRICT_STRIDE,       /* strict: stride off the grain */
    DN2_REFUSE__MAX
} DN2Refusal;

/* What the Receive Controller did with a packet. */
typedef enum DN2RxResult {
    DIMMNET2_RX_DELIVERED,      /* written where it belongs, counted */
    DIMMNET2_RX_DROPPED,        /* dropped, counted under its reason */
    DIMMNET2_RX_BUSY,           /* nothing written: no room yet; offer it again */
} DN2RxResult;

/* Why the Receive Controller dropped a packet: one reason per condition,
 * each counted in one statistic (dimmnet2-rx.c has the table). */
typedef enum DN2RxDrop {
    DN2_RXD_TOO_LONG,           /* longer than the largest MTU */
    DN2_RXD_TOO_SHORT,          /* shorter than a 2-line header */
    DN2_RXD_NOT_NETWORK,        /* TYPE is not a network primitive */
    DN2_RXD_HFLAG,              /* hflag does not match TYPE */
    DN2_RXD_SHORT_SIZE,         /* shorter than its header or Packet Size */
    DN2_RXD_RVL_DATA,           /* RVL packet with data */
    DN2_RXD_FEW_ELEMENTS,       /* fewer data bytes than Iteration elements */
    DN2_RXD_LHS_OUTSIDE,        /* LHS packet outside its message */
    DN2_RXD_LHS_NO_ENVELOPE,    /* LHS first packet without an envelope */
    DN2_RXD_LHS_NO_START,       /* LHS continuation without its start */
    DN2_RXD_NOT_FOR_LID,        /* not for this board's LID */
    DN2_RXD_STRICT_LID,         /* strict: LID register not set */
    DN2_RXD_NO_PROCESS,         /* no process at DWID (PGID not written) */
    DN2_RXD_PGID,               /* PGID mismatch (protection) */
    DN2_RXD_SDIMM_NOT_READY,    /* SO-DIMM not initialised */
    DN2_RXD_NO_RING,            /* no valid IPUSH ring for this sender */
    DN2_RXD_RING_TOO_SMALL,     /* packet (or LHS overflow) larger than the ring */
    DN2_RXD__MAX
} DN2RxDrop;

/* The board's counters, QOM read-only properties "stat-*" (one table in
 * dimmnet2.c with name and description).  The first group counts in
 * s->stat[]; the DN2_STAT_LINK_* group reads the fabric endpoint's. */
typedef enum DN2Stat {
    DN2_STAT_REQUESTS,
    DN2_STAT_REFUSED,
    DN2_STAT_IGNORED,
    DN2_STAT_OVERRUN,
    DN2_STAT_BAD_ACCESS,
    DN2_STAT_BYTES_LOCAL,
    DN2_STAT_TX_PACKETS,
    DN2_STAT_TX_BYTES,
    DN2_STAT_TX_DROPS,
    DN2_STAT_RX_PACKETS,
    DN2_STAT_RX_BYTES,
    DN2_STAT_RX_DROP_BAD,
    DN2_STAT_RX_DROP_PGID,
    DN2_STAT_RX_DROP_NOPROC,
    DN2_STAT_RX_DROP_ROUTE,
    DN2_STAT_RX_STALLS,
    DN2_STAT_RC_ABANDONED,
    DN2_STAT_LHS_ABANDONED,
    DN2_STAT_STRICT_VIOLATIONS,
    DN2_STAT_DEFERRED,
    DN2_STAT_EXEC_STALLS,
    DN2_STAT_VT_WAITS,
    DN2_STAT_VT_WAIT_MS,
    DN2_STAT_VT_LATE,
    DN2_STAT_HOST_FILLS,
    DN2_STAT_HOST_FILL_NS,
    DN2_STAT__COUNTED,              /* the ones above live in s->stat[] */
    DN2_STAT_LINK_DROPS = DN2_STAT__COUNTED,
    DN2_STAT_LINK_RETRANSMITS,
    DN2_STAT_LINK_TIMEOUTS,
    DN2_STAT_LINK_FAST_RETRANSMITS,
    DN2_STAT_LINK_DUPLICATES,
    DN2_STAT_LINK_BUSY,
    DN2_STAT_LINK_DGRAMS_TX,
    DN2_STAT_LINK_DGRAMS_RX,
    DN2_STAT_LINK_AUTH_DROPS,
    DN2_STAT_LINK_REFUSALS,
    DN2_STAT_LINK_SESSION_RESETS,
    DN2_STAT_LINK_SPURIOUS_TIMEOUTS,
    DN2_STAT__MAX
} DN2Stat;

typedef enum DN2PortKind {
    DN2_PORT_NONE,              /* no cable */
    DN2_PORT_LOOPBACK,          /* the port is cabled to itself */
    DN2_PORT_FABRIC,            /* UDP fabric through a dn2-switch */
} DN2PortKind;

/* What the port reports upward (the device fills it at realize). */
typedef struct DN2PortOps {
    /* A packet arrived from LID slid. */
    DN2RxResult (*deliver)(DN2State *s, uint16_t slid, const uint8_t *pkt,
                           size_t len);
    /* A burst of input (or a timer) is done: the Window Controller may go
     * on (credits back, an RVL to answer).  True when it ran and so sent
     * what the port had queued; false: the port flushes itself. */
    bool (*news)(DN2State *s);
} DN2PortOps;

typedef struct DN2Fab DN2Fab;   /* dimmnet2-fab.h: the fabric endpoint */

/* The host's 64-byte cache lines over the PW and the LH Buffer (the
 * timing model's fills). */
#define DN2_TFILL_LINE          64u
#define DN2_TFILL_LINES         (2 * DN2_REGION_SIZE / DN2_TFILL_LINE)
#define DN2_TFILL_RUN           (DN2_WIN_SIZE / DN2_TFILL_LINE)   /* a PW window */

/* The timing model's parameters (dimmnet2-timing.c, docs/timing.md). */
typedef enum DN2TimingParam {
    DN2T_CLOCK_NS,
    DN2T_SEND_OVERHEAD_NS,
    DN2T_LINE_NS,
    DN2T_CABLE_NS,
    DN2T_SWITCH_NS,
    DN2T_RX_PUSH_CLK,
    DN2T_RX_IPUSH_CLK,
    DN2T_STATUS_CLK,
    DN2T_STATUS_GAP_CLK,
    DN2T_BOTF_READ_CLK,
    DN2T_RX_SDIMM_CLK,
    DN2T_SDIMM_READ_MBPS,
    DN2T_SDIMM_WRITE_MBPS,
    DN2T_UC_READ_NS,
    DN2T_UC_WRITE_NS,
    DN2T_BUS_MBPS,
    DN2T_POST_NS,
    DN2T_FILL_NEXT_NS,
    DN2T__MAX
} DN2TimingParam;

/*
 * The timing model's state (timing=thesis): its properties, its parameters,
 * when each unit is free again, what the host has paid for, the host's
 * cache over the windows and the switch's output port to this board.
 * dimmnet2-timing.c owns it, and its VMState.
 */
typedef struct DN2Timing {
    /* properties */
    char *mode;                 /* timing=off|thesis */
    char *timing_params;        /* timing-params=NAME=V,...: overrides */
    /* the model */
    bool timing_on;             /* timing=thesis */
    uint32_t tparam[DN2T__MAX]; /* the model's parameters */
    uint64_t t_tx_free;         /* the port sends its next packet from here */
    /* timing=thesis: when each unit is free again (virtual ns;
     * dimmnet2-timing.c; in a snapshot: vmstate_dimmnet2_timing) */
    uint64_t t_wc_free;         /* the Window Controller: its next step */
    uint64_t t_sd_free;         /* the SO-DIMMs: reads to send, writes received */
    uint64_t t_rc_free;         /* the Receive Controller: one packet at a time */
    uint64_t t_status_last;     /* its last status record (one per 8 clocks) */
    uint64_t t_data_start;      /* the next packet's data read from the SO-DIMMs: */
    uint64_t t_data_end;        /*   from, to (0: not from the SO-DIMMs) */
    uint64_t t_host_busy;       /* the vCPU's board accesses are paid up to here */
    bool t_read_retry;          /* the next instruction is a retried one */
    uint32_t t_retry_skip;      /*   whose first accesses are paid already */
    uint32_t t_acc_n;           /* accesses of the current instruction so far */
    uint64_t t_acc_left;        /* the vCPU's instruction count after the last one was paid */
    uint64_t t_bus_ps;          /* the memory bus carries the WW stores until (ps) */
    uint64_t t_post_land;       /* the host's last uncached store reaches the board */
    MemoryRegion llcm_timed;    /* the LLCM as uncached MMIO: charged reads */
    MemoryRegion ww_timed;      /* the Write Window's stores, on the bus */
    MemoryRegion pw_timed;      /* the PW and the LH Buffer as cached memory: */
    MemoryRegion lhb_timed;     /*   a line the board wrote costs a fill */
    /* timing=thesis, the host's cache over the PW and the LH Buffer
     * (dimmnet2_timing_cached_read; in a snapshot: vmstate_dimmnet2_fills):
     * one bit per 64-byte line, PW lines then LH Buffer lines, set when the
     * board writes the line and cleared when the host reads it */
    uint64_t t_stale[DN2_TFILL_LINES / 64];
    uint64_t t_fill_end;        /* the bus has brought every fill begun by then */
    uint32_t t_fill_win;        /* the window (its first line) of the last run */
    uint64_t t_fill_at[DN2_TFILL_RUN];  /* when each of its lines is in (0: not of it) */

    /* timing model, receive side (dimmnet2-timing.c): the switch's output
     * port to this board, one packet at a time */
    uint64_t t_link_out;        /* the last packet's last byte left the switch */
    uint64_t t_rx_offer;        /* when the packet now offered was first */
    bool rx_offered;            /* t_rx_offer is set */
    uint64_t t_rx_taken;        /* when the last packet was taken */
    bool rx_backlog;            /* it had waited, or queued behind one that had */
    bool rx_offer_backlog;      /* the packet now offered queued behind it */
    /* the timing model in a snapshot (vmstate_dimmnet2_timing) */
    uint32_t tparam_in[DN2T__MAX];  /* the parameters the stream was saved with */
    bool timing_loaded;         /* the stream held the model's state */
} DN2Timing;

/*
 * Lock-step virtual time (vtime=on, docs/virtual-time.md): its properties,
 * the queue of packets waiting for their virtual time, the switch's grants
 * and this board's reports, the snapshot cut.  dimmnet2-vt.c owns it and
 * its VMState (the section "dimmnet2-vt"); the port and the transport read
 * on, shm_on, started, nondet and in_wait.  Set up only on a fabric board
 * (switch=); without one, only the properties are used.
 */
struct dn2f_shm;                /* fabric/dn2fab-shm.h: a same-host sync domain */
struct dn2f_shm_pkt;

typedef struct DN2Vt {
    /* properties */
    bool on;                    /* vtime=on */
    char *sync;                 /* vt-sync: "udp" (NULL: the default) or "shm" */
    char *shm_path;             /* vt-shm: the sync domain's file */
    bool shm_on;                /* vt-sync=shm (checked at realize) */
    uint32_t latency_ns;        /* vt-latency-ns: modelled latency of every packet */
    uint64_t start_ns;          /* vt-start-ns: the lock-step (and the link) begin here */
    bool idle;                  /* vt-idle: an idle board promises its next timer */
    /* the packets waiting for their virtual time */
    GSequence *q;               /* DN2VtPkt (dimmnet2-vt.c), in delivery order */
    size_t q_bytes;
    bool q_full;                /* deliver_vt said -EBUSY: resume the endpoint */
    unsigned long *blocked;     /* (source CLID, lane) refused by the board */
    QEMUTimer *timer;           /* QEMU_CLOCK_VIRTUAL: deliveries, the horizon */
    /* the switch's grants and this board's reports */
    uint64_t horizon;           /* the board may run while its clock is below */
    uint32_t lookahead;         /* the switch's L and Q, from its grants */
    uint32_t quantum;
    uint64_t slowest;           /* the cluster's slowest clock, from the grants */
    uint32_t vseq;              /* the next packet's vseq */
    bool in_wait;               /* inside dimmnet2_vt_block() */
    bool started;               /* the clock has reached vt-start-ns */
    bool reported;              /* rep_now / rep_earliest hold a report */
    uint64_t rep_now;           /* the last report: the clock ... */
    uint64_t rep_earliest;      /* ... and the promise */
    bool nondet;                /* gave up waiting for credits: wall-clock news */
    /* vt-sync=shm: the same-host sync domain instead of the switch's grants */
    struct dn2f_shm *shm;       /* this board's membership (dimmnet2-vt.c) */
    struct dn2f_shm_pkt *shm_pkt; /* one entry taken from the ring */
    char *error;                /* the lock-step stopped (a member died): why */
    /* snapshots at a cut */
    uint64_t cut;               /* vt-cut-ns: stop the VM at this virtual time */
    bool cut_done;              /* the board stopped there (in the stream too) */
    uint32_t blob_len;          /* the queue and the refusals, for the stream */
    uint8_t *blob;
    QEMUTimerListGroup park_tlg; /* a timer list nobody runs ... */
    QEMUTimer *park;            /* ... whose timer at the cut holds the clock */
} DN2Vt;

/*
 * The board's properties (dimmnet2.c's property table), but for the timing
 * model's (DN2Timing) and virtual time's (DN2Vt): fixed at realize.
 */
typedef struct DN2Params {
    uint64_t base;              /* guest-physical address of the window */
    uint64_t sodimm_size;       /* used when no memdev is given */
    uint32_t fifo_depth;        /* Request FIFO entries */
    HostMemoryBackend *hostmem; /* memdev=: the two SO-DIMM modules */
    char *switch_addr;          /* HOST:PORT of the dn2-switch */
    char *local_addr;           /* HOST:PORT to bind, optional */
    bool loopback;              /* the port cabled to itself */
    bool rx_thread;             /* receive in a thread of its own */
    uint64_t guid;              /* board GUID for the subnet manager */
    uint32_t rc_timeout_ms;     /* abandon an RC answer stalled this long */
    char *secret_id;            /* -object secret id: the cluster secret */
    uint32_t coalesce_us;       /* Nagle per peer, 0 = off: dimmnet2_port_flush() */
    bool strict;                /* strict=on: dimmnet2-strict.c */
    bool read_mirror;           /* read-mirror: User Register reads from RAM */
    uint16_t lid_wanted;        /* lid=: the LID asked of the subnet manager (0 = any) */
    char *pcap_path;            /* pcap=: a trace of the packets delivered */
    uint32_t strict_delay_ns;   /* virtual-clock delay of each step */
} DN2Params;

/* The board's window in guest memory: the container and its regions, and
 * their host memory (dimmnet2.c maps them at realize). */
typedef struct DN2Window {
    MemoryRegion container;
    MemoryRegion ww, pw, llcm, lhb;
    MemoryRegion ur, sr;
    MemoryRegion ur_mirror;     /* read-mirror=on: ur is an alias of this ROM device */
    uint8_t *ur_ptr;            /* its RAM: the readable registers, or NULL */
    MemoryRegion sodimm_own;    /* when no memdev */
    MemoryRegion *sodimm_mr;
    uint8_t *ww_ptr, *pw_ptr, *llcm_ptr, *lhb_ptr, *sodimm_ptr;
    uint64_t sodimm_bytes;      /* backing size: two modules */
} DN2Window;

/* The System Register (dimmnet2-regs.c; in the stream: vmstate_dimmnet2). */
typedef struct DN2SysReg {
    uint8_t sdimm_ready;
    uint8_t pgid[DN2_NUM_WID];
    uint32_t sdimm_cap_reg;
    uint32_t mtu_reg;
    uint16_t lid;
    uint16_t sma_lid;           /* LID assigned by the subnet manager */
    uint8_t link_state;         /* SMA LID [17:16] */
    uint16_t amt[DIMMNET2_AMT_ENTRIES]; /* slots: dn2_amt_slot() */
} DN2SysReg;

/* The Window Controller (dimmnet2-wc.c): the Request FIFO, the two
 * executors and their timers. */
typedef struct DN2Wc {
    DN2FifoEntry fifo[DIMMNET2_FIFO_MAX];
    uint32_t fifo_head;
    uint32_t fifo_count;
    DN2Exec exec;               /* host requests */
    DN2Exec rc_exec;            /* Receive Controller requests (RVL answers) */
    uint8_t rc_turn;            /* alternate host and RC requests */
    QEMUTimer *rc_timer;        /* abandons an RC answer that makes no progress */
    int64_t rc_stall_since;     /* realtime ns; 0 = making progress */
    uint64_t rc_stall_done;     /* rc_exec.done when the stall began */
    /* Requesters (by CLID) one of whose answers was abandoned and that have
     * granted nothing since: their next answer gets no grace.  Soft state,
     * not migrated. */
    DECLARE_BITMAP(rc_silent, DN2_CLID_INIT + 1);
    uint64_t rc_silent_gen;     /* dimmnet2_port_peer_gen() when last set */
    QEMUBH *bh;
    QEMUTimer *strict_timer;    /* strict or vtime: the Window Controller's virtual-clock timer */
    uint8_t *copy_buf;
    uint8_t *pkt_buf;           /* one outgoing packet */
} DN2Wc;

/* The Receive Controller (dimmnet2-rx.c): its RC request FIFO, its stall
 * and the retry that ends it. */
typedef struct DN2Rx {
    DN2FifoEntry rc_fifo[DIMMNET2_RC_FIFO];
    uint32_t rc_head;
    uint32_t rc_count;
    QEMUTimer *retry;           /* receive stalled on host-owned memory */
    QEMUBH *bh;                 /* resume a stalled receive */
    QEMUTimer *kick;            /* vtime: the same on the virtual clock */
    uint8_t stalled;
    uint32_t retry_ns;          /* next retry delay (backs off) */
} DN2Rx;

/* The port (dimmnet2-port.c and the three files below it, dimmnet2-fab.h). */
typedef struct DN2Port {
    DN2PortKind kind;
    const DN2PortOps *ops;
    DN2Fab *fab;                /* switch=: the transport (dimmnet2-transport.c) */
    FILE *pcap;                 /* pcap=: the trace being written */
    GQueue loop_q[DIMMNET2_LOOP_QUEUES]; /* loopback packets not yet delivered */
    QEMUBH *loop_bh;
    QEMUTimer *loop_timer;      /* vtime=on: the cable on the virtual clock */
    uint64_t loop_seq;          /* next loopback packet's sequence number */
    Error *blocker;             /* migration blocker while linked */
    Notifier exit;              /* switch=: QEMU ends: the board leaves */
} DN2Port;

/* strict=on (dimmnet2-strict.c): what it has seen and reported. */
typedef struct DN2Strict {
    Error *blocker;
    uint64_t count[DN2_SV__MAX];
    uint32_t seen[DIMMNET2_STRICT_PLACES];
    unsigned nseen;
    GPtrArray *lines;           /* strict-violations */
} DN2Strict;

struct DN2State {
    ISADevice parent_obj;

    /* properties (but the timing model's and virtual time's, below) */
    DN2Params params;
    int index;                  /* board number in this VM: AML DN2<n> */

    DN2Window win;              /* the window and its memory */
    DN2SysReg sys;              /* System Register */
    DN2Wid wid[DN2_NUM_WID];    /* User Registers, per process */
    DN2Wc wc;                   /* Window Controller (dimmnet2-wc.c) */
    DN2Rx rx;                   /* Receive Controller (dimmnet2-rx.c) */
    DN2Port port;               /* the port (dimmnet2-port.c) */
    /* The end of an entry into the device from the main loop (a bottom
     * half, a timer, an fd handler of a unit below the host interface):
     * publish the register mirror.  Set by realize to dimmnet2_ur_publish
     * (dimmnet2-regs.c), so that those units call nothing above them. */
    void (*entry_done)(DN2State *s);

    /* statistics: QOM "stat-*" (dimmnet2.c) */
    uint64_t stat[DN2_STAT__COUNTED];

    DN2Strict strict;           /* strict mode (dimmnet2-strict.c) */
    /* the timing model (timing=thesis, dimmnet2-timing.c, docs/timing.md) */
    DN2Timing timing;
    /* lock-step virtual time (vtime=on, dimmnet2-vt.c, docs/virtual-time.md) */
    DN2Vt vt;
};

/* An incoming stream's check: refuse it whole, naming the field. */
#define DN2_LOAD_CHECK(cond, ...) do { \
        if (!(cond)) { \
            error_report("dimmnet2: incoming migration refused: " __VA_ARGS__); \
            return -EINVAL; \
        } \
    } while (0)

/* ------------------------------------------------------------------ */
/* Errors: one shape                                                   */
/* ------------------------------------------------------------------ */

/*
 * A guest (or network peer) error: the trace event trace_dimmnet2_<ev>
 * (board, args...), a LOG_GUEST_ERROR line with the same arguments, and
 * the statistic counter counted, in one place.  The trace event's arguments
 * after the board are the format's.
 */
#define DIMMNET2_GUEST_ERROR(s, counter, ev, fmt, ...) do {                  \
        (s)->stat[(counter)]++;                                              \
        trace_dimmnet2_##ev((s)->index, ##__VA_ARGS__);                      \
        qemu_log_mask(LOG_GUEST_ERROR, "dimmnet2: board %d: " fmt "\n",     \
                      (s)->index, ##__VA_ARGS__);                            \
    } while (0)

/* ------------------------------------------------------------------ */
/* Time                                                                */
/* ------------------------------------------------------------------ */

/*
 * The clock of the board's own timers and timestamps (RC answer grace, LHS
 * slot age, receive retry): the host's monotonic clock, or with vtime=on
 * the cluster's virtual clock, so that nothing the guest can see depends on
 * the host (docs/virtual-time.md).
 */
static inline QEMUClockType dimmnet2_clock(const DN2State *s)
{
    return s->vt.on ? QEMU_CLOCK_VIRTUAL : QEMU_CLOCK_REALTIME;
}

static inline int64_t dimmnet2_now(const DN2State *s)
{
    return qemu_clock_get_ns(dimmnet2_clock(s));
}

/* Count one request of a family in the process's Primitive Counter. */
static inline void dimmnet2_prim_count(DN2State *s, int wid, int family)
{
    DN2Wid *w = &s->wid[wid];

    w->prim_counter[family] = (w->prim_counter[family] + 1) & DN2_PC_MASK;
}

/* The AMT Address Table entry of sender {slid, swid} for receiving process
 * dwid (choice #52). */
static inline uint32_t dimmnet2_amt_index(uint16_t slid, unsigned swid, unsigned dwid)
{
    return ((uint32_t)dn2_lid_to_clid(slid) << 2) | ((swid & 1) << 1) | (dwid & 1);
}

/* The receive-status ring of a process: [init, init + size) in its LLCM,
 * cut short if it would run past the LLCM end. */
static inline uint32_t dimmnet2_status_ring_bytes(const DN2Wid *w)
{
    uint32_t size = dn2_status_area_bytes(w->status_size_reg);

    if (w->status_init + size > DN2_LLCM_AREA) {
        size = (DN2_LLCM_AREA - w->status_init) & ~(DN2_STATUS_REC_SIZE - 1);
    }
    return size ? size : DN2_STATUS_REC_SIZE;
}

static inline uint32_t dimmnet2_status_ring_used(const DN2Wid *w)
{
    uint32_t size = dimmnet2_status_ring_bytes(w);

    return ((uint32_t)(w->status_tail - w->status_init) % size -
            (uint32_t)(w->status_head - w->status_init) % size + size) % size;
}

/* The VL family (VL, VLS, VLI) and the VS family (VS, VSS, VSI). */
static inline bool dimmnet2_is_vl(unsigned otype)
{
    return dn2_otype_is_local(otype) && dn2_otype_family(otype) == DN2_OP_VL;
}

static inline bool dimmnet2_is_vs(unsigned otype)
{
    return dn2_otype_is_local(otype) && dn2_otype_family(otype) == DN2_OP_VS;
}

static inline void dimmnet2_req_of(struct dn2_req *r, const DN2FifoEntry *e)
{
    dn2_req_decode(r, e->lower, e->upper, e->ex, e->has_ex, e->rflag, e->wid);
}

/* ------------------------------------------------------------------ */
/* The units, top to bottom                                            */
/* ------------------------------------------------------------------ */

/* dimmnet2-regs.c: the host interface */
extern const MemoryRegionOps dimmnet2_ur_ops;
extern const MemoryRegionOps dimmnet2_sr_ops;
void dimmnet2_controller_reset(DN2State *s);
void dimmnet2_ur_publish(DN2State *s);

/* dimmnet2-wc.c: the Window Controller */
void dimmnet2_wc_init(DN2State *s);
void dimmnet2_wc_fini(DN2State *s);
void dimmnet2_wc_reset(DN2State *s);
void dimmnet2_wc_doorbell(DN2State *s, int wid, int rflag, uint64_t lower);
void dimmnet2_wc_kick(DN2State *s);
bool dimmnet2_wc_news(DN2State *s);
bool dimmnet2_wc_fifo_almost_full(DN2State *s);
uint64_t dimmnet2_wc_module_state(DN2State *s);

/* dimmnet2-local.c: VL and VS families, SO-DIMM to SO-DIMM copy */
void dimmnet2_local_on_issue(DN2State *s, const struct dn2_req *r);
DN2Step dimmnet2_local_step(DN2State *s, DN2Exec *x, const struct dn2_req *r,
                            uint64_t *budget);

/* dimmnet2-tx.c: remote primitives to packets */
void dimmnet2_tx_on_issue(DN2State *s, const struct dn2_req *r);
DN2Step dimmnet2_tx_step(DN2State *s, DN2Exec *x, const struct dn2_req *r,
                         uint64_t *budget);

/* dimmnet2-rx.c: the Receive Controller */
void dimmnet2_rx_init(DN2State *s);
void dimmnet2_rx_fini(DN2State *s);
void dimmnet2_rx_reset(DN2State *s);
DN2RxResult dimmnet2_rx_packet(DN2State *s, uint16_t slid, const uint8_t *pkt,
                               size_t len);
void dimmnet2_rx_resume(DN2State *s);
bool dimmnet2_rx_rc_pop(DN2State *s, DN2FifoEntry *e);
unsigned dimmnet2_rx_rc_abandon(DN2State *s, unsigned dclid);
bool dimmnet2_rx_holding(DN2State *s);
/* Would a read of SO-DIMM [off, off + len) of process wid see the overflow
 * of an LHS message that is still arriving? */
bool dimmnet2_rx_lhs_filling(DN2State *s, int wid, uint64_t off, uint64_t len);

/* dimmnet2-strict.c: request errors, strict mode */
void dimmnet2_refuse(DN2State *s, const struct dn2_req *r, DN2Refusal why);
const char *dimmnet2_refusal_name(DN2Refusal why);
void dimmnet2_strict_instance_init(DN2State *s);
bool dimmnet2_strict_init(DN2State *s, Error **errp);
void dimmnet2_strict_fini(DN2State *s);
void dimmnet2_strict_report(DN2State *s, DN2StrictKind kind, int wid,
                            uint32_t reg, const char *detail);
uint64_t dimmnet2_strict_ww_sum(DN2State *s, int wid, unsigned n);
bool dimmnet2_strict_refuse(DN2State *s, const struct dn2_req *r,
                            DN2Refusal *why);

/* dimmnet2-port.c: the port.  With no cable remote primitives wait, as the
 * real board's Window Controller waits on a SWIF FIFO that never drains,
 * until a Controller Reset. */
bool dimmnet2_port_init(DN2State *s, const DN2PortOps *ops, Error **errp);
void dimmnet2_port_fini(DN2State *s);
void dimmnet2_port_reset(DN2State *s);
void dimmnet2_port_refresh(DN2State *s);
void dimmnet2_port_sma_reset(DN2State *s);
bool dimmnet2_port_ready(DN2State *s);
uint64_t dimmnet2_port_peer_gen(DN2State *s);
uint16_t dimmnet2_port_lid(DN2State *s);
/* h0: the packet's first header word (DLID, DWID, TYPE are read). */
bool dimmnet2_port_can_send(DN2State *s, uint64_t h0, size_t len);
void dimmnet2_port_send(DN2State *s, uint16_t dlid, const uint8_t *pkt,
                        size_t len);
void dimmnet2_port_flush(DN2State *s);
void dimmnet2_port_resume(DN2State *s);
/* Virtual time: what the port has due at this virtual time (deliveries,
 * the cut) before the caller's own step; the board's other virtual-clock
 * timers call it first (dimmnet2_vt_run_due). */
void dimmnet2_port_due_first(DN2State *s);
uint64_t dimmnet2_port_stat(DN2State *s, DN2Stat which);
/* Snapshots (docs/fabric.md "Snapshots"): nothing in flight on the port;
 * held: the migration blocker of a linked board lifted, deliveries refused
 * (back-pressure) until released or the VM runs. */
bool dimmnet2_port_quiescent(DN2State *s, Error **errp);
bool dimmnet2_port_hold(DN2State *s, bool on, Error **errp);
bool dimmnet2_port_held(DN2State *s);

/* dimmnet2-sdimm.c: the SO-DIMMs */
uint64_t dimmnet2_sdimm_area(DN2State *s);
bool dimmnet2_sdimm_rw(DN2State *s, int wid, uint64_t off, void *buf,
                       uint64_t len, bool is_write);
bool dimmnet2_sdimm_list_entry(DN2State *s, int wid, uint32_t list, uint32_t i,
                               uint32_t *out);

/*
 * An access pattern (thesis §4.6.3): elements of esz bytes at base plus
 * i * esz (contiguous), base + i * stride (strided) or base + list[i]
 * (list: the 32-bit entries at SO-DIMM offset arg).  Offsets are 32-bit,
 * as the hardware's adders: a "negative" stride wraps.
 */
typedef struct DN2Pattern {
    int form;                   /* DN2_FORM_* */
    uint32_t base;
    uint32_t arg;               /* stride, or the list's SO-DIMM offset */
    uint32_t esz;               /* element bytes (contiguous: any, e.g. 1) */
} DN2Pattern;

/* What went wrong with the elements of one transfer (a bit mask). */
#define DIMMNET2_PAT_LIST_BAD   1u  /* a list entry could not be read */
#define DIMMNET2_PAT_OUTSIDE    2u  /* an element lay (partly) outside the area */

void dimmnet2_pattern_init(DN2Pattern *p, int form, uint32_t base, uint32_t arg,
                           unsigned dtype);
/* The address of element i, or false (a list entry that cannot be read). */
bool dimmnet2_pattern_addr(DN2State *s, int wid, const DN2Pattern *p,
                           uint32_t i, uint32_t *addr);
/* Bytes [off, off + len) of the pattern's stream (its elements one after
 * another; contiguous: the run itself) from / to buf and the process's
 * SO-DIMM area.  What cannot be moved (a list entry that cannot be read,
 * an element not wholly in the area, a run past the area end) is skipped,
 * buf left as it was there.  Returns DIMMNET2_PAT_* bits; *moved (if not
 * NULL) gets the bytes moved. */
unsigned dimmnet2_pattern_read(DN2State *s, int wid, const DN2Pattern *p,
                               uint64_t off, void *buf, uint64_t len,
                               uint64_t *moved);
unsigned dimmnet2_pattern_write(DN2State *s, int wid, const DN2Pattern *p,
                                uint64_t off, const void *buf, uint64_t len,
                                uint64_t *moved);

/* dimmnet2-timing.c: the timing model (below the port) */
/* its VMState, subsections of the device's (dimmnet2.c) */
extern const VMStateDescription vmstate_dimmnet2_timing;
extern const VMStateDescription vmstate_dimmnet2_fills;
bool dimmnet2_timing_init(DN2State *s, Error **errp);
uint64_t dimmnet2_timing_due(DN2State *s, uint64_t now, uint64_t h0, size_t len);
uint64_t dimmnet2_timing_min_ns(const DN2State *s);
void dimmnet2_timing_uc_access(DN2State *s, bool write);
uint64_t dimmnet2_timing_land(DN2State *s);
bool dimmnet2_timing_landed(DN2State *s, const DN2FifoEntry *e);
bool dimmnet2_timing_wc_ready(DN2State *s);
void dimmnet2_timing_wc_busy(DN2State *s, uint64_t ns);
uint64_t dimmnet2_timing_sdimm_read(DN2State *s, uint64_t bytes);
void dimmnet2_timing_vl_read(DN2State *s, uint64_t bytes);
uint64_t dimmnet2_timing_rx_hold(DN2State *s, const uint8_t *pkt, size_t len,
                                 bool commit);
void dimmnet2_timing_cached_written(DN2State *s, bool lhb, uint32_t off, uint32_t len);
void dimmnet2_timing_cached_reset(DN2State *s);
void dimmnet2_timing_map(DN2State *s);
void dimmnet2_timing_unmap(DN2State *s);

#endif
