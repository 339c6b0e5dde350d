/* SPDX-License-Identifier: MIT */
/*
 * dn2fab wire format, outgoing side: names, the DIMMnet-2 packet helpers
 * (LIDs, lanes), and the encoders of every record (dn2f_put_*), each
 * writing its fields through the layout tables of dn2fab-wire.h.  The
 * validating decoder and the iterators are in dn2fab-wire-dec.c.  See
 * dn2fab.h and docs/fabric.md.
 */
#include <string.h>

#include "dn2fab-wire.h"
#include "dn2fab-hmac.h"

/* ------------------------------------------------------------------ names */
const char *dn2f_strerror(int err)
{
    static const char *const names[DN2F_E_MAX] = {
        [DN2F_OK] = "ok",
        [DN2F_E_SHORT] = "datagram too short",
        [DN2F_E_MAGIC] = "bad magic",
        [DN2F_E_VERSION] = "unsupported version",
        [DN2F_E_TYPE] = "unknown type",
        [DN2F_E_LENGTH] = "length mismatch",
        [DN2F_E_FLAGS] = "bad flags",
        [DN2F_E_RESERVED] = "reserved field not zero",
        [DN2F_E_FIELD] = "field out of range",
        [DN2F_E_TRUNC] = "body truncated or malformed",
    };
    if (err < 0) {
        err = -err;
    }
    return err < DN2F_E_MAX && names[err] ? names[err] : "?";
}

const char *dn2f_type_name(unsigned type)
{
    static const char *const names[DN2F_T_MAX] = {
        [DN2F_T_HELLO] = "HELLO", [DN2F_T_ASSIGN] = "ASSIGN",
        [DN2F_T_ROUTES] = "ROUTES", [DN2F_T_DATA] = "DATA", [DN2F_T_ACK] = "ACK",
        [DN2F_T_KEEPALIVE] = "KEEPALIVE", [DN2F_T_BYE] = "BYE",
        [DN2F_T_STATS_REQ] = "STATS_REQ", [DN2F_T_STATS_RESP] = "STATS_RESP",
        [DN2F_T_MCAST_JOIN] = "MCAST_JOIN", [DN2F_T_MCAST_LEAVE] = "MCAST_LEAVE",
        [DN2F_T_VT_REPORT] = "VT_REPORT", [DN2F_T_VT_GRANT] = "VT_GRANT",
    };
    return type < DN2F_T_MAX && names[type] ? names[type] : "?";
}

const char *dn2f_bye_name(unsigned reason)
{
    static const char *const names[DN2F_BYE_MAX] = {
        [DN2F_BYE_LEAVING] = "leaving",
        [DN2F_BYE_SHUTDOWN] = "switch shutting down",
        [DN2F_BYE_UNKNOWN] = "unknown to the switch",
        [DN2F_BYE_GUID_IN_USE] = "GUID in use by another live board",
        [DN2F_BYE_AUTH] = "authentication failed (cluster secret missing or different)",
        [DN2F_BYE_FULL] = "no LID left or too many ports from this host",
    };
    return reason < DN2F_BYE_MAX && names[reason] ? names[reason] : "?";
}

/* ------------------------------------------------------------ LID helpers */
uint16_t dn2f_pkt_dlid(const uint8_t *pkt)
{
    return dn2f_ld16(pkt + 4);      /* 1st DW little-endian, bits [47:32] */
}

unsigned dn2f_pkt_dwid(const uint8_t *pkt)
{
    return (dn2f_ld32(pkt) >> DN2_H0_DWID_BIT) & 1;
}

/* Is the 1st DW an RVL-family request (TYPE, bits [16:12])? */
bool dn2f_h0_is_rvl(uint64_t h0)
{
    return dn2_otype_is_rvl((unsigned)DN2_GET(h0, DN2_H0_TYPE_HI, DN2_H0_TYPE_LO));
}

unsigned dn2f_h0_lane(uint64_t h0)
{
    unsigned dwid = (unsigned)(h0 >> DN2_H0_DWID_BIT) & 1;
    uint16_t dlid = (uint16_t)DN2_GET(h0, DN2_H0_DLID_HI, DN2_H0_DLID_LO);

    if (dn2f_h0_is_rvl(h0) && !dn2f_lid_is_mcast(dlid)) {
        return dwid + DN2F_LANE_REQ;
    }
    return dwid;
}

unsigned dn2f_pkt_lane(const uint8_t *pkt)
{
    return dn2f_h0_lane(dn2f_ld64(pkt));
}

unsigned dn2f_lane_rflags(unsigned lane)
{
    return ((lane & 1) ? DN2F_RF_LANE1 : 0) | ((lane & DN2F_LANE_REQ) ? DN2F_RF_REQ : 0);
}

bool dn2f_lid_is_mcast(uint16_t lid)
{
    return (lid & 0x0f00) == 0 && dn2_clid_is_mcast(dn2_lid_to_clid(lid));
}

/* ------------------------------------------------------------------ encode */
void dn2f_wbuf_init(struct dn2f_wbuf *b, void *mem, size_t cap)
{
    b->p = mem;
    b->cap = cap > DN2F_DGRAM_MAX ? DN2F_DGRAM_MAX : cap;
    b->len = 0;
    b->overflow = false;
}

static uint8_t *wb_reserve(struct dn2f_wbuf *b, size_t n)
{
    uint8_t *p;
    if (b->overflow || n > b->cap - b->len) {
        b->overflow = true;
        return NULL;
    }
    p = b->p + b->len;
    memset(p, 0, n);
    b->len += n;
    return p;
}

void dn2f_put_hdr(struct dn2f_wbuf *b, unsigned type, unsigned flags,
                  uint16_t src, uint16_t dst, uint64_t src_epoch, uint64_t dst_epoch)
{
    uint8_t *p = wb_reserve(b, DN2F_HDR_LEN);
    if (!p) {
        return;
    }
    dn2f_st32(p + DN2F_O_HDR_MAGIC, DN2F_MAGIC);
    p[DN2F_O_HDR_VERSION] = DN2F_VERSION;
    p[DN2F_O_HDR_TYPE] = (uint8_t)type;
    dn2f_st16(p + DN2F_O_HDR_FLAGS, (uint16_t)flags);
    dn2f_st16(p + DN2F_O_HDR_SRC_LID, src);
    dn2f_st16(p + DN2F_O_HDR_DST_LID, dst);
    dn2f_st64(p + DN2F_O_HDR_SRC_EPOCH, src_epoch);
    dn2f_st64(p + DN2F_O_HDR_DST_EPOCH, dst_epoch);
    if (type == DN2F_T_DATA) {
        wb_reserve(b, DN2F_DATA_TS_LEN);        /* the timestamp: 0 until set */
    }
}

void dn2f_data_set_ts(struct dn2f_wbuf *b, uint32_t ts)
{
    if (!b->overflow && b->len >= DN2F_HDR_LEN + DN2F_DATA_TS_LEN &&
        b->p[DN2F_O_HDR_TYPE] == DN2F_T_DATA) {
        dn2f_st32(b->p + DN2F_HDR_LEN + DN2F_O_DATA_TS, ts);
    }
}

uint32_t dn2f_ts_us(uint64_t ns)
{
    uint32_t ts = (uint32_t)(ns / 1000);
    return ts ? ts : 1;
}

void dn2f_hdr_set_sessions(struct dn2f_wbuf *b, uint32_t src_sess, uint32_t dst_sess)
{
    if (!b->overflow && b->len >= DN2F_HDR_LEN) {
        dn2f_st32(b->p + DN2F_O_HDR_SRC_SESS, src_sess);
        dn2f_st32(b->p + DN2F_O_HDR_DST_SESS, dst_sess);
    }
}

size_t dn2f_finish_mac(struct dn2f_wbuf *b, const struct dn2f_hmac_key *key)
{
    struct dn2f_hmac h;
    uint8_t mac[DN2F_SHA256_LEN], *t;
    size_t n;

    if (b->overflow || b->len < DN2F_HDR_LEN) {
        return 0;
    }
    dn2f_st16(b->p + DN2F_O_HDR_FLAGS,
              (uint16_t)(dn2f_ld16(b->p + DN2F_O_HDR_FLAGS) | DN2F_F_MAC));
    if (b->cap - b->len < DN2F_MAC_LEN && b->cap + DN2F_MAC_LEN <= DN2F_DGRAM_MAX) {
        b->cap += DN2F_MAC_LEN;         /* the room the builder kept for it */
    }
    t = wb_reserve(b, DN2F_MAC_LEN);
    if (!t) {
        return 0;
    }
    n = b->len;
    dn2f_st32(b->p + DN2F_O_HDR_LENGTH, (uint32_t)n);
    dn2f_hmac_start(&h, key);
    dn2f_hmac_update(&h, b->p, n - DN2F_MAC_LEN);
    dn2f_hmac_finish(&h, mac);
    memcpy(t, mac, DN2F_MAC_LEN);
    return n;
}

size_t dn2f_finish(struct dn2f_wbuf *b)
{
    if (b->overflow || b->len < DN2F_HDR_LEN) {
        return 0;
    }
    dn2f_st32(b->p + DN2F_O_HDR_LENGTH, (uint32_t)b->len);
    return b->len;
}

void dn2f_put_hello(struct dn2f_wbuf *b, const struct dn2f_hello *h)
{
    uint8_t *p = wb_reserve(b, DN2F_HELLO_LEN);
    if (p) {
        dn2f_st64(p + DN2F_O_HELLO_GUID, h->guid);
        dn2f_st16(p + DN2F_O_HELLO_LID_HINT, h->lid_hint);
    }
}

void dn2f_put_assign(struct dn2f_wbuf *b, const struct dn2f_assign *a)
{
    uint8_t *p = wb_reserve(b, DN2F_ASSIGN_LEN);
    if (p) {
        dn2f_st64(p + DN2F_O_ASSIGN_GUID, a->guid);
        dn2f_st16(p + DN2F_O_ASSIGN_LID, a->lid);
        p[DN2F_O_ASSIGN_LINK_STATE] = a->link_state;
        p[DN2F_O_ASSIGN_ROUTE_MODE] = a->route_mode;
        dn2f_st32(p + DN2F_O_ASSIGN_TICKET_TIME, a->ticket.time);
        memcpy(p + DN2F_O_ASSIGN_TICKET_MAC, a->ticket.mac, DN2F_TICKET_LEN);
        memcpy(p + DN2F_O_ASSIGN_TOKEN, a->token, DN2F_TOKEN_LEN);
    }
}

void dn2f_put_keepalive(struct dn2f_wbuf *b, uint32_t gen, uint64_t guid,
                        const struct dn2f_ticket *t)
{
    uint8_t *p = wb_reserve(b, DN2F_KEEPALIVE_LEN);
    if (p) {
        dn2f_st32(p + DN2F_O_KA_GEN, gen);
        if (t) {
            dn2f_st32(p + DN2F_O_KA_TICKET_TIME, t->time);
            dn2f_st64(p + DN2F_O_KA_GUID, guid);
            memcpy(p + DN2F_O_KA_TICKET_MAC, t->mac, DN2F_TICKET_LEN);
        }
    }
}

void dn2f_put_stats_req(struct dn2f_wbuf *b, uint32_t cookie, uint16_t chunk, size_t total)
{
    size_t n = total > b->len + DN2F_STATS_REQ_BODY_MIN ? total - b->len
                                                         : DN2F_STATS_REQ_BODY_MIN;
    uint8_t *p = wb_reserve(b, n);
    if (p) {
        dn2f_st32(p + DN2F_O_SREQ_COOKIE, cookie);
        dn2f_st16(p + DN2F_O_SREQ_CHUNK, chunk);
    }
}

void dn2f_put_routes_hdr(struct dn2f_wbuf *b, uint32_t gen, uint16_t chunk, uint16_t nchunks,
                         uint16_t nroutes, uint16_t ngroups)
{
    uint8_t *p = wb_reserve(b, DN2F_ROUTES_HDR_LEN);
    if (p) {
        dn2f_st32(p + DN2F_O_ROUTES_GEN, gen);
        dn2f_st16(p + DN2F_O_ROUTES_CHUNK, chunk);
        dn2f_st16(p + DN2F_O_ROUTES_NCHUNKS, nchunks);
        dn2f_st16(p + DN2F_O_ROUTES_NROUTES, nroutes);
        dn2f_st16(p + DN2F_O_ROUTES_NGROUPS, ngroups);
    }
}

void dn2f_put_route(struct dn2f_wbuf *b, const struct dn2f_route *r)
{
    uint8_t *p = wb_reserve(b, DN2F_ROUTE_LEN);
    if (p) {
        dn2f_st16(p + DN2F_O_ROUTE_LID, r->lid);
        p[DN2F_O_ROUTE_FLAGS] = r->flags;
        dn2f_put_waddr(p, &r->addr);
        dn2f_st64(p + DN2F_O_ROUTE_EPOCH, r->epoch);
        memcpy(p + DN2F_O_ROUTE_TOKEN, r->token, DN2F_TOKEN_LEN);
    }
}

size_t dn2f_group_len(unsigned n)
{
    return dn2f_pad4(DN2F_O_GROUP_MEMBERS + 2 * (size_t)n);
}

void dn2f_put_group(struct dn2f_wbuf *b, uint16_t group, uint16_t n, const uint16_t *lids)
{
    uint8_t *p = wb_reserve(b, dn2f_group_len(n));
    unsigned i;
    if (p) {
        dn2f_st16(p + DN2F_O_GROUP_LID, group);
        dn2f_st16(p + DN2F_O_GROUP_N, n);
        for (i = 0; i < n; i++) {
            dn2f_st16(p + DN2F_O_GROUP_MEMBERS + 2 * i, lids[i]);
        }
    }
}

size_t dn2f_ack_len(unsigned nbits)
{
    return DN2F_ACK_HDR_LEN + nbits / 8;
}

void dn2f_put_ack(struct dn2f_wbuf *b, unsigned lane, bool more, uint32_t cum, uint32_t limit,
                  uint16_t nbits, const uint8_t *bits)
{
    dn2f_put_ack_echo(b, lane, more, cum, limit, 0, nbits, bits);
}

void dn2f_put_ack_echo(struct dn2f_wbuf *b, unsigned lane, bool more, uint32_t cum,
                       uint32_t limit, uint32_t echo, uint16_t nbits, const uint8_t *bits)
{
    uint8_t *p;
    nbits &= (uint16_t)~31u;
    if (nbits > DN2F_SACK_MAX_BITS) {
        nbits = DN2F_SACK_MAX_BITS;
    }
    p = wb_reserve(b, dn2f_ack_len(nbits));
    if (p) {
        dn2f_st32(p + DN2F_O_ACK_CUM, cum);
        dn2f_st32(p + DN2F_O_ACK_LIMIT, limit);
        dn2f_st16(p + DN2F_O_ACK_NBITS, nbits);
        p[DN2F_O_ACK_LANE] = (uint8_t)lane;
        p[DN2F_O_ACK_MORE] = more ? 1 : 0;
        dn2f_st32(p + DN2F_O_ACK_ECHO, echo);
        if (nbits && bits) {
            memcpy(p + DN2F_O_ACK_BITS, bits, nbits / 8);
        }
    }
}

size_t dn2f_rec_len_rf(unsigned kind, unsigned rflags, unsigned nmemb, size_t len)
{
    size_t n = DN2F_REC_HDR_LEN + dn2f_pad4(len);
    if (kind == DN2F_REC_MCAST_ORIGIN) {
        n += DN2F_MC_EXT_LEN + (size_t)nmemb * DN2F_MEMBER_LEN;
    } else if (kind == DN2F_REC_MCAST_COPY) {
        n += DN2F_MC_EXT_LEN;
    } else if (rflags & DN2F_RF_REQ) {
        n += DN2F_REQ_AFTER_LEN;
    }
    if (rflags & DN2F_RF_VT) {
        n += DN2F_VT_LEN;
    }
    return n;
}

size_t dn2f_rec_len(unsigned kind, unsigned nmemb, size_t len)
{
    return dn2f_rec_len_rf(kind, 0, nmemb, len);
}

/* The record header, then the kind's extension; returns where the packet
 * goes.  Members are written by the caller (put_member). */
static uint8_t *put_rec_hdr(uint8_t *p, unsigned kind, unsigned rflags, uint32_t seq,
                            size_t len)
{
    dn2f_st32(p + DN2F_O_REC_SEQ, seq);
    dn2f_st16(p + DN2F_O_REC_LEN, (uint16_t)len);
    p[DN2F_O_REC_KIND] = (uint8_t)kind;
    p[DN2F_O_REC_RFLAGS] = (uint8_t)rflags;
    return p + DN2F_REC_HDR_LEN;
}

static void put_member(uint8_t *p, const struct dn2f_member *m)
{
    dn2f_st16(p + DN2F_O_MEMBER_LID, m->lid);
    dn2f_st32(p + DN2F_O_MEMBER_SEQ, m->seq);
    dn2f_st64(p + DN2F_O_MEMBER_EPOCH, m->epoch);
    dn2f_st32(p + DN2F_O_MEMBER_SRC_SESS, m->src_sess);
    dn2f_st32(p + DN2F_O_MEMBER_DST_SESS, m->dst_sess);
}

/* Reserve a whole record of kind / rflags, or nothing (false). */
static uint8_t *reserve_rec(struct dn2f_wbuf *b, unsigned kind, unsigned rflags,
                            unsigned nmemb, size_t len)
{
    size_t need = dn2f_rec_len_rf(kind, rflags, nmemb, len);

    if (b->overflow || need > b->cap - b->len) {
        return NULL;
    }
    return wb_reserve(b, need);
}

bool dn2f_put_record(struct dn2f_wbuf *b, const struct dn2f_rec *r, const struct dn2f_member *m)
{
    unsigned nmemb = r->kind == DN2F_REC_MCAST_ORIGIN ? r->nmemb : 0;
    uint8_t *p = reserve_rec(b, r->kind, r->rflags, nmemb, r->len);
    unsigned i;

    if (!p) {
        return false;
    }
    p = put_rec_hdr(p, r->kind, r->rflags, r->seq, r->len);
    if (r->kind == DN2F_REC_MCAST_ORIGIN || r->kind == DN2F_REC_MCAST_COPY) {
        dn2f_st16(p + DN2F_O_MC_GROUP, r->group);
        dn2f_st16(p + DN2F_O_MC_NMEMB, (uint16_t)nmemb);
        p += DN2F_MC_EXT_LEN;
        for (i = 0; i < nmemb; i++) {
            put_member(p, &m[i]);
            p += DN2F_MEMBER_LEN;
        }
    } else if (r->rflags & DN2F_RF_REQ) {
        dn2f_st32(p + DN2F_O_REQ_AFTER, r->after);
        p += DN2F_REQ_AFTER_LEN;
    }
    if (r->rflags & DN2F_RF_VT) {
        dn2f_st64(p + DN2F_O_VT_VTIME, r->vtime);
        dn2f_st32(p + DN2F_O_VT_VSEQ, r->vseq);
        p += DN2F_VT_LEN;
    }
    memcpy(p, r->pkt, r->len);
    return true;
}

bool dn2f_put_origin(struct dn2f_wbuf *b, unsigned rflags, uint16_t group, unsigned nmemb,
                     const struct dn2f_member *m, const void *pkt, size_t len)
{
    struct dn2f_rec r = {
        .kind = DN2F_REC_MCAST_ORIGIN, .rflags = (uint8_t)(rflags & ~DN2F_RF_VT),
        .group = group, .nmemb = (uint16_t)nmemb, .pkt = pkt, .len = (uint16_t)len,
    };
    return dn2f_put_record(b, &r, m);
}

static bool put_rec(struct dn2f_wbuf *b, unsigned kind, unsigned rflags, uint32_t seq,
                    uint32_t after, uint16_t group, unsigned nmemb, const uint16_t *mlid,
                    const uint32_t *mseq, const uint64_t *mepoch,
                    const void *pkt, size_t len)
{
    struct dn2f_member m[DN2F_MCAST_MAX_MEMBERS];
    struct dn2f_rec r = {
        .kind = (uint8_t)kind, .rflags = (uint8_t)(rflags & ~DN2F_RF_VT), .seq = seq,
        .after = after, .group = group, .pkt = pkt, .len = (uint16_t)len,
    };
    unsigned i;

    if (kind == DN2F_REC_MCAST_ORIGIN) {
        if (nmemb > DN2F_MCAST_MAX_MEMBERS) {
            return false;
        }
        memset(m, 0, sizeof(m));
        for (i = 0; i < nmemb; i++) {
            m[i].lid = mlid[i];
            m[i].seq = mseq[i];
            m[i].epoch = mepoch[i];
        }
        r.nmemb = (uint16_t)nmemb;
    }
    return dn2f_put_record(b, &r, m);
}

bool dn2f_put_rec(struct dn2f_wbuf *b, unsigned kind, unsigned rflags, uint32_t seq,
                  uint16_t group, unsigned nmemb, const uint16_t *mlid,
                  const uint32_t *mseq, const uint64_t *mepoch,
                  const void *pkt, size_t len)
{
    return put_rec(b, kind, rflags, seq, 0, group, nmemb, mlid, mseq, mepoch, pkt, len);
}

bool dn2f_put_req(struct dn2f_wbuf *b, unsigned rflags, uint32_t seq, uint32_t after,
                  const void *pkt, size_t len)
{
    return put_rec(b, DN2F_REC_UNICAST, rflags | DN2F_RF_REQ, seq, after, 0, 0, NULL, NULL,
                   NULL, pkt, len);
}

/* The BYE body: (reason, reserved); tests pass any pair. */
void dn2f_put_u32pair(struct dn2f_wbuf *b, uint32_t a, uint32_t c)
{
    uint8_t *p = wb_reserve(b, DN2F_BYE_LEN);
    if (p) {
        dn2f_st32(p + DN2F_O_BYE_REASON, a);
        dn2f_st32(p + DN2F_O_BYE_RSVD, c);
    }
}

void dn2f_put_mcast(struct dn2f_wbuf *b, uint16_t group)
{
    uint8_t *p = wb_reserve(b, DN2F_MCAST_LEN);
    if (p) {
        dn2f_st16(p + DN2F_O_MCAST_GROUP, group);
    }
}

void dn2f_put_vt_report(struct dn2f_wbuf *b, const struct dn2f_vt_report *r)
{
    uint8_t *p = wb_reserve(b, DN2F_VT_REPORT_LEN);
    if (p) {
        dn2f_st32(p + DN2F_O_VTR_RSEQ, r->rseq);
        dn2f_st64(p + DN2F_O_VTR_NOW, r->now);
        dn2f_st64(p + DN2F_O_VTR_EARLIEST, r->earliest);
    }
}

void dn2f_put_vt_grant(struct dn2f_wbuf *b, const struct dn2f_vt_grant *g)
{
    uint8_t *p = wb_reserve(b, DN2F_VT_GRANT_LEN);
    if (p) {
        dn2f_st32(p + DN2F_O_VTG_RSEQ, g->rseq);
        dn2f_st64(p + DN2F_O_VTG_HORIZON, g->horizon);
        dn2f_st32(p + DN2F_O_VTG_LOOKAHEAD, g->lookahead_ns);
        dn2f_st32(p + DN2F_O_VTG_QUANTUM, g->quantum_ns);
        dn2f_st64(p + DN2F_O_VTG_SLOWEST, g->slowest);
    }
}

void dn2f_put_stats_hdr(struct dn2f_wbuf *b, uint32_t cookie, uint16_t chunk, uint16_t nchunks,
                        uint16_t nports, const struct dn2f_swsummary *s)
{
    uint8_t *p = wb_reserve(b, DN2F_STATS_HDR_LEN);
    if (p) {
        dn2f_st32(p + DN2F_O_STATS_COOKIE, cookie);
        dn2f_st16(p + DN2F_O_STATS_CHUNK, chunk);
        dn2f_st16(p + DN2F_O_STATS_NCHUNKS, nchunks);
        dn2f_st16(p + DN2F_O_STATS_NPORTS, nports);
        p[DN2F_O_STATS_ROUTE_MODE] = s->route_mode;
        p[DN2F_O_STATS_FLAGS] = s->vt ? DN2F_STATS_F_VT : 0;
        dn2f_st32(p + DN2F_O_STATS_ROUTES_GEN, s->routes_gen);
        dn2f_st64(p + DN2F_O_STATS_UPTIME_MS, s->uptime_ms);
        dn2f_st64(p + DN2F_O_STATS_DGRAMS_IN, s->dgrams_in);
        dn2f_st64(p + DN2F_O_STATS_DGRAMS_FWD, s->dgrams_fwd);
        dn2f_st64(p + DN2F_O_STATS_BAD, s->bad);
        dn2f_st64(p + DN2F_O_STATS_INJ_DROP, s->inj_drop);
        dn2f_st64(p + DN2F_O_STATS_INJ_DUP, s->inj_dup);
        dn2f_st64(p + DN2F_O_STATS_INJ_REORDER, s->inj_reorder);
        dn2f_st64(p + DN2F_O_STATS_INJ_DELAY, s->inj_delay);
    }
}

void dn2f_put_stats_vt(struct dn2f_wbuf *b, const struct dn2f_swsummary *s)
{
    uint8_t *p = wb_reserve(b, DN2F_STATS_VT_LEN);
    if (p) {
        dn2f_st64(p + DN2F_O_SVT_REPORTS, s->vt_reports);
        dn2f_st64(p + DN2F_O_SVT_GRANTS, s->vt_grants);
        dn2f_st64(p + DN2F_O_SVT_TIME, s->vt_time);
        dn2f_st32(p + DN2F_O_SVT_BOARDS, s->vt_boards);
    }
}

void dn2f_put_portstat(struct dn2f_wbuf *b, const struct dn2f_portstat *ps)
{
    uint8_t *p = wb_reserve(b, DN2F_PORTSTAT_LEN);
    if (p) {
        dn2f_st16(p + DN2F_O_PS_LID, ps->lid);
        p[DN2F_O_PS_STATE] = ps->state;
        dn2f_put_waddr(p, &ps->addr);
        dn2f_st64(p + DN2F_O_PS_GUID, ps->guid);
        dn2f_st64(p + DN2F_O_PS_EPOCH, ps->epoch);
        dn2f_st64(p + DN2F_O_PS_RX_PKTS, ps->rx_pkts);
        dn2f_st64(p + DN2F_O_PS_RX_BYTES, ps->rx_bytes);
        dn2f_st64(p + DN2F_O_PS_TX_PKTS, ps->tx_pkts);
        dn2f_st64(p + DN2F_O_PS_TX_BYTES, ps->tx_bytes);
        dn2f_st64(p + DN2F_O_PS_DROPS, ps->drops);
        dn2f_st64(p + DN2F_O_PS_RETX, ps->retx);
    }
}

