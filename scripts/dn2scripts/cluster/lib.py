"""The shell helpers of scripts/lib.sh that the launcher shares with
run-guest.sh and the other scripts (dn2_find_qemu, dn2_find_kernel,
dn2_image_size, dn2_vt_capable, dn2_clid_to_lid, dn2_find_ethhub): one
implementation, called through bash; and dn2_guest_mem's arithmetic.
"""
import os
import subprocess

from .rundir import HERE


def call(fn, *args):
    """(status, stdout without its last newline, the error without lib.sh's
    "[dimmnet2] error: " prefix)."""
    r = subprocess.run(["bash", "-c", '. "$1/lib.sh" && "$2" "${@:3}"', "cluster.sh", HERE, fn] + [str(a) for a in args],
                       stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    err = r.stderr.decode(errors="replace").strip()
    return r.returncode, r.stdout.decode(errors="surrogateescape").rstrip("\n"), err.replace("[dimmnet2] error: ", "")


def guest_mem(unpacked_kib, compressed_kib):
    """dn2_guest_mem: twice the unpacked size, the compressed image, 128 MiB,
    rounded up to 128 MiB; at least 256."""
    m = (2 * unpacked_kib + compressed_kib) // 1024 + 128
    return max((m + 127) // 128 * 128, 256)


def cache_dir(environ=os.environ):
    return environ.get("DN2_CACHE") or os.path.join(
        environ.get("XDG_CACHE_HOME") or os.path.join(environ.get("HOME", "/"), ".cache"), "dimmnet2")


def kvm_usable():
    """KVM that really runs (lib.sh's dn2_accel "auto"): /dev/kvm usable and
    the CPUs with vmx or svm."""
    if not (os.access("/dev/kvm", os.R_OK) and os.access("/dev/kvm", os.W_OK)):
        return False
    try:
        flags = open("/proc/cpuinfo").read().split()
    except OSError:
        return False
    return "vmx" in flags or "svm" in flags
