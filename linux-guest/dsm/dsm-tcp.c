/* SPDX-License-Identifier: MIT */
/* libdn2dsm's TCP transport: the baseline between the guests' Ethernet.
 * A full mesh of TCP connections; a service thread per node plays the
 * home (serves page reads, applies diffs, answers flushes: what the board
 * does with RVL/RVS without the home CPU) and queues control messages for
 * the application thread, which blocks on a condition variable. */
#define _GNU_SOURCE
#include "dsm-tp.h"
#include "dn2dsm.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

enum { T_GET = 1, T_PAGE, T_PUT, T_FLUSH, T_FLUSHED, T_MSG };
struct thdr { uint32_t type, page, len, pad; };

struct qmsg { struct qmsg *next; int src; uint32_t len; uint8_t data[]; };

struct tcp_tp {
    struct dsm_tp t;
    int fd[DSM_MAX_NODES];
    int dead[DSM_MAX_NODES];
    pthread_mutex_t txlock[DSM_MAX_NODES];
    uint8_t *home;              /* the master copies of our home pages */
    pthread_t thr;
    int stop_pipe[2];
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct qmsg *q, **qtail;
    int reply_ready;            /* a T_PAGE or T_FLUSHED arrived */
    uint8_t *reply_page;
    long timeout_us;
};

static int write_all(int fd, const void *b, size_t n)
{
    const uint8_t *p = b;
    while (n) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR) {
            continue;
        }
        if (w <= 0) {
            return -EPIPE;
        }
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

static int read_all(int fd, void *b, size_t n)
{
    uint8_t *p = b;
    while (n) {
        ssize_t r = recv(fd, p, n, 0);
        if (r < 0 && errno == EINTR) {
            continue;
        }
        if (r <= 0) {
            return -EPIPE;
        }
        p += r;
        n -= (size_t)r;
    }
    return 0;
}

/* Header and parts in one sendmsg: with TCP_NODELAY a send() per part
 * would put each part in a segment of its own (a 16-byte header apart). */
static int tx(struct tcp_tp *c, int dest, uint32_t type, uint32_t page,
              const void *a, uint32_t alen, const void *b, uint32_t blen)
{
    struct thdr h = { type, page, alen + blen, 0 };
    struct iovec iov[3] = {
        { &h, sizeof(h) }, { (void *)a, alen }, { (void *)b, blen },
    };
    struct msghdr mh = { .msg_iov = iov, .msg_iovlen = 3 };
    int r = 0;

    if (c->dead[dest]) {
        return -EPIPE;
    }
    pthread_mutex_lock(&c->txlock[dest]);
    while (mh.msg_iovlen) {
        ssize_t w = sendmsg(c->fd[dest], &mh, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR) {
            continue;
        }
        if (w <= 0) {
            r = -EPIPE;
            break;
        }
        while (mh.msg_iovlen && (size_t)w >= mh.msg_iov->iov_len) {
            w -= (ssize_t)mh.msg_iov->iov_len;
            mh.msg_iov++;
            mh.msg_iovlen--;
        }
        if (mh.msg_iovlen) {
            mh.msg_iov->iov_base = (uint8_t *)mh.msg_iov->iov_base + w;
            mh.msg_iov->iov_len -= (size_t)w;
        }
    }
    pthread_mutex_unlock(&c->txlock[dest]);
    return r;
}

/* The service thread: one request or message at a time from any peer. */
static void *service(void *arg)
{
    struct tcp_tp *c = arg;
    struct pollfd pf[DSM_MAX_NODES + 1];
    uint8_t *buf = malloc(DSM_MSG_MAX + DSM_PAGE * 2);
    int n = c->t.nodes, i;

    for (;;) {
        for (i = 0; i < n; i++) {
            pf[i].fd = (i == c->t.rank || c->dead[i]) ? -1 : c->fd[i];
            pf[i].events = POLLIN;
        }
        pf[n].fd = c->stop_pipe[0];
        pf[n].events = POLLIN;
        if (poll(pf, (nfds_t)n + 1, -1) < 0) {
            continue;
        }
        if (pf[n].revents) {
            break;
        }
        for (i = 0; i < n; i++) {
            struct thdr h;
            if (pf[i].fd < 0 || !pf[i].revents) {
                continue;
            }
            if (read_all(c->fd[i], &h, sizeof(h)) ||
                h.len > DSM_MSG_MAX + DSM_PAGE * 2 ||
                (h.len && read_all(c->fd[i], buf, h.len))) {
                pthread_mutex_lock(&c->mu);
                c->dead[i] = 1;
                pthread_cond_broadcast(&c->cv);
                pthread_mutex_unlock(&c->mu);
                continue;
            }
            switch (h.type) {
            case T_GET:
                tx(c, i, T_PAGE, h.page, c->home + (size_t)h.page * DSM_PAGE, DSM_PAGE,
                   NULL, 0);
                break;
            case T_PUT: {
                /* runs: count, then (off, len, bytes) each */
                uint32_t k, nr, at = 4;
                memcpy(&nr, buf, 4);
                for (k = 0; k < nr; k++) {
                    struct dsm_run run;
                    memcpy(&run, buf + at, sizeof(run));
                    at += sizeof(run);
                    memcpy(c->home + (size_t)h.page * DSM_PAGE + run.off, buf + at, run.len);
                    at += run.len;
                }
                break;
            }
            case T_FLUSH:
                tx(c, i, T_FLUSHED, 0, NULL, 0, NULL, 0);
                break;
            case T_PAGE:
            case T_FLUSHED:
                pthread_mutex_lock(&c->mu);
                if (h.type == T_PAGE) {
                    memcpy(c->reply_page, buf, DSM_PAGE);
                }
                c->reply_ready = 1;
                pthread_cond_broadcast(&c->cv);
                pthread_mutex_unlock(&c->mu);
                break;
            case T_MSG: {
                struct qmsg *q = malloc(sizeof(*q) + h.len);
                q->next = NULL;
                q->src = i;
                q->len = h.len;
                memcpy(q->data, buf, h.len);
                pthread_mutex_lock(&c->mu);
                *c->qtail = q;
                c->qtail = &q->next;
                pthread_cond_broadcast(&c->cv);
                pthread_mutex_unlock(&c->mu);
                break;
            }
            }
        }
    }
    free(buf);
    return NULL;
}

static void deadline(struct timespec *ts, long us)
{
    clock_gettime(CLOCK_REALTIME, ts);
    ts->tv_sec += us / 1000000;
    ts->tv_nsec += (us % 1000000) * 1000;
    if (ts->tv_nsec >= 1000000000) {
        ts->tv_sec++;
        ts->tv_nsec -= 1000000000;
    }
}

/* Wait (blocked, not spinning) for the reply to our one request to peer. */
static int wait_reply(struct tcp_tp *c, int peer)
{
    struct timespec ts;
    int r = 0;

    deadline(&ts, c->timeout_us);
    pthread_mutex_lock(&c->mu);
    while (!c->reply_ready && !c->dead[peer] && !r) {
        if (pthread_cond_timedwait(&c->cv, &c->mu, &ts) == ETIMEDOUT) {
            r = -ETIMEDOUT;
        }
    }
    if (c->reply_ready) {
        r = 0;
    } else if (!r) {
        r = -EPIPE;
    }
    c->reply_ready = 0;
    pthread_mutex_unlock(&c->mu);
    return r;
}

static int tcp_get_page(struct dsm_tp *t, int home, uint32_t p, void *dst)
{
    struct tcp_tp *c = (struct tcp_tp *)t;
    int r;

    if (home == t->rank) {
        memcpy(dst, c->home + (size_t)p * DSM_PAGE, DSM_PAGE);
        return 0;
    }
    c->reply_page = dst;
    if ((r = tx(c, home, T_GET, p, NULL, 0, NULL, 0))) {
        return r;
    }
    return wait_reply(c, home);
}

static int tcp_put_runs(struct dsm_tp *t, int home, uint32_t p, const void *data,
                        const struct dsm_run *runs, int nruns)
{
    struct tcp_tp *c = (struct tcp_tp *)t;
    uint8_t buf[4 + DSM_PAGE / 8 * sizeof(struct dsm_run) + DSM_PAGE];
    uint32_t at = 4, n = (uint32_t)nruns;
    int k;

    for (k = 0; k < nruns; k++) {
        if (home == t->rank) {
            memcpy(c->home + (size_t)p * DSM_PAGE + runs[k].off,
                   (const uint8_t *)data + runs[k].off, runs[k].len);
            continue;
        }
        memcpy(buf + at, &runs[k], sizeof(runs[k]));
        at += sizeof(runs[k]);
        memcpy(buf + at, (const uint8_t *)data + runs[k].off, runs[k].len);
        at += runs[k].len;
    }
    if (home == t->rank) {
        return 0;
    }
    memcpy(buf, &n, 4);
    return tx(c, home, T_PUT, p, buf, at, NULL, 0);
}

static int tcp_flush(struct dsm_tp *t, int home)
{
    struct tcp_tp *c = (struct tcp_tp *)t;
    int r;

    if (home == t->rank) {
        return 0;
    }
    c->reply_page = NULL;
    if ((r = tx(c, home, T_FLUSH, 0, NULL, 0, NULL, 0))) {
        return r;
    }
    return wait_reply(c, home);
}

static int tcp_send(struct dsm_tp *t, int dest, const void *msg, size_t len)
{
    return tx((struct tcp_tp *)t, dest, T_MSG, 0, msg, (uint32_t)len, NULL, 0);
}

static int tcp_recv(struct dsm_tp *t, void *msg, size_t cap, int *src, long timeout_us)
{
    struct tcp_tp *c = (struct tcp_tp *)t;
    struct timespec ts;
    struct qmsg *q;
    int r = 0, i;

    deadline(&ts, timeout_us);
    pthread_mutex_lock(&c->mu);
    while (!c->q && !r) {
        for (i = 0; i < t->nodes; i++) {
            if (c->dead[i]) {
                r = -EPIPE;     /* a node is gone: the job cannot go on */
            }
        }
        if (!r && pthread_cond_timedwait(&c->cv, &c->mu, &ts) == ETIMEDOUT) {
            r = -ETIMEDOUT;
        }
    }
    q = c->q;
    if (q) {
        c->q = q->next;
        if (!c->q) {
            c->qtail = &c->q;
        }
        r = 0;
    }
    pthread_mutex_unlock(&c->mu);
    if (!q) {
        return r;
    }
    if (q->len > cap) {
        free(q);
        return -EMSGSIZE;
    }
    memcpy(msg, q->data, q->len);
    *src = q->src;
    r = (int)q->len;
    free(q);
    return r;
}

static void tcp_close(struct dsm_tp *t)
{
    struct tcp_tp *c = (struct tcp_tp *)t;
    int i;

    if (write(c->stop_pipe[1], "x", 1) == 1) {
        pthread_join(c->thr, NULL);
    }
    for (i = 0; i < t->nodes; i++) {
        if (c->fd[i] >= 0) {
            close(c->fd[i]);
        }
    }
    close(c->stop_pipe[0]);
    close(c->stop_pipe[1]);
    free(c->home);
    free(c);
}

static const struct dsm_tp_ops tcp_ops = {
    tcp_get_page, tcp_put_runs, tcp_flush, tcp_send, tcp_recv, tcp_close,
};

static void host_of(const char *hosts, int i, char *out, size_t cap)
{
    if (hosts && *hosts) {
        const char *p = hosts;
        int k;
        for (k = 0; k < i && p; k++) {
            p = strchr(p, ',');
            p = p ? p + 1 : NULL;
        }
        if (!p) {
            p = hosts;
        }
        snprintf(out, cap, "%.*s", (int)strcspn(p, ","), p);
        return;
    }
    snprintf(out, cap, "192.168.77.%d", 10 + i);
}

/* Node i listens on port + i; node j > i connects to i and says who it is. */
int dsm_tp_tcp_open(struct dsm_tp **out, int rank, int nodes, size_t bytes,
                    const char *hosts, int port, long timeout_us)
{
    struct tcp_tp *c = calloc(1, sizeof(*c));
    int ls, one = 1, i, got = 0;
    struct sockaddr_in sa;
    char h[64];

    if (!c || !(c->home = calloc(1, bytes))) {
        free(c);
        return -ENOMEM;
    }
    c->t.ops = &tcp_ops;
    c->t.rank = rank;
    c->t.nodes = nodes;
    c->t.bytes = bytes;
    c->timeout_us = timeout_us;
    c->qtail = &c->q;
    pthread_mutex_init(&c->mu, NULL);
    pthread_cond_init(&c->cv, NULL);
    for (i = 0; i < nodes; i++) {
        c->fd[i] = -1;
        pthread_mutex_init(&c->txlock[i], NULL);
    }
    ls = socket(AF_INET, SOCK_STREAM, 0);
    setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    memset(&sa, 0, sizeof(sa));
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)(port + rank));
    host_of(hosts, rank, h, sizeof(h));
    inet_pton(AF_INET, h, &sa.sin_addr);
    if (bind(ls, (struct sockaddr *)&sa, sizeof(sa)) || listen(ls, DSM_MAX_NODES)) {
        fprintf(stderr, "dsm tcp: cannot listen on %s:%d: %s\n", h, port + rank,
                strerror(errno));
        close(ls);
        return -errno;
    }
    /* Connect to every lower rank (retrying while it starts). */
    for (i = 0; i < rank; i++) {
        int tries;
        host_of(hosts, i, h, sizeof(h));
        memset(&sa, 0, sizeof(sa));
        sa.sin_family = AF_INET;
        sa.sin_port = htons((uint16_t)(port + i));
        inet_pton(AF_INET, h, &sa.sin_addr);
        for (tries = 0; tries < 600; tries++) {
            int fd = socket(AF_INET, SOCK_STREAM, 0);
            if (!connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
                uint32_t me = (uint32_t)rank;
                setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
                write_all(fd, &me, 4);
                c->fd[i] = fd;
                break;
            }
            close(fd);
            usleep(50000);
        }
        if (c->fd[i] < 0) {
            fprintf(stderr, "dsm tcp: cannot reach node %d at %s:%d\n", i, h, port + i);
            close(ls);
            return -ECONNREFUSED;
        }
    }
    /* Accept every higher rank. */
    while (got < nodes - 1 - rank) {
        uint32_t who = 0;
        int fd = accept(ls, NULL, NULL);
        if (fd < 0) {
            continue;
        }
        if (read_all(fd, &who, 4) || who >= (uint32_t)nodes || (int)who <= rank) {
            close(fd);
            continue;
        }
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        c->fd[who] = fd;
        got++;
    }
    close(ls);
    if (pipe(c->stop_pipe) || pthread_create(&c->thr, NULL, service, c)) {
        return -errno;
    }
    *out = &c->t;
    return 0;
}
