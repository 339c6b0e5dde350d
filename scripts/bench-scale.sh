#!/usr/bin/env bash
# The scale curve (docs/benchmarks.md, "Scale curve"): one dn2-switch and
# 2, 4, 8, 16, 32 boards as QEMUs driven over qtest (no guest OS), all-to-all
# RVS, a BOTF echo under that load and a multicast to all, every byte
# checked, in both routing modes (tools/scale/dn2-scale.c).
#
#   scripts/bench-scale.sh [--boards 2,4,8,16,32]
#                          [--routes direct,switch,switch:-10]
#                          [--seconds S] [--size BYTES] [--switch BIN]
#                          [--switch-arg ARG]... [-o FILE]
#
# A route "MODE:N" runs the switch at nice N (root only: in routing mode
# switch it forwards every board's traffic, and the scheduler's equal
# shares give it 1/(boards+1) of the CPUs; docs/benchmarks.md).
#
# --switch runs another dn2-switch binary (default: this build's), e.g. a
# copy of an older build for a before/after comparison in one session;
# --switch-arg passes one more argument to it (e.g. --rcvbuf 33554432).
#
# Prints a table per routing mode and the verdict against the targets
# (aggregate at the largest count >= 80 % of that at 2, nothing lost, the
# slowest board's share >= half the fastest's); the raw key=value lines go
# to FILE (default build/bench/scale-STAMP.txt).  Exit status 1 when a byte
# was wrong or a transfer missing, 2 a usage error, 0 otherwise (the targets
# are figures, not a pass/fail of the fabric's correctness).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"

boards=2,4,8,16,32
routes=direct,switch
[ "$(id -u)" = 0 ] && routes+=,switch:-10
seconds=5
size=256K
output=
switch_bin=
switch_args=()
dn2_split_opts "$@"
set -- "${DN2_ARGS[@]}"
while [ $# -gt 0 ]; do
    case $1 in
        --boards) dn2_need_value "$@"; boards=$2; shift 2 ;;
        --routes) dn2_need_value "$@"; routes=$2; shift 2 ;;
        --seconds) dn2_need_value "$@"; seconds=$2; shift 2 ;;
        --size) dn2_need_value "$@"; size=$2; shift 2 ;;
        --switch) dn2_need_value "$@"; switch_bin=$2; shift 2 ;;
        --switch-arg) dn2_need_value "$@"; switch_args+=(--switch-arg "$2"); shift 2 ;;
        -o|--output) dn2_need_value "$@"; output=$2; shift 2 ;;
        -h|--help) dn2_usage; exit 0 ;;
        *) usage_error "unknown argument: $1" ;;
    esac
done
case $boards in *[!0-9,]*|,*|*,|*,,*) usage_error "--boards wants a list of whole numbers (2,4,8), not '$boards'" ;; esac
case $seconds in ''|.|*[!0-9.]*|*.*.*) usage_error "--seconds wants a number, not '$seconds'" ;; esac
for r in ${routes//,/ }; do
    case $r in
        direct|switch|direct:*|switch:*) ;;
        *) usage_error "--routes: '$r' is not direct or switch (optionally :NICE)" ;;
    esac
done

bench_dir=$DN2_TOP/build/bench
mkdir -p "$bench_dir"
output=${output:-$bench_dir/scale-$(date +%Y%m%d-%H%M%S).txt}
if [ ! -f "$DN2_TOP/build/build.ninja" ]; then
    meson setup "$DN2_TOP/build" "$DN2_TOP" > "$bench_dir/build.log" 2>&1 \
        || { tail -20 "$bench_dir/build.log"; die "meson setup failed"; }
fi
meson compile -C "$DN2_TOP/build" dn2-scale dn2-switch > "$bench_dir/build.log" 2>&1 \
    || { tail -20 "$bench_dir/build.log"; die "building dn2-scale and dn2-switch failed"; }
switch_bin=${switch_bin:-$DN2_TOP/build/fabric/dn2-switch}
[ -x "$switch_bin" ] || die "--switch: $switch_bin is not an executable"
qemu=$(dn2_find_qemu) || exit 1
fw=$DN2_CACHE/firmware
[ -f "$fw/bios-256k.bin" ] || die "firmware missing in $fw: run scripts/setup.sh"

{
    echo "# scripts/bench-scale.sh --boards $boards --routes $routes --seconds $seconds --size $size --switch $switch_bin${switch_args[*]:+ ${switch_args[*]}}"
    echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) CPUs ($(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)), load $(cut -d' ' -f1-3 /proc/loadavg)"
} > "$output"
status=0
for cfg in ${routes//,/ }; do
    route=${cfg%%:*} nice=()
    [ "$route" != "$cfg" ] && nice=(--switch-nice "${cfg#*:}")
    "$DN2_TOP/build/tools/scale/dn2-scale" --qemu "$qemu" --switch "$switch_bin" \
        --fw "$fw" --boards "$boards" --route "$route" --seconds "$seconds" --size "$size" "${nice[@]}" "${switch_args[@]}" \
        | tee -a "$output" | grep -E '^FAIL' >&2
    [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
done

# The table, from the key=value lines.
awk '
/^scale .* pass=0 / {
    delete v
    for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
    r = v["route"] (v["switch_nice"] != 0 ? ", switch at nice " v["switch_nice"] : ""); n = v["boards"]
    if (!(r in base)) { base[r] = v["agg_mbps"]; order[++nr] = r }
    line[r] = line[r] sprintf("| %5d | %8.0f | %5.0f %% | %7.1f / %-7.1f | %6.0f | %5.0f / %-6.0f | %8.1f | %4.2f | %6d | %6.1f | %7.2f %% | %4.2f | %5.2f | %4.2f | %4.2f | %5.2f |\n",
        n, v["agg_mbps"], 100 * v["agg_mbps"] / base[r], v["slowest_mbps"], v["fastest_mbps"],
        v["mcast_mbps"], v["echo_rtt_median_us"], v["echo_rtt_p99_us"],
        v["switch_us_per_dgram"], v["switch_cpu"], v["switch_rcvbuf_drops"], v["rss_mb_per_board"],
        v["retx_pct"], v["qemus_cpu"], v["cpu_ms_per_mb"], v["queue_fill"], v["driver_cpu"], v["load1"])
    last[r] = v["agg_mbps"]; lastn[r] = n
    if (v["share_ratio"] < 0.5) starved[r] = starved[r] " " n
}
END {
    for (k = 1; k <= nr; k++) {
        r = order[k]
        printf "\nroute=%s\n", r
        print "| boards | aggregate MB/s | vs 2 | slowest / fastest board MB/s | multicast MB/s | echo RTT median / p99 us | switch us/datagram | switch CPU | switch drops | RSS MiB/board | retransmitted | QEMUs CPU | CPU ms/MB | queue fill | driver CPU | load |"
        print "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
        printf "%s", line[r]
        printf "target (aggregate at %d boards >= 80 %% of 2): %s (%.0f %%); no board starved (slowest >= half the fastest): %s\n",
            lastn[r], (last[r] >= 0.8 * base[r] ? "met" : "MISSED"), 100 * last[r] / base[r],
            (starved[r] == "" ? "met" : ("MISSED at" starved[r]))
    }
}' "$output"
echo
echo "raw figures: $output"
if [ $status -ne 0 ]; then
    echo "some checks FAILED (lines starting FAIL in $output)" >&2
fi
exit $status
