"""scripts/test.sh's lanes (dn2scripts.test_lanes): which tests run side by
side, from meson's suites and is_parallel."""
import io
import json
import sys
import xml.etree.ElementTree as ET

from dn2scripts import test_lanes

TESTS = [
    {"name": "fabric/wire", "suite": ["dimmnet2:fabric", "dimmnet2:unit"], "is_parallel": True},
    {"name": "memcheck/hostile", "suite": ["dimmnet2:memcheck"], "is_parallel": False},
    {"name": "guest-lib", "suite": ["dimmnet2:guest"], "is_parallel": False},
    {"name": "guest-wrong-vt", "suite": ["dimmnet2:guest", "dimmnet2:vt"], "is_parallel": False},
    {"name": "cluster", "suite": ["dimmnet2:cluster"], "is_parallel": False},
    {"name": "pmi-server", "suite": ["dimmnet2:cluster", "dimmnet2:pmi"], "is_parallel": True},
    {"name": "cluster-vt", "suite": ["dimmnet2:cluster", "dimmnet2:vt"], "is_parallel": False},
    {"name": "pause-yield", "suite": ["dimmnet2:cluster", "dimmnet2:alone"], "is_parallel": False},
    {"name": "cluster-vt-snapshot", "suite": ["dimmnet2:cluster", "dimmnet2:vt", "dimmnet2:alone"],
     "is_parallel": False},
    {"name": "mpi", "suite": ["dimmnet2:mpi"], "is_parallel": False},
]


def run(tmp_path, monkeypatch, capsys, lines, lanes="2"):
    tests = tmp_path / "tests.json"
    tests.write_text(json.dumps(TESTS))
    monkeypatch.setattr(sys, "stdin", io.StringIO("".join(l + "\n" for l in lines)))
    rc = test_lanes.main(["test_lanes", str(tests), lanes])
    out, err = capsys.readouterr()
    return rc, out.splitlines(), err


def listed(names):
    by = {t["name"]: t for t in TESTS}
    return ["%s / %s" % ("+".join(by[n]["suite"]), n) for n in names]


def test_virtual_time_and_light_tests_share_lane_a_guests_in_host_time_lane_b(tmp_path, monkeypatch, capsys):
    names = [t["name"] for t in TESTS]
    rc, out, _ = run(tmp_path, monkeypatch, capsys, listed(names))
    assert rc == 0
    assert out == ["a fabric/wire", "a memcheck/hostile", "b guest-lib", "a guest-wrong-vt",
                   "b cluster", "a pmi-server", "a cluster-vt", "alone pause-yield",
                   "alone cluster-vt-snapshot", "b mpi"]


def test_one_lane_keeps_the_alone_tests_apart(tmp_path, monkeypatch, capsys):
    rc, out, _ = run(tmp_path, monkeypatch, capsys, listed(["cluster", "pause-yield", "cluster-vt"]), "1")
    assert (rc, out) == (0, ["a cluster", "alone pause-yield", "a cluster-vt"])


def test_a_name_meson_does_not_know_is_an_error(tmp_path, monkeypatch, capsys):
    rc, out, err = run(tmp_path, monkeypatch, capsys, ["dimmnet2:cluster / no-such-test"])
    assert rc == 2 and out == [] and "no-such-test" in err


def test_bad_lane_count_is_a_usage_error(tmp_path, monkeypatch, capsys):
    rc, _, err = run(tmp_path, monkeypatch, capsys, [], "3")
    assert rc == 2 and "usage" in err


def test_join_makes_the_files_a_ci_job_keeps(tmp_path):
    for lane, n in (("a", 2), ("b", 1)):
        (tmp_path / ("lane-%s.json" % lane)).write_text("".join('{"name": "%s%d"}\n' % (lane, i) for i in range(n)))
        (tmp_path / ("lane-%s.txt" % lane)).write_text("log of %s\n" % lane)
        suites = "".join('<testsuite name="%s%d" tests="3" errors="0" failures="%d" />' % (lane, i, i) for i in range(n))
        (tmp_path / ("lane-%s.junit.xml" % lane)).write_text(
            '<?xml version="1.0"?><testsuites tests="%d" errors="0" failures="%d">%s</testsuites>'
            % (3 * n, sum(range(n)), suites))
    assert test_lanes.main(["test_lanes", "--join", str(tmp_path)]) == 0
    names = [json.loads(l)["name"] for l in (tmp_path / "testlog.json").read_text().splitlines()]
    assert names == ["a0", "a1", "b0"]
    txt = (tmp_path / "testlog.txt").read_text()
    assert "log of a" in txt and "log of b" in txt and txt.index("log of a") < txt.index("log of b")
    root = ET.parse(tmp_path / "testlog.junit.xml").getroot()
    assert [s.get("name") for s in root] == ["a0", "a1", "b0"]
    assert (root.get("tests"), root.get("failures"), root.get("errors")) == ("9", "1", "0")
