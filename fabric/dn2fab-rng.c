/* SPDX-License-Identifier: MIT */
/*
 * dn2fab: the small deterministic PRNG (splitmix64-seeded xoshiro256**)
 * shared by the switch's fault injection and the tests, and fresh
 * randomness for epochs.  See dn2fab.h.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1
#endif
#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include "dn2fab-int.h"

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

