#!/usr/bin/env bash
# Builds qemu-system-x86_64 with the DIMMnet-2 device, and the project's qtests.
#
#   scripts/build-qemu.sh [--link-into DIR] [--show-edits] [--print-env]
#
#   --link-into DIR  symlinks to the QEMU binary and the qtests in DIR
#   --show-edits     print the edits and patches to QEMU's files as a diff,
#                    build nothing
#   --print-env      print KEY=VALUE lines (paths, qtest list) for meson
#
# Idempotent and incremental; a second run with nothing changed only runs a
# no-op ninja.  Steps:
#   1. unpack $DN2_CACHE/src/qemu_<ver>+ds.orig.tar.xz into build/qemu/qemu-<ver>
#      (once; scripts/setup.sh fetches the tarball);
#   2. overlay the project by symlinks:
#        <qemu>/hw/dimmnet2         -> hw/dimmnet2
#        <qemu>/include/dimmnet2    -> include/dimmnet2
#        <qemu>/tests/qtest/dimmnet2* -> tests/qtest/dimmnet2*   (each file)
#        <qemu>/configs/devices/x86_64-softmmu/dn2.mak -> scripts/qemu/dn2.mak
#   3. apply a few-line edit to four QEMU files (see apply_edits; --show-edits
#      prints them as a diff).  Edits are regenerated from a pristine copy
#      (<file>.dn2-orig) and written only when they change;
#   3b. apply the patches scripts/qemu/patches/*.patch (patch -p1, in name
#      order) the same way: to pristine copies, a file written only when its
#      result changes; the patch set's sha256 is the stamp .dn2-patches in the
#      tree, so a changed, added or removed patch is applied afresh;
#   4. configure (only when not configured yet or the configure line changed);
#   5. ninja qemu-system-x86_64 and the qtests listed in scripts/qemu/qtests.list.
# Prints the path of the QEMU binary on stdout.
#
# Environment:
#   DN2_CACHE              cache dir (default ~/.cache/dimmnet2): tarball, ccache
#   DN2_QEMU_TREE          QEMU source tree (default build/qemu/qemu-<ver>)
#   DN2_CC                 compiler behind ccache (default gcc)
#   DN2_CCACHE_MAXSIZE     ccache size cap (default 2G)
#   DN2_QEMU_EXTRA_CONFIGURE  extra configure arguments (word-split)
#   DN2_JOBS               ninja -j value (default: ninja's own)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"

QEMU_TREE=${DN2_QEMU_TREE:-$DN2_TOP/build/qemu/qemu-$QEMU_VERSION}
QEMU_BUILD=$QEMU_TREE/build
QEMU_BIN=$QEMU_BUILD/qemu-system-x86_64
QTEST_LIST=$DN2_TOP/scripts/qemu/qtests.list
DEVICES_MAK=$DN2_TOP/scripts/qemu/dn2.mak
PATCH_DIR=$DN2_TOP/scripts/qemu/patches
EDITED_FILES="hw/Kconfig hw/meson.build meson.build tests/qtest/meson.build"
FIRMWARE_DIR=$DN2_CACHE/firmware
export CCACHE_DIR=$DN2_CACHE/ccache

link_into=
show_edits=
print_env=
dn2_split_opts "$@"
set -- "${DN2_ARGS[@]}"
while [ $# -gt 0 ]; do
    case $1 in
        --link-into) dn2_need_value "$@"; link_into=$2; shift 2 ;;
        --show-edits) show_edits=1; shift ;;
        --print-env) print_env=1; shift ;;
        -h|--help) dn2_usage; exit 0 ;;
        *) usage_error "unknown argument: $1" ;;
    esac
done

# ---------------------------------------------------------------- qtest list
# QTESTS: names whose main source exists; QTEST_EXTRA[name]: extra sources.
declare -a QTESTS=()
declare -A QTEST_EXTRA=()
read_qtest_list() {
    local name extra
    [ -f "$QTEST_LIST" ] || return 0
    while read -r name extra; do
        case $name in ''|'#'*) continue ;; esac
        if [ ! -f "$DN2_TOP/tests/qtest/$name.c" ]; then
            log "warning: qtest $name listed in scripts/qemu/qtests.list but tests/qtest/$name.c does not exist: skipped"
            continue
        fi
        QTESTS+=("$name")
        QTEST_EXTRA[$name]=$extra
    done < "$QTEST_LIST"
}
read_qtest_list

if [ -n "$print_env" ]; then
    # Read by the top-level meson.build (one KEY=VALUE per line).
    echo "QEMU_TREE=$QEMU_TREE"
    echo "QEMU_BUILD=$QEMU_BUILD"
    echo "QEMU_BIN=$QEMU_BIN"
    echo "DN2_FIRMWARE_DIR=$FIRMWARE_DIR"
    echo "QTESTS=${QTESTS[*]}"
    exit 0
fi

# ------------------------------------------------------------------- unpack
unpack() {
    local tarball stamp want
    tarball=$(ls "$DN2_CACHE/src/qemu_${QEMU_VERSION}"*.orig.tar.xz 2>/dev/null | head -1) || true
    stamp=$QEMU_TREE/.dn2-unpacked
    if [ -f "$stamp" ] && [ -z "$tarball" ]; then
        return 0     # already unpacked; the tarball is no longer needed
    fi
    [ -n "$tarball" ] || die "QEMU $QEMU_VERSION tarball not found in $DN2_CACHE/src: run scripts/setup.sh first"
    want="$(basename "$tarball") $(stat -c %s "$tarball")"
    if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
        return 0
    fi
    log "unpacking $(basename "$tarball") into $QEMU_TREE"
    local parent tmp
    parent=$(dirname "$QEMU_TREE")
    mkdir -p "$parent"
    tmp=$(mktemp -d "$parent/.unpack.XXXXXX")
    tar --no-same-owner -xJf "$tarball" -C "$tmp" || { rm -rf "$tmp"; die "cannot unpack $tarball"; }
    local top
    top=$(find "$tmp" -mindepth 1 -maxdepth 1 -type d | head -1)
    [ -f "$top/configure" ] || { rm -rf "$tmp"; die "$tarball does not look like a QEMU source tarball"; }
    rm -rf "$QEMU_TREE"
    mv "$top" "$QEMU_TREE"
    rmdir "$tmp"
    echo "$want" > "$stamp"
}

# ------------------------------------------------------------------ overlay
# Relative links, so that moving the whole work tree keeps them valid.
link() { # link TARGET LINKNAME
    local rel
    rel=$(realpath -m --relative-to="$(dirname "$2")" "$1")
    if [ "$(readlink "$2" 2>/dev/null)" != "$rel" ]; then
        rm -rf "$2"
        ln -s "$rel" "$2"
    fi
}

overlay() {
    [ -f "$DN2_TOP/hw/dimmnet2/meson.build" ] || die "hw/dimmnet2/meson.build missing in $DN2_TOP"
    [ -f "$DN2_TOP/hw/dimmnet2/Kconfig" ] || die "hw/dimmnet2/Kconfig missing in $DN2_TOP"
    [ -f "$DN2_TOP/hw/dimmnet2/trace-events" ] || die "hw/dimmnet2/trace-events missing (QEMU's trace generator needs it, even empty)"
    [ -d "$DN2_TOP/include/dimmnet2" ] || die "include/dimmnet2 missing in $DN2_TOP"
    link "$DN2_TOP/hw/dimmnet2" "$QEMU_TREE/hw/dimmnet2"
    link "$DN2_TOP/include/dimmnet2" "$QEMU_TREE/include/dimmnet2"
    link "$DEVICES_MAK" "$QEMU_TREE/configs/devices/x86_64-softmmu/dn2.mak"
    local f
    shopt -s nullglob
    for f in "$QEMU_TREE"/tests/qtest/dimmnet2*; do      # drop links to removed files
        if [ -L "$f" ] && [ ! -e "$f" ]; then rm -f "$f"; fi
    done
    for f in "$DN2_TOP"/tests/qtest/dimmnet2*; do
        link "$f" "$QEMU_TREE/tests/qtest/$(basename "$f")"
    done
    shopt -u nullglob
}

# -------------------------------------------------------------------- edits
# edit FILE SED-ARGS...: FILE (relative to the QEMU tree) becomes sed applied
# to its pristine copy; rewritten only if the result differs.
edit() {
    local f=$QEMU_TREE/$1; shift
    [ -f "$f.dn2-orig" ] || cp -p "$f" "$f.dn2-orig"
    sed "$@" "$f.dn2-orig" > "$f.dn2-new"
    if cmp -s "$f.dn2-new" "$f"; then rm -f "$f.dn2-new"; else mv "$f.dn2-new" "$f"; fi
}
# expect FILE FIXED-STRING: die unless the edit landed.
expect() {
    grep -qF -- "$2" "$QEMU_TREE/$1" \
        || die "editing QEMU's $1 failed (its layout changed?): '$2' not found"
}

apply_edits() {
    # Kconfig and meson: build hw/dimmnet2 (symbol DIMMNET2, system_ss).
    edit hw/Kconfig -e '/^source display\/Kconfig$/a source dimmnet2/Kconfig'
    expect hw/Kconfig "source dimmnet2/Kconfig"
    edit hw/meson.build -e "/^subdir('display')\$/a subdir('dimmnet2')"
    expect hw/meson.build "subdir('dimmnet2')"
    # Top-level meson.build: trace events of hw/dimmnet2; no edk2 blobs in +ds.
    edit meson.build \
        -e "/^    'hw\\/display',\$/a \\    'hw/dimmnet2'," \
        -e 's/unpack_edk2_blobs = bzip2.found()/unpack_edk2_blobs = false/'
    expect meson.build "    'hw/dimmnet2',"
    expect meson.build "    unpack_edk2_blobs = false"
    # tests/qtest/meson.build: the project's qtests for x86_64 (+ extra sources).
    local names="" dict="" t e s
    for t in "${QTESTS[@]}"; do
        names+="${names:+, }'$t'"
        if [ -n "${QTEST_EXTRA[$t]}" ]; then
            s=""
            for e in ${QTEST_EXTRA[$t]}; do s+="${s:+, }'$e'"; done
            dict+="  '$t': files($s),\\n"
        fi
    done
    local sed_args=(-e "/^qtests_i386 = \\\\\$/a \\  (config_all_devices.has_key('CONFIG_DIMMNET2') ? [$names] : []) + \\\\")
    if [ -n "$dict" ]; then
        sed_args+=(-e "/^qtests = {\$/a \\${dict%\\n}")
    fi
    edit tests/qtest/meson.build "${sed_args[@]}"
    expect tests/qtest/meson.build "has_key('CONFIG_DIMMNET2') ? [$names]"
}

# ------------------------------------------------------------------ patches
# Patches to QEMU's own code, meant for upstream (scripts/qemu/patches/*.patch,
# `patch -p1` from the top of the QEMU tree, applied in name order).  Each run
# with a changed patch set (its sha256 is the stamp .dn2-patches) applies them
# all to pristine copies (<file>.dn2-orig) in a scratch folder and copies back
# only the files whose result differs, so ninja rebuilds only what changed;
# a file that no patch touches any more gets its pristine content back.
# A patch may not touch a file that apply_edits edits.
patch_set_sum() {
    local p
    { for p in "$@"; do basename "$p"; cat "$p"; done; } | sha256sum | cut -d' ' -f1
}

apply_patches() {
    local stamp=$QEMU_TREE/.dn2-patches listfile=$QEMU_TREE/.dn2-patched-files
    local -a patches=() files=()
    local p f sum tmp
    shopt -s nullglob
    patches=("$PATCH_DIR"/*.patch)
    shopt -u nullglob
    sum=$(patch_set_sum "${patches[@]}")
    if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$sum" ]; then
        return 0
    fi
    if [ ${#patches[@]} -gt 0 ]; then
        command -v patch >/dev/null || die "'patch' not found (Debian package patch): needed for scripts/qemu/patches"
        mapfile -t files < <(sed -n -E 's#^\+\+\+ b/([^[:space:]]+).*#\1#p' "${patches[@]}" | sort -u)
    fi
    for f in "${files[@]}"; do
        case " $EDITED_FILES " in *" $f "*) die "a patch in $PATCH_DIR touches $f, which apply_edits edits" ;; esac
        [ -f "$QEMU_TREE/$f" ] || die "a patch in $PATCH_DIR touches $f, which QEMU $QEMU_VERSION does not have"
    done
    tmp=$(mktemp -d "$(dirname "$QEMU_TREE")/.patch.XXXXXX")
    for f in "${files[@]}"; do
        [ -f "$QEMU_TREE/$f.dn2-orig" ] || cp -p "$QEMU_TREE/$f" "$QEMU_TREE/$f.dn2-orig"
        mkdir -p "$tmp/$(dirname "$f")"
        cp "$QEMU_TREE/$f.dn2-orig" "$tmp/$f"
    done
    for p in "${patches[@]}"; do
        if ! patch -p1 -s -N --no-backup-if-mismatch -r - -d "$tmp" < "$p" >&2; then
            rm -rf "$tmp"
            die "patch $(basename "$p") does not apply to QEMU $QEMU_VERSION (scripts/qemu/patches)"
        fi
        log "patch $(basename "$p") applied"
    done
    for f in "${files[@]}"; do
        cmp -s "$tmp/$f" "$QEMU_TREE/$f" || cp "$tmp/$f" "$QEMU_TREE/$f"
    done
    rm -rf "$tmp"
    # Files patched before and not now: back to pristine (a new mtime, so
    # ninja recompiles them).
    if [ -f "$listfile" ]; then
        while read -r f; do
            case " ${files[*]} " in *" $f "*) continue ;; esac
            if [ -f "$QEMU_TREE/$f.dn2-orig" ]; then
                cmp -s "$QEMU_TREE/$f.dn2-orig" "$QEMU_TREE/$f" || cp "$QEMU_TREE/$f.dn2-orig" "$QEMU_TREE/$f"
                rm -f "$QEMU_TREE/$f.dn2-orig"
            fi
        done < "$listfile"
    fi
    printf '%s\n' "${files[@]}" > "$listfile"
    echo "$sum" > "$stamp"
}

show_edits() {
    local f
    for f in $EDITED_FILES $(cat "$QEMU_TREE/.dn2-patched-files" 2>/dev/null); do
        [ -f "$QEMU_TREE/$f.dn2-orig" ] || continue
        (cd "$QEMU_TREE" && diff -u "$f.dn2-orig" "$f" --label "a/$f" --label "b/$f") || true
    done
}

# ------------------------------------------------------------------- ccache
# A compiler wrapper, so that a plain `ninja -C <qemu>/build` run by hand uses
# the same cache and settings.  CCACHE_BASEDIR + CCACHE_NOHASHDIR let a copy of
# the work tree at another path hit the cache.
make_cc_wrapper() {
    local cc=${DN2_CC:-gcc} w=$QEMU_TREE/../dn2-cc base
    command -v "$cc" >/dev/null || die "compiler '$cc' not found"
    base=$DN2_TOP
    case $QEMU_TREE/ in "$DN2_TOP"/*) ;; *) base=$QEMU_TREE ;; esac
    local body
    body="#!/bin/sh
# Generated by scripts/build-qemu.sh: compiler used by the QEMU build.
if command -v ccache >/dev/null 2>&1; then
    export CCACHE_DIR='$CCACHE_DIR'
    export CCACHE_BASEDIR='$base'
    export CCACHE_NOHASHDIR=1
    export CCACHE_MAXSIZE='${DN2_CCACHE_MAXSIZE:-2G}'
    exec ccache $cc \"\$@\"
fi
exec $cc \"\$@\""
    if [ "$(cat "$w" 2>/dev/null)" != "$body" ]; then
        printf '%s\n' "$body" > "$w"
        chmod +x "$w"
    fi
    CC_WRAPPER=$(realpath "$w")
    if command -v ccache >/dev/null; then
        # Also record the cap in the cache's own ccache.conf (for ccache -s, cleanup).
        local size=${DN2_CCACHE_MAXSIZE:-2G}
        mkdir -p "$CCACHE_DIR"
        grep -qx "max_size = $size" "$CCACHE_DIR/ccache.conf" 2>/dev/null \
            || ccache --max-size="$size" >/dev/null
    else
        log "warning: ccache not installed: building without it"
    fi
}

# ---------------------------------------------------------------- configure
configure() {
    local args=(
        --python=/usr/bin/python3
        --cc="$CC_WRAPPER"
        --target-list=x86_64-softmmu
        --without-default-features
        --with-devices-x86_64=dn2
        --enable-slirp --enable-tcg --enable-kvm
        --enable-trace-backends=log
        --disable-docs --disable-werror --disable-install-blobs
    )
    # shellcheck disable=SC2206
    [ -n "${DN2_QEMU_EXTRA_CONFIGURE:-}" ] && args+=(${DN2_QEMU_EXTRA_CONFIGURE})
    local sig="qemu-$QEMU_VERSION ${args[*]} cc=${DN2_CC:-gcc}"
    local sigfile=$QEMU_BUILD/.dn2-configure
    if [ -f "$QEMU_BUILD/build.ninja" ] && [ "$(cat "$sigfile" 2>/dev/null)" = "$sig" ]; then
        return 0
    fi
    [ -x /usr/bin/python3 ] || die "/usr/bin/python3 missing (run scripts/setup.sh)"
    log "configuring QEMU in $QEMU_BUILD"
    local t0=$SECONDS
    rm -f "$sigfile"
    mkdir -p "$QEMU_BUILD"
    if ! (cd "$QEMU_BUILD" && ../configure "${args[@]}") > "$QEMU_BUILD/dn2-configure.log" 2>&1; then
        tail -40 "$QEMU_BUILD/dn2-configure.log" >&2
        die "QEMU configure failed (full log: $QEMU_BUILD/dn2-configure.log)"
    fi
    echo "$sig" > "$sigfile"
    log "configured in $((SECONDS - t0)) s"
}

# -------------------------------------------------------------------- build
build() {
    local targets=(qemu-system-x86_64) t
    for t in "${QTESTS[@]}"; do targets+=("tests/qtest/$t"); done
    log "ninja ${targets[*]}"
    ninja -C "$QEMU_BUILD" ${DN2_JOBS:+-j "$DN2_JOBS"} "${targets[@]}" \
        || die "QEMU build failed (see the compiler messages above; rerun: ninja -C $QEMU_BUILD ${targets[*]})"
    [ -x "$QEMU_BIN" ] || die "build finished but $QEMU_BIN is missing"
}

link_outputs() {
    local dir=$1 t
    mkdir -p "$dir"
    ln -sfn "$QEMU_BIN" "$dir/qemu-system-x86_64"
    for t in "${QTESTS[@]}"; do ln -sfn "$QEMU_BUILD/tests/qtest/$t" "$dir/$t"; done
}

main() {
    local start=$SECONDS
    command -v ninja >/dev/null || die "ninja not found: run scripts/setup.sh"
    mkdir -p "$(dirname "$QEMU_TREE")"
    # One build at a time (e.g. meson compile and a manual run).
    exec 9> "$(dirname "$QEMU_TREE")/.dn2-build.lock"
    flock 9
    unpack
    overlay
    apply_edits
    apply_patches
    if [ -n "$show_edits" ]; then show_edits; exit 0; fi
    make_cc_wrapper
    configure
    build
    [ -n "$link_into" ] && link_outputs "$link_into"
    log "QEMU ready in $((SECONDS - start)) s; qtests: ${QTESTS[*]:-none} (in $QEMU_BUILD/tests/qtest)"
    echo "$QEMU_BIN"
}
main
