#!/usr/bin/env bash
# Builds the guest initramfs: build/guest/initramfs.cpio.gz
#
#   scripts/build-initramfs.sh [--force] [--print]
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
#   /init       the guest's whole userland; it
#     - mounts proc, sys and devtmpfs;
#     - if a virtio NIC is present: loads the modules above and configures
#       eth0 as QEMU's user network (slirp) expects: 10.0.2.15/24, gateway
#       10.0.2.2 (the host), DNS 10.0.2.3;  dn2.net=off skips this;
#     - exports dn2.node=I, dn2.nodes=N, dn2.wid=W to the command as
#       DN2_NODE (and DN2_RANK), DN2_NODES, DN2_WID;
#     - with dn2.job=URL (the job server, e.g. http://10.0.2.2:PORT, and
#       dn2.jobid=ID) does the job-start handshake of docs/cluster.md: waits
#       for the board's link (dn2-lid -w, dn2.linkwait=S, default 120),
#       prints "DN2-LINK up lid=L", joins (GET URL/join?...), waits for the
#       rank table URL/ranks (dn2.barrier=S, default 900) and stores it in
#       /opt/dn2/ranks; exports DN2_LID, DN2_HTTP=URL, DN2_RANKS;
#     - dn2.ranks=URL|PATH names a rank table explicitly (fetched when a
#       URL) and is exported as DN2_RANKS (the file's path);
#     - runs the command given as dn2.run=CMD (quote it to have spaces:
#       dn2.run="dn2-probe 0; dn2-probe 1"; dn2.run=@NAME fetches the
#       script URL/NAME from the job server and sources it), default
#       "dn2-probe 0", between the lines
#           DN2-GUEST-BEGIN
#           DN2-GUEST-END rc=<exit status>
#       (a failed handshake ends with rc=125 after a DN2-START-FAILED line);
#     - powers off (poweroff -f).  dn2.run=sh gives an interactive shell.
#       dn2.mode=serve instead keeps the guest up: a shell on the port named
#       by dn2.shell= (e.g. ttyS1) and a loop that runs jobs from URL/job
#       (scripts/cluster.sh -i / exec).
# Extra files: every directory named in $DN2_GUEST_EXTRA (colon-separated)
# is copied into the root as is (e.g. a driver module and its test).
#
# Rebuilt only when an input changed (a hash of all inputs is kept in
# build/guest/initramfs.stamp); --force rebuilds anyway.  --print only
# prints the output path.  Prints the initramfs path on stdout.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"

OUT_DIR=$DN2_TOP/build/guest
OUT=$OUT_DIR/initramfs.cpio.gz
STAMP=$OUT_DIR/initramfs.stamp
PROBE_SRC=$DN2_TOP/tests/guest/dn2-probe.c
LID_SRC=$DN2_TOP/tests/cluster/dn2-lid.c
EXPORT=${DN2_GUEST_EXPORT:-$DN2_TOP/build/guest/export}
NET_MODULES=${DN2_GUEST_MODULES-virtio_pci virtio_net}
ABI_H=$DN2_TOP/include/dimmnet2/dn2_abi.h
BUSYBOX=${DN2_BUSYBOX:-$DN2_CACHE/pkgs/busybox-static/bin/busybox}

force=
while [ $# -gt 0 ]; do
    case $1 in
        --force) force=1; shift ;;
        --print) echo "$OUT"; exit 0 ;;
        -h|--help) sed -n '2,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) die "unknown argument: $1 (see --help)" ;;
    esac
done

# ------------------------------------------------------------------ inputs
[ -x "$BUSYBOX" ] || die "busybox not found at $BUSYBOX: run scripts/setup.sh (it extracts busybox-static into $DN2_CACHE/pkgs)"
[ -f "$PROBE_SRC" ] || die "$PROBE_SRC missing"
[ -f "$LID_SRC" ] || die "$LID_SRC missing"
[ -f "$ABI_H" ] || die "$ABI_H missing"
command -v gcc >/dev/null || die "gcc not found: run scripts/setup.sh"
command -v cpio >/dev/null || die "cpio not found: run scripts/setup.sh"
command -v gzip >/dev/null || die "gzip not found"

extra_dirs=()
if [ -n "${DN2_GUEST_EXTRA:-}" ]; then
    IFS=: read -r -a extra_dirs <<< "$DN2_GUEST_EXTRA"
    for d in "${extra_dirs[@]}"; do
        [ -d "$d" ] || die "DN2_GUEST_EXTRA: $d is not a directory"
    done
fi

# Kernel modules for the NIC, dependencies first (their .modinfo "depends="),
# from the module tree of the kernel the guests boot (scripts/lib.sh).
net_modules=()
if [ -n "$NET_MODULES" ]; then
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
    else
        log "warning: no module tree for the guest kernel: guests get no virtio-net NIC driver"
    fi
fi

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
fi

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

# Job start (docs/cluster.md): link up, join, wait for the rank table.
if [ -n "$job" ]; then
    eval "$(dn2-lid -b "${board:-0}" -w "${linkwait:-120}" -e 2>/tmp/dn2-lid.err)"
    if [ "${DN2_LINK_UP:-0}" = 1 ]; then
        echo "DN2-LINK up lid=$DN2_LID"
    else
        echo "DN2-LINK down state=${DN2_LINK:-none}"
    fi
    export DN2_LID
    fetch "$job/join?job=$jobid&node=$node&lid=${DN2_LID:-0}&link=${DN2_LINK:-0}&wid=$DN2_WID" \
          /tmp/dn2-join 60 || start_failed "cannot reach the job server $job: $(tail -1 /tmp/dn2-wget.err)"
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
            || start_failed "no rank table from $ranks: $(tail -1 /tmp/dn2-wget.err)"
        export DN2_RANKS=/opt/dn2/ranks ;;
    '') ;;
    *) export DN2_RANKS=$ranks ;;
esac
if [ -n "$job" ]; then
    mine=$(awk -v n="$node" '$1 == n { print $2 }' "$DN2_RANKS")
    [ "$mine" = "$DN2_LID" ] || start_failed "the rank table gives rank $node LID '$mine', the board has $DN2_LID"
    echo "DN2-RANKS $(awk 'NF >= 3 { n++ } END { print n + 0 }' "$DN2_RANKS") entries"
fi

case $run in
    @*) fetch "$job/${run#@}" /tmp/dn2-run.sh 30 || start_failed "cannot fetch $job/${run#@}"
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
        cat "$PROBE_SRC" "$LID_SRC" "$ABI_H" "$BUSYBOX" "$here/build-initramfs.sh" "$here/lib.sh" | sha256sum
        gcc --version | head -1
        echo "${CFLAGS[*]}"
        for f in "${net_modules[@]}"; do echo "module:$f"; done
        [ ${#net_modules[@]} -eq 0 ] || cat "${net_modules[@]}" | sha256sum
        # The export directory: names, modes, link targets and contents
        # (bin/dn2-lid is ours: LID_SRC stands for it).
        if [ -d "$EXPORT" ]; then
            (cd "$EXPORT" && find . -mindepth 1 ! -path ./bin/dn2-lid -printf '%p %y %m %l\n' | LC_ALL=C sort)
            (cd "$EXPORT" && find . -type f ! -path ./bin/dn2-lid -print0 | LC_ALL=C sort -z | xargs -0r sha256sum)
            echo "export:$EXPORT"
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
log "building guest initramfs"
root=$OUT_DIR/root
rm -rf "$root"
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
cp "$OUT_DIR/dn2-lid" "$root/opt/dn2/bin/dn2-lid"

# NIC driver modules, numbered in load order.
if [ ${#net_modules[@]} -gt 0 ]; then
    mkdir -p "$root/lib/modules/dn2-net"
    n=0
    for f in "${net_modules[@]}"; do
        n=$((n + 1))
        cp "$f" "$root/lib/modules/dn2-net/$(printf '%02d' $n)-$(basename "$f")"
    done
fi

cp "$BUSYBOX" "$root/bin/busybox"
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

for d in "${extra_dirs[@]}"; do
    cp -a "$d/." "$root/"
done

# Reproducible: sorted names, root-owned, fixed mtimes.
find "$root" -exec touch -h -d @0 {} +
(cd "$root" && find . -mindepth 1 | LC_ALL=C sort \
    | cpio -o -H newc -R 0:0 --reproducible --quiet) \
    | gzip -9n > "$OUT.tmp" || die "cpio/gzip failed"
mv "$OUT.tmp" "$OUT"
echo "$want" > "$STAMP"
export_lid
log "initramfs: $OUT ($(du -h "$OUT" | cut -f1))"
echo "$OUT"
