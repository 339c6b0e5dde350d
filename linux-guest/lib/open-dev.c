/* SPDX-License-Identifier: MIT */
/*
 * Opening a board through the kernel driver (linux-guest/driver): the
 * driver gives this process a WID and lets it map only its own pieces,
 * with the memory types the thesis prescribes.  Administration goes
 * through the driver's privileged ioctls.
 */
#define _GNU_SOURCE
#include "dimmnet2.h"
#include "dn2-internal.h"
#include "dimmnet2/dn2_uapi.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

static int dn2_map(struct dn2 *d, off_t off, size_t len, int prot, void **out)
{
    void *p = mmap(NULL, len, prot, MAP_SHARED, d->fd, off);

    if (p == MAP_FAILED) {
        return -errno;
    }
    d->map[d->nmap] = p;
    d->map_len[d->nmap] = len;
    d->nmap++;
    *out = p;
    return 0;
}

void dn2i_refresh_info(struct dn2 *d)
{
    struct dn2_info info;

    if (d->sr || ioctl(d->fd, DN2_IOC_GET_INFO, &info) < 0) {
        return;
    }
    if ((info.flags & DN2_INFO_LINK_UP) && (info.flags & DN2_INFO_LID_SET)) {
        d->lid = (uint16_t)info.lid;
    }
    d->sdimm_bytes = info.sdimm_area;
}

int dn2_open(dn2_t **out, const char *path)
{
    struct dn2_info info;
    struct dn2 *d;
    void *p = NULL;
    int r;

    d = calloc(1, sizeof(*d));
    if (!d) {
        return -ENOMEM;
    }
    d->fd = open(path ? path : DN2_DEV_PREFIX "0", O_RDWR | O_CLOEXEC);
    if (d->fd < 0) {
        r = -errno;
        free(d);
        return r;
    }
    if (ioctl(d->fd, DN2_IOC_GET_INFO, &info) < 0) {
        r = -errno;
        goto fail;
    }
    if (info.abi_version != DN2_ABI_VERSION) {
        r = -EPROTO;
        goto fail;
    }
    d->wid = (int)info.wid;
    if ((r = dn2_map(d, DN2_MMAP_WW, DN2_MMAP_WW_LEN, PROT_READ | PROT_WRITE, &p))) {
        goto fail;
    }
    d->ww = p;
    if ((r = dn2_map(d, DN2_MMAP_PW, DN2_MMAP_PW_LEN, PROT_READ, &p))) {
        goto fail;
    }
    d->pw = p;
    if ((r = dn2_map(d, DN2_MMAP_LLCM, DN2_MMAP_LLCM_LEN, PROT_READ | PROT_WRITE, &p))) {
        goto fail;
    }
    d->llcm = p;
    if ((r = dn2_map(d, DN2_MMAP_LHB, DN2_MMAP_LHB_LEN, PROT_READ, &p))) {
        goto fail;
    }
    d->lhb = p;
    if ((r = dn2_map(d, DN2_MMAP_UR, DN2_MMAP_UR_LEN, PROT_READ | PROT_WRITE, &p))) {
        goto fail;
    }
    d->ur = p;
    dn2i_lh_sync(d);
    dn2i_refresh_info(d);
    *out = d;
    return 0;
fail:
    dn2_close(d);
    return r;
}

int dn2_open_control(dn2_t **out, const char *path)
{
    struct dn2 *d = calloc(1, sizeof(*d));
    int r;

    if (!d) {
        return -ENOMEM;
    }
    /* Read-only: the driver's control handle takes no WID and maps
     * nothing; it is for GET_INFO and the administration ioctls. */
    d->fd = open(path ? path : DN2_DEV_PREFIX "0", O_RDONLY | O_CLOEXEC);
    if (d->fd < 0) {
        r = -errno;
        free(d);
        return r;
    }
    d->wid = -1;
    d->control = 1;
    dn2i_refresh_info(d);
    *out = d;
    return 0;
}

/* Driver-mode administration (the System Register is never mapped). */
int dn2i_ioctl(struct dn2 *d, unsigned long req, void *arg)
{
    return ioctl(d->fd, req, arg) < 0 ? -errno : 0;
}

int dn2i_drv_reset(struct dn2 *d)
{
    return dn2i_ioctl(d, DN2_IOC_CTL_RESET, NULL);
}

int dn2i_drv_sdimm_init(struct dn2 *d, unsigned capacity_code, long timeout_us)
{
    struct dn2_sdimm_init a = {
        .module_mib = (uint32_t)(dn2_sdimm_module_bytes(capacity_code) >> 20),
        .timeout_ms = timeout_us < 0 ? 60000 : (uint32_t)(timeout_us / 1000 + 1),
    };
    int r = dn2i_ioctl(d, DN2_IOC_SDIMM_INIT, &a);

    if (!r) {
        d->sdimm_bytes = a.sdimm_area;
    }
    return r;
}

int dn2i_drv_mtu(struct dn2 *d, unsigned mtu_code)
{
    uint32_t mtu = dn2_mtu_bytes(mtu_code);

    return dn2i_ioctl(d, DN2_IOC_SET_MTU, &mtu);
}

int dn2i_drv_wait_link(struct dn2 *d, uint16_t *lid, long timeout_us)
{
    struct dn2_link a = {
        .timeout_ms = timeout_us < 0 ? 60000 : (uint32_t)(timeout_us / 1000 + 1),
    };
    int r = dn2i_ioctl(d, DN2_IOC_LINK_UP, &a);

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

int dn2i_drv_pgid(struct dn2 *d, int wid, unsigned pgid)
{
    struct dn2_pgid a = { .wid = (uint32_t)wid, .pgid = pgid };

    return dn2i_ioctl(d, DN2_IOC_SET_PGID, &a);
}

int dn2i_drv_amt(struct dn2 *d, uint16_t lid, int wid, unsigned value)
{
    struct dn2_amt a = { .lid = lid, .wid = (uint32_t)wid, .value = value };

    return dn2i_ioctl(d, DN2_IOC_SET_AMT, &a);
}
