#!/usr/bin/env bash
# TAP: the end-to-end suite through driver and library on 2-node and 4-node
# clusters.  Each node loads the driver, brings its board up (dn2-up) and
# runs dn2-e2e (every network primitive across boards with data verified,
# protection, a process killed mid-transfer, message passing, barriers);
# rank 0's TAP of each run is merged into one plan here.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../../scripts/lib.sh"
. "$here/../tap/tap-lib.sh"
dn2_no_options "$@"

e2e=${DN2_E2E:-$DN2_TOP/build/tests/cluster/dn2-e2e}
mkdir -p "$DN2_TOP/build/cluster"
if ! bash "$DN2_TOP/scripts/export-guest.sh" "$e2e" >/dev/null 2>"$DN2_TOP/build/e2e-export.log"; then
    tap_plan 1
    not_ok "could not prepare the guest programs: $(tail -1 "$DN2_TOP/build/e2e-export.log")"
    tap_done
fi

tap_defer
for nodes in 2 4; do
    log=$DN2_TOP/build/cluster/e2e-$nodes.out
    bash "$DN2_TOP/scripts/cluster.sh" -n "$nodes" -q -t 900 --name "e2e-$nodes" \
        -r "insmod /opt/dn2/dimmnet2.ko && dn2-up -q >/dev/null && dn2-e2e" > "$log" 2>&1
    rc=$?
    tap=$(sed -n 's/^node0| //p' "$log" | grep -E '^(ok|not ok) ')
    if [ -z "$tap" ]; then
        not_ok "$nodes-node cluster: no results from rank 0 (exit $rc, log $log)"
        tail -15 "$log" | diag
        continue
    fi
    while IFS= read -r line; do
        case $line in
            "ok "*) ok "[$nodes nodes] ${line#ok * - }" ;;
            *) not_ok "[$nodes nodes] ${line#not ok * - }" ;;
        esac
    done <<< "$tap"
    if [ $rc -eq 0 ]; then
        ok "[$nodes nodes] every node's job succeeded"
    else
        not_ok "[$nodes nodes] cluster run failed (exit $rc, log $log)"
        grep -v '^node0|' "$log" | tail -15 | diag
    fi
done
tap_done
