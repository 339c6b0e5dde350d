"""Virtual time: run every node to the cut (cluster.sh --snapshot-at).

  vt_cut.py SCRIPTS-DIR CUT-NS 'QEMU-PIDS' QMP-SOCKET...
"""
import os, sys, time


def main(argv=None):
    argv = sys.argv if argv is None else argv
    sys.dont_write_bytecode = True
    sys.path.insert(0, argv[1])
    from qmp import connect, dimmnet2_boards, cmd_all
    cut, pids, socks = int(argv[2]), [int(p) for p in argv[3].split()], argv[4:]
    parent = os.getppid()
    def fail(m, rc=3):
        print("[cluster] " + m, file=sys.stderr, flush=True); sys.exit(rc)
    def alive(pid):
        try:
            with open("/proc/%d/stat" % pid) as f:
                return f.read().rsplit(")", 1)[1].split()[0] != "Z"
        except OSError:
            return False
    def check():
        if os.getppid() != parent: sys.exit(3)
        for i, pid in enumerate(pids):
            if not alive(pid): fail("node%d ended before the cut at %d ns" % (i, cut))
    qs = []
    for i, p in enumerate(socks):
        t0 = time.monotonic()
        while True:
            check()
            try:
                qs.append(connect(p, timeout=60)); break
            except OSError as e:
                if time.monotonic() - t0 > 60: fail("node%d: no QMP socket (%s)" % (i, e), 4)
                time.sleep(0.05)
    boards = [dimmnet2_boards(q) for q in qs]
    for i, (q, bs) in enumerate(zip(qs, boards)):
        for b in bs:
            r = q.cmd("qom-set", {"path": b, "property": "vt-cut-ns", "value": cut})
            if "error" in r: fail("node%d: %s" % (i, r["error"]["desc"]), 4)
    cmd_all(qs, "cont")
    stopped_since = None
    while True:
        check()
        if all(q.cmd("qom-get", {"path": b, "property": "vt-at-cut"}).get("return")
               for q, bs in zip(qs, boards) for b in bs):
            break
        if all(q.cmd("query-status")["return"]["status"] != "running" for q in qs):
            stopped_since = stopped_since or time.monotonic()
            if time.monotonic() - stopped_since > 10:
                cmd_all(qs, "cont")
                fail("every node stopped, but not every board at the cut: no snapshot", 1)
        time.sleep(0.1)
    for q in qs: q.close()


if __name__ == "__main__":
    main()
