#!/usr/bin/env bash
# TAP: jobs that fail under mpirun.sh --pmi pmix (dn2-pmix-server on every
# node, docs/mpi.md), in guests: each ends the job with a clear message and
# a non-zero exit status, and none hangs (a hang would end in mpirun.sh's
# own timeout, exit 124, which no point below accepts).
#   1. one cluster of 2 nodes, three jobs one after the other
#      (--keep-going, over TCP):
#      a. mpi-fail abort: rank 1 calls MPI_Abort(7) (PMIx_Abort to its
#         node's server, which tells the job server as rank 1): the job's
#         status is 7, "MPI job aborted: rank 1 called PMI_Abort (exit
#         code 7)", rank 0 ended as a rank of an aborted job
#      b. mpi-fail exit: rank 1 exits 3 without MPI_Finalize: status 3,
#         "rank 1 exited with status 3", rank 0 ended likewise
#      c. mpi-check: the same guests run the next job to the end (nothing
#         of the failed jobs is left in the way)
#      the run's status is the first failure's, 7
#   2. servers that cannot reach the job server (-x DN2_PMIX_URL names a
#      port where nothing listens): no rank starts, the job ends with
#      status 1 and "the PMIx server failed: ... cannot reach the job
#      server"
# Environment: DN2_MPI_CHECK, DN2_MPI_FAIL (meson sets them),
# DN2_MPI_TIMEOUT (per run, 600).
set -uo pipefail
top=$(cd "$(dirname "$(realpath "$0")")/../.." && pwd)
. "$top/tests/tap/tap-lib.sh"
mpirun=$top/scripts/mpirun.sh
out=$top/build/pmix-fail-test
tmo=${DN2_MPI_TIMEOUT:-600}
check_p=${DN2_MPI_CHECK:-$top/build/tests/mpi/mpi-check}
fail_p=${DN2_MPI_FAIL:-$top/build/tests/mpi/mpi-fail}
[ -x "$top/build/linux-guest/pmi/dn2-pmix-server" ] ||
    tap_skip_all "$(tap_missing dn2-pmix-server libpmix-dev) (then meson compile -C build)"
[ -x "$check_p" ] && [ -x "$fail_p" ] || tap_skip_all "$(tap_missing mpicc libopenmpi-dev)"
tap_plan 9
rm -rf "$out"; mkdir -p "$out"

# run NAME ARGS...: mpirun.sh --pmi pmix; stdout, stderr in $out/NAME.out,
# .err, status in $rc, the run's result.json in $out/NAME.json
run() {
    local n=$1
    shift
    bash "$mpirun" --pmi pmix -q -t "$tmo" --name "pmixfail-$n" "$@" > "$out/$n.out" 2> "$out/$n.err"
    rc=$?
    cp "$top/build/cluster/pmixfail-$n/result.json" "$out/$n.json" 2> /dev/null
}
show() { tail -n 15 "$out/$1.out" "$out/$1.err" | diag; }
# status NAME JOB RANK: that rank's status in the run's result.json
status() {
    jq -r --argjson j "$2" --argjson r "$3" \
        '.ranks[] | select(.job == $j and .rank == $r) | .status' "$out/$1.json" 2> /dev/null
}

# 1. one cluster, three jobs
run jobs -np 2 --net tcp --keep-going --file "$fail_p" --file "$check_p" \
    --job "tcp:./mpi-fail abort" --job "tcp:./mpi-fail exit" --job "tcp:./mpi-check 65536"
if grep -q '^\[1\.1\] rank 1 waiting' "$out/jobs.out" && grep -q '^\[1\.0\] rank 0 waiting' "$out/jobs.out" &&
   grep -q 'MPI job aborted: rank 1 called PMI_Abort (exit code 7)' "$out/jobs.err" &&
   [ "$(status jobs 1 1)" = 7 ]; then
    ok "MPI_Abort(7) on rank 1 through its PMIx server: rank 1's status 7, \"MPI job aborted\" with rank and code"
else
    not_ok "MPI_Abort through PMIx: exit $rc"; show jobs
fi
check "MPI_Abort: rank 0 was ended as a rank of the aborted job" \
    grep -q '^\[1\.0\] mpirun: rank 0 ended: the job was aborted' "$out/jobs.out"
if grep -q '^\[2\.1\] mpirun: rank 1 exited with status 3' "$out/jobs.out" &&
   [ "$(status jobs 2 1)" = 3 ]; then
    ok "a rank exiting 3 without MPI_Finalize: its status 3, shown"
else
    not_ok "a rank exiting early: exit $rc"; show jobs
fi
check "the early exit: rank 0 was ended as a rank of the failed job" \
    grep -q '^\[2\.0\] mpirun: rank 0 ended: the job was aborted' "$out/jobs.out"
pts=$(grep -c '^\[3\.0\] ok ' "$out/jobs.out")
if [ "$pts" -gt 0 ] && ! grep -q '^\[3\.[01]\] not ok' "$out/jobs.out" &&
   [ "$(status jobs 3 0)$(status jobs 3 1)" = 00 ]; then
    ok "the same guests then run mpi-check through new PMIx servers: $pts checks passed"
else
    not_ok "mpi-check after the failed jobs: $pts checks"; show jobs
fi
result "$([ "$rc" = 7 ]; echo $?)" "the run's exit status is the first failure's, 7 (got $rc)"

# 2. the servers cannot reach the job server (port 9 of the guest's own
# loopback: refused at once, asked again for about 60 s)
run unreach -np 2 --net tcp -x DN2_PMIX_URL=http://127.0.0.1:9 -- "$fail_p" abort
result "$([ "$rc" = 1 ]; echo $?)" "servers that cannot reach the job server: exit status 1 (got $rc)"
if grep -q 'the PMIx server failed: .*cannot reach the job server' "$out/unreach.out" "$out/unreach.err"; then
    ok "the reason is shown: $(grep -ho 'the PMIx server failed: .*' "$out/unreach.out" "$out/unreach.err" | head -1)"
else
    not_ok "no message naming the PMIx server"; show unreach
fi
check "no rank started" test "$(grep -c 'rank [01] waiting' "$out/unreach.out")" = 0
tap_done
