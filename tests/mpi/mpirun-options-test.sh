#!/usr/bin/env bash
# TAP: scripts/mpirun.sh as MPI users expect it (docs/mpi.md).
#
#   tests/mpi/mpirun-options-test.sh     (meson: test 'mpirun-options', suite 'mpi')
#
#   1. without booting (--dry-run prints the plan): -np/-n count ranks,
#      -N nodes, --ppn ranks per node, any two give the third; -np alone
#      is one rank per node; -n with --ppn 2 says once that -n counts
#      ranks now; -x VAR=VAL and -x VAR (this shell's value); --env is
#      taken with a note naming -x; numbers that do not fit, a bad -x and a
#      --junit in no directory are usage errors (exit 2, one line); the
#      "--opt=value" form; --dry-run creates no run directory
#   2. one short real run, one node, 2 ranks over shared memory: each rank
#      prints a line, sleeps 4 s, prints another, then runs
#      tests/mpi/mpi-fail exit (rank 1 exits 3): the first lines reach the
#      host before the second ones (streamed, not at the end), the exit
#      status is 3 (rank 1's own), build/cluster/NAME/result.json is valid
#      JSON with both ranks (node, status, duration) and the first failure,
#      and --junit's file is valid XML with one test case per rank, rank
#      1's failure carrying the tail of its output
#   3. without -m, guest memory is sized from the MPI image and the ranks
#      per node (the plan says so and why); -m is kept as given; a -m the
#      image does not fit in fails naming the image and the -m to give
#      (result.json's "why" for the node too)
# Without mpicc (and DN2_MPI_FAIL not given) part 2 skips, naming the
# remedy; with CI set that is a failure (tests/tap/tap-lib.sh).
# Environment: DN2_MPI_FAIL (the program; default: built here with mpicc
# into build/tests/mpi/), DN2_MPI_TIMEOUT (the real run, default 600).
set -uo pipefail
top=$(cd "$(dirname "$(realpath "$0")")/../.." && pwd)
. "$top/tests/tap/tap-lib.sh"
mpirun=$top/scripts/mpirun.sh
out=$top/build/mpirun-options-test
mkdir -p "$out"
tmo=${DN2_MPI_TIMEOUT:-600}

# plan ARGS...: mpirun.sh --dry-run ARGS -- true; stdout in $out/plan,
# stderr in $out/plan.err, status in $rc
plan() {
    bash "$mpirun" --dry-run "$@" > "$out/plan" 2> "$out/plan.err"
    rc=$?
}
# key K: the value of "K: value" in the plan
key() { sed -n "s/^$1: //p" "$out/plan" | head -1; }
# want DESC NODES PPN RANKS ARGS...: the plan has these numbers, no note
want() {
    local d=$1 n=$2 p=$3 r=$4
    shift 4
    plan "$@" -- true
    if [ "$rc" = 0 ] && [ "$(key nodes)" = "$n" ] && [ "$(key ppn)" = "$p" ] && [ "$(key ranks)" = "$r" ] &&
       [ ! -s "$out/plan.err" ]; then
        ok "$d: $n nodes x $p = $r ranks"
    else
        not_ok "$d: want $n nodes x $p = $r ranks; got status $rc, $(key nodes) x $(key ppn) = $(key ranks)"
        diag < "$out/plan"; diag < "$out/plan.err"
    fi
}
# usage DESC PATTERN ARGS...: exit 2 and one line on stderr matching PATTERN
usage() {
    local d=$1 pat=$2
    shift 2
    plan "$@"
    if [ "$rc" = 2 ] && [ "$(wc -l < "$out/plan.err")" = 1 ] && grep -q -- "$pat" "$out/plan.err"; then
        ok "$d: usage error ($(cat "$out/plan.err"))"
    else
        not_ok "$d: want exit 2 and one line naming '$pat'; got status $rc"; diag < "$out/plan.err"
    fi
}

# ---- 1. the options, without booting
want "-np 4 --ppn 2" 2 2 4 -np 4 --ppn 2
want "-np 3 alone: one rank per node" 3 1 3 -np 3
want "-n 3 alone (Open MPI's -n)" 3 1 3 -n 3
want "--np=4 --ppn=2 (the --opt=value form)" 2 2 4 --np=4 --ppn=2
want "-N 3 alone" 3 1 3 -N 3
want "-N 2 --ppn 2" 2 2 4 -N 2 --ppn 2
want "--nodes=2 -np 4: the ranks per node follow" 2 2 4 --nodes=2 -np 4
want "-N 2 -np 4 --ppn 2 (all three agree)" 2 2 4 -N 2 -np 4 --ppn 2
want "nothing given: 2 nodes of 1 rank" 2 1 2
plan -np 4 --ppn 2 -- true
if [ "$rc" = 0 ] && grep -qx 'rank 0: node 0 wid 0' "$out/plan" && grep -qx 'rank 1: node 0 wid 1' "$out/plan" &&
   grep -qx 'rank 3: node 1 wid 1' "$out/plan" && [ "$(grep -c '^rank [0-9]*:' "$out/plan")" = 4 ]; then
    ok "the plan places rank r on node r / ppn, WID r mod ppn"
else
    not_ok "the plan's ranks"; diag < "$out/plan"
fi

plan -n 4 --ppn 2 -- true
if [ "$rc" = 0 ] && [ "$(key ranks)" = 4 ] && [ "$(key nodes)" = 2 ] && [ "$(wc -l < "$out/plan.err")" = 1 ] &&
   grep -q -- '-n counts ranks now' "$out/plan.err" && grep -q -- '-N 4 --ppn 2' "$out/plan.err"; then
    ok "-n 4 --ppn 2 (-n counted nodes before): 4 ranks, and one note saying -n counts ranks and giving -N 4 --ppn 2"
else
    not_ok "-n 4 --ppn 2: status $rc, $(key ranks) ranks"; diag < "$out/plan.err"
fi

DN2_TEST_FROM_ENV='a b' plan -x FOO=bar -x DN2_TEST_FROM_ENV -x 'EMPTY=' -- true
if [ "$rc" = 0 ] && grep -qx 'env: FOO=bar' "$out/plan" && grep -qx 'env: DN2_TEST_FROM_ENV=a b' "$out/plan" &&
   grep -qx 'env: EMPTY=' "$out/plan" && [ ! -s "$out/plan.err" ]; then
    ok "-x VAR=VAL, -x VAR (this shell's value), -x VAR= reach every rank's environment"
else
    not_ok "-x: status $rc"; diag < "$out/plan"; diag < "$out/plan.err"
fi
plan --env FOO=bar -- true
if [ "$rc" = 0 ] && grep -qx 'env: FOO=bar' "$out/plan" && [ "$(wc -l < "$out/plan.err")" = 1 ] &&
   grep -q -- '--env is now spelled -x.*-x FOO=bar' "$out/plan.err"; then
    ok "--env VAR=VAL is still taken, with one note naming -x"
else
    not_ok "--env: status $rc"; diag < "$out/plan.err"
fi

usage "-np 3 --ppn 2 (half a node)" '-np 3' -np 3 --ppn 2 -- true
usage "-N 2 -np 5" '-np 5' -N 2 -np 5 -- true
usage "-N 2 -np 6 (3 ranks per node)" '-np 6' -N 2 -np 6 -- true
usage "-N 2 -np 4 --ppn 1 (they disagree)" 'does not match' -N 2 -np 4 --ppn 1 -- true
usage "-np 0" '-np' -np 0 -- true
usage "-np x" '-np' -np x -- true
usage "-N 65" '-N' -N 65 -- true
usage "-np 130 --ppn 2 (65 nodes)" '65 nodes' -np 130 --ppn 2 -- true
usage "--ppn 3" '--ppn' --ppn 3 -- true
usage "-x 1A" '-x' -x 1A -- true
usage "-x of a variable that is not set" 'DN2_NO_SUCH_VARIABLE' -x DN2_NO_SUCH_VARIABLE -- true
usage "--env without =" '--env' --env FOO -- true
usage "--junit in a directory that does not exist" '--junit' --junit "$out/no/such/dir/j.xml" -- true
usage "--net shm on 2 nodes" 'shm' --net shm -N 2 -- true
usage "-np without its value" '-np' -np

name=mpiopt-dry-$$
plan --name "$name" -np 2 -- true
if [ "$rc" = 0 ] && [ "$(key rundir)" = "$top/build/cluster/$name" ] && [ ! -e "$top/build/cluster/$name" ] &&
   [ ! -e "$top/build/mpirun/$name" ]; then
    ok "--dry-run names the run directory and creates nothing"
else
    not_ok "--dry-run: status $rc, rundir $(key rundir)"
fi
bash "$mpirun" --help > "$out/help" 2>&1
rc=$?
if [ "$rc" = 0 ] && grep -q -- '-np, -n, --np N' "$out/help" && grep -q -- '-N, --nodes N' "$out/help" &&
   grep -q -- '-x VAR\[=VAL\]' "$out/help" && grep -q -- '--junit FILE' "$out/help" && grep -q -- '--dry-run' "$out/help"; then
    ok "--help describes -np, -N, -x, --junit and --dry-run"
else
    not_ok "--help: status $rc"
fi

# ---- 2. one short real run
prog_fail=${DN2_MPI_FAIL:-}
if [ -z "$prog_fail" ] && command -v mpicc > /dev/null; then
    prog_fail=$top/build/tests/mpi/mpi-fail
    mkdir -p "$(dirname "$prog_fail")"
    mpicc -O2 -Wall -o "$prog_fail" "$top/tests/mpi/mpi-fail.c" 2> "$out/mpicc.log" || {
        not_ok "compiling tests/mpi/mpi-fail.c failed"; diag < "$out/mpicc.log"; prog_fail=; }
fi
real_points=8
if [ -z "$prog_fail" ]; then
    why=$(tap_missing mpicc libopenmpi-dev)
    for d in "output streamed per rank" "exit status of the failing rank" "result.json" "result.json: the ranks" \
             "--junit" "--junit: rank 1's failure" "guest memory sized from the image" "-m too small"; do
        skip "real run: $d" "$why"
    done
    tap_done
fi
if ! command -v python3 > /dev/null; then
    for ((i = 0; i < real_points; i++)); do skip "real run: checking the results" "$(tap_missing python3)"; done
    tap_done
fi

name=mpiopt-run
rundir=$top/build/cluster/$name
junit=$out/junit.xml
rm -f "$junit"
t0=$SECONDS
# Each line with the time it reached this end of the pipe.
# shellcheck disable=SC2016   # expanded in the guest
bash "$mpirun" -q --name "$name" -t "$tmo" -np 2 --ppn 2 --net shm --junit "$junit" --file "$prog_fail" \
    --job 'shm:echo "first line of rank $DN2_PMI_RANK"; sleep 4; echo "second line of rank $DN2_PMI_RANK"; exec ./mpi-fail exit' \
    2> "$out/run.err" | while IFS= read -r l; do printf '%s %s\n' "${EPOCHREALTIME/,/.}" "$l"; done > "$out/run.out"
rc=${PIPESTATUS[0]}
t_end=${EPOCHREALTIME/,/.}
secs=$((SECONDS - t0))
diag "real run: exit $rc after $secs s"

# at PATTERN: the time the first line matching PATTERN arrived
at() { grep -m1 -- "$1" "$out/run.out" | cut -d' ' -f1; }
f0=$(at ' \[0\] first line of rank 0$') f1=$(at ' \[1\] first line of rank 1$')
s0=$(at ' \[0\] second line of rank 0$') s1=$(at ' \[1\] second line of rank 1$')
if [ -n "$f0" ] && [ -n "$f1" ] && [ -n "$s0" ] && [ -n "$s1" ] &&
   awk -v f0="$f0" -v f1="$f1" -v s0="$s0" -v s1="$s1" -v e="$t_end" \
       'BEGIN { exit !(s0 - f0 >= 2.5 && s1 - f1 >= 2.5 && e - f0 >= 2.5 && e - f1 >= 2.5) }'; then
    ok "output streamed per rank: each rank's first line arrived $(awk -v a="$f0" -v b="$s0" 'BEGIN { printf "%.1f", b - a }') s before its second (the ranks slept 4 s between them), with its [R] prefix"
else
    not_ok "output not streamed: first lines at ${f0:-none}/${f1:-none}, second at ${s0:-none}/${s1:-none}, end $t_end"
    tail -20 "$out/run.out" | diag; tail -20 "$out/run.err" | diag
fi
if [ "$rc" = 3 ] && grep -q ' \[1\] mpirun: rank 1 exited with status 3$' "$out/run.out"; then
    ok "the exit status is the failing rank's own (rank 1 exited 3: mpirun.sh exits 3)"
else
    not_ok "exit status $rc (want 3, rank 1's)"; tail -20 "$out/run.err" | diag
fi

# The results, checked by python3: valid JSON and XML, with what they must hold.
py_check() { # WHAT: runs the check, its complaints on stderr
    python3 "$top/tests/mpi/mpirun-options-check.py" "$1" "$rundir/result.json" "$junit" 2>&1
}
for w in json:"result.json: valid JSON, the exit status, the first failure, the node" \
         ranks:"result.json: per rank node, status, duration and its output file" \
         junit:"--junit: valid XML, one test case per rank" \
         junit-tail:"--junit: rank 1's failure carries its status and the tail of its output"; do
    msg=$(py_check "${w%%:*}")
    result $? "${w#*:}"
    diag "$msg"
done

# ---- 3. guest memory from the MPI image (built by the run above): without
# -m the plan gives what cluster.sh's sizing gives the image, 128 MiB more
# per extra rank on a node, at least 512 MiB; -m wins.
. "$top/scripts/lib.sh"
img=$(bash "$top/scripts/build-initramfs.sh" --print --mpi)
read -r u c <<< "$(dn2_image_size "$img")"
want1=$(dn2_guest_mem "$u" "$c"); [ "$want1" -ge 512 ] || want1=512
want2=$(( $(dn2_guest_mem "$u" "$c") + 128 )); [ "$want2" -ge 512 ] || want2=512
plan -np 2 --ppn 1 -- true; m1=$(key mem)
plan -np 4 --ppn 2 -- true; m2=$(key mem)
plan -np 2 -m 2048 -- true; m3=$(key mem)
if [ "${m1%% *}" = "$want1" ] && [ "${m2%% *}" = "$want2" ] && [ "$m3" = 2048 ] &&
   case $m2 in *"sized from the image"*"2 rank(s) per node"*) true ;; *) false ;; esac; then
    ok "guest memory sized from the MPI image ($((u / 1024)) MiB unpacked): ${m1%% *} MiB with 1 rank per node, ${m2%% *} MiB with 2; -m 2048 kept"
else
    not_ok "guest memory: plan says '$m1' / '$m2' / '$m3', want $want1 / $want2 / 2048"
fi
# -m too small for the image: the node's failure names the image and the
# -m to give (cluster.sh's reason), in the output and in result.json.
name=mpiopt-small
bash "$mpirun" -q --name "$name" -t 300 -np 1 -m 160 -- true > "$out/small.out" 2> "$out/small.err"
rc=$?
why=$(jq -r '.nodes[0].why // ""' "$top/build/cluster/$name/result.json" 2>&1)
if [ "$rc" != 0 ] && grep -q 'give -m [0-9]* or more' "$out/small.err" &&
   case $why in *"more than guest memory of 160 MiB"*"give -m"*) true ;; *) false ;; esac; then
    ok "-m 160: exit $rc, the node's failure names the image's size and the -m to give: $why"
else
    not_ok "-m 160: exit $rc, result.json's why: '$why'"
    tail -15 "$out/small.err" | diag
fi

tap_done
