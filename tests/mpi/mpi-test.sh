#!/usr/bin/env bash
# TAP: Debian's unmodified Open MPI across DIMMnet-2 guests (docs/mpi.md),
# started by scripts/mpirun.sh (direct launch through libpmi-dn2).
#
#   tests/mpi/mpi-test.sh          (meson: suite 'mpi')
#
# Every run boots its own cluster with the MPI image; runs of the same shape
# that need no board counters of their own share one cluster, a job after
# the other (mpirun.sh --job, --keep-going: each job's status, output and
# duration from result.json).  Checked here:
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
# default: built here with mpicc into build/mpi-test/bin/), DN2_MPI_TIMEOUT
# (per run, 600; the six-job run twice that).
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
    # (into the test's own directory: meson's build/tests/mpi/ programs are
    # other tests' while this runs, and a rebuilt binary under them changes
    # a virtual-time test's guest between its two runs)
    mkdir -p "$out/bin"
    prog_check=$out/bin/mpi-check prog_fail=$out/bin/mpi-fail prog_bench=$out/bin/mpi-bench
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
    cp "$top/build/cluster/mpitest-$name/result.json" "$out/$name.json" 2> /dev/null ||
        echo '{"ranks": []}' > "$out/$name.json"
}
# Jobs of one run (--job, result.json): rank R's status in job J; job J's
# seconds (its first rank's start to its last rank's end, in the guests);
# whether every rank of job J exited 0; job J's lines of NAME.out
jstatus() { jq -r --argjson j "$2" --argjson r "$3" '.ranks[] | select(.job == $j and .rank == $r) | .status' "$out/$1.json" 2> /dev/null; }
jsecs() {
    jq -r --argjson j "$2" '[.ranks[] | select(.job == $j)] | if length == 0 or any(.ended_s == null)
        then "?" else (map(.ended_s) | max) - (map(.started_s) | min) | floor end' "$out/$1.json" 2> /dev/null
}
jok() { [ "$(jq -r --argjson j "$2" '[.ranks[] | select(.job == $j) | .status] | length > 0 and all(. == 0)' "$out/$1.json" 2> /dev/null)" = true ]; }
jlines() { grep "^\[$2\." "$out/$1.out"; }
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
# job_check NAME J LABEL: job J of run NAME was an mpi-check: rank 0's TAP
# points forwarded, and the job succeeded (every rank's status 0, no rank
# reported by mpirun, the payload line printed)
job_check() {
    local name=$1 j=$2 label=$3 line pts=0 bad=0
    while IFS= read -r line; do
        case $line in
            "[$j.0] ok "*) pts=$((pts + 1)); ok "[$label] ${line#\[$j.0\] ok * - }" ;;
            "[$j.0] not ok "*) pts=$((pts + 1)) bad=$((bad + 1)); not_ok "[$label] ${line#\[$j.0\] not ok * - }" ;;
        esac
    done < "$out/$name.out"
    if [ "$pts" -gt 0 ] && [ "$bad" -eq 0 ] && grep -q "^\[$j\.0\] ok [0-9]* - payload bytes moved" "$out/$name.out" &&
       ! grep -q "^\[$j\.[0-9]*\] mpirun: rank" "$out/$name.out" && jok "$name" "$j"; then
        ok "[$label] mpi-check job succeeded ($pts checks, $(jsecs "$name" "$j") s)"
    else
        not_ok "[$label] mpi-check job: $pts checks, $bad failed"; show_fail "$name"
    fi
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
# 4 nodes, TCP and then the boards: one cluster, two jobs
check_b=$(basename "$prog_check") fail_b=$(basename "$prog_fail")
mpi n4 -np 4 --keep-going --file "$prog_check" --job "tcp:./$check_b" --job "board:./$check_b"
job_check n4 1 "tcp, 4 nodes"
job_check n4 2 "board, 4 nodes"
check "[4 nodes] nothing left running" no_orphans mpitest-n4

# 2 nodes x 2 ranks over TCP: mpi-check, then mplrs (the MPI vertex
# enumerator): the cube's 8 vertices
mpi n2x2 -N 2 --ppn 2 --keep-going --file "$prog_check" --file "$here/data/cube.ine" \
    --job "tcp:./$check_b" --job "tcp:mplrs cube.ine"
job_check n2x2 1 "tcp, 2 nodes x 2 ranks"
verts=$(jlines n2x2 2 | grep -E '^\[2\.[0-9]+\] +1( +-?1){3} *$' | sed 's/^\[[0-9.]*\] *//' | tr -s ' ' | sort -u | wc -l)
if jok n2x2 2 && [ "$verts" -eq 8 ]; then
    ok "mplrs on 2 nodes x 2 ranks: the cube's 8 vertices ($(jsecs n2x2 2) s)"
else
    not_ok "mplrs: statuses $(jstatus n2x2 2 0)/$(jstatus n2x2 2 1), $verts distinct vertices (want 8)"; show_fail n2x2
fi
check "[2 nodes x 2 ranks] nothing left running" no_orphans mpitest-n2x2
run_check "shm, 1 node x 2 ranks" shm1x2 -np 2 --ppn 2 --net shm

# 2 nodes, one cluster, one job after the other (--keep-going):
#   1. NPopenmpi (netpipe-openmpi) over TCP
#   2. hpcc over TCP (small problem: tests/mpi/data/hpccinf.txt)
#   3. MPI_Abort(7) on rank 1 (mpi-fail abort)
#   4. rank 1 exits 3 (mpi-fail exit)
#   5. NPopenmpi over the boards
#   6. hpcc over the boards
# hpcc appends to hpccoutf.txt: each hpcc job starts without one.
# Six jobs in one run: twice the per-run timeout (263 s on an idle host,
# over 600 beside cluster-vt in the other lane).
hpcc_cmd='rm -f hpccoutf.txt; hpcc || exit; [ ! -f hpccoutf.txt ] || grep -E "PASSED|FAILED|End of HPC|Latency_usec|Bandwidth_GBytes" hpccoutf.txt'
mpi n2 -np 2 -t $((tmo * 2)) --keep-going --file "$here/data/hpccinf.txt" --file "$prog_fail" \
    --job "tcp:NPopenmpi -u 65536 -o /tmp/np.out" --job "tcp:$hpcc_cmd" \
    --job "tcp:./$fail_b abort" --job "tcp:./$fail_b exit" \
    --job "board:NPopenmpi -u 65536 -o /tmp/np.out" --job "board:$hpcc_cmd"
# netpipe_ok J LABEL: NetPIPE's curve of job J, every size up to 64 KiB
netpipe_ok() {
    local pts top_ok
    pts=$(jlines n2 "$1" | grep -c -- '-->')
    top_ok=$(jlines n2 "$1" | grep -E -- '-->' | grep -cE ' 6553[0-9] bytes')
    if jok n2 "$1" && [ "$pts" -ge 20 ] && [ "$top_ok" -ge 1 ]; then
        ok "NPopenmpi (netpipe-openmpi) on 2 nodes $2: $pts points up to 64 KiB ($(jsecs n2 "$1") s)"
    else
        not_ok "NPopenmpi $2: statuses $(jstatus n2 "$1" 0)/$(jstatus n2 "$1" 1), $pts points, 64 KiB reached: $top_ok"; show_fail n2
    fi
}
# hpcc_ok J LABEL: HPL's residual PASSED, nothing FAILED, every test run
hpcc_ok() {
    if jok n2 "$1" && jlines n2 "$1" | grep -q "^\[$1\.0\] .*PASSED" && ! jlines n2 "$1" | grep -q 'FAILED' &&
       jlines n2 "$1" | grep -q "^\[$1\.0\] End of HPC Challenge tests"; then
        ok "hpcc on 2 nodes $2: HPL residual PASSED, every test to the end ($(jsecs n2 "$1") s)"
    else
        not_ok "hpcc $2: statuses $(jstatus n2 "$1" 0)/$(jstatus n2 "$1" 1)"; show_fail n2
    fi
}
netpipe_ok 1 "over tcp"
hpcc_ok 2 "over tcp"
s3=$(jsecs n2 3)
if [ "$(jstatus n2 3 1)" = 7 ] && grep -q 'MPI job aborted\|the MPI job was aborted' "$out/n2.err" &&
   grep -q '^\[3\.0\] rank 0 waiting' "$out/n2.out" && grep -q '^\[3\.1\] rank 1 waiting' "$out/n2.out" &&
   [ "$s3" != "?" ] && [ "$s3" -lt 120 ]; then
    ok "MPI_Abort(7) on rank 1 fails the job (status 7, the rank's own code; reported, every rank's output shown, $s3 s)"
else
    not_ok "MPI_Abort: rank 1's status $(jstatus n2 3 1) after $s3 s"; show_fail n2
fi
s4=$(jsecs n2 4)
if [ "$(jstatus n2 4 1)" = 3 ] && grep -q '^\[4\.1\] .*rank 1 exited with status 3' "$out/n2.out" &&
   [ "$s4" != "?" ] && [ "$s4" -lt 120 ]; then
    ok "a rank exiting with status 3 fails the job with status 3, the status shown ($s4 s)"
else
    not_ok "rank exit 3: rank 1's status $(jstatus n2 4 1) after $s4 s"; show_fail n2
fi
netpipe_ok 5 "over the boards"
hpcc_ok 6 "over the boards"
if [ "$rc" -eq 7 ]; then
    ok "[2 nodes, six jobs] the run's exit status is the first failure's, MPI_Abort's 7 (${secs} s for the six)"
else
    not_ok "[2 nodes, six jobs] exit status $rc, want 7 (the first failure's) after ${secs} s"; show_fail n2
fi
check "[2 nodes, six jobs] nothing left running" no_orphans mpitest-n2

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
mpi boardpaths -N 2 --ppn 2 --net board --board-stats --keep-going \
    --switch-opts "--drop 0.02 --dup 0.02 --reorder 0.02 --seed 7" \
    -x FI_DIMMNET2_BULK=mixed -x FI_DIMMNET2_STATS=1 --file "$prog_fail" --file "$prog_check" \
    --job "board:./$check_b" --job "board:FI_DIMMNET2_BULK=llcm ./$check_b" \
    --job "board:FI_DIMMNET2_BULK=llcm ./$fail_b midstream" --job "board:./$check_b"

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
job_check boardpaths 1 "board 2x2, faults, mixed"
bulk_used 1 mixed
job_check boardpaths 2 "board 2x2, faults, llcm"
bulk_used 2 llcm
if grep -q '^\[3\.3\] rank 3 dies mid-stream' "$out/boardpaths.out" &&
   grep -q '^\[3\.3\] mpirun: rank 3 exited with status 3' "$out/boardpaths.out"; then
    ok "[board 2x2, faults, llcm] rank 3 died mid-stream ($(sed -n 's/^\[3\.3\] rank 3 dies mid-stream (\(.*\))/\1/p' "$out/boardpaths.out")), the job failed with its status"
else
    not_ok "[board 2x2, faults, llcm] rank 3 did not die mid-stream as planned"; show_fail boardpaths
fi
job_check boardpaths 4 "board 2x2, faults, after a dead rank"
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
