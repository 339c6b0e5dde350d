#!/usr/bin/env bash
# MPI over the DIMMnet-2 boards against MPI over TCP, in the same guests in
# the same run (docs/mpi.md): one cluster (scripts/mpirun.sh) runs, for each
# network, tests/mpi/mpi-bench (8-byte ping-pong latency, 1 MiB bandwidth,
# allreduce of 8 B (median, mean, slowest call) and 1 MiB) and Debian's NetPIPE (NPopenmpi), then prints
# the figures side by side with the ratios.  With --repeat N the networks
# take turns N times in the same cluster (board, tcp, board, tcp, ...) and
# every figure and every ratio (taken within each round) is printed as the
# median and the spread (lowest-highest) of the N.  Targets printed: the
# board's 8-byte latency at least 3x better than TCP's, its 1 MiB
# bandwidth at least 1.5x, the allreduce (median, mean, slowest call at
# 8 B; 1 MiB) no worse.  Figures only: nothing here passes or fails on a
# timing.
#
#   scripts/bench-mpi.sh [-n NODES] [--ppn P] [--iters N] [--np-max BYTES]
#                        [--nets 'board tcp'] [--repeat N] [--keep DIR]
#                        [--cpu SECS] [--split]
#
#   --repeat N     rounds of mpi-bench, the networks alternating (default
#                  1); NetPIPE runs once per network, after the rounds
#   -n NODES       nodes (default 2; ping-pong between ranks 0 and 1)
#   --ppn P        ranks per node (default 1)
#   --iters N      ping-pong iterations (default 200; the rest scale)
#   --np-max B     NetPIPE's largest message (default 1048576)
#   --nets 'L'     networks to compare (default: board and tcp when the
#                  provider is built, else tcp alone)
#   --keep DIR     also write the raw outputs and NetPIPE curves to DIR
#   --tcp-mtu N    MTU of the guests' Ethernet (default 65000: the TCP
#                  baseline's best configuration here, one datagram per
#                  64 KB segment instead of per 1.5 KB)
#   --ofi PROV     the board's libfabric provider (mpirun.sh --ofi):
#                  dimmnet2 (default, the native RDM endpoint) or
#                  'dimmnet2;ofi_rxd'
#   --stats        the provider's own accounting (FI_DIMMNET2_STATS=1):
#                  per rank, the milliseconds spent in each step of its
#                  data path during mpi-bench, printed after the table
#   --board-env 'V=X ...'  extra environment for the board's jobs (e.g.
#                  FI_DIMMNET2_IDLE_US=1, docs/ofi-provider.md)
#   --board-b 'V=X ...'  a second board setting B: its jobs (board with
#                  --board-env and these) take turns with the others
#                  (board, board B, tcp, ...); columns "B ratio" (B
#                  against TCP) and "B/A" (B against the first board
#                  setting, per round; times: A / B, bandwidth: B / A;
#                  above 1: B is better)
#   --cpu SECS     after the rest, one more job per network: the 1 MiB
#                  stream alone for SECS seconds (mpi-bench --stream), while
#                  scripts/host-cpu.py samples the host threads' CPU time
#                  between its marks; then a table per network: the
#                  stream's MB/s, the host CPUs in use, the host CPU ms per
#                  MiB of the sending and the receiving rank's vCPU, the
#                  nodes' QEMU main loops, the switch (board) or the hub
#                  (tcp), the rest and the total (with the ratio tcp /
#                  board), and the ms per MiB each vCPU and main loop
#                  waited for a host CPU
#   --split        where Open MPI's 8-byte one-way time goes, from one run:
#                  in every round, beside mpi-bench over each network, the
#                  boards' own BOTF and IPUSH ping-pongs (dn2-bench --only
#                  botf,ipush --sizes 8 --poll spin: the guest spinning
#                  with PAUSE, as the provider does) and the provider's own
#                  8-byte tagged ping-pong (tests/ofi/ofi-pingpong.c:
#                  fi_tsend / fi_trecv, no MPI), all in the same guests;
#                  then a table of the four paths' one-way 8-byte times
#                  and the differences between them, per round, as
#                  medians (lowest-highest).  NetPIPE is not run.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"

nodes=2 ppn=1 iters=200 npmax=1048576 nets= keep= mtu=65000 ofi=dimmnet2 stats= benv= benvb= repeat=1 cpu= split=
dn2_split_opts "$@"
set -- "${DN2_ARGS[@]}"
while [ $# -gt 0 ]; do
    case $1 in
        -n|--nodes) dn2_need_value "$@"; nodes=$2; shift 2 ;;
        --ppn) dn2_need_value "$@"; ppn=$2; shift 2 ;;
        --iters) dn2_need_value "$@"; iters=$2; shift 2 ;;
        --np-max) dn2_need_value "$@"; npmax=$2; shift 2 ;;
        --nets) dn2_need_value "$@"; nets=$2; shift 2 ;;
        --keep) dn2_need_value "$@"; keep=$2; shift 2 ;;
        --tcp-mtu) dn2_need_value "$@"; mtu=$2; shift 2 ;;
        --ofi) dn2_need_value "$@"; ofi=$2; shift 2 ;;
        --stats) stats=1; shift ;;
        --repeat) dn2_need_value "$@"; repeat=$2; shift 2 ;;
        --board-env) dn2_need_value "$@"; benv+="$2 "; shift 2 ;;
        --board-b) dn2_need_value "$@"; benvb+="$2 "; shift 2 ;;
        --cpu) dn2_need_value "$@"; cpu=$2; shift 2 ;;
        --split) split=1; shift ;;
        -h|--help) dn2_usage; exit 0 ;;
        *) usage_error "unknown argument: $1" ;;
    esac
done
dn2_want_uint --nodes "$nodes"
dn2_want_uint --ppn "$ppn"
dn2_want_uint --iters "$iters"
dn2_want_uint --np-max "$npmax"
dn2_want_uint --tcp-mtu "$mtu"
dn2_want_uint --repeat "$repeat"
[ "$repeat" -ge 1 ] || usage_error "--repeat $repeat: at least one round"
if [ -n "$cpu" ]; then
    dn2_want_uint --cpu "$cpu"
    [ "$cpu" -ge 1 ] || usage_error "--cpu $cpu: at least one second"
fi
[ $((nodes * ppn)) -ge 2 ] || usage_error "-n $nodes --ppn $ppn is one rank: the ping-pong wants ranks 0 and 1"
for net in $nets; do
    case $net in board|tcp) ;; *) usage_error "--nets: '$net' is not board or tcp" ;; esac
done
if [ -z "$nets" ]; then
    if [ -n "${DN2_FI_PROVIDER:-}" ] || find "$DN2_TOP/build" -name 'libdimmnet2-fi.so' -type f 2>/dev/null | grep -q .; then
        nets="board tcp"
    else
        nets=tcp
        log "the DIMMnet-2 libfabric provider is not built: measuring TCP alone"
    fi
fi
if [ -n "$benvb" ]; then
    case " $nets " in *" board "*) ;; *) usage_error "--board-b needs the board in --nets" ;; esac
    nets=$(for n in $nets; do echo "$n"; [ "$n" = board ] && echo boardb; done | xargs)
fi
# pre NET: the environment of NET's jobs; jnet NET: mpirun.sh's network
pre() { case $1 in board) echo "$benv" ;; boardb) echo "$benv$benvb" ;; *) echo "" ;; esac; }
jnet() { [ "$1" = boardb ] && echo board || echo "$1"; }
both() { case " $nets " in *" board "*) case " $nets " in *" tcp "*) return 0 ;; esac ;; esac; return 1; }

bench=$DN2_TOP/build/tests/mpi/mpi-bench
if [ ! -x "$bench" ] || [ "$DN2_TOP/tests/mpi/mpi-bench.c" -nt "$bench" ]; then
    command -v mpicc >/dev/null || die "mpicc not found: run scripts/setup.sh (libopenmpi-dev)"
    mkdir -p "$(dirname "$bench")"
    mpicc -O2 -Wall -o "$bench" "$DN2_TOP/tests/mpi/mpi-bench.c" || die "compiling mpi-bench failed"
fi

files=(--file "$bench")
if [ -n "$split" ]; then
    case " $nets " in *" board "*) ;; *) usage_error "--split needs the board in --nets" ;; esac
    pp=$DN2_TOP/build/tests/ofi/ofi-pingpong
    meson compile -C "$DN2_TOP/build" dn2-bench ofi-pingpong > /dev/null \
        || die "building dn2-bench and ofi-pingpong failed (meson compile -C build dn2-bench ofi-pingpong; libfabric-dev: scripts/setup.sh)"
    [ -x "$pp" ] || die "ofi-pingpong not built (libfabric-dev missing? scripts/setup.sh)"
    db=$(find "$DN2_TOP/build/linux-guest" -name dn2-bench -type f -perm -u+x | head -1)
    [ -n "$db" ] || die "dn2-bench not found under build/linux-guest"
    files+=(--file "$pp" --file "$db")
fi

jobs=() labels=()
declare -A jobof        # NET.ROUND -> the job's number (mpirun.sh prints [J.RANK])
j=0
for ((round = 1; round <= repeat; round++)); do
    for net in $nets; do
        pre=$(pre "$net")
        st=
        [ "$(jnet "$net")" = board ] && [ -n "$stats" ] && st="FI_DIMMNET2_STATS=1 "
        jobs+=(--job "$(jnet "$net"):$pre$st./mpi-bench $iters")
        labels+=("$net mpi-bench")
        j=$((j + 1)); jobof[$net.$round]=$j
    done
    if [ -n "$split" ]; then
        # the board's own ping-pongs and the provider's, in the same guests
        jobs+=(--job "board:DN2_RANK=\$DN2_PMI_RANK ./dn2-bench -q --only botf,ipush --sizes 8 --poll spin")
        labels+=("board dn2-bench"); j=$((j + 1)); jobof[dn2.$round]=$j
        jobs+=(--job "board:$(pre board)./ofi-pingpong $iters")
        labels+=("board ofi-pingpong"); j=$((j + 1)); jobof[ofi.$round]=$j
    fi
done
for net in $nets; do
    [ -z "$split" ] || continue
    pre=$(pre "$net")
    jobs+=(--job "$(jnet "$net"):${pre}NPopenmpi -u $npmax -o /tmp/np-$net.out >/dev/null && { [ ! -f /tmp/np-$net.out ] || cat /tmp/np-$net.out; }")
    labels+=("$net NetPIPE")
    j=$((j + 1)); jobof[$net.np]=$j
done
# --cpu: the stream alone, one job per network, after the rest
if [ -n "$cpu" ]; then
    for net in $nets; do
        jobs+=(--job "$(jnet "$net"):$(pre "$net")./mpi-bench --stream $cpu")
        labels+=("$net stream")
        j=$((j + 1)); jobof[$net.cpu]=$j
    done
fi
name=bench-mpi-$(date +%Y%m%d-%H%M%S)
out=$DN2_TOP/build/cluster/$name.bench
mkdir -p "$DN2_TOP/build/cluster"
t0=$SECONDS
# --cpu: a host-cpu.py per network watches mpirun's output for its job's
# marks (rank 0's lines "[J.0] mark stream-begin" / "-end")
cpupids=()
if [ -n "$cpu" ]; then
    command -v python3 > /dev/null || die "python3 not found (scripts/host-cpu.py): apt-get install python3"
    mkdir -p "$DN2_TOP/build/cluster"
    : > "$out"
    for net in $nets; do
        jn=${jobof[$net.cpu]}
        python3 "$here/host-cpu.py" --kv --timeout $((1800 + 3 * cpu)) \
            --begin "^\[$jn\.0\] mark stream-begin" --end "^\[$jn\.0\] mark stream-end" \
            "$DN2_TOP/build/cluster/$name" "$out" > "$out.cpu-$net" 2> "$out.cpu-$net.err" &
        cpupids+=($!)
    done
fi
bash "$here/mpirun.sh" -q -N "$nodes" --ppn "$ppn" --name "$name" -t $((1800 + ${cpu:-0} * 3)) --ofi "$ofi" \
    --cluster-opt --ethernet-mtu --cluster-opt "$mtu" \
    "${files[@]}" "${jobs[@]}" > "$out" 2> "$out.err"
rc=$?
# (each host-cpu.py has its end mark by now, unless its job failed)
for p in "${cpupids[@]}"; do
    for _ in 1 2 3 4 5 6 7 8 9 10; do kill -0 "$p" 2>/dev/null || break; sleep 0.2; done
    kill "$p" 2>/dev/null
    wait "$p" 2>/dev/null
done
[ $rc -eq 0 ] || { tail -30 "$out" "$out.err" >&2; die "the benchmark run failed (exit $rc; $out)"; }
[ -n "$keep" ] && { mkdir -p "$keep"; cp "$out" "$keep/"; }

# figure J NAME: a figure of job J from rank 0
figure() { sed -n "s/^\[$1\.0\] figure $2 //p" "$out" | head -1; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a > 0 && b > 0) printf "%.2f", a / b; else print "-" }'; }
# stat V...: "median (lowest-highest)" of the numbers given ("-" ignored)
stat() {
    printf '%s\n' "$@" | awk '$1 != "-" && $1 != "" { v[++n] = $1 + 0 }
        END {
            if (!n) { print "-"; exit }
            for (i = 2; i <= n; i++) { x = v[i]; for (k = i - 1; k >= 1 && v[k] > x; k--) v[k + 1] = v[k]; v[k + 1] = x }
            m = n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
            f = (m >= 100) ? "%.0f" : (m >= 10 ? "%.1f" : "%.2f")
            if (n == 1) printf f "\n", m
            else printf f " (" f "-" f ")\n", m, v[1], v[n]
        }'
}
# median M V...: the median alone
median() { stat "$@" | awk '{ print $1 }'; }

echo "MPI benchmark: $nodes nodes x $ppn ranks, Open MPI 4.1 (Debian), TCG guests, TCP MTU $mtu, board provider $ofi${benv:+ ($benv)}${benvb:+, board B: $benvb}, $repeat round(s) alternating, $((SECONDS - t0)) s in all, load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "(same guests, same run; ratios: board / tcp for bandwidth, tcp / board for times, taken within each round;"
[ "$repeat" -gt 1 ] && echo " each cell: the median of the rounds (lowest-highest))" || echo " one round)"
keys="lat8_us bw1m_MBps allreduce8_us allreduce8_mean_us allreduce8_max_us allreduce1m_us"
declare -A fig
for net in $nets; do
    for ((round = 1; round <= repeat; round++)); do
        jn=${jobof[$net.$round]}
        for f in $keys; do fig[$net.$f.$round]=$(figure "$jn" "$f"); done
        [ "$(sed -n "s/^\[$jn\.0\] data //p" "$out")" = checked ] || log "warning: job $jn ($net, round $round) did not report checked data"
    done
    # NetPIPE's output file: "bytes Mbps usec" per line
    [ -n "$split" ] && continue
    sed -n "s/^\[${jobof[$net.np]}\.0\] *\([0-9][0-9]*\) \+\([0-9.]\+\) \+\([0-9.]\+\).*/\1 \2 \3/p" "$out" \
        | awk '{ printf "%s %s %.1f\n", $1, $2, $3 * 1e6 }' > "$out.np-$net"
    [ -n "$keep" ] && cp "$out.np-$net" "$keep/netpipe-$net.txt"
done
w=$(( repeat > 1 ? 24 : 14 ))
printf '%-26s' "figure"; for net in $nets; do printf "%${w}s" "$net"; done
both && printf "%${w}s" "ratio"
both && [ -n "$benvb" ] && printf "%${w}s" "B ratio"
[ -n "$benvb" ] && printf "%${w}s" "B/A"
echo
declare -A med
# ratios KEY INVERT BETTER WORSE: per round, how much better net BETTER's
# figure KEY is than net WORSE's (a time when INVERT=1: WORSE / BETTER);
# prints the median and spread, sets last_median
ratios() {
    local round r rs=()
    for ((round = 1; round <= repeat; round++)); do
        if [ "$2" = 1 ]; then r=$(ratio "${fig[$4.$1.$round]}" "${fig[$3.$1.$round]}")
        else r=$(ratio "${fig[$3.$1.$round]}" "${fig[$4.$1.$round]}"); fi
        rs+=("$r")
    done
    last_median=$(median "${rs[@]}")
    printf "%${w}s" "$(stat "${rs[@]}" | sed 's/^\([^ ]*\)/\1x/')"
}
row() { # LABEL KEY INVERT
    local net round vals
    printf '%-26s' "$1"
    for net in $nets; do
        vals=()
        for ((round = 1; round <= repeat; round++)); do vals+=("${fig[$net.$2.$round]:--}"); done
        printf "%${w}s" "$(stat "${vals[@]}")"
    done
    if both; then
        ratios "$2" "$3" board tcp
        med[$2]=$last_median
    fi
    both && [ -n "$benvb" ] && ratios "$2" "$3" boardb tcp
    [ -n "$benvb" ] && ratios "$2" "$3" boardb board
    echo
}
row "8 B latency (us)" lat8_us 1
row "1 MiB bandwidth (MB/s)" bw1m_MBps 0
row "allreduce 8 B (us)" allreduce8_us 1
row "  mean of the calls (us)" allreduce8_mean_us 1
row "  slowest call (us)" allreduce8_max_us 1
row "allreduce 1 MiB (us)" allreduce1m_us 1
if [ -n "$split" ]; then
    # dn2row J NAME: a dn2-bench "row NAME measured V ..." of job J, rank 0
    dn2row() { sed -n "s/^\[$1\.0\] row $2 measured \([0-9.]*\) .*/\1/p" "$out" | head -1; }
    diff_() { awk -v a="$1" -v b="$2" 'BEGIN { if (a != "" && b != "" && a != "-" && b != "-") printf "%.1f", a - b; else print "-" }'; }
    declare -A sp
    for ((round = 1; round <= repeat; round++)); do
        sp[botf.$round]=$(dn2row "${jobof[dn2.$round]}" botf-pp-rtt2-sdimm)
        sp[ipush.$round]=$(dn2row "${jobof[dn2.$round]}" ipush-rtt2-24)
        sp[ofi.$round]=$(figure "${jobof[ofi.$round]}" ofi_lat8_us)
        sp[mpi.$round]=${fig[board.lat8_us.$round]:-}
        sp[tcp.$round]=${fig[tcp.lat8_us.$round]:-}
        sp[d_ofi.$round]=$(diff_ "${sp[ofi.$round]}" "${sp[ipush.$round]}")
        sp[d_mpi.$round]=$(diff_ "${sp[mpi.$round]}" "${sp[ofi.$round]}")
        sp[d_botf.$round]=$(diff_ "${sp[ipush.$round]}" "${sp[botf.$round]}")
        sp[r_tcp.$round]=$(ratio "${sp[tcp.$round]}" "${sp[mpi.$round]}")
        sp[r3.$round]=$(awk -v t="${sp[tcp.$round]}" 'BEGIN { if (t != "" && t != "-") printf "%.1f", t / 3; else print "-" }')
    done
    srow() { # LABEL KEY
        local round vals=()
        for ((round = 1; round <= repeat; round++)); do vals+=("${sp[$2.$round]:--}"); done
        printf '  %-58s %s\n' "$1" "$(stat "${vals[@]}")"
    }
    echo
    echo "one-way 8 B, the four paths in the same guests (us, half the median round trip; per round, then the median (lowest-highest) of the rounds):"
    srow "board BOTF ping-pong (dn2-bench, spin with PAUSE)" botf
    srow "board IPUSH ping-pong, 8 B of data (dn2-bench, same)" ipush
    srow "provider fi_tsend/fi_trecv ping-pong (ofi-pingpong)" ofi
    srow "Open MPI over the board (mpi-bench)" mpi
    srow "Open MPI over TCP (mpi-bench)" tcp
    echo "differences, per round:"
    srow "IPUSH - BOTF (the board path Open MPI's messages take)" d_botf
    srow "provider - IPUSH (libfabric and the provider)" d_ofi
    srow "Open MPI over the board - provider (Open MPI's cm/ofi)" d_mpi
    srow "TCP / 3 (the 3x target for the board's one-way time)" r3
    srow "TCP / Open MPI over the board (x)" r_tcp
fi
echo
[ -n "$split" ] || echo "NetPIPE (NPopenmpi -u $npmax): bytes, Mbit/s and one-way usec per network"
if [ -z "$split" ]; then
    printf '%10s' bytes; for net in $nets; do printf '%12s %10s' "$net Mb/s" "usec"; done; echo
fi
for b in 1 8 64 512 4096 32768 65536 262144 1048576; do
    [ -z "$split" ] || break
    [ "$b" -le "$npmax" ] || continue
    printf '%10s' "$b"
    for net in $nets; do
        read -r mb us < <(awk -v b="$b" '$1 == b { print $2, $3; exit }' "$out.np-$net")
        printf '%12s %10s' "${mb:--}" "${us:--}"
    done
    echo
done
if both; then
    # met() RATIO MIN: the median ratio against a target
    met() { awk -v r="$1" -v m="$2" 'BEGIN { print (r != "-" && r + 0 >= m) ? "met" : "NOT met" }'; }
    echo
    echo "targets (median ratios): 8 B latency >= 3x: $(met "${med[lat8_us]}" 3);" \
         "1 MiB bandwidth >= 1.5x: $(met "${med[bw1m_MBps]}" 1.5);" \
         "allreduce 8 B median, mean, slowest and 1 MiB >= 1x: $(met "${med[allreduce8_us]}" 1), $(met "${med[allreduce8_mean_us]}" 1), $(met "${med[allreduce8_max_us]}" 1), $(met "${med[allreduce1m_us]}" 1)"
fi
if [ -n "$stats" ]; then
    echo
    echo "the provider's accounting during mpi-bench over the board (FI_DIMMNET2_STATS=1):"
    grep -a 'dimmnet2 stats:' "$out" | sed 's/^/  /'
fi
if [ -n "$cpu" ]; then
    # cpuof NET CLASS FIELD: host-cpu.py's figure (3 run s, 4 wait s; 0 if absent)
    cpuof() { awk -v c="$2" -v f="$3" '$1 == "cpu" && $2 == c { v = $f } END { print v + 0 }' "$out.cpu-$1"; }
    # perm S MIB: S seconds in ms per MiB
    perm() { awk -v s="$1" -v m="$2" 'BEGIN { if (m > 0) printf "%.2f", s * 1000 / m; else print "-" }'; }
    snd=node0 rcv=node$((1 / ppn))
    declare -A hc
    for net in $nets; do
        jn=${jobof[$net.cpu]}
        mib=$(figure "$jn" stream_mib)
        hc[$net.MBps]=$(figure "$jn" stream_MBps)
        [ "$(sed -n "s/^\[$jn\.0\] data //p" "$out")" = checked ] || log "warning: job $jn ($net stream) did not report checked data"
        [ -s "$out.cpu-$net" ] || { log "warning: no host CPU figures for $net: $(head -3 "$out.cpu-$net.err" 2>/dev/null)"; continue; }
        [ -n "$keep" ] && cp "$out.cpu-$net" "$keep/host-cpu-$net.txt"
        hc[$net.cpus]=$(awk '$1 == "cpus" { print $2 }' "$out.cpu-$net")
        fab=switch; [ "$(jnet "$net")" = tcp ] && fab=hub
        # other: the total less the rows above (each class once)
        known=$(printf '%s\n' "$snd.vcpu" "$rcv.vcpu" "$snd.main" "$rcv.main" "$fab" | sort -u \
            | awk 'NR == FNR { want[$1] = 1; next } $1 == "cpu" && ($2 in want) { s += $3 } END { print s + 0 }' - "$out.cpu-$net")
        tot=$(cpuof "$net" total 3)
        hc[$net.svcpu]=$(perm "$(cpuof "$net" "$snd.vcpu" 3)" "$mib")
        hc[$net.rvcpu]=$(perm "$(cpuof "$net" "$rcv.vcpu" 3)" "$mib")
        hc[$net.smain]=$(perm "$(cpuof "$net" "$snd.main" 3)" "$mib")
        hc[$net.rmain]=$(perm "$(cpuof "$net" "$rcv.main" 3)" "$mib")
        hc[$net.fab]=$(perm "$(cpuof "$net" "$fab" 3)" "$mib")
        hc[$net.other]=$(perm "$(awk -v a="$tot" -v b="$known" 'BEGIN { d = a - b; print (d > 0 ? d : 0) }')" "$mib")
        hc[$net.total]=$(perm "$tot" "$mib")
        hc[$net.wsvcpu]=$(perm "$(cpuof "$net" "$snd.vcpu" 4)" "$mib")
        hc[$net.wrvcpu]=$(perm "$(cpuof "$net" "$rcv.vcpu" 4)" "$mib")
        hc[$net.wsmain]=$(perm "$(cpuof "$net" "$snd.main" 4)" "$mib")
        hc[$net.wrmain]=$(perm "$(cpuof "$net" "$rcv.main" 4)" "$mib")
    done
    echo
    echo "host CPU during the 1 MiB stream alone (mpi-bench --stream $cpu: rank 0 on $snd sends, rank 1 on $rcv receives;"
    echo " scripts/host-cpu.py between the stream's marks; ms per MiB moved; ratio: tcp / board)"
    crow() { # LABEL KEY [RATIO]
        local net
        printf '%-36s' "$1"
        for net in $nets; do printf '%12s' "${hc[$net.$2]:--}"; done
        if [ -n "${3:-}" ] && both; then printf '%12s' "$(ratio "${hc[tcp.$2]:-}" "${hc[board.$2]:-}" | sed 's/^[0-9.]*$/&x/')"; fi
        echo
    }
    printf '%-36s' ""; for net in $nets; do printf '%12s' "$net"; done; both && printf '%12s' ratio; echo
    crow "stream (MB/s)" MBps
    crow "host CPUs in use" cpus
    echo "host CPU, ms per MiB:"
    if [ "$snd" = "$rcv" ]; then
        crow "  vCPU of $snd (both ranks)" svcpu
        crow "  main loop, $snd" smain
    else
        crow "  vCPU, sending rank ($snd)" svcpu
        crow "  vCPU, receiving rank ($rcv)" rvcpu
        crow "  main loop, $snd" smain
        crow "  main loop, $rcv" rmain
    fi
    crow "  switch (board) / hub (tcp)" fab
    crow "  other" other
    crow "  total" total ratio
    echo "waiting for a host CPU, ms per MiB:"
    if [ "$snd" = "$rcv" ]; then
        crow "  vCPU of $snd" wsvcpu
        crow "  main loop, $snd" wsmain
    else
        crow "  vCPU, sending rank ($snd)" wsvcpu
        crow "  vCPU, receiving rank ($rcv)" wrvcpu
        crow "  main loop, $snd" wsmain
        crow "  main loop, $rcv" wrmain
    fi
fi
