/* SPDX-License-Identifier: MIT */
/*
 * The client side of a qtest-driven QEMU for the host tools (dn2-soak,
 * dn2-scale, dn2-bench-qtest): the qtest protocol (commands pipelined,
 * answers read in order) and its QMP monitor.  A tool's readq/writeq over
 * qc_cmd are the accessor of tools/common/dn2-board-up.h.  Plain C and
 * POSIX; errors are returned as enum qc_err, the callers report them their
 * own way (a tool dies, the soak records a hang or a crash).
 */
#ifndef QTEST_CLIENT_H
#define QTEST_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define QC_BUF (1 << 18)        /* a batch of commands; an answer line */

enum qc_err {
    QC_OK = 0,
    QC_REFUSED = -1,            /* an answer other than "OK ..." (QMP: an error) */
    QC_TIMEOUT = -2,            /* no answer within the time */
    QC_CLOSED = -3,             /* the connection closed or a read/write failed */
};

/* "refused", "timed out", "closed". */
const char *qc_strerror(int err);

/* ------------------------------------------------------------------ */
/* qtest                                                               */
/* ------------------------------------------------------------------ */

struct qc_qtest {
    int fd;
    bool spin;                  /* wait for answers without sleeping */
    char *in;                   /* answers read, not yet consumed */
    size_t have, pos;
    char *out;                  /* commands queued, not yet sent */
    size_t olen;
    unsigned on;                /* ... how many */
    unsigned pending;           /* sent (qc_send), answers not yet read */
    char *prev;                 /* the batch flushed before (for a report) */
    size_t prevlen;
    char *last;                 /* the last answer line (after an error: the
                                 * refused one) */
    unsigned answered;          /* after a qc_flush error: answers read */
    uint64_t cmds;              /* commands answered */
};

/* Buffers for the connection fd (made non-blocking): 0 or -ENOMEM. */
int qc_open(struct qc_qtest *q, int fd);
/* Close the fd, free the buffers. */
void qc_close(struct qc_qtest *q);

/* Queue one command (pipelined until qc_flush or qc_send); false when the
 * batch is full. */
bool qc_queue(struct qc_qtest *q, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Queue "write ADDR LEN 0xHEX" of len bytes; false when it does not fit. */
bool qc_queue_write(struct qc_qtest *q, uint64_t addr, const uint8_t *data, size_t len);

/* Send the queued commands and read one answer each, writing and reading
 * at the same time (a big batch must not fill both directions); the last
 * answer is left in q->last.  Nothing may be pending (qc_send).  On an
 * error q->answered says how many were answered (qc_batch_cmd names the
 * next); the batch stays queued until qc_discard. */
int qc_flush(struct qc_qtest *q, unsigned timeout_ms);
/* The k-th command of the queued batch, for a report. */
void qc_batch_cmd(const struct qc_qtest *q, unsigned k, char *out, size_t cap);
/* Forget the queued batch (after reporting a qc_flush error). */
void qc_discard(struct qc_qtest *q);

/* One command now (after whatever is queued): its answer line, or NULL
 * with *err set (err may be NULL); the batch is discarded on an error. */
const char *qc_cmd(struct qc_qtest *q, unsigned timeout_ms, int *err, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Send the queued commands without reading (they become pending), and read
 * the answer to the oldest pending one.  Several QEMUs then work on their
 * commands at the same time. */
int qc_send(struct qc_qtest *q);
const char *qc_recv(struct qc_qtest *q, unsigned timeout_ms, int *err);

/* "OK 0x..." of readq / read: the number, the bytes (false: malformed). */
uint64_t qc_answer_u64(const char *answer);
bool qc_answer_bytes(const char *answer, uint8_t *out, size_t len);

/* ------------------------------------------------------------------ */
/* QMP                                                                 */
/* ------------------------------------------------------------------ */

struct qc_qmp {
    int fd;
    char *in;
    size_t have;
    char line[8192];            /* the last line read */
    unsigned reset_events;      /* RESET events seen */
};

/* Buffers for the connection fd: 0 or -ENOMEM. */
int qc_qmp_open(struct qc_qmp *m, int fd);
void qc_qmp_close(struct qc_qmp *m);
/* Read one line into m->line before the deadline (qb_now_ns() + ...). */
int qc_qmp_line(struct qc_qmp *m, uint64_t end_ns);
/* The greeting, then qmp_capabilities and its answer. */
int qc_qmp_greet(struct qc_qmp *m, unsigned timeout_ms);
/* One command (JSON without the newline): its answer line (events counted
 * and skipped) in m->line; QC_OK for "return" and "error" alike. */
int qc_qmp(struct qc_qmp *m, const char *json, unsigned timeout_ms);
/* Wait for a RESET event after the first seen_before. */
int qc_qmp_wait_reset(struct qc_qmp *m, unsigned seen_before, unsigned timeout_ms);
/* qom-get of an unsigned property of the device id "dn"; QC_REFUSED with
 * the answer in m->line when it is an error. */
int qc_qom_u64(struct qc_qmp *m, const char *prop, uint64_t *v, unsigned timeout_ms);

/* ------------------------------------------------------------------ */
/* Start-up                                                            */
/* ------------------------------------------------------------------ */

/* Appends "-chardev socket,id=qmp,path=PATH -mon chardev=qmp,mode=control";
 * chr: the caller's buffer of QC_CHR_LEN bytes. */
#define QC_CHR_LEN 320
void qc_qmp_argv(char **argv, int *n, char *chr, const char *path);

/* Accept a connection on lfd within ms; -1 (errno ETIMEDOUT) when none
 * came, -2 when pid exited first (its status in *status). */
int qc_accept(int lfd, unsigned ms, pid_t pid, int *status);

#endif
