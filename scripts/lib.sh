# Shared shell helpers for the project's scripts (sourced, not run).
# shellcheck shell=bash
DN2_TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# Downloads and ccache live outside the work tree so that a fresh clone on the
# same machine (CI) reuses them; override with DN2_CACHE.
DN2_CACHE=${DN2_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/dimmnet2}
QEMU_VERSION=10.0.2
export DN2_TOP DN2_CACHE QEMU_VERSION

log() { printf '[dimmnet2] %s\n' "$*" >&2; }
die() { printf '[dimmnet2] error: %s\n' "$*" >&2; exit 1; }

# ------------------------------------------------------------ guest helpers
# Used by run-guest.sh and cluster.sh.  Each prints its answer on stdout, or
# "[dimmnet2] error: <why>" on stderr and returns 1 (the caller chooses the
# exit status).
_dn2_err() { printf '[dimmnet2] error: %s\n' "$*" >&2; return 1; }

# The qemu-system-x86_64 to run: $QEMU, else the one build-qemu.sh reports,
# else any under build/.
dn2_find_qemu() {
    if [ -n "${QEMU:-}" ]; then
        [ -x "$QEMU" ] || { _dn2_err "QEMU=$QEMU is not an executable"; return 1; }
        echo "$QEMU"; return 0
    fi
    local q
    q=$(bash "$DN2_TOP/scripts/build-qemu.sh" --print-env 2>/dev/null | sed -n 's/^QEMU_BIN=//p')
    if [ -n "$q" ] && [ -x "$q" ]; then echo "$q"; return 0; fi
    q=$(find "$DN2_TOP/build" -name qemu-system-x86_64 -type f -perm -u+x 2>/dev/null | head -1)
    [ -n "$q" ] || { _dn2_err "no qemu-system-x86_64 under build/: run scripts/build-qemu.sh (or set QEMU=/path/to/qemu-system-x86_64)"; return 1; }
    echo "$q"
}

# The guest kernel: $DN2_KERNEL, else the newest Debian cloud kernel that
# setup.sh extracted into the cache.
dn2_find_kernel() {
    if [ -n "${DN2_KERNEL:-}" ]; then
        [ -f "$DN2_KERNEL" ] || { _dn2_err "DN2_KERNEL=$DN2_KERNEL does not exist"; return 1; }
        echo "$DN2_KERNEL"; return 0
    fi
    local k
    k=$(ls "$DN2_CACHE"/pkgs/linux-image-6.1.0-*-cloud-amd64/boot/vmlinuz-* 2>/dev/null | sort -V | tail -1)
    [ -n "$k" ] || { _dn2_err "no guest kernel in $DN2_CACHE/pkgs/linux-image-*-cloud-amd64: run scripts/setup.sh"; return 1; }
    echo "$k"
}

# The Debian package with the guest kernel's headers (the module's build
# needs it; setup.sh installs it): linux-headers-VERSION.
dn2_kernel_headers_pkg() {
    local k
    k=$(dn2_find_kernel 2>/dev/null) || { echo "linux-headers-<guest kernel>"; return 0; }
    k=${k##*/}
    echo "linux-headers-${k#vmlinuz-}"
}

# The module tree (.../lib/modules/VERSION) that belongs to a kernel image
# named vmlinuz-VERSION: next to it (the Debian package layout), else
# anywhere in the cache.  $DN2_KERNEL_MODULES overrides.
dn2_find_kernel_modules() { # KERNEL
    if [ -n "${DN2_KERNEL_MODULES:-}" ]; then
        [ -d "$DN2_KERNEL_MODULES" ] || { _dn2_err "DN2_KERNEL_MODULES=$DN2_KERNEL_MODULES is not a directory"; return 1; }
        echo "$DN2_KERNEL_MODULES"; return 0
    fi
    local k=$1 ver d
    ver=$(basename "$k"); ver=${ver#vmlinuz-}
    for d in "$(dirname "$k")/../lib/modules/$ver" "$DN2_CACHE"/pkgs/*/lib/modules/"$ver"; do
        if [ -d "$d/kernel" ]; then (cd "$d" && pwd); return 0; fi
    done
    _dn2_err "no module tree lib/modules/$ver for $k"; return 1
}

# QEMU accelerator arguments, into the array DN2_ACCEL_ARGS: KVM (falling
# back to TCG) when the host can really run it.  Some sandboxed hosts expose
# a /dev/kvm that opens but whose CPUs lack VMX/SVM, and guests die there
# with "KVM internal error": so "auto" also wants vmx or svm in
# /proc/cpuinfo.  DN2_ACCEL=kvm|tcg overrides.  DN2_ACCEL_NAME is KVM or TCG.
# shellcheck disable=SC2034  # both are for the caller
dn2_accel() {
    DN2_ACCEL_ARGS=()
    DN2_ACCEL_NAME=TCG
    case ${DN2_ACCEL:-auto} in
        kvm) DN2_ACCEL_ARGS+=(-accel kvm); DN2_ACCEL_NAME=KVM ;;
        tcg) ;;
        auto)
            if [ -r /dev/kvm ] && [ -w /dev/kvm ] && grep -qwE 'vmx|svm' /proc/cpuinfo; then
                DN2_ACCEL_ARGS+=(-accel kvm); DN2_ACCEL_NAME=KVM
            fi ;;
        *) _dn2_err "DN2_ACCEL must be auto, kvm or tcg, not '$DN2_ACCEL'"; return 1 ;;
    esac
    DN2_ACCEL_ARGS+=(-accel tcg)
}

# ---------------------------------------------------------- option parsing
# Shared by every script's option loop, so that all of them behave alike:
# -h/--help prints the script's header comment and exits 0 before any work;
# a usage error (unknown option, missing or bad value) prints one line
# naming the problem on stderr and exits 2; "--opt=value" is "--opt value".
#
#   dn2_split_opts "$@"; set -- "${DN2_ARGS[@]}"
#   while [ $# -gt 0 ]; do
#       case $1 in
#           -o|--out) dn2_need_value "$@"; out=$2; shift 2 ;;
#           -h|--help) dn2_usage; exit 0 ;;
#           *) usage_error "unknown argument: $1" ;;
#       esac
#   done

# usage_error MESSAGE: "<script>: MESSAGE (see --help)" on stderr, exit 2.
usage_error() {
    printf '%s: %s (see --help)\n' "${0##*/}" "$*" >&2
    exit 2
}

# dn2_usage: the running script's header comment (from its second line to
# the first line that is not a comment), without the "# ".
dn2_usage() {
    awk 'NR == 1 { next } !/^#/ { exit } { sub(/^# ?/, ""); print }' "$0"
}

# dn2_split_opts ARG...: the arguments into the array DN2_ARGS, each
# "--name=value" split into "--name" "value" (at the first "="); nothing
# after "--" is touched.  (So a value that itself looks like "--x=y" is
# given as "--opt=--x=y".)
dn2_split_opts() {
    DN2_ARGS=()
    while [ $# -gt 0 ]; do
        case $1 in
            --) DN2_ARGS+=("$@"); return 0 ;;
            --*=*) DN2_ARGS+=("${1%%=*}" "${1#*=}") ;;
            *) DN2_ARGS+=("$1") ;;
        esac
        shift
    done
}

# dn2_need_value OPT [VALUE...]: a usage error unless OPT has a non-empty
# value after it (call with the loop's "$@").  dn2_need_arg: the same, but
# an empty value is allowed.
dn2_need_value() {
    [ $# -ge 2 ] && [ -n "$2" ] || usage_error "$1 needs a value"
}
dn2_need_arg() {
    [ $# -ge 2 ] || usage_error "$1 needs a value"
}

# dn2_want_uint OPT VALUE: a usage error unless VALUE is a whole number.
dn2_want_uint() {
    case $2 in
        ''|*[!0-9]*) usage_error "$1 wants a whole number, not '$2'" ;;
    esac
}

# dn2_no_options ARG...: for scripts that take no arguments: -h/--help
# prints the usage and exits 0, anything else is a usage error.
dn2_no_options() {
    case ${1-} in
        '') return 0 ;;
        -h|--help) dn2_usage; exit 0 ;;
        *) usage_error "unknown argument: $1" ;;
    esac
}

# ------------------------------------------------------- built programs
# dn2_find_ethhub: the Ethernet hub for cluster.sh --ethernet
# (scripts/ethhub.c, built by meson as build/tools/dn2-ethhub); $DN2_ETHHUB
# overrides.  Prints the path, or an error and returns 1.
dn2_find_ethhub() {
    local h=${DN2_ETHHUB:-$DN2_TOP/build/tools/dn2-ethhub}
    [ -x "$h" ] || { _dn2_err "no dn2-ethhub at $h: run 'meson compile -C build' (or set DN2_ETHHUB)"; return 1; }
    echo "$h"
}

# ------------------------------------------------------------ virtual time
# Lock-step virtual time (docs/cluster.md, "Virtual time"): every guest runs
# under TCG with -icount, its clocks and RTC on QEMU_CLOCK_VIRTUAL, so what
# it sees depends on the instructions it ran, never on the host's clock.
DN2_VT_RTC_BASE=2026-01-01T00:00:00
export DN2_VT_RTC_BASE

# dn2_vt_accel SHIFT: into DN2_ACCEL_ARGS the accelerator and clock
# arguments of a guest in virtual time: TCG, -icount shift=SHIFT (one
# instruction = 2^SHIFT ns) or, when DN2_VT_INSN_PS is set (cluster.sh and
# run-guest.sh --vt-insn-ps), -icount insn-ps=DN2_VT_INSN_PS (one
# instruction = that many picoseconds, 1..1024000; the project's QEMU patch
# scripts/qemu/patches/0001-icount-insn-ps.patch; SHIFT is then unused), no
# sleeping and no alignment to the host (sleep=off,align=off), the RTC on
# the virtual clock from a fixed date, and -seed (QEMU's guest random
# source, e.g. TCG's RDRAND with -cpu max, from a fixed seed instead of host
# entropy).  One vCPU is the caller's.
# shellcheck disable=SC2034  # both are for the caller
dn2_vt_accel() {
    local rate="shift=$1"
    case ${DN2_ACCEL:-auto} in
        kvm) _dn2_err "virtual time counts instructions under TCG (-icount): not with DN2_ACCEL=kvm"; return 1 ;;
        auto|tcg) ;;
        *) _dn2_err "DN2_ACCEL must be auto, kvm or tcg, not '$DN2_ACCEL'"; return 1 ;;
    esac
    if [ -n "${DN2_VT_INSN_PS:-}" ]; then
        if ! [[ $DN2_VT_INSN_PS =~ ^[1-9][0-9]{0,6}$ ]] || [ "$DN2_VT_INSN_PS" -gt 1024000 ]; then
            _dn2_err "DN2_VT_INSN_PS (--vt-insn-ps): picoseconds per instruction, 1..1024000, not '$DN2_VT_INSN_PS'"
            return 1
        fi
        rate="insn-ps=$DN2_VT_INSN_PS"
    fi
    DN2_ACCEL_ARGS=(-accel tcg -icount "$rate,sleep=off,align=off"
                    -rtc "clock=vm,base=$DN2_VT_RTC_BASE" -seed 1)
    DN2_ACCEL_NAME="TCG, -icount $rate"
}

# dn2_abi_const NAME: the value of "#define NAME V" in the board ABI header
# (include/dimmnet2/dn2_abi.h, the one place that writes a layout).
dn2_abi_const() {
    local v
    v=$(sed -n -E "s/^#define[[:space:]]+$1[[:space:]]+([0-9A-Fa-fx]+).*/\1/p" \
            "$DN2_TOP/include/dimmnet2/dn2_abi.h" | head -1)
    [ -n "$v" ] || { _dn2_err "no #define $1 in include/dimmnet2/dn2_abi.h"; return 1; }
    echo $((v))
}

# dn2_clid_to_lid CLID: the LID of a compact LID, as dn2_clid_to_lid() in
# dn2_abi.h (CLID [11:8] -> LID [15:12], [7:0] stay).  The switch hands out
# compact LIDs 1, 2, ... in join order (fabric/dn2fab-sw.c pick_lid), so
# node i of a cluster whose boards join in order gets dn2_clid_to_lid(i + 1).
dn2_clid_to_lid() {
    local tl th ll lh ct cl
    tl=$(dn2_abi_const DN2_LID_TOP_LO) && th=$(dn2_abi_const DN2_LID_TOP_HI) &&
        ll=$(dn2_abi_const DN2_LID_LOW_LO) && lh=$(dn2_abi_const DN2_LID_LOW_HI) &&
        ct=$(dn2_abi_const DN2_CLID_TOP_LO) || return 1
    cl=$ll
    echo $(( ((($1 >> ct) & ((1 << (th - tl + 1)) - 1)) << tl) |
             ((($1 >> cl) & ((1 << (lh - ll + 1)) - 1)) << ll) ))
}

# dn2_vt_capable QEMU [SWITCH]: true when this QEMU's dimmnet2 board has
# the virtual-time properties (vtime, vt-latency-ns, lid, pcap) and the
# switch (when given) the --virtual-time option; otherwise prints what is
# missing and returns 1.
dn2_vt_capable() {
    local props miss=() p
    props=$("$1" -device dimmnet2,help 2>&1)
    for p in vtime vt-latency-ns lid pcap; do
        grep -qE "^[[:space:]]+$p=" <<< "$props" || miss+=("$p=")
    done
    [ ${#miss[@]} -eq 0 ] || { _dn2_err "the dimmnet2 board of $1 has no ${miss[*]} propert$([ ${#miss[@]} = 1 ] && echo y || echo ies): rebuild QEMU with a device that has virtual time (scripts/build-qemu.sh)"; return 1; }
    [ -z "${2:-}" ] || "$2" --help 2>&1 | grep -q -- '--virtual-time' \
        || { _dn2_err "$2 has no --virtual-time option: rebuild it (meson compile -C build)"; return 1; }
}

# ------------------------------------------------------- guest image size
# A guest's initramfs unpacks into its RAM (the kernel's rootfs, a tmpfs of
# at most half the RAM), and the compressed image sits in RAM while it
# unpacks.  docs/cluster.md, "Guest memory and image size".
#
# dn2_image_size IMAGE: "UNPACKED_KIB COMPRESSED_KIB": what the image's
# files take once unpacked (each file rounded up to 4 KiB pages, as tmpfs
# holds it) and the image itself.  Read from IMAGE.size (build-initramfs.sh
# writes it), else counted from the archive (cpio -t) and kept there.
dn2_image_size() {
    local img=$1 c u=
    [ -f "$img" ] || { _dn2_err "no guest image at $img"; return 1; }
    c=$(( ($(stat -L -c %s "$img") + 1023) / 1024 ))
    if [ -f "$img.size" ] && ! [ "$img" -nt "$img.size" ]; then
        u=$(sed -n 's/^unpacked_kib=\([0-9][0-9]*\)$/\1/p' "$img.size")
    fi
    if [ -z "$u" ]; then
        u=$(lz4 -dc "$img" 2>/dev/null | cpio -itv --quiet 2>/dev/null |
            awk '/^-/ { k += int(($5 + 4095) / 4096) * 4 } END { print k + 0 }')
        [ -n "$u" ] && [ "$u" -gt 0 ] || { _dn2_err "cannot read the guest image $img (lz4 -dc | cpio -t)"; return 1; }
        echo "unpacked_kib=$u" > "$img.size.$$" 2>/dev/null && mv "$img.size.$$" "$img.size" 2>/dev/null
    fi
    echo "$u $c"
}

# dn2_guest_mem UNPACKED_KIB COMPRESSED_KIB: the guest memory (MiB) that
# holds such an image: twice the unpacked size (rootfs gets at most half
# the RAM) plus the compressed image plus 128 MiB for the kernel and the
# programs, rounded up to 128 MiB; at least 256.
dn2_guest_mem() {
    local m=$(( (2 * $1 + $2) / 1024 + 128 ))
    m=$(( (m + 127) / 128 * 128 ))
    [ "$m" -ge 256 ] || m=256
    echo "$m"
}
