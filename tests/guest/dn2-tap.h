/* SPDX-License-Identifier: MIT */
/*
 * TAP output for the project's C test programs and tools (the guest test
 * programs, tests/cluster/dn2-e2e.c, tools/soak/dn2-soak.c), after the
 * kernel's kselftest.h: the plan, numbered points with a description,
 * diagnostics, skips under the one skip rule, and the exit code.  Static
 * functions in a header: a program includes it and links nothing.  The
 * shell tests' counterpart is tests/guest/tap-lib.sh.
 *
 *   tap_plan(n)                 "1..n" (first, or last as tap_plan(tap_count()))
 *   tap_result(ok, fmt, ...)    "ok N - DESC" or "not ok N - DESC"; returns ok
 *   tap_skip(why, fmt, ...)     "ok N - DESC # SKIP WHY"
 *   tap_skip_missing(tool, fmt, ...)  the skip rule for a tool that is not
 *                               there: with the environment variable CI set
 *                               a "not ok" (a CI machine has everything
 *                               scripts/setup.sh installs), else a skip
 *                               naming the tool and scripts/setup.sh
 *   tap_diag(fmt, ...)          "# TEXT"
 *   tap_count(), tap_failures() points so far, "not ok"s among them
 *   tap_exit_code()             0 when every point passed, else 1
 *   tap_share()                 keep the counters in shared memory, so that
 *                               points printed by fork()ed children count
 *
 * Multi-rank programs set `me` to their rank: every rank counts the same
 * points; rank 0 prints them, the others report their failures on stderr
 * (which the launchers keep in the node's log).  CHECK(cond, fmt, ...) is
 * tap_result for them.
 */
#ifndef DN2_TAP_H
#define DN2_TAP_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>

struct dn2_tap {
    int num;            /* points printed */
    int fail;           /* "not ok" among them */
};

static struct dn2_tap dn2_tap_here;
static struct dn2_tap *dn2_tap = &dn2_tap_here;
static int me;          /* this process's rank: only rank 0 prints */

static inline __attribute__((unused)) void tap_plan(int n)
{
    if (me == 0) {
        printf("1..%d\n", n);
        fflush(stdout);
    }
}

static inline __attribute__((format(printf, 3, 0))) void
dn2_tap_vpoint(bool ok, const char *directive, const char *fmt, va_list ap)
{
    int n = ++dn2_tap->num;

    if (!ok) {
        dn2_tap->fail++;
    }
    if (me == 0) {
        printf("%s %d - ", ok ? "ok" : "not ok", n);
        vprintf(fmt, ap);
        if (directive) {
            printf(" %s", directive);
        }
        printf("\n");
        fflush(stdout);
    } else if (!ok) {
        fprintf(stderr, "# rank %d: check %d failed: ", me, n);
        vfprintf(stderr, fmt, ap);
        fprintf(stderr, "\n");
    }
}

static inline __attribute__((unused, format(printf, 2, 3))) bool
tap_result(bool ok, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    dn2_tap_vpoint(ok, NULL, fmt, ap);
    va_end(ap);
    return ok;
}

static inline __attribute__((unused, format(printf, 1, 2))) void
tap_diag(const char *fmt, ...)
{
    va_list ap;

    if (me != 0) {
        return;
    }
    printf("# ");
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
    fflush(stdout);
}

static inline __attribute__((unused, format(printf, 2, 3))) void
tap_skip(const char *why, const char *fmt, ...)
{
    char directive[512];
    va_list ap;

    snprintf(directive, sizeof(directive), "# SKIP %s", why);
    va_start(ap, fmt);
    dn2_tap_vpoint(true, directive, fmt, ap);
    va_end(ap);
}

static inline __attribute__((unused, format(printf, 2, 3))) void
tap_skip_missing(const char *tool, const char *fmt, ...)
{
    const char *ci = getenv("CI");
    char why[512];
    va_list ap;

    va_start(ap, fmt);
    if (ci && *ci) {
        snprintf(why, sizeof(why), "(skipped: %s not found: run scripts/setup.sh; "
                 "CI is set, so a skip is a failure)", tool);
        dn2_tap_vpoint(false, why, fmt, ap);
    } else {
        snprintf(why, sizeof(why), "# SKIP %s not found: run scripts/setup.sh", tool);
        dn2_tap_vpoint(true, why, fmt, ap);
    }
    va_end(ap);
}

static inline __attribute__((unused)) int tap_count(void)
{
    return dn2_tap->num;
}

static inline __attribute__((unused)) int tap_failures(void)
{
    return dn2_tap->fail;
}

static inline __attribute__((unused)) int tap_exit_code(void)
{
    return dn2_tap->fail ? 1 : 0;
}

/* 0, or -1 when the shared mapping fails (the counters stay private). */
static inline __attribute__((unused)) int tap_share(void)
{
    struct dn2_tap *t = mmap(NULL, sizeof(*t), PROT_READ | PROT_WRITE,
                             MAP_SHARED | MAP_ANONYMOUS, -1, 0);

    if (t == MAP_FAILED) {
        return -1;
    }
    *t = *dn2_tap;
    dn2_tap = t;
    return 0;
}

#define CHECK(cond, ...) tap_result(!!(cond), __VA_ARGS__)


#endif
