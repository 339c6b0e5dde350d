#!/usr/bin/env bash
# How long Open MPI's ranks take to start and to end through each process
# manager interface (docs/mpi.md, "PMIx: dn2-pmix-server"): for every
# cluster size, one cluster per interface (scripts/mpirun.sh --pmi pmix,
# --pmi pmi1) runs tests/mpi/mpi-init-time R times back to back (--job),
# and a table gives, per size, the median over the R jobs of the slowest
# rank's MPI_Init and MPI_Finalize (Open MPI's closing fence) and the
# ratios PMIx / PMI-1.  The guests' clocks measure inside each rank, so the
# boot is not in the figures.  Figures only: nothing here passes or fails
# on a timing.
#
#   scripts/bench-mpi-init.sh [--nodes 'LIST'] [--repeat R] [--ppn P]
#                             [--net board|tcp] [-o FILE] [-q]
#
#   --nodes 'LIST'  cluster sizes (default '2 4 8')
#   --repeat R      jobs per cluster (default 5)
#   --ppn P         ranks per node, 1 or 2 (default 1)
#   --net NET       the job's network (default board; tcp: the guests'
#                   Ethernet)
#   -o FILE         the table also into FILE
#   -q              no progress lines
#
# Exit status: 0 table printed; 1 a run failed (its output is named);
# 2 usage error.  Environment: as scripts/mpirun.sh; DN2_MPI_INIT_TIME
# (the program; default build/tests/mpi/mpi-init-time, compiled with mpicc
# when missing or older than its source).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"

nodes_list="2 4 8" repeat=5 ppn=1 net=board output="" quiet=""
dn2_split_opts "$@"
set -- "${DN2_ARGS[@]}"
while [ $# -gt 0 ]; do
    case $1 in
        --nodes) dn2_need_value "$@"; nodes_list=$2; shift 2 ;;
        --repeat) dn2_need_value "$@"; repeat=$2; shift 2 ;;
        --ppn) dn2_need_value "$@"; ppn=$2; shift 2 ;;
        --net) dn2_need_value "$@"; net=$2; shift 2 ;;
        -o|--output) dn2_need_value "$@"; output=$2; shift 2 ;;
        -q|--quiet) quiet=1; shift ;;
        -h|--help) dn2_usage; exit 0 ;;
        *) usage_error "unknown argument: $1" ;;
    esac
done
dn2_want_uint --repeat "$repeat"
[ "$repeat" -ge 1 ] || usage_error "--repeat $repeat: at least one job"
case $ppn in 1|2) ;; *) usage_error "--ppn $ppn: 1 or 2 ranks per node" ;; esac
case $net in board|tcp) ;; *) usage_error "--net $net: board or tcp" ;; esac
[ -n "$nodes_list" ] || usage_error "--nodes: no size given"
for n in $nodes_list; do
    dn2_want_uint --nodes "$n"
    if [ "$n" -lt 1 ] || [ "$n" -gt 64 ]; then usage_error "--nodes: $n is not 1..64"; fi
    [ $((n * ppn)) -ge 2 ] || usage_error "--nodes $n --ppn $ppn is one rank: a fence wants two"
done
say() { [ -n "$quiet" ] || log "$*"; }

prog=${DN2_MPI_INIT_TIME:-$DN2_TOP/build/tests/mpi/mpi-init-time}
if [ -z "${DN2_MPI_INIT_TIME:-}" ] && { [ ! -x "$prog" ] || [ "$DN2_TOP/tests/mpi/mpi-init-time.c" -nt "$prog" ]; }; then
    command -v mpicc > /dev/null || die "mpicc not found: run scripts/setup.sh (libopenmpi-dev)"
    mkdir -p "$(dirname "$prog")"
    mpicc -O2 -Wall -o "$prog" "$DN2_TOP/tests/mpi/mpi-init-time.c" || die "compiling mpi-init-time failed"
fi
[ -x "$prog" ] || die "$prog is not an executable"
work=$DN2_TOP/build/bench-mpi-init
mkdir -p "$work"

# job_figures FILE: one line per job, "INIT_US FINALIZE_US" of its slowest
# rank, from the "[J.R] init-time R SIZE INIT BARRIER FINALIZE" lines
job_figures() {
    sed -n 's/^\[\([0-9]*\)\.[0-9]*\] init-time [0-9]* [0-9]* \([0-9]*\) [0-9]* \([0-9]*\)$/\1 \2 \3/p' "$1" |
        awk '{ if ($2 > i[$1]) i[$1] = $2; if ($3 > f[$1]) f[$1] = $3; n[$1]++ }
             END { for (j in n) print j, i[j], f[j], n[j] }' | sort -n
}
# median: the median of the numbers on stdin
median() { sort -n | awk '{ v[NR] = $1 } END { if (!NR) print "?"; else if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

declare -A init fin
for n in $nodes_list; do
    ranks=$((n * ppn))
    for pmi in pmix pmi1; do
        name=bench-init-$n-$pmi
        jobs=()
        for ((r = 0; r < repeat; r++)); do jobs+=(--job "$net:./mpi-init-time"); done
        say "$n nodes x $ppn, --pmi $pmi: one cluster, $repeat jobs"
        if ! bash "$here/mpirun.sh" -q --name "$name" -N "$n" --ppn "$ppn" --pmi "$pmi" --file "$prog" \
            "${jobs[@]}" > "$work/$name.out" 2> "$work/$name.err"; then
            die "mpirun.sh --pmi $pmi on $n nodes failed: $work/$name.err ($(tail -1 "$work/$name.err"))"
        fi
        job_figures "$work/$name.out" > "$work/$name.jobs"
        got=$(awk -v r="$ranks" '$4 == r' "$work/$name.jobs" | wc -l)
        [ "$got" = "$repeat" ] || die "$name: $got of $repeat jobs printed every rank's figures ($work/$name.out)"
        init[$n.$pmi]=$(awk '{ print $2 / 1000 }' "$work/$name.jobs" | median | xargs printf '%.0f')
        fin[$n.$pmi]=$(awk '{ print $3 / 1000 }' "$work/$name.jobs" | median | xargs printf '%.0f')
    done
done

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "?" }'; }
{
    echo "MPI_Init and MPI_Finalize of the slowest rank, ms (median of $repeat jobs back to back in one"
    echo "cluster per interface; $ppn rank(s) per node; network $net)"
    echo
    echo "| nodes | ranks | MPI_Init PMIx | MPI_Init PMI-1 | PMIx / PMI-1 | MPI_Finalize PMIx | MPI_Finalize PMI-1 | PMIx / PMI-1 |"
    echo "|---|---|---|---|---|---|---|---|"
    for n in $nodes_list; do
        printf '| %s | %s | %s | %s | %s | %s | %s | %s |\n' "$n" $((n * ppn)) \
            "${init[$n.pmix]}" "${init[$n.pmi1]}" "$(ratio "${init[$n.pmix]}" "${init[$n.pmi1]}")" \
            "${fin[$n.pmix]}" "${fin[$n.pmi1]}" "$(ratio "${fin[$n.pmix]}" "${fin[$n.pmi1]}")"
    done
    echo
    echo "(scripts/bench-mpi-init.sh --nodes '$nodes_list' --repeat $repeat --ppn $ppn --net $net;"
    echo " the raw outputs: $work)"
} | if [ -n "$output" ]; then tee "$output"; else cat; fi
