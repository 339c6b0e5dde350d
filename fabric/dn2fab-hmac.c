/* SPDX-License-Identifier: MIT */
/*
 * dn2fab: SHA-256 (FIPS 180-4), HMAC-SHA256 (RFC 2104) and the fabric's
 * keys from a cluster secret (docs/security.md).  See dn2fab-hmac.h.
 */
#include <string.h>

#include "dn2fab-int.h"
#include "dn2fab-hmac.h"

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
