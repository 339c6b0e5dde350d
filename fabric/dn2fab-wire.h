/* SPDX-License-Identifier: MIT */
/*
 * dn2fab internals: the layout of every wire record, once.
 *
 * Each record is a table of byte offsets (one enum per record, fields in
 * wire order, the width in the comment); the encoders (dn2fab-wire.c) and
 * the one decoder per record (dn2fab-wire-dec.c: used by the validating
 * dn2f_decode() and by the iterators alike) name their fields through these
 * tables and nothing else.  The record lengths (DN2F_*_LEN) are public, in
 * dn2fab.h; the static assertions below tie each table to its length.
 * docs/fabric.md draws the same tables.  All fields little-endian.
 */
#ifndef DN2FAB_WIRE_H
#define DN2FAB_WIRE_H

#include "dn2fab-int.h"

/* The datagram header (DN2F_HDR_LEN bytes), every type. */
enum dn2f_hdr_off {
    DN2F_O_HDR_MAGIC = 0,           /* u32 DN2F_MAGIC */
    DN2F_O_HDR_VERSION = 4,         /* u8 */
    DN2F_O_HDR_TYPE = 5,            /* u8 enum dn2f_type */
    DN2F_O_HDR_FLAGS = 6,           /* u16 DN2F_F_* */
    DN2F_O_HDR_SRC_LID = 8,         /* u16 */
    DN2F_O_HDR_DST_LID = 10,        /* u16 */
    DN2F_O_HDR_LENGTH = 12,         /* u32 the whole datagram */
    DN2F_O_HDR_SRC_EPOCH = 16,      /* u64 */
    DN2F_O_HDR_DST_EPOCH = 24,      /* u64 */
    DN2F_O_HDR_SRC_SESS = 32,       /* u32 */
    DN2F_O_HDR_DST_SESS = 36,       /* u32 */
};

/* DATA body: the timestamp, then the ACK blocks (flag ACK), then records. */
enum dn2f_data_off {
    DN2F_O_DATA_TS = 0,             /* u32 the sender's clock, us (0 = none) */
};

/* An ACK block (DN2F_ACK_HDR_LEN bytes + nbits / 8 bytes of SACK bitmap):
 * the body of an ACK, or ahead of the records of a DATA with flag ACK. */
enum dn2f_ack_off {
    DN2F_O_ACK_CUM = 0,             /* u32 next sequence number expected */
    DN2F_O_ACK_LIMIT = 4,           /* u32 credit limit */
    DN2F_O_ACK_NBITS = 8,           /* u16 SACK bits, multiple of 32 */
    DN2F_O_ACK_LANE = 10,           /* u8 */
    DN2F_O_ACK_MORE = 11,           /* u8 0/1: another block follows */
    DN2F_O_ACK_ECHO = 12,           /* u32 echoed DATA timestamp */
    DN2F_O_ACK_BITS = 16,           /* the bitmap */
};

/* A DATA record header (DN2F_REC_HDR_LEN bytes), then the kind's extension,
 * then the packet padded to 4 bytes. */
enum dn2f_rec_off {
    DN2F_O_REC_SEQ = 0,             /* u32 (0 in MCAST_ORIGIN) */
    DN2F_O_REC_LEN = 4,             /* u16 packet bytes */
    DN2F_O_REC_KIND = 6,            /* u8 enum dn2f_rec_kind */
    DN2F_O_REC_RFLAGS = 7,          /* u8 DN2F_RF_* */
};
/* Extensions after the record header (offsets from its end). */
enum dn2f_rec_ext_off {
    DN2F_O_REQ_AFTER = 0,           /* u32 kind UNICAST + RF_REQ (DN2F_REQ_AFTER_LEN) */
    DN2F_O_MC_GROUP = 0,            /* u16 kinds MCAST_*: the group LID */
    DN2F_O_MC_NMEMB = 2,            /* u16 MCAST_ORIGIN: members; MCAST_COPY: 0 */
    DN2F_MC_EXT_LEN = 4,            /* then, in an origin, nmemb members */
};

/* The virtual-time part of a record with DN2F_RF_VT (DN2F_VT_LEN bytes),
 * after the kind's part (the request's "after", an origin's members, a
 * copy's group), before the packet. */
enum dn2f_vt_off {
    DN2F_O_VT_VTIME = 0,            /* u64 virtual delivery time, ns */
    DN2F_O_VT_VSEQ = 8,             /* u32 the sender board's vt packet counter */
    DN2F_O_VT_RSVD = 12,            /* u32 0 */
};

/* A multicast origin record's member entry (DN2F_MEMBER_LEN bytes). */
enum dn2f_member_off {
    DN2F_O_MEMBER_LID = 0,          /* u16 */
    DN2F_O_MEMBER_RSVD = 2,         /* u16 0 */
    DN2F_O_MEMBER_SEQ = 4,          /* u32 */
    DN2F_O_MEMBER_EPOCH = 8,        /* u64 */
    DN2F_O_MEMBER_SRC_SESS = 16,    /* u32 */
    DN2F_O_MEMBER_DST_SESS = 20,    /* u32 */
};

/* HELLO body (DN2F_HELLO_LEN bytes; zero after the LID hint). */
enum dn2f_hello_off {
    DN2F_O_HELLO_GUID = 0,          /* u64 */
    DN2F_O_HELLO_LID_HINT = 8,      /* u16 */
    DN2F_O_HELLO_RSVD = 10,         /* zero to the end */
};

/* ASSIGN body (DN2F_ASSIGN_LEN bytes). */
enum dn2f_assign_off {
    DN2F_O_ASSIGN_GUID = 0,         /* u64 */
    DN2F_O_ASSIGN_LID = 8,          /* u16 */
    DN2F_O_ASSIGN_LINK_STATE = 10,  /* u8 */
    DN2F_O_ASSIGN_ROUTE_MODE = 11,  /* u8 enum dn2f_route_mode */
    DN2F_O_ASSIGN_TICKET_TIME = 12, /* u32 */
    DN2F_O_ASSIGN_TICKET_MAC = 16,  /* DN2F_TICKET_LEN bytes */
    DN2F_O_ASSIGN_TOKEN = 32,       /* DN2F_TOKEN_LEN bytes */
};

/* KEEPALIVE body (DN2F_KEEPALIVE_LEN bytes). */
enum dn2f_keepalive_off {
    DN2F_O_KA_GEN = 0,              /* u32 */
    DN2F_O_KA_TICKET_TIME = 4,      /* u32 */
    DN2F_O_KA_GUID = 8,             /* u64 */
    DN2F_O_KA_TICKET_MAC = 16,      /* DN2F_TICKET_LEN bytes */
};

/* BYE body (DN2F_BYE_LEN bytes). */
enum dn2f_bye_off {
    DN2F_O_BYE_REASON = 0,          /* u32 enum dn2f_bye_reason */
    DN2F_O_BYE_RSVD = 4,            /* u32 0 */
    DN2F_BYE_LEN = 8,
};

/* MCAST_JOIN / MCAST_LEAVE body (DN2F_MCAST_LEN bytes). */
enum dn2f_mcast_off {
    DN2F_O_MCAST_GROUP = 0,         /* u16 */
    DN2F_O_MCAST_RSVD = 2,          /* u16 0, u32 0 */
    DN2F_MCAST_LEN = 8,
};

/* VT_REPORT body (DN2F_VT_REPORT_LEN bytes). */
enum dn2f_vt_report_off {
    DN2F_O_VTR_RSEQ = 0,            /* u32 */
    DN2F_O_VTR_FLAGS = 4,           /* u32 0 */
    DN2F_O_VTR_NOW = 8,             /* u64 */
    DN2F_O_VTR_EARLIEST = 16,       /* u64 >= now */
    DN2F_O_VTR_RSVD = 24,           /* u64 0 */
};

/* VT_GRANT body (DN2F_VT_GRANT_LEN bytes). */
enum dn2f_vt_grant_off {
    DN2F_O_VTG_RSEQ = 0,            /* u32 the report answered */
    DN2F_O_VTG_FLAGS = 4,           /* u32 0 */
    DN2F_O_VTG_HORIZON = 8,         /* u64 */
    DN2F_O_VTG_LOOKAHEAD = 16,      /* u32 ns */
    DN2F_O_VTG_QUANTUM = 20,        /* u32 ns */
    DN2F_O_VTG_SLOWEST = 24,        /* u64 */
    DN2F_O_VTG_RSVD = 32,           /* u64 0 */
};

/* STATS_REQ body (at least DN2F_STATS_REQ_BODY_MIN bytes, zero-padded). */
enum dn2f_stats_req_off {
    DN2F_O_SREQ_COOKIE = 0,         /* u32 */
    DN2F_O_SREQ_CHUNK = 4,          /* u16 */
    DN2F_O_SREQ_RSVD = 6,           /* zero to the end */
    DN2F_STATS_REQ_BODY_MIN = 8,
};

/* ROUTES body: this header (DN2F_ROUTES_HDR_LEN bytes), nroutes route
 * entries, ngroups group entries. */
enum dn2f_routes_off {
    DN2F_O_ROUTES_GEN = 0,          /* u32 */
    DN2F_O_ROUTES_CHUNK = 4,        /* u16 */
    DN2F_O_ROUTES_NCHUNKS = 6,      /* u16 */
    DN2F_O_ROUTES_NROUTES = 8,      /* u16 */
    DN2F_O_ROUTES_NGROUPS = 10,     /* u16 */
    DN2F_O_ROUTES_RSVD = 12,        /* u32 0 */
    DN2F_ROUTES_HDR_LEN = 16,
};

/* The socket address as route entries and port statistics carry it, at the
 * same offsets in both (bytes 3..27). */
enum dn2f_waddr_off {
    DN2F_O_WADDR_FAMILY = 3,        /* u8 0 (none), 4, 6 */
    DN2F_O_WADDR_PORT = 4,          /* u16 */
    DN2F_O_WADDR_RSVD = 6,          /* u16 0 */
    DN2F_O_WADDR_SCOPE = 8,         /* u32 IPv6 scope id */
    DN2F_O_WADDR_ADDR = 12,         /* 16 bytes (IPv4: the first 4) */
    DN2F_WADDR_END = 28,
};

/* A route entry (DN2F_ROUTE_LEN bytes), address as above. */
enum dn2f_route_off {
    DN2F_O_ROUTE_LID = 0,           /* u16 */
    DN2F_O_ROUTE_FLAGS = 2,         /* u8 DN2F_RT_* */
    DN2F_O_ROUTE_EPOCH = 28,        /* u64 */
    DN2F_O_ROUTE_TOKEN = 36,        /* DN2F_TOKEN_LEN bytes */
};

/* A group entry (dn2f_group_len(n) bytes: n LIDs, zero-padded to 4). */
enum dn2f_group_off {
    DN2F_O_GROUP_LID = 0,           /* u16 the group */
    DN2F_O_GROUP_N = 2,             /* u16 members */
    DN2F_O_GROUP_MEMBERS = 4,       /* n x u16 */
};

/* STATS_RESP body: this header (DN2F_STATS_HDR_LEN bytes), then nports
 * port statistics. */
enum dn2f_stats_off {
    DN2F_O_STATS_COOKIE = 0,        /* u32 */
    DN2F_O_STATS_CHUNK = 4,         /* u16 */
    DN2F_O_STATS_NCHUNKS = 6,       /* u16 */
    DN2F_O_STATS_NPORTS = 8,        /* u16 */
    DN2F_O_STATS_ROUTE_MODE = 10,   /* u8 */
    DN2F_O_STATS_FLAGS = 11,        /* u8 DN2F_STATS_F_* */
    DN2F_O_STATS_ROUTES_GEN = 12,   /* u32 */
    DN2F_O_STATS_UPTIME_MS = 16,    /* u64, and u64 counters: */
    DN2F_O_STATS_DGRAMS_IN = 24,
    DN2F_O_STATS_DGRAMS_FWD = 32,
    DN2F_O_STATS_BAD = 40,
    DN2F_O_STATS_INJ_DROP = 48,
    DN2F_O_STATS_INJ_DUP = 56,
    DN2F_O_STATS_INJ_REORDER = 64,
    DN2F_O_STATS_INJ_DELAY = 72,
};

/* STATS_RESP flag DN2F_STATS_F_VT: this block (DN2F_STATS_VT_LEN bytes)
 * between the header and the port statistics. */
enum dn2f_stats_vt_off {
    DN2F_O_SVT_REPORTS = 0,         /* u64 */
    DN2F_O_SVT_GRANTS = 8,          /* u64 */
    DN2F_O_SVT_TIME = 16,           /* u64 the cluster's virtual time, ns */
    DN2F_O_SVT_BOARDS = 24,         /* u32 boards in the sync set */
    DN2F_O_SVT_RSVD = 28,           /* u32 0 */
};

/* A port statistics entry (DN2F_PORTSTAT_LEN bytes), address as above. */
enum dn2f_portstat_off {
    DN2F_O_PS_LID = 0,              /* u16 */
    DN2F_O_PS_STATE = 2,            /* u8 1 = active, 2 = gone */
    DN2F_O_PS_GUID = 28,            /* u64, and u64 counters: */
    DN2F_O_PS_EPOCH = 36,
    DN2F_O_PS_RX_PKTS = 44,
    DN2F_O_PS_RX_BYTES = 52,
    DN2F_O_PS_TX_PKTS = 60,
    DN2F_O_PS_TX_BYTES = 68,
    DN2F_O_PS_DROPS = 76,
    DN2F_O_PS_RETX = 84,
};

/* Each table ends where its record does. */
_Static_assert(DN2F_O_HDR_DST_SESS + 4 == DN2F_HDR_LEN, "header layout");
_Static_assert(DN2F_O_ACK_BITS == DN2F_ACK_HDR_LEN, "ACK block layout");
_Static_assert(DN2F_O_REC_RFLAGS + 1 == DN2F_REC_HDR_LEN, "record header layout");
_Static_assert(DN2F_O_REQ_AFTER + 4 == DN2F_REQ_AFTER_LEN, "request extension layout");
_Static_assert(DN2F_O_MEMBER_DST_SESS + 4 == DN2F_MEMBER_LEN, "member layout");
_Static_assert(DN2F_O_VT_RSVD + 4 == DN2F_VT_LEN, "virtual-time part layout");
_Static_assert(DN2F_O_VTR_RSVD + 8 == DN2F_VT_REPORT_LEN, "VT_REPORT layout");
_Static_assert(DN2F_O_VTG_RSVD + 8 == DN2F_VT_GRANT_LEN, "VT_GRANT layout");
_Static_assert(DN2F_O_SVT_RSVD + 4 == DN2F_STATS_VT_LEN, "STATS_RESP VT block layout");
_Static_assert(DN2F_O_HELLO_RSVD <= DN2F_HELLO_LEN, "HELLO layout");
_Static_assert(DN2F_O_ASSIGN_TOKEN + DN2F_TOKEN_LEN == DN2F_ASSIGN_LEN, "ASSIGN layout");
_Static_assert(DN2F_O_KA_TICKET_MAC + DN2F_TICKET_LEN == DN2F_KEEPALIVE_LEN,
               "KEEPALIVE layout");
_Static_assert(DN2F_O_ROUTE_TOKEN + DN2F_TOKEN_LEN == DN2F_ROUTE_LEN, "route layout");
_Static_assert(DN2F_O_WADDR_ADDR + 16 == DN2F_WADDR_END, "address layout");
_Static_assert(DN2F_O_STATS_INJ_DELAY + 8 == DN2F_STATS_HDR_LEN, "STATS_RESP layout");
_Static_assert(DN2F_O_PS_RETX + 8 == DN2F_PORTSTAT_LEN, "port statistics layout");

/* Is the 1st DW of a DIMMnet-2 packet an RVL-family request? */
bool dn2f_h0_is_rvl(uint64_t h0);

/* The address block of a route entry or port statistics entry at rec. */
static inline void dn2f_put_waddr(uint8_t *rec, const struct dn2f_addr *a)
{
    dn2f_enc_addr(rec + DN2F_O_WADDR_FAMILY, rec + DN2F_O_WADDR_PORT,
                  rec + DN2F_O_WADDR_SCOPE, rec + DN2F_O_WADDR_ADDR, a);
}

/* 0, or -DN2F_E_RESERVED / -DN2F_E_FIELD; a is unset (zero) on error. */
static inline int dn2f_get_waddr(const uint8_t *rec, struct dn2f_addr *a)
{
    int rc;
    if (dn2f_ld16(rec + DN2F_O_WADDR_RSVD)) {
        memset(a, 0, sizeof(*a));
        return -DN2F_E_RESERVED;
    }
    rc = dn2f_dec_addr(a, rec[DN2F_O_WADDR_FAMILY], rec + DN2F_O_WADDR_PORT,
                       rec + DN2F_O_WADDR_SCOPE, rec + DN2F_O_WADDR_ADDR);
    if (rc) {
        memset(a, 0, sizeof(*a));
    }
    return rc;
}

#endif
