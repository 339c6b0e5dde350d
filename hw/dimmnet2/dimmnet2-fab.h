/*
 * DIMMnet-2 port: what its four files share (dimmnet2-port.c,
 * dimmnet2-vt.c, dimmnet2-transport.c, dimmnet2-deliver.c; listed top to
 * bottom in tests/layering/layers.txt).
 *
 * The seam: a file calls only the files below it.  The transport (UDP,
 * the fabric endpoint) hands the records that carry a virtual time and
 * the switch's grants up to the lock-step client through DN2TransportUp,
 * an ops table the port gives it when it opens it; everything else the
 * transport learns goes up through DN2PortOps (news) and entry_done.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef HW_DIMMNET2_FAB_H
#define HW_DIMMNET2_FAB_H

#include "qemu/thread.h"
#include "system/runstate.h"
#include "dimmnet2-int.h"
#include "fabric/dn2fab.h"


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

/* What the transport reports up to the lock-step client (dimmnet2-vt.c):
 * called only with vtime=on. */
typedef struct DN2TransportUp {
    /* a record that carries a virtual time: 0, or -EBUSY (kept by its sender) */
    int (*deliver_vt)(DN2State *s, uint16_t slid, const uint8_t *pkt, size_t len,
                      uint64_t vtime, uint32_t vseq);
    /* the switch granted a horizon */
    void (*vt_grant)(DN2State *s, uint64_t horizon, uint32_t lookahead_ns,
                     uint32_t quantum_ns, uint64_t slowest);
} DN2TransportUp;

struct DN2Fab {
    const DN2TransportUp *up;   /* the lock-step client, above */
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
    VMChangeStateEntry *vmse;   /* resume deliveries when the VM runs */
};

/* dimmnet2-vt.c: the lock-step client (vtime=on, docs/virtual-time.md);
 * its state is DN2Vt (dimmnet2-int.h), s->vt */
extern const DN2TransportUp dimmnet2_vt_up;
void dimmnet2_vt_init(DN2State *s);
void dimmnet2_vt_fini(DN2State *s);
void dimmnet2_vt_leave(DN2State *s);
void dimmnet2_vt_arm(DN2State *s);
void dimmnet2_vt_run_due(DN2State *s);
uint64_t dimmnet2_vt_due(DN2State *s, const uint8_t *pkt, size_t len);
bool dimmnet2_vt_wait_credits(DN2State *s, uint16_t dlid, unsigned lane, size_t len);
bool dimmnet2_vt_open(DN2State *s, Error **errp);
bool dimmnet2_vt_shm_on(DN2State *s);
int dimmnet2_vt_send(DN2State *s, uint16_t dlid, const uint8_t *pkt, size_t len);

/* dimmnet2-transport.c: UDP and the fabric endpoint (switch=) */
bool dimmnet2_transport_open(DN2State *s, const DN2TransportUp *up, Error **errp);
void dimmnet2_transport_start(DN2State *s);
void dimmnet2_transport_stop(DN2State *s);
void dimmnet2_transport_leave(DN2State *s);
void dimmnet2_transport_fini(DN2State *s);
void dimmnet2_transport_rearm(DN2State *s);
void dimmnet2_transport_drain(DN2State *s, DN2RxBatch *b, int budget);
void dimmnet2_transport_after_input(DN2State *s);

/* dimmnet2-deliver.c: delivery to the Receive Controller, pcap=, the SMA */
bool dimmnet2_pcap_open(DN2State *s, Error **errp);
DN2RxResult dimmnet2_port_deliver_one(DN2State *s, uint16_t slid,
                                      const uint8_t *pkt, size_t len);

#endif
