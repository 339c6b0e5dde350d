/* SPDX-License-Identifier: MIT */
/*
 * libdimmnet2-fi: the completion queue (FI_CLASS_CQ).  The endpoints
 * above write their completions here (dn2fi_cq_write*); a read that finds
 * nothing drives the progress of the endpoints bound to the CQ through
 * the table each one gives at bind (struct dn2fi_ep_up, dn2fi.h).  Reads
 * that have found nothing for FI_DIMMNET2_SPIN_US sleep FI_DIMMNET2_IDLE_US
 * each, so that the vCPU halts instead of spinning; before that, each
 * executes the spin-wait hint (FI_DIMMNET2_PAUSE; docs/ofi-provider.md,
 * "Waiting for completions").
 */
#define _GNU_SOURCE
#include "dn2fi.h"
#include "dimmnet2/dn2_uapi.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static uint64_t now_us(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + ts.tv_nsec / 1000;
}

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
        cq->eps[i]->up->progress(cq->eps[i]);
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
    if (r != -FI_EAGAIN) {
        cq->empty_since = 0;
    } else if (cq->idle_us > 0) {
        /* Nothing arrived for spin_us: let the vCPU halt a moment instead
         * of spinning, so that under emulation the host CPU goes to the
         * QEMU threads and the switch that move the board's packets
         * (docs/ofi-provider.md, "Waiting for completions"). */
        uint64_t now = dn2fi_ns();
        if (!cq->empty_since) {
            cq->empty_since = now;
        }
        if (now - cq->empty_since >= (uint64_t)cq->spin_us * 1000) {
            struct timespec ts = { 0, cq->idle_us * 1000 };
            cq->idle_sleeps++;
            nanosleep(&ts, NULL);
            return r;
        }
    }
    if (r == -FI_EAGAIN && cq->pause) {
        /* The caller spins on us: the spin-wait hint (a QEMU vCPU with
         * -accel tcg,pause-yield=on gives the host CPU to the threads
         * that carry the board's packets; on a real CPU it saves power
         * and the sibling thread's cycles). */
        dn2_cpu_relax();
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

static const struct fi_ops cq_fi_ops = {
    .size = sizeof(struct fi_ops),
    .close = cq_close,
    .bind = DN2FI_NOSYS(fi_ops, bind),
    .control = DN2FI_NOSYS(fi_ops, control),
    .ops_open = DN2FI_NOSYS(fi_ops, ops_open),
    .tostr = DN2FI_NOSYS(fi_ops, tostr),
    .ops_set = DN2FI_NOSYS(fi_ops, ops_set),
};

static const struct fi_ops_cq cq_ops = {
    .size = sizeof(struct fi_ops_cq),
    .read = cq_read,
    .readfrom = cq_readfrom,
    .readerr = cq_readerr,
    .sread = cq_sread,
    .sreadfrom = cq_sreadfrom,
    .signal = DN2FI_NOSYS(fi_ops_cq, signal),
    .strerror = cq_strerror,
};

/* A switch from the environment, 0 or 1 (def when unset or empty): 0, or
 * -1 with a warning. */
static int env_bool(const char *name, long def, long *out)
{
    const char *v = getenv(name);

    *out = def;
    if (!v || !*v) {
        return 0;
    }
    if ((v[0] != '0' && v[0] != '1') || v[1]) {
        DN2FI_WARN(FI_LOG_CQ, "%s=%s: not 0 or 1\n", name, v);
        return -1;
    }
    *out = v[0] == '1';
    return 0;
}

/* A number of microseconds from the environment, 0..999999 in decimal
 * (def when unset or empty): 0, or -1 with a warning. */
static int env_us(const char *name, long def, long *out)
{
    const char *v = getenv(name);
    char *end;
    long n;

    *out = def;
    if (!v || !*v) {
        return 0;
    }
    errno = 0;
    n = strtol(v, &end, 10);
    if (errno || *end || n < 0 || n > 999999) {
        DN2FI_WARN(FI_LOG_CQ, "%s=%s: not a number of microseconds 0..999999\n", name, v);
        return -1;
    }
    *out = n;
    return 0;
}

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
        if (env_us("FI_DIMMNET2_IDLE_US", DN2FI_IDLE_US, &cq->idle_us) ||
            env_us("FI_DIMMNET2_SPIN_US", DN2FI_SPIN_US, &cq->spin_us) ||
            env_bool("FI_DIMMNET2_PAUSE", 1, &cq->pause)) {
            free(cq->ring);
            free(cq);
            return -FI_EINVAL;
        }
    }
    cq->cq.fid.fclass = FI_CLASS_CQ;
    cq->cq.fid.context = context;
    cq->cq.fid.ops = (struct fi_ops *)&cq_fi_ops;
    cq->cq.ops = (struct fi_ops_cq *)&cq_ops;
    dom->refs++;
    *out = &cq->cq;
    return 0;
}

/* An endpoint bound to the CQ: its progress runs on every read. */
int dn2fi_cq_attach(struct dn2fi_cq *cq, struct dn2fi_ep *ep)
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

void dn2fi_cq_detach(struct dn2fi_cq *cq, struct dn2fi_ep *ep)
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
