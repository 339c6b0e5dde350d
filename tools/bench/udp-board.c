/*
 * udp-board: the benchmark's control for BOTF latency.  A plain process with
 * a UDP socket that stands in for "QEMU with a DIMMnet-2 board" in
 * dn2-bench-qtest's harness, so the same driver, the same qtest text
 * protocol, the same trace-stamp method and the same number of processes
 * and wake-ups measure plain UDP too.  What differs between the two runs is
 * then only what the emulator adds: QEMU's main loop and MMIO dispatch, the
 * Window Controller, the fabric endpoint (reliability, ACKs) and the
 * Receive Controller.
 *
 *   udp-board -qtest unix:PATH -device ...,guid=G[,...] [-D LOG] [anything]
 *
 * It accepts a QEMU command line (so dn2-bench-qtest --control can start
 * it as it starts QEMU), uses -qtest, -device's guid= and -D, ignores the
 * rest, and models just what the benchmark touches:
 *
 *   SMA LID (System Register) reads: link ready, LID = 2 + (guid & 0xff);
 *   Write Window 0 writes ("write" command): kept, as the BOTF image;
 *   Command0 Lower writes: a BOTF: the image goes out as one datagram to the
 *     UDP port of the destination LID in the image header (peers find each
 *     other through files "udp-board-LID.port" next to the qtest socket);
 *   Status Initial Address / Area Size writes, Status Address reads: a
 *     receive-status ring that advances by one record per datagram in;
 *   an arriving image whose TYPE is RVL is answered from the receive
 *     thread at once with a datagram of header + Total bytes, sent back to
 *     where the request came from, as the board's Receive Controller answers
 *     an RVL with an RVS;
 *   -object memory-backend-file,...,size=S,mem-path=P: SO-DIMM memory in
 *     that file (created), shared with the driver and interleaved as the
 *     board's: an RVL answer carries SRCOff's bytes, an arriving RVS is
 *     written at its Initial DSTOff before its status record counts
 *     (dn2-bench-qtest's echo-spin watches it land).
 *
 * Like the board (rx-thread=on), a receive thread sleeps in recvfrom() and
 * takes a lock shared with the command loop, which waits in poll() as
 * QEMU's main loop does.  With -D it writes the same trace lines as QEMU's
 * log backend with -msg timestamp=on for dimmnet2_done (BOTF, stamped
 * before sendto) and dimmnet2_rx (stamped after recvfrom), one fflush per
 * line, as QEMU does.
 *
 * Built by meson (tools/meson.build) against include/dimmnet2/dn2_abi.h.
 *
 * SPDX-License-Identifier: MIT
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include "dimmnet2/dn2_abi.h"

static uint64_t ldq(const uint8_t *p)
{
    uint64_t v;

    memcpy(&v, p, 8);           /* x86: little-endian like the board */
    return v;
}

static void stq(uint8_t *p, uint64_t v)
{
    memcpy(p, &v, 8);
}

static uint64_t base = DN2_DEFAULT_BASE0;
static uint16_t lid;
static int ufd;
static char dir[256];
static FILE *logf;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;   /* the "BQL" */
static uint8_t ww[DN2_BOTF_MAX];
static uint32_t st_init, st_bytes = 4096, st_tail;
static uint16_t peer_port[4096];
/* -object memory-backend-file,...,mem-path=P,size=S: SO-DIMM memory shared
 * with the driver (dn2-bench-qtest's echo-spin), interleaved as the board's
 * (two modules, the halves of the file, 8 bytes at a time). */
static uint8_t *mem;
static uint64_t memsz;

static void die(const char *fmt, const char *arg)
{
    fprintf(stderr, "udp-board: ");
    fprintf(stderr, fmt, arg);
    fputc('\n', stderr);
    exit(1);
}

static void stamp(const char *what)
{
    struct timeval tv;

    if (!logf) {
        return;
    }
    gettimeofday(&tv, NULL);
    fprintf(logf, "%d@%ld.%06ld:%s\n", (int)getpid(), (long)tv.tv_sec, (long)tv.tv_usec, what);
    fflush(logf);
}

/* The UDP port of a LID: from the file its udp-board wrote, cached. */
static uint16_t port_of(uint16_t dlid)
{
    char path[300];
    FILE *f;
    unsigned p = 0;

    dlid &= 0xfff;
    if (peer_port[dlid]) {
        return peer_port[dlid];
    }
    snprintf(path, sizeof(path), "%s/udp-board-%u.port", dir, dlid);
    f = fopen(path, "r");
    if (f) {
        if (fscanf(f, "%u", &p) != 1) {
            p = 0;
        }
        fclose(f);
    }
    peer_port[dlid] = (uint16_t)p;
    return (uint16_t)p;
}

static void send_to_lid(uint16_t dlid, const void *buf, size_t len)
{
    struct sockaddr_in a = { .sin_family = AF_INET,
                             .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };

    a.sin_port = htons(port_of(dlid));
    if (a.sin_port) {
        (void)sendto(ufd, buf, len, MSG_DONTWAIT, (struct sockaddr *)&a, sizeof(a));
    }
}

/* Copy between SO-DIMM offset off and buf, 8-byte aligned words. */
static void mem_rw(uint64_t off, uint8_t *buf, size_t len, bool write)
{
    size_t i;

    if (!mem || (off & 7) || off > memsz || len > memsz - off) {
        return;
    }
    for (i = 0; i + 8 <= len; i += 8) {
        uint64_t g = off + i;
        uint8_t *m = mem + dn2_sdimm_module(g) * (memsz / 2) + dn2_sdimm_module_offset(g);
        if (write) {
            memcpy(m, buf + i, 8);
        } else {
            memcpy(buf + i, m, 8);
        }
    }
}

static void *rx_thread(void *arg)
{
    uint8_t buf[8192];
    char line[160];

    (void)arg;
    for (;;) {
        struct dn2_hdr h;
        struct sockaddr_in from;
        socklen_t fl = sizeof(from);
        ssize_t n = recvfrom(ufd, buf, sizeof(buf), 0, (struct sockaddr *)&from, &fl);
        if (n < 16) {
            if (n < 0 && errno != EINTR) {
                break;
            }
            continue;
        }
        pthread_mutex_lock(&lock);
        dn2_hdr0_decode(&h, ldq(buf));
        snprintf(line, sizeof(line), "dimmnet2_rx board 0 from LID 0x%x to WID 0: %s, %u data "
                 "bytes", (unsigned)(ldq(buf + 8) >> 48), h.type == DN2_OP_RVL ? "RVL" : "RVS",
                 (unsigned)n - 16);
        if (h.type != DN2_OP_RVL) {
            /* An RVS: its data to the Initial DSTOff, then the record. */
            mem_rw((uint32_t)ldq(buf + 8), buf + 16, (size_t)n - 16, true);
            stamp(line);
            st_tail = (st_tail + DN2_STATUS_REC_SIZE) % st_bytes;
        } else {
            /* The Receive Controller's answer: an RVS of Total bytes from
             * SRCOff to the requester's DSTOff, sent back where it came
             * from. */
            uint32_t total = (uint32_t)ldq(buf + 16);
            uint64_t w1 = ldq(buf + 8);
            uint8_t out[16 + 4096];
            struct dn2_hdr a;
            if (total > 4096) {
                total = 4096;
            }
            memset(out, 0, 16 + total);
            memset(&a, 0, sizeof(a));
            a.type = DN2_OP_RVS;
            a.eflag = 1;
            stq(out, dn2_hdr0_encode(&a));
            stq(out + 8, dn2_hdr1_encode((uint32_t)(w1 >> 32), 0));
            mem_rw((uint32_t)w1, out + 16, total, false);
            (void)sendto(ufd, out, 16 + total, MSG_DONTWAIT, (struct sockaddr *)&from, fl);
        }
        pthread_mutex_unlock(&lock);
    }
    return NULL;
}

static uint64_t readq(uint64_t addr)
{
    if (addr == base + DN2_SR_BASE + DN2_SR_SMA) {
        return dn2_sma_encode(lid, DN2_SMA_LINK_READY);
    }
    if (addr == base + DN2_UR_OFF(0) + DN2_UR_STATUS_ADDR) {
        return st_init + st_tail;
    }
    return 0;
}

static void writeq(uint64_t addr, uint64_t v)
{
    if (addr == base + DN2_UR_OFF(0) + DN2_UR_STATUS_INIT) {
        st_init = (uint32_t)v;
        st_tail = 0;
    } else if (addr == base + DN2_UR_OFF(0) + DN2_UR_STATUS_SIZE) {
        st_bytes = dn2_status_area_bytes((uint32_t)v);
        if (!st_bytes) {
            st_bytes = 4096;
        }
    } else if (addr == base + DN2_UR_OFF(0) + DN2_UR_CMD0_LOWER) {
        uint32_t size = dn2_botf_size(v);
        struct dn2_hdr h;
        if (size > DN2_BOTF_MAX) {
            size = DN2_BOTF_MAX;
        }
        dn2_hdr0_decode(&h, ldq(ww));
        stamp("dimmnet2_done board 0 WID 0 BOTF done, 24 bytes");
        send_to_lid(h.dlid, ww, size);
    }
}

static int hexval(int c)
{
    return c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10;
}

/* One qtest command line; returns the reply. */
static const char *command(char *l, char *reply, size_t cap)
{
    uint64_t a, v, n;
    char *p;

    if (sscanf(l, "readq %" SCNx64, &a) == 1) {
        pthread_mutex_lock(&lock);
        v = readq(a);
        pthread_mutex_unlock(&lock);
        snprintf(reply, cap, "OK 0x%016" PRIx64 "\n", v);
        return reply;
    }
    if (sscanf(l, "writeq %" SCNx64 " %" SCNx64, &a, &v) == 2) {
        pthread_mutex_lock(&lock);
        writeq(a, v);
        pthread_mutex_unlock(&lock);
        return "OK\n";
    }
    if (sscanf(l, "write %" SCNx64 " %" SCNx64, &a, &n) == 2 && (p = strrchr(l, ' ')) &&
        !strncmp(p, " 0x", 3)) {
        uint64_t i;
        p += 3;
        pthread_mutex_lock(&lock);
        for (i = 0; i < n && p[2 * i] && p[2 * i + 1]; i++) {
            if (a + i >= base && a + i < base + sizeof(ww)) {
                ww[a + i - base] = (uint8_t)(hexval(p[2 * i]) << 4 | hexval(p[2 * i + 1]));
            }
        }
        pthread_mutex_unlock(&lock);
        return "OK\n";
    }
    return "OK\n";              /* anything else: accepted, no effect */
}

int main(int argc, char **argv)
{
    const char *qtest = NULL, *dev = NULL, *logpath = NULL, *memobj = NULL, *g;
    struct sockaddr_un un = { .sun_family = AF_UNIX };
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    socklen_t al = sizeof(a);
    static char buf[1 << 17];
    char tmp[256], path[300], reply[64];
    size_t have = 0;
    pthread_t th;
    FILE *f;
    int i, qfd;

    for (i = 1; i < argc - 1; i++) {
        if (!strcmp(argv[i], "-qtest")) {
            qtest = argv[++i];
        } else if (!strcmp(argv[i], "-device")) {
            dev = argv[++i];
        } else if (!strcmp(argv[i], "-D")) {
            logpath = argv[++i];
        } else if (!strcmp(argv[i], "-object") && strstr(argv[i + 1], "mem-path=")) {
            memobj = argv[++i];
        }
    }
    if (memobj) {
        char path[256];
        const char *mp = strstr(memobj, "mem-path="), *sz = strstr(memobj, "size=");
        int fd;
        snprintf(path, sizeof(path), "%.*s", (int)strcspn(mp + 9, ","), mp + 9);
        memsz = sz ? strtoull(sz + 5, NULL, 0) : 0;
        if (memsz < 2u << 20 || (memsz & (memsz - 1))) {
            die("-object %s: size= must be a power of two of at least 2 MiB", memobj);
        }
        fd = open(path, O_RDWR | O_CREAT, 0600);
        if (fd < 0 || ftruncate(fd, (off_t)memsz) < 0) {
            die("cannot create %s", path);
        }
        mem = mmap(NULL, memsz, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        close(fd);
        if (mem == MAP_FAILED) {
            die("cannot map %s", path);
        }
    }
    if (!qtest || strncmp(qtest, "unix:", 5) || strlen(qtest + 5) >= sizeof(un.sun_path)) {
        die("need -qtest unix:PATH (got %s)", qtest ? qtest : "nothing");
    }
    if (!dev || !(g = strstr(dev, "guid="))) {
        die("need -device ...,guid=G (got %s)", dev ? dev : "nothing");
    }
    lid = (uint16_t)(2 + (strtoull(g + 5, NULL, 0) & 0xff));
    snprintf(tmp, sizeof(tmp), "%s", qtest + 5);
    snprintf(dir, sizeof(dir), "%s", dirname(tmp));
    if (logpath && !(logf = fopen(logpath, "w"))) {
        die("cannot write %s", logpath);
    }
    ufd = socket(AF_INET, SOCK_DGRAM, 0);
    if (ufd < 0 || bind(ufd, (struct sockaddr *)&a, sizeof(a)) < 0 ||
        getsockname(ufd, (struct sockaddr *)&a, &al) < 0) {
        die("UDP socket: %s", strerror(errno));
    }
    snprintf(path, sizeof(path), "%s/udp-board-%u.port", dir, lid);
    f = fopen(path, "w");
    if (!f) {
        die("cannot write %s", path);
    }
    fprintf(f, "%u\n", ntohs(a.sin_port));
    fclose(f);
    if (pthread_create(&th, NULL, rx_thread, NULL)) {
        die("%s", "pthread_create failed");
    }
    memcpy(un.sun_path, qtest + 5, strlen(qtest + 5) + 1);
    qfd = socket(AF_UNIX, SOCK_STREAM, 0);
    if (qfd < 0 || connect(qfd, (struct sockaddr *)&un, sizeof(un)) < 0) {
        die("cannot connect to %s", qtest + 5);
    }
    for (;;) {
        struct pollfd p = { .fd = qfd, .events = POLLIN };
        char *nl;
        ssize_t r;

        if (poll(&p, 1, -1) < 0 && errno != EINTR) {
            break;
        }
        r = read(qfd, buf + have, sizeof(buf) - 1 - have);
        if (r <= 0) {
            if (r < 0 && errno == EINTR) {
                continue;
            }
            break;              /* the driver went away */
        }
        have += (size_t)r;
        while ((nl = memchr(buf, '\n', have))) {
            const char *rep;
            size_t used = (size_t)(nl - buf) + 1;
            *nl = 0;
            rep = command(buf, reply, sizeof(reply));
            if (write(qfd, rep, strlen(rep)) < 0) {
                return 1;
            }
            memmove(buf, buf + used, have - used);
            have -= used;
        }
        if (have == sizeof(buf) - 1) {
            have = 0;           /* a line longer than any command: drop it */
        }
    }
    unlink(path);
    return 0;
}
