#!/usr/bin/env bash
# scripts/rows-summary.awk (bench-cluster.sh's "rows:" line) on fixed row
# lines: agreement counted over the predicted rows only, signs and
# percentages read as numbers.  No guest; instant.  TAP.
set -uo pipefail
top=$(cd "$(dirname "$(realpath "$0")")/../.." && pwd)
. "$top/tests/tap/tap-lib.sh"
tap_plan 3
rows='row a measured 1 thesis 1 us error +3.6%
row b measured 1 thesis 1 MB/s error +11.2%
row c measured 1 thesis 1 us error -14.1%
row d measured 1 thesis 1 us error -7.0%
row rvs-uni measured 1 thesis 1 MB/s error -0.5% calibrates sdimm-read-mbps
row rvs-bi measured 1 thesis 1 MB/s error -0.1% calibrates sdimm-write-mbps
shape x holds: 1 > 0'
got=$(printf '%s\n' "$rows" | awk -f "$top/scripts/rows-summary.awk")
want='rows: 4 predicted, 2 within 10 %, 1 within 5 %; 2 calibration rows (not counted)'
if [ "$got" = "$want" ]; then ok "4 predicted rows, +11.2 % outside 10 %, 2 calibration rows apart"; else not_ok "got '$got', want '$want'"; fi
got=$(printf 'row a measured 1 thesis 1 us error +10.0%%\n' | awk -f "$top/scripts/rows-summary.awk")
case $got in "rows: 1 predicted, 1 within 10 %, 0 within 5 %;"*) ok "+10.0 % is within 10 %" ;; *) not_ok "+10.0 %: '$got'" ;; esac
got=$(printf 'row a measured 1 thesis 1 us error +4.0%% calibrates x\n' | awk -f "$top/scripts/rows-summary.awk")
case $got in "rows: 0 predicted, 0 within 10 %, 0 within 5 %; 1 calibration rows"*) ok "a calibration row is not counted" ;; *) not_ok "calibration row: '$got'" ;; esac
tap_done
