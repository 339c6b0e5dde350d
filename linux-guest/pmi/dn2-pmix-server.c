/*
 * dn2-pmix-server: the node's PMIx server for MPI ranks started by the
 * DIMMnet-2 cluster launcher (scripts/mpirun.sh --pmi pmix), built on
 * OpenPMIx's server library (Debian's libpmix2; Open MPI 4.1 and 5 speak
 * PMIx to it).  See docs/mpi.md.
 *
 *   dn2-pmix-server -n NODE -N NODES -l PPN -j NSPACE -d DIR [-A ABORTCMD]
 *
 * One per node and job, run as the ranks' user.  It registers the job's
 * namespace (job and universe size, node and process maps, local peers,
 * every rank's local and node rank, app number, host name), registers the
 * node's PPN ranks (NODE * PPN ...) and writes each rank's environment from
 * PMIx_server_setup_fork into DIR/rank-R.env (NAME=VALUE lines), then
 * creates DIR/ready; the launcher starts the ranks with that environment.
 * It ends on SIGTERM, or once every local rank has finalized.
 *
 * The host callbacks:
 *   fence_nb      the node's part (every local rank's contribution, as the
 *                 server library packed it) goes to the other nodes through
 *                 PMI-1 (pmi-dn2.c, compiled in): put as hex chunks under
 *                 "f<epoch>.<node>.<i>", commit, barrier, and every other
 *                 node's chunks read back; the concatenation of all nodes'
 *                 parts, in node order, is the fence's answer.  The PMI-1
 *                 identity is the node's: DN2_PMI_RANK = NODE and
 *                 DN2_PMI_SIZE = NODES of a job of its own (DN2_PMI_JOB,
 *                 DN2_PMI_URL, DN2_PMI_TOKEN in the environment), so that it
 *                 travels over what PMI-1 travels over (the job server).
 *   abort         runs ABORTCMD RANK STATUS MSG (MSG %-escaped) and waits
 *                 for it: the launcher's script tells the job server, as
 *                 rank RANK, so that the job ends as with PMI_Abort.
 *   direct_modex  not supported (PMIX_ERR_NOT_SUPPORTED): every fence
 *                 carries the data (Open MPI's default, collect-all).
 *   client_connected, client_finalized: counted.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <pmix.h>
#include <pmix_server.h>

#include "pmi-limits.h"

/* pmi-dn2.c (linked in): the PMI-1 calls this server makes */
int PMI_Init(int *spawned);
int PMI_KVS_Get_my_name(char kvsname[], int length);
int PMI_KVS_Put(const char kvsname[], const char key[], const char value[]);
int PMI_KVS_Commit(const char kvsname[]);
int PMI_KVS_Get(const char kvsname[], const char key[], char value[], int length);
int PMI_Barrier(void);
int dn2_pmi_check(void);

/* Bytes of the fence data in one PMI value (hex: two characters each). */
#define CHUNK ((DN2_PMI_VAL_MAX - 1) / 2)

static struct {
    int node, nodes, ppn, size;
    char nspace[PMIX_MAX_NSLEN + 1];
    const char *dir, *abort_cmd;
    char kvs[DN2_PMI_NAME_MAX];
    int epoch;
    int finalized;
    pthread_mutex_t lock;
    pthread_cond_t cond;
} G = { .lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER };

static volatile sig_atomic_t stop;

static void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "dn2-pmix-server: node %d: ", G.node);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(1);
}

static void warn(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "dn2-pmix-server: node %d: ", G.node);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

/* ------------------------------------------------------------ callbacks */

static pmix_status_t client_connected(const pmix_proc_t *proc, void *obj,
                                      pmix_op_cbfunc_t cbfunc, void *cbdata)
{
    (void)proc; (void)obj;
    if (cbfunc)
        cbfunc(PMIX_SUCCESS, cbdata);
    return PMIX_SUCCESS;
}

static pmix_status_t client_finalized(const pmix_proc_t *proc, void *obj,
                                      pmix_op_cbfunc_t cbfunc, void *cbdata)
{
    (void)proc; (void)obj;
    pthread_mutex_lock(&G.lock);
    G.finalized++;
    pthread_cond_broadcast(&G.cond);
    pthread_mutex_unlock(&G.lock);
    if (cbfunc)
        cbfunc(PMIX_SUCCESS, cbdata);
    return PMIX_SUCCESS;
}

static pmix_status_t do_abort(const pmix_proc_t *proc, void *obj, int status,
                              const char msg[], pmix_proc_t procs[], size_t nprocs,
                              pmix_op_cbfunc_t cbfunc, void *cbdata)
{
    char code[16], rank[16], *esc, *p;
    const char *m = msg ? msg : "";
    size_t i;
    pid_t pid;
    (void)obj; (void)procs; (void)nprocs;

    warn("rank %u called PMIx_Abort (status %d): %s", proc->rank, status, m);
    if (G.abort_cmd) {
        /* %-escaped: the command puts it into a URL as it is */
        esc = malloc(3 * strlen(m) + 1);
        if (!esc)
            return PMIX_ERR_NOMEM;
        for (p = esc, i = 0; m[i] && i < 512; i++) {
            unsigned char c = (unsigned char)m[i];
            if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
                (c >= '0' && c <= '9') || strchr("._~-", c))
                *p++ = (char)c;
            else
                p += sprintf(p, "%%%02X", c);
        }
        *p = 0;
        snprintf(code, sizeof code, "%d", status);
        snprintf(rank, sizeof rank, "%u", proc->rank);
        pid = fork();
        if (pid == 0) {
            execl("/bin/sh", "sh", G.abort_cmd, rank, code, esc, (char *)NULL);
            _exit(127);
        }
        if (pid > 0)
            while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
                ;
        free(esc);
    }
    if (cbfunc)
        cbfunc(PMIX_SUCCESS, cbdata);
    return PMIX_SUCCESS;
}

struct fence {
    char *data;
    size_t ndata;
    pmix_modex_cbfunc_t cbfunc;
    void *cbdata;
};

static void release(void *p)
{
    free(p);
}

static int hexval(char c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* The exchange through PMI-1 (blocking: a thread of its own). */
static void *fence_thread(void *arg)
{
    struct fence *f = arg;
    char key[DN2_PMI_KEY_MAX], val[DN2_PMI_VAL_MAX];
    char *all = NULL;
    size_t nall = 0, off, n, i;
    int e = ++G.epoch, node, nchunk, c, bad = 0;

    nchunk = (int)((f->ndata + CHUNK - 1) / CHUNK);
    snprintf(key, sizeof key, "f%d.%d.n", e, G.node);
    snprintf(val, sizeof val, "%d %zu", nchunk, f->ndata);
    bad |= PMI_KVS_Put(G.kvs, key, val) != 0;
    for (c = 0, off = 0; c < nchunk; c++, off += n) {
        n = f->ndata - off < CHUNK ? f->ndata - off : CHUNK;
        for (i = 0; i < n; i++)
            sprintf(val + 2 * i, "%02x", (unsigned char)f->data[off + i]);
        val[2 * n] = 0;
        snprintf(key, sizeof key, "f%d.%d.%d", e, G.node, c);
        bad |= PMI_KVS_Put(G.kvs, key, val) != 0;
    }
    bad = bad || PMI_KVS_Commit(G.kvs) != 0 || PMI_Barrier() != 0;
    for (node = 0; !bad && node < G.nodes; node++) {
        size_t len;
        char *na;
        if (node == G.node) {
            na = realloc(all, nall + f->ndata + 1);
            if (!na) { bad = 1; break; }
            all = na;
            memcpy(all + nall, f->data, f->ndata);
            nall += f->ndata;
            continue;
        }
        snprintf(key, sizeof key, "f%d.%d.n", e, node);
        if (PMI_KVS_Get(G.kvs, key, val, sizeof val) != 0 ||
            sscanf(val, "%d %zu", &nchunk, &len) != 2) {
            warn("fence %d: no data from node %d", e, node);
            bad = 1;
            break;
        }
        na = realloc(all, nall + len + 1);
        if (!na) { bad = 1; break; }
        all = na;
        for (c = 0, off = 0; !bad && c < nchunk; c++) {
            snprintf(key, sizeof key, "f%d.%d.%d", e, node, c);
            if (PMI_KVS_Get(G.kvs, key, val, sizeof val) != 0) {
                bad = 1;
                break;
            }
            for (i = 0; val[2 * i] && val[2 * i + 1] && off < len; i++, off++) {
                int hi = hexval(val[2 * i]), lo = hexval(val[2 * i + 1]);
                if (hi < 0 || lo < 0) { bad = 1; break; }
                all[nall + off] = (char)(hi << 4 | lo);
            }
        }
        if (off != len)
            bad = 1;
        nall += len;
    }
    if (bad) {
        warn("fence %d failed (the job was aborted, or the job server is gone)", e);
        free(all);
        f->cbfunc(PMIX_ERROR, NULL, 0, f->cbdata, NULL, NULL);
    } else {
        f->cbfunc(PMIX_SUCCESS, all, nall, f->cbdata, release, all);
    }
    free(f->data);
    free(f);
    return NULL;
}

static pmix_status_t fence_nb(const pmix_proc_t procs[], size_t nprocs,
                              const pmix_info_t info[], size_t ninfo,
                              char *data, size_t ndata,
                              pmix_modex_cbfunc_t cbfunc, void *cbdata)
{
    struct fence *f;
    pthread_t t;
    (void)procs; (void)nprocs; (void)info; (void)ninfo;

    f = calloc(1, sizeof *f);
    if (!f || !(f->data = malloc(ndata + 1))) {
        free(f);
        return PMIX_ERR_NOMEM;
    }
    memcpy(f->data, data, ndata);
    f->ndata = ndata;
    f->cbfunc = cbfunc;
    f->cbdata = cbdata;
    if (pthread_create(&t, NULL, fence_thread, f) != 0) {
        free(f->data);
        free(f);
        return PMIX_ERROR;
    }
    pthread_detach(t);
    return PMIX_SUCCESS;
}

static pmix_status_t direct_modex(const pmix_proc_t *proc, const pmix_info_t info[],
                                  size_t ninfo, pmix_modex_cbfunc_t cbfunc, void *cbdata)
{
    (void)info; (void)ninfo; (void)cbfunc; (void)cbdata;
    warn("direct modex for rank %u: not supported (fences carry the data)", proc->rank);
    return PMIX_ERR_NOT_SUPPORTED;
}

static pmix_server_module_t module = {
    .client_connected = client_connected,
    .client_finalized = client_finalized,
    .abort = do_abort,
    .fence_nb = fence_nb,
    .direct_modex = direct_modex,
};

/* ---------------------------------------------------------- namespace */

static void on_signal(int sig)
{
    (void)sig;
    stop = 1;
}

static char *ranks_of(int node, char sep)
{
    char *s = malloc((size_t)G.ppn * 12 + 1), *p = s;
    int l;
    if (!s)
        die("out of memory");
    *p = 0;
    for (l = 0; l < G.ppn; l++)
        p += sprintf(p, "%s%d", l ? (char[]){ sep, 0 } : "", node * G.ppn + l);
    return s;
}

static void register_nspace(void)
{
    pmix_info_t *info, *pi;
    pmix_data_array_t *da;
    char *hosts, *procs, *regex, *ppn, *peers, host[32];
    size_t n = 0, ninfo = 14 + (size_t)G.size, len;
    uint32_t u32;
    pmix_rank_t r;
    uint16_t u16;
    pmix_status_t rc;
    int i;

    len = (size_t)G.nodes * 16 + 1;
    hosts = malloc(len);
    procs = malloc((size_t)G.size * 12 + (size_t)G.nodes + 1);
    if (!hosts || !procs)
        die("out of memory");
    hosts[0] = procs[0] = 0;
    for (i = 0; i < G.nodes; i++) {
        char *rk = ranks_of(i, ',');
        sprintf(hosts + strlen(hosts), "%snode%d", i ? "," : "", i);
        sprintf(procs + strlen(procs), "%s%s", i ? ";" : "", rk);
        free(rk);
    }
    if (PMIx_generate_regex(hosts, &regex) != PMIX_SUCCESS ||
        PMIx_generate_ppn(procs, &ppn) != PMIX_SUCCESS)
        die("cannot make the node and process maps");
    peers = ranks_of(G.node, ',');
    snprintf(host, sizeof host, "node%d", G.node);

    PMIX_INFO_CREATE(info, ninfo);
    u32 = (uint32_t)G.size;
    PMIX_INFO_LOAD(&info[n], PMIX_JOBID, G.nspace, PMIX_STRING); n++;
    PMIX_INFO_LOAD(&info[n], PMIX_UNIV_SIZE, &u32, PMIX_UINT32); n++;
    PMIX_INFO_LOAD(&info[n], PMIX_JOB_SIZE, &u32, PMIX_UINT32); n++;
    PMIX_INFO_LOAD(&info[n], PMIX_MAX_PROCS, &u32, PMIX_UINT32); n++;
    u32 = (uint32_t)G.nodes;
    PMIX_INFO_LOAD(&info[n], PMIX_NUM_NODES, &u32, PMIX_UINT32); n++;
    PMIX_INFO_LOAD(&info[n], PMIX_NODE_MAP, regex, PMIX_REGEX); n++;
    PMIX_INFO_LOAD(&info[n], PMIX_PROC_MAP, ppn, PMIX_REGEX); n++;
    u32 = (uint32_t)G.ppn;
    PMIX_INFO_LOAD(&info[n], PMIX_LOCAL_SIZE, &u32, PMIX_UINT32); n++;
    PMIX_INFO_LOAD(&info[n], PMIX_NODE_SIZE, &u32, PMIX_UINT32); n++;
    PMIX_INFO_LOAD(&info[n], PMIX_LOCAL_PEERS, peers, PMIX_STRING); n++;
    r = (pmix_rank_t)(G.node * G.ppn);
    PMIX_INFO_LOAD(&info[n], PMIX_LOCALLDR, &r, PMIX_PROC_RANK); n++;
    u32 = 0;
    PMIX_INFO_LOAD(&info[n], PMIX_APPNUM, &u32, PMIX_UINT32); n++;
    PMIX_INFO_LOAD(&info[n], PMIX_HOSTNAME, host, PMIX_STRING); n++;
    u32 = (uint32_t)G.node;
    PMIX_INFO_LOAD(&info[n], PMIX_NODEID, &u32, PMIX_UINT32); n++;
    /* every rank's own: rank, local and node rank, app, host, node */
    for (i = 0; i < G.size; i++) {
        int nd = i / G.ppn;
        char h[32];
        snprintf(h, sizeof h, "node%d", nd);
        PMIX_LOAD_KEY(info[n].key, PMIX_PROC_DATA);
        info[n].value.type = PMIX_DATA_ARRAY;
        PMIX_DATA_ARRAY_CREATE(da, 6, PMIX_INFO);
        info[n].value.data.darray = da;
        pi = da->array;
        r = (pmix_rank_t)i;
        PMIX_INFO_LOAD(&pi[0], PMIX_RANK, &r, PMIX_PROC_RANK);
        u16 = (uint16_t)(i % G.ppn);
        PMIX_INFO_LOAD(&pi[1], PMIX_LOCAL_RANK, &u16, PMIX_UINT16);
        PMIX_INFO_LOAD(&pi[2], PMIX_NODE_RANK, &u16, PMIX_UINT16);
        u32 = 0;
        PMIX_INFO_LOAD(&pi[3], PMIX_APPNUM, &u32, PMIX_UINT32);
        PMIX_INFO_LOAD(&pi[4], PMIX_HOSTNAME, h, PMIX_STRING);
        u32 = (uint32_t)nd;
        PMIX_INFO_LOAD(&pi[5], PMIX_NODEID, &u32, PMIX_UINT32);
        n++;
    }
    rc = PMIx_server_register_nspace(G.nspace, G.ppn, info, n, NULL, NULL);
    if (rc != PMIX_SUCCESS && rc != PMIX_OPERATION_SUCCEEDED)
        die("PMIx_server_register_nspace: %s", PMIx_Error_string(rc));
    PMIX_INFO_FREE(info, ninfo);
    free(hosts); free(procs); free(regex); free(ppn); free(peers);
}

static void setup_rank(int rank)
{
    pmix_proc_t proc;
    char **env = NULL, path[4096], tmp[4200];
    pmix_status_t rc;
    FILE *f;
    int i;

    PMIX_LOAD_PROCID(&proc, G.nspace, (pmix_rank_t)rank);
    rc = PMIx_server_register_client(&proc, getuid(), getgid(), NULL, NULL, NULL);
    if (rc != PMIX_SUCCESS && rc != PMIX_OPERATION_SUCCEEDED)
        die("PMIx_server_register_client %d: %s", rank, PMIx_Error_string(rc));
    rc = PMIx_server_setup_fork(&proc, &env);
    if (rc != PMIX_SUCCESS)
        die("PMIx_server_setup_fork %d: %s", rank, PMIx_Error_string(rc));
    snprintf(path, sizeof path, "%s/rank-%d.env", G.dir, rank);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    if (!(f = fopen(tmp, "w")))
        die("%s: %s", tmp, strerror(errno));
    for (i = 0; env && env[i]; i++) {
        if (!strchr(env[i], '\n'))
            fprintf(f, "%s\n", env[i]);
        free(env[i]);
    }
    free(env);
    if (fclose(f) != 0 || rename(tmp, path) != 0)
        die("%s: %s", path, strerror(errno));
}

static int uint_arg(const char *s, const char *what)
{
    char *end;
    long v = strtol(s, &end, 10);
    if (!*s || *end || v < 0 || v > DN2_PMI_RANKS)
        die("%s: not a number: %s", what, s);
    return (int)v;
}

static void usage(FILE *f)
{
    fputs("usage: dn2-pmix-server -n NODE -N NODES -l PPN -j NSPACE -d DIR [-A ABORTCMD]\n"
          "The node's PMIx server for an MPI job (docs/mpi.md).\n", f);
}

int main(int argc, char **argv)
{
    pmix_info_t info[2];
    pmix_status_t rc;
    char path[4096];
    int opt, l, spawned;
    const char *ns = NULL;
    struct sigaction sa = { .sa_handler = on_signal };

    G.node = G.nodes = G.ppn = -1;
    while ((opt = getopt(argc, argv, "n:N:l:j:d:A:h")) != -1) {
        switch (opt) {
        case 'n': G.node = uint_arg(optarg, "-n"); break;
        case 'N': G.nodes = uint_arg(optarg, "-N"); break;
        case 'l': G.ppn = uint_arg(optarg, "-l"); break;
        case 'j': ns = optarg; break;
        case 'd': G.dir = optarg; break;
        case 'A': G.abort_cmd = optarg; break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (optind != argc || G.node < 0 || G.nodes < 1 || G.ppn < 1 || !ns || !G.dir ||
        G.node >= G.nodes || strlen(ns) > PMIX_MAX_NSLEN) {
        usage(stderr);
        return 2;
    }
    snprintf(G.nspace, sizeof G.nspace, "%s", ns);
    G.size = G.nodes * G.ppn;
    if (G.size > DN2_PMI_RANKS)
        die("%d ranks: at most %d", G.size, DN2_PMI_RANKS);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    if (mkdir(G.dir, 0700) != 0 && errno != EEXIST)
        die("%s: %s", G.dir, strerror(errno));

    /* PMI-1 to the other nodes, as the node (DN2_PMI_* from the launcher) */
    if (PMI_Init(&spawned) != 0 || PMI_KVS_Get_my_name(G.kvs, sizeof G.kvs) != 0)
        die("PMI_Init failed (DN2_PMI_URL, DN2_PMI_JOB, DN2_PMI_RANK, DN2_PMI_SIZE, DN2_PMI_TOKEN)");
    /* the fences' path works now, or the server ends before the ranks start */
    if (dn2_pmi_check() != 0)
        die("cannot reach the job server for the fences (DN2_PMI_URL=%s): no rank started",
            getenv("DN2_PMI_URL") ? getenv("DN2_PMI_URL") : "");

    PMIX_INFO_LOAD(&info[0], PMIX_SERVER_TMPDIR, G.dir, PMIX_STRING);
    PMIX_INFO_LOAD(&info[1], PMIX_SYSTEM_TMPDIR, G.dir, PMIX_STRING);
    rc = PMIx_server_init(&module, info, 2);
    if (rc != PMIX_SUCCESS)
        die("PMIx_server_init: %s", PMIx_Error_string(rc));
    register_nspace();
    for (l = 0; l < G.ppn; l++)
        setup_rank(G.node * G.ppn + l);
    snprintf(path, sizeof path, "%s/ready", G.dir);
    {
        FILE *f = fopen(path, "w");
        if (!f || fclose(f) != 0)
            die("%s: %s", path, strerror(errno));
    }

    pthread_mutex_lock(&G.lock);
    while (!stop && G.finalized < G.ppn) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_sec += 1;    /* (a signal sets stop: looked at each second) */
        pthread_cond_timedwait(&G.cond, &G.lock, &ts);
    }
    pthread_mutex_unlock(&G.lock);
    /* (the ranks' last fence is answered before they finalize) */
    PMIx_server_finalize();
    return 0;
}
