/* SPDX-License-Identifier: MIT */
/* dn2msg: tagged messages over IPUSH + LHS (see dn2msg.h). */
#define _GNU_SOURCE
#include "dn2msg.h"
#include "dn2-internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Envelope Context: [15:12] kind, [11:0] communicator (0). */
enum { K_DATA = 0, K_RTS = 1, K_FIN = 2, K_BARRIER = 3 };
#define CTX(kind)       ((unsigned)(kind) << 12)
#define CTX_KIND(ctx)   ((ctx) >> 12)

#define WW_PAYLOAD      (DN2_BOTF_MAX - DN2_LINE)   /* 504 bytes after the envelope */
#define LLCM_STATUS_LEN 1024u                       /* of DN2_LLCM_MAP_STATUS_LEN */
#define PW_MSG          3                           /* Prefetch Window we read through */

struct umsg {
    struct umsg *next;
    int kind, src, tag;
    size_t len;
    uint8_t *data;
};

/* What last used a Write Window, so it is not overwritten too early
 * (a VS through dn2_sd_write has always completed when it returns). */
enum { WW_FREE, WW_LHS };

struct dn2_comm {
    dn2_t *d;
    int rank, size;
    struct dn2_rank *tab;
    struct dn2_comm_opts o;
    struct dn2_ring ring;
    uint32_t sd_eager, sd_stage, sd_land;
    struct umsg *uq, **uq_tail;
    uint32_t next_id, fin_wait;
    int fin_got;
    uint32_t barrier_epoch;
    int ww_next;
    int ww_use[DN2_NUM_WW];
    unsigned ww_seq[DN2_NUM_WW];        /* IPUSH count that frees it */
    unsigned ipush_issued, ipush_base;
};

int dn2_comm_rank(const dn2_comm_t *c) { return c->rank; }
int dn2_comm_size(const dn2_comm_t *c) { return c->size; }

/* ---------------------------------------------------------- helpers */

static unsigned ipush_left(dn2_comm_t *c)
{
    return (dn2_count(c->d, DN2_PC_IPUSH) - c->ipush_base) & DN2_PC_MASK;
}

/* Wait until Write Window n may be overwritten. */
static int ww_acquire(dn2_comm_t *c, int n)
{
    if (c->ww_use[n] == WW_LHS) {
        unsigned need = c->ww_seq[n];
        uint64_t t0 = dn2i_now_us();
        while (((ipush_left(c) - need) & DN2_PC_MASK) > DN2_PC_MASK / 2) {
            if (c->o.timeout_us >= 0 && dn2i_now_us() - t0 > (uint64_t)c->o.timeout_us) {
                return -ETIMEDOUT;
            }
            dn2_cpu_relax();
        }
    }
    c->ww_use[n] = WW_FREE;
    return 0;
}

static int ww_take(dn2_comm_t *c, int *n)
{
    *n = c->ww_next;
    c->ww_next = (c->ww_next + 1) % DN2_NUM_WW;
    return ww_acquire(c, *n);
}

/* Copy a user buffer into our SO-DIMM at sd through the Write Windows
 * (each first freed of what used it last). */
static int stage(dn2_comm_t *c, uint32_t sd, const uint8_t *buf, size_t len)
{
    int i, r;

    for (i = 0; i < DN2_NUM_WW; i++) {
        if ((r = ww_acquire(c, i))) {
            return r;
        }
    }
    return dn2_sd_write(c->d, sd, buf, len, DN2_WIN_ALL, c->o.timeout_us);
}

/* Read our SO-DIMM [sd, sd + len) through Prefetch Window PW_MSG. */
static int sd_read(dn2_comm_t *c, uint32_t sd, uint8_t *buf, size_t len)
{
    return dn2_sd_read(c->d, sd, buf, len, 1u << PW_MSG, c->o.timeout_us);
}

/* Read bytes of our receive ring starting at SO-DIMM offset 'at'. */
static int ring_read(dn2_comm_t *c, uint32_t at, uint8_t *buf, size_t len)
{
    uint32_t pos = at - c->ring.base;
    size_t first = len < c->ring.size - pos ? len : c->ring.size - pos;
    int r = sd_read(c, at, buf, first);

    if (!r && first < len) {
        r = sd_read(c, c->ring.base, buf + first, len - first);
    }
    return r;
}

/* Send an LHS message: envelope + payload (<= 504) from a Write Window,
 * then sd_len bytes from our SO-DIMM at sd_src. */
static int lhs_send(dn2_comm_t *c, int dest, int kind, uint32_t tag,
                    const void *payload, size_t plen, uint32_t sd_src, size_t sd_len)
{
    uint8_t img[DN2_BOTF_MAX];
    uint64_t env = dn2_envelope(CTX(kind), (unsigned)c->rank, tag);
    int n, r;

    if ((r = ww_take(c, &n))) {
        return r;
    }
    memcpy(img, &env, 8);
    if (plen) {
        memcpy(img + 8, payload, plen);
    }
    dn2_ww_write(c->d, n * DN2_WIN_SIZE, img, 8 + plen);
    r = dn2_lhsv2(c->d, c->tab[dest].lid, c->tab[dest].wid, n * DN2_WIN_SIZE,
                  (uint32_t)(8 + plen), sd_src, (uint32_t)(8 + plen + sd_len), 0);
    if (r) {
        return r;
    }
    c->ipush_issued = (c->ipush_issued + 1) & DN2_PC_MASK;
    c->ww_use[n] = WW_LHS;
    c->ww_seq[n] = c->ipush_issued;
    return 0;
}

/* Take one arrived message off the LH Buffer: 1 if one was taken. */
static int progress(dn2_comm_t *c, long timeout_us)
{
    struct dn2_lh_msg m;
    struct umsg *u;
    uint32_t over;
    int r;

    r = dn2_lh_next(c->d, &m, timeout_us);
    if (r <= 0) {
        return r;
    }
    if ((r = dn2_lh_wait_complete(c->d, &m, c->o.timeout_us))) {
        return r;
    }
    u = calloc(1, sizeof(*u));
    if (!u || !(u->data = malloc(m.size ? m.size : 1))) {
        free(u);
        return -ENOMEM;
    }
    u->kind = CTX_KIND(m.context);
    u->src = (int)m.rank;
    u->tag = (int)m.tag;
    u->len = m.size;
    memcpy(u->data, m.data, m.size < DN2_LHB_DATA ? m.size : DN2_LHB_DATA);
    over = m.size > DN2_LHB_DATA ? m.size - DN2_LHB_DATA : 0;
    if (over && (r = ring_read(c, m.pointer, u->data + DN2_LHB_DATA, over))) {
        free(u->data);
        free(u);
        return r;
    }
    if (over) {
        dn2_ring_consume(c->d, &c->ring, over);
    }
    dn2_lh_release(c->d);

    if (u->kind == K_FIN) {
        uint32_t id = 0;
        memcpy(&id, u->data, u->len >= 4 ? 4 : 0);
        if (id == c->fin_wait) {
            c->fin_got = 1;
        }
        free(u->data);
        free(u);
        return 1;
    }
    *c->uq_tail = u;
    c->uq_tail = &u->next;
    return 1;
}

/* Find and unlink the first queued message that matches. */
static struct umsg *match(dn2_comm_t *c, int kind_data, int src, int tag)
{
    struct umsg **p, *u;

    for (p = &c->uq; (u = *p); p = &u->next) {
        int data_kind = u->kind == K_DATA || u->kind == K_RTS;
        if ((kind_data ? data_kind : u->kind == K_BARRIER) &&
            (src == DN2_ANY_SOURCE || u->src == src) &&
            (tag == DN2_ANY_TAG || u->tag == tag)) {
            *p = u->next;
            if (c->uq_tail == &u->next) {
                c->uq_tail = p;
            }
            u->next = NULL;
            return u;
        }
    }
    return NULL;
}

static struct umsg *wait_match(dn2_comm_t *c, int kind_data, int src, int tag,
                               int *err)
{
    uint64_t t0 = dn2i_now_us();
    struct umsg *u;
    int r;

    while (!(u = match(c, kind_data, src, tag))) {
        r = progress(c, 1000);
        if (r < 0 && r != -ETIMEDOUT) {
            *err = r;
            return NULL;
        }
        if (c->o.timeout_us >= 0 && dn2i_now_us() - t0 > (uint64_t)c->o.timeout_us) {
            *err = -ETIMEDOUT;
            return NULL;
        }
    }
    return u;
}

/* ---------------------------------------------------------- setup */

int dn2_read_rank_table(const char *path, struct dn2_rank *table, int max)
{
    FILE *f = fopen(path, "r");
    char line[256];
    int n = 0;

    if (!f) {
        return -errno;
    }
    while (fgets(line, sizeof(line), f)) {
        int rank;
        unsigned lid, wid;
        if (line[0] == '#' || sscanf(line, "%d %i %u", &rank, &lid, &wid) != 3) {
            continue;
        }
        if (rank < 0 || rank >= max || wid > 1 || lid > 0xffff) {
            fclose(f);
            return -EINVAL;
        }
        table[rank].lid = (uint16_t)lid;
        table[rank].wid = (uint8_t)wid;
        if (rank + 1 > n) {
            n = rank + 1;
        }
    }
    fclose(f);
    return n;
}

/* The job's token: every rank of a job computes the same nonzero byte
 * (from DN2_JOB, set by the launcher; else a constant). */
static uint8_t dn2_job_token(void)
{
    const char *j = getenv("DN2_JOB");
    uint32_t h = 2166136261u;

    for (; j && *j; j++) {
        h = (h ^ (uint8_t)*j) * 16777619u;
    }
    return (uint8_t)(h % 255 + 1);
}

/*
 * Job start: a rank's ring and AMT entries must exist before anyone sends
 * it an IPUSH (the board drops IPUSH packets it has no ring for).  Each
 * rank, once set up, writes the job token into every peer's LLCM ready
 * byte for it with BOTF (which needs no ring).  A peer that is not up yet
 * (its WID has no PGID) drops that write, so when a peer's own token shows
 * up here -- it is up now -- we write ours to it once more.  A rank is
 * ready to go when every peer's token has arrived.
 */
static int announce(dn2_comm_t *c, uint8_t token)
{
    volatile uint8_t *ready = dn2_llcm(c->d) + DN2_LLCM_MAP_READY;
    long tmo = c->o.timeout_us >= 0 ? c->o.timeout_us : 60000000L;
    struct dn2_botf_rr rr;
    uint8_t *seen;
    int i, r = 0, left = c->size - 1;
    uint64_t t0;

    seen = calloc((size_t)c->size, 1);
    if (!seen) {
        return -ENOMEM;
    }
    for (i = 0; i < c->size; i++) {
        ready[i] = 0;
    }
    dn2_botf_rr_init(c->d, &rr, DN2_NUM_WW);
    for (i = 0; i < c->size && !r; i++) {
        if (i != c->rank) {
            r = dn2_botf_rr_send(c->d, &rr, c->tab[i].lid, c->tab[i].wid, DN2_TO_LLCM,
                                 DN2_LLCM_MAP_READY + c->rank, &token, 1, 0);
        }
    }
    t0 = dn2i_now_us();
    while (!r && left > 0) {
        for (i = 0; i < c->size && !r; i++) {
            if (i != c->rank && !seen[i] && ready[i] == token) {
                seen[i] = 1;
                left--;
                r = dn2_botf_rr_send(c->d, &rr, c->tab[i].lid, c->tab[i].wid, DN2_TO_LLCM,
                                     DN2_LLCM_MAP_READY + c->rank, &token, 1, 0);
            }
        }
        if (left > 0 && dn2i_now_us() - t0 > (uint64_t)tmo) {
            r = -ETIMEDOUT;
        }
        dn2_cpu_relax();
    }
    if (!r) {
        r = dn2_botf_rr_drain(c->d, &rr, 5000000);
    }
    free(seen);
    return r;
}

int dn2_comm_init(dn2_comm_t **out, dn2_t *d, int rank_self, int nranks,
                  const struct dn2_rank *table, const struct dn2_comm_opts *opts)
{
    dn2_comm_t *c;
    unsigned value;
    uint64_t need;
    int r, i;

    if (nranks < 1 || nranks > (int)DN2_LLCM_MAP_READY_LEN || rank_self < 0 || rank_self >= nranks ||
        table[rank_self].wid != dn2_wid(d)) {
        return -EINVAL;
    }
    c = calloc(1, sizeof(*c));
    if (!c || !(c->tab = malloc(sizeof(*table) * nranks))) {
        free(c);
        return -ENOMEM;
    }
    memcpy(c->tab, table, sizeof(*table) * nranks);
    c->d = d;
    c->rank = rank_self;
    c->size = nranks;
    c->o.eager_limit = 16384;
    c->o.ring_bytes = 1u << 20;
    c->o.chunk_bytes = 16u << 20;
    c->o.timeout_us = -1;
    if (opts) {
        if (opts->eager_limit) c->o.eager_limit = opts->eager_limit;
        if (opts->ring_bytes) c->o.ring_bytes = opts->ring_bytes;
        if (opts->chunk_bytes) c->o.chunk_bytes = opts->chunk_bytes;
        if (opts->timeout_us) c->o.timeout_us = opts->timeout_us;
    }
    c->uq_tail = &c->uq;
    /* SO-DIMM: ring | eager staging | rendezvous staging | landing. */
    c->sd_eager = c->o.ring_bytes;
    c->sd_stage = (c->sd_eager + c->o.eager_limit + 0xfffff) & ~0xfffffu;
    c->sd_land = c->sd_stage + c->o.chunk_bytes;
    need = (uint64_t)c->sd_land + c->o.chunk_bytes;
    r = -ERANGE;
    if (c->o.eager_limit > c->o.ring_bytes / 4 ||
        (dn2_sdimm_bytes(d) && need > dn2_sdimm_bytes(d))) {
        goto fail;
    }
    value = (dn2_wid(d) * DN2_LLCM_WID_STRIDE + DN2_LLCM_MAP_AMT) / DN2_AMT_UNIT;
    if ((r = dn2_ring_init(d, &c->ring, value, 0, c->o.ring_bytes)) ||
        (r = dn2_status_ring_init(d, DN2_LLCM_MAP_STATUS, LLCM_STATUS_LEN))) {
        goto fail;
    }
    for (i = 0; i < nranks; i++) {
        if (i != rank_self && (r = dn2_admin_amt(d, table[i].lid, table[i].wid, value))) {
            goto fail;
        }
    }
    c->ipush_base = dn2_count(d, DN2_PC_IPUSH);
    c->next_id = 1;
    if ((r = announce(c, opts && opts->job ? opts->job : dn2_job_token()))) {
        goto fail;
    }
    *out = c;
    return 0;
fail:
    free(c->tab);
    free(c);
    return r;
}

int dn2_comm_init_env(dn2_comm_t **out, dn2_t *d, const struct dn2_comm_opts *opts)
{
    const char *path = getenv("DN2_RANKS");
    const char *me = getenv("DN2_RANK");
    struct dn2_rank *tab;
    int n, r;

    if (!me) {
        me = getenv("DN2_NODE");
    }
    if (!path || !me) {
        return -ENOENT;
    }
    tab = calloc(DN2_MAX_RANKS, sizeof(*tab));
    if (!tab) {
        return -ENOMEM;
    }
    n = dn2_read_rank_table(path, tab, DN2_MAX_RANKS);
    r = n < 0 ? n : dn2_comm_init(out, d, atoi(me), n, tab, opts);
    free(tab);
    return r;
}

void dn2_comm_free(dn2_comm_t *c)
{
    struct umsg *u;

    if (!c) {
        return;
    }
    while ((u = c->uq)) {
        c->uq = u->next;
        free(u->data);
        free(u);
    }
    free(c->tab);
    free(c);
}

/* ------------------------------------------------------- send/recv */

int dn2_send(dn2_comm_t *c, int dest, int tag, const void *buf, size_t len)
{
    const uint8_t *p = buf;
    uint32_t rts[4];
    int r;

    if (dest < 0 || dest >= c->size || dest == c->rank || tag < 0) {
        return -EINVAL;
    }
    if (len <= WW_PAYLOAD) {
        return lhs_send(c, dest, K_DATA, (uint32_t)tag, p, len, 0, 0);
    }
    if (len <= c->o.eager_limit) {
        /* The first 504 bytes from the Write Window, the rest staged. */
        unsigned since;
        if ((r = stage(c, c->sd_eager, p + WW_PAYLOAD, len - WW_PAYLOAD)) ||
            (r = lhs_send(c, dest, K_DATA, (uint32_t)tag, p, WW_PAYLOAD, c->sd_eager,
                          len - WW_PAYLOAD))) {
            return r;
        }
        /* The staging area is free again once the packet has left. */
        since = c->ipush_issued;
        while (((ipush_left(c) - since) & DN2_PC_MASK) > DN2_PC_MASK / 2) {
            dn2_cpu_relax();
        }
        return 0;
    }
    if (len > c->o.chunk_bytes) {
        return -EMSGSIZE;
    }
    /* Rendezvous: stage, request to send, wait for the receiver's FIN
     * (taking other arrivals meanwhile). */
    if ((r = stage(c, c->sd_stage, p, len))) {
        return r;
    }
    rts[0] = c->sd_stage;
    rts[1] = (uint32_t)len;
    rts[2] = c->next_id;
    rts[3] = 0;
    c->fin_wait = c->next_id++;
    c->fin_got = 0;
    if ((r = lhs_send(c, dest, K_RTS, (uint32_t)tag, rts, sizeof(rts), 0, 0))) {
        return r;
    }
    while (!c->fin_got) {
        r = progress(c, 1000);
        if (r < 0 && r != -ETIMEDOUT) {
            return r;
        }
    }
    return 0;
}

int dn2_recv(dn2_comm_t *c, int src, int tag, void *buf, size_t cap,
             struct dn2_msg_status *st)
{
    struct dn2_rx_status rs;
    struct umsg *u;
    uint32_t rts[4], fin[2];
    int r = 0;

    u = wait_match(c, 1, src, tag, &r);
    if (!u) {
        return r;
    }
    if (u->kind == K_DATA) {
        if (u->len > cap) {
            r = -EMSGSIZE;
        } else {
            memcpy(buf, u->data, u->len);
        }
        if (st) {
            st->source = u->src;
            st->tag = u->tag;
            st->len = u->len;
        }
        free(u->data);
        free(u);
        return r;
    }
    /* Rendezvous: pull the data with RVL into our landing area. */
    memcpy(rts, u->data, sizeof(rts));
    if (st) {
        st->source = u->src;
        st->tag = u->tag;
        st->len = rts[1];
    }
    if (rts[1] > cap) {
        r = -EMSGSIZE;
    } else if (u->src < 0 || u->src >= c->size) {
        r = -EPROTO;
    } else {
        r = dn2_rvl(c->d, c->tab[u->src].lid, c->tab[u->src].wid, rts[0], c->sd_land,
                    rts[1], NULL, DN2_F_EFLAG);
        while (!r) {
            int n = dn2_status_next(c->d, &rs, c->o.timeout_us);
            if (n < 0) {
                r = n;
            } else if (n == 0) {
                r = -ETIMEDOUT;
            } else if (rs.addr == c->sd_land) {
                break;
            }
        }
        if (!r) {
            r = sd_read(c, c->sd_land, buf, rts[1]);
        }
    }
    /* Always release the sender, even when the data did not fit. */
    fin[0] = rts[2];
    fin[1] = 0;
    if (u->src >= 0 && u->src < c->size) {
        int r2 = lhs_send(c, u->src, K_FIN, 0, fin, sizeof(fin), 0, 0);
        if (!r) {
            r = r2;
        }
    }
    free(u->data);
    free(u);
    return r;
}

int dn2_barrier(dn2_comm_t *c)
{
    uint32_t epoch = ++c->barrier_epoch;
    int k, round = 0, r = 0;

    for (k = 1; k < c->size; k <<= 1, round++) {
        int to = (c->rank + k) % c->size;
        int from = (c->rank - k + c->size) % c->size;
        int tag = (int)((epoch << 8) | (uint32_t)round) & 0x7fffffff;
        struct umsg *u;

        if ((r = lhs_send(c, to, K_BARRIER, (uint32_t)tag, NULL, 0, 0, 0))) {
            return r;
        }
        u = wait_match(c, 0, from, tag, &r);
        if (!u) {
            return r;
        }
        free(u->data);
        free(u);
    }
    return 0;
}
