"""The launch plan: which processes the launcher starts and with which
arguments (the switch, the Ethernet hub, the job server, every node's
QEMU), what the run directory's info file and --replay record say, each a
pure function of the options (options.Options) and of what the launcher
found out before (a Context: the programs, the ports, the run directory).
The unit tests call them; launch.py runs what they return.
"""
import os
import shlex


class Context:
    """What the plan depends on besides the options."""

    def __init__(self, **kw):
        self.rundir = ""
        self.pid = 0                    # the launcher's (names sockets in $TMPDIR)
        self.tmpdir = "/tmp"
        self.py = "python3"
        self.here = ""                  # scripts/
        self.qemu_bin = self.kernel = self.switch_bin = self.firmware = self.initrd = ""
        self.mem = "256"
        self.accel_args = ["-accel", "tcg"]
        self.slice_wrap = []
        self.device_globals = ""
        self.switch_addr, self.switch_listen, self.sport = "127.0.0.1", "127.0.0.1", ""
        self.http_bind, self.my_addr, self.hport = "127.0.0.1", "10.0.2.2", ""
        self.eth_ports, self.eport = [], ""
        self.jobid = ""
        self.lids = []                  # virtual time: node i's LID, known before boot
        self.snap = ""                  # --from or a --replay of a snapshot: its directory
        self.s_lids = []                # the snapshot's LIDs
        self.hosts, self.rsh, self.switch_host = [], "", ""
        self.export_dir = ""
        self.__dict__.update(kw)


def qemu_path(p):
    """A path inside a QEMU option value (a comma is doubled)."""
    return p.replace(",", ",,")


def accel(environ, vt, vt_shift="0", vt_insn_ps="", kvm_usable=False):
    """(QEMU's accelerator arguments, their name) as lib.sh's dn2_accel and
    dn2_vt_accel; raises ValueError with the reason."""
    mode = environ.get("DN2_ACCEL", "") or "auto"
    if mode not in ("auto", "kvm", "tcg"):
        raise ValueError("DN2_ACCEL must be auto, kvm or tcg, not '%s'" % mode)
    if vt:
        if mode == "kvm":
            raise ValueError("virtual time counts instructions under TCG (-icount): not with DN2_ACCEL=kvm")
        rate = "shift=%s" % vt_shift
        if vt_insn_ps:
            if not vt_insn_ps.isdigit() or vt_insn_ps.startswith("0") or len(vt_insn_ps) > 7 or int(vt_insn_ps) > 1024000:
                raise ValueError("DN2_VT_INSN_PS (--vt-insn-ps): picoseconds per instruction, 1..1024000, not '%s'"
                                 % vt_insn_ps)
            rate = "insn-ps=%s" % vt_insn_ps
        base = environ.get("DN2_VT_RTC_BASE", "2026-01-01T00:00:00")
        return (["-accel", "tcg", "-icount", rate + ",sleep=off,align=off", "-rtc", "clock=vm,base=" + base,
                 "-seed", "1"], "TCG, -icount " + rate)
    if mode == "kvm" or (mode == "auto" and kvm_usable):
        return ["-accel", "kvm", "-accel", "tcg"], "KVM"
    return ["-accel", "tcg"], "TCG"


def pause_yield_args(accel_args):
    """-accel tcg becomes -accel tcg,pause-yield=on."""
    out = list(accel_args)
    for k in range(len(out) - 1):
        if out[k] == "-accel" and out[k + 1] == "tcg":
            out[k + 1] = "tcg,pause-yield=on"
    return out


def switch_at(ctx):
    """The switch's address as the boards see it."""
    a = ctx.switch_addr
    return ("[%s]:%s" if ":" in a else "%s:%s") % (a, ctx.sport)


def on_host(rsh, host, cmd):
    """CMD run on HOST through the remote shell RSH: ssh and rsh join their
    arguments into one line for the remote shell, so they get the command
    quoted; "ip netns exec", srun and the like exec their arguments."""
    words = rsh.split()
    if os.path.basename(words[0]) in ("ssh", "rsh"):
        return words + [host, "".join(shlex.quote(w) + " " for w in cmd)]
    return words + [host] + list(cmd)


def on_host_pid(rsh, host, pidfile, cmd):
    """CMD run on HOST, which writes its process id (valid there) into
    PIDFILE for the teardown."""
    return on_host(rsh, host, ["/bin/sh", "-c", 'echo $$ > "$0"; exec "$@"', pidfile] + list(cmd))


def secret_switch_args(o):
    return ["--secret-file", o.secret_file] if o.secret_file else []


def vt_shm_path(ctx):
    """--vt-sync shm: the sync domain's file, which the switch creates."""
    return os.path.join(ctx.rundir, "vt.shm")


def switch_cmd(o, ctx):
    """dn2-switch's command line (before a remote shell wraps it)."""
    vt_sw = []
    if o.vt and o.vt_sync:
        vt_sw = ["--virtual-time", "--vt-boards", o.nodes, "--vt-lookahead", o.vt_lookahead]
        if o.vt_quantum:
            vt_sw += ["--vt-quantum", o.vt_quantum]
        if o.vt_transport == "shm":
            vt_sw += ["--vt-sync", "shm", "--vt-shm", vt_shm_path(ctx)]
    return (ctx.slice_wrap + [ctx.switch_bin, "--listen", "%s:%s" % (ctx.switch_listen, o.switch_port),
                              "--ready-file", os.path.join(ctx.rundir, "switch.port")]
            + secret_switch_args(o) + vt_sw + o.switch_opts.split())


def ethhub_cmd(o, ctx, hub_bin):
    """--ethernet: the hub, with every node's end as a member."""
    members = []
    for p in ctx.eth_ports:
        members += ["--member", "127.0.0.1:%s" % p]
    return ctx.slice_wrap + [hub_bin, "--listen", "127.0.0.1:0", "--ready-file",
                             os.path.join(ctx.rundir, "ethhub.port")] + members


def server_cmd(o, ctx):
    """The job and file server (scripts/pmi-server.py; none in virtual time)."""
    r = ctx.rundir
    return [ctx.py, "-u", os.path.join(ctx.here, "pmi-server.py"), "--rundir", r, "--www", os.path.join(r, "www"),
            "--export", ctx.export_dir, "--serve", o.serve_dir, "--nodes", o.nodes, "--jobid", ctx.jobid,
            "--secret-file", os.path.join(r, "secret"), "--token-dir", os.path.join(r, "tokens"),
            "--bind", ctx.http_bind, "--port", o.http_port, "--ready", os.path.join(r, "http.port"),
            "--result-max", str(128 << 20)]


def guest_url(ctx):
    """The job server as the guests reach it: this host as 10.0.2.2 (QEMU's
    user network), or from other hosts through its address."""
    return "http://%s:%s" % (ctx.my_addr, ctx.hport)


def node_command(o, i):
    """Node I's command: {node} and {rank} are I."""
    return o.run.replace("{node}", str(i)).replace("{rank}", str(i))


def socket_path(ctx, i, what):
    """RUNDIR/nodeI.WHAT, or in $TMPDIR when that is too long for a unix
    socket (at most 107 bytes)."""
    p = os.path.join(ctx.rundir, "node%d.%s" % (i, what))
    return p if len(p) < 100 else "%s/dn2-%d-node%d.%s" % (ctx.tmpdir, ctx.pid, i, what)


def wants_qmp(o):
    """Every node gets a QMP socket: for --board-stats, and in a kept or -i
    cluster (snapshots stop and save them), --snapshot-at and a run from a
    snapshot."""
    return bool(o.board_stats or o.interactive or o.snap_at or o.vsnap)


# Every guest's kernel arguments.  cryptomgr.notests: the kernel's crypto
# self-tests are about 0.9e9 instructions, half of the guest kernel's boot
# (1.9 -> 1.0 virtual seconds of work before the link under -icount
# shift=0), and nothing of the guests uses the kernel's crypto.
# scripts/run-guest.sh gives the same.
GUEST_ARGS = "console=ttyS0 panic=-1 quiet cryptomgr.notests"


def node_append(o, ctx, i):
    """Node I's kernel command line."""
    a = "%s dn2.node=%d dn2.nodes=%s dn2.wid=%s" % (GUEST_ARGS, i, o.nodes, o.wid)
    if o.vt:
        # The guest waits for its link in virtual seconds, a fixed 300: the
        # host's boot limit (-b) would put a host-dependent number into the
        # guest, and other bytes mean other instructions.
        a += " dn2.linkwait=300 dn2.ranks=fw_cfg:opt/dn2/ranks dn2.run=@fw_cfg:opt/dn2/run"
    else:
        a += " dn2.job=%s dn2.jobid=%s dn2.linkwait=%s dn2.barrier=%d" % (
            guest_url(ctx), ctx.jobid, o.boot_timeout, int(o.boot_timeout) + 60)
        if o.run:
            a += " dn2.run=@cmd/node%d.sh" % i
    if o.interactive:
        a += " dn2.mode=serve dn2.shell=ttyS1"
    if o.ethernet:
        a += " dn2.ether=192.168.77.%d/24" % (10 + i)
        if o.ether_mtu:
            a += " dn2.ethermtu=%s" % o.ether_mtu
    if o.append_extra:
        a += " " + o.append_extra
    return a


def board(o, ctx, i):
    """Node I's -device dimmnet2,... value."""
    d = "dimmnet2,switch=%s,guid=%d" % (switch_at(ctx), i + 1)
    if o.vt:
        # The rank table is known before boot: the board asks the switch for
        # the LID the switch would give the i-th board to join.
        d += ",lid=%s" % ctx.lids[i]
        if o.vt_sync:
            d += ",vtime=on,vt-latency-ns=%s,vt-start-ns=%d,pcap=%s" % (
                o.vt_lookahead, o.vt_start_ns, qemu_path(os.path.join(ctx.rundir, "node%d.pcap" % i)))
            if o.vt_transport == "shm":
                d += ",vt-sync=shm,vt-shm=%s" % qemu_path(vt_shm_path(ctx))
    elif ctx.snap:
        d += ",lid=%s" % ctx.s_lids[i]       # the restored board asks for its LID
    if o.secret_file:
        d += ",secret=dn2key"
    if o.device_opts:
        d += "," + o.device_opts
    if ctx.device_globals:
        d += "," + ctx.device_globals
    return d


def node_qemu(o, ctx, i):
    """Node I's QEMU command line (before a remote shell wraps it)."""
    r = ctx.rundir
    if ctx.snap:
        # --from: the node loads its snapshot and waits (-S) for the others;
        # its console goes on after the snapshot's.
        serial1 = ["-chardev", "file,id=dn2con,path=%s,append=on" % qemu_path(os.path.join(r, "node%d.log" % i)),
                   "-serial", "chardev:dn2con"]
        snap_args = ["-incoming", "file:%s" % qemu_path(os.path.join(ctx.snap, "node%d.mig" % i)), "-S"]
    else:
        serial1, snap_args = ["-serial", "file:%s" % os.path.join(r, "node%d.log" % i)], []
    serial2 = ["-serial", "unix:%s,server=on,wait=off" % socket_path(ctx, i, "sock")] if o.interactive else []
    secret_obj = ["-object", "secret,id=dn2key,file=%s" % o.secret_file] if o.secret_file else []
    if o.vt:
        # (no user network, no job server in virtual time: the command and
        # the rank table as fw_cfg files)
        net_args = []
        vt_args = ["-fw_cfg", "name=opt/dn2/ranks,file=%s" % qemu_path(os.path.join(r, "input", "ranks")),
                   "-fw_cfg", "name=opt/dn2/run,file=%s" % qemu_path(os.path.join(r, "input", "node%d.sh" % i))]
        if o.gdb_node != "" and o.gdb_node == str(i):
            vt_args += ["-gdb", "tcp:127.0.0.1:%s" % o.gdb_port, "-S"]
        if o.snap_at:
            vt_args.append("-S")         # the cut is set over QMP before the guest runs
    else:
        # The node's token reaches the guest as a fw_cfg file: only its path
        # is on QEMU's command line.
        net_args = ["-netdev", "user,id=n0", "-device", "virtio-net-pci,netdev=n0,romfile=",
                    "-fw_cfg", "name=opt/dn2/token,file=%s" % qemu_path(os.path.join(r, "tokens", "node%d" % i))]
        vt_args = []
    eth_args = []
    if o.ethernet:
        eth_args = ["-netdev", "dgram,id=n1,local.type=inet,local.host=127.0.0.1,local.port=%s,remote.type=inet,"
                    "remote.host=127.0.0.1,remote.port=%s" % (ctx.eth_ports[i], ctx.eport),
                    "-device", "virtio-net-pci,netdev=n1,mac=52:54:00:77:00:%02x,romfile=" % i]
    qmp_args = ["-qmp", "unix:%s,server=on,wait=off" % socket_path(ctx, i, "qmp")] if wants_qmp(o) else []
    cmd = (ctx.slice_wrap + [ctx.qemu_bin] + ctx.accel_args
           + ["-M", "q35", "-m", str(ctx.mem), "-smp", o.smp, "-nodefaults", "-display", "none", "-no-reboot",
              "-name", "node%d,debug-threads=on" % i, "-L", ctx.firmware, "-kernel", ctx.kernel,
              "-initrd", ctx.initrd, "-append", node_append(o, ctx, i)]
           + serial1 + serial2 + snap_args + secret_obj + ["-device", board(o, ctx, i)]
           + net_args + vt_args + eth_args + qmp_args + list(o.extra))
    # --node-qemu I 'ARGS': node I's own QEMU arguments (word-split)
    cmd += o.node_qemu.get(i, "").split()
    return cmd


def node_host(ctx, i):
    """The host of node I (several hosts: i mod count), or ""."""
    return ctx.hosts[i % len(ctx.hosts)] if ctx.hosts else ""


def node_launch(o, ctx, i):
    """What the launcher starts for node I: QEMU here, or through the remote
    shell on its host."""
    cmd = node_qemu(o, ctx, i)
    h = node_host(ctx, i)
    if h:
        return on_host_pid(ctx.rsh, h, os.path.join(ctx.rundir, "node%d.pid" % i), cmd)
    return cmd


def node_info(o, ctx, i):
    """The info lines of node I known before it starts."""
    out = []
    if o.interactive:
        out.append("node%d_sock=%s" % (i, socket_path(ctx, i, "sock")))
    if wants_qmp(o):
        out.append("node%d_qmp=%s" % (i, socket_path(ctx, i, "qmp")))
    if ctx.hosts:
        out.append("node%d_host=%s" % (i, node_host(ctx, i)))
    return out


def sh_q(word):
    """A word for RUNDIR/info (sourced by a shell; printf %q's job)."""
    return shlex.quote(word)


def info_head(o, ctx, name, started, kept, pid):
    """RUNDIR/info's first lines, once the servers run."""
    out = ["launcher_pid=%d" % pid, "name=%s" % sh_q(name), "started=%d" % started, "mem=%s" % ctx.mem,
           "switch_bin=%s" % sh_q(ctx.switch_bin)]
    if kept:
        out.append("kept=1")
    if o.secret_file:
        out.append("secret_file=%s" % sh_q(o.secret_file))
    if o.board_stats:
        out.append("board_stats=1")
    out += ["nodes=%s" % o.nodes, "interactive=%d" % (1 if o.interactive else 0), "jobid=%s" % ctx.jobid,
            "switch=%s" % switch_at(ctx)]
    if o.vt:
        out.append("virtual_time=1")
    if ctx.hport:
        out += ["http=http://%s:%s" % (ctx.http_bind, ctx.hport), "guest_http=%s" % guest_url(ctx)]
    if o.ethernet:
        out.append("ethhub=127.0.0.1:%s" % ctx.eport)
    return out


def vt_record(o, ctx, run_file):
    """--virtual-time: the options that run it again (RUNDIR/replay/options:
    --replay RUNDIR reads them), the command as the file RUN_FILE."""
    r = ["-n", o.nodes, "-t", o.timeout_s, "-b", o.boot_timeout, "-g", o.grace, "-m", str(ctx.mem), "--wid", o.wid,
         "--slice", o.slice_us, "--pause-yield", o.pause_yield, "--vt-shift", o.vt_shift,
         "--vt-lookahead", o.vt_lookahead, "--vt-start", o.vt_start]
    r.append("--virtual-time" if o.vt_sync else "--no-vt-sync")
    r += ["--vt-sync", o.vt_transport]
    for flag, v in (("--vt-quantum", o.vt_quantum), ("--vt-insn-ps", o.vt_insn_ps),
                    ("--switch-opts", o.switch_opts), ("--device-opts", o.device_opts), ("-a", o.append_extra),
                    ("--secret-file", o.secret_file), ("--packages", o.packages),
                    ("--guest-release", o.guest_release)):
        if v:
            r += [flag, v]
    for flag, on in (("--mpi", o.mpi_image), ("--board-stats", o.board_stats)):
        if on:
            r.append(flag)
    for flag, v in (("--hosts", o.hosts_arg), ("--rsh", o.rsh), ("--switch-host", o.switch_host),
                    ("--switch-addr", o.switch_addr), ("--addr", o.my_addr)):
        if v:
            r += [flag, v]
    if o.no_slurm:
        r.append("--no-slurm")
    r += ["-f", run_file]
    if o.extra:
        r += ["--"] + list(o.extra)
    return r


def vt_ranks(o, lids):
    """The rank table of a virtual-time run ("rank lid wid" lines)."""
    return "".join("%d %d %s\n" % (i, lids[i], o.wid) for i in range(int(o.nodes)))


def shell_line(cmd):
    """A command line as RUNDIR/nodeI.cmd and switch.cmd hold it (printf '%q ')."""
    return "".join(shlex.quote(w) + " " for w in cmd) + "\n"
