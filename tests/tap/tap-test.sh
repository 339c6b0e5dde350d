#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# TAP: the harness itself, both halves: the one reading of CI (tap_ci in
# tap-lib.sh and in dn2-tap.h agree on every value), the skip rule under
# it, and the table runners (a failing case is one "not ok" with its
# reason; the cases after it still run; a selection skips the others).
#   tap-test.sh TAP_SELFTEST      (meson: test 'tap', the C half built)
set -u
if [ $# -ne 1 ] || [ "$1" = --help ]; then
    echo "usage: tap-test.sh TAP_SELFTEST" >&2
    [ "${1:-}" = --help ] && exit 0
    exit 2
fi
C=$1
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tap-lib.sh
. "$here/tap-lib.sh"

# Each value of CI with the reading both halves must give it.
ci_cases=("unset off" "'' off" "0 off" "false off" "FALSE off" "no off" "No off"
          "1 on" "true on" "yes on" "TRUE on" "on on")
for row in "${ci_cases[@]}"; do
    val=${row% *} want=${row##* }
    if [ "$val" = unset ]; then
        sh_got=$(unset CI; tap_ci && echo on || echo off)
        c_got=$(unset CI; "$C" ci && echo on || echo off)
    else
        [ "$val" = "''" ] && val=
        sh_got=$(CI=$val; export CI; tap_ci && echo on || echo off)
        c_got=$(CI=$val "$C" ci && echo on || echo off)
    fi
    result "$([ "$sh_got" = "$want" ] && [ "$c_got" = "$want" ] && echo 0 || echo 1)" \
        "CI=${row% *}: CI is $want in tap-lib.sh ($sh_got) and dn2-tap.h ($c_got)"
done

# The skip rule under each reading: a skip, or a failure in CI.
out=$(CI=0 bash -c ". '$here/tap-lib.sh'; skip 'd' 'w'; tap_done"); st=$?
result "$([ $st = 0 ] && [ "$out" = "$(printf 'ok 1 - d # SKIP w\n1..1')" ] && echo 0 || echo 1)" \
    "tap-lib.sh: with CI=0 a missing tool is a skip (exit $st)"
out=$(CI=true bash -c ". '$here/tap-lib.sh'; skip 'd' 'w'; tap_done"); st=$?
result "$([ $st = 1 ] && printf '%s\n' "$out" | grep -q '^not ok 1 - d (skipped: w; CI is set' && echo 0 || echo 1)" \
    "tap-lib.sh: with CI=true a missing tool fails (exit $st)"
out=$(CI=no "$C" missing); st=$?
result "$([ $st = 0 ] && printf '%s\n' "$out" | grep -q '^ok 1 - .* # SKIP no-such-tool not found' && echo 0 || echo 1)" \
    "dn2-tap.h: with CI=no a missing tool is a skip (exit $st)"
out=$(CI=1 "$C" missing); st=$?
result "$([ $st = 1 ] && printf '%s\n' "$out" | grep -q '^not ok 1 - ' && echo 0 || echo 1)" \
    "dn2-tap.h: with CI=1 a missing tool fails (exit $st)"

# The C table runner.
out=$("$C" table 2>/dev/null); st=$?
want=$(printf '%s\n' '1..3' 'ok 1 - a case that passes' \
    'not ok 2 - a case that fails: one and one are 2' 'ok 3 - a case after it')
result "$([ $st = 1 ] && [ "$out" = "$want" ] && echo 0 || echo 1)" \
    "tap_run_cases: one point per case, the failing one with its reason, the rest run (exit $st)"
[ "$out" = "$want" ] || printf '%s\n' "$out" | diag
out=$("$C" table after 2>/dev/null); st=$?
want=$(printf '%s\n' '1..3' 'ok 1 - a case that passes # SKIP not selected' \
    'ok 2 - a case that fails # SKIP not selected' 'ok 3 - a case after it')
result "$([ $st = 0 ] && [ "$out" = "$want" ] && echo 0 || echo 1)" \
    "tap_run_cases with a selection: the others are skips (exit $st)"

# The shell table runner.
out=$(bash -c ". '$here/tap-lib.sh'
t_yes() { true; }
t_no() { false; }
tap_table <<'T'
# a comment
t_yes  the first row passes

t_no   the second row fails
t_yes  the third still runs
T
tap_done"); st=$?
want=$(printf '%s\n' 'ok 1 - the first row passes' 'not ok 2 - the second row fails' \
    'ok 3 - the third still runs' '1..3')
result "$([ $st = 1 ] && [ "$out" = "$want" ] && echo 0 || echo 1)" \
    "tap_table: one point per row, comments and blank lines skipped (exit $st)"
[ "$out" = "$want" ] || printf '%s\n' "$out" | diag

# A failed point's line and its diagnostics on stderr too (meson prints
# only stderr for a failed TAP test), not those of a passed point.
err=$(bash -c ". '$here/tap-lib.sh'
ok 'fine'; diag 'said after a pass'
not_ok 'broken'; diag 'why it broke'; printf 'a\nb\n' | diag
ok 'fine again'; diag 'said after a pass'" 2>&1 >/dev/null)
want=$(printf '%s\n' 'not ok 2 - broken' '# why it broke' '# a' '# b')
result "$([ "$err" = "$want" ] && echo 0 || echo 1)" \
    "diag: after a not ok, the point and its diagnostics on stderr as well"
[ "$err" = "$want" ] || printf '%s\n' "$err" | diag
tap_done
