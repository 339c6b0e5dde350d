#!/usr/bin/env bash
# Guest boot test (TAP): boots one Linux guest with two DIMMnet-2 boards and
# runs tests/guest/dn2-probe for board 0 and board 1 inside it.  The guest's
# two TAP streams are forwarded as one, renumbered under a single plan,
# after two checks of our own (the guest finished; each probe ran its plan).
#
#   tests/guest/boot-test.sh            (meson: test 'guest-boot')
#
# Environment: QEMU (binary), DN2_BOOT_TIMEOUT (seconds, default 90),
# plus what scripts/run-guest.sh reads.  The console log is kept in
# build/guest/logs/boot-test.log.
set -uo pipefail
top=$(cd "$(dirname "$(realpath "$0")")/../.." && pwd)
. "$top/scripts/lib.sh"
. "$top/tests/tap/tap-lib.sh"
dn2_no_options "$@"
timeout_s=${DN2_BOOT_TIMEOUT:-90}
boards=2
log=$top/build/guest/logs/boot-test.log
mkdir -p "$(dirname "$log")"

# Each probe's TAP is framed so that the streams can be told apart.
# shellcheck disable=SC2016  # expanded by the guest shell
run='for b in 0 1; do echo DN2-PROBE-BEGIN $b; dn2-probe $b; echo DN2-PROBE-END $b rc=$?; done'

start=$SECONDS
out=$("$top/scripts/run-guest.sh" --boards "$boards" -t "$timeout_s" -l "$log" -r "$run" 2> "$log.run-guest")
rc=$?
elapsed=$((SECONDS - start))

tap_defer
# 1. the guest booted, ran the command and powered off in time
case $rc in
    0|1) ok "guest booted with $boards boards and finished in ${elapsed} s" ;;
    124) not_ok "guest timed out after ${timeout_s} s" ;;
    3) not_ok "guest died before finishing (kernel panic or QEMU error)" ;;
    *) not_ok "guest could not be started (run-guest.sh status $rc)" ;;
esac
if [ "$rc" -ge 2 ] || [ "$rc" -lt 0 ]; then
    diag < "$log.run-guest"
fi

# 2..: the probes' results, renumbered
for b in $(seq 0 $((boards - 1))); do
    section=$(printf '%s\n' "$out" | sed -n "/^DN2-PROBE-BEGIN $b\$/,/^DN2-PROBE-END $b rc=/p")
    plan=$(printf '%s\n' "$section" | sed -n -E 's/^1\.\.([0-9]+).*/\1/p' | head -1)
    tap_forward "$section"
    count=$tap_count
    probe_rc=$(printf '%s\n' "$section" | sed -n -E "s/^DN2-PROBE-END $b rc=([0-9]+)\$/\1/p")
    if [ -n "$plan" ] && [ "$count" -eq "$plan" ]; then
        ok "board $b: probe ran its plan of $plan checks (exit status $probe_rc)"
    elif [ -z "$plan" ]; then
        not_ok "board $b: probe did not run (no TAP plan in the guest output)"
    else
        not_ok "board $b: probe planned $plan checks but reported $count (exit status ${probe_rc:-none}: crashed?)"
    fi
done

# Also say where the log is, for a human reading meson's testlog.
diag "console log: $log"
tap_done
