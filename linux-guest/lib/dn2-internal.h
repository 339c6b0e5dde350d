/* SPDX-License-Identifier: MIT */
/*
 * libdimmnet2 internals: the handle, the board-access operations and the
 * helpers every layer may use.  The library's files, top to bottom (each
 * calls only files below it; tests/layering/layers.txt, [linux-guest/lib]):
 *
 *   dn2msg.c                  tagged messages (dn2msg.h) over the public API
 *   libdimmnet2.c             primitives, completion, rings, LH Buffer,
 *                             opening and administration (public API)
 *   board-dev.c, board-mem.c  board access: map a board's pieces (through
 *                             the driver, or /dev/mem) and fill the
 *                             handle's dn2_board_ops (administration,
 *                             LID/area discovery, close); neither calls
 *                             the other
 *   this header, dn2-cpu.h    the handle, register access, polling, CPU,
 *                             releasing a board's mappings
 */
#ifndef DN2_INTERNAL_H
#define DN2_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "dimmnet2/dn2_abi.h"
#include "dn2-cpu.h"

#define DN2_ISSUE_TIMEOUT_US 5000000L   /* a board that stays busy 5 s is stuck */
#define DN2_MAX_MAPS         6

struct dn2;

/* What differs between the ways of opening a board.  Filled by the board
 * layer's open function; every call returns 0 or a negative error. */
struct dn2_board_ops {
    const char *name;               /* "driver", "/dev/mem" */
    /* Unmap and close what the open function set up (not the handle). */
    void (*close)(struct dn2 *d);
    /* Learn this board's LID and the process's SO-DIMM bytes, if known. */
    void (*refresh)(struct dn2 *d);
    /* Administration (the System Register, or the driver's ioctls). */
    int (*reset)(struct dn2 *d);
    int (*sdimm_init)(struct dn2 *d, unsigned capacity_code, long timeout_us);
    int (*mtu)(struct dn2 *d, unsigned mtu_code);
    int (*wait_link)(struct dn2 *d, uint16_t *lid, long timeout_us);
    int (*pgid)(struct dn2 *d, int wid, unsigned pgid);
    int (*amt)(struct dn2 *d, uint16_t lid, int wid, unsigned value);
};

struct dn2 {
    const struct dn2_board_ops *ops;
    int fd;
    int wid;
    int control;                    /* driver control handle: no mappings */
    volatile uint8_t *ww, *pw, *llcm, *lhb;
    volatile uint64_t *ur;
    volatile uint64_t *sr;          /* /dev/mem mode only */
    void *map[DN2_MAX_MAPS];
    size_t map_len[DN2_MAX_MAPS];
    int nmap;
    uint16_t lid;
    uint64_t sdimm_bytes;
    int ex_flag;                    /* what we last wrote to Command Ex Flag */
    uint32_t ipush_units;           /* what we last wrote to IPUSH Area Size */
    uint32_t st_init, st_size, st_head;
    uint32_t lh_head;
    uint8_t lh_uses[DN2_LHB_ENTRIES];  /* toggles seen per LH entry */
};

/* Board layer: set up d (fd, pieces, ops) or return an error with nothing
 * left open.  control: the driver's control handle (no WID, no maps). */
int dn2b_dev_open(struct dn2 *d, const char *path, int control);
int dn2b_mem_open(struct dn2 *d, uint64_t phys_base, int wid);

/* Unmap what the board layer mapped and close its descriptor (both open
 * paths' close operation and failure path). */
static inline void dn2b_release(struct dn2 *d)
{
    int i;

    for (i = 0; i < d->nmap; i++) {
        munmap(d->map[i], d->map_len[i]);
    }
    d->nmap = 0;
    if (d->fd >= 0) {
        close(d->fd);
        d->fd = -1;
    }
}

/* Registers of the process's User Register page and the System Register
 * (the latter mapped in /dev/mem mode only). */
static inline uint64_t dn2i_ur_rd(struct dn2 *d, unsigned off) { return d->ur[off / 8]; }
static inline void dn2i_ur_wr(struct dn2 *d, unsigned off, uint64_t v) { d->ur[off / 8] = v; }
static inline uint64_t dn2i_sr_rd(struct dn2 *d, unsigned off) { return d->sr[off / 8]; }
static inline void dn2i_sr_wr(struct dn2 *d, unsigned off, uint64_t v) { d->sr[off / 8] = v; }

static inline uint64_t dn2i_now_us(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000;
}

/* Polls until cond or the timeout: 0 means one look, < 0 forever.
 * The condition is tried once before the clock is read: most waits are
 * already over (an idle board executes a request inside its doorbell
 * write), and clock_gettime costs as much as a register read under TCG. */
#define DN2_POLL(d, timeout_us, cond)                                   \
    ({                                                                  \
        uint64_t _t0 = 0;                                               \
        int _r = -ETIMEDOUT, _first = 1;                                \
        for (;;) {                                                      \
            if (cond) { _r = 0; break; }                                \
            if (_first) { _first = 0; _t0 = dn2i_now_us(); }            \
            if ((timeout_us) >= 0 &&                                    \
                dn2i_now_us() - _t0 >= (uint64_t)(timeout_us)) break;   \
            dn2_cpu_relax();                                            \
        }                                                               \
        _r;                                                             \
    })

#endif
