#!/usr/bin/env bash
# TAP: dn2-pmix-server (linux-guest/pmi/dn2-pmix-server.c) on the host, no
# guests: the job server (scripts/pmi-server.py) on 127.0.0.1, two "nodes"
# each with its own PMIx server, 2 ranks each of the host's Open MPI (the
# same Debian release as the MPI image), started with the environment the
# servers wrote, the way mpirun.sh --pmi pmix starts them in the guests.
#   1. mpi-check on 2 x 2 ranks over TCP (fences with data between the
#      nodes through the job server): every check passes
#   2. MPI_Abort(7) on rank 1: the server's abort command tells the job
#      server as rank 1, which records "rank 1 called PMI_Abort (exit
#      code 7)"; rank 1 exits 7
# Environment: DN2_PMIX_SERVER, DN2_MPI_CHECK, DN2_MPI_FAIL (meson sets them).
set -uo pipefail
top=$(cd "$(dirname "$(realpath "$0")")/../.." && pwd)
. "$top/tests/tap/tap-lib.sh"
srv=${DN2_PMIX_SERVER:-$top/build/linux-guest/pmi/dn2-pmix-server}
check=${DN2_MPI_CHECK:-$top/build/tests/mpi/mpi-check}
failp=${DN2_MPI_FAIL:-$top/build/tests/mpi/mpi-fail}
[ -x "$srv" ] || tap_skip_all "$(tap_missing dn2-pmix-server libpmix-dev) (then meson compile -C build)"
[ -x "$check" ] && [ -x "$failp" ] || tap_skip_all "$(tap_missing mpicc libopenmpi-dev)"
command -v curl > /dev/null || tap_skip_all "$(tap_missing curl curl)"
tap_plan 4

w=$(mktemp -d /tmp/dn2-pmix-test.XXXXXX)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2> /dev/null; done; wait 2> /dev/null; rm -rf "$w"; }
trap cleanup EXIT
mkdir -p "$w/run" "$w/www" "$w/exp" "$w/tok"
(umask 077; head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$w/secret")
python3 "$top/scripts/pmi-server.py" --rundir "$w/run" --www "$w/www" --export "$w/exp" --nodes 2 \
    --jobid T --secret-file "$w/secret" --token-dir "$w/tok" --port 0 --ready "$w/ready" > "$w/server.log" 2>&1 &
pids+=($!)
i=0; while [ ! -s "$w/ready" ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done
[ -s "$w/ready" ] || bail "the job server did not start: $(tail -1 "$w/server.log")"
url=127.0.0.1:$(cat "$w/ready")
tok() { curl -sf "http://$url/n/$1/$(cat "$w/tok/node$1")/pmi/token?job=$2&rank=$3"; }

# job JOB PROGRAM ARGS: 2 nodes x 2 ranks; rank R's output in $w/JOB.R,
# its status in $w/JOB.R.rc
job() {
    local j=$1 n l r spids=() rpids=()
    shift
    for n in 0 1; do
        # the abort command, as mpirun.sh writes it for the node
        { echo 'case $1 in'
          for l in 0 1; do r=$((n * 2 + l)); echo "$r) t=$(tok $n "T.$j" $r) ;;"; done
          echo '*) exit 1 ;; esac'
          echo "exec curl -sf -o /dev/null \"http://$url/pmi/abort?job=T.$j&rank=\$1&token=\$t&code=\$2&msg=\$3\""
        } > "$w/$j.abort$n.sh"
        ( export DN2_PMI_URL=$url DN2_PMI_JOB=T.$j.pmix DN2_PMI_RANK=$n DN2_PMI_SIZE=2 \
                 DN2_PMI_TOKEN=$(tok $n "T.$j.pmix" $n)
          exec "$srv" -n $n -N 2 -l 2 -j "T.$j" -d "$w/$j.n$n" -A "$w/$j.abort$n.sh" ) > "$w/$j.server$n" 2>&1 &
        spids+=($!); pids+=($!)
    done
    for n in 0 1; do
        i=0; while [ ! -e "$w/$j.n$n/ready" ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done
    done
    for r in 0 1 2 3; do
        n=$((r / 2))
        # (vader, shared memory, is left out: the two "nodes" are one host)
        ( while IFS= read -r e; do export "$e"; done < "$w/$j.n$n/rank-$r.env"
          export OMPI_MCA_schizo=ompi OMPI_MCA_ess=pmi OMPI_MCA_pmix=ext3x OMPI_MCA_pml=ob1 \
                 OMPI_MCA_btl=tcp,self OMPI_MCA_btl_tcp_if_include=127.0.0.0/8 OMPI_MCA_osc=pt2pt \
                 OMPI_MCA_mpi_yield_when_idle=1 "OMPI_MCA_mtl=^ofi" OMPI_MCA_hwloc_base_binding_policy=none
          "$@" > "$w/$j.$r" 2>&1 &
          echo $! > "$w/$j.$r.pid"; wait $!; echo $? > "$w/$j.$r.rc" ) &
        rpids+=($!)
    done
    # an aborted job's other ranks are ended, as mpirun.sh's node script
    # does (the job server answers 409 to them)
    while [ "$(jobs -rp | grep -cxF -f <(printf '%s\n' "${rpids[@]}"))" -gt 0 ]; do
        if [ -s "$w/run/pmi-abort" ]; then
            for r in 0 1 2 3; do kill -KILL "$(cat "$w/$j.$r.pid" 2> /dev/null)" 2> /dev/null; done
        fi
        sleep 0.5
    done
    wait "${rpids[@]}"
    for p in "${spids[@]}"; do kill "$p" 2> /dev/null; done
}

job check "$check"
bad=$(cat "$w"/check.?.rc | grep -vc '^0$')
pts=$(grep -c '^ok ' "$w/check.0")
if [ "$bad" = 0 ] && [ "$pts" -gt 0 ] && ! grep -q '^not ok' "$w/check.0" && grep -q '^# 4 ranks' "$w/check.0"; then
    ok "mpi-check on 2 nodes x 2 ranks through the PMIx servers: $pts checks passed"
else
    not_ok "mpi-check: $bad ranks failed, $pts checks"; tail -5 "$w"/check.0 "$w"/check.server? | diag
fi
check "every rank of the mpi-check job exited 0" test "$(cat "$w"/check.?.rc | tr -d '\n')" = 0000

job fail "$failp" abort
if grep -q 'rank 1 called PMI_Abort (exit code 7)' "$w/run/pmi-abort" 2> /dev/null; then
    ok "MPI_Abort(7) on rank 1 reached the job server as rank 1's abort: $(cat "$w/run/pmi-abort")"
else
    not_ok "MPI_Abort: the job server has no abort"; tail -5 "$w"/fail.1 "$w"/fail.server? | diag
fi
result "$([ "$(cat "$w/fail.1.rc")" = 7 ]; echo $?)" "rank 1 exited with MPI_Abort's code 7 (got $(cat "$w/fail.1.rc"))"
tap_done
