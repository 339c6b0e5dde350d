#!/usr/bin/env bash
# Kept clusters and results (TAP): scripts/cluster.sh start / exec / cp /
# status / list / stop on a named 2-node cluster, result.json and --junit.
#
#   tests/cluster/lifecycle-test.sh        (meson: test 'cluster-lifecycle')
#
#   1. usage: start refuses --virtual-time (with the reason), cp a bad
#      spelling (status 2); status and cp on a cluster that does not exist
#      (status 4)
#   2. start NAME (2 nodes, --board-stats, --junit, node 1 with its own
#      QEMU arguments --node-qemu 1 '-smbios type=1,serial=...') returns 0
#      once both nodes serve jobs; only node 1's QEMU got the arguments
#   3. exec NAME on all nodes with {node} and {rank}; exec --node 1 runs
#      on node 1 only; a failing command gives status 1
#   4. cp: a host file to every node and to node 1 only, each copied back
#      to the host and compared byte for byte
#   5. status: both nodes up, each board's link up with its LID (the
#      switch's view), board counters; list: the cluster, running, kept
#   6. a second start of the same NAME is refused and names it
#   7. node 1's QEMU killed with SIGKILL: status shows node 1 DEAD and
#      why (killed by SIGKILL), exec says it is dead (status 3)
#   8. stop: says node 1 died and why (status 3); no process of the run
#      is left (pgrep over the run's process groups and QEMU pids); stop
#      again: "was not running", status 0
#   9. result.json of the kept cluster (node 0 up, node 1 failed with the
#      reason) and its JUnit file (2 test cases, 1 failure), read with
#      python3
#  10. a one-shot run (-r, node 1 exits 7) with --junit: exit status 1;
#      result.json has node 1 failed with exit status 7, node 0 ok; the
#      JUnit failure carries node 1's output
#
# Environment: QEMU, DN2_SWITCH (as cluster-test.sh), DN2_CLUSTER_BOOT_TIMEOUT
# (seconds for a cluster to start, default 300).  Run directories:
# build/cluster/test-life*.
set -uo pipefail
top=$(cd "$(dirname "$(realpath "$0")")/../.." && pwd)
. "$top/scripts/lib.sh"
. "$top/tests/tap/tap-lib.sh"
dn2_no_options "$@"
cluster=$top/scripts/cluster.sh
boot_timeout=${DN2_CLUSTER_BOOT_TIMEOUT:-300}
command -v python3 > /dev/null || tap_skip_all "$(tap_missing python3)"
command -v pgrep > /dev/null || tap_skip_all "$(tap_missing pgrep procps)"

tap_plan 25
name=test-life
rundir=$top/build/cluster/$name
# (a run of this test that was killed may have left it running)
"$cluster" stop "$name" > /dev/null 2>&1
work=$top/build/cluster/$name.files
mkdir -p "$work"
log=$work/log
cl() { "$cluster" "$@" >> "$log" 2>&1; }
# run OUTVAR CMD...: CMD's stdout and stderr into OUTVAR, its status in rc
run() { local -n _o=$1; shift; _o=$("$@" 2>&1); rc=$?; printf '%s\n' "\$ ${*:1:4}..." "$_o" >> "$log"; }
started=
finish() {
    [ -n "$started" ] && "$cluster" stop "$name" > /dev/null 2>&1
    rm -rf "$work"
}
trap finish EXIT

# No process of the run: its process groups (RUNDIR/pgids), its QEMUs.
no_orphans() {
    local g p left=
    for g in $(cat "$rundir/pgids" 2>/dev/null); do
        pgrep -g "$g" > /dev/null 2>&1 && left+=" group $g"
    done
    for p in $(sed -n 's/^node[0-9]*_pid=//p; s/^launcher_pid=//p' "$rundir/info" 2>/dev/null); do
        [ "$p" -gt 0 ] && kill -0 "$p" 2>/dev/null && left+=" pid $p"
    done
    [ -z "$left" ] && return 0
    diag "still alive:$left"
    return 1
}

# 1. usage
run out "$cluster" start "$name" --virtual-time -n 2
check "start --virtual-time: refused (status $rc) with the reason" \
    eval '[ "$rc" = 2 ] && grep -q "host-dependent times" <<< "$out"'
run out "$cluster" cp "$name" "$0" /tmp/x
check "cp without a node path: usage error (status $rc)" [ "$rc" = 2 ]
run out "$cluster" status "no-such-cluster"
rc1=$rc
run out "$cluster" cp "no-such-cluster" "$0" :/tmp/x
check "status and cp on a cluster that does not exist: status 4 (got $rc1, $rc)" [ "$rc1$rc" = 44 ]

# 2. start
t0=$SECONDS
run out "$cluster" start "$name" -n 2 -b "$boot_timeout" --board-stats --junit "$work/kept.xml" \
    --node-qemu 1 "-smbios type=1,serial=dn2-life-node1"
started=1
if [ "$rc" = 0 ] && grep -q "cluster $name is up" <<< "$out"; then
    ok "start: 2 nodes up after $((SECONDS - t0)) s"
else
    not_ok "start: status $rc after $((SECONDS - t0)) s"
    tail -30 <<< "$out" | diag
    "$cluster" stop "$name" > /dev/null 2>&1
    bail "the cluster did not start"
fi
check "--node-qemu 1: only node 1's QEMU has its arguments" \
    eval 'grep -q serial=dn2-life-node1 "$rundir/node1.cmd" && ! grep -q serial=dn2-life "$rundir/node0.cmd"'

# 3. exec
run out "$cluster" exec "$name" -t 120 'echo "I am {node} rank {rank} env $DN2_NODE"'
if [ "$rc" = 0 ] && grep -qx 'node0| I am 0 rank 0 env 0' <<< "$out" && grep -qx 'node1| I am 1 rank 1 env 1' <<< "$out"; then
    ok "exec NAME: every node ran the command, {node} and {rank} replaced"
else
    not_ok "exec NAME: status $rc"; printf '%s\n' "$out" | diag
fi
run out "$cluster" exec "$name" --node 1 -t 120 'echo "only {node}"; cat /sys/class/dmi/id/product_serial 2>/dev/null || echo no-dmi'
if [ "$rc" = 0 ] && grep -qx 'node1| only 1' <<< "$out" && ! grep -q '^node0|' <<< "$out"; then
    ok "exec --node 1: node 1 only"
else
    not_ok "exec --node 1: status $rc"; printf '%s\n' "$out" | diag
fi
grep -q '^node1| dn2-life-node1$' <<< "$out" || grep -q '^node1| no-dmi$' <<< "$out"
check "--node-qemu 1: node 1's guest sees its SMBIOS serial (or has no DMI in sysfs)" [ $? = 0 ]
run out "$cluster" exec "$name" -t 120 '[ {node} = 0 ] || exit 9'
check "exec: a command failing on node 1 gives status 1 (got $rc)" \
    eval '[ "$rc" = 1 ] && grep -q "node1: .*rc=9" <<< "$out"'

# 4. cp both ways, byte-checked
head -c 300000 /dev/urandom > "$work/all.bin"
head -c 70001 /dev/urandom > "$work/one.bin"
run out "$cluster" cp "$name" "$work/all.bin" :/tmp/
rc1=$rc
run out2 "$cluster" cp "$name" "$work/one.bin" 1:/root/one-copy.bin
check "cp to every node (status $rc1) and to node 1 (status $rc)" [ "$rc1$rc" = 00 ]
okb=1
for i in 0 1; do
    run out "$cluster" cp "$name" "$i:/tmp/all.bin" "$work/back$i.bin"
    cmp "$work/all.bin" "$work/back$i.bin" > /dev/null 2>&1 || { okb=0; printf '%s\n' "$out" | diag; }
done
run out "$cluster" cp "$name" 1:/root/one-copy.bin "$work/"
cmp "$work/one.bin" "$work/one-copy.bin" > /dev/null 2>&1 || { okb=0; printf '%s\n' "$out" | diag; }
check "cp back from node 0 and node 1: byte-identical (300000 and 70001 random bytes)" [ "$okb" = 1 ]
run out "$cluster" cp "$name" 0:/root/one-copy.bin "$work/none.bin"
check "cp of a file node 0 does not have: status 1, named (got $rc)" \
    eval '[ "$rc" = 1 ] && grep -q "no such file on node0" <<< "$out" && [ ! -e "$work/none.bin" ]'

# 5. status, list
sleep 1.5   # (the board counters are read once a second)
run out "$cluster" status "$name"
if [ "$rc" = 0 ] && grep -Eq '^  node0 +up +link up, LID 0x000[12]' <<< "$out" \
   && grep -Eq '^  node1 +up +link up, LID 0x000[12]' <<< "$out" && grep -q 'up [0-9]' <<< "$out"; then
    ok "status: both nodes up, each board's link up with its LID, the uptime"
else
    not_ok "status: status $rc"; printf '%s\n' "$out" | diag
fi
check "status: the boards' counters (--board-stats)" eval 'grep -q "^ *board: " <<< "$out" && grep -q "tx-packets=" <<< "$out"'
run out "$cluster" list
check "list: $name running, kept, 2 nodes" grep -Eq "^$name +running +2 +kept" <<< "$out"

# 6. the same name again
run out "$cluster" start "$name" -n 2
check "a second start of $name: refused (status $rc), naming it" \
    eval '[ "$rc" = 4 ] && grep -q "cluster $name is running" <<< "$out"'

# 7. a node dies
q1=$(sed -n 's/^node1_pid=//p' "$rundir/info")
kill -KILL "$q1" 2>/dev/null
dead=
for ((t = 0; t < 40; t++)); do
    out=$("$cluster" status "$name" 2>&1)
    grep -Eq '^  node1 +DEAD .*killed by SIGKILL' <<< "$out" && { dead=1; break; }
    sleep 0.5
done
[ -n "$dead" ] || printf '%s\n' "$out" | diag
check "status: node 1 DEAD, killed by SIGKILL; node 0 still up" \
    eval '[ -n "$dead" ] && grep -Eq "^  node0 +up" <<< "$out"'
run out "$cluster" exec "$name" -t 60 'echo still {node}'
check "exec: node 0 runs it, node 1 is dead (status 3, got $rc)" \
    eval '[ "$rc" = 3 ] && grep -qx "node0| still 0" <<< "$out" && grep -q "node1: .*dead.*SIGKILL" <<< "$out"'

# 8. stop
run out "$cluster" stop "$name"
started=
check "stop: status 3 and node 1's death named with its reason (got $rc)" \
    eval '[ "$rc" = 3 ] && grep -q "node1 had .*died.*killed by SIGKILL" <<< "$out" && grep -q "stopped" <<< "$out"'
check "stop: no process of the run left (launcher, QEMUs, switch, job server, poller)" no_orphans
run out "$cluster" stop "$name"
check "stop again: not running, status 0 (got $rc)" eval '[ "$rc" = 0 ] && grep -q "was not running" <<< "$out"'

# 9. the kept cluster's results
run out python3 "$top/tests/cluster/lifecycle-check.py" kept "$rundir/result.json" "$work/kept.xml"
[ "$rc" = 0 ] || printf '%s\n' "$out" | diag
check "result.json: node 0 up, node 1 failed with the reason; counters; JUnit: 2 cases, 1 failure" [ "$rc" = 0 ]

# 10. a one-shot run with --junit
oname=$name-once
run out "$cluster" -q -n 2 --name "$oname" -b "$boot_timeout" --junit "$work/once.xml" \
    -r 'echo "output of {node}"; [ {rank} = 1 ] && exit 7; true'
check "one-shot: node 1 exits 7: status 1 (got $rc)" [ "$rc" = 1 ]
run out python3 "$top/tests/cluster/lifecycle-check.py" one-shot "$top/build/cluster/$oname/result.json" "$work/once.xml"
[ "$rc" = 0 ] || printf '%s\n' "$out" | diag
check "one-shot result.json: node 1 failed with 7, node 0 ok; JUnit failure with node 1's output" [ "$rc" = 0 ]
rundir=$top/build/cluster/$oname
check "one-shot: no process of the run left" no_orphans

diag "logs: $rundir and build/cluster/$name/"
tap_done
