"""bench-cluster.sh --lock-profile: once both nodes' QMP sockets are there,
sync-profile on in both QEMUs; reset when rank 0's dn2-bench starts; the
latest "info sync-profile" of each node kept in OUT-DIR/locksI.

  lock_profile.py SCRIPTS-DIR RUNDIR OUT-DIR
"""
import os, sys, time


def main(argv=None):
    argv = sys.argv if argv is None else argv
    sys.dont_write_bytecode = True
    sys.path.insert(0, argv[1])
    from qmp import QMP
    rundir, out = argv[2], argv[3]
    def hmp(path, line):
        q = QMP(path, timeout=5)
        try:
            return q.hmp(line)
        finally:
            q.close()
    socks = {}
    while len(socks) < 2:
        try:
            for l in open(os.path.join(rundir, "info")):
                k, _, v = l.strip().partition("=")
                if k in ("node0_qmp", "node1_qmp"): socks[int(k[4])] = v
        except OSError: pass
        time.sleep(0.5)
    on = set(); reset = False
    while True:
        for i, p in socks.items():
            try:
                if i not in on:
                    hmp(p, "sync-profile on"); on.add(i)
                if reset:
                    t = hmp(p, "info sync-profile -n 12")
                    if t and "Type" in t:
                        with open(os.path.join(out, "locks%d.tmp" % i), "w") as f: f.write(t)
                        os.rename(os.path.join(out, "locks%d.tmp" % i), os.path.join(out, "locks%d" % i))
            except Exception: pass
        if not reset and len(on) == 2:
            try:
                if "[dn2-bench]" in open(os.path.join(rundir, "node0.log"), errors="replace").read():
                    for p in socks.values(): hmp(p, "sync-profile reset")
                    reset = True
            except Exception: pass
        time.sleep(1)


if __name__ == "__main__":
    main()
