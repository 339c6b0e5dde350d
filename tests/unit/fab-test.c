/* SPDX-License-Identifier: MIT */
/*
 * The helpers more than one of the fabric's unit test programs uses
 * (fab-test.h), and their main.
 */
#define _GNU_SOURCE 1
#include "fab-test.h"


/* ============================================================ wire tests */
uint8_t g_buf[DN2F_DGRAM_MAX + 64];


/* ======================================================= endpoint tests */
bool bring_up(int mode, int neps)
{
    int i;
    add_switch(mode);
    g_neps = 0;
    for (i = 1; i <= neps; i++) {
        if (add_ep(i, NULL) < 0) {
            return false;
        }
        g_eps[g_neps++] = i;
    }
    memset(g_want, 0, sizeof(g_want));
    return sim_run(cond_all_up, 20ULL * 1000000000);
}

bool cond_quarter(void) { return APP(2)->got_total >= 1000 || APP(2)->error; }

uint16_t g_group;

bool cond_group2(void)
{
    return dn2f_ep_group_members(EP(1), g_group) == 2;
}


/* Defect 9: a board's two processes (WID 0 and WID 1) share the link to a
 * peer.  WID 0's receive ring stays full for a long time (deliver() says
 * -EBUSY to every DWID 0 packet); WID 1's packets from the same peer must
 * keep flowing meanwhile.  Before the lanes, one -EBUSY blocked the peer's
 * whole stream (rx_blocked per peer, and the credit limit with it), so WID 1
 * received nothing until WID 0 had room: this test then fails at "WID 1
 * starved".  Afterwards WID 0 resumes and gets everything, in order. */
uint32_t g_lane_want;


/* Take the first queued datagram to node `to` of the given type out of the
 * simulated network (the others stay queued). */
bool take_dgram(int to, unsigned type, struct qitem *out)
{
    static struct qitem keep[4096];
    unsigned nk = 0, i;
    bool found = false;

    while (sim.nq && nk < sizeof(keep) / sizeof(keep[0])) {
        struct qitem it = heap_pop();
        struct dn2f_msg m;
        if (!found && it.to == to && dn2f_decode(it.buf, it.len, &m) == 0 && m.h.type == type) {
            *out = it;
            found = true;
        } else {
            keep[nk++] = it;
        }
    }
    for (i = 0; i < nk; i++) {
        heap_push(keep[i]);
    }
    return found;
}

int fab_test_main(const struct tap_case *cases, size_t n, int argc, char **argv)
{
    int rc;

    setvbuf(stdout, NULL, _IOLBF, 0);
    rc = tap_run_cases(cases, n, argc > 1 ? argv[1] : NULL);
    sim_reset(0, 0, 0, 0);
    free(sim.heap);
    return rc;
}
