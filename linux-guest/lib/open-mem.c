/* SPDX-License-Identifier: MIT */
/*
 * Opening a board: through /dev/mem (root: the whole window, System
 * Register included), or through the kernel driver (open-dev.c).
 */
#define _GNU_SOURCE
#include "dimmnet2.h"
#include "dn2-internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static void dn2_set_pieces(struct dn2 *d, uint8_t *win)
{
    d->ww = win + DN2_WW_OFF(d->wid, 0);
    d->pw = win + DN2_PW_OFF(d->wid, 0);
    d->llcm = win + DN2_LLCM_OFF(d->wid);
    d->lhb = win + DN2_LHB_OFF(d->wid);
    d->ur = (volatile uint64_t *)(win + DN2_UR_OFF(d->wid));
    d->sr = (volatile uint64_t *)(win + DN2_SR_BASE);
}

int dn2_open_mem(dn2_t **out, uint64_t phys_base, int wid)
{
    struct dn2 *d;
    void *win;
    int fd;

    if ((wid != 0 && wid != 1) || (phys_base & (DN2_BASE_ALIGN - 1))) {
        return -EINVAL;
    }
    fd = open("/dev/mem", O_RDWR | O_SYNC | O_CLOEXEC);
    if (fd < 0) {
        return -errno;
    }
    win = mmap(NULL, DN2_WINDOW_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
               (off_t)phys_base);
    if (win == MAP_FAILED) {
        int e = -errno;
        close(fd);
        return e;
    }
    d = calloc(1, sizeof(*d));
    if (!d) {
        munmap(win, DN2_WINDOW_SIZE);
        close(fd);
        return -ENOMEM;
    }
    d->fd = fd;
    d->wid = wid;
    d->map[0] = win;
    d->map_len[0] = DN2_WINDOW_SIZE;
    d->nmap = 1;
    dn2_set_pieces(d, win);
    /* Where the driver is absent, software owns the whole board: learn
     * what it can from the registers. */
    dn2i_lh_sync(d);
    *out = d;
    return 0;
}

/* Learn the LH Buffer's state from the board: the head, and each entry's
 * toggle parity (an earlier process on this WID may have used entries). */
void dn2i_lh_sync(struct dn2 *d)
{
    int i;

    d->lh_head = dn2_ur_read(d, DN2_UR_LHB_ADDR) & DN2_LHB_ADDR_MASK;
    for (i = 0; i < (int)DN2_LHB_ENTRIES; i++) {
        uint64_t l0 = *(const volatile uint64_t *)(d->lhb + i * DN2_LHB_ENTRY);
        d->lh_uses[i] = (l0 & DN2_LH_VALID) ? 1 : 0;
    }
}

void dn2_close(dn2_t *d)
{
    int i;

    if (!d) {
        return;
    }
    for (i = 0; i < d->nmap; i++) {
        munmap(d->map[i], d->map_len[i]);
    }
    if (d->fd >= 0) {
        close(d->fd);
    }
    free(d);
}

/* After a Controller Reset, the board's per-process state is gone. */
void dn2i_forget_state(struct dn2 *d)
{
    d->ex_flag = 0;
    d->ipush_units = 0;
    d->st_init = d->st_size = d->st_head = 0;
    d->lh_head = 0;
    memset(d->lh_uses, 0, sizeof(d->lh_uses));
    d->lid = 0;
    d->sdimm_bytes = 0;
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
