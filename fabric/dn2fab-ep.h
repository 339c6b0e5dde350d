/* SPDX-License-Identifier: MIT */
/*
 * dn2fab endpoint internals, shared by its files (not installed).  Calls
 * go one way, top to bottom (tests/layering/layers.txt, checked by the
 * 'layering' test); a lower file reports upward only through the ops the
 * embedder gave (struct dn2f_ep_ops):
 *
 *   dn2fab-ep.c        the API: lifecycle, configuration, accessors, and
 *                      dn2f_ep_input's dispatch (switch control -> link,
 *                      DATA / ACK -> rx)
 *   dn2fab-ep-timer.c  dn2f_ep_tick, dn2f_ep_next_deadline: HELLO,
 *                      keepalive, switch loss, retransmission / probe
 *                      timers, delayed ACKs, orphaned peers
 *   dn2fab-ep-vt.c     virtual time: reports held until everything sent
 *                      is acknowledged, re-sent until granted; grants
 *   dn2fab-ep-link.c   the switch: join, routing table, refusals, BYE,
 *                      multicast membership (link management)
 *   dn2fab-ep-rx.c     incoming DATA / ACK: checks, in-order delivery,
 *                      credits, ACK processing (responder + completer),
 *                      dn2f_ep_resume
 *   dn2fab-ep-tx.c     outgoing: control datagrams, ACKs, data batching,
 *                      multicast origins, flush, dn2f_ep_send (requester)
 *   dn2fab-ep-rto.c    a lane's RTO (backoff, floor) and its
 *                      retransmission / probe deadlines
 *   dn2fab-ep-peer.c   the peer store: peers by LID, create / clear /
 *                      reset / free, lane rings, keys, packet buffers
 *
 * Below them: the wire format (dn2fab-wire-dec.c, dn2fab-wire.c), the
 * HMAC (dn2fab-hmac.c), addresses (dn2fab-addr.c), the PRNG
 * (dn2fab-rng.c).  Functions shared between these files are ep_*;
 * everything else is static to its file.  The design is described at the
 * top of dn2fab-ep.c.
 */
#ifndef DN2FAB_EP_H
#define DN2FAB_EP_H

#include "dn2fab-int.h"
#include "dn2fab-hmac.h"

#define NO_DEADLINE UINT64_MAX
#define ROUTES_GEN_NONE 0xffffffffu
#define MAX_JOINS 16
#define PEER_OLD_EPOCHS 4           /* a peer's earlier epochs remembered */
#define MC_MAX_REFS 4096
#define MAX_RECS_PER_DGRAM 4096
/* The RTO floor a spurious timeout sets: the delay the late ACK took, plus
 * a quarter, plus rto_min; it decays by an eighth per FLOOR_DECAY_NS
 * without another spurious timeout (back to nothing in ~40 s). */
#define FLOOR_DECAY_NS 1000000000ULL

enum peer_state { PEER_ACTIVE, PEER_ORPHAN };

struct pbuf {
    uint32_t refs;
    uint16_t len;
    uint8_t vt;                 /* the record carries vtime / vseq (DN2F_RF_VT) */
    uint32_t vseq;
    uint64_t vtime;
    uint8_t data[];
};

struct txslot {
    struct pbuf *pb;            /* NULL: free */
    uint64_t last_tx;
    uint32_t after;             /* request lanes: the data lane's end when queued */
    uint16_t ntx;
    uint16_t group;             /* multicast group LID, 0 = unicast */
    uint8_t sent;
    uint8_t sacked;
    uint8_t mc_pending;         /* owned by the multicast builder (not sent yet) */
    uint8_t via_sw;             /* last sent as a multicast copy through the switch
                                 * while this peer's unicast goes direct: a second
                                 * path, with its own RACK clock */
};

struct rxslot {
    uint8_t *data;
    uint32_t after;             /* request lanes: deliver once the data lane's base reaches it */
    uint16_t len;
    uint8_t present;
    uint8_t held;               /* counted in req_held */
    uint8_t vt;                 /* arrived with DN2F_RF_VT: */
    uint32_t vseq;
    uint64_t vtime;
};

/* One reliable, in-order stream in each direction between two boards. */
struct lane {
    /* send side */
    struct txslot *tx;
    uint32_t una, nxt, end, limit;
    size_t tx_bytes, inflight;
    uint64_t srtt, rttvar, rto;
    unsigned backoff, probe_backoff;
    uint64_t rto_due, probe_due;
    bool force_retx;
    uint64_t cwnd, ssthresh;
    bool recovery;
    uint32_t recover;
    uint64_t rack_ts;           /* newest send time of a packet known received */
    uint64_t rack_ts_sw;        /* the same for packets sent on the switch path
                                 * (txslot.via_sw): the two paths reorder freely */
    uint64_t srtt_sw, rttvar_sw, rto_sw;    /* that path's round trip (0: no sample) */
    /* spurious-timeout detection: a timeout resent rto_seq; its ACK's echo
     * says which transmission arrived */
    bool rto_check;
    uint32_t rto_seq;
    uint32_t rto_ts;            /* timestamp of the (first) timeout's retransmission */
    uint64_t rto_prev_tx;       /* rto_seq's send time before it */
    uint64_t undo_cwnd, undo_ssthresh;  /* the window before the timeout */
    uint64_t rto_restart;       /* the last timeout: others wait a full RTO from it */
    uint64_t rto_floor, floor_t;        /* RTO floor (spurious timeouts), since when */

    /* receive side */
    struct rxslot *rx;
    uint32_t base, cum;
    unsigned rx_ooo;            /* buffered beyond cum */
    bool rx_blocked;            /* deliver() said -EBUSY: wait for resume */
    size_t rx_bytes;
    uint32_t echo;              /* newest timestamp of a datagram that brought news */
};

struct peer {
    struct peer *prev, *next;
    uint16_t lid;
    uint64_t epoch;
    uint64_t old_epochs[PEER_OLD_EPOCHS];       /* its earlier epochs: never back to one */
    unsigned old_next;
    uint64_t gen;               /* unique per (creation, reset) */
    struct dn2f_addr addr;
    bool direct;
    enum peer_state st;
    uint64_t orphan_since;
    unsigned mark;
    uint32_t peer_sess;         /* the peer's session toward us (0: not known yet) */
    uint8_t tok[DN2F_TOKEN_LEN];        /* secret: the peer's per-join token */
    struct dn2f_hmac_key ktx, krx;      /* secret: DATA/ACK keys to / from it */
    bool ack_pending;           /* an ACK (all lanes) is due */
    uint64_t ack_due;
    struct lane ln[DN2F_NUM_LANES];
};

struct group {
    uint16_t n;
    uint16_t lids[DN2F_MCAST_MAX_MEMBERS];
};

struct mcref {
    uint16_t lid;
    uint8_t lane;
    uint32_t seq;
    uint64_t gen;
    struct pbuf *pb;
};

struct pend_route {
    uint16_t lid;
    uint8_t flags;
    struct dn2f_addr addr;
    uint64_t epoch;
    uint8_t token[DN2F_TOKEN_LEN];
};

struct dn2f_ep {
    struct dn2f_ep_config cfg;
    struct dn2f_ep_ops ops;
    void *opaque;
    struct dn2f_ep_stats st;

    uint64_t epoch;
    uint16_t lid;
    uint16_t lid_hint;
    bool left;                  /* dn2f_ep_leave(): BYE said, nothing more sent */
    enum dn2f_link link;
    int mode;
    uint64_t sw_epoch;
    uint64_t last_sw_rx;
    uint64_t hello_due, ka_due;
    uint64_t blocked_until;
    struct dn2f_ticket ticket;  /* from the ASSIGN: returned in KEEPALIVE until UP */
    bool auth;                  /* a cluster secret is set */
    struct dn2f_hmac_key kctl;  /* control datagrams */
    uint8_t kseal[DN2F_SHA256_LEN];
    uint8_t my_tok[DN2F_TOKEN_LEN];     /* from the ASSIGN */
    struct dn2f_hmac_key kmc;   /* multicast origin datagrams (my token || 0) */
    unsigned refusal;           /* enum dn2f_bye_reason of the last refusal, 0 = none */

    struct peer *peers[DN2F_NUM_CLID];
    struct peer *plist;
    unsigned npeers;
    uint64_t gen_counter;
    unsigned mark_counter;
    size_t tx_total, rx_total;

    /* routing table */
    uint32_t routes_gen;
    bool routes_ok;
    struct group *groups[DN2F_NUM_GROUPS];
    /* assembly of a chunked ROUTES */
    uint32_t asm_gen;
    uint16_t asm_nchunks;
    bool asm_active;
    uint8_t asm_have[DN2F_ROUTES_MAX_CHUNKS / 8];
    unsigned asm_got;
    struct pend_route *asm_routes;
    unsigned asm_nroutes;
    struct { uint16_t group; uint16_t n; uint16_t lids[DN2F_MCAST_MAX_MEMBERS]; } *asm_groups;
    unsigned asm_ngroups;

    /* multicast groups this board wants to be in */
    uint16_t joins[MAX_JOINS];
    unsigned njoins;

    /* datagram builders */
    uint8_t *dgbuf;             /* unicast / ack / control */
    uint32_t *txb_seqs;
    uint8_t *txb_lanes;
    uint8_t *mcbuf;             /* multicast origin builder */
    struct dn2f_wbuf mcw;
    uint16_t mc_group;
    unsigned mc_nrecs;
    struct mcref *mcrefs;
    unsigned mc_nrefs;

    bool in_deliver;

    /* virtual time (dn2fab-ep-vt.c) */
    struct {
        bool have;              /* a report was recorded */
        bool sent;              /* ... and has gone out (all our packets were acked) */
        bool answered;          /* a grant with rseq >= ours came */
        bool urgent;            /* a lowering report that may go before our ACKs */
        uint32_t rseq;
        uint64_t now, earliest;
        uint64_t retry_due;     /* sent: the next re-send */
        uint64_t probe_due;     /* held: the next ACKREQ probe */
        /* the newest report that went out (the switch has it or an older one) */
        bool s_have, s_answered;
        uint32_t s_rseq;
        uint64_t s_now, s_earliest;
        uint64_t sw_emax;       /* the highest earliest the switch may hold for us */
        /* ACK hold (a lowering report): no ACK leaves until a grant echoes
         * hold_rseq or newer */
        bool hold;
        uint32_t hold_rseq;
        uint64_t hold_since;
        uint64_t horizon;
        uint32_t lookahead_ns, quantum_ns;
        uint64_t slowest;
    } vt;
    bool mc_vt;                 /* the multicast builder's records carry VT */
};

static inline uint64_t now(struct dn2f_ep *ep)
{
    return ep->ops.now_ns(ep->opaque);
}

/* A lowering report holds every ACK until the switch has it
 * (dn2fab-ep-vt.c): no ACK datagram, no ACK blocks on DATA. */
static inline bool ep_acks_held(const struct dn2f_ep *ep)
{
    return ep->vt.hold;
}

static inline struct txslot *txs(struct dn2f_ep *ep, struct lane *L, uint32_t seq)
{
    return &L->tx[seq & (ep->cfg.tx_window - 1)];
}

static inline struct rxslot *rxs(struct dn2f_ep *ep, struct lane *L, uint32_t seq)
{
    return &L->rx[seq & (ep->cfg.rx_window - 1)];
}

static inline uint32_t my_sess(const struct peer *p)
{
    return (uint32_t)p->gen;
}

/* dn2fab-ep-vt.c */
/* A VT_GRANT from the switch (decoded, MAC checked). */
void ep_vt_input(struct dn2f_ep *ep, const struct dn2f_msg *m);
/* Send the recorded report if it is due and may go, re-send it, or probe
 * for the ACKs it waits for. */
void ep_vt_pump(struct dn2f_ep *ep);
uint64_t ep_vt_deadline(struct dn2f_ep *ep);

/* dn2fab-ep-link.c */
void ep_note_refusal(struct dn2f_ep *ep, unsigned reason);

void ep_link_set_down(struct dn2f_ep *ep);

void ep_reset_all_peers(struct dn2f_ep *ep, unsigned reason);

void ep_joins_sync(struct dn2f_ep *ep);

void ep_input_from_switch(struct dn2f_ep *ep, const struct dn2f_msg *m);

/* dn2fab-ep-rx.c */
/* A DATA or ACK datagram from dn2f_ep_input (decoded, control MAC checked). */
void ep_rx_input(struct dn2f_ep *ep, const struct dn2f_addr *from, const void *buf,
                 const struct dn2f_msg *m, bool from_sw);

/* Deliver buffered in-order packets [base, cum) of one lane; when a data
 * lane moved on, the requests that waited for it. */
void ep_rx_drain(struct dn2f_ep *ep, struct peer *p, unsigned lane);

/* The ACK of a timeout's retransmission echoes an older timestamp: the
 * packet had arrived, only its ACK was late.  Undo the window cut and the
 * backoff, and raise the peer's RTO floor above the delay that ACK took, so
 * the next equally late ACK does not fire the timer (every lane: they share
 * the peer's ACK datagrams and its CPU). */
void ep_spurious_timeout(struct dn2f_ep *ep, struct peer *p, struct lane *L, uint64_t t);

/* dn2fab-ep-tx.c */
void ep_send_ctrl(struct dn2f_ep *ep, unsigned type, uint32_t a, uint32_t b);

void ep_send_ack(struct dn2f_ep *ep, struct peer *p, bool ackreq);

bool ep_lane_retransmit(struct dn2f_ep *ep, struct peer *p, unsigned lane,
                        const uint32_t *seqs, unsigned n);

void ep_mc_discard(struct dn2f_ep *ep);

void ep_flush_internal(struct dn2f_ep *ep);

/* dn2f_ep_send with an optional virtual time (vt: the record gets DN2F_RF_VT). */
int ep_send_pkt(struct dn2f_ep *ep, uint16_t dlid, const void *pkt, size_t len, bool vt,
                uint64_t vtime, uint32_t vseq);

unsigned ep_group_members(struct dn2f_ep *ep, uint16_t glid, struct peer **out);

/* dn2fab-ep-rto.c */
/* A lane's retransmission timeout now: its RTO or floor, backed off. */
uint64_t ep_cur_rto(struct dn2f_ep *ep, struct lane *L);
/* The RTO of a packet: on the switch path (txslot.via_sw) at least that
 * path's own estimate. */
uint64_t ep_slot_rto(struct dn2f_ep *ep, struct lane *L, const struct txslot *ts, uint64_t r);

/* Let a lane's RTO floor (spurious timeouts) decay with time. */
void ep_floor_decay(struct dn2f_ep *ep, struct lane *L);

/* Earliest retransmission deadline of a lane (scan of the outstanding slots). */
void ep_lane_rearm(struct dn2f_ep *ep, struct lane *L);

void ep_peer_rearm(struct dn2f_ep *ep, struct peer *p);

/* dn2fab-ep-peer.c */
void ep_pb_unref(struct pbuf *pb);

void ep_peer_keys(struct dn2f_ep *ep, struct peer *p);

/* Forget everything exchanged with p (both directions, all lanes). */
void ep_peer_clear(struct dn2f_ep *ep, struct peer *p, unsigned reason);

/* Our own decision to start over with p (it restarted, it left, we are
 * someone else now): a new session, so that p resets its side too when it
 * sees it, and p's session is unknown until it tells us. */
void ep_peer_reset(struct dn2f_ep *ep, struct peer *p, unsigned reason);

struct peer *ep_peer_new(struct dn2f_ep *ep, uint16_t lid, uint64_t epoch);

void ep_peer_free(struct dn2f_ep *ep, struct peer *p, unsigned reason);

bool ep_lane_tx_alloc(struct dn2f_ep *ep, struct lane *L);

bool ep_lane_rx_alloc(struct dn2f_ep *ep, struct lane *L);

struct peer *ep_peer_get(struct dn2f_ep *ep, uint16_t lid);

#endif
