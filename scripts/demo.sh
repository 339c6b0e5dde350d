#!/usr/bin/env bash
# The main demo: from a fresh Debian 12 machine to two Linux guests whose
# emulated DIMMnet-2 boards talk over the UDP fabric.
#
#   scripts/demo.sh [-v] [--board-only] [--boards N]
#
# 1. scripts/setup.sh           packages, QEMU source, firmware, guest kernel
# 2. meson compile              QEMU 10.0.2 with -device dimmnet2, dn2-switch,
#                               the guest driver, library, tools, benchmarks
# 3. one guest, one board       dn2-probe finds the board through ACPI, maps
#                               its window, checks registers and runs a VS/VL
#                               round trip through the on-board SO-DIMM
# 4. the thesis's rows          2 nodes in lock-step virtual time with the
#                               timing model (bench-cluster.sh --virtual-time
#                               --timing thesis --demo): BOTF and RVS rows
#                               next to the thesis's, the same in every run
# 5. host time against UDP      the same 2 nodes free-running: BOTF ping-pong
#                               and RVS bandwidth between the boards next to
#                               UDP between the same two guests, measured in
#                               the same run (emulator figures)
# 6. MPI over the boards        Debian's Open MPI (the MPI guest image) runs
#                               tests/mpi/mpi-bench on 2 nodes over the
#                               libfabric provider "dimmnet2" (native RDM):
#                               ping-pong, 1 MiB stream and allreduce, data
#                               checked; the boards' counters (QMP) show the
#                               bytes went through them (scripts/mpirun.sh)
# Each step is incremental; build output goes to build/demo/*.log (shown only
# on failure; step 2 shows the build's [N/M] progress: one redrawn line on a
# terminal, a line every 30 s otherwise).  -v also prints the raw TAP of step 3; --board-only stops
# after step 3.  Exit status: 0 when every step succeeded, 2 a usage error.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"

verbose=
boards=1
board_only=
dn2_split_opts "$@"
set -- "${DN2_ARGS[@]}"
while [ $# -gt 0 ]; do
    case $1 in
        -v|--verbose) verbose=1; shift ;;
        --boards) dn2_need_value "$@"; boards=$2; shift 2 ;;
        -n) usage_error "-n: give the number of boards as --boards N (-n means nodes in cluster.sh, ranks in mpirun.sh)" ;;
        --board-only) board_only=1; shift ;;
        -h|--help) dn2_usage; exit 0 ;;
        *) usage_error "unknown argument: $1" ;;
    esac
done
dn2_want_uint --boards "$boards"
[ "$boards" -ge 1 ] || usage_error "--boards wants at least 1"

logs=$DN2_TOP/build/demo
mkdir -p "$logs"

if [ -t 1 ]; then B=$'\e[1m'; G=$'\e[32m'; R=$'\e[31m'; D=$'\e[2m'; N=$'\e[0m'; else B='' G='' R='' D='' N=''; fi

# While PID runs, show the newest "[N/M]" progress line of the build log LOG
# (ninja's: the outer meson build's, then QEMU's own): on a terminal as one
# line redrawn every second after the step's title (PREFIX), otherwise as a
# line every 30 s (only when it moved), so a ten-minute build is not silent.
# Prints "1" on stdout's fd 3 when it printed lines of its own (not a tty).
progress() { # progress PID LOG T0 PREFIX
    local pid=$1 log=$2 t0=$3 prefix=$4 cur last= next=$((SECONDS + 30)) n m pct
    while kill -0 "$pid" 2>/dev/null; do
        sleep 1
        cur=$(tail -c 8192 "$log" 2>/dev/null | tr '\r' '\n' |
              grep -aoE '^\[[0-9]+/[0-9]+\]' | tail -n 1)
        [ -n "$cur" ] || continue
        n=${cur#[}; n=${n%%/*}; m=${cur#*/}; m=${m%]}
        pct=$((m > 0 ? n * 100 / m : 0))
        if [ -t 1 ]; then
            printf '\r%s%s %3s%% %s(%s s)%s\e[K' "$prefix" "$cur" "$pct" "$D" \
                "$((SECONDS - t0))" "$N"
        elif [ "$cur" != "$last" ] && [ $SECONDS -ge $next ]; then
            [ -n "$last" ] || echo
            printf '      %s %3s%% (%s s)\n' "$cur" "$pct" "$((SECONDS - t0))"
            last=$cur
            next=$((SECONDS + 30))
        fi
    done
    [ -n "$last" ] && echo 1 >&3
    return 0
}

step() { # step N TITLE LOGNAME COMMAND...  (DN2_PROGRESS=1: show the log's [N/M])
    local n=$1 title=$2 name=$3 t0=$SECONDS rc prefix pid lines
    shift 3
    prefix=$(printf '%s[%s/%s]%s %-34s ' "$B" "$n" "$nsteps" "$N" "$title")
    printf '%s' "$prefix"
    if [ -n "${DN2_PROGRESS:-}" ]; then
        "$@" > "$logs/$name.log" 2>&1 &
        pid=$!
        { lines=$(progress "$pid" "$logs/$name.log" "$t0" "$prefix" 3>&1 >&4); } 4>&1
        wait "$pid"
        rc=$?
        if [ -t 1 ]; then
            printf '\r%s\e[K' "$prefix"               # the title again, progress erased
        elif [ -n "$lines" ]; then
            printf '%s' "$prefix"
        fi
    else
        "$@" > "$logs/$name.log" 2>&1
        rc=$?
    fi
    if [ $rc -ne 0 ]; then
        printf '%sfailed%s (%s s)\n' "$R" "$N" "$((SECONDS - t0))"
        echo "---- last lines of $logs/$name.log ----"
        tail -25 "$logs/$name.log"
        exit 1
    fi
    printf '%sdone%s %s(%s s)%s\n' "$G" "$N" "$D" "$((SECONDS - t0))" "$N"
}

nsteps=6
[ -n "$board_only" ] && nsteps=3
echo "${B}DIMMnet-2 for QEMU: demo${N}"
if [ "$(id -u)" = 0 ]; then
    step 1 "setup (packages, kernel, firmware)" setup bash "$here/setup.sh"
else
    step 1 "setup (already done? not root)" setup bash "$here/setup.sh"
fi
meson_build() {
    cd "$DN2_TOP" || return 1
    if [ -f build/meson-private/coredata.dat ]; then
        meson setup --reconfigure build || return 1
    else
        meson setup build || return 1
    fi
    meson compile -C build
}
DN2_PROGRESS=1 step 2 "build QEMU $QEMU_VERSION, fabric, guest" build meson_build
QEMU=$(bash "$here/build-qemu.sh" --print-env 2>/dev/null | sed -n 's/^QEMU_BIN=//p')
if [ -x "$QEMU" ]; then export QEMU; else unset QEMU; fi

accel=TCG
if [ -r /dev/kvm ] && [ -w /dev/kvm ] && grep -qwE 'vmx|svm' /proc/cpuinfo; then accel=KVM; fi
case ${DN2_ACCEL:-auto} in kvm|tcg) accel=${DN2_ACCEL^^} ;; esac
printf '%s[3/%s]%s %-34s ' "$B" "$nsteps" "$N" "one guest, $boards board$([ "$boards" -gt 1 ] && echo s) ($accel)"
t0=$SECONDS
run="r=0; for b in $(seq -s ' ' 0 $((boards - 1))); do dn2-probe \$b || r=1; done; exit \$r"
tap=$(bash "$here/run-guest.sh" --boards "$boards" -r "$run" -a "loglevel=0" -l "$logs/guest-console.log" 2> "$logs/guest.log")
rc=$?
elapsed=$((SECONDS - t0))
if [ $rc -ge 2 ]; then
    printf '%sfailed%s (%s s)\n' "$R" "$N" "$elapsed"
    cat "$logs/guest.log"
    exit 1
fi
printf '%sdone%s %s(%s s, boot and probe)%s\n' "$G" "$N" "$D" "$elapsed" "$N"

if [ -n "$verbose" ]; then
    echo; echo "${B}Raw TAP from the guest${N}"
    printf '%s\n' "$tap"
fi

# The report: the probe's diagnostics ("# ...") with each check's verdict.
echo
echo "${B}Report from inside the guest${N} ${D}(tests/guest/dn2-probe.c)${N}"
pass=0 fail=0
while IFS= read -r line; do
    case $line in
        '# dn2-probe:'*) echo; echo "  ${B}${line#\# dn2-probe: }${N}" ;;
        '# board '*': '*' checks failed') ;;
        '# '*) echo "      ${D}${line#\# }${N}" ;;
        'ok '*)
            pass=$((pass + 1))
            echo "  ${G}ok${N}    $(sed -E 's/^ok [0-9]+ - board [0-9]+: //' <<< "$line")" ;;
        'not ok '*)
            fail=$((fail + 1))
            echo "  ${R}FAIL${N}  $(sed -E 's/^not ok [0-9]+ - board [0-9]+: //' <<< "$line")" ;;
    esac
done <<< "$tap"
echo
if [ "$fail" -ne 0 ] || [ "$pass" -eq 0 ]; then
    echo "${R}${B}$fail of $((pass + fail)) checks failed${N} (console log: $logs/guest-console.log)"
    exit 1
fi
echo "${G}${B}All $pass checks passed${N} (console log: $logs/guest-console.log)"
[ -n "$board_only" ] && exit 0

# Step 4: the thesis's rows from the timing model, in virtual time: the
# same figures in every run on any host (docs/timing.md).
echo
printf '%s[4/%s]%s %s\n' "$B" "$nsteps" "$N" "the thesis's rows: 2 nodes in virtual time with the timing model (timing=thesis)"
echo "      ${D}(two TCG guests in lock-step; BOTF and RVS as the thesis measured them; log: $logs/cluster-vt.log)${N}"
if ! bash "$here/bench-cluster.sh" --demo --virtual-time --timing thesis -q \
        -o "$logs/cluster-vt-tables.txt" > "$logs/cluster-vt.log" 2>&1; then
    echo "${R}failed${N}; last lines of $logs/cluster-vt.log:"
    tail -30 "$logs/cluster-vt.log"
    exit 1
fi
echo
# row NAME measured V thesis T UNIT error E%[ calibrates PARAM]
awk '$1 == "row" {
        mark = $10 == "calibrates" ? "  (calibrates " $11 ": not counted)" : ""
        printf "      %-20s %10s %-4s thesis %10s  %s%s\n", $2, $4, $7, $6, $9, mark
    }
    /^rows: / { print "      " $0 }
    $1 == "shape" { print "      " $0 }' "$logs/cluster-vt-tables.txt"

# Step 5: the same two nodes in host time: the boards against UDP between
# the same guests, measured in the same run (emulator figures).
echo
printf '%s[5/%s]%s %s\n' "$B" "$nsteps" "$N" "host time: BOTF ping-pong and RVS bandwidth against UDP in the same run"
echo "      ${D}(two TCG guests on one dn2-switch; about a minute; log: $logs/cluster.log)${N}"
if ! bash "$here/bench-cluster.sh" --demo -q -o "$logs/cluster-tables.txt" > "$logs/cluster.log" 2>&1; then
    echo "${R}failed${N}; last lines of $logs/cluster.log:"
    tail -30 "$logs/cluster.log"
    exit 1
fi
echo
# The tables and their UDP columns only: the thesis is compared in step 4,
# in virtual time, never with host-time figures (its lines, the header's
# column and the verdicts' comparisons with it are left out).
sed -e '/^== Summary ==/,/^$/d' -e '/^(the thesis.s rows and shapes are compared only/d' \
    -e '/^ *thesis /d' -e 's/ | thesis ([^)]*) | / | /' -e '/^verdict:/s/ (thesis [^)]*)//' \
    "$logs/cluster-tables.txt"

# Step 6: an MPI program across the nodes, over the boards.
echo
printf '%s[6/%s]%s %s\n' "$B" "$nsteps" "$N" "MPI over the boards: Debian's Open MPI, 2 nodes, mpi-bench"
echo "      ${D}(the MPI image, PML cm + MTL ofi + the native dimmnet2 provider; about a minute; log: $logs/mpi.log)${N}"
if ! bash "$here/mpirun.sh" -q -np 2 --net board --board-stats --name demo-mpi -t 600 \
        -- "$DN2_TOP/build/tests/mpi/mpi-bench" 50 > "$logs/mpi.out" 2> "$logs/mpi.log"; then
    echo "${R}failed${N}; last lines of $logs/mpi.log:"
    tail -30 "$logs/mpi.out" "$logs/mpi.log"
    exit 1
fi
sed -n 's/^\[0\] figure /      /p; s/^\[0\] data /      data /p' "$logs/mpi.out" | grep -v ' ranks '
sed -n 's/^\[mpirun\] boards: /      boards (QMP counters): /p' "$logs/mpi.log"
echo "      ${D}(your own: mpicc -o prog prog.c && scripts/mpirun.sh -np 2 -- ./prog; docs/mpi.md)${N}"
echo
echo "${G}${B}Demo complete.${N} More: docs/user-guide.md; a cluster of your own: scripts/cluster.sh -n 4 -i"
exit 0
