#!/usr/bin/env bash
# The main demo: from a fresh Debian 12 machine to a Linux guest driving an
# emulated DIMMnet-2 board.
#
#   scripts/demo.sh [-v] [--boards N]
#
# 1. scripts/setup.sh           packages, QEMU source, firmware, guest kernel
# 2. scripts/build-qemu.sh      QEMU 10.0.2 with -device dimmnet2
# 3. scripts/build-initramfs.sh busybox + dn2-probe
# 4. scripts/run-guest.sh       boots q35 + Linux with the board(s); inside,
#                               dn2-probe finds the board through ACPI, maps
#                               its window, decodes registers and runs a
#                               VS/VL round trip through the on-board SO-DIMM
# and prints what the guest reported.  Each step is incremental; build output
# goes to build/demo/*.log (shown only on failure).  -v also prints the raw
# TAP.  Exit status: 0 when every check in the guest passed.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"

verbose=
boards=1
while [ $# -gt 0 ]; do
    case $1 in
        -v|--verbose) verbose=1; shift ;;
        -n|--boards) boards=${2:?$1 needs a number}; shift 2 ;;
        -h|--help) sed -n '2,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) die "unknown argument: $1 (see --help)" ;;
    esac
done

logs=$DN2_TOP/build/demo
mkdir -p "$logs"

if [ -t 1 ]; then B=$'\e[1m'; G=$'\e[32m'; R=$'\e[31m'; D=$'\e[2m'; N=$'\e[0m'; else B='' G='' R='' D='' N=''; fi

step() { # step N TITLE LOGNAME COMMAND...
    local n=$1 title=$2 name=$3 t0=$SECONDS rc
    shift 3
    printf '%s[%s/4]%s %-34s ' "$B" "$n" "$N" "$title"
    "$@" > "$logs/$name.log" 2>&1
    rc=$?
    if [ $rc -ne 0 ]; then
        printf '%sfailed%s (%s s)\n' "$R" "$N" "$((SECONDS - t0))"
        echo "---- last lines of $logs/$name.log ----"
        tail -25 "$logs/$name.log"
        exit 1
    fi
    printf '%sdone%s %s(%s s)%s\n' "$G" "$N" "$D" "$((SECONDS - t0))" "$N"
}

echo "${B}DIMMnet-2 for QEMU: demo${N}"
if [ "$(id -u)" = 0 ]; then
    step 1 "setup (packages, kernel, firmware)" setup bash "$here/setup.sh"
else
    step 1 "setup (already done? not root)" setup bash "$here/setup.sh"
fi
step 2 "build QEMU $QEMU_VERSION + dimmnet2" build-qemu bash "$here/build-qemu.sh"
QEMU=$(tail -1 "$logs/build-qemu.log")     # build-qemu.sh ends with the binary's path
if [ -x "$QEMU" ]; then export QEMU; else unset QEMU; fi
step 3 "build guest initramfs" initramfs bash "$here/build-initramfs.sh"

accel=TCG
if [ -r /dev/kvm ] && [ -w /dev/kvm ] && grep -qwE 'vmx|svm' /proc/cpuinfo; then accel=KVM; fi
case ${DN2_ACCEL:-auto} in kvm|tcg) accel=${DN2_ACCEL^^} ;; esac
printf '%s[4/4]%s %-34s ' "$B" "$N" "boot Linux guest ($accel, $boards board$([ "$boards" -gt 1 ] && echo s))"
t0=$SECONDS
run="r=0; for b in $(seq -s ' ' 0 $((boards - 1))); do dn2-probe \$b || r=1; done; exit \$r"
tap=$(bash "$here/run-guest.sh" -n "$boards" -r "$run" -a "loglevel=0" -l "$logs/guest-console.log" 2> "$logs/guest.log")
rc=$?
elapsed=$((SECONDS - t0))
if [ $rc -ge 2 ]; then
    printf '%sfailed%s (%s s)\n' "$R" "$N" "$elapsed"
    cat "$logs/guest.log"
    exit 1
fi
printf '%sdone%s %s(%s s, boot and probe)%s\n' "$G" "$N" "$D" "$elapsed" "$N"

if [ -n "$verbose" ]; then
    echo; echo "${B}Raw TAP from the guest${N}"
    printf '%s\n' "$tap"
fi

# The report: the probe's diagnostics ("# ...") with each check's verdict.
echo
echo "${B}Report from inside the guest${N} ${D}(tests/guest/dn2-probe.c)${N}"
pass=0 fail=0
while IFS= read -r line; do
    case $line in
        '# dn2-probe:'*) echo; echo "  ${B}${line#\# dn2-probe: }${N}" ;;
        '# board '*': '*' checks failed') ;;
        '# '*) echo "      ${D}${line#\# }${N}" ;;
        'ok '*)
            pass=$((pass + 1))
            echo "  ${G}ok${N}    $(sed -E 's/^ok [0-9]+ - board [0-9]+: //' <<< "$line")" ;;
        'not ok '*)
            fail=$((fail + 1))
            echo "  ${R}FAIL${N}  $(sed -E 's/^not ok [0-9]+ - board [0-9]+: //' <<< "$line")" ;;
    esac
done <<< "$tap"
echo
if [ "$fail" -eq 0 ] && [ "$pass" -gt 0 ]; then
    echo "${G}${B}All $pass checks passed${N} (console log: $logs/guest-console.log)"
    exit 0
fi
echo "${R}${B}$fail of $((pass + fail)) checks failed${N} (console log: $logs/guest-console.log)"
exit 1
