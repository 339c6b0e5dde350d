/* SPDX-License-Identifier: MIT */
/*
 * libdimmnet2-fi: an external libfabric provider ("dimmnet2") for the
 * DIMMnet-2 board, driven only through libdimmnet2 and the kernel driver.
 * Design and limits: docs/ofi-provider.md.
 *
 * The provider's files, top to bottom: each calls only files below it
 * (tests/layering/layers.txt, [linux-guest/ofi]); a lower file reaches a
 * higher one only through an operation table the higher one fills.
 *
 *   dn2fi_init.c   fi_prov_ini, fi_getinfo, fabric, domain, EQ, MR: the
 *                  libfabric entry points; fills dn2fi_prov's entries
 *   dn2fi_ep.c     the endpoint object of both types (open, bind, enable,
 *                  control, cancel, close); gives the CQ and the AV its
 *                  struct dn2fi_ep_up
 *   dn2fi_rdm.c    the native RDM endpoint's data operations (FI_TAGGED +
 *                  FI_MSG, credits, the bulk paths): struct dn2fi_rdm_ops
 *   dn2fi_dgram.c  the DGRAM endpoint's data operations (FI_MSG)
 *   dn2fi_xmit.c   the datagram engine both share: LHSv2 with VS staging,
 *                  BOTF images, the Write Windows, reading a datagram
 *   dn2fi_av.c     the address vector
 *   dn2fi_cq.c     the completion queue
 *   dn2fi_util.c   the provider object, -FI_ENOSYS stubs, error codes,
 *                  the clock
 */
#ifndef DN2FI_H
#define DN2FI_H

#include <pthread.h>
#include <stdint.h>
#include <sys/uio.h>

#include <rdma/fabric.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_collective.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>
#include <rdma/providers/fi_log.h>
#include <rdma/providers/fi_prov.h>

#include "libdimmnet2.h"

/* libfabric 1.x (Debian 12: 1.17) and 2.x (Debian 13: 2.1) both build
 * this provider (scripts/build-initramfs.sh --guest-release).  2.x's
 * fabric.h no longer defines container_of, and deprecates completion
 * order and the basic/scalable memory registration modes: their old
 * values, without the deprecation warnings, and no completion order. */
#ifndef container_of
#include <stddef.h>
#define container_of(ptr, type, field) ((type *)((char *)(ptr) - offsetof(type, field)))
#endif
#if FI_MAJOR_VERSION >= 2
#define DN2FI_COMP_ORDER    0
#define DN2FI_MR_BASIC      (1 << 0)
#define DN2FI_MR_SCALABLE   (1 << 1)
#else
#define DN2FI_COMP_ORDER    FI_ORDER_STRICT
#define DN2FI_MR_BASIC      FI_MR_BASIC
#define DN2FI_MR_SCALABLE   FI_MR_SCALABLE
#endif

#define DN2FI_NAME          "dimmnet2"
#define DN2FI_FABRIC_NAME   "dimmnet2"
#define DN2FI_VERSION       FI_VERSION(1, 0)
#define DN2FI_MAX_BOARDS    2

/* The endpoint address (fi_getname, fi_av_insert): 4 bytes. */
struct dn2fi_addr {
    uint16_t lid;           /* the board's LID (little endian) */
    uint8_t wid;            /* 0 or 1: the process on that board */
    uint8_t zero;           /* 0 (reserved) */
};
#define DN2FI_ADDRLEN       sizeof(struct dn2fi_addr)

/* Data path sizes. */
#define DN2FI_WW_PREFIX_MAX 1023u   /* LHSv2 Write Window prefix, DSTOff[9:0] */
#define DN2FI_ENV           8u      /* the LHS envelope word */
#define DN2FI_INJECT        (DN2FI_WW_PREFIX_MAX - DN2FI_ENV)  /* 1015: no staging */
#define DN2FI_STAGE_SLOT    (16u << 10)
#define DN2FI_MAX_MSG       (DN2FI_INJECT + DN2FI_STAGE_SLOT)
#define DN2FI_QUEUE         256     /* tx/rx queue depth advertised */
#define DN2FI_CQ_DEFAULT    1024
/* Waiting on an empty CQ (docs/ofi-provider.md, "Waiting for
 * completions"): spin this long, then sleep this long per read
 * (FI_DIMMNET2_SPIN_US, FI_DIMMNET2_IDLE_US; IDLE 0 = spin for ever). */
#define DN2FI_SPIN_US       500
#define DN2FI_IDLE_US       20
#define DN2FI_IOV_LIMIT     4

/* Per-process board resources (docs/ofi-provider.md). */
#define DN2FI_LLCM_AMT      DN2_LLCM_MAP_AMT   /* the library's LLCM map */
#define DN2FI_SD_RING       0u
#define DN2FI_RING_BYTES    (4u << 20)
#define DN2FI_SD_STAGE      DN2FI_RING_BYTES    /* two slots, one per WW half */

/* Envelope Context: 0x0F1 = an OFI datagram; bit 12 = CQ data present. */
#define DN2FI_CTX_MSG       0x0f1u
#define DN2FI_CTX_DATA      0x1000u
/* The native RDM endpoint (dn2fi_rdm.c): 0x0F2 = the first datagram of a
 * message (a struct dn2fi_rdm_hdr follows the envelope), 0x0F3 = the next
 * datagram of the same message from the same sender (data only).  Their
 * envelope Tag is the datagram's sequence number (per destination, from
 * a random start); the first's Context carries DN2FI_RDM_F_* flags in
 * bits 12-13 (the low 12 bits are the context proper). */
#define DN2FI_CTX_RDM_FIRST 0x0f2u
#define DN2FI_CTX_RDM_NEXT  0x0f3u
/* Credit return (dn2fi_rdm.c): Tag = the sequence number after the last
 * datagram taken from the destination (cumulative), no data. */
#define DN2FI_CTX_RDM_CREDIT 0x0f4u
/* A new process on its {LID, WID} (dn2fi_rdm.c): sent at enable to every
 * endpoint of the rank table; the receiver forgets what it had in flight
 * to that {LID, WID} and ends a message its predecessor left unfinished.
 * Tag 0, no data. */
#define DN2FI_CTX_RDM_HELLO 0x0f5u
/* The same two over the LLCM bulk path (FI_DIMMNET2_BULK=llcm): the
 * datagram's bytes were sent before it as BOTF images into the
 * receiver's LLCM; after the envelope (and the first's header) comes a
 * struct dn2fi_llcm_desc saying where.  Context flags as 0x0F2's. */
#define DN2FI_CTX_RDM_LFIRST 0x0f6u
#define DN2FI_CTX_RDM_LNEXT  0x0f7u
#define DN2FI_CTX_MASK      0xfffu
#define DN2FI_RDM_F_SHIFT   12
#define DN2FI_RDM_F_TAGGED  1u      /* fi_tsend*, else fi_send* */
#define DN2FI_RDM_F_DATA    2u      /* the header's data is CQ data */

struct dn2fi_rdm_hdr {
    uint64_t tag;
    uint32_t len;           /* the whole message */
    uint32_t data;          /* FI_REMOTE_CQ_DATA */
};
#define DN2FI_RDM_HDR       sizeof(struct dn2fi_rdm_hdr)           /* 16 */
#define DN2FI_RDM_INJECT    (DN2FI_INJECT - DN2FI_RDM_HDR)          /* 999 */
#define DN2FI_RDM_MAX_MSG   (1u << 30)
/* Where a datagram's bytes are in the receiver's LLCM: one or two
 * pieces (the second when the sender's share wraps). */
struct dn2fi_llcm_desc {
    uint32_t off[2];        /* LLCM offsets */
    uint32_t len[2];
};
#define DN2FI_LLCM_DESC     sizeof(struct dn2fi_llcm_desc)          /* 16 */
/* The bulk paths of the RDM endpoint (FI_DIMMNET2_BULK): sodimm = LHSv2
 * with the rest staged in our SO-DIMM and copied out of the receiver's
 * ring with VL; llcm = BOTF images straight into the receiver's LLCM;
 * mixed = llcm, and while the LLCM share's credits are out, sodimm. */
#define DN2FI_BULK_SODIMM   0
#define DN2FI_BULK_LLCM     1
#define DN2FI_BULK_MIXED    2
/* The LLCM the provider gives its senders: the library map's free part
 * between the AMT entry page and the status ring (docs/ofi-provider.md,
 * "Board resources per process"). */
#define DN2FI_LLCM_BULK     DN2_LLCM_MAP_READY                      /* 0x1000 */
#define DN2FI_LLCM_BULK_END DN2_LLCM_MAP_STATUS                     /* 0x7000 */
/* Data bytes per BOTF image: the 512-byte window less the 2-line header. */
#define DN2FI_BOTF_DATA     (DN2_BOTF_MAX - 2 * DN2_LINE)           /* 496 */

/* The RDM endpoint's staging slots when the WID's SO-DIMM area has room
 * (else DN2FI_STAGE_SLOT): fewer, larger datagrams for long messages. */
#define DN2FI_RDM_SLOT      (64u << 10)
#define DN2FI_DGRAM_BIG     (DN2FI_INJECT + DN2FI_RDM_SLOT)  /* the largest datagram */
#define DN2FI_RDM_CAPS      (FI_MSG | FI_TAGGED | FI_SEND | FI_RECV | FI_LOCAL_COMM | \
                             FI_REMOTE_COMM | FI_DIRECTED_RECV | FI_SOURCE)

extern struct fi_provider dn2fi_prov;    /* dn2fi_util.c */

struct dn2fi_fabric {
    struct fid_fabric fabric;
};

struct dn2fi_domain {
    struct fid_domain domain;
    struct dn2fi_fabric *fab;
    int board;
    int refs;
    pthread_mutex_t lock;
};

struct dn2fi_cq_entry {
    struct fi_cq_tagged_entry e;
    fi_addr_t src;
};

struct dn2fi_ep;

/* How the CQ and the AV (below the endpoint) reach it: a table the
 * endpoint file fills (dn2fi_ep.c), pointed to by every endpoint. */
struct dn2fi_ep_up {
    /* move what arrived and what waits to be sent (a CQ read) */
    void (*progress)(struct dn2fi_ep *ep);
    /* may the AV take address {lid, wid}: 0, or -FI_ENOSPC (the RDM
     * endpoint's flow-control table is full) */
    int (*av_check)(struct dn2fi_ep *ep, uint16_t lid, int wid);
    /* the AV took an address of this LID (the AMT entries) */
    int (*av_added)(struct dn2fi_ep *ep, uint16_t lid);
};

struct dn2fi_cq {
    struct fid_cq cq;
    struct dn2fi_domain *dom;
    enum fi_cq_format format;
    size_t entry_size;
    struct dn2fi_cq_entry *ring;
    size_t size, head, count;
    struct fi_cq_err_entry *errs;
    size_t err_size, err_head, err_count;
    struct dn2fi_ep *eps[4];
    int neps;
    int refs;
    long idle_us;           /* FI_DIMMNET2_IDLE_US: sleep when a read finds nothing */
    long spin_us;           /* FI_DIMMNET2_SPIN_US: ... after reads found nothing this long */
    long pause;             /* FI_DIMMNET2_PAUSE: an empty read while spinning runs PAUSE */
    uint64_t empty_since;   /* when reads began to find nothing (0: the last found some) */
    uint64_t idle_sleeps;   /* how often a read slept (FI_DIMMNET2_STATS) */
};

struct dn2fi_av_entry {
    struct dn2fi_addr a;
    int valid;
};

struct dn2fi_av {
    struct fid_av av;
    struct dn2fi_domain *dom;
    enum fi_av_type type;
    struct dn2fi_av_entry *tab;
    size_t count, cap;
    struct dn2fi_ep *ep;    /* bound endpoint (AMT entries for new peers) */
    int refs;
};

struct dn2fi_rx {
    struct iovec iov[DN2FI_IOV_LIMIT];
    size_t iov_count;
    void *context;
    uint64_t flags;
};

struct dn2fi_eq {
    struct fid_eq eq;
};

struct dn2fi_rdm;           /* dn2fi_rdm.c */

struct dn2fi_ep {
    struct fid_ep ep;
    enum fi_ep_type type;   /* FI_EP_DGRAM or FI_EP_RDM */
    struct dn2fi_rdm *rdm;  /* the RDM endpoint's state */
    const struct dn2fi_ep_up *up;
    uint64_t caps;
    struct dn2fi_domain *dom;
    struct dn2fi_av *av;
    struct dn2fi_cq *txcq, *rxcq;
    uint64_t tx_op_flags, rx_op_flags;
    int tx_selective, rx_selective;
    int enabled;
    char path[32];
    dn2_t *d;
    uint16_t lid;
    int wid;
    unsigned amt_value;
    struct dn2_ring ring;
    uint8_t amt_done[2][65536 / 8];     /* AMT entries set, by sender WID/LID */
    /* posted receives */
    struct dn2fi_rx *rxq;
    size_t rx_size, rx_head, rx_count;
    /* transmit: the Write Window in two halves of 1 KiB, each with its
     * SO-DIMM staging slot; a half is free once the IPUSH counter shows
     * its LHSv2 left the board */
    int tx_next;
    uint32_t slot;          /* staging slot bytes: datagrams up to 1015 + slot */
    /* each Write Window's last request (family 0: LHSv2, counted by the
     * IPUSH Primitive Counter; 1: BOTF, by the BOTF counter): the window
     * is free once the counter has passed it */
    uint8_t win_busy[DN2_NUM_WW], win_fam[DN2_NUM_WW];
    unsigned win_seq[DN2_NUM_WW];
    unsigned pc_issued[2], pc_base[2];
    int bw_next;            /* the BOTF round robin's next window */
    int bulk;               /* DN2FI_BULK_*: how the RDM endpoint sends long data */
    uint8_t *scratch;       /* a datagram for a receive of several iovs */
    uint8_t *gather;        /* envelope + a datagram being sent */
    /* statistics */
    uint64_t tx_msgs, rx_msgs, rx_bytes;
    /* where the time goes (FI_DIMMNET2_STATS=1 prints it at close):
     * nanoseconds in each step of the data path, and how often a send
     * found the board busy */
    int stats;
    uint64_t ns_stage, ns_ww, ns_issue, ns_read, ns_lhb, ns_open;
    uint64_t ns_issue_max, issue_slow;  /* the slowest LHSv2 issue; issues over 1 ms */
    uint64_t tx_bytes, rx_dgrams, busy_half, busy_fifo, busy_credit, progress_calls;
    uint64_t ns_botf, ns_llcm, botf_images, llcm_bytes;
};

int dn2fi_fabric_open(struct fi_fabric_attr *attr, struct fid_fabric **fabric,
                      void *context);
int dn2fi_domain_open(struct fid_fabric *fabric, struct fi_info *info,
                      struct fid_domain **dom, void *context);
int dn2fi_cq_open(struct fid_domain *domain, struct fi_cq_attr *attr,
                  struct fid_cq **cq, void *context);
int dn2fi_av_open(struct fid_domain *domain, struct fi_av_attr *attr,
                  struct fid_av **av, void *context);
int dn2fi_endpoint(struct fid_domain *domain, struct fi_info *info,
                   struct fid_ep **ep, void *context);
int dn2fi_eq_open(struct fid_fabric *fabric, struct fi_eq_attr *attr,
                  struct fid_eq **eq, void *context);

/* The CQ (dn2fi_cq.c): what the endpoints write into it, binding. */
int dn2fi_cq_full(struct dn2fi_cq *cq);
int dn2fi_cq_write(struct dn2fi_cq *cq, void *context, uint64_t flags,
                   size_t len, void *buf, uint64_t data, fi_addr_t src);
int dn2fi_cq_write_tag(struct dn2fi_cq *cq, void *context, uint64_t flags,
                       size_t len, void *buf, uint64_t data, uint64_t tag,
                       fi_addr_t src);
int dn2fi_cq_write_err(struct dn2fi_cq *cq, void *context, uint64_t flags,
                       size_t len, void *buf, uint64_t data, int err,
                       size_t olen);
int dn2fi_cq_write_err_tag(struct dn2fi_cq *cq, void *context, uint64_t flags,
                           size_t len, void *buf, uint64_t data, uint64_t tag,
                           int err, size_t olen);
/* An endpoint bound to the CQ (its progress runs on every read): 0 or
 * -FI_ENOSPC; detach at close. */
int dn2fi_cq_attach(struct dn2fi_cq *cq, struct dn2fi_ep *ep);
void dn2fi_cq_detach(struct dn2fi_cq *cq, struct dn2fi_ep *ep);

/* The AV (dn2fi_av.c). */
const struct dn2fi_addr *dn2fi_av_get(struct dn2fi_av *av, fi_addr_t a);
fi_addr_t dn2fi_av_find(struct dn2fi_av *av, uint16_t lid, int wid);

/* The datagram engine shared by both endpoint types (dn2fi_xmit.c): send
 * one datagram (envelope + the iov's bytes, at most DN2FI_MAX_MSG after
 * the envelope) to (lid, wid); -FI_EAGAIN while the board is busy. */
int dn2fi_xmit(struct dn2fi_ep *ep, uint16_t lid, int wid, uint64_t env,
               const struct iovec *iov, size_t count, size_t len);
/* One BOTF image: bytes [off, off + n) of the iovs (n <= 496) to LLCM
 * offset dst of process (lid, wid); -FI_EAGAIN while its Write Window or
 * the Request FIFO is busy (nothing issued). */
int dn2fi_botf_llcm(struct dn2fi_ep *ep, uint16_t lid, int wid, uint32_t dst,
                    const struct iovec *iov, size_t count, size_t off, size_t n);
/* A send's iov and length against the endpoint's limits: 0, -FI_EINVAL
 * or -FI_EMSGSIZE; the length in *len. */
int dn2fi_send_check(const struct iovec *iov, size_t count, uint64_t flags, size_t max,
                     size_t inject_max, size_t *len);
/* Copy n bytes at offset 'at' of an arrived datagram (after the
 * envelope: the LH Buffer's 48 bytes, then the receive ring). */
int dn2fi_dgram_read(struct dn2fi_ep *ep, const void *m, size_t at, void *dst,
                     size_t n);
/* Copy len bytes of our receive ring at SO-DIMM 'at' (wrapping). */
int dn2fi_ring_read(struct dn2fi_ep *ep, uint32_t at, uint8_t *buf, size_t len);

/* The DGRAM endpoint (dn2fi_dgram.c): its progress, the cancel of a
 * posted receive (domain lock held), its message table. */
void dn2fi_dgram_progress(struct dn2fi_ep *ep);
ssize_t dn2fi_dgram_cancel(struct dn2fi_ep *ep, void *context);
extern const struct fi_ops_msg dn2fi_dgram_msg_ops;

/* The native RDM endpoint (dn2fi_rdm.c): its operation tables and the
 * calls the endpoint object (dn2fi_ep.c, above it) makes for an
 * FI_EP_RDM endpoint. */
struct dn2fi_rdm_ops {
    struct fi_ops_msg *msg;
    struct fi_ops_tagged *tagged;
    int (*open)(struct dn2fi_ep *ep);
    void (*close)(struct dn2fi_ep *ep);
    /* A destination slot of the flow-control table for an AV address: 0,
     * or -FI_ENOSPC when the table (sized from the rank table) is full. */
    int (*add_dest)(struct dn2fi_ep *ep, uint16_t lid, int wid);
    void (*progress)(struct dn2fi_ep *ep);
    ssize_t (*cancel)(struct dn2fi_ep *ep, void *context);
    ssize_t (*tx_left)(struct dn2fi_ep *ep);
    ssize_t (*rx_left)(struct dn2fi_ep *ep);
};
extern const struct dn2fi_rdm_ops dn2fi_rdm_ops;

/* dn2fi_util.c.  Every operation table is a const struct with every slot
 * named; a slot the provider does not implement gets the stub, which
 * ignores its arguments and returns -FI_ENOSYS as ssize_t (an int
 * returning slot reads the low half, also -FI_ENOSYS): sound on the
 * x86-64 SysV ABI the guest uses.  The cast goes through void (*)(void),
 * which -Wcast-function-type lets through. */
ssize_t dn2fi_enosys(void);
#define DN2FI_NOSYS(ops, slot) \
    ((__typeof__(((struct ops *)0)->slot))(void (*)(void))dn2fi_enosys)
int dn2fi_errno(int r);     /* libdimmnet2 / errno code -> -FI_* */
uint64_t dn2fi_ns(void);

#define DN2FI_WARN(subsys, ...) FI_WARN(&dn2fi_prov, subsys, __VA_ARGS__)
#define DN2FI_INFO(subsys, ...) FI_INFO(&dn2fi_prov, subsys, __VA_ARGS__)

#endif
