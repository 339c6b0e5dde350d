"""mpirun.sh's output streamer: follows the nodes' consoles, prints the ranks'
output, writes result.json and the JUnit file.

  mpirun_stream.py RUNDIR DONE-FILE NODES PPN JOBS-FILE JUNIT STATUS-FILE NAME TIMEOUT-S STATS CMD-JSON
"""
import collections, json, os, re, socket, sys, time
import xml.etree.ElementTree as ET


def main(argv=None):
    argv = sys.argv if argv is None else argv
    (rundir, done_file, nodes, ppn, jobs_file, junit, status_file, name, timeout_s,
     stats, cmd_json) = argv[1:12]
    nodes, ppn, timeout_s = int(nodes), int(ppn), int(timeout_s)
    command = json.loads(cmd_json)
    jobs = [l.split("\t", 1) for l in open(jobs_file, encoding="utf-8").read().split("\n") if l]
    njobs = len(jobs)
    out = sys.stdout.buffer
    rank_re = re.compile(rb"^\[(\d+)(?:\.(\d+))?\] ")
    TAIL = 30
    t0 = time.monotonic()


    def now():
        return round(time.monotonic() - t0, 3)


    class Node:
        def __init__(self, i):
            self.i, self.off, self.buf, self.f = i, 0, b"", None
            self.begin = self.end = self.rc = self.start_failed = None


    class Rank:
        def __init__(self, job, rank):
            self.job, self.rank = job, rank
            self.node, self.wid = rank // ppn, rank % ppn
            self.status = self.up0 = self.up1 = self.t0 = self.t1 = None
            self.killed_by = None
            self.tail = collections.deque(maxlen=TAIL)
            self.lines, self.f = 0, None
            self.label = str(rank) if njobs == 1 else "%d.%d" % (job, rank)
            self.log = "ranks/%s.out" % self.label


    ns = [Node(i) for i in range(nodes)]
    ranks = {}
    order = []          # (job, rank) of the failing ranks, as their ends arrived
    vt = os.environ.get("DN2_MPIRUN_VT") == "1"
    vt_abort = None     # virtual time: the abort, as the aborting node said it


    def rank(job, r):
        k = (job, r)
        if k not in ranks:
            ranks[k] = Rank(job, r)
        return ranks[k]


    def text(b):
        return b.decode("utf-8", "replace")


    def line(n, l):
        if n.end is not None:
            return
        if n.begin is None:
            if l == b"DN2-GUEST-BEGIN":
                n.begin = now()
            elif l.startswith(b"DN2-START-FAILED "):
                n.start_failed = text(l[17:])
            return
        if l.startswith(b"DN2-GUEST-END rc="):
            n.end = now()
            try:
                n.rc = int(l[17:])
            except ValueError:
                pass
            return
        w = l.split()
        try:
            if l.startswith(b"DN2-MPI-RANK-START ") and len(w) == 4:
                rk = rank(int(w[1]), int(w[2]))
                rk.node, rk.up0, rk.t0 = n.i, float(w[3]), now()
                return
            if l.startswith(b"DN2-MPI-RANK-END ") and len(w) == 5:
                rk = rank(int(w[1]), int(w[2]))
                rk.node, rk.status, rk.up1, rk.t1 = n.i, int(w[3]), float(w[4]), now()
                if rk.status != 0 and rk.killed_by is None:
                    order.append((rk.job, rk.rank))
                return
            # (virtual time: a rank the PMI agent ended because another aborted
            # the job does not count as a failure of its own)
            if l.startswith(b"DN2-MPI-RANK-KILLED ") and len(w) == 4:
                rank(int(w[1]), int(w[2])).killed_by = int(w[3])
                return
            if l.startswith(b"DN2-MPI-ABORTED "):
                nonlocal vt_abort
                if vt_abort is None:
                    vt_abort = text(l[16:])
                    out.write(b"[mpirun] MPI job aborted: " + l[16:] + b"\n")
                return
        except ValueError:
            pass
        m = rank_re.match(l)
        if m:
            job, r = (int(m.group(1)), int(m.group(2))) if m.group(2) else (1, int(m.group(1)))
            rk = rank(job, r)
            out.write(l + b"\n")
            rk.tail.append(text(l[m.end():]))
            rk.lines += 1
            if rk.f is None:
                os.makedirs(os.path.join(rundir, "ranks"), exist_ok=True)
                rk.f = open(os.path.join(rundir, rk.log), "ab")
            rk.f.write(l[m.end():] + b"\n")
        else:
            out.write(b"node%d| " % n.i + l + b"\n")


    def poll(final=False):
        for n in ns:
            if n.f is None:
                try:
                    n.f = open(os.path.join(rundir, "node%d.log" % n.i), "rb")
                except OSError:
                    continue
            data = n.f.read()
            if not data:
                if final and n.buf:
                    line(n, n.buf.replace(b"\r", b""))
                    n.buf = b""
                continue
            n.buf += data
            *whole, n.buf = n.buf.split(b"\n")
            for l in whole:
                line(n, l.replace(b"\r", b""))
            if final and n.buf:
                line(n, n.buf.replace(b"\r", b""))
                n.buf = b""
        out.flush()
        for rk in ranks.values():
            if rk.f:
                rk.f.flush()


    parent = os.getppid()
    info = os.path.join(rundir, "info")
    attached = False
    while True:
        done = os.path.exists(done_file)
        if not attached:
            attached = os.path.exists(info)
        if attached:
            poll(final=done)
        if done or os.getppid() != parent:
            break
        time.sleep(0.1)
    for rk in ranks.values():
        if rk.f:
            rk.f.close()

    # ---- the results
    try:
        crc = int(open(done_file).read().strip())
    except (OSError, ValueError):
        crc = 1


    def readkv(path):
        try:
            return open(path, encoding="utf-8", errors="replace").read().split("\n")
        except OSError:
            return []


    def num(v):
        try:
            return float(v) if "." in v else int(v)
        except ValueError:
            return None


    timings, node_t = {}, {}
    for l in readkv(os.path.join(rundir, "timings")):
        w = l.split()
        if len(w) == 1 and "=" in w[0]:
            k, v = w[0].split("=", 1)
            timings[k] = num(v) if v else None
        elif len(w) > 1 and w[0].startswith("node"):
            node_t[w[0]] = {k: (num(v) if v else None) for k, v in (x.split("=", 1) for x in w[1:] if "=" in x)}

    abort = (readkv(os.path.join(rundir, "pmi-abort")) or [""])[0] or vt_abort
    if vt:
        # Virtual time: the first failure in the guests' time (their clocks
        # run in lock-step), not in the order the host read the consoles.
        order.sort(key=lambda k: (k[0], ranks[k].up1 if ranks[k].up1 is not None else 1e18, k[1]))
    first = ranks[order[0]] if order else None
    if crc == 1:
        status = first.status if first else 1
    else:
        status = crc
    # (a shell's status is 0..255; a rank's is too)
    status = status if 0 <= status <= 255 else 1


    def existing(*names):
        return {k: f for k, f in names if os.path.exists(os.path.join(rundir, f))}


    # cluster.sh's own result (written when it ended): its reason for a node
    # that failed (an image that does not fit in -m, QEMU failing to start)
    # names the cause, where the job's view ("cannot reach the job server")
    # names only the symptom.
    path = os.path.join(rundir, "result.json")
    cluster_res = None
    try:
        cluster_res = json.load(open(path))
        if cluster_res.get("format") != "dimmnet2-cluster-result":
            cluster_res = None
    except (OSError, ValueError):
        pass
    cl_why = {}
    for cn in (cluster_res or {}).get("nodes", []):
        if isinstance(cn, dict) and cn.get("why"):
            cl_why[cn.get("node")] = cn["why"]

    node_res = []
    for n in ns:
        t = node_t.get("node%d" % n.i, {})
        if n.rc is not None:
            state = "done"
        elif n.start_failed:
            state = "start failed"
        elif n.begin is not None:
            state = "stopped"
        else:
            state = "not started"
        e = {"node": n.i, "exit_status": n.rc, "state": state,
             "duration_s": round(n.end - n.begin, 3) if n.end is not None and n.begin is not None else None,
             "link_up_s": t.get("link_s"), "joined_s": t.get("joined_s"), "done_s": t.get("done_s"),
             "lid": t.get("lid"),
             "ranks": [r for r in range(n.i * ppn, n.i * ppn + ppn)],
             "logs": existing(("console", "node%d.log" % n.i), ("output", "node%d.out" % n.i),
                              ("qemu_stderr", "node%d.stderr" % n.i), ("qemu_command", "node%d.cmd" % n.i))}
        if n.i in cl_why and n.rc is None:
            e["why"] = cl_why[n.i] + ("; job start failed: " + n.start_failed if n.start_failed else "")
        elif n.start_failed:
            e["why"] = "job start failed: " + n.start_failed
        sf = os.path.join(rundir, "board-stats", "node%d" % n.i)
        if os.path.exists(sf):
            c = {}
            for l in readkv(sf):
                if "=" in l:
                    k, v = l.split("=", 1)
                    c[k] = num(v) if num(v) is not None else v
            e["board_counters"] = c
            e["logs"]["board_counters"] = "board-stats/node%d" % n.i
        node_res.append(e)

    failed_jobs = set(rk.job for rk in ranks.values() if rk.status not in (None, 0))
    rank_res = []
    for j in range(1, njobs + 1):
        for r in range(nodes * ppn):
            rk = ranks.get((j, r)) or Rank(j, r)
            ranks[(j, r)] = rk
            if rk.status is not None:
                st = "ok" if rk.status == 0 else "failed"
            elif rk.up0 is not None:
                st = "no status"      # started, its end never reached the host
            elif any(fj < j for fj in failed_jobs):
                st = "not run"        # an earlier job failed
            else:
                st = "not started"
            rk.state = st
            rank_res.append({
                "job": j, "rank": r, "node": rk.node, "wid": rk.wid, "status": rk.status, "state": st,
                "duration_s": round(rk.up1 - rk.up0, 3) if rk.up0 is not None and rk.up1 is not None else None,
                "started_s": rk.t0, "ended_s": rk.t1, "output_lines": rk.lines,
                "log": rk.log if os.path.exists(os.path.join(rundir, rk.log)) else None})

    res = {
        "format": "dimmnet2-mpirun-result", "version": 1,
        "name": name, "run_dir": rundir, "command": command,
        "node_count": nodes, "ppn": ppn, "rank_count": nodes * ppn,
        "jobs": [{"job": j + 1, "network": jb[0], "command": jb[1] if len(jb) > 1 else ""} for j, jb in enumerate(jobs)],
        "exit_status": status, "cluster_exit_status": crc,
        "first_failure": {"job": first.job, "rank": first.rank, "node": first.node, "status": first.status} if first else None,
        "aborted": abort,
        "duration_s": timings.get("total_s"), "timeout_s": timeout_s,
        "all_links_up_s": timings.get("all_links_up_s"), "rank_table_s": timings.get("rank_table_s"),
        "board_stats": bool(stats),
        "junit": os.path.abspath(junit) if junit else None,
        "nodes": node_res, "ranks": rank_res,
    }
    if os.path.isdir(rundir):
        if cluster_res is not None:     # cluster.sh's own result is kept inside
            res["cluster"] = cluster_res
        tmp = path + ".tmp"
        with open(tmp, "w") as f:
            json.dump(res, f, indent=1)
            f.write("\n")
        os.replace(tmp, path)

    if junit:
        bad = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
        clean = lambda s: bad.sub("?", s)
        top = ET.Element("testsuites", name="mpirun " + name)
        T = F = E = S = 0
        for j, jb in enumerate(jobs, 1):
            sname = name if njobs == 1 else "%s.job%d" % (name, j)
            su = ET.SubElement(top, "testsuite", name=sname, hostname=socket.gethostname())
            props = ET.SubElement(su, "properties")
            ET.SubElement(props, "property", name="network", value=jb[0])
            ET.SubElement(props, "property", name="command", value=clean(jb[1] if len(jb) > 1 else ""))
            ET.SubElement(props, "property", name="result", value=path)
            t = f = e = s = 0
            tt = 0.0
            for r in range(nodes * ppn):
                rk = ranks[(j, r)]
                d = rk.up1 - rk.up0 if rk.up0 is not None and rk.up1 is not None else 0.0
                tt += d
                tc = ET.SubElement(su, "testcase", classname="mpirun." + sname,
                                   name="rank %d (node %d)" % (r, rk.node), time="%.3f" % d)
                tail = clean("\n".join(rk.tail))
                t += 1
                if rk.state == "failed":
                    f += 1
                    el = ET.SubElement(tc, "failure", type="exit status",
                                       message="rank %d exited with status %d" % (r, rk.status))
                    el.text = tail
                elif rk.state == "not run":
                    s += 1
                    ET.SubElement(tc, "skipped", message="not run: an earlier job failed")
                elif rk.state != "ok":
                    e += 1
                    n = ns[rk.node]
                    why = {"no status": "started, but no exit status reached the host",
                           "not started": "not started"}[rk.state]
                    why += " (node %d: %s%s; mpirun.sh exit %d)" % (
                        rk.node, node_res[rk.node]["state"],
                        ", " + node_res[rk.node]["why"] if node_res[rk.node].get("why") else "", status)
                    el = ET.SubElement(tc, "error", type=rk.state, message=why)
                    el.text = tail
            su.set("tests", str(t)); su.set("failures", str(f)); su.set("errors", str(e))
            su.set("skipped", str(s)); su.set("time", "%.3f" % tt)
            T, F, E, S = T + t, F + f, E + e, S + s
        top.set("tests", str(T)); top.set("failures", str(F)); top.set("errors", str(E))
        top.set("skipped", str(S)); top.set("time", "%.3f" % (timings.get("total_s") or now()))
        ET.indent(top) if hasattr(ET, "indent") else None
        tmp = junit + ".tmp"
        ET.ElementTree(top).write(tmp, encoding="UTF-8", xml_declaration=True)
        os.replace(tmp, junit)

    with open(status_file, "w") as f:
        f.write("%d\n" % status)


if __name__ == "__main__":
    main()
