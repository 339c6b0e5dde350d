/* SPDX-License-Identifier: MIT */
/*
 * fab-client: a test client of the real dn2-switch over real UDP sockets
 * (used by tests/unit/test-switch.sh).
 *
 *   fab-client transfer --switch ADDR:PORT [--count N] [--progress FILE]
 *                       [--timeout S] [--size N] [--fast]
 *       Two endpoints (two boards) in this process, each with its own UDP
 *       socket; N packets of random size (16..4096 B) each way; checks
 *       in-order, exactly-once, intact delivery.  Exit 0 when complete.
 *   fab-client hostile --switch ADDR:PORT [--count N]
 *       Sends N hostile datagrams to the switch: random bytes, truncated
 *       headers, forged LIDs, oversized datagrams, HELLO floods.
 *   fab-client flood --switch ADDR:PORT [--sockets N] [--seconds S]
 *                    [--bind IP] [--echo]
 *       From N sockets (bound to IP, default 127.0.0.1), HELLOs with random
 *       GUIDs as fast as possible for S seconds; with --echo, each ASSIGN's
 *       ticket is returned (complete joins, no keepalives after).
 */
#define _GNU_SOURCE 1
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/socket.h>

#include "dn2fab.h"
#include "fab-pkt.h"

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

struct board {
    const char *name;
    int fd;
    struct dn2f_addr addr;
    struct dn2f_ep *ep;
    uint16_t peer_lid;
    uint32_t to_send, sent;
    uint32_t expect, got;
    bool error;
    unsigned ups, downs;
    bool up;
};

static uint64_t cb_now(void *o) { (void)o; return now_ns(); }

static int cb_send(void *o, const struct dn2f_addr *to, const void *buf, size_t len)
{
    struct board *b = o;
    if (sendto(b->fd, buf, len, 0, &to->u.sa, to->len) < 0) {
        return -errno;
    }
    return 0;
}

static bool g_fast;          /* --fast: cheap payload (throughput runs) */
static uint8_t g_secret[4096];  /* --secret-file */
static size_t g_secret_len;
static size_t g_size;        /* --size N: fixed packet size */

static void fill_pkt(uint8_t *p, size_t len, uint16_t dlid, uint16_t slid, uint32_t n)
{
    size_t i;
    uint32_t x = n * 2654435761u ^ slid;
    if (g_fast) {
        memset(p, (int)(n & 0xff), len);
        fab_pkt_head(p, len, dlid, n);
        return;
    }
    fab_pkt_head(p, len, dlid, n);
    for (i = 12; i < len; i++) {
        x = x * 1103515245u + 12345u;
        p[i] = (uint8_t)(x >> 16);
    }
}

static size_t pkt_len(uint32_t n, uint16_t slid)
{
    uint32_t h;
    if (g_size) {
        return g_size;
    }
    h = (n + 1) * 2246822519u ^ (uint32_t)slid * 3266489917u;
    h ^= h >> 15;
    return 16 + h % (4096 - 16 + 1);
}

static int cb_deliver(void *o, uint16_t slid, const uint8_t *pkt, size_t len)
{
    struct board *b = o;
    uint8_t ref[4096];
    uint32_t n;
    bool intact;
    memcpy(&n, pkt + 8, 4);
    if (n != b->expect || len != pkt_len(n, slid)) {
        if (!b->error) {
            fprintf(stderr, "fab-client: %s: from 0x%x got #%u (%zu B), expected #%u\n",
                    b->name, slid, n, len, b->expect);
        }
        b->error = true;
        return 0;
    }
    if (g_fast) {
        intact = len <= 12 || pkt[len - 1] == (uint8_t)(n & 0xff);
    } else {
        fill_pkt(ref, len, dn2f_pkt_dlid(pkt), slid, n);
        intact = memcmp(ref, pkt, len) == 0;
    }
    if (!intact) {
        fprintf(stderr, "fab-client: %s: packet #%u corrupt\n", b->name, n);
        b->error = true;
        return 0;
    }
    b->expect++;
    b->got++;
    return 0;
}

static void cb_link(void *o, bool up, uint16_t lid)
{
    struct board *b = o;
    b->up = up;
    if (up) {
        b->ups++;
    } else {
        b->downs++;
    }
    fprintf(stderr, "fab-client: %s: link %s (LID 0x%04x)\n", b->name, up ? "up" : "down", lid);
}

static const struct dn2f_ep_ops ops = {
    .now_ns = cb_now, .send_datagram = cb_send, .deliver = cb_deliver, .link_state = cb_link,
};

static int open_board(struct board *b, const char *name, const struct dn2f_addr *sw, uint64_t guid)
{
    struct dn2f_ep_config cfg;
    memset(&b->addr, 0, sizeof(b->addr));
    b->name = name;
    if (sw->u.sa.sa_family == AF_INET6) {
        dn2f_addr_parse(&b->addr, "[::1]:0");
    } else {
        dn2f_addr_parse(&b->addr, "127.0.0.1:0");
    }
    b->fd = dn2f_udp_open(&b->addr, 4 << 20);
    if (b->fd < 0) {
        fprintf(stderr, "fab-client: socket: %s\n", strerror(-b->fd));
        return -1;
    }
    dn2f_ep_config_default(&cfg);
    cfg.guid = guid;
    cfg.sw = *sw;
    if (g_secret_len) {
        cfg.secret = g_secret;
        cfg.secret_len = g_secret_len;
    }
    b->ep = dn2f_ep_new(&cfg, &ops, b);
    return b->ep ? 0 : -1;
}

static void drain(struct board *b)
{
    static uint8_t buf[DN2F_DGRAM_MAX + 1];
    int i;
    for (i = 0; i < 256; i++) {
        struct sockaddr_storage ss;
        socklen_t sl = sizeof(ss);
        struct dn2f_addr from;
        ssize_t n = recvfrom(b->fd, buf, sizeof(buf), 0, (struct sockaddr *)&ss, &sl);
        if (n < 0) {
            break;
        }
        dn2f_addr_from_sa(&from, (struct sockaddr *)&ss, sl);
        dn2f_ep_input(b->ep, &from, buf, (size_t)n);
    }
}

static void pump(struct board *b)
{
    uint8_t pkt[4096];
    bool any = false;
    uint16_t me = dn2f_ep_lid(b->ep);
    if (!b->up || !b->peer_lid) {
        return;
    }
    while (b->sent < b->to_send) {
        size_t len = pkt_len(b->sent, me);
        if (!dn2f_ep_can_send(b->ep, b->peer_lid, len)) {
            break;
        }
        fill_pkt(pkt, len, b->peer_lid, me, b->sent);
        if (dn2f_ep_send(b->ep, b->peer_lid, pkt, len) != 0) {
            break;
        }
        b->sent++;
        any = true;
    }
    if (any) {
        dn2f_ep_flush(b->ep);
    }
}

static void progress(const char *path, struct board *a, struct board *b)
{
    char tmp[4096];
    FILE *f;
    if (!path || snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= (int)sizeof(tmp)) {
        return;
    }
    f = fopen(tmp, "w");
    if (f) {
        fprintf(f, "%u %u\n", b->got, a->got);
        fclose(f);
        rename(tmp, path);
    }
}

static int do_transfer(const struct dn2f_addr *sw, uint32_t count, const char *prog_path,
                       unsigned timeout_s)
{
    struct board a, b;
    struct board *bs[2] = { &a, &b };
    uint64_t t0 = now_ns(), end = t0 + (uint64_t)timeout_s * 1000000000ULL, last_prog = 0;
    int i;

    memset(&a, 0, sizeof(a));
    memset(&b, 0, sizeof(b));
    if (open_board(&a, "A", sw, 0xa0a0a0a0a0a00001ULL) < 0 ||
        open_board(&b, "B", sw, 0xb0b0b0b0b0b00002ULL) < 0) {
        return 1;
    }
    a.to_send = b.to_send = count;
    while (now_ns() < end) {
        struct pollfd pfd[2];
        struct timespec ts;
        uint64_t d = UINT64_MAX, t;
        if (a.up && b.up) {
            a.peer_lid = dn2f_ep_lid(b.ep);
            b.peer_lid = dn2f_ep_lid(a.ep);
        }
        if (a.error || b.error) {
            break;
        }
        if (a.got == count && b.got == count && dn2f_ep_idle(a.ep) && dn2f_ep_idle(b.ep)) {
            break;
        }
        for (i = 0; i < 2; i++) {
            pump(bs[i]);
            t = dn2f_ep_next_deadline(bs[i]->ep);
            if (t < d) {
                d = t;
            }
            pfd[i].fd = bs[i]->fd;
            pfd[i].events = POLLIN;
        }
        t = now_ns();
        if (d <= t) {
            d = t;
        }
        if (d - t > 100000000ULL) {
            d = t + 100000000ULL;
        }
        ts.tv_sec = (time_t)((d - t) / 1000000000ULL);
        ts.tv_nsec = (long)((d - t) % 1000000000ULL);
        ppoll(pfd, 2, &ts, NULL);
        for (i = 0; i < 2; i++) {
            if (pfd[i].revents & POLLIN) {
                drain(bs[i]);
            }
        }
        t = now_ns();
        for (i = 0; i < 2; i++) {
            if (dn2f_ep_next_deadline(bs[i]->ep) <= t) {
                dn2f_ep_tick(bs[i]->ep);
            }
        }
        if (t - last_prog > 50000000ULL) {
            progress(prog_path, &a, &b);
            last_prog = t;
        }
    }
    progress(prog_path, &a, &b);
    {
        const struct dn2f_ep_stats *sa = dn2f_ep_stats(a.ep), *sb = dn2f_ep_stats(b.ep);
        double secs = (double)(now_ns() - t0) / 1e9;
        fprintf(stderr, "fab-client: A got %u/%u, B got %u/%u in %.2f s (%.0f MB/s each way); "
                "retransmits A %llu B %llu, duplicates A %llu B %llu, link downs A %u B %u\n",
                a.got, count, b.got, count, secs, (double)sa->rx_bytes / secs / 1e6,
                (unsigned long long)sa->retransmits, (unsigned long long)sb->retransmits,
                (unsigned long long)sa->duplicates, (unsigned long long)sb->duplicates,
                a.downs, b.downs);
        fprintf(stderr, "fab-client: sent A %llu B %llu packets in %llu + %llu data datagrams; "
                "retransmitted %.3f %% of the packets; timeouts A %llu B %llu (spurious %llu %llu), "
                "fast A %llu B %llu, RTO floor A %.1f B %.1f ms\n",
                (unsigned long long)sa->tx_pkts, (unsigned long long)sb->tx_pkts,
                (unsigned long long)sa->tx_data_dgrams, (unsigned long long)sb->tx_data_dgrams,
                100.0 * (double)(sa->retransmits + sb->retransmits) /
                    (double)(sa->tx_pkts + sb->tx_pkts + 1),
                (unsigned long long)sa->timeouts, (unsigned long long)sb->timeouts,
                (unsigned long long)sa->spurious_timeouts,
                (unsigned long long)sb->spurious_timeouts,
                (unsigned long long)sa->fast_retransmits,
                (unsigned long long)sb->fast_retransmits,
                (double)sa->rto_floor_ns / 1e6, (double)sb->rto_floor_ns / 1e6);
    }
    if (a.error || b.error || a.got != count || b.got != count) {
        return 1;
    }
    printf("transfer ok %u %u downs %u %u\n", a.got, b.got, a.downs, b.downs);
    dn2f_ep_free(a.ep);
    dn2f_ep_free(b.ep);
    close(a.fd);
    close(b.fd);
    return 0;
}

static int do_hostile(const struct dn2f_addr *sw, uint32_t count)
{
    struct dn2f_addr me;
    struct dn2f_rng r;
    uint8_t *buf = malloc(DN2F_DGRAM_MAX + 16);
    uint8_t pkt[256];
    uint32_t i;
    int fd;

    memset(&me, 0, sizeof(me));
    dn2f_addr_parse(&me, sw->u.sa.sa_family == AF_INET6 ? "[::1]:0" : "127.0.0.1:0");
    fd = dn2f_udp_open(&me, 1 << 20);
    if (fd < 0 || !buf) {
        return 1;
    }
    dn2f_rng_seed(&r, 4242);
    for (i = 0; i < count; i++) {
        struct dn2f_wbuf w;
        size_t len = 0, j;
        dn2f_wbuf_init(&w, buf, DN2F_DGRAM_MAX);
        switch (i % 7) {
        case 0:                         /* random bytes */
            len = dn2f_rng_next(&r) % 2048;
            for (j = 0; j < len; j++) {
                buf[j] = (uint8_t)dn2f_rng_next(&r);
            }
            break;
        case 1:                         /* truncated header */
            dn2f_put_hdr(&w, DN2F_T_DATA, 0, 1, 2, 1, 1);
            len = dn2f_rng_next(&r) % DN2F_HDR_LEN;
            break;
        case 2:                         /* forged source LID: DATA "from" LID 1 / 2 */
            dn2f_put_hdr(&w, DN2F_T_DATA, 0, (uint16_t)(1 + i % 2), (uint16_t)(2 - i % 2),
                         dn2f_rng_next(&r), dn2f_rng_next(&r));
            fill_pkt(pkt, 64, (uint16_t)(2 - i % 2), 1, i);
            dn2f_put_rec(&w, DN2F_REC_UNICAST, 0, i, 0, 0, NULL, NULL, NULL, pkt, 64);
            len = dn2f_finish(&w);
            break;
        case 3: {                       /* HELLO flood, random GUIDs */
            struct dn2f_hello h = { .guid = dn2f_rng_next(&r) | 1, .lid_hint = 1 };
            dn2f_put_hdr(&w, DN2F_T_HELLO, 0, 0, 0, dn2f_rng_next(&r) | 1, 0);
            dn2f_put_hello(&w, &h);
            len = dn2f_finish(&w);
            break;
        }
        case 4:                         /* oversized junk with a valid-looking header */
            dn2f_put_hdr(&w, DN2F_T_ROUTES, 0, 0, 1, 1, 1);
            len = DN2F_DGRAM_MAX;
            memset(buf + DN2F_HDR_LEN, 0xff, len - DN2F_HDR_LEN);
            buf[12] = (uint8_t)len;
            buf[13] = (uint8_t)(len >> 8);
            break;
        case 5:                         /* control types a switch never accepts */
            dn2f_put_hdr(&w, DN2F_T_KEEPALIVE, 0, (uint16_t)(1 + i % 3), 0, 7, 7);
            dn2f_put_u32pair(&w, 0, 0);
            len = dn2f_finish(&w);
            break;
        default: {                      /* multicast to a group with forged members */
            uint16_t ml[2] = { 1, 2 };
            uint32_t ms[2] = { i, i };
            uint64_t mep[2] = { 1, 2 };
            dn2f_put_hdr(&w, DN2F_T_DATA, 0, 1, 0xc005, 1, 0);
            fill_pkt(pkt, 64, 0xc005, 1, i);
            dn2f_put_rec(&w, DN2F_REC_MCAST_ORIGIN, 0, 0, 0xc005, 2, ml, ms, mep, pkt, 64);
            len = dn2f_finish(&w);
            break;
        }
        }
        if (len) {
            (void)sendto(fd, buf, len, 0, &sw->u.sa, sw->len);
        }
        if (i % 64 == 63) {
            usleep(200);                /* let the switch drain its socket */
        }
    }
    close(fd);
    free(buf);
    printf("hostile sent %u\n", count);
    return 0;
}

/* aliases > 0: socket i binds 127.1.x.y number i % aliases instead of
 * bind_ip (any 127.x address needs no configuration on Linux), and is one
 * board (a fixed GUID and epoch) rather than a new one at every HELLO. */
static int do_flood(const struct dn2f_addr *sw, unsigned nsock, unsigned secs,
                    const char *bind_ip, bool echo, unsigned aliases)
{
    int *fds = calloc(nsock, sizeof(int));
    struct dn2f_rng r;
    uint8_t buf[512];
    uint64_t end = now_ns() + (uint64_t)secs * 1000000000ULL, hellos = 0, joins = 0;
    uint64_t refused = 0;
    unsigned i, n = 0;
    char a[80];

    if (!fds) {
        return 1;
    }
    for (i = 0; i < nsock; i++) {
        struct dn2f_addr me;
        if (aliases) {
            unsigned k = i % aliases;
            snprintf(a, sizeof(a), "127.1.%u.%u:0", k / 250, 1 + k % 250);
        } else {
            snprintf(a, sizeof(a), "%s:0", bind_ip);
        }
        if (dn2f_addr_parse(&me, a) < 0) {
            return 2;
        }
        fds[i] = dn2f_udp_open(&me, 1 << 16);
        if (fds[i] < 0) {
            fprintf(stderr, "fab-client: flood: socket %u: %s\n", i, strerror(-fds[i]));
            break;
        }
        n++;
    }
    dn2f_rng_seed(&r, (uint64_t)getpid());
    while (now_ns() < end) {
        for (i = 0; i < n; i++) {
            struct dn2f_wbuf w;
            struct dn2f_hello h = { .guid = dn2f_rng_next(&r) | 1 };
            uint64_t epoch = dn2f_rng_next(&r) | 1;
            ssize_t got;
            if (aliases) {
                /* one board per socket (its GUID, epoch and LID hint), as a
                 * program holding many ports would: each join stays */
                h.guid = 0x7a11000000000000ull + i;
                h.lid_hint = dn2_clid_to_lid((uint16_t)(1 + i % 3000));   /* no LID race */
                epoch = 0x7a11e00000000000ull + i;
            }
            dn2f_wbuf_init(&w, buf, sizeof(buf));
            dn2f_put_hdr(&w, DN2F_T_HELLO, 0, 0, 0, epoch, 0);
            dn2f_put_hello(&w, &h);
            if (sendto(fds[i], buf, dn2f_finish(&w), 0, &sw->u.sa, sw->len) > 0) {
                hellos++;
            }
            while ((got = recv(fds[i], buf, sizeof(buf), 0)) > 0) {
                struct dn2f_msg m;
                if (dn2f_decode(buf, (size_t)got, &m) != 0) {
                    continue;
                }
                if (m.h.type == DN2F_T_BYE && m.u.bye.reason == DN2F_BYE_FULL) {
                    refused++;
                }
                if (!echo || m.h.type != DN2F_T_ASSIGN) {
                    continue;
                }
                dn2f_wbuf_init(&w, buf, sizeof(buf));
                dn2f_put_hdr(&w, DN2F_T_KEEPALIVE, 0, m.u.assign.lid, 0, m.h.dst_epoch,
                             m.h.src_epoch);
                dn2f_put_keepalive(&w, 0xffffffffu, m.u.assign.guid, &m.u.assign.ticket);
                if (sendto(fds[i], buf, dn2f_finish(&w), 0, &sw->u.sa, sw->len) > 0) {
                    joins++;
                }
            }
        }
        usleep(100);
    }
    for (i = 0; i < n; i++) {
        close(fds[i]);
    }
    free(fds);
    printf("flood sent %llu HELLOs from %u sockets%s, returned %llu tickets, %llu refusals "
           "(host full)\n", (unsigned long long)hellos, n, aliases ? " on loopback aliases" : "",
           (unsigned long long)joins, (unsigned long long)refused);
    return 0;
}

static void usage(void)
{
    fprintf(stderr, "usage: fab-client transfer|hostile|flood --switch ADDR:PORT [--count N] "
            "[--progress FILE] [--timeout S] [--size N] [--fast] [--sockets N] "
            "[--seconds S] [--bind IP] [--aliases N] [--echo] [--secret-file F]\n");
    exit(2);
}

int main(int argc, char **argv)
{
    const char *mode, *sws = NULL, *prog = NULL;
    uint32_t count = 10000;
    unsigned timeout_s = 120, nsock = 100, secs = 2, aliases = 0;
    const char *bind_ip = "127.0.0.1";
    bool echo = false;
    struct dn2f_addr sw;
    int i;

    signal(SIGPIPE, SIG_IGN);
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc < 2) {
        usage();
    }
    mode = argv[1];
    for (i = 2; i < argc; i++) {
        if (!strcmp(argv[i], "--switch") && i + 1 < argc) {
            sws = argv[++i];
        } else if (!strcmp(argv[i], "--count") && i + 1 < argc) {
            count = (uint32_t)strtoul(argv[++i], NULL, 0);
        } else if (!strcmp(argv[i], "--progress") && i + 1 < argc) {
            prog = argv[++i];
        } else if (!strcmp(argv[i], "--fast")) {
            g_fast = true;
        } else if (!strcmp(argv[i], "--size") && i + 1 < argc) {
            g_size = strtoul(argv[++i], NULL, 0);
            if (g_size < 16 || g_size > 4096) {
                usage();
            }
        } else if (!strcmp(argv[i], "--timeout") && i + 1 < argc) {
            timeout_s = (unsigned)strtoul(argv[++i], NULL, 0);
        } else if (!strcmp(argv[i], "--sockets") && i + 1 < argc) {
            nsock = (unsigned)strtoul(argv[++i], NULL, 0);
        } else if (!strcmp(argv[i], "--seconds") && i + 1 < argc) {
            secs = (unsigned)strtoul(argv[++i], NULL, 0);
        } else if (!strcmp(argv[i], "--bind") && i + 1 < argc) {
            bind_ip = argv[++i];
        } else if (!strcmp(argv[i], "--aliases") && i + 1 < argc) {
            aliases = (unsigned)strtoul(argv[++i], NULL, 0);
        } else if (!strcmp(argv[i], "--echo")) {
            echo = true;
        } else if (!strcmp(argv[i], "--secret-file") && i + 1 < argc) {
            FILE *f = fopen(argv[++i], "rb");
            if (!f) {
                usage();
            }
            g_secret_len = fread(g_secret, 1, sizeof(g_secret), f);
            fclose(f);
            if (g_secret_len && g_secret[g_secret_len - 1] == '\n') {
                g_secret_len--;
            }
        } else {
            usage();
        }
    }
    if (!sws || dn2f_addr_parse(&sw, sws) < 0) {
        usage();
    }
    if (!strcmp(mode, "transfer")) {
        return do_transfer(&sw, count, prog, timeout_s);
    }
    if (!strcmp(mode, "hostile")) {
        return do_hostile(&sw, count);
    }
    if (!strcmp(mode, "flood")) {
        return do_flood(&sw, nsock, secs, bind_ip, echo, aliases);
    }
    usage();
    return 2;
}
