/* SPDX-License-Identifier: MIT */
/*
 * dn2-libtest: libdimmnet2 end to end inside a guest, on a board whose
 * port is cabled to itself (-device dimmnet2,loopback=on: LID 1).  WID 0
 * and WID 1 of the same board talk to each other through every primitive
 * family; data is verified byte for byte.  TAP output.
 *
 *   dn2-libtest [PHYS_BASE]      (default dn2_find_base(); needs root: /dev/mem)
 */
#include "libdimmnet2.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../tap/dn2-tap.h"

#define TMO 2000000L

static void pattern(uint8_t *p, size_t n, unsigned seed)
{
    size_t i;

    for (i = 0; i < n; i++) {
        p[i] = (uint8_t)(seed * 131 + i * 7 + (i >> 8));
    }
}

int main(int argc, char **argv)
{
    uint64_t base = argc > 1 ? strtoull(argv[1], NULL, 0) : dn2_find_base(NULL);
    static uint8_t a[65536], b[65536];
    struct dn2_rx_status st;
    struct dn2_botf_rr rr;
    struct dn2_ring ring;
    struct dn2_lh_msg lh;
    dn2_t *w0, *w1;
    uint16_t lid = 0;
    int r, i, n;

    tap_plan(26);
    r = dn2_open_mem(&w0, base, 0);
    if (!r) {
        r = dn2_open_mem(&w1, base, 1);
    }
    CHECK(r == 0, "open both WIDs through /dev/mem at 0x%llx: %s",
          (unsigned long long)base, dn2_strerror(r));
    if (r) {
        return 1;
    }

    /* Bring-up (thesis §5 order). */
    r = dn2_admin_reset(w0);
    if (!r) r = dn2_admin_sdimm_init(w0, 1, TMO);
    if (!r) r = dn2_admin_mtu(w0, 0x08);
    if (!r) r = dn2_admin_wait_link(w0, &lid, TMO);
    if (!r) r = dn2_admin_pgid(w0, 0, 42);
    if (!r) r = dn2_admin_pgid(w0, 1, 42);
    CHECK(r == 0 && lid == 1, "bring-up: reset, SO-DIMM, MTU 2048, link up with LID %u, PGIDs: %s",
          lid, dn2_strerror(r));
    r = dn2_status_ring_init(w0, 0x7000, 1024);
    if (!r) r = dn2_status_ring_init(w1, 0x7000, 1024);
    CHECK(r == 0, "status rings at LLCM 0x7000, 1 KiB");

    /* Local: VS then VL. */
    pattern(a, 4096, 1);
    r = dn2_sd_write(w0, 0x10000, a, 4096, 1, TMO);
    if (!r) r = dn2_sd_read(w0, 0x10000, b, 4096, 1, TMO);
    CHECK(r == 0 && !memcmp(a, b, 4096), "VS + VL round trip of 4 KiB: %s", dn2_strerror(r));
    r = dn2_vs(w0, 0x100, 0, 0x200);
    if (!r) r = dn2_wait_vs(w0, 0, TMO);
    CHECK(r == DN2_E_SRC_OVF, "VS past the window end reports the overflow (%s)", dn2_strerror(r));

    /* Local SO-DIMM to SO-DIMM copy, 64 KiB. */
    pattern(a, 65536, 2);
    r = dn2_sd_write(w0, 0x20000, a, 65536, 1, TMO);
    if (!r) r = dn2_copy(w0, 0x20000, NULL, 0x40000, NULL, 65536);
    if (!r) r = dn2_wait_vs(w0, 3, TMO);
    if (!r) r = dn2_sd_read(w0, 0x40000, b, 65536, 1, TMO);
    CHECK(r == 0 && !memcmp(a, b, 65536), "SO-DIMM copy of 64 KiB (VL + VS pair): %s", dn2_strerror(r));

    /* Strided gather: every other 8-byte element. */
    r = dn2_vls(w0, 0x20000, 0x200, DN2_DTYPE_8B, 32, 16);
    if (!r) r = dn2_wait_pw(w0, 1, TMO);
    dn2_pw_read(w0, 0x200, b, 256);
    for (i = 0, n = 0; i < 32; i++) {
        n += !memcmp(b + 8 * i, a + 16 * i, 8);
    }
    CHECK(r == 0 && n == 32, "VLS gathers 32 strided elements (%d match)", n);

    /* BOTF round robin over 4 windows: WID 0 -> WID 1's LLCM. */
    dn2_botf_rr_init(w0, &rr, 4);
    for (i = 0, r = 0; i < 16 && !r; i++) {
        pattern(a, 96, 10 + i);
        r = dn2_botf_rr_send(w0, &rr, lid, 1, DN2_TO_LLCM, 0x1000 + i * 128, a, 96, 1);
    }
    if (!r) r = dn2_botf_rr_drain(w0, &rr, TMO);
    CHECK(r == 0, "16 BOTFs through 4 Write Windows left the board: %s", dn2_strerror(r));
    for (i = 0, n = 0; i < 16; i++) {
        if (dn2_status_next(w1, &st, TMO) == 1 && st.type == DN2_OP_RVS &&
            st.src_wid == 0 && st.addr == 0x1000u + i * 128) {
            pattern(a, 96, 10 + i);
            n += !memcmp((const void *)(dn2_llcm(w1) + 0x1000 + i * 128), a, 96);
        }
    }
    CHECK(n == 16, "16 BOTF packets in WID 1's LLCM with their status records (%d)", n);

    /* RVS: 9000 bytes = 5 packets at MTU 2048, one status record. */
    pattern(a, 9000, 3);
    r = dn2_sd_write(w0, 0x50000, a, 9000, 1, TMO);
    if (!r) r = dn2_rvs(w0, lid, 1, 0x50000, 0x60000, 9000, NULL, DN2_F_EFLAG);
    n = r ? r : dn2_status_next(w1, &st, TMO);
    CHECK(n == 1 && st.size == 9000 && st.addr == 0x60000,
          "RVS 9000 bytes: one status record, size %u at 0x%x", st.size, st.addr);
    r = dn2_sd_read(w1, 0x60000, b, 9000, 1, TMO);
    CHECK(r == 0 && !memcmp(a, b, 9000), "RVS data in WID 1's SO-DIMM");
    CHECK(dn2_packet_counter(w1) >= 5, "WID 1 Packet Counter %llu (>= 5)",
          (unsigned long long)dn2_packet_counter(w1));

    /* RVL into the Prefetch Window: WID 1 reads WID 0's SO-DIMM. */
    r = dn2_rvl(w1, lid, 0, 0x50000, 0x400, 512, NULL, DN2_F_TO_PW);
    if (!r) r = dn2_wait_pw(w1, 2, TMO);
    dn2_pw_read(w1, 0x400, b, 512);
    CHECK(r == 0 && !memcmp(a, b, 512), "RVL 512 bytes into WID 1's Prefetch Window 2: %s",
          dn2_strerror(r));

    /* RVSS: 16 elements of 4 bytes scattered with stride 64. */
    r = dn2_rvss(w0, lid, 1, 0x50000, 0x70000, DN2_DTYPE_4B, 16, 64, NULL, DN2_F_EFLAG);
    n = r ? r : dn2_status_next(w1, &st, TMO);
    r = dn2_sd_read(w1, 0x70000, b, 1024, 1, TMO);
    for (i = 0, n = (n == 1) ? 0 : -100; i < 16; i++) {
        n += !memcmp(b + 64 * i, a + 4 * i, 4);
    }
    CHECK(r == 0 && n == 16, "RVSS scatters 16 elements (%d)", n);

    /* RVS gathering its data through Command Ex (every other 8 bytes):
     * the request goes out as Upper, Ex, Lower (thesis §5.2.2; a strict
     * board reports any other order, guest-lib-strict). */
    {
        const struct dn2_pattern g = { DN2_FORM_STRIDE, DN2_DTYPE_8B, 32, 16 };
        r = dn2_rvs(w0, lid, 1, 0x50000, 0x78000, 256, &g, DN2_F_EFLAG);
        n = r ? r : dn2_status_next(w1, &st, TMO);
        if (!r) r = dn2_sd_read(w1, 0x78000, b, 256, 1, TMO);
        for (i = 0, n = (n == 1) ? 0 : -100; i < 32; i++) {
            n += !memcmp(b + 8 * i, a + 16 * i, 8);
        }
        CHECK(r == 0 && n == 32, "RVS gathers 32 strided elements through Command Ex (%d)", n);
    }

    /* IPUSH into a ring WID 1 owns, for sender (LID 1, WID 0). */
    r = dn2_ring_init(w1, &ring, (DN2_LLCM_WID_STRIDE + 0x100) / DN2_AMT_UNIT,
                      0x100000, 4096);
    if (!r) r = dn2_admin_amt(w0, lid, 0, ring.amt_value);
    CHECK(r == 0, "IPUSH ring of 4 KiB at SO-DIMM 0x100000, AMT value 0x%x: %s",
          ring.amt_value, dn2_strerror(r));
    for (i = 0, r = 0; i < 3 && !r; i++) {
        r = dn2_ipush(w0, lid, 1, 0x50000 + 1000 * i, 1000, DN2_F_EFLAG);
    }
    for (i = 0, n = 0; i < 3 && !r; i++) {
        uint32_t at;
        if (dn2_status_next(w1, &st, TMO) == 1 && st.type == DN2_OP_IPUSH &&
            dn2_ring_avail(w1, &ring, &at) >= 1000 && at == st.addr &&
            dn2_sd_read(w1, at, b, 1000, 1, TMO) == 0 && !memcmp(b, a + 1000 * i, 1000)) {
            n++;
            dn2_ring_consume(w1, &ring, 1000);
        }
    }
    CHECK(n == 3, "3 IPUSH messages read from the ring in order (%d)", n);
    CHECK(dn2_ring_avail(w1, &ring, NULL) == 0, "the ring is empty after consuming");

    /* LHSv1: envelope + 200 bytes; 48 inline, the rest in the ring. */
    {
        uint64_t env = dn2_envelope(3, 7, 0xabcd1234u);
        memcpy(a, &env, 8);
        pattern(a + 8, 200, 4);
        r = dn2_sd_write(w0, 0x80000, a, 208, 1, TMO);
        if (!r) r = dn2_lhsv1(w0, lid, 1, 0x80000, 208, 0);
        n = r ? r : dn2_lh_next(w1, &lh, TMO);
        CHECK(n == 1 && lh.context == 3 && lh.rank == 7 && lh.tag == 0xabcd1234u &&
              lh.size == 200, "LHSv1 envelope: context %u rank %u tag 0x%x size %u",
              lh.context, lh.rank, lh.tag, lh.size);
        r = dn2_lh_wait_complete(w1, &lh, TMO);
        CHECK(r == 0 && !memcmp(lh.data, a + 8, DN2_LHB_DATA),
              "LHSv1 complete, 48 inline bytes match");
        r = dn2_sd_read(w1, lh.pointer, b, 152, 1, TMO);
        CHECK(r == 0 && !memcmp(b, a + 56, 152), "LHSv1 overflow at 0x%x matches", lh.pointer);
        dn2_lh_release(w1);
        dn2_ring_consume(w1, &ring, 152);
    }

    /* LHSv2: 64 bytes from the Write Window (envelope first) + 100 from SO-DIMM. */
    pattern(a, 9000, 3);        /* what the RVS test put at SO-DIMM 0x50000 */
    {
        uint64_t env = dn2_envelope(9, 1, 77);
        uint8_t img[64];
        memcpy(img, &env, 8);
        pattern(img + 8, 56, 5);
        dn2_ww_write(w0, 0x600, img, 64);
        r = dn2_lhsv2(w0, lid, 1, 0x600, 64, 0x50000, 164, 0);
        n = r ? r : dn2_lh_next(w1, &lh, TMO);
        if (n == 1) {
            dn2_lh_wait_complete(w1, &lh, TMO);
        }
        CHECK(n == 1 && lh.context == 9 && lh.tag == 77 && lh.size == 156 &&
              !memcmp(lh.data, img + 8, 48), "LHSv2 gathers the Write Window part first");
        r = dn2_sd_read(w1, lh.pointer, b, 108, 1, TMO);
        CHECK(r == 0 && !memcmp(b, img + 56, 8) && !memcmp(b + 8, a, 100),
              "LHSv2 overflow = rest of the WW part, then the SO-DIMM part");
        dn2_lh_release(w1);
    }

    /* A new handle on WID 1 (another process, in real use) must pick up the
     * LH Buffer's head and toggle parity the previous one left. */
    dn2_close(w1);
    r = dn2_open_mem(&w1, base, 1);
    if (!r) r = dn2_status_ring_init(w1, 0x7000, 1024);
    {
        uint64_t env = dn2_envelope(5, 2, 99);
        memcpy(a, &env, 8);
        pattern(a + 8, 40, 8);
        if (!r) r = dn2_sd_write(w0, 0x90000, a, 48, 1, TMO);
        if (!r) r = dn2_lhsv1(w0, lid, 1, 0x90000, 48, 0);
        n = r ? r : dn2_lh_next(w1, &lh, TMO);
        CHECK(n == 1 && lh.tag == 99 && lh.size == 40 && !memcmp(lh.data, a + 8, 40),
              "a reopened handle receives the next LHS message (toggle parity kept)");
        if (n == 1) {
            dn2_lh_wait_complete(w1, &lh, TMO);
            dn2_lh_release(w1);
        }
    }

    /* Protection: change WID 1's PGID; a packet from WID 0 is dropped. */
    r = dn2_admin_pgid(w0, 1, 43);
    pattern(a, 64, 6);
    if (!r) r = dn2_botf(w0, 0, lid, 1, DN2_TO_LLCM, 0x2000, a, 64, 1);
    n = dn2_status_next(w1, &st, 200000);
    CHECK(r == 0 && n == 0 && memcmp((const void *)(dn2_llcm(w1) + 0x2000), a, 64),
          "a packet with another PGID is dropped and never written");
    dn2_admin_pgid(w0, 1, 42);

    CHECK(!(dn2_ctl_status(w0) & (DN2_CS_RX_OVF | DN2_CS_RX_ERR_MASK)),
          "no receive error state (Controller Status 0x%llx)",
          (unsigned long long)dn2_ctl_status(w0));
    dn2_close(w1);
    dn2_close(w0);
    tap_diag("%d of %d checks failed", tap_failures(), tap_count());
    return tap_exit_code();
}
