/* SPDX-License-Identifier: MIT */
/*
 * dn2fab: the DIMMnet-2 emulated fabric ("InfiniBand" carried over UDP).
 *
 * Plain C11 + POSIX socket types; no GLib, no QEMU.  Used by the QEMU device
 * (hw/dimmnet2/dimmnet2-port.c), the switch / subnet-manager daemon
 * (fabric/daemon/dn2-switch.c), the tests and the fuzzer.
 *
 * Three layers:
 *   1. wire format: encode / decode of fabric datagrams (every field of a
 *      received datagram is validated; decode never reads out of bounds);
 *   2. the endpoint ("board side"), struct dn2f_ep: link management with
 *      the switch, end-to-end reliable, in-order, exactly-once delivery of
 *      DIMMnet-2 packets per peer, credit back-pressure, multicast;
 *   3. the switch core, struct dn2f_sw, in dn2fab-sw.h.
 *
 * None of it owns a socket or a timer: the caller passes received datagrams
 * in, gets datagrams to send through a callback, and drives time with
 * dn2f_ep_next_deadline() / dn2f_ep_tick().  Single-threaded: the caller
 * serialises all calls on one endpoint.
 *
 * docs/fabric.md is the reference (wire tables, reliability design).
 */
#ifndef DN2FAB_H
#define DN2FAB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/socket.h>
#include <netinet/in.h>

#include "dimmnet2/dn2_abi.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ======================================================================
 * 1. Wire format (all multi-byte fields little-endian)
 * ====================================================================== */
#define DN2F_MAGIC            0x46324e44u   /* bytes 'D' 'N' '2' 'F' */
#define DN2F_VERSION          4             /* 4: DATA timestamps echoed in ACKs; 3: request
                                             * lanes (docs/fabric.md) */
#define DN2F_HDR_LEN          40
#define DN2F_DGRAM_MAX        65507         /* largest UDP payload (IPv4) */
#define DN2F_DGRAM_DEFAULT    61440         /* default batching limit */
#define DN2F_PKT_MIN          8             /* a DIMMnet-2 packet: >= the 1st DW */
#define DN2F_PKT_MAX          4096          /* Packet Size is 12 bits, 0 = 4096 */
#define DN2F_MCAST_MAX_MEMBERS 64           /* members per group */
#define DN2F_NUM_GROUPS       (DN2_CLID_MCAST_LAST - DN2_CLID_MCAST_FIRST + 1)
#define DN2F_SACK_MAX_BITS    1024
#define DN2F_ROUTES_MAX_CHUNKS 256
#define DN2F_CHUNK_BYTES      8192          /* ROUTES / STATS_RESP body budget */
#define DN2F_INITIAL_CREDIT   64            /* packets a sender may send before the first ACK */
#define DN2F_NUM_CLID         4096
#define DN2F_REC_HDR_LEN      8
#define DN2F_MEMBER_LEN       24
#define DN2F_ROUTE_LEN        52            /* + the member's sealed token */
#define DN2F_ACK_HDR_LEN      16            /* + the SACK bitmap (version 3: 12, no echo) */
#define DN2F_DATA_TS_LEN      4             /* a DATA body starts with the sender's u32 timestamp */
#define DN2F_PORTSTAT_LEN     92
#define DN2F_NUM_LANES        4             /* reliable streams per peer pair: */
#define DN2F_LANE_REQ         2             /* lane = DWID + DN2F_LANE_REQ * request */
#define DN2F_REQ_AFTER_LEN    4             /* a request record's "after" field */
#define DN2F_HELLO_LEN        48            /* HELLO body: padded to the ASSIGN's size */
#define DN2F_ASSIGN_LEN       48
#define DN2F_KEEPALIVE_LEN    32
#define DN2F_TICKET_LEN       16
#define DN2F_TOKEN_LEN        16
#define DN2F_STATS_REQ_MIN    1024          /* a STATS_REQ is padded to this (no amplifier) */
#define DN2F_MAC_LEN          16            /* HMAC-SHA256 truncated, trailer of flag MAC */
#define DN2F_STATS_HDR_LEN    80
#define DN2F_STATS_VT_LEN     32            /* STATS_RESP flag DN2F_STATS_F_VT: after the header */
#define DN2F_VT_LEN           16            /* a DATA record's virtual-time part (DN2F_RF_VT) */
#define DN2F_VT_REPORT_LEN    32
#define DN2F_VT_GRANT_LEN     40
#define DN2F_VT_INFINITY      UINT64_MAX    /* a grant that never stops a board */

enum dn2f_type {
    DN2F_T_HELLO = 1,       /* board -> switch: GUID, LID hint, epoch */
    DN2F_T_ASSIGN = 2,      /* switch -> board: LID, link state, routing mode */
    DN2F_T_ROUTES = 3,      /* switch -> board: LID table + multicast groups (chunked) */
    DN2F_T_DATA = 4,        /* one or more DIMMnet-2 packets (+ optional ACK block) */
    DN2F_T_ACK = 5,         /* cumulative ACK + SACK bitmap + credit limit */
    DN2F_T_KEEPALIVE = 6,   /* board <-> switch: routes generation */
    DN2F_T_BYE = 7,         /* leaving (board) / shutting down or "re-HELLO" (switch) */
    DN2F_T_STATS_REQ = 8,   /* anyone -> switch */
    DN2F_T_STATS_RESP = 9,  /* switch -> requester (chunked) */
    DN2F_T_MCAST_JOIN = 10, /* board -> switch */
    DN2F_T_MCAST_LEAVE = 11,
    DN2F_T_VT_REPORT = 12,  /* board -> switch: virtual clock, earliest send (virtual time) */
    DN2F_T_VT_GRANT = 13,   /* switch -> board: the horizon it may run to (virtual time) */
    DN2F_T_MAX
};

/* Header flags. */
#define DN2F_F_ACK            0x0001  /* DATA: an ACK block precedes the records */
#define DN2F_F_ACKREQ         0x0002  /* DATA/ACK: please answer with an ACK (probe) */
#define DN2F_F_MAC            0x0004  /* any type: a DN2F_MAC_LEN-byte MAC trailer (secret) */
#define DN2F_F_ALL            0x0007

/* DATA record kinds and flags. */
enum dn2f_rec_kind {
    DN2F_REC_UNICAST = 0,       /* to the datagram's dst LID, seq in its stream */
    DN2F_REC_MCAST_ORIGIN = 1,  /* sender -> switch: packet + per-member seqs */
    DN2F_REC_MCAST_COPY = 2,    /* a multicast packet in a member's stream */
};
#define DN2F_RF_RETX          0x01    /* a retransmission (statistics only) */
#define DN2F_RF_LANE1         0x02    /* the packet's DWID is 1 (lane 1 or 3) */
#define DN2F_RF_REQ           0x04    /* request lane (2 + DWID): an RVL-family packet,
                                       * unicast only; a u32 "after" follows the
                                       * record header */
#define DN2F_RF_VT            0x08    /* virtual time: a DN2F_VT_LEN-byte part (u64 vtime,
                                       * u32 vseq, u32 0) follows the kind's part; all
                                       * records of a datagram have it or none */
#define DN2F_RF_ALL           0x0f

enum dn2f_route_mode {
    DN2F_ROUTE_DIRECT = 1,      /* unicast board-to-board; multicast via switch */
    DN2F_ROUTE_SWITCH = 2,      /* everything via the switch */
};

/* BYE reasons. */
enum dn2f_bye_reason {
    DN2F_BYE_LEAVING = 0,       /* board shuts down */
    DN2F_BYE_SHUTDOWN = 1,      /* switch shuts down */
    DN2F_BYE_UNKNOWN = 2,       /* switch: who are you?  (HELLO again) */
    /* Refusals of a HELLO / join (the board stays down and keeps trying): */
    DN2F_BYE_GUID_IN_USE = 3,   /* a live port of another address has this GUID */
    DN2F_BYE_AUTH = 4,          /* authentication failed: secret missing / different */
    DN2F_BYE_FULL = 5,          /* no LID left, or too many ports from this host */
    DN2F_BYE_MAX
};
const char *dn2f_bye_name(unsigned reason);

/* Decode errors (negative return of dn2f_decode). */
enum dn2f_err {
    DN2F_OK = 0,
    DN2F_E_SHORT = 1,       /* shorter than the header or than its length field */
    DN2F_E_MAGIC,
    DN2F_E_VERSION,
    DN2F_E_TYPE,
    DN2F_E_LENGTH,          /* length field != datagram length, or too large */
    DN2F_E_FLAGS,
    DN2F_E_RESERVED,        /* a reserved / pad field is not zero */
    DN2F_E_FIELD,           /* a field out of range */
    DN2F_E_TRUNC,           /* body truncated (records, entries...) */
    DN2F_E_MAX
};
const char *dn2f_strerror(int err);
const char *dn2f_type_name(unsigned type);

/* A socket address (IPv4 or IPv6). */
struct dn2f_addr {
    socklen_t len;              /* 0 = unset */
    union {
        struct sockaddr sa;
        struct sockaddr_in in;
        struct sockaddr_in6 in6;
        struct sockaddr_storage ss;
    } u;
};

/* "1.2.3.4:5", "[::1]:5", "localhost:5" (port 0 allowed).  0 or -errno. */
int dn2f_addr_parse(struct dn2f_addr *a, const char *s);
/* Equal host and port; an IPv4-mapped IPv6 address equals its IPv4 form. */
bool dn2f_addr_equal(const struct dn2f_addr *a, const struct dn2f_addr *b);
/* Same host address, any port (an IPv4-mapped IPv6 address is its IPv4). */
bool dn2f_addr_same_host(const struct dn2f_addr *a, const struct dn2f_addr *b);
/* A loopback address: 127.0.0.0/8, ::1 or ::ffff:127.x. */
bool dn2f_addr_loopback(const struct dn2f_addr *a);
const char *dn2f_addr_str(const struct dn2f_addr *a, char *buf, size_t n);
uint16_t dn2f_addr_port(const struct dn2f_addr *a);
void dn2f_addr_from_sa(struct dn2f_addr *a, const struct sockaddr *sa, socklen_t len);
/* Non-blocking UDP socket bound to *bind (and *bind updated with the real
 * port), with SO_RCVBUF/SO_SNDBUF of bufsize (0 = 4 MiB).  fd or -errno. */
int dn2f_udp_open(struct dn2f_addr *bind, int bufsize);

/* Datagram header. */
struct dn2f_hdr {
    uint8_t  version;
    uint8_t  type;
    uint16_t flags;
    uint16_t src_lid;
    uint16_t dst_lid;
    uint32_t length;            /* whole datagram, header included */
    uint64_t src_epoch;
    uint64_t dst_epoch;         /* the receiver's epoch as the sender knows it */
    /* DATA / ACK between boards: the sender's session toward the receiver
     * (nonzero) and the receiver's as the sender knows it (0 = not yet).
     * A session is renewed whenever a side resets its state toward the
     * other, so both sides always reset together.  0 in other types. */
    uint32_t src_sess;
    uint32_t dst_sess;
};

struct dn2f_ack {
    uint8_t  lane;              /* the stream it acknowledges (0..DN2F_NUM_LANES-1) */
    uint32_t cum;               /* next sequence number expected */
    uint32_t limit;             /* the sender may send seqs < limit (credits) */
    uint16_t nbits;             /* SACK bits (multiple of 32): bit i = cum+1+i received */
    const uint8_t *bits;
    /* The newest DATA timestamp (struct dn2f_msg u.data.ts, the sender's
     * clock) of the datagrams that brought this lane a packet the receiver
     * had not got before; 0 = none yet.  A sender whose packet was
     * retransmitted on a timeout at time T learns from an echo older than
     * T that an earlier transmission arrived: the timeout was spurious. */
    uint32_t echo;
};

/* The ACK blocks of one datagram: 1..DN2F_NUM_LANES, distinct lanes. */
struct dn2f_acks {
    unsigned n;
    struct dn2f_ack a[DN2F_NUM_LANES];
};

struct dn2f_hello {
    uint64_t guid;
    uint16_t lid_hint;
};

/* A join ticket: the switch's MAC over (GUID, epoch, LID, address, time).
 * The switch keeps no state for a HELLO: the board proves it receives at
 * its address by returning the ticket in its first KEEPALIVE. */
struct dn2f_ticket {
    uint32_t time;              /* switch seconds when issued */
    uint8_t  mac[DN2F_TICKET_LEN];
};

struct dn2f_assign {
    uint64_t guid;
    uint16_t lid;
    uint8_t  link_state;        /* DN2_SMA_LINK_READY when usable */
    uint8_t  route_mode;
    struct dn2f_ticket ticket;
    uint8_t  token[DN2F_TOKEN_LEN];     /* with a secret: the per-join token (sealed) */
};

struct dn2f_keepalive {
    uint32_t gen;               /* routes generation (board: the one it has) */
    uint64_t guid;              /* board, while joining: its GUID ... */
    struct dn2f_ticket ticket;  /* ... and the ASSIGN's ticket; else 0 */
};

/* A multicast origin record's member entry. */
struct dn2f_member {
    uint16_t lid;
    uint32_t seq;               /* in the member's stream of the record's lane */
    uint64_t epoch;
    uint32_t src_sess, dst_sess;        /* the header sessions of the member's copy */
};

struct dn2f_route {
    uint16_t lid;
    uint8_t  flags;             /* DN2F_RT_* */
    struct dn2f_addr addr;      /* unset when family 0 */
    uint64_t epoch;
    uint8_t  token[DN2F_TOKEN_LEN];     /* with a secret: the member's token, sealed */
};
#define DN2F_RT_DIRECT        0x01    /* addr is usable for direct sends */

struct dn2f_portstat {
    uint16_t lid;
    uint8_t  state;             /* 1 = active, 2 = gone */
    struct dn2f_addr addr;
    uint64_t guid, epoch;
    uint64_t rx_pkts, rx_bytes, tx_pkts, tx_bytes, drops, retx;
};

struct dn2f_swsummary {
    uint8_t  route_mode;
    uint32_t routes_gen;
    uint64_t uptime_ms;
    uint64_t dgrams_in, dgrams_fwd, bad;
    uint64_t inj_drop, inj_dup, inj_reorder, inj_delay;
    /* A switch in virtual-time mode (STATS_RESP flag DN2F_STATS_F_VT): */
    bool     vt;
    uint32_t vt_boards;         /* boards in the sync set */
    uint64_t vt_reports, vt_grants;     /* REPORTs taken (new ones), GRANTs sent */
    uint64_t vt_time;           /* the cluster's virtual time: min over boards of earliest */
};
#define DN2F_STATS_F_VT       0x01  /* STATS_RESP: a virtual-time block follows the header */

/* VT_REPORT: board -> switch.  The board's virtual clock is at now (ns)
 * and it sends no packet with a virtual time before earliest (>= now). */
struct dn2f_vt_report {
    uint32_t rseq;              /* +1 per new report of this board (wraps) */
    uint64_t now, earliest;
};

/* VT_GRANT: switch -> board.  The board may run its virtual clock up to
 * horizon; lookahead / quantum are the switch's L and Q; slowest = min
 * over the boards of their earliest (the cluster's virtual time). */
struct dn2f_vt_grant {
    uint32_t rseq;              /* the newest REPORT of this board the switch has */
    uint64_t horizon;
    uint32_t lookahead_ns, quantum_ns;
    uint64_t slowest;
};

/* A view into a validated datagram's variable part. */
struct dn2f_iter {
    const uint8_t *p, *end;
    unsigned left;              /* ROUTES: routes then groups */
    unsigned left2;
};

struct dn2f_rec {
    uint32_t seq;
    uint16_t len;               /* packet bytes */
    uint8_t  kind;              /* enum dn2f_rec_kind */
    uint8_t  rflags;
    uint8_t  lane;              /* from rflags: DWID + 2 * REQ (validated against the
                                 * packet's DWID and TYPE) */
    uint32_t after;             /* REQ: the sender's next seq in the data lane of
                                 * the same DWID when it queued the request */
    uint16_t group;             /* MCAST_*: the group LID */
    uint16_t nmemb;             /* MCAST_ORIGIN: members */
    const uint8_t *members;     /* nmemb x DN2F_MEMBER_LEN bytes: see dn2f_rec_member() */
    const uint8_t *pkt;
    /* DN2F_RF_VT: the virtual ns at which the receiving board delivers
     * it, and the sender board's counter of vt packets (0 without VT). */
    uint64_t vtime;
    uint32_t vseq;
};

struct dn2f_msg {
    struct dn2f_hdr h;
    const uint8_t *mac;         /* flag MAC: the trailer (covers bytes [0, mac)) */
    union {
        struct dn2f_hello hello;
        struct dn2f_assign assign;
        struct {
            uint32_t gen;
            uint16_t chunk, nchunks, nroutes, ngroups;
            const uint8_t *body;
            size_t body_len;
        } routes;
        struct {
            struct dn2f_acks acks;  /* n = 0 unless the ACK flag is set */
            unsigned nrecs;
            uint8_t kinds;      /* bit (1 << kind) for each kind present */
            const uint8_t *recs;
            size_t recs_len;
            uint32_t ts;        /* the sender's timestamp (us, wrapping; 0 = none) */
            bool vt;            /* every record has DN2F_RF_VT (else none has) */
        } data;
        struct dn2f_acks acks;  /* type ACK */
        struct dn2f_keepalive keepalive;
        struct { uint32_t reason; } bye;
        struct { uint32_t cookie; uint16_t chunk; } stats_req;
        struct {
            uint32_t cookie;
            uint16_t chunk, nchunks, nports;
            struct dn2f_swsummary sum;
            const uint8_t *ports;
        } stats;
        struct { uint16_t group; } mcast;
        struct dn2f_vt_report vt_report;
        struct dn2f_vt_grant vt_grant;
    } u;
};

/* Decode and validate a whole datagram.  0 or -enum dn2f_err.  On success
 * the iterators below walk the variable parts without further checks. */
int dn2f_decode(const void *buf, size_t len, struct dn2f_msg *m);

void dn2f_data_iter(const struct dn2f_msg *m, struct dn2f_iter *it);
bool dn2f_data_next(struct dn2f_iter *it, struct dn2f_rec *r);
void dn2f_rec_member(const struct dn2f_rec *r, unsigned i,
                     uint16_t *lid, uint32_t *seq, uint64_t *epoch);
void dn2f_rec_member_full(const struct dn2f_rec *r, unsigned i, struct dn2f_member *m);
bool dn2f_ack_sacked(const struct dn2f_ack *a, unsigned i);

void dn2f_routes_iter(const struct dn2f_msg *m, struct dn2f_iter *it);
bool dn2f_routes_next_route(struct dn2f_iter *it, struct dn2f_route *r);
/* After all routes: groups.  members points at n little-endian u16 LIDs. */
bool dn2f_routes_next_group(struct dn2f_iter *it, uint16_t *group,
                            uint16_t *n, const uint8_t **members);

void dn2f_stats_iter(const struct dn2f_msg *m, struct dn2f_iter *it);
bool dn2f_stats_next(struct dn2f_iter *it, struct dn2f_portstat *ps);

/* --- encoding -------------------------------------------------------- */
struct dn2f_wbuf {
    uint8_t *p;
    size_t cap, len;
    bool overflow;
};
void dn2f_wbuf_init(struct dn2f_wbuf *b, void *mem, size_t cap);
/* Header (length patched by dn2f_finish), sessions 0.  For DATA also the
 * body's timestamp field (0 = none; dn2f_data_set_ts() sets it). */
void dn2f_put_hdr(struct dn2f_wbuf *b, unsigned type, unsigned flags,
                  uint16_t src, uint16_t dst, uint64_t src_epoch, uint64_t dst_epoch);
/* Set the header's sessions (DATA / ACK between boards). */
void dn2f_hdr_set_sessions(struct dn2f_wbuf *b, uint32_t src_sess, uint32_t dst_sess);
/* DATA: set the timestamp (the sender's clock in us, wrapping, 0 = none;
 * see dn2f_ts_us()) of a datagram begun with dn2f_put_hdr(). */
void dn2f_data_set_ts(struct dn2f_wbuf *b, uint32_t ts);
/* The timestamp of ns (a monotonic clock): its microseconds modulo 2^32,
 * never 0 (0 means "no timestamp"). */
uint32_t dn2f_ts_us(uint64_t ns);
/* Patch the length field; returns the datagram length, 0 on overflow. */
size_t dn2f_finish(struct dn2f_wbuf *b);
/* The same with a MAC trailer: sets flag MAC, appends HMAC-SHA256(key,
 * datagram) truncated to DN2F_MAC_LEN.  key: a struct dn2f_hmac_key
 * (dn2fab-hmac.h).  A builder that fills its buffer to the cap initializes
 * it with cap = room - DN2F_MAC_LEN; the trailer then uses that room. */
struct dn2f_hmac_key;
size_t dn2f_finish_mac(struct dn2f_wbuf *b, const struct dn2f_hmac_key *key);
/* A decoded datagram with flag MAC: is its trailer right for key? */
bool dn2f_mac_ok(const void *buf, const struct dn2f_msg *m, const struct dn2f_hmac_key *key);
void dn2f_put_hello(struct dn2f_wbuf *b, const struct dn2f_hello *h);
void dn2f_put_assign(struct dn2f_wbuf *b, const struct dn2f_assign *a);
void dn2f_put_routes_hdr(struct dn2f_wbuf *b, uint32_t gen, uint16_t chunk, uint16_t nchunks,
                         uint16_t nroutes, uint16_t ngroups);
void dn2f_put_route(struct dn2f_wbuf *b, const struct dn2f_route *r);
void dn2f_put_group(struct dn2f_wbuf *b, uint16_t group, uint16_t n, const uint16_t *lids);
size_t dn2f_group_len(unsigned n);
/* ACK block of one lane; more: another block follows.  bits may be NULL
 * when nbits == 0 (nbits: multiple of 32). */
void dn2f_put_ack(struct dn2f_wbuf *b, unsigned lane, bool more, uint32_t cum, uint32_t limit,
                  uint16_t nbits, const uint8_t *bits);
/* The same with the echoed timestamp (struct dn2f_ack.echo; dn2f_put_ack
 * writes 0 = none). */
void dn2f_put_ack_echo(struct dn2f_wbuf *b, unsigned lane, bool more, uint32_t cum,
                       uint32_t limit, uint32_t echo, uint16_t nbits, const uint8_t *bits);
size_t dn2f_ack_len(unsigned nbits);
/* A multicast origin record (members with their sessions). */
bool dn2f_put_origin(struct dn2f_wbuf *b, unsigned rflags, uint16_t group, unsigned nmemb,
                     const struct dn2f_member *m, const void *pkt, size_t len);
/* One DATA record; false (nothing written) if it does not fit.  (Kind 1
 * through here gets member sessions 0: use dn2f_put_origin.  With
 * DN2F_RF_REQ a kind-0 record gets after = 0: use dn2f_put_req.) */
bool dn2f_put_rec(struct dn2f_wbuf *b, unsigned kind, unsigned rflags, uint32_t seq,
                  uint16_t group, unsigned nmemb, const uint16_t *mlid,
                  const uint32_t *mseq, const uint64_t *mepoch,
                  const void *pkt, size_t len);
/* A unicast request record (kind 0, flag DN2F_RF_REQ added): after = the
 * sender's next sequence number in the data lane of the packet's DWID
 * toward the receiver when the request was queued; the receiver delivers
 * the request only once it has delivered that lane up to there. */
bool dn2f_put_req(struct dn2f_wbuf *b, unsigned rflags, uint32_t seq, uint32_t after,
                  const void *pkt, size_t len);
/* Any record from its description: kind, rflags (DN2F_RF_REQ: r->after is
 * written; DN2F_RF_VT: r->vtime, r->vseq), seq, group, nmemb members from
 * m (kind MCAST_ORIGIN only; may be NULL otherwise), r->pkt / r->len.
 * False (nothing written) if it does not fit. */
bool dn2f_put_record(struct dn2f_wbuf *b, const struct dn2f_rec *r, const struct dn2f_member *m);
size_t dn2f_rec_len(unsigned kind, unsigned nmemb, size_t len);   /* without REQ */
size_t dn2f_rec_len_rf(unsigned kind, unsigned rflags, unsigned nmemb, size_t len);
void dn2f_put_u32pair(struct dn2f_wbuf *b, uint32_t a, uint32_t c);   /* BYE */
void dn2f_put_keepalive(struct dn2f_wbuf *b, uint32_t gen, uint64_t guid,
                        const struct dn2f_ticket *t);                  /* t may be NULL */
/* STATS_REQ for one chunk, zero-padded so the datagram is total bytes. */
void dn2f_put_stats_req(struct dn2f_wbuf *b, uint32_t cookie, uint16_t chunk, size_t total);
void dn2f_put_mcast(struct dn2f_wbuf *b, uint16_t group);
void dn2f_put_vt_report(struct dn2f_wbuf *b, const struct dn2f_vt_report *r);
void dn2f_put_vt_grant(struct dn2f_wbuf *b, const struct dn2f_vt_grant *g);
/* The STATS_RESP virtual-time block (after dn2f_put_stats_hdr of a
 * summary with vt set; the header's flag is set from s->vt). */
void dn2f_put_stats_vt(struct dn2f_wbuf *b, const struct dn2f_swsummary *s);
void dn2f_put_stats_hdr(struct dn2f_wbuf *b, uint32_t cookie, uint16_t chunk, uint16_t nchunks,
                        uint16_t nports, const struct dn2f_swsummary *s);
void dn2f_put_portstat(struct dn2f_wbuf *b, const struct dn2f_portstat *ps);

/* Helpers on DIMMnet-2 packets and LIDs (via dn2_abi.h). */
uint16_t dn2f_pkt_dlid(const uint8_t *pkt);         /* 1st DW [47:32] */
unsigned dn2f_pkt_dwid(const uint8_t *pkt);         /* 1st DW bit 28 */
/* The lane of a packet (0..DN2F_NUM_LANES-1) from its 1st DW: DWID, plus
 * DN2F_LANE_REQ for an RVL-family TYPE (dn2_otype_is_rvl) to a unicast
 * DLID.  A packet to a multicast group always travels in a data lane.
 * Lanes 0/1: data for WID 0/1; lanes 2/3: RVL requests for WID 0/1. */
unsigned dn2f_h0_lane(uint64_t first_dw);
unsigned dn2f_pkt_lane(const uint8_t *pkt);         /* = dn2f_h0_lane(1st DW) */
/* The record flags (DN2F_RF_LANE1 | DN2F_RF_REQ) that name a lane. */
unsigned dn2f_lane_rflags(unsigned lane);
bool dn2f_lid_is_mcast(uint16_t lid);               /* a multicast group LID */
static inline unsigned dn2f_lid_index(uint16_t lid) { return dn2_lid_to_clid(lid); }

/* ======================================================================
 * 2. The endpoint (board side)
 * ====================================================================== */
enum dn2f_link {
    DN2F_LINK_DOWN = 0,         /* no switch: sending HELLO */
    DN2F_LINK_ASSIGNED,         /* LID assigned, waiting for the routing table */
    DN2F_LINK_UP,               /* ready to communicate (SMA [17:16] = 11) */
};

struct dn2f_ep_ops {
    /* Monotonic time in ns. */
    uint64_t (*now_ns)(void *opaque);
    /* Send one datagram; 0, or -errno (-EAGAIN: socket full, retried later). */
    int (*send_datagram)(void *opaque, const struct dn2f_addr *to, const void *buf, size_t len);
    /* An in-order packet from slid: 0 = consumed; -EBUSY = board full, keep
     * it and stop delivering from this peer until dn2f_ep_resume(); any
     * other negative value = consumed but refused (counted as a drop). */
    int (*deliver)(void *opaque, uint16_t slid, const uint8_t *pkt, size_t len);
    /* Link transitions (up = ready to communicate). */
    void (*link_state)(void *opaque, bool up, uint16_t lid);
    /* Optional: the switch refused this board's join (reason: enum
     * dn2f_bye_reason, e.g. DN2F_BYE_GUID_IN_USE; dn2f_bye_name() says it
     * in words).  Called when the reason changes, not on every retry; the
     * board keeps trying.  dn2f_ep_refusal() returns the current one. */
    void (*refused)(void *opaque, unsigned reason);
    /* Virtual time (config vtime): an in-order packet that carries a
     * virtual delivery time (vtime, ns) and its sender's vt counter (vseq),
     * used instead of deliver() for records with DN2F_RF_VT.  Same return
     * convention as deliver().  NULL: such packets go to deliver(). */
    int (*deliver_vt)(void *opaque, uint16_t slid, const uint8_t *pkt, size_t len,
                      uint64_t vtime, uint32_t vseq);
    /* Virtual time: a grant raised this board's horizon (the virtual ns it
     * may run to; DN2F_VT_INFINITY = no limit), and tells the switch's
     * lookahead L and quantum Q and the cluster's slowest clock. */
    void (*vt_grant)(void *opaque, uint64_t horizon, uint32_t lookahead_ns, uint32_t quantum_ns,
                     uint64_t slowest);
};

struct dn2f_ep_config {
    uint64_t guid;              /* board GUID: nonzero, stable across restarts */
    uint64_t epoch;             /* incarnation; 0 = random */
    uint16_t lid_hint;          /* LID wanted (0 = any) */
    struct dn2f_addr sw;        /* the switch */
    int sock_family;            /* AF_INET / AF_INET6 of the caller's socket (0 = sw's) */
    uint32_t tx_window;         /* packets in the send queue per peer (power of 2, 64..4096) */
    uint32_t rx_window;         /* credits per peer (power of 2, 64..4096) */
    uint32_t max_dgram;         /* batching limit (bytes, 1024..DN2F_DGRAM_MAX) */
    size_t tx_budget;           /* bytes queued for sending, all peers */
    size_t rx_budget;           /* bytes buffered on receive, all peers */
    uint64_t rto_min_ns, rto_max_ns, rto_init_ns;
    uint64_t ack_delay_ns;      /* 0 = ACK at the end of each input call */
    uint64_t hello_interval_ns;
    uint64_t keepalive_ns;
    uint64_t keepalive_timeout_ns;  /* switch silent this long: link down */
    uint64_t peer_grace_ns;     /* a peer missing from the routes is kept this long */
    /* Optional cluster secret (docs/security.md): the same bytes as the
     * switch's --secret-file (trailing newline stripped).  NULL / 0 = none.
     * Copied (keys derived) by dn2f_ep_new; the caller may free it after. */
    const uint8_t *secret;
    size_t secret_len;
    /* Lock-step virtual time (docs/fabric.md "Virtual time"): packets may
     * carry a virtual delivery time (dn2f_ep_send_vt), the board reports
     * its clock to the switch (dn2f_ep_vt_report) and gets grants; ACKs
     * are never delayed (ack_delay_ns is taken as 0). */
    bool vtime;
    uint64_t vt_retry_ns;       /* a report is re-sent this often until granted (20 ms) */
};
void dn2f_ep_config_default(struct dn2f_ep_config *c);

/* Drops, by reason (struct dn2f_ep_stats.drop[]). */
enum dn2f_drop {
    DN2F_DROP_BAD_DGRAM = 0,    /* failed dn2f_decode */
    DN2F_DROP_NOT_FOR_US,       /* dst LID / type not for a board */
    DN2F_DROP_FORGED,           /* source address does not match the claimed LID */
    DN2F_DROP_UNKNOWN_PEER,     /* LID not in the routing table */
    DN2F_DROP_STALE_EPOCH,      /* src or dst epoch does not match */
    DN2F_DROP_BAD_ACK,          /* ACK outside the send window */
    DN2F_DROP_BAD_DLID,         /* packet DLID does not match the record */
    DN2F_DROP_WINDOW,           /* seq beyond the credits granted */
    DN2F_DROP_NO_BUFFER,        /* rx budget exhausted (will be retransmitted) */
    DN2F_DROP_NO_ROUTE,         /* send to a LID not in the routing table */
    DN2F_DROP_DELIVER_ERR,      /* deliver() refused (other than -EBUSY) */
    DN2F_DROP_PEER_GONE,        /* queued packets of a peer that left */
    DN2F_DROP_PEER_RESET,       /* queued packets of a peer that restarted / our LID changed */
    DN2F_DROP_NOT_READY,        /* data while the link is not up */
    DN2F_DROP_STALE_SESSION,    /* DATA/ACK of an older session of the pair */
    DN2F_DROP_AUTH,             /* MAC missing / wrong (secret), or MAC without a secret */
    DN2F_DROP_MAX
};
const char *dn2f_drop_name(unsigned reason);

struct dn2f_ep_stats {
    uint64_t tx_pkts, tx_bytes;         /* packets accepted by dn2f_ep_send */
    uint64_t rx_pkts, rx_bytes;         /* packets delivered */
    uint64_t tx_dgrams, rx_dgrams;
    uint64_t tx_data_dgrams, tx_ack_dgrams, tx_ctrl_dgrams;
    uint64_t retransmits;               /* packets retransmitted */
    uint64_t fast_retransmits;
    uint64_t timeouts;                  /* RTO expiries */
    uint64_t duplicates;                /* packets received twice */
    uint64_t out_of_order;              /* packets buffered ahead of a hole */
    uint64_t busy;                      /* deliver() returned -EBUSY */
    uint64_t send_eagain;
    uint64_t mcast_tx;                  /* multicast packets sent */
    uint64_t link_ups, link_downs;
    uint64_t drop[DN2F_DROP_MAX];
    uint64_t refusals;                  /* joins refused by the switch (any reason) */
    uint64_t session_resets;            /* a peer renewed its session: state toward it reset */
    uint64_t req_held;                  /* requests that waited for data sent before them */
    /* Appended with the echoed timestamps (wire version 4): */
    uint64_t spurious_timeouts;         /* RTO expiries the ACK showed needless (the
                                         * original had arrived): window restored,
                                         * the peer's RTO floor raised */
    uint64_t spurious_retransmits;      /* retransmitted packets whose ACK showed an
                                         * earlier transmission had arrived */
    uint64_t rto_floor_ns;              /* the RTO floor a spurious timeout set last (0 = none yet) */
    /* Appended with the join checks: */
    uint64_t bye_probes;                /* BYE "unknown" while joined: checked with a
                                         * KEEPALIVE before the link goes down */
    uint64_t stale_routes;              /* routes that would move a peer back to an
                                         * epoch it had before: refused */
    /* Appended with virtual time: */
    uint64_t vt_reports_tx;             /* VT_REPORT datagrams sent (new and re-sent) */
    uint64_t vt_grants_rx;              /* VT_GRANT datagrams taken */
    uint64_t vt_reports_held;           /* reports that waited for ACKs of sent packets */
    uint64_t vt_ack_probes;             /* ACKREQ probes a held report sent */
    uint64_t vt_pkts_tx, vt_pkts_rx;    /* packets with a virtual time sent / delivered */
    /* Appended with lowering reports: */
    uint64_t vt_lowering_reports;       /* reports that lowered earliest at the same now */
    uint64_t vt_ack_holds;              /* ACK holds (a lowering report, until answered) */
    uint64_t vt_ack_hold_ns;            /* wall time spent in ACK holds (ended ones) */
};

struct dn2f_ep;

struct dn2f_ep *dn2f_ep_new(const struct dn2f_ep_config *cfg,
                            const struct dn2f_ep_ops *ops, void *opaque);
/* Sends BYE to the switch (once: not again after dn2f_ep_leave) and frees
 * everything. */
void dn2f_ep_free(struct dn2f_ep *ep);
/* The board's process ends: BYE to the switch now, so that it takes the
 * port (and, under virtual time, the board's place in the sync set) at once
 * instead of after its port timeout.  The endpoint stays valid; nothing
 * else is sent after it.  Idempotent. */
void dn2f_ep_leave(struct dn2f_ep *ep);
/* Board reset: drop everything, new epoch (0 = random), HELLO again. */
void dn2f_ep_reset(struct dn2f_ep *ep, uint64_t new_epoch);

/* Can a packet of len bytes to dlid be queued now?  False while the link is
 * not up, or when the window / credits / budget toward dlid (any member, for
 * a multicast LID) are exhausted, or while dlid is a peer that has left the
 * routing table within peer_grace_ns.  True for a LID that is not routable
 * (dn2f_ep_send then drops it, as the real switch would). */
bool dn2f_ep_can_send(struct dn2f_ep *ep, uint16_t dlid, size_t len);
/* The same for one lane only (lane = dn2f_h0_lane() of the packet's 1st DW:
 * 0/1 data for WID 0/1, 2/3 RVL-family requests for WID 0/1): a lane held
 * back by the receiver (credits) does not make the other lanes' packets
 * wait; in particular requests refused by a full RC FIFO never hold up
 * data (the answers).  dn2f_ep_can_send() is true only when every lane
 * has room, so a caller that does not know the lane yet stays safe.  For
 * a multicast dlid, lanes 2/3 mean the data lanes 0/1 (multicast always
 * travels in data lanes). */
bool dn2f_ep_can_send_lane(struct dn2f_ep *ep, uint16_t dlid, unsigned lane, size_t len);
/* Queue one DIMMnet-2 packet (DN2F_PKT_MIN..DN2F_PKT_MAX bytes; its 1st DW
 * DLID must equal dlid) in its lane (dn2f_pkt_lane).  A request is
 * delivered after every data packet queued before it to the same peer and
 * DWID (read after write); data may overtake a request.  Copies pkt.  0, -EAGAIN (cannot send now: not
 * queued), -EINVAL, -EHOSTUNREACH (no route: dropped and counted). */
int dn2f_ep_send(struct dn2f_ep *ep, uint16_t dlid, const void *pkt, size_t len);
/* Transmit what is queued (batched, up to max_dgram per datagram), and
 * pending ACKs.  Call after a burst of dn2f_ep_send(). */
void dn2f_ep_flush(struct dn2f_ep *ep);
/* A datagram from the socket.  Ends with a flush. */
void dn2f_ep_input(struct dn2f_ep *ep, const struct dn2f_addr *from, const void *buf, size_t len);
/* The same without the flush, for a caller that feeds a burst of datagrams
 * and may answer them (queue packets with dn2f_ep_send) before it calls
 * dn2f_ep_flush() once: the ACKs for the burst then ride on the answer
 * instead of leaving ahead of it as datagrams of their own.  The caller
 * must flush before it sleeps. */
void dn2f_ep_input_noflush(struct dn2f_ep *ep, const struct dn2f_addr *from, const void *buf,
                           size_t len);
/* The board has room again: retry deliveries refused with -EBUSY. */
void dn2f_ep_resume(struct dn2f_ep *ep);
/* Absolute time (now_ns clock) of the next dn2f_ep_tick(); UINT64_MAX = none. */
uint64_t dn2f_ep_next_deadline(struct dn2f_ep *ep);
/* Timers: HELLO / keepalive / switch loss / retransmission / probes. */
void dn2f_ep_tick(struct dn2f_ep *ep);

/* Virtual time (config vtime; docs/fabric.md "Virtual time").
 * dn2f_ep_send_vt: as dn2f_ep_send, the record carries vtime (the virtual
 * ns at which the receiver delivers it) and vseq (this board's counter of
 * vt packets); -EINVAL without config vtime. */
int dn2f_ep_send_vt(struct dn2f_ep *ep, uint16_t dlid, const void *pkt, size_t len,
                    uint64_t vtime, uint32_t vseq);
/* Report this board's virtual clock (now) and the earliest virtual time it
 * may send a packet at (>= now).  Recorded; sent to the switch once every
 * packet this board sent has been acknowledged (asking for ACKs with
 * ACKREQ when that takes long), and re-sent every vt_retry_ns until a
 * grant answers it and the horizon is beyond now.  The same (now,
 * earliest) again is not a new report.
 * A lowering report (the same now as the last report, a lower earliest:
 * a packet arrived that wakes the board before its promise) goes at once,
 * not held for this board's own unacknowledged packets, and no ACK leaves
 * this endpoint until a grant answers it (docs/fabric.md "Virtual time",
 * "Idle promises").  0, or -EINVAL (earliest < now, or no config vtime). */
int dn2f_ep_vt_report(struct dn2f_ep *ep, uint64_t now, uint64_t earliest);
/* The newest grant's horizon (0 = none yet). */
uint64_t dn2f_ep_vt_horizon(const struct dn2f_ep *ep);
/* Packets sent (queued) and not yet acknowledged (cumulatively or by
 * SACK), all peers and lanes. */
unsigned dn2f_ep_unacked(const struct dn2f_ep *ep);

/* Multicast membership wanted by this board (kept across switch restarts). */
int dn2f_ep_mcast_join(struct dn2f_ep *ep, uint16_t group_lid);
int dn2f_ep_mcast_leave(struct dn2f_ep *ep, uint16_t group_lid);
/* The members of multicast group group_lid in the switch's current routes
 * (where a packet to the group goes: this board's own LID too when it is a
 * member, as the switch delivers it), at most max into lids: their number
 * (0 for an unknown group or a unicast LID). */
unsigned dn2f_ep_group_lids(const struct dn2f_ep *ep, uint16_t group_lid, uint16_t *lids,
                            unsigned max);

enum dn2f_link dn2f_ep_link(const struct dn2f_ep *ep);
/* Why the switch refuses this board (enum dn2f_bye_reason, 0 = it does
 * not): DN2F_BYE_GUID_IN_USE, _AUTH, _FULL.  Cleared when the link comes up. */
unsigned dn2f_ep_refusal(const struct dn2f_ep *ep);
uint16_t dn2f_ep_lid(const struct dn2f_ep *ep);        /* 0 = none yet */
uint64_t dn2f_ep_epoch(const struct dn2f_ep *ep);
int dn2f_ep_route_mode(const struct dn2f_ep *ep);
const struct dn2f_ep_stats *dn2f_ep_stats(const struct dn2f_ep *ep);
/* True when nothing is queued or unacknowledged toward any peer. */
bool dn2f_ep_idle(const struct dn2f_ep *ep);
/* Packets received and acknowledged but not yet delivered, all peers and
 * lanes: an ACK also covers a packet the endpoint holds (its lane refused
 * by deliver() with -EBUSY until dn2f_ep_resume(), a request waiting for
 * its data, the link not up), so a sender can be idle while its packets
 * wait here.  Together with dn2f_ep_idle(): nothing in flight either way. */
unsigned dn2f_ep_rx_held(const struct dn2f_ep *ep);
/* Packets queued or in flight toward lid, all lanes (0 if unknown). */
unsigned dn2f_ep_pending(const struct dn2f_ep *ep, uint16_t lid);
/* Members of a multicast group in the current routing table (live peers). */
unsigned dn2f_ep_group_members(struct dn2f_ep *ep, uint16_t group_lid);

/* Small deterministic PRNG (splitmix64 seeded xoshiro256**), shared by the
 * switch's fault injection and the tests. */
struct dn2f_rng { uint64_t s[4]; };
void dn2f_rng_seed(struct dn2f_rng *r, uint64_t seed);
uint64_t dn2f_rng_next(struct dn2f_rng *r);
double dn2f_rng_unit(struct dn2f_rng *r);               /* [0, 1) */
uint64_t dn2f_random_u64(void);                          /* fresh randomness (epochs) */

/* The lock-step's grant rule (dn2fab-vt-rule.c), for the switch and the
 * same-host sync domain. */
/* Virtual time: the grants of n boards whose latest reports said
 * earliest e[0..n) (0 for a board that has not reported yet), with
 * lookahead L and quantum Q, into g[0..n):
 *   D(t) = ceil_Q(t + L)   (saturating; ceil_Q = identity when Q <= 1)
 *   S_i  = min(e_i, min_{k != i} D(e_k))
 *   g_j  = min_{i != j} D(S_i)
 * O(n): each min over "all but one" is the smallest value, or the second
 * smallest for the board that holds the smallest.  One board:
 * DN2F_VT_INFINITY.  Not monotone by itself (the switch keeps max()). */
void dn2f_vt_grants(const uint64_t *e, unsigned n, uint64_t lookahead, uint64_t quantum,
                    uint64_t *g);
uint64_t dn2f_vt_d(uint64_t t, uint64_t lookahead, uint64_t quantum);

#ifdef __cplusplus
}
#endif
#endif /* DN2FAB_H */
