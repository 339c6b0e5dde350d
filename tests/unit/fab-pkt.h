/* SPDX-License-Identifier: MIT */
/*
 * The DIMMnet-2 packets of the fabric's unit tests (test-fabric-*.c and
 * fab-client.c): a 1st DW with the Packet Size and the DLID (dn2_abi.h
 * layout, the other fields 0), then the packet's number at byte 8; the
 * rest is the caller's.
 */
#ifndef FAB_PKT_H
#define FAB_PKT_H

#include <stdint.h>
#include <string.h>

#include "dimmnet2/dn2_abi.h"

static inline void fab_pkt_head(uint8_t *p, size_t len, uint16_t dlid, uint32_t n)
{
    uint64_t h0 = DN2_PUT(len, DN2_H0_SIZE_HI, DN2_H0_SIZE_LO) |
                  DN2_PUT(dlid, DN2_H0_DLID_HI, DN2_H0_DLID_LO);
    unsigned i;

    for (i = 0; i < 8; i++) {
        p[i] = (uint8_t)(h0 >> (8 * i));
    }
    memcpy(p + 8, &n, 4);
}

#endif
