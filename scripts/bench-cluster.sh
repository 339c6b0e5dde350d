#!/usr/bin/env bash
# The thesis's chapter 6/7 measurements on two Linux guests, each with a
# DIMMnet-2 board on one dn2-switch, next to UDP between the same two guests
# over virtio-net, measured in the same run (docs/benchmarks-guest.md).
#
#   scripts/bench-cluster.sh [options] [-- extra dn2-bench arguments]
#
#   --full            the long sweeps (every size range of the thesis, 4x the
#                     iterations; about 4 minutes under TCG; default: ~1 min)
#   --demo            the short version for scripts/demo.sh: BOTF and RVS
#                     tables at 7 sizes (8 B .. 1 MiB), UDP at the same sizes
#   --only LIST       dn2-bench tables: botf, botf-big, rvs, ipush, lhs, probe
#   --poll P          how the guest waits for the board (dn2-bench --poll:
#                     sleep[:US] (default), hybrid[:US], spin[:US], tight)
#   --no-udp          skip the UDP baseline
#   --device-opts S   board properties for both nodes (cluster.sh
#                     --device-opts), e.g. rx-thread=off
#   --slice US        the host CPU time slice of the QEMUs, the switch and
#                     the hub (cluster.sh --slice; default 100 µs, 0 the
#                     kernel's default); the report says which was in effect
#   --lock-profile    QEMU's synchronisation profiler in both guests from
#                     dn2-bench's start to the end (HMP sync-profile over
#                     QMP): the report gets each node's longest lock waits
#   --virtual-time    both nodes in lock-step virtual time (cluster.sh
#                     --virtual-time; docs/cluster.md, "Virtual time"): the
#                     figures are virtual-time figures, the same in every
#                     run on any host; no UDP baseline (a guest-to-guest
#                     NIC is input at host-dependent times)
#   --vt-shift N, --vt-insn-ps P, --vt-lookahead NS, --vt-quantum NS
#                     cluster.sh's (-icount shift or insn-ps, the modelled
#                     packet latency, the delivery time grid)
#   --timing MODEL    with --virtual-time: the boards' timing model
#                     (timing=MODEL: thesis, docs/timing.md); one guest
#                     instruction takes 381 ps, one cycle of the thesis's
#                     2625.918 MHz Pentium 4 (--vt-insn-ps 381), unless
#                     --vt-shift or --vt-insn-ps is given; the lookahead
#                     becomes the model's least latency (625 ns) unless
#                     --vt-lookahead is given, the guest polls as the
#                     thesis's host did (--poll tight) unless --poll is
#                     given, the BOTF 2-64 KiB table runs too (otherwise
#                     only with --full; --only chooses), and the report
#                     ends with one line per thesis row measured:
#                     row NAME measured V thesis T UNIT error E%
#                     (a row that a [calibrated] parameter was solved from
#                     ends "calibrates PARAM" and is not counted in the
#                     "rows:" line of predicted rows within 10 % and 5 %)
#                     and one per shape of the thesis's curves checked:
#                     shape NAME holds|fails: FIGURES
#   -t, --timeout S   seconds for the whole cluster run (default 900)
#   -o, --output F    the report (default build/bench/guest-<date>.txt)
#   -q, --quiet       no progress lines on stderr
#
# Steps: builds dn2-bench, udp-bench, dn2-up, dn2-switch (meson) and the
# guest module (linux-guest/driver/build.sh), copies them into
# build/guest/export/ (the guests see it as /opt/dn2), then boots 2 nodes
# with scripts/cluster.sh.  Each node: insmod dimmnet2.ko, dn2-up, a second
# NIC (virtio-net on a QEMU dgram network joining only the two guests,
# 192.168.77.<node+1>/24), udp-bench (rank 0 client, rank 1 server), then
# dn2-bench --udp.  Rank 0's tables are printed and saved, with the host's
# load and the boards' fabric statistics (read over QMP) appended.
#
# cluster.sh gives every node the same extra QEMU arguments, so the
# per-node NIC (its own UDP ports and MAC) is added by a small QEMU wrapper
# generated here (build/bench/qemu-node.sh), passed to cluster.sh as $QEMU.
#
# Exit status: 0 every table measured; 1 a benchmark failed (the report says
# where); 2 a usage error (before anything starts); 3, 4 or 124:
# cluster.sh's status (a node failed, setup, timeout).
# Environment: QEMU (the real binary), DN2_ACCEL, DN2_CACHE as cluster.sh.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"

full=
demo=
only=
poll=
udp=1
timeout_s=900
output=
quiet=
dn2_extra=()
device_opts=
lock_profile=
slice_us=100
vt_opts=()
dn2_split_opts "$@"
set -- "${DN2_ARGS[@]}"
while [ $# -gt 0 ]; do
    case $1 in
        --full) full=1; shift ;;
        --demo) demo=1; shift ;;
        --only) dn2_need_value "$@"; only=$2; shift 2 ;;
        --poll) dn2_need_value "$@"; poll=$2; shift 2 ;;
        --no-udp) udp=; shift ;;
        --lock-profile) lock_profile=1; shift ;;
        --device-opts) dn2_need_arg "$@"; device_opts=$2; shift 2 ;;
        --slice) dn2_need_value "$@"; slice_us=$2; shift 2 ;;
        --virtual-time) vt_opts+=(--virtual-time); shift ;;
        --vt-shift|--vt-insn-ps|--vt-lookahead|--vt-quantum) dn2_need_value "$@"; dn2_want_uint "$1" "$2"; vt_opts+=("$1" "$2"); shift 2 ;;
        --timing) dn2_need_value "$@"; timing=$2; shift 2 ;;
        -t|--timeout) dn2_need_value "$@"; timeout_s=$2; shift 2 ;;
        -o|--output) dn2_need_value "$@"; output=$2; shift 2 ;;
        -q|--quiet) quiet=1; shift ;;
        -h|--help) dn2_usage; exit 0 ;;
        --) shift; dn2_extra=("$@"); break ;;
        *) usage_error "unknown argument: $1" ;;
    esac
done
dn2_want_uint --timeout "$timeout_s"
dn2_want_uint --slice "$slice_us"
[ -n "$full" ] && [ "$timeout_s" = 900 ] && timeout_s=2400
vt=
if [ -n "${timing:-}" ]; then
    [ "$timing" = thesis ] || usage_error "--timing: the one model is thesis (docs/timing.md), not '$timing'"
    [[ " ${vt_opts[*]} " == *" --virtual-time "* ]] || usage_error "--timing goes with --virtual-time: the model's times are virtual times"
    device_opts="timing=$timing${device_opts:+,$device_opts}"
    [[ " ${vt_opts[*]} " == *" --vt-lookahead "* ]] || vt_opts+=(--vt-lookahead 625)
    # one instruction per cycle of the thesis's Pentium 4 at 2625.918 MHz
    # (Table 6.1, p.90): 1 / 2.625918 GHz = 380.8 ps, 381 (an [EMU] choice:
    # docs/thesis-choices.md; docs/timing.md)
    [[ " ${vt_opts[*]} " == *" --vt-shift "* || " ${vt_opts[*]} " == *" --vt-insn-ps "* ]] \
        || vt_opts+=(--vt-insn-ps 381)
    # the thesis's host polled the board's registers back to back; a guest
    # that naps between looks would measure its naps
    [ -n "$poll" ] || poll=tight
    # every table with a thesis row, the 2-64 KiB BOTF one included
    [ -n "$only" ] || [ -n "$full" ] || [ -n "$demo" ] || only=botf,botf-big,rvs,ipush,lhs
fi
if [ ${#vt_opts[@]} -gt 0 ]; then
    [ "${vt_opts[0]}" = --virtual-time ] || [[ " ${vt_opts[*]} " == *" --virtual-time "* ]] \
        || usage_error "--vt-shift, --vt-insn-ps, --vt-lookahead and --vt-quantum go with --virtual-time"
    vt=1
    # The UDP baseline needs a guest-to-guest NIC: input at host times.
    udp=
fi

bench_dir=$DN2_TOP/build/bench
export_dir=${DN2_GUEST_EXPORT:-$DN2_TOP/build/guest/export}
stamp=$(date +%Y%m%d-%H%M%S)
name=bench-$stamp
output=${output:-$bench_dir/guest-$stamp.txt}
mkdir -p "$bench_dir" "$export_dir/bin"
progress() { [ -n "$quiet" ] || printf '[bench] %s\n' "$*" >&2; }

# ---------------------------------------------------------------- build
progress "building dn2-bench, udp-bench, dn2-up, dn2-switch and the guest module"
if [ ! -f "$DN2_TOP/build/build.ninja" ]; then
    meson setup "$DN2_TOP/build" "$DN2_TOP" > "$bench_dir/build.log" 2>&1 \
        || { tail -20 "$bench_dir/build.log"; die "meson setup failed (log: $bench_dir/build.log)"; }
fi
meson compile -C "$DN2_TOP/build" dn2-bench udp-bench dn2-up dn2-switch >> "$bench_dir/build.log" 2>&1 \
    || { tail -20 "$bench_dir/build.log"; die "building the benchmark programs failed (log: $bench_dir/build.log)"; }
bash "$DN2_TOP/linux-guest/driver/build.sh" >> "$bench_dir/build.log" 2>&1 \
    || { tail -20 "$bench_dir/build.log"; die "building the guest module failed (log: $bench_dir/build.log)"; }
real_qemu=$(dn2_find_qemu) || die "no QEMU with the dimmnet2 device: run scripts/build-qemu.sh (or scripts/test.sh)"
for p in dn2-bench udp-bench dn2-up; do
    cmp -s "$DN2_TOP/build/linux-guest/$p" "$export_dir/bin/$p" \
        || cp "$DN2_TOP/build/linux-guest/$p" "$export_dir/bin/$p" || die "cannot copy $p into $export_dir/bin"
done
if [ -n "$vt" ]; then
    vt_shift=0
    for ((k = 0; k < ${#vt_opts[@]}; k++)); do
        [ "${vt_opts[k]}" = --vt-shift ] && vt_shift=${vt_opts[k + 1]}
        [ "${vt_opts[k]}" = --vt-insn-ps ] && export DN2_VT_INSN_PS=${vt_opts[k + 1]}
    done
    dn2_vt_accel "$vt_shift" || exit 4
else
    dn2_accel || exit 4
fi
command -v python3 > /dev/null || die "python3 is needed (cluster.sh's job server, QMP statistics)"

# ------------------------------------------------- the per-node second NIC
# Two free UDP ports on 127.0.0.1: node0 <-> node1 over QEMU's dgram netdev.
read -r port0 port1 < <(python3 - <<'PY'
import socket
s = [socket.socket(socket.AF_INET, socket.SOCK_DGRAM) for _ in range(2)]
for x in s: x.bind(("127.0.0.1", 0))
print(*(x.getsockname()[1] for x in s))
PY
) || die "cannot find two free UDP ports"
# Per-run files live in a private directory (QMP sockets want short paths);
# copies of the wrapper and the node script stay in build/bench/.
qmp_dir=$(mktemp -d "${TMPDIR:-/tmp}/dn2-bench.XXXXXX") || die "mktemp failed"
lpid=
trap '[ -n "$lpid" ] && kill "$lpid" 2> /dev/null; rm -rf "$qmp_dir"' EXIT
wrapper=$qmp_dir/qemu-node.sh
cat > "$wrapper" <<EOF
#!/bin/bash
# Generated by scripts/bench-cluster.sh: cluster.sh runs this as \$QEMU.
# Adds node N's own NIC on the guest-to-guest dgram network (ports $port0 /
# $port1, MAC 52:54:00:77:00:0<N+1>).
real=$(printf '%q' "$real_qemu")
n=; prev=
for a in "\$@"; do [ "\$prev" = -name ] && n=\${a#node}; n=\${n%%,*}; prev=\$a; done
case \$n in 0) l=$port0 r=$port1 ;; 1) l=$port1 r=$port0 ;; *) exec "\$real" "\$@" ;; esac
exec "\$real" "\$@" \\
    -netdev "dgram,id=bench,local.type=inet,local.host=127.0.0.1,local.port=\$l,remote.type=inet,remote.host=127.0.0.1,remote.port=\$r" \\
    -device "virtio-net-pci,netdev=bench,mac=52:54:00:77:00:0\$((n + 1)),romfile="
EOF
chmod +x "$wrapper"

# ----------------------------------------------------------- node command
dn2_args=()
[ -n "$udp" ] && dn2_args+=(--udp /tmp/udp.txt)
[ -n "$full" ] && dn2_args+=(--full)
[ -n "$only" ] && dn2_args+=(--only "$only")
[ -n "$poll" ] && dn2_args+=(--poll "$poll")
udp_args=()
[ -n "$full" ] && udp_args+=(--full)
if [ -n "$demo" ]; then
    demo_sizes=8,64,496,1984,4096,65536,1048576
    [ -n "$only" ] || dn2_args+=(--only botf,rvs)
    dn2_args+=(--sizes "$demo_sizes")
    udp_args+=(--sizes "$demo_sizes")
fi
dn2_args+=("${dn2_extra[@]}")
node_sh=$qmp_dir/node.sh
{
    echo '# Generated by scripts/bench-cluster.sh: what every node runs.'
    echo 'insmod /opt/dn2/dimmnet2.ko || { echo "bench: insmod dimmnet2.ko failed"; exit 1; }'
    echo 'dn2-up -q > /tmp/dn2-lid || { echo "bench: dn2-up failed"; exit 1; }'
    if [ -n "$udp" ]; then
        cat <<'EOF'
ifc=
for i in /sys/class/net/*; do
    case $(cat "$i/address" 2>/dev/null) in 52:54:00:77:00:*) ifc=${i##*/} ;; esac
done
if [ -n "$ifc" ] && ip link set "$ifc" up && ip addr add "192.168.77.$((DN2_NODE + 1))/24" dev "$ifc"; then
EOF
        printf '    udp-bench %s > /tmp/udp.txt || echo "bench: udp-bench failed (rc $?)" >&2\n' "${udp_args[*]}"
        cat <<'EOF'
else
    echo "bench: no second NIC (52:54:00:77:00:*): no UDP baseline" >&2
fi
EOF
    fi
    printf 'dn2-bench'
    printf ' %q' "${dn2_args[@]}"
    printf '\nrc=$?\n'
    echo 'sleep 2    # the host reads the boards'"'"' statistics meanwhile'
    echo 'exit $rc'
} > "$node_sh"

cp "$wrapper" "$bench_dir/qemu-node.sh" && cp "$node_sh" "$bench_dir/node.sh"

# -------------------------------------------------------------------- run
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
others=$(pgrep -f qemu-system | wc -l)
rundir=$DN2_TOP/build/cluster/$name
progress "booting 2 nodes ($DN2_ACCEL_NAME; cluster $rundir); $([ -n "$full" ] && echo "about 4 minutes" || echo "about a minute")"
# (virtual time: no second NIC, so the real QEMU)
qemu_run=$wrapper
[ -n "$vt" ] && qemu_run=$real_qemu
QEMU=$qemu_run "$here/cluster.sh" -q -n 2 --name "$name" -t "$timeout_s" -f "$node_sh" --board-stats --slice "$slice_us" \
    ${device_opts:+--device-opts "$device_opts"} "${vt_opts[@]}" \
    > "$qmp_dir/cluster.out" 2> "$qmp_dir/cluster.err" &
cpid=$!
# A non-interactive shell starts background jobs with SIGINT ignored, so
# cluster.sh would not see a Ctrl-C: pass it on as SIGTERM (it cleans up).
trap 'trap - INT TERM; kill -TERM "$cpid" 2> /dev/null; wait "$cpid"; echo "[bench] interrupted" >&2; exit 130' INT TERM

# --lock-profile: once the QMP sockets are there, sync-profile on in both
# QEMUs; reset when rank 0's dn2-bench starts (so boot and the UDP baseline
# are not counted); the latest "info sync-profile" of each node is kept in
# QMP_DIR/locksI (the guests power off at the end).
lpid=
if [ -n "$lock_profile" ]; then
    python3 -c '
import os, sys, time
sys.dont_write_bytecode = True
sys.path.insert(0, sys.argv[1])
from qmp import QMP
rundir, out = sys.argv[2], sys.argv[3]
def hmp(path, line):
    q = QMP(path, timeout=5)
    try:
        return q.hmp(line)
    finally:
        q.close()
socks = {}
while len(socks) < 2:
    try:
        for l in open(os.path.join(rundir, "info")):
            k, _, v = l.strip().partition("=")
            if k in ("node0_qmp", "node1_qmp"): socks[int(k[4])] = v
    except OSError: pass
    time.sleep(0.5)
on = set(); reset = False
while True:
    for i, p in socks.items():
        try:
            if i not in on:
                hmp(p, "sync-profile on"); on.add(i)
            if reset:
                t = hmp(p, "info sync-profile -n 12")
                if t and "Type" in t:
                    with open(os.path.join(out, "locks%d.tmp" % i), "w") as f: f.write(t)
                    os.rename(os.path.join(out, "locks%d.tmp" % i), os.path.join(out, "locks%d" % i))
        except Exception: pass
    if not reset and len(on) == 2:
        try:
            if "[dn2-bench]" in open(os.path.join(rundir, "node0.log"), errors="replace").read():
                for p in socks.values(): hmp(p, "sync-profile reset")
                reset = True
        except Exception: pass
    time.sleep(1)
' "$here" "$rundir" "$qmp_dir" &
    lpid=$!
fi

# Progress from rank 0's console; cluster.sh --board-stats keeps the
# boards' latest counters in RUNDIR/board-stats/nodeI (read at the end).
seen=0
while kill -0 "$cpid" 2> /dev/null; do
    sleep 1
    if [ -z "$quiet" ] && [ -f "$rundir/node0.log" ]; then
        lines=$(tr -d '\r' < "$rundir/node0.log" | grep -E '^\[(dn2|udp)-bench\]|^bench: |FAILED' )
        n=$(printf '%s' "$lines" | grep -c '')
        if [ "$n" -gt "$seen" ]; then
            printf '%s\n' "$lines" | tail -n +"$((seen + 1))" | sed 's/^\[\(dn2\|udp\)-bench\] /[bench]   /' >&2
            seen=$n
        fi
    fi
done
wait "$cpid"
crc=$?
[ -n "$lpid" ] && { kill "$lpid" 2> /dev/null; wait "$lpid" 2> /dev/null; }
# cluster.sh's own output goes with the run's other files.
if [ -d "$rundir" ]; then
    cp "$qmp_dir/cluster.out" "$rundir/bench-cluster.out"
    cp "$qmp_dir/cluster.err" "$rundir/bench-cluster.err"
    clog=$rundir/bench-cluster.err
else
    cp "$qmp_dir/cluster.err" "$bench_dir/$name.cluster.err"
    clog=$bench_dir/$name.cluster.err
fi
load_after=$(cut -d' ' -f1-3 /proc/loadavg)
# one line of name=value per board
for i in 0 1; do
    [ -s "$rundir/board-stats/node$i" ] && paste -sd' ' "$rundir/board-stats/node$i" > "$qmp_dir/stats$i"
done

# ----------------------------------------------------------------- report
out0=$rundir/node0.out
cpu_model=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
{
    echo "DIMMnet-2 for QEMU: guest benchmarks (scripts/bench-cluster.sh, $(date '+%Y-%m-%d %H:%M'))"
    echo "2 Linux guests ($DN2_ACCEL_NAME, 1 vCPU, 256 MiB each), one board each on one dn2-switch;"
    [ -n "$vt" ] && echo "lock-step virtual time (${vt_opts[*]}): every figure is in virtual time, the same in every run on any host; replay: scripts/cluster.sh --replay $rundir"
    [[ " ${vt_opts[*]} " == *" --vt-quantum "* ]] && echo "QUANTISED: every packet's delivery is rounded up to the --vt-quantum grid, so latencies below it are not the board's"
    [ -n "${timing:-}" ] && echo "timing model: timing=$timing (docs/timing.md: the board's units, the network path and the host's board accesses in virtual time)"
    [ -n "$vt" ] && [ -z "${timing:-}" ] && echo "no timing model: every packet takes the lookahead (vt-latency-ns), whatever its size"
    echo "host: $(nproc) CPUs ($cpu_model), load average $load_before -> $load_after;"
    if [ "$slice_us" = 0 ]; then
        echo "host scheduling: the kernel's default time slice (--slice 0)"
    elif slice_why=$(python3 "$here/sched-slice.py" --check "$slice_us"); then
        echo "host scheduling: QEMUs, switch and hub with a ${slice_us} µs time slice (--slice; docs/cluster.md)"
    else
        echo "host scheduling: --slice $slice_us asked, but the kernel's default slice was in effect: $slice_why"
    fi
    [ "$others" -gt 0 ] && [ -z "$vt" ] && echo "  note: $others other QEMU process(es) were running when this started: figures are noisier"
    echo "the figures are emulator figures; the meaningful comparison is DIMMnet-2 vs UDP in the same run"
    echo
    if [ -s "$out0" ]; then
        grep -v -E '^\[(dn2|udp)-bench\]|^(row|shape) ' "$out0"
    else
        echo "(no output from rank 0)"
    fi
    if [ -s "$qmp_dir/stats0" ] || [ -s "$qmp_dir/stats1" ]; then
        echo
        echo "== Fabric statistics (the boards' QOM counters, read over QMP at the end) =="
        for i in 0 1; do
            [ -s "$qmp_dir/stats$i" ] || continue
            awk -v n="$i" '{
                for (k = 1; k <= NF; k++) { split($k, kv, "="); v[kv[1]] = kv[2] }
                tx = v["link-dgrams-tx"] + 0; re = v["link-retransmits"] + 0
                printf "node%d: %s packets sent, %s received; fabric datagrams %s out / %s in, %s retransmitted (%.1f%%; %s timer expiries, %s on SACK holes); duplicates %s; back-pressure %s; link drops %s; rx stalls %s; rx drops %s/%s/%s/%s (bad/pgid/noproc/route)\n",
                    n, v["tx-packets"], v["rx-packets"], v["link-dgrams-tx"], v["link-dgrams-rx"], re,
                    tx ? 100 * re / tx : 0, v["link-timeouts"], v["link-fast-retransmits"],
                    v["link-duplicates"], v["link-busy"], v["link-drops"], v["rx-stalls"], v["rx-drop-bad"],
                    v["rx-drop-pgid"], v["rx-drop-noproc"], v["rx-drop-route"] }' "$qmp_dir/stats$i"
        done
    fi
    if [ -n "$lock_profile" ]; then
        echo
        echo "== QEMU lock waits (sync-profile, dn2-bench's start to the end; node0 = rank 0) =="
        for i in 0 1; do
            echo "node$i:"
            if [ -s "$qmp_dir/locks$i" ]; then
                tr -d '\r' < "$qmp_dir/locks$i" | grep -E '^(Type|BQL|mutex|condvar|rec_mutex)' | sed 's/^/  /'
            else
                echo "  (no profile read)"
            fi
        done
    fi
    if grep -q '^verdict:' "$out0" 2> /dev/null; then
        echo
        echo "== Summary =="
        grep '^verdict:' "$out0" | sed 's/^verdict: /  /'
    fi
    if [ -z "${timing:-}" ] && grep -qE '^(row|shape) ' "$out0" 2> /dev/null; then
        echo
        echo "(the thesis's rows and shapes are compared only under --virtual-time --timing thesis: host-time figures are the emulator's, compared with UDP in the same run)"
    fi
    if [ -n "${timing:-}" ] && grep -q '^row ' "$out0" 2> /dev/null; then
        echo
        echo "== The thesis's rows (row NAME measured V thesis T UNIT error E%[ calibrates PARAM]) =="
        tr -d '\r' < "$out0" | grep '^row '
        # Agreement is counted over the predicted rows only: a row that a
        # [calibrated] parameter was solved from is printed, marked, not counted.
        tr -d '\r' < "$out0" | awk -f "$here/rows-summary.awk"
    fi
    if [ -n "${timing:-}" ] && grep -q '^shape ' "$out0" 2> /dev/null; then
        echo
        echo "== The thesis's shapes (shape NAME holds|fails: FIGURES) =="
        tr -d '\r' < "$out0" | grep '^shape '
    fi
} > "$output"

cat "$output"
echo
echo "report: $output"
status=0
if [ "$crc" -ne 0 ]; then
    echo "cluster.sh exit status $crc; its messages ($clog):"
    tail -25 "$clog"
    for i in 0 1; do
        if grep -q 'FAILED\|bench: ' "$rundir/node$i.out" 2> /dev/null; then
            echo "---- node$i ----"
            grep -A6 'FAILED\|bench: ' "$rundir/node$i.out" | head -20
        fi
    done
    status=$([ "$crc" -eq 1 ] && echo 1 || echo "$crc")
elif grep -q 'FAILED' "$out0" 2> /dev/null; then
    status=1
fi
exit "$status"
