"""cluster.sh's result.json and JUnit file (dn2scripts.cluster_result) from
the launcher's key/value record, on a run directory the test makes."""
import json
import xml.etree.ElementTree as ET

from dn2scripts import cluster_result


def record(path, kv):
    path.write_bytes(b"".join(k.encode() + b"\0" + v.encode() + b"\0" for k, v in kv.items()))


BASE = {"name": "t1", "mode": "run", "command": "dn2-e2e", "exit_status": "1", "duration_s": "12.5",
        "all_links_up_s": "3.2", "rank_table_s": "-", "ready_s": "4.0", "timeout_s": "600",
        "accel": "tcg", "mem": "256", "mem_auto": "1", "smp": "1", "image": "/x/initramfs.cpio.lz4",
        "image_unpacked_mib": "40", "image_mem_mib": "200", "vt": "0", "node_count": "2",
        "node.0.state": "ok", "node.0.rc": "0", "node.0.begin_s": "4.0", "node.0.done_s": "9.25",
        "node.0.lid": "1", "node.0.link_s": "3.1", "node.0.joined_s": "3.5", "node.0.qemu_rc": "0",
        "node.1.state": "failed", "node.1.rc": "3", "node.1.begin_s": "4.0", "node.1.done_s": "5.0",
        "node.1.lid": "2", "node.1.qemu_rc": "-", "node.1.why": ""}


def write(tmp_path, kv, junit=True):
    rundir = tmp_path / "run"
    rundir.mkdir()
    (rundir / "node0.log").write_text("boot\n")
    (rundir / "node1.log").write_text("boot\npanic\x01\r\n\n")
    (rundir / "node1.out").write_text("FAIL: x\n")
    (rundir / "launcher.log").write_text("")
    (rundir / "board-stats").mkdir()
    (rundir / "board-stats" / "node0").write_text("tx_packets=5\nmode=vt\n")
    record(tmp_path / "kv", kv)
    j = str(tmp_path / "junit.xml") if junit else ""
    cluster_result.main(["cluster_result", str(tmp_path / "kv"), str(rundir), j])
    return rundir, json.loads((rundir / "result.json").read_text()), j


def test_result_json(tmp_path):
    rundir, res, j = write(tmp_path, BASE)
    assert res["format"] == "dimmnet2-cluster-result" and res["version"] == 1
    assert (res["name"], res["mode"], res["command"], res["node_count"]) == ("t1", "run", "dn2-e2e", 2)
    assert res["exit_status"] == 1 and res["duration_s"] == 12.5 and res["rank_table_s"] is None
    assert res["guest"] == {"accel": "tcg", "mem_mib": 256, "mem_from_image": True, "smp": 1,
                            "image": "/x/initramfs.cpio.lz4", "image_unpacked_mib": 40, "image_mem_mib": 200}
    assert res["virtual_time"] is False and res["mpi_abort"] is None
    assert res["logs"] == {"launcher": "launcher.log"} and res["junit"] == j
    n0, n1 = res["nodes"]
    assert (n0["state"], n0["exit_status"], n0["duration_s"], n0["lid"], n0["why"]) == ("ok", 0, 5.2, 1, None)
    assert n0["board_counters"] == {"tx_packets": 5, "mode": "vt"}
    assert n0["logs"] == {"console": "node0.log", "board_counters": "board-stats/node0"}
    assert (n1["state"], n1["exit_status"], n1["qemu_exit_status"]) == ("failed", 3, None)
    assert n1["logs"] == {"console": "node1.log", "output": "node1.out"} and "board_counters" not in n1
    assert not (rundir / "result.json.tmp").exists()


def test_junit(tmp_path):
    _, _, j = write(tmp_path, BASE)
    su = ET.parse(j).getroot()
    assert su.tag == "testsuite" and su.get("name") == "cluster t1"
    assert (su.get("tests"), su.get("failures"), su.get("errors"), su.get("time")) == ("2", "1", "0", "12.5")
    props = {p.get("name"): p.get("value") for p in su.find("properties")}
    assert props["mode"] == "run" and props["command"] == "dn2-e2e" and props["result"].endswith("result.json")
    tc0, tc1 = su.findall("testcase")
    assert tc0.get("name") == "node 0" and tc0.get("time") == "5.2" and len(tc0) == 0
    f = tc1.find("failure")
    assert f.get("type") == "exit status" and f.get("message") == "node 1: the command exited with status 3"
    # the output's tail first, then the console's; control characters replaced
    assert f.text.split("\n") == ["---- output (node1.out) ----", "FAIL: x",
                                  "---- console (node1.log) ----", "boot", "panic?"]


def test_junit_error_for_a_node_that_did_not_finish(tmp_path):
    kv = dict(BASE, **{"node.1.state": "timeout", "node.1.why": "no answer in 600 s"})
    _, _, j = write(tmp_path, kv)
    e = ET.parse(j).getroot().findall("testcase")[1].find("error")
    assert e.get("type") == "timeout" and e.get("message") == "node 1: no answer in 600 s"


def test_no_junit_when_not_asked(tmp_path):
    _, res, _ = write(tmp_path, BASE, junit=False)
    assert res["junit"] is None and not (tmp_path / "junit.xml").exists()
