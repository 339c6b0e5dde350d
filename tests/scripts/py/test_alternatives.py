"""build-initramfs.sh's update-alternatives links (dn2scripts.alternatives):
the highest priority of each name wins, slaves come along, nothing that
exists is replaced, and lines with shell variables are left alone."""
import os

from dn2scripts import alternatives


def postinst(ctl, name, text):
    (ctl / (name + ".postinst")).write_text(text)


def test_highest_priority_wins_with_its_slaves(tmp_path):
    root, ctl = tmp_path / "root", tmp_path / "ctl"
    ctl.mkdir()
    for p in ("usr/bin/mpicc.openmpi", "usr/bin/mpicc.mpich", "usr/share/man/mpicc.openmpi.1"):
        (root / p).parent.mkdir(parents=True, exist_ok=True)
        (root / p).write_text("")
    postinst(ctl, "openmpi", "update-alternatives --install /usr/bin/mpicc mpi /usr/bin/mpicc.openmpi 50 \\\n"
             "   --slave /usr/share/man/man1/mpicc.1 mpicc.1 /usr/share/man/mpicc.openmpi.1\n")
    postinst(ctl, "mpich", "update-alternatives --install /usr/bin/mpicc mpi /usr/bin/mpicc.mpich 40\n"
             "update-alternatives --install /usr/bin/x x $FOO 90\n")
    alternatives.main(["alternatives", str(root), str(ctl)])
    assert os.readlink(root / "usr/bin/mpicc") == "/usr/bin/mpicc.openmpi"
    assert os.readlink(root / "usr/share/man/man1/mpicc.1") == "/usr/share/man/mpicc.openmpi.1"
    assert not os.path.lexists(root / "usr/bin/x")


def test_missing_target_or_existing_link_is_left(tmp_path):
    root, ctl = tmp_path / "root", tmp_path / "ctl"
    ctl.mkdir()
    (root / "usr/bin").mkdir(parents=True)
    (root / "usr/bin/vi").write_text("mine")
    (root / "usr/bin/vim.tiny").write_text("")
    postinst(ctl, "vim", "update-alternatives --install /usr/bin/vi vi /usr/bin/vim.tiny 15\n"
             "update-alternatives --install /usr/bin/ex ex /usr/bin/nothere 15\n")
    alternatives.main(["alternatives", str(root), str(ctl)])
    assert (root / "usr/bin/vi").read_text() == "mine"
    assert not os.path.lexists(root / "usr/bin/ex")
