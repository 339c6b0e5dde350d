"""cluster.sh snapshot [--drain S] NAME TAG: the running kept cluster NAME
saved at one consistent cut into build/snapshots/TAG (every node's QEMU, the
LIDs, the job's identity); it runs on.  Refused with the reason where no cut
can be consistent (several hosts, virtual time, --ethernet).  The cut itself
is dn2scripts.snapshot's (over the nodes' QMP sockets).
"""
import glob
import os
import random
import re
import shlex
import shutil
import subprocess
import sys
import time

from . import jobs
from .cli import G, R, N, Exit, Fail, Help, Usage, need_value, say, split_eq, want_uint
from .rundir import (CLUSTER_DIR, HERE, SNAP_DIR, bad_name, info_int, info_of, is_cluster, named_run,
                     node_state, pid_alive, valid_name)


DRAIN_S = 30       # --drain: how long the cut may take in all
STOPPED_S = 1      # each attempt at it: every vCPU stopped at most this long


def parse(args):
    """(drain_s, name, tag)."""
    a = list(args)
    drain_s = DRAIN_S
    while a:
        x = a[0]
        if x in ("-h", "--help"):
            raise Help()
        if split_eq(a, ("--drain",)):
            continue
        if x == "--drain":
            need_value(a); want_uint(x, a[1]); drain_s = int(a[1]); del a[:2]
        elif len(x) > 1 and x.startswith("-"):
            raise Usage("snapshot: unknown argument: %s" % x)
        else:
            break
    if len(a) != 2:
        raise Usage("snapshot: NAME TAG, not '%s'" % " ".join(a))
    name, tag = a
    valid_name(name, "snapshot")
    if tag == "" or tag.startswith("-") or (bad_name(tag) and tag != "latest"):
        raise Usage("snapshot: '%s' cannot name a snapshot (a plain name: %s/TAG)" % (tag, SNAP_DIR))
    return drain_s, name, tag


def gate_job(tag, gate):
    """Every guest parks in a job of its own with no connection open: it
    polls the gate file (short requests) until the snapshot is taken, and a
    restored cluster finds the gate open at once.  A connection open at the
    cut would hang in the restored guest (QEMU's user network does not keep
    host connections).  A request cut off by the snapshot waits in the
    restored guest for an answer that never comes, and a guest whose code is
    translated afresh after the restore is slow: so a new request starts
    every 0.3 s whatever became of the earlier ones, the first that fetches
    the gate (a 404 leaves no file) ends the job, and the others are killed
    then."""
    return ("# snapshot %s\n" % tag
            + "rm -f /tmp/dn2-gate.*\n"
            + "n=0\n"
            + "while :; do\n"
            + "    n=$((n + 1))\n"
            + '    wget -q -O /tmp/dn2-gate.$n "$DN2_HTTP/%s" 2>/dev/null &\n' % gate
            + "    t=0\n"
            + "    while [ $t -lt 3 ]; do\n"
            + '        for f in /tmp/dn2-gate.*; do [ -e "$f" ] && break 3; done\n'
            + "        usleep 100000\n"
            + "        t=$((t + 1))\n"
            + "    done\n"
            + "done\n"
            + "kill $(jobs -p) 2>/dev/null\n"
            + "rm -f /tmp/dn2-gate.*\n"
            + "exit 0")


def module_env():
    """The environment of a dn2scripts module run as a program."""
    env = dict(os.environ)
    env["PYTHONPATH"] = HERE + (":" + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def began(rundir, i, jid):
    """Node I's console shows the start of job JID."""
    try:
        with open(os.path.join(rundir, "node%d.log" % i), "rb") as f:
            text = f.read().replace(b"\r", b"")
    except OSError:
        return False
    return ("DN2-JOB-BEGIN %d" % jid).encode() in text.split(b"\n")


def touch(path):
    open(path, "a").close()


def snapshot_info(name, taken, nodes, mem, jobid, http_port, gate, job, lids, out):
    """TAGDIR/snapshot.info: shell assignments (the launcher's restore reads
    them), then the cut's own lines."""
    return ("name=%s\ntaken=%s\nnodes=%s\nmem=%s\n" % (shlex.quote(name), taken, nodes, mem)
            + "jobid=%s\nhttp_port=%s\ngate=%s\njob=%s\n" % (shlex.quote(jobid), http_port, gate, job)
            + "lids=%s\n" % shlex.quote(lids)
            + out + "\n")


def save_files(d, part, jid, gate, info, name, out):
    """What a restore needs beside the memory images: the launcher's
    options, the job's identity (id, secret, HTTP port: the guests know
    them), the jobs run so far (the guests' job loops count on), the rank
    table and joins, the LIDs, the image (the consoles at the cut are there
    already)."""
    for f in ("options", "secret"):
        shutil.copy2(os.path.join(d, f), part)
    for sub in ("jobs", "joins"):
        shutil.copytree(os.path.join(d, sub), os.path.join(part, sub), symlinks=True)
    try:
        os.unlink(os.path.join(part, "jobs", ".lock"))
    except OSError:
        pass
    # (a job queued on NAME after the cut is not the snapshot's)
    for f in glob.glob(os.path.join(glob.escape(part), "jobs", "[0-9]*")):
        j = os.path.basename(f).split(".", 1)[0]
        if j.isdigit() and int(j) > jid:
            os.unlink(f)
    shutil.copy2(os.path.join(d, "www", "ranks"), os.path.join(part, "ranks"))
    touch(os.path.join(part, gate))
    img = os.path.join(d, "initramfs.cpio.lz4")
    try:
        os.link(img, os.path.join(part, "initramfs.cpio.lz4"))
    except OSError:
        shutil.copyfile(img, os.path.join(part, "initramfs.cpio.lz4"))
    lids = " ".join(l.split()[1] for l in open(os.path.join(d, "www", "ranks")) if len(l.split()) > 1)
    with open(os.path.join(part, "snapshot.info"), "w") as f:
        f.write(snapshot_info(name, int(time.time()), info.get("nodes", ""), info.get("mem", ""),
                              info.get("jobid", ""), info.get("http", "").rsplit(":", 1)[-1], gate, jid, lids, out))


def main(script, args):
    drain_s, name, tag = parse(args)
    # (virtual time first: such a run is one-shot, which find_run refuses
    # for another reason)
    if is_cluster(name) and "virtual_time" in info_of(os.path.join(CLUSTER_DIR, name)):
        raise Fail("snapshot: %s runs in virtual time: its boards' clocks are in lock-step with the switch and their "
                   "packets wait for their virtual times, which a snapshot does not keep (a virtual-time run is "
                   "repeated with --replay RUNDIR instead)" % name)
    d = named_run(name)
    info = info_of(d)
    nodes = info_int(info, "nodes")
    lp = info_int(info, "launcher_pid")
    # Where a cut cannot be consistent, or a restore could not rebuild it.
    if any(re.match(r"^node[0-9]*_host$", k) for k in info):
        raise Fail("snapshot: %s runs on several hosts: a cut needs every node's QEMU and the switch on this host "
                   "(the migration files, the drain over QMP sockets and the job server's address stay here)" % name)
    if "ethhub" in info:
        raise Fail("snapshot: %s has --ethernet: the guest-to-guest Ethernet hub's sockets are not saved" % name)
    if "node0_qmp" not in info or not os.path.isfile(os.path.join(d, "options")):
        raise Fail("snapshot: %s was started before snapshots existed (no QMP sockets or no RUNDIR/options): "
                   "start it again" % name)
    for i in range(nodes):
        ph = node_state(d, i)[0]
        if ph != "serving":
            raise Fail("snapshot: node%d of %s is %s, not serving jobs" % (i, name, ph))
    tagdir = os.path.join(SNAP_DIR, tag)
    part = tagdir + ".part"
    if os.path.lexists(tagdir):
        raise Fail("snapshot: %s exists: remove it (rm -r) or choose another TAG" % tagdir)
    old = os.umask(0o077)
    try:
        os.makedirs(SNAP_DIR, exist_ok=True)
        os.mkdir(part)
    except OSError:
        raise Fail("snapshot: cannot create %s (another snapshot TAG under way?)" % part)
    finally:
        os.umask(old)
    os.chmod(part, 0o700)
    t0 = time.monotonic()
    # 1. Every guest parks in the gate job.
    gate = "snapshot-gate-%d%d" % (random.randrange(32768), random.randrange(32768))
    jid = jobs.submit(d, gate_job(tag, gate))
    lines = 0
    for _ in range(300):
        lines = sum(1 for i in range(nodes) if began(d, i, jid))
        if lines == nodes:
            break
        if not pid_alive(lp):
            shutil.rmtree(part, ignore_errors=True)
            raise Fail("snapshot: the cluster stopped")
        time.sleep(0.1)
    if lines != nodes:
        touch(os.path.join(d, "www", gate))
        shutil.rmtree(part, ignore_errors=True)
        say("%sno snapshot%s: after 30 s, %d of %d nodes had started the snapshot's job (job %d): a node still runs "
            "an earlier job" % (R, N, lines, nodes, jid))
        raise Exit(1)
    time.sleep(0.3)   # (the job's first request is answered: 404)
    # 2. The cut, the migration files.
    socks = [info.get("node%d_qmp" % i, "") for i in range(nodes)]
    r = subprocess.run([sys.executable, "-m", "dn2scripts.snapshot", HERE, "--stopped", str(STOPPED_S), part, d,
                        str(drain_s)] + socks,
                       stdout=subprocess.PIPE, env=module_env())
    out = r.stdout.decode(errors="replace").rstrip("\n")
    # 3. The guests go on (their job ends once the gate is there).
    touch(os.path.join(d, "www", gate))
    if r.returncode != 0:
        shutil.rmtree(part, ignore_errors=True)
        say("%sno snapshot%s of %s; it runs on" % (R, N, name))
        raise Exit(r.returncode if r.returncode > 0 else 128 - r.returncode)
    # 4. What a restore needs beside the memory images.
    try:
        save_files(d, part, jid, gate, info, name, out)
    except OSError:
        shutil.rmtree(part, ignore_errors=True)
        raise Fail("snapshot: cannot write %s" % part)
    os.rename(part, tagdir)
    du = subprocess.run(["du", "-sh", tagdir], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    say("%ssnapshot %s%s of %s (%d nodes) in %d s: %s (%s); %s" % (
        G, tag, N, name, nodes, int(time.monotonic() - t0), tagdir, du.stdout.split("\t")[0], out))
    say("  restore: scripts/cluster.sh start NEWNAME --from %s   (while %s runs, its job server's port %s is taken: "
        "stop %s first)" % (tag, name, info.get("http", "").rsplit(":", 1)[-1], name))
    return 0
