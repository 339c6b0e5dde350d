/* SPDX-License-Identifier: MIT */
/*
 * SHA-256 (FIPS 180-4) and HMAC-SHA256 (RFC 2104) in plain C, for the
 * fabric's join tickets and its optional cluster secret (docs/security.md).
 * Tested against the FIPS / RFC 4231 vectors in tests/unit/test-fabric-wire.c.
 * Implemented in dn2fab-hmac.c.
 */
#ifndef DN2FAB_HMAC_H
#define DN2FAB_HMAC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define DN2F_SHA256_LEN 32

struct dn2f_sha256 {
    uint32_t h[8];
    uint64_t bytes;
    uint8_t buf[64];
    size_t n;
};

void dn2f_sha256_init(struct dn2f_sha256 *c);
void dn2f_sha256_update(struct dn2f_sha256 *c, const void *data, size_t len);
void dn2f_sha256_final(struct dn2f_sha256 *c, uint8_t out[DN2F_SHA256_LEN]);
void dn2f_sha256(const void *data, size_t len, uint8_t out[DN2F_SHA256_LEN]);

/* An HMAC key with its inner and outer pads already hashed (two
 * compressions saved per message). */
struct dn2f_hmac_key {
    struct dn2f_sha256 inner, outer;
};
void dn2f_hmac_setkey(struct dn2f_hmac_key *k, const void *key, size_t len);

/* Incremental: start from a key, update, finish. */
struct dn2f_hmac {
    struct dn2f_sha256 inner, outer;
};
void dn2f_hmac_start(struct dn2f_hmac *h, const struct dn2f_hmac_key *k);
void dn2f_hmac_update(struct dn2f_hmac *h, const void *data, size_t len);
void dn2f_hmac_finish(struct dn2f_hmac *h, uint8_t out[DN2F_SHA256_LEN]);

/* One shot. */
void dn2f_hmac_sha256(const void *key, size_t klen, const void *msg, size_t mlen,
                      uint8_t out[DN2F_SHA256_LEN]);

/* The fabric's keys from a cluster secret (docs/fabric.md "Cluster secret"):
 * kctl authenticates control datagrams, kseal seals per-join tokens. */
void dn2f_secret_keys(const void *secret, size_t len, struct dn2f_hmac_key *kctl,
                      uint8_t kseal[DN2F_SHA256_LEN]);
/* tok ^= HMAC(kseal, kind || e1 || e2 || lid)[0:16] (seals and unseals). */
void dn2f_seal(const uint8_t kseal[DN2F_SHA256_LEN], char kind, uint64_t e1, uint64_t e2,
               uint16_t lid, uint8_t tok[16]);
/* The DATA/ACK key of a pair: HMAC key = sender's token || receiver's. */
void dn2f_pair_key(struct dn2f_hmac_key *k, const uint8_t from_tok[16], const uint8_t to_tok[16]);

/* Constant-time comparison. */
bool dn2f_ct_equal(const void *a, const void *b, size_t n);

#ifdef __cplusplus
}
#endif
#endif
