/* SPDX-License-Identifier: MIT */
/*
 * dn2fab: wire format (encode / validating decode), addresses, UDP helper,
 * PRNG.  See dn2fab.h and docs/fabric.md.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1
#endif
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <sys/socket.h>

#include "dn2fab-int.h"
#include "dn2fab-hmac.h"

/* ------------------------------------------------------------------ names */
const char *dn2f_strerror(int err)
{
    static const char *const names[DN2F_E_MAX] = {
        [DN2F_OK] = "ok",
        [DN2F_E_SHORT] = "datagram too short",
        [DN2F_E_MAGIC] = "bad magic",
        [DN2F_E_VERSION] = "unsupported version",
        [DN2F_E_TYPE] = "unknown type",
        [DN2F_E_LENGTH] = "length mismatch",
        [DN2F_E_FLAGS] = "bad flags",
        [DN2F_E_RESERVED] = "reserved field not zero",
        [DN2F_E_FIELD] = "field out of range",
        [DN2F_E_TRUNC] = "body truncated or malformed",
    };
    if (err < 0) {
        err = -err;
    }
    return err < DN2F_E_MAX && names[err] ? names[err] : "?";
}

const char *dn2f_type_name(unsigned type)
{
    static const char *const names[DN2F_T_MAX] = {
        [DN2F_T_HELLO] = "HELLO", [DN2F_T_ASSIGN] = "ASSIGN",
        [DN2F_T_ROUTES] = "ROUTES", [DN2F_T_DATA] = "DATA", [DN2F_T_ACK] = "ACK",
        [DN2F_T_KEEPALIVE] = "KEEPALIVE", [DN2F_T_BYE] = "BYE",
        [DN2F_T_STATS_REQ] = "STATS_REQ", [DN2F_T_STATS_RESP] = "STATS_RESP",
        [DN2F_T_MCAST_JOIN] = "MCAST_JOIN", [DN2F_T_MCAST_LEAVE] = "MCAST_LEAVE",
    };
    return type < DN2F_T_MAX && names[type] ? names[type] : "?";
}

const char *dn2f_bye_name(unsigned reason)
{
    static const char *const names[DN2F_BYE_MAX] = {
        [DN2F_BYE_LEAVING] = "leaving",
        [DN2F_BYE_SHUTDOWN] = "switch shutting down",
        [DN2F_BYE_UNKNOWN] = "unknown to the switch",
        [DN2F_BYE_GUID_IN_USE] = "GUID in use by another live board",
        [DN2F_BYE_AUTH] = "authentication failed (cluster secret missing or different)",
        [DN2F_BYE_FULL] = "no LID left or too many ports from this host",
    };
    return reason < DN2F_BYE_MAX && names[reason] ? names[reason] : "?";
}

const char *dn2f_drop_name(unsigned reason)
{
    static const char *const names[DN2F_DROP_MAX] = {
        [DN2F_DROP_BAD_DGRAM] = "bad_datagram",
        [DN2F_DROP_NOT_FOR_US] = "not_for_us",
        [DN2F_DROP_FORGED] = "forged_source",
        [DN2F_DROP_UNKNOWN_PEER] = "unknown_peer",
        [DN2F_DROP_STALE_EPOCH] = "stale_epoch",
        [DN2F_DROP_BAD_ACK] = "bad_ack",
        [DN2F_DROP_BAD_DLID] = "bad_dlid",
        [DN2F_DROP_WINDOW] = "beyond_window",
        [DN2F_DROP_NO_BUFFER] = "no_buffer",
        [DN2F_DROP_NO_ROUTE] = "no_route",
        [DN2F_DROP_DELIVER_ERR] = "deliver_error",
        [DN2F_DROP_PEER_GONE] = "peer_gone",
        [DN2F_DROP_PEER_RESET] = "peer_reset",
        [DN2F_DROP_NOT_READY] = "link_not_ready",
        [DN2F_DROP_STALE_SESSION] = "stale_session",
        [DN2F_DROP_AUTH] = "auth",
    };
    return reason < DN2F_DROP_MAX && names[reason] ? names[reason] : "?";
}

/* ------------------------------------------------------------ LID helpers */
uint16_t dn2f_pkt_dlid(const uint8_t *pkt)
{
    return dn2f_ld16(pkt + 4);      /* 1st DW little-endian, bits [47:32] */
}

unsigned dn2f_pkt_dwid(const uint8_t *pkt)
{
    return (dn2f_ld32(pkt) >> DN2_H0_DWID_BIT) & 1;
}

/* Is the 1st DW an RVL-family request (TYPE, bits [16:12])? */
static bool h0_is_rvl(uint64_t h0)
{
    return dn2_otype_is_rvl((unsigned)DN2_GET(h0, DN2_H0_TYPE_HI, DN2_H0_TYPE_LO));
}

unsigned dn2f_h0_lane(uint64_t h0)
{
    unsigned dwid = (unsigned)(h0 >> DN2_H0_DWID_BIT) & 1;
    uint16_t dlid = (uint16_t)DN2_GET(h0, DN2_H0_DLID_HI, DN2_H0_DLID_LO);

    if (h0_is_rvl(h0) && !dn2f_lid_is_mcast(dlid)) {
        return dwid + DN2F_LANE_REQ;
    }
    return dwid;
}

unsigned dn2f_pkt_lane(const uint8_t *pkt)
{
    return dn2f_h0_lane(dn2f_ld64(pkt));
}

unsigned dn2f_lane_rflags(unsigned lane)
{
    return ((lane & 1) ? DN2F_RF_LANE1 : 0) | ((lane & DN2F_LANE_REQ) ? DN2F_RF_REQ : 0);
}

bool dn2f_lid_is_mcast(uint16_t lid)
{
    return (lid & 0x0f00) == 0 && dn2_clid_is_mcast(dn2_lid_to_clid(lid));
}

/* -------------------------------------------------------------- addresses */
int dn2f_addr_parse(struct dn2f_addr *a, const char *s)
{
    char host[256];
    const char *colon, *portstr;
    char *end;
    unsigned long port;
    size_t hl;

    memset(a, 0, sizeof(*a));
    if (!s || !*s) {
        return -EINVAL;
    }
    if (s[0] == '[') {
        const char *rb = strchr(s, ']');
        if (!rb || rb[1] != ':') {
            return -EINVAL;
        }
        hl = (size_t)(rb - s - 1);
        if (hl == 0 || hl >= sizeof(host)) {
            return -EINVAL;
        }
        memcpy(host, s + 1, hl);
        host[hl] = 0;
        portstr = rb + 2;
    } else {
        colon = strrchr(s, ':');
        if (!colon || strchr(s, ':') != colon) {
            return -EINVAL;     /* bare IPv6 must be bracketed */
        }
        hl = (size_t)(colon - s);
        if (hl == 0 || hl >= sizeof(host)) {
            return -EINVAL;
        }
        memcpy(host, s, hl);
        host[hl] = 0;
        portstr = colon + 1;
    }
    if (!*portstr || *portstr == '-' || *portstr == '+') {
        return -EINVAL;
    }
    errno = 0;
    port = strtoul(portstr, &end, 10);
    if (errno || *end || port > 65535) {
        return -EINVAL;
    }
    if (inet_pton(AF_INET, host, &a->u.in.sin_addr) == 1) {
        a->u.in.sin_family = AF_INET;
        a->u.in.sin_port = htons((uint16_t)port);
        a->len = sizeof(a->u.in);
        return 0;
    }
    if (inet_pton(AF_INET6, host, &a->u.in6.sin6_addr) == 1) {
        a->u.in6.sin6_family = AF_INET6;
        a->u.in6.sin6_port = htons((uint16_t)port);
        a->len = sizeof(a->u.in6);
        return 0;
    }
    {
        struct addrinfo hints, *res = NULL;
        int rc;
        memset(&hints, 0, sizeof(hints));
        hints.ai_family = AF_UNSPEC;
        hints.ai_socktype = SOCK_DGRAM;
        rc = getaddrinfo(host, NULL, &hints, &res);
        if (rc != 0 || !res) {
            return -ENOENT;
        }
        if (res->ai_addrlen > sizeof(a->u.ss)) {
            freeaddrinfo(res);
            return -EINVAL;
        }
        memcpy(&a->u.ss, res->ai_addr, res->ai_addrlen);
        a->len = res->ai_addrlen;
        freeaddrinfo(res);
        if (a->u.sa.sa_family == AF_INET) {
            a->u.in.sin_port = htons((uint16_t)port);
        } else if (a->u.sa.sa_family == AF_INET6) {
            a->u.in6.sin6_port = htons((uint16_t)port);
        } else {
            return -EAFNOSUPPORT;
        }
        return 0;
    }
}

void dn2f_addr_from_sa(struct dn2f_addr *a, const struct sockaddr *sa, socklen_t len)
{
    memset(a, 0, sizeof(*a));
    if (len > (socklen_t)sizeof(a->u.ss)) {
        len = sizeof(a->u.ss);
    }
    memcpy(&a->u.ss, sa, len);
    a->len = len;
}

/* IPv4 view of an address: true (and ip, port) when it is IPv4 or v4-mapped. */
static bool addr_v4(const struct dn2f_addr *a, uint32_t *ip, uint16_t *port)
{
    if (a->len >= sizeof(struct sockaddr_in) && a->u.sa.sa_family == AF_INET) {
        *ip = a->u.in.sin_addr.s_addr;
        *port = a->u.in.sin_port;
        return true;
    }
    if (a->len >= sizeof(struct sockaddr_in6) && a->u.sa.sa_family == AF_INET6 &&
        IN6_IS_ADDR_V4MAPPED(&a->u.in6.sin6_addr)) {
        memcpy(ip, &a->u.in6.sin6_addr.s6_addr[12], 4);
        *port = a->u.in6.sin6_port;
        return true;
    }
    return false;
}

bool dn2f_addr_equal(const struct dn2f_addr *a, const struct dn2f_addr *b)
{
    uint32_t ia = 0, ib = 0;
    uint16_t pa = 0, pb = 0;
    bool va = addr_v4(a, &ia, &pa), vb = addr_v4(b, &ib, &pb);

    if (va || vb) {
        return va && vb && ia == ib && pa == pb;
    }
    if (a->len >= sizeof(struct sockaddr_in6) && b->len >= sizeof(struct sockaddr_in6) &&
        a->u.sa.sa_family == AF_INET6 && b->u.sa.sa_family == AF_INET6) {
        return a->u.in6.sin6_port == b->u.in6.sin6_port &&
               memcmp(&a->u.in6.sin6_addr, &b->u.in6.sin6_addr, 16) == 0 &&
               a->u.in6.sin6_scope_id == b->u.in6.sin6_scope_id;
    }
    return false;
}

uint16_t dn2f_addr_port(const struct dn2f_addr *a)
{
    if (a->len && a->u.sa.sa_family == AF_INET) {
        return ntohs(a->u.in.sin_port);
    }
    if (a->len && a->u.sa.sa_family == AF_INET6) {
        return ntohs(a->u.in6.sin6_port);
    }
    return 0;
}

const char *dn2f_addr_str(const struct dn2f_addr *a, char *buf, size_t n)
{
    char h[INET6_ADDRSTRLEN];
    uint32_t ip;
    uint16_t port;

    if (n == 0) {
        return buf;
    }
    if (addr_v4(a, &ip, &port)) {
        inet_ntop(AF_INET, &ip, h, sizeof(h));
        snprintf(buf, n, "%s:%u", h, ntohs(port));
    } else if (a->len >= sizeof(struct sockaddr_in6) && a->u.sa.sa_family == AF_INET6) {
        inet_ntop(AF_INET6, &a->u.in6.sin6_addr, h, sizeof(h));
        snprintf(buf, n, "[%s]:%u", h, ntohs(a->u.in6.sin6_port));
    } else {
        snprintf(buf, n, "-");
    }
    return buf;
}

bool dn2f_addr_to_family(struct dn2f_addr *a, int family)
{
    uint32_t ip;
    uint16_t port;

    if (!a->len) {
        return false;
    }
    if (a->u.sa.sa_family == family) {
        return true;
    }
    if (!addr_v4(a, &ip, &port)) {
        return false;           /* real IPv6 cannot go out of an IPv4 socket */
    }
    memset(&a->u, 0, sizeof(a->u));
    if (family == AF_INET) {
        a->u.in.sin_family = AF_INET;
        a->u.in.sin_addr.s_addr = ip;
        a->u.in.sin_port = port;
        a->len = sizeof(a->u.in);
    } else if (family == AF_INET6) {
        a->u.in6.sin6_family = AF_INET6;
        a->u.in6.sin6_addr.s6_addr[10] = 0xff;
        a->u.in6.sin6_addr.s6_addr[11] = 0xff;
        memcpy(&a->u.in6.sin6_addr.s6_addr[12], &ip, 4);
        a->u.in6.sin6_port = port;
        a->len = sizeof(a->u.in6);
    } else {
        return false;
    }
    return true;
}

void dn2f_enc_addr(uint8_t *fam, uint8_t *port2, uint8_t *scope4, uint8_t *addr16,
                   const struct dn2f_addr *a)
{
    uint32_t ip;
    uint16_t port;

    *fam = 0;
    memset(port2, 0, 2);
    memset(scope4, 0, 4);
    memset(addr16, 0, 16);
    if (addr_v4(a, &ip, &port)) {
        *fam = 4;
        dn2f_st16(port2, ntohs(port));
        memcpy(addr16, &ip, 4);
    } else if (a->len >= sizeof(struct sockaddr_in6) && a->u.sa.sa_family == AF_INET6) {
        *fam = 6;
        dn2f_st16(port2, ntohs(a->u.in6.sin6_port));
        dn2f_st32(scope4, a->u.in6.sin6_scope_id);
        memcpy(addr16, &a->u.in6.sin6_addr, 16);
    }
}

static bool all_zero(const uint8_t *p, size_t n)
{
    while (n--) {
        if (*p++) {
            return false;
        }
    }
    return true;
}

int dn2f_dec_addr(struct dn2f_addr *a, uint8_t fam, const uint8_t *port2,
                  const uint8_t *scope4, const uint8_t *addr16)
{
    memset(a, 0, sizeof(*a));
    switch (fam) {
    case 0:
        if (!all_zero(port2, 2) || !all_zero(scope4, 4) || !all_zero(addr16, 16)) {
            return -DN2F_E_RESERVED;
        }
        return 0;
    case 4:
        if (!all_zero(scope4, 4) || !all_zero(addr16 + 4, 12)) {
            return -DN2F_E_RESERVED;
        }
        a->u.in.sin_family = AF_INET;
        a->u.in.sin_port = htons(dn2f_ld16(port2));
        memcpy(&a->u.in.sin_addr, addr16, 4);
        a->len = sizeof(a->u.in);
        return 0;
    case 6:
        a->u.in6.sin6_family = AF_INET6;
        a->u.in6.sin6_port = htons(dn2f_ld16(port2));
        a->u.in6.sin6_scope_id = dn2f_ld32(scope4);
        memcpy(&a->u.in6.sin6_addr, addr16, 16);
        a->len = sizeof(a->u.in6);
        return 0;
    default:
        return -DN2F_E_FIELD;
    }
}

int dn2f_udp_open(struct dn2f_addr *bind_addr, int bufsize)
{
    int fd, fl;
    struct sockaddr_storage ss;
    socklen_t sl = sizeof(ss);

    fd = socket(bind_addr->u.sa.sa_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        return -errno;
    }
    if (bufsize <= 0) {
        bufsize = 4 << 20;
    }
    (void)setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &bufsize, sizeof(bufsize));
    (void)setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &bufsize, sizeof(bufsize));
    if (bind(fd, &bind_addr->u.sa, bind_addr->len) < 0) {
        int e = errno;
        close(fd);
        return -e;
    }
    fl = fcntl(fd, F_GETFL);
    if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0) {
        int e = errno;
        close(fd);
        return -e;
    }
    if (getsockname(fd, (struct sockaddr *)&ss, &sl) == 0) {
        dn2f_addr_from_sa(bind_addr, (struct sockaddr *)&ss, sl);
    }
    return fd;
}

/* -------------------------------------------------------------------- RNG */
static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

void dn2f_rng_seed(struct dn2f_rng *r, uint64_t seed)
{
    int i;
    for (i = 0; i < 4; i++) {
        r->s[i] = splitmix64(&seed);
    }
}

static inline uint64_t rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

uint64_t dn2f_rng_next(struct dn2f_rng *r)
{
    uint64_t *s = r->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

double dn2f_rng_unit(struct dn2f_rng *r)
{
    return (double)(dn2f_rng_next(r) >> 11) * (1.0 / 9007199254740992.0);
}

uint64_t dn2f_random_u64(void)
{
    uint64_t v = 0, x;
    struct timespec ts;
    int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);

    if (fd >= 0) {
        ssize_t n = read(fd, &v, sizeof(v));
        close(fd);
        if (n == (ssize_t)sizeof(v) && v != 0) {
            return v;
        }
    }
    clock_gettime(CLOCK_REALTIME, &ts);
    x = (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
    x ^= (uint64_t)getpid() << 32;
    x ^= (uint64_t)(uintptr_t)&v;
    v = splitmix64(&x);
    return v ? v : 1;
}

/* ------------------------------------------------------------------ encode */
void dn2f_wbuf_init(struct dn2f_wbuf *b, void *mem, size_t cap)
{
    b->p = mem;
    b->cap = cap > DN2F_DGRAM_MAX ? DN2F_DGRAM_MAX : cap;
    b->len = 0;
    b->overflow = false;
}

static uint8_t *wb_reserve(struct dn2f_wbuf *b, size_t n)
{
    uint8_t *p;
    if (b->overflow || n > b->cap - b->len) {
        b->overflow = true;
        return NULL;
    }
    p = b->p + b->len;
    memset(p, 0, n);
    b->len += n;
    return p;
}

void dn2f_put_hdr(struct dn2f_wbuf *b, unsigned type, unsigned flags,
                  uint16_t src, uint16_t dst, uint64_t src_epoch, uint64_t dst_epoch)
{
    uint8_t *p = wb_reserve(b, DN2F_HDR_LEN);
    if (!p) {
        return;
    }
    dn2f_st32(p, DN2F_MAGIC);
    p[4] = DN2F_VERSION;
    p[5] = (uint8_t)type;
    dn2f_st16(p + 6, (uint16_t)flags);
    dn2f_st16(p + 8, src);
    dn2f_st16(p + 10, dst);
    dn2f_st64(p + 16, src_epoch);
    dn2f_st64(p + 24, dst_epoch);
    if (type == DN2F_T_DATA) {
        wb_reserve(b, DN2F_DATA_TS_LEN);        /* the timestamp: 0 until set */
    }
}

void dn2f_data_set_ts(struct dn2f_wbuf *b, uint32_t ts)
{
    if (!b->overflow && b->len >= DN2F_HDR_LEN + DN2F_DATA_TS_LEN &&
        b->p[5] == DN2F_T_DATA) {
        dn2f_st32(b->p + DN2F_HDR_LEN, ts);
    }
}

uint32_t dn2f_ts_us(uint64_t ns)
{
    uint32_t ts = (uint32_t)(ns / 1000);
    return ts ? ts : 1;
}

void dn2f_hdr_set_sessions(struct dn2f_wbuf *b, uint32_t src_sess, uint32_t dst_sess)
{
    if (!b->overflow && b->len >= DN2F_HDR_LEN) {
        dn2f_st32(b->p + 32, src_sess);
        dn2f_st32(b->p + 36, dst_sess);
    }
}

size_t dn2f_finish_mac(struct dn2f_wbuf *b, const struct dn2f_hmac_key *key)
{
    struct dn2f_hmac h;
    uint8_t mac[DN2F_SHA256_LEN], *t;
    size_t n;

    if (b->overflow || b->len < DN2F_HDR_LEN) {
        return 0;
    }
    dn2f_st16(b->p + 6, (uint16_t)(dn2f_ld16(b->p + 6) | DN2F_F_MAC));
    if (b->cap - b->len < DN2F_MAC_LEN && b->cap + DN2F_MAC_LEN <= DN2F_DGRAM_MAX) {
        b->cap += DN2F_MAC_LEN;         /* the room the builder kept for it */
    }
    t = wb_reserve(b, DN2F_MAC_LEN);
    if (!t) {
        return 0;
    }
    n = b->len;
    dn2f_st32(b->p + 12, (uint32_t)n);
    dn2f_hmac_start(&h, key);
    dn2f_hmac_update(&h, b->p, n - DN2F_MAC_LEN);
    dn2f_hmac_finish(&h, mac);
    memcpy(t, mac, DN2F_MAC_LEN);
    return n;
}

bool dn2f_mac_ok(const void *buf, const struct dn2f_msg *m, const struct dn2f_hmac_key *key)
{
    struct dn2f_hmac h;
    uint8_t mac[DN2F_SHA256_LEN];
    if (!m->mac) {
        return false;
    }
    dn2f_hmac_start(&h, key);
    dn2f_hmac_update(&h, buf, (size_t)(m->mac - (const uint8_t *)buf));
    dn2f_hmac_finish(&h, mac);
    return dn2f_ct_equal(mac, m->mac, DN2F_MAC_LEN);
}

size_t dn2f_finish(struct dn2f_wbuf *b)
{
    if (b->overflow || b->len < DN2F_HDR_LEN) {
        return 0;
    }
    dn2f_st32(b->p + 12, (uint32_t)b->len);
    return b->len;
}

void dn2f_put_hello(struct dn2f_wbuf *b, const struct dn2f_hello *h)
{
    uint8_t *p = wb_reserve(b, DN2F_HELLO_LEN);
    if (p) {
        dn2f_st64(p, h->guid);
        dn2f_st16(p + 8, h->lid_hint);
    }
}

void dn2f_put_assign(struct dn2f_wbuf *b, const struct dn2f_assign *a)
{
    uint8_t *p = wb_reserve(b, DN2F_ASSIGN_LEN);
    if (p) {
        dn2f_st64(p, a->guid);
        dn2f_st16(p + 8, a->lid);
        p[10] = a->link_state;
        p[11] = a->route_mode;
        dn2f_st32(p + 12, a->ticket.time);
        memcpy(p + 16, a->ticket.mac, DN2F_TICKET_LEN);
        memcpy(p + 32, a->token, DN2F_TOKEN_LEN);
    }
}

void dn2f_put_keepalive(struct dn2f_wbuf *b, uint32_t gen, uint64_t guid,
                        const struct dn2f_ticket *t)
{
    uint8_t *p = wb_reserve(b, DN2F_KEEPALIVE_LEN);
    if (p) {
        dn2f_st32(p, gen);
        if (t) {
            dn2f_st32(p + 4, t->time);
            dn2f_st64(p + 8, guid);
            memcpy(p + 16, t->mac, DN2F_TICKET_LEN);
        }
    }
}

void dn2f_put_stats_req(struct dn2f_wbuf *b, uint32_t cookie, uint16_t chunk, size_t total)
{
    size_t n = total > b->len + 8 ? total - b->len : 8;
    uint8_t *p = wb_reserve(b, n);
    if (p) {
        dn2f_st32(p, cookie);
        dn2f_st16(p + 4, chunk);
    }
}

void dn2f_put_routes_hdr(struct dn2f_wbuf *b, uint32_t gen, uint16_t chunk, uint16_t nchunks,
                         uint16_t nroutes, uint16_t ngroups)
{
    uint8_t *p = wb_reserve(b, 16);
    if (p) {
        dn2f_st32(p, gen);
        dn2f_st16(p + 4, chunk);
        dn2f_st16(p + 6, nchunks);
        dn2f_st16(p + 8, nroutes);
        dn2f_st16(p + 10, ngroups);
    }
}

void dn2f_put_route(struct dn2f_wbuf *b, const struct dn2f_route *r)
{
    uint8_t *p = wb_reserve(b, DN2F_ROUTE_LEN);
    if (p) {
        dn2f_st16(p, r->lid);
        p[2] = r->flags;
        dn2f_enc_addr(p + 3, p + 4, p + 8, p + 12, &r->addr);
        dn2f_st64(p + 28, r->epoch);
        memcpy(p + 36, r->token, DN2F_TOKEN_LEN);
    }
}

size_t dn2f_group_len(unsigned n)
{
    return dn2f_pad4(4 + 2 * (size_t)n);
}

void dn2f_put_group(struct dn2f_wbuf *b, uint16_t group, uint16_t n, const uint16_t *lids)
{
    uint8_t *p = wb_reserve(b, dn2f_group_len(n));
    unsigned i;
    if (p) {
        dn2f_st16(p, group);
        dn2f_st16(p + 2, n);
        for (i = 0; i < n; i++) {
            dn2f_st16(p + 4 + 2 * i, lids[i]);
        }
    }
}

size_t dn2f_ack_len(unsigned nbits)
{
    return DN2F_ACK_HDR_LEN + nbits / 8;
}

void dn2f_put_ack(struct dn2f_wbuf *b, unsigned lane, bool more, uint32_t cum, uint32_t limit,
                  uint16_t nbits, const uint8_t *bits)
{
    dn2f_put_ack_echo(b, lane, more, cum, limit, 0, nbits, bits);
}

void dn2f_put_ack_echo(struct dn2f_wbuf *b, unsigned lane, bool more, uint32_t cum,
                       uint32_t limit, uint32_t echo, uint16_t nbits, const uint8_t *bits)
{
    uint8_t *p;
    nbits &= (uint16_t)~31u;
    if (nbits > DN2F_SACK_MAX_BITS) {
        nbits = DN2F_SACK_MAX_BITS;
    }
    p = wb_reserve(b, dn2f_ack_len(nbits));
    if (p) {
        dn2f_st32(p, cum);
        dn2f_st32(p + 4, limit);
        dn2f_st16(p + 8, nbits);
        p[10] = (uint8_t)lane;
        p[11] = more ? 1 : 0;
        dn2f_st32(p + 12, echo);
        if (nbits && bits) {
            memcpy(p + DN2F_ACK_HDR_LEN, bits, nbits / 8);
        }
    }
}

size_t dn2f_rec_len_rf(unsigned kind, unsigned rflags, unsigned nmemb, size_t len)
{
    size_t n = DN2F_REC_HDR_LEN + dn2f_pad4(len);
    if (kind == DN2F_REC_MCAST_ORIGIN) {
        n += 4 + (size_t)nmemb * DN2F_MEMBER_LEN;
    } else if (kind == DN2F_REC_MCAST_COPY) {
        n += 4;
    } else if (rflags & DN2F_RF_REQ) {
        n += DN2F_REQ_AFTER_LEN;
    }
    return n;
}

size_t dn2f_rec_len(unsigned kind, unsigned nmemb, size_t len)
{
    return dn2f_rec_len_rf(kind, 0, nmemb, len);
}

bool dn2f_put_origin(struct dn2f_wbuf *b, unsigned rflags, uint16_t group, unsigned nmemb,
                     const struct dn2f_member *m, const void *pkt, size_t len)
{
    size_t need = dn2f_rec_len(DN2F_REC_MCAST_ORIGIN, nmemb, len);
    uint8_t *p;
    unsigned i;

    if (b->overflow || need > b->cap - b->len) {
        return false;
    }
    p = wb_reserve(b, need);
    dn2f_st16(p + 4, (uint16_t)len);
    p[6] = DN2F_REC_MCAST_ORIGIN;
    p[7] = (uint8_t)rflags;
    p += DN2F_REC_HDR_LEN;
    dn2f_st16(p, group);
    dn2f_st16(p + 2, (uint16_t)nmemb);
    p += 4;
    for (i = 0; i < nmemb; i++) {
        dn2f_st16(p, m[i].lid);
        dn2f_st32(p + 4, m[i].seq);
        dn2f_st64(p + 8, m[i].epoch);
        dn2f_st32(p + 16, m[i].src_sess);
        dn2f_st32(p + 20, m[i].dst_sess);
        p += DN2F_MEMBER_LEN;
    }
    memcpy(p, pkt, len);
    return true;
}

static bool put_rec(struct dn2f_wbuf *b, unsigned kind, unsigned rflags, uint32_t seq,
                    uint32_t after, uint16_t group, unsigned nmemb, const uint16_t *mlid,
                    const uint32_t *mseq, const uint64_t *mepoch,
                    const void *pkt, size_t len)
{
    size_t need = dn2f_rec_len_rf(kind, rflags, nmemb, len);
    uint8_t *p;
    unsigned i;

    if (b->overflow || need > b->cap - b->len) {
        return false;
    }
    p = wb_reserve(b, need);
    dn2f_st32(p, seq);
    dn2f_st16(p + 4, (uint16_t)len);
    p[6] = (uint8_t)kind;
    p[7] = (uint8_t)rflags;
    p += DN2F_REC_HDR_LEN;
    if (kind == DN2F_REC_MCAST_ORIGIN) {
        dn2f_st16(p, group);
        dn2f_st16(p + 2, (uint16_t)nmemb);
        p += 4;
        for (i = 0; i < nmemb; i++) {
            dn2f_st16(p, mlid[i]);
            dn2f_st32(p + 4, mseq[i]);
            dn2f_st64(p + 8, mepoch[i]);
            p += DN2F_MEMBER_LEN;
        }
    } else if (kind == DN2F_REC_MCAST_COPY) {
        dn2f_st16(p, group);
        p += 4;
    } else if (rflags & DN2F_RF_REQ) {
        dn2f_st32(p, after);
        p += DN2F_REQ_AFTER_LEN;
    }
    memcpy(p, pkt, len);
    return true;
}

bool dn2f_put_rec(struct dn2f_wbuf *b, unsigned kind, unsigned rflags, uint32_t seq,
                  uint16_t group, unsigned nmemb, const uint16_t *mlid,
                  const uint32_t *mseq, const uint64_t *mepoch,
                  const void *pkt, size_t len)
{
    return put_rec(b, kind, rflags, seq, 0, group, nmemb, mlid, mseq, mepoch, pkt, len);
}

bool dn2f_put_req(struct dn2f_wbuf *b, unsigned rflags, uint32_t seq, uint32_t after,
                  const void *pkt, size_t len)
{
    return put_rec(b, DN2F_REC_UNICAST, rflags | DN2F_RF_REQ, seq, after, 0, 0, NULL, NULL,
                   NULL, pkt, len);
}

void dn2f_put_u32pair(struct dn2f_wbuf *b, uint32_t a, uint32_t c)
{
    uint8_t *p = wb_reserve(b, 8);
    if (p) {
        dn2f_st32(p, a);
        dn2f_st32(p + 4, c);
    }
}

void dn2f_put_mcast(struct dn2f_wbuf *b, uint16_t group)
{
    uint8_t *p = wb_reserve(b, 8);
    if (p) {
        dn2f_st16(p, group);
    }
}

void dn2f_put_stats_hdr(struct dn2f_wbuf *b, uint32_t cookie, uint16_t chunk, uint16_t nchunks,
                        uint16_t nports, const struct dn2f_swsummary *s)
{
    uint8_t *p = wb_reserve(b, DN2F_STATS_HDR_LEN);
    if (p) {
        dn2f_st32(p, cookie);
        dn2f_st16(p + 4, chunk);
        dn2f_st16(p + 6, nchunks);
        dn2f_st16(p + 8, nports);
        p[10] = s->route_mode;
        dn2f_st32(p + 12, s->routes_gen);
        dn2f_st64(p + 16, s->uptime_ms);
        dn2f_st64(p + 24, s->dgrams_in);
        dn2f_st64(p + 32, s->dgrams_fwd);
        dn2f_st64(p + 40, s->bad);
        dn2f_st64(p + 48, s->inj_drop);
        dn2f_st64(p + 56, s->inj_dup);
        dn2f_st64(p + 64, s->inj_reorder);
        dn2f_st64(p + 72, s->inj_delay);
    }
}

void dn2f_put_portstat(struct dn2f_wbuf *b, const struct dn2f_portstat *ps)
{
    uint8_t *p = wb_reserve(b, DN2F_PORTSTAT_LEN);
    if (p) {
        dn2f_st16(p, ps->lid);
        p[2] = ps->state;
        dn2f_enc_addr(p + 3, p + 4, p + 8, p + 12, &ps->addr);
        dn2f_st64(p + 28, ps->guid);
        dn2f_st64(p + 36, ps->epoch);
        dn2f_st64(p + 44, ps->rx_pkts);
        dn2f_st64(p + 52, ps->rx_bytes);
        dn2f_st64(p + 60, ps->tx_pkts);
        dn2f_st64(p + 68, ps->tx_bytes);
        dn2f_st64(p + 76, ps->drops);
        dn2f_st64(p + 84, ps->retx);
    }
}

/* ------------------------------------------------------------------ decode */
static int dec_ack(const uint8_t *p, size_t avail, struct dn2f_ack *a, size_t *used, bool *more)
{
    uint16_t nbits;
    if (avail < DN2F_ACK_HDR_LEN) {
        return -DN2F_E_TRUNC;
    }
    a->cum = dn2f_ld32(p);
    a->limit = dn2f_ld32(p + 4);
    nbits = dn2f_ld16(p + 8);
    a->lane = p[10];
    if (p[11] > 1) {
        return -DN2F_E_FIELD;
    }
    *more = p[11] == 1;
    a->echo = dn2f_ld32(p + 12);
    if (a->lane >= DN2F_NUM_LANES) {
        return -DN2F_E_FIELD;
    }
    if ((nbits & 31) || nbits > DN2F_SACK_MAX_BITS) {
        return -DN2F_E_FIELD;
    }
    /* The credit limit can never be behind what is acknowledged, nor
     * absurdly far ahead of it. */
    if (dn2f_seqdiff(a->limit, a->cum) < 0 || dn2f_seqdiff(a->limit, a->cum) > 65536) {
        return -DN2F_E_FIELD;
    }
    if (avail - DN2F_ACK_HDR_LEN < (size_t)nbits / 8) {
        return -DN2F_E_TRUNC;
    }
    a->nbits = nbits;
    a->bits = nbits ? p + DN2F_ACK_HDR_LEN : NULL;
    *used = dn2f_ack_len(nbits);
    return 0;
}

/* 1..DN2F_NUM_LANES ACK blocks, each naming a different lane. */
static int dec_acks(const uint8_t *p, size_t avail, struct dn2f_acks *as, size_t *used)
{
    size_t off = 0, u;
    bool more = true;
    unsigned i;
    int rc;

    as->n = 0;
    while (more) {
        if (as->n == DN2F_NUM_LANES) {
            return -DN2F_E_FIELD;
        }
        rc = dec_ack(p + off, avail - off, &as->a[as->n], &u, &more);
        if (rc) {
            return rc;
        }
        for (i = 0; i < as->n; i++) {
            if (as->a[i].lane == as->a[as->n].lane) {
                return -DN2F_E_FIELD;
            }
        }
        as->n++;
        off += u;
    }
    *used = off;
    return 0;
}

bool dn2f_ack_sacked(const struct dn2f_ack *a, unsigned i)
{
    if (i >= a->nbits || !a->bits) {
        return false;
    }
    return (a->bits[i >> 3] >> (i & 7)) & 1;
}

/* Parse one record at p (avail bytes); fills r and *used.  Full validation. */
static int dec_rec(const uint8_t *p, size_t avail, uint16_t dst, struct dn2f_rec *r,
                   size_t *used)
{
    size_t off = DN2F_REC_HDR_LEN, padded;
    unsigned i;

    if (avail < DN2F_REC_HDR_LEN) {
        return -DN2F_E_TRUNC;
    }
    memset(r, 0, sizeof(*r));
    r->seq = dn2f_ld32(p);
    r->len = dn2f_ld16(p + 4);
    r->kind = p[6];
    r->rflags = p[7];
    if (r->len < DN2F_PKT_MIN || r->len > DN2F_PKT_MAX) {
        return -DN2F_E_FIELD;
    }
    if (r->rflags & ~DN2F_RF_ALL) {
        return -DN2F_E_FLAGS;
    }
    r->lane = (uint8_t)(((r->rflags & DN2F_RF_LANE1) ? 1 : 0) +
                        ((r->rflags & DN2F_RF_REQ) ? DN2F_LANE_REQ : 0));
    if ((r->rflags & DN2F_RF_REQ) && r->kind != DN2F_REC_UNICAST) {
        return -DN2F_E_FIELD;   /* requests are unicast only */
    }
    switch (r->kind) {
    case DN2F_REC_UNICAST:
        if (r->rflags & DN2F_RF_REQ) {
            if (avail - off < DN2F_REQ_AFTER_LEN) {
                return -DN2F_E_TRUNC;
            }
            r->after = dn2f_ld32(p + off);
            off += DN2F_REQ_AFTER_LEN;
        }
        break;
    case DN2F_REC_MCAST_ORIGIN:
        if (avail - off < 4) {
            return -DN2F_E_TRUNC;
        }
        if (r->seq != 0) {
            return -DN2F_E_RESERVED;
        }
        r->group = dn2f_ld16(p + off);
        r->nmemb = dn2f_ld16(p + off + 2);
        off += 4;
        if (!dn2f_lid_is_mcast(r->group)) {
            return -DN2F_E_FIELD;
        }
        if (r->nmemb == 0 || r->nmemb > DN2F_MCAST_MAX_MEMBERS) {
            return -DN2F_E_FIELD;
        }
        if (avail - off < (size_t)r->nmemb * DN2F_MEMBER_LEN) {
            return -DN2F_E_TRUNC;
        }
        r->members = p + off;
        for (i = 0; i < r->nmemb; i++) {
            const uint8_t *m = p + off + i * DN2F_MEMBER_LEN;
            unsigned j;
            if (!dn2_lid_assignable(dn2f_ld16(m))) {
                return -DN2F_E_FIELD;
            }
            if (dn2f_ld16(m + 2)) {
                return -DN2F_E_RESERVED;
            }
            for (j = 0; j < i; j++) {       /* each member once */
                if (dn2f_ld16(p + off + j * DN2F_MEMBER_LEN) == dn2f_ld16(m)) {
                    return -DN2F_E_FIELD;
                }
            }
        }
        off += (size_t)r->nmemb * DN2F_MEMBER_LEN;
        break;
    case DN2F_REC_MCAST_COPY:
        if (avail - off < 4) {
            return -DN2F_E_TRUNC;
        }
        r->group = dn2f_ld16(p + off);
        if (dn2f_ld16(p + off + 2)) {
            return -DN2F_E_RESERVED;
        }
        off += 4;
        if (!dn2f_lid_is_mcast(r->group)) {
            return -DN2F_E_FIELD;
        }
        break;
    default:
        return -DN2F_E_FIELD;
    }
    padded = dn2f_pad4(r->len);
    if (avail - off < padded) {
        return -DN2F_E_TRUNC;
    }
    r->pkt = p + off;
    if (!all_zero(p + off + r->len, padded - r->len)) {
        return -DN2F_E_RESERVED;
    }
    /* The packet's DWID names its lane; a request lane carries only the
     * RVL family (and only unicast, above: multicast travels in the data
     * lanes).  An RVL without REQ is accepted in its data lane, where
     * version 2 put it: hand-made datagrams (test and soak peers) still
     * work, ordered with that sender's data; dn2f_ep_send never does it.
     * The DLID must agree with the fabric header. */
    if (dn2f_pkt_dwid(r->pkt) != (r->lane & 1u)) {
        return -DN2F_E_FIELD;
    }
    if ((r->rflags & DN2F_RF_REQ) && !h0_is_rvl(dn2f_ld64(r->pkt))) {
        return -DN2F_E_FIELD;
    }
    if (r->kind == DN2F_REC_UNICAST) {
        if (dn2f_pkt_dlid(r->pkt) != dst) {
            return -DN2F_E_FIELD;
        }
    } else if (dn2f_pkt_dlid(r->pkt) != r->group) {
        return -DN2F_E_FIELD;
    }
    *used = off + padded;
    return 0;
}

static int dec_data(const uint8_t *body, size_t blen, struct dn2f_msg *m)
{
    size_t off = 0, used;
    struct dn2f_rec r;
    int rc;

    m->u.data.acks.n = 0;
    if (blen < DN2F_DATA_TS_LEN) {
        return -DN2F_E_TRUNC;
    }
    m->u.data.ts = dn2f_ld32(body);
    off = DN2F_DATA_TS_LEN;
    if (m->h.flags & DN2F_F_ACK) {
        rc = dec_acks(body + off, blen - off, &m->u.data.acks, &used);
        if (rc) {
            return rc;
        }
        off += used;
    }
    m->u.data.recs = body + off;
    m->u.data.recs_len = blen - off;
    m->u.data.nrecs = 0;
    m->u.data.kinds = 0;
    while (off < blen) {
        rc = dec_rec(body + off, blen - off, m->h.dst_lid, &r, &used);
        if (rc) {
            return rc;
        }
        m->u.data.nrecs++;
        m->u.data.kinds |= (uint8_t)(1u << r.kind);
        off += used;
    }
    if (m->u.data.nrecs == 0) {
        return -DN2F_E_TRUNC;
    }
    /* A datagram is either all MCAST_ORIGIN (to a group, via the switch),
     * or unicast / MCAST_COPY records to one board. */
    if (m->u.data.kinds & (1u << DN2F_REC_MCAST_ORIGIN)) {
        if (m->u.data.kinds != (1u << DN2F_REC_MCAST_ORIGIN) ||
            !dn2f_lid_is_mcast(m->h.dst_lid) || m->u.data.acks.n) {
            return -DN2F_E_FIELD;
        }
    } else if (!dn2_lid_assignable(m->h.dst_lid)) {
        return -DN2F_E_FIELD;
    }
    return 0;
}

static int dec_routes(const uint8_t *body, size_t blen, struct dn2f_msg *m)
{
    size_t off = 16;
    unsigned i, j;

    if (blen < 16) {
        return -DN2F_E_TRUNC;
    }
    m->u.routes.gen = dn2f_ld32(body);
    m->u.routes.chunk = dn2f_ld16(body + 4);
    m->u.routes.nchunks = dn2f_ld16(body + 6);
    m->u.routes.nroutes = dn2f_ld16(body + 8);
    m->u.routes.ngroups = dn2f_ld16(body + 10);
    if (dn2f_ld32(body + 12)) {
        return -DN2F_E_RESERVED;
    }
    if (m->u.routes.nchunks == 0 || m->u.routes.nchunks > DN2F_ROUTES_MAX_CHUNKS ||
        m->u.routes.chunk >= m->u.routes.nchunks) {
        return -DN2F_E_FIELD;
    }
    if (m->u.routes.nroutes > DN2F_NUM_CLID || m->u.routes.ngroups > DN2F_NUM_GROUPS) {
        return -DN2F_E_FIELD;
    }
    if ((blen - off) / DN2F_ROUTE_LEN < m->u.routes.nroutes) {
        return -DN2F_E_TRUNC;
    }
    for (i = 0; i < m->u.routes.nroutes; i++) {
        const uint8_t *p = body + off;
        struct dn2f_addr a;
        int rc;
        if (!dn2_lid_assignable(dn2f_ld16(p))) {
            return -DN2F_E_FIELD;
        }
        if (p[2] & ~DN2F_RT_DIRECT) {
            return -DN2F_E_FLAGS;
        }
        if (dn2f_ld16(p + 6)) {
            return -DN2F_E_RESERVED;
        }
        rc = dn2f_dec_addr(&a, p[3], p + 4, p + 8, p + 12);
        if (rc) {
            return rc;
        }
        off += DN2F_ROUTE_LEN;
    }
    for (i = 0; i < m->u.routes.ngroups; i++) {
        uint16_t g, n;
        if (blen - off < 4) {
            return -DN2F_E_TRUNC;
        }
        g = dn2f_ld16(body + off);
        n = dn2f_ld16(body + off + 2);
        if (!dn2f_lid_is_mcast(g) || n > DN2F_MCAST_MAX_MEMBERS) {
            return -DN2F_E_FIELD;
        }
        if (blen - off < dn2f_group_len(n)) {
            return -DN2F_E_TRUNC;
        }
        for (j = 0; j < n; j++) {
            if (!dn2_lid_assignable(dn2f_ld16(body + off + 4 + 2 * j))) {
                return -DN2F_E_FIELD;
            }
        }
        if (!all_zero(body + off + 4 + 2 * (size_t)n, dn2f_group_len(n) - 4 - 2 * (size_t)n)) {
            return -DN2F_E_RESERVED;
        }
        off += dn2f_group_len(n);
    }
    if (off != blen) {
        return -DN2F_E_TRUNC;
    }
    m->u.routes.body = body + 16;
    m->u.routes.body_len = blen - 16;
    return 0;
}

static int dec_stats(const uint8_t *body, size_t blen, struct dn2f_msg *m)
{
    unsigned i;
    struct dn2f_swsummary *s = &m->u.stats.sum;

    if (blen < DN2F_STATS_HDR_LEN) {
        return -DN2F_E_TRUNC;
    }
    m->u.stats.cookie = dn2f_ld32(body);
    m->u.stats.chunk = dn2f_ld16(body + 4);
    m->u.stats.nchunks = dn2f_ld16(body + 6);
    m->u.stats.nports = dn2f_ld16(body + 8);
    s->route_mode = body[10];
    if (body[11]) {
        return -DN2F_E_RESERVED;
    }
    s->routes_gen = dn2f_ld32(body + 12);
    s->uptime_ms = dn2f_ld64(body + 16);
    s->dgrams_in = dn2f_ld64(body + 24);
    s->dgrams_fwd = dn2f_ld64(body + 32);
    s->bad = dn2f_ld64(body + 40);
    s->inj_drop = dn2f_ld64(body + 48);
    s->inj_dup = dn2f_ld64(body + 56);
    s->inj_reorder = dn2f_ld64(body + 64);
    s->inj_delay = dn2f_ld64(body + 72);
    if (m->u.stats.nchunks == 0 || m->u.stats.nchunks > DN2F_ROUTES_MAX_CHUNKS ||
        m->u.stats.chunk >= m->u.stats.nchunks) {
        return -DN2F_E_FIELD;
    }
    if (s->route_mode != DN2F_ROUTE_DIRECT && s->route_mode != DN2F_ROUTE_SWITCH) {
        return -DN2F_E_FIELD;
    }
    if ((blen - DN2F_STATS_HDR_LEN) != (size_t)m->u.stats.nports * DN2F_PORTSTAT_LEN) {
        return -DN2F_E_TRUNC;
    }
    for (i = 0; i < m->u.stats.nports; i++) {
        const uint8_t *p = body + DN2F_STATS_HDR_LEN + i * DN2F_PORTSTAT_LEN;
        struct dn2f_addr a;
        int rc;
        if (!dn2_lid_assignable(dn2f_ld16(p)) || p[2] < 1 || p[2] > 2) {
            return -DN2F_E_FIELD;
        }
        if (dn2f_ld16(p + 6)) {
            return -DN2F_E_RESERVED;
        }
        rc = dn2f_dec_addr(&a, p[3], p + 4, p + 8, p + 12);
        if (rc) {
            return rc;
        }
    }
    m->u.stats.ports = body + DN2F_STATS_HDR_LEN;
    return 0;
}

int dn2f_decode(const void *buf, size_t len, struct dn2f_msg *m)
{
    const uint8_t *p = buf;
    const uint8_t *body;
    size_t blen;
    unsigned allowed = 0;

    memset(m, 0, sizeof(*m));
    if (!buf || len < DN2F_HDR_LEN) {
        return -DN2F_E_SHORT;
    }
    if (dn2f_ld32(p) != DN2F_MAGIC) {
        return -DN2F_E_MAGIC;
    }
    m->h.version = p[4];
    m->h.type = p[5];
    m->h.flags = dn2f_ld16(p + 6);
    m->h.src_lid = dn2f_ld16(p + 8);
    m->h.dst_lid = dn2f_ld16(p + 10);
    m->h.length = dn2f_ld32(p + 12);
    m->h.src_epoch = dn2f_ld64(p + 16);
    m->h.dst_epoch = dn2f_ld64(p + 24);
    m->h.src_sess = dn2f_ld32(p + 32);
    m->h.dst_sess = dn2f_ld32(p + 36);
    if (m->h.version != DN2F_VERSION) {
        return -DN2F_E_VERSION;
    }
    if (m->h.type == 0 || m->h.type >= DN2F_T_MAX) {
        return -DN2F_E_TYPE;
    }
    if (len > DN2F_DGRAM_MAX || m->h.length != len) {
        return m->h.length > len ? -DN2F_E_SHORT : -DN2F_E_LENGTH;
    }
    if (m->h.type == DN2F_T_DATA) {
        allowed = DN2F_F_ACK | DN2F_F_ACKREQ;
    } else if (m->h.type == DN2F_T_ACK) {
        allowed = DN2F_F_ACKREQ;
    }
    allowed |= DN2F_F_MAC;
    if (m->h.flags & ~allowed) {
        return -DN2F_E_FLAGS;
    }
    if (m->h.flags & DN2F_F_MAC) {
        if (len < DN2F_HDR_LEN + DN2F_MAC_LEN) {
            return -DN2F_E_SHORT;
        }
        len -= DN2F_MAC_LEN;            /* the body ends before the trailer */
        m->mac = p + len;
    }
    /* Sessions: only between boards (DATA to a board, ACK), where the
     * sender's is never 0. */
    if (m->h.type == DN2F_T_ACK ||
        (m->h.type == DN2F_T_DATA && !dn2f_lid_is_mcast(m->h.dst_lid))) {
        if (m->h.src_sess == 0) {
            return -DN2F_E_FIELD;
        }
    } else if (m->h.src_sess || m->h.dst_sess) {
        return -DN2F_E_RESERVED;
    }
    body = p + DN2F_HDR_LEN;
    blen = len - DN2F_HDR_LEN;

    switch (m->h.type) {
    case DN2F_T_HELLO:
        if (blen != DN2F_HELLO_LEN) {
            return -DN2F_E_LENGTH;
        }
        m->u.hello.guid = dn2f_ld64(body);
        m->u.hello.lid_hint = dn2f_ld16(body + 8);
        if (!all_zero(body + 10, DN2F_HELLO_LEN - 10)) {
            return -DN2F_E_RESERVED;
        }
        if (m->u.hello.guid == 0 || m->h.src_epoch == 0 || m->h.dst_lid != 0 ||
            (m->u.hello.lid_hint && !dn2_lid_assignable(m->u.hello.lid_hint))) {
            return -DN2F_E_FIELD;
        }
        return 0;
    case DN2F_T_ASSIGN:
        if (blen != DN2F_ASSIGN_LEN) {
            return -DN2F_E_LENGTH;
        }
        m->u.assign.guid = dn2f_ld64(body);
        m->u.assign.lid = dn2f_ld16(body + 8);
        m->u.assign.link_state = body[10];
        m->u.assign.route_mode = body[11];
        m->u.assign.ticket.time = dn2f_ld32(body + 12);
        memcpy(m->u.assign.ticket.mac, body + 16, DN2F_TICKET_LEN);
        memcpy(m->u.assign.token, body + 32, DN2F_TOKEN_LEN);
        if (m->u.assign.link_state > 3 ||
            (m->u.assign.route_mode != DN2F_ROUTE_DIRECT &&
             m->u.assign.route_mode != DN2F_ROUTE_SWITCH) ||
            !dn2_lid_assignable(m->u.assign.lid) || m->h.dst_lid != m->u.assign.lid) {
            return -DN2F_E_FIELD;
        }
        return 0;
    case DN2F_T_ROUTES:
        return dec_routes(body, blen, m);
    case DN2F_T_DATA:
        if (!dn2_lid_assignable(m->h.src_lid)) {
            return -DN2F_E_FIELD;
        }
        return dec_data(body, blen, m);
    case DN2F_T_ACK: {
        size_t used;
        int rc;
        if (!dn2_lid_assignable(m->h.src_lid) || !dn2_lid_assignable(m->h.dst_lid)) {
            return -DN2F_E_FIELD;
        }
        rc = dec_acks(body, blen, &m->u.acks, &used);
        if (rc) {
            return rc;
        }
        return used == blen ? 0 : -DN2F_E_LENGTH;
    }
    case DN2F_T_KEEPALIVE:
        if (blen != DN2F_KEEPALIVE_LEN) {
            return -DN2F_E_LENGTH;
        }
        m->u.keepalive.gen = dn2f_ld32(body);
        m->u.keepalive.ticket.time = dn2f_ld32(body + 4);
        m->u.keepalive.guid = dn2f_ld64(body + 8);
        memcpy(m->u.keepalive.ticket.mac, body + 16, DN2F_TICKET_LEN);
        return 0;
    case DN2F_T_BYE:
        if (blen != 8) {
            return -DN2F_E_LENGTH;
        }
        if (dn2f_ld32(body + 4)) {
            return -DN2F_E_RESERVED;
        }
        m->u.bye.reason = dn2f_ld32(body);
        if (m->u.bye.reason >= DN2F_BYE_MAX) {
            return -DN2F_E_FIELD;
        }
        return 0;
    case DN2F_T_STATS_REQ:
        /* cookie, chunk, u16 0, then zero padding of any length */
        if (blen < 8) {
            return -DN2F_E_LENGTH;
        }
        m->u.stats_req.cookie = dn2f_ld32(body);
        m->u.stats_req.chunk = dn2f_ld16(body + 4);
        if (!all_zero(body + 6, blen - 6)) {
            return -DN2F_E_RESERVED;
        }
        return 0;
    case DN2F_T_STATS_RESP:
        return dec_stats(body, blen, m);
    case DN2F_T_MCAST_JOIN:
    case DN2F_T_MCAST_LEAVE:
        if (blen != 8) {
            return -DN2F_E_LENGTH;
        }
        m->u.mcast.group = dn2f_ld16(body);
        if (dn2f_ld16(body + 2) || dn2f_ld32(body + 4)) {
            return -DN2F_E_RESERVED;
        }
        if (!dn2f_lid_is_mcast(m->u.mcast.group) || !dn2_lid_assignable(m->h.src_lid)) {
            return -DN2F_E_FIELD;
        }
        return 0;
    default:
        return -DN2F_E_TYPE;
    }
}

/* ------------------------------------------------------------- iterators */
void dn2f_data_iter(const struct dn2f_msg *m, struct dn2f_iter *it)
{
    it->p = m->u.data.recs;
    it->end = m->u.data.recs + m->u.data.recs_len;
    it->left = m->u.data.nrecs;
    it->left2 = m->h.dst_lid;
}

bool dn2f_data_next(struct dn2f_iter *it, struct dn2f_rec *r)
{
    size_t used;
    if (!it->left || it->p >= it->end) {
        return false;
    }
    if (dec_rec(it->p, (size_t)(it->end - it->p), (uint16_t)it->left2, r, &used)) {
        it->left = 0;           /* cannot happen on a validated datagram */
        return false;
    }
    it->p += used;
    it->left--;
    return true;
}

void dn2f_rec_member_full(const struct dn2f_rec *r, unsigned i, struct dn2f_member *mb)
{
    const uint8_t *m = r->members + (size_t)i * DN2F_MEMBER_LEN;
    mb->lid = dn2f_ld16(m);
    mb->seq = dn2f_ld32(m + 4);
    mb->epoch = dn2f_ld64(m + 8);
    mb->src_sess = dn2f_ld32(m + 16);
    mb->dst_sess = dn2f_ld32(m + 20);
}

void dn2f_rec_member(const struct dn2f_rec *r, unsigned i,
                     uint16_t *lid, uint32_t *seq, uint64_t *epoch)
{
    const uint8_t *m = r->members + (size_t)i * DN2F_MEMBER_LEN;
    *lid = dn2f_ld16(m);
    *seq = dn2f_ld32(m + 4);
    *epoch = dn2f_ld64(m + 8);
}

void dn2f_routes_iter(const struct dn2f_msg *m, struct dn2f_iter *it)
{
    it->p = m->u.routes.body;
    it->end = m->u.routes.body + m->u.routes.body_len;
    it->left = m->u.routes.nroutes;
    it->left2 = m->u.routes.ngroups;
}

bool dn2f_routes_next_route(struct dn2f_iter *it, struct dn2f_route *r)
{
    const uint8_t *p = it->p;
    if (!it->left || (size_t)(it->end - p) < DN2F_ROUTE_LEN) {
        return false;
    }
    r->lid = dn2f_ld16(p);
    r->flags = p[2];
    if (dn2f_dec_addr(&r->addr, p[3], p + 4, p + 8, p + 12)) {
        memset(&r->addr, 0, sizeof(r->addr));
    }
    r->epoch = dn2f_ld64(p + 28);
    memcpy(r->token, p + 36, DN2F_TOKEN_LEN);
    it->p += DN2F_ROUTE_LEN;
    it->left--;
    return true;
}

bool dn2f_routes_next_group(struct dn2f_iter *it, uint16_t *group,
                            uint16_t *n, const uint8_t **members)
{
    size_t gl;
    if (it->left) {
        /* skip remaining routes first */
        size_t skip = (size_t)it->left * DN2F_ROUTE_LEN;
        if ((size_t)(it->end - it->p) < skip) {
            return false;
        }
        it->p += skip;
        it->left = 0;
    }
    if (!it->left2 || (size_t)(it->end - it->p) < 4) {
        return false;
    }
    *group = dn2f_ld16(it->p);
    *n = dn2f_ld16(it->p + 2);
    gl = dn2f_group_len(*n);
    if ((size_t)(it->end - it->p) < gl) {
        return false;
    }
    *members = it->p + 4;
    it->p += gl;
    it->left2--;
    return true;
}

void dn2f_stats_iter(const struct dn2f_msg *m, struct dn2f_iter *it)
{
    it->p = m->u.stats.ports;
    it->end = m->u.stats.ports + (size_t)m->u.stats.nports * DN2F_PORTSTAT_LEN;
    it->left = m->u.stats.nports;
    it->left2 = 0;
}

bool dn2f_stats_next(struct dn2f_iter *it, struct dn2f_portstat *ps)
{
    const uint8_t *p = it->p;
    if (!it->left || (size_t)(it->end - p) < DN2F_PORTSTAT_LEN) {
        return false;
    }
    ps->lid = dn2f_ld16(p);
    ps->state = p[2];
    if (dn2f_dec_addr(&ps->addr, p[3], p + 4, p + 8, p + 12)) {
        memset(&ps->addr, 0, sizeof(ps->addr));
    }
    ps->guid = dn2f_ld64(p + 28);
    ps->epoch = dn2f_ld64(p + 36);
    ps->rx_pkts = dn2f_ld64(p + 44);
    ps->rx_bytes = dn2f_ld64(p + 52);
    ps->tx_pkts = dn2f_ld64(p + 60);
    ps->tx_bytes = dn2f_ld64(p + 68);
    ps->drops = dn2f_ld64(p + 76);
    ps->retx = dn2f_ld64(p + 84);
    it->p += DN2F_PORTSTAT_LEN;
    it->left--;
    return true;
}

/* ------------------------------------------------- SHA-256 / HMAC-SHA256 */
/* Here rather than in a file of its own: the QEMU device build compiles
 * dn2fab.c and dn2fab-ep.c only (hw/dimmnet2/meson.build). */
static const uint32_t K256[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4,
    0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe,
    0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f,
    0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7,
    0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc,
    0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
    0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116,
    0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
    0xc67178f2,
};

static inline uint32_t ror(uint32_t x, unsigned n)
{
    return (x >> n) | (x << (32 - n));
}

static void compress(uint32_t h[8], const uint8_t *p)
{
    uint32_t w[64], a, b, c, d, e, f, g, hh, t1, t2;
    unsigned i;

    for (i = 0; i < 16; i++) {
        w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 |
               (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
    }
    for (i = 16; i < 64; i++) {
        uint32_t s0 = ror(w[i - 15], 7) ^ ror(w[i - 15], 18) ^ (w[i - 15] >> 3);
        uint32_t s1 = ror(w[i - 2], 17) ^ ror(w[i - 2], 19) ^ (w[i - 2] >> 10);
        w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    a = h[0]; b = h[1]; c = h[2]; d = h[3]; e = h[4]; f = h[5]; g = h[6]; hh = h[7];
    for (i = 0; i < 64; i++) {
        t1 = hh + (ror(e, 6) ^ ror(e, 11) ^ ror(e, 25)) + ((e & f) ^ (~e & g)) + K256[i] + w[i];
        t2 = (ror(a, 2) ^ ror(a, 13) ^ ror(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
        hh = g; g = f; f = e; e = d + t1; d = c; c = b; b = a; a = t1 + t2;
    }
    h[0] += a; h[1] += b; h[2] += c; h[3] += d; h[4] += e; h[5] += f; h[6] += g; h[7] += hh;
}

void dn2f_sha256_init(struct dn2f_sha256 *c)
{
    static const uint32_t iv[8] = {
        0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
        0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
    };
    memcpy(c->h, iv, sizeof(iv));
    c->bytes = 0;
    c->n = 0;
}

void dn2f_sha256_update(struct dn2f_sha256 *c, const void *data, size_t len)
{
    const uint8_t *p = data;
    c->bytes += len;
    if (c->n) {
        size_t k = 64 - c->n < len ? 64 - c->n : len;
        memcpy(c->buf + c->n, p, k);
        c->n += k;
        p += k;
        len -= k;
        if (c->n < 64) {
            return;
        }
        compress(c->h, c->buf);
        c->n = 0;
    }
    while (len >= 64) {
        compress(c->h, p);
        p += 64;
        len -= 64;
    }
    if (len) {
        memcpy(c->buf, p, len);
        c->n = len;
    }
}

void dn2f_sha256_final(struct dn2f_sha256 *c, uint8_t out[DN2F_SHA256_LEN])
{
    uint64_t bits = c->bytes * 8;
    unsigned i;

    c->buf[c->n++] = 0x80;
    if (c->n > 56) {
        memset(c->buf + c->n, 0, 64 - c->n);
        compress(c->h, c->buf);
        c->n = 0;
    }
    memset(c->buf + c->n, 0, 56 - c->n);
    for (i = 0; i < 8; i++) {
        c->buf[56 + i] = (uint8_t)(bits >> (56 - 8 * i));
    }
    compress(c->h, c->buf);
    for (i = 0; i < 8; i++) {
        out[4 * i] = (uint8_t)(c->h[i] >> 24);
        out[4 * i + 1] = (uint8_t)(c->h[i] >> 16);
        out[4 * i + 2] = (uint8_t)(c->h[i] >> 8);
        out[4 * i + 3] = (uint8_t)c->h[i];
    }
}

void dn2f_sha256(const void *data, size_t len, uint8_t out[DN2F_SHA256_LEN])
{
    struct dn2f_sha256 c;
    dn2f_sha256_init(&c);
    dn2f_sha256_update(&c, data, len);
    dn2f_sha256_final(&c, out);
}

void dn2f_hmac_setkey(struct dn2f_hmac_key *k, const void *key, size_t len)
{
    uint8_t kb[64], pad[64];
    unsigned i;

    memset(kb, 0, sizeof(kb));
    if (len > 64) {
        dn2f_sha256(key, len, kb);
    } else if (len) {
        memcpy(kb, key, len);
    }
    for (i = 0; i < 64; i++) {
        pad[i] = kb[i] ^ 0x36;
    }
    dn2f_sha256_init(&k->inner);
    dn2f_sha256_update(&k->inner, pad, 64);
    for (i = 0; i < 64; i++) {
        pad[i] = kb[i] ^ 0x5c;
    }
    dn2f_sha256_init(&k->outer);
    dn2f_sha256_update(&k->outer, pad, 64);
    memset(kb, 0, sizeof(kb));
    memset(pad, 0, sizeof(pad));
}

void dn2f_hmac_start(struct dn2f_hmac *h, const struct dn2f_hmac_key *k)
{
    h->inner = k->inner;
    h->outer = k->outer;
}

void dn2f_hmac_update(struct dn2f_hmac *h, const void *data, size_t len)
{
    dn2f_sha256_update(&h->inner, data, len);
}

void dn2f_hmac_finish(struct dn2f_hmac *h, uint8_t out[DN2F_SHA256_LEN])
{
    uint8_t ih[DN2F_SHA256_LEN];
    dn2f_sha256_final(&h->inner, ih);
    dn2f_sha256_update(&h->outer, ih, sizeof(ih));
    dn2f_sha256_final(&h->outer, out);
}

void dn2f_hmac_sha256(const void *key, size_t klen, const void *msg, size_t mlen,
                      uint8_t out[DN2F_SHA256_LEN])
{
    struct dn2f_hmac_key k;
    struct dn2f_hmac h;
    dn2f_hmac_setkey(&k, key, klen);
    dn2f_hmac_start(&h, &k);
    dn2f_hmac_update(&h, msg, mlen);
    dn2f_hmac_finish(&h, out);
}

bool dn2f_ct_equal(const void *a, const void *b, size_t n)
{
    const volatile uint8_t *x = a, *y = b;
    uint8_t d = 0;
    size_t i;
    for (i = 0; i < n; i++) {
        d |= (uint8_t)(x[i] ^ y[i]);
    }
    return d == 0;
}

void dn2f_secret_keys(const void *secret, size_t len, struct dn2f_hmac_key *kctl,
                      uint8_t kseal[DN2F_SHA256_LEN])
{
    static const char lc[] = "dn2f-v2 control", ls[] = "dn2f-v2 seal";
    uint8_t k[DN2F_SHA256_LEN];
    dn2f_hmac_sha256(secret, len, lc, sizeof(lc) - 1, k);
    dn2f_hmac_setkey(kctl, k, sizeof(k));
    dn2f_hmac_sha256(secret, len, ls, sizeof(ls) - 1, kseal);
    memset(k, 0, sizeof(k));
}

void dn2f_seal(const uint8_t kseal[DN2F_SHA256_LEN], char kind, uint64_t e1, uint64_t e2,
               uint16_t lid, uint8_t tok[16])
{
    uint8_t msg[1 + 8 + 8 + 2], pad[DN2F_SHA256_LEN];
    unsigned i;
    msg[0] = (uint8_t)kind;
    dn2f_st64(msg + 1, e1);
    dn2f_st64(msg + 9, e2);
    dn2f_st16(msg + 17, lid);
    dn2f_hmac_sha256(kseal, DN2F_SHA256_LEN, msg, sizeof(msg), pad);
    for (i = 0; i < 16; i++) {
        tok[i] ^= pad[i];
    }
}

void dn2f_pair_key(struct dn2f_hmac_key *k, const uint8_t from_tok[16], const uint8_t to_tok[16])
{
    uint8_t key[32];
    memcpy(key, from_tok, 16);
    memcpy(key + 16, to_tok, 16);
    dn2f_hmac_setkey(k, key, sizeof(key));
}
