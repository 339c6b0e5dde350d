#!/usr/bin/env bash
# Builds dimmnet2.ko for the guest kernel, out of the source tree:
#
#   linux-guest/driver/build.sh [--force]
#   linux-guest/driver/build.sh --help
#
# The module is built in build/guest/driver/ (a copy of this directory) with
# the headers of the guest kernel (/usr/src/linux-headers-<version of the
# kernel that scripts/run-guest.sh boots>, installed by scripts/setup.sh;
# DN2_KDIR overrides), and copied to build/guest/export/dimmnet2.ko, which
# the guest initramfs carries as /opt/dn2/dimmnet2.ko.  Rebuilt only when
# the sources, the ABI/uapi headers, the kernel headers or the compiler
# change.  Prints the .ko's path on stdout; the build log is
# build/guest/driver/build.log.  Exits 1 when the build fails, 2 when it has
# warnings (the .ko is still produced but not marked up to date; its path is
# printed) or on a usage error (nothing printed on stdout, one line on
# stderr), 4 when the kernel headers are missing.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../../scripts/lib.sh"

force=
while [ $# -gt 0 ]; do
    case $1 in
        --force) force=1; shift ;;
        -h|--help) dn2_usage; exit 0 ;;
        *) usage_error "unknown argument: $1" ;;
    esac
done

out=$DN2_TOP/build/guest/driver
export_dir=${DN2_GUEST_EXPORT:-$DN2_TOP/build/guest/export}
buildlog=$out/build.log
mkdir -p "$out" "$export_dir"

kernel=$(dn2_find_kernel) || exit 4
kver=$(basename "$kernel"); kver=${kver#vmlinuz-}
kdir=${DN2_KDIR:-/usr/src/linux-headers-$kver}
if [ ! -f "$kdir/Makefile" ] || [ ! -f "$kdir/Module.symvers" ]; then
    log "error: no kernel headers for the guest kernel $kver in $kdir (scripts/setup.sh installs linux-headers-$kver; or set DN2_KDIR)"
    exit 4
fi

# No checkout path in the module (debug info, __FILE__): the guest image is
# the same bytes from any checkout, and a virtual-time run is deterministic
# only for the same guest bytes.
kcflags="-ffile-prefix-map=$out=. -ffile-prefix-map=$DN2_TOP/include=include"

inputs_hash() {
    {
        echo "$kcflags" | sed "s|$DN2_TOP|TOP|g"
        cat "$here/dimmnet2-drv.c" "$here/Kbuild" "$here/Makefile" \
            "$DN2_TOP/include/dimmnet2/dn2_abi.h" "$DN2_TOP/include/dimmnet2/dn2_uapi.h"
        echo "$kdir"
        cat "$kdir/Module.symvers" "$kdir/include/config/auto.conf" 2>/dev/null
        gcc --version | head -1
    } | sha256sum | cut -c1-32
}

export_ko() {
    cmp -s "$out/dimmnet2.ko" "$export_dir/dimmnet2.ko" || cp "$out/dimmnet2.ko" "$export_dir/dimmnet2.ko"
}

exec 9> "$out/.lock"
flock 9
want=$(inputs_hash)
if [ -z "$force" ] && [ -f "$out/dimmnet2.ko" ] && [ "$(cat "$out/.stamp" 2>/dev/null)" = "$want" ]; then
    export_ko
    echo "$out/dimmnet2.ko"
    exit 0
fi

rm -f "$out/.stamp" "$out/dimmnet2.ko" "$out/dimmnet2.c"   # (the source's old name)
cp "$here/dimmnet2-drv.c" "$here/Kbuild" "$here/Makefile" "$out/"
log "building dimmnet2.ko against $kdir"
if ! make -C "$kdir" M="$out" DN2_INCLUDE="$DN2_TOP/include" KCFLAGS="$kcflags" modules > "$buildlog" 2>&1 \
    || [ ! -f "$out/dimmnet2.ko" ]; then
    tail -30 "$buildlog" >&2
    log "error: building dimmnet2.ko failed (log: $buildlog)"
    exit 1
fi
export_ko
if grep -E 'warning:|error:' "$buildlog" >&2; then
    log "dimmnet2.ko built with warnings (log: $buildlog)"
    echo "$out/dimmnet2.ko"
    exit 2
fi
echo "$want" > "$out/.stamp"
echo "$out/dimmnet2.ko"
