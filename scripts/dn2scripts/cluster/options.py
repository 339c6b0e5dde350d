"""The launcher's options (cluster.sh [options] [-- QEMU args]): parse()
reads them into an Options and check() refuses what cannot run (a Usage:
exit 2, one line), both without touching anything but the files the
options name.  --replay RUNDIR first swaps in the recorded run's options
(replay_split()).  Every option takes "--opt value" and "--opt=value"
(split one option at a time: a value such as --switch-opts "--drop=0.01"
is taken as it is).
"""
import os
import re

from .cli import Fail, Help, Usage, need_arg, need_value, want_uint

SECONDS_RE = re.compile(r"^[0-9]{1,4}(\.[0-9]{1,9})?$")
REPLAY_ADDS = "only --name, -q, -t, -b, --gdb, --gdb-port, --switch-opts, --vt-sync"


class Options:
    def __init__(self, environ=None):
        environ = os.environ if environ is None else environ
        self.nodes, self.run, self.run_file, self.interactive = "2", "", "", False
        self.timeout_s, self.boot_timeout, self.grace, self.mem = "900", "300", "30", ""
        self.junit, self.node_qemu, self.smp, self.wid, self.name = "", {}, "1", "0", ""
        self.switch_port, self.http_port, self.switch_opts, self.device_opts = "0", "0", "", ""
        self.secret_file, self.packages, self.mpi_image, self.ethernet = "", "", False, False
        self.guest_release = ""
        self.board_stats, self.slice_us, self.pause_yield, self.ether_mtu = False, "100", "", ""
        self.serve_dir, self.append_extra, self.quiet = "", "", False
        self.hosts_arg, self.rsh, self.switch_host, self.switch_addr, self.my_addr = "", "", "", "", ""
        self.no_slurm, self.extra = False, []
        self.vt, self.vt_sync, self.vt_shift, self.vt_shift_set = False, True, "0", False
        self.vt_insn_ps = environ.get("DN2_VT_INSN_PS", "")
        self.vt_lookahead, self.vt_quantum, self.vt_start = "1000", "", "3"
        self.vt_transport = None        # --vt-sync; None: vt_transport_default()
        self.from_tag, self.snap_at, self.snap_at_tag = "", "", ""
        # --replay RUNDIR and what may be added to it
        self.replay_dir, self.gdb_node, self.gdb_port = "", "", "1234"
        self.vsnap = ""
        self.args = []          # the launcher's arguments as given (RUNDIR/options)
        # derived by check()
        self.vt_start_ns = self.snap_at_ns = 0


def replay_split(args):
    """--replay RUNDIR [--name N] [-q] [-t S] [-b S] [--gdb I] [--gdb-port P]
    [--switch-opts S] [--vt-sync udp|shm]: (RUNDIR, {option: value}); None
    without --replay.  The switch's faults and the transport of the
    lock-step must not change the result: a replay that differs shows it."""
    if not any(x == "--replay" or x.startswith("--replay=") for x in args):
        return None
    if any(x in ("-h", "--help") for x in args[:next(k for k, x in enumerate(args)
                                                   if x == "--replay" or x.startswith("--replay="))]):
        raise Help()
    a, rdir, adds = list(args), "", {}
    while a:
        x = a[0]
        if x.startswith("--") and len(x) > 3 and "=" in x[3:]:
            a[0:1] = x.split("=", 1)
            continue
        if x == "--replay":
            need_value(a); rdir = a[1]; del a[:2]
        elif x in ("--name", "--gdb", "--gdb-port"):
            need_value(a); adds[x] = a[1]; del a[:2]
        elif x in ("-t", "--timeout"):
            need_value(a); adds["-t"] = a[1]; del a[:2]
        elif x in ("-b", "--boot-timeout"):
            need_value(a); adds["-b"] = a[1]; del a[:2]
        elif x in ("-q", "--quiet"):
            adds["-q"] = True; del a[0]
        elif x == "--switch-opts":
            need_arg(a); adds["--switch-opts"] = a[1]; del a[:2]
        elif x == "--vt-sync":
            need_value(a); adds["--vt-sync"] = a[1]; del a[:2]
        elif x in ("-h", "--help"):
            raise Help()
        else:
            raise Usage("--replay takes the recorded run's options; '%s' cannot be added (%s)" % (x, REPLAY_ADDS))
    return rdir, adds


def vt_transport_default(o, environ):
    """--virtual-time without --vt-sync: the lock-step through a sync domain
    in shared memory (shm) when every board is on this host and there is a
    lock-step to share; UDP through the switch across hosts (--hosts, a
    Slurm allocation), with --no-vt-sync, or beyond the domain's 64 boards."""
    several_hosts = bool(o.hosts_arg) or (bool(environ.get("SLURM_JOB_NODELIST")) and not o.no_slurm)
    nodes = int(o.nodes) if str(o.nodes).isdigit() else 0
    return "shm" if (o.vt_sync and not several_hosts and 1 <= nodes <= 64) else "udp"


def parse(args, environ=None):
    """The options: an Options; raises Usage or Help."""
    o = Options(environ)
    o.args = list(args)
    a = list(args)
    while a:
        x = a[0]
        if x.startswith("--") and len(x) > 3 and "=" in x[3:]:
            a[0:1] = x.split("=", 1)
            continue
        v = a[1] if len(a) > 1 else ""
        take = 2
        if x in ("-n", "--nodes"):
            need_value(a); o.nodes = v
        elif x in ("-r", "--run"):
            need_arg(a); o.run = v
        elif x in ("-f", "--file"):
            need_value(a); o.run_file = v
        elif x in ("-i", "--interactive"):
            o.interactive, take = True, 1
        elif x in ("-t", "--timeout"):
            need_value(a); o.timeout_s = v
        elif x in ("-b", "--boot-timeout"):
            need_value(a); o.boot_timeout = v
        elif x in ("-g", "--grace"):
            need_value(a); o.grace = v
        elif x in ("-m", "--mem"):
            need_value(a); o.mem = v
        elif x == "--node-qemu":
            if len(a) < 3:
                raise Usage("--node-qemu needs a node and QEMU arguments: --node-qemu I 'ARGS'")
            want_uint("--node-qemu", v)
            o.node_qemu[int(v)] = o.node_qemu.get(int(v), "") + " " + a[2]
            take = 3
        elif x == "--junit":
            need_value(a); o.junit = v
        elif x == "--smp":
            need_value(a); o.smp = v
        elif x == "--wid":
            need_value(a); o.wid = v
        elif x == "--name":
            need_value(a); o.name = v
        elif x == "--switch-port":
            need_value(a); o.switch_port = v
        elif x == "--http-port":
            need_value(a); o.http_port = v
        elif x == "--switch-opts":
            need_arg(a); o.switch_opts = v
        elif x == "--device-opts":
            need_arg(a); o.device_opts = v
        elif x == "--secret-file":
            need_value(a); o.secret_file = v
        elif x == "--packages":
            need_arg(a); o.packages += " " + v
        elif x == "--mpi":
            o.mpi_image, take = True, 1
        elif x == "--guest-release":
            need_value(a); o.guest_release = v
            if v not in ("bookworm", "trixie"):
                raise Usage("--guest-release: bookworm or trixie, not '%s'" % v)
        elif x == "--ethernet":
            o.ethernet, take = True, 1
        elif x == "--board-stats":
            o.board_stats, take = True, 1
        elif x == "--slice":
            need_value(a); o.slice_us = v
        elif x == "--pause-yield":
            need_value(a); o.pause_yield = v
        elif x == "--ethernet-mtu":
            need_value(a); o.ether_mtu = v
        elif x == "--serve-dir":
            need_value(a); o.serve_dir = v
        elif x in ("-a", "--append"):
            need_arg(a); o.append_extra = v
        elif x in ("-q", "--quiet"):
            o.quiet, take = True, 1
        elif x == "--hosts":
            need_value(a); o.hosts_arg = v
        elif x == "--rsh":
            need_value(a); o.rsh = v
        elif x == "--switch-host":
            need_value(a); o.switch_host = v
        elif x == "--switch-addr":
            need_value(a); o.switch_addr = v
        elif x == "--addr":
            need_value(a); o.my_addr = v
        elif x == "--no-slurm":
            o.no_slurm, take = True, 1
        elif x == "--virtual-time":
            o.vt, take = True, 1
        elif x == "--no-vt-sync":
            o.vt, o.vt_sync, take = True, False, 1
        elif x == "--vt-shift":
            need_value(a); o.vt_shift, o.vt_shift_set = v, True
        elif x == "--vt-insn-ps":
            need_value(a); o.vt_insn_ps = v
        elif x == "--vt-lookahead":
            need_value(a); o.vt_lookahead = v
        elif x == "--vt-quantum":
            need_value(a); o.vt_quantum = v
        elif x == "--vt-sync":
            need_value(a); o.vt_transport = v
        elif x == "--vt-start":
            need_value(a); o.vt_start = v
        elif x == "--from":
            need_value(a); o.from_tag = v
        elif x == "--snapshot-at":
            if len(a) < 3:
                raise Usage("--snapshot-at needs a virtual time and a tag: --snapshot-at VT TAG")
            o.snap_at, o.snap_at_tag, take = v, a[2], 3
        elif x in ("--gdb", "--gdb-port"):
            raise Usage("%s goes with --replay RUNDIR" % x)
        elif x in ("-h", "--help"):
            raise Help()
        elif x == "--":
            o.extra = a[1:]
            break
        else:
            raise Usage("unknown argument: %s" % x)
        del a[:take]
    return o


def seconds_ns(s):
    """"2.5" (seconds) in nanoseconds, as awk's printf "%.0f" of s * 1e9."""
    return int("%.0f" % (float(s) * 1e9))


def bad_tag(tag):
    return tag == "" or tag.startswith("-") or "/" in tag or tag in (".", "..") or tag.startswith(".") \
        or re.search(r"\s", tag) is not None


def check(o, environ=None, snap_dir=None, exists=os.path.exists, replay_adds=None):
    """Refuses what cannot run (Usage), in the order the launcher always
    checked; reads the -f file into o.run; a --replay gets what REPLAY_ADDS
    (replay_split()'s) change.  ENVIRON: SLURM_JOB_NODELIST."""
    environ = os.environ if environ is None else environ
    adds = replay_adds or {}
    if o.mem:
        want_uint("--mem", o.mem)
    for v, opt in ((o.nodes, "nodes"), (o.timeout_s, "timeout"), (o.boot_timeout, "boot-timeout"),
                   (o.grace, "grace"), (o.smp, "smp"), (o.wid, "wid"), (o.switch_port, "switch-port"),
                   (o.http_port, "http-port"), (o.slice_us, "slice")):
        want_uint("--" + opt, v)
    if not 1 <= int(o.nodes) <= 64:
        raise Usage("--nodes must be 1..64")
    if int(o.switch_port) > 65535 or int(o.http_port) > 65535:
        raise Usage("ports are 0..65535")
    if o.mem and int(o.mem) < 128:
        raise Usage("--mem: the guest wants at least 128 MiB")
    for i in sorted(o.node_qemu):
        if i >= int(o.nodes):
            raise Usage("--node-qemu %d: the cluster has nodes 0..%d" % (i, int(o.nodes) - 1))
    if o.junit:
        if os.path.isdir(o.junit):
            raise Usage("--junit: %s is a directory" % o.junit)
        if not os.path.isdir(os.path.dirname(o.junit) or "."):
            raise Usage("--junit: the directory of %s does not exist" % o.junit)
        o.junit = os.path.join(os.path.abspath(os.path.dirname(o.junit) or "."), os.path.basename(o.junit))
    if o.pause_yield not in ("", "on", "off"):
        raise Usage("--pause-yield: on or off, not '%s'" % o.pause_yield)
    if not o.pause_yield:
        # In host time a guest's spin yields its CPU to the threads it waits
        # for; in lock-step a board waits for its grant without spinning, and
        # a yield per PAUSE made the guests' boot (the kernel's delay loops)
        # five times slower to no gain: on, off under --virtual-time.
        o.pause_yield = "off" if o.vt else "on"
    if o.slice_us != "0" and not 100 <= int(o.slice_us) <= 100000:
        raise Usage("--slice: 100..100000 microseconds (the kernel's range), or 0 for its default")
    if o.run_file:
        if o.run:
            raise Usage("give -r or -f, not both")
        if not os.path.isfile(o.run_file):
            raise Usage("--file: %s does not exist" % o.run_file)
        with open(o.run_file, errors="surrogateescape") as f:
            o.run = f.read().rstrip("\n")
    if not o.run and not o.interactive:
        raise Usage("nothing to run: give -r CMD, -f SCRIPT or -i")
    if o.replay_dir:
        if not o.vt:
            raise Usage("--replay: %s was not a --virtual-time run" % o.replay_dir)
        o.timeout_s = adds.get("-t", o.timeout_s)
        o.boot_timeout = adds.get("-b", o.boot_timeout)
        o.quiet = o.quiet or bool(adds.get("-q"))
        o.switch_opts = adds.get("--switch-opts", o.switch_opts)
        o.vt_transport = adds.get("--vt-sync", o.vt_transport)
        if not o.name:
            o.name = os.path.basename(o.replay_dir) + "-replay"
        if o.gdb_node:
            want_uint("--gdb", o.gdb_node)
            want_uint("--gdb-port", o.gdb_port)
            if int(o.gdb_node) >= int(o.nodes):
                raise Usage("--gdb: the run has nodes 0..%d" % (int(o.nodes) - 1))
            if not 1 <= int(o.gdb_port) <= 65535:
                raise Usage("--gdb-port: 1..65535")
            # A person is at the debugger: no timeouts.
            o.timeout_s = o.boot_timeout = o.grace = str(100 * 365 * 86400)
    # Virtual time: no input from the host at host-dependent times.
    if o.vt:
        want_uint("--vt-shift", o.vt_shift)
        want_uint("--vt-lookahead", o.vt_lookahead)
        if o.vt_quantum:
            want_uint("--vt-quantum", o.vt_quantum)
        if int(o.vt_shift) > 10:
            raise Usage("--vt-shift: 0..10 (QEMU's -icount shift)")
        if o.vt_insn_ps:
            if o.vt_shift_set and o.vt_shift != "0":
                raise Usage("--vt-shift and --vt-insn-ps exclude each other")
            want_uint("--vt-insn-ps", o.vt_insn_ps)
            if not 1 <= int(o.vt_insn_ps) <= 1024000:
                raise Usage("--vt-insn-ps: 1..1024000 picoseconds per instruction")
        if not SECONDS_RE.match(o.vt_start):
            raise Usage("--vt-start: seconds of virtual time, e.g. 3 or 2.5 (got '%s')" % o.vt_start)
        o.vt_start_ns = seconds_ns(o.vt_start)
        if not 1 <= int(o.vt_lookahead) <= 4294967295:
            raise Usage("--vt-lookahead: 1..4294967295 ns")
        if o.vt_transport is None:
            o.vt_transport = vt_transport_default(o, environ)
        if o.vt_transport not in ("udp", "shm"):
            raise Usage("--vt-sync: udp or shm, not '%s'" % o.vt_transport)
        if o.vt_transport == "shm" and not o.vt_sync:
            raise Usage("--vt-sync shm: not with --no-vt-sync (there is no lock-step to share)")
        if o.vt_transport == "shm" and o.hosts_arg:
            raise Usage("--vt-sync shm: the boards of one host only, not with --hosts (use udp)")
        if o.vt_transport == "shm" and int(o.nodes) > 64:
            raise Usage("--vt-sync shm: at most 64 boards in a sync domain")
        why = "input from the host would reach the guests at host-dependent times"
        if o.interactive:
            raise Usage("--virtual-time runs one command (-r or -f), not -i: %s (console, jobs)" % why)
        if o.smp != "1":
            raise Usage("--virtual-time runs one vCPU per node (--smp %s): several vCPUs interleave in "
                        "host-dependent ways under TCG" % o.smp)
        if o.ethernet:
            raise Usage("--virtual-time: no --ethernet: %s" % why)
        if o.serve_dir:
            raise Usage("--virtual-time: no --serve-dir: there is no file server (%s)" % why)
    if o.snap_at:
        if not (o.vt and o.vt_sync):
            raise Usage("--snapshot-at goes with --virtual-time (a cluster in lock-step: one virtual time for every "
                        "node); a kept cluster is saved with scripts/cluster.sh snapshot NAME TAG")
        if o.replay_dir:
            raise Usage("--snapshot-at: not with --replay")
        if not SECONDS_RE.match(o.snap_at):
            raise Usage("--snapshot-at: seconds of virtual time, e.g. 4.5 (got '%s')" % o.snap_at)
        o.snap_at_ns = seconds_ns(o.snap_at)
        if o.snap_at_ns <= o.vt_start_ns:
            raise Usage("--snapshot-at %s: after the lock-step begins (--vt-start %s)" % (o.snap_at, o.vt_start))
        if bad_tag(o.snap_at_tag):
            raise Usage("--snapshot-at: '%s' cannot name a snapshot (a plain name: %s/TAG)" % (o.snap_at_tag, snap_dir))
        if exists(os.path.join(snap_dir, o.snap_at_tag)):
            raise Fail("--snapshot-at: %s/%s exists: remove it (rm -r) or choose another TAG" % (snap_dir, o.snap_at_tag))
        if o.hosts_arg:
            raise Usage("--snapshot-at: one host only (the cut is taken over the nodes' QMP sockets)")
    if o.vt_transport is None:
        o.vt_transport = "udp"
    # (the nodes go on several hosts with --hosts, or in a Slurm allocation)
    if not o.hosts_arg and (not environ.get("SLURM_JOB_NODELIST") or o.no_slurm):
        if o.switch_host:
            raise Usage("--switch-host needs --hosts (or a Slurm allocation)")
        if o.rsh:
            raise Usage("--rsh needs --hosts (or a Slurm allocation)")
    if o.secret_file:
        if not os.access(o.secret_file, os.R_OK):
            raise Usage("--secret-file: cannot read %s" % o.secret_file)
        o.secret_file = os.path.join(os.path.abspath(os.path.dirname(o.secret_file) or "."),
                                     os.path.basename(o.secret_file))
    if "/" in o.name or o.name in (".", ".."):
        raise Usage("--name: a plain name, not '%s'" % o.name)
    if o.from_tag and not (o.interactive and not o.vt):
        raise Usage("--from: a snapshot is restored as a kept cluster (scripts/cluster.sh start NAME --from TAG)")
    return o


def check_serve_dir(o):
    if o.serve_dir:
        if not os.path.isdir(o.serve_dir):
            raise Usage("--serve-dir: %s is not a directory" % o.serve_dir)
        o.serve_dir = os.path.abspath(o.serve_dir)


def kept_options(args):
    """A kept or -i cluster's options for a snapshot's restore
    (RUNDIR/options): the arguments without those that name this run."""
    out, a = [], list(args)
    while a:
        x = a[0]
        if x == "--":
            out += a
            break
        if x.startswith(("--name=", "--from=", "--junit=", "--http-port=")) or x in ("-i", "--interactive", "-q",
                                                                                     "--quiet", "--board-stats"):
            del a[0]
        elif x in ("--name", "--from", "--junit", "--http-port"):
            del a[:2]
        else:
            out.append(x)
            del a[0]
    return out
