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
 *   receiving Receive Controller (rx-push-clk or rx-ipush-clk, which
 *   contain the status write: a packet that writes no status record skips
 *   its status-clk, as one into the PW or the LLCM skips rx-sdimm-clk).
 *
 * The sender computes the whole path: the packet's virtual delivery time.
 * The least such time over all packets bounds the lookahead the switch
 * may use (dimmnet2_timing_min_ns).
 *
 * The board's units take their time on the virtual clock too:
 *
 *   the Window Controller runs one step at a time: a BOTF reads its image
 *   from the Write Window (botf-read-clk + one clock per line) and counts
 *   in the Primitive Counter when that is done, so the window is busy
 *   until then; an RVS-family packet's data is read from the SO-DIMMs at
 *   sdimm-read-mbps before it can all be on the wire;
 *   the switch's output port to the receiving board carries one packet
 *   at a time at the port's rate (line-ns per line), so packets of several
 *   senders to one board queue there (dimmnet2_timing_rx_hold);
 *   the receiving board's Receive Controller takes one packet at a time,
 *   writes a status record at most every status-gap-clk clocks, and writes
 *   SO-DIMM data at sdimm-write-mbps on the same SO-DIMMs its own sends
 *   read (dimmnet2_timing_rx_hold: the packet waits until that is done).
 *
 * And the host pays for its board accesses in virtual time (the vCPU's
 * instruction budget is consumed, dimmnet2_timing_pay): an uncached
 * read of a register or of the LLCM uc-read-ns, an uncached store
 * uc-write-ns; Write Window stores are write-combined: they occupy the
 * memory bus at bus-mbps while the vCPU goes on, and the next uncached
 * access waits until the bus has carried them.  An uncached store is
 * posted to the chipset: a request word reaches the board post-ns after
 * the vCPU is done with it, and the Window Controller starts the request
 * no sooner (dimmnet2_timing_landed).  The Prefetch Window and the LH
 * Buffer are write-back memory to the host: a line the board wrote since
 * the host last read it comes across the bus (a fill: the first line read
 * is in uc-read-ns later, the window's other lines fill-next-ns apart
 * behind it); a line read again is in the cache
 * (dimmnet2_timing_fill_done).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/cutils.h"
#include "qemu/timer.h"
#include "qapi/error.h"
#include "exec/memory.h"
#include "hw/core/cpu.h"
#include "exec/cpu-common.h"
#include "system/cpu-timers.h"
#include "migration/vmstate.h"
#include "qemu/error-report.h"
#include "dimmnet2-int.h"
#include "trace.h"

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
    [DN2T_STATUS_CLK] = { "status-clk", 4, 100000, "clocks",
        "of the receive clocks, the status write: 4 (thesis Tables 7.4/7.5); "
        "a packet that writes no status record skips it" },
    [DN2T_RX_SDIMM_CLK] = { "rx-sdimm-clk", 6, 100000, "clocks",
        "of the receive clocks, the SO-DIMM write: 6 (thesis Tables 7.4/7.5); "
        "a PUSH into the PW or the LLCM skips it (ping-pong RTT/2 to the PW "
        "0.06 us below that to the SO-DIMM, thesis ch. 6)" },
    [DN2T_STATUS_GAP_CLK] = { "status-gap-clk", 8, 100000, "clocks",
        "the Receive Controller requests a status write at most every 8 "
        "clocks (thesis Tables 7.4/7.5)" },
    [DN2T_BOTF_READ_CLK] = { "botf-read-clk", 2, 100000, "clocks",
        "the Core Logic moves a 512-byte BOTF image to the SWIF in 0.660 us "
        "(thesis Table 6.2): 64 lines at one per clock and 2 clocks more" },
    [DN2T_SDIMM_READ_MBPS] = { "sdimm-read-mbps", 727, 100000, "MB/s",
        "[calibrated] the SO-DIMM read rate of a send: solved from the RVS "
        "unidirectional row, 727.20 MB/s, 90.9 % of the 800 MB/s port "
        "(thesis ch. 6); that row calibrates, it does not agree" },
    [DN2T_SDIMM_WRITE_MBPS] = { "sdimm-write-mbps", 1385, 100000, "MB/s",
        "[calibrated] the SO-DIMM write rate of a receive: solved from the "
        "RVS bidirectional row, 953.50 MB/s with sends' reads and receives' "
        "writes contending (thesis ch. 6): 1 / (2 / 953.5 - 1 / 727.2); that "
        "row calibrates, it does not agree" },
    [DN2T_UC_READ_NS] = { "uc-read-ns", 189, 100000, "ns",
        "an uncached read of the board (a register, the LLCM) on the PC-1600 "
        "host: about 0.189 us (thesis ch. 6, BOTF latency breakdown)" },
    [DN2T_UC_WRITE_NS] = { "uc-write-ns", 60, 100000, "ns",
        "an uncached store (a request word, the LLCM): the program-measured "
        "store time of 0.060 us (thesis ch. 6, BOTF latency breakdown)" },
    [DN2T_BUS_MBPS] = { "bus-mbps", 1600, 100000, "MB/s",
        "Write Window stores at the PC-1600 memory bus rate, 64 bits at "
        "200 MT/s (thesis 3.2.1 p.37), in whole 64-byte write-combining lines" },
    [DN2T_POST_NS] = { "post-ns", 207, 100000, "ns",
        "[derived] a host store reaches the board this long after the CPU "
        "posted it to the chipset: writing the image and the request takes "
        "0.343 us of the 0.632 us one-way latency, the program measured "
        "0.076 + 0.060 us, 'only until posted to the chipset' (thesis "
        "6.2.1 p.92-93): 0.343 - 0.076 - 0.060" },
    [DN2T_FILL_NEXT_NS] = { "fill-next-ns", 40, 100000, "ns per 64-byte line",
        "[EMU] the host reads the Prefetch Window lines the board wrote: the "
        "first line read is in after uc-read-ns, the window's other lines "
        "follow one per 64 bytes at the PC-1600 bus's 1.6 GB/s, the library "
        "having prefetched the window (PREFETCHNTA, thesis 4.2.1; 3.2.1 p.37; "
        "choice #64)" },
};

/* timing= and timing-params=: the model's parameters, or an error naming
 * what is wrong and what would be right. */
bool dimmnet2_timing_init(DN2State *s, Error **errp)
{
    g_auto(GStrv) items = NULL;
    unsigned i;

    for (i = 0; i < DN2T__MAX; i++) {
        s->timing.tparam[i] = dimmnet2_timing_defs[i].def;
    }
    s->timing.timing_on = false;
    if (!s->timing.mode || !strcmp(s->timing.mode, "off")) {
        if (s->timing.timing_params) {
            error_setg(errp, "dimmnet2: timing-params= needs timing=thesis");
            return false;
        }
        return true;
    }
    if (strcmp(s->timing.mode, "thesis")) {
        error_setg(errp, "dimmnet2: timing=%s: give off (the board as fast as "
                   "the host allows) or thesis (the time the real board takes)",
                   s->timing.mode);
        return false;
    }
    if (!s->vt.on) {
        error_setg(errp, "dimmnet2: timing=thesis needs vtime=on: the model's "
                   "times are virtual times (docs/timing.md)");
        return false;
    }
    s->timing.timing_on = true;
    items = g_strsplit(s->timing.timing_params ? s->timing.timing_params : "", ",", -1);
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
                       "rx-push-clk, rx-ipush-clk, rx-sdimm-clk, status-clk, status-gap-clk, "
                       "botf-read-clk, sdimm-read-mbps, sdimm-write-mbps, "
                       "uc-read-ns, uc-write-ns, bus-mbps, post-ns, fill-next-ns)",
                       items[i]);
            return false;
        }
        if (qemu_strtou64(eq + 1, NULL, 10, &v) < 0 ||
            v > dimmnet2_timing_defs[p].max) {
            error_setg(errp, "dimmnet2: timing-params: %s=%s: give 0..%u (%s)",
                       dimmnet2_timing_defs[p].name, eq + 1,
                       dimmnet2_timing_defs[p].max, dimmnet2_timing_defs[p].unit);
            return false;
        }
        s->timing.tparam[p] = v;
    }
    if (!s->timing.tparam[DN2T_CLOCK_NS] || !s->timing.tparam[DN2T_SDIMM_READ_MBPS] ||
        !s->timing.tparam[DN2T_SDIMM_WRITE_MBPS] || !s->timing.tparam[DN2T_BUS_MBPS]) {
        error_setg(errp, "dimmnet2: timing-params: clock-ns, sdimm-read-mbps, "
                   "sdimm-write-mbps and bus-mbps must be at least 1");
        return false;
    }
    /* The host pays for every register read only if every read comes to
     * the device: no read mirror of the User Registers. */
    s->params.read_mirror = false;
    return true;
}

/* Does a packet write its data into the SO-DIMMs?  An IPUSH (its ring),
 * or a PUSH into neither the Prefetch Window nor the LLCM. */
static bool dimmnet2_timing_to_sdimm(uint64_t h0)
{
    unsigned type = dn2_hdr0_type(h0);

    return type == DN2_OP_IPUSH ||
           (!dn2_otype_is_rvl(type) && !DN2_FGET(h0, DN2_H0_RFLAG) &&
            !DN2_FGET(h0, DN2_H0_LFLAG));
}

/* The Receive Controller's time for a packet: its receive clocks, which
 * the thesis breaks down step by step with the SO-DIMM write (6) and the
 * status write (4) among them (Tables 7.4/7.5): a PUSH into the PW or the
 * LLCM skips the SO-DIMM write, a packet that writes no status record
 * (neither eflag nor pflag) skips the status write. */
static uint64_t dimmnet2_timing_rx_ns(const DN2State *s, uint64_t h0)
{
    uint64_t clk = dn2_hdr0_type(h0) == DN2_OP_IPUSH ? s->timing.tparam[DN2T_RX_IPUSH_CLK]
                                                      : s->timing.tparam[DN2T_RX_PUSH_CLK];

    if (!dimmnet2_timing_to_sdimm(h0)) {
        clk -= MIN(clk, s->timing.tparam[DN2T_RX_SDIMM_CLK]);
    }
    if (!DN2_FGET(h0, DN2_H0_EFLAG) && !DN2_FGET(h0, DN2_H0_PFLAG)) {
        clk -= MIN(clk, s->timing.tparam[DN2T_STATUS_CLK]);
    }
    return clk * s->timing.tparam[DN2T_CLOCK_NS];
}

static uint64_t dimmnet2_timing_wire_ns(const DN2State *s, size_t len)
{
    return DIV_ROUND_UP(len, DN2_LINE) * (uint64_t)s->timing.tparam[DN2T_LINE_NS];
}

/*
 * A packet of len bytes (first header word h0) leaves the Window Controller
 * at virtual time now: the virtual time at which the receiving board has
 * taken it.  The port sends one packet at a time (s->timing.t_tx_free).
 */
uint64_t dimmnet2_timing_due(DN2State *s, uint64_t now, uint64_t h0, size_t len)
{
    uint64_t ovh = s->timing.tparam[DN2T_SEND_OVERHEAD_NS];
    uint64_t start = MAX(now + ovh, s->timing.t_tx_free);
    uint64_t end = start + dimmnet2_timing_wire_ns(s, len);

    if (s->timing.t_data_end) {
        /* Data from the SO-DIMMs: its lines follow their read, the Core
         * Logic's overhead behind it, so the packet is on the wire no
         * sooner than its last byte was read. */
        start = MAX(start, s->timing.t_data_start + ovh);
        end = MAX(start + dimmnet2_timing_wire_ns(s, len), s->timing.t_data_end + ovh);
        s->timing.t_data_start = s->timing.t_data_end = 0;
    }
    s->timing.t_tx_free = end;
    return end + 2 * (uint64_t)s->timing.tparam[DN2T_CABLE_NS] +
           s->timing.tparam[DN2T_SWITCH_NS] + dimmnet2_timing_rx_ns(s, h0);
}

/* The least time any packet takes: the largest lookahead the switch may
 * use with this model (the smallest packet is its two header lines, a
 * PUSH into the PW or the LLCM that writes no status record). */
uint64_t dimmnet2_timing_min_ns(const DN2State *s)
{
    uint64_t skip = (uint64_t)s->timing.tparam[DN2T_RX_SDIMM_CLK] +
                    s->timing.tparam[DN2T_STATUS_CLK];
    uint64_t push = s->timing.tparam[DN2T_RX_PUSH_CLK] -
                    MIN(s->timing.tparam[DN2T_RX_PUSH_CLK], skip);
    uint64_t ipush = s->timing.tparam[DN2T_RX_IPUSH_CLK] -
                     MIN(s->timing.tparam[DN2T_RX_IPUSH_CLK], s->timing.tparam[DN2T_STATUS_CLK]);
    uint64_t rx = MIN(push, ipush) * (uint64_t)s->timing.tparam[DN2T_CLOCK_NS];

    return s->timing.tparam[DN2T_SEND_OVERHEAD_NS] + dimmnet2_timing_wire_ns(s, 2 * DN2_LINE) +
           2 * (uint64_t)s->timing.tparam[DN2T_CABLE_NS] + s->timing.tparam[DN2T_SWITCH_NS] + rx;
}

/* ------------------------------------------------------------------ */
/* The host side: the vCPU pays for its board accesses                  */
/* ------------------------------------------------------------------ */

/* The virtual time at which the memory bus has carried every
 * write-combined Write Window store so far. */
static uint64_t dimmnet2_timing_bus_end(DN2State *s)
{
    return DIV_ROUND_UP(s->timing.t_bus_ps, 1000);
}

/*
 * A host store of size bytes into the Write Window: write-combined, it is
 * posted and the bus carries it at bus-mbps while the vCPU goes on; an
 * uncached access after it waits until the bus is done (an uncached access
 * drains the write-combining buffers).
 */
static void dimmnet2_timing_ww_store(DN2State *s, unsigned size)
{
    uint64_t now_ps = (uint64_t)qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL) * 1000;

    s->timing.t_bus_ps = MAX(s->timing.t_bus_ps, now_ps) +
                  (uint64_t)size * 1000000 / s->timing.tparam[DN2T_BUS_MBPS];
}

/*
 * An uncached host access to a register or to the LLCM: the vCPU waits
 * for the write-combined Write Window stores still on the bus, then cost
 * ns; a read returns what the board holds when it returns, a store takes
 * effect when it is done.
 *
 * The vCPU's budget ends at the next virtual timer deadline (a packet's
 * delivery, a unit's completion, the lock-step horizon).  When the access
 * spans one, it is charged up to it and its instruction is undone (as
 * SimBricks does for its MMIO): the vCPU stops at the deadline, the timers
 * run, and the instruction comes again and pays the rest (the retry is not
 * charged anew).  So an access sees every event due before it is done,
 * and the vCPU's clock never passes a deadline.  Called before the access
 * takes effect; it may not return (the instruction is retried).
 *
 * Where a budget ends depends on the host as well (a budget is cut short
 * when a grant or a datagram arrives, or by a host-clock timer), so
 * nothing here may depend on it: the access ends at the first instruction
 * whose virtual time is at or after the time it is paid up to
 * (t_host_busy), counted from the instruction count itself, not from the
 * clock (which is that count rounded down to a nanosecond under -icount
 * insn-ps): an access that was retried at a deadline ends at the very
 * instruction an access that fitted in its budget ends at.
 *
 * One instruction may make several accesses (a 16-byte load split by
 * alignment: 1 + 2 + 4 + 8 + 1 bytes at an odd address), each charged.
 * The accesses of one instruction are told apart from the next
 * instruction's by the instruction count: an I/O instruction ends its
 * translation block, so the next one starts a block and takes its count,
 * while an access of the same instruction finds the count where the
 * previous access left it.  A retried instruction does not pay again for
 * the accesses the undone attempt paid (t_retry_skip): were they charged
 * anew, an instruction whose accesses cost more than the time between two
 * deadlines (five LLCM reads, 945 ns, against a 625 ns lookahead) would be
 * undone at every deadline for ever.
 */
static bool dimmnet2_timing_pay(DN2State *s, uint64_t cost)
{
    CPUState *cpu = current_cpu;
    int64_t now, raw;
    uint64_t insns, left;

    if (!cpu || !icount_enabled() || !cpu->running || !cpu->neg.can_do_io) {
        return false;
    }
    raw = icount_get_raw();
    now = qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL);
    left = icount_budget_left(cpu);
    if ((uint64_t)raw != s->timing.t_acc_left) {
        /* the first access of an instruction: the retried one, or another */
        s->timing.t_acc_n = 0;
        if (!s->timing.t_read_retry) {
            s->timing.t_retry_skip = 0;
        }
        s->timing.t_read_retry = false;
    }
    if (++s->timing.t_acc_n > s->timing.t_retry_skip) {
        s->timing.t_host_busy = MAX(MAX(s->timing.t_host_busy, (uint64_t)now), dimmnet2_timing_bus_end(s)) +
                         cost;
    }
    /* The fewest instructions that bring the clock to t_host_busy (2^shift
     * ns each, or -icount insn-ps=P: P ps each), from the count itself:
     * the clock is bias + icount_to_ns(raw). */
    insns = 0;
    if (s->timing.t_host_busy > (uint64_t)now) {
        int64_t end = icount_round(icount_to_ns(raw) + (int64_t)(s->timing.t_host_busy - now));

        insns = end > raw ? end - raw : 0;
    }
    trace_dimmnet2_timing_pay(s->index, raw, now, cost, left, insns,
                              s->timing.t_acc_n, s->timing.t_retry_skip);
    if (!cpu->mem_io_pc) {
        /* No instruction to undo: the vCPU goes on, and the next access
         * waits for this one (t_host_busy).  Charging what fits would make
         * the clock depend on where the budget ends. */
        insns = 0;
    }
    if (insns <= left) {
        icount_charge(cpu, insns);
        s->timing.t_acc_left = raw + insns;
        return true;
    }
    /* To the deadline, then again: undo the instruction (its count comes
     * back and is taken again, so the clock stands at the deadline), leave
     * the device as an access that returned would, and stop the vCPU. */
    icount_charge(cpu, left);   /* the budget ends here */
    s->timing.t_read_retry = true;
    s->timing.t_retry_skip = MAX(s->timing.t_retry_skip, s->timing.t_acc_n);
    s->timing.t_acc_left = UINT64_MAX;
    cpu_restore_state(cpu, cpu->mem_io_pc);
    icount_charge(cpu, icount_budget_left(cpu));
    DEVICE(s)->mem_reentrancy_guard.engaged_in_io = false;
    cpu_loop_exit(cpu);
}

/*
 * An uncached host access to a register or to the LLCM.  A store is
 * posted: the CPU is done with it after uc-write-ns, and it reaches the
 * board post-ns later (t_post_land): a request word's Window Controller
 * waits for it (dimmnet2_timing_landed).  A read is not held behind the
 * stores posted before it [EMU]: it costs uc-read-ns from when the CPU
 * issues it, and returns what the board holds then.
 */
void dimmnet2_timing_uc_access(DN2State *s, bool write)
{
    if (!s->timing.timing_on) {
        return;
    }
    if (write) {
        bool paid = dimmnet2_timing_pay(s, s->timing.tparam[DN2T_UC_WRITE_NS]);
        s->timing.t_post_land = paid ? s->timing.t_host_busy + s->timing.tparam[DN2T_POST_NS] : 0;
    } else {
        dimmnet2_timing_pay(s, s->timing.tparam[DN2T_UC_READ_NS]);
    }
}

/* The virtual time a request word just stored reaches the board (0: it
 * was not charged, as from the qtest accelerator: at once). */
uint64_t dimmnet2_timing_land(DN2State *s)
{
    return s->timing.timing_on ? s->timing.t_post_land : 0;
}

/* Has the request word of e reached the board?  If not, the Window
 * Controller's timer is set for the time it does. */
bool dimmnet2_timing_landed(DN2State *s, const DN2FifoEntry *e)
{
    if (!s->timing.timing_on || !e->t_land ||
        (uint64_t)qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL) >= e->t_land) {
        return true;
    }
    if (s->wc.strict_timer) {
        timer_mod_anticipate_ns(s->wc.strict_timer, e->t_land);
    }
    return false;
}

/* ------------------------------------------------------------------ */
/* The Window Controller and the SO-DIMMs on the virtual clock          */
/* ------------------------------------------------------------------ */

/* May the Window Controller take its next step now?  If not, its timer
 * is set for the virtual time it may. */
bool dimmnet2_timing_wc_ready(DN2State *s)
{
    int64_t now;

    if (!s->timing.timing_on) {
        return true;
    }
    now = qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL);
    if ((uint64_t)now >= s->timing.t_wc_free) {
        return true;
    }
    if (s->wc.strict_timer) {
        timer_mod_anticipate_ns(s->wc.strict_timer, s->timing.t_wc_free);
    }
    return false;
}

/* The step the Window Controller takes now keeps it busy ns. */
void dimmnet2_timing_wc_busy(DN2State *s, uint64_t ns)
{
    if (s->timing.timing_on) {
        s->timing.t_wc_free = MAX(s->timing.t_wc_free,
                           (uint64_t)qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL)) + ns;
    }
}

/* The next packet's bytes of data are read from the SO-DIMMs, after what
 * they are busy with: the virtual time the read ends (0 without the
 * model).  The Window Controller goes on when it has read them. */
uint64_t dimmnet2_timing_sdimm_read(DN2State *s, uint64_t bytes)
{
    uint64_t now, start;

    if (!s->timing.timing_on) {
        return 0;
    }
    now = qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL);
    start = MAX(now, s->timing.t_sd_free);
    s->timing.t_sd_free = start + bytes * 1000 / s->timing.tparam[DN2T_SDIMM_READ_MBPS];
    s->timing.t_data_start = start;
    s->timing.t_data_end = s->timing.t_sd_free;
    s->timing.t_wc_free = MAX(s->timing.t_wc_free, s->timing.t_sd_free);
    return s->timing.t_sd_free;
}

/* A VL-family request's bytes of data are read from the SO-DIMMs into the
 * Prefetch Window at the same rate, after what they are busy with; the
 * Window Controller goes on (and the window gets the data) when they are
 * read (choice #65). */
void dimmnet2_timing_vl_read(DN2State *s, uint64_t bytes)
{
    uint64_t now;

    if (!s->timing.timing_on) {
        return;
    }
    now = qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL);
    s->timing.t_sd_free = MAX(now, s->timing.t_sd_free) + bytes * 1000 / s->timing.tparam[DN2T_SDIMM_READ_MBPS];
    s->timing.t_wc_free = MAX(s->timing.t_wc_free, s->timing.t_sd_free);
}

/*
 * The Receive Controller is offered a packet (due now, by the sender's
 * reckoning of an idle receiver): the virtual time at which it has really
 * taken it.  It takes one packet at a time (its receive clocks after the
 * previous packet's), writes a status record at most every status-gap-clk
 * clocks, and writes SO-DIMM data at sdimm-write-mbps once the SO-DIMMs are
 * free of the board's own reads.  A time after now: the packet waits.
 * commit: it is taken now; the units are busy accordingly.
 */
uint64_t dimmnet2_timing_rx_hold(DN2State *s, const uint8_t *pkt, size_t len,
                                 bool commit)
{
    uint64_t now, h0, done, w = 0, rx, tail, out;
    bool status, sdimm;
    unsigned type;

    if (!s->timing.timing_on || len < 2 * DN2_LINE) {
        return 0;
    }
    now = qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL);
    if (!s->timing.rx_offered) {
        /* Its delivery time (the sender's sum), unless it comes at the very
         * time a packet that had waited was taken: then it queued behind
         * that one, and its own time was earlier. */
        s->timing.t_rx_offer = now;
        s->timing.rx_offered = true;
        s->timing.rx_offer_backlog = s->timing.rx_backlog && now == s->timing.t_rx_taken;
    }
    h0 = ldq_le_p(pkt);
    rx = dimmnet2_timing_rx_ns(s, h0);
    type = dn2_hdr0_type(h0);
    status = DN2_FGET(h0, DN2_H0_EFLAG) || DN2_FGET(h0, DN2_H0_PFLAG);
    sdimm = dimmnet2_timing_to_sdimm(h0);
    if (sdimm) {
        uint32_t psize = dn2_pkt_size_bytes(DN2_FGET(h0, DN2_H0_SIZE));
        uint32_t hdr = dn2_hdr_lines(type) * DN2_LINE;

        w = (uint64_t)(psize > hdr ? psize - hdr : 0) * 1000 /
            s->timing.tparam[DN2T_SDIMM_WRITE_MBPS];
    }
    /* The switch's output port: the sender's sum has the packet's last
     * byte leave the switch a cable and the receive clocks before its
     * delivery; it leaves no sooner than the previous packet's last byte
     * and its own wire time (senders to one board share that link). */
    tail = (uint64_t)s->timing.tparam[DN2T_CABLE_NS] + rx;
    out = s->timing.t_link_out + dimmnet2_timing_wire_ns(s, len);
    if (!s->timing.rx_offer_backlog) {
        out = MAX(out, s->timing.t_rx_offer - MIN(s->timing.t_rx_offer, tail));
    }
    /* (a packet that queued behind a waiting one crossed the link while
     * that one waited: the link's own bound is all that holds it) */
    done = MAX(MAX(now, s->timing.t_rc_free + rx), out + tail);
    if (w) {
        done = MAX(done, s->timing.t_sd_free + w);
    }
    if (status && s->timing.t_status_last) {
        done = MAX(done, s->timing.t_status_last +
                   (uint64_t)s->timing.tparam[DN2T_STATUS_GAP_CLK] * s->timing.tparam[DN2T_CLOCK_NS]);
    }
    if (commit) {
        s->timing.t_link_out = out;
        s->timing.rx_offered = false;
        s->timing.rx_backlog = now > s->timing.t_rx_offer || s->timing.rx_offer_backlog;
        s->timing.t_rx_taken = now;
    }
    if (commit && done <= now) {
        s->timing.t_rc_free = now;
        if (w) {
            s->timing.t_sd_free = MAX(s->timing.t_sd_free, now);
        }
        if (status) {
            s->timing.t_status_last = now;
        }
    }
    return done;
}

/* ------------------------------------------------------------------ */
/* The LLCM as the uncached memory it is                                */
/* ------------------------------------------------------------------ */

/*
 * The LLCM is RAM the guest reaches directly; with the model its host
 * accesses come here instead (an I/O region over it), so each is charged
 * as an uncached access and then served from the same RAM.
 */
static uint64_t dimmnet2_llcm_timed_read(void *opaque, hwaddr addr, unsigned size)
{
    DN2State *s = opaque;

    dimmnet2_timing_uc_access(s, false);
    return ldn_le_p(s->win.llcm_ptr + addr, size);
}

static void dimmnet2_llcm_timed_write(void *opaque, hwaddr addr, uint64_t v,
                                      unsigned size)
{
    DN2State *s = opaque;

    dimmnet2_timing_uc_access(s, true);
    stn_le_p(s->win.llcm_ptr + addr, size, v);
    memory_region_set_dirty(&s->win.llcm, addr, size);
}

static const MemoryRegionOps dimmnet2_llcm_timed_ops = {
    .read = dimmnet2_llcm_timed_read,
    .write = dimmnet2_llcm_timed_write,
    .endianness = DEVICE_LITTLE_ENDIAN,
    .valid = { .min_access_size = 1, .max_access_size = 8 },
    .impl = { .min_access_size = 1, .max_access_size = 8 },
};

/* The Write Window likewise: its stores are served into the same RAM and
 * occupy the memory bus (dimmnet2_timing_ww_store). */
static uint64_t dimmnet2_ww_timed_read(void *opaque, hwaddr addr, unsigned size)
{
    DN2State *s = opaque;

    return ldn_le_p(s->win.ww_ptr + addr, size);
}

static void dimmnet2_ww_timed_write(void *opaque, hwaddr addr, uint64_t v,
                                    unsigned size)
{
    DN2State *s = opaque;

    dimmnet2_timing_ww_store(s, size);
    stn_le_p(s->win.ww_ptr + addr, size, v);
    memory_region_set_dirty(&s->win.ww, addr, size);
}

static const MemoryRegionOps dimmnet2_ww_timed_ops = {
    .read = dimmnet2_ww_timed_read,
    .write = dimmnet2_ww_timed_write,
    .endianness = DEVICE_LITTLE_ENDIAN,
    .valid = { .min_access_size = 1, .max_access_size = 8 },
    .impl = { .min_access_size = 1, .max_access_size = 8 },
};

/* ------------------------------------------------------------------ */
/* The Prefetch Window and the LH Buffer as the cached memory they are  */
/* ------------------------------------------------------------------ */

/* The board wrote [off, off + len) of the PW (or of the LH Buffer): the
 * host's copies of those lines are stale, its next read of each is a fill
 * (the library flushed them before it asked the board for them). */
void dimmnet2_timing_cached_written(DN2State *s, bool lhb, uint32_t off, uint32_t len)
{
    uint32_t base = lhb ? DN2_REGION_SIZE / DN2_TFILL_LINE : 0, l;

    if (!s->timing.timing_on || !len || off >= DN2_REGION_SIZE) {
        return;
    }
    len = MIN(len, DN2_REGION_SIZE - off);
    for (l = base + off / DN2_TFILL_LINE; l <= base + (off + len - 1) / DN2_TFILL_LINE;
         l++) {
        s->timing.t_stale[l / 64] |= 1ull << (l % 64);
        if (s->timing.t_fill_win != UINT32_MAX && l - s->timing.t_fill_win < DN2_TFILL_RUN) {
            s->timing.t_fill_at[l - s->timing.t_fill_win] = 0;    /* its fill is stale too */
        }
    }
}

/* Power-on and Controller Reset: no line pending, no fill under way. */
void dimmnet2_timing_cached_reset(DN2State *s)
{
    memset(s->timing.t_stale, 0, sizeof(s->timing.t_stale));
    memset(s->timing.t_fill_at, 0, sizeof(s->timing.t_fill_at));
    s->timing.t_fill_end = 0;
    s->timing.t_fill_win = UINT32_MAX;
}

static bool dimmnet2_timing_stale(DN2State *s, uint32_t line)
{
    return s->timing.t_stale[line / 64] & (1ull << (line % 64));
}

/*
 * The host reads a word of line `line` (the PW's lines, then the LH
 * Buffer's) from start on: when is that line in its cache?  (choice #64)
 *
 * A line the board wrote since the host last read it is a fill across the
 * memory bus.  The library reads a Prefetch Window's lines once the
 * window's flags say the board has written them, and prefetches the
 * window then (PREFETCHNTA of each line, thesis §4.2.1): the first read of
 * a stale line begins the fills of every stale line of its 512-byte window
 * (of its 64-byte entry in the LH Buffer), that line first.  Its data is
 * in an uncached read's latency later (uc-read-ns) and the bus brings the
 * others one after another, fill-next-ns apart (a 64-byte line at the
 * PC-1600 bus's 1.6 GB/s), behind any fill still under way; a read of one
 * of them waits until it is in.  A line read again is in the cache.
 */
static uint64_t dimmnet2_timing_fill_done(DN2State *s, uint32_t line, uint64_t start)
{
    uint32_t run = line < DN2_REGION_SIZE / DN2_TFILL_LINE ? DN2_TFILL_RUN
                                                          : DN2_LHB_ENTRY / DN2_TFILL_LINE;
    uint32_t win = line - line % run, k, l;
    uint64_t t, done;

    if (!dimmnet2_timing_stale(s, line)) {
        if (s->timing.t_fill_win == win && s->timing.t_fill_at[line - win]) {
            done = s->timing.t_fill_at[line - win];        /* prefetched: on its way */
            s->timing.t_fill_at[line - win] = 0;
            return MAX(done, start);
        }
        return start;                               /* in the cache */
    }
    memset(s->timing.t_fill_at, 0, sizeof(s->timing.t_fill_at));
    s->timing.t_fill_win = win;
    t = MAX(start + s->timing.tparam[DN2T_UC_READ_NS], s->timing.t_fill_end + s->timing.tparam[DN2T_FILL_NEXT_NS]);
    done = t;
    for (k = 0; k < run; k++) {
        l = win + (line - win + k) % run;           /* the line read first */
        if (!dimmnet2_timing_stale(s, l)) {
            continue;
        }
        s->timing.t_stale[l / 64] &= ~(1ull << (l % 64));
        if (k) {
            t += s->timing.tparam[DN2T_FILL_NEXT_NS];
            s->timing.t_fill_at[l - win] = t;
        }
        s->stat[DN2_STAT_HOST_FILLS]++;
    }
    s->timing.t_fill_end = t;
    return done;
}

/* A host read of line `line`: the vCPU waits until the line is in.  A
 * retried instruction (its wait spanned a deadline) pays the rest. */
static void dimmnet2_timing_cached_read(DN2State *s, uint32_t line)
{
    uint64_t now = qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL);
    uint64_t start = MAX(MAX(s->timing.t_host_busy, now), dimmnet2_timing_bus_end(s));
    uint64_t done = dimmnet2_timing_fill_done(s, line, start);

    if (done > start) {
        s->stat[DN2_STAT_HOST_FILL_NS] += done - start;
        trace_dimmnet2_timing_fill(s->index, line, start, done - start);
        dimmnet2_timing_pay(s, done - start);
    } else if (s->timing.t_read_retry) {
        dimmnet2_timing_pay(s, 0);                  /* the rest of the undone wait */
    }
}

static uint64_t dimmnet2_pw_timed_read(void *opaque, hwaddr addr, unsigned size)
{
    DN2State *s = opaque;

    dimmnet2_timing_cached_read(s, addr / DN2_TFILL_LINE);
    return ldn_le_p(s->win.pw_ptr + addr, size);
}

static uint64_t dimmnet2_lhb_timed_read(void *opaque, hwaddr addr, unsigned size)
{
    DN2State *s = opaque;

    dimmnet2_timing_cached_read(s, (DN2_REGION_SIZE + addr) / DN2_TFILL_LINE);
    return ldn_le_p(s->win.lhb_ptr + addr, size);
}

/* The host does not write the PW or the LH Buffer (ROM to it without the
 * model as well): ignored. */
static void dimmnet2_cached_timed_write(void *opaque, hwaddr addr, uint64_t v,
                                        unsigned size)
{
}

static const MemoryRegionOps dimmnet2_pw_timed_ops = {
    .read = dimmnet2_pw_timed_read,
    .write = dimmnet2_cached_timed_write,
    .endianness = DEVICE_LITTLE_ENDIAN,
    .valid = { .min_access_size = 1, .max_access_size = 8 },
    .impl = { .min_access_size = 1, .max_access_size = 8 },
};

static const MemoryRegionOps dimmnet2_lhb_timed_ops = {
    .read = dimmnet2_lhb_timed_read,
    .write = dimmnet2_cached_timed_write,
    .endianness = DEVICE_LITTLE_ENDIAN,
    .valid = { .min_access_size = 1, .max_access_size = 8 },
    .impl = { .min_access_size = 1, .max_access_size = 8 },
};

/* One timed overlay: the host's accesses to a region's window come to
 * OPS over the RAM below it. */
static void dimmnet2_timing_overlay(DN2State *s, MemoryRegion *mr, const MemoryRegionOps *ops,
                                    const char *name, hwaddr base)
{
    memory_region_init_io(mr, OBJECT(s), ops, s, name, DN2_REGION_SIZE);
    memory_region_add_subregion_overlap(&s->win.container, base, mr, 1);
}

/* With the model: the host's accesses to the LLCM and the Write Window
 * come to the device, to be charged (realize, after the window is built). */
void dimmnet2_timing_map(DN2State *s)
{
    if (!s->timing.timing_on || !s->win.llcm_ptr || !s->win.ww_ptr) {
        return;
    }
    dimmnet2_timing_overlay(s, &s->timing.llcm_timed, &dimmnet2_llcm_timed_ops,
                            "dimmnet2.llcm-timed", DN2_LLCM_BASE);
    dimmnet2_timing_overlay(s, &s->timing.ww_timed, &dimmnet2_ww_timed_ops,
                            "dimmnet2.ww-timed", DN2_WW_BASE);
    if (!s->win.pw_ptr || !s->win.lhb_ptr) {
        return;
    }
    dimmnet2_timing_overlay(s, &s->timing.pw_timed, &dimmnet2_pw_timed_ops,
                            "dimmnet2.pw-timed", DN2_PW_BASE);
    dimmnet2_timing_overlay(s, &s->timing.lhb_timed, &dimmnet2_lhb_timed_ops,
                            "dimmnet2.lhb-timed", DN2_LHB_BASE);
}

static void dimmnet2_timing_overlay_remove(DN2State *s, MemoryRegion *mr)
{
    if (memory_region_is_mapped(mr)) {
        memory_region_del_subregion(&s->win.container, mr);
        object_unparent(OBJECT(mr));
    }
}

void dimmnet2_timing_unmap(DN2State *s)
{
    if (!s->timing.timing_on) {
        return;
    }
    dimmnet2_timing_overlay_remove(s, &s->timing.llcm_timed);
    dimmnet2_timing_overlay_remove(s, &s->timing.ww_timed);
    dimmnet2_timing_overlay_remove(s, &s->timing.pw_timed);
    dimmnet2_timing_overlay_remove(s, &s->timing.lhb_timed);
}

/* ------------------------------------------------------------------ */
/* VMState: subsections of the device's (dimmnet2.c, vmstate_dimmnet2) */
/* ------------------------------------------------------------------ */

/*
 * The timing model (timing=thesis), in a subsection sent only when it is
 * on: when each unit is free again, what the host has paid for, the
 * packet the Receive Controller holds and the virtual time it takes it
 * (rx_kick), and the parameters, which must be the restoring board's.
 * Every field is a virtual time or a flag: none indexes anything.
 */
static bool dimmnet2_timing_needed(void *opaque)
{
    DN2State *s = opaque;

    return s->timing.timing_on;
}

static int dimmnet2_timing_pre_save(void *opaque)
{
    DN2State *s = opaque;

    memcpy(s->timing.tparam_in, s->timing.tparam, sizeof(s->timing.tparam));
    return 0;
}

static int dimmnet2_timing_post_load(void *opaque, int version_id)
{
    DN2State *s = opaque;
    unsigned i;

    DN2_LOAD_CHECK(s->timing.timing_on, "the stream holds the timing model's state "
                   "(timing=thesis) and this board runs without it");
    for (i = 0; i < DN2T__MAX; i++) {
        DN2_LOAD_CHECK(s->timing.tparam_in[i] == s->timing.tparam[i], "the timing model's "
                       "parameter %u is %u in the stream, %u here (timing-params=)",
                       i, s->timing.tparam_in[i], s->timing.tparam[i]);
    }
    DN2_LOAD_CHECK(s->rx.stalled <= 1, "Receive Controller flags");
    s->timing.t_acc_left = UINT64_MAX;     /* the vCPU's next access starts an instruction */
    s->timing.timing_loaded = true;
    return 0;
}

const VMStateDescription vmstate_dimmnet2_timing = {
    .name = "dimmnet2/timing",
    .version_id = 1,
    .minimum_version_id = 1,
    .needed = dimmnet2_timing_needed,
    .pre_save = dimmnet2_timing_pre_save,
    .post_load = dimmnet2_timing_post_load,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT32_ARRAY(timing.tparam_in, DN2State, DN2T__MAX),
        VMSTATE_UINT64(timing.t_tx_free, DN2State),
        VMSTATE_UINT64(timing.t_wc_free, DN2State),
        VMSTATE_UINT64(timing.t_sd_free, DN2State),
        VMSTATE_UINT64(timing.t_rc_free, DN2State),
        VMSTATE_UINT64(timing.t_status_last, DN2State),
        VMSTATE_UINT64(timing.t_data_start, DN2State),
        VMSTATE_UINT64(timing.t_data_end, DN2State),
        VMSTATE_UINT64(timing.t_host_busy, DN2State),
        VMSTATE_BOOL(timing.t_read_retry, DN2State),
        VMSTATE_UINT32(timing.t_retry_skip, DN2State),
        VMSTATE_UINT64(timing.t_bus_ps, DN2State),
        VMSTATE_UINT64(timing.t_post_land, DN2State),
        VMSTATE_UINT64(timing.t_link_out, DN2State),
        VMSTATE_UINT64(timing.t_rx_offer, DN2State),
        VMSTATE_BOOL(timing.rx_offered, DN2State),
        VMSTATE_UINT64(timing.t_rx_taken, DN2State),
        VMSTATE_BOOL(timing.rx_backlog, DN2State),
        VMSTATE_BOOL(timing.rx_offer_backlog, DN2State),
        VMSTATE_UINT8(rx.stalled, DN2State),
        VMSTATE_TIMER_PTR(rx.kick, DN2State),
        VMSTATE_TIMER_PTR(wc.strict_timer, DN2State),
        VMSTATE_END_OF_LIST()
    }
};

/*
 * The host's cache over the PW and the LH Buffer (timing=thesis): which
 * lines the board wrote since the host read them, and the run of fills.
 * A subsection of its own, sent whenever the model is on.
 */
static bool dimmnet2_fills_needed(void *opaque)
{
    DN2State *s = opaque;

    return s->timing.timing_on;
}

static int dimmnet2_fills_post_load(void *opaque, int version_id)
{
    DN2State *s = opaque;

    DN2_LOAD_CHECK(s->timing.timing_on, "the stream holds the timing model's fills "
                   "(timing=thesis) and this board runs without it");
    DN2_LOAD_CHECK(s->timing.t_fill_win == UINT32_MAX || s->timing.t_fill_win < DN2_TFILL_LINES,
                   "the timing model's last window of fills");
    return 0;
}

const VMStateDescription vmstate_dimmnet2_fills = {
    .name = "dimmnet2/host-fills",    /* not "dimmnet2/timing...": a subsection
                                       * named after another one's prefix is
                                       * looked up among that one's */
    .version_id = 1,
    .minimum_version_id = 1,
    .needed = dimmnet2_fills_needed,
    .post_load = dimmnet2_fills_post_load,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT64_ARRAY(timing.t_stale, DN2State, DN2_TFILL_LINES / 64),
        VMSTATE_UINT64(timing.t_fill_end, DN2State),
        VMSTATE_UINT32(timing.t_fill_win, DN2State),
        VMSTATE_UINT64_ARRAY(timing.t_fill_at, DN2State, DN2_TFILL_RUN),
        VMSTATE_END_OF_LIST()
    }
};
