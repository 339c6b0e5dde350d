/*
 * Helpers shared by the DIMMnet-2 qtests (dimmnet2-test, dimmnet2-remote-test,
 * dimmnet2-strict-test and the dimmnet2-fabric-*-test programs, whose own
 * helpers are in dimmnet2-fabric-util.h): QEMU start-up, non-fatal checks, the board's
 * register window, bounded polls, status and IPUSH rings, and file-backed
 * SO-DIMMs.  Every constant of the board comes from
 * include/dimmnet2/dn2_abi.h.
 *
 * Checks are non-fatal: a failing one prints "FAIL ..." (what, expected,
 * got), marks the test case failed and the case goes on.  A poll that times
 * out marks its DN2 dead: later polls on it read once and fail fast.
 *
 * Firmware: libqtest passes no -L, so every QEMU gets -L $DN2_FIRMWARE_DIR
 * (default ~/.cache/dimmnet2/firmware).
 *
 * Include after "qemu/osdep.h".
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#ifndef DIMMNET2_QTEST_UTIL_H
#define DIMMNET2_QTEST_UTIL_H

#include "libqtest.h"
#include "dimmnet2/dn2_abi.h"
#include "dimmnet2-board-up.h"      /* = tools/common/dn2-board-up.h */

#define KiB_ 1024ULL
#define MiB_ (1024ULL * 1024)

#define DN2Q_MAX_POLL 100000    /* register reads before a wait gives up */

/* MTU register codes (System Register MTU, one-hot) */
#define DN2Q_MTU_256  0x01u
#define DN2Q_MTU_512  0x02u
#define DN2Q_MTU_1K   0x04u
#define DN2Q_MTU_2K   0x08u
#define DN2Q_MTU_4K   0x10u

/* ------------------------------------------------------------------ */
/* Non-fatal checks with context                                       */
/* ------------------------------------------------------------------ */

#define EXPECT_HEX(got, want, ...) do { \
        uint64_t got_ = (uint64_t)(got), want_ = (uint64_t)(want); \
        if (got_ != want_) { \
            g_autofree char *ctx_ = g_strdup_printf(__VA_ARGS__); \
            g_test_message("FAIL %s:%d: %s: got 0x%" PRIx64 ", expected 0x%" \
                           PRIx64, __FILE__, __LINE__, ctx_, got_, want_); \
            g_test_fail(); \
        } \
    } while (0)

#define EXPECT_TRUE(cond, ...) do { \
        if (!(cond)) { \
            g_autofree char *ctx_ = g_strdup_printf(__VA_ARGS__); \
            g_test_message("FAIL %s:%d: %s (%s)", __FILE__, __LINE__, ctx_, #cond); \
            g_test_fail(); \
        } \
    } while (0)

/* Compare len bytes; on a difference report how many and the first (at
 * base_off + index) and fail the case. */
bool dn2q_mem_eq(const char *what, const void *got, const void *want, size_t len,
                 uint64_t base_off);

/* Deterministic test data. */
void dn2q_pattern(void *buf, size_t len, uint32_t seed);

/* ------------------------------------------------------------------ */
/* QEMU instances                                                      */
/* ------------------------------------------------------------------ */

/* $DN2_FIRMWARE_DIR, or ~/.cache/dimmnet2/firmware.  Free with g_free. */
char *dn2q_fw_dir(void);

/* qtest_initf("-L <firmware> -M <machine> -nodefaults -m 64M <fmt...>") */
QTestState *dn2q_vm_start(const char *machine, const char *fmt, ...)
    G_GNUC_PRINTF(2, 3);

/* qom-get of an unsigned property.  A failure fails the case with
 * "FAIL <who> failed" or "FAIL <who>: not an unsigned number"; returns 0. */
uint64_t dn2q_qom_get_u64(QTestState *qts, const char *path, const char *prop,
                          const char *who);
/* ... of the device -device ...,id=<id> */
uint64_t dn2q_qom_u64(QTestState *qts, const char *id, const char *prop);

/* ------------------------------------------------------------------ */
/* One board's window                                                  */
/* ------------------------------------------------------------------ */

/* The host's view of a receive-status ring (choices #24, #25). */
typedef struct DN2Status {
    uint32_t init;      /* Status Initial Address (LLCM offset) */
    uint32_t bytes;     /* ring size */
    uint32_t head;      /* the host's read pointer */
} DN2Status;

typedef struct DN2 {
    QTestState *qts;
    uint64_t base;      /* guest-physical window base */
    struct dn2_board_io io;     /* the same through libqtest, for dn2-board-up.h */
    bool dead;          /* a wait timed out: later waits fail fast */
    DN2Status st[DN2_NUM_WID];
} DN2;

void dn2q_open(DN2 *d, QTestState *qts, uint64_t base);

uint64_t dn2q_ur_addr(DN2 *d, int wid, uint32_t off);
uint64_t dn2q_ur_rd(DN2 *d, int wid, uint32_t off);
void dn2q_ur_wr(DN2 *d, int wid, uint32_t off, uint64_t v);
uint64_t dn2q_sr_rd(DN2 *d, uint32_t off);
void dn2q_sr_wr(DN2 *d, uint32_t off, uint64_t v);

uint64_t dn2q_cs(DN2 *d, int wid);                  /* Controller Status */
uint64_t dn2q_pc(DN2 *d, int wid);                  /* Primitive Counter */
unsigned dn2q_pcf(DN2 *d, int wid, int fam);        /* ... one family's field */
uint64_t dn2q_pwf(DN2 *d, int wid);                 /* PW Flag */
uint64_t dn2q_pkts(DN2 *d, int wid);                /* Packet Counter */
uint64_t dn2q_mstate(DN2 *d);                       /* Module State */
uint64_t dn2q_wc_state(DN2 *d);                     /* ... its Window Controller */

/* Guest-physical addresses of the buffers of a WID (window 0 + off). */
uint64_t dn2q_ww_addr(DN2 *d, int wid, uint32_t off);
uint64_t dn2q_pw_addr(DN2 *d, int wid, uint32_t off);
uint64_t dn2q_llcm_addr(DN2 *d, int wid, uint32_t off);
uint64_t dn2q_lhb_addr(DN2 *d, int wid, uint32_t off);

/* The whole Prefetch Window area of a WID holds `model`. */
bool dn2q_pw_expect(DN2 *d, int wid, const uint8_t *model, const char *what);

/* Poll a User Register until (value & mask) == want, at most max reads. */
bool dn2q_poll_ur(DN2 *d, int wid, uint32_t off, uint64_t mask, uint64_t want, int max,
                  const char *what);

/* The Primitive Counter bits of family fam, and a value of them. */
static inline uint64_t dn2q_pc_mask(int fam)
{
    return (uint64_t)DN2_PC_MASK << (fam * DN2_PC_BITS);
}
static inline uint64_t dn2q_pc_value(int fam, unsigned count)
{
    return (uint64_t)(count & DN2_PC_MASK) << (fam * DN2_PC_BITS);
}
/* Wait until the family's counter field is `target` (mod 1024). */
bool dn2q_wait_pc(DN2 *d, int wid, int fam, unsigned target, const char *what);

/* Requests: Upper (and Command Ex) then the Lower doorbell of Command0
 * (cmd 0) or Command1.  dn2q_issue* first wait for room in the Request FIFO
 * (Controller Status bits 0 and 2 clear, §5.2.2). */
void dn2q_doorbell(DN2 *d, int wid, int cmd, uint64_t upper, uint64_t lower);
void dn2q_doorbell_ex(DN2 *d, int wid, int cmd, uint64_t upper, uint64_t ex,
                      uint64_t lower);
void dn2q_wait_fifo_room(DN2 *d, int wid);
void dn2q_issue(DN2 *d, int wid, int cmd, uint64_t upper, uint64_t lower);
void dn2q_issue_ex(DN2 *d, int wid, int cmd, uint64_t upper, uint64_t ex,
                   uint64_t lower);

/* Bring-up (the sequences of dn2-board-up.h): SO-DIMM Capacity (the
 * register value) and Init; dn2q_board_init also waits for Controller
 * Status bit 1. */
void dn2q_sdimm_init(DN2 *d, uint64_t capacity);
void dn2q_board_init(DN2 *d, uint64_t capacity);
/* PGID0/1; a negative one is not written (no process, choice #32). */
void dn2q_set_pgids(DN2 *d, int pgid0, int pgid1);
/* dn2_bio_bringup, and the status rings it set recorded as dn2q_status_setup
 * does; the caller waits for the SO-DIMMs. */
void dn2q_bringup(DN2 *d, const struct dn2_bringup *c);

/* Receive-status ring of a WID at LLCM init, size register `code`: head
 * and tail go to its start (choice #25). */
void dn2q_status_setup(DN2 *d, int wid, uint32_t init, unsigned code);
uint32_t dn2q_status_next(DN2 *d, int wid, uint32_t pos);
/* Read the record at the host's head, then free it (head write). */
void dn2q_status_take(DN2 *d, int wid, uint64_t *lower, uint64_t *upper);

/* IPUSH rings (dn2_abi.h §5b): the AMT entry at LLCM offset `entry` of
 * WID dwid (Head = Tail = 0, Base, Size), registered for the sender
 * (slid, swid) through the AMT Address Table register. */
void dn2q_amt_setup(DN2 *d, int dwid, uint32_t entry, int swid, uint16_t slid,
                    uint32_t base, uint32_t size);
uint32_t dn2q_amt_get(DN2 *d, int dwid, uint32_t entry, uint32_t field);
void dn2q_amt_set(DN2 *d, int dwid, uint32_t entry, uint32_t field, uint32_t v);

/* ------------------------------------------------------------------ */
/* File-backed SO-DIMMs (memory-backend-file, share=on)                */
/* ------------------------------------------------------------------ */

typedef struct DN2SdFile {
    char *path;
    int fd;
    uint8_t *map;
    uint64_t size;
    uint64_t area;      /* per-process SO-DIMM area at the default Capacity */
} DN2SdFile;

/* A file of `size` bytes from the template `name` (ending in XXXXXX), in
 * /dev/shm when `shm` and it is writable, else in the temporary directory;
 * mapped shared. */
void dn2q_sdfile_create(DN2SdFile *f, uint64_t size, const char *name, bool shm);
void dn2q_sdfile_destroy(DN2SdFile *f);

/* QEMU (-M q35) with one board whose SO-DIMMs are the file:
 * -device dimmnet2,id=dn,memdev=m<props> */
QTestState *dn2q_start_memdev(const DN2SdFile *f, const char *props);

/* Where byte `off` of WID wid's SO-DIMM area is in the file (choice #10). */
uint64_t dn2q_sdfile_pos(const DN2SdFile *f, int wid, uint64_t off);
uint8_t *dn2q_sdfile_byte(const DN2SdFile *f, int wid, uint64_t off);
void dn2q_sdfile_put(const DN2SdFile *f, int wid, uint64_t off, const void *buf,
                     size_t len);
void dn2q_sdfile_get(const DN2SdFile *f, int wid, uint64_t off, void *buf, size_t len);
/* Compare; the report names "<what> (<who>WID n SO-DIMM a..b)". */
bool dn2q_sdfile_expect(const DN2SdFile *f, int wid, uint64_t off, const void *want,
                        size_t len, const char *who, const char *what);

#endif
