#!/usr/bin/env bash
# Boots a cluster of Linux guests, each with a DIMMnet-2 board, all attached
# to one dn2-switch, and runs a command on every node (docs/cluster.md).
#
#   scripts/cluster.sh [options] [-- extra QEMU arguments for every node]
#                         a one-shot run (-r or -f), or -i (until Ctrl-C)
#   scripts/cluster.sh --help
#
# A kept cluster (docs/cluster.md, "Kept clusters"), by NAME:
#   start NAME [options] [-- QEMU args]   boots it in the background (the
#                         options as above, -r runs first; no --virtual-time)
#                         and returns once every node serves jobs: 0, or the
#                         launcher's status with the node and why
#   exec NAME [--node I|all] [-t S] CMD...  runs CMD on every node (or node
#                         I); its output as nodeI| lines; exit 0, 1 (a
#                         node's CMD failed), 3 (a node is dead), 124
#   console NAME I        a shell on node I (Ctrl-] leaves)
#   cp NAME FILE :/PATH   a host file to every node (I:/PATH: node I; PATH
#                         a directory or ending in / takes FILE's name)
#   cp NAME I:/PATH FILE  node I's file to the host (at most 64 MiB)
#   status [NAME]         nodes (up, DEAD and why), each board's link state,
#                         LID and packets (the switch's view), the boards'
#                         counters (--board-stats), uptime; no NAME: every
#                         running cluster
#   list                  every cluster in build/cluster: running or not
#   stop NAME             stops it: QEMUs, switch, job server, pollers;
#                         says which node had died and why (exit 3 then)
#   snapshot [--drain S] NAME TAG  saves the running cluster NAME at one
#                         consistent cut into build/snapshots/TAG (every
#                         node's QEMU, the LIDs, the job's identity); it runs
#                         on.  The cut gets S seconds (default 30): every
#                         vCPU stopped until the fabric drains (up to 1 s,
#                         then the guests run 0.5-4 s and it is tried anew,
#                         so a guest can empty a full ring); refused with the
#                         reason where no cut can be consistent (several
#                         hosts, virtual time, --ethernet, traffic that
#                         cannot drain)
#   start NAME --from TAG [-q] [-b S] [--board-stats] [--junit FILE]
#                         restores snapshot TAG as cluster NAME (its options
#                         are the snapshot's): the nodes load their memory,
#                         the boards get their LIDs back on a new switch,
#                         and it serves jobs as the cluster did at the cut.
#                         The job server listens on the snapshot's port (the
#                         guests know it): the cluster it was taken from
#                         must be stopped
# NAME is a plain name: build/cluster/NAME is its run directory.  A NAME
# that runs cannot be started again; a stopped one is replaced.
# The older spellings work on a -i cluster's directory (-d RUNDIR; default
# build/cluster/latest, which every later run re-points: name the cluster):
#   scripts/cluster.sh exec [-d RUNDIR] [-t S] CMD...
#   scripts/cluster.sh console [-d RUNDIR] NODE
#
#   -n, --nodes N         number of nodes (default 2)
#   -r, --run CMD         command every node runs (busybox sh; any quoting;
#                         "{node}" and "{rank}" are replaced by the node
#                         number, also in exec's CMD)
#   -f, --file SCRIPT     run this script file on every node instead
#   -i, --interactive     development mode: the nodes stay up after the
#                         command (if any) until Ctrl-C; each serves a shell
#                         (console) and runs jobs sent with "exec"
#   -t, --timeout S       batch mode: seconds for the whole run (default 900)
#   -b, --boot-timeout S  seconds for every node to boot, see its link up and
#                         join (default 300)
#   -g, --grace S         once a node's command failed, seconds the others
#                         still get to finish (default 30)
#   -m, --mem MB          guest memory (default: sized from the guest image,
#                         which unpacks into it: at least 256; a node whose
#                         image did not fit fails with the size to give)
#       --smp N           guest CPUs (default 1)
#       --wid W           the WID every rank uses in the rank table (default 0)
#       --name NAME       run directory build/cluster/NAME (default: a
#                         timestamp; build/cluster/latest points to the last)
#       --switch-port P   UDP port of the switch (default 0: a free one)
#       --http-port P     TCP port of the job/file server (default 0: free)
#       --switch-opts S   extra dn2-switch options (word-split), e.g.
#                         "--pcap build/cap.pcap" or "--drop 0.01"
#       --device-opts S   appended to every node's -device dimmnet2,...
#                         (e.g. "rx-thread=off", "fifo-depth=16"; the
#                         environment's DN2_DEVICE_GLOBALS, e.g. strict=on,
#                         is appended too, as for the guest suites)
#       --secret-file F   a cluster secret (docs/security.md): the switch
#                         gets --secret-file F, every board secret= from a
#                         -object secret reading F (mode 0600 or stricter)
#       --packages 'P...' Debian packages (with their dependency closure)
#                         added to the guest image (build-initramfs.sh
#                         --packages; also DN2_GUEST_PACKAGES)
#       --mpi             the MPI image (build-initramfs.sh --mpi: Open MPI,
#                         libfabric, NetPIPE, HPCC, mplrs, and under
#                         /opt/dn2 the PMI library, PMIx server and provider
#                         from the build; docs/mpi.md)
#       --guest-release R the Debian release of the image's packages (--mpi,
#                         --packages): bookworm (default) or trixie (Open
#                         MPI 5; build-initramfs.sh --guest-release)
#       --serve-dir DIR   the file server also serves DIR (after the run's
#                         own files, before build/guest/export/)
#       --slice US        the QEMUs, the switch and the Ethernet hub run with
#                         a CPU time slice of US microseconds (Linux 6.12+
#                         EEVDF custom slice, scripts/sched-slice.py), so a
#                         thread woken by a datagram or a timer preempts a
#                         busy one at once; default 100, 0 keeps the
#                         kernel's (docs/cluster.md, "Host scheduling")
#       --pause-yield on|off  a guest's spin-wait hint (PAUSE) yields the
#                         vCPU's host thread to the QEMU threads and the
#                         switch waiting for a CPU (-accel tcg,pause-yield=on,
#                         a patch of the project's QEMU); default on, off
#                         under --virtual-time (a board in lock-step waits
#                         for its grant without spinning)
#       --board-stats     every node gets a QMP socket, and a poller keeps the
#                         boards' latest stat-* counters in
#                         RUNDIR/board-stats/nodeI ("name=value" lines)
#       --ethernet        a second NIC per node on a guest-to-guest Ethernet
#                         (QEMU dgram netdevs to dn2-ethhub on 127.0.0.1):
#                         eth1 = 192.168.77.(10+i)/24 inside the guests
#       --ethernet-mtu N  that network's MTU (default 1500)
#   -a, --append ARGS     extra kernel command-line arguments
#       --hosts H1,H2,... place the nodes on these hosts, node i on host
#                         i mod count (docs/cluster.md, "Over several
#                         hosts"); the work tree (QEMU, kernel, image, run
#                         directory) must be at the same path on every host
#       --rsh CMD         how to run a command on a host (default ssh, as
#                         Open MPI's plm_rsh_agent): CMD HOST COMMAND...; a
#                         CMD whose first word is ssh or rsh gets the
#                         command as one string for the remote shell, any
#                         other (e.g. "ip netns exec", "srun -w") its words
#       --switch-host H   the host that runs the switch (default: the first)
#       --switch-addr A   the switch's address as the boards see it
#                         (default: the first of `hostname -I` on that host)
#       --addr A          this host's address as the guests see it (the job
#                         server listens there; default: the first of
#                         `hostname -I`)
#       --no-slurm        inside a Slurm allocation (SLURM_JOB_NODELIST set)
#                         and without --hosts, the nodes go on the
#                         allocation's hosts, started with srun; this
#                         keeps them here
#   -q, --quiet           no progress display; only the nodes' output and
#                         the summary
#       --node-qemu I ARGS  extra QEMU arguments (word-split) for node I only
#                         (repeatable)
#       --junit FILE      also write JUnit XML: one test case per node, a
#                         failure with the tail of its output and console
#                         (RUNDIR/result.json is always written)
#
# Virtual time (docs/cluster.md, "Virtual time"; one-shot runs, -r or -f):
#       --virtual-time    lock-step virtual time: the same run gives the
#                         same output on any host under any load.  Every
#                         node runs under TCG with -icount (one vCPU; no
#                         --smp, -i, --ethernet, --serve-dir: those bring
#                         input from the host at host-dependent times; --mpi
#                         is the image only: MPI jobs in virtual time are
#                         scripts/mpirun.sh --virtual-time's, whose PMI goes
#                         over the boards), no user network and no job server: the
#                         rank table and the command reach the guests as
#                         fw_cfg files; board i gets vtime=on, lid= the
#                         LID of node i, pcap=RUNDIR/nodeI.pcap; the switch
#                         --virtual-time --vt-boards N
#       --vt-shift N      -icount shift=N: one instruction is 2^N virtual
#                         ns (default 0)
#       --vt-insn-ps P    -icount insn-ps=P instead: one instruction is P
#                         virtual picoseconds (1..1024000; QEMU with the
#                         project's patch; sets DN2_VT_INSN_PS; not with
#                         --vt-shift)
#       --vt-lookahead NS the switch's --vt-lookahead and every board's
#                         vt-latency-ns (default 1000)
#       --vt-start S      the virtual time (seconds) at which the lock-step
#                         begins (every board's vt-start-ns): before it each
#                         guest boots alone at -icount speed and sees its
#                         link down (default 3; 0 = lock-step from the start)
#       --vt-quantum NS   the switch's --vt-quantum: delivery times rounded
#                         up to NS, fewer synchronisation rounds (default:
#                         the switch's, exact)
#       --vt-sync udp|shm how the boards of this host keep the lock-step:
#                         udp (default) through the switch's reports and
#                         grants; shm through a sync domain in shared
#                         memory (RUNDIR/vt.shm, made by the switch; futex
#                         waits, packets between boards in its rings): the
#                         same run, the same output and pcap; one host only
#       --no-vt-sync      as --virtual-time, but the boards and the switch
#                         without virtual time (the cost baseline of
#                         scripts/bench-vt.sh: not deterministic across
#                         nodes)
#       --replay RUNDIR   run a --virtual-time run again from what its run
#                         directory recorded (options, command, rank table,
#                         guest image, QEMU, kernel); only --name, -q, -t,
#                         -b, --gdb, --gdb-port, --switch-opts (e.g.
#                         other fault options) and --vt-sync (the other
#                         transport) may be given: they must not change
#                         the result; at the end each node's
#                         output and pcap are compared with the recorded
#                         run's: the first difference is named and the
#                         exit status is 5 (when nothing else failed)
#       --gdb I           (with --replay) node I waits for gdb at start
#                         (QEMU -gdb tcp:127.0.0.1:P -S): under -icount it
#                         runs the same instructions at the same virtual
#                         times, and the other nodes wait for it; no
#                         timeouts
#       --gdb-port P      its port (default 1234)
#       --snapshot-at VT TAG  (with --virtual-time) every board stops its
#                         guest at virtual time VT (seconds, after
#                         --vt-start), the cluster is saved there into
#                         build/snapshots/TAG and the run goes on to its
#                         end; scripts/cluster.sh --replay
#                         build/snapshots/TAG runs it again from VT and
#                         compares every output and pcap with the run's
#
# Node i is rank i: its board has guid=i+1, its kernel command line
# dn2.node=i dn2.nodes=N.  At boot each node waits for its link, reports
# its LID to the job server, waits for the rank table (lines "rank lid wid")
# and only then runs the command, with DN2_NODE, DN2_NODES, DN2_RANK,
# DN2_LID, DN2_WID, DN2_RANKS (/opt/dn2/ranks) and DN2_HTTP (the server's
# URL, with the node's credential) in its environment.  The server
# (scripts/pmi-server.py on 127.0.0.1, reached by the guests as
# http://10.0.2.2:PORT) also serves build/guest/export/, so a rebuilt module
# or program can be fetched into a running guest with wget $DN2_HTTP/FILE.
# It serves nothing without a credential: node i's token, derived from the
# run's secret (RUNDIR/secret, 0600; RUNDIR is 0700), reaches node i as a
# QEMU fw_cfg file, never on a command line (docs/security.md).
#
# Prints each node's output prefixed by "nodeI| " (also kept unprefixed in
# RUNDIR/nodeI.out) and a summary.  RUNDIR/result.json holds every node's
# state, exit status, duration, failure reason, logs and board counters.  Exit status: 0 every node's command
# succeeded; 1 a command failed; 2 a usage error (before anything starts,
# one line on stderr); 3 a node failed to boot, died or could not start the
# job; 4 setup error (missing build, port busy...); 5 a --replay whose
# outputs or pcaps differ from the recorded run's (the first difference
# is named); 124 timeout (as timeout(1)).  "exec" exits 0, 1, 2, 3 (the cluster stopped), 4 (no
# running cluster) or 124 alike.  "--opt=value" is "--opt value".
# On failure the tail of the console of each node concerned is printed.
#
# Environment: QEMU, DN2_ACCEL, DN2_KERNEL, DN2_CACHE (as run-guest.sh),
# DN2_SWITCH (the dn2-switch binary; default build/fabric/dn2-switch),
# DN2_ETHHUB (--ethernet's hub; default build/tools/dn2-ethhub),
# SLURM_JOB_NODELIST (see --no-slurm).

# The launcher and its subcommands are the package scripts/dn2scripts/cluster
# (run by this entry point with the python3 on PATH; one module per
# subcommand, the options and the launch plan apart from what runs them);
# this header is its --help.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
command -v python3 > /dev/null || {
    printf '[cluster] error: %s\n' "python3 not found (it runs the launcher and the job server): apt-get install python3" >&2
    exit 4
}
PYTHONPATH=$here${PYTHONPATH:+:$PYTHONPATH} PYTHONDONTWRITEBYTECODE=1 exec python3 -m dn2scripts.cluster "$0" "$@"
