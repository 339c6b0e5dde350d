/* SPDX-License-Identifier: MIT */
/* The qtest and QMP client of the host tools: see qtest-client.h. */
#define _GNU_SOURCE 1
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include "qtest-board.h"
#include "qtest-client.h"

const char *qc_strerror(int err)
{
    switch (err) {
    case QC_OK: return "ok";
    case QC_REFUSED: return "refused";
    case QC_TIMEOUT: return "timed out";
    case QC_CLOSED: return "closed";
    }
    return "?";
}

/* Milliseconds left before end_ns (0 when past). */
static int left_ms(uint64_t end_ns)
{
    uint64_t now = qb_now_ns();

    return now >= end_ns ? 0 : (int)((end_ns - now + 999999) / 1000000);
}

/* ------------------------------------------------------------------ */
/* qtest                                                               */
/* ------------------------------------------------------------------ */

int qc_open(struct qc_qtest *q, int fd)
{
    memset(q, 0, sizeof(*q));
    q->fd = fd;
    q->in = malloc(QC_BUF);
    q->out = malloc(QC_BUF);
    q->prev = malloc(QC_BUF);
    q->last = malloc(QC_BUF);
    if (!q->in || !q->out || !q->prev || !q->last) {
        qc_close(q);
        return -ENOMEM;
    }
    q->last[0] = 0;
    if (fd >= 0) {
        fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    }
    return 0;
}

void qc_close(struct qc_qtest *q)
{
    if (q->fd >= 0) {
        close(q->fd);
    }
    q->fd = -1;
    free(q->in);
    free(q->out);
    free(q->prev);
    free(q->last);
    q->in = q->out = q->prev = q->last = NULL;
}

bool qc_queue(struct qc_qtest *q, const char *fmt, ...)
{
    va_list ap;
    int n;

    if (q->olen + 4096 > QC_BUF) {
        return false;
    }
    va_start(ap, fmt);
    n = vsnprintf(q->out + q->olen, QC_BUF - q->olen, fmt, ap);
    va_end(ap);
    q->olen += (size_t)n;
    q->out[q->olen++] = '\n';
    q->on++;
    return true;
}

bool qc_queue_write(struct qc_qtest *q, uint64_t addr, const uint8_t *data, size_t len)
{
    static const char hex[] = "0123456789abcdef";
    size_t i;
    char *o;
    int n;

    if (q->olen + 64 + 2 * len + 1 > QC_BUF) {
        return false;
    }
    n = snprintf(q->out + q->olen, QC_BUF - q->olen, "write 0x%" PRIx64 " 0x%zx 0x", addr, len);
    o = q->out + q->olen + n;
    for (i = 0; i < len; i++) {
        *o++ = hex[data[i] >> 4];
        *o++ = hex[data[i] & 15];
    }
    *o++ = '\n';
    q->olen = (size_t)(o - q->out);
    q->on++;
    return true;
}

void qc_batch_cmd(const struct qc_qtest *q, unsigned k, char *out, size_t cap)
{
    const char *p = q->out, *e = q->out + q->olen;

    while (k-- && p < e) {
        p = memchr(p, '\n', (size_t)(e - p));
        p = p ? p + 1 : e;
    }
    snprintf(out, cap, "%.*s", (int)strcspn(p, "\n"), p);
}

void qc_discard(struct qc_qtest *q)
{
    q->olen = q->on = 0;
}

/* The next complete answer line, taken from q->in (NUL-terminated in
 * place: valid until the next read); NULL when there is none yet. */
static char *take_line(struct qc_qtest *q, size_t *len)
{
    char *s = q->in + q->pos, *nl = memchr(s, '\n', q->have - q->pos);

    if (!nl) {
        return NULL;
    }
    *len = (size_t)(nl - s);
    *nl = 0;
    q->pos = (size_t)(nl + 1 - q->in);
    return s;
}

/* Move the unread part of q->in to its start. */
static void compact(struct qc_qtest *q)
{
    if (q->pos) {
        memmove(q->in, q->in + q->pos, q->have - q->pos);
        q->have -= q->pos;
        q->pos = 0;
    }
}

/* Read what is there: QC_OK, or QC_CLOSED. */
static int fill(struct qc_qtest *q)
{
    ssize_t r = read(q->fd, q->in + q->have, QC_BUF - 1 - q->have);

    if (r > 0) {
        q->have += (size_t)r;
        return QC_OK;
    }
    if (r == 0 || (errno != EAGAIN && errno != EINTR)) {
        return QC_CLOSED;
    }
    return QC_OK;
}

int qc_flush(struct qc_qtest *q, unsigned timeout_ms)
{
    size_t off = 0;
    unsigned got = 0, n = q->on;
    uint64_t end = qb_now_ns() + (uint64_t)timeout_ms * 1000000ull;

    q->answered = 0;
    for (;;) {
        ssize_t r;
        int left;

        while (got < n) {
            size_t l;
            char *s = take_line(q, &l);
            if (!s) {
                break;
            }
            if (l < 2 || strncmp(s, "OK", 2)) {
                memcpy(q->last, s, l + 1);
                q->answered = got;
                return QC_REFUSED;
            }
            if (got == n - 1) {
                memcpy(q->last, s, l + 1);
            }
            got++;
        }
        if (got == n && off == q->olen) {
            break;
        }
        compact(q);
        /* Write what the socket takes; then wait in poll for an answer (or
         * for room) and read it.  spin: no poll, read until data is there. */
        if (off < q->olen) {
            ssize_t w = write(q->fd, q->out + off, q->olen - off);
            if (w > 0) {
                off += (size_t)w;
            } else if (w < 0 && errno != EAGAIN && errno != EINTR) {
                q->answered = got;
                return QC_CLOSED;
            }
        }
        left = left_ms(end);
        if (left <= 0) {
            q->answered = got;
            return QC_TIMEOUT;
        }
        if (!q->spin) {
            struct pollfd p = {
                .fd = q->fd, .events = POLLIN | (off < q->olen ? POLLOUT : 0),
            };
            if (poll(&p, 1, left) < 0 && errno != EINTR) {
                q->answered = got;
                return QC_CLOSED;
            }
            if (!(p.revents & (POLLIN | POLLHUP | POLLERR))) {
                continue;
            }
        }
        r = read(q->fd, q->in + q->have, QC_BUF - 1 - q->have);
        if (r > 0) {
            q->have += (size_t)r;
        } else if (r == 0 || (errno != EAGAIN && errno != EINTR)) {
            q->answered = got;
            return QC_CLOSED;
        }
    }
    q->cmds += n;
    {
        char *t = q->prev;      /* keep this batch; reuse the older buffer */
        q->prev = q->out;
        q->prevlen = q->olen;
        q->out = t;
    }
    q->olen = q->on = 0;
    return QC_OK;
}

const char *qc_cmd(struct qc_qtest *q, unsigned timeout_ms, int *err, const char *fmt, ...)
{
    va_list ap;
    char c[2048];
    int e;

    va_start(ap, fmt);
    vsnprintf(c, sizeof(c), fmt, ap);
    va_end(ap);
    qc_queue(q, "%s", c);
    e = qc_flush(q, timeout_ms);
    if (err) {
        *err = e;
    }
    if (e != QC_OK) {
        qc_discard(q);
        return NULL;
    }
    return q->last;
}

int qc_send(struct qc_qtest *q)
{
    size_t off = 0;

    while (off < q->olen) {
        ssize_t w = write(q->fd, q->out + off, q->olen - off);
        if (w > 0) {
            off += (size_t)w;
        } else if (w < 0 && errno == EAGAIN) {
            struct pollfd p = { .fd = q->fd, .events = POLLOUT };
            poll(&p, 1, 100);
        } else if (w < 0 && errno != EINTR) {
            return QC_CLOSED;
        }
    }
    q->pending += q->on;
    q->olen = q->on = 0;
    return QC_OK;
}

const char *qc_recv(struct qc_qtest *q, unsigned timeout_ms, int *err)
{
    uint64_t end = qb_now_ns() + (uint64_t)timeout_ms * 1000000ull;
    int e = QC_OK;

    for (;;) {
        size_t l;
        char *s = take_line(q, &l);
        if (s) {
            memcpy(q->last, s, l + 1);
            q->pending--;
            q->cmds++;
            e = (l < 2 || strncmp(s, "OK", 2)) ? QC_REFUSED : QC_OK;
            break;
        }
        compact(q);
        if (q->have >= QC_BUF - 1) {
            q->have = 0;        /* an absurd line: drop it */
        }
        struct pollfd p = { .fd = q->fd, .events = POLLIN };
        int left = left_ms(end);
        if (left <= 0) {
            e = QC_TIMEOUT;
            break;
        }
        if (poll(&p, 1, q->spin ? 0 : left) <= 0) {
            continue;
        }
        if (fill(q) != QC_OK) {
            e = QC_CLOSED;
            break;
        }
    }
    if (err) {
        *err = e;
    }
    return e == QC_OK ? q->last : NULL;
}

uint64_t qc_answer_u64(const char *answer)
{
    return answer && strlen(answer) > 3 ? strtoull(answer + 3, NULL, 16) : 0;
}

bool qc_answer_bytes(const char *answer, uint8_t *out, size_t len)
{
    size_t i;

    if (!answer || strncmp(answer, "OK 0x", 5) || strlen(answer) < 5 + 2 * len) {
        return false;
    }
    for (i = 0; i < len; i++) {
        char h[3] = { answer[5 + 2 * i], answer[6 + 2 * i], 0 };
        out[i] = (uint8_t)strtoul(h, NULL, 16);
    }
    return true;
}

/* ------------------------------------------------------------------ */
/* QMP                                                                 */
/* ------------------------------------------------------------------ */

int qc_qmp_open(struct qc_qmp *m, int fd)
{
    memset(m, 0, sizeof(*m));
    m->fd = fd;
    m->in = malloc(QC_BUF);
    return m->in ? 0 : -ENOMEM;
}

void qc_qmp_close(struct qc_qmp *m)
{
    if (m->fd >= 0) {
        close(m->fd);
    }
    m->fd = -1;
    free(m->in);
    m->in = NULL;
}

int qc_qmp_line(struct qc_qmp *m, uint64_t end_ns)
{
    for (;;) {
        char *nl = memchr(m->in, '\n', m->have);
        if (nl) {
            size_t l = (size_t)(nl - m->in);
            size_t c = l < sizeof(m->line) - 1 ? l : sizeof(m->line) - 1;
            memcpy(m->line, m->in, c);
            m->line[c] = 0;
            memmove(m->in, nl + 1, m->have - l - 1);
            m->have -= l + 1;
            return QC_OK;
        }
        if (m->have >= QC_BUF - 1) {
            m->have = 0;        /* an absurd line: drop it */
        }
        {
            struct pollfd p = { .fd = m->fd, .events = POLLIN };
            int left = left_ms(end_ns);
            ssize_t r;
            if (left <= 0) {
                return QC_TIMEOUT;
            }
            if (poll(&p, 1, left) <= 0) {
                continue;
            }
            r = read(m->fd, m->in + m->have, QC_BUF - 1 - m->have);
            if (r > 0) {
                m->have += (size_t)r;
            } else if (r == 0 || (errno != EAGAIN && errno != EINTR)) {
                return QC_CLOSED;
            }
        }
    }
}

static bool is_reset_event(const char *line)
{
    return strstr(line, "\"event\"") && strstr(line, "\"RESET\"");
}

int qc_qmp(struct qc_qmp *m, const char *json, unsigned timeout_ms)
{
    uint64_t end = qb_now_ns() + (uint64_t)timeout_ms * 1000000ull;
    size_t len = strlen(json), off = 0;
    int e;

    while (off < len) {
        ssize_t w = write(m->fd, json + off, len - off);
        if (w < 0 && errno != EINTR && errno != EAGAIN) {
            return QC_CLOSED;
        }
        if (w > 0) {
            off += (size_t)w;
        }
    }
    if (write(m->fd, "\n", 1) != 1) {
        return QC_CLOSED;
    }
    for (;;) {
        e = qc_qmp_line(m, end);
        if (e != QC_OK) {
            return e;
        }
        if (strstr(m->line, "\"return\"") || strstr(m->line, "\"error\"")) {
            return QC_OK;
        }
        if (is_reset_event(m->line)) {
            m->reset_events++;
        }
    }
}

int qc_qmp_greet(struct qc_qmp *m, unsigned timeout_ms)
{
    int e = qc_qmp_line(m, qb_now_ns() + (uint64_t)timeout_ms * 1000000ull);

    return e != QC_OK ? e : qc_qmp(m, "{\"execute\":\"qmp_capabilities\"}", timeout_ms);
}

int qc_qmp_wait_reset(struct qc_qmp *m, unsigned seen_before, unsigned timeout_ms)
{
    uint64_t end = qb_now_ns() + (uint64_t)timeout_ms * 1000000ull;
    int e;

    while (m->reset_events == seen_before) {
        e = qc_qmp_line(m, end);
        if (e != QC_OK) {
            return e;
        }
        if (is_reset_event(m->line)) {
            m->reset_events++;
        }
    }
    return QC_OK;
}

int qc_qom_u64(struct qc_qmp *m, const char *prop, uint64_t *v, unsigned timeout_ms)
{
    char j[256];
    const char *p;
    int e;

    snprintf(j, sizeof(j), "{\"execute\":\"qom-get\",\"arguments\":{\"path\":"
             "\"/machine/peripheral/dn\",\"property\":\"%s\"}}", prop);
    e = qc_qmp(m, j, timeout_ms);
    if (e != QC_OK) {
        return e;
    }
    p = strstr(m->line, "\"return\":");
    if (!p) {
        return QC_REFUSED;
    }
    *v = strtoull(p + 9, NULL, 10);
    return QC_OK;
}

/* ------------------------------------------------------------------ */
/* Start-up                                                            */
/* ------------------------------------------------------------------ */

void qc_qmp_argv(char **argv, int *n, char *chr, const char *path)
{
    snprintf(chr, QC_CHR_LEN, "socket,id=qmp,path=%s", path);
    argv[(*n)++] = "-chardev";
    argv[(*n)++] = chr;
    argv[(*n)++] = "-mon";
    argv[(*n)++] = "chardev=qmp,mode=control";
}

int qc_accept(int lfd, unsigned ms, pid_t pid, int *status)
{
    struct pollfd p = { .fd = lfd, .events = POLLIN };
    uint64_t end = qb_now_ns() + (uint64_t)ms * 1000000ull;

    while (qb_now_ns() < end) {
        if (poll(&p, 1, 100) > 0) {
            int fd = accept(lfd, NULL, NULL);
            if (fd >= 0) {
                return fd;
            }
        }
        if (pid > 0 && waitpid(pid, status, WNOHANG) == pid) {
            return -2;
        }
    }
    errno = ETIMEDOUT;
    return -1;
}
