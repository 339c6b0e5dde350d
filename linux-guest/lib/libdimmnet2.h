/* SPDX-License-Identifier: MIT */
/*
 * libdimmnet2: user-level access to a DIMMnet-2 board.
 *
 * A process opens the board, gets one of its two WIDs, and maps its own
 * pieces of the window: Write Window (WC), Prefetch Window (WB), LLCM (UC),
 * LH Buffer (WB) and User Register page (UC).  Every primitive is then a few
 * stores: the library fills buffers, writes Upper (Command Ex) and Lower, and
 * polls the board's completion state.  No system call is on the data path.
 *
 * Conventions:
 *  - Functions return 0 (or a count) on success and a negative errno-style
 *    code on failure; dn2_strerror() gives a readable message.
 *  - Offsets: "ww"/"pw" offsets are relative to the process's 2 KiB window
 *    area (offset / 512 = window number); SO-DIMM offsets are relative to the
 *    process's half of the SO-DIMMs; "llcm" offsets to its 32 KiB LLCM.
 *  - Timeouts are in microseconds; 0 means "poll once", negative "forever".
 *  - A dn2_t is not thread-safe; use one per thread (the board has two WIDs).
 *
 * Everything the board defines (register offsets, bits, opcodes, layouts)
 * comes from <dimmnet2/dn2_abi.h>.
 */
#ifndef LIBDIMMNET2_H
#define LIBDIMMNET2_H

#include <stddef.h>
#include <stdint.h>
#include "dimmnet2/dn2_abi.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct dn2 dn2_t;

#include "dn2-cpu.h"

/* Extra error codes (negative, beyond errno's range). */
#define DN2_E_REFUSED   (-2001)  /* the board refused the request (bit 20) */
#define DN2_E_SRC_OVF   (-2002)  /* VS source ran past its window (bit 6) */
#define DN2_E_DST_OVF   (-2003)  /* VS destination past the SO-DIMM area (bit 7) */
#define DN2_E_LINK      (-2004)  /* link not up */
#define DN2_E_RXERR     (-2005)  /* receive error state (bits 17-19) */

const char *dn2_strerror(int err);

/* ------------------------------------------------------------ opening */

/* Open a board through the kernel driver: path NULL means
 * "/dev/dimmnet2-0".  The driver gives this process a free WID (-EBUSY
 * when both are taken) and maps only this process's pieces. */
int dn2_open(dn2_t **out, const char *path);

/* Open through /dev/mem at a physical window base (root only): the whole
 * window including the System Register is mapped; used by dsh and by
 * bring-up tools where no driver is loaded.  wid selects the pieces the
 * primitives use. */
int dn2_open_mem(dn2_t **out, uint64_t phys_base, int wid);
/* Where the first board's window is, for dn2_open_mem(): $DN2_BASE when
 * set (a real board in a DIMM slot, docs/real-board.md), else the ACPI
 * device's resource in /proc/iomem (_HID DNET0002), else the emulator's
 * default 0xfec10000.  *from (may be NULL) says which. */
uint64_t dn2_find_base(const char **from);

/* Open the driver's control handle (no WID, no mappings): only for
 * dn2_lid(), dn2_sdimm_bytes() and the dn2_admin_* calls. */
int dn2_open_control(dn2_t **out, const char *path);

void dn2_close(dn2_t *d);

int dn2_wid(const dn2_t *d);
/* This board's LID as the subnet manager assigned it (0 if unknown). */
uint16_t dn2_lid(dn2_t *d);
/* Bytes of SO-DIMM this process owns (0 if unknown). */
uint64_t dn2_sdimm_bytes(const dn2_t *d);

/* ------------------------------------------------------- raw access */

volatile uint8_t *dn2_ww(dn2_t *d);         /* 2 KiB, write-combining */
const volatile uint8_t *dn2_pw(dn2_t *d);   /* 2 KiB, cached */
volatile uint8_t *dn2_llcm(dn2_t *d);       /* 32 KiB, uncached */
const volatile uint8_t *dn2_lhb(dn2_t *d);  /* 4 KiB, cached */
uint64_t dn2_ur_read(dn2_t *d, unsigned off);
void dn2_ur_write(dn2_t *d, unsigned off, uint64_t v);
/* The System Register: only with dn2_open_mem(); -EPERM otherwise. */
int dn2_sr_read(dn2_t *d, unsigned off, uint64_t *v);
int dn2_sr_write(dn2_t *d, unsigned off, uint64_t v);

uint64_t dn2_ctl_status(dn2_t *d);
uint64_t dn2_prim_counter(dn2_t *d);
uint64_t dn2_packet_counter(dn2_t *d);
void dn2_reset_counters(dn2_t *d);

/* Copy into the Write Window (WC stores, then a store fence). */
void dn2_ww_write(dn2_t *d, uint32_t ww_off, const void *src, size_t len);
/* Copy out of the Prefetch Window (the lines were flushed at issue). */
void dn2_pw_read(dn2_t *d, uint32_t pw_off, void *dst, size_t len);

/* ------------------------------------------------------ issuing */

/* Command words for one request: the request's second word is Upper; the
 * Command Ex word is used when ex_valid.  cmd 0 = Command0 (remote data to
 * SO-DIMM), 1 = Command1 (remote data to the Prefetch Window). */
struct dn2_cmd {
    uint64_t lower;
    uint64_t upper;
    uint64_t ex;
    int ex_valid;
    int cmd;
};

/* Wait until the Request FIFO has room (Controller Status bits 0 and 2
 * clear), then write Upper, Command Ex and Lower.  -ETIMEDOUT if the board
 * stays busy for timeout_us. */
int dn2_issue(dn2_t *d, const struct dn2_cmd *c, long timeout_us);

/* A local access pattern for Command Ex (the sender's side of RVS/IPUSH,
 * the landing side of RVL): contiguous, strided or list. */
struct dn2_pattern {
    int form;           /* DN2_FORM_CONTIG / _STRIDE / _LIST */
    unsigned dtype;     /* element size 1 << dtype (strided/list) */
    unsigned iter;      /* elements (strided/list), <= 255 */
    uint32_t arg;       /* size (contig), stride, or SO-DIMM list address */
};

/* ------------------------------------------- local primitives (VL/VS) */

/* Each returns once the request is issued; wait with the functions below.
 * A strided/list form moves iter elements of (1 << dtype) bytes. */
int dn2_vs(dn2_t *d, uint32_t ww_off, uint32_t sd_dst, uint32_t size);
int dn2_vss(dn2_t *d, uint32_t ww_off, uint32_t sd_dst, unsigned dtype,
            unsigned iter, uint32_t stride);
int dn2_vsi(dn2_t *d, uint32_t ww_off, uint32_t sd_dst, unsigned dtype,
            unsigned iter, uint32_t sd_list);
int dn2_vl(dn2_t *d, uint32_t sd_src, uint32_t pw_off, uint32_t size);
int dn2_vls(dn2_t *d, uint32_t sd_src, uint32_t pw_off, unsigned dtype,
            unsigned iter, uint32_t stride);
int dn2_vli(dn2_t *d, uint32_t sd_src, uint32_t pw_off, unsigned dtype,
            unsigned iter, uint32_t sd_list);
/* Copy len bytes of our SO-DIMM at sd_src into host memory through the
 * Prefetch Windows whose bits are set in pw_mask (bit n = window n),
 * keeping one VL in flight per window: the receive-with-copy path.
 * 0, DN2_E_REFUSED, or -ETIMEDOUT (timeout_us per window fill). */
int dn2_sd_read(dn2_t *d, uint32_t sd_src, void *dst, size_t len,
                unsigned pw_mask, long timeout_us);
/* Copy len bytes of host memory into our SO-DIMM at sd_dst through the
 * Write Windows whose bits are set in ww_mask (VS, one in flight per
 * window), and wait until all of it is written: 0, DN2_E_REFUSED,
 * DN2_E_SRC_OVF / DN2_E_DST_OVF, or -ETIMEDOUT (timeout_us per window).
 * dn2_sd_read and dn2_sd_write are the library's one way to move host
 * data to and from the SO-DIMM through the windows. */
int dn2_sd_write(dn2_t *d, uint32_t sd_dst, const void *src, size_t len,
                 unsigned ww_mask, long timeout_us);
#define DN2_WIN_ALL   ((1u << DN2_NUM_WW) - 1)   /* every window of the area */
/* SO-DIMM to SO-DIMM copy (VL-family + VS-family pair): src pattern and
 * dst pattern (contiguous when NULL, with size bytes). */
int dn2_copy(dn2_t *d, uint32_t sd_src, const struct dn2_pattern *src_pat,
             uint32_t sd_dst, const struct dn2_pattern *dst_pat, uint32_t size);

/* Wait for the last VS-family request from Write Window n: 0, or
 * DN2_E_SRC_OVF / DN2_E_DST_OVF (the data that fit was written), or
 * DN2_E_REFUSED, or -ETIMEDOUT. */
int dn2_wait_vs(dn2_t *d, int window, long timeout_us);
/* Wait until Prefetch Window n's four line flags are set (VL, RVL into
 * the PW), then make the cache forget stale lines. */
int dn2_wait_pw(dn2_t *d, int window, long timeout_us);
/* Primitive Counter of a family (DN2_PC_BOTF ...): 10 bits, wraps. */
unsigned dn2_count(dn2_t *d, int family);
/* Wait until the family's counter has advanced by n from 'since'. */
int dn2_wait_count(dn2_t *d, int family, unsigned since, unsigned n,
                   long timeout_us);

/* ---------------------------------------------------------- BOTF */

/* Destination of a BOTF image's data at the receiver. */
enum dn2_target {
    DN2_TO_SDIMM = 0,
    DN2_TO_PW = 1,
    DN2_TO_LLCM = 2,
};

/* Send len bytes (<= 496) as one packet from Write Window n: builds the
 * 2-line header (TYPE RVS: dst is the receiver's offset in its SO-DIMM,
 * Prefetch Window or LLCM), copies the image and issues BOTF.  eflag asks
 * the receiver for a status record.  The window may be reused once
 * dn2_count(DN2_PC_BOTF) has advanced (dn2_botf_rr does that for you). */
int dn2_botf(dn2_t *d, int window, uint16_t dlid, int dwid,
             enum dn2_target to, uint32_t dst, const void *data, size_t len,
             int eflag);
/* Send a raw packet image (header included, size <= 512). */
int dn2_botf_raw(dn2_t *d, int window, const void *image, size_t size);

/* Round robin over 1, 2 or 4 Write Windows (thesis §6: overlaps host
 * writes with the NIC's reads). */
struct dn2_botf_rr {
    int windows;        /* 1, 2 or 4 */
    int next;
    unsigned issued;    /* BOTFs issued */
    unsigned base;      /* BOTF counter when issued was 0 */
    unsigned left;      /* BOTFs seen to have left, at the last counter read */
};
void dn2_botf_rr_init(dn2_t *d, struct dn2_botf_rr *rr, int windows);
/* Is the next window of rr free (its last BOTF read by the board)?  The
 * Primitive Counter is read only when the last reading leaves no window
 * free, so with W windows one read covers up to W images: the host work
 * that more windows save, as on the real board. */
int dn2_botf_rr_ready(dn2_t *d, struct dn2_botf_rr *rr);
int dn2_botf_rr_send(dn2_t *d, struct dn2_botf_rr *rr, uint16_t dlid, int dwid,
                     enum dn2_target to, uint32_t dst, const void *data,
                     size_t len, int eflag);
/* Wait until every BOTF issued through rr has left the board. */
int dn2_botf_rr_drain(dn2_t *d, struct dn2_botf_rr *rr, long timeout_us);

/* --------------------------------------------- RVS / RVL / IPUSH / LHS */

/* Flags for the network primitives. */
#define DN2_F_EFLAG   1   /* receiver writes a status record at the end */
#define DN2_F_TO_PW   2   /* data lands in the Prefetch Window (Command1) */
#define DN2_F_PER_MESSAGE 4 /* IPUSH/LHS with DN2_F_EFLAG: one status record
                             * per message (its start and size), not one
                             * per packet (a ring with a single sender) */

/* RDMA write: size bytes of local SO-DIMM (or the local pattern) to the
 * remote process (dlid, dwid) at sd_dst. */
int dn2_rvs(dn2_t *d, uint16_t dlid, int dwid, uint32_t sd_src, uint32_t dst,
            uint32_t size, const struct dn2_pattern *local, int flags);
/* Remote strided / list store: iter elements of 1 << dtype bytes. */
int dn2_rvss(dn2_t *d, uint16_t dlid, int dwid, uint32_t sd_src, uint32_t dst,
             unsigned dtype, unsigned iter, uint32_t stride,
             const struct dn2_pattern *local, int flags);
int dn2_rvsi(dn2_t *d, uint16_t dlid, int dwid, uint32_t sd_src, uint32_t dst,
             unsigned dtype, unsigned iter, uint32_t remote_list,
             const struct dn2_pattern *local, int flags);
/* RDMA read: the remote's sd_src (contiguous, or its strided/list pattern)
 * into our dst (SO-DIMM, or PW with DN2_F_TO_PW; 'landing' scatters). */
int dn2_rvl(dn2_t *d, uint16_t dlid, int dwid, uint32_t sd_src, uint32_t dst,
            uint32_t size, const struct dn2_pattern *landing, int flags);
int dn2_rvls(dn2_t *d, uint16_t dlid, int dwid, uint32_t sd_src, uint32_t dst,
             unsigned dtype, unsigned iter, uint32_t stride,
             const struct dn2_pattern *landing, int flags);
int dn2_rvli(dn2_t *d, uint16_t dlid, int dwid, uint32_t sd_src, uint32_t dst,
             unsigned dtype, unsigned iter, uint32_t remote_list,
             const struct dn2_pattern *landing, int flags);
/* Indirect push: the receiver picks the place (its IPUSH ring for us). */
int dn2_ipush(dn2_t *d, uint16_t dlid, int dwid, uint32_t sd_src,
              uint32_t size, int flags);
/* LHS: the message (envelope word first) is split by the receiver into an
 * LH Buffer entry and its IPUSH ring.  v2 sends ww_bytes (<= 1023, may
 * span windows, within the 2 KiB area) from the Write Window at ww_off
 * first, then size - ww_bytes from SO-DIMM. */
int dn2_lhsv1(dn2_t *d, uint16_t dlid, int dwid, uint32_t sd_src,
              uint32_t size, int flags);
int dn2_lhsv2(dn2_t *d, uint16_t dlid, int dwid, uint32_t ww_off,
              uint32_t ww_bytes, uint32_t sd_src, uint32_t size, int flags);

/* -------------------------------------------- receive-status ring */

/* Place the ring at LLCM offset llcm_off, bytes = 64 << k (64..4096). */
int dn2_status_ring_init(dn2_t *d, uint32_t llcm_off, uint32_t bytes);

/* One decoded receive-status record (Table 4.9). */
struct dn2_rx_status {
    unsigned type;      /* OTYPE of the packet */
    unsigned dtype, iter;
    uint16_t src_clid;  /* the sender */
    int src_wid;
    uint32_t size;      /* bytes (see docs/device-model.md) */
    uint32_t addr;      /* first address the data was written to */
};
/* Take the oldest record: 1 when one was taken, 0 when the ring is
 * empty after timeout_us, negative on error. */
int dn2_status_next(dn2_t *d, struct dn2_rx_status *st, long timeout_us);

/* ----------------------------------------------------- IPUSH rings */

/* Host side of a receive ring for the senders the AMT Address Table maps
 * to AMT entry 'amt_value' (entry at LLCM region offset amt_value x 16;
 * it must be in this process's LLCM).  base/size: SO-DIMM offset and size
 * of the ring (multiple of 8).  The sender-to-entry mapping is set by the
 * administrator (dn2_admin_amt / driver ioctl).
 * The host owns the ring's head: this struct keeps it, and the entry's head
 * is only written (the board reads it; an uncached LLCM read costs the host
 * about 0.19 us, thesis Table 6.2), so one struct per ring and process. */
struct dn2_ring {
    unsigned amt_value;
    uint32_t base, size;
    uint32_t head;      /* bytes from base to the oldest unread byte */
};
int dn2_ring_init(dn2_t *d, struct dn2_ring *r, unsigned amt_value,
                  uint32_t base, uint32_t size);
/* Bytes waiting in the ring, and where they start (SO-DIMM offset). */
uint32_t dn2_ring_avail(dn2_t *d, const struct dn2_ring *r, uint32_t *at);
/* Give back len bytes (rounded up to 8) after reading them: one store to
 * the entry's head, no read. */
void dn2_ring_consume(dn2_t *d, struct dn2_ring *r, uint32_t len);

/* ------------------------------------------------------ LH Buffer */

struct dn2_lh_msg {
    unsigned context, rank;
    uint32_t tag;
    uint32_t size;      /* message bytes after the envelope */
    uint32_t pointer;   /* SO-DIMM offset of bytes beyond the first 48 */
    uint8_t data[DN2_LHB_DATA];
    int complete;       /* all data written */
};
/* Wait for the next LH Buffer entry (Valid toggled); complete says
 * whether its data has all arrived (poll dn2_lh_wait_complete).
 * dn2_lh_next returns 1 with an entry, 0 on timeout, or -errno;
 * dn2_lh_wait_complete returns 0 once the entry is complete (m is read
 * again), -ETIMEDOUT or another -errno. */
int dn2_lh_next(dn2_t *d, struct dn2_lh_msg *m, long timeout_us);
int dn2_lh_wait_complete(dn2_t *d, struct dn2_lh_msg *m, long timeout_us);
/* Has the next LH Buffer entry arrived?  Looks only at the entry's Valid
 * toggle in the LH Buffer (memory), never at a register: cheap enough to
 * spin on (a register read is a trip into the device model that, under
 * emulation, competes with the network input for the machine's lock). */
int dn2_lh_ready(dn2_t *d);
/* Release the entry taken by dn2_lh_next (advance the head). */
void dn2_lh_release(dn2_t *d);

/* ------------------------------------------------------- LLCM map */

/* How the library, its programs and the libfabric provider share a
 * process's 32 KiB LLCM (offsets from dn2_llcm(); docs/library.md):
 *   0x0000-0x00ff  a program's control words (dn2-bench: handshake,
 *                  barrier, exchange; written by the peer with BOTF)
 *   0x0100-0x010f  the AMT entry of the process's IPUSH ring
 *   0x1000-0x4fff  dn2msg: one "ready" byte per rank (job start)
 *   0x7000-0x7fff  the receive-status ring (up to 4 KiB)
 * The rest is free for the application. */
#define DN2_LLCM_MAP_CTL        0x0000u
#define DN2_LLCM_MAP_CTL_LEN    0x0100u
#define DN2_LLCM_MAP_AMT        0x0100u
#define DN2_LLCM_MAP_READY      0x1000u
#define DN2_LLCM_MAP_READY_LEN  0x4000u
#define DN2_LLCM_MAP_STATUS     0x7000u
#define DN2_LLCM_MAP_STATUS_LEN 0x1000u

/* -------------------------------------------- administration (root) */

/* Board bring-up through the System Register (dn2_open_mem only; with
 * the driver use its ioctls, see linux-guest/README.md). */
int dn2_admin_reset(dn2_t *d);
int dn2_admin_sdimm_init(dn2_t *d, unsigned capacity_code, long timeout_us);
int dn2_admin_mtu(dn2_t *d, unsigned mtu_code);
int dn2_admin_wait_link(dn2_t *d, uint16_t *lid, long timeout_us);
int dn2_admin_pgid(dn2_t *d, int wid, unsigned pgid);
/* Map sender {lid, wid} to AMT entry value (in this process's LLCM) for
 * the process whose LLCM holds entry value (choice #52), so two processes
 * of a board each have their own ring for the same sender.  Through the
 * driver on a process handle it needs no privilege (the entry must be in
 * that process's LLCM); on a control handle or /dev/mem it needs root. */
int dn2_admin_amt(dn2_t *d, uint16_t sender_lid, int sender_wid, unsigned value);

#ifdef __cplusplus
}
#endif
#endif
