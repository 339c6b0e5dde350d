/*
 * DIMMnet-2 port: the lock-step client of virtual time (vtime=on,
 * docs/virtual-time.md) and its snapshots at a cut (vt-cut-ns).
 *
 * Between the port (dimmnet2-port.c, above: it asks for a packet's due
 * time and for credits) and the transport (dimmnet2-transport.c, below:
 * it reports the records that carry a virtual time and the grants up
 * through dimmnet2_vt_up, the DN2TransportUp table of dimmnet2-fab.h).
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
#include "system/cpu-timers.h"
#include "system/qtest.h"
#include "system/runstate.h"
#include "dimmnet2-int.h"
#include "fabric/dn2fab.h"
#include "fabric/dn2fab-shm.h"
#include "trace.h"
#include "dimmnet2-fab.h"

/* A packet that came in under vtime=on, waiting for its virtual time. */
typedef struct DN2VtPkt {
    uint64_t vtime;             /* deliver at this virtual time */
    uint32_t vseq;              /* the sender's counter: the last tie rule */
    uint16_t slid;
    uint8_t lane;
    size_t len;
    uint8_t data[];
} DN2VtPkt;

/* At most this many bytes wait in the queue; beyond it the endpoint holds
 * packets back with its credits, which makes the run depend on the host
 * (docs/virtual-time.md, "Limits"). */
#define DIMMNET2_VTQ_MAX        (256u * 1024 * 1024)
#define DIMMNET2_VT_NOTE_NS     (5 * NANOSECONDS_PER_SECOND)
#define DIMMNET2_VT_CREDIT_NS   (2 * NANOSECONDS_PER_SECOND)


/*
 * Every packet carries the virtual time at which its receiver delivers it
 * (the sender's clock plus the modelled latency) and the sender's counter;
 * the receiver keeps what came in, in (vtime, source LID, vseq) order, and
 * delivers it from a QEMU_CLOCK_VIRTUAL timer at that time.  The same timer
 * keeps the board below its horizon: the switch grants a horizon once every
 * packet that could arrive before it is here, and at the horizon the board
 * reports its clock and waits, processing its socket, for the next grant.
 * The datagrams' reliability (sequence numbers, ACKs, retransmissions on
 * the host's clock) is below all this and changes no virtual time.
 *
 * vt-sync=shm: the boards of one host keep the lock-step in a sync domain
 * in shared memory (fabric/dn2fab-shm.h) instead: the board publishes its
 * clock and promise there, reads its horizon from its slot, sleeps on a
 * futex for the next one, and its packets to the other members go into
 * their rings, which each board empties into its queue.  The same vtime,
 * vseq and delivery order as over UDP; the endpoint stays for the join,
 * the LIDs, the routes and the link.
 */

static gint dimmnet2_vt_cmp(gconstpointer a, gconstpointer b, gpointer unused)
{
    const DN2VtPkt *x = a, *y = b;

    if (x->vtime != y->vtime) {
        return x->vtime < y->vtime ? -1 : 1;
    }
    if (x->slid != y->slid) {
        return x->slid < y->slid ? -1 : 1;
    }
    if (x->vseq != y->vseq) {
        return x->vseq < y->vseq ? -1 : 1;
    }
    return 0;
}

static unsigned dimmnet2_vt_key(uint16_t slid, unsigned lane)
{
    return dn2_lid_to_clid(slid) * DN2F_NUM_LANES + lane;
}

/* Must the packet wait for one the board refused?  Its own lane from the
 * same source, and a request also for that source's data lane of the same
 * WID (read after write, as the fabric orders them). */
static bool dimmnet2_vt_blocked(DN2Vt *v, const DN2VtPkt *p)
{
    if (test_bit(dimmnet2_vt_key(p->slid, p->lane), v->blocked)) {
        return true;
    }
    return p->lane >= DN2F_LANE_REQ &&
           test_bit(dimmnet2_vt_key(p->slid, p->lane - DN2F_LANE_REQ), v->blocked);
}

/* The first packet that may be delivered (NULL: none). */
static DN2VtPkt *dimmnet2_vt_first(DN2Vt *v)
{
    GSequenceIter *it = g_sequence_get_begin_iter(v->q);

    for (; !g_sequence_iter_is_end(it); it = g_sequence_iter_next(it)) {
        DN2VtPkt *p = g_sequence_get(it);
        if (!dimmnet2_vt_blocked(v, p)) {
            return p;
        }
    }
    return NULL;
}

/* Arm the timer for the next delivery or the horizon, whichever is first. */
void dimmnet2_vt_arm(DN2State *s)
{
    DN2Vt *v = &s->vt;
    DN2VtPkt *p = dimmnet2_vt_first(v);
    int64_t now = qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL);
    uint64_t at = v->horizon;

    if (p) {
        at = MIN(at, MAX(p->vtime, (uint64_t)now));
    }
    if (v->cut && !v->cut_done) {
        at = MIN(at, v->cut);
    }
    timer_mod(v->timer, MIN(at, (uint64_t)INT64_MAX));
}

/* Is the board doing nothing until its next timer or packet?  Only then
 * may it promise more than its clock: its vCPU halted with no work, and
 * (checked by the caller through the deadlines) no timer of its own due.
 * vt-idle=off: never (it promises its clock only). */
static bool dimmnet2_vt_idle(DN2State *s)
{
    CPUState *cpu;

    if (qtest_enabled() || !s->vt.idle) {
        return false;           /* the test drives the clock: promise nothing */
    }
    if (!icount_all_accounted()) {
        return false;           /* halted, but its last instructions are not
                                 * on the clock yet: the clock read here is
                                 * behind */
    }
    CPU_FOREACH(cpu) {
        if (!cpu->halted || cpu_has_work(cpu)) {
            return false;
        }
    }
    return true;
}

/* The earliest virtual time at which this board could send, now that it
 * stands at now: now while it runs; when it is idle, its next virtual
 * timer or its next packet (another board's packet that wakes it earlier
 * is the switch's to take into account). */
static uint64_t dimmnet2_vt_earliest(DN2State *s, int64_t now)
{
    DN2Vt *v = &s->vt;
    DN2VtPkt *p;
    int64_t d;
    uint64_t e;

    if (!dimmnet2_vt_idle(s)) {
        return now;
    }
    timer_del(v->timer);
    d = qemu_clock_deadline_ns_all(QEMU_CLOCK_VIRTUAL, QEMU_TIMER_ATTR_ALL);
    e = d < 0 ? (uint64_t)INT64_MAX : (uint64_t)now + d;
    p = dimmnet2_vt_first(v);
    if (p) {
        e = MIN(e, MAX(p->vtime, (uint64_t)now));
    }
    return e;
}

/* ------------------------------------------------------------------ */
/* vt-sync=shm: the same-host sync domain                              */
/* ------------------------------------------------------------------ */

/*
 * The domain failed (a member died, or its file is corrupt): say why, once,
 * and stop the lock-step, for a run with a member missing is not the same
 * run.  The board no longer waits (its horizon is infinite) and sends
 * nothing; its VM stops: QEMU exits with status 1, or under qtest the VM
 * stops in state internal-error, so that the test can look.
 */
static void dimmnet2_vt_shm_fail_msg(DN2State *s, const char *why)
{
    DN2Vt *v = &s->vt;

    if (v->error) {
        return;
    }
    v->error = g_strdup(why);
    error_report("dimmnet2: board %d: vtime: the sync domain %s failed at virtual "
                 "time %.9f s: %s; the lock-step stops", s->index, s->vt.shm_path,
                 qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL) / 1e9, v->error);
    v->horizon = DN2F_VT_INFINITY;
    if (qtest_enabled()) {
        qemu_system_vmstop_request_prepare();
        qemu_system_vmstop_request(RUN_STATE_INTERNAL_ERROR);
    } else {
        qemu_system_shutdown_request_with_code(SHUTDOWN_CAUSE_HOST_ERROR, 1);
    }
}

static void dimmnet2_vt_shm_fail(DN2State *s, int r)
{
    const char *why = dn2f_shm_strerror(s->vt.shm);

    dimmnet2_vt_shm_fail_msg(s, *why ? why : strerror(-r));
}

/* The domain's grant: the board's horizon (monotone, as the switch's).  The
 * library lowers it to the least vtime still in the board's ring, so that
 * it is safe before or after a take: a grant raised by a sender's publish
 * after the board's last take never lets the board run past that sender's
 * packet (over UDP the switch grants only what the receivers acknowledged). */
static void dimmnet2_vt_shm_grant(DN2State *s)
{
    DN2Vt *v = &s->vt;
    uint64_t g;

    if (!v->shm || v->error) {
        return;
    }
    g = dn2f_shm_grant(v->shm);
    if (g > v->horizon) {
        v->horizon = g;
    }
}

static void dimmnet2_vt_shm_publish(DN2State *s, uint64_t now, uint64_t earliest)
{
    DN2Vt *v = &s->vt;
    int r;

    if (v->error) {
        return;
    }
    r = dn2f_shm_publish(v->shm, now, MAX(now, earliest));
    if (r < 0 && r != -EINVAL) {
        dimmnet2_vt_shm_fail(s, r);
        return;
    }
    dimmnet2_vt_shm_grant(s);
}

static void dimmnet2_vt_enqueue(DN2State *s, uint16_t slid, const uint8_t *pkt,
                                size_t len, uint64_t vtime, uint32_t vseq);

/* Every packet in the board's ring into its queue (they wait there for
 * their virtual times as the endpoint's do).  No lowered promise: a packet
 * is in the receiver's promise from the moment it is in the ring, and the
 * domain keeps what the board took until its next publish. */
static void dimmnet2_vt_shm_take(DN2State *s)
{
    DN2Vt *v = &s->vt;
    struct dn2f_shm_pkt *p = v->shm_pkt;
    int r;

    if (!v->shm || v->error) {
        return;
    }
    while ((r = dn2f_shm_recv(v->shm, p)) == 1) {
        if (v->q_bytes + p->len > DIMMNET2_VTQ_MAX && !v->q_full) {
            warn_report("dimmnet2: board %d: vtime: %u MiB of packets wait for "
                        "their time (a process stopped reading?)", s->index,
                        DIMMNET2_VTQ_MAX >> 20);
            v->q_full = true;
        }
        dimmnet2_vt_enqueue(s, p->slid, p->data, p->len, p->vtime, p->vseq);
    }
    if (r < 0) {
        dimmnet2_vt_shm_fail(s, r);
    }
}

/* Still waiting after a while: say for whom (the member with the least
 * promise). */
static void dimmnet2_vt_shm_note(DN2State *s, double waited, const char *what)
{
    DN2Vt *v = &s->vt;
    unsigned idx;
    uint16_t lid;
    uint64_t at;

    if (dn2f_shm_slowest(v->shm, &idx, &lid, &at)) {
        warn_report("dimmnet2: board %d: vtime: waiting %.0f s for %s at virtual "
                    "time %.9f s (horizon %.9f s); the slowest member of the sync "
                    "domain %s is member %u (LID 0x%04x), at %.9f s", s->index,
                    waited, what, qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL) / 1e9,
                    v->horizon / 1e9, v->shm_path, idx, lid, at / 1e9);
    }
}

/* Datagrams of the switch while the board waits on the domain: in, and
 * what the endpoint owes (keepalives) out.  Never blocks. */
static void dimmnet2_vt_shm_service(DN2State *s)
{
    dimmnet2_transport_drain(s, &s->port.fab->rxb, 256);
    if (dn2f_ep_next_deadline(s->port.fab->ep) <=
        (uint64_t)qemu_clock_get_ns(QEMU_CLOCK_REALTIME)) {
        dn2f_ep_tick(s->port.fab->ep);
    }
    dn2f_ep_flush(s->port.fab->ep);
}

/* How long one wait on the domain may sleep: until the endpoint's next
 * deadline, at most 100 ms (the switch's datagrams are read between). */
static int64_t dimmnet2_vt_shm_slice(DN2State *s)
{
    int64_t rt = qemu_clock_get_ns(QEMU_CLOCK_REALTIME);
    uint64_t dl = dn2f_ep_next_deadline(s->port.fab->ep);
    int64_t t = 100 * SCALE_MS;

    if (dl != UINT64_MAX) {
        t = dl <= (uint64_t)rt ? 0 : MIN(t, (int64_t)(dl - rt));
    }
    return t;
}

/* Report the board's clock and promise to the switch (through the
 * endpoint, which sends it once everything this board sent is
 * acknowledged). */
static void dimmnet2_vt_report(DN2State *s, uint64_t now, uint64_t earliest)
{
    DN2Vt *v = &s->vt;

    v->reported = true;
    v->rep_now = now;
    v->rep_earliest = earliest;
    if (v->shm) {
        dimmnet2_vt_shm_publish(s, now, earliest);
        return;
    }
    dn2f_ep_vt_report(s->port.fab->ep, now, earliest);
}

/* Wait, on the host's clock, until ok(s, arg): the socket's datagrams go to
 * the endpoint, its timers run, what it owes is sent.  Under the BQL, in
 * the vCPU thread or the main loop: neither may go on meanwhile. */
static void dimmnet2_vt_block(DN2State *s, bool (*ok)(DN2State *, void *), void *arg,
                              int64_t give_up_ns)
{
    DN2Vt *v = &s->vt;
    int64_t start = qemu_clock_get_ns(QEMU_CLOCK_REALTIME);
    int64_t note = start + DIMMNET2_VT_NOTE_NS;

    s->stat[DN2_STAT_VT_WAITS]++;
    v->in_wait = true;
    dn2f_ep_flush(s->port.fab->ep);
    while (!ok(s, arg)) {
        int64_t rt = qemu_clock_get_ns(QEMU_CLOCK_REALTIME);
        uint64_t dl = dn2f_ep_next_deadline(s->port.fab->ep);
        int64_t timeout = 100 * SCALE_MS;
        GPollFD pfd = { .fd = s->port.fab->fd, .events = G_IO_IN };

        if (give_up_ns && rt - start >= give_up_ns) {
            break;
        }
        if (v->shm && !v->error && dn2f_ep_link(s->port.fab->ep) == DN2F_LINK_UP) {
            /* 0: a new grant; 1: a sender waits for room in the ring */
            int r = dn2f_shm_wait(v->shm, dimmnet2_vt_shm_slice(s));

            if (r == 0 || r == 1) {
                dimmnet2_vt_shm_take(s);
                dimmnet2_vt_shm_grant(s);
            } else if (r != -ETIMEDOUT) {
                dimmnet2_vt_shm_fail(s, r);
            }
            dimmnet2_vt_shm_service(s);
            rt = qemu_clock_get_ns(QEMU_CLOCK_REALTIME);
            if (rt >= note && !v->error) {
                note = rt + DIMMNET2_VT_NOTE_NS;
                dimmnet2_vt_shm_note(s, (rt - start) / 1e9, "a grant");
            }
            continue;
        }
        if (dl != UINT64_MAX) {
            timeout = dl <= (uint64_t)rt ? 0 : MIN(timeout, (int64_t)(dl - rt));
        }
        if (qemu_poll_ns(&pfd, 1, timeout) > 0) {
            dimmnet2_transport_drain(s, &s->port.fab->rxb, 256);
        }
        rt = qemu_clock_get_ns(QEMU_CLOCK_REALTIME);
        if (dn2f_ep_next_deadline(s->port.fab->ep) <= (uint64_t)rt) {
            dn2f_ep_tick(s->port.fab->ep);
        }
        dn2f_ep_flush(s->port.fab->ep);
        if (rt >= note) {
            note = rt + DIMMNET2_VT_NOTE_NS;
            warn_report("dimmnet2: board %d: vtime: waiting %.0f s at virtual "
                        "time %.9f s (horizon %.9f s, link %s); the switch's "
                        "log names the board it waits for", s->index,
                        (rt - start) / 1e9,
                        qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL) / 1e9,
                        v->horizon / 1e9,
                        dn2f_ep_link(s->port.fab->ep) == DN2F_LINK_UP ? "up" : "down");
        }
    }
    v->in_wait = false;
    s->stat[DN2_STAT_VT_WAIT_MS] +=
        (qemu_clock_get_ns(QEMU_CLOCK_REALTIME) - start) / SCALE_MS;
    dimmnet2_transport_rearm(s);
}

static bool dimmnet2_vt_may_run(DN2State *s, void *arg)
{
    uint64_t now = *(uint64_t *)arg;

    if (s->vt.error) {
        return true;            /* the lock-step stopped: nothing to wait for */
    }
    return s->vt.horizon > now && dn2f_ep_link(s->port.fab->ep) == DN2F_LINK_UP;
}

/* Deliver, in order, every packet whose time has come. */
static void dimmnet2_vt_deliver_due(DN2State *s, uint64_t now)
{
    DN2Vt *v = &s->vt;
    GSequenceIter *it = g_sequence_get_begin_iter(v->q);
    bool any = false;

    while (!g_sequence_iter_is_end(it)) {
        DN2VtPkt *p = g_sequence_get(it);
        GSequenceIter *next = g_sequence_iter_next(it);

        if (p->vtime > now) {
            break;
        }
        if (!dimmnet2_vt_blocked(v, p)) {
            if (dimmnet2_port_deliver_one(s, p->slid, p->data, p->len) ==
                DIMMNET2_RX_BUSY) {
                set_bit(dimmnet2_vt_key(p->slid, p->lane), v->blocked);
            } else {
                v->q_bytes -= p->len;
                g_sequence_remove(it);
                any = true;
            }
        }
        it = next;
    }
    if (v->q_full && v->q_bytes < DIMMNET2_VTQ_MAX / 2) {
        v->q_full = false;
        dn2f_ep_resume(s->port.fab->ep);
    }
    if (any) {
        s->port.ops->news(s);   /* an RVL to answer, a request that waited */
    }
}

/*
 * vt-cut-ns: the board stops its VM at exactly that virtual time, before
 * anything else happens there (docs/virtual-time.md, "Snapshots").  It
 * reports its clock first, so that the other boards can reach the cut
 * too; nothing is delivered at the cut until the VM runs again.  The
 * timer runs in the main loop (under -icount the vCPU gets no budget past
 * it), whose next step handles the stop request before the vCPU runs.
 */
static void dimmnet2_vt_cut(DN2State *s, uint64_t now)
{
    DN2Vt *v = &s->vt;

    v->cut_done = true;
    dimmnet2_vt_report(s, now, dimmnet2_vt_earliest(s, now));
    dn2f_ep_flush(s->port.fab->ep);
    dimmnet2_transport_rearm(s);
    trace_dimmnet2_vt_cut(s->index, now);
    /* Until the stop: this timer, on a list that is never run, keeps the
     * virtual clock's deadline at the cut, so the vCPU gets no budget and
     * the main loop's idle warp does not move the clock (a timer of the
     * main loop's list at the cut would run again at once). */
    timer_mod(v->park, now);
    if (runstate_is_running()) {
        qemu_system_vmstop_request_prepare();
        qemu_system_vmstop_request(RUN_STATE_PAUSED);
    }
}

static void dimmnet2_vt_cb(void *opaque)
{
    DN2State *s = opaque;
    DN2Vt *v = &s->vt;
    uint64_t now = qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL);

    /* vt-sync=shm: what the other members sent, and the grant as it is */
    dimmnet2_vt_shm_take(s);
    dimmnet2_vt_shm_grant(s);
    if (v->cut && !v->cut_done && now >= v->cut) {
        dimmnet2_vt_cut(s, now);
        return;
    }
    if (!dimmnet2_vt_may_run(s, &now)) {
        dimmnet2_vt_report(s, now, dimmnet2_vt_earliest(s, now));
        dimmnet2_vt_block(s, dimmnet2_vt_may_run, &now, 0);
        trace_dimmnet2_vt_grant(s->index, now, v->horizon);
    }
    if (!v->started && v->shm && dn2f_ep_lid(s->port.fab->ep) != s->params.lid_wanted) {
        /* The domain knows the board by the LID it asked for (the tie
         * rule, where the others' packets for it go). */
        g_autofree char *why = g_strdup_printf("the switch gave the board LID "
            "0x%x, not its lid=0x%x (its member of the domain)",
            dn2f_ep_lid(s->port.fab->ep), s->params.lid_wanted);
        dimmnet2_vt_shm_fail_msg(s, why);
    }
    if (!v->started) {
        /* vt-start-ns: the lock-step begins, and with it the link. */
        v->started = true;
        dimmnet2_port_refresh(s);
        s->port.ops->news(s);   /* requests that waited for the link */
    }
    dimmnet2_vt_deliver_due(s, now);
    dn2f_ep_flush(s->port.fab->ep);
    dimmnet2_transport_rearm(s);
    dimmnet2_vt_arm(s);
    s->entry_done(s);
}

/*
 * The virtual-time timer's work now, if it is due now: the board's other
 * virtual-clock timers (the Window Controller's steps under the timing
 * model, the Receive Controller's retry) call it first, through
 * dimmnet2_port_due_first().  QEMU runs the timers of one expiry time in
 * the order they were armed, and this timer is armed when a packet
 * arrives, at a moment the host decides: a delivery and a step of the
 * board's own at the same virtual nanosecond ran in either order (an
 * arriving packet's SO-DIMM write waited for the read of the board's own
 * send, or the send's read for the write; 11 ns apart).  Deliveries (and
 * the cut) now always come first.
 */
void dimmnet2_vt_run_due(DN2State *s)
{
    DN2Vt *v = &s->vt;

    if (!v->timer || !timer_pending(v->timer) ||
        timer_expire_time_ns(v->timer) > qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL)) {
        return;
    }
    timer_del(v->timer);
    dimmnet2_vt_cb(s);
}

/* A packet with its virtual time into the queue, in delivery order. */
static void dimmnet2_vt_enqueue(DN2State *s, uint16_t slid, const uint8_t *pkt,
                                size_t len, uint64_t vtime, uint32_t vseq)
{
    DN2Vt *v = &s->vt;
    uint64_t now = qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL);
    DN2VtPkt *p;

    if (vtime < now) {
        DIMMNET2_GUEST_ERROR(s, DN2_STAT_VT_LATE, vt_late,
                             "vtime: packet from LID 0x%x due at %" PRIu64
                             " ns arrived at %" PRIu64 " ns; delivered now",
                             slid, vtime, now);
        vtime = now;
    }
    p = g_malloc(sizeof(*p) + len);
    p->vtime = vtime;
    p->vseq = vseq;
    p->slid = slid;
    p->lane = dn2f_pkt_lane(pkt);
    p->len = len;
    memcpy(p->data, pkt, len);
    g_sequence_insert_sorted(v->q, p, dimmnet2_vt_cmp, NULL);
    v->q_bytes += len;
}

/* The transport's record that carries a virtual time: into the queue. */
static int dimmnet2_vt_deliver(DN2State *s, uint16_t slid, const uint8_t *pkt,
                               size_t len, uint64_t vtime, uint32_t vseq)
{
    DN2Vt *v = &s->vt;

    if (dimmnet2_port_held(s) || runstate_check(RUN_STATE_INMIGRATE)) {
        return -EBUSY;
    }
    if (v->q_bytes + len > DIMMNET2_VTQ_MAX) {
        if (!v->q_full) {
            warn_report("dimmnet2: board %d: vtime: %u MiB of packets wait for "
                        "their time (a process stopped reading?); the fabric "
                        "holds the rest back, and the run now depends on the "
                        "host", s->index, DIMMNET2_VTQ_MAX >> 20);
        }
        v->q_full = true;
        return -EBUSY;
    }
    dimmnet2_vt_enqueue(s, slid, pkt, len, vtime, vseq);
    if (v->reported && vtime < v->rep_earliest) {
        /* This packet wakes the board before the time it promised (it was
         * idle, waiting for a far timer): lower the promise.  The endpoint
         * sends that at once and acknowledges nothing until the switch has
         * it, so the board that sent the packet cannot report past it. */
        dimmnet2_vt_report(s, v->rep_now, MAX(vtime, v->rep_now));
    }
    if (!v->in_wait) {
        dimmnet2_vt_arm(s);
    }
    return 0;
}

/* The switch moved this board's horizon. */
static void dimmnet2_vt_grant(DN2State *s, uint64_t horizon, uint32_t lookahead_ns,
                              uint32_t quantum_ns, uint64_t slowest)
{
    DN2Vt *v = &s->vt;

    if (v->shm || horizon <= v->horizon) {
        return;                 /* vt-sync=shm: the domain grants */
    }
    if (lookahead_ns != v->lookahead) {
        uint64_t least = s->timing.timing_on ? dimmnet2_timing_min_ns(s) : s->vt.latency_ns;

        if (lookahead_ns > least) {
            warn_report("dimmnet2: board %d: vtime: the switch's lookahead %u ns "
                        "is above the least latency of this board's packets "
                        "(%" PRIu64 " ns); no packet takes less than the "
                        "lookahead", s->index, lookahead_ns, least);
        }
    }
    v->horizon = horizon;
    v->lookahead = lookahead_ns;
    v->quantum = quantum_ns;
    v->slowest = slowest;
    if (!v->in_wait) {
        dimmnet2_vt_arm(s);
    }
}

/* The virtual time a packet sent now is delivered at: the timing model's
 * (timing=thesis), or vt-latency-ns later; never sooner than the switch's
 * lookahead allows. */
uint64_t dimmnet2_vt_due(DN2State *s, const uint8_t *pkt, size_t len)
{
    DN2Vt *v = &s->vt;
    uint64_t now = qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL);
    uint64_t t = s->timing.timing_on ? dimmnet2_timing_due(s, now, ldq_le_p(pkt), len)
                              : now + s->vt.latency_ns;

    t = MAX(t, now + v->lookahead);

    if (v->quantum > 1) {
        t = QEMU_ALIGN_UP(t, (uint64_t)v->quantum);   /* any Q, not only 2^n */
    }
    return t;
}

typedef struct DN2VtSendWait {
    uint16_t dlid;
    unsigned lane;
    size_t len;
} DN2VtSendWait;

static bool dimmnet2_vt_can_send(DN2State *s, void *arg)
{
    DN2VtSendWait *w = arg;

    return dn2f_ep_link(s->port.fab->ep) != DN2F_LINK_UP ||
           dn2f_ep_can_send_lane(s->port.fab->ep, w->dlid, w->lane, w->len);
}

/*
 * No credits toward a peer: under virtual time that is the host being
 * slow (the receiver takes every packet into its queue and acknowledges
 * it), so wait for them on the host's clock with the virtual clock
 * stopped, reporting this board's clock so that the others go on.  If
 * they do not come (a receiver whose queue is full), give up after a while
 * and let the Window Controller wait as without virtual time.
 */
bool dimmnet2_vt_wait_credits(DN2State *s, uint16_t dlid, unsigned lane, size_t len)
{
    DN2Vt *v = &s->vt;
    DN2VtSendWait w = { .dlid = dlid, .lane = lane, .len = len };
    uint64_t now = qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL);

    if (v->in_wait || dn2f_ep_link(s->port.fab->ep) != DN2F_LINK_UP) {
        return false;
    }
    dimmnet2_vt_report(s, now, now);
    dimmnet2_vt_block(s, dimmnet2_vt_can_send, &w, DIMMNET2_VT_CREDIT_NS);
    if (dimmnet2_vt_can_send(s, &w)) {
        return dn2f_ep_link(s->port.fab->ep) == DN2F_LINK_UP;
    }
    if (!v->nondet) {
        warn_report("dimmnet2: board %d: vtime: no credits toward LID 0x%x for "
                    "%d s; the Window Controller waits for them as without "
                    "virtual time, and the run now depends on the host",
                    s->index, dlid, (int)(DIMMNET2_VT_CREDIT_NS / NANOSECONDS_PER_SECOND));
    }
    v->nondet = true;
    return false;
}

/*
 * vt-sync=shm: post a packet into member idx's ring.  A full ring stops
 * the board's clock until the receiver takes an entry, as a sender without
 * credits waits on the UDP path: the board publishes its clock (so the
 * others go on) and empties its own ring while it waits (so two boards
 * that fill each other's rings do not wait for each other).
 */
static int dimmnet2_vt_shm_post(DN2State *s, unsigned idx, const uint8_t *pkt,
                                size_t len, uint64_t vtime, uint32_t vseq)
{
    DN2Vt *v = &s->vt;
    bool outer = v->in_wait;
    int64_t start = 0, note = 0;
    int r;

    while ((r = dn2f_shm_post(v->shm, idx, pkt, len, vtime, vseq)) == -EAGAIN) {
        uint64_t now = qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL);

        if (!start) {
            start = qemu_clock_get_ns(QEMU_CLOCK_REALTIME);
            note = start + DIMMNET2_VT_NOTE_NS;
            s->stat[DN2_STAT_VT_WAITS]++;
            v->in_wait = true;
            dimmnet2_vt_report(s, now, now);
        }
        do {
            int64_t rt;

            r = dn2f_shm_wait_space(v->shm, idx, dimmnet2_vt_shm_slice(s));
            if (r == 1) {
                dimmnet2_vt_shm_take(s);
            }
            dimmnet2_vt_shm_service(s);
            rt = qemu_clock_get_ns(QEMU_CLOCK_REALTIME);
            if (r == -ETIMEDOUT && rt >= note) {
                note = rt + DIMMNET2_VT_NOTE_NS;
                dimmnet2_vt_shm_note(s, (rt - start) / 1e9, "room in a ring");
            }
        } while ((r == 1 || r == -ETIMEDOUT) && !v->error);
        if (r < 0 || v->error) {
            break;
        }
    }
    if (start) {
        v->in_wait = outer;
        s->stat[DN2_STAT_VT_WAIT_MS] +=
            (qemu_clock_get_ns(QEMU_CLOCK_REALTIME) - start) / SCALE_MS;
        dimmnet2_vt_shm_grant(s);
        if (!v->in_wait) {
            dimmnet2_vt_arm(s);     /* what it took meanwhile */
        }
    }
    if (r == -EPIPE || r == -EPROTO) {
        dimmnet2_vt_shm_fail(s, r);
    }
    return v->error ? -EPIPE : r;
}

/* vt-sync=shm: does this board keep the lock-step in a sync domain? */
bool dimmnet2_vt_shm_on(DN2State *s)
{
    return s->vt.shm != NULL;
}

/*
 * vt-sync=shm: send a packet to LID dlid through the members' rings, with
 * the virtual time and the counter the UDP path would give it; a multicast
 * packet goes to every member of the group in the switch's routes (this
 * board too when it is one, as over UDP), one entry each with the same
 * vtime and vseq.  0, or -errno when it went nowhere (no such member, or the
 * lock-step has stopped): the port counts a drop.
 */
int dimmnet2_vt_send(DN2State *s, uint16_t dlid, const uint8_t *pkt, size_t len)
{
    DN2Vt *v = &s->vt;
    uint16_t lids[DN2F_MCAST_MAX_MEMBERS];
    uint64_t vtime;
    uint32_t vseq;
    unsigned i, n;
    int r = 0, sent = 0;

    if (v->error) {
        return -EPIPE;
    }
    vtime = dimmnet2_vt_due(s, pkt, len);
    vseq = v->vseq++;
    if (dn2f_lid_is_mcast(dlid)) {
        n = dn2f_ep_group_lids(s->port.fab->ep, dlid, lids, G_N_ELEMENTS(lids));
    } else {
        lids[0] = dlid;
        n = 1;
    }
    for (i = 0; i < n && !v->error; i++) {
        int idx = dn2f_shm_find_lid(v->shm, lids[i]);

        r = idx < 0 ? idx : dimmnet2_vt_shm_post(s, idx, pkt, len, vtime, vseq);
        sent += r == 0;
    }
    return sent ? 0 : n ? r : -EHOSTUNREACH;
}

/*
 * vt-sync=shm: join the domain at vt-shm as member CLID - 1 (the LID the
 * board asks the switch for), at realize, so that a missing or foreign
 * file is an error here.  Its lookahead and quantum replace the switch's.
 */
bool dimmnet2_vt_open(DN2State *s, Error **errp)
{
    DN2Vt *v = &s->vt;
    uint16_t lid = s->params.lid_wanted;
    unsigned idx;
    uint64_t least;
    int err = 0;

    if (!v->shm_on) {
        return true;
    }
    idx = dn2_lid_to_clid(lid) - 1;
    v->shm = dn2f_shm_attach(v->shm_path, idx, lid, &err);
    if (!v->shm) {
        const char *why;

        switch (err) {
        case -ENOENT:
            why = "no such file: dn2-switch --vt-sync shm --vt-shm PATH creates "
                  "it, and must be up before the boards start";
            break;
        case -EPROTO:
            why = "not a sync domain this build can use (its magic " DN2F_SHM_MAGIC
                  ", layout version or sizes differ): give the file this "
                  "build's dn2-switch --vt-sync shm created";
            break;
        case -ERANGE:
            why = "the domain has fewer members than this board's index "
                  "(dn2-switch --vt-boards: one member per board, the board "
                  "of CLID c is member c - 1)";
            break;
        case -EBUSY:
            why = "the member is held by a live process (another board with "
                  "this lid=?)";
            break;
        case -EPIPE:
            why = "the domain is broken (a member died): start a new switch, "
                  "which creates a new one";
            break;
        default:
            why = strerror(-err);
            break;
        }
        error_setg(errp, "dimmnet2: board %d: vt-shm=%s (member %u, lid=0x%x): %s",
                   s->index, v->shm_path, idx, lid, why);
        return false;
    }
    v->shm_pkt = g_malloc(sizeof(*v->shm_pkt));
    v->lookahead = dn2f_shm_lookahead(v->shm);
    v->quantum = MIN(dn2f_shm_quantum(v->shm), (uint64_t)UINT32_MAX);
    least = s->timing.timing_on ? dimmnet2_timing_min_ns(s) : v->latency_ns;
    if (v->lookahead > least) {
        warn_report("dimmnet2: board %d: vtime: the sync domain's lookahead %u ns "
                    "is above the least latency of this board's packets "
                    "(%" PRIu64 " ns); no packet takes less than the lookahead",
                    s->index, v->lookahead, least);
    }
    return true;
}

/* ------------------------------------------------------------------ */
/* Virtual time and snapshots: the cut at one virtual time             */
/* ------------------------------------------------------------------ */

/*
 * A board in virtual time is saved only at a cut (vt-cut-ns): its VM
 * stopped by the board itself at that virtual time.  What it then holds
 * beyond the device's own state is the lock-step's: the packets that wait
 * in its queue for their virtual times (sent before the cut, due after
 * it), the lanes it refused (a full ring), its packet counter (vseq, the
 * last tie rule at the receivers) and the switch's lookahead and quantum
 * (the delivery times of what it sends).  The horizon is not kept: a
 * restored board waits at its clock for the new switch's first grant.
 */
#define DIMMNET2_VT_BLOB_PKT_HDR (8 + 4 + 2 + 1 + 4)
#define DIMMNET2_VT_PKT_MAX      (64 * 1024)

static void dimmnet2_vt_get_cut(Object *obj, Visitor *v, const char *name,
                                void *opaque, Error **errp)
{
    DN2State *s = opaque;
    uint64_t val = s->vt.cut;

    visit_type_uint64(v, name, &val, errp);
}

static void dimmnet2_vt_set_cut(Object *obj, Visitor *v, const char *name,
                                void *opaque, Error **errp)
{
    DN2State *s = opaque;
    uint64_t val, now = qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL);

    if (!visit_type_uint64(v, name, &val, errp)) {
        return;
    }
    if (val && val <= now) {
        error_setg(errp, "dimmnet2: board %d: vt-cut-ns %" PRIu64 " is not "
                   "after its virtual clock (%" PRIu64 " ns)", s->index, val, now);
        return;
    }
    s->vt.cut = val;
    s->vt.cut_done = false;
    if (!s->vt.in_wait) {
        dimmnet2_vt_arm(s);
    }
}

static bool dimmnet2_vt_get_at_cut(Object *obj, Error **errp)
{
    DN2State *s = DIMMNET2(obj);

    return s->vt.cut_done && !runstate_is_running() &&
           qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL) == (int64_t)s->vt.cut;
}

static void dimmnet2_vt_get_queued(Object *obj, Visitor *v, const char *name,
                                   void *opaque, Error **errp)
{
    DN2State *s = opaque;
    uint64_t val = s->vt.q ? g_sequence_get_length(s->vt.q) : 0;

    visit_type_uint64(v, name, &val, errp);
}

static void dimmnet2_blob_put(GByteArray *b, uint64_t v, unsigned n)
{
    uint8_t x[8];
    unsigned i;

    for (i = 0; i < n; i++) {
        x[i] = v >> (8 * i);
    }
    g_byte_array_append(b, x, n);
}

static bool dimmnet2_blob_get(const uint8_t **p, const uint8_t *end, unsigned n,
                              uint64_t *v)
{
    unsigned i;

    if ((size_t)(end - *p) < n) {
        return false;
    }
    *v = 0;
    for (i = 0; i < n; i++) {
        *v |= (uint64_t)(*p)[i] << (8 * i);
    }
    *p += n;
    return true;
}

static int dimmnet2_vt_pre_save(void *opaque)
{
    DN2Vt *v = opaque;
    GByteArray *b;
    const unsigned nbits = DN2F_NUM_CLID * DN2F_NUM_LANES;
    GSequenceIter *it;
    unsigned long i;

    /* vt-sync=shm: what is in the ring is the board's, in the queue */
    dimmnet2_vt_shm_take(container_of(v, DN2State, vt));
    b = g_byte_array_new();
    /* the refused lanes: a count, then each (source CLID, lane) key */
    dimmnet2_blob_put(b, bitmap_count_one(v->blocked, nbits), 4);
    for (i = find_first_bit(v->blocked, nbits); i < nbits;
         i = find_next_bit(v->blocked, nbits, i + 1)) {
        dimmnet2_blob_put(b, i, 4);
    }
    dimmnet2_blob_put(b, g_sequence_get_length(v->q), 4);
    for (it = g_sequence_get_begin_iter(v->q); !g_sequence_iter_is_end(it);
         it = g_sequence_iter_next(it)) {
        const DN2VtPkt *p = g_sequence_get(it);

        dimmnet2_blob_put(b, p->vtime, 8);
        dimmnet2_blob_put(b, p->vseq, 4);
        dimmnet2_blob_put(b, p->slid, 2);
        dimmnet2_blob_put(b, p->lane, 1);
        dimmnet2_blob_put(b, p->len, 4);
        g_byte_array_append(b, p->data, p->len);
    }
    g_free(v->blob);
    v->blob_len = b->len;
    v->blob = g_byte_array_free(b, false);
    return 0;
}

static int dimmnet2_vt_post_save(void *opaque)
{
    DN2Vt *v = opaque;

    g_free(v->blob);
    v->blob = NULL;
    v->blob_len = 0;
    return 0;
}

/* The stream is checked as a guest's input would be: a bad one is refused
 * whole, naming what is wrong. */
static int dimmnet2_vt_post_load(void *opaque, int version_id)
{
    DN2Vt *v = opaque;
    const unsigned nbits = DN2F_NUM_CLID * DN2F_NUM_LANES;
    const uint8_t *p = v->blob, *end = v->blob + v->blob_len;
    uint64_t n, i, k, bytes = 0;
    int r = -EINVAL;

    bitmap_zero(v->blocked, nbits);
    g_sequence_remove_range(g_sequence_get_begin_iter(v->q),
                            g_sequence_get_end_iter(v->q));
    v->q_bytes = 0;
    if (!v->blob || !dimmnet2_blob_get(&p, end, 4, &n)) {
        error_report("dimmnet2: vtime stream: no queue");
        goto out;
    }
    for (i = 0; i < n; i++) {
        if (!dimmnet2_blob_get(&p, end, 4, &k) || k >= nbits) {
            error_report("dimmnet2: vtime stream: refused lane %" PRIu64 " of %u",
                         i, nbits);
            goto out;
        }
        set_bit(k, v->blocked);
    }
    if (!dimmnet2_blob_get(&p, end, 4, &n)) {
        error_report("dimmnet2: vtime stream: no packet count");
        goto out;
    }
    for (i = 0; i < n; i++) {
        uint64_t vtime, vseq, slid, lane, len;
        DN2VtPkt *q;

        if (!dimmnet2_blob_get(&p, end, 8, &vtime) || !dimmnet2_blob_get(&p, end, 4, &vseq) ||
            !dimmnet2_blob_get(&p, end, 2, &slid) || !dimmnet2_blob_get(&p, end, 1, &lane) ||
            !dimmnet2_blob_get(&p, end, 4, &len) || lane >= DN2F_NUM_LANES ||
            !len || len > DIMMNET2_VT_PKT_MAX || (uint64_t)(end - p) < len ||
            vtime > INT64_MAX || (bytes += len) > DIMMNET2_VTQ_MAX) {
            error_report("dimmnet2: vtime stream: queued packet %" PRIu64 " of %"
                         PRIu64 " is malformed", i, n);
            goto out;
        }
        q = g_malloc(sizeof(*q) + len);
        q->vtime = vtime;
        q->vseq = vseq;
        q->slid = slid;
        q->lane = lane;
        q->len = len;
        memcpy(q->data, p, len);
        p += len;
        g_sequence_insert_sorted(v->q, q, dimmnet2_vt_cmp, NULL);
        v->q_bytes += len;
    }
    if (p != end) {
        error_report("dimmnet2: vtime stream: %zu bytes after the queue",
                     (size_t)(end - p));
        goto out;
    }
    r = 0;
out:
    g_free(v->blob);
    v->blob = NULL;
    v->blob_len = 0;
    /* the new switch grants afresh: wait at the restored clock for it */
    v->horizon = 0;
    v->reported = false;
    v->rep_now = v->rep_earliest = 0;
    v->q_full = false;
    dimmnet2_port_refresh(container_of(v, DN2State, vt)); /* the link as of started */
    return r;
}

static const VMStateDescription vmstate_dimmnet2_vt = {
    .name = "dimmnet2-vt",
    .version_id = 1,
    .minimum_version_id = 1,
    .pre_save = dimmnet2_vt_pre_save,
    .post_save = dimmnet2_vt_post_save,
    .post_load = dimmnet2_vt_post_load,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT32(vseq, DN2Vt),
        VMSTATE_BOOL(started, DN2Vt),
        VMSTATE_BOOL(nondet, DN2Vt),
        VMSTATE_UINT32(lookahead, DN2Vt),
        VMSTATE_UINT32(quantum, DN2Vt),
        VMSTATE_UINT64(cut, DN2Vt),
        VMSTATE_BOOL(cut_done, DN2Vt),
        VMSTATE_UINT32(blob_len, DN2Vt),
        VMSTATE_VBUFFER_ALLOC_UINT32(blob, DN2Vt, 0, NULL, blob_len),
        VMSTATE_END_OF_LIST()
    },
};

static char *dimmnet2_vt_get_error(Object *obj, Error **errp)
{
    DN2State *s = DIMMNET2(obj);

    return g_strdup(s->vt.error ? s->vt.error : "");
}

static void dimmnet2_vt_snapshot_init(DN2State *s)
{
    object_property_add(OBJECT(s), "vt-cut-ns", "uint64", dimmnet2_vt_get_cut,
                        dimmnet2_vt_set_cut, NULL, s);
    object_property_set_description(OBJECT(s), "vt-cut-ns", "vtime=on: the board "
        "stops its VM at this virtual time (ns), a cut for a snapshot of the "
        "whole cluster at one virtual time; 0 = none");
    object_property_add_bool(OBJECT(s), "vt-at-cut", dimmnet2_vt_get_at_cut, NULL);
    object_property_set_description(OBJECT(s), "vt-at-cut", "vtime=on: the VM "
        "is stopped at its vt-cut-ns");
    object_property_add(OBJECT(s), "vt-queued", "uint64", dimmnet2_vt_get_queued,
                        NULL, NULL, s);
    object_property_set_description(OBJECT(s), "vt-queued", "vtime=on: packets "
        "that wait in the board for their virtual time");
    object_property_add_str(OBJECT(s), "vt-error", dimmnet2_vt_get_error, NULL);
    object_property_set_description(OBJECT(s), "vt-error", "vt-sync=shm: why the "
        "lock-step stopped (a member of the sync domain died), or empty");
    vmstate_register(VMSTATE_IF(s), s->index, &vmstate_dimmnet2_vt, &s->vt);
}

static void dimmnet2_vt_park_cb(void *opaque)
{
    /* (its list is never run) */
}

/*
 * A qtest moved the virtual clock (clock_step, clock_set) and stopped it:
 * report where it stands.  A vCPU runs on to the horizon and reports
 * there; a test is the board's only "vCPU", and a board it stopped below
 * its horizon would otherwise keep its last report, made at its previous
 * horizon up to one lookahead before.  A board that the test steps to a
 * target past its own horizon then waits for a report that never comes:
 * with boards A and C both at h, C's report lets the switch grant A
 * h + 2L while A is still at h; the test stops A at h + 1.5L without a
 * report, and C waits at h + L for ever.  Reported here, every board
 * stopped by the test has its clock at the switch, and the board with the
 * lowest report always gets a grant past it.
 */
static void dimmnet2_vt_qtest_stopped(DN2State *s)
{
    DN2Vt *v = &s->vt;
    uint64_t now = qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL);

    if (!v->started || v->in_wait || (v->cut && v->cut_done) ||
        (v->reported && now <= v->rep_now)) {
        return;
    }
    dimmnet2_vt_report(s, now, dimmnet2_vt_earliest(s, now));
    dn2f_ep_flush(s->port.fab->ep);
    dimmnet2_transport_rearm(s);
}

/* The virtual clock's timer lists are notified (this list, never run, is
 * one of them): at the end of a qtest's clock move, and when the park
 * timer is set.  (Nobody to wake: the vCPU's budget and the warp read the
 * deadline afresh; the default, qemu_notify_event(), would recurse through
 * icount_notify_exit().) */
static void dimmnet2_vt_park_notify(void *opaque, QEMUClockType type)
{
    if (qtest_enabled() && opaque) {
        dimmnet2_vt_qtest_stopped(opaque);
    }
}

void dimmnet2_vt_init(DN2State *s)
{
    DN2Vt *v = &s->vt;

    v->q = g_sequence_new(g_free);
    v->blocked = bitmap_new(DN2F_NUM_CLID * DN2F_NUM_LANES);
    v->timer = timer_new_ns(QEMU_CLOCK_VIRTUAL, dimmnet2_vt_cb, s);
    timerlistgroup_init(&v->park_tlg, dimmnet2_vt_park_notify, s);
    v->park = timer_new_full(&v->park_tlg, QEMU_CLOCK_VIRTUAL, SCALE_NS, 0,
                             dimmnet2_vt_park_cb, s);
    /* Until vt-start-ns the board runs on its own, its link down for the
     * guest (a guest that boots alone, with no input from the host, boots
     * the same way every time, at the speed of -icount alone).  There it
     * waits until the switch has every board of the cluster and grants the
     * first horizon, and the link comes up. */
    v->horizon = v->start_ns;
    timer_mod(v->timer, MIN(v->start_ns, (uint64_t)INT64_MAX));
    dimmnet2_vt_snapshot_init(s);
}

void dimmnet2_vt_fini(DN2State *s)
{
    DN2Vt *v = &s->vt;

    if (v->q) {
        vmstate_unregister(VMSTATE_IF(s), &vmstate_dimmnet2_vt, v);
    }
    g_clear_pointer(&v->timer, timer_free);
    g_clear_pointer(&v->q, g_sequence_free);
    g_clear_pointer(&v->blocked, g_free);
    g_clear_pointer(&v->blob, g_free);
    g_clear_pointer(&v->shm, dn2f_shm_detach);
    g_clear_pointer(&v->shm_pkt, g_free);
    g_clear_pointer(&v->error, g_free);
    if (v->park) {
        g_clear_pointer(&v->park, timer_free);
        timerlistgroup_deinit(&v->park_tlg);
    }
}

/* QEMU ends: the board's place in the sync domain is given up (the other
 * members' grants no longer wait for it), as dn2f_shm_detach does. */
void dimmnet2_vt_leave(DN2State *s)
{
    g_clear_pointer(&s->vt.shm, dn2f_shm_detach);
}

/* What the transport reports up (dimmnet2-fab.h). */
const DN2TransportUp dimmnet2_vt_up = {
    .deliver_vt = dimmnet2_vt_deliver,
    .vt_grant = dimmnet2_vt_grant,
};
