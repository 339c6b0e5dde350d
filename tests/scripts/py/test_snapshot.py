"""cluster.sh snapshot's consistent cut (dn2scripts.snapshot) against
stand-in QEMUs (fakeqmp.FakeQMP): every vCPU stopped, every board held
once the fabric drained, every node migrated to TAGDIR/nodeI.mig, the
consoles copied, boards released and every node run again; a fabric that
does not drain is no snapshot (exit 3, the nodes run again); with
--stopped, a board that drains only once its guest has run (a full ring)
is held at a later attempt, the guests having run between."""
import pytest

from dn2scripts import snapshot
from fakeqmp import FakeQMP

SCRIPTS = snapshot.__file__.rsplit("/", 2)[0]
BOARD = "/machine/peripheral-anon/device[0]"


def qemu(tmp_path, name, hold_ok=True, migrate_status="completed", ring_full=False):
    """ring_full: the board cannot be held until its guest has run (a
    receiver's ring only the guest empties), as a 'cont' after the first
    refusal lets it."""
    st = {"refused": False, "emptied": False}

    def qom_set(args):
        if args["property"] == "snapshot-hold" and args["value"]:
            if not hold_ok:
                return {"error": {"desc": "2 packets in flight"}}
            if ring_full and not st["emptied"]:
                st["refused"] = True
                return {"error": {"desc": "1 packets not yet acknowledged"}}
        return {"return": {}}

    def cont(args):
        st["emptied"] = st["emptied"] or st["refused"]
        return {"return": {}}
    return FakeQMP(str(tmp_path / name), {
        "cont": cont,
        "qom-list": lambda a: {"return": [{"name": "device[0]", "type": "child<dimmnet2>"}]
                               if a["path"] == "/machine/peripheral-anon" else []},
        "qom-get": lambda a: {"return": "dimmnet2" if a["property"] == "type" else 3},
        "qom-set": qom_set,
        "query-migrate": {"return": {"status": migrate_status, "error-desc": "disk full"}},
    })


def run(tmp_path, qs, drain_s="5", stopped=None):
    tag, rundir = tmp_path / "tag", tmp_path / "run"
    tag.mkdir()
    rundir.mkdir(exist_ok=True)
    for i in range(len(qs)):
        (rundir / ("node%d.log" % i)).write_bytes(b"boot\r\nlogin\r\n")
    opt = [] if stopped is None else ["--stopped", stopped]
    snapshot.main(["snapshot", SCRIPTS] + opt + [str(tag), str(rundir), drain_s] + [q.path for q in qs])
    return tag


def names(q):
    return [n for n, _ in q.seen]


def cut_fails(tmp_path, qs, **kw):
    """run() that must exit: its status; the stand-ins closed."""
    try:
        with pytest.raises(SystemExit) as e:
            run(tmp_path, qs, **kw)
    finally:
        for q in qs:
            q.close()
    return e.value.code


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
    assert cut_fails(tmp_path, qs, drain_s="0.2") == 3
    err = capsys.readouterr().err
    assert "no consistent cut: the fabric did not drain in 0.2 s" in err and "node1: 2 packets in flight" in err
    assert all("migrate" not in names(q) and names(q)[-1] == "cont" for q in qs)


def test_a_failed_migration(tmp_path, capsys):
    qs = [qemu(tmp_path, "q0", migrate_status="failed")]
    assert cut_fails(tmp_path, qs) == 1
    assert "error: the migration of node0: disk full" in capsys.readouterr().err
    assert names(qs[0])[-1] == "cont"


def test_a_ring_only_the_guest_empties(tmp_path, capsys, monkeypatch):
    # Stopped throughout (virtual time's cut), the board is never held.
    monkeypatch.delenv("DN2_SNAP_QUEUED", raising=False)
    qs = [qemu(tmp_path, "q0"), qemu(tmp_path, "q1", ring_full=True)]
    assert cut_fails(tmp_path, qs, drain_s="0.5") == 3
    assert all(names(q).count("cont") == 1 and names(q)[-1] == "cont" for q in qs)
    # With --stopped: the guests run between attempts, the second one holds.
    (tmp_path / "r").mkdir()
    qs = [qemu(tmp_path, "r0"), qemu(tmp_path, "r1", ring_full=True)]
    try:
        run(tmp_path / "r", qs, drain_s="10", stopped="0.2")
    finally:
        for q in qs:
            q.close()
    out = capsys.readouterr().out
    assert out.startswith("stopped_s=") and out.rstrip().endswith("attempts=2"), out
    for q in qs:
        n = names(q)
        assert n.count("stop") == 2 and n.index("cont") < n.index("migrate") < len(n) - 1
        assert n[-1] == "cont"


def test_no_drain_in_any_attempt(tmp_path, capsys):
    qs = [qemu(tmp_path, "q0", hold_ok=False)]
    assert cut_fails(tmp_path, qs, drain_s="1", stopped="0.2") == 3
    err = capsys.readouterr().err
    assert "no consistent cut in 1 s: the fabric did not drain in any of" in err and "node0: 2 packets" in err
    assert names(qs[0]).count("stop") >= 2 and names(qs[0])[-1] == "cont"
