/* SPDX-License-Identifier: MIT */
/*
 * dn2-probe: checks a DIMMnet-2 board from inside a Linux guest, with TAP
 * output.  Built statically on the host and run from the test initramfs:
 *
 *   dn2-probe [BOARD]        BOARD = ACPI _UID of the board (default 0)
 *
 * It finds the board the way a driver would (ACPI device DNET0002 with the
 * given _UID, its window in /proc/iomem), maps the window through /dev/mem
 * (O_SYNC: uncached) and drives it with 64-bit loads and stores:
 *
 *   - reset values of Controller Status, Prefetch Window Flag, SMA LID;
 *   - SO-DIMM Capacity + SO-DIMM Init, then Controller Status bit 1;
 *   - a VS (Write Window 0 -> SO-DIMM) / VL (SO-DIMM -> Prefetch Window 1)
 *     round trip, checked through the Primitive Counter, the per-window
 *     Controller Status bits, the Prefetch Window flags and the bytes;
 *   - status describes the request just issued: with the Window Controller
 *     parked on a remote store (no link), a VS and a VL queued behind it
 *     must already have cleared WW0's status bits and PW1's flags;
 *   - Controller Reset, which must restore the reset values (this also
 *     lets the probe run again in the same boot).
 *
 * Lines starting with "# " are diagnostics (decoded register values);
 * scripts/demo.sh shows them as its report.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#include <dirent.h>

#include "dn2-sysfs.h"
#include "../tap/dn2-tap.h"
#include "dimmnet2/dn2_abi.h"

#define POLL_TIMEOUT_NS   (5ULL * 1000 * 1000 * 1000)   /* 5 s: TCG is slow */
#define SDIMM_TEST_OFF    0x1000u   /* SO-DIMM offset used by the round trip */
#define VL_WINDOW         1         /* Prefetch Window receiving the VL */
#define ACPI_DIR          "/sys/bus/acpi/devices"

enum {
    T_ACPI = 1,
    T_IOMEM,
    T_MMAP,
    T_CS_RESET,
    T_PWF_RESET,
    T_SMA,
    T_SDIMM_INIT,
    T_VS_DONE,
    T_CS_WW0,
    T_VL_DONE,
    T_COMPARE,
    T_STALL,
    T_VS_ISSUE,
    T_VL_ISSUE,
    T_CTL_RESET,
    T_COUNT = T_CTL_RESET
};

static int board;
static volatile uint8_t *win;     /* the mapped 0x60000-byte window */

/* ------------------------------------------------------------- TAP */

/* Test point `test` (its number: the checks run in the order of the
 * enum), about this board. */
static void __attribute__((format(printf, 3, 4))) result(int test, int ok, const char *fmt, ...)
{
    char desc[512];
    va_list ap;

    if (test != tap_count() + 1) {
        /* Programming error in the probe itself: keep the numbering sane. */
        fprintf(stderr, "dn2-probe: internal: test %d reported as %d\n",
                tap_count() + 1, test);
    }
    va_start(ap, fmt);
    vsnprintf(desc, sizeof(desc), fmt, ap);
    va_end(ap);
    tap_result(ok, "board %d: %s", board, desc);
}

/* Test point `test` skipped: why. */
static void skipped(int test, const char *why)
{
    if (test != tap_count() + 1) {
        fprintf(stderr, "dn2-probe: internal: test %d reported as %d\n",
                tap_count() + 1, test);
    }
    tap_skip(why, "board %d:", board);
}

/* A prerequisite failed: report every remaining test as failed. */
static int bail(const char *why)
{
    while (tap_count() < T_COUNT) {
        result(tap_count() + 1, 0, "not run (%s)", why);
    }
    return 1;
}

/* ------------------------------------------------------- registers */

static inline uint64_t rd64(uint32_t off)
{
    return *(volatile uint64_t *)(win + off);
}

static inline void wr64(uint32_t off, uint64_t v)
{
    *(volatile uint64_t *)(win + off) = v;
}

static uint64_t ur(uint32_t reg)            /* User Register page of WID 0 */
{
    return rd64(DN2_UR_OFF(0) + reg);
}

static void ur_wr(uint32_t reg, uint64_t v)
{
    wr64(DN2_UR_OFF(0) + reg, v);
}

static uint64_t now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* Poll reg until (value & mask) == want; returns 1 on success, the last
 * value in *last and the time taken in *ns. */
static int poll_reg(uint32_t off, uint64_t mask, uint64_t want, uint64_t *last,
                    uint64_t *ns)
{
    uint64_t t0 = now_ns(), v;

    for (;;) {
        v = rd64(off);
        if ((v & mask) == want) {
            break;
        }
        if (now_ns() - t0 > POLL_TIMEOUT_NS) {
            *last = v;
            *ns = now_ns() - t0;
            return 0;
        }
        sched_yield();
    }
    *last = v;
    *ns = now_ns() - t0;
    return 1;
}

static void decode_cs(const char *when, uint64_t v)
{
    char buf[256] = "";
    int n;

    if (v & DN2_CS_REQ_PENDING) strcat(buf, " req-pending");
    if (v & DN2_CS_SDIMM_READY) strcat(buf, " sdimm-ready");
    if (v & DN2_CS_FIFO_AFULL) strcat(buf, " fifo-almost-full");
    if (v & DN2_CS_STATUS_FULL) strcat(buf, " status-full");
    if (v & DN2_CS_STATUS_EMPTY) strcat(buf, " status-empty");
    for (n = 0; n < DN2_NUM_WW; n++) {
        char w[48];
        if (!(v & DN2_CS_WW_MASK(n))) {
            continue;
        }
        snprintf(w, sizeof(w), " ww%d:%s%s%s", n,
                 (v & DN2_CS_WW_DONE(n)) ? "done" : "",
                 (v & DN2_CS_WW_SRC_OVF(n)) ? "+src-ovf" : "",
                 (v & DN2_CS_WW_DST_OVF(n)) ? "+dst-ovf" : "");
        strcat(buf, w);
    }
    if (v & DN2_CS_RX_OVF) strcat(buf, " rx-ovf");
    if (v & DN2_CS_RX_ERR_MASK) strcat(buf, " rx-err");
    if (v & DN2_CS_REQ_ERROR) strcat(buf, " req-error");
    tap_diag("Controller Status (%s) = 0x%llx:%s", when, (unsigned long long)v,
         buf[0] ? buf : " (none)");
}

static void decode_pc(const char *when, uint64_t v)
{
    tap_diag("Primitive Counter (%s) = 0x%llx: BOTF=%u VL=%u VS=%u RVL=%u RVS=%u IPUSH=%u",
         when, (unsigned long long)v,
         dn2_pc_field(v, DN2_PC_BOTF), dn2_pc_field(v, DN2_PC_VL),
         dn2_pc_field(v, DN2_PC_VS), dn2_pc_field(v, DN2_PC_RVL),
         dn2_pc_field(v, DN2_PC_RVS), dn2_pc_field(v, DN2_PC_IPUSH));
}

/* ------------------------------------------------------------ ACPI */


/*
 * Finds /sys/bus/acpi/devices/DNET0002:* with _UID == board.  Fills the
 * ACPI device name (e.g. "DNET0002:00"), which is also the name of the
 * platform device Linux creates for it, and returns 1 if found.
 */
static int find_acpi(char *name, size_t len, char *why, size_t whylen)
{
    DIR *d = opendir(ACPI_DIR);
    struct dirent *e;
    int found = 0, seen = 0;
    char uids[128] = "";

    if (!d) {
        snprintf(why, whylen, "%s: %s (ACPI disabled in the guest kernel?)",
                 ACPI_DIR, strerror(errno));
        return 0;
    }
    while ((e = readdir(d))) {
        char path[512], hid[64], uid[64], status[64], desc[128], apath[128];
        size_t hl = strlen(DN2_ACPI_HID);

        if (strncmp(e->d_name, DN2_ACPI_HID, hl) || e->d_name[hl] != ':') {
            continue;
        }
        seen++;
        snprintf(path, sizeof(path), ACPI_DIR "/%s/hid", e->d_name);
        read_line(path, hid, sizeof(hid));
        snprintf(path, sizeof(path), ACPI_DIR "/%s/uid", e->d_name);
        if (read_line(path, uid, sizeof(uid)) < 0) {
            strcpy(uid, "(none)");
        }
        snprintf(path, sizeof(path), ACPI_DIR "/%s/status", e->d_name);
        if (read_line(path, status, sizeof(status)) < 0) {
            strcpy(status, "(none)");
        }
        snprintf(path, sizeof(path), ACPI_DIR "/%s/description", e->d_name);
        read_line(path, desc, sizeof(desc));
        snprintf(path, sizeof(path), ACPI_DIR "/%s/path", e->d_name);
        read_line(path, apath, sizeof(apath));
        if (strlen(uids) + strlen(uid) + 3 < sizeof(uids)) {
            strcat(uids, uids[0] ? ", " : "");
            strcat(uids, uid);
        }
        if (strcmp(hid, DN2_ACPI_HID) || strtol(uid, NULL, 0) != board ||
            !strcmp(uid, "(none)")) {
            continue;
        }
        tap_diag("ACPI device %s: path %s, hid %s, uid %s, status %s%s%s%s",
             e->d_name, apath, hid, uid, status,
             desc[0] ? ", \"" : "", desc, desc[0] ? "\"" : "");
        if (strcmp(status, "15")) {
            snprintf(why, whylen, "%.60s has _STA %.20s, want 15 (present, "
                     "enabled, shown, functioning)", e->d_name, status);
            closedir(d);
            return 0;
        }
        snprintf(name, len, "%.60s", e->d_name);
        found = 1;
        break;
    }
    closedir(d);
    if (!found && !why[0]) {
        if (seen) {
            snprintf(why, whylen, "%d %s device(s) but none with _UID %d "
                     "(uids: %s)", seen, DN2_ACPI_HID, board, uids);
        } else {
            snprintf(why, whylen, "no %s device in %s (is -device dimmnet2 "
                     "on the QEMU command line?)", DN2_ACPI_HID, ACPI_DIR);
        }
    }
    return found;
}

/* Finds "start-end : NAME" in /proc/iomem (at any depth). */
static int find_iomem(const char *name, uint64_t *start, uint64_t *size,
                      char *why, size_t whylen)
{
    FILE *f = fopen("/proc/iomem", "r");
    char line[256];
    int found = 0;

    if (!f) {
        snprintf(why, whylen, "/proc/iomem: %s", strerror(errno));
        return 0;
    }
    while (fgets(line, sizeof(line), f)) {
        unsigned long long s, e;
        char n[128];

        if (sscanf(line, " %llx-%llx : %127[^\n]", &s, &e, n) != 3) {
            continue;
        }
        if (!strcmp(n, name)) {
            *start = s;
            *size = e - s + 1;
            found = 1;
            break;
        }
    }
    fclose(f);
    if (!found) {
        snprintf(why, whylen, "no \"%s\" resource in /proc/iomem (the kernel "
                 "did not create a platform device from _CRS?)", name);
    } else if (*start == 0 && *size == 1) {
        found = 0;
        snprintf(why, whylen, "/proc/iomem shows zero addresses (not root?)");
    }
    return found;
}

/* ------------------------------------------------------------ main */

int main(int argc, char **argv)
{
    char name[64] = "", why[256] = "";
    uint64_t base = 0, size = 0, v, pc0, pc, last, ns;
    uint64_t pattern[DN2_WIN_SIZE / 8];
    int fd, i, ok, link_up;

    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc > 2 || (argc == 2 && (argv[1][0] < '0' || argv[1][0] > '9'))) {
        fprintf(stderr, "usage: %s [BOARD]   (BOARD = ACPI _UID, default 0)\n",
                argv[0]);
        return 2;
    }
    board = argc == 2 ? atoi(argv[1]) : 0;

    tap_plan(T_COUNT);
    tap_diag("dn2-probe: DIMMnet-2 board %d (ABI version %d)", board, DN2_ABI_VERSION);

    /* 1. ACPI */
    ok = find_acpi(name, sizeof(name), why, sizeof(why));
    result(T_ACPI, ok, "ACPI device %s with _UID %d present, _STA 15%s%s",
           DN2_ACPI_HID, board, ok ? "" : ": ", ok ? "" : why);
    if (!ok) {
        return bail("no ACPI device");
    }

    /* 2. the window in /proc/iomem */
    ok = find_iomem(name, &base, &size, why, sizeof(why));
    if (ok) {
        tap_diag("window: %s at 0x%08llx-0x%08llx (0x%llx bytes)", name,
             (unsigned long long)base, (unsigned long long)(base + size - 1),
             (unsigned long long)size);
        if (size != DN2_WINDOW_SIZE) {
            ok = 0;
            snprintf(why, sizeof(why), "size 0x%llx, want 0x%x",
                     (unsigned long long)size, DN2_WINDOW_SIZE);
        }
    }
    result(T_IOMEM, ok, "window of 0x%x bytes in /proc/iomem%s%s",
           DN2_WINDOW_SIZE, ok ? "" : ": ", ok ? "" : why);
    if (!ok) {
        return bail("no window");
    }

    /* 3. map it */
    fd = open("/dev/mem", O_RDWR | O_SYNC);
    if (fd < 0) {
        snprintf(why, sizeof(why), "open /dev/mem: %s", strerror(errno));
        ok = 0;
    } else {
        void *p = mmap(NULL, DN2_WINDOW_SIZE, PROT_READ | PROT_WRITE,
                       MAP_SHARED, fd, (off_t)base);
        if (p == MAP_FAILED) {
            snprintf(why, sizeof(why), "mmap /dev/mem at 0x%llx: %s",
                     (unsigned long long)base, strerror(errno));
            ok = 0;
        } else {
            win = p;
        }
        close(fd);
    }
    result(T_MMAP, ok, "window mapped through /dev/mem (O_SYNC)%s%s",
           ok ? "" : ": ", ok ? "" : why);
    if (!ok) {
        return bail("window not mapped");
    }

    /* 4. Controller Status at reset */
    v = ur(DN2_UR_CTL_STATUS);
    decode_cs("reset", v);
    result(T_CS_RESET, (v & DN2_CS_STATUS_EMPTY) && !(v & DN2_CS_SDIMM_READY),
           "Controller Status reset value 0x%llx: status-empty (bit 4) set, "
           "sdimm-ready (bit 1) clear", (unsigned long long)v);

    /* 5. Prefetch Window flags at reset */
    v = ur(DN2_UR_PW_FLAG);
    tap_diag("Prefetch Window Flag (reset) = 0x%llx", (unsigned long long)v);
    result(T_PWF_RESET, v == DN2_PWF_ALL,
           "Prefetch Window Flag reset value 0x%llx (want 0x%llx)",
           (unsigned long long)v, (unsigned long long)DN2_PWF_ALL);

    /* 6. SMA LID: no fabric, so no link */
    v = rd64(DN2_SR_BASE + DN2_SR_SMA);
    tap_diag("SMA LID = 0x%llx: LID 0x%llx, link status %llu (%s)",
         (unsigned long long)v, (unsigned long long)dn2_sma_lid(v),
         (unsigned long long)dn2_sma_link(v),
         dn2_sma_link_ready(v) ?
         "ready" : "down");
    result(T_SMA, (v & DN2_SMA_LINK_MASK) == 0,
           "SMA LID link status %llu (no fabric attached: want 0)",
           (unsigned long long)dn2_sma_link(v));

    /* 7. SO-DIMM Capacity (1 = 256 MiB per module) + Init */
    wr64(DN2_SR_BASE + DN2_SR_SDIMM_CAPACITY, 1);
    wr64(DN2_SR_BASE + DN2_SR_SDIMM_INIT, 1);
    ok = poll_reg(DN2_UR_OFF(0) + DN2_UR_CTL_STATUS, DN2_CS_SDIMM_READY,
                  DN2_CS_SDIMM_READY, &last, &ns);
    decode_cs("after SO-DIMM Init", last);
    result(T_SDIMM_INIT, ok, "SO-DIMM Capacity=1 (%llu MiB/module), Init=1: "
           "Controller Status bit 1 set (0x%llx after %llu us)",
           (unsigned long long)(dn2_sdimm_module_bytes(1) >> 20),
           (unsigned long long)last, (unsigned long long)(ns / 1000));

    /* 8. VS: Write Window 0 -> SO-DIMM */
    for (i = 0; i < (int)(DN2_WIN_SIZE / 8); i++) {
        pattern[i] = 0xd2d2000000000000ULL ^ ((uint64_t)board << 40) ^
                     ((uint64_t)i * 0x0101010101ULL) ^ (uint64_t)(i << 3);
        wr64(DN2_WW_OFF(0, 0) + 8 * i, pattern[i]);
    }
    pc0 = ur(DN2_UR_PRIM_COUNTER);
    decode_pc("before VS", pc0);
    /* SRCOff: offset in this process's Write Window area (WW#0 = 0). */
    ur_wr(DN2_UR_CMD0_UPPER, dn2_req_upper(0 * DN2_WIN_SIZE, SDIMM_TEST_OFF));
    ur_wr(DN2_UR_CMD0_LOWER, dn2_req_lower(DN2_OP_VS, DN2_DTYPE_1B, 0, 0, 0, 0,
                                           DN2_WIN_SIZE));
    ok = poll_reg(DN2_UR_OFF(0) + DN2_UR_PRIM_COUNTER,
                  (uint64_t)DN2_PC_MASK << (DN2_PC_VS * DN2_PC_BITS),
                  (uint64_t)((dn2_pc_field(pc0, DN2_PC_VS) + 1) & DN2_PC_MASK)
                  << (DN2_PC_VS * DN2_PC_BITS), &pc, &ns);
    decode_pc("after VS", pc);
    v = ur(DN2_UR_CTL_STATUS);
    decode_cs("after VS", v);
    result(T_VS_DONE, ok && !(v & DN2_CS_REQ_ERROR),
           "VS %u bytes WW0 -> SO-DIMM 0x%x: Primitive Counter VS %u -> %u "
           "(%llu us)%s", DN2_WIN_SIZE, SDIMM_TEST_OFF,
           dn2_pc_field(pc0, DN2_PC_VS), dn2_pc_field(pc, DN2_PC_VS),
           (unsigned long long)(ns / 1000),
           (v & DN2_CS_REQ_ERROR) ? ", but request-error (bit 20) set" : "");

    /* 9. per-window status of WW0 */
    result(T_CS_WW0, (v & DN2_CS_WW_MASK(0)) == DN2_CS_WW_DONE(0),
           "Controller Status WW0 bits = %llu (want done=1, src-ovf=0, dst-ovf=0)",
           (unsigned long long)((v & DN2_CS_WW_MASK(0)) >> DN2_CS_WW_SHIFT(0)));

    /* 10. VL: SO-DIMM -> Prefetch Window 1 */
    pc0 = pc;
    /* DSTOff: offset in this process's Prefetch Window area. */
    ur_wr(DN2_UR_CMD0_UPPER, dn2_req_upper(SDIMM_TEST_OFF, VL_WINDOW * DN2_WIN_SIZE));
    ur_wr(DN2_UR_CMD0_LOWER, dn2_req_lower(DN2_OP_VL, DN2_DTYPE_1B, 0, 0, 0, 0,
                                           DN2_WIN_SIZE));
    /* The window's flags read 4'b1111 once the transfer is complete
     * (§4.5.5.2); the VL counter must have moved too. */
    ok = poll_reg(DN2_UR_OFF(0) + DN2_UR_PW_FLAG, DN2_PWF_WIN_MASK(VL_WINDOW),
                  DN2_PWF_WIN_MASK(VL_WINDOW), &v, &ns);
    {
        uint64_t ns2, cs;
        int ok2 = poll_reg(DN2_UR_OFF(0) + DN2_UR_PRIM_COUNTER,
                           (uint64_t)DN2_PC_MASK << (DN2_PC_VL * DN2_PC_BITS),
                           (uint64_t)((dn2_pc_field(pc0, DN2_PC_VL) + 1) & DN2_PC_MASK)
                           << (DN2_PC_VL * DN2_PC_BITS), &pc, &ns2);
        tap_diag("Prefetch Window Flag (after VL) = 0x%llx", (unsigned long long)v);
        decode_pc("after VL", pc);
        cs = ur(DN2_UR_CTL_STATUS);
        decode_cs("after VL", cs);
        ok = ok && ok2 && !(cs & DN2_CS_REQ_ERROR);
    }
    result(T_VL_DONE, ok, "VL %u bytes SO-DIMM 0x%x -> PW%d: PW flags 0x%llx "
           "(window %d = 0x%llx, want 0xf), VL counter %u -> %u (%llu us)",
           DN2_WIN_SIZE, SDIMM_TEST_OFF, VL_WINDOW, (unsigned long long)v,
           VL_WINDOW, (unsigned long long)((v & DN2_PWF_WIN_MASK(VL_WINDOW)) >>
                                           DN2_PWF_WIN_SHIFT(VL_WINDOW)),
           dn2_pc_field(pc0, DN2_PC_VL), dn2_pc_field(pc, DN2_PC_VL),
           (unsigned long long)(ns / 1000));

    /* 11. the bytes */
    {
        int bad = -1, nbad = 0;
        uint64_t got = 0;

        for (i = 0; i < (int)(DN2_WIN_SIZE / 8); i++) {
            uint64_t w = rd64(DN2_PW_OFF(0, VL_WINDOW) + 8 * i);
            if (w != pattern[i]) {
                if (bad < 0) {
                    bad = i;
                    got = w;
                }
                nbad++;
            }
        }
        if (bad >= 0) {
            tap_diag("first mismatch at PW%d+0x%x: got 0x%016llx, want 0x%016llx",
                 VL_WINDOW, bad * 8, (unsigned long long)got,
                 (unsigned long long)pattern[bad]);
        } else {
            tap_diag("round trip: %u bytes WW0 -> SO-DIMM 0x%x -> PW%d identical",
                 DN2_WIN_SIZE, SDIMM_TEST_OFF, VL_WINDOW);
        }
        result(T_COMPARE, bad < 0, "Prefetch Window %d holds the Write Window 0 "
               "pattern (%d of %u words differ)", VL_WINDOW, nbad,
               DN2_WIN_SIZE / 8);
    }

    /*
     * 12.-14. Status is the issuing program's only way to know when a
     * request is done, so it must describe the request just issued, not an
     * earlier one: issuing a VL resets the target window's PW flags
     * (§4.5.5.2: "when the host issues a VL ... reset to 4'b0000"), and
     * issuing a VS clears its source window's Controller Status bits ([EMU],
     * docs/thesis-choices.md #13: when a new VS-family request from that
     * window is issued).  To look at a request between issue and completion, park
     * the Window Controller first: with no fabric, a remote store (RVS)
     * waits for the link, and requests behind it stay in the Request FIFO.
     * WW0's "done" bit and PW1's flags are set from the round trip above.
     */
    link_up = dn2_sma_link_ready(rd64(DN2_SR_BASE + DN2_SR_SMA));
    if (link_up) {
        skipped(T_STALL, "the link is up: a remote store would not wait");
        skipped(T_VS_ISSUE, "the link is up");
        skipped(T_VL_ISSUE, "the link is up");
    } else {
        uint64_t ms = 0, cs, pwf, pcq;

        pc0 = ur(DN2_UR_PRIM_COUNTER);
        ur_wr(DN2_UR_CMD0_UPPER, dn2_req_upper(0, 0));
        ur_wr(DN2_UR_CMD0_LOWER, dn2_req_lower(DN2_OP_RVS, DN2_DTYPE_1B, 0,
                                               dn2_lid_to_clid(1), 0, 1, 8));
        ok = poll_reg(DN2_UR_OFF(0) + DN2_UR_MODULE_STATE,
                      DN2_FMASK(DN2_MS_WC),
                      DN2_FPUT(dn2_ms_wc_busy(DN2_OP_RVS), DN2_MS_WC),
                      &ms, &ns);
        tap_diag("Module State after an RVS to LID 1 (no link) = 0x%llx: Window "
             "Controller field %llu (1 + OTYPE 0x%x = executing RVS)",
             (unsigned long long)ms,
             (unsigned long long)DN2_FGET(ms, DN2_MS_WC),
             DN2_OP_RVS);
        result(T_STALL, ok, "an RVS with no link keeps the Window Controller "
               "busy (Module State 0x%llx)", (unsigned long long)ms);

        /* Queued behind it: a VS from WW0 and a VL into PW1. */
        ur_wr(DN2_UR_CMD0_UPPER, dn2_req_upper(0 * DN2_WIN_SIZE, 2 * SDIMM_TEST_OFF));
        ur_wr(DN2_UR_CMD0_LOWER, dn2_req_lower(DN2_OP_VS, DN2_DTYPE_1B, 0, 0, 0, 0,
                                               DN2_WIN_SIZE));
        ur_wr(DN2_UR_CMD0_UPPER, dn2_req_upper(SDIMM_TEST_OFF, VL_WINDOW * DN2_WIN_SIZE));
        ur_wr(DN2_UR_CMD0_LOWER, dn2_req_lower(DN2_OP_VL, DN2_DTYPE_1B, 0, 0, 0, 0,
                                               DN2_WIN_SIZE));
        /* Let a (wrong) executor run, if it would. */
        usleep(20000);
        cs = ur(DN2_UR_CTL_STATUS);
        pwf = ur(DN2_UR_PW_FLAG);
        pcq = ur(DN2_UR_PRIM_COUNTER);
        decode_cs("VS and VL queued behind the RVS", cs);
        tap_diag("Prefetch Window Flag (VL queued) = 0x%llx; Primitive Counter "
             "0x%llx (was 0x%llx)", (unsigned long long)pwf,
             (unsigned long long)pcq, (unsigned long long)pc0);
        if (pcq != pc0) {
            tap_diag("a request behind the stalled RVS completed: the Request "
                 "FIFO is not in order?");
        }
        result(T_VS_ISSUE, pcq == pc0 && !(cs & DN2_CS_WW_MASK(0)),
               "VS issued (still queued): Controller Status WW0 bits = %llu "
               "(want 0, not the previous VS's \"done\")",
               (unsigned long long)((cs & DN2_CS_WW_MASK(0)) >> DN2_CS_WW_SHIFT(0)));
        result(T_VL_ISSUE, pcq == pc0 && !(pwf & DN2_PWF_WIN_MASK(VL_WINDOW)),
               "VL issued (still queued): Prefetch Window %d flags = 0x%llx "
               "(want 0: transfer not complete)", VL_WINDOW,
               (unsigned long long)((pwf & DN2_PWF_WIN_MASK(VL_WINDOW)) >>
                                    DN2_PWF_WIN_SHIFT(VL_WINDOW)));
    }

    /* 15. Controller Reset restores the reset values (and drops the queue) */
    wr64(DN2_SR_BASE + DN2_SR_CTL_RESET, 0);
    {
        uint64_t pwf = ur(DN2_UR_PW_FLAG), ms = ur(DN2_UR_MODULE_STATE);

        v = ur(DN2_UR_CTL_STATUS);
        pc = ur(DN2_UR_PRIM_COUNTER);
        decode_cs("after Controller Reset", v);
        tap_diag("after Controller Reset: Primitive Counter 0x%llx, PW flags 0x%llx, "
             "Module State 0x%llx", (unsigned long long)pc,
             (unsigned long long)pwf, (unsigned long long)ms);
        result(T_CTL_RESET, v == DN2_CS_STATUS_EMPTY && pc == 0 &&
               pwf == DN2_PWF_ALL && ms == 0,
               "Controller Reset: Controller Status 0x%llx (want 0x%llx), "
               "Primitive Counter 0x%llx (want 0), PW flags 0x%llx (want 0x%llx), "
               "Module State 0x%llx (want 0: idle)",
               (unsigned long long)v, (unsigned long long)DN2_CS_STATUS_EMPTY,
               (unsigned long long)pc, (unsigned long long)pwf,
               (unsigned long long)DN2_PWF_ALL, (unsigned long long)ms);
    }

    munmap((void *)win, DN2_WINDOW_SIZE);
    tap_diag("board %d: %d of %d checks failed", board, tap_failures(), T_COUNT);
    return tap_exit_code();
}
