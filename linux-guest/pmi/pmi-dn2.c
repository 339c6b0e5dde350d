/*
 * libpmi-dn2.so: PMI-1 for MPI ranks started by the DIMMnet-2 cluster
 * launcher (scripts/mpirun.sh), talking to the launcher's job server over
 * HTTP (the control network: slirp, the host at 10.0.2.2).  See docs/mpi.md.
 *
 * Open MPI 4.1's pmix/flux component dlopens the library named by
 * FLUX_PMI_LIBRARY_PATH (when FLUX_JOB_ID is set) and calls the eighteen
 * functions below: rank, size, universe size, appnum, clique (the ranks of
 * this node), the key-value space (put, commit, get), barrier, abort.
 *
 * The job comes from the environment the launcher sets for every rank:
 *   DN2_PMI_URL     the job server: HOST:PORT, "http" scheme optional (required)
 *   DN2_PMI_JOB     the job id (checked by the server)   (required)
 *   DN2_PMI_RANK    this rank                            (required)
 *   DN2_PMI_TOKEN   this rank's token (the node's launcher script gets it
 *                   from the server for its ranks)       (required)
 *   DN2_PMI_SIZE    number of ranks                      (required)
 *   DN2_PMI_CLIQUE  the ranks on this node, "0,1"        (default: own rank)
 *   DN2_PMI_APPNUM  (default 0)
 *   DN2_PMI_DEBUG   1: trace every call on stderr
 *
 * Server protocol (scripts/pmi-server.py, the job server of cluster.sh);
 * every request also carries &token=T, the rank's token:
 *   POST /pmi/put?job=J&rank=R        body: "key value\n" lines (escaped),
 *        at most DN2_PMI_PUT_KEYS of them (a commit of more sends several)
 *   GET  /pmi/barrier?job=J&rank=R&size=S&epoch=E
 *        long poll; 200 + every key of the job ("key value\n" lines) once
 *        all S ranks reached epoch E; 202 = not yet, ask again; 409 = the
 *        job was aborted
 *   GET  /pmi/get?job=J&rank=R&key=K  200 + value, 404 no such key
 *   GET  /pmi/abort?job=J&rank=R&code=C&msg=M
 * A 503 (the server is busy) is retried like an unreachable server.  Keys
 * and values travel %-escaped (anything outside [A-Za-z0-9._~-]); their
 * limits (pmi-limits.h) are the server's too.
 * PMI semantics: a put is visible to the others after the putter's commit
 * and a barrier both ranks took part in; the barrier answer fills a local
 * cache so that the gets that follow cost no round trip.
 *
 * The second transport, for MPI jobs in lock-step virtual time
 * (mpirun.sh --virtual-time): with DN2_PMI_SOCK=PATH set, the same calls go
 * to the node's dn2-pmi-agent over that Unix socket, and the agents
 * exchange the keys over the boards (dn2-pmi-agent.c has the protocol).
 * DN2_PMI_RANK and DN2_PMI_SIZE are required, DN2_PMI_JOB names the KVS
 * (default "vt"); DN2_PMI_URL and DN2_PMI_TOKEN are not used.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "pmi-limits.h"

#define PMI_SUCCESS 0
#define PMI_FAIL -1
#define PMI_ERR_INIT 1
#define PMI_ERR_NOMEM 2
#define PMI_ERR_INVALID_ARG 3
#define PMI_ERR_INVALID_KEY 4
#define PMI_ERR_INVALID_KEY_LENGTH 5
#define PMI_ERR_INVALID_VAL 6
#define PMI_ERR_INVALID_VAL_LENGTH 7
#define PMI_ERR_INVALID_LENGTH 8

#define EXPORT __attribute__((visibility("default")))

enum {
    NAME_MAX_LEN = DN2_PMI_NAME_MAX,
    KEY_MAX_LEN = DN2_PMI_KEY_MAX,
    VAL_MAX_LEN = DN2_PMI_VAL_MAX,
};

struct kv {
    char *key, *val;
    struct kv *next;
};

static struct {
    int initialized;
    int rank, size, appnum;
    int *clique, nclique;
    char host[256];
    int port;
    char job[128];
    char token[DN2_PMI_TOKEN_LEN + 1];
    char kvsname[NAME_MAX_LEN];
    int epoch;
    int debug;
    struct kv *cache;     /* every key known here (own puts, barrier dumps) */
    struct kv *pending;   /* own puts not yet sent to the server */
    int sock;             /* the agent's socket (DN2_PMI_SOCK), else -1 */
    struct {
        char *p;
        size_t n, cap;
    } in;                 /* what came from the agent, not yet read */
} S = { .sock = -1 };

static void dbg(const char *fmt, ...)
{
    va_list ap;
    if (!S.debug)
        return;
    va_start(ap, fmt);
    fprintf(stderr, "pmi-dn2[%d]: ", S.rank);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

static void warn(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "pmi-dn2[%d]: ", S.rank);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

/* ------------------------------------------------------------- strings */
struct buf {
    char *p;
    size_t n, cap;
};

static int buf_add(struct buf *b, const void *d, size_t n)
{
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 1024;
        while (cap < b->n + n + 1)
            cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p)
            return -1;
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->n, d, n);
    b->n += n;
    b->p[b->n] = 0;
    return 0;
}

static int buf_str(struct buf *b, const char *s)
{
    return buf_add(b, s, strlen(s));
}

static int buf_esc(struct buf *b, const char *s)
{
    static const char hex[] = "0123456789ABCDEF";
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
            c == '.' || c == '_' || c == '~' || c == '-') {
            if (buf_add(b, s, 1))
                return -1;
        } else {
            char e[3] = { '%', hex[c >> 4], hex[c & 15] };
            if (buf_add(b, e, 3))
                return -1;
        }
    }
    return 0;
}

static int hexval(int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* %-decoding of [s, s+n) into a new string (malloc) */
static char *unesc(const char *s, size_t n)
{
    char *out = malloc(n + 1), *o = out;
    if (!out)
        return NULL;
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

/* ---------------------------------------------------------------- cache */
static struct kv *kv_find(struct kv *l, const char *key)
{
    for (; l; l = l->next)
        if (!strcmp(l->key, key))
            return l;
    return NULL;
}

static int kv_set(struct kv **l, const char *key, const char *val)
{
    struct kv *e = kv_find(*l, key);
    if (e) {
        char *v = strdup(val);
        if (!v)
            return -1;
        free(e->val);
        e->val = v;
        return 0;
    }
    e = calloc(1, sizeof(*e));
    if (!e || !(e->key = strdup(key)) || !(e->val = strdup(val))) {
        if (e)
            free(e->key);
        free(e);
        return -1;
    }
    e->next = *l;
    *l = e;
    return 0;
}

static void kv_free(struct kv **l)
{
    while (*l) {
        struct kv *e = *l;
        *l = e->next;
        free(e->key);
        free(e->val);
        free(e);
    }
}

/* "key value\n" lines (escaped) into the cache */
static int kv_parse_into(struct kv **l, const char *body, size_t n)
{
    const char *p = body, *end = body + n;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *le = nl ? nl : end;
        const char *sp = memchr(p, ' ', (size_t)(le - p));
        if (sp) {
            char *k = unesc(p, (size_t)(sp - p)), *v = unesc(sp + 1, (size_t)(le - sp - 1));
            int rc = (k && v) ? kv_set(l, k, v) : -1;
            free(k);
            free(v);
            if (rc)
                return -1;
        }
        p = nl ? nl + 1 : end;
    }
    return 0;
}

/* ----------------------------------------------------------------- HTTP */
/* One request; *status gets the HTTP status, *body the body (malloc'd, NUL
 * terminated).  Returns 0, or -1 when the server could not be reached. */
static int http_once(const char *method, const char *path, const char *data, size_t dlen,
                     int *status, char **body, size_t *blen, int timeout_s)
{
    struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)S.port) };
    struct buf req = { 0 }, resp = { 0 };
    int fd = -1, rc = -1;
    char tmp[8192];

    if (inet_pton(AF_INET, S.host, &sa.sin_addr) != 1) {
        struct addrinfo hints = { .ai_family = AF_INET, .ai_socktype = SOCK_STREAM }, *ai;
        if (getaddrinfo(S.host, NULL, &hints, &ai))
            return -1;
        sa.sin_addr = ((struct sockaddr_in *)ai->ai_addr)->sin_addr;
        freeaddrinfo(ai);
    }
    fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    struct timeval tv = { .tv_sec = timeout_s };
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)))
        goto out;
    snprintf(tmp, sizeof(tmp),
             "%s %s HTTP/1.0\r\nHost: %s:%d\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n",
             method, path, S.host, S.port, dlen);
    if (buf_str(&req, tmp) || (dlen && buf_add(&req, data, dlen)))
        goto out;
    for (size_t off = 0; off < req.n;) {
        ssize_t w = send(fd, req.p + off, req.n - off, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            goto out;
        off += (size_t)w;
    }
    for (;;) {
        ssize_t r = recv(fd, tmp, sizeof(tmp), 0);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            goto out;
        if (r == 0)
            break;
        if (buf_add(&resp, tmp, (size_t)r))
            goto out;
    }
    if (!resp.p || sscanf(resp.p, "HTTP/%*d.%*d %d", status) != 1)
        goto out;
    char *hdr_end = strstr(resp.p, "\r\n\r\n");
    if (!hdr_end)
        goto out;
    hdr_end += 4;
    *blen = resp.n - (size_t)(hdr_end - resp.p);
    *body = malloc(*blen + 1);
    if (!*body)
        goto out;
    memcpy(*body, hdr_end, *blen);
    (*body)[*blen] = 0;
    rc = 0;
out:
    if (fd >= 0)
        close(fd);
    free(req.p);
    free(resp.p);
    return rc;
}

/* A request, retried while the server cannot be reached (up to ~60 s). */
static int http(const char *method, const char *path, const char *data, size_t dlen,
                int *status, char **body, size_t *blen, int timeout_s)
{
    for (int attempt = 0; attempt < 60; attempt++) {
        *body = NULL;
        if (!http_once(method, path, data, dlen, status, body, blen, timeout_s)) {
            if (*status != 503)
                return 0;
            dbg("%s: the server is busy, retrying", method);
            free(*body);
            *body = NULL;
            sleep(1);
            continue;
        }
        dbg("%s: server not reachable (%s), retrying", method, strerror(errno));
        sleep(1);
    }
    warn("the job server %s:%d does not answer", S.host, S.port);
    return -1;
}

/* path: /pmi/NAME?job=J&rank=R&token=T + extra */
static int mkpath(struct buf *b, const char *name, const char *fmt, ...)
{
    char tmp[512];
    va_list ap;
    if (buf_str(b, "/pmi/") || buf_str(b, name) || buf_str(b, "?job=") || buf_esc(b, S.job))
        return -1;
    snprintf(tmp, sizeof(tmp), "&rank=%d&token=", S.rank);
    if (buf_str(b, tmp) || buf_esc(b, S.token))
        return -1;
    if (fmt) {
        va_start(ap, fmt);
        vsnprintf(tmp, sizeof(tmp), fmt, ap);
        va_end(ap);
        if (buf_str(b, tmp))
            return -1;
    }
    return 0;
}

/* ------------------------------------------- the agent (DN2_PMI_SOCK) */
static int sock_send(const char *p, size_t n)
{
    while (n) {
        ssize_t w = send(S.sock, p, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            warn("the PMI agent is gone (%s)", w < 0 ? strerror(errno) : "closed");
            return -1;
        }
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* The agent's next line (malloc'd, without the newline), NULL at its end. */
static char *sock_line(void)
{
    for (;;) {
        char *nl = S.in.n ? memchr(S.in.p, '\n', S.in.n) : NULL;
        if (nl) {
            size_t len = (size_t)(nl - S.in.p);
            char *l = malloc(len + 1);
            if (!l)
                return NULL;
            memcpy(l, S.in.p, len);
            l[len] = 0;
            memmove(S.in.p, nl + 1, S.in.n - len - 1);
            S.in.n -= len + 1;
            return l;
        }
        if (S.in.n + 8192 > S.in.cap) {
            size_t cap = S.in.cap ? S.in.cap * 2 : 16384;
            char *p = realloc(S.in.p, cap);
            if (!p)
                return NULL;
            S.in.p = p;
            S.in.cap = cap;
        }
        ssize_t r = recv(S.sock, S.in.p + S.in.n, S.in.cap - S.in.n, 0);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            warn("the PMI agent closed the connection");
            return NULL;
        }
        S.in.n += (size_t)r;
    }
}

/* The job was aborted (the agent says so, or it is gone): end this rank,
 * as a barrier answered 409 by the job server does. */
static void agent_aborted(const char *line)
{
    if (line && !strcmp(line, "aborted"))
        warn("the job was aborted");
    fflush(NULL);
    _exit(1);
}

/* A request that the agent answers "ok". */
static int sock_ok(const char *req)
{
    char *l;
    if (sock_send(req, strlen(req)))
        return -1;
    l = sock_line();
    if (!l || strcmp(l, "ok")) {
        if (!l || !strcmp(l, "aborted"))
            agent_aborted(l);
        warn("the PMI agent answered '%.60s'", l);
        free(l);
        return -1;
    }
    free(l);
    return 0;
}

static int sock_connect(const char *path)
{
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    char hello[64];

    if (strlen(path) >= sizeof(sa.sun_path)) {
        warn("PMI_Init: DN2_PMI_SOCK too long");
        return -1;
    }
    strcpy(sa.sun_path, path);
    /* The node's script starts the rank once the socket is there; still,
     * wait a little for an agent that is about to listen. */
    for (int attempt = 0; attempt < 300; attempt++) {
        S.sock = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (S.sock < 0)
            return -1;
        if (!connect(S.sock, (struct sockaddr *)&sa, sizeof(sa)))
            break;
        close(S.sock);
        S.sock = -1;
        usleep(100000);
    }
    if (S.sock < 0) {
        warn("PMI_Init: no PMI agent at %s", path);
        return -1;
    }
    snprintf(hello, sizeof(hello), "hello %d\n", S.rank);
    return sock_ok(hello);
}

static int sock_flush(void)
{
    struct buf b = { 0 };
    int rc;

    /* the puts in the order they were made (the list is newest first) */
    int n = 0;
    for (struct kv *e = S.pending; e; e = e->next)
        n++;
    struct kv **v = calloc((size_t)n + 1, sizeof(*v));
    if (!v)
        return PMI_ERR_NOMEM;
    n = 0;
    for (struct kv *e = S.pending; e; e = e->next)
        v[n++] = e;
    while (n--) {
        if (buf_str(&b, "put ") || buf_esc(&b, v[n]->key) || buf_str(&b, " ") ||
            buf_esc(&b, v[n]->val) || buf_str(&b, "\n")) {
            free(v);
            free(b.p);
            return PMI_ERR_NOMEM;
        }
    }
    free(v);
    if (b.n && sock_send(b.p, b.n)) {
        free(b.p);
        return PMI_FAIL;
    }
    free(b.p);
    rc = sock_ok("commit\n") ? PMI_FAIL : PMI_SUCCESS;
    if (rc == PMI_SUCCESS)
        kv_free(&S.pending);
    return rc;
}

/* Send the puts not yet sent, DN2_PMI_PUT_KEYS per request. */
static int flush_pending(void)
{
    struct buf path = { 0 };
    int rc = PMI_FAIL;

    if (!S.pending)
        return PMI_SUCCESS;
    if (S.sock >= 0)
        return sock_flush();
    if (mkpath(&path, "put", NULL))
        goto out;
    while (S.pending) {
        struct buf body = { 0 };
        struct kv *e = S.pending, *rest;
        int status = 0, n = 0, failed;
        char *resp = NULL;
        size_t rlen;

        for (; e && n < DN2_PMI_PUT_KEYS; e = e->next, n++)
            if (buf_esc(&body, e->key) || buf_str(&body, " ") || buf_esc(&body, e->val) ||
                buf_str(&body, "\n")) {
                free(body.p);
                goto out;
            }
        rest = e;
        failed = http("POST", path.p, body.p, body.n, &status, &resp, &rlen, 60);
        free(body.p);
        if (!failed && status != 200)
            warn("put refused by the job server (%d): %s", status, resp ? resp : "");
        free(resp);
        if (failed || status != 200)
            goto out;
        /* The first n entries are on the server: drop them. */
        for (e = S.pending; e != rest;) {
            struct kv *next = e->next;
            free(e->key);
            free(e->val);
            free(e);
            e = next;
        }
        S.pending = rest;
    }
    rc = PMI_SUCCESS;
out:
    free(path.p);
    return rc;
}

/* ---------------------------------------------------------------- PMI */
static int env_int(const char *name, int def, int *out)
{
    const char *v = getenv(name);
    char *end;
    if (!v || !*v) {
        if (def < -1)
            return -1;
        *out = def;
        return 0;
    }
    long l = strtol(v, &end, 10);
    if (*end || l < 0 || l > 1 << 24)
        return -1;
    *out = (int)l;
    return 0;
}

EXPORT int PMI_Init(int *spawned)
{
    const char *url, *job, *token, *cl, *p;
    if (spawned)
        *spawned = 0;
    if (S.initialized)
        return PMI_SUCCESS;
    S.debug = getenv("DN2_PMI_DEBUG") && atoi(getenv("DN2_PMI_DEBUG")) > 0;
    const char *sockp = getenv("DN2_PMI_SOCK");
    if (sockp && *sockp) {
        job = getenv("DN2_PMI_JOB");
        if (env_int("DN2_PMI_RANK", -2, &S.rank) || env_int("DN2_PMI_SIZE", -2, &S.size) ||
            env_int("DN2_PMI_APPNUM", 0, &S.appnum) || S.size < 1 || S.rank >= S.size) {
            warn("PMI_Init: DN2_PMI_RANK < DN2_PMI_SIZE must be set with DN2_PMI_SOCK "
                 "(ranks are started by scripts/mpirun.sh)");
            return PMI_ERR_INIT;
        }
        snprintf(S.job, sizeof(S.job), "%s", job && *job ? job : "vt");
        snprintf(S.kvsname, sizeof(S.kvsname), "dn2-%.50s", S.job);
        if (sock_connect(sockp))
            return PMI_ERR_INIT;
        goto clique;
    }
    url = getenv("DN2_PMI_URL");
    job = getenv("DN2_PMI_JOB");
    token = getenv("DN2_PMI_TOKEN");
    if (!url || !job || !token || !*token || strlen(token) > DN2_PMI_TOKEN_LEN || env_int("DN2_PMI_RANK", -2, &S.rank) || env_int("DN2_PMI_SIZE", -2, &S.size) ||
        env_int("DN2_PMI_APPNUM", 0, &S.appnum) || S.size < 1 || S.rank >= S.size) {
        warn("PMI_Init: DN2_PMI_URL, DN2_PMI_JOB, DN2_PMI_TOKEN, DN2_PMI_RANK < DN2_PMI_SIZE must be set "
             "(ranks are started by scripts/mpirun.sh)");
        return PMI_ERR_INIT;
    }
    /* HOST:PORT, after an optional scheme prefix and before an optional / */
    p = strncmp(url, "http://", 7) ? url : url + 7;
    const char *colon = strchr(p, ':');
    size_t hl = colon ? (size_t)(colon - p) : strcspn(p, "/");
    if (hl == 0 || hl >= sizeof(S.host)) {
        warn("PMI_Init: bad DN2_PMI_URL '%s'", url);
        return PMI_ERR_INIT;
    }
    memcpy(S.host, p, hl);
    S.host[hl] = 0;
    S.port = colon ? atoi(colon + 1) : 80;
    snprintf(S.job, sizeof(S.job), "%s", job);
    snprintf(S.token, sizeof(S.token), "%s", token);
    snprintf(S.kvsname, sizeof(S.kvsname), "dn2-%.50s", job);

clique:
    /* The clique: the ranks on this node. */
    cl = getenv("DN2_PMI_CLIQUE");
    S.nclique = 0;
    S.clique = calloc((size_t)S.size, sizeof(int));
    if (!S.clique)
        return PMI_ERR_NOMEM;
    if (cl && *cl) {
        const char *q = cl;
        while (*q && S.nclique < S.size) {
            char *end;
            long r = strtol(q, &end, 10);
            if (end == q || r < 0 || r >= S.size) {
                warn("PMI_Init: bad DN2_PMI_CLIQUE '%s'", cl);
                return PMI_ERR_INIT;
            }
            S.clique[S.nclique++] = (int)r;
            q = *end == ',' ? end + 1 : end;
            if (*end && *end != ',')
                break;
        }
    }
    if (S.nclique == 0)
        S.clique[S.nclique++] = S.rank;
    S.initialized = 1;
    if (S.sock >= 0)
        dbg("init: rank %d of %d, agent %s, %d on this node", S.rank, S.size, sockp, S.nclique);
    else
        dbg("init: rank %d of %d, server %s:%d, job %s, %d on this node", S.rank, S.size, S.host,
            S.port, S.job, S.nclique);
    return PMI_SUCCESS;
}

/* Not PMI-1 (hidden in libpmi-dn2.so): for dn2-pmix-server, which links
 * this file in and asks at its start whether the job server takes its
 * requests, so that a server that cannot reach it fails there, with the
 * reason, rather than at the ranks' first fence.  0: the job server
 * answered this rank's /pmi/status with 200 (or the transport is the
 * agent's socket); -1 after a message (unreachable for ~60 s, a refused
 * token, an aborted job). */
int dn2_pmi_check(void)
{
    struct buf path = { 0 };
    char *resp = NULL;
    size_t rlen;
    int status = 0, rc = -1;

    if (!S.initialized)
        return -1;
    if (S.sock >= 0)
        return 0;
    if (mkpath(&path, "status", NULL))
        return -1;
    if (http("GET", path.p, NULL, 0, &status, &resp, &rlen, 10) == 0) {
        if (status == 200)
            rc = 0;
        else
            warn("the job server %s:%d refused job %s rank %d (HTTP %d): %.200s", S.host, S.port,
                 S.job, S.rank, status, resp ? resp : "");
    }
    free(path.p);
    free(resp);
    return rc;
}

EXPORT int PMI_Initialized(int *initialized)
{
    if (!initialized)
        return PMI_ERR_INVALID_ARG;
    *initialized = S.initialized;
    return PMI_SUCCESS;
}

EXPORT int PMI_Finalize(void)
{
    if (!S.initialized)
        return PMI_SUCCESS;
    dbg("finalize");
    kv_free(&S.cache);
    kv_free(&S.pending);
    free(S.clique);
    S.clique = NULL;
    if (S.sock >= 0) {
        close(S.sock);
        S.sock = -1;
    }
    free(S.in.p);
    S.in.p = NULL;
    S.in.n = S.in.cap = 0;
    S.initialized = 0;
    return PMI_SUCCESS;
}

#define NEED_INIT()                   \
    do {                              \
        if (!S.initialized)           \
            return PMI_ERR_INIT;      \
    } while (0)
#define OUT_INT(ptr, v)                       \
    do {                                      \
        NEED_INIT();                          \
        if (!(ptr))                           \
            return PMI_ERR_INVALID_ARG;       \
        *(ptr) = (v);                         \
        return PMI_SUCCESS;                   \
    } while (0)

EXPORT int PMI_Get_size(int *size) { OUT_INT(size, S.size); }
EXPORT int PMI_Get_rank(int *rank) { OUT_INT(rank, S.rank); }
EXPORT int PMI_Get_universe_size(int *size) { OUT_INT(size, S.size); }
EXPORT int PMI_Get_appnum(int *appnum) { OUT_INT(appnum, S.appnum); }
EXPORT int PMI_Get_clique_size(int *size) { OUT_INT(size, S.nclique); }
EXPORT int PMI_KVS_Get_name_length_max(int *length) { OUT_INT(length, NAME_MAX_LEN); }
EXPORT int PMI_KVS_Get_key_length_max(int *length) { OUT_INT(length, KEY_MAX_LEN); }
EXPORT int PMI_KVS_Get_value_length_max(int *length) { OUT_INT(length, VAL_MAX_LEN); }
EXPORT int PMI_Get_id_length_max(int *length) { OUT_INT(length, NAME_MAX_LEN); }

EXPORT int PMI_Get_clique_ranks(int *ranks, int length)
{
    NEED_INIT();
    if (!ranks || length < S.nclique)
        return PMI_ERR_INVALID_LENGTH;
    memcpy(ranks, S.clique, (size_t)S.nclique * sizeof(int));
    return PMI_SUCCESS;
}

EXPORT int PMI_KVS_Get_my_name(char *kvsname, int length)
{
    NEED_INIT();
    if (!kvsname || length <= (int)strlen(S.kvsname))
        return PMI_ERR_INVALID_LENGTH;
    strcpy(kvsname, S.kvsname);
    return PMI_SUCCESS;
}

EXPORT int PMI_Get_kvs_domain_id(char *id, int length)
{
    return PMI_KVS_Get_my_name(id, length);
}

EXPORT int PMI_Get_id(char *id, int length)
{
    return PMI_KVS_Get_my_name(id, length);
}

EXPORT int PMI_KVS_Put(const char *kvsname, const char *key, const char *value)
{
    NEED_INIT();
    if (!kvsname || strcmp(kvsname, S.kvsname))
        return PMI_ERR_INVALID_ARG;
    if (!key || !*key)
        return PMI_ERR_INVALID_KEY;
    if (strlen(key) >= KEY_MAX_LEN)
        return PMI_ERR_INVALID_KEY_LENGTH;
    if (!value)
        return PMI_ERR_INVALID_VAL;
    if (strlen(value) >= VAL_MAX_LEN)
        return PMI_ERR_INVALID_VAL_LENGTH;
    dbg("put %s (%zu bytes)", key, strlen(value));
    if (kv_set(&S.pending, key, value) || kv_set(&S.cache, key, value))
        return PMI_ERR_NOMEM;
    return PMI_SUCCESS;
}

EXPORT int PMI_KVS_Commit(const char *kvsname)
{
    NEED_INIT();
    if (!kvsname || strcmp(kvsname, S.kvsname))
        return PMI_ERR_INVALID_ARG;
    return flush_pending();
}

EXPORT int PMI_Barrier(void)
{
    struct buf path = { 0 };
    char *resp = NULL;
    size_t rlen;
    int status = 0, rc = PMI_FAIL;

    NEED_INIT();
    /* What was put before the barrier is visible after it. */
    if (flush_pending() != PMI_SUCCESS)
        return PMI_FAIL;
    S.epoch++;
    if (S.sock >= 0) {
        dbg("barrier %d", S.epoch);
        if (sock_send("barrier\n", 8))
            agent_aborted(NULL);
        for (;;) {
            char *l = sock_line();
            if (!l || !strcmp(l, "aborted"))
                agent_aborted(l);
            if (!strcmp(l, "end")) {
                free(l);
                break;
            }
            if (strncmp(l, "kv ", 3) || kv_parse_into(&S.cache, l + 3, strlen(l + 3))) {
                warn("barrier %d: the PMI agent answered '%.60s'", S.epoch, l);
                free(l);
                return PMI_FAIL;
            }
            free(l);
        }
        dbg("barrier %d passed", S.epoch);
        return PMI_SUCCESS;
    }
    if (mkpath(&path, "barrier", "&size=%d&epoch=%d", S.size, S.epoch))
        return PMI_ERR_NOMEM;
    dbg("barrier %d", S.epoch);
    for (;;) {
        free(resp);
        resp = NULL;
        if (http("GET", path.p, NULL, 0, &status, &resp, &rlen, 60))
            goto out;
        if (status == 202)          /* long poll ended: ask again */
            continue;
        break;
    }
    if (status == 200) {
        if (kv_parse_into(&S.cache, resp, rlen))
            goto out;
        rc = PMI_SUCCESS;
        dbg("barrier %d passed", S.epoch);
    } else {
        warn("barrier %d failed (%d): %s", S.epoch, status, resp ? resp : "");
        if (status == 409) {
            /* The job was aborted by another rank: end this one too. */
            _exit(1);
        }
    }
out:
    free(path.p);
    free(resp);
    return rc;
}

EXPORT int PMI_KVS_Get(const char *kvsname, const char *key, char *value, int length)
{
    struct buf path = { 0 };
    char *resp = NULL;
    size_t rlen;
    int status = 0, rc = PMI_FAIL;
    struct kv *e;

    NEED_INIT();
    if (!kvsname || strcmp(kvsname, S.kvsname))
        return PMI_ERR_INVALID_ARG;
    if (!key || !value || length <= 0)
        return PMI_ERR_INVALID_ARG;
    e = kv_find(S.cache, key);
    if (!e && S.sock >= 0) {
        char *l;
        if (buf_str(&path, "get ") || buf_esc(&path, key) || buf_str(&path, "\n") ||
            sock_send(path.p, path.n))
            goto out;
        l = sock_line();
        if (!l || !strcmp(l, "aborted"))
            agent_aborted(l);
        if (!strcmp(l, "none")) {
            free(l);
            dbg("get %s: no such key", key);
            rc = PMI_ERR_INVALID_KEY;
            goto out;
        }
        if (strncmp(l, "val ", 4)) {
            warn("get %s: the PMI agent answered '%.60s'", key, l);
            free(l);
            goto out;
        }
        char *v = unesc(l + 4, strlen(l + 4));
        free(l);
        if (!v || kv_set(&S.cache, key, v)) {
            free(v);
            goto out;
        }
        free(v);
        e = kv_find(S.cache, key);
    } else if (!e) {
        if (mkpath(&path, "get", "&key=") || buf_esc(&path, key))
            goto out;
        if (http("GET", path.p, NULL, 0, &status, &resp, &rlen, 60))
            goto out;
        if (status == 404) {
            dbg("get %s: no such key", key);
            rc = PMI_ERR_INVALID_KEY;
            goto out;
        }
        if (status != 200) {
            warn("get %s: job server answered %d", key, status);
            goto out;
        }
        if (kv_set(&S.cache, key, resp))
            goto out;
        e = kv_find(S.cache, key);
    }
    if ((int)strlen(e->val) >= length) {
        rc = PMI_ERR_INVALID_VAL_LENGTH;
        goto out;
    }
    strcpy(value, e->val);
    dbg("get %s (%zu bytes)", key, strlen(e->val));
    rc = PMI_SUCCESS;
out:
    free(path.p);
    free(resp);
    return rc;
}

EXPORT int PMI_Abort(int exit_code, const char *error_msg)
{
    struct buf path = { 0 };
    char *resp = NULL;
    size_t rlen;
    int status;

    fprintf(stderr, "pmi-dn2[%d]: abort (exit code %d): %s\n", S.rank, exit_code,
            error_msg ? error_msg : "");
    fflush(NULL);
    if (S.initialized && S.sock >= 0) {
        char head[64];
        snprintf(head, sizeof(head), "abort %d %d ", S.rank, exit_code);
        if (!buf_str(&path, head) && !buf_esc(&path, error_msg ? error_msg : "") &&
            !buf_str(&path, "\n") && !sock_send(path.p, path.n)) {
            /* until the agent has told the others (it closes then) */
            char c;
            struct timeval tv = { .tv_sec = 30 };
            setsockopt(S.sock, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
            while (recv(S.sock, &c, 1, 0) > 0) {
            }
        }
    } else if (S.initialized && !mkpath(&path, "abort", "&code=%d&msg=", exit_code) &&
        !buf_esc(&path, error_msg ? error_msg : "")) {
        if (!http_once("GET", path.p, NULL, 0, &status, &resp, &rlen, 10))
            free(resp);
    }
    free(path.p);
    _exit(exit_code ? exit_code : 1);
}
