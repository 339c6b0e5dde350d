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
#   5. failures: MPI_Abort(7) on one rank fails the job (exit 7, as Open
#      MPI's mpirun: the first failing rank's status; "MPI job aborted",
#      every rank's output shown) within the grace time; a rank that exits
#      3 likewise (exit 3); the user's arguments reach the program as
#      given (quotes, spaces, $, empty)
#   After every run: no process of the run is left.
#
#   6. the TCP runs leave the boards' packet counters (QMP) at zero
#   7. over the boards (Open MPI's cm PML, ofi MTL, the provider's native
#      RDM endpoint "dimmnet2"; the provider built by meson, or
#      DN2_FI_PROVIDER): mpi-check on 2 nodes (the boards' tx bytes over
#      QMP at least the payload the job moved) and 4 nodes; mpi-bench on 2
#      nodes (ping-pong, 1 MiB stream, allreduce, data checked, QMP bytes);
#      mpi-bench through the fallback 'dimmnet2;ofi_rxd' (ofi_rxd over the
#      DGRAM core); NPopenmpi and hpcc, hpcc also in lock-step virtual
#      time (mpirun.sh --virtual-time); then one cluster of 2 nodes x 2
#      ranks (WID 0 and WID 1 of each board) while dn2-switch drops,
#      duplicates and reorders 2% of the datagrams (the boards count
#      retransmissions), four jobs in the same guests: mpi-check with
#      FI_DIMMNET2_BULK=mixed, mpi-check with =llcm (each rank's
#      FI_DIMMNET2_STATS line names the path and counts BOTF images), a
#      rank that dies while a 1 MiB message to it is arriving on the llcm
#      path, mpi-check again (the boards serve the next job)
# Without mpicc (and the programs not given) the test skips, naming the
# remedy; with CI set that is a failure (tests/tap/tap-lib.sh).
# Environment: DN2_MPI_CHECK, DN2_MPI_FAIL, DN2_MPI_BENCH (the programs;
# default: built here with mpicc into build/tests/mpi/), DN2_MPI_TIMEOUT
# (per run, 600).
set -uo pipefail
top=$(cd "$(dirname "$(realpath "$0")")/../.." && pwd)
. "$top/tests/tap/tap-lib.sh"
here=$top/tests/mpi
mpirun=$top/scripts/mpirun.sh
out=$top/build/mpi-test
mkdir -p "$out"
tmo=${DN2_MPI_TIMEOUT:-600}

# The test programs: mpicc from libopenmpi-dev (scripts/setup.sh).
prog_check=${DN2_MPI_CHECK:-}
prog_fail=${DN2_MPI_FAIL:-}
prog_bench=${DN2_MPI_BENCH:-}
if [ -z "$prog_check" ] || [ -z "$prog_fail" ] || [ -z "$prog_bench" ]; then
    command -v mpicc >/dev/null || tap_skip_all "$(tap_missing mpicc libopenmpi-dev)"
fi
# The plan once every point has run (their number depends on mpi-check's).
tap_defer
if [ -z "$prog_check" ] || [ -z "$prog_fail" ] || [ -z "$prog_bench" ]; then
    mkdir -p "$top/build/tests/mpi"
    prog_check=$top/build/tests/mpi/mpi-check prog_fail=$top/build/tests/mpi/mpi-fail
    prog_bench=$top/build/tests/mpi/mpi-bench
    if ! mpicc -O2 -Wall -o "$prog_check" "$here/mpi-check.c" 2> "$out/mpicc.log" ||
       ! mpicc -O2 -Wall -o "$prog_fail" "$here/mpi-fail.c" 2>> "$out/mpicc.log" ||
       ! mpicc -O2 -Wall -o "$prog_bench" "$here/mpi-bench.c" 2>> "$out/mpicc.log"; then
        not_ok "compiling the MPI test programs failed"; diag < "$out/mpicc.log"; tap_done
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
# board_bytes NAME KEY: the sum of a board counter over the run's nodes
board_sum() { cat "$top/build/cluster/mpitest-$1"/board-stats/node* 2>/dev/null | awk -F= -v k="$2" '$1 == k { s += $2 } END { print s + 0 }'; }
payload() { sed -n 's/^\[0\] # payload bytes sent by all ranks: //p' "$out/$1.out" | head -1; }

run_check "tcp, 2 nodes" tcp2 -np 2 --net tcp --board-stats
tx=$(board_sum tcp2 tx-bytes)
if [ -s "$top/build/cluster/mpitest-tcp2/board-stats/node0" ] && [ "$tx" -eq 0 ]; then
    ok "[tcp, 2 nodes] the boards carried nothing (QMP: tx-bytes 0; $(payload tcp2) payload bytes went over TCP)"
else
    not_ok "[tcp, 2 nodes] boards' tx-bytes $tx over QMP (want 0, and a reading)"
fi
run_check "tcp, 4 nodes" tcp4 -np 4 --net tcp
run_check "tcp, 2 nodes x 2 ranks" tcp2x2 -N 2 --ppn 2 --net tcp
run_check "shm, 1 node x 2 ranks" shm1x2 -np 2 --ppn 2 --net shm

# 2. NetPIPE
mpi netpipe -np 2 --net tcp -- NPopenmpi -u 65536 -o /tmp/np.out
pts=$(grep -c -- '-->' "$out/netpipe.out")
top_ok=$(grep -E -- '-->' "$out/netpipe.out" | grep -cE ' 6553[0-9] bytes')
if [ "$rc" -eq 0 ] && [ "$pts" -ge 20 ] && [ "$top_ok" -ge 1 ]; then
    ok "NPopenmpi (netpipe-openmpi) on 2 nodes over tcp: $pts points up to 64 KiB (${secs} s)"
else
    not_ok "NPopenmpi: exit $rc, $pts points, 64 KiB reached: $top_ok"; show_fail netpipe
fi

# 3. HPCC, small problem (tests/mpi/data/hpccinf.txt)
mpi hpcc -np 2 --net tcp --file "$here/data/hpccinf.txt" -- \
    sh -c 'hpcc || exit; [ ! -f hpccoutf.txt ] || grep -E "PASSED|FAILED|End of HPC|Latency_usec|Bandwidth_GBytes" hpccoutf.txt'
if [ "$rc" -eq 0 ] && grep -q '^\[0\] .*PASSED' "$out/hpcc.out" && ! grep -q 'FAILED' "$out/hpcc.out" &&
   grep -q '^\[0\] End of HPC Challenge tests' "$out/hpcc.out"; then
    ok "hpcc on 2 nodes over tcp: HPL residual PASSED, every test to the end (${secs} s)"
else
    not_ok "hpcc: exit $rc"; show_fail hpcc
fi

# 4. mplrs: the cube's 8 vertices
mpi mplrs -N 2 --ppn 2 --net tcp --file "$here/data/cube.ine" -- mplrs cube.ine
verts=$(grep -E '^\[[0-9]+\] +1( +-?1){3} *$' "$out/mplrs.out" | sed 's/^\[[0-9]*\] *//' | tr -s ' ' | sort -u | wc -l)
if [ "$rc" -eq 0 ] && [ "$verts" -eq 8 ]; then
    ok "mplrs on 2 nodes x 2 ranks: the cube's 8 vertices (${secs} s)"
else
    not_ok "mplrs: exit $rc, $verts distinct vertices (want 8)"; show_fail mplrs
fi

# 5. failures and arguments
mpi abort -np 2 --net tcp -- "$prog_fail" abort
if [ "$rc" -eq 7 ] && grep -q 'MPI job aborted\|the MPI job was aborted' "$out/abort.err" &&
   grep -q '^\[0\] rank 0 waiting' "$out/abort.out" && grep -q '^\[1\] rank 1 waiting' "$out/abort.out" &&
   [ "$secs" -lt 120 ]; then
    ok "MPI_Abort(7) on rank 1 fails the job (exit 7, the rank's own code; reported, every rank's output shown, ${secs} s)"
else
    not_ok "MPI_Abort: exit $rc after ${secs} s"; show_fail abort
fi
check "MPI_Abort: nothing left running" no_orphans mpitest-abort

mpi exit3 -np 2 --net tcp -- "$prog_fail" exit
if [ "$rc" -eq 3 ] && grep -q '^\[1\] .*rank 1 exited with status 3' "$out/exit3.out" && [ "$secs" -lt 120 ]; then
    ok "a rank exiting with status 3 fails the job with exit 3, the status shown (${secs} s)"
else
    not_ok "rank exit 3: exit $rc after ${secs} s"; show_fail exit3
fi

# shellcheck disable=SC2016   # literal on purpose
mpi args -np 1 --net shm -- sh -c 'for a in "$@"; do printf "<%s>\n" "$a"; done' arg0 'two words' "it's" '$HOME' '' 'a"b'
want=$'[0] <two words>\n[0] <it\'s>\n[0] <$HOME>\n[0] <>\n[0] <a"b>'
if [ "$rc" -eq 0 ] && [ "$(grep '^\[0\] <' "$out/args.out")" = "$want" ]; then
    ok "arguments reach the program unchanged (spaces, quotes, \$, empty)"
else
    not_ok "arguments: exit $rc"; diag < "$out/args.out"
fi

# 7. over the boards
run_check "board, 2 nodes" board2 -np 2 --net board --board-stats
tx=$(board_sum board2 tx-bytes) pl=$(payload board2)
if [ -n "$pl" ] && [ "$pl" -gt 0 ] && [ "$tx" -ge "$pl" ]; then
    ok "[board, 2 nodes] the boards sent $tx bytes (QMP stat-tx-bytes) >= the $pl payload bytes the job moved"
else
    not_ok "[board, 2 nodes] boards' tx-bytes ${tx:-?} < payload ${pl:-?}"
fi
run_check "board, 4 nodes" board4 -np 4 --net board

# bench_ok NAME LABEL: mpi-bench's run succeeded with its data checked
bench_ok() {
    local pl tx
    pl=$(sed -n 's/^\[0\] figure payload_bytes //p' "$out/$1.out")
    tx=$(board_sum "$1" tx-bytes)
    if [ "$rc" -eq 0 ] && grep -q '^\[0\] data checked' "$out/$1.out" && [ -n "$pl" ] && [ "$tx" -ge "$pl" ]; then
        ok "$2: ping-pong, 1 MiB stream, allreduce, data checked; the boards sent $tx bytes (QMP) >= the $pl payload bytes (${secs} s)"
    else
        not_ok "$2: exit $rc, payload ${pl:-?}, boards' tx-bytes $tx"; show_fail "$1"
    fi
}
mpi boardbench -np 2 --net board --board-stats -- "$prog_bench" 50
bench_ok boardbench "[board, 2 nodes] mpi-bench"
mpi boardrxd -np 2 --net board --ofi 'dimmnet2;ofi_rxd' --board-stats -- "$prog_bench" 10
bench_ok boardrxd "[board, 'dimmnet2;ofi_rxd': ofi_rxd over the DGRAM core] mpi-bench"

mpi boardnp -np 2 --net board -- NPopenmpi -u 65536 -o /tmp/np.out
pts=$(grep -c -- '-->' "$out/boardnp.out")
if [ "$rc" -eq 0 ] && [ "$pts" -ge 20 ]; then
    ok "NPopenmpi on 2 nodes over the boards: $pts points up to 64 KiB (${secs} s)"
else
    not_ok "NPopenmpi over the boards: exit $rc, $pts points"; show_fail boardnp
fi
mpi boardhpcc -np 2 --net board --file "$here/data/hpccinf.txt" -- \
    sh -c 'hpcc || exit; [ ! -f hpccoutf.txt ] || grep -E "PASSED|FAILED|End of HPC|Latency_usec|Bandwidth_GBytes" hpccoutf.txt'
if [ "$rc" -eq 0 ] && grep -q '^\[0\] .*PASSED' "$out/boardhpcc.out" && ! grep -q 'FAILED' "$out/boardhpcc.out" &&
   grep -q '^\[0\] End of HPC Challenge tests' "$out/boardhpcc.out"; then
    ok "hpcc on 2 nodes over the boards: HPL residual PASSED, every test to the end (${secs} s)"
else
    not_ok "hpcc over the boards: exit $rc"; show_fail boardhpcc
fi
# The same in lock-step virtual time (mpirun.sh --virtual-time: PMI over the
# boards, a 100 µs delivery grid): no wait or timeout tuned to the host.
mpi vthpcc -np 2 --virtual-time --vt-quantum 100000 --file "$here/data/hpccinf.txt" -- \
    sh -c 'hpcc || exit; [ ! -f hpccoutf.txt ] || grep -E "PASSED|FAILED|End of HPC|Latency_usec|Bandwidth_GBytes" hpccoutf.txt'
if [ "$rc" -eq 0 ] && grep -q '^\[0\] .*PASSED' "$out/vthpcc.out" && ! grep -q 'FAILED' "$out/vthpcc.out" &&
   grep -q '^\[0\] End of HPC Challenge tests' "$out/vthpcc.out"; then
    ok "hpcc on 2 nodes over the boards in virtual time: HPL residual PASSED, every test to the end (${secs} s)"
else
    not_ok "hpcc over the boards in virtual time: exit $rc"; show_fail vthpcc
fi
# The bulk paths in one cluster of 2 nodes x 2 ranks (WID 0 and WID 1 of
# each board) while the switch drops, duplicates and reorders 2% of the
# datagrams, one job after the other in the same guests:
#   1. mpi-check, FI_DIMMNET2_BULK=mixed (-x: every job's default)
#   2. mpi-check, FI_DIMMNET2_BULK=llcm (the job's own environment)
#   3. mpi-fail midstream on llcm: ranks 0 and 1 stream 1 MiB messages to
#      ranks 2 and 3 on the other board; rank 3 dies while its third
#      message is arriving
#   4. mpi-check again (mixed): the boards serve the next job
# FI_DIMMNET2_STATS=1 makes every rank name its bulk path and count its
# BOTF images at close, which shows that the setting reached the provider.
fail_b=$(basename "$prog_fail") check_b=$(basename "$prog_check")
mpi boardpaths -N 2 --ppn 2 --net board --board-stats --keep-going \
    --switch-opts "--drop 0.02 --dup 0.02 --reorder 0.02 --seed 7" \
    -x FI_DIMMNET2_BULK=mixed -x FI_DIMMNET2_STATS=1 --file "$prog_fail" --file "$prog_check" \
    --job "board:./$check_b" --job "board:FI_DIMMNET2_BULK=llcm ./$check_b" \
    --job "board:FI_DIMMNET2_BULK=llcm ./$fail_b midstream" --job "board:./$check_b"
# job_check J LABEL: job J's mpi-check, rank 0's TAP points forwarded
job_check() {
    local j=$1 label=$2 line pts=0 bad=0
    while IFS= read -r line; do
        case $line in
            "[$j.0] ok "*) pts=$((pts + 1)); ok "[$label] ${line#\[$j.0\] ok * - }" ;;
            "[$j.0] not ok "*) pts=$((pts + 1)) bad=$((bad + 1)); not_ok "[$label] ${line#\[$j.0\] not ok * - }" ;;
        esac
    done < "$out/boardpaths.out"
    if [ "$pts" -gt 0 ] && [ "$bad" -eq 0 ] && grep -q "^\[$j\.0\] ok [0-9]* - payload bytes moved" "$out/boardpaths.out" &&
       ! grep -q "^\[$j\.[0-9]*\] mpirun: rank" "$out/boardpaths.out"; then
        ok "[$label] mpi-check job succeeded ($pts checks)"
    else
        not_ok "[$label] mpi-check job: $pts checks, $bad failed"; show_fail boardpaths
    fi
}
# bulk_used J PATH: every rank of job J closed its RDM endpoint on PATH and
# the job sent BOTF images (the LLCM path carried data)
bulk_used() {
    local j=$1 path=$2 ranks botf
    ranks=$(grep -c "^\[$j\.[0-3]\] dimmnet2 stats: .* RDM endpoint (bulk $path)" "$out/boardpaths.out")
    botf=$(sed -n "s/^\[$j\.[0-3]\] dimmnet2 stats: .*BOTF images [0-9.]* (\([0-9]*\)).*/\1/p" "$out/boardpaths.out" |
           awk '{ s += $1 } END { print s + 0 }')
    if [ "$ranks" -eq 4 ] && [ "$botf" -gt 0 ]; then
        ok "[board, FI_DIMMNET2_BULK=$path] all 4 ranks sent on the $path path, $botf BOTF images into the LLCM"
    else
        not_ok "[board, FI_DIMMNET2_BULK=$path] $ranks of 4 ranks report the $path path, $botf BOTF images"
    fi
}
job_check 1 "board 2x2, faults, mixed"
bulk_used 1 mixed
job_check 2 "board 2x2, faults, llcm"
bulk_used 2 llcm
if grep -q '^\[3\.3\] rank 3 dies mid-stream' "$out/boardpaths.out" &&
   grep -q '^\[3\.3\] mpirun: rank 3 exited with status 3' "$out/boardpaths.out"; then
    ok "[board 2x2, faults, llcm] rank 3 died mid-stream ($(sed -n 's/^\[3\.3\] rank 3 dies mid-stream (\(.*\))/\1/p' "$out/boardpaths.out")), the job failed with its status"
else
    not_ok "[board 2x2, faults, llcm] rank 3 did not die mid-stream as planned"; show_fail boardpaths
fi
job_check 4 "board 2x2, faults, after a dead rank"
if [ "$rc" -eq 3 ]; then
    ok "[board 2x2] the run's exit status is the dead rank's, 3 (${secs} s for the four jobs)"
else
    not_ok "[board 2x2] exit status $rc, want 3 (the dead rank's) after ${secs} s"; show_fail boardpaths
fi
rtx=$(board_sum boardpaths link-retransmits)
if [ "$rtx" -gt 0 ]; then
    ok "[board, faults] the boards retransmitted $rtx times (QMP stat-link-retransmits): the faults happened"
else
    not_ok "[board, faults] no retransmissions counted: were the faults injected?"
fi
check "[board] nothing left running" no_orphans mpitest-boardpaths

tap_done
