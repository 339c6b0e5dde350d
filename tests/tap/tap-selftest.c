/* SPDX-License-Identifier: MIT */
/*
 * The C half of the harness on its own (tests/tap/tap-test.sh runs it):
 *   tap-selftest ci       exit 0 when tap_ci() says this is a CI run, else 1
 *   tap-selftest missing  one tap_skip_missing point, as a test would print it
 *   tap-selftest table [ONLY]  the table runner over three cases, the second
 *                         of which fails with a reason
 */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "dn2-tap.h"

static bool c_pass(void)
{
    return true;
}

static bool c_fail(void)
{
    TAP_REQUIRE(1 + 1 == 3, "one and one are %d", 1 + 1);
    return true;
}

static bool c_later(void)
{
    return true;
}

static const struct tap_case cases[] = {
    { "a case that passes", c_pass },
    { "a case that fails", c_fail },
    { "a case after it", c_later },
};

int main(int argc, char **argv)
{
    if (argc >= 2 && !strcmp(argv[1], "ci")) {
        return tap_ci() ? 0 : 1;
    }
    if (argc >= 2 && !strcmp(argv[1], "missing")) {
        tap_plan(1);
        tap_skip_missing("no-such-tool", "a check that needs no-such-tool");
        return tap_exit_code();
    }
    if (argc >= 2 && !strcmp(argv[1], "table")) {
        return tap_run_cases(cases, TAP_NCASES(cases), argc > 2 ? argv[2] : NULL);
    }
    fprintf(stderr, "usage: tap-selftest ci | missing | table [ONLY]\n");
    return 2;
}
