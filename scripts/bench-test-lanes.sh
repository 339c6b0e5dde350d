#!/usr/bin/env bash
# The test command's two lanes against one (docs/ci.md, "Lanes"): runs
# scripts/test.sh on the same selection of tests twice, first with
# DN2_TEST_LANES=1 (every test as meson schedules it, a guest-booting
# test alone on the host) and then with the default two lanes (the
# virtual-time and light tests beside the guest tests in host time), and
# prints each run's wall time, its CPU time (user + system of the tests
# and everything they started) and the ratio.  A benchmark, not a test:
# it prints a table; both runs must pass (else exit 1).
#
#   scripts/bench-test-lanes.sh [options] [TEST-NAME...]
#
#   --order ORDER   "1,2" (default) or "2,1": which run comes first
#   -o, --output F  the table also into F
#
# TEST-NAME...: meson test names (default: a sample of both lanes,
# cluster-vt-shm, guest-wrong-vt, memcheck/hostile,
# qtest/dimmnet2-remote-test in lane a; cluster-lifecycle, cluster-e2e,
# guest-lib, guest-msg in lane b).  The build must exist (scripts/test.sh
# once); setup is skipped (DN2_SKIP_SETUP=1).  The runs' logs:
# build/bench-test-lanes/lanesN.log.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
cd "$DN2_TOP" || exit 1

order="1,2" output=
dn2_split_opts "$@"
set -- "${DN2_ARGS[@]}"
names=()
while [ $# -gt 0 ]; do
    case $1 in
        -h|--help) dn2_usage; exit 0 ;;
        --order) [ $# -ge 2 ] || usage_error "--order needs a value"; order=$2; shift ;;
        -o|--output) [ $# -ge 2 ] || usage_error "$1 needs a file"; output=$2; shift ;;
        -*) usage_error "unknown option: $1" ;;
        *) names+=("$1") ;;
    esac
    shift
done
case $order in
    1,2|2,1) ;;
    *) usage_error "--order is 1,2 or 2,1, not '$order'" ;;
esac
[ ${#names[@]} -gt 0 ] || names=(cluster-vt-shm guest-wrong-vt memcheck/hostile qtest/dimmnet2-remote-test
                                 cluster-lifecycle cluster-e2e guest-lib guest-msg)
[ -f build/build.ninja ] || die "no build: run scripts/test.sh once"

out=build/bench-test-lanes
mkdir -p "$out"
declare -A wall cpu summary
for n in ${order//,/ }; do
    log "DN2_TEST_LANES=$n: ${names[*]}"
    t0=$(date +%s.%N)
    read -r u0 s0 < <(awk '{ print $14 + $16, $15 + $17 }' /proc/$$/stat)
    DN2_SKIP_SETUP=1 DN2_TEST_LANES=$n bash scripts/test.sh "${names[@]}" > "$out/lanes$n.log" 2>&1
    rc=$?
    t1=$(date +%s.%N)
    # the children's CPU time (waited for), in clock ticks
    read -r u1 s1 < <(awk '{ print $14 + $16, $15 + $17 }' /proc/$$/stat)
    hz=$(getconf CLK_TCK)
    wall[$n]=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.0f", b - a }')
    cpu[$n]=$(awk -v u="$((u1 - u0))" -v s="$((s1 - s0))" -v hz="$hz" 'BEGIN { printf "%.0f", (u + s) / hz }')
    summary[$n]=$(tail -1 "$out/lanes$n.log")
    if [ "$rc" != 0 ]; then
        tail -30 "$out/lanes$n.log" >&2
        die "DN2_TEST_LANES=$n failed: ${summary[$n]} (log: $out/lanes$n.log)"
    fi
done

table() {
    echo "# scripts/bench-test-lanes.sh ${names[*]}"
    echo "# host: $(nproc) CPUs; $(date -u +%Y-%m-%d)"
    printf '%-8s %8s %8s %10s  %s\n' lanes wall_s cpu_s cpu/wall result
    for n in 1 2; do
        printf '%-8s %8s %8s %10s  %s\n' "$n" "${wall[$n]}" "${cpu[$n]}" \
            "$(awk -v c="${cpu[$n]}" -v w="${wall[$n]}" 'BEGIN { printf "%.2f", c / w }')" "${summary[$n]}"
    done
    awk -v a="${wall[1]}" -v b="${wall[2]}" 'BEGIN { printf "two lanes / one: %.2f of the wall time\n", b / a }'
}
table
[ -z "$output" ] || table > "$output"
