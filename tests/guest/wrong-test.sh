#!/usr/bin/env bash
# TAP: the deliberately wrong guest program (tests/guest/dn2-wrongtest.c)
# on a forgiving board and on a strict one (strict=on).  Forgiving: every
# check of the program passes and the board reports nothing (the bugs go
# unnoticed).  Strict: the board reports each broken rule by name in QEMU's
# guest-error log.  Usage: wrong-test.sh [--virtual-time] PROGRAM
#
# --virtual-time: the guest under -icount with the board on the virtual
# clock (run-guest.sh --virtual-time): the program and the board's paced
# Window Controller take the same instructions and virtual nanoseconds in
# every run, so the strict board runs with its default step delay (1 µs)
# and the result does not depend on how the host schedules the vCPU.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../../scripts/lib.sh"
. "$here/../tap/tap-lib.sh"

vt=
[ "${1-}" = --virtual-time ] && { vt=1; shift; }
case ${1-} in
    -h|--help) dn2_usage; exit 0 ;;
    '') usage_error "a PROGRAM is needed" ;;
    -*) usage_error "unknown argument: $1" ;;
esac
[ $# -eq 1 ] || usage_error "one PROGRAM only"
prog=$1
name=$(basename "$prog")
tag=$name${vt:+-vt}
rules=(ww-reused small-element misaligned no-lid)
tap_plan $((2 + ${#rules[@]}))

extra=$(mktemp -d)
trap 'rm -rf "$extra"' EXIT
mkdir -p "$extra/bin" "$DN2_TOP/build/guest/logs"
cp "$prog" "$extra/bin/$name"

# run MODE: the guest console log and QEMU's guest-error log of MODE
run() {
    local mode=$1 log=$DN2_TOP/build/guest/logs/$tag-$1.log
    local args=(-global dimmnet2.loopback=on -d guest_errors -D "${log%.log}.qemu.log")
    # A long step delay (50 ms of virtual time) so that the program's next
    # store always lands while its request is still pending, however the
    # vCPU is scheduled (with the default 1 us the request may already
    # have run, and the reuse would go unseen, as on a lucky real board).
    [ "$mode" = strict ] && args+=(-global dimmnet2.strict=on)
    [ "$mode" = strict ] && [ -z "$vt" ] && args+=(-global dimmnet2.strict-delay-ns=50000000)
    rm -f "${log%.log}.qemu.log"
    DN2_GUEST_EXTRA=$extra bash "$DN2_TOP/scripts/run-guest.sh" -q ${vt:+--virtual-time} -r "$name" \
        -t "${DN2_BOOT_TIMEOUT:-200}" -l "$log" -- "${args[@]}" > /dev/null 2>&1
}

run forgiving
log=$DN2_TOP/build/guest/logs/$tag-forgiving.log
tap=$(sed -n '/DN2-GUEST-BEGIN/,/DN2-GUEST-END/p' "$log" 2>/dev/null | tr -d '\r' |
      grep -E '^(ok|not ok) ')
if [ -n "$tap" ] && ! grep -q '^not ok' <<< "$tap"; then
    ok "forgiving board: every check of the wrong program passes ($(grep -c '^ok' <<< "$tap") of them)"
else
    not_ok "forgiving board: the wrong program's checks (console: $log)"
    printf '%s\n' "$tap" | diag
fi
if grep -q 'strict:' "${log%.log}.qemu.log" 2>/dev/null; then
    not_ok "forgiving board: reports nothing"
else
    ok "forgiving board: reports nothing"
fi

run strict
qlog=$DN2_TOP/build/guest/logs/$tag-strict.qemu.log
for rule in "${rules[@]}"; do
    if grep -q "strict: $rule " "$qlog" 2>/dev/null; then
        ok "strict board reports $rule: $(grep -m1 "strict: $rule " "$qlog" | sed 's/.*strict: //' | cut -c1-120)"
    else
        not_ok "strict board reports $rule (log: $qlog)"
    fi
done
tap_done
