#!/usr/bin/env bash
# TAP: runs one static test program inside a Linux guest and forwards its
# TAP.  Usage: prog-test.sh [--strict] PROGRAM [QEMU args...]; the program is
# copied into the guest's /bin and run as its command.  The guest's board
# options come from the QEMU args (e.g. -global dimmnet2.loopback=on).
# --strict: the boards run with strict=on, and any violation of the
# programming protocol they report (QEMU's guest-error log) fails the test:
# the program and the library under it follow the protocol.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../../scripts/lib.sh"
. "$here/../tap/tap-lib.sh"

strict=0
case ${1-} in
    -h|--help) dn2_usage; exit 0 ;;
    --strict) strict=1; shift ;;
esac
case ${1-} in
    '') usage_error "a PROGRAM is needed" ;;
    -*) usage_error "unknown argument: $1" ;;
esac
prog=$1
shift
name=$(basename "$prog")
if [ ! -x "$prog" ]; then
    tap_plan 1
    not_ok "$prog not built (run: meson compile -C build)"
    tap_done
fi
extra=$(mktemp -d)
trap 'rm -rf "$extra"' EXIT
mkdir -p "$extra/bin"
cp "$prog" "$extra/bin/$name"

suffix=
[ "$strict" = 1 ] && suffix=-strict
log=$DN2_TOP/build/guest/logs/$name$suffix.log
qlog=${log%.log}.qemu.log
mkdir -p "$(dirname "$log")"
rm -f "$qlog"
if [ "$strict" = 1 ]; then
    set -- "$@" -global dimmnet2.strict=on -d guest_errors -D "$qlog"
fi
out=$(DN2_GUEST_EXTRA=$extra bash "$DN2_TOP/scripts/run-guest.sh" -q -r "$name" \
      -t "${DN2_BOOT_TIMEOUT:-200}" -l "$log" -- "$@" 2>&1 >/dev/null; true)
tap=$(sed -n '/DN2-GUEST-BEGIN/,/DN2-GUEST-END/p' "$log" 2>/dev/null |
      grep -E '^(1\.\.|ok |not ok |# )' | tr -d '\r')
if [ -z "$tap" ]; then
    tap_plan 1
    not_ok "$name printed no TAP in the guest (console log: $log)"
    printf '%s\n' "$out" | tail -20 | diag
    tap_done
fi
printf '%s\n' "$tap"
if grep -q '^not ok' <<< "$tap" || ! grep -q 'DN2-GUEST-END rc=0' "$log"; then
    exit 1
fi
if [ "$strict" = 1 ] && grep -q 'strict:' "$qlog" 2>/dev/null; then
    diag "the strict board reported violations of the programming protocol ($qlog):"
    grep 'strict:' "$qlog" | sort | uniq -c | head -20 | diag
    exit 1
fi
exit 0
