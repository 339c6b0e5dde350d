"""The restore path of the launcher: start NAME --from TAG (a kept
cluster's snapshot, build/snapshots/TAG) and --replay of a --snapshot-at
snapshot.  load() reads the snapshot before anything starts, seed() gives
the new run directory the snapshot's job (its id and secret: the guests'
tokens), the jobs its guests have run, the rank table and the gate that
lets their parked job end; run() is dn2scripts.restore: every node loads
its state, every board is back at its LID on the new switch, then all run.
"""
import os
import shutil
import subprocess

from .cli import Fail, Usage
from .rundir import HERE, read_info


class Snapshot:
    def __init__(self, d, info):
        self.dir = d
        self.info = info
        self.lids = info.get("lids", "").split()
        self.mem = info.get("mem", "")
        self.jobid = info.get("jobid", "")
        self.http_port = info.get("http_port", "")
        self.gate = info.get("gate", "")
        self.source = info.get("source", "")
        self.cut_s = info.get("cut_s", "")


def load(d, nodes, what):
    """The snapshot in D for NODES nodes; Fail when it is not whole."""
    info = read_info(os.path.join(d, "snapshot.info"))
    s = Snapshot(d, info)
    if len(s.lids) != nodes:
        raise Fail("snapshot %s: %d nodes, but LIDs for %d" % (what, nodes, len(s.lids)))
    for i in range(nodes):
        if not os.path.isfile(os.path.join(d, "node%d.mig" % i)):
            raise Fail("snapshot %s: node%d.mig is missing" % (what, i))
    return s


def load_from_tag(o, snap_dir):
    """--from TAG: the snapshot; its memory size and job server port are the
    run's."""
    d = os.path.join(snap_dir, o.from_tag)
    if not os.path.isfile(os.path.join(d, "snapshot.info")):
        raise Fail("no snapshot '%s' in %s" % (o.from_tag, snap_dir))
    s = load(d, int(o.nodes), o.from_tag)
    o.mem, o.http_port = s.mem, s.http_port
    return s


def load_vt(o):
    """--replay of a --snapshot-at snapshot."""
    s = load(o.vsnap, int(o.nodes), o.vsnap)
    if o.gdb_node:
        raise Usage("--gdb: not from a snapshot (replay the whole run)")
    o.mem, o.from_tag = s.mem, os.path.basename(o.vsnap)
    return s


def seed(s, rundir):
    """The snapshot's job in the new run directory; returns its job id."""
    old = os.umask(0o077)
    try:
        shutil.copyfile(os.path.join(s.dir, "secret"), os.path.join(rundir, "secret"))
    except OSError:
        raise Fail("cannot write %s/secret" % rundir)
    finally:
        os.umask(old)
    try:
        for sub in ("jobs", "joins"):
            shutil.rmtree(os.path.join(rundir, sub), ignore_errors=True)
            shutil.copytree(os.path.join(s.dir, sub), os.path.join(rundir, sub), symlinks=True)
    except OSError:
        raise Fail("cannot copy the snapshot's jobs into %s" % rundir)
    try:
        shutil.copyfile(os.path.join(s.dir, "ranks"), os.path.join(rundir, "www", "ranks"))
        open(os.path.join(rundir, "www", s.gate), "a").close()
    except OSError:
        raise Fail("cannot write %s/www" % rundir)
    return s.jobid


def run(py, env, boot_timeout, sw_stats, lids, pids, socks, out_path):
    """dn2scripts.restore (in a child, so that a signal ends the launcher at
    once; it ends when the launcher is gone): its exit status."""
    with open(out_path, "w") as out:
        p = subprocess.Popen([py, "-m", "dn2scripts.restore", HERE, str(boot_timeout), "\x1f".join(sw_stats),
                              " ".join(lids), " ".join(str(p) for p in pids)] + socks, stdout=out, env=env)
        try:
            return p.wait()
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
