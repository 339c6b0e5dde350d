/* SPDX-License-Identifier: MIT */
/*
 * libdimmnet2-fi: the sequence-number arithmetic of the RDM endpoint's
 * credits (dn2fi_rdm.c), pure functions so that tests/ofi/ofi-unit.c can
 * check them on the host.
 *
 * A sender numbers its datagrams to one destination (32 bits, wrapping,
 * from a random start): sent = the number of the next one, acked = the
 * oldest one the receiver has not yet said it took, so sent - acked
 * (mod 2^32) datagrams are in flight and acked <= sent in serial-number
 * order.  A credit says "I took everything before ack".
 */
#ifndef DN2FI_WIN_H
#define DN2FI_WIN_H

#include <stdint.h>

/* Datagrams in flight. */
static inline uint32_t dn2fi_win_used(uint32_t sent, uint32_t acked)
{
    return sent - acked;
}

/* A credit's ack against [acked, sent]: how many datagrams it
 * acknowledges beyond acked (0: nothing new), or -1 when it is ahead of
 * what was sent (a corrupt or stale credit, or one for another process
 * on our {LID, WID}): it is then ignored, never taken. */
static inline int64_t dn2fi_win_credit(uint32_t sent, uint32_t acked, uint32_t ack)
{
    uint32_t d = ack - acked;

    if (d > sent - acked) {
        return -1;
    }
    return d;
}

/* Has a receiver taken enough from a sender since its last credit
 * (half the window, or half the ring share) to send one?  took and told
 * are sequence numbers; a took that is not ahead of told in serial order
 * (a new process on that {LID, WID} numbering from elsewhere) also asks
 * for a credit at once. */
static inline int dn2fi_win_owed(uint32_t took, uint32_t told, uint32_t win_e,
                                 uint64_t took_b, uint64_t win_b)
{
    uint32_t d = took - told;

    return d >= (win_e + 1) / 2 || (d && took_b >= win_b / 2);
}

/* The LLCM bulk path (FI_DIMMNET2_BULK=llcm).  A receiver splits its
 * area [lo, hi) of LLCM equally among the other endpoints of a rank table
 * of ntable lines, in the table's order: the sender at line me (its first
 * line) owns share number me - (me > dst) of the receiver at line dst.
 * The share is 8-byte aligned; a chunk (the bytes one LHSv2 notification
 * covers) is a third of it, in whole images of img bytes where it holds
 * three.  0 (no share: the SO-DIMM path) for ourselves or when a share
 * would hold less than two images. */
static inline int dn2fi_llcm_share(uint32_t ntable, uint32_t me, uint32_t dst, uint32_t lo,
                                   uint32_t hi, uint32_t img, uint32_t *off, uint32_t *share,
                                   uint32_t *chunk)
{
    uint32_t s;

    if (ntable < 2 || me >= ntable || dst >= ntable || me == dst || hi <= lo) {
        return 0;
    }
    s = ((hi - lo) / (ntable - 1)) & ~7u;
    if (s < 2 * img) {
        return 0;
    }
    *off = lo + (me - (me > dst)) * s;
    *share = s;
    *chunk = s / 3 >= img ? s / 3 / img * img : (s / 3) & ~7u;
    return 1;
}

/* The next image of a chunk: at most img bytes, at most what is left,
 * and never across the end of the share (position pos within it). */
static inline uint32_t dn2fi_llcm_image(uint32_t share, uint32_t pos, uint32_t left, uint32_t img)
{
    uint32_t n = left < img ? left : img;

    return n < share - pos ? n : share - pos;
}

/* A piece an LLCM notification names lies within [lo, hi) (or is empty). */
static inline int dn2fi_llcm_piece_ok(uint32_t off, uint32_t len, uint32_t lo, uint32_t hi)
{
    return !len || (off >= lo && off <= hi && len <= hi - off);
}

#endif
