"""scripts/mpirun.sh: an MPI program on a cluster of DIMMnet-2 guests
(docs/mpi.md; the options are in mpirun.sh's header, which --help prints).

    python3 -m dn2scripts.mpirun SCRIPT-PATH ARGS...

SCRIPT-PATH is mpirun.sh as it was called ($0): --help prints its header,
usage errors name it, result.json records it.  The steps, each a function
the unit tests call: parse() the options, settle() the ranks, nodes and
networks, plan_lines() for --dry-run, node_script() for the nodes, and
launch(): the image, the streamer (dn2scripts.mpirun_stream) and cluster.sh.
Exit status as mpirun.sh's header says: 2 usage error, 4 set-up, otherwise
the first failed rank's or cluster.sh's.
"""
import base64
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import time

from dn2scripts import mpi_export
from dn2scripts.cluster.cli import is_uint, usage_text

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))   # scripts/
TOP = os.path.dirname(HERE)
NODE_TEMPLATE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "mpirun_node.sh")
NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
ASSIGN_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
PMIX_SERVER = os.path.join(TOP, "build", "linux-guest", "pmi", "dn2-pmix-server")
RELEASES = ("bookworm", "trixie")
VT_START_RE = re.compile(r"^[0-9]{1,4}(\.[0-9]{1,9})?$")


class Usage(Exception):
    """A usage error: "mpirun.sh: MESSAGE (see --help)", exit 2."""


class Fail(Exception):
    """A set-up failure: "[mpirun] error: MESSAGE", exit 4."""


def say(msg):
    sys.stderr.write("[mpirun] %s\n" % msg)
    sys.stderr.flush()


def note(msg):
    say("note: " + msg)


def sh_quote(word):
    """WORD quoted for a POSIX shell (as mpirun.sh's $(printf | sed) did,
    trailing newlines dropped)."""
    return "'" + word.rstrip("\n").replace("'", "'\\''") + "'"


class Options:
    def __init__(self, environ):
        self.np = self.nodes = self.ppn = self.n_short = self.net = ""
        self.ofi = environ.get("DN2_MPI_OFI") or "dimmnet2"
        self.timeout_s, self.mem, self.name, self.quiet = "900", "", "", ""
        self.files, self.envs, self.cl_opts, self.jobs = [], [], [], []
        self.packages = self.stats = self.keep_going = self.junit = self.dry_run = self.old_env = ""
        self.vt, self.vt_opts, self.vt_start, self.vt_start_set = "", [], "5", ""
        self.pmi = environ.get("DN2_MPI_PMI") or ""
        self.release = environ.get("DN2_GUEST_RELEASE") or "bookworm"
        self.help = False
        self.program = []          # PROGRAM ARGS...
        self.notes = []


def parse(args, environ):
    """The options up to PROGRAM (its arguments are its own): an Options;
    raises Usage."""
    o = Options(environ)
    a = list(args)

    def need_value():
        if len(a) < 2 or a[1] == "":
            raise Usage("%s needs a value" % a[0])

    def need_arg():
        if len(a) < 2:
            raise Usage("%s needs a value" % a[0])

    def want_uint(opt, v):
        if not is_uint(v):
            raise Usage("%s wants a whole number, not '%s'" % (opt, v))

    while a:
        x = a[0]
        if x.startswith("--") and "=" in x[3:]:
            k, v = x.split("=", 1)
            a[0:1] = [k, v]
            continue
        if x in ("-np", "--np"):
            need_value(); want_uint(x, a[1]); o.np = a[1]; del a[:2]
        elif x == "-n":
            need_value(); want_uint(x, a[1]); o.np = o.n_short = a[1]; del a[:2]
        elif x in ("-N", "--nodes"):
            need_value(); want_uint(x, a[1]); o.nodes = a[1]; del a[:2]
        elif x == "--ppn":
            need_value(); o.ppn = a[1]; del a[:2]
        elif x == "-x":
            need_value()
            v = a[1]
            if ASSIGN_RE.match(v):
                o.envs.append(v)
            elif NAME_RE.match(v):
                if v not in environ:
                    raise Usage("-x %s: %s is not set here (give -x %s=VALUE)" % (v, v, v))
                o.envs.append("%s=%s" % (v, environ[v]))
            else:
                raise Usage("-x wants VAR or VAR=VALUE, not '%s'" % v)
            del a[:2]
        elif x == "--env":
            need_value()
            if not ASSIGN_RE.match(a[1]):
                raise Usage("--env wants VAR=VALUE, not '%s'" % a[1])
            o.envs.append(a[1]); o.old_env = a[1]; del a[:2]
        elif x == "--net":
            need_value(); o.net = a[1]; del a[:2]
        elif x == "--ofi":
            need_value(); o.ofi = a[1]; del a[:2]
        elif x == "--pmi":
            need_value(); o.pmi = a[1]; del a[:2]
        elif x == "--guest-release":
            need_value(); o.release = a[1]; del a[:2]
        elif x == "--job":
            need_value(); o.jobs.append(a[1]); del a[:2]
        elif x == "--file":
            need_value(); o.files.append(a[1]); del a[:2]
        elif x == "--packages":
            need_arg(); o.packages += " " + a[1]; del a[:2]
        elif x in ("-t", "--timeout"):
            need_value(); o.timeout_s = a[1]; del a[:2]
        elif x in ("-m", "--mem"):
            need_value(); o.mem = a[1]; del a[:2]
        elif x == "--name":
            need_value(); o.name = a[1]; del a[:2]
        elif x == "--junit":
            need_value(); o.junit = a[1]; del a[:2]
        elif x in ("--dry-run", "--print-plan"):
            o.dry_run = "1"; del a[:1]
        elif x in ("--switch-opts", "--device-opts", "--secret-file"):
            need_arg(); o.cl_opts += [x, a[1]]; del a[:2]
        elif x == "--board-stats":
            o.stats = "1"; del a[:1]
        elif x == "--keep-going":
            o.keep_going = "1"; del a[:1]
        elif x == "--cluster-opt":
            need_arg(); o.cl_opts.append(a[1]); del a[:2]
        elif x == "--virtual-time":
            o.vt = "1"; del a[:1]
        elif x == "--vt-start":
            need_value(); o.vt_start = a[1]; o.vt_start_set = "1"; del a[:2]
        elif x in ("--vt-quantum", "--vt-lookahead"):
            need_value(); want_uint(x, a[1]); o.vt_opts += [x, a[1]]; del a[:2]
        elif x == "--vt-sync":
            need_value()
            if a[1] not in ("udp", "shm"):
                raise Usage("--vt-sync: udp or shm, not '%s'" % a[1])
            o.vt_opts += [x, a[1]]; del a[:2]
        elif x.startswith("--vt-"):
            raise Usage("unknown argument: %s (mpirun.sh takes --vt-start, --vt-quantum, --vt-lookahead, "
                        "--vt-sync)" % x)
        elif x in ("-q", "--quiet"):
            o.quiet = "1"; del a[:1]
        elif x in ("-h", "--help"):
            o.help = True
            return o
        elif x == "--":
            del a[:1]
            break
        elif x.startswith("-"):
            raise Usage("unknown argument: %s" % x)
        else:
            break
    o.program = a
    return o


def usage_net(opt, net, nodes):
    if net not in ("board", "tcp", "shm"):
        raise Usage("%s: the network must be board, tcp or shm, not '%s'" % (opt, net))
    if net == "shm" and nodes != 1:
        raise Usage("%s: shm runs on one node only (-np 2 --ppn 2)" % opt)


def settle(o, find_provider=None, tell=None, find_pmix_server=None):
    """The checks after the options, the ranks, nodes and ranks per node
    (any two give the third), the network, the job list.  Sets o.np,
    o.nodes, o.ppn (ints), o.net, o.provider, o.joblist, o.nets, o.njobs,
    o.prog_host; each note goes to o.notes and to tell() at once (before a
    later usage error, as mpirun.sh always printed them); raises Usage."""
    def add_note(n):
        o.notes.append(n)
        if tell:
            tell(n)
    if not is_uint(o.timeout_s):
        raise Usage("--timeout wants a whole number, not '%s'" % o.timeout_s)
    if o.mem and not is_uint(o.mem):
        raise Usage("--mem wants a whole number, not '%s'" % o.mem)
    if o.ppn not in ("", "1", "2"):
        raise Usage("--ppn must be 1 or 2 (a board has two WIDs)")
    np = int(o.np) if o.np else None
    nodes = int(o.nodes) if o.nodes else None
    ppn = int(o.ppn) if o.ppn else None
    if np is not None and np < 1:
        raise Usage("-np must be at least 1")
    if nodes is not None and not 1 <= nodes <= 64:
        raise Usage("-N (--nodes) must be 1..64")
    if np is not None:
        if nodes is not None and ppn is not None:
            if np != nodes * ppn:
                raise Usage("-np %d does not match -N %d x --ppn %d (%d ranks)" % (np, nodes, ppn, nodes * ppn))
        elif nodes is not None:
            if not (np % nodes == 0 and np // nodes <= 2):
                raise Usage("-np %d on -N %d nodes: every node runs 1 or 2 ranks (--ppn), the same number on each" % (np, nodes))
            ppn = np // nodes
        else:
            ppn = ppn or 1
            if np % ppn:
                raise Usage("-np %d with --ppn %d: the ranks must fill whole nodes (give an even -np)" % (np, ppn))
            nodes = np // ppn
            if nodes > 64:
                raise Usage("-np %d with --ppn %d is %d nodes: at most 64" % (np, ppn, nodes))
    else:
        nodes, ppn = nodes or 2, ppn or 1
        np = nodes * ppn
    o.np, o.nodes, o.ppn = np, nodes, ppn
    if o.n_short and ppn > 1:
        add_note("-n counts ranks now (Open MPI's -n): -n %s --ppn %d is %d ranks on %d node%s; "
                       "for %s nodes of %d ranks give -N %s --ppn %d"
                       % (o.n_short, ppn, np, nodes, "" if nodes == 1 else "s", o.n_short, ppn, o.n_short, ppn))
    if o.old_env:
        add_note("--env is now spelled -x (Open MPI's mpirun): -x " + o.old_env)
    if o.ofi not in ("dimmnet2", "dimmnet2;ofi_rxd"):
        raise Usage("--ofi must be dimmnet2 or 'dimmnet2;ofi_rxd'")
    if o.pmi not in ("", "pmix", "pmi1"):
        raise Usage("--pmi must be pmix or pmi1, not '%s'" % o.pmi)
    if o.release not in RELEASES:
        raise Usage("--guest-release: bookworm or trixie, not '%s'" % o.release)
    if o.release == "trixie" and o.pmi == "pmi1":
        raise Usage("--pmi pmi1: Open MPI 5 (--guest-release trixie) has no PMI-1 path; its ranks start only as "
                    "PMIx clients (--pmi pmix, the default there)")
    if o.net:
        usage_net("--net", o.net, nodes)
    for j in o.jobs:
        if ":" not in j:
            raise Usage("--job wants NET:CMD, not '%s'" % j)
        usage_net("--job", j.split(":", 1)[0], nodes)
    for f in o.files:
        if not os.path.isfile(f):
            raise Usage("--file: %s: no such file" % f)
    if "/" in o.name or o.name in (".", ".."):
        raise Usage("--name: a plain name, not '%s'" % o.name)
    if o.junit:
        if not os.path.isdir(os.path.dirname(o.junit) or "."):
            raise Usage("--junit: the directory of %s does not exist" % o.junit)
        if os.path.isdir(o.junit):
            raise Usage("--junit: %s is a directory" % o.junit)
    if not o.program and not o.jobs:
        raise Usage("no program: scripts/mpirun.sh -np 2 -- PROGRAM [ARGS...]")
    if o.program and o.jobs:
        raise Usage("give -- PROGRAM or --job, not both")
    if o.program and "/" in o.program[0] and not os.path.isfile(o.program[0]):
        raise Usage("%s: no such file on the host" % o.program[0])
    if o.vt:
        words = " %s %s " % (o.net, " ".join(j.split(":", 1)[0] for j in o.jobs))
        if ppn != 1:
            raise Usage("--virtual-time: --ppn 1 only: a board has two WIDs, and under virtual time the node's PMI "
                        "agent (dn2-pmi-agent, PMI over the boards) has the second")
        if " tcp " in words:
            raise Usage("--virtual-time: no tcp: the guests' Ethernet is input from the host at host-dependent "
                        "times (--net board)")
        if " shm " in words:
            raise Usage("--virtual-time: no shm: the PMI agents talk over the boards (--net board)")
        if not VT_START_RE.match(o.vt_start):
            raise Usage("--vt-start: seconds of virtual time, e.g. 5 or 6.5 (got '%s')" % o.vt_start)
    elif o.vt_opts or o.vt_start_set:
        raise Usage("--vt-start, --vt-quantum, --vt-lookahead and --vt-sync go with --virtual-time")

    # The libfabric provider (docs/ofi-provider.md), when built (or named by
    # DN2_FI_PROVIDER); the default network follows from it.
    o.provider = (find_provider or default_provider)()
    if o.release != "bookworm":
        # (the image build compiles the release's own provider and server)
        if os.environ.get("DN2_FI_PROVIDER"):
            add_note("DN2_FI_PROVIDER is not used with --guest-release %s: the image carries the provider built "
                     "against %s's libfabric" % (o.release, o.release))
        o.provider = ""
        if not o.net:
            o.net = "board"
        if not o.pmi:
            o.pmi = "pmix"
    if not o.net:
        o.net = "board" if (o.provider or o.vt) else "tcp"
    # How the ranks learn who they are: the node's PMIx server (built on
    # the host's libpmix-dev), else PMI-1 through Open MPI's flux component.
    if not o.pmi:
        o.pmi = "pmix" if (find_pmix_server or default_pmix_server)() else "pmi1"
    elif o.pmi == "pmix" and o.release == "bookworm" and not (find_pmix_server or default_pmix_server)():
        raise Usage("--pmi pmix: %s is not built (libpmix-dev, then meson compile -C build); --pmi pmi1 needs "
                    "no server" % os.path.relpath(PMIX_SERVER))

    # The jobs, one per line: NET<TAB>shell words (the ranks run "exec WORDS")
    o.prog_host = ""
    if not o.jobs:
        prog, args = o.program[0], o.program[1:]
        if "/" in prog:
            o.prog_host = prog
            prog = "/tmp/mpi/bin/" + os.path.basename(prog)
        o.joblist = o.net + "\t" + " ".join(sh_quote(w) for w in [prog] + args)
        o.nets = " " + o.net
    else:
        o.joblist = "\n".join(j.split(":", 1)[0] + "\tsh -c " + sh_quote(j.split(":", 1)[1]) for j in o.jobs)
        o.nets = "".join(" " + j.split(":", 1)[0] for j in o.jobs)
    o.njobs = o.joblist.count("\n") + 1
    return o


def default_pmix_server():
    return os.access(PMIX_SERVER, os.X_OK)


def default_provider():
    return mpi_export.default_provider()


def guest_mem(unpacked_kib, compressed_kib, ppn):
    """What the MPI image needs (lib.sh's dn2_guest_mem: twice the unpacked
    size, the compressed image, 128 MiB, rounded up to 128 MiB, at least
    256) plus 128 MiB for each rank after a node's first, at least 512."""
    m = (2 * unpacked_kib + compressed_kib) // 1024 + 128
    m = max((m + 127) // 128 * 128, 256) + 128 * (ppn - 1)
    return max(m, 512)


def mpi_mem_for(img, ppn, quiet_errors=False):
    """(MiB, why) for the image, or None (lib.sh's dn2_image_size failed:
    its error on stderr unless quiet_errors)."""
    r = subprocess.run(["bash", "-c", '. "$1/lib.sh" && dn2_image_size "$2"', "mpirun", HERE, img],
                       stdout=subprocess.PIPE, stderr=subprocess.DEVNULL if quiet_errors else None, text=True)
    w = r.stdout.split()
    if r.returncode != 0 or len(w) != 2:
        return None
    u, c = int(w[0]), int(w[1])
    return guest_mem(u, c, ppn), "the MPI image unpacks to %d MiB, %d rank(s) per node" % ((u + 1023) // 1024, ppn)


def img_args(o):
    return ["--mpi"] + (["--packages", o.packages] if o.packages else []) + rel_args(o)


def rel_args(o):
    """--guest-release for build-initramfs.sh and cluster.sh (bookworm, the
    default, passes nothing: its commands stay as they were)."""
    return ["--guest-release", o.release] if o.release != "bookworm" else []


def rundir_of(o):
    return os.path.join(TOP, "build", "cluster", o.name)


def plan_lines(o, mem_text):
    """--dry-run: the plan, "key: value" lines."""
    out = ["nodes: %d" % o.nodes, "ppn: %d" % o.ppn, "ranks: %d" % o.np]
    out += ["rank %d: node %d wid %d" % (r, r // o.ppn, r % o.ppn) for r in range(o.np)]
    out.append("networks:" + o.nets)
    if " board " in " %s " % o.nets:
        out.append("ofi: " + o.ofi)
    if o.release != "bookworm":
        out.append("guest release: %s (Open MPI 5, PMIx only)" % o.release)
    if o.pmi == "pmix":
        out.append("pmi: pmix (dn2-pmix-server on every node, fences over %s)"
                   % ("the PMI agents" if o.vt else "the job server"))
    else:
        out.append("pmi: pmi1 (libpmi-dn2.so through Open MPI's flux component)")
    if o.vt:
        out.append("virtual time: --vt-start %s%s; PMI: dn2-pmi-agent, WID 1 of every node"
                   % (o.vt_start, " " + " ".join(o.vt_opts) if o.vt_opts else ""))
    for j, line in enumerate(o.joblist.split("\n"), 1):
        nj, _, words = line.partition("\t")
        out.append("job %d: %s %s" % (j, nj, words.strip("\t")))
    if o.prog_host:
        out.append("copy: %s -> /tmp/mpi/bin/%s" % (o.prog_host, os.path.basename(o.prog_host)))
    out += ["copy: %s -> /home/mpi/%s" % (f, os.path.basename(f)) for f in o.files]
    out += ["env: " + e for e in o.envs]
    rundir = rundir_of(o)
    out += ["timeout: " + o.timeout_s, "mem: " + mem_text, "rundir: " + rundir,
            "result: " + os.path.join(rundir, "result.json")]
    if o.junit:
        out.append("junit: " + o.junit)
    return out


def net_env(net, ofi, release="bookworm"):
    """Open MPI's environment for a network.  One-sided: osc/rdma wants
    RDMA-capable BTLs, which tcp is not, and Open MPI 4.1 then finds no
    window component unless pt2pt is named.  Open MPI 5 (trixie) has no
    btl/vader (btl/sm instead) and no osc/pt2pt (its osc/rdma works over
    any BTL that reaches every peer)."""
    if release != "bookworm":
        if net == "board":
            return (["FI_PROVIDER=^ofi_rxd"] if ofi == "dimmnet2" else []) + [
                "OMPI_MCA_pml=cm", "OMPI_MCA_mtl=ofi", "OMPI_MCA_mtl_ofi_provider_include=" + ofi,
                "FI_PROVIDER_PATH=/opt/dn2/lib/libfabric", "OMPI_MCA_btl=self,sm"]
        if net == "tcp":
            return ["OMPI_MCA_pml=ob1", "OMPI_MCA_btl=tcp,self,sm", "OMPI_MCA_btl_tcp_if_include=192.168.77.0/24",
                    "OMPI_MCA_mtl=^ofi"]
        if net == "shm":
            return ["OMPI_MCA_pml=ob1", "OMPI_MCA_btl=self,sm", "OMPI_MCA_mtl=^ofi"]
        return []
    if net == "board":
        # Open MPI matches its include list by prefix, so "dimmnet2" would
        # take "dimmnet2;ofi_rxd" too, which libfabric lists first: for the
        # native provider, libfabric's own filter leaves ofi_rxd out.
        return (["FI_PROVIDER=^ofi_rxd"] if ofi == "dimmnet2" else []) + [
            "OMPI_MCA_pml=cm", "OMPI_MCA_mtl=ofi", "OMPI_MCA_mtl_ofi_provider_include=" + ofi,
            "FI_PROVIDER_PATH=/opt/dn2/lib/libfabric", "OMPI_MCA_btl=self,vader", "OMPI_MCA_osc=pt2pt"]
    if net == "tcp":
        return ["OMPI_MCA_pml=ob1", "OMPI_MCA_btl=tcp,self,vader", "OMPI_MCA_btl_tcp_if_include=192.168.77.0/24",
                "OMPI_MCA_mtl=^ofi", "OMPI_MCA_osc=pt2pt"]
    if net == "shm":
        return ["OMPI_MCA_pml=ob1", "OMPI_MCA_btl=self,vader", "OMPI_MCA_mtl=^ofi", "OMPI_MCA_osc=sm,pt2pt"]
    return []


def ompi_env(o, flux_job_id):
    """Every rank's environment.  PMIx: Open MPI's pmix/ext3x component
    (Debian's libpmix2) as a client of the node's dn2-pmix-server, whose
    variables (PMIX_*) each rank takes from the file the server wrote;
    schizo/ompi, since without a launcher it knows schizo/orte runs each
    process as a singleton.  PMI-1: FLUX_JOB_ID selects Open MPI's
    pmix/flux component (and schizo/flux: ess pmi, no binding);
    FLUX_PMI_LIBRARY_PATH names our PMI-1 library.  Open MPI 5 (trixie) is
    always a PMIx client and has no ess, schizo or pmix framework (nor
    ORTE's tmpdir): none of those variables."""
    if o.release != "bookworm":
        env = ["OMPI_MCA_btl_base_warn_component_unused=0", "OMPI_MCA_hwloc_base_binding_policy=none"]
        if o.ppn > 1:
            env.append("OMPI_MCA_mpi_yield_when_idle=1")
        return env + o.envs
    if o.pmi == "pmix":
        env = ["OMPI_MCA_schizo=ompi", "OMPI_MCA_pmix=ext3x", "OMPI_MCA_ess=pmi"]
    else:
        env = [
            # (Open MPI keeps only 15 bits of it in places: stay below 32768.)
            "FLUX_JOB_ID=%d" % flux_job_id,
            "FLUX_PMI_LIBRARY_PATH=/opt/dn2/lib/libpmi-dn2.so",
            "OMPI_MCA_pmix=flux", "OMPI_MCA_ess=pmi",
        ]
    env += [
        "OMPI_MCA_orte_tmpdir_base=/tmp/mpi",
        "OMPI_MCA_btl_base_warn_component_unused=0",
        "OMPI_MCA_hwloc_base_binding_policy=none",
    ]
    # One guest CPU: with two ranks on it, polling ranks must yield.
    if o.ppn > 1:
        env.append("OMPI_MCA_mpi_yield_when_idle=1")
    return env + o.envs


def fetch_cmd(o, serve, src, dest, mode):
    """How the node's script gets a file: from the job server, or under
    --virtual-time (no server) inside the script itself, in base64 (the
    script reaches the guest as a fw_cfg file at boot and is kept in the run
    directory, so --replay has it too)."""
    if o.vt:
        with open(os.path.join(serve, src), "rb") as f:
            b64 = base64.encodebytes(f.read()).decode()
        return ("unpack %s %s <<'DN2-B64-END'\n" % (dest, mode) + b64 + "DN2-B64-END\n").rstrip("\n")
    return "fetch %s %s %s" % (src, dest, mode)


def node_script(o, fetch_cmds, flux_job_id):
    """The node's script: runs as root on every node (busybox sh): set-up,
    then for each job the node's ranks as user mpi, their output streamed
    to the console (the text is dn2scripts/mpirun_node.sh)."""
    out = ["# generated by scripts/mpirun.sh: %d ranks, %d per node, networks:%s" % (o.np, o.ppn, o.nets),
           "PPN=%d SIZE=%d NJOBS=%d STATS=%s KEEPGOING=%s VT=%s PMI=%s"
           % (o.ppn, o.np, o.njobs, o.stats, o.keep_going, o.vt, o.pmi),
           "NETS=" + sh_quote(o.nets),
           "JOBS=" + sh_quote(o.joblist)]
    out += ["export " + sh_quote(e) for e in ompi_env(o, flux_job_id)]
    out += ["net_env() {", "    case $1 in"]
    for nn in ("board", "tcp", "shm"):
        out.append("        %s) export%s ;;" % (nn, "".join(" " + sh_quote(e) for e in net_env(nn, o.ofi, o.release))))
    out += ["    esac", "}"]
    with open(NODE_TEMPLATE, encoding="utf-8") as f:
        body = "".join(l for l in f if not l.startswith("#@"))
    body = body.replace("@FETCH@\n", fetch_cmds, 1)
    return "\n".join(out) + "\n" + body


def awk_num(s):
    """awk's value of a string: its longest numeric prefix, else 0."""
    m = re.match(r"\s*[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?", s)
    return float(m.group(0)) if m else 0.0


def board_sums(rundir):
    """--board-stats: the sums over the boards of the last counters read."""
    keys = ("tx-packets", "tx-bytes", "rx-packets", "rx-bytes")
    sums = dict.fromkeys(keys, 0.0)
    d = os.path.join(rundir, "board-stats")
    try:
        names = sorted(n for n in os.listdir(d) if n.startswith("node"))
    except OSError:
        names = []
    for n in names:
        try:
            text = open(os.path.join(d, n), encoding="utf-8", errors="replace").read()
        except OSError:
            continue
        for line in text.split("\n"):
            w = line.split("=")
            if w[0] in keys and len(w) > 1:
                sums[w[0]] += awk_num(w[1])
    return "[mpirun] boards: " + " ".join("%s=%d" % (k, int(sums[k])) for k in keys)


def fill_export_mpi(o):
    """build/guest/export-mpi/, the bookworm MPI image's /opt/dn2 part: the
    PMI-1 library, the PMIx server and the provider built by meson."""
    missing = mpi_export.fill(o.provider)
    pmi_lib = mpi_export.paths()[1]
    if pmi_lib in missing:
        raise Fail("%s is not built (meson compile -C build)" % pmi_lib)


def launch(o, script_path, orig_args):
    for nj in o.nets.split():
        if nj == "board" and not o.provider and o.release == "bookworm":
            raise Fail("--net board: the DIMMnet-2 libfabric provider (libdimmnet2-fi.so) is not built; use --net tcp")
    if o.provider and not os.path.isfile(o.provider):
        raise Fail("DN2_FI_PROVIDER=%s does not exist" % o.provider)
    py = shutil.which("python3")
    if not py:
        raise Fail("python3 not found (it streams the ranks' output and writes result.json): apt-get install python3")
    # (another release's image gets its server and provider from the image
    # build, compiled against that release: export-mpi/ is bookworm's)
    if o.release == "bookworm":
        fill_export_mpi(o)
    rundir = rundir_of(o)
    # A cluster still running under this name would be another run's.
    info = os.path.join(rundir, "info")
    if os.path.isfile(info):
        lp = ""
        for line in open(info, errors="replace"):
            if line.startswith("launcher_pid="):
                lp = line[len("launcher_pid="):].rstrip("\n")
        if is_uint(lp) and int(lp) > 0:
            try:
                os.kill(int(lp), 0)
                alive = True
            except PermissionError:
                alive = True
            except OSError:
                alive = False
            if alive:
                raise Fail("a cluster is running in %s (launcher pid %s): choose another --name" % (rundir, lp))

    # ------------------------------------------------- files to serve
    serve = os.path.join(TOP, "build", "mpirun", o.name)
    shutil.rmtree(serve, ignore_errors=True)
    os.makedirs(os.path.join(serve, "mpi"))
    fetch_cmds = ""
    for f in o.files:
        if not os.path.isfile(f):
            raise Fail("--file %s: no such file" % f)
        b = os.path.basename(f)
        subprocess.run(["cp", f, os.path.join(serve, "mpi", "file-" + b)], check=True)
        mode = "755" if os.access(f, os.X_OK) else "644"
        fetch_cmds += fetch_cmd(o, serve, "mpi/file-" + b, "/home/mpi/" + b, mode) + "\n"
    if o.prog_host:
        if not os.path.isfile(o.prog_host):
            raise Fail("%s: no such file on the host" % o.prog_host)
        subprocess.run(["cp", o.prog_host, os.path.join(serve, "mpi", "prog")], check=True)
        fetch_cmds += fetch_cmd(o, serve, "mpi/prog", "/tmp/mpi/bin/" + os.path.basename(o.prog_host), "755") + "\n"
    # The board needs the driver and dn2-up in the image (build/guest/export).
    # The PMI agent (virtual time) goes into every board image, so that the
    # image stays the same from one mode to the other.
    agent = os.path.join(TOP, "build", "linux-guest", "pmi", "dn2-pmi-agent")
    if o.vt and not os.access(agent, os.X_OK):
        raise Fail("%s is not built (meson compile -C build): --virtual-time needs it" % agent)
    if not os.access(agent, os.X_OK):
        agent = ""
    if " board " in " %s " % o.nets:
        log = os.path.join(serve, "export.log")
        with open(log, "w") as err:
            r = subprocess.run(["bash", os.path.join(HERE, "export-guest.sh")] + ([agent] if agent else []),
                               stdout=subprocess.DEVNULL, stderr=err)
        if r.returncode != 0:
            raise Fail("scripts/export-guest.sh failed (the driver and dn2-up for the board): %s" % last_line(log))

    script = os.path.join(serve, "node.sh")
    with open(script, "w") as f:
        f.write(node_script(o, fetch_cmds, random.randrange(32768) % 30000 + 1000))

    # --------------------------------------------------------------- launch
    mem = o.mem
    if not mem:
        r = subprocess.run(["bash", os.path.join(HERE, "build-initramfs.sh")] + img_args(o),
                           stdout=subprocess.PIPE, text=True)
        if r.returncode != 0:
            raise Fail("building the MPI image failed (scripts/build-initramfs.sh %s)" % " ".join(img_args(o)))
        img = r.stdout.rstrip("\n")
        sized = mpi_mem_for(img, o.ppn)
        if sized is None:
            raise Fail("cannot size guest memory from %s: give -m" % img)
        mem = str(sized[0])
        if not o.quiet and sized[0] > 512:
            say("guest memory: %s MiB, sized from the image (%s; -m sets it)" % (mem, sized[1]))
    cl_args, env = cluster_args(o, mem, serve, script)
    if not o.quiet:
        say("%d ranks (%d nodes x %d), networks:%s: %s"
            % (o.np, o.nodes, o.ppn, o.nets, (o.joblist + "\n").replace("\t", " ").replace("\n", ";")))
    with open(os.path.join(serve, "jobs"), "w") as f:
        f.write(o.joblist + "\n")
    # A dead run's directory under this name: gone now, so that nothing of it
    # is streamed (cluster.sh would remove it too, but only after its image).
    shutil.rmtree(rundir, ignore_errors=True)
    cmd_json = json.dumps([script_path] + list(orig_args))
    # The streamer ignores Ctrl-C (as a shell's background job does): it
    # writes the results once cluster.sh has ended.
    streamer = subprocess.Popen(
        [py, "-u", "-m", "dn2scripts.mpirun_stream", rundir, os.path.join(serve, "cluster.rc"), str(o.nodes),
         str(o.ppn), os.path.join(serve, "jobs"), o.junit, os.path.join(serve, "status"), o.name, o.timeout_s,
         o.stats, cmd_json],
        env=streamer_env(env), preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
    # cluster.sh in the foreground: Ctrl-C reaches it; this process waits
    # for it (a handler, not SIG_IGN, so that cluster.sh's own trap works);
    # its stdout (the nodes' output again, at the end) is kept.
    os.makedirs(os.path.join(TOP, "build", "cluster"), exist_ok=True)
    out = os.path.join(TOP, "build", "cluster", o.name + ".mpi.out")
    interrupted = []
    old = signal.signal(signal.SIGINT, lambda *_: interrupted.append(1))
    with open(out, "wb") as f:
        p = subprocess.Popen(["bash", os.path.join(HERE, "cluster.sh")] + cl_args + o.cl_opts, stdout=f, env=env)
        rc = wait(p)
    if rc == 128 + signal.SIGINT and p.returncode < 0:
        # (cluster.sh died of Ctrl-C itself: so does this, as a shell would)
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
    signal.signal(signal.SIGINT, old)
    with open(os.path.join(serve, "cluster.rc"), "w") as f:
        f.write("%d\n" % rc)
    src = wait(streamer)
    if o.stats:
        sys.stderr.write(board_sums(rundir) + "\n")
    status_file = os.path.join(serve, "status")
    if src != 0 or not (os.path.isfile(status_file) and os.path.getsize(status_file) > 0):
        # Nothing is lost: the nodes' output as cluster.sh printed it.
        say("warning: streaming the output failed (status %d); the nodes' output as cluster.sh printed it:" % src)
        sys.stdout.flush()
        with open(out, "rb") as f:
            for line in f:
                sys.stdout.buffer.write(re.sub(rb"^node[0-9]+\| ", b"", line))
        sys.stdout.flush()
        return rc
    status = open(status_file).read().rstrip("\n")
    if not o.quiet and os.path.isfile(os.path.join(rundir, "result.json")):
        say("results: %s%s" % (os.path.join(rundir, "result.json"), ", " + o.junit if o.junit else ""))
    if status != str(rc) and rc == 1 and not o.quiet:
        say("exit status %s: the first rank that failed" % status)
    return int(status) & 255


def cluster_args(o, mem, serve, script):
    """cluster.sh's arguments and its environment: this one's, without the
    scripts directory that the entry point put first on PYTHONPATH."""
    grace = o.timeout_s if o.keep_going else "15"     # a failed job does not end the run
    env = dict(os.environ)
    if o.vt:
        # No job server: the node's script (the program and files inside) is
        # the command given at boot.  A failed job ends every node through the
        # agents; the grace (wall time) only bounds a node that hangs.
        if not o.keep_going:
            grace = "300"
        cl = ["-n", str(o.nodes), "--mpi", "-m", mem, "-t", o.timeout_s, "-g", grace, "--name", o.name, "-f", script,
              "--virtual-time", "--vt-start", o.vt_start] + o.vt_opts
        env["DN2_MPIRUN_VT"] = "1"
    else:
        cl = ["-n", str(o.nodes), "--mpi", "-m", mem, "-t", o.timeout_s, "-g", grace, "--name", o.name,
              "--serve-dir", serve, "-f", script]
    if " tcp " in " %s " % o.nets:
        cl.append("--ethernet")
    if o.packages:
        cl += ["--packages", o.packages]
    cl += rel_args(o)
    if o.quiet:
        cl.append("-q")
    if o.stats:
        cl.append("--board-stats")
    path = env.get("PYTHONPATH", "").split(":")
    if path[0] == HERE:
        if path[1:]:
            env["PYTHONPATH"] = ":".join(path[1:])
        else:
            del env["PYTHONPATH"]
    return cl, env


def streamer_env(env):
    """The streamer's environment: cluster.sh's, with the package on the path."""
    env = dict(env)
    env["PYTHONPATH"] = HERE + (":" + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def wait(p):
    """A child's exit status as a shell gives it (128 + N for signal N)."""
    while True:
        try:
            rc = p.wait()
            break
        except InterruptedError:
            continue
    return 128 - rc if rc < 0 else rc


def last_line(path):
    try:
        lines = open(path, errors="replace").read().split("\n")
    except OSError:
        return ""
    while lines and not lines[-1]:
        lines.pop()
    return lines[-1] if lines else ""


def main(argv=None):
    argv = sys.argv if argv is None else argv
    script_path, args = argv[1], argv[2:]
    prog = os.path.basename(script_path)
    try:
        o = parse(args, os.environ)
        if o.help:
            sys.stdout.write(usage_text(script_path))
            return 0
        settle(o, tell=note)
    except Usage as e:
        sys.stderr.write("%s: %s (see --help)\n" % (prog, e))
        return 2
    if not o.name:
        o.name = "mpi-%s-%d" % (time.strftime("%Y%m%d-%H%M%S"), os.getpid())
    if o.dry_run:
        mem_text = o.mem
        if not o.mem:
            # The plan builds nothing: sized from the image only if it is built.
            r = subprocess.run(["bash", os.path.join(HERE, "build-initramfs.sh"), "--print"] + img_args(o),
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
            img = r.stdout.rstrip("\n") if r.returncode == 0 else ""
            sized = mpi_mem_for(img, o.ppn, quiet_errors=True) if img and os.path.isfile(img) else None
            mem_text = ("%d (sized from the image: %s)" % sized) if sized else "from the image (not built yet)"
        sys.stdout.write("".join(l + "\n" for l in plan_lines(o, mem_text)))
        return 0
    try:
        return launch(o, script_path, args)
    except Fail as e:
        say("error: %s" % e)
        return 4


if __name__ == "__main__":
    sys.exit(main())
