/* SPDX-License-Identifier: MIT */
/*
 * TAP, on the host: the RDM endpoint's credit arithmetic
 * (linux-guest/ofi/dn2fi_win.h) at the edges of the 32-bit sequence
 * space, and the LLCM bulk path's shares, images and notification
 * checks (every table size, every sender, a stream with credits).  The same conditions end to end, through the boards:
 * tests/ofi/ofi-hostile.c.  TAP: tests/tap/dn2-tap.h.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "dn2fi_win.h"
#include "../tap/dn2-tap.h"

static void check(int ok, const char *what)
{
    tap_result(ok, "%s", what);
}


/* The provider's LLCM area and image size (dn2fi.h: the library's map
 * 0x1000-0x6fff, 496 data bytes per BOTF image). */
#define LO 0x1000u
#define HI 0x7000u
#define IMG 496u

/* Every table size 2..64 and every receiver: the senders' shares are
 * disjoint, inside the area, 8-byte aligned; a chunk fits three times. */
static void llcm_shares(void)
{
    int ok = 1, none_ok = 1, chunk_ok = 1;
    uint32_t last_with = 0;

    for (uint32_t n = 2; n <= 64; n++) {
        for (uint32_t dst = 0; dst < n; dst++) {
            static uint8_t owner[HI];
            memset(owner, 0, sizeof(owner));
            for (uint32_t me = 0; me < n; me++) {
                uint32_t off = 0, share = 0, chunk = 0;
                int has = dn2fi_llcm_share(n, me, dst, LO, HI, IMG, &off, &share, &chunk);
                if (me == dst) {
                    none_ok &= !has;
                    continue;
                }
                if (!has) {
                    none_ok &= (HI - LO) / (n - 1) < 2 * IMG + 8;
                    continue;
                }
                last_with = n;
                ok &= off >= LO && share <= HI - off && !(off & 7) && !(share & 7);
                chunk_ok &= chunk && 3 * chunk <= share && !(chunk & 7) &&
                            (share / 3 < IMG || chunk % IMG == 0);
                for (uint32_t a = off; a < off + share && a < HI; a++) {
                    ok &= !owner[a];
                    owner[a] = 1;
                }
            }
        }
    }
    check(ok, "LLCM shares of every table size 2..64: disjoint, within 0x1000-0x6fff, aligned");
    check(chunk_ok, "a chunk is at most a third of the share, whole images where three fit");
    check(none_ok, "no share for ourselves, nor below two images");
    check(last_with == 25, "shares exist up to 25 endpoints (24 senders of 1,024 bytes)");
}

/* One sender streaming into its share against a receiver that takes
 * chunks late: no image crosses the share's end, no byte is written over
 * one the receiver has not taken, every byte arrives once and in order. */
static void llcm_stream(uint32_t n, uint32_t lag)
{
    uint32_t off, share, chunk;
    static uint8_t llcm[HI];
    uint64_t sent = 0, acked = 0, taken = 0, total = 3u << 20;
    uint32_t q_len[64], q_pos[64], qh = 0, qt = 0;
    int ok = dn2fi_llcm_share(n, 1, 0, LO, HI, IMG, &off, &share, &chunk), overrun = 0, bad = 0;
    char what[160];
    uint8_t next_in = 0, next_out = 0;

    memset(llcm, 0xee, sizeof(llcm));
    while (ok && taken < total) {
        /* the sender opens chunks while the share has room */
        while (sent < total && sent - acked + (total - sent < chunk ? total - sent : chunk) <= share &&
               qt - qh < 64) {
            uint32_t c = total - sent < chunk ? (uint32_t)(total - sent) : chunk;
            uint32_t pos = (uint32_t)(sent % share), done = 0;
            while (done < c) {
                uint32_t p = (pos + done) % share;
                uint32_t k = dn2fi_llcm_image(share, p, c - done, IMG);
                bad |= !k || k > IMG || p + k > share;
                for (uint32_t i = 0; i < k; i++) {
                    overrun |= llcm[off + p + i] != 0xee;   /* not yet taken */
                    llcm[off + p + i] = next_in++;
                }
                done += k;
            }
            q_len[qt % 64] = c;
            q_pos[qt % 64] = pos;
            qt++;
            sent += c;
        }
        /* the receiver takes the oldest chunk only every 'lag' rounds */
        for (uint32_t l = 0; l < lag && qh < qt; l++) {
            uint32_t c = q_len[qh % 64], pos = q_pos[qh % 64];
            for (uint32_t i = 0; i < c; i++) {
                uint32_t a = off + (pos + i) % share;
                bad |= llcm[a] != next_out++;
                llcm[a] = 0xee;
            }
            taken += c;
            qh++;
        }
        acked = taken;      /* its credit comes back */
    }
    snprintf(what, sizeof(what), "%u endpoints, receiver %u chunk(s) per round: 3 MiB through a "
             "%u-byte share in %u-byte chunks, no overrun, every byte in order", n, lag, share,
             chunk);
    check(ok && !overrun && !bad && taken == total, what);
}

static void llcm_pieces(void)
{
    check(dn2fi_llcm_piece_ok(LO, HI - LO, LO, HI), "a piece covering the whole area is taken");
    check(dn2fi_llcm_piece_ok(0, 0, LO, HI), "an empty piece anywhere is taken");
    check(!dn2fi_llcm_piece_ok(LO - 8, 16, LO, HI), "a piece starting below the area: refused");
    check(!dn2fi_llcm_piece_ok(HI - 8, 16, LO, HI), "a piece running past the area: refused");
    check(!dn2fi_llcm_piece_ok(LO + 8, 0xfffffff8u, LO, HI),
          "a piece whose end wraps 32 bits: refused");
    check(!dn2fi_llcm_piece_ok(0x100, 16, LO, HI),
          "a piece over the AMT entry (0x100): refused");
}

int main(void)
{
    /* sent/acked just below the wrap */
    uint32_t acked = 0xfffffff0u, sent = 0x00000004u;   /* 20 in flight */

    check(dn2fi_win_used(sent, acked) == 20, "20 datagrams in flight across the wrap");
    check(dn2fi_win_credit(sent, acked, acked) == 0, "a credit at acked acknowledges nothing");
    check(dn2fi_win_credit(sent, acked, 0xfffffffau) == 10, "a credit 10 ahead of acked: 10");
    check(dn2fi_win_credit(sent, acked, 0x00000002u) == 18, "a credit past the wrap: 18");
    check(dn2fi_win_credit(sent, acked, sent) == 20, "a credit at sent: everything");
    check(dn2fi_win_credit(sent, acked, sent + 1) == -1, "a credit one ahead of sent: refused");
    check(dn2fi_win_credit(sent, acked, acked + 0x80000000u) == -1,
          "a credit half the space away (a wrapped count): refused");
    check(dn2fi_win_credit(sent, acked, acked - 1) == -1,
          "a credit behind acked (a stale one): refused, acked never goes back");
    check(dn2fi_win_credit(7, 7, 7) == 0 && dn2fi_win_credit(7, 7, 8) == -1,
          "nothing in flight: only the same ack is taken");
    /* the old rule (acked = ack) with a wrapped count froze the window */
    check(dn2fi_win_used(5, 5 + 0x80000000u) >= 30,
          "taking a wrapped count as acked would fill any window (what the check prevents)");
    /* the receiver's side */
    check(dn2fi_win_owed(100, 85, 30, 0, 1u << 21), "15 of a 30-entry window taken: a credit is owed");
    check(!dn2fi_win_owed(100, 86, 30, 0, 1u << 21), "14 taken: not yet");
    check(dn2fi_win_owed(100, 99, 30, 1u << 20, 1u << 21), "half the ring share taken: owed");
    check(!dn2fi_win_owed(100, 100, 30, 1u << 20, 1u << 21), "nothing new taken: nothing owed");
    check(dn2fi_win_owed(5, 1000, 30, 0, 1u << 21),
          "a new sender numbering behind what we told its predecessor: owed at once");
    check(dn2fi_win_owed(1, 0, 1, 0, 1u << 21), "a one-entry window: owed after each datagram");
    llcm_shares();
    llcm_stream(2, 1);
    llcm_stream(2, 3);
    llcm_stream(4, 1);
    llcm_stream(25, 2);
    llcm_pieces();
    tap_plan(tap_count());
    return tap_exit_code();
}
