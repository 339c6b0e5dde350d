/* SPDX-License-Identifier: MIT */
/*
 * dn2fab switch core internals, shared by its files (not installed).  Calls
 * go one way, top to bottom (tests/layering/layers.txt); the embedder is
 * reached only through struct dn2f_sw_ops:
 *
 *   dn2fab-sw.c      ports and joins (HELLO, tickets, KEEPALIVE), the
 *                    routing table and its publication, multicast groups,
 *                    statistics, dn2f_sw_input dispatch, timers, lifecycle
 *   dn2fab-sw-fwd.c  the data path: forwarding DATA between ports,
 *                    multicast replication, and the fault injection queue
 *   dn2fab-sw-out.c  port lookup, the datagrams the switch sends (raw,
 *                    control, KEEPALIVE / BYE), capture, token bucket
 *
 * Below them: the wire format, HMAC, addresses, PRNG (as the endpoint's).
 * Functions shared between these files are sw_*; the public API is
 * dn2fab-sw.h.
 */
#ifndef DN2FAB_SW_INT_H
#define DN2FAB_SW_INT_H

#include "dn2fab-int.h"
#include "dn2fab-hmac.h"
#include "dn2fab-sw.h"


#define NO_DEADLINE UINT64_MAX
#define HOUSEKEEP_NS 50000000ULL        /* 50 ms */
#define ROUTES_COALESCE_NS 2000000ULL   /* 2 ms */
#define ROUTES_GAP_NS 20000000ULL       /* at least 20 ms between publications ... */
#define ROUTES_GAP_PER_PORT_NS 20000ULL /* ... + 20 us per live port */
#define REORDER_HOLD_NS 1000000ULL      /* a held datagram waits at most 1 ms */
#define BYE_TOKENS_PER_S 100
#define LOG_TOKENS_PER_S 10             /* refusal / auth log lines */
#define STATS_TOKENS_PER_S 1000         /* STATS_RESP chunks */
#define TICKET_LIFE_S 10
#define OLD_EPOCHS 8                    /* a port's previous incarnations remembered */

enum port_state { PORT_ACTIVE = 1, PORT_GONE = 2 };

struct swport {
    uint16_t lid;
    enum port_state state;
    uint64_t guid, epoch;
    struct dn2f_addr addr;
    uint64_t last_seen;
    uint64_t rx_pkts, rx_bytes, tx_pkts, tx_bytes, drops, retx;
    uint8_t tok[DN2F_TOKEN_LEN];        /* secret: this join's token */
    uint32_t joins;                     /* joins completed: part of the next one's token */
    uint32_t tkt_time;                  /* ticket time of the join that set epoch */
    uint64_t old_epochs[OLD_EPOCHS];    /* epochs it had before (no way back to them) */
    unsigned old_next;
    struct {                            /* virtual time (dn2fab-sw-vt.c) */
        bool have;                      /* a report came */
        uint32_t rseq;                  /* the newest */
        uint64_t now, earliest;         /* what it said */
        uint64_t grant;                 /* the newest horizon sent (monotone) */
        uint64_t last_rx;               /* switch time of the last report (or the join) */
        uint64_t warned;                /* the last stall warning about it */
        uint32_t gen;                   /* the routes generation its last KEEPALIVE had */
    } vt;
};

struct swgroup {
    unsigned n;
    uint16_t lids[DN2F_MCAST_MAX_MEMBERS];
};

struct fq {                     /* fault queue entry (sorted by due) */
    struct fq *prev, *next;
    uint64_t due;
    bool held;                  /* reorder: released after the next send */
    unsigned flags;
    uint16_t in_lid, out_lid;
    struct dn2f_addr to;
    size_t len;
    uint8_t buf[];
};

struct chunk {
    uint16_t r0, nr, g0, ng;    /* route / group index ranges */
};

struct dn2f_sw {
    struct dn2f_sw_config cfg;
    struct dn2f_sw_ops ops;
    void *opaque;
    uint64_t epoch;
    uint64_t start;
    struct dn2f_rng rng;
    bool faults;

    struct swport *ports[DN2F_NUM_CLID];
    unsigned nactive;
    struct swgroup *groups[DN2F_NUM_GROUPS];

    uint32_t gen;
    bool dirty;
    uint64_t dirty_due;
    uint64_t last_publish;
    /* the routing table of generation gen, as sent */
    uint16_t *rt_lids;          /* active LIDs, ascending */
    unsigned rt_n;
    uint16_t *gr_lids;          /* non-empty groups, ascending */
    unsigned gr_n;
    struct chunk chunks[DN2F_ROUTES_MAX_CHUNKS];
    unsigned nchunks;

    uint64_t housekeep_due;
    double bye_tokens;
    uint64_t bye_last;
    double log_tokens;
    uint64_t log_last;
    unsigned log_suppressed;
    double stats_tokens;
    uint64_t stats_last;
    struct dn2f_hmac_key ticket_key;    /* random per switch incarnation */
    bool auth;                          /* a cluster secret is set */
    struct dn2f_hmac_key kctl;
    uint8_t kseal[DN2F_SHA256_LEN];

    struct fq *fq_head, *fq_tail;
    unsigned fq_n;
    size_t fq_bytes;

    uint8_t *obuf;
    struct dn2f_swsummary sum;

    /* virtual time (dn2fab-sw-vt.c) */
    struct dn2f_sw_vt_stats vt;
    struct swport **vt_ports;           /* scratch: the sync set */
    uint64_t *vt_e, *vt_g;              /* scratch: its earliest, its grants */
};

static inline uint64_t now(struct dn2f_sw *sw)
{
    return sw->ops.now_ns(sw->opaque);
}

/* dn2fab-sw-vt.c */
/* A VT_REPORT from live port p. */
void sw_vt_report(struct dn2f_sw *sw, struct swport *p, const struct dn2f_msg *m);
/* Recompute the grants (the sync set or the start condition changed);
 * reporter (or NULL) gets the current one whatever it is, waiting boards
 * whose grant rose get theirs. */
void sw_vt_update(struct dn2f_sw *sw, struct swport *reporter);
/* Port p joined (again): a fresh virtual-time state. */
void sw_vt_port_joined(struct dn2f_sw *sw, struct swport *p);
/* Port p left: out of the sync set (logged), the others' grants recomputed. */
void sw_vt_port_gone(struct dn2f_sw *sw, struct swport *p);
/* The stall warning (from the switch's housekeeping). */
void sw_vt_housekeep(struct dn2f_sw *sw, uint64_t t);

/* dn2fab-sw-fwd.c */
void sw_fq_unlink(struct dn2f_sw *sw, struct fq *e);

void sw_fq_release(struct dn2f_sw *sw, struct fq *e);

void sw_replicate(struct dn2f_sw *sw, struct swport *in, const struct dn2f_msg *m,
                  const void *buf, size_t len);

void sw_handle_data(struct dn2f_sw *sw, const struct dn2f_addr *from,
                    const struct dn2f_msg *m, const void *buf, size_t len);

/* dn2fab-sw-out.c */
/* Token bucket: true if one token was taken. */
bool sw_bucket_take(double *tokens, uint64_t *last, uint64_t t, double rate, double burst);

/* dn2fab-sw-out.c: a line of the switch's log (struct dn2f_sw_ops log). */
void sw_log(struct dn2f_sw *sw, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void sw_capture(struct dn2f_sw *sw, unsigned ev, unsigned flags, unsigned reason,
                uint16_t in, uint16_t out, const void *buf, size_t len);

struct swport *sw_port_by_lid(struct dn2f_sw *sw, uint16_t lid);

struct swport *sw_live_port(struct dn2f_sw *sw, uint16_t lid);

/* The live port that sent this datagram, or NULL. */
struct swport *sw_src_port(struct dn2f_sw *sw, const struct dn2f_addr *from,
                           const struct dn2f_msg *m);

void sw_raw_send(struct dn2f_sw *sw, const struct dn2f_addr *to, const void *buf, size_t len);

/* A control datagram of len bytes (nothing when 0), captured. */
void sw_send_ctrl_buf(struct dn2f_sw *sw, const struct dn2f_addr *to, uint16_t out_lid,
                      const void *buf, size_t len);

/* The length, and the MAC when a secret is set (control datagrams). */
size_t sw_finish(struct dn2f_sw *sw, struct dn2f_wbuf *w);

/* KEEPALIVE (a = routes generation) or BYE (a = reason). */
void sw_send_small(struct dn2f_sw *sw, const struct dn2f_addr *to, unsigned type,
                   uint16_t dst, uint64_t dst_epoch, uint32_t a);

/* Rate-limited BYE to a source that is not (or not yet) a port: "unknown"
 * (it will HELLO again) or a refusal of its join. */
void sw_send_bye_to(struct dn2f_sw *sw, const struct dn2f_addr *to, uint64_t dst_epoch,
                    unsigned reason);

void sw_send_bye_unknown(struct dn2f_sw *sw, const struct dn2f_addr *to, uint64_t dst_epoch);

#endif
