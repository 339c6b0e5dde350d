/*
 * DIMMnet-2 timing model (timing=thesis): the time the real board takes,
 * on the cluster's virtual clock (docs/timing.md).
 *
 * One table holds every parameter with the place in the thesis it comes
 * from ([EMU] where the thesis is silent); `timing-params=NAME=V,...`
 * overrides any of them.  This unit covers the network path of a packet:
 *
 *   the Core Logic takes it from the Window Controller (send-overhead-ns),
 *   pushes it into the SWIF FIFO one 8-byte line per 100 MHz clock
 *   (line-ns: 800 MB/s, the board's payload rate; the port sends one
 *   packet at a time, so back-to-back packets queue behind each other),
 *   the cable, the InfiniBand switch (cut-through), the cable, and the
 *   receiving Receive Controller (rx-push-clk or rx-ipush-clk, and
 *   status-clk when the packet writes a status record).
 *
 * The sender computes the whole path: the packet's virtual delivery time.
 * The least such time over all packets bounds the lookahead the switch
 * may use (dimmnet2_timing_min_ns).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/cutils.h"
#include "qapi/error.h"
#include "dimmnet2-int.h"

typedef struct DN2TimingDef {
    const char *name;
    uint32_t def;
    uint32_t max;
    const char *unit;
    const char *source;
} DN2TimingDef;

/* The table: docs/timing.md prints the same rows. */
static const DN2TimingDef dimmnet2_timing_defs[DN2T__MAX] = {
    [DN2T_CLOCK_NS] = { "clock-ns", 10, 1000, "ns",
        "Core Logic and host interface at 100 MHz (thesis 4.1 p.41)" },
    [DN2T_SEND_OVERHEAD_NS] = { "send-overhead-ns", 100, 100000, "ns",
        "Core Logic part of the BOTF minimum one-way latency 0.632 us: "
        "0.100 us by RTL simulation (thesis ch. 6)" },
    [DN2T_LINE_NS] = { "line-ns", 10, 100000, "ns per 8-byte line",
        "one 66-bit line per 100 MHz clock into the SWIF FIFO: 800 MB/s per "
        "direction (thesis 5.3 p.75)" },
    [DN2T_CABLE_NS] = { "cable-ns", 10, 1000000, "ns per cable",
        "[EMU] 2 m CX4 cable (thesis Table 6.1) at about 5 ns/m" },
    [DN2T_SWITCH_NS] = { "switch-ns", 385, 1000000, "ns",
        "Voltaire ISR6000 switch latency, 0.385 us (thesis 6.1, ref. [110])" },
    [DN2T_RX_PUSH_CLK] = { "rx-push-clk", 20, 100000, "clocks",
        "receiving a PUSH (RVS, BOTF, LHS) packet: 20 clocks (thesis Tables 7.4/7.5)" },
    [DN2T_RX_IPUSH_CLK] = { "rx-ipush-clk", 24, 100000, "clocks",
        "receiving an IPUSH packet: 24 clocks (thesis Tables 7.4/7.5)" },
    [DN2T_STATUS_CLK] = { "status-clk", 3, 100000, "clocks",
        "writing a status record: 3 clocks (thesis 5.4 p.86)" },
};

/* timing= and timing-params=: the model's parameters, or an error naming
 * what is wrong and what would be right. */
bool dimmnet2_timing_init(DN2State *s, Error **errp)
{
    g_auto(GStrv) items = NULL;
    unsigned i;

    for (i = 0; i < DN2T__MAX; i++) {
        s->tparam[i] = dimmnet2_timing_defs[i].def;
    }
    s->timing_on = false;
    if (!s->timing || !strcmp(s->timing, "off")) {
        if (s->timing_params) {
            error_setg(errp, "dimmnet2: timing-params= needs timing=thesis");
            return false;
        }
        return true;
    }
    if (strcmp(s->timing, "thesis")) {
        error_setg(errp, "dimmnet2: timing=%s: give off (the board as fast as "
                   "the host allows) or thesis (the time the real board takes)",
                   s->timing);
        return false;
    }
    if (!s->vtime) {
        error_setg(errp, "dimmnet2: timing=thesis needs vtime=on: the model's "
                   "times are virtual times (docs/timing.md)");
        return false;
    }
    s->timing_on = true;
    items = g_strsplit(s->timing_params ? s->timing_params : "", ",", -1);
    for (i = 0; items[i]; i++) {
        const char *eq = strchr(items[i], '=');
        uint64_t v;
        unsigned p;

        if (!*items[i]) {
            continue;
        }
        for (p = 0; p < DN2T__MAX; p++) {
            size_t n = strlen(dimmnet2_timing_defs[p].name);
            if (eq && (size_t)(eq - items[i]) == n &&
                !strncmp(items[i], dimmnet2_timing_defs[p].name, n)) {
                break;
            }
        }
        if (!eq || p == DN2T__MAX) {
            error_setg(errp, "dimmnet2: timing-params: '%s' is not NAME=VALUE "
                       "with a NAME of the model (docs/timing.md: clock-ns, "
                       "send-overhead-ns, line-ns, cable-ns, switch-ns, "
                       "rx-push-clk, rx-ipush-clk, status-clk)", items[i]);
            return false;
        }
        if (qemu_strtou64(eq + 1, NULL, 10, &v) < 0 ||
            v > dimmnet2_timing_defs[p].max) {
            error_setg(errp, "dimmnet2: timing-params: %s=%s: give 0..%u (%s)",
                       dimmnet2_timing_defs[p].name, eq + 1,
                       dimmnet2_timing_defs[p].max, dimmnet2_timing_defs[p].unit);
            return false;
        }
        s->tparam[p] = v;
    }
    if (!s->tparam[DN2T_CLOCK_NS]) {
        error_setg(errp, "dimmnet2: timing-params: clock-ns must be at least 1");
        return false;
    }
    return true;
}

/* The Receive Controller's time for a packet: its receive clocks, and the
 * status record's when it writes one. */
static uint64_t dimmnet2_timing_rx_ns(const DN2State *s, uint64_t h0)
{
    uint64_t clk = dn2_hdr0_type(h0) == DN2_OP_IPUSH ? s->tparam[DN2T_RX_IPUSH_CLK]
                                                      : s->tparam[DN2T_RX_PUSH_CLK];

    if (DN2_FGET(h0, DN2_H0_EFLAG) || DN2_FGET(h0, DN2_H0_PFLAG)) {
        clk += s->tparam[DN2T_STATUS_CLK];
    }
    return clk * s->tparam[DN2T_CLOCK_NS];
}

static uint64_t dimmnet2_timing_wire_ns(const DN2State *s, size_t len)
{
    return DIV_ROUND_UP(len, DN2_LINE) * (uint64_t)s->tparam[DN2T_LINE_NS];
}

/*
 * A packet of len bytes (first header word h0) leaves the Window Controller
 * at virtual time now: the virtual time at which the receiving board has
 * taken it.  The port sends one packet at a time (s->t_tx_free).
 */
uint64_t dimmnet2_timing_due(DN2State *s, uint64_t now, uint64_t h0, size_t len)
{
    uint64_t start = MAX(now + s->tparam[DN2T_SEND_OVERHEAD_NS], s->t_tx_free);
    uint64_t wire = dimmnet2_timing_wire_ns(s, len);

    s->t_tx_free = start + wire;
    return start + wire + 2 * (uint64_t)s->tparam[DN2T_CABLE_NS] +
           s->tparam[DN2T_SWITCH_NS] + dimmnet2_timing_rx_ns(s, h0);
}

/* The least time any packet takes: the largest lookahead the switch may
 * use with this model (the smallest packet is its two header lines). */
uint64_t dimmnet2_timing_min_ns(const DN2State *s)
{
    uint64_t rx = MIN(s->tparam[DN2T_RX_PUSH_CLK], s->tparam[DN2T_RX_IPUSH_CLK]) *
                  (uint64_t)s->tparam[DN2T_CLOCK_NS];

    return s->tparam[DN2T_SEND_OVERHEAD_NS] + dimmnet2_timing_wire_ns(s, 2 * DN2_LINE) +
           2 * (uint64_t)s->tparam[DN2T_CABLE_NS] + s->tparam[DN2T_SWITCH_NS] + rx;
}
