#!/usr/bin/env python3
"""The result checks of tests/mpi/mpirun-options-test.sh.

Usage: mpirun-options-check.py WHAT RESULT_JSON JUNIT_XML, WHAT one of
json, ranks, junit, junit-tail.  Prints what it found; on a failed check
prints why and exits 1.
"""
import json, sys
import xml.etree.ElementTree as ET
what, rpath, jpath = sys.argv[1:4]
def need(c, msg):
    if not c:
        print(msg); sys.exit(1)
if what == "json":
    r = json.load(open(rpath))
    need(r.get("format") == "dimmnet2-mpirun-result", "format %r" % r.get("format"))
    need(r["exit_status"] == 3, "exit_status %r" % r["exit_status"])
    need(r["first_failure"] and r["first_failure"]["rank"] == 1 and r["first_failure"]["status"] == 3,
         "first_failure %r" % r["first_failure"])
    need(r["node_count"] == 1 and r["ppn"] == 2 and r["rank_count"] == 2, "counts")
    n = r["nodes"]
    need(len(n) == 1 and n[0]["node"] == 0 and n[0]["exit_status"] not in (None, 0), "nodes %r" % n)
    need(n[0]["duration_s"] is not None and n[0]["duration_s"] >= 4, "node duration %r" % n[0]["duration_s"])
    need("console" in n[0]["logs"], "node logs %r" % n[0]["logs"])
    print("result.json: valid, exit_status 3, first failure rank 1 status 3, node 0 exit %d after %.1f s, logs %s"
          % (n[0]["exit_status"], n[0]["duration_s"], ", ".join(sorted(n[0]["logs"]))))
elif what == "ranks":
    r = json.load(open(rpath))
    rk = {x["rank"]: x for x in r["ranks"]}
    need(sorted(rk) == [0, 1], "ranks %r" % sorted(rk))
    need(rk[1]["status"] == 3 and rk[1]["node"] == 0 and rk[1]["wid"] == 1, "rank 1 %r" % rk[1])
    need(rk[0]["status"] not in (None, 0) and rk[0]["node"] == 0, "rank 0 %r" % rk[0])
    for x in rk.values():
        need(x["duration_s"] is not None and x["duration_s"] >= 4, "rank %d duration %r" % (x["rank"], x["duration_s"]))
        need(x["log"] and "second line of rank %d" % x["rank"] in open(r["run_dir"] + "/" + x["log"]).read(),
             "rank %d log %r" % (x["rank"], x["log"]))
    print("ranks: 1 status 3 (node 0, WID 1), 0 status %d; durations %.1f, %.1f s; output in %s, %s"
          % (rk[0]["status"], rk[0]["duration_s"], rk[1]["duration_s"], rk[0]["log"], rk[1]["log"]))
elif what == "junit":
    t = ET.parse(jpath).getroot()
    cases = t.findall(".//testcase")
    need(t.tag == "testsuites" and len(cases) == 2, "%s with %d test cases" % (t.tag, len(cases)))
    need(t.get("tests") == "2" and t.get("failures") == "2", "counts tests=%s failures=%s" % (t.get("tests"), t.get("failures")))
    print("JUnit: valid XML, 2 test cases (%s)" % ", ".join(c.get("name") for c in cases))
elif what == "junit-tail":
    t = ET.parse(jpath).getroot()
    c = [c for c in t.iter("testcase") if c.get("name").startswith("rank 1 ")]
    need(len(c) == 1, "no test case for rank 1")
    f = c[0].find("failure")
    need(f is not None and "status 3" in f.get("message", ""), "rank 1's failure: %r" % (f.attrib if f is not None else None))
    need("second line of rank 1" in (f.text or "") and "rank 1 waiting" in (f.text or ""), "the tail: %r" % f.text)
    print("rank 1's failure: %s; the tail has %d lines" % (f.get("message"), len(f.text.split("\n"))))
