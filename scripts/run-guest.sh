#!/usr/bin/env bash
# Boots one Linux guest with DIMMnet-2 boards and runs a command in it.
#
#   scripts/run-guest.sh [options] [-- extra QEMU arguments]
#
#       --boards N     number of -device dimmnet2 (default 1; -n is not
#                      taken: it means nodes in cluster.sh and mpirun.sh)
#   -r, --run CMD      command run by the guest's /init (busybox sh syntax);
#                      default: dn2-probe on every board, failing if any fails.
#                      "sh" gives an interactive shell on the console (use
#                      with --interactive).
#   -t, --timeout S    seconds before the guest is killed (default 120)
#   -l, --log FILE     serial console log (default build/guest/logs/run-guest.log)
#   -a, --append ARGS  extra kernel command-line arguments
#   -i, --interactive  serial console on this terminal, no capture
#   -q, --quiet        do not print the guest's output (only the exit status)
#       --virtual-time the guest in virtual time (docs/cluster.md, "Virtual
#                      time"): TCG with -icount shift=N,sleep=off,align=off,
#                      -rtc clock=vm from a fixed date, -seed, one vCPU;
#                      the same command prints the same output in every run
#                      on any host (not with -i: the terminal's input
#                      arrives at host-dependent times).  The boards are on
#                      no switch here; a board given switch= in the extra
#                      arguments wants vtime=on (cluster.sh does that)
#       --vt-shift N   -icount shift=N: one instruction is 2^N ns (default 0)
#       --vt-insn-ps P -icount insn-ps=P instead: one instruction is P ps
#                      (1..1024000; QEMU with the project's patch, built by
#                      scripts/build-qemu.sh; not with --vt-shift)
#
# The guest is q35, 512 MiB, no default devices, serial console, TCG (KVM
# first when /dev/kvm is usable).  Its /init (scripts/build-initramfs.sh,
# rebuilt here when needed) prints DN2-GUEST-BEGIN, runs the command, prints
# DN2-GUEST-END rc=N and powers off.  This script prints what the command
# printed (e.g. the probe's TAP) on stdout and exits with:
#   0  the command succeeded          1  the command failed (rc != 0)
#   2  a usage error (before anything 3  the guest died without finishing
#      starts, one line on stderr)
#   4  setup error (missing QEMU,     124  timeout (as timeout(1))
#      kernel, firmware...)
# "--opt=value" is "--opt value".
# On any failure it prints the tail of the console log on stderr.
#
# Environment: QEMU (binary; default: the one in build/), DN2_ACCEL
# (auto|kvm|tcg, default auto: KVM when /dev/kvm is usable), DN2_KERNEL
# (kernel image; default: the Debian cloud kernel fetched by setup.sh),
# DN2_CACHE (see scripts/lib.sh), DN2_DEVICE_GLOBALS (board properties for
# every board, e.g. "strict=on" or "strict=on,fifo-depth=8": each becomes
# -global dimmnet2.PROP=V, so the guest suites can run against strict
# boards: DN2_DEVICE_GLOBALS=strict=on meson test -C build --suite guest).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"

boards=1
run=
timeout_s=120
logfile=$DN2_TOP/build/guest/logs/run-guest.log
append_extra=
interactive=
quiet=
vt=
vt_shift=0
vt_shift_set=
vt_insn_ps=
extra=()
dn2_split_opts "$@"
set -- "${DN2_ARGS[@]}"
while [ $# -gt 0 ]; do
    case $1 in
        --boards) dn2_need_value "$@"; boards=$2; shift 2 ;;
        -n) usage_error "-n: give the number of boards as --boards N (-n means nodes in cluster.sh and mpirun.sh)" ;;
        -r|--run) dn2_need_arg "$@"; run=$2; shift 2 ;;
        -t|--timeout) dn2_need_value "$@"; timeout_s=$2; shift 2 ;;
        -l|--log) dn2_need_value "$@"; logfile=$2; shift 2 ;;
        -a|--append) dn2_need_arg "$@"; append_extra=$2; shift 2 ;;
        -i|--interactive) interactive=1; shift ;;
        -q|--quiet) quiet=1; shift ;;
        --virtual-time) vt=1; shift ;;
        --vt-shift) dn2_need_value "$@"; vt_shift=$2; vt_shift_set=1; shift 2 ;;
        --vt-insn-ps) dn2_need_value "$@"; vt_insn_ps=$2; shift 2 ;;
        -h|--help) dn2_usage; exit 0 ;;
        --) shift; extra=("$@"); break ;;
        *) usage_error "unknown argument: $1" ;;
    esac
done
setup_die() { printf '[dimmnet2] error: %s\n' "$*" >&2; exit 4; }
dn2_want_uint --boards "$boards"
dn2_want_uint --timeout "$timeout_s"
dn2_want_uint --vt-shift "$vt_shift"
[ "$vt_shift" -le 10 ] || usage_error "--vt-shift: 0..10 (QEMU's -icount shift)"
if [ -n "$vt_insn_ps" ]; then
    [ -z "$vt_shift_set" ] || usage_error "--vt-shift and --vt-insn-ps exclude each other"
    dn2_want_uint --vt-insn-ps "$vt_insn_ps"
    [ "$vt_insn_ps" -ge 1 ] && [ "$vt_insn_ps" -le 1024000 ] \
        || usage_error "--vt-insn-ps: 1..1024000 picoseconds per instruction"
    export DN2_VT_INSN_PS=$vt_insn_ps
fi
[ -z "$vt" ] || [ -z "$interactive" ] || usage_error "--virtual-time: not with -i (the terminal's input would reach the guest at host-dependent times)"
case $run in *'"'*) usage_error "--run: the command cannot contain double quotes (it travels on the kernel command line)" ;; esac

if [ -z "$run" ]; then
    if [ "$boards" -eq 0 ]; then
        run="dn2-probe 0"
    else
        run="r=0; for b in $(seq -s ' ' 0 $((boards - 1))); do dn2-probe \$b || r=1; done; exit \$r"
    fi
fi

# ----------------------------------------------------------------- inputs
# (scripts/lib.sh: dn2_find_qemu, dn2_find_kernel, dn2_accel)
qemu_bin=$(dn2_find_qemu) || exit 4
kernel=$(dn2_find_kernel) || exit 4
firmware=$DN2_CACHE/firmware
[ -f "$firmware/bios-256k.bin" ] || setup_die "firmware missing in $firmware: run scripts/setup.sh"
initrd=$(bash "$here/build-initramfs.sh") || exit 4

# Accelerator: KVM when the host can really run it, else TCG (lib.sh).
if [ -n "$vt" ]; then
    dn2_vt_accel "$vt_shift" || exit 4
    # One vCPU; the boards' deferred work and their loopback cable on the
    # virtual clock (a board given switch= needs a dn2-switch --virtual-time).
    DN2_ACCEL_ARGS+=(-smp 1 -global dimmnet2.vtime=on)
else
    dn2_accel || exit 4
fi
accel=("${DN2_ACCEL_ARGS[@]}")

devices=()
for ((i = 0; i < boards; i++)); do devices+=(-device dimmnet2); done
IFS=, read -r -a dn2_globals <<< "${DN2_DEVICE_GLOBALS:-}"
for g in "${dn2_globals[@]}"; do
    [ -n "$g" ] && devices+=(-global "dimmnet2.$g")
done

# (the kernel arguments of scripts/dn2scripts/cluster/plan.py's GUEST_ARGS)
append="console=ttyS0 panic=-1 quiet cryptomgr.notests dn2.run=\"$run\""
[ -n "$append_extra" ] && append+=" $append_extra"

cmd=("$qemu_bin" "${accel[@]}" -M q35 -m 512 -nodefaults -display none
     -serial stdio -no-reboot -L "$firmware"
     -kernel "$kernel" -initrd "$initrd" -append "$append"
     "${devices[@]}" "${extra[@]}")

if [ -n "$interactive" ]; then
    exec "${cmd[@]}"
fi

# -------------------------------------------------------------------- run
mkdir -p "$(dirname "$logfile")"
errfile=$logfile.stderr
{
    printf '# %s\n' "$(date -u +%FT%TZ)"
    printf '# %q ' "${cmd[@]}"; echo
} > "$logfile.cmd"
start=$SECONDS
rc=0
# The console goes to the log only; stdin is /dev/null so QEMU never puts a
# terminal in raw mode.  timeout(1) sends TERM, then KILL 5 s later.
timeout -k 5 "$timeout_s" "${cmd[@]}" < /dev/null > "$logfile" 2> "$errfile" || rc=$?
elapsed=$((SECONDS - start))

# Guest output: between the sentinels, without the serial line's CRs.
output=$(tr -d '\r' < "$logfile" | sed -n '/^DN2-GUEST-BEGIN$/,/^DN2-GUEST-END rc=/p' | sed '1d;$d')
end_line=$(tr -d '\r' < "$logfile" | grep -a -m1 '^DN2-GUEST-END rc=' || true)
guest_rc=${end_line#DN2-GUEST-END rc=}

if [ -z "$quiet" ] && [ -n "$output" ]; then
    printf '%s\n' "$output"
fi

fail() { # fail STATUS MESSAGE
    {
        echo "[dimmnet2] $2"
        echo "[dimmnet2] console log: $logfile (QEMU stderr: $errfile)"
        echo "---- last 30 console lines ----"
        tr -d '\r' < "$logfile" | tail -30
        if [ -s "$errfile" ]; then
            echo "---- QEMU stderr ----"
            tail -15 "$errfile"
        fi
        echo "-------------------------------"
    } >&2
    exit "$1"
}

if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
    fail 124 "guest timed out after ${timeout_s} s ($([ -n "$end_line" ] && echo "it finished but did not power off" || echo "command did not finish"))"
fi
if [ -z "$end_line" ]; then
    fail 3 "guest ended after ${elapsed} s without finishing the command (QEMU exit status $rc; kernel panic or QEMU error?)"
fi
if [ "$guest_rc" != 0 ]; then
    fail 1 "guest command failed: rc=$guest_rc (after ${elapsed} s)"
fi
if [ "$rc" -ne 0 ]; then
    fail 3 "QEMU exited with status $rc"
fi
log "guest done in ${elapsed} s (log: $logfile)"
exit 0
