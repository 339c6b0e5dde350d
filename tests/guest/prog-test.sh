#!/usr/bin/env bash
# TAP: runs one static test program inside a Linux guest and forwards its
# TAP.  Usage: prog-test.sh PROGRAM [QEMU args...]; the program is copied
# into the guest's /bin and run as its command.  The guest's board options
# come from the QEMU args (e.g. -global dimmnet2.loopback=on).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../../scripts/lib.sh"

prog=${1:?usage: prog-test.sh PROGRAM [QEMU args...]}
shift
name=$(basename "$prog")
if [ ! -x "$prog" ]; then
    echo "1..1"
    echo "not ok 1 - $prog not built (run: meson compile -C build)"
    exit 1
fi
extra=$(mktemp -d)
trap 'rm -rf "$extra"' EXIT
mkdir -p "$extra/bin"
cp "$prog" "$extra/bin/$name"

log=$DN2_TOP/build/guest/logs/$name.log
mkdir -p "$(dirname "$log")"
out=$(DN2_GUEST_EXTRA=$extra bash "$DN2_TOP/scripts/run-guest.sh" -q -r "$name" \
      -t "${DN2_BOOT_TIMEOUT:-200}" -l "$log" -- "$@" 2>&1 >/dev/null; true)
tap=$(sed -n '/DN2-GUEST-BEGIN/,/DN2-GUEST-END/p' "$log" 2>/dev/null |
      grep -E '^(1\.\.|ok |not ok |# )' | tr -d '\r')
if [ -z "$tap" ]; then
    echo "1..1"
    echo "not ok 1 - $name printed no TAP in the guest (console log: $log)"
    printf '%s\n' "$out" | tail -20 | sed 's/^/# /'
    exit 1
fi
printf '%s\n' "$tap"
if grep -q '^not ok' <<< "$tap" || ! grep -q 'DN2-GUEST-END rc=0' "$log"; then
    exit 1
fi
exit 0
