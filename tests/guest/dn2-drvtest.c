/* SPDX-License-Identifier: MIT */
/*
 * dn2-drvtest: tests the dimmnet2 kernel driver from inside a Linux guest,
 * with TAP output.  Built statically on the host, run as root from the test
 * initramfs (tests/guest/driver-test.sh):
 *
 *   dn2-drvtest MODULE.ko
 *
 * The guest must have two boards: board 0 cabled to itself (loopback=on:
 * the link comes up with LID 1) and board 1 with no cable, placed where the
 * firmware's MTRRs leave memory write-back (e.g. base=0x80000000), so that
 * both outcomes of a write-back request are seen.  The test loads
 * and unloads the module itself (finit_module / delete_module) and checks:
 *   - loading binds both ACPI boards: /dev/dimmnet2-0 and -1, sysfs;
 *   - the privileged ioctls as root through a control handle (O_RDONLY):
 *     Controller Reset, SO-DIMM init, MTU, link-up + LID, PGID, AMT, and
 *     their argument checks;
 *   - WIDs: two processes get WID 0 and 1, a third opener gets EBUSY,
 *     closing frees a WID, so does SIGKILL; sysfs shows the owners;
 *   - mmap: every piece of the caller's WID maps; the System Register, the
 *     other WID's pages, gaps, private and over-long mappings fail; the
 *     read-only pieces refuse PROT_WRITE; the memory types obtained (PAT);
 *     the two WIDs' pieces are distinct;
 *   - an unprivileged process (uid 65534) does a VS/VL round trip through
 *     its mapped pages, and the privileged ioctls fail for it with EPERM;
 *   - rmmod fails while a file or a mapping is open and works after;
 *   - the addr=/use_acpi= fallback and its errors.
 * Lines starting with "# " are diagnostics.  The plan comes last.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/klog.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "dn2-cpu.h"
#include "dn2-sysfs.h"
#include "../tap/dn2-tap.h"
#include "dimmnet2/dn2_abi.h"
#include "dimmnet2/dn2_uapi.h"

#define MODNAME          "dimmnet2"
#define DEV0             DN2_DEV_PREFIX "0"
#define DEV1             DN2_DEV_PREFIX "1"
#define SYSFS_DEV(n)     "/sys/class/misc/dimmnet2-" #n "/device"
#define NOBODY           65534
#define POLL_TIMEOUT_NS  (5ULL * 1000 * 1000 * 1000)
#define SDIMM_TEST_OFF   0x2000u
#define VL_WINDOW        2
#define LINK_TIMEOUT_MS  3000u

/* ------------------------------------------------------------- TAP */

static const char *ko_path;

static const char *err_name(int e)
{
    switch (e) {
    case 0: return "success";
    case EINVAL: return "EINVAL";
    case EPERM: return "EPERM";
    case EACCES: return "EACCES";
    case EBUSY: return "EBUSY";
    case EAGAIN: return "EAGAIN";
    case ENOENT: return "ENOENT";
    case ENODEV: return "ENODEV";
    case ENOTTY: return "ENOTTY";
    case ETIMEDOUT: return "ETIMEDOUT";
    case EEXIST: return "EEXIST";
    default: return strerror(e);
    }
}

/* ------------------------------------------------------ module ops */

static int load_module(const char *params)
{
    int fd = open(ko_path, O_RDONLY | O_CLOEXEC), r, e;

    if (fd < 0) {
        return errno;
    }
    r = (int)syscall(SYS_finit_module, fd, params, 0);
    e = r ? errno : 0;
    close(fd);
    return e;
}

static int unload_module(void)
{
    return syscall(SYS_delete_module, MODNAME, O_NONBLOCK) ? errno : 0;
}

static int module_loaded(void)
{
    struct stat st;

    return stat("/sys/module/" MODNAME, &st) == 0;
}

/* Prints the kernel log lines of the driver logged since the last call. */
static void show_klog(void)
{
    static size_t seen;
    int len = klogctl(10 /* SYSLOG_ACTION_SIZE_BUFFER */, NULL, 0);
    char *buf, *line, *save;
    size_t n, pos = 0;

    if (len <= 0) {
        return;
    }
    buf = malloc((size_t)len + 1);
    if (!buf) {
        return;
    }
    n = (size_t)klogctl(3 /* SYSLOG_ACTION_READ_ALL */, buf, len);
    buf[n] = 0;
    for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        pos++;
        if (pos <= seen) {
            continue;
        }
        if (strstr(line, MODNAME) || strstr(line, "DNET0002") || strstr(line, "x86/PAT")) {
            tap_diag("kernel: %s", line);
        }
    }
    seen = pos;
    free(buf);
}

/* ------------------------------------------------------------ sysfs */


static const char *sysfs(const char *dir, const char *attr)
{
    static char bufs[8][128];
    static int k;
    char path[256];
    char *b = bufs[k++ & 7];

    snprintf(path, sizeof(path), "%s/%s", dir, attr);
    read_line(path, b, sizeof(bufs[0]));
    return b;
}

/* ----------------------------------------------------------- helpers */

static int xioctl(int fd, unsigned long req, void *arg)
{
    return ioctl(fd, req, arg) ? errno : 0;
}

static int get_info(int fd, struct dn2_info *info)
{
    memset(info, 0, sizeof(*info));
    return xioctl(fd, DN2_IOC_GET_INFO, info);
}

static uint64_t now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static int try_mmap(int fd, off_t off, size_t len, int prot, int flags, void **out)
{
    void *p = mmap(NULL, len, prot, flags, fd, off);

    if (p == MAP_FAILED) {
        if (out) {
            *out = NULL;
        }
        return errno;
    }
    if (out) {
        *out = p;
    } else {
        munmap(p, len);
    }
    return 0;
}

static inline uint64_t rd64(volatile void *base, uint32_t off)
{
    return *(volatile uint64_t *)((volatile uint8_t *)base + off);
}

static inline void wr64(volatile void *base, uint32_t off, uint64_t v)
{
    *(volatile uint64_t *)((volatile uint8_t *)base + off) = v;
}

static int poll64(volatile void *base, uint32_t off, uint64_t mask, uint64_t want,
                  uint64_t *last)
{
    uint64_t t0 = now_ns(), v;

    for (;;) {
        v = rd64(base, off);
        if ((v & mask) == want) {
            *last = v;
            return 1;
        }
        if (now_ns() - t0 > POLL_TIMEOUT_NS) {
            *last = v;
            return 0;
        }
        usleep(100);
    }
}

/* A child process that opens a device O_RDWR, reports its WID (or
 * -errno) and then waits: 'q' on its command pipe makes it exit normally
 * (closing the file), SIGKILL kills it. */
struct holder {
    pid_t pid;
    int cmd;       /* write end */
    int rep;       /* read end */
    int wid;       /* or -errno */
};

static int spawn_holder(const char *dev, struct holder *h)
{
    int c[2], r[2];

    if (pipe(c) || pipe(r)) {
        return -1;
    }
    h->pid = fork();
    if (h->pid < 0) {
        return -1;
    }
    if (h->pid == 0) {
        struct dn2_info info;
        int fd = open(dev, O_RDWR), v;
        char ch;

        close(c[1]);
        close(r[0]);
        if (fd < 0) {
            v = -errno;
        } else if (get_info(fd, &info)) {
            v = -EIO;
        } else {
            v = (int)info.wid;
        }
        if (write(r[1], &v, sizeof(v)) != sizeof(v)) {
            _exit(1);
        }
        while (read(c[0], &ch, 1) == 1) {
            if (ch == 'q') {
                break;
            }
        }
        _exit(0);
    }
    close(c[0]);
    close(r[1]);
    h->cmd = c[1];
    h->rep = r[0];
    if (read(h->rep, &h->wid, sizeof(h->wid)) != sizeof(h->wid)) {
        h->wid = -EIO;
    }
    return 0;
}

static void holder_quit(struct holder *h)
{
    if (write(h->cmd, "q", 1) != 1) {
        kill(h->pid, SIGKILL);
    }
    waitpid(h->pid, NULL, 0);
    close(h->cmd);
    close(h->rep);
}

static void holder_kill(struct holder *h)
{
    kill(h->pid, SIGKILL);
    waitpid(h->pid, NULL, 0);
    close(h->cmd);
    close(h->rep);
}

/* Opens O_RDWR and returns the WID obtained (or -errno); keeps the fd. */
static int open_wid(const char *dev, int *fdp)
{
    struct dn2_info info;
    int fd = open(dev, O_RDWR);

    *fdp = fd;
    if (fd < 0) {
        return -errno;
    }
    if (get_info(fd, &info)) {
        return -EIO;
    }
    return (int)info.wid;
}

/* ------------------------------------------------------ the pieces */

struct piece {
    const char *name;
    off_t off;
    size_t len;
    int prot;
    const char *want_type;     /* PAT type wanted */
    uint32_t hw_off[DN2_NUM_WID];
};

static const struct piece pieces[] = {
    { "Write Window", DN2_MMAP_WW, DN2_MMAP_WW_LEN, PROT_READ | PROT_WRITE,
      "write-combining", { DN2_WW_OFF(0, 0), DN2_WW_OFF(1, 0) } },
    { "Prefetch Window", DN2_MMAP_PW, DN2_MMAP_PW_LEN, PROT_READ,
      "write-back", { DN2_PW_OFF(0, 0), DN2_PW_OFF(1, 0) } },
    { "LLCM", DN2_MMAP_LLCM, DN2_MMAP_LLCM_LEN, PROT_READ | PROT_WRITE,
      "uncached", { DN2_LLCM_OFF(0), DN2_LLCM_OFF(1) } },
    { "LH Buffer", DN2_MMAP_LHB, DN2_MMAP_LHB_LEN, PROT_READ,
      "write-back", { DN2_LHB_OFF(0), DN2_LHB_OFF(1) } },
    { "User Register", DN2_MMAP_UR, DN2_MMAP_UR_LEN, PROT_READ | PROT_WRITE,
      "uncached", { DN2_UR_OFF(0), DN2_UR_OFF(1) } },
};
#define NPIECES (int)(sizeof(pieces) / sizeof(pieces[0]))
enum { P_WW, P_PW, P_LLCM, P_LHB, P_UR };

struct maps {
    void *p[NPIECES];
};

static int map_all(int fd, struct maps *m)
{
    int i, e;

    for (i = 0; i < NPIECES; i++) {
        e = try_mmap(fd, pieces[i].off, pieces[i].len, pieces[i].prot, MAP_SHARED, &m->p[i]);
        if (e) {
            while (--i >= 0) {
                munmap(m->p[i], pieces[i].len);
            }
            return e;
        }
    }
    return 0;
}

static void unmap_all(struct maps *m)
{
    int i;

    for (i = 0; i < NPIECES; i++) {
        if (m->p[i]) {
            munmap(m->p[i], pieces[i].len);
        }
        m->p[i] = NULL;
    }
}

/*
 * The PAT type of [phys, phys + len) from debugfs x86/pat_memtype_list
 * ("PAT: [mem 0x...-0x...] write-combining").  Returns "" if not listed.
 */
static const char *pat_type(uint64_t phys, size_t len)
{
    static char type[64];
    char line[256];
    FILE *f = fopen("/sys/kernel/debug/x86/pat_memtype_list", "r");

    type[0] = 0;
    if (!f) {
        return type;
    }
    while (fgets(line, sizeof(line), f)) {
        unsigned long long s, e;
        char t[64];

        if (sscanf(line, "PAT: [mem 0x%llx-0x%llx] %63s", &s, &e, t) == 3 &&
            s <= phys && phys + len <= e) {
            snprintf(type, sizeof(type), "%s", t);
            break;
        }
    }
    fclose(f);
    return type;
}

/* 1 if a variable MTRR of type "uncachable" covers phys (/proc/mtrr). */
static int mtrr_uncachable(uint64_t phys)
{
    char line[256];
    FILE *f = fopen("/proc/mtrr", "r");
    int uc = 0;

    while (f && fgets(line, sizeof(line), f)) {
        unsigned long long b, sz;
        char unit;

        if (sscanf(line, "reg%*d: base=0x%llx (%*[^)]), size=%llu%cB", &b, &sz, &unit) == 3 &&
            strstr(line, "uncachable")) {
            sz <<= unit == 'G' ? 30 : unit == 'M' ? 20 : 10;
            if (b <= phys && phys < b + sz) {
                uc = 1;
            }
        }
    }
    if (f) {
        fclose(f);
    }
    return uc;
}

/* Checks the PAT memory types of both WIDs' pieces of a board (mapped). */
static void check_types(const char *sysdir, const int wid[2])
{
    static int mounted;
    unsigned long long base;
    char win[64];
    int i;

    snprintf(win, sizeof(win), "%s", sysfs(sysdir, "window"));
    base = strtoull(win, NULL, 0);
    if (!mounted) {
        char line[256];
        FILE *f = fopen("/proc/mtrr", "r");

        mkdir("/sys/kernel/debug", 0755);
        mount("debugfs", "/sys/kernel/debug", "debugfs", 0, NULL);
        mounted = 1;
        while (f && fgets(line, sizeof(line), f)) {
            line[strcspn(line, "\n")] = 0;
            tap_diag("/proc/mtrr: %s", line);
        }
        if (f) {
            fclose(f);
        }
    }
    for (i = 0; i < NPIECES; i++) {
        const char *t0, *t1, *want = pieces[i].want_type;
        char t0s[64];
        int lowered = 0;

        /* PAT turns a write-back request into uncached-minus where an
         * MTRR makes the range uncachable (pat_x_mtrr_type()). */
        if (!strcmp(want, "write-back") && mtrr_uncachable(base + pieces[i].hw_off[0])) {
            want = "uncached-minus";
            lowered = 1;
        }
        t0 = pat_type(base + pieces[i].hw_off[wid[0]], pieces[i].len);
        snprintf(t0s, sizeof(t0s), "%s", t0);
        t1 = pat_type(base + pieces[i].hw_off[wid[1]], pieces[i].len);
        if (lowered) {
            tap_diag("%s at 0x%llx: write-back requested; an uncachable MTRR covers it, so "
                 "PAT gives uncached-minus", pieces[i].name, base + pieces[i].hw_off[0]);
        }
        tap_result(!strcmp(t0s, want) && !strcmp(t1, want),
              "memory type of %s (WID %d at 0x%llx, WID %d at 0x%llx): %s / %s (want %s)",
              pieces[i].name, wid[0], base + pieces[i].hw_off[wid[0]], wid[1],
              base + pieces[i].hw_off[wid[1]], t0s[0] ? t0s : "not listed",
              t1[0] ? t1 : "not listed", want);
    }
}

/* ------------------------------------------------ VS/VL round trip */

/*
 * Write Window 0 -> SO-DIMM (VS), SO-DIMM -> Prefetch Window VL_WINDOW
 * (VL), through the mapped pieces only.  Returns 1 if the bytes came
 * back; fills *why otherwise.
 */
static int round_trip(struct maps *m, uint64_t seed, char *why, size_t whylen)
{
    volatile void *ur = m->p[P_UR];
    volatile uint8_t *ww = m->p[P_WW];
    volatile uint8_t *pw = m->p[P_PW];
    uint64_t pattern[DN2_WIN_SIZE / 8], pc0, last, cs;
    unsigned i;

    for (i = 0; i < DN2_WIN_SIZE / 8; i++) {
        pattern[i] = seed ^ ((uint64_t)i * 0x0101010101010101ULL);
        wr64(ww, 8 * i, pattern[i]);
    }
    /* WC stores drain before the UC doorbell. */
    dn2_cpu_sfence();
    pc0 = rd64(ur, DN2_UR_PRIM_COUNTER);
    wr64(ur, DN2_UR_CMD0_UPPER, dn2_req_upper(0, SDIMM_TEST_OFF));
    wr64(ur, DN2_UR_CMD0_LOWER, dn2_req_lower(DN2_OP_VS, DN2_DTYPE_1B, 0, 0, 0, 0,
                                              DN2_WIN_SIZE));
    if (!poll64(ur, DN2_UR_PRIM_COUNTER, (uint64_t)DN2_PC_MASK << (DN2_PC_VS * DN2_PC_BITS),
                (uint64_t)((dn2_pc_field(pc0, DN2_PC_VS) + 1) & DN2_PC_MASK)
                << (DN2_PC_VS * DN2_PC_BITS), &last)) {
        snprintf(why, whylen, "VS did not complete (Primitive Counter 0x%llx, "
                 "Controller Status 0x%llx)", (unsigned long long)last,
                 (unsigned long long)rd64(ur, DN2_UR_CTL_STATUS));
        return 0;
    }
    cs = rd64(ur, DN2_UR_CTL_STATUS);
    if ((cs & DN2_CS_WW_MASK(0)) != DN2_CS_WW_DONE(0) || (cs & DN2_CS_REQ_ERROR)) {
        snprintf(why, whylen, "VS: Controller Status 0x%llx", (unsigned long long)cs);
        return 0;
    }
    /* Software coherence for the (write-back) Prefetch Window. */
    dn2_cpu_flush(pw + VL_WINDOW * DN2_WIN_SIZE, DN2_WIN_SIZE);
    wr64(ur, DN2_UR_CMD0_UPPER, dn2_req_upper(SDIMM_TEST_OFF, VL_WINDOW * DN2_WIN_SIZE));
    wr64(ur, DN2_UR_CMD0_LOWER, dn2_req_lower(DN2_OP_VL, DN2_DTYPE_1B, 0, 0, 0, 0,
                                              DN2_WIN_SIZE));
    if (!poll64(ur, DN2_UR_PW_FLAG, DN2_PWF_WIN_MASK(VL_WINDOW),
                DN2_PWF_WIN_MASK(VL_WINDOW), &last)) {
        snprintf(why, whylen, "VL: PW flags 0x%llx", (unsigned long long)last);
        return 0;
    }
    dn2_cpu_flush(pw + VL_WINDOW * DN2_WIN_SIZE, DN2_WIN_SIZE);
    for (i = 0; i < DN2_WIN_SIZE / 8; i++) {
        uint64_t w = rd64(pw, VL_WINDOW * DN2_WIN_SIZE + 8 * i);
        if (w != pattern[i]) {
            snprintf(why, whylen, "PW%d+0x%x: got 0x%016llx, want 0x%016llx",
                     VL_WINDOW, i * 8, (unsigned long long)w,
                     (unsigned long long)pattern[i]);
            return 0;
        }
    }
    snprintf(why, whylen, "%u bytes WW0 -> SO-DIMM 0x%x -> PW%d identical",
             DN2_WIN_SIZE, SDIMM_TEST_OFF, VL_WINDOW);
    return 1;
}

/* ------------------------------------------------------------ tests */

static int test_load(void)
{
    struct stat st0, st1;
    int e, ok;

    if (module_loaded()) {
        tap_diag("module already loaded: unloading it first");
        unload_module();
    }
    e = load_module("");
    show_klog();
    if (!tap_result(e == 0, "insmod %s (ACPI): %s", ko_path, err_name(e))) {
        return 0;
    }
    ok = stat(DEV0, &st0) == 0 && stat(DEV1, &st1) == 0;
    tap_result(ok && S_ISCHR(st0.st_mode) && S_ISCHR(st1.st_mode) &&
          (st0.st_mode & 0777) == 0666 && (st1.st_mode & 0777) == 0666,
          "%s and %s are character devices with mode 0666 (%o, %o)", DEV0, DEV1,
          ok ? (unsigned)(st0.st_mode & 0777) : 0, ok ? (unsigned)(st1.st_mode & 0777) : 0);
    {
        const char *b0 = sysfs(SYSFS_DEV(0), "board"), *b1 = sysfs(SYSFS_DEV(1), "board");
        char drv[256] = "";
        ssize_t n = readlink(SYSFS_DEV(0) "/driver", drv, sizeof(drv) - 1);

        if (n > 0) {
            drv[n] = 0;
        }
        tap_diag("board 0: window %s, board 1: window %s", sysfs(SYSFS_DEV(0), "window"),
             sysfs(SYSFS_DEV(1), "window"));
        tap_result(!strcmp(b0, "0") && !strcmp(b1, "1") && strstr(drv, "/" MODNAME),
              "sysfs: the misc devices' platform devices are boards 0 and 1 (%s, %s), "
              "bound to %s", b0, b1, drv);
    }
    return 1;
}

static void show_sysfs(const char *dir, const char *when)
{
    tap_diag("%s (%s): board=%s link=%s sma_lid=%s lid=%s mtu=%s sdimm_module_mib=%s "
         "sdimm_ready=%s", dir, when, sysfs(dir, "board"), sysfs(dir, "link"),
         sysfs(dir, "sma_lid"), sysfs(dir, "lid"), sysfs(dir, "mtu"),
         sysfs(dir, "sdimm_module_mib"), sysfs(dir, "sdimm_ready"));
    tap_diag("  wid0: owner=%s pgid=%s prim_counter=[%s] pkt_counter=%s ctl_status=%s",
         sysfs(dir, "wid0/owner"), sysfs(dir, "wid0/pgid"), sysfs(dir, "wid0/prim_counter"),
         sysfs(dir, "wid0/pkt_counter"), sysfs(dir, "wid0/ctl_status"));
    tap_diag("  wid1: owner=%s pgid=%s prim_counter=[%s] pkt_counter=%s ctl_status=%s",
         sysfs(dir, "wid1/owner"), sysfs(dir, "wid1/pgid"), sysfs(dir, "wid1/prim_counter"),
         sysfs(dir, "wid1/pkt_counter"), sysfs(dir, "wid1/ctl_status"));
}

static void test_admin(void)
{
    struct dn2_info info;
    struct dn2_sdimm_init si;
    struct dn2_link lk;
    struct dn2_pgid pg;
    struct dn2_amt amt;
    uint32_t mtu;
    int c0 = open(DEV0, O_RDONLY), c1 = open(DEV1, O_RDONLY), e, e2;

    if (!tap_result(c0 >= 0 && c1 >= 0, "control handles: open(O_RDONLY) of both boards")) {
        return;
    }
    e = get_info(c0, &info);
    tap_diag("GET_INFO (control handle, board 0): abi %u uapi %u board %u wid 0x%x flags 0x%x "
         "sma_lid 0x%x mtu %u window 0x%llx", info.abi_version, info.uapi_version,
         info.board, info.wid, info.flags, info.sma_lid, info.mtu,
         (unsigned long long)info.window_size);
    tap_result(!e && info.wid == DN2_WID_NONE && info.board == 0 &&
          info.abi_version == DN2_ABI_VERSION && info.uapi_version == DN2_UAPI_VERSION &&
          (info.flags & DN2_INFO_ADMIN) && info.window_size == DN2_WINDOW_SIZE,
          "GET_INFO on a control handle: no WID, board 0, ABI %d, admin flag (%s)",
          DN2_ABI_VERSION, err_name(e));
    e = try_mmap(c0, DN2_MMAP_PW, DN2_MMAP_PW_LEN, PROT_READ, MAP_SHARED, NULL);
    tap_result(e == EACCES, "a control handle cannot mmap (%s, want EACCES)", err_name(e));

    e = xioctl(c0, DN2_IOC_CTL_RESET, NULL);
    e2 = xioctl(c1, DN2_IOC_CTL_RESET, NULL);
    tap_result(!e && !e2 && !strcmp(sysfs(SYSFS_DEV(0), "sdimm_ready"), "0") &&
          !strcmp(sysfs(SYSFS_DEV(0), "lid"), "none") &&
          !strcmp(sysfs(SYSFS_DEV(0), "mtu"), "2048"),
          "CTL_RESET on both boards (%s, %s): sysfs sdimm_ready 0, lid none, mtu 2048",
          err_name(e), err_name(e2));

    si = (struct dn2_sdimm_init){ .module_mib = 300, .timeout_ms = 1000 };
    e = xioctl(c0, DN2_IOC_SDIMM_INIT, &si);
    tap_result(e == EINVAL, "SDIMM_INIT with 300 MiB per module: %s (want EINVAL)", err_name(e));
    si = (struct dn2_sdimm_init){ .module_mib = 256, .timeout_ms = 2000 };
    e = xioctl(c0, DN2_IOC_SDIMM_INIT, &si);
    e2 = xioctl(c1, DN2_IOC_SDIMM_INIT, &si);
    tap_result(!e && !e2 && si.sdimm_area == (256ULL << 20) &&
          !strcmp(sysfs(SYSFS_DEV(0), "sdimm_ready"), "1") &&
          !strcmp(sysfs(SYSFS_DEV(0), "sdimm_module_mib"), "256"),
          "SDIMM_INIT 256 MiB on both boards (%s, %s): area %llu MiB per WID, sysfs "
          "sdimm_ready %s", err_name(e), err_name(e2),
          (unsigned long long)(si.sdimm_area >> 20), sysfs(SYSFS_DEV(0), "sdimm_ready"));

    mtu = 1000;
    e = xioctl(c0, DN2_IOC_SET_MTU, &mtu);
    tap_result(e == EINVAL, "SET_MTU 1000: %s (want EINVAL)", err_name(e));
    mtu = 1024;
    e = xioctl(c0, DN2_IOC_SET_MTU, &mtu);
    tap_result(!e && !strcmp(sysfs(SYSFS_DEV(0), "mtu"), "1024"),
          "SET_MTU 1024: %s, sysfs mtu %s", err_name(e), sysfs(SYSFS_DEV(0), "mtu"));
    mtu = 2048;
    xioctl(c0, DN2_IOC_SET_MTU, &mtu);

    memset(&lk, 0, sizeof(lk));
    lk.timeout_ms = LINK_TIMEOUT_MS;
    e = xioctl(c0, DN2_IOC_LINK_UP, &lk);
    tap_diag("LINK_UP board 0: %s, LID %u, SMA LID 0x%x", err_name(e), lk.lid, lk.sma_lid);
    tap_result(!e && lk.lid == 1 && !strcmp(sysfs(SYSFS_DEV(0), "lid"), "1") &&
          !strcmp(sysfs(SYSFS_DEV(0), "link"), "up"),
          "LINK_UP on board 0 (cabled to itself): LID %u, sysfs lid %s, link %s",
          lk.lid, sysfs(SYSFS_DEV(0), "lid"), sysfs(SYSFS_DEV(0), "link"));
    memset(&lk, 0, sizeof(lk));
    lk.timeout_ms = 200;
    e = xioctl(c1, DN2_IOC_LINK_UP, &lk);
    tap_result(e == ETIMEDOUT && !strcmp(sysfs(SYSFS_DEV(1), "link"), "down") &&
          !strcmp(sysfs(SYSFS_DEV(1), "lid"), "none"),
          "LINK_UP on board 1 (no cable), 200 ms: %s (want ETIMEDOUT), SMA LID 0x%x, "
          "sysfs link %s", err_name(e), lk.sma_lid, sysfs(SYSFS_DEV(1), "link"));

    pg = (struct dn2_pgid){ .wid = 0, .pgid = 5 };
    e = xioctl(c0, DN2_IOC_SET_PGID, &pg);
    pg.wid = 1;
    e2 = xioctl(c0, DN2_IOC_SET_PGID, &pg);
    tap_result(!e && !e2 && !strcmp(sysfs(SYSFS_DEV(0), "wid0/pgid"), "5") &&
          !strcmp(sysfs(SYSFS_DEV(0), "wid1/pgid"), "5"),
          "SET_PGID 5 for WID 0 and 1 (%s, %s): sysfs %s %s", err_name(e), err_name(e2),
          sysfs(SYSFS_DEV(0), "wid0/pgid"), sysfs(SYSFS_DEV(0), "wid1/pgid"));
    pg = (struct dn2_pgid){ .wid = 2, .pgid = 5 };
    e = xioctl(c0, DN2_IOC_SET_PGID, &pg);
    pg = (struct dn2_pgid){ .wid = 0, .pgid = 256 };
    e2 = xioctl(c0, DN2_IOC_SET_PGID, &pg);
    tap_result(e == EINVAL && e2 == EINVAL, "SET_PGID WID 2 / PGID 256: %s, %s (want EINVAL)",
          err_name(e), err_name(e2));

    amt = (struct dn2_amt){ .lid = 1, .wid = 1, .value = 0x10 };
    e = xioctl(c0, DN2_IOC_SET_AMT, &amt);
    amt.value = 0x1000;
    e2 = xioctl(c0, DN2_IOC_SET_AMT, &amt);
    tap_result(!e && e2 == EINVAL, "SET_AMT {LID 1, WID 1} -> 0x10: %s; value 0x1000: %s "
          "(want EINVAL)", err_name(e), err_name(e2));

    /* An admin waiting for a link must not hold up the board's users. */
    {
        pid_t pid = fork();
        uint64_t t0;
        int fd, w, st;

        if (pid == 0) {
            struct dn2_link l = { .timeout_ms = 1500 };
            _exit(xioctl(c1, DN2_IOC_LINK_UP, &l) == ETIMEDOUT ? 0 : 1);
        }
        usleep(200000);
        t0 = now_ns();
        w = open_wid(DEV1, &fd);
        e = fd >= 0 ? get_info(fd, &info) : errno;
        sysfs(SYSFS_DEV(1), "lid");
        sysfs(SYSFS_DEV(1), "wid0/owner");
        t0 = now_ns() - t0;
        if (fd >= 0) {
            close(fd);
        }
        waitpid(pid, &st, 0);
        tap_result(w >= 0 && !e && t0 < 500000000ULL && WIFEXITED(st) && WEXITSTATUS(st) == 0,
              "while LINK_UP waits 1.5 s for board 1's link, open + GET_INFO + sysfs "
              "take %llu ms (the wait then times out)", (unsigned long long)(t0 / 1000000));
    }

    e = xioctl(c0, DN2_IOC_SMA_RESET, NULL);
    {
        char lidr[32];

        snprintf(lidr, sizeof(lidr), "%s", sysfs(SYSFS_DEV(0), "lid"));
        memset(&lk, 0, sizeof(lk));
        lk.timeout_ms = LINK_TIMEOUT_MS;
        e2 = xioctl(c0, DN2_IOC_LINK_UP, &lk);
        tap_result(!e && !strcmp(lidr, "none") && !e2 && lk.lid == 1,
              "SMA_RESET (%s): sysfs lid %s; LINK_UP again: %s, LID %u", err_name(e), lidr,
              err_name(e2), lk.lid);
    }

    e = xioctl(c0, _IO(DN2_IOC_MAGIC, 0x7f), NULL);
    tap_result(e == ENOTTY, "an unknown ioctl: %s (want ENOTTY)", err_name(e));

    e = get_info(c0, &info);
    tap_result(!e && (info.flags & DN2_INFO_SDIMM_READY) && (info.flags & DN2_INFO_LINK_UP) &&
          (info.flags & DN2_INFO_LID_SET) && info.lid == 1 && info.mtu == 2048 &&
          info.sdimm_module_mib == 256 && info.sdimm_area == (256ULL << 20),
          "GET_INFO after bring-up: flags 0x%x, LID %u, MTU %u, %u MiB/module, area %llu MiB",
          info.flags, info.lid, info.mtu, info.sdimm_module_mib,
          (unsigned long long)(info.sdimm_area >> 20));
    show_sysfs(SYSFS_DEV(0), "after bring-up");
    show_klog();
    close(c0);
    close(c1);
}

static void test_wids(void)
{
    struct holder a, b;
    char ow[2][32];
    int fd, w, fd2, w2;

    if (spawn_holder(DEV0, &a) || spawn_holder(DEV0, &b)) {
        tap_result(0, "fork");
        return;
    }
    tap_result((a.wid == 0 && b.wid == 1) || (a.wid == 1 && b.wid == 0),
          "two processes open %s: WIDs %d and %d", DEV0, a.wid, b.wid);
    snprintf(ow[0], sizeof(ow[0]), "%s", sysfs(SYSFS_DEV(0), "wid0/owner"));
    snprintf(ow[1], sizeof(ow[1]), "%s", sysfs(SYSFS_DEV(0), "wid1/owner"));
    tap_result(a.wid >= 0 && b.wid >= 0 && atoi(ow[a.wid]) == a.pid && atoi(ow[b.wid]) == b.pid,
          "sysfs wid0/owner %s, wid1/owner %s (pids %d holds WID %d, %d holds WID %d)",
          ow[0], ow[1], a.pid, a.wid, b.pid, b.wid);
    w = open_wid(DEV0, &fd);
    tap_result(w == -EBUSY, "a third opener gets %s (want EBUSY)", w < 0 ? err_name(-w) : "a WID");
    if (fd >= 0) {
        close(fd);
    }
    fd = open(DEV0, O_RDONLY);
    tap_result(fd >= 0, "a control handle (O_RDONLY) still opens with both WIDs taken");
    if (fd >= 0) {
        close(fd);
    }

    holder_quit(&a);
    w = open_wid(DEV0, &fd);
    tap_result(w == a.wid, "after the holder of WID %d exits, a new opener gets WID %d",
          a.wid, w);
    w2 = open_wid(DEV0, &fd2);
    tap_result(w2 == -EBUSY, "and the next one EBUSY again (%s)", w2 < 0 ? err_name(-w2) : "a WID");
    if (fd2 >= 0) {
        close(fd2);
    }
    close(fd);
    w = open_wid(DEV0, &fd);
    tap_result(w == a.wid, "close() frees the WID: reopened, WID %d", w);
    close(fd);

    holder_kill(&b);
    w = open_wid(DEV0, &fd);
    w2 = open_wid(DEV0, &fd2);
    tap_result((w == 0 && w2 == 1) || (w == 1 && w2 == 0),
          "after SIGKILL of the holder of WID %d, both WIDs are free again (%d, %d)",
          b.wid, w, w2);
    if (fd >= 0) {
        close(fd);
    }
    if (fd2 >= 0) {
        close(fd2);
    }
    tap_result(!strcmp(sysfs(SYSFS_DEV(0), "wid0/owner"), "none") &&
          !strcmp(sysfs(SYSFS_DEV(0), "wid1/owner"), "none"),
          "sysfs owners are none after every file is closed (%s, %s)",
          sysfs(SYSFS_DEV(0), "wid0/owner"), sysfs(SYSFS_DEV(0), "wid1/owner"));
}

static void test_mmap(void)
{
    struct maps m[2] = { 0 };
    int fd[2], wid[2], i, e, k;

    /* One process, two opens: both WIDs. */
    wid[0] = open_wid(DEV0, &fd[0]);
    wid[1] = open_wid(DEV0, &fd[1]);
    if (!tap_result(wid[0] >= 0 && wid[1] >= 0 && wid[0] != wid[1],
               "one process opening twice holds both WIDs (%d, %d)", wid[0], wid[1])) {
        return;
    }
    for (i = 0; i < NPIECES; i++) {
        int e0 = try_mmap(fd[0], pieces[i].off, pieces[i].len, pieces[i].prot, MAP_SHARED,
                          &m[0].p[i]);
        int e1 = try_mmap(fd[1], pieces[i].off, pieces[i].len, pieces[i].prot, MAP_SHARED,
                          &m[1].p[i]);
        tap_result(!e0 && !e1, "mmap %s: offset 0x%llx, 0x%zx bytes, %s: %s / %s", pieces[i].name,
              (unsigned long long)pieces[i].off, pieces[i].len,
              pieces[i].prot & PROT_WRITE ? "read/write" : "read-only",
              err_name(e0), err_name(e1));
    }

    /* What must fail. */
    {
        static const struct { off_t off; size_t len; const char *what; } bad[] = {
            { DN2_SR_BASE, DN2_SR_PAGE, "System Register" },
            { DN2_WW_OFF(1, 0), 0x1000, "WW1 (hardware offset of the other WID)" },
            { DN2_PW_OFF(1, 0), 0x1000, "PW1" },
            { DN2_LLCM_OFF(1), 0x1000, "LLCM1" },
            { DN2_LHB_OFF(1), 0x1000, "LHB1" },
            { DN2_UR_OFF(1), 0x1000, "UR1" },
            { 0x1000, 0x1000, "the gap after the Write Window" },
            { DN2_MMAP_LLCM, DN2_MMAP_LLCM_LEN + 0x1000, "LLCM + one page" },
            { DN2_MMAP_WW, 0x2000, "Write Window + one page" },
            { 0x60000, 0x1000, "past the window" },
        };
        char msg[512] = "";
        int all = 1;

        for (k = 0; k < (int)(sizeof(bad) / sizeof(bad[0])); k++) {
            int prot = bad[k].off == DN2_PW_OFF(1, 0) || bad[k].off == DN2_LHB_OFF(1) ?
                       PROT_READ : PROT_READ | PROT_WRITE;
            e = try_mmap(fd[0], bad[k].off, bad[k].len, prot, MAP_SHARED, NULL);
            if (e != EINVAL) {
                all = 0;
                snprintf(msg + strlen(msg), sizeof(msg) - strlen(msg), " %s: %s;",
                         bad[k].what, err_name(e));
            }
        }
        e = try_mmap(fd[0], DN2_SR_BASE, DN2_SR_PAGE, PROT_READ, MAP_SHARED, NULL);
        tap_result(all && e == EINVAL, "mmap of the System Register (even read-only: %s), of "
              "the other WID's pages, of gaps and past a piece: EINVAL%s", err_name(e),
              msg);
    }
    e = try_mmap(fd[0], DN2_MMAP_LLCM, DN2_MMAP_LLCM_LEN, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE, NULL);
    tap_result(e == EINVAL, "MAP_PRIVATE: %s (want EINVAL)", err_name(e));
    {
        int e1 = try_mmap(fd[0], DN2_MMAP_PW, DN2_MMAP_PW_LEN, PROT_READ | PROT_WRITE,
                          MAP_SHARED, NULL);
        int e2 = try_mmap(fd[0], DN2_MMAP_LHB, DN2_MMAP_LHB_LEN, PROT_READ | PROT_WRITE,
                          MAP_SHARED, NULL);
        int e3 = m[0].p[P_PW] && mprotect(m[0].p[P_PW], DN2_MMAP_PW_LEN,
                                          PROT_READ | PROT_WRITE) ? errno : 0;
        tap_result(e1 == EACCES && e2 == EACCES && e3 == EACCES,
              "read-only pieces refuse PROT_WRITE: PW %s, LHB %s, mprotect PW %s "
              "(want EACCES)", err_name(e1), err_name(e2), err_name(e3));
    }

    /* Memory types: PAT's view of what was mapped. */
    check_types(SYSFS_DEV(0), wid);

    /* The two WIDs' pieces are distinct pages of the board. */
    if (m[0].p[P_LLCM] && m[1].p[P_LLCM] && m[0].p[P_WW] && m[1].p[P_WW]) {
        uint64_t a, b, wa, wb;

        wr64(m[0].p[P_LLCM], 0x100, 0x1111222233334444ULL);
        wr64(m[1].p[P_LLCM], 0x100, 0x5555666677778888ULL);
        a = rd64(m[0].p[P_LLCM], 0x100);
        b = rd64(m[1].p[P_LLCM], 0x100);
        wr64(m[0].p[P_WW], 0x7f8, 0xaaaa0000aaaa0000ULL);
        wr64(m[1].p[P_WW], 0x7f8, 0xbbbb0000bbbb0000ULL);
        dn2_cpu_sfence();
        wa = rd64(m[0].p[P_WW], 0x7f8);
        wb = rd64(m[1].p[P_WW], 0x7f8);
        tap_result(a == 0x1111222233334444ULL && b == 0x5555666677778888ULL &&
              wa == 0xaaaa0000aaaa0000ULL && wb == 0xbbbb0000bbbb0000ULL,
              "the two WIDs' LLCM and Write Window mappings are distinct memory "
              "(LLCM 0x%llx / 0x%llx, WW 0x%llx / 0x%llx)", (unsigned long long)a,
              (unsigned long long)b, (unsigned long long)wa, (unsigned long long)wb);
    }
    if (m[0].p[P_UR] && m[1].p[P_UR]) {
        uint64_t s0 = rd64(m[0].p[P_UR], DN2_UR_CTL_STATUS);
        uint64_t s1 = rd64(m[1].p[P_UR], DN2_UR_CTL_STATUS);

        tap_result((s0 & DN2_CS_SDIMM_READY) && (s1 & DN2_CS_SDIMM_READY),
              "both User Register pages read Controller Status with SO-DIMM ready "
              "(0x%llx, 0x%llx)", (unsigned long long)s0, (unsigned long long)s1);
    }

    /* A mapping keeps the WID after close(); munmap() frees it. */
    close(fd[0]);
    close(fd[1]);
    {
        char o0[32], o1[32];
        int w, f2;

        snprintf(o0, sizeof(o0), "%s", sysfs(SYSFS_DEV(0), "wid0/owner"));
        snprintf(o1, sizeof(o1), "%s", sysfs(SYSFS_DEV(0), "wid1/owner"));
        w = open_wid(DEV0, &f2);
        tap_result(w == -EBUSY && atoi(o0) == getpid() && atoi(o1) == getpid(),
              "after close() with the mappings alive, the WIDs stay held (owners %s, %s; "
              "open: %s)", o0, o1, w < 0 ? err_name(-w) : "got a WID");
        if (f2 >= 0) {
            close(f2);
        }
        e = unload_module();
        tap_result(e == EAGAIN || e == EBUSY, "rmmod with only mappings open fails: %s", err_name(e));
        unmap_all(&m[0]);
        unmap_all(&m[1]);
        tap_result(!strcmp(sysfs(SYSFS_DEV(0), "wid0/owner"), "none") &&
              !strcmp(sysfs(SYSFS_DEV(0), "wid1/owner"), "none"),
              "munmap() of the last mapping frees the WIDs (owners %s, %s)",
              sysfs(SYSFS_DEV(0), "wid0/owner"), sysfs(SYSFS_DEV(0), "wid1/owner"));
    }
}

/*
 * Board 1 sits where the firmware's MTRRs leave memory write-back, so the
 * Prefetch Window and LH Buffer get real write-back there: check the types
 * and do a round trip through the cached Prefetch Window (CLFLUSH before
 * the VL and before reading).
 */
static void test_board1(void)
{
    struct maps m[2] = { 0 };
    int fd[2], wid[2], e0, e1, ok;
    char why[256];

    wid[0] = open_wid(DEV1, &fd[0]);
    wid[1] = open_wid(DEV1, &fd[1]);
    e0 = wid[0] >= 0 ? map_all(fd[0], &m[0]) : -wid[0];
    e1 = wid[1] >= 0 ? map_all(fd[1], &m[1]) : -wid[1];
    if (!tap_result(!e0 && !e1, "board 1: both WIDs open and map all pieces (%s, %s)",
               err_name(e0), err_name(e1))) {
        return;
    }
    check_types(SYSFS_DEV(1), wid);
    ok = round_trip(&m[1], 0x5a5a000011110000ULL, why, sizeof(why));
    tap_result(ok, "board 1, WID %d: VS/VL round trip: %s", wid[1], why);
    unmap_all(&m[0]);
    unmap_all(&m[1]);
    close(fd[0]);
    close(fd[1]);
}

/* In a child that drops root before opening. */
static void test_unprivileged(void)
{
    pid_t pid;
    int status;
    char before[64];

    snprintf(before, sizeof(before), "%s", sysfs(SYSFS_DEV(0), "wid0/prim_counter"));
    pid = fork();
    if (pid == 0) {
        struct dn2_info info;
        struct dn2_sdimm_init si = { .module_mib = 256 };
        struct dn2_pgid pg = { .wid = 0, .pgid = 1 };
        struct dn2_link lk = { .timeout_ms = 10 };
        struct maps m = { 0 };
        char why[256];
        int fd, e, e1, e2, e3, e4, ok;

        if (setgroups(0, NULL) || setgid(NOBODY) || setuid(NOBODY)) {
            tap_result(0, "drop privileges to uid %d: %s", NOBODY, strerror(errno));
            _exit(1);
        }
        fd = open(DEV0, O_RDWR);
        if (!tap_result(fd >= 0, "uid %d (no capabilities) opens %s read/write: %s", getuid(),
                   DEV0, fd >= 0 ? "ok" : strerror(errno))) {
            _exit(1);
        }
        e = get_info(fd, &info);
        tap_result(!e && info.wid == 0 && !(info.flags & DN2_INFO_ADMIN) &&
              (info.flags & DN2_INFO_SDIMM_READY) && info.sdimm_area == (256ULL << 20) &&
              info.lid == 1 && info.board == 0,
              "unprivileged GET_INFO: board %u, WID %u, LID %u, area %llu MiB, flags 0x%x",
              info.board, info.wid, info.lid, (unsigned long long)(info.sdimm_area >> 20),
              info.flags);
        e = map_all(fd, &m);
        tap_result(!e, "unprivileged mmap of all five pieces: %s", err_name(e));
        if (!e) {
            ok = round_trip(&m, 0xd2d2feed00000000ULL, why, sizeof(why));
            tap_result(ok, "unprivileged VS/VL round trip through the mapped pages: %s", why);
        } else {
            tap_result(0, "unprivileged VS/VL round trip: not run");
        }
        e = try_mmap(fd, DN2_SR_BASE, DN2_SR_PAGE, PROT_READ, MAP_SHARED, NULL);
        tap_result(e == EINVAL, "unprivileged mmap of the System Register: %s (want EINVAL)",
              err_name(e));
        e1 = xioctl(fd, DN2_IOC_CTL_RESET, NULL);
        e2 = xioctl(fd, DN2_IOC_SDIMM_INIT, &si);
        e3 = xioctl(fd, DN2_IOC_SET_PGID, &pg);
        e4 = xioctl(fd, DN2_IOC_LINK_UP, &lk);
        tap_result(e1 == EPERM && e2 == EPERM && e3 == EPERM && e4 == EPERM,
              "unprivileged CTL_RESET / SDIMM_INIT / SET_PGID / LINK_UP: %s / %s / %s / %s "
              "(want EPERM)", err_name(e1), err_name(e2), err_name(e3), err_name(e4));
        e = get_info(fd, &info);
        tap_result(!e && (info.flags & DN2_INFO_SDIMM_READY),
              "the refused ioctls changed nothing (SO-DIMM still ready)");
        unmap_all(&m);
        close(fd);
        _exit(0);
    }
    waitpid(pid, &status, 0);
    tap_result(WIFEXITED(status) && WEXITSTATUS(status) == 0,
          "the unprivileged child finished (status 0x%x)", status);
    {
        const char *after = sysfs(SYSFS_DEV(0), "wid0/prim_counter");
        unsigned v[6] = { 0 }, u[6] = { 0 };

        sscanf(before, "%u %u %u %u %u %u", &u[0], &u[1], &u[2], &u[3], &u[4], &u[5]);
        sscanf(after, "%u %u %u %u %u %u", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5]);
        tap_result(v[DN2_PC_VS] == u[DN2_PC_VS] + 1 && v[DN2_PC_VL] == u[DN2_PC_VL] + 1,
              "sysfs wid0/prim_counter went from [%s] to [%s] (BOTF VL VS RVL RVS IPUSH): "
              "one more VS and VL", before, after);
    }
    show_sysfs(SYSFS_DEV(0), "after the round trip");
}

static void test_rmmod(void)
{
    struct stat st;
    int fd = open(DEV1, O_RDWR), e;

    e = unload_module();
    tap_result(fd >= 0 && (e == EAGAIN || e == EBUSY) && module_loaded(),
          "rmmod while %s is open fails: %s", DEV1, err_name(e));
    if (fd >= 0) {
        close(fd);
    }
    e = unload_module();
    tap_result(!e && !module_loaded() && stat(DEV0, &st) && stat(DEV1, &st),
          "rmmod after close succeeds (%s) and the device nodes are gone", err_name(e));
    show_klog();
}

static void test_fallback(void)
{
    char p[128], base0[32] = "", base1[32] = "";
    struct dn2_info info;
    struct stat st;
    int e, fd;

    /* The windows as ACPI gave them: load once more to read sysfs. */
    if (load_module("") == 0) {
        char w[64];
        snprintf(w, sizeof(w), "%s", sysfs(SYSFS_DEV(0), "window"));
        sscanf(w, "%31s", base0);
        snprintf(w, sizeof(w), "%s", sysfs(SYSFS_DEV(1), "window"));
        sscanf(w, "%31s", base1);
        unload_module();
    }
    if (!tap_result(base0[0] && base1[0], "windows of boards 0 and 1 from sysfs: %s, %s",
               base0, base1)) {
        return;
    }
    e = load_module("use_acpi=0");
    tap_result(e == EINVAL && !module_loaded(), "insmod use_acpi=0 without addr=: %s (want EINVAL)",
          err_name(e));
    snprintf(p, sizeof(p), "addr=0x%llx", strtoull(base0, NULL, 0) + 0x1000);
    e = load_module(p);
    tap_result(e == EINVAL && !module_loaded(), "insmod %s (not 64 KiB aligned): %s (want EINVAL)",
          p, err_name(e));
    snprintf(p, sizeof(p), "addr=%s", base0);
    e = load_module(p);
    tap_result(e != 0 && !module_loaded(), "insmod %s while ACPI describes that board: %s "
          "(refused)", p, err_name(e));
    show_klog();

    snprintf(p, sizeof(p), "use_acpi=0 addr=%s", base1);
    e = load_module(p);
    tap_result(!e && stat(DEV0, &st) == 0 && stat(DEV1, &st) != 0,
          "insmod %s: %s; %s exists, %s does not", p, err_name(e), DEV0, DEV1);
    fd = open(DEV0, O_RDWR);
    e = fd < 0 ? errno : get_info(fd, &info);
    tap_result(!e && info.board == 0 && info.wid == 0 &&
          !strcmp(sysfs("/sys/bus/platform/devices/dimmnet2.0", "window"),
                  (snprintf(p, sizeof(p), "%s 0x%x", base1, DN2_WINDOW_SIZE), p)),
          "the addr= board works: open, GET_INFO board %u WID %u, sysfs dimmnet2.0/window %s",
          info.board, info.wid, sysfs("/sys/bus/platform/devices/dimmnet2.0", "window"));
    if (fd >= 0) {
        struct maps m = { 0 };
        char why[256] = "not mapped";
        int ok = 0;
        struct dn2_sdimm_init si = { .module_mib = 256 };

        xioctl(fd, DN2_IOC_SDIMM_INIT, &si);
        if (!map_all(fd, &m)) {
            ok = round_trip(&m, 0x0123456789abcdefULL, why, sizeof(why));
            unmap_all(&m);
        }
        tap_result(ok, "VS/VL round trip on the addr= board: %s", why);
        close(fd);
    }
    e = unload_module();
    tap_result(!e && !module_loaded(), "rmmod: %s", err_name(e));
    show_klog();
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc != 2) {
        fprintf(stderr, "usage: %s MODULE.ko\n", argv[0]);
        return 2;
    }
    ko_path = argv[1];
    /* the children's points count too */
    if (tap_share() < 0) {
        perror("mmap");
        return 2;
    }
    tap_diag("dn2-drvtest: ABI %d, uapi %d, module %s", DN2_ABI_VERSION, DN2_UAPI_VERSION, ko_path);
    show_klog();

    if (test_load()) {
        test_admin();
        test_wids();
        test_mmap();
        test_unprivileged();
        test_board1();
        test_rmmod();
    }
    test_fallback();

    tap_plan(tap_count());
    tap_diag("%d of %d checks failed", tap_failures(), tap_count());
    return tap_exit_code();
}
