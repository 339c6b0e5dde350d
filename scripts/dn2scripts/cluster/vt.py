"""The virtual-time path of the launcher (--virtual-time, --replay,
--snapshot-at; docs/cluster.md, "Virtual time"): what a run records to be
run again, the snapshot at a virtual time, and at the end the comparison of
a replay with the recorded run.
"""
import os
import shlex
import shutil
import subprocess

from . import plan
from .cli import G, R, N, say
from .rundir import HERE


def write_nul(path, words):
    with open(path, "wb") as f:
        f.write(b"".join(os.fsencode(w) + b"\0" for w in words))


def read_nul(path):
    with open(path, "rb") as f:
        words = f.read().split(b"\0")
    if words and words[-1] == b"":
        words.pop()
    return [os.fsdecode(w) for w in words]


def programs_text(ctx, replay_dir):
    """RUNDIR/replay/programs: the QEMU, kernel and switch of the run."""
    t = "qemu_bin=%s\nkernel=%s\nswitch_bin=%s\n" % (shlex.quote(ctx.qemu_bin), shlex.quote(ctx.kernel),
                                                     shlex.quote(ctx.switch_bin))
    if ctx.device_globals:
        t += "DN2_DEVICE_GLOBALS=%s\n" % shlex.quote(ctx.device_globals)
    if replay_dir:
        t += "# replay of %s\n" % shlex.quote(replay_dir)
    return t


def lids_for(nodes, clid_to_lid):
    """Node i's LID: the one the switch gives the i-th board to join."""
    return [clid_to_lid(i + 1) for i in range(nodes)]


def record(o, ctx, replay_dir):
    """What the run needs to be run again (--replay RUNDIR): its options
    (NUL-separated, the command as a file), the programs, the rank table."""
    r = ctx.rundir
    os.makedirs(os.path.join(r, "replay"), exist_ok=True)
    os.makedirs(os.path.join(r, "input"), exist_ok=True)
    with open(os.path.join(r, "replay", "run.sh"), "w", errors="surrogateescape") as f:
        f.write(o.run)
    # (a snapshot's run: the snapshot's own copy of the command)
    run_file = os.path.join(o.vsnap, "replay", "run.sh") if o.vsnap else os.path.join(r, "replay", "run.sh")
    write_nul(os.path.join(r, "replay", "options"), plan.vt_record(o, ctx, run_file))
    with open(os.path.join(r, "replay", "programs"), "w") as f:
        f.write(programs_text(ctx, replay_dir))
    with open(os.path.join(r, "input", "ranks"), "w") as f:
        f.write(plan.vt_ranks(o, ctx.lids))


def read_programs(replay_dir):
    """The recorded run's QEMU, kernel, switch (and DN2_DEVICE_GLOBALS)."""
    from .rundir import read_info
    p = read_info(os.path.join(replay_dir, "replay", "programs"))
    return p.get("qemu_bin", ""), p.get("kernel", ""), p.get("switch_bin", ""), p.get("DN2_DEVICE_GLOBALS", "")


class Helper:
    """The --snapshot-at helper beside the launcher's monitor: a thread whose
    programs kill() ends."""

    def __init__(self, fn, *args):
        import threading
        self.child = None
        self.killed = False
        self.status = None
        self.thread = threading.Thread(target=self._run, args=(fn,) + args, daemon=True)
        self.thread.start()

    def _run(self, fn, *args):
        try:
            self.status = fn(self, *args)
        except Exception as e:      # (reported, the run goes on)
            say("%sno snapshot%s: %s" % (R, N, e))
            self.status = 1

    def run(self, cmd, env, stdout=None):
        if self.killed:
            return 1, b""
        self.child = subprocess.Popen(cmd, env=env, stdout=stdout)
        out, _ = self.child.communicate()
        return self.child.returncode, out or b""

    def kill(self):
        self.killed = True
        if self.child is not None and self.child.poll() is None:
            self.child.kill()

    def wait(self):
        self.thread.join()


def snapshot_at(helper, o, ctx, nodes, pids, socks, snap_dir, env):
    """--snapshot-at VT TAG, beside the run: every board stops its guest at
    VT, the cluster is saved (dn2scripts.snapshot: the boards held, every
    node migrated, run again), and what --replay TAGDIR needs to run on
    from the cut.  Returns 0, 1 (no snapshot) or 3 (the run ended first)."""
    r = ctx.rundir
    tagdir = os.path.join(snap_dir, o.snap_at_tag)
    part = tagdir + ".part"
    rc, _ = helper.run([ctx.py, "-m", "dn2scripts.vt_cut", HERE, str(o.snap_at_ns), " ".join(str(p) for p in pids)]
                       + socks, env)
    if rc != 0 or helper.killed:
        return 3
    open(os.path.join(r, "snapshot.cut"), "w").close()
    old = os.umask(0o077)
    try:
        os.makedirs(snap_dir, exist_ok=True)
        os.mkdir(part)
    except OSError:
        say("%sno snapshot%s: cannot create %s" % (R, N, part))
        return 1
    finally:
        os.umask(old)
    e = dict(env)
    e["DN2_SNAP_QUEUED"] = "1"
    rc, stdout = helper.run([ctx.py, "-m", "dn2scripts.snapshot", HERE, part, r, "30"] + socks, e, subprocess.PIPE)
    if rc != 0:
        say("%sno snapshot%s at %s s (the run goes on)" % (R, N, o.snap_at))
        shutil.rmtree(part, ignore_errors=True)
        return 1
    lines = stdout.decode(errors="replace").rstrip("\n").split("\n")
    queued = "\n".join(l for l in lines if l.startswith("queued="))
    out = "\n".join(l for l in lines if not l.startswith("queued="))
    try:
        for sub in ("replay", "input"):
            shutil.copytree(os.path.join(r, sub), os.path.join(part, sub), symlinks=True)
        try:
            os.link(os.path.join(r, "initramfs.cpio.lz4"), os.path.join(part, "initramfs.cpio.lz4"))
        except OSError:
            shutil.copyfile(os.path.join(r, "initramfs.cpio.lz4"), os.path.join(part, "initramfs.cpio.lz4"))
        # (the command from the snapshot's own copy)
        opts = read_nul(os.path.join(r, "replay", "options"))
        for k in range(len(opts) - 1):
            if opts[k] == "-f":
                opts[k + 1] = os.path.join(tagdir, "replay", "run.sh")
        write_nul(os.path.join(part, "replay", "options"), opts)
        with open(os.path.join(part, "snapshot.info"), "w") as f:
            f.write("virtual_time=1\ncut_s=%s\ncut_ns=%d\n%s\nnodes=%d\nmem=%s\nsource=%s\nlids='%s'\n%s\n" % (
                o.snap_at, o.snap_at_ns, queued, nodes, ctx.mem, shlex.quote(r),
                " ".join(str(l) for l in ctx.lids), out))
        os.rename(part, tagdir)
    except OSError:
        return 1
    say("%ssnapshot %s%s at virtual time %s s: %s (%s); from there: scripts/cluster.sh --replay %s"
        % (G, o.snap_at_tag, N, o.snap_at, tagdir, out, tagdir))
    return 0


def join_pcaps(vsnap, rundir, nodes):
    """A run from a snapshot: its boards' traces go on from the snapshot's
    (the new trace without its 24-byte file header)."""
    for i in range(nodes):
        a, b = os.path.join(vsnap, "node%d.pcap" % i), os.path.join(rundir, "node%d.pcap" % i)
        if not (os.path.isfile(a) and os.path.isfile(b)):
            continue
        try:
            with open(b + ".tmp", "wb") as out:
                out.write(open(a, "rb").read())
                out.write(open(b, "rb").read()[24:])
            os.replace(b + ".tmp", b)
        except OSError:
            pass


def compare(py, cmp_dir, rundir, nodes):
    """scripts/vt-compare.py: (True, "") or (False, its lines)."""
    r = subprocess.run([py, os.path.join(HERE, "vt-compare.py"), cmp_dir, rundir, str(nodes)],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    return r.returncode == 0, r.stdout.decode(errors="replace").rstrip("\n")
