/*
 * DIMMnet-2 memory-slot network interface board (Keio/TUAT/Hitachi, 2007).
 *
 * The board sits in a DDR memory slot; the host sees a 0x60000-byte window
 * of on-board buffers and registers at a fixed physical address:
 *
 *   0x00000 Write Window     RAM     host writes, NIC reads
 *   0x10000 Prefetch Window  RAM, ro host reads (writes discarded), NIC writes
 *   0x20000 LLCM             RAM     both read and write
 *   0x30000 LH Buffer        RAM, ro host reads (writes discarded), NIC writes
 *   0x40000 User Registers   MMIO    one 4 KiB page per WID; reads from a
 *                                    RAM mirror with read-mirror=on
 *   0x50000 System Register  MMIO    privileged
 *
 * The on-board SO-DIMMs come from a memory backend ("memdev") and are only
 * reached through primitives.  The guest finds the window through an ACPI
 * device (_HID DNET0002) whose _CRS is the window.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/log.h"
#include "qemu/main-loop.h"
#include "qemu/units.h"
#include "qemu/timer.h"
#include "qemu/bswap.h"
#include "qapi/error.h"
#include "qapi/visitor.h"
#include "hw/qdev-properties.h"
#include "hw/acpi/acpi_aml_interface.h"
#include "hw/acpi/aml-build.h"
#include "migration/vmstate.h"
#include "system/hostmem.h"
#include "system/cpu-timers.h"
#include "system/qtest.h"
#include "system/runstate.h"
#include "qemu/error-report.h"
#include "exec/memory.h"
#include "dimmnet2-int.h"
#include "trace.h"

/* ------------------------------------------------------------------ */
/* Power-on reset                                                      */
/* ------------------------------------------------------------------ */

/* A power-on reset is a Controller Reset (which re-reads the SMA from the
 * port: a reboot does not unplug the cable) that also clears the buffers. */
static void dimmnet2_reset_hold(Object *obj, ResetType type)
{
    DN2State *s = DIMMNET2(obj);

    dimmnet2_controller_reset(s);
    memset(s->win.ww_ptr, 0, DN2_REGION_SIZE);
    memset(s->win.pw_ptr, 0, DN2_REGION_SIZE);
    memset(s->win.llcm_ptr, 0, DN2_REGION_SIZE);
    memory_region_set_dirty(&s->win.ww, 0, DN2_REGION_SIZE);
    memory_region_set_dirty(&s->win.pw, 0, DN2_REGION_SIZE);
    memory_region_set_dirty(&s->win.llcm, 0, DN2_REGION_SIZE);
    dimmnet2_ur_publish(s);
}

/* ------------------------------------------------------------------ */
/* ACPI                                                                */
/* ------------------------------------------------------------------ */

static void dimmnet2_build_aml(AcpiDevAmlIf *adev, Aml *scope)
{
    DN2State *s = DIMMNET2(adev);
    char name[5];
    Aml *dev, *crs;

    snprintf(name, sizeof(name), "%s%X", DN2_ACPI_NAME, s->index & 0xf);
    dev = aml_device("%s", name);
    aml_append(dev, aml_name_decl("_HID", aml_string(DN2_ACPI_HID)));
    aml_append(dev, aml_name_decl("_STR", aml_unicode("DIMMnet-2 network interface")));
    aml_append(dev, aml_name_decl("_UID", aml_int(s->index)));
    aml_append(dev, aml_name_decl("_STA", aml_int(0xF)));
    crs = aml_resource_template();
    aml_append(crs, aml_memory32_fixed(s->params.base, DN2_WINDOW_SIZE, AML_READ_WRITE));
    aml_append(dev, aml_name_decl("_CRS", crs));
    aml_append(scope, dev);
}

/* ------------------------------------------------------------------ */
/* Realize                                                             */
/* ------------------------------------------------------------------ */

#define DN2_BASE_AUTO 0

typedef struct DN2BaseCheck {
    DN2State *self;
    uint64_t base;
    int count;
    bool clash;
} DN2BaseCheck;

static int dimmnet2_base_check_one(Object *obj, void *opaque)
{
    DN2BaseCheck *c = opaque;
    DN2State *o;

    if (!object_dynamic_cast(obj, TYPE_DIMMNET2)) {
        return 0;
    }
    o = DIMMNET2(obj);
    if (o == c->self || !DEVICE(o)->realized) {
        return 0;
    }
    c->count++;
    if (o->params.base < c->base + DN2_WINDOW_SIZE && c->base < o->params.base + DN2_WINDOW_SIZE) {
        c->clash = true;
    }
    return 0;
}

static bool dimmnet2_base_taken(Object *obj, void *opaque)
{
    DN2BaseCheck *c = opaque;

    c->clash = false;
    c->count = 0;
    object_child_foreach_recursive(object_get_root(), dimmnet2_base_check_one, c);
    return c->clash;
}

static bool dimmnet2_pick_base(DN2State *s, Error **errp)
{
    DN2BaseCheck c = { .self = s };
    static const uint64_t defaults[] = { DN2_DEFAULT_BASE0, DN2_DEFAULT_BASE1 };
    int i;

    if (s->params.base == DN2_BASE_AUTO) {
        for (i = 0; i < ARRAY_SIZE(defaults); i++) {
            c.base = defaults[i];
            if (!dimmnet2_base_taken(OBJECT(s), &c)) {
                s->params.base = defaults[i];
                break;
            }
        }
        if (s->params.base == DN2_BASE_AUTO) {
            error_setg(errp, "dimmnet2: both default addresses (0x%x, 0x%x) "
                       "are taken; give this board base=<address>",
                       DN2_DEFAULT_BASE0, DN2_DEFAULT_BASE1);
            return false;
        }
    }
    if (s->params.base & (DN2_BASE_ALIGN - 1)) {
        error_setg(errp, "dimmnet2: base 0x%" PRIx64 " must be 64 KiB aligned",
                   s->params.base);
        return false;
    }
    if (s->params.base > 4 * GiB - DN2_WINDOW_SIZE) {      /* no wrap-around */
        error_setg(errp, "dimmnet2: base 0x%" PRIx64 " puts the 0x%x-byte "
                   "window above 4 GiB", s->params.base, DN2_WINDOW_SIZE);
        return false;
    }
    c.base = s->params.base;
    if (dimmnet2_base_taken(OBJECT(s), &c)) {
        error_setg(errp, "dimmnet2: window at 0x%" PRIx64 " overlaps another "
                   "dimmnet2 board", s->params.base);
        return false;
    }
    s->index = c.count;
    return true;
}

/* The window must not cover anything already in the address space (RAM,
 * the BIOS ROM, the IOAPIC, another device): QEMU would otherwise start
 * with two regions at one address and, for a ROM, fail in its reset. */
static bool dimmnet2_check_free(DN2State *s, MemoryRegion *as, Error **errp)
{
    MemoryRegionSection sec = memory_region_find(as, s->params.base, DN2_WINDOW_SIZE);

    if (sec.mr) {
        error_setg(errp, "dimmnet2: base 0x%" PRIx64 ": the 0x%x-byte window "
                   "would overlap '%s' at 0x%" PRIx64 "; choose a free range "
                   "(the default 0xfec10000 is free on pc and q35)",
                   s->params.base, DN2_WINDOW_SIZE, memory_region_name(sec.mr),
                   (uint64_t)sec.offset_within_address_space);
        memory_region_unref(sec.mr);
        return false;
    }
    return true;
}

/* Properties that only mean something with a cable. */
static bool dimmnet2_check_link_props(DN2State *s, Error **errp)
{
    if (!s->params.switch_addr) {
        const char *bad = s->params.local_addr ? "local" : s->params.rx_thread ? "rx-thread" :
                          s->params.guid ? "guid" : s->params.secret_id ? "secret" :
                          s->params.lid_wanted ? "lid" : NULL;
        if (bad) {
            error_setg(errp, "dimmnet2: %s= needs switch=HOST:PORT (it only "
                       "applies to a board attached to a dn2-switch)", bad);
            return false;
        }
    }
    if (s->params.coalesce_us > 1000 * 1000) {
        error_setg(errp, "dimmnet2: coalesce-us=%u is over a second; give 0 "
                   "(send at once) up to 1000000", s->params.coalesce_us);
        return false;
    }
    if (s->params.lid_wanted && !dn2_lid_assignable(s->params.lid_wanted)) {
        error_setg(errp, "dimmnet2: lid=0x%x is not a LID the subnet manager "
                   "can assign (a unicast LID of CLID 1..0x%x)", s->params.lid_wanted,
                   DN2_CLID_MCAST_FIRST - 1);
        return false;
    }
    if (s->vt.on) {
        if (!icount_enabled() && !qtest_enabled()) {
            error_setg(errp, "dimmnet2: vtime=on needs the virtual clock to "
                       "count instructions: run QEMU with -accel tcg -icount "
                       "shift=N,sleep=off,align=off (docs/virtual-time.md)");
            return false;
        }
        if (s->params.rx_thread) {
            error_setg(errp, "dimmnet2: vtime=on and rx-thread=on do not go "
                       "together: under virtual time the board receives in "
                       "its own waits and timers; leave rx-thread off");
            return false;
        }
        if (!s->vt.latency_ns || s->vt.latency_ns > 1000 * 1000 * 1000) {
            error_setg(errp, "dimmnet2: vt-latency-ns=%u: give the modelled "
                       "latency of a packet, 1 ns to 1 s", s->vt.latency_ns);
            return false;
        }
    }
    if (s->vt.sync && strcmp(s->vt.sync, "udp") && strcmp(s->vt.sync, "shm")) {
        error_setg(errp, "dimmnet2: vt-sync=%s: give udp (grants from the "
                   "dn2-switch, the default) or shm (a same-host sync domain, "
                   "vt-shm=PATH)", s->vt.sync);
        return false;
    }
    s->vt.shm_on = s->vt.sync && !strcmp(s->vt.sync, "shm");
    if (s->vt.shm_path && !s->vt.shm_on) {
        error_setg(errp, "dimmnet2: vt-shm=%s needs vt-sync=shm", s->vt.shm_path);
        return false;
    }
    if (s->vt.shm_on) {
        if (!s->vt.on || !s->params.switch_addr) {
            error_setg(errp, "dimmnet2: vt-sync=shm needs vtime=on and "
                       "switch=HOST:PORT (the switch still assigns the LIDs "
                       "and routes)");
            return false;
        }
        if (!s->vt.shm_path || !*s->vt.shm_path) {
            error_setg(errp, "dimmnet2: vt-sync=shm needs vt-shm=PATH, the file "
                       "dn2-switch --vt-sync shm --vt-shm PATH creates");
            return false;
        }
        if (!s->params.lid_wanted) {
            error_setg(errp, "dimmnet2: vt-sync=shm needs lid=: the board's "
                       "LID gives its member index in the sync domain (the "
                       "board of CLID c is member c - 1)");
            return false;
        }
    }
    if (s->params.rc_timeout_ms > 3600 * 1000) {
        error_setg(errp, "dimmnet2: rc-timeout-ms=%u is over an hour; give "
                   "0 (never abandon) or at most 3600000", s->params.rc_timeout_ms);
        return false;
    }
    return true;
}

/*
 * The four buffers are RAM.  The Prefetch Window and the LH Buffer are
 * read-only RAM for the host (the board's host interface has no write path
 * into them): host writes are discarded.  They were ROM devices (ROMD) at
 * first, but QEMU does not clamp a direct read of a ROM device at its end,
 * so a 4- or 8-byte read straddling the end copied past the RAM block.
 */
static bool dimmnet2_init_ram(DN2State *s, MemoryRegion *mr, const char *what,
                         bool host_readonly, uint8_t **ptr, Error **errp)
{
    g_autofree char *name = g_strdup_printf("dimmnet2.%" PRIx64 ".%s",
                                            s->params.base, what);
    bool ok;

    if (host_readonly) {
        ok = memory_region_init_rom(mr, OBJECT(s), name, DN2_REGION_SIZE, errp);
    } else {
        ok = memory_region_init_ram(mr, OBJECT(s), name, DN2_REGION_SIZE, errp);
    }
    if (ok) {
        *ptr = memory_region_get_ram_ptr(mr);
    }
    return ok;
}

/*
 * The User Register pages.  With read-mirror=on (the default; strict mode
 * turns it off, as it must see every Controller Status poll) they are a ROM
 * device whose RAM holds a copy of every readable register
 * (dimmnet2_ur_publish, choice #56): reads are loads, writes still come to
 * dimmnet2_ur_ops.  QEMU does not clamp a direct read of a ROM device at the
 * region's end (see dimmnet2_init_ram), so the ROM device is one page longer
 * than the window shows and the window maps an alias of its first 64 KiB: a
 * read across the end stays inside the RAM block and reads zeros there.
 */
static bool dimmnet2_init_ur(DN2State *s, Error **errp)
{
    g_autofree char *name = NULL;

    if (!s->params.read_mirror || s->params.strict) {
        memory_region_init_io(&s->win.ur, OBJECT(s), &dimmnet2_ur_ops, s,
                              "dimmnet2.ur", DN2_REGION_SIZE);
        return true;
    }
    name = g_strdup_printf("dimmnet2.%" PRIx64 ".ur-mirror", s->params.base);
    if (!memory_region_init_rom_device_nomigrate(&s->win.ur_mirror, OBJECT(s),
                                                 &dimmnet2_ur_ops, s, name,
                                                 DN2_REGION_SIZE + DN2_UR_PAGE,
                                                 errp)) {
        return false;
    }
    s->win.ur_ptr = memory_region_get_ram_ptr(&s->win.ur_mirror);
    memset(s->win.ur_ptr, 0, DN2_REGION_SIZE + DN2_UR_PAGE);
    memory_region_init_alias(&s->win.ur, OBJECT(s), "dimmnet2.ur", &s->win.ur_mirror,
                             0, DN2_REGION_SIZE);
    return true;        /* realize publishes once every unit is set up */
}

/* What the port reports upward. */
static DN2RxResult dimmnet2_port_deliver(DN2State *s, uint16_t slid,
                                         const uint8_t *pkt, size_t len)
{
    return dimmnet2_rx_packet(s, slid, pkt, len);
}

static const DN2PortOps dimmnet2_port_ops = {
    .deliver = dimmnet2_port_deliver,
    .news = dimmnet2_wc_news,
};

/* Every unit's teardown, in the reverse order of realize; each copes with
 * a unit that was never (or only partly) set up. */
static void dimmnet2_units_fini(DN2State *s)
{
    dimmnet2_strict_fini(s);
    dimmnet2_port_fini(s);
    dimmnet2_rx_fini(s);
    dimmnet2_wc_fini(s);
}

static void dimmnet2_realize(DeviceState *dev, Error **errp)
{
    DN2State *s = DIMMNET2(dev);
    g_autofree char *cname = NULL;

    s->entry_done = dimmnet2_ur_publish;
    if (!dimmnet2_pick_base(s, errp)) {
        return;
    }
    if (!dimmnet2_check_free(s, isa_address_space(ISA_DEVICE(dev)), errp)) {
        return;
    }
    if (s->params.fifo_depth < 2 || s->params.fifo_depth > DIMMNET2_FIFO_MAX) {
        error_setg(errp, "dimmnet2: fifo-depth %u out of range 2..%d",
                   s->params.fifo_depth, DIMMNET2_FIFO_MAX);
        return;
    }
    if (!dimmnet2_check_link_props(s, errp) || !dimmnet2_timing_init(s, errp)) {
        return;
    }

    /* SO-DIMMs: a memory backend, or our own RAM of sodimm-size. */
    if (s->params.hostmem) {
        if (host_memory_backend_is_mapped(s->params.hostmem)) {
            error_setg(errp, "dimmnet2: memdev '%s' is already in use",
                       object_get_canonical_path_component(OBJECT(s->params.hostmem)));
            return;
        }
        s->win.sodimm_mr = host_memory_backend_get_memory(s->params.hostmem);
        host_memory_backend_set_mapped(s->params.hostmem, true);
        vmstate_register_ram(s->win.sodimm_mr, dev);
    } else {
        g_autofree char *name = g_strdup_printf("dimmnet2.%" PRIx64 ".sodimm",
                                                s->params.base);
        uint64_t size = s->params.sodimm_size;

        /* Checked before any memory is made of it. */
        if (size < 2 * MiB || (size & (size - 1)) || size > DIMMNET2_SODIMM_MAX) {
            error_setg(errp, "dimmnet2: sodimm-size 0x%" PRIx64 " must be a "
                       "power of two from 2 MiB (two interleaved modules) to "
                       "%u GiB (two 8 GiB modules, the largest Capacity "
                       "setting)", s->params.sodimm_size,
                       (unsigned)(DIMMNET2_SODIMM_MAX / GiB));
            return;
        }
        if (!memory_region_init_ram(&s->win.sodimm_own, OBJECT(s), name,
                                    s->params.sodimm_size, errp)) {
            return;
        }
        s->win.sodimm_mr = &s->win.sodimm_own;
    }
    s->win.sodimm_bytes = memory_region_size(s->win.sodimm_mr);
    if (s->win.sodimm_bytes < 2 * MiB || (s->win.sodimm_bytes & (s->win.sodimm_bytes - 1)) ||
        s->win.sodimm_bytes > DIMMNET2_SODIMM_MAX) {
        error_setg(errp, "dimmnet2: SO-DIMM memory must be a power of two from "
                   "2 MiB (two interleaved modules) to %u GiB, not 0x%" PRIx64,
                   (unsigned)(DIMMNET2_SODIMM_MAX / GiB), s->win.sodimm_bytes);
        goto fail_sodimm;
    }
    s->win.sodimm_ptr = memory_region_get_ram_ptr(s->win.sodimm_mr);

    if (!dimmnet2_init_ram(s, &s->win.ww, "ww", false, &s->win.ww_ptr, errp) ||
        !dimmnet2_init_ram(s, &s->win.pw, "pw", true, &s->win.pw_ptr, errp) ||
        !dimmnet2_init_ram(s, &s->win.llcm, "llcm", false, &s->win.llcm_ptr, errp) ||
        !dimmnet2_init_ram(s, &s->win.lhb, "lhb", true, &s->win.lhb_ptr, errp)) {
        goto fail_sodimm;
    }

    cname = g_strdup_printf("dimmnet2.%" PRIx64, s->params.base);
    memory_region_init(&s->win.container, OBJECT(s), cname, DN2_WINDOW_SIZE);
    if (!dimmnet2_init_ur(s, errp)) {
        goto fail_sodimm;
    }
    memory_region_init_io(&s->win.sr, OBJECT(s), &dimmnet2_sr_ops, s, "dimmnet2.sr",
                          DN2_REGION_SIZE);
    memory_region_add_subregion(&s->win.container, DN2_WW_BASE, &s->win.ww);
    memory_region_add_subregion(&s->win.container, DN2_PW_BASE, &s->win.pw);
    memory_region_add_subregion(&s->win.container, DN2_LLCM_BASE, &s->win.llcm);
    memory_region_add_subregion(&s->win.container, DN2_LHB_BASE, &s->win.lhb);
    memory_region_add_subregion(&s->win.container, DN2_UR_BASE, &s->win.ur);
    memory_region_add_subregion(&s->win.container, DN2_SR_BASE, &s->win.sr);
    memory_region_add_subregion(isa_address_space(ISA_DEVICE(dev)), s->params.base,
                                &s->win.container);

    dimmnet2_wc_init(s);
    dimmnet2_rx_init(s);
    if (!dimmnet2_port_init(s, &dimmnet2_port_ops, errp) ||
        !dimmnet2_strict_init(s, errp)) {
        dimmnet2_units_fini(s);
        goto fail_sodimm;
    }
    dimmnet2_ur_publish(s);
    trace_dimmnet2_realize(s->index, s->params.base, s->win.sodimm_bytes);
    return;

fail_sodimm:
    if (s->params.hostmem) {
        vmstate_unregister_ram(s->win.sodimm_mr, dev);
        host_memory_backend_set_mapped(s->params.hostmem, false);
    }
}

/* ------------------------------------------------------------------ */
/* VMState                                                             */
/* ------------------------------------------------------------------ */

/* timing=thesis: when a queued request word reaches the board (post-ns) */
static bool dimmnet2_fifo_entry_land_needed(void *opaque)
{
    return ((DN2FifoEntry *)opaque)->t_land != 0;
}

static const VMStateDescription vmstate_dimmnet2_fifo_entry_land = {
    .name = "dimmnet2/fifo-entry/land",
    .version_id = 1,
    .minimum_version_id = 1,
    .needed = dimmnet2_fifo_entry_land_needed,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT64(t_land, DN2FifoEntry),
        VMSTATE_END_OF_LIST()
    }
};

static const VMStateDescription vmstate_dimmnet2_fifo_entry = {
    .name = "dimmnet2/fifo-entry",
    .version_id = 1,
    .minimum_version_id = 1,
    .subsections = (const VMStateDescription * const []) {
        &vmstate_dimmnet2_fifo_entry_land,
        NULL
    },
    .fields = (const VMStateField[]) {
        VMSTATE_UINT64(lower, DN2FifoEntry),
        VMSTATE_UINT64(upper, DN2FifoEntry),
        VMSTATE_UINT64(ex, DN2FifoEntry),
        VMSTATE_UINT8(rflag, DN2FifoEntry),
        VMSTATE_UINT8(wid, DN2FifoEntry),
        VMSTATE_UINT8(has_ex, DN2FifoEntry),
        VMSTATE_UINT8(from_rc, DN2FifoEntry),
        VMSTATE_END_OF_LIST()
    }
};

static const VMStateDescription vmstate_dimmnet2_copy = {
    .name = "dimmnet2/copy",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT8(valid, DN2CopySrc),
        VMSTATE_UINT8(form, DN2CopySrc),
        VMSTATE_UINT8(dtype, DN2CopySrc),
        VMSTATE_UINT8(iter, DN2CopySrc),
        VMSTATE_UINT32(src, DN2CopySrc),
        VMSTATE_UINT32(arg, DN2CopySrc),
        VMSTATE_END_OF_LIST()
    }
};

static const VMStateDescription vmstate_dimmnet2_lhs = {
    .name = "dimmnet2/lhs",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT8(valid, DN2LhsMsg),
        VMSTATE_UINT8(swid, DN2LhsMsg),
        VMSTATE_UINT16(slid, DN2LhsMsg),
        VMSTATE_UINT16(entry, DN2LhsMsg),
        VMSTATE_UINT32(pointer, DN2LhsMsg),
        VMSTATE_UINT32(total, DN2LhsMsg),
        VMSTATE_UINT32(got, DN2LhsMsg),
        VMSTATE_END_OF_LIST()
    }
};

static const VMStateDescription vmstate_dimmnet2_wid = {
    .name = "dimmnet2/wid",
    .version_id = 2,
    .minimum_version_id = 2,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT64_ARRAY(upper, DN2Wid, 2),
        VMSTATE_UINT64(ex, DN2Wid),
        VMSTATE_UINT8(ex_flag, DN2Wid),
        VMSTATE_UINT8(pending, DN2Wid),
        VMSTATE_UINT8(req_error, DN2Wid),
        VMSTATE_UINT8(rx_err, DN2Wid),
        VMSTATE_UINT8(rx_ovf, DN2Wid),
        VMSTATE_STRUCT(pending_req, DN2Wid, 1, vmstate_dimmnet2_fifo_entry, DN2FifoEntry),
        VMSTATE_UINT32(ww_status, DN2Wid),
        VMSTATE_UINT16_ARRAY(prim_counter, DN2Wid, DN2_PC_NUM),
        VMSTATE_UINT16(pw_flag, DN2Wid),
        VMSTATE_UINT64(pkt_counter, DN2Wid),
        VMSTATE_UINT16(ipush_area, DN2Wid),
        VMSTATE_UINT16(lhb_head, DN2Wid),
        VMSTATE_UINT16(lhb_tail, DN2Wid),
        VMSTATE_UINT16(status_init, DN2Wid),
        VMSTATE_UINT16(status_size_reg, DN2Wid),
        VMSTATE_UINT16(status_head, DN2Wid),
        VMSTATE_UINT16(status_tail, DN2Wid),
        VMSTATE_STRUCT(copy, DN2Wid, 1, vmstate_dimmnet2_copy, DN2CopySrc),
        VMSTATE_UINT8(pgid_set, DN2Wid),
        VMSTATE_STRUCT_ARRAY(lhs, DN2Wid, DIMMNET2_LHS_SLOTS, 1, vmstate_dimmnet2_lhs,
                             DN2LhsMsg),
        VMSTATE_END_OF_LIST()
    }
};

static const VMStateDescription vmstate_dimmnet2_exec = {
    .name = "dimmnet2/exec",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT8(active, DN2Exec),
        VMSTATE_UINT8(stalled, DN2Exec),
        VMSTATE_UINT8(started, DN2Exec),
        VMSTATE_STRUCT(ent, DN2Exec, 1, vmstate_dimmnet2_fifo_entry, DN2FifoEntry),
        VMSTATE_UINT64(done, DN2Exec),
        VMSTATE_UINT64(total, DN2Exec),
        VMSTATE_END_OF_LIST()
    }
};

/* A request as the guest could have written it: a WID, flags that are
 * bits.  Everything else in it is checked when it executes. */
static bool dimmnet2_entry_ok(const DN2FifoEntry *e)
{
    return e->wid < DN2_NUM_WID && e->rflag <= 1 && e->has_ex <= 1 &&
           e->from_rc <= 1;
}

static bool dimmnet2_exec_ok(DN2State *s, const DN2Exec *x)
{
    if (!x->active) {
        return true;
    }
    return x->stalled <= 1 && x->started <= 2 && dimmnet2_entry_ok(&x->ent) &&
           x->done <= x->total &&
           /* A copy is at most a process's area; a stream at most 4 GiB
            * (Size is 32 bits) or 255 elements. */
           x->total <= MAX(dimmnet2_sdimm_area(s), 4 * GiB);
}

/*
 * Never trust the stream more than a guest: every field is checked against
 * what a guest could have produced through the registers, before anything
 * uses it as an index or an offset.  A stream that fails is refused whole
 * with a message naming the field.  The SMA (LID and link state) is not
 * taken from the stream at all: it is re-read from this QEMU's own port.
 */
static int dimmnet2_post_load(void *opaque, int version_id)
{
    DN2State *s = opaque;
    uint32_t i;
    int w, j;

    DN2_LOAD_CHECK(!s->timing.timing_on || s->timing.timing_loaded, "this board runs the timing "
                   "model (timing=thesis) and the stream has no state of it");
    DN2_LOAD_CHECK(s->wc.fifo_head < s->params.fifo_depth &&
                   s->wc.fifo_count <= s->params.fifo_depth,
                   "Request FIFO head %u / count %u outside depth %u",
                   s->wc.fifo_head, s->wc.fifo_count, s->params.fifo_depth);
    DN2_LOAD_CHECK(s->rx.rc_head < DIMMNET2_RC_FIFO && s->rx.rc_count <= DIMMNET2_RC_FIFO,
                   "RC FIFO head %u / count %u", s->rx.rc_head, s->rx.rc_count);
    for (i = 0; i < s->wc.fifo_count; i++) {
        DN2_LOAD_CHECK(dimmnet2_entry_ok(&s->wc.fifo[(s->wc.fifo_head + i) % s->params.fifo_depth]),
                       "Request FIFO entry %u", i);
    }
    for (i = 0; i < s->rx.rc_count; i++) {
        DN2_LOAD_CHECK(dimmnet2_entry_ok(&s->rx.rc_fifo[(s->rx.rc_head + i) % DIMMNET2_RC_FIFO]),
                       "RC FIFO entry %u", i);
    }
    DN2_LOAD_CHECK(s->sys.sdimm_ready <= 1 && s->wc.rc_turn <= 1, "flag fields");
    DN2_LOAD_CHECK(!(s->sys.sdimm_cap_reg & ~DN2_FMASK(DN2_SDIMM_CAP_CODE)),
                   "SO-DIMM Capacity 0x%x", s->sys.sdimm_cap_reg);
    DN2_LOAD_CHECK(!(s->sys.mtu_reg & ~DN2_FMASK(DN2_MTU_CODE)), "MTU 0x%x", s->sys.mtu_reg);
    for (i = 0; i < DIMMNET2_AMT_ENTRIES; i++) {
        DN2_LOAD_CHECK(!(s->sys.amt[i] & ~DN2_AMT_SLOT_MASK),
                       "AMT Address Table entry %u = 0x%x", i, s->sys.amt[i]);
    }
    DN2_LOAD_CHECK(dimmnet2_exec_ok(s, &s->wc.exec), "executor state");
    DN2_LOAD_CHECK(dimmnet2_exec_ok(s, &s->wc.rc_exec), "RC executor state");

    for (w = 0; w < DN2_NUM_WID; w++) {
        DN2Wid *d = &s->wid[w];
        uint32_t size = dimmnet2_status_ring_bytes(d);

        DN2_LOAD_CHECK(d->ex_flag <= 1 && d->pending <= 1 && d->req_error <= 1 &&
                       d->pgid_set <= 1 && d->rx_ovf <= 1 && d->rx_err <= 3,
                       "WID %d flag fields", w);
        DN2_LOAD_CHECK(!d->pending || dimmnet2_entry_ok(&d->pending_req),
                       "WID %d pending request", w);
        DN2_LOAD_CHECK(!(d->ww_status & ~(DN2_CS_WW_MASK(0) | DN2_CS_WW_MASK(1) |
                                          DN2_CS_WW_MASK(2) | DN2_CS_WW_MASK(3))),
                       "WID %d Write Window status 0x%x", w, d->ww_status);
        DN2_LOAD_CHECK(!(d->status_size_reg & ~DN2_FMASK(DN2_STATUS_SIZE_CODE)), "WID %d Status Area Size", w);
        /* The ring as the registers make it: 16-byte records inside the
         * process's 32 KiB of LLCM, head and tail inside the ring. */
        DN2_LOAD_CHECK(d->status_init <= DN2_STATUS_INIT_MASK &&
                       !(d->status_init % DN2_STATUS_REC_SIZE),
                       "WID %d Status Initial Address 0x%x", w, d->status_init);
        /* The host may write any head (it is only compared modulo the
         * ring); the tail is the board's and never leaves the ring. */
        DN2_LOAD_CHECK(d->status_head <= DN2_STATUS_ADDR_MASK &&
                       !(d->status_head % DN2_STATUS_REC_SIZE) &&
                       d->status_tail >= d->status_init &&
                       d->status_tail < d->status_init + size &&
                       !(d->status_tail % DN2_STATUS_REC_SIZE),
                       "WID %d status ring head 0x%x / tail 0x%x outside "
                       "[0x%x, 0x%x)", w, d->status_head, d->status_tail,
                       d->status_init, d->status_init + size);
        DN2_LOAD_CHECK(d->lhb_head < DN2_LHB_AREA && !(d->lhb_head % DN2_LHB_ENTRY) &&
                       d->lhb_tail < DN2_LHB_AREA && !(d->lhb_tail % DN2_LHB_ENTRY),
                       "WID %d LH Buffer head 0x%x / tail 0x%x", w, d->lhb_head,
                       d->lhb_tail);
        DN2_LOAD_CHECK(d->copy.valid <= 1 && d->copy.form <= DN2_FORM_LIST &&
                       d->copy.dtype <= 7, "WID %d copy source", w);
        for (j = 0; j < DIMMNET2_LHS_SLOTS; j++) {
            DN2LhsMsg *m = &d->lhs[j];
            DN2_LOAD_CHECK(m->valid <= 1 && m->swid < DN2_NUM_WID &&
                           m->entry < DN2_LHB_AREA && !(m->entry % DN2_LHB_ENTRY) &&
                           m->got <= m->total,
                           "WID %d LHS reassembly slot %d", w, j);
        }
    }
    for (w = 0; w < DN2_NUM_WID; w++) {
        for (j = 0; j < DIMMNET2_LHS_SLOTS; j++) {
            s->wid[w].lhs[j].last_ns = dimmnet2_now(s);
        }
    }
    dimmnet2_port_refresh(s);
    s->wc.rc_stall_since = 0;
    dimmnet2_wc_kick(s);
    dimmnet2_ur_publish(s);     /* the mirror is not in the stream */
    return 0;
}

/*
 * A linked board is saved only held (snapshot-hold, below): the port has
 * nothing in flight, and nothing changed since it was held but deliveries
 * it refused.  Checked again here, the last moment before the state goes.
 */
static int dimmnet2_pre_save(void *opaque)
{
    DN2State *s = opaque;
    Error *err = NULL;

    if (s->port.kind != DN2_PORT_NONE &&
        (!dimmnet2_port_held(s) || !dimmnet2_port_quiescent(s, &err))) {
        if (!err) {
            error_setg(&err, "dimmnet2: board %d is linked and not held for a "
                       "snapshot (snapshot-hold=on)", s->index);
        }
        error_report_err(err);
        return -EBUSY;
    }
    return 0;
}

static int dimmnet2_pre_load(void *opaque)
{
    DN2State *s = opaque;

    s->timing.timing_loaded = false;
    return 0;
}

/* Version 2: per-WID receive error bits, the Receive Controller's executor
 * of its own; version 1 streams are refused (docs/device-model.md).  The
 * timing model's state is a subsection (above). */
static const VMStateDescription vmstate_dimmnet2 = {
    .name = "dimmnet2",
    .version_id = 2,
    .minimum_version_id = 2,
    .pre_load = dimmnet2_pre_load,
    .post_load = dimmnet2_post_load,
    .pre_save = dimmnet2_pre_save,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT8(sys.sdimm_ready, DN2State),
        VMSTATE_UINT8_ARRAY(sys.pgid, DN2State, DN2_NUM_WID),
        VMSTATE_UINT32(sys.sdimm_cap_reg, DN2State),
        VMSTATE_UINT32(sys.mtu_reg, DN2State),
        VMSTATE_UINT16(sys.lid, DN2State),
        VMSTATE_UINT16(sys.sma_lid, DN2State),
        VMSTATE_UINT8(sys.link_state, DN2State),
        VMSTATE_UINT16_ARRAY(sys.amt, DN2State, DIMMNET2_AMT_ENTRIES),
        VMSTATE_STRUCT_ARRAY(wid, DN2State, DN2_NUM_WID, 2, vmstate_dimmnet2_wid, DN2Wid),
        VMSTATE_STRUCT_ARRAY(wc.fifo, DN2State, DIMMNET2_FIFO_MAX, 1,
                             vmstate_dimmnet2_fifo_entry, DN2FifoEntry),
        VMSTATE_UINT32(wc.fifo_head, DN2State),
        VMSTATE_UINT32(wc.fifo_count, DN2State),
        VMSTATE_STRUCT(wc.exec, DN2State, 1, vmstate_dimmnet2_exec, DN2Exec),
        VMSTATE_STRUCT(wc.rc_exec, DN2State, 2, vmstate_dimmnet2_exec, DN2Exec),
        VMSTATE_STRUCT_ARRAY(rx.rc_fifo, DN2State, DIMMNET2_RC_FIFO, 1,
                             vmstate_dimmnet2_fifo_entry, DN2FifoEntry),
        VMSTATE_UINT32(rx.rc_head, DN2State),
        VMSTATE_UINT32(rx.rc_count, DN2State),
        VMSTATE_UINT8(wc.rc_turn, DN2State),
        VMSTATE_END_OF_LIST()
    },
    .subsections = (const VMStateDescription * const []) {
        &vmstate_dimmnet2_timing,
        &vmstate_dimmnet2_fills,
        NULL
    }
};

/* ------------------------------------------------------------------ */
/* QOM                                                                 */
/* ------------------------------------------------------------------ */

static const Property dimmnet2_properties[] = {
    DEFINE_PROP_UINT64("base", DN2State, params.base, DN2_BASE_AUTO),
    DEFINE_PROP_SIZE("sodimm-size", DN2State, params.sodimm_size, DIMMNET2_SODIMM_DEFAULT),
    DEFINE_PROP_UINT32("fifo-depth", DN2State, params.fifo_depth, DIMMNET2_FIFO_DEFAULT),
    DEFINE_PROP_LINK("memdev", DN2State, params.hostmem, TYPE_MEMORY_BACKEND,
                     HostMemoryBackend *),
    DEFINE_PROP_STRING("switch", DN2State, params.switch_addr),
    DEFINE_PROP_STRING("local", DN2State, params.local_addr),
    DEFINE_PROP_BOOL("loopback", DN2State, params.loopback, false),
    DEFINE_PROP_BOOL("rx-thread", DN2State, params.rx_thread, false),
    DEFINE_PROP_UINT64("guid", DN2State, params.guid, 0),
    DEFINE_PROP_UINT32("rc-timeout-ms", DN2State, params.rc_timeout_ms,
                       DIMMNET2_RC_TIMEOUT_MS_DEFAULT),
    DEFINE_PROP_STRING("secret", DN2State, params.secret_id),
    DEFINE_PROP_UINT32("coalesce-us", DN2State, params.coalesce_us,
                       DIMMNET2_COALESCE_US_DEFAULT),
    DEFINE_PROP_BOOL("strict", DN2State, params.strict, false),
    DEFINE_PROP_BOOL("read-mirror", DN2State, params.read_mirror, true),
    DEFINE_PROP_BOOL("vtime", DN2State, vt.on, false),
    DEFINE_PROP_UINT32("vt-latency-ns", DN2State, vt.latency_ns, 1000),
    DEFINE_PROP_BOOL("vt-idle", DN2State, vt.idle, true),
    DEFINE_PROP_UINT64("vt-start-ns", DN2State, vt.start_ns, 0),
    DEFINE_PROP_STRING("vt-sync", DN2State, vt.sync),
    DEFINE_PROP_STRING("vt-shm", DN2State, vt.shm_path),
    DEFINE_PROP_UINT16("lid", DN2State, params.lid_wanted, 0),
    DEFINE_PROP_STRING("pcap", DN2State, params.pcap_path),
    DEFINE_PROP_STRING("timing", DN2State, timing.mode),
    DEFINE_PROP_STRING("timing-params", DN2State, timing.timing_params),
    DEFINE_PROP_UINT32("strict-delay-ns", DN2State, params.strict_delay_ns, 1000),
};

/* Every statistic the board counts: QOM read-only property, description.
 * The stat-link-* ones are the fabric endpoint's (0 without one). */
static const struct {
    const char *name;
    const char *desc;
} dimmnet2_stats[DN2_STAT__MAX] = {
    [DN2_STAT_REQUESTS] = { "stat-requests",
        "requests written to a Command Lower register" },
    [DN2_STAT_REFUSED] = { "stat-refused",
        "requests refused for invalid parameters (Controller Status bit 20)" },
    [DN2_STAT_IGNORED] = { "stat-ignored",
        "NOP, undefined-opcode and size-0 BOTF requests ignored" },
    [DN2_STAT_OVERRUN] = { "stat-overrun",
        "requests dropped because the previous one was still pending" },
    [DN2_STAT_BAD_ACCESS] = { "stat-bad-access",
        "register accesses of an unsupported size or alignment" },
    [DN2_STAT_BYTES_LOCAL] = { "stat-bytes-local",
        "bytes moved by local primitives" },
    [DN2_STAT_TX_PACKETS] = { "stat-tx-packets", "packets sent" },
    [DN2_STAT_TX_BYTES] = { "stat-tx-bytes", "packet bytes sent, headers included" },
    [DN2_STAT_TX_DROPS] = { "stat-tx-drops",
        "packets the fabric dropped at once (no route to the destination LID)" },
    [DN2_STAT_RX_PACKETS] = { "stat-rx-packets", "packets received and delivered" },
    [DN2_STAT_RX_BYTES] = { "stat-rx-bytes",
        "packet bytes received and delivered, headers included" },
    [DN2_STAT_RX_DROP_BAD] = { "stat-rx-drop-bad", "malformed packets dropped" },
    [DN2_STAT_RX_DROP_PGID] = { "stat-rx-drop-pgid",
        "packets dropped for a PGID that differs from the receiver's" },
    [DN2_STAT_RX_DROP_NOPROC] = { "stat-rx-drop-noproc",
        "packets dropped because no process (or no ring, no SO-DIMM) was set "
        "up to take them" },
    [DN2_STAT_RX_DROP_ROUTE] = { "stat-rx-drop-route",
        "packets dropped because they were not for this board's LID" },
    [DN2_STAT_RX_STALLS] = { "stat-rx-stalls",
        "times the Receive Controller held packets for want of room" },
    [DN2_STAT_RC_ABANDONED] = { "stat-rc-abandoned",
        "RVL answers abandoned because their requester granted no credits "
        "for rc-timeout-ms" },
    [DN2_STAT_LHS_ABANDONED] = { "stat-lhs-abandoned",
        "LHS messages completed unfinished because their sender went silent "
        "and another sender needed the reassembly slot" },
    [DN2_STAT_STRICT_VIOLATIONS] = { "stat-strict-violations",
        "with strict=on: violations of the programming protocol, every time" },
    [DN2_STAT_DEFERRED] = { "stat-deferred",
        "requests the doorbell could not run at once because the Window "
        "Controller was busy (they ran later, from the main loop)" },
    [DN2_STAT_EXEC_STALLS] = { "stat-exec-stalls",
        "times a host request had to wait for the link (window, credits, "
        "link down): the requests behind it in the FIFO waited too" },
    [DN2_STAT_LINK_DROPS] = { "stat-link-drops",
        "datagrams and packets the fabric endpoint dropped (malformed, stale "
        "epoch, unknown peer, ...)" },
    [DN2_STAT_LINK_RETRANSMITS] = { "stat-link-retransmits",
        "packets the fabric endpoint sent again (timeouts, SACK holes, link "
        "back up)" },
    [DN2_STAT_LINK_TIMEOUTS] = { "stat-link-timeouts",
        "retransmission timer expiries" },
    [DN2_STAT_LINK_FAST_RETRANSMITS] = { "stat-link-fast-retransmits",
        "packets resent because later ones were acknowledged" },
    [DN2_STAT_LINK_DUPLICATES] = { "stat-link-duplicates",
        "packets received a second time (and dropped)" },
    [DN2_STAT_LINK_BUSY] = { "stat-link-busy",
        "packets offered to the board while it had no room (back-pressure)" },
    [DN2_STAT_LINK_DGRAMS_TX] = { "stat-link-dgrams-tx", "UDP datagrams sent" },
    [DN2_STAT_LINK_DGRAMS_RX] = { "stat-link-dgrams-rx", "UDP datagrams received" },
    [DN2_STAT_LINK_AUTH_DROPS] = { "stat-link-auth-drops",
        "datagrams dropped because their MAC was missing or wrong (cluster "
        "secret)" },
    [DN2_STAT_LINK_REFUSALS] = { "stat-link-refusals",
        "joins the switch refused (GUID in use, different secret, host full)" },
    [DN2_STAT_LINK_SESSION_RESETS] = { "stat-link-session-resets",
        "times a peer's session changed and the streams with it restarted" },
    [DN2_STAT_VT_WAITS] = { "stat-vt-waits",
        "vtime=on: times the board reached its horizon and waited for the "
        "switch's next grant (or for fabric credits) before going on" },
    [DN2_STAT_VT_WAIT_MS] = { "stat-vt-wait-ms",
        "vtime=on: host milliseconds spent in those waits" },
    [DN2_STAT_HOST_FILLS] = { "stat-host-fills",
        "timing=thesis: 64-byte lines of the Prefetch Window or the LH Buffer "
        "the host read after the board wrote them (each a fill across the "
        "memory bus, docs/timing.md)" },
    [DN2_STAT_HOST_FILL_NS] = { "stat-host-fill-ns",
        "timing=thesis: the virtual nanoseconds those fills cost the host" },
    [DN2_STAT_VT_LATE] = { "stat-vt-late",
        "vtime=on: packets whose virtual delivery time had already passed "
        "when they arrived (a peer that broke the protocol; delivered at once)" },
    [DN2_STAT_LINK_SPURIOUS_TIMEOUTS] = { "stat-link-spurious-timeouts",
        "retransmission timer expiries whose packet had arrived after all "
        "(the echoed timestamp showed a late ACK, not a loss)" },
};

static void dimmnet2_get_stat(Object *obj, Visitor *v, const char *name,
                              void *opaque, Error **errp)
{
    DN2State *s = DIMMNET2(obj);
    DN2Stat which = (DN2Stat)(uintptr_t)opaque;
    uint64_t val = which < DN2_STAT__COUNTED ? s->stat[which] :
                   dimmnet2_port_stat(s, which);

    visit_type_uint64(v, name, &val, errp);
}

/* Every statistic in one read, "name=value" per line without the stat-
 * prefix, in the order of dimmnet2_stats[]: one QMP command for a poller
 * instead of one per counter (QMP reads a command a byte at a time and
 * runs it under the BQL, so polling forty counters a second disturbs the
 * guests it measures). */
static char *dimmnet2_get_stats(Object *obj, Error **errp)
{
    DN2State *s = DIMMNET2(obj);
    GString *out = g_string_new(NULL);
    int i;

    for (i = 0; i < DN2_STAT__MAX; i++) {
        uint64_t val = i < DN2_STAT__COUNTED ? s->stat[i] : dimmnet2_port_stat(s, i);

        g_string_append_printf(out, "%s=%" PRIu64 "\n",
                               dimmnet2_stats[i].name + strlen("stat-"), val);
    }
    return g_string_free(out, false);
}

/*
 * snapshot-hold: the board at a consistent cut of its cluster, ready to be
 * saved (docs/cluster.md "Snapshots").  Setting it needs the VM stopped,
 * the Window Controller and the Receive Controller idle and the port with
 * nothing in flight (dimmnet2_port_quiescent); it lifts a linked board's
 * migration blocker and refuses deliveries until it is cleared or the VM
 * runs again.  A refusal says what is still busy: the caller (cluster.sh
 * snapshot) lets the fabric drain and tries again.
 */
static bool dimmnet2_get_hold(Object *obj, Error **errp)
{
    return dimmnet2_port_held(DIMMNET2(obj));
}

static void dimmnet2_set_hold(Object *obj, bool on, Error **errp)
{
    DN2State *s = DIMMNET2(obj);

    if (on) {
        if (runstate_is_running()) {
            error_setg(errp, "dimmnet2: board %d: stop the VM first (QMP stop)",
                       s->index);
            return;
        }
        /* With the timing model a request takes virtual time, and at a cut
         * one may be half done: its next step waits for the Window
         * Controller's virtual-clock timer, and the requests, the step
         * reached and that timer are in the stream (vmstate_dimmnet2,
         * vmstate_dimmnet2_timing).  Only the port must be quiet. */
        if (!(s->vt.on && s->timing.timing_on) &&
            (s->wc.fifo_count || s->wc.exec.active || s->rx.rc_count || s->wc.rc_exec.active)) {
            error_setg(errp, "dimmnet2: board %d: the Window Controller is busy "
                       "(%u requests queued, %u answers to run%s)", s->index,
                       s->wc.fifo_count, s->rx.rc_count,
                       s->wc.exec.active || s->wc.rc_exec.active ? ", one running" : "");
            return;
        }
    }
    dimmnet2_port_hold(s, on, errp);
}

static void dimmnet2_instance_init(Object *obj)
{
    DN2State *s = DIMMNET2(obj);
    int i;

    for (i = 0; i < DN2_STAT__MAX; i++) {
        object_property_add(obj, dimmnet2_stats[i].name, "uint64",
                            dimmnet2_get_stat, NULL, NULL, (void *)(uintptr_t)i);
        object_property_set_description(obj, dimmnet2_stats[i].name,
                                        dimmnet2_stats[i].desc);
    }
    object_property_add_str(obj, "stats", dimmnet2_get_stats, NULL);
    object_property_set_description(obj, "stats", "every stat-* counter in one "
                                    "read: name=value lines, without the prefix");
    object_property_add_bool(obj, "snapshot-hold", dimmnet2_get_hold,
                             dimmnet2_set_hold);
    object_property_set_description(obj, "snapshot-hold", "on: the board held at "
        "a consistent cut for a snapshot (VM stopped, nothing queued or in "
        "flight); a linked board migrates only so");
    dimmnet2_strict_instance_init(s);
}

static void dimmnet2_unrealize(DeviceState *dev)
{
    DN2State *s = DIMMNET2(dev);

    dimmnet2_units_fini(s);
    if (s->params.hostmem) {
        vmstate_unregister_ram(s->win.sodimm_mr, dev);
        host_memory_backend_set_mapped(s->params.hostmem, false);
    }
}

static void dimmnet2_class_init(ObjectClass *klass, void *data)
{
    DeviceClass *dc = DEVICE_CLASS(klass);
    ResettableClass *rc = RESETTABLE_CLASS(klass);
    AcpiDevAmlIfClass *adevc = ACPI_DEV_AML_IF_CLASS(klass);

    dc->desc = "DIMMnet-2 memory-slot network interface board";
    dc->realize = dimmnet2_realize;
    dc->unrealize = dimmnet2_unrealize;
    dc->vmsd = &vmstate_dimmnet2;
    rc->phases.hold = dimmnet2_reset_hold;
    device_class_set_props(dc, dimmnet2_properties);
    object_class_property_set_description(klass, "base",
        "guest-physical address of the 0x60000-byte window (64 KiB aligned, "
        "below 4 GiB); 0 (default) picks 0xfec10000 for the first board and "
        "0xfec70000 for the second");
    object_class_property_set_description(klass, "sodimm-size",
        "size of the on-board SO-DIMM memory (two interleaved modules) when "
        "no memdev is given; a power of two (the default is 2 x 256 MiB)");
    object_class_property_set_description(klass, "fifo-depth",
        "entries in the Window Controller's Request FIFO (2..64)");
    object_class_property_set_description(klass, "memdev",
        "memory backend holding the SO-DIMMs (module 0 then module 1), so it "
        "can be file-backed and inspected from the host");
    object_class_property_set_description(klass, "switch",
        "HOST:PORT of the dn2-switch (subnet manager) to attach the board's "
        "port to, over UDP");
    object_class_property_set_description(klass, "local",
        "HOST:PORT to bind the board's UDP socket to (default: any)");
    object_class_property_set_description(klass, "loopback",
        "cable the port to itself: LID 1, packets to LID 1 come back");
    object_class_property_set_description(klass, "rx-thread",
        "with switch=: receive in a thread of the board's own, blocked in "
        "recvmmsg() and taking the BQL per burst (on), or in the main loop's "
        "fd handler (off, the default; see docs/benchmarks.md)");
    object_class_property_set_description(klass, "rc-timeout-ms",
        "abandon (and count in stat-rc-abandoned) an RVL answer whose "
        "requester grants no credits for this long, so no peer can hold the "
        "Window Controller; 0 = never (default 5000)");
    object_class_property_set_description(klass, "secret",
        "id of a -object secret holding the cluster secret shared with the "
        "dn2-switch (--secret-file): joining and data are authenticated");
    object_class_property_set_description(klass, "coalesce-us",
        "with switch=: packets to a peer that still has packets in flight "
        "wait for its ACK, at most this long, and leave together, as TCP's "
        "Nagle rule (default 100); 0: every Window Controller run sends at "
        "once; see docs/benchmarks-guest.md");
    object_class_property_set_description(klass, "strict",
        "the board as strict as the hardware: requests never run inside the "
        "doorbell, a VL fills the Prefetch Window line by line, the LID "
        "register must hold the port's LID, sub-4-byte elements and misaligned "
        "SO-DIMM offsets are refused, and every protocol violation seen is "
        "reported (strict-violations); see docs/device-model.md");
    object_class_property_set_description(klass, "read-mirror",
        "serve User Register reads from a copy the board keeps current, so a "
        "poll is a load, not an exit to the device model under QEMU's global "
        "lock (on, the default); off: every read is an MMIO access (traced, "
        "narrow reads counted in stat-bad-access); strict=on implies off");
    object_class_property_set_description(klass, "strict-delay-ns",
        "with strict=on: virtual-clock delay before each step of the Window "
        "Controller (default 1000; deterministic under -icount)");
    object_class_property_set_description(klass, "vtime",
        "with switch=: lock-step virtual time; every packet is delivered at "
        "its sender's virtual time plus vt-latency-ns, and the board never "
        "runs past the horizon the dn2-switch --virtual-time grants, so a "
        "cluster run gives the same result on any host; needs -icount "
        "shift=N,sleep=off (docs/virtual-time.md)");
    object_class_property_set_description(klass, "vt-latency-ns",
        "with vtime=on: the modelled latency of every packet, sender's "
        "virtual time to delivery (default 1000; at least the switch's "
        "--vt-lookahead)");
    object_class_property_set_description(klass, "vt-idle",
        "with vtime=on: a board whose vCPU is halted with no work promises "
        "the switch its next timer or packet, not its clock, so an idle "
        "cluster skips ahead (on, the default); off: it promises its clock, "
        "one round per lookahead (for debugging the promise; the run's "
        "output is the same)");
    object_class_property_set_description(klass, "vt-start-ns",
        "with vtime=on: the virtual time at which the lock-step begins (every "
        "board of the cluster must be given the same); before it the guest "
        "runs alone, as fast as -icount allows, and sees the link down "
        "(default 0)");
    object_class_property_set_description(klass, "vt-sync",
        "with vtime=on: how the board keeps the lock-step: udp (the "
        "default) reports its clock to the dn2-switch and waits for its "
        "grants; shm shares a sync domain in shared memory with the other "
        "boards of the host (vt-shm=PATH), through which its packets to them "
        "go too (docs/virtual-time.md)");
    object_class_property_set_description(klass, "vt-shm",
        "with vt-sync=shm: the sync domain's file, created by dn2-switch "
        "--vt-sync shm --vt-shm PATH; the board is member CLID - 1 of it "
        "(lid= is needed)");
    object_class_property_set_description(klass, "lid",
        "with switch=: the LID to ask the subnet manager for (it is given "
        "when free), so that a cluster's LIDs are the same in every run; 0 "
        "= any");
    object_class_property_set_description(klass, "pcap",
        "write every packet the board delivers to its Receive Controller to "
        "this file (nanosecond pcap, LINKTYPE_USER0, capture event 7; "
        "virtual timestamps under vtime=on; docs/fabric.md, pcap records)");
    object_class_property_set_description(klass, "timing",
        "off (default): the board as fast as the host allows; thesis: every "
        "packet takes the time the real board takes (the thesis's clock "
        "counts and rates, docs/timing.md); needs vtime=on");
    object_class_property_set_description(klass, "timing-params",
        "with timing=thesis: NAME=VALUE,... overrides of the model's "
        "parameters (docs/timing.md)");
    object_class_property_set_description(klass, "guid",
        "board GUID the subnet manager knows it by (keeps its LID across "
        "restarts); 0 = random");
    set_bit(DEVICE_CATEGORY_NETWORK, dc->categories);
    adevc->build_dev_aml = dimmnet2_build_aml;
}

static const TypeInfo dimmnet2_info = {
    .name = TYPE_DIMMNET2,
    .parent = TYPE_ISA_DEVICE,
    .instance_size = sizeof(DN2State),
    .instance_init = dimmnet2_instance_init,
    .class_init = dimmnet2_class_init,
    .interfaces = (InterfaceInfo[]) {
        { TYPE_ACPI_DEV_AML_IF },
        { }
    },
};

static void dimmnet2_register_types(void)
{
    type_register_static(&dimmnet2_info);
}

type_init(dimmnet2_register_types)
