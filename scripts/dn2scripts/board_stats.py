"""cluster.sh --board-stats: every node's board counters (QOM property
'stats') into OUT-DIR/nodeI once a second, until killed.

  board_stats.py SCRIPTS-DIR OUT-DIR QMP-SOCKET...
"""
import os, sys, time


def main(argv=None):
    argv = sys.argv if argv is None else argv
    sys.dont_write_bytecode = True
    sys.path.insert(0, argv[1])
    from qmp import QMP
    out, socks = argv[2], argv[3:]
    paths = {}
    def boards(q):
        res = []
        for d in q.cmd("qom-list", {"path": "/machine/peripheral-anon"}).get("return", []):
            p = "/machine/peripheral-anon/" + d["name"]
            if d["type"].startswith("child<") and q.cmd("qom-get", {"path": p, "property": "type"}).get("return") == "dimmnet2":
                res.append(p)
        return res
    def stats(path):
        q = QMP(path)
        try:
            if path not in paths:
                paths[path] = boards(q)
            res = []
            for p in paths[path]:
                res += q.cmd("qom-get", {"path": p, "property": "stats"})["return"].split()
            return res
        finally:
            q.close()
    while True:
        for i, path in enumerate(socks):
            try:
                st = stats(path)
            except Exception:
                continue
            if st:
                tmp = os.path.join(out, "node%d.tmp" % i)
                with open(tmp, "w") as f:
                    f.write("\n".join(sorted(st)) + "\n")
                os.rename(tmp, os.path.join(out, "node%d" % i))
        time.sleep(1)


if __name__ == "__main__":
    main()
