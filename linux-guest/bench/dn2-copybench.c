/* SPDX-License-Identifier: MIT */
/*
 * dn2-copybench: where the time of the receive-side copy goes (SO-DIMM ->
 * Prefetch Window -> host memory), in a guest with the driver loaded and
 * the board up (docs/ofi-provider.md, "The copy path").  Prints one line
 * per measurement: the cost of the single operations the copy is made of
 * (a User Register read and write, a CLFLUSH, a 2 KiB read of the
 * Prefetch Window) and the copy's throughput done four ways; then the
 * send side's staging (host memory -> Write Window -> SO-DIMM, VS) with
 * dn2_sd_write through two windows (the provider's half) and four.
 *
 *   dn2-copybench [MiB]        (default 4)
 */
#define _GNU_SOURCE
#include "libdimmnet2.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* VL without the library's checks: Upper, Lower. */
static void vl_raw(dn2_t *d, uint32_t sd, uint32_t pw, uint32_t n)
{
    dn2_ur_write(d, DN2_UR_CMD0_UPPER, dn2_req_upper(sd, pw));
    dn2_ur_write(d, DN2_UR_CMD0_LOWER, dn2_req_lower(DN2_OP_VL, 0, 0, 0, 0, 0, n));
}

int main(int argc, char **argv)
{
    size_t mib = argc > 1 ? strtoul(argv[1], NULL, 0) : 4, len = mib << 20, off;
    uint8_t *buf = malloc(len), tmp[2048];
    const uint32_t sd = 8u << 20;
    dn2_t *d;
    double t;
    int i, w, r = -12;
    volatile uint64_t sink = 0;

    if (!buf || (r = dn2_open(&d, NULL))) {
        fprintf(stderr, "dn2-copybench: open: %s\n", dn2_strerror(r));
        return 1;
    }
    t = now();
    for (i = 0; i < 20000; i++) sink += dn2_ur_read(d, DN2_UR_CTL_STATUS);
    printf("user-register read (MMIO)        %8.2f us\n", (now() - t) / 20000 * 1e6);
    t = now();
    for (i = 0; i < 20000; i++) dn2_ur_write(d, DN2_UR_CTL_STATUS, 0);
    printf("user-register write (MMIO)       %8.2f us\n", (now() - t) / 20000 * 1e6);
    t = now();
    for (i = 0; i < 20000; i++) {
        __asm__ volatile("clflush %0" : "+m"(*(volatile char *)(dn2_pw(d) + (i & 31) * 64)));
    }
    __asm__ volatile("mfence" ::: "memory");
    printf("clflush of a Prefetch Window line %8.3f us\n", (now() - t) / 20000 * 1e6);
    t = now();
    for (i = 0; i < 20000; i++) memcpy(tmp, (const void *)dn2_pw(d), 2048);
    printf("2 KiB read of the Prefetch Window %8.2f us (%.0f MB/s)\n",
           (now() - t) / 20000 * 1e6, 20000 * 2048 / (now() - t) / 1e6);

    t = now();
    for (i = 0; i < 20000; i++) dn2_ww_write(d, (uint32_t)(i & 3) * 512, tmp, 512);
    printf("512 B write of a Write Window     %8.2f us\n", (now() - t) / 20000 * 1e6);
    t = now();
    for (i = 0; i < 20000; i++) {
        dn2_ur_write(d, DN2_UR_CMD0_UPPER, dn2_req_upper((uint32_t)(i & 3) * 512, sd));
        dn2_ur_write(d, DN2_UR_CMD0_LOWER, dn2_req_lower(DN2_OP_VS, 0, 0, 0, 0, 0, 512));
    }
    sink += dn2_ur_read(d, DN2_UR_CTL_STATUS);
    printf("VS issue (Upper, Lower), 512 B    %8.2f us\n", (now() - t) / 20000 * 1e6);
    t = now();
    for (i = 0; i < 20000; i++) {
        dn2_ur_write(d, DN2_UR_CMD0_UPPER, dn2_req_upper(sd, (uint32_t)(i & 3) * 512));
        dn2_ur_write(d, DN2_UR_CMD0_LOWER, dn2_req_lower(DN2_OP_VL, 0, 0, 0, 0, 0, 512));
    }
    sink += dn2_ur_read(d, DN2_UR_CTL_STATUS);
    printf("VL issue (Upper, Lower), 512 B    %8.2f us\n", (now() - t) / 20000 * 1e6);

    /* the copy, four ways */
    t = now();
    for (off = 0; off < len; off += 512) {
        if ((r = dn2_vl(d, sd + (uint32_t)(off % (16u << 20)), 0, 512)) ||
            (r = dn2_wait_pw(d, 0, 1000000))) {
            fprintf(stderr, "vl: %s\n", dn2_strerror(r));
            return 1;
        }
        dn2_pw_read(d, 0, buf + off, 512);
    }
    printf("copy: library VL + wait, 1 window  %7.1f MB/s\n", len / (now() - t) / 1e6);
    t = now();
    if ((r = dn2_sd_read(d, sd, buf, len, 0xf, 1000000))) {
        fprintf(stderr, "sd_read: %s\n", dn2_strerror(r));
        return 1;
    }
    printf("copy: dn2_sd_read, 4 windows      %7.1f MB/s\n", len / (now() - t) / 1e6);
    t = now();
    for (off = 0; off < len; off += 2048) {
        /* 4 VLs (no FIFO poll: 4 < depth; no CLFLUSH), one flag poll */
        for (w = 0; w < 4; w++) vl_raw(d, sd + (uint32_t)((off + w * 512) % (16u << 20)), w * 512, 512);
        while ((dn2_ur_read(d, DN2_UR_PW_FLAG) & 0xffff) != 0xffff) {
        }
        memcpy(buf + off, (const void *)dn2_pw(d), 2048);
    }
    printf("copy: raw 4 VLs, 1 flag read      %7.1f MB/s\n", len / (now() - t) / 1e6);
    t = now();
    for (off = 0; off < len; off += 2048) {
        for (w = 0; w < 4; w++) vl_raw(d, sd + (uint32_t)((off + w * 512) % (16u << 20)), w * 512, 512);
        memcpy(buf + off, (const void *)dn2_pw(d), 2048);   /* no flag read at all */
    }
    printf("copy: raw 4 VLs, no flag read     %7.1f MB/s (the device's cost)\n", len / (now() - t) / 1e6);
    for (w = 2; w <= 4; w += 2) {
        t = now();
        if ((r = dn2_sd_write(d, sd, buf, len, (1u << w) - 1, 1000000))) {
            fprintf(stderr, "sd_write: %s\n", dn2_strerror(r));
            return 1;
        }
        printf("stage: dn2_sd_write, %d windows    %7.1f MB/s\n", w, len / (now() - t) / 1e6);
    }
    (void)sink;
    dn2_close(d);
    return 0;
}
