/*
 * Deliberately wrong guest program: it breaks the board's programming
 * protocol one rule at a time, each in a way that works on the forgiving
 * board (so the bug goes unnoticed there) and that a real DIMMnet-2 would
 * punish.  tests/guest/wrong-test.sh runs it on a forgiving board (every
 * check passes, nothing is reported) and on a strict one (strict=on, each
 * rule reported by name in QEMU's guest-error log).
 *
 *   dn2-wrongtest [PHYS_BASE]    (default dn2_find_base(); root: /dev/mem)
 *
 * Rules broken (the kind strict mode reports): ww-reused (a Write Window
 * reused without waiting for its VS), no-lid (the network used with the
 * LID register cleared), small-element (2-byte elements), misaligned (a
 * SO-DIMM offset off the 4-byte grain).  A missing SFENCE before a
 * doorbell is not in the list: the emulator cannot observe it
 * (docs/device-model.md).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "libdimmnet2.h"
#include "../tap/dn2-tap.h"

#define TMO 2000000

static void fill(uint8_t *p, size_t n, unsigned seed)
{
    size_t i;

    for (i = 0; i < n; i++) {
        p[i] = (uint8_t)(seed * 31 + i * 7);
    }
}

int main(int argc, char **argv)
{
    uint64_t base = argc > 1 ? strtoull(argv[1], NULL, 0) : dn2_find_base(NULL);
    uint8_t a[64], b[64], got[64];
    dn2_t *w0;
    uint16_t lid = 0;
    int r;

    tap_plan(5);
    r = dn2_open_mem(&w0, base, 0);
    if (!r) r = dn2_admin_reset(w0);
    if (!r) r = dn2_admin_sdimm_init(w0, 1, TMO);
    if (!r) r = dn2_admin_mtu(w0, 0x08);
    if (!r) r = dn2_admin_wait_link(w0, &lid, TMO);
    if (!r) r = dn2_admin_pgid(w0, 0, 42);
    if (!r) r = dn2_status_ring_init(w0, 0x7000, 1024);
    CHECK(r == 0, "bring-up at 0x%llx (LID %u): %s", (unsigned long long)base, lid,
          dn2_strerror(r));
    if (r) {
        return 1;
    }

    /* ww-reused: two VS from Write Window 0 without waiting for the first
     * (the forgiving board ran the first inside its doorbell) */
    fill(a, sizeof(a), 1);
    fill(b, sizeof(b), 2);
    dn2_ww_write(w0, 0, a, sizeof(a));
    r = dn2_vs(w0, 0, 0x1000, sizeof(a));
    dn2_ww_write(w0, 0, b, sizeof(b));
    if (!r) r = dn2_vs(w0, 0, 0x2000, sizeof(b));
    if (!r) r = dn2_wait_vs(w0, 0, TMO);
    if (!r) r = dn2_sd_read(w0, 0x1000, got, sizeof(got), 1, TMO);
    CHECK(r == 0 && !memcmp(got, a, sizeof(a)),
          "ww-reused: the first VS kept its data (true only on a forgiving board)");

    /* small-element: 2-byte elements */
    r = dn2_vss(w0, 0, 0x3000, DN2_DTYPE_2B, 16, 8);
    if (!r) r = dn2_wait_vs(w0, 0, TMO);
    CHECK(r == 0, "small-element: a VSS of 2-byte elements: %s", dn2_strerror(r));

    /* misaligned: a SO-DIMM offset off the 4-byte grain */
    r = dn2_vl(w0, 0x1002, 0, 64);
    if (!r) r = dn2_wait_pw(w0, 0, TMO);
    CHECK(r == 0, "misaligned: a VL from SO-DIMM 0x1002: %s", dn2_strerror(r));

    /* no-lid: the LID register cleared, then the network used */
    dn2_sr_write(w0, DN2_SR_LID, 0);
    r = dn2_rvs(w0, lid, 0, 0x1000, 0x4000, 64, NULL, DN2_F_EFLAG);
    if (!r) {
        /* wait for the data (its status record), then read it */
        struct dn2_rx_status st;
        r = dn2_status_next(w0, &st, TMO) == 1 ? 0 : -1;
    }
    if (!r) r = dn2_sd_read(w0, 0x4000, got, sizeof(got), 1, TMO);
    CHECK(r == 0 && !memcmp(got, a, sizeof(a)),
          "no-lid: an RVS to ourselves with the LID register cleared: %s", dn2_strerror(r));
    return tap_exit_code();
}
