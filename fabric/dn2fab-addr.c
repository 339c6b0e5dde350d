/* SPDX-License-Identifier: MIT */
/*
 * dn2fab: socket addresses (parse, compare, print), their wire form in
 * route and port statistics entries (dn2f_enc_addr / dn2f_dec_addr), and
 * the UDP socket helper.  See dn2fab.h and docs/fabric.md.
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
#include <unistd.h>
#include <arpa/inet.h>
#include <sys/socket.h>

#include "dn2fab-int.h"

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

bool dn2f_addr_loopback(const struct dn2f_addr *a)
{
    struct dn2f_addr x = *a;
    if (dn2f_addr_to_family(&x, AF_INET)) {
        return (ntohl(x.u.in.sin_addr.s_addr) >> 24) == 127;
    }
    return x.len >= sizeof(struct sockaddr_in6) && x.u.sa.sa_family == AF_INET6 &&
           IN6_IS_ADDR_LOOPBACK(&x.u.in6.sin6_addr);
}

/* Same host address (any port), IPv4-mapped IPv6 = IPv4. */
bool dn2f_addr_same_host(const struct dn2f_addr *a, const struct dn2f_addr *b)
{
    struct dn2f_addr x = *a, y = *b;
    if (dn2f_addr_to_family(&x, AF_INET) && dn2f_addr_to_family(&y, AF_INET)) {
        return x.u.in.sin_addr.s_addr == y.u.in.sin_addr.s_addr;
    }
    x = *a;
    y = *b;
    return x.len >= sizeof(struct sockaddr_in6) && y.len >= sizeof(struct sockaddr_in6) &&
           x.u.sa.sa_family == AF_INET6 && y.u.sa.sa_family == AF_INET6 &&
           memcmp(&x.u.in6.sin6_addr, &y.u.in6.sin6_addr, 16) == 0;
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

int dn2f_dec_addr(struct dn2f_addr *a, uint8_t fam, const uint8_t *port2,
                  const uint8_t *scope4, const uint8_t *addr16)
{
    memset(a, 0, sizeof(*a));
    switch (fam) {
    case 0:
        if (!dn2f_all_zero(port2, 2) || !dn2f_all_zero(scope4, 4) || !dn2f_all_zero(addr16, 16)) {
            return -DN2F_E_RESERVED;
        }
        return 0;
    case 4:
        if (!dn2f_all_zero(scope4, 4) || !dn2f_all_zero(addr16 + 4, 12)) {
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

