#!/usr/bin/env bash
# The guest image is the same bytes from any checkout (TAP): no build path
# in the programs, the module or anything else the image carries, and two
# builds give one image.  A virtual-time run is deterministic for the same
# guest bytes only: a path in a binary changes its size, the image's, the
# guest's memory and the instructions it boots with, and with them the
# phase at which a benchmark starts (cluster-timing holds the thesis's rows
# exactly for one image).
#
#   tests/guest/image-test.sh        (meson: test 'guest-image')
#
# Builds the driver, exports dn2-up, dsh and dn2-bench into an export
# directory of its own and builds the plain image from it
# (build/guest/image-test/), unpacks it and looks for the checkout's path;
# then builds the image again (--force) and compares.  Boots nothing.
set -uo pipefail
top=$(cd "$(dirname "$(realpath "$0")")/../.." && pwd)
. "$top/scripts/lib.sh"
. "$top/tests/tap/tap-lib.sh"
dn2_no_options "$@"

dir=$top/build/guest/image-test
bench=$top/build/linux-guest/dn2-bench
[ -x "$bench" ] || { tap_plan 1; not_ok "$bench is not built (meson compile -C build)"; tap_done; }
rm -rf "$dir"
mkdir -p "$dir/unpacked"
env=(DN2_GUEST_EXPORT="$dir/export" DN2_GUEST_OUT_DIR="$dir")
if ! env "${env[@]}" bash "$top/scripts/export-guest.sh" "$bench" > /dev/null 2> "$dir/export.log" ||
    ! img=$(env "${env[@]}" bash "$top/scripts/build-initramfs.sh" 2> "$dir/build.log"); then
    tap_plan 1; not_ok "could not build the image: $(tail -1 "$dir/export.log" "$dir/build.log" | grep -v '^==' | tail -1)"; tap_done
fi
ok "the image built from an export of its own ($(du -h "$img" | cut -f1))"

(cd "$dir/unpacked" && lz4 -dc "$img" | cpio -id --quiet 2> /dev/null)
ko=$(find "$dir/unpacked" -name dimmnet2.ko | head -1)
if [ -n "$ko" ] && ! grep -q -a -F "$top" "$ko"; then
    ok "dimmnet2.ko carries no build path"
elif [ -n "$ko" ]; then
    not_ok "dimmnet2.ko carries the checkout's path ($top)"
else
    not_ok "dimmnet2.ko is not in the image"
fi
hits=$(grep -r -l -a -F "$top" "$dir/unpacked" | sed "s|^$dir/unpacked||")
if [ -z "$hits" ]; then
    ok "no file of the image carries the checkout's path ($top)"
else
    not_ok "files of the image that carry the checkout's path $top: $(echo $hits)"
fi

sum1=$(sha256sum < "$img")
if img2=$(env "${env[@]}" bash "$top/scripts/build-initramfs.sh" --force 2>> "$dir/build.log") &&
    [ "$(sha256sum < "$img2")" = "$sum1" ]; then
    ok "built again, the image is the same bytes (${sum1:0:16})"
else
    not_ok "built again, the image differs (${sum1:0:16} against $(sha256sum < "${img2:-/dev/null}" | cut -c1-16))"
fi
tap_done
