#!/usr/bin/env bash
# TAP: the libfabric provider "dimmnet2" on a 2-node cluster.
#
#   tests/ofi/ofi-test.sh        (meson: test 'ofi', suite 'ofi')
#
# The guests get the image with Debian's libfabric-bin (fi_info,
# fi_pingpong) and its glibc closure (cluster.sh --packages), the provider
# in /opt/dn2/lib/libfabric (FI_PROVIDER_PATH) and ofi-test in /opt/dn2/bin.
# Each node loads the driver, brings its board up (dn2-up: what the
# launcher does before a job), then:
#   1. ofi-test on both ranks, as uid 65534 (rank 0's TAP is merged here)
#   2. fi_info -p dimmnet2, -p dimmnet2 -t FI_EP_RDM -c FI_TAGGED (the
#      native RDM endpoint) and -p 'dimmnet2;ofi_rxd' -t FI_EP_RDM -c FI_TAGGED
#   3. fi_pingpong over 'dimmnet2;ofi_rxd' (RDM), node 0 server, node 1
#      client; fi_pingpong's control connection is TCP, which the guests'
#      user networks cannot carry between them, so it is relayed by the
#      host: node 1 connects to the relay, node 0 bridges the relay to its
#      server with busybox nc -e
#   4. the boards' Packet Counters (sysfs wid0/pkt_counter) went up by
#      at least the ping-pong's messages on both nodes: the traffic went
#      through the boards
#   5. ofi-hostile (tests/ofi/ofi-hostile.c): the native RDM endpoint
#      against a rogue rank speaking its wire format (wrapped and forged
#      credits, 4 GiB and 512 MiB lengths), a rank killed and started
#      again, and a rank table of 70 endpoints
#
#   tests/ofi/ofi-test.sh --soak [SECS] [--quick]
#      only step 5, its rounds repeated for SECS seconds (default 30,
#      --quick 15; the cluster's boot comes on top): the soak run's
#      "provider" phase (scripts/soak.sh)
#   tests/ofi/ofi-test.sh --help
# Environment: QEMU, DN2_SWITCH; DN2_OFI_PROVIDER, DN2_OFI_TEST,
# DN2_OFI_HOSTILE (built files; default: found in build/).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../../scripts/lib.sh"
. "$here/../tap/tap-lib.sh"

soak=
quick=
dn2_split_opts "$@"; set -- "${DN2_ARGS[@]}"
while [ $# -gt 0 ]; do
    case $1 in
        --soak)
            soak=30; shift
            case ${1-} in ''|-*) ;; *) dn2_want_uint --soak "$1"; soak=$1; shift ;; esac ;;
        --quick) quick=1; shift ;;
        -h|--help) dn2_usage; exit 0 ;;
        *) usage_error "unknown argument: $1" ;;
    esac
done
[ -z "$quick" ] || [ -n "$soak" ] || usage_error "--quick goes with --soak"
[ -z "$quick" ] || soak=15
prov=${DN2_OFI_PROVIDER:-$DN2_TOP/build/linux-guest/ofi/libdimmnet2-fi.so}
prog=${DN2_OFI_TEST:-$DN2_TOP/build/tests/ofi/ofi-test}
hostile=${DN2_OFI_HOSTILE:-$DN2_TOP/build/tests/ofi/ofi-hostile}
out=$DN2_TOP/build/guest/export
logdir=$DN2_TOP/build/cluster
mkdir -p "$logdir" "$out/lib/libfabric" "$out/bin"
iters=200

# TAP (tests/tap/tap-lib.sh): the plan once every point has run; a
# missing input is the one point "not ok".
tap_defer
give_up() { not_ok "$*"; tap_done; }
[ -f "$prov" ] || give_up "provider $prov not built (meson compile -C build)"
[ -x "$prog" ] || give_up "$prog not built"
[ -x "$hostile" ] || give_up "$hostile not built"
bash "$DN2_TOP/scripts/export-guest.sh" >/dev/null 2>"$logdir/ofi-export.log" \
    || give_up "could not prepare the guest programs: $(tail -1 "$logdir/ofi-export.log")"
cp -u "$prov" "$out/lib/libfabric/"
cp -u "$prog" "$hostile" "$out/bin/"

# rank 0's TAP between node0's BEGIN and END markers, as lines of ours
merge_tap() { # merge_tap LOG MARKER PREFIX
    local tap line
    tap=$(sed -n "/^node0| $2-BEGIN\$/,/^node0| $2-END/p" "$1" | sed -n 's/^node0| //p' | grep -E '^(ok|not ok) ')
    if [ -z "$tap" ]; then
        not_ok "$3no results from rank 0 (log $1)"
        tail -25 "$1" | diag
        return
    fi
    while IFS= read -r line; do
        case $line in
            "ok "*) ok "$3${line#ok * - }" ;;
            *) not_ok "$3${line#not ok * - }" ;;
        esac
    done <<< "$tap"
}
node_rc() { # node_rc LOG MARKER WHAT
    local i trc
    for i in 0 1; do
        trc=$(sed -n "s/^node$i| $2-END rc=//p" "$1")
        [ "$trc" = 0 ] && ok "node$i: $3 exit 0" || { not_ok "node$i: $3 exit ${trc:-none}"; grep "^node$i| #" "$1" | tail -8 | diag; }
    done
}
hostile_cmd='echo "OFI-HOSTILE-BEGIN"; DN2_OFI_HOSTILE_SECS=@SECS@ ofi-hostile 2>&1; hrc=$?; echo "OFI-HOSTILE-END rc=$hrc"'

if [ -n "$soak" ]; then
    # shellcheck disable=SC2016   # expanded in the guest
    cmd='insmod /opt/dn2/dimmnet2.ko && dn2-up -q >/dev/null || { echo "OFI-SETUP-FAILED"; exit 1; }
export FI_PROVIDER_PATH=/opt/dn2/lib/libfabric
'"${hostile_cmd//@SECS@/$soak}"'
[ "$hrc" = 0 ]'
    log=$logdir/ofi-soak.out
    t0=$SECONDS
    bash "$DN2_TOP/scripts/cluster.sh" -n 2 -q -t $((soak + 300)) --name ofi-soak --packages libfabric-bin \
        -r "$cmd" > "$log" 2>&1
    rc=$?
    elapsed=$((SECONDS - t0))
    merge_tap "$log" OFI-HOSTILE "hostile, $soak s: "
    node_rc "$log" OFI-HOSTILE ofi-hostile
    sed -n 's/^node1| # \(rogue: .*\)/\1/p' "$log" | diag
    [ $rc -eq 0 ] && ok "cluster run succeeded (${elapsed} s)" || not_ok "cluster run failed (exit $rc, ${elapsed} s, log $log)"
    tap_done
fi

# The host relay for fi_pingpong's control connection: port A for node 0's
# bridge, port B for node 1's client; spliced once both are in.
coproc RELAY { exec python3 "$here/tcp-relay.py"; }
relay_pid=$RELAY_PID
read -r pa pb <&"${RELAY[0]}" || give_up "the control-connection relay did not start"
trap 'kill "$relay_pid" 2>/dev/null' EXIT

# shellcheck disable=SC2016   # expanded in the guest
cmd='insmod /opt/dn2/dimmnet2.ko && dn2-up -q >/dev/null || { echo "OFI-SETUP-FAILED"; exit 1; }
export FI_PROVIDER_PATH=/opt/dn2/lib/libfabric
pc=/sys/class/misc/dimmnet2-0/device/wid0/pkt_counter
echo "OFI-TEST-BEGIN"; ofi-test 2>&1; rc=$?; echo "OFI-TEST-END rc=$rc"
HOSTILE
fi_info -p dimmnet2 > /tmp/i1 2>&1 && echo "FI-INFO-CORE $(grep -c "provider: dimmnet2$" /tmp/i1) $(grep -c FI_EP_DGRAM /tmp/i1)"
fi_info -p "dimmnet2;ofi_rxd" -t FI_EP_RDM -c FI_TAGGED > /tmp/i2 2>&1 && echo "FI-INFO-RXD $(grep -c "provider: dimmnet2;ofi_rxd$" /tmp/i2)"
fi_info -p dimmnet2 -t FI_EP_RDM -c FI_TAGGED > /tmp/i3 2>&1 && echo "FI-INFO-RDM $(grep -c "provider: dimmnet2$" /tmp/i3) $(grep -c FI_EP_RDM /tmp/i3)"
echo "PKT-BEFORE $(cat $pc)"
if [ "$DN2_RANK" = 0 ]; then
    timeout 150 fi_pingpong -p "dimmnet2;ofi_rxd" -e rdm -I ITERS -S 1024 > /tmp/pp 2>&1 &
    sleep 1
    nc 10.0.2.2 PORTA -e nc 127.0.0.1 47592 &
    wait %1; prc=$?
else
    sleep 1
    timeout 150 fi_pingpong -p "dimmnet2;ofi_rxd" -e rdm -I ITERS -S 1024 -P PORTB 10.0.2.2 > /tmp/pp 2>&1; prc=$?
fi
sed "s/^/PP: /" /tmp/pp
echo "PP-RC $prc"
echo "PKT-AFTER $(cat $pc)"
[ "$rc" = 0 ] && [ "$prc" = 0 ] && [ "$hrc" = 0 ]'
cmd=${cmd//HOSTILE/${hostile_cmd//@SECS@/0}}
cmd=${cmd//ITERS/$iters}
cmd=${cmd//PORTA/$pa}
cmd=${cmd//PORTB/$pb}

log=$logdir/ofi.out
t0=$SECONDS
bash "$DN2_TOP/scripts/cluster.sh" -n 2 -q -t 480 --name ofi --packages 'libfabric-bin' \
    -r "$cmd" > "$log" 2>&1
rc=$?
elapsed=$((SECONDS - t0))

merge_tap "$log" OFI-TEST ""
node_rc "$log" OFI-TEST ofi-test
merge_tap "$log" OFI-HOSTILE "hostile: "
node_rc "$log" OFI-HOSTILE ofi-hostile
for i in 0 1; do
    read -r c1 c2 <<< "$(sed -n "s/^node$i| FI-INFO-CORE //p" "$log")"
    [ "${c1:-0}" -ge 1 ] && [ "${c2:-0}" -ge 1 ] && ok "node$i: fi_info -p dimmnet2 lists the DGRAM provider" \
        || not_ok "node$i: fi_info -p dimmnet2 (${c1:-none} ${c2:-})"
    read -r c1 c2 <<< "$(sed -n "s/^node$i| FI-INFO-RDM //p" "$log")"
    [ "${c1:-0}" -ge 1 ] && [ "${c2:-0}" -ge 1 ] && ok "node$i: fi_info -p dimmnet2 -t FI_EP_RDM -c FI_TAGGED lists the native RDM endpoint" \
        || not_ok "node$i: fi_info -p dimmnet2 -t FI_EP_RDM (${c1:-none} ${c2:-})"
    c1=$(sed -n "s/^node$i| FI-INFO-RXD //p" "$log")
    [ "${c1:-0}" -ge 1 ] && ok "node$i: fi_info -p 'dimmnet2;ofi_rxd' -t FI_EP_RDM -c FI_TAGGED lists the layered provider" \
        || not_ok "node$i: fi_info -p 'dimmnet2;ofi_rxd' (${c1:-none})"
done
# fi_pingpong: both exit 0; the client's result line: bytes iters total time MB/sec usec/xfer ...
for i in 0 1; do
    prc=$(sed -n "s/^node$i| PP-RC //p" "$log")
    [ "$prc" = 0 ] && ok "node$i: fi_pingpong over dimmnet2;ofi_rxd exit 0" \
        || { not_ok "node$i: fi_pingpong exit ${prc:-none}"; grep "^node$i| PP: " "$log" | tail -6 | diag; }
done
res=$(grep -h '^node1| PP: 1k ' "$log" | head -1 | sed 's/^node1| PP: //')
[ -n "$res" ] && ok "fi_pingpong 1 KiB x $iters: $(awk '{print $6 " MB/s, " $7 " us/xfer"}' <<< "$res")" \
    || not_ok "fi_pingpong printed no result line"
for i in 0 1; do
    b=$(sed -n "s/^node$i| PKT-BEFORE //p" "$log"); a=$(sed -n "s/^node$i| PKT-AFTER //p" "$log")
    if [ -n "$a" ] && [ -n "$b" ] && [ $((a - b)) -ge "$iters" ]; then
        ok "node$i: the board's Packet Counter rose by $((a - b)) during fi_pingpong (>= $iters messages)"
    else
        not_ok "node$i: Packet Counter before ${b:-?} after ${a:-?} (want >= $iters more)"
    fi
done
[ $rc -eq 0 ] && ok "cluster run succeeded (${elapsed} s)" || not_ok "cluster run failed (exit $rc, ${elapsed} s, log $log)"
tap_done
