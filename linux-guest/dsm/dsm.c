/* SPDX-License-Identifier: MIT */
/* libdn2dsm core: region, faults, twins and diffs, locks and barriers
 * (see dn2dsm.h and docs/dsm.md). */
#define _GNU_SOURCE
#include "dn2dsm.h"
#include "dsm-tp.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

enum { PG_INVALID = 0, PG_READ = 1, PG_WRITE = 2 };

/* Control messages: a header, then a write-notice bitmap when wn. */
enum { M_BARRIER = 1, M_GO, M_LOCK_REQ, M_LOCK_GRANT, M_LOCK_REL };
struct msg {
    uint32_t type, arg;     /* arg: lock id or barrier epoch */
    uint32_t wn_bytes;      /* bytes of bitmap that follow */
    int32_t status;         /* M_GO: 0 or a node's error */
};

struct lockst {
    int held;               /* manager: holder + 1, 0 when free */
    int q[DSM_MAX_NODES], qn;
    uint8_t *wn;            /* manager: pages written under this lock */
};

struct dsm {
    struct dsm_opts o;
    struct dsm_tp *tp;
    uint8_t *base;
    uint32_t npages, bm_bytes;
    uint8_t *state;
    uint8_t **twin;
    uint32_t *dirty;        /* list of pages in PG_WRITE */
    uint32_t ndirty;
    uint8_t *wn_mine;       /* pages I wrote since the last barrier */
    uint8_t *wn_all;        /* manager: union for the barrier */
    uint8_t *wn_multi;      /* manager: pages more than one node wrote */
    uint32_t epoch;
    int bar_count;
    struct lockst lk[DSM_MAX_LOCKS];
    int got_grant, got_go, go_status;
    uint8_t *rx;            /* message buffer */
    uint8_t *pagebuf;
    struct dsm_stats st;
};

static dsm_t *g_dsm;        /* the one region of this process (signal handler) */
static struct sigaction g_old;

/* ------------------------------------------------------------ helpers */

static uint64_t now_us(clockid_t c)
{
    struct timespec ts;
    clock_gettime(c, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static int home_of(const dsm_t *m, uint32_t p)
{
    return (int)((p / m->o.home_block) % (uint32_t)m->o.nodes);
}

static void bm_set(uint8_t *bm, uint32_t p) { bm[p >> 3] |= (uint8_t)(1u << (p & 7)); }
static int bm_get(const uint8_t *bm, uint32_t p) { return bm[p >> 3] >> (p & 7) & 1; }

static int protect(dsm_t *m, uint32_t p, int prot)
{
    return mprotect(m->base + (size_t)p * DSM_PAGE, DSM_PAGE, prot) ? -errno : 0;
}

/* Wait for a message, timing the wait (wall and this thread's CPU). */
static int wait_msg(dsm_t *m, int *src)
{
    uint64_t w0 = now_us(CLOCK_MONOTONIC), c0 = now_us(CLOCK_THREAD_CPUTIME_ID);
    int r = m->tp->ops->recv(m->tp, m->rx, DSM_MSG_MAX, src, m->o.timeout_us);

    m->st.wait_us += now_us(CLOCK_MONOTONIC) - w0;
    m->st.wait_cpu_us += now_us(CLOCK_THREAD_CPUTIME_ID) - c0;
    m->st.wait_calls++;
    return r;
}

static int send_msg2(dsm_t *m, int dest, uint32_t type, uint32_t arg, int32_t status,
                     const uint8_t *wn, const uint8_t *wn2)
{
    uint8_t buf[DSM_MSG_MAX];
    struct msg h = { type, arg, (wn ? m->bm_bytes : 0) + (wn2 ? m->bm_bytes : 0), status };

    memcpy(buf, &h, sizeof(h));
    if (wn) {
        memcpy(buf + sizeof(h), wn, m->bm_bytes);
    }
    if (wn2) {
        memcpy(buf + sizeof(h) + m->bm_bytes, wn2, m->bm_bytes);
    }
    return m->tp->ops->send(m->tp, dest, buf, sizeof(h) + h.wn_bytes);
}

static int send_msg(dsm_t *m, int dest, uint32_t type, uint32_t arg, int32_t status,
                    const uint8_t *wn)
{
    return send_msg2(m, dest, type, arg, status, wn, NULL);
}

/* Invalidate the pages in bm that we do not hold dirty (flushed first). */
static int invalidate(dsm_t *m, const uint8_t *bm)
{
    uint32_t p;
    int r;

    for (p = 0; p < m->npages; p++) {
        if (bm_get(bm, p) && m->state[p] != PG_INVALID) {
            if ((r = protect(m, p, PROT_NONE))) {
                return r;
            }
            m->state[p] = PG_INVALID;
        }
    }
    return 0;
}

/* At a barrier: drop the pages another node wrote (all: written by
 * anyone; multi: by more than one node; mine: by this one). */
static int barrier_invalidate(dsm_t *m, const uint8_t *all, const uint8_t *multi)
{
    uint32_t p;
    int r;

    for (p = 0; p < m->npages; p++) {
        if (bm_get(all, p) && (!bm_get(m->wn_mine, p) || bm_get(multi, p)) &&
            m->state[p] != PG_INVALID) {
            if ((r = protect(m, p, PROT_NONE))) {
                return r;
            }
            m->state[p] = PG_INVALID;
        }
    }
    memset(m->wn_mine, 0, m->bm_bytes);
    return 0;
}

/* ------------------------------------------------------ release: diffs */

static int flush_diffs(dsm_t *m)
{
    struct dsm_run runs[DSM_PAGE / 8];
    int touched[DSM_MAX_NODES] = { 0 };
    uint32_t i;
    int h, r;

    for (i = 0; i < m->ndirty; i++) {
        uint32_t p = m->dirty[i];
        const uint64_t *cur = (const uint64_t *)(m->base + (size_t)p * DSM_PAGE);
        const uint64_t *tw = (const uint64_t *)m->twin[p];
        int n = 0;
        /* One node: no other node ever reads a home copy and no page is
         * ever invalidated, so the local copy is the only one that counts
         * and the home copy is not written (over the boards that write
         * is a VS per 512 bytes through the Write Windows). */
        uint32_t w = m->o.nodes > 1 ? 0 : DSM_PAGE / 8;

        while (w < DSM_PAGE / 8) {
            if (cur[w] == tw[w]) {
                w++;
                continue;
            }
            uint32_t s = w;
            while (w < DSM_PAGE / 8 && cur[w] != tw[w]) {
                w++;
            }
            runs[n].off = s * 8;
            runs[n].len = (w - s) * 8;
            m->st.diff_bytes += runs[n].len;
            n++;
        }
        if ((r = protect(m, p, PROT_READ))) {
            return r;
        }
        m->state[p] = PG_READ;
        if (n) {
            h = home_of(m, p);
            if ((r = m->tp->ops->put_runs(m->tp, h, p, cur, runs, n))) {
                return r;
            }
            touched[h] = 1;
            m->st.diffs_sent++;
            bm_set(m->wn_mine, p);
        }
    }
    m->ndirty = 0;
    for (h = 0; h < m->o.nodes; h++) {
        if (touched[h] && (r = m->tp->ops->flush(m->tp, h))) {
            return r;
        }
    }
    return 0;
}

/* ------------------------------------------------------------ faults */

static int fault(dsm_t *m, uint32_t p)
{
    int r;

    if (m->state[p] == PG_INVALID) {
        uint64_t w0 = now_us(CLOCK_MONOTONIC), c0 = now_us(CLOCK_THREAD_CPUTIME_ID);
        r = m->tp->ops->get_page(m->tp, home_of(m, p), p, m->pagebuf);
        m->st.wait_us += now_us(CLOCK_MONOTONIC) - w0;
        m->st.wait_cpu_us += now_us(CLOCK_THREAD_CPUTIME_ID) - c0;
        m->st.wait_calls++;
        if (r || (r = protect(m, p, PROT_READ | PROT_WRITE))) {
            return r;
        }
        memcpy(m->base + (size_t)p * DSM_PAGE, m->pagebuf, DSM_PAGE);
        if ((r = protect(m, p, PROT_READ))) {
            return r;
        }
        m->state[p] = PG_READ;
        m->st.faults_read++;
        m->st.pages_fetched++;
        return 0;
    }
    if (m->state[p] == PG_READ) {
        if (!m->twin[p] && !(m->twin[p] = malloc(DSM_PAGE))) {
            return -ENOMEM;
        }
        memcpy(m->twin[p], m->base + (size_t)p * DSM_PAGE, DSM_PAGE);
        if ((r = protect(m, p, PROT_READ | PROT_WRITE))) {
            return r;
        }
        m->state[p] = PG_WRITE;
        m->dirty[m->ndirty++] = p;
        m->st.faults_write++;
        return 0;
    }
    return -EFAULT;     /* a fault on a writable page: not ours */
}

static void on_segv(int sig, siginfo_t *si, void *uc)
{
    dsm_t *m = g_dsm;
    uint8_t *a = si->si_addr;

    if (m && a >= m->base && a < m->base + (size_t)m->npages * DSM_PAGE) {
        int r = fault(m, (uint32_t)((size_t)(a - m->base) / DSM_PAGE));
        if (!r) {
            return;
        }
        fprintf(stderr, "dsm: page fault at %p could not be served: %s\n",
                (void *)a, strerror(r < 0 ? -r : r));
        _exit(3);
    }
    if (g_old.sa_flags & SA_SIGINFO && g_old.sa_sigaction) {
        g_old.sa_sigaction(sig, si, uc);
        return;
    }
    signal(SIGSEGV, SIG_DFL);
    raise(SIGSEGV);
}

/* ------------------------------------------------ manager (node 0) */

static int grant(dsm_t *m, int id, int to)
{
    struct lockst *l = &m->lk[id];

    l->held = to + 1;
    if (to == 0) {
        m->got_grant = 1;
        /* One node: every page written under the lock is its own write,
         * current here (and its home copy not kept, see flush_diffs). */
        return m->o.nodes > 1 ? invalidate(m, l->wn) : 0;
    }
    return send_msg(m, to, M_LOCK_GRANT, (uint32_t)id, 0, l->wn);
}

/* Handle one message (any node); the manager's duties only on node 0. */
static int handle(dsm_t *m, int src, int len)
{
    struct msg h;
    const uint8_t *wn = m->rx + sizeof(h);
    uint32_t i;
    int r = 0;

    if (len < (int)sizeof(h)) {
        return -EPROTO;
    }
    memcpy(&h, m->rx, sizeof(h));
    switch (h.type) {
    case M_BARRIER:
        for (i = 0; i < h.wn_bytes && i < m->bm_bytes; i++) {
            m->wn_multi[i] |= m->wn_all[i] & wn[i];
            m->wn_all[i] |= wn[i];
        }
        m->bar_count++;
        break;
    case M_GO:
        m->go_status = h.status;
        m->got_go = 1;
        if (h.wn_bytes == 2 * m->bm_bytes) {
            r = barrier_invalidate(m, wn, wn + m->bm_bytes);
        }
        break;
    case M_LOCK_REQ:
        if (h.arg >= DSM_MAX_LOCKS) {
            return -EPROTO;
        }
        if (!m->lk[h.arg].held) {
            r = grant(m, (int)h.arg, src);
        } else {
            struct lockst *l = &m->lk[h.arg];
            l->q[l->qn++] = src;
        }
        break;
    case M_LOCK_GRANT:
        m->got_grant = 1;
        r = invalidate(m, wn);
        break;
    case M_LOCK_REL: {
        struct lockst *l = &m->lk[h.arg];
        for (i = 0; i < h.wn_bytes && i < m->bm_bytes; i++) {
            l->wn[i] |= wn[i];
        }
        l->held = 0;
        if (l->qn) {
            int next = l->q[0];
            memmove(l->q, l->q + 1, (size_t)--l->qn * sizeof(int));
            r = grant(m, (int)h.arg, next);
        }
        break;
    }
    default:
        return -EPROTO;
    }
    return r;
}

static int pump(dsm_t *m)
{
    int src = -1;
    int len = wait_msg(m, &src);

    return len < 0 ? len : handle(m, src, len);
}

/* ------------------------------------------------------------ API */

int dsm_barrier(dsm_t *m)
{
    int r, i;

    if ((r = flush_diffs(m))) {
        return r;
    }
    m->st.barriers++;
    m->epoch++;
    if (m->o.rank != 0) {
        if ((r = send_msg(m, 0, M_BARRIER, m->epoch, 0, m->wn_mine))) {
            return r;
        }
        m->got_go = 0;
        while (!m->got_go) {
            if ((r = pump(m))) {
                return r;
            }
        }
        return m->go_status;
    }
    /* The manager: every other node's arrival, then GO with the union. */
    while (m->bar_count < m->o.nodes - 1) {
        if ((r = pump(m))) {
            for (i = 1; i < m->o.nodes; i++) {
                send_msg(m, i, M_GO, m->epoch, r, NULL);
            }
            return r;
        }
    }
    m->bar_count = 0;
    for (i = 0; i < (int)m->bm_bytes; i++) {
        m->wn_multi[i] |= m->wn_all[i] & m->wn_mine[i];
        m->wn_all[i] |= m->wn_mine[i];
    }
    for (i = 1; i < m->o.nodes; i++) {
        if ((r = send_msg2(m, i, M_GO, m->epoch, 0, m->wn_all, m->wn_multi))) {
            return r;
        }
    }
    r = barrier_invalidate(m, m->wn_all, m->wn_multi);
    memset(m->wn_all, 0, m->bm_bytes);
    memset(m->wn_multi, 0, m->bm_bytes);
    for (i = 0; i < DSM_MAX_LOCKS; i++) {
        memset(m->lk[i].wn, 0, m->bm_bytes);
    }
    return r;
}

int dsm_lock(dsm_t *m, int id)
{
    int r;

    if (id < 0 || id >= DSM_MAX_LOCKS) {
        return -EINVAL;
    }
    if ((r = flush_diffs(m))) {
        return r;
    }
    m->st.locks++;
    m->got_grant = 0;
    if (m->o.rank == 0) {
        struct lockst *l = &m->lk[id];
        if (!l->held) {
            r = grant(m, id, 0);
        } else {
            l->q[l->qn++] = 0;
        }
        if (r) {
            return r;
        }
    } else if ((r = send_msg(m, 0, M_LOCK_REQ, (uint32_t)id, 0, NULL))) {
        return r;
    }
    while (!m->got_grant) {
        if ((r = pump(m))) {
            return r;
        }
    }
    return 0;
}

int dsm_unlock(dsm_t *m, int id)
{
    uint8_t *wn;
    int r;
    uint32_t p;

    if (id < 0 || id >= DSM_MAX_LOCKS) {
        return -EINVAL;
    }
    /* The pages written in this critical section: those dirty now. */
    wn = calloc(1, m->bm_bytes);
    if (!wn) {
        return -ENOMEM;
    }
    for (p = 0; p < m->ndirty; p++) {
        bm_set(wn, m->dirty[p]);
    }
    if ((r = flush_diffs(m))) {
        free(wn);
        return r;
    }
    if (m->o.rank == 0) {
        struct lockst *l = &m->lk[id];
        for (p = 0; p < m->bm_bytes; p++) {
            l->wn[p] |= wn[p];
        }
        l->held = 0;
        if (l->qn) {
            int next = l->q[0];
            memmove(l->q, l->q + 1, (size_t)--l->qn * sizeof(int));
            r = grant(m, id, next);
        }
    } else {
        r = send_msg(m, 0, M_LOCK_REL, (uint32_t)id, 0, wn);
    }
    free(wn);
    return r;
}

static int env_int(const char *name, int dflt)
{
    const char *v = getenv(name);
    return v && *v ? atoi(v) : dflt;
}

const char *dsm_tp_name(enum dsm_transport tp)
{
    return tp == DSM_TP_TCP ? "tcp" : "board";
}

int dsm_init(dsm_t **out, const struct dsm_opts *o)
{
    dsm_t *m;
    struct sigaction sa;
    int r, i;
    void *b;

    if (g_dsm) {
        return -EBUSY;
    }
    m = calloc(1, sizeof(*m));
    if (!m) {
        return -ENOMEM;
    }
    m->o = *o;
    if (!m->o.home_block) {
        m->o.home_block = 1;
    }
    if (!m->o.timeout_us) {
        m->o.timeout_us = 20000000;
    }
    if (!m->o.nodes) {
        m->o.rank = env_int("DN2_NODE", 0);
        m->o.nodes = env_int("DN2_NODES", 1);
    }
    if (m->o.nodes < 1 || m->o.nodes > DSM_MAX_NODES || m->o.rank < 0 ||
        m->o.rank >= m->o.nodes) {
        free(m);
        return -EINVAL;
    }
    m->npages = (uint32_t)((o->bytes + DSM_PAGE - 1) / DSM_PAGE);
    m->bm_bytes = (m->npages + 7) / 8;
    if (sizeof(struct msg) + 2 * m->bm_bytes > DSM_MSG_MAX) {
        free(m);
        return -E2BIG;
    }
    m->state = calloc(m->npages, 1);
    m->twin = calloc(m->npages, sizeof(*m->twin));
    m->dirty = calloc(m->npages, sizeof(*m->dirty));
    m->wn_mine = calloc(1, m->bm_bytes);
    m->wn_all = calloc(1, m->bm_bytes);
    m->wn_multi = calloc(1, m->bm_bytes);
    m->rx = malloc(DSM_MSG_MAX);
    m->pagebuf = aligned_alloc(DSM_PAGE, DSM_PAGE);
    for (i = 0; i < DSM_MAX_LOCKS; i++) {
        m->lk[i].wn = calloc(1, m->bm_bytes);
        if (!m->lk[i].wn) {
            return -ENOMEM;
        }
    }
    if (!m->state || !m->twin || !m->dirty || !m->wn_mine || !m->wn_all || !m->wn_multi || !m->rx ||
        !m->pagebuf) {
        return -ENOMEM;
    }
    if (m->o.tp == DSM_TP_TCP) {
        const char *hosts = o->tcp_hosts ? o->tcp_hosts : getenv("DSM_TCP_HOSTS");
        int port = o->tcp_port ? o->tcp_port : env_int("DSM_TCP_PORT", 7350);
        r = dsm_tp_tcp_open(&m->tp, m->o.rank, m->o.nodes, (size_t)m->npages * DSM_PAGE,
                            hosts, port, m->o.timeout_us);
    } else {
        r = dsm_tp_board_open(&m->tp, m->o.rank, m->o.nodes, (size_t)m->npages * DSM_PAGE,
                              m->o.home_block, m->o.timeout_us);
    }
    if (r) {
        return r;
    }
    b = mmap((void *)(uintptr_t)DSM_BASE_ADDR, (size_t)m->npages * DSM_PAGE, PROT_NONE,
             MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE | MAP_NORESERVE, -1, 0);
    if (b == MAP_FAILED || b != (void *)(uintptr_t)DSM_BASE_ADDR) {
        r = b == MAP_FAILED ? -errno : -EEXIST;
        m->tp->ops->close(m->tp);
        return r;
    }
    m->base = b;
    memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = on_segv;
    sa.sa_flags = SA_SIGINFO | SA_NODEFER;
    sigemptyset(&sa.sa_mask);
    g_dsm = m;
    sigaction(SIGSEGV, &sa, &g_old);
    *out = m;
    return dsm_barrier(m);   /* every home copy is in place */
}

void *dsm_base(dsm_t *m) { return m->base; }
int dsm_rank(const dsm_t *m) { return m->o.rank; }
int dsm_nodes(const dsm_t *m) { return m->o.nodes; }
void dsm_get_stats(const dsm_t *m, struct dsm_stats *s) { *s = m->st; }
void dsm_reset_stats(dsm_t *m) { memset(&m->st, 0, sizeof(m->st)); }

int dsm_finish(dsm_t *m)
{
    int r = dsm_barrier(m);
    uint32_t p;

    sigaction(SIGSEGV, &g_old, NULL);
    g_dsm = NULL;
    munmap(m->base, (size_t)m->npages * DSM_PAGE);
    /* Let the last GO leave before the transport goes. */
    m->tp->ops->close(m->tp);
    for (p = 0; p < m->npages; p++) {
        free(m->twin[p]);
    }
    for (p = 0; p < DSM_MAX_LOCKS; p++) {
        free(m->lk[p].wn);
    }
    free(m->twin);
    free(m->state);
    free(m->dirty);
    free(m->wn_mine);
    free(m->wn_all);
    free(m->wn_multi);
    free(m->rx);
    free(m->pagebuf);
    free(m);
    return r;
}
