/* SPDX-License-Identifier: MIT */
/*
 * Board access through the kernel driver (linux-guest/driver): the driver
 * gives this process a WID and lets it map only its own pieces, with the
 * memory types the thesis prescribes; administration goes through its
 * ioctls (the System Register is never mapped).  Calls only
 * dn2-internal.h (the board layer, below the primitives).
 */
#define _GNU_SOURCE
#include "libdimmnet2.h"
#include "dn2-internal.h"
#include "dimmnet2/dn2_uapi.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

static int dev_ioctl(struct dn2 *d, unsigned long req, void *arg)
{
    return ioctl(d->fd, req, arg) < 0 ? -errno : 0;
}

/* A timeout in microseconds as the driver's milliseconds (< 0: 60 s). */
static uint32_t dev_timeout_ms(long timeout_us)
{
    return timeout_us < 0 ? 60000 : (uint32_t)(timeout_us / 1000 + 1);
}

static void dev_refresh(struct dn2 *d)
{
    struct dn2_info info;

    if (dev_ioctl(d, DN2_IOC_GET_INFO, &info)) {
        return;
    }
    if ((info.flags & DN2_INFO_LINK_UP) && (info.flags & DN2_INFO_LID_SET)) {
        d->lid = (uint16_t)info.lid;
    }
    d->sdimm_bytes = info.sdimm_area;
}

static int dev_reset(struct dn2 *d)
{
    return dev_ioctl(d, DN2_IOC_CTL_RESET, NULL);
}

static int dev_sdimm_init(struct dn2 *d, unsigned capacity_code, long timeout_us)
{
    struct dn2_sdimm_init a = {
        .module_mib = (uint32_t)(dn2_sdimm_module_bytes(capacity_code) >> 20),
        .timeout_ms = dev_timeout_ms(timeout_us),
    };
    int r = dev_ioctl(d, DN2_IOC_SDIMM_INIT, &a);

    if (!r) {
        d->sdimm_bytes = a.sdimm_area;
    }
    return r;
}

static int dev_mtu(struct dn2 *d, unsigned mtu_code)
{
    uint32_t mtu = dn2_mtu_bytes(mtu_code);

    return dev_ioctl(d, DN2_IOC_SET_MTU, &mtu);
}

static int dev_wait_link(struct dn2 *d, uint16_t *lid, long timeout_us)
{
    struct dn2_link a = { .timeout_ms = dev_timeout_ms(timeout_us) };
    int r = dev_ioctl(d, DN2_IOC_LINK_UP, &a);

    if (r == -ETIMEDOUT) {
        return DN2_E_LINK;
    }
    if (!r) {
        d->lid = (uint16_t)a.lid;
        if (lid) {
            *lid = d->lid;
        }
    }
    return r;
}

static int dev_pgid(struct dn2 *d, int wid, unsigned pgid)
{
    struct dn2_pgid a = { .wid = (uint32_t)wid, .pgid = pgid };

    return dev_ioctl(d, DN2_IOC_SET_PGID, &a);
}

/* A process handle: its own entry, no privilege; a control handle: the
 * board's (both processes), root. */
static int dev_amt(struct dn2 *d, uint16_t lid, int wid, unsigned value)
{
    struct dn2_amt a = { .lid = lid, .wid = (uint32_t)wid, .value = value };

    return dev_ioctl(d, DN2_IOC_SET_AMT, &a);
}

static const struct dn2_board_ops dev_ops = {
    .name = "driver",
    .close = dn2b_release,
    .refresh = dev_refresh,
    .reset = dev_reset,
    .sdimm_init = dev_sdimm_init,
    .mtu = dev_mtu,
    .wait_link = dev_wait_link,
    .pgid = dev_pgid,
    .amt = dev_amt,
};

/* The pieces of the process's WID, with their memory types (dn2_uapi.h):
 * the read-only ones are the board's to write. */
static int dev_map_pieces(struct dn2 *d)
{
    enum { WW, PW, LLCM, LHB, UR, NPIECES };
    static const struct {
        off_t off;
        size_t len;
        int prot;
    } piece[NPIECES] = {
        [WW] = { DN2_MMAP_WW, DN2_MMAP_WW_LEN, PROT_READ | PROT_WRITE },
        [PW] = { DN2_MMAP_PW, DN2_MMAP_PW_LEN, PROT_READ },
        [LLCM] = { DN2_MMAP_LLCM, DN2_MMAP_LLCM_LEN, PROT_READ | PROT_WRITE },
        [LHB] = { DN2_MMAP_LHB, DN2_MMAP_LHB_LEN, PROT_READ },
        [UR] = { DN2_MMAP_UR, DN2_MMAP_UR_LEN, PROT_READ | PROT_WRITE },
    };
    void *p[NPIECES];
    int i;

    for (i = 0; i < NPIECES; i++) {
        if (d->nmap >= DN2_MAX_MAPS) {
            return -ENOMEM;
        }
        p[i] = mmap(NULL, piece[i].len, piece[i].prot, MAP_SHARED, d->fd, piece[i].off);
        if (p[i] == MAP_FAILED) {
            return -errno;
        }
        d->map[d->nmap] = p[i];
        d->map_len[d->nmap] = piece[i].len;
        d->nmap++;
    }
    d->ww = p[WW];
    d->pw = p[PW];
    d->llcm = p[LLCM];
    d->lhb = p[LHB];
    d->ur = p[UR];
    return 0;
}

int dn2b_dev_open(struct dn2 *d, const char *path, int control)
{
    struct dn2_info info;
    int r;

    /* Read-only: the driver's control handle takes no WID and maps
     * nothing; it is for GET_INFO and the administration ioctls. */
    d->fd = open(path ? path : DN2_DEV_PREFIX "0", (control ? O_RDONLY : O_RDWR) | O_CLOEXEC);
    if (d->fd < 0) {
        return -errno;
    }
    d->ops = &dev_ops;
    if (control) {
        d->wid = -1;
        d->control = 1;
        return 0;
    }
    if ((r = dev_ioctl(d, DN2_IOC_GET_INFO, &info))) {
        goto fail;
    }
    if (info.abi_version != DN2_ABI_VERSION) {
        r = -EPROTO;
        goto fail;
    }
    d->wid = (int)info.wid;
    if ((r = dev_map_pieces(d))) {
        goto fail;
    }
    return 0;
fail:
    dn2b_release(d);
    d->ops = NULL;
    return r;
}
