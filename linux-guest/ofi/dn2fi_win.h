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

#endif
