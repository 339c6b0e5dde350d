/*
 * DIMMnet-2 request errors: refusing a request (Controller Status bit 20),
 * and strict mode (strict=on): the board as unforgiving as the hardware,
 * and telling why.
 *
 * Without it the emulator forgives what the real board would punish: an
 * idle Window Controller runs a request inside the doorbell store, so a
 * window can be reused at once; the LID register is inert; elements of 1
 * or 2 bytes work.  With strict=on:
 *
 *   - requests never run inside the doorbell: the Window Controller starts
 *     strict-delay-ns later on the virtual clock (deterministic under
 *     -icount) and goes one step at a time, so the Write Window, the
 *     Primitive Counter and the status bits behave as while a request is
 *     really in flight; a VL fills the Prefetch Window line by line, each
 *     flag set as its line arrives;
 *   - the LID register must be written with the subnet manager's LID before
 *     the port sends or accepts traffic;
 *   - SO-DIMM elements under 4 bytes and SO-DIMM offsets that are not
 *     4-byte aligned are refused (Controller Status bit 20);
 *
 * and every violation of the programming protocol the device can observe
 * is reported once per kind and place (WID, register): a trace event
 * (dimmnet2_strict_violation), a counter, a guest-error log line naming the
 * WID, the register and the rule, and the QOM property strict-violations
 * (qom-get lists them).  What QEMU cannot observe (cache flushes and store
 * ordering under TCG) is listed in docs/device-model.md, not pretended.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/log.h"
#include "qemu/timer.h"
#include "qapi/error.h"
#include "qapi/visitor.h"
#include "qapi/qapi-builtin-visit.h"
#include "migration/blocker.h"
#include "dimmnet2-int.h"
#include "trace.h"

/* ------------------------------------------------------------------ */
/* Refusals                                                            */
/* ------------------------------------------------------------------ */

static const char *const dimmnet2_refusals[DN2_REFUSE__MAX] = {
    [DN2_REFUSE_SDIMM_NOT_READY] = "SO-DIMM not initialised",
    [DN2_REFUSE_DST_OUTSIDE_PW] = "DSTOff outside the process's Prefetch Window area",
    [DN2_REFUSE_SRC_OUTSIDE_WW] = "SRCOff outside the process's Write Window area",
    [DN2_REFUSE_VLI_COPY] = "VLI cannot be the source of a SO-DIMM copy",
    [DN2_REFUSE_VSI_COPY] = "VSI cannot be the destination of a SO-DIMM copy",
    [DN2_REFUSE_COPY_NO_SOURCE] = "SO-DIMM copy without a preceding VL-family half",
    [DN2_REFUSE_STRICT_LID] = "strict: LID register not set to the port's LID",
    [DN2_REFUSE_STRICT_SMALL] = "strict: SO-DIMM elements under 4 bytes",
    [DN2_REFUSE_STRICT_MISALIGNED] = "strict: SO-DIMM offset not 4-byte aligned",
    [DN2_REFUSE_STRICT_STRIDE] = "strict: stride not 4-byte aligned",
};

const char *dimmnet2_refusal_name(DN2Refusal why)
{
    return why < DN2_REFUSE__MAX ? dimmnet2_refusals[why] : "?";
}

/* Refuse a request: Controller Status bit 20 of its process, counted,
 * traced and logged: by the local primitives, the remote ones and the
 * Window Controller (strict mode's refusals below). */
void dimmnet2_refuse(DN2State *s, const struct dn2_req *r, DN2Refusal why)
{
    s->wid[r->wid].req_error = 1;
    DIMMNET2_GUEST_ERROR(s, DN2_STAT_REFUSED, refused, "WID %d %s refused: %s",
                         r->wid, dn2_otype_name(r->otype), dimmnet2_refusal_name(why));
}

/* ------------------------------------------------------------------ */
/* strict=on                                                           */
/* ------------------------------------------------------------------ */

static const struct {
    const char *name;
    const char *rule;
} dn2_sv_info[DN2_SV__MAX] = {
    [DN2_SV_WW_REUSED] = { "ww-reused",
        "a Write Window was rewritten while its request was pending: wait for "
        "its Primitive Counter or window status (Controller Status bits 5-16) "
        "before reusing it (thesis 4.5.4, 5.2.2)" },
    [DN2_SV_NO_LID] = { "no-lid",
        "the LID register (System Register 0x700) must hold the LID the subnet "
        "manager gave (SMA LID register) before the port is used (thesis 4.4.2 "
        "bring-up)" },
    [DN2_SV_SMALL_ELEMENT] = { "small-element",
        "SO-DIMM elements are 4 bytes or more: the board streams 64-bit lines "
        "(thesis 4.6.3; choice #54)" },
    [DN2_SV_MISALIGNED] = { "misaligned",
        "SO-DIMM offsets, strides and list entries are 4-byte aligned "
        "(choice #54)" },
    [DN2_SV_EARLY_LHS_VL] = { "early-lhs-vl",
        "a VL read an LHS overflow still arriving; the board holds it until "
        "the message is in (thesis 7.2.3): wait for Complete to read at once" },
    [DN2_SV_NOT_UP] = { "not-up",
        "a primitive before bring-up: SO-DIMM initialised (System Register "
        "0x000) first, and the PGID written before network primitives "
        "(thesis 4.4.2)" },
    [DN2_SV_EX_ORDER] = { "ex-order",
        "Command Ex was written before Command Upper: the order is Upper, Ex, "
        "then Lower (thesis 5.2.2)" },
    [DN2_SV_OVERRUN] = { "overrun",
        "a request was written while the previous one was still pending "
        "(Controller Status bit 0): poll bits 0 and 2 before each request "
        "(thesis 5.2.2)" },
    [DN2_SV_UNPOLLED] = { "unpolled",
        "a request was written while the Request FIFO was almost full and "
        "Controller Status had not been read since the process's previous "
        "request: poll bits 0 and 2 before each request, since the board's "
        "other process shares the FIFO (thesis 5.2.2)" },
};

/*
 * A violation of kind at {wid, reg} (reg: the register or window offset it
 * concerns): counted every time, reported the first time per place.
 */
void dimmnet2_strict_report(DN2State *s, DN2StrictKind kind, int wid, uint32_t reg,
                       const char *detail)
{
    uint32_t key = ((uint32_t)kind << 24) | ((uint32_t)(wid & 0xff) << 16) |
                   (reg & 0xffff);
    char *line;
    unsigned i;

    if (!s->params.strict || kind >= DN2_SV__MAX) {
        return;
    }
    s->strict.count[kind]++;
    s->stat[DN2_STAT_STRICT_VIOLATIONS]++;
    for (i = 0; i < s->strict.nseen; i++) {
        if (s->strict.seen[i] == key) {
            return;
        }
    }
    if (s->strict.nseen < DIMMNET2_STRICT_PLACES) {
        s->strict.seen[s->strict.nseen++] = key;
    }
    line = g_strdup_printf("%s WID %d reg 0x%x: %s (%s)", dn2_sv_info[kind].name, wid,
                           reg, detail ? detail : "", dn2_sv_info[kind].rule);
    trace_dimmnet2_strict_violation(s->index, dn2_sv_info[kind].name, wid, reg);
    qemu_log_mask(LOG_GUEST_ERROR, "dimmnet2: board %d strict: %s\n", s->index, line);
    if (s->strict.lines->len < DIMMNET2_STRICT_PLACES) {
        g_ptr_array_add(s->strict.lines, line);
    } else {
        g_free(line);
    }
}

/* qom-get strict-violations: ["kind WID w reg 0x..: detail (rule)", ...] */
static void dimmnet2_strict_get(Object *obj, Visitor *v, const char *name, void *opaque,
                           Error **errp)
{
    DN2State *s = DIMMNET2(obj);
    strList *list = NULL, **tail = &list;
    unsigned i;

    for (i = 0; s->strict.lines && i < s->strict.lines->len; i++) {
        QAPI_LIST_APPEND(tail, g_strdup(g_ptr_array_index(s->strict.lines, i)));
    }
    visit_type_strList(v, name, &list, errp);
    qapi_free_strList(list);
}

void dimmnet2_strict_instance_init(DN2State *s)
{
    object_property_add(OBJECT(s), "strict-violations", "strList", dimmnet2_strict_get,
                        NULL, NULL, NULL);
    object_property_set_description(OBJECT(s), "strict-violations",
        "with strict=on: each violation of the programming protocol seen, "
        "once per kind and place, with the rule it breaks");
}

bool dimmnet2_strict_init(DN2State *s, Error **errp)
{
    s->strict.lines = g_ptr_array_new_with_free_func(g_free);
    if (!s->params.strict) {
        return true;
    }
    /* A VL line by line keeps part of its data in the device's buffer. */
    error_setg(&s->strict.blocker, "dimmnet2: a board with strict=on cannot be "
               "migrated");
    if (migrate_add_blocker(&s->strict.blocker, errp) < 0) {
        return false;
    }
    return true;
}

void dimmnet2_strict_fini(DN2State *s)
{
    migrate_del_blocker(&s->strict.blocker);
    if (s->strict.lines) {
        g_ptr_array_free(s->strict.lines, true);
        s->strict.lines = NULL;
    }
}

/* The sum of a Write Window's 512 bytes, to see it rewritten. */
uint64_t dimmnet2_strict_ww_sum(DN2State *s, int wid, unsigned n)
{
    const uint8_t *p = s->win.ww_ptr + wid * DN2_WW_WID_STRIDE + (n % DN2_NUM_WW) * DN2_WIN_SIZE;
    uint64_t h = 0xcbf29ce484222325ULL;         /* FNV-1a */
    unsigned i;

    for (i = 0; i < DN2_WIN_SIZE; i++) {
        h = (h ^ p[i]) * 0x100000001b3ULL;
    }
    return h;
}

/* Is a SO-DIMM address or element size off the board's 4-byte grain? */
static bool dimmnet2_strict_grain(DN2State *s, const struct dn2_req *r, uint32_t addr,
                             const char *what)
{
    if (addr & 3) {
        g_autofree char *d = g_strdup_printf("%s %s 0x%x", dn2_otype_name(r->otype),
                                             what, addr);
        dimmnet2_strict_report(s, DN2_SV_MISALIGNED, r->wid, DN2_UR_CMD0_LOWER, d);
        return false;
    }
    return true;
}

/*
 * What strict mode refuses of a request before it runs: a primitive before
 * bring-up, a remote one while the LID register is not the port's LID,
 * sub-4-byte elements and misaligned SO-DIMM offsets.  True: refuse it
 * (Controller Status bit 20); the caller counts and logs the refusal.
 */
bool dimmnet2_strict_refuse(DN2State *s, const struct dn2_req *r, DN2Refusal *why)
{
    /* BOTF counts with the local ones here: it reads only its Write Window */
    bool local = r->otype < DN2_OP_RVL;
    bool sdimm_src = local ? dimmnet2_is_vl(r->otype) : r->otype != DN2_OP_BOTF;
    bool sdimm_dst = dimmnet2_is_vs(r->otype);
    int form = dn2_otype_form(r->otype);

    if (!s->params.strict || r->otype == DN2_OP_NOP || !dn2_otype_valid(r->otype)) {
        return false;
    }
    /* Before bring-up: reported; the request then does what the board
     * would do (refused without SO-DIMM, sent with PGID 0 without a PGID). */
    if (!s->sys.sdimm_ready) {
        dimmnet2_strict_report(s, DN2_SV_NOT_UP, r->wid, DN2_SR_SDIMM_INIT,
                          "SO-DIMM not initialised");
    } else if (!local && !s->wid[r->wid].pgid_set) {
        dimmnet2_strict_report(s, DN2_SV_NOT_UP, r->wid, r->wid ? DN2_SR_PGID1 : DN2_SR_PGID0,
                          "a network primitive before the PGID is written");
    }
    if (!local && s->sys.lid != dimmnet2_port_lid(s)) {
        g_autofree char *d = g_strdup_printf("LID register 0x%x, the port's LID 0x%x",
                                             s->sys.lid, dimmnet2_port_lid(s));
        dimmnet2_strict_report(s, DN2_SV_NO_LID, r->wid, DN2_SR_LID, d);
        *why = DN2_REFUSE_STRICT_LID;
        return true;
    }
    if (form != DN2_FORM_CONTIG && r->otype != DN2_OP_BOTF &&
        dn2_dtype_bytes(r->dtype) < 4 && r->otype < DN2_OP_IPUSH) {
        g_autofree char *d = g_strdup_printf("%s with %u-byte elements",
                                             dn2_otype_name(r->otype),
                                             dn2_dtype_bytes(r->dtype));
        dimmnet2_strict_report(s, DN2_SV_SMALL_ELEMENT, r->wid, DN2_UR_CMD0_LOWER, d);
        *why = DN2_REFUSE_STRICT_SMALL;
        return true;
    }
    if (r->src != DN2_COPY_OFF && sdimm_src && !dimmnet2_strict_grain(s, r, r->src, "SRCOff")) {
        *why = DN2_REFUSE_STRICT_MISALIGNED;
        return true;
    }
    if (r->dst != DN2_COPY_OFF && sdimm_dst && !dimmnet2_strict_grain(s, r, r->dst, "DSTOff")) {
        *why = DN2_REFUSE_STRICT_MISALIGNED;
        return true;
    }
    if (form == DN2_FORM_STRIDE && r->otype != DN2_OP_BOTF &&
        !dimmnet2_strict_grain(s, r, r->arg, "Stride")) {
        *why = DN2_REFUSE_STRICT_STRIDE;
        return true;
    }
    return false;
}
