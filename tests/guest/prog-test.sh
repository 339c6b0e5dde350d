#!/usr/bin/env bash
# TAP: libdimmnet2 end to end in a Linux guest whose board is cabled to
# itself (loopback=on): every primitive family between WID 0 and WID 1.
# $DN2_LIBTEST is the static test program (built by meson).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../../scripts/lib.sh"

prog=${DN2_LIBTEST:-$DN2_TOP/build/tests/guest/dn2-libtest}
if [ ! -x "$prog" ]; then
    echo "1..1"
    echo "not ok 1 - $prog not built (run: meson compile -C build)"
    exit 1
fi
extra=$(mktemp -d)
trap 'rm -rf "$extra"' EXIT
mkdir -p "$extra/bin"
cp "$prog" "$extra/bin/dn2-libtest"

out=$(DN2_GUEST_EXTRA=$extra bash "$DN2_TOP/scripts/run-guest.sh" -q -r dn2-libtest \
      -t "${DN2_BOOT_TIMEOUT:-150}" -l "$DN2_TOP/build/guest/logs/lib-test.log" \
      -- -global dimmnet2.loopback=on 2>&1 >/dev/null; true)
# run-guest.sh -q prints nothing; run again without -q would boot twice, so
# read the guest's TAP from the console log between the sentinels instead.
log=$DN2_TOP/build/guest/logs/lib-test.log
tap=$(sed -n '/DN2-GUEST-BEGIN/,/DN2-GUEST-END/p' "$log" | grep -E '^(1\.\.|ok |not ok |# )' | tr -d '\r')
if [ -z "$tap" ]; then
    echo "1..1"
    echo "not ok 1 - the guest printed no TAP (console log: $log)"
    printf '%s\n' "$out" | tail -20 | sed 's/^/# /'
    exit 1
fi
printf '%s\n' "$tap"
grep -q '^not ok' <<< "$tap" && exit 1
exit 0
