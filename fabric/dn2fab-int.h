/* SPDX-License-Identifier: MIT */
/*
 * dn2fab internals shared by the library's .c files (not installed).
 *
 * The library's files, top to bottom; each calls only files below it (the
 * endpoint reports to its embedder through struct dn2f_ep_ops, the switch
 * core through struct dn2f_sw_ops).  The order is declared again in
 * tests/layering/layers.txt and checked from the object files (meson test
 * 'layering'); dn2fab-ep.h and dn2fab-sw-int.h say more of each part.
 *
 *   dn2fab-ep.c        endpoint API: lifecycle, configuration, accessors,
 *                      dn2f_ep_input's dispatch
 *   dn2fab-ep-timer.c  endpoint: dn2f_ep_tick, dn2f_ep_next_deadline
 *   dn2fab-ep-vt.c     endpoint: virtual time, reports to the switch and
 *                      its grants
 *   dn2fab-ep-link.c   endpoint: join, routing table, refusals, multicast
 *                      membership
 *   dn2fab-ep-rx.c     endpoint: DATA / ACK in, in-order delivery, credits,
 *                      ACK processing, dn2f_ep_resume
 *   dn2fab-ep-tx.c     endpoint: control datagrams, ACKs, data batching,
 *                      multicast origins, flush, dn2f_ep_send
 *   dn2fab-ep-rto.c    endpoint: a lane's RTO and its deadlines
 *   dn2fab-ep-peer.c   endpoint: the peer store
 *   dn2fab-sw.c        switch core: joins, routes, statistics, input
 *                      dispatch, timers, lifecycle
 *   dn2fab-sw-vt.c     switch core: virtual time, the grants
 *   dn2fab-sw-fwd.c    switch core: data forwarding, multicast
 *                      replication, fault injection
 *   dn2fab-sw-out.c    switch core: port lookup, what the switch sends
 *   dn2fab-batch.c     sendmmsg() batches of the switch's output
 *   dn2fab-wire-dec.c  the validating decoder, iterators
 *   dn2fab-wire.c      names, packet helpers, encoders
 *   dn2fab-hmac.c      SHA-256, HMAC, cluster-secret keys
 *   dn2fab-addr.c      socket addresses, their wire form, the UDP socket
 *   dn2fab-rng.c       the PRNG, fresh randomness
 *
 * The switch daemon (daemon/dn2-switch.c) is a program on top of the
 * library, not one of its layers.
 */
#ifndef DN2FAB_INT_H
#define DN2FAB_INT_H

#include <errno.h>
#include <string.h>
#include "dn2fab.h"

static inline uint16_t dn2f_ld16(const uint8_t *p)
{
    return (uint16_t)(p[0] | (p[1] << 8));
}
static inline uint32_t dn2f_ld32(const uint8_t *p)
{
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) |
           ((uint32_t)p[3] << 24);
}
static inline uint64_t dn2f_ld64(const uint8_t *p)
{
    return (uint64_t)dn2f_ld32(p) | ((uint64_t)dn2f_ld32(p + 4) << 32);
}
static inline void dn2f_st16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}
static inline void dn2f_st32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
}
static inline void dn2f_st64(uint8_t *p, uint64_t v)
{
    dn2f_st32(p, (uint32_t)v);
    dn2f_st32(p + 4, (uint32_t)(v >> 32));
}

/* Serial-number arithmetic on 32-bit sequence numbers. */
static inline int32_t dn2f_seqdiff(uint32_t a, uint32_t b)
{
    return (int32_t)(a - b);
}

static inline bool dn2f_all_zero(const uint8_t *p, size_t n)
{
    while (n--) {
        if (*p++) {
            return false;
        }
    }
    return true;
}

static inline size_t dn2f_pad4(size_t n)
{
    return (n + 3) & ~(size_t)3;
}

/* A small unordered set of LIDs, set[0..*n), at most max: the groups a
 * board joins, the members of a group at the switch.
 * add: 1 = added, 0 = already there, -ENOSPC = full.
 * del: true = removed (the last one takes its place). */
static inline int dn2f_lidset_add(uint16_t *set, unsigned *n, unsigned max, uint16_t lid)
{
    unsigned i;
    for (i = 0; i < *n; i++) {
        if (set[i] == lid) {
            return 0;
        }
    }
    if (*n >= max) {
        return -ENOSPC;
    }
    set[(*n)++] = lid;
    return 1;
}

static inline bool dn2f_lidset_del(uint16_t *set, unsigned *n, uint16_t lid)
{
    unsigned i;
    for (i = 0; i < *n; i++) {
        if (set[i] == lid) {
            set[i] = set[--*n];
            return true;
        }
    }
    return false;
}

/* Address <-> wire (family byte 0/4/6, port, scope, 16 address bytes). */
void dn2f_enc_addr(uint8_t *fam, uint8_t *port2, uint8_t *scope4, uint8_t *addr16,
                   const struct dn2f_addr *a);
int dn2f_dec_addr(struct dn2f_addr *a, uint8_t fam, const uint8_t *port2,
                  const uint8_t *scope4, const uint8_t *addr16);
/* Converts a to the given socket family when possible (v4 <-> v4-mapped v6). */
bool dn2f_addr_to_family(struct dn2f_addr *a, int family);

#endif
