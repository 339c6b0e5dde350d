"""A cluster's run directory, build/cluster/NAME (docs/cluster.md): its
info file (shell assignments the launcher writes: launcher_pid, nodes,
nodeI_pid, nodeI_qmp, ...), the nodes' state as the launcher last saw it
(RUNDIR/state), whether the launcher runs, and what is left of a run.
"""
import os
import re
import shlex
import signal
import time

from .cli import Fail, Usage

HERE = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))   # scripts/
TOP = os.path.dirname(HERE)


def cluster_dir(environ=os.environ):
    return os.path.join(TOP, "build", "cluster")


def snap_dir(environ=os.environ):
    return environ.get("DN2_SNAPSHOT_DIR") or os.path.join(TOP, "build", "snapshots")


CLUSTER_DIR = cluster_dir()
SNAP_DIR = snap_dir()


def unquote(v):
    """A shell word as the launcher wrote it (printf %q, or plain)."""
    try:
        w = shlex.split(v, posix=True)
    except ValueError:
        return v
    return " ".join(w) if w else ""


def read_info(path):
    """RUNDIR/info as a dict (a later assignment wins, as when the shell
    sourced it); {} when it cannot be read."""
    d = {}
    try:
        with open(path, errors="replace") as f:
            for line in f:
                line = line.rstrip("\n")
                m = re.match(r"^([A-Za-z_][A-Za-z0-9_]*)=(.*)$", line)
                if m:
                    d[m.group(1)] = unquote(m.group(2))
    except OSError:
        pass
    return d


def info_int(info, key, default=0):
    try:
        return int(info.get(key, "") or default)
    except ValueError:
        return default


def info_of(rundir):
    return read_info(os.path.join(rundir, "info"))


def bad_name(word):
    """Why WORD cannot name a cluster or a snapshot (a plain name), or None."""
    if word in (".", "..", "latest") or "/" in word or word.startswith(".") or re.search(r"\s", word):
        return True
    return None


def valid_name(word, op):
    """A usage error unless WORD can name a cluster (build/cluster/NAME)."""
    if word == "":
        raise Usage("%s: the cluster's NAME is missing" % op)
    if word.startswith("-"):
        raise Usage("%s: the cluster's NAME comes first, not '%s'" % (op, word))
    if bad_name(word):
        raise Usage("%s: '%s' cannot name a cluster (a plain name: build/cluster/NAME)" % (op, word))


def is_cluster(word, cdir=None):
    """True when build/cluster/WORD holds a cluster (running or not)."""
    cdir = cdir or CLUSTER_DIR
    if word == "" or word.startswith("-") or "/" in word or word in (".", "..", "latest") or word.startswith("."):
        return False
    d = os.path.join(cdir, word)
    return os.path.isfile(os.path.join(d, "info")) and not os.path.islink(d)


def pid_alive(pid):
    """kill -0 PID."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except OverflowError:
        return False
    return True


def run_state(rundir):
    """"running" (its launcher is alive) or "stopped"."""
    info = info_of(rundir)
    return "running" if pid_alive(info_int(info, "launcher_pid")) else "stopped"


def find_run(d=None, what=None):
    """A running cluster's directory (default build/cluster/latest), which
    takes jobs: its path, resolved; a Fail otherwise."""
    d = d or os.path.join(CLUSTER_DIR, "latest")
    what_text = what or "the cluster in %s" % d
    if not os.path.isfile(os.path.join(d, "info")):
        raise Fail("no cluster in %s (start one with: scripts/cluster.sh start NAME, or -i)" % d)
    d = os.path.realpath(d)
    info = info_of(d)
    if not pid_alive(info_int(info, "launcher_pid")):
        raise Fail("%s is not running (scripts/cluster.sh status%s says how it ended)"
                   % (what_text, (" " + what[len("cluster "):] if what and what.startswith("cluster ") else (" " + what if what else ""))))
    if info.get("interactive") != "1":
        raise Fail("%s was not started with start or -i: it runs no jobs" % what_text)
    return d


def named_run(name):
    """The directory of the running cluster NAME."""
    if not is_cluster(name):
        raise Fail("no cluster named '%s' (scripts/cluster.sh list shows them)" % name)
    return find_run(os.path.join(CLUSTER_DIR, name), "cluster " + name)


def node_state(rundir, i):
    """(PHASE, LID, RC, WHY) of node I as the launcher last saw it
    (RUNDIR/state: "I PHASE LID RC WHY"), or ("unknown", "-", "-", "")."""
    try:
        with open(os.path.join(rundir, "state"), errors="replace") as f:
            for line in f:
                w = line.split()
                if w and w[0] == str(i):
                    w = w[1:] + ["", "", ""]
                    return w[0], w[1], w[2], " ".join(x for x in w[3:] if x)
    except OSError:
        pass
    return "unknown", "-", "-", ""


def fmt_secs(s):
    """"1h02m03s", "2m03s", "3s"."""
    if s >= 3600:
        return "%dh%02dm%02ds" % (s // 3600, s % 3600 // 60, s % 60)
    if s >= 60:
        return "%dm%02ds" % (s // 60, s % 60)
    return "%ds" % s


def local_time(t):
    """date -d @T '+%F %T'."""
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(int(t)))


def group_pids(pgid):
    """The processes of process group PGID (pgrep -g)."""
    out = []
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % p) as f:
                st = f.read().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if len(st) > 2 and st[2] == str(pgid):
            out.append(int(p))
    return out


def cmdline(pid):
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def sweep(rundir):
    """Kills what is left of the run in RUNDIR: every process group it
    listed (RUNDIR/pgids) whose processes still name RUNDIR on their command
    line (a process id may have been reused); the number of groups."""
    try:
        groups = open(os.path.join(rundir, "pgids")).read().split()
    except OSError:
        return 0
    n = 0
    for g in groups:
        try:
            g = int(g)
        except ValueError:
            continue
        if not any(rundir in cmdline(p) for p in group_pids(g)):
            continue
        try:
            os.killpg(g, signal.SIGKILL)
            n += 1
        except OSError:
            pass
    return n


def clusters(cdir=None):
    """The names of the clusters in build/cluster, in the shell's order."""
    cdir = cdir or CLUSTER_DIR
    try:
        names = sorted(e for e in os.listdir(cdir) if not e.startswith(".") and os.path.isdir(os.path.join(cdir, e)))
    except OSError:
        return []
    return [n for n in names if is_cluster(n, cdir)]


def last_line(path):
    """tail -1 PATH, without its newline; "" when it cannot be read."""
    try:
        with open(path, errors="replace") as f:
            text = f.read()
    except OSError:
        return ""
    if text.endswith("\n"):
        text = text[:-1]
    return text.rsplit("\n", 1)[-1]
