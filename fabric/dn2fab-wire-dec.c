/* SPDX-License-Identifier: MIT */
/*
 * dn2fab wire format, incoming side: dn2f_decode() validates every field of
 * a received datagram (never reading out of bounds), and the iterators walk
 * the variable parts of a validated one.  Each record has one decoder here
 * (dec_ack, dec_rec, dec_member, dec_route, dec_group, dec_portstat, ...),
 * reading its fields through the layout tables of dn2fab-wire.h; the
 * validator and the iterators call the same decoders, so a field is read in
 * one place only.  The encoders are in dn2fab-wire.c.
 */
#include <string.h>

#include "dn2fab-wire.h"
#include "dn2fab-hmac.h"

/* ------------------------------------------------------------ ACK blocks */
static int dec_ack(const uint8_t *p, size_t avail, struct dn2f_ack *a, size_t *used, bool *more)
{
    uint16_t nbits;
    if (avail < DN2F_ACK_HDR_LEN) {
        return -DN2F_E_TRUNC;
    }
    a->cum = dn2f_ld32(p + DN2F_O_ACK_CUM);
    a->limit = dn2f_ld32(p + DN2F_O_ACK_LIMIT);
    nbits = dn2f_ld16(p + DN2F_O_ACK_NBITS);
    a->lane = p[DN2F_O_ACK_LANE];
    if (p[DN2F_O_ACK_MORE] > 1) {
        return -DN2F_E_FIELD;
    }
    *more = p[DN2F_O_ACK_MORE] == 1;
    a->echo = dn2f_ld32(p + DN2F_O_ACK_ECHO);
    if (a->lane >= DN2F_NUM_LANES) {
        return -DN2F_E_FIELD;
    }
    if ((nbits & 31) || nbits > DN2F_SACK_MAX_BITS) {
        return -DN2F_E_FIELD;
    }
    /* The credit limit can never be behind what is acknowledged, nor
     * absurdly far ahead of it. */
    if (dn2f_seqdiff(a->limit, a->cum) < 0 || dn2f_seqdiff(a->limit, a->cum) > 65536) {
        return -DN2F_E_FIELD;
    }
    if (avail - DN2F_ACK_HDR_LEN < (size_t)nbits / 8) {
        return -DN2F_E_TRUNC;
    }
    a->nbits = nbits;
    a->bits = nbits ? p + DN2F_O_ACK_BITS : NULL;
    *used = dn2f_ack_len(nbits);
    return 0;
}

/* 1..DN2F_NUM_LANES ACK blocks, each naming a different lane. */
static int dec_acks(const uint8_t *p, size_t avail, struct dn2f_acks *as, size_t *used)
{
    size_t off = 0, u;
    bool more = true;
    unsigned i;
    int rc;

    as->n = 0;
    while (more) {
        if (as->n == DN2F_NUM_LANES) {
            return -DN2F_E_FIELD;
        }
        rc = dec_ack(p + off, avail - off, &as->a[as->n], &u, &more);
        if (rc) {
            return rc;
        }
        for (i = 0; i < as->n; i++) {
            if (as->a[i].lane == as->a[as->n].lane) {
                return -DN2F_E_FIELD;
            }
        }
        as->n++;
        off += u;
    }
    *used = off;
    return 0;
}

bool dn2f_ack_sacked(const struct dn2f_ack *a, unsigned i)
{
    if (i >= a->nbits || !a->bits) {
        return false;
    }
    return (a->bits[i >> 3] >> (i & 7)) & 1;
}

/* --------------------------------------------------------- DATA records */
/* A multicast origin's member entry (always DN2F_MEMBER_LEN bytes). */
static int dec_member(const uint8_t *p, struct dn2f_member *mb)
{
    mb->lid = dn2f_ld16(p + DN2F_O_MEMBER_LID);
    mb->seq = dn2f_ld32(p + DN2F_O_MEMBER_SEQ);
    mb->epoch = dn2f_ld64(p + DN2F_O_MEMBER_EPOCH);
    mb->src_sess = dn2f_ld32(p + DN2F_O_MEMBER_SRC_SESS);
    mb->dst_sess = dn2f_ld32(p + DN2F_O_MEMBER_DST_SESS);
    if (!dn2_lid_assignable(mb->lid)) {
        return -DN2F_E_FIELD;
    }
    if (dn2f_ld16(p + DN2F_O_MEMBER_RSVD)) {
        return -DN2F_E_RESERVED;
    }
    return 0;
}

/* Parse one record at p (avail bytes); fills r and *used.  Full validation. */
static int dec_rec(const uint8_t *p, size_t avail, uint16_t dst, struct dn2f_rec *r,
                   size_t *used)
{
    size_t off = DN2F_REC_HDR_LEN, padded;
    const uint8_t *x;
    unsigned i;

    if (avail < DN2F_REC_HDR_LEN) {
        return -DN2F_E_TRUNC;
    }
    memset(r, 0, sizeof(*r));
    r->seq = dn2f_ld32(p + DN2F_O_REC_SEQ);
    r->len = dn2f_ld16(p + DN2F_O_REC_LEN);
    r->kind = p[DN2F_O_REC_KIND];
    r->rflags = p[DN2F_O_REC_RFLAGS];
    if (r->len < DN2F_PKT_MIN || r->len > DN2F_PKT_MAX) {
        return -DN2F_E_FIELD;
    }
    if (r->rflags & ~DN2F_RF_ALL) {
        return -DN2F_E_FLAGS;
    }
    r->lane = (uint8_t)(((r->rflags & DN2F_RF_LANE1) ? 1 : 0) +
                        ((r->rflags & DN2F_RF_REQ) ? DN2F_LANE_REQ : 0));
    if ((r->rflags & DN2F_RF_REQ) && r->kind != DN2F_REC_UNICAST) {
        return -DN2F_E_FIELD;   /* requests are unicast only */
    }
    x = p + off;                /* the kind's extension */
    switch (r->kind) {
    case DN2F_REC_UNICAST:
        if (r->rflags & DN2F_RF_REQ) {
            if (avail - off < DN2F_REQ_AFTER_LEN) {
                return -DN2F_E_TRUNC;
            }
            r->after = dn2f_ld32(x + DN2F_O_REQ_AFTER);
            off += DN2F_REQ_AFTER_LEN;
        }
        break;
    case DN2F_REC_MCAST_ORIGIN:
        if (avail - off < DN2F_MC_EXT_LEN) {
            return -DN2F_E_TRUNC;
        }
        if (r->seq != 0) {
            return -DN2F_E_RESERVED;
        }
        r->group = dn2f_ld16(x + DN2F_O_MC_GROUP);
        r->nmemb = dn2f_ld16(x + DN2F_O_MC_NMEMB);
        off += DN2F_MC_EXT_LEN;
        if (!dn2f_lid_is_mcast(r->group)) {
            return -DN2F_E_FIELD;
        }
        if (r->nmemb == 0 || r->nmemb > DN2F_MCAST_MAX_MEMBERS) {
            return -DN2F_E_FIELD;
        }
        if (avail - off < (size_t)r->nmemb * DN2F_MEMBER_LEN) {
            return -DN2F_E_TRUNC;
        }
        r->members = p + off;
        for (i = 0; i < r->nmemb; i++) {
            struct dn2f_member mb;
            unsigned j;
            int rc = dec_member(r->members + i * DN2F_MEMBER_LEN, &mb);
            if (rc) {
                return rc;
            }
            for (j = 0; j < i; j++) {       /* each member once */
                if (dn2f_ld16(r->members + j * DN2F_MEMBER_LEN + DN2F_O_MEMBER_LID) ==
                    mb.lid) {
                    return -DN2F_E_FIELD;
                }
            }
        }
        off += (size_t)r->nmemb * DN2F_MEMBER_LEN;
        break;
    case DN2F_REC_MCAST_COPY:
        if (avail - off < DN2F_MC_EXT_LEN) {
            return -DN2F_E_TRUNC;
        }
        r->group = dn2f_ld16(x + DN2F_O_MC_GROUP);
        if (dn2f_ld16(x + DN2F_O_MC_NMEMB)) {
            return -DN2F_E_RESERVED;
        }
        off += DN2F_MC_EXT_LEN;
        if (!dn2f_lid_is_mcast(r->group)) {
            return -DN2F_E_FIELD;
        }
        break;
    default:
        return -DN2F_E_FIELD;
    }
    if (r->rflags & DN2F_RF_VT) {
        x = p + off;
        if (avail - off < DN2F_VT_LEN) {
            return -DN2F_E_TRUNC;
        }
        r->vtime = dn2f_ld64(x + DN2F_O_VT_VTIME);
        r->vseq = dn2f_ld32(x + DN2F_O_VT_VSEQ);
        if (dn2f_ld32(x + DN2F_O_VT_RSVD)) {
            return -DN2F_E_RESERVED;
        }
        off += DN2F_VT_LEN;
    }
    padded = dn2f_pad4(r->len);
    if (avail - off < padded) {
        return -DN2F_E_TRUNC;
    }
    r->pkt = p + off;
    if (!dn2f_all_zero(p + off + r->len, padded - r->len)) {
        return -DN2F_E_RESERVED;
    }
    /* The packet's DWID names its lane; a request lane carries only the
     * RVL family (and only unicast, above: multicast travels in the data
     * lanes).  An RVL without REQ is accepted in its data lane, where
     * version 2 put it: hand-made datagrams (test and soak peers) still
     * work, ordered with that sender's data; dn2f_ep_send never does it.
     * The DLID must agree with the fabric header. */
    if (dn2f_pkt_dwid(r->pkt) != (r->lane & 1u)) {
        return -DN2F_E_FIELD;
    }
    if ((r->rflags & DN2F_RF_REQ) && !dn2f_h0_is_rvl(dn2f_ld64(r->pkt))) {
        return -DN2F_E_FIELD;
    }
    if (r->kind == DN2F_REC_UNICAST) {
        if (dn2f_pkt_dlid(r->pkt) != dst) {
            return -DN2F_E_FIELD;
        }
    } else if (dn2f_pkt_dlid(r->pkt) != r->group) {
        return -DN2F_E_FIELD;
    }
    *used = off + padded;
    return 0;
}

static int dec_data(const uint8_t *body, size_t blen, struct dn2f_msg *m)
{
    size_t off = 0, used;
    struct dn2f_rec r;
    unsigned nvt = 0;
    int rc;

    m->u.data.acks.n = 0;
    if (blen < DN2F_DATA_TS_LEN) {
        return -DN2F_E_TRUNC;
    }
    m->u.data.ts = dn2f_ld32(body + DN2F_O_DATA_TS);
    off = DN2F_DATA_TS_LEN;
    if (m->h.flags & DN2F_F_ACK) {
        rc = dec_acks(body + off, blen - off, &m->u.data.acks, &used);
        if (rc) {
            return rc;
        }
        off += used;
    }
    m->u.data.recs = body + off;
    m->u.data.recs_len = blen - off;
    m->u.data.nrecs = 0;
    m->u.data.kinds = 0;
    while (off < blen) {
        rc = dec_rec(body + off, blen - off, m->h.dst_lid, &r, &used);
        if (rc) {
            return rc;
        }
        m->u.data.nrecs++;
        m->u.data.kinds |= (uint8_t)(1u << r.kind);
        nvt += (r.rflags & DN2F_RF_VT) ? 1 : 0;
        off += used;
    }
    if (m->u.data.nrecs == 0) {
        return -DN2F_E_TRUNC;
    }
    /* Virtual time is a property of the datagram's sender: all or none. */
    if (nvt && nvt != m->u.data.nrecs) {
        return -DN2F_E_FIELD;
    }
    m->u.data.vt = nvt != 0;
    /* A datagram is either all MCAST_ORIGIN (to a group, via the switch),
     * or unicast / MCAST_COPY records to one board. */
    if (m->u.data.kinds & (1u << DN2F_REC_MCAST_ORIGIN)) {
        if (m->u.data.kinds != (1u << DN2F_REC_MCAST_ORIGIN) ||
            !dn2f_lid_is_mcast(m->h.dst_lid) || m->u.data.acks.n) {
            return -DN2F_E_FIELD;
        }
    } else if (!dn2_lid_assignable(m->h.dst_lid)) {
        return -DN2F_E_FIELD;
    }
    return 0;
}

/* ---------------------------------------------------------------- ROUTES */
/* A route entry (always DN2F_ROUTE_LEN bytes).  Fills all of r (addr unset
 * when it does not decode) and returns the first problem. */
static int dec_route(const uint8_t *p, struct dn2f_route *r)
{
    int addr_rc;

    r->lid = dn2f_ld16(p + DN2F_O_ROUTE_LID);
    r->flags = p[DN2F_O_ROUTE_FLAGS];
    addr_rc = dn2f_get_waddr(p, &r->addr);
    r->epoch = dn2f_ld64(p + DN2F_O_ROUTE_EPOCH);
    memcpy(r->token, p + DN2F_O_ROUTE_TOKEN, DN2F_TOKEN_LEN);
    if (!dn2_lid_assignable(r->lid)) {
        return -DN2F_E_FIELD;
    }
    if (r->flags & ~DN2F_RT_DIRECT) {
        return -DN2F_E_FLAGS;
    }
    return addr_rc;
}

/* A group entry at p (avail bytes): group LID, n members (LIDs at
 * *members), *used bytes with its padding. */
static int dec_group(const uint8_t *p, size_t avail, uint16_t *group, uint16_t *n,
                     const uint8_t **members, size_t *used)
{
    size_t gl, lids;
    unsigned j;

    if (avail < DN2F_O_GROUP_MEMBERS) {
        return -DN2F_E_TRUNC;
    }
    *group = dn2f_ld16(p + DN2F_O_GROUP_LID);
    *n = dn2f_ld16(p + DN2F_O_GROUP_N);
    if (!dn2f_lid_is_mcast(*group) || *n > DN2F_MCAST_MAX_MEMBERS) {
        return -DN2F_E_FIELD;
    }
    gl = dn2f_group_len(*n);
    if (avail < gl) {
        return -DN2F_E_TRUNC;
    }
    *members = p + DN2F_O_GROUP_MEMBERS;
    for (j = 0; j < *n; j++) {
        if (!dn2_lid_assignable(dn2f_ld16(*members + 2 * j))) {
            return -DN2F_E_FIELD;
        }
    }
    lids = DN2F_O_GROUP_MEMBERS + 2 * (size_t)*n;
    if (!dn2f_all_zero(p + lids, gl - lids)) {
        return -DN2F_E_RESERVED;
    }
    *used = gl;
    return 0;
}

static int dec_routes(const uint8_t *body, size_t blen, struct dn2f_msg *m)
{
    size_t off = DN2F_ROUTES_HDR_LEN;
    unsigned i;

    if (blen < DN2F_ROUTES_HDR_LEN) {
        return -DN2F_E_TRUNC;
    }
    m->u.routes.gen = dn2f_ld32(body + DN2F_O_ROUTES_GEN);
    m->u.routes.chunk = dn2f_ld16(body + DN2F_O_ROUTES_CHUNK);
    m->u.routes.nchunks = dn2f_ld16(body + DN2F_O_ROUTES_NCHUNKS);
    m->u.routes.nroutes = dn2f_ld16(body + DN2F_O_ROUTES_NROUTES);
    m->u.routes.ngroups = dn2f_ld16(body + DN2F_O_ROUTES_NGROUPS);
    if (dn2f_ld32(body + DN2F_O_ROUTES_RSVD)) {
        return -DN2F_E_RESERVED;
    }
    if (m->u.routes.nchunks == 0 || m->u.routes.nchunks > DN2F_ROUTES_MAX_CHUNKS ||
        m->u.routes.chunk >= m->u.routes.nchunks) {
        return -DN2F_E_FIELD;
    }
    if (m->u.routes.nroutes > DN2F_NUM_CLID || m->u.routes.ngroups > DN2F_NUM_GROUPS) {
        return -DN2F_E_FIELD;
    }
    if ((blen - off) / DN2F_ROUTE_LEN < m->u.routes.nroutes) {
        return -DN2F_E_TRUNC;
    }
    for (i = 0; i < m->u.routes.nroutes; i++) {
        struct dn2f_route r;
        int rc = dec_route(body + off, &r);
        if (rc) {
            return rc;
        }
        off += DN2F_ROUTE_LEN;
    }
    for (i = 0; i < m->u.routes.ngroups; i++) {
        uint16_t g, n;
        const uint8_t *mem;
        size_t used;
        int rc = dec_group(body + off, blen - off, &g, &n, &mem, &used);
        if (rc) {
            return rc;
        }
        off += used;
    }
    if (off != blen) {
        return -DN2F_E_TRUNC;
    }
    m->u.routes.body = body + DN2F_ROUTES_HDR_LEN;
    m->u.routes.body_len = blen - DN2F_ROUTES_HDR_LEN;
    return 0;
}

/* ------------------------------------------------------------ STATS_RESP */
/* A port statistics entry (always DN2F_PORTSTAT_LEN bytes). */
static int dec_portstat(const uint8_t *p, struct dn2f_portstat *ps)
{
    int addr_rc;

    ps->lid = dn2f_ld16(p + DN2F_O_PS_LID);
    ps->state = p[DN2F_O_PS_STATE];
    addr_rc = dn2f_get_waddr(p, &ps->addr);
    ps->guid = dn2f_ld64(p + DN2F_O_PS_GUID);
    ps->epoch = dn2f_ld64(p + DN2F_O_PS_EPOCH);
    ps->rx_pkts = dn2f_ld64(p + DN2F_O_PS_RX_PKTS);
    ps->rx_bytes = dn2f_ld64(p + DN2F_O_PS_RX_BYTES);
    ps->tx_pkts = dn2f_ld64(p + DN2F_O_PS_TX_PKTS);
    ps->tx_bytes = dn2f_ld64(p + DN2F_O_PS_TX_BYTES);
    ps->drops = dn2f_ld64(p + DN2F_O_PS_DROPS);
    ps->retx = dn2f_ld64(p + DN2F_O_PS_RETX);
    if (!dn2_lid_assignable(ps->lid) || ps->state < 1 || ps->state > 2) {
        return -DN2F_E_FIELD;
    }
    return addr_rc;
}

static int dec_stats(const uint8_t *body, size_t blen, struct dn2f_msg *m)
{
    unsigned i;
    struct dn2f_swsummary *s = &m->u.stats.sum;

    if (blen < DN2F_STATS_HDR_LEN) {
        return -DN2F_E_TRUNC;
    }
    m->u.stats.cookie = dn2f_ld32(body + DN2F_O_STATS_COOKIE);
    m->u.stats.chunk = dn2f_ld16(body + DN2F_O_STATS_CHUNK);
    m->u.stats.nchunks = dn2f_ld16(body + DN2F_O_STATS_NCHUNKS);
    m->u.stats.nports = dn2f_ld16(body + DN2F_O_STATS_NPORTS);
    s->route_mode = body[DN2F_O_STATS_ROUTE_MODE];
    if (body[DN2F_O_STATS_FLAGS] & ~DN2F_STATS_F_VT) {
        return -DN2F_E_FLAGS;
    }
    s->vt = (body[DN2F_O_STATS_FLAGS] & DN2F_STATS_F_VT) != 0;
    s->routes_gen = dn2f_ld32(body + DN2F_O_STATS_ROUTES_GEN);
    s->uptime_ms = dn2f_ld64(body + DN2F_O_STATS_UPTIME_MS);
    s->dgrams_in = dn2f_ld64(body + DN2F_O_STATS_DGRAMS_IN);
    s->dgrams_fwd = dn2f_ld64(body + DN2F_O_STATS_DGRAMS_FWD);
    s->bad = dn2f_ld64(body + DN2F_O_STATS_BAD);
    s->inj_drop = dn2f_ld64(body + DN2F_O_STATS_INJ_DROP);
    s->inj_dup = dn2f_ld64(body + DN2F_O_STATS_INJ_DUP);
    s->inj_reorder = dn2f_ld64(body + DN2F_O_STATS_INJ_REORDER);
    s->inj_delay = dn2f_ld64(body + DN2F_O_STATS_INJ_DELAY);
    if (m->u.stats.nchunks == 0 || m->u.stats.nchunks > DN2F_ROUTES_MAX_CHUNKS ||
        m->u.stats.chunk >= m->u.stats.nchunks) {
        return -DN2F_E_FIELD;
    }
    if (s->route_mode != DN2F_ROUTE_DIRECT && s->route_mode != DN2F_ROUTE_SWITCH) {
        return -DN2F_E_FIELD;
    }
    if (s->vt) {
        const uint8_t *v = body + DN2F_STATS_HDR_LEN;
        if (blen - DN2F_STATS_HDR_LEN < DN2F_STATS_VT_LEN) {
            return -DN2F_E_TRUNC;
        }
        s->vt_reports = dn2f_ld64(v + DN2F_O_SVT_REPORTS);
        s->vt_grants = dn2f_ld64(v + DN2F_O_SVT_GRANTS);
        s->vt_time = dn2f_ld64(v + DN2F_O_SVT_TIME);
        s->vt_boards = dn2f_ld32(v + DN2F_O_SVT_BOARDS);
        if (dn2f_ld32(v + DN2F_O_SVT_RSVD)) {
            return -DN2F_E_RESERVED;
        }
        body += DN2F_STATS_VT_LEN;
        blen -= DN2F_STATS_VT_LEN;
    }
    if ((blen - DN2F_STATS_HDR_LEN) != (size_t)m->u.stats.nports * DN2F_PORTSTAT_LEN) {
        return -DN2F_E_TRUNC;
    }
    for (i = 0; i < m->u.stats.nports; i++) {
        struct dn2f_portstat ps;
        int rc = dec_portstat(body + DN2F_STATS_HDR_LEN + i * DN2F_PORTSTAT_LEN, &ps);
        if (rc) {
            return rc;
        }
    }
    m->u.stats.ports = body + DN2F_STATS_HDR_LEN;
    return 0;
}

/* ------------------------------------------------- fixed-size bodies */
static int dec_hello(const uint8_t *body, size_t blen, struct dn2f_msg *m)
{
    if (blen != DN2F_HELLO_LEN) {
        return -DN2F_E_LENGTH;
    }
    m->u.hello.guid = dn2f_ld64(body + DN2F_O_HELLO_GUID);
    m->u.hello.lid_hint = dn2f_ld16(body + DN2F_O_HELLO_LID_HINT);
    if (!dn2f_all_zero(body + DN2F_O_HELLO_RSVD, DN2F_HELLO_LEN - DN2F_O_HELLO_RSVD)) {
        return -DN2F_E_RESERVED;
    }
    if (m->u.hello.guid == 0 || m->h.src_epoch == 0 || m->h.dst_lid != 0 ||
        (m->u.hello.lid_hint && !dn2_lid_assignable(m->u.hello.lid_hint))) {
        return -DN2F_E_FIELD;
    }
    return 0;
}

static int dec_assign(const uint8_t *body, size_t blen, struct dn2f_msg *m)
{
    struct dn2f_assign *a = &m->u.assign;

    if (blen != DN2F_ASSIGN_LEN) {
        return -DN2F_E_LENGTH;
    }
    a->guid = dn2f_ld64(body + DN2F_O_ASSIGN_GUID);
    a->lid = dn2f_ld16(body + DN2F_O_ASSIGN_LID);
    a->link_state = body[DN2F_O_ASSIGN_LINK_STATE];
    a->route_mode = body[DN2F_O_ASSIGN_ROUTE_MODE];
    a->ticket.time = dn2f_ld32(body + DN2F_O_ASSIGN_TICKET_TIME);
    memcpy(a->ticket.mac, body + DN2F_O_ASSIGN_TICKET_MAC, DN2F_TICKET_LEN);
    memcpy(a->token, body + DN2F_O_ASSIGN_TOKEN, DN2F_TOKEN_LEN);
    if (a->link_state > 3 ||
        (a->route_mode != DN2F_ROUTE_DIRECT && a->route_mode != DN2F_ROUTE_SWITCH) ||
        !dn2_lid_assignable(a->lid) || m->h.dst_lid != a->lid) {
        return -DN2F_E_FIELD;
    }
    return 0;
}

static int dec_keepalive(const uint8_t *body, size_t blen, struct dn2f_msg *m)
{
    if (blen != DN2F_KEEPALIVE_LEN) {
        return -DN2F_E_LENGTH;
    }
    m->u.keepalive.gen = dn2f_ld32(body + DN2F_O_KA_GEN);
    m->u.keepalive.ticket.time = dn2f_ld32(body + DN2F_O_KA_TICKET_TIME);
    m->u.keepalive.guid = dn2f_ld64(body + DN2F_O_KA_GUID);
    memcpy(m->u.keepalive.ticket.mac, body + DN2F_O_KA_TICKET_MAC, DN2F_TICKET_LEN);
    return 0;
}

static int dec_bye(const uint8_t *body, size_t blen, struct dn2f_msg *m)
{
    if (blen != DN2F_BYE_LEN) {
        return -DN2F_E_LENGTH;
    }
    if (dn2f_ld32(body + DN2F_O_BYE_RSVD)) {
        return -DN2F_E_RESERVED;
    }
    m->u.bye.reason = dn2f_ld32(body + DN2F_O_BYE_REASON);
    if (m->u.bye.reason >= DN2F_BYE_MAX) {
        return -DN2F_E_FIELD;
    }
    return 0;
}

/* cookie, chunk, then zero padding of any length */
static int dec_stats_req(const uint8_t *body, size_t blen, struct dn2f_msg *m)
{
    if (blen < DN2F_STATS_REQ_BODY_MIN) {
        return -DN2F_E_LENGTH;
    }
    m->u.stats_req.cookie = dn2f_ld32(body + DN2F_O_SREQ_COOKIE);
    m->u.stats_req.chunk = dn2f_ld16(body + DN2F_O_SREQ_CHUNK);
    if (!dn2f_all_zero(body + DN2F_O_SREQ_RSVD, blen - DN2F_O_SREQ_RSVD)) {
        return -DN2F_E_RESERVED;
    }
    return 0;
}

static int dec_mcast(const uint8_t *body, size_t blen, struct dn2f_msg *m)
{
    if (blen != DN2F_MCAST_LEN) {
        return -DN2F_E_LENGTH;
    }
    m->u.mcast.group = dn2f_ld16(body + DN2F_O_MCAST_GROUP);
    if (!dn2f_all_zero(body + DN2F_O_MCAST_RSVD, DN2F_MCAST_LEN - DN2F_O_MCAST_RSVD)) {
        return -DN2F_E_RESERVED;
    }
    if (!dn2f_lid_is_mcast(m->u.mcast.group) || !dn2_lid_assignable(m->h.src_lid)) {
        return -DN2F_E_FIELD;
    }
    return 0;
}

/* ---------------------------------------------------------- virtual time */
/* VT_REPORT: from a board (its LID) to the switch (LID 0). */
static int dec_vt_report(const uint8_t *body, size_t blen, struct dn2f_msg *m)
{
    struct dn2f_vt_report *r = &m->u.vt_report;

    if (blen != DN2F_VT_REPORT_LEN) {
        return -DN2F_E_LENGTH;
    }
    r->rseq = dn2f_ld32(body + DN2F_O_VTR_RSEQ);
    r->now = dn2f_ld64(body + DN2F_O_VTR_NOW);
    r->earliest = dn2f_ld64(body + DN2F_O_VTR_EARLIEST);
    if (dn2f_ld32(body + DN2F_O_VTR_FLAGS)) {
        return -DN2F_E_FLAGS;
    }
    if (dn2f_ld64(body + DN2F_O_VTR_RSVD)) {
        return -DN2F_E_RESERVED;
    }
    if (r->earliest < r->now || !dn2_lid_assignable(m->h.src_lid) || m->h.dst_lid != 0) {
        return -DN2F_E_FIELD;
    }
    return 0;
}

/* VT_GRANT: from the switch (LID 0) to a board (its LID). */
static int dec_vt_grant(const uint8_t *body, size_t blen, struct dn2f_msg *m)
{
    struct dn2f_vt_grant *g = &m->u.vt_grant;

    if (blen != DN2F_VT_GRANT_LEN) {
        return -DN2F_E_LENGTH;
    }
    g->rseq = dn2f_ld32(body + DN2F_O_VTG_RSEQ);
    g->horizon = dn2f_ld64(body + DN2F_O_VTG_HORIZON);
    g->lookahead_ns = dn2f_ld32(body + DN2F_O_VTG_LOOKAHEAD);
    g->quantum_ns = dn2f_ld32(body + DN2F_O_VTG_QUANTUM);
    g->slowest = dn2f_ld64(body + DN2F_O_VTG_SLOWEST);
    if (dn2f_ld32(body + DN2F_O_VTG_FLAGS)) {
        return -DN2F_E_FLAGS;
    }
    if (dn2f_ld64(body + DN2F_O_VTG_RSVD)) {
        return -DN2F_E_RESERVED;
    }
    if (m->h.src_lid != 0 || !dn2_lid_assignable(m->h.dst_lid)) {
        return -DN2F_E_FIELD;
    }
    return 0;
}

/* ------------------------------------------------------------ datagram */
/* The header; 0 or the error of a bad magic / version / type / length. */
static int dec_hdr(const uint8_t *p, size_t len, struct dn2f_hdr *h)
{
    if (dn2f_ld32(p + DN2F_O_HDR_MAGIC) != DN2F_MAGIC) {
        return -DN2F_E_MAGIC;
    }
    h->version = p[DN2F_O_HDR_VERSION];
    h->type = p[DN2F_O_HDR_TYPE];
    h->flags = dn2f_ld16(p + DN2F_O_HDR_FLAGS);
    h->src_lid = dn2f_ld16(p + DN2F_O_HDR_SRC_LID);
    h->dst_lid = dn2f_ld16(p + DN2F_O_HDR_DST_LID);
    h->length = dn2f_ld32(p + DN2F_O_HDR_LENGTH);
    h->src_epoch = dn2f_ld64(p + DN2F_O_HDR_SRC_EPOCH);
    h->dst_epoch = dn2f_ld64(p + DN2F_O_HDR_DST_EPOCH);
    h->src_sess = dn2f_ld32(p + DN2F_O_HDR_SRC_SESS);
    h->dst_sess = dn2f_ld32(p + DN2F_O_HDR_DST_SESS);
    if (h->version != DN2F_VERSION) {
        return -DN2F_E_VERSION;
    }
    if (h->type == 0 || h->type >= DN2F_T_MAX) {
        return -DN2F_E_TYPE;
    }
    if (len > DN2F_DGRAM_MAX || h->length != len) {
        return h->length > len ? -DN2F_E_SHORT : -DN2F_E_LENGTH;
    }
    return 0;
}

int dn2f_decode(const void *buf, size_t len, struct dn2f_msg *m)
{
    const uint8_t *p = buf;
    const uint8_t *body;
    size_t blen;
    unsigned allowed = 0;
    int rc;

    memset(m, 0, sizeof(*m));
    if (!buf || len < DN2F_HDR_LEN) {
        return -DN2F_E_SHORT;
    }
    rc = dec_hdr(p, len, &m->h);
    if (rc) {
        return rc;
    }
    if (m->h.type == DN2F_T_DATA) {
        allowed = DN2F_F_ACK | DN2F_F_ACKREQ;
    } else if (m->h.type == DN2F_T_ACK) {
        allowed = DN2F_F_ACKREQ;
    }
    allowed |= DN2F_F_MAC;
    if (m->h.flags & ~allowed) {
        return -DN2F_E_FLAGS;
    }
    if (m->h.flags & DN2F_F_MAC) {
        if (len < DN2F_HDR_LEN + DN2F_MAC_LEN) {
            return -DN2F_E_SHORT;
        }
        len -= DN2F_MAC_LEN;            /* the body ends before the trailer */
        m->mac = p + len;
    }
    /* Sessions: only between boards (DATA to a board, ACK), where the
     * sender's is never 0. */
    if (m->h.type == DN2F_T_ACK ||
        (m->h.type == DN2F_T_DATA && !dn2f_lid_is_mcast(m->h.dst_lid))) {
        if (m->h.src_sess == 0) {
            return -DN2F_E_FIELD;
        }
    } else if (m->h.src_sess || m->h.dst_sess) {
        return -DN2F_E_RESERVED;
    }
    body = p + DN2F_HDR_LEN;
    blen = len - DN2F_HDR_LEN;

    switch (m->h.type) {
    case DN2F_T_HELLO:
        return dec_hello(body, blen, m);
    case DN2F_T_ASSIGN:
        return dec_assign(body, blen, m);
    case DN2F_T_ROUTES:
        return dec_routes(body, blen, m);
    case DN2F_T_DATA:
        if (!dn2_lid_assignable(m->h.src_lid)) {
            return -DN2F_E_FIELD;
        }
        return dec_data(body, blen, m);
    case DN2F_T_ACK: {
        size_t used;
        if (!dn2_lid_assignable(m->h.src_lid) || !dn2_lid_assignable(m->h.dst_lid)) {
            return -DN2F_E_FIELD;
        }
        rc = dec_acks(body, blen, &m->u.acks, &used);
        if (rc) {
            return rc;
        }
        return used == blen ? 0 : -DN2F_E_LENGTH;
    }
    case DN2F_T_KEEPALIVE:
        return dec_keepalive(body, blen, m);
    case DN2F_T_BYE:
        return dec_bye(body, blen, m);
    case DN2F_T_STATS_REQ:
        return dec_stats_req(body, blen, m);
    case DN2F_T_STATS_RESP:
        return dec_stats(body, blen, m);
    case DN2F_T_MCAST_JOIN:
    case DN2F_T_MCAST_LEAVE:
        return dec_mcast(body, blen, m);
    case DN2F_T_VT_REPORT:
        return dec_vt_report(body, blen, m);
    case DN2F_T_VT_GRANT:
        return dec_vt_grant(body, blen, m);
    default:
        return -DN2F_E_TYPE;
    }
}

bool dn2f_mac_ok(const void *buf, const struct dn2f_msg *m, const struct dn2f_hmac_key *key)
{
    struct dn2f_hmac h;
    uint8_t mac[DN2F_SHA256_LEN];
    if (!m->mac) {
        return false;
    }
    dn2f_hmac_start(&h, key);
    dn2f_hmac_update(&h, buf, (size_t)(m->mac - (const uint8_t *)buf));
    dn2f_hmac_finish(&h, mac);
    return dn2f_ct_equal(mac, m->mac, DN2F_MAC_LEN);
}

/* ------------------------------------------------------------- iterators */
/* They walk a datagram dn2f_decode() accepted, with the same decoders. */
void dn2f_data_iter(const struct dn2f_msg *m, struct dn2f_iter *it)
{
    it->p = m->u.data.recs;
    it->end = m->u.data.recs + m->u.data.recs_len;
    it->left = m->u.data.nrecs;
    it->left2 = m->h.dst_lid;
}

bool dn2f_data_next(struct dn2f_iter *it, struct dn2f_rec *r)
{
    size_t used;
    if (!it->left || it->p >= it->end) {
        return false;
    }
    if (dec_rec(it->p, (size_t)(it->end - it->p), (uint16_t)it->left2, r, &used)) {
        it->left = 0;           /* cannot happen on a validated datagram */
        return false;
    }
    it->p += used;
    it->left--;
    return true;
}

void dn2f_rec_member_full(const struct dn2f_rec *r, unsigned i, struct dn2f_member *mb)
{
    (void)dec_member(r->members + (size_t)i * DN2F_MEMBER_LEN, mb);
}

void dn2f_rec_member(const struct dn2f_rec *r, unsigned i,
                     uint16_t *lid, uint32_t *seq, uint64_t *epoch)
{
    struct dn2f_member mb;

    dn2f_rec_member_full(r, i, &mb);
    *lid = mb.lid;
    *seq = mb.seq;
    *epoch = mb.epoch;
}

void dn2f_routes_iter(const struct dn2f_msg *m, struct dn2f_iter *it)
{
    it->p = m->u.routes.body;
    it->end = m->u.routes.body + m->u.routes.body_len;
    it->left = m->u.routes.nroutes;
    it->left2 = m->u.routes.ngroups;
}

bool dn2f_routes_next_route(struct dn2f_iter *it, struct dn2f_route *r)
{
    if (!it->left || (size_t)(it->end - it->p) < DN2F_ROUTE_LEN) {
        return false;
    }
    (void)dec_route(it->p, r);
    it->p += DN2F_ROUTE_LEN;
    it->left--;
    return true;
}

bool dn2f_routes_next_group(struct dn2f_iter *it, uint16_t *group,
                            uint16_t *n, const uint8_t **members)
{
    size_t used;
    if (it->left) {
        /* skip remaining routes first */
        size_t skip = (size_t)it->left * DN2F_ROUTE_LEN;
        if ((size_t)(it->end - it->p) < skip) {
            return false;
        }
        it->p += skip;
        it->left = 0;
    }
    if (!it->left2 ||
        dec_group(it->p, (size_t)(it->end - it->p), group, n, members, &used)) {
        return false;
    }
    it->p += used;
    it->left2--;
    return true;
}

void dn2f_stats_iter(const struct dn2f_msg *m, struct dn2f_iter *it)
{
    it->p = m->u.stats.ports;
    it->end = m->u.stats.ports + (size_t)m->u.stats.nports * DN2F_PORTSTAT_LEN;
    it->left = m->u.stats.nports;
    it->left2 = 0;
}

bool dn2f_stats_next(struct dn2f_iter *it, struct dn2f_portstat *ps)
{
    if (!it->left || (size_t)(it->end - it->p) < DN2F_PORTSTAT_LEN) {
        return false;
    }
    (void)dec_portstat(it->p, ps);
    it->p += DN2F_PORTSTAT_LEN;
    it->left--;
    return true;
}
