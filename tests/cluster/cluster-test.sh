#!/usr/bin/env bash
# Cluster test (TAP): boots clusters of Linux guests with scripts/cluster.sh,
# each node with a DIMMnet-2 board on one dn2-switch, and checks the job
# start: every node's link is up, the LIDs are distinct, every node got the
# same rank table listing every node with the LID its board has.
#
#   tests/cluster/cluster-test.sh        (meson: test 'cluster')
#
#   1. 2 nodes  2. 4 nodes: the command on each node prints dn2-lid, its
#      DN2_* environment and the rank table; checked here
#   3. exit status: a command failing on one node fails the run (status 1)
#      and only that node is reported failed
#   4. development mode (-i): "cluster.sh exec" runs a job on every node,
#      fetching a file over the guest network; SIGTERM to the launcher
#      stops everything; the job server's credentials stay private: the
#      run directory is 0700, the job's secret and the nodes' tokens
#      0600, none of them on any process's command line (the server's,
#      the QEMUs' with their kernel command lines), and the job id alone
#      gets nothing from the server
#      and the QEMUs and the switch run with the --slice time slice
#      (100 µs by default; where the kernel has no custom slices, the
#      launcher must say that it has no effect); --slice out of the
#      kernel's range is refused before anything starts
#   After each run: no QEMU, switch or server of that run is left.
#
# Environment: QEMU, DN2_SWITCH (binaries; default: found in build/),
# DN2_CLUSTER_BOOT_TIMEOUT (seconds for a cluster to start, default 300:
# 4 TCG guests share 2 cores), DN2_CLUSTER_SIZES (default "2 4").
# Run directories: build/cluster/test-*.
set -uo pipefail
top=$(cd "$(dirname "$(realpath "$0")")/../.." && pwd)
. "$top/scripts/lib.sh"
. "$top/tests/tap/tap-lib.sh"
dn2_no_options "$@"
cluster=$top/scripts/cluster.sh
boot_timeout=${DN2_CLUSTER_BOOT_TIMEOUT:-300}
sizes=${DN2_CLUSTER_SIZES:-2 4}

# 8 test points per size, 3 for the failing command, 2 for the cluster
# secret, 9 for dev mode, 1 for a bad --slice
nsizes=$(wc -w <<< "$sizes")
tap_plan $((8 * nsizes + 3 + 2 + 9 + 1))

# No process of a run is left: every process group in RUNDIR/pgids is gone.
no_orphans() { # RUNDIR
    local g left=
    for g in $(cat "$1/pgids" 2>/dev/null); do
        if pgrep -g "$g" > /dev/null 2>&1; then left+=" $g"; fi
    done
    if [ -n "$left" ]; then
        echo "process groups still alive:$left" | diag
        for g in $left; do kill -KILL -- "-$g" 2>/dev/null; done
        return 1
    fi
    return 0
}

# The per-node command: facts for this script to check, between markers.
# shellcheck disable=SC2016   # expanded in the guest
probe_cmd='echo "LID-LINE $(dn2-lid)"
echo "ENV node=$DN2_NODE nodes=$DN2_NODES rank=$DN2_RANK lid=$DN2_LID wid=$DN2_WID ranks=$DN2_RANKS http=${DN2_HTTP%/*}"
eval "$(dn2-lid -e)"
echo "BOARD lid=$DN2_LID up=$DN2_LINK_UP"
echo "RANKS-BEGIN"; cat "$DN2_RANKS"; echo "RANKS-END"
[ "$DN2_LINK_UP" = 1 ]'

mkdir -p "$top/build/cluster"
for size in $sizes; do
    name=test-$size
    rundir=$top/build/cluster/$name
    t0=$SECONDS
    "$cluster" -q -n "$size" --name "$name" -b "$boot_timeout" -t $((boot_timeout + 120)) \
        -r "$probe_cmd" > "$top/build/cluster/$name.out" 2> "$top/build/cluster/$name.err"
    rc=$?
    elapsed=$((SECONDS - t0))
    if [ "$rc" -eq 0 ]; then
        ok "$size nodes: cluster booted and every node's command succeeded (${elapsed} s; $(grep -s all_links_up_s "$rundir/timings"))"
    else
        not_ok "$size nodes: cluster.sh exit status $rc after ${elapsed} s"
        tail -40 "$top/build/cluster/$name.err" | diag
    fi

    # Per node: LID from dn2-lid, the environment, the rank table.
    lids=() envok=1 upok=1 tabok=1 selfok=1 sameok=1
    for ((i = 0; i < size; i++)); do
        out=$rundir/node$i.out
        line=$(grep -s '^LID-LINE ' "$out")
        case $line in *"link up"*) ;; *) upok=0; echo "node$i: ${line:-no dn2-lid output}" | diag ;; esac
        lid=$(sed -n 's/^BOARD lid=\([0-9]*\) up=1$/\1/p' "$out" 2>/dev/null)
        lids[i]=${lid:-none}
        env=$(grep -s '^ENV ' "$out")
        case $env in
            "ENV node=$i nodes=$size rank=$i lid=${lid:-x} wid=0 ranks=/opt/dn2/ranks http=http://10.0.2.2:"*"/n/$i") ;;
            *) envok=0; echo "node$i: ${env:-no environment line} (board LID ${lid:-unknown})" | diag ;;
        esac
        table=$(sed -n '/^RANKS-BEGIN$/,/^RANKS-END$/p' "$out" 2>/dev/null | sed '1d;$d')
        printf '%s\n' "$table" > "$rundir/node$i.ranks"
        if [ "$(awk 'NF == 3' <<< "$table" | wc -l)" -ne "$size" ]; then
            tabok=0; { echo "node$i rank table:"; printf '%s\n' "$table"; } | diag
        fi
        [ "$(awk -v r="$i" '$1 == r { print $2 }' <<< "$table")" = "${lid:-x}" ] || selfok=0
        cmp -s "$rundir/node$i.ranks" "$rundir/www/ranks" || sameok=0
    done
    check "$size nodes: every node's board reports link up (dn2-lid)" [ "$upok" = 1 ]
    distinct=$(printf '%s\n' "${lids[@]}" | grep -v none | sort -u | wc -l)
    check "$size nodes: distinct LIDs from the subnet manager (${lids[*]})" [ "$distinct" -eq "$size" ]
    check "$size nodes: DN2_NODE/NODES/RANK/LID/WID/RANKS/HTTP exported on every node" [ "$envok" = 1 ]
    check "$size nodes: every node got a rank table of $size entries" [ "$tabok" = 1 ]
    check "$size nodes: each node's own entry in the table is its board's LID" [ "$selfok" = 1 ]
    check "$size nodes: all nodes got the launcher's table ($(tr '\n' ';' < "$rundir/www/ranks" 2>/dev/null))" [ "$sameok" = 1 ]
    if [ "$upok$selfok" != 11 ] || [ "$rc" -ne 0 ]; then
        for ((i = 0; i < size; i++)); do
            echo "node$i console (tail):" | diag
            tr -d '\r' < "$rundir/node$i.log" 2>/dev/null | tail -8 | diag
        done
    fi
    check "$size nodes: no process of the run left" no_orphans "$rundir"
done

# 3. A failing command: exit status 1, only node1 reported.
name=test-fail
rundir=$top/build/cluster/$name
"$cluster" -q -n 2 --name "$name" -b "$boot_timeout" -g 60 \
    -r '[ "$DN2_NODE" = 1 ] && { echo node one fails; exit 3; }; echo node zero fine' \
    > "$top/build/cluster/$name.out" 2> "$top/build/cluster/$name.err"
rc=$?
check "failing command on node1: cluster.sh exits 1 (got $rc)" [ "$rc" -eq 1 ]
if grep -q 'node1.*rc=3' "$top/build/cluster/$name.err" && grep -q 'node0 .* ok' "$top/build/cluster/$name.err" \
   && grep -q '^node1| node one fails$' "$top/build/cluster/$name.out" && grep -q '^node0| node zero fine$' "$top/build/cluster/$name.out"; then
    ok "failing command: node1 reported rc=3, node0 ok, both outputs collected"
else
    not_ok "failing command: summary or output wrong"
    cat "$top/build/cluster/$name.err" "$top/build/cluster/$name.out" | tail -30 | diag
fi
check "failing command: no process of the run left" no_orphans "$rundir"

# 3b. A cluster secret (docs/security.md): the switch and every board share
# it, the links come up and the launcher's own --stats check passes with it.
name=test-secret
rundir=$top/build/cluster/$name
key=$top/build/cluster/$name.key
(umask 077; head -c 24 /dev/urandom | base64 > "$key")
"$cluster" -q -n 2 --name "$name" -b "$boot_timeout" --secret-file "$key" \
    -r 'echo "secret-ok $DN2_LID"' \
    > "$top/build/cluster/$name.out" 2> "$top/build/cluster/$name.err"
rc=$?
if [ "$rc" -eq 0 ] && [ "$(grep -c '^node[01]| secret-ok ' "$top/build/cluster/$name.out")" -eq 2 ] \
   && grep -q 'secret=dn2key' "$rundir/node0.cmd" 2>/dev/null; then
    ok "cluster secret: both boards joined with --secret-file and ran their command"
else
    not_ok "cluster secret: cluster.sh exit status $rc"
    cat "$top/build/cluster/$name.err" "$top/build/cluster/$name.out" | tail -20 | diag
fi
check "cluster secret: no process of the run left" no_orphans "$rundir"
rm -f "$key"

# 4. Development mode: exec, the file server, SIGTERM.
name=test-dev
rundir=$top/build/cluster/$name
marker=cluster-test-$$-$RANDOM
mkdir -p "$top/build/guest/export"
echo "$marker" > "$top/build/guest/export/.cluster-test-file"
# setsid: its own process group, so that nothing else gets our signal.
setsid "$cluster" -n 2 --name "$name" -b "$boot_timeout" -i \
    > "$top/build/cluster/$name.out" 2> "$top/build/cluster/$name.err" &
launcher=$!
for ((t = 0; t < boot_timeout; t++)); do
    grep -q 'nodes ready' "$top/build/cluster/$name.err" && break
    kill -0 "$launcher" 2>/dev/null || break
    sleep 1
done
if grep -q 'nodes ready' "$top/build/cluster/$name.err"; then
    ok "dev mode: 2 nodes ready after ${t} s"
else
    not_ok "dev mode: nodes not ready after ${t} s"
    tail -30 "$top/build/cluster/$name.err" | diag
fi
# shellcheck disable=SC2016
out=$("$cluster" exec -d "$rundir" -t 120 'wget -q -O - $DN2_HTTP/.cluster-test-file; echo "rank $DN2_RANK of $DN2_NODES"' 2>&1)
rc=$?
if [ "$rc" -eq 0 ] && [ "$(grep -c "^node[01]| $marker\$" <<< "$out")" -eq 2 ] \
   && grep -q '^node1| rank 1 of 2$' <<< "$out"; then
    ok "dev mode: exec ran a job on both nodes, each fetched a file from the host"
else
    not_ok "dev mode: exec status $rc"
    printf '%s\n' "$out" | diag
fi
rm -f "$top/build/guest/export/.cluster-test-file"
# The job server's credentials (docs/security.md, "The job server").
modes=$(stat -c '%n %a' "$rundir" "$rundir/secret" "$rundir/tokens" "$rundir"/tokens/node* 2>&1)
if [ "$(stat -c %a "$rundir" 2>/dev/null)" = 700 ] && [ "$(stat -c %a "$rundir/secret" 2>/dev/null)" = 600 ] \
   && [ "$(stat -c %a "$rundir/tokens" 2>/dev/null)" = 700 ] \
   && [ "$(stat -c %a "$rundir"/tokens/node0 "$rundir"/tokens/node1 2>/dev/null | sort -u)" = 600 ]; then
    ok "dev mode: run directory 0700, job secret and node tokens 0600"
else
    not_ok "dev mode: modes of the run's private files"
    printf '%s\n' "$modes" | diag
fi
creds=()
for f in "$rundir/secret" "$rundir"/tokens/node*; do [ -s "$f" ] && creds+=("$(cat "$f")"); done
leaks=
if [ ${#creds[@]} -eq 3 ]; then
    # every process's command line (the server, the QEMUs and their -append)
    all=$(for c in /proc/[0-9]*/cmdline; do tr '\0' ' ' < "$c" 2>/dev/null; echo; done; cat "$rundir"/node*.cmd)
    for c in "${creds[@]}"; do grep -qF -- "$c" <<< "$all" && leaks+=" ${c:0:8}..."; done
    grep -q 'fw_cfg name=opt/dn2/token.*file=' "$rundir/node0.cmd" || leaks+=" (no fw_cfg token file on QEMU's command line)"
else
    leaks=" (no secret or tokens: ${#creds[@]} files)"
fi
check "dev mode: no credential on any command line (ps, QEMU -append)${leaks:+:$leaks}" [ -z "$leaks" ]
# The job id (no longer a credential) gets nothing: no rank table, no abort.
jobid=$(sed -n 's/^jobid=//p' "$rundir/info")
hport=$(cat "$rundir/http.port" 2>/dev/null)
forged=$(python3 "$top/tests/cluster/forge-requests.py" "$hport" "$jobid" 2>&1)
if [ "$(grep -c '^403 ' <<< "$forged")" -eq 5 ] && [ ! -e "$rundir/pmi-abort" ]; then
    ok "dev mode: the job id alone is refused (rank table, command, PMI abort and barrier, join)"
else
    not_ok "dev mode: requests with the job id alone"
    printf '%s\n' "$forged" | diag
fi
# shellcheck disable=SC2016
"$cluster" exec -d "$rundir" -t 120 '[ "$DN2_NODE" = 0 ] || exit 5' > /dev/null 2>&1
rc=$?
check "dev mode: exec exits 1 when a node's job fails (got $rc)" [ "$rc" -eq 1 ]
# Host scheduling: every QEMU and the switch (process group leaders, see
# no_orphans) has the default --slice, 100 µs, if the kernel takes it.
slices=
for g in $(cat "$rundir/pgids" 2>/dev/null); do
    case $(cat "/proc/$g/comm" 2>/dev/null) in qemu-system*|dn2-switch) ;; *) continue ;; esac
    slices+=" $(cat "/proc/$g/comm"):$(awk '/^se.slice/ { print $3 }' "/proc/$g/sched" 2>/dev/null)"
done
if why=$(python3 "$top/scripts/sched-slice.py" --check 100); then
    check "dev mode: QEMUs and switch run with a 100 µs slice:$slices" \
        [ "$(tr ' ' '\n' <<< "$slices" | grep -c ':100000$')" -eq 3 ]
else
    check "dev mode: no custom slice here ($why), and the launcher said so" \
        grep -q 'has no effect here' "$top/build/cluster/$name.err"
fi
kill -TERM "$launcher" 2>/dev/null
for ((t = 0; t < 20; t++)); do kill -0 "$launcher" 2>/dev/null || break; sleep 0.5; done
if kill -0 "$launcher" 2>/dev/null; then
    not_ok "dev mode: the launcher did not stop on SIGTERM"
    kill -KILL "$launcher" 2>/dev/null
else
    ok "dev mode: the launcher stopped on SIGTERM"
fi
wait "$launcher" 2>/dev/null
check "dev mode: no process of the run left" no_orphans "$rundir"

# 5. A slice the kernel would clamp is refused before anything starts.
out=$("$cluster" -q -n 2 --name test-badslice --slice 50 -r true 2>&1)
rc=$?
if [ "$rc" -eq 2 ] && grep -q -- '--slice: 100..100000' <<< "$out"; then
    ok "--slice 50: refused with status 2 (a usage error) and the valid range"
else
    not_ok "--slice 50: status $rc"
    printf '%s\n' "$out" | diag
fi

diag "logs: $top/build/cluster/test-*/ and $top/build/cluster/test-*.err"
tap_done
