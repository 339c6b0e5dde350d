/*
 * DIMMnet-2 SO-DIMMs: the two modules behind the NIC, split evenly between
 * the two processes, interleaved every 8 bytes (thesis §4.6.1), and the one
 * pattern iterator (contiguous, strided, list) every primitive and the
 * Receive Controller use.
 *
 * Every offset here comes from the guest or the network: nothing is
 * touched before it is checked against the process's area.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "exec/memory.h"
#include "dimmnet2-int.h"

/*
 * Bytes of SO-DIMM each process owns: the two modules are split evenly
 * between WID 0 and WID 1, so a process owns one module's worth.  The
 * Capacity register says what is installed; we cannot give more than the
 * backing memory holds.
 */
uint64_t dimmnet2_sdimm_area(DN2State *s)
{
    return MIN(dn2_sdimm_module_bytes(s->sys.sdimm_cap_reg), s->win.sodimm_bytes / 2);
}

/*
 * Copy between a buffer and the process's SO-DIMM area, through the 8-byte
 * interleave of the two modules.  The backing memory holds module 0 then
 * module 1.  False (and nothing moved) unless [off, off + len) is inside
 * the area.
 */
bool dimmnet2_sdimm_rw(DN2State *s, int wid, uint64_t off, void *buf,
                       uint64_t len, bool is_write)
{
    uint64_t area = dimmnet2_sdimm_area(s);
    uint64_t half = s->win.sodimm_bytes / 2;
    uint64_t g, end;
    uint8_t *p = buf;

    if (off > area || len > area - off) {
        return false;
    }
    if (!len) {
        return true;
    }
    g = (uint64_t)wid * area + off;
    end = g + len;
    while (g < end) {
        uint64_t chunk;

        if (!(g & 15) && end - g >= 16) {
            /* Fast path: whole 16-byte blocks are 8 bytes in each module
             * at the same module offset. */
            uint64_t i, blocks = (end - g) >> 4;
            uint8_t *m0 = s->win.sodimm_ptr + ((g >> 4) << 3);
            uint8_t *m1 = m0 + half;

            if (is_write) {
                for (i = 0; i < blocks; i++, p += 16) {
                    memcpy(m0 + 8 * i, p, 8);
                    memcpy(m1 + 8 * i, p + 8, 8);
                }
            } else {
                for (i = 0; i < blocks; i++, p += 16) {
                    memcpy(p, m0 + 8 * i, 8);
                    memcpy(p + 8, m1 + 8 * i, 8);
                }
            }
            g += blocks << 4;
            continue;
        }
        chunk = MIN(DN2_SDIMM_INTERLEAVE - (g & 7), end - g);
        uint8_t *m = s->win.sodimm_ptr + dn2_sdimm_module(g) * half +
                     dn2_sdimm_module_offset(g);
        if (is_write) {
            memcpy(m, p, chunk);
        } else {
            memcpy(p, m, chunk);
        }
        p += chunk;
        g += chunk;
    }
    if (is_write) {
        /* Both modules hold part of [start, end): mark that span in each. */
        uint64_t start = (uint64_t)wid * area + off;
        uint64_t lo = (start >> 4) << 3;
        uint64_t hi = (((end - 1) >> 4) << 3) + 8;
        memory_region_set_dirty(s->win.sodimm_mr, lo, hi - lo);
        memory_region_set_dirty(s->win.sodimm_mr, half + lo, hi - lo);
    }
    return true;
}

/* Read list entry i (a 32-bit little-endian SO-DIMM offset) at list+4i. */
bool dimmnet2_sdimm_list_entry(DN2State *s, int wid, uint32_t list, uint32_t i,
                               uint32_t *out)
{
    uint8_t b[4];
    uint32_t a = list + 4 * i;

    if (!dimmnet2_sdimm_rw(s, wid, a, b, 4, false)) {
        return false;
    }
    *out = ldl_le_p(b);
    return true;
}

/* ------------------------------------------------------------------ */
/* Patterns                                                            */
/* ------------------------------------------------------------------ */

void dimmnet2_pattern_init(DN2Pattern *p, int form, uint32_t base, uint32_t arg,
                           unsigned dtype)
{
    p->form = form;
    p->base = base;
    p->arg = arg;
    p->esz = dn2_dtype_bytes(dtype);
}

bool dimmnet2_pattern_addr(DN2State *s, int wid, const DN2Pattern *p,
                           uint32_t i, uint32_t *addr)
{
    uint32_t off;

    switch (p->form) {
    case DN2_FORM_CONTIG:
        *addr = p->base + i * p->esz;
        return true;
    case DN2_FORM_STRIDE:
        *addr = p->base + i * p->arg;
        return true;
    default:
        if (!dimmnet2_sdimm_list_entry(s, wid, p->arg, i, &off)) {
            return false;
        }
        *addr = p->base + off;
        return true;
    }
}

/*
 * Move bytes [off, off + len) of the pattern's stream: its elements one
 * after another (contiguous: the run itself).  What cannot be moved is
 * skipped, buf left as it was there: a list entry that cannot be read, an
 * element not wholly inside the area, the part of a run past the area end.
 */
static unsigned dimmnet2_pattern_xfer(DN2State *s, int wid, const DN2Pattern *p,
                                      uint64_t off, uint8_t *buf, uint64_t len,
                                      bool is_write, uint64_t *moved)
{
    uint64_t area = dimmnet2_sdimm_area(s);
    uint64_t done = 0;
    unsigned bad = 0;

    if (p->form == DN2_FORM_CONTIG) {
        uint64_t a = (uint64_t)p->base + off;
        uint64_t n = a < area ? MIN(len, area - a) : 0;

        dimmnet2_sdimm_rw(s, wid, a, buf, n, is_write);
        done = n;
        bad = n < len ? DIMMNET2_PAT_OUTSIDE : 0;
    } else {
        while (len) {
            uint32_t i = off / p->esz, e = off % p->esz, a;
            uint64_t n = MIN(len, p->esz - e);

            if (!dimmnet2_pattern_addr(s, wid, p, i, &a)) {
                bad |= DIMMNET2_PAT_LIST_BAD;
            } else if ((uint64_t)a + p->esz > area) {
                bad |= DIMMNET2_PAT_OUTSIDE;
            } else {
                dimmnet2_sdimm_rw(s, wid, (uint64_t)a + e, buf, n, is_write);
                done += n;
            }
            buf += n;
            off += n;
            len -= n;
        }
    }
    if (moved) {
        *moved = done;
    }
    return bad;
}

unsigned dimmnet2_pattern_read(DN2State *s, int wid, const DN2Pattern *p,
                               uint64_t off, void *buf, uint64_t len,
                               uint64_t *moved)
{
    return dimmnet2_pattern_xfer(s, wid, p, off, buf, len, false, moved);
}

unsigned dimmnet2_pattern_write(DN2State *s, int wid, const DN2Pattern *p,
                                uint64_t off, const void *buf, uint64_t len,
                                uint64_t *moved)
{
    return dimmnet2_pattern_xfer(s, wid, p, off, (uint8_t *)buf, len, true, moved);
}
