/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of libdn2fab (TAP, tests/tap/dn2-tap.h's table runner): the
 * send batch (dn2fab-batch): partial sendmmsg, EAGAIN, copies and
 * references, a refused datagram, a stuck socket, real sendmmsg on
 * 127.0.0.1.
 */
#define _GNU_SOURCE 1
#include "fab-test.h"


/* ======================================================= send batches */
/* A fake sendmmsg(): each call follows the script (a datagram count to
 * take, at most; or -errno), then takes as many as asked; what it takes is
 * logged as (destination port, the datagram's first 4 bytes, length). */
#define TXB_LOG 1024

static struct {
    int script[64];
    unsigned nscript, call, waits;
    int refuse_id;              /* a datagram refused with EMSGSIZE (-1: none) */
    unsigned n;
    uint16_t port[TXB_LOG];
    uint32_t id[TXB_LOG];
    size_t len[TXB_LOG];
} fk;

static int fake_sendmmsg(void *opaque, struct mmsghdr *m, unsigned n)
{
    int take = fk.call < fk.nscript ? fk.script[fk.call] : (int)n;
    unsigned i;
    (void)opaque;
    fk.call++;
    if (take < 0) {
        return take;
    }
    for (i = 0; i < n && i < (unsigned)take; i++) {
        struct dn2f_addr a;
        uint32_t id;
        memcpy(&id, m[i].msg_hdr.msg_iov[0].iov_base, 4);
        if ((int)id == fk.refuse_id) {
            return i ? (int)i : -EMSGSIZE;      /* as the kernel: the count so far */
        }
        dn2f_addr_from_sa(&a, m[i].msg_hdr.msg_name, m[i].msg_hdr.msg_namelen);
        fk.port[fk.n] = dn2f_addr_port(&a);
        fk.id[fk.n] = id;
        fk.len[fk.n] = m[i].msg_hdr.msg_iov[0].iov_len;
        fk.n++;
    }
    return (int)i;
}

static int fake_wait(void *opaque, int ms)
{
    (void)opaque;
    (void)ms;
    fk.waits++;
    return 1;
}

static void fake_reset(struct dn2f_txbatch *b, const int *script, unsigned nscript)
{
    memset(&fk, 0, sizeof(fk));
    fk.refuse_id = -1;
    if (nscript) {
        memcpy(fk.script, script, nscript * sizeof(int));
    }
    fk.nscript = nscript;
    b->sendmmsg = fake_sendmmsg;
    b->wait_writable = fake_wait;
}


/* Datagram id for destination d: d * 1000 + its number; 4 destinations. */
static void txb_add(struct dn2f_txbatch *b, unsigned id, size_t len, bool stable,
                    uint8_t *space)
{
    struct dn2f_addr to;
    char s[32];
    snprintf(s, sizeof(s), "127.0.0.1:%u", 7000 + id / 1000);
    dn2f_addr_parse(&to, s);
    memcpy(space, &id, 4);
    dn2f_txbatch_add(b, &to, space, len, stable);
}


/* Every datagram of the fake's log, per destination in the order added. */
static bool txb_check_order(unsigned per_dst, unsigned ndst)
{
    unsigned next[8] = { 0 }, i, d;
    for (i = 0; i < fk.n; i++) {
        d = fk.id[i] / 1000;
        CHECK(d < ndst && fk.port[i] == 7000 + d, "datagram %u: id %u to port %u", i,
              fk.id[i], fk.port[i]);
        CHECK(fk.id[i] % 1000 == next[d], "destination %u: got %u, expected %u", d,
              fk.id[i] % 1000, next[d]);
        next[d]++;
    }
    for (d = 0; d < ndst; d++) {
        CHECK(next[d] == per_dst, "destination %u: %u of %u datagrams", d, next[d], per_dst);
    }
    return true;
}

static bool t_txbatch_mixed(void)
{
    /* partial sends (3, 1, 0 = full), EAGAIN twice in the middle, ENOBUFS */
    static const int script[] = { 3, 1, -EAGAIN, -EAGAIN, 5, -ENOBUFS, 2, 0, 7 };
    struct dn2f_txbatch b;
    uint8_t *space = malloc(200 * 64);
    unsigned i;

    CHECK(space && dn2f_txbatch_init(&b, -1) == 0, "init");
    fake_reset(&b, script, sizeof(script) / sizeof(script[0]));
    /* 4 destinations interleaved, 40 each, in one batch (flushed at 64 and at the end) */
    for (i = 0; i < 160; i++) {
        unsigned id = (i % 4) * 1000 + i / 4;
        txb_add(&b, id, 16 + (i % 7), i % 2, space + 64 * i);
    }
    dn2f_txbatch_flush(&b);
    CHECK(b.n == 0 && b.arena_used == 0, "batch empty after the flush");
    if (!txb_check_order(40, 4)) {
        return false;
    }
    CHECK(b.st.queued == 160 && b.st.sent == 160 && b.st.errors == 0,
          "queued %llu sent %llu errors %llu", (unsigned long long)b.st.queued,
          (unsigned long long)b.st.sent, (unsigned long long)b.st.errors);
    CHECK(fk.waits == 4 && b.st.waits == 4, "waits %u (EAGAIN x2, ENOBUFS, 0 taken)", fk.waits);
    CHECK(b.st.flushes == 3, "flushes %llu (64, 64, 32)", (unsigned long long)b.st.flushes);
    for (i = 0; i < fk.n; i++) {
        CHECK(fk.len[i] == 16 + ((fk.id[i] % 1000) * 4 + fk.id[i] / 1000) % 7,
              "datagram %u: length %zu", i, fk.len[i]);
    }
    dn2f_txbatch_destroy(&b);
    free(space);
    return true;
}

static bool t_txbatch_copy_and_refuse(void)
{
    struct dn2f_txbatch b;
    static uint8_t big[60000];
    uint8_t one[64];
    unsigned i;

    CHECK(dn2f_txbatch_init(&b, -1) == 0, "init");
    /* copied datagrams: the caller's buffer is reused at once */
    fake_reset(&b, NULL, 0);
    for (i = 0; i < 10; i++) {
        txb_add(&b, i, 8, false, one);          /* same buffer each time */
    }
    CHECK(b.n == 10 && fk.n == 0, "nothing sent before the flush (%u sent)", fk.n);
    dn2f_txbatch_flush(&b);
    if (!txb_check_order(10, 1)) {
        return false;
    }
    /* stable datagrams are referenced, not copied */
    txb_add(&b, 0, 8, true, one);
    CHECK(b.iov[0].iov_base == one && b.arena_used == 0, "stable: referenced");
    dn2f_txbatch_flush(&b);
    /* the arena fills at ~17 datagrams of 60000: flushed early, in order */
    fake_reset(&b, NULL, 0);
    memset(&b.st, 0, sizeof(b.st));
    for (i = 0; i < 40; i++) {
        txb_add(&b, i, sizeof(big), false, big);
    }
    dn2f_txbatch_flush(&b);
    CHECK(b.st.flushes == 3 && fk.n == 40, "flushes %llu, %u sent",
          (unsigned long long)b.st.flushes, fk.n);
    if (!txb_check_order(40, 1)) {
        return false;
    }
    /* one datagram refused by the kernel: skipped, the rest sent in order */
    fake_reset(&b, NULL, 0);
    fk.refuse_id = 5;
    memset(&b.st, 0, sizeof(b.st));
    for (i = 0; i < 12; i++) {
        txb_add(&b, i, 8, false, one);
    }
    dn2f_txbatch_flush(&b);
    CHECK(fk.n == 11 && b.st.errors == 1 && b.st.sent == 11, "%u sent, %llu errors", fk.n,
          (unsigned long long)b.st.errors);
    for (i = 0; i < fk.n; i++) {
        CHECK(fk.id[i] == (i < 5 ? i : i + 1), "datagram %u: id %u", i, fk.id[i]);
    }
    /* a socket stuck full: bounded waits, then the rest is counted, no hang */
    {
        int stuck[DN2F_TXB_WAITS + 2];
        for (i = 0; i < DN2F_TXB_WAITS + 2; i++) {
            stuck[i] = -EAGAIN;
        }
        fake_reset(&b, stuck, DN2F_TXB_WAITS + 2);
        memset(&b.st, 0, sizeof(b.st));
        for (i = 0; i < 5; i++) {
            txb_add(&b, i, 8, false, one);
        }
        dn2f_txbatch_flush(&b);
        CHECK(fk.n == 0 && b.st.errors == 5 && fk.waits == DN2F_TXB_WAITS && b.n == 0,
              "%u sent, %llu errors, %u waits", fk.n, (unsigned long long)b.st.errors, fk.waits);
    }
    dn2f_txbatch_destroy(&b);
    return true;
}


/* The real sendmmsg() on 127.0.0.1: two receivers, 300 datagrams
 * interleaved, some of 60000 bytes (the arena flushes early): each
 * receiver gets its own, in order, byte-exact. */
static bool t_txbatch_udp(void)
{
    struct dn2f_addr la, ra[2];
    struct dn2f_txbatch b;
    int fd, rfd[2], i;
    unsigned next[2] = { 0, 0 };
    static uint8_t buf[60000], rb[65536];

    dn2f_addr_parse(&la, "127.0.0.1:0");
    fd = dn2f_udp_open(&la, 4 << 20);
    CHECK(fd >= 0, "socket: %s", strerror(-fd));
    for (i = 0; i < 2; i++) {
        dn2f_addr_parse(&ra[i], "127.0.0.1:0");
        rfd[i] = dn2f_udp_open(&ra[i], 8 << 20);
        CHECK(rfd[i] >= 0, "socket: %s", strerror(-rfd[i]));
    }
    CHECK(dn2f_txbatch_init(&b, fd) == 0, "init");
    for (i = 0; i < 300; i++) {
        uint32_t id = (uint32_t)i;
        size_t len = i % 50 == 7 ? sizeof(buf) : 100 + (size_t)i;
        memset(buf, (int)(i & 0xff), len);
        memcpy(buf, &id, 4);
        dn2f_txbatch_add(&b, &ra[i % 2], buf, len, false);
        if (i % 100 == 99) {
            dn2f_txbatch_flush(&b);
        }
    }
    dn2f_txbatch_flush(&b);
    CHECK(b.st.sent == 300 && b.st.errors == 0, "sent %llu errors %llu",
          (unsigned long long)b.st.sent, (unsigned long long)b.st.errors);
    for (i = 0; i < 2; i++) {
        for (;;) {
            struct pollfd p = { .fd = rfd[i], .events = POLLIN };
            ssize_t n;
            uint32_t id;
            size_t want, k;
            if (poll(&p, 1, 200) <= 0) {
                break;
            }
            n = recv(rfd[i], rb, sizeof(rb), 0);
            CHECK(n >= 4, "receiver %d: recv %zd", i, n);
            memcpy(&id, rb, 4);
            CHECK(id == next[i] * 2 + (unsigned)i, "receiver %d: datagram %u, expected %u", i,
                  id, next[i] * 2 + (unsigned)i);
            want = id % 50 == 7 ? sizeof(buf) : 100 + id;
            CHECK((size_t)n == want, "datagram %u: %zd bytes, expected %zu", id, n, want);
            for (k = 4; k < want; k++) {
                CHECK(rb[k] == (id & 0xff), "datagram %u: byte %zu wrong", id, k);
            }
            next[i]++;
        }
        CHECK(next[i] == 150, "receiver %d got %u of 150", i, next[i]);
        close(rfd[i]);
    }
    dn2f_txbatch_destroy(&b);
    close(fd);
    return true;
}

/* ================================================================ main */
static const struct tap_case tests[] = {
    { "send batch: mixed destinations, partial sendmmsg, EAGAIN mid-batch: all sent, "
      "in order per destination", t_txbatch_mixed },
    { "send batch: copies vs references, early flush, a refused datagram, a stuck socket", t_txbatch_copy_and_refuse },
    { "send batch: real sendmmsg on 127.0.0.1 to two receivers, in order, byte-exact", t_txbatch_udp },
};

int main(int argc, char **argv)
{
    return fab_test_main(tests, TAP_NCASES(tests), argc, argv);
}
