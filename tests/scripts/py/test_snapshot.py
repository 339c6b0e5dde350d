"""cluster.sh snapshot's consistent cut (dn2scripts.snapshot) against
stand-in QEMUs (fakeqmp.FakeQMP): every vCPU stopped, every board held
once the fabric drained, every node migrated to TAGDIR/nodeI.mig, the
consoles copied, boards released and every node run again; a fabric that
does not drain is no snapshot (exit 3, the nodes run again)."""
import pytest

from dn2scripts import snapshot
from fakeqmp import FakeQMP

SCRIPTS = snapshot.__file__.rsplit("/", 2)[0]
BOARD = "/machine/peripheral-anon/device[0]"


def qemu(tmp_path, name, hold_ok=True, migrate_status="completed"):
    def qom_set(args):
        if args["property"] == "snapshot-hold" and args["value"] and not hold_ok:
            return {"error": {"desc": "2 packets in flight"}}
        return {"return": {}}
    return FakeQMP(str(tmp_path / name), {
        "qom-list": lambda a: {"return": [{"name": "device[0]", "type": "child<dimmnet2>"}]
                               if a["path"] == "/machine/peripheral-anon" else []},
        "qom-get": lambda a: {"return": "dimmnet2" if a["property"] == "type" else 3},
        "qom-set": qom_set,
        "query-migrate": {"return": {"status": migrate_status, "error-desc": "disk full"}},
    })


def run(tmp_path, qs, drain_s="5"):
    tag, rundir = tmp_path / "tag", tmp_path / "run"
    tag.mkdir()
    rundir.mkdir(exist_ok=True)
    for i in range(len(qs)):
        (rundir / ("node%d.log" % i)).write_bytes(b"boot\r\nlogin\r\n")
    snapshot.main(["snapshot", SCRIPTS, str(tag), str(rundir), drain_s] + [q.path for q in qs])
    return tag


def names(q):
    return [n for n, _ in q.seen]


def test_the_cut(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("DN2_SNAP_QUEUED", raising=False)
    qs = [qemu(tmp_path, "q0"), qemu(tmp_path, "q1")]
    try:
        tag = run(tmp_path, qs)
    finally:
        for q in qs:
            q.close()
    assert capsys.readouterr().out.startswith("stopped_s=")
    for i, q in enumerate(qs):
        n = names(q)
        assert n.index("stop") < n.index("qom-set") < n.index("migrate") < n.index("cont")
        holds = [a["value"] for c, a in q.seen if c == "qom-set" and a["property"] == "snapshot-hold"]
        assert holds == [True, False]
        assert ("migrate", {"uri": "file:%s/node%d.mig" % (tag, i)}) in q.seen
        assert (tag / ("node%d.log" % i)).read_bytes() == b"boot\nlogin\n"


def test_queued_under_virtual_time(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("DN2_SNAP_QUEUED", "1")
    qs = [qemu(tmp_path, "q0"), qemu(tmp_path, "q1")]
    try:
        run(tmp_path, qs)
    finally:
        for q in qs:
            q.close()
    assert capsys.readouterr().out.split("\n")[0] == "queued='3 3'"


def test_no_drain_is_no_snapshot(tmp_path, capsys):
    qs = [qemu(tmp_path, "q0"), qemu(tmp_path, "q1", hold_ok=False)]
    try:
        with pytest.raises(SystemExit) as e:
            run(tmp_path, qs, drain_s="0.2")
    finally:
        for q in qs:
            q.close()
    assert e.value.code == 3
    err = capsys.readouterr().err
    assert "no consistent cut: the fabric did not drain in 0.2 s" in err and "node1: 2 packets in flight" in err
    assert all("migrate" not in names(q) and names(q)[-1] == "cont" for q in qs)


def test_a_failed_migration(tmp_path, capsys):
    qs = [qemu(tmp_path, "q0", migrate_status="failed")]
    try:
        with pytest.raises(SystemExit) as e:
            run(tmp_path, qs)
    finally:
        qs[0].close()
    assert e.value.code == 1
    assert "error: the migration of node0: disk full" in capsys.readouterr().err
    assert names(qs[0])[-1] == "cont"
