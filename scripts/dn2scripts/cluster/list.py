"""cluster.sh list: every cluster in build/cluster, running or not."""
import os
import time

from .cli import Help, Usage
from .rundir import CLUSTER_DIR, clusters, fmt_secs, info_of, local_time, run_state

ROW = "%-28s %-8s %5s  %-8s %-10s %s\n"


def parse(args):
    if args and args[0] in ("-h", "--help"):
        raise Help()
    if args and args[0] != "":
        raise Usage("list: no arguments, not '%s'" % " ".join(args))


def rows(cdir=CLUSTER_DIR, now=None):
    """The table's lines (with its header), or the one line saying there
    is none."""
    now = int(time.time()) if now is None else now
    out = []
    for name in clusters(cdir):
        d = os.path.join(cdir, name)
        info = info_of(d)
        st = run_state(d)
        what = "one-shot"
        if info.get("interactive") == "1":
            what = "-i"
        if info.get("kept"):
            what = "kept"
        started = info.get("started", "")
        up = fmt_secs(now - int(started)) if st == "running" and started else "-"
        if not out:
            out.append(ROW % ("NAME", "STATE", "NODES", "KIND", "UP", "STARTED"))
        out.append(ROW % (name, st, info.get("nodes", "?") or "?", what, up, local_time(started) if started else "-"))
    return out or ["no clusters in %s\n" % cdir]


def main(script, args):
    parse(args)
    print("".join(rows()), end="")
    return 0
