/* SPDX-License-Identifier: MIT */
/*
 * dn2fab same-host sync domain: lock-step virtual time through shared
 * memory instead of datagrams through the switch (docs/virtual-time.md,
 * "Same-host synchronisation through shared memory").
 *
 * One file, mapped by every member (a QEMU's board, or any process that
 * keeps the lock-step): a header, a slot per member (its clock, promise,
 * grant, futex words) and a ring per member for the packets the other
 * members send it, with their virtual timestamps.  The members compute the
 * grants themselves, with the switch's formula (docs/fabric.md "Virtual
 * time"), under one robust process-shared lock, and wake with futexes
 * exactly the members whose grant rose past their clock.
 *
 * Plain C11 + Linux (futex, /proc), no GLib: the device and the tests use
 * it alike.  One handle per member; a handle is used by one thread.
 */
#ifndef DN2FAB_SHM_H
#define DN2FAB_SHM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dn2fab.h"

#define DN2F_SHM_MAGIC        "DN2SHMVT"    /* 8 bytes, no NUL in the file */
#define DN2F_SHM_VERSION      1u
#define DN2F_SHM_MAX_MEMBERS  64u           /* slots of a domain */
#define DN2F_SHM_MAX_ENTRIES  4096u         /* ring entries per member */
#define DN2F_SHM_SLICE_NS     100000000ull  /* a sleep's slice: death checks between */

struct dn2f_shm_cfg {
    unsigned members;           /* slots, 1..DN2F_SHM_MAX_MEMBERS */
    unsigned expected;          /* grants stay 0 until this many attached (0 = members) */
    unsigned ring_entries;      /* per member, a power of 2, 2..DN2F_SHM_MAX_ENTRIES */
    uint64_t lookahead_ns;      /* L >= 1: the least latency of any packet */
    uint64_t quantum_ns;        /* Q: 0 or 1 = exact */
};

/* A packet taken from the member's ring. */
struct dn2f_shm_pkt {
    uint64_t vtime;             /* virtual ns at which the receiver delivers it */
    uint32_t vseq;              /* the sender's counter of vt packets */
    uint16_t slid;              /* the sender's LID (the tie rule) */
    uint16_t src;               /* the sender's member index */
    uint16_t len;               /* DN2F_PKT_MIN..DN2F_PKT_MAX */
    uint8_t data[DN2F_PKT_MAX];
};

/* What this handle did (process-local counters). */
struct dn2f_shm_stats {
    uint64_t publishes;         /* dn2f_shm_publish() calls that changed the table */
    uint64_t waits;             /* dn2f_shm_wait() / _wait_space() calls */
    uint64_t sleeps;            /* FUTEX_WAIT calls (each a possible context switch) */
    uint64_t spins_won;         /* waits ended by the spin, no sleep */
    uint64_t wakes;             /* FUTEX_WAKE calls made for other members */
    uint64_t posts;             /* packets posted */
    uint64_t full;              /* posts refused for a full ring (-EAGAIN) */
    uint64_t recvs;             /* packets taken */
    uint64_t bad;               /* entries of its ring dropped as malformed */
    uint64_t death_checks;      /* pid checks after a slice without a wake-up */
};

struct dn2f_shm;

/*
 * Create the domain file at path (a temporary file next to it, renamed into
 * place: an attacher sees a whole domain or none).  An existing file is
 * replaced.  0 or -errno (-EINVAL for a bad configuration).
 */
int dn2f_shm_create(const char *path, const struct dn2f_shm_cfg *cfg);

/*
 * Join as member index with LID lid.  NULL with *err = -errno on failure:
 * -EPROTO the file is not a domain of this layout (magic, version, sizes),
 * -ERANGE index >= members, -EBUSY the slot is held by a live process,
 * -EPIPE the domain is broken (a member died).
 */
struct dn2f_shm *dn2f_shm_attach(const char *path, unsigned index, uint16_t lid, int *err);

/* Leave the set (the others' grants are recomputed), unmap, free.  NULL: no-op. */
void dn2f_shm_detach(struct dn2f_shm *m);

/*
 * The member's clock is at now and it sends nothing before earliest
 * (earliest >= now; = now while its guest runs; its next timer or queued
 * delivery while idle, covering every packet it took from its ring).  The
 * library lowers the promise to the least vtime still in its ring and to
 * the least it took since its last publish (not below now).  Recomputes
 * every grant; wakes the members whose grant rose past their clock.
 * 0, -EINVAL (now below the last published now), -EPIPE (broken).
 */
int dn2f_shm_publish(struct dn2f_shm *m, uint64_t now, uint64_t earliest);

/* The member's horizon: it may run its clock up to it (0 before the start,
 * DN2F_VT_INFINITY when alone).  Its grant, read first, lowered to the
 * least vtime of the packets still in its ring: a member that runs to it
 * has every packet due before it, whether it took its ring before or after
 * the call.  Monotone (as long as the members keep the rule). */
uint64_t dn2f_shm_grant(const struct dn2f_shm *m);

/*
 * Sleep until the grant is beyond the published now: 0.  1: a sender waits
 * for room in this member's ring (take packets with dn2f_shm_recv(), then
 * wait again).  -ETIMEDOUT after timeout_ns of host time (< 0: no limit),
 * -EPIPE when a member died (dn2f_shm_strerror() names it).
 */
int dn2f_shm_wait(struct dn2f_shm *m, int64_t timeout_ns);

/*
 * Post a packet to member dst (any member, itself included) with its
 * virtual time and counter; lowers dst's promise to vtime.  0, -EAGAIN
 * (dst's ring is full: dn2f_shm_wait_space(), then again), -ENOENT (dst
 * is not in the set), -EINVAL (dst or len out of range), -EPROTO (dst's
 * ring is corrupt), -EPIPE.
 */
int dn2f_shm_post(struct dn2f_shm *m, unsigned dst, const void *pkt, size_t len,
                  uint64_t vtime, uint32_t vseq);

/* After -EAGAIN: 0 when dst's ring has room, 1 as dn2f_shm_wait(), errors
 * as dn2f_shm_wait() and -ENOENT (dst left). */
int dn2f_shm_wait_space(struct dn2f_shm *m, unsigned dst, int64_t timeout_ns);

/* Take the next packet of this member's ring (the order senders posted it;
 * the receiver orders deliveries by dn2f_shm_pkt_cmp()).  1, 0 (empty),
 * -EPROTO (the ring's indices are corrupt), -EPIPE.  Malformed entries are
 * dropped and counted (stats.bad). */
int dn2f_shm_recv(struct dn2f_shm *m, struct dn2f_shm_pkt *out);

/* The delivery order of the UDP path: (vtime, source LID, vseq). */
int dn2f_shm_pkt_cmp(const struct dn2f_shm_pkt *a, const struct dn2f_shm_pkt *b);

/* The index of the active member with LID lid (where a packet for that
 * LID goes), or -ENOENT. */
int dn2f_shm_find_lid(const struct dn2f_shm *m, uint16_t lid);

/* The active member with the least promise (the one the others wait for):
 * its index, LID and published now; false when the set is empty. */
bool dn2f_shm_slowest(struct dn2f_shm *m, unsigned *index, uint16_t *lid, uint64_t *now);

/* Spin up to n polls of the grant before sleeping (0: sleep at once). */
void dn2f_shm_set_spin(struct dn2f_shm *m, unsigned n);

/* For tests: take the domain's lock and keep it (a member that dies in a
 * critical section).  0 or as dn2f_shm_publish(). */
int dn2f_shm_test_hold_lock(struct dn2f_shm *m);

void dn2f_shm_stats(const struct dn2f_shm *m, struct dn2f_shm_stats *s);
unsigned dn2f_shm_index(const struct dn2f_shm *m);
unsigned dn2f_shm_members(const struct dn2f_shm *m);
/* The domain's L and Q (as dn2f_shm_create() was given them). */
uint64_t dn2f_shm_lookahead(const struct dn2f_shm *m);
uint64_t dn2f_shm_quantum(const struct dn2f_shm *m);

/* Why the last call failed ("member 2 (LID 0x0003, pid 1234) died"). */
const char *dn2f_shm_strerror(const struct dn2f_shm *m);

#endif
