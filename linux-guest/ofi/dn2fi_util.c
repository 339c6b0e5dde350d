/* SPDX-License-Identifier: MIT */
/*
 * libdimmnet2-fi: what every file of the provider uses, at the bottom of
 * the provider (dn2fi.h): the provider object (its entry points are
 * filled by dn2fi_init.c at fi_prov_ini), the -FI_ENOSYS stub, error
 * codes and the clock.
 */
#define _GNU_SOURCE
#include "dn2fi.h"

#include <errno.h>
#include <time.h>

/* The provider; getinfo, fabric and cleanup are set by fi_prov_ini
 * (dn2fi_init.c) before libfabric sees it.  Every file logs through it
 * (DN2FI_WARN, DN2FI_INFO). */
struct fi_provider dn2fi_prov = {
    .name = DN2FI_NAME,
    .version = DN2FI_VERSION,
    .fi_version = FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION),
};

ssize_t dn2fi_enosys(void)
{
    return -FI_ENOSYS;
}

int dn2fi_errno(int r)
{
    switch (r) {
    case 0: return 0;
    case -ETIMEDOUT: return -FI_ETIMEDOUT;
    case -EBUSY: return -FI_EBUSY;
    case -ENOENT: case -ENODEV: case -ENXIO: return -FI_ENODEV;
    case -EPERM: case -EACCES: return -FI_EPERM;
    case -ENOMEM: return -FI_ENOMEM;
    case -EINVAL: case -ERANGE: return -FI_EINVAL;
    case DN2_E_REFUSED: case DN2_E_SRC_OVF: case DN2_E_DST_OVF: return -FI_EIO;
    case DN2_E_LINK: return -FI_ENETDOWN;
    case DN2_E_RXERR: return -FI_EIO;
    default: return r < 0 && r > -4096 ? r : -FI_EOTHER;
    }
}

uint64_t dn2fi_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}
