/* SPDX-License-Identifier: MIT */
/*
 * dn2fab endpoint: the board side of the fabric.
 *
 *   link:      DOWN --HELLO/ASSIGN--> ASSIGNED --ROUTES complete--> UP
 *              UP --keepalive timeout / BYE / new switch epoch--> DOWN
 *   per peer:  ACTIVE (in the routing table) <-> ORPHAN (missing from it,
 *              kept peer_grace_ns so that a switch restart loses nothing)
 *
 * Reliability is end to end between boards: per peer, direction and lane (a
 * lane = DWID + 2 * request: lanes 0/1 carry data for WID 0/1, lanes 2/3
 * RVL-family requests for WID 0/1, so one process's back-pressure does not
 * stop the other's traffic, and a full RC FIFO does not stop the answers;
 * a request waits for the data queued before it, read after write) a 32-bit
 * sequence space starting at 0 for each pair of epochs, a send ring of
 * tx_window slots (the retransmit queue), cumulative ACK + SACK bitmap,
 * RTO with exponential backoff (never gives up while the peer exists),
 * time-based (RACK) fast retransmit, a loss-based congestion window, and
 * credits: the receiver grants seqs < delivered + rx_window, so a board that
 * refuses deliveries (-EBUSY) stops its senders without losing anything.
 *
 * Spurious timeouts (Eifel detection, RFC 3522, with RACK-style recovery):
 * every DATA datagram carries its send time, and each ACK block echoes the
 * newest send time of the datagrams that brought that lane something new.
 * A timeout resends only the oldest expired packet; when its ACK echoes a
 * time older than that retransmission, the original had arrived and only
 * the ACK was late (the receiving QEMU waited for a CPU): the window cut is
 * undone, nothing else of the flight is resent, and the peer's RTO floor
 * rises above the delay seen (decaying slowly).  When the echo shows the
 * retransmission arrived, RACK resends the rest of the flight at once.
 * See docs/fabric.md.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1
#endif
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "dn2fab-int.h"
#include "dn2fab-hmac.h"

#define NO_DEADLINE UINT64_MAX
#define ROUTES_GEN_NONE 0xffffffffu
#define MAX_JOINS 16
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
};

struct rxslot {
    uint8_t *data;
    uint32_t after;             /* request lanes: deliver once the data lane's base reaches it */
    uint16_t len;
    uint8_t present;
    uint8_t held;               /* counted in req_held */
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
};

/* ---------------------------------------------------------------- names */
const char *dn2f_drop_name(unsigned reason)
{
    static const char *const names[DN2F_DROP_MAX] = {
        [DN2F_DROP_BAD_DGRAM] = "bad_datagram",
        [DN2F_DROP_NOT_FOR_US] = "not_for_us",
        [DN2F_DROP_FORGED] = "forged_source",
        [DN2F_DROP_UNKNOWN_PEER] = "unknown_peer",
        [DN2F_DROP_STALE_EPOCH] = "stale_epoch",
        [DN2F_DROP_BAD_ACK] = "bad_ack",
        [DN2F_DROP_BAD_DLID] = "bad_dlid",
        [DN2F_DROP_WINDOW] = "beyond_window",
        [DN2F_DROP_NO_BUFFER] = "no_buffer",
        [DN2F_DROP_NO_ROUTE] = "no_route",
        [DN2F_DROP_DELIVER_ERR] = "deliver_error",
        [DN2F_DROP_PEER_GONE] = "peer_gone",
        [DN2F_DROP_PEER_RESET] = "peer_reset",
        [DN2F_DROP_NOT_READY] = "link_not_ready",
        [DN2F_DROP_STALE_SESSION] = "stale_session",
        [DN2F_DROP_AUTH] = "auth",
    };
    return reason < DN2F_DROP_MAX && names[reason] ? names[reason] : "?";
}


/* ------------------------------------------------------------ utilities */
static uint64_t now(struct dn2f_ep *ep)
{
    return ep->ops.now_ns(ep->opaque);
}

static bool pow2_in(uint32_t v, uint32_t lo, uint32_t hi)
{
    return v >= lo && v <= hi && (v & (v - 1)) == 0;
}

void dn2f_ep_config_default(struct dn2f_ep_config *c)
{
    memset(c, 0, sizeof(*c));
    c->tx_window = 512;
    c->rx_window = 512;
    c->max_dgram = DN2F_DGRAM_DEFAULT;
    c->tx_budget = 64u << 20;
    c->rx_budget = 64u << 20;
    c->rto_min_ns = 1000000;            /* 1 ms */
    c->rto_max_ns = 200000000;          /* 200 ms */
    c->rto_init_ns = 10000000;          /* 10 ms */
    c->ack_delay_ns = 0;
    c->hello_interval_ns = 100000000;   /* 100 ms */
    c->keepalive_ns = 250000000;        /* 250 ms */
    c->keepalive_timeout_ns = 1000000000; /* 1 s */
    c->peer_grace_ns = 10000000000ULL;  /* 10 s */
}

static int send_dgram(struct dn2f_ep *ep, const struct dn2f_addr *to, const void *buf, size_t len)
{
    int rc;
    if (!len || !to->len) {
        return -EINVAL;
    }
    rc = ep->ops.send_datagram(ep->opaque, to, buf, len);
    if (rc == -EAGAIN || rc == -EWOULDBLOCK || rc == -ENOBUFS) {
        ep->st.send_eagain++;
        ep->blocked_until = now(ep) + 200000;
        return -EAGAIN;
    }
    ep->st.tx_dgrams++;         /* other errors: as if lost on the wire */
    return 0;
}

static const struct dn2f_addr *next_hop(struct dn2f_ep *ep, struct peer *p)
{
    if (ep->mode == DN2F_ROUTE_DIRECT && p->direct) {
        return &p->addr;
    }
    return &ep->cfg.sw;
}

static uint64_t cur_rto(struct dn2f_ep *ep, struct lane *L)
{
    uint64_t r = L->rto > L->rto_floor ? L->rto : L->rto_floor;
    unsigned b = L->backoff;
    while (b-- && r < ep->cfg.rto_max_ns) {
        r <<= 1;
    }
    return r > ep->cfg.rto_max_ns ? ep->cfg.rto_max_ns : r;
}

static inline struct txslot *txs(struct dn2f_ep *ep, struct lane *L, uint32_t seq)
{
    return &L->tx[seq & (ep->cfg.tx_window - 1)];
}

static inline struct rxslot *rxs(struct dn2f_ep *ep, struct lane *L, uint32_t seq)
{
    return &L->rx[seq & (ep->cfg.rx_window - 1)];
}

static void pb_unref(struct pbuf *pb)
{
    if (pb && --pb->refs == 0) {
        free(pb);
    }
}

/* The length, and the MAC when a secret is set. */
static size_t finish_ctrl(struct dn2f_ep *ep, struct dn2f_wbuf *w)
{
    return ep->auth ? dn2f_finish_mac(w, &ep->kctl) : dn2f_finish(w);
}

static size_t finish_data(struct dn2f_ep *ep, const struct dn2f_hmac_key *k, struct dn2f_wbuf *w)
{
    return ep->auth ? dn2f_finish_mac(w, k) : dn2f_finish(w);
}

static void peer_keys(struct dn2f_ep *ep, struct peer *p)
{
    if (ep->auth) {
        dn2f_pair_key(&p->ktx, ep->my_tok, p->tok);
        dn2f_pair_key(&p->krx, p->tok, ep->my_tok);
    }
}

/* ------------------------------------------------------------ control tx */
static void send_ctrl(struct dn2f_ep *ep, unsigned type, uint32_t a, uint32_t b)
{
    uint8_t buf[128];
    struct dn2f_wbuf w;
    size_t len;

    dn2f_wbuf_init(&w, buf, sizeof(buf));
    dn2f_put_hdr(&w, type, 0, ep->lid, 0, ep->epoch, ep->sw_epoch);
    if (type == DN2F_T_HELLO) {
        struct dn2f_hello h = { .guid = ep->cfg.guid, .lid_hint = ep->lid_hint };
        dn2f_put_hello(&w, &h);
    } else if (type == DN2F_T_MCAST_JOIN || type == DN2F_T_MCAST_LEAVE) {
        dn2f_put_mcast(&w, (uint16_t)a);
    } else if (type == DN2F_T_KEEPALIVE) {
        /* while joining, the ASSIGN's ticket proves we receive at our address */
        dn2f_put_keepalive(&w, a, ep->cfg.guid,
                           ep->link == DN2F_LINK_ASSIGNED ? &ep->ticket : NULL);
    } else {
        dn2f_put_u32pair(&w, a, b);
    }
    len = finish_ctrl(ep, &w);
    if (send_dgram(ep, &ep->cfg.sw, buf, len) == 0) {
        ep->st.tx_ctrl_dgrams++;
    }
}

/* --------------------------------------------------------------- peers */
static void lane_clear_tx(struct dn2f_ep *ep, struct lane *L, unsigned reason)
{
    uint32_t s;
    if (L->tx) {
        for (s = L->una; s != L->end; s++) {
            struct txslot *t = txs(ep, L, s);
            if (t->pb) {
                ep->st.drop[reason]++;
                ep->tx_total -= t->pb->len;
                pb_unref(t->pb);
            }
            memset(t, 0, sizeof(*t));
        }
    }
    L->una = L->nxt = L->end = 0;
    L->limit = DN2F_INITIAL_CREDIT;
    L->tx_bytes = L->inflight = 0;
    L->srtt = L->rttvar = 0;
    L->rto = ep->cfg.rto_init_ns;
    L->backoff = L->probe_backoff = 0;
    L->rto_due = L->probe_due = NO_DEADLINE;
    L->force_retx = false;
    L->cwnd = 4ULL * ep->cfg.max_dgram;
    L->ssthresh = (uint64_t)ep->cfg.tx_window * DN2F_PKT_MAX;
    L->recovery = false;
    L->rack_ts = 0;
    L->rto_check = false;
    L->rto_restart = 0;
    /* rto_floor stays: it is about the peer's host (a starved CPU) */
}

static void lane_clear_rx(struct dn2f_ep *ep, struct lane *L)
{
    uint32_t i;
    if (L->rx) {
        for (i = 0; i < ep->cfg.rx_window; i++) {
            free(L->rx[i].data);
            memset(&L->rx[i], 0, sizeof(L->rx[i]));
        }
    }
    ep->rx_total -= L->rx_bytes;
    L->rx_bytes = 0;
    L->base = L->cum = 0;
    L->rx_ooo = 0;
    L->rx_blocked = false;
    L->echo = 0;
}

/* Forget everything exchanged with p (both directions, all lanes). */
static void peer_clear(struct dn2f_ep *ep, struct peer *p, unsigned reason)
{
    unsigned l;
    for (l = 0; l < DN2F_NUM_LANES; l++) {
        lane_clear_tx(ep, &p->ln[l], reason);
        lane_clear_rx(ep, &p->ln[l]);
    }
    p->ack_pending = false;
    p->ack_due = NO_DEADLINE;
}

/* Our own decision to start over with p (it restarted, it left, we are
 * someone else now): a new session, so that p resets its side too when it
 * sees it, and p's session is unknown until it tells us. */
static void peer_reset(struct dn2f_ep *ep, struct peer *p, unsigned reason)
{
    peer_clear(ep, p, reason);
    do {
        p->gen = ++ep->gen_counter;
    } while ((uint32_t)p->gen == 0);
    p->peer_sess = 0;
}

static inline uint32_t my_sess(const struct peer *p)
{
    return (uint32_t)p->gen;
}

static struct peer *peer_new(struct dn2f_ep *ep, uint16_t lid, uint64_t epoch)
{
    struct peer *p = calloc(1, sizeof(*p));
    if (!p) {
        return NULL;
    }
    p->lid = lid;
    p->epoch = epoch;
    p->st = PEER_ACTIVE;
    peer_reset(ep, p, DN2F_DROP_PEER_RESET);
    p->next = ep->plist;
    if (ep->plist) {
        ep->plist->prev = p;
    }
    ep->plist = p;
    ep->peers[dn2f_lid_index(lid)] = p;
    ep->npeers++;
    return p;
}

static void peer_free(struct dn2f_ep *ep, struct peer *p, unsigned reason)
{
    unsigned l;
    peer_reset(ep, p, reason);
    if (p->prev) {
        p->prev->next = p->next;
    } else {
        ep->plist = p->next;
    }
    if (p->next) {
        p->next->prev = p->prev;
    }
    ep->peers[dn2f_lid_index(p->lid)] = NULL;
    ep->npeers--;
    for (l = 0; l < DN2F_NUM_LANES; l++) {
        free(p->ln[l].tx);
        free(p->ln[l].rx);
    }
    free(p);
}

static bool lane_tx_alloc(struct dn2f_ep *ep, struct lane *L)
{
    if (!L->tx) {
        L->tx = calloc(ep->cfg.tx_window, sizeof(*L->tx));
    }
    return L->tx != NULL;
}

static bool lane_rx_alloc(struct dn2f_ep *ep, struct lane *L)
{
    if (!L->rx) {
        L->rx = calloc(ep->cfg.rx_window, sizeof(*L->rx));
    }
    return L->rx != NULL;
}

static struct peer *peer_get(struct dn2f_ep *ep, uint16_t lid)
{
    if (!dn2_lid_assignable(lid)) {
        return NULL;
    }
    return ep->peers[dn2f_lid_index(lid)];
}

/* ------------------------------------------------------------- ACK build */
static void put_ack_lane(struct dn2f_ep *ep, struct lane *L, unsigned lane, bool more,
                         struct dn2f_wbuf *w)
{
    uint8_t bits[DN2F_SACK_MAX_BITS / 8];
    unsigned nbits = 0, i, span;
    uint32_t limit = L->base + ep->cfg.rx_window;

    if (L->rx_ooo && L->rx) {
        span = (unsigned)dn2f_seqdiff(limit, L->cum);
        span = span ? span - 1 : 0;
        if (span > DN2F_SACK_MAX_BITS) {
            span = DN2F_SACK_MAX_BITS;
        }
        memset(bits, 0, sizeof(bits));
        for (i = 0; i < span; i++) {
            if (rxs(ep, L, L->cum + 1 + i)->present) {
                bits[i >> 3] |= (uint8_t)(1u << (i & 7));
                nbits = i + 1;
            }
        }
        nbits = (nbits + 31) & ~31u;
    }
    dn2f_put_ack_echo(w, lane, more, L->cum, limit, L->echo, (uint16_t)nbits, bits);
}

/* The ACK blocks toward p: one per lane that has received anything (lane 0
 * alone when none has), so one datagram carries the state of every lane. */
static void put_acks(struct dn2f_ep *ep, struct peer *p, struct dn2f_wbuf *w)
{
    unsigned l, want[DN2F_NUM_LANES], n = 0, i;
    for (l = 0; l < DN2F_NUM_LANES; l++) {
        if (p->ln[l].rx) {
            want[n++] = l;
        }
    }
    if (!n) {
        want[n++] = 0;
    }
    for (i = 0; i < n; i++) {
        put_ack_lane(ep, &p->ln[want[i]], want[i], i + 1 < n, w);
    }
}

static void send_ack(struct dn2f_ep *ep, struct peer *p, bool ackreq)
{
    struct dn2f_wbuf w;
    size_t len;

    dn2f_wbuf_init(&w, ep->dgbuf, DN2F_DGRAM_MAX);
    dn2f_put_hdr(&w, DN2F_T_ACK, ackreq ? DN2F_F_ACKREQ : 0, ep->lid, p->lid,
                 ep->epoch, p->epoch);
    dn2f_hdr_set_sessions(&w, my_sess(p), p->peer_sess);
    put_acks(ep, p, &w);
    len = finish_data(ep, &p->ktx, &w);
    if (send_dgram(ep, next_hop(ep, p), ep->dgbuf, len) == 0) {
        ep->st.tx_ack_dgrams++;
        p->ack_pending = false;
        p->ack_due = NO_DEADLINE;
    }
}

/* ------------------------------------------------- unicast data builder */
/* Records of any lane toward one peer, batched into datagrams. */
struct txb {
    struct dn2f_ep *ep;
    struct peer *p;
    struct dn2f_wbuf w;
    unsigned n;
    bool open, retx, with_ack, failed;
};

static void txb_open(struct txb *b)
{
    struct dn2f_ep *ep = b->ep;
    struct peer *p = b->p;

    dn2f_wbuf_init(&b->w, ep->dgbuf, ep->cfg.max_dgram - (ep->auth ? DN2F_MAC_LEN : 0));
    b->with_ack = p->ack_pending;
    dn2f_put_hdr(&b->w, DN2F_T_DATA, b->with_ack ? DN2F_F_ACK : 0, ep->lid, p->lid,
                 ep->epoch, p->epoch);
    dn2f_hdr_set_sessions(&b->w, my_sess(p), p->peer_sess);
    if (b->with_ack) {
        put_acks(ep, p, &b->w);
    }
    b->n = 0;
    b->open = true;
}

static bool txb_emit(struct txb *b)
{
    struct dn2f_ep *ep = b->ep;
    struct peer *p = b->p;
    size_t len;
    uint64_t t;
    unsigned i;

    if (!b->open || b->n == 0) {
        b->open = false;
        return !b->failed;
    }
    b->open = false;
    t = now(ep);
    dn2f_data_set_ts(&b->w, dn2f_ts_us(t));    /* echoed back: which transmission */
    len = finish_data(ep, &p->ktx, &b->w);
    if (send_dgram(ep, next_hop(ep, p), ep->dgbuf, len) != 0) {
        b->failed = true;
        return false;
    }
    ep->st.tx_data_dgrams++;
    if (b->with_ack) {
        p->ack_pending = false;
        p->ack_due = NO_DEADLINE;
    }
    for (i = 0; i < b->n; i++) {
        struct lane *L = &p->ln[ep->txb_lanes[i]];
        struct txslot *s = txs(ep, L, ep->txb_seqs[i]);
        if (!s->sent) {
            s->sent = 1;
            L->inflight += s->pb->len;
        } else {
            ep->st.retransmits++;
        }
        s->last_tx = t;
        if (s->ntx < UINT16_MAX) {
            s->ntx++;
        }
        if (L->rto_due == NO_DEADLINE || L->rto_due > t + cur_rto(ep, L)) {
            L->rto_due = t + cur_rto(ep, L);
        }
    }
    return true;
}

static bool txb_put(struct txb *b, unsigned kind, unsigned rf, uint32_t seq,
                    const struct txslot *s)
{
    if (rf & DN2F_RF_REQ) {
        return dn2f_put_req(&b->w, rf, seq, s->after, s->pb->data, s->pb->len);
    }
    return dn2f_put_rec(&b->w, kind, rf, seq, s->group, 0, NULL, NULL, NULL,
                        s->pb->data, s->pb->len);
}

/* Add (lane, seq) to the datagram being built; false if sending failed. */
static bool txb_add(struct txb *b, unsigned lane, uint32_t seq)
{
    struct txslot *s = txs(b->ep, &b->p->ln[lane], seq);
    unsigned kind = s->group ? DN2F_REC_MCAST_COPY : DN2F_REC_UNICAST;
    unsigned rf = ((b->retx || s->sent) ? DN2F_RF_RETX : 0) | dn2f_lane_rflags(lane);

    if (b->failed) {
        return false;
    }
    if (!b->open) {
        txb_open(b);
    }
    if (b->n >= MAX_RECS_PER_DGRAM || !txb_put(b, kind, rf, seq, s)) {
        if (!txb_emit(b)) {
            return false;
        }
        txb_open(b);
        if (!txb_put(b, kind, rf, seq, s)) {
            return false;       /* cannot happen: max_dgram >= 8 KiB */
        }
    }
    b->ep->txb_seqs[b->n] = seq;
    b->ep->txb_lanes[b->n] = (uint8_t)lane;
    b->n++;
    return true;
}

/* Earliest retransmission deadline of a lane (scan of the outstanding slots). */
static void floor_decay(struct dn2f_ep *ep, struct lane *L)
{
    uint64_t t;
    if (!L->rto_floor) {
        return;
    }
    t = now(ep);
    while (L->rto_floor && t - L->floor_t >= FLOOR_DECAY_NS) {
        L->floor_t += FLOOR_DECAY_NS;
        L->rto_floor -= L->rto_floor / 8;
        if (L->rto_floor <= ep->cfg.rto_min_ns) {
            L->rto_floor = 0;
        }
    }
}

static void lane_rearm(struct dn2f_ep *ep, struct lane *L)
{
    uint32_t s;
    uint64_t due = NO_DEADLINE, r;
    bool outstanding = false;

    floor_decay(ep, L);
    r = cur_rto(ep, L);
    if (L->tx) {
        for (s = L->una; s != L->end; s++) {
            struct txslot *t = txs(ep, L, s);
            if (t->pb && t->sent && !t->sacked) {
                /* after a timeout, a full (backed-off) RTO from it */
                uint64_t from = t->last_tx > L->rto_restart ? t->last_tx : L->rto_restart;
                outstanding = true;
                if (from + r < due) {
                    due = from + r;
                }
            }
        }
    }
    L->rto_due = due;
    /* Zero-credit probe: the lane is held back by credits and nothing is
     * in flight that would bring an ACK back. */
    if (!outstanding && dn2f_seqdiff(L->limit, L->end) <= 0) {
        if (L->probe_due == NO_DEADLINE) {
            uint64_t iv = cur_rto(ep, L);
            unsigned b = L->probe_backoff;
            while (b-- && iv < ep->cfg.rto_max_ns) {
                iv <<= 1;
            }
            if (iv > ep->cfg.rto_max_ns) {
                iv = ep->cfg.rto_max_ns;
            }
            L->probe_due = now(ep) + iv;
        }
    } else {
        L->probe_due = NO_DEADLINE;
        L->probe_backoff = 0;
    }
}

static void peer_rearm(struct dn2f_ep *ep, struct peer *p)
{
    unsigned l;
    for (l = 0; l < DN2F_NUM_LANES; l++) {
        lane_rearm(ep, &p->ln[l]);
    }
}

/* First transmission of queued packets, each lane within its congestion
 * window; the lanes share the datagrams. */
static bool peer_transmit_new(struct dn2f_ep *ep, struct peer *p)
{
    struct txb b = { .ep = ep, .p = p };
    uint32_t s;
    unsigned l;
    bool ok = true;

    if (p->st != PEER_ACTIVE) {
        return true;
    }
    for (l = 0; l < DN2F_NUM_LANES && ok; l++) {
        struct lane *L = &p->ln[l];
        size_t new_bytes = 0;
        if (!L->tx) {
            continue;
        }
        for (s = L->nxt; s != L->end; s++) {
            struct txslot *t = txs(ep, L, s);
            if (!t->pb || t->sent || t->mc_pending) {
                continue;
            }
            if (L->inflight + new_bytes > 0 &&
                L->inflight + new_bytes + t->pb->len > L->cwnd) {
                break;
            }
            if (!txb_add(&b, l, s)) {
                ok = false;
                break;
            }
            new_bytes += t->pb->len;
        }
    }
    if (ok) {
        ok = txb_emit(&b);
    }
    for (l = 0; l < DN2F_NUM_LANES; l++) {
        struct lane *L = &p->ln[l];
        while (L->tx && L->nxt != L->end) {
            struct txslot *t = txs(ep, L, L->nxt);
            if (t->pb && !t->sent) {
                break;
            }
            L->nxt++;
        }
    }
    return ok;
}

static bool lane_retransmit(struct dn2f_ep *ep, struct peer *p, unsigned lane,
                            const uint32_t *seqs, unsigned n)
{
    struct txb b = { .ep = ep, .p = p, .retx = true };
    unsigned i;
    for (i = 0; i < n; i++) {
        if (!txb_add(&b, lane, seqs[i])) {
            return false;
        }
    }
    return txb_emit(&b);
}

/* ------------------------------------------------------- multicast build */
static void mc_discard(struct dn2f_ep *ep)
{
    unsigned i;
    for (i = 0; i < ep->mc_nrefs; i++) {
        struct mcref *r = &ep->mcrefs[i];
        struct peer *p = peer_get(ep, r->lid);
        if (p && p->gen == r->gen && p->ln[r->lane].tx) {
            struct txslot *t = txs(ep, &p->ln[r->lane], r->seq);
            if (t->pb == r->pb) {
                t->mc_pending = 0;      /* falls back to unicast copies */
            }
        }
    }
    ep->mc_nrefs = 0;
    ep->mc_nrecs = 0;
    ep->mc_group = 0;
}

static void mc_emit(struct dn2f_ep *ep)
{
    size_t len;
    unsigned i;
    uint64_t t;

    if (!ep->mc_nrecs) {
        return;
    }
    t = now(ep);
    dn2f_data_set_ts(&ep->mcw, dn2f_ts_us(t));  /* the switch copies it to each member */
    len = finish_data(ep, &ep->kmc, &ep->mcw);
    if (ep->link != DN2F_LINK_UP || send_dgram(ep, &ep->cfg.sw, ep->mcbuf, len) != 0) {
        mc_discard(ep);
        return;
    }
    ep->st.tx_data_dgrams++;
    for (i = 0; i < ep->mc_nrefs; i++) {
        struct mcref *r = &ep->mcrefs[i];
        struct peer *p = peer_get(ep, r->lid);
        if (p && p->gen == r->gen && p->ln[r->lane].tx) {
            struct lane *L = &p->ln[r->lane];
            struct txslot *s = txs(ep, L, r->seq);
            if (s->pb == r->pb && s->mc_pending && !s->sent) {
                s->mc_pending = 0;
                s->sent = 1;
                s->ntx = 1;
                s->last_tx = t;
                L->inflight += s->pb->len;
                if (L->rto_due == NO_DEADLINE) {
                    L->rto_due = t + cur_rto(ep, L);
                }
            }
        }
    }
    ep->mc_nrefs = 0;
    ep->mc_nrecs = 0;
    ep->mc_group = 0;
}

/* ---------------------------------------------------------------- flush */
static bool peer_has_new(const struct peer *p)
{
    unsigned l;
    for (l = 0; l < DN2F_NUM_LANES; l++) {
        if (p->ln[l].tx && p->ln[l].nxt != p->ln[l].end) {
            return true;
        }
    }
    return false;
}

static void flush_internal(struct dn2f_ep *ep)
{
    struct peer *p;
    uint64_t t = now(ep);

    if (ep->blocked_until != 0) {
        if (t < ep->blocked_until) {
            return;
        }
        ep->blocked_until = 0;
    }
    if (ep->link == DN2F_LINK_UP) {
        mc_emit(ep);
        for (p = ep->plist; p; p = p->next) {
            if (!ep->blocked_until && peer_has_new(p)) {
                if (!peer_transmit_new(ep, p)) {
                    return;
                }
                peer_rearm(ep, p);
            }
        }
    }
    for (p = ep->plist; p; p = p->next) {
        if (p->ack_pending && (ep->cfg.ack_delay_ns == 0 || t >= p->ack_due)) {
            send_ack(ep, p, false);
            if (ep->blocked_until) {
                return;
            }
        }
    }
}

void dn2f_ep_flush(struct dn2f_ep *ep)
{
    flush_internal(ep);
}

/* ----------------------------------------------------------------- send */
static bool lane_room(struct dn2f_ep *ep, struct peer *p, unsigned lane, size_t len)
{
    struct lane *L = &p->ln[lane];
    if (p->st != PEER_ACTIVE) {
        return false;
    }
    if ((uint32_t)(L->end - L->una) >= ep->cfg.tx_window) {
        return false;
    }
    if (dn2f_seqdiff(L->limit, L->end) <= 0) {
        return false;           /* no credits */
    }
    if (L->tx_bytes + len > (size_t)ep->cfg.tx_window * DN2F_PKT_MAX) {
        return false;
    }
    return true;
}

static unsigned group_members(struct dn2f_ep *ep, uint16_t glid, struct peer **out)
{
    struct group *g = ep->groups[dn2f_lid_index(glid) - DN2_CLID_MCAST_FIRST];
    unsigned i, n = 0;
    if (!g) {
        return 0;
    }
    for (i = 0; i < g->n; i++) {
        struct peer *p = peer_get(ep, g->lids[i]);
        if (p && p->st == PEER_ACTIVE) {
            out[n++] = p;
        }
    }
    return n;
}

/* lanes: bit l = lane l must have room. */
static bool can_send_lanes(struct dn2f_ep *ep, uint16_t dlid, unsigned lanes, size_t len)
{
    struct peer *p;
    unsigned l;

    if (ep->link != DN2F_LINK_UP || len < DN2F_PKT_MIN || len > DN2F_PKT_MAX) {
        return false;
    }
    if (ep->tx_total + len > ep->cfg.tx_budget) {
        return false;
    }
    if (dn2f_lid_is_mcast(dlid)) {
        struct peer *m[DN2F_MCAST_MAX_MEMBERS];
        unsigned i, n = group_members(ep, dlid, m);
        lanes = (lanes | (lanes >> DN2F_LANE_REQ)) & ((1u << DN2F_LANE_REQ) - 1);
        for (i = 0; i < n; i++) {
            for (l = 0; l < DN2F_NUM_LANES; l++) {
                if (((lanes >> l) & 1) && !lane_room(ep, m[i], l, len)) {
                    return false;
                }
            }
        }
        return true;
    }
    p = peer_get(ep, dlid);
    if (!p) {
        return true;            /* not routable: dn2f_ep_send drops it */
    }
    for (l = 0; l < DN2F_NUM_LANES; l++) {
        if (((lanes >> l) & 1) && !lane_room(ep, p, l, len)) {
            return false;
        }
    }
    return true;
}

/* Every lane (for a group: both data lanes). */
bool dn2f_ep_can_send(struct dn2f_ep *ep, uint16_t dlid, size_t len)
{
    return can_send_lanes(ep, dlid, (1u << DN2F_NUM_LANES) - 1, len);
}

bool dn2f_ep_can_send_lane(struct dn2f_ep *ep, uint16_t dlid, unsigned lane, size_t len)
{
    if (lane >= DN2F_NUM_LANES) {
        return false;
    }
    return can_send_lanes(ep, dlid, 1u << lane, len);
}

static struct pbuf *pb_new(const void *pkt, size_t len)
{
    struct pbuf *pb = malloc(sizeof(*pb) + len);
    if (pb) {
        pb->refs = 0;
        pb->len = (uint16_t)len;
        memcpy(pb->data, pkt, len);
    }
    return pb;
}

static void slot_fill(struct dn2f_ep *ep, struct lane *L, struct pbuf *pb, uint16_t group,
                      uint32_t after)
{
    struct txslot *t = txs(ep, L, L->end);
    memset(t, 0, sizeof(*t));
    t->pb = pb;
    t->after = after;
    pb->refs++;
    t->group = group;
    t->mc_pending = group ? 1 : 0;
    L->end++;
    L->tx_bytes += pb->len;
    ep->tx_total += pb->len;
}

static int send_mcast(struct dn2f_ep *ep, uint16_t dlid, unsigned lane, const void *pkt,
                      size_t len)
{
    struct peer *m[DN2F_MCAST_MAX_MEMBERS];
    struct dn2f_member mb[DN2F_MCAST_MAX_MEMBERS];
    unsigned i, n = group_members(ep, dlid, m);
    struct pbuf *pb;

    if (n == 0) {
        ep->st.drop[DN2F_DROP_NO_ROUTE]++;
        return -EHOSTUNREACH;
    }
    for (i = 0; i < n; i++) {
        if (!lane_tx_alloc(ep, &m[i]->ln[lane])) {
            return -ENOMEM;
        }
    }
    pb = pb_new(pkt, len);
    if (!pb) {
        return -ENOMEM;
    }
    if (ep->mc_nrecs && (ep->mc_group != dlid || ep->mc_nrefs + n > MC_MAX_REFS ||
                         ep->mcw.cap - ep->mcw.len <
                         dn2f_rec_len(DN2F_REC_MCAST_ORIGIN, n, len))) {
        mc_emit(ep);
    }
    if (!ep->mc_nrecs) {
        dn2f_wbuf_init(&ep->mcw, ep->mcbuf, ep->cfg.max_dgram - (ep->auth ? DN2F_MAC_LEN : 0));
        dn2f_put_hdr(&ep->mcw, DN2F_T_DATA, 0, ep->lid, dlid, ep->epoch, 0);
        ep->mc_group = dlid;
    }
    for (i = 0; i < n; i++) {
        struct lane *L = &m[i]->ln[lane];
        mb[i].lid = m[i]->lid;
        mb[i].seq = L->end;
        mb[i].epoch = m[i]->epoch;
        mb[i].src_sess = my_sess(m[i]);
        mb[i].dst_sess = m[i]->peer_sess;
        ep->mcrefs[ep->mc_nrefs].lid = m[i]->lid;
        ep->mcrefs[ep->mc_nrefs].lane = (uint8_t)lane;
        ep->mcrefs[ep->mc_nrefs].seq = L->end;
        ep->mcrefs[ep->mc_nrefs].gen = m[i]->gen;
        ep->mcrefs[ep->mc_nrefs].pb = pb;
        ep->mc_nrefs++;
        slot_fill(ep, L, pb, dlid, 0);
    }
    if (!dn2f_put_origin(&ep->mcw, dn2f_lane_rflags(lane), dlid, n, mb, pkt, len)) {
        /* cannot happen (checked above); the slots go out as unicast copies */
        mc_discard(ep);
    } else {
        ep->mc_nrecs++;
    }
    ep->st.mcast_tx++;
    ep->st.tx_pkts++;
    ep->st.tx_bytes += len;
    return 0;
}

int dn2f_ep_send(struct dn2f_ep *ep, uint16_t dlid, const void *pkt, size_t len)
{
    struct peer *p;
    struct pbuf *pb;
    unsigned lane;

    if (!pkt || len < DN2F_PKT_MIN || len > DN2F_PKT_MAX ||
        dn2f_pkt_dlid(pkt) != dlid) {
        return -EINVAL;
    }
    lane = dn2f_pkt_lane(pkt);         /* a data lane for a group */
    if (!can_send_lanes(ep, dlid, 1u << lane, len)) {
        return -EAGAIN;
    }
    if (dn2f_lid_is_mcast(dlid)) {
        return send_mcast(ep, dlid, lane, pkt, len);
    }
    p = peer_get(ep, dlid);
    if (!p) {
        ep->st.drop[DN2F_DROP_NO_ROUTE]++;
        return -EHOSTUNREACH;
    }
    if (!lane_tx_alloc(ep, &p->ln[lane])) {
        return -ENOMEM;
    }
    pb = pb_new(pkt, len);
    if (!pb) {
        return -ENOMEM;
    }
    /* A request carries the position of its DWID's data lane: the peer
     * delivers it only after everything queued there before it. */
    slot_fill(ep, &p->ln[lane], pb, 0,
              (lane & DN2F_LANE_REQ) ? p->ln[lane & ~DN2F_LANE_REQ].end : 0);
    ep->st.tx_pkts++;
    ep->st.tx_bytes += len;
    return 0;
}

/* -------------------------------------------------------------- receive */
static bool rx_deliver_one(struct dn2f_ep *ep, struct peer *p, struct lane *L,
                           const uint8_t *pkt, size_t len, bool *consumed)
{
    int rc;
    ep->in_deliver = true;
    rc = ep->ops.deliver(ep->opaque, p->lid, pkt, len);
    ep->in_deliver = false;
    if (rc == -EBUSY) {
        ep->st.busy++;
        L->rx_blocked = true;   /* this lane only: the other WID goes on */
        *consumed = false;
        return false;
    }
    if (rc < 0) {
        ep->st.drop[DN2F_DROP_DELIVER_ERR]++;
    } else {
        ep->st.rx_pkts++;
        ep->st.rx_bytes += len;
    }
    *consumed = true;
    return true;
}

static void ack_due_now(struct dn2f_ep *ep, struct peer *p)
{
    p->ack_pending = true;
    if (p->ack_due == NO_DEADLINE) {
        p->ack_due = now(ep) + ep->cfg.ack_delay_ns;
    }
}

/* Packets are handed to deliver() only while the link is UP: the device
 * knows its LID (link_state(up, lid)) only then and refuses packets "not for
 * this LID" before.  Meanwhile they wait in the receive ring; they were
 * acknowledged because they are held here, and go to deliver() when the
 * link comes up.  So an ACK means: delivered, deliberately refused and
 * counted, or held by the endpoint. */
static inline bool can_deliver(const struct dn2f_ep *ep)
{
    return ep->link == DN2F_LINK_UP;
}

/* Read after write: a request (lanes 2/3) goes to deliver() only once its
 * sender's data lane of the same DWID has been delivered up to where it
 * was when the request was queued.  Data lanes never wait for requests. */
static inline bool req_ready(const struct peer *p, unsigned lane, uint32_t after)
{
    return !(lane & DN2F_LANE_REQ) ||
           dn2f_seqdiff(p->ln[lane & ~DN2F_LANE_REQ].base, after) >= 0;
}

/* Deliver buffered in-order packets [base, cum) of one lane; when a data
 * lane moved on, the requests that waited for it. */
static void rx_drain(struct dn2f_ep *ep, struct peer *p, unsigned lane)
{
    struct lane *L = &p->ln[lane];
    uint32_t old = L->base;
    while (can_deliver(ep) && !L->rx_blocked && L->base != L->cum && L->rx) {
        struct rxslot *s = rxs(ep, L, L->base);
        bool consumed;
        if (!s->present) {
            break;              /* cannot happen */
        }
        if (!req_ready(p, lane, s->after)) {
            if (!s->held) {
                s->held = 1;
                ep->st.req_held++;
            }
            break;              /* its data lane moving on drains it again */
        }
        rx_deliver_one(ep, p, L, s->data, s->len, &consumed);
        if (!consumed) {
            break;
        }
        ep->rx_total -= s->len;
        L->rx_bytes -= s->len;
        free(s->data);
        memset(s, 0, sizeof(*s));
        L->base++;
        /* the lane may have been reset from the callback: re-check */
        if (!L->rx) {
            break;
        }
    }
    if (L->base != old) {
        ack_due_now(ep, p);     /* credits opened */
        if (!(lane & DN2F_LANE_REQ)) {
            rx_drain(ep, p, lane | DN2F_LANE_REQ);
        }
    }
}

static void rx_advance_cum(struct dn2f_ep *ep, struct lane *L)
{
    while (dn2f_seqdiff(L->cum, L->base + ep->cfg.rx_window) < 0) {
        struct rxslot *s = rxs(ep, L, L->cum);
        if (!s->present) {
            break;
        }
        L->cum++;
        L->rx_ooo--;
    }
}

/* A datagram stamped ts brought lane L a packet it did not have: the ACK
 * echoes the newest such stamp (a late duplicate does not lower it). */
static inline void note_echo(struct lane *L, uint32_t ts)
{
    if (ts && (!L->echo || dn2f_seqdiff(ts, L->echo) > 0)) {
        L->echo = ts;
    }
}

static void rx_record(struct dn2f_ep *ep, struct peer *p, const struct dn2f_rec *r,
                      uint32_t ts)
{
    struct lane *L = &p->ln[r->lane];
    int32_t d = dn2f_seqdiff(r->seq, L->base);
    struct rxslot *s;
    bool consumed;

    if (r->kind == DN2F_REC_UNICAST ? dn2f_pkt_dlid(r->pkt) != ep->lid
                                    : dn2f_pkt_dlid(r->pkt) != r->group) {
        ep->st.drop[DN2F_DROP_BAD_DLID]++;
        return;
    }
    if (d < 0 || dn2f_seqdiff(r->seq, L->cum) < 0) {
        ep->st.duplicates++;
        return;
    }
    if ((uint32_t)d >= ep->cfg.rx_window) {
        ep->st.drop[DN2F_DROP_WINDOW]++;
        return;
    }
    if (!lane_rx_alloc(ep, L)) {
        ep->st.drop[DN2F_DROP_NO_BUFFER]++;
        return;
    }
    s = rxs(ep, L, r->seq);
    if (s->present) {
        ep->st.duplicates++;
        return;
    }
    if (r->seq == L->base && L->base == L->cum && !L->rx_blocked && can_deliver(ep) &&
        req_ready(p, r->lane, r->after)) {
        /* The common case: in order, nothing waiting: no copy. */
        if (rx_deliver_one(ep, p, L, r->pkt, r->len, &consumed)) {
            note_echo(L, ts);
            L->base++;
            L->cum++;
            rx_advance_cum(ep, L);
            rx_drain(ep, p, r->lane);
            if (!(r->lane & DN2F_LANE_REQ)) {
                rx_drain(ep, p, r->lane | DN2F_LANE_REQ);
            }
            return;
        }
        /* -EBUSY: keep a copy below. */
    }
    if (ep->rx_total + r->len > ep->cfg.rx_budget) {
        ep->st.drop[DN2F_DROP_NO_BUFFER]++;
        return;                 /* not acknowledged: retransmitted later */
    }
    s->data = malloc(r->len);
    if (!s->data) {
        ep->st.drop[DN2F_DROP_NO_BUFFER]++;
        return;
    }
    memcpy(s->data, r->pkt, r->len);
    note_echo(L, ts);
    s->len = r->len;
    s->after = r->after;
    s->held = 0;
    s->present = 1;
    ep->rx_total += r->len;
    L->rx_bytes += r->len;
    if (r->seq != L->cum) {
        ep->st.out_of_order++;
    }
    L->rx_ooo++;
    rx_advance_cum(ep, L);
}

/* An acknowledged transmission for RACK: the newest send time known to have
 * arrived.  A retransmitted packet counts with its latest send time only if
 * the echo does not predate it: an echo older than the retransmission shows
 * an earlier transmission arrived (counted as a spurious retransmission),
 * and taking the retransmission's time would make RACK call the rest of the
 * flight lost. */
static void rack_note(struct dn2f_ep *ep, struct lane *L, const struct txslot *ts, uint32_t echo)
{
    if (ts->ntx > 1 && echo && dn2f_seqdiff(echo, dn2f_ts_us(ts->last_tx)) < 0) {
        ep->st.spurious_retransmits++;
        return;
    }
    if (ts->last_tx > L->rack_ts) {
        L->rack_ts = ts->last_tx;
    }
}

/* The ACK of a timeout's retransmission echoes an older timestamp: the
 * packet had arrived, only its ACK was late.  Undo the window cut and the
 * backoff, and raise the peer's RTO floor above the delay that ACK took, so
 * the next equally late ACK does not fire the timer (every lane: they share
 * the peer's ACK datagrams and its CPU). */
static void spurious_timeout(struct dn2f_ep *ep, struct peer *p, struct lane *L, uint64_t t)
{
    uint64_t delay = t > L->rto_prev_tx ? t - L->rto_prev_tx : 0;
    uint64_t fl = delay + delay / 4 + ep->cfg.rto_min_ns;
    unsigned l;

    ep->st.spurious_timeouts++;
    if (L->undo_cwnd > L->cwnd) {
        L->cwnd = L->undo_cwnd;
    }
    if (L->undo_ssthresh > L->ssthresh) {
        L->ssthresh = L->undo_ssthresh;
    }
    L->recovery = false;
    L->backoff = 0;
    L->rto_restart = 0;
    if (fl > ep->cfg.rto_max_ns) {
        fl = ep->cfg.rto_max_ns;
    }
    for (l = 0; l < DN2F_NUM_LANES; l++) {
        struct lane *M = &p->ln[l];
        floor_decay(ep, M);
        if (fl > M->rto_floor) {
            M->rto_floor = fl;
        }
        M->floor_t = t;         /* renewed: the peer is still slow */
    }
    ep->st.rto_floor_ns = fl;
}

/* ACK processing (our send stream toward p on lane a->lane).  False if bogus. */
static bool process_ack(struct dn2f_ep *ep, struct peer *p, const struct dn2f_ack *a)
{
    struct lane *L = &p->ln[a->lane];
    int32_t d;
    uint32_t s;
    uint64_t t = now(ep), sample = 0, rack_before;
    bool have_sample = false;
    size_t acked_bytes = 0;
    uint32_t retx[DN2F_SACK_MAX_BITS];
    unsigned nretx = 0;

    if (!L->tx) {
        if (a->cum != 0) {
            ep->st.drop[DN2F_DROP_BAD_ACK]++;
            return false;
        }
        if (dn2f_seqdiff(a->limit, L->limit) > 0) {
            L->limit = a->limit;
        }
        return true;
    }
    d = dn2f_seqdiff(a->cum, L->una);
    if (dn2f_seqdiff(a->cum, L->end) > 0) {
        ep->st.drop[DN2F_DROP_BAD_ACK]++;
        return false;
    }
    rack_before = L->rack_ts;
    if (d > 0) {
        /* every acknowledged slot must have been sent */
        for (s = L->una; s != a->cum; s++) {
            if (!txs(ep, L, s)->sent) {
                ep->st.drop[DN2F_DROP_BAD_ACK]++;
                return false;
            }
        }
        for (s = L->una; s != a->cum; s++) {
            struct txslot *ts = txs(ep, L, s);
            if (!ts->sacked) {
                L->inflight -= ts->pb->len;
                rack_note(ep, L, ts, a->echo);
            }
            if (ts->ntx == 1) {
                sample = t - ts->last_tx;
                have_sample = true;
            }
            acked_bytes += ts->pb->len;
            L->tx_bytes -= ts->pb->len;
            ep->tx_total -= ts->pb->len;
            pb_unref(ts->pb);
            memset(ts, 0, sizeof(*ts));
        }
        L->una = a->cum;
        if (dn2f_seqdiff(L->nxt, L->una) < 0) {
            L->nxt = L->una;
        }
        L->backoff = 0;
        L->rto_restart = 0;
    }
    if (dn2f_seqdiff(a->limit, L->limit) > 0) {
        L->limit = a->limit;
        L->probe_backoff = 0;
    }
    /* SACK (only meaningful when relative to our current una) */
    if (d >= 0 && a->nbits) {
        unsigned i;
        for (i = 0; i < a->nbits; i++) {
            uint32_t q = a->cum + 1 + i;
            struct txslot *ts;
            if (dn2f_seqdiff(q, L->end) >= 0) {
                break;
            }
            ts = txs(ep, L, q);
            if (dn2f_ack_sacked(a, i) && ts->pb && ts->sent && !ts->sacked) {
                ts->sacked = 1;
                L->inflight -= ts->pb->len;
                acked_bytes += ts->pb->len;
                rack_note(ep, L, ts, a->echo);
                if (ts->ntx == 1) {
                    sample = t - ts->last_tx;
                    have_sample = true;
                }
            }
        }
    }
    /* Spurious-timeout detection (Eifel): the first ACK of the packet a
     * timeout resent tells by its echo which transmission arrived. */
    if (L->rto_check &&
        (dn2f_seqdiff(L->una, L->rto_seq) > 0 ||
         (dn2f_seqdiff(L->rto_seq, L->end) < 0 && txs(ep, L, L->rto_seq)->sacked))) {
        L->rto_check = false;
        if (a->echo && dn2f_seqdiff(a->echo, L->rto_ts) < 0) {
            spurious_timeout(ep, p, L, t);
        }
    }
    /* Loss detection, time based (RACK): a packet is lost when one sent
     * after it (by more than a reordering window) is known to have arrived.
     * Packets batched in one datagram or flush share a send time, so
     * reordering inside the network is not taken for loss; a timeout's
     * retransmission that arrived makes the rest of its flight lost at once
     * (all of it, not only below the highest SACKed: a flight lost whole
     * has nothing SACKed). */
    if (L->rack_ts != rack_before && L->una != L->end) {
        uint64_t reo = L->srtt / 4;
        uint32_t q;
        if (reo < 20000) {
            reo = 20000;
        }
        if (reo > 1000000) {
            reo = 1000000;
        }
        for (q = L->una; q != L->end && nretx < DN2F_SACK_MAX_BITS; q++) {
            struct txslot *ts = txs(ep, L, q);
            if (ts->pb && ts->sent && !ts->sacked && ts->last_tx + reo < L->rack_ts) {
                retx[nretx++] = q;
            }
        }
    }
    if (have_sample) {
        if (!L->srtt) {
            L->srtt = sample;
            L->rttvar = sample / 2;
        } else {
            uint64_t dev = sample > L->srtt ? sample - L->srtt : L->srtt - sample;
            L->rttvar = (3 * L->rttvar + dev) / 4;
            L->srtt = (7 * L->srtt + sample) / 8;
        }
        L->rto = L->srtt + 4 * L->rttvar;
        if (L->rto < ep->cfg.rto_min_ns) {
            L->rto = ep->cfg.rto_min_ns;
        }
        if (L->rto > ep->cfg.rto_max_ns) {
            L->rto = ep->cfg.rto_max_ns;
        }
    }
    /* congestion window */
    if (acked_bytes && !L->recovery) {
        uint64_t cmax = (uint64_t)ep->cfg.tx_window * DN2F_PKT_MAX;
        if (L->cwnd < L->ssthresh) {
            L->cwnd += acked_bytes;
        } else {
            L->cwnd += (uint64_t)ep->cfg.max_dgram * acked_bytes / L->cwnd + 1;
        }
        if (L->cwnd > cmax) {
            L->cwnd = cmax;
        }
    }
    if (L->recovery && dn2f_seqdiff(L->una, L->recover) >= 0) {
        L->recovery = false;
    }
    if (nretx) {
        if (!L->recovery) {
            uint64_t floor = ep->cfg.max_dgram;
            L->ssthresh = L->cwnd / 2 > floor ? L->cwnd / 2 : floor;
            L->cwnd = L->ssthresh;
            L->recovery = true;
            L->recover = L->end;
        }
        ep->st.fast_retransmits += nretx;
        if (ep->link == DN2F_LINK_UP) {
            lane_retransmit(ep, p, a->lane, retx, nretx);
        }
    }
    lane_rearm(ep, L);
    return true;
}

static bool process_acks(struct dn2f_ep *ep, struct peer *p, const struct dn2f_acks *as)
{
    unsigned i;
    bool ok = true;
    for (i = 0; i < as->n; i++) {
        ok &= process_ack(ep, p, &as->a[i]);
    }
    return ok;
}

/* ------------------------------------------------------------- routing */
static void note_refusal(struct dn2f_ep *ep, unsigned reason)
{
    ep->st.refusals++;
    if (ep->refusal != reason) {
        ep->refusal = reason;
        if (ep->ops.refused) {
            ep->ops.refused(ep->opaque, reason);
        }
    }
}

static void link_set_down(struct dn2f_ep *ep)
{
    bool was_up = ep->link == DN2F_LINK_UP;
    mc_discard(ep);
    ep->link = DN2F_LINK_DOWN;
    ep->routes_ok = false;
    ep->asm_active = false;
    ep->hello_due = now(ep);
    if (was_up) {
        ep->st.link_downs++;
        if (ep->ops.link_state) {
            ep->ops.link_state(ep->opaque, false, ep->lid);
        }
    }
}

static void reset_all_peers(struct dn2f_ep *ep, unsigned reason)
{
    unsigned i;
    mc_discard(ep);
    while (ep->plist) {
        peer_free(ep, ep->plist, reason);
    }
    for (i = 0; i < DN2F_NUM_GROUPS; i++) {
        free(ep->groups[i]);
        ep->groups[i] = NULL;
    }
}

static bool in_group(struct dn2f_ep *ep, uint16_t glid, uint16_t lid)
{
    struct group *g = ep->groups[dn2f_lid_index(glid) - DN2_CLID_MCAST_FIRST];
    unsigned i;
    if (!g) {
        return false;
    }
    for (i = 0; i < g->n; i++) {
        if (g->lids[i] == lid) {
            return true;
        }
    }
    return false;
}

static void joins_sync(struct dn2f_ep *ep)
{
    unsigned i;
    for (i = 0; i < ep->njoins; i++) {
        if (!in_group(ep, ep->joins[i], ep->lid)) {
            send_ctrl(ep, DN2F_T_MCAST_JOIN, ep->joins[i], 0);
        }
    }
}

static void routes_apply(struct dn2f_ep *ep)
{
    unsigned i, j, mark = ++ep->mark_counter;
    struct peer *p, *nx;
    uint64_t t = now(ep);

    for (i = 0; i < ep->asm_nroutes; i++) {
        struct pend_route *r = &ep->asm_routes[i];
        struct dn2f_addr a = r->addr;
        int fam = ep->cfg.sock_family ? ep->cfg.sock_family : ep->cfg.sw.u.sa.sa_family;

        p = peer_get(ep, r->lid);
        if (!p) {
            p = peer_new(ep, r->lid, r->epoch);
            if (!p) {
                continue;
            }
        } else if (p->epoch != r->epoch) {
            peer_reset(ep, p, DN2F_DROP_PEER_RESET);    /* the peer restarted */
            p->epoch = r->epoch;
        }
        p->direct = (r->flags & DN2F_RT_DIRECT) && dn2f_addr_to_family(&a, fam);
        p->addr = a;
        if (ep->auth) {
            uint8_t tok[DN2F_TOKEN_LEN];
            memcpy(tok, r->token, sizeof(tok));
            dn2f_seal(ep->kseal, 'R', ep->sw_epoch, r->epoch, r->lid, tok);
            if (memcmp(tok, p->tok, sizeof(tok)) != 0) {
                memcpy(p->tok, tok, sizeof(tok));
                peer_keys(ep, p);
            }
        }
        if (p->st == PEER_ORPHAN) {
            for (j = 0; j < DN2F_NUM_LANES; j++) {
                p->ln[j].force_retx = true;     /* back: resend what is outstanding */
                p->ln[j].rto_due = t;
            }
        }
        p->st = PEER_ACTIVE;
        p->mark = mark;
    }
    for (p = ep->plist; p; p = p->next) {
        if (p->mark != mark && p->st == PEER_ACTIVE) {
            p->st = PEER_ORPHAN;
            p->orphan_since = t;
        }
    }
    for (i = 0; i < DN2F_NUM_GROUPS; i++) {
        free(ep->groups[i]);
        ep->groups[i] = NULL;
    }
    for (i = 0; i < ep->asm_ngroups; i++) {
        unsigned gi = dn2f_lid_index(ep->asm_groups[i].group) - DN2_CLID_MCAST_FIRST;
        struct group *g;
        if (ep->groups[gi]) {
            continue;           /* duplicate group entry: first wins */
        }
        g = calloc(1, sizeof(*g));
        if (!g) {
            continue;
        }
        for (j = 0; j < ep->asm_groups[i].n; j++) {
            unsigned k;
            bool dup = false;
            for (k = 0; k < g->n; k++) {
                dup |= g->lids[k] == ep->asm_groups[i].lids[j];
            }
            if (!dup) {
                g->lids[g->n++] = ep->asm_groups[i].lids[j];
            }
        }
        ep->groups[gi] = g;
    }
    ep->routes_gen = ep->asm_gen;
    ep->routes_ok = true;
    ep->asm_active = false;
    joins_sync(ep);
    if (ep->link == DN2F_LINK_ASSIGNED) {
        ep->link = DN2F_LINK_UP;
        ep->st.link_ups++;
        ep->refusal = 0;
        ep->ka_due = t + ep->cfg.keepalive_ns;
        for (p = ep->plist; p; p = nx) {
            nx = p->next;
            for (j = 0; j < DN2F_NUM_LANES; j++) {
                p->ln[j].force_retx = true;     /* resend what was in flight, now */
                p->ln[j].backoff = 0;
                p->ln[j].rto_due = t;
            }
        }
        if (ep->ops.link_state) {
            ep->ops.link_state(ep->opaque, true, ep->lid);
        }
        /* what arrived while the link was not up */
        for (p = ep->plist; p; p = p->next) {
            for (j = 0; j < DN2F_NUM_LANES; j++) {
                rx_drain(ep, p, j);
            }
        }
    }
}

static void input_routes(struct dn2f_ep *ep, const struct dn2f_msg *m)
{
    struct dn2f_iter it;
    struct dn2f_route r;
    uint16_t g, n;
    const uint8_t *mem;
    unsigned c = m->u.routes.chunk;

    if (!ep->asm_active || ep->asm_gen != m->u.routes.gen ||
        ep->asm_nchunks != m->u.routes.nchunks) {
        ep->asm_active = true;
        ep->asm_gen = m->u.routes.gen;
        ep->asm_nchunks = m->u.routes.nchunks;
        ep->asm_got = 0;
        ep->asm_nroutes = 0;
        ep->asm_ngroups = 0;
        memset(ep->asm_have, 0, sizeof(ep->asm_have));
    }
    if (ep->asm_have[c >> 3] & (1u << (c & 7))) {
        return;
    }
    if (ep->asm_nroutes + m->u.routes.nroutes > DN2F_NUM_CLID ||
        ep->asm_ngroups + m->u.routes.ngroups > DN2F_NUM_GROUPS) {
        ep->asm_active = false;     /* inconsistent: wait for a resend */
        return;
    }
    ep->asm_have[c >> 3] |= (uint8_t)(1u << (c & 7));
    ep->asm_got++;
    dn2f_routes_iter(m, &it);
    while (dn2f_routes_next_route(&it, &r)) {
        struct pend_route *pr = &ep->asm_routes[ep->asm_nroutes++];
        pr->lid = r.lid;
        pr->flags = r.flags;
        pr->addr = r.addr;
        pr->epoch = r.epoch;
        memcpy(pr->token, r.token, DN2F_TOKEN_LEN);
    }
    while (dn2f_routes_next_group(&it, &g, &n, &mem)) {
        unsigned j;
        ep->asm_groups[ep->asm_ngroups].group = g;
        ep->asm_groups[ep->asm_ngroups].n = n;
        for (j = 0; j < n; j++) {
            ep->asm_groups[ep->asm_ngroups].lids[j] = dn2f_ld16(mem + 2 * j);
        }
        ep->asm_ngroups++;
    }
    if (ep->asm_got == ep->asm_nchunks) {
        routes_apply(ep);
    }
}

static void input_assign(struct dn2f_ep *ep, const struct dn2f_msg *m)
{
    const struct dn2f_assign *a = &m->u.assign;
    uint64_t t = now(ep);

    if (a->guid != ep->cfg.guid || m->h.dst_epoch != ep->epoch ||
        a->link_state != DN2_SMA_LINK_READY) {
        ep->st.drop[DN2F_DROP_NOT_FOR_US]++;
        return;
    }
    ep->last_sw_rx = t;
    ep->ticket = a->ticket;     /* the newest one */
    if (ep->auth) {
        uint8_t tok[DN2F_TOKEN_LEN];
        struct peer *p;
        memcpy(tok, a->token, sizeof(tok));
        dn2f_seal(ep->kseal, 'A', m->h.src_epoch, ep->epoch, a->lid, tok);
        if (memcmp(tok, ep->my_tok, sizeof(tok)) != 0) {
            uint8_t zero[DN2F_TOKEN_LEN] = { 0 };
            memcpy(ep->my_tok, tok, sizeof(tok));
            dn2f_pair_key(&ep->kmc, ep->my_tok, zero);
            for (p = ep->plist; p; p = p->next) {
                peer_keys(ep, p);
            }
        }
    }
    if (ep->link != DN2F_LINK_DOWN && a->lid == ep->lid && m->h.src_epoch == ep->sw_epoch) {
        return;                 /* a repeated ASSIGN */
    }
    if (ep->link == DN2F_LINK_UP) {
        link_set_down(ep);      /* a new switch incarnation */
    }
    if (ep->lid && a->lid != ep->lid) {
        reset_all_peers(ep, DN2F_DROP_PEER_RESET);  /* we are someone else now */
    }
    ep->lid = a->lid;
    ep->lid_hint = a->lid;
    ep->sw_epoch = m->h.src_epoch;
    ep->mode = a->route_mode;
    ep->link = DN2F_LINK_ASSIGNED;
    ep->routes_ok = false;
    ep->asm_active = false;
    ep->ka_due = t;             /* the ticket goes back at once */
}

static void input_from_switch(struct dn2f_ep *ep, const struct dn2f_msg *m)
{
    uint64_t t = now(ep);

    switch (m->h.type) {
    case DN2F_T_ASSIGN:
        input_assign(ep, m);
        return;
    case DN2F_T_ROUTES:
        if (ep->link == DN2F_LINK_DOWN || m->h.src_epoch != ep->sw_epoch ||
            m->h.dst_epoch != ep->epoch || m->h.dst_lid != ep->lid) {
            ep->st.drop[DN2F_DROP_STALE_EPOCH]++;
            return;
        }
        ep->last_sw_rx = t;
        input_routes(ep, m);
        return;
    case DN2F_T_KEEPALIVE:
        if (ep->link == DN2F_LINK_DOWN) {
            return;
        }
        if (m->h.src_epoch != ep->sw_epoch) {
            link_set_down(ep);  /* the switch restarted: HELLO again */
            return;
        }
        ep->last_sw_rx = t;
        return;
    case DN2F_T_BYE:
        if (m->u.bye.reason >= DN2F_BYE_GUID_IN_USE) {
            /* The switch refuses our join; we keep trying at the HELLO
             * interval (the GUID's old port may time out, a LID free up). */
            if (m->h.dst_epoch != ep->epoch || ep->link == DN2F_LINK_UP) {
                ep->st.drop[DN2F_DROP_NOT_FOR_US]++;
                return;
            }
            note_refusal(ep, m->u.bye.reason);
            if (ep->link == DN2F_LINK_ASSIGNED) {
                link_set_down(ep);
                ep->hello_due = t + ep->cfg.hello_interval_ns;
            }
            return;
        }
        if (ep->link != DN2F_LINK_DOWN &&
            (m->h.src_epoch == ep->sw_epoch || m->u.bye.reason == DN2F_BYE_UNKNOWN)) {
            link_set_down(ep);
        } else if (ep->link == DN2F_LINK_DOWN) {
            ep->hello_due = t;
        }
        return;
    default:
        ep->st.drop[DN2F_DROP_NOT_FOR_US]++;
        return;
    }
}

/* One datagram in; what it makes due (ACKs, HELLO answers, credit
 * updates) is sent by the next flush. */
static void ep_input(struct dn2f_ep *ep, const struct dn2f_addr *from, const void *buf,
                     size_t len)
{
    struct dn2f_msg m;
    struct peer *p;
    bool from_sw;
    int rc;

    ep->st.rx_dgrams++;
    rc = dn2f_decode(buf, len, &m);
    if (rc) {
        ep->st.drop[DN2F_DROP_BAD_DGRAM]++;
        return;
    }
    from_sw = dn2f_addr_equal(from, &ep->cfg.sw);
    /* With a secret every datagram has a MAC, without one none has.  A
     * switch's BYE "authentication failed" cannot be verified by a board
     * whose secret differs: it is only a hint, reported, nothing else. */
    if (!(m.h.flags & DN2F_F_MAC) != !ep->auth ||
        (ep->auth && m.h.type != DN2F_T_DATA && m.h.type != DN2F_T_ACK &&
         !dn2f_mac_ok(buf, &m, &ep->kctl))) {
        ep->st.drop[DN2F_DROP_AUTH]++;
        if (from_sw && m.h.type == DN2F_T_BYE && m.u.bye.reason == DN2F_BYE_AUTH &&
            m.h.dst_epoch == ep->epoch && ep->link != DN2F_LINK_UP) {
            note_refusal(ep, DN2F_BYE_AUTH);
        }
        return;
    }
    switch (m.h.type) {
    case DN2F_T_ASSIGN:
    case DN2F_T_ROUTES:
    case DN2F_T_KEEPALIVE:
    case DN2F_T_BYE:
        if (!from_sw) {
            ep->st.drop[DN2F_DROP_FORGED]++;
            return;
        }
        input_from_switch(ep, &m);
        break;
    case DN2F_T_DATA:
    case DN2F_T_ACK:
        if (!ep->lid) {
            ep->st.drop[DN2F_DROP_NOT_READY]++;
            return;
        }
        if (m.h.dst_lid != ep->lid) {
            ep->st.drop[DN2F_DROP_NOT_FOR_US]++;
            return;
        }
        p = peer_get(ep, m.h.src_lid);
        if (!p) {
            ep->st.drop[DN2F_DROP_UNKNOWN_PEER]++;
            return;
        }
        if (!from_sw && !(p->direct && dn2f_addr_equal(from, &p->addr))) {
            ep->st.drop[DN2F_DROP_FORGED]++;
            return;
        }
        if (ep->auth && !dn2f_mac_ok(buf, &m, &p->krx)) {
            ep->st.drop[DN2F_DROP_AUTH]++;
            return;
        }
        if (m.h.src_epoch != p->epoch || m.h.dst_epoch != ep->epoch) {
            ep->st.drop[DN2F_DROP_STALE_EPOCH]++;
            return;
        }
        /* Sessions (docs/fabric.md 4).  dst_sess: ours as the sender
         * knows it, 0 when it does not know it yet (its state toward us is
         * fresh); anything else is addressed to a previous session of ours:
         * drop, and tell it the current one. */
        if (m.h.dst_sess && m.h.dst_sess != my_sess(p)) {
            ep->st.drop[DN2F_DROP_STALE_SESSION]++;
            ack_due_now(ep, p);
            return;
        }
        /* src_sess: a newer one means the peer started over with us (its
         * sequence numbers begin again, it forgot what it had from us):
         * reset our side too, both directions, instead of taking its
         * packets for duplicates and it ours for out of window.  We keep
         * our session (our old datagrams name its old one, so it drops
         * them).  An older one is a late datagram of a previous session. */
        if (m.h.src_sess != p->peer_sess) {
            if (p->peer_sess && dn2f_seqdiff(m.h.src_sess, p->peer_sess) < 0) {
                ep->st.drop[DN2F_DROP_STALE_SESSION]++;
                return;
            }
            if (p->peer_sess) {
                peer_clear(ep, p, DN2F_DROP_PEER_RESET);
                ep->st.session_resets++;
            }
            p->peer_sess = m.h.src_sess;
        }
        if (from_sw) {
            ep->last_sw_rx = now(ep);
        }
        if (m.h.type == DN2F_T_ACK) {
            process_acks(ep, p, &m.u.acks);
        } else {
            struct dn2f_iter it;
            struct dn2f_rec r;
            unsigned l;
            if (m.u.data.acks.n && !process_acks(ep, p, &m.u.data.acks)) {
                return;
            }
            dn2f_data_iter(&m, &it);
            while (dn2f_data_next(&it, &r)) {
                rx_record(ep, p, &r, m.u.data.ts);
                if (ep->peers[dn2f_lid_index(m.h.src_lid)] != p) {
                    return;     /* cannot happen: callbacks may not reset */
                }
            }
            for (l = 0; l < DN2F_NUM_LANES; l++) {
                rx_drain(ep, p, l);
            }
        }
        if (m.h.type == DN2F_T_DATA || (m.h.flags & DN2F_F_ACKREQ)) {
            if (!p->ack_pending) {
                p->ack_due = now(ep) + ep->cfg.ack_delay_ns;
            }
            p->ack_pending = true;
        }
        break;
    default:
        ep->st.drop[DN2F_DROP_NOT_FOR_US]++;
        return;
    }
}

void dn2f_ep_input(struct dn2f_ep *ep, const struct dn2f_addr *from, const void *buf, size_t len)
{
    ep_input(ep, from, buf, len);
    flush_internal(ep);
}

void dn2f_ep_input_noflush(struct dn2f_ep *ep, const struct dn2f_addr *from, const void *buf,
                           size_t len)
{
    ep_input(ep, from, buf, len);
}

void dn2f_ep_resume(struct dn2f_ep *ep)
{
    struct peer *p;
    if (ep->in_deliver) {
        return;
    }
    for (p = ep->plist; p; p = p->next) {
        unsigned l;
        for (l = 0; l < DN2F_NUM_LANES; l++) {
            /* data lanes first: the requests that wait for them follow */
            if (p->ln[l].rx_blocked) {
                p->ln[l].rx_blocked = false;
                rx_drain(ep, p, l);
            }
        }
    }
    flush_internal(ep);
}

/* --------------------------------------------------------------- timers */
static uint64_t min64(uint64_t a, uint64_t b)
{
    return a < b ? a : b;
}

uint64_t dn2f_ep_next_deadline(struct dn2f_ep *ep)
{
    uint64_t d = NO_DEADLINE, t = now(ep);
    struct peer *p;

    if (ep->blocked_until) {
        d = ep->blocked_until;
    }
    switch (ep->link) {
    case DN2F_LINK_DOWN:
        d = min64(d, ep->hello_due);
        break;
    case DN2F_LINK_ASSIGNED:
    case DN2F_LINK_UP:
        d = min64(d, ep->ka_due);
        d = min64(d, ep->last_sw_rx + ep->cfg.keepalive_timeout_ns);
        break;
    }
    for (p = ep->plist; p; p = p->next) {
        if (p->ack_pending) {
            d = min64(d, p->ack_due);
        }
        if (p->st == PEER_ORPHAN) {
            d = min64(d, p->orphan_since + ep->cfg.peer_grace_ns);
            continue;
        }
        if (ep->link == DN2F_LINK_UP) {
            unsigned l;
            for (l = 0; l < DN2F_NUM_LANES; l++) {
                struct lane *L = &p->ln[l];
                d = min64(d, L->rto_due);
                d = min64(d, L->probe_due);
                if (!ep->blocked_until && L->tx && L->nxt != L->end) {
                    struct txslot *ts = txs(ep, L, L->nxt);
                    if (ts->pb && !ts->sent && !ts->mc_pending &&
                        (L->inflight == 0 || L->inflight + ts->pb->len <= L->cwnd)) {
                        d = min64(d, t);        /* sendable: flush due */
                    }
                }
            }
        }
    }
    if (ep->blocked_until && d < ep->blocked_until) {
        d = ep->blocked_until;  /* nothing can go out before that */
    }
    return d;
}

static bool lane_tick(struct dn2f_ep *ep, struct peer *p, unsigned lane, uint64_t t)
{
    struct lane *L = &p->ln[lane];
    if (!L->tx) {
        L->rto_due = NO_DEADLINE;
        L->force_retx = false;
    }
    if (L->tx && L->rto_due != NO_DEADLINE && t >= L->rto_due) {
        uint64_t r = cur_rto(ep, L);
        uint32_t s;
        if (L->force_retx || L->backoff) {
            /* The link or the peer is back: resend everything outstanding.
             * A second timeout in a row (the first one's packet or its ACK
             * was lost too: a lossy path rather than a late ACK): resend
             * everything expired.  (Collect first, txb uses txb_seqs
             * itself: in chunks.) */
            uint32_t list[256];
            unsigned n = 0;
            bool forced = L->force_retx;
            for (s = L->una; s != L->end; s++) {
                struct txslot *ts = txs(ep, L, s);
                uint64_t from = ts->last_tx > L->rto_restart ? ts->last_tx : L->rto_restart;
                if (ts->pb && ts->sent && !ts->sacked && (forced || from + r <= t)) {
                    list[n++] = s;
                    if (n == 256) {
                        if (!lane_retransmit(ep, p, lane, list, n)) {
                            return false;
                        }
                        n = 0;
                    }
                }
            }
            if (n && !lane_retransmit(ep, p, lane, list, n)) {
                return false;
            }
            L->force_retx = false;
            if (!forced) {
                ep->st.timeouts++;
                if (L->backoff < 16) {
                    L->backoff++;
                }
                L->cwnd = ep->cfg.max_dgram;
                L->recovery = false;
                L->rto_restart = t;
            }
        } else {
            /* A timeout resends one packet, the oldest expired: its ACK's
             * echo tells whether the flight was lost (RACK then resends
             * the rest at once) or only its ACK was late (nothing more is
             * resent; spurious_timeout()). */
            for (s = L->una; s != L->end; s++) {
                struct txslot *ts = txs(ep, L, s);
                uint64_t from;
                if (!ts->pb || !ts->sent || ts->sacked) {
                    continue;
                }
                from = ts->last_tx > L->rto_restart ? ts->last_tx : L->rto_restart;
                if (from + r <= t) {
                    break;
                }
            }
            if (s != L->end) {
                if (!L->rto_check) {
                    L->rto_check = true;
                    L->rto_seq = s;
                    L->rto_ts = dn2f_ts_us(t);  /* <= the retransmission's stamp */
                    L->rto_prev_tx = txs(ep, L, s)->last_tx;
                    L->undo_cwnd = L->cwnd;
                    L->undo_ssthresh = L->ssthresh;
                }
                if (!lane_retransmit(ep, p, lane, &s, 1)) {
                    return false;
                }
                ep->st.timeouts++;
                if (L->backoff < 16) {
                    L->backoff++;
                }
                L->ssthresh = L->cwnd / 2 > ep->cfg.max_dgram ? L->cwnd / 2 : ep->cfg.max_dgram;
                L->cwnd = ep->cfg.max_dgram;
                L->recovery = false;
                L->rto_restart = t;
            }
        }
        lane_rearm(ep, L);
    }
    if (L->probe_due != NO_DEADLINE && t >= L->probe_due) {
        send_ack(ep, p, true);
        L->probe_due = NO_DEADLINE;
        if (L->probe_backoff < 16) {
            L->probe_backoff++;
        }
        lane_rearm(ep, L);
    }
    return true;
}

static void peer_tick(struct dn2f_ep *ep, struct peer *p, uint64_t t)
{
    unsigned l;
    for (l = 0; l < DN2F_NUM_LANES; l++) {
        if (!lane_tick(ep, p, l, t)) {
            return;
        }
    }
}

void dn2f_ep_tick(struct dn2f_ep *ep)
{
    uint64_t t = now(ep);
    struct peer *p, *nx;

    switch (ep->link) {
    case DN2F_LINK_DOWN:
        if (t >= ep->hello_due) {
            send_ctrl(ep, DN2F_T_HELLO, 0, 0);
            ep->hello_due = t + ep->cfg.hello_interval_ns;
        }
        break;
    case DN2F_LINK_ASSIGNED:
    case DN2F_LINK_UP:
        if (t >= ep->last_sw_rx + ep->cfg.keepalive_timeout_ns) {
            link_set_down(ep);
            send_ctrl(ep, DN2F_T_HELLO, 0, 0);
            ep->hello_due = t + ep->cfg.hello_interval_ns;
            break;
        }
        if (t >= ep->ka_due) {
            /* ASSIGNED: an unknown generation asks for the routing table */
            send_ctrl(ep, DN2F_T_KEEPALIVE,
                      ep->link == DN2F_LINK_UP ? ep->routes_gen : ROUTES_GEN_NONE, 0);
            ep->ka_due = t + (ep->link == DN2F_LINK_UP ? ep->cfg.keepalive_ns
                                                       : ep->cfg.hello_interval_ns);
            if (ep->link == DN2F_LINK_UP) {
                joins_sync(ep);
            }
        }
        break;
    }
    for (p = ep->plist; p; p = nx) {
        nx = p->next;
        if (p->st == PEER_ORPHAN) {
            if (t >= p->orphan_since + ep->cfg.peer_grace_ns) {
                peer_free(ep, p, DN2F_DROP_PEER_GONE);
            }
            continue;
        }
        if (ep->link == DN2F_LINK_UP && !ep->blocked_until) {
            peer_tick(ep, p, t);
        }
    }
    flush_internal(ep);
}

/* ------------------------------------------------------------ lifecycle */
struct dn2f_ep *dn2f_ep_new(const struct dn2f_ep_config *cfg,
                            const struct dn2f_ep_ops *ops, void *opaque)
{
    struct dn2f_ep *ep;

    if (!cfg || !ops || !ops->now_ns || !ops->send_datagram || !ops->deliver ||
        cfg->guid == 0 || !cfg->sw.len ||
        !pow2_in(cfg->tx_window, 64, 4096) || !pow2_in(cfg->rx_window, DN2F_INITIAL_CREDIT, 4096) ||
        cfg->max_dgram < 8192 || cfg->max_dgram > DN2F_DGRAM_MAX ||
        cfg->rto_min_ns == 0 || cfg->rto_max_ns < cfg->rto_min_ns ||
        (cfg->lid_hint && !dn2_lid_assignable(cfg->lid_hint))) {
        errno = EINVAL;
        return NULL;
    }
    ep = calloc(1, sizeof(*ep));
    if (!ep) {
        return NULL;
    }
    ep->cfg = *cfg;
    ep->ops = *ops;
    ep->opaque = opaque;
    if (ep->cfg.rto_init_ns < ep->cfg.rto_min_ns) {
        ep->cfg.rto_init_ns = ep->cfg.rto_min_ns;
    }
    ep->dgbuf = malloc(DN2F_DGRAM_MAX);
    ep->mcbuf = malloc(DN2F_DGRAM_MAX);
    ep->txb_seqs = malloc(MAX_RECS_PER_DGRAM * sizeof(uint32_t));
    ep->txb_lanes = malloc(MAX_RECS_PER_DGRAM);
    ep->mcrefs = malloc(MC_MAX_REFS * sizeof(struct mcref));
    ep->asm_routes = malloc(DN2F_NUM_CLID * sizeof(struct pend_route));
    ep->asm_groups = malloc(DN2F_NUM_GROUPS * sizeof(*ep->asm_groups));
    if (!ep->dgbuf || !ep->mcbuf || !ep->txb_seqs || !ep->txb_lanes || !ep->mcrefs ||
        !ep->asm_routes ||
        !ep->asm_groups) {
        dn2f_ep_free(ep);
        errno = ENOMEM;
        return NULL;
    }
    ep->epoch = cfg->epoch ? cfg->epoch : dn2f_random_u64();
    ep->lid_hint = cfg->lid_hint;
    if (cfg->secret && cfg->secret_len) {
        uint8_t zero[DN2F_TOKEN_LEN] = { 0 };
        ep->auth = true;
        dn2f_secret_keys(cfg->secret, cfg->secret_len, &ep->kctl, ep->kseal);
        dn2f_pair_key(&ep->kmc, ep->my_tok, zero);
    }
    ep->cfg.secret = NULL;      /* not kept */
    ep->cfg.secret_len = 0;
    ep->link = DN2F_LINK_DOWN;
    ep->mode = DN2F_ROUTE_SWITCH;
    ep->hello_due = now(ep);
    return ep;
}

void dn2f_ep_free(struct dn2f_ep *ep)
{
    if (!ep) {
        return;
    }
    if (ep->lid && ep->dgbuf) {
        send_ctrl(ep, DN2F_T_BYE, DN2F_BYE_LEAVING, 0);
    }
    if (ep->mcrefs) {
        reset_all_peers(ep, DN2F_DROP_PEER_GONE);
    }
    free(ep->dgbuf);
    free(ep->mcbuf);
    free(ep->txb_seqs);
    free(ep->txb_lanes);
    free(ep->mcrefs);
    free(ep->asm_routes);
    free(ep->asm_groups);
    free(ep);
}

void dn2f_ep_reset(struct dn2f_ep *ep, uint64_t new_epoch)
{
    link_set_down(ep);
    reset_all_peers(ep, DN2F_DROP_PEER_RESET);
    ep->epoch = new_epoch ? new_epoch : dn2f_random_u64();
    ep->sw_epoch = 0;
    ep->blocked_until = 0;
    ep->hello_due = now(ep);
}

int dn2f_ep_mcast_join(struct dn2f_ep *ep, uint16_t group_lid)
{
    unsigned i;
    if (!dn2f_lid_is_mcast(group_lid)) {
        return -EINVAL;
    }
    for (i = 0; i < ep->njoins; i++) {
        if (ep->joins[i] == group_lid) {
            return 0;
        }
    }
    if (ep->njoins >= MAX_JOINS) {
        return -ENOSPC;
    }
    ep->joins[ep->njoins++] = group_lid;
    if (ep->link == DN2F_LINK_UP) {
        send_ctrl(ep, DN2F_T_MCAST_JOIN, group_lid, 0);
    }
    return 0;
}

int dn2f_ep_mcast_leave(struct dn2f_ep *ep, uint16_t group_lid)
{
    unsigned i;
    for (i = 0; i < ep->njoins; i++) {
        if (ep->joins[i] == group_lid) {
            ep->joins[i] = ep->joins[--ep->njoins];
            if (ep->link == DN2F_LINK_UP) {
                send_ctrl(ep, DN2F_T_MCAST_LEAVE, group_lid, 0);
            }
            return 0;
        }
    }
    return -ENOENT;
}

enum dn2f_link dn2f_ep_link(const struct dn2f_ep *ep) { return ep->link; }
unsigned dn2f_ep_refusal(const struct dn2f_ep *ep) { return ep->refusal; }
uint16_t dn2f_ep_lid(const struct dn2f_ep *ep) { return ep->lid; }
uint64_t dn2f_ep_epoch(const struct dn2f_ep *ep) { return ep->epoch; }
int dn2f_ep_route_mode(const struct dn2f_ep *ep) { return ep->mode; }
const struct dn2f_ep_stats *dn2f_ep_stats(const struct dn2f_ep *ep) { return &ep->st; }

bool dn2f_ep_idle(const struct dn2f_ep *ep)
{
    const struct peer *p;
    if (ep->mc_nrecs) {
        return false;
    }
    for (p = ep->plist; p; p = p->next) {
        unsigned l;
        for (l = 0; l < DN2F_NUM_LANES; l++) {
            if (p->ln[l].una != p->ln[l].end) {
                return false;
            }
        }
    }
    return true;
}

unsigned dn2f_ep_pending(const struct dn2f_ep *ep, uint16_t lid)
{
    const struct peer *p;
    unsigned l, n = 0;
    if (!dn2_lid_assignable(lid)) {
        return 0;
    }
    p = ep->peers[dn2f_lid_index(lid)];
    if (!p) {
        return 0;
    }
    for (l = 0; l < DN2F_NUM_LANES; l++) {
        n += (unsigned)(p->ln[l].end - p->ln[l].una);
    }
    return n;
}

unsigned dn2f_ep_group_members(struct dn2f_ep *ep, uint16_t group_lid)
{
    struct peer *m[DN2F_MCAST_MAX_MEMBERS];
    if (!dn2f_lid_is_mcast(group_lid)) {
        return 0;
    }
    return group_members(ep, group_lid, m);
}
