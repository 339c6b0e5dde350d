"""mpirun.sh's launcher (dn2scripts.mpirun) without booting: the options,
the ranks/nodes/ppn arithmetic, the usage errors (exit 2, one line), the
--dry-run plan, the node's script and the board counter sums."""
import os

import pytest

from dn2scripts import mpirun

SCRIPT = os.path.join(mpirun.HERE, "mpirun.sh")


def settled(args, environ=None, provider="/x/libdimmnet2-fi.so", pmix_server=True):
    o = mpirun.parse(args, environ or {})
    notes = []
    mpirun.settle(o, find_provider=lambda: provider, tell=notes.append, find_pmix_server=lambda: pmix_server)
    return o, notes


def usage(args, environ=None):
    with pytest.raises(mpirun.Usage) as e:
        settled(args, environ)
    return str(e.value)


@pytest.mark.parametrize("args,nodes,ppn,ranks", [
    (["-np", "4", "--ppn", "2"], 2, 2, 4),
    (["-np", "3"], 3, 1, 3),
    (["-n", "3"], 3, 1, 3),
    (["--np=4", "--ppn=2"], 2, 2, 4),
    (["-N", "3"], 3, 1, 3),
    (["-N", "2", "--ppn", "2"], 2, 2, 4),
    (["--nodes=2", "-np", "4"], 2, 2, 4),
    (["-N", "2", "-np", "4", "--ppn", "2"], 2, 2, 4),
    ([], 2, 1, 2),
])
def test_any_two_give_the_third(args, nodes, ppn, ranks):
    o, notes = settled(args + ["--", "true"])
    assert (o.nodes, o.ppn, o.np) == (nodes, ppn, ranks) and notes == []


def test_n_with_ppn_notes_that_n_counts_ranks():
    o, notes = settled(["-n", "4", "--ppn", "2", "--", "true"])
    assert (o.np, o.nodes) == (4, 2)
    assert len(notes) == 1 and "-n counts ranks now" in notes[0] and "-N 4 --ppn 2" in notes[0]


def test_x_and_env():
    o, notes = settled(["-x", "FOO=bar", "-x", "HOMEY", "-x", "EMPTY=", "--", "true"], {"HOMEY": "a b"})
    assert o.envs == ["FOO=bar", "HOMEY=a b", "EMPTY="] and notes == []
    o, notes = settled(["--env", "FOO=bar", "--", "true"])
    assert o.envs == ["FOO=bar"] and notes == ["--env is now spelled -x (Open MPI's mpirun): -x FOO=bar"]


@pytest.mark.parametrize("args,pattern", [
    (["-np", "3", "--ppn", "2"], "-np 3 with --ppn 2: the ranks must fill whole nodes"),
    (["-N", "2", "-np", "5"], "-np 5 on -N 2 nodes"),
    (["-N", "2", "-np", "6"], "-np 6 on -N 2 nodes"),
    (["-N", "2", "-np", "4", "--ppn", "1"], "does not match"),
    (["-np", "0"], "-np must be at least 1"),
    (["-np", "x"], "-np wants a whole number, not 'x'"),
    (["-N", "65"], "-N (--nodes) must be 1..64"),
    (["-np", "130", "--ppn", "2"], "is 65 nodes: at most 64"),
    (["--ppn", "3"], "--ppn must be 1 or 2"),
    (["-x", "1A"], "-x wants VAR or VAR=VALUE, not '1A'"),
    (["-x", "DN2_NO_SUCH_VARIABLE"], "DN2_NO_SUCH_VARIABLE is not set here"),
    (["--env", "FOO"], "--env wants VAR=VALUE"),
    (["--junit", "/no/such/dir/j.xml"], "--junit: the directory of"),
    (["--net", "shm", "-N", "2"], "shm runs on one node only"),
    (["--net", "x"], "the network must be board, tcp or shm, not 'x'"),
    (["--ofi", "x"], "--ofi must be dimmnet2"),
    (["--name", "a/b"], "--name: a plain name"),
    (["--vt-start", "3"], "go with --virtual-time"),
    (["--virtual-time", "--ppn", "2"], "--ppn 1 only"),
    (["--virtual-time", "--net", "tcp"], "no tcp"),
    (["--virtual-time", "--vt-start", "x"], "--vt-start: seconds of virtual time"),
    (["--vt-foo", "1"], "unknown argument: --vt-foo (mpirun.sh takes"),
    (["--virtual-time", "--vt-sync", "tcp"], "--vt-sync: udp or shm, not 'tcp'"),
    (["--vt-sync", "shm"], "go with --virtual-time"),
    (["--bogus"], "unknown argument: --bogus"),
    (["-t", "x"], "--timeout wants a whole number"),
])
def test_usage_errors(args, pattern):
    assert pattern in usage(args + ["--", "true"])


def test_value_missing_and_program_missing():
    assert usage(["-np"]) == "-np needs a value"
    assert usage(["--net="]) == "--net needs a value"
    assert usage([]).startswith("no program")
    assert usage(["--job", "board:x", "--", "true"]) == "give -- PROGRAM or --job, not both"
    assert usage(["--job", "board"]) == "--job wants NET:CMD, not 'board'"
    assert usage(["--", "./no/such/prog"]) == "./no/such/prog: no such file on the host"


def test_options_end_at_the_program():
    o, _ = settled(["-N", "1", "prog", "--help", "-np", "5"])
    assert o.program == ["prog", "--help", "-np", "5"] and o.np == 1
    assert mpirun.parse(["-q", "-h", "-np"], {}).help


def test_default_network_follows_the_provider():
    assert settled(["--", "true"])[0].net == "board"
    assert settled(["--", "true"], provider="")[0].net == "tcp"
    assert settled(["--virtual-time", "-N", "1", "--", "true"], provider="")[0].net == "board"


def test_job_list_quoting():
    o, _ = settled(["--job", "board:echo 'a'", "--job", "tcp:x:y"])
    assert o.joblist == "board\tsh -c 'echo '\\''a'\\'''\ntcp\tsh -c 'x:y'"
    assert (o.nets, o.njobs) == (" board tcp", 2)
    o, _ = settled(["--", "./" + os.path.relpath(SCRIPT), "a b", ""])
    assert o.prog_host and o.joblist == "board\t'/tmp/mpi/bin/mpirun.sh' 'a b' ''"


def test_plan():
    o, _ = settled(["-np", "4", "--ppn", "2", "--name", "n1", "--junit", "j.xml", "-x", "A=1", "--", "true"])
    lines = mpirun.plan_lines(o, "512")
    rundir = os.path.join(mpirun.TOP, "build", "cluster", "n1")
    assert lines == ["nodes: 2", "ppn: 2", "ranks: 4", "rank 0: node 0 wid 0", "rank 1: node 0 wid 1",
                     "rank 2: node 1 wid 0", "rank 3: node 1 wid 1", "networks: board", "ofi: dimmnet2",
                     "pmi: pmix (dn2-pmix-server on every node, fences over the job server)",
                     "job 1: board 'true'", "env: A=1", "timeout: 900", "mem: 512", "rundir: " + rundir,
                     "result: " + rundir + "/result.json", "junit: j.xml"]


def test_plan_virtual_time():
    o, _ = settled(["-N", "1", "--virtual-time", "--vt-start", "6.5", "--vt-lookahead", "200", "--", "true"], provider="")
    assert "virtual time: --vt-start 6.5 --vt-lookahead 200; PMI: dn2-pmi-agent, WID 1 of every node" \
        in mpirun.plan_lines(o, "x")
    o, _ = settled(["-N", "2", "--virtual-time", "--vt-sync", "udp", "--", "true"], provider="")
    assert o.vt_opts == ["--vt-sync", "udp"]


def test_guest_memory():
    # 100 MiB unpacked, 40 MiB compressed: (200 + 40 + 128) MiB rounded up to 384, then at least 512
    assert mpirun.guest_mem(100 * 1024, 40 * 1024, 1) == 512
    assert mpirun.guest_mem(300 * 1024, 100 * 1024, 1) == 896      # 828 rounded up
    assert mpirun.guest_mem(300 * 1024, 100 * 1024, 2) == 1024     # and 128 for the second rank


def test_pmi_choice():
    assert settled(["--", "true"])[0].pmi == "pmix"
    assert settled(["--", "true"], pmix_server=False)[0].pmi == "pmi1"
    assert settled(["--pmi", "pmi1", "--", "true"])[0].pmi == "pmi1"
    assert settled(["--pmi=pmix", "--", "true"])[0].pmi == "pmix"
    assert settled(["--", "true"], {"DN2_MPI_PMI": "pmi1"})[0].pmi == "pmi1"
    assert "--pmi must be pmix or pmi1, not 'flux'" in usage(["--pmi", "flux", "--", "true"])
    with pytest.raises(mpirun.Usage) as e:
        settled(["--pmi", "pmix", "--", "true"], pmix_server=False)
    assert "dn2-pmix-server is not built" in str(e.value)
    o, _ = settled(["--pmi", "pmi1", "--", "true"])
    assert "pmi: pmi1 (libpmi-dn2.so through Open MPI's flux component)" in mpirun.plan_lines(o, "x")


def test_pmix_environment():
    o, _ = settled(["-np", "2", "--", "true"])
    env = mpirun.ompi_env(o, 1234)
    assert env[:3] == ["OMPI_MCA_schizo=ompi", "OMPI_MCA_pmix=ext3x", "OMPI_MCA_ess=pmi"]
    assert not [e for e in env if e.startswith("FLUX_")]
    s = mpirun.node_script(o, "", 1234)
    assert "PPN=1 SIZE=2 NJOBS=1 STATS= KEEPGOING= VT= PMI=pmix" in s.split("\n")
    assert "dn2-pmix-server -n $DN2_NODE -N $NODES -l $PPN -j $ns" in s


def test_node_script():
    o, _ = settled(["-np", "2", "--ppn", "2", "-x", "A=it's", "--net", "tcp", "--pmi", "pmi1", "--", "true"])
    s = mpirun.node_script(o, "fetch mpi/prog /tmp/mpi/bin/p 755\n", 1234)
    head = s.split("\n")
    assert head[0] == "# generated by scripts/mpirun.sh: 2 ranks, 2 per node, networks: tcp"
    assert head[1] == "PPN=2 SIZE=2 NJOBS=1 STATS= KEEPGOING= VT= PMI=pmi1"
    assert head[2:4] == ["NETS=' tcp'", "JOBS='tcp\t'\\''true'\\'''"]
    assert "export 'FLUX_JOB_ID=1234'" in head and "export 'OMPI_MCA_mpi_yield_when_idle=1'" in head
    assert "export 'A=it'\\''s'" in head
    assert "        board) export 'FI_PROVIDER=^ofi_rxd' 'OMPI_MCA_pml=cm' 'OMPI_MCA_mtl=ofi' " \
           "'OMPI_MCA_mtl_ofi_provider_include=dimmnet2' 'FI_PROVIDER_PATH=/opt/dn2/lib/libfabric' " \
           "'OMPI_MCA_btl=self,vader' 'OMPI_MCA_osc=pt2pt' ;;" in head
    assert "#@" not in s and "@FETCH@" not in s
    assert "}\nfetch mpi/prog /tmp/mpi/bin/p 755\ncase \" $NETS \" in" in s
    assert s.endswith("exit 0\n")


def test_fetch_commands(tmp_path):
    (tmp_path / "mpi").mkdir()
    (tmp_path / "mpi" / "f").write_bytes(b"x" * 100)
    o, _ = settled(["-N", "1", "--", "true"])
    assert mpirun.fetch_cmd(o, str(tmp_path), "mpi/f", "/home/mpi/f", "644") == "fetch mpi/f /home/mpi/f 644"
    o.vt = "1"
    lines = mpirun.fetch_cmd(o, str(tmp_path), "mpi/f", "/home/mpi/f", "644").split("\n")
    assert lines[0] == "unpack /home/mpi/f 644 <<'DN2-B64-END'" and lines[-1] == "DN2-B64-END"
    assert [len(l) for l in lines[1:-1]] == [76, 60]


def test_board_sums(tmp_path):
    d = tmp_path / "board-stats"
    d.mkdir()
    (d / "node0").write_text("tx-packets=3\ntx-bytes=100\nrx-packets=2\nother=9\n")
    (d / "node1").write_text("tx-packets=4\nrx-bytes=7x\n")
    assert mpirun.board_sums(str(tmp_path)) == \
        "[mpirun] boards: tx-packets=7 tx-bytes=100 rx-packets=2 rx-bytes=7"
    assert mpirun.board_sums(str(tmp_path / "none")) == \
        "[mpirun] boards: tx-packets=0 tx-bytes=0 rx-packets=0 rx-bytes=0"


def test_help_and_usage_exit_status(capsys):
    assert mpirun.main(["x", SCRIPT, "--help"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("Runs an MPI program") and "-np, -n, --np N" in out and "--dry-run" in out
    assert mpirun.main(["x", SCRIPT, "--nope"]) == 2
    assert capsys.readouterr().err == "mpirun.sh: unknown argument: --nope (see --help)\n"


def test_sh_quote():
    assert mpirun.sh_quote("a'b") == "'a'\\''b'"
    assert mpirun.sh_quote("x\n\n") == "'x'"


def test_guest_release_trixie():
    """Open MPI 5's image: PMIx only, no ess/schizo/pmix/ORTE variables,
    btl sm for vader, no osc pt2pt; the image and the cluster get the
    release; bookworm's commands stay as they were."""
    o, _ = settled(["--guest-release", "trixie", "-np", "4", "--ppn", "2", "--", "true"],
                   provider="", pmix_server=False)
    assert (o.release, o.pmi, o.net) == ("trixie", "pmix", "board")
    env = mpirun.ompi_env(o, 1234)
    assert not [e for e in env if e.startswith(("FLUX_", "OMPI_MCA_schizo", "OMPI_MCA_ess", "OMPI_MCA_pmix",
                                                "OMPI_MCA_orte"))]
    assert "OMPI_MCA_hwloc_base_binding_policy=none" in env and "OMPI_MCA_mpi_yield_when_idle=1" in env
    for net in ("board", "tcp", "shm"):
        e = mpirun.net_env(net, "dimmnet2", "trixie")
        btl = [x for x in e if x.startswith("OMPI_MCA_btl=")]
        assert len(btl) == 1 and "sm" in btl[0].split("=")[1].split(",") and "vader" not in btl[0]
        assert not [x for x in e if x.startswith("OMPI_MCA_osc")]
    assert mpirun.img_args(o) == ["--mpi", "--guest-release", "trixie"]
    assert "guest release: trixie (Open MPI 5, PMIx only)" in mpirun.plan_lines(o, "x")
    cl, _ = mpirun.cluster_args(o, "512", "/s", "/s/node.sh")
    assert cl[cl.index("--guest-release") + 1] == "trixie"
    o, _ = settled(["-np", "2", "--", "true"])
    assert o.release == "bookworm" and mpirun.img_args(o) == ["--mpi"]
    assert "--guest-release" not in mpirun.cluster_args(o, "512", "/s", "/s/node.sh")[0]
    assert "OMPI_MCA_btl=self,vader" in mpirun.net_env("board", "dimmnet2")


def test_guest_release_usage():
    assert "Open MPI 5 (--guest-release trixie) has no PMI-1 path" in usage(
        ["--guest-release", "trixie", "--pmi", "pmi1", "--", "true"])
    assert "Open MPI 5" in usage(["--guest-release=trixie", "--", "true"], {"DN2_MPI_PMI": "pmi1"})
    assert "--guest-release: bookworm or trixie, not 'sid'" in usage(["--guest-release", "sid", "--", "true"])
    o, _ = settled(["--", "true"], {"DN2_GUEST_RELEASE": "trixie"})
    assert o.release == "trixie"
