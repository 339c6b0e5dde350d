#!/usr/bin/env bash
# Soak / fuzz run of the DIMMnet-2 boards (docs/reliability.md): random guest
# MMIO on boards linked by a switch and in loopback, hostile datagrams at the
# boards' and the switch's UDP ports, and RVS across 4 boards through a faulty
# switch with a switch restart and a guest system_reset in the middle.  Every
# phase checks that the boards still work; TAP on stdout, a summary at the end.
#
#   bash scripts/soak.sh                # the full run: 10^6 MMIO operations,
#                                       # 10^6 datagrams, 1 GiB of RVS (minutes)
#   bash scripts/soak.sh --quick        # scaled down for CI (meson test --suite soak)
#   bash scripts/soak.sh --seed 1234    # reproduce a run (its seed is printed)
#
# Options: --quick, --seed S, --phases mmio,hostile,rvs, --keep (keep the
# temporary directory), --verbose; anything else goes to the tool
# (tools/soak/dn2-soak.c: --mmio-ops N, --datagrams N, --rvs-mib N,
# --reset-board 0..3).
#
# No guest OS: the tool starts QEMUs with -accel qtest and drives the boards
# over the qtest protocol, as scripts/bench.sh does.  The tool is built by
# meson (build/tools/dn2-soak); when that is missing it is built in
# build-soak/, never in someone else's build directory.  Exit status 0
# when every property held; 1 when one did not (the TAP lines say which, the
# "#" lines above them why); 2 on a usage or setup error.  Bounded in time:
# the tool times every wait; this script adds an overall limit.
#
# Environment: QEMU (qemu-system-x86_64), DN2_SWITCH (dn2-switch), DN2_SOAK
# (the tool), DN2_FIRMWARE_DIR, DN2_SOAK_LIMIT (overall seconds; default
# 500 quick, 1800 full).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
cd "$DN2_TOP"

quick=
keep=
args=()
while [ $# -gt 0 ]; do
    case $1 in
        --quick) quick=1; args+=(--quick); shift ;;
        --keep) keep=1; args+=(--keep); shift ;;
        -h|--help) sed -n '2,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) args+=("$1"); shift ;;
    esac
done

# QEMU: the device engineer rebuilds it in place; wait (bounded) for a binary
# that exists and has not changed for a few seconds.
qemu=$(dn2_find_qemu 2>/dev/null) || qemu=${QEMU:-$DN2_TOP/build/qemu/qemu-$QEMU_VERSION/build/qemu-system-x86_64}
for _ in $(seq 1 60); do
    if [ -x "$qemu" ] && [ $(( $(date +%s) - $(stat -c %Y "$qemu") )) -ge 3 ]; then
        break
    fi
    log "waiting for $qemu (being rebuilt?)"
    sleep 2
done
[ -x "$qemu" ] || die "no QEMU at '$qemu' (set QEMU=, or build: scripts/build-qemu.sh)"

# The switch and the tool from the meson build; missing, from our own.
own_build() { # own_build TARGET: builds it in build-soak/, prints its path
    log "no $1 in build/: building it in build-soak/"
    [ -f build-soak/build.ninja ] || meson setup build-soak >/dev/null
    meson compile -C build-soak "$1" >/dev/null || die "cannot build $1"
    echo "$DN2_TOP/build-soak/$1"
}
switch=${DN2_SWITCH:-$DN2_TOP/build/fabric/dn2-switch}
[ -x "$switch" ] || switch=$(own_build fabric/dn2-switch) || exit 1
tool=${DN2_SOAK:-$DN2_TOP/build/tools/dn2-soak}
[ -x "$tool" ] || tool=$(own_build tools/dn2-soak) || exit 1

fw=${DN2_FIRMWARE_DIR:-$(bash scripts/build-qemu.sh --print-env 2>/dev/null | sed -n 's/^DN2_FIRMWARE_DIR=//p')}
fw=${fw:-$DN2_CACHE/firmware}
[ -f "$fw/bios-256k.bin" ] || die "no bios-256k.bin in '$fw' (run scripts/setup.sh)"

limit=${DN2_SOAK_LIMIT:-$([ -n "$quick" ] && echo 500 || echo 1800)}
# The tool's temporary directory (SO-DIMM files, logs, sockets) goes in one
# of ours, removed on exit whatever happened to the tool (unless --keep).
base=/dev/shm
[ -d "$base" ] && [ -w "$base" ] || base=${TMPDIR:-/tmp}
tmp=$(mktemp -d "$base/dn2-soak.XXXXXX")
pid=
cleanup() {
    [ -z "$pid" ] || kill "$pid" 2>/dev/null || true
    [ -n "$keep" ] || rm -rf "$tmp"
}
trap cleanup EXIT
trap 'cleanup; trap - EXIT; exit 130' INT TERM HUP
log "soak${quick:+ (quick)}: qemu=$qemu switch=$switch (limit ${limit}s)"
t0=$(date +%s)
rc=0
# The tool kills its children on exit (and they die with it: PDEATHSIG);
# timeout bounds the whole run even if the tool itself were stuck.
DN2_SOAK_TMP=$tmp timeout --kill-after=20 "$limit" "$tool" --qemu "$qemu" \
    --switch "$switch" --fw "$fw" "${args[@]}" &
pid=$!
wait "$pid" || rc=$?
pid=
if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
    echo "not ok - the soak run exceeded its limit of ${limit}s"
    echo "# soak: killed after ${limit}s"
    rc=1
fi
log "soak: exit status $rc after $(( $(date +%s) - t0 ))s"
exit "$rc"
