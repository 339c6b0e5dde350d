/* SPDX-License-Identifier: MIT */
/*
 * ofi-test: the libfabric provider "dimmnet2" through libfabric itself, on
 * two nodes of a cluster (scripts/cluster.sh, after insmod + dn2-up, with
 * FI_PROVIDER_PATH naming the provider's directory).  Both ranks run it;
 * rank 0 prints TAP (tests/tap/dn2-tap.h).  The peer's address comes from
 * the launcher's rank table ($DN2_RANKS: "rank lid wid"), so no other
 * network is needed.
 *
 *   1. fi_getinfo: the DGRAM core, the layered "dimmnet2;ofi_rxd" RDM form,
 *      and hints the provider cannot honour refused with -FI_ENODATA
 *   2. objects: fabric, domain, AV, CQ, EP; fi_getname; bad attributes
 *   3. AV: good and bad addresses (FI_SYNC_ERR), a destination not in it
 *   4. DGRAM send/recv of 0 B .. max_msg_size, data checked both ways;
 *      too large refused (-FI_EMSGSIZE); many messages in flight;
 *      truncation reported in the CQ (FI_ETRUNC)
 *   5. a process killed with its endpoint open leaves the WID usable
 *   6. two processes per board (WID 0 and WID 1) at once
 *   7. RDM + FI_TAGGED through ofi_rxd layered over dimmnet2
 *   8. the native RDM endpoint (FI_TAGGED + FI_MSG, no rxd): the hints
 *      Open MPI's ofi MTL gives, bad ones refused; tagged ping-pong 0 B ..
 *      4 MiB; unexpected messages matched out of order by tag; FI_PEEK,
 *      FI_PEEK | FI_CLAIM then FI_CLAIM; directed and FI_ADDR_UNSPEC
 *      receives; FI_REMOTE_CQ_DATA; FI_SOURCE; FI_ETRUNC; order of 200
 *      messages; errors for oversize and unknown addresses; every size
 *      class 0 B .. 5 MiB; the receiver killed mid-message and restarted;
 *      all of it once per bulk path (FI_DIMMNET2_BULK=mixed, llcm, sodimm)
 * Run as root, it drops to uid 65534 first: ranks are ordinary users.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>

#include "../tap/dn2-tap.h"
#include "ofi-common.h"

#define VER     FI_VERSION(1, 17)
#define TMO_MS  20000

static struct addr4 peer_addr, self_tab;
static int peer;

static struct fi_info *hints_dgram(void)
{
    struct fi_info *h = fi_allocinfo();
    h->ep_attr->type = FI_EP_DGRAM;
    h->caps = FI_MSG;
    h->fabric_attr->prov_name = strdup("dimmnet2");
    return h;
}

static struct fi_info *hints_rdm(void)
{
    struct fi_info *h = fi_allocinfo();
    h->ep_attr->type = FI_EP_RDM;
    h->caps = FI_MSG | FI_TAGGED;
    h->mode = FI_CONTEXT;
    h->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
    h->fabric_attr->prov_name = strdup("dimmnet2;ofi_rxd");
    return h;
}

/* The hints Open MPI 4.1.4's ofi MTL gives (mtl_ofi_component.c), for
 * the native endpoint. */
static struct fi_info *hints_native(void)
{
    struct fi_info *h = fi_allocinfo();
    h->mode = FI_CONTEXT | FI_CONTEXT2;
    h->ep_attr->type = FI_EP_RDM;
    h->caps = FI_TAGGED | FI_LOCAL_COMM | FI_REMOTE_COMM | FI_DIRECTED_RECV;
    h->tx_attr->msg_order = FI_ORDER_SAS;
    h->rx_attr->msg_order = FI_ORDER_SAS;
    h->rx_attr->op_flags = FI_COMPLETION;
    h->tx_attr->op_flags = FI_COMPLETION;
    h->domain_attr->threading = FI_THREAD_DOMAIN;
    h->domain_attr->cq_data_size = sizeof(int);
    h->domain_attr->av_type = FI_AV_MAP;
    h->domain_attr->resource_mgmt = FI_RM_ENABLED;
    h->fabric_attr->prov_name = strdup("dimmnet2");
    return h;
}

static int open_ctx(struct ctx *c, struct fi_info *hints, struct addr4 *dst)
{
    int r;

    memset(c, 0, sizeof(*c));
    if ((r = fi_getinfo(VER, NULL, NULL, 0, hints, &c->info))) {
        fprintf(stderr, "# getinfo: %s\n", fi_strerror(-r));
        return r;
    }
    /* libfabric also lists "dimmnet2;ofi_rxd" for "dimmnet2" (and first):
     * take the entry named exactly as asked */
    while (c->info && strcmp(c->info->fabric_attr->prov_name, hints->fabric_attr->prov_name)) {
        struct fi_info *next = c->info->next;
        c->info->next = NULL;
        fi_freeinfo(c->info);
        c->info = next;
    }
    if (!c->info) {
        return -FI_ENODATA;
    }
    if ((r = open_objects(c))) {
        return r;
    }
    if (dst && fi_av_insert(c->av, dst, 1, &c->peer, 0, NULL) != 1) {
        return -FI_EINVAL;
    }
    return 0;
}

/* Wait for one completion; its entry in *e.  1, or 0 on timeout, or a
 * negative error (-FI_EAVAIL: the error entry in *err). */
static int wait_comp(struct ctx *c, struct fi_cq_tagged_entry *e, struct fi_cq_err_entry *err)
{
    uint64_t t0 = now_ms();
    ssize_t r;

    for (;;) {
        r = fi_cq_read(c->cq, e, 1);
        if (r == 1) {
            return 1;
        }
        if (r == -FI_EAVAIL) {
            if (err) {
                memset(err, 0, sizeof(*err));
                fi_cq_readerr(c->cq, err, 0);
            }
            return -FI_EAVAIL;
        }
        if (r != -FI_EAGAIN) {
            return (int)r;
        }
        if (now_ms() - t0 > TMO_MS) {
            return 0;
        }
    }
}

static ssize_t post_send(struct ctx *c, const void *buf, size_t len, int tagged, void *ctxp)
{
    uint64_t t0 = now_ms();
    ssize_t r;

    do {
        r = tagged ? fi_tsend(c->ep, buf, len, NULL, c->peer, 42, ctxp)
                   : fi_send(c->ep, buf, len, NULL, c->peer, ctxp);
        if (r == -FI_EAGAIN) {
            struct fi_cq_tagged_entry e;
            /* progress; a completion read here is the caller's loss */
            if (fi_cq_read(c->cq, &e, 0) == -FI_EAVAIL) {
                break;
            }
        }
    } while (r == -FI_EAGAIN && now_ms() - t0 < TMO_MS);
    return r;
}

/* Wait for the send completion (context sc) and the receive (rc); other
 * completions are counted away.  1 when both came. */
static int wait_both(struct ctx *c, void *sc, void *rc, size_t *rlen)
{
    struct fi_cq_tagged_entry e;
    int got_s = 0, got_r = 0, r;

    while (!(got_s && got_r)) {
        if ((r = wait_comp(c, &e, NULL)) != 1) {
            fprintf(stderr, "# completion: %d\n", r);
            return 0;
        }
        if (e.op_context == sc) got_s = 1;
        if (e.op_context == rc) { got_r = 1; if (rlen) *rlen = e.len; }
    }
    return 1;
}

/* Throw away the completions of sends already done (their contexts are
 * not waited for). */
static void drain(struct ctx *c)
{
    struct fi_cq_tagged_entry e[8];

    while (fi_cq_read(c->cq, e, 8) > 0) {
    }
}

/* The DGRAM start handshake: rank 0 sends HELLO until READY comes back,
 * then DONE; rank 1 answers the first HELLO with READY and drops HELLOs
 * until DONE.  Both boards then have their receive set up (datagrams to a
 * process with no ring yet are dropped by the board). */
static int handshake(struct ctx *c)
{
    char rx[16], tx[16];
    struct fi_cq_tagged_entry e;
    uint64_t t0 = now_ms();
    int r;

    if (fi_recv(c->ep, rx, sizeof(rx), NULL, c->peer, rx)) {
        return 0;
    }
    if (me == 0) {
        for (;;) {
            strcpy(tx, "HELLO");
            if (post_send(c, tx, 6, 0, tx) < 0) return 0;
            uint64_t t1 = now_ms();
            while (now_ms() - t1 < 100) {
                if (fi_cq_read(c->cq, &e, 1) == 1 && e.op_context == rx) {
                    if (!strcmp(rx, "READY")) {
                        strcpy(tx, "DONE");
                        if (post_send(c, tx, 5, 0, tx) < 0) return 0;
                        drain(c);
                        return 1;
                    }
                    if (fi_recv(c->ep, rx, sizeof(rx), NULL, c->peer, rx)) return 0;
                }
            }
            if (now_ms() - t0 > TMO_MS) return 0;
        }
    }
    for (;;) {
        if ((r = wait_comp(c, &e, NULL)) != 1) return 0;
        if (e.op_context != rx) continue;
        if (!strcmp(rx, "DONE")) { drain(c); return 1; }
        if (!strcmp(rx, "HELLO") && !t0) {
            /* only the first */
        } else if (!strcmp(rx, "HELLO")) {
            t0 = 0;
            strcpy(tx, "READY");
            if (post_send(c, tx, 6, 0, tx) < 0) return 0;
        }
        if (fi_recv(c->ep, rx, sizeof(rx), NULL, c->peer, rx)) return 0;
    }
}

/* One exchange: rank 0 sends len bytes, rank 1 echoes them back. */
static int pingpong(struct ctx *c, size_t len, int tagged, unsigned seed)
{
    uint8_t *s = malloc(len + 1), *r = malloc(len + 1);
    size_t got = (size_t)-1;
    int ok = 0;
    char sc, rc;

    fill(s, len, seed);
    memset(r, 0xee, len + 1);
    if ((tagged ? fi_trecv(c->ep, r, len, NULL, c->peer, 42, 0, &rc)
                : fi_recv(c->ep, r, len, NULL, c->peer, &rc))) {
        goto out;
    }
    if (me == 0) {
        if (post_send(c, s, len, tagged, &sc) < 0 || !wait_both(c, &sc, &rc, &got)) goto out;
    } else {
        struct fi_cq_tagged_entry e;
        if (wait_comp(c, &e, NULL) != 1 || e.op_context != &rc) goto out;
        got = e.len;
        if (post_send(c, r, got, tagged, &sc) < 0 || wait_comp(c, &e, NULL) != 1) goto out;
    }
    ok = got == len && check_data(r, len, seed) && r[len] == 0xee;
out:
    free(s);
    free(r);
    return ok;
}

/* n messages of len bytes from rank 0 to rank 1, up to 'window' receives
 * posted ahead; then one echo back.  In order, data checked. */
static int stream(struct ctx *c, int n, size_t len, int window)
{
    uint8_t *buf = malloc((size_t)window * len), *s = malloc(len);
    struct fi_cq_tagged_entry e;
    int i, ok = 1, posted = 0, done = 0, sent = 0;

    if (me == 1) {
        for (; posted < window && posted < n; posted++) {
            if (fi_recv(c->ep, buf + (size_t)(posted % window) * len, len, NULL, c->peer,
                        (void *)(intptr_t)(posted + 1))) return 0;
        }
        while (done < n) {
            if (wait_comp(c, &e, NULL) != 1) { ok = 0; break; }
            i = (int)(intptr_t)e.op_context - 1;
            if (i != done || e.len != len ||
                !check_data(buf + (size_t)(i % window) * len, len, (unsigned)i)) {
                fprintf(stderr, "# stream: message %d arrived as %d (%zu bytes)\n", done, i, e.len);
                ok = 0;
            }
            done++;
            if (posted < n) {
                if (fi_recv(c->ep, buf + (size_t)(posted % window) * len, len, NULL, c->peer,
                            (void *)(intptr_t)(posted + 1))) return 0;
                posted++;
            }
        }
        s[0] = (uint8_t)ok;
        if (post_send(c, s, 1, 0, s) < 0 || wait_comp(c, &e, NULL) != 1) ok = 0;
    } else {
        char rc;
        if (fi_recv(c->ep, buf, 1, NULL, c->peer, &rc)) return 0;
        for (sent = 0; sent < n; sent++) {
            fill(s, len, (unsigned)sent);
            if (post_send(c, s, len, 0, (void *)(intptr_t)(sent + 1)) < 0) { ok = 0; break; }
        }
        /* n send completions and the verdict */
        for (i = 0; i <= n && ok; i++) {
            if (wait_comp(c, &e, NULL) != 1) ok = 0;
        }
        ok = ok && buf[0] == 1;
    }
    free(buf);
    free(s);
    return ok;
}

/* Phase 6: a second process per board (WID 1) exchanging with the peer's
 * WID 1 while this one (WID 0) exchanges with the peer's WID 0. */
static int second_process(void)
{
    struct addr4 p1 = peer_addr;
    struct fi_info *h = hints_dgram();
    struct ctx c;
    int ok = 1;
    unsigned k;

    p1.wid = 1;
    if (open_ctx(&c, h, &p1)) _exit(2);
    {
        struct addr4 a; size_t al = sizeof(a);
        if (fi_getname(&c.ep->fid, &a, &al) || a.wid != 1) _exit(3);
    }
    if (!handshake(&c)) _exit(4);
    for (k = 0; k < 8 && ok; k++) ok = pingpong(&c, 100 + 300 * k, 0, 900 + k);
    close_ctx(&c);
    fi_freeinfo(h);
    _exit(ok ? 0 : 5);
}

/* Receive one tagged message (tag, from src) into buf; its length, or
 * -1.  err: the error entry's code when it completed in error. */
static long trecv_wait(struct ctx *c, void *buf, size_t len, fi_addr_t src, uint64_t tag,
                       uint64_t ignore, struct fi_cq_tagged_entry *out, int *err)
{
    struct fi_cq_tagged_entry e;
    struct fi_cq_err_entry ee;
    char rc;
    int r;

    if (err) *err = 0;
    if (fi_trecv(c->ep, buf, len, NULL, src, tag, ignore, &rc)) return -1;
    for (;;) {
        r = wait_comp(c, &e, &ee);
        if (r == -FI_EAVAIL && ee.op_context == &rc) {
            if (err) *err = ee.err;
            return (long)ee.len;
        }
        if (r != 1) return -1;
        if (e.op_context == &rc) {
            if (out) *out = e;
            return (long)e.len;
        }
    }
}

static int tsend_wait(struct ctx *c, const void *buf, size_t len, uint64_t tag)
{
    struct fi_cq_tagged_entry e;
    char sc;
    uint64_t t0 = now_ms();
    ssize_t r;

    do {
        r = fi_tsend(c->ep, buf, len, NULL, c->peer, tag, &sc);
        if (r == -FI_EAGAIN) fi_cq_read(c->cq, &e, 0);
    } while (r == -FI_EAGAIN && now_ms() - t0 < TMO_MS);
    if (r) return 0;
    for (;;) {
        if (wait_comp(c, &e, NULL) != 1) return 0;
        if (e.op_context == &sc) return 1;
    }
}

/* Rank 1 says READY (tag 0xAA) every 100 ms until rank 0 answers GO:
 * an RDM datagram to an endpoint not enabled yet is dropped by the board
 * (Open MPI's modex fence does this for MPI jobs). */
static int native_handshake(struct ctx *c)
{
    char b[8];
    struct fi_cq_tagged_entry e;
    uint64_t t0 = now_ms();
    char rc, sc;

    if (me == 0) {
        return trecv_wait(c, b, sizeof(b), c->peer, 0xAA, 0, NULL, NULL) == 6 &&
               tsend_wait(c, "GO", 3, 0xAB);
    }
    if (fi_trecv(c->ep, b, sizeof(b), NULL, c->peer, 0xAB, 0, &rc)) return 0;
    while (now_ms() - t0 < TMO_MS) {
        if (fi_tinject(c->ep, "READY", 6, c->peer, 0xAA)) return 0;
        uint64_t t1 = now_ms();
        while (now_ms() - t1 < 100) {
            if (fi_cq_read(c->cq, &e, 1) == 1 && e.op_context == &rc) return 1;
        }
    }
    (void)sc;
    return 0;
}

/* fi_trecvmsg(flags | FI_PEEK) with m until a message is there (the
 * completion in *e: 1) or TMO_MS passed. */
static int peek_wait(struct ctx *c, struct fi_msg_tagged *m, uint64_t flags,
                     struct fi_cq_tagged_entry *e)
{
    struct fi_cq_err_entry ee;
    uint64_t t0 = now_ms();
    int r;

    do {
        r = (int)fi_trecvmsg(c->ep, m, flags | FI_PEEK | FI_COMPLETION);
        r = r ? r : wait_comp(c, e, &ee);
    } while (r == -FI_EAVAIL && ee.err == FI_ENOMSG && now_ms() - t0 < TMO_MS);
    return r;
}

/* ------------------------------------------ 8. the native RDM endpoint */
/* The bulk path under test (FI_DIMMNET2_BULK) in the points' names. */
static char nat[48] = "native";

/* Tagged ping-pongs of every size 0..64, every multiple of a BOTF image
 * (496 B) +-1 up to 17 KB (the chunk and share edges of the LLCM path:
 * 2480, 7936, 8192, 24576 fall in or next to them), the powers of two
 * +-1 from 128 B to 4 MiB, and 3 MiB + 17, 5 MiB + 3: data checked. */
static int size_sweep(struct ctx *c, size_t *bad)
{
    size_t sizes[256];
    int n = 0, i, d;

    for (i = 0; i <= 64; i++) sizes[n++] = (size_t)i;
    for (i = 1; i <= 34; i++) {
        for (d = -1; d <= 1; d++) sizes[n++] = (size_t)(496 * i + d);
    }
    for (i = 7; i <= 22; i++) {
        for (d = -1; d <= 1; d++) sizes[n++] = ((size_t)1 << i) + (size_t)d;
    }
    sizes[n++] = 24576 + 1;
    sizes[n++] = (3u << 20) + 17;
    sizes[n++] = (5u << 20) + 3;
    for (i = 0; i < n; i++) {
        if (!pingpong(c, sizes[i], 1, 2000 + (unsigned)i)) {
            *bad = sizes[i];
            return 0;
        }
    }
    return n;
}

/* Rank 1's endpoint dies in the middle of a 32 MiB message from rank 0:
 * rank 1 closes its endpoint, a child opens one on the same {LID, WID},
 * posts the receive, says READY and is killed (SIGKILL) 100 ms later;
 * rank 1 opens its endpoint again (a new process there: its hello), and
 * rank 0's send completes, and 3 messages after it (33 B, 100 KB, 1 MiB)
 * arrive, checked.  Rank 1 reports the result in one byte.  1: passed. */
static int kill_mid_stream(struct ctx *c, struct fi_info *h)
{
    size_t big = 32u << 20, after[3] = { 33, 100000, 1u << 20 };
    uint8_t *b = malloc(big + 1), res = 0;
    int ok = 1, i;

    if (!b) return 0;
    if (me == 0) {
        ok = trecv_wait(c, b, 8, c->peer, 0x7770, 0, NULL, NULL) == 6;
        fill(b, big, 77);
        ok = ok && tsend_wait(c, b, big, 0x7777);
        for (i = 0; i < 3 && ok; i++) {
            fill(b, after[i], 78 + (unsigned)i);
            ok = tsend_wait(c, b, after[i], 0x7778);
        }
        ok = ok && trecv_wait(c, &res, 1, c->peer, 0x7779, 0, NULL, NULL) == 1 && res == 1;
        free(b);
        return ok;
    }
    {
        int pfd[2], st;
        pid_t pid;
        char ch;
        uint64_t t0;

        close_ctx(c);
        if (pipe(pfd)) return 0;
        pid = fork();
        if (pid == 0) {
            struct ctx cc;
            char rc;
            struct fi_cq_tagged_entry e;
            close(pfd[0]);
            if (open_ctx(&cc, h, &peer_addr)) _exit(2);
            if (fi_trecv(cc.ep, b, big, NULL, cc.peer, 0x7777, 0, &rc)) _exit(3);
            if (tsend_wait(&cc, "READY", 6, 0x7770) != 1) _exit(4);
            if (write(pfd[1], "r", 1) != 1) _exit(5);
            for (;;) fi_cq_read(cc.cq, &e, 1);       /* receiving until killed */
        }
        close(pfd[1]);
        ok = pid > 0 && read(pfd[0], &ch, 1) == 1;
        close(pfd[0]);
        usleep(100000);
        if (pid > 0) {
            kill(pid, SIGKILL);
            waitpid(pid, &st, 0);
        }
        /* the WID is free once the driver has released the dead one's */
        t0 = now_ms();
        while (open_ctx(c, h, &peer_addr)) {
            close_ctx(c);
            if (now_ms() - t0 > TMO_MS) {
                free(b);
                return 0;
            }
            usleep(100000);
        }
        for (i = 0; i < 3 && ok; i++) {
            ok = trecv_wait(c, b, after[i] + 1, c->peer, 0x7778, 0, NULL, NULL) == (long)after[i] &&
                 check_data(b, after[i], 78 + (unsigned)i);
            if (!ok) fprintf(stderr, "# after the restart: message %d of %zu bytes wrong\n", i,
                             after[i]);
        }
        res = (uint8_t)ok;
        tsend_wait(c, &res, 1, 0x7779);
    }
    free(b);
    return ok;
}

/* Open (and close) a CQ with VAR=VAL in the environment: fi_cq_open's
 * result, 0 when the CQ was taken. */
static int cq_open_with(struct fid_domain *dom, const char *var, const char *val)
{
    struct fi_cq_attr a = { .format = FI_CQ_FORMAT_MSG };
    struct fid_cq *cq = NULL;
    int r;

    setenv(var, val, 1);
    r = fi_cq_open(dom, &a, &cq, NULL);
    if (r == 0 && !cq) {
        r = -FI_EOTHER;
    }
    if (cq) {
        fi_close(&cq->fid);
    }
    unsetenv(var);
    return r;
}
static void native_rdm(const char *bulk)
{
    struct fi_info *h = hints_native(), *info = NULL, *cur;
    struct ctx c;
    int r, n, ok;

    setenv("FI_DIMMNET2_BULK", bulk, 1);
    snprintf(nat, sizeof(nat), "native, bulk %s", bulk);

    r = fi_getinfo(VER, NULL, NULL, 0, h, &info);
    {
        struct fi_info *all = info;
        for (info = all; info && strcmp(info->fabric_attr->prov_name, "dimmnet2"); info = info->next) {
        }
        if (info) {
            info = fi_dupinfo(info);
        }
        fi_freeinfo(all);
    }
    CHECK(r == 0 && info && !strcmp(info->fabric_attr->prov_name, "dimmnet2") &&
          info->ep_attr->type == FI_EP_RDM && (info->caps & FI_TAGGED) &&
          (info->caps & FI_DIRECTED_RECV) && info->domain_attr->cq_data_size >= 4 &&
          (info->ep_attr->mem_tag_format >> 63) && info->ep_attr->max_msg_size >= (64u << 20) &&
          info->mode == 0,
          "%s: fi_getinfo with the ofi MTL's hints: prov %s, RDM, FI_TAGGED, FI_DIRECTED_RECV, "
          "cq_data_size %zu, 64-bit tags, max_msg_size %zu, inject_size %zu (%s)", nat,
          info ? info->fabric_attr->prov_name : "-", info ? info->domain_attr->cq_data_size : 0,
          info ? info->ep_attr->max_msg_size : 0, info ? info->tx_attr->inject_size : 0,
          fi_strerror(-r));
    fi_freeinfo(info);
    for (n = 0; n < 5; n++) {
        static const char *what[] = { "FI_RMA", "FI_ATOMIC", "FI_MULTI_RECV",
                                      "max_msg_size 2 GiB", "inject_size 4096" };
        struct fi_info *b = hints_native();
        switch (n) {
        case 0: b->caps |= FI_RMA; break;
        case 1: b->caps |= FI_ATOMIC; break;
        case 2: b->rx_attr->op_flags |= FI_MULTI_RECV; break;
        case 3: b->ep_attr->max_msg_size = 2u << 30; break;
        case 4: b->tx_attr->inject_size = 4096; break;
        }
        info = NULL;
        r = fi_getinfo(VER, NULL, NULL, 0, b, &info);
        /* libfabric may still offer "dimmnet2;ofi_rxd" (rxd has RMA...):
         * no entry of the native provider itself may come back */
        for (cur = info; cur && strcmp(cur->fabric_attr->prov_name, "dimmnet2"); cur = cur->next) {
        }
        CHECK((r == -FI_ENODATA && !info) || (r == 0 && !cur),
              "%s: hints with %s refused by dimmnet2: %s%s", nat, what[n], fi_strerror(-r),
              r == 0 ? " (only dimmnet2;ofi_rxd offered)" : "");
        fi_freeinfo(info);
        fi_freeinfo(b);
    }
    h->caps |= FI_MSG | FI_SOURCE;
    r = open_ctx(&c, h, &peer_addr);
    CHECK(r == 0, "%s RDM endpoint opened, peer inserted: %s", nat, fi_strerror(-r));
    if (r) {
        fi_freeinfo(h);
        return;
    }
    ok = native_handshake(&c);
    CHECK(ok, "%s: start handshake", nat);
    {
        size_t sizes[] = { 0, 1, 8, 32, 33, 999, 1000, 1015, 17383, 17384, 40000, 1u << 20, 4u << 20 };
        int all = 1;
        for (n = 0; n < (int)(sizeof(sizes) / sizeof(sizes[0])); n++) {
            int one = pingpong(&c, sizes[n], 1, 60 + (unsigned)n);
            if (!one) fprintf(stderr, "# native ping-pong of %zu bytes failed\n", sizes[n]);
            all &= one;
        }
        CHECK(all, "%s: tagged ping-pong 0 B .. 4 MiB (one datagram, several, the LH Buffer's edge), data checked", nat);
        all = 1;
        for (n = 0; n < 4; n++) all &= pingpong(&c, 100 + 5000 * (size_t)n, 0, 90 + (unsigned)n);
        CHECK(all, "%s: untagged (FI_MSG) ping-pong, data checked", nat);
    }
    {
        char b[8];
        uint8_t *big = calloc(1, c.info->tx_attr->inject_size + 1);
        r = (int)fi_tinject(c.ep, big, c.info->tx_attr->inject_size + 1, c.peer, 1);
        CHECK(r == -FI_EMSGSIZE, "%s: inject of inject_size + 1 refused: %s", nat, fi_strerror(-r));
        free(big);
        {
            /* the length alone is refused: no byte of it is touched */
            struct iovec v = { b, c.info->ep_attr->max_msg_size + 1 };
            r = (int)fi_tsendv(c.ep, &v, NULL, 1, c.peer, 1, NULL);
            CHECK(r == -FI_EMSGSIZE, "%s: send of max_msg_size + 1 refused: %s", nat, fi_strerror(-r));
        }
        r = (int)fi_tsend(c.ep, b, 8, NULL, 77, 1, NULL);
        CHECK(r == -FI_EADDRNOTAVAIL, "%s: send to an fi_addr not in the AV: %s", nat, fi_strerror(-r));
        r = (int)fi_trecv(c.ep, b, 8, NULL, 77, 1, 0, NULL);
        CHECK(r == -FI_EADDRNOTAVAIL, "%s: directed receive from an fi_addr not in the AV: %s", nat,
              fi_strerror(-r));
        r = (int)fi_read(c.ep, b, 8, NULL, c.peer, 0, 0, NULL);
        CHECK(r == -FI_ENOSYS, "%s: fi_read (RMA) not offered: %s", nat, fi_strerror(-r));
    }
    {
        /* unexpected: rank 0 sends tags 1, 2, 3 (100 B, 30 KB, 8 B) and
         * 4 with CQ data; rank 1 peeks until tag 4 is there, then takes
         * them in the order 3, 1, 4, 2 */
        size_t len[4] = { 100, 30000, 8, 16 };
        uint8_t *buf = malloc(30000);
        int good = 1;
        if (me == 0) {
            for (n = 0; n < 3 && good; n++) {
                fill(buf, len[n], 200 + (unsigned)n);
                good = tsend_wait(&c, buf, len[n], (uint64_t)n + 1);
            }
            fill(buf, 16, 203);
            char sc;
            struct fi_cq_tagged_entry e;
            good = good && fi_tsenddata(c.ep, buf, 16, NULL, 0xC0FFEE, c.peer, 4, &sc) == 0 &&
                   wait_comp(&c, &e, NULL) == 1 && e.op_context == &sc;
            good = good && trecv_wait(&c, buf, 8, c.peer, 0x99, 0, NULL, NULL) == 1 && buf[0] == 1;
            CHECK(good, "%s: 4 unexpected messages matched out of order by tag (3, 1, 4, 2), "
                  "data and CQ data checked on rank 1", nat);
        } else {
            struct fi_msg_tagged m;
            struct iovec v = { buf, 8 };
            struct fi_cq_tagged_entry e;
            char pc;
            memset(&m, 0, sizeof(m));
            m.msg_iov = &v;
            m.iov_count = 1;
            m.addr = FI_ADDR_UNSPEC;
            m.tag = 4;
            m.context = &pc;
            r = peek_wait(&c, &m, 0, &e);
            good = r == 1 && e.len == 16 && e.tag == 4 && (e.flags & FI_REMOTE_CQ_DATA) && e.data == 0xC0FFEE;
            fi_addr_t order[4] = { 3, 1, 4, 2 };
            for (n = 0; n < 4 && good; n++) {
                int k = (int)order[n] - 1, err;
                struct fi_cq_tagged_entry got;
                long l = trecv_wait(&c, buf, 30000, n % 2 ? FI_ADDR_UNSPEC : c.peer, order[n], 0, &got, &err);
                good = l == (long)len[k] && !err && got.tag == order[n] && check_data(buf, len[k], 200 + (unsigned)k);
                if (!good) fprintf(stderr, "# unexpected tag %llu: %ld bytes, err %d\n",
                                   (unsigned long long)order[n], l, err);
            }
            buf[0] = (uint8_t)good;
            tsend_wait(&c, buf, 1, 0x99);
        }
        free(buf);
    }
    {
        /* FI_PEEK with nothing there: FI_ENOMSG; PEEK|CLAIM then CLAIM;
         * ignore bits; FI_SOURCE; truncation */
        uint8_t b[64];
        int good = 1;
        if (me == 0) {
            fill(b, 64, 7);
            good = tsend_wait(&c, b, 40, 0x1234) && tsend_wait(&c, b, 64, 0x5600);
            good = good && trecv_wait(&c, b, 8, c.peer, 0x98, 0, NULL, NULL) == 1;
            CHECK(good && b[0] == 0x0b, "%s: FI_PEEK with no message (FI_ENOMSG), FI_PEEK|FI_CLAIM then "
                  "FI_CLAIM, ignore bits, FI_ETRUNC with olen (rank 1's result bits %x)", nat, b[0]);
        } else {
            struct fi_msg_tagged m;
            struct iovec v = { b, 64 };
            struct fi_cq_tagged_entry e;
            struct fi_cq_err_entry ee;
            char pc;
            int bits = 0;
            uint64_t t0;
            memset(&m, 0, sizeof(m));
            m.msg_iov = &v; m.iov_count = 1; m.addr = c.peer; m.tag = 0x7777; m.context = &pc;
            r = (int)fi_trecvmsg(c.ep, &m, FI_PEEK | FI_COMPLETION);
            if (r == 0 && wait_comp(&c, &e, &ee) == -FI_EAVAIL && ee.err == FI_ENOMSG && ee.op_context == &pc)
                bits |= 1;
            m.tag = 0x1234;
            r = peek_wait(&c, &m, FI_CLAIM, &e);
            if (r == 1 && e.len == 40 && e.tag == 0x1234) {
                memset(b, 0, 64);
                r = (int)fi_trecvmsg(c.ep, &m, FI_CLAIM | FI_COMPLETION);
                if (r == 0 && wait_comp(&c, &e, NULL) == 1 && e.op_context == &pc && e.len == 40 &&
                    check_data(b, 40, 7))
                    bits |= 2;
            }
            /* tag 0x5600 taken with ignore 0xff, into 16 bytes: truncated */
            {
                char rc;
                if (fi_trecv(c.ep, b, 16, NULL, FI_ADDR_UNSPEC, 0x56ff, 0xff, &rc) == 0) {
                    t0 = now_ms();
                    do {
                        r = (int)fi_cq_read(c.cq, &e, 1);
                    } while (r == -FI_EAGAIN && now_ms() - t0 < TMO_MS);
                    if (r == -FI_EAVAIL) {
                        memset(&ee, 0, sizeof(ee));
                        fi_cq_readerr(c.cq, &ee, 0);
                        if (ee.err == FI_ETRUNC && ee.olen == 48 && ee.tag == 0x5600 && check_data(b, 16, 7))
                            bits |= 8;
                    }
                }
            }
            b[0] = (uint8_t)bits;
            tsend_wait(&c, b, 1, 0x98);
        }
    }
    {
        /* FI_SOURCE: rank 0 sends one message; rank 1 reads it with
         * fi_cq_readfrom and checks the fi_addr */
        uint8_t b[8] = { 0 };
        if (me == 0) {
            ok = tsend_wait(&c, b, 8, 0x97) && trecv_wait(&c, b, 8, c.peer, 0x96, 0, NULL, NULL) == 1;
            CHECK(ok && b[0] == 1, "%s: FI_SOURCE: fi_cq_readfrom gives the sender's fi_addr", nat);
        } else {
            struct fi_cq_tagged_entry e;
            fi_addr_t from = FI_ADDR_NOTAVAIL;
            char rc;
            uint64_t t0 = now_ms();
            ok = 0;
            if (fi_trecv(c.ep, b, 8, NULL, FI_ADDR_UNSPEC, 0x97, 0, &rc) == 0) {
                do {
                    r = (int)fi_cq_readfrom(c.cq, &e, 1, &from);
                } while (r == -FI_EAGAIN && now_ms() - t0 < TMO_MS);
                ok = r == 1 && e.op_context == &rc && from == c.peer;
            }
            b[0] = (uint8_t)ok;
            tsend_wait(&c, b, 1, 0x96);
        }
    }
    {
        uint64_t t0 = now_ms();
        ok = 1;
        for (n = 0; n < 50 && ok; n++) ok = pingpong(&c, 8, 1, (unsigned)n);
        CHECK(ok, "%s: 50 tagged ping-pongs of 8 B (%.0f us per round trip)", nat,
              (now_ms() - t0) * 1000.0 / 50);
        /* 200 messages, same tag, in order */
        uint8_t b[64];
        int good = 1;
        if (me == 0) {
            for (n = 0; n < 200 && good; n++) {
                fill(b, 64, 1000 + (unsigned)n);
                good = tsend_wait(&c, b, 64, 0x55);
            }
            good = good && trecv_wait(&c, b, 8, c.peer, 0x94, 0, NULL, NULL) == 1 && b[0] == 1;
            CHECK(good, "%s: 200 messages of the same tag arrive in order, checked", nat);
        } else {
            for (n = 0; n < 200 && good; n++) {
                good = trecv_wait(&c, b, 64, FI_ADDR_UNSPEC, 0x55, 0, NULL, NULL) == 64 &&
                       check_data(b, 64, 1000 + (unsigned)n);
            }
            b[0] = (uint8_t)good;
            tsend_wait(&c, b, 1, 0x94);
        }
        {
            /* both ranks stream 4 x 2 MB to each other at once: more than
             * both receive rings hold.  Without the credit flow control
             * each side's held LHSv2 blocked its own board's VLs and the
             * two waited for each other (seconds per message) */
            size_t big = 2000000;
            uint8_t *sb = malloc(big), *rb = malloc(4 * big);
            char rc[4], sc[4];
            struct fi_cq_tagged_entry e;
            int got = 0, want = 8;
            t0 = now_ms();
            fill(sb, big, 400 + (unsigned)me);
            ok = 1;
            for (n = 0; n < 4 && ok; n++) {
                ok = fi_trecv(c.ep, rb + (size_t)n * big, big, NULL, c.peer, 0x4242, 0, &rc[n]) == 0;
            }
            for (n = 0; n < 4 && ok; n++) {
                ssize_t sr;
                do {
                    sr = fi_tsend(c.ep, sb, big, NULL, c.peer, 0x4242, &sc[n]);
                    if (sr == -FI_EAGAIN && fi_cq_read(c.cq, &e, 1) == 1) got++;
                } while (sr == -FI_EAGAIN);
                ok = sr == 0;
            }
            while (ok && got < want) {
                ok = wait_comp(&c, &e, NULL) == 1;
                got += ok;
            }
            for (n = 0; n < 4 && ok; n++) ok = check_data(rb + (size_t)n * big, big, 400 + (unsigned)peer);
            CHECK(ok, "%s: both ranks stream 4 x 2 MB to each other at once (more than the rings hold), "
                  "data checked (%.2f MB/s each way)", nat, 4 * big / 1000.0 / (double)(now_ms() - t0 + 1));
            free(sb);
            free(rb);
        }
        t0 = now_ms();
        ok = 1;
        for (n = 0; n < 4 && ok; n++) ok = pingpong(&c, 1u << 20, 1, 300 + (unsigned)n);
        CHECK(ok, "%s: 4 ping-pongs of 1 MiB (%.2f MB/s each way)", nat,
              8.0 * (1u << 20) / 1000.0 / (double)(now_ms() - t0 + 1));
    }
    {
        size_t bad = 0;
        uint64_t t0 = now_ms();
        n = size_sweep(&c, &bad);
        CHECK(n > 0, "%s: %d ping-pongs, every size 0..64, 496 k +-1 to 17 KB, 2^k +-1 to 4 MiB, "
              "5 MiB + 3: data checked (%.1f s)%s", nat, n, (now_ms() - t0) / 1000.0,
              n ? "" : " FAILED");
        if (!n) fprintf(stderr, "# %s: ping-pong of %zu bytes failed\n", nat, bad);
    }
    ok = kill_mid_stream(&c, h);
    CHECK(ok, "%s: the receiver killed in the middle of a 32 MiB message, a new process on its "
          "{LID, WID}: the send completes, 3 messages after it arrive checked", nat);
    close_ctx(&c);
    fi_freeinfo(h);
}

int main(void)
{
    struct fi_info *h, *info = NULL, *cur;
    struct ctx c;
    int r, n, ok;
    const char *rk = getenv("DN2_RANK");

    me = rk ? atoi(rk) : 0;
    peer = me ^ 1;
    rank_addr(peer, &peer_addr);
    rank_addr(me, &self_tab);
    setvbuf(stdout, NULL, _IOLBF, 0);
    /* ranks are ordinary users: the provider must need no privilege */
    if (geteuid() == 0 && (setgid(65534) || setuid(65534))) {
        perror("setuid");
        return 1;
    }
    if (me > 1) {
        return 0;           /* pairs (0,1) only */
    }

    /* ---------------------------------------------------- 1. getinfo */
    h = hints_dgram();
    r = fi_getinfo(VER, NULL, NULL, 0, h, &info);
    CHECK(r == 0 && info, "fi_getinfo dimmnet2 FI_EP_DGRAM: %s", fi_strerror(-r));
    if (r == 0) {
        CHECK(!strcmp(info->fabric_attr->prov_name, "dimmnet2") &&
              !strcmp(info->fabric_attr->name, "dimmnet2") &&
              !strcmp(info->domain_attr->name, "dimmnet2-0") &&
              info->ep_attr->type == FI_EP_DGRAM && (info->caps & FI_MSG) &&
              info->domain_attr->data_progress == FI_PROGRESS_MANUAL,
              "attributes: prov %s fabric %s domain %s, DGRAM, FI_MSG, manual progress",
              info->fabric_attr->prov_name, info->fabric_attr->name, info->domain_attr->name);
        CHECK(info->ep_attr->max_msg_size >= 4096 && info->tx_attr->inject_size >= 512 &&
              info->src_addrlen == 4 && ((struct addr4 *)info->src_addr)->lid == self_tab.lid,
              "max_msg_size %zu, inject_size %zu, src_addr LID %u (rank table %u)",
              info->ep_attr->max_msg_size, info->tx_attr->inject_size,
              info->src_addr ? ((struct addr4 *)info->src_addr)->lid : 0, self_tab.lid);
        fi_freeinfo(info);
    } else {
        CHECK(0, "attributes");
        CHECK(0, "sizes");
    }
    {
        struct { const char *what; void (*set)(struct fi_info *); } bad[] = {
            { "caps FI_RMA", NULL }, { "FI_EP_MSG", NULL }, { "max_msg_size 1 GiB", NULL },
            { "FI_MULTI_RECV", NULL }, { "FI_PROGRESS_AUTO", NULL },
        };
        for (n = 0; n < 5; n++) {
            struct fi_info *b = hints_dgram();
            switch (n) {
            case 0: b->caps |= FI_RMA; break;
            case 1: b->ep_attr->type = FI_EP_MSG; break;
            case 2: b->ep_attr->max_msg_size = 1u << 30; break;
            case 3: b->rx_attr->op_flags = FI_MULTI_RECV; break;
            case 4: b->domain_attr->data_progress = FI_PROGRESS_AUTO; break;
            }
            info = NULL;
            r = fi_getinfo(VER, NULL, NULL, 0, b, &info);
            CHECK(r == -FI_ENODATA && !info, "hints with %s refused: %s", bad[n].what, fi_strerror(-r));
            fi_freeinfo(info);
            fi_freeinfo(b);
        }
    }
    {
        struct fi_info *b = hints_rdm();
        info = NULL;
        r = fi_getinfo(VER, NULL, NULL, 0, b, &info);
        for (cur = info; cur && strcmp(cur->fabric_attr->prov_name, "dimmnet2;ofi_rxd"); cur = cur->next) {
        }
        CHECK(r == 0 && cur && cur->ep_attr->type == FI_EP_RDM && (cur->caps & FI_TAGGED),
              "fi_getinfo 'dimmnet2;ofi_rxd' FI_EP_RDM FI_TAGGED: %s (%s)", fi_strerror(-r),
              cur ? cur->fabric_attr->prov_name : "none");
        fi_freeinfo(info);
        fi_freeinfo(b);
    }

    /* ----------------------------------------------------- 2. objects */
    r = open_ctx(&c, h, NULL);
    CHECK(r == 0, "fabric, domain, AV, CQ, endpoint opened and enabled: %s", fi_strerror(-r));
    if (r) {
        printf("Bail out! no endpoint\n");
        return 1;
    }
    {
        struct addr4 a;
        size_t al = 2;
        r = fi_getname(&c.ep->fid, &a, &al);
        CHECK(r == -FI_ETOOSMALL && al == 4, "fi_getname with a 2-byte buffer: -FI_ETOOSMALL, needs %zu", al);
        al = sizeof(a);
        r = fi_getname(&c.ep->fid, &a, &al);
        CHECK(r == 0 && al == 4 && a.lid == self_tab.lid && a.wid == 0,
              "fi_getname: LID %u WID %u", a.lid, a.wid);
    }
    {
        struct fi_cq_attr bad = { .format = FI_CQ_FORMAT_MSG, .wait_obj = FI_WAIT_FD };
        struct fid_cq *cq2 = NULL;
        r = fi_cq_open(c.dom, &bad, &cq2, NULL);
        CHECK(r == -FI_ENOSYS, "CQ with FI_WAIT_FD refused: %s", fi_strerror(-r));
        /* the waiting settings: a bad value refuses the CQ, not 0 silently */
        r = cq_open_with(c.dom, "FI_DIMMNET2_SPIN_US", "5ms");
        CHECK(r == -FI_EINVAL, "FI_DIMMNET2_SPIN_US=5ms refuses the CQ: %s", fi_strerror(-r));
        r = cq_open_with(c.dom, "FI_DIMMNET2_IDLE_US", "-1");
        CHECK(r == -FI_EINVAL, "FI_DIMMNET2_IDLE_US=-1 refuses the CQ: %s", fi_strerror(-r));
        r = cq_open_with(c.dom, "FI_DIMMNET2_IDLE_US", "0");
        CHECK(r == 0, "FI_DIMMNET2_IDLE_US=0 (spin) is taken: %s", fi_strerror(-r));
        r = cq_open_with(c.dom, "FI_DIMMNET2_PAUSE", "2");
        CHECK(r == -FI_EINVAL, "FI_DIMMNET2_PAUSE=2 refuses the CQ: %s", fi_strerror(-r));
        r = cq_open_with(c.dom, "FI_DIMMNET2_PAUSE", "0");
        CHECK(r == 0, "FI_DIMMNET2_PAUSE=0 (no spin-wait hint) is taken: %s", fi_strerror(-r));
        struct fid_ep *ep2 = NULL;
        struct fi_info *i2 = fi_dupinfo(c.info);
        i2->caps |= FI_RMA;
        r = fi_endpoint(c.dom, i2, &ep2, NULL);
        CHECK(r == -FI_EINVAL && !ep2, "endpoint with FI_RMA refused: %s", fi_strerror(-r));
        fi_freeinfo(i2);
        char b[8];
        r = (int)fi_tsend(c.ep, b, 8, NULL, 0, 1, NULL);
        CHECK(r == -FI_ENOSYS, "fi_tsend on the DGRAM endpoint: %s", fi_strerror(-r));
    }

    /* --------------------------------------------------------- 3. AV */
    {
        struct addr4 a[3] = { peer_addr, { 0, 0, 0 }, { peer_addr.lid, 5, 0 } };
        fi_addr_t fa[3];
        int errs[3] = { -1, -1, -1 };
        n = fi_av_insert(c.av, a, 3, fa, FI_SYNC_ERR, errs);
        CHECK(n == 1 && fa[0] == 0 && fa[1] == FI_ADDR_NOTAVAIL && fa[2] == FI_ADDR_NOTAVAIL &&
              errs[0] == 0 && errs[1] == FI_EINVAL && errs[2] == FI_EINVAL,
              "AV insert: peer (LID %u) accepted, LID 0 and WID 5 refused with FI_EINVAL (%d %d %d)",
              peer_addr.lid, errs[0], errs[1], errs[2]);
        c.peer = fa[0];
        struct addr4 back; size_t bl = sizeof(back);
        r = fi_av_lookup(c.av, c.peer, &back, &bl);
        CHECK(r == 0 && back.lid == peer_addr.lid && back.wid == peer_addr.wid, "AV lookup gives the address back");
        char b[8] = { 0 };
        r = (int)fi_send(c.ep, b, 8, NULL, 77, NULL);
        CHECK(r == -FI_EADDRNOTAVAIL, "send to an fi_addr not in the AV: %s", fi_strerror(-r));
    }

    /* ------------------------------------------------------- 4. DGRAM */
    ok = handshake(&c);
    CHECK(ok, "start handshake with rank %d (LID %u)", peer, peer_addr.lid);
    {
        size_t sizes[] = { 0, 1, 47, 48, 49, 504, 1015, 1016, 4096, 0 };
        sizes[9] = c.info->ep_attr->max_msg_size;
        for (n = 0; n < 10; n++) {
            ok = pingpong(&c, sizes[n], 0, (unsigned)n);
            CHECK(ok, "DGRAM ping-pong %zu bytes, data checked", sizes[n]);
        }
    }
    {
        size_t big = c.info->ep_attr->max_msg_size + 1;
        uint8_t *b = calloc(1, big);
        r = (int)fi_send(c.ep, b, big, NULL, c.peer, NULL);
        CHECK(r == -FI_EMSGSIZE, "send of max_msg_size + 1 refused: %s", fi_strerror(-r));
        r = (int)fi_inject(c.ep, b, c.info->tx_attr->inject_size + 1, c.peer);
        CHECK(r == -FI_EMSGSIZE, "inject of inject_size + 1 refused: %s", fi_strerror(-r));
        free(b);
    }
    {
        uint64_t t0 = now_ms();
        ok = stream(&c, 300, 200, 16);
        CHECK(ok, "300 messages of 200 B in flight (16 receives posted ahead): in order, checked (%llu ms)",
              (unsigned long long)(now_ms() - t0));
        t0 = now_ms();
        ok = stream(&c, 64, 3000, 8);
        CHECK(ok, "64 messages of 3000 B in flight: in order, checked (%.1f MB/s)",
              64 * 3000 / 1000.0 / (double)(now_ms() - t0 + 1));
        t0 = now_ms();
        ok = stream(&c, 16, 16384, 8);
        CHECK(ok, "16 messages of 16 KiB in flight: in order, checked (%.1f MB/s)",
              16 * 16384 / 1000.0 / (double)(now_ms() - t0 + 1));
        t0 = now_ms();
        for (n = 0, ok = 1; n < 50 && ok; n++) ok = pingpong(&c, 64, 0, (unsigned)n);
        CHECK(ok, "DGRAM: 50 ping-pongs of 64 B (%.0f us per round trip)",
              (now_ms() - t0) * 1000.0 / 50);
    }
    {
        /* truncation: rank 1 posts 16 bytes, rank 0 sends 100 */
        uint8_t s[100], rb[16];
        struct fi_cq_tagged_entry e;
        struct fi_cq_err_entry err;
        int got = 0;
        fill(s, sizeof(s), 5);
        if (me == 1) {
            fi_recv(c.ep, rb, sizeof(rb), NULL, c.peer, rb);
            r = wait_comp(&c, &e, &err);
            got = r == -FI_EAVAIL && err.err == FI_ETRUNC && err.olen == 84 && err.op_context == rb &&
                  check_data(rb, 16, 5);
            s[0] = (uint8_t)got;
            post_send(&c, s, 1, 0, s);
            wait_comp(&c, &e, NULL);
        } else {
            fi_recv(c.ep, rb, 1, NULL, c.peer, rb);
            post_send(&c, s, sizeof(s), 0, s);
            wait_both(&c, s, rb, NULL);
            got = rb[0] == 1;
        }
        CHECK(got, "100 B into a 16 B receive: CQ error FI_ETRUNC, olen 84, 16 bytes delivered");
    }
    {
        /* cancel a posted receive */
        char rb[8];
        struct fi_cq_tagged_entry e;
        struct fi_cq_err_entry err;
        fi_recv(c.ep, rb, sizeof(rb), NULL, c.peer, rb);
        r = (int)fi_cancel(&c.ep->fid, rb);
        int w = wait_comp(&c, &e, &err);
        CHECK(r == 0 && w == -FI_EAVAIL && err.err == FI_ECANCELED && err.op_context == rb,
              "fi_cancel of a posted receive: FI_ECANCELED in the CQ");
    }

    /* --------------------------------------- 5. a killed process's WID */
    {
        int pfd[2];
        pid_t pid;
        char ch = 0;
        struct ctx k;
        if (pipe(pfd)) return 1;
        pid = fork();
        if (pid == 0) {
            close(pfd[0]);
            if (open_ctx(&k, h, &peer_addr)) _exit(2);
            ch = 1;
            if (write(pfd[1], &ch, 1) != 1) _exit(3);
            for (;;) fi_cq_read(k.cq, NULL, 0);     /* busy with the board */
        }
        close(pfd[1]);
        r = (int)read(pfd[0], &ch, 1);
        close(pfd[0]);
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        CHECK(r == 1 && ch == 1, "a second process opened an endpoint (WID 1) and was killed");
        /* its WID must be free again: open (WID 1), close */
        pid = fork();
        if (pid == 0) {
            struct addr4 a; size_t al = sizeof(a);
            if (open_ctx(&k, h, NULL) || fi_getname(&k.ep->fid, &a, &al) || a.wid != 1) _exit(2);
            close_ctx(&k);
            _exit(0);
        }
        int st = 0;
        waitpid(pid, &st, 0);
        CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the killed process's WID 1 opens again (exit %d)",
              WIFEXITED(st) ? WEXITSTATUS(st) : -1);
        ok = pingpong(&c, 700, 0, 77);
        CHECK(ok, "WID 0 traffic goes on after the kill");
    }

    /* ------------------------------------------ 6. two per board */
    {
        pid_t pid = fork();
        int st = 0;
        if (pid == 0) {
            second_process();
        }
        ok = 1;
        for (unsigned k = 0; k < 8 && ok; k++) ok = pingpong(&c, 64 + 500 * k, 0, 500 + k);
        waitpid(pid, &st, 0);
        CHECK(ok, "WID 0 pair: 8 ping-pongs while the WID 1 pair runs");
        CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "WID 1 pair (second process per board): 8 ping-pongs (exit %d)",
              WIFEXITED(st) ? WEXITSTATUS(st) : -1);
    }
    close_ctx(&c);
    fi_freeinfo(h);

    /* --------------------------------------------- 7. ofi_rxd over us */
    h = hints_rdm();
    r = open_ctx(&c, h, &peer_addr);
    CHECK(r == 0, "ofi_rxd RDM endpoint over dimmnet2 opened, peer inserted: %s", fi_strerror(-r));
    if (r == 0) {
        size_t sizes[] = { 0, 1, 1000, 4000, 10000, 65536 };
        int all = 1;
        for (n = 0; n < 6; n++) {
            all &= pingpong(&c, sizes[n], 1, 40 + (unsigned)n);
        }
        CHECK(all, "rxd tagged ping-pong 0 B .. 64 KiB (segmented into DGRAM packets), data checked");
        uint64_t t0 = now_ms();
        all = 1;
        for (n = 0; n < 20 && all; n++) all = pingpong(&c, 256, 1, (unsigned)n);
        CHECK(all, "rxd: 20 tagged ping-pongs of 256 B (%.0f us per round trip)",
              (now_ms() - t0) * 1000.0 / 20);
        close_ctx(&c);
    } else {
        CHECK(0, "rxd ping-pong");
        CHECK(0, "rxd many");
    }
    fi_freeinfo(h);
    native_rdm("mixed");
    native_rdm("llcm");
    native_rdm("sodimm");
    tap_plan(tap_count());
    return tap_exit_code();
}
