#!/usr/bin/env bash
# TAP: libdn2dsm's core on this host, no QEMU: dsm-test over TCP on
# 127.0.0.1, once on one node (nothing goes to a home copy nobody else
# reads; locks still exact) and once on three processes.  Rank 0's TAP of
# each run (it reports every node's verdict) is merged into one plan here.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../../scripts/lib.sh"
. "$here/../tap/tap-lib.sh"
dn2_no_options "$@"

prog=${DN2_DSM_TEST:-$DN2_TOP/build/tests/dsm/dsm-test}
[ -x "$prog" ] || tap_skip_all "no $prog: run 'meson compile -C build'"
out=$(mktemp -d "${TMPDIR:-/tmp}/dsm-host.XXXXXX")
trap 'rm -rf "$out"' EXIT
tap_defer

# run NODES: dsm-test on NODES processes (ports from a per-run base)
run() {
    local n=$1 i rc=0 hosts=127.0.0.1 port=$((20000 + ($$ * 7 + $1 * 101) % 30000))
    local pids=()
    for ((i = 1; i < n; i++)); do hosts+=,127.0.0.1; done
    for ((i = 0; i < n; i++)); do
        DN2_NODE=$i DN2_NODES=$n DSM_TCP_HOSTS=$hosts DSM_TCP_PORT=$port \
            timeout 120 "$prog" --tp tcp --timeout 30 > "$out/$n.$i" 2>&1 &
        pids+=($!)
    done
    for i in "${!pids[@]}"; do
        wait "${pids[$i]}" || rc=1
    done
    while IFS= read -r line; do
        case $line in
            "ok "*) ok "[$n node(s)] ${line#ok * - }" ;;
            "not ok "*) not_ok "[$n node(s)] ${line#not ok * - }" ;;
        esac
    done < "$out/$n.0"
    result $rc "[$n node(s)] every process ended with status 0"
    [ $rc = 0 ] || cat "$out/$n".* | tail -20 | diag
}

run 1
run 3
tap_done
