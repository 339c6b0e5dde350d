#!/usr/bin/env bash
# Fagus's two DSM benchmarks on libdn2dsm (docs/dsm.md), the boards and TCP
# between the same guests in one run, printed as the paper's tables with
# its figures beside them:
#   1. barrier-synchronisation throughput, 2 nodes, 1 KiB .. 512 KiB moved
#      at a barrier (the paper: about 51 MB/s RHiNET, 11 MB/s 100BASE);
#   2. LU decomposition (Doolittle, no pivoting) on 1, 2 and 4 nodes.
#
#   scripts/bench-dsm.sh [options]
#
#   --size N          LU matrix order (default 256: TCG is too slow for the
#                     paper's 2048 in a short run; --size 2048 is the paper's)
#   --sizes LIST      barrier sizes in KiB (default 1,2,4,...,512)
#   --iters N         barrier iterations per size (default 10)
#   --nodes LIST      LU node counts (default 1,2,4)
#   --only WHAT       barrier or lu (default both)
#   --no-tcp          the boards only
#   --virtual-time    lock-step virtual time (cluster.sh --virtual-time):
#                     the boards only (the guests' Ethernet delivers at
#                     host times, so it has no virtual-time figure)
#   --timing MODEL    with --virtual-time: the boards' timing model (thesis)
#   -t, --timeout S   seconds per cluster run (default 1200)
#   -b, --boot-timeout S  seconds for the nodes to boot (cluster.sh -b;
#                     default cluster.sh's 300, with --virtual-time the
#                     run's timeout: a boot under -icount on a loaded host
#                     can take longer than 300 s before its first line)
#   -o, --output F    the report (default build/bench/dsm-<date>.txt)
#
# Each cluster run boots the nodes once (scripts/cluster.sh --ethernet) and
# runs dsm-bench over the boards, then over TCP on eth1.
# Exit status: 0 every table measured; 1 a run failed; 2 a usage error.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"

lu_n=256
sizes=1,2,4,8,16,32,64,128,256,512
iters=10
lu_nodes=1,2,4
only=
tcp=1
vt=()
timing=
timeout_s=1200
boot_s=
output=
dn2_split_opts "$@"
set -- "${DN2_ARGS[@]}"
while [ $# -gt 0 ]; do
    case $1 in
        --size) dn2_need_value "$@"; dn2_want_uint "$1" "$2"; lu_n=$2; shift 2 ;;
        --sizes) dn2_need_value "$@"; sizes=$2; shift 2 ;;
        --iters) dn2_need_value "$@"; dn2_want_uint "$1" "$2"; iters=$2; shift 2 ;;
        --nodes) dn2_need_value "$@"; lu_nodes=$2; shift 2 ;;
        --only) dn2_need_value "$@"; only=$2; shift 2 ;;
        --no-tcp) tcp=; shift ;;
        --virtual-time) vt=(--virtual-time); shift ;;
        --timing) dn2_need_value "$@"; timing=$2; shift 2 ;;
        -t|--timeout) dn2_need_value "$@"; dn2_want_uint "$1" "$2"; timeout_s=$2; shift 2 ;;
        -b|--boot-timeout) dn2_need_value "$@"; dn2_want_uint "$1" "$2"; boot_s=$2; shift 2 ;;
        -o|--output) dn2_need_value "$@"; output=$2; shift 2 ;;
        -h|--help) dn2_usage; exit 0 ;;
        *) usage_error "unknown argument: $1" ;;
    esac
done
case $only in ''|barrier|lu) ;; *) usage_error "--only: barrier or lu, not '$only'" ;; esac
[[ $sizes =~ ^[0-9]+(,[0-9]+)*$ ]] || usage_error "--sizes: a comma list of KiB"
[[ $lu_nodes =~ ^[0-9]+(,[0-9]+)*$ ]] || usage_error "--nodes: a comma list of node counts"
cl_opts=(--ethernet)
if [ -n "$timing" ]; then
    [ "$timing" = thesis ] || usage_error "--timing: the one model is thesis, not '$timing'"
    [ ${#vt[@]} -gt 0 ] || usage_error "--timing goes with --virtual-time"
    cl_opts=(--device-opts "timing=$timing" --vt-lookahead 665 --vt-insn-ps 381)
fi
if [ ${#vt[@]} -gt 0 ]; then
    tcp=
    [ -n "$timing" ] || cl_opts=()
    cl_opts+=("${vt[@]}")
    boot_s=${boot_s:-$timeout_s}
fi
[ -z "$boot_s" ] || cl_opts+=(-b "$boot_s")

meson compile -C "$DN2_TOP/build" linux-guest/dsm/dsm-bench linux-guest/dn2-up >/dev/null \
    || die "meson compile failed"
bash "$DN2_TOP/scripts/export-guest.sh" "$DN2_TOP/build/linux-guest/dsm/dsm-bench" >/dev/null \
    || die "export-guest.sh failed"
mkdir -p "$DN2_TOP/build/bench"
output=${output:-$DN2_TOP/build/bench/dsm-$(date +%Y%m%d-%H%M%S).txt}
raw=$output.raw
: > "$raw"
load0=$(cut -d' ' -f1-3 /proc/loadavg)
tps="board${tcp:+ tcp}"
status=0

# run NODES ARGS: dsm-bench ARGS on every node, once per transport
run() {
    local n=$1 args=$2 cmd="insmod /opt/dn2/dimmnet2.ko && dn2-up -q >/dev/null" tp port=7350
    for tp in $tps; do
        cmd+="; DSM_TCP_PORT=$port dsm-bench --tp $tp $args"
        port=$((port + 20))
    done
    log "cluster of $n: dsm-bench $args over: $tps"
    bash "$DN2_TOP/scripts/cluster.sh" -n "$n" -q -t "$timeout_s" --name "dsm-$n" \
        "${cl_opts[@]}" -r "$cmd" >> "$raw" 2>&1 || status=1
}

if [ "$only" != lu ]; then
    run 2 "barrier --sizes $sizes --iters $iters"
fi
if [ "$only" != barrier ]; then
    for n in ${lu_nodes//,/ }; do
        run "$n" "lu --size $lu_n"
    done
fi

{
    echo "DSM benchmarks (libdn2dsm, docs/dsm.md): $tps; ${vt[*]:-wall clock} ${timing:+timing=$timing}"
    echo "host load (1, 5, 15 min) at the start: $load0; at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
    if [ "$only" != lu ]; then
        echo
        echo "Barrier-synchronisation throughput, 2 nodes (MB/s = 10^6 B/s; us per barrier pair)"
        echo "paper (Fagus, 2 nodes, 1-512 KB): RHiNET/NI-NPC about 51 MB/s, 100BASE Ethernet about 11 MB/s"
        sed -n 's/^node0| //p' "$raw" | awk -v tps="$tps" '
            /^BAR / { v[$2, $3] = $5; us[$2, $3] = $4; if (!($3 in seen)) { seen[$3] = 1; ks[++nk] = $3 } }
            END {
                nt = split(tps, t, " ")
                printf "%8s", "KiB"
                for (i = 1; i <= nt; i++) printf " %12s %10s", t[i] " MB/s", "us"
                if (nt == 2) printf " %10s", "board/tcp"
                printf "\n"
                for (j = 1; j <= nk; j++) {
                    k = ks[j]; printf "%8s", k
                    for (i = 1; i <= nt; i++) printf " %12s %10s", v[t[i], k], us[t[i], k]
                    if (nt == 2 && v["tcp", k] > 0) printf " %9.2fx", v["board", k] / v["tcp", k]
                    printf "\n"
                }
            }'
    fi
    if [ "$only" != barrier ]; then
        echo
        echo "LU decomposition (Doolittle, no pivoting), n = $lu_n, seconds"
        echo "paper (2048 x 2048, 1-4 nodes): Fagus over RHiNET slower than over 100BASE at every node count (Fig. 6)"
        sed -n 's/^node0| //p' "$raw" | awk -v tps="$tps" '
            # one row per cluster run (a node count given twice is two rows)
            /^LU / { c[$2]++; s[$2, c[$2]] = $8; ns[c[$2]] = $4; if (c[$2] > nn) nn = c[$2] }
            /^LU-CHECK / && /DIFFERS/ { bad = bad " " $2 }
            END {
                nt = split(tps, t, " ")
                printf "%6s", "nodes"
                for (i = 1; i <= nt; i++) printf " %10s", t[i] " s"
                if (nt == 2) printf " %10s", "tcp/board"
                printf "\n"
                for (j = 1; j <= nn; j++) {
                    printf "%6s", ns[j]
                    for (i = 1; i <= nt; i++) printf " %10s", s[t[i], j]
                    if (nt == 2 && s["board", j] > 0) printf " %9.2fx", s["tcp", j] / s["board", j]
                    printf "\n"
                }
                if (bad != "") print "LU result differs from the sequential run:" bad
            }'
    fi
    echo
    echo "How the library waited (rank 0; wait_us wall, cpu_us this thread's CPU during the waits)"
    sed -n 's/^node0| //p' "$raw" | grep '^WAIT' | sed 's/^WAIT /  /'
    grep -h 'BAR-ERROR\|dsm-bench:\|dsm board:\|dsm tcp:' "$raw" | head -10
} | tee "$output"
grep -q 'BAR-ERROR\|DIFFERS\|dsm-bench:' "$raw" && status=1
exit $status
