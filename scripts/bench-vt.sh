#!/usr/bin/env bash
# The cost of lock-step virtual time (docs/cluster.md, "Virtual time"): for
# clusters of 2, 4 and 8 nodes, idle and busy, the wall seconds one virtual
# second takes with synchronisation (cluster.sh --virtual-time) and without
# (--no-vt-sync: the same guests under -icount, boards and switch without
# virtual time), the switch's synchronisation datagrams (VT_REPORT +
# VT_GRANT) per virtual second, and the wall time to boot the cluster.
# With --vt-sync udp,shm the synchronised runs are made over both
# transports of the lock-step (the switch's reports and grants over UDP,
# and the same-host sync domain in shared memory), in the same guests with
# the same command, one after the other for each size, and a second table
# compares them (and says whether their outputs and pcaps are identical,
# as they must be).  A benchmark, not a test: it prints tables.
#
#   scripts/bench-vt.sh [options]
#
#   --nodes LIST      cluster sizes (default "2 4 8")
#   --quick           2 and 4 nodes, a shorter busy phase
#   --vt-quantum NS   cluster.sh --vt-quantum (default 0 = exact delivery
#                     times, the modelled lookahead; e.g. 100000 for the
#                     faster 100 µs delivery grid)
#   --vt-lookahead NS cluster.sh --vt-lookahead (default 1000)
#   --vt-sync LIST    the transports of the synchronised runs, udp and/or
#                     shm, comma-separated (default udp; cluster.sh
#                     --vt-sync); the first one fills the main table, and
#                     with both a second table compares them
#   --idle S          virtual seconds of the idle phase (default 1)
#   --rounds R        rounds of the busy phase (default 200, --quick 50)
#   -o, --output F    the table also into F
#   -q, --quiet       no progress lines
#
# Every node boots, loads the driver, brings its board up, meets the others
# (one dn2-vt-exchange round), then
#   idle: sleep S (the guests halt; virtual time jumps to the next timer);
#   busy: dn2-vt-exchange -q -k 4 -r R, an all-to-all dn2msg exchange
#         (every rank sends 4 eager messages to every other rank per round,
#         receives with ANY_SOURCE, a barrier per round).
# Node 0 prints a mark with its virtual clock at each phase boundary; this
# script notes the wall time at which the mark appears on its console and
# reads the switch's counters (dn2-switch --stats) then.  wall/virtual =
# the phase's wall seconds / its virtual seconds; "boot" = the wall seconds
# until every node had its link and the rank table.
#
# Exit status: 0 table printed; 1 a run failed; 2 usage error.
# Environment: as scripts/cluster.sh.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"

nodes_list="2 4 8"
quick=
quantum=0
lookahead=1000
idle_s=1
rounds=
output=
quiet=
transports=udp
args="$*"
dn2_split_opts "$@"
set -- "${DN2_ARGS[@]}"
while [ $# -gt 0 ]; do
    case $1 in
        --nodes) dn2_need_value "$@"; nodes_list=$2; shift 2 ;;
        --quick) quick=1; shift ;;
        --vt-quantum) dn2_need_value "$@"; quantum=$2; shift 2 ;;
        --vt-lookahead) dn2_need_value "$@"; lookahead=$2; shift 2 ;;
        --vt-sync) dn2_need_value "$@"; transports=${2//,/ }; shift 2 ;;
        --idle) dn2_need_value "$@"; idle_s=$2; shift 2 ;;
        --rounds) dn2_need_value "$@"; rounds=$2; shift 2 ;;
        -o|--output) dn2_need_value "$@"; output=$2; shift 2 ;;
        -q|--quiet) quiet=1; shift ;;
        -h|--help) dn2_usage; exit 0 ;;
        *) usage_error "unknown argument: $1" ;;
    esac
done
dn2_want_uint --vt-quantum "$quantum"
dn2_want_uint --vt-lookahead "$lookahead"
dn2_want_uint --idle "$idle_s"
seen=" "
for t in $transports; do
    case $t in
        udp|shm) ;;
        *) usage_error "--vt-sync: udp and/or shm (comma-separated), not '$t'" ;;
    esac
    [[ $seen == *" $t "* ]] && usage_error "--vt-sync: '$t' twice"
    seen+="$t "
done
[ -n "${transports// /}" ] || usage_error "--vt-sync: udp and/or shm"
read -r -a transports <<< "$transports"
for n in $nodes_list; do
    dn2_want_uint --nodes "$n"
    [ "$n" -ge 2 ] && [ "$n" -le 64 ] || usage_error "--nodes: sizes 2..64"
done
[ -n "$quick" ] && [ "$nodes_list" = "2 4 8" ] && nodes_list="2 4"
rounds=${rounds:-$([ -n "$quick" ] && echo 50 || echo 200)}
dn2_want_uint --rounds "$rounds"
progress() { [ -n "$quiet" ] || printf '[bench-vt] %s\n' "$*" >&2; }

# ----------------------------------------------------------------- build
exe=$DN2_TOP/build/tests/cluster/dn2-vt-exchange
flock /tmp/dn2-build.lock meson compile -C "$DN2_TOP/build" dn2-vt-exchange dn2-up dn2-switch > /dev/null 2>&1 \
    || die "building dn2-vt-exchange, dn2-up, dn2-switch failed (meson compile -C build)"
bash "$here/export-guest.sh" "$exe" > /dev/null || die "could not put the guest programs into the image"
switch_bin=${DN2_SWITCH:-$DN2_TOP/build/fabric/dn2-switch}

# shellcheck disable=SC2016   # expanded in the guest
node_cmd='insmod /opt/dn2/dimmnet2.ko && dn2-up -q > /dev/null || { echo "board not up"; exit 1; }
mark() { [ "$DN2_NODE" = 0 ] && echo "VT-MARK $1 $(cut -d" " -f1 /proc/uptime)"; return 0; }
dn2-vt-exchange -q -k 1 > /dev/null || exit 1
mark idle-start
sleep '"$idle_s"'
mark idle-end
dn2-vt-exchange -q -k 4 -r '"$rounds"' > /tmp/busy || { cat /tmp/busy; exit 1; }
mark busy-end
[ "$DN2_NODE" = 0 ] && awk "{ s += \$(NF - 1) } END { printf \"VT-BUSY-NS %d\\n\", s }" /tmp/busy
exit 0'

now() { echo "${EPOCHREALTIME}"; }
# sync_count RUNDIR: reports + grants so far (the switch's --stats)
sync_count() {
    local port
    port=$(cat "$1/switch.port" 2> /dev/null) || { echo 0; return; }
    timeout 5 "$switch_bin" --stats "127.0.0.1:$port" 2> /dev/null |
        sed -n 's/.*reports=\([0-9]*\) grants=\([0-9]*\).*/\1 \2/p' | awk '{ print $1 + $2 } END { if (!NR) print 0 }'
}

# run N MODE (udp, shm: synchronised over that transport; nosync): one
# cluster in build/cluster/bench-vt-N-MODE; sets r_boot r_idle_wall
# r_idle_virt r_busy_wall r_busy_virt r_idle_sync r_busy_sync (or returns 1)
run() {
    local n=$1 mode=$2 name rundir opts=() pid log t_is t_ie t_be c_is c_ie c_be v_is v_ie v_be line
    name=bench-vt-$n-$mode
    rundir=$DN2_TOP/build/cluster/$name
    if [ "$mode" != nosync ]; then
        opts=(--virtual-time --vt-sync "$mode" --vt-lookahead "$lookahead")
        [ "$quantum" -gt 0 ] && opts+=(--vt-quantum "$quantum")
    else
        opts=(--no-vt-sync)
    fi
    rm -rf "$rundir"
    bash "$here/cluster.sh" -q "${opts[@]}" -n "$n" --name "$name" -b 1800 -t 3600 -r "$node_cmd" \
        > "$DN2_TOP/build/cluster/$name.stdout" 2> "$DN2_TOP/build/cluster/$name.stderr" &
    pid=$!
    log=$rundir/node0.log
    t_is= t_ie= t_be=
    while kill -0 "$pid" 2> /dev/null; do
        if [ -z "$t_is" ] && grep -aq '^VT-MARK idle-start' "$log" 2> /dev/null; then t_is=$(now); c_is=$(sync_count "$rundir"); fi
        if [ -z "$t_ie" ] && grep -aq '^VT-MARK idle-end' "$log" 2> /dev/null; then t_ie=$(now); c_ie=$(sync_count "$rundir"); fi
        if [ -z "$t_be" ] && grep -aq '^VT-MARK busy-end' "$log" 2> /dev/null; then t_be=$(now); c_be=$(sync_count "$rundir"); fi
        sleep 0.05
    done
    wait "$pid" || { progress "$n nodes, $mode: cluster.sh failed (build/cluster/$name.stderr)"; return 1; }
    [ -n "$t_is" ] && [ -n "$t_ie" ] && [ -n "$t_be" ] || { progress "$n nodes, $mode: marks missing in $log"; return 1; }
    v_is=$(sed -n 's/^node0| VT-MARK idle-start //p' "$DN2_TOP/build/cluster/$name.stdout" | tr -d '\r')
    v_ie=$(sed -n 's/^node0| VT-MARK idle-end //p' "$DN2_TOP/build/cluster/$name.stdout" | tr -d '\r')
    r_busy_virt=$(sed -n 's/^node0| VT-BUSY-NS //p' "$DN2_TOP/build/cluster/$name.stdout" | tr -d '\r')
    r_boot=$(sed -n 's/^rank_table_s=//p' "$rundir/timings")
    r_idle_wall=$(awk -v a="$t_is" -v b="$t_ie" 'BEGIN { print b - a }')
    r_busy_wall=$(awk -v a="$t_ie" -v b="$t_be" 'BEGIN { print b - a }')
    r_idle_virt=$(awk -v a="$v_is" -v b="$v_ie" 'BEGIN { print b - a }')
    r_busy_virt=$(awk -v a="${r_busy_virt:-0}" 'BEGIN { print a / 1e9 }')
    r_idle_sync=$(awk -v a="$c_is" -v b="$c_ie" -v v="$r_idle_virt" 'BEGIN { print (v > 0 ? (b - a) / v : 0) }')
    r_busy_sync=$(awk -v a="$c_ie" -v b="$c_be" -v v="$r_busy_virt" 'BEGIN { print (v > 0 ? (b - a) / v : 0) }')
}

ratio() { awk -v w="$1" -v v="$2" 'BEGIN { if (v > 0) printf "%.1f", w / v; else printf "-" }'; }
# rel A B: B / A to two decimals ("-" when either is missing)
rel() { awk -v a="$1" -v b="$2" 'BEGIN { if (a + 0 > 0 && b != "-" && b != "") printf "%.2f", b / a; else printf "-" }'; }

status=0
rows=()
cmp_rows=()
main=${transports[0]}
for n in $nodes_list; do
    declare -A R=()
    for mode in "${transports[@]}" nosync; do
        case $mode in
            nosync) progress "$n nodes, not synchronised ..." ;;
            *) progress "$n nodes, synchronised over $mode ..." ;;
        esac
        if run "$n" "$mode"; then
            R[$mode.boot]=$r_boot
            R[$mode.idle]=$(ratio "$r_idle_wall" "$r_idle_virt")
            R[$mode.busy]=$(ratio "$r_busy_wall" "$r_busy_virt")
            R[$mode.bvirt]=$r_busy_virt
            if [ "$mode" = udp ]; then       # the sync domain sends no datagram
                R[$mode.isync]=$(printf '%.0f' "$r_idle_sync")
                R[$mode.bsync]=$(printf '%.0f' "$r_busy_sync")
            fi
        else
            status=1
            R[$mode.failed]=1
        fi
    done
    rows+=("$(printf '%5s  %9s %9s  %9s %9s  %12s %12s  %8s %8s' "$n" \
        "${R[$main.idle]:--}" "${R[nosync.idle]:--}" "${R[$main.busy]:--}" "${R[nosync.busy]:--}" \
        "${R[$main.isync]:--}" "${R[$main.bsync]:--}" "${R[$main.boot]:--}" "${R[nosync.boot]:--}")")
    if [ "${#transports[@]}" = 2 ]; then
        same=-
        if [ -z "${R[udp.failed]:-}" ] && [ -z "${R[shm.failed]:-}" ]; then
            # deterministic: the two transports must give the same guests' runs
            if python3 "$here/vt-compare.py" "$DN2_TOP/build/cluster/bench-vt-$n-udp" \
                "$DN2_TOP/build/cluster/bench-vt-$n-shm" "$n" > "$DN2_TOP/build/cluster/bench-vt-$n.compare" 2>&1; then
                same=identical
            else
                same=DIFFER
                progress "$n nodes: udp and shm differ: $(head -1 "$DN2_TOP/build/cluster/bench-vt-$n.compare")"
            fi
        fi
        cmp_rows+=("$(printf '%5s  %8s %8s %7s  %8s %8s %7s  %8s %8s  %s' "$n" \
            "${R[udp.idle]:--}" "${R[shm.idle]:--}" "$(rel "${R[udp.idle]:-}" "${R[shm.idle]:-}")" \
            "${R[udp.busy]:--}" "${R[shm.busy]:--}" "$(rel "${R[udp.busy]:-}" "${R[shm.busy]:-}")" \
            "${R[udp.boot]:--}" "${R[shm.boot]:--}" "$same")")
    fi
    unset R
done

{
    echo "Lock-step virtual time: cost (scripts/bench-vt.sh $args)"
    echo "host: $(nproc) CPUs ($(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)), load average $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "guests: TCG -icount shift=0, 1 vCPU, 256 MiB; lookahead $lookahead ns, quantum $([ "$quantum" -gt 0 ] && echo "$quantum ns" || echo "exact"); idle = sleep $idle_s, busy = dn2-vt-exchange -k 4 -r $rounds"
    echo "wall/virt: wall seconds per virtual second (sync = --virtual-time --vt-sync $main, free = --no-vt-sync);"
    echo "sync dgrams/virt s: VT_REPORT + VT_GRANT through the switch per virtual second (none with shm); boot: wall s until every node had its link and the rank table"
    echo
    printf '%5s  %9s %9s  %9s %9s  %12s %12s  %8s %8s\n' nodes "idle" "idle" "busy" "busy" "sync dgrams" "sync dgrams" "boot s" "boot s"
    printf '%5s  %9s %9s  %9s %9s  %12s %12s  %8s %8s\n' "" "sync" "free" "sync" "free" "/virt s idle" "/virt s busy" "sync" "free"
    printf '%s\n' "${rows[@]}"
    if [ "${#cmp_rows[@]}" -gt 0 ]; then
        echo
        echo "The two transports of the lock-step, same guests and command, run one after the other:"
        echo "wall/virt over udp (the switch) and shm (the sync domain), shm/udp = their ratio;"
        echo "runs: the two runs' outputs and pcaps (scripts/vt-compare.py), identical when deterministic"
        echo
        printf '%5s  %8s %8s %7s  %8s %8s %7s  %8s %8s  %s\n' nodes "idle" "idle" "" "busy" "busy" "" "boot s" "boot s" ""
        printf '%5s  %8s %8s %7s  %8s %8s %7s  %8s %8s  %s\n' "" "udp" "shm" "shm/udp" "udp" "shm" "shm/udp" "udp" "shm" "runs"
        printf '%s\n' "${cmp_rows[@]}"
    fi
} | tee ${output:+"$output"}
exit "$status"
