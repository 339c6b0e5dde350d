#!/usr/bin/env bash
# Soak / fuzz run of the DIMMnet-2 boards (docs/reliability.md): random guest
# MMIO on boards linked by a switch and in loopback, hostile datagrams at the
# boards' and the switch's UDP ports, and RVS across 4 boards through a faulty
# switch with a switch restart and a guest system_reset in the middle; joins
# through a late and reordering switch, replayed joins and spoofed control
# datagrams; the PMI job server under slow, idle and forging clients; the
# libfabric provider fed wrapped credits and huge lengths.  Every phase
# checks that the boards (the server, the ranks) still work; TAP on stdout,
# one numbered stream with the plan at the end.
#
#   bash scripts/soak.sh                # the full run: 10^6 MMIO operations,
#                                       # 10^6 datagrams, 1 GiB of RVS (minutes)
#   bash scripts/soak.sh --quick        # scaled down for CI (meson test --suite soak)
#   bash scripts/soak.sh --seed 1234    # reproduce a run (its seed is printed)
#   bash scripts/soak.sh --help
#
# Options: --quick, --seed S, --phases LIST (default: all of
# mmio,hostile,secret,rvs,join — the tool's — and pmi,provider — run by this
# script: tests/cluster/pmi-server-test.py --soak and tests/ofi/ofi-test.sh
# --soak), --keep (keep the temporary directory), --verbose; and the tool's
# (tools/soak/dn2-soak.c), passed on to it: --mmio-ops N, --datagrams N,
# --rvs-mib N, --reset-board 0..3, --join-rounds N, --join-spoof-ms MS.
# "--opt=value" is "--opt value"; any other argument is a usage error.
#
# No guest OS: the tool starts QEMUs with -accel qtest and drives the boards
# over the qtest protocol, as scripts/bench.sh does.  The tool is built by
# meson (build/tools/dn2-soak); when that is missing it is built in
# build-soak/, never in someone else's build directory.  Exit status 0
# when every property held; 1 when one did not (the TAP lines say which, the
# "#" lines above them why); 2 on a usage error (before anything starts,
# one line on stderr); 1 on a setup error (no QEMU, switch or firmware).  Bounded in time:
# the tool times every wait; this script adds an overall limit.
#
# Environment: QEMU (qemu-system-x86_64), DN2_SWITCH (dn2-switch), DN2_SOAK
# (the tool), DN2_FIRMWARE_DIR, DN2_SOAK_LIMIT (overall seconds; default
# 500 quick, 1800 full).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
cd "$DN2_TOP"

quick=
keep=
args=()
# The tool's phases, and the phases this script runs itself (their TAP is
# merged into one numbered stream with the tool's).
tool_phases_all=mmio,hostile,secret,rvs,join
script_phases_all=pmi,provider
phases=$tool_phases_all,$script_phases_all
dn2_split_opts "$@"; set -- "${DN2_ARGS[@]}"
while [ $# -gt 0 ]; do
    case $1 in
        --quick) quick=1; args+=(--quick); shift ;;
        --keep) keep=1; args+=(--keep); shift ;;
        --verbose) args+=(--verbose); shift ;;
        --phases) dn2_need_value "$@"; phases=$2; shift 2 ;;
        --seed|--mmio-ops|--datagrams|--rvs-mib|--reset-board|--join-rounds|--join-spoof-ms)
            dn2_need_value "$@"; args+=("$1" "$2"); shift 2 ;;
        -h|--help) dn2_usage; exit 0 ;;
        *) usage_error "unknown argument: $1" ;;
    esac
done

# Split --phases between the tool and this script; an unknown name is an error.
tool_phases=
script_phases=
IFS=, read -r -a wanted <<< "$phases"
for ph in "${wanted[@]}"; do
    case ",$tool_phases_all," in *",$ph,"*) tool_phases+=${tool_phases:+,}$ph; continue ;; esac
    case ",$script_phases_all," in *",$ph,"*) script_phases+=${script_phases:+,}$ph; continue ;; esac
    usage_error "unknown phase '$ph' (phases: $tool_phases_all,$script_phases_all)"
done

# QEMU: the device engineer rebuilds it in place; wait (bounded) for a binary
# that exists and has not changed for a few seconds.
qemu=$(dn2_find_qemu 2>/dev/null) || qemu=${QEMU:-$DN2_TOP/build/qemu/qemu-$QEMU_VERSION/build/qemu-system-x86_64}
for _ in $(seq 1 60); do
    if [ -x "$qemu" ] && [ $(( $(date +%s) - $(stat -c %Y "$qemu") )) -ge 3 ]; then
        break
    fi
    log "waiting for $qemu (being rebuilt?)"
    sleep 2
done
[ -x "$qemu" ] || die "no QEMU at '$qemu' (set QEMU=, or build: scripts/build-qemu.sh)"

# The switch and the tool from the meson build; missing, from our own.
own_build() { # own_build TARGET: builds it in build-soak/, prints its path
    log "no $1 in build/: building it in build-soak/"
    [ -f build-soak/build.ninja ] || meson setup build-soak >/dev/null
    meson compile -C build-soak "$1" >/dev/null || die "cannot build $1"
    echo "$DN2_TOP/build-soak/$1"
}
switch=${DN2_SWITCH:-$DN2_TOP/build/fabric/dn2-switch}
[ -x "$switch" ] || switch=$(own_build fabric/dn2-switch) || exit 1
tool=${DN2_SOAK:-$DN2_TOP/build/tools/dn2-soak}
[ -x "$tool" ] || tool=$(own_build tools/dn2-soak) || exit 1

fw=${DN2_FIRMWARE_DIR:-$(bash scripts/build-qemu.sh --print-env 2>/dev/null | sed -n 's/^DN2_FIRMWARE_DIR=//p')}
fw=${fw:-$DN2_CACHE/firmware}
[ -f "$fw/bios-256k.bin" ] || die "no bios-256k.bin in '$fw' (run scripts/setup.sh)"

limit=${DN2_SOAK_LIMIT:-$([ -n "$quick" ] && echo 500 || echo 1800)}
# The tool's temporary directory (SO-DIMM files, logs, sockets) goes in one
# of ours, removed on exit whatever happened to the tool (unless --keep).
base=/dev/shm
[ -d "$base" ] && [ -w "$base" ] || base=${TMPDIR:-/tmp}
tmp=$(mktemp -d "$base/dn2-soak.XXXXXX")
cleanup() {
    [ -n "$keep" ] || rm -rf "$tmp"
}
trap cleanup EXIT
trap 'cleanup; trap - EXIT; exit 130' INT TERM HUP
log "soak${quick:+ (quick)}: qemu=$qemu switch=$switch phases=$phases (limit ${limit}s)"
t0=$(date +%s)
rc=0

# One TAP stream: every part's points renumbered in order, the plan at the
# end.  The count so far lives in a file, since each part is a pipeline.
echo "TAP version 13"
echo 0 > "$tmp/tap-n"
tap_merge() { # tap_merge < TAP: the points renumbered, plans dropped
    awk -v nf="$tmp/tap-n" '
        BEGIN { n = 0; if ((getline l < nf) > 0) n = l + 0; close(nf) }
        /^TAP version/ || /^1\.\.[0-9]+/ { next }
        /^(not )?ok( |$)/ {
            pre = "ok"; rest = $0
            if (rest ~ /^not /) { pre = "not ok"; rest = substr(rest, 5) }
            rest = substr(rest, 3)
            sub(/^ +[0-9]+/, "", rest)
            n++
            print pre " " n rest
            fflush()
            next
        }
        { print; fflush() }
        END { print n > nf }'
}
left() { echo $(( limit - ($(date +%s) - t0) )); }
# run_part NAME CMD...: one part, bounded by what is left of the limit; a
# part that is killed or that fails without a "not ok" gets one.
run_part() {
    local name=$1 prc=0 budget
    shift
    budget=$(left)
    if [ "$budget" -le 5 ]; then
        echo "not ok - $name: not run, the soak run's limit of ${limit}s was used up" | tap_merge
        rc=1
        return
    fi
    set +e
    timeout --kill-after=20 "$budget" "$@" | tap_merge
    prc=${PIPESTATUS[0]}
    set -e
    if [ "$prc" = 124 ] || [ "$prc" = 137 ]; then
        echo "not ok - $name: exceeded the soak run's limit of ${limit}s" | tap_merge
        echo "# soak: $name killed after ${limit}s in all"
        prc=1
    fi
    [ "$prc" = 0 ] || rc=1
}

# The tool kills its children on exit (and they die with it: PDEATHSIG);
# timeout bounds the whole run even if the tool itself were stuck.
if [ -n "$tool_phases" ]; then
    DN2_SOAK_TMP=$tmp run_part "dn2-soak" "$tool" --qemu "$qemu" \
        --switch "$switch" --fw "$fw" --phases "$tool_phases" "${args[@]}"
fi
case ",$script_phases," in *,pmi,*)
    run_part pmi /usr/bin/python3 "$DN2_TOP/tests/cluster/pmi-server-test.py" --soak \
        ${quick:+--quick} ;;
esac
case ",$script_phases," in *,provider,*)
    run_part provider bash "$DN2_TOP/tests/ofi/ofi-test.sh" --soak ${quick:+--quick} ;;
esac
echo "1..$(cat "$tmp/tap-n")"
log "soak: exit status $rc after $(( $(date +%s) - t0 ))s"
exit "$rc"
