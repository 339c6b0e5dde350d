#!/usr/bin/env bash
# TAP: libdn2dsm on a 3-node cluster of TCG guests with the boards and the
# guest-to-guest Ethernet: dsm-test over the boards, then over TCP (the
# same program, one transport switch), then the killed-node check over
# both.  Rank 0's TAP of each run is merged into one plan here.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../../scripts/lib.sh"
. "$here/../tap/tap-lib.sh"
dn2_no_options "$@"

prog=${DN2_DSM_TEST:-$DN2_TOP/build/tests/dsm/dsm-test}
mkdir -p "$DN2_TOP/build/cluster"
if ! bash "$DN2_TOP/scripts/export-guest.sh" "$prog" >/dev/null 2>"$DN2_TOP/build/dsm-export.log"; then
    tap_plan 1
    not_ok "could not prepare the guest programs: $(tail -1 "$DN2_TOP/build/dsm-export.log")"
    tap_done
fi

nodes=3
log=$DN2_TOP/build/cluster/dsm-$nodes.out
# Each run prints "DSMRUN name" first so its TAP can be told apart.
cmd="insmod /opt/dn2/dimmnet2.ko && dn2-up -q >/dev/null && \
echo DSMRUN board && dsm-test --tp board; \
echo DSMRUN tcp && dsm-test --tp tcp; \
echo DSMRUN board-kill && DN2_JOB=\${DN2_JOB:-j}k dsm-test --tp board --kill --timeout 3; \
echo DSMRUN tcp-kill && DSM_TCP_PORT=7450 dsm-test --tp tcp --kill --timeout 3; true"
tap_defer
bash "$DN2_TOP/scripts/cluster.sh" -n "$nodes" -q -t 600 --ethernet --name "dsm-$nodes" \
    -r "$cmd" > "$log" 2>&1
rc=$?
run=
seen=0
while IFS= read -r line; do
    case $line in
        "DSMRUN "*) run=${line#DSMRUN } ;;
        "ok "*) ok "[$run] ${line#ok * - }"; seen=$((seen + 1)) ;;
        "not ok "*) not_ok "[$run] ${line#not ok * - }"; seen=$((seen + 1)) ;;
    esac
done < <(sed -n 's/^node0| //p' "$log")
# 7 + 7 + 2 + 2 points from rank 0.
if [ "$seen" -ne 18 ]; then
    not_ok "rank 0 printed $seen of 18 results (exit $rc, log $log)"
    tail -20 "$log" | diag
elif [ $rc -eq 0 ]; then
    ok "every node's job ended"
else
    not_ok "cluster run failed (exit $rc, log $log)"
    grep -v '^node0|' "$log" | tail -15 | diag
fi
tap_done
