/* SPDX-License-Identifier: MIT */
/*
 * dn2-up: bring a DIMMnet-2 board up (the order of docs/library.md) through the kernel
 * driver's control handle, and print its LID.
 *
 *   dn2-up [-d /dev/dimmnet2-N] [-c MODULE_MIB] [-m MTU] [-p PGID]
 *          [-t SECONDS] [-r] [-q]
 *
 *   -c  SO-DIMM capacity per module in MiB (256 .. 8192; default 256)
 *   -m  MTU in bytes (256 .. 4096; default 2048)
 *   -p  PGID of both WIDs (default 1)
 *   -t  seconds to wait for SO-DIMM init and for the link (default 30)
 *   -r  Controller Reset first
 *   -q  print only the LID
 *
 * Exit status: 0 up, 1 failed (the reason on stderr), 2 bad arguments.
 */
#include "libdimmnet2.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static unsigned code_of(unsigned v, unsigned first, unsigned n)
{
    unsigned k;

    for (k = 0; k < n; k++) {
        if (v == first << k) {
            return 1u << k;
        }
    }
    return 0;
}

int main(int argc, char **argv)
{
    const char *dev = NULL;
    unsigned mib = 256, mtu = 2048, pgid = 1, cap, mtuc;
    long tmo = 30;
    int reset = 0, quiet = 0, opt, r;
    uint16_t lid = 0;
    dn2_t *d;

    while ((opt = getopt(argc, argv, "d:c:m:p:t:rqh")) != -1) {
        switch (opt) {
        case 'd': dev = optarg; break;
        case 'c': mib = (unsigned)strtoul(optarg, NULL, 0); break;
        case 'm': mtu = (unsigned)strtoul(optarg, NULL, 0); break;
        case 'p': pgid = (unsigned)strtoul(optarg, NULL, 0); break;
        case 't': tmo = strtol(optarg, NULL, 0); break;
        case 'r': reset = 1; break;
        case 'q': quiet = 1; break;
        default:
            fprintf(stderr, "usage: dn2-up [-d DEV] [-c MODULE_MIB] [-m MTU] [-p PGID] "
                    "[-t SECONDS] [-r] [-q]\n");
            return 2;
        }
    }
    cap = code_of(mib, 256, 6);
    mtuc = code_of(mtu, 256, 5);
    if (!cap || !mtuc || pgid > 255 || tmo <= 0) {
        fprintf(stderr, "dn2-up: capacity must be 256..8192 MiB (a power of two), "
                "MTU 256..4096 (a power of two), PGID 0..255, timeout > 0\n");
        return 2;
    }
    r = dn2_open_control(&d, dev);
    if (r) {
        fprintf(stderr, "dn2-up: cannot open %s: %s (is the dimmnet2 module loaded?)\n",
                dev ? dev : "/dev/dimmnet2-0", dn2_strerror(r));
        return 1;
    }
    if (reset && (r = dn2_admin_reset(d))) {
        fprintf(stderr, "dn2-up: Controller Reset: %s\n", dn2_strerror(r));
    } else if ((r = dn2_admin_sdimm_init(d, cap, tmo * 1000000L))) {
        fprintf(stderr, "dn2-up: SO-DIMM init: %s\n", dn2_strerror(r));
    } else if ((r = dn2_admin_mtu(d, mtuc))) {
        fprintf(stderr, "dn2-up: MTU: %s\n", dn2_strerror(r));
    } else if ((r = dn2_admin_wait_link(d, &lid, tmo * 1000000L))) {
        fprintf(stderr, "dn2-up: link: %s (is the board attached to a running "
                "dn2-switch?)\n", dn2_strerror(r));
    } else if ((r = dn2_admin_pgid(d, 0, pgid)) || (r = dn2_admin_pgid(d, 1, pgid))) {
        fprintf(stderr, "dn2-up: PGID: %s\n", dn2_strerror(r));
    }
    dn2_close(d);
    if (r) {
        return 1;
    }
    if (quiet) {
        printf("%u\n", lid);
    } else {
        printf("dn2-up: board up: LID %u, SO-DIMM %u MiB per module, MTU %u, PGID %u\n",
               lid, mib, mtu, pgid);
    }
    return 0;
}
