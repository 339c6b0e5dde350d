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

/*
 * Receive buffers for one recvmmsg(): up to DN2_RX_BATCH datagrams per
 * system call.  A burst comes in with one call instead of one per
 * datagram, and the call that finds the socket empty (EAGAIN) is not needed
 * when fewer than DN2_RX_BATCH came: the latency path of a single packet is
 * one receive call.
 */
#define DN2_RX_BATCH 8
typedef struct DN2RxBatch {
    struct mmsghdr msg[DN2_RX_BATCH];
    struct iovec iov[DN2_RX_BATCH];
    struct sockaddr_storage ss[DN2_RX_BATCH];
    uint8_t *buf;               /* DN2_RX_BATCH x DN2F_DGRAM_MAX */
} DN2RxBatch;

struct DN2Fab {
    struct dn2f_ep *ep;
    int fd;
    struct dn2f_addr local;     /* the address the socket is bound to */
    QEMUTimer *timer;
    Error *blocker;
    DN2RxBatch rxb;             /* the main loop's (and drain's) */
    bool thread_on;             /* rx-thread=on: the thread owns receive */
    QemuThread thread;
    bool quit;                  /* atomic: the thread must leave */
    uint8_t *secret;            /* the cluster secret (secret=), or NULL */
    size_t secret_len;
    bool flush_now;             /* this run sent to a peer with nothing in flight */
    bool in_input;              /* after a burst of input: flush (ACKs are owed) */

    /* vtime=on (docs/virtual-time.md) */
    GSequence *vtq;             /* DN2VtPkt waiting for their virtual time */
    size_t vtq_bytes;
    bool vtq_full;              /* deliver_vt said -EBUSY: resume the endpoint */
    QEMUTimer *vt_timer;        /* QEMU_CLOCK_VIRTUAL: deliveries, the horizon */
    uint64_t vt_horizon;        /* the board may run while its clock is below */
    uint32_t vt_lookahead;      /* the switch's L and Q, from its grants */
    uint32_t vt_quantum;
    uint64_t vt_slowest;        /* the cluster's slowest clock, from the grants */
    uint32_t vt_vseq;           /* the next packet's vseq */
    bool vt_in_wait;            /* inside dimmnet2_vt_block() */
    bool vt_started;            /* the clock has reached vt-start-ns */
    bool vt_reported;           /* vt_rep_now / vt_rep_earliest hold a report */
    uint64_t vt_rep_now;        /* the last report: the clock ... */
    uint64_t vt_rep_earliest;   /* ... and the promise */
    bool vt_nondet;             /* gave up waiting for credits: wall-clock news */
    unsigned long *vt_blocked;  /* (source CLID, lane) refused by the board */
    uint64_t vt_cut;            /* vt-cut-ns: stop the VM at this virtual time */
    bool vt_cut_done;           /* the board stopped there (in the stream too) */
    uint32_t vt_blob_len;       /* the queue and the refusals, for the stream */
    uint8_t *vt_blob;
    DN2State *owner;            /* (for the stream's post_load) */
    QEMUTimerListGroup vt_park_tlg; /* a timer list nobody runs ... */
    QEMUTimer *vt_park;         /* ... whose timer at the cut holds the clock */

    VMChangeStateEntry *vmse;   /* resume deliveries when the VM runs */
};

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
/* pcap=: the packets delivered, with their time                       */
/* ------------------------------------------------------------------ */

#define DIMMNET2_PCAP_EVENT_DELIVERED 7     /* docs/fabric.md, pcap records */
#define DIMMNET2_PCAP_CAPHDR    16
#define DIMMNET2_PCAP_LINKTYPE  147         /* LINKTYPE_USER0 */

static bool dimmnet2_pcap_open(DN2State *s, Error **errp)
{
    uint8_t h[24];

    if (!s->pcap_path) {
        return true;
    }
    s->pcap = fopen(s->pcap_path, "wb");
    if (!s->pcap) {
        error_setg_errno(errp, errno, "dimmnet2: pcap=%s: cannot create the "
                         "trace file", s->pcap_path);
        return false;
    }
    /* Nanosecond pcap (magic 0xa1b23c4d), written little-endian. */
    stl_le_p(h, 0xa1b23c4d);
    stw_le_p(h + 4, 2);
    stw_le_p(h + 6, 4);
    stl_le_p(h + 8, 0);
    stl_le_p(h + 12, 0);
    stl_le_p(h + 16, 262144);
    stl_le_p(h + 20, DIMMNET2_PCAP_LINKTYPE);
    if (fwrite(h, sizeof(h), 1, s->pcap) != 1 || fflush(s->pcap)) {
        error_setg_errno(errp, errno, "dimmnet2: pcap=%s: cannot write",
                         s->pcap_path);
        fclose(s->pcap);
        s->pcap = NULL;
        return false;
    }
    return true;
}

/* One delivered packet: a capture header (event 7, in LID = the source,
 * out LID = this board) and the bare DIMMnet-2 packet, at t_ns. */
static void dimmnet2_pcap_write(DN2State *s, uint16_t slid, const uint8_t *pkt,
                                size_t len, uint64_t t_ns)
{
    uint8_t h[16 + DIMMNET2_PCAP_CAPHDR];
    uint32_t caplen = DIMMNET2_PCAP_CAPHDR + len;

    if (!s->pcap) {
        return;
    }
    stl_le_p(h, t_ns / NANOSECONDS_PER_SECOND);
    stl_le_p(h + 4, t_ns % NANOSECONDS_PER_SECOND);
    stl_le_p(h + 8, caplen);
    stl_le_p(h + 12, caplen);
    memset(h + 16, 0, DIMMNET2_PCAP_CAPHDR);
    h[16] = 1;                                  /* capture version */
    h[17] = DIMMNET2_PCAP_EVENT_DELIVERED;
    stw_le_p(h + 20, slid);
    stw_le_p(h + 22, s->sma_lid);
    stl_le_p(h + 28, len);
    if (fwrite(h, sizeof(h), 1, s->pcap) != 1 ||
        fwrite(pkt, len, 1, s->pcap) != 1 || fflush(s->pcap)) {
        warn_report("dimmnet2: board %d: pcap=%s: write failed (%s); the "
                    "trace stops here", s->index, s->pcap_path, strerror(errno));
        fclose(s->pcap);
        s->pcap = NULL;
    }
}

/* Hand a packet to the Receive Controller, and trace what it took. */
static DN2RxResult dimmnet2_port_deliver_one(DN2State *s, uint16_t slid,
                                             const uint8_t *pkt, size_t len)
{
    DN2RxResult r = s->port_ops->deliver(s, slid, pkt, len);

    if (r != DIMMNET2_RX_BUSY && s->pcap) {
        dimmnet2_pcap_write(s, slid, pkt, len, dimmnet2_now(s));
    }
    return r;
}

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
    const DN2LoopPkt *d = g_queue_peek_head(&s->loop_q[q & ~1u]);

    return !d || d->seq > p->seq;
}

/* Run the loopback cable soon: its bottom half, or under vtime=on its
 * virtual-clock timer at the first time a packet is due (or now). */
static void dimmnet2_loop_kick(DN2State *s, uint64_t at)
{
    if (s->loop_timer) {
        timer_mod_anticipate_ns(s->loop_timer, MAX(at, (uint64_t)qemu_clock_get_ns(
                                    QEMU_CLOCK_VIRTUAL)));
    } else {
        qemu_bh_schedule(s->loop_bh);
    }
}

static void dimmnet2_loop_bh(void *opaque)
{
    DN2State *s = opaque;
    bool more = false;
    uint64_t now = s->loop_timer ? qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL) : 0;
    uint64_t next = UINT64_MAX;
    unsigned q;

    /* Data queues first (q even), then the RVL queue of the same WID. */
    for (q = 0; q < DIMMNET2_LOOP_QUEUES; q++) {
        DN2LoopPkt *p;
        int n = 0;

        while ((p = g_queue_peek_head(&s->loop_q[q])) && n++ < DIMMNET2_LOOP_MAX) {
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
            g_free(g_queue_pop_head(&s->loop_q[q]));
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
    s->port_ops->news(s);       /* the Window Controller may wait for room */
    s->entry_done(s);
}

static void dimmnet2_loop_flush_all(DN2State *s)
{
    DN2LoopPkt *p;
    unsigned q;

    for (q = 0; q < DIMMNET2_LOOP_QUEUES; q++) {
        while ((p = g_queue_pop_head(&s->loop_q[q]))) {
            g_free(p);
        }
    }
}

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
        r = sendto(s->fab->fd, buf, len, MSG_DONTWAIT, &to->u.sa, to->len);
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
     * packet stays with its sender (unacknowledged) until the VM runs. */
    if (dimmnet2_port_held(s) || runstate_check(RUN_STATE_INMIGRATE)) {
        return -EBUSY;
    }
    return dimmnet2_port_deliver_one(s, slid, pkt, len) == DIMMNET2_RX_BUSY ?
           -EBUSY : 0;
}

static void dimmnet2_fab_link_state(void *opaque, bool up, uint16_t lid)
{
    DN2State *s = opaque;

    if (s->vtime && (!s->fab || !s->fab->vt_started)) {
        /* Under virtual time the guest sees the link come up at
         * vt-start-ns, whatever the host's timing of the join. */
        trace_dimmnet2_link_state(s->index, up, lid);
        return;
    }
    s->sma_lid = up ? lid : 0;
    s->link_state = up ? DN2_SMA_LINK_READY : 0;
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
                s->switch_addr, dn2f_bye_name(reason), hint);
}


static void dimmnet2_fab_rearm(DN2State *s)
{
    DN2Fab *l = s->fab;
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
        dn2f_ep_input_noflush(s->fab->ep, &from, b->iov[i].iov_base, b->msg[i].msg_len);
    }
}

/* Feed datagrams to the endpoint until the socket is empty (at most about
 * budget per call, so that timers and the guest get their turn).  Under the
 * BQL. */
static void dimmnet2_fab_drain(DN2State *s, DN2RxBatch *b, int budget)
{
    while (budget > 0) {
        int n = dimmnet2_rxb_recv(b, s->fab->fd, MSG_DONTWAIT);

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
static void dimmnet2_fab_after_input(DN2State *s)
{
    if (s->vtime && !s->fab->vt_nondet) {
        /* Under virtual time the input only fed the endpoint (and the
         * queue of packets waiting for their time): the device moves on
         * its virtual-clock timers alone. */
        dn2f_ep_flush(s->fab->ep);
        dimmnet2_fab_rearm(s);
        return;
    }
    s->fab->in_input = true;
    if (!s->port_ops->news(s)) {
        dn2f_ep_flush(s->fab->ep);
        dimmnet2_fab_rearm(s);
    }
    s->fab->in_input = false;
    s->entry_done(s);
}

/* rx-thread=off: the main loop's fd handler. */
static void dimmnet2_fab_read(void *opaque)
{
    DN2State *s = opaque;

    dimmnet2_fab_drain(s, &s->fab->rxb, 256);
    dimmnet2_fab_after_input(s);
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
    DN2Fab *l = s->fab;
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
            dimmnet2_fab_drain(s, b, 256 - n);
        }
        dimmnet2_fab_after_input(s);
        bql_unlock();
    }
    g_free(b->buf);
    g_free(b);
    return NULL;
}

/* Stop the receive thread.  Under the BQL, which it may be waiting for. */
static void dimmnet2_fab_rx_thread_stop(DN2State *s)
{
    DN2Fab *l = s->fab;
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

    dn2f_ep_tick(s->fab->ep);
    dimmnet2_fab_after_input(s);
}

/* ------------------------------------------------------------------ */
/* Virtual time (vtime=on): docs/virtual-time.md                       */
/* ------------------------------------------------------------------ */

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
static bool dimmnet2_vt_blocked(DN2Fab *l, const DN2VtPkt *p)
{
    if (test_bit(dimmnet2_vt_key(p->slid, p->lane), l->vt_blocked)) {
        return true;
    }
    return p->lane >= DN2F_LANE_REQ &&
           test_bit(dimmnet2_vt_key(p->slid, p->lane - DN2F_LANE_REQ), l->vt_blocked);
}

/* The first packet that may be delivered (NULL: none). */
static DN2VtPkt *dimmnet2_vt_first(DN2Fab *l)
{
    GSequenceIter *it = g_sequence_get_begin_iter(l->vtq);

    for (; !g_sequence_iter_is_end(it); it = g_sequence_iter_next(it)) {
        DN2VtPkt *p = g_sequence_get(it);
        if (!dimmnet2_vt_blocked(l, p)) {
            return p;
        }
    }
    return NULL;
}

/* Arm the timer for the next delivery or the horizon, whichever is first. */
static void dimmnet2_vt_arm(DN2State *s)
{
    DN2Fab *l = s->fab;
    DN2VtPkt *p = dimmnet2_vt_first(l);
    int64_t now = qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL);
    uint64_t at = l->vt_horizon;

    if (p) {
        at = MIN(at, MAX(p->vtime, (uint64_t)now));
    }
    if (l->vt_cut && !l->vt_cut_done) {
        at = MIN(at, l->vt_cut);
    }
    timer_mod(l->vt_timer, MIN(at, (uint64_t)INT64_MAX));
}

/* Is the board doing nothing until its next timer or packet?  Only then
 * may it promise more than its clock: its vCPU halted with no work, and
 * (checked by the caller through the deadlines) no timer of its own due.
 * vt-idle=off: never. */
static bool dimmnet2_vt_idle(DN2State *s)
{
    CPUState *cpu;

    if (qtest_enabled() || !s->vt_idle) {
        return false;           /* the test drives the clock: promise nothing */
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
    DN2Fab *l = s->fab;
    DN2VtPkt *p;
    int64_t d;
    uint64_t e;

    if (!dimmnet2_vt_idle(s)) {
        return now;
    }
    timer_del(l->vt_timer);
    d = qemu_clock_deadline_ns_all(QEMU_CLOCK_VIRTUAL, QEMU_TIMER_ATTR_ALL);
    e = d < 0 ? (uint64_t)INT64_MAX : (uint64_t)now + d;
    p = dimmnet2_vt_first(l);
    if (p) {
        e = MIN(e, MAX(p->vtime, (uint64_t)now));
    }
    return e;
}

/* Report the board's clock and promise to the switch (through the
 * endpoint, which sends it once everything this board sent is
 * acknowledged). */
static void dimmnet2_vt_report(DN2State *s, uint64_t now, uint64_t earliest)
{
    DN2Fab *l = s->fab;

    l->vt_reported = true;
    l->vt_rep_now = now;
    l->vt_rep_earliest = earliest;
    dn2f_ep_vt_report(l->ep, now, earliest);
}

/* Wait, on the host's clock, until ok(s, arg): the socket's datagrams go to
 * the endpoint, its timers run, what it owes is sent.  Under the BQL, in
 * the vCPU thread or the main loop: neither may go on meanwhile. */
static void dimmnet2_vt_block(DN2State *s, bool (*ok)(DN2State *, void *), void *arg,
                              int64_t give_up_ns)
{
    DN2Fab *l = s->fab;
    int64_t start = qemu_clock_get_ns(QEMU_CLOCK_REALTIME);
    int64_t note = start + DIMMNET2_VT_NOTE_NS;

    s->stat[DN2_STAT_VT_WAITS]++;
    l->vt_in_wait = true;
    dn2f_ep_flush(l->ep);
    while (!ok(s, arg)) {
        int64_t rt = qemu_clock_get_ns(QEMU_CLOCK_REALTIME);
        uint64_t dl = dn2f_ep_next_deadline(l->ep);
        int64_t timeout = 100 * SCALE_MS;
        GPollFD pfd = { .fd = l->fd, .events = G_IO_IN };

        if (give_up_ns && rt - start >= give_up_ns) {
            break;
        }
        if (dl != UINT64_MAX) {
            timeout = dl <= (uint64_t)rt ? 0 : MIN(timeout, (int64_t)(dl - rt));
        }
        if (qemu_poll_ns(&pfd, 1, timeout) > 0) {
            dimmnet2_fab_drain(s, &l->rxb, 256);
        }
        rt = qemu_clock_get_ns(QEMU_CLOCK_REALTIME);
        if (dn2f_ep_next_deadline(l->ep) <= (uint64_t)rt) {
            dn2f_ep_tick(l->ep);
        }
        dn2f_ep_flush(l->ep);
        if (rt >= note) {
            note = rt + DIMMNET2_VT_NOTE_NS;
            warn_report("dimmnet2: board %d: vtime: waiting %.0f s at virtual "
                        "time %.9f s (horizon %.9f s, link %s); the switch's "
                        "log names the board it waits for", s->index,
                        (rt - start) / 1e9,
                        qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL) / 1e9,
                        l->vt_horizon / 1e9,
                        dn2f_ep_link(l->ep) == DN2F_LINK_UP ? "up" : "down");
        }
    }
    l->vt_in_wait = false;
    s->stat[DN2_STAT_VT_WAIT_MS] +=
        (qemu_clock_get_ns(QEMU_CLOCK_REALTIME) - start) / SCALE_MS;
    dimmnet2_fab_rearm(s);
}

static bool dimmnet2_vt_may_run(DN2State *s, void *arg)
{
    uint64_t now = *(uint64_t *)arg;

    return s->fab->vt_horizon > now && dn2f_ep_link(s->fab->ep) == DN2F_LINK_UP;
}

/* Deliver, in order, every packet whose time has come. */
static void dimmnet2_vt_deliver_due(DN2State *s, uint64_t now)
{
    DN2Fab *l = s->fab;
    GSequenceIter *it = g_sequence_get_begin_iter(l->vtq);
    bool any = false;

    while (!g_sequence_iter_is_end(it)) {
        DN2VtPkt *p = g_sequence_get(it);
        GSequenceIter *next = g_sequence_iter_next(it);

        if (p->vtime > now) {
            break;
        }
        if (!dimmnet2_vt_blocked(l, p)) {
            if (dimmnet2_port_deliver_one(s, p->slid, p->data, p->len) ==
                DIMMNET2_RX_BUSY) {
                set_bit(dimmnet2_vt_key(p->slid, p->lane), l->vt_blocked);
            } else {
                l->vtq_bytes -= p->len;
                g_sequence_remove(it);
                any = true;
            }
        }
        it = next;
    }
    if (l->vtq_full && l->vtq_bytes < DIMMNET2_VTQ_MAX / 2) {
        l->vtq_full = false;
        dn2f_ep_resume(l->ep);
    }
    if (any) {
        s->port_ops->news(s);   /* an RVL to answer, a request that waited */
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
    DN2Fab *l = s->fab;

    l->vt_cut_done = true;
    dimmnet2_vt_report(s, now, dimmnet2_vt_earliest(s, now));
    dn2f_ep_flush(l->ep);
    dimmnet2_fab_rearm(s);
    trace_dimmnet2_vt_cut(s->index, now);
    /* Until the stop: this timer, on a list that is never run, keeps the
     * virtual clock's deadline at the cut, so the vCPU gets no budget and
     * the main loop's idle warp does not move the clock (a timer of the
     * main loop's list at the cut would run again at once). */
    timer_mod(l->vt_park, now);
    if (runstate_is_running()) {
        qemu_system_vmstop_request_prepare();
        qemu_system_vmstop_request(RUN_STATE_PAUSED);
    }
}

static void dimmnet2_vt_cb(void *opaque)
{
    DN2State *s = opaque;
    DN2Fab *l = s->fab;
    uint64_t now = qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL);

    if (l->vt_cut && !l->vt_cut_done && now >= l->vt_cut) {
        dimmnet2_vt_cut(s, now);
        return;
    }
    if (!dimmnet2_vt_may_run(s, &now)) {
        dimmnet2_vt_report(s, now, dimmnet2_vt_earliest(s, now));
        dimmnet2_vt_block(s, dimmnet2_vt_may_run, &now, 0);
        trace_dimmnet2_vt_grant(s->index, now, l->vt_horizon);
    }
    if (!l->vt_started) {
        /* vt-start-ns: the lock-step begins, and with it the link. */
        l->vt_started = true;
        dimmnet2_port_refresh(s);
        s->port_ops->news(s);   /* requests that waited for the link */
    }
    dimmnet2_vt_deliver_due(s, now);
    dn2f_ep_flush(l->ep);
    dimmnet2_fab_rearm(s);
    dimmnet2_vt_arm(s);
    s->entry_done(s);
}

/* The endpoint's deliver for records that carry a virtual time. */
static int dimmnet2_fab_deliver_vt(void *opaque, uint16_t slid, const uint8_t *pkt,
                                   size_t len, uint64_t vtime, uint32_t vseq)
{
    DN2State *s = opaque;
    DN2Fab *l = s->fab;
    uint64_t now = qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL);
    DN2VtPkt *p;

    if (!s->vtime) {
        /* A board without virtual time takes the packet as it comes. */
        return dimmnet2_fab_deliver(opaque, slid, pkt, len);
    }
    if (dimmnet2_port_held(s) || runstate_check(RUN_STATE_INMIGRATE)) {
        return -EBUSY;
    }
    if (l->vtq_bytes + len > DIMMNET2_VTQ_MAX) {
        if (!l->vtq_full) {
            warn_report("dimmnet2: board %d: vtime: %u MiB of packets wait for "
                        "their time (a process stopped reading?); the fabric "
                        "holds the rest back, and the run now depends on the "
                        "host", s->index, DIMMNET2_VTQ_MAX >> 20);
        }
        l->vtq_full = true;
        return -EBUSY;
    }
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
    g_sequence_insert_sorted(l->vtq, p, dimmnet2_vt_cmp, NULL);
    l->vtq_bytes += len;
    if (l->vt_reported && vtime < l->vt_rep_earliest) {
        /* This packet wakes the board before the time it promised (it was
         * idle, waiting for a far timer): lower the promise.  The endpoint
         * sends that at once and acknowledges nothing until the switch has
         * it, so the board that sent the packet cannot report past it. */
        dimmnet2_vt_report(s, l->vt_rep_now, MAX(vtime, l->vt_rep_now));
    }
    if (!l->vt_in_wait) {
        dimmnet2_vt_arm(s);
    }
    return 0;
}

/* The switch moved this board's horizon. */
static void dimmnet2_fab_vt_grant(void *opaque, uint64_t horizon, uint32_t lookahead_ns,
                                  uint32_t quantum_ns, uint64_t slowest)
{
    DN2State *s = opaque;
    DN2Fab *l = s->fab;

    if (!s->vtime || horizon <= l->vt_horizon) {
        return;
    }
    if (lookahead_ns != l->vt_lookahead) {
        uint64_t least = s->timing_on ? dimmnet2_timing_min_ns(s) : s->vt_latency_ns;

        if (lookahead_ns > least) {
            warn_report("dimmnet2: board %d: vtime: the switch's lookahead %u ns "
                        "is above the least latency of this board's packets "
                        "(%" PRIu64 " ns); no packet takes less than the "
                        "lookahead", s->index, lookahead_ns, least);
        }
    }
    l->vt_horizon = horizon;
    l->vt_lookahead = lookahead_ns;
    l->vt_quantum = quantum_ns;
    l->vt_slowest = slowest;
    if (!l->vt_in_wait) {
        dimmnet2_vt_arm(s);
    }
}

/* The virtual time a packet sent now is delivered at: the timing model's
 * (timing=thesis), or vt-latency-ns later; never sooner than the switch's
 * lookahead allows. */
static uint64_t dimmnet2_vt_due(DN2State *s, const uint8_t *pkt, size_t len)
{
    DN2Fab *l = s->fab;
    uint64_t now = qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL);
    uint64_t t = s->timing_on ? dimmnet2_timing_due(s, now, ldq_le_p(pkt), len)
                              : now + s->vt_latency_ns;

    t = MAX(t, now + l->vt_lookahead);

    if (l->vt_quantum > 1) {
        t = QEMU_ALIGN_UP(t, (uint64_t)l->vt_quantum);   /* any Q, not only 2^n */
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

    return dn2f_ep_link(s->fab->ep) != DN2F_LINK_UP ||
           dn2f_ep_can_send_lane(s->fab->ep, w->dlid, w->lane, w->len);
}

/*
 * No credits toward a peer: under virtual time that is the host being
 * slow (the receiver takes every packet into its queue and acknowledges
 * it), so wait for them on the host's clock with the virtual clock
 * stopped, reporting this board's clock so that the others go on.  If
 * they do not come (a receiver whose queue is full), give up after a while
 * and let the Window Controller wait as without virtual time.
 */
static bool dimmnet2_vt_wait_credits(DN2State *s, uint16_t dlid, unsigned lane, size_t len)
{
    DN2Fab *l = s->fab;
    DN2VtSendWait w = { .dlid = dlid, .lane = lane, .len = len };
    uint64_t now = qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL);

    if (l->vt_in_wait || dn2f_ep_link(l->ep) != DN2F_LINK_UP) {
        return false;
    }
    dimmnet2_vt_report(s, now, now);
    dimmnet2_vt_block(s, dimmnet2_vt_can_send, &w, DIMMNET2_VT_CREDIT_NS);
    if (dimmnet2_vt_can_send(s, &w)) {
        return dn2f_ep_link(l->ep) == DN2F_LINK_UP;
    }
    if (!l->vt_nondet) {
        warn_report("dimmnet2: board %d: vtime: no credits toward LID 0x%x for "
                    "%d s; the Window Controller waits for them as without "
                    "virtual time, and the run now depends on the host",
                    s->index, dlid, (int)(DIMMNET2_VT_CREDIT_NS / NANOSECONDS_PER_SECOND));
    }
    l->vt_nondet = true;
    return false;
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
    uint64_t val = s->fab ? s->fab->vt_cut : 0;

    visit_type_uint64(v, name, &val, errp);
}

static void dimmnet2_vt_set_cut(Object *obj, Visitor *v, const char *name,
                                void *opaque, Error **errp)
{
    DN2State *s = opaque;
    DN2Fab *l = s->fab;
    uint64_t val, now = qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL);

    if (!visit_type_uint64(v, name, &val, errp)) {
        return;
    }
    if (val && val <= now) {
        error_setg(errp, "dimmnet2: board %d: vt-cut-ns %" PRIu64 " is not "
                   "after its virtual clock (%" PRIu64 " ns)", s->index, val, now);
        return;
    }
    l->vt_cut = val;
    l->vt_cut_done = false;
    if (!l->vt_in_wait) {
        dimmnet2_vt_arm(s);
    }
}

static bool dimmnet2_vt_get_at_cut(Object *obj, Error **errp)
{
    DN2State *s = DIMMNET2(obj);

    return s->fab && s->fab->vt_cut_done && !runstate_is_running() &&
           qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL) == (int64_t)s->fab->vt_cut;
}

static void dimmnet2_vt_get_queued(Object *obj, Visitor *v, const char *name,
                                   void *opaque, Error **errp)
{
    DN2State *s = opaque;
    uint64_t val = s->fab ? g_sequence_get_length(s->fab->vtq) : 0;

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
    DN2Fab *l = opaque;
    GByteArray *b = g_byte_array_new();
    const unsigned nbits = DN2F_NUM_CLID * DN2F_NUM_LANES;
    GSequenceIter *it;
    unsigned long i;

    /* the refused lanes: a count, then each (source CLID, lane) key */
    dimmnet2_blob_put(b, bitmap_count_one(l->vt_blocked, nbits), 4);
    for (i = find_first_bit(l->vt_blocked, nbits); i < nbits;
         i = find_next_bit(l->vt_blocked, nbits, i + 1)) {
        dimmnet2_blob_put(b, i, 4);
    }
    dimmnet2_blob_put(b, g_sequence_get_length(l->vtq), 4);
    for (it = g_sequence_get_begin_iter(l->vtq); !g_sequence_iter_is_end(it);
         it = g_sequence_iter_next(it)) {
        const DN2VtPkt *p = g_sequence_get(it);

        dimmnet2_blob_put(b, p->vtime, 8);
        dimmnet2_blob_put(b, p->vseq, 4);
        dimmnet2_blob_put(b, p->slid, 2);
        dimmnet2_blob_put(b, p->lane, 1);
        dimmnet2_blob_put(b, p->len, 4);
        g_byte_array_append(b, p->data, p->len);
    }
    g_free(l->vt_blob);
    l->vt_blob_len = b->len;
    l->vt_blob = g_byte_array_free(b, false);
    return 0;
}

static int dimmnet2_vt_post_save(void *opaque)
{
    DN2Fab *l = opaque;

    g_free(l->vt_blob);
    l->vt_blob = NULL;
    l->vt_blob_len = 0;
    return 0;
}

/* The stream is checked as a guest's input would be: a bad one is refused
 * whole, naming what is wrong. */
static int dimmnet2_vt_post_load(void *opaque, int version_id)
{
    DN2Fab *l = opaque;
    const unsigned nbits = DN2F_NUM_CLID * DN2F_NUM_LANES;
    const uint8_t *p = l->vt_blob, *end = l->vt_blob + l->vt_blob_len;
    uint64_t n, i, k, bytes = 0;
    int r = -EINVAL;

    bitmap_zero(l->vt_blocked, nbits);
    g_sequence_remove_range(g_sequence_get_begin_iter(l->vtq),
                            g_sequence_get_end_iter(l->vtq));
    l->vtq_bytes = 0;
    if (!l->vt_blob || !dimmnet2_blob_get(&p, end, 4, &n)) {
        error_report("dimmnet2: vtime stream: no queue");
        goto out;
    }
    for (i = 0; i < n; i++) {
        if (!dimmnet2_blob_get(&p, end, 4, &k) || k >= nbits) {
            error_report("dimmnet2: vtime stream: refused lane %" PRIu64 " of %u",
                         i, nbits);
            goto out;
        }
        set_bit(k, l->vt_blocked);
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
        g_sequence_insert_sorted(l->vtq, q, dimmnet2_vt_cmp, NULL);
        l->vtq_bytes += len;
    }
    if (p != end) {
        error_report("dimmnet2: vtime stream: %zu bytes after the queue",
                     (size_t)(end - p));
        goto out;
    }
    r = 0;
out:
    g_free(l->vt_blob);
    l->vt_blob = NULL;
    l->vt_blob_len = 0;
    /* the new switch grants afresh: wait at the restored clock for it */
    l->vt_horizon = 0;
    l->vt_reported = false;
    l->vt_rep_now = l->vt_rep_earliest = 0;
    l->vtq_full = false;
    dimmnet2_port_refresh(l->owner);    /* the link as of vt_started */
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
        VMSTATE_UINT32(vt_vseq, DN2Fab),
        VMSTATE_BOOL(vt_started, DN2Fab),
        VMSTATE_BOOL(vt_nondet, DN2Fab),
        VMSTATE_UINT32(vt_lookahead, DN2Fab),
        VMSTATE_UINT32(vt_quantum, DN2Fab),
        VMSTATE_UINT64(vt_cut, DN2Fab),
        VMSTATE_BOOL(vt_cut_done, DN2Fab),
        VMSTATE_UINT32(vt_blob_len, DN2Fab),
        VMSTATE_VBUFFER_ALLOC_UINT32(vt_blob, DN2Fab, 0, NULL, vt_blob_len),
        VMSTATE_END_OF_LIST()
    },
};

static void dimmnet2_vt_snapshot_init(DN2State *s)
{
    s->fab->owner = s;
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
    vmstate_register(VMSTATE_IF(s), s->index, &vmstate_dimmnet2_vt, s->fab);
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
    DN2Fab *l = s->fab;
    uint64_t now = qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL);

    if (!l->vt_started || l->vt_in_wait || (l->vt_cut && l->vt_cut_done) ||
        (l->vt_reported && now <= l->vt_rep_now)) {
        return;
    }
    dimmnet2_vt_report(s, now, dimmnet2_vt_earliest(s, now));
    dn2f_ep_flush(l->ep);
    dimmnet2_fab_rearm(s);
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

static void dimmnet2_vt_init(DN2State *s)
{
    DN2Fab *l = s->fab;

    l->vtq = g_sequence_new(g_free);
    l->vt_blocked = bitmap_new(DN2F_NUM_CLID * DN2F_NUM_LANES);
    l->vt_timer = timer_new_ns(QEMU_CLOCK_VIRTUAL, dimmnet2_vt_cb, s);
    timerlistgroup_init(&l->vt_park_tlg, dimmnet2_vt_park_notify, s);
    l->vt_park = timer_new_full(&l->vt_park_tlg, QEMU_CLOCK_VIRTUAL, SCALE_NS, 0,
                                dimmnet2_vt_park_cb, s);
    /* Until vt-start-ns the board runs on its own, its link down for the
     * guest (a guest that boots alone, with no input from the host, boots
     * the same way every time, at the speed of -icount alone).  There it
     * waits until the switch has every board of the cluster and grants the
     * first horizon, and the link comes up. */
    l->vt_horizon = s->vt_start_ns;
    timer_mod(l->vt_timer, MIN(s->vt_start_ns, (uint64_t)INT64_MAX));
    dimmnet2_vt_snapshot_init(s);
}

static void dimmnet2_vt_fini(DN2Fab *l)
{
    if (l->vt_timer) {
        timer_free(l->vt_timer);
    }
    if (l->vtq) {
        g_sequence_free(l->vtq);
    }
    g_free(l->vt_blocked);
    g_free(l->vt_blob);
    if (l->vt_park) {
        timer_free(l->vt_park);
        timerlistgroup_deinit(&l->vt_park_tlg);
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

/*
 * The VM runs again (after "cont", or once an incoming migration has
 * loaded): a board still held for a snapshot is released, and whatever was
 * refused meanwhile is offered again.
 */
static void dimmnet2_fab_vm_change(void *opaque, bool running, RunState state)
{
    DN2State *s = opaque;
    Error *err = NULL;

    if (!running || !s->fab) {
        return;
    }
    if (dimmnet2_port_held(s)) {
        if (!dimmnet2_port_hold(s, false, &err)) {
            warn_report_err(err);
        }
        goto vt;
    }
    dn2f_ep_resume(s->fab->ep);
    dn2f_ep_flush(s->fab->ep);
    dimmnet2_fab_rearm(s);
vt:
    if (s->vtime) {
        timer_del(s->fab->vt_park);
    }
    if (s->vtime && !s->fab->vt_in_wait) {
        /* after a cut, and after a restore: what waits at the cut, or the
         * wait for the new switch's grant (horizon 0) */
        dimmnet2_vt_arm(s);
    }
}

static bool dimmnet2_fab_init(DN2State *s, Error **errp)
{
    DN2Fab *l = g_new0(DN2Fab, 1);
    struct dn2f_ep_config cfg;
    struct dn2f_addr local;

    dn2f_ep_config_default(&cfg);
    if (dn2f_addr_parse(&cfg.sw, s->switch_addr) < 0) {
        error_setg(errp, "dimmnet2: switch=%s is not HOST:PORT (e.g. "
                   "127.0.0.1:4791 or [::1]:4791)", s->switch_addr);
        g_free(l);
        return false;
    }
    if (dn2f_addr_port(&cfg.sw) == 0) {
        error_setg(errp, "dimmnet2: switch=%s: port 0 is no switch's port; give "
                   "the port dn2-switch --listen was given", s->switch_addr);
        g_free(l);
        return false;
    }
    memset(&local, 0, sizeof(local));
    if (s->local_addr && dn2f_addr_parse(&local, s->local_addr) < 0) {
        error_setg(errp, "dimmnet2: local=%s is not HOST:PORT", s->local_addr);
        g_free(l);
        return false;
    }
    if (local.len && local.u.sa.sa_family != cfg.sw.u.sa.sa_family) {
        error_setg(errp, "dimmnet2: local=%s is %s but switch=%s is %s: the "
                   "board could never reach its switch; give both of one family",
                   s->local_addr, local.u.sa.sa_family == AF_INET6 ? "IPv6" : "IPv4",
                   s->switch_addr,
                   cfg.sw.u.sa.sa_family == AF_INET6 ? "IPv6" : "IPv4");
        g_free(l);
        return false;
    }
    if (s->secret_id) {
        if (qcrypto_secret_lookup(s->secret_id, &l->secret, &l->secret_len,
                                  errp) < 0) {
            error_prepend(errp, "dimmnet2: secret=%s: ", s->secret_id);
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
                       "--secret-file", s->secret_id);
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
                         "on %s", s->local_addr ? s->local_addr : "any address");
        g_free(l->secret);
        g_free(l);
        return false;
    }
    cfg.guid = s->guid ? s->guid : g_random_int() | ((uint64_t)g_random_int() << 32) | 1;
    cfg.lid_hint = s->lid_wanted;
    cfg.vtime = s->vtime;
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
    s->fab = l;
    if (s->vtime) {
        dimmnet2_vt_init(s);
    }
    dn2f_ep_flush(l->ep);       /* the first HELLO */
    dimmnet2_fab_rearm(s);
    l->vmse = qemu_add_vm_change_state_handler(dimmnet2_fab_vm_change, s);
    if (s->rx_thread) {
        char name[32];

        qemu_socket_set_block(l->fd);
        l->thread_on = true;
        snprintf(name, sizeof(name), "dimmnet2-rx%d", s->index);
        qemu_thread_create(&l->thread, name, dimmnet2_fab_rx_thread, s,
                           QEMU_THREAD_JOINABLE);
    } else {
        qemu_set_fd_handler(l->fd, dimmnet2_fab_read, NULL, s);
    }
    return true;
}

/* ------------------------------------------------------------------ */
/* The port API used by the Window Controller and Receive Controller   */
/* ------------------------------------------------------------------ */

bool dimmnet2_port_init(DN2State *s, const DN2PortOps *ops, Error **errp)
{
    if (s->switch_addr && s->loopback) {
        error_setg(errp, "dimmnet2: give either switch= or loopback=on, not both");
        return false;
    }
    for (unsigned q = 0; q < DIMMNET2_LOOP_QUEUES; q++) {
        g_queue_init(&s->loop_q[q]);
    }
    s->port_ops = ops;
    if (!dimmnet2_pcap_open(s, errp)) {
        return false;
    }
    if (s->loopback) {
        s->port_kind = DN2_PORT_LOOPBACK;
        if (s->vtime) {
            /* The cable in virtual time: each packet arrives vt-latency-ns
             * after it left, from a virtual-clock timer (one board needs
             * no synchronisation). */
            s->loop_timer = timer_new_ns(QEMU_CLOCK_VIRTUAL, dimmnet2_loop_bh, s);
        }
        s->loop_bh = qemu_bh_new_guarded(dimmnet2_loop_bh, s,
                                         &DEVICE(s)->mem_reentrancy_guard);
    } else if (s->switch_addr) {
        s->port_kind = DN2_PORT_FABRIC;
        if (!dimmnet2_fab_init(s, errp)) {
            if (s->pcap) {
                fclose(s->pcap);
                s->pcap = NULL;
            }
            return false;
        }
    } else {
        s->port_kind = DN2_PORT_NONE;
        return true;
    }
    /* Packets in flight and a live peer cannot be migrated: only a board
     * held for a snapshot (dimmnet2_port_hold) is. */
    error_setg(&s->blocker, DIMMNET2_LINK_BLOCKER);
    if (migrate_add_blocker(&s->blocker, errp) < 0) {
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
 * loopback packet on the cable.  Its fabric state is then nothing but its
 * GUID and LID: a restored board joins its switch afresh (a new epoch, new
 * sessions with its peers, which lose nothing since nothing was in
 * flight) and asks for its old LID (lid=).  docs/fabric.md, "Snapshots".
 */
bool dimmnet2_port_held(DN2State *s)
{
    return s->port_kind != DN2_PORT_NONE && !s->blocker;
}

bool dimmnet2_port_quiescent(DN2State *s, Error **errp)
{
    unsigned q, n = 0;

    if (s->vtime && !s->fab) {
        error_setg(errp, "dimmnet2: board %d runs in virtual time (vtime=on) on "
                   "its loopback cable, whose packets wait for their virtual "
                   "times, which a snapshot does not keep", s->index);
        return false;
    }
    if (s->vtime && !s->fab->vt_cut_done) {
        error_setg(errp, "dimmnet2: board %d runs in virtual time (vtime=on) "
                   "and is not at a cut: a snapshot is taken at one virtual time "
                   "for every board (vt-cut-ns; scripts/cluster.sh "
                   "--snapshot-at)", s->index);
        return false;
    }
    if (s->vtime && qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL) != (int64_t)s->fab->vt_cut) {
        error_setg(errp, "dimmnet2: board %d: its virtual clock (%" PRId64 " ns) "
                   "is not at its cut (%" PRIu64 " ns)", s->index,
                   qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL), s->fab->vt_cut);
        return false;
    }
    for (q = 0; q < DIMMNET2_LOOP_QUEUES; q++) {
        n += g_queue_get_length(&s->loop_q[q]);
    }
    if (n) {
        error_setg(errp, "dimmnet2: board %d: %u loopback packets on the cable",
                   s->index, n);
        return false;
    }
    if (s->fab && !dn2f_ep_idle(s->fab->ep)) {
        error_setg(errp, "dimmnet2: board %d: %u packets not yet acknowledged "
                   "by its peers (or queued): the fabric has not drained",
                   s->index, dn2f_ep_unacked(s->fab->ep));
        return false;
    }
    return true;
}

bool dimmnet2_port_hold(DN2State *s, bool on, Error **errp)
{
    if (s->port_kind == DN2_PORT_NONE || on == dimmnet2_port_held(s)) {
        return true;
    }
    if (on) {
        if (!dimmnet2_port_quiescent(s, errp)) {
            return false;
        }
        migrate_del_blocker(&s->blocker);
        trace_dimmnet2_snapshot_hold(s->index, true);
        return true;
    }
    error_setg(&s->blocker, DIMMNET2_LINK_BLOCKER);
    if (migrate_add_blocker(&s->blocker, errp) < 0) {
        return false;       /* a migration runs: still held */
    }
    trace_dimmnet2_snapshot_hold(s->index, false);
    if (s->fab) {
        dn2f_ep_resume(s->fab->ep);
        dn2f_ep_flush(s->fab->ep);
        dimmnet2_fab_rearm(s);
    }
    return true;
}

void dimmnet2_port_fini(DN2State *s)
{
    migrate_del_blocker(&s->blocker);
    if (s->pcap) {
        fclose(s->pcap);
        s->pcap = NULL;
    }
    dimmnet2_loop_flush_all(s);
    if (s->loop_bh) {
        qemu_bh_delete(s->loop_bh);
        s->loop_bh = NULL;
    }
    if (s->loop_timer) {
        timer_free(s->loop_timer);
        s->loop_timer = NULL;
    }
    if (s->fab) {
        if (s->fab->thread_on) {
            dimmnet2_fab_rx_thread_stop(s);
        } else {
            qemu_set_fd_handler(s->fab->fd, NULL, NULL, NULL);
        }
        if (s->fab->vmse) {
            qemu_del_vm_change_state_handler(s->fab->vmse);
        }
        timer_free(s->fab->timer);
        if (s->fab->vtq) {
            vmstate_unregister(VMSTATE_IF(s), &vmstate_dimmnet2_vt, s->fab);
        }
        dimmnet2_vt_fini(s->fab);
        dn2f_ep_free(s->fab->ep);
        close(s->fab->fd);
        g_free(s->fab->rxb.buf);
        if (s->fab->secret) {
            memset(s->fab->secret, 0, s->fab->secret_len);
            g_free(s->fab->secret);
        }
        g_free(s->fab);
        s->fab = NULL;
    }
}

/*
 * The SMA LID register and link state, read from the port itself: the
 * loopback cable is always up with LID 1, the fabric endpoint knows whether
 * its link is up and its LID, and no cable is no link.  A reset or an
 * incoming migration re-reads them; they are never taken from a stream or
 * left zero while the port is up.
 */
void dimmnet2_port_refresh(DN2State *s)
{
    bool up = false;
    uint16_t lid = 0;

    switch (s->port_kind) {
    case DN2_PORT_LOOPBACK:
        up = true;
        lid = DIMMNET2_LOOP_LID;
        break;
    case DN2_PORT_FABRIC:
        if (s->fab && dn2f_ep_link(s->fab->ep) == DN2F_LINK_UP &&
            (!s->vtime || s->fab->vt_started)) {
            up = true;
            lid = dn2f_ep_lid(s->fab->ep);
        }
        break;
    default:
        break;
    }
    s->sma_lid = up ? lid : 0;
    s->link_state = up ? DN2_SMA_LINK_READY : 0;
    trace_dimmnet2_link_refresh(s->index, up, lid);
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
    if (s->port_kind == DN2_PORT_FABRIC && s->fab) {
        /* What that delivers (or drops) is acknowledged at once. */
        dn2f_ep_resume(s->fab->ep);
        dn2f_ep_flush(s->fab->ep);
        dimmnet2_fab_rearm(s);
    }
}

/* SMA software reset: the port renegotiates with the subnet manager. */
void dimmnet2_port_sma_reset(DN2State *s)
{
    s->sma_lid = 0;
    s->link_state = 0;
    if (s->port_kind == DN2_PORT_LOOPBACK) {
        dimmnet2_port_reset(s);
    } else if (s->fab) {
        dn2f_ep_reset(s->fab->ep, 0);
        dn2f_ep_flush(s->fab->ep);
        dimmnet2_fab_rearm(s);
    }
}

bool dimmnet2_port_ready(DN2State *s)
{
    return s->port_kind != DN2_PORT_NONE && s->link_state == DN2_SMA_LINK_READY;
}

/* Changes whenever the board's view of its peers may have changed: the
 * link came up, or a peer came back as a new incarnation (a renewed
 * session).  0 and constant without a fabric. */
uint64_t dimmnet2_port_peer_gen(DN2State *s)
{
    const struct dn2f_ep_stats *st;

    if (s->port_kind != DN2_PORT_FABRIC || !s->fab || !s->fab->ep) {
        return 0;
    }
    st = dn2f_ep_stats(s->fab->ep);
    return st->link_ups + st->session_resets;
}

uint16_t dimmnet2_port_lid(DN2State *s)
{
    return s->sma_lid;
}

bool dimmnet2_port_can_send(DN2State *s, uint64_t h0, size_t len)
{
    uint16_t dlid = dn2_hdr0_dlid(h0);

    switch (s->port_kind) {
    case DN2_PORT_LOOPBACK:
        return g_queue_get_length(&s->loop_q[dimmnet2_loop_queue(h0)]) < DIMMNET2_LOOP_MAX;
    case DN2_PORT_FABRIC:
        /* The packet's lane: its DWID, and RVL requests apart from data
         * (docs/fabric.md): credits one process of the peer withholds, or
         * a full RC FIFO there, hold up only that lane. */
        if (dn2f_ep_can_send_lane(s->fab->ep, dlid, dn2f_h0_lane(h0), len)) {
            return true;
        }
        return s->vtime && dimmnet2_vt_wait_credits(s, dlid, dn2f_h0_lane(h0), len);
    default:
        return false;
    }
}

void dimmnet2_port_send(DN2State *s, uint16_t dlid, const uint8_t *pkt, size_t len)
{
    switch (s->port_kind) {
    case DN2_PORT_LOOPBACK: {
        DN2LoopPkt *p;
        if (dlid != DIMMNET2_LOOP_LID && !dn2_clid_is_mcast(dn2_lid_to_clid(dlid))) {
            s->stat[DN2_STAT_RX_DROP_ROUTE]++; /* a one-port switch: nowhere to go */
            return;
        }
        p = g_malloc(sizeof(*p) + len);
        p->seq = s->loop_seq++;
        if (s->vtime) {
            uint64_t now = qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL);
            p->due = s->timing_on ? dimmnet2_timing_due(s, now, ldq_le_p(pkt), len)
                                  : now + s->vt_latency_ns;
        } else {
            p->due = 0;
        }
        p->len = len;
        memcpy(p->data, pkt, len);
        g_queue_push_tail(&s->loop_q[dimmnet2_loop_queue(ldq_le_p(pkt))], p);
        dimmnet2_loop_kick(s, p->due);
        break;
    }
    case DN2_PORT_FABRIC: {
        int r;

        if (!s->coalesce_us || !dn2f_ep_pending(s->fab->ep, dlid) || s->vtime) {
            s->fab->flush_now = true;   /* nothing in flight: no ACK to wait for */
        }
        if (s->vtime) {
            r = dn2f_ep_send_vt(s->fab->ep, dlid, pkt, len, dimmnet2_vt_due(s, pkt, len),
                                s->fab->vt_vseq++);
        } else {
            r = dn2f_ep_send(s->fab->ep, dlid, pkt, len);
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
    DN2Fab *l = s->fab;

    if (s->port_kind != DN2_PORT_FABRIC) {
        return;
    }
    if (l->flush_now || l->in_input || !s->coalesce_us) {
        l->flush_now = false;
        dn2f_ep_flush(l->ep);
        dimmnet2_fab_rearm(s);
    } else {
        timer_mod_anticipate_ns(l->timer, qemu_clock_get_ns(QEMU_CLOCK_REALTIME) +
                                (int64_t)s->coalesce_us * SCALE_US);
    }
}

/* The host freed room: offer the packets the Receive Controller refused. */
void dimmnet2_port_resume(DN2State *s)
{
    switch (s->port_kind) {
    case DN2_PORT_LOOPBACK:
        dimmnet2_loop_kick(s, 0);
        break;
    case DN2_PORT_FABRIC:
        if (s->vtime) {
            /* Offer the refused packets again at this virtual time. */
            bitmap_zero(s->fab->vt_blocked, DN2F_NUM_CLID * DN2F_NUM_LANES);
            if (!s->fab->vt_in_wait) {
                dimmnet2_vt_arm(s);
            }
            if (!s->fab->vt_nondet) {
                break;
            }
        }
        dn2f_ep_resume(s->fab->ep);
        dimmnet2_fab_after_input(s);
        break;
    default:
        break;
    }
}

/* For QOM statistics: one counter of the fabric endpoint (0 without one). */
uint64_t dimmnet2_port_stat(DN2State *s, DN2Stat which)
{
    const struct dn2f_ep_stats *st;
    uint64_t drops = 0;
    int i;

    if (s->port_kind != DN2_PORT_FABRIC || !s->fab) {
        return 0;
    }
    st = dn2f_ep_stats(s->fab->ep);
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
