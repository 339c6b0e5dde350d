/*
 * DIMMnet-2 port: the board's side of the network (the SWIF and SMA).
 *
 *   no link      the cable is unplugged: remote primitives wait
 *   loopback=on  the port is cabled to itself: the board gets LID 1 and
 *                every packet it sends to LID 1 comes back to it
 *   switch=H:P   the UDP "InfiniBand" fabric of fabric/dn2fab.h, through
 *                a dn2-switch (subnet manager) at H:P
 *
 * This file is the port's API for the Window Controller and the Receive
 * Controller, the loopback cable, and the snapshot hold; it dispatches to
 * the files below it (tests/layering/layers.txt), top to bottom:
 *
 *   dimmnet2-vt.c         the lock-step client of virtual time (vtime=on)
 *   dimmnet2-transport.c  UDP and the fabric endpoint (switch=); reports
 *                         up to the lock-step client through DN2TransportUp
 *   dimmnet2-deliver.c    delivery to the Receive Controller, pcap=, the SMA
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
#include "system/system.h"
#include "dimmnet2-int.h"
#include "fabric/dn2fab.h"
#include "trace.h"
#include "dimmnet2-fab.h"

/* The migration blocker of a linked board that is not held (below,
 * "Snapshots"). */
#define DIMMNET2_LINK_BLOCKER \
    "dimmnet2: a board with a link (switch= or loopback=on) migrates only " \
    "at a consistent cut of its cluster: VM stopped, fabric drained, board " \
    "held (snapshot-hold=on; scripts/cluster.sh snapshot does all three)"

typedef struct DN2LoopPkt {
    uint64_t seq;               /* order of sending, over all queues */
    uint64_t due;               /* vtime=on: the virtual time it arrives */
    size_t len;
    uint8_t data[];
} DN2LoopPkt;

/* ------------------------------------------------------------------ */
/* Loopback                                                            */
/* ------------------------------------------------------------------ */

/* The loopback queue of a packet: its destination WID and whether it is
 * an RVL-family request (which waits on the RC FIFO) or anything else
 * (which waits only on the destination process's own rings). */
static unsigned dimmnet2_loop_queue(uint64_t h0)
{
    return dn2_hdr0_dwid(h0) * 2 + dn2_otype_is_rvl(dn2_hdr0_type(h0));
}

/*
 * Each queue is in order on its own, and a queue whose head must wait does
 * not hold the others up: data overtakes RVL requests that wait for room in
 * the RC FIFO.  The other way round is not allowed: an RVL is delivered
 * only once every data packet sent before it to the same process is, so a
 * read after a write reads what was written (choice #44).
 */
static bool dimmnet2_loop_rvl_may_go(DN2State *s, unsigned q, const DN2LoopPkt *p)
{
    const DN2LoopPkt *d = g_queue_peek_head(&s->port.loop_q[q & ~1u]);

    return !d || d->seq > p->seq;
}

/* Run the loopback cable soon: its bottom half, or under vtime=on its
 * virtual-clock timer at the first time a packet is due (or now). */
static void dimmnet2_loop_kick(DN2State *s, uint64_t at)
{
    if (s->port.loop_timer) {
        timer_mod_anticipate_ns(s->port.loop_timer, MAX(at, (uint64_t)qemu_clock_get_ns(
                                    QEMU_CLOCK_VIRTUAL)));
    } else {
        qemu_bh_schedule(s->port.loop_bh);
    }
}

static void dimmnet2_loop_bh(void *opaque)
{
    DN2State *s = opaque;
    bool more = false;
    uint64_t now = s->port.loop_timer ? qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL) : 0;
    uint64_t next = UINT64_MAX;
    unsigned q;

    /* Data queues first (q even), then the RVL queue of the same WID. */
    for (q = 0; q < DIMMNET2_LOOP_QUEUES; q++) {
        DN2LoopPkt *p;
        int n = 0;

        while ((p = g_queue_peek_head(&s->port.loop_q[q])) && n++ < DIMMNET2_LOOP_MAX) {
            if (p->due > now) {
                next = MIN(next, p->due);   /* vtime: not there yet */
                p = NULL;
                break;
            }
            if ((q & 1) && !dimmnet2_loop_rvl_may_go(s, q, p)) {
                break;          /* its data queue moving on resumes it */
            }
            if (dimmnet2_port_deliver_one(s, DIMMNET2_LOOP_LID, p->data, p->len) ==
                DIMMNET2_RX_BUSY) {
                break;          /* the rx retry timer or a host write resumes */
            }
            g_free(g_queue_pop_head(&s->port.loop_q[q]));
        }
        if (p && n > DIMMNET2_LOOP_MAX) {
            more = true;
        }
    }
    if (more) {
        dimmnet2_loop_kick(s, now);
    } else if (next != UINT64_MAX) {
        dimmnet2_loop_kick(s, next);
    }
    s->port.ops->news(s);       /* the Window Controller may wait for room */
    s->entry_done(s);
}

static void dimmnet2_loop_flush_all(DN2State *s)
{
    DN2LoopPkt *p;
    unsigned q;

    for (q = 0; q < DIMMNET2_LOOP_QUEUES; q++) {
        while ((p = g_queue_pop_head(&s->port.loop_q[q]))) {
            g_free(p);
        }
    }
}

/*
 * The VM runs again (after "cont", or once an incoming migration has
 * loaded): a board still held for a snapshot is released, and whatever was
 * refused meanwhile is offered again.
 */
static void dimmnet2_fab_vm_change(void *opaque, bool running, RunState state)
{
    DN2State *s = opaque;
    Error *err = NULL;

    if (!running || !s->port.fab) {
        return;
    }
    if (dimmnet2_port_held(s)) {
        if (!dimmnet2_port_hold(s, false, &err)) {
            warn_report_err(err);
        }
        goto vt;
    }
    dn2f_ep_resume(s->port.fab->ep);
    dn2f_ep_flush(s->port.fab->ep);
    dimmnet2_transport_rearm(s);
vt:
    if (s->vt.on) {
        timer_del(s->vt.park);
    }
    if (s->vt.on && !s->vt.in_wait) {
        /* after a cut, and after a restore: what waits at the cut, or the
         * wait for the new switch's grant (horizon 0) */
        dimmnet2_vt_arm(s);
    }
}

/* ------------------------------------------------------------------ */
/* The port API used by the Window Controller and Receive Controller   */
/* ------------------------------------------------------------------ */

/*
 * QEMU ends (the guest powered off, a signal, quit): the board leaves the
 * fabric at once, as a board that is unplugged would be noticed, instead of
 * being timed out after the switch's port timeout: a BYE to the switch,
 * and under vt-sync=shm its place in the sync domain given up.  Under
 * virtual time the switch waits for a silent board (its process may be
 * stopped), so a board that ends must say so.  Devices are not unrealized
 * when QEMU exits: this runs from QEMU's exit notifiers, with the vCPUs
 * stopped.
 */
static void dimmnet2_port_exit(Notifier *n, void *data)
{
    DN2State *s = container_of(n, DN2State, port.exit);

    trace_dimmnet2_port_leave(s->index);
    dimmnet2_vt_leave(s);
    dimmnet2_transport_leave(s);
}

bool dimmnet2_port_init(DN2State *s, const DN2PortOps *ops, Error **errp)
{
    if (s->params.switch_addr && s->params.loopback) {
        error_setg(errp, "dimmnet2: give either switch= or loopback=on, not both");
        return false;
    }
    for (unsigned q = 0; q < DIMMNET2_LOOP_QUEUES; q++) {
        g_queue_init(&s->port.loop_q[q]);
    }
    s->port.ops = ops;
    if (!dimmnet2_pcap_open(s, errp)) {
        return false;
    }
    if (s->params.loopback) {
        s->port.kind = DN2_PORT_LOOPBACK;
        if (s->vt.on) {
            /* The cable in virtual time: each packet arrives vt-latency-ns
             * after it left, from a virtual-clock timer (one board needs
             * no synchronisation). */
            s->port.loop_timer = timer_new_ns(QEMU_CLOCK_VIRTUAL, dimmnet2_loop_bh, s);
        }
        s->port.loop_bh = qemu_bh_new_guarded(dimmnet2_loop_bh, s,
                                         &DEVICE(s)->mem_reentrancy_guard);
    } else if (s->params.switch_addr) {
        s->port.kind = DN2_PORT_FABRIC;
        if (!dimmnet2_vt_open(s, errp) ||
            !dimmnet2_transport_open(s, &dimmnet2_vt_up, errp)) {
            dimmnet2_vt_fini(s);    /* the domain's membership, if any */
            if (s->port.pcap) {
                fclose(s->port.pcap);
                s->port.pcap = NULL;
            }
            return false;
        }
        if (s->vt.on) {
            dimmnet2_vt_init(s);
        }
        s->port.fab->vmse = qemu_add_vm_change_state_handler(dimmnet2_fab_vm_change, s);
        s->port.exit.notify = dimmnet2_port_exit;
        qemu_add_exit_notifier(&s->port.exit);
        dimmnet2_transport_start(s);
    } else {
        s->port.kind = DN2_PORT_NONE;
        return true;
    }
    /* Packets in flight and a live peer cannot be migrated: only a board
     * held for a snapshot (dimmnet2_port_hold) is. */
    error_setg(&s->port.blocker, DIMMNET2_LINK_BLOCKER);
    if (migrate_add_blocker(&s->port.blocker, errp) < 0) {
        dimmnet2_port_fini(s);
        return false;
    }
    return true;
}

/* ------------------------------------------------------------------ */
/* Snapshots: a port held at a consistent cut                          */
/* ------------------------------------------------------------------ */

/*
 * A board with a link migrates only at a cut where nothing is in flight:
 * its VM stopped, every packet it sent acknowledged, nothing queued, no
 * packet received and held undelivered (acknowledged, so its sender is
 * idle, yet only in this endpoint), no loopback packet on the cable.  Its
 * fabric state is then nothing but its GUID and LID: a restored board
 * joins its switch afresh (a new epoch, new sessions with its peers, which
 * lose nothing since nothing was in flight) and asks for its old LID
 * (lid=).  docs/fabric.md, "Snapshots".
 */

bool dimmnet2_port_quiescent(DN2State *s, Error **errp)
{
    unsigned q, n = 0;

    if (s->vt.on && !s->port.fab) {
        error_setg(errp, "dimmnet2: board %d runs in virtual time (vtime=on) on "
                   "its loopback cable, whose packets wait for their virtual "
                   "times, which a snapshot does not keep", s->index);
        return false;
    }
    if (s->vt.on && !s->vt.cut_done) {
        error_setg(errp, "dimmnet2: board %d runs in virtual time (vtime=on) "
                   "and is not at a cut: a snapshot is taken at one virtual time "
                   "for every board (vt-cut-ns; scripts/cluster.sh "
                   "--snapshot-at)", s->index);
        return false;
    }
    if (s->vt.on && qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL) != (int64_t)s->vt.cut) {
        error_setg(errp, "dimmnet2: board %d: its virtual clock (%" PRId64 " ns) "
                   "is not at its cut (%" PRIu64 " ns)", s->index,
                   qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL), s->vt.cut);
        return false;
    }
    for (q = 0; q < DIMMNET2_LOOP_QUEUES; q++) {
        n += g_queue_get_length(&s->port.loop_q[q]);
    }
    if (n) {
        error_setg(errp, "dimmnet2: board %d: %u loopback packets on the cable",
                   s->index, n);
        return false;
    }
    if (s->port.fab && !dn2f_ep_idle(s->port.fab->ep)) {
        error_setg(errp, "dimmnet2: board %d: %u packets not yet acknowledged "
                   "by its peers (or queued): the fabric has not drained",
                   s->index, dn2f_ep_unacked(s->port.fab->ep));
        return false;
    }
    /* (acknowledged, so their senders are idle, but not in the stream: a
     * restored board would never see them) */
    if (s->port.fab && (n = dn2f_ep_rx_held(s->port.fab->ep))) {
        error_setg(errp, "dimmnet2: board %d: %u packets received and not yet "
                   "delivered: they wait for room its guest makes (a full status "
                   "ring, IPUSH ring or LH Buffer) or for the data sent before them",
                   s->index, n);
        return false;
    }
    return true;
}

bool dimmnet2_port_hold(DN2State *s, bool on, Error **errp)
{
    if (s->port.kind == DN2_PORT_NONE || on == dimmnet2_port_held(s)) {
        return true;
    }
    if (on) {
        if (!dimmnet2_port_quiescent(s, errp)) {
            return false;
        }
        migrate_del_blocker(&s->port.blocker);
        trace_dimmnet2_snapshot_hold(s->index, true);
        return true;
    }
    error_setg(&s->port.blocker, DIMMNET2_LINK_BLOCKER);
    if (migrate_add_blocker(&s->port.blocker, errp) < 0) {
        return false;       /* a migration runs: still held */
    }
    trace_dimmnet2_snapshot_hold(s->index, false);
    if (s->port.fab) {
        dn2f_ep_resume(s->port.fab->ep);
        dn2f_ep_flush(s->port.fab->ep);
        dimmnet2_transport_rearm(s);
    }
    return true;
}

void dimmnet2_port_fini(DN2State *s)
{
    migrate_del_blocker(&s->port.blocker);
    if (s->port.pcap) {
        fclose(s->port.pcap);
        s->port.pcap = NULL;
    }
    dimmnet2_loop_flush_all(s);
    if (s->port.loop_bh) {
        qemu_bh_delete(s->port.loop_bh);
        s->port.loop_bh = NULL;
    }
    if (s->port.loop_timer) {
        timer_free(s->port.loop_timer);
        s->port.loop_timer = NULL;
    }
    if (s->port.fab) {
        qemu_remove_exit_notifier(&s->port.exit);
        dimmnet2_transport_stop(s);
        if (s->port.fab->vmse) {
            qemu_del_vm_change_state_handler(s->port.fab->vmse);
        }
        dimmnet2_vt_fini(s);
        dimmnet2_transport_fini(s);
    }
}


/* Power-on and Controller Reset: the loopback cable forgets packets in
 * flight (the fabric keeps its streams: they belong to the peers too), the
 * SMA is re-read from the port, and whatever the Receive Controller had
 * refused for want of room is offered again, now that the rings are gone:
 * no reset leaves a peer's stream held. */
void dimmnet2_port_reset(DN2State *s)
{
    dimmnet2_loop_flush_all(s);
    dimmnet2_port_refresh(s);
    if (s->port.kind == DN2_PORT_FABRIC && s->port.fab) {
        /* What that delivers (or drops) is acknowledged at once. */
        dn2f_ep_resume(s->port.fab->ep);
        dn2f_ep_flush(s->port.fab->ep);
        dimmnet2_transport_rearm(s);
    }
}

/* SMA software reset: the port renegotiates with the subnet manager. */
void dimmnet2_port_sma_reset(DN2State *s)
{
    s->sys.sma_lid = 0;
    s->sys.link_state = 0;
    if (s->port.kind == DN2_PORT_LOOPBACK) {
        dimmnet2_port_reset(s);
    } else if (s->port.fab) {
        dn2f_ep_reset(s->port.fab->ep, 0);
        dn2f_ep_flush(s->port.fab->ep);
        dimmnet2_transport_rearm(s);
    }
}

bool dimmnet2_port_ready(DN2State *s)
{
    return s->port.kind != DN2_PORT_NONE && s->sys.link_state == DN2_SMA_LINK_READY;
}

/* Changes whenever the board's view of its peers may have changed: the
 * link came up, or a peer came back as a new incarnation (a renewed
 * session).  0 and constant without a fabric. */
uint64_t dimmnet2_port_peer_gen(DN2State *s)
{
    const struct dn2f_ep_stats *st;

    if (s->port.kind != DN2_PORT_FABRIC || !s->port.fab || !s->port.fab->ep) {
        return 0;
    }
    st = dn2f_ep_stats(s->port.fab->ep);
    return st->link_ups + st->session_resets;
}

uint16_t dimmnet2_port_lid(DN2State *s)
{
    return s->sys.sma_lid;
}

bool dimmnet2_port_can_send(DN2State *s, uint64_t h0, size_t len)
{
    uint16_t dlid = dn2_hdr0_dlid(h0);

    switch (s->port.kind) {
    case DN2_PORT_LOOPBACK:
        return g_queue_get_length(&s->port.loop_q[dimmnet2_loop_queue(h0)]) < DIMMNET2_LOOP_MAX;
    case DN2_PORT_FABRIC:
        if (s->vt.on && dimmnet2_vt_shm_on(s)) {
            /* vt-sync=shm: the rings take it (a full one stops the clock
             * in dimmnet2_vt_send); the endpoint's credits are not used */
            return dn2f_ep_link(s->port.fab->ep) == DN2F_LINK_UP;
        }
        /* The packet's lane: its DWID, and RVL requests apart from data
         * (docs/fabric.md): credits one process of the peer withholds, or
         * a full RC FIFO there, hold up only that lane. */
        if (dn2f_ep_can_send_lane(s->port.fab->ep, dlid, dn2f_h0_lane(h0), len)) {
            return true;
        }
        return s->vt.on && dimmnet2_vt_wait_credits(s, dlid, dn2f_h0_lane(h0), len);
    default:
        return false;
    }
}

void dimmnet2_port_send(DN2State *s, uint16_t dlid, const uint8_t *pkt, size_t len)
{
    switch (s->port.kind) {
    case DN2_PORT_LOOPBACK: {
        DN2LoopPkt *p;
        if (dlid != DIMMNET2_LOOP_LID && !dn2_clid_is_mcast(dn2_lid_to_clid(dlid))) {
            s->stat[DN2_STAT_RX_DROP_ROUTE]++; /* a one-port switch: nowhere to go */
            return;
        }
        p = g_malloc(sizeof(*p) + len);
        p->seq = s->port.loop_seq++;
        if (s->vt.on) {
            uint64_t now = qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL);
            p->due = s->timing.timing_on ? dimmnet2_timing_due(s, now, ldq_le_p(pkt), len)
                                  : now + s->vt.latency_ns;
        } else {
            p->due = 0;
        }
        p->len = len;
        memcpy(p->data, pkt, len);
        g_queue_push_tail(&s->port.loop_q[dimmnet2_loop_queue(ldq_le_p(pkt))], p);
        dimmnet2_loop_kick(s, p->due);
        break;
    }
    case DN2_PORT_FABRIC: {
        int r;

        if (!s->params.coalesce_us || !dn2f_ep_pending(s->port.fab->ep, dlid) || s->vt.on) {
            s->port.fab->flush_now = true;   /* nothing in flight: no ACK to wait for */
        }
        if (s->vt.on && dimmnet2_vt_shm_on(s)) {
            r = dimmnet2_vt_send(s, dlid, pkt, len);    /* through the rings */
        } else if (s->vt.on) {
            r = dn2f_ep_send_vt(s->port.fab->ep, dlid, pkt, len, dimmnet2_vt_due(s, pkt, len),
                                s->vt.vseq++);
        } else {
            r = dn2f_ep_send(s->port.fab->ep, dlid, pkt, len);
        }
        if (r < 0) {
            /* No route to that LID (or a header that disagrees with it):
             * the fabric dropped the packet, as a switch would. */
            s->stat[DN2_STAT_TX_DROPS]++;
            trace_dimmnet2_tx_drop(s->index, dlid, r);
        }
        break;
    }
    default:
        break;
    }
}

/*
 * The Window Controller's run is over: send what it queued.  With
 * coalesce-us > 0 (Nagle's rule, RFC 896, per peer) packets that only went
 * to peers which still have packets in flight wait for the ACK that comes
 * back (the input that brings it flushes), or coalesce-us at most, so
 * that a stream of small primitives leaves in few datagrams while a lone
 * request (a ping-pong, the first of a burst) leaves at once.
 */
void dimmnet2_port_flush(DN2State *s)
{
    DN2Fab *l = s->port.fab;

    if (s->port.kind != DN2_PORT_FABRIC) {
        return;
    }
    if (l->flush_now || l->in_input || !s->params.coalesce_us) {
        l->flush_now = false;
        dn2f_ep_flush(l->ep);
        dimmnet2_transport_rearm(s);
    } else {
        timer_mod_anticipate_ns(l->timer, qemu_clock_get_ns(QEMU_CLOCK_REALTIME) +
                                (int64_t)s->params.coalesce_us * SCALE_US);
    }
}

/* The host freed room: offer the packets the Receive Controller refused. */
void dimmnet2_port_resume(DN2State *s)
{
    switch (s->port.kind) {
    case DN2_PORT_LOOPBACK:
        dimmnet2_loop_kick(s, 0);
        break;
    case DN2_PORT_FABRIC:
        if (s->vt.on) {
            /* Offer the refused packets again at this virtual time. */
            bitmap_zero(s->vt.blocked, DN2F_NUM_CLID * DN2F_NUM_LANES);
            if (!s->vt.in_wait) {
                dimmnet2_vt_arm(s);
            }
            if (!s->vt.nondet) {
                break;
            }
        }
        dn2f_ep_resume(s->port.fab->ep);
        dimmnet2_transport_after_input(s);
        break;
    default:
        break;
    }
}

void dimmnet2_port_due_first(DN2State *s)
{
    if (s->port.kind == DN2_PORT_FABRIC && s->vt.on) {
        dimmnet2_vt_run_due(s);
    }
}

/* For QOM statistics: one counter of the fabric endpoint (0 without one). */
uint64_t dimmnet2_port_stat(DN2State *s, DN2Stat which)
{
    const struct dn2f_ep_stats *st;
    uint64_t drops = 0;
    int i;

    if (s->port.kind != DN2_PORT_FABRIC || !s->port.fab) {
        return 0;
    }
    st = dn2f_ep_stats(s->port.fab->ep);
    switch (which) {
    case DN2_STAT_LINK_DROPS:
        for (i = 0; i < DN2F_DROP_MAX; i++) {
            drops += st->drop[i];
        }
        return drops;
    case DN2_STAT_LINK_RETRANSMITS:
        return st->retransmits;
    case DN2_STAT_LINK_TIMEOUTS:
        return st->timeouts;
    case DN2_STAT_LINK_FAST_RETRANSMITS:
        return st->fast_retransmits;
    case DN2_STAT_LINK_DUPLICATES:
        return st->duplicates;
    case DN2_STAT_LINK_BUSY:
        return st->busy;
    case DN2_STAT_LINK_DGRAMS_TX:
        return st->tx_dgrams;
    case DN2_STAT_LINK_DGRAMS_RX:
        return st->rx_dgrams;
    case DN2_STAT_LINK_AUTH_DROPS:
        return st->drop[DN2F_DROP_AUTH];
    case DN2_STAT_LINK_REFUSALS:
        return st->refusals;
    case DN2_STAT_LINK_SESSION_RESETS:
        return st->session_resets;
    case DN2_STAT_LINK_SPURIOUS_TIMEOUTS:
        return st->spurious_timeouts;
    default:
        return 0;
    }
}
