#!/usr/bin/env bash
# The lock-step over shared memory gives the run the switch's UDP gives
# (TAP): run A, 2 nodes in virtual time over UDP (`--vt-sync udp`: the
# switch's reports and grants, the reliable lanes); run B, `cluster.sh --replay A --vt-sync shm`:
# the boards keep the lock-step in the sync domain RUNDIR/vt.shm and pass
# their packets through its rings.  The replay compares every node's output
# and pcap with run A's and exits 5 on the first difference.
#
#   tests/cluster/vt-shm-test.sh        (meson: test 'cluster-vt-shm')
#
# Each node: dn2-vt-exchange -k 4 (an all-to-all dn2msg exchange) and
# dn2-bench's RVS table at 8 B and 4 KiB.  Environment: QEMU, DN2_SWITCH,
# DN2_CLUSTER_BOOT_TIMEOUT (default 300).  Run directories:
# build/cluster/vt-shm-a, build/cluster/vt-shm-b.
set -uo pipefail
top=$(cd "$(dirname "$(realpath "$0")")/../.." && pwd)
. "$top/scripts/lib.sh"
. "$top/tests/tap/tap-lib.sh"
dn2_no_options "$@"
cluster=$top/scripts/cluster.sh
boot_timeout=${DN2_CLUSTER_BOOT_TIMEOUT:-300}
ra=$top/build/cluster/vt-shm-a rb=$top/build/cluster/vt-shm-b

progs=("$top/build/tests/cluster/dn2-vt-exchange" "$top/build/linux-guest/dn2-bench")
for p in "${progs[@]}"; do
    [ -x "$p" ] || { tap_plan 1; not_ok "$p is not built (meson compile -C build)"; tap_done; }
done
if ! bash "$top/scripts/export-guest.sh" "${progs[@]}" > /dev/null 2> "$top/build/vt-shm-export.log"; then
    tap_plan 1; not_ok "could not prepare the guest programs: $(tail -1 "$top/build/vt-shm-export.log")"; tap_done
fi
qemu_bin=$(dn2_find_qemu 2>&1) || { tap_plan 1; not_ok "$qemu_bin"; tap_done; }
if ! why=$(dn2_vt_capable "$qemu_bin" "${DN2_SWITCH:-$top/build/fabric/dn2-switch}" 2>&1); then
    tap_plan 1; not_ok "virtual time unavailable: ${why#\[dimmnet2\] error: }"; tap_done
fi
mkdir -p "$top/build/cluster"

# shellcheck disable=SC2016   # expanded in the guest
node_cmd='insmod /opt/dn2/dimmnet2.ko && dn2-up -q > /dev/null || { echo "board not up"; exit 1; }
dn2-vt-exchange -k 4 || exit 1
dn2-bench --only rvs --sizes 8,4096 --scale 0.05 -q'

t0=$SECONDS
"$cluster" -q --virtual-time --vt-sync udp -n 2 --name vt-shm-a -b "$boot_timeout" -t $((boot_timeout + 600)) \
    -r "$node_cmd" -- -d guest_errors > "$ra.stdout" 2> "$ra.stderr"
rc=$?
result "$rc" "run A over UDP: both nodes' commands succeeded (exit $rc, $((SECONDS - t0)) s)"
[ "$rc" = 0 ] || tail -20 "$ra.stderr" | diag

t0=$SECONDS
"$cluster" -q --replay "$ra" --name vt-shm-b --vt-sync shm > "$rb.stdout" 2> "$rb.stderr"
rc=$?
# Exit 5: every node's command succeeded, but a delivery differs.
case $rc in
    0) ok "run B, the replay over shared memory: the same output and pcap on every node ($((SECONDS - t0)) s)" ;;
    5) not_ok "run B, the replay over shared memory: the same output and pcap on every node"
       grep -A6 'replay differs' "$rb.stderr" | head -8 | diag ;;
    *) not_ok "run B, the replay over shared memory: a node's command failed or the run did not end (exit $rc)"
       tail -20 "$rb.stderr" | diag ;;
esac

# A packet the domain let its receiver run past is delivered late, at the
# receiver's clock, and logged (-d guest_errors, recorded in run A's
# options and so given to the replay too): none over either transport.
late_a=$(cat "$ra"/node*.stderr 2> /dev/null | grep -c ' arrived at ')
late_b=$(cat "$rb"/node*.stderr 2> /dev/null | grep -c ' arrived at ')
if [ "$late_a" = 0 ] && [ "$late_b" = 0 ] && grep -q 'guest_errors' "$rb/node0.cmd"; then
    ok "no packet delivered after its virtual time, over UDP or the domain"
else
    not_ok "packets delivered after their virtual time: $late_a over UDP, $late_b over the domain"
    cat "$rb"/node*.stderr 2> /dev/null | grep -m 3 ' arrived at ' | diag
fi

if [ -s "$rb/vt.shm" ] && grep -q 'vt-sync=shm' "$rb/node0.cmd" "$rb/node1.cmd" &&
    grep -q -- '--vt-sync shm' "$rb/switch.cmd" && ! grep -q 'vt-sync' "$ra/node0.cmd"; then
    ok "run B kept the lock-step in its sync domain ($rb/vt.shm), run A over UDP"
else
    not_ok "run B did not run over the sync domain, or run A did"
fi
tap_done
