/* SPDX-License-Identifier: MIT */
/*
 * ofi-hostile: the native RDM endpoint of the libfabric provider against
 * a misbehaving rank and a restarted one, on two nodes of a cluster
 * (after insmod + dn2-up; FI_PROVIDER_PATH names the provider).  Rank 0
 * prints TAP (tests/tap/dn2-tap.h).
 *
 *   node 0: V, a libfabric RDM endpoint (WID 0): the long-lived rank
 *   node 1: P, a libfabric RDM endpoint (WID 0), killed and started again
 *           every round; R, a rogue rank (WID 1) that speaks the
 *           provider's wire format through libdimmnet2 directly
 *
 * The rank table (DN2_RANKS, written here) lists the 4 real endpoints and
 * 66 that do not exist (70, more than the provider's old fixed table of
 * 64), as a big job's table would.  Then:
 *   1. V's AV takes the 69 other endpoints; one more, not in the table,
 *      is refused with FI_ENOSPC
 *   2. V sends one message to each of the 66 missing endpoints first,
 *      then 10 to P while P does not progress: the credits hold V back (a
 *      one-entry window with 70 senders), P gets all 10 when it wakes
 *   2b. P sends V a 32 MiB message while V may take only 12 MiB more
 *      memory (RLIMIT_AS): FI_ENOMEM for it, the next message arrives
 *   3. rounds: R sends V a credit half the sequence space ahead (a
 *      wrapped count), a credit in P's name (a forged envelope), 32 more
 *      at random in both names, a message in P's name, a
 *      message of 4 GiB - 16 (over max_msg_size), one of 512 MiB (more
 *      than the guest's memory) cut short, then a good one: V gets the
 *      good one, error completions for the other two (FI_EMSGSIZE,
 *      FI_EIO), and still sends to R and to P; then P is killed while V
 *      has a message to it in flight, a new P starts on the same {LID,
 *      WID}, and both directions carry 20 messages
 * DN2_OFI_HOSTILE_SECS=N (the soak form): rounds for N seconds instead
 * of 2.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>

#include "libdimmnet2.h"
#include "dn2fi.h"          /* the provider's wire format */
#include "../tap/dn2-tap.h"
#define OFI_DIAG_FILE stdout    /* rank 0's diagnostics go with its TAP */
#include "ofi-common.h"

#define VER      FI_VERSION(1, 17)
#define TMO_MS   15000
#define NFAKE    66
#define TABLE    "/tmp/dn2-hostile-ranks"
#define RANDOM_CREDITS 32   /* more wrapped and forged credits per round */

/* tags: V <-> P */
#define T_READY   0xaaull
#define T_GO      0xabull
#define T_SILENCE 0xa1ull
#define T_BURST   0xa2ull
#define T_GOT     0xa3ull
#define T_PING    0xa4ull
#define T_PONG    0xa5ull
#define T_DIE     0xa6ull
#define T_LOST    0xa7ull
#define T_ECHO    0xa8ull
#define T_ECHOED  0xa9ull
#define T_END     0xafull
#define T_BIGSEND 0xacull
#define T_BIGMSG  0xadull
#define T_AFTER   0xaeull
#define BIG_BYTES (32u << 20)   /* more than V's memory allows */
#define V_ROOM    (12u << 20)
/* V <-> R */
#define T_RREADY  0xbaull
#define T_RGO     0xbbull
#define T_ROUND   0xb0ull
#define T_RDATA   0xb1ull
#define T_REND    0xbfull
#define T_HUGE    0xe000ull
#define T_BIG     0xe100ull
#define T_GOOD    0xe200ull
#define T_FORGED  0xf000ull

static uint16_t lid0, lid1;

/* The real LIDs from the launcher's table, then ours: 4 real endpoints
 * and NFAKE of LIDs no board has. */
static int write_table(void)
{
    struct addr4 a0 = { 0 }, a1 = { 0 };
    FILE *f;
    int i;

    rank_addr(0, &a0);
    rank_addr(1, &a1);
    lid0 = a0.lid;
    lid1 = a1.lid;
    if (!lid0 || !lid1) return -1;
    f = fopen(TABLE ".tmp", "w");
    if (!f) return -1;
    fprintf(f, "0 %u 0\n1 %u 0\n2 %u 1\n3 %u 1\n", lid0, lid1, lid1, lid0);
    for (i = 0; i < NFAKE; i++) {
        fprintf(f, "%d %u %d\n", 4 + i, 0x2000u + (unsigned)i / 2, i & 1);
    }
    if (fclose(f) || rename(TABLE ".tmp", TABLE)) return -1;
    setenv("DN2_RANKS", TABLE, 1);
    return 0;
}

/* ---------------------------------------------------- libfabric side */

static int open_ctx(struct ctx *c)
{
    struct fi_info *h = fi_allocinfo(), *all = NULL, *i;
    int r;

    memset(c, 0, sizeof(*c));
    h->ep_attr->type = FI_EP_RDM;
    h->caps = FI_TAGGED | FI_DIRECTED_RECV | FI_SOURCE;
    h->fabric_attr->prov_name = strdup("dimmnet2");
    r = fi_getinfo(VER, NULL, NULL, 0, h, &all);
    fi_freeinfo(h);
    if (r) return r;
    for (i = all; i && strcmp(i->fabric_attr->prov_name, "dimmnet2"); i = i->next) {
    }
    c->info = i ? fi_dupinfo(i) : NULL;
    fi_freeinfo(all);
    if (!c->info) return -FI_ENODATA;
    return open_objects(c);
}

static fi_addr_t av_add(struct ctx *c, uint16_t lid, int wid, int *err)
{
    struct addr4 a = { lid, (uint8_t)wid, 0 };
    fi_addr_t fa = FI_ADDR_NOTAVAIL;
    int e = 0;

    fi_av_insert(c->av, &a, 1, &fa, FI_SYNC_ERR, &e);
    if (err) *err = e;
    return fa;
}

/* Completions that were not waited for (sends of earlier messages). */
static uint64_t stray_comps;
static uint64_t tmo_ms = TMO_MS;

/* Receive one tagged message (tag, from src) into buf: 1 with *len, or
 * -err for an error completion, or 0 on timeout. */
static int trecv(struct ctx *c, void *buf, size_t cap, fi_addr_t src, uint64_t tag,
                 uint64_t ignore, size_t *len, uint64_t *gtag, fi_addr_t *from)
{
    struct fi_cq_tagged_entry e;
    struct fi_cq_err_entry ee;
    uint64_t t0 = now_ms();
    char rc;
    ssize_t r;

    do {
        r = fi_trecv(c->ep, buf, cap, NULL, src, tag, ignore, &rc);
        if (r == -FI_EAGAIN) fi_cq_read(c->cq, &e, 0);
    } while (r == -FI_EAGAIN && now_ms() - t0 < tmo_ms);
    if (r) return 0;
    while (now_ms() - t0 < tmo_ms) {
        fi_addr_t fa = FI_ADDR_NOTAVAIL;
        r = fi_cq_readfrom(c->cq, &e, 1, &fa);
        if (r == -FI_EAVAIL) {
            memset(&ee, 0, sizeof(ee));
            fi_cq_readerr(c->cq, &ee, 0);
            if (ee.op_context == &rc) return -(ee.err ? ee.err : FI_EIO);
            stray_comps++;
            continue;
        }
        if (r != 1) continue;
        if (e.op_context != &rc) {
            stray_comps++;
            continue;
        }
        if (len) *len = e.len;
        if (gtag) *gtag = e.tag;
        if (from) *from = fa;
        return 1;
    }
    fi_cancel(&c->ep->fid, &rc);
    return 0;
}

/* Queue a tagged send (retrying -FI_EAGAIN); its completion is not
 * waited for.  0 or the error. */
static int tsend(struct ctx *c, fi_addr_t dst, const void *buf, size_t len, uint64_t tag)
{
    struct fi_cq_tagged_entry e;
    uint64_t t0 = now_ms();
    ssize_t r;

    do {
        r = fi_tsend(c->ep, buf, len, NULL, dst, tag, NULL);
        if (r == -FI_EAGAIN) fi_cq_read(c->cq, &e, 0);
    } while (r == -FI_EAGAIN && now_ms() - t0 < TMO_MS);
    if (r) {
        printf("# send of %zu bytes, tag 0x%llx: %s\n", len, (unsigned long long)tag,
                fi_strerror((int)-r));
    }
    return (int)r;
}

/* P's side of the start handshake (READY with our pid every 100 ms
 * until GO). */
static int p_handshake(struct ctx *c)
{
    struct fi_cq_tagged_entry e;
    uint64_t t0 = now_ms();
    uint32_t pid = (uint32_t)getpid();
    char b[8], rc;
    ssize_t r;

    if (fi_trecv(c->ep, b, sizeof(b), NULL, c->peer, T_GO, 0, &rc)) return 0;
    while (now_ms() - t0 < TMO_MS) {
        r = fi_tinject(c->ep, &pid, sizeof(pid), c->peer, T_READY);
        if (r && r != -FI_EAGAIN) {
            return 0;
        }
        uint64_t t1 = now_ms();
        while (now_ms() - t1 < 100) {
            if (fi_cq_read(c->cq, &e, 1) == 1 && e.op_context == &rc) return 1;
        }
    }
    return 0;
}

/* P: answer V's commands until END (exit 0) or DIE (SIGKILL, the
 * endpoint left open). */
static int run_p(int notify)
{
    struct ctx c;
    static uint8_t buf[256 << 10], out[32][4096];
    unsigned nout = 0;
    size_t len;
    uint64_t tag;
    int r, bursts = 0;

    tmo_ms = 60000;     /* V may be busy with R for a while */
    if (open_ctx(&c)) return 2;
    c.peer = av_add(&c, lid0, 0, NULL);
    if (c.peer == FI_ADDR_NOTAVAIL) return 3;
    if (notify >= 0) {
        char ch = 1;
        if (write(notify, &ch, 1) != 1) return 4;
        close(notify);
    }
    if (!p_handshake(&c)) return 5;
    for (;;) {
        r = trecv(&c, buf, sizeof(buf), c.peer, 0, ~0ull, &len, &tag, NULL);
        if (r == 0) return 6;
        if (r < 0) continue;        /* a stray (its predecessor's message) */
        switch (tag) {
        case T_SILENCE:
            usleep(1500 * 1000);    /* no progress: V's credits stop */
            break;
        case T_BURST:
            if (++bursts == 10) {
                bursts = 0;
                if (tsend(&c, c.peer, "GOT10", 6, T_GOT)) return 7;
            }
            break;
        case T_PING:
        case T_ECHO:
            /* the echo's bytes stay put until its send completes: the
             * next receive must not overwrite them */
            if (len > sizeof(out[0])) return 8;
            memcpy(out[nout % 32], buf, len);
            if (tsend(&c, c.peer, out[nout++ % 32], len, tag == T_PING ? T_PONG : T_ECHOED)) {
                return 9;
            }
            break;
        case T_BIGSEND: {
            /* a legitimate message larger than V may hold, then a small one */
            uint8_t *big = calloc(1, BIG_BYTES);
            if (!big || tsend(&c, c.peer, big, BIG_BYTES, T_BIGMSG) ||
                tsend(&c, c.peer, "AFTER", 6, T_AFTER)) {
                return 10;
            }
            for (uint64_t t0 = now_ms(); now_ms() - t0 < 60000;) {
                struct fi_cq_tagged_entry ce;
                if (fi_cq_read(c.cq, &ce, 1) == 1 && ce.len == BIG_BYTES) break;
            }
            free(big);
            break;
        }
        case T_DIE:
            raise(SIGKILL);     /* killed with the endpoint open */
            _exit(100);
        case T_END:
            /* let the last sends leave, then close */
            for (uint64_t t0 = now_ms(); now_ms() - t0 < 300;) fi_cq_read(c.cq, NULL, 0);
            close_ctx(&c);
            return 0;
        default:
            break;
        }
    }
}

/* --------------------------------------------------------- the rogue */

static dn2_t *rd;
static struct dn2_ring rring;
static unsigned r_issued, r_base;
static uint32_t r_seq;      /* R's sequence numbers to V */

/* One datagram (envelope + up to 1015 bytes) from the Write Window. */
static int raw_send(uint16_t lid, int wid, uint64_t env, const void *data, size_t len)
{
    uint8_t b[DN2FI_WW_PREFIX_MAX];
    uint64_t t0 = now_ms();

    if (len > DN2FI_INJECT) return -1;
    /* the previous LHSv2 has left (its Write Window bytes are read) */
    while (((dn2_count(rd, DN2_PC_IPUSH) - r_base) & DN2_PC_MASK) != r_issued ||
           (dn2_ctl_status(rd) & (DN2_CS_REQ_PENDING | DN2_CS_FIFO_AFULL))) {
        if (now_ms() - t0 > TMO_MS) return -1;
    }
    memcpy(b, &env, 8);
    memcpy(b + 8, data, len);
    dn2_ww_write(rd, 0, b, 8 + len);
    if (dn2_lhsv2(rd, lid, wid, 0, (uint32_t)(8 + len), 0, (uint32_t)(8 + len), 0)) return -1;
    r_issued = (r_issued + 1) & DN2_PC_MASK;
    return 0;
}

static unsigned rank_of(uint16_t lid, int wid)
{
    return ((unsigned)wid << 12) | dn2_lid_to_clid(lid);
}

/* A message of the provider's format to V as {lid, wid}: the first
 * datagram claims len (the header), carries n bytes; more datagrams of
 * n bytes follow. */
static int rogue_msg(uint16_t as_lid, int as_wid, uint64_t tag, uint32_t len,
                     size_t first, int more, size_t n)
{
    uint8_t b[DN2FI_INJECT];
    struct dn2fi_rdm_hdr h = { .tag = tag, .len = len, .data = 0 };
    unsigned rk = rank_of(as_lid, as_wid);
    int i;

    memcpy(b, &h, sizeof(h));
    fill(b + sizeof(h), first, (unsigned)tag);
    if (raw_send(lid0, 0, dn2_envelope(DN2FI_CTX_RDM_FIRST |
                                       (DN2FI_RDM_F_TAGGED << DN2FI_RDM_F_SHIFT), rk, r_seq++),
                 b, sizeof(h) + first)) {
        return -1;
    }
    for (i = 0; i < more; i++) {
        if (raw_send(lid0, 0, dn2_envelope(DN2FI_CTX_RDM_NEXT, rk, r_seq++), b, n)) return -1;
    }
    return 0;
}

/* What R threw, for the soak run's figures. */
static unsigned long n_wrapped, n_forged, n_huge, n_big;

static int rogue_round(uint32_t v_acked)
{
    uint32_t rnd[RANDOM_CREDITS];
    int i;

    /* a credit half the sequence space ahead of anything V sent us */
    if (raw_send(lid0, 0, dn2_envelope(DN2FI_CTX_RDM_CREDIT, rank_of(lid1, 1),
                                       v_acked + 0x80000000u), NULL, 0) ||
        /* the same in P's name: a forged envelope */
        raw_send(lid0, 0, dn2_envelope(DN2FI_CTX_RDM_CREDIT, rank_of(lid1, 0),
                                       v_acked + 0x7ffffff0u), NULL, 0)) {
        return -1;
    }
    n_wrapped++;
    n_forged++;
    /* more at random, in our name and in P's (far ahead of a window of
     * at most 62 datagrams but for a chance of 1 in 2^25) */
    if (getrandom(rnd, sizeof(rnd), 0) != sizeof(rnd)) return -1;
    for (i = 0; i < RANDOM_CREDITS; i++) {
        uint32_t ack = v_acked + 64 + rnd[i] % (0xffffffffu - 128);
        if (raw_send(lid0, 0, dn2_envelope(DN2FI_CTX_RDM_CREDIT, rank_of(lid1, i & 1), ack),
                     NULL, 0)) {
            return -1;
        }
        if (i & 1) {
            n_forged++;
        } else {
            n_wrapped++;
        }
    }
    /* a message in P's name (its sequence number far from P's) */
    if (rogue_msg(lid1, 0, T_FORGED, 8, 8, 0, 0)) return -1;
    /* 4 GiB - 16: over max_msg_size; 512 MiB: more than the guest has,
     * cut short by the next message; then a good one */
    if (rogue_msg(lid1, 1, T_HUGE, 0xfffffff0u, 100, 2, 900) ||
        rogue_msg(lid1, 1, T_BIG, 512u << 20, 900, 3, 900) ||
        rogue_msg(lid1, 1, T_GOOD, 8, 8, 0, 0)) {
        return -1;
    }
    n_huge++;
    n_big++;
    n_forged++;     /* the message in P's name */
    return 0;
}

/* R: drain the LH Buffer, credit V's datagrams honestly, act on V's
 * commands.  Exit 0 at END. */
static int run_r(void)
{
    unsigned amt;
    uint64_t last_ready = 0, t_idle = now_ms();
    uint32_t v_next = 0;
    int started = 0, r;

    if ((r = dn2_open(&rd, NULL))) {
        printf("# rogue: open: %s\n", dn2_strerror(r));
        return 2;
    }
    if (dn2_wid(rd) != 1) return 3;
    amt = (1 * DN2_LLCM_WID_STRIDE + DN2_LLCM_MAP_AMT) / DN2_AMT_UNIT;
    if (dn2_ring_init(rd, &rring, amt, 0, DN2FI_RING_BYTES) ||
        dn2_admin_amt(rd, lid0, 0, amt) || dn2_admin_amt(rd, lid0, 1, amt)) {
        return 4;
    }
    r_base = dn2_count(rd, DN2_PC_IPUSH);
    if (getrandom(&r_seq, sizeof(r_seq), 0) != sizeof(r_seq)) r_seq = (uint32_t)getpid();
    /* bounded: V ends the run; a silent V for 120 s ends it too */
    while (now_ms() - t_idle < 120000) {
        struct dn2_lh_msg m;
        unsigned ctx;
        if (!started && now_ms() - last_ready > 100) {
            last_ready = now_ms();
            if (rogue_msg(lid1, 1, T_RREADY, 6, 6, 0, 0)) return 5;
        }
        if (!dn2_lh_ready(rd) || dn2_lh_next(rd, &m, 0) <= 0) continue;
        if (!m.complete && dn2_lh_wait_complete(rd, &m, 5000000)) return 6;   /* 0: complete */
        t_idle = now_ms();
        ctx = m.context & DN2FI_CTX_MASK;
        /* the LLCM forms (bytes in our LLCM, only the notification
         * here) are taken the same way */
        if (ctx == DN2FI_CTX_RDM_LFIRST) ctx = DN2FI_CTX_RDM_FIRST;
        if (ctx == DN2FI_CTX_RDM_LNEXT) ctx = DN2FI_CTX_RDM_NEXT;
        if (ctx == DN2FI_CTX_RDM_FIRST || ctx == DN2FI_CTX_RDM_NEXT) {
            uint16_t slid = dn2_clid_to_lid((uint16_t)(m.rank & 0xfffu));
            int swid = (int)((m.rank >> 12) & 1u);
            v_next = m.tag + 1;
            if (raw_send(slid, swid, dn2_envelope(DN2FI_CTX_RDM_CREDIT, rank_of(lid1, 1), v_next),
                         NULL, 0)) {
                return 7;
            }
        }
        if (ctx == DN2FI_CTX_RDM_FIRST && m.size >= DN2FI_RDM_HDR) {
            struct dn2fi_rdm_hdr h;
            memcpy(&h, m.data, sizeof(h));
            if (h.tag == T_RGO) {
                started = 1;
            } else if (h.tag == T_ROUND) {
                if (rogue_round(v_next)) return 8;
            } else if (h.tag == T_REND) {
                dn2_lh_release(rd);
                dn2_close(rd);
                printf("# rogue: threw %lu wrapped credits, %lu datagrams with a forged envelope, "
                       "%lu lengths over max_msg_size, %lu beyond the guest's memory\n",
                       n_wrapped, n_forged, n_huge, n_big);
                return 0;
            }
        }
        if (m.size > DN2_LHB_DATA) dn2_ring_consume(rd, &rring, m.size - DN2_LHB_DATA);
        dn2_lh_release(rd);
    }
    return 9;
}

/* Node 1: P (restarted each time it dies on request) and R. */
static int node1(void)
{
    int pfd[2], st = 0, prc = -1, rrc = -1, restarts = 0;
    pid_t p, r;
    char ch;

    alarm(600);
    if (pipe(pfd)) return 1;
    p = fork();
    if (p == 0) {
        close(pfd[0]);
        _exit(run_p(pfd[1]));
    }
    close(pfd[1]);
    if (read(pfd[0], &ch, 1) != 1) return 2;   /* P has WID 0: R gets WID 1 */
    close(pfd[0]);
    r = fork();
    if (r == 0) {
        _exit(run_r());
    }
    for (;;) {
        pid_t w = wait(&st);
        if (w < 0) break;
        int code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
        if (w == r) {
            rrc = code;
        } else if (code == 128 + SIGKILL) {
            restarts++;
            p = fork();
            if (p == 0) {
                _exit(run_p(-1));
            }
        } else {
            prc = code;
        }
    }
    printf("# node 1: P exit %d after %d restarts, R exit %d\n", prc, restarts, rrc);
    return prc == 0 && rrc == 0 ? 0 : 1;
}

/* ----------------------------------------------------------- node 0 */

struct tally {
    int rounds, good, huge_err, big_err, forged, sent_r, pong, restarted, echoed;
    int huge_code, big_code;
    uint32_t p_pid;         /* the current P's */
};

/* The READY of a P other than the last one (older READYs are skipped). */
static int new_p_ready(struct ctx *c, fi_addr_t fp, struct tally *t)
{
    uint32_t pid;
    size_t len;
    uint64_t t0 = now_ms();

    while (now_ms() - t0 < TMO_MS) {
        if (trecv(c, &pid, sizeof(pid), fp, T_READY, 0, &len, NULL, NULL) != 1) return 0;
        if (len == sizeof(pid) && pid != t->p_pid) {
            t->p_pid = pid;
            return 1;
        }
    }
    return 0;
}

static int v_round(struct ctx *c, fi_addr_t fp, fi_addr_t fr, int k, struct tally *t,
                   uint8_t *buf, uint8_t *sb)
{
    size_t len;
    fi_addr_t from;
    int r, n;

    if (tsend(c, fr, &k, sizeof(k), T_ROUND)) return 0;
    /* the good message after the bad ones: the receive path goes on */
    r = trecv(c, buf, 64, fr, T_GOOD, 0, &len, NULL, NULL);
    if (r != 1 || len != 8 || !check_data(buf, 8, (unsigned)T_GOOD)) {
        printf("# round %d: good message: %d\n", k, r);
        return 0;
    }
    t->good++;
    r = trecv(c, buf, 64, fr, T_HUGE, 0, &len, NULL, NULL);
    t->huge_code = r;
    t->huge_err += r == -FI_EMSGSIZE;
    r = trecv(c, buf, 64, fr, T_BIG, 0, &len, NULL, NULL);
    t->big_code = r;
    t->big_err += r == -FI_EIO || r == -FI_ENOMEM;
    r = trecv(c, buf, 64, FI_ADDR_UNSPEC, T_FORGED, 0, &len, NULL, &from);
    t->forged += r == 1;
    /* V still sends, to R (whose credits were wrapped) and to P (whose
     * name was forged) */
    fill(sb, 3000, (unsigned)k);
    if (tsend(c, fr, sb, 3000, T_RDATA)) return 0;
    t->sent_r++;
    /* (each send's bytes stay untouched until it completes) */
    fill(sb + 4096, 2000, (unsigned)k + 7);
    if (tsend(c, fp, sb + 4096, 2000, T_PING)) return 0;
    r = trecv(c, buf, 4096, fp, T_PONG, 0, &len, NULL, NULL);
    if (r != 1 || len != 2000 || !check_data(buf, 2000, (unsigned)k + 7)) {
        printf("# round %d: no pong from P (%d): V's sends are held\n", k, r);
        return 0;
    }
    t->pong++;
    /* P dies with V's 100 KB message to it in flight; a new P on the
     * same {LID, WID} */
    if (tsend(c, fp, "DIE", 4, T_DIE) || tsend(c, fp, sb + 8192, 100000, T_LOST)) return 0;
    r = new_p_ready(c, fp, t);
    if (r != 1 || tsend(c, fp, "GO", 3, T_GO)) {
        printf("# round %d: the new P did not start (%d)\n", k, r);
        return 0;
    }
    t->restarted++;
    for (n = 0; n < 20; n++) {
        uint8_t *eb = sb + 110000 + (size_t)n * 1500;
        fill(eb, 1500, (unsigned)(k * 100 + n));
        if (tsend(c, fp, eb, 1500, T_ECHO)) return 0;
    }
    for (n = 0; n < 20; n++) {
        r = trecv(c, buf, 4096, fp, T_ECHOED, 0, &len, NULL, NULL);
        if (r != 1 || len != 1500 || !check_data(buf, 1500, (unsigned)(k * 100 + n))) {
            printf("# round %d: echo %d from the new P: %d\n", k, n, r);
            return 0;
        }
    }
    t->echoed++;
    t->rounds++;
    return 1;
}

static int node0(void)
{
    struct ctx c;
    struct tally t = { 0 };
    static uint8_t buf[256 << 10], sb[160 << 10];
    fi_addr_t fp, fr, fake[NFAKE];
    int i, r, errs = 0, e, ok;
    const char *secs_s = getenv("DN2_OFI_HOSTILE_SECS");
    long secs = secs_s ? atol(secs_s) : 0;
    uint64_t t0;
    size_t len;

    r = open_ctx(&c);
    CHECK(r == 0, "V: native RDM endpoint opened with a 70-endpoint rank table: %s", fi_strerror(-r));
    if (r) return 1;
    /* 1. the AV: the table's other 69 endpoints, then one more */
    fp = av_add(&c, lid1, 0, &e);
    errs += e != 0;
    fr = av_add(&c, lid1, 1, &e);
    errs += e != 0;
    av_add(&c, lid0, 1, &e);
    errs += e != 0;
    av_add(&c, lid0, 0, &e);        /* ourselves: MPI inserts every rank */
    errs += e != 0;
    for (i = 0; i < NFAKE; i++) {
        fake[i] = av_add(&c, (uint16_t)(0x2000 + i / 2), i & 1, &e);
        errs += e != 0;
    }
    CHECK(errs == 0 && fp != FI_ADDR_NOTAVAIL && fr != FI_ADDR_NOTAVAIL,
          "V: AV took the table's 70 endpoints (%d refused)", errs);
    {
        fi_addr_t x = av_add(&c, 0x3000, 0, &e);
        CHECK(x == FI_ADDR_NOTAVAIL && e == FI_ENOSPC,
              "V: a 71st endpoint, beyond the table, refused with FI_ENOSPC (got %s)",
              x == FI_ADDR_NOTAVAIL ? fi_strerror(e) : "accepted");
    }
    /* 2 (first part). V sends to the 66 missing endpoints before it
     * sends to P (as a job's first messages may go anywhere): with a
     * table of 64, P would get no slot and no flow control */
    for (i = 0; i < NFAKE; i++) {
        tsend(&c, fake[i], "x", 1, 0x77);
    }
    /* start: P, then R */
    c.peer = fp;
    ok = new_p_ready(&c, fp, &t) && !tsend(&c, fp, "GO", 3, T_GO);
    r = trecv(&c, buf, 64, fr, T_RREADY, 0, &len, NULL, NULL);
    ok = ok && r == 1 && !tsend(&c, fr, "GO", 3, T_RGO);
    CHECK(ok, "V: P (libfabric, WID 0) and R (rogue, WID 1) on node 1 started");
    if (!ok) return 1;

    /* 2. flow control for P, the 67th endpoint V sent to */
    if (tsend(&c, fp, "SILENCE", 8, T_SILENCE)) return 1;
    {
        struct fi_cq_tagged_entry ce;
        char ctx[10];
        int done = 0;
        usleep(200 * 1000);
        for (i = 0; i < 10; i++) {
            while (fi_tsend(c.ep, "burst!!", 8, NULL, fp, T_BURST, &ctx[i]) == -FI_EAGAIN) {
                fi_cq_read(c.cq, &ce, 0);
            }
        }
        t0 = now_ms();
        while (now_ms() - t0 < 800) {
            if (fi_cq_read(c.cq, &ce, 1) == 1 && ce.op_context >= (void *)ctx &&
                ce.op_context < (void *)(ctx + 10)) {
                done++;
            }
        }
        CHECK(done <= 3, "V: 10 sends to P (the 67th endpoint V sent to) while P does not "
              "progress: %d left in 0.8 s (flow control: a 1-entry window)", done);
        r = trecv(&c, buf, 64, fp, T_GOT, 0, &len, NULL, NULL);
        CHECK(r == 1, "V: P got all 10 when it woke up");
    }

    /* 2b. a message of 32 MiB while V may take only 12 MiB more memory
     * (RLIMIT_AS): it fails with FI_ENOMEM, its datagrams are taken and
     * dropped, and the message after it arrives */
    {
        struct rlimit old, lim;
        long pages = 0;
        FILE *f = fopen("/proc/self/statm", "r");
        if (!f || fscanf(f, "%ld", &pages) != 1 || getrlimit(RLIMIT_AS, &old)) return 1;
        fclose(f);
        lim = old;
        lim.rlim_cur = (rlim_t)pages * (rlim_t)sysconf(_SC_PAGESIZE) + V_ROOM;
        ok = !setrlimit(RLIMIT_AS, &lim);
        t0 = now_ms();
        ok = ok && !tsend(&c, fp, "BIG", 4, T_BIGSEND);
        tmo_ms = 90000;
        r = ok ? trecv(&c, buf, 64, fp, T_AFTER, 0, &len, NULL, NULL) : 0;
        tmo_ms = TMO_MS;
        CHECK(r == 1, "V: with 12 MiB of memory left, a 32 MiB unexpected message from P, then a "
              "small one: the small one arrives (%.1f s)", (now_ms() - t0) / 1000.0);
        r = trecv(&c, buf, 64, fp, T_BIGMSG, 0, &len, NULL, NULL);
        CHECK(r == -FI_ENOMEM, "V: the 32 MiB message's receive completes with FI_ENOMEM (%d)", r);
        setrlimit(RLIMIT_AS, &old);
    }

    /* 3. rounds */
    t0 = now_ms();
    for (i = 0; secs ? (now_ms() - t0 < (uint64_t)secs * 1000) : i < 2;) {
        i++;
        if (!v_round(&c, fp, fr, i, &t, buf, sb)) break;
    }
    CHECK(t.rounds == i && t.rounds > 0, "V: %d rounds of rogue traffic and restarts of P in %.1f s",
          t.rounds, (now_ms() - t0) / 1000.0);
    CHECK(t.good == i, "V: after a wrapped credit, a forged credit, a 4 GiB and a 512 MiB "
          "length, the next message arrived (%d of %d)", t.good, i);
    CHECK(t.huge_err == i, "V: 4 GiB - 16 bytes (over max_msg_size): an FI_EMSGSIZE error "
          "completion (%d of %d; last %d)", t.huge_err, i, t.huge_code);
    CHECK(t.big_err == i, "V: 512 MiB (beyond the guest's memory) cut short: an FI_EIO error "
          "completion (%d of %d; last %d)", t.big_err, i, t.big_code);
    CHECK(t.forged == i, "V: a message with a forged envelope is delivered like any other "
          "(ranks of a job are trusted) (%d of %d)", t.forged, i);
    CHECK(t.pong == i && t.sent_r == i, "V: still sends to R and to P after their "
          "wrapped and forged credits (%d of %d)", t.pong, i);
    CHECK(t.echoed == i && t.restarted == i, "V: after P is killed with a message in "
          "flight and starts again on its {LID, WID}, 20 messages each way (%d of %d)",
          t.echoed, i);
    tsend(&c, fr, "END", 4, T_REND);
    tsend(&c, fp, "END", 4, T_END);
    for (t0 = now_ms(); now_ms() - t0 < 1000;) fi_cq_read(c.cq, NULL, 0);
    close_ctx(&c);
    return 0;
}

int main(void)
{
    const char *rk = getenv("DN2_RANK");
    int rc;

    me = rk ? atoi(rk) : 0;
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (write_table()) {
        printf("1..1\nnot ok 1 - no rank table with ranks 0 and 1 (DN2_RANKS)\n");
        return 1;
    }
    if (geteuid() == 0 && (setgid(65534) || setuid(65534))) {
        perror("setuid");
        return 1;
    }
    if (me == 1) {
        return node1();
    }
    if (me != 0) return 0;
    rc = node0();
    tap_plan(tap_count());
    return rc ? 1 : tap_exit_code();
}
