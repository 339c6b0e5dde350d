/* SPDX-License-Identifier: MIT */
/*
 * libdimmnet2-fi: the endpoint object (FI_CLASS_EP) of both endpoint
 * types: open (the board's WID), bind to the CQs and the AV, enable (the
 * receive ring, the AMT entries of every possible sender), control,
 * cancel, close (FI_DIMMNET2_STATS).  Its data operations are the files
 * below: the native RDM endpoint (dn2fi_rdm.c, through its const struct
 * dn2fi_rdm_ops) and the DGRAM endpoint (dn2fi_dgram.c's message table);
 * the CQ and the AV reach the endpoint only through the struct
 * dn2fi_ep_up it gives them (progress, an address to check and one
 * inserted).
 */
#define _GNU_SOURCE
#include "dn2fi.h"
#include "dimmnet2/dn2_uapi.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The RDM endpoint's operations, below this file. */
static const struct dn2fi_rdm_ops *const rdm_ops = &dn2fi_rdm_ops;

static inline struct dn2fi_ep *ep_of(struct fid_ep *fid)
{
    return container_of(fid, struct dn2fi_ep, ep);
}

/* AMT entries: every sender we may hear from must map to our ring, or
 * the board drops its LHS packets. */
static int ep_add_peer(struct dn2fi_ep *ep, uint16_t lid)
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
                    if ((r = ep_add_peer(ep, (uint16_t)lid))) {
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
                    r = ep_add_peer(ep, (uint16_t)l);
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
            r = ep_add_peer(ep, (uint16_t)l);
        }
    }
    if (!r) {
        r = ep_add_peer(ep, ep->lid);
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
        if (ep->av->tab[i].valid && (r = ep_add_peer(ep, ep->av->tab[i].a.lid))) {
            ep->enabled = 0;
            return r;
        }
    }
    if (ep->type == FI_EP_RDM) {
        rdm_ops->progress(ep);     /* the hellos leave now, before the job's fence */
    }
    return 0;
}

static void ep_progress(struct dn2fi_ep *ep)
{
    if (!ep->enabled) {
        return;
    }
    if (ep->type == FI_EP_RDM) {
        rdm_ops->progress(ep);
    } else {
        dn2fi_dgram_progress(ep);
    }
}

/* The AV asks before it takes an address: the RDM endpoint's
 * flow-control table must have a slot for it (else -FI_ENOSPC: refused
 * rather than sent to without flow control). */
static int ep_av_check(struct dn2fi_ep *ep, uint16_t lid, int wid)
{
    return ep->type == FI_EP_RDM ? rdm_ops->add_dest(ep, lid, wid) : 0;
}

/* ... and says when it took one: the sender's AMT entries. */
static int ep_av_added(struct dn2fi_ep *ep, uint16_t lid)
{
    return ep_add_peer(ep, lid);
}

/* How the CQ and the AV below reach the endpoint. */
static const struct dn2fi_ep_up ep_up = {
    .progress = ep_progress,
    .av_check = ep_av_check,
    .av_added = ep_av_added,
};

/* ------------------------------------------------------ control, misc */

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
        if ((r = dn2fi_cq_attach(cq, ep))) {
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
        dn2fi_cq_detach(ep->txcq, ep);
    }
    if (ep->rxcq && ep->rxcq != ep->txcq) {
        dn2fi_cq_detach(ep->rxcq, ep);
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
                "ms in: gather+VS staging %.1f, Write Window %.1f, LHSv2 issue %.1f "
                "(slowest %.0f us, %llu over 1 ms), "
                "BOTF images %.1f (%llu), ring copy-out (dn2_sd_read) %.1f, "
                "LLCM copy-out %.1f (%llu bytes), LH Buffer handling %.1f; "
                "board busy: WW half %llu, request FIFO %llu; waits for credit %llu; "
                "progress calls %llu, CQ reads that slept %llu\n",
                ep->lid, ep->wid, ep->type == FI_EP_RDM ? "RDM" : "DGRAM",
                ep->bulk == DN2FI_BULK_LLCM ? "llcm" :
                ep->bulk == DN2FI_BULK_SODIMM ? "sodimm" : "mixed", open_ms,
                (unsigned long long)ep->tx_msgs, (unsigned long long)ep->tx_bytes,
                (unsigned long long)ep->rx_dgrams, (unsigned long long)ep->rx_bytes,
                ep->ns_stage / 1e6, ep->ns_ww / 1e6, ep->ns_issue / 1e6,
                ep->ns_issue_max / 1e3, (unsigned long long)ep->issue_slow,
                ep->ns_botf / 1e6, (unsigned long long)ep->botf_images, ep->ns_read / 1e6,
                ep->ns_llcm / 1e6, (unsigned long long)ep->llcm_bytes,
                (ep->ns_lhb > ep->ns_read + ep->ns_llcm ?
                 ep->ns_lhb - ep->ns_read - ep->ns_llcm : 0) / 1e6,
                (unsigned long long)ep->busy_half, (unsigned long long)ep->busy_fifo,
                (unsigned long long)ep->busy_credit,
                (unsigned long long)ep->progress_calls,
                (unsigned long long)(ep->rxcq ? ep->rxcq->idle_sleeps : 0));
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
    ssize_t r;

    pthread_mutex_lock(&ep->dom->lock);
    r = ep->type == FI_EP_RDM ? rdm_ops->cancel(ep, context) : dn2fi_dgram_cancel(ep, context);
    pthread_mutex_unlock(&ep->dom->lock);
    return r;
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

static const struct fi_ops ep_fi_ops = {
    .size = sizeof(struct fi_ops),
    .close = ep_close,
    .bind = ep_bind,
    .control = ep_control,
    .ops_open = DN2FI_NOSYS(fi_ops, ops_open),
    .tostr = DN2FI_NOSYS(fi_ops, tostr),
    .ops_set = DN2FI_NOSYS(fi_ops, ops_set),
};

static const struct fi_ops_ep ep_ops = {
    .size = sizeof(struct fi_ops_ep),
    .cancel = ep_cancel,
    .getopt = ep_getopt,
    .setopt = ep_setopt,
    .tx_ctx = DN2FI_NOSYS(fi_ops_ep, tx_ctx),
    .rx_ctx = DN2FI_NOSYS(fi_ops_ep, rx_ctx),
    .rx_size_left = ep_rx_size_left,
    .tx_size_left = ep_tx_size_left,
};

static const struct fi_ops_cm ep_cm_ops = {
    .size = sizeof(struct fi_ops_cm),
    .setname = DN2FI_NOSYS(fi_ops_cm, setname),
    .getname = ep_getname,
    .getpeer = DN2FI_NOSYS(fi_ops_cm, getpeer),
    .connect = DN2FI_NOSYS(fi_ops_cm, connect),
    .listen = DN2FI_NOSYS(fi_ops_cm, listen),
    .accept = DN2FI_NOSYS(fi_ops_cm, accept),
    .reject = DN2FI_NOSYS(fi_ops_cm, reject),
    .shutdown = DN2FI_NOSYS(fi_ops_cm, shutdown),
    .join = DN2FI_NOSYS(fi_ops_cm, join),
};

static const struct fi_ops_rma ep_rma_ops = {
    .size = sizeof(struct fi_ops_rma),
    .read = DN2FI_NOSYS(fi_ops_rma, read),
    .readv = DN2FI_NOSYS(fi_ops_rma, readv),
    .readmsg = DN2FI_NOSYS(fi_ops_rma, readmsg),
    .write = DN2FI_NOSYS(fi_ops_rma, write),
    .writev = DN2FI_NOSYS(fi_ops_rma, writev),
    .writemsg = DN2FI_NOSYS(fi_ops_rma, writemsg),
    .inject = DN2FI_NOSYS(fi_ops_rma, inject),
    .writedata = DN2FI_NOSYS(fi_ops_rma, writedata),
    .injectdata = DN2FI_NOSYS(fi_ops_rma, injectdata),
};

/* the DGRAM endpoint's: no tagged messages */
static const struct fi_ops_tagged ep_tagged_ops = {
    .size = sizeof(struct fi_ops_tagged),
    .recv = DN2FI_NOSYS(fi_ops_tagged, recv),
    .recvv = DN2FI_NOSYS(fi_ops_tagged, recvv),
    .recvmsg = DN2FI_NOSYS(fi_ops_tagged, recvmsg),
    .send = DN2FI_NOSYS(fi_ops_tagged, send),
    .sendv = DN2FI_NOSYS(fi_ops_tagged, sendv),
    .sendmsg = DN2FI_NOSYS(fi_ops_tagged, sendmsg),
    .inject = DN2FI_NOSYS(fi_ops_tagged, inject),
    .senddata = DN2FI_NOSYS(fi_ops_tagged, senddata),
    .injectdata = DN2FI_NOSYS(fi_ops_tagged, injectdata),
};

static const struct fi_ops_atomic ep_atomic_ops = {
    .size = sizeof(struct fi_ops_atomic),
    .write = DN2FI_NOSYS(fi_ops_atomic, write),
    .writev = DN2FI_NOSYS(fi_ops_atomic, writev),
    .writemsg = DN2FI_NOSYS(fi_ops_atomic, writemsg),
    .inject = DN2FI_NOSYS(fi_ops_atomic, inject),
    .readwrite = DN2FI_NOSYS(fi_ops_atomic, readwrite),
    .readwritev = DN2FI_NOSYS(fi_ops_atomic, readwritev),
    .readwritemsg = DN2FI_NOSYS(fi_ops_atomic, readwritemsg),
    .compwrite = DN2FI_NOSYS(fi_ops_atomic, compwrite),
    .compwritev = DN2FI_NOSYS(fi_ops_atomic, compwritev),
    .compwritemsg = DN2FI_NOSYS(fi_ops_atomic, compwritemsg),
    .writevalid = DN2FI_NOSYS(fi_ops_atomic, writevalid),
    .readwritevalid = DN2FI_NOSYS(fi_ops_atomic, readwritevalid),
    .compwritevalid = DN2FI_NOSYS(fi_ops_atomic, compwritevalid),
};

static const struct fi_ops_collective ep_coll_ops = {
    .size = sizeof(struct fi_ops_collective),
    .barrier = DN2FI_NOSYS(fi_ops_collective, barrier),
    .broadcast = DN2FI_NOSYS(fi_ops_collective, broadcast),
    .alltoall = DN2FI_NOSYS(fi_ops_collective, alltoall),
    .allreduce = DN2FI_NOSYS(fi_ops_collective, allreduce),
    .allgather = DN2FI_NOSYS(fi_ops_collective, allgather),
    .reduce_scatter = DN2FI_NOSYS(fi_ops_collective, reduce_scatter),
    .reduce = DN2FI_NOSYS(fi_ops_collective, reduce),
    .scatter = DN2FI_NOSYS(fi_ops_collective, scatter),
    .gather = DN2FI_NOSYS(fi_ops_collective, gather),
    .msg = DN2FI_NOSYS(fi_ops_collective, msg),
};

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
    ep->up = &ep_up;
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
    ep->ep.fid.ops = (struct fi_ops *)&ep_fi_ops;
    ep->ep.ops = (struct fi_ops_ep *)&ep_ops;
    ep->ep.cm = (struct fi_ops_cm *)&ep_cm_ops;
    ep->ep.msg = ep->type == FI_EP_RDM ? rdm_ops->msg : (struct fi_ops_msg *)&dn2fi_dgram_msg_ops;
    ep->ep.rma = (struct fi_ops_rma *)&ep_rma_ops;
    ep->ep.tagged = ep->type == FI_EP_RDM ? rdm_ops->tagged : (struct fi_ops_tagged *)&ep_tagged_ops;
    if (ep->type == FI_EP_RDM && (r = rdm_ops->open(ep))) {
        dn2_close(ep->d);
        free(ep->scratch);
        free(ep->gather);
        free(ep->rxq);
        free(ep);
        return r;
    }
    ep->ep.atomic = (struct fi_ops_atomic *)&ep_atomic_ops;
    ep->ep.collective = (struct fi_ops_collective *)&ep_coll_ops;
    pthread_mutex_lock(&dom->lock);
    dom->refs++;
    pthread_mutex_unlock(&dom->lock);
    *out = &ep->ep;
    return 0;
}
