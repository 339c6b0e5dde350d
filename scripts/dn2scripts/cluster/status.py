"""cluster.sh status [NAME]: a cluster's nodes (up, DEAD and why), each
board's link state, LID and packets (the switch's view), the boards'
counters (--board-stats), its uptime; without NAME every running cluster.
"""
import glob
import os
import subprocess
import sys
import time

from .cli import G, R, Y, N, Fail, Help, Usage
from .rundir import (CLUSTER_DIR, clusters, fmt_secs, info_int, info_of, is_cluster, local_time,
                     node_state, pid_alive, run_state, valid_name)


def parse(args):
    """The NAME, or "" for every running cluster."""
    a = list(args)
    while a:
        x = a[0]
        if x in ("-h", "--help"):
            raise Help()
        if len(x) > 1 and x.startswith("-"):
            raise Usage("status: unknown argument: %s" % x)
        break
    if len(a) > 1:
        raise Usage("status: at most one NAME, not '%s'" % " ".join(a))
    return a[0] if a else ""


def fold_stats(text, width=88):
    """The board counters ("name=value" lines) as status shows them: one
    line, folded at spaces to WIDTH columns (fold -s), indented."""
    s = text.replace("\n", " ")
    lines = []
    while len(s) > width:
        cut = s.rfind(" ", 0, width)
        cut = width if cut < 0 else cut + 1
        lines.append(s[:cut])
        s = s[cut:]
    if s:
        lines.append(s)
    return "".join(("           board: " if k == 0 else "                  ") + l.rstrip(" ") + "\n"
                   for k, l in enumerate(lines))


def switch_line(sw, i):
    """Node I's board in the switch's port table (dn2-switch --stats)."""
    guid = "0x%016x" % (i + 1)
    for row in sw.split("\n"):
        w = row.split()
        if len(w) >= 3 and w[2] == guid:
            w += [""] * 7
            return "link %s, LID %s, rx %s pkts, tx %s pkts" % (
                "up" if w[1] == "active" else "down (%s)" % w[1], w[0], w[4], w[6])
    return "link down (not in the switch's table)"


def show(name, out):
    d = os.path.join(CLUSTER_DIR, name)
    info = info_of(d)
    nodes = info_int(info, "nodes")
    started, kept, mem, ready_s = info.get("started", ""), info.get("kept", ""), info.get("mem", ""), info.get("ready_s", "")
    st = run_state(d)
    up = int(time.time()) - int(started) if started else None
    s = "" if nodes == 1 else "s"
    if st == "running":
        out.write("%s: %s, %d node%s, %s%s, up %s, launcher pid %s\n" % (
            name, G + "running" + N if ready_s else Y + "booting" + N, nodes, s,
            ("kept, " if kept else "") + "takes jobs" if info.get("interactive") == "1" else "one-shot run",
            ", %s MiB each" % mem if mem else "", fmt_secs(up) if up is not None else "?",
            info.get("launcher_pid", "0")))
    else:
        out.write("%s: %sstopped%s, %d node%s%s\n" % (name, R, N, nodes, s,
                                                      ", started " + local_time(started) if started else ""))
    out.write("  run directory: %s\n" % d)
    # The subnet manager's view (the switch's port table), while it runs.
    sw = ""
    switch_bin, switch = info.get("switch_bin", ""), info.get("switch", "")
    if st == "running" and switch_bin and switch:
        cmd = [switch_bin, "--stats", switch]
        if info.get("secret_file"):
            cmd += ["--secret-file", info["secret_file"]]
        try:
            r = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                               timeout=5)
            sw = r.stdout.decode(errors="replace").rstrip("\n") if r.returncode == 0 else ""
        except (OSError, subprocess.TimeoutExpired):
            sw = ""
        if not sw:
            out.write("  (the switch at %s did not answer --stats)\n" % switch)
    for i in range(nodes):
        ph, lid, rc, why = node_state(d, i)
        pid = info.get("node%d_pid" % i, "")
        alive = pid != "" and pid_alive(int(pid)) if pid.isdigit() else False
        if st == "running" and pid and not alive and ph not in ("failed", "done"):
            ph, why = "failed", "QEMU (pid %s) is gone" % pid
        ph = {"serving": G + "up" + N, "done": "done rc=" + rc, "failed": R + "DEAD" + N}.get(ph, ph)
        if st == "stopped" and ph == G + "up" + N:
            ph = "stopped"
        line = ""
        # (a dead node's port lingers in the switch's table until it times out)
        if sw and ph != R + "DEAD" + N:
            line = switch_line(sw, i)
        elif lid != "-":
            line = "LID 0x%04x" % int(lid)
        out.write("  node%-2d %-6s %s%s\n" % (i, ph, line, ("; " if line else "") + why if why else ""))
        bs = os.path.join(d, "board-stats", "node%d" % i)
        try:
            text = open(bs, errors="replace").read()
        except OSError:
            text = ""
        if text:
            out.write(fold_stats(text))
    n = len(glob.glob(os.path.join(glob.escape(d), "jobs", "[0-9]*.sh")))
    if n:
        out.write("  jobs run: %d (RUNDIR/jobs)\n" % n)
    if os.path.isfile(os.path.join(d, "result.json")):
        out.write("  result: %s\n" % os.path.join(d, "result.json"))


def main(script, args):
    name = parse(args)
    if name:
        valid_name(name, "status")
        if not is_cluster(name):
            raise Fail("no cluster named '%s' (scripts/cluster.sh list shows them)" % name)
        names = [name]
    else:
        names = [n for n in clusters() if run_state(os.path.join(CLUSTER_DIR, n)) == "running"]
        if not names:
            print("no cluster is running (scripts/cluster.sh list shows the stopped ones)")
            return 0
    for n in names:
        show(n, sys.stdout)
    sys.stdout.flush()
    return 0
