#!/usr/bin/env bash
# TAP: scripts/bench-mpi.sh prints its ratio column, the targets and the
# --cpu total's ratio only when both() finds the board and TCP among the
# networks; its both() is taken from the script and asked about each
# --nets (and --board-b) spelling.  ("board tcp", the default, once gave
# no ratios: a pattern " board "*" tcp " needs two spaces between them.)
#
#   tests/scripts/bench-mpi-both-test.sh        (meson: test 'bench-mpi-both')
set -uo pipefail
top=$(cd "$(dirname "$(realpath "$0")")/../.." && pwd)
. "$top/scripts/lib.sh"
. "$top/tests/tap/tap-lib.sh"
dn2_no_options "$@"

def=$(grep '^both() ' "$top/scripts/bench-mpi.sh")
tap_plan 7
check "bench-mpi.sh defines both() on one line" [ -n "$def" ]
eval "$def"
notboth() { ! both; }
for nets in "board tcp" "tcp board" "board boardb tcp"; do
    check "both() with nets '$nets': true" both
done
for nets in "tcp" "board" "board boardb"; do
    check "both() with nets '$nets': false" notboth
done
tap_done
