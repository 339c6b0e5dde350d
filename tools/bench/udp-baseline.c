/*
 * udp-baseline: what plain UDP on loopback does between two processes, the
 * yardstick for the DIMMnet-2 fabric's figures (scripts/bench.sh,
 * docs/benchmarks.md).
 *
 *   udp-baseline pingpong SIZE ITERS
 *       one datagram of SIZE bytes back and forth ITERS times (after 10% as
 *       warm-up); prints the one-way time (round trip / 2) median and p99.
 *       Both sides block in recv().
 *   udp-baseline pingpong-poll SIZE ITERS
 *       the same, but both sides wait in poll() on non-blocking sockets and
 *       then drain them with recv() until EAGAIN, as an event loop (QEMU's
 *       main loop) does.
 *   udp-baseline stream TOTAL DGRAM [REPS]
 *       TOTAL bytes in datagrams of DGRAM bytes, with a window of 2 MiB
 *       (the receiver acknowledges every 256 KiB, so a socket buffer never
 *       overflows on loopback); time from the first send to the moment the
 *       receiver has every byte (CLOCK_MONOTONIC is shared by both
 *       processes); prints the best and median of REPS runs in MB/s
 *       (10^6 bytes per second).
 *
 * Output: one line of key=value pairs, for scripts/bench.sh.
 * Plain POSIX C; the two processes are a fork() of this one.
 *
 * SPDX-License-Identifier: MIT
 */
#define _GNU_SOURCE 1
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>

#define WINDOW   (2u << 20)
#define ACK_EVERY (256u << 10)
#define MAXDG    65507

static uint64_t now_ns(void)
{
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static void die(const char *what)
{
    perror(what);
    exit(1);
}

static int udp_socket(struct sockaddr_in *a)
{
    int fd = socket(AF_INET, SOCK_DGRAM, 0);
    int sz = 8 << 20;
    socklen_t l = sizeof(*a);

    if (fd < 0) {
        die("socket");
    }
    /* as much as the host allows (root may exceed rmem_max) */
    if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &sz, sizeof(sz)) < 0) {
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz));
    }
    if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &sz, sizeof(sz)) < 0) {
        setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz));
    }
    memset(a, 0, sizeof(*a));
    a->sin_family = AF_INET;
    a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(fd, (struct sockaddr *)a, sizeof(*a)) < 0 ||
        getsockname(fd, (struct sockaddr *)a, &l) < 0) {
        die("bind");
    }
    return fd;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

    return x < y ? -1 : x > y;
}

/* ------------------------------------------------------------ ping-pong */
/* Wait for a datagram as an event loop does: poll, then read until EAGAIN. */
static ssize_t evloop_recv(int fd, uint8_t *buf, size_t cap)
{
    ssize_t got = -1;

    while (got < 0) {
        struct pollfd p = { .fd = fd, .events = POLLIN };
        if (poll(&p, 1, 5000) <= 0) {
            return -1;
        }
        for (;;) {
            ssize_t n = recv(fd, buf, cap, MSG_DONTWAIT);
            if (n < 0) {
                break;
            }
            got = n;
        }
    }
    return got;
}

static bool use_poll;

static ssize_t rx(int fd, uint8_t *buf, size_t cap)
{
    return use_poll ? evloop_recv(fd, buf, cap) : recv(fd, buf, cap, 0);
}

static void pingpong(size_t size, unsigned iters)
{
    struct sockaddr_in a, b;
    int fa = udp_socket(&a), fb = udp_socket(&b);
    unsigned warm = iters / 10 + 1, i;
    uint8_t *buf = calloc(1, size ? size : 1);
    uint64_t *rtt = calloc(iters, sizeof(*rtt));
    pid_t pid;

    if (!buf || !rtt) {
        die("calloc");
    }
    connect(fa, (struct sockaddr *)&b, sizeof(b));
    connect(fb, (struct sockaddr *)&a, sizeof(a));
    pid = fork();
    if (pid < 0) {
        die("fork");
    }
    if (pid == 0) {
        /* echo */
        for (i = 0; i < warm + iters; i++) {
            ssize_t n = rx(fb, buf, size ? size : 1);
            if (n < 0 || send(fb, buf, n, 0) < 0) {
                _exit(1);
            }
        }
        _exit(0);
    }
    for (i = 0; i < warm + iters; i++) {
        uint64_t t0 = now_ns();
        if (send(fa, buf, size, 0) < 0 || rx(fa, buf, size ? size : 1) < 0) {
            die("pingpong");
        }
        if (i >= warm) {
            rtt[i - warm] = now_ns() - t0;
        }
    }
    waitpid(pid, NULL, 0);
    qsort(rtt, iters, sizeof(*rtt), cmp_u64);
    printf("%s size=%zu iters=%u oneway_median_us=%.2f oneway_p99_us=%.2f "
           "oneway_min_us=%.2f\n", use_poll ? "pingpong-poll" : "pingpong", size, iters, rtt[iters / 2] / 2000.0,
           rtt[(uint64_t)iters * 99 / 100] / 2000.0, rtt[0] / 2000.0);
    free(buf);
    free(rtt);
}

/* --------------------------------------------------------------- stream */
struct ack {
    uint64_t got;           /* bytes received so far in this run */
    uint64_t done_ns;       /* when the last byte arrived (0 = not yet) */
};

/* The sink (child): `runs` runs of sizes[i] bytes each; acknowledges every
 * ACK_EVERY bytes and at the end of a run. */
static void sink(int fr, const size_t *sizes, unsigned runs)
{
    uint8_t *buf = malloc(MAXDG);
    unsigned i;

    if (!buf) {
        _exit(1);
    }
    for (i = 0; i < runs; i++) {
        uint64_t got = 0, last_ack = 0;
        while (got < sizes[i]) {
            ssize_t n = recv(fr, buf, MAXDG, 0);
            if (n < 0) {
                _exit(1);
            }
            got += (uint64_t)n;
            if (got - last_ack >= ACK_EVERY || got >= sizes[i]) {
                struct ack k = { got, got >= sizes[i] ? now_ns() : 0 };
                send(fr, &k, sizeof(k), 0);
                last_ack = got;
            }
        }
    }
    _exit(0);
}

/* One run: MB/s, or -1 when the stream stalled (a datagram was lost). */
static double stream_once(int fs, size_t total, size_t dg, uint8_t *buf)
{
    uint64_t sent = 0, acked = 0, t0, done = 0;

    t0 = now_ns();
    while (!done) {
        struct pollfd p = { .fd = fs, .events = POLLIN };
        while (sent < total && sent - acked < WINDOW) {
            size_t n = total - sent < dg ? total - sent : dg;
            if (send(fs, buf, n, 0) < 0) {
                if (errno == EAGAIN || errno == ENOBUFS) {
                    break;
                }
                die("send");
            }
            sent += n;
        }
        if (poll(&p, 1, 2000) <= 0) {
            fprintf(stderr, "udp-baseline: stream stalled at %" PRIu64 " of %zu bytes "
                    "(datagram lost?)\n", acked, total);
            return -1;
        }
        while (1) {
            struct ack k;
            ssize_t n = recv(fs, &k, sizeof(k), MSG_DONTWAIT);
            if (n != (ssize_t)sizeof(k)) {
                break;
            }
            if (k.got > acked) {
                acked = k.got;
            }
            if (k.done_ns) {
                done = k.done_ns;
            }
        }
    }
    return (double)total / ((double)(done - t0) / 1e9) / 1e6;
}

static int cmp_dbl(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return x < y ? -1 : x > y;
}

static void stream(size_t total, size_t dg, unsigned reps)
{
    struct sockaddr_in a, b;
    int fs = udp_socket(&a), fr = udp_socket(&b);
    double *r = calloc(reps, sizeof(*r));
    size_t *sizes = calloc(reps + 1, sizeof(*sizes));
    uint8_t *buf = malloc(MAXDG);
    unsigned i, ok = 0;
    pid_t pid;

    if (!r || !sizes || !buf) {
        die("calloc");
    }
    memset(buf, 0x5a, MAXDG);
    connect(fs, (struct sockaddr *)&b, sizeof(b));
    connect(fr, (struct sockaddr *)&a, sizeof(a));
    sizes[0] = total < (1u << 20) ? total : (1u << 20);   /* warm-up */
    for (i = 1; i <= reps; i++) {
        sizes[i] = total;
    }
    pid = fork();
    if (pid < 0) {
        die("fork");
    }
    if (pid == 0) {
        sink(fr, sizes, reps + 1);
    }
    if (stream_once(fs, sizes[0], dg, buf) > 0) {
        for (i = 0; i < reps; i++) {
            double v = stream_once(fs, total, dg, buf);
            if (v < 0) {
                break;          /* the sink is out of step: stop */
            }
            r[ok++] = v;
        }
    }
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    if (!ok) {
        printf("stream total=%zu dgram=%zu failed=1\n", total, dg);
    } else {
        qsort(r, ok, sizeof(*r), cmp_dbl);
        printf("stream total=%zu dgram=%zu reps=%u best_mbps=%.1f median_mbps=%.1f\n",
               total, dg, ok, r[ok - 1], r[ok / 2]);
    }
    free(r);
    free(sizes);
    free(buf);
    close(fs);
    close(fr);
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc == 4 && !strcmp(argv[1], "pingpong-poll")) {
        use_poll = true;
        pingpong(strtoul(argv[2], NULL, 0), strtoul(argv[3], NULL, 0));
        return 0;
    }
    if (argc == 4 && !strcmp(argv[1], "pingpong")) {
        pingpong(strtoul(argv[2], NULL, 0), strtoul(argv[3], NULL, 0));
        return 0;
    }
    if ((argc == 4 || argc == 5) && !strcmp(argv[1], "stream")) {
        size_t dg = strtoul(argv[3], NULL, 0);
        if (!dg || dg > MAXDG) {
            fprintf(stderr, "udp-baseline: datagram size 1..%d\n", MAXDG);
            return 2;
        }
        stream(strtoul(argv[2], NULL, 0), dg, argc == 5 ? strtoul(argv[4], NULL, 0) : 5);
        return 0;
    }
    fprintf(stderr, "usage: udp-baseline pingpong|pingpong-poll SIZE ITERS\n"
                    "       udp-baseline stream TOTAL DGRAM [REPS]\n");
    return 2;
}
