/* SPDX-License-Identifier: MIT */
/*
 * What the fabric's unit test programs (tests/unit/test-fabric-*.c) share:
 * the headers, CHECK for a case of the table runner (tests/tap/dn2-tap.h:
 * the case fails with that reason), and the helpers more than one program
 * uses (fab-test.c).  The simulated network is fab-sim.h; the
 * virtual-time board model fab-vt-sim.h.
 */
#ifndef FAB_TEST_H
#define FAB_TEST_H

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>

#include <poll.h>
#include <unistd.h>

#include "dn2fab.h"
#include "dn2fab-batch.h"
#include "dn2fab-hmac.h"
#include "dn2fab-sw.h"
#include "fab-pkt.h"
#include "fab-sim.h"
#include "../tap/dn2-tap.h"

/* CHECK(cond, fmt, ...): the case fails here with that reason (the table
 * runner prints it after the case's name). */
#undef CHECK
#define CHECK(cond, ...) TAP_REQUIRE(cond, __VA_ARGS__)

/* The table runner's main for each program: the plan, one point per case
 * (an argument runs only the cases whose name contains it), then the
 * simulator's memory back. */
int fab_test_main(const struct tap_case *cases, size_t n, int argc, char **argv);

extern uint8_t g_buf[DN2F_DGRAM_MAX + 64];
bool bring_up(int mode, int neps);
bool cond_quarter(void);
extern uint16_t g_group;
bool cond_group2(void);
extern uint32_t g_lane_want;
bool take_dgram(int to, unsigned type, struct qitem *out);

#endif
