/* SPDX-License-Identifier: MIT */
/*
 * libdimmnet2-fi: provider entry (fi_prov_ini), fi_getinfo, fabric,
 * domain and EQ: the top of the provider (dn2fi.h).
 */
#define _GNU_SOURCE
#include "dn2fi.h"
#include "dimmnet2/dn2_uapi.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

/* A board that can carry traffic: driver loaded, SO-DIMM ready, link up
 * with a LID (the launcher's dn2-up did this). */
static int dn2fi_board_ok(int board, struct dn2_info *info)
{
    char path[32];
    int fd, ok;

    snprintf(path, sizeof(path), DN2_DEV_PREFIX "%d", board);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return 0;
    }
    ok = ioctl(fd, DN2_IOC_GET_INFO, info) == 0 &&
         info->abi_version == DN2_ABI_VERSION &&
         (info->flags & DN2_INFO_SDIMM_READY) && (info->flags & DN2_INFO_LINK_UP) &&
         (info->flags & DN2_INFO_LID_SET) &&
         info->sdimm_area >= DN2FI_SD_STAGE + 2 * DN2FI_STAGE_SLOT;
    close(fd);
    return ok;
}

/* --------------------------------------------------------- attributes */

#define DN2FI_CAPS      (FI_MSG | FI_SEND | FI_RECV | FI_LOCAL_COMM | FI_REMOTE_COMM)
#define DN2FI_TX_CAPS   (FI_MSG | FI_SEND)
#define DN2FI_RX_CAPS   (FI_MSG | FI_RECV)
#define DN2FI_TX_OPS    (FI_INJECT | FI_COMPLETION | FI_INJECT_COMPLETE | \
                         FI_TRANSMIT_COMPLETE | FI_REMOTE_CQ_DATA)
#define DN2FI_RX_OPS    (FI_COMPLETION)
#define DN2FI_ORDER     (FI_ORDER_SAS | FI_ORDER_RAW | FI_ORDER_WAW | FI_ORDER_SAW | \
                         FI_ORDER_WAS | FI_ORDER_RAR)
/* The native RDM endpoint (dn2fi_rdm.c) */
#define DN2FI_RDM_TX_CAPS (FI_MSG | FI_TAGGED | FI_SEND)
#define DN2FI_RDM_RX_CAPS (FI_MSG | FI_TAGGED | FI_RECV | FI_DIRECTED_RECV | FI_SOURCE)
#define DN2FI_RDM_TX_OPS  (DN2FI_TX_OPS | FI_DELIVERY_COMPLETE)
#define DN2FI_TAG_FORMAT  0xffffffffffffffffull     /* 64 bits, all matched */

static uint64_t caps_of(enum fi_ep_type type)
{
    return type == FI_EP_RDM ? DN2FI_RDM_CAPS : DN2FI_CAPS;
}

static int dn2fi_fill(struct fi_info *fi, int board, const struct dn2_info *bi,
                      const struct fi_info *hints, uint32_t version, enum fi_ep_type type)
{
    struct dn2fi_addr *src;
    char name[32];
    int rdm = type == FI_EP_RDM;

    fi->caps = rdm ? DN2FI_RDM_CAPS & ~FI_SOURCE : DN2FI_CAPS;
    if (hints && hints->caps) {
        /* primary caps asked for, plus our secondary ones */
        fi->caps = (hints->caps & caps_of(type)) | FI_LOCAL_COMM | FI_REMOTE_COMM;
        if (rdm) {
            fi->caps |= FI_DIRECTED_RECV;
            if (!(fi->caps & (FI_MSG | FI_TAGGED))) {
                fi->caps |= FI_MSG | FI_TAGGED;
            }
        }
        if (!(fi->caps & (FI_SEND | FI_RECV))) {
            fi->caps |= FI_SEND | FI_RECV;
        }
    }
    fi->mode = 0;
    fi->addr_format = FI_FORMAT_UNSPEC;
    src = calloc(1, sizeof(*src));
    if (!src) {
        return -FI_ENOMEM;
    }
    src->lid = (uint16_t)bi->lid;
    src->wid = 0;
    fi->src_addr = src;
    fi->src_addrlen = DN2FI_ADDRLEN;

    fi->tx_attr->caps = fi->caps & (rdm ? DN2FI_RDM_TX_CAPS : DN2FI_TX_CAPS);
    fi->tx_attr->mode = 0;
    fi->tx_attr->op_flags = hints && hints->tx_attr ?
                            hints->tx_attr->op_flags & (rdm ? DN2FI_RDM_TX_OPS : DN2FI_TX_OPS) : 0;
    fi->tx_attr->msg_order = DN2FI_ORDER;
    fi->tx_attr->comp_order = DN2FI_COMP_ORDER;
    fi->tx_attr->inject_size = rdm ? DN2FI_RDM_INJECT : DN2FI_INJECT;
    fi->tx_attr->size = DN2FI_QUEUE;
    fi->tx_attr->iov_limit = DN2FI_IOV_LIMIT;
    fi->tx_attr->rma_iov_limit = 0;

    fi->rx_attr->caps = fi->caps & (rdm ? DN2FI_RDM_RX_CAPS : DN2FI_RX_CAPS);
    fi->rx_attr->mode = 0;
    fi->rx_attr->op_flags = hints && hints->rx_attr ? hints->rx_attr->op_flags & DN2FI_RX_OPS : 0;
    fi->rx_attr->msg_order = DN2FI_ORDER;
    fi->rx_attr->comp_order = DN2FI_COMP_ORDER;
    fi->rx_attr->total_buffered_recv = 0;
    fi->rx_attr->size = DN2FI_QUEUE;
    fi->rx_attr->iov_limit = DN2FI_IOV_LIMIT;

    fi->ep_attr->type = type;
    fi->ep_attr->protocol = FI_PROTO_UNSPEC;
    fi->ep_attr->protocol_version = 1;
    fi->ep_attr->max_msg_size = rdm ? DN2FI_RDM_MAX_MSG : DN2FI_MAX_MSG;
    fi->ep_attr->msg_prefix_size = 0;
    fi->ep_attr->max_order_raw_size = 0;
    fi->ep_attr->max_order_war_size = 0;
    fi->ep_attr->max_order_waw_size = 0;
    fi->ep_attr->mem_tag_format = rdm ? DN2FI_TAG_FORMAT : 0;
    fi->ep_attr->tx_ctx_cnt = 1;
    fi->ep_attr->rx_ctx_cnt = 1;

    snprintf(name, sizeof(name), "dimmnet2-%d", board);
    fi->domain_attr->name = strdup(name);
    if (!fi->domain_attr->name) {
        return -FI_ENOMEM;
    }
    fi->domain_attr->threading = FI_THREAD_SAFE;
    fi->domain_attr->control_progress = FI_PROGRESS_MANUAL;
    fi->domain_attr->data_progress = FI_PROGRESS_MANUAL;
    fi->domain_attr->resource_mgmt = FI_RM_ENABLED;
    fi->domain_attr->av_type = hints && hints->domain_attr && hints->domain_attr->av_type ?
                               hints->domain_attr->av_type : FI_AV_UNSPEC;
    /* No registration needed: the provider copies through the board's
     * windows.  Old API (< 1.5) callers get the basic mode they know. */
    fi->domain_attr->mr_mode = FI_VERSION_LT(version, FI_VERSION(1, 5)) ? DN2FI_MR_BASIC : 0;
    fi->domain_attr->mr_key_size = 0;
    fi->domain_attr->cq_data_size = 4;
    fi->domain_attr->cq_cnt = 16;
    fi->domain_attr->ep_cnt = 1;        /* one WID per process */
    fi->domain_attr->tx_ctx_cnt = 1;
    fi->domain_attr->rx_ctx_cnt = 1;
    fi->domain_attr->max_ep_tx_ctx = 1;
    fi->domain_attr->max_ep_rx_ctx = 1;
    fi->domain_attr->max_ep_stx_ctx = 0;
    fi->domain_attr->max_ep_srx_ctx = 0;
    fi->domain_attr->mr_iov_limit = 1;
    fi->domain_attr->caps = FI_LOCAL_COMM | FI_REMOTE_COMM;
    fi->domain_attr->mode = 0;
    fi->domain_attr->max_err_data = 0;
    fi->domain_attr->mr_cnt = 0;

    fi->fabric_attr->name = strdup(DN2FI_FABRIC_NAME);
    if (!fi->fabric_attr->name) {
        return -FI_ENOMEM;
    }
    /* prov_name is filled by libfabric itself (and for ofi_rxd layered
     * over us, "dimmnet2;ofi_rxd"): never here. */
    fi->fabric_attr->prov_version = DN2FI_VERSION;
    return 0;
}

#define DN2FI_REFUSE(...) do { DN2FI_INFO(FI_LOG_CORE, __VA_ARGS__); return -FI_ENODATA; } while (0)

/* Do the hints ask for anything this provider cannot give? */
static int dn2fi_check_hints(const struct fi_info *h, uint32_t version, enum fi_ep_type type)
{
    int rdm = type == FI_EP_RDM;
    uint64_t caps = caps_of(type);

    (void)version;
    if (!h) {
        return 0;
    }
    if (h->caps & ~(caps | FI_LOCAL_COMM | FI_REMOTE_COMM)) {
        DN2FI_REFUSE("%s: unsupported caps 0x%llx\n", rdm ? "RDM" : "DGRAM",
                     (unsigned long long)(h->caps & ~caps));
    }
    if (h->addr_format != FI_FORMAT_UNSPEC) {
        DN2FI_REFUSE("address format %u (only FI_FORMAT_UNSPEC)\n", h->addr_format);
    }
    if (h->src_addr && h->src_addrlen != DN2FI_ADDRLEN) {
        DN2FI_REFUSE("source address of %zu bytes\n", h->src_addrlen);
    }
    if (h->ep_attr) {
        const struct fi_ep_attr *e = h->ep_attr;
        if (e->type != FI_EP_UNSPEC && e->type != type) {
            DN2FI_REFUSE("endpoint type %d (only FI_EP_RDM, FI_EP_DGRAM)\n", e->type);
        }
        if (e->protocol != FI_PROTO_UNSPEC) {
            DN2FI_REFUSE("protocol %u\n", e->protocol);
        }
        if (e->max_msg_size > (rdm ? DN2FI_RDM_MAX_MSG : DN2FI_MAX_MSG)) {
            DN2FI_REFUSE("max_msg_size %zu > %u\n", e->max_msg_size,
                         rdm ? DN2FI_RDM_MAX_MSG : DN2FI_MAX_MSG);
        }
        if (e->mem_tag_format && !rdm) {
            DN2FI_REFUSE("tags on a DGRAM endpoint\n");
        }
        if (e->tx_ctx_cnt > 1 || e->rx_ctx_cnt > 1 ||
            e->tx_ctx_cnt == FI_SHARED_CONTEXT || e->rx_ctx_cnt == FI_SHARED_CONTEXT) {
            DN2FI_REFUSE("shared or multiple contexts\n");
        }
        if (e->auth_key_size) {
            DN2FI_REFUSE("auth keys\n");
        }
    }
    if (h->tx_attr) {
        const struct fi_tx_attr *t = h->tx_attr;
        if (t->caps & ~(rdm ? DN2FI_RDM_TX_CAPS : DN2FI_TX_CAPS)) {
            DN2FI_REFUSE("tx caps 0x%llx\n", (unsigned long long)t->caps);
        }
        if (t->op_flags & ~DN2FI_TX_OPS & ~(FI_DELIVERY_COMPLETE)) {
            DN2FI_REFUSE("tx op_flags 0x%llx\n", (unsigned long long)t->op_flags);
        }
        if (t->inject_size > (rdm ? DN2FI_RDM_INJECT : DN2FI_INJECT) || t->size > DN2FI_QUEUE ||
            t->iov_limit > DN2FI_IOV_LIMIT || t->rma_iov_limit) {
            DN2FI_REFUSE("tx sizes beyond the provider's\n");
        }
        if (t->msg_order & ~DN2FI_ORDER) {
            DN2FI_REFUSE("tx msg_order\n");
        }
    }
    if (h->rx_attr) {
        const struct fi_rx_attr *r = h->rx_attr;
        if (r->caps & ~(rdm ? DN2FI_RDM_RX_CAPS : DN2FI_RX_CAPS)) {
            DN2FI_REFUSE("rx caps 0x%llx\n", (unsigned long long)r->caps);
        }
        if (r->op_flags & ~DN2FI_RX_OPS) {
            DN2FI_REFUSE("rx op_flags 0x%llx (no FI_MULTI_RECV)\n",
                         (unsigned long long)r->op_flags);
        }
        if (r->size > DN2FI_QUEUE || r->iov_limit > DN2FI_IOV_LIMIT ||
            r->total_buffered_recv) {
            DN2FI_REFUSE("rx sizes beyond the provider's\n");
        }
        if (r->msg_order & ~DN2FI_ORDER) {
            DN2FI_REFUSE("rx msg_order\n");
        }
    }
    if (h->domain_attr) {
        const struct fi_domain_attr *d = h->domain_attr;
        if (d->name && strncmp(d->name, "dimmnet2-", 9)) {
            DN2FI_REFUSE("domain %s\n", d->name);
        }
        if (d->control_progress == FI_PROGRESS_AUTO || d->data_progress == FI_PROGRESS_AUTO) {
            DN2FI_REFUSE("automatic progress\n");
        }
        if (d->cq_data_size > 4) {
            DN2FI_REFUSE("cq_data_size %zu > 4\n", d->cq_data_size);
        }
        if (d->av_type != FI_AV_UNSPEC && d->av_type != FI_AV_MAP && d->av_type != FI_AV_TABLE) {
            DN2FI_REFUSE("av_type %d\n", d->av_type);
        }
        if (d->mr_mode == DN2FI_MR_SCALABLE && FI_VERSION_LT(version, FI_VERSION(1, 5))) {
            DN2FI_REFUSE("FI_MR_SCALABLE\n");
        }
        if (d->auth_key_size) {
            DN2FI_REFUSE("auth keys\n");
        }
        if (d->ep_cnt > 1 || d->max_ep_tx_ctx > 1 || d->max_ep_rx_ctx > 1) {
            DN2FI_REFUSE("more than one endpoint per domain\n");
        }
    }
    if (h->fabric_attr && h->fabric_attr->name &&
        strcmp(h->fabric_attr->name, DN2FI_FABRIC_NAME)) {
        DN2FI_REFUSE("fabric %s\n", h->fabric_attr->name);
    }
    if (h->nic) {
        DN2FI_REFUSE("nic attributes\n");
    }
    return 0;
}

/* "LID:WID" (decimal or 0x hex), as fi_getinfo's node argument. */
static int dn2fi_parse_node(const char *node, struct dn2fi_addr *a)
{
    char *end;
    unsigned long lid, wid = 0;

    errno = 0;
    lid = strtoul(node, &end, 0);
    if (errno || end == node || lid == 0 || lid >= 0xc000) {
        return -FI_EINVAL;
    }
    if (*end == ':') {
        wid = strtoul(end + 1, &end, 0);
    }
    if (*end || wid > 1) {
        return -FI_EINVAL;
    }
    a->lid = (uint16_t)lid;
    a->wid = (uint8_t)wid;
    a->zero = 0;
    return 0;
}

static int dn2fi_getinfo(uint32_t version, const char *node, const char *service,
                         uint64_t flags, const struct fi_info *hints,
                         struct fi_info **info)
{
    /* the native RDM endpoint first: what an application asking for
     * anything reliable (Open MPI's ofi MTL) should get */
    static const enum fi_ep_type types[] = { FI_EP_RDM, FI_EP_DGRAM };
    struct fi_info *head = NULL, *tail = NULL, *fi;
    struct dn2fi_addr dest;
    struct dn2_info bi;
    int board, r, found = 0, offered = 0;
    size_t t;

    *info = NULL;
    if (FI_VERSION_LT(version, FI_VERSION(1, 0))) {
        return -FI_ENODATA;
    }
    if (service && *service) {
        DN2FI_INFO(FI_LOG_CORE, "no service names on DIMMnet-2\n");
        return -FI_ENODATA;
    }
    if (node && dn2fi_parse_node(node, &dest)) {
        DN2FI_INFO(FI_LOG_CORE, "node %s is not LID[:WID]\n", node);
        return -FI_ENODATA;
    }
    for (t = 0; t < sizeof(types) / sizeof(types[0]); t++) {
        if (dn2fi_check_hints(hints, version, types[t])) {
            continue;
        }
        offered++;
        for (board = 0; board < DN2FI_MAX_BOARDS; board++) {
            if (!dn2fi_board_ok(board, &bi)) {
                continue;
            }
            if (hints && hints->domain_attr && hints->domain_attr->name) {
                char name[32];
                snprintf(name, sizeof(name), "dimmnet2-%d", board);
                if (strcmp(name, hints->domain_attr->name)) {
                    continue;
                }
            }
            if (node && (flags & FI_SOURCE) && dest.lid != bi.lid) {
                continue;
            }
            fi = fi_allocinfo();
            if (!fi) {
                fi_freeinfo(head);
                return -FI_ENOMEM;
            }
            if ((r = dn2fi_fill(fi, board, &bi, hints, version, types[t]))) {
                fi_freeinfo(fi);
                fi_freeinfo(head);
                return r;
            }
            if (node && !(flags & FI_SOURCE)) {
                struct dn2fi_addr *dst = malloc(sizeof(*dst));
                if (!dst) {
                    fi_freeinfo(fi);
                    fi_freeinfo(head);
                    return -FI_ENOMEM;
                }
                *dst = dest;
                fi->dest_addr = dst;
                fi->dest_addrlen = DN2FI_ADDRLEN;
            }
            if (tail) {
                tail->next = fi;
            } else {
                head = fi;
            }
            tail = fi;
            found++;
        }
    }
    if (!offered) {
        return -FI_ENODATA;     /* the hints: reasons logged */
    }
    if (!found) {
        DN2FI_INFO(FI_LOG_CORE, "no DIMMnet-2 board ready (driver loaded, dn2-up done?)\n");
        return -FI_ENODATA;
    }
    *info = head;
    return 0;
}

/* ------------------------------------------------------------- fabric */

static int dn2fi_fabric_close(struct fid *fid)
{
    free(container_of(fid, struct dn2fi_fabric, fabric.fid));
    return 0;
}

static int dn2fi_trywait(struct fid_fabric *fabric, struct fid **fids, int count)
{
    (void)fabric; (void)fids; (void)count;
    return -FI_EAGAIN;      /* no wait objects: keep polling */
}

static const struct fi_ops dn2fi_fabric_fi_ops = {
    .size = sizeof(struct fi_ops),
    .close = dn2fi_fabric_close,
    .bind = DN2FI_NOSYS(fi_ops, bind),
    .control = DN2FI_NOSYS(fi_ops, control),
    .ops_open = DN2FI_NOSYS(fi_ops, ops_open),
    .tostr = DN2FI_NOSYS(fi_ops, tostr),
    .ops_set = DN2FI_NOSYS(fi_ops, ops_set),
};

static const struct fi_ops_fabric dn2fi_fabric_ops = {
    .size = sizeof(struct fi_ops_fabric),
    .domain = dn2fi_domain_open,
    .passive_ep = DN2FI_NOSYS(fi_ops_fabric, passive_ep),
    .eq_open = dn2fi_eq_open,
    .wait_open = DN2FI_NOSYS(fi_ops_fabric, wait_open),
    .trywait = dn2fi_trywait,
};

int dn2fi_fabric_open(struct fi_fabric_attr *attr, struct fid_fabric **fabric,
                      void *context)
{
    struct dn2fi_fabric *f;

    if (!attr || !attr->name || strcmp(attr->name, DN2FI_FABRIC_NAME)) {
        return -FI_EINVAL;
    }
    f = calloc(1, sizeof(*f));
    if (!f) {
        return -FI_ENOMEM;
    }
    f->fabric.fid.fclass = FI_CLASS_FABRIC;
    f->fabric.fid.context = context;
    f->fabric.fid.ops = (struct fi_ops *)&dn2fi_fabric_fi_ops;
    f->fabric.ops = (struct fi_ops_fabric *)&dn2fi_fabric_ops;
    f->fabric.api_version = attr->api_version;
    *fabric = &f->fabric;
    return 0;
}

/* ------------------------------------------------------------- domain */

static int dn2fi_domain_close(struct fid *fid)
{
    struct dn2fi_domain *d = container_of(fid, struct dn2fi_domain, domain.fid);

    if (d->refs) {
        return -FI_EBUSY;
    }
    pthread_mutex_destroy(&d->lock);
    free(d);
    return 0;
}

struct dn2fi_mr {
    struct fid_mr mr;
};

static int dn2fi_mr_close(struct fid *fid)
{
    free(container_of(fid, struct dn2fi_mr, mr.fid));
    return 0;
}

static const struct fi_ops dn2fi_mr_fi_ops = {
    .size = sizeof(struct fi_ops),
    .close = dn2fi_mr_close,
    .bind = DN2FI_NOSYS(fi_ops, bind),
    .control = DN2FI_NOSYS(fi_ops, control),
    .ops_open = DN2FI_NOSYS(fi_ops, ops_open),
    .tostr = DN2FI_NOSYS(fi_ops, tostr),
    .ops_set = DN2FI_NOSYS(fi_ops, ops_set),
};

/* Registration is not needed; a handle is given to callers that ask. */
static int dn2fi_mr_reg(struct fid *fid, const void *buf, size_t len,
                        uint64_t access, uint64_t offset, uint64_t requested_key,
                        uint64_t flags, struct fid_mr **mr, void *context)
{
    struct dn2fi_mr *m;

    (void)buf; (void)len; (void)access; (void)offset; (void)flags;
    if (fid->fclass != FI_CLASS_DOMAIN) {
        return -FI_EINVAL;
    }
    m = calloc(1, sizeof(*m));
    if (!m) {
        return -FI_ENOMEM;
    }
    m->mr.fid.fclass = FI_CLASS_MR;
    m->mr.fid.context = context;
    m->mr.fid.ops = (struct fi_ops *)&dn2fi_mr_fi_ops;
    m->mr.mem_desc = NULL;
    m->mr.key = requested_key;
    *mr = &m->mr;
    return 0;
}

static int dn2fi_mr_regv(struct fid *fid, const struct iovec *iov, size_t count,
                         uint64_t access, uint64_t offset, uint64_t requested_key,
                         uint64_t flags, struct fid_mr **mr, void *context)
{
    if (count > 1) {
        return -FI_EINVAL;
    }
    return dn2fi_mr_reg(fid, count ? iov[0].iov_base : NULL, count ? iov[0].iov_len : 0,
                        access, offset, requested_key, flags, mr, context);
}

static int dn2fi_mr_regattr(struct fid *fid, const struct fi_mr_attr *attr,
                            uint64_t flags, struct fid_mr **mr)
{
    return dn2fi_mr_regv(fid, attr->mr_iov, attr->iov_count, attr->access,
                         attr->offset, attr->requested_key, flags, mr, attr->context);
}

static const struct fi_ops_mr dn2fi_mr_ops = {
    .size = sizeof(struct fi_ops_mr),
    .reg = dn2fi_mr_reg,
    .regv = dn2fi_mr_regv,
    .regattr = dn2fi_mr_regattr,
};

static const struct fi_ops dn2fi_domain_fi_ops = {
    .size = sizeof(struct fi_ops),
    .close = dn2fi_domain_close,
    .bind = DN2FI_NOSYS(fi_ops, bind),
    .control = DN2FI_NOSYS(fi_ops, control),
    .ops_open = DN2FI_NOSYS(fi_ops, ops_open),
    .tostr = DN2FI_NOSYS(fi_ops, tostr),
    .ops_set = DN2FI_NOSYS(fi_ops, ops_set),
};

static const struct fi_ops_domain dn2fi_domain_ops = {
    .size = sizeof(struct fi_ops_domain),
    .av_open = dn2fi_av_open,
    .cq_open = dn2fi_cq_open,
    .endpoint = dn2fi_endpoint,
    .scalable_ep = DN2FI_NOSYS(fi_ops_domain, scalable_ep),
    .cntr_open = DN2FI_NOSYS(fi_ops_domain, cntr_open),
    .poll_open = DN2FI_NOSYS(fi_ops_domain, poll_open),
    .stx_ctx = DN2FI_NOSYS(fi_ops_domain, stx_ctx),
    .srx_ctx = DN2FI_NOSYS(fi_ops_domain, srx_ctx),
    .query_atomic = DN2FI_NOSYS(fi_ops_domain, query_atomic),
    .query_collective = DN2FI_NOSYS(fi_ops_domain, query_collective),
};

int dn2fi_domain_open(struct fid_fabric *fabric, struct fi_info *info,
                      struct fid_domain **dom, void *context)
{
    struct dn2fi_domain *d;
    struct dn2_info bi;
    int board = 0;

    if (info && info->domain_attr && info->domain_attr->name &&
        sscanf(info->domain_attr->name, "dimmnet2-%d", &board) != 1) {
        return -FI_EINVAL;
    }
    if (board < 0 || board >= DN2FI_MAX_BOARDS || !dn2fi_board_ok(board, &bi)) {
        return -FI_ENODEV;
    }
    d = calloc(1, sizeof(*d));
    if (!d) {
        return -FI_ENOMEM;
    }
    pthread_mutex_init(&d->lock, NULL);
    d->fab = container_of(fabric, struct dn2fi_fabric, fabric);
    d->board = board;
    d->domain.fid.fclass = FI_CLASS_DOMAIN;
    d->domain.fid.context = context;
    d->domain.fid.ops = (struct fi_ops *)&dn2fi_domain_fi_ops;
    d->domain.ops = (struct fi_ops_domain *)&dn2fi_domain_ops;
    d->domain.mr = (struct fi_ops_mr *)&dn2fi_mr_ops;
    *dom = &d->domain;
    return 0;
}

/* ----------------------------------------------------------------- EQ */

/* An EQ with nothing to report: the provider has no connections and its
 * AV inserts are synchronous. */
static ssize_t dn2fi_eq_read(struct fid_eq *eq, uint32_t *event, void *buf,
                             size_t len, uint64_t flags)
{
    (void)eq; (void)event; (void)buf; (void)len; (void)flags;
    return -FI_EAGAIN;
}

static ssize_t dn2fi_eq_readerr(struct fid_eq *eq, struct fi_eq_err_entry *buf,
                                uint64_t flags)
{
    (void)eq; (void)buf; (void)flags;
    return -FI_EAGAIN;
}

static ssize_t dn2fi_eq_sread(struct fid_eq *eq, uint32_t *event, void *buf,
                              size_t len, int timeout, uint64_t flags)
{
    (void)eq; (void)event; (void)buf; (void)len; (void)flags;
    if (timeout > 0) {
        usleep((useconds_t)timeout * 1000);
    }
    return -FI_EAGAIN;
}

static const char *dn2fi_eq_strerror(struct fid_eq *eq, int prov_errno,
                                     const void *err_data, char *buf, size_t len)
{
    (void)eq; (void)err_data;
    if (buf && len) {
        snprintf(buf, len, "%s", dn2_strerror(prov_errno));
    }
    return dn2_strerror(prov_errno);
}

static int dn2fi_eq_close(struct fid *fid)
{
    free(container_of(fid, struct dn2fi_eq, eq.fid));
    return 0;
}

static const struct fi_ops dn2fi_eq_fi_ops = {
    .size = sizeof(struct fi_ops),
    .close = dn2fi_eq_close,
    .bind = DN2FI_NOSYS(fi_ops, bind),
    .control = DN2FI_NOSYS(fi_ops, control),
    .ops_open = DN2FI_NOSYS(fi_ops, ops_open),
    .tostr = DN2FI_NOSYS(fi_ops, tostr),
    .ops_set = DN2FI_NOSYS(fi_ops, ops_set),
};

static const struct fi_ops_eq dn2fi_eq_ops = {
    .size = sizeof(struct fi_ops_eq),
    .read = dn2fi_eq_read,
    .readerr = dn2fi_eq_readerr,
    .write = DN2FI_NOSYS(fi_ops_eq, write),
    .sread = dn2fi_eq_sread,
    .strerror = dn2fi_eq_strerror,
};

int dn2fi_eq_open(struct fid_fabric *fabric, struct fi_eq_attr *attr,
                  struct fid_eq **eq, void *context)
{
    struct dn2fi_eq *e;

    (void)fabric;
    if (attr && attr->wait_obj != FI_WAIT_NONE && attr->wait_obj != FI_WAIT_UNSPEC) {
        return -FI_ENOSYS;
    }
    e = calloc(1, sizeof(*e));
    if (!e) {
        return -FI_ENOMEM;
    }
    e->eq.fid.fclass = FI_CLASS_EQ;
    e->eq.fid.context = context;
    e->eq.fid.ops = (struct fi_ops *)&dn2fi_eq_fi_ops;
    e->eq.ops = (struct fi_ops_eq *)&dn2fi_eq_ops;
    *eq = &e->eq;
    return 0;
}

/* ------------------------------------------------------------- entry */

static void dn2fi_cleanup(void)
{
}

FI_EXT_INI
{
    dn2fi_prov.getinfo = dn2fi_getinfo;
    dn2fi_prov.fabric = dn2fi_fabric_open;
    dn2fi_prov.cleanup = dn2fi_cleanup;
    return &dn2fi_prov;
}
