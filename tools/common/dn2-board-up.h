/* SPDX-License-Identifier: MIT */
/*
 * Bringing a DIMMnet-2 board up from outside the guest: the register
 * sequence a driver runs after a reset (SO-DIMMs, MTU, PGIDs, status
 * rings) and the reads that tell it is done (SO-DIMM ready, link and LID),
 * written once over a small accessor (readq/writeq of a guest-physical
 * address) so that both clients drive it: QEMU's libqtest in the qtests
 * (tests/qtest/dimmnet2-qtest-util.c) and the qtest client of the host
 * tools (tools/common/qtest-board.c: dn2-soak, dn2-scale, dn2-bench-qtest).
 *
 * Static inline functions over include/dimmnet2/dn2_abi.h and nothing else:
 * every offset, field and code comes from there.  The qtests see this file
 * as tests/qtest/dimmnet2-board-up.h (a link, which scripts/build-qemu.sh
 * carries into QEMU's tree with the other tests/qtest/dimmnet2* files).
 * The callers keep their own waiting (poll counts, deadlines, idling):
 * only the register accesses are here.
 */
#ifndef DN2_BOARD_UP_H
#define DN2_BOARD_UP_H

#include <stdbool.h>
#include <stdint.h>

#include "dimmnet2/dn2_abi.h"

/* One board's window as a client reaches it. */
struct dn2_board_io {
    void *ctx;                  /* the client's handle */
    uint64_t base;              /* guest-physical base of the window */
    uint64_t (*readq)(void *ctx, uint64_t addr);
    void (*writeq)(void *ctx, uint64_t addr, uint64_t v);
};

static inline uint64_t dn2_bio_ur_addr(const struct dn2_board_io *io, int wid, uint32_t off)
{
    return io->base + DN2_UR_OFF(wid) + off;
}

static inline uint64_t dn2_bio_sr_addr(const struct dn2_board_io *io, uint32_t off)
{
    return io->base + DN2_SR_BASE + off;
}

static inline uint64_t dn2_bio_ur(const struct dn2_board_io *io, int wid, uint32_t off)
{
    return io->readq(io->ctx, dn2_bio_ur_addr(io, wid, off));
}

static inline void dn2_bio_ur_w(const struct dn2_board_io *io, int wid, uint32_t off,
                                uint64_t v)
{
    io->writeq(io->ctx, dn2_bio_ur_addr(io, wid, off), v);
}

static inline uint64_t dn2_bio_sr(const struct dn2_board_io *io, uint32_t off)
{
    return io->readq(io->ctx, dn2_bio_sr_addr(io, off));
}

static inline void dn2_bio_sr_w(const struct dn2_board_io *io, uint32_t off, uint64_t v)
{
    io->writeq(io->ctx, dn2_bio_sr_addr(io, off), v);
}

/* SO-DIMM Capacity (the register value, dn2_sdimm_capacity_reg()), then Init. */
static inline void dn2_bio_sdimm_init(const struct dn2_board_io *io, uint64_t cap_reg)
{
    dn2_bio_sr_w(io, DN2_SR_SDIMM_CAPACITY, cap_reg);
    dn2_bio_sr_w(io, DN2_SR_SDIMM_INIT, 1);
}

/* Controller Status says the SO-DIMM initialisation is complete (bit 1). */
static inline bool dn2_bio_sdimm_ready(const struct dn2_board_io *io, uint64_t *cs)
{
    uint64_t v = dn2_bio_ur(io, 0, DN2_UR_CTL_STATUS);

    if (cs) {
        *cs = v;
    }
    return (v & DN2_CS_SDIMM_READY) != 0;
}

/* PGID0/1; a negative one is not written (no process, choice #32). */
static inline void dn2_bio_set_pgids(const struct dn2_board_io *io, int pgid0, int pgid1)
{
    if (pgid0 >= 0) {
        dn2_bio_sr_w(io, DN2_SR_PGID0, (uint64_t)pgid0);
    }
    if (pgid1 >= 0) {
        dn2_bio_sr_w(io, DN2_SR_PGID1, (uint64_t)pgid1);
    }
}

/* The receive-status ring of a WID at LLCM offset init, size register
 * size_reg (dn2_status_size_reg()): head and tail go to its start. */
static inline void dn2_bio_status_ring(const struct dn2_board_io *io, int wid, uint32_t init,
                                       uint64_t size_reg)
{
    dn2_bio_ur_w(io, wid, DN2_UR_STATUS_INIT, init);
    dn2_bio_ur_w(io, wid, DN2_UR_STATUS_SIZE, size_reg);
}

/* The SMA register says the link is up: true, with the LID in *lid. */
static inline bool dn2_bio_link(const struct dn2_board_io *io, uint16_t *lid)
{
    uint64_t v = dn2_bio_sr(io, DN2_SR_SMA);

    if (!dn2_sma_link_ready(v)) {
        return false;
    }
    if (lid) {
        *lid = dn2_sma_lid(v);
    }
    return true;
}

/* What a driver writes after a reset, in this order: SO-DIMM Capacity and
 * Init, MTU, PGID0/1, then for each WID of st_wids its Command Ex Flag
 * (when clear_cmd_ex) and its status ring.  Register values, not sizes:
 * the ABI's codecs make them (dn2_sdimm_capacity_reg, dn2_mtu_reg,
 * dn2_status_size_reg).  The SO-DIMMs are ready later: dn2_bio_sdimm_ready. */
struct dn2_bringup {
    uint64_t cap_reg;           /* SO-DIMM Capacity */
    uint64_t mtu_reg;           /* MTU; 0: not written */
    int pgid0, pgid1;           /* < 0: not written */
    unsigned st_wids;           /* bit w: set WID w's status ring */
    uint32_t st_init;           /* its LLCM offset */
    uint64_t st_size_reg;       /* its size register */
    bool clear_cmd_ex;          /* Command Ex Flag 0 on those WIDs first */
};

static inline void dn2_bio_bringup(const struct dn2_board_io *io, const struct dn2_bringup *c)
{
    int wid;

    dn2_bio_sdimm_init(io, c->cap_reg);
    if (c->mtu_reg) {
        dn2_bio_sr_w(io, DN2_SR_MTU, c->mtu_reg);
    }
    dn2_bio_set_pgids(io, c->pgid0, c->pgid1);
    for (wid = 0; wid < DN2_NUM_WID; wid++) {
        if (!(c->st_wids & (1u << wid))) {
            continue;
        }
        if (c->clear_cmd_ex) {
            dn2_bio_ur_w(io, wid, DN2_UR_CMD_EX_FLAG, 0);
        }
        dn2_bio_status_ring(io, wid, c->st_init, c->st_size_reg);
    }
}

#endif
