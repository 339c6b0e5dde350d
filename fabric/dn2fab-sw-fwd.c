/* SPDX-License-Identifier: MIT */
/*
 * dn2fab switch core, the data path: DATA forwarded from port to port
 * (switch routing mode, or multicast origins replicated to the members),
 * counted per port, through the optional fault injection (drop, duplicate,
 * reorder, delay).  See dn2fab-sw-int.h for the other files.
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

/* ------------------------------------------------------ fault injection */
void sw_fq_unlink(struct dn2f_sw *sw, struct fq *e)
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


void sw_fq_release(struct dn2f_sw *sw, struct fq *e)
{
    struct swport *op = sw_live_port(sw, e->out_lid);
    sw_fq_unlink(sw, e);
    sw_capture(sw, DN2F_CAP_FWD, e->flags, 0, e->in_lid, e->out_lid, e->buf, e->len);
    sw_raw_send(sw, &e->to, e->buf, e->len);
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
            sw_fq_release(sw, e);
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
        sw_capture(sw, DN2F_CAP_FWD, 0, 0, in_lid, out->lid, buf, len);
        sw_raw_send(sw, &out->addr, buf, len);
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
        sw_capture(sw, DN2F_CAP_DROP_INJ, 0, 0, in_lid, out->lid, buf, len);
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
        sw_capture(sw, DN2F_CAP_FWD, flags & DN2F_CAPF_DUP, 0, in_lid, out->lid, buf, len);
        sw_raw_send(sw, &out->addr, buf, len);
        release_held(sw);       /* what was held back now arrives after this one */
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


void sw_replicate(struct dn2f_sw *sw, struct swport *in, const struct dn2f_msg *m,
                  const void *buf, size_t len)
{
    uint16_t done[DN2F_NUM_CLID / 16];
    unsigned ndone = 0;
    struct dn2f_iter it;
    struct dn2f_rec r;

    memset(done, 0, sizeof(done));
    if (sw->auth) {
        /* the origin is authenticated with the sender's token (the group has
         * none); the switch re-authenticates each copy for its member */
        static const uint8_t zero[DN2F_TOKEN_LEN];
        struct dn2f_hmac_key k;
        dn2f_pair_key(&k, in->tok, zero);
        if (!dn2f_mac_ok(buf, m, &k)) {
            in->drops++;
            sw->sum.bad++;
            sw_capture(sw, DN2F_CAP_DROP, 0, DN2F_SWR_BAD_MCAST, in->lid, m->h.dst_lid, buf, len);
            return;
        }
    }
    /* All records of one datagram are for the datagram's group. */
    dn2f_data_iter(m, &it);
    while (dn2f_data_next(&it, &r)) {
        if (r.group != m->h.dst_lid) {
            in->drops++;
            sw_capture(sw, DN2F_CAP_DROP, 0, DN2F_SWR_BAD_MCAST, in->lid, m->h.dst_lid, buf, len);
            return;
        }
    }
    /* One output datagram per distinct member, with that member's records. */
    dn2f_data_iter(m, &it);
    while (dn2f_data_next(&it, &r)) {
        unsigned i;
        for (i = 0; i < r.nmemb; i++) {
            struct dn2f_member mb, m2;
            uint16_t lid;
            unsigned idx;
            struct swport *out;
            struct dn2f_iter it2;
            struct dn2f_rec r2;
            struct dn2f_wbuf w;
            uint64_t pkts = 0, bytes = 0;

            dn2f_rec_member_full(&r, i, &mb);
            lid = mb.lid;
            idx = dn2f_lid_index(lid);
            if (done[idx >> 4] & (1u << (idx & 15))) {
                continue;
            }
            done[idx >> 4] |= (uint16_t)(1u << (idx & 15));
            ndone++;
            out = sw_live_port(sw, lid);
            if (!out || !mb.src_sess) {
                in->drops++;
                continue;       /* the sender's retransmissions sort it out */
            }
            dn2f_wbuf_init(&w, sw->obuf, DN2F_DGRAM_MAX);
            dn2f_put_hdr(&w, DN2F_T_DATA, 0, m->h.src_lid, lid, m->h.src_epoch, mb.epoch);
            dn2f_hdr_set_sessions(&w, mb.src_sess, mb.dst_sess);
            dn2f_data_set_ts(&w, m->u.data.ts);     /* the sender's: echoed to it */
            /* this and later records that list lid (with the same epoch) */
            it2 = it;
            r2 = r;
            for (;;) {
                unsigned j;
                for (j = 0; j < r2.nmemb; j++) {
                    dn2f_rec_member_full(&r2, j, &m2);
                    if (m2.lid == lid && m2.epoch == mb.epoch && m2.src_sess == mb.src_sess &&
                        m2.dst_sess == mb.dst_sess) {
                        /* the member's copy: its seq, the same flags (a
                         * virtual time stays with the packet) */
                        struct dn2f_rec c = r2;
                        c.kind = DN2F_REC_MCAST_COPY;
                        c.seq = m2.seq;
                        c.nmemb = 0;
                        c.members = NULL;
                        dn2f_put_record(&w, &c, NULL);
                        pkts++;
                        bytes += r2.len;
                        break;
                    }
                }
                if (!dn2f_data_next(&it2, &r2)) {
                    break;
                }
            }
            if (sw->auth) {
                struct dn2f_hmac_key k;
                dn2f_pair_key(&k, in->tok, out->tok);
                data_send(sw, out, in->lid, sw->obuf, dn2f_finish_mac(&w, &k), pkts, bytes);
            } else {
                data_send(sw, out, in->lid, sw->obuf, dn2f_finish(&w), pkts, bytes);
            }
        }
    }
    (void)ndone;
}


void sw_handle_data(struct dn2f_sw *sw, const struct dn2f_addr *from,
                    const struct dn2f_msg *m, const void *buf, size_t len)
{
    struct swport *in = sw_src_port(sw, from, m), *out;
    uint64_t pkts, bytes, retx;

    if (!in) {
        sw_capture(sw, DN2F_CAP_DROP, 0, DN2F_SWR_UNKNOWN_SRC, m->h.src_lid, m->h.dst_lid, buf, len);
        sw->sum.bad++;
        /* Without a secret: a board that missed a switch restart learns it
         * at once.  With one, DATA/ACK are not authenticated here, so no
         * signed answer to them (anyone could have sent it from the
         * board's address): the board's own KEEPALIVE, which is, gets it. */
        if (!sw->auth && (!sw_live_port(sw, m->h.src_lid) ||
                          dn2f_addr_equal(&sw_live_port(sw, m->h.src_lid)->addr, from))) {
            sw_send_bye_unknown(sw, from, m->h.src_epoch);
        }
        return;
    }
    in->last_seen = now(sw);
    count_recs(m, &pkts, &bytes, &retx);
    in->rx_pkts += pkts;
    in->rx_bytes += bytes;
    in->retx += retx;
    if (m->h.type == DN2F_T_DATA && (m->u.data.kinds & (1u << DN2F_REC_MCAST_ORIGIN))) {
        sw_replicate(sw, in, m, buf, len);
        return;
    }
    out = sw_live_port(sw, m->h.dst_lid);
    if (!out) {
        in->drops++;
        sw_capture(sw, DN2F_CAP_DROP, 0, DN2F_SWR_NO_ROUTE, in->lid, m->h.dst_lid, buf, len);
        return;
    }
    data_send(sw, out, in->lid, buf, len, pkts, bytes);
}
