/* SPDX-License-Identifier: MIT */
/*
 * udp-bench: the baseline for dn2-bench, measured in the same run between
 * the same two guests: UDP over their virtio-net NICs (what a user of the
 * cluster would use without DIMMnet-2).  docs/benchmarks-guest.md.
 *
 *   udp-bench server [-p PORT]                 answers until told to quit
 *   udp-bench client PEER [-p PORT] [--full] [--sizes LIST] [-t SECONDS]
 *   udp-bench [options]                        with DN2_RANK set (cluster):
 *                                              rank 0 is the client of
 *                                              192.168.77.2, rank 1 the
 *                                              server (--peer overrides)
 *
 * Per message size S (the sizes dn2-bench uses):
 *  ping-pong  the client sends a message of S bytes (datagrams of at most
 *             65504 bytes; IP fragments them for the 1500-byte MTU), the
 *             server answers with S bytes once the whole message is in;
 *             RTT/2 = the median round trip (after 3 warm-up ones) / 2, as
 *             dn2-bench reports; about 0.25 s of round trips per size.
 *             A round trip that takes over 500 ms counts as lost and is
 *             retried with a new sequence number.
 *             A message over 128 KiB goes out in a 128 KiB window that the
 *             receiver's acknowledgements move on (see MSG_WINDOW).
 *  stream     datagrams of min(S, 1472) bytes (no IP fragments: with the
 *             1500-byte MTU a lost fragment loses the whole datagram, and
 *             half-reassembled datagrams then fill the receiver's fragment
 *             memory until they expire, which collapses a stream of 64 KiB
 *             datagrams to zero within seconds), at most 128 KiB in flight
 *             (the server acknowledges every 16 datagrams or 32 KiB); MB/s
 *             = bytes the server received / (first send .. its final
 *             report); at most 4 MiB or 1 s (--time x 4) per size.  Lost
 *             datagrams are not resent; the loss is reported.
 *
 * Every datagram starts with an 8-byte header {type:4 seq:28, total/id},
 * counted in S, so the bytes on the wire are exactly S per message.
 *
 * Output (client, stdout), one line per figure:
 *   udp pingpong SIZE RTT2_US mean=.. min=.. n=.. lost=..   (median RTT/2)
 *   udp stream SIZE MBPS dgram=.. sent=.. received=.. loss=..%
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "bench-sizes.h"

#define CHUNK     65504u        /* largest datagram we send (multiple of 8) */
#define ST_DGRAM  1472u         /* stream: the largest unfragmented datagram */
#define MAXMSG    (1u << 20)
#define PP_TMO_MS 500

enum { T_PING = 1, T_PONG, T_DATA, T_END, T_REPORT, T_ACK, T_HELLO, T_QUIT, T_MACK };

/* A message longer than this goes out in a window of MSG_WINDOW bytes,
 * the receiver acknowledging every MACK_EVERY bytes: the virtual link
 * (QEMU's dgram netdev) drops whatever exceeds the host socket buffer
 * (~200 KiB) when the receiving guest falls behind. */
#define MSG_WINDOW  (2 * CHUNK)
#define MACK_EVERY  CHUNK
#define ST_WINDOW   (128u << 10)        /* stream: bytes in flight */
#define ST_ACK_BYTES (32u << 10)        /* stream: acknowledge this often */

static int sock;
static struct sockaddr_in peer;
static uint8_t *buf, *rbuf;

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static void hdr(uint8_t *p, unsigned type, uint32_t seq, uint32_t w1)
{
    uint32_t w0 = (uint32_t)type << 28 | (seq & 0x0fffffffu);
    memcpy(p, &w0, 4);
    memcpy(p + 4, &w1, 4);
}

static void unhdr(const uint8_t *p, unsigned *type, uint32_t *seq, uint32_t *w1)
{
    uint32_t w0;
    memcpy(&w0, p, 4);
    memcpy(w1, p + 4, 4);
    *type = w0 >> 28;
    *seq = w0 & 0x0fffffffu;
}

static void tx(const struct sockaddr_in *to, const void *p, size_t len)
{
    while (sendto(sock, p, len, 0, (const struct sockaddr *)to, sizeof(*to)) < 0) {
        if (errno == ENOBUFS || errno == EAGAIN || errno == EINTR) {
            usleep(50);
            continue;
        }
        perror("udp-bench: sendto");
        exit(1);
    }
}

/* Receive one datagram, waiting at most ms (< 0: forever); length or -1. */
static ssize_t rx(int ms, struct sockaddr_in *from);

/* Send a message of len bytes as datagrams of <= CHUNK bytes; a long one
 * in a window, moved on by the receiver's T_MACK {seq, bytes received}.
 * 0, or -1 when the receiver stopped answering (the message is lost). */
static int send_msg(const struct sockaddr_in *to, unsigned type, uint32_t seq, size_t len)
{
    size_t off, acked = 0;
    struct sockaddr_in from;

    for (off = 0; off < len; off += CHUNK) {
        size_t k = len - off < CHUNK ? len - off : CHUNK;
        while (len > MSG_WINDOW && off + k > acked + MSG_WINDOW) {
            unsigned t;
            uint32_t s, w1;
            if (rx(PP_TMO_MS, &from) < 0) {
                return -1;
            }
            unhdr(rbuf, &t, &s, &w1);
            if (t == T_MACK && s == (seq & 0x0fffffffu) && w1 > acked) {
                acked = w1;
            }
        }
        hdr(buf + off, type, seq, (uint32_t)len);
        tx(to, buf + off, k);
    }
    return 0;
}

/* The receiver's side of that window: called with the bytes of a long
 * message received so far. */
static void mack(const struct sockaddr_in *to, uint32_t seq, uint64_t total, uint64_t got,
                 uint64_t *last)
{
    uint8_t h[8];

    if (total > MSG_WINDOW && got < total && got - *last >= MACK_EVERY) {
        hdr(h, T_MACK, seq, (uint32_t)got);
        tx(to, h, 8);
        *last = got;
    }
}

/* Receive one datagram, waiting at most ms (< 0: forever); length or -1. */
static ssize_t rx(int ms, struct sockaddr_in *from)
{
    struct pollfd p = { .fd = sock, .events = POLLIN };
    socklen_t fl = sizeof(*from);
    ssize_t n;

    if (ms >= 0) {
        int r = poll(&p, 1, ms);
        if (r <= 0) {
            return -1;
        }
    }
    n = recvfrom(sock, rbuf, CHUNK + 64, 0, (struct sockaddr *)from, &fl);
    return n < 8 ? -1 : n;
}

static void open_sock(int port)
{
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
    int sz = 4 << 20;

    sock = socket(AF_INET, SOCK_DGRAM, 0);
    if (sock < 0) {
        perror("udp-bench: socket");
        exit(1);
    }
    /* Past rmem_max/wmem_max as root; plain sizes otherwise. */
    if (setsockopt(sock, SOL_SOCKET, SO_RCVBUFFORCE, &sz, sizeof(sz)) < 0) {
        setsockopt(sock, SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz));
    }
    if (setsockopt(sock, SOL_SOCKET, SO_SNDBUFFORCE, &sz, sizeof(sz)) < 0) {
        setsockopt(sock, SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz));
    }
    a.sin_addr.s_addr = htonl(INADDR_ANY);
    if (bind(sock, (struct sockaddr *)&a, sizeof(a)) < 0) {
        perror("udp-bench: bind");
        exit(1);
    }
}

/* ------------------------------------------------------------ server */

static int server(int idle_s)
{
    uint32_t cur_ping = 0xffffffff, cur_stream = 0xffffffff, max_seq = 0;
    uint64_t got = 0, dgrams = 0, bytes = 0, last_mack = 0, ack_at = 0;
    double last = now_us();
    struct sockaddr_in from;

    for (;;) {
        unsigned type;
        uint32_t seq, w1;
        ssize_t n = rx(1000, &from);

        if (n < 0) {
            if (now_us() - last > idle_s * 1e6) {
                fprintf(stderr, "udp-bench: server idle for %d s, quitting\n", idle_s);
                return 1;
            }
            continue;
        }
        last = now_us();
        unhdr(rbuf, &type, &seq, &w1);
        switch (type) {
        case T_HELLO:
            hdr(buf, T_HELLO, seq, 0);
            tx(&from, buf, 8);
            break;
        case T_PING:
            if (seq != cur_ping) {
                cur_ping = seq;
                got = last_mack = 0;
            }
            got += (uint64_t)n;
            mack(&from, seq, w1, got, &last_mack);
            if (got >= w1) {
                send_msg(&from, T_PONG, seq, w1);
                got = 0;
                cur_ping = 0xffffffff;
            }
            break;
        case T_DATA:
            if (w1 != cur_stream) {
                cur_stream = w1;
                dgrams = bytes = ack_at = 0;
                max_seq = 0;
            }
            dgrams++;
            bytes += (uint64_t)n;
            if (seq + 1 > max_seq) {
                max_seq = seq + 1;
            }
            if (dgrams % 16 == 0 || bytes - ack_at >= ST_ACK_BYTES) {
                uint8_t h[8];
                hdr(h, T_ACK, max_seq, w1);
                tx(&from, h, 8);
                ack_at = bytes;
            }
            break;
        case T_END: {
            uint64_t rep[2];
            if (w1 != cur_stream) {
                dgrams = bytes = 0;
            }
            rep[0] = dgrams;
            rep[1] = bytes;
            hdr(buf, T_REPORT, max_seq, w1);
            memcpy(buf + 8, rep, 16);
            tx(&from, buf, 24);
            break;
        }
        case T_QUIT:
            hdr(buf, T_QUIT, seq, 0);
            tx(&from, buf, 8);
            return 0;
        default:
            break;
        }
    }
}

/* ------------------------------------------------------------ client */

static double budget_s = 0.25;
static int verbose = 1;

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void pingpong(size_t size, uint32_t *seqp)
{
    static double rtt[5000];
    unsigned n = 0, lost = 0, warm = 3, i;
    double t_start = now_us(), sum = 0;
    struct sockaddr_in from;

    for (i = 0;; i++) {
        double t0, t;
        uint64_t got = 0;
        uint32_t seq = ++*seqp;

        if (i >= warm + 5 && (now_us() - t_start > budget_s * 1e6 || n >= 5000)) {
            break;
        }
        if (lost > 5) {
            break;
        }
        t0 = now_us();
        if (send_msg(&peer, T_PING, seq, size) == 0) {
            uint64_t last_mack = 0;
            for (;;) {
                unsigned type;
                uint32_t s, w1;
                ssize_t r = rx(PP_TMO_MS, &from);
                if (r < 0) {
                    break;
                }
                unhdr(rbuf, &type, &s, &w1);
                if (type == T_PONG && s == (seq & 0x0fffffff)) {
                    got += (uint64_t)r;
                    mack(&from, s, size, got, &last_mack);
                    if (got >= size) {
                        break;
                    }
                }
            }
        }
        t = now_us() - t0;
        if (got < size) {
            lost++;
            continue;
        }
        if (i >= warm && n < 5000) {
            rtt[n++] = t;
            sum += t;
        }
    }
    if (!n) {
        printf("udp pingpong %zu nan lost=%u\n", size, lost);
        return;
    }
    qsort(rtt, n, sizeof(rtt[0]), cmp_d);
    printf("udp pingpong %zu %.2f mean=%.2f min=%.2f n=%u lost=%u\n", size, rtt[n / 2] / 2,
           sum / n / 2, rtt[0] / 2, n, lost);
    fflush(stdout);
}

static void stream(size_t size, uint32_t id, double mib)
{
    size_t dg = size < ST_DGRAM ? size : ST_DGRAM;
    unsigned long k = (unsigned long)(mib * (1 << 20) / dg), sent = 0, acked = 0, stalls = 0;
    unsigned long window = ST_WINDOW / dg;
    double t_stop;
    uint64_t rep[2] = { 0, 0 };
    struct sockaddr_in from;
    double t0, t1 = 0, tend;
    int have = 0;

    if (k < 64) k = 64;
    if (k > 200000) k = 200000;
    if (window < 4) window = 4;
    if (window > 512) window = 512;
    t0 = now_us();
    t_stop = t0 + 4 * budget_s * 1e6;
    while (sent < k && (sent < 64 || now_us() < t_stop)) {
        unsigned type;
        uint32_t s, w1;
        ssize_t r;

        if (sent - acked < window) {
            hdr(buf, T_DATA, (uint32_t)sent, id);
            tx(&peer, buf, dg);
            sent++;
            /* take whatever acknowledgements are there */
            while (recvfrom(sock, rbuf, CHUNK + 64, MSG_DONTWAIT, NULL, NULL) >= 8) {
                unhdr(rbuf, &type, &s, &w1);
                if (type == T_ACK && w1 == id && s > acked) acked = s;
            }
            continue;
        }
        r = rx(100, &from);
        if (r < 0) {
            /* no acknowledgement for 100 ms: the window's datagrams (or
             * their acknowledgements) were lost; go on */
            stalls++;
            acked = sent - window / 2;
            continue;
        }
        unhdr(rbuf, &type, &s, &w1);
        if (type == T_ACK && w1 == id && s > acked) acked = s;
    }
    /* The final count. */
    tend = now_us() + 3e6;
    while (!have && now_us() < tend) {
        unsigned type;
        uint32_t s, w1;
        hdr(buf, T_END, 0, id);
        tx(&peer, buf, 8);
        for (;;) {
            ssize_t r = rx(50, &from);
            if (r < 0) break;
            unhdr(rbuf, &type, &s, &w1);
            if (type == T_REPORT && w1 == id && r >= 24) {
                memcpy(rep, rbuf + 8, 16);
                t1 = now_us();
                have = 1;
                break;
            }
        }
    }
    if (!have) {
        printf("udp stream %zu nan dgram=%zu sent=%lu received=? loss=?\n", size, dg, sent);
        return;
    }
    printf("udp stream %zu %.2f dgram=%zu sent=%lu received=%llu loss=%.1f%% stalls=%lu\n",
           size, rep[1] / (t1 - t0), dg, sent, (unsigned long long)rep[0],
           100.0 * (1.0 - (double)rep[0] / (double)sent), stalls);
    fflush(stdout);
}

static const size_t sizes_q[] = { 8, 16, 24, 32, 48, 56, 64, 80, 104, 128, 256, 496, 512, 992,
                                  1024, 1488, 1984, 2048, 4096, 8192, 16384, 32768, 65536,
                                  262144, 1048576 };
static const size_t sizes_f[] = { 8, 16, 24, 32, 40, 48, 56, 64, 72, 80, 88, 96, 104, 112, 120,
                                  128, 192, 256, 320, 384, 448, 496, 512, 744, 768, 992, 1024,
                                  1240, 1488, 1736, 1984, 2048, 4096, 8192, 16384, 32768, 65536,
                                  131072, 262144, 524288, 1048576 };

/* Send the server a bare message of type; 1 if it answers in kind
 * within 200 ms. */
static int ask(unsigned type, uint32_t seq)
{
    struct sockaddr_in from;
    unsigned t;
    uint32_t s, w1;

    hdr(buf, type, seq, 0);
    tx(&peer, buf, 8);
    if (rx(200, &from) < 8) {
        return 0;
    }
    unhdr(rbuf, &t, &s, &w1);
    return t == type;
}

static int client(const char *peer_s, int port, int full, const char *list)
{
    size_t sizes[128], ns = 0, i;
    uint32_t seq = 0;
    double t0 = now_us();
    int ok = 0;

    peer.sin_family = AF_INET;
    peer.sin_port = htons((uint16_t)port);
    if (inet_pton(AF_INET, peer_s, &peer.sin_addr) != 1) {
        fprintf(stderr, "udp-bench: bad address %s\n", peer_s);
        return 2;
    }
    if (list) {
        ns = bench_parse_sizes(list, sizes, 128, 8, MAXMSG);
    } else {
        const size_t *s = full ? sizes_f : sizes_q;
        ns = full ? sizeof(sizes_f) / sizeof(sizes_f[0]) : sizeof(sizes_q) / sizeof(sizes_q[0]);
        memcpy(sizes, s, ns * sizeof(size_t));
    }
    /* Wait for the server (it may still be starting). */
    while (!ok && now_us() - t0 < 60e6) {
        ok = ask(T_HELLO, 1);
    }
    if (!ok) {
        fprintf(stderr, "udp-bench: no answer from %s:%d in 60 s\n", peer_s, port);
        return 1;
    }
    if (verbose) {
        fprintf(stderr, "[udp-bench] UDP ping-pong and stream over virtio-net, %zu sizes (server %s:%d)\n",
                ns, peer_s, port);
    }
    for (i = 0; i < ns; i++) {
        pingpong(sizes[i], &seq);
    }
    for (i = 0; i < ns; i++) {
        stream(sizes[i], (uint32_t)(i + 1), full ? 16.0 : 4.0);
    }
    for (i = 0; i < 5 && !ask(T_QUIT, 0); i++) {
    }
    if (verbose) {
        fprintf(stderr, "[udp-bench] done in %.1f s\n", (now_us() - t0) / 1e6);
    }
    return 0;
}

static void usage(void)
{
    fprintf(stderr, "usage: udp-bench server [-p PORT]\n"
            "       udp-bench client PEER [-p PORT] [--full] [--sizes LIST] [-t SECONDS]\n"
            "       udp-bench [--peer ADDR] ...   (role from $DN2_RANK: 0 client, 1 server)\n");
}

int main(int argc, char **argv)
{
    static const struct option lo[] = {
        { "port", required_argument, NULL, 'p' },
        { "full", no_argument, NULL, 'f' },
        { "sizes", required_argument, NULL, 's' },
        { "time", required_argument, NULL, 't' },
        { "peer", required_argument, NULL, 'P' },
        { "quiet", no_argument, NULL, 'q' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    const char *list = NULL, *peer_s = NULL, *role = NULL, *rank = getenv("DN2_RANK");
    int port = 7777, full = 0, opt;

    while ((opt = getopt_long(argc, argv, "p:t:qh", lo, NULL)) != -1) {
        switch (opt) {
        case 'p': port = atoi(optarg); break;
        case 'f': full = 1; break;
        case 's': list = optarg; break;
        case 't': budget_s = strtod(optarg, NULL); break;
        case 'P': peer_s = optarg; break;
        case 'q': verbose = 0; break;
        default: usage(); return 2;
        }
    }
    if (optind < argc) {
        role = argv[optind++];
        if (!strcmp(role, "client") && optind < argc) {
            peer_s = argv[optind++];
        }
    } else if (rank) {
        role = atoi(rank) == 0 ? "client" : atoi(rank) == 1 ? "server" : "none";
        if (!peer_s) {
            peer_s = "192.168.77.2";
        }
    }
    if (!role || (strcmp(role, "server") && strcmp(role, "client") && strcmp(role, "none")) ||
        (!strcmp(role, "client") && !peer_s) || port <= 0 || port > 65535 || budget_s <= 0) {
        usage();
        return 2;
    }
    if (!strcmp(role, "none")) {
        return 0;
    }
    if (full && budget_s == 0.25) {
        budget_s = 1.0;
    }
    buf = calloc(1, MAXMSG + CHUNK);
    rbuf = calloc(1, CHUNK + 64);
    if (!buf || !rbuf) {
        return 1;
    }
    for (size_t i = 0; i < MAXMSG; i++) {
        buf[i] = (uint8_t)(i * 7);
    }
    open_sock(port);
    return !strcmp(role, "server") ? server(120) : client(peer_s, port, full, list);
}
