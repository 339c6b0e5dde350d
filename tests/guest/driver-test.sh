#!/usr/bin/env bash
# Guest driver test (TAP): builds the dimmnet2 kernel module against the
# guest kernel's headers and tests/guest/dn2-drvtest.c (static), boots a
# Linux guest with two DIMMnet-2 boards (board 0 cabled to itself at the
# default 0xFEC10000, which the firmware's MTRRs make uncachable; board 1
# without cable at 0x80000000, which they leave write-back) with both added
# to its initramfs, and runs
# "dn2-drvtest /dimmnet2.ko" in it as root.  The guest's TAP is forwarded,
# renumbered, after checks of our own (module built, test built, guest
# finished, the test ran its plan).
#
#   tests/guest/driver-test.sh            (meson: test 'guest-driver')
#
# Builds are cached: the module by linux-guest/driver/build.sh (in
# build/guest/driver), the test in build/guest/drvtest-root (what goes into
# the guest); each is rebuilt only when a source, a header, the kernel
# headers or the compiler change.
#
# Environment: QEMU (binary), DN2_DRIVER_TIMEOUT (guest seconds, default
# 240), DN2_KDIR (kernel build tree; default
# /usr/src/linux-headers-<version of the guest kernel>), plus what
# scripts/run-guest.sh reads.  The console log is kept in
# build/guest/logs/driver-test.log.
set -uo pipefail
top=$(cd "$(dirname "$(realpath "$0")")/../.." && pwd)
. "$top/scripts/lib.sh"
. "$top/tests/tap/tap-lib.sh"
dn2_no_options "$@"
timeout_s=${DN2_DRIVER_TIMEOUT:-240}
log=$top/build/guest/logs/driver-test.log
mkdir -p "$(dirname "$log")"
drv_src=$top/linux-guest/driver
root=$top/build/guest/drvtest-root
test_src=$top/tests/guest/dn2-drvtest.c
mkdir -p "$(dirname "$log")" "$root/bin"

tap_defer
finish() {
    diag "console log: $log"
    tap_done
}

# --------------------------------------------------------------- the module
# linux-guest/driver/build.sh: cached build against the guest kernel's
# headers (also exports build/guest/export/dimmnet2.ko).
ko=$(bash "$drv_src/build.sh" 2> "$log.kbuild")
brc=$?
case $brc in
    0) ok "dimmnet2.ko built against the guest kernel's headers without warnings ($(grep -c 'building dimmnet2.ko' "$log.kbuild" | sed 's/^0$/cached/; s/^1$/rebuilt/'))" ;;
    2) diag < "$log.kbuild"; not_ok "dimmnet2.ko built with warnings" ;;
    4) diag < "$log.kbuild"; skip "dimmnet2.ko built against the guest kernel's headers" \
           "$(tap_missing "the guest kernel's headers" "$(dn2_kernel_headers_pkg)")"; finish ;;
    *) diag < "$log.kbuild"; not_ok "dimmnet2.ko built (see build/guest/driver/build.log)"; finish ;;
esac
cp "$ko" "$root/dimmnet2.ko"

# ----------------------------------------------------------------- the test
cflags=(-static -O2 -Wall -Wextra -Werror -I "$top/include" -I "$top/linux-guest/lib")
thash=$( { cat "$test_src" "$top/include/dimmnet2/dn2_abi.h" "$top/include/dimmnet2/dn2_uapi.h" \
               "$top/linux-guest/lib/dn2-cpu.h" "$top/tests/guest/dn2-sysfs.h" \
               "$top/tests/tap/dn2-tap.h"
           gcc --version | head -1; echo "${cflags[*]}"; } | sha256sum | cut -c1-32)
if [ -x "$root/bin/dn2-drvtest" ] && [ "$(cat "$root/../.drvtest.stamp" 2>/dev/null)" = "$thash" ]; then
    :
elif gcc "${cflags[@]}" -o "$root/bin/dn2-drvtest" "$test_src" > "$log.cc" 2>&1; then
    strip "$root/bin/dn2-drvtest" 2>/dev/null || true
    echo "$thash" > "$root/../.drvtest.stamp"
else
    diag < "$log.cc"
    not_ok "dn2-drvtest built (gcc -static)"
    finish
fi
ok "dn2-drvtest built (static)"

# ---------------------------------------------------------------- the guest
start=$SECONDS
out=$(DN2_GUEST_EXTRA=$root "$top/scripts/run-guest.sh" --boards 0 -t "$timeout_s" -l "$log" \
          -r 'echo DN2-DRVTEST-BEGIN; dn2-drvtest /dimmnet2.ko; echo DN2-DRVTEST-END rc=$?' \
          -- -device dimmnet2,loopback=on -device dimmnet2,base=0x80000000 2> "$log.run-guest")
rc=$?
elapsed=$((SECONDS - start))
case $rc in
    0|1) ok "guest with two boards (board 0 loopback, board 1 at 0x80000000) booted and finished in ${elapsed} s" ;;
    124) not_ok "guest timed out after ${timeout_s} s" ;;
    3) not_ok "guest died before finishing (kernel panic or QEMU error)" ;;
    *) not_ok "guest could not be started (run-guest.sh status $rc)" ;;
esac
if [ "$rc" -ge 2 ]; then
    diag < "$log.run-guest"
fi

section=$(printf '%s\n' "$out" | sed -n '/^DN2-DRVTEST-BEGIN$/,/^DN2-DRVTEST-END rc=/p')
plan=$(printf '%s\n' "$section" | sed -n -E 's/^1\.\.([0-9]+).*/\1/p' | tail -1)
tap_forward "$section"
count=$tap_count
test_rc=$(printf '%s\n' "$section" | sed -n -E 's/^DN2-DRVTEST-END rc=([0-9]+)$/\1/p')
if [ -n "$plan" ] && [ "$count" -eq "$plan" ]; then
    ok "dn2-drvtest ran its plan of $plan checks (exit status $test_rc)"
elif [ -z "$plan" ]; then
    not_ok "dn2-drvtest did not finish (no TAP plan in the guest output; exit status ${test_rc:-none})"
else
    not_ok "dn2-drvtest planned $plan checks but reported $count (exit status ${test_rc:-none})"
fi
finish
