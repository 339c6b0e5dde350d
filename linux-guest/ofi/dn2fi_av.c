/* SPDX-License-Identifier: MIT */
/*
 * libdimmnet2-fi: the address vector (FI_CLASS_AV): {LID, WID} addresses
 * (struct dn2fi_addr) in a table, FI_AV_TABLE or FI_AV_MAP alike.  The
 * endpoint bound to it is asked before an address is taken and told after
 * (its struct dn2fi_ep_up, dn2fi.h): the RDM endpoint refuses an address
 * its flow-control table has no slot for, and every endpoint sets the
 * sender's AMT entries.
 */
#define _GNU_SOURCE
#include "dn2fi.h"
#include "dimmnet2/dn2_uapi.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
        } else if (av->ep && av->ep->up->av_check(av->ep, a.lid, a.wid)) {
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
                av->ep->up->av_added(av->ep, a.lid);
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

static const struct fi_ops av_fi_ops = {
    .size = sizeof(struct fi_ops),
    .close = av_close,
    .bind = av_bind,
    .control = DN2FI_NOSYS(fi_ops, control),
    .ops_open = DN2FI_NOSYS(fi_ops, ops_open),
    .tostr = DN2FI_NOSYS(fi_ops, tostr),
    .ops_set = DN2FI_NOSYS(fi_ops, ops_set),
};

static const struct fi_ops_av av_ops = {
    .size = sizeof(struct fi_ops_av),
    .insert = av_insert,
    .insertsvc = DN2FI_NOSYS(fi_ops_av, insertsvc),
    .insertsym = DN2FI_NOSYS(fi_ops_av, insertsym),
    .remove = av_remove,
    .lookup = av_lookup,
    .straddr = av_straddr,
    .av_set = DN2FI_NOSYS(fi_ops_av, av_set),
};

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
    av->av.fid.ops = (struct fi_ops *)&av_fi_ops;
    av->av.ops = (struct fi_ops_av *)&av_ops;
    dom->refs++;
    *out = &av->av;
    return 0;
}
