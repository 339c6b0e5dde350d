"""The job queue of a kept or -i cluster: the guests long-poll the job
server for RUNDIR/jobs/ID.sh (every job goes to every node) and post
RUNDIR/jobs/ID.nodeI.out and ID.nodeI.rc.
"""
import fcntl
import os
import re
import time

from .cli import R, N, Usage, say, want_uint
from .rundir import node_state, pid_alive


def shq(word):
    """WORD quoted for the guests' busybox sh."""
    return "'" + word.replace("'", "'\\''") + "'"


def job_text(sel, cmd):
    """The job for the nodes SEL ("all" or a node number): a first line
    makes the other nodes skip it."""
    head = "" if sel == "all" else '[ "$DN2_NODE" = %d ] || exit 0\n' % int(sel)
    return head + cmd + "\n"


def job_nodes(sel, nodes):
    return list(range(nodes)) if sel == "all" else [int(sel)]


def want_node(sel, op, nodes):
    """A usage error unless SEL is "all" or a node of the cluster."""
    if sel == "all":
        return
    want_uint(op, sel)
    if int(sel) >= nodes:
        raise Usage("%s: the cluster has nodes 0..%d, not %s" % (op, nodes - 1, sel))


def submit(rundir, text):
    """Queues TEXT as the next job: its id."""
    jobs = os.path.join(rundir, "jobs")
    os.makedirs(jobs, exist_ok=True)
    with open(os.path.join(jobs, ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        ids = [int(m.group(1)) for m in (re.match(r"^([0-9]+)\.sh$", e) for e in os.listdir(jobs)) if m]
        jid = max(ids, default=0) + 1
        tmp = os.path.join(jobs, "%d.sh.tmp" % jid)
        with open(tmp, "w") as f:
            # (as the shell's printf '%s\n' "$(...)": one newline at the end)
            f.write(text.rstrip("\n") + "\n")
        os.rename(tmp, os.path.join(jobs, "%d.sh" % jid))
    return jid


def wait(rundir, jid, timeout_s, nodes_, launcher_pid):
    """Until every node of NODES_ reported job JID, or is dead (the
    launcher's RUNDIR/state): (status, {node: rc}) with rc the node's exit
    status as text, "dead" or "none"; status 0, 124 (timeout) or 3 (the
    cluster stopped)."""
    t0 = time.monotonic()
    ret = 0

    def rc_file(i):
        return os.path.join(rundir, "jobs", "%d.node%d.rc" % (jid, i))

    while True:
        n = 0
        for i in nodes_:
            if os.path.isfile(rc_file(i)) or node_state(rundir, i)[0] == "failed":
                n += 1
        if n == len(nodes_):
            break
        if int(time.monotonic() - t0) >= timeout_s:
            say("%stimeout%s: after %d s, %d of %d nodes finished job %d" % (R, N, timeout_s, n, len(nodes_), jid))
            ret = 124
            break
        if not pid_alive(launcher_pid):
            say("%sthe cluster stopped%s" % (R, N))
            ret = 3
            break
        time.sleep(0.2)
    rcs = {}
    for i in nodes_:
        try:
            with open(rc_file(i), errors="replace") as f:
                rcs[i] = f.read().rstrip("\n")
        except OSError:
            rcs[i] = "dead" if node_state(rundir, i)[0] == "failed" else "none"
    return ret, rcs
