#!/usr/bin/env bash
# Benchmark: two DIMMnet-2 boards in two QEMUs on one dn2-switch, next to
# plain UDP between two processes on the same host, and the thesis's
# figures (docs/benchmarks.md explains the method).
#
#   scripts/bench.sh [--quick] [--no-build] [--out FILE]
#
#   --quick      fewer iterations and sizes (about 15 s instead of ~1 min)
#   --no-build   do not run meson compile (the binaries must exist)
#   --out FILE   also write the raw key=value output there
#                (default build/bench/bench-<date>.txt)
#
# Steps: builds the project (meson compile: QEMU, dn2-switch, and the
# programs of tools/bench: build/tools/udp-baseline, dn2-bench-qtest,
# udp-board), runs
#   (c) udp-baseline: ping-pong (24 B, 512 B; blocking recv and poll+recv)
#       and streams of 4 KiB..64 MiB in 4 KiB and 60 KiB datagrams;
#   (a)+(b) dn2-bench-qtest: qtest command cost, BOTF ping-pong (24 B and
#       512 B images), BOTF one-way from trace time stamps, RVS SO-DIMM to
#       SO-DIMM 4 KiB..64 MiB (one request at a time, and streamed);
# and prints one table with the ratios.  Latency figures on a 2-CPU VM
# depend on what else runs: the load average is printed with the results.
#
# Environment: QEMU (qemu-system-x86_64 to use), DN2_FIRMWARE_DIR.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
cd "$DN2_TOP"

quick=
build=1
out=
dn2_split_opts "$@"
set -- "${DN2_ARGS[@]}"
while [ $# -gt 0 ]; do
    case $1 in
        --quick) quick=1; shift ;;
        --no-build) build=; shift ;;
        --out) dn2_need_value "$@"; out=$2; shift 2 ;;
        -h|--help) dn2_usage; exit 0 ;;
        *) usage_error "unknown argument: $1" ;;
    esac
done

BUILD=${DN2_BUILD_DIR:-build}
if [ -n "$build" ]; then
    [ -f "$BUILD/build.ninja" ] || meson setup "$BUILD" >/dev/null
    meson compile -C "$BUILD" >/dev/null || die "meson compile -C $BUILD failed"
fi
qemu=${QEMU:-$(bash scripts/build-qemu.sh --print-env | sed -n 's/^QEMU_BIN=//p')}
[ -x "$qemu" ] || die "no QEMU at '$qemu': run meson compile -C $BUILD (or set QEMU=)"
switch=$DN2_TOP/$BUILD/fabric/dn2-switch
[ -x "$switch" ] || die "$switch missing: run meson compile -C $BUILD"
fw=${DN2_FIRMWARE_DIR:-$DN2_CACHE/firmware}
[ -f "$fw/bios-256k.bin" ] || die "no bios-256k.bin in $fw (run scripts/setup.sh)"

# The programs, built by meson (tools/meson.build); results in build/bench.
tdir=$DN2_TOP/$BUILD/tools
for t in udp-baseline dn2-bench-qtest udp-board; do
    [ -x "$tdir/$t" ] || die "$tdir/$t missing: run meson compile -C $BUILD"
done
bdir=$DN2_TOP/$BUILD/bench
mkdir -p "$bdir"
[ -n "$out" ] || out=$bdir/bench-$(date +%Y%m%d-%H%M%S).txt
: > "$out"

if [ -n "$quick" ]; then
    iters=500; reps=3; sizes=4K,64K,1M,16M,64M; ppiters=5000
else
    iters=3000; reps=5; sizes=4K,16K,64K,256K,1M,4M,16M,64M; ppiters=20000
fi

run() { "$@" | tee -a "$out"; }
pin=
command -v taskset > /dev/null && taskset -c 0 true 2> /dev/null && pin="taskset -c 0"
{
    echo "host cpus=$(nproc) kernel=$(uname -r) load_start=\"$(cut -d' ' -f1-3 /proc/loadavg)\""
    echo "qemu bin=$qemu"
} | tee -a "$out"
log "raw UDP baseline"
run "$tdir/udp-baseline" pingpong 24 "$ppiters"
if [ -n "$pin" ]; then
    $pin "$tdir/udp-baseline" pingpong 24 "$ppiters" | sed 's/^pingpong /pingpong-one-cpu /' |
        tee -a "$out"
fi
run "$tdir/udp-baseline" pingpong 512 "$ppiters"
run "$tdir/udp-baseline" pingpong-poll 24 "$ppiters"
for s in ${sizes//,/ }; do
    n=$s
    case $s in *K) n=$(( ${s%K} * 1024 )) ;; *M) n=$(( ${s%M} * 1048576 )) ;; esac
    run "$tdir/udp-baseline" stream "$n" 4096 "$reps"
    run "$tdir/udp-baseline" stream "$n" 61440 "$reps"
done
log "two boards over dn2-switch (qtest driven)"
run "$tdir/dn2-bench-qtest" --qemu "$qemu" --switch "$switch" --fw "$fw" \
    --iters "$iters" --reps "$reps" --sizes "$sizes" --no-trace --place main
# Latency: the boards, then two udp-board processes in their place under the
# same driver (the harness's own share), with free placement and all on one
# CPU (as the raw UDP ping-pong's two processes end up).
log "latency: boards and the udp-board control, free placement"
run "$tdir/dn2-bench-qtest" --qemu "$qemu" --switch "$switch" --fw "$fw" \
    --iters "$iters" --latency-only --control "$tdir/udp-board" --place free
if [ -n "$pin" ]; then
    log "latency: the same on one CPU ($pin)"
    run $pin "$tdir/dn2-bench-qtest" --qemu "$qemu" --switch "$switch" --fw "$fw" \
        --iters "$iters" --latency-only --control "$tdir/udp-board" --place one-cpu
fi
# The quiet path: both boards on CPU 0, the driver on CPU 1 of its own,
# busy-waiting (for qtest answers, and on A's SO-DIMM for the echo's answer,
# as a guest polls its memory) so that nobody wakes it across CPUs.  With the
# board's receive thread (rx-thread=on) and, for comparison, in the main loop.
if [ "$(nproc)" -ge 2 ] && taskset -c 1 true 2> /dev/null; then
    log "latency: boards on CPU 0, the driver busy-waiting on CPU 1"
    run "$tdir/dn2-bench-qtest" --qemu "$qemu" --switch "$switch" --fw "$fw" \
        --iters "$iters" --latency-only --control "$tdir/udp-board" --place split \
        --boards-cpu 0 --driver-cpu 1 --device-opts rx-thread=on
    run "$tdir/dn2-bench-qtest" --qemu "$qemu" --switch "$switch" --fw "$fw" \
        --iters "$iters" --latency-only --place split-mainloop \
        --boards-cpu 0 --driver-cpu 1 --device-opts rx-thread=off
fi
echo "host load_end=\"$(cut -d' ' -f1-3 /proc/loadavg)\"" | tee -a "$out"

# ------------------------------------------------------------------ table
PYTHONPATH=$here${PYTHONPATH:+:$PYTHONPATH} PYTHONDONTWRITEBYTECODE=1 /usr/bin/env python3 -m dn2scripts.bench_table "$out"
log "raw figures in $out"
