#!/usr/bin/env bash
# Builds the guest initramfs: build/guest/initramfs.cpio.lz4
#
#   scripts/build-initramfs.sh [--force] [--print] [--packages 'PKG...'] [--mpi]
#                              [--guest-release bookworm|trixie]
#
# The plain image (no options) is build/guest/initramfs.cpio.lz4.  With Debian
# packages it is a separate output:
#   --packages 'A B'  (or DN2_GUEST_PACKAGES='A B') adds Debian binary
#               packages and their whole dependency closure (Depends and
#               Pre-Depends, recursively, glibc included: the image is
#               otherwise busybox), resolved by apt against an empty package
#               database, fetched with `apt-get download` into
#               $DN2_CACHE/debs (never installed on the host), unpacked with
#               dpkg -x; docs, man pages and locales are pruned, the
#               packages' update-alternatives links are made, and
#               `ldconfig -r` builds the image's ld.so.cache.  Output:
#               build/guest/initramfs-pkgs-<hash>.cpio.lz4.  An unknown
#               package name is an error that names it.
#   --mpi       the MPI image build/guest/initramfs-mpi.cpio.lz4: the packages
#               of $DN2_MPI_PACKAGES (Open MPI, libfabric and fi_info,
#               NetPIPE, HPCC, mplrs) plus any --packages, and
#               build/guest/export-mpi/ (the PMI library, the provider) also
#               under /opt/dn2; an unprivileged user "mpi" (uid 1000) is
#               created for the ranks (docs/mpi.md).
#   --guest-release R   (or DN2_GUEST_RELEASE) the Debian release of the
#               packages: bookworm (default: the host's apt lists, the
#               images above) or trixie (Debian 13: Open MPI 5, PMIx 5,
#               libfabric 2.1).  trixie resolves and downloads with a private
#               apt state in $DN2_CACHE/apt-trixie whose source is derived
#               from the machine's own apt configuration (its first
#               non-security deb822 stanza, or sources.list line, with the
#               suite replaced), the .debs into $DN2_CACHE/debs-trixie; the
#               root gets the merged-/usr links (bin, sbin, lib, lib64 to
#               usr/...).  Outputs: initramfs-mpi-trixie.cpio.lz4,
#               initramfs-pkgs-trixie-<hash>.cpio.lz4.  With --mpi the
#               packages are $DN2_MPI_PACKAGES_TRIXIE (Open MPI 5 with PMIx
#               and libfabric, NetPIPE, HPCC, mplrs, pattrs/pquery), and the
#               release's own dn2-pmix-server and libfabric provider are
#               built here (the host's gcc against trixie's libpmix-dev and
#               libfabric-dev, unpacked, never installed) into
#               build/guest/export-mpi-trixie/, which goes under /opt/dn2
#               instead of export-mpi/.  The kernel, /init, busybox and the
#               driver are the same for every release.
#
# Contents:
#   /bin        busybox-static (with its applet links), the static dn2-probe
#               (tests/guest/dn2-probe.c) and dn2-lid (tests/cluster/dn2-lid.c),
#               both built here with gcc -static; dn2-lid is also copied to
#               build/guest/export/bin/
#   /opt/dn2    a copy of build/guest/export/ ($DN2_GUEST_EXPORT), the
#               directory the project's guest builds fill (dimmnet2.ko, static
#               programs in bin/, libraries in lib/); bin/ is first on PATH
#   /lib/modules/dn2-net   virtio_pci + virtio_net and their dependencies
#               ($DN2_GUEST_MODULES) from the guest kernel's module tree, in
#               load order, so that a -device virtio-net-pci NIC works
#   /lib/modules/dn2-fw    qemu_fw_cfg ($DN2_GUEST_FW_MODULES): the job
#               server's credential arrives as a QEMU fw_cfg file
#   /init       the guest's whole userland; it
#     - mounts proc, sys and devtmpfs;
#     - if a virtio NIC is present: loads the modules above and configures
#       eth0 as QEMU's user network (slirp) expects: 10.0.2.15/24, gateway
#       10.0.2.2 (the host), DNS 10.0.2.3;  dn2.net=off skips this;
#     - exports dn2.node=I, dn2.nodes=N, dn2.wid=W to the command as
#       DN2_NODE (and DN2_RANK), DN2_NODES, DN2_WID;
#     - with dn2.job=URL (the job server, e.g. http://10.0.2.2:PORT, and
#       dn2.jobid=ID) does the job-start handshake of docs/cluster.md: reads
#       the node's credential (the fw_cfg file opt/dn2/token, QEMU -fw_cfg;
#       the server's URLs for this node are then URL/n/NODE/TOKEN/...),
#       waits for the board's link (dn2-lid -w, dn2.linkwait=S, default
#       120), prints "DN2-LINK up lid=L", joins (GET .../join?...), waits
#       for the rank table .../ranks (dn2.barrier=S, default 900) and stores
#       it in /opt/dn2/ranks; exports DN2_LID, DN2_HTTP=URL/n/NODE/TOKEN,
#       DN2_JOBID, DN2_RANKS;
#     - dn2.ranks=URL|PATH|fw_cfg:NAME names a rank table explicitly
#       (fetched when a URL, read from the QEMU fw_cfg file NAME, e.g.
#       fw_cfg:opt/dn2/ranks) and is exported as DN2_RANKS (the file's path);
#     - without a job server, dn2.linkwait=S (with dn2.ranks and dn2.node)
#       waits up to S seconds for the board's link, prints "DN2-LINK up
#       lid=L", checks that the rank table gives this node the board's LID
#       and prints "DN2-RANKS N entries" (scripts/cluster.sh
#       --virtual-time: the rank table is known before boot);
#     - runs the command given as dn2.run=CMD (quote it to have spaces:
#       dn2.run="dn2-probe 0; dn2-probe 1"; dn2.run=@NAME fetches the
#       script URL/NAME from the job server and sources it;
#       dn2.run=@fw_cfg:NAME sources the QEMU fw_cfg file NAME), default
#       "dn2-probe 0", between the lines
#           DN2-GUEST-BEGIN
#           DN2-GUEST-END rc=<exit status>
#       (a failed handshake ends with rc=125 after a DN2-START-FAILED line);
#     - powers off (poweroff -f).  dn2.run=sh gives an interactive shell.
#     Nothing here reads the host's time or entropy: without a NIC and a
#     job server its only inputs are the kernel command line, fw_cfg files
#     and the boards (the waits are loops of usleep on the guest's clock;
#     "date +%s" is read only in the job server's retry loop).
#       dn2.mode=serve instead keeps the guest up: a shell on the port named
#       by dn2.shell= (e.g. ttyS1) and a loop that runs jobs from URL/job
#       (scripts/cluster.sh -i / exec).
# Extra files: every directory named in $DN2_GUEST_EXTRA (colon-separated)
# is copied into the root as is (e.g. a driver module and its test).
#
# Rebuilt only when an input changed (a hash of all inputs is kept in
# build/guest/initramfs*.stamp); --force rebuilds anyway.  --print only
# prints the output path.  Prints the initramfs path on stdout.
# Next to the image, IMAGE.size says what it takes unpacked in the guest's
# RAM ("unpacked_kib=N": every file rounded up to 4 KiB pages; see
# dn2_image_size in scripts/lib.sh: cluster.sh sizes guest memory from it).
# DN2_GUEST_OUT_DIR puts the images (and their stamps) in another directory
# than build/guest (e.g. a test's image with DN2_GUEST_EXTRA, which would
# otherwise replace the shared build/guest/initramfs.cpio.lz4).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"

OUT_DIR=${DN2_GUEST_OUT_DIR:-$DN2_TOP/build/guest}
OUT=$OUT_DIR/initramfs.cpio.lz4
STAMP=$OUT_DIR/initramfs.stamp
PROBE_SRC=$DN2_TOP/tests/guest/dn2-probe.c
LID_SRC=$DN2_TOP/tests/cluster/dn2-lid.c
EXPORT=${DN2_GUEST_EXPORT:-$DN2_TOP/build/guest/export}
NET_MODULES=${DN2_GUEST_MODULES-virtio_pci virtio_net}
FW_MODULES=${DN2_GUEST_FW_MODULES-qemu_fw_cfg}
ABI_H=$DN2_TOP/include/dimmnet2/dn2_abi.h
BUSYBOX=${DN2_BUSYBOX:-$DN2_CACHE/pkgs/busybox-static/bin/busybox}

# The MPI image's packages (docs/mpi.md): Open MPI with its ofi MTL and
# libfabric (+ fi_info/fi_pingpong), and packaged MPI applications.
MPI_PACKAGES=${DN2_MPI_PACKAGES:-openmpi-bin libopenmpi3 libfabric1 libfabric-bin netpipe-openmpi hpcc mplrs}
MPI_EXPORT=${DN2_GUEST_EXPORT_MPI:-$DN2_TOP/build/guest/export-mpi}
# Debian 13's (--guest-release trixie): Open MPI 5.0 (libopenmpi40), its
# PMIx 5 runtime and tools, libfabric 2.1, the same applications.
MPI_PACKAGES_TRIXIE=${DN2_MPI_PACKAGES_TRIXIE:-openmpi-bin libopenmpi40 libfabric1 libfabric-bin libpmix2t64 libpmix-bin netpipe-openmpi hpcc mplrs}
# What of the trixie closure no guest can use: the AMD GPU runtime (ROCm,
# LLVM, Z3: 240 MB unpacked) that libucx0 depends on for its ROCm modules
# only.  Those packages and UCX's *rocm* modules are left out; every
# library the rest needs is checked to be in the image.
MPI_DROP_TRIXIE=${DN2_MPI_DROP_TRIXIE-libamdhip64-5 libamd-comgr2 libhsa-runtime64-1 libhsakmt1 libllvm17t64 libz3-4 libdrm-amdgpu1}
RELEASE=${DN2_GUEST_RELEASE:-bookworm}

force=
print=
mpi=
release_opt=
packages=${DN2_GUEST_PACKAGES:-}
dn2_split_opts "$@"
set -- "${DN2_ARGS[@]}"
while [ $# -gt 0 ]; do
    case $1 in
        --force) force=1; shift ;;
        --print) print=1; shift ;;
        --packages) dn2_need_arg "$@"; packages+=" $2"; shift 2 ;;
        --mpi) mpi=1; shift ;;
        --guest-release) dn2_need_value "$@"; RELEASE=$2; release_opt=1; shift 2 ;;
        -h|--help) dn2_usage; exit 0 ;;
        *) usage_error "unknown argument: $1" ;;
    esac
done
case $RELEASE in
    bookworm|trixie) ;;
    *) usage_error "--guest-release: bookworm or trixie, not '$RELEASE'" ;;
esac
# The package list, sorted and unique; the output's name follows from it.
if [ -n "$mpi" ] && [ "$RELEASE" = trixie ]; then
    packages+=" $MPI_PACKAGES_TRIXIE"
elif [ -n "$mpi" ]; then
    packages+=" $MPI_PACKAGES"
fi
read -r -a pkg_list <<< "$(tr ' ' '\n' <<< "$packages" | sed '/^$/d' | LC_ALL=C sort -u | tr '\n' ' ')"
for p in "${pkg_list[@]}"; do
    [[ $p =~ ^[a-z0-9][a-z0-9+.-]+$ ]] || usage_error "--packages: '$p' is not a Debian package name"
done
# (DN2_GUEST_RELEASE names the release of package images only)
[ ${#pkg_list[@]} -gt 0 ] || [ "$release_opt" = 1 ] || RELEASE=bookworm
[ "$RELEASE" = bookworm ] || [ ${#pkg_list[@]} -gt 0 ] ||
    usage_error "--guest-release $RELEASE: only for an image with Debian packages (--mpi or --packages); the plain image has none"
# (bookworm's names stay those of the images before there was a choice)
rel=; [ "$RELEASE" = bookworm ] || rel=-$RELEASE
if [ -n "$mpi" ]; then
    OUT=$OUT_DIR/initramfs-mpi$rel.cpio.lz4
    STAMP=$OUT_DIR/initramfs-mpi$rel.stamp
elif [ ${#pkg_list[@]} -gt 0 ]; then
    tag=$(printf '%s\n' "${pkg_list[@]}" | sha256sum | cut -c1-10)
    OUT=$OUT_DIR/initramfs-pkgs$rel-$tag.cpio.lz4
    STAMP=$OUT_DIR/initramfs-pkgs$rel-$tag.stamp
fi
[ -n "$print" ] && { echo "$OUT"; exit 0; }

# ------------------------------------------------------------------ inputs
[ -x "$BUSYBOX" ] || die "busybox not found at $BUSYBOX: run scripts/setup.sh (it extracts busybox-static into $DN2_CACHE/pkgs)"
[ -f "$PROBE_SRC" ] || die "$PROBE_SRC missing"
[ -f "$LID_SRC" ] || die "$LID_SRC missing"
[ -f "$ABI_H" ] || die "$ABI_H missing"
command -v gcc >/dev/null || die "gcc not found: run scripts/setup.sh"
command -v cpio >/dev/null || die "cpio not found: run scripts/setup.sh"
command -v lz4 >/dev/null || die "lz4 not found: run scripts/setup.sh"

extra_dirs=()
if [ -n "${DN2_GUEST_EXTRA:-}" ]; then
    IFS=: read -r -a extra_dirs <<< "$DN2_GUEST_EXTRA"
    for d in "${extra_dirs[@]}"; do
        [ -d "$d" ] || die "DN2_GUEST_EXTRA: $d is not a directory"
    done
fi

# Kernel modules for the NIC, dependencies first (their .modinfo "depends="),
# from the module tree of the kernel the guests boot (scripts/lib.sh).
net_modules=() fw_modules=()
if [ -n "$NET_MODULES$FW_MODULES" ]; then
    if kernel=$(dn2_find_kernel 2>/dev/null) && mdir=$(dn2_find_kernel_modules "$kernel" 2>/dev/null); then
        declare -A mod_seen=()
        mod_add() { # NAME: appends its dependencies, then itself
            local name=$1 f dep deps
            [ -n "${mod_seen[$name]:-}" ] && return 0
            mod_seen[$name]=1
            f=$(find "$mdir/kernel" -name "$name.ko" -print -quit)
            if [ -z "$f" ]; then
                # Built in (or absent): nothing to load.
                grep -q "/$name.ko\$" "$mdir/modules.builtin" 2>/dev/null \
                    || log "warning: kernel module $name not found in $mdir"
                return 0
            fi
            deps=$(tr '\0' '\n' < "$f" | sed -n 's/^depends=//p' | head -1)
            for dep in ${deps//,/ }; do mod_add "$dep"; done
            net_modules+=("$f")
        }
        for m in $NET_MODULES; do mod_add "$m"; done
        n_net=${#net_modules[@]}
        for m in $FW_MODULES; do mod_add "$m"; done
        fw_modules=("${net_modules[@]:n_net}")
        net_modules=("${net_modules[@]:0:n_net}")
    else
        log "warning: no module tree for the guest kernel: guests get no virtio-net NIC driver and no fw_cfg (no job server credential)"
    fi
fi

# ------------------------------------------------------- Debian packages
# bookworm: the host's own apt lists and cache (apt's default state).
# Another release: a private apt state in $APT_DIR (sources derived from the
# machine's, lists, cache, an empty status file): nothing of the host's apt
# state is read or changed, and no registry host name is written anywhere.
DEBS=$DN2_CACHE/debs
APT_OPTS=()
APT_DIR=
if [ "$RELEASE" != bookworm ]; then
    APT_DIR=$DN2_CACHE/apt-$RELEASE
    DEBS=$DN2_CACHE/debs-$RELEASE
    APT_OPTS=(-o Dir::Etc::sourcelist=/dev/null -o Dir::Etc::sourceparts="$APT_DIR/parts"
              -o Dir::State::Lists="$APT_DIR/lists" -o Dir::Cache="$APT_DIR/cache"
              -o Dir::State::status="$APT_DIR/status" -o Dir::Etc::preferences=/dev/null
              -o Dir::Etc::preferencesparts="$APT_DIR/prefs" -o APT::Default-Release=
              -o Debug::NoLocking=1 -o APT::Sandbox::User=root)
fi

# derive_sources FILE-STEM: the machine's own apt source for $RELEASE into
# FILE-STEM.sources (the first deb822 stanza of
# /etc/apt/sources.list.d/debian.sources that is not the security archive,
# Types deb, Suites $RELEASE; its URIs and Signed-By kept) or, without that
# file, FILE-STEM.list (the first "deb" line of /etc/apt/sources.list that
# is not the security archive, its suite replaced)
derive_sources() {
    local stem=$1 d822=/etc/apt/sources.list.d/debian.sources list=/etc/apt/sources.list
    rm -f "$stem.sources" "$stem.list"
    if [ -f "$d822" ]; then
        awk -v RS= -v rel="$RELEASE" '!/security/ && /URIs:/ && !done {
            n = split($0, L, "\n"); s = ""
            for (i = 1; i <= n; i++) {
                if (L[i] ~ /^#/) continue
                if (L[i] ~ /^Types:/) L[i] = "Types: deb"
                if (L[i] ~ /^Suites:/) L[i] = "Suites: " rel
                s = s L[i] "\n"
            }
            printf "%s", s; done = 1 }' "$d822" > "$stem.sources"
        grep -q '^URIs:' "$stem.sources" && grep -q '^Suites:' "$stem.sources" ||
            die "cannot derive a $RELEASE apt source from $d822: no stanza with URIs and Suites outside the security archive"
    elif [ -f "$list" ]; then
        awk -v rel="$RELEASE" '$1 == "deb" && !/security/ && !done {
            i = 2
            if ($2 ~ /^\[/) { while (i < NF && $i !~ /\]$/) i++; i++ }
            $(i + 1) = rel; print; done = 1 }' "$list" > "$stem.list"
        [ -s "$stem.list" ] || die "cannot derive a $RELEASE apt source from $list: no \"deb\" line outside the security archive"
    else
        die "cannot derive a $RELEASE apt source: neither $d822 nor $list exists"
    fi
}

# release_lists: the private apt state of $RELEASE, its lists fetched when
# there are none, when the derived source changed, or with
# DN2_GUEST_APT_UPDATE=1
release_lists() {
    local new=$APT_DIR/new
    mkdir -p "$APT_DIR"/{parts,lists/partial,cache/archives/partial,prefs} "$new"
    [ -f "$APT_DIR/status" ] || : > "$APT_DIR/status"
    derive_sources "$new/$RELEASE"
    if ! diff -qr "$new" "$APT_DIR/parts" > /dev/null 2>&1; then
        rm -f "$APT_DIR"/parts/*
        cp "$new"/* "$APT_DIR/parts/"
        rm -f "$APT_DIR/updated"
    fi
    rm -rf "$new"
    if [ "${DN2_GUEST_APT_UPDATE:-0}" = 1 ] || [ ! -f "$APT_DIR/updated" ] ||
       ! compgen -G "$APT_DIR/lists/*Packages*" > /dev/null; then
        log "apt-get update for $RELEASE (private lists in $APT_DIR, the source derived from /etc/apt)"
        if ! LC_ALL=C apt-get "${APT_OPTS[@]}" -q update > "$APT_DIR/update.log" 2>&1; then
            die "apt-get update for $RELEASE failed: $(grep -E '^(E|W|Err):' "$APT_DIR/update.log" | head -3 | tr '\n' ' ')(log: $APT_DIR/update.log)"
        fi
        grep -qE '^(E:|Err:)' "$APT_DIR/update.log" &&
            die "apt-get update for $RELEASE: $(grep -E '^(E:|Err:)' "$APT_DIR/update.log" | head -3 | tr '\n' ' ')(log: $APT_DIR/update.log)"
        compgen -G "$APT_DIR/lists/*Packages*" > /dev/null ||
            die "apt-get update for $RELEASE fetched no package lists (log: $APT_DIR/update.log)"
        touch "$APT_DIR/updated"
    fi
}

# resolve_closure PKG...: prints "name version arch" for every package of
# the dependency closure (Depends + Pre-Depends, recursively; alternatives
# and virtual packages resolved by apt), as apt would install them on an
# empty system.  Cached per package list and apt lists state.
resolve_closure() {
    local key cache out err empty
    if [ -n "$APT_DIR" ]; then
        key=$( { echo "release:$RELEASE"; printf '%s\n' "$@"; stat -c '%n %Y %s' "$APT_DIR"/lists/*Packages* 2>/dev/null; } | sha256sum | cut -c1-16)
    else
        key=$( { printf '%s\n' "$@"; stat -c '%n %Y %s' /var/lib/apt/lists/*Packages* 2>/dev/null; } | sha256sum | cut -c1-16)
    fi
    cache=$DN2_CACHE/closures/$key
    if [ -s "$cache" ]; then cat "$cache"; return 0; fi
    mkdir -p "$DN2_CACHE/closures"
    empty=$(mktemp -d)
    : > "$empty/status"
    if ! out=$(LC_ALL=C apt-get "${APT_OPTS[@]}" -s -o Dir::State::status="$empty/status" \
            -o APT::Install-Recommends=false -o APT::Install-Suggests=false \
            -o Debug::NoLocking=1 install "$@" 2>"$empty/err"); then
        err=$(cat "$empty/err")
        rm -rf "$empty"
        local bad hint="run scripts/setup.sh if the apt lists are missing"
        [ -n "$APT_DIR" ] && hint="not in $RELEASE's lists ($APT_DIR; DN2_GUEST_APT_UPDATE=1 fetches them again)"
        bad=$(sed -n -E "s/^E: (Unable to locate package |Package '?)([^' ]+).*/\2/p" <<< "$err" | sort -u | tr '\n' ' ')
        if [ -n "$bad" ]; then
            die "Debian package(s) not found: ${bad% } (check the name with apt-cache search; $hint)"
        fi
        die "apt cannot resolve the packages $*${APT_DIR:+ in $RELEASE}: $(grep -v '^W:' <<< "$err" | head -5 | tr '\n' ' ')"
    fi
    rm -rf "$empty"
    # Inst NAME (VERSION SUITE [ARCH])
    sed -n -E 's/^Inst ([^ ]+) \(([^ ]+) .*\[([a-z0-9]+)\]\).*/\1 \2 \3/p' <<< "$out" > "$cache.tmp"
    [ -s "$cache.tmp" ] || die "apt resolved nothing for: $*"
    mv "$cache.tmp" "$cache"
    cat "$cache"
}

# deb_path NAME VERSION ARCH: where apt-get download puts it
deb_path() { echo "$DEBS/${1}_${2//:/%3a}_$3.deb"; }

# fetch_debs LIST: every package of LIST ("name version arch" lines) into
# $DEBS (those missing)
fetch_debs() {
    local name ver arch want=()
    mkdir -p "$DEBS"
    while read -r name ver arch; do
        [ -f "$(deb_path "$name" "$ver" "$arch")" ] || want+=("$name=$ver")
    done <<< "$1"
    [ ${#want[@]} -eq 0 ] && return 0
    local stale=
    [ -z "$APT_DIR" ] || stale=" (the $RELEASE lists in $APT_DIR may be older than the archive: DN2_GUEST_APT_UPDATE=1 fetches them again)"
    log "downloading ${#want[@]} Debian packages into $DEBS"
    (cd "$DEBS" && apt-get "${APT_OPTS[@]}" download -o APT::Sandbox::User=root -qq "${want[@]}" >/dev/null) \
        || die "apt-get download failed for some of: ${want[*]}$stale"
    while read -r name ver arch; do
        [ -f "$(deb_path "$name" "$ver" "$arch")" ] || die "apt-get download did not produce $(deb_path "$name" "$ver" "$arch")"
    done <<< "$1"
}

# check_needed ROOT: every shared library that an ELF file of ROOT's /usr
# needs (DT_NEEDED) is in ROOT (a package left out of the closure must not
# take one that stays)
check_needed() {
    local root=$1 have missing
    have=$(find "$root/usr/lib" -name '*.so*' -printf '%f\n' | LC_ALL=C sort -u)
    missing=$(find "$root/usr" -type f \( -name '*.so*' -o -perm -u+x \) -print0 |
        xargs -0r readelf -d 2>/dev/null |
        awk '/^File: / { f = $2 } /\(NEEDED\)/ { gsub(/.*\[|\].*/, ""); print $0 " " f }' |
        LC_ALL=C sort -u | LC_ALL=C join -v1 - <(echo "$have") | head -5) || true
    [ -z "$missing" ] || die "libraries missing from the $RELEASE image (needed by): $(echo "$missing" | sed "s,$root,," | tr '\n' ';')"
}

# unpack_debs ROOT: dpkg -x the closure into ROOT, prune, alternatives, ldconfig
unpack_debs() {
    local root=$1 name ver arch deb ctl d
    ctl=$(mktemp -d)
    while read -r name ver arch; do
        deb=$(deb_path "$name" "$ver" "$arch")
        dpkg -x "$deb" "$root" || die "dpkg -x $deb failed"
        # Maintainer scripts do not run; their update-alternatives links are
        # made below (e.g. libblas.so.3).
        if dpkg -e "$deb" "$ctl/$name" 2>/dev/null && [ -f "$ctl/$name/postinst" ]; then
            cp "$ctl/$name/postinst" "$ctl/$name.postinst"
        fi
        rm -rf "${ctl:?}/$name"
    done <<< "$closure"
    if [ "$RELEASE" != bookworm ]; then
        # Merged /usr, as the release's usrmerge/base-files make it: its
        # packages put everything under /usr and the programs' interpreter
        # is /lib64/ld-linux-x86-64.so.2.
        for d in bin sbin lib lib64; do
            mkdir -p "$root/usr/$d"
            if [ -d "$root/$d" ] && [ ! -L "$root/$d" ]; then
                cp -a "$root/$d/." "$root/usr/$d/" && rm -rf "${root:?}/$d" || die "merging /$d into /usr/$d failed"
            fi
            ln -sfn "usr/$d" "$root/$d"
        done
    fi
    if [ -n "$mpi" ] && [ "$RELEASE" = trixie ] && [ -n "$MPI_DROP_TRIXIE" ]; then
        rm -f "$root"/usr/lib/x86_64-linux-gnu/ucx/*rocm*
        check_needed "$root"
    fi
    # Docs, man pages, locales: not needed in a guest.
    rm -rf "$root"/usr/share/{doc,man,info,locale,lintian,linda,bug,bash-completion,zsh,gtk-doc,help,menu} \
           "$root"/usr/lib/x86_64-linux-gnu/gconv
    PYTHONPATH=$here${PYTHONPATH:+:$PYTHONPATH} PYTHONDONTWRITEBYTECODE=1 python3 -m dn2scripts.alternatives "$root" "$ctl"
    rm -rf "$ctl"
    mkdir -p "$root/etc"
    [ -f "$root/etc/ld.so.conf" ] || echo 'include /etc/ld.so.conf.d/*.conf' > "$root/etc/ld.so.conf"
    ldconfig -r "$root" 2>/dev/null || ldconfig -r "$root" || die "ldconfig -r $root failed"
}

closure=
if [ ${#pkg_list[@]} -gt 0 ]; then
    command -v apt-get >/dev/null || die "--packages needs apt-get and dpkg (a Debian host)"
    [ -n "$APT_DIR" ] && release_lists
    closure=$(resolve_closure "${pkg_list[@]}") || exit 1
    if [ -n "$mpi" ] && [ "$RELEASE" = trixie ] && [ -n "$MPI_DROP_TRIXIE" ]; then
        closure=$(awk -v drop=" $MPI_DROP_TRIXIE " '!index(drop, " " $1 " ")' <<< "$closure")
    fi
fi
mpi_export=
[ -n "$mpi" ] && [ "$RELEASE" = bookworm ] && [ -d "$MPI_EXPORT" ] && mpi_export=$MPI_EXPORT

# The release's own MPI pieces (--mpi, a release other than bookworm): the
# -dev packages they compile against (unpacked, not in the image) and the
# sources (linux-guest/pmi, linux-guest/ofi, libdimmnet2).
REL_DEV_PACKAGES="libpmix-dev libfabric-dev"
REL_EXPORT=$OUT_DIR/export-mpi-$RELEASE
REL_SOURCES=()
dev_closure=
if [ -n "$mpi" ] && [ "$RELEASE" != bookworm ]; then
    dev_closure=$(resolve_closure $REL_DEV_PACKAGES) || exit 1
    dev_closure=$(awk -v want=" $REL_DEV_PACKAGES " 'index(want, " " $1 " ")' <<< "$dev_closure")
    [ "$(wc -l <<< "$dev_closure")" = 2 ] || die "apt did not resolve $REL_DEV_PACKAGES in $RELEASE"
    REL_SOURCES=("$DN2_TOP"/linux-guest/pmi/{dn2-pmix-server.c,pmi-dn2.c,pmi-limits.h}
                 "$DN2_TOP"/linux-guest/ofi/*.[ch]
                 "$DN2_TOP"/linux-guest/lib/{libdimmnet2.c,board-mem.c,board-dev.c,dn2msg.c,*.h}
                 "$DN2_TOP"/include/dimmnet2/*.h)
fi

# build_release_mpi ROOT: dn2-pmix-server and the libfabric provider for
# the release, with the host's gcc against its headers (the unpacked -dev
# packages) and its libraries (in ROOT, the image's root): into $REL_EXPORT
build_release_mpi() {
    local root=$1 dev=$OUT_DIR/dev-$RELEASE name ver arch L pmix_h pmix_so fab_so blog
    L=$root/usr/lib/x86_64-linux-gnu
    blog=$OUT_DIR/export-mpi-$RELEASE.log
    rm -rf "$dev" "$REL_EXPORT"
    mkdir -p "$dev" "$REL_EXPORT/bin" "$REL_EXPORT/lib/libfabric"
    fetch_debs "$dev_closure"
    while read -r name ver arch; do
        dpkg -x "$(deb_path "$name" "$ver" "$arch")" "$dev" || die "dpkg -x of $name ($RELEASE) failed"
    done <<< "$dev_closure"
    pmix_h=$(find "$dev" -name pmix.h -path '*/include/*' -print -quit)
    [ -n "$pmix_h" ] || die "$RELEASE's libpmix-dev has no pmix.h"
    [ -f "$dev/usr/include/rdma/fabric.h" ] || die "$RELEASE's libfabric-dev has no rdma/fabric.h"
    pmix_so=$(find -L "$L" -maxdepth 3 -name 'libpmix.so.2' -print -quit)
    fab_so=$L/libfabric.so.1
    [ -n "$pmix_so" ] || die "the $RELEASE image has no libpmix.so.2 (is libpmix2t64 among its packages?)"
    [ -e "$fab_so" ] || die "the $RELEASE image has no libfabric.so.1"
    # The host's glibc links (its symbol versions are older than the
    # release's); the release's libraries may need newer ones, which the
    # image's glibc has: --allow-shlib-undefined, -rpath-link to find theirs.
    local ldf=(-Wl,-rpath-link,"$L" -Wl,--allow-shlib-undefined)
    {
        echo "# dn2-pmix-server against $(basename "$(dirname "$(dirname "$pmix_h")")") headers"
        gcc -O2 -Wall -o "$REL_EXPORT/bin/dn2-pmix-server" \
            "$DN2_TOP/linux-guest/pmi/dn2-pmix-server.c" "$DN2_TOP/linux-guest/pmi/pmi-dn2.c" \
            -I "$(dirname "$pmix_h")" -I "$DN2_TOP/linux-guest/pmi" "${ldf[@]}" "$pmix_so" -lpthread
    } > "$blog" 2>&1 || die "compiling dn2-pmix-server against $RELEASE's libpmix-dev failed: $(grep -m1 -E 'error|undefined' "$blog") (log: $blog)"
    {
        echo "# the libfabric provider against $RELEASE's libfabric-dev"
        gcc -std=gnu11 -O2 -Wall -Wextra -fPIC -fvisibility=hidden -shared -D_FILE_OFFSET_BITS=64 \
            -o "$REL_EXPORT/lib/libfabric/libdimmnet2-fi.so" \
            -I "$DN2_TOP/include" -I "$DN2_TOP/linux-guest/lib" -I "$DN2_TOP/linux-guest/ofi" -I "$dev/usr/include" \
            "$DN2_TOP"/linux-guest/ofi/dn2fi_{init,ep,rdm,dgram,xmit,av,cq,util}.c \
            "$DN2_TOP"/linux-guest/lib/{libdimmnet2,board-mem,board-dev,dn2msg}.c \
            -Wl,--no-undefined "${ldf[@]}" "$fab_so" -lpthread
    } >> "$blog" 2>&1 || die "compiling the libfabric provider against $RELEASE's libfabric-dev failed: $(grep -m1 -E 'error|undefined' "$blog") (log: $blog)"
    strip "$REL_EXPORT/bin/dn2-pmix-server" "$REL_EXPORT/lib/libfabric/libdimmnet2-fi.so" 2>/dev/null || true
    rm -rf "$dev"
}

# The /init script (kept here so that one file describes the guest).
init_script() {
    cat <<'EOF'
#!/bin/sh
# DIMMnet-2 guest: generated by scripts/build-initramfs.sh (see its header
# and docs/cluster.md for the dn2.* kernel command-line arguments)
export PATH=/opt/dn2/bin:/bin:/sbin:/usr/bin:/usr/sbin
export LD_LIBRARY_PATH=/opt/dn2/lib HOME=/root
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev 2>/dev/null
exec </dev/console >/dev/console 2>&1
# Keep kernel messages from interleaving with the command's output.
dmesg -n 1 2>/dev/null
[ -d /home/mpi ] && chown 1000:1000 /home/mpi
cmdline=$(cat /proc/cmdline)
# arg NAME: the value of dn2.NAME= ("..." or up to the next space)
arg() {
    _v=$(echo "$cmdline" | sed -n -E "s/(^|.* )dn2\.$1=\"([^\"]*)\".*/\2/p")
    [ -n "$_v" ] || _v=$(echo "$cmdline" | sed -n -E "s/(^|.* )dn2\.$1=([^ \"]*).*/\2/p")
    echo "$_v"
}
say() { echo "dn2-init: $*"; }
run=$(arg run); mode=$(arg mode)
node=$(arg node); nodes=$(arg nodes); wid=$(arg wid); board=$(arg board)
job=$(arg job); jobid=$(arg jobid); ranks=$(arg ranks)
linkwait=$(arg linkwait); barrier=$(arg barrier)
[ -n "$run" ] || [ "$mode" = serve ] || run="dn2-probe 0"
[ -n "$node" ] && export DN2_NODE=$node DN2_RANK=$node
[ -n "$nodes" ] && export DN2_NODES=$nodes
export DN2_WID=${wid:-0}
[ -n "$job" ] && export DN2_HTTP=$job
[ -n "$jobid" ] && export DN2_JOBID=$jobid
ip link set lo up 2>/dev/null

# Networking: a virtio NIC (vendor 0x1af4) on QEMU's user network (slirp).
if [ "$(arg net)" != off ] && grep -qs 0x1af4 /sys/bus/pci/devices/*/vendor; then
    for m in /lib/modules/dn2-net/*.ko; do
        [ -e "$m" ] && insmod "$m" 2>/dev/null
    done
    i=0
    while [ ! -e /sys/class/net/eth0 ] && [ $i -lt 100 ]; do usleep 100000; i=$((i + 1)); done
    if [ ! -e /sys/class/net/eth0 ]; then
        say "virtio NIC present but no eth0 (driver modules missing?)"
    elif ip link set eth0 up && ip addr add 10.0.2.15/24 dev eth0 &&
         ip route add default via 10.0.2.2; then
        echo "nameserver 10.0.2.3" > /etc/resolv.conf
        echo "DN2-NET eth0 10.0.2.15/24 gw 10.0.2.2"
    else
        say "configuring eth0 failed"
    fi
    # dn2.ether=ADDR/LEN: the guest-to-guest Ethernet (scripts/cluster.sh
    # --ethernet), the NIC whose MAC starts 52:54:00:77; dn2.ethermtu=N.
    ether=$(arg ether)
    if [ -n "$ether" ]; then
        i=0 dev=
        while [ -z "$dev" ] && [ $i -lt 100 ]; do
            for a in /sys/class/net/*/address; do
                case $(cat "$a") in 52:54:00:77:*) dev=${a%/address}; dev=${dev##*/} ;; esac
            done
            [ -n "$dev" ] || { usleep 100000; i=$((i + 1)); }
        done
        emtu=$(arg ethermtu)
        [ -n "$emtu" ] && [ -n "$dev" ] && ip link set "$dev" mtu "$emtu"
        if [ -n "$dev" ] && ip link set "$dev" up && ip addr add "$ether" dev "$dev"; then
            echo "DN2-NET $dev $ether mtu $(cat /sys/class/net/$dev/mtu)"
        else
            say "configuring the guest Ethernet ($ether) failed: no NIC with MAC 52:54:00:77:*"
        fi
    fi
fi

# URL without the node's token (for messages: the console is a log)
shown() { echo "$1" | sed 's,/n/\([0-9]*\)/[0-9a-f]*,/n/\1/-,'; }
# A failed job start: reported like a command that failed with rc=125.
start_failed() {
    echo "DN2-START-FAILED $*"
    echo "DN2-GUEST-BEGIN"
    say "job start failed: $*"
    echo "DN2-GUEST-END rc=125"
    sync
    [ "$mode" = serve ] || poweroff -f
    exec sleep 2147483647
}
# fetch URL FILE SECONDS [wget options]: GET (or POST) with retries, one
# second apart, for up to SECONDS
fetch() {
    _u=$1 _f=$2 _end=$(($(date +%s) + $3))
    shift 3
    until timeout 40 wget -q -O "$_f.part" "$@" "$_u" 2>/tmp/dn2-wget.err; do
        [ "$(date +%s)" -ge "$_end" ] && { rm -f "$_f.part"; return 1; }
        sleep 1
    done
    mv "$_f.part" "$_f"
}

# fw_cfg NAME FILE: copies the QEMU fw_cfg file NAME (QEMU -fw_cfg
# name=NAME,file=...) into FILE; false when there is none.
fw_cfg_loaded=
fw_cfg() {
    if [ -z "$fw_cfg_loaded" ]; then
        for m in /lib/modules/dn2-fw/*.ko; do
            [ -e "$m" ] && insmod "$m" 2>/dev/null
        done
        fw_cfg_loaded=1
    fi
    _f=/sys/firmware/qemu_fw_cfg/by_name/$1/raw
    i=0
    while [ ! -e "$_f" ] && [ $i -lt 50 ]; do usleep 100000; i=$((i + 1)); done
    [ -e "$_f" ] && cat "$_f" > "$2"
}

# Job start (docs/cluster.md): the node's credential, link up, join, wait
# for the rank table.
if [ -n "$job" ]; then
    # The launcher's token for this node: a fw_cfg file (QEMU -fw_cfg
    # name=opt/dn2/token), readable by root only, never on a command line.
    (umask 077; fw_cfg opt/dn2/token /tmp/dn2-token)
    token=$(cat /tmp/dn2-token 2>/dev/null)
    rm -f /tmp/dn2-token
    [ -n "$token" ] || start_failed "no job server credential: no fw_cfg file opt/dn2/token (is the qemu_fw_cfg module in the image? QEMU started without -fw_cfg?)"
    job=$job/n/$node/$token
    export DN2_HTTP=$job
    eval "$(dn2-lid -b "${board:-0}" -w "${linkwait:-120}" -e 2>/tmp/dn2-lid.err)"
    if [ "${DN2_LINK_UP:-0}" = 1 ]; then
        echo "DN2-LINK up lid=$DN2_LID"
    else
        echo "DN2-LINK down state=${DN2_LINK:-none}"
    fi
    export DN2_LID
    fetch "$job/join?job=$jobid&node=$node&lid=${DN2_LID:-0}&link=${DN2_LINK:-0}&wid=$DN2_WID" \
          /tmp/dn2-join 60 || start_failed "cannot reach the job server $(shown "$job"): $(tail -1 /tmp/dn2-wget.err)"
    if [ -s /tmp/dn2-lid.err ]; then
        start_failed "$(head -1 /tmp/dn2-lid.err)"
    fi
    [ "${DN2_LINK_UP:-0}" = 1 ] || start_failed "link of board ${board:-0} not up after ${linkwait:-120} s (SMA LID link state ${DN2_LINK:-?})"
    echo "DN2-JOINED node=$node lid=$DN2_LID"
    [ -n "$ranks" ] || ranks="$job/ranks?job=$jobid&node=$node&wait=1"
fi
case $ranks in
    http://*)
        fetch "$ranks" /opt/dn2/ranks "${barrier:-900}" \
            || start_failed "no rank table from $(shown "$ranks"): $(tail -1 /tmp/dn2-wget.err)"
        export DN2_RANKS=/opt/dn2/ranks ;;
    fw_cfg:*)
        fw_cfg "${ranks#fw_cfg:}" /opt/dn2/ranks \
            || start_failed "no rank table: no fw_cfg file ${ranks#fw_cfg:} (QEMU started without -fw_cfg name=${ranks#fw_cfg:},file=...? qemu_fw_cfg module missing from the image?)"
        export DN2_RANKS=/opt/dn2/ranks ;;
    '') ;;
    *) export DN2_RANKS=$ranks ;;
esac
# No job server, a rank table known at boot (cluster.sh --virtual-time):
# the board's link, then the table's LID for this node checked against it.
if [ -z "$job" ] && [ -n "$linkwait" ] && [ -n "${DN2_RANKS:-}" ] && [ -n "$node" ]; then
    eval "$(dn2-lid -b "${board:-0}" -w "$linkwait" -e 2>/tmp/dn2-lid.err)"
    if [ "${DN2_LINK_UP:-0}" = 1 ]; then
        echo "DN2-LINK up lid=$DN2_LID"
    else
        echo "DN2-LINK down state=${DN2_LINK:-none}"
    fi
    [ -s /tmp/dn2-lid.err ] && start_failed "$(head -1 /tmp/dn2-lid.err)"
    [ "${DN2_LINK_UP:-0}" = 1 ] || start_failed "link of board ${board:-0} not up after $linkwait s (SMA LID link state ${DN2_LINK:-?})"
    export DN2_LID
fi
if [ -n "$job" ] || { [ -n "$linkwait" ] && [ -n "${DN2_RANKS:-}" ] && [ -n "$node" ]; }; then
    mine=$(awk -v n="$node" '$1 == n { print $2 }' "$DN2_RANKS")
    [ "$mine" = "$DN2_LID" ] || start_failed "the rank table gives rank $node LID '$mine', the board has $DN2_LID"
    echo "DN2-RANKS $(awk 'NF >= 3 { n++ } END { print n + 0 }' "$DN2_RANKS") entries"
fi

case $run in
    @fw_cfg:*)
        fw_cfg "${run#@fw_cfg:}" /tmp/dn2-run.sh \
            || start_failed "no command: no fw_cfg file ${run#@fw_cfg:} (QEMU started without -fw_cfg name=${run#@fw_cfg:},file=...?)"
        run=". /tmp/dn2-run.sh" ;;
    @*) fetch "$job/${run#@}" /tmp/dn2-run.sh 30 || start_failed "cannot fetch $(shown "$job/${run#@}")"
        run=". /tmp/dn2-run.sh" ;;
esac
if [ -n "$run" ]; then
    echo "DN2-GUEST-BEGIN"
    if [ "$run" = sh ]; then
        setsid cttyhack sh -l
        rc=$?
    else
        # A subshell, so that "exit" in the command does not end init.
        ( eval "$run" )
        rc=$?
    fi
    echo "DN2-GUEST-END rc=$rc"
fi

if [ "$mode" = serve ]; then
    # Development mode: a shell on a second serial port, and jobs from the
    # job server (scripts/cluster.sh exec), one at a time, until killed.
    shell=$(arg shell)
    if [ -n "$shell" ] && [ -e "/dev/$shell" ]; then
        ( while :; do setsid -c sh -l <"/dev/$shell" >"/dev/$shell" 2>&1; sleep 1; done ) &
    fi
    echo "DN2-SERVING"
    last=0
    while :; do
        if [ -n "$job" ] && timeout 60 wget -q -O /tmp/dn2-job.sh "$job/job?job=$jobid&node=$node&after=$last" 2>/dev/null; then
            id=$(sed -n '1s/^# dn2-job \([0-9][0-9]*\).*/\1/p' /tmp/dn2-job.sh)
            [ -n "$id" ] || { sleep 1; continue; }
            echo "DN2-JOB-BEGIN $id"
            ( cd /root && . /tmp/dn2-job.sh ) > /tmp/dn2-job.out 2>&1 < /dev/null
            rc=$?
            cat /tmp/dn2-job.out
            echo "DN2-JOB-END $id rc=$rc"
            fetch "$job/result?job=$jobid&node=$node&id=$id&rc=$rc" /tmp/dn2-result 30 \
                --post-file /tmp/dn2-job.out || say "could not report job $id"
            last=$id
        else
            sleep 1
        fi
    done
fi
sync
poweroff -f
EOF
}

# -------------------------------------------------------------- up to date?
CFLAGS=(-static -O2 -Wall -Wextra -I "$DN2_TOP/include")
inputs_hash() {
    {
        cat "$PROBE_SRC" "$LID_SRC" "$ABI_H" "$DN2_TOP/tests/tap/dn2-tap.h" "$BUSYBOX" \
            "$here/build-initramfs.sh" "$here/lib.sh" "$here/dn2scripts/alternatives.py" | sha256sum
        gcc --version | head -1
        echo "${CFLAGS[*]}"
        echo "mpi:$mpi"
        # (only another release adds lines: bookworm's key stays as it was)
        if [ "$RELEASE" != bookworm ]; then
            echo "release:$RELEASE"
            printf '%s\n' "$dev_closure"
            [ ${#REL_SOURCES[@]} -eq 0 ] || cat "${REL_SOURCES[@]}" | sha256sum
        fi
        printf '%s\n' "$closure"
        for f in "${net_modules[@]}"; do echo "module:$f"; done
        [ ${#net_modules[@]} -eq 0 ] || cat "${net_modules[@]}" | sha256sum
        for f in "${fw_modules[@]}"; do echo "fw-module:$f"; done
        [ ${#fw_modules[@]} -eq 0 ] || cat "${fw_modules[@]}" | sha256sum
        # The export directory: names, modes, link targets and contents
        # (bin/dn2-lid is ours: LID_SRC stands for it).
        if [ -d "$EXPORT" ]; then
            (cd "$EXPORT" && find . -mindepth 1 ! -path ./bin/dn2-lid -printf '%p %y %m %l\n' | LC_ALL=C sort)
            (cd "$EXPORT" && find . -type f ! -path ./bin/dn2-lid -print0 | LC_ALL=C sort -z | xargs -0r sha256sum)
            echo "export:$EXPORT"
        fi
        if [ -n "$mpi_export" ]; then
            (cd "$mpi_export" && find . -mindepth 1 -printf '%p %y %m %l\n' | LC_ALL=C sort)
            (cd "$mpi_export" && find . -type f -print0 | LC_ALL=C sort -z | xargs -0r sha256sum)
        fi
        for d in "${extra_dirs[@]}"; do
            (cd "$d" && find . -type f -print0 | LC_ALL=C sort -z | xargs -0r sha256sum)
            echo "extra:$d"
        done
    } | sha256sum | cut -c1-32
}

mkdir -p "$OUT_DIR"
# One builder at a time (the guest test and the demo may run together).
exec 9> "$OUT_DIR/.initramfs.lock"
flock 9

# dn2-lid is served to running guests too (build/guest/export/bin).
export_lid() {
    [ -x "$OUT_DIR/dn2-lid" ] || return 0
    mkdir -p "$EXPORT/bin"
    cmp -s "$OUT_DIR/dn2-lid" "$EXPORT/bin/dn2-lid" || cp "$OUT_DIR/dn2-lid" "$EXPORT/bin/dn2-lid"
}

mkdir -p "$EXPORT/bin" 2>/dev/null || true
want=$(inputs_hash)
if [ -z "$force" ] && [ -f "$OUT" ] && [ "$(cat "$STAMP" 2>/dev/null)" = "$want" ]; then
    export_lid
    echo "$OUT"
    exit 0
fi

# ------------------------------------------------------------------- build
log "building guest initramfs $(basename "$OUT")"
root=$OUT_DIR/root-$(basename "$OUT" .cpio.lz4)
rm -rf "$root"
mkdir -p "$root"
# Debian packages first: the project's files and busybox's /bin/sh win.
if [ -n "$closure" ]; then
    fetch_debs "$closure"
    unpack_debs "$root"
fi
if [ -n "$dev_closure" ]; then
    build_release_mpi "$root"
    mpi_export=$REL_EXPORT
fi
mkdir -p "$root"/{bin,sbin,usr/bin,usr/sbin,proc,sys,dev,tmp,root,etc}

gcc "${CFLAGS[@]}" -o "$OUT_DIR/dn2-probe" "$PROBE_SRC" \
    || die "compiling $PROBE_SRC failed"
strip "$OUT_DIR/dn2-probe" 2>/dev/null || true
cp "$OUT_DIR/dn2-probe" "$root/bin/dn2-probe"
gcc "${CFLAGS[@]}" -o "$OUT_DIR/dn2-lid" "$LID_SRC" \
    || die "compiling $LID_SRC failed"
strip "$OUT_DIR/dn2-lid" 2>/dev/null || true
cp "$OUT_DIR/dn2-lid" "$root/bin/dn2-lid"

# The project's guest programs, module and libraries.
mkdir -p "$root/opt/dn2/bin"
if [ -d "$EXPORT" ]; then
    cp -a "$EXPORT/." "$root/opt/dn2/"
fi
[ -n "$mpi_export" ] && cp -a "$mpi_export/." "$root/opt/dn2/"
cp "$OUT_DIR/dn2-lid" "$root/opt/dn2/bin/dn2-lid"

# Kernel modules into /lib/modules/DIR, numbered in load order.
copy_modules() { # copy_modules DIR FILE...
    local dir=$1 n=0 f
    shift
    [ $# -gt 0 ] || return 0
    mkdir -p "$root/lib/modules/$dir"
    for f in "$@"; do
        n=$((n + 1))
        cp "$f" "$root/lib/modules/$dir/$(printf '%02d' $n)-$(basename "$f")"
    done
}
copy_modules dn2-net ${net_modules[@]+"${net_modules[@]}"}   # the NIC drivers
copy_modules dn2-fw ${fw_modules[@]+"${fw_modules[@]}"}      # qemu_fw_cfg (the node's token)

cp "$BUSYBOX" "$root/bin/busybox"
# /init and every script here are busybox sh, whatever a package shipped.
rm -f "$root/bin/sh"
ln -s busybox "$root/bin/sh"
# Applet links: busybox --list-full gives e.g. "sbin/poweroff".
n=0
while read -r applet; do
    [ -n "$applet" ] || continue
    case $applet in */*) ;; *) applet=bin/$applet ;; esac
    [ -e "$root/$applet" ] && continue
    mkdir -p "$root/$(dirname "$applet")"
    ln -s "$(realpath -m --relative-to="$root/$(dirname "$applet")" "$root/bin/busybox")" "$root/$applet"
    n=$((n + 1))
done < <("$BUSYBOX" --list-full 2>/dev/null || "$BUSYBOX" --list)
[ "$n" -gt 10 ] || die "busybox at $BUSYBOX listed only $n applets"
[ -e "$root/sbin/poweroff" ] || [ -e "$root/bin/poweroff" ] || die "busybox has no poweroff applet"

init_script > "$root/init"
chmod 755 "$root/init"
echo "root:x:0:0:root:/root:/bin/sh" > "$root/etc/passwd"
if [ -n "$closure" ]; then
    # glibc programs look users and groups up; /tmp for every user.
    echo "root:x:0:" > "$root/etc/group"
    echo "passwd: files"$'\n'"group: files"$'\n'"hosts: files" > "$root/etc/nsswitch.conf"
    chmod 1777 "$root/tmp"
fi
if [ -n "$mpi" ]; then
    # The ranks' unprivileged user (scripts/mpirun.sh; /init gives it its
    # home directory).
    echo "mpi:x:1000:1000:MPI ranks:/home/mpi:/bin/sh" >> "$root/etc/passwd"
    echo "mpi:x:1000:" >> "$root/etc/group"
    mkdir -p "$root/home/mpi"
fi

for d in "${extra_dirs[@]}"; do
    cp -a "$d/." "$root/"
done

# Reproducible: sorted names, root-owned, fixed mtimes.  LZ4 (the legacy
# frame the kernel's initramfs unpacker reads): its decompression is about
# a tenth of gzip's instructions (the MPI image: 0.07 against 0.75 s of a
# host CPU), which every guest pays at boot, under -icount before its
# lock-step; the image is about a fifth larger.
find "$root" -exec touch -h -d @0 {} +
(cd "$root" && find . -mindepth 1 | LC_ALL=C sort \
    | cpio -o -H newc -R 0:0 --reproducible --quiet) \
    | lz4 -l -9 -q > "$OUT.tmp" || die "cpio/lz4 failed"
mv "$OUT.tmp" "$OUT"
# What the image takes unpacked (tmpfs pages), for the guest's memory.
find "$root" -type f -printf '%s\n' | awk '{ k += int(($1 + 4095) / 4096) * 4 } END { print "unpacked_kib=" k + 0 }' > "$OUT.size"
echo "$want" > "$STAMP"
export_lid
log "initramfs: $OUT ($(du -h "$OUT" | cut -f1), $(( ($(sed -n 's/^unpacked_kib=//p' "$OUT.size") + 1023) / 1024 )) MiB unpacked)"
echo "$OUT"
