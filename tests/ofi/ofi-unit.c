/* SPDX-License-Identifier: MIT */
/*
 * TAP, on the host: the RDM endpoint's credit arithmetic
 * (linux-guest/ofi/dn2fi_win.h) at the edges of the 32-bit sequence
 * space.  The same conditions end to end, through the boards:
 * tests/ofi/ofi-hostile.c.
 */
#include <stdint.h>
#include <stdio.h>

#include "dn2fi_win.h"

static int n, fails;

static void check(int ok, const char *what)
{
    n++;
    fails += !ok;
    printf("%sok %d - %s\n", ok ? "" : "not ", n, what);
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
    printf("1..%d\n", n);
    return fails ? 1 : 0;
}
