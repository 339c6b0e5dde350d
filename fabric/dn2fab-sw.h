/* SPDX-License-Identifier: MIT */
/*
 * dn2fab switch core: the subnet manager (LID assignment, routing table,
 * multicast groups, port liveness) and the forwarding plane (unicast by
 * destination LID, multicast replication, deterministic fault injection,
 * capture hook for pcap).  Plain C; the dn2-switch daemon wraps it in a
 * GLib main loop, the unit tests run it on a simulated network.
 */
#ifndef DN2FAB_SW_H
#define DN2FAB_SW_H

#include "dn2fab.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Capture events (the pcap record's "event" byte; docs/fabric.md). */
enum dn2f_cap_event {
    DN2F_CAP_FWD = 1,           /* data-plane datagram sent to a board */
    DN2F_CAP_DROP_INJ = 2,      /* dropped by fault injection */
    DN2F_CAP_CTRL_RX = 3,       /* control datagram received */
    DN2F_CAP_CTRL_TX = 4,       /* control datagram sent */
    DN2F_CAP_BAD = 5,           /* received, failed validation (raw bytes) */
    DN2F_CAP_DROP = 6,          /* received, valid, not forwarded (no route, forged...) */
};
#define DN2F_CAPF_DUP         0x01  /* the injected duplicate copy */
#define DN2F_CAPF_DELAYED     0x02  /* released from the delay queue */
#define DN2F_CAPF_REORDERED   0x04  /* held back behind a later datagram */

/* Reasons (the pcap record's "reason" field for DROP / BAD). */
enum dn2f_sw_reason {
    DN2F_SWR_NONE = 0,
    DN2F_SWR_DECODE = 1,        /* + dn2f_err in the high byte */
    DN2F_SWR_UNKNOWN_SRC = 2,   /* source address / LID / epoch not a live port */
    DN2F_SWR_NO_ROUTE = 3,      /* destination LID not a live port */
    DN2F_SWR_NOT_FOR_SWITCH = 4,
    DN2F_SWR_NO_LID = 5,        /* no LID left to assign */
    DN2F_SWR_BAD_MCAST = 6,
    DN2F_SWR_AUTH = 7,          /* MAC missing / wrong (cluster secret) */
};

struct dn2f_sw_config {
    int route_mode;             /* DN2F_ROUTE_DIRECT / DN2F_ROUTE_SWITCH */
    double drop, dup, reorder;  /* fractions 0..1 of data-plane datagrams */
    uint64_t delay_ns;          /* extra delay for delay_frac of them */
    double delay_frac;
    uint64_t seed;
    uint64_t port_timeout_ns;   /* a silent board is gone after this */
    uint64_t epoch;             /* switch incarnation; 0 = random */
    unsigned fault_queue_max;   /* datagrams held for delay/reorder */
    size_t fault_queue_bytes;
    /* Live ports per host address (IP, any port); 0 = no limit.  Default
     * 256: 64 boards on 127.0.0.1 with room to spare. */
    unsigned max_ports_per_host;
    /* Optional cluster secret (docs/security.md); copied by dn2f_sw_new. */
    const uint8_t *secret;
    size_t secret_len;
    /* Lock-step virtual time (docs/fabric.md "Virtual time"): answer the
     * boards' VT_REPORTs with VT_GRANTs. */
    bool vt;
    unsigned vt_boards;         /* grants stay 0 until this many boards are up (default 1) */
    uint32_t vt_lookahead_ns;   /* L (default 1000) */
    uint32_t vt_quantum_ns;     /* Q (0 or 1 = exact) */
    uint64_t vt_stall_ns;       /* warn about a board silent this long while others
                                 * wait (default 5 s; 0 = never) */
};
void dn2f_sw_config_default(struct dn2f_sw_config *c);

struct dn2f_sw_ops {
    uint64_t (*now_ns)(void *opaque);
    int (*send_datagram)(void *opaque, const struct dn2f_addr *to, const void *buf, size_t len);
    /* Optional: every datagram the switch forwards / drops / exchanges. */
    void (*capture)(void *opaque, unsigned event, unsigned flags, unsigned reason,
                    uint16_t in_lid, uint16_t out_lid, const void *buf, size_t len);
    /* Optional: one line of log (no newline). */
    void (*log)(void *opaque, const char *msg);
};

struct dn2f_sw;

struct dn2f_sw *dn2f_sw_new(const struct dn2f_sw_config *cfg,
                            const struct dn2f_sw_ops *ops, void *opaque);
void dn2f_sw_free(struct dn2f_sw *sw);
void dn2f_sw_input(struct dn2f_sw *sw, const struct dn2f_addr *from, const void *buf, size_t len);
uint64_t dn2f_sw_next_deadline(struct dn2f_sw *sw);
void dn2f_sw_tick(struct dn2f_sw *sw);
/* Static multicast membership (--mcast).  0 / -EINVAL / -ENOSPC. */
int dn2f_sw_mcast_add(struct dn2f_sw *sw, uint16_t group_lid, uint16_t member_lid);
/* BYE to every board (they re-HELLO a new switch at once). */
void dn2f_sw_shutdown(struct dn2f_sw *sw);

void dn2f_sw_summary(struct dn2f_sw *sw, struct dn2f_swsummary *s);
/* Port i (0-based, in LID order, live and remembered); false past the end. */
bool dn2f_sw_port(struct dn2f_sw *sw, unsigned i, struct dn2f_portstat *ps);
unsigned dn2f_sw_active_ports(const struct dn2f_sw *sw);
uint64_t dn2f_sw_epoch(const struct dn2f_sw *sw);


struct dn2f_sw_vt_stats {
    bool started;               /* --vt-boards boards were up: grants move */
    unsigned boards;            /* in the sync set (live ports) */
    unsigned waiting;           /* boards whose last report's now >= their grant */
    uint64_t reports;           /* new REPORTs taken */
    uint64_t dup_reports;       /* the same rseq again: answered with the current grant */
    uint64_t stale_reports;     /* an older rseq: ignored */
    uint64_t grants;            /* GRANTs sent */
    uint64_t slowest;           /* min over the sync set of earliest (0 = a board has
                                 * not reported) */
    uint16_t slowest_lid;
};
void dn2f_sw_vt_stats(const struct dn2f_sw *sw, struct dn2f_sw_vt_stats *s);
/* A port's virtual-time state: its last report (false: none) and grant. */
bool dn2f_sw_vt_port(struct dn2f_sw *sw, uint16_t lid, uint64_t *now, uint64_t *earliest,
                     uint64_t *grant);

#ifdef __cplusplus
}
#endif
#endif
