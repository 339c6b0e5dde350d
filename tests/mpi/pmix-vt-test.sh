#!/usr/bin/env bash
# TAP: mpirun.sh --pmi pmix under lock-step virtual time (--virtual-time,
# docs/mpi.md): every node's dn2-pmix-server carries its fences over the
# node's PMI agent (dn2-pmi-agent, PMI over the boards).  The same job run
# twice, from scratch, on 2 nodes x 1 rank over the boards: each rank
# prints its PMIx namespace and rank (the variables its node's server gave
# it) and runs mpi-check 1024.
#   1, 2. runs A and B: exit 0, every check of mpi-check passed, the ranks
#         had the PMIx server's PMIX_NAMESPACE and PMIX_RANK
#   3.    the mpirun.sh output (every rank's lines) byte-identical in A and B
#   4.    every node's output (build/cluster/NAME/nodeI.out: the node's
#         script, the ranks' lines, their start and end in the guest's
#         clock) byte-identical in A and B
# Skips (not in CI) when mpi-check, the provider or the PMIx server is not
# built.  Environment: DN2_MPI_CHECK (meson sets it), DN2_MPI_TIMEOUT
# (per run, 900).
set -uo pipefail
top=$(cd "$(dirname "$(realpath "$0")")/../.." && pwd)
. "$top/tests/tap/tap-lib.sh"
mpirun=$top/scripts/mpirun.sh
out=$top/build/pmix-vt-test
tmo=${DN2_MPI_TIMEOUT:-900}
check_p=${DN2_MPI_CHECK:-$top/build/tests/mpi/mpi-check}
[ -x "$top/build/linux-guest/pmi/dn2-pmix-server" ] ||
    tap_skip_all "$(tap_missing dn2-pmix-server libpmix-dev) (then meson compile -C build)"
[ -x "$top/build/linux-guest/pmi/dn2-pmi-agent" ] || tap_skip_all "dn2-pmi-agent is not built (meson compile -C build)"
[ -x "$check_p" ] || tap_skip_all "$(tap_missing mpicc libopenmpi-dev)"
[ -n "${DN2_FI_PROVIDER:-}" ] || [ -n "$(find "$top/build" -name libdimmnet2-fi.so -type f 2> /dev/null | head -1)" ] ||
    tap_skip_all "the libfabric provider is not built: $(tap_missing libfabric libfabric-dev)"
tap_plan 4
rm -rf "$out"; mkdir -p "$out"

# run X: the job, run directory build/cluster/pmixvt-X
run() {
    local x=$1
    # shellcheck disable=SC2016   # expanded in the guest
    # --vt-quantum 100000: the faster deterministic mode (docs/virtual-time.md,
    # "Lookahead and quantum"); what is checked is that the runs agree.
    bash "$mpirun" -q --virtual-time --vt-quantum 100000 --pmi pmix -np 2 --name "pmixvt-$x" -t "$tmo" --file "$check_p" \
        --job 'board:echo "pmix namespace $PMIX_NAMESPACE rank $PMIX_RANK"; exec ./mpi-check 1024' \
        > "$out/$x.out" 2> "$out/$x.err"
    rc=$?
    local nok
    nok=$(grep -c '^\[0\] ok ' "$out/$x.out")
    if [ "$rc" = 0 ] && [ "$nok" -ge 10 ] && ! grep -q '^\[[01]\] not ok' "$out/$x.out" &&
       grep -q '^\[0\] pmix namespace dn2.mpi1 rank 0$' "$out/$x.out" &&
       grep -q '^\[1\] pmix namespace dn2.mpi1 rank 1$' "$out/$x.out"; then
        ok "run $x: 2 ranks through their nodes' PMIx servers in virtual time, mpi-check 1024: $nok checks passed"
    else
        not_ok "run $x: exit $rc, $nok checks"; tail -n 20 "$out/$x.out" "$out/$x.err" | diag
    fi
}
run a
run b
if [ -s "$out/a.out" ] && cmp -s "$out/a.out" "$out/b.out"; then
    ok "the ranks' output byte-identical in A and B ($(wc -l < "$out/a.out") lines)"
else
    not_ok "the ranks' output differs between A and B"; diff "$out/a.out" "$out/b.out" | head -6 | diag
fi
diffs=
for i in 0 1; do
    a=$top/build/cluster/pmixvt-a/node$i.out b=$top/build/cluster/pmixvt-b/node$i.out
    if [ ! -s "$a" ] || ! cmp -s "$a" "$b"; then
        diffs+=" node$i"; diff "$a" "$b" 2>&1 | head -4 | diag
    fi
done
result "$([ -z "$diffs" ]; echo $?)" "every node's output byte-identical in A and B${diffs:+ (differ:$diffs)}"
tap_done
