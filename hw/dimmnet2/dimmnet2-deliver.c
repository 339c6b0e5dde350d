/*
 * DIMMnet-2 port, the bottom: a packet handed to the Receive Controller
 * (through DN2PortOps), the pcap= trace of what it took, and the SMA LID
 * register and link state as the port shows them.  Below the loopback
 * cable, the lock-step client and the transport, which all deliver here.
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
/* pcap=: the packets delivered, with their time                       */
/* ------------------------------------------------------------------ */

#define DIMMNET2_PCAP_EVENT_DELIVERED 7     /* docs/fabric.md, pcap records */
#define DIMMNET2_PCAP_CAPHDR    16
#define DIMMNET2_PCAP_LINKTYPE  147         /* LINKTYPE_USER0 */

bool dimmnet2_pcap_open(DN2State *s, Error **errp)
{
    uint8_t h[24];

    if (!s->params.pcap_path) {
        return true;
    }
    s->port.pcap = fopen(s->params.pcap_path, "wb");
    if (!s->port.pcap) {
        error_setg_errno(errp, errno, "dimmnet2: pcap=%s: cannot create the "
                         "trace file", s->params.pcap_path);
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
    if (fwrite(h, sizeof(h), 1, s->port.pcap) != 1 || fflush(s->port.pcap)) {
        error_setg_errno(errp, errno, "dimmnet2: pcap=%s: cannot write",
                         s->params.pcap_path);
        fclose(s->port.pcap);
        s->port.pcap = NULL;
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

    if (!s->port.pcap) {
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
    stw_le_p(h + 22, s->sys.sma_lid);
    stl_le_p(h + 28, len);
    if (fwrite(h, sizeof(h), 1, s->port.pcap) != 1 ||
        fwrite(pkt, len, 1, s->port.pcap) != 1 || fflush(s->port.pcap)) {
        warn_report("dimmnet2: board %d: pcap=%s: write failed (%s); the "
                    "trace stops here", s->index, s->params.pcap_path, strerror(errno));
        fclose(s->port.pcap);
        s->port.pcap = NULL;
    }
}

/* Hand a packet to the Receive Controller, and trace what it took. */
DN2RxResult dimmnet2_port_deliver_one(DN2State *s, uint16_t slid,
                                      const uint8_t *pkt, size_t len)
{
    DN2RxResult r = s->port.ops->deliver(s, slid, pkt, len);

    if (r != DIMMNET2_RX_BUSY && s->port.pcap) {
        dimmnet2_pcap_write(s, slid, pkt, len, dimmnet2_now(s));
    }
    return r;
}

/* Held for a snapshot (dimmnet2-port.c, "Snapshots"): the migration
 * blocker of a linked board lifted. */
bool dimmnet2_port_held(DN2State *s)
{
    return s->port.kind != DN2_PORT_NONE && !s->port.blocker;
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

    switch (s->port.kind) {
    case DN2_PORT_LOOPBACK:
        up = true;
        lid = DIMMNET2_LOOP_LID;
        break;
    case DN2_PORT_FABRIC:
        if (s->port.fab && dn2f_ep_link(s->port.fab->ep) == DN2F_LINK_UP &&
            (!s->vt.on || s->vt.started)) {
            up = true;
            lid = dn2f_ep_lid(s->port.fab->ep);
        }
        break;
    default:
        break;
    }
    s->sys.sma_lid = up ? lid : 0;
    s->sys.link_state = up ? DN2_SMA_LINK_READY : 0;
    trace_dimmnet2_link_refresh(s->index, up, lid);
}
