/* SPDX-License-Identifier: MIT */
/*
 * dn2fab switch core.  See dn2fab-sw.h and docs/fabric.md.
 *
 * Port states: (none) --HELLO--> ACTIVE --timeout / BYE / address taken-->
 * GONE (the GUID -> LID binding is remembered, so a board that comes back
 * gets its LID again; a GONE entry is reclaimed only when LIDs run out or
 * another board asks for that LID as its hint).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1
#endif
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dn2fab-int.h"
#include "dn2fab-sw.h"

#define NO_DEADLINE UINT64_MAX
#define HOUSEKEEP_NS 50000000ULL        /* 50 ms */
#define ROUTES_COALESCE_NS 2000000ULL   /* 2 ms */
#define REORDER_HOLD_NS 1000000ULL      /* a held datagram waits at most 1 ms */
#define BYE_TOKENS_PER_S 100

enum port_state { PORT_ACTIVE = 1, PORT_GONE = 2 };

struct swport {
    uint16_t lid;
    enum port_state state;
    uint64_t guid, epoch;
    struct dn2f_addr addr;
    uint64_t last_seen;
    uint64_t rx_pkts, rx_bytes, tx_pkts, tx_bytes, drops, retx;
};

struct swgroup {
    uint16_t n;
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

    struct fq *fq_head, *fq_tail;
    unsigned fq_n;
    size_t fq_bytes;

    uint8_t *obuf;
    struct dn2f_swsummary sum;
};

/* --------------------------------------------------------------- basics */
void dn2f_sw_config_default(struct dn2f_sw_config *c)
{
    memset(c, 0, sizeof(*c));
    c->route_mode = DN2F_ROUTE_DIRECT;
    c->delay_frac = 1.0;
    c->seed = 1;
    c->port_timeout_ns = 3000000000ULL;
    c->fault_queue_max = 4096;
    c->fault_queue_bytes = 64u << 20;
}

static uint64_t now(struct dn2f_sw *sw)
{
    return sw->ops.now_ns(sw->opaque);
}

static void logf_(struct dn2f_sw *sw, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void logf_(struct dn2f_sw *sw, const char *fmt, ...)
{
    char msg[256];
    va_list ap;
    if (!sw->ops.log) {
        return;
    }
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    sw->ops.log(sw->opaque, msg);
}

static void capture(struct dn2f_sw *sw, unsigned ev, unsigned flags, unsigned reason,
                    uint16_t in, uint16_t out, const void *buf, size_t len)
{
    if (sw->ops.capture) {
        sw->ops.capture(sw->opaque, ev, flags, reason, in, out, buf, len);
    }
}

static struct swport *port_by_lid(struct dn2f_sw *sw, uint16_t lid)
{
    if (!dn2_lid_assignable(lid)) {
        return NULL;
    }
    return sw->ports[dn2f_lid_index(lid)];
}

static struct swport *live_port(struct dn2f_sw *sw, uint16_t lid)
{
    struct swport *p = port_by_lid(sw, lid);
    return p && p->state == PORT_ACTIVE ? p : NULL;
}

/* The live port that sent this datagram, or NULL. */
static struct swport *src_port(struct dn2f_sw *sw, const struct dn2f_addr *from,
                               const struct dn2f_msg *m)
{
    struct swport *p = live_port(sw, m->h.src_lid);
    if (!p || !dn2f_addr_equal(&p->addr, from) || p->epoch != m->h.src_epoch) {
        return NULL;
    }
    return p;
}

static void mark_dirty(struct dn2f_sw *sw)
{
    if (!sw->dirty) {
        sw->dirty = true;
        sw->dirty_due = now(sw) + ROUTES_COALESCE_NS;
    }
}

static void raw_send(struct dn2f_sw *sw, const struct dn2f_addr *to, const void *buf, size_t len)
{
    (void)sw->ops.send_datagram(sw->opaque, to, buf, len);
}

static void send_ctrl_buf(struct dn2f_sw *sw, const struct dn2f_addr *to, uint16_t out_lid,
                          const void *buf, size_t len)
{
    if (!len) {
        return;
    }
    capture(sw, DN2F_CAP_CTRL_TX, 0, 0, 0, out_lid, buf, len);
    raw_send(sw, to, buf, len);
}

static void send_small(struct dn2f_sw *sw, const struct dn2f_addr *to, unsigned type,
                       uint16_t dst, uint64_t dst_epoch, uint32_t a)
{
    uint8_t buf[64];
    struct dn2f_wbuf w;
    dn2f_wbuf_init(&w, buf, sizeof(buf));
    dn2f_put_hdr(&w, type, 0, 0, dst, sw->epoch, dst_epoch);
    dn2f_put_u32pair(&w, a, 0);
    send_ctrl_buf(sw, to, dst, buf, dn2f_finish(&w));
}

/* Rate-limited "who are you?" to an unknown source (it will HELLO again). */
static void send_bye_unknown(struct dn2f_sw *sw, const struct dn2f_addr *to, uint64_t dst_epoch)
{
    uint64_t t = now(sw);
    sw->bye_tokens += (double)(t - sw->bye_last) * BYE_TOKENS_PER_S / 1e9;
    sw->bye_last = t;
    if (sw->bye_tokens > BYE_TOKENS_PER_S) {
        sw->bye_tokens = BYE_TOKENS_PER_S;
    }
    if (sw->bye_tokens < 1) {
        return;
    }
    sw->bye_tokens -= 1;
    send_small(sw, to, DN2F_T_BYE, 0, dst_epoch, DN2F_BYE_UNKNOWN);
}

/* ------------------------------------------------------ fault injection */
static void fq_unlink(struct dn2f_sw *sw, struct fq *e)
{
    if (e->prev) {
        e->prev->next = e->next;
    } else {
        sw->fq_head = e->next;
    }
    if (e->next) {
        e->next->prev = e->prev;
    } else {
        sw->fq_tail = e->prev;
    }
    sw->fq_n--;
    sw->fq_bytes -= e->len;
}

static void fq_release(struct dn2f_sw *sw, struct fq *e)
{
    struct swport *op = live_port(sw, e->out_lid);
    fq_unlink(sw, e);
    capture(sw, DN2F_CAP_FWD, e->flags, 0, e->in_lid, e->out_lid, e->buf, e->len);
    raw_send(sw, &e->to, e->buf, e->len);
    (void)op;
    free(e);
}

static bool fq_insert(struct dn2f_sw *sw, const struct dn2f_addr *to, const void *buf,
                      size_t len, uint64_t due, bool held, unsigned flags,
                      uint16_t in, uint16_t out)
{
    struct fq *e, *at;
    if (sw->fq_n >= sw->cfg.fault_queue_max || sw->fq_bytes + len > sw->cfg.fault_queue_bytes) {
        return false;
    }
    e = malloc(sizeof(*e) + len);
    if (!e) {
        return false;
    }
    e->due = due;
    e->held = held;
    e->flags = flags;
    e->in_lid = in;
    e->out_lid = out;
    e->to = *to;
    e->len = len;
    memcpy(e->buf, buf, len);
    for (at = sw->fq_tail; at && at->due > due; at = at->prev) {
    }
    e->prev = at;
    e->next = at ? at->next : sw->fq_head;
    if (e->next) {
        e->next->prev = e;
    } else {
        sw->fq_tail = e;
    }
    if (at) {
        at->next = e;
    } else {
        sw->fq_head = e;
    }
    sw->fq_n++;
    sw->fq_bytes += len;
    return true;
}

static void release_held(struct dn2f_sw *sw)
{
    struct fq *e, *nx;
    for (e = sw->fq_head; e; e = nx) {
        nx = e->next;
        if (e->held) {
            fq_release(sw, e);
        }
    }
}

/* Send a data-plane datagram (DATA / ACK) toward a board. */
static void data_send(struct dn2f_sw *sw, struct swport *out, uint16_t in_lid,
                      const void *buf, size_t len, uint64_t pkts, uint64_t bytes)
{
    double r_drop, r_dup, r_reorder, r_delay;
    unsigned copies, c;
    uint64_t t;

    out->tx_pkts += pkts;
    out->tx_bytes += bytes;
    sw->sum.dgrams_fwd++;
    if (!sw->faults) {
        capture(sw, DN2F_CAP_FWD, 0, 0, in_lid, out->lid, buf, len);
        raw_send(sw, &out->addr, buf, len);
        return;
    }
    /* Always four draws per datagram: the decisions depend only on the
     * seed and the order of datagrams. */
    r_drop = dn2f_rng_unit(&sw->rng);
    r_dup = dn2f_rng_unit(&sw->rng);
    r_reorder = dn2f_rng_unit(&sw->rng);
    r_delay = dn2f_rng_unit(&sw->rng);
    if (r_drop < sw->cfg.drop) {
        sw->sum.inj_drop++;
        out->drops++;
        capture(sw, DN2F_CAP_DROP_INJ, 0, 0, in_lid, out->lid, buf, len);
        return;
    }
    copies = r_dup < sw->cfg.dup ? 2 : 1;
    if (copies == 2) {
        sw->sum.inj_dup++;
    }
    t = now(sw);
    for (c = 0; c < copies; c++) {
        unsigned flags = c ? DN2F_CAPF_DUP : 0;
        uint64_t delay = 0;
        bool held = false;
        if (sw->cfg.delay_ns && r_delay < sw->cfg.delay_frac) {
            delay = sw->cfg.delay_ns;
            flags |= DN2F_CAPF_DELAYED;
            if (c == 0) {
                sw->sum.inj_delay++;
            }
        }
        if (c == 0 && r_reorder < sw->cfg.reorder) {
            held = true;
            flags |= DN2F_CAPF_REORDERED;
            sw->sum.inj_reorder++;
            if (delay < REORDER_HOLD_NS) {
                delay = REORDER_HOLD_NS;
            }
        }
        if ((delay || held) &&
            fq_insert(sw, &out->addr, buf, len, t + delay, held, flags, in_lid, out->lid)) {
            continue;
        }
        capture(sw, DN2F_CAP_FWD, flags & DN2F_CAPF_DUP, 0, in_lid, out->lid, buf, len);
        raw_send(sw, &out->addr, buf, len);
        release_held(sw);       /* what was held back now arrives after this one */
    }
}

/* -------------------------------------------------------------- routes */
static void routes_rebuild(struct dn2f_sw *sw)
{
    unsigned i, c = 0;
    size_t used = 0;

    sw->rt_n = 0;
    sw->gr_n = 0;
    for (i = 1; i < DN2_CLID_MCAST_FIRST; i++) {
        struct swport *p = sw->ports[i];
        if (p && p->state == PORT_ACTIVE) {
            sw->rt_lids[sw->rt_n++] = p->lid;
        }
    }
    for (i = 0; i < DN2F_NUM_GROUPS; i++) {
        if (sw->groups[i] && sw->groups[i]->n) {
            sw->gr_lids[sw->gr_n++] = dn2_clid_to_lid((uint16_t)(DN2_CLID_MCAST_FIRST + i));
        }
    }
    /* Pack routes then groups into chunks of at most DN2F_CHUNK_BYTES. */
    memset(sw->chunks, 0, sizeof(sw->chunks));
    for (i = 0; i < sw->rt_n; i++) {
        if (used + DN2F_ROUTE_LEN > DN2F_CHUNK_BYTES) {
            c++;
            used = 0;
            sw->chunks[c].r0 = (uint16_t)i;
        }
        sw->chunks[c].nr++;
        used += DN2F_ROUTE_LEN;
    }
    sw->chunks[c].g0 = 0;
    for (i = 0; i < sw->gr_n; i++) {
        struct swgroup *g = sw->groups[dn2f_lid_index(sw->gr_lids[i]) - DN2_CLID_MCAST_FIRST];
        size_t gl = dn2f_group_len(g->n);
        if (used + gl > DN2F_CHUNK_BYTES) {
            c++;
            used = 0;
            sw->chunks[c].r0 = (uint16_t)sw->rt_n;
            sw->chunks[c].g0 = (uint16_t)i;
        } else if (sw->chunks[c].ng == 0) {
            sw->chunks[c].g0 = (uint16_t)i;
        }
        sw->chunks[c].ng++;
        used += gl;
    }
    sw->nchunks = c + 1;        /* at most 14 + 17 chunks: well under 256 */
}

static void send_routes(struct dn2f_sw *sw, struct swport *to)
{
    unsigned c, i;
    for (c = 0; c < sw->nchunks; c++) {
        const struct chunk *ch = &sw->chunks[c];
        struct dn2f_wbuf w;
        dn2f_wbuf_init(&w, sw->obuf, DN2F_DGRAM_MAX);
        dn2f_put_hdr(&w, DN2F_T_ROUTES, 0, 0, to->lid, sw->epoch, to->epoch);
        dn2f_put_routes_hdr(&w, sw->gen, (uint16_t)c, (uint16_t)sw->nchunks, ch->nr, ch->ng);
        for (i = ch->r0; i < (unsigned)ch->r0 + ch->nr; i++) {
            struct swport *p = port_by_lid(sw, sw->rt_lids[i]);
            struct dn2f_route r = {
                .lid = p->lid,
                .flags = sw->cfg.route_mode == DN2F_ROUTE_DIRECT ? DN2F_RT_DIRECT : 0,
                .addr = p->addr,
                .epoch = p->epoch,
            };
            dn2f_put_route(&w, &r);
        }
        for (i = ch->g0; i < (unsigned)ch->g0 + ch->ng; i++) {
            struct swgroup *g = sw->groups[dn2f_lid_index(sw->gr_lids[i]) - DN2_CLID_MCAST_FIRST];
            dn2f_put_group(&w, sw->gr_lids[i], g->n, g->lids);
        }
        send_ctrl_buf(sw, &to->addr, to->lid, sw->obuf, dn2f_finish(&w));
    }
}

static void routes_publish(struct dn2f_sw *sw)
{
    unsigned i;
    sw->dirty = false;
    sw->gen++;
    routes_rebuild(sw);
    for (i = 1; i < DN2_CLID_MCAST_FIRST; i++) {
        struct swport *p = sw->ports[i];
        if (p && p->state == PORT_ACTIVE) {
            send_routes(sw, p);
        }
    }
}

/* ------------------------------------------------------------ ports */
static void port_gone(struct dn2f_sw *sw, struct swport *p, const char *why)
{
    char a[80];
    if (p->state != PORT_ACTIVE) {
        return;
    }
    p->state = PORT_GONE;
    sw->nactive--;
    logf_(sw, "port LID 0x%04x GUID 0x%016llx (%s) gone: %s", p->lid,
          (unsigned long long)p->guid, dn2f_addr_str(&p->addr, a, sizeof(a)), why);
    mark_dirty(sw);
}

static uint16_t pick_lid(struct dn2f_sw *sw, uint16_t hint)
{
    unsigned i;
    struct swport *oldest = NULL;

    if (hint && dn2_lid_assignable(hint)) {
        struct swport *p = port_by_lid(sw, hint);
        if (!p || p->state == PORT_GONE) {
            return hint;
        }
    }
    for (i = 1; i < DN2_CLID_MCAST_FIRST; i++) {
        if (!sw->ports[i]) {
            return dn2_clid_to_lid((uint16_t)i);
        }
    }
    for (i = 1; i < DN2_CLID_MCAST_FIRST; i++) {
        struct swport *p = sw->ports[i];
        if (p->state == PORT_GONE && (!oldest || p->last_seen < oldest->last_seen)) {
            oldest = p;
        }
    }
    return oldest ? oldest->lid : 0;
}

static void handle_hello(struct dn2f_sw *sw, const struct dn2f_addr *from,
                         const struct dn2f_msg *m)
{
    const struct dn2f_hello *h = &m->u.hello;
    struct swport *p = NULL;
    unsigned i;
    bool changed = false;
    uint64_t t = now(sw);
    char a[80];

    for (i = 1; i < DN2_CLID_MCAST_FIRST; i++) {
        if (sw->ports[i] && sw->ports[i]->guid == h->guid) {
            p = sw->ports[i];
            break;
        }
    }
    if (!p) {
        uint16_t lid = pick_lid(sw, h->lid_hint);
        struct swport *old;
        if (!lid) {
            logf_(sw, "no LID left for GUID 0x%016llx", (unsigned long long)h->guid);
            return;
        }
        old = port_by_lid(sw, lid);
        if (old) {
            free(old);          /* a GONE binding, reclaimed */
        }
        p = calloc(1, sizeof(*p));
        if (!p) {
            sw->ports[dn2f_lid_index(lid)] = NULL;
            return;
        }
        p->lid = lid;
        p->guid = h->guid;
        p->state = PORT_GONE;
        sw->ports[dn2f_lid_index(lid)] = p;
        changed = true;
    }
    /* Another live board at this address is dead (its process was replaced). */
    for (i = 1; i < DN2_CLID_MCAST_FIRST; i++) {
        struct swport *q = sw->ports[i];
        if (q && q != p && q->state == PORT_ACTIVE && dn2f_addr_equal(&q->addr, from)) {
            port_gone(sw, q, "address reused");
        }
    }
    if (p->state != PORT_ACTIVE || p->epoch != m->h.src_epoch ||
        !dn2f_addr_equal(&p->addr, from)) {
        changed = true;
    }
    if (p->state != PORT_ACTIVE) {
        sw->nactive++;
    }
    if (changed) {
        logf_(sw, "port LID 0x%04x GUID 0x%016llx at %s epoch 0x%016llx%s", p->lid,
              (unsigned long long)p->guid, dn2f_addr_str(from, a, sizeof(a)),
              (unsigned long long)m->h.src_epoch,
              p->epoch && p->epoch != m->h.src_epoch ? " (restarted)" : "");
    }
    p->state = PORT_ACTIVE;
    p->epoch = m->h.src_epoch;
    p->addr = *from;
    p->last_seen = t;
    {
        uint8_t buf[64];
        struct dn2f_wbuf w;
        struct dn2f_assign as = {
            .guid = p->guid, .lid = p->lid, .link_state = DN2_SMA_LINK_READY,
            .route_mode = (uint8_t)sw->cfg.route_mode,
        };
        dn2f_wbuf_init(&w, buf, sizeof(buf));
        dn2f_put_hdr(&w, DN2F_T_ASSIGN, 0, 0, p->lid, sw->epoch, p->epoch);
        dn2f_put_assign(&w, &as);
        send_ctrl_buf(sw, from, p->lid, buf, dn2f_finish(&w));
    }
    if (changed) {
        mark_dirty(sw);         /* everyone (this board too) gets the new table */
    } else if (!sw->dirty) {
        send_routes(sw, p);
    }
}

/* ------------------------------------------------------------- data */
static void count_recs(const struct dn2f_msg *m, uint64_t *pkts, uint64_t *bytes, uint64_t *retx)
{
    struct dn2f_iter it;
    struct dn2f_rec r;
    *pkts = *bytes = *retx = 0;
    if (m->h.type != DN2F_T_DATA) {
        return;
    }
    dn2f_data_iter(m, &it);
    while (dn2f_data_next(&it, &r)) {
        (*pkts)++;
        *bytes += r.len;
        if (r.rflags & DN2F_RF_RETX) {
            (*retx)++;
        }
    }
}

static void replicate(struct dn2f_sw *sw, struct swport *in, const struct dn2f_msg *m,
                      const void *buf, size_t len)
{
    uint16_t done[DN2F_NUM_CLID / 16];
    unsigned ndone = 0;
    struct dn2f_iter it;
    struct dn2f_rec r;

    memset(done, 0, sizeof(done));
    /* All records of one datagram are for the datagram's group. */
    dn2f_data_iter(m, &it);
    while (dn2f_data_next(&it, &r)) {
        if (r.group != m->h.dst_lid) {
            in->drops++;
            capture(sw, DN2F_CAP_DROP, 0, DN2F_SWR_BAD_MCAST, in->lid, m->h.dst_lid, buf, len);
            return;
        }
    }
    /* One output datagram per distinct member, with that member's records. */
    dn2f_data_iter(m, &it);
    while (dn2f_data_next(&it, &r)) {
        unsigned i;
        for (i = 0; i < r.nmemb; i++) {
            uint16_t lid, l2;
            uint32_t seq, s2;
            uint64_t ep, e2;
            unsigned idx;
            struct swport *out;
            struct dn2f_iter it2;
            struct dn2f_rec r2;
            struct dn2f_wbuf w;
            uint64_t pkts = 0, bytes = 0;

            dn2f_rec_member(&r, i, &lid, &seq, &ep);
            idx = dn2f_lid_index(lid);
            if (done[idx >> 4] & (1u << (idx & 15))) {
                continue;
            }
            done[idx >> 4] |= (uint16_t)(1u << (idx & 15));
            ndone++;
            out = live_port(sw, lid);
            if (!out) {
                in->drops++;
                continue;       /* the sender's retransmissions sort it out */
            }
            dn2f_wbuf_init(&w, sw->obuf, DN2F_DGRAM_MAX);
            dn2f_put_hdr(&w, DN2F_T_DATA, 0, m->h.src_lid, lid, m->h.src_epoch, ep);
            /* this and later records that list lid (with the same epoch) */
            it2 = it;
            r2 = r;
            for (;;) {
                unsigned j;
                for (j = 0; j < r2.nmemb; j++) {
                    dn2f_rec_member(&r2, j, &l2, &s2, &e2);
                    if (l2 == lid && e2 == ep) {
                        dn2f_put_rec(&w, DN2F_REC_MCAST_COPY, r2.rflags, s2, r2.group,
                                     0, NULL, NULL, NULL, r2.pkt, r2.len);
                        pkts++;
                        bytes += r2.len;
                        break;
                    }
                }
                if (!dn2f_data_next(&it2, &r2)) {
                    break;
                }
            }
            data_send(sw, out, in->lid, sw->obuf, dn2f_finish(&w), pkts, bytes);
        }
    }
    (void)ndone;
}

static void handle_data(struct dn2f_sw *sw, const struct dn2f_addr *from,
                        const struct dn2f_msg *m, const void *buf, size_t len)
{
    struct swport *in = src_port(sw, from, m), *out;
    uint64_t pkts, bytes, retx;

    if (!in) {
        capture(sw, DN2F_CAP_DROP, 0, DN2F_SWR_UNKNOWN_SRC, m->h.src_lid, m->h.dst_lid, buf, len);
        sw->sum.bad++;
        if (!live_port(sw, m->h.src_lid) ||
            dn2f_addr_equal(&live_port(sw, m->h.src_lid)->addr, from)) {
            send_bye_unknown(sw, from, m->h.src_epoch);
        }
        return;
    }
    in->last_seen = now(sw);
    count_recs(m, &pkts, &bytes, &retx);
    in->rx_pkts += pkts;
    in->rx_bytes += bytes;
    in->retx += retx;
    if (m->h.type == DN2F_T_DATA && (m->u.data.kinds & (1u << DN2F_REC_MCAST_ORIGIN))) {
        replicate(sw, in, m, buf, len);
        return;
    }
    out = live_port(sw, m->h.dst_lid);
    if (!out) {
        in->drops++;
        capture(sw, DN2F_CAP_DROP, 0, DN2F_SWR_NO_ROUTE, in->lid, m->h.dst_lid, buf, len);
        return;
    }
    data_send(sw, out, in->lid, buf, len, pkts, bytes);
}

/* ------------------------------------------------------------ stats */
void dn2f_sw_summary(struct dn2f_sw *sw, struct dn2f_swsummary *s)
{
    *s = sw->sum;
    s->route_mode = (uint8_t)sw->cfg.route_mode;
    s->routes_gen = sw->gen;
    s->uptime_ms = (now(sw) - sw->start) / 1000000;
}

bool dn2f_sw_port(struct dn2f_sw *sw, unsigned i, struct dn2f_portstat *ps)
{
    unsigned c, k = 0;
    for (c = 1; c < DN2_CLID_MCAST_FIRST; c++) {
        struct swport *p = sw->ports[c];
        if (!p) {
            continue;
        }
        if (k++ == i) {
            ps->lid = p->lid;
            ps->state = (uint8_t)p->state;
            ps->addr = p->addr;
            ps->guid = p->guid;
            ps->epoch = p->epoch;
            ps->rx_pkts = p->rx_pkts;
            ps->rx_bytes = p->rx_bytes;
            ps->tx_pkts = p->tx_pkts;
            ps->tx_bytes = p->tx_bytes;
            ps->drops = p->drops;
            ps->retx = p->retx;
            return true;
        }
    }
    return false;
}

unsigned dn2f_sw_active_ports(const struct dn2f_sw *sw)
{
    return sw->nactive;
}

uint64_t dn2f_sw_epoch(const struct dn2f_sw *sw)
{
    return sw->epoch;
}

static void handle_stats_req(struct dn2f_sw *sw, const struct dn2f_addr *to, uint32_t cookie)
{
    struct dn2f_swsummary s;
    unsigned per = (DN2F_CHUNK_BYTES) / DN2F_PORTSTAT_LEN, total = 0, nchunks, c, i;
    struct dn2f_portstat ps;
    unsigned idx[DN2F_NUM_CLID];

    for (i = 1; i < DN2_CLID_MCAST_FIRST; i++) {
        if (sw->ports[i]) {
            idx[total++] = i;
        }
    }
    nchunks = total ? (total + per - 1) / per : 1;
    dn2f_sw_summary(sw, &s);
    for (c = 0; c < nchunks; c++) {
        unsigned first = c * per, n = total - first < per ? total - first : per;
        struct dn2f_wbuf w;
        if (!total) {
            n = 0;
        }
        dn2f_wbuf_init(&w, sw->obuf, DN2F_DGRAM_MAX);
        dn2f_put_hdr(&w, DN2F_T_STATS_RESP, 0, 0, 0, sw->epoch, 0);
        dn2f_put_stats_hdr(&w, cookie, (uint16_t)c, (uint16_t)nchunks, (uint16_t)n, &s);
        for (i = 0; i < n; i++) {
            struct swport *p = sw->ports[idx[first + i]];
            ps.lid = p->lid;
            ps.state = (uint8_t)p->state;
            ps.addr = p->addr;
            ps.guid = p->guid;
            ps.epoch = p->epoch;
            ps.rx_pkts = p->rx_pkts;
            ps.rx_bytes = p->rx_bytes;
            ps.tx_pkts = p->tx_pkts;
            ps.tx_bytes = p->tx_bytes;
            ps.drops = p->drops;
            ps.retx = p->retx;
            dn2f_put_portstat(&w, &ps);
        }
        send_ctrl_buf(sw, to, 0, sw->obuf, dn2f_finish(&w));
    }
}

/* ------------------------------------------------------------ mcast */
static int group_add(struct dn2f_sw *sw, uint16_t glid, uint16_t lid)
{
    unsigned gi, i;
    struct swgroup *g;
    if (!dn2f_lid_is_mcast(glid) || !dn2_lid_assignable(lid)) {
        return -EINVAL;
    }
    gi = dn2f_lid_index(glid) - DN2_CLID_MCAST_FIRST;
    g = sw->groups[gi];
    if (!g) {
        g = sw->groups[gi] = calloc(1, sizeof(*g));
        if (!g) {
            return -ENOMEM;
        }
    }
    for (i = 0; i < g->n; i++) {
        if (g->lids[i] == lid) {
            return 0;
        }
    }
    if (g->n >= DN2F_MCAST_MAX_MEMBERS) {
        return -ENOSPC;
    }
    g->lids[g->n++] = lid;
    mark_dirty(sw);
    return 0;
}

static void group_del(struct dn2f_sw *sw, uint16_t glid, uint16_t lid)
{
    struct swgroup *g = sw->groups[dn2f_lid_index(glid) - DN2_CLID_MCAST_FIRST];
    unsigned i;
    if (!g) {
        return;
    }
    for (i = 0; i < g->n; i++) {
        if (g->lids[i] == lid) {
            g->lids[i] = g->lids[--g->n];
            mark_dirty(sw);
            return;
        }
    }
}

int dn2f_sw_mcast_add(struct dn2f_sw *sw, uint16_t group_lid, uint16_t member_lid)
{
    return group_add(sw, group_lid, member_lid);
}

/* ------------------------------------------------------------ input */
void dn2f_sw_input(struct dn2f_sw *sw, const struct dn2f_addr *from, const void *buf, size_t len)
{
    struct dn2f_msg m;
    struct swport *p;
    int rc;

    sw->sum.dgrams_in++;
    rc = dn2f_decode(buf, len, &m);
    if (rc) {
        sw->sum.bad++;
        capture(sw, DN2F_CAP_BAD, 0, DN2F_SWR_DECODE | ((unsigned)-rc << 8), 0, 0, buf,
                len > DN2F_DGRAM_MAX ? DN2F_DGRAM_MAX : len);
        return;
    }
    switch (m.h.type) {
    case DN2F_T_DATA:
    case DN2F_T_ACK:
        handle_data(sw, from, &m, buf, len);
        return;
    default:
        break;
    }
    capture(sw, DN2F_CAP_CTRL_RX, 0, 0, m.h.src_lid, 0, buf, len);
    switch (m.h.type) {
    case DN2F_T_HELLO:
        handle_hello(sw, from, &m);
        return;
    case DN2F_T_KEEPALIVE:
        p = src_port(sw, from, &m);
        if (!p) {
            sw->sum.bad++;
            send_bye_unknown(sw, from, m.h.src_epoch);
            return;
        }
        p->last_seen = now(sw);
        send_small(sw, &p->addr, DN2F_T_KEEPALIVE, p->lid, p->epoch, sw->gen);
        if (m.u.keepalive.gen != sw->gen && !sw->dirty) {
            send_routes(sw, p);
        }
        return;
    case DN2F_T_BYE:
        p = src_port(sw, from, &m);
        if (p) {
            port_gone(sw, p, "said bye");
        }
        return;
    case DN2F_T_STATS_REQ:
        handle_stats_req(sw, from, m.u.stats_req.cookie);
        return;
    case DN2F_T_MCAST_JOIN:
    case DN2F_T_MCAST_LEAVE:
        p = src_port(sw, from, &m);
        if (!p) {
            sw->sum.bad++;
            return;
        }
        p->last_seen = now(sw);
        if (m.h.type == DN2F_T_MCAST_JOIN) {
            if (group_add(sw, m.u.mcast.group, p->lid) == 0) {
                logf_(sw, "LID 0x%04x joined group 0x%04x", p->lid, m.u.mcast.group);
            }
        } else {
            group_del(sw, m.u.mcast.group, p->lid);
        }
        return;
    default:
        sw->sum.bad++;
        capture(sw, DN2F_CAP_DROP, 0, DN2F_SWR_NOT_FOR_SWITCH, m.h.src_lid, 0, buf, len);
        return;
    }
}

/* ------------------------------------------------------------ timers */
uint64_t dn2f_sw_next_deadline(struct dn2f_sw *sw)
{
    uint64_t d = sw->housekeep_due;
    if (sw->dirty && sw->dirty_due < d) {
        d = sw->dirty_due;
    }
    if (sw->fq_head && sw->fq_head->due < d) {
        d = sw->fq_head->due;
    }
    return d;
}

void dn2f_sw_tick(struct dn2f_sw *sw)
{
    uint64_t t = now(sw);
    unsigned i;

    while (sw->fq_head && sw->fq_head->due <= t) {
        fq_release(sw, sw->fq_head);
    }
    if (t >= sw->housekeep_due) {
        sw->housekeep_due = t + HOUSEKEEP_NS;
        for (i = 1; i < DN2_CLID_MCAST_FIRST; i++) {
            struct swport *p = sw->ports[i];
            if (p && p->state == PORT_ACTIVE && t - p->last_seen > sw->cfg.port_timeout_ns) {
                port_gone(sw, p, "timed out");
            }
        }
    }
    if (sw->dirty && t >= sw->dirty_due) {
        routes_publish(sw);
    }
}

void dn2f_sw_shutdown(struct dn2f_sw *sw)
{
    unsigned i;
    for (i = 1; i < DN2_CLID_MCAST_FIRST; i++) {
        struct swport *p = sw->ports[i];
        if (p && p->state == PORT_ACTIVE) {
            send_small(sw, &p->addr, DN2F_T_BYE, p->lid, p->epoch, DN2F_BYE_SHUTDOWN);
        }
    }
}

/* ------------------------------------------------------------ lifecycle */
struct dn2f_sw *dn2f_sw_new(const struct dn2f_sw_config *cfg,
                            const struct dn2f_sw_ops *ops, void *opaque)
{
    struct dn2f_sw *sw;

    if (!cfg || !ops || !ops->now_ns || !ops->send_datagram ||
        (cfg->route_mode != DN2F_ROUTE_DIRECT && cfg->route_mode != DN2F_ROUTE_SWITCH) ||
        !(cfg->drop >= 0 && cfg->drop <= 1) || !(cfg->dup >= 0 && cfg->dup <= 1) ||
        !(cfg->reorder >= 0 && cfg->reorder <= 1) ||
        !(cfg->delay_frac >= 0 && cfg->delay_frac <= 1) || cfg->port_timeout_ns == 0) {
        errno = EINVAL;
        return NULL;
    }
    sw = calloc(1, sizeof(*sw));
    if (!sw) {
        return NULL;
    }
    sw->cfg = *cfg;
    sw->ops = *ops;
    sw->opaque = opaque;
    sw->obuf = malloc(DN2F_DGRAM_MAX);
    sw->rt_lids = malloc(DN2F_NUM_CLID * sizeof(uint16_t));
    sw->gr_lids = malloc(DN2F_NUM_GROUPS * sizeof(uint16_t));
    if (!sw->obuf || !sw->rt_lids || !sw->gr_lids) {
        dn2f_sw_free(sw);
        errno = ENOMEM;
        return NULL;
    }
    sw->epoch = cfg->epoch ? cfg->epoch : dn2f_random_u64();
    sw->start = now(sw);
    sw->bye_last = sw->start;
    sw->bye_tokens = BYE_TOKENS_PER_S;
    dn2f_rng_seed(&sw->rng, cfg->seed);
    sw->faults = cfg->drop > 0 || cfg->dup > 0 || cfg->reorder > 0 ||
                 (cfg->delay_ns > 0 && cfg->delay_frac > 0);
    if (sw->cfg.fault_queue_max == 0) {
        sw->cfg.fault_queue_max = 4096;
    }
    if (sw->cfg.fault_queue_bytes == 0) {
        sw->cfg.fault_queue_bytes = 64u << 20;
    }
    sw->housekeep_due = sw->start + HOUSEKEEP_NS;
    routes_rebuild(sw);
    return sw;
}

void dn2f_sw_free(struct dn2f_sw *sw)
{
    unsigned i;
    if (!sw) {
        return;
    }
    while (sw->fq_head) {
        struct fq *e = sw->fq_head;
        fq_unlink(sw, e);
        free(e);
    }
    for (i = 0; i < DN2F_NUM_CLID; i++) {
        free(sw->ports[i]);
    }
    for (i = 0; i < DN2F_NUM_GROUPS; i++) {
        free(sw->groups[i]);
    }
    free(sw->obuf);
    free(sw->rt_lids);
    free(sw->gr_lids);
    free(sw);
}
