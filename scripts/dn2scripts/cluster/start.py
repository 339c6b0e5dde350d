"""cluster.sh start NAME [options] [-- QEMU args]: the launcher (cluster.sh
-i --name NAME) in the background, its output in RUNDIR/launcher.log;
returns once every node serves jobs (0), or with the launcher's status and
why.  start NAME --from TAG: the snapshot's own options, and a few of the
caller's (-q, -b, --board-stats, --junit).
"""
import os
import signal
import subprocess
import sys
import time

from .cli import G, R, N, Exit, Fail, Help, Usage, need_value, say, split_eq
from .rundir import CLUSTER_DIR, HERE, SNAP_DIR, info_of, read_info, run_state, sweep, valid_name

VT_OPTS = ("--virtual-time", "--no-vt-sync", "--replay")


def read_options(path):
    """A NUL-separated argument list (RUNDIR/options)."""
    with open(path, "rb") as f:
        data = f.read()
    words = data.split(b"\0")
    if words and words[-1] == b"":
        words.pop()
    return [os.fsdecode(w) for w in words]


def from_args(args, snap_dir=SNAP_DIR):
    """start NAME --from TAG ...: the launcher's arguments, the snapshot's
    options with the caller's few added; raises Usage or Fail."""
    a = list(args)
    frm, fa = "", []
    while a:
        if split_eq(a, ("--from", "--boot-timeout", "--junit")):
            continue
        x = a[0]
        if x == "--from":
            need_value(a); frm = a[1]; del a[:2]
        elif x in ("-q", "--quiet", "--board-stats"):
            fa.append(x); del a[0]
        elif x in ("-b", "--boot-timeout", "--junit"):
            need_value(a); fa += a[:2]; del a[:2]
        elif x in ("-h", "--help"):
            raise Help()
        else:
            raise Usage("start --from: %s: a restored cluster has the snapshot's options (only -q, -b, --board-stats, "
                        "--junit may be added)" % x)
    if frm == "" or frm.startswith("-") or "/" in frm or frm in (".", "..") or frm.startswith("."):
        raise Usage("start --from: '%s' cannot name a snapshot" % frm)
    if not os.path.isfile(os.path.join(snap_dir, frm, "snapshot.info")):
        raise Fail("no snapshot '%s' in %s (scripts/cluster.sh snapshot NAME %s makes one)" % (frm, snap_dir, frm))
    so = read_options(os.path.join(snap_dir, frm, "options"))
    sq = []
    if "--" in so:
        k = so.index("--")
        so, sq = so[:k], so[k:]
    return so + fa + ["--from", frm] + sq


def parse(args, snap_dir=SNAP_DIR):
    """(name, the launcher's arguments after -i --name NAME)."""
    if args and args[0] in ("-h", "--help"):
        raise Help()
    name = args[0] if args else ""
    valid_name(name, "start")
    rest = list(args[1:])
    head = rest[:rest.index("--")] if "--" in rest else rest
    if any(x == "--from" or x.startswith("--from=") for x in head):
        rest = from_args(rest, snap_dir)
    for x in rest:
        if x == "--":
            break
        if x in ("-h", "--help"):
            raise Help()
        if x == "--name" or x.startswith("--name="):
            raise Usage("start: NAME names the cluster: no --name")
        if x in VT_OPTS or x.startswith("--replay="):
            raise Usage("start: %s: a kept cluster takes commands, files and consoles from the host (exec, cp, "
                        "console) at host-dependent times, which virtual time cannot make deterministic: use a "
                        "one-shot run (-r CMD or -f FILE)" % x)
    return name, rest


class Interrupted(Exception):
    pass


def main(script, args):
    name, rest = parse(args)
    d = os.path.join(CLUSTER_DIR, name)
    if os.path.isfile(os.path.join(d, "info")):
        if run_state(d) == "running":
            raise Fail("cluster %s is running (launcher pid %s, %s): stop it first (scripts/cluster.sh stop %s) or "
                       "choose another name" % (name, info_of(d).get("launcher_pid", ""), d, name))
        t = sweep(d)
        if t > 0:
            say("cluster %s had stopped, but %d process group%s of it ran: killed" % (name, t, "" if t == 1 else "s"))
    try:
        os.makedirs(CLUSTER_DIR, exist_ok=True)
    except OSError:
        raise Fail("cannot create %s" % CLUSTER_DIR)
    log = os.path.join(CLUSTER_DIR, ".%s.start.log" % name)
    try:
        fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND, 0o600)
    except OSError:
        raise Fail("cannot write %s" % log)
    reader = open(log, "rb")
    env = dict(os.environ)
    env["_DN2_CLUSTER_LOG"] = log
    p = subprocess.Popen(["bash", os.path.join(HERE, "cluster.sh"), "-i", "--name", name] + rest,
                         stdin=subprocess.DEVNULL, stdout=fd, stderr=fd, env=env, start_new_session=True)
    os.close(fd)

    def cat():
        data = reader.read()
        if data:
            sys.stderr.buffer.write(data)
            sys.stderr.flush()

    def on_signal(signum, frame):
        raise Interrupted()

    for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(s, on_signal)
    try:
        while True:
            cat()
            rc = p.poll()
            if rc is not None:
                cat()
                try:
                    os.unlink(log)
                except OSError:
                    pass
                rc = 128 - rc if rc < 0 else rc
                say("%scluster %s did not start%s (status %d)%s" % (
                    R, name, N, rc, "; its log: %s/launcher.log" % d if os.path.isfile(os.path.join(d, "launcher.log")) else ""))
                raise Exit(rc or 3)
            info = read_info(os.path.join(d, "info"))
            if "ready_s" in info and info.get("launcher_pid") == str(p.pid):
                break
            time.sleep(0.1)
    except Interrupted:
        for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(s, signal.SIG_IGN)
        try:
            p.terminate()
        except OSError:
            pass
        p.wait()
        cat()
        say("interrupted: cluster %s stopped" % name)
        raise Exit(130)
    cat()
    reader.close()
    info = read_info(os.path.join(d, "info"))
    say("%scluster %s is up%s: %s nodes after %s s; it runs until: scripts/cluster.sh stop %s" % (
        G, name, N, info.get("nodes", ""), info.get("ready_s", ""), name))
    say("  scripts/cluster.sh exec %s [--node I] CMD | cp %s FILE :/PATH | console %s I | status %s" % ((name,) * 4))
    return 0
