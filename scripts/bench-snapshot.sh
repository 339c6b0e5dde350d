#!/usr/bin/env bash
# Boot once, test many (docs/cluster.md, "Snapshots"): the wall time from
# the command to the first finished "exec" on an N-node cluster, booted
# (cluster.sh start) and restored from a snapshot (cluster.sh start
# --from), and their ratio.  A benchmark, not a test: it prints a table.
#
#   scripts/bench-snapshot.sh [options]
#
#   -n, --nodes N     cluster size (default 8)
#   -r, --repeat R    restores timed, one after the other (default 3; the
#                     table gives each and their median)
#   -o, --output F    the table also into F
#   -q, --quiet       no progress lines
#
# One boot: start NAME -n N, then exec NAME true (the clock stops when
# every node has run it); snapshot NAME TAG (timed too), stop NAME; then R
# times: start NAME-rK --from TAG, exec NAME-rK true, stop.  The clusters
# and the snapshot (build/bench-snapshot) are removed at the end (the
# log of the steps: build/bench-snapshot.log).
#
# Exit status: 0 table printed; 1 a step failed; 2 usage error.
# Environment: as scripts/cluster.sh.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"

nodes=8
repeat=3
output=
quiet=
dn2_split_opts "$@"
set -- "${DN2_ARGS[@]}"
while [ $# -gt 0 ]; do
    case $1 in
        -n|--nodes) dn2_need_value "$@"; nodes=$2; shift 2 ;;
        -r|--repeat) dn2_need_value "$@"; repeat=$2; shift 2 ;;
        -o|--output) dn2_need_value "$@"; output=$2; shift 2 ;;
        -q|--quiet) quiet=1; shift ;;
        -h|--help) dn2_usage; exit 0 ;;
        *) usage_error "unknown argument: $1" ;;
    esac
done
dn2_want_uint --nodes "$nodes"
dn2_want_uint --repeat "$repeat"
[ "$nodes" -ge 1 ] && [ "$nodes" -le 64 ] || usage_error "--nodes: 1..64"
[ "$repeat" -ge 1 ] || usage_error "--repeat: at least 1"
progress() { [ -n "$quiet" ] || printf '[bench-snapshot] %s\n' "$*" >&2; }

cluster=$here/cluster.sh
export DN2_SNAPSHOT_DIR=$DN2_TOP/build/bench-snapshot
name=bench-snap-$$
tag=bench-$$
names=("$name")
finish() {
    for n in "${names[@]}"; do
        bash "$cluster" stop "$n" > /dev/null 2>&1 && rm -rf "$DN2_TOP/build/cluster/$n"
    done
    rm -rf "${DN2_SNAPSHOT_DIR:?}/$tag"
}
trap finish EXIT
trap 'exit 130' INT TERM
now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }
log=$DN2_TOP/build/bench-snapshot.log
mkdir -p "$DN2_TOP/build"
: > "$log"
# step WHAT CMD...: CMD (its output into the log); exit 1 if it fails
step() {
    local what=$1
    shift
    if ! "$@" >> "$log" 2>&1; then
        echo "[bench-snapshot] error: $what failed; the last lines of $log:" >&2
        tail -8 "$log" >&2
        exit 1
    fi
}

progress "boot: $nodes nodes"
t0=$(now)
step "start $name" bash "$cluster" start "$name" -n "$nodes" -q
tm=$(now)
step "exec $name" bash "$cluster" exec "$name" -t 300 true
t1=$(now)
boot=$(secs "$t0" "$t1")
progress "boot to first exec: $boot s (start $(secs "$t0" "$tm") s, exec $(secs "$tm" "$t1") s); snapshot"
t0=$(now)
step "snapshot $name $tag" bash "$cluster" snapshot "$name" "$tag"
t1=$(now)
snap_s=$(secs "$t0" "$t1")
snap_mib=$(du -sm "$DN2_SNAPSHOT_DIR/$tag" | cut -f1)
step "stop $name" bash "$cluster" stop "$name"

restores=()
for ((k = 1; k <= repeat; k++)); do
    r=$name-r$k
    names+=("$r")
    t0=$(now)
    step "start $r --from $tag" bash "$cluster" start "$r" --from "$tag" -q
    tm=$(now)
    step "exec $r" bash "$cluster" exec "$r" -t 300 true
    t1=$(now)
    restores+=("$(secs "$t0" "$t1")")
    progress "restore $k to first exec: ${restores[-1]} s (start --from $(secs "$t0" "$tm") s, exec $(secs "$tm" "$t1") s)"
    step "stop $r" bash "$cluster" stop "$r"
done
median=$(printf '%s\n' "${restores[@]}" | sort -n | awk '{ a[NR] = $1 } END { if (NR % 2) print a[(NR + 1) / 2]; else printf "%.1f\n", (a[NR / 2] + a[NR / 2 + 1]) / 2 }')
ratio=$(awk -v b="$boot" -v r="$median" 'BEGIN { printf "%.1f", (r > 0 ? b / r : 0) }')

table=$(
    echo "# scripts/bench-snapshot.sh -n $nodes -r $repeat  ($(nproc) CPUs, load $(cut -d' ' -f1 /proc/loadavg))"
    printf '%-6s %-22s %-22s %-26s %-8s %s\n' nodes "boot to 1st exec (s)" "snapshot (s, MiB)" "restore to 1st exec (s)" median ratio
    printf '%-6s %-22s %-22s %-26s %-8s %s\n' "$nodes" "$boot" "$snap_s, $snap_mib" "${restores[*]}" "$median" "${ratio}x"
)
printf '%s\n' "$table"
[ -z "$output" ] || printf '%s\n' "$table" > "$output"
exit 0
