#!/usr/bin/env bash
# TAP: scripts/host-cpu.py without a cluster.  A fake run directory's
# "info" names two "nodes" (a busy loop and a sleep) and a third process
# stands for the switch (its command line names RUNDIR/switch.port, as
# dn2-switch's --ready-file does); the test writes the begin and the end
# mark into a file while the busy loop spends 0.3 s of CPU, and checks
# what host-cpu.py printed (once the busy node's slow start-up is over): the busy node's vCPU thread (named as QEMU names it) with at least
# 0.2 s on a CPU (CPU time, not wall time: a loaded host only stretches
# the wall), the sleeping node with almost none, the switch found, the
# total, --per, the table form, and the timeout's exit status.
# First: run without python3 on PATH, this test says so in TAP (a skip
# naming the remedy; with CI set, a failure) instead of exiting 0 silently.
#
#   tests/scripts/host-cpu-test.sh        (meson: test 'host-cpu')
set -uo pipefail
top=$(cd "$(dirname "$(realpath "$0")")/../.." && pwd)
. "$top/scripts/lib.sh"
. "$top/tests/tap/tap-lib.sh"
dn2_no_options "$@"

hc=$top/scripts/host-cpu.py
work=$(mktemp -d "${TMPDIR:-/tmp}/dn2-host-cpu.XXXXXX")
pids=()
cleanup() {
    local p
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
    rm -rf "$work"
}
trap cleanup EXIT
command -v python3 > /dev/null || tap_skip_all "$(tap_missing python3)"

tap_plan 11
# this test again with a PATH of the tools it needs before its python3
# check (the shell's and scripts/lib.sh's), python not among them
mkdir "$work/nopy"
for c in bash env realpath dirname basename mktemp rm cat sed grep awk tr head tail uname id; do
    p=$(command -v "$c") && ln -s "$p" "$work/nopy/$c"
done
np_out=$(env -u CI PATH="$work/nopy" bash "$0" 2>&1); np_rc=$?
np_ci=$(CI=1 PATH="$work/nopy" bash "$0" 2>&1); np_ci_rc=$?
{ [ $np_rc = 0 ] && [[ $np_out == "1..0 # SKIP python3 not found: run scripts/setup.sh"* ]] &&
    [ $np_ci_rc = 1 ] && [[ $np_ci == "1..1"$'\n'"not ok 1 "* ]]; }
result $? "without python3 on PATH: a TAP skip naming scripts/setup.sh (status $np_rc), with CI set a failure (status $np_ci_rc)"
printf '%s\n' "$np_out" "$np_ci" | diag
run=$work/run out=$work/out
mkdir -p "$run"
# the busy "node": a thread named as QEMU names its vCPU ("CPU 0/TCG"),
# each time $work/go appears, spins for 0.3 s of the process's CPU time,
# writes $work/done and waits for go to go away; the main thread writes
# $work/ready once started, then waits.  Its start-up is made slow (1.2 s
# of CPU, tests/scripts/slow-start), as on a loaded host
PYTHONPATH=$top/tests/scripts/slow-start python3 "$top/tests/scripts/fake-node.py" vcpu "$work/go" "$work/done" "$work/ready" &
pids+=($!); busy=$!
sleep 600 &
pids+=($!); idle=$!
# the "switch": its command line names RUNDIR/switch.port
python3 "$top/tests/scripts/fake-node.py" switch --ready-file "$run/switch.port" &
pids+=($!)
printf 'launcher_pid=0\nnode0_pid=%s\nnode1_pid=%s\n' "$busy" "$idle" > "$run/info"

# The busy node's interpreter start-up is its main thread's CPU time: the
# begin mark waits until it is over (on a loaded host it can take more
# than a second), or the main thread's figure below counts it.
for _ in $(seq 1200); do [ -e "$work/ready" ] && break; sleep 0.05; done
check "the busy stand-in node started (its ready file)" [ -e "$work/ready" ]

# mark: the begin mark, the busy loop's work, the end mark; host-cpu.py
# polls every 15 ms, so 0.5 s is ample to catch the begin mark first
marks() {
    rm -f "$work/go" "$work/done"
    sleep 1
    echo "[3.0] mark stream-begin" >> "$out"
    sleep 0.5
    touch "$work/go"
    for _ in $(seq 200); do [ -e "$work/done" ] && break; sleep 0.05; done
    echo "[3.0] mark stream-end" >> "$out"
    rm -f "$work/go"
}

: > "$out"
python3 "$hc" --kv --per 10 --timeout 60 --begin '^\[3\.0\] mark stream-begin' \
    --end '^\[3\.0\] mark stream-end' "$run" "$out" > "$work/kv" 2> "$work/err" &
hcpid=$!
marks
wait $hcpid
rc=$?
check "host-cpu.py --kv exits 0 after both marks (status $rc)" [ "$rc" = 0 ]
[ "$rc" = 0 ] || diag < "$work/err"
sed 's/^/# /' "$work/kv"
kv() { awk -v c="$1" -v f="$2" '$1 == "cpu" && $2 == c { print $f }' "$work/kv"; }
ge() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a != "" && a + 0 >= b + 0) }'; }
lt() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a != "" && a + 0 < b + 0) }'; }
check "the busy node's vCPU thread ran >= 0.2 s (run $(kv node0.vcpu 3) s), its main thread < 0.05 s ($(kv node0.main 3) s)" \
    sh -c "$(declare -f ge lt); ge '$(kv node0.vcpu 3)' 0.2 && lt '$(kv node0.main 3)' 0.05"
check "the sleeping node ran < 0.05 s (run $(kv node1.main 3) s)" lt "$(kv node1.main 3)" 0.05
check "the switch is found by its --ready-file (line: $(grep 'cpu switch' "$work/kv"))" grep -q '^cpu switch [0-9.]* [0-9.]*$' "$work/kv"
tot=$(kv total 3) sum=$(awk '$1 == "cpu" && $2 != "total" { s += $3 } END { print s }' "$work/kv")
check "the total is the sum of the classes ($tot against $sum)" \
    awk -v a="$tot" -v b="$sum" 'BEGIN { exit !(a - b < 0.002 && b - a < 0.002) }'
wall=$(awk '$1 == "wall_s" { print $2 }' "$work/kv")
check "wall_s and cpus are printed, wall >= 0.25 s (wall $wall s; $(grep '^cpus' "$work/kv"))" \
    sh -c "grep -q '^cpus [0-9.]*$' '$work/kv' && grep -q '^per 10$' '$work/kv' && awk 'BEGIN { exit !($wall >= 0.25) }'"

# the table form, with --per: the busy node's CPU ms per unit
: > "$out"
python3 "$hc" --per 10 --unit MiB --timeout 60 "$run" "$out" > "$work/table" 2> "$work/err" &
hcpid=$!
marks
wait $hcpid
rc=$?
sed 's/^/# /' "$work/table"
ms=$(awk '$1 == "node0.vcpu" { print $4 }' "$work/table")
check "the table: node0.vcpu's CPU ms/MiB at 10 MiB >= 20 ($ms; status $rc)" ge "$ms" 20
check "the table: a header and the total line" \
    sh -c "grep -q 'CPU ms/MiB' '$work/table' && grep -q '^total ' '$work/table'"

# no end mark: exit 1 after the timeout, naming the mark
echo "mark stream-begin" > "$work/nomark"
python3 "$hc" --timeout 0.5 "$run" "$work/nomark" > /dev/null 2> "$work/err"
rc=$?
check "no end mark: exit 1 after --timeout, naming the end mark (status $rc: $(cat "$work/err"))" \
    sh -c "[ $rc = 1 ] && grep -q 'end mark' '$work/err'"
tap_done
