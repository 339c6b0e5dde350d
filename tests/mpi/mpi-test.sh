#!/usr/bin/env bash
# TAP: Debian's unmodified Open MPI across DIMMnet-2 guests (docs/mpi.md),
# started by scripts/mpirun.sh (direct launch through libpmi-dn2).
#
#   tests/mpi/mpi-test.sh          (meson: suite 'mpi')
#
# Every run boots its own cluster with the MPI image and is checked here:
#   1. mpi-check (tests/mpi/mpi-check.c: point to point 0 B..4 MiB,
#      non-blocking, ANY_SOURCE/ANY_TAG, Probe, Ssend, barrier, bcast,
#      allreduce, alltoall, one-sided put/get) on 2 nodes, 4 nodes, and
#      2 nodes x 2 ranks, over TCP on the guest Ethernet; 1 node x 2 ranks
#      over shared memory; every TAP point of rank 0 is forwarded
#   2. NPopenmpi (netpipe-openmpi) on 2 nodes to completion, its curve
#      checked for every size up to the top one
#   3. hpcc (small problem) on 2 nodes: HPL's residual check PASSED, every
#      test of the suite run to "End of HPC Challenge tests"
#   4. mplrs (the MPI vertex enumerator) on 2 nodes x 2 ranks: the cube
#      -1 <= x,y,z <= 1 has exactly its 8 vertices
#   5. failures: MPI_Abort on one rank fails the job (exit 1, "MPI job
#      aborted", every rank's output shown) within the grace time; a rank
#      that exits 3 likewise; the user's arguments reach the program as
#      given (quotes, spaces, $, empty)
#   After every run: no process of the run is left.
#
# Board runs (--net board) join when the libfabric provider is built.
# Environment: DN2_MPI_CHECK, DN2_MPI_FAIL (the programs; default: built
# here with mpicc into build/tests/mpi/), DN2_MPI_TIMEOUT (per run, 600).
set -uo pipefail
top=$(cd "$(dirname "$(realpath "$0")")/../.." && pwd)
here=$top/tests/mpi
mpirun=$top/scripts/mpirun.sh
out=$top/build/mpi-test
mkdir -p "$out"
tmo=${DN2_MPI_TIMEOUT:-600}

n=0 failed=0
body=()
ok() { n=$((n + 1)); body+=("ok $n - $*"); }
not_ok() { n=$((n + 1)); failed=$((failed + 1)); body+=("not ok $n - $*"); }
diag() { while IFS= read -r l; do body+=("# $l"); done; }
check() { local d=$1; shift; if "$@"; then ok "$d"; else not_ok "$d"; fi; }
finish() {
    echo "1..$n"
    printf '%s\n' "${body[@]}"
    exit $((failed > 0))
}

# The test programs: mpicc from libopenmpi-dev (scripts/setup.sh).
prog_check=${DN2_MPI_CHECK:-}
prog_fail=${DN2_MPI_FAIL:-}
if [ -z "$prog_check" ] || [ -z "$prog_fail" ]; then
    if ! command -v mpicc >/dev/null; then
        not_ok "mpicc not found (scripts/setup.sh installs libopenmpi-dev)"; finish
    fi
    mkdir -p "$top/build/tests/mpi"
    prog_check=$top/build/tests/mpi/mpi-check prog_fail=$top/build/tests/mpi/mpi-fail
    if ! mpicc -O2 -Wall -o "$prog_check" "$here/mpi-check.c" 2> "$out/mpicc.log" ||
       ! mpicc -O2 -Wall -o "$prog_fail" "$here/mpi-fail.c" 2>> "$out/mpicc.log"; then
        not_ok "compiling the MPI test programs failed"; diag < "$out/mpicc.log"; finish
    fi
fi

# No process of a run is left (cluster.sh's process groups).
no_orphans() { # NAME
    local g left=
    for g in $(cat "$top/build/cluster/$1/pgids" 2>/dev/null); do
        pgrep -g "$g" > /dev/null 2>&1 && left+=" $g"
    done
    [ -z "$left" ] && return 0
    echo "process groups still alive:$left" | diag
    for g in $left; do kill -KILL -- "-$g" 2>/dev/null; done
    return 1
}

# mpi NAME [mpirun options] -- PROGRAM ARGS: runs, output in $out/NAME.out,
# exit status in $rc, seconds in $secs
mpi() {
    local name=$1 t0=$SECONDS
    shift
    bash "$mpirun" -q --name "mpitest-$name" -t "$tmo" "$@" > "$out/$name.out" 2> "$out/$name.err"
    rc=$?
    secs=$((SECONDS - t0))
}
show_fail() { # NAME: the tail of a failed run
    { tail -15 "$out/$1.out"; tail -25 "$out/$1.err"; } | diag
}

# 1. mpi-check: every rank-0 TAP point forwarded, prefixed by the run
run_check() { # LABEL NAME mpirun-options...
    local label=$1 name=$2 line pts=0
    shift 2
    mpi "$name" "$@" -- "$prog_check"
    while IFS= read -r line; do
        case $line in
            "[0] ok "*) pts=$((pts + 1)); ok "[$label] ${line#\[0\] ok * - }" ;;
            "[0] not ok "*) pts=$((pts + 1)); not_ok "[$label] ${line#\[0\] not ok * - }" ;;
        esac
    done < "$out/$name.out"
    if [ "$rc" -eq 0 ] && [ "$pts" -gt 0 ]; then
        ok "[$label] mpi-check job succeeded ($pts checks, ${secs} s)"
    else
        not_ok "[$label] mpi-check job: exit $rc after ${secs} s, $pts checks"
        show_fail "$name"
    fi
    check "[$label] nothing left running" no_orphans "mpitest-$name"
}
run_check "tcp, 2 nodes" tcp2 -n 2 --net tcp
run_check "tcp, 4 nodes" tcp4 -n 4 --net tcp
run_check "tcp, 2 nodes x 2 ranks" tcp2x2 -n 2 --ppn 2 --net tcp
run_check "shm, 1 node x 2 ranks" shm1x2 -n 1 --ppn 2 --net shm

# 2. NetPIPE
mpi netpipe -n 2 --net tcp -- NPopenmpi -u 65536 -o /tmp/np.out
pts=$(grep -c -- '-->' "$out/netpipe.out")
top_ok=$(grep -E -- '-->' "$out/netpipe.out" | grep -cE ' 6553[0-9] bytes')
if [ "$rc" -eq 0 ] && [ "$pts" -ge 20 ] && [ "$top_ok" -ge 1 ]; then
    ok "NPopenmpi (netpipe-openmpi) on 2 nodes over tcp: $pts points up to 64 KiB (${secs} s)"
else
    not_ok "NPopenmpi: exit $rc, $pts points, 64 KiB reached: $top_ok"; show_fail netpipe
fi

# 3. HPCC, small problem (tests/mpi/data/hpccinf.txt)
mpi hpcc -n 2 --net tcp --file "$here/data/hpccinf.txt" -- \
    sh -c 'hpcc || exit; [ ! -f hpccoutf.txt ] || grep -E "PASSED|FAILED|End of HPC|Latency_usec|Bandwidth_GBytes" hpccoutf.txt'
if [ "$rc" -eq 0 ] && grep -q '^\[0\] .*PASSED' "$out/hpcc.out" && ! grep -q 'FAILED' "$out/hpcc.out" &&
   grep -q '^\[0\] End of HPC Challenge tests' "$out/hpcc.out"; then
    ok "hpcc on 2 nodes over tcp: HPL residual PASSED, every test to the end (${secs} s)"
else
    not_ok "hpcc: exit $rc"; show_fail hpcc
fi

# 4. mplrs: the cube's 8 vertices
mpi mplrs -n 2 --ppn 2 --net tcp --file "$here/data/cube.ine" -- mplrs cube.ine
verts=$(grep -E '^\[[0-9]+\] +1( +-?1){3} *$' "$out/mplrs.out" | sed 's/^\[[0-9]*\] *//' | tr -s ' ' | sort -u | wc -l)
if [ "$rc" -eq 0 ] && [ "$verts" -eq 8 ]; then
    ok "mplrs on 2 nodes x 2 ranks: the cube's 8 vertices (${secs} s)"
else
    not_ok "mplrs: exit $rc, $verts distinct vertices (want 8)"; show_fail mplrs
fi

# 5. failures and arguments
mpi abort -n 2 --net tcp -- "$prog_fail" abort
if [ "$rc" -eq 1 ] && grep -q 'MPI job aborted\|the MPI job was aborted' "$out/abort.err" &&
   grep -q '^\[0\] rank 0 waiting' "$out/abort.out" && grep -q '^\[1\] rank 1 waiting' "$out/abort.out" &&
   [ "$secs" -lt 120 ]; then
    ok "MPI_Abort on rank 1 fails the job (exit 1, reported, every rank's output shown, ${secs} s)"
else
    not_ok "MPI_Abort: exit $rc after ${secs} s"; show_fail abort
fi
check "MPI_Abort: nothing left running" no_orphans mpitest-abort

mpi exit3 -n 2 --net tcp -- "$prog_fail" exit
if [ "$rc" -eq 1 ] && grep -q '^\[1\] .*rank 1 exited with status 3' "$out/exit3.out" && [ "$secs" -lt 120 ]; then
    ok "a rank exiting with status 3 fails the job, the status shown (${secs} s)"
else
    not_ok "rank exit 3: exit $rc after ${secs} s"; show_fail exit3
fi

# shellcheck disable=SC2016   # literal on purpose
mpi args -n 1 --net shm -- sh -c 'for a in "$@"; do printf "<%s>\n" "$a"; done' arg0 'two words' "it's" '$HOME' '' 'a"b'
want=$'[0] <two words>\n[0] <it\'s>\n[0] <$HOME>\n[0] <>\n[0] <a"b>'
if [ "$rc" -eq 0 ] && [ "$(grep '^\[0\] <' "$out/args.out")" = "$want" ]; then
    ok "arguments reach the program unchanged (spaces, quotes, \$, empty)"
else
    not_ok "arguments: exit $rc"; diag < "$out/args.out"
fi

finish
