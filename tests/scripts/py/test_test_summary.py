"""scripts/test.sh's summary (dn2scripts.test_summary): how meson's test log
becomes 'N passed, N failed, N skipped' and the exit status."""
import json

import pytest

from dn2scripts import test_summary


def run(tmp_path, capsys, entries, protocols, meson_rc=0):
    log = tmp_path / "testlog.json"
    log.write_text("".join(json.dumps(e) + "\n" for e in entries))
    tests = tmp_path / "tests.json"
    tests.write_text(json.dumps([{"name": n, "protocol": p} for n, p in protocols.items()]))
    with pytest.raises(SystemExit) as e:
        test_summary.main(["test_summary", str(log), str(tests), str(meson_rc)])
    out, err = capsys.readouterr()
    return out.splitlines()[-1], e.value.code, err


def test_tap_points_are_counted_one_by_one(tmp_path, capsys):
    tap = "1..4\nok 1 - a\nok 2 - b # SKIP no tool\nnot ok 3 - c # TODO later\nok 4 - d\n"
    line, rc, _ = run(tmp_path, capsys, [{"name": "t", "result": "OK", "stdout": tap}], {"t": "tap"})
    assert (line, rc) == ("2 passed, 0 failed, 2 skipped", 0)


def test_non_tap_test_counts_one_point_by_its_result(tmp_path, capsys):
    entries = [{"name": "a", "result": "OK"}, {"name": "b", "result": "SKIP"},
               {"name": "c", "result": "FAIL"}, {"name": "d", "result": "EXPECTEDFAIL"}]
    line, rc, err = run(tmp_path, capsys, entries, {n: "exitcode" for n in "abcd"}, meson_rc=1)
    assert (line, rc) == ("2 passed, 1 failed, 1 skipped", 1)
    assert "c: FAIL" in err


def test_tap_output_of_an_exitcode_test_is_still_counted(tmp_path, capsys):
    line, _, _ = run(tmp_path, capsys, [{"name": "x", "result": "OK", "stdout": "ok 1\nok 2\n1..2\n"}], {"x": "exitcode"})
    assert line == "2 passed, 0 failed, 0 skipped"


def test_a_crash_after_passing_points_is_one_failure(tmp_path, capsys):
    entries = [{"name": "t", "result": "TIMEOUT", "stdout": "ok 1\nok 2\n"}]
    line, rc, err = run(tmp_path, capsys, entries, {"t": "tap"}, meson_rc=1)
    assert (line, rc) == ("2 passed, 1 failed, 0 skipped", 1)
    assert "TIMEOUT after 2 passing test points" in err


def test_a_tap_test_without_points_fails(tmp_path, capsys):
    line, rc, err = run(tmp_path, capsys, [{"name": "t", "result": "OK", "stdout": "hello\n"}], {"t": "tap"})
    assert (line, rc) == ("0 passed, 1 failed, 0 skipped", 1)
    assert "no TAP test points" in err


def test_bail_out_is_a_failure(tmp_path, capsys):
    line, _, _ = run(tmp_path, capsys, [{"name": "t", "result": "FAIL", "stdout": "ok 1\nBail out! no qemu\n"}], {"t": "tap"}, 1)
    assert line == "1 passed, 1 failed, 0 skipped"


def test_a_skipped_tap_test_without_points_is_one_skip(tmp_path, capsys):
    line, rc, _ = run(tmp_path, capsys, [{"name": "t", "result": "SKIP", "stdout": "1..0 # SKIP no tool\n"}], {"t": "tap"})
    assert (line, rc) == ("0 passed, 0 failed, 1 skipped", 0)


def test_meson_failing_with_nothing_failed_counts_one(tmp_path, capsys):
    line, rc, err = run(tmp_path, capsys, [{"name": "a", "result": "OK"}], {"a": "exitcode"}, meson_rc=125)
    assert (line, rc) == ("1 passed, 1 failed, 0 skipped", 1)
    assert "meson test exited with 125" in err


def test_no_log_at_all_warns(tmp_path, capsys):
    tests = tmp_path / "tests.json"
    tests.write_text("[]")
    with pytest.raises(SystemExit) as e:
        test_summary.main(["x", str(tmp_path / "missing.json"), str(tests), "0"])
    out, err = capsys.readouterr()
    assert out.splitlines()[-1] == "0 passed, 0 failed, 0 skipped" and e.value.code == 0
    assert "no tests ran" in err


def test_the_time_each_suite_took_is_said_before_the_count(tmp_path, capsys):
    tap = "1..1\nok 1 - a\n"
    entries = [{"name": "dimmnet2:cluster / cluster-vt", "result": "OK", "stdout": tap,
                "starttime": 100.0, "duration": 60.0},
               {"name": "dimmnet2:ofi+unit / ofi-unit", "result": "OK", "stdout": tap,
                "starttime": 100.0, "duration": 2.4},
               {"name": "dimmnet2:cluster / cluster", "result": "OK", "stdout": tap,
                "starttime": 160.0, "duration": 30.0}]
    line, rc, err = run(tmp_path, capsys, entries, {e["name"]: "tap" for e in entries})
    assert (line, rc) == ("3 passed, 0 failed, 0 skipped", 0)
    assert "time by suite: cluster 90 s (2), ofi 2 s (1); tests 90 s of wall time" in err
