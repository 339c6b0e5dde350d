"""cluster.sh restore's last step (dn2scripts.restore) against stand-in
QEMUs (fakeqmp.FakeQMP) and a stand-in switch statistics command: every
node loaded, every board back at its saved LID, then all run; each way it
can fail names the node and exits 3."""
import os

import pytest

from dn2scripts import restore
from fakeqmp import FakeQMP

SCRIPTS = restore.__file__.rsplit("/", 2)[0]


def qemu(tmp_path, name, status="paused", migrate=None):
    return FakeQMP(str(tmp_path / name), {
        "query-status": {"return": {"status": status}},
        "query-migrate": {"return": migrate or {"status": "completed"}},
    })


def switch(lines):
    """A switch statistics command printing LINES ("LID state GUID ...")."""
    return "\x1f".join(["printf", "%s\\n"] + lines)


def run(qs, sw, lids, wait_s="5", pids=None):
    return restore.main(["restore", SCRIPTS, wait_s, sw, lids,
                         " ".join(str(p) for p in (pids or [os.getpid()] * len(qs)))] + [q.path for q in qs])


@pytest.fixture
def two(tmp_path):
    qs = [qemu(tmp_path, "q0"), qemu(tmp_path, "q1")]
    yield qs
    for q in qs:
        q.close()


def test_loaded_and_at_their_lids_then_all_run(two, capsys):
    run(two, switch(["0x1 active 0x0000000000000001 x", "0x2 active 0x0000000000000002 x"]), "1 2")
    assert capsys.readouterr().out.startswith("every node loaded ")
    for q in two:
        names = [n for n, _ in q.seen]
        assert names[0] == "qmp_capabilities" and names[-1] == "cont"
        assert "query-status" in names and "query-migrate" in names


def test_a_board_at_another_lid_fails_naming_it(two, capsys):
    with pytest.raises(SystemExit) as e:
        run(two, switch(["0x1 active 0x0000000000000001 x", "0x5 active 0x0000000000000002 x"]), "1 2", wait_s="0.3")
    assert e.value.code == 3
    err = capsys.readouterr().err
    assert "the boards did not get their saved LIDs back in 0.3 s: GUID 0x0000000000000002: LID 5, wants 2" in err
    assert all("cont" not in [n for n, _ in q.seen] for q in two)


def test_a_board_not_active_is_not_at_its_lid(two, capsys):
    with pytest.raises(SystemExit):
        run(two, switch(["0x1 active 0x0000000000000001 x", "0x2 init 0x0000000000000002 x"]), "1 2", wait_s="0.3")
    assert "GUID 0x0000000000000002: LID none, wants 2" in capsys.readouterr().err


def test_a_failed_load_names_the_node(tmp_path, capsys):
    qs = [qemu(tmp_path, "q0"), qemu(tmp_path, "q1", status="inmigrate",
                                     migrate={"status": "failed", "error-desc": "bad section"})]
    try:
        with pytest.raises(SystemExit) as e:
            run(qs, switch([]), "1 2")
    finally:
        for q in qs:
            q.close()
    assert e.value.code == 3
    assert "[cluster] error: node1: loading the snapshot failed: bad section" in capsys.readouterr().err


def test_a_node_still_loading_at_the_deadline(tmp_path, capsys):
    qs = [qemu(tmp_path, "q0", status="inmigrate", migrate={"status": "active"})]
    try:
        with pytest.raises(SystemExit):
            run(qs, switch([]), "1", wait_s="0.3")
    finally:
        qs[0].close()
    assert "node0: not loaded after 0.3 s (status inmigrate)" in capsys.readouterr().err


def test_a_qemu_that_ended(two, capsys):
    with pytest.raises(SystemExit) as e:
        run(two, switch([]), "1 2", pids=[os.getpid(), 2 ** 22 + 12345])
    assert e.value.code == 3
    assert "node1: QEMU ended before its snapshot was loaded" in capsys.readouterr().err


def test_no_qmp_socket(tmp_path, capsys):
    class Missing:
        path = str(tmp_path / "none")
    with pytest.raises(SystemExit):
        run([Missing()], switch([]), "1", wait_s="0.2")
    assert "node0: no QMP socket after 0.2 s" in capsys.readouterr().err
