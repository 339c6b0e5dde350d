/*
 * DIMMnet-2 host interface: the User Registers (one 4 KiB page per WID)
 * and the System Register (privileged), the rules for accessing them, and
 * the Controller Reset.
 *
 * The four buffers (Write Window, Prefetch Window, LLCM, LH Buffer) are
 * RAM the guest reaches directly (dimmnet2.c maps them); only these two
 * pages are MMIO, and the User Registers only for writes when the read
 * mirror is on (dimmnet2_ur_publish).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/log.h"
#include "exec/memory.h"
#include "dimmnet2-int.h"
#include "trace.h"

/* ------------------------------------------------------------------ */
/* User Registers                                                      */
/* ------------------------------------------------------------------ */

static uint64_t dimmnet2_ctl_status(DN2State *s, int wid)
{
    DN2Wid *w = &s->wid[wid];
    uint32_t size = dimmnet2_status_ring_bytes(w);
    uint64_t used = dimmnet2_status_ring_used(w);
    uint64_t v = 0;

    if (w->pending) {
        v |= DN2_CS_REQ_PENDING;
    }
    if (s->sys.sdimm_ready) {
        v |= DN2_CS_SDIMM_READY;
    }
    if (dimmnet2_wc_fifo_almost_full(s)) {
        v |= DN2_CS_FIFO_AFULL;
    }
    /* One record slot stays unused so that full and empty differ. */
    if (used + DN2_STATUS_REC_SIZE >= size) {
        v |= DN2_CS_STATUS_FULL;
    }
    if (used == 0) {
        v |= DN2_CS_STATUS_EMPTY;
    }
    v |= (uint64_t)w->ww_status & (DN2_CS_WW_MASK(0) | DN2_CS_WW_MASK(1) |
                                   DN2_CS_WW_MASK(2) | DN2_CS_WW_MASK(3));
    if (w->rx_ovf) {
        v |= DN2_CS_RX_OVF;
    }
    v |= DN2_FPUT(w->rx_err, DN2_CS_RX_ERR);
    if (w->req_error) {
        v |= DN2_CS_REQ_ERROR;
    }
    return v;
}

static uint64_t dimmnet2_prim_counter(DN2Wid *w)
{
    uint64_t v = 0;
    int i;

    for (i = 0; i < DN2_PC_NUM; i++) {
        v |= (uint64_t)(w->prim_counter[i] & DN2_PC_MASK) << (i * DN2_PC_BITS);
    }
    return v;
}

/* What a read of User Register off of process wid returns, without side
 * effects. */
static uint64_t dimmnet2_ur_value(DN2State *s, int wid, hwaddr off)
{
    DN2Wid *w = &s->wid[wid];

    switch (off) {
    case DN2_UR_CTL_STATUS:
        return dimmnet2_ctl_status(s, wid);
    case DN2_UR_PRIM_COUNTER:
        return dimmnet2_prim_counter(w);
    case DN2_UR_PW_FLAG:
        return w->pw_flag;
    case DN2_UR_PKT_COUNTER:
        return w->pkt_counter;
    case DN2_UR_LHB_ADDR:
        return w->lhb_tail;
    case DN2_UR_MODULE_STATE:
        return dimmnet2_wc_module_state(s);
    case DN2_UR_STATUS_ADDR:
        return w->status_tail;
    default:
        /* Write-only registers and holes read as zero [EMU]. */
        return 0;
    }
}

static uint64_t dimmnet2_ur_read(DN2State *s, int wid, hwaddr off)
{
    if (off == DN2_UR_CTL_STATUS) {
        s->wid[wid].polled = 1;     /* strict: the FIFO was checked */
    }
    return dimmnet2_ur_value(s, wid, off);
}

/*
 * The read mirror (read-mirror=on, choice #56).  The User Register pages
 * are a ROM device: host writes come to dimmnet2_ur_ops as before, but
 * host reads are served from a RAM copy of every readable register, which
 * the board keeps current.  A poll then costs the guest a load instead of
 * an exit to the device model under QEMU's global lock: the vCPU does not
 * wait for the main loop and the main loop does not wait for a polling
 * vCPU.  The copy is written here only, at the end of every entry into
 * the device (an MMIO write, a fabric input or timer, a bottom half, a
 * reset, an incoming migration) and after every packet the Receive
 * Controller takes (a vCPU polls while a batch comes in: a later packet's
 * effects in memory must not precede an earlier one's registers), always
 * under the BQL; a load never sees
 * a torn register (aligned 64-bit stores), and the data a register
 * announces (a status record, a delivered packet) was written before it.
 */
static const uint16_t dimmnet2_ur_readable[] = {
    DN2_UR_CTL_STATUS, DN2_UR_PRIM_COUNTER, DN2_UR_PW_FLAG, DN2_UR_PKT_COUNTER,
    DN2_UR_LHB_ADDR, DN2_UR_MODULE_STATE, DN2_UR_STATUS_ADDR,
};

void dimmnet2_ur_publish(DN2State *s)
{
    int wid;
    unsigned i;

    if (!s->win.ur_ptr) {
        return;
    }
    for (wid = 0; wid < DN2_NUM_WID; wid++) {
        uint8_t *page = s->win.ur_ptr + wid * DN2_UR_WID_STRIDE;

        for (i = 0; i < ARRAY_SIZE(dimmnet2_ur_readable); i++) {
            uint16_t off = dimmnet2_ur_readable[i];
            uint64_t *p = (uint64_t *)(page + off);
            uint64_t v = cpu_to_le64(dimmnet2_ur_value(s, wid, off));

            if (qatomic_read(p) != v) {
                qatomic_store_release(p, v);
            }
        }
    }
}

static void dimmnet2_status_ring_reset(DN2Wid *w)
{
    w->status_head = w->status_init;
    w->status_tail = w->status_init;
}

static void dimmnet2_ur_write(DN2State *s, int wid, hwaddr off, uint64_t v)
{
    DN2Wid *w = &s->wid[wid];

    switch (off) {
    case DN2_UR_CMD0_UPPER:
        w->upper[0] = v;
        w->upper_seen = 1;
        break;
    case DN2_UR_CMD1_UPPER:
        w->upper[1] = v;
        w->upper_seen = 1;
        break;
    case DN2_UR_CMD_EX:
        w->ex = v;
        if (!w->upper_seen) {
            dimmnet2_strict_report(s, DN2_SV_EX_ORDER, wid, DN2_UR_CMD_EX,
                              "Command Ex written before Command Upper");
        }
        break;
    case DN2_UR_CMD0_LOWER:
        dimmnet2_wc_doorbell(s, wid, 0, v);
        break;
    case DN2_UR_CMD1_LOWER:
        dimmnet2_wc_doorbell(s, wid, 1, v);
        break;
    case DN2_UR_PRIM_COUNTER:
        /* Also clears this process's error bits 17-20, so they are not
         * sticky until a Controller Reset (choice #47). */
        memset(w->prim_counter, 0, sizeof(w->prim_counter));
        w->req_error = 0;
        w->rx_err = 0;
        w->rx_ovf = 0;
        break;
    case DN2_UR_PKT_COUNTER:
        w->pkt_counter = 0;
        break;
    case DN2_UR_IPUSH_AREA_SIZE:
        w->ipush_area = v & DN2_IPUSH_AREA_MASK;
        dimmnet2_rx_resume(s);
        break;
    case DN2_UR_LHB_ADDR:
        w->lhb_head = v & DN2_LHB_ADDR_MASK & ~(DN2_LHB_ENTRY - 1);
        dimmnet2_rx_resume(s);  /* room may have appeared */
        break;
    case DN2_UR_STATUS_INIT:
        w->status_init = v & DN2_STATUS_INIT_MASK & ~(DN2_STATUS_REC_SIZE - 1);
        dimmnet2_status_ring_reset(w);
        dimmnet2_rx_resume(s);
        break;
    case DN2_UR_STATUS_SIZE:
        w->status_size_reg = DN2_FGET(v, DN2_STATUS_SIZE_CODE);
        dimmnet2_status_ring_reset(w);
        dimmnet2_rx_resume(s);
        break;
    case DN2_UR_STATUS_ADDR:
        w->status_head = v & DN2_STATUS_ADDR_MASK & ~(DN2_STATUS_REC_SIZE - 1);
        dimmnet2_rx_resume(s);
        break;
    case DN2_UR_CMD_EX_FLAG:
        w->ex_flag = v & 1;
        break;
    default:
        /* Read-only registers and holes: writes are ignored. */
        qemu_log_mask(LOG_GUEST_ERROR,
                      "dimmnet2: write to read-only/unused UR%d offset 0x%"
                      HWADDR_PRIx "\n", wid, off);
        break;
    }
}

/* ------------------------------------------------------------------ */
/* System Register                                                     */
/* ------------------------------------------------------------------ */

static uint64_t dimmnet2_sr_read(DN2State *s, hwaddr off)
{
    switch (off) {
    case DN2_SR_SMA:
        return dn2_sma_encode(s->sys.sma_lid, s->sys.link_state);
    case DN2_SR_CTL_RESET:
        /* "Any read or write resets the NIC controller." */
        dimmnet2_controller_reset(s);
        dimmnet2_ur_publish(s);
        return 0;
    default:
        return 0;
    }
}

static void dimmnet2_sr_write(DN2State *s, hwaddr off, uint64_t v)
{
    switch (off) {
    case DN2_SR_SDIMM_INIT:
        if (v & 1) {
            s->sys.sdimm_ready = 1;
            trace_dimmnet2_sdimm_init(s->index, dimmnet2_sdimm_area(s));
            dimmnet2_wc_kick(s);
        }
        break;
    case DN2_SR_SDIMM_CAPACITY:
        s->sys.sdimm_cap_reg = DN2_FGET(v, DN2_SDIMM_CAP_CODE);
        if (dn2_sdimm_module_bytes(v) > s->win.sodimm_bytes / 2) {
            qemu_log_mask(LOG_GUEST_ERROR, "dimmnet2: SO-DIMM capacity 0x%"
                          PRIx64 " per module exceeds the 0x%" PRIx64
                          " installed; using what is installed\n",
                          dn2_sdimm_module_bytes(v), s->win.sodimm_bytes / 2);
        }
        break;
    case DN2_SR_MTU:
        s->sys.mtu_reg = DN2_FGET(v, DN2_MTU_CODE);
        break;
    case DN2_SR_SMA:
        /* SMA software reset: the port forgets its LID and renegotiates. */
        dimmnet2_port_sma_reset(s);
        break;
    case DN2_SR_LID:
        s->sys.lid = DN2_FGET(v, DN2_SR_LID_VALUE);
        break;
    case DN2_SR_PGID0:
    case DN2_SR_PGID1: {
        int w = off == DN2_SR_PGID1;
        /* Writing a PGID is how a process is given a WID: from then on
         * packets for that WID are accepted (choice #32). */
        s->sys.pgid[w] = DN2_FGET(v, DN2_SR_PGID_VALUE);
        s->wid[w].pgid_set = 1;
        break;
    }
    case DN2_SR_CTL_RESET:
        dimmnet2_controller_reset(s);
        break;
    case DN2_SR_AMT: {
        struct dn2_amt_req a;
        int dwid;

        /* Per receiving process when bit 31 names one, else both: two
         * processes of a board can each have a ring for the same sender
         * (choice #52). */
        dn2_amt_decode(v, &a);
        for (dwid = 0; dwid < DN2_NUM_WID; dwid++) {
            if (dn2_amt_req_for(&a, dwid)) {
                s->sys.amt[dimmnet2_amt_index(a.lid, a.wid, dwid)] = dn2_amt_slot(a.value);
                trace_dimmnet2_amt_set(s->index, a.lid, a.wid, dwid, a.value);
            }
        }
        break;
    }
    default:
        qemu_log_mask(LOG_GUEST_ERROR,
                      "dimmnet2: write to unused System Register offset 0x%"
                      HWADDR_PRIx "\n", off);
        break;
    }
}

/* ------------------------------------------------------------------ */
/* MMIO dispatch                                                       */
/* ------------------------------------------------------------------ */

/*
 * Registers are 64 bits wide and the real board is accessed in 64- or
 * 128-bit units (a 128-bit store arrives as two 64-bit halves).  Reads of
 * one 32-bit half are served; writes must be aligned 64-bit stores.  Any
 * other access is ignored and counted [EMU].
 */
static bool dimmnet2_access_ok(DN2State *s, hwaddr addr, unsigned size, bool write)
{
    if (size == 8 && !(addr & 7)) {
        return true;
    }
    if (!write && size == 4 && !(addr & 3)) {
        return true;
    }
    DIMMNET2_GUEST_ERROR(s, DN2_STAT_BAD_ACCESS, bad_access,
                         "%u-byte %s at register offset 0x%" PRIx64 " ignored "
                         "(64-bit accesses only)", size, write ? "write" : "read",
                         (uint64_t)addr);
    return false;
}

static uint64_t dimmnet2_reg_read(DN2State *s, hwaddr addr, unsigned size,
                             bool system)
{
    hwaddr reg = addr & ~(hwaddr)7;
    uint64_t v;
    int wid = 0;

    if (!dimmnet2_access_ok(s, addr, size, false)) {
        return 0;
    }
    /* timing=thesis: the vCPU waits the uncached read's time, and the read
     * returns what the board holds when it returns (dimmnet2-timing.c) */
    dimmnet2_timing_uc_access(s, false);
    if (system) {
        v = reg < DN2_SR_PAGE ? dimmnet2_sr_read(s, reg) : 0;
    } else if (reg < DN2_NUM_WID * DN2_UR_WID_STRIDE) {
        wid = reg / DN2_UR_WID_STRIDE;
        v = dimmnet2_ur_read(s, wid, reg % DN2_UR_WID_STRIDE);
    } else {
        v = 0;
    }
    if (size == 4) {
        v = (addr & 4) ? v >> 32 : (uint32_t)v;
    }
    trace_dimmnet2_reg_read(s->index, (system ? DN2_SR_BASE : DN2_UR_BASE) + addr, v);
    return v;
}

static void dimmnet2_reg_write(DN2State *s, hwaddr addr, uint64_t v, unsigned size,
                          bool system)
{
    /* timing=thesis: the uncached store's time, before it takes effect
     * (the instruction may be retried: dimmnet2-timing.c) */
    dimmnet2_timing_uc_access(s, true);
    trace_dimmnet2_reg_write(s->index, (system ? DN2_SR_BASE : DN2_UR_BASE) + addr, v);
    if (!dimmnet2_access_ok(s, addr, size, true)) {
        return;
    }
    if (system) {
        if (addr < DN2_SR_PAGE) {
            dimmnet2_sr_write(s, addr, v);
        }
    } else if (addr < DN2_NUM_WID * DN2_UR_WID_STRIDE) {
        dimmnet2_ur_write(s, addr / DN2_UR_WID_STRIDE, addr % DN2_UR_WID_STRIDE, v);
    } else {
        qemu_log_mask(LOG_GUEST_ERROR, "dimmnet2: write to unused User "
                      "Register offset 0x%" HWADDR_PRIx "\n", addr);
    }
    dimmnet2_ur_publish(s);
}

static uint64_t dimmnet2_ur_mmio_read(void *opaque, hwaddr addr, unsigned size)
{
    return dimmnet2_reg_read(opaque, addr, size, false);
}

static void dimmnet2_ur_mmio_write(void *opaque, hwaddr addr, uint64_t v,
                              unsigned size)
{
    dimmnet2_reg_write(opaque, addr, v, size, false);
}

static uint64_t dimmnet2_sr_mmio_read(void *opaque, hwaddr addr, unsigned size)
{
    return dimmnet2_reg_read(opaque, addr, size, true);
}

static void dimmnet2_sr_mmio_write(void *opaque, hwaddr addr, uint64_t v,
                              unsigned size)
{
    dimmnet2_reg_write(opaque, addr, v, size, true);
}

const MemoryRegionOps dimmnet2_ur_ops = {
    .read = dimmnet2_ur_mmio_read,
    .write = dimmnet2_ur_mmio_write,
    .endianness = DEVICE_LITTLE_ENDIAN,
    .valid = { .min_access_size = 1, .max_access_size = 8 },
    .impl = { .min_access_size = 1, .max_access_size = 8 },
};

const MemoryRegionOps dimmnet2_sr_ops = {
    .read = dimmnet2_sr_mmio_read,
    .write = dimmnet2_sr_mmio_write,
    .endianness = DEVICE_LITTLE_ENDIAN,
    .valid = { .min_access_size = 1, .max_access_size = 8 },
    .impl = { .min_access_size = 1, .max_access_size = 8 },
};

/* ------------------------------------------------------------------ */
/* Controller Reset                                                    */
/* ------------------------------------------------------------------ */

/*
 * Controller Reset (System Register 0xa00), and the first half of a
 * power-on reset: the Core Logic returns to its power-on state -- Request
 * FIFO, executors, counters, status, ring pointers, configuration
 * registers, AMT Address Table, LH flags.  Each unit resets itself, once,
 * from here.  The SMA (the LID the subnet manager gave and the link state:
 * re-read from the port) and the contents of the SO-DIMMs, Write Window,
 * Prefetch Window and LLCM are kept [EMU].
 */
void dimmnet2_controller_reset(DN2State *s)
{
    int i;

    trace_dimmnet2_controller_reset(s->index);
    s->sys.sdimm_ready = 0;
    s->sys.sdimm_cap_reg = 0;
    s->sys.mtu_reg = 0;
    s->sys.lid = 0;
    s->sys.pgid[0] = s->sys.pgid[1] = 0;
    memset(s->sys.amt, 0, sizeof(s->sys.amt));
    for (i = 0; i < DN2_NUM_WID; i++) {
        memset(&s->wid[i], 0, sizeof(s->wid[i]));
        s->wid[i].pw_flag = DN2_PWF_ALL;   /* nothing being fetched */
    }
    /* "Reset clears the LHS flags": the LH Buffer starts all-zero. */
    memset(s->win.lhb_ptr, 0, DN2_REGION_SIZE);
    memory_region_set_dirty(&s->win.lhb, 0, DN2_REGION_SIZE);
    dimmnet2_wc_reset(s);
    dimmnet2_rx_reset(s);
    /* Last: the port offers what it holds again (to processes that no
     * longer exist, so it is dropped and counted). */
    dimmnet2_port_reset(s);
}
