"""cluster.sh --snapshot-at's cut (dn2scripts.vt_cut) against stand-in
QEMUs (fakeqmp.FakeQMP): vt-cut-ns set on every board, every node run,
done once every board is at the cut; a QEMU that ended first exits 3."""
import os

import pytest

from dn2scripts import vt_cut
from fakeqmp import FakeQMP

SCRIPTS = vt_cut.__file__.rsplit("/", 2)[0]


def qemu(tmp_path, name, at_cut=True, status="paused"):
    return FakeQMP(str(tmp_path / name), {
        "qom-list": lambda a: {"return": [{"name": "device[0]", "type": "child<dimmnet2>"}]
                               if a["path"] == "/machine/peripheral-anon" else []},
        "qom-get": lambda a: {"return": "dimmnet2" if a["property"] == "type" else at_cut},
        "query-status": {"return": {"status": status}},
    })


def run(qs, pids=None):
    vt_cut.main(["vt_cut", SCRIPTS, "5000000000", " ".join(str(p) for p in (pids or [os.getpid()] * len(qs)))]
                + [q.path for q in qs])


def test_every_board_at_the_cut(tmp_path):
    qs = [qemu(tmp_path, "q0"), qemu(tmp_path, "q1")]
    try:
        run(qs)
    finally:
        for q in qs:
            q.close()
    for q in qs:
        assert ("qom-set", {"path": "/machine/peripheral-anon/device[0]", "property": "vt-cut-ns",
                            "value": 5000000000}) in q.seen
        n = [c for c, _ in q.seen]
        assert n.index("qom-set") < n.index("cont")


def test_a_qemu_that_ended_before_the_cut(tmp_path, capsys):
    qs = [qemu(tmp_path, "q0", at_cut=False, status="running")]
    try:
        with pytest.raises(SystemExit) as e:
            run(qs, pids=[2 ** 22 + 12345])
    finally:
        qs[0].close()
    assert e.value.code == 3
    assert "node0 ended before the cut at 5000000000 ns" in capsys.readouterr().err
