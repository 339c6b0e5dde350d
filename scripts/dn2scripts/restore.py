"""restore (cluster.sh restore): every node loads its state; the boards resume.

  restore.py SCRIPTS-DIR BOOT-TIMEOUT SWITCH-STATS LIDS ...
"""
import os, subprocess, sys, time


def main(argv=None):
    argv = sys.argv if argv is None else argv
    sys.dont_write_bytecode = True
    sys.path.insert(0, argv[1])
    from qmp import connect, cmd_all
    wait_s, sw_cmd, lids = float(argv[2]), argv[3].split("\x1f"), argv[4].split()
    pids, socks = [int(p) for p in argv[5].split()], argv[6:]
    parent = os.getppid()
    def fail(m, rc=3):
        print("[cluster] error: " + m, file=sys.stderr, flush=True); sys.exit(rc)
    def alive(pid):     # (a zombie is not: the launcher reaps its QEMUs later)
        try:
            with open("/proc/%d/stat" % pid) as f:
                return f.read().rsplit(")", 1)[1].split()[0] != "Z"
        except OSError:
            return False
    def check():        # a QEMU that ended, or a launcher that is gone, ends the wait
        if os.getppid() != parent:
            sys.exit(3)
        for i, pid in enumerate(pids):
            if not alive(pid):
                fail("node%d: QEMU ended before its snapshot was loaded (see its stderr)" % i)
    t0 = time.monotonic()
    deadline = t0 + wait_s
    qs = []
    for i, p in enumerate(socks):
        while True:
            check()
            try:
                qs.append(connect(p, timeout=60)); break
            except OSError as e:
                if time.monotonic() > deadline:
                    fail("node%d: no QMP socket after %g s (%s)" % (i, wait_s, e))
                time.sleep(0.05)
    for i, q in enumerate(qs):
        while True:
            try:
                st = q.cmd("query-status")["return"]["status"]
                m = q.cmd("query-migrate")["return"]
            except (OSError, ValueError, KeyError):
                fail("node%d: QEMU ended while loading its snapshot (see its stderr)" % i)
            if m.get("status") == "failed":
                fail("node%d: loading the snapshot failed: %s" % (i, m.get("error-desc", "?")))
            if st == "paused" or m.get("status") == "completed": break
            if time.monotonic() > deadline: fail("node%d: not loaded after %g s (status %s)" % (i, wait_s, st))
            check()
            time.sleep(0.02)
    t_loaded = time.monotonic()
    want = {"0x%016x" % (i + 1): int(l) for i, l in enumerate(lids)}
    while True:
        got = {}
        try:
            out = subprocess.run(sw_cmd, capture_output=True, text=True, timeout=10).stdout
        except subprocess.TimeoutExpired:
            out = ""
        for line in out.splitlines():
            f = line.split()
            if len(f) > 2 and f[1] == "active":
                try: got[f[2]] = int(f[0], 0)
                except ValueError: pass
        if all(got.get(g) == l for g, l in want.items()): break
        if time.monotonic() > deadline:
            bad = ["GUID %s: LID %s, wants %d" % (g, got.get(g, "none"), l) for g, l in want.items() if got.get(g) != l]
            fail("the boards did not get their saved LIDs back in %g s: %s" % (wait_s, "; ".join(bad[:4])))
        check()
        time.sleep(0.02)
    t_lids = time.monotonic()
    cmd_all(qs, "cont")
    print("every node loaded %.2f s, every board at its LID %.2f s after the QEMUs started" % (t_loaded - t0, t_lids - t0))


if __name__ == "__main__":
    main()
