"""The bookworm MPI image's /opt/dn2 (dn2scripts.mpi_export): filled from
the build by mpirun.sh and by cluster.sh --mpi alike, so that ranks started
by hand in a cluster that mpirun.sh never ran on find the PMI library (an
image built without it fails Open MPI's start in dlopen, silently)."""
import os
import subprocess

import pytest

from dn2scripts import mpi_export, mpirun
from dn2scripts.cluster import launch, options


def fake_tree(tmp_path, pmix=True):
    pmi = tmp_path / "build" / "linux-guest" / "pmi"
    pmi.mkdir(parents=True)
    (pmi / "libpmi-dn2.so").write_bytes(b"pmi-1 v1")
    if pmix:
        (pmi / "dn2-pmix-server").write_bytes(b"#!pmix")
        (pmi / "dn2-pmix-server").chmod(0o755)
    prov = tmp_path / "build" / "linux-guest" / "ofi" / "libdimmnet2-fi.so"
    prov.parent.mkdir(parents=True)
    prov.write_bytes(b"provider")
    return tmp_path / "build" / "guest" / "export-mpi", str(prov)


def test_fill_copies_what_is_built(tmp_path):
    export, prov = fake_tree(tmp_path)
    assert mpi_export.default_provider(top=str(tmp_path), environ={}) == prov
    assert mpi_export.default_provider(top=str(tmp_path), environ={"DN2_FI_PROVIDER": "/x.so"}) == "/x.so"
    assert mpi_export.fill(prov, top=str(tmp_path)) == []
    assert (export / "lib" / "libpmi-dn2.so").read_bytes() == b"pmi-1 v1"
    assert (export / "lib" / "libfabric" / "libdimmnet2-fi.so").read_bytes() == b"provider"
    assert os.access(export / "bin" / "dn2-pmix-server", os.X_OK)


def test_fill_replaces_whole_files_and_leaves_equal_ones(tmp_path):
    export, prov = fake_tree(tmp_path)
    mpi_export.fill(prov, top=str(tmp_path))
    lib = export / "lib" / "libpmi-dn2.so"
    ino = lib.stat().st_ino
    mpi_export.fill(prov, top=str(tmp_path))
    assert lib.stat().st_ino == ino                  # unchanged: not copied again
    (tmp_path / "build" / "linux-guest" / "pmi" / "libpmi-dn2.so").write_bytes(b"pmi-1 v2")
    mpi_export.fill(prov, top=str(tmp_path))
    assert lib.read_bytes() == b"pmi-1 v2" and lib.stat().st_ino != ino   # a new file, renamed in
    assert sorted(os.listdir(export / "lib")) == ["libfabric", "libpmi-dn2.so"]   # no temporary left


def test_fill_names_what_is_not_built(tmp_path):
    export, prov = fake_tree(tmp_path, pmix=False)
    missing = mpi_export.fill(prov, top=str(tmp_path))
    assert missing == [str(tmp_path / "build" / "linux-guest" / "pmi" / "dn2-pmix-server")]
    assert (export / "lib" / "libpmi-dn2.so").exists()


def image_build(monkeypatch, tmp_path, args):
    """cluster.sh's image step with ARGS, build-initramfs.sh not run: what
    it was called with and what export-mpi/ held at that moment."""
    export, prov = fake_tree(tmp_path)
    monkeypatch.setattr(mpi_export, "TOP", str(tmp_path))
    seen = {}

    def fake_run(cmd, **kw):
        seen["cmd"] = cmd
        seen["export"] = sorted(str(p.relative_to(export)) for p in export.rglob("*") if p.is_file()) \
            if export.exists() else []
        return subprocess.CompletedProcess(cmd, 0, stdout=b"/img.cpio.lz4\n")

    monkeypatch.setattr(launch.subprocess, "run", fake_run)
    o = options.check(options.parse(args, {}), {}, snap_dir="/nonexistent-snapshots")
    # (the provider named: launch.subprocess.run is every module's)
    assert launch.Launcher(o, {"DN2_FI_PROVIDER": prov}).build_image() == "/img.cpio.lz4"
    return seen


def test_cluster_mpi_image_carries_the_pmi_library(monkeypatch, tmp_path):
    seen = image_build(monkeypatch, tmp_path, ["-n", "2", "--mpi", "-r", "true"])
    assert "--mpi" in seen["cmd"]
    assert seen["export"] == ["bin/dn2-pmix-server", "lib/libfabric/libdimmnet2-fi.so", "lib/libpmi-dn2.so"]


@pytest.mark.parametrize("args", [["-n", "2", "-r", "true"],
                                  ["-n", "2", "--mpi", "--guest-release", "trixie", "-r", "true"]])
def test_other_images_leave_export_mpi_alone(monkeypatch, tmp_path, args):
    assert image_build(monkeypatch, tmp_path, args)["export"] == []


def test_mpirun_fills_the_same_directory(monkeypatch, tmp_path):
    export, prov = fake_tree(tmp_path)
    monkeypatch.setattr(mpi_export, "TOP", str(tmp_path))

    class O:
        provider = prov
    mpirun.fill_export_mpi(O)
    assert (export / "lib" / "libpmi-dn2.so").exists()
    (tmp_path / "build" / "linux-guest" / "pmi" / "libpmi-dn2.so").unlink()
    with pytest.raises(mpirun.Fail, match="libpmi-dn2.so is not built"):
        mpirun.fill_export_mpi(O)
