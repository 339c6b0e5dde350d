#!/usr/bin/env bash
# Puts the guest side into build/guest/export/ ($DN2_GUEST_EXPORT), which every guest image
# carries as /opt/dn2 (bin/ on PATH) and the cluster's file server serves:
#   dimmnet2.ko          the driver, built for the guest kernel
#   bin/dn2-up, bin/dsh  tools;  bin/<name>  each program given as argument
#
#   scripts/export-guest.sh [-h|--help] [PROGRAM...]
#
# Programs are the meson-built static executables (build/...).  Copies only
# what changed.  Exit status non-zero with a message when something is
# missing (run `meson compile -C build` first).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"

for a in "$@"; do
    case $a in
        -h|--help) dn2_usage; exit 0 ;;
        -*) usage_error "unknown argument: $a" ;;
    esac
done

out=${DN2_GUEST_EXPORT:-$DN2_TOP/build/guest/export}
mkdir -p "$out/bin"
bash "$DN2_TOP/linux-guest/driver/build.sh" >/dev/null \
    || die "the dimmnet2 module did not build (see build/guest/driver/build.log)"
for p in "$DN2_TOP/build/linux-guest/dn2-up" "$DN2_TOP/build/tools/dsh/dsh" "$@"; do
    [ -x "$p" ] || die "$p is not built (run: meson compile -C build)"
    cp -u "$p" "$out/bin/"
done
echo "$out"
