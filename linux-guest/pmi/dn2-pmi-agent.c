/* SPDX-License-Identifier: MIT */
/*
 * dn2-pmi-agent: PMI over the boards, for MPI jobs in lock-step virtual time
 * (scripts/mpirun.sh --virtual-time; docs/mpi.md, "In virtual time").
 *
 * One agent per node, started by the node's script (as root) before the
 * node's ranks.  It serves the node's ranks (libpmi-dn2.so with
 * DN2_PMI_SOCK) over a Unix socket and exchanges the key-value space with
 * the other nodes' agents over the board with dn2msg: no job server, no
 * network, nothing that arrives at a host-dependent time.
 *
 *   dn2-pmi-agent -s SOCK -r RANKTABLE -n NODE [-l LOCAL] [-w WID] [-u UID]
 *                 [-a ABORTFILE] [-j JOB] [-v]
 *   dn2-pmi-agent --tell SOCK abort RANK CODE [MESSAGE]
 *
 *   -s SOCK       the socket the ranks connect to
 *   -r RANKTABLE  the node table, "node lid wid" lines (the launcher's
 *                 DN2_RANKS); the agents use WID -w of every listed board
 *   -n NODE       this node (its line in the table)
 *   -l LOCAL      ranks on this node (default 1): a barrier waits for all
 *   -w WID        the agents' WID (default 1: the node's rank has WID 0);
 *                 the agent opens the board until the driver gives it this
 *                 WID, then closes the other handles
 *   -u UID        on an abort, every process of this user is killed
 *                 (the ranks; default 1000)
 *   -a FILE       on an abort, "local|remote RANK CODE MESSAGE" goes there
 *   -j JOB        the job's number (several jobs one after the other: each
 *                 has its own agents, told apart at the dn2msg job start)
 *   -v            trace on stderr
 *   --tell SOCK abort RANK CODE [MESSAGE]   as a client (the node's script:
 *                 a rank exited non-zero): abort the job
 *
 * The agent creates SOCK once every agent of the job is up (dn2msg's job
 * start), so a rank started after SOCK exists finds the others ready.
 *
 * Socket protocol (text lines; keys and values %-escaped as in pmi-dn2.c):
 *   hello RANK          -> ok
 *   put KEY VALUE       (no answer; a commit follows)
 *   commit              -> ok
 *   barrier             -> kv KEY VALUE ... end     (the keys new since the
 *                          last barrier, of every rank) | aborted
 *   get KEY             -> val VALUE | none
 *   abort RANK CODE MSG (no answer) the job is aborted
 *
 * Between agents (dn2msg, eager messages only, received only with
 * DN2_ANY_SOURCE/DN2_ANY_TAG so that nothing waits unseen in dn2msg's
 * queue): tag = epoch << 4 | kind; KEYS (a node's keys of the epoch, to
 * agent 0), ALL (the merged keys of the epoch, from agent 0), ABORT.  A
 * long set travels in pieces of CHUNK bytes, each with its offset and the
 * total.  Agent 0 merges in node order, the keys of a node in rank order
 * and then in the order they were put: nothing depends on timing.
 */
#define _GNU_SOURCE
#include "libdimmnet2.h"
#include "dn2msg.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "pmi-limits.h"

enum { K_KEYS = 1, K_ALL = 2, K_ABORT = 3 };
#define TAG(epoch, kind) ((int)((((uint32_t)(epoch) & 0x3ffffff) << 4) | (kind)))
#define TAG_KIND(t) ((t) & 15)
#define TAG_EPOCH(t) ((uint32_t)(t) >> 4)
#define CHUNK 16384u                 /* bytes of set per message */
#define HDR 8u                       /* u32 offset, u32 total */
#define MAX_CLIENTS 16
#define MAX_SET (64u << 20)

static int verbose;
static int me = -1, nnodes;

static void trace(const char *fmt, ...)
{
    va_list ap;

    if (!verbose) {
        return;
    }
    va_start(ap, fmt);
    fprintf(stderr, "dn2-pmi-agent[%d]: ", me);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

static void die(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    fprintf(stderr, "dn2-pmi-agent[%d]: error: ", me);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(1);
}

/* ------------------------------------------------------------ buffers */
struct buf {
    char *p;
    size_t n, cap;
};

static void buf_add(struct buf *b, const void *d, size_t n)
{
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 1024;
        while (cap < b->n + n + 1) {
            cap *= 2;
        }
        b->p = realloc(b->p, cap);
        if (!b->p) {
            die("out of memory");
        }
        b->cap = cap;
    }
    memcpy(b->p + b->n, d, n);
    b->n += n;
    b->p[b->n] = 0;
}

static void buf_str(struct buf *b, const char *s) { buf_add(b, s, strlen(s)); }

static void buf_esc(struct buf *b, const char *s)
{
    static const char hex[] = "0123456789ABCDEF";

    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
            c == '.' || c == '_' || c == '~' || c == '-') {
            buf_add(b, s, 1);
        } else {
            char e[3] = { '%', hex[c >> 4], hex[c & 15] };
            buf_add(b, e, 3);
        }
    }
}

static int hexval(int c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

static char *unesc(const char *s, size_t n)
{
    char *out = malloc(n + 1), *o = out;

    if (!out) {
        die("out of memory");
    }
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '%' && i + 2 < n && hexval(s[i + 1]) >= 0 && hexval(s[i + 2]) >= 0) {
            *o++ = (char)(hexval(s[i + 1]) * 16 + hexval(s[i + 2]));
            i += 2;
        } else {
            *o++ = s[i];
        }
    }
    *o = 0;
    return out;
}

/* ------------------------------------------------------- key-value sets */
struct kv {
    char *key, *val;            /* escaped, as they travel */
    struct kv *next;
};

struct kvlist {
    struct kv *head, **tail;
    int n;
};

static void kvl_init(struct kvlist *l) { l->head = NULL; l->tail = &l->head; l->n = 0; }

static struct kv *kvl_find(struct kvlist *l, const char *key)
{
    for (struct kv *e = l->head; e; e = e->next) {
        if (!strcmp(e->key, key)) {
            return e;
        }
    }
    return NULL;
}

/* Set key (replacing its value, keeping its place). */
static void kvl_set(struct kvlist *l, const char *key, const char *val)
{
    struct kv *e = kvl_find(l, key);

    if (e) {
        free(e->val);
        e->val = strdup(val);
        if (!e->val) {
            die("out of memory");
        }
        return;
    }
    e = calloc(1, sizeof(*e));
    if (!e || !(e->key = strdup(key)) || !(e->val = strdup(val))) {
        die("out of memory");
    }
    *l->tail = e;
    l->tail = &e->next;
    l->n++;
}

static void kvl_free(struct kvlist *l)
{
    while (l->head) {
        struct kv *e = l->head;
        l->head = e->next;
        free(e->key);
        free(e->val);
        free(e);
    }
    kvl_init(l);
}

/* "key value\n" lines of a list */
static void kvl_dump(struct kvlist *l, struct buf *b)
{
    for (struct kv *e = l->head; e; e = e->next) {
        buf_str(b, e->key);
        buf_str(b, " ");
        buf_str(b, e->val);
        buf_str(b, "\n");
    }
}

/* lines "key value" (escaped) into a list */
static void kvl_parse(struct kvlist *l, const char *p, size_t n)
{
    const char *end = p + n;

    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *le = nl ? nl : end;
        const char *sp = memchr(p, ' ', (size_t)(le - p));
        if (sp) {
            char *k = strndup(p, (size_t)(sp - p)), *v = strndup(sp + 1, (size_t)(le - sp - 1));
            if (!k || !v) {
                die("out of memory");
            }
            kvl_set(l, k, v);
            free(k);
            free(v);
        }
        p = nl ? nl + 1 : end;
    }
}

/* ------------------------------------------------------------- state */
struct client {
    int fd;
    int rank;                   /* -1 before hello */
    int in_barrier;
    struct buf in;
    struct kvlist puts;         /* put since the last barrier */
};

static dn2_comm_t *comm;
static dn2_t *board;
static struct client cl[MAX_CLIENTS];
static int ncl, nlocal = 1, lsock = -1;
static uid_t kill_uid = 1000;
static const char *abort_file, *sock_path;
static uint8_t job_token = 0xa0;
static struct kvlist store;     /* every key known here */
static uint32_t epoch;          /* barriers completed */
/* the epoch in progress: each node's keys (agent 0), the merged set */
static struct buf *part;        /* [nnodes]: KEYS pieces received */
static uint32_t *part_total;    /* [nnodes]: total, or UINT32_MAX = none yet */
static int *part_epoch;
static struct buf allset;
static uint32_t all_total = UINT32_MAX;
static uint32_t all_epoch;

static void wr(int fd, const char *s, size_t n)
{
    while (n) {
        ssize_t w = send(fd, s, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR) {
            continue;
        }
        if (w <= 0) {
            return;             /* the client is gone: it sees EOF */
        }
        s += w;
        n -= (size_t)w;
    }
}

static void kill_ranks(void)
{
    pid_t p = fork();

    if (p == 0) {
        if (setgid(kill_uid) || setuid(kill_uid)) {
            _exit(1);
        }
        kill(-1, SIGKILL);
        _exit(0);
    }
    if (p > 0) {
        waitpid(p, NULL, 0);
    }
}

/* The job is aborted: by RANK here (local) or elsewhere.  The ranks of
 * this node are killed, the reason written, the agent ends. */
static void aborted(int local, int rank, int code, const char *msg)
{
    for (char *q = (char *)msg; *q; q++) {
        if (*q == '\n' || *q == '\r') {
            *q = ' ';       /* one line (the abort file, the console) */
        }
    }
    trace("abort: %s rank %d code %d: %s", local ? "local" : "remote", rank, code, msg);
    if (local) {
        char pay[600];
        int n = snprintf(pay, sizeof(pay), "%d %d %.500s", rank, code, msg);
        for (int i = 0; i < nnodes; i++) {
            if (i != me) {
                int r = dn2_send(comm, i, TAG(0, K_ABORT), pay, (size_t)n + 1);
                if (r) {
                    fprintf(stderr, "dn2-pmi-agent[%d]: the abort did not reach node %d (%s)\n",
                            me, i, strerror(-r));
                }
            }
        }
    }
    /* The reason first: the node's script reads it when its ranks die. */
    if (abort_file) {
        char tmp[4096];
        snprintf(tmp, sizeof(tmp), "%s.tmp", abort_file);
        FILE *f = fopen(tmp, "w");
        if (f) {
            fprintf(f, "%s %d %d %s\n", local ? "local" : "remote", rank, code, msg);
            fclose(f);
            rename(tmp, abort_file);
        }
    }
    for (int i = 0; i < ncl; i++) {
        wr(cl[i].fd, "aborted\n", 8);
    }
    kill_ranks();
    if (sock_path) {
        unlink(sock_path);
    }
    exit(0);
}

/* ------------------------------------------------------------- board */
/* Send a set in pieces. */
static void send_set(int dest, int tag, const struct buf *b)
{
    uint8_t msg[HDR + CHUNK];
    uint32_t total = (uint32_t)b->n, off = 0;

    do {
        uint32_t len = total - off < CHUNK ? total - off : CHUNK;
        memcpy(msg, &off, 4);
        memcpy(msg + 4, &total, 4);
        if (len) {
            memcpy(msg + HDR, b->p + off, len);
        }
        int r = dn2_send(comm, dest, tag, msg, HDR + len);
        if (r) {
            die("send to node %d: %s", dest, strerror(-r));
        }
        off += len;
    } while (off < total);
}

/* Add a piece to b; 1 when the set is complete. */
static int take_piece(struct buf *b, uint32_t *total, const uint8_t *msg, size_t len, int src)
{
    uint32_t off, tot;

    if (len < HDR) {
        die("a short message from node %d", src);
    }
    memcpy(&off, msg, 4);
    memcpy(&tot, msg + 4, 4);
    if (tot > MAX_SET || off != b->n || off + (len - HDR) > tot) {
        die("a set piece out of order from node %d (offset %u, have %zu, total %u)", src, off,
            b->n, tot);
    }
    *total = tot;
    buf_add(b, msg + HDR, len - HDR);
    return b->n == tot;
}

/* Take one message from the board and file it. */
static void board_one(void)
{
    static uint8_t msg[HDR + CHUNK + 1024];
    struct dn2_msg_status st;
    int r = dn2_recv(comm, DN2_ANY_SOURCE, DN2_ANY_TAG, msg, sizeof(msg) - 1, &st);

    if (r) {
        die("receive: %s", strerror(-r));
    }
    if (st.source < 0 || st.source >= nnodes) {
        die("a message from an unknown node %d", st.source);
    }
    switch (TAG_KIND(st.tag)) {
    case K_ABORT: {
        int rank = -1, code = 1, off = 0;
        msg[st.len < sizeof(msg) ? st.len : sizeof(msg) - 1] = 0;
        sscanf((char *)msg, "%d %d %n", &rank, &code, &off);
        aborted(0, rank, code, (char *)msg + off);
        break;
    }
    case K_KEYS:
        if (me != 0) {
            die("keys from node %d, but this is not node 0", st.source);
        }
        if (part_total[st.source] != UINT32_MAX && part_epoch[st.source] == (int)TAG_EPOCH(st.tag) &&
            part[st.source].n == part_total[st.source]) {
            die("node %d sent the keys of barrier %u twice", st.source, TAG_EPOCH(st.tag));
        }
        if (TAG_EPOCH(st.tag) != epoch + 1) {
            die("node %d is at barrier %u, this node at %u", st.source, TAG_EPOCH(st.tag), epoch + 1);
        }
        part_epoch[st.source] = (int)TAG_EPOCH(st.tag);
        take_piece(&part[st.source], &part_total[st.source], msg, st.len, st.source);
        break;
    case K_ALL:
        if (st.source != 0 || TAG_EPOCH(st.tag) != epoch + 1) {
            die("a merged set of barrier %u from node %d (this node at %u)", TAG_EPOCH(st.tag),
                st.source, epoch + 1);
        }
        all_epoch = TAG_EPOCH(st.tag);
        take_piece(&allset, &all_total, msg, st.len, st.source);
        break;
    default:
        die("a message of unknown kind %d from node %d", TAG_KIND(st.tag), st.source);
    }
}

/* ----------------------------------------------------------- clients */
static void drop_client(int i)
{
    trace("rank %d disconnected", cl[i].rank);
    close(cl[i].fd);
    free(cl[i].in.p);
    kvl_free(&cl[i].puts);
    cl[i] = cl[--ncl];
}

static void client_input(int i);

/* While a barrier waits for the board: take what arrived, and see to the
 * clients (an abort from this node must not wait for the barrier). */
static void wait_step(void)
{
    struct pollfd pf[MAX_CLIENTS];

    if (dn2_lh_ready(board)) {
        board_one();
        return;
    }
    for (int i = 0; i < ncl; i++) {
        pf[i] = (struct pollfd){ .fd = cl[i].fd, .events = POLLIN };
    }
    int n = ncl;
    if (poll(pf, (nfds_t)n, 1) > 0) {
        for (int i = n - 1; i >= 0; i--) {
            if (pf[i].revents) {
                client_input(i);
            }
        }
    }
}

static int barrier_ready(void)
{
    int n = 0;

    for (int i = 0; i < ncl; i++) {
        n += cl[i].in_barrier;
    }
    return n >= nlocal;
}

/* Every local rank is in the barrier: exchange, answer them. */
static void do_barrier(void)
{
    struct buf mine = { 0 }, merged = { 0 }, answer = { 0 };
    struct kvlist set;
    uint32_t e = epoch + 1;

    /* This node's keys: by rank, then in the order they were put. */
    for (int rank = -1, next;; rank = next) {
        int at = -1;
        next = -1;
        for (int i = 0; i < ncl; i++) {
            if (cl[i].rank > rank && (next < 0 || cl[i].rank < next)) {
                next = cl[i].rank;
                at = i;
            }
        }
        if (at < 0) {
            break;
        }
        kvl_dump(&cl[at].puts, &mine);
        kvl_free(&cl[at].puts);
    }
    trace("barrier %u: %zu bytes of keys here", e, mine.n);
    if (me == 0) {
        for (int i = 1; i < nnodes; i++) {
            while (part_total[i] == UINT32_MAX || part_epoch[i] != (int)e || part[i].n != part_total[i]) {
                wait_step();
            }
        }
        kvl_init(&set);
        kvl_parse(&set, mine.p ? mine.p : "", mine.n);
        for (int i = 1; i < nnodes; i++) {
            kvl_parse(&set, part[i].p ? part[i].p : "", part[i].n);
            part[i].n = 0;
            part_total[i] = UINT32_MAX;
        }
        kvl_dump(&set, &merged);
        kvl_free(&set);
        for (int i = 1; i < nnodes; i++) {
            send_set(i, TAG(e, K_ALL), &merged);
        }
    } else {
        send_set(0, TAG(e, K_KEYS), &mine);
        while (all_total == UINT32_MAX || all_epoch != e || allset.n != all_total) {
            wait_step();
        }
        merged = allset;
        allset = (struct buf){ 0 };
        all_total = UINT32_MAX;
    }
    epoch = e;
    kvl_parse(&store, merged.p ? merged.p : "", merged.n);
    /* The answer: "kv KEY VALUE" lines of the epoch's keys, then "end". */
    kvl_init(&set);
    kvl_parse(&set, merged.p ? merged.p : "", merged.n);
    for (struct kv *k = set.head; k; k = k->next) {
        buf_str(&answer, "kv ");
        buf_str(&answer, k->key);
        buf_str(&answer, " ");
        buf_str(&answer, k->val);
        buf_str(&answer, "\n");
    }
    kvl_free(&set);
    buf_str(&answer, "end\n");
    for (int i = 0; i < ncl; i++) {
        if (cl[i].in_barrier) {
            wr(cl[i].fd, answer.p, answer.n);
            cl[i].in_barrier = 0;
        }
    }
    trace("barrier %u passed: %zu bytes of keys", e, merged.n);
    free(mine.p);
    free(merged.p);
    free(answer.p);
}

/* One request line of client i; 0, or -1 to drop the client. */
static int request(int i, char *line)
{
    struct client *c = &cl[i];
    char *arg = strchr(line, ' ');

    if (arg) {
        *arg++ = 0;
    }
    if (!strcmp(line, "hello") && arg) {
        c->rank = atoi(arg);
        trace("rank %d connected", c->rank);
        wr(c->fd, "ok\n", 3);
    } else if (!strcmp(line, "put") && arg && strchr(arg, ' ')) {
        char *v = strchr(arg, ' ');
        *v++ = 0;
        if (strlen(arg) > 3 * DN2_PMI_KEY_MAX || strlen(v) > 3 * DN2_PMI_VAL_MAX ||
            c->puts.n >= DN2_PMI_RANK_KEYS) {
            return -1;
        }
        kvl_set(&c->puts, arg, v);
        kvl_set(&store, arg, v);    /* its own keys are visible at once */
    } else if (!strcmp(line, "commit")) {
        wr(c->fd, "ok\n", 3);
    } else if (!strcmp(line, "barrier")) {
        c->in_barrier = 1;
    } else if (!strcmp(line, "get") && arg) {
        struct kv *e = kvl_find(&store, arg);
        struct buf b = { 0 };
        if (e) {
            buf_str(&b, "val ");
            buf_str(&b, e->val);
            buf_str(&b, "\n");
        } else {
            buf_str(&b, "none\n");
        }
        wr(c->fd, b.p, b.n);
        free(b.p);
    } else if (!strcmp(line, "abort") && arg) {
        int rank = -1, code = 1, off = 0;
        sscanf(arg, "%d %d %n", &rank, &code, &off);
        char *msg = unesc(arg + off, strlen(arg + off));
        aborted(1, rank, code, msg);
    } else {
        fprintf(stderr, "dn2-pmi-agent[%d]: bad request '%.40s'\n", me, line);
        return -1;
    }
    return 0;
}

static void client_input(int i)
{
    char tmp[8192];
    ssize_t r = recv(cl[i].fd, tmp, sizeof(tmp), 0);

    if (r < 0 && errno == EINTR) {
        return;
    }
    if (r <= 0) {
        drop_client(i);
        return;
    }
    buf_add(&cl[i].in, tmp, (size_t)r);
    for (;;) {
        char *nl = memchr(cl[i].in.p, '\n', cl[i].in.n);
        if (!nl) {
            if (cl[i].in.n > 4 * (DN2_PMI_KEY_MAX + DN2_PMI_VAL_MAX)) {
                drop_client(i);
            }
            return;
        }
        *nl = 0;
        size_t used = (size_t)(nl + 1 - cl[i].in.p);
        char *line = strdup(cl[i].in.p);
        if (!line) {
            die("out of memory");
        }
        memmove(cl[i].in.p, nl + 1, cl[i].in.n - used);
        cl[i].in.n -= used;
        int rc = request(i, line);
        free(line);
        if (rc) {
            drop_client(i);
            return;
        }
    }
}

/* ------------------------------------------------------------ client */
static int tell(int argc, char **argv)
{
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    struct buf b = { 0 };
    int fd;

    if (argc < 5 || strcmp(argv[3], "abort")) {
        fprintf(stderr, "usage: dn2-pmi-agent --tell SOCK abort RANK CODE [MESSAGE]\n");
        return 2;
    }
    if (strlen(argv[2]) >= sizeof(sa.sun_path)) {
        fprintf(stderr, "dn2-pmi-agent: socket path too long\n");
        return 2;
    }
    strcpy(sa.sun_path, argv[2]);
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
        fprintf(stderr, "dn2-pmi-agent: %s: %s\n", argv[2], strerror(errno));
        return 1;
    }
    buf_str(&b, "abort ");
    buf_str(&b, argv[4]);
    buf_str(&b, " ");
    buf_str(&b, argc > 5 ? argv[5] : "1");
    buf_str(&b, " ");
    buf_esc(&b, argc > 6 ? argv[6] : "");
    buf_str(&b, "\n");
    wr(fd, b.p, b.n);
    /* wait until the agent has acted (it closes every connection) */
    char c;
    while (recv(fd, &c, 1, 0) > 0) {
    }
    close(fd);
    free(b.p);
    return 0;
}

static void usage(void)
{
    fprintf(stderr,
            "usage: dn2-pmi-agent -s SOCK -r RANKTABLE -n NODE [-l LOCAL] [-w WID] [-u UID] [-a FILE] [-j JOB] [-v]\n"
            "       dn2-pmi-agent --tell SOCK abort RANK CODE [MESSAGE]\n");
    exit(2);
}

int main(int argc, char **argv)
{
    const char *table_path = NULL;
    struct dn2_rank *tab;
    struct dn2_comm_opts o = { 0 };
    dn2_t *spare[4];
    int nspare = 0, want_wid = 1, opt, r;

    if (argc > 1 && !strcmp(argv[1], "--tell")) {
        return tell(argc, argv);
    }
    while ((opt = getopt(argc, argv, "s:r:n:l:w:u:a:j:vh")) != -1) {
        switch (opt) {
        case 's': sock_path = optarg; break;
        case 'r': table_path = optarg; break;
        case 'n': me = atoi(optarg); break;
        case 'l': nlocal = atoi(optarg); break;
        case 'w': want_wid = atoi(optarg); break;
        case 'u': kill_uid = (uid_t)atoi(optarg); break;
        case 'a': abort_file = optarg; break;
        case 'j': job_token = (uint8_t)(1 + (0xa0 + atoi(optarg)) % 255); break;
        case 'v': verbose = 1; break;
        default: usage();
        }
    }
    if (!sock_path || !table_path || me < 0 || nlocal < 1 || nlocal > MAX_CLIENTS ||
        want_wid < 0 || want_wid > 1 || optind != argc) {
        usage();
    }
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    if (strlen(sock_path) >= sizeof(sa.sun_path)) {
        die("socket path too long: %s", sock_path);
    }
    signal(SIGPIPE, SIG_IGN);

    tab = calloc(DN2_MAX_RANKS, sizeof(*tab));
    if (!tab) {
        die("out of memory");
    }
    nnodes = dn2_read_rank_table(table_path, tab, DN2_MAX_RANKS);
    if (nnodes < 1) {
        die("%s: no rank table (%s)", table_path, nnodes < 0 ? strerror(-nnodes) : "empty");
    }
    if (me >= nnodes) {
        die("node %d is not in %s (%d nodes)", me, table_path, nnodes);
    }
    for (int i = 0; i < nnodes; i++) {
        tab[i].wid = (uint8_t)want_wid;
    }
    /* The WID: the driver gives the lowest free one; hold the others
     * until ours comes, then give them back (to the node's rank). */
    for (;;) {
        dn2_t *d;
        r = dn2_open(&d, NULL);
        if (r) {
            die("cannot open the board (WID %d wanted): %s", want_wid,
                r == -EBUSY ? "both WIDs in use" : strerror(-r));
        }
        if (dn2_wid(d) == want_wid) {
            board = d;
            break;
        }
        if (nspare == 4) {
            die("the driver gives no WID %d", want_wid);
        }
        spare[nspare++] = d;
    }
    while (nspare) {
        dn2_close(spare[--nspare]);
    }
    o.ring_bytes = 256u << 10;
    o.eager_limit = 64u << 10;
    o.chunk_bytes = 1u << 20;
    o.job = job_token;
    r = dn2_comm_init(&comm, board, me, nnodes, tab, &o);
    if (r) {
        die("dn2msg job start among the %d agents (WID %d): %s", nnodes, want_wid, strerror(-r));
    }
    free(tab);
    trace("up: node %d of %d, WID %d", me, nnodes, want_wid);

    part = calloc((size_t)nnodes, sizeof(*part));
    part_total = malloc((size_t)nnodes * sizeof(*part_total));
    part_epoch = calloc((size_t)nnodes, sizeof(*part_epoch));
    if (!part || !part_total || !part_epoch) {
        die("out of memory");
    }
    for (int i = 0; i < nnodes; i++) {
        part_total[i] = UINT32_MAX;
    }
    kvl_init(&store);

    /* The socket last: a rank that finds it finds every agent up. */
    strcpy(sa.sun_path, sock_path);
    unlink(sock_path);
    lsock = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    char tmp_path[sizeof(sa.sun_path) + 8];
    snprintf(tmp_path, sizeof(tmp_path), "%s.tmp", sock_path);
    if (strlen(tmp_path) >= sizeof(sa.sun_path)) {
        die("socket path too long: %s", sock_path);
    }
    strcpy(sa.sun_path, tmp_path);
    unlink(tmp_path);
    if (lsock < 0 || bind(lsock, (struct sockaddr *)&sa, sizeof(sa)) || listen(lsock, 16) ||
        chmod(tmp_path, 0666) || rename(tmp_path, sock_path)) {
        die("socket %s: %s", sock_path, strerror(errno));
    }

    for (;;) {
        struct pollfd pf[MAX_CLIENTS + 1];
        int n = 0;

        pf[n++] = (struct pollfd){ .fd = lsock, .events = POLLIN };
        for (int i = 0; i < ncl; i++) {
            pf[n++] = (struct pollfd){ .fd = cl[i].fd, .events = POLLIN };
        }
        /* The board has no interrupt here: look at it every few ms (of
         * the guest's clock: virtual under --virtual-time). */
        r = poll(pf, (nfds_t)n, dn2_lh_ready(board) ? 0 : 5);
        if (r < 0 && errno != EINTR) {
            die("poll: %s", strerror(errno));
        }
        while (dn2_lh_ready(board)) {
            board_one();
        }
        if (r > 0) {
            /* clients in their order, then new connections */
            for (int i = ncl - 1; i >= 0; i--) {
                if (pf[i + 1].revents) {
                    client_input(i);
                }
            }
            if (pf[0].revents & POLLIN) {
                int fd = accept4(lsock, NULL, NULL, SOCK_CLOEXEC);
                if (fd >= 0 && ncl < MAX_CLIENTS) {
                    cl[ncl] = (struct client){ .fd = fd, .rank = -1 };
                    kvl_init(&cl[ncl].puts);
                    ncl++;
                } else if (fd >= 0) {
                    close(fd);
                }
            }
        }
        if (barrier_ready()) {
            do_barrier();
        }
    }
}
