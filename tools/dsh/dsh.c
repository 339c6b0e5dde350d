/* SPDX-License-Identifier: MIT */
/*
 * dsh: the DIMMnet Shell, compatible with "DIMMnet-2 Shell version 2.1a"
 * (Tsuji (Kitamura), Keio PhD thesis 2007, App. C), on libdimmnet2.
 *
 *   dsh [options] [total procs] [own PID] [own WID]
 *
 * Runs as root through /dev/mem (the whole window, System Register
 * included: the thesis's set-up), or with -d through the kernel driver
 * (/dev/dimmnet2-N: the driver assigns the WID and the System Register is
 * not reachable).  Commands come from the terminal ("dsh > " prompt), from
 * -c "cmd; cmd", or from stdin when it is not a terminal.  See docs/dsh.md.
 *
 * Every register offset, bit and layout comes from <dimmnet2/dn2_abi.h>.
 */
#define _GNU_SOURCE
#include "libdimmnet2.h"
#include "dimmnet2/dn2_uapi.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#define DSH_VERSION      "2.1a"
#define DSH_MAX_TOKENS   32
#define DSH_LINE_MAX     4096
#define DSH_SODIMM_WIN   3          /* Prefetch Window used by "dump sodimm" */
#define DSH_BOTF_WIN     3          /* Write Window used by rllcm_write */
#define DSH_DUMP_MAX     (1u << 20) /* largest "dump sodimm" */

/* ------------------------------------------------------------ state */

static struct {
    dn2_t *d;
    int drv;                /* opened through the driver (-d) */
    const char *dev;        /* its path */
    int ctl_fd;             /* driver control handle (GET_INFO), -1 if none */
    uint64_t base;          /* physical window base (/dev/mem mode) */
    const char *base_from;  /* where the base came from */
    int wid;
    long nprocs, pid;       /* the thesis's [total procs] [own PID] */
    int offsets;            /* -o: dump labels are window offsets, not VAs */
    int echo;               /* echo commands when not interactive */
    int interactive;
    long timeout_ms;        /* default for the wait commands */
    /* The receive-status ring as set in this session (ureg_write). */
    uint32_t st_init, st_size, st_head;
    int st_known;           /* st_head is known to be right */
    int failed;             /* a command failed (exit status) */
} S = {
    .ctl_fd = -1,
    .nprocs = 1,
    .pid = 0,
    .echo = 1,
    .timeout_ms = 2000,
    .st_size = DN2_STATUS_SIZE_DEFAULT,
};

/* The command being run, for messages. */
static const char *cur_cmd = "dsh";

static int fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int fail(const char *fmt, ...)
{
    va_list ap;

    fflush(stdout);
    if (strcmp(cur_cmd, "dsh")) {
        fprintf(stderr, "dsh: %s: error: ", cur_cmd);
    } else {
        fprintf(stderr, "dsh: error: ");
    }
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    return -1;
}

static void note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void note(const char *fmt, ...)
{
    va_list ap;

    fflush(stdout);
    fprintf(stderr, "dsh: %s: note: ", cur_cmd);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

/* ------------------------------------------------------------ numbers */

/*
 * The thesis's dsh reads every number with strtoul(s, NULL, 0): "0x" is
 * hex, a leading "0" octal, and parsing stops at the first character that
 * does not fit ("55ff" is 55).  Kept, with a note in the last case; a
 * string with no number at all, a sign or an overflow is an error.
 */
static int parse_num(const char *s, uint64_t max, uint64_t *out, const char *what)
{
    unsigned long long v;
    char *end;

    while (isspace((unsigned char)*s)) {
        s++;
    }
    if (!*s) {
        return fail("%s: no value given", what);
    }
    if (*s == '-' || *s == '+') {
        return fail("%s: '%s' is not an unsigned number", what, s);
    }
    errno = 0;
    v = strtoull(s, &end, 0);
    if (end == s) {
        return fail("%s: '%s' is not a number (decimal, 0x hex or 0 octal)", what, s);
    }
    if (errno == ERANGE || v > max) {
        return fail("%s: %s is out of range (at most 0x%llx)", what, s,
                    (unsigned long long)max);
    }
    if (*end) {
        note("%s: '%s' read as %llu (0x%llx): numbers are read like strtoul, "
             "write 0x for hex", what, s, v, v);
    }
    *out = v;
    return 0;
}

/* key=value arguments (llcm_write, ww_write, prim, sreg_write amt). */
struct kv {
    const char *key;
    uint64_t max;
    int optional;           /* an extension field */
    uint64_t val;
    int given;
};
#define KV(k, m)     { .key = (k), .max = (m) }
#define KV_EXT(k, m) { .key = (k), .max = (m), .optional = 1 }

static int parse_kv(int argc, char **argv, struct kv *kv, int n)
{
    int i, k;
    char missing[256] = "";

    for (i = 0; i < argc; i++) {
        char *eq = strchr(argv[i], '=');
        if (!eq || eq == argv[i]) {
            return fail("'%s' is not of the form name=value", argv[i]);
        }
        for (k = 0; k < n; k++) {
            if (strlen(kv[k].key) == (size_t)(eq - argv[i]) &&
                !strncmp(kv[k].key, argv[i], eq - argv[i])) {
                break;
            }
        }
        if (k == n) {
            char names[256] = "";
            for (k = 0; k < n; k++) {
                snprintf(names + strlen(names), sizeof(names) - strlen(names),
                         "%s%s=", k ? " " : "", kv[k].key);
            }
            *eq = 0;
            return fail("unknown field '%s' (fields: %s)", argv[i], names);
        }
        if (kv[k].given) {
            return fail("field %s= given twice", kv[k].key);
        }
        if (parse_num(eq + 1, kv[k].max, &kv[k].val, kv[k].key)) {
            return -1;
        }
        kv[k].given = 1;
    }
    for (k = 0; k < n; k++) {
        if (!kv[k].given && !kv[k].optional) {
            snprintf(missing + strlen(missing), sizeof(missing) - strlen(missing),
                     "%s%s=", missing[0] ? " " : "", kv[k].key);
        }
    }
    if (missing[0]) {
        return fail("missing field(s): %s (every field must be given, in any order; "
                    "'h %s' shows the syntax)", missing, cur_cmd);
    }
    return 0;
}

static int want_args(int argc, int lo, int hi, const char *usage)
{
    if (argc < lo || argc > hi) {
        return fail("%s arguments (usage: %s)", argc < lo ? "missing" : "too many", usage);
    }
    return 0;
}

/* ------------------------------------------------------------ CPU helpers */

/* The Prefetch Window and the LH Buffer may be write-back (driver mode):
 * drop their lines before reading or before the board fills them. */
static void forget_lines(const volatile uint8_t *base, uint32_t off, uint32_t len,
                         uint32_t area)
{
    uint32_t end = off + len;

    if (off >= area) {
        return;
    }
    if (end > area || end < off) {
        end = area;
    }
    dn2_cpu_flush(base + off, end - off);
}

static uint64_t now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ------------------------------------------------------------ dumps */

/* The thesis's layout: "# ADDR  7 6 5 4 3 2 1 0 F E D C B A 9 8" and
 * "#<address>: <word0> <word1>", two little-endian 64-bit words a line. */
static int dump_width(uint64_t last_label)
{
    int w = 8;

    while (w < 16 && (last_label >> (4 * w))) {
        w++;
    }
    return w;
}

static void dump_header(int w)
{
    printf("# ADDR%*s7 6 5 4 3 2 1 0 F E D C B A 9 8\n", w - 3, "");
}

static uint64_t rd64(const volatile uint8_t *p)
{
    return *(const volatile uint64_t *)p;
}

/* size bytes from p (rounded up to 8-byte words); label of the first byte
 * is label0. */
static void dump_mem(const volatile uint8_t *p, uint64_t label0, uint32_t size)
{
    uint32_t words = (size + 7) / 8, i;
    int w = dump_width(label0 + (words ? (words - 1) * 8 : 0));

    dump_header(w);
    for (i = 0; i < words; i++) {
        if (i % 2 == 0) {
            printf("#%0*" PRIx64 ":", w, label0 + i * 8);
        }
        printf(" %016" PRIx64, rd64(p + i * 8));
        if (i % 2 == 1 || i + 1 == words) {
            printf("\n");
        }
    }
}

/* A piece of the window: its VA and its offset in the hardware window. */
static uint64_t label(const volatile void *va, uint32_t window_off)
{
    return S.offsets ? window_off : (uint64_t)(uintptr_t)va;
}

/* Label of a register (or any window offset): its VA in /dev/mem mode,
 * where the whole window is one mapping; its window offset with -o and in
 * driver mode (the register page is a mapping the library keeps). */
static uint64_t win_va(uint32_t window_off)
{
    return (uint64_t)(uintptr_t)dn2_llcm(S.d) - DN2_LLCM_OFF(S.wid) + window_off;
}

static uint64_t reg_label(uint32_t window_off)
{
    return S.offsets || S.drv ? window_off : win_va(window_off);
}

static void dump_reg(const char *title, uint32_t window_off, uint64_t v)
{
    uint64_t lab = reg_label(window_off);
    int w = dump_width(lab);

    printf("####### %s #######\n", title);
    dump_header(w);
    printf("#%0*" PRIx64 ": %016" PRIx64 "\n", w, lab, v);
}

/* ------------------------------------------------------------ board state */

/* Driver mode: GET_INFO through a control handle (takes no WID). */
static int drv_info(struct dn2_info *info)
{
    if (S.ctl_fd < 0) {
        return -1;
    }
    memset(info, 0, sizeof(*info));
    return ioctl(S.ctl_fd, DN2_IOC_GET_INFO, info) < 0 ? -1 : 0;
}

/* 1 link ready, 0 not, -1 unknown; *sma = the SMA LID register. */
static int link_ready(uint64_t *sma)
{
    struct dn2_info info;
    uint64_t v;

    if (!S.drv) {
        if (dn2_sr_read(S.d, DN2_SR_SMA, &v)) {
            return -1;
        }
        if (sma) {
            *sma = v;
        }
        return dn2_sma_link_ready(v);
    }
    if (drv_info(&info)) {
        return -1;
    }
    if (sma) {
        *sma = info.sma_lid;
    }
    return !!(info.flags & DN2_INFO_LINK_UP);
}

static const char *family_name[DN2_PC_NUM] = { "BOTF", "VL", "VS", "RVL", "RVS", "IPUSH" };

static void print_prim_counter(uint64_t v)
{
    int f;

    for (f = 0; f < DN2_PC_NUM; f++) {
        printf("%-5s : %u\n", family_name[f], dn2_pc_field(v, f));
    }
}

static const char *rx_err_name(unsigned e)
{
    switch (e) {
    case DN2_RX_ERR_NONE: return "normal";
    case DN2_RX_ERR_EARLY_SOP: return "1st DW of the next packet before EOP";
    case DN2_RX_ERR_HFLAG: return "hflag does not match the header line count";
    default: return "illegal RVL-type packet (with a data part)";
    }
}

static void print_ctl_status(uint64_t v)
{
    static const char *names[] = {
        [0] = "request pending (not yet moved to the Request FIFO)",
        [1] = "SO-DIMM initialised",
        [2] = "Request FIFO almost full",
        [3] = "status area full",
        [4] = "status area empty",
    };
    int b, n, any = 0;

    for (b = 0; b <= 4; b++) {
        if (v & DN2_BIT(b)) {
            printf("  bit %-5d %s\n", b, names[b]);
            any = 1;
        }
    }
    for (n = 0; n < DN2_NUM_WW; n++) {
        if (v & DN2_CS_WW_DONE(n)) {
            printf("  bit %-5d WW#%d: write to SO-DIMM complete\n", DN2_CS_WW_SHIFT(n), n);
            any = 1;
        }
        if (v & DN2_CS_WW_SRC_OVF(n)) {
            printf("  bit %-5d WW#%d: source + size ran past the end of the Write Window\n",
                   DN2_CS_WW_SHIFT(n) + 1, n);
            any = 1;
        }
        if (v & DN2_CS_WW_DST_OVF(n)) {
            printf("  bit %-5d WW#%d: destination + size ran past the SO-DIMM area\n",
                   DN2_CS_WW_SHIFT(n) + 2, n);
            any = 1;
        }
    }
    if (v & DN2_CS_RX_OVF) {
        printf("  bit %-5d receive: data ran past the receive area\n", 17);
        any = 1;
    }
    if (v & DN2_CS_RX_ERR_MASK) {
        unsigned e = (unsigned)((v & DN2_CS_RX_ERR_MASK) >> DN2_CS_RX_ERR_SHIFT);
        printf("  bit 19:18 receive error state %u%u: %s\n", e >> 1, e & 1, rx_err_name(e));
        any = 1;
    }
    if (v & DN2_CS_REQ_ERROR) {
        printf("  bit %-5d request refused (extension; cleared by "
               "ureg_write prim_counter_reset)\n", 20);
        any = 1;
    }
    if (!any) {
        printf("  (no bit set)\n");
    }
}

static void print_pw_flag(uint64_t v)
{
    int n, l;

    for (n = 0; n < DN2_NUM_WW; n++) {
        unsigned f = (unsigned)((v & DN2_PWF_WIN_MASK(n)) >> DN2_PWF_WIN_SHIFT(n));
        printf("PW#%d  : ", n);
        for (l = DN2_PW_LINES_PER_WIN - 1; l >= 0; l--) {
            putchar(f & (1u << l) ? '1' : '0');
        }
        if (f == 0xf) {
            printf("  all lines in\n");
        } else {
            printf("  waiting for line(s)");
            for (l = 0; l < (int)DN2_PW_LINES_PER_WIN; l++) {
                if (!(f & (1u << l))) {
                    printf(" %d", l);
                }
            }
            printf("\n");
        }
    }
}

static void print_module_state(uint64_t v)
{
    struct dn2_module_state m;
    unsigned wc, rc, wu, pu;

    dn2_ms_unpack(v, &m);
    wc = m.wc, rc = m.rc, wu = m.wu, pu = m.pu;
    /* [EMU] encoding (dn2_abi.h): 0 idle, WC = 1 + OTYPE being executed. */
    printf("Window Controller\n");
    if (wc == 0) {
        printf("  Executer : P_IDLE\n");
    } else {
        unsigned op = wc - DN2_MS_WC_OTYPE_BIAS;
        printf("  Executer : P_%s_EXEC (OTYPE 0x%02x)\n",
               op <= DN2_OTYPE_MASK ? dn2_otype_name(op) : "?", op);
    }
    printf("Receive Controller\n  %s\n", rc ? "BUSY" : "IDLE");
    printf("Write Unit\n  %s\n", wu ? "BUSY" : "IDLE");
    printf("Prefetch Unit\n  %s\n", pu ? "BUSY" : "IDLE");
    if ((rc | wu | pu) && (rc > 1 || wu > 1 || pu > 1)) {
        printf("  (raw fields: RC 0x%x, WU 0x%x, PU 0x%x)\n", rc, wu, pu);
    }
}

static void print_status_record(uint32_t at, uint64_t lo, uint64_t up)
{
    struct dn2_status_rec rec = { lo, up };
    struct dn2_status_fields f;

    dn2_status_unpack(&rec, &f);
    printf("status @0x%04x: lower %016" PRIx64 " upper %016" PRIx64 "\n", at, lo, up);
    printf("  %s from CLID 0x%03x (LID %u) WID %u: %" PRIu64 " bytes, "
           "first address 0x%" PRIx64 ", dtype %u, iteration %u\n",
           dn2_otype_name(f.type), f.clid, dn2_clid_to_lid(f.clid),
           f.wid, (uint64_t)f.size, (uint64_t)f.addr, f.dtype, f.iter);
}

/* After a timeout: say why the board may be stuck. */
static void explain_stall(void)
{
    uint64_t ms = dn2_ur_read(S.d, DN2_UR_MODULE_STATE);
    uint64_t cs = dn2_ctl_status(S.d);
    struct dn2_module_state m;
    unsigned wc, op;

    dn2_ms_unpack(ms, &m);
    wc = m.wc;
    op = wc - DN2_MS_WC_OTYPE_BIAS;
    if (wc && op >= DN2_OP_RVL && op <= DN2_OTYPE_MASK && link_ready(NULL) == 0) {
        note("the Window Controller is executing %s (OTYPE 0x%02x) and the link is not "
             "up: it waits for the link (a Controller Reset clears it)",
             dn2_otype_name(op), op);
    } else if (wc == dn2_ms_wc_busy(DN2_OP_BOTF) && link_ready(NULL) == 0) {
        note("the Window Controller is executing a BOTF and the link is not up");
    }
    if (cs & DN2_CS_REQ_ERROR) {
        note("Controller Status bit 20: a request was refused (offset outside the area, "
             "SO-DIMM not initialised...); ureg_write prim_counter_reset clears it");
    }
    if (!(cs & DN2_CS_SDIMM_READY)) {
        note("the SO-DIMM is not initialised (sreg_write sdimm_init 1)");
    }
}

/* ------------------------------------------------------------ commands */

typedef int (*cmd_fn)(int argc, char **argv);

/* evpbuf_read / llcm_read: Off Size inside a piece. */
static int read_piece(int argc, char **argv, const char *usage,
                      const volatile uint8_t *base, uint32_t window_off,
                      uint32_t area, const char *what, int cached)
{
    uint64_t off, size;

    if (want_args(argc, 2, 2, usage) ||
        parse_num(argv[0], UINT32_MAX, &off, "Offset") ||
        parse_num(argv[1], UINT32_MAX, &size, "Size")) {
        return -1;
    }
    if (off >= area || size > area - off) {
        return fail("0x%" PRIx64 " + 0x%" PRIx64 " runs past the end of the %s "
                    "(0x%x bytes)", off, size, what, area);
    }
    if (cached) {
        forget_lines(base, (uint32_t)off, (uint32_t)size, area);
    }
    dump_mem(base + off, label(base + off, window_off + (uint32_t)off), (uint32_t)size);
    return 0;
}

static int c_evpbuf_read(int argc, char **argv)
{
    return read_piece(argc, argv, "evpbuf_read [Offset] [Size(Byte)]", dn2_lhb(S.d),
                      DN2_LHB_OFF(S.wid), DN2_LHB_AREA, "LH Buffer", 1);
}

static int c_llcm_read(int argc, char **argv)
{
    return read_piece(argc, argv, "llcm_read [Offset] [Size(Byte)]",
                      dn2_llcm(S.d), DN2_LLCM_OFF(S.wid), DN2_LLCM_AREA, "LLCM", 0);
}

static int c_pw_read(int argc, char **argv)
{
    uint64_t pw, size;
    const volatile uint8_t *base = dn2_pw(S.d);

    if (want_args(argc, 2, 2, "pw_read [PW#(0-3)] [Size(Byte)]") ||
        parse_num(argv[0], DN2_NUM_WW - 1, &pw, "PW#") ||
        parse_num(argv[1], UINT32_MAX, &size, "Size")) {
        return -1;
    }
    if (size > DN2_WIN_AREA - pw * DN2_WIN_SIZE) {
        return fail("Size 0x%" PRIx64 " runs past the Prefetch Window area "
                    "(%u windows of %u bytes)", size, DN2_NUM_WW, DN2_WIN_SIZE);
    }
    forget_lines(base, (uint32_t)(pw * DN2_WIN_SIZE), (uint32_t)size, DN2_WIN_AREA);
    dump_mem(base + pw * DN2_WIN_SIZE,
             label(base + pw * DN2_WIN_SIZE, DN2_PW_OFF(S.wid, (uint32_t)pw)),
             (uint32_t)size);
    return 0;
}

/* Extension: read back the Write Window (reads return what was written). */
static int c_ww_read(int argc, char **argv)
{
    uint64_t ww, size;
    const volatile uint8_t *base = dn2_ww(S.d);

    if (want_args(argc, 2, 2, "ww_read [WW#(0-3)] [Size(Byte)]") ||
        parse_num(argv[0], DN2_NUM_WW - 1, &ww, "WW#") ||
        parse_num(argv[1], UINT32_MAX, &size, "Size")) {
        return -1;
    }
    if (size > DN2_WIN_AREA - ww * DN2_WIN_SIZE) {
        return fail("Size 0x%" PRIx64 " runs past the Write Window area", size);
    }
    dump_mem(base + ww * DN2_WIN_SIZE,
             label(base + ww * DN2_WIN_SIZE, DN2_WW_OFF(S.wid, (uint32_t)ww)),
             (uint32_t)size);
    return 0;
}

/* it 32-bit values val, val+inc, ... from byte offset 'from'. */
static int fill32(volatile uint8_t *base, uint32_t area, uint64_t from, uint64_t it,
                  uint32_t val, uint32_t inc, int ww, const char *what)
{
    uint32_t buf[DN2_LLCM_AREA / 4];
    uint64_t i;

    if (from >= area || it * 4 > area - from) {
        return fail("from=0x%" PRIx64 " + it=%" PRIu64 " x 4 bytes runs past the end "
                    "of the %s (0x%x bytes)", from, it, what, area);
    }
    for (i = 0; i < it; i++) {
        buf[i] = val;
        val += inc;
    }
    if (ww) {
        dn2_ww_write(S.d, (uint32_t)from, buf, (size_t)it * 4);
    } else {
        for (i = 0; i < it; i++) {
            *(volatile uint32_t *)(base + from + 4 * i) = buf[i];
        }
    }
    return 0;
}

static int c_llcm_write(int argc, char **argv)
{
    struct kv kv[] = {
        KV("from", UINT32_MAX), KV("it", UINT32_MAX),
        KV("val", UINT32_MAX), KV("inc", UINT32_MAX),
    };

    if (parse_kv(argc, argv, kv, 4)) {
        return -1;
    }
    return fill32(dn2_llcm(S.d), DN2_LLCM_AREA, kv[0].val, kv[1].val,
                  (uint32_t)kv[2].val, (uint32_t)kv[3].val, 0, "LLCM");
}

static int c_ww_write(int argc, char **argv)
{
    struct kv kv[] = {
        KV("ww", DN2_NUM_WW - 1), KV("from", UINT32_MAX), KV("it", UINT32_MAX),
        KV("val", UINT32_MAX), KV("inc", UINT32_MAX),
    };
    uint64_t start;

    if (parse_kv(argc, argv, kv, 5)) {
        return -1;
    }
    start = kv[0].val * DN2_WIN_SIZE + kv[1].val;
    if (kv[1].val >= DN2_WIN_AREA) {
        return fail("from=0x%" PRIx64 " is outside the Write Window area", kv[1].val);
    }
    return fill32((volatile uint8_t *)dn2_ww(S.d), DN2_WIN_AREA, start, kv[2].val,
                  (uint32_t)kv[3].val, (uint32_t)kv[4].val, 1, "Write Window area");
}

static const struct {
    const char *name;
    unsigned otype;
} prims[] = {
    { "NOP", DN2_OP_NOP }, { "VL", DN2_OP_VL }, { "VLS", DN2_OP_VLS },
    { "VLI", DN2_OP_VLI }, { "VS", DN2_OP_VS }, { "VSS", DN2_OP_VSS },
    { "VSI", DN2_OP_VSI }, { "RVL", DN2_OP_RVL }, { "RVLS", DN2_OP_RVLS },
    { "RVLI", DN2_OP_RVLI }, { "RVS", DN2_OP_RVS }, { "RVSS", DN2_OP_RVSS },
    { "RVSI", DN2_OP_RVSI }, { "IPUSH", DN2_OP_IPUSH }, { "LHSv1", DN2_OP_LHSV1 },
    { "LHSv2", DN2_OP_LHSV2 },
};

static int c_prim(int argc, char **argv)
{
    struct kv kv[] = {
        KV("dt", 7), KV("it", DN2_ITER_MAX), KV("dw", 1), KV("dl", 0xfff),
        KV("ef", 1), KV("size", UINT32_MAX), KV("src", UINT32_MAX),
        KV("dst", UINT32_MAX),
        KV_EXT("rf", 1),             /* extension: 1 = Command1 (rflag) */
        KV_EXT("ex", UINT64_MAX),    /* extension: Command Ex word */
    };
    struct dn2_cmd c = { 0 };
    unsigned i, otype;
    int r;

    if (argc < 1) {
        return fail("no primitive given (usage: prim PRIM dt= it= dw= dl= ef= size= src= dst=)");
    }
    for (i = 0; i < sizeof(prims) / sizeof(prims[0]); i++) {
        if (!strcmp(argv[0], prims[i].name)) {
            break;
        }
    }
    if (i == sizeof(prims) / sizeof(prims[0])) {
        for (i = 0; i < sizeof(prims) / sizeof(prims[0]); i++) {
            if (!strcasecmp(argv[0], prims[i].name)) {
                break;
            }
        }
        if (i == sizeof(prims) / sizeof(prims[0])) {
            return fail("unknown primitive '%s' (one of NOP VL VLS VLI VS VSS VSI RVL "
                        "RVLS RVLI RVS RVSS RVSI IPUSH LHSv1 LHSv2)", argv[0]);
        }
    }
    otype = prims[i].otype;
    if (parse_kv(argc - 1, argv + 1, kv, 10)) {
        return -1;
    }
    c.lower = dn2_req_lower(otype, (unsigned)kv[0].val, (unsigned)kv[1].val,
                            (unsigned)kv[3].val, (unsigned)kv[2].val,
                            (unsigned)kv[4].val, (uint32_t)kv[5].val);
    c.upper = dn2_req_upper((uint32_t)kv[6].val, (uint32_t)kv[7].val);
    c.cmd = (int)kv[8].val;
    c.ex = kv[9].val;
    c.ex_valid = kv[9].given;

    /* The board fills Prefetch Window lines: drop them from the cache. */
    if (dn2_otype_family(otype) == DN2_OP_VL || (dn2_otype_is_rvl(otype) && c.cmd)) {
        uint32_t bytes = dn2_otype_form(otype) == DN2_FORM_CONTIG
                         ? (uint32_t)kv[5].val
                         : (uint32_t)kv[1].val * dn2_dtype_bytes((unsigned)kv[0].val);
        if (kv[7].val != DN2_COPY_OFF) {
            forget_lines(dn2_pw(S.d), (uint32_t)kv[7].val, bytes, DN2_WIN_AREA);
        }
    }
    if (otype >= DN2_OP_RVL && link_ready(NULL) == 0) {
        note("the link is not up: the board holds this request (and every later "
             "one) until it is");
    }
    r = dn2_issue(S.d, &c, 5000000L);
    printf("cmd:%" PRIx64 "_%" PRIx64 "%s", c.upper, c.lower, c.cmd ? " (Command1)" : "");
    if (c.ex_valid) {
        printf(" ex:%" PRIx64, c.ex);
    }
    printf("\n");
    if (r) {
        return fail("not issued: %s", dn2_strerror(r));
    }
    return 0;
}

static int c_rllcm_write(int argc, char **argv)
{
    uint64_t clid, off, val, dwid = (uint64_t)S.wid;
    unsigned c0;
    int r;

    if (want_args(argc, 3, 4, "rllcm_write [Dclid] [Offset] [Value] ([Dwid])") ||
        parse_num(argv[0], 0xfff, &clid, "Dclid") ||
        parse_num(argv[1], DN2_LLCM_AREA - 8, &off, "Offset") ||
        parse_num(argv[2], UINT64_MAX, &val, "Value") ||
        (argc > 3 && parse_num(argv[3], 1, &dwid, "Dwid"))) {
        return -1;
    }
    if (link_ready(NULL) == 0) {
        note("the link is not up: the BOTF waits in the board until it is");
    }
    c0 = dn2_count(S.d, DN2_PC_BOTF);
    /* One BOTF from Write Window #3: a 2-line header (TYPE RVS, lflag: the
     * data goes to the receiver's LLCM at Offset) and the 8 bytes. */
    r = dn2_botf(S.d, DSH_BOTF_WIN, dn2_clid_to_lid((uint16_t)clid), (int)dwid,
                 DN2_TO_LLCM, (uint32_t)off, &val, 8, 0);
    if (r) {
        return fail("BOTF not issued: %s", dn2_strerror(r));
    }
    /* The window is free again once the packet has left the board. */
    if (dn2_wait_count(S.d, DN2_PC_BOTF, c0, 1, S.timeout_ms * 1000L)) {
        note("the BOTF has not left the board after %ld ms", S.timeout_ms);
        explain_stall();
    }
    return 0;
}

/* ---- System Register */

static int sreg_unavailable(void)
{
    return fail("the System Register is not available to users: dsh opened %s "
                "through the driver (run dsh as root without -d for /dev/mem, or "
                "use the driver's administration ioctls)", S.dev);
}

static int c_sreg_read(int argc, char **argv)
{
    uint64_t v;
    int r;

    if (want_args(argc, 1, 1, "sreg_read sma_lid")) {
        return -1;
    }
    if (strcmp(argv[0], "sma_lid")) {
        return fail("unknown option '%s': the only readable System Register is "
                    "sma_lid (a read of ctl_reset would reset the board)", argv[0]);
    }
    if (S.drv) {
        return sreg_unavailable();
    }
    if ((r = dn2_sr_read(S.d, DN2_SR_SMA, &v))) {
        return fail("%s", dn2_strerror(r));
    }
    dump_reg("Get LID from sma", DN2_SR_BASE + DN2_SR_SMA, v);
    printf("LID  : %u (0x%04x, CLID 0x%03x)\n", (unsigned)(v & DN2_SMA_LID_MASK),
           (unsigned)(v & DN2_SMA_LID_MASK),
           dn2_lid_to_clid((uint16_t)(v & DN2_SMA_LID_MASK)));
    printf("link : %u%u (%s)\n", dn2_sma_link(v) >> 1, dn2_sma_link(v) & 1,
           dn2_sma_link_ready(v) ? "ready" : "not ready");
    return 0;
}

static const struct {
    const char *name;
    unsigned off;
    uint64_t max;
    const char *title;
} sregs[] = {
    { "sdimm_init", DN2_SR_SDIMM_INIT, UINT64_MAX, "SO-DIMM Init" },
    { "sdimm_capacity", DN2_SR_SDIMM_CAPACITY, UINT64_MAX, "SO-DIMM Capacity" },
    { "mtu", DN2_SR_MTU, UINT64_MAX, "MTU" },
    { "sma_reset", DN2_SR_SMA, UINT64_MAX, "SMA Software Reset" },
    { "lid", DN2_SR_LID, UINT64_MAX, "LID" },
    { "pgid0", DN2_SR_PGID0, UINT64_MAX, "PGID0" },
    { "pgid1", DN2_SR_PGID1, UINT64_MAX, "PGID1" },
    { "ctl_reset", DN2_SR_CTL_RESET, UINT64_MAX, "Controller Reset" },
    { "clt_reset", DN2_SR_CTL_RESET, UINT64_MAX, "Controller Reset" }, /* thesis's spelling */
};

static void session_reset(void)
{
    S.st_init = 0;
    S.st_size = DN2_STATUS_SIZE_DEFAULT;
    S.st_head = 0;
    S.st_known = 1;
}

static int c_sreg_write(int argc, char **argv)
{
    uint64_t v;
    unsigned i;
    int r;

    if (argc < 1) {
        return fail("missing arguments (usage: sreg_write [Option] [Value], or "
                    "sreg_write amt addr= wid= lid=)");
    }
    if (!strcmp(argv[0], "amt")) {
        struct kv kv[] = { KV("addr", DN2_AMT_VALUE_MASK), KV("wid", 1), KV("lid", 0xffff) };
        if (parse_kv(argc - 1, argv + 1, kv, 3)) {
            return -1;
        }
        if (S.drv) {
            return sreg_unavailable();
        }
        v = dn2_amt_encode((uint32_t)kv[0].val, (uint32_t)kv[1].val, (uint32_t)kv[2].val);
        if ((r = dn2_sr_write(S.d, DN2_SR_AMT, v))) {
            return fail("%s", dn2_strerror(r));
        }
        printf("####### AMT Address Table #######\n");
        printf("sender LID %u WID %u -> AMT entry 0x%03x (LLCM offset 0x%x): 0x%08" PRIx64 "\n",
               (unsigned)kv[2].val, (unsigned)kv[1].val, (unsigned)kv[0].val,
               (unsigned)kv[0].val * DN2_AMT_UNIT, v);
        return 0;
    }
    for (i = 0; i < sizeof(sregs) / sizeof(sregs[0]); i++) {
        if (!strcmp(argv[0], sregs[i].name)) {
            break;
        }
    }
    if (i == sizeof(sregs) / sizeof(sregs[0])) {
        return fail("unknown option '%s' (amt sdimm_init sdimm_capacity mtu sma_reset "
                    "lid pgid0 pgid1 ctl_reset)", argv[0]);
    }
    if (want_args(argc, 2, 2, "sreg_write [Option] [Value] (a Value is needed "
                  "even where it is ignored)") ||
        parse_num(argv[1], sregs[i].max, &v, "Value")) {
        return -1;
    }
    if (S.drv) {
        return sreg_unavailable();
    }
    if (sregs[i].off == DN2_SR_CTL_RESET) {
        r = dn2_admin_reset(S.d);       /* also forgets the library's state */
        session_reset();
    } else {
        r = dn2_sr_write(S.d, sregs[i].off, v);
    }
    if (r) {
        return fail("%s", dn2_strerror(r));
    }
    printf("####### %s #######\n", sregs[i].title);
    switch (sregs[i].off) {
    case DN2_SR_SDIMM_INIT:
        printf("SO-DIMM access %s\n", v & 1 ? "enabled (Controller Status bit 1 shows completion)"
                                           : "not enabled (bit 0 is 0)");
        break;
    case DN2_SR_SDIMM_CAPACITY:
        printf("%" PRIu64 " MiB per module%s\n", dn2_sdimm_module_bytes(v) >> 20,
               dn2_sdimm_module_bytes(v) == DN2_SDIMM_CAP_DEFAULT &&
               DN2_FGET(v, DN2_SDIMM_CAP_CODE) != dn2_sdimm_capacity_reg(DN2_SDIMM_CAP_DEFAULT)
               ? " (not a one-hot code: the default)" : "");
        break;
    case DN2_SR_MTU:
        printf("%u bytes%s\n", dn2_mtu_bytes(v),
               dn2_mtu_bytes(v) == DN2_MTU_DEFAULT &&
               DN2_FGET(v, DN2_MTU_CODE) != dn2_mtu_reg(DN2_MTU_DEFAULT)
               ? " (not a valid code: the default)" : "");
        break;
    case DN2_SR_LID:
        printf("LID %u (0x%04x, CLID 0x%03x)\n", (unsigned)DN2_FGET(v, DN2_SR_LID_VALUE),
               (unsigned)DN2_FGET(v, DN2_SR_LID_VALUE), dn2_lid_to_clid((uint16_t)v));
        break;
    case DN2_SR_PGID0:
    case DN2_SR_PGID1:
        printf("PGID %u for WID %d\n", (unsigned)DN2_FGET(v, DN2_SR_PGID_VALUE),
               sregs[i].off == DN2_SR_PGID1);
        break;
    }
    return 0;
}

/* ---- User Register */

static int c_ureg_read(int argc, char **argv)
{
    static const struct {
        const char *name;
        unsigned off;
        const char *title;
    } opts[] = {
        { "ctl_status", DN2_UR_CTL_STATUS, "Controller Status" },
        { "prim_counter", DN2_UR_PRIM_COUNTER, "Primitive Counter" },
        { "pw_flag", DN2_UR_PW_FLAG, "Prefetch Window Flag" },
        { "pkt_counter", DN2_UR_PKT_COUNTER, "Packet Counter" },
        { "evpbuf_nwa", DN2_UR_LHB_ADDR, "LH Buffer Next Write Address" },
        { "module_state", DN2_UR_MODULE_STATE, "Module Status" },
        { "status_nwa", DN2_UR_STATUS_ADDR, "Status Next Write Address" },
    };
    unsigned i;
    uint64_t v;

    if (want_args(argc, 1, 1, "ureg_read [Option]")) {
        return -1;
    }
    for (i = 0; i < sizeof(opts) / sizeof(opts[0]); i++) {
        if (!strcmp(argv[0], opts[i].name)) {
            break;
        }
    }
    if (i == sizeof(opts) / sizeof(opts[0])) {
        return fail("unknown option '%s' (ctl_status prim_counter pw_flag pkt_counter "
                    "evpbuf_nwa module_state status_nwa)", argv[0]);
    }
    v = dn2_ur_read(S.d, opts[i].off);
    dump_reg(opts[i].title, DN2_UR_OFF(S.wid) + opts[i].off, v);
    switch (opts[i].off) {
    case DN2_UR_CTL_STATUS:
        print_ctl_status(v);
        break;
    case DN2_UR_PRIM_COUNTER:
        print_prim_counter(v);
        break;
    case DN2_UR_PW_FLAG:
        print_pw_flag(v);
        break;
    case DN2_UR_PKT_COUNTER:
        printf("packets received : %" PRIu64 "\n", v);
        break;
    case DN2_UR_LHB_ADDR:
        printf("tail : 0x%03x (entry %u)\n", (unsigned)(v & DN2_LHB_ADDR_MASK),
               (unsigned)((v & DN2_LHB_ADDR_MASK) / DN2_LHB_ENTRY));
        break;
    case DN2_UR_MODULE_STATE:
        print_module_state(v);
        break;
    case DN2_UR_STATUS_ADDR:
        printf("tail : 0x%04x", (unsigned)(v & DN2_STATUS_ADDR_MASK));
        if (S.st_known) {
            uint32_t t = (uint32_t)(v & DN2_STATUS_ADDR_MASK);
            printf(" (head 0x%04x in this session: %u record(s) waiting)", S.st_head,
                   ((t - S.st_head + S.st_size) % S.st_size) / DN2_STATUS_REC_SIZE);
        }
        printf("\n");
        break;
    }
    return 0;
}

static int c_ureg_write(int argc, char **argv)
{
    static const struct {
        const char *name;
        unsigned off;
        uint64_t max;
        const char *title;
    } opts[] = {
        { "prim_counter_reset", DN2_UR_PRIM_COUNTER, UINT64_MAX, "Primitive Counter Reset" },
        { "pkt_counter_reset", DN2_UR_PKT_COUNTER, UINT64_MAX, "Packet Counter Reset" },
        { "ivs_area_size", DN2_UR_IPUSH_AREA_SIZE, UINT64_MAX, "IPUSH Area Size" },
        { "evpbuf_nra", DN2_UR_LHB_ADDR, UINT64_MAX, "LH Buffer Next Read Address" },
        { "status_initial_addr", DN2_UR_STATUS_INIT, UINT64_MAX, "Status Initial Address" },
        { "status_area_size", DN2_UR_STATUS_SIZE, UINT64_MAX, "Status Area Size" },
        { "status_nra", DN2_UR_STATUS_ADDR, UINT64_MAX, "Status Next Read Address" },
    };
    unsigned i;
    uint64_t v;

    if (argc < 1) {
        return fail("missing arguments (usage: ureg_write [Option] [Value])");
    }
    for (i = 0; i < sizeof(opts) / sizeof(opts[0]); i++) {
        if (!strcmp(argv[0], opts[i].name)) {
            break;
        }
    }
    if (i == sizeof(opts) / sizeof(opts[0])) {
        return fail("unknown option '%s' (prim_counter_reset pkt_counter_reset "
                    "ivs_area_size evpbuf_nra status_initial_addr status_area_size "
                    "status_nra)", argv[0]);
    }
    if (want_args(argc, 2, 2, "ureg_write [Option] [Value] (a Value is needed even "
                  "where it is ignored)") ||
        parse_num(argv[1], opts[i].max, &v, "Value")) {
        return -1;
    }
    dn2_ur_write(S.d, opts[i].off, v);
    printf("####### %s #######\n", opts[i].title);
    switch (opts[i].off) {
    case DN2_UR_IPUSH_AREA_SIZE:
        printf("%u x %u bytes of SO-DIMM for IPUSH reception\n",
               (unsigned)(v & DN2_IPUSH_AREA_MASK), DN2_IPUSH_AREA_UNIT);
        break;
    case DN2_UR_LHB_ADDR:
        printf("head : 0x%03x\n", (unsigned)(v & DN2_LHB_ADDR_MASK));
        break;
    case DN2_UR_STATUS_INIT:
        S.st_init = S.st_head = (uint32_t)(v & DN2_STATUS_INIT_MASK);
        S.st_known = 1;
        printf("status ring at LLCM 0x%04x (head and tail reset to it)\n", S.st_init);
        break;
    case DN2_UR_STATUS_SIZE:
        S.st_size = dn2_status_area_bytes(v);
        S.st_head = S.st_init;
        printf("%u bytes (%u records)\n", S.st_size, S.st_size / DN2_STATUS_REC_SIZE);
        break;
    case DN2_UR_STATUS_ADDR:
        S.st_head = (uint32_t)(v & DN2_STATUS_ADDR_MASK);
        S.st_known = 1;
        printf("head : 0x%04x\n", S.st_head);
        break;
    }
    return 0;
}

/* ---- extensions */

static int family_of(const char *s)
{
    int f;

    for (f = 0; f < DN2_PC_NUM; f++) {
        if (!strcasecmp(s, family_name[f])) {
            return f;
        }
    }
    return -1;
}

/* Polls cond every ~50 us until it holds or ms pass. */
#define POLL_MS(ms, cond)                                               \
    ({                                                                  \
        uint64_t _t0 = now_ms();                                        \
        int _ok = 0;                                                    \
        for (;;) {                                                      \
            if (cond) { _ok = 1; break; }                               \
            if (now_ms() - _t0 >= (uint64_t)(ms)) break;                \
            usleep(50);                                                 \
        }                                                               \
        _ok;                                                            \
    })

static int c_wait(int argc, char **argv)
{
    const char *usage = "wait pw N | vs N | count FAMILY N | pkt N | link | sdimm | "
                        "status  [timeout ms]";
    uint64_t n = 0, ms = (uint64_t)S.timeout_ms;
    int nargs, r;

    if (argc < 1) {
        return fail("what to wait for? (usage: %s)", usage);
    }
    if (!strcmp(argv[0], "count")) {
        nargs = 3;
    } else if (!strcmp(argv[0], "pw") || !strcmp(argv[0], "vs") || !strcmp(argv[0], "pkt")) {
        nargs = 2;
    } else if (!strcmp(argv[0], "link") || !strcmp(argv[0], "sdimm") ||
               !strcmp(argv[0], "status")) {
        nargs = 1;
    } else {
        return fail("unknown condition '%s' (usage: %s)", argv[0], usage);
    }
    if (want_args(argc, nargs, nargs + 1, usage) ||
        (argc > nargs && parse_num(argv[nargs], 3600000, &ms, "timeout ms"))) {
        return -1;
    }
    if (!strcmp(argv[0], "pw")) {
        if (parse_num(argv[1], DN2_NUM_WW - 1, &n, "PW#")) {
            return -1;
        }
        r = dn2_wait_pw(S.d, (int)n, (long)ms * 1000);
        if (r) {
            fail("PW#%u: %s (PW flags 0x%04" PRIx64 ")", (unsigned)n, dn2_strerror(r),
                 dn2_ur_read(S.d, DN2_UR_PW_FLAG));
            explain_stall();
            return -1;
        }
        printf("PW#%u: all lines in\n", (unsigned)n);
        if (dn2_ctl_status(S.d) & DN2_CS_REQ_ERROR) {
            note("Controller Status bit 20 is set: a request was refused, and a refused "
                 "VL leaves the flags (and the data) of an earlier transfer");
        }
    } else if (!strcmp(argv[0], "vs")) {
        if (parse_num(argv[1], DN2_NUM_WW - 1, &n, "WW#")) {
            return -1;
        }
        r = dn2_wait_vs(S.d, (int)n, (long)ms * 1000);
        if (r == DN2_E_SRC_OVF || r == DN2_E_DST_OVF) {
            printf("WW#%u: write to SO-DIMM complete, but %s\n", (unsigned)n, dn2_strerror(r));
        } else if (r) {
            fail("WW#%u: %s", (unsigned)n, dn2_strerror(r));
            explain_stall();
            return -1;
        } else {
            printf("WW#%u: write to SO-DIMM complete\n", (unsigned)n);
        }
    } else if (!strcmp(argv[0], "count")) {
        int f = family_of(argv[1]);
        if (f < 0) {
            return fail("unknown family '%s' (BOTF VL VS RVL RVS IPUSH)", argv[1]);
        }
        if (parse_num(argv[2], DN2_PC_MASK, &n, "N")) {
            return -1;
        }
        if (!POLL_MS(ms, dn2_count(S.d, f) >= n)) {
            explain_stall();
            return fail("%s counter is %u after %" PRIu64 " ms (waiting for %u)",
                        family_name[f], dn2_count(S.d, f), ms, (unsigned)n);
        }
        printf("%s counter: %u\n", family_name[f], dn2_count(S.d, f));
    } else if (!strcmp(argv[0], "pkt")) {
        if (parse_num(argv[1], UINT64_MAX, &n, "N")) {
            return -1;
        }
        if (!POLL_MS(ms, dn2_packet_counter(S.d) >= n)) {
            return fail("Packet Counter is %" PRIu64 " after %" PRIu64 " ms (waiting for %"
                        PRIu64 ")", dn2_packet_counter(S.d), ms, n);
        }
        printf("packets received: %" PRIu64 "\n", dn2_packet_counter(S.d));
    } else if (!strcmp(argv[0], "link")) {
        uint64_t sma = 0;
        if (link_ready(&sma) < 0) {
            return fail("the link state is not readable");
        }
        if (!POLL_MS(ms, link_ready(&sma) == 1)) {
            return fail("link not ready after %" PRIu64 " ms (SMA LID 0x%" PRIx64 ")", ms, sma);
        }
        printf("link ready, LID %u\n", (unsigned)(sma & DN2_SMA_LID_MASK));
    } else if (!strcmp(argv[0], "sdimm")) {
        if (!POLL_MS(ms, dn2_ctl_status(S.d) & DN2_CS_SDIMM_READY)) {
            return fail("SO-DIMM not ready after %" PRIu64 " ms", ms);
        }
        printf("SO-DIMM ready\n");
    } else {
        if (!POLL_MS(ms, (dn2_ur_read(S.d, DN2_UR_STATUS_ADDR) & DN2_STATUS_ADDR_MASK) !=
                         S.st_head)) {
            return fail("no receive status after %" PRIu64 " ms", ms);
        }
        printf("receive status waiting\n");
    }
    return 0;
}

static int c_status(int argc, char **argv)
{
    uint32_t tail, at;
    uint64_t lo, up;

    (void)argv;
    if (want_args(argc, 0, 0, "status")) {
        return -1;
    }
    tail = (uint32_t)(dn2_ur_read(S.d, DN2_UR_STATUS_ADDR) & DN2_STATUS_ADDR_MASK);
    if (!S.st_known) {
        note("the ring's head is not known in this session; set it with "
             "ureg_write status_initial_addr / status_nra");
    }
    if (tail == S.st_head) {
        printf("status: none (head = tail = 0x%04x)\n", tail);
        return 0;
    }
    at = S.st_head;
    if (at + DN2_STATUS_REC_SIZE > DN2_LLCM_AREA) {
        return fail("head 0x%04x is outside the LLCM", at);
    }
    lo = rd64(dn2_llcm(S.d) + at);
    up = rd64(dn2_llcm(S.d) + at + 8);
    print_status_record(at, lo, up);
    S.st_head = S.st_init + (S.st_head - S.st_init + DN2_STATUS_REC_SIZE) % S.st_size;
    dn2_ur_write(S.d, DN2_UR_STATUS_ADDR, S.st_head);
    printf("  head now 0x%04x, tail 0x%04x\n", S.st_head, tail);
    return 0;
}

static int c_dump(int argc, char **argv)
{
    static uint64_t buf[DN2_WIN_SIZE / 8];
    const char *usage = "dump sodimm [Offset] [Size(Byte)]";
    uint64_t off, size, done;
    int w, r;

    if (want_args(argc, 3, 3, usage)) {
        return -1;
    }
    if (strcmp(argv[0], "sodimm")) {
        return fail("unknown area '%s' (usage: %s)", argv[0], usage);
    }
    if (parse_num(argv[1], UINT32_MAX, &off, "Offset") ||
        parse_num(argv[2], DSH_DUMP_MAX, &size, "Size")) {
        return -1;
    }
    if (!(dn2_ctl_status(S.d) & DN2_CS_SDIMM_READY)) {
        return fail("the SO-DIMM is not initialised (sreg_write sdimm_init 1)");
    }
    w = dump_width(off + (size ? size - 1 : 0));
    dump_header(w);
    for (done = 0; done < size; done += DN2_WIN_SIZE) {
        uint32_t n = (uint32_t)(size - done < DN2_WIN_SIZE ? size - done : DN2_WIN_SIZE);
        uint32_t i, words = (n + 7) / 8;
        /* VL through Prefetch Window #3, then read the window. */
        r = dn2_sd_read(S.d, (uint32_t)(off + done), buf, words * 8, 1u << DSH_SODIMM_WIN,
                        S.timeout_ms * 1000L);
        if (r) {
            fail("VL of SO-DIMM 0x%" PRIx64 ": %s", off + done, dn2_strerror(r));
            explain_stall();
            return -1;
        }
        for (i = 0; i < words; i++) {
            if (i % 2 == 0) {
                printf("#%0*" PRIx64 ":", w, off + done + i * 8);
            }
            printf(" %016" PRIx64, buf[i]);
            if (i % 2 == 1 || i + 1 == words) {
                printf("\n");
            }
        }
    }
    return 0;
}

static int c_sleep(int argc, char **argv)
{
    uint64_t ms;

    if (want_args(argc, 1, 1, "sleep [ms]") || parse_num(argv[0], 3600000, &ms, "ms")) {
        return -1;
    }
    usleep((useconds_t)(ms * 1000));
    return 0;
}

static int c_info(int argc, char **argv)
{
    struct {
        const char *name;
        const volatile void *va;
        uint32_t off, len;
    } pieces[] = {
        { "Write Window", dn2_ww(S.d), DN2_WW_OFF(S.wid, 0), DN2_WIN_AREA },
        { "Prefetch Window", dn2_pw(S.d), DN2_PW_OFF(S.wid, 0), DN2_WIN_AREA },
        { "LLCM", dn2_llcm(S.d), DN2_LLCM_OFF(S.wid), DN2_LLCM_AREA },
        { "LH Buffer", dn2_lhb(S.d), DN2_LHB_OFF(S.wid), DN2_LHB_AREA },
    };
    uint64_t cs, pc, sma = 0;
    int i, link;

    (void)argv;
    if (want_args(argc, 0, 0, "info")) {
        return -1;
    }
    if (S.drv) {
        struct dn2_info inf;
        printf("dsh: %s (driver), WID %d; total procs %ld, own PID %ld\n", S.dev, S.wid,
               S.nprocs, S.pid);
        if (!drv_info(&inf)) {
            printf("  driver: board %u, ABI %u, flags 0x%x%s%s%s%s%s, LID %u, SMA LID 0x%x,"
                   " MTU %u, PGID %u, SO-DIMM %u MiB/module, area 0x%" PRIx64 "\n",
                   inf.board, inf.abi_version, inf.flags,
                   inf.flags & DN2_INFO_SDIMM_READY ? " sdimm-ready" : "",
                   inf.flags & DN2_INFO_LINK_UP ? " link-up" : "",
                   inf.flags & DN2_INFO_LID_SET ? " lid-set" : "",
                   inf.flags & DN2_INFO_PGID_SET ? " pgid-set" : "",
                   inf.flags & DN2_INFO_ADMIN ? " admin" : "",
                   inf.lid, inf.sma_lid, inf.mtu, inf.pgid, inf.sdimm_module_mib,
                   (uint64_t)inf.sdimm_area);
        }
    } else {
        printf("dsh: /dev/mem at 0x%" PRIx64 " (%s), WID %d; total procs %ld, own PID %ld\n",
               S.base, S.base_from, S.wid, S.nprocs, S.pid);
    }
    for (i = 0; i < 4; i++) {
        printf("  %-16s VA %p  window offset 0x%05x, 0x%x bytes\n", pieces[i].name,
               (const void *)pieces[i].va, pieces[i].off, pieces[i].len);
    }
    if (S.drv) {
        printf("  %-16s window offset 0x%05x\n", "User Register", DN2_UR_OFF(S.wid));
        printf("  %-16s not available (driver mode)\n", "System Register");
    } else {
        printf("  %-16s VA 0x%" PRIx64 "  window offset 0x%05x\n", "User Register",
               win_va(DN2_UR_OFF(S.wid)), DN2_UR_OFF(S.wid));
        printf("  %-16s VA 0x%" PRIx64 "  window offset 0x%05x\n", "System Register",
               win_va(DN2_SR_BASE), DN2_SR_BASE);
    }
    link = link_ready(&sma);
    if (link >= 0) {
        printf("  link: %s, SMA LID 0x%" PRIx64 " (LID %u)\n", link ? "ready" : "not ready",
               sma, (unsigned)(sma & DN2_SMA_LID_MASK));
    }
    cs = dn2_ctl_status(S.d);
    pc = dn2_prim_counter(S.d);
    printf("  Controller Status 0x%" PRIx64 ", Primitive Counter 0x%" PRIx64
           " (BOTF %u VL %u VS %u RVL %u RVS %u IPUSH %u), Packet Counter %" PRIu64 "\n",
           cs, pc, dn2_pc_field(pc, 0), dn2_pc_field(pc, 1), dn2_pc_field(pc, 2),
           dn2_pc_field(pc, 3), dn2_pc_field(pc, 4), dn2_pc_field(pc, 5),
           dn2_packet_counter(S.d));
    printf("  status ring (this session): LLCM 0x%04x, %u bytes, head 0x%04x%s, tail 0x%04x\n",
           S.st_init, S.st_size, S.st_head, S.st_known ? "" : " (unknown)",
           (unsigned)(dn2_ur_read(S.d, DN2_UR_STATUS_ADDR) & DN2_STATUS_ADDR_MASK));
    return 0;
}

static int c_version(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    printf("DIMMnet-2 Shell version " DSH_VERSION " (DIMMnet-2 for QEMU; ABI %d)\n",
           DN2_ABI_VERSION);
    return 0;
}

static int c_help(int argc, char **argv);

static int c_quit(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    return 1;   /* handled by the caller */
}

/* ------------------------------------------------------------ table */

static const struct command {
    const char *name, *alias;
    cmd_fn fn;
    int ext;                /* an extension (not in dsh 2.1a) */
    const char *what;
    const char *usage;
} commands[] = {
    { "evpbuf_read", NULL, c_evpbuf_read, 0, "LH Buffer Read",
      "evpbuf_read [Offset] [Size(Byte)]" },
    { "h", "help", c_help, 0, "Help", "h ([Command])" },
    { "llcm_read", NULL, c_llcm_read, 0, "LLCM Read", "llcm_read [Offset] [Size(Byte)]" },
    { "llcm_write", NULL, c_llcm_write, 0, "LLCM Write",
      "llcm_write from=[Offset] it=[Iteration] val=[Value] inc=[Increment]" },
    { "prim", NULL, c_prim, 0, "Issue a Primitive (does not wait)",
      "prim PRIM dt=[Dtype] it=[Iteration] dw=[Dwid] dl=[Dclid] ef=[Eflag] "
      "size=[Size(Byte)] src=[Src Addr] dst=[Dst Addr]\n"
      "\t  PRIM: NOP VL VLS VLI VS VSS VSI RVL RVLS RVLI RVS RVSS RVSI IPUSH LHSv1 LHSv2\n"
      "\t  extension fields: rf=1 (Command1: data to the Prefetch Window), ex=[Command Ex]" },
    { "pw_read", NULL, c_pw_read, 0, "Prefetch Window Read", "pw_read [PW#(0-3)] [Size(Byte)]" },
    { "q", "quit", c_quit, 0, "Quit", "q" },
    { "rllcm_write", NULL, c_rllcm_write, 0, "Remote LLCM Write (8 bytes, a BOTF from WW#3)",
      "rllcm_write [Dclid] [Offset] [Value] ([Dwid], extension; default: own WID)" },
    { "sreg_read", NULL, c_sreg_read, 0, "System Register Read", "sreg_read sma_lid" },
    { "sreg_write", NULL, c_sreg_write, 0, "System Register Write",
      "sreg_write [Option] [Value]\n"
      "\t  Option: sdimm_init sdimm_capacity mtu sma_reset lid pgid0 pgid1 ctl_reset\n"
      "\t- sreg_write amt addr=[LLCM Address] wid=[Wid] lid=[Lid]" },
    { "ureg_read", NULL, c_ureg_read, 0, "User Register Read",
      "ureg_read [Option]\n"
      "\t  Option: ctl_status prim_counter pw_flag pkt_counter evpbuf_nwa module_state status_nwa" },
    { "ureg_write", NULL, c_ureg_write, 0, "User Register Write",
      "ureg_write [Option] [Value]\n"
      "\t  Option: prim_counter_reset pkt_counter_reset ivs_area_size evpbuf_nra\n"
      "\t          status_initial_addr status_area_size status_nra" },
    { "v", "version", c_version, 0, "Version", "v" },
    { "ww_write", NULL, c_ww_write, 0, "Write Window Write",
      "ww_write ww=[WW#(0-3)] from=[Offset] it=[Iteration] val=[Value] inc=[Increment]" },
    /* extensions */
    { "wait", NULL, c_wait, 1, "Wait for a completion (default timeout: -t, 2000 ms)",
      "wait pw [PW#] | vs [WW#] | count [BOTF|VL|VS|RVL|RVS|IPUSH] [N] | pkt [N] | link | "
      "sdimm | status  ([timeout ms])" },
    { "status", NULL, c_status, 1, "Take and decode the next receive-status record", "status" },
    { "dump", NULL, c_dump, 1, "SO-DIMM Read (VL through Prefetch Window #3)",
      "dump sodimm [Offset] [Size(Byte)]" },
    { "ww_read", NULL, c_ww_read, 1, "Write Window Read (what was written)",
      "ww_read [WW#(0-3)] [Size(Byte)]" },
    { "info", NULL, c_info, 1, "Board, mapping and session summary", "info" },
    { "sleep", NULL, c_sleep, 1, "Sleep", "sleep [ms]" },
};
#define NCOMMANDS (sizeof(commands) / sizeof(commands[0]))

static const struct command *find_command(const char *name)
{
    unsigned i;

    for (i = 0; i < NCOMMANDS; i++) {
        if (!strcmp(name, commands[i].name) ||
            (commands[i].alias && !strcmp(name, commands[i].alias))) {
            return &commands[i];
        }
    }
    return NULL;
}

static void help_one(const struct command *c)
{
    printf("%-12s: %s%s\n\t- %s\n", c->name, c->what, c->ext ? " [extension]" : "", c->usage);
}

static int c_help(int argc, char **argv)
{
    unsigned i;

    if (argc > 0) {
        const struct command *c = find_command(argv[0]);
        if (!c) {
            return fail("no command '%s'", argv[0]);
        }
        help_one(c);
        return 0;
    }
    for (i = 0; i < NCOMMANDS; i++) {
        if (i > 0 && commands[i].ext && !commands[i - 1].ext) {
            printf("---- extensions (not in DIMMnet-2 Shell 2.1a) ----\n");
        }
        help_one(&commands[i]);
    }
    printf("Numbers: 0x.. hex, 0.. octal, else decimal (strtoul). "
           "Several commands: separate with ';'. Comments: '#'.\n");
    return 0;
}

/* ------------------------------------------------------------ the shell */

/* Runs one command (already split); 1 means quit. */
static int run_tokens(int argc, char **argv)
{
    const struct command *c;
    int r;

    if (argc == 0) {
        return 0;
    }
    c = find_command(argv[0]);
    cur_cmd = argv[0];
    if (!c) {
        fail("unknown command (h for help)");
        S.failed = 1;
        cur_cmd = "dsh";
        return 0;
    }
    cur_cmd = c->name;
    if (c->fn == c_quit) {
        return 1;
    }
    r = c->fn(argc - 1, argv + 1);
    if (r) {
        S.failed = 1;
    }
    fflush(stdout);
    cur_cmd = "dsh";
    return 0;
}

/* One input line: ';'-separated commands, '#' starts a comment. */
static int run_line(char *line)
{
    char *save = NULL, *cmd, *hash;

    hash = strchr(line, '#');
    if (hash) {
        *hash = 0;
    }
    for (cmd = strtok_r(line, ";", &save); cmd; cmd = strtok_r(NULL, ";", &save)) {
        char *argv[DSH_MAX_TOKENS + 1], *s2 = NULL, *t, *echo;
        int argc = 0;

        while (isspace((unsigned char)*cmd)) {
            cmd++;
        }
        if (!*cmd) {
            continue;
        }
        echo = cmd + strlen(cmd);
        while (echo > cmd && isspace((unsigned char)echo[-1])) {
            *--echo = 0;
        }
        if (S.echo && !S.interactive) {
            printf("dsh > %s\n", cmd);
        }
        for (t = strtok_r(cmd, " \t\r\n", &s2); t; t = strtok_r(NULL, " \t\r\n", &s2)) {
            if (argc == DSH_MAX_TOKENS) {
                cur_cmd = argv[0];
                fail("too many arguments (at most %d)", DSH_MAX_TOKENS - 1);
                cur_cmd = "dsh";
                S.failed = 1;
                argc = -1;
                break;
            }
            argv[argc++] = t;
        }
        if (argc < 0) {
            continue;
        }
        argv[argc] = NULL;
        if (run_tokens(argc, argv)) {
            return 1;
        }
    }
    return 0;
}

static void run_stream(FILE *in)
{
    char line[DSH_LINE_MAX];

    for (;;) {
        size_t len;

        if (S.interactive) {
            printf("dsh > ");
            fflush(stdout);
        }
        if (!fgets(line, sizeof(line), in)) {
            if (S.interactive) {
                printf("\n");
            }
            return;
        }
        len = strlen(line);
        if (len == sizeof(line) - 1 && line[len - 1] != '\n') {
            int ch;
            while ((ch = fgetc(in)) != EOF && ch != '\n') {
            }
            fail("line longer than %d characters ignored", DSH_LINE_MAX - 2);
            S.failed = 1;
            continue;
        }
        if (run_line(line)) {
            return;
        }
    }
}

static void usage(FILE *to)
{
    fprintf(to,
        "usage: dsh [options] [total procs] [own PID] [own WID]\n"
        "  DIMMnet-2 Shell " DSH_VERSION " (thesis App. C) for the QEMU DIMMnet-2 board.\n"
        "  -b PHYS_BASE  window base for /dev/mem (default: $DN2_BASE, else the\n"
        "                " DN2_ACPI_HID " entry of /proc/iomem, else 0x%x)\n"
        "  -d DEVICE     use the driver (e.g. " DN2_DEV_PREFIX "0) instead of /dev/mem; the\n"
        "                driver assigns the WID; no System Register\n"
        "  -c \"CMDS\"     run these commands (';'-separated) and exit\n"
        "  -o            label dumps with window offsets instead of virtual addresses\n"
        "  -q            do not echo commands read from a file or -c\n"
        "  -t MS         timeout of the wait commands (default 2000)\n"
        "  -h            this help\n"
        "Commands come from -c, else from stdin (a prompt when it is a terminal).\n"
        "Exit status: 0; 1 when a command failed (not interactive); 2 on a setup error.\n",
        DN2_DEFAULT_BASE0);
}

int main(int argc, char **argv)
{
    const char *cmds = NULL;
    uint64_t v;
    int opt, r, wid_given = 0;

    setvbuf(stdout, NULL, _IOLBF, 0);
    S.base_from = "-b";
    S.base = 0;
    while ((opt = getopt(argc, argv, "b:d:c:oqt:h")) != -1) {
        switch (opt) {
        case 'b':
            if (parse_num(optarg, UINT64_MAX, &S.base, "-b PHYS_BASE")) {
                return 2;
            }
            if (!S.base || (S.base & (DN2_BASE_ALIGN - 1))) {
                fail("-b 0x%" PRIx64 ": the window base is a non-zero multiple of 0x%x",
                     S.base, DN2_BASE_ALIGN);
                return 2;
            }
            break;
        case 'd':
            S.drv = 1;
            S.dev = optarg;
            break;
        case 'c':
            cmds = optarg;
            break;
        case 'o':
            S.offsets = 1;
            break;
        case 'q':
            S.echo = 0;
            break;
        case 't':
            if (parse_num(optarg, 3600000, &v, "-t MS")) {
                return 2;
            }
            S.timeout_ms = (long)v;
            break;
        case 'h':
            usage(stdout);
            return 0;
        default:
            usage(stderr);
            return 2;
        }
    }
    if (argc - optind > 3) {
        usage(stderr);
        return 2;
    }
    if (optind < argc) {
        if (parse_num(argv[optind], 1024, &v, "[total procs]")) {
            return 2;
        }
        S.nprocs = (long)v;
    }
    if (optind + 1 < argc) {
        if (parse_num(argv[optind + 1], 1 << 20, &v, "[own PID]")) {
            return 2;
        }
        S.pid = (long)v;
    }
    if (optind + 2 < argc) {
        if (parse_num(argv[optind + 2], DN2_NUM_WID - 1, &v, "[own WID]")) {
            return 2;
        }
        S.wid = (int)v;
        wid_given = 1;
    }

    if (S.drv) {
        r = dn2_open(&S.d, S.dev);
        if (r) {
            fprintf(stderr, "dsh: cannot open %s: %s\n", S.dev, dn2_strerror(r));
            return 2;
        }
        if (wid_given && dn2_wid(S.d) != S.wid) {
            fprintf(stderr, "dsh: note: the driver gave WID %d (not %d)\n", dn2_wid(S.d), S.wid);
        }
        S.wid = dn2_wid(S.d);
        S.ctl_fd = open(S.dev, O_RDONLY | O_CLOEXEC);
    } else {
        if (!S.base) {
            S.base = dn2_find_base(&S.base_from);
        }
        r = dn2_open_mem(&S.d, S.base, S.wid);
        if (r) {
            fprintf(stderr, "dsh: cannot map the window at 0x%" PRIx64 " through /dev/mem: %s%s\n",
                    S.base, dn2_strerror(r), r == -EACCES || r == -EPERM ? " (dsh needs root)" : "");
            return 2;
        }
    }
    /* The status ring's head: known when the ring is empty (head = tail). */
    S.st_head = (uint32_t)(dn2_ur_read(S.d, DN2_UR_STATUS_ADDR) & DN2_STATUS_ADDR_MASK);
    S.st_known = !!(dn2_ctl_status(S.d) & DN2_CS_STATUS_EMPTY);

    if (cmds) {
        char *copy = strdup(cmds);
        if (!copy) {
            return 2;
        }
        run_line(copy);
        free(copy);
    } else {
        S.interactive = isatty(0);
        if (S.interactive) {
            c_version(0, NULL);
        }
        run_stream(stdin);
    }
    dn2_close(S.d);
    if (S.ctl_fd >= 0) {
        close(S.ctl_fd);
    }
    return S.failed && !S.interactive ? 1 : 0;
}
