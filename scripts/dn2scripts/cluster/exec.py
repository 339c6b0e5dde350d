"""cluster.sh exec NAME [--node I|all] [-t S] CMD...: CMD on every node (or
node I) of a running kept or -i cluster, as a job; its output as "nodeI| "
lines.  Exit 0, 1 (a node's CMD failed), 3 (a node is dead, or the cluster
stopped), 4 (no such running cluster), 124 (timeout).  The older spelling
exec [-d RUNDIR] [-t S] CMD... runs on build/cluster/latest.
"""
import os
import sys

from . import jobs
from .cli import G, R, N, Exit, Help, Usage, need_value, say, want_uint
from .rundir import CLUSTER_DIR, find_run, info_int, info_of, is_cluster, named_run, node_state


class Options:
    def __init__(self):
        self.dir = ""
        self.timeout_s = 600
        self.sel = "all"
        self.name = ""
        self.cmd = ""


def parse(args, is_cluster=is_cluster):
    """exec's options (split by hand: "--opt=value" words of CMD are CMD's)
    and the command, {rank} written {node} (node i is rank i)."""
    o = Options()
    a = list(args)
    while a:
        x = a[0]
        if x.startswith(("--dir=", "--timeout=", "--node=")):
            k, v = x.split("=", 1)
            a[0:1] = [k, v]
            continue
        if x in ("-d", "--dir"):
            need_value(a); o.dir = a[1]; del a[:2]
        elif x in ("-t", "--timeout"):
            need_value(a); want_uint(x, a[1]); o.timeout_s = int(a[1]); del a[:2]
        elif x == "--node":
            need_value(a); o.sel = a[1]; del a[:2]
        elif x in ("-h", "--help"):
            raise Help()
        elif x == "--":
            del a[0]
            break
        elif not o.name and not o.dir and len(a) >= 2 and is_cluster(x):
            # exec NAME CMD: a cluster's name, then the command
            o.name = x
            del a[0]
        else:
            break
    if not a:
        raise Usage("exec: no command (scripts/cluster.sh exec NAME 'CMD')")
    o.cmd = " ".join(a).replace("{rank}", "{node}")
    return o


def main(script, args):
    o = parse(args)
    if o.name:
        d = named_run(o.name)
    else:
        if not o.dir:
            try:
                latest = os.readlink(os.path.join(CLUSTER_DIR, "latest"))
            except OSError:
                latest = "none"
            say("note: no cluster named: this runs on build/cluster/latest (%s), which every later run re-points; "
                "name it: scripts/cluster.sh exec NAME CMD" % latest)
        d = find_run(o.dir or None)
    info = info_of(d)
    nodes = info_int(info, "nodes")
    jobs.want_node(o.sel, "--node", nodes)
    jid = jobs.submit(d, jobs.job_text(o.sel, o.cmd))
    sel_nodes = jobs.job_nodes(o.sel, nodes)
    say("job %d on %s: %s" % (jid, "%d nodes" % nodes if o.sel == "all" else "node" + o.sel, o.cmd))
    status, rcs = jobs.wait(d, jid, o.timeout_s, sel_nodes, info_int(info, "launcher_pid"))
    for i in sel_nodes:
        rc = rcs[i]
        out = os.path.join(d, "jobs", "%d.node%d.out" % (jid, i))
        if os.path.isfile(out):
            with open(out, "rb") as f:
                for line in f.read().splitlines(keepends=True):
                    sys.stdout.buffer.write(b"node%d| " % i + line)
            sys.stdout.flush()
        if rc == "0":
            say("node%d: %src=0%s" % (i, G, N))
        elif rc == "dead":
            say("node%d: %sdead%s: %s" % (i, R, N, node_state(d, i)[3]))
            status = 3
        else:
            say("node%d: %src=%s%s" % (i, R, rc, N))
            if status == 0:
                status = 1
    raise Exit(status)
