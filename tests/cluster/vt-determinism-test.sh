#!/usr/bin/env bash
# Lock-step virtual time (TAP): the same cluster run gives byte-identical
# results under host load and fabric faults (docs/cluster.md, "Virtual
# time").
#
#   tests/cluster/vt-determinism-test.sh        (meson: test 'cluster-vt')
#
# For a 2-node and a 4-node cluster (scripts/cluster.sh --virtual-time:
# exact delivery times, the modelled 1 µs lookahead; each guest boots alone
# and the lock-step begins at --vt-start), every node loads the driver,
# brings its board up and runs
#   dn2-vt-exchange -k 4   an all-to-all dn2msg exchange received with
#                          DN2_ANY_SOURCE/DN2_ANY_TAG, printing the arrival
#                          order and the virtual time of every message
#   dn2-bench --only rvs --sizes 8,4096 --scale 0.05 -q
#                          the board's RVS primitive, short (ranks 0, 1)
# Run A as it is (the lock-step through the same-host sync domain in shared
# memory, the default); run B is `cluster.sh --replay A --vt-sync udp` (the
# switch's reports and grants, the reliable lanes) with a CPU hog on the
# host (yes > /dev/null) and the switch dropping, duplicating and
# reordering 10% of the datagrams each (--drop/--dup/--reorder, another
# --seed).  Checked per size: both runs succeed, run B was perturbed (the
# switch's counters, RUNDIR/switch.stats: it dropped, duplicated and
# reordered datagrams), every node's output is byte-identical (else: the
# first differing line) and every node's board capture RUNDIR/nodeI.pcap
# is byte-identical and not empty (else: the first differing packet,
# tests/cluster/vt-pcap-diff.py).
#
# Then the same with the timing model (docs/timing.md): 2 nodes, both boards
# timing=thesis, --vt-lookahead 625, --vt-insn-ps 381 (DN2_VT_TIMING_PS:
# the thesis's host, a rate that does not divide 1000 ps:
# 0002-icount-insn-ps-budget.patch), running dn2-vt-exchange -k 4 -r 4: the
# host's uncached accesses are charged to the vCPU, and an access that
# spans a deadline is undone and retried, where a budget ends being up to
# the host (dimmnet2_timing_pay); then dn2-bench's RVS ping-pong as above,
# whose ranks sleep between polls (--poll sleep:1, the default): a vCPU
# that halts, where the main loop's idle warp must not read the clock
# before the vCPU has added its last instructions to it
# (0005-icount-warp-accounted.patch; without it run B, beside the hog,
# came out different in most runs).  Run A, run B as above; checked: both
# succeed, run B perturbed, outputs and captures byte-identical.  (381 ps, the thesis's
# host, needs QEMU's insn-ps budgets counted from the instruction count
# as well: docs/timing.md, "Known problems".)
#
# Then an MPI job under the timing model (docs/mpi.md, "In virtual time";
# docs/timing.md): 2 nodes x 1 rank of build/tests/mpi/mpi-check 1024 (the
# MPI check program: point to point up to 1 KiB, collectives, one-sided)
# with scripts/mpirun.sh --virtual-time (PMI over the boards through
# dn2-pmi-agent), both boards timing=thesis, --vt-lookahead 625,
# --vt-insn-ps 381 as above; run A, then run B as above (cluster.sh
# --replay A, CPU hog, switch faults).  Checked: A passes every check, B
# succeeds and was perturbed, the nodes' outputs (every rank's TAP and
# figures) and board captures are byte-identical.  The MPI case skips (not
# in CI) when mpi-check or the libfabric provider is not built (mpicc,
# libfabric-dev: scripts/setup.sh).
#
# Environment: QEMU, DN2_SWITCH (default: found in build/),
# DN2_VT_SIZES (default "2 4"), DN2_VT_QUANTUM (ns, default 0: exact), DN2_CLUSTER_BOOT_TIMEOUT (default 300),
# DN2_VT_TIMING_PS (ps per instruction, default 381; the timing=thesis
# and MPI cases), DN2_VT_FAULTS (run B's switch faults, default as above;
# empty: none, and the test must then fail: a check of the test).
# Run directories: build/cluster/vt-test-N and vt-test-N-b, vt-test-timing and
# vt-test-timing-b, vt-test-mpi and vt-test-mpi-b.
set -uo pipefail
top=$(cd "$(dirname "$(realpath "$0")")/../.." && pwd)
. "$top/scripts/lib.sh"
. "$top/tests/tap/tap-lib.sh"
dn2_no_options "$@"
cluster=$top/scripts/cluster.sh
sizes=${DN2_VT_SIZES:-2 4}
boot_timeout=${DN2_CLUSTER_BOOT_TIMEOUT:-300}
faults=${DN2_VT_FAULTS-"--drop 0.1 --dup 0.1 --reorder 0.1 --seed 7"}
pcapdiff=$top/tests/cluster/vt-pcap-diff.py

command -v python3 > /dev/null || tap_skip_all "$(tap_missing python3)"
# The guest programs: built by meson, put into the image (build/guest/export).
progs=("$top/build/tests/cluster/dn2-vt-exchange" "$top/build/linux-guest/dn2-bench")
for p in "${progs[@]}"; do
    [ -x "$p" ] || { tap_plan 1; not_ok "$p is not built (meson compile -C build)"; tap_done; }
done
if ! bash "$top/scripts/export-guest.sh" "${progs[@]}" > /dev/null 2> "$top/build/vt-export.log"; then
    tap_plan 1; not_ok "could not prepare the guest programs: $(tail -1 "$top/build/vt-export.log")"; tap_done
fi
# A QEMU and a switch that have virtual time (not a missing tool: the build).
qemu_bin=$(dn2_find_qemu 2>&1) || { tap_plan 1; not_ok "$qemu_bin"; tap_done; }
if ! why=$(dn2_vt_capable "$qemu_bin" "${DN2_SWITCH:-$top/build/fabric/dn2-switch}" 2>&1); then
    tap_plan 1; not_ok "virtual time unavailable: ${why#\[dimmnet2\] error: }"; tap_done
fi

# shellcheck disable=SC2016   # expanded in the guest
node_cmd='insmod /opt/dn2/dimmnet2.ko && dn2-up -q > /dev/null || { echo "board not up"; exit 1; }
dn2-vt-exchange -k 4 || exit 1
dn2-bench --only rvs --sizes 8,4096 --scale 0.05 -q'

hog=
trap '[ -n "$hog" ] && kill "$hog" 2> /dev/null' EXIT

# replay LABEL RA RB: run B = `cluster.sh --replay RA` under a CPU hog and
# the switch's faults, over UDP (run A used the default, the same-host sync
# domain in shared memory: the faults reach the lock-step and the packets
# only through the switch); one TAP point.
replay() {
    local label=$1 ra=$2 rb=$3 t0=$SECONDS rc
    yes > /dev/null &
    hog=$!
    "$cluster" -q --replay "$ra" --name "$(basename "$rb")" --vt-sync udp --switch-opts "$faults" \
        > "$rb.stdout" 2> "$rb.stderr"
    rc=$?
    kill "$hog" 2> /dev/null; wait "$hog" 2> /dev/null; hog=
    result "$rc" "$label, run B (CPU hog, switch ${faults:-without faults}): every node's command succeeded (exit $rc, $((SECONDS - t0)) s)"
    [ "$rc" = 0 ] || { tail -30 "$rb.stderr" | diag; }
    perturbed "$label" "$rb"
}

# perturbed LABEL RB: run B's switch dropped, duplicated and reordered
# datagrams (its counters at the end of the run, RB/switch.stats: "switch
# ...: ... injected_drop=N injected_dup=N injected_reorder=N ..."); one
# point.
perturbed() {
    local label=$1 rb=$2 w n p=0 got=
    for w in drop dup reorder; do
        n=$(sed -n "s/^switch .* injected_$w=\([0-9]*\).*/\1/p" "$rb/switch.stats" 2> /dev/null | head -1)
        got+=" $w=${n:-none}"
        [ "${n:-0}" -gt 0 ] || p=1
    done
    result $p "$label, run B was perturbed: the switch injected$got"
    [ $p = 0 ] || head -3 "$rb/switch.stats" 2> /dev/null | diag
}

# same_outputs LABEL N RA RB: every node's output byte-identical; one point.
same_outputs() {
    local label=$1 n=$2 ra=$3 rb=$4 i diffs=
    for ((i = 0; i < n; i++)); do
        if ! cmp -s "$ra/node$i.out" "$rb/node$i.out" || [ ! -s "$ra/node$i.out" ]; then
            diffs+=" node$i"
            diag "node$i output differs; first differing line:"
            diff "$ra/node$i.out" "$rb/node$i.out" | head -4 | diag
        fi
    done
    if [ -z "$diffs" ]; then
        ok "$label: every node's output byte-identical in A and B ($(cat "$ra"/node*.out | wc -l) lines)"
    else
        not_ok "$label: outputs differ:$diffs"
    fi
}

# same_captures LABEL N RA RB: every board's pcap byte-identical and not
# empty (else the first differing packet); one point.
same_captures() {
    local label=$1 n=$2 ra=$3 rb=$4 i out diffs=
    for ((i = 0; i < n; i++)); do
        if [ ! -s "$ra/node$i.pcap" ]; then
            diffs+=" node$i(empty)"; diag "node$i: no capture $ra/node$i.pcap"
        elif ! out=$(python3 "$pcapdiff" "$ra/node$i.pcap" "$rb/node$i.pcap"); then
            diffs+=" node$i"
            diag "node$i capture differs:"
            printf '%s\n' "$out" | diag
        fi
    done
    if [ -z "$diffs" ]; then
        ok "$label: every board's capture byte-identical in A and B ($(python3 "$pcapdiff" "$ra/node0.pcap" "$rb/node0.pcap" | sed 's/identical, //') on node0)"
    else
        not_ok "$label: captures differ:$diffs"
    fi
}
nsizes=$(wc -w <<< "$sizes")
tap_plan $((6 * nsizes + 10))
mkdir -p "$top/build/cluster"
for n in $sizes; do
    a=vt-test-$n b=vt-test-$n-b
    ra=$top/build/cluster/$a rb=$top/build/cluster/$b
    t0=$SECONDS
    "$cluster" -q --virtual-time --vt-quantum "${DN2_VT_QUANTUM:-0}" -n "$n" --name "$a" -b "$boot_timeout" -t $((boot_timeout + 600)) \
        -r "$node_cmd" > "$ra.stdout" 2> "$ra.stderr"
    rc=$?
    result "$rc" "$n nodes, run A: every node's command succeeded (exit $rc, $((SECONDS - t0)) s)"
    [ "$rc" = 0 ] || { tail -30 "$ra.stderr" | diag; }

    # Run B: the same run under a CPU hog and switch faults.
    replay "$n nodes" "$ra" "$rb"

    same_outputs "$n nodes" "$n" "$ra" "$rb"
    # The ANY_SOURCE receives really took messages from several sources.
    srcs=$(sed -n 's/^rank 0 round 0 recv [0-9]*: from \([0-9]*\) .*/\1/p' "$ra/node0.out" | sort -u | wc -l)
    result $([ "$srcs" -eq $((n - 1)) ] && echo 0 || echo 1) \
        "$n nodes: rank 0's ANY_SOURCE receives came from all $((n - 1)) other ranks"

    same_captures "$n nodes" "$n" "$ra" "$rb"
done

# ---- the timing model: the host's accesses charged, retried at deadlines
a=vt-test-timing b=vt-test-timing-b
ra=$top/build/cluster/$a rb=$top/build/cluster/$b
t0=$SECONDS
"$cluster" -q --virtual-time --vt-lookahead 625 --vt-insn-ps "${DN2_VT_TIMING_PS:-381}" \
    --device-opts timing=thesis -n 2 --name "$a" -b "$boot_timeout" -t $((boot_timeout + 600)) \
    -r 'insmod /opt/dn2/dimmnet2.ko && dn2-up -q > /dev/null || { echo "board not up"; exit 1; }
dn2-vt-exchange -k 4 -r 4 && dn2-bench --only rvs --sizes 8,4096 --scale 0.05 -q' > "$ra.stdout" 2> "$ra.stderr"
rc=$?
result "$rc" "timing=thesis 2 nodes, run A: every node's command succeeded (exit $rc, $((SECONDS - t0)) s)"
[ "$rc" = 0 ] || { tail -30 "$ra.stderr" | diag; }
replay "timing=thesis 2 nodes" "$ra" "$rb"
same_outputs "timing=thesis 2 nodes" 2 "$ra" "$rb"
same_captures "timing=thesis 2 nodes" 2 "$ra" "$rb"

# ---- an MPI job under the timing model: PMI over the boards (mpirun.sh
# --virtual-time), the boards timing=thesis
mpi_check=$top/build/tests/mpi/mpi-check
agent=$top/build/linux-guest/pmi/dn2-pmi-agent
provider=${DN2_FI_PROVIDER:-$(find "$top/build" -name 'libdimmnet2-fi.so' -type f 2>/dev/null | head -1)}
mpi_why=
[ -x "$mpi_check" ] || mpi_why="$mpi_check not built: $(tap_missing mpicc libopenmpi-dev)"
[ -n "$provider" ] || mpi_why="the libfabric provider is not built: $(tap_missing libfabric libfabric-dev)"
if [ -n "$mpi_why" ]; then
    for w in "run A" "run B" "run B perturbed" "outputs" "captures"; do skip "MPI timing=thesis 2 nodes: $w" "$mpi_why"; done
elif [ ! -x "$agent" ]; then
    for w in "run A" "run B" "run B perturbed" "outputs" "captures"; do not_ok "MPI timing=thesis 2 nodes: $w: $agent not built (meson compile -C build)"; done
else
    a=vt-test-mpi b=vt-test-mpi-b
    ra=$top/build/cluster/$a rb=$top/build/cluster/$b
    t0=$SECONDS
    bash "$top/scripts/mpirun.sh" -q --virtual-time --vt-lookahead 625 --device-opts timing=thesis \
        --cluster-opt=--vt-insn-ps="${DN2_VT_TIMING_PS:-381}" -np 2 \
        --name "$a" -t $((boot_timeout + 600)) -- "$mpi_check" 1024 > "$ra.stdout" 2> "$ra.stderr"
    rc=$?
    # every check of mpi-check passed (rank 0's TAP) and data moved
    nok=$(grep -c '^\[0\] ok ' "$ra.stdout")
    p=1
    [ "$rc" = 0 ] && [ "$nok" -ge 10 ] && ! grep -q '^\[0\] not ok' "$ra.stdout" && grep -q '^\[0\] ok .* payload bytes moved' "$ra.stdout" && p=0
    result $p "MPI timing=thesis 2 nodes x 1 rank, run A: mpi-check 1024 passed, $nok checks (exit $rc, $((SECONDS - t0)) s)"
    [ $p = 0 ] || { tail -30 "$ra.stdout" "$ra.stderr" | diag; }

    replay "MPI timing=thesis 2 nodes" "$ra" "$rb"
    same_outputs "MPI timing=thesis 2 nodes" 2 "$ra" "$rb"
    same_captures "MPI timing=thesis 2 nodes" 2 "$ra" "$rb"
fi
tap_done
