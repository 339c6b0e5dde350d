/* SPDX-License-Identifier: MIT */
/*
 * libdimmnet2-fi: completion queue, address vector, the DGRAM endpoint
 * and the endpoint object and datagram engine both endpoint types share.
 * An FI_EP_RDM endpoint's own work is dn2fi_rdm.c's, above this file,
 * reached through struct dn2fi_rdm_ops (dn2fi.h).
 *
 * A datagram is one LHSv2 (thesis §7): the 8-byte envelope and the first
 * bytes straight from the Write Window, the rest (messages over 1015
 * bytes) staged in our SO-DIMM with VS first.  The receiving board puts
 * the envelope and 48 bytes into its LH Buffer (host-readable directly)
 * and the rest into the receiver's IPUSH ring in SO-DIMM, which the
 * receiver copies out through its Prefetch Windows.  The board refuses
 * (holds) packets while the LH Buffer or the ring is full, so nothing is
 * dropped once both ends are set up.
 */
#define _GNU_SOURCE
#include "dn2fi.h"
#include "dimmnet2/dn2_uapi.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define DN2FI_TMO_US 5000000L

/* The RDM endpoint (dn2fi_rdm.c, above this file), reached through the
 * table it fills: set by dn2fi_ep_ini. */
static const struct dn2fi_rdm_ops *rdm_ops;

static uint64_t now_us(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + ts.tv_nsec / 1000;
}

/* ================================================================= CQ */

int dn2fi_cq_full(struct dn2fi_cq *cq)
{
    return cq->count >= cq->size;
}

int dn2fi_cq_write(struct dn2fi_cq *cq, void *context, uint64_t flags,
                   size_t len, void *buf, uint64_t data, fi_addr_t src)
{
    return dn2fi_cq_write_tag(cq, context, flags, len, buf, data, 0, src);
}

int dn2fi_cq_write_tag(struct dn2fi_cq *cq, void *context, uint64_t flags,
                       size_t len, void *buf, uint64_t data, uint64_t tag,
                       fi_addr_t src)
{
    struct dn2fi_cq_entry *e;

    if (cq->count >= cq->size) {
        return -FI_EAGAIN;
    }
    e = &cq->ring[(cq->head + cq->count) % cq->size];
    e->e.op_context = context;
    e->e.flags = flags;
    e->e.len = len;
    e->e.buf = buf;
    e->e.data = data;
    e->e.tag = tag;
    e->src = src;
    cq->count++;
    return 0;
}

int dn2fi_cq_write_err(struct dn2fi_cq *cq, void *context, uint64_t flags,
                       size_t len, void *buf, uint64_t data, int err, size_t olen)
{
    return dn2fi_cq_write_err_tag(cq, context, flags, len, buf, data, 0, err, olen);
}

int dn2fi_cq_write_err_tag(struct dn2fi_cq *cq, void *context, uint64_t flags,
                           size_t len, void *buf, uint64_t data, uint64_t tag,
                           int err, size_t olen)
{
    struct fi_cq_err_entry *e;

    if (cq->err_count >= cq->err_size) {
        size_t n = cq->err_size ? cq->err_size * 2 : 16, i;
        struct fi_cq_err_entry *ne = calloc(n, sizeof(*ne));
        if (!ne) {
            return -FI_ENOMEM;
        }
        for (i = 0; i < cq->err_count; i++) {
            ne[i] = cq->errs[(cq->err_head + i) % cq->err_size];
        }
        free(cq->errs);
        cq->errs = ne;
        cq->err_size = n;
        cq->err_head = 0;
    }
    e = &cq->errs[(cq->err_head + cq->err_count) % cq->err_size];
    memset(e, 0, sizeof(*e));
    e->op_context = context;
    e->flags = flags;
    e->len = len;
    e->buf = buf;
    e->data = data;
    e->tag = tag;
    e->olen = olen;
    e->err = err;
    e->prov_errno = -err;
    cq->err_count++;
    return 0;
}

static void cq_progress(struct dn2fi_cq *cq)
{
    int i;

    for (i = 0; i < cq->neps; i++) {
        dn2fi_ep_progress(cq->eps[i]);
    }
}

static void cq_copy(struct dn2fi_cq *cq, void *buf, size_t i, const struct dn2fi_cq_entry *e)
{
    switch (cq->format) {
    case FI_CQ_FORMAT_CONTEXT: {
        struct fi_cq_entry *o = (struct fi_cq_entry *)buf + i;
        o->op_context = e->e.op_context;
        break;
    }
    case FI_CQ_FORMAT_MSG: {
        struct fi_cq_msg_entry *o = (struct fi_cq_msg_entry *)buf + i;
        o->op_context = e->e.op_context;
        o->flags = e->e.flags;
        o->len = e->e.len;
        break;
    }
    case FI_CQ_FORMAT_DATA: {
        struct fi_cq_data_entry *o = (struct fi_cq_data_entry *)buf + i;
        o->op_context = e->e.op_context;
        o->flags = e->e.flags;
        o->len = e->e.len;
        o->buf = e->e.buf;
        o->data = e->e.data;
        break;
    }
    default: {
        struct fi_cq_tagged_entry *o = (struct fi_cq_tagged_entry *)buf + i;
        *o = e->e;
        break;
    }
    }
}

static ssize_t cq_readfrom_locked(struct dn2fi_cq *cq, void *buf, size_t count,
                                  fi_addr_t *src)
{
    size_t i;

    cq_progress(cq);
    if (cq->err_count) {
        return -FI_EAVAIL;
    }
    if (!cq->count) {
        return -FI_EAGAIN;
    }
    for (i = 0; i < count && cq->count; i++) {
        const struct dn2fi_cq_entry *e = &cq->ring[cq->head];
        cq_copy(cq, buf, i, e);
        if (src) {
            src[i] = e->src;
        }
        cq->head = (cq->head + 1) % cq->size;
        cq->count--;
    }
    return (ssize_t)i;
}

static ssize_t cq_readfrom(struct fid_cq *fid, void *buf, size_t count, fi_addr_t *src)
{
    struct dn2fi_cq *cq = container_of(fid, struct dn2fi_cq, cq);
    ssize_t r;

    pthread_mutex_lock(&cq->dom->lock);
    r = cq_readfrom_locked(cq, buf, count, src);
    pthread_mutex_unlock(&cq->dom->lock);
    if (r == -FI_EAGAIN && cq->idle_us > 0) {
        /* Nothing arrived: let the vCPU halt a moment instead of spinning,
         * so that under emulation the host CPU goes to the QEMU threads
         * that move the board's packets (docs/ofi-provider.md). */
        struct timespec ts = { 0, cq->idle_us * 1000 };
        nanosleep(&ts, NULL);
    }
    return r;
}

static ssize_t cq_read(struct fid_cq *fid, void *buf, size_t count)
{
    return cq_readfrom(fid, buf, count, NULL);
}

static ssize_t cq_readerr(struct fid_cq *fid, struct fi_cq_err_entry *buf, uint64_t flags)
{
    struct dn2fi_cq *cq = container_of(fid, struct dn2fi_cq, cq);
    struct fi_cq_err_entry *e;
    void *err_data;
    size_t err_data_size;

    (void)flags;
    pthread_mutex_lock(&cq->dom->lock);
    if (!cq->err_count) {
        pthread_mutex_unlock(&cq->dom->lock);
        return -FI_EAGAIN;
    }
    e = &cq->errs[cq->err_head];
    err_data = buf->err_data;
    err_data_size = buf->err_data_size;
    *buf = *e;
    /* no provider error data: keep the caller's buffer, say it is empty */
    buf->err_data = err_data;
    buf->err_data_size = 0;
    (void)err_data_size;
    cq->err_head = (cq->err_head + 1) % cq->err_size;
    cq->err_count--;
    pthread_mutex_unlock(&cq->dom->lock);
    return 1;
}

static ssize_t cq_sreadfrom(struct fid_cq *fid, void *buf, size_t count,
                            fi_addr_t *src, const void *cond, int timeout)
{
    uint64_t t0 = now_us();
    ssize_t r;

    (void)cond;
    for (;;) {
        r = cq_readfrom(fid, buf, count, src);
        if (r != -FI_EAGAIN) {
            return r;
        }
        if (timeout >= 0 && now_us() - t0 >= (uint64_t)timeout * 1000) {
            return -FI_EAGAIN;
        }
    }
}

static ssize_t cq_sread(struct fid_cq *fid, void *buf, size_t count,
                        const void *cond, int timeout)
{
    return cq_sreadfrom(fid, buf, count, NULL, cond, timeout);
}

static const char *cq_strerror(struct fid_cq *fid, int prov_errno,
                               const void *err_data, char *buf, size_t len)
{
    const char *s = fi_strerror(prov_errno);

    (void)fid; (void)err_data;
    if (buf && len) {
        snprintf(buf, len, "%s", s);
        return buf;
    }
    return s;
}

static int cq_close(struct fid *fid)
{
    struct dn2fi_cq *cq = container_of(fid, struct dn2fi_cq, cq.fid);

    if (cq->refs) {
        return -FI_EBUSY;
    }
    cq->dom->refs--;
    free(cq->ring);
    free(cq->errs);
    free(cq);
    return 0;
}

static struct fi_ops cq_fi_ops;
static struct fi_ops_cq cq_ops;

int dn2fi_cq_open(struct fid_domain *domain, struct fi_cq_attr *attr,
                  struct fid_cq **out, void *context)
{
    struct dn2fi_domain *dom = container_of(domain, struct dn2fi_domain, domain);
    struct dn2fi_cq *cq;
    enum fi_cq_format fmt = attr ? attr->format : FI_CQ_FORMAT_CONTEXT;

    if (!attr) {
        return -FI_EINVAL;
    }
    switch (fmt) {
    case FI_CQ_FORMAT_UNSPEC:
        fmt = FI_CQ_FORMAT_CONTEXT;
        break;
    case FI_CQ_FORMAT_CONTEXT: case FI_CQ_FORMAT_MSG:
    case FI_CQ_FORMAT_DATA: case FI_CQ_FORMAT_TAGGED:
        break;
    default:
        return -FI_ENOSYS;
    }
    if (attr->wait_obj != FI_WAIT_NONE && attr->wait_obj != FI_WAIT_UNSPEC) {
        DN2FI_WARN(FI_LOG_CQ, "wait objects are not supported (progress is manual: poll)\n");
        return -FI_ENOSYS;
    }
    if (attr->wait_cond != FI_CQ_COND_NONE || (attr->flags & FI_AFFINITY)) {
        return -FI_ENOSYS;
    }
    cq = calloc(1, sizeof(*cq));
    if (!cq) {
        return -FI_ENOMEM;
    }
    cq->size = attr->size ? attr->size : DN2FI_CQ_DEFAULT;
    cq->ring = calloc(cq->size, sizeof(*cq->ring));
    if (!cq->ring) {
        free(cq);
        return -FI_ENOMEM;
    }
    cq->dom = dom;
    cq->format = fmt;
    {
        const char *idle = getenv("FI_DIMMNET2_IDLE_US");
        cq->idle_us = idle ? strtol(idle, NULL, 0) : 0;
        if (cq->idle_us < 0 || cq->idle_us > 999999) {
            cq->idle_us = 0;
        }
    }
    cq->cq.fid.fclass = FI_CLASS_CQ;
    cq->cq.fid.context = context;
    cq->cq.fid.ops = &cq_fi_ops;
    cq->cq.ops = &cq_ops;
    dom->refs++;
    *out = &cq->cq;
    return 0;
}

/* ================================================================= AV */

static int addr_valid(const struct dn2fi_addr *a)
{
    return a->lid != 0 && a->lid < 0xc000 && a->wid <= 1 && a->zero == 0;
}

const struct dn2fi_addr *dn2fi_av_get(struct dn2fi_av *av, fi_addr_t a)
{
    if (!av || a >= av->count || !av->tab[a].valid) {
        return NULL;
    }
    return &av->tab[a].a;
}

fi_addr_t dn2fi_av_find(struct dn2fi_av *av, uint16_t lid, int wid)
{
    size_t i;

    for (i = 0; av && i < av->count; i++) {
        if (av->tab[i].valid && av->tab[i].a.lid == lid && av->tab[i].a.wid == wid) {
            return i;
        }
    }
    return FI_ADDR_NOTAVAIL;
}

static int av_insert(struct fid_av *fid, const void *addr, size_t count,
                     fi_addr_t *fi_addr, uint64_t flags, void *context)
{
    struct dn2fi_av *av = container_of(fid, struct dn2fi_av, av);
    const struct dn2fi_addr *in = addr;
    int *errs = (flags & FI_SYNC_ERR) ? context : NULL;
    size_t i;
    int done = 0;

    if (flags & ~(FI_MORE | FI_SYNC_ERR)) {
        return -FI_EBADFLAGS;
    }
    if (count && !addr) {
        return -FI_EINVAL;
    }
    pthread_mutex_lock(&av->dom->lock);
    for (i = 0; i < count; i++) {
        struct dn2fi_addr a;
        int err = 0;

        memcpy(&a, in + i, sizeof(a));
        if (!addr_valid(&a)) {
            err = FI_EINVAL;
            DN2FI_INFO(FI_LOG_AV, "bad address lid %u wid %u\n", a.lid, a.wid);
        } else if (av->ep && av->ep->type == FI_EP_RDM &&
                   rdm_ops->add_dest(av->ep, a.lid, a.wid)) {
            /* the RDM endpoint's flow-control table is full: refused
             * rather than sent to without flow control */
            err = FI_ENOSPC;
        } else if (av->count == av->cap) {
            size_t n = av->cap ? av->cap * 2 : 64;
            struct dn2fi_av_entry *t = realloc(av->tab, n * sizeof(*t));
            if (!t) {
                err = FI_ENOMEM;
            } else {
                av->tab = t;
                av->cap = n;
            }
        }
        if (!err) {
            av->tab[av->count].a = a;
            av->tab[av->count].valid = 1;
            if (fi_addr) {
                fi_addr[i] = av->count;
            }
            av->count++;
            done++;
            if (av->ep) {
                dn2fi_ep_add_peer(av->ep, a.lid);
            }
        } else if (fi_addr) {
            fi_addr[i] = FI_ADDR_NOTAVAIL;
        }
        if (errs) {
            errs[i] = err;
        }
    }
    pthread_mutex_unlock(&av->dom->lock);
    return done;
}

static int av_remove(struct fid_av *fid, fi_addr_t *fi_addr, size_t count, uint64_t flags)
{
    struct dn2fi_av *av = container_of(fid, struct dn2fi_av, av);
    size_t i;
    int r = 0;

    if (flags) {
        return -FI_EBADFLAGS;
    }
    pthread_mutex_lock(&av->dom->lock);
    for (i = 0; i < count; i++) {
        if (fi_addr[i] < av->count && av->tab[fi_addr[i]].valid) {
            av->tab[fi_addr[i]].valid = 0;
        } else {
            r = -FI_EINVAL;
        }
    }
    pthread_mutex_unlock(&av->dom->lock);
    return r;
}

static int av_lookup(struct fid_av *fid, fi_addr_t fi_addr, void *addr, size_t *addrlen)
{
    struct dn2fi_av *av = container_of(fid, struct dn2fi_av, av);
    const struct dn2fi_addr *a;
    int r = 0;

    pthread_mutex_lock(&av->dom->lock);
    a = dn2fi_av_get(av, fi_addr);
    if (!a) {
        r = -FI_ENOENT;
    } else {
        memcpy(addr, a, *addrlen < DN2FI_ADDRLEN ? *addrlen : DN2FI_ADDRLEN);
        if (*addrlen < DN2FI_ADDRLEN) {
            r = -FI_ETOOSMALL;
        }
        *addrlen = DN2FI_ADDRLEN;
    }
    pthread_mutex_unlock(&av->dom->lock);
    return r;
}

static const char *av_straddr(struct fid_av *fid, const void *addr, char *buf, size_t *len)
{
    struct dn2fi_addr a;
    char s[48];

    (void)fid;
    memcpy(&a, addr, sizeof(a));
    snprintf(s, sizeof(s), "dimmnet2://%u:%u", a.lid, a.wid);
    if (buf && *len) {
        snprintf(buf, *len, "%s", s);
    }
    *len = strlen(s) + 1;
    return buf;
}

static int av_close(struct fid *fid)
{
    struct dn2fi_av *av = container_of(fid, struct dn2fi_av, av.fid);

    if (av->refs) {
        return -FI_EBUSY;
    }
    av->dom->refs--;
    free(av->tab);
    free(av);
    return 0;
}

static int av_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
    (void)fid; (void)bfid; (void)flags;
    return -FI_ENOSYS;      /* no asynchronous inserts: nothing to report */
}

static struct fi_ops av_fi_ops;
static struct fi_ops_av av_ops;

int dn2fi_av_open(struct fid_domain *domain, struct fi_av_attr *attr,
                  struct fid_av **out, void *context)
{
    struct dn2fi_domain *dom = container_of(domain, struct dn2fi_domain, domain);
    struct dn2fi_av *av;

    if (!attr) {
        return -FI_EINVAL;
    }
    if (attr->type != FI_AV_UNSPEC && attr->type != FI_AV_MAP && attr->type != FI_AV_TABLE) {
        return -FI_EINVAL;
    }
    if (attr->name || (attr->flags & (FI_EVENT | FI_READ | FI_SYMMETRIC)) ||
        attr->rx_ctx_bits) {
        return -FI_ENOSYS;
    }
    av = calloc(1, sizeof(*av));
    if (!av) {
        return -FI_ENOMEM;
    }
    av->dom = dom;
    av->type = attr->type == FI_AV_UNSPEC ? FI_AV_TABLE : attr->type;
    av->av.fid.fclass = FI_CLASS_AV;
    av->av.fid.context = context;
    av->av.fid.ops = &av_fi_ops;
    av->av.ops = &av_ops;
    dom->refs++;
    *out = &av->av;
    return 0;
}

/* ================================================================= EP */

static inline struct dn2fi_ep *ep_of(struct fid_ep *fid)
{
    return container_of(fid, struct dn2fi_ep, ep);
}

/* AMT entries: every sender we may hear from must map to our ring, or
 * the board drops its LHS packets. */
int dn2fi_ep_add_peer(struct dn2fi_ep *ep, uint16_t lid)
{
    int w, r;

    if (!ep->enabled) {
        return 0;
    }
    for (w = 0; w < 2; w++) {
        if (ep->amt_done[w][lid / 8] & (1u << (lid % 8))) {
            continue;
        }
        r = dn2_admin_amt(ep->d, lid, w, ep->amt_value);
        if (r) {
            DN2FI_WARN(FI_LOG_EP_CTRL, "AMT entry for LID %u WID %d: %s\n",
                       lid, w, dn2_strerror(r));
            return dn2fi_errno(r);
        }
        ep->amt_done[w][lid / 8] |= (uint8_t)(1u << (lid % 8));
    }
    return 0;
}

/* The LIDs we set AMT entries for at enable: the job's rank table
 * (DN2_RANKS, "rank lid wid" lines), else FI_DIMMNET2_LIDS ("1-8,12"),
 * else LIDs 1..64. */
static int ep_add_known_peers(struct dn2fi_ep *ep)
{
    const char *path = getenv("DN2_RANKS"), *lids = getenv("FI_DIMMNET2_LIDS");
    int r = 0, any = 0;

    if (path) {
        FILE *f = fopen(path, "r");
        char line[256];
        if (f) {
            while (fgets(line, sizeof(line), f)) {
                int rank;
                unsigned lid, wid;
                if (line[0] != '#' && sscanf(line, "%d %i %u", &rank, &lid, &wid) == 3 &&
                    lid && lid < 0xc000) {
                    if ((r = dn2fi_ep_add_peer(ep, (uint16_t)lid))) {
                        break;
                    }
                    any = 1;
                }
            }
            fclose(f);
        } else {
            DN2FI_WARN(FI_LOG_EP_CTRL, "DN2_RANKS=%s: %s\n", path, strerror(errno));
        }
    }
    if (!r && !any && lids) {
        const char *p = lids;
        while (*p && !r) {
            char *end;
            unsigned long a = strtoul(p, &end, 0), b = a, l;
            if (end == p) {
                break;
            }
            if (*end == '-') {
                p = end + 1;
                b = strtoul(p, &end, 0);
            }
            for (l = a; l <= b && l < 0xc000 && !r; l++) {
                if (l) {
                    r = dn2fi_ep_add_peer(ep, (uint16_t)l);
                    any = 1;
                }
            }
            p = *end == ',' ? end + 1 : end;
            if (*end && *end != ',') {
                break;
            }
        }
    }
    if (!r && !any) {
        unsigned l;
        for (l = 1; l <= 64 && !r; l++) {
            r = dn2fi_ep_add_peer(ep, (uint16_t)l);
        }
    }
    if (!r) {
        r = dn2fi_ep_add_peer(ep, ep->lid);
    }
    return r;
}

static int ep_enable(struct dn2fi_ep *ep)
{
    size_t i;
    int r;

    if (ep->enabled) {
        return 0;
    }
    if (!ep->av) {
        return -FI_ENOAV;
    }
    if (!ep->txcq || !ep->rxcq) {
        return -FI_ENOCQ;
    }
    ep->amt_value = (ep->wid * DN2_LLCM_WID_STRIDE + DN2FI_LLCM_AMT) / DN2_AMT_UNIT;
    r = dn2_ring_init(ep->d, &ep->ring, ep->amt_value, DN2FI_SD_RING, DN2FI_RING_BYTES);
    if (r) {
        DN2FI_WARN(FI_LOG_EP_CTRL, "receive ring: %s\n", dn2_strerror(r));
        return dn2fi_errno(r);
    }
    ep->pc_base[0] = dn2_count(ep->d, DN2_PC_IPUSH);
    ep->pc_base[1] = dn2_count(ep->d, DN2_PC_BOTF);
    ep->pc_issued[0] = ep->pc_issued[1] = 0;
    ep->enabled = 1;
    if ((r = ep_add_known_peers(ep))) {
        ep->enabled = 0;
        return r;
    }
    for (i = 0; i < ep->av->count; i++) {
        if (ep->av->tab[i].valid && (r = dn2fi_ep_add_peer(ep, ep->av->tab[i].a.lid))) {
            ep->enabled = 0;
            return r;
        }
    }
    if (ep->type == FI_EP_RDM) {
        rdm_ops->progress(ep);     /* the hellos leave now, before the job's fence */
    }
    return 0;
}

/* --------------------------------------------------------- receiving */

static size_t iov_len(const struct iovec *iov, size_t n)
{
    size_t i, t = 0;

    for (i = 0; i < n; i++) {
        t += iov[i].iov_len;
    }
    return t;
}

/* Copy len bytes of our receive ring at SO-DIMM 'at' (wrapping) into
 * buf, through the four Prefetch Windows. */
static int ring_read(struct dn2fi_ep *ep, uint32_t at, uint8_t *buf, size_t len)
{
    uint32_t pos = at - ep->ring.base;
    size_t first = len < ep->ring.size - pos ? len : ep->ring.size - pos;
    int r = dn2_sd_read(ep->d, at, buf, first, 0xf, DN2FI_TMO_US);

    if (!r && first < len) {
        r = dn2_sd_read(ep->d, ep->ring.base, buf + first, len - first, 0xf, DN2FI_TMO_US);
    }
    return r;
}

/* Deliver arrived datagrams to posted receives, in order.  A datagram
 * with no receive posted stays in the LH Buffer (the board holds what
 * comes after it): nothing is dropped. */
static void ep_progress_rx(struct dn2fi_ep *ep)
{
    uint8_t *scratch = ep->scratch;

    while (ep->rx_count && !dn2fi_cq_full(ep->rxcq)) {
        struct dn2_lh_msg m;
        struct dn2fi_rx *rx;
        uint8_t *buf;
        size_t cap, n, over;
        int r, err = 0;

        /* spin on memory (the LH Buffer), not on a register */
        if (!dn2_lh_ready(ep->d)) {
            return;
        }
        r = dn2_lh_next(ep->d, &m, 0);
        if (r <= 0) {
            return;
        }
        if (!m.complete) {
            return;     /* the rest of it is still arriving */
        }
        rx = &ep->rxq[ep->rx_head];
        cap = iov_len(rx->iov, rx->iov_count);
        /* single buffer: straight in; several: through the scratch */
        buf = rx->iov_count == 1 ? rx->iov[0].iov_base : scratch;
        n = m.size < cap ? m.size : cap;
        if (m.size > DN2FI_MAX_MSG) {
            err = FI_EIO;   /* not ours: a sender outside the protocol */
            n = 0;
        }
        memcpy(buf, m.data, n < DN2_LHB_DATA ? n : DN2_LHB_DATA);
        over = m.size > DN2_LHB_DATA ? m.size - DN2_LHB_DATA : 0;
        if (n > DN2_LHB_DATA) {
            r = ring_read(ep, m.pointer, buf + DN2_LHB_DATA, n - DN2_LHB_DATA);
            if (r) {
                err = FI_EIO;
                DN2FI_WARN(FI_LOG_EP_DATA, "reading the receive ring: %s\n", dn2_strerror(r));
            }
        }
        if (over) {
            dn2_ring_consume(ep->d, &ep->ring, over);
        }
        dn2_lh_release(ep->d);
        if (buf == scratch) {
            size_t i, off = 0;
            for (i = 0; i < rx->iov_count && off < n; i++) {
                size_t k = n - off < rx->iov[i].iov_len ? n - off : rx->iov[i].iov_len;
                memcpy(rx->iov[i].iov_base, scratch + off, k);
                off += k;
            }
        }
        ep->rx_head = (ep->rx_head + 1) % ep->rx_size;
        ep->rx_count--;
        ep->rx_msgs++;
        ep->rx_bytes += n;
        {
            uint64_t flags = FI_RECV | FI_MSG;
            uint64_t data = 0;
            if (m.context & DN2FI_CTX_DATA) {
                flags |= FI_REMOTE_CQ_DATA;
                data = m.tag;
            }
            if (!err && m.size > cap) {
                err = FI_ETRUNC;
            }
            if (err) {
                dn2fi_cq_write_err(ep->rxcq, rx->context, flags, n,
                                   rx->iov[0].iov_base, data, err,
                                   m.size > n ? m.size - n : 0);
            } else if (!ep->rx_selective || (rx->flags & FI_COMPLETION)) {
                dn2fi_cq_write(ep->rxcq, rx->context, flags, n, rx->iov[0].iov_base,
                               data, FI_ADDR_NOTAVAIL);
            }
        }
    }
}

void dn2fi_ep_progress(struct dn2fi_ep *ep)
{
    if (!ep->enabled) {
        return;
    }
    if (ep->type == FI_EP_RDM) {
        rdm_ops->progress(ep);
    } else {
        ep_progress_rx(ep);
    }
}

int dn2fi_dgram_read(struct dn2fi_ep *ep, const void *msg, size_t at, void *dst, size_t n)
{
    const struct dn2_lh_msg *m = msg;
    uint8_t *d = dst;

    if (!n) {
        return 0;
    }
    if (at < DN2_LHB_DATA) {
        size_t k = DN2_LHB_DATA - at < n ? DN2_LHB_DATA - at : n;
        memcpy(d, m->data + at, k);
        d += k;
        at += k;
        n -= k;
    }
    if (!n) {
        return 0;
    }
    {
        uint32_t pos = (m->pointer - ep->ring.base + (uint32_t)(at - DN2_LHB_DATA)) % ep->ring.size;
        uint64_t t0 = ep->stats ? dn2fi_ns() : 0;
        int r = ring_read(ep, ep->ring.base + pos, d, n);
        if (ep->stats) {
            ep->ns_read += dn2fi_ns() - t0;
        }
        if (r) {
            DN2FI_WARN(FI_LOG_EP_DATA, "reading the receive ring: %s\n", dn2_strerror(r));
            return -FI_EIO;
        }
    }
    return 0;
}

static ssize_t ep_post_recv(struct dn2fi_ep *ep, const struct iovec *iov, size_t count,
                            void *context, uint64_t flags)
{
    struct dn2fi_rx *rx;
    size_t i;

    if (count > DN2FI_IOV_LIMIT || (count && !iov)) {
        return -FI_EINVAL;
    }
    pthread_mutex_lock(&ep->dom->lock);
    if (!ep->enabled) {
        pthread_mutex_unlock(&ep->dom->lock);
        return -FI_EOPBADSTATE;
    }
    if (ep->rx_count == ep->rx_size) {
        dn2fi_ep_progress(ep);
        pthread_mutex_unlock(&ep->dom->lock);
        return -FI_EAGAIN;
    }
    rx = &ep->rxq[(ep->rx_head + ep->rx_count) % ep->rx_size];
    for (i = 0; i < count; i++) {
        rx->iov[i] = iov[i];
    }
    if (!count) {
        rx->iov[0].iov_base = NULL;
        rx->iov[0].iov_len = 0;
        count = 1;
    }
    rx->iov_count = count;
    rx->context = context;
    rx->flags = flags;
    ep->rx_count++;
    pthread_mutex_unlock(&ep->dom->lock);
    return 0;
}

static ssize_t ep_recv(struct fid_ep *fid, void *buf, size_t len, void *desc,
                       fi_addr_t src, void *context)
{
    struct iovec iov = { .iov_base = buf, .iov_len = len };

    (void)desc; (void)src;
    return ep_post_recv(ep_of(fid), &iov, 1, context, ep_of(fid)->rx_op_flags);
}

static ssize_t ep_recvv(struct fid_ep *fid, const struct iovec *iov, void **desc,
                        size_t count, fi_addr_t src, void *context)
{
    (void)desc; (void)src;
    return ep_post_recv(ep_of(fid), iov, count, context, ep_of(fid)->rx_op_flags);
}

static ssize_t ep_recvmsg(struct fid_ep *fid, const struct fi_msg *msg, uint64_t flags)
{
    if (flags & ~(FI_COMPLETION | FI_MORE | FI_REMOTE_CQ_DATA | FI_MSG | FI_RECV)) {
        return -FI_EBADFLAGS;
    }
    return ep_post_recv(ep_of(fid), msg->msg_iov, msg->iov_count, msg->context, flags);
}

/* ----------------------------------------------------------- sending */

/* Has the last request that used Write Window w (an LHSv2, counted by
 * the IPUSH Primitive Counter, or a BOTF, by the BOTF counter) read it?
 * The counter is read from the register mirror (memory, no exit). */
static int win_free(struct dn2fi_ep *ep, int w)
{
    int f = ep->win_fam[w];
    unsigned left;

    if (!ep->win_busy[w]) {
        return 1;
    }
    left = (dn2_count(ep->d, f ? DN2_PC_BOTF : DN2_PC_IPUSH) - ep->pc_base[f]) & DN2_PC_MASK;
    if (((left - ep->win_seq[w]) & DN2_PC_MASK) <= DN2_PC_MASK / 2) {
        ep->win_busy[w] = 0;
        return 1;
    }
    return 0;
}

/* Write Window half h (windows 2h, 2h + 1) free for an LHSv2. */
static int half_free(struct dn2fi_ep *ep, int h)
{
    return win_free(ep, 2 * h) && win_free(ep, 2 * h + 1);
}

/* Copy the part of a message beyond the Write Window prefix into SO-DIMM
 * staging slot h with VS: through all four windows when the other half's
 * last LHSv2 has left (its prefix is no longer needed; normally so, since
 * an idle board runs the LHSv2 inside its doorbell), else through the two
 * windows of half h.  Four windows halve the Controller Status reads per
 * byte (dn2-copybench: 386 against 265 MB/s in one guest). */
static int stage(struct dn2fi_ep *ep, int h, const uint8_t *src, size_t len)
{
    unsigned mask = half_free(ep, h ^ 1) ? DN2_WIN_ALL : 3u << (2 * h);

    return dn2_sd_write(ep->d, DN2FI_SD_STAGE + (uint32_t)h * ep->slot, src, len, mask,
                        DN2FI_TMO_US);
}

/* One datagram: the envelope and up to 1015 bytes straight from the
 * Write Window, the rest staged in SO-DIMM first; one LHSv2.  Never
 * blocks on the board: a Write Window half still in use or a full
 * Request FIFO means -FI_EAGAIN (the peer may be waiting for us to drain
 * our own receive side). */
int dn2fi_xmit(struct dn2fi_ep *ep, uint16_t lid, int wid, uint64_t env,
               const struct iovec *iov, size_t count, size_t len)
{
    uint8_t *gather = ep->gather;
    size_t i, off;
    int h = ep->tx_next, r;

    if (len > DN2FI_INJECT + ep->slot) {
        return -FI_EMSGSIZE;
    }
    uint64_t t0 = ep->stats ? dn2fi_ns() : 0, t1 = 0, t2 = 0;

    if (!half_free(ep, h)) {
        ep->busy_half++;
        return -FI_EAGAIN;
    }
    if (dn2_ctl_status(ep->d) & (DN2_CS_REQ_PENDING | DN2_CS_FIFO_AFULL)) {
        ep->busy_fifo++;
        return -FI_EAGAIN;
    }
    {
        /* The staged part, message bytes [DN2FI_INJECT, len), goes to the
         * board straight from the caller's buffer when one iov holds it
         * all (the usual case: a header iov, then the user's data), so only
         * the Write Window prefix is gathered; else everything is. */
        const uint8_t *staged = gather + DN2FI_WW_PREFIX_MAX;
        size_t need = DN2FI_ENV + len, o = DN2FI_INJECT;

        if (len > DN2FI_INJECT) {
            for (i = 0; i < count && o >= iov[i].iov_len; i++) {
                o -= iov[i].iov_len;
            }
            if (i < count && iov[i].iov_len - o == len - DN2FI_INJECT) {
                staged = (const uint8_t *)iov[i].iov_base + o;
                need = DN2FI_WW_PREFIX_MAX;
            }
        }
        memcpy(gather, &env, DN2FI_ENV);
        for (i = 0, off = DN2FI_ENV; i < count && off < need; i++) {
            size_t n = iov[i].iov_len < need - off ? iov[i].iov_len : need - off;
            memcpy(gather + off, iov[i].iov_base, n);
            off += n;
        }
        if (len > DN2FI_INJECT && (r = stage(ep, h, staged, len - DN2FI_INJECT))) {
            return dn2fi_errno(r);
        }
    }
    {
        uint32_t pre = len > DN2FI_INJECT ? DN2FI_WW_PREFIX_MAX : (uint32_t)(DN2FI_ENV + len);
        uint32_t ww_off = (uint32_t)h * 2 * DN2_WIN_SIZE;
        if (ep->stats) {
            t1 = dn2fi_ns();
        }
        dn2_ww_write(ep->d, ww_off, gather, pre);
        if (ep->stats) {
            t2 = dn2fi_ns();
        }
        r = dn2_lhsv2(ep->d, lid, wid, ww_off, pre,
                      DN2FI_SD_STAGE + (uint32_t)h * ep->slot,
                      (uint32_t)(DN2FI_ENV + len), 0);
    }
    if (r) {
        return dn2fi_errno(r);
    }
    if (ep->stats) {
        uint64_t t3 = dn2fi_ns();
        ep->ns_stage += t1 - t0;    /* gather copy + VS staging */
        ep->ns_ww += t2 - t1;
        ep->ns_issue += t3 - t2;
    }
    ep->tx_bytes += len;
    ep->pc_issued[0] = (ep->pc_issued[0] + 1) & DN2_PC_MASK;
    for (i = 0; i < 2; i++) {
        ep->win_busy[2 * h + i] = 1;
        ep->win_fam[2 * h + i] = 0;
        ep->win_seq[2 * h + i] = ep->pc_issued[0];
    }
    ep->tx_next = h ^ 1;
    ep->tx_msgs++;
    return 0;
}

/* One BOTF image (thesis Table 4.2: an image typed RVS with lflag=1
 * lands in the receiver's LLCM): bytes [off, off + n) of the iovs, n at
 * most DN2FI_BOTF_DATA, to LLCM offset dst of process (lid, wid).  The
 * header and the data are written straight into the next Write Window of
 * the round robin and the board is rung with the Lower word alone.
 * -FI_EAGAIN when that window's last request has not read it yet or the
 * Request FIFO is full: nothing was issued. */
int dn2fi_botf_llcm(struct dn2fi_ep *ep, uint16_t lid, int wid, uint32_t dst,
                    const struct iovec *iov, size_t count, size_t off, size_t n)
{
    int w = ep->bw_next, r;
    struct dn2_hdr hd;
    struct dn2_cmd c = { 0 };
    uint64_t hw[2], t0 = ep->stats ? dn2fi_ns() : 0;
    size_t i, base = 0, done = 0;

    if (!n || n > DN2FI_BOTF_DATA || dst + n > DN2_LLCM_AREA) {
        return -FI_EINVAL;
    }
    if (!win_free(ep, w)) {
        ep->busy_half++;
        return -FI_EAGAIN;
    }
    if (dn2_ctl_status(ep->d) & (DN2_CS_REQ_PENDING | DN2_CS_FIFO_AFULL)) {
        ep->busy_fifo++;
        return -FI_EAGAIN;
    }
    memset(&hd, 0, sizeof(hd));
    hd.type = DN2_OP_RVS;
    hd.dlid = lid;
    hd.dwid = (uint8_t)wid;
    hd.swid = (uint8_t)ep->wid;
    hd.lflag = 1;
    hd.size = (uint16_t)(2 * DN2_LINE + n);
    hw[0] = dn2_hdr0_encode(&hd);
    hw[1] = dn2_hdr1_encode(dst, dst);
    /* one piece of one iov (the usual case) goes straight in; else the
     * image is gathered first */
    for (i = 0; i < count && off >= base + iov[i].iov_len; i++) {
        base += iov[i].iov_len;
    }
    if (i < count && off + n <= base + iov[i].iov_len) {
        dn2_ww_write(ep->d, (uint32_t)w * DN2_WIN_SIZE + 2 * DN2_LINE,
                     (const uint8_t *)iov[i].iov_base + (off - base), n);
    } else {
        for (; i < count && done < n; i++) {
            size_t in = off + done - base, k = iov[i].iov_len - in;
            if (k > n - done) {
                k = n - done;
            }
            memcpy(ep->gather + done, (const uint8_t *)iov[i].iov_base + in, k);
            done += k;
            base += iov[i].iov_len;
        }
        if (done < n) {
            return -FI_EINVAL;
        }
        dn2_ww_write(ep->d, (uint32_t)w * DN2_WIN_SIZE + 2 * DN2_LINE, ep->gather, n);
    }
    dn2_ww_write(ep->d, (uint32_t)w * DN2_WIN_SIZE, hw, sizeof(hw));
    c.lower = dn2_botf_lower((unsigned)w, (unsigned)(2 * DN2_LINE + n));
    if ((r = dn2_issue(ep->d, &c, DN2FI_TMO_US))) {
        return dn2fi_errno(r);
    }
    ep->pc_issued[1] = (ep->pc_issued[1] + 1) & DN2_PC_MASK;
    ep->win_busy[w] = 1;
    ep->win_fam[w] = 1;
    ep->win_seq[w] = ep->pc_issued[1];
    ep->bw_next = (w + 1) % DN2_NUM_WW;
    ep->tx_bytes += n;
    ep->botf_images++;
    if (ep->stats) {
        ep->ns_botf += dn2fi_ns() - t0;
    }
    return 0;
}

int dn2fi_send_check(const struct iovec *iov, size_t count, uint64_t flags, size_t max,
                     size_t inject_max, size_t *len)
{
    size_t i, t = 0;

    if (count > DN2FI_IOV_LIMIT || (count && !iov)) {
        return -FI_EINVAL;
    }
    for (i = 0; i < count; i++) {
        t += iov[i].iov_len;
    }
    *len = t;
    if (t > max || ((flags & FI_INJECT) && t > inject_max)) {
        return -FI_EMSGSIZE;
    }
    return 0;
}

static ssize_t ep_sendv_flags(struct dn2fi_ep *ep, const struct iovec *iov, size_t count,
                              fi_addr_t dest, void *context, uint64_t data, uint64_t flags)
{
    const struct dn2fi_addr *a;
    size_t len;
    uint64_t env;
    unsigned ctx = DN2FI_CTX_MSG;
    int want_comp;
    ssize_t ret = dn2fi_send_check(iov, count, flags, DN2FI_MAX_MSG, DN2FI_INJECT, &len);

    if (ret) {
        return ret;
    }
    pthread_mutex_lock(&ep->dom->lock);
    if (!ep->enabled) {
        ret = -FI_EOPBADSTATE;
        goto out;
    }
    a = dn2fi_av_get(ep->av, dest);
    if (!a) {
        DN2FI_INFO(FI_LOG_EP_DATA, "destination %llu is not in the AV\n",
                   (unsigned long long)dest);
        ret = -FI_EADDRNOTAVAIL;
        goto out;
    }
    want_comp = !(flags & FI_INJECT) && (!ep->tx_selective || (flags & FI_COMPLETION));
    if (want_comp && dn2fi_cq_full(ep->txcq)) {
        ret = -FI_EAGAIN;
        goto out;
    }
    if (flags & FI_REMOTE_CQ_DATA) {
        ctx |= DN2FI_CTX_DATA;
    }
    env = dn2_envelope(ctx, (unsigned)((ep->wid << 12) | dn2_lid_to_clid(ep->lid)),
                       (uint32_t)data);
    ret = dn2fi_xmit(ep, a->lid, a->wid, env, iov, count, len);
    if (ret == -FI_EAGAIN) {
        dn2fi_ep_progress(ep);
        goto out;
    }
    if (ret) {
        goto out;
    }
    /* The data is on the board: the buffer may be reused now. */
    if (want_comp) {
        dn2fi_cq_write(ep->txcq, context, FI_SEND | FI_MSG, len, NULL, 0, FI_ADDR_NOTAVAIL);
    }
out:
    pthread_mutex_unlock(&ep->dom->lock);
    return ret;
}

static ssize_t ep_send(struct fid_ep *fid, const void *buf, size_t len, void *desc,
                       fi_addr_t dest, void *context)
{
    struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };

    (void)desc;
    return ep_sendv_flags(ep_of(fid), &iov, 1, dest, context, 0, ep_of(fid)->tx_op_flags);
}

static ssize_t ep_sendv(struct fid_ep *fid, const struct iovec *iov, void **desc,
                        size_t count, fi_addr_t dest, void *context)
{
    (void)desc;
    return ep_sendv_flags(ep_of(fid), iov, count, dest, context, 0, ep_of(fid)->tx_op_flags);
}

static ssize_t ep_sendmsg(struct fid_ep *fid, const struct fi_msg *msg, uint64_t flags)
{
    if (flags & ~(FI_COMPLETION | FI_INJECT | FI_INJECT_COMPLETE | FI_TRANSMIT_COMPLETE |
                  FI_DELIVERY_COMPLETE | FI_REMOTE_CQ_DATA | FI_MORE | FI_MSG | FI_SEND)) {
        return -FI_EBADFLAGS;
    }
    return ep_sendv_flags(ep_of(fid), msg->msg_iov, msg->iov_count, msg->addr,
                          msg->context, msg->data, flags);
}

static ssize_t ep_inject(struct fid_ep *fid, const void *buf, size_t len, fi_addr_t dest)
{
    struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };

    return ep_sendv_flags(ep_of(fid), &iov, 1, dest, NULL, 0, FI_INJECT);
}

static ssize_t ep_senddata(struct fid_ep *fid, const void *buf, size_t len, void *desc,
                           uint64_t data, fi_addr_t dest, void *context)
{
    struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };

    (void)desc;
    return ep_sendv_flags(ep_of(fid), &iov, 1, dest, context, data,
                          ep_of(fid)->tx_op_flags | FI_REMOTE_CQ_DATA);
}

static ssize_t ep_injectdata(struct fid_ep *fid, const void *buf, size_t len,
                             uint64_t data, fi_addr_t dest)
{
    struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };

    return ep_sendv_flags(ep_of(fid), &iov, 1, dest, NULL, data,
                          FI_INJECT | FI_REMOTE_CQ_DATA);
}

/* ------------------------------------------------------ control, misc */

static int cq_attach(struct dn2fi_cq *cq, struct dn2fi_ep *ep)
{
    int i;

    for (i = 0; i < cq->neps; i++) {
        if (cq->eps[i] == ep) {
            return 0;
        }
    }
    if (cq->neps == (int)(sizeof(cq->eps) / sizeof(cq->eps[0]))) {
        return -FI_ENOSPC;
    }
    cq->eps[cq->neps++] = ep;
    cq->refs++;
    return 0;
}

static void cq_detach(struct dn2fi_cq *cq, struct dn2fi_ep *ep)
{
    int i;

    for (i = 0; i < cq->neps; i++) {
        if (cq->eps[i] == ep) {
            cq->eps[i] = cq->eps[--cq->neps];
            cq->refs--;
            return;
        }
    }
}

static int ep_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
    struct dn2fi_ep *ep = container_of(fid, struct dn2fi_ep, ep.fid);
    int r = 0;

    if (!bfid) {
        return -FI_EINVAL;
    }
    pthread_mutex_lock(&ep->dom->lock);
    if (ep->enabled) {
        r = -FI_EOPBADSTATE;
        goto out;
    }
    switch (bfid->fclass) {
    case FI_CLASS_CQ: {
        struct dn2fi_cq *cq = container_of(bfid, struct dn2fi_cq, cq.fid);
        if (flags & ~(FI_TRANSMIT | FI_RECV | FI_SELECTIVE_COMPLETION)) {
            r = -FI_EBADFLAGS;
            break;
        }
        if (!(flags & (FI_TRANSMIT | FI_RECV))) {
            r = -FI_EINVAL;
            break;
        }
        if ((r = cq_attach(cq, ep))) {
            break;
        }
        if (flags & FI_TRANSMIT) {
            ep->txcq = cq;
            ep->tx_selective = !!(flags & FI_SELECTIVE_COMPLETION);
        }
        if (flags & FI_RECV) {
            ep->rxcq = cq;
            ep->rx_selective = !!(flags & FI_SELECTIVE_COMPLETION);
        }
        break;
    }
    case FI_CLASS_AV: {
        struct dn2fi_av *av = container_of(bfid, struct dn2fi_av, av.fid);
        if (ep->av) {
            r = -FI_EINVAL;
            break;
        }
        ep->av = av;
        av->ep = ep;
        av->refs++;
        break;
    }
    case FI_CLASS_EQ:
        break;      /* nothing is ever reported on it */
    case FI_CLASS_CNTR:
        r = -FI_ENOSYS;
        break;
    default:
        r = -FI_EINVAL;
    }
out:
    pthread_mutex_unlock(&ep->dom->lock);
    return r;
}

static int ep_control(struct fid *fid, int command, void *arg)
{
    struct dn2fi_ep *ep = container_of(fid, struct dn2fi_ep, ep.fid);
    int r = 0;

    pthread_mutex_lock(&ep->dom->lock);
    switch (command) {
    case FI_ENABLE:
        r = ep_enable(ep);
        break;
    case FI_GETOPSFLAG: {
        uint64_t *f = arg;
        if (!f) {
            r = -FI_EINVAL;
        } else if (*f & FI_TRANSMIT) {
            *f = ep->tx_op_flags;
        } else if (*f & FI_RECV) {
            *f = ep->rx_op_flags;
        } else {
            r = -FI_EINVAL;
        }
        break;
    }
    case FI_SETOPSFLAG: {
        uint64_t *f = arg;
        if (!f) {
            r = -FI_EINVAL;
        } else if (*f & FI_TRANSMIT) {
            ep->tx_op_flags = *f & ~FI_TRANSMIT;
        } else if (*f & FI_RECV) {
            ep->rx_op_flags = *f & ~FI_RECV;
        } else {
            r = -FI_EINVAL;
        }
        break;
    }
    default:
        r = -FI_ENOSYS;
    }
    pthread_mutex_unlock(&ep->dom->lock);
    return r;
}

static int ep_close(struct fid *fid)
{
    struct dn2fi_ep *ep = container_of(fid, struct dn2fi_ep, ep.fid);

    pthread_mutex_lock(&ep->dom->lock);
    if (ep->txcq) {
        cq_detach(ep->txcq, ep);
    }
    if (ep->rxcq && ep->rxcq != ep->txcq) {
        cq_detach(ep->rxcq, ep);
    }
    if (ep->av) {
        ep->av->ep = NULL;
        ep->av->refs--;
    }
    ep->dom->refs--;
    pthread_mutex_unlock(&ep->dom->lock);
    DN2FI_INFO(FI_LOG_EP_CTRL, "close: %llu sent, %llu received (%llu bytes)\n",
               (unsigned long long)ep->tx_msgs, (unsigned long long)ep->rx_msgs,
               (unsigned long long)ep->rx_bytes);
    if (ep->stats) {
        double open_ms = (dn2fi_ns() - ep->ns_open) / 1e6;
        fprintf(stderr, "dimmnet2 stats: LID %u WID %d %s endpoint (bulk %s) open %.1f ms: "
                "sent %llu datagrams %llu bytes, received %llu datagrams %llu bytes; "
                "ms in: gather+VS staging %.1f, Write Window %.1f, LHSv2 issue %.1f, "
                "BOTF images %.1f (%llu), ring copy-out (dn2_sd_read) %.1f, "
                "LLCM copy-out %.1f (%llu bytes), LH Buffer handling %.1f; "
                "board busy: WW half %llu, request FIFO %llu; waits for credit %llu; "
                "progress calls %llu\n",
                ep->lid, ep->wid, ep->type == FI_EP_RDM ? "RDM" : "DGRAM",
                ep->bulk == DN2FI_BULK_LLCM ? "llcm" :
                ep->bulk == DN2FI_BULK_SODIMM ? "sodimm" : "mixed", open_ms,
                (unsigned long long)ep->tx_msgs, (unsigned long long)ep->tx_bytes,
                (unsigned long long)ep->rx_dgrams, (unsigned long long)ep->rx_bytes,
                ep->ns_stage / 1e6, ep->ns_ww / 1e6, ep->ns_issue / 1e6,
                ep->ns_botf / 1e6, (unsigned long long)ep->botf_images, ep->ns_read / 1e6,
                ep->ns_llcm / 1e6, (unsigned long long)ep->llcm_bytes,
                (ep->ns_lhb > ep->ns_read + ep->ns_llcm ?
                 ep->ns_lhb - ep->ns_read - ep->ns_llcm : 0) / 1e6,
                (unsigned long long)ep->busy_half, (unsigned long long)ep->busy_fifo,
                (unsigned long long)ep->busy_credit,
                (unsigned long long)ep->progress_calls);
    }
    if (ep->type == FI_EP_RDM) {
        rdm_ops->close(ep);
    }
    dn2_close(ep->d);      /* the WID is free again */
    free(ep->scratch);
    free(ep->gather);
    free(ep->rxq);
    free(ep);
    return 0;
}

static ssize_t ep_cancel(fid_t fid, void *context)
{
    struct dn2fi_ep *ep = container_of(fid, struct dn2fi_ep, ep.fid);
    size_t i;

    if (ep->type == FI_EP_RDM) {
        ssize_t r;
        pthread_mutex_lock(&ep->dom->lock);
        r = rdm_ops->cancel(ep, context);
        pthread_mutex_unlock(&ep->dom->lock);
        return r;
    }
    pthread_mutex_lock(&ep->dom->lock);
    for (i = 0; i < ep->rx_count; i++) {
        struct dn2fi_rx *rx = &ep->rxq[(ep->rx_head + i) % ep->rx_size];
        if (rx->context == context) {
            struct dn2fi_rx keep = *rx;
            size_t j;
            for (j = i; j + 1 < ep->rx_count; j++) {
                ep->rxq[(ep->rx_head + j) % ep->rx_size] =
                    ep->rxq[(ep->rx_head + j + 1) % ep->rx_size];
            }
            ep->rx_count--;
            dn2fi_cq_write_err(ep->rxcq, keep.context, FI_RECV | FI_MSG, 0, NULL, 0,
                               FI_ECANCELED, 0);
            pthread_mutex_unlock(&ep->dom->lock);
            return 0;
        }
    }
    pthread_mutex_unlock(&ep->dom->lock);
    return -FI_ENOENT;
}

static int ep_getopt(fid_t fid, int level, int optname, void *optval, size_t *optlen)
{
    (void)fid; (void)optname; (void)optval; (void)optlen;
    return level == FI_OPT_ENDPOINT ? -FI_ENOPROTOOPT : -FI_ENOPROTOOPT;
}

static int ep_setopt(fid_t fid, int level, int optname, const void *optval, size_t optlen)
{
    (void)fid; (void)level; (void)optname; (void)optval; (void)optlen;
    return -FI_ENOPROTOOPT;
}

static ssize_t ep_rx_size_left(struct fid_ep *fid)
{
    struct dn2fi_ep *ep = ep_of(fid);

    if (ep->type == FI_EP_RDM) {
        return ep->enabled ? rdm_ops->rx_left(ep) : -FI_EOPBADSTATE;
    }
    return ep->enabled ? (ssize_t)(ep->rx_size - ep->rx_count) : -FI_EOPBADSTATE;
}

static ssize_t ep_tx_size_left(struct fid_ep *fid)
{
    struct dn2fi_ep *ep = ep_of(fid);

    if (ep->type == FI_EP_RDM) {
        return ep->enabled ? rdm_ops->tx_left(ep) : -FI_EOPBADSTATE;
    }
    return ep->enabled ? DN2FI_QUEUE : -FI_EOPBADSTATE;
}

static int ep_getname(fid_t fid, void *addr, size_t *addrlen)
{
    struct dn2fi_ep *ep = container_of(fid, struct dn2fi_ep, ep.fid);
    struct dn2fi_addr a = { .lid = ep->lid, .wid = (uint8_t)ep->wid, .zero = 0 };
    size_t have = *addrlen;

    *addrlen = DN2FI_ADDRLEN;
    if (have < DN2FI_ADDRLEN) {
        return -FI_ETOOSMALL;
    }
    memcpy(addr, &a, sizeof(a));
    return 0;
}

static struct fi_ops ep_fi_ops;
static struct fi_ops_ep ep_ops;
static struct fi_ops_cm ep_cm_ops;
static struct fi_ops_msg ep_msg_ops;
static struct fi_ops_rma ep_rma_ops;
static struct fi_ops_tagged ep_tagged_ops;
static struct fi_ops_atomic ep_atomic_ops;
static struct fi_ops_collective ep_coll_ops;

int dn2fi_endpoint(struct fid_domain *domain, struct fi_info *info,
                   struct fid_ep **out, void *context)
{
    struct dn2fi_domain *dom = container_of(domain, struct dn2fi_domain, domain);
    struct dn2fi_ep *ep;
    int r;

    if (!info || !info->ep_attr ||
        (info->ep_attr->type != FI_EP_DGRAM && info->ep_attr->type != FI_EP_RDM)) {
        return -FI_EINVAL;
    }
    if (info->ep_attr->type == FI_EP_DGRAM &&
        (info->caps & ~(FI_MSG | FI_SEND | FI_RECV | FI_LOCAL_COMM | FI_REMOTE_COMM))) {
        return -FI_EINVAL;
    }
    if (info->ep_attr->type == FI_EP_RDM && (info->caps & ~DN2FI_RDM_CAPS)) {
        return -FI_EINVAL;
    }
    ep = calloc(1, sizeof(*ep));
    if (!ep) {
        return -FI_ENOMEM;
    }
    ep->type = info->ep_attr->type;
    {
        const char *st = getenv("FI_DIMMNET2_STATS");
        ep->stats = st && *st && strcmp(st, "0");
        ep->ns_open = dn2fi_ns();
    }
    {
        /* FI_DIMMNET2_BULK: the RDM endpoint's path for long data */
        const char *b = getenv("FI_DIMMNET2_BULK");
        if (!b || !*b || !strcmp(b, "mixed")) {
            ep->bulk = DN2FI_BULK_MIXED;
        } else if (!strcmp(b, "llcm")) {
            ep->bulk = DN2FI_BULK_LLCM;
        } else if (!strcmp(b, "sodimm")) {
            ep->bulk = DN2FI_BULK_SODIMM;
        } else {
            DN2FI_WARN(FI_LOG_EP_CTRL, "FI_DIMMNET2_BULK=%s: not mixed, llcm or sodimm\n", b);
            free(ep);
            return -FI_EINVAL;
        }
    }
    ep->caps = info->caps ? info->caps : (ep->type == FI_EP_RDM ? DN2FI_RDM_CAPS : FI_MSG);
    ep->rx_size = DN2FI_QUEUE;
    ep->rxq = calloc(ep->rx_size, sizeof(*ep->rxq));
    ep->scratch = malloc(DN2FI_MAX_MSG);
    ep->gather = malloc(DN2FI_ENV + DN2FI_DGRAM_BIG);
    if (!ep->rxq || !ep->scratch || !ep->gather) {
        free(ep->rxq);
        free(ep->scratch);
        free(ep->gather);
        free(ep);
        return -FI_ENOMEM;
    }
    snprintf(ep->path, sizeof(ep->path), DN2_DEV_PREFIX "%d", dom->board);
    r = dn2_open(&ep->d, ep->path);
    if (r) {
        DN2FI_WARN(FI_LOG_EP_CTRL, "%s: %s\n", ep->path, dn2_strerror(r));
        free(ep->scratch);
        free(ep->gather);
        free(ep->rxq);
        free(ep);
        return dn2fi_errno(r);
    }
    ep->slot = DN2FI_STAGE_SLOT;
    if (ep->type == FI_EP_RDM &&
        dn2_sdimm_bytes(ep->d) >= (uint64_t)DN2FI_SD_STAGE + 2 * DN2FI_RDM_SLOT) {
        ep->slot = DN2FI_RDM_SLOT;
    }
    ep->wid = dn2_wid(ep->d);
    ep->lid = dn2_lid(ep->d);
    ep->dom = dom;
    ep->tx_op_flags = info->tx_attr ? info->tx_attr->op_flags : 0;
    ep->rx_op_flags = info->rx_attr ? info->rx_attr->op_flags : 0;
    ep->ep.fid.fclass = FI_CLASS_EP;
    ep->ep.fid.context = context;
    ep->ep.fid.ops = &ep_fi_ops;
    ep->ep.ops = &ep_ops;
    ep->ep.cm = &ep_cm_ops;
    ep->ep.msg = ep->type == FI_EP_RDM ? rdm_ops->msg : &ep_msg_ops;
    ep->ep.rma = &ep_rma_ops;
    ep->ep.tagged = ep->type == FI_EP_RDM ? rdm_ops->tagged : &ep_tagged_ops;
    if (ep->type == FI_EP_RDM && (r = rdm_ops->open(ep))) {
        dn2_close(ep->d);
        free(ep->scratch);
        free(ep->gather);
        free(ep->rxq);
        free(ep);
        return r;
    }
    ep->ep.atomic = &ep_atomic_ops;
    ep->ep.collective = &ep_coll_ops;
    pthread_mutex_lock(&dom->lock);
    dom->refs++;
    pthread_mutex_unlock(&dom->lock);
    *out = &ep->ep;
    return 0;
}

void dn2fi_ep_ini(const struct dn2fi_rdm_ops *rdm)
{
    rdm_ops = rdm;
    dn2fi_fill_enosys(&cq_fi_ops, sizeof(cq_fi_ops));
    cq_fi_ops.close = cq_close;
    dn2fi_fill_enosys(&cq_ops, sizeof(cq_ops));
    cq_ops.read = cq_read;
    cq_ops.readfrom = cq_readfrom;
    cq_ops.readerr = cq_readerr;
    cq_ops.sread = cq_sread;
    cq_ops.sreadfrom = cq_sreadfrom;
    cq_ops.strerror = cq_strerror;

    dn2fi_fill_enosys(&av_fi_ops, sizeof(av_fi_ops));
    av_fi_ops.close = av_close;
    av_fi_ops.bind = av_bind;
    dn2fi_fill_enosys(&av_ops, sizeof(av_ops));
    av_ops.insert = av_insert;
    av_ops.remove = av_remove;
    av_ops.lookup = av_lookup;
    av_ops.straddr = av_straddr;

    dn2fi_fill_enosys(&ep_fi_ops, sizeof(ep_fi_ops));
    ep_fi_ops.close = ep_close;
    ep_fi_ops.bind = ep_bind;
    ep_fi_ops.control = ep_control;
    dn2fi_fill_enosys(&ep_ops, sizeof(ep_ops));
    ep_ops.cancel = ep_cancel;
    ep_ops.getopt = ep_getopt;
    ep_ops.setopt = ep_setopt;
    ep_ops.rx_size_left = ep_rx_size_left;
    ep_ops.tx_size_left = ep_tx_size_left;
    dn2fi_fill_enosys(&ep_cm_ops, sizeof(ep_cm_ops));
    ep_cm_ops.getname = ep_getname;
    dn2fi_fill_enosys(&ep_msg_ops, sizeof(ep_msg_ops));
    ep_msg_ops.recv = ep_recv;
    ep_msg_ops.recvv = ep_recvv;
    ep_msg_ops.recvmsg = ep_recvmsg;
    ep_msg_ops.send = ep_send;
    ep_msg_ops.sendv = ep_sendv;
    ep_msg_ops.sendmsg = ep_sendmsg;
    ep_msg_ops.inject = ep_inject;
    ep_msg_ops.senddata = ep_senddata;
    ep_msg_ops.injectdata = ep_injectdata;
    dn2fi_fill_enosys(&ep_rma_ops, sizeof(ep_rma_ops));
    dn2fi_fill_enosys(&ep_tagged_ops, sizeof(ep_tagged_ops));
    dn2fi_fill_enosys(&ep_atomic_ops, sizeof(ep_atomic_ops));
    dn2fi_fill_enosys(&ep_coll_ops, sizeof(ep_coll_ops));
}
