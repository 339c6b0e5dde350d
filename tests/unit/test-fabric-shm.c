/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of libdn2fab's same-host sync domain (fabric/dn2fab-shm.c,
 * docs/virtual-time.md "Same-host synchronisation through shared memory"),
 * TAP through tests/tap/dn2-tap.h's table runner.
 *
 * Single process: the grant formula against the switch's, the file's
 * checks, the table's grants, the rings, a post lowering its receiver's
 * promise, a horizon that stops at a packet still in the ring, malformed
 * entries, a silent member, a dead one.  Forked
 * members: a lock-step program (timers and packets that answer packets)
 * run by N processes, each advancing its virtual clock by the rule, whose
 * deliveries must equal those of a sequential run of the same program in
 * (vtime, source LID, vseq) order, twice; a killed member reported to the
 * others; and a benchmark line (rounds per second of wall time, wake-ups
 * per round: figures, not assertions).
 */
#define _GNU_SOURCE 1
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "dn2fab.h"
#include "dn2fab-shm.h"
#include "dn2fab-sw.h"
#include "../tap/dn2-tap.h"

static char dir[256];           /* a temporary directory for the domains */

static const char *domain_path(const char *name)
{
    static char p[512];

    snprintf(p, sizeof(p), "%s/%s", dir, name);
    return p;
}

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static struct dn2f_shm *att(const char *path, unsigned i)
{
    int err = 0;
    struct dn2f_shm *m = dn2f_shm_attach(path, i, (uint16_t)(i + 1), &err);

    if (!m) {
        fprintf(stderr, "# attach %s member %u: %s\n", path, i, strerror(-err));
    }
    return m;
}

static int mk(const char *name, unsigned members, unsigned expected, unsigned entries,
              uint64_t l, uint64_t q)
{
    struct dn2f_shm_cfg cfg = {
        .members = members, .expected = expected, .ring_entries = entries,
        .lookahead_ns = l, .quantum_ns = q,
    };

    return dn2f_shm_create(domain_path(name), &cfg);
}


/* ============================================================ formula */
static bool t_formula(void)
{
    uint64_t e[8], g1[8], g2[8];
    unsigned c, i;

    for (c = 0; c < 20000; c++) {
        unsigned n = 1 + (unsigned)(rnd() % 8);
        uint64_t l = 1 + rnd() % 3000, q = (rnd() % 3) ? 0 : 1 + rnd() % 5000;
        for (i = 0; i < n; i++) {
            uint64_t r = rnd();
            e[i] = (r % 17 == 0) ? DN2F_VT_INFINITY :
                   (r % 13 == 0) ? DN2F_VT_INFINITY - rnd() % 4000 : rnd() % 100000;
        }
        dn2f_vt_grants(e, n, l, q, g1);
        dn2f_vt_grants(e, n, l, q, g2);
        for (i = 0; i < n; i++) {
            TAP_REQUIRE(g1[i] == g2[i], "case %u member %u of %u: %llu, switch %llu", c, i, n,
                        (unsigned long long)g1[i], (unsigned long long)g2[i]);
        }
        TAP_REQUIRE(dn2f_vt_d(e[0], l, q) == dn2f_vt_d(e[0], l, q), "D differs");
    }
    return true;
}


/* ===================================================== file and header */
static bool t_header(void)
{
    const char *p = domain_path("hdr");
    struct dn2f_shm *a, *b;
    struct dn2f_shm_cfg bad = { .members = 2, .ring_entries = 6, .lookahead_ns = 1 };
    struct stat st;
    char byte;
    int err, fd;

    TAP_REQUIRE(dn2f_shm_create(p, &bad) == -EINVAL, "ring of 6 entries accepted");
    bad.ring_entries = 8;
    bad.lookahead_ns = 0;
    TAP_REQUIRE(dn2f_shm_create(p, &bad) == -EINVAL, "lookahead 0 accepted");
    bad.lookahead_ns = 1;
    bad.members = DN2F_SHM_MAX_MEMBERS + 1;
    TAP_REQUIRE(dn2f_shm_create(p, &bad) == -EINVAL, "too many members accepted");
    TAP_REQUIRE(mk("hdr", 2, 0, 8, 1000, 0) == 0, "create");
    TAP_REQUIRE(!dn2f_shm_attach(p, 2, 3, &err) && err == -ERANGE, "index 2 of 2: %d", err);
    a = att(p, 0);
    TAP_REQUIRE(a, "attach 0");
    TAP_REQUIRE(!dn2f_shm_attach(p, 0, 1, &err) && err == -EBUSY, "slot 0 twice: %d", err);
    b = att(p, 1);
    TAP_REQUIRE(b && dn2f_shm_members(b) == 2 && dn2f_shm_index(b) == 1, "attach 1");
    TAP_REQUIRE(dn2f_shm_find_lid(a, 2) == 1 && dn2f_shm_find_lid(b, 1) == 0 &&
                dn2f_shm_find_lid(a, 3) == -ENOENT, "members by LID");
    dn2f_shm_detach(b);
    b = att(p, 1);
    TAP_REQUIRE(b, "a slot left is taken again");
    dn2f_shm_detach(b);
    dn2f_shm_detach(a);

    /* a wrong magic, version, or size is not a domain */
    fd = open(p, O_RDWR);
    TAP_REQUIRE(fd >= 0, "open");
    TAP_REQUIRE(pread(fd, &byte, 1, 0) == 1 && pwrite(fd, "X", 1, 0) == 1, "write");
    TAP_REQUIRE(!dn2f_shm_attach(p, 0, 1, &err) && err == -EPROTO, "bad magic: %d", err);
    TAP_REQUIRE(pwrite(fd, &byte, 1, 0) == 1, "write");
    TAP_REQUIRE(pwrite(fd, "\x07", 1, 8) == 1, "write");
    TAP_REQUIRE(!dn2f_shm_attach(p, 0, 1, &err) && err == -EPROTO, "bad version: %d", err);
    TAP_REQUIRE(pwrite(fd, "\x01", 1, 8) == 1, "write");
    a = att(p, 0);
    TAP_REQUIRE(a, "repaired");
    dn2f_shm_detach(a);
    TAP_REQUIRE(fstat(fd, &st) == 0 && ftruncate(fd, st.st_size - 16) == 0, "truncate");
    TAP_REQUIRE(!dn2f_shm_attach(p, 0, 1, &err) && err == -EPROTO, "short file: %d", err);
    close(fd);
    TAP_REQUIRE(!dn2f_shm_attach(domain_path("none"), 0, 1, &err) && err == -ENOENT,
                "no file: %d", err);
    return true;
}


/* ============================================================= grants */
/* Each member's horizon: the formula's grant (never below old), lowered
 * to ring[i], the least vtime still in its ring (NULL: all empty). */
static bool expect_grants(struct dn2f_shm **m, const uint64_t *e, unsigned n,
                          const uint64_t *old, const uint64_t *ring, uint64_t l, uint64_t q)
{
    uint64_t g[8];
    unsigned i;

    dn2f_vt_grants(e, n, l, q, g);
    for (i = 0; i < n; i++) {
        uint64_t want = old && old[i] > g[i] ? old[i] : g[i];
        want = ring && ring[i] < want ? ring[i] : want;
        TAP_REQUIRE(dn2f_shm_grant(m[i]) == want, "member %u: grant %llu, want %llu", i,
                    (unsigned long long)dn2f_shm_grant(m[i]), (unsigned long long)want);
    }
    return true;
}

static bool t_grants(void)
{
    const char *p = domain_path("grants");
    struct dn2f_shm *m[3], *solo;
    uint64_t e[3] = { 0, 0, 0 }, old[3];
    unsigned i;

    TAP_REQUIRE(mk("grants", 3, 0, 8, 1000, 0) == 0, "create");
    m[0] = att(p, 0);
    m[1] = att(p, 1);
    TAP_REQUIRE(m[0] && m[1], "attach");
    TAP_REQUIRE(dn2f_shm_publish(m[0], 5000, 5000) == 0, "publish");
    TAP_REQUIRE(dn2f_shm_grant(m[0]) == 0 && dn2f_shm_grant(m[1]) == 0,
                "a grant before all 3 are there");
    TAP_REQUIRE(dn2f_shm_wait(m[0], 1000000) == -ETIMEDOUT, "wait before the start");
    m[2] = att(p, 2);
    TAP_REQUIRE(m[2], "attach 2");
    e[0] = 5000;
    if (!expect_grants(m, e, 3, NULL, NULL, 1000, 0)) {
        return false;
    }
    TAP_REQUIRE(dn2f_shm_publish(m[1], 2000, 7000) == 0 &&
                dn2f_shm_publish(m[2], 3000, 3000) == 0, "publish");
    e[1] = 7000;
    e[2] = 3000;
    if (!expect_grants(m, e, 3, NULL, NULL, 1000, 0)) {
        return false;
    }
    /* a lower promise never lowers a grant */
    for (i = 0; i < 3; i++) {
        old[i] = dn2f_shm_grant(m[i]);
    }
    TAP_REQUIRE(dn2f_shm_publish(m[0], 5000, 5000) == 0 &&
                dn2f_shm_publish(m[1], 2500, 2500) == 0, "publish");
    e[1] = 2500;
    if (!expect_grants(m, e, 3, old, NULL, 1000, 0)) {
        return false;
    }
    TAP_REQUIRE(dn2f_shm_publish(m[1], 2000, 2000) == -EINVAL, "a clock going back");
    /* the one that leaves is out of the set */
    dn2f_shm_detach(m[2]);
    for (i = 0; i < 2; i++) {
        old[i] = dn2f_shm_grant(m[i]);
    }
    TAP_REQUIRE(dn2f_shm_publish(m[0], 9000, 9000) == 0 &&
                dn2f_shm_publish(m[1], 9500, 12000) == 0, "publish");
    e[0] = 9000;
    e[1] = 12000;
    if (!expect_grants(m, e, 2, old, NULL, 1000, 0)) {
        return false;
    }
    TAP_REQUIRE(dn2f_shm_wait(m[0], -1) == 0, "wait with its grant beyond its clock");
    dn2f_shm_detach(m[0]);
    TAP_REQUIRE(dn2f_shm_grant(m[1]) == DN2F_VT_INFINITY, "alone: %llu",
                (unsigned long long)dn2f_shm_grant(m[1]));
    dn2f_shm_detach(m[1]);

    TAP_REQUIRE(mk("solo", 1, 0, 2, 1000, 0) == 0, "create");
    solo = att(domain_path("solo"), 0);
    TAP_REQUIRE(solo && dn2f_shm_grant(solo) == DN2F_VT_INFINITY, "a domain of one");
    dn2f_shm_detach(solo);
    return true;
}


/* =============================================================== rings */
static bool t_ring(void)
{
    const char *p = domain_path("ring");
    struct dn2f_shm *a, *b;
    struct dn2f_shm_pkt *pk = malloc(sizeof(*pk));
    struct dn2f_shm_stats st;
    uint8_t buf[DN2F_PKT_MAX + 1];
    unsigned i;

    TAP_REQUIRE(pk, "malloc");
    TAP_REQUIRE(mk("ring", 2, 0, 4, 1000, 0) == 0, "create");
    a = att(p, 0);
    b = att(p, 1);
    TAP_REQUIRE(a && b, "attach");
    memset(buf, 0xab, sizeof(buf));
    TAP_REQUIRE(dn2f_shm_post(a, 1, buf, DN2F_PKT_MIN - 1, 1000, 0) == -EINVAL, "short");
    TAP_REQUIRE(dn2f_shm_post(a, 1, buf, DN2F_PKT_MAX + 1, 1000, 0) == -EINVAL, "long");
    TAP_REQUIRE(dn2f_shm_post(a, 2, buf, 16, 1000, 0) == -EINVAL, "member 2 of 2");
    for (i = 0; i < 4; i++) {
        buf[0] = (uint8_t)i;
        TAP_REQUIRE(dn2f_shm_post(a, 1, buf, i ? 16 : DN2F_PKT_MAX, 9000 - i, i) == 0,
                    "post %u", i);
    }
    TAP_REQUIRE(dn2f_shm_post(a, 1, buf, 16, 1000, 9) == -EAGAIN, "a full ring");
    TAP_REQUIRE(dn2f_shm_wait(b, -1) == 1, "the receiver is asked for room");
    for (i = 0; i < 4; i++) {
        TAP_REQUIRE(dn2f_shm_recv(b, pk) == 1, "recv %u", i);
        TAP_REQUIRE(pk->data[0] == i && pk->vseq == i && pk->vtime == 9000 - i &&
                    pk->src == 0 && pk->slid == 1 && pk->len == (i ? 16 : DN2F_PKT_MAX),
                    "entry %u: vseq %u vtime %llu src %u slid %u len %u", i, pk->vseq,
                    (unsigned long long)pk->vtime, pk->src, pk->slid, pk->len);
        if (i == 0) {
            TAP_REQUIRE(dn2f_shm_wait_space(a, 1, 0) == 0, "room after one taken");
        }
    }
    TAP_REQUIRE(dn2f_shm_recv(b, pk) == 0, "empty");
    TAP_REQUIRE(dn2f_shm_post(a, 0, buf, 16, 1000, 5) == 0 && dn2f_shm_recv(a, pk) == 1 &&
                pk->src == 0, "to itself");
    /* 10 posts through a ring of 4 */
    for (i = 0; i < 10; i++) {
        TAP_REQUIRE(dn2f_shm_post(b, 0, buf, 16, 2000 + i, 100 + i) == 0, "post %u", i);
        TAP_REQUIRE(dn2f_shm_recv(a, pk) == 1 && pk->vseq == 100 + i, "wrap %u", i);
    }
    dn2f_shm_stats(a, &st);
    TAP_REQUIRE(st.full == 1 && st.posts == 5 && st.recvs == 11, "stats: full %llu posts %llu "
                "recvs %llu", (unsigned long long)st.full, (unsigned long long)st.posts,
                (unsigned long long)st.recvs);
    dn2f_shm_detach(b);
    TAP_REQUIRE(dn2f_shm_post(a, 1, buf, 16, 1000, 0) == -ENOENT, "to a member that left");
    TAP_REQUIRE(dn2f_shm_wait_space(a, 1, 0) == -ENOENT, "room at a member that left");
    dn2f_shm_detach(a);
    free(pk);
    return true;
}

static bool t_order(void)
{
    struct dn2f_shm_pkt a = { .vtime = 10, .slid = 5, .vseq = 9 }, b = a;

    TAP_REQUIRE(dn2f_shm_pkt_cmp(&a, &b) == 0, "equal");
    b.vtime = 11;
    b.slid = 1;
    b.vseq = 0;
    TAP_REQUIRE(dn2f_shm_pkt_cmp(&a, &b) < 0 && dn2f_shm_pkt_cmp(&b, &a) > 0, "vtime first");
    b.vtime = 10;
    TAP_REQUIRE(dn2f_shm_pkt_cmp(&a, &b) > 0, "then the source LID");
    b.slid = 5;
    TAP_REQUIRE(dn2f_shm_pkt_cmp(&a, &b) > 0, "then vseq");
    return true;
}


/* ============================= a packet lowers its receiver's promise */
static bool t_lowering(void)
{
    const char *p = domain_path("lower");
    struct dn2f_shm *m[3];
    struct dn2f_shm_pkt *pk = malloc(sizeof(*pk));
    uint64_t e[3], old[3];
    uint64_t ring[3] = { DN2F_VT_INFINITY, DN2F_VT_INFINITY, DN2F_VT_INFINITY };
    uint8_t buf[16] = { 0 };
    unsigned i;

    TAP_REQUIRE(pk, "malloc");
    TAP_REQUIRE(mk("lower", 3, 0, 8, 1000, 0) == 0, "create");
    for (i = 0; i < 3; i++) {
        m[i] = att(p, i);
        TAP_REQUIRE(m[i], "attach");
    }
    /* A busy at 1000, B idle until 50000, C busy at 3000 */
    TAP_REQUIRE(dn2f_shm_publish(m[1], 0, 50000) == 0 && dn2f_shm_publish(m[0], 1000, 1000) == 0 &&
                dn2f_shm_publish(m[2], 3000, 3000) == 0, "publish");
    /* A sends B a packet at 1500 for 2500, then reaches 4000 */
    TAP_REQUIRE(dn2f_shm_post(m[0], 1, buf, sizeof(buf), 2500, 0) == 0, "post");
    ring[1] = 2500;                     /* B's horizon stops there until it takes it */
    for (i = 0; i < 3; i++) {
        old[i] = dn2f_shm_grant(m[i]);
    }
    TAP_REQUIRE(dn2f_shm_publish(m[0], 4000, 4000) == 0, "publish");
    /* B may answer from 2500 on: C's grant is 3500, not 5000 (B at 50000) */
    e[0] = 4000;
    e[1] = 2500;
    e[2] = 3000;
    if (!expect_grants(m, e, 3, old, ring, 1000, 0)) {
        return false;
    }
    TAP_REQUIRE(dn2f_shm_grant(m[2]) == 3500, "C's grant %llu",
                (unsigned long long)dn2f_shm_grant(m[2]));
    /* B publishes without having taken it: the ring still holds it */
    TAP_REQUIRE(dn2f_shm_publish(m[1], 0, 50000) == 0, "publish");
    if (!expect_grants(m, e, 3, old, ring, 1000, 0)) {
        return false;
    }
    /* B takes it and publishes a promise that forgot it: the library keeps it */
    TAP_REQUIRE(dn2f_shm_recv(m[1], pk) == 1 && pk->vtime == 2500, "recv");
    ring[1] = DN2F_VT_INFINITY;
    TAP_REQUIRE(dn2f_shm_publish(m[1], 0, 50000) == 0, "publish");
    if (!expect_grants(m, e, 3, old, ring, 1000, 0)) {
        return false;
    }
    /* the next publish is taken as it is */
    TAP_REQUIRE(dn2f_shm_publish(m[1], 0, 50000) == 0, "publish");
    e[1] = 50000;
    if (!expect_grants(m, e, 3, old, ring, 1000, 0)) {
        return false;
    }
    TAP_REQUIRE(dn2f_shm_grant(m[2]) == 5000, "C's grant %llu",
                (unsigned long long)dn2f_shm_grant(m[2]));
    for (i = 0; i < 3; i++) {
        dn2f_shm_detach(m[i]);
    }
    free(pk);
    return true;
}


/* ============ a packet posted after its receiver took its ring */
/*
 * The receiver takes its ring (empty); a sender then posts a packet due
 * at 2200 and publishes a clock that raises the receiver's grant to 3000.
 * The receiver's horizon must stop at 2200 until it has taken the packet,
 * whether it reads the horizon before or after taking: with the table's
 * grant alone it would run to 3000 and find the packet 800 ns late (the
 * 2-node cluster's replay over the domain delivered packets up to 2 us
 * late that way, where the switch's grants over UDP had them on time).
 */
static bool t_horizon(void)
{
    const char *p = domain_path("horizon");
    struct dn2f_shm *a, *b;
    struct dn2f_shm_pkt *pk = malloc(sizeof(*pk));
    uint8_t buf[16] = { 0 };

    TAP_REQUIRE(pk, "malloc");
    TAP_REQUIRE(mk("horizon", 2, 0, 8, 1000, 0) == 0, "create");
    a = att(p, 0);
    b = att(p, 1);
    TAP_REQUIRE(a && b, "attach");
    TAP_REQUIRE(dn2f_shm_grant(a) == 1000 && dn2f_shm_grant(b) == 1000, "first grants");
    /* B reaches its horizon, publishes, takes its ring (empty) */
    TAP_REQUIRE(dn2f_shm_publish(b, 1000, 1000) == 0, "B publishes");
    TAP_REQUIRE(dn2f_shm_grant(a) == 2000, "A's grant %llu",
                (unsigned long long)dn2f_shm_grant(a));
    TAP_REQUIRE(dn2f_shm_recv(b, pk) == 0, "B's ring empty");
    /* A, at 1200, sends B a packet due at 2200, runs to 2000 and publishes */
    TAP_REQUIRE(dn2f_shm_post(a, 1, buf, sizeof(buf), 2200, 7) == 0, "post");
    TAP_REQUIRE(dn2f_shm_publish(a, 2000, 2000) == 0, "A publishes");
    /* the table grants B 3000; B has not taken the packet: it stops at 2200 */
    TAP_REQUIRE(dn2f_shm_grant(b) == 2200, "B's horizon %llu with a packet due at 2200 "
                "in its ring (the table's grant is 3000)",
                (unsigned long long)dn2f_shm_grant(b));
    TAP_REQUIRE(dn2f_shm_wait(b, 0) == 0, "B's wait: its grant is beyond its clock");
    TAP_REQUIRE(dn2f_shm_grant(b) == 2200, "still 2200 before the take");
    TAP_REQUIRE(dn2f_shm_recv(b, pk) == 1 && pk->vtime == 2200 && pk->vseq == 7, "B takes it");
    TAP_REQUIRE(dn2f_shm_grant(b) == 3000, "then its horizon is the grant: %llu",
                (unsigned long long)dn2f_shm_grant(b));
    dn2f_shm_detach(a);
    dn2f_shm_detach(b);
    free(pk);
    return true;
}


/* ===================================================== a buggy peer */
/* Find bytes in the file (the payload of a posted packet). */
static off_t find_in_file(const char *path, const uint8_t *pat, size_t n)
{
    struct stat st;
    uint8_t *buf;
    off_t at = -1;
    int fd = open(path, O_RDONLY);
    size_t i;

    if (fd < 0 || fstat(fd, &st) < 0 || !(buf = malloc((size_t)st.st_size))) {
        return -1;
    }
    if (pread(fd, buf, (size_t)st.st_size, 0) == st.st_size) {
        for (i = 0; i + n <= (size_t)st.st_size; i++) {
            if (!memcmp(buf + i, pat, n)) {
                at = (off_t)i;
                break;
            }
        }
    }
    free(buf);
    close(fd);
    return at;
}

static bool t_malformed(void)
{
    const char *p = domain_path("bad");
    struct dn2f_shm *a, *b;
    struct dn2f_shm_pkt *pk = malloc(sizeof(*pk));
    struct dn2f_shm_stats st;
    uint8_t pat[16] = "BADENTRY-PATTERN", pat2[16] = "BADSOURCE-PATTRN";
    uint16_t v;
    off_t at;
    int fd;

    TAP_REQUIRE(pk, "malloc");
    TAP_REQUIRE(mk("bad", 2, 0, 4, 1000, 0) == 0, "create");
    a = att(p, 0);
    b = att(p, 1);
    TAP_REQUIRE(a && b, "attach");
    TAP_REQUIRE(dn2f_shm_post(a, 1, pat, sizeof(pat), 5000, 1) == 0, "post");
    TAP_REQUIRE(dn2f_shm_post(a, 1, "GOODENTRY-0000001", 16, 5001, 2) == 0, "post");
    at = find_in_file(p, pat, sizeof(pat));
    TAP_REQUIRE(at > 8, "the entry in the file");
    fd = open(p, O_RDWR);
    v = DN2F_PKT_MAX + 1;               /* the entry's len: 8 bytes before its data */
    TAP_REQUIRE(fd >= 0 && pwrite(fd, &v, 2, at - 8) == 2, "corrupt the length");
    TAP_REQUIRE(dn2f_shm_recv(b, pk) == 1 && pk->vseq == 2, "the bad entry dropped");
    TAP_REQUIRE(dn2f_shm_post(a, 1, pat2, sizeof(pat2), 5002, 3) == 0, "post");
    at = find_in_file(p, pat2, sizeof(pat2));
    v = 999;                            /* the entry's source member: 12 bytes before */
    TAP_REQUIRE(at > 12 && pwrite(fd, &v, 2, at - 12) == 2, "corrupt the source");
    close(fd);
    TAP_REQUIRE(dn2f_shm_recv(b, pk) == 0, "dropped: a source that is no member");
    dn2f_shm_stats(b, &st);
    TAP_REQUIRE(st.bad == 2 && st.recvs == 1, "bad %llu recvs %llu", (unsigned long long)st.bad,
                (unsigned long long)st.recvs);
    dn2f_shm_detach(a);
    dn2f_shm_detach(b);
    free(pk);
    return true;
}


/* ========================================= silent members, dead ones */
static bool t_silent(void)
{
    const char *p = domain_path("silent");
    struct dn2f_shm *a, *b;
    unsigned idx = 9;
    uint16_t lid = 0;
    uint64_t now = 1;
    uint64_t g;

    TAP_REQUIRE(mk("silent", 2, 0, 4, 1000, 0) == 0, "create");
    a = att(p, 0);
    b = att(p, 1);
    TAP_REQUIRE(a && b, "attach");
    g = dn2f_shm_grant(a);
    TAP_REQUIRE(g == 1000, "first grant %llu", (unsigned long long)g);
    TAP_REQUIRE(dn2f_shm_publish(a, g, g) == 0, "publish at the horizon");
    TAP_REQUIRE(dn2f_shm_wait(a, 150000000) == -ETIMEDOUT, "a live member that says nothing");
    TAP_REQUIRE(strstr(dn2f_shm_strerror(a), "no grant"), "says: %s", dn2f_shm_strerror(a));
    TAP_REQUIRE(dn2f_shm_slowest(a, &idx, &lid, &now) && idx == 1 && lid == 2 && now == 0,
                "the slowest: member %u LID %u at %llu", idx, lid, (unsigned long long)now);
    dn2f_shm_detach(b);
    TAP_REQUIRE(dn2f_shm_wait(a, 0) == 0, "alone, it goes on");
    dn2f_shm_detach(a);
    return true;
}

static bool t_dead(void)
{
    const char *p = domain_path("dead");
    struct dn2f_shm *a;
    pid_t pid;
    int status, err;

    TAP_REQUIRE(mk("dead", 2, 0, 4, 1000, 0) == 0, "create");
    a = att(p, 0);
    TAP_REQUIRE(a, "attach");
    fflush(NULL);
    pid = fork();
    if (pid == 0) {
        struct dn2f_shm *b = att(p, 1);
        _exit(b ? 0 : 1);               /* dies without leaving */
    }
    TAP_REQUIRE(pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
                WEXITSTATUS(status) == 0, "the child attached and exited");
    TAP_REQUIRE(dn2f_shm_publish(a, 1000, 1000) == 0, "publish");
    TAP_REQUIRE(dn2f_shm_wait(a, 10000000000ll) == -EPIPE, "wait: a dead member");
    TAP_REQUIRE(strstr(dn2f_shm_strerror(a), "member 1 (LID 0x0002") &&
                strstr(dn2f_shm_strerror(a), "died"), "says: %s", dn2f_shm_strerror(a));
    TAP_REQUIRE(dn2f_shm_publish(a, 2000, 2000) == -EPIPE, "broken for good");
    TAP_REQUIRE(!dn2f_shm_attach(p, 1, 2, &err) && err == -EPIPE, "no one joins it: %d", err);
    dn2f_shm_detach(a);
    return true;
}

/* A member that dies inside a critical section: the robust lock hands the
 * next taker EOWNERDEAD, and the domain is broken naming the member. */
static bool t_dead_in_lock(void)
{
    const char *p = domain_path("deadlock");
    struct dn2f_shm *a;
    pid_t pid;
    int status;

    TAP_REQUIRE(mk("deadlock", 2, 0, 4, 1000, 0) == 0, "create");
    a = att(p, 0);
    TAP_REQUIRE(a, "attach");
    fflush(NULL);
    pid = fork();
    if (pid == 0) {
        struct dn2f_shm *b = att(p, 1);
        _exit(b && dn2f_shm_test_hold_lock(b) == 0 ? 0 : 1);
    }
    TAP_REQUIRE(pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
                WEXITSTATUS(status) == 0, "the child took the lock and exited");
    TAP_REQUIRE(dn2f_shm_publish(a, 1000, 1000) == -EPIPE, "publish: the lock's owner died");
    TAP_REQUIRE(strstr(dn2f_shm_strerror(a), "member 1 (LID 0x0002"), "says: %s",
                dn2f_shm_strerror(a));
    TAP_REQUIRE(dn2f_shm_wait(a, 1000000000) == -EPIPE, "wait: broken");
    dn2f_shm_detach(a);
    return true;
}


/* ================================================ the lock-step program */
/*
 * Member i's program in virtual time: a timer every P_i ns sends a packet
 * to another member; a packet delivered with hops left is answered to a
 * member chosen from it.  Latency: L + (src*7 + vseq*13) % 5 * 100 ns,
 * rounded up to Q.  Its deliveries are logged.  The sequential run and the
 * forked members run the same code.
 */
#define PEND_MAX 512
#define PAY 24

struct pend {
    uint64_t vtime;
    uint32_t vseq;
    uint16_t slid;
    uint16_t len;
    uint8_t data[PAY];
};

struct rec {
    uint64_t vtime;
    uint32_t vseq;
    uint16_t slid;
    uint16_t hops;
    uint32_t hash;
    uint32_t pad;
};

struct prog {
    unsigned i, n;
    uint64_t l, q, next_timer, period;
    uint32_t k, vseq;
    struct pend pend[PEND_MAX];
    unsigned npend;
    struct rec *log;
    size_t nlog, cap;
    int (*send)(struct prog *p, unsigned dst, const struct pend *pk);
    void *ctx;
    int err;
};

static int pend_cmp(const struct pend *a, const struct pend *b)
{
    if (a->vtime != b->vtime) {
        return a->vtime < b->vtime ? -1 : 1;
    }
    if (a->slid != b->slid) {
        return a->slid < b->slid ? -1 : 1;
    }
    return a->vseq < b->vseq ? -1 : a->vseq > b->vseq;
}

static void pend_insert(struct prog *p, const struct pend *pk)
{
    unsigned j = p->npend;

    if (p->npend == PEND_MAX) {
        p->err = 1;
        return;
    }
    while (j > 0 && pend_cmp(&p->pend[j - 1], pk) > 0) {
        p->pend[j] = p->pend[j - 1];
        j--;
    }
    p->pend[j] = *pk;
    p->npend++;
}

static void prog_init(struct prog *p, unsigned i, unsigned n, uint64_t l, uint64_t q,
                      unsigned sparse)
{
    memset(p, 0, sizeof(*p));
    p->i = i;
    p->n = n;
    p->l = l;
    p->q = q;
    p->next_timer = 300 + 137 * i;
    p->period = (2500 + 311 * i) * sparse;
}

static uint64_t prog_next(const struct prog *p)
{
    uint64_t t = p->next_timer;

    return p->npend && p->pend[0].vtime < t ? p->pend[0].vtime : t;
}

static uint32_t fnv(const uint8_t *d, size_t n)
{
    uint32_t h = 2166136261u;

    while (n--) {
        h = (h ^ *d++) * 16777619u;
    }
    return h;
}

static void prog_send(struct prog *p, uint64_t t, unsigned dst, unsigned hops)
{
    struct pend pk;
    unsigned j;

    pk.vseq = p->vseq++;
    pk.vtime = dn2f_vt_d(t + (p->i * 7 + pk.vseq * 13) % 5 * 100, p->l, p->q);
    pk.slid = (uint16_t)(p->i + 1);
    pk.len = PAY;
    pk.data[0] = (uint8_t)p->i;
    pk.data[1] = (uint8_t)hops;
    for (j = 2; j < PAY; j++) {
        pk.data[j] = (uint8_t)(t * 31 + j * p->i + pk.vseq);
    }
    if (p->send(p, dst, &pk) < 0) {
        p->err = 1;
    }
}

/* Run every event at time t (deliveries in order, then the timer). */
static void prog_step(struct prog *p, uint64_t t)
{
    while (p->npend && p->pend[0].vtime == t) {
        struct pend pk = p->pend[0];
        struct rec r = { pk.vtime, pk.vseq, pk.slid, pk.data[1], fnv(pk.data, pk.len), 0 };

        memmove(p->pend, p->pend + 1, (p->npend - 1) * sizeof(p->pend[0]));
        p->npend--;
        if (p->nlog == p->cap) {
            p->cap = p->cap ? 2 * p->cap : 256;
            p->log = realloc(p->log, p->cap * sizeof(*p->log));
        }
        p->log[p->nlog++] = r;
        if (pk.data[1] > 0) {
            prog_send(p, t, (p->i + pk.data[1] + pk.vseq) % p->n, pk.data[1] - 1u);
        }
    }
    if (p->next_timer == t) {
        prog_send(p, t, (p->i + 1 + p->k % (p->n - 1)) % p->n, 2);
        p->k++;
        p->next_timer += p->period;
    }
}

/* ---- the sequential run: every member's events in time order */
static struct prog *seq_progs;

static int seq_send(struct prog *p, unsigned dst, const struct pend *pk)
{
    (void)p;
    pend_insert(&seq_progs[dst], pk);
    return 0;
}

static struct prog *sequential(unsigned n, uint64_t l, uint64_t q, uint64_t end,
                               unsigned sparse)
{
    struct prog *ps = calloc(n, sizeof(*ps));
    unsigned i;

    seq_progs = ps;
    for (i = 0; i < n; i++) {
        prog_init(&ps[i], i, n, l, q, sparse);
        ps[i].send = seq_send;
    }
    for (;;) {
        uint64_t t = UINT64_MAX;
        unsigned who = 0;
        for (i = 0; i < n; i++) {
            if (prog_next(&ps[i]) < t) {
                t = prog_next(&ps[i]);
                who = i;
            }
        }
        if (t >= end) {
            break;
        }
        prog_step(&ps[who], t);
    }
    return ps;
}

/* ---- one forked member */
struct member_out {
    int rc;                     /* 0 ok, 3 -EPIPE, 4 other error */
    uint64_t late;              /* packets that arrived below the clock */
    uint64_t past_horizon;      /* times the clock went past the grant */
    uint64_t lost;              /* packets to a member that left, below the end */
    uint64_t rounds;            /* publishes */
    struct dn2f_shm_stats st;
    char err[160];
    size_t nlog;
};

struct member_ctx {
    struct dn2f_shm *m;
    uint64_t end;
    uint64_t lost;
    struct dn2f_shm_pkt *buf;
};

static int drain(struct prog *p, struct dn2f_shm *m, struct dn2f_shm_pkt *b, uint64_t clock,
                 uint64_t *late)
{
    int r;

    while ((r = dn2f_shm_recv(m, b)) == 1) {
        struct pend pk = { .vtime = b->vtime, .vseq = b->vseq, .slid = b->slid,
                           .len = b->len };
        if (b->len != PAY) {
            return -EPROTO;
        }
        if (b->vtime < clock) {
            (*late)++;
        }
        memcpy(pk.data, b->data, PAY);
        pend_insert(p, &pk);
    }
    return r;
}

static uint64_t drain_late;
static int ready_fd = -1;       /* the member to be killed says "running" here */

static int shm_send(struct prog *p, unsigned dst, const struct pend *pk)
{
    struct member_ctx *c = p->ctx;

    for (;;) {
        int r = dn2f_shm_post(c->m, dst, pk->data, pk->len, pk->vtime, pk->vseq);
        if (r == 0) {
            return 0;
        }
        if (r == -ENOENT) {             /* it left: only packets past the end */
            if (pk->vtime < c->end) {
                c->lost++;
            }
            return 0;
        }
        if (r != -EAGAIN) {
            return r;
        }
        r = dn2f_shm_wait_space(c->m, dst, 60000000000ll);
        if (r == 1) {
            r = drain(p, c->m, c->buf, 0, &drain_late);
        }
        if (r < 0 && r != -ENOENT) {
            return r;
        }
    }
}

static void member_exit(struct member_out *o, struct prog *p, struct dn2f_shm *m, int rc,
                        const char *outdir)
{
    char path[600];
    FILE *f;

    o->rc = rc;
    if (m) {
        dn2f_shm_stats(m, &o->st);
        snprintf(o->err, sizeof(o->err), "%s", dn2f_shm_strerror(m));
        dn2f_shm_detach(m);             /* out of the set: the others go on */
    }
    o->nlog = p->nlog;
    snprintf(path, sizeof(path), "%s/member%u", outdir, p->i);
    f = fopen(path, "w");
    if (f) {
        fwrite(o, sizeof(*o), 1, f);
        fwrite(p->log, sizeof(*p->log), p->nlog, f);
        fclose(f);
    }
    _exit(rc);
}

static void member(const char *path, unsigned i, unsigned n, uint64_t l, uint64_t q,
                   uint64_t end, bool idle, unsigned spin, unsigned sparse, const char *outdir)
{
    static struct prog p;
    struct member_out o = { 0 };
    struct member_ctx c = { 0 };
    uint64_t clock = 0;
    int err;

    prog_init(&p, i, n, l, q, sparse);
    c.end = end;
    c.buf = malloc(sizeof(*c.buf));
    c.m = dn2f_shm_attach(path, i, (uint16_t)(i + 1), &err);
    if (!c.m || !c.buf) {
        snprintf(o.err, sizeof(o.err), "attach: %s", strerror(-err));
        member_exit(&o, &p, NULL, 4, outdir);
    }
    dn2f_shm_set_spin(c.m, spin);
    p.ctx = &c;
    p.send = shm_send;
    for (;;) {
        uint64_t g, t, target;
        int r = drain(&p, c.m, c.buf, clock, &o.late);

        if (r < 0) {
            member_exit(&o, &p, c.m, r == -EPIPE ? 3 : 4, outdir);
        }
        g = dn2f_shm_grant(c.m);
        t = prog_next(&p);
        if (t < g && t < end) {         /* nothing can come before t any more */
            clock = t;
            prog_step(&p, t);
            if (p.err) {
                member_exit(&o, &p, c.m, 4, outdir);
            }
            continue;
        }
        target = g < end ? g : end;
        if (target > clock) {
            clock = target;             /* the guest runs up to its horizon */
        }
        if (clock > g) {
            o.past_horizon++;
        }
        if (clock >= end && g >= end) {
            break;
        }
        r = dn2f_shm_publish(c.m, clock, idle ? prog_next(&p) : clock);
        if (++o.rounds == 50 && ready_fd >= 0) {
            if (write(ready_fd, "r", 1) != 1) {
                member_exit(&o, &p, c.m, 4, outdir);
            }
        }
        while (r == 0 && (r = dn2f_shm_wait(c.m, 60000000000ll)) == 1) {
            r = drain(&p, c.m, c.buf, clock, &o.late);
        }
        if (r < 0) {
            member_exit(&o, &p, c.m, r == -EPIPE ? 3 : 4, outdir);
        }
    }
    o.lost = c.lost;
    o.late += drain_late;
    member_exit(&o, &p, c.m, 0, outdir);
}

struct run {
    unsigned n;
    uint64_t l, q, end;
    bool idle;
    unsigned spin;
    unsigned sparse;            /* timer periods times this (0 = 1) */
    unsigned entries;           /* ring entries per member (0 = 16) */
    int kill_member;            /* -1: none */
    /* results */
    struct member_out out[DN2F_SHM_MAX_MEMBERS];
    struct rec *log[DN2F_SHM_MAX_MEMBERS];
    double wall_s;
};

static double wall(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Fork the members, wait for them (a limit of 10 minutes only catches a
 * hang), read what each wrote.  false when the run itself broke. */
static bool run_members(struct run *r, const char *name)
{
    char outdir[600];
    const char *path = domain_path(name);
    pid_t pid[DN2F_SHM_MAX_MEMBERS];
    int ready[2] = { -1, -1 };
    unsigned i;
    double t0;

    snprintf(outdir, sizeof(outdir), "%s/%s.out", dir, name);
    TAP_REQUIRE(mkdir(outdir, 0700) == 0 || errno == EEXIST, "mkdir %s", outdir);
    TAP_REQUIRE(mk(name, r->n, 0, r->entries ? r->entries : 16, r->l, r->q) == 0, "create %s",
                name);
    TAP_REQUIRE(r->kill_member < 0 || pipe(ready) == 0, "pipe");
    fflush(NULL);
    t0 = wall();
    for (i = 0; i < r->n; i++) {
        pid[i] = fork();
        TAP_REQUIRE(pid[i] >= 0, "fork");
        if (pid[i] == 0) {
            alarm(600);
            if ((int)i == r->kill_member) {
                ready_fd = ready[1];
            } else if (ready[1] >= 0) {
                close(ready[1]);
            }
            if (ready[0] >= 0) {
                close(ready[0]);
            }
            member(path, i, r->n, r->l, r->q, r->end, r->idle, r->spin,
                   r->sparse ? r->sparse : 1, outdir);
        }
    }
    if (ready[1] >= 0) {
        close(ready[1]);                /* EOF if the member dies before its 50th */
    }
    if (r->kill_member >= 0) {
        char c;
        /* after its 50th round: killed in the middle of the lock-step */
        TAP_REQUIRE(read(ready[0], &c, 1) == 1, "the member to kill never ran 50 rounds");
        close(ready[0]);
        kill(pid[r->kill_member], SIGKILL);
        /* not reaped until the others are done: a zombie is dead too */
    }
    for (i = 0; i < r->n; i++) {
        int st;
        if ((int)i == r->kill_member) {
            continue;
        }
        TAP_REQUIRE(waitpid(pid[i], &st, 0) == pid[i], "waitpid");
    }
    r->wall_s = wall() - t0;
    if (r->kill_member >= 0) {
        waitpid(pid[r->kill_member], NULL, 0);
    }
    for (i = 0; i < r->n; i++) {
        char path2[700];
        FILE *f;
        if ((int)i == r->kill_member) {
            continue;
        }
        snprintf(path2, sizeof(path2), "%s/member%u", outdir, i);
        f = fopen(path2, "r");
        TAP_REQUIRE(f && fread(&r->out[i], sizeof(r->out[i]), 1, f) == 1, "member %u wrote "
                    "nothing", i);
        free(r->log[i]);
        r->log[i] = calloc(r->out[i].nlog + 1, sizeof(struct rec));
        TAP_REQUIRE(fread(r->log[i], sizeof(struct rec), r->out[i].nlog, f) == r->out[i].nlog,
                    "member %u's log", i);
        fclose(f);
    }
    return true;
}

/* Every member ended well and delivered exactly the sequential run's
 * packets, at the same virtual times, in the same order. */
static bool check_run(struct run *r, const char *what)
{
    struct prog *ref = sequential(r->n, r->l, r->q, r->end, r->sparse ? r->sparse : 1);
    size_t total = 0;
    unsigned i, k;

    for (i = 0; i < r->n; i++) {
        struct member_out *o = &r->out[i];
        TAP_REQUIRE(o->rc == 0, "%s: member %u exit %d: %s", what, i, o->rc, o->err);
        TAP_REQUIRE(o->late == 0, "%s: member %u got %llu packets below its clock", what, i,
                    (unsigned long long)o->late);
        TAP_REQUIRE(o->past_horizon == 0, "%s: member %u passed its horizon", what, i);
        TAP_REQUIRE(o->lost == 0, "%s: member %u sent %llu packets to one that left", what, i,
                    (unsigned long long)o->lost);
        TAP_REQUIRE(o->nlog == ref[i].nlog, "%s: member %u delivered %zu packets, the "
                    "sequential run %zu", what, i, o->nlog, ref[i].nlog);
        for (k = 0; k < o->nlog; k++) {
            const struct rec *a = &r->log[i][k], *b = &ref[i].log[k];
            TAP_REQUIRE(!memcmp(a, b, sizeof(*a)), "%s: member %u delivery %u: vtime %llu "
                        "slid %u vseq %u, the sequential run: vtime %llu slid %u vseq %u", what,
                        i, k, (unsigned long long)a->vtime, a->slid, a->vseq,
                        (unsigned long long)b->vtime, b->slid, b->vseq);
        }
        total += o->nlog;
    }
    TAP_REQUIRE(total > 20, "%s: only %zu deliveries", what, total);
    for (i = 0; i < r->n; i++) {
        free(ref[i].log);
    }
    free(ref);
    return true;
}

static void run_free(struct run *r)
{
    unsigned i;

    for (i = 0; i < DN2F_SHM_MAX_MEMBERS; i++) {
        free(r->log[i]);
        r->log[i] = NULL;
    }
}

static void figures(const struct run *r, const char *what)
{
    uint64_t rounds = 0, sleeps = 0, wakes = 0, waits = 0, posts = 0;
    unsigned i;

    for (i = 0; i < r->n; i++) {
        rounds += r->out[i].rounds;
        sleeps += r->out[i].st.sleeps;
        wakes += r->out[i].st.wakes;
        waits += r->out[i].st.waits;
        posts += r->out[i].st.posts;
    }
    rounds /= r->n;                     /* a round: every member published once */
    tap_diag("bench: %s members=%u spin=%u virtual_us=%llu wall_s=%.3f "
             "wall_s_per_virtual_s=%.1f rounds=%llu rounds_per_s=%.0f "
             "us_per_round=%.1f futex_wake_per_round=%.2f futex_wait_per_round=%.2f "
             "waits_per_round=%.2f packets=%llu", what, r->n, r->spin,
             (unsigned long long)(r->end / 1000), r->wall_s, r->wall_s * 1e9 / (double)r->end,
             (unsigned long long)rounds,
             r->wall_s > 0 ? (double)rounds / r->wall_s : 0.0,
             rounds ? r->wall_s * 1e6 / (double)rounds : 0.0,
             rounds ? (double)wakes / (double)rounds : 0.0,
             rounds ? (double)sleeps / (double)rounds : 0.0,
             rounds ? (double)waits / (double)rounds : 0.0, (unsigned long long)posts);
}

static bool t_lockstep_busy(void)
{
    static struct run a, b;
    unsigned i;

    a = (struct run){ .n = 3, .l = 1000, .q = 0, .end = 300000, .kill_member = -1 };
    b = a;
    if (!run_members(&a, "busy-a") || !check_run(&a, "run A") ||
        !run_members(&b, "busy-b") || !check_run(&b, "run B")) {
        return false;
    }
    for (i = 0; i < a.n; i++) {
        TAP_REQUIRE(a.out[i].nlog == b.out[i].nlog &&
                    !memcmp(a.log[i], b.log[i], a.out[i].nlog * sizeof(struct rec)),
                    "member %u: runs A and B differ", i);
    }
    figures(&a, "busy");
    run_free(&a);
    run_free(&b);
    return true;
}

static bool t_lockstep_idle(void)
{
    static struct run a;

    a = (struct run){ .n = 4, .l = 1000, .q = 500, .end = 400000, .idle = true,
                      .kill_member = -1 };
    if (!run_members(&a, "idle") || !check_run(&a, "idle promises, Q 500")) {
        return false;
    }
    figures(&a, "idle");
    run_free(&a);
    /* timers 8 times sparser: idle gaps of many lookaheads, so that a
     * packet can wake a member far below its promise and be answered */
    a = (struct run){ .n = 4, .l = 1000, .q = 0, .end = 2000000, .idle = true, .sparse = 8,
                      .kill_member = -1 };
    if (!run_members(&a, "sparse") || !check_run(&a, "sparse idle promises")) {
        return false;
    }
    figures(&a, "idle-sparse");
    run_free(&a);
    return true;
}

/* Rings of 2 entries: senders find them full, wait with their clocks
 * stopped, and receivers asked for room empty them from their waits; the
 * deliveries stay those of the sequential run. */
static bool t_lockstep_full(void)
{
    static struct run a;
    uint64_t full = 0;
    unsigned i;

    a = (struct run){ .n = 4, .l = 1000, .q = 0, .end = 300000, .entries = 2,
                      .kill_member = -1 };
    if (!run_members(&a, "full") || !check_run(&a, "rings of 2")) {
        return false;
    }
    for (i = 0; i < a.n; i++) {
        full += a.out[i].st.full;
    }
    TAP_REQUIRE(full > 0, "no sender found a full ring");
    tap_diag("rings of 2: %llu posts found a full ring", (unsigned long long)full);
    run_free(&a);
    return true;
}

static bool t_killed(void)
{
    static struct run a;
    unsigned i;

    a = (struct run){ .n = 3, .l = 1000, .q = 0, .end = UINT64_MAX / 2, .kill_member = 1 };
    if (!run_members(&a, "killed")) {
        return false;
    }
    for (i = 0; i < a.n; i++) {
        if (i == 1) {
            continue;
        }
        TAP_REQUIRE(a.out[i].rc == 3, "member %u: exit %d (%s), not -EPIPE", i, a.out[i].rc,
                    a.out[i].err);
        TAP_REQUIRE(strstr(a.out[i].err, "member 1 (LID 0x0002"), "member %u says: %s", i,
                    a.out[i].err);
        TAP_REQUIRE(a.out[i].late == 0 && a.out[i].past_horizon == 0, "member %u: late %llu",
                    i, (unsigned long long)a.out[i].late);
        TAP_REQUIRE(a.out[i].rounds > 0, "member %u ran no round", i);
    }
    run_free(&a);
    return true;
}

/* ---- the same lock-step through a switch process over loopback UDP:
 * each member reports (now, earliest) in one datagram and blocks in
 * recv() for its grant; the switch computes the grants (dn2f_vt_grants)
 * and answers the reporter and every waiting member whose grant rose.
 * No reliable lanes, no packets: a floor under the UDP path's round. */
struct udp_msg {
    uint32_t member;
    uint32_t bye;
    uint64_t now, earliest, grant;
};

static void udp_switch(int fd, unsigned n, uint64_t l)
{
    struct sockaddr_in who[DN2F_SHM_MAX_MEMBERS];
    uint64_t e[DN2F_SHM_MAX_MEMBERS], g[DN2F_SHM_MAX_MEMBERS], sent[DN2F_SHM_MAX_MEMBERS] = { 0 };
    uint64_t now[DN2F_SHM_MAX_MEMBERS];
    bool seen[DN2F_SHM_MAX_MEMBERS] = { false }, gone[DN2F_SHM_MAX_MEMBERS] = { false };
    unsigned nseen = 0, ngone = 0, i;

    while (ngone < n) {
        struct udp_msg m;
        struct sockaddr_in from;
        socklen_t fl = sizeof(from);
        uint64_t ee[DN2F_SHM_MAX_MEMBERS], gg[DN2F_SHM_MAX_MEMBERS];
        unsigned idx[DN2F_SHM_MAX_MEMBERS], k = 0;

        if (recvfrom(fd, &m, sizeof(m), 0, (struct sockaddr *)&from, &fl) != sizeof(m) ||
            m.member >= n) {
            continue;
        }
        i = m.member;
        if (!seen[i]) {
            seen[i] = true;
            nseen++;
        }
        who[i] = from;
        if (m.bye) {
            gone[i] = true;
            ngone++;
        }
        now[i] = m.now;
        e[i] = m.earliest;
        if (nseen < n) {
            continue;
        }
        for (i = 0; i < n; i++) {
            if (!gone[i]) {
                idx[k] = i;
                ee[k++] = e[i];
            }
        }
        dn2f_vt_grants(ee, k, l, 0, gg);
        for (i = 0; i < k; i++) {
            unsigned j = idx[i];
            bool waiting = now[j] >= sent[j];
            g[j] = gg[i] > sent[j] ? gg[i] : sent[j];
            if (j == m.member || (g[j] > sent[j] && waiting)) {
                struct udp_msg a = { .member = j, .grant = g[j] };
                sent[j] = g[j];
                sendto(fd, &a, sizeof(a), 0, (struct sockaddr *)&who[j], sizeof(who[j]));
            }
        }
    }
}

static void udp_member(const struct sockaddr_in *sw, unsigned i, uint64_t end)
{
    int fd = socket(AF_INET, SOCK_DGRAM, 0);
    uint64_t clock = 0, grant = 0;

    for (;;) {
        struct udp_msg m = { .member = i, .now = clock, .earliest = clock };
        if (clock >= end) {
            m.bye = 1;
        }
        sendto(fd, &m, sizeof(m), 0, (const struct sockaddr *)sw, sizeof(*sw));
        if (m.bye) {
            _exit(0);
        }
        while (grant <= clock) {
            struct udp_msg a;
            if (recv(fd, &a, sizeof(a), 0) == sizeof(a) && a.grant > grant) {
                grant = a.grant;
            }
        }
        clock = grant < end ? grant : end;     /* the guest runs up to its horizon */
    }
}

static bool run_udp(unsigned n, uint64_t end, double *wall_s)
{
    struct sockaddr_in sw = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    socklen_t sl = sizeof(sw);
    pid_t pid[DN2F_SHM_MAX_MEMBERS + 1];
    int fd = socket(AF_INET, SOCK_DGRAM, 0);
    unsigned i;
    double t0;

    TAP_REQUIRE(fd >= 0 && bind(fd, (struct sockaddr *)&sw, sizeof(sw)) == 0 &&
                getsockname(fd, (struct sockaddr *)&sw, &sl) == 0, "UDP socket on 127.0.0.1");
    fflush(NULL);
    t0 = wall();
    pid[n] = fork();
    if (pid[n] == 0) {
        alarm(600);
        udp_switch(fd, n, 1000);
        _exit(0);
    }
    close(fd);
    for (i = 0; i < n; i++) {
        pid[i] = fork();
        if (pid[i] == 0) {
            alarm(600);
            udp_member(&sw, i, end);
        }
    }
    for (i = 0; i <= n; i++) {
        int st;
        TAP_REQUIRE(waitpid(pid[i], &st, 0) == pid[i] && WIFEXITED(st) && WEXITSTATUS(st) == 0,
                    "UDP process %u", i);
    }
    *wall_s = wall() - t0;
    return true;
}

static bool t_bench(void)
{
    static const unsigned ns[] = { 2, 4, 8 };
    static struct run a;
    const char *e = getenv("DN2_SHM_BENCH_US");
    const char *sp = getenv("DN2_SHM_SPIN");
    uint64_t us = e ? strtoull(e, NULL, 10) : 2000;
    unsigned i, k;

    tap_diag("bench: lock-step of forked members, busy (promise = clock), L 1000 ns, "
             "exact; DN2_SHM_BENCH_US=%llu virtual us, DN2_SHM_SPIN=%s; host load: see "
             "/proc/loadavg", (unsigned long long)us, sp ? sp : "0");
    for (i = 0; i < sizeof(ns) / sizeof(ns[0]); i++) {
        a = (struct run){ .n = ns[i], .l = 1000, .q = 0, .end = us * 1000, .kill_member = -1,
                          .spin = sp ? (unsigned)strtoul(sp, NULL, 10) : 0 };
        if (!run_members(&a, ns[i] == 2 ? "bench2" : ns[i] == 4 ? "bench4" : "bench8") ||
            !check_run(&a, "bench")) {
            return false;
        }
        figures(&a, "busy");
        run_free(&a);
    }
    /* the round alone, no packets: shared memory against a switch over UDP,
     * one after the other, so that the ratio is of one host state */
    for (i = 0; i < sizeof(ns) / sizeof(ns[0]); i++) {
        double w;
        a = (struct run){ .n = ns[i], .l = 1000, .q = 0, .end = us * 1000, .kill_member = -1,
                          .sparse = 1000000 };
        if (!run_members(&a, ns[i] == 2 ? "sync2" : ns[i] == 4 ? "sync4" : "sync8") ||
            !run_udp(ns[i], us * 1000, &w)) {
            return false;
        }
        for (k = 0; k < a.n; k++) {
            TAP_REQUIRE(a.out[k].rc == 0 && a.out[k].late == 0, "sync-only member %u: exit %d "
                        "(%s)", k, a.out[k].rc, a.out[k].err);
        }
        figures(&a, "sync-only shm");
        tap_diag("bench: sync-only udp-star members=%u virtual_us=%llu wall_s=%.3f "
                 "wall_s_per_virtual_s=%.1f shm_speedup=%.2f", ns[i],
                 (unsigned long long)us, w, w * 1e9 / (double)(us * 1000),
                 a.wall_s > 0 ? w / a.wall_s : 0.0);
        run_free(&a);
    }
    return true;
}


/* ================================================================ main */
static const struct tap_case tests[] = {
    { "formula: the members' grants are the switch's (20,000 random tables)", t_formula },
    { "file: configuration, magic, version and size checked; slots taken once", t_header },
    { "table: grants 0 until all are there, then the formula; monotone; leaving", t_grants },
    { "ring: bounds, FIFO, full ring asks its receiver for room, wrap, left member", t_ring },
    { "order: (vtime, source LID, vseq), the UDP path's rule", t_order },
    { "a post lowers its receiver's promise at once, until it is published", t_lowering },
    { "a horizon stops at a packet still in the ring, taken before or after the grant rose",
      t_horizon },
    { "a buggy peer: an entry with a bad length or source is dropped", t_malformed },
    { "a live member that says nothing: -ETIMEDOUT, named as the slowest", t_silent },
    { "a dead member: -EPIPE naming it, the domain broken for all", t_dead },
    { "a member dead in a critical section: the robust lock breaks the domain, naming it",
      t_dead_in_lock },
    { "lock-step, 3 forked members, busy: the sequential run's deliveries, twice",
      t_lockstep_busy },
    { "lock-step, 4 forked members, idle promises (Q 500; sparse): the sequential run's deliveries",
      t_lockstep_idle },
    { "lock-step, 4 forked members, rings of 2: full rings wait, same deliveries",
      t_lockstep_full },
    { "lock-step: a member killed mid-run is reported to the others", t_killed },
    { "benchmark: 2, 4, 8 forked members (figures, not assertions)", t_bench },
};

static void cleanup(void)
{
    char cmd[400];

    if (dir[0] && !getenv("DN2_SHM_KEEP")) {
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
        if (system(cmd) != 0) {
            fprintf(stderr, "# could not remove %s\n", dir);
        }
    }
}

int main(int argc, char **argv)
{
    const char *tmp = getenv("TMPDIR");
    int rc;

    setvbuf(stdout, NULL, _IOLBF, 0);
    snprintf(dir, sizeof(dir), "%s/dn2shm-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    rc = tap_run_cases(tests, TAP_NCASES(tests), argc > 1 ? argv[1] : NULL);
    cleanup();
    return rc;
}
