#!/usr/bin/env bash
# Runs an MPI program (Debian's Open MPI 4.1; 5.0 with --guest-release
# trixie) on a cluster of DIMMnet-2 guests: boots the nodes with the MPI
# image (scripts/cluster.sh --mpi),
# starts the ranks on them (no mpirun, no ssh: Open MPI's direct launch as a
# client of a PMIx server on each node, dn2-pmix-server, or through our PMI-1
# library, libpmi-dn2.so; both talk to the launcher's job server), streams
# their output, waits for them and tears the cluster down.
# docs/mpi.md.
#
#   scripts/mpirun.sh [-np RANKS] [-N NODES] [--ppn P] [options] -- PROGRAM [ARGS...]
#   scripts/mpirun.sh [-np RANKS] [-N NODES] [--ppn P] [options] --job NET:CMD [--job NET:CMD...]
#   scripts/mpirun.sh ... --dry-run     print the plan, start nothing
#   scripts/mpirun.sh --help
#
#   -np, -n, --np N     ranks (Open MPI's -np/-n); with --ppn the node count
#                       follows (N / P nodes), alone one rank per node
#   -N, --nodes N       nodes (srun's -N), 1..64 (default 2, or from -np)
#       --ppn P         ranks per node, 1 or 2 (default 1, or -np / -N); on
#                       the board the two ranks of a node use WID 0 and WID 1
#   -x VAR[=VAL]        environment for every rank (Open MPI's -x; VAR alone
#                       passes this shell's value; repeatable); --env VAR=VAL
#                       is the old spelling (accepted, with a note)
#       --net NET       board  the DIMMnet-2 boards: PML cm, MTL ofi, the
#                              libfabric provider "dimmnet2" (its native
#                              RDM endpoint; --ofi chooses another)
#                       tcp    TCP over the guest-to-guest Ethernet (eth1,
#                              192.168.77.0/24 behind dn2-ethhub on
#                              127.0.0.1): PML ob1, BTL tcp,vader,self
#                       shm    one node only: BTL vader,self
#                       (default: board when the provider is built, else tcp)
#       --ofi PROV      the libfabric provider Open MPI's ofi MTL takes on
#                       the board (mtl_ofi_provider_include): dimmnet2
#                       (default: native RDM + FI_TAGGED) or
#                       'dimmnet2;ofi_rxd' (ofi_rxd over the DGRAM core)
#       --pmi PMI       how the ranks learn who they are (DN2_MPI_PMI sets
#                       the default):
#                       pmix   a PMIx server on each node (dn2-pmix-server,
#                              on Debian's OpenPMIx), Open MPI's pmix/ext3x
#                              as its client; fences travel over the job
#                              server (--virtual-time: the PMI agents)
#                       pmi1   libpmi-dn2.so, the PMI-1 library, through
#                              Open MPI 4.1's flux component
#                       (default: pmix when dn2-pmix-server is built, else
#                       pmi1)
#       --guest-release R  the Debian release of the MPI image
#                       (DN2_GUEST_RELEASE sets the default): bookworm
#                       (default; Open MPI 4.1)
#                       or trixie (Debian 13: Open MPI 5.0, PMIx only, so
#                       --pmi pmix; btl sm instead of vader, no osc pt2pt;
#                       dn2-pmix-server and the provider built against
#                       trixie's libraries by the image build)
#       --job NET:CMD   instead of PROGRAM: a job whose ranks run the shell
#                       command CMD (sh -c) over NET; several --job run one
#                       after the other in the same guests (board against
#                       tcp: scripts/bench-mpi.sh); output lines are then
#                       prefixed "[J.R] " (job J, rank R)
#       --keep-going    with several --job: run the next job even when one
#                       failed (the exit status is still the first failure)
#       --file F        copy host file F into every rank's working
#                       directory (/home/mpi) first (repeatable)
#       --packages 'P'  extra Debian packages in the MPI image
#   -t, --timeout S     whole run (default 900)
#   -m, --mem MB        guest memory (default: sized from the MPI image and
#                       the ranks per node, at least 512; docs/mpi.md)
#       --name NAME     run directory build/cluster/NAME
#       --junit FILE    also write JUnit XML to FILE: one test case per rank,
#                       a failed rank's case carrying the tail of its output
#       --dry-run, --print-plan   print the plan (nodes, ranks per node,
#                       each rank's node and WID, networks, the jobs, the
#                       -x environment) and exit 0: nothing is built or booted
#       --switch-opts S, --device-opts S, --secret-file F   as cluster.sh
#       --board-stats   read the boards' counters over QMP while the job runs
#                       (cluster.sh --board-stats) and print the sums of
#                       tx/rx packets and bytes over all boards at the end
#       --cluster-opt A an extra cluster.sh argument (repeatable)
#       --virtual-time  lock-step virtual time (cluster.sh --virtual-time
#                       --mpi): the same run gives the same output and the
#                       same board traces on any host.  No job server: PMI
#                       goes over the boards (a dn2-pmi-agent per node on the
#                       node's second WID, so --ppn 1 only), the program and
#                       the --files travel inside the node's command (a
#                       fw_cfg file); --net board only
#       --vt-start S, --vt-quantum NS, --vt-lookahead NS, --vt-sync udp|shm
#                       passed to cluster.sh (docs/virtual-time.md); here
#                       --vt-start defaults to 5 (the MPI image boots longer)
#   -q, --quiet         no progress display
#
# PROGRAM is run as it is given, with ARGS unchanged, as the unprivileged
# user "mpi" (uid 1000) in /home/mpi.  When PROGRAM names a file on the host
# (it contains a "/", e.g. ./a.out or build/tests/mpi/mpi-check), that file
# is copied to the guests first; otherwise it is a command of the image
# (NPopenmpi, hpcc, mplrs, fi_info...).  Build your own program with mpicc on
# the host (Debian's libopenmpi-dev: the same Open MPI as in the image).
# Rank r runs on node r / P (P ranks per node).
#
# Output: every rank's output (stdout and stderr) as it is printed, each
# line prefixed "[R] " (a program's own stdio buffering applies: C's stdout
# into a pipe is block-buffered unless flushed, as under Open MPI's mpirun);
# other lines of the node's script are prefixed "nodeI| ".
# Results: build/cluster/NAME/result.json (per node and per rank: exit
# status, duration, logs, board counters) and the ranks' output in
# build/cluster/NAME/ranks/R.out (J.R.out with several --job).
# Exit status: 0 every rank exited 0; the exit status of the first rank that
# failed (e.g. 3 for exit(3), the code of MPI_Abort); 1 the job failed
# without a rank's status (a node's set-up failed); 2 a usage error (before
# anything starts, one line on stderr); otherwise cluster.sh's (3 a node
# failed, 4 setup, 124 timeout, 130 interrupted).  "--opt=value" is
# "--opt value".  The privileged set-up (driver, board bring-up, device
# permissions) is done once per node by the node's script, as root.
#
# Environment: DN2_FI_PROVIDER (the provider's .so; default: the one built
# under build/), DN2_MPI_OFI (the default of --ofi), and cluster.sh's (QEMU, DN2_SWITCH, DN2_CACHE...).

# The launcher is scripts/dn2scripts/mpirun.py (run by this entry point with
# the python3 on PATH); this header is its --help.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
command -v python3 > /dev/null || {
    printf '[mpirun] error: %s\n' "python3 not found (it runs the launcher, streams the ranks' output and writes result.json): apt-get install python3" >&2
    exit 4
}
PYTHONPATH=$here${PYTHONPATH:+:$PYTHONPATH} PYTHONDONTWRITEBYTECODE=1 exec python3 -m dn2scripts.mpirun "$0" "$@"
