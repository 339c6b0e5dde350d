"""The cluster's result.json and JUnit file (cluster.sh --result/--junit).

  cluster_result.py KV-FILE RUNDIR JUNIT-OR-EMPTY
"""
import json, os, socket, sys
import xml.etree.ElementTree as ET


def main(argv=None):
    argv = sys.argv if argv is None else argv
    inp, rundir, junit = argv[1:4]
    raw = open(inp, "rb").read().split(b"\0")
    kv = {}
    for k, v in zip(raw[0::2], raw[1::2]):
        kv[k.decode()] = v.decode("utf-8", "replace")


    def num(v):
        if v in (None, "", "-"):
            return None
        try:
            return float(v) if "." in v else int(v)
        except ValueError:
            return None


    def tail(path, n):
        try:
            with open(os.path.join(rundir, path), "rb") as f:
                lines = f.read().decode("utf-8", "replace").replace("\r", "").split("\n")
        except OSError:
            return []
        while lines and not lines[-1]:
            lines.pop()
        return lines[-n:]


    nodes = []
    for i in range(int(kv["node_count"])):
        g = lambda k: kv.get("node.%d.%s" % (i, k), "")
        b, d = num(g("begin_s")), num(g("done_s"))
        e = {"node": i, "rank": i, "state": g("state"), "exit_status": num(g("rc")),
             "duration_s": round(d - b, 1) if b is not None and d is not None else None,
             "lid": num(g("lid")), "link_up_s": num(g("link_s")), "joined_s": num(g("joined_s")),
             "command_started_s": b, "command_ended_s": d, "qemu_exit_status": num(g("qemu_rc")),
             "why": g("why") or None,
             "logs": {k: f for k, f in (("console", "node%d.log" % i), ("output", "node%d.out" % i),
                                        ("qemu_stderr", "node%d.stderr" % i), ("qemu_command", "node%d.cmd" % i),
                                        ("pcap", "node%d.pcap" % i))
                      if os.path.exists(os.path.join(rundir, f))}}
        sf = os.path.join(rundir, "board-stats", "node%d" % i)
        if os.path.exists(sf):
            c = {}
            for l in open(sf, encoding="utf-8", errors="replace").read().split("\n"):
                if "=" in l:
                    k, v = l.split("=", 1)
                    c[k] = num(v) if num(v) is not None else v
            e["board_counters"] = c
            e["logs"]["board_counters"] = "board-stats/node%d" % i
        nodes.append(e)

    res = {"format": "dimmnet2-cluster-result", "version": 1,
           "name": kv["name"], "run_dir": rundir, "mode": kv["mode"],
           "command": kv.get("command") or None, "node_count": len(nodes),
           "exit_status": num(kv.get("exit_status")), "duration_s": num(kv.get("duration_s")),
           "all_links_up_s": num(kv.get("all_links_up_s")), "rank_table_s": num(kv.get("rank_table_s")),
           "ready_s": num(kv.get("ready_s")), "timeout_s": num(kv.get("timeout_s")),
           "guest": {"accel": kv.get("accel"), "mem_mib": num(kv.get("mem")), "mem_from_image": kv.get("mem_auto") == "1",
                     "smp": num(kv.get("smp")), "image": kv.get("image"),
                     "image_unpacked_mib": num(kv.get("image_unpacked_mib")), "image_mem_mib": num(kv.get("image_mem_mib"))},
           "virtual_time": kv.get("vt") == "1", "mpi_abort": kv.get("pmi_abort") or None,
           "logs": {k: f for k, f in (("launcher", "launcher.log"), ("switch", "switch.log"), ("job_server", "http.log"),
                                      ("timings", "timings"), ("switch_stats", "switch.stats"))
                    if os.path.exists(os.path.join(rundir, f))},
           "junit": junit or None, "nodes": nodes}
    path = os.path.join(rundir, "result.json")
    with open(path + ".tmp", "w") as f:
        json.dump(res, f, indent=1)
        f.write("\n")
    os.replace(path + ".tmp", path)

    if junit:
        import re
        bad = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
        clean = lambda s: bad.sub("?", s)
        su = ET.Element("testsuite", name="cluster " + res["name"], hostname=socket.gethostname())
        props = ET.SubElement(su, "properties")
        ET.SubElement(props, "property", name="mode", value=res["mode"])
        ET.SubElement(props, "property", name="command", value=clean(res["command"] or ""))
        ET.SubElement(props, "property", name="result", value=path)
        f_n = e_n = 0
        for e in nodes:
            i = e["node"]
            tc = ET.SubElement(su, "testcase", classname="cluster." + res["name"], name="node %d" % i,
                               time="%.1f" % (e["duration_s"] or 0.0))
            if e["state"] in ("ok", "up"):
                continue
            text = tail("node%d.out" % i, 30)
            text = (["---- output (node%d.out) ----" % i] + text if text else []) + \
                   ["---- console (node%d.log) ----" % i] + tail("node%d.log" % i, 30)
            if e["state"] == "failed":
                f_n += 1
                el = ET.SubElement(tc, "failure", type="node failed" if e["why"] else "exit status",
                                   message="node %d: %s" % (i, e["why"] or "the command exited with status %s" % e["exit_status"]))
            else:
                e_n += 1
                el = ET.SubElement(tc, "error", type=e["state"], message="node %d: %s" % (i, e["why"] or e["state"]))
            el.text = clean("\n".join(text))
        su.set("tests", str(len(nodes))); su.set("failures", str(f_n)); su.set("errors", str(e_n))
        su.set("skipped", "0"); su.set("time", "%.1f" % (res["duration_s"] or 0.0))
        if hasattr(ET, "indent"):
            ET.indent(su)
        ET.ElementTree(su).write(junit + ".tmp", encoding="UTF-8", xml_declaration=True)
        os.replace(junit + ".tmp", junit)


if __name__ == "__main__":
    main()
