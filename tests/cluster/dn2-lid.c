/* SPDX-License-Identifier: MIT */
/*
 * dn2-lid: prints a DIMMnet-2 board's LID and link state, from inside a
 * Linux guest.  Built statically by scripts/build-initramfs.sh (it is in the
 * image as /bin/dn2-lid and in build/guest/export/bin/).
 *
 *   dn2-lid [-b BOARD] [-w SECONDS] [-e]
 *
 *   -b BOARD    ACPI _UID of the board (default 0)
 *   -w SECONDS  wait up to SECONDS for the link to come up (default: do not
 *               wait; 0 = read once)
 *   -e          print shell assignments instead of the human line:
 *                 DN2_LID=1 DN2_LINK=3 DN2_LINK_UP=1 DN2_BASE=0xfec10000
 *
 * It finds the board's window the way dn2-probe does (ACPI DNET0002 with the
 * given _UID, its resource in /proc/iomem), falling back to the default
 * placement (0xFEC10000 for board 0, 0xFEC70000 for board 1) when the
 * kernel has no ACPI or shows no resource, maps the System Register page through /dev/mem
 * (O_SYNC) and reads SMA LID (System Register 0x300): [15:0] the LID the
 * subnet manager assigned, [17:16] the link state, 3 = ready.  Only reads:
 * it never changes the board.
 *
 * Exit status: 0 link up, 1 link down (after -w: not up in time),
 * 2 usage or access error.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "../guest/dn2-sysfs.h"
#include "dimmnet2/dn2_abi.h"

#define ACPI_DIR "/sys/bus/acpi/devices"


/* The ACPI device name (e.g. "DNET0002:00") of the board with _UID board. */
static int find_acpi(int board, char *name, size_t len)
{
    DIR *d = opendir(ACPI_DIR);
    struct dirent *e;
    size_t hl = strlen(DN2_ACPI_HID);
    int found = 0;

    if (!d) {
        return 0;
    }
    while ((e = readdir(d))) {
        char path[512], uid[64];

        if (strncmp(e->d_name, DN2_ACPI_HID, hl) || e->d_name[hl] != ':') {
            continue;
        }
        snprintf(path, sizeof(path), ACPI_DIR "/%s/uid", e->d_name);
        if (read_line(path, uid, sizeof(uid)) < 0 || !uid[0] ||
            strtol(uid, NULL, 0) != board) {
            continue;
        }
        snprintf(name, len, "%.60s", e->d_name);
        found = 1;
        break;
    }
    closedir(d);
    return found;
}

/* "start-end : NAME" in /proc/iomem (at any depth). */
static int find_iomem(const char *name, uint64_t *start)
{
    FILE *f = fopen("/proc/iomem", "r");
    char line[256];
    int found = 0;

    if (!f) {
        return 0;
    }
    while (fgets(line, sizeof(line), f)) {
        unsigned long long s, e;
        char n[128];

        if (sscanf(line, " %llx-%llx : %127[^\n]", &s, &e, n) == 3 &&
            !strcmp(n, name) && s != 0) {
            *start = s;
            found = 1;
            break;
        }
    }
    fclose(f);
    return found;
}

static uint64_t now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void usage(const char *argv0)
{
    fprintf(stderr, "usage: %s [-b BOARD] [-w SECONDS] [-e]\n", argv0);
}

int main(int argc, char **argv)
{
    int board = 0, shell = 0, opt, fd, up;
    long wait_s = -1;
    char name[64];
    uint64_t base = 0, v, t0;
    const char *how = "ACPI";
    volatile uint64_t *sma;
    void *p;

    while ((opt = getopt(argc, argv, "b:w:eh")) != -1) {
        switch (opt) {
        case 'b':
            board = atoi(optarg);
            break;
        case 'w':
            wait_s = atol(optarg);
            break;
        case 'e':
            shell = 1;
            break;
        default:
            usage(argv[0]);
            return opt == 'h' ? 0 : 2;
        }
    }
    if (optind != argc || board < 0) {
        usage(argv[0]);
        return 2;
    }

    if (!find_acpi(board, name, sizeof(name))) {
        if (access(ACPI_DIR, F_OK) == 0 || board > 1) {
            fprintf(stderr, "dn2-lid: no %s device with _UID %d (is -device "
                    "dimmnet2 on the QEMU command line?)\n", DN2_ACPI_HID, board);
            return 2;
        }
        /* A kernel without ACPI: the default placement. */
        base = board ? DN2_DEFAULT_BASE1 : DN2_DEFAULT_BASE0;
        how = "default placement";
    } else if (!find_iomem(name, &base)) {
        base = board ? DN2_DEFAULT_BASE1 : DN2_DEFAULT_BASE0;
        how = "default placement";
    }
    fd = open("/dev/mem", O_RDONLY | O_SYNC);
    if (fd < 0) {
        fprintf(stderr, "dn2-lid: open /dev/mem: %s\n", strerror(errno));
        return 2;
    }
    p = mmap(NULL, DN2_SR_PAGE, PROT_READ, MAP_SHARED, fd,
             (off_t)(base + DN2_SR_BASE));
    close(fd);
    if (p == MAP_FAILED) {
        fprintf(stderr, "dn2-lid: mmap /dev/mem at 0x%llx (%s): %s\n",
                (unsigned long long)(base + DN2_SR_BASE), how, strerror(errno));
        return 2;
    }
    sma = (volatile uint64_t *)((volatile uint8_t *)p + DN2_SR_SMA);

    t0 = now_ms();
    for (;;) {
        v = *sma;
        up = dn2_sma_link_ready(v);
        if (up || wait_s <= 0 || now_ms() - t0 >= (uint64_t)wait_s * 1000) {
            break;
        }
        usleep(50000);
    }
    munmap(p, DN2_SR_PAGE);

    if (v == ~0ULL) {
        fprintf(stderr, "dn2-lid: SMA LID reads all ones at 0x%llx: no board "
                "there (is -device dimmnet2 on the QEMU command line?)\n",
                (unsigned long long)(base + DN2_SR_BASE + DN2_SR_SMA));
        return 2;
    }
    if (shell) {
        printf("DN2_LID=%llu DN2_LINK=%llu DN2_LINK_UP=%d DN2_BASE=0x%llx\n",
               (unsigned long long)dn2_sma_lid(v),
               (unsigned long long)dn2_sma_link(v),
               up, (unsigned long long)base);
    } else {
        printf("board %d at 0x%llx: LID 0x%04llx, link %s (SMA LID 0x%llx)\n",
               board, (unsigned long long)base,
               (unsigned long long)dn2_sma_lid(v), up ? "up" : "down",
               (unsigned long long)v);
    }
    return up ? 0 : 1;
}
