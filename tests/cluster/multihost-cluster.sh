# shellcheck shell=bash
# shellcheck disable=SC2154  # top, work, ns_sw, hosts, sw_addr, net: the caller's
# Part of tests/cluster/multihost-test.sh (sourced there, in its namespaces):
# scripts/cluster.sh over several hosts with `ip netns exec` as the remote
# shell, and inside a Slurm allocation.  Uses tests/tap/tap-lib.sh (the
# caller sources it), $work, $top, $ns_sw, hosts[], $sw_addr from the caller.

boot_timeout=${DN2_CLUSTER_BOOT_TIMEOUT:-300}
cluster=$top/scripts/cluster.sh

# Processes (ids) in a namespace, other than the ones this test keeps there.
ns_procs() { # NS PATTERN
    local pid
    for pid in $(ip netns pids "$1" 2> /dev/null); do
        tr '\0' ' ' < "/proc/$pid/cmdline" 2> /dev/null | grep -q -- "$2" && echo "$pid"
    done
}

# wait_for SECONDS COMMAND...: until COMMAND succeeds
wait_for() {
    local end=$((SECONDS + $1))
    shift
    until "$@"; do
        [ $SECONDS -lt $end ] || return 1
        sleep 1
    done
}

# ------------------------------------------------------------------ 5-8
# A development-mode cluster (-i) launched on the switch host, with a node on
# each board host: it becomes ready, a job runs on every node, a node whose
# QEMU is killed on its host is reported lost on that host, and SIGTERM to
# the launcher stops everything on every host.
name=mh-$$
rundir=$top/build/cluster/$name
mkdir -p "$top/build/cluster"
: > "$work/cluster.err"
ip netns exec "$ns_sw" "$cluster" -i -q -n 2 --name "$name" -b "$boot_timeout" \
    --hosts "$(IFS=,; echo "${hosts[*]}")" --switch-host "$ns_sw" --rsh "ip netns exec" \
    > "$work/cluster.out" 2> "$work/cluster.err" &
lpid=$!
ready() { grep -q 'all 2 nodes ready' "$work/cluster.err" || ! kill -0 "$lpid" 2> /dev/null; }
wait_for $((boot_timeout + 60)) ready
placed=1
for i in 0 1; do
    h=${hosts[i]}
    p=$(cat "$rundir/node$i.pid" 2> /dev/null)
    # the node's QEMU runs in its host's namespace, the switch in the switch host's
    if [ -z "$p" ] || ! ip netns pids "$h" | grep -qx "$p"; then placed=0; fi
done
sp=$(cat "$rundir/switch.pid" 2> /dev/null)
[ -n "$sp" ] && ip netns pids "$ns_sw" | grep -qx "$sp" || placed=0
if grep -q 'all 2 nodes ready' "$work/cluster.err" && [ $placed = 1 ]; then
    ok "cluster.sh --hosts ${hosts[*]} --switch-host $ns_sw --rsh 'ip netns exec': ready, node0 on ${hosts[0]}, node1 on ${hosts[1]}, switch on $ns_sw"
else
    not_ok "the multi-host cluster did not come up as placed (ready: $(grep -c 'nodes ready' "$work/cluster.err"), placement ok: $placed)"
    tail -30 "$work/cluster.err" | diag
fi

# a job on every node: each board's LID, the rank table and the job server
# across hosts (fetched from the launcher's host through the user network)
"$cluster" exec -d "$rundir" -t 120 \
    'dn2-lid && wget -q -O - "$DN2_HTTP/ranks" | wc -l' > "$work/exec.out" 2> "$work/exec.err"
rc=$?
if [ $rc -eq 0 ] && [ "$(grep -c '^node[01]| 2$' "$work/exec.out")" = 2 ]; then
    ok "cluster.sh exec on both hosts: every node has its link and fetched the 2-line rank table from the launcher's host"
else
    not_ok "cluster.sh exec across the hosts: status $rc"
    diag < "$work/exec.out"
    tail -10 "$work/exec.err" | diag
fi

# node1's QEMU dies on its host: the launcher reports it lost there
p=$(cat "$rundir/node1.pid" 2> /dev/null)
[ -n "$p" ] && ip netns exec "${hosts[1]}" kill -KILL "$p"
lost() { grep -q "node1 stopped.*node lost on host ${hosts[1]}" "$work/cluster.err"; }
if wait_for 30 lost; then
    ok "a node killed on host ${hosts[1]} is reported lost on that host"
else
    not_ok "no report of node1 lost on host ${hosts[1]}"
    tail -10 "$work/cluster.err" | diag
fi

# SIGTERM: teardown reaches every host
kill -TERM "$lpid" 2> /dev/null
wait "$lpid"
left=
for ns in "$ns_sw" "${hosts[@]}"; do
    for pid in $(ns_procs "$ns" 'qemu-system\|dn2-switch\|python'); do
        left+=" $ns:$pid"
    done
done
if [ -z "$left" ]; then
    ok "SIGTERM to the launcher: no QEMU, switch or server left on any host"
else
    not_ok "processes left after the teardown:$left"
fi

# ------------------------------------------------------------------ 9-10
# Slurm: a controller on the switch host and a node daemon on each board
# host (Debian's slurm-wlm, with a configuration of this test's own: no
# munge (auth/none), no accounting, its own ports, state and logs under
# $work); cluster.sh run by salloc inside a 2-host allocation takes its
# hosts from SLURM_JOB_NODELIST and starts the switch and the nodes with
# srun.  slurmd enters its host's network namespace with nsenter (not ip
# netns exec, which remounts /sys and so hides the cgroup tree slurmd
# checks at start).
slurm_missing=
for t in slurmctld slurmd salloc srun sinfo nsenter; do
    command -v "$t" > /dev/null || { slurm_missing=$t; break; }
done
if [ -n "$slurm_missing" ]; then
    case $slurm_missing in
        slurmctld) why=$(tap_missing slurmctld slurmctld) ;;
        slurmd) why=$(tap_missing slurmd slurmd) ;;
        nsenter) why=$(tap_missing nsenter util-linux) ;;
        *) why=$(tap_missing "$slurm_missing" slurm-client) ;;
    esac
    skip "Slurm: slurmctld and a slurmd per board host" "$why"
    skip "salloc -N 2 cluster.sh: hosts from the allocation" "$why"
    return 0
fi
sw=$work/slurm
mkdir -p "$sw/state"
slurm_nodes=()
for i in "${!hosts[@]}"; do
    slurm_nodes+=("dn2n$((i + 1))")
    mkdir -p "$sw/spool-dn2n$((i + 1))"
done
case $(stat -f -c %T /sys/fs/cgroup 2> /dev/null) in
    cgroup2fs) cg=cgroup/v2 ;;
    *) cg=cgroup/v1 ;;
esac
printf 'CgroupPlugin=%s\n' "$cg" > "$sw/cgroup.conf"
{
    echo "ClusterName=dn2test"
    # slurmctld wants to be named as this machine is
    echo "SlurmctldHost=$(hostname -s)($sw_addr)"
    echo "SlurmctldPort=16817"
    echo "SlurmdPort=16818"
    echo "AuthType=auth/none"
    echo "CredType=cred/none"
    echo "SlurmUser=root"
    echo "SlurmdUser=root"
    echo "StateSaveLocation=$sw/state"
    echo "SlurmdSpoolDir=$sw/spool-%n"
    echo "SlurmctldPidFile=$sw/slurmctld.pid"
    echo "SlurmdPidFile=$sw/slurmd-%n.pid"
    echo "SlurmctldLogFile=$sw/slurmctld.log"
    echo "SlurmdLogFile=$sw/slurmd-%n.log"
    echo "ProctrackType=proctrack/linuxproc"
    echo "TaskPlugin=task/none"
    echo "JobAcctGatherType=jobacct_gather/none"
    echo "AccountingStorageType=accounting_storage/none"
    echo "SelectType=select/linear"
    echo "ReturnToService=2"
    echo "MpiDefault=none"
    for i in "${!hosts[@]}"; do
        echo "NodeName=dn2n$((i + 1)) NodeAddr=$net.$((i + 2)) CPUs=1 State=UNKNOWN"
    done
    echo "PartitionName=dn2 Nodes=$(IFS=,; echo "${slurm_nodes[*]}") Default=YES MaxTime=INFINITE State=UP"
} > "$sw/slurm.conf"
export SLURM_CONF=$sw/slurm.conf
ip netns exec "$ns_sw" slurmctld -D -i -f "$SLURM_CONF" > "$sw/slurmctld.out" 2>&1 &
for i in "${!hosts[@]}"; do
    nsenter --net="/run/netns/${hosts[i]}" slurmd -D -N "dn2n$((i + 1))" -f "$SLURM_CONF" \
        > "$sw/slurmd-$i.out" 2>&1 &
done
idle() { [ "$(ip netns exec "$ns_sw" sinfo -h -o %T -p dn2 2> /dev/null | sort -u)" = idle ]; }
if wait_for 60 idle; then
    ok "Slurm: slurmctld on $ns_sw, slurmd ${slurm_nodes[*]} on ${hosts[*]}: all idle"
else
    not_ok "Slurm did not come up: $(ip netns exec "$ns_sw" sinfo 2>&1 | tail -2)"
    tail -5 "$sw"/*.out "$sw"/*.log 2> /dev/null | diag
fi

name=mhs-$$
rundir=$top/build/cluster/$name
# shellcheck disable=SC2016   # expanded in the guest
timeout $((boot_timeout + 240)) ip netns exec "$ns_sw" salloc -N "${#hosts[@]}" -p dn2 \
    "$cluster" -q -n 2 --name "$name" -b "$boot_timeout" -t $((boot_timeout + 120)) \
    -r 'dn2-lid && wget -q -O - "$DN2_HTTP/ranks" | wc -l' \
    > "$work/slurm.out" 2> "$work/slurm.err"
rc=$?
steps=$(cat "$sw"/slurmd-dn2n*.log 2> /dev/null | grep -c 'launch task')
placed=$(grep -c '^node[01]_host=dn2n[12]$' "$rundir/info" 2> /dev/null)
if [ $rc -eq 0 ] && [ "$(grep -c '^node[01]| 2$' "$work/slurm.out")" = 2 ] \
    && [ "$placed" = 2 ] && [ "$steps" -ge 3 ] && grep -q 'Slurm allocation' "$work/slurm.err"; then
    ok "salloc -N 2 cluster.sh: hosts from the allocation, switch and nodes started with srun ($steps steps), every node ran its command"
else
    not_ok "cluster.sh in a Slurm allocation: status $rc, $placed nodes placed on allocation hosts, $steps srun steps"
    tail -30 "$work/slurm.err" | diag
    diag < "$work/slurm.out"
fi
