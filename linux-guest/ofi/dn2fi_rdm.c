/* SPDX-License-Identifier: MIT */
/*
 * libdimmnet2-fi: the native FI_EP_RDM endpoint (FI_TAGGED + FI_MSG),
 * without ofi_rxd.
 *
 * The fabric is reliable and delivers a sender's packets in order, and
 * the board holds (never drops) what arrives for an enabled endpoint, so
 * reliability needs nothing here.  A message is a run of datagrams of the
 * shared engine (dn2fi_xmit: one LHSv2 each, the envelope and up to 1015
 * bytes from the Write Window, the rest staged in SO-DIMM):
 *
 *   first:  envelope (context 0x0F2, flags in Context bits 12-13, Tag =
 *           the datagram's sequence number) + struct dn2fi_rdm_hdr (tag,
 *           whole length, CQ data) + the first bytes
 *   next:   envelope (context 0x0F3, Tag = its sequence number) + the next
 *           bytes, until the length
 *
 * Flow control.  The board executes its requests in order, one Request
 * FIFO for both WIDs, so an LHSv2 that the receiving board holds (its LH
 * Buffer or ring full) blocks every later request of this board, the VLs
 * that would drain our own ring included: two ranks sending to each other
 * with both rings full would wait for each other for ever.  So no
 * datagram is sent that the receiver may have to hold: every receiver
 * gives every possible sender (the rank table's endpoints) an equal share
 * of its 64 LH Buffer entries and of its ring, the sender numbers its
 * datagrams to each destination and counts what is in flight, and the
 * receiver returns credits (context 0x0F4: the sequence number after the
 * last datagram it took) as it takes datagrams out.  A credit is taken
 * only within what was sent (dn2fi_win.h); a new process on a {LID, WID}
 * says hello (0x0F5) to the rank table at enable, and the others forget
 * what they had in flight to its predecessor.  The table holds as many
 * destinations as the rank table has endpoints; more are refused.
 *
 * The sender sends one message's datagrams back to back (one transmit
 * queue, in order), so a receiver has at most one message in progress per
 * sender.  The receiver drains its LH Buffer all the time: a datagram goes
 * straight into the matched posted receive, or into a host-memory buffer
 * of an unexpected message that grows as its bytes come (so the board
 * never holds a sender back for want of a receive or of memory, and no
 * sender can deadlock another; a message that cannot be held fails with
 * an error completion).  Tag matching:
 * posted and unexpected queues in order, FI_DIRECTED_RECV, FI_ADDR_UNSPEC,
 * FI_PEEK / FI_CLAIM / FI_DISCARD as Open MPI's ofi MTL uses them for
 * MPI_Probe / MPI_Improbe / MPI_Mrecv.  Design: docs/ofi-provider.md.
 */
#define _GNU_SOURCE
#include "dn2fi.h"
#include "dn2fi_win.h"
#include "dimmnet2/dn2_uapi.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#define RDM_QUEUE DN2FI_QUEUE

/* A posted receive. */
struct rdm_rx {
    struct rdm_rx *next;
    struct iovec iov[DN2FI_IOV_LIMIT];
    size_t iov_count, cap;
    int tagged;
    uint64_t tag, ignore;
    int directed;
    uint16_t lid;
    uint8_t wid;
    void *context;
    uint64_t flags;
};

/* A message arriving: unexpected (buf holds it) or going into rx. */
struct rdm_msg {
    struct rdm_msg *next;       /* unexpected queue */
    struct rdm_msg *pnext;      /* in-progress list */
    uint16_t lid;
    uint8_t wid;
    int tagged, has_data;
    uint64_t tag;
    uint32_t data;
    size_t len, got;
    uint8_t *buf;               /* unexpected: the bytes so far (cap of them) */
    size_t cap;
    int on_ux;                  /* on the unexpected queue */
    int err;                    /* failed (FI_EMSGSIZE, FI_ENOMEM): the rest
                                 * of its datagrams are taken and dropped */
    struct rdm_rx *rx;
    int claimed, discard;
    void *claim_ctx;
};

/* A send in the transmit queue. */
struct rdm_tx {
    struct rdm_tx *next;
    struct iovec iov[DN2FI_IOV_LIMIT];
    size_t iov_count, len, sent;
    uint16_t lid;
    uint8_t wid;
    int tagged, has_data, want_comp;
    uint64_t tag;
    uint32_t data;
    void *context;
    /* the LLCM chunk being sent (FI_DIMMNET2_BULK=llcm): l_len bytes from
     * the message's offset 'sent', l_done of them issued as BOTF images,
     * to the sender's share at position l_pos */
    uint32_t l_len, l_done, l_pos;
    uint8_t inline_buf[];       /* FI_INJECT: a copy of the data */
};

/* Flow control with one peer endpoint (both directions).  Sending, by
 * sequence number (dn2fi_win.h): sent = the next datagram's, acked = the
 * oldest not acknowledged; ring bytes of each datagram in flight in sz.
 * Receiving: took = the sequence number after the last datagram taken
 * from it, told = the last one we acknowledged. */
struct rdm_peer {
    uint16_t lid;
    uint8_t wid;
    uint8_t dest;                   /* holds a destination slot */
    uint32_t sent_e, acked_e;
    uint64_t sent_b, acked_b;
    uint32_t *sz;                   /* DN2_LHB_ENTRIES: ring bytes by seq,
                                     * or RDM_SZ_LLCM | LLCM bytes */
    /* our share of its LLCM (l_share 0: none, the SO-DIMM path), and the
     * LLCM bytes sent into it and acknowledged */
    uint32_t l_off, l_share, l_chunk;
    uint64_t sent_l, acked_l;
    uint32_t took_e, told_e;
    uint64_t took_b;                /* ring bytes taken since told */
    uint8_t rx_seen;                /* took/told are set */
    uint8_t ctl_due;                /* on the control list */
    uint8_t hello_due;
    uint8_t credit_due;
};

#define RDM_SZ_LLCM 0x80000000u

/* The peer index: LID >> 8, then (LID & 0xff) x 2 + WID -> peer + 1. */
#define RDM_IDX_PAGES (0xc000 >> 8)

struct dn2fi_rdm {
    struct rdm_peer *peer;          /* every endpoint heard from or sent to */
    uint32_t npeer, peer_cap;
    uint32_t *idx[RDM_IDX_PAGES];
    uint32_t ndest, dest_max;       /* destination slots: the rank table's size */
    int llcm;                       /* bulk data as BOTF into the receiver's LLCM */
    int mixed;                      /* ... and into its ring while the share is full */
    uint16_t lid;                   /* our own address (the LLCM share's index) */
    uint8_t wid;
    uint32_t *ctl;                  /* peers owed a credit or a hello */
    uint32_t nctl, ctl_cap;
    uint32_t hellos;                /* hellos not yet sent (data waits) */
    int hello_queued;
    uint32_t isn;                   /* our first sequence number */
    struct dn2fi_addr *table;       /* the rank table's endpoints */
    uint32_t ntable;
    uint64_t bad_llcm;              /* LLCM datagrams naming bytes outside the share area */
    uint64_t bogus_credits;         /* credits ahead of what was sent: ignored */
    uint32_t win_e;                 /* LH entries per sender */
    uint64_t win_b;                 /* ring bytes per sender */
    size_t dgram_max;               /* bytes after the envelope */
    struct rdm_rx *posted, **posted_tail;
    struct rdm_msg *ux, **ux_tail;
    struct rdm_msg *inprog;
    struct rdm_tx *txq, **txq_tail;
    size_t n_posted, n_tx;
    int in_progress;
};

static inline struct dn2fi_ep *ep_of(struct fid_ep *fid)
{
    return container_of(fid, struct dn2fi_ep, ep);
}

/* How many endpoints may send to us: the rank table's lines (DN2_RANKS;
 * their addresses in r->table, for the hellos), else two per LID of
 * FI_DIMMNET2_LIDS, else 16. */
static int rdm_senders(struct dn2fi_rdm *r)
{
    const char *path = getenv("DN2_RANKS"), *lids = getenv("FI_DIMMNET2_LIDS");
    int n = 0;

    if (path) {
        FILE *f = fopen(path, "r");
        char line[256];
        int rank;
        unsigned lid, wid, cap = 0;
        while (f && fgets(line, sizeof(line), f)) {
            if (line[0] != '#' && sscanf(line, "%d %i %u", &rank, &lid, &wid) == 3) {
                n++;
                if (lid && lid < 0xc000 && wid <= 1) {
                    if (r->ntable == cap) {
                        struct dn2fi_addr *t;
                        cap = cap ? 2 * cap : 64;
                        t = realloc(r->table, cap * sizeof(*t));
                        if (!t) {
                            break;
                        }
                        r->table = t;
                    }
                    r->table[r->ntable++] = (struct dn2fi_addr){ (uint16_t)lid, (uint8_t)wid, 0 };
                }
            }
        }
        if (f) {
            fclose(f);
        }
    }
    if (!n && lids) {
        const char *p = lids;
        while (*p) {
            char *end;
            unsigned long a = strtoul(p, &end, 0), b = a;
            if (end == p) {
                break;
            }
            if (*end == '-') {
                b = strtoul(end + 1, &end, 0);
            }
            n += b >= a ? (int)(2 * (b - a + 1)) : 0;
            if (*end != ',') {
                break;
            }
            p = end + 1;
        }
    }
    return n > 0 ? n : 16;
}

static int rdm_open(struct dn2fi_ep *ep)
{
    struct dn2fi_rdm *r = calloc(1, sizeof(*r));
    int n;
    uint64_t cap;

    if (!r) {
        return -FI_ENOMEM;
    }
    /* the shares: two LH entries per sender kept for credit returns */
    n = rdm_senders(r);
    r->dest_max = (uint32_t)n;
    if (getrandom(&r->isn, sizeof(r->isn), GRND_NONBLOCK) != sizeof(r->isn)) {
        r->isn = (uint32_t)time(NULL) * 2654435761u ^ (uint32_t)getpid();
    }
    r->win_e = n < 21 ? (uint32_t)((DN2_LHB_AREA / DN2_LHB_ENTRY - 2 * (unsigned)n) / (unsigned)n) : 1;
    r->win_b = (DN2FI_RING_BYTES / (unsigned)n) & ~(uint64_t)7;
    /* a datagram uses at most half a share (credit comes back in time) */
    cap = r->win_b / 2 + DN2_LHB_DATA - 8;
    r->dgram_max = DN2FI_INJECT + ep->slot < cap ? DN2FI_INJECT + ep->slot : (size_t)cap;
    if (r->dgram_max < DN2FI_INJECT) {
        r->dgram_max = DN2FI_INJECT;
    }
    r->llcm = ep->bulk != DN2FI_BULK_SODIMM;
    r->mixed = ep->bulk == DN2FI_BULK_MIXED;
    r->lid = ep->lid;
    r->wid = (uint8_t)ep->wid;
    r->posted_tail = &r->posted;
    r->ux_tail = &r->ux;
    r->txq_tail = &r->txq;
    ep->rdm = r;
    return 0;
}

static void rdm_close(struct dn2fi_ep *ep)
{
    struct dn2fi_rdm *r = ep->rdm;

    if (!r) {
        return;
    }
    while (r->posted) {
        struct rdm_rx *x = r->posted;
        r->posted = x->next;
        free(x);
    }
    while (r->inprog) {
        struct rdm_msg *m = r->inprog;
        r->inprog = m->pnext;
        if (m->rx) {
            free(m->rx);
        }
        if (!m->on_ux) {
            free(m->buf);
            free(m);
        } else {
            m->pnext = NULL;    /* freed with the unexpected queue */
        }
    }
    while (r->ux) {
        struct rdm_msg *m = r->ux;
        r->ux = m->next;
        free(m->buf);
        free(m);
    }
    while (r->txq) {
        struct rdm_tx *t = r->txq;
        r->txq = t->next;
        free(t);
    }
    for (uint32_t i = 0; i < r->npeer; i++) {
        free(r->peer[i].sz);
    }
    for (int i = 0; i < RDM_IDX_PAGES; i++) {
        free(r->idx[i]);
    }
    if (r->bad_llcm) {
        DN2FI_WARN(FI_LOG_EP_DATA, "%llu LLCM datagrams outside the share area were dropped\n",
                   (unsigned long long)r->bad_llcm);
    }
    if (r->bogus_credits) {
        DN2FI_WARN(FI_LOG_EP_DATA, "%llu credits outside what was in flight were ignored\n",
                   (unsigned long long)r->bogus_credits);
    }
    free(r->peer);
    free(r->ctl);
    free(r->table);
    free(r);
    ep->rdm = NULL;
}

/* ---------------------------------------------------------- helpers */

static size_t iov_total(const struct iovec *iov, size_t n)
{
    size_t i, t = 0;

    for (i = 0; i < n; i++) {
        t += iov[i].iov_len;
    }
    return t;
}

static fi_addr_t src_addr(struct dn2fi_ep *ep, uint16_t lid, int wid)
{
    return dn2fi_av_find(ep->av, lid, wid);
}

static uint64_t op_flag(int tagged)
{
    return tagged ? FI_TAGGED : FI_MSG;
}

static int rx_matches(const struct rdm_rx *rx, const struct rdm_msg *m)
{
    if (rx->tagged != m->tagged) {
        return 0;
    }
    if (rx->directed && (rx->lid != m->lid || rx->wid != m->wid)) {
        return 0;
    }
    return !rx->tagged || ((rx->tag | rx->ignore) == (m->tag | rx->ignore));
}

/* Complete a receive: its CQ entry (or error), then free it. */
static void rx_complete(struct dn2fi_ep *ep, struct rdm_rx *rx, struct rdm_msg *m, int err)
{
    uint64_t flags = FI_RECV | op_flag(m->tagged) | (m->has_data ? FI_REMOTE_CQ_DATA : 0);
    size_t n = m->len < rx->cap ? m->len : rx->cap;

    if (m->err) {
        err = m->err;
        n = 0;
    }
    if (!err && m->len > rx->cap) {
        err = FI_ETRUNC;
    }
    if (err) {
        dn2fi_cq_write_err_tag(ep->rxcq, rx->context, flags, n, rx->iov[0].iov_base,
                               m->data, m->tag, err, m->len > n ? m->len - n : 0);
    } else if (!ep->rx_selective || (rx->flags & FI_COMPLETION)) {
        dn2fi_cq_write_tag(ep->rxcq, rx->context, flags, n, rx->iov[0].iov_base,
                           m->data, m->tag, src_addr(ep, m->lid, m->wid));
    }
    ep->rx_msgs++;
    ep->rx_bytes += n;
    free(rx);
}

/* Copy bytes [off, off + n) of a message from buf into the receive's
 * iovs (what does not fit is dropped: truncation). */
static void rx_scatter(struct rdm_rx *rx, size_t off, const uint8_t *src, size_t n)
{
    size_t i, base = 0;

    for (i = 0; i < rx->iov_count && n; i++) {
        size_t l = rx->iov[i].iov_len;
        if (off < base + l) {
            size_t in = off - base, k = l - in < n ? l - in : n;
            memcpy((uint8_t *)rx->iov[i].iov_base + in, src, k);
            src += k;
            off += k;
            n -= k;
        }
        base += l;
    }
}

/* Where an arrived datagram's bytes are: after the envelope in the LH
 * Buffer entry and the receive ring (l NULL), or in our LLCM (l). */
struct rdm_src {
    const struct dn2_lh_msg *lm;
    const struct dn2fi_llcm_desc *l;
};

/* Copy n bytes at offset 'at' of a datagram's bytes. */
static int src_read(struct dn2fi_ep *ep, const struct rdm_src *s, size_t at, void *dst, size_t n)
{
    const volatile uint8_t *llcm;
    uint8_t *d = dst;
    uint64_t t0;
    int k;

    if (!s->l) {
        return dn2fi_dgram_read(ep, s->lm, at, dst, n);
    }
    t0 = ep->stats ? dn2fi_ns() : 0;
    llcm = dn2_llcm(ep->d);
    for (k = 0; k < 2 && n; k++) {
        if (at >= s->l->len[k]) {
            at -= s->l->len[k];
            continue;
        }
        size_t c = s->l->len[k] - at < n ? s->l->len[k] - at : n;
        memcpy(d, (const uint8_t *)llcm + s->l->off[k] + at, c);
        d += c;
        n -= c;
        at = 0;
    }
    ep->llcm_bytes += (size_t)(d - (uint8_t *)dst);
    if (ep->stats) {
        ep->ns_llcm += dn2fi_ns() - t0;
    }
    return n ? -FI_EIO : 0;
}

/* The same from an arrived datagram (at: the datagram offset). */
static int rx_take(struct dn2fi_ep *ep, struct rdm_rx *rx, size_t off,
                   const struct rdm_src *src, size_t at, size_t n)
{
    size_t i, base = 0;
    int r;

    for (i = 0; i < rx->iov_count && n; i++) {
        size_t l = rx->iov[i].iov_len;
        if (off < base + l) {
            size_t in = off - base, k = l - in < n ? l - in : n;
            if ((r = src_read(ep, src, at, (uint8_t *)rx->iov[i].iov_base + in, k))) {
                return r;
            }
            at += k;
            off += k;
            n -= k;
        }
        base += l;
    }
    return 0;
}

static void inprog_remove(struct dn2fi_rdm *r, struct rdm_msg *m)
{
    struct rdm_msg **pp;

    for (pp = &r->inprog; *pp; pp = &(*pp)->pnext) {
        if (*pp == m) {
            *pp = m->pnext;
            return;
        }
    }
}

static void ux_remove(struct dn2fi_rdm *r, struct rdm_msg *m)
{
    struct rdm_msg **pp;

    for (pp = &r->ux; *pp; pp = &(*pp)->next) {
        if (*pp == m) {
            *pp = m->next;
            if (r->ux_tail == &m->next) {
                r->ux_tail = pp;
            }
            m->on_ux = 0;
            return;
        }
    }
}

/* A message has all its bytes: deliver it if it has a receive. */
static void msg_done(struct dn2fi_ep *ep, struct rdm_msg *m, int err)
{
    struct dn2fi_rdm *r = ep->rdm;

    inprog_remove(r, m);
    if (err && !m->err && !m->rx) {
        m->err = err;       /* an unexpected message: its receive gets the error */
    }
    if (m->rx) {
        if (m->buf && !m->err) {
            rx_scatter(m->rx, 0, m->buf, m->len);
        }
        rx_complete(ep, m->rx, m, err);
        free(m->buf);
        free(m);
    } else if (m->discard) {
        ux_remove(r, m);
        free(m->buf);
        free(m);
    }
    /* else: stays on the unexpected queue, complete */
}

/* ------------------------------------------------------- flow control */

/* The peer {lid, wid}, made when new (create) or NULL. */
static struct rdm_peer *peer_get(struct dn2fi_rdm *r, uint16_t lid, int wid, int create)
{
    uint32_t **page, slot = (uint32_t)(lid & 0xffu) * 2 + (unsigned)(wid & 1);
    struct rdm_peer *p;

    if (!lid || lid >= 0xc000) {
        return NULL;
    }
    page = &r->idx[lid >> 8];
    if (*page && (*page)[slot]) {
        return &r->peer[(*page)[slot] - 1];
    }
    if (!create) {
        return NULL;
    }
    if (!*page && !(*page = calloc(512, sizeof(uint32_t)))) {
        return NULL;
    }
    if (r->npeer == r->peer_cap) {
        uint32_t n = r->peer_cap ? 2 * r->peer_cap : 64;
        struct rdm_peer *t = realloc(r->peer, n * sizeof(*t));
        if (!t) {
            return NULL;
        }
        r->peer = t;
        r->peer_cap = n;
    }
    p = &r->peer[r->npeer];
    memset(p, 0, sizeof(*p));
    p->lid = lid;
    p->wid = (uint8_t)wid;
    (*page)[slot] = ++r->npeer;
    return p;
}

/* Our share of p's LLCM (FI_DIMMNET2_BULK=llcm): every receiver splits
 * its DN2FI_LLCM_BULK area equally among the other endpoints of the rank
 * table, in the table's order (each endpoint at its first line), so each
 * sender computes its own share alone.  None (the SO-DIMM path) without
 * a rank table, for ourselves, for an endpoint not in the table, or when
 * a share would hold less than two images. */
static void llcm_share(struct dn2fi_rdm *r, struct rdm_peer *p)
{
    int64_t me = -1, dst = -1;
    uint32_t i;

    p->l_share = 0;
    if (!r->llcm) {
        return;
    }
    for (i = 0; i < r->ntable; i++) {
        if (me < 0 && r->table[i].lid == r->lid && r->table[i].wid == r->wid) {
            me = i;
        }
        if (dst < 0 && r->table[i].lid == p->lid && r->table[i].wid == p->wid) {
            dst = i;
        }
    }
    if (me < 0 || dst < 0 ||
        !dn2fi_llcm_share(r->ntable, (uint32_t)me, (uint32_t)dst, DN2FI_LLCM_BULK,
                          DN2FI_LLCM_BULK_END, DN2FI_BOTF_DATA, &p->l_off, &p->l_share,
                          &p->l_chunk)) {
        p->l_share = 0;
    }
}

/* The peer as a destination: a slot of the table, the sender's state.
 * NULL when the table is full (or out of memory): never sent to without
 * flow control. */
static struct rdm_peer *dest_get(struct dn2fi_rdm *r, uint16_t lid, int wid)
{
    struct rdm_peer *p = peer_get(r, lid, wid, 1);

    if (!p || p->dest) {
        return p;
    }
    if (r->ndest >= r->dest_max) {
        return NULL;
    }
    if (!(p->sz = calloc(DN2_LHB_ENTRIES, sizeof(*p->sz)))) {
        return NULL;
    }
    p->dest = 1;
    p->sent_e = p->acked_e = r->isn;
    r->ndest++;
    llcm_share(r, p);
    return p;
}

static int rdm_add_dest(struct dn2fi_ep *ep, uint16_t lid, int wid)
{
    if (!ep->rdm) {
        return 0;
    }
    if (!dest_get(ep->rdm, lid, wid)) {
        DN2FI_WARN(FI_LOG_AV, "LID %u WID %d: the flow-control table is full (%u endpoints, "
                   "the rank table's size)\n", lid, wid, ep->rdm->dest_max);
        return -FI_ENOSPC;
    }
    return 0;
}

/* Put p on the list of peers owed a control datagram. */
static void ctl_queue(struct dn2fi_rdm *r, struct rdm_peer *p)
{
    if (p->ctl_due) {
        return;
    }
    if (r->nctl == r->ctl_cap) {
        uint32_t n = r->ctl_cap ? 2 * r->ctl_cap : 64;
        uint32_t *t = realloc(r->ctl, n * sizeof(*t));
        if (!t) {
            return;     /* retried with the next datagram taken */
        }
        r->ctl = t;
        r->ctl_cap = n;
    }
    r->ctl[r->nctl++] = (uint32_t)(p - r->peer);
    p->ctl_due = 1;
}

/* Ring bytes a datagram of len bytes (after the envelope) takes. */
static uint64_t ring_bytes(size_t len)
{
    return len > DN2_LHB_DATA ? ((len - DN2_LHB_DATA + 7) & ~(size_t)7) : 0;
}

/* A datagram of len bytes with sequence number seq taken from p. */
static void took_one(struct dn2fi_rdm *r, struct rdm_peer *p, uint32_t seq, size_t len,
                     int llcm)
{
    if (!p->rx_seen) {
        p->rx_seen = 1;
        p->told_e = seq;
    }
    p->took_e = seq + 1;
    p->took_b += ring_bytes(len);
    /* an LLCM chunk is a third of the sender's share, which only the
     * sender knows: every one taken is acknowledged (one credit per
     * progress pass carries them all) */
    if (llcm || dn2fi_win_owed(p->took_e, p->told_e, r->win_e, p->took_b, r->win_b)) {
        p->credit_due = 1;
        ctl_queue(r, p);
    }
}

/* A credit from p: ack = the sequence number after the last datagram it
 * took from us.  Taken only when it lies within what we sent. */
static void credit_in(struct dn2fi_rdm *r, struct rdm_peer *p, uint32_t ack)
{
    int64_t d;

    if (!p || !p->dest) {
        return;     /* we never sent to it */
    }
    d = dn2fi_win_credit(p->sent_e, p->acked_e, ack);
    if (d < 0) {
        if (!r->bogus_credits++) {
            DN2FI_WARN(FI_LOG_EP_DATA, "LID %u WID %u: credit %u outside %u..%u ignored\n",
                       p->lid, p->wid, ack, p->acked_e, p->sent_e);
        }
        return;
    }
    while (d--) {
        uint32_t v = p->sz[p->acked_e++ % DN2_LHB_ENTRIES];
        if (v & RDM_SZ_LLCM) {
            p->acked_l += v & ~RDM_SZ_LLCM;
        } else {
            p->acked_b += v;
        }
    }
}

/* A new process on p's {LID, WID}: what we had in flight to its
 * predecessor is gone (or taken uncounted); start its window afresh. */
static void hello_in(struct dn2fi_ep *ep, struct rdm_peer *p);

/* Queue a hello for every endpoint of the rank table but us (once). */
static void hello_queue(struct dn2fi_ep *ep)
{
    struct dn2fi_rdm *r = ep->rdm;
    uint32_t i;

    r->hello_queued = 1;
    for (i = 0; i < r->ntable; i++) {
        struct rdm_peer *p;
        if (r->table[i].lid == ep->lid && r->table[i].wid == ep->wid) {
            continue;
        }
        p = peer_get(r, r->table[i].lid, r->table[i].wid, 1);
        if (p && !p->hello_due) {
            p->hello_due = 1;
            r->hellos++;
            ctl_queue(r, p);
        }
    }
}

/* Send the hellos and credits owed (credits: cumulative, half a share
 * taken since the last one). */
static void send_ctl(struct dn2fi_ep *ep)
{
    struct dn2fi_rdm *r = ep->rdm;
    unsigned rank = (unsigned)((ep->wid << 12) | dn2_lid_to_clid(ep->lid));
    uint32_t i, keep = 0;

    for (i = 0; i < r->nctl; i++) {
        struct rdm_peer *p = &r->peer[r->ctl[i]];
        int busy = 0, ret;
        if (p->hello_due) {
            ret = dn2fi_xmit(ep, p->lid, p->wid, dn2_envelope(DN2FI_CTX_RDM_HELLO, rank, 0),
                             NULL, 0, 0);
            if (ret == -FI_EAGAIN) {
                busy = 1;
            } else {
                if (ret) {
                    DN2FI_WARN(FI_LOG_EP_DATA, "hello to LID %u WID %u: %d\n", p->lid,
                               p->wid, ret);
                }
                p->hello_due = 0;
                r->hellos--;
            }
        }
        if (!busy && p->credit_due) {
            ret = dn2fi_xmit(ep, p->lid, p->wid,
                             dn2_envelope(DN2FI_CTX_RDM_CREDIT, rank, p->took_e), NULL, 0, 0);
            if (ret == -FI_EAGAIN) {
                busy = 1;
            } else {
                p->credit_due = 0;
                p->told_e = p->took_e;
                p->took_b = 0;
            }
        }
        if (busy) {
            /* the board is busy: these and the rest at the next progress */
            memmove(r->ctl + keep, r->ctl + i, (r->nctl - i) * sizeof(*r->ctl));
            keep += r->nctl - i;
            break;
        }
        p->ctl_due = 0;
    }
    r->nctl = keep;
}

/* ------------------------------------------------------------ receive */

static struct rdm_msg *inprog_find(struct dn2fi_rdm *r, uint16_t lid, int wid)
{
    struct rdm_msg *m;

    for (m = r->inprog; m; m = m->pnext) {
        if (m->lid == lid && m->wid == wid) {
            return m;
        }
    }
    return NULL;
}

/* Room for an unexpected message's bytes up to need: the buffer grows as
 * the data arrives (doubling, at most the message's length), so a length
 * no memory can hold fails only once its bytes have come. */
static int ux_reserve(struct rdm_msg *m, size_t need)
{
    size_t n;
    uint8_t *b;

    if (need <= m->cap) {
        return 0;
    }
    n = m->cap ? 2 * m->cap : 4096;
    if (n < need) {
        n = need;
    }
    if (n > m->len) {
        n = m->len;
    }
    b = realloc(m->buf, n);
    if (!b) {
        return -FI_ENOMEM;
    }
    m->buf = b;
    m->cap = n;
    return 0;
}

/* Bytes of datagram lm (from datagram offset at, n of them) belong to
 * message m at its offset m->got. */
static int msg_take(struct dn2fi_ep *ep, struct rdm_msg *m, const struct rdm_src *src,
                    size_t at, size_t n)
{
    int r = 0;

    if (n > m->len - m->got) {
        n = m->len - m->got;
    }
    if (m->err || !n) {
        /* failed: its bytes are taken off the board and dropped */
    } else if (m->on_ux || m->buf) {
        if (ux_reserve(m, m->got + n)) {
            DN2FI_WARN(FI_LOG_EP_DATA, "LID %u WID %u: no memory for an unexpected message "
                       "of %zu bytes: it fails\n", m->lid, m->wid, m->len);
            m->err = FI_ENOMEM;
            free(m->buf);
            m->buf = NULL;
            m->cap = 0;
        } else {
            r = src_read(ep, src, at, m->buf + m->got, n);
        }
    } else if (m->rx && m->got < m->rx->cap) {
        size_t k = m->rx->cap - m->got < n ? m->rx->cap - m->got : n;
        r = rx_take(ep, m->rx, m->got, src, at, k);
    }
    m->got += n;
    return r;
}

/* The first datagram of a message (l: its bytes are in our LLCM). */
static void rx_first(struct dn2fi_ep *ep, const struct dn2_lh_msg *lm, uint16_t lid, int wid,
                     const struct dn2fi_llcm_desc *l)
{
    struct rdm_src src = { lm, l };
    struct dn2fi_rdm *r = ep->rdm;
    struct dn2fi_rdm_hdr h;
    struct rdm_msg *m, *old;
    struct rdm_rx **pp;
    unsigned flags = (lm->context >> DN2FI_RDM_F_SHIFT) & 3u;
    int err;

    if (lm->size < DN2FI_RDM_HDR) {
        DN2FI_WARN(FI_LOG_EP_DATA, "short RDM datagram (%u bytes) from LID %u\n",
                   lm->size, lid);
        return;
    }
    memcpy(&h, lm->data, sizeof(h));
    if ((old = inprog_find(r, lid, wid))) {
        /* the sender began anew (it died mid-message): end the old one */
        DN2FI_WARN(FI_LOG_EP_DATA, "LID %u WID %d: message cut short\n", lid, wid);
        old->len = old->got;
        msg_done(ep, old, FI_EIO);
    }
    m = calloc(1, sizeof(*m));
    if (!m) {
        /* taken off the board all the same (its next datagrams are
         * strays): the board never holds a sender for our memory */
        DN2FI_WARN(FI_LOG_EP_DATA, "LID %u WID %d: no memory, message dropped\n", lid, wid);
        return;
    }
    m->lid = lid;
    m->wid = (uint8_t)wid;
    m->tagged = !!(flags & DN2FI_RDM_F_TAGGED);
    m->has_data = !!(flags & DN2FI_RDM_F_DATA);
    m->tag = h.tag;
    m->data = h.data;
    m->len = h.len;
    if (m->len > DN2FI_RDM_MAX_MSG) {
        /* no sender of ours sends it: the message fails, its datagrams
         * are taken and dropped */
        DN2FI_WARN(FI_LOG_EP_DATA, "LID %u WID %d: message of %zu bytes (over %u) fails\n",
                   lid, wid, m->len, DN2FI_RDM_MAX_MSG);
        m->err = FI_EMSGSIZE;
    }
    for (pp = &r->posted; *pp; pp = &(*pp)->next) {
        if (rx_matches(*pp, m)) {
            m->rx = *pp;
            *pp = m->rx->next;
            if (r->posted_tail == &m->rx->next) {
                r->posted_tail = pp;
            }
            r->n_posted--;
            break;
        }
    }
    if (m->rx && m->err) {
        /* the receive completes in error now; the message stays in
         * progress only to take its datagrams */
        rx_complete(ep, m->rx, m, m->err);
        m->rx = NULL;
        m->discard = 1;
    } else if (!m->rx) {
        m->on_ux = 1;
        *r->ux_tail = m;
        r->ux_tail = &m->next;
    }
    m->pnext = r->inprog;
    r->inprog = m;
    err = l ? msg_take(ep, m, &src, 0, (size_t)l->len[0] + l->len[1])
            : msg_take(ep, m, &src, DN2FI_RDM_HDR, lm->size - DN2FI_RDM_HDR);
    if (err || m->got >= m->len) {
        msg_done(ep, m, err ? FI_EIO : 0);
    }
}

static void rx_next(struct dn2fi_ep *ep, const struct dn2_lh_msg *lm, uint16_t lid, int wid,
                    const struct dn2fi_llcm_desc *l)
{
    struct rdm_msg *m = inprog_find(ep->rdm, lid, wid);
    struct rdm_src src = { lm, l };
    int err;

    if (!m) {
        DN2FI_WARN(FI_LOG_EP_DATA, "LID %u WID %d: data of no message dropped\n", lid, wid);
        return;
    }
    err = l ? msg_take(ep, m, &src, 0, (size_t)l->len[0] + l->len[1])
            : msg_take(ep, m, &src, 0, lm->size);
    if (err || m->got >= m->len) {
        msg_done(ep, m, err ? FI_EIO : 0);
    }
}

static void hello_in(struct dn2fi_ep *ep, struct rdm_peer *p)
{
    struct rdm_msg *old = inprog_find(ep->rdm, p->lid, p->wid);

    if (old) {
        DN2FI_WARN(FI_LOG_EP_DATA, "LID %u WID %u: a new process; its predecessor's "
                   "message cut short\n", p->lid, p->wid);
        old->len = old->got;
        msg_done(ep, old, FI_EIO);
    }
    if (p->dest) {
        p->acked_e = p->sent_e;
        p->acked_b = p->sent_b;
        p->acked_l = p->sent_l;
    }
    p->rx_seen = 0;
    p->took_b = 0;
}

/* An LLCM datagram's pieces lie within the area senders share. */
static int llcm_desc_ok(const struct dn2fi_llcm_desc *l)
{
    return dn2fi_llcm_piece_ok(l->off[0], l->len[0], DN2FI_LLCM_BULK, DN2FI_LLCM_BULK_END) &&
           dn2fi_llcm_piece_ok(l->off[1], l->len[1], DN2FI_LLCM_BULK, DN2FI_LLCM_BULK_END);
}

/* Room in the CQ for what a datagram may complete. */
static int cq_room(struct dn2fi_cq *cq)
{
    return cq->count + 2 <= cq->size;
}

static void rdm_progress_rx(struct dn2fi_ep *ep)
{
    struct dn2fi_rdm *r = ep->rdm;

    while (cq_room(ep->rxcq)) {
        struct dn2_lh_msg lm;
        struct rdm_peer *p;
        unsigned ctx;
        uint16_t lid;
        int wid, ret;

        if (!dn2_lh_ready(ep->d)) {
            return;
        }
        uint64_t t0 = ep->stats ? dn2fi_ns() : 0;
        ret = dn2_lh_next(ep->d, &lm, 0);
        if (ret <= 0 || !lm.complete) {
            return;     /* the rest of it is still arriving */
        }
        ep->rx_dgrams++;
        ctx = lm.context & DN2FI_CTX_MASK;
        lid = dn2_clid_to_lid((uint16_t)(lm.rank & 0xfffu));
        wid = (int)((lm.rank >> 12) & 1u);
        /* every datagram is taken off the board whatever it holds: the
         * board never keeps one for us */
        if (lm.size > DN2FI_DGRAM_BIG) {
            DN2FI_WARN(FI_LOG_EP_DATA, "datagram of %u bytes from LID %u dropped\n",
                       lm.size, lid);
        } else if (ctx == DN2FI_CTX_RDM_CREDIT) {
            credit_in(r, peer_get(r, lid, wid, 0), lm.tag);
        } else if (ctx == DN2FI_CTX_RDM_HELLO) {
            if ((p = peer_get(r, lid, wid, 1))) {
                hello_in(ep, p);
            }
        } else if (ctx == DN2FI_CTX_RDM_FIRST) {
            rx_first(ep, &lm, lid, wid, NULL);
        } else if (ctx == DN2FI_CTX_RDM_NEXT) {
            rx_next(ep, &lm, lid, wid, NULL);
        } else if (ctx == DN2FI_CTX_RDM_LFIRST || ctx == DN2FI_CTX_RDM_LNEXT) {
            struct dn2fi_llcm_desc l;
            size_t at = ctx == DN2FI_CTX_RDM_LFIRST ? DN2FI_RDM_HDR : 0;
            if (lm.size != at + DN2FI_LLCM_DESC ||
                (memcpy(&l, lm.data + at, sizeof(l)), !llcm_desc_ok(&l))) {
                struct rdm_msg *old = inprog_find(r, lid, wid);
                if (!r->bad_llcm++) {
                    DN2FI_WARN(FI_LOG_EP_DATA, "LID %u WID %d: LLCM datagram outside the "
                               "share area dropped\n", lid, wid);
                }
                if (old) {
                    old->len = old->got;
                    msg_done(ep, old, FI_EIO);
                }
            } else if (ctx == DN2FI_CTX_RDM_LFIRST) {
                rx_first(ep, &lm, lid, wid, &l);
            } else {
                rx_next(ep, &lm, lid, wid, &l);
            }
        } else {
            DN2FI_INFO(FI_LOG_EP_DATA, "datagram with context 0x%x from LID %u dropped\n",
                       ctx, lid);
        }
        if (lm.size > DN2_LHB_DATA) {
            dn2_ring_consume(ep->d, &ep->ring, lm.size - DN2_LHB_DATA);
        }
        dn2_lh_release(ep->d);
        if ((ctx == DN2FI_CTX_RDM_FIRST || ctx == DN2FI_CTX_RDM_NEXT ||
             ctx == DN2FI_CTX_RDM_LFIRST || ctx == DN2FI_CTX_RDM_LNEXT) &&
            (p = peer_get(r, lid, wid, 1))) {
            took_one(r, p, lm.tag, lm.size,
                     ctx == DN2FI_CTX_RDM_LFIRST || ctx == DN2FI_CTX_RDM_LNEXT);
        }
        if (ep->stats) {
            ep->ns_lhb += dn2fi_ns() - t0;     /* includes the ring copy */
        }
    }
}

/* ----------------------------------------------------------- transmit */

/* Room in p's LLCM share (and an LH entry) for t's next chunk. */
static int llcm_room(struct dn2fi_rdm *r, struct rdm_peer *p, struct rdm_tx *t)
{
    size_t left = t->len - t->sent;
    uint32_t c = left < p->l_chunk ? (uint32_t)left : p->l_chunk;

    return dn2fi_win_used(p->sent_e, p->acked_e) < r->win_e &&
           p->sent_l - p->acked_l + c <= p->l_share;
}

/* Send t's next LLCM chunk to p: open it (credit for an LH entry and for
 * the chunk's bytes in our share of p's LLCM), issue its BOTF images (as
 * many as the Write Windows let through; the rest at the next progress
 * pass), then the LHSv2 that says where they are.  The images and the
 * LHSv2 travel in the same lane to the same process, so the data is in
 * p's LLCM before the LH Buffer entry shows.  0: the chunk is sent
 * (t->sent advanced); -FI_EAGAIN: later; else the send fails. */
static int llcm_step(struct dn2fi_ep *ep, struct dn2fi_rdm *r, struct rdm_peer *p,
                     struct rdm_tx *t, unsigned rank)
{
    struct dn2fi_rdm_hdr h;
    struct dn2fi_llcm_desc d;
    struct iovec v[2];
    size_t nv = 0;
    uint64_t env;
    uint32_t n0;
    int first = t->sent == 0, ret;

    if (!t->l_len) {
        size_t left = t->len - t->sent;
        uint32_t c = left < p->l_chunk ? (uint32_t)left : p->l_chunk;
        if (!llcm_room(r, p, t)) {
            ep->busy_credit++;
            return -FI_EAGAIN;  /* the receiver's share is in use: its credits come */
        }
        t->l_len = c;
        t->l_done = 0;
        t->l_pos = (uint32_t)(p->sent_l % p->l_share);
    }
    while (t->l_done < t->l_len) {
        uint32_t pos = (t->l_pos + t->l_done) % p->l_share;
        /* where the share wraps, a shorter image */
        uint32_t n = dn2fi_llcm_image(p->l_share, pos, t->l_len - t->l_done, DN2FI_BOTF_DATA);
        ret = dn2fi_botf_llcm(ep, t->lid, t->wid, p->l_off + pos, t->iov, t->iov_count,
                              t->sent + t->l_done, n);
        if (ret) {
            return ret;
        }
        t->l_done += n;
    }
    n0 = p->l_share - t->l_pos < t->l_len ? p->l_share - t->l_pos : t->l_len;
    d.off[0] = p->l_off + t->l_pos;
    d.len[0] = n0;
    d.off[1] = p->l_off;
    d.len[1] = t->l_len - n0;
    if (first) {
        h.tag = t->tag;
        h.len = (uint32_t)t->len;
        h.data = t->data;
        v[nv].iov_base = &h;
        v[nv++].iov_len = sizeof(h);
        env = dn2_envelope(DN2FI_CTX_RDM_LFIRST |
                           ((t->tagged ? DN2FI_RDM_F_TAGGED : 0u) |
                            (t->has_data ? DN2FI_RDM_F_DATA : 0u)) << DN2FI_RDM_F_SHIFT,
                           rank, p->sent_e);
    } else {
        env = dn2_envelope(DN2FI_CTX_RDM_LNEXT, rank, p->sent_e);
    }
    v[nv].iov_base = &d;
    v[nv++].iov_len = sizeof(d);
    ret = dn2fi_xmit(ep, t->lid, t->wid, env, v, nv, iov_total(v, nv));
    if (ret) {
        return ret;
    }
    p->sz[p->sent_e++ % DN2_LHB_ENTRIES] = RDM_SZ_LLCM | t->l_len;
    p->sent_l += t->l_len;
    t->sent += t->l_len;
    t->l_len = 0;
    return 0;
}

static void rdm_progress_tx(struct dn2fi_ep *ep)
{
    struct dn2fi_rdm *r = ep->rdm;
    unsigned rank = (unsigned)((ep->wid << 12) | dn2_lid_to_clid(ep->lid));

    if (r->hellos) {
        return;     /* no data before our hellos: they end a predecessor's message */
    }
    while (r->txq) {
        struct rdm_tx *t = r->txq;
        struct iovec v[DN2FI_IOV_LIMIT + 1];
        struct dn2fi_rdm_hdr h;
        size_t nv = 0, room, left, off, base, i;
        uint64_t env;
        int first = t->sent == 0, ret;
        struct rdm_peer *p = dest_get(r, t->lid, t->wid);

        if (t->want_comp && dn2fi_cq_full(ep->txcq)) {
            return;
        }
        if (!p) {
            /* no slot (rdm_send checked; only out of memory): fails */
            ret = -FI_ENOSPC;
            off = 0;
            goto failed;
        }
        if (p->l_share && (t->l_len || t->len - t->sent > DN2_LHB_DATA -
                                                   (first ? DN2FI_RDM_HDR : 0)) &&
            (t->l_len || !r->mixed || llcm_room(r, p, t))) {
            /* more than the LH Buffer entry holds: BOTF into its LLCM */
            ret = llcm_step(ep, r, p, t, rank);
            if (ret == -FI_EAGAIN) {
                return;
            }
            off = t->sent;
            goto failed;
        }
        if (first) {
            h.tag = t->tag;
            h.len = (uint32_t)t->len;
            h.data = t->data;
            v[nv].iov_base = &h;
            v[nv++].iov_len = sizeof(h);
            room = r->dgram_max - DN2FI_RDM_HDR;
            env = dn2_envelope(DN2FI_CTX_RDM_FIRST |
                               ((t->tagged ? DN2FI_RDM_F_TAGGED : 0u) |
                                (t->has_data ? DN2FI_RDM_F_DATA : 0u)) << DN2FI_RDM_F_SHIFT,
                               rank, p->sent_e);
        } else {
            room = r->dgram_max;
            env = dn2_envelope(DN2FI_CTX_RDM_NEXT, rank, p->sent_e);
        }
        left = t->len - t->sent;
        if (left > room) {
            left = room;
        }
        /* the slice [sent, sent + left) of the iovs */
        for (i = 0, base = 0, off = t->sent; i < t->iov_count && left; i++) {
            size_t l = t->iov[i].iov_len;
            if (off < base + l) {
                size_t in = off - base, k = l - in < left ? l - in : left;
                v[nv].iov_base = (uint8_t *)t->iov[i].iov_base + in;
                v[nv++].iov_len = k;
                off += k;
                left -= k;
            }
            base += l;
        }
        {
            size_t dl = iov_total(v, nv);
            if (dn2fi_win_used(p->sent_e, p->acked_e) >= r->win_e ||
                p->sent_b - p->acked_b + ring_bytes(dl) > r->win_b) {
                ep->busy_credit++;
                return;     /* the receiver's share is in use: its credits come */
            }
            ret = dn2fi_xmit(ep, t->lid, t->wid, env, v, nv, dl);
            if (ret == -FI_EAGAIN) {
                return;
            }
            if (!ret) {
                p->sz[p->sent_e++ % DN2_LHB_ENTRIES] = (uint32_t)ring_bytes(dl);
                p->sent_b += ring_bytes(dl);
            }
        }
failed:
        if (ret) {
            /* the board refused it: the send fails, the next goes on */
            r->txq = t->next;
            if (!r->txq) {
                r->txq_tail = &r->txq;
            }
            r->n_tx--;
            if (!t->want_comp) {
                DN2FI_WARN(FI_LOG_EP_DATA, "send to LID %u failed: %d\n", t->lid, ret);
            } else {
                dn2fi_cq_write_err_tag(ep->txcq, t->context, FI_SEND | op_flag(t->tagged),
                                       t->len, NULL, 0, t->tag, -ret, 0);
            }
            free(t);
            continue;
        }
        t->sent = off;
        if (first && t->len == 0) {
            t->sent = 0;
        }
        if (t->sent >= t->len) {
            r->txq = t->next;
            if (!r->txq) {
                r->txq_tail = &r->txq;
            }
            r->n_tx--;
            /* every byte is on the board, which delivers it reliably:
             * the buffer may be reused */
            if (t->want_comp) {
                dn2fi_cq_write_tag(ep->txcq, t->context, FI_SEND | op_flag(t->tagged),
                                   t->len, NULL, 0, t->tag, FI_ADDR_NOTAVAIL);
            }
            free(t);
        }
    }
}

static void rdm_progress(struct dn2fi_ep *ep)
{
    struct dn2fi_rdm *r = ep->rdm;

    if (r->in_progress) {
        return;
    }
    ep->progress_calls++;
    r->in_progress = 1;
    if (!r->hello_queued) {
        hello_queue(ep);
    }
    rdm_progress_rx(ep);
    send_ctl(ep);
    rdm_progress_tx(ep);
    rdm_progress_rx(ep);
    r->in_progress = 0;
}

static ssize_t rdm_send(struct dn2fi_ep *ep, const struct iovec *iov, size_t count,
                        fi_addr_t dest, void *context, uint64_t data, uint64_t tag,
                        int tagged, uint64_t flags)
{
    struct dn2fi_rdm *r = ep->rdm;
    const struct dn2fi_addr *a;
    struct rdm_tx *t;
    size_t len, i;
    ssize_t ret = dn2fi_send_check(iov, count, flags, DN2FI_RDM_MAX_MSG, DN2FI_RDM_INJECT, &len);

    if (ret) {
        return ret;
    }
    pthread_mutex_lock(&ep->dom->lock);
    if (!ep->enabled) {
        ret = -FI_EOPBADSTATE;
        goto out;
    }
    if (!(ep->caps & (tagged ? FI_TAGGED : FI_MSG))) {
        ret = -FI_EOPNOTSUPP;
        goto out;
    }
    a = dn2fi_av_get(ep->av, dest);
    if (!a) {
        DN2FI_INFO(FI_LOG_EP_DATA, "destination %llu is not in the AV\n",
                   (unsigned long long)dest);
        ret = -FI_EADDRNOTAVAIL;
        goto out;
    }
    if (!dest_get(r, a->lid, a->wid)) {
        /* beyond the table: never sent without flow control */
        ret = -FI_ENOSPC;
        goto out;
    }
    if (r->n_tx >= RDM_QUEUE) {
        rdm_progress(ep);
        ret = -FI_EAGAIN;
        goto out;
    }
    t = calloc(1, sizeof(*t) + ((flags & FI_INJECT) ? len : 0));
    if (!t) {
        ret = -FI_ENOMEM;
        goto out;
    }
    if (flags & FI_INJECT) {
        size_t off = 0;
        for (i = 0; i < count; i++) {
            memcpy(t->inline_buf + off, iov[i].iov_base, iov[i].iov_len);
            off += iov[i].iov_len;
        }
        t->iov[0].iov_base = t->inline_buf;
        t->iov[0].iov_len = len;
        t->iov_count = 1;
    } else {
        for (i = 0; i < count; i++) {
            t->iov[i] = iov[i];
        }
        t->iov_count = count;
    }
    t->len = len;
    t->lid = a->lid;
    t->wid = a->wid;
    t->tagged = tagged;
    t->has_data = !!(flags & FI_REMOTE_CQ_DATA);
    t->tag = tag;
    t->data = (uint32_t)data;
    t->context = context;
    t->want_comp = !(flags & FI_INJECT) && (!ep->tx_selective || (flags & FI_COMPLETION));
    *r->txq_tail = t;
    r->txq_tail = &t->next;
    r->n_tx++;
    rdm_progress(ep);
out:
    pthread_mutex_unlock(&ep->dom->lock);
    return ret;
}

/* Resolve a receive's source for FI_DIRECTED_RECV. */
static int rx_source(struct dn2fi_ep *ep, struct rdm_rx *rx, fi_addr_t src)
{
    const struct dn2fi_addr *a;

    rx->directed = 0;
    if (src == FI_ADDR_UNSPEC || !(ep->caps & FI_DIRECTED_RECV)) {
        return 0;
    }
    a = dn2fi_av_get(ep->av, src);
    if (!a) {
        return -FI_EADDRNOTAVAIL;
    }
    rx->directed = 1;
    rx->lid = a->lid;
    rx->wid = a->wid;
    return 0;
}

/* A receive meets an unexpected message m (taken off the queue). */
static void rx_meets(struct dn2fi_ep *ep, struct rdm_rx *rx, struct rdm_msg *m)
{
    ux_remove(ep->rdm, m);
    m->claimed = 0;
    if (m->err) {
        /* it failed (too long, no memory): the receive completes in error
         * now, the rest of the message is dropped as it comes */
        rx_complete(ep, rx, m, m->err);
        if (m->got >= m->len) {
            free(m->buf);
            free(m);
        } else {
            m->discard = 1;
        }
        return;
    }
    m->rx = rx;
    if (m->got >= m->len) {
        if (m->buf) {
            rx_scatter(rx, 0, m->buf, m->len);
        }
        rx_complete(ep, rx, m, 0);
        free(m->buf);
        free(m);
    }
    /* else: still arriving; msg_done delivers it */
}

static struct rdm_msg *ux_match(struct dn2fi_rdm *r, const struct rdm_rx *rx)
{
    struct rdm_msg *m;

    for (m = r->ux; m; m = m->next) {
        if (!m->claimed && !m->discard && rx_matches(rx, m)) {
            return m;
        }
    }
    return NULL;
}

static ssize_t rdm_recv(struct dn2fi_ep *ep, const struct iovec *iov, size_t count,
                        fi_addr_t src, void *context, uint64_t tag, uint64_t ignore,
                        int tagged, uint64_t flags)
{
    struct dn2fi_rdm *r = ep->rdm;
    struct rdm_rx *rx;
    struct rdm_msg *m;
    size_t i;
    ssize_t ret = 0;

    if (count > DN2FI_IOV_LIMIT || (count && !iov)) {
        return -FI_EINVAL;
    }
    pthread_mutex_lock(&ep->dom->lock);
    if (!ep->enabled) {
        ret = -FI_EOPBADSTATE;
        goto out;
    }
    if (!(ep->caps & (tagged ? FI_TAGGED : FI_MSG))) {
        ret = -FI_EOPNOTSUPP;
        goto out;
    }
    if (r->n_posted >= RDM_QUEUE && !(flags & (FI_PEEK | FI_CLAIM))) {
        rdm_progress(ep);
        ret = -FI_EAGAIN;
        goto out;
    }
    if (dn2fi_cq_full(ep->rxcq)) {
        rdm_progress(ep);
        ret = -FI_EAGAIN;
        goto out;
    }
    rx = calloc(1, sizeof(*rx));
    if (!rx) {
        ret = -FI_ENOMEM;
        goto out;
    }
    for (i = 0; i < count; i++) {
        rx->iov[i] = iov[i];
    }
    rx->iov_count = count;
    rx->cap = iov_total(iov, count);
    rx->tagged = tagged;
    rx->tag = tag;
    rx->ignore = ignore;
    rx->context = context;
    rx->flags = flags;
    if ((ret = rx_source(ep, rx, src))) {
        free(rx);
        goto out;
    }

    if (flags & FI_PEEK) {
        /* look at what has arrived (progress first), take nothing */
        rdm_progress(ep);
        m = ux_match(r, rx);
        if (!m) {
            dn2fi_cq_write_err_tag(ep->rxcq, context, FI_RECV | op_flag(tagged), 0, NULL,
                                   0, tag, FI_ENOMSG, 0);
        } else if (flags & FI_DISCARD) {
            dn2fi_cq_write_tag(ep->rxcq, context, FI_RECV | op_flag(tagged) |
                               (m->has_data ? FI_REMOTE_CQ_DATA : 0), m->len, NULL,
                               m->data, m->tag, src_addr(ep, m->lid, m->wid));
            m->discard = 1;
            if (m->got >= m->len) {
                ux_remove(r, m);
                free(m->buf);
                free(m);
            }
        } else {
            dn2fi_cq_write_tag(ep->rxcq, context, FI_RECV | op_flag(tagged) |
                               (m->has_data ? FI_REMOTE_CQ_DATA : 0), m->len, NULL,
                               m->data, m->tag, src_addr(ep, m->lid, m->wid));
            if (flags & FI_CLAIM) {
                m->claimed = 1;
                m->claim_ctx = context;
            }
        }
        free(rx);
        goto out;
    }
    if (flags & FI_CLAIM) {
        /* the message an earlier FI_PEEK | FI_CLAIM with this context took */
        for (m = r->ux; m; m = m->next) {
            if (m->claimed && m->claim_ctx == context) {
                break;
            }
        }
        if (!m) {
            free(rx);
            ret = -FI_ENOMSG;
            goto out;
        }
        if (flags & FI_DISCARD) {
            m->discard = 1;
            m->claimed = 0;
            dn2fi_cq_write_tag(ep->rxcq, context, FI_RECV | op_flag(tagged), 0, NULL,
                               m->data, m->tag, FI_ADDR_NOTAVAIL);
            if (m->got >= m->len) {
                ux_remove(r, m);
                free(m->buf);
                free(m);
            }
            free(rx);
        } else {
            rx_meets(ep, rx, m);
        }
        goto out;
    }
    m = ux_match(r, rx);
    if (m) {
        rx_meets(ep, rx, m);
    } else {
        *r->posted_tail = rx;
        r->posted_tail = &rx->next;
        r->n_posted++;
        rdm_progress(ep);
    }
out:
    pthread_mutex_unlock(&ep->dom->lock);
    return ret;
}

static ssize_t rdm_cancel(struct dn2fi_ep *ep, void *context)
{
    struct dn2fi_rdm *r = ep->rdm;
    struct rdm_rx **pp;

    for (pp = &r->posted; *pp; pp = &(*pp)->next) {
        struct rdm_rx *rx = *pp;
        if (rx->context == context) {
            *pp = rx->next;
            if (r->posted_tail == &rx->next) {
                r->posted_tail = pp;
            }
            r->n_posted--;
            dn2fi_cq_write_err_tag(ep->rxcq, context, FI_RECV | op_flag(rx->tagged), 0,
                                   NULL, 0, rx->tag, FI_ECANCELED, 0);
            free(rx);
            return 0;
        }
    }
    return -FI_ENOENT;
}

static ssize_t rdm_tx_left(struct dn2fi_ep *ep)
{
    return (ssize_t)(RDM_QUEUE - ep->rdm->n_tx);
}

static ssize_t rdm_rx_left(struct dn2fi_ep *ep)
{
    return (ssize_t)(RDM_QUEUE - ep->rdm->n_posted);
}

/* ------------------------------------------------------ operations */

#define TX_FLAGS (FI_COMPLETION | FI_INJECT | FI_INJECT_COMPLETE | FI_TRANSMIT_COMPLETE | \
                  FI_DELIVERY_COMPLETE | FI_REMOTE_CQ_DATA | FI_MORE | FI_MSG | FI_TAGGED | \
                  FI_SEND | FI_FENCE)
#define RX_FLAGS (FI_COMPLETION | FI_MORE | FI_MSG | FI_TAGGED | FI_RECV | FI_PEEK | \
                  FI_CLAIM | FI_DISCARD | FI_REMOTE_CQ_DATA)

static ssize_t m_recv(struct fid_ep *fid, void *buf, size_t len, void *desc,
                      fi_addr_t src, void *context)
{
    struct iovec v = { buf, len };

    (void)desc;
    return rdm_recv(ep_of(fid), &v, 1, src, context, 0, 0, 0, ep_of(fid)->rx_op_flags);
}

static ssize_t m_recvv(struct fid_ep *fid, const struct iovec *iov, void **desc,
                       size_t count, fi_addr_t src, void *context)
{
    (void)desc;
    return rdm_recv(ep_of(fid), iov, count, src, context, 0, 0, 0, ep_of(fid)->rx_op_flags);
}

static ssize_t m_recvmsg(struct fid_ep *fid, const struct fi_msg *msg, uint64_t flags)
{
    if (flags & ~RX_FLAGS || (flags & (FI_PEEK | FI_CLAIM | FI_DISCARD))) {
        return -FI_EBADFLAGS;
    }
    return rdm_recv(ep_of(fid), msg->msg_iov, msg->iov_count, msg->addr, msg->context,
                    0, 0, 0, flags);
}

static ssize_t m_send(struct fid_ep *fid, const void *buf, size_t len, void *desc,
                      fi_addr_t dest, void *context)
{
    struct iovec v = { (void *)buf, len };

    (void)desc;
    return rdm_send(ep_of(fid), &v, 1, dest, context, 0, 0, 0, ep_of(fid)->tx_op_flags);
}

static ssize_t m_sendv(struct fid_ep *fid, const struct iovec *iov, void **desc,
                       size_t count, fi_addr_t dest, void *context)
{
    (void)desc;
    return rdm_send(ep_of(fid), iov, count, dest, context, 0, 0, 0, ep_of(fid)->tx_op_flags);
}

static ssize_t m_sendmsg(struct fid_ep *fid, const struct fi_msg *msg, uint64_t flags)
{
    if (flags & ~TX_FLAGS) {
        return -FI_EBADFLAGS;
    }
    return rdm_send(ep_of(fid), msg->msg_iov, msg->iov_count, msg->addr, msg->context,
                    msg->data, 0, 0, flags);
}

static ssize_t m_inject(struct fid_ep *fid, const void *buf, size_t len, fi_addr_t dest)
{
    struct iovec v = { (void *)buf, len };

    return rdm_send(ep_of(fid), &v, 1, dest, NULL, 0, 0, 0, FI_INJECT);
}

static ssize_t m_senddata(struct fid_ep *fid, const void *buf, size_t len, void *desc,
                          uint64_t data, fi_addr_t dest, void *context)
{
    struct iovec v = { (void *)buf, len };

    (void)desc;
    return rdm_send(ep_of(fid), &v, 1, dest, context, data, 0, 0,
                    ep_of(fid)->tx_op_flags | FI_REMOTE_CQ_DATA);
}

static ssize_t m_injectdata(struct fid_ep *fid, const void *buf, size_t len,
                            uint64_t data, fi_addr_t dest)
{
    struct iovec v = { (void *)buf, len };

    return rdm_send(ep_of(fid), &v, 1, dest, NULL, data, 0, 0, FI_INJECT | FI_REMOTE_CQ_DATA);
}

static ssize_t t_recv(struct fid_ep *fid, void *buf, size_t len, void *desc,
                      fi_addr_t src, uint64_t tag, uint64_t ignore, void *context)
{
    struct iovec v = { buf, len };

    (void)desc;
    return rdm_recv(ep_of(fid), &v, 1, src, context, tag, ignore, 1, ep_of(fid)->rx_op_flags);
}

static ssize_t t_recvv(struct fid_ep *fid, const struct iovec *iov, void **desc,
                       size_t count, fi_addr_t src, uint64_t tag, uint64_t ignore,
                       void *context)
{
    (void)desc;
    return rdm_recv(ep_of(fid), iov, count, src, context, tag, ignore, 1,
                    ep_of(fid)->rx_op_flags);
}

static ssize_t t_recvmsg(struct fid_ep *fid, const struct fi_msg_tagged *msg, uint64_t flags)
{
    if (flags & ~RX_FLAGS) {
        return -FI_EBADFLAGS;
    }
    return rdm_recv(ep_of(fid), msg->msg_iov, msg->iov_count, msg->addr, msg->context,
                    msg->tag, msg->ignore, 1, flags);
}

static ssize_t t_send(struct fid_ep *fid, const void *buf, size_t len, void *desc,
                      fi_addr_t dest, uint64_t tag, void *context)
{
    struct iovec v = { (void *)buf, len };

    (void)desc;
    return rdm_send(ep_of(fid), &v, 1, dest, context, 0, tag, 1, ep_of(fid)->tx_op_flags);
}

static ssize_t t_sendv(struct fid_ep *fid, const struct iovec *iov, void **desc,
                       size_t count, fi_addr_t dest, uint64_t tag, void *context)
{
    (void)desc;
    return rdm_send(ep_of(fid), iov, count, dest, context, 0, tag, 1, ep_of(fid)->tx_op_flags);
}

static ssize_t t_sendmsg(struct fid_ep *fid, const struct fi_msg_tagged *msg, uint64_t flags)
{
    if (flags & ~TX_FLAGS) {
        return -FI_EBADFLAGS;
    }
    return rdm_send(ep_of(fid), msg->msg_iov, msg->iov_count, msg->addr, msg->context,
                    msg->data, msg->tag, 1, flags);
}

static ssize_t t_inject(struct fid_ep *fid, const void *buf, size_t len, fi_addr_t dest,
                        uint64_t tag)
{
    struct iovec v = { (void *)buf, len };

    return rdm_send(ep_of(fid), &v, 1, dest, NULL, 0, tag, 1, FI_INJECT);
}

static ssize_t t_senddata(struct fid_ep *fid, const void *buf, size_t len, void *desc,
                          uint64_t data, fi_addr_t dest, uint64_t tag, void *context)
{
    struct iovec v = { (void *)buf, len };

    (void)desc;
    return rdm_send(ep_of(fid), &v, 1, dest, context, data, tag, 1,
                    ep_of(fid)->tx_op_flags | FI_REMOTE_CQ_DATA);
}

static ssize_t t_injectdata(struct fid_ep *fid, const void *buf, size_t len,
                            uint64_t data, fi_addr_t dest, uint64_t tag)
{
    struct iovec v = { (void *)buf, len };

    return rdm_send(ep_of(fid), &v, 1, dest, NULL, data, tag, 1,
                    FI_INJECT | FI_REMOTE_CQ_DATA);
}

static const struct fi_ops_msg rdm_msg_ops = {
    .size = sizeof(struct fi_ops_msg),
    .recv = m_recv,
    .recvv = m_recvv,
    .recvmsg = m_recvmsg,
    .send = m_send,
    .sendv = m_sendv,
    .sendmsg = m_sendmsg,
    .inject = m_inject,
    .senddata = m_senddata,
    .injectdata = m_injectdata,
};

static const struct fi_ops_tagged rdm_tagged_ops = {
    .size = sizeof(struct fi_ops_tagged),
    .recv = t_recv,
    .recvv = t_recvv,
    .recvmsg = t_recvmsg,
    .send = t_send,
    .sendv = t_sendv,
    .sendmsg = t_sendmsg,
    .inject = t_inject,
    .senddata = t_senddata,
    .injectdata = t_injectdata,
};

/* What the endpoint object (dn2fi_ep.c) calls for an FI_EP_RDM endpoint. */
const struct dn2fi_rdm_ops dn2fi_rdm_ops = {
    .msg = (struct fi_ops_msg *)&rdm_msg_ops,
    .tagged = (struct fi_ops_tagged *)&rdm_tagged_ops,
    .open = rdm_open,
    .close = rdm_close,
    .add_dest = rdm_add_dest,
    .progress = rdm_progress,
    .cancel = rdm_cancel,
    .tx_left = rdm_tx_left,
    .rx_left = rdm_rx_left,
};
