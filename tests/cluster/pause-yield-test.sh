#!/usr/bin/env bash
# TAP: what -accel tcg,pause-yield=on does (scripts/qemu/patches/
# 0003-tcg-pause-yield.patch): every PAUSE the guest executes is one
# sched_yield() system call of the vCPU's host thread, and without the
# option none is.  Counted, not timed: a 64 KiB firmware executes exactly
# N PAUSEs in a loop, then writes to isa-debug-exit, which ends QEMU;
# `strace -f -c -e trace=sched_yield` counts the calls of all QEMU's
# threads.  Then the same firmware beside a busy neighbour: QEMU and a
# CPU-bound host process pinned to one host CPU (taskset); the vCPU thread
# gives the CPU away at each PAUSE, so the neighbour's share of that CPU
# while the guest spins is reported (a diagnostic, not asserted: the host's
# other load decides it).
#
#   tests/cluster/pause-yield-test.sh [--pauses N]   (meson: pause-yield)
#   tests/cluster/pause-yield-test.sh --help
# Environment: QEMU (the project's build, default build/qemu-system-x86_64).
# Needs strace (scripts/setup.sh). A few seconds; no guest image.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../../scripts/lib.sh"
. "$here/../tap/tap-lib.sh"

n=5000
dn2_split_opts "$@"; set -- "${DN2_ARGS[@]}"
while [ $# -gt 0 ]; do
    case $1 in
        --pauses) dn2_need_value "$@"; dn2_want_uint --pauses "$2"; n=$2; shift 2 ;;
        -h|--help) dn2_usage; exit 0 ;;
        *) usage_error "unknown argument: $1" ;;
    esac
done
qemu=${QEMU:-$DN2_TOP/build/qemu-system-x86_64}
command -v strace >/dev/null || tap_skip_all "$(tap_missing strace strace)"
[ -x "$qemu" ] || tap_skip_all "no QEMU at $qemu: build the project first"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# The firmware: 64 KiB mapped below 4 GiB; the reset vector (offset 0xfff0,
# real mode) jumps to offset 0:
#   66 b9 N      mov ecx, N
#   f3 90        pause            <- loop
#   66 49        dec ecx
#   75 fa        jnz loop
#   b0 2a        mov al, 42
#   e6 f4        out 0xf4, al     isa-debug-exit at 0xf4: QEMU exits with
#                                 2 * 42 + 1 = 85 (not 1, QEMU's own error)
#   f4 eb fd     hlt; jmp hlt
fw=$tmp/pause.bin
le32() { printf '\\x%02x\\x%02x\\x%02x\\x%02x' $(($1 & 255)) $(($1 >> 8 & 255)) $(($1 >> 16 & 255)) $(($1 >> 24 & 255)); }
{
    printf "\\x66\\xb9$(le32 "$n")\\xf3\\x90\\x66\\x49\\x75\\xfa\\xb0\\x2a\\xe6\\xf4\\xf4\\xeb\\xfd"
    head -c $((0xfff0 - 19)) /dev/zero
    printf '\xe9\x0d\x00'
    head -c 13 /dev/zero
} > "$fw"

yields() {      # yields on|off: sched_yield calls of one run
    strace -f -c -e trace=sched_yield -o "$tmp/strace.$1" \
        "$qemu" -machine pc -nodefaults -display none -no-user-config -m 16 \
        -accel "tcg,pause-yield=$1" -bios "$fw" \
        -device isa-debug-exit,iobase=0xf4,iosize=1 2>"$tmp/err.$1"
    st=$?
    awk '$NF == "sched_yield" { print $(NF - 1) ~ /^[0-9]+$/ ? $(NF - 1) : $(NF - 2); f = 1 } END { if (!f) print 0 }' "$tmp/strace.$1"
    return $st
}

tap_plan 4
c_on=$(yields on); st=$?
result $((st != 85)) "QEMU accepts -accel tcg,pause-yield=on and runs the firmware to its exit (status $st, want 85)"
[ $st = 85 ] || diag < "$tmp/err.on"
result $((st != 85 || c_on < n || c_on > n + 50)) \
    "pause-yield=on: $n guest PAUSEs, $c_on sched_yield calls (want $n, up to 50 more from other threads)"
c_off=$(yields off); st=$?
result $((st != 85 || c_off > 50)) "pause-yield=off: $n guest PAUSEs, $c_off sched_yield calls (want none, up to 50 from other threads)"

# The neighbour: one host CPU for QEMU and a CPU-bound loop.  Each yield
# lets it run; count the loop's CPU time while the guest spins through
# 500 PAUSEs (each may give the neighbour the rest of its slice); asserted only
# as a ratio with a wide margin (1.5x; the yields alone add about a
# millisecond each to the neighbour on this host).
cpu=$(taskset -pc $$ 2>/dev/null | sed -E 's/.*: ([0-9]+).*/\1/')
neigh() {       # neigh on|off: the busy loop's CPU ticks during one run
    ( exec taskset -c "$cpu" sh -c 'while :; do :; done' ) &
    local hog=$! t0 t1
    sleep 0.2
    t0=$(awk '{ print $14 + $15 }' /proc/$hog/stat)
    taskset -c "$cpu" "$qemu" -machine pc -nodefaults -display none -no-user-config -m 16 \
        -accel "tcg,pause-yield=$1" -bios "$fw2" \
        -device isa-debug-exit,iobase=0xf4,iosize=1 2>/dev/null
    t1=$(awk '{ print $14 + $15 }' /proc/$hog/stat)
    kill "$hog"; wait "$hog" 2>/dev/null
    echo $((t1 - t0))
}
fw2=$tmp/pause-small.bin
m=500
{ printf "\\x66\\xb9$(le32 $m)"; tail -c +7 "$fw"; } > "$fw2"
h_on=$(neigh on); h_off=$(neigh off)
diag "a CPU-bound neighbour on host CPU $cpu got $h_on clock ticks while the guest executed $m PAUSEs with pause-yield=on, $h_off with it off"
result $((2 * h_on <= 3 * h_off)) "the neighbour on the same host CPU gets at least 1.5x as much of it with pause-yield=on ($h_on ticks) as off ($h_off)"
tap_done
