"""cluster.sh's subcommands (dn2scripts.cluster) without a cluster: their
option parsing and usage errors, the run directory's info and state files,
the jobs they queue, status's and list's lines, on directories the tests
make."""
import os

import pytest

from dn2scripts.cluster import cli, console, cp, exec as exec_, jobs, rundir, snapshot, start, status, stop
from dn2scripts.cluster import list as list_

SCRIPT = os.path.join(rundir.HERE, "cluster.sh")


def status_of(fn, args, capsys):
    rc = cli.run_main(SCRIPT, fn, args)
    return rc, capsys.readouterr()


@pytest.mark.parametrize("mod,args,needle", [
    (stop, [], "stop: one NAME, not ''"),
    (stop, ["a", "b"], "stop: one NAME, not 'a b'"),
    (stop, ["a/b"], "stop: 'a/b' cannot name a cluster"),
    (status, ["-x"], "status: unknown argument: -x"),
    (status, ["a", "b"], "status: at most one NAME"),
    (list_, ["x"], "list: no arguments, not 'x'"),
    (exec_, [], "exec: no command"),
    (exec_, ["-t", "x", "true"], "-t wants a whole number, not 'x'"),
    (exec_, ["--timeout=", "true"], "--timeout needs a value"),
    (cp, ["a", "b"], "cp: NAME SRC DEST"),
    (cp, ["a", "b", "c"], "cp: one of SRC and DEST is on the nodes"),
    (cp, ["a", ":/x", "f"], "cp: a file comes from one node: I:/x, not :/x"),
    (cp, ["-x", "a", "b", "c"], "cp: unknown argument: -x"),
    (cp, ["--timeout=x", "a", "b", ":/c"], "--timeout wants a whole number"),
    (console, ["a", "1", "2"], "console: one NODE, not '1 2'"),
    (console, ["--bogus=1"], "console: unknown argument: --bogus"),
    (snapshot, ["a"], "snapshot: NAME TAG, not 'a'"),
    (snapshot, ["a", "x/y"], "snapshot: 'x/y' cannot name a snapshot"),
    (snapshot, ["--drain=x", "a", "b"], "--drain wants a whole number, not 'x'"),
    (snapshot, ["--drain", "a", "b"], "--drain wants a whole number, not 'a'"),
    (start, [], "start: the cluster's NAME is missing"),
    (start, ["-n", "2"], "start: the cluster's NAME comes first, not '-n'"),
    (start, ["latest"], "start: 'latest' cannot name a cluster"),
    (start, ["c", "--name", "x"], "start: NAME names the cluster: no --name"),
    (start, ["c", "--virtual-time"], "start: --virtual-time: a kept cluster takes commands"),
    (start, ["c", "--replay=/x"], "start: --replay=/x: a kept cluster"),
    (start, ["c", "--from", "t", "-n", "3"], "start --from: -n: a restored cluster has the snapshot's options"),
    (start, ["c", "--from=../t"], "start --from: '../t' cannot name a snapshot"),
])
def test_usage_errors_exit_2_with_one_line(mod, args, needle, capsys):
    rc, out = status_of(mod.main, args, capsys)
    assert rc == 2 and out.out == ""
    assert out.err.count("\n") == 1 and needle in out.err and out.err.startswith("cluster.sh: "), out.err


@pytest.mark.parametrize("mod", [stop, status, list_, exec_, cp, console, snapshot, start])
def test_help_prints_the_header_and_does_nothing(mod, capsys):
    rc, out = status_of(mod.main, ["--help"] if mod is not start else ["-h"], capsys)
    assert rc == 0 and out.out.startswith("Boots a cluster of Linux guests") and out.err == ""


def test_exec_options_both_spellings_and_the_name():
    names = {"c1"}
    o = exec_.parse(["c1", "--node=1", "-t", "5", "echo", "{rank}", "--x=y"], is_cluster=names.__contains__)
    assert (o.name, o.sel, o.timeout_s, o.cmd) == ("c1", "1", 5, "echo {node} --x=y")
    o = exec_.parse(["--node", "all", "--timeout=7", "--dir", "/r", "--", "-x"], is_cluster=names.__contains__)
    assert (o.name, o.dir, o.sel, o.timeout_s, o.cmd) == ("", "/r", "all", 7, "-x")
    # one word: the command, even when it names a cluster
    assert exec_.parse(["c1"], is_cluster=names.__contains__).cmd == "c1"


def test_cp_directions():
    assert cp.parse(["c", "f", ":/tmp/"])[4:] == ("to", "all", "/tmp/")
    assert cp.parse(["c", "f", "3:/tmp/x"])[4:] == ("to", "3", "/tmp/x")
    assert cp.parse(["-t", "9", "c", "2:/tmp/x", "f"])[0] == 9
    assert cp.parse(["c", "2:/tmp/x", "f"])[4:] == ("from", "2", "/tmp/x")


def test_console_name_or_node():
    assert console.parse(["c", "1"]) == ("c", "", 1)
    assert console.parse(["-d", "/r", "2"]) == ("", "/r", 2)
    assert console.parse(["--dir=/r"]) == ("", "/r", 0)


def test_want_node():
    jobs.want_node("all", "--node", 2)
    jobs.want_node("1", "--node", 2)
    with pytest.raises(cli.Usage, match="--node: the cluster has nodes 0..1, not 2"):
        jobs.want_node("2", "--node", 2)
    with pytest.raises(cli.Usage, match="cp wants a whole number, not 'x'"):
        jobs.want_node("x", "cp", 2)


def test_job_text_and_queue(tmp_path):
    assert jobs.job_text("all", "echo hi") == "echo hi\n"
    assert jobs.job_text("1", "echo hi") == '[ "$DN2_NODE" = 1 ] || exit 0\necho hi\n'
    assert jobs.shq("it's") == "'it'\\''s'"
    assert jobs.submit(str(tmp_path), "a\n\n") == 1
    assert jobs.submit(str(tmp_path), "b") == 2
    assert (tmp_path / "jobs" / "1.sh").read_text() == "a\n" and (tmp_path / "jobs" / "2.sh").read_text() == "b\n"


def test_job_wait_counts_reports_and_dead_nodes(tmp_path):
    d = tmp_path
    (d / "jobs").mkdir()
    (d / "jobs" / "4.node0.rc").write_text("0\n")
    (d / "state").write_text("0 serving 1 - \n1 failed 2 - QEMU exited (killed by SIGKILL) while serving jobs\n")
    st, rcs = jobs.wait(str(d), 4, 5, [0, 1], os.getpid())
    assert st == 0 and rcs == {0: "0", 1: "dead"}
    assert rundir.node_state(str(d), 1) == ("failed", "2", "-", "QEMU exited (killed by SIGKILL) while serving jobs")
    assert rundir.node_state(str(d), 7) == ("unknown", "-", "-", "")


def test_info_file_as_the_shell_reads_it(tmp_path):
    (tmp_path / "info").write_text("launcher_pid=12\nname=a\\ b\nswitch_bin='/x y/sw'\nlauncher_pid=0\nready_s=3.1\n")
    i = rundir.read_info(str(tmp_path / "info"))
    assert i == {"launcher_pid": "0", "name": "a b", "switch_bin": "/x y/sw", "ready_s": "3.1"}


def test_fmt_secs():
    assert [rundir.fmt_secs(s) for s in (5, 65, 3725)] == ["5s", "1m05s", "1h02m05s"]


def test_status_folds_board_counters_at_88_columns():
    text = "".join("stat-counter-%02d=%d\n" % (k, k * 1000) for k in range(9))
    lines = status.fold_stats(text).split("\n")[:-1]
    assert lines[0].startswith("           board: stat-counter-00=0 ")
    assert all(l.startswith(" " * 18) for l in lines[1:]) and len(lines) == 3
    assert all(len(l) - 18 <= 88 and not l.endswith(" ") for l in lines)


def test_status_switch_line():
    sw = "0x0001 active 0x0000000000000001 x 10 y 20\n0x0002 init 0x0000000000000002 x 0 y 0\n"
    assert status.switch_line(sw, 0) == "link up, LID 0x0001, rx 10 pkts, tx 20 pkts"
    assert status.switch_line(sw, 1) == "link down (init), LID 0x0002, rx 0 pkts, tx 0 pkts"
    assert status.switch_line(sw, 2) == "link down (not in the switch's table)"


def test_list_rows(tmp_path):
    assert list_.rows(str(tmp_path)) == ["no clusters in %s\n" % tmp_path]
    for n, extra in (("k", "kept=1\ninteractive=1\n"), ("o", "interactive=0\n")):
        (tmp_path / n).mkdir()
        (tmp_path / n / "info").write_text("launcher_pid=0\nnodes=2\n" + extra)
    (tmp_path / "latest").symlink_to("k")
    rows = list_.rows(str(tmp_path))
    assert rows[0].split() == ["NAME", "STATE", "NODES", "KIND", "UP", "STARTED"]
    assert [r.split() for r in rows[1:]] == [["k", "stopped", "2", "kept", "-", "-"],
                                            ["o", "stopped", "2", "one-shot", "-", "-"]]


def test_start_from_takes_the_snapshots_options(tmp_path):
    (tmp_path / "t").mkdir()
    (tmp_path / "t" / "snapshot.info").write_text("nodes=2\n")
    (tmp_path / "t" / "options").write_bytes(b"-n\x002\x00--mem\x00512\x00--\x00-smp\x001\x00")
    name, rest = start.parse(["c", "-q", "--from=t", "-b", "60"], snap_dir=str(tmp_path))
    assert name == "c"
    assert rest == ["-n", "2", "--mem", "512", "-q", "-b", "60", "--from", "t", "--", "-smp", "1"]


def test_snapshot_info_is_shell(tmp_path):
    text = snapshot.snapshot_info("c", 100, "2", "512", "c-123", "8080", "g", 7, "1 2", "queued=0")
    (tmp_path / "s").write_text(text)
    i = rundir.read_info(str(tmp_path / "s"))
    assert i["lids"] == "1 2" and i["http_port"] == "8080" and i["job"] == "7" and i["queued"] == "0"


def test_sweep_kills_only_groups_that_name_the_run(tmp_path):
    import subprocess, time
    d = str(tmp_path / "run")
    os.mkdir(d)
    mine = subprocess.Popen(["sh", "-c", "sleep 30; true", d], start_new_session=True)
    other = subprocess.Popen(["sleep", "30"], start_new_session=True)
    try:
        (tmp_path / "run" / "pgids").write_text("%d\n%d\n" % (mine.pid, other.pid))
        assert rundir.sweep(d) == 1
        assert mine.wait(timeout=10) == -9
        time.sleep(0.1)
        assert other.poll() is None
    finally:
        for p in (mine, other):
            p.kill()
            p.wait()
