"""cluster.sh's launcher (dn2scripts.cluster.options, .plan) without
booting: every option in both spellings, the usage errors (exit 2, one
line), and the plan: the command lines of the switch, the job server and
every node's QEMU for a run in virtual time, over several hosts, and from
a snapshot."""
import os

import pytest

from dn2scripts.cluster import cli, launch, options, plan, rundir

SCRIPT = os.path.join(rundir.HERE, "cluster.sh")


def checked(args, environ=None, **kw):
    o = options.parse(args, environ or {})
    return options.check(o, environ or {}, snap_dir="/nonexistent-snapshots", **kw)


def usage(args, environ=None):
    with pytest.raises(cli.Usage) as e:
        checked(args, environ)
    return str(e.value)


# (option, value, attribute, expected) for every option that takes a value
VALUED = [
    ("--nodes", "4", "nodes", "4"), ("--run", "echo x", "run", "echo x"),
    ("--timeout", "60", "timeout_s", "60"), ("--boot-timeout", "70", "boot_timeout", "70"),
    ("--grace", "5", "grace", "5"), ("--mem", "512", "mem", "512"), ("--smp", "2", "smp", "2"),
    ("--wid", "1", "wid", "1"), ("--name", "n", "name", "n"), ("--switch-port", "7000", "switch_port", "7000"),
    ("--http-port", "7001", "http_port", "7001"), ("--switch-opts", "--drop=0.01", "switch_opts", "--drop=0.01"),
    ("--device-opts", "rx-thread=off", "device_opts", "rx-thread=off"), ("--packages", "hpcc", "packages", " hpcc"),
    ("--slice", "200", "slice_us", "200"), ("--pause-yield", "off", "pause_yield", "off"),
    ("--ethernet-mtu", "9000", "ether_mtu", "9000"), ("--append", "loglevel=7", "append_extra", "loglevel=7"),
    ("--hosts", "a,b", "hosts_arg", "a,b"), ("--rsh", "ip netns exec", "rsh", "ip netns exec"),
    ("--switch-host", "a", "switch_host", "a"), ("--switch-addr", "10.0.0.1", "switch_addr", "10.0.0.1"),
    ("--addr", "10.0.0.2", "my_addr", "10.0.0.2"), ("--vt-shift", "2", "vt_shift", "2"),
    ("--vt-insn-ps", "500", "vt_insn_ps", "500"), ("--vt-lookahead", "2000", "vt_lookahead", "2000"),
    ("--vt-quantum", "100", "vt_quantum", "100"), ("--vt-start", "2.5", "vt_start", "2.5"),
    ("--from", "t", "from_tag", "t"), ("--junit", "x.xml", "junit", "x.xml"), ("--file", "f.sh", "run_file", "f.sh"),
    ("--secret-file", "s", "secret_file", "s"), ("--serve-dir", "d", "serve_dir", "d"),
]
SHORT = {"--nodes": "-n", "--run": "-r", "--timeout": "-t", "--boot-timeout": "-b", "--grace": "-g", "--mem": "-m",
         "--append": "-a", "--file": "-f"}
FLAGS = [("--interactive", "interactive"), ("-i", "interactive"), ("--mpi", "mpi_image"), ("--ethernet", "ethernet"),
         ("--board-stats", "board_stats"), ("--quiet", "quiet"), ("-q", "quiet"), ("--no-slurm", "no_slurm"),
         ("--virtual-time", "vt")]


@pytest.mark.parametrize("opt,value,attr,want", VALUED)
def test_every_option_both_spellings(opt, value, attr, want):
    spellings = [[opt, value], [opt + "=" + value]] + ([[SHORT[opt], value]] if opt in SHORT else [])
    for words in spellings:
        o = options.parse(words, {})
        assert getattr(o, attr) == want, words


@pytest.mark.parametrize("opt,attr", FLAGS)
def test_every_flag(opt, attr):
    assert getattr(options.parse([opt], {}), attr) is True


def test_repeatable_and_multiword_options():
    o = options.parse(["--packages", "a", "--packages=b c", "--node-qemu", "1", "-smbios x", "--node-qemu", "1", "-S",
                       "--snapshot-at", "4.5", "tag", "--no-vt-sync", "--", "-cpu", "max"], {})
    assert o.packages == " a b c" and o.node_qemu == {1: " -smbios x -S"}
    assert (o.snap_at, o.snap_at_tag, o.vt, o.vt_sync, o.extra) == ("4.5", "tag", True, False, ["-cpu", "max"])
    # a value that itself looks like an option is taken as it is
    assert options.parse(["--switch-opts", "--pcap=x"], {}).switch_opts == "--pcap=x"
    assert options.parse(["-r", ""], {}).run == ""


@pytest.mark.parametrize("args,needle", [
    (["--bogus"], "unknown argument: --bogus"),
    (["-n"], "-n needs a value"),
    (["--nodes="], "--nodes needs a value"),
    (["-n", "x", "-r", "true"], "--nodes wants a whole number, not 'x'"),
    (["-n", "0", "-r", "true"], "--nodes must be 1..64"),
    (["-n", "65", "-r", "true"], "--nodes must be 1..64"),
    (["-t", "1.5", "-r", "true"], "--timeout wants a whole number"),
    (["--switch-port", "70000", "-r", "true"], "ports are 0..65535"),
    (["-m", "64", "-r", "true"], "--mem: the guest wants at least 128 MiB"),
    (["--node-qemu", "2", "-S", "-r", "true"], "--node-qemu 2: the cluster has nodes 0..1"),
    (["--node-qemu", "1"], "--node-qemu needs a node and QEMU arguments"),
    (["--pause-yield=maybe", "-r", "true"], "--pause-yield: on or off, not 'maybe'"),
    (["--slice", "50", "-r", "true"], "--slice: 100..100000 microseconds"),
    (["-r", "a", "-f", "/etc/hostname"], "give -r or -f, not both"),
    (["-f", "/nonexistent/x"], "--file: /nonexistent/x does not exist"),
    ([], "nothing to run: give -r CMD, -f SCRIPT or -i"),
    (["--gdb", "0"], "--gdb goes with --replay RUNDIR"),
    (["--virtual-time", "-i"], "--virtual-time runs one command (-r or -f), not -i"),
    (["--virtual-time", "-r", "x", "--smp", "2"], "--virtual-time runs one vCPU per node (--smp 2)"),
    (["--virtual-time", "-r", "x", "--ethernet"], "--virtual-time: no --ethernet"),
    (["--virtual-time", "-r", "x", "--serve-dir", "/"], "--virtual-time: no --serve-dir"),
    (["--virtual-time", "-r", "x", "--vt-shift", "11"], "--vt-shift: 0..10"),
    (["--virtual-time", "-r", "x", "--vt-start", "x"], "--vt-start: seconds of virtual time"),
    (["--virtual-time", "-r", "x", "--vt-lookahead", "0"], "--vt-lookahead: 1..4294967295 ns"),
    (["--virtual-time", "-r", "x", "--vt-insn-ps", "0"], "--vt-insn-ps: 1..1024000"),
    (["--virtual-time", "-r", "x", "--vt-insn-ps", "5", "--vt-shift", "2"], "--vt-shift and --vt-insn-ps exclude"),
    (["-r", "x", "--snapshot-at", "5", "t"], "--snapshot-at goes with --virtual-time"),
    (["--virtual-time", "-r", "x", "--snapshot-at", "2", "t"], "--snapshot-at 2: after the lock-step begins"),
    (["--virtual-time", "-r", "x", "--snapshot-at", "5", ".t"], "--snapshot-at: '.t' cannot name a snapshot"),
    (["--snapshot-at", "5"], "--snapshot-at needs a virtual time and a tag"),
    (["-r", "x", "--switch-host", "a"], "--switch-host needs --hosts"),
    (["-r", "x", "--rsh", "ssh"], "--rsh needs --hosts"),
    (["-r", "x", "--name", "a/b"], "--name: a plain name, not 'a/b'"),
    (["-r", "x", "--from", "t"], "--from: a snapshot is restored as a kept cluster"),
    (["-r", "x", "--junit", "/nonexistent/r.xml"], "--junit: the directory of /nonexistent/r.xml does not exist"),
    (["-r", "x", "--secret-file", "/nonexistent/s"], "--secret-file: cannot read /nonexistent/s"),
])
def test_usage_errors(args, needle):
    assert needle in usage(args)


def test_usage_errors_exit_2_with_one_line(capsys):
    rc = cli.run_main(SCRIPT, launch.main, ["-n", "0", "-r", "true"])
    err = capsys.readouterr().err
    assert rc == 2 and err == "cluster.sh: --nodes must be 1..64 (see --help)\n"
    rc = cli.run_main(SCRIPT, launch.main, ["--help"])
    assert rc == 0 and capsys.readouterr().out.startswith("Boots a cluster of Linux guests")


def test_slurm_allows_rsh():
    o = checked(["-r", "x", "--rsh", "srun -w"], {"SLURM_JOB_NODELIST": "a[1-2]"})
    assert o.rsh == "srun -w"


def test_replay_takes_only_a_few_options():
    assert options.replay_split(["-n", "2"]) is None
    assert options.replay_split(["--replay=/r", "-q", "--name", "n", "-t", "9", "--switch-opts=--drop=0.1"]) == \
        ("/r", {"-q": True, "--name": "n", "-t": "9", "--switch-opts": "--drop=0.1"})
    with pytest.raises(cli.Usage, match="'-n' cannot be added"):
        options.replay_split(["--replay", "/r", "-n", "3"])
    o = options.parse(["-n", "2", "-t", "900", "--virtual-time", "-r", "x"], {})
    o.replay_dir = "/runs/a"
    options.check(o, {}, replay_adds={"-t": "30", "-q": True})
    assert (o.timeout_s, o.quiet, o.name) == ("30", True, "a-replay")


def test_kept_options_leave_out_what_names_the_run():
    assert options.kept_options(["-n", "2", "-i", "--name", "x", "--junit=j", "-q", "--board-stats", "--mem", "512",
                                 "--http-port", "80", "--", "-q"]) == ["-n", "2", "--mem", "512", "--", "-q"]


def ctx4(**kw):
    c = dict(rundir="/b/cluster/vt4", pid=77, py="/usr/bin/python3", here="/s", qemu_bin="/q/qemu", kernel="/k/vmlinuz",
             switch_bin="/b/dn2-switch", firmware="/c/firmware", initrd="/b/cluster/vt4/initramfs.cpio.lz4", mem="256",
             sport="5000", jobid="vt4-1", lids=[1, 2, 3, 4], export_dir="/b/export")
    c.update(kw)
    return plan.Context(**c)


def test_four_nodes_in_virtual_time():
    o = checked(["-n", "4", "--virtual-time", "-r", "echo {node}/{rank}", "--slice", "0", "--vt-start", "2.5",
                 "--vt-quantum", "100", "-b", "120"])
    accel, name = plan.accel({}, True, o.vt_shift, o.vt_insn_ps)
    assert name == "TCG, -icount shift=0"
    c = ctx4(accel_args=accel)
    assert plan.switch_cmd(o, c) == ["/b/dn2-switch", "--listen", "127.0.0.1:0", "--ready-file",
                                     "/b/cluster/vt4/switch.port", "--virtual-time", "--vt-boards", "4",
                                     "--vt-lookahead", "1000", "--vt-quantum", "100",
                                     "--vt-sync", "shm", "--vt-shm", "/b/cluster/vt4/vt.shm"]
    assert plan.node_command(o, 3) == "echo 3/3"
    assert plan.node_qemu(o, c, 2) == [
        "/q/qemu", "-accel", "tcg", "-icount", "shift=0,sleep=off,align=off", "-rtc",
        "clock=vm,base=2026-01-01T00:00:00", "-seed", "1",
        "-M", "q35", "-m", "256", "-smp", "1", "-nodefaults", "-display", "none", "-no-reboot",
        "-name", "node2,debug-threads=on", "-L", "/c/firmware", "-kernel", "/k/vmlinuz",
        "-initrd", "/b/cluster/vt4/initramfs.cpio.lz4",
        "-append", "console=ttyS0 panic=-1 quiet cryptomgr.notests dn2.node=2 dn2.nodes=4 dn2.wid=0 dn2.linkwait=300 "
                   "dn2.ranks=fw_cfg:opt/dn2/ranks dn2.run=@fw_cfg:opt/dn2/run",
        "-serial", "file:/b/cluster/vt4/node2.log",
        "-device", "dimmnet2,switch=127.0.0.1:5000,guid=3,lid=3,vtime=on,vt-latency-ns=1000,vt-start-ns=2500000000,"
                   "pcap=/b/cluster/vt4/node2.pcap,vt-sync=shm,vt-shm=/b/cluster/vt4/vt.shm",
        "-fw_cfg", "name=opt/dn2/ranks,file=/b/cluster/vt4/input/ranks",
        "-fw_cfg", "name=opt/dn2/run,file=/b/cluster/vt4/input/node2.sh"]
    assert plan.vt_ranks(o, c.lids) == "0 1 0\n1 2 0\n2 3 0\n3 4 0\n"
    rec = plan.vt_record(o, c, "/b/cluster/vt4/replay/run.sh")
    assert rec == ["-n", "4", "-t", "900", "-b", "120", "-g", "30", "-m", "256", "--wid", "0", "--slice", "0",
                   "--pause-yield", "off", "--vt-shift", "0", "--vt-lookahead", "1000", "--vt-start", "2.5",
                   "--virtual-time", "--vt-sync", "shm", "--vt-quantum", "100", "-f",
                   "/b/cluster/vt4/replay/run.sh"]
    # the record parses back to the same run
    again = checked(rec[:-2] + ["-r", "x"])
    assert (again.nodes, again.vt, again.vt_sync, again.vt_start_ns, again.vt_quantum) == ("4", True, True,
                                                                                          2500000000, "100")
    info = plan.info_head(o, c, "vt4", 1000, False, 77)
    assert "virtual_time=1" in info and not any(l.startswith("http=") for l in info)


def test_virtual_time_options_reach_qemu_and_the_switch():
    o = checked(["-n", "2", "--no-vt-sync", "-r", "x", "--vt-insn-ps", "250"])
    accel, _ = plan.accel({}, True, o.vt_shift, o.vt_insn_ps)
    assert "insn-ps=250,sleep=off,align=off" in accel
    c = ctx4(accel_args=accel, lids=[1, 2])
    assert "--virtual-time" not in plan.switch_cmd(o, c)
    dev = plan.board(o, c, 1)
    assert dev == "dimmnet2,switch=127.0.0.1:5000,guid=2,lid=2"
    o = checked(["-n", "2", "--virtual-time", "-r", "x", "--snapshot-at", "4", "t"])
    assert plan.node_qemu(o, ctx4(lids=[1, 2]), 0)[-3:] == ["-S", "-qmp", "unix:/b/cluster/vt4/node0.qmp,server=on,wait=off"]
    with pytest.raises(ValueError, match="not with DN2_ACCEL=kvm"):
        plan.accel({"DN2_ACCEL": "kvm"}, True)


def test_a_one_shot_run_and_a_kept_cluster():
    o = checked(["-n", "2", "-r", "hostname", "--secret-file", SCRIPT, "--device-opts", "fifo-depth=16",
                 "--ethernet", "--ethernet-mtu", "9000", "--node-qemu", "1", "-smbios type=1,serial=s", "-i"])
    c = ctx4(hport="8080", eth_ports=["6001", "6002"], eport="6000", device_globals="strict=on",
             slice_wrap=["/usr/bin/python3", "/s/sched-slice.py", "100", "--"])
    cmd = plan.node_qemu(o, c, 1)
    assert cmd[:5] == ["/usr/bin/python3", "/s/sched-slice.py", "100", "--", "/q/qemu"]
    a = cmd[cmd.index("-append") + 1]
    assert a == ("console=ttyS0 panic=-1 quiet cryptomgr.notests dn2.node=1 dn2.nodes=2 dn2.wid=0 dn2.job=http://10.0.2.2:8080 "
                 "dn2.jobid=vt4-1 dn2.linkwait=300 dn2.barrier=360 dn2.run=@cmd/node1.sh dn2.mode=serve "
                 "dn2.shell=ttyS1 dn2.ether=192.168.77.11/24 dn2.ethermtu=9000")
    assert "dimmnet2,switch=127.0.0.1:5000,guid=2,secret=dn2key,fifo-depth=16,strict=on" in cmd
    assert ["-object", "secret,id=dn2key,file=" + os.path.abspath(SCRIPT)] == cmd[cmd.index("-object"):cmd.index("-object") + 2]
    assert "name=opt/dn2/token,file=/b/cluster/vt4/tokens/node1" in cmd
    assert "dgram,id=n1,local.type=inet,local.host=127.0.0.1,local.port=6002,remote.type=inet,remote.host=127.0.0.1,"\
        "remote.port=6000" in cmd
    assert cmd[-2:] == ["-smbios", "type=1,serial=s"]
    assert plan.node_info(o, c, 1) == ["node1_sock=/b/cluster/vt4/node1.sock", "node1_qmp=/b/cluster/vt4/node1.qmp"]
    srv = plan.server_cmd(o, c)
    assert srv[:3] == ["/usr/bin/python3", "-u", "/s/pmi-server.py"] and srv[srv.index("--nodes") + 1] == "2"
    assert "--secret-file" in plan.switch_cmd(o, c)


def test_long_socket_paths_go_to_tmpdir():
    o = checked(["-i"])
    c = ctx4(rundir="/" + "x" * 95, tmpdir="/tmp")
    assert plan.node_info(o, c, 0)[0] == "node0_sock=/tmp/dn2-77-node0.sock"


def test_multihost():
    o = checked(["-n", "3", "-r", "x", "--hosts", "h1,h2", "--rsh", "ip netns exec"])
    c = ctx4(hosts=["h1", "h2"], rsh="ip netns exec", switch_host="h1", switch_addr="10.1.0.1",
             switch_listen="0.0.0.0", my_addr="127.0.0.9", http_bind="127.0.0.9", hport="8080")
    assert [plan.node_host(c, i) for i in range(3)] == ["h1", "h2", "h1"]
    cmd = plan.node_launch(o, c, 1)
    assert cmd[:6] == ["ip", "netns", "exec", "h2", "/bin/sh", "-c"]
    assert cmd[7] == "/b/cluster/vt4/node1.pid" and cmd[8] == "/q/qemu"
    assert "dn2.job=http://127.0.0.9:8080" in cmd[cmd.index("-append") + 1]
    assert "dimmnet2,switch=10.1.0.1:5000,guid=2" in cmd
    assert plan.switch_cmd(o, c)[1:3] == ["--listen", "0.0.0.0:0"]
    assert plan.node_info(o, c, 2) == ["node2_host=h1"]
    ssh = plan.on_host("ssh -o BatchMode=yes", "h2", ["echo", "a b"])
    assert ssh == ["ssh", "-o", "BatchMode=yes", "h2", "echo 'a b' "]
    c.switch_addr = "fd00::1"
    assert plan.switch_at(c) == "[fd00::1]:5000"


def test_restore_from_a_snapshot():
    o = checked(["-n", "2", "-i", "--from", "base"])
    c = ctx4(snap="/b/snapshots/base", s_lids=["4097", "2"], hport="8080", lids=[])
    cmd = plan.node_qemu(o, c, 0)
    assert cmd[cmd.index("-chardev") + 1] == "file,id=dn2con,path=/b/cluster/vt4/node0.log,append=on"
    assert cmd[cmd.index("-incoming"):cmd.index("-incoming") + 3] == ["-incoming", "file:/b/snapshots/base/node0.mig", "-S"]
    assert "dimmnet2,switch=127.0.0.1:5000,guid=1,lid=4097" in cmd
    assert "-qmp" in cmd
    # a comma in a path is doubled inside QEMU's option values
    c.snap = "/b/snap,x"
    assert "file:/b/snap,,x/node1.mig" in plan.node_qemu(o, c, 1)


def test_console_reading():
    c = launch.Console("x\nDN2-NET up\nDN2-LINK up lid=4097 y\nDN2-JOINED\nDN2-GUEST-BEGIN\nhi\nDN2-GUEST-END rc=3\n")
    assert (c.net, c.link, c.lid, c.joined, c.begin, c.end) == (True, "up", "4097", True, True, "3")
    assert launch.guest_output("a\nDN2-GUEST-BEGIN\nhi\nthere\nDN2-GUEST-END rc=0\n") == ["hi", "there"]
    assert launch.guest_output("DN2-GUEST-BEGIN\nhalf") == ["half"]
    assert launch.Console("DN2-GUEST-END rc=1\n").end == ""     # (no BEGIN before it)


class FakeQemu:
    pid, returncode = 4242, 0

    def poll(self):
        return 0


def test_a_guest_that_ends_between_two_reads_has_its_start_time(monkeypatch):
    """The guest printed its whole command and powered off between the
    console read and the look at its QEMU: the second read finds it done,
    with the time it began (result.json's duration)."""
    o = checked(["-n", "1", "-r", "true"])
    la = launch.Launcher(o, {})
    la.qemu = [FakeQemu()]
    reads = iter(["DN2-NET up\n", "DN2-NET up\nDN2-GUEST-BEGIN\nDN2-GUEST-END rc=0\n"])
    monkeypatch.setattr(la, "log_text", lambda i: next(reads))
    la.scan(0)
    assert la.phase[0] == "done" and la.rc[0] == "0" and la.t_begin[0] != "" and la.t_done[0] != ""


def test_vt_sync_shm_reaches_the_switch_and_every_board():
    o = checked(["-n", "2", "--virtual-time", "-r", "x", "--vt-sync", "shm"])
    c = ctx4(lids=[1, 2])
    sw = plan.switch_cmd(o, c)
    assert sw[-4:] == ["--vt-sync", "shm", "--vt-shm", "/b/cluster/vt4/vt.shm"]
    assert plan.board(o, c, 1).endswith(",vt-sync=shm,vt-shm=/b/cluster/vt4/vt.shm")
    rec = plan.vt_record(o, c, "/b/run.sh")
    assert rec[rec.index("--vt-sync") + 1] == "shm"
    assert checked(rec[:-2] + ["-r", "x"]).vt_transport == "shm"
    # udp: the switch's reports and grants, nothing added to the boards
    o = checked(["-n", "2", "--virtual-time", "-r", "x", "--vt-sync=udp"])
    assert "--vt-sync" not in plan.switch_cmd(o, c) and "vt-sync" not in plan.board(o, c, 0)
    rec = plan.vt_record(o, c, "/b/run.sh")
    assert rec[rec.index("--vt-sync") + 1] == "udp"
    assert checked(rec[:-2] + ["-r", "x"]).vt_transport == "udp"


@pytest.mark.parametrize("args, environ, want", [
    ([], {}, "shm"),                                    # one host: the sync domain
    (["--hosts", "a,b"], {}, "udp"),                    # several hosts: the switch
    ([], {"SLURM_JOB_NODELIST": "n[1-2]"}, "udp"),      # a Slurm allocation
    (["--no-slurm"], {"SLURM_JOB_NODELIST": "n[1-2]"}, "shm"),
    (["--vt-sync", "udp"], {}, "udp"),                  # as given
])
def test_vt_sync_default(args, environ, want):
    o = checked(["-n", "2", "--virtual-time", "-r", "x"] + args, environ)
    assert o.vt_transport == want
    assert checked(["-n", "2", "--no-vt-sync", "-r", "x"] + args, environ).vt_transport == "udp"
    assert checked(["-n", "2", "-r", "x"], environ).vt_transport == "udp"


@pytest.mark.parametrize("args, why", [
    (["--vt-sync", "tcp"], "--vt-sync: udp or shm"),
    (["--vt-sync", "shm", "--no-vt-sync"], "not with --no-vt-sync"),
    (["--vt-sync", "shm", "--hosts", "a,b"], "not with --hosts"),
])
def test_vt_sync_usage_errors(args, why):
    with pytest.raises(options.Usage, match=why):
        checked(["-n", "2", "--virtual-time", "-r", "x"] + args)


def test_the_mode_is_a_class_of_its_own(monkeypatch, tmp_path):
    """A run in virtual time is vtlaunch.VtLauncher, one in host time
    launch.Launcher: main() picks it from the options, and the steps where
    they differ are their own methods (no job server in virtual time, the
    node's command in the image's input; a token from the job server in
    host time)."""
    from dn2scripts.cluster import vtlaunch
    picked = []
    monkeypatch.setattr(launch.Launcher, "run", lambda self: picked.append(type(self)) or 0)
    launch.main(SCRIPT, ["-n", "1", "-r", "true"])
    launch.main(SCRIPT, ["-n", "1", "--virtual-time", "-r", "true"])
    assert picked == [launch.Launcher, vtlaunch.VtLauncher]

    o = checked(["-n", "1", "--virtual-time", "-r", "echo vt"])
    la = vtlaunch.VtLauncher(o, {})
    la.rundir = str(tmp_path)
    (tmp_path / "input").mkdir()
    la.node_input(0)
    assert (tmp_path / "input" / "node0.sh").read_text().startswith("echo vt")
    assert la.progress_line() == "" and la.restored_up() is False

    o = checked(["-n", "1", "-r", "echo host"])
    la = launch.Launcher(o, {})
    la.rundir = str(tmp_path)
    (tmp_path / "www" / "cmd").mkdir(parents=True)
    with pytest.raises(cli.Fail, match="wrote no token for node 0"):
        la.node_input(0)
    assert (tmp_path / "www" / "cmd" / "node0.sh").read_text().startswith("echo host")
    assert la.progress_line() is None and la.restored_up() is True


def test_a_timeout_in_virtual_time_names_the_slowest_node(tmp_path):
    """A run cut off by --timeout under --virtual-time says how far the
    lock-step got and which node held it back (the switch's last "vt:"
    line names the slowest board by LID); in host time nothing is added."""
    from dn2scripts.cluster import vtlaunch
    o = checked(["-n", "2", "--virtual-time", "-r", "sleep 1000"])
    la = vtlaunch.VtLauncher(o, {})
    la.rundir = str(tmp_path)
    la.lid = ["1", "2"]
    (tmp_path / "switch.log").write_text(
        "dn2-switch: vt: cluster at 0.500000000 s (slowest LID 0x0001 guid 1 127.0.0.1:4000), 9 reports/s, 9 grants/s\n"
        "dn2-switch: vt: cluster at 12.250000000 s (slowest LID 0x0002 guid 2 127.0.0.1:4001), 9 reports/s, 9 grants/s\n")
    assert la.timeout_detail() == "; virtual time 12.250000000 s, the slowest node1 (LID 0x0002)"
    la.lid = ["", ""]
    assert la.timeout_detail() == "; virtual time 12.250000000 s, the slowest board (LID 0x0002)"
    (tmp_path / "switch.log").write_text("dn2-switch: listening\n")
    assert la.timeout_detail() == ""
    assert launch.Launcher(checked(["-n", "1", "-r", "true"]), {}).timeout_detail() == ""


def test_pause_yield_is_on_in_host_time_and_off_in_virtual_time():
    """A guest's PAUSE yields its host thread by default in host time only:
    in lock-step a board waits for its grant without spinning.  Given, it
    is kept either way, and a run's recording says what it was."""
    assert checked(["-r", "true"]).pause_yield == "on"
    assert checked(["--virtual-time", "-r", "true"]).pause_yield == "off"
    assert checked(["--virtual-time", "--pause-yield", "on", "-r", "true"]).pause_yield == "on"
    assert checked(["--pause-yield=off", "-r", "true"]).pause_yield == "off"
    o = checked(["-n", "2", "--virtual-time", "-r", "x"])
    rec = plan.vt_record(o, ctx4(lids=[1, 2]), "/b/run.sh")
    assert rec[rec.index("--pause-yield") + 1] == "off"
