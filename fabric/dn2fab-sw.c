/* SPDX-License-Identifier: MIT */
/*
 * dn2fab switch core: ports, joins, routes, statistics, input dispatch,
 * timers (the data path is in dn2fab-sw-fwd.c, port lookup and what
 * the switch sends in dn2fab-sw-out.c).  See dn2fab-sw.h and
 * docs/fabric.md.
 *
 * Joining is stateless until the board proves it receives at its address:
 * HELLO is answered by an ASSIGN carrying a ticket (the switch's MAC over
 * GUID, epoch, LID, address and time) and nothing is stored; the board's
 * first KEEPALIVE returns the ticket and only then is the port created.
 * A flood of HELLOs (spoofed or not) therefore takes no LID and no memory.
 *
 * Port states: (none) --ticketed KEEPALIVE--> ACTIVE --timeout / BYE /
 * address taken--> GONE (the GUID -> LID binding is remembered, so a board
 * that comes back gets its LID again; a GONE entry is reclaimed only when
 * LIDs run out or another board asks for that LID as its hint).  While a
 * port is ACTIVE its GUID stays bound to its address: a HELLO for that GUID
 * from elsewhere is refused (BYE "GUID in use"); from the same address with
 * a new epoch it is the same board after a reset.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1
#endif
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>

#include "dn2fab-sw-int.h"

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
    c->max_ports_per_host = 256;
    c->vt_boards = 1;
    c->vt_lookahead_ns = 1000;
    c->vt_stall_ns = 5000000000ULL;
}




/* Log lines a stranger can provoke (refusals, bad MACs): rate-limited. */
static void logf_limited(struct dn2f_sw *sw, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void logf_limited(struct dn2f_sw *sw, const char *fmt, ...)
{
    char msg[256];
    va_list ap;
    if (!sw->ops.log) {
        return;
    }
    if (!sw_bucket_take(&sw->log_tokens, &sw->log_last, now(sw), LOG_TOKENS_PER_S,
                        LOG_TOKENS_PER_S)) {
        sw->log_suppressed++;
        return;
    }
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (sw->log_suppressed) {
        sw_log(sw, "%s (%u similar lines suppressed)", msg, sw->log_suppressed);
        sw->log_suppressed = 0;
    } else {
        sw->ops.log(sw->opaque, msg);
    }
}


/* A new routing table is due: coalesced (2 ms), and paced so that churn
 * cannot keep the switch republishing (each publication sends the whole
 * table to every live port). */
static void mark_dirty(struct dn2f_sw *sw)
{
    if (!sw->dirty) {
        uint64_t t = now(sw), gap = ROUTES_GAP_NS + (uint64_t)sw->nactive * ROUTES_GAP_PER_PORT_NS;
        sw->dirty = true;
        sw->dirty_due = t + ROUTES_COALESCE_NS;
        if (sw->last_publish && sw->dirty_due < sw->last_publish + gap) {
            sw->dirty_due = sw->last_publish + gap;
        }
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
            struct swport *p = sw_port_by_lid(sw, sw->rt_lids[i]);
            struct dn2f_route r = {
                .lid = p->lid,
                .flags = sw->cfg.route_mode == DN2F_ROUTE_DIRECT ? DN2F_RT_DIRECT : 0,
                .addr = p->addr,
                .epoch = p->epoch,
            };
            if (sw->auth) {
                memcpy(r.token, p->tok, DN2F_TOKEN_LEN);
                dn2f_seal(sw->kseal, 'R', sw->epoch, p->epoch, p->lid, r.token);
            }
            dn2f_put_route(&w, &r);
        }
        for (i = ch->g0; i < (unsigned)ch->g0 + ch->ng; i++) {
            struct swgroup *g = sw->groups[dn2f_lid_index(sw->gr_lids[i]) - DN2_CLID_MCAST_FIRST];
            dn2f_put_group(&w, sw->gr_lids[i], g->n, g->lids);
        }
        sw_send_ctrl_buf(sw, &to->addr, to->lid, sw->obuf, sw_finish(sw, &w));
    }
}


static void routes_publish(struct dn2f_sw *sw)
{
    unsigned i;
    sw->dirty = false;
    sw->gen++;
    sw->last_publish = now(sw);
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
    sw_log(sw, "port LID 0x%04x GUID 0x%016llx (%s) gone: %s", p->lid,
          (unsigned long long)p->guid, dn2f_addr_str(&p->addr, a, sizeof(a)), why);
    mark_dirty(sw);
    sw_vt_port_gone(sw, p);     /* out of the sync set */
}


static uint16_t pick_lid(struct dn2f_sw *sw, uint16_t hint)
{
    unsigned i;
    struct swport *oldest = NULL;

    if (hint && dn2_lid_assignable(hint)) {
        struct swport *p = sw_port_by_lid(sw, hint);
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


/* The ticket of a join: who (GUID, epoch), which LID, where (address), when. */
static void ticket_mac(struct dn2f_sw *sw, uint64_t guid, uint64_t epoch, uint16_t lid,
                       const struct dn2f_addr *addr, uint32_t time, uint8_t *out)
{
    uint8_t msg[8 + 8 + 2 + 24 + 4], mac[DN2F_SHA256_LEN];
    struct dn2f_hmac h;

    memset(msg, 0, sizeof(msg));
    dn2f_st64(msg, guid);
    dn2f_st64(msg + 8, epoch);
    dn2f_st16(msg + 16, lid);
    dn2f_enc_addr(msg + 18, msg + 19, msg + 21, msg + 25, addr);
    dn2f_st32(msg + 42, time);
    dn2f_hmac_start(&h, &sw->ticket_key);
    dn2f_hmac_update(&h, msg, sizeof(msg));
    dn2f_hmac_finish(&h, mac);
    memcpy(out, mac, DN2F_TICKET_LEN);
}


/* A join's token: a MAC over what identifies the join (GUID, epoch, LID,
 * address, and how many joins the GUID's port completed before), never
 * over the clock, so every ASSIGN of one join carries the same token, and
 * the switch need not store it before the join completes.  A new epoch, a
 * new address or a re-join after the port was gone gives another one. */
static void join_token(struct dn2f_sw *sw, uint64_t guid, uint64_t epoch, uint16_t lid,
                       const struct dn2f_addr *addr, uint32_t joins, uint8_t *tok)
{
    uint8_t msg[1 + 8 + 8 + 2 + 24 + 4], mac[DN2F_SHA256_LEN];
    struct dn2f_hmac h;

    memset(msg, 0, sizeof(msg));
    msg[0] = 'T';
    dn2f_st64(msg + 1, guid);
    dn2f_st64(msg + 9, epoch);
    dn2f_st16(msg + 17, lid);
    dn2f_enc_addr(msg + 19, msg + 20, msg + 22, msg + 26, addr);
    dn2f_st32(msg + 43, joins);
    dn2f_hmac_start(&h, &sw->ticket_key);
    dn2f_hmac_update(&h, msg, sizeof(msg));
    dn2f_hmac_finish(&h, mac);
    memcpy(tok, mac, DN2F_TOKEN_LEN);
}


static uint32_t sw_seconds(struct dn2f_sw *sw)
{
    return (uint32_t)((now(sw) - sw->start) / 1000000000ULL);
}


static struct swport *port_by_guid(struct dn2f_sw *sw, uint64_t guid)
{
    unsigned i;
    for (i = 1; i < DN2_CLID_MCAST_FIRST; i++) {
        if (sw->ports[i] && sw->ports[i]->guid == guid) {
            return sw->ports[i];
        }
    }
    return NULL;
}


/* One host for the quota: the same host address, and all of loopback
 * (127.0.0.0/8, ::1, ::ffff:127.x) together, since any local process can
 * bind every 127.x address. */
static bool quota_same_host(const struct dn2f_addr *a, const struct dn2f_addr *b)
{
    return dn2f_addr_same_host(a, b) || (dn2f_addr_loopback(a) && dn2f_addr_loopback(b));
}


/* Live ports at from's host, other than except. */
static unsigned host_ports(struct dn2f_sw *sw, const struct dn2f_addr *from,
                           const struct swport *except)
{
    unsigned i, n = 0;
    for (i = 1; i < DN2_CLID_MCAST_FIRST; i++) {
        struct swport *p = sw->ports[i];
        if (p && p != except && p->state == PORT_ACTIVE && quota_same_host(&p->addr, from) &&
            !dn2f_addr_equal(&p->addr, from)) {
            n++;
        }
    }
    return n;
}


static bool host_full(struct dn2f_sw *sw, const struct dn2f_addr *from, const struct swport *p)
{
    if (!sw->cfg.max_ports_per_host || (p && p->state == PORT_ACTIVE) ||
        sw->nactive < sw->cfg.max_ports_per_host) {
        return false;           /* no limit, already counted, or cannot be full */
    }
    return host_ports(sw, from, p) >= sw->cfg.max_ports_per_host;
}


static void refuse(struct dn2f_sw *sw, const struct dn2f_addr *from, uint64_t epoch,
                   uint64_t guid, unsigned reason, const char *why)
{
    char a[80];
    sw->sum.bad++;
    logf_limited(sw, "refused GUID 0x%016llx from %s: %s", (unsigned long long)guid,
                 dn2f_addr_str(from, a, sizeof(a)), why);
    sw_send_bye_to(sw, from, epoch, reason);
}


/* p: the GUID's port (or NULL); same: it is live with this epoch at this
 * address (its board HELLOs again). */
static void send_assign(struct dn2f_sw *sw, const struct dn2f_addr *to, uint64_t guid,
                        uint64_t epoch, uint16_t lid, const struct swport *p, bool same)
{
    uint8_t buf[128];
    struct dn2f_wbuf w;
    struct dn2f_assign as;

    memset(&as, 0, sizeof(as));
    as.guid = guid;
    as.lid = lid;
    as.link_state = DN2_SMA_LINK_READY;
    as.route_mode = (uint8_t)sw->cfg.route_mode;
    as.ticket.time = sw_seconds(sw);
    ticket_mac(sw, guid, epoch, lid, to, as.ticket.time, as.ticket.mac);
    if (sw->auth) {
        /* the port's token if this is its board again, else this join's */
        if (same) {
            memcpy(as.token, p->tok, DN2F_TOKEN_LEN);
        } else {
            join_token(sw, guid, epoch, lid, to, p ? p->joins : 0, as.token);
        }
        dn2f_seal(sw->kseal, 'A', sw->epoch, epoch, lid, as.token);
    }
    dn2f_wbuf_init(&w, buf, sizeof(buf));
    dn2f_put_hdr(&w, DN2F_T_ASSIGN, 0, 0, lid, sw->epoch, epoch);
    dn2f_put_assign(&w, &as);
    sw_send_ctrl_buf(sw, to, lid, buf, sw_finish(sw, &w));
}


/* HELLO: answer with an ASSIGN and its ticket; store nothing. */
/* A HELLO or a ticketed KEEPALIVE of guid from an address: refused (and
 * told so) when p, the GUID's port, is live elsewhere (a twin, or someone
 * claiming its identity: it keeps its port until its BYE or timeout), or
 * when that host has too many ports. */
static bool join_refused(struct dn2f_sw *sw, const struct dn2f_addr *from, uint64_t epoch,
                         uint64_t guid, const struct swport *p)
{
    if (p && p->state == PORT_ACTIVE && !dn2f_addr_equal(&p->addr, from)) {
        refuse(sw, from, epoch, guid, DN2F_BYE_GUID_IN_USE, "GUID in use");
        return true;
    }
    if (host_full(sw, from, p)) {
        refuse(sw, from, epoch, guid, DN2F_BYE_FULL, "too many ports from that host");
        return true;
    }
    return false;
}

static void handle_hello(struct dn2f_sw *sw, const struct dn2f_addr *from,
                         const struct dn2f_msg *m)
{
    const struct dn2f_hello *h = &m->u.hello;
    struct swport *p = port_by_guid(sw, h->guid);
    uint16_t lid;

    if (join_refused(sw, from, m->h.src_epoch, h->guid, p)) {
        return;
    }
    lid = p ? p->lid : pick_lid(sw, h->lid_hint);
    if (!lid) {
        refuse(sw, from, m->h.src_epoch, h->guid, DN2F_BYE_FULL, "no LID left");
        return;
    }
    send_assign(sw, from, h->guid, m->h.src_epoch, lid, p,
                p && p->state == PORT_ACTIVE && p->epoch == m->h.src_epoch &&
                dn2f_addr_equal(&p->addr, from));
}


/* A ticket that would take port p back: for another epoch, one of an
 * incarnation older than its current one (ticketed before the join that
 * set its epoch, or an epoch it had before; epochs are random, so a board
 * never goes back to one); for its epoch while it is gone, a join it made
 * already (no newer ticket: a board that comes back asks for a new one). */
static bool older_join(const struct swport *p, uint64_t epoch, uint32_t ticket_time)
{
    unsigned i;
    if (!p->epoch) {
        return false;
    }
    if (epoch == p->epoch) {
        return p->state != PORT_ACTIVE && (int32_t)(ticket_time - p->tkt_time) <= 0;
    }
    if ((int32_t)(ticket_time - p->tkt_time) < 0) {
        return true;
    }
    for (i = 0; i < OLD_EPOCHS; i++) {
        if (p->old_epochs[i] && p->old_epochs[i] == epoch) {
            return true;
        }
    }
    return false;
}


/* A KEEPALIVE returning a valid ticket: the board receives at its address;
 * create (or move, or renew) its port.  Never back to an earlier
 * incarnation: a replayed join of one is ignored. */
static void establish(struct dn2f_sw *sw, const struct dn2f_addr *from,
                      const struct dn2f_msg *m)
{
    const struct dn2f_keepalive *k = &m->u.keepalive;
    uint8_t mac[DN2F_TICKET_LEN];
    uint16_t lid = m->h.src_lid;
    uint32_t t_s = sw_seconds(sw);
    struct swport *p, *q;
    bool changed = false;
    unsigned i;
    char a[80];

    ticket_mac(sw, k->guid, m->h.src_epoch, lid, from, k->ticket.time, mac);
    if (!dn2f_ct_equal(mac, k->ticket.mac, DN2F_TICKET_LEN) ||
        (uint32_t)(t_s - k->ticket.time) > TICKET_LIFE_S || !dn2_lid_assignable(lid)) {
        sw->sum.bad++;
        sw_send_bye_unknown(sw, from, m->h.src_epoch);     /* stale: HELLO again */
        return;
    }
    p = port_by_guid(sw, k->guid);
    if (p && older_join(p, m->h.src_epoch, k->ticket.time)) {
        /* a recorded join replayed: no answer */
        sw->sum.bad++;
        logf_limited(sw, "LID 0x%04x GUID 0x%016llx: a join made before (epoch 0x%016llx) "
                     "from %s ignored", p->lid, (unsigned long long)p->guid,
                     (unsigned long long)m->h.src_epoch, dn2f_addr_str(from, a, sizeof(a)));
        return;
    }
    if (join_refused(sw, from, m->h.src_epoch, k->guid, p)) {
        return;
    }
    q = sw_port_by_lid(sw, lid);
    if (p ? p->lid != lid : (q && q->state == PORT_ACTIVE)) {
        /* the LID of the ticket went to someone else meanwhile */
        sw_send_bye_unknown(sw, from, m->h.src_epoch);
        return;
    }
    if (!p) {
        if (q) {
            free(q);            /* a GONE binding, reclaimed */
        }
        p = calloc(1, sizeof(*p));
        if (!p) {
            sw->ports[dn2f_lid_index(lid)] = NULL;
            return;
        }
        p->lid = lid;
        p->guid = k->guid;
        p->state = PORT_GONE;
        sw->ports[dn2f_lid_index(lid)] = p;
        changed = true;
    }
    /* Another live board at this address is dead (its process was replaced). */
    for (i = 1; i < DN2_CLID_MCAST_FIRST; i++) {
        struct swport *o = sw->ports[i];
        if (o && o != p && o->state == PORT_ACTIVE && dn2f_addr_equal(&o->addr, from)) {
            port_gone(sw, o, "address reused");
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
        sw_log(sw, "port LID 0x%04x GUID 0x%016llx at %s epoch 0x%016llx%s", p->lid,
              (unsigned long long)p->guid, dn2f_addr_str(from, a, sizeof(a)),
              (unsigned long long)m->h.src_epoch,
              p->epoch && p->epoch != m->h.src_epoch ? " (restarted)" : "");
    }
    if (changed) {
        /* what its ASSIGN said (computed with the joins before this one) */
        join_token(sw, k->guid, m->h.src_epoch, lid, from, p->joins, p->tok);
        p->joins++;
        sw_vt_port_joined(sw, p);       /* a new board for the sync set */
    }
    if (p->epoch != m->h.src_epoch) {
        if (p->epoch) {
            p->old_epochs[p->old_next] = p->epoch;
            p->old_next = (p->old_next + 1) % OLD_EPOCHS;
        }
        p->tkt_time = k->ticket.time;
    } else if ((int32_t)(k->ticket.time - p->tkt_time) > 0) {
        p->tkt_time = k->ticket.time;
    }
    p->state = PORT_ACTIVE;
    p->epoch = m->h.src_epoch;
    p->addr = *from;
    p->last_seen = now(sw);
    if (changed) {
        mark_dirty(sw);         /* everyone (this board too) gets the new table */
    } else if (!sw->dirty) {
        send_routes(sw, p);
    }
}


/* ------------------------------------------------------------ stats */
void dn2f_sw_summary(struct dn2f_sw *sw, struct dn2f_swsummary *s)
{
    *s = sw->sum;
    s->route_mode = (uint8_t)sw->cfg.route_mode;
    s->routes_gen = sw->gen;
    s->uptime_ms = (now(sw) - sw->start) / 1000000;
    s->vt = sw->cfg.vt;
    if (s->vt) {
        s->vt_boards = sw->vt.boards;
        s->vt_reports = sw->vt.reports;
        s->vt_grants = sw->vt.grants;
        s->vt_time = sw->vt.slowest;
    }
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


/* Who may read the port table: this host, or the host of a live member. */
static bool stats_allowed(struct dn2f_sw *sw, const struct dn2f_addr *from)
{
    unsigned i;
    if (dn2f_addr_loopback(from)) {
        return true;
    }
    for (i = 1; i < DN2_CLID_MCAST_FIRST; i++) {
        struct swport *p = sw->ports[i];
        if (p && p->state == PORT_ACTIVE && dn2f_addr_same_host(&p->addr, from)) {
            return true;
        }
    }
    return false;
}


/* One STATS_RESP chunk per request (the requester asks for each), so one
 * padded request of DN2F_STATS_REQ_MIN bytes gets at most ~8 KiB back. */
static void handle_stats_req(struct dn2f_sw *sw, const struct dn2f_addr *to,
                             const struct dn2f_msg *m, size_t len)
{
    struct dn2f_swsummary s;
    unsigned per = (DN2F_CHUNK_BYTES) / DN2F_PORTSTAT_LEN, total = 0, nchunks, c, i;
    unsigned first, n;
    struct dn2f_portstat ps;
    struct dn2f_wbuf w;
    char a[80];

    if (len < DN2F_STATS_REQ_MIN || !stats_allowed(sw, to)) {
        sw->sum.bad++;
        logf_limited(sw, "STATS_REQ from %s ignored (%s)", dn2f_addr_str(to, a, sizeof(a)),
                     len < DN2F_STATS_REQ_MIN ? "not padded" : "not this host nor a member's");
        return;
    }
    if (!sw_bucket_take(&sw->stats_tokens, &sw->stats_last, now(sw), STATS_TOKENS_PER_S,
                        STATS_TOKENS_PER_S)) {
        sw->sum.bad++;
        return;
    }
    for (i = 1; i < DN2_CLID_MCAST_FIRST; i++) {
        if (sw->ports[i]) {
            total++;
        }
    }
    nchunks = total ? (total + per - 1) / per : 1;
    c = m->u.stats_req.chunk;
    if (c >= nchunks) {
        return;
    }
    first = c * per;
    n = total ? (total - first < per ? total - first : per) : 0;
    dn2f_sw_summary(sw, &s);
    dn2f_wbuf_init(&w, sw->obuf, DN2F_DGRAM_MAX);
    dn2f_put_hdr(&w, DN2F_T_STATS_RESP, 0, 0, 0, sw->epoch, 0);
    dn2f_put_stats_hdr(&w, m->u.stats_req.cookie, (uint16_t)c, (uint16_t)nchunks,
                       (uint16_t)n, &s);
    if (s.vt) {
        dn2f_put_stats_vt(&w, &s);
    }
    for (i = 0; i < n; i++) {
        if (!dn2f_sw_port(sw, first + i, &ps)) {
            break;
        }
        dn2f_put_portstat(&w, &ps);
    }
    sw_send_ctrl_buf(sw, to, 0, sw->obuf, sw_finish(sw, &w));
}


/* ------------------------------------------------------------ mcast */
static int group_add(struct dn2f_sw *sw, uint16_t glid, uint16_t lid)
{
    unsigned gi;
    struct swgroup *g;
    int rc;
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
    rc = dn2f_lidset_add(g->lids, &g->n, DN2F_MCAST_MAX_MEMBERS, lid);
    if (rc <= 0) {
        return rc;
    }
    mark_dirty(sw);
    return 0;
}


static void group_del(struct dn2f_sw *sw, uint16_t glid, uint16_t lid)
{
    struct swgroup *g = sw->groups[dn2f_lid_index(glid) - DN2_CLID_MCAST_FIRST];
    if (g && dn2f_lidset_del(g->lids, &g->n, lid)) {
        mark_dirty(sw);
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
        sw_capture(sw, DN2F_CAP_BAD, 0, DN2F_SWR_DECODE | ((unsigned)-rc << 8), 0, 0, buf,
                len > DN2F_DGRAM_MAX ? DN2F_DGRAM_MAX : len);
        return;
    }
    /* With a secret every datagram carries a MAC (control: the control key;
     * DATA/ACK: the pair's tokens, checked by the receiving board; a
     * multicast origin is checked in sw_replicate()), without one none does. */
    if (!(m.h.flags & DN2F_F_MAC) != !sw->auth ||
        (sw->auth && m.h.type != DN2F_T_DATA && m.h.type != DN2F_T_ACK &&
         !dn2f_mac_ok(buf, &m, &sw->kctl))) {
        char a[80];
        sw->sum.bad++;
        sw_capture(sw, DN2F_CAP_DROP, 0, DN2F_SWR_AUTH, m.h.src_lid, m.h.dst_lid, buf, len);
        if (m.h.type == DN2F_T_HELLO || m.h.type == DN2F_T_KEEPALIVE) {
            logf_limited(sw, "%s from %s: %s", dn2f_type_name(m.h.type),
                         dn2f_addr_str(from, a, sizeof(a)),
                         sw->auth ? (m.h.flags & DN2F_F_MAC ? "wrong MAC (a different secret?)"
                                                            : "no MAC (the board has no secret)")
                                  : "has a MAC but this switch has no secret");
            sw_send_bye_to(sw, from, m.h.src_epoch, DN2F_BYE_AUTH);
        }
        return;
    }
    switch (m.h.type) {
    case DN2F_T_DATA:
    case DN2F_T_ACK:
        sw_handle_data(sw, from, &m, buf, len);
        return;
    default:
        break;
    }
    sw_capture(sw, DN2F_CAP_CTRL_RX, 0, 0, m.h.src_lid, 0, buf, len);
    switch (m.h.type) {
    case DN2F_T_HELLO:
        handle_hello(sw, from, &m);
        return;
    case DN2F_T_KEEPALIVE:
        p = sw_src_port(sw, from, &m);
        if (!p && m.u.keepalive.guid) {
            establish(sw, from, &m);    /* a joining board returns its ticket */
            return;
        }
        if (!p) {
            sw->sum.bad++;
            sw_send_bye_unknown(sw, from, m.h.src_epoch);
            return;
        }
        p->last_seen = now(sw);
        p->vt.gen = m.u.keepalive.gen;
        if (sw->cfg.vt && !sw->vt.started && p->vt.gen == sw->gen) {
            sw_vt_update(sw, NULL);     /* its routes are in: virtual time may start */
        }
        sw_send_small(sw, &p->addr, DN2F_T_KEEPALIVE, p->lid, p->epoch, sw->gen);
        if (m.u.keepalive.gen != sw->gen && !sw->dirty) {
            send_routes(sw, p);
        }
        return;
    case DN2F_T_BYE:
        p = sw_src_port(sw, from, &m);
        if (p) {
            port_gone(sw, p, "said bye");
        }
        return;
    case DN2F_T_STATS_REQ:
        handle_stats_req(sw, from, &m, len);
        return;
    case DN2F_T_VT_REPORT:
        p = sw_src_port(sw, from, &m);
        if (!p) {
            sw->sum.bad++;
            sw_send_bye_unknown(sw, from, m.h.src_epoch);      /* HELLO again */
            return;
        }
        sw_vt_report(sw, p, &m);
        return;
    case DN2F_T_MCAST_JOIN:
    case DN2F_T_MCAST_LEAVE:
        p = sw_src_port(sw, from, &m);
        if (!p) {
            sw->sum.bad++;
            return;
        }
        p->last_seen = now(sw);
        if (m.h.type == DN2F_T_MCAST_JOIN) {
            if (group_add(sw, m.u.mcast.group, p->lid) == 0) {
                sw_log(sw, "LID 0x%04x joined group 0x%04x", p->lid, m.u.mcast.group);
            }
        } else {
            group_del(sw, m.u.mcast.group, p->lid);
        }
        return;
    default:
        sw->sum.bad++;
        sw_capture(sw, DN2F_CAP_DROP, 0, DN2F_SWR_NOT_FOR_SWITCH, m.h.src_lid, 0, buf, len);
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
        sw_fq_release(sw, sw->fq_head);
    }
    if (t >= sw->housekeep_due) {
        sw->housekeep_due = t + HOUSEKEEP_NS;
        for (i = 1; i < DN2_CLID_MCAST_FIRST; i++) {
            struct swport *p = sw->ports[i];
            /* Under virtual time a silent board is waited for, not dropped:
             * its process stopped (a breakpoint, a host that does not run
             * it) and every other board's clock waits for its promise; the
             * run goes on as it would have when it resumes.  The stall
             * note names it; a board that leaves says BYE. */
            if (p && p->state == PORT_ACTIVE && !sw->cfg.vt &&
                t - p->last_seen > sw->cfg.port_timeout_ns) {
                port_gone(sw, p, "timed out");
            }
        }
        sw_vt_housekeep(sw, t);
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
            sw_send_small(sw, &p->addr, DN2F_T_BYE, p->lid, p->epoch, DN2F_BYE_SHUTDOWN);
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
    if (cfg->vt) {
        sw->vt_ports = malloc(DN2F_NUM_CLID * sizeof(*sw->vt_ports));
        sw->vt_e = malloc(DN2F_NUM_CLID * sizeof(*sw->vt_e));
        sw->vt_g = malloc(DN2F_NUM_CLID * sizeof(*sw->vt_g));
    }
    if (!sw->obuf || !sw->rt_lids || !sw->gr_lids ||
        (cfg->vt && (!sw->vt_ports || !sw->vt_e || !sw->vt_g))) {
        dn2f_sw_free(sw);
        errno = ENOMEM;
        return NULL;
    }
    sw->epoch = cfg->epoch ? cfg->epoch : dn2f_random_u64();
    sw->start = now(sw);
    sw->bye_last = sw->start;
    sw->bye_tokens = BYE_TOKENS_PER_S;
    sw->log_last = sw->stats_last = sw->start;
    if (cfg->secret && cfg->secret_len) {
        sw->auth = true;
        dn2f_secret_keys(cfg->secret, cfg->secret_len, &sw->kctl, sw->kseal);
    }
    sw->cfg.secret = NULL;      /* not kept */
    sw->cfg.secret_len = 0;
    sw->log_tokens = LOG_TOKENS_PER_S;
    sw->stats_tokens = STATS_TOKENS_PER_S;
    {
        uint8_t key[32];
        unsigned i;
        for (i = 0; i < 4; i++) {
            dn2f_st64(key + 8 * i, dn2f_random_u64());
        }
        dn2f_hmac_setkey(&sw->ticket_key, key, sizeof(key));
    }
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
        sw_fq_unlink(sw, e);
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
    free(sw->vt_ports);
    free(sw->vt_e);
    free(sw->vt_g);
    free(sw);
}
