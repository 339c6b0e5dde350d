#!/usr/bin/env bash
# Guest images larger than guest memory holds (TAP): the initramfs unpacks
# into the guest's RAM (a tmpfs of at most half of it), so an image with a
# 300 MiB file does not fit in 256 MiB.  scripts/cluster.sh must say so
# (the image's unpacked size and the -m to give) instead of a consequence
# such as "cannot reach the job server", and without -m size the memory
# from the image (build-initramfs.sh writes IMAGE.size) and say so.
#
#   tests/cluster/image-size-test.sh        (meson: test 'cluster-image-size')
#
#   1. build-initramfs.sh with DN2_GUEST_EXTRA (a 300 MiB file) and
#      DN2_GUEST_OUT_DIR (a directory of the test's own, so that the shared
#      build/guest/initramfs.cpio.lz4 stays as it is): IMAGE.size says
#      more than 300 MiB unpacked
#   2. -m 256: a warning before the boot; the node fails (status 3) with
#      the image's size and "give -m N"; result.json has the same reason
#   3. no -m: "sized from the image", the guest memory the launcher chose
#      holds the image, the node reads the whole file (status 0)
#
# Environment: QEMU, DN2_SWITCH (as cluster-test.sh), DN2_CLUSTER_BOOT_TIMEOUT
# (default 300).  Run directories: build/cluster/test-imgsize-*; the image
# and its files under build/test-image-size (removed at the end).
set -uo pipefail
top=$(cd "$(dirname "$(realpath "$0")")/../.." && pwd)
. "$top/scripts/lib.sh"
. "$top/tests/tap/tap-lib.sh"
dn2_no_options "$@"
cluster=$top/scripts/cluster.sh
boot_timeout=${DN2_CLUSTER_BOOT_TIMEOUT:-300}
command -v python3 > /dev/null || tap_skip_all "$(tap_missing python3)"

tap_plan 6
work=$top/build/test-image-size
rm -rf "$work"
mkdir -p "$work/extra/big" "$work/image"
trap 'rm -rf "$work"' EXIT
# Zeros: a small image (compressed) that still takes 300 MiB of pages unpacked.
head -c $((300 << 20)) /dev/zero > "$work/extra/big/file" || bail "cannot write $work/extra/big/file"
export DN2_GUEST_EXTRA=$work/extra DN2_GUEST_OUT_DIR=$work/image

# 1. the image and its size
shared=$top/build/guest/initramfs.cpio.lz4
shared_id=$(stat -c '%i %Y' "$shared" 2>/dev/null)
img=$(bash "$top/scripts/build-initramfs.sh" 2> "$work/build.err")
rc=$?
kib=$(sed -n 's/^unpacked_kib=//p' "$img.size" 2>/dev/null)
if [ "$rc" = 0 ] && [ "$img" = "$work/image/initramfs.cpio.lz4" ] && [ "${kib:-0}" -gt $((300 << 10)) ] \
   && [ "$(stat -c '%i %Y' "$shared" 2>/dev/null)" = "$shared_id" ]; then
    ok "image with a 300 MiB file: $((kib >> 10)) MiB unpacked ($(du -h "$img" | cut -f1) compressed), in its own directory"
else
    not_ok "building the image: status $rc, $img, unpacked_kib=${kib:-none}"
    tail -5 "$work/build.err" | diag
    bail "no image"
fi

# 2. -m 256: the real cause and the fix
name=test-imgsize-small
out=$("$cluster" -n 1 -m 256 --name "$name" -b "$boot_timeout" -r 'true' 2>&1)
rc=$?
printf '%s\n' "$out" > "$work/small.log"
check "-m 256: a warning before the boot that the image may not fit" \
    grep -q 'warning: the guest image unpacks to [0-9]* MiB.*-m 256 may not hold it' <<< "$out"
if [ "$rc" = 3 ] && grep -q 'FAILED: the guest image unpacks to [0-9]* MiB, more than guest memory of 256 MiB holds.*give -m [0-9]* or more' <<< "$out" \
   && ! grep -q 'cannot reach the job server' <<< "$out"; then
    ok "-m 256: the node fails (status 3) naming the image's size and the -m to give"
else
    not_ok "-m 256: status $rc"
    grep -v '^\[ *[0-9]*\.[0-9]*\]' <<< "$out" | tail -15 | diag
fi
jq -e '.exit_status == 3 and .nodes[0].state == "failed"
       and (.nodes[0].why | contains("unpacks to") and contains("give -m"))
       and .guest.mem_mib == 256 and (.guest.mem_from_image | not) and .guest.image_unpacked_mib > 300' \
   "$top/build/cluster/$name/result.json" > "$work/r.err" 2>&1 ||
    { jq -c '{exit_status, node: .nodes[0] | {state, why}, guest}' "$top/build/cluster/$name/result.json" >> "$work/r.err" 2>&1; false; }
result $? "-m 256: result.json gives the node's failure reason and the image size"
cat "$work/r.err" | diag

# 3. no -m: sized from the image
name=test-imgsize-auto
out=$("$cluster" -n 1 --name "$name" -b "$boot_timeout" -r 'wc -c < /big/file; free -m | awk "/^Mem:/ { print \"mem \" \$2 }"' 2>&1)
rc=$?
printf '%s\n' "$out" > "$work/auto.log"
mem=$(sed -n 's/.*guest memory: \([0-9]*\) MiB, sized from the image.*/\1/p' <<< "$out")
check "no -m: the launcher says it sized guest memory from the image (${mem:-no} MiB)" \
    [ "${mem:-0}" -gt $((2 * (kib >> 10))) ]
if [ "$rc" = 0 ] && grep -qx "node0| $((300 << 20))" <<< "$out"; then
    ok "no -m: the guest booted the image and read the whole 300 MiB file ($(sed -n 's/^node0| mem /total /p' <<< "$out") MiB)"
else
    not_ok "no -m: status $rc"
    grep -v '^\[ *[0-9]*\.[0-9]*\]' <<< "$out" | tail -15 | diag
fi
tap_done
