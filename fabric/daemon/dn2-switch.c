/* SPDX-License-Identifier: MIT */
/*
 * dn2-switch: the DIMMnet-2 fabric switch and subnet manager.
 *
 *   dn2-switch --listen ADDR:PORT [options]    run the switch
 *   dn2-switch --stats ADDR:PORT               print a running switch's ports
 *
 * The protocol logic is the library's switch core (fabric/dn2fab-sw.c); this
 * file is options, the GLib main loop, the UDP socket, the pcap writer and the
 * statistics client.  docs/fabric.md describes everything.
 */
#define _GNU_SOURCE 1
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <glib.h>
#include <glib-unix.h>

#include "dn2fab.h"
#include "dn2fab-batch.h"
#include "dn2fab-hmac.h"
#include "dn2fab-shm.h"
#include "dn2fab-sw.h"

#define PCAP_LINKTYPE_USER0 147
#define CAP_HDR_LEN 16
#define EXIT_USAGE 2
#define NS_PER_S ((uint64_t)1000000000)
#define RX_BUF_LEN (DN2F_DGRAM_MAX + 1)     /* one more: a longer datagram fails validation */
#define RX_ROUNDS 16                        /* recvmmsg() batches per wakeup at most */
/* The socket's receive buffer: at 32 boards through the switch on 2 CPUs,
 * 4 MiB (a common net.core.rmem_max) overflowed while the switch waited
 * for a CPU (55 000 datagrams dropped in 5 s, 80 % of the packets resent);
 * 64 MiB dropped a tenth of that (docs/benchmarks.md, "Scale curve"). */
#define DEFAULT_RCVBUF (64 << 20)

struct ctx {
    int fd;
    struct dn2f_sw *sw;
    GMainLoop *loop;
    GSource *timer;
    FILE *pcap;
    char *pcap_path;
    bool quiet;
    uint64_t pcap_records;
    uint64_t send_errors;
    /* one input batch: recvmmsg() into rbuf (DN2F_RX_BATCH x RX_BUF_LEN) */
    uint8_t *rbuf;
    struct mmsghdr rmsgs[DN2F_RX_BATCH];
    struct iovec riov[DN2F_RX_BATCH];
    struct sockaddr_storage rfrom[DN2F_RX_BATCH];
    /* what the switch sends while it handles a batch, sent at its end */
    struct dn2f_txbatch tx;
    bool batching;
    uint64_t armed;             /* the deadline the timer is set for */
    /* virtual time: the progress line's rates */
    bool vt;
    uint64_t vt_last_t, vt_last_reports, vt_last_grants;
};

static const char *prog = "dn2-switch";
static uint8_t *g_secret;
static size_t g_secret_len;

/* The cluster secret from a file: refused if group/world-readable (it is a
 * key: chmod 600), empty, or over 4 KiB; one trailing newline stripped. */
static void read_secret(const char *path)
{
    struct stat st;
    FILE *f = fopen(path, "rb");
    size_t n;

    if (!f || fstat(fileno(f), &st) != 0) {
        fprintf(stderr, "%s: --secret-file %s: %s\n", prog, path, strerror(errno));
        exit(1);
    }
    if (st.st_mode & 077) {
        fprintf(stderr, "%s: --secret-file %s: permissions %04o are too open (group or "
                "others may read it): chmod 600 %s\n", prog, path,
                (unsigned)(st.st_mode & 07777), path);
        exit(1);
    }
    g_secret = malloc(4097);
    n = g_secret ? fread(g_secret, 1, 4097, f) : 0;
    fclose(f);
    if (n > 4096) {
        fprintf(stderr, "%s: --secret-file %s: longer than 4096 bytes\n", prog, path);
        exit(1);
    }
    if (n && g_secret[n - 1] == '\n') {
        n--;
        if (n && g_secret[n - 1] == '\r') {
            n--;
        }
    }
    if (!n) {
        fprintf(stderr, "%s: --secret-file %s: empty\n", prog, path);
        exit(1);
    }
    if (n < 16) {
        fprintf(stderr, "%s: warning: --secret-file %s: only %zu bytes; use 16 or more "
                "random bytes\n", prog, path, n);
    }
    g_secret_len = n;
}

static void usage(FILE *f)
{
    fprintf(f,
"usage: %s --listen ADDR:PORT [options]\n"
"       %s --stats ADDR:PORT\n"
"\n"
"DIMMnet-2 fabric switch and subnet manager (docs/fabric.md).\n"
"\n"
"  --listen ADDR:PORT   UDP address to serve (IPv4 1.2.3.4:P or IPv6 [::1]:P);\n"
"                       port 0 picks a free port (printed on stdout)\n"
"  --route MODE         switch: all traffic through the switch;\n"
"                       direct: unicast board to board (default, unless\n"
"                       --pcap or a fault option is given: then switch)\n"
"  --mcast CLID=LID,... static multicast group (CLID 0xc00..0xffe, member\n"
"                       LIDs); repeatable.  Boards may also join at run time\n"
"  --pcap FILE          capture every datagram (LINKTYPE_USER0 = 147)\n"
"  --drop P             drop a fraction P (0..1) of data datagrams\n"
"  --dup P              duplicate a fraction P\n"
"  --reorder P          hold back a fraction P behind the next datagram\n"
"  --delay-us N         delay datagrams by N microseconds ...\n"
"  --delay-frac P       ... a fraction P of them (default 1)\n"
"  --seed S             fault injection seed (default 1): same seed, same\n"
"                       decisions for the same sequence of datagrams\n"
"  --timeout-ms N       a silent board is gone after N ms (default 3000)\n"
"  --rcvbuf BYTES       the socket's receive buffer (default 64 MiB: what many\n"
"                       boards send while the switch waits for a CPU); above\n"
"                       net.core.rmem_max only with CAP_NET_ADMIN (root)\n"
"  --max-ports-per-host N  live ports one host address may have (default 256,\n"
"                       0 = no limit)\n"
"  --secret-file F      cluster secret (docs/security.md): the file's bytes,\n"
"                       one trailing newline stripped; the file must not be\n"
"                       readable by group or others.  Also for --stats\n"
"  --virtual-time       lock-step virtual time: answer the boards' VT_REPORTs\n"
"                       with VT_GRANTs (docs/fabric.md \"Virtual time\")\n"
"  --vt-boards N        grant 0 to every board until N boards are up (default 1)\n"
"  --vt-lookahead NS    the lookahead L in ns (default 1000): at most the boards'\n"
"                       modelled packet latency (vt-latency-ns)\n"
"  --vt-quantum NS      round virtual delivery times up to multiples of NS\n"
"                       (default 0 = exact)\n"
"  --vt-progress S      a progress line on stderr every S seconds (default 5, 0 = off)\n"
"  --vt-stall S         warn about a board silent for S seconds while others wait\n"
"                       on it (default 5, 0 = never)\n"
"  --vt-sync udp|shm    udp (default): the boards report to this switch, which\n"
"                       grants; shm: the boards of this host keep the lock-step\n"
"                       in a sync domain in shared memory (--vt-shm), which\n"
"                       the switch creates and then leaves to them (no reports\n"
"                       or grants here; --vt-progress and --vt-stall do nothing)\n"
"  --vt-shm PATH        with --vt-sync shm: the domain's file, created before the\n"
"                       switch announces its port: --vt-boards members (the board\n"
"                       of CLID c is member c - 1), --vt-lookahead, --vt-quantum\n"
"  --ready-file F       write the bound port to F once serving\n"
"  --quiet              no log on stderr\n"
"  --stats ADDR:PORT    ask a running switch for its port table and exit\n"
"  -h, --help           this text\n",
            prog, prog);
}

static __attribute__((noreturn)) void bad_arg(const char *fmt, const char *arg)
{
    fprintf(stderr, "%s: ", prog);
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\n");
    usage(stderr);
    exit(EXIT_USAGE);
}

static double parse_frac(const char *opt, const char *s)
{
    char *end;
    double v;
    errno = 0;
    v = strtod(s, &end);
    if (errno || end == s || *end || !isfinite(v) || v < 0 || v > 1) {
        fprintf(stderr, "%s: %s wants a fraction between 0 and 1, not '%s'\n", prog, opt, s);
        usage(stderr);
        exit(EXIT_USAGE);
    }
    return v;
}

static uint64_t parse_u64(const char *opt, const char *s, uint64_t max)
{
    char *end;
    unsigned long long v;
    if (!*s || *s == '-' || *s == '+') {
        goto bad;
    }
    errno = 0;
    v = strtoull(s, &end, 0);
    if (errno || *end || v > max) {
        goto bad;
    }
    return v;
bad:
    fprintf(stderr, "%s: %s wants a number up to %llu, not '%s'\n", prog, opt,
            (unsigned long long)max, s);
    usage(stderr);
    exit(EXIT_USAGE);
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static uint64_t cb_now(void *opaque)
{
    (void)opaque;
    return now_ns();
}

static int cb_send(void *opaque, const struct dn2f_addr *to, const void *buf, size_t len)
{
    struct ctx *c = opaque;
    ssize_t n;
    if (c->batching) {
        /* a datagram forwarded as received stays in rbuf until the flush */
        uintptr_t p = (uintptr_t)buf, r = (uintptr_t)c->rbuf;
        bool stable = p >= r && p + len <= r + (size_t)DN2F_RX_BATCH * RX_BUF_LEN;
        dn2f_txbatch_add(&c->tx, to, buf, len, stable);
        return 0;
    }
    n = sendto(c->fd, buf, len, 0, &to->u.sa, to->len);
    if (n < 0) {
        c->send_errors++;
        return -errno;
    }
    return 0;
}

static void cb_log(void *opaque, const char *msg)
{
    struct ctx *c = opaque;
    if (!c->quiet) {
        fprintf(stderr, "%s: %s\n", prog, msg);
    }
}

static void put16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); }
static void put32(uint8_t *p, uint32_t v) { put16(p, (uint16_t)v); put16(p + 2, (uint16_t)(v >> 16)); }

static void cb_capture(void *opaque, unsigned event, unsigned flags, unsigned reason,
                       uint16_t in_lid, uint16_t out_lid, const void *buf, size_t len)
{
    struct ctx *c = opaque;
    struct timespec ts;
    uint8_t rec[16 + CAP_HDR_LEN];

    if (!c->pcap) {
        return;
    }
    clock_gettime(CLOCK_REALTIME, &ts);
    put32(rec, (uint32_t)ts.tv_sec);
    put32(rec + 4, (uint32_t)(ts.tv_nsec / 1000));
    put32(rec + 8, (uint32_t)(CAP_HDR_LEN + len));
    put32(rec + 12, (uint32_t)(CAP_HDR_LEN + len));
    /* the capture pseudo-header (docs/fabric.md "pcap records") */
    memset(rec + 16, 0, CAP_HDR_LEN);
    rec[16] = 1;                        /* version */
    rec[17] = (uint8_t)event;
    rec[18] = (uint8_t)flags;
    put16(rec + 20, in_lid);
    put16(rec + 22, out_lid);
    put16(rec + 24, (uint16_t)reason);
    put32(rec + 28, (uint32_t)len);
    if (fwrite(rec, sizeof(rec), 1, c->pcap) != 1 || (len && fwrite(buf, len, 1, c->pcap) != 1)) {
        fprintf(stderr, "%s: writing %s: %s (capture stopped)\n", prog, c->pcap_path,
                strerror(errno));
        fclose(c->pcap);
        c->pcap = NULL;
        return;
    }
    c->pcap_records++;
}

static FILE *pcap_open(const char *path)
{
    uint8_t h[24];
    FILE *f = fopen(path, "wb");
    if (!f) {
        return NULL;
    }
    setvbuf(f, NULL, _IOFBF, 1 << 20);
    put32(h, 0xa1b2c3d4u);              /* microsecond timestamps */
    put16(h + 4, 2);
    put16(h + 6, 4);
    put32(h + 8, 0);
    put32(h + 12, 0);
    put32(h + 16, 262144);              /* snaplen */
    put32(h + 20, PCAP_LINKTYPE_USER0);
    if (fwrite(h, sizeof(h), 1, f) != 1) {
        fclose(f);
        return NULL;
    }
    return f;
}

/* The receive buffer: past net.core.rmem_max when privileged; a warning
 * when the host gave less than --rcvbuf asked. */
static void set_rcvbuf(int fd, int want, bool warn)
{
    int got = 0;
    socklen_t l = sizeof(got);
    if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &want, sizeof(want)) < 0) {
        (void)setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &want, sizeof(want));
    }
    /* Linux reports twice the size asked (its bookkeeping overhead) */
    if (warn && getsockopt(fd, SOL_SOCKET, SO_RCVBUF, &got, &l) == 0 && got / 2 < want) {
        fprintf(stderr, "%s: warning: receive buffer %d KiB, not the %d KiB asked "
                "(net.core.rmem_max; more needs CAP_NET_ADMIN)\n", prog, got / 2 / 1024,
                want / 1024);
    }
}

/* ------------------------------------------------------------ main loop */
static gboolean timer_dispatch(GSource *src, GSourceFunc cb, gpointer data)
{
    (void)src;
    return cb(data);
}

static GSourceFuncs timer_funcs = {
    .dispatch = timer_dispatch,
};

static void rearm(struct ctx *c)
{
    uint64_t d = dn2f_sw_next_deadline(c->sw), t;
    gint64 mono_us, at;
    if (d == c->armed) {
        return;                 /* still set for that deadline */
    }
    c->armed = d;
    t = now_ns();
    mono_us = g_get_monotonic_time();
    /* deadline in our CLOCK_MONOTONIC ns -> GLib's monotonic us, rounded up */
    at = d <= t ? mono_us : mono_us + (gint64)((d - t + 999) / 1000);
    g_source_set_ready_time(c->timer, at);
}

/* The switch's timers, if one is due, with what they send batched. */
static void tick_batched(struct ctx *c)
{
    if (dn2f_sw_next_deadline(c->sw) <= now_ns()) {
        c->batching = true;
        dn2f_sw_tick(c->sw);
        dn2f_txbatch_flush(&c->tx);
        c->batching = false;
    }
    rearm(c);
}

static gboolean on_timer(gpointer data)
{
    struct ctx *c = data;
    c->armed = 0;               /* the source fired: set it again */
    tick_batched(c);
    return G_SOURCE_CONTINUE;
}

/* Up to RX_ROUNDS batches of DN2F_RX_BATCH datagrams per wakeup.  What one
 * batch makes the switch send leaves (sendmmsg) before the next batch is
 * read: no datagram waits beyond the end of the batch it came in. */
static gboolean on_readable(gint fd, GIOCondition cond, gpointer data)
{
    struct ctx *c = data;
    unsigned round, i;
    (void)cond;
    for (round = 0; round < RX_ROUNDS; round++) {
        int n;
        for (i = 0; i < DN2F_RX_BATCH; i++) {
            c->rmsgs[i].msg_hdr.msg_namelen = sizeof(c->rfrom[i]);
            c->rmsgs[i].msg_hdr.msg_flags = 0;
            c->rmsgs[i].msg_len = 0;
        }
        n = recvmmsg(fd, c->rmsgs, DN2F_RX_BATCH, MSG_TRUNC | MSG_DONTWAIT, NULL);
        if (n <= 0) {
            break;
        }
        c->batching = true;
        for (i = 0; i < (unsigned)n; i++) {
            struct dn2f_addr from;
            size_t len = c->rmsgs[i].msg_len;
            dn2f_addr_from_sa(&from, (struct sockaddr *)&c->rfrom[i],
                              c->rmsgs[i].msg_hdr.msg_namelen);
            if (len > RX_BUF_LEN) {
                len = RX_BUF_LEN;       /* truncated: fails validation */
            }
            dn2f_sw_input(c->sw, &from, c->riov[i].iov_base, len);
        }
        dn2f_txbatch_flush(&c->tx);
        c->batching = false;
        if (n < DN2F_RX_BATCH) {
            break;
        }
    }
    tick_batched(c);
    return G_SOURCE_CONTINUE;
}

static gboolean on_flush(gpointer data)
{
    struct ctx *c = data;
    if (c->pcap) {
        fflush(c->pcap);
    }
    return G_SOURCE_CONTINUE;
}

/* "vt: cluster at 0.012345678 s (slowest LID 0x0002 guid 2 127.0.0.1:4567),
 * 1234 reports/s, 1234 grants/s" */
static gboolean on_vt_progress(gpointer data)
{
    struct ctx *c = data;
    struct dn2f_sw_vt_stats vs;
    struct dn2f_portstat ps;
    uint64_t t = now_ns();
    double dt = (double)(t - c->vt_last_t) / 1e9;
    char who[160], a[80];
    unsigned i;

    dn2f_sw_vt_stats(c->sw, &vs);
    snprintf(who, sizeof(who), "no board");
    for (i = 0; vs.slowest_lid && dn2f_sw_port(c->sw, i, &ps); i++) {
        if (ps.lid == vs.slowest_lid) {
            snprintf(who, sizeof(who), "slowest LID 0x%04x guid %" PRIu64 " %s", ps.lid,
                     ps.guid, dn2f_addr_str(&ps.addr, a, sizeof(a)));
            break;
        }
    }
    if (!c->quiet && dt > 0) {
        fprintf(stderr, "vt: cluster at %" PRIu64 ".%09" PRIu64 " s (%s), %.0f reports/s, "
                "%.0f grants/s%s\n", vs.slowest / NS_PER_S, vs.slowest % NS_PER_S,
                who, (double)(vs.reports - c->vt_last_reports) / dt,
                (double)(vs.grants - c->vt_last_grants) / dt,
                vs.started ? "" : " (waiting for the boards to come up)");
    }
    c->vt_last_t = t;
    c->vt_last_reports = vs.reports;
    c->vt_last_grants = vs.grants;
    return G_SOURCE_CONTINUE;
}

static gboolean on_signal(gpointer data)
{
    struct ctx *c = data;
    g_main_loop_quit(c->loop);
    return G_SOURCE_REMOVE;
}

static int write_ready_file(const char *path, unsigned port)
{
    char tmp[4096];
    FILE *f;
    if (snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= (int)sizeof(tmp)) {
        return -1;
    }
    f = fopen(tmp, "w");
    if (!f) {
        return -1;
    }
    fprintf(f, "%u\n", port);
    if (fclose(f) != 0 || rename(tmp, path) != 0) {
        return -1;
    }
    return 0;
}

/* ------------------------------------------------------------ stats client */
static int stats_client(const char *target)
{
    struct dn2f_addr sw, local;
    int fd, attempt;
    uint32_t cookie = (uint32_t)dn2f_random_u64();
    struct dn2f_hmac_key kctl;
    uint8_t kseal[DN2F_SHA256_LEN];
    uint8_t *buf = malloc(DN2F_DGRAM_MAX + 1);
    uint8_t have[DN2F_ROUTES_MAX_CHUNKS];
    unsigned nchunks = 0, got = 0;
    struct dn2f_portstat *ports = calloc(DN2F_NUM_CLID, sizeof(*ports));
    unsigned nports = 0, i;
    struct dn2f_swsummary sum;
    char a[80];

    if (!buf || !ports) {
        fprintf(stderr, "%s: out of memory\n", prog);
        return 1;
    }
    memset(have, 0, sizeof(have));
    memset(&sum, 0, sizeof(sum));
    if (g_secret) {
        dn2f_secret_keys(g_secret, g_secret_len, &kctl, kseal);
    }
    if (dn2f_addr_parse(&sw, target) < 0 || dn2f_addr_port(&sw) == 0) {
        bad_arg("--stats: bad address '%s' (want HOST:PORT)", target);
    }
    memset(&local, 0, sizeof(local));
    local.u.sa.sa_family = sw.u.sa.sa_family;
    local.len = sw.len;
    fd = dn2f_udp_open(&local, 1 << 20);
    if (fd < 0) {
        fprintf(stderr, "%s: socket: %s\n", prog, strerror(-fd));
        return 1;
    }
    /* One padded request per chunk (the switch answers each with that chunk
     * only): chunk 0 first, which tells how many there are, then the rest. */
    for (attempt = 0; attempt < 6 && (!nchunks || got < nchunks); attempt++) {
        uint64_t until = now_ns() + 500000000ULL;
        unsigned c, want = nchunks ? nchunks : 1;
        for (c = 0; c < want; c++) {
            uint8_t req[DN2F_STATS_REQ_MIN];
            struct dn2f_wbuf w;
            if (have[c]) {
                continue;
            }
            dn2f_wbuf_init(&w, req, sizeof(req));
            dn2f_put_hdr(&w, DN2F_T_STATS_REQ, 0, 0, 0, 0, 0);
            dn2f_put_stats_req(&w, cookie, (uint16_t)c,
                               DN2F_STATS_REQ_MIN - (g_secret ? DN2F_MAC_LEN : 0));
            if (sendto(fd, req, g_secret ? dn2f_finish_mac(&w, &kctl) : dn2f_finish(&w), 0,
                       &sw.u.sa, sw.len) < 0) {
                fprintf(stderr, "%s: send to %s: %s\n", prog, target, strerror(errno));
                close(fd);
                return 1;
            }
        }
        while ((!nchunks || got < nchunks) && now_ns() < until) {
            struct pollfd pfd = { .fd = fd, .events = POLLIN };
            struct sockaddr_storage ss;
            socklen_t sl = sizeof(ss);
            struct dn2f_addr from;
            struct dn2f_msg m;
            struct dn2f_iter it;
            struct dn2f_portstat ps;
            ssize_t n;
            if (poll(&pfd, 1, (int)((until - now_ns()) / 1000000) + 1) <= 0) {
                continue;
            }
            n = recvfrom(fd, buf, DN2F_DGRAM_MAX + 1, 0, (struct sockaddr *)&ss, &sl);
            if (n < 0) {
                continue;
            }
            dn2f_addr_from_sa(&from, (struct sockaddr *)&ss, sl);
            if (!dn2f_addr_equal(&from, &sw) || dn2f_decode(buf, (size_t)n, &m) != 0 ||
                m.h.type != DN2F_T_STATS_RESP || m.u.stats.cookie != cookie ||
                (g_secret && !dn2f_mac_ok(buf, &m, &kctl))) {
                continue;
            }
            if (nchunks && m.u.stats.nchunks != nchunks) {
                continue;
            }
            nchunks = m.u.stats.nchunks;
            if (have[m.u.stats.chunk]) {
                continue;
            }
            have[m.u.stats.chunk] = 1;
            got++;
            if (m.u.stats.chunk == 0) {
                sum = m.u.stats.sum;
            }
            if (got < nchunks && attempt == 0 && m.u.stats.chunk == 0) {
                break;          /* now ask for the others */
            }
            dn2f_stats_iter(&m, &it);
            while (dn2f_stats_next(&it, &ps) && nports < DN2F_NUM_CLID) {
                ports[nports++] = ps;
            }
        }
    }
    close(fd);
    free(buf);
    if (!nchunks || got < nchunks) {
        fprintf(stderr, "%s: no answer from a switch at %s (a switch answers only its own host "
                "and its members' hosts)\n", prog, target);
        free(ports);
        return 1;
    }
    printf("switch %s: route=%s routes_gen=%" PRIu32 " uptime_ms=%" PRIu64
           " datagrams_in=%" PRIu64 " forwarded=%" PRIu64 " bad=%" PRIu64
           " injected_drop=%" PRIu64 " injected_dup=%" PRIu64
           " injected_reorder=%" PRIu64 " injected_delay=%" PRIu64 "\n",
           target, sum.route_mode == DN2F_ROUTE_SWITCH ? "switch" : "direct",
           sum.routes_gen, sum.uptime_ms, sum.dgrams_in, sum.dgrams_fwd, sum.bad,
           sum.inj_drop, sum.inj_dup, sum.inj_reorder, sum.inj_delay);
    if (sum.vt) {
        printf("virtual-time boards=%" PRIu32 " reports=%" PRIu64 " grants=%" PRIu64
               " cluster_time=%" PRIu64 ".%09" PRIu64 "\n", sum.vt_boards, sum.vt_reports,
               sum.vt_grants, sum.vt_time / NS_PER_S, sum.vt_time % NS_PER_S);
    }
    printf("%-6s %-6s %-18s %-24s %10s %12s %10s %12s %8s %8s\n", "LID", "STATE", "GUID",
           "ADDRESS", "RX_PKTS", "RX_BYTES", "TX_PKTS", "TX_BYTES", "DROPS", "RETX");
    for (i = 0; i < nports; i++) {
        struct dn2f_portstat *p = &ports[i];
        printf("0x%04x %-6s 0x%016" PRIx64 " %-24s %10" PRIu64 " %12" PRIu64 " %10" PRIu64
               " %12" PRIu64 " %8" PRIu64 " %8" PRIu64 "\n",
               p->lid, p->state == 1 ? "active" : "gone", p->guid,
               dn2f_addr_str(&p->addr, a, sizeof(a)), p->rx_pkts, p->rx_bytes, p->tx_pkts,
               p->tx_bytes, p->drops, p->retx);
    }
    free(ports);
    return 0;
}

/* ------------------------------------------------------------------ main */
struct mcast_opt {
    uint16_t group;
    uint16_t lids[DN2F_MCAST_MAX_MEMBERS];
    unsigned n;
};

static void parse_mcast(const char *s, struct mcast_opt *mo)
{
    char *copy = strdup(s), *eq, *tok, *save = NULL;
    uint64_t v;
    if (!copy) {
        exit(1);
    }
    eq = strchr(copy, '=');
    if (!eq || eq == copy || !eq[1]) {
        bad_arg("--mcast: want CLID=LID,LID,... not '%s'", s);
    }
    *eq = 0;
    v = parse_u64("--mcast CLID", copy, 0xffff);
    if (!dn2_clid_is_mcast((uint16_t)v)) {
        bad_arg("--mcast: group CLID must be 0xc00..0xffe in '%s'", s);
    }
    mo->group = dn2_clid_to_lid((uint16_t)v);
    mo->n = 0;
    for (tok = strtok_r(eq + 1, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        v = parse_u64("--mcast LID", tok, 0xffff);
        if (!dn2_lid_assignable((uint16_t)v)) {
            bad_arg("--mcast: member LID not assignable (bits [11:8] must be 0) in '%s'", s);
        }
        if (mo->n >= DN2F_MCAST_MAX_MEMBERS) {
            bad_arg("--mcast: too many members in '%s'", s);
        }
        mo->lids[mo->n++] = (uint16_t)v;
    }
    if (!mo->n) {
        bad_arg("--mcast: no members in '%s'", s);
    }
    free(copy);
}

/* What the command line asks for (the switch's own settings in cfg). */
struct options {
    struct dn2f_sw_config cfg;
    const char *listen_s, *stats_s, *ready;
    struct mcast_opt *mcast;
    unsigned nmcast;
    int route;                  /* 0: chosen from faults / pcap */
    int rcvbuf;
    bool rcvbuf_set;
    unsigned vt_progress_s;     /* --vt-progress */
    bool vt_shm;                /* --vt-sync shm */
    const char *vt_shm_path;    /* --vt-shm */
    const char *vt_opt;         /* a --vt-* option given (needs --virtual-time) */
};

/* The options into op (and the capture file and --quiet into c).  -1 to go
 * on, or the exit status (0 after --help, EXIT_USAGE on a bad option);
 * a bad value exits through bad_arg(). */
static int parse_options(int argc, char **argv, struct options *op, struct ctx *c)
{
    enum { O_LISTEN = 256, O_ROUTE, O_MCAST, O_PCAP, O_DROP, O_DUP, O_REORDER, O_DELAY,
           O_DELAYFRAC, O_SEED, O_TIMEOUT, O_READY, O_QUIET, O_STATS, O_MAXHOST, O_SECRET,
           O_RCVBUF, O_VT, O_VT_BOARDS, O_VT_LOOKAHEAD, O_VT_QUANTUM, O_VT_PROGRESS,
           O_VT_STALL, O_VT_SYNC, O_VT_SHM };
    static const struct option opts[] = {
        { "listen", required_argument, NULL, O_LISTEN },
        { "route", required_argument, NULL, O_ROUTE },
        { "mcast", required_argument, NULL, O_MCAST },
        { "pcap", required_argument, NULL, O_PCAP },
        { "drop", required_argument, NULL, O_DROP },
        { "dup", required_argument, NULL, O_DUP },
        { "reorder", required_argument, NULL, O_REORDER },
        { "delay-us", required_argument, NULL, O_DELAY },
        { "delay-frac", required_argument, NULL, O_DELAYFRAC },
        { "seed", required_argument, NULL, O_SEED },
        { "timeout-ms", required_argument, NULL, O_TIMEOUT },
        { "ready-file", required_argument, NULL, O_READY },
        { "quiet", no_argument, NULL, O_QUIET },
        { "stats", required_argument, NULL, O_STATS },
        { "max-ports-per-host", required_argument, NULL, O_MAXHOST },
        { "secret-file", required_argument, NULL, O_SECRET },
        { "rcvbuf", required_argument, NULL, O_RCVBUF },
        { "virtual-time", no_argument, NULL, O_VT },
        { "vt-boards", required_argument, NULL, O_VT_BOARDS },
        { "vt-lookahead", required_argument, NULL, O_VT_LOOKAHEAD },
        { "vt-quantum", required_argument, NULL, O_VT_QUANTUM },
        { "vt-progress", required_argument, NULL, O_VT_PROGRESS },
        { "vt-stall", required_argument, NULL, O_VT_STALL },
        { "vt-sync", required_argument, NULL, O_VT_SYNC },
        { "vt-shm", required_argument, NULL, O_VT_SHM },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    struct dn2f_sw_config *cfg = &op->cfg;
    int o;

    opterr = 0;
    while ((o = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (o) {
        case O_LISTEN: op->listen_s = optarg; break;
        case O_ROUTE:
            if (!strcmp(optarg, "switch")) {
                op->route = DN2F_ROUTE_SWITCH;
            } else if (!strcmp(optarg, "direct")) {
                op->route = DN2F_ROUTE_DIRECT;
            } else {
                bad_arg("--route: want 'switch' or 'direct', not '%s'", optarg);
            }
            break;
        case O_MCAST:
            op->mcast = realloc(op->mcast, (op->nmcast + 1) * sizeof(*op->mcast));
            if (!op->mcast) {
                return 1;
            }
            parse_mcast(optarg, &op->mcast[op->nmcast++]);
            break;
        case O_PCAP: c->pcap_path = optarg; break;
        case O_DROP: cfg->drop = parse_frac("--drop", optarg); break;
        case O_DUP: cfg->dup = parse_frac("--dup", optarg); break;
        case O_REORDER: cfg->reorder = parse_frac("--reorder", optarg); break;
        case O_DELAY: cfg->delay_ns = parse_u64("--delay-us", optarg, 10000000) * 1000; break;
        case O_DELAYFRAC: cfg->delay_frac = parse_frac("--delay-frac", optarg); break;
        case O_SEED: cfg->seed = parse_u64("--seed", optarg, UINT64_MAX); break;
        case O_TIMEOUT:
            cfg->port_timeout_ns = parse_u64("--timeout-ms", optarg, 3600000) * 1000000;
            if (!cfg->port_timeout_ns) {
                bad_arg("--timeout-ms: must be > 0, not '%s'", optarg);
            }
            break;
        case O_READY: op->ready = optarg; break;
        case O_QUIET: c->quiet = true; break;
        case O_STATS: op->stats_s = optarg; break;
        case O_SECRET: read_secret(optarg); break;
        case O_RCVBUF:
            op->rcvbuf = (int)parse_u64("--rcvbuf", optarg, 1u << 30);
            if (op->rcvbuf < 65536) {
                bad_arg("--rcvbuf: at least 65536 bytes, not '%s'", optarg);
            }
            op->rcvbuf_set = true;
            break;
        case O_MAXHOST:
            cfg->max_ports_per_host = (unsigned)parse_u64("--max-ports-per-host", optarg, 4096);
            break;
        case O_VT: cfg->vt = true; break;
        case O_VT_BOARDS:
            op->vt_opt = "--vt-boards";
            cfg->vt_boards = (unsigned)parse_u64("--vt-boards", optarg, DN2_CLID_MCAST_FIRST - 1);
            if (!cfg->vt_boards) {
                bad_arg("--vt-boards: at least 1, not '%s'", optarg);
            }
            break;
        case O_VT_LOOKAHEAD:
            op->vt_opt = "--vt-lookahead";
            cfg->vt_lookahead_ns = (uint32_t)parse_u64("--vt-lookahead", optarg, UINT32_MAX);
            if (!cfg->vt_lookahead_ns) {
                bad_arg("--vt-lookahead: at least 1 ns (a zero lookahead never lets the "
                        "cluster move), not '%s'", optarg);
            }
            break;
        case O_VT_QUANTUM:
            op->vt_opt = "--vt-quantum";
            cfg->vt_quantum_ns = (uint32_t)parse_u64("--vt-quantum", optarg, UINT32_MAX);
            break;
        case O_VT_PROGRESS:
            op->vt_opt = "--vt-progress";
            op->vt_progress_s = (unsigned)parse_u64("--vt-progress", optarg, 86400);
            break;
        case O_VT_SYNC:
            op->vt_opt = "--vt-sync";
            if (!strcmp(optarg, "shm")) {
                op->vt_shm = true;
            } else if (!strcmp(optarg, "udp")) {
                op->vt_shm = false;
            } else {
                bad_arg("--vt-sync: want 'udp' or 'shm', not '%s'", optarg);
            }
            break;
        case O_VT_SHM:
            op->vt_opt = "--vt-shm";
            op->vt_shm_path = optarg;
            break;
        case O_VT_STALL:
            op->vt_opt = "--vt-stall";
            cfg->vt_stall_ns = parse_u64("--vt-stall", optarg, 86400) * 1000000000ULL;
            break;
        case 'h': usage(stdout); return 0;
        case '?':
        default:
            if (optopt && optopt < 256) {
                fprintf(stderr, "%s: bad option -%c (or missing argument)\n", prog, optopt);
            } else {
                fprintf(stderr, "%s: bad option '%s' (or missing argument)\n", prog,
                        argv[optind - 1]);
            }
            usage(stderr);
            return EXIT_USAGE;
        }
    }
    if (optind < argc) {
        bad_arg("unexpected argument '%s'", argv[optind]);
    }
    if (op->vt_opt && !cfg->vt) {
        bad_arg("%s needs --virtual-time", op->vt_opt);
    }
    if (op->vt_shm_path && !op->vt_shm) {
        bad_arg("%s", "--vt-shm needs --vt-sync shm");
    }
    if (op->vt_shm && (!op->vt_shm_path || !*op->vt_shm_path)) {
        bad_arg("%s", "--vt-sync shm needs --vt-shm PATH (the sync domain's file)");
    }
    if (op->vt_shm && cfg->vt_boards > DN2F_SHM_MAX_MEMBERS) {
        bad_arg("%s", "--vt-sync shm: at most 64 boards (DN2F_SHM_MAX_MEMBERS) in a "
                "sync domain: give --vt-boards 64 or fewer");
    }
    return -1;
}

/* The listening address, the secret, and the routing mode: switch routing
 * by default when faults are injected or traffic captured (direct routing
 * would bypass both), with a warning when direct is asked for anyway. */
static void configure(struct options *op, const struct ctx *c, struct dn2f_addr *la)
{
    struct dn2f_sw_config *cfg = &op->cfg;
    bool faults;

    if (!op->listen_s) {
        bad_arg("%s", "--listen ADDR:PORT is required");
    }
    if (dn2f_addr_parse(la, op->listen_s) < 0) {
        bad_arg("--listen: bad address '%s' (want 1.2.3.4:PORT or [::1]:PORT)", op->listen_s);
    }
    cfg->secret = g_secret;
    cfg->secret_len = g_secret_len;
    faults = cfg->drop > 0 || cfg->dup > 0 || cfg->reorder > 0 || cfg->delay_ns > 0;
    cfg->route_mode = op->route ? op->route : (faults || c->pcap_path) ? DN2F_ROUTE_SWITCH
                                                                       : DN2F_ROUTE_DIRECT;
    if (op->route == DN2F_ROUTE_DIRECT && (faults || c->pcap_path)) {
        fprintf(stderr, "%s: warning: --route direct: unicast bypasses the switch, so "
                "--pcap and fault injection only see control and multicast traffic\n", prog);
    }
}

/* The input batch's buffers, the UDP socket and its receive buffer, the
 * output batch, the capture file.  0, or the exit status. */
static int open_io(struct ctx *c, const struct options *op, struct dn2f_addr *la)
{
    unsigned i;

    c->rbuf = malloc((size_t)DN2F_RX_BATCH * RX_BUF_LEN);
    if (!c->rbuf) {
        fprintf(stderr, "%s: out of memory\n", prog);
        return 1;
    }
    for (i = 0; i < DN2F_RX_BATCH; i++) {
        c->riov[i].iov_base = c->rbuf + (size_t)i * RX_BUF_LEN;
        c->riov[i].iov_len = RX_BUF_LEN;
        c->rmsgs[i].msg_hdr.msg_name = &c->rfrom[i];
        c->rmsgs[i].msg_hdr.msg_iov = &c->riov[i];
        c->rmsgs[i].msg_hdr.msg_iovlen = 1;
    }
    c->fd = dn2f_udp_open(la, op->rcvbuf);
    if (c->fd < 0) {
        fprintf(stderr, "%s: cannot listen on %s: %s\n", prog, op->listen_s, strerror(-c->fd));
        return 1;
    }
    set_rcvbuf(c->fd, op->rcvbuf, op->rcvbuf_set);
    if (dn2f_txbatch_init(&c->tx, c->fd) < 0) {
        fprintf(stderr, "%s: out of memory\n", prog);
        return 1;
    }
    if (c->pcap_path) {
        c->pcap = pcap_open(c->pcap_path);
        if (!c->pcap) {
            fprintf(stderr, "%s: cannot write %s: %s\n", prog, c->pcap_path, strerror(errno));
            return 1;
        }
    }
    return 0;
}

/* The switch core, and the multicast groups given with --mcast.  0, or the
 * exit status. */
static int start_switch(struct ctx *c, struct options *op)
{
    static const struct dn2f_sw_ops ops = {
        .now_ns = cb_now, .send_datagram = cb_send, .capture = cb_capture, .log = cb_log,
    };
    unsigned i, j;

    c->sw = dn2f_sw_new(&op->cfg, &ops, c);
    if (!c->sw) {
        fprintf(stderr, "%s: cannot start: %s\n", prog, strerror(errno));
        return 1;
    }
    for (i = 0; i < op->nmcast; i++) {
        for (j = 0; j < op->mcast[i].n; j++) {
            if (dn2f_sw_mcast_add(c->sw, op->mcast[i].group, op->mcast[i].lids[j]) < 0) {
                fprintf(stderr, "%s: --mcast: cannot add LID 0x%x to group\n", prog,
                        op->mcast[i].lids[j]);
                return EXIT_USAGE;
            }
        }
    }
    free(op->mcast);
    op->mcast = NULL;
    return 0;
}

/* The GLib loop: the socket, the switch's timer, the periodic capture
 * flush, SIGINT / SIGTERM.  Says where it listens, writes the ready file,
 * and runs until a signal.  0, or the exit status. */
static int run_loop(struct ctx *c, const struct options *op, const struct dn2f_addr *la)
{
    char a[80];

    c->loop = g_main_loop_new(NULL, FALSE);
    g_unix_fd_add(c->fd, G_IO_IN, on_readable, c);
    c->timer = g_source_new(&timer_funcs, sizeof(GSource));
    g_source_set_callback(c->timer, on_timer, c, NULL);
    g_source_attach(c->timer, NULL);
    rearm(c);
    g_timeout_add(1000, on_flush, c);
    if (op->cfg.vt && op->vt_progress_s) {
        c->vt_last_t = now_ns();
        g_timeout_add_seconds(op->vt_progress_s, on_vt_progress, c);
    }
    g_unix_signal_add(SIGINT, on_signal, c);
    g_unix_signal_add(SIGTERM, on_signal, c);
    signal(SIGPIPE, SIG_IGN);

    printf("dn2-switch: listening on %s route=%s%s%s%s", dn2f_addr_str(la, a, sizeof(a)),
           op->cfg.route_mode == DN2F_ROUTE_SWITCH ? "switch" : "direct",
           g_secret ? " secret=yes" : "",
           c->pcap_path ? " pcap=" : "", c->pcap_path ? c->pcap_path : "");
    if (op->vt_shm) {
        printf(" virtual-time sync=shm shm=%s boards=%u lookahead=%" PRIu32 "ns quantum=%"
               PRIu32 "ns", op->vt_shm_path, op->cfg.vt_boards, op->cfg.vt_lookahead_ns,
               op->cfg.vt_quantum_ns);
    } else if (op->cfg.vt) {
        printf(" virtual-time boards=%u lookahead=%" PRIu32 "ns quantum=%" PRIu32 "ns",
               op->cfg.vt_boards, op->cfg.vt_lookahead_ns, op->cfg.vt_quantum_ns);
    }
    printf("\n");
    fflush(stdout);
    if (op->ready && write_ready_file(op->ready, dn2f_addr_port(la)) < 0) {
        fprintf(stderr, "%s: cannot write %s: %s\n", prog, op->ready, strerror(errno));
        return 1;
    }

    g_main_loop_run(c->loop);
    return 0;
}

/* After the loop: the shutdown BYEs, the capture file closed, everything
 * freed. */
static void shut_down(struct ctx *c)
{
    if (!c->quiet) {
        fprintf(stderr, "%s: shutting down (%" PRIu64 " capture records)\n", prog,
                c->pcap_records);
        if (c->vt) {
            struct dn2f_sw_vt_stats vs;
            dn2f_sw_vt_stats(c->sw, &vs);
            fprintf(stderr, "%s: vt: %" PRIu64 " reports (%" PRIu64 " duplicate, %" PRIu64
                    " stale), %" PRIu64 " grants, cluster at %" PRIu64 ".%09" PRIu64 " s\n",
                    prog, vs.reports, vs.dup_reports, vs.stale_reports, vs.grants,
                    vs.slowest / NS_PER_S, vs.slowest % NS_PER_S);
        }
    }
    dn2f_sw_shutdown(c->sw);
    if (c->pcap) {
        fclose(c->pcap);
    }
    dn2f_sw_free(c->sw);
    c->sw = NULL;
    g_source_destroy(c->timer);
    g_source_unref(c->timer);
    g_main_loop_unref(c->loop);
    dn2f_txbatch_destroy(&c->tx);
    close(c->fd);
    free(c->rbuf);
}

/*
 * --vt-sync shm: the boards' sync domain (docs/virtual-time.md "Same-host
 * synchronisation through shared memory"), created before the port is
 * announced, so that a board started after the ready file finds it.  The
 * switch core then runs without virtual time: the boards report and are
 * granted in the domain, and send each other their packets through it;
 * the switch still assigns their LIDs and routes.  0, or the exit status.
 */
#define VT_SHM_RING_ENTRIES 256u        /* per member: 1 MiB of 4 KiB packets */

static int create_shm_domain(struct options *op)
{
    struct dn2f_shm_cfg sc = {
        .members = op->cfg.vt_boards ? op->cfg.vt_boards : 1,
        .expected = 0,
        .ring_entries = VT_SHM_RING_ENTRIES,
        .lookahead_ns = op->cfg.vt_lookahead_ns,
        .quantum_ns = op->cfg.vt_quantum_ns,
    };
    int r;

    if (!op->vt_shm) {
        return 0;
    }
    r = dn2f_shm_create(op->vt_shm_path, &sc);
    if (r < 0) {
        fprintf(stderr, "%s: --vt-shm %s: cannot create the sync domain: %s\n", prog,
                op->vt_shm_path, strerror(-r));
        return 1;
    }
    op->cfg.vt = false;         /* no reports, no grants: the domain's */
    return 0;
}

int main(int argc, char **argv)
{
    struct options op = { .rcvbuf = DEFAULT_RCVBUF };
    struct ctx c;
    struct dn2f_addr la;
    int rc;

    memset(&c, 0, sizeof(c));
    c.fd = -1;
    dn2f_sw_config_default(&op.cfg);
    op.vt_progress_s = 5;
    rc = parse_options(argc, argv, &op, &c);
    if (rc >= 0) {
        return rc;
    }
    c.vt = op.cfg.vt;
    if (op.stats_s) {
        if (op.listen_s) {
            bad_arg("%s", "--stats and --listen do not go together");
        }
        return stats_client(op.stats_s);
    }
    configure(&op, &c, &la);
    rc = create_shm_domain(&op);
    c.vt = op.cfg.vt;
    if (!rc) {
        rc = open_io(&c, &op, &la);
    }
    if (!rc) {
        rc = start_switch(&c, &op);
    }
    if (!rc) {
        rc = run_loop(&c, &op, &la);
    }
    if (rc) {
        return rc;
    }
    shut_down(&c);
    return 0;
}
