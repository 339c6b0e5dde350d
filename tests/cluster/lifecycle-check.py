#!/usr/bin/env python3
"""The result checks of tests/cluster/lifecycle-test.sh.

Usage: lifecycle-check.py kept|one-shot RESULT_JSON JUNIT_XML.  Prints ok,
or raises AssertionError with what was found (exit status 1).
"""
import json, sys, xml.etree.ElementTree as ET


def kept(r, s):
    assert r["format"] == "dimmnet2-cluster-result" and r["mode"] == "kept", r.get("mode")
    n0, n1 = r["nodes"]
    assert n0["state"] == "up" and n0["lid"] and "console" in n0["logs"], n0
    assert n1["state"] == "failed" and "SIGKILL" in n1["why"] and n1["qemu_exit_status"] == 137, n1
    assert "tx-packets" in n0["board_counters"], n0.get("board_counters")
    assert s.tag == "testsuite" and s.get("tests") == "2" and s.get("failures") == "1", s.attrib
    f = s.findall("testcase")[1].find("failure")
    assert f is not None and "SIGKILL" in f.get("message"), f


def one_shot(r, s):
    assert r["mode"] == "one-shot" and r["exit_status"] == 1 and r["node_count"] == 2, r
    n0, n1 = r["nodes"]
    assert n0["state"] == "ok" and n0["exit_status"] == 0 and n0["duration_s"] is not None, n0
    assert n1["state"] == "failed" and n1["exit_status"] == 7 and n1["why"] is None, n1
    assert n1["logs"]["output"] == "node1.out" and n1["logs"]["console"] == "node1.log", n1
    assert s.get("tests") == "2" and s.get("failures") == "1" and s.get("errors") == "0", s.attrib
    c0, c1 = s.findall("testcase")
    assert c0.get("name") == "node 0" and c0.find("failure") is None
    f = c1.find("failure")
    assert "status 7" in f.get("message") and "output of 1" in f.text, (f.attrib, f.text)


if __name__ == "__main__":
    r = json.load(open(sys.argv[2]))
    s = ET.parse(sys.argv[3]).getroot()
    {"kept": kept, "one-shot": one_shot}[sys.argv[1]](r, s)
    print("ok")
