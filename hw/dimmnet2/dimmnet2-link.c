/*
 * DIMMnet-2 port: the board's side of the network (the SWIF and SMA).
 *
 *   no link      the cable is unplugged: remote primitives wait
 *   loopback=on  the port is cabled to itself: the board gets LID 1 and
 *                every packet it sends to LID 1 comes back to it
 *   switch=H:P   the UDP "InfiniBand" fabric of fabric/dn2fab.h, through
 *                a dn2-switch (subnet manager) at H:P
 *
 * The fabric endpoint gives reliable, in-order, exactly-once delivery with
 * credit-based back-pressure; the SMA LID register shows the LID the subnet
 * manager assigned and the link state (SMA [17:16] = 3 when ready).
 *
 * Everything here runs in the main loop under the BQL: the socket's fd
 * handler, a QEMU_CLOCK_REALTIME timer for retransmissions, and the
 * Window Controller's bottom half.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/log.h"
#include "qemu/main-loop.h"
#include "qemu/timer.h"
#include "qemu/sockets.h"
#include "qapi/error.h"
#include "migration/blocker.h"
#include "dimmnet2.h"
#include "fabric/dn2fab.h"
#include "trace.h"

#define DN2_LOOP_LID 1

struct DN2Link {
    struct dn2f_ep *ep;
    int fd;
    QEMUTimer *timer;
    Error *blocker;
    uint8_t *rxbuf;
};

typedef struct DN2LoopPkt {
    size_t len;
    uint8_t data[];
} DN2LoopPkt;

/* ------------------------------------------------------------------ */
/* Loopback                                                            */
/* ------------------------------------------------------------------ */

static void dn2_loop_bh(void *opaque)
{
    DN2State *s = opaque;
    DN2LoopPkt *p;
    int n = 0;

    while ((p = g_queue_peek_head(&s->loop_q)) && n++ < DN2_LOOP_MAX) {
        if (dn2_rx_packet(s, DN2_LOOP_LID, p->data, p->len) == -EBUSY) {
            return;             /* the rx retry timer or a host write resumes */
        }
        g_free(g_queue_pop_head(&s->loop_q));
    }
    if (!g_queue_is_empty(&s->loop_q)) {
        qemu_bh_schedule(s->loop_bh);
    }
    dn2_kick(s);                /* the Window Controller may wait for room */
}

static void dn2_loop_flush_all(DN2State *s)
{
    DN2LoopPkt *p;

    while ((p = g_queue_pop_head(&s->loop_q))) {
        g_free(p);
    }
}

/* ------------------------------------------------------------------ */
/* Fabric endpoint callbacks                                           */
/* ------------------------------------------------------------------ */

static uint64_t dn2_fab_now(void *opaque)
{
    return qemu_clock_get_ns(QEMU_CLOCK_REALTIME);
}

static int dn2_fab_send(void *opaque, const struct dn2f_addr *to,
                        const void *buf, size_t len)
{
    DN2State *s = opaque;
    ssize_t r;

    do {
        r = sendto(s->link->fd, buf, len, 0, &to->u.sa, to->len);
    } while (r < 0 && errno == EINTR);
    if (r < 0) {
        return (errno == EAGAIN || errno == EWOULDBLOCK || errno == ENOBUFS) ?
               -EAGAIN : -errno;
    }
    return 0;
}

static int dn2_fab_deliver(void *opaque, uint16_t slid, const uint8_t *pkt,
                           size_t len)
{
    return dn2_rx_packet(opaque, slid, pkt, len);
}

static void dn2_fab_link_state(void *opaque, bool up, uint16_t lid)
{
    DN2State *s = opaque;

    s->sma_lid = up ? lid : 0;
    s->link_state = up ? DN2_SMA_LINK_READY : 0;
    trace_dimmnet2_link_state(s->index, up, lid);
    dn2_kick(s);
}

static const struct dn2f_ep_ops dn2_fab_ops = {
    .now_ns = dn2_fab_now,
    .send_datagram = dn2_fab_send,
    .deliver = dn2_fab_deliver,
    .link_state = dn2_fab_link_state,
};

static void dn2_fab_rearm(DN2State *s)
{
    uint64_t d = dn2f_ep_next_deadline(s->link->ep);

    if (d == UINT64_MAX) {
        timer_del(s->link->timer);
    } else {
        timer_mod(s->link->timer, d);
    }
}

static void dn2_fab_read(void *opaque)
{
    DN2State *s = opaque;
    DN2Link *l = s->link;
    int i;

    for (i = 0; i < 256; i++) {
        struct sockaddr_storage ss;
        socklen_t sl = sizeof(ss);
        struct dn2f_addr from;
        ssize_t n = recvfrom(l->fd, l->rxbuf, DN2F_DGRAM_MAX, 0,
                             (struct sockaddr *)&ss, &sl);
        if (n < 0) {
            break;              /* EAGAIN: drained */
        }
        dn2f_addr_from_sa(&from, (struct sockaddr *)&ss, sl);
        dn2f_ep_input(l->ep, &from, l->rxbuf, n);
    }
    dn2f_ep_flush(l->ep);
    dn2_fab_rearm(s);
    dn2_kick(s);
}

static void dn2_fab_timer(void *opaque)
{
    DN2State *s = opaque;

    dn2f_ep_tick(s->link->ep);
    dn2f_ep_flush(s->link->ep);
    dn2_fab_rearm(s);
    dn2_kick(s);
}

static bool dn2_fab_init(DN2State *s, Error **errp)
{
    DN2Link *l = g_new0(DN2Link, 1);
    struct dn2f_ep_config cfg;
    struct dn2f_addr local;

    dn2f_ep_config_default(&cfg);
    if (dn2f_addr_parse(&cfg.sw, s->switch_addr) < 0) {
        error_setg(errp, "dimmnet2: switch=%s is not HOST:PORT", s->switch_addr);
        g_free(l);
        return false;
    }
    memset(&local, 0, sizeof(local));
    if (s->local_addr && dn2f_addr_parse(&local, s->local_addr) < 0) {
        error_setg(errp, "dimmnet2: local=%s is not HOST:PORT", s->local_addr);
        g_free(l);
        return false;
    }
    if (!local.len) {
        /* Any address of the switch's family, any port. */
        dn2f_addr_parse(&local, cfg.sw.u.sa.sa_family == AF_INET6 ? "[::]:0"
                                                                  : "0.0.0.0:0");
    }
    l->fd = dn2f_udp_open(&local, 8 * 1024 * 1024);
    if (l->fd < 0) {
        error_setg_errno(errp, -l->fd, "dimmnet2: cannot open a UDP socket "
                         "on %s", s->local_addr ? s->local_addr : "any address");
        g_free(l);
        return false;
    }
    cfg.guid = s->guid ? s->guid : g_random_int() | ((uint64_t)g_random_int() << 32) | 1;
    cfg.sock_family = local.u.sa.sa_family;
    l->ep = dn2f_ep_new(&cfg, &dn2_fab_ops, s);
    if (!l->ep) {
        error_setg(errp, "dimmnet2: cannot create the fabric endpoint");
        close(l->fd);
        g_free(l);
        return false;
    }
    l->rxbuf = g_malloc(DN2F_DGRAM_MAX);
    l->timer = timer_new_ns(QEMU_CLOCK_REALTIME, dn2_fab_timer, s);
    s->link = l;
    qemu_socket_set_nonblock(l->fd);
    qemu_set_fd_handler(l->fd, dn2_fab_read, NULL, s);
    dn2f_ep_flush(l->ep);       /* the first HELLO */
    dn2_fab_rearm(s);
    return true;
}

/* ------------------------------------------------------------------ */
/* The port API used by the Window Controller and Receive Controller   */
/* ------------------------------------------------------------------ */

bool dn2_link_init(DN2State *s, Error **errp)
{
    if (s->switch_addr && s->loopback) {
        error_setg(errp, "dimmnet2: give either switch= or loopback=on, not both");
        return false;
    }
    g_queue_init(&s->loop_q);
    dn2_rx_init(s);
    if (s->loopback) {
        s->link_kind = DN2_LINK_LOOPBACK;
        s->loop_bh = qemu_bh_new_guarded(dn2_loop_bh, s,
                                         &DEVICE(s)->mem_reentrancy_guard);
    } else if (s->switch_addr) {
        s->link_kind = DN2_LINK_FABRIC;
        if (!dn2_fab_init(s, errp)) {
            return false;
        }
    } else {
        s->link_kind = DN2_LINK_NONE;
        return true;
    }
    /* Packets in flight and a live peer cannot be migrated. */
    error_setg(&s->blocker, "dimmnet2: a board with a link (switch= or "
               "loopback=on) cannot be migrated");
    if (migrate_add_blocker(&s->blocker, errp) < 0) {
        dn2_link_fini(s);
        return false;
    }
    return true;
}

void dn2_link_fini(DN2State *s)
{
    migrate_del_blocker(&s->blocker);
    dn2_loop_flush_all(s);
    if (s->loop_bh) {
        qemu_bh_delete(s->loop_bh);
        s->loop_bh = NULL;
    }
    if (s->rx_retry) {
        timer_free(s->rx_retry);
        s->rx_retry = NULL;
    }
    if (s->link) {
        qemu_set_fd_handler(s->link->fd, NULL, NULL, NULL);
        timer_free(s->link->timer);
        dn2f_ep_free(s->link->ep);
        close(s->link->fd);
        g_free(s->link->rxbuf);
        g_free(s->link);
        s->link = NULL;
    }
}

/* Power-on and Controller Reset: the port forgets packets in flight. */
void dn2_link_reset(DN2State *s)
{
    dn2_loop_flush_all(s);
    if (s->link_kind == DN2_LINK_LOOPBACK) {
        s->sma_lid = DN2_LOOP_LID;
        s->link_state = DN2_SMA_LINK_READY;
    }
}

/* SMA software reset: the port renegotiates with the subnet manager. */
void dn2_link_sma_reset(DN2State *s)
{
    s->sma_lid = 0;
    s->link_state = 0;
    if (s->link_kind == DN2_LINK_LOOPBACK) {
        dn2_link_reset(s);
    } else if (s->link) {
        dn2f_ep_reset(s->link->ep, 0);
        dn2f_ep_flush(s->link->ep);
        dn2_fab_rearm(s);
    }
}

bool dn2_link_ready(DN2State *s)
{
    return s->link_kind != DN2_LINK_NONE && s->link_state == DN2_SMA_LINK_READY;
}

uint16_t dn2_link_lid(DN2State *s)
{
    return s->sma_lid;
}

bool dn2_link_can_send(DN2State *s, uint16_t dlid, size_t len)
{
    switch (s->link_kind) {
    case DN2_LINK_LOOPBACK:
        return g_queue_get_length(&s->loop_q) < DN2_LOOP_MAX;
    case DN2_LINK_FABRIC:
        return dn2f_ep_can_send(s->link->ep, dlid, len);
    default:
        return false;
    }
}

void dn2_link_send(DN2State *s, uint16_t dlid, const uint8_t *pkt, size_t len)
{
    switch (s->link_kind) {
    case DN2_LINK_LOOPBACK: {
        DN2LoopPkt *p;
        if (dlid != DN2_LOOP_LID && !dn2_clid_is_mcast(dn2_lid_to_clid(dlid))) {
            s->stat_rx_drop_route++;    /* a one-port switch: nowhere to go */
            return;
        }
        p = g_malloc(sizeof(*p) + len);
        p->len = len;
        memcpy(p->data, pkt, len);
        g_queue_push_tail(&s->loop_q, p);
        qemu_bh_schedule(s->loop_bh);
        break;
    }
    case DN2_LINK_FABRIC: {
        int r = dn2f_ep_send(s->link->ep, dlid, pkt, len);
        if (r < 0) {
            /* No route to that LID (or a header that disagrees with it):
             * the fabric dropped the packet, as a switch would. */
            s->stat_tx_drops++;
            trace_dimmnet2_tx_drop(s->index, dlid, r);
        }
        break;
    }
    default:
        break;
    }
}

void dn2_link_flush(DN2State *s)
{
    if (s->link_kind == DN2_LINK_FABRIC) {
        dn2f_ep_flush(s->link->ep);
        dn2_fab_rearm(s);
    }
}

/* The host freed room: offer the packets the Receive Controller refused. */
void dn2_link_resume(DN2State *s)
{
    switch (s->link_kind) {
    case DN2_LINK_LOOPBACK:
        if (!g_queue_is_empty(&s->loop_q)) {
            qemu_bh_schedule(s->loop_bh);
        }
        break;
    case DN2_LINK_FABRIC:
        dn2f_ep_resume(s->link->ep);
        dn2f_ep_flush(s->link->ep);
        dn2_fab_rearm(s);
        break;
    default:
        break;
    }
}

/* For QOM statistics. */
void dn2_link_stats(DN2State *s, uint64_t *retransmits, uint64_t *dgrams_tx,
                    uint64_t *dgrams_rx, uint64_t *drops)
{
    const struct dn2f_ep_stats *st;
    int i;

    *retransmits = *dgrams_tx = *dgrams_rx = *drops = 0;
    if (s->link_kind == DN2_LINK_FABRIC && s->link) {
        st = dn2f_ep_stats(s->link->ep);
        *retransmits = st->retransmits;
        *dgrams_tx = st->tx_dgrams;
        *dgrams_rx = st->rx_dgrams;
        for (i = 0; i < DN2F_DROP_MAX; i++) {
            *drops += st->drop[i];
        }
    }
}
