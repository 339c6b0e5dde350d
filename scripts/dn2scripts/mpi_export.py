"""build/guest/export-mpi/: what the bookworm MPI image carries under
/opt/dn2 (scripts/build-initramfs.sh --mpi): the PMI-1 library, the PMIx
server and the libfabric provider, copied from the meson build.

Every way to the MPI image fills it first: mpirun.sh, and cluster.sh with
--mpi, whose guests a user (or a test) then starts ranks in by hand.  An
image built without it has no /opt/dn2/lib/libpmi-dn2.so, and Open MPI's
start fails in dlopen with no word of why.

Files are replaced whole (a copy, then a rename), never rewritten in
place: another launcher's image build may be reading them.
"""
import filecmp
import os
import shutil
import subprocess

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))   # scripts/
TOP = os.path.dirname(HERE)


def paths(top=None):
    """(export dir, PMI-1 library, PMIx server) under the tree TOP."""
    top = top or TOP
    return (os.path.join(top, "build", "guest", "export-mpi"),
            os.path.join(top, "build", "linux-guest", "pmi", "libpmi-dn2.so"),
            os.path.join(top, "build", "linux-guest", "pmi", "dn2-pmix-server"))


def default_provider(top=None, environ=None):
    """DN2_FI_PROVIDER, else the libdimmnet2-fi.so meson built, else ""."""
    top = top or TOP
    p = (os.environ if environ is None else environ).get("DN2_FI_PROVIDER", "")
    if p:
        return p
    r = subprocess.run(["find", os.path.join(top, "build"), "-name", "libdimmnet2-fi.so", "-type", "f"],
                       stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    return (r.stdout.split("\n") or [""])[0]


def replace_if_changed(src, dst):
    """DST becomes a copy of SRC (mode included) unless it already is one."""
    if os.path.exists(dst) and filecmp.cmp(src, dst, shallow=False):
        return False
    tmp = "%s.tmp%d" % (dst, os.getpid())
    try:
        shutil.copy2(src, tmp)
        os.replace(tmp, dst)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return True


def fill(provider, top=None):
    """Copy what is built into the export directory.  Returns the names of
    the pieces that are not built (the PMI-1 library first), [] when all
    are there; a piece not built leaves its old copy, if any, alone."""
    export, pmi_lib, pmix_server = paths(top)
    missing = []
    pieces = [(pmi_lib, os.path.isfile(pmi_lib), "lib/libpmi-dn2.so"),
              (pmix_server, os.access(pmix_server, os.X_OK), "bin/dn2-pmix-server")]
    if provider:
        pieces.append((provider, os.path.isfile(provider), "lib/libfabric/libdimmnet2-fi.so"))
    for src, ok, rel in pieces:
        if not ok:
            missing.append(src)
            continue
        dst = os.path.join(export, rel)
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        replace_if_changed(src, dst)
    return missing
