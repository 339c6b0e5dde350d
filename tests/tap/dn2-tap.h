/* SPDX-License-Identifier: MIT */
/*
 * TAP output for every C test program and tool of the project (the unit,
 * ABI and provider tests, the guest test programs, tests/cluster/dn2-e2e.c,
 * tools/soak, the dissector's ABI check), after the kernel's kselftest.h:
 * the plan, numbered points with a description, diagnostics, skips under
 * the one skip rule, a table runner, and the exit code.  Static functions
 * in a header: a program includes it ("../tap/dn2-tap.h" from a directory
 * of tests/, "../../tests/tap/dn2-tap.h" from one of tools/) and links
 * nothing.  The shell tests' counterpart is tests/tap/tap-lib.sh; both read
 * CI the same way.
 *
 *   tap_plan(n)                 "1..n" (first, or last as tap_plan(tap_count()))
 *   tap_result(ok, fmt, ...)    "ok N - DESC" or "not ok N - DESC"; returns ok
 *   tap_skip(why, fmt, ...)     "ok N - DESC # SKIP WHY"
 *   tap_ci()                    true when this is a CI run: the environment
 *                               variable CI is set and not empty, 0, false
 *                               or no (any case)
 *   tap_skip_missing(tool, fmt, ...)  the skip rule for a tool that is not
 *                               there: under tap_ci() a "not ok" (a CI
 *                               machine has everything scripts/setup.sh
 *                               installs), else a skip naming the tool and
 *                               scripts/setup.sh
 *   tap_diag(fmt, ...)          "# TEXT"
 *   tap_count(), tap_failures() points so far, "not ok"s among them
 *   tap_exit_code()             0 when every point passed, else 1
 *   tap_share()                 keep the counters in shared memory, so that
 *                               points printed by fork()ed children count
 *   tap_run_cases(cases, n, only)  the table runner: the plan "1..n", then
 *                               one point per {name, fn} case, "ok" when fn
 *                               returned true; a case not containing the
 *                               string only (when not NULL) is a skip "not
 *                               selected"; returns tap_exit_code()
 *   TAP_REQUIRE(cond, fmt, ...) in a case's fn: when cond is false, note
 *                               where on stderr, keep the reason (printed
 *                               after the case's name) and return false
 *   tap_case_why(fmt, ...)      keep a reason for the failing case without
 *                               returning
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
#include <string.h>
#include <strings.h>
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

/*
 * The one reading of CI, shared with tap-lib.sh's tap_ci: set and not empty,
 * 0, false or no (in any case).  CI systems set CI=true; CI=0 turns it off.
 */
static inline __attribute__((unused)) bool tap_ci(void)
{
    const char *ci = getenv("CI");

    return ci && *ci && strcmp(ci, "0") != 0 && strcasecmp(ci, "false") != 0 &&
           strcasecmp(ci, "no") != 0;
}

static inline __attribute__((unused, format(printf, 2, 3))) void
tap_skip_missing(const char *tool, const char *fmt, ...)
{
    char why[512];
    va_list ap;

    va_start(ap, fmt);
    if (tap_ci()) {
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

/* ------------------------------------------------------- the table runner */
struct tap_case {
    const char *name;
    bool (*fn)(void);
};

static char dn2_tap_why[512];   /* the failing case's reason */

static inline __attribute__((unused, format(printf, 1, 2))) void
tap_case_why(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(dn2_tap_why, sizeof(dn2_tap_why), fmt, ap);
    va_end(ap);
}

#define TAP_REQUIRE(cond, ...) do { \
        if (!(cond)) { \
            tap_case_why(__VA_ARGS__); \
            fprintf(stderr, "# %s:%d: %s: %s\n", __FILE__, __LINE__, #cond, dn2_tap_why); \
            return false; \
        } \
    } while (0)

static inline __attribute__((unused)) int
tap_run_cases(const struct tap_case *cases, size_t n, const char *only)
{
    size_t i;

    tap_plan((int)n);
    for (i = 0; i < n; i++) {
        bool ok;

        if (only && !strstr(cases[i].name, only)) {
            tap_skip("not selected", "%s", cases[i].name);
            continue;
        }
        dn2_tap_why[0] = 0;
        ok = cases[i].fn();
        tap_result(ok, "%s%s%s", cases[i].name, ok ? "" : ": ", ok ? "" : dn2_tap_why);
    }
    return tap_exit_code();
}

#define TAP_NCASES(table) (sizeof(table) / sizeof((table)[0]))


#endif
