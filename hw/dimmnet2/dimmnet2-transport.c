/*
 * DIMMnet-2 port: the transport of switch=H:P, the UDP "InfiniBand"
 * fabric of fabric/dn2fab.h through a dn2-switch (subnet manager) at H:P.
 *
 * The fabric endpoint gives reliable, in-order, exactly-once delivery with
 * credit-based back-pressure; the SMA LID register shows the LID the subnet
 * manager assigned and the link state (SMA [17:16] = 3 when ready).
 *
 * Everything here runs under the BQL: a QEMU_CLOCK_REALTIME timer for
 * retransmissions and the Window Controller's bottom half in the main loop,
 * and the socket's receive side in one of two places:
 *
 *   rx-thread=off  (default) an fd handler in the main loop;
 *   rx-thread=on   a thread of the board's own waits in a blocking
 *                  recvfrom() and takes the BQL for each burst of
 *                  datagrams, as a vCPU does for an MMIO access.  A thread
 *                  asleep in recvfrom() is woken by the sender's sendto()
 *                  directly, a main loop asleep in ppoll() through poll
 *                  wait queues.  It pays off when the main loop is idle and
 *                  CPUs are to spare; when the main loop is busy (a qtest
 *                  driver polling, say) the two contend for the BQL, and on
 *                  2 CPUs bandwidth halved (docs/benchmarks.md, "Reading the figures").
 *
 * With the thread the socket is blocking for its sake; every other call on
 * it passes MSG_DONTWAIT.
 *
 * Below the lock-step client (dimmnet2-vt.c): what the endpoint receives
 * with a virtual time, and the switch's grants, go up through the
 * DN2TransportUp the port gave dimmnet2_transport_open() (dimmnet2-fab.h).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/log.h"
#include "qemu/main-loop.h"
#include "qemu/timer.h"
#include "qemu/sockets.h"
#include "qemu/thread.h"
#include "qemu/atomic.h"
#include "qemu/error-report.h"
#include "qapi/error.h"
#include "migration/blocker.h"
#include "migration/vmstate.h"
#include "qapi/visitor.h"
#include "crypto/secret_common.h"
#include "hw/core/cpu.h"
#include "system/qtest.h"
#include "system/runstate.h"
#include "dimmnet2-int.h"
#include "fabric/dn2fab.h"
#include "trace.h"
#include "dimmnet2-fab.h"

/* ------------------------------------------------------------------ */
/* Fabric endpoint callbacks                                           */
/* ------------------------------------------------------------------ */

static uint64_t dimmnet2_fab_now(void *opaque)
{
    return qemu_clock_get_ns(QEMU_CLOCK_REALTIME);
}

static int dimmnet2_fab_send(void *opaque, const struct dn2f_addr *to,
                        const void *buf, size_t len)
{
    DN2State *s = opaque;
    ssize_t r;

    do {
        r = sendto(s->port.fab->fd, buf, len, MSG_DONTWAIT, &to->u.sa, to->len);
    } while (r < 0 && errno == EINTR);
    if (r < 0) {
        return (errno == EAGAIN || errno == EWOULDBLOCK || errno == ENOBUFS) ?
               -EAGAIN : -errno;
    }
    return 0;
}

static int dimmnet2_fab_deliver(void *opaque, uint16_t slid, const uint8_t *pkt,
                           size_t len)
{
    DN2State *s = opaque;

    /* Held for a snapshot, or an incoming migration not loaded yet: the
     * packet waits in the endpoint (acknowledged, not delivered) until the
     * board is released or the VM runs.  Such a packet is in no migration
     * stream: dimmnet2_port_quiescent() refuses a hold while one waits. */
    if (dimmnet2_port_held(s) || runstate_check(RUN_STATE_INMIGRATE)) {
        return -EBUSY;
    }
    return dimmnet2_port_deliver_one(s, slid, pkt, len) == DIMMNET2_RX_BUSY ?
           -EBUSY : 0;
}

static void dimmnet2_fab_link_state(void *opaque, bool up, uint16_t lid)
{
    DN2State *s = opaque;

    if (s->vt.on && !s->vt.started) {
        /* Under virtual time the guest sees the link come up at
         * vt-start-ns, whatever the host's timing of the join. */
        trace_dimmnet2_link_state(s->index, up, lid);
        return;
    }
    s->sys.sma_lid = up ? lid : 0;
    s->sys.link_state = up ? DN2_SMA_LINK_READY : 0;
    trace_dimmnet2_link_state(s->index, up, lid);
    /* Requests waiting for the link go on once the input that brought the
     * news is in (dimmnet2_fab_after_input), outside the endpoint. */
}

/* The switch will not let the board join: say why, once per reason (the
 * endpoint calls this only when the reason changes), with what to do. */
static void dimmnet2_fab_refused(void *opaque, unsigned reason)
{
    DN2State *s = opaque;
    const char *hint;

    switch (reason) {
    case DN2F_BYE_GUID_IN_USE:
        hint = "another live board has this guid= (give each board its own, or "
               "wait until the old one has left)";
        break;
    case DN2F_BYE_AUTH:
        hint = "the cluster secret differs: secret= must hold the bytes of "
               "dn2-switch's --secret-file, and both or neither need one";
        break;
    case DN2F_BYE_FULL:
        hint = "the switch has as many ports from this host as it allows "
               "(dn2-switch --max-ports-per-host)";
        break;
    default:
        hint = "see the switch's log";
        break;
    }
    trace_dimmnet2_link_refused(s->index, reason);
    warn_report("dimmnet2: board %d: switch %s refused the join (%s): %s; the "
                "link stays down and the board keeps trying", s->index,
                s->params.switch_addr, dn2f_bye_name(reason), hint);
}


void dimmnet2_transport_rearm(DN2State *s)
{
    DN2Fab *l = s->port.fab;
    uint64_t d = dn2f_ep_next_deadline(l->ep);

    if (l->thread_on && qemu_thread_is_self(&l->thread)) {
        /* From the receive thread, only ever move the timer earlier.
         * Re-arming it on every packet (a retransmission deadline per
         * send) makes it the first timer of the main loop each time, and
         * QEMU then wakes the main loop through its event notifier: a
         * write, a poll and a read per packet on the latency path, and the
         * main loop competing with this thread for the CPU and the BQL.  A
         * timer left armed too early fires in the main loop, finds nothing
         * due and is set there to the endpoint's real next deadline. */
        if (d != UINT64_MAX) {
            timer_mod_anticipate_ns(l->timer, d);
        }
        return;
    }
    /* In the main loop (which recomputes its poll timeout itself): exact. */
    if (d == UINT64_MAX) {
        timer_del(l->timer);
    } else {
        timer_mod(l->timer, d);
    }
}

static void dimmnet2_rxb_init(DN2RxBatch *b)
{
    b->buf = g_malloc(DN2_RX_BATCH * DN2F_DGRAM_MAX);
}

/* One recvmmsg() into b: the number of datagrams, or -1 (errno). */
static int dimmnet2_rxb_recv(DN2RxBatch *b, int fd, int flags)
{
    int i;

    for (i = 0; i < DN2_RX_BATCH; i++) {
        b->iov[i].iov_base = b->buf + (size_t)i * DN2F_DGRAM_MAX;
        b->iov[i].iov_len = DN2F_DGRAM_MAX;
        memset(&b->msg[i], 0, sizeof(b->msg[i]));
        b->msg[i].msg_hdr.msg_name = &b->ss[i];
        b->msg[i].msg_hdr.msg_namelen = sizeof(b->ss[i]);
        b->msg[i].msg_hdr.msg_iov = &b->iov[i];
        b->msg[i].msg_hdr.msg_iovlen = 1;
    }
    return recvmmsg(fd, b->msg, DN2_RX_BATCH, flags, NULL);
}

/* Hand n received datagrams to the endpoint, without flushing: the ACKs
 * for the burst then ride on whatever the board answers with. */
static void dimmnet2_rxb_feed(DN2State *s, DN2RxBatch *b, int n)
{
    int i;

    for (i = 0; i < n; i++) {
        struct dn2f_addr from;

        dn2f_addr_from_sa(&from, (struct sockaddr *)&b->ss[i], b->msg[i].msg_hdr.msg_namelen);
        dn2f_ep_input_noflush(s->port.fab->ep, &from, b->iov[i].iov_base, b->msg[i].msg_len);
    }
}

/* Feed datagrams to the endpoint until the socket is empty (at most about
 * budget per call, so that timers and the guest get their turn).  Under the
 * BQL. */
void dimmnet2_transport_drain(DN2State *s, DN2RxBatch *b, int budget)
{
    while (budget > 0) {
        int n = dimmnet2_rxb_recv(b, s->port.fab->fd, MSG_DONTWAIT);

        if (n <= 0) {
            break;              /* EAGAIN: drained */
        }
        dimmnet2_rxb_feed(s, b, n);
        if (n < DN2_RX_BATCH) {
            break;              /* that was all there was */
        }
        budget -= n;
    }
}

/* After a burst of input or a timer: let the Window Controller go on if it
 * can (an RVL to answer, credits back), then send what the endpoint queued
 * (ACKs ride on the answer) and re-arm its timer. */
void dimmnet2_transport_after_input(DN2State *s)
{
    if (s->vt.on && !s->vt.nondet) {
        /* Under virtual time the input only fed the endpoint (and the
         * queue of packets waiting for their time): the device moves on
         * its virtual-clock timers alone. */
        dn2f_ep_flush(s->port.fab->ep);
        dimmnet2_transport_rearm(s);
        return;
    }
    s->port.fab->in_input = true;
    if (!s->port.ops->news(s)) {
        dn2f_ep_flush(s->port.fab->ep);
        dimmnet2_transport_rearm(s);
    }
    s->port.fab->in_input = false;
    s->entry_done(s);
}

/* rx-thread=off: the main loop's fd handler. */
static void dimmnet2_fab_read(void *opaque)
{
    DN2State *s = opaque;

    dimmnet2_transport_drain(s, &s->port.fab->rxb, 256);
    dimmnet2_transport_after_input(s);
}

/*
 * rx-thread=on: the board's receive thread.  It sleeps in recvfrom() with
 * its own buffer and no lock held, then takes the BQL to hand the datagram
 * and whatever else has arrived meanwhile to the endpoint.  The endpoint,
 * the device state and guest memory are touched only under the BQL, as by
 * the main loop and the vCPUs.
 */
static void *dimmnet2_fab_rx_thread(void *opaque)
{
    DN2State *s = opaque;
    DN2Fab *l = s->port.fab;
    DN2RxBatch *b = g_new0(DN2RxBatch, 1);
    unsigned errors = 0;

    dimmnet2_rxb_init(b);
    while (!qatomic_read(&l->quit)) {
        /* Sleep until at least one datagram is in, take what else is. */
        int n = dimmnet2_rxb_recv(b, l->fd, MSG_WAITFORONE);

        if (qatomic_read(&l->quit)) {
            break;
        }
        if (n <= 0) {
            if (n < 0 && errno != EINTR && errno != EAGAIN && errno != EWOULDBLOCK &&
                errno != ECONNREFUSED) {
                /* Not expected on a bound UDP socket: say so once, and do
                 * not spin if it persists. */
                if (errors++ == 0) {
                    warn_report("dimmnet2: board %d: receive failed: %s",
                                s->index, strerror(errno));
                }
                g_usleep(1000);
            }
            continue;
        }
        bql_lock();
        if (qatomic_read(&l->quit)) {
            bql_unlock();
            break;
        }
        dimmnet2_rxb_feed(s, b, n);
        if (n == DN2_RX_BATCH) {
            dimmnet2_transport_drain(s, b, 256 - n);
        }
        dimmnet2_transport_after_input(s);
        bql_unlock();
    }
    g_free(b->buf);
    g_free(b);
    return NULL;
}

/* Stop the receive thread.  Under the BQL, which it may be waiting for. */
static void dimmnet2_fab_rx_thread_stop(DN2State *s)
{
    DN2Fab *l = s->port.fab;
    struct dn2f_addr self = l->local;
    bool locked = bql_locked();

    qatomic_set(&l->quit, true);
    /* Wake it: an empty datagram to itself (to the loopback address when
     * bound to a wildcard), and shutdown(), which wakes blocked receivers
     * of UDP sockets on Linux. */
    if (self.u.sa.sa_family == AF_INET &&
        self.u.in.sin_addr.s_addr == htonl(INADDR_ANY)) {
        self.u.in.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    } else if (self.u.sa.sa_family == AF_INET6 &&
               IN6_IS_ADDR_UNSPECIFIED(&self.u.in6.sin6_addr)) {
        self.u.in6.sin6_addr = in6addr_loopback;
    }
    (void)sendto(l->fd, "", 0, MSG_DONTWAIT, &self.u.sa, self.len);
    (void)shutdown(l->fd, SHUT_RD);
    if (locked) {
        bql_unlock();
    }
    qemu_thread_join(&l->thread);
    if (locked) {
        bql_lock();
    }
    l->thread_on = false;
}

static void dimmnet2_fab_timer(void *opaque)
{
    DN2State *s = opaque;

    dn2f_ep_tick(s->port.fab->ep);
    dimmnet2_transport_after_input(s);
}

/* The endpoint's deliver for records that carry a virtual time: the
 * lock-step client's (a board without virtual time takes the packet as it
 * comes). */
static int dimmnet2_fab_deliver_vt(void *opaque, uint16_t slid, const uint8_t *pkt,
                                   size_t len, uint64_t vtime, uint32_t vseq)
{
    DN2State *s = opaque;

    if (!s->vt.on) {
        return dimmnet2_fab_deliver(opaque, slid, pkt, len);
    }
    return s->port.fab->up->deliver_vt(s, slid, pkt, len, vtime, vseq);
}

/* The switch moved this board's horizon. */
static void dimmnet2_fab_vt_grant(void *opaque, uint64_t horizon, uint32_t lookahead_ns,
                                  uint32_t quantum_ns, uint64_t slowest)
{
    DN2State *s = opaque;

    if (s->vt.on) {
        s->port.fab->up->vt_grant(s, horizon, lookahead_ns, quantum_ns, slowest);
    }
}

static const struct dn2f_ep_ops dimmnet2_fab_ops = {
    .now_ns = dimmnet2_fab_now,
    .send_datagram = dimmnet2_fab_send,
    .deliver = dimmnet2_fab_deliver,
    .link_state = dimmnet2_fab_link_state,
    .refused = dimmnet2_fab_refused,
    .deliver_vt = dimmnet2_fab_deliver_vt,
    .vt_grant = dimmnet2_fab_vt_grant,
};

/* Open the socket and the endpoint: s->port.fab.  Nothing is received until
 * dimmnet2_transport_start(). */
bool dimmnet2_transport_open(DN2State *s, const DN2TransportUp *up, Error **errp)
{
    DN2Fab *l = g_new0(DN2Fab, 1);
    struct dn2f_ep_config cfg;
    struct dn2f_addr local;

    dn2f_ep_config_default(&cfg);
    if (dn2f_addr_parse(&cfg.sw, s->params.switch_addr) < 0) {
        error_setg(errp, "dimmnet2: switch=%s is not HOST:PORT (e.g. "
                   "127.0.0.1:4791 or [::1]:4791)", s->params.switch_addr);
        g_free(l);
        return false;
    }
    if (dn2f_addr_port(&cfg.sw) == 0) {
        error_setg(errp, "dimmnet2: switch=%s: port 0 is no switch's port; give "
                   "the port dn2-switch --listen was given", s->params.switch_addr);
        g_free(l);
        return false;
    }
    memset(&local, 0, sizeof(local));
    if (s->params.local_addr && dn2f_addr_parse(&local, s->params.local_addr) < 0) {
        error_setg(errp, "dimmnet2: local=%s is not HOST:PORT", s->params.local_addr);
        g_free(l);
        return false;
    }
    if (local.len && local.u.sa.sa_family != cfg.sw.u.sa.sa_family) {
        error_setg(errp, "dimmnet2: local=%s is %s but switch=%s is %s: the "
                   "board could never reach its switch; give both of one family",
                   s->params.local_addr, local.u.sa.sa_family == AF_INET6 ? "IPv6" : "IPv4",
                   s->params.switch_addr,
                   cfg.sw.u.sa.sa_family == AF_INET6 ? "IPv6" : "IPv4");
        g_free(l);
        return false;
    }
    if (s->params.secret_id) {
        if (qcrypto_secret_lookup(s->params.secret_id, &l->secret, &l->secret_len,
                                  errp) < 0) {
            error_prepend(errp, "dimmnet2: secret=%s: ", s->params.secret_id);
            g_free(l);
            return false;
        }
        /* As dn2-switch reads --secret-file: one trailing newline, \n or
         * \r\n, is not part of the secret (a file written with echo, or
         * on Windows, works for both). */
        if (l->secret_len && l->secret[l->secret_len - 1] == '\n') {
            l->secret_len--;
            if (l->secret_len && l->secret[l->secret_len - 1] == '\r') {
                l->secret_len--;
            }
        }
        if (!l->secret_len) {
            error_setg(errp, "dimmnet2: secret=%s is empty; the cluster secret "
                       "must be the same non-empty bytes as dn2-switch's "
                       "--secret-file", s->params.secret_id);
            g_free(l->secret);
            g_free(l);
            return false;
        }
    }
    if (!local.len) {
        /* Any address of the switch's family, any port. */
        dn2f_addr_parse(&local, cfg.sw.u.sa.sa_family == AF_INET6 ? "[::]:0"
                                                                  : "0.0.0.0:0");
    }
    l->fd = dn2f_udp_open(&local, 8 * 1024 * 1024);    /* local := bound */
    if (l->fd < 0) {
        error_setg_errno(errp, -l->fd, "dimmnet2: cannot open a UDP socket "
                         "on %s", s->params.local_addr ? s->params.local_addr : "any address");
        g_free(l->secret);
        g_free(l);
        return false;
    }
    cfg.guid = s->params.guid ? s->params.guid
                              : g_random_int() | ((uint64_t)g_random_int() << 32) | 1;
    cfg.lid_hint = s->params.lid_wanted;
    /* vt-sync=shm: the domain carries the clocks and the packets between
     * the boards; the endpoint only joins, and is a plain one */
    cfg.vtime = s->vt.on && !s->vt.shm_on;
    cfg.sock_family = local.u.sa.sa_family;
    cfg.secret = l->secret;             /* the endpoint derives its keys */
    cfg.secret_len = l->secret_len;
    l->ep = dn2f_ep_new(&cfg, &dimmnet2_fab_ops, s);
    if (!l->ep) {
        error_setg(errp, "dimmnet2: cannot create the fabric endpoint");
        close(l->fd);
        g_free(l->secret);
        g_free(l);
        return false;
    }
    l->local = local;
    dimmnet2_rxb_init(&l->rxb);
    l->timer = timer_new_ns(QEMU_CLOCK_REALTIME, dimmnet2_fab_timer, s);
    l->up = up;
    s->port.fab = l;
    return true;
}

/* Say HELLO to the switch and start receiving. */
void dimmnet2_transport_start(DN2State *s)
{
    DN2Fab *l = s->port.fab;

    dn2f_ep_flush(l->ep);       /* the first HELLO */
    dimmnet2_transport_rearm(s);
    if (s->params.rx_thread) {
        char name[32];

        qemu_socket_set_block(l->fd);
        l->thread_on = true;
        snprintf(name, sizeof(name), "dimmnet2-rx%d", s->index);
        qemu_thread_create(&l->thread, name, dimmnet2_fab_rx_thread, s,
                           QEMU_THREAD_JOINABLE);
    } else {
        qemu_set_fd_handler(l->fd, dimmnet2_fab_read, NULL, s);
    }
}

/* Stop receiving (the thread, or the fd handler). */
void dimmnet2_transport_stop(DN2State *s)
{
    if (s->port.fab->thread_on) {
        dimmnet2_fab_rx_thread_stop(s);
    } else {
        qemu_set_fd_handler(s->port.fab->fd, NULL, NULL, NULL);
    }
}

/* QEMU ends: BYE to the switch now; nothing is sent after it. */
void dimmnet2_transport_leave(DN2State *s)
{
    dn2f_ep_leave(s->port.fab->ep);
}

/* Close the endpoint and the socket; s->port.fab is gone. */
void dimmnet2_transport_fini(DN2State *s)
{
    timer_free(s->port.fab->timer);
    dn2f_ep_free(s->port.fab->ep);
    close(s->port.fab->fd);
    g_free(s->port.fab->rxb.buf);
    if (s->port.fab->secret) {
        memset(s->port.fab->secret, 0, s->port.fab->secret_len);
        g_free(s->port.fab->secret);
    }
    g_free(s->port.fab);
    s->port.fab = NULL;
}
