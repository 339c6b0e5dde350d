#!/usr/bin/env bash
# A replay against its recording, without a guest (TAP): scripts/vt-compare.py,
# what scripts/cluster.sh --replay runs at its end (a difference: exit
# status 5, the first difference named; docs/virtual-time.md, "Replaying
# a failure").  Two recorded run directories are written here, each
# node's output (nodeI.out) and board capture (nodeI.pcap, nanosecond
# pcap: docs/fabric.md), and then made to differ:
#
#   1. identical: exit 0, nothing printed
#   2. node1's output differs at line 3: exit 1, the first line printed
#      names node1.out and line 3, then both lines
#   3. node0's capture differs at packet 2 (its virtual delivery time):
#      exit 1, naming node0.pcap, packet 2 and both times
#   4. node1's capture has one packet more in the replay: named as the
#      recording's end
#   5. a capture missing in the replay: named
#   6. two differences: the first in node order (node0.pcap before
#      node1.out) comes first
#   7. usage: no arguments, 2; --help, 0
# (cluster.sh --replay itself, fed a recording that differs:
# vt-snapshot-test.sh, meson test 'cluster-vt-snapshot'.)
#
#   tests/cluster/vt-compare-test.sh      (meson: test 'vt-compare')
set -uo pipefail
top=$(cd "$(dirname "$(realpath "$0")")/../.." && pwd)
. "$top/scripts/lib.sh"
. "$top/tests/tap/tap-lib.sh"
dn2_no_options "$@"
command -v python3 > /dev/null || tap_skip_all "$(tap_missing python3)"
vc=$top/scripts/vt-compare.py
work=$(mktemp -d "${TMPDIR:-/tmp}/dn2-vt-compare.XXXXXX")
trap 'rm -rf "$work"' EXIT

# mkpcap FILE T1 T2 ...: a nanosecond pcap with one 48-byte record per
# virtual time Ti (ns): a 16-byte capture header (event 1, LIDs 1 -> 2),
# then 32 bytes of packet
mkpcap() {
    python3 - "$@" <<'EOF'
import struct, sys
with open(sys.argv[1], "wb") as f:
    f.write(struct.pack("<IHHiIII", 0xA1B23C4D, 2, 4, 0, 0, 65535, 147))
    for k, t in enumerate(int(x) for x in sys.argv[2:]):
        body = bytes([0, 1, 0, 0]) + struct.pack("<HH", 1, 2) + bytes(8) + bytes(range(k, k + 32))
        f.write(struct.pack("<IIII", t // 10**9, t % 10**9, len(body), len(body)))
        f.write(body)
EOF
}
# fresh: two identical recorded runs of 2 nodes, $work/a and $work/b
fresh() {
    rm -rf "$work/a" "$work/b"
    mkdir -p "$work/a"
    for i in 0 1; do
        printf 'rank %d round 0 recv 0: from 1 tag 0\nrank %d round 0 recv 1: from 1 tag 1\nrank %d: 1 rounds, all messages intact\n' \
            "$i" "$i" "$i" > "$work/a/node$i.out"
        mkpcap "$work/a/node$i.pcap" 5000000100 5000000200 5000000300 5000000400
    done
    cp -r "$work/a" "$work/b"
}
# cmp_runs: rc and out of vt-compare.py a b 2
cmp_runs() { out=$(python3 "$vc" "$work/a" "$work/b" 2 2>&1); rc=$?; }

tap_plan 7

fresh; cmp_runs
{ [ $rc = 0 ] && [ -z "$out" ]; }; result $? "identical runs: exit 0, nothing printed (status $rc)"
[ $rc = 0 ] || printf '%s\n' "$out" | diag

fresh
sed -i '3s/1 rounds, all messages intact/FAILED: 1 messages with wrong contents or length/' "$work/b/node1.out"
cmp_runs
{ [ $rc = 1 ] && [[ $(head -1 <<< "$out") == "node1.out: first difference at line 3" ]] &&
    grep -q "recorded: 'rank 1: 1 rounds, all messages intact'" <<< "$out" &&
    grep -q "replay:   'rank 1: FAILED" <<< "$out"; }
result $? "an output that differs at line 3: exit 1, node1.out and line 3 named, both lines shown (status $rc)"
printf '%s\n' "$out" | diag

fresh
mkpcap "$work/b/node0.pcap" 5000000100 5000000200 5000000301 5000000400
cmp_runs
{ [ $rc = 1 ] && [[ $(head -1 <<< "$out") == "node0.pcap: first difference at packet 2 (of 4 recorded, 4 replayed)" ]] &&
    grep -q 'recorded: packet 2 at 5.000000300 s virtual' <<< "$out" &&
    grep -q 'replay:   packet 2 at 5.000000301 s virtual' <<< "$out"; }
result $? "a capture whose packet 2 came 1 ns later: exit 1, node0.pcap, packet 2 and both times named (status $rc)"
printf '%s\n' "$out" | diag

fresh
mkpcap "$work/b/node1.pcap" 5000000100 5000000200 5000000300 5000000400 5000000500
cmp_runs
{ [ $rc = 1 ] && [[ $(head -1 <<< "$out") == "node1.pcap: first difference at packet 4 (of 4 recorded, 5 replayed)" ]] &&
    grep -q 'recorded: (no packet 4: the capture ends)' <<< "$out"; }
result $? "a replay with one packet more: named as where the recording ends (status $rc)"

fresh
rm "$work/b/node1.pcap"
cmp_runs
{ [ $rc = 1 ] && [ "$out" = "node1.pcap: in $work/a only" ]; }
result $? "a capture missing in the replay: named (status $rc: $out)"

fresh
sed -i '1s/tag 0/tag 7/' "$work/b/node1.out"
mkpcap "$work/b/node0.pcap" 5000000100 5000000200 5000000300
cmp_runs
{ [ $rc = 1 ] && [[ $(head -1 <<< "$out") == "node0.pcap: first difference at packet 3"* ]] &&
    grep -q '^node1.out: first difference at line 1$' <<< "$out"; }
result $? "two differences: both named, the first in node order first (status $rc)"

python3 "$vc" > /dev/null 2>&1; rc=$?
python3 "$vc" --help > "$work/help" 2>&1; rc2=$?
{ [ $rc = 2 ] && [ $rc2 = 0 ] && grep -q 'RECORDED RUN NODES' "$work/help"; }
result $? "usage: no arguments exits 2 ($rc), --help 0 ($rc2)"

tap_done
