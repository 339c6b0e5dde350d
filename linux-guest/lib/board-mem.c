/* SPDX-License-Identifier: MIT */
/*
 * Board access through /dev/mem (root): the whole window is one mapping,
 * System Register included; administration writes the System Register.
 * Used by dsh and bring-up tools where no driver is loaded.  Calls only
 * dn2-internal.h (the board layer, below the primitives).
 */
#define _GNU_SOURCE
#include "libdimmnet2.h"
#include "dn2-internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static void mem_refresh(struct dn2 *d)
{
    uint64_t v = dn2i_sr_rd(d, DN2_SR_SMA);

    if (dn2_sma_link_ready(v)) {
        d->lid = dn2_sma_lid(v);
    }
}

static int mem_reset(struct dn2 *d)
{
    dn2i_sr_wr(d, DN2_SR_CTL_RESET, 1);
    return 0;
}

static int mem_sdimm_init(struct dn2 *d, unsigned capacity_code, long timeout_us)
{
    int r;

    dn2i_sr_wr(d, DN2_SR_SDIMM_CAPACITY, capacity_code);
    dn2i_sr_wr(d, DN2_SR_SDIMM_INIT, 1);
    r = DN2_POLL(d, timeout_us, dn2i_ur_rd(d, DN2_UR_CTL_STATUS) & DN2_CS_SDIMM_READY);
    if (!r) {
        d->sdimm_bytes = dn2_sdimm_module_bytes(capacity_code);
    }
    return r;
}

static int mem_mtu(struct dn2 *d, unsigned mtu_code)
{
    dn2i_sr_wr(d, DN2_SR_MTU, mtu_code);
    return 0;
}

static int mem_wait_link(struct dn2 *d, uint16_t *lid, long timeout_us)
{
    uint64_t v = 0;
    int r = DN2_POLL(d, timeout_us, dn2_sma_link_ready(v = dn2i_sr_rd(d, DN2_SR_SMA)));

    if (r) {
        return r == -ETIMEDOUT ? DN2_E_LINK : r;
    }
    d->lid = dn2_sma_lid(v);
    if (lid) {
        *lid = d->lid;
    }
    /* Tell the Core Logic its LID (bring-up step 4). */
    dn2i_sr_wr(d, DN2_SR_LID, d->lid);
    return 0;
}

static int mem_pgid(struct dn2 *d, int wid, unsigned pgid)
{
    dn2i_sr_wr(d, wid ? DN2_SR_PGID1 : DN2_SR_PGID0, DN2_FGET(pgid, DN2_SR_PGID_VALUE));
    return 0;
}

static int mem_amt(struct dn2 *d, uint16_t lid, int wid, unsigned value)
{
    /* for the process whose LLCM holds the entry (choice #52) */
    dn2i_sr_wr(d, DN2_SR_AMT, dn2_amt_encode_dwid(value, (uint32_t)wid, lid,
                                                  dn2_amt_value_wid(value)));
    return 0;
}

static const struct dn2_board_ops mem_ops = {
    .name = "/dev/mem",
    .close = dn2b_release,
    .refresh = mem_refresh,
    .reset = mem_reset,
    .sdimm_init = mem_sdimm_init,
    .mtu = mem_mtu,
    .wait_link = mem_wait_link,
    .pgid = mem_pgid,
    .amt = mem_amt,
};

int dn2b_mem_open(struct dn2 *d, uint64_t phys_base, int wid)
{
    uint8_t *win;
    void *m;
    int fd;

    fd = open("/dev/mem", O_RDWR | O_SYNC | O_CLOEXEC);
    if (fd < 0) {
        return -errno;
    }
    m = mmap(NULL, DN2_WINDOW_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)phys_base);
    if (m == MAP_FAILED) {
        int e = -errno;
        close(fd);
        return e;
    }
    win = m;
    d->ops = &mem_ops;
    d->fd = fd;
    d->wid = wid;
    d->map[0] = m;
    d->map_len[0] = DN2_WINDOW_SIZE;
    d->nmap = 1;
    d->ww = win + DN2_WW_OFF(wid, 0);
    d->pw = win + DN2_PW_OFF(wid, 0);
    d->llcm = win + DN2_LLCM_OFF(wid);
    d->lhb = win + DN2_LHB_OFF(wid);
    d->ur = (volatile uint64_t *)(win + DN2_UR_OFF(wid));
    d->sr = (volatile uint64_t *)(win + DN2_SR_BASE);
    return 0;
}

uint64_t dn2_find_base(const char **from)
{
    const char *env = getenv("DN2_BASE");
    const char *dummy;
    uint64_t base = 0;
    char line[256];
    FILE *f;

    from = from ? from : &dummy;
    if (env && *env) {
        *from = "$DN2_BASE";
        return strtoull(env, NULL, 0);
    }
    f = fopen("/proc/iomem", "r");
    if (f) {
        while (fgets(line, sizeof(line), f)) {
            unsigned long long lo;
            if (strstr(line, DN2_ACPI_HID) && sscanf(line, " %llx-", &lo) == 1 && lo) {
                base = lo;
                break;
            }
        }
        fclose(f);
    }
    if (base) {
        *from = "/proc/iomem " DN2_ACPI_HID;
        return base;
    }
    *from = "default";
    return DN2_DEFAULT_BASE0;
}
