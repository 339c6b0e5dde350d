/* SPDX-License-Identifier: MIT */
/*
 * Phase 4 of dn2-soak (tools/soak/dn2-soak.c, which documents every
 * phase): joins through a late switch; replaying and spoofing strangers.
 */
#define _GNU_SOURCE 1
#include "soak.h"


/* ================================================================== */
/* Phase 4: joins through a late switch; replaying and spoofing        */
/* strangers                                                           */
/* ================================================================== */

/*
 * Two boards reach dn2-switch (--route switch) through a relay in this
 * process: the boards' "switch" is the relay's socket L, and the switch
 * sees each board at a relay socket U_i of its own.  The relay (a thread,
 * so it keeps forwarding while this process waits for qtest answers)
 * holds every ASSIGN for a random 0.5..1.5 s (a backlogged switch: a
 * board's 100 ms HELLOs are answered late, out of order, across the
 * switch's second boundaries), delays a quarter of the DATA/ACK by up to
 * 3 ms (reordering them), and
 * watches: each board's epoch and HELLOs (a HELLO of an incarnation that
 * had joined is a link that went down: a flap), the ticket times of the
 * ASSIGNs of each join, the epochs the switch's routing tables publish,
 * the BYEs the switch sends.  It records each incarnation's join (its
 * ticketed KEEPALIVE) and first DATA datagrams.
 *
 * Rounds: a board gets an SMA reset (a new incarnation, a new epoch) and joins
 * again through the late switch; its first transfer lands in a region of
 * its peer that is then zeroed.  A replaying stranger sends the previous
 * incarnation's join and first DATA to the switch again, as that board
 * (from U_i), within the ticket's life: the table must keep the current
 * epoch and the old region must stay zero.  A spoofing stranger then sends
 * BYE and KEEPALIVE "from the switch" to both boards (with a raw socket
 * and a forged source address when this process may, else from L) with
 * epochs it cannot know, replayed signed ones of other incarnations, and
 * without the secret also BYE "unknown" with the right epochs; and DATA of
 * unknown LIDs "from" the boards to the switch.  No board may flap, with
 * the secret the switch must sign no answer to that DATA, and RVS/RVL
 * round trips both ways must stay byte-exact.  Both passes: without and
 * with the cluster secret.
 */
#define JNB         2

#define J_HOLD      4096

#define J_REC       4

#define J_RECLEN    8192

#define J_REGION    (16 * MiB)      /* first transfers of incarnations: 64 KiB apart */

typedef struct JHeld {
    uint64_t due;
    int b;
    size_t len;
    uint8_t *buf;
} JHeld;

typedef struct JRec {
    uint64_t epoch;
    uint8_t ka[256];                /* its join: the ticketed KEEPALIVE */
    size_t ka_len;
    uint64_t ka_ms;
    uint8_t data[J_REC][J_RECLEN];  /* its first DATA datagrams */
    size_t data_len[J_REC];
    unsigned ndata;
    uint8_t ctl[256];               /* a signed BYE/KEEPALIVE the switch sent it */
    size_t ctl_len;
    uint64_t region;                /* where its first transfer landed at the peer */
    bool ka_seen;                   /* it returned a ticket ... */
    bool joined;                    /* ... and the switch sent it a table: it is up */
    bool published;                 /* a table gave its LID this epoch */
} JRec;

static struct {
    pthread_t th;
    bool running;
    int stop;                       /* __atomic: the thread ends */
    pthread_mutex_t mu;
    int lfd, ufd[JNB];
    struct dn2f_addr sw_addr, b_addr[JNB];
    int l_port, b_port[JNB];
    Rng rng;
    JHeld held[J_HOLD];
    unsigned nheld;
    bool delay_assign;
    uint64_t hellos[JNB], flaps[JNB], sw_epoch, pub_epoch[JNB];
    uint16_t lid[JNB];
    uint64_t assigns, data_reordered;
    uint32_t jt[JNB][16];
    unsigned njt[JNB], joins, joins_multi;
    uint64_t byes_to_u[JNB];
    uint64_t rollbacks;             /* table entries that gave a LID back an older epoch */
    JRec cur[JNB], old[JNB];
} JR;

struct soak_jp JP;

static void jr_close_join(int i)
{
    JR.joins++;
    if (JR.njt[i] >= 2) {
        JR.joins_multi++;
    }
    JR.njt[i] = 0;
}


/* A datagram of board i toward the switch. */
static void jr_from_board(int i, const uint8_t *buf, size_t len)
{
    struct dn2f_msg m;
    JRec *c = &JR.cur[i];

    if (dn2f_decode(buf, len, &m) != 0) {
        return;
    }
    switch (m.h.type) {
    case DN2F_T_HELLO:
        JR.hellos[i]++;
        if (m.h.src_epoch != c->epoch) {
            if (c->joined) {
                jr_close_join(i);
            }
            JR.old[i] = *c;             /* the previous incarnation */
            memset(c, 0, sizeof(*c));
            c->epoch = m.h.src_epoch;
        } else if (c->joined) {
            JR.flaps[i]++;              /* this incarnation had joined: its link went down */
            jr_close_join(i);
            c->joined = false;
        }
        break;
    case DN2F_T_KEEPALIVE:
        /* the last ticket it returns before it is up made its port (two
         * boards joining at once are offered one LID: one is refused) */
        if (m.u.keepalive.guid && m.h.src_epoch == c->epoch && !c->joined &&
            len <= sizeof(c->ka)) {
            memcpy(c->ka, buf, len);
            c->ka_len = len;
            c->ka_ms = now_ms();
            c->ka_seen = true;
        }
        break;
    case DN2F_T_DATA:
        if (c->ndata < J_REC && len <= J_RECLEN && m.h.src_epoch == c->epoch) {
            memcpy(c->data[c->ndata], buf, len);
            c->data_len[c->ndata++] = len;
        }
        break;
    default:
        break;
    }
}


/* A datagram of the switch toward board i: how long the relay holds it. */
static uint64_t jr_from_switch(int i, const uint8_t *buf, size_t len)
{
    struct dn2f_msg m;
    unsigned k;

    if (dn2f_decode(buf, len, &m) != 0) {
        return 0;
    }
    JR.sw_epoch = m.h.src_epoch;
    switch (m.h.type) {
    case DN2F_T_ASSIGN:
        JR.assigns++;
        JR.lid[i] = m.u.assign.lid;
        for (k = 0; k < JR.njt[i] && JR.jt[i][k] != m.u.assign.ticket.time; k++) {
        }
        if (k == JR.njt[i] && k < 16) {
            JR.jt[i][JR.njt[i]++] = m.u.assign.ticket.time;
        }
        /* 0.5..1.5 s: a join's first answer comes after 5..15 of its
         * HELLOs, whose answers span the switch's second boundaries */
        return JR.delay_assign ? (500 + rndn(&JR.rng, 1000)) * 1000000 : 0;
    case DN2F_T_ROUTES: {
        struct dn2f_iter it;
        struct dn2f_route r;
        if (JR.cur[i].ka_seen && m.h.dst_epoch == JR.cur[i].epoch) {
            JR.cur[i].joined = true;
        }
        dn2f_routes_iter(&m, &it);
        while (dn2f_routes_next_route(&it, &r)) {
            for (k = 0; k < JNB; k++) {
                if (JR.lid[k] && r.lid == JR.lid[k]) {
                    JR.pub_epoch[k] = r.epoch;
                    if (r.epoch == JR.cur[k].epoch) {
                        JR.cur[k].published = true;
                    } else if (JR.cur[k].published && JR.old[k].epoch &&
                               r.epoch == JR.old[k].epoch) {
                        JR.rollbacks++;
                    }
                }
            }
        }
        return 0;
    }
    case DN2F_T_BYE:
        JR.byes_to_u[i]++;
        /* fall through */
    case DN2F_T_KEEPALIVE:
        if (!JR.cur[i].ctl_len && len <= sizeof(JR.cur[i].ctl) && (m.h.flags & DN2F_F_MAC)) {
            memcpy(JR.cur[i].ctl, buf, len);
            JR.cur[i].ctl_len = len;
        }
        return 0;
    case DN2F_T_DATA:
    case DN2F_T_ACK:
        if (rndn(&JR.rng, 4) == 0) {
            JR.data_reordered++;
            return 1 + rndn(&JR.rng, 3000000);
        }
        return 0;
    default:
        return 0;
    }
}

static void jr_release(uint64_t t)
{
    unsigned k = 0;

    while (k < JR.nheld) {
        JHeld *h = &JR.held[k];
        if (h->due <= t) {
            (void)sendto(JR.lfd, h->buf, h->len, 0, &JR.b_addr[h->b].u.sa, JR.b_addr[h->b].len);
            free(h->buf);
            JR.held[k] = JR.held[--JR.nheld];
        } else {
            k++;
        }
    }
}

static void *jr_thread(void *arg)
{
    static uint8_t buf[DN2F_DGRAM_MAX + 64];
    (void)arg;

    while (!__atomic_load_n(&JR.stop, __ATOMIC_RELAXED)) {
        struct pollfd pf[1 + JNB];
        uint64_t t = qb_now_ns(), next = t + 5000000;
        int i, ms;

        pthread_mutex_lock(&JR.mu);
        jr_release(t);
        for (i = 0; i < (int)JR.nheld; i++) {
            if (JR.held[i].due < next) {
                next = JR.held[i].due;
            }
        }
        pthread_mutex_unlock(&JR.mu);
        ms = next > t ? (int)((next - t + 999999) / 1000000) : 0;
        pf[0].fd = JR.lfd;
        pf[0].events = POLLIN;
        for (i = 0; i < JNB; i++) {
            pf[1 + i].fd = JR.ufd[i];
            pf[1 + i].events = POLLIN;
        }
        if (poll(pf, 1 + JNB, ms) <= 0) {
            continue;
        }
        pthread_mutex_lock(&JR.mu);
        for (;;) {
            struct sockaddr_storage ss;
            socklen_t sl = sizeof(ss);
            struct dn2f_addr from;
            ssize_t n = recvfrom(JR.lfd, buf, sizeof(buf), MSG_DONTWAIT, (struct sockaddr *)&ss,
                                 &sl);
            if (n < 0) {
                break;
            }
            dn2f_addr_from_sa(&from, (struct sockaddr *)&ss, sl);
            for (i = 0; i < JNB; i++) {
                if (dn2f_addr_equal(&from, &JR.b_addr[i])) {
                    jr_from_board(i, buf, (size_t)n);
                    (void)sendto(JR.ufd[i], buf, (size_t)n, 0, &JR.sw_addr.u.sa, JR.sw_addr.len);
                    break;
                }
            }
        }
        for (i = 0; i < JNB; i++) {
            for (;;) {
                ssize_t n = recv(JR.ufd[i], buf, sizeof(buf), MSG_DONTWAIT);
                uint64_t d;
                if (n < 0) {
                    break;
                }
                d = jr_from_switch(i, buf, (size_t)n);
                if (!d || JR.nheld == J_HOLD) {
                    (void)sendto(JR.lfd, buf, (size_t)n, 0, &JR.b_addr[i].u.sa, JR.b_addr[i].len);
                } else {
                    JHeld *h = &JR.held[JR.nheld];
                    h->buf = malloc((size_t)n);
                    if (!h->buf) {
                        continue;
                    }
                    memcpy(h->buf, buf, (size_t)n);
                    h->len = (size_t)n;
                    h->b = i;
                    h->due = qb_now_ns() + d;
                    JR.nheld++;
                }
            }
        }
        pthread_mutex_unlock(&JR.mu);
    }
    return NULL;
}

static int jr_socket(int *port)
{
    struct dn2f_addr a;
    int fd;

    dn2f_addr_parse(&a, "127.0.0.1:0");
    fd = dn2f_udp_open(&a, 4 << 20);
    if (fd < 0) {
        die("UDP socket: %s", strerror(-fd));
    }
    if (port) {
        *port = dn2f_addr_port(&a);
    }
    return fd;
}

static void jr_start(int sw_port, uint64_t seed)
{
    char a[64];
    int i;

    memset(&JR, 0, sizeof(JR));
    pthread_mutex_init(&JR.mu, NULL);
    dn2f_rng_seed(&JR.rng, seed);
    snprintf(a, sizeof(a), "127.0.0.1:%d", sw_port);
    dn2f_addr_parse(&JR.sw_addr, a);
    JR.lfd = jr_socket(&JR.l_port);
    for (i = 0; i < JNB; i++) {
        JR.ufd[i] = jr_socket(NULL);
        JR.b_port[i] = free_udp_port();
        snprintf(a, sizeof(a), "127.0.0.1:%d", JR.b_port[i]);
        dn2f_addr_parse(&JR.b_addr[i], a);
    }
    JR.delay_assign = true;
    if (pthread_create(&JR.th, NULL, jr_thread, NULL) != 0) {
        die("pthread_create");
    }
    JR.running = true;
}

static void jr_stop(void)
{
    int i;

    if (!JR.running) {
        return;
    }
    __atomic_store_n(&JR.stop, 1, __ATOMIC_RELAXED);
    pthread_join(JR.th, NULL);
    JR.running = false;
    for (i = 0; i < (int)JR.nheld; i++) {
        free(JR.held[i].buf);
    }
    JR.nheld = 0;
    close(JR.lfd);
    for (i = 0; i < JNB; i++) {
        close(JR.ufd[i]);
    }
}


/* --- the strangers -------------------------------------------------- */

/* A raw IPv4 socket (root or CAP_NET_RAW): datagrams with any source. */
static int j_rawfd = -1;

static void j_raw_open(void)
{
    j_rawfd = socket(AF_INET, SOCK_RAW, IPPROTO_RAW);
    if (j_rawfd < 0) {
        snprintf(JP.raw_why, sizeof(JP.raw_why), "no raw socket (%s: needs root or "
                 "CAP_NET_RAW)", strerror(errno));
        return;
    }
    JP.raw = true;
}


/* To board i "from the switch" (127.0.0.1:L): forged source with a raw
 * socket, else from L itself. */
static void j_to_board(int i, const uint8_t *buf, size_t len)
{
    if (j_rawfd >= 0) {
        uint8_t pkt[20 + 8 + 512];
        struct sockaddr_in dst;
        size_t tot = 20 + 8 + len;
        if (len > 512) {
            return;
        }
        memset(pkt, 0, 28);
        pkt[0] = 0x45;                          /* IPv4, 20-byte header */
        pkt[2] = (uint8_t)(tot >> 8);
        pkt[3] = (uint8_t)tot;
        pkt[8] = 64;                            /* TTL */
        pkt[9] = IPPROTO_UDP;
        pkt[12] = 127, pkt[15] = 1;             /* source 127.0.0.1 */
        pkt[16] = 127, pkt[19] = 1;             /* destination 127.0.0.1 */
        pkt[20] = (uint8_t)(JR.l_port >> 8);    /* UDP source port: the "switch" */
        pkt[21] = (uint8_t)JR.l_port;
        pkt[22] = (uint8_t)(JR.b_port[i] >> 8);
        pkt[23] = (uint8_t)JR.b_port[i];
        pkt[24] = (uint8_t)((8 + len) >> 8);
        pkt[25] = (uint8_t)(8 + len);           /* checksum 0: none (IPv4) */
        memcpy(pkt + 28, buf, len);
        memset(&dst, 0, sizeof(dst));
        dst.sin_family = AF_INET;
        dst.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        (void)sendto(j_rawfd, pkt, tot, 0, (struct sockaddr *)&dst, sizeof(dst));
    } else {
        (void)sendto(JR.lfd, buf, len, 0, &JR.b_addr[i].u.sa, JR.b_addr[i].len);
    }
    JP.spoof_ctl++;
}


/* The MAC flag and 16 bytes that are no MAC (the switch does not check
 * DATA MACs; a stranger needs the flag to get past its first test). */
static size_t j_fake_mac(uint8_t *buf, size_t len, Rng *r)
{
    size_t k;

    buf[6] |= DN2F_F_MAC;
    for (k = 0; k < DN2F_MAC_LEN; k++) {
        buf[len + k] = (uint8_t)rnd(r);
    }
    len += DN2F_MAC_LEN;
    buf[12] = (uint8_t)len;
    buf[13] = (uint8_t)(len >> 8);
    buf[14] = (uint8_t)(len >> 16);
    buf[15] = (uint8_t)(len >> 24);
    return len;
}

static void j_ctl(int i, unsigned type, uint64_t src_ep, uint64_t dst_ep, uint32_t a)
{
    uint8_t buf[128];
    struct dn2f_wbuf w;
    uint16_t lid;

    pthread_mutex_lock(&JR.mu);
    lid = JR.lid[i];
    pthread_mutex_unlock(&JR.mu);
    dn2f_wbuf_init(&w, buf, sizeof(buf));
    dn2f_put_hdr(&w, type, 0, 0, lid, src_ep, dst_ep);
    if (type == DN2F_T_KEEPALIVE) {
        dn2f_put_keepalive(&w, a, 0, NULL);
    } else {
        dn2f_put_u32pair(&w, a, 0);
    }
    j_to_board(i, buf, dn2f_finish(&w));
}


/* One burst of the spoofing stranger at both boards and at the switch. */
static void j_spoof_burst(Rng *r)
{
    int i;

    for (i = 0; i < JNB; i++) {
        uint64_t me, swe;
        uint8_t buf[256], pkt[64], ctl_old[256], ctl_other[256];
        size_t ctl_old_len, ctl_other_len;
        struct dn2f_wbuf w;
        size_t len;
        uint16_t src = dn2_clid_to_lid((uint16_t)(0x300 + rndn(r, 0x100))), dst;

        pthread_mutex_lock(&JR.mu);
        me = JR.cur[i].epoch;
        swe = JR.sw_epoch;
        dst = JR.lid[1 - i];
        ctl_old_len = JR.old[i].ctl_len;
        memcpy(ctl_old, JR.old[i].ctl, ctl_old_len);
        ctl_other_len = JR.cur[1 - i].ctl_len;
        memcpy(ctl_other, JR.cur[1 - i].ctl, ctl_other_len);
        pthread_mutex_unlock(&JR.mu);
        j_ctl(i, DN2F_T_BYE, rnd(r), rnd(r), DN2F_BYE_UNKNOWN);
        j_ctl(i, DN2F_T_BYE, swe, rnd(r), DN2F_BYE_UNKNOWN);
        j_ctl(i, DN2F_T_BYE, rnd(r), me, DN2F_BYE_SHUTDOWN);
        j_ctl(i, DN2F_T_KEEPALIVE, rnd(r), me, 1);
        j_ctl(i, DN2F_T_KEEPALIVE, swe, rnd(r), 1);
        /* on the path without the secret (it reads the epochs): checked by
         * the board with a KEEPALIVE; with the secret: no MAC, dropped */
        j_ctl(i, DN2F_T_BYE, swe, me, DN2F_BYE_UNKNOWN);
        /* signed control datagrams of other incarnations, replayed */
        if (ctl_old_len) {
            j_to_board(i, ctl_old, ctl_old_len);
        }
        if (ctl_other_len) {
            j_to_board(i, ctl_other, ctl_other_len);
        }
        /* DATA of an unknown LID "from" board i (as the switch sees it) */
        dn2f_wbuf_init(&w, buf, sizeof(buf) - DN2F_MAC_LEN);
        dn2f_put_hdr(&w, DN2F_T_DATA, 0, src, dst, rnd(r) | 1, rnd(r) | 1);
        dn2f_hdr_set_sessions(&w, 7, 0);
        {
            struct dn2_hdr h;
            uint64_t w0;
            unsigned k;
            memset(&h, 0, sizeof(h));
            h.type = DN2_OP_RVS;
            h.pgid = PG2;
            h.dlid = dst;
            w0 = dn2_hdr0_encode(&h);
            memset(pkt, 0, sizeof(pkt));
            for (k = 0; k < 8; k++) {
                pkt[k] = (uint8_t)(w0 >> (8 * k));
            }
        }
        dn2f_put_rec(&w, DN2F_REC_UNICAST, 0, 0, 0, 0, NULL, NULL, NULL, pkt, 16);
        len = dn2f_finish(&w);
        if (use_secret) {
            len = j_fake_mac(buf, len, r);
        }
        (void)sendto(JR.ufd[i], buf, len, 0, &JR.sw_addr.u.sa, JR.sw_addr.len);
        JP.spoof_data++;
    }
}


/* --- the passes ----------------------------------------------------- */

static uint64_t j_region_next;

static int j_stage;                     /* 0 joins and round trips, 1 replays, 2 spoofs */


/* The switch's table gives board i's LID its current epoch, which is not
 * not_epoch (the incarnation before a reset). */
static bool j_published(int i, uint64_t not_epoch, unsigned ms)
{
    uint64_t end = now_ms() + ms;

    for (;;) {
        bool ok;
        pthread_mutex_lock(&JR.mu);
        ok = JR.lid[i] && JR.cur[i].epoch && JR.cur[i].epoch != not_epoch &&
             JR.pub_epoch[i] == JR.cur[i].epoch;
        pthread_mutex_unlock(&JR.mu);
        if (ok) {
            return true;
        }
        if (now_ms() > end) {
            return false;
        }
        idle();
        msleep(5);
    }
}


/* An incarnation's first transfer: 4 KiB RVS into a region of the peer
 * of its own, zeroed afterwards (a replay of it must not write it again). */
static void j_first_transfer(Board *b, Board *peer, int i)
{
    uint8_t data[4096];
    char what[96];
    uint64_t reg = J_REGION + (j_region_next % 128) * 64 * KiB;

    fill_bytes(data, sizeof(data), 0xf1257000 + j_region_next++);
    snprintf(what, sizeof(what), "join: the first RVS of board %s's incarnation", b->name);
    known_good(b, DN2_OP_RVS, b, peer, reg, reg, data, sizeof(data), what);
    sd_zero(peer, reg, sizeof(data));
    pthread_mutex_lock(&JR.mu);
    JR.cur[i].region = reg;
    pthread_mutex_unlock(&JR.mu);
}

static void j_round_trips(Board *a, Board *b)
{
    round_trip(a, b, 1 * MiB, 2 * MiB, 3 * MiB, 4 * MiB, 64 * KiB);
    round_trip(b, a, 5 * MiB, 6 * MiB, 7 * MiB, 8 * MiB, 64 * KiB);
    JP.trips += 2;
}


/* The replaying stranger: the previous incarnation of board i joins again
 * and sends its first DATA again, as board i (from U_i). */
static void j_replay(int i, Board *b, Board *peer)
{
    static JRec o;
    uint64_t age, pub, rollbacks;
    unsigned k, n;
    int64_t first;

    pthread_mutex_lock(&JR.mu);
    o = JR.old[i];
    pthread_mutex_unlock(&JR.mu);
    if (!o.ka_len || !o.ndata || !o.region) {
        phase_fail("join: nothing recorded of board %s's previous incarnation (join %zu bytes, "
                   "%u DATA, region 0x%" PRIx64 ")", b->name, o.ka_len, o.ndata, o.region);
    }
    age = now_ms() - o.ka_ms;
    if (age > 9000) {
        JP.rep_late++;
        note("join: board %s's previous join is %.1f s old: the switch refuses the ticket "
             "anyway (a slow round)", b->name, age / 1e3);
    }
    JP.replays++;
    for (k = 0; k < 3; k++) {
        (void)sendto(JR.ufd[i], o.ka, o.ka_len, 0, &JR.sw_addr.u.sa, JR.sw_addr.len);
        JP.rep_ka++;
        msleep(30);
    }
    msleep(100);                /* a new table would be out by now */
    for (k = 0; k < 2; k++) {
        for (n = 0; n < o.ndata; n++) {
            (void)sendto(JR.ufd[i], o.data[n], o.data_len[n], 0, &JR.sw_addr.u.sa,
                         JR.sw_addr.len);
            JP.rep_data++;
        }
        msleep(50);
    }
    msleep(200);
    pthread_mutex_lock(&JR.mu);
    pub = JR.pub_epoch[i];
    rollbacks = JR.rollbacks;
    pthread_mutex_unlock(&JR.mu);
    if (rollbacks) {
        phase_fail("join: the switch published board %s's previous epoch 0x%016" PRIx64
                   " again after its replayed join (%" PRIu64 " table entries)", b->name,
                   o.epoch, rollbacks);
    }
    if (!sd_is_zero(peer, o.region, 4096, &first)) {
        phase_fail("join: the replayed first DATA of board %s's previous incarnation wrote "
                   "board %s's SO-DIMM again (0x%" PRIx64 " + 0x%" PRIx64 ")", b->name,
                   peer->name, o.region, (uint64_t)first);
    }
    vnote("join: replayed board %s's previous join (%.1f s old) and %u DATA: table epoch "
          "0x%016" PRIx64 ", nothing written", b->name, age / 1e3, o.ndata, pub);
}

static void j_check_flaps(const char *when)
{
    uint64_t f[JNB];

    pthread_mutex_lock(&JR.mu);
    f[0] = JR.flaps[0];
    f[1] = JR.flaps[1];
    pthread_mutex_unlock(&JR.mu);
    if (f[0] || f[1]) {
        phase_fail("join: %s: board links went down and joined again (A %" PRIu64 ", B %"
                   PRIu64 " times)", when, f[0], f[1]);
    }
}

static void join_pass(bool secret)
{
    static Sw sw;
    static Board A, B;
    Board *bs[JNB] = { &A, &B };
    char props[256];
    Rng r;
    uint64_t k, t0 = qb_now_ns(), byes0[JNB], byes1[JNB];
    uint64_t rep_ka0 = JP.rep_ka, rep_data0 = JP.rep_data, ctl0 = JP.spoof_ctl;
    uint64_t data0 = JP.spoof_data;
    int i;

    use_secret = secret;
    j_stage = 0;
    memset(&sw, 0, sizeof(sw));
    sw.args[sw.nargs++] = "--route";
    sw.args[sw.nargs++] = "switch";
    psw = &sw;
    if (!sw_start(&sw, 0)) {
        phase_fail("dn2-switch did not start");
    }
    dn2f_rng_seed(&r, opt_seed ^ 0x6a6f696eull ^ (secret ? 0x5ec : 0));
    jr_start(sw.port, opt_seed ^ 0x72656c6179ull ^ (secret ? 1 : 0));
    for (i = 0; i < JNB; i++) {
        snprintf(props, sizeof(props), "switch=127.0.0.1:%d,local=127.0.0.1:%d,guid=0x%x",
                 JR.l_port, JR.b_port[i], 0xd1 + i);
        board_start(bs[i], i ? "B" : "A", 256 * MiB, props);
        bs[i]->udp_port = JR.b_port[i];
    }
    for (i = 0; i < JNB; i++) {
        if (!wait_link(bs[i], T_LINK)) {
            hang("board %s: no link through the late switch at start", bs[i]->name);
        }
        board_bringup(bs[i], PG, PG);
        if (!j_published(i, 0, T_LINK)) {
            phase_fail("join: board %s's epoch never published", bs[i]->name);
        }
    }
    note("join%s: boards A (LID 0x%x) and B (LID 0x%x) through a relay that holds ASSIGNs "
         "0.5-1.5 s (dn2-switch port %d, --route switch); spoofing %s",
         secret ? " (cluster secret)" : "", A.lid, B.lid, sw.port,
         JP.raw ? "with a raw socket (forged source 127.0.0.1:L)" : "from the relay's socket");
    j_first_transfer(&A, &B, 0);
    j_first_transfer(&B, &A, 1);
    j_round_trips(&A, &B);
    for (k = 0; k < opt_join_rounds; k++) {
        Board *b = bs[k % 2], *peer = bs[1 - k % 2];
        int bi = (int)(k % 2);
        uint16_t lid = b->lid;
        uint64_t e_prev, end;

        j_stage = 0;
        pthread_mutex_lock(&JR.mu);
        e_prev = JR.cur[bi].epoch;
        pthread_mutex_unlock(&JR.mu);
        /* an SMA reset: the port renegotiates, a new incarnation (epoch) */
        sr_w(b, DN2_SR_SMA, 1);
        JP.resets++;
        if (!j_published(bi, e_prev, 2 * T_LINK) || !wait_link(b, T_LINK)) {
            hang("join: board %s did not join again through the late switch after its reset",
                 b->name);
        }
        if (b->lid != lid) {
            phase_fail("board %s came back with LID 0x%x, not 0x%x", b->name, b->lid, lid);
        }
        j_first_transfer(b, peer, bi);
        j_stage = 1;
        j_replay(bi, b, peer);
        j_stage = 2;
        pthread_mutex_lock(&JR.mu);
        for (i = 0; i < JNB; i++) {
            byes0[i] = JR.byes_to_u[i];
        }
        pthread_mutex_unlock(&JR.mu);
        end = now_ms() + opt_join_spoof_ms;
        while (now_ms() < end) {
            j_spoof_burst(&r);
            usleep(2000);
        }
        msleep(150);            /* a board's check of a BYE takes up to 100 ms */
        pthread_mutex_lock(&JR.mu);
        for (i = 0; i < JNB; i++) {
            byes1[i] = JR.byes_to_u[i] - byes0[i];
        }
        pthread_mutex_unlock(&JR.mu);
        if (secret) {
            JP.byes_unauth_secret += byes1[0] + byes1[1];
            if (byes1[0] + byes1[1]) {
                phase_fail("join: with the secret the switch signed %" PRIu64 " BYEs to "
                           "unauthenticated DATA", byes1[0] + byes1[1]);
            }
        } else {
            JP.byes_unauth_plain += byes1[0] + byes1[1];
        }
        j_check_flaps("after the spoofing stranger");
        j_stage = 0;
        j_round_trips(&A, &B);
        JP.rounds++;
    }
    j_check_flaps("at the end");
    pthread_mutex_lock(&JR.mu);
    for (i = 0; i < JNB; i++) {
        if (JR.cur[i].joined) {
            jr_close_join(i);
            JR.cur[i].joined = false;
        }
    }
    JP.joins += JR.joins;
    JP.joins_multi += JR.joins_multi;
    JP.assigns += JR.assigns;
    JP.reordered += JR.data_reordered;
    JP.flaps += JR.flaps[0] + JR.flaps[1];
    pthread_mutex_unlock(&JR.mu);
    for (i = 0; i < JNB; i++) {
        JP.auth_drops += qom(bs[i], "stat-link-auth-drops");
    }
    JP.secs += (qb_now_ns() - t0) / 1e9;
    JP.passes++;
    note("join%s: %u joins (%u with ASSIGNs of >= 2 switch seconds), %" PRIu64 " ASSIGNs, %"
         PRIu64 " DATA/ACK reordered; replayed %" PRIu64 " join and %" PRIu64 " DATA datagrams; "
         "spoofed %" PRIu64 " BYE/KEEPALIVE, %" PRIu64 " DATA at the switch; no flap", secret ?
         " (cluster secret)" : "", JR.joins, JR.joins_multi, JR.assigns, JR.data_reordered,
         JP.rep_ka - rep_ka0, JP.rep_data - rep_data0, JP.spoof_ctl - ctl0,
         JP.spoof_data - data0);
}

void phase_join(void)
{
    static jmp_buf outer;
    static bool failed;
    static int pass, stage;

    memcpy(outer, phase_env, sizeof(jmp_buf));
    failed = false;
    stage = 0;
    JP.ran = true;
    j_raw_open();
    if (!JP.raw) {
        note("join: %s: the spoofed BYE/KEEPALIVE come from the relay's own socket at the "
             "switch's address, not from a forged source", JP.raw_why);
    }
    for (pass = 0; pass < 2 && !failed; pass++) {
        if (!setjmp(phase_env)) {
            join_pass(pass == 1);
        } else {
            failed = true;
            stage = j_stage;
        }
        jr_stop();
        phase_cleanup();
        use_secret = false;
    }
    if (j_rawfd >= 0) {
        close(j_rawfd);
        j_rawfd = -1;
    }
    /* a failure fails its own property; the others were not all checked */
    JP.up_ok = JP.replay_ok = JP.spoof_ok = !failed;
    JP.failed_stage = failed ? stage : -1;
    memcpy(phase_env, outer, sizeof(jmp_buf));
    if (failed) {
        longjmp(phase_env, 1);
    }
}
