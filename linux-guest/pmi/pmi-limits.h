/*
 * The limits of PMI over the cluster's job server, in one place: the PMI
 * library (pmi-dn2.c) includes this file and the server
 * (scripts/pmi-server.py) reads its #defines at start, so both sides refuse
 * the same things.  docs/mpi.md.
 */
#ifndef DN2_PMI_LIMITS_H
#define DN2_PMI_LIMITS_H

/* Bytes of a key and of a value, the terminating NUL included (what
 * PMI_KVS_Get_key_length_max and PMI_KVS_Get_value_length_max report):
 * a key has at most 63 bytes, a value at most 2047. */
#define DN2_PMI_KEY_MAX 64
#define DN2_PMI_VAL_MAX 2048
/* Bytes of a KVS name and of a job id (NUL included). */
#define DN2_PMI_NAME_MAX 64
/* Keys in one /pmi/put request (a commit of more sends several). */
#define DN2_PMI_PUT_KEYS 64
/* Distinct keys one rank may create in one job. */
#define DN2_PMI_RANK_KEYS 1024
/* Ranks of one job (0 .. DN2_PMI_RANKS - 1). */
#define DN2_PMI_RANKS 1024
/* Bytes of a rank's token (hexadecimal). */
#define DN2_PMI_TOKEN_LEN 64

#endif
