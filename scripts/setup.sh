#!/usr/bin/env bash
# Installs everything the project needs on a fresh Debian 12 (bookworm) machine,
# and fetches (into a cache outside the work tree) the QEMU source, firmware,
# guest kernel and guest userland. Safe and fast to run again.
#
#   scripts/setup.sh [--no-guest]
#
#   --no-guest   host packages, QEMU source and firmware only (no guest
#                kernel, its headers or busybox)
#   -h, --help   this text
#
# Package sources: we never write a registry host name. The deb-src and
# bookworm-backports entries are derived from the machine's own
# /etc/apt/sources.list.d/debian.sources (its first non-security stanza).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"

need_root() {
    if [ "$(id -u)" != 0 ]; then
        die "setup needs root to run apt-get (run as root, or install the packages listed in scripts/setup.sh yourself)"
    fi
}

derive_sources() {
    local src=/etc/apt/sources.list.d/debian.sources
    local out=/etc/apt/sources.list.d/dimmnet2-derived.sources
    [ -f "$out" ] && return 0
    [ -f "$src" ] || die "$src not found: cannot derive deb-src/backports entries"
    # Copy the first stanza that is not the security archive; keep its URIs and
    # Signed-By, set Types to deb + deb-src and Suites to bookworm + backports.
    awk -v RS= -v ORS='\n\n' '
        !/security/ && !done {
            n = split($0, L, "\n"); s = ""
            for (i = 1; i <= n; i++) {
                if (L[i] ~ /^#/) continue
                if (L[i] ~ /^Types:/)  L[i] = "Types: deb-src"
                if (L[i] ~ /^Suites:/) L[i] = "Suites: bookworm bookworm-updates bookworm-backports"
                s = s L[i] "\n"
            }
            printf "%s\n", s
            t = s
            sub(/Types: deb-src/, "Types: deb", t)
            sub(/Suites: [^\n]*/, "Suites: bookworm-backports", t)
            printf "%s", t
            done = 1
        }' "$src" > "$out.tmp"
    grep -q '^URIs:' "$out.tmp" || die "could not derive apt entries from $src"
    mv "$out.tmp" "$out"
    log "derived apt entries in $out"
}

apt_install() {
    local stamp="$DN2_CACHE/stamps/apt-$(echo "$*" | md5sum | cut -c1-12)"
    [ -f "$stamp" ] && return 0
    need_root
    derive_sources
    if [ ! -f "$DN2_CACHE/stamps/apt-updated" ]; then
        log "apt-get update"
        apt-get update -qq
        touch "$DN2_CACHE/stamps/apt-updated"
    fi
    log "apt-get install $*"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq -o APT::Sandbox::User=root \
        -o Dir::Cache::archives="$DN2_CACHE/apt-archives" "$@" >/dev/null
    touch "$stamp"
}

# Build tools and libraries (QEMU 10.0 needs meson >= 1.5: backports).
host_packages() {
    mkdir -p "$DN2_CACHE/apt-archives/partial"
    apt_install ninja-build python3-venv libglib2.0-dev libpixman-1-dev \
        libslirp-dev flex bison pkg-config libfdt-dev ccache cpio xz-utils \
        gcc make dpkg-dev patch iproute2 clang valgrind tshark libfabric-dev python3-pytest jq lz4 \
        strace
    # Open MPI's headers and mpicc: tests/mpi's programs are compiled on the
    # host for the MPI guest image (docs/mpi.md); the image itself gets its
    # packages with apt-get download (scripts/build-initramfs.sh --mpi).
    apt_install --no-install-recommends libopenmpi-dev
    # Slurm's controller, node daemon and client: the multi-host test
    # (tests/cluster/multihost-test.sh) starts its own in network
    # namespaces, with its own configuration (no munge, no service).
    apt_install --no-install-recommends slurmctld slurmd slurm-client
    apt_install -t bookworm-backports meson python3-pycotap
}

# QEMU 10.0.2 source tarball (the .dsc answers 404: check the tarball, not the exit code).
qemu_source() {
    local dir="$DN2_CACHE/src"
    mkdir -p "$dir"
    if ! ls "$dir"/qemu_"$QEMU_VERSION"*.orig.tar.xz >/dev/null 2>&1; then
        log "fetching QEMU $QEMU_VERSION source (apt-get source)"
        (cd "$dir" && apt-get source -o APT::Sandbox::User=root --download-only "qemu/bookworm-backports" >/dev/null 2>&1 || true)
        ls "$dir"/qemu_"$QEMU_VERSION"*.orig.tar.xz >/dev/null 2>&1 \
            || die "QEMU $QEMU_VERSION source tarball not found after apt-get source (is bookworm-backports deb-src reachable?)"
    fi
}

# Fetch a binary package's files into $DN2_CACHE/pkgs/<name> without installing it.
extract_pkg() {
    local pkg=$1 dest="$DN2_CACHE/pkgs/$1"
    [ -f "$dest/.done" ] && return 0
    mkdir -p "$DN2_CACHE/debs" "$dest"
    (cd "$DN2_CACHE/debs" && ls "${pkg}"_*.deb >/dev/null 2>&1 || apt-get download -o APT::Sandbox::User=root -qq "$pkg" >/dev/null) \
        || die "apt-get download $pkg failed"
    dpkg -x "$(ls -t "$DN2_CACHE/debs/${pkg}"_*.deb | head -1)" "$dest"
    touch "$dest/.done"
}

# Firmware (SeaBIOS + QEMU option ROMs) into $DN2_CACHE/firmware, used with -L.
firmware() {
    local fw="$DN2_CACHE/firmware"
    [ -f "$fw/bios-256k.bin" ] && return 0
    extract_pkg seabios
    extract_pkg qemu-system-data
    mkdir -p "$fw"
    cp "$DN2_CACHE/pkgs/seabios/usr/share/seabios/"*.bin "$fw/"
    cp "$DN2_CACHE/pkgs/qemu-system-data/usr/share/qemu/"{linuxboot_dma.bin,linuxboot.bin,kvmvapic.bin,pvh.bin,multiboot_dma.bin} "$fw/" 2>/dev/null || true
    [ -f "$fw/bios-256k.bin" ] || die "bios-256k.bin missing after extracting seabios"
}

# Guest kernel (Debian cloud flavour), its headers (for the module) and busybox.
guest_packages() {
    local kpkg
    kpkg=$(guest_kernel_pkg)
    extract_pkg "$kpkg"
    extract_pkg busybox-static
    apt_install "${kpkg/linux-image/linux-headers}"
}

guest_kernel_pkg() {
    # The newest linux-image-6.1.0-NN-cloud-amd64 that apt knows.
    apt-cache search --names-only '^linux-image-6\.1\.0-[0-9]+-cloud-amd64$' 2>/dev/null \
        | awk '{print $1}' | sort -t- -k5,5n | tail -1 | grep . \
        || die "no linux-image-6.1.0-*-cloud-amd64 package found (apt-get update?)"
}

no_guest=
dn2_split_opts "$@"
set -- "${DN2_ARGS[@]}"
while [ $# -gt 0 ]; do
    case $1 in
        --no-guest) no_guest=1; shift ;;
        -h|--help) dn2_usage; exit 0 ;;
        *) usage_error "unknown argument: $1" ;;
    esac
done

main() {
    mkdir -p "$DN2_CACHE/stamps"
    host_packages
    qemu_source
    firmware
    if [ -z "$no_guest" ]; then
        guest_packages
    fi
    log "setup done (cache: $DN2_CACHE)"
}
main
