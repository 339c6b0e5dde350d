"""The launcher (cluster.sh [options]): a one-shot run (-r, -f), a -i or
kept cluster (start NAME), a restore (start NAME --from TAG) or a run in
virtual time (--virtual-time, --replay).  main() reads the options
(options.py) and settles what they name; Launcher.run() finds the programs,
makes the run directory, starts what plan.py says (switch, hub, job
server, QEMUs), watches the nodes' consoles until the run ends, prints the
summary and writes result.json.  Launcher is the run in host time; the
steps where a run in virtual time differs are its "mode" methods, which
vtlaunch.VtLauncher overrides.  The restore is its own module (restore.py).
"""
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import time

from . import lib, options, plan, restore, vt
from .. import mpi_export
from .cli import B, G, R, Y, N, Exit, Fail, Usage, say
from .rundir import CLUSTER_DIR, HERE, SNAP_DIR, TOP, info_int, pid_alive, read_info

ANSI = re.compile(r"\x1b\[[0-9;]*m")


class Stop(Exception):
    """A signal: the launcher ends with this status."""

    def __init__(self, status):
        super().__init__(status)
        self.status = status


def settle(args, environ):
    """The options, --replay's recorded ones swapped in, checked: an
    Options; raises Usage, Help or Fail."""
    rep = options.replay_split(args)
    if rep:
        rdir, adds = rep
        if not os.path.isdir(rdir):
            raise Usage("--replay: %s is not a directory" % rdir)
        rdir = os.path.realpath(rdir)
        if not os.path.isfile(os.path.join(rdir, "replay", "options")):
            raise Usage("--replay: %s has no replay/options (not a --virtual-time run)" % rdir)
        o = options.parse(vt.read_nul(os.path.join(rdir, "replay", "options")), environ)
        o.replay_dir = rdir
        o.name = adds.get("--name", "")
        o.gdb_node = adds.get("--gdb", "")
        o.gdb_port = adds.get("--gdb-port", "1234")
        # a snapshot of a virtual-time run (--snapshot-at): the run again
        # from its cut, compared with the run it was taken from
        if os.path.isfile(os.path.join(rdir, "snapshot.info")):
            o.vsnap = rdir
    else:
        o = options.parse(args, environ)
        adds = {}
    options.check(o, environ, snap_dir=SNAP_DIR, replay_adds=adds)
    return o


def qemu_status(rc):
    """A child's status as the shell gives it (128 + N for signal N)."""
    return 128 - rc if rc < 0 else rc


def signame(n):
    try:
        return signal.Signals(n).name
    except ValueError:
        return "SIG%d" % n


def read_text(path):
    try:
        with open(path, "rb") as f:
            return f.read().decode("utf-8", "replace")
    except OSError:
        return ""


def tail_lines(path, n):
    lines = read_text(path).replace("\r", "").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines[-n:]


class Console:
    """What a node's console says (the launcher's view of its boot)."""

    def __init__(self, text):
        self.out = text != ""
        self.net = self.joined = self.ranks = self.begin = self.serving = self.panic = self.unpack = False
        self.link = self.lid = self.end = self.sf = ""
        ended = False
        for line in text.split("\n"):
            if line.startswith("DN2-NET "):
                self.net = True
            if line.startswith("DN2-LINK up lid=") and not self.link:
                self.link = "up"
                w = line.split()
                self.lid = w[2][4:] if len(w) > 2 else ""
            if line.startswith("DN2-LINK down") and not self.link:
                self.link = "down"
            if line.startswith("DN2-JOINED"):
                self.joined = True
            if line.startswith("DN2-RANKS"):
                self.ranks = True
            if line.startswith("DN2-START-FAILED ") and not self.sf:
                self.sf = line[17:]
            if line == "DN2-GUEST-BEGIN":
                self.begin = True
            if line.startswith("DN2-GUEST-END rc=") and self.begin and not ended:
                self.end, ended = line[17:], True
            if line.startswith("DN2-SERVING"):
                self.serving = True
            if "Kernel panic" in line:
                self.panic = True
            if "Initramfs unpacking failed" in line:
                self.unpack = True


def guest_output(text):
    """What the command printed: between the sentinels, or up to now."""
    out, f = [], False
    lines = text.replace("\r", "").split("\n")
    if lines and lines[-1] == "":
        lines.pop()             # (the newline that ends the last line)
    for line in lines:
        if line.startswith("DN2-GUEST-END rc="):
            break
        if f:
            out.append(line)
        if line == "DN2-GUEST-BEGIN":
            f = True
    return out


class Launcher:
    def __init__(self, o, environ):
        self.o = o
        self.env = environ
        self.nodes = int(o.nodes)
        self.ctx = plan.Context(pid=os.getpid(), tmpdir=environ.get("TMPDIR") or "/tmp", py=sys.executable,
                                here=HERE, export_dir=environ.get("DN2_GUEST_EXPORT") or os.path.join(
                                    TOP, "build", "guest", "export"))
        self.procs = {}            # pgid -> Popen
        self.pgids = []
        self.qemu = []             # Popen per node
        self.reaper = None
        self.snap = None           # restore.Snapshot
        self.snap_helper = None
        self.kept = False
        self.rundir = ""
        self.name = o.name
        self.cleaned = False
        self.interrupted = False
        self.ready_announced = False
        self.display_active = False
        self.result_written = False
        self.t0 = time.monotonic()
        n = self.nodes
        self.phase = ["start"] * n
        self.lid, self.rc, self.why = [""] * n, [""] * n, [""] * n
        self.t_link, self.t_joined, self.t_begin, self.t_done = [""] * n, [""] * n, [""] * n, [""] * n
        self.qemu_rc = [""] * n
        self.res_state, self.res_why = [""] * n, [""] * n
        self.shown = [""] * n
        self.node_host = [""] * n
        self.t_all_links = self.t_ranks = ""
        self.pmi_abort_msg = ""
        self.state_written = None
        self.vt_shown, self.vt_shown_at = "", 0
        self.img_unpacked_kib = None
        self.img_need_mib = None
        self.mem_auto = False
        self.accel_name = ""
        self.initrd_built = ""

    # ------------------------------------------------------------ time
    def elapsed(self):
        return int(time.monotonic() - self.t0)

    def elapsed_f(self):
        d = int((time.monotonic() - self.t0) * 10)
        return "%d.%d" % (d // 10, d % 10)

    # ------------------------------------------------------------ inputs
    def inputs(self):
        o, ctx, env = self.o, self.ctx, self.env
        self.find_programs()
        ctx.firmware = os.path.join(lib.cache_dir(env), "firmware")
        if not os.path.isfile(os.path.join(ctx.firmware, "bios-256k.bin")):
            raise Fail("firmware missing in %s: run scripts/setup.sh" % ctx.firmware)
        self.check_accel()
        if not os.access(ctx.switch_bin, os.X_OK):
            raise Fail("no switch at %s: build it with 'meson setup build && meson compile -C build' "
                       "(or scripts/test.sh)" % ctx.switch_bin)
        # --slice: the data path's processes start through scripts/sched-slice.py
        if o.slice_us != "0":
            ctx.slice_wrap = [ctx.py, os.path.join(HERE, "sched-slice.py"), o.slice_us, "--"]
            r = subprocess.run([ctx.py, os.path.join(HERE, "sched-slice.py"), "--check", o.slice_us],
                               stdout=subprocess.PIPE, text=True)
            if r.returncode == 0:
                if not o.quiet:
                    say("host scheduling: a %s µs slice for the QEMUs, the switch and the hub (--slice)" % o.slice_us)
            else:
                say("note: --slice %s has no effect here: %s" % (o.slice_us, r.stdout.rstrip("\n")))
                ctx.slice_wrap = []
        # --pause-yield: TCG's accelerator gets pause-yield=on where this QEMU has it
        if o.pause_yield == "on":
            try:
                r = subprocess.run([ctx.qemu_bin, "-M", "none", "-accel", "tcg,pause-yield=on", "-display", "none",
                                    "-nodefaults", "-S", "-qmp", "stdio"],
                                   input=b'{"execute":"qmp_capabilities"}\n{"execute":"quit"}\n',
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=20)
                ok = r.returncode == 0
            except (OSError, subprocess.TimeoutExpired):
                ok = False
            if ok:
                ctx.accel_args = plan.pause_yield_args(ctx.accel_args)
            else:
                say("note: --pause-yield on has no effect here: %s has no -accel tcg,pause-yield" % ctx.qemu_bin)
        self.initrd_built = self.recorded_image() or self.build_image()
        # Guest memory: the image unpacks into it; without -m it is sized from the image.
        rc, size, err = lib.call("dn2_image_size", self.initrd_built)
        w = size.split()
        if rc == 0 and len(w) == 2:
            self.img_unpacked_kib, img_kib = int(w[0]), int(w[1])
            self.img_need_mib = lib.guest_mem(self.img_unpacked_kib, img_kib)
            img_mib = (self.img_unpacked_kib + 1023) // 1024
            if not o.mem:
                o.mem, self.mem_auto = str(self.img_need_mib), True
                if int(o.mem) > 256:
                    say("guest memory: %s MiB, sized from the image (it unpacks to %d MiB in the guest's RAM; -m "
                        "sets it)" % (o.mem, img_mib))
            elif int(o.mem) < self.img_need_mib:
                say("%swarning%s: the guest image unpacks to %d MiB in the guest's RAM: -m %s may not hold it (the "
                    "launcher would give %d MiB; leave -m out to size it from the image)"
                    % (Y, N, img_mib, o.mem, self.img_need_mib))
        else:
            say("warning: %s: guest memory not sized from the image" % err)
            if not o.mem:
                o.mem = "256"
        ctx.mem = o.mem

    # ------------------------------------------------------------ run directory
    def make_rundir(self):
        o, ctx = self.o, self.ctx
        os.makedirs(CLUSTER_DIR, exist_ok=True)
        if not self.name:
            self.name = "%s-%d" % (time.strftime("%Y%m%d-%H%M%S"), os.getpid())
            # Keep the last 10 timestamped runs.
            old = sorted(e for e in os.listdir(CLUSTER_DIR) if re.match(r"^[0-9]+-[0-9]+-[0-9]", e))
            for e in old[:-9]:
                d = os.path.join(CLUSTER_DIR, e)
                if pid_alive(info_int(read_info(os.path.join(d, "info")), "launcher_pid")):
                    continue
                shutil.rmtree(d, ignore_errors=True)
        r = os.path.join(CLUSTER_DIR, self.name)
        if os.path.isfile(os.path.join(r, "info")):
            lp = info_int(read_info(os.path.join(r, "info")), "launcher_pid")
            if pid_alive(lp):
                raise Fail("a cluster is running in %s (launcher pid %d)" % (r, lp))
        shutil.rmtree(r, ignore_errors=True)
        old = os.umask(0o077)
        try:
            for sub in ("joins", "jobs", os.path.join("www", "cmd")):
                os.makedirs(os.path.join(r, sub), exist_ok=True)
        except OSError:
            raise Fail("cannot create %s" % r)
        finally:
            os.umask(old)
        os.chmod(r, 0o700)
        self.rundir = ctx.rundir = r
        latest = os.path.join(CLUSTER_DIR, "latest")
        try:
            os.unlink(latest)
        except OSError:
            pass
        try:
            os.symlink(self.name, latest)
        except OSError:
            pass
        # cluster.sh start: the launcher's output moves into the run directory.
        log = self.env.get("_DN2_CLUSTER_LOG", "")
        if log:
            self.kept = True
            try:
                os.replace(log, os.path.join(r, "launcher.log"))
            except OSError:
                pass
            os.environ.pop("_DN2_CLUSTER_LOG", None)
        # Our own hard link: another build may replace the initramfs meanwhile.
        ctx.initrd = os.path.join(r, "initramfs.cpio.lz4")
        try:
            os.link(self.initrd_built, ctx.initrd)
        except OSError:
            shutil.copyfile(self.initrd_built, ctx.initrd)
        ctx.jobid = "%s-%d%d" % (self.name, random.randrange(32768), random.randrange(32768))
        # The job's secret (never on a command line).
        try:
            fd = os.open(os.path.join(r, "secret"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            os.write(fd, os.urandom(32).hex().encode())
            os.close(fd)
        except OSError:
            raise Fail("cannot write %s/secret" % r)
        # A kept or -i cluster: its options, for a snapshot's restore.
        if o.interactive:
            vt.write_nul(os.path.join(r, "options"), options.kept_options(o.args))
        self.seed_rundir()

    def build_image(self):
        """scripts/build-initramfs.sh for the options (it rebuilds only
        when an input changed): the image's path."""
        o = self.o
        if o.mpi_image:
            self.fill_mpi_export()
        ia = (["--packages", o.packages] if o.packages else []) + (["--mpi"] if o.mpi_image else [])
        ia += ["--guest-release", o.guest_release] if o.guest_release else []
        r = subprocess.run(["bash", os.path.join(HERE, "build-initramfs.sh")] + ia, stdout=subprocess.PIPE)
        if r.returncode != 0:
            raise Fail("building the guest initramfs failed (scripts/build-initramfs.sh %s)" % " ".join(ia))
        return r.stdout.decode(errors="surrogateescape").rstrip("\n")

    def fill_mpi_export(self):
        """The bookworm MPI image's /opt/dn2 (build/guest/export-mpi/) from
        the build, as mpirun.sh fills it: ranks started by hand in a
        cluster that mpirun.sh never ran on need the PMI library too."""
        if self.o.guest_release not in ("", "bookworm"):
            return      # (another release's image builds its own)
        missing = mpi_export.fill(mpi_export.default_provider(environ=self.env))
        if missing:
            say("note: not built, so not in the MPI image's /opt/dn2: %s (meson compile -C build)"
                % ", ".join(missing))

    # ------------------------------------------------------------ the mode
    # A run in host time (this class) or in virtual time (vtlaunch.VtLauncher,
    # which overrides these): the steps where the two differ.
    def find_programs(self):
        """QEMU, the kernel, the switch and the device's globals: this
        build's (or DN2_SWITCH, DN2_DEVICE_GLOBALS)."""
        ctx, env = self.ctx, self.env
        rc, ctx.qemu_bin, err = lib.call("dn2_find_qemu")
        if rc:
            raise Fail(err)
        rc, ctx.kernel, err = lib.call("dn2_find_kernel")
        if rc:
            raise Fail(err)
        ctx.switch_bin = env.get("DN2_SWITCH") or os.path.join(TOP, "build", "fabric", "dn2-switch")
        ctx.device_globals = env.get("DN2_DEVICE_GLOBALS", "")

    def recorded_image(self):
        """The guest image a restore runs ("" to build this tree's)."""
        return os.path.join(self.snap.dir, "initramfs.cpio.lz4") if self.snap else ""

    def check_accel(self):
        """The accelerator's arguments: KVM when usable, else TCG."""
        o, ctx = self.o, self.ctx
        try:
            ctx.accel_args, self.accel_name = plan.accel(self.env, False, o.vt_shift, o.vt_insn_ps,
                                                         kvm_usable=lib.kvm_usable())
        except ValueError as e:
            raise Fail(str(e))

    def load_snapshot(self):
        """--from TAG: the snapshot restored into this run."""
        o = self.o
        if o.from_tag:
            self.snap = restore.load_from_tag(o, SNAP_DIR)
        options.check_serve_dir(o)

    def seed_rundir(self):
        """What the run directory holds before anything starts: a restore's
        job id and its nodes' tokens."""
        if self.snap:
            self.ctx.jobid = restore.seed(self.snap, self.rundir)

    def start_services(self):
        """The job server: each node's command, files and rank table."""
        self.start_server()

    def node_input(self, i):
        """Node I's command, served by the job server, and its token."""
        o, r = self.o, self.rundir
        if o.run:
            with open(os.path.join(r, "www", "cmd", "node%d.sh" % i), "w", errors="surrogateescape") as f:
                f.write(plan.node_command(o, i).rstrip("\n") + "\n")
        tok = os.path.join(r, "tokens", "node%d" % i)
        if not (os.path.isfile(tok) and os.path.getsize(tok) > 0):
            raise Fail("the job server wrote no token for node %d (%s)" % (i, tok))

    def banner_mode(self):
        ctx = self.ctx
        say("files: %s served at http://%s:%s/ to the nodes only (in the guests: %s$DN2_HTTP/%s = %s/n/NODE/TOKEN)"
            % (ctx.export_dir, ctx.http_bind, ctx.hport, B, N, plan.guest_url(ctx)))

    def nodes_started(self):
        """Once every QEMU runs (nothing in host time)."""

    def restored_up(self):
        """A restored cluster is up from its first round."""
        return True

    def round_done(self):
        """After each round of the monitor (nothing in host time)."""

    def progress_line(self):
        """The switch's row of the display: None for none."""
        return None

    def before_end(self):
        """While the switch still runs, at the end (nothing in host time)."""

    def timeout_detail(self):
        """What the timeout line of a run cut off by --timeout adds (nothing
        in host time: each node's row says where it was)."""
        return ""

    def end_status(self, status):
        """The run's exit status after its summary."""
        return status

    # ------------------------------------------------------------ hosts
    def hosts(self):
        o, ctx = self.o, self.ctx
        if o.hosts_arg:
            ctx.hosts = o.hosts_arg.split(",")
            ctx.rsh = o.rsh or "ssh"
        elif self.env.get("SLURM_JOB_NODELIST") and not o.no_slurm:
            if not shutil.which("scontrol"):
                raise Fail("SLURM_JOB_NODELIST is set but scontrol is missing (install slurm-client, or give "
                           "--no-slurm)")
            r = subprocess.run(["scontrol", "show", "hostnames", self.env["SLURM_JOB_NODELIST"]],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            ctx.hosts = [h for h in r.stdout.split("\n") if h]
            if not ctx.hosts:
                raise Fail("no host in the Slurm allocation (%s): %s" % (self.env["SLURM_JOB_NODELIST"],
                                                                         "\n".join(r.stderr.split("\n")[:3])))
            ctx.rsh = o.rsh or "srun --nodes=1 --ntasks=1 --overlap --quiet --nodelist"
            say("Slurm allocation %s: hosts %s" % (self.env.get("SLURM_JOB_ID", "?"), " ".join(ctx.hosts)))
        for h in ctx.hosts:
            if h == "" or re.search(r"\s", h):
                raise Fail("--hosts: bad host name '%s'" % h)
        if ctx.hosts:
            if o.ethernet:
                raise Fail("--ethernet is one host's dgram network: not with several hosts")
            ctx.switch_host = o.switch_host or ctx.hosts[0]
            ctx.switch_addr = o.switch_addr
            seen = []
            for h in [ctx.switch_host] + ctx.hosts:
                if h in seen:
                    continue
                seen.append(h)
                try:
                    r = subprocess.run(plan.on_host(ctx.rsh, h, ["hostname", "-I"]), stdin=subprocess.DEVNULL,
                                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60, text=True)
                    ok, a, err = r.returncode == 0, r.stdout, r.stderr
                except (OSError, subprocess.TimeoutExpired) as e:
                    ok, a, err = False, "", str(e)
                if not ok:
                    raise Fail("cannot run a command on host %s with '%s %s ...': %s"
                               % (h, ctx.rsh, h, "\n".join(err.split("\n")[:3])))
                if h == ctx.switch_host and not ctx.switch_addr:
                    ctx.switch_addr = (a.split() or [""])[0]
                    if not ctx.switch_addr:
                        raise Fail("host %s has no address (hostname -I): give --switch-addr" % ctx.switch_host)
            ctx.my_addr = o.my_addr
            if not ctx.my_addr:
                r = subprocess.run(["hostname", "-I"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
                ctx.my_addr = (r.stdout.split() or [""])[0]
            if not ctx.my_addr:
                raise Fail("this host has no address (hostname -I): give --addr")
            ctx.http_bind = ctx.my_addr
            ctx.switch_listen = "[::]" if ":" in ctx.switch_addr else "0.0.0.0"
            # (another host's python3 may live elsewhere: there, the one on its PATH)
            if ctx.slice_wrap:
                ctx.slice_wrap = ["python3"] + ctx.slice_wrap[1:]
        else:
            ctx.switch_addr = ctx.switch_listen = ctx.http_bind = "127.0.0.1"
            ctx.my_addr = "10.0.2.2"
        self.remote_procs = []

    # ------------------------------------------------------------ processes
    def start_group(self, out, err, cmd):
        """CMD in a process group of its own (listed in RUNDIR/pgids)."""
        with open(out, "wb") as fo, open(err, "wb") as fe:
            p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=fo, stderr=fe, start_new_session=True)
        self.procs[p.pid] = p
        self.pgids.append(p.pid)
        with open(os.path.join(self.rundir, "pgids"), "a") as f:
            f.write("%d\n" % p.pid)
        return p

    def wait_ready(self, path, p, tenths):
        for _ in range(tenths):
            if os.path.isfile(path) and os.path.getsize(path) > 0:
                return True
            if p.poll() is not None:
                break
            time.sleep(0.1)
        return os.path.isfile(path) and os.path.getsize(path) > 0

    def module_env(self):
        env = dict(os.environ)
        env["PYTHONPATH"] = HERE + (":" + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        return env

    def start_switch(self):
        o, ctx, r = self.o, self.ctx, self.rundir
        cmd = plan.switch_cmd(o, ctx)
        with open(os.path.join(r, "switch.cmd"), "w") as f:
            f.write(plan.shell_line(cmd))
        if ctx.hosts:
            cmd = plan.on_host_pid(ctx.rsh, ctx.switch_host, os.path.join(r, "switch.pid"), cmd)
            self.remote_procs.append((ctx.switch_host, os.path.join(r, "switch.pid")))
        self.switch = self.start_group(os.path.join(r, "switch.out"), os.path.join(r, "switch.log"), cmd)
        # (a remote shell may take a while to log in)
        if not self.wait_ready(os.path.join(r, "switch.port"), self.switch, 600 if ctx.hosts else 100):
            text = read_text(os.path.join(r, "switch.log")) + read_text(os.path.join(r, "switch.out"))
            if o.switch_port != "0" and re.search(r"in use|bind", text, re.I):
                raise Fail("switch port %s is busy: %s (choose another --switch-port, or 0 for a free one)"
                           % (o.switch_port, " ".join(text.split("\n")[:3])))
            raise Fail("dn2-switch did not start%s: %s" % (" on host " + ctx.switch_host if ctx.switch_host else "",
                                                           "\n".join(text.rstrip("\n").split("\n")[-5:])))
        ctx.sport = read_text(os.path.join(r, "switch.port")).strip()

    def start_ethhub(self):
        o, ctx, r = self.o, self.ctx, self.rundir
        rc, hub_bin, err = lib.call("dn2_find_ethhub")
        if rc:
            raise Fail(err)
        p = subprocess.run([ctx.py, "-m", "dn2scripts.free_udp_ports", str(self.nodes)], stdout=subprocess.PIPE,
                           text=True, env=self.module_env())
        ctx.eth_ports = p.stdout.split()
        if len(ctx.eth_ports) != self.nodes:
            raise Fail("could not find %d free UDP ports on 127.0.0.1" % self.nodes)
        hub = self.start_group(os.path.join(r, "ethhub.out"), os.path.join(r, "ethhub.log"),
                               plan.ethhub_cmd(o, ctx, hub_bin))
        if not self.wait_ready(os.path.join(r, "ethhub.port"), hub, 50):
            raise Fail("dn2-ethhub did not start: %s" % "\n".join(tail_lines(os.path.join(r, "ethhub.log"), 3)))
        ctx.eport = read_text(os.path.join(r, "ethhub.port")).strip()

    def start_server(self):
        o, ctx, r = self.o, self.ctx, self.rundir
        os.makedirs(ctx.export_dir, exist_ok=True)
        p = self.start_group(os.path.join(r, "http.out"), os.path.join(r, "http.log"), plan.server_cmd(o, ctx))
        if not self.wait_ready(os.path.join(r, "http.port"), p, 100):
            log = read_text(os.path.join(r, "http.log"))
            if self.snap and "is busy" in log:
                raise Fail("the snapshot's job server port %s is busy: the guests of snapshot %s reach their job "
                           "server there; the cluster it was taken from (or another restore of it) still runs: "
                           "stop it first" % (o.http_port, o.from_tag))
            if "is busy" in log:
                raise Fail("HTTP port %s is busy (choose another --http-port, or 0 for a free one)" % o.http_port)
            raise Fail("the job/file server did not start: %s" % "\n".join(tail_lines(os.path.join(r, "http.log"), 5)))
        ctx.hport = read_text(os.path.join(r, "http.port")).strip()

    def info_append(self, lines):
        with open(os.path.join(self.rundir, "info"), "a") as f:
            f.write("".join(l + "\n" for l in lines))

    def start_nodes(self):
        o, ctx, r = self.o, self.ctx, self.rundir
        for i in range(self.nodes):
            self.node_input(i)
            self.info_append(plan.node_info(o, ctx, i))
            cmd = plan.node_launch(o, ctx, i)
            self.node_host[i] = plan.node_host(ctx, i)
            if self.node_host[i]:
                self.remote_procs.append((self.node_host[i], os.path.join(r, "node%d.pid" % i)))
            with open(os.path.join(r, "node%d.cmd" % i), "w") as f:
                f.write(plan.shell_line(cmd))
            if self.snap:
                shutil.copyfile(os.path.join(self.snap.dir, "node%d.log" % i), os.path.join(r, "node%d.log" % i))
            else:
                open(os.path.join(r, "node%d.log" % i), "w").close()
            p = self.start_group(os.path.join(r, "node%d.stdout" % i), os.path.join(r, "node%d.stderr" % i), cmd)
            self.qemu.append(p)
            self.info_append(["node%d_pid=%d" % (i, p.pid)])

    def socks(self):
        info = read_info(os.path.join(self.rundir, "info"))
        return [info.get("node%d_qmp" % i, "") for i in range(self.nodes)]

    # ------------------------------------------------------------ teardown
    def signals(self):
        def on_int(signum, frame):
            self.interrupted = True
            if self.display_active:
                sys.stderr.write("\n")
            self.display_active = False
            say("interrupted: stopping the cluster")
            # Dev mode is meant to end with Ctrl-C.
            raise Stop(0 if self.o.interactive and self.ready_announced else 130)

        def on_term(signum, frame):
            raise Stop(143)

        def on_hup(signum, frame):
            raise Stop(129)

        signal.signal(signal.SIGINT, on_int)
        signal.signal(signal.SIGTERM, on_term)
        signal.signal(signal.SIGHUP, on_hup)

    def cleanup(self, status):
        if self.cleaned:
            return
        self.cleaned = True
        for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(s, signal.SIG_IGN)
        # (a one-shot run wrote it at its end; a kept cluster now, as it stops)
        self.write_result(status)
        if self.display_active:
            sys.stderr.write("\n")
        # The guests first (they would only see their link drop), then the
        # servers; TERM, then KILL after 3 s.  On other hosts: TERM by the
        # process id each wrote, through the remote shell, all hosts at once.
        rp = []
        for h, f in getattr(self, "remote_procs", []):
            cmd = plan.on_host(self.ctx.rsh, h, ["/bin/sh", "-c", 'p=$(cat "$0" 2> /dev/null) && kill -TERM "$p" '
                                                 '2> /dev/null; :', f])
            try:
                rp.append(subprocess.Popen(["timeout", "20"] + cmd, stdin=subprocess.DEVNULL,
                                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
            except OSError:
                pass
        for p in rp:
            p.wait()
        if self.snap_helper is not None:
            self.snap_helper.kill()
        self.kill_groups(signal.SIGTERM, [p.pid for p in self.qemu])
        for _ in range(30):
            if all(p.poll() is not None for p in self.qemu):
                break
            time.sleep(0.1)
        self.kill_groups(signal.SIGKILL, [p.pid for p in self.qemu])
        self.kill_groups(signal.SIGTERM, self.pgids)
        time.sleep(0.2)
        self.kill_groups(signal.SIGKILL, self.pgids)
        if self.reaper is not None:
            self.reaper.kill()
        for p in list(self.procs.values()) + ([self.reaper] if self.reaper else []):
            try:
                p.wait()
            except OSError:
                pass
        info = os.path.join(self.rundir, "info") if self.rundir else ""
        if info and os.path.isfile(info):
            text = read_text(info)
            with open(info, "w") as f:
                f.write(re.sub(r"(?m)^launcher_pid=.*$", "launcher_pid=0", text))

    def kill_groups(self, sig, groups):
        for g in groups:
            try:
                os.killpg(g, sig)
            except OSError:
                pass

    # ------------------------------------------------------------ results
    def write_result(self, status):
        if self.result_written or not self.qemu or not os.path.isdir(self.rundir):
            return
        self.result_written = True
        o, r = self.o, self.rundir
        mode = "kept" if self.kept else "interactive" if o.interactive else "one-shot"
        if not self.pmi_abort_msg:
            self.pmi_abort_msg = (tail_lines(os.path.join(r, "pmi-abort"), 10**6) or [""])[0]
        kv = [("name", self.name), ("mode", mode), ("command", o.run), ("node_count", o.nodes),
              ("exit_status", str(status)), ("duration_s", self.elapsed_f()), ("all_links_up_s", self.t_all_links),
              ("rank_table_s", self.t_ranks), ("ready_s", read_info(os.path.join(r, "info")).get("ready_s", ""))]
        if not o.interactive:
            kv.append(("timeout_s", o.timeout_s))
        kv += [("accel", self.accel_name), ("mem", o.mem), ("mem_auto", "1" if self.mem_auto else ""),
               ("smp", o.smp), ("image", self.initrd_built),
               ("image_mem_mib", str(self.img_need_mib) if self.img_need_mib else "")]
        if self.img_unpacked_kib is not None:
            kv.append(("image_unpacked_mib", str((self.img_unpacked_kib + 1023) // 1024)))
        kv += [("vt", "1" if o.vt else ""), ("pmi_abort", self.pmi_abort_msg)]
        for i in range(self.nodes):
            if not self.res_state[i]:
                # (a kept or -i cluster that stops, or an interrupted run)
                ph = self.phase[i]
                if ph == "serving":
                    self.res_state[i] = "up"
                elif ph == "done":
                    self.res_state[i] = "ok" if self.rc[i] == "0" else "failed"
                elif ph == "failed":
                    self.res_state[i], self.res_why[i] = "failed", self.why[i]
                else:
                    self.res_state[i], self.res_why[i] = "stopped", "stopped while " + ANSI.sub("", self.describe(i))
            kv += [("node.%d.state" % i, self.res_state[i]), ("node.%d.why" % i, self.res_why[i]),
                   ("node.%d.rc" % i, self.rc[i]), ("node.%d.lid" % i, self.lid[i]),
                   ("node.%d.qemu_rc" % i, self.qemu_rc[i]), ("node.%d.link_s" % i, self.t_link[i]),
                   ("node.%d.joined_s" % i, self.t_joined[i]), ("node.%d.begin_s" % i, self.t_begin[i]),
                   ("node.%d.done_s" % i, self.t_done[i])]
        f = os.path.join(r, ".result.in")
        with open(f, "wb") as out:
            out.write(b"".join(k.encode() + b"\0" + v.encode(errors="surrogateescape") + b"\0" for k, v in kv))
        err = os.path.join(r, "result.err")
        with open(err, "w") as e:
            p = subprocess.run([self.ctx.py, "-m", "dn2scripts.cluster_result", f, r, o.junit], stderr=e,
                               env=self.module_env())
        if p.returncode != 0:
            say("warning: could not write %s/result.json: %s" % (r, (tail_lines(err, 1) or [""])[0]))
        for x in (f,):
            try:
                os.unlink(x)
            except OSError:
                pass
        if os.path.isfile(err) and os.path.getsize(err) == 0:
            os.unlink(err)

    # ------------------------------------------------------------ monitor
    def image_too_big(self):
        if self.img_unpacked_kib is not None:
            return ("the guest image unpacks to %d MiB, more than guest memory of %s MiB holds (the initramfs "
                    "unpacks into RAM, at most half of it; console: 'Initramfs unpacking failed'): give -m %d or "
                    "more, or leave -m out to size it from the image"
                    % ((self.img_unpacked_kib + 1023) // 1024, self.o.mem, self.img_need_mib))
        return ("the guest image does not fit in guest memory of %s MiB (console: 'Initramfs unpacking failed'): "
                "give a larger -m" % self.o.mem)

    def log_text(self, i):
        return read_text(os.path.join(self.rundir, "node%d.log" % i)).replace("\r", "")

    def scan(self, i):
        """Node I's state from its console and its process."""
        c = Console(self.log_text(i))
        if self.phase[i] in ("done", "failed"):
            return
        p = "boot" if c.out else "start"
        if c.net:
            p = "net"
        if c.link == "up":
            p = "link"
            self.lid[i] = c.lid
            if not self.t_link[i]:
                self.t_link[i] = self.elapsed_f()
        if c.link == "down":
            p = "linkdown"
        if c.joined:
            p = "joined"
            if not self.t_joined[i]:
                self.t_joined[i] = self.elapsed_f()
        if c.ranks:
            p = "ranks"
        if c.begin:
            p = "running"
            if not self.t_begin[i]:
                self.t_begin[i] = self.elapsed_f()
        if c.serving and not c.end and not c.begin:
            p = "serving"
        if c.sf:
            p, self.why[i] = "failed", "job start failed: " + c.sf
        elif c.end:
            self.rc[i] = c.end
            if not self.t_done[i]:
                self.t_done[i] = self.elapsed_f()
            if not self.o.interactive:
                p = "done"
            elif c.serving:
                p = "serving"       # dev mode: the command is followed by serving
        if c.panic:
            p, self.why[i] = "failed", "kernel panic"
        # The image did not fit: what follows is only a consequence.
        if c.unpack:
            p, self.why[i] = "failed", self.image_too_big()
        q = self.qemu[i]
        if p not in ("failed", "done") and q.poll() is not None:
            self.qemu_rc[i] = str(qemu_status(q.returncode))
            # The guest may have printed its end line and powered off between
            # reading the log above and this check: read it once more.
            again = Console(self.log_text(i))
            end = again.end
            if end and not self.o.interactive:
                self.rc[i] = end
                # (then the command began since the first read too)
                if not self.t_begin[i]:
                    self.t_begin[i] = self.elapsed_f()
                if not self.t_done[i]:
                    self.t_done[i] = self.elapsed_f()
                self.phase[i] = "done"
                return
            p = "failed"
            qrc = int(self.qemu_rc[i])
            how = "status %d" % qrc
            if 128 < qrc < 160:
                how = "killed by %s" % signame(qrc - 128)
            when = "while serving jobs" if self.phase[i] == "serving" else "before the command finished"
            if self.node_host[i]:
                self.why[i] = "node lost on host %s: QEMU or the remote shell (%s) ended (%s) %s" % (
                    self.node_host[i], self.ctx.rsh, how, when)
            else:
                self.why[i] = "QEMU exited (%s) %s" % (how, when)
            err = tail_lines(os.path.join(self.rundir, "node%d.stderr" % i), 1)
            if err:
                self.why[i] += ": " + err[0]
        self.phase[i] = p

    def write_state(self):
        s = "".join("%d %s %s %s %s\n" % (i, self.phase[i], self.lid[i] or "-", self.rc[i] or "-", self.why[i])
                    for i in range(self.nodes))
        if s == self.state_written:
            return
        self.state_written = s
        tmp = os.path.join(self.rundir, "state.tmp")
        with open(tmp, "w") as f:
            f.write(s)
        os.replace(tmp, os.path.join(self.rundir, "state"))

    def describe(self, i):
        lidtxt = "LID 0x%04x" % int(self.lid[i]) if self.lid[i] else ""
        ph, rc = self.phase[i], self.rc[i]
        return {
            "start": "starting QEMU",
            "boot": "booting",
            "net": "booted, network up, waiting for the link",
            "link": "link up, " + lidtxt,
            "linkdown": R + "link DOWN" + N,
            "joined": lidtxt + ", joined, waiting for the rank table",
            "ranks": lidtxt + ", got the rank table",
            "running": "%s, %srunning%s" % (lidtxt, Y, N),
            "serving": "%s, %sready%s (serving jobs)%s" % (lidtxt, G, N, ", command rc=" + rc if rc else ""),
            "done": ("%s, %sdone rc=0%s (%s s)" % (lidtxt, G, N, self.t_done[i]) if rc == "0"
                     else "%s, %sdone rc=%s%s (%s s)" % (lidtxt, R, rc, N, self.t_done[i])),
            "failed": "%sFAILED%s: %s" % (R, N, self.why[i]),
        }.get(ph, "")

    def render(self):
        o = self.o
        if o.quiet:
            return
        rows = self.nodes + (1 if self.progress_line() is not None else 0)
        if self.display_tty:
            out = []
            if self.display_active:
                out.append("\x1b[%dA" % rows)
            self.display_active = True
            for i in range(self.nodes):
                t = self.t_done[i] if self.phase[i] == "done" else self.elapsed_f()
                out.append("\r\x1b[K  node%-2d %5ss  %s\n" % (i, t, self.describe(i)))
            if rows != self.nodes:
                out.append("\r\x1b[K  switch  %s\n" % self.progress_line()[:150])
            sys.stderr.write("".join(out))
            sys.stderr.flush()
        else:
            line = self.progress_line()
            if line and line != self.vt_shown and self.elapsed() - self.vt_shown_at >= 30:
                self.vt_shown, self.vt_shown_at = line, self.elapsed()
                sys.stderr.write("[cluster] %5ss switch: %s\n" % (self.elapsed_f(), line))
            for i in range(self.nodes):
                line = self.describe(i)
                if line == self.shown[i]:
                    continue
                self.shown[i] = line
                sys.stderr.write("[cluster] %5ss node%d: %s\n" % (self.elapsed_f(), i, line))
            sys.stderr.flush()

    def display_stop(self):
        """Further changes as lines."""
        self.render()
        self.display_tty = False
        self.display_active = False
        for i in range(self.nodes):
            self.shown[i] = self.describe(i)

    def stuck_reason(self, i):
        ph, ctx = self.phase[i], self.ctx
        if ph == "start":
            return "no console output at all (QEMU, firmware or kernel problem; see %s/node%d.stderr)" % (self.rundir, i)
        if ph == "boot":
            return "booted but no network/link report (is /init from scripts/build-initramfs.sh?)"
        if ph == "net":
            return "its board's link never came up (switch %s unreachable%s? see %s/switch.log)" % (
                plan.switch_at(ctx), " from host " + self.node_host[i] if self.node_host[i] else "", self.rundir)
        if ph == "link":
            return "link up but it never reached the job server %s (guest networking?)" % (
                plan.guest_url(ctx) if ctx.hport else "")
        if ph == "linkdown":
            return "its board's link never came up"
        if ph in ("joined", "ranks"):
            return "joined, waiting for the others"
        return ph

    def show_console(self, i):
        r = self.rundir
        out = ["---- node%d: last console lines (%s/node%d.log) ----" % (i, r, i)]
        out += tail_lines(os.path.join(r, "node%d.log" % i), 25)
        err = os.path.join(r, "node%d.stderr" % i)
        if os.path.isfile(err) and os.path.getsize(err) > 0:
            out.append("---- node%d: QEMU stderr ----" % i)
            out += tail_lines(err, 10)
        sys.stderr.write("".join(l + "\n" for l in out))

    def switch_stats(self, timeout):
        """dn2-switch --stats (on the switch's host): (ok, text)."""
        ctx = self.ctx
        cmd = [ctx.switch_bin, "--stats", "127.0.0.1:%s" % ctx.sport] + plan.secret_switch_args(self.o)
        if ctx.hosts:
            cmd = plan.on_host(ctx.rsh, ctx.switch_host, cmd)
        try:
            r = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               timeout=timeout)
            return r.returncode == 0, r.stdout.decode(errors="replace").rstrip("\n")
        except (OSError, subprocess.TimeoutExpired) as e:
            return False, str(e)

    def write_ranks(self):
        """The rank table, once every node joined: checked against the switch."""
        r = self.rundir
        lids, rows = [], []
        for i in range(self.nodes):
            rec = read_text(os.path.join(r, "joins", "node%d" % i))

            def field(k):
                m = re.findall(k + r"=([0-9]*)", rec)
                return m[-1] if m else ""
            lid, link, w = field("lid"), field("link"), field("wid")
            if link != "3" or lid in ("", "0"):
                self.phase[i], self.why[i] = "failed", "reported link state %s, LID %s: the link is not up" % (
                    link or "?", lid or "?")
                return False
            lids.append(int(lid))
            rows.append("%d %d %d\n" % (i, int(lid), int(w or 0)))
        with open(os.path.join(r, "www", "ranks.tmp"), "w") as f:
            f.write("".join(rows))
        if len(set(lids)) != self.nodes:
            for i in range(self.nodes):
                self.phase[i], self.why[i] = "failed", "LIDs are not distinct: %s" % " ".join(map(str, lids))
            return False
        # The subnet manager's view: GUID i+1 must hold the LID node i reported.
        ok, stats = self.switch_stats(30)
        if ok:
            for i in range(self.nodes):
                guid = "0x%016x" % (i + 1)
                sw_lid = ""
                for row in stats.split("\n"):
                    w = row.split()
                    if len(w) >= 3 and w[1] == "active" and w[2] == guid:
                        sw_lid = w[0]
                        break
                try:
                    same = sw_lid != "" and int(sw_lid, 0) == lids[i]
                except ValueError:
                    same = False
                if not same:
                    self.phase[i] = "failed"
                    self.why[i] = "reports LID %d, but the switch has GUID %s at LID %s" % (lids[i], guid,
                                                                                           sw_lid or "none")
                    return False
        else:
            say("warning: could not ask the switch for its port table (dn2-switch --stats): %s" % stats)
        os.replace(os.path.join(r, "www", "ranks.tmp"), os.path.join(r, "www", "ranks"))
        return True

    def announce_ready(self):
        o, r, ctx = self.o, self.rundir, self.ctx
        self.ready_announced = True
        self.info_append(["ready_s=%s" % self.elapsed_f()])
        self.display_stop()
        say("%s%sall %d nodes ready%s after %s s (links up after %s s); rank table: %s/www/ranks"
            % (G, B, self.nodes, N, self.elapsed_f(), self.t_all_links or "?", r))
        for line in read_text(os.path.join(r, "www", "ranks")).split("\n"):
            if line:
                sys.stderr.write("[cluster]   %s\n" % line)
        say("dev loop: rebuild on the host into %s, then" % ctx.export_dir)
        say("  scripts/cluster.sh exec %s 'wget -q -O /tmp/dimmnet2.ko $DN2_HTTP/dimmnet2.ko && { rmmod dimmnet2 "
            "2>/dev/null; insmod /tmp/dimmnet2.ko; } && dn2-up -q'" % self.name)
        say("  scripts/cluster.sh console %s 0      (a shell on node0; Ctrl-] leaves)" % self.name)
        if self.kept:
            say("  (in a guest: wget $DN2_HTTP/<file>, with the node's credential)   scripts/cluster.sh stop %s stops "
                "the cluster" % self.name)
        else:
            say("  (in a guest: wget $DN2_HTTP/<file>, with the node's credential)   Ctrl-C here stops the cluster")
        if o.run:
            for i in range(self.nodes):
                out = "".join("node%d| %s\n" % (i, l) for l in guest_output(self.log_text(i)))
                sys.stdout.write(out)
            sys.stdout.flush()

    def monitor(self):
        """Until the run ends (or, -i and kept, until it is stopped):
        abort_status 0, 1 (a command failed), 3 (a node failed), 124."""
        o, r = self.o, self.rundir
        n = self.nodes
        abort_status = 0
        t_first_fail = None
        ranks_written = False
        first_nap = 0.3
        restored_now = False
        if self.snap:
            ranks_written, self.t_ranks = True, self.t_restored
        if self.snap and self.restored_up():
            # (a restored cluster is up already: the first round takes
            # dn2scripts.restore's word for it)
            first_nap, restored_now = 0, True
            for i in range(n):
                self.phase[i], self.lid[i] = "serving", self.snap.lids[i]
                self.t_link[i] = self.t_joined[i] = self.t_restored
        while True:
            time.sleep(first_nap)
            first_nap = 0.3
            if restored_now:
                restored_now = False
            else:
                for i in range(n):
                    self.scan(i)
            n_link = sum(1 for i in range(n) if self.t_link[i])
            n_joined = sum(1 for i in range(n) if os.path.isfile(os.path.join(r, "joins", "node%d" % i)))
            n_done = self.phase.count("done")
            n_failed = self.phase.count("failed")
            n_serving = self.phase.count("serving")
            if n_link == n and not self.t_all_links:
                self.t_all_links = self.elapsed_f()
            self.round_done()
            if n_joined == n and not ranks_written and n_failed == 0:
                ranks_written = True
                if self.write_ranks():
                    self.t_ranks = self.elapsed_f()
                else:
                    n_failed = 1
            self.render()
            self.write_state()
            if o.interactive:
                if not self.ready_announced and n_serving == n:
                    self.announce_ready()
                if n_failed > 0 and not self.ready_announced:
                    abort_status = 3
                    break
                if self.ready_announced:
                    for i in range(n):
                        if self.phase[i] == "failed" and self.shown[i] != "reported":
                            self.shown[i] = "reported"
                            say("%snode%d stopped%s: %s" % (R, i, N, self.why[i]))
                    continue
            else:
                if n_done == n:
                    break
                if n_failed > 0:
                    abort_status = 3
                    break
                # An MPI rank called PMI_Abort: the job fails; the others get --grace.
                pa = os.path.join(r, "pmi-abort")
                if t_first_fail is None and os.path.isfile(pa) and os.path.getsize(pa) > 0:
                    t_first_fail = self.elapsed()
                    self.pmi_abort_msg = (tail_lines(pa, 10**6) or [""])[0]
                    self.display_stop()
                    say("%sMPI job aborted%s: %s" % (R, N, self.pmi_abort_msg))
                # A command failed: the others get --grace seconds.
                for i in range(n):
                    if self.phase[i] == "done" and self.rc[i] != "0" and t_first_fail is None:
                        t_first_fail = self.elapsed()
                if t_first_fail is not None and self.elapsed() - t_first_fail >= int(o.grace):
                    abort_status = 1
                    break
                if self.elapsed() >= int(o.timeout_s):
                    abort_status = 124
                    break
            if not self.t_ranks and self.elapsed() >= int(o.boot_timeout):
                abort_status = 3
                for i in range(n):
                    if self.phase[i] not in ("joined", "ranks", "running", "done", "serving", "failed"):
                        self.why[i] = "not started after %s s: %s" % (o.boot_timeout, self.stuck_reason(i))
                        self.phase[i] = "failed"
                break
        self.display_stop()
        return abort_status

    # ------------------------------------------------------------ the run
    def banner(self):
        o, ctx, r = self.o, self.ctx, self.rundir
        say("%scluster %s%s: %d node%s (%s, %s MiB, %s CPU), switch %s%s" % (
            B, self.name, N, self.nodes, "" if self.nodes == 1 else "s", self.accel_name, o.mem, o.smp,
            plan.switch_at(ctx), " on host " + ctx.switch_host if ctx.switch_host else ""))
        if ctx.hosts:
            say("hosts: %s (remote shell: %s)" % (" ".join(ctx.hosts), ctx.rsh))
        self.banner_mode()
        say("logs:  %s/node<i>.log" % r)

    def do_restore(self):
        """--from: every node loaded, every board back at its LID, then all run."""
        o, ctx = self.o, self.ctx
        s = self.snap
        say("restoring snapshot %s: %d nodes, LIDs %s" % (o.from_tag, self.nodes, " ".join(s.lids)))
        sw_stats = [ctx.switch_bin, "--stats", "127.0.0.1:%s" % ctx.sport] + plan.secret_switch_args(o)
        rc = restore.run(ctx.py, self.module_env(), o.boot_timeout, sw_stats, s.lids, [p.pid for p in self.qemu],
                         self.socks(), os.path.join(self.rundir, "restore.out"))
        out = read_text(os.path.join(self.rundir, "restore.out")).rstrip("\n")
        if rc != 0:
            for i in range(self.nodes):
                self.phase[i] = "failed"
                self.why[i] = "the restore of snapshot %s failed (launcher.log says why)" % o.from_tag
            for i in range(self.nodes):
                err = tail_lines(os.path.join(self.rundir, "node%d.stderr" % i), 2)
                if err:
                    say("node%d: %s " % (i, " ".join(err)))
            raise Exit(3)
        self.t_restored = self.elapsed_f()
        say("restored: every node loaded and running, every board at its LID after %s s (%s)" % (self.t_restored, out))

    def summary(self, abort_status):
        o, r = self.o, self.rundir
        n = self.nodes
        status = 0
        fail_nodes = []
        for i in range(n):
            out = guest_output(self.log_text(i))
            text = "".join(l + "\n" for l in out)
            with open(os.path.join(r, "node%d.out" % i), "w") as f:
                f.write(text)
            if self.phase[i] == "done" or text:
                sys.stdout.write("".join("node%d| %s\n" % (i, l) for l in out))
        sys.stdout.flush()
        with open(os.path.join(r, "timings"), "w") as f:
            f.write("nodes=%d\nall_links_up_s=%s\nrank_table_s=%s\ntotal_s=%s\n" % (
                n, self.t_all_links, self.t_ranks, self.elapsed_f()))
            for i in range(n):
                f.write("node%d link_s=%s joined_s=%s done_s=%s lid=%s rc=%s\n" % (
                    i, self.t_link[i], self.t_joined[i], self.t_done[i], self.lid[i], self.rc[i]))
        sys.stderr.write("%ssummary%s (%s: %d node%s, %s, %s, %s s in all)\n" % (
            B, N, self.name, n, "" if n == 1 else "s",
            "links up after %s s" % self.t_all_links if self.t_all_links else "links never all up",
            "rank table after %s s" % self.t_ranks if self.t_ranks else "no rank table", self.elapsed_f()))
        for i in range(n):
            lid = "0x%04x" % int(self.lid[i]) if self.lid[i] else "-"
            ph = self.phase[i]
            if ph == "done":
                if self.rc[i] == "0":
                    res, self.res_state[i] = G + "ok" + N, "ok"
                else:
                    res, self.res_state[i] = "%src=%s%s" % (R, self.rc[i], N), "failed"
                    status = status or 1
                    fail_nodes.append(i)
            elif ph == "failed":
                res = "%sFAILED%s: %s" % (R, N, self.why[i])
                status = 3
                fail_nodes.append(i)
                self.res_state[i], self.res_why[i] = "failed", self.why[i]
            else:
                if abort_status == 124:
                    res = "%stimeout%s (%s)" % (R, N, self.describe(i))
                    status = 124
                    self.res_state[i], self.res_why[i] = "timeout", "timeout after %s s" % o.timeout_s
                elif abort_status == 1:
                    res = "%sstopped%s: another node's command failed (%s)" % (R, N, self.describe(i))
                    status = status or 1
                    self.res_state[i], self.res_why[i] = "stopped", "stopped: another node's command failed"
                else:
                    res = "%sstopped%s (%s)" % (R, N, self.describe(i))
                    status = status or 3
                    self.res_state[i] = "stopped"
                if not self.res_why[i]:
                    self.res_why[i] = "stopped while " + ANSI.sub("", self.describe(i))
                fail_nodes.append(i)
            sys.stderr.write("  node%-2d %-6s %s\n" % (i, lid, res))
        if abort_status == 124:
            say("%stimeout%s after %s s (--timeout)%s" % (R, N, o.timeout_s, self.timeout_detail()))
        if not self.pmi_abort_msg:
            self.pmi_abort_msg = (tail_lines(os.path.join(r, "pmi-abort"), 10**6) or [""])[0]
        if self.pmi_abort_msg:
            say("%sthe MPI job was aborted%s: %s" % (R, N, self.pmi_abort_msg))
            status = status or 1
        if status != 0:
            for i in fail_nodes:
                self.show_console(i)
            say("run directory: %s" % r)
        return status

    def run(self):
        o = self.o
        status = 0
        try:
            try:
                self.load_snapshot()
                self.ctx.snap = self.snap.dir if self.snap else ""
                self.ctx.s_lids = self.snap.lids if self.snap else []
                self.inputs()
                self.make_rundir()
                self.hosts()
                self.signals()
                self.reaper = subprocess.Popen([self.ctx.py, "-m", "dn2scripts.cluster.reaper", str(os.getpid()),
                                                os.path.join(self.rundir, "pgids")], stdin=subprocess.DEVNULL,
                                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                               start_new_session=True, env=self.module_env())
                self.t0 = time.monotonic()
                self.start_switch()
                if o.ethernet:
                    self.start_ethhub()
                self.start_services()
                with open(os.path.join(self.rundir, "info"), "w") as f:
                    f.write("".join(l + "\n" for l in plan.info_head(o, self.ctx, self.name, int(time.time()),
                                                                     self.kept, os.getpid())))
                self.start_nodes()
                if o.board_stats:
                    os.makedirs(os.path.join(self.rundir, "board-stats"), exist_ok=True)
                    self.start_group(os.path.join(self.rundir, "board-stats.out"),
                                     os.path.join(self.rundir, "board-stats.log"),
                                     ["env", "PYTHONPATH=" + self.module_env()["PYTHONPATH"], "PYTHONDONTWRITEBYTECODE=1",
                                      self.ctx.py, "-m", "dn2scripts.board_stats", HERE,
                                      os.path.join(self.rundir, "board-stats")] + self.socks())
                self.nodes_started()
                self.banner()
                self.display_tty = not o.quiet and sys.stderr.isatty()
                self.t_restored = ""
                if self.snap:
                    self.do_restore()
                abort_status = self.monitor()
                status = self.finish(abort_status)
            except Fail as e:
                sys.stdout.flush()
                sys.stderr.write("[cluster] %serror:%s %s\n" % (R, N, e))
                status = 4
            except Exit as e:
                status = e.status
        except Stop as e:
            status = e.status
        except KeyboardInterrupt:
            status = 130
        finally:
            try:
                self.cleanup(status)
            except Stop:
                pass
        return status

    def finish(self, abort_status):
        o, r = self.o, self.rundir
        # Finished guests power off by themselves: give them a moment.
        for _ in range(50):
            if not any(self.qemu[i].poll() is None and self.phase[i] == "done" for i in range(self.nodes)):
                break
            time.sleep(0.1)
        self.before_end()
        status = self.end_status(self.summary(abort_status))
        if self.interrupted:
            status = 130
        self.write_result(status)
        if not o.quiet and os.path.isfile(os.path.join(r, "result.json")):
            say("result: %s/result.json%s" % (r, ", JUnit: " + o.junit if o.junit else ""))
        return status


def main(script, args):
    o = settle(args, os.environ)
    if o.vt:
        from .vtlaunch import VtLauncher   # (vtlaunch imports this module)
        return VtLauncher(o, os.environ).run()
    return Launcher(o, os.environ).run()
