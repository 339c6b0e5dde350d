/*
 * Helpers shared by the DIMMnet-2 qtests: see dimmnet2-qtest-util.h.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include <sys/mman.h>
#include "libqtest.h"
#include "qobject/qdict.h"
#include "qobject/qnum.h"
#include "qemu/bswap.h"
#include "dimmnet2-qtest-util.h"

/* ------------------------------------------------------------------ */
/* Checks and test data                                                */
/* ------------------------------------------------------------------ */

bool dn2q_mem_eq(const char *what, const void *got_, const void *want_, size_t len,
                 uint64_t base_off)
{
    const uint8_t *got = got_, *want = want_;
    size_t i, n = 0, first = 0;

    for (i = 0; i < len; i++) {
        if (got[i] != want[i]) {
            if (!n) {
                first = i;
            }
            n++;
        }
    }
    if (n) {
        g_test_message("FAIL %s: %zu of %zu bytes differ; first at offset 0x%" PRIx64
                       ": got 0x%02x, expected 0x%02x", what, n, len,
                       base_off + first, got[first], want[first]);
        g_test_fail();
        return false;
    }
    return true;
}

void dn2q_pattern(void *buf, size_t len, uint32_t seed)
{
    uint8_t *p = buf;
    uint64_t x = 0x9e3779b97f4a7c15ULL ^ ((uint64_t)seed * 0x100000001b3ULL);
    size_t i;

    for (i = 0; i < len; i++) {
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        p[i] = (uint8_t)((x * 0x2545f4914f6cdd1dULL) >> 56);
    }
}

/* ------------------------------------------------------------------ */
/* QEMU instances                                                      */
/* ------------------------------------------------------------------ */

char *dn2q_fw_dir(void)
{
    const char *e = g_getenv("DN2_FIRMWARE_DIR");

    if (e && *e) {
        return g_strdup(e);
    }
    return g_build_filename(g_get_home_dir(), ".cache", "dimmnet2", "firmware", NULL);
}

QTestState *dn2q_vm_start(const char *machine, const char *fmt, ...)
{
    g_autofree char *fw = dn2q_fw_dir();
    g_autofree char *extra = NULL;
    va_list ap;

    va_start(ap, fmt);
    extra = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    return qtest_initf("-L %s -M %s -nodefaults -m 64M %s", fw, machine, extra);
}

uint64_t dn2q_qom_get_u64(QTestState *qts, const char *path, const char *prop,
                          const char *who)
{
    QDict *rsp = qtest_qmp(qts, "{'execute': 'qom-get', 'arguments': "
                           "{'path': %s, 'property': %s}}", path, prop);
    uint64_t v = 0;

    if (!qdict_haskey(rsp, "return")) {
        g_test_message("FAIL %s failed", who);
        g_test_fail();
    } else {
        QNum *n = qobject_to(QNum, qdict_get(rsp, "return"));
        if (!n || !qnum_get_try_uint(n, &v)) {
            g_test_message("FAIL %s: not an unsigned number", who);
            g_test_fail();
        }
    }
    qobject_unref(rsp);
    return v;
}

uint64_t dn2q_qom_u64(QTestState *qts, const char *id, const char *prop)
{
    g_autofree char *path = g_strdup_printf("/machine/peripheral/%s", id);
    g_autofree char *who = g_strdup_printf("qom-get %s %s", path, prop);

    return dn2q_qom_get_u64(qts, path, prop, who);
}

/* ------------------------------------------------------------------ */
/* One board's window                                                  */
/* ------------------------------------------------------------------ */

static uint64_t dn2q_io_readq(void *qts, uint64_t addr)
{
    return qtest_readq(qts, addr);
}

static void dn2q_io_writeq(void *qts, uint64_t addr, uint64_t v)
{
    qtest_writeq(qts, addr, v);
}

void dn2q_open(DN2 *d, QTestState *qts, uint64_t base)
{
    memset(d, 0, sizeof(*d));
    d->qts = qts;
    d->base = base;
    d->io = (struct dn2_board_io) {
        .ctx = qts, .base = base, .readq = dn2q_io_readq, .writeq = dn2q_io_writeq,
    };
}

uint64_t dn2q_ur_addr(DN2 *d, int wid, uint32_t off)
{
    return dn2_bio_ur_addr(&d->io, wid, off);
}

uint64_t dn2q_ur_rd(DN2 *d, int wid, uint32_t off)
{
    return dn2_bio_ur(&d->io, wid, off);
}

void dn2q_ur_wr(DN2 *d, int wid, uint32_t off, uint64_t v)
{
    dn2_bio_ur_w(&d->io, wid, off, v);
}

uint64_t dn2q_sr_rd(DN2 *d, uint32_t off)
{
    return dn2_bio_sr(&d->io, off);
}

void dn2q_sr_wr(DN2 *d, uint32_t off, uint64_t v)
{
    dn2_bio_sr_w(&d->io, off, v);
}

uint64_t dn2q_cs(DN2 *d, int wid)
{
    return dn2q_ur_rd(d, wid, DN2_UR_CTL_STATUS);
}

uint64_t dn2q_pc(DN2 *d, int wid)
{
    return dn2q_ur_rd(d, wid, DN2_UR_PRIM_COUNTER);
}

unsigned dn2q_pcf(DN2 *d, int wid, int fam)
{
    return dn2_pc_field(dn2q_pc(d, wid), fam);
}

uint64_t dn2q_pwf(DN2 *d, int wid)
{
    return dn2q_ur_rd(d, wid, DN2_UR_PW_FLAG);
}

uint64_t dn2q_pkts(DN2 *d, int wid)
{
    return dn2q_ur_rd(d, wid, DN2_UR_PKT_COUNTER);
}

uint64_t dn2q_mstate(DN2 *d)
{
    return dn2q_ur_rd(d, 0, DN2_UR_MODULE_STATE);
}

uint64_t dn2q_wc_state(DN2 *d)
{
    return dn2q_mstate(d) & DN2_MASK(16, 0);
}

uint64_t dn2q_ww_addr(DN2 *d, int wid, uint32_t off)
{
    return d->base + DN2_WW_OFF(wid, 0) + off;
}

uint64_t dn2q_pw_addr(DN2 *d, int wid, uint32_t off)
{
    return d->base + DN2_PW_OFF(wid, 0) + off;
}

uint64_t dn2q_llcm_addr(DN2 *d, int wid, uint32_t off)
{
    return d->base + DN2_LLCM_OFF(wid) + off;
}

uint64_t dn2q_lhb_addr(DN2 *d, int wid, uint32_t off)
{
    return d->base + DN2_LHB_OFF(wid) + off;
}

bool dn2q_pw_expect(DN2 *d, int wid, const uint8_t *model, const char *what)
{
    uint8_t got[DN2_WIN_AREA];

    qtest_memread(d->qts, dn2q_pw_addr(d, wid, 0), got, sizeof(got));
    return dn2q_mem_eq(what, got, model, sizeof(got), 0);
}

bool dn2q_poll_ur(DN2 *d, int wid, uint32_t off, uint64_t mask, uint64_t want, int max,
                  const char *what)
{
    uint64_t v = 0;
    int i;

    if (d->dead) {
        max = 1;
    }
    for (i = 0; i < max; i++) {
        v = dn2q_ur_rd(d, wid, off);
        if ((v & mask) == want) {
            return true;
        }
    }
    g_test_message("FAIL waiting for %s: UR%d+0x%03x = 0x%" PRIx64 " after %d reads; "
                   "wanted (value & 0x%" PRIx64 ") == 0x%" PRIx64,
                   what, wid, off, v, max, mask, want);
    g_test_fail();
    d->dead = true;
    return false;
}

bool dn2q_wait_pc(DN2 *d, int wid, int fam, unsigned target, const char *what)
{
    return dn2q_poll_ur(d, wid, DN2_UR_PRIM_COUNTER, dn2q_pc_mask(fam),
                        dn2q_pc_value(fam, target), DN2Q_MAX_POLL, what);
}

void dn2q_doorbell(DN2 *d, int wid, int cmd, uint64_t upper, uint64_t lower)
{
    dn2q_ur_wr(d, wid, cmd ? DN2_UR_CMD1_UPPER : DN2_UR_CMD0_UPPER, upper);
    dn2q_ur_wr(d, wid, cmd ? DN2_UR_CMD1_LOWER : DN2_UR_CMD0_LOWER, lower);
}

void dn2q_doorbell_ex(DN2 *d, int wid, int cmd, uint64_t upper, uint64_t ex,
                      uint64_t lower)
{
    dn2q_ur_wr(d, wid, DN2_UR_CMD_EX_FLAG, 1);
    dn2q_ur_wr(d, wid, cmd ? DN2_UR_CMD1_UPPER : DN2_UR_CMD0_UPPER, upper);
    dn2q_ur_wr(d, wid, DN2_UR_CMD_EX, ex);
    dn2q_ur_wr(d, wid, cmd ? DN2_UR_CMD1_LOWER : DN2_UR_CMD0_LOWER, lower);
    dn2q_ur_wr(d, wid, DN2_UR_CMD_EX_FLAG, 0);
}

void dn2q_wait_fifo_room(DN2 *d, int wid)
{
    dn2q_poll_ur(d, wid, DN2_UR_CTL_STATUS, DN2_CS_REQ_PENDING | DN2_CS_FIFO_AFULL, 0,
                 DN2Q_MAX_POLL, "room in the Request FIFO (bits 0 and 2 clear)");
}

void dn2q_issue(DN2 *d, int wid, int cmd, uint64_t upper, uint64_t lower)
{
    dn2q_wait_fifo_room(d, wid);
    dn2q_doorbell(d, wid, cmd, upper, lower);
}

void dn2q_issue_ex(DN2 *d, int wid, int cmd, uint64_t upper, uint64_t ex,
                   uint64_t lower)
{
    dn2q_wait_fifo_room(d, wid);
    dn2q_doorbell_ex(d, wid, cmd, upper, ex, lower);
}

void dn2q_sdimm_init(DN2 *d, uint64_t capacity)
{
    dn2_bio_sdimm_init(&d->io, capacity);
}

void dn2q_board_init(DN2 *d, uint64_t capacity)
{
    dn2q_sdimm_init(d, capacity);
    dn2q_poll_ur(d, 0, DN2_UR_CTL_STATUS, DN2_CS_SDIMM_READY, DN2_CS_SDIMM_READY,
                 DN2Q_MAX_POLL, "SO-DIMM initialisation complete (Controller Status bit 1)");
}

void dn2q_set_pgids(DN2 *d, int pgid0, int pgid1)
{
    dn2_bio_set_pgids(&d->io, pgid0, pgid1);
}

static void dn2q_status_note(DN2 *d, int wid, uint32_t init, uint64_t code)
{
    d->st[wid].init = init;
    d->st[wid].bytes = dn2_status_area_bytes(code);
    d->st[wid].head = init;
}

void dn2q_status_setup(DN2 *d, int wid, uint32_t init, unsigned code)
{
    dn2_bio_status_ring(&d->io, wid, init, code);
    dn2q_status_note(d, wid, init, code);
}

void dn2q_bringup(DN2 *d, const struct dn2_bringup *c)
{
    int wid;

    dn2_bio_bringup(&d->io, c);
    for (wid = 0; wid < DN2_NUM_WID; wid++) {
        if (c->st_wids & (1u << wid)) {
            dn2q_status_note(d, wid, c->st_init, c->st_size_reg);
        }
    }
}

uint32_t dn2q_status_next(DN2 *d, int wid, uint32_t pos)
{
    const DN2Status *s = &d->st[wid];

    return s->init + (pos - s->init + DN2_STATUS_REC_SIZE) % s->bytes;
}

void dn2q_status_take(DN2 *d, int wid, uint64_t *lower, uint64_t *upper)
{
    DN2Status *s = &d->st[wid];

    *lower = qtest_readq(d->qts, dn2q_llcm_addr(d, wid, s->head));
    *upper = qtest_readq(d->qts, dn2q_llcm_addr(d, wid, s->head + 8));
    s->head = dn2q_status_next(d, wid, s->head);
    dn2q_ur_wr(d, wid, DN2_UR_STATUS_ADDR, s->head);
}

void dn2q_amt_setup(DN2 *d, int dwid, uint32_t entry, int swid, uint16_t slid,
                    uint32_t base, uint32_t size)
{
    uint8_t e[DN2_AMT_ENTRY];

    stl_le_p(e + DN2_AMT_HEAD, 0);
    stl_le_p(e + DN2_AMT_TAIL, 0);
    stl_le_p(e + DN2_AMT_BASE, base);
    stl_le_p(e + DN2_AMT_SIZE, size);
    qtest_memwrite(d->qts, dn2q_llcm_addr(d, dwid, entry), e, sizeof(e));
    dn2q_sr_wr(d, DN2_SR_AMT,
               dn2_amt_encode((DN2_LLCM_OFF(dwid) - DN2_LLCM_BASE + entry) / DN2_AMT_UNIT,
                              swid, slid));
}

uint32_t dn2q_amt_get(DN2 *d, int dwid, uint32_t entry, uint32_t field)
{
    return qtest_readl(d->qts, dn2q_llcm_addr(d, dwid, entry + field));
}

void dn2q_amt_set(DN2 *d, int dwid, uint32_t entry, uint32_t field, uint32_t v)
{
    qtest_writel(d->qts, dn2q_llcm_addr(d, dwid, entry + field), v);
}

/* ------------------------------------------------------------------ */
/* File-backed SO-DIMMs                                                */
/* ------------------------------------------------------------------ */

void dn2q_sdfile_create(DN2SdFile *f, uint64_t size, const char *name, bool shm)
{
    GError *err = NULL;

    memset(f, 0, sizeof(*f));
    if (shm && g_file_test("/dev/shm", G_FILE_TEST_IS_DIR) &&
        access("/dev/shm", W_OK) == 0) {
        f->path = g_build_filename("/dev/shm", name, NULL);
        f->fd = g_mkstemp(f->path);
    } else {
        f->fd = g_file_open_tmp(name, &f->path, &err);
        g_assert_no_error(err);
    }
    g_assert_cmpint(f->fd, >=, 0);
    g_assert_cmpint(ftruncate(f->fd, size), ==, 0);
    f->size = size;
    f->area = MIN(DN2_SDIMM_CAP_DEFAULT, size / DN2_SDIMM_MODULES);
    f->map = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, f->fd, 0);
    g_assert_true(f->map != MAP_FAILED);
}

void dn2q_sdfile_destroy(DN2SdFile *f)
{
    if (!f->map) {
        return;
    }
    munmap(f->map, f->size);
    close(f->fd);
    unlink(f->path);
    g_free(f->path);
    memset(f, 0, sizeof(*f));
}

QTestState *dn2q_start_memdev(const DN2SdFile *f, const char *props)
{
    return dn2q_vm_start("q35", "-object memory-backend-file,id=m,size=%" PRIu64
                         ",mem-path=%s,share=on -device dimmnet2,id=dn,memdev=m%s",
                         f->size, f->path, props);
}

uint64_t dn2q_sdfile_pos(const DN2SdFile *f, int wid, uint64_t off)
{
    uint64_t a = (uint64_t)wid * f->area + off;

    return dn2_sdimm_module(a) * (f->size / DN2_SDIMM_MODULES) +
           dn2_sdimm_module_offset(a);
}

uint8_t *dn2q_sdfile_byte(const DN2SdFile *f, int wid, uint64_t off)
{
    return f->map + dn2q_sdfile_pos(f, wid, off);
}

/* The bytes of one interleave unit are contiguous in the file. */
void dn2q_sdfile_put(const DN2SdFile *f, int wid, uint64_t off, const void *buf,
                     size_t len)
{
    const uint8_t *p = buf;

    while (len) {
        size_t n = MIN(len, DN2_SDIMM_INTERLEAVE - off % DN2_SDIMM_INTERLEAVE);
        memcpy(dn2q_sdfile_byte(f, wid, off), p, n);
        p += n;
        off += n;
        len -= n;
    }
}

void dn2q_sdfile_get(const DN2SdFile *f, int wid, uint64_t off, void *buf, size_t len)
{
    uint8_t *p = buf;

    while (len) {
        size_t n = MIN(len, DN2_SDIMM_INTERLEAVE - off % DN2_SDIMM_INTERLEAVE);
        memcpy(p, dn2q_sdfile_byte(f, wid, off), n);
        p += n;
        off += n;
        len -= n;
    }
}

bool dn2q_sdfile_expect(const DN2SdFile *f, int wid, uint64_t off, const void *want,
                        size_t len, const char *who, const char *what)
{
    g_autofree uint8_t *got = g_malloc(len ? len : 1);
    g_autofree char *w = g_strdup_printf("%s (%sWID %d SO-DIMM 0x%" PRIx64 "..0x%" PRIx64
                                         ")", what, who, wid, off, off + len);

    dn2q_sdfile_get(f, wid, off, got, len);
    return dn2q_mem_eq(w, got, want, len, off);
}
