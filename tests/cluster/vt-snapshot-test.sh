#!/usr/bin/env bash
# A snapshot of a virtual-time run at one virtual time (TAP):
# scripts/cluster.sh --virtual-time --snapshot-at VT TAG and
# scripts/cluster.sh --replay build/snapshots/TAG (docs/virtual-time.md,
# "Snapshots").
#
#   tests/cluster/vt-snapshot-test.sh      (meson: test 'cluster-vt-snapshot')
#
#   1. run A: a 2-node --virtual-time run whose all-to-all dn2msg exchange
#      (dn2-vt-exchange, every message checked) is busy at the cut VT;
#      every board stops its guest at VT, the cluster is saved there and
#      runs on to its end: every node's command succeeds (each node's own
#      exit status, and its exchange's "all messages intact"), the snapshot has
#      every node's memory, console and trace at VT, and packets sent
#      before VT and due after it waited in the boards' queues (saved)
#   2. run B from the snapshot (--replay TAGDIR) under a CPU hog: every
#      node's command succeeds (as in A); every node's output and every board's
#      pcap byte-identical to run A's (the trace of A up to VT followed
#      by B's after it), and the launcher says so
#   3. the same with the timing model (--device-opts timing=thesis, its
#      lookahead of 625 ns): a 2-node exchange busy at the cut is saved
#      with each board's model state (when each unit is free again, what
#      the host has paid for) and the run from the snapshot, under a CPU
#      hog, is byte-identical, outputs and pcaps (a delivery and the
#      receiving board's own send at one virtual nanosecond, which ran in
#      the order the host armed their timers, came out 11 ns apart here)
#      (both runs checked node by node as in A)
#   4. a replay from the snapshot whose recorded run (a copy of A's
#      outputs and pcaps, node1.out's last line of rank 1 altered) differs:
#      --replay exits 5 and names node1.out and the line
#   5. refusals: --snapshot-at without --virtual-time (2), before
#      --vt-start (2), a TAG that exists (4)
#
# Environment: as vt-determinism-test.sh (QEMU, DN2_SWITCH,
# DN2_CLUSTER_BOOT_TIMEOUT); DN2_VT_EXCHANGE_OPTS: more options for every
# dn2-vt-exchange of the runs (e.g. "-b 30": from round 30 on every node's
# exchange counts its messages as damaged and fails, the same in the run
# and its replay; the test must then fail: a check of the test).  Snapshots go to build/vt-snapshot-test
# (DN2_SNAPSHOT_DIR); run directories build/cluster/vt-snap-test*.
set -uo pipefail
top=$(cd "$(dirname "$(realpath "$0")")/../.." && pwd)
. "$top/scripts/lib.sh"
. "$top/tests/tap/tap-lib.sh"
dn2_no_options "$@"
cluster=$top/scripts/cluster.sh
boot_timeout=${DN2_CLUSTER_BOOT_TIMEOUT:-300}
pcapdiff=$top/tests/cluster/vt-pcap-diff.py
export DN2_SNAPSHOT_DIR=$top/build/vt-snapshot-test
tag=vt-snap
cut=5.06
xopts=${DN2_VT_EXCHANGE_OPTS:-}
[[ $xopts =~ ^[-a-z0-9\ .]*$ ]] || { tap_plan 1; not_ok "DN2_VT_EXCHANGE_OPTS: options and numbers only (got '$xopts')"; tap_done; }

command -v python3 > /dev/null || tap_skip_all "$(tap_missing python3)"
prog=$top/build/tests/cluster/dn2-vt-exchange
[ -x "$prog" ] || { tap_plan 1; not_ok "$prog is not built (meson compile -C build)"; tap_done; }
if ! bash "$top/scripts/export-guest.sh" "$prog" > /dev/null 2> "$top/build/vt-snap-export.log"; then
    tap_plan 1; not_ok "could not prepare the guest program: $(tail -1 "$top/build/vt-snap-export.log")"; tap_done
fi
qemu_bin=$(dn2_find_qemu 2>&1) || { tap_plan 1; not_ok "$qemu_bin"; tap_done; }
if ! why=$(dn2_vt_capable "$qemu_bin" "${DN2_SWITCH:-$top/build/fabric/dn2-switch}" 2>&1); then
    tap_plan 1; not_ok "virtual time unavailable: ${why#\[dimmnet2\] error: }"; tap_done
fi

# (with a lookahead of 1 ms every packet sent in the last 1 ms before the
# cut waits in its receiver's queue at the cut, and in this exchange
# (rounds of about 2 ms: sends, receives, a barrier) one is nearly always
# on its way.  The exchange starts at 5 s of the guests' clocks, whatever
# the boot took (a larger guest image boots longer), and runs for about
# 125 ms of virtual time; the guest's clock is not the board's: with this
# kernel it reads 5 s at 4.980 s of virtual time (TSC calibration), so the
# cut sits where the exchange is busy for any such offset up to 45 ms.)
# shellcheck disable=SC2016   # expanded in the guest
node_cmd='insmod /opt/dn2/dimmnet2.ko && dn2-up -q > /dev/null || { echo "board not up"; exit 1; }
cat /proc/uptime
x=$(dn2-vt-exchange -k 4 -r 60 -a 5 '"$xopts"'); rc=$?
printf "%s\n" "$x" | tail -3
[ $rc = 0 ] || { echo "dn2-vt-exchange: exit $rc"; exit 1; }
cat /proc/uptime'

# compare_runs A B: the nodes' outputs and pcaps of run directories A and B;
# sets out_diffs (" nodeI" per output that differs) and pcap_diffs (per pcap)
compare_runs() {
    local i out
    out_diffs='' pcap_diffs=''
    for i in 0 1; do
        if ! cmp -s "$1/node$i.out" "$2/node$i.out" || [ ! -s "$1/node$i.out" ]; then
            out_diffs+=" node$i"; diff "$1/node$i.out" "$2/node$i.out" | head -4 | diag
        fi
        if [ ! -s "$1/node$i.pcap" ] || ! out=$(python3 "$pcapdiff" "$1/node$i.pcap" "$2/node$i.pcap"); then
            pcap_diffs+=" node$i"; printf '%s\n' "${out:-no capture}" | diag
        fi
    done
}

# nodes_ok RUNDIR ROUNDS: every node's own exit status (RUNDIR/timings)
# is 0 and its output ends its exchange with "rank I: ROUNDS rounds, all
# messages intact"; else sets node_fails and prints why (diag)
nodes_ok() {
    local i rc_i
    node_fails=
    for i in 0 1; do
        rc_i=$(sed -n "s/^node$i .* rc=\([0-9]*\)\$/\1/p" "$1/timings" 2> /dev/null)
        if [ "$rc_i" != 0 ] || ! grep -qx "rank $i: $2 rounds, all messages intact" "$1/node$i.out" 2> /dev/null; then
            node_fails+=" node$i"
            diag "node$i: exit status ${rc_i:-unknown}; its output ends:"
            tail -3 "$1/node$i.out" 2> /dev/null | diag
        fi
    done
    [ -z "$node_fails" ]
}

hog=
trap '[ -n "$hog" ] && kill "$hog" 2> /dev/null' EXIT
tap_plan 15
rm -rf "$DN2_SNAPSHOT_DIR"
mkdir -p "$top/build/cluster"
ra=$top/build/cluster/vt-snap-test rb=$top/build/cluster/vt-snap-test-b
snap=$DN2_SNAPSHOT_DIR/$tag

# 1. run A with the snapshot at the cut
t0=$SECONDS
"$cluster" -q --virtual-time --vt-lookahead 1000000 -n 2 --name vt-snap-test -b "$boot_timeout" -t $((boot_timeout + 600)) \
    --snapshot-at "$cut" "$tag" -r "$node_cmd" > "$ra.stdout" 2> "$ra.stderr"
rc=$?
[ "$rc" = 0 ] || tail -20 "$ra.stderr" | diag
nodes_ok "$ra" 60 && [ "$rc" = 0 ]
result $? "run A: every node's command succeeded, every exchange intact (exit $rc, $((SECONDS - t0)) s)${node_fails:+; failed:$node_fails}"
ok_files=1
for f in snapshot.info node0.mig node1.mig node0.log node1.log node0.pcap node1.pcap replay/options input/ranks initramfs.cpio.lz4; do
    [ -s "$snap/$f" ] || { ok_files=; diag "missing: $snap/$f"; }
done
grep -q "snapshot $tag.* at virtual time $cut s" "$ra.stderr" || ok_files=
[ -n "$ok_files" ]; result $? "run A: snapshot $tag at $cut s, with every node's memory, console and trace at the cut"
cut_ns=$(sed -n 's/^cut_ns=//p' "$snap/snapshot.info")
[ "$cut_ns" = 5060000000 ]; result $? "the cut is at $cut_ns ns of virtual time for every node"
queued=$(sed -n "s/^queued='\(.*\)'/\1/p" "$snap/snapshot.info")
n_q=0; for q in $queued; do n_q=$((n_q + q)); done
[ "$n_q" -gt 0 ]; result $? "packets sent before the cut and due after it waited in the boards' queues at the cut and were saved (per node: ${queued:-none})"

# 2. run B from the snapshot, under a CPU hog
yes > /dev/null &
hog=$!
t0=$SECONDS
"$cluster" -q --replay "$snap" --name vt-snap-test-b > "$rb.stdout" 2> "$rb.stderr"
rc=$?
kill "$hog" 2> /dev/null; wait "$hog" 2> /dev/null; hog=
[ "$rc" = 0 ] || tail -20 "$rb.stderr" | diag
nodes_ok "$rb" 60 && [ "$rc" = 0 ]
result $? "run B from the snapshot (CPU hog): every node's command succeeded, every exchange intact (exit $rc, $((SECONDS - t0)) s)${node_fails:+; failed:$node_fails}"
compare_runs "$ra" "$rb"
[ -z "$out_diffs" ]; result $? "every node's output byte-identical in A and B ($(cat "$ra"/node*.out | wc -l) lines)${out_diffs:+; differ:$out_diffs}"
after=$(( $(stat -c %s "$ra/node0.pcap") - $(stat -c %s "$snap/node0.pcap") ))
[ -z "$pcap_diffs" ] && [ "$after" -gt 0 ]; result $? "every board's pcap byte-identical in A and B ($after bytes of node0's after the cut)${pcap_diffs:+; differ:$pcap_diffs}"
grep -q "replay from virtual time $cut s: every node's output and pcap identical" "$rb.stderr"
result $? "the launcher says run B is identical to run A"

# 3. the timing model: saved with the boards, the run from the snapshot identical
# (an exchange of 600 rounds of about 75 us each under the model, from
# 4.980 s of virtual time: busy at a cut at 5.0 s)
tag_t=vt-snap-timing cut_t=5.0
ta=$top/build/cluster/vt-snap-test-t tb=$top/build/cluster/vt-snap-test-t-b
snap_t=$DN2_SNAPSHOT_DIR/$tag_t
# shellcheck disable=SC2016   # expanded in the guest
node_cmd_t='insmod /opt/dn2/dimmnet2.ko && dn2-up -q > /dev/null || { echo "board not up"; exit 1; }
x=$(dn2-vt-exchange -k 4 -r 600 -a 5 -q '"$xopts"'); rc=$?
printf "%s\n" "$x" | tail -3
[ $rc = 0 ] || { echo "dn2-vt-exchange: exit $rc"; exit 1; }
cat /proc/uptime'
t0=$SECONDS
"$cluster" -q --virtual-time --vt-lookahead 625 --device-opts timing=thesis -n 2 --name vt-snap-test-t \
    -b "$boot_timeout" -t $((boot_timeout + 600)) --snapshot-at "$cut_t" "$tag_t" -r "$node_cmd_t" \
    > "$ta.stdout" 2> "$ta.stderr"
rc=$?
[ "$rc" = 0 ] || tail -20 "$ta.stderr" | diag
nodes_ok "$ta" 600 && [ "$rc" = 0 ] && [ -s "$snap_t/node0.mig" ] && [ -s "$snap_t/node1.mig" ] &&
    grep -q "snapshot $tag_t.* at virtual time $cut_t s" "$ta.stderr"
result $? "timing=thesis, run C: every node's command succeeded, every exchange intact, and the boards were saved at $cut_t s (exit $rc, $((SECONDS - t0)) s)${node_fails:+; failed:$node_fails}"
t0=$SECONDS
yes > /dev/null &
hog=$!
"$cluster" -q --replay "$snap_t" --name vt-snap-test-t-b > "$tb.stdout" 2> "$tb.stderr"
rc=$?
kill "$hog" 2> /dev/null; wait "$hog" 2> /dev/null; hog=
[ "$rc" = 0 ] || tail -20 "$tb.stderr" | diag
nodes_ok "$tb" 600 && [ "$rc" = 0 ]
result $? "timing=thesis, run D from the snapshot (CPU hog): every node's command succeeded, every exchange intact (exit $rc, $((SECONDS - t0)) s)${node_fails:+; failed:$node_fails}"
compare_runs "$ta" "$tb"
diffs=$out_diffs$pcap_diffs
after=$(( $(stat -c %s "$ta/node0.pcap" 2> /dev/null || echo 0) - $(stat -c %s "$snap_t/node0.pcap" 2> /dev/null || echo 0) ))
[ -z "$diffs" ] && [ "$after" -gt 0 ]
result $? "timing=thesis: every node's output and every board's pcap byte-identical in C and D ($after bytes of node0's after the cut)${diffs:+; differ:$diffs}"
grep -q "replay from virtual time $cut_t s: every node's output and pcap identical" "$tb.stderr"
result $? "timing=thesis: the launcher says run D is identical to run C"

# 4. a replay whose recording differs: a copy of the snapshot whose source
# run is a copy of A's outputs and pcaps with node1.out's last exchange
# line altered; the replay runs as B did, and must exit 5 naming the line
alt=$top/build/cluster/vt-snap-test-altered snap_alt=$DN2_SNAPSHOT_DIR/$tag-altered
rm -rf "$alt" "$snap_alt"
mkdir -p "$alt"
cp "$ra"/node[01].out "$ra"/node[01].pcap "$alt/"
line=$(grep -n "^rank 1" "$alt/node1.out" | tail -1 | cut -d: -f1)
if [ -n "$line" ] && [ -d "$snap" ] && cp -rl "$snap" "$snap_alt"; then
    sed -i "${line}s/\$/ (altered)/" "$alt/node1.out"
    sed "s|^source=.*|source=$(printf '%q' "$alt")|" "$snap/snapshot.info" > "$snap_alt/snapshot.info.new" &&
        mv "$snap_alt/snapshot.info.new" "$snap_alt/snapshot.info"
    rx=$top/build/cluster/vt-snap-test-x
    t0=$SECONDS
    "$cluster" -q --replay "$snap_alt" --name vt-snap-test-x > "$rx.stdout" 2> "$rx.stderr"
    rc=$?
    { [ "$rc" = 5 ] && grep -q "replay differs.*node1.out: first difference at line $line\$" "$rx.stderr"; }
    result $? "a replay whose recording differs (node1.out line $line altered) exits 5 and names node1.out line $line (exit $rc, $((SECONDS - t0)) s)"
    grep -A2 'replay differs' "$rx.stderr" | diag
else
    not_ok "a replay whose recording differs: no line of rank 1 in $ra/node1.out or no snapshot to copy"
fi
rm -rf "$alt" "$snap_alt"

# 5. refusals
out=$("$cluster" -n 2 --snapshot-at 4 x -r true 2>&1); rc=$?
{ [ $rc -eq 2 ] && grep -q 'virtual-time' <<< "$out"; }; result $? "--snapshot-at without --virtual-time is refused (status $rc)"
out=$("$cluster" --virtual-time -n 2 --vt-start 3 --snapshot-at 2 x -r true 2>&1); rc=$?
o2=$("$cluster" --virtual-time -n 2 --snapshot-at 4 "$tag" -r true 2>&1); rc2=$?
{ [ $rc -eq 2 ] && grep -q 'vt-start' <<< "$out" && [ $rc2 -eq 4 ] && grep -q 'exists' <<< "$o2"; }
result $? "a cut before --vt-start (status $rc) and a TAG that exists (status $rc2) are refused"
rm -rf "$DN2_SNAPSHOT_DIR"
tap_done
