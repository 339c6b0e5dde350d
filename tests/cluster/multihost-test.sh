#!/usr/bin/env bash
# Multi-host test (TAP): the switch and the boards on different "hosts",
# each host a network namespace this test makes, all joined by veth pairs
# to a bridge in a namespace of its own, with private addresses the test
# assigns (10.213.7.0/24, only inside these namespaces).  No traffic leaves
# them; they are removed when the test ends, also on failure (trap).
#
#   tests/cluster/multihost-test.sh        (meson: test 'cluster-multihost')
#
#   1. the namespaces and the bridge: every host reaches the switch host
#   2-3. boards as QEMUs driven over qtest (tools/scale/dn2-scale): 2 in
#      each of 2 hosts, the switch in a third, all-to-all RVS, a BOTF
#      echo and a multicast to all, every byte checked; then the switch
#      is stopped and started again (same address and port), every board
#      gets its link and LID back and the same traffic is checked again;
#      in both routing modes (direct: board to board over the bridge;
#      switch: everything through the switch host)
#   4. the data really crossed the hosts: the board hosts' veths counted
#      more than half the RVS payload (in direct mode a third of the pairs
#      are on one host and talk over its loopback)
#   5-8. scripts/cluster.sh --hosts with `ip netns exec` as the remote
#      shell, launched on the switch host: the switch there, a QEMU node on
#      each board host (development mode); a job on every node; a node
#      killed on its host is reported lost on that host; SIGTERM to the
#      launcher leaves nothing on any host (tests/cluster/multihost-cluster.sh)
#   9-10. Slurm (Debian's slurm-wlm): slurmctld and a slurmd per board
#      host, started here in the namespaces with a configuration of this
#      test's own; cluster.sh run inside an allocation (salloc) takes its
#      hosts from it and starts the switch and the nodes with srun
#
# Needs root (namespaces), iproute2, slurm-wlm (scripts/setup.sh), and the binaries: QEMU, DN2_SWITCH,
# DN2_SCALE (default: found in build/), DN2_FIRMWARE_DIR.  Without root or
# ip the whole test is skipped, without Slurm's programs 9-10 are (and
# either fails when the environment variable CI is set).
set -uo pipefail
top=$(cd "$(dirname "$(realpath "$0")")/../.." && pwd)
. "$top/scripts/lib.sh"
. "$top/tests/tap/tap-lib.sh"
dn2_no_options "$@"

qemu=${QEMU:-$(dn2_find_qemu)} || bail "no QEMU"
switch=${DN2_SWITCH:-$top/build/fabric/dn2-switch}
scale=${DN2_SCALE:-$top/build/tools/scale/dn2-scale}
fw=${DN2_FIRMWARE_DIR:-$DN2_CACHE/firmware}
for b in "$qemu" "$switch" "$scale"; do
    [ -x "$b" ] || bail "$b is missing (build the project first)"
done
[ "$(id -u)" = 0 ] || tap_skip_all "network namespaces need root: run the test as root"
command -v ip > /dev/null || tap_skip_all "$(tap_missing ip iproute2)"

# Names of this run's namespaces: unique per process, so that parallel
# runs and leftovers of a killed run do not clash.
tag=dn2mh$$
ns_br=$tag-br
ns_sw=$tag-sw
hosts=("$tag-h1" "$tag-h2")
net=10.213.7
sw_addr=$net.1
work=$(mktemp -d "${TMPDIR:-/tmp}/dn2-multihost.XXXXXX")

cleanup() {
    local ns pid
    # everything still running in our namespaces
    for ns in "$ns_sw" "${hosts[@]}" "$ns_br"; do
        for pid in $(ip netns pids "$ns" 2> /dev/null); do
            kill -TERM "$pid" 2> /dev/null
        done
    done
    sleep 0.3
    for ns in "$ns_sw" "${hosts[@]}" "$ns_br"; do
        for pid in $(ip netns pids "$ns" 2> /dev/null); do
            kill -KILL "$pid" 2> /dev/null
        done
        ip netns del "$ns" 2> /dev/null
    done
    rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

tap_plan 10

# ------------------------------------------------------------ 1. the network
mk_net() {
    local i=1 ns
    ip netns add "$ns_br" || return 1
    ip -n "$ns_br" link add br0 type bridge || return 1
    ip -n "$ns_br" link set br0 up || return 1
    for ns in "$ns_sw" "${hosts[@]}"; do
        ip netns add "$ns" || return 1
        ip -n "$ns" link set lo up || return 1
        # both ends created directly in their namespaces: nothing appears
        # in the namespace this test runs in
        ip link add "p$i" netns "$ns_br" type veth peer name eth0 netns "$ns" || return 1
        ip -n "$ns_br" link set "p$i" master br0 up || return 1
        ip -n "$ns" addr add "$net.$i/24" dev eth0 || return 1
        ip -n "$ns" link set eth0 up || return 1
        i=$((i + 1))
    done
    # a UDP echo on the switch host answers each board host
    ip netns exec "$ns_sw" python3 "$top/tests/tap/udp-echo.py" serve "$sw_addr" "${#hosts[@]}" &
    sleep 0.3
    for ns in "${hosts[@]}"; do
        ip netns exec "$ns" python3 "$top/tests/tap/udp-echo.py" ping "$sw_addr" || return 1
    done
    wait
}
if mk_net > "$work/net.log" 2>&1; then
    ok "namespaces: switch host $ns_sw, board hosts ${hosts[*]}, bridge $ns_br; each board host reaches $sw_addr"
else
    not_ok "making the namespaces failed"
    diag < "$work/net.log"
    bail "no network"
fi

tx_bytes() { # NS: bytes sent on its eth0
    ip -n "$1" -s -j link show eth0 | jq '.[0].stats64.tx.bytes'
}

# ------------------------------------------------------ 2-4. qtest boards
tx0=$(( $(tx_bytes "${hosts[0]}") + $(tx_bytes "${hosts[1]}") ))
for route in direct switch; do
    "$scale" --qemu "$qemu" --switch "$switch" --fw "$fw" --boards 4 --route "$route" \
        --size 64K --seconds 1 --mcast-rounds 2 --echo-ms 20 --restart \
        --switch-netns "$ns_sw" --listen "$sw_addr:0" --netns "$(IFS=,; echo "${hosts[*]}")" \
        > "$work/scale-$route.out" 2>&1
    rc=$?
    passes=$(grep -c "^scale boards=4 route=$route .*pass=" "$work/scale-$route.out")
    if [ $rc -eq 0 ] && [ "$passes" = 2 ] \
        && grep -q "^scale boards=4 route=$route ok" "$work/scale-$route.out"; then
        ok "route=$route: 4 boards on 2 hosts, switch on a third: all-to-all RVS, echo, multicast byte-exact, before and after a switch restart"
    else
        not_ok "route=$route: dn2-scale exit status $rc, $passes of 2 passes reported"
    fi
    diag < "$work/scale-$route.out"
done
tx1=$(( $(tx_bytes "${hosts[0]}") + $(tx_bytes "${hosts[1]}") ))
sent=$(awk '/^scale .* pass=/ { for (i = 1; i <= NF; i++) if ($i ~ /^transfers=/) { split($i, a, "="); t += a[2] } } END { print t * 65536 }' "$work"/scale-*.out)
if [ "$sent" -gt 0 ] && [ $((tx1 - tx0)) -ge $((sent / 2)) ]; then
    ok "the data crossed the hosts' links: $((tx1 - tx0)) bytes on the board hosts' veths for $sent bytes of RVS payload"
else
    not_ok "the board hosts' veths sent $((tx1 - tx0)) bytes for $sent bytes of RVS payload"
fi

# ------------------------------------------- 5-8. cluster.sh over the hosts
. "$top/tests/cluster/multihost-cluster.sh"

tap_done
