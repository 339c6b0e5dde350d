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
#                         on.  The fabric gets S seconds (default 10) to
#                         drain with every vCPU stopped; refused with the
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
#                         libfabric, NetPIPE, HPCC, mplrs; docs/mpi.md)
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
#                         a patch of the project's QEMU); default on
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
#       --no-vt-sync      as --virtual-time, but the boards and the switch
#                         without virtual time (the cost baseline of
#                         scripts/bench-vt.sh: not deterministic across
#                         nodes)
#       --replay RUNDIR   run a --virtual-time run again from what its run
#                         directory recorded (options, command, rank table,
#                         guest image, QEMU, kernel); only --name, -q, -t,
#                         -b, --gdb, --gdb-port and --switch-opts (e.g.
#                         other fault options: they must not change the
#                         result) may be given; at the end each node's
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
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"

CLUSTER_DIR=$DN2_TOP/build/cluster
EXPORT_DIR=${DN2_GUEST_EXPORT:-$DN2_TOP/build/guest/export}

if [ -t 2 ]; then B=$'\e[1m'; G=$'\e[32m'; R=$'\e[31m'; Y=$'\e[33m'; N=$'\e[0m'; else B='' G='' R='' Y='' N=''; fi
say() { printf '[cluster] %s\n' "$*" >&2; }
setup_die() { printf '[cluster] %serror:%s %s\n' "$R" "$N" "$*" >&2; exit 4; }

# The real interpreter (a pyenv shim forks, which would hide the server
# from its process id).
find_python() {
    command -v python3 >/dev/null || return 1
    python3 -c 'import sys; print(sys.executable)' 2>/dev/null
}
# The scripts' Python modules (scripts/dn2scripts) run as
#   PYTHONPATH=$dn2_pypath "$py" -m dn2scripts.MODULE ARGS...
dn2_pypath=$here${PYTHONPATH:+:$PYTHONPATH}

# ====================================================================
# The job and file server: scripts/pmi-server.py (python3, standard library
# only; docs/cluster.md, "The job server")
# ====================================================================

# A raw terminal to a node's shell socket (cluster.sh console).
# (scripts/dn2scripts/console.py)

# ====================================================================
# Subcommands on a running cluster
# ====================================================================
# valid_name WORD: a usage error unless WORD can name a cluster (a plain
# name: build/cluster/NAME).
valid_name() {
    case $1 in
        '') usage_error "$2: the cluster's NAME is missing" ;;
        -*) usage_error "$2: the cluster's NAME comes first, not '$1'" ;;
        */*|.|..|.*|latest|*[[:space:]]*) usage_error "$2: '$1' cannot name a cluster (a plain name: build/cluster/NAME)" ;;
    esac
}
# is_cluster WORD: true when build/cluster/WORD holds a cluster (running or not)
is_cluster() {
    case $1 in ''|-*|*/*|.|..|.*|latest) return 1 ;; esac
    [ -f "$CLUSTER_DIR/$1/info" ] && [ ! -L "$CLUSTER_DIR/$1" ]
}
# find_run DIR: a running cluster's directory (default: build/cluster/latest)
find_run() {
    local d=${1:-$CLUSTER_DIR/latest} what
    what=${2:-the cluster in $d}
    [ -f "$d/info" ] || setup_die "no cluster in ${d} (start one with: scripts/cluster.sh start NAME, or -i)"
    d=$(cd "$d" && pwd -P)
    launcher_pid=0 interactive=0
    # shellcheck disable=SC1091
    . "$d/info"
    [ "${launcher_pid:-0}" -gt 0 ] && kill -0 "$launcher_pid" 2>/dev/null || setup_die "$what is not running (scripts/cluster.sh status${2:+ ${2#cluster }} says how it ended)"
    [ "$interactive" = 1 ] || setup_die "$what was not started with start or -i: it runs no jobs"
    echo "$d"
}
# named_run NAME: the directory of the running cluster NAME
named_run() {
    is_cluster "$1" || setup_die "no cluster named '$1' (scripts/cluster.sh list shows them)"
    find_run "$CLUSTER_DIR/$1" "cluster $1"
}

# node_state DIR I: "PHASE LID RC WHY" of node I as the launcher last saw it
# (RUNDIR/state), or "unknown".
node_state() {
    local l
    l=$(awk -v n="$2" '$1 == n { $1 = ""; sub(/^ /, ""); print; exit }' "$1/state" 2>/dev/null)
    echo "${l:-unknown - - }"
}

# Jobs (the guests long-poll the job server for RUNDIR/jobs/ID.sh; each node
# posts RUNDIR/jobs/ID.nodeI.out and .rc).
# job_submit DIR TEXT: prints the new job's id
job_submit() {
    local dir=$1 id
    mkdir -p "$dir/jobs"
    exec 8> "$dir/jobs/.lock"
    flock 8
    id=$(find "$dir/jobs" -maxdepth 1 -name '*.sh' -printf '%f\n' | sed -n 's/^\([0-9][0-9]*\)\.sh$/\1/p' | sort -n | tail -1)
    id=$(( ${id:-0} + 1 ))
    printf '%s\n' "$2" > "$dir/jobs/$id.sh.tmp"
    mv "$dir/jobs/$id.sh.tmp" "$dir/jobs/$id.sh"
    exec 8>&-
    echo "$id"
}
# job_wait DIR ID TIMEOUT NODE...: until every NODE reported job ID, or is
# dead (the launcher's RUNDIR/state); sets job_rc[I] (the status, or "dead"
# or "none"); returns 0, 124 (timeout) or 3 (the cluster stopped).
declare -a job_rc
job_wait() {
    local dir=$1 id=$2 to=$3 t0=$SECONDS i n ph ret=0
    shift 3
    while :; do
        n=0
        for i in "$@"; do
            if [ -f "$dir/jobs/$id.node$i.rc" ]; then
                n=$((n + 1))
            else
                read -r ph _ <<< "$(node_state "$dir" "$i")"
                [ "$ph" = failed ] && n=$((n + 1))
            fi
        done
        [ "$n" -eq $# ] && break
        if [ $((SECONDS - t0)) -ge "$to" ]; then
            say "${R}timeout${N}: after $to s, $n of $# nodes finished job $id"
            ret=124; break
        fi
        kill -0 "$launcher_pid" 2>/dev/null || { say "${R}the cluster stopped${N}"; ret=3; break; }
        sleep 0.2
    done
    for i in "$@"; do
        if [ -f "$dir/jobs/$id.node$i.rc" ]; then
            job_rc[i]=$(cat "$dir/jobs/$id.node$i.rc")
        else
            read -r ph _ <<< "$(node_state "$dir" "$i")"
            if [ "$ph" = failed ]; then job_rc[i]=dead; else job_rc[i]=none; fi
        fi
    done
    return $ret
}
# job_nodes SEL: the node numbers SEL ("all" or one number) stands for
job_nodes() {
    if [ "$1" = all ]; then seq 0 $((nodes - 1)); else echo "$1"; fi
}
# job_text SEL CMD: the job for the nodes SEL: a job runs on every node
# (the job server hands each job to all); a first line makes the others
# skip it
job_text() {
    [ "$1" = all ] || printf '[ "$DN2_NODE" = %d ] || exit 0\n' "$1"
    printf '%s\n' "$2"
}
# want_node SEL OP: a usage error unless SEL is "all" or a node of the cluster
want_node() {
    [ "$1" = all ] && return 0
    dn2_want_uint "$2" "$1"
    [ "$1" -lt "$nodes" ] || usage_error "$2: the cluster has nodes 0..$((nodes - 1)), not $1"
}
# shq WORD: WORD quoted for the guests' busybox sh
shq() { printf "'%s'" "${1//\'/\'\\\'\'}"; }

cmd_exec() {
    local dir='' timeout_s=600 cmd id i rc all=0 name='' sel=all list
    # (split by hand: "--opt=value" words of CMD are CMD's)
    while [ $# -gt 0 ]; do
        case $1 in
            --dir=*|--timeout=*|--node=*) set -- "${1%%=*}" "${1#*=}" "${@:2}"; continue ;;
            -d|--dir) dn2_need_value "$@"; dir=$2; shift 2 ;;
            -t|--timeout) dn2_need_value "$@"; dn2_want_uint "$1" "$2"; timeout_s=$2; shift 2 ;;
            --node) dn2_need_value "$@"; sel=$2; shift 2 ;;
            -h|--help) dn2_usage; exit 0 ;;
            --) shift; break ;;
            *)  # exec NAME CMD: a cluster's name, then the command
                if [ -z "$name" ] && [ -z "$dir" ] && [ $# -ge 2 ] && is_cluster "$1"; then
                    name=$1; shift; continue
                fi
                break ;;
        esac
    done
    [ $# -gt 0 ] || usage_error "exec: no command (scripts/cluster.sh exec NAME 'CMD')"
    # {rank} is {node}: node i is rank i (the server puts in the number)
    cmd="$*"
    cmd=${cmd//\{rank\}/\{node\}}
    if [ -n "$name" ]; then
        dir=$(named_run "$name") || exit 4
    else
        [ -n "$dir" ] || say "note: no cluster named: this runs on build/cluster/latest ($(readlink "$CLUSTER_DIR/latest" 2>/dev/null || echo none)), which every later run re-points; name it: scripts/cluster.sh exec NAME CMD"
        dir=$(find_run "$dir") || exit 4
    fi
    # shellcheck disable=SC1091
    . "$dir/info"
    want_node "$sel" --node
    id=$(job_submit "$dir" "$(job_text "$sel" "$cmd")") || exit 4
    list=$(job_nodes "$sel")
    say "job $id on $([ "$sel" = all ] && echo "$nodes nodes" || echo "node$sel"): $cmd"
    # shellcheck disable=SC2086
    job_wait "$dir" "$id" "$timeout_s" $list
    all=$?
    for i in $list; do
        rc=${job_rc[i]}
        [ -f "$dir/jobs/$id.node$i.out" ] && sed "s/^/node$i| /" "$dir/jobs/$id.node$i.out"
        if [ "$rc" = 0 ]; then
            say "node$i: ${G}rc=0${N}"
        elif [ "$rc" = dead ]; then
            say "node$i: ${R}dead${N}: $(node_state "$dir" "$i" | cut -d' ' -f4-)"; all=3
        else
            say "node$i: ${R}rc=$rc${N}"; [ "$all" = 0 ] && all=1
        fi
    done
    exit "$all"
}

cmd_console() {
    local dir='' node py name=''
    while [ $# -gt 0 ]; do
        case $1 in
            --?*=*) set -- "${1%%=*}" "${1#*=}" "${@:2}"; continue ;;
            -d|--dir) dn2_need_value "$@"; dir=$2; shift 2 ;;
            -h|--help) dn2_usage; exit 0 ;;
            --) shift; break ;;
            -?*) usage_error "console: unknown argument: $1" ;;
            *) break ;;
        esac
    done
    # console NAME I, or (older) console [-d RUNDIR] NODE
    case ${1:-} in ''|*[!0-9]*) [ $# -ge 1 ] && { name=$1; valid_name "$name" console; shift; } ;; esac
    [ $# -le 1 ] || usage_error "console: one NODE, not '$*'"
    node=${1:-0}
    dn2_want_uint console "$node"
    if [ -n "$name" ]; then
        dir=$(named_run "$name") || exit 4
    else
        dir=$(find_run "$dir") || exit 4
    fi
    # shellcheck disable=SC1091
    . "$dir/info"
    [ "$node" -lt "$nodes" ] || setup_die "console: the cluster has nodes 0..$((nodes - 1))"
    py=$(find_python) || setup_die "python3 not found"
    PYTHONPATH=$dn2_pypath PYTHONDONTWRITEBYTECODE=1 exec "$py" -m dn2scripts.console "$(sed -n "s/^node${node}_sock=//p" "$dir/info")" "node$node"
}

# cp NAME SRC DEST: a host file to nodes (DEST :/PATH every node, I:/PATH
# node I) or a node's file to the host (SRC I:/PATH), through the job
# server: the nodes fetch it from the run's own files, or post it as a job
# result (at most CP_MAX bytes: busybox wget posts a file as a C string, so
# it goes as base64 of its gzip, held in the guest's memory).
CP_MAX=$((64 << 20))
cmd_cp() {
    local timeout_s=600 a=() name src dest sel path base dir id list i rc all=0 tag mode cpid got to
    while [ $# -gt 0 ]; do
        case $1 in
            --?*=*) set -- "${1%%=*}" "${1#*=}" "${@:2}"; continue ;;
            -t|--timeout) dn2_need_value "$@"; dn2_want_uint "$1" "$2"; timeout_s=$2; shift 2 ;;
            -h|--help) dn2_usage; exit 0 ;;
            --) shift; a+=("$@"); break ;;
            -?*) usage_error "cp: unknown argument: $1" ;;
            *) a+=("$1"); shift ;;
        esac
    done
    [ ${#a[@]} -eq 3 ] || usage_error "cp: NAME SRC DEST (e.g. cp NAME FILE :/tmp/FILE, cp NAME FILE 1:/tmp/FILE, cp NAME 1:/tmp/FILE FILE)"
    name=${a[0]} src=${a[1]} dest=${a[2]}
    valid_name "$name" cp
    # (the negative test first: each =~ sets BASH_REMATCH)
    if [[ ! $src =~ ^[0-9]*:/ ]] && [[ $dest =~ ^([0-9]*):(/.*)$ ]]; then
        sel=${BASH_REMATCH[1]:-all} path=${BASH_REMATCH[2]}
        [ -f "$src" ] || usage_error "cp: $src is not a file on this host"
        [ -r "$src" ] || usage_error "cp: cannot read $src"
        dir=$(named_run "$name") || exit 4
        # shellcheck disable=SC1091
        . "$dir/info"
        want_node "$sel" cp
        base=${src##*/}
        mode=$(stat -c %a "$src")
        # The run's own files (RUNDIR/www, private to this run's nodes).
        tag=cp-$$-$RANDOM
        mkdir -p "$dir/www/cp/$tag" && cp "$src" "$dir/www/cp/$tag/file" || setup_die "cannot stage $src in $dir/www/cp"
        # shellcheck disable=SC2016   # expanded in the guests
        id=$(job_submit "$dir" "$(job_text "$sel" "d=$(shq "$path")
case \$d in */) d=\$d$(shq "$base") ;; esac
[ -d \"\$d\" ] && d=\$d/$(shq "$base")
if wget -q -O \"\$d.dn2-part\" \"\$DN2_HTTP/cp/$tag/file\" 2>/tmp/dn2-cp.err && chmod $mode \"\$d.dn2-part\" && mv -f \"\$d.dn2-part\" \"\$d\"; then
    echo \"\$d: \$(wc -c < \"\$d\") bytes\"
else
    rm -f \"\$d.dn2-part\"; echo \"cp: cannot write \$d on node\$DN2_NODE: \$(tail -1 /tmp/dn2-cp.err)\"; exit 1
fi")") || exit 4
        list=$(job_nodes "$sel")
        # shellcheck disable=SC2086
        job_wait "$dir" "$id" "$timeout_s" $list
        all=$?
        rm -rf "${dir:?}/www/cp/$tag"
        for i in $list; do
            rc=${job_rc[i]}
            if [ "$rc" = 0 ]; then
                say "node$i: $(tail -1 "$dir/jobs/$id.node$i.out")"
            else
                [ "$rc" = dead ] && { say "node$i: ${R}dead${N}: $(node_state "$dir" "$i" | cut -d' ' -f4-)"; all=3; continue; }
                say "node$i: ${R}failed${N} (rc=$rc): $(tail -1 "$dir/jobs/$id.node$i.out" 2>/dev/null)"
                [ "$all" = 0 ] && all=1
            fi
        done
        exit "$all"
    elif [[ ! $dest =~ ^[0-9]*:/ ]] && [[ $src =~ ^([0-9]*):(/.*)$ ]]; then
        sel=${BASH_REMATCH[1]} path=${BASH_REMATCH[2]}
        [ -n "$sel" ] || usage_error "cp: a file comes from one node: I:$path, not :$path"
        dir=$(named_run "$name") || exit 4
        # shellcheck disable=SC1091
        . "$dir/info"
        want_node "$sel" cp
        base=${path##*/}
        to=$dest
        [ -d "$to" ] && to=$to/$base
        [ -n "${to##*/}" ] || usage_error "cp: $dest: a directory that does not exist, or no file name"
        [ -d "$(dirname "$to")" ] || usage_error "cp: the directory of $to does not exist"
        # The file comes back as the result of a pseudo job (an id no real
        # job reaches) that the job posts itself.
        cpid=$((1000000000 + RANDOM * 32768 + RANDOM))
        # shellcheck disable=SC2016   # expanded in the guest
        id=$(job_submit "$dir" "$(job_text "$sel" "f=$(shq "$path")
[ -f \"\$f\" ] || { echo \"cp: \$f: no such file on node\$DN2_NODE\"; exit 1; }
s=\$(wc -c < \"\$f\")
[ \"\$s\" -le $CP_MAX ] || { echo \"cp: \$f has \$s bytes: at most $CP_MAX\"; exit 1; }
gzip -c \"\$f\" | base64 > /tmp/dn2-cp.b64 || { rm -f /tmp/dn2-cp.b64; echo \"cp: cannot read \$f\"; exit 1; }
wget -q -O /dev/null --post-file /tmp/dn2-cp.b64 \"\$DN2_HTTP/result?job=\$DN2_JOBID&node=\$DN2_NODE&id=$cpid&rc=0\" 2>/tmp/dn2-cp.err \\
    || { rm -f /tmp/dn2-cp.b64; echo \"cp: sending \$f failed: \$(tail -1 /tmp/dn2-cp.err)\"; exit 1; }
rm -f /tmp/dn2-cp.b64
echo \"\$f: \$s bytes\"")") || exit 4
        job_wait "$dir" "$id" "$timeout_s" "$sel"
        all=$?
        rc=${job_rc[sel]}
        got=$dir/jobs/$cpid.node$sel.out
        if [ "$rc" = 0 ] && [ -f "$got" ]; then
            if base64 -d < "$got" | gzip -dc > "$to.dn2-part" && mv -f "$to.dn2-part" "$to"; then
                say "node$sel:$path -> $to ($(stat -c %s "$to") bytes)"
            else
                rm -f "$to.dn2-part"; say "${R}cannot write $to${N}"; all=4
            fi
        elif [ "$rc" = dead ]; then
            say "node$sel: ${R}dead${N}: $(node_state "$dir" "$sel" | cut -d' ' -f4-)"; all=3
        else
            say "node$sel: ${R}failed${N} (rc=$rc): $(tail -1 "$dir/jobs/$id.node$sel.out" 2>/dev/null)"
            [ "$all" = 0 ] && all=1
        fi
        rm -f "$got" "$dir/jobs/$cpid.node$sel.rc"
        exit "$all"
    fi
    usage_error "cp: one of SRC and DEST is on the nodes: I:/PATH (node I) or :/PATH (every node, as DEST), the other a host path"
}

# sweep DIR: kills what is left of the run in DIR: every process group it
# listed (RUNDIR/pgids) whose processes still name DIR on their command
# line (a process id may have been reused); prints how many groups.
sweep() {
    local dir=$1 g p n=0 hit
    for g in $(cat "$dir/pgids" 2>/dev/null); do
        hit=
        for p in $(pgrep -g "$g" 2>/dev/null); do
            tr '\0' ' ' < "/proc/$p/cmdline" 2>/dev/null | grep -qF -- "$dir" && hit=1
        done
        [ -n "$hit" ] || continue
        kill -KILL -- "-$g" 2>/dev/null && n=$((n + 1))
    done
    echo "$n"
}

# fmt_secs S: "1h02m03s"
fmt_secs() {
    local s=$1
    if [ "$s" -ge 3600 ]; then printf '%dh%02dm%02ds' $((s / 3600)) $((s % 3600 / 60)) $((s % 60))
    elif [ "$s" -ge 60 ]; then printf '%dm%02ds' $((s / 60)) $((s % 60))
    else printf '%ds' "$s"; fi
}

# run_state DIR: "running" (its launcher is alive) or "stopped"
run_state() {
    local launcher_pid=0
    # shellcheck disable=SC1091
    . "$1/info" 2>/dev/null
    if [ "${launcher_pid:-0}" -gt 0 ] && kill -0 "$launcher_pid" 2>/dev/null; then echo running; else echo stopped; fi
}

cmd_status() {
    local name dir st i ph lid rc why sw='' guid line pid alive up show=() n
    while [ $# -gt 0 ]; do
        case $1 in
            -h|--help) dn2_usage; exit 0 ;;
            -?*) usage_error "status: unknown argument: $1" ;;
            *) break ;;
        esac
    done
    [ $# -le 1 ] || usage_error "status: at most one NAME, not '$*'"
    if [ $# -eq 1 ]; then
        valid_name "$1" status
        is_cluster "$1" || setup_die "no cluster named '$1' (scripts/cluster.sh list shows them)"
        show=("$1")
    else
        for dir in "$CLUSTER_DIR"/*/; do
            name=$(basename "$dir")
            is_cluster "$name" && [ "$(run_state "$CLUSTER_DIR/$name")" = running ] && show+=("$name")
        done
        [ ${#show[@]} -gt 0 ] || { echo "no cluster is running (scripts/cluster.sh list shows the stopped ones)"; exit 0; }
    fi
    for name in "${show[@]}"; do
        dir=$CLUSTER_DIR/$name
        nodes=0 started='' kept='' switch='' switch_bin='' secret_file='' board_stats='' mem='' ready_s='' launcher_pid=0 interactive=0
        # shellcheck disable=SC1091
        . "$dir/info"
        st=$(run_state "$dir")
        up=
        [ -n "$started" ] && up=$(( $(date +%s) - started ))
        if [ "$st" = running ]; then
            printf '%s: %s, %d node%s, %s%s, up %s, launcher pid %s\n' "$name" \
                "$([ -n "$ready_s" ] && echo "${G}running${N}" || echo "${Y}booting${N}")" "$nodes" \
                "$([ "$nodes" = 1 ] || echo s)" "$([ "$interactive" = 1 ] && echo "${kept:+kept, }takes jobs" || echo "one-shot run")" \
                "${mem:+, $mem MiB each}" "$([ -n "$up" ] && fmt_secs "$up" || echo ?)" "$launcher_pid"
        else
            printf '%s: %sstopped%s, %d node%s%s\n' "$name" "$R" "$N" "$nodes" "$([ "$nodes" = 1 ] || echo s)" \
                "${started:+, started $(date -d "@$started" '+%F %T')}"
        fi
        echo "  run directory: $dir"
        # The subnet manager's view (the switch's port table), while it runs.
        if [ "$st" = running ] && [ -n "$switch_bin" ] && [ -n "$switch" ]; then
            sw=$(timeout 5 "$switch_bin" --stats "$switch" ${secret_file:+--secret-file "$secret_file"} < /dev/null 2>/dev/null) \
                || sw=
            [ -n "$sw" ] || echo "  (the switch at $switch did not answer --stats)"
        fi
        for ((i = 0; i < nodes; i++)); do
            read -r ph lid rc why <<< "$(node_state "$dir" "$i")"
            pid=$(sed -n "s/^node${i}_pid=//p" "$dir/info")
            alive=
            [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null && alive=1
            if [ "$st" = running ] && [ -n "$pid" ] && [ -z "$alive" ] && [ "$ph" != failed ] && [ "$ph" != "done" ]; then
                ph=failed why="QEMU (pid $pid) is gone"
            fi
            case $ph in
                serving) ph="${G}up${N}" ;;
                done) ph="done rc=$rc" ;;
                failed) ph="${R}DEAD${N}" ;;
            esac
            [ "$st" = stopped ] && [ "$ph" = "${G}up${N}" ] && ph="stopped"
            line=
            # (a dead node's port lingers in the switch's table until it times out)
            if [ -n "$sw" ] && [ "$ph" != "${R}DEAD${N}" ]; then
                guid=$(printf '0x%016x' $((i + 1)))
                line=$(awk -v g="$guid" '$3 == g { printf "link %s, LID %s, rx %s pkts, tx %s pkts", ($2 == "active" ? "up" : "down (" $2 ")"), $1, $5, $7; exit }' <<< "$sw")
                [ -n "$line" ] || line="link down (not in the switch's table)"
            elif [ "$lid" != - ]; then
                line="LID $(printf '0x%04x' "$lid")"
            fi
            printf '  node%-2d %-6s %s%s\n' "$i" "$ph" "$line" "${why:+${line:+; }$why}"
            if [ -s "$dir/board-stats/node$i" ]; then
                tr '\n' ' ' < "$dir/board-stats/node$i" | fold -s -w 88 | sed 's/ *$//; 1s/^/           board: /; 2,$s/^/                  /'
                echo
            fi
        done
        n=$(ls "$dir"/jobs/[0-9]*.sh 2>/dev/null | wc -l)
        [ "$n" -gt 0 ] && echo "  jobs run: $n (RUNDIR/jobs)"
        [ -f "$dir/result.json" ] && echo "  result: $dir/result.json"
    done
    return 0
}

cmd_list() {
    local d name st nodes started kept interactive launcher_pid up what any=
    case ${1:-} in -h|--help) dn2_usage; exit 0 ;; '') ;; *) usage_error "list: no arguments, not '$*'" ;; esac
    for d in "$CLUSTER_DIR"/*/; do
        name=$(basename "$d")
        is_cluster "$name" || continue
        nodes='?' started='' kept='' interactive=0 launcher_pid=0
        # shellcheck disable=SC1091
        . "$d/info" 2>/dev/null
        st=$(run_state "$CLUSTER_DIR/$name")
        what=one-shot
        [ "$interactive" = 1 ] && what=-i
        [ -n "$kept" ] && what=kept
        up=-
        [ "$st" = running ] && [ -n "$started" ] && up=$(fmt_secs $(( $(date +%s) - started )))
        [ -z "$any" ] && printf '%-28s %-8s %5s  %-8s %-10s %s\n' NAME STATE NODES KIND UP STARTED
        any=1
        printf '%-28s %-8s %5s  %-8s %-10s %s\n' "$name" "$st" "$nodes" "$what" "$up" \
            "$([ -n "$started" ] && date -d "@$started" '+%F %T' || echo -)"
    done
    [ -n "$any" ] || echo "no clusters in $CLUSTER_DIR"
}

cmd_stop() {
    local name dir t n i ph lid rc why launcher_pid=0 was dead=0 status=0
    case ${1:-} in -h|--help) dn2_usage; exit 0 ;; esac
    [ $# -eq 1 ] || usage_error "stop: one NAME, not '$*'"
    name=$1
    valid_name "$name" stop
    dir=$CLUSTER_DIR/$name
    is_cluster "$name" || setup_die "no cluster named '$name' (scripts/cluster.sh list shows them)"
    # shellcheck disable=SC1091
    . "$dir/info"
    was=$(run_state "$dir")
    if [ "$was" = running ]; then
        # The launcher tears everything down (QEMUs, switch, server,
        # pollers) and writes result.json; SIGKILL if it hangs (its reaper
        # then kills the groups).
        kill -TERM "$launcher_pid" 2>/dev/null
        for ((t = 0; t < 300; t++)); do kill -0 "$launcher_pid" 2>/dev/null || break; sleep 0.1; done
        if kill -0 "$launcher_pid" 2>/dev/null; then
            say "the launcher (pid $launcher_pid) did not stop in 30 s: SIGKILL"
            kill -KILL "$launcher_pid" 2>/dev/null
            sleep 1.5
        fi
    fi
    n=$(sweep "$dir")
    [ "$n" -gt 0 ] && say "killed $n process group$([ "$n" = 1 ] || echo s) left of $name"
    for ((i = 0; i < ${nodes:-0}; i++)); do
        read -r ph lid rc why <<< "$(node_state "$dir" "$i")"
        if [ "$ph" = failed ]; then
            say "node$i had ${R}died${N}: $why"; dead=$((dead + 1))
        fi
    done
    if [ "$was" = running ]; then
        say "cluster $name stopped$([ "$dead" -gt 0 ] && echo " ($dead node$([ "$dead" = 1 ] || echo s) had died)"); nothing of it runs"
    else
        say "cluster $name was not running$([ "$n" -gt 0 ] && echo "; its leftovers are gone")"
    fi
    [ -f "$dir/result.json" ] && say "result: $dir/result.json"
    # (a death is news only to the stop that ended the cluster)
    [ "$dead" -gt 0 ] && [ "$was" = running ] && status=3
    exit "$status"
}

# ====================================================================
# Snapshots (docs/cluster.md, "Snapshots"): snapshot NAME TAG, start NAME
# --from TAG
# ====================================================================
SNAP_DIR=${DN2_SNAPSHOT_DIR:-$DN2_TOP/build/snapshots}

# The consistent cut, over every node's QMP socket: stop every vCPU, hold
# every board once nothing is in flight (the fabric drains meanwhile: the
# boards still deliver and acknowledge while their VM is stopped), migrate
# every node to TAGDIR/nodeI.mig at once, release, run again.
# (scripts/dn2scripts/snapshot.py)

# The restore: every node's QEMU loads its file (-incoming, -S); once all
# have and every board holds its saved LID again on the new switch, all run.
# (scripts/dn2scripts/restore.py)

# --snapshot-at VT TAG: every board stops its guest at virtual time VT
# (vt-cut-ns, set while the nodes wait at -S); returns once every node is
# stopped there, 3 when a QEMU ended first (the run ended before VT).
# (scripts/dn2scripts/vt_cut.py)

# The snapshot of a --snapshot-at run, in the background: the cut, the
# save (dn2scripts/snapshot.py: the boards held, every node migrated, run again), and
# what --replay TAGDIR needs to run on from the cut.
vt_snapshot_helper() {
    local tagdir=$SNAP_DIR/$snap_at_tag socks=() i out o=()
    for ((i = 0; i < nodes; i++)); do socks+=("$(sed -n "s/^node${i}_qmp=//p" "$rundir/info")"); done
    local queued
    PYTHONPATH=$dn2_pypath PYTHONDONTWRITEBYTECODE=1 "$py" -m dn2scripts.vt_cut "$here" "$snap_at_ns" "${qemu_pids[*]}" "${socks[@]}" || return 3
    : > "$rundir/snapshot.cut"
    (umask 077 && mkdir -p "$SNAP_DIR" && mkdir "$tagdir.part") || { say "${R}no snapshot${N}: cannot create $tagdir.part"; return 1; }
    if ! out=$(DN2_SNAP_QUEUED=1 PYTHONPATH=$dn2_pypath PYTHONDONTWRITEBYTECODE=1 "$py" -m dn2scripts.snapshot "$here" "$tagdir.part" "$rundir" 30 "${socks[@]}"); then
        say "${R}no snapshot${N} at $snap_at s (the run goes on)"
        rm -rf "$tagdir.part"
        return 1
    fi
    queued=$(grep '^queued=' <<< "$out")
    out=$(grep -v '^queued=' <<< "$out")
    cp -pr "$rundir/replay" "$rundir/input" "$tagdir.part/" || return 1
    ln "$rundir/initramfs.cpio.gz" "$tagdir.part/initramfs.cpio.gz" 2>/dev/null \
        || cp "$rundir/initramfs.cpio.gz" "$tagdir.part/" || return 1
    # (the command from the snapshot's own copy)
    mapfile -d '' -t o < "$rundir/replay/options"
    for ((i = 0; i < ${#o[@]}; i++)); do
        [ "${o[i]}" = -f ] && o[i + 1]=$tagdir/replay/run.sh
    done
    printf '%s\0' "${o[@]}" > "$tagdir.part/replay/options"
    {
        echo "virtual_time=1"
        echo "cut_s=$snap_at"
        echo "cut_ns=$snap_at_ns"
        echo "$queued"
        echo "nodes=$nodes"
        echo "mem=$mem"
        printf 'source=%q\n' "$rundir"
        echo "lids='$(for ((i = 0; i < nodes; i++)); do sed -n "$((i + 1))s/^[0-9]* \([0-9]*\) .*/\1/p" "$rundir/input/ranks"; done | tr '\n' ' ' | sed 's/ $//')'"
        echo "$out"
    } > "$tagdir.part/snapshot.info" || return 1
    mv "$tagdir.part" "$tagdir" || return 1
    say "${G}snapshot $snap_at_tag${N} at virtual time $snap_at s: $tagdir ($out); from there: scripts/cluster.sh --replay $tagdir"
}

cmd_snapshot() {
    local name dir tag tagdir gate id i t0 n out rc drain_s=10 ph launcher_pid=0 nodes=0 lines
    while [ $# -gt 0 ]; do
        case $1 in
            -h|--help) dn2_usage; exit 0 ;;
            --drain=*) set -- "${1%%=*}" "${1#*=}" "${@:2}"; continue ;;
            --drain) dn2_need_value "$@"; dn2_want_uint "$1" "$2"; drain_s=$2; shift 2 ;;
            -?*) usage_error "snapshot: unknown argument: $1" ;;
            *) break ;;
        esac
    done
    [ $# -eq 2 ] || usage_error "snapshot: NAME TAG, not '$*'"
    name=$1 tag=$2
    valid_name "$name" snapshot
    case $tag in ''|-*|*/*|.|..|.*|*[[:space:]]*) usage_error "snapshot: '$tag' cannot name a snapshot (a plain name: $SNAP_DIR/TAG)" ;; esac
    # (virtual time first: such a run is one-shot, which find_run refuses
    # for another reason)
    is_cluster "$name" && grep -q '^virtual_time=' "$CLUSTER_DIR/$name/info" \
        && setup_die "snapshot: $name runs in virtual time: its boards' clocks are in lock-step with the switch and their packets wait for their virtual times, which a snapshot does not keep (a virtual-time run is repeated with --replay RUNDIR instead)"
    dir=$(named_run "$name") || exit 4
    # shellcheck disable=SC1091
    . "$dir/info"
    # Where a cut cannot be consistent, or a restore could not rebuild it.
    grep -q '^node[0-9]*_host=' "$dir/info" && setup_die "snapshot: $name runs on several hosts: a cut needs every node's QEMU and the switch on this host (the migration files, the drain over QMP sockets and the job server's address stay here)"
    grep -q '^ethhub=' "$dir/info" && setup_die "snapshot: $name has --ethernet: the guest-to-guest Ethernet hub's sockets are not saved"
    { grep -q '^node0_qmp=' "$dir/info" && [ -f "$dir/options" ]; } || setup_die "snapshot: $name was started before snapshots existed (no QMP sockets or no RUNDIR/options): start it again"
    for ((i = 0; i < nodes; i++)); do
        read -r ph _ <<< "$(node_state "$dir" "$i")"
        [ "$ph" = serving ] || setup_die "snapshot: node$i of $name is $ph, not serving jobs"
    done
    tagdir=$SNAP_DIR/$tag
    [ -e "$tagdir" ] && setup_die "snapshot: $tagdir exists: remove it (rm -r) or choose another TAG"
    (umask 077 && mkdir -p "$SNAP_DIR" && mkdir "$tagdir.part" 2>/dev/null) || setup_die "snapshot: cannot create $tagdir.part (another snapshot TAG under way?)"
    chmod 700 "$tagdir.part"
    t0=$SECONDS
    # 1. Every guest parks in a job of its own with no connection open: it
    # polls the gate file (short requests) until the snapshot is taken,
    # and a restored cluster finds the gate open at once.  A connection
    # open at the cut would hang in the restored guest (QEMU's user network
    # does not keep host connections).
    # A request cut off by the snapshot waits in the restored guest for an
    # answer that never comes, and a guest whose code is translated afresh
    # after the restore is slow: so a new request starts every 0.3 s
    # whatever became of the earlier ones, the first that fetches the gate
    # (a 404 leaves no file) ends the job, and the others are killed then.
    gate=snapshot-gate-$RANDOM$RANDOM
    id=$(job_submit "$dir" "# snapshot $tag
rm -f /tmp/dn2-gate.*
n=0
while :; do
    n=\$((n + 1))
    wget -q -O /tmp/dn2-gate.\$n \"\$DN2_HTTP/$gate\" 2>/dev/null &
    t=0
    while [ \$t -lt 3 ]; do
        for f in /tmp/dn2-gate.*; do [ -e \"\$f\" ] && break 3; done
        usleep 100000
        t=\$((t + 1))
    done
done
kill \$(jobs -p) 2>/dev/null
rm -f /tmp/dn2-gate.*
exit 0")
    for ((n = 0; n < 300; n++)); do
        lines=0
        for ((i = 0; i < nodes; i++)); do
            tr -d '\r' < "$dir/node$i.log" | grep -qx "DN2-JOB-BEGIN $id" && lines=$((lines + 1))
        done
        [ "$lines" -eq "$nodes" ] && break
        kill -0 "$launcher_pid" 2>/dev/null || { rm -rf "$tagdir.part"; setup_die "snapshot: the cluster stopped"; }
        sleep 0.1
    done
    if [ "$lines" -ne "$nodes" ]; then
        : > "$dir/www/$gate"
        rm -rf "$tagdir.part"
        say "${R}no snapshot${N}: after 30 s, $lines of $nodes nodes had started the snapshot's job (job $id): a node still runs an earlier job"
        exit 1
    fi
    sleep 0.3   # (the job's first request is answered: 404)
    # 2. The cut, the migration files.
    local socks=()
    for ((i = 0; i < nodes; i++)); do socks+=("$(sed -n "s/^node${i}_qmp=//p" "$dir/info")"); done
    out=$(PYTHONPATH=$dn2_pypath PYTHONDONTWRITEBYTECODE=1 "$(find_python)" -m dn2scripts.snapshot "$here" "$tagdir.part" "$dir" "$drain_s" "${socks[@]}")
    rc=$?
    # 3. The guests go on (their job ends once the gate is there).
    : > "$dir/www/$gate"
    if [ "$rc" -ne 0 ]; then
        rm -rf "$tagdir.part"
        say "${R}no snapshot${N} of $name; it runs on"
        exit "$rc"
    fi
    # 4. What a restore needs beside the memory images: the launcher's
    # options, the job's identity (id, secret, HTTP port: the guests know
    # them), the jobs run so far (the guests' job loops count on), the rank
    # table and joins, the LIDs, the image (the consoles at the cut are
    # there already).
    (
        set -e
        cp -p "$dir/options" "$dir/secret" "$tagdir.part/"
        cp -pr "$dir/jobs" "$dir/joins" "$tagdir.part/"
        rm -f "$tagdir.part/jobs/.lock"
        # (a job queued on NAME after the cut is not the snapshot's)
        for f in "$tagdir.part"/jobs/[0-9]*; do
            j=${f##*/}; j=${j%%.*}
            [ "$j" -le "$id" ] || rm -f "$f"
        done
        cp -p "$dir/www/ranks" "$tagdir.part/ranks"
        : > "$tagdir.part/$gate"
        ln "$dir/initramfs.cpio.gz" "$tagdir.part/initramfs.cpio.gz" 2>/dev/null || cp "$dir/initramfs.cpio.gz" "$tagdir.part/"
        {
            printf 'name=%q\ntaken=%s\nnodes=%s\nmem=%s\n' "$name" "$(date +%s)" "$nodes" "$mem"
            printf 'jobid=%q\nhttp_port=%s\ngate=%s\njob=%s\n' "$jobid" "${http##*:}" "$gate" "$id"
            printf 'lids=%q\n' "$(awk '{ printf "%s%s", (NR > 1 ? " " : ""), $2 }' "$dir/www/ranks")"
            echo "$out"
        } > "$tagdir.part/snapshot.info"
    ) || { rm -rf "$tagdir.part"; setup_die "snapshot: cannot write $tagdir.part"; }
    mv "$tagdir.part" "$tagdir"
    say "${G}snapshot $tag${N} of $name ($nodes nodes) in $((SECONDS - t0)) s: $tagdir ($(du -sh "$tagdir" | cut -f1)); $out"
    say "  restore: scripts/cluster.sh start NEWNAME --from $tag   (while $name runs, its job server's port ${http##*:} is taken: stop $name first)"
    exit 0
}

# start NAME [options]: the launcher with -i --name NAME in the background
# (its output in RUNDIR/launcher.log); returns once every node serves jobs,
# or with the launcher's status and why.
cmd_start() {
    local name dir a pid log t rc lp=0 launcher_pid=0
    case ${1:-} in -h|--help) dn2_usage; exit 0 ;; esac
    name=${1:-}
    valid_name "$name" start
    shift
    # --from TAG: the snapshot's own options, and a few of the caller's
    local from='' fa=() so=() sq=() k
    for ((k = 1; k <= $#; k++)); do
        a=${!k}
        [ "$a" = -- ] && break
        case $a in --from|--from=*) from=1 ;; esac
    done
    if [ -n "$from" ]; then
        while [ $# -gt 0 ]; do
            case $1 in
                --from=*|--boot-timeout=*|--junit=*) set -- "${1%%=*}" "${1#*=}" "${@:2}"; continue ;;
                --from) dn2_need_value "$@"; from=$2; shift 2 ;;
                -q|--quiet|--board-stats) fa+=("$1"); shift ;;
                -b|--boot-timeout|--junit) dn2_need_value "$@"; fa+=("$1" "$2"); shift 2 ;;
                -h|--help) dn2_usage; exit 0 ;;
                *) usage_error "start --from: $1: a restored cluster has the snapshot's options (only -q, -b, --board-stats, --junit may be added)" ;;
            esac
        done
        case $from in ''|-*|*/*|.|..|.*) usage_error "start --from: '$from' cannot name a snapshot" ;; esac
        [ -f "$SNAP_DIR/$from/snapshot.info" ] || setup_die "no snapshot '$from' in $SNAP_DIR (scripts/cluster.sh snapshot NAME $from makes one)"
        mapfile -d '' -t so < "$SNAP_DIR/$from/options"
        for ((k = 0; k < ${#so[@]}; k++)); do
            [ "${so[k]}" = -- ] && { sq=("${so[@]:k}"); so=("${so[@]:0:k}"); break; }
        done
        set -- "${so[@]}" "${fa[@]}" --from "$from" "${sq[@]}"
    fi
    for a in "$@"; do
        case $a in
            --) break ;;
            -h|--help) dn2_usage; exit 0 ;;
            --name|--name=*) usage_error "start: NAME names the cluster: no --name" ;;
            --virtual-time|--no-vt-sync|--replay|--replay=*)
                usage_error "start: $a: a kept cluster takes commands, files and consoles from the host (exec, cp, console) at host-dependent times, which virtual time cannot make deterministic: use a one-shot run (-r CMD or -f FILE)" ;;
        esac
    done
    dir=$CLUSTER_DIR/$name
    if [ -f "$dir/info" ]; then
        # shellcheck disable=SC1091
        . "$dir/info"
        if [ "$(run_state "$dir")" = running ]; then
            setup_die "cluster $name is running (launcher pid $launcher_pid, $dir): stop it first (scripts/cluster.sh stop $name) or choose another name"
        fi
        t=$(sweep "$dir")
        [ "$t" -gt 0 ] && say "cluster $name had stopped, but $t process group$([ "$t" = 1 ] || echo s) of it ran: killed"
    fi
    mkdir -p "$CLUSTER_DIR" || setup_die "cannot create $CLUSTER_DIR"
    log=$CLUSTER_DIR/.$name.start.log
    (umask 077; : > "$log") || setup_die "cannot write $log"
    exec 7< "$log"
    _DN2_CLUSTER_LOG=$log setsid bash "$here/cluster.sh" -i --name "$name" "$@" < /dev/null >> "$log" 2>&1 &
    pid=$!
    trap 'kill -TERM "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; cat <&7 >&2; say "interrupted: cluster $name stopped"; exit 130' INT TERM HUP
    while :; do
        cat <&7 >&2
        if ! kill -0 "$pid" 2>/dev/null; then
            wait "$pid"; rc=$?
            cat <&7 >&2
            rm -f "$log"
            say "${R}cluster $name did not start${N} (status $rc)$([ -f "$dir/launcher.log" ] && echo "; its log: $dir/launcher.log")"
            [ "$rc" -ne 0 ] || rc=3
            exit "$rc"
        fi
        if [ -f "$dir/info" ] && grep -q '^ready_s=' "$dir/info"; then
            lp=$(sed -n 's/^launcher_pid=//p' "$dir/info")
            [ "$lp" = "$pid" ] && break
        fi
        sleep 0.1
    done
    cat <&7 >&2
    exec 7<&-
    say "${G}cluster $name is up${N}: $(sed -n 's/^nodes=//p' "$dir/info") nodes after $(sed -n 's/^ready_s=//p' "$dir/info") s; it runs until: scripts/cluster.sh stop $name"
    say "  scripts/cluster.sh exec $name [--node I] CMD | cp $name FILE :/PATH | console $name I | status $name"
    exit 0
}

case ${1:-} in
    start) shift; cmd_start "$@" ;;
    exec) shift; cmd_exec "$@" ;;
    console) shift; cmd_console "$@" ;;
    cp) shift; cmd_cp "$@" ;;
    status) shift; cmd_status "$@"; exit $? ;;
    list) shift; cmd_list "$@"; exit $? ;;
    stop) shift; cmd_stop "$@" ;;
    snapshot) shift; cmd_snapshot "$@" ;;
esac

# ====================================================================
# Launch
# ====================================================================
nodes=2
run=
run_file=
interactive=0
timeout_s=900
boot_timeout=300
grace=30
mem=
mem_auto=
junit=
declare -a node_qemu
smp=1
wid=0
name=
switch_port=0
http_port=0
switch_opts=
device_opts=
secret_file=
packages=
mpi_image=
ethernet=
board_stats=
slice_us=100
pause_yield=on
ether_mtu=
serve_dir=
append_extra=
quiet=0
hosts_arg=
rsh=
switch_host=
switch_addr=
my_addr=
no_slurm=
extra=()
vt=
vt_sync=1
vt_shift=0
vt_lookahead=1000
vt_quantum=
vt_start=3
replay_dir=
gdb_node=
gdb_port=1234
from_tag=
snap_at= snap_at_tag= vsnap=
# --replay RUNDIR: the recorded run's options (RUNDIR/replay/options,
# written below) and what may be added to them.
replay_args() {
    local a
    while [ $# -gt 0 ]; do
        case $1 in
            --?*=*) set -- "${1%%=*}" "${1#*=}" "${@:2}"; continue ;;
            --replay) dn2_need_value "$@"; replay_dir=$2; shift 2 ;;
            --name) dn2_need_value "$@"; name=$2; shift 2 ;;
            -t|--timeout) dn2_need_value "$@"; r_timeout=$2; shift 2 ;;
            -b|--boot-timeout) dn2_need_value "$@"; r_boot=$2; shift 2 ;;
            -q|--quiet) r_quiet=1; shift ;;
            --gdb) dn2_need_value "$@"; gdb_node=$2; shift 2 ;;
            --gdb-port) dn2_need_value "$@"; gdb_port=$2; shift 2 ;;
            --switch-opts) dn2_need_arg "$@"; r_switch_opts=$2; r_switch_set=1; shift 2 ;;
            -h|--help) dn2_usage; exit 0 ;;
            *) a=$1; usage_error "--replay takes the recorded run's options; '$a' cannot be added (only --name, -q, -t, -b, --gdb, --gdb-port, --switch-opts)" ;;
        esac
    done
}
r_timeout= r_boot= r_quiet= r_switch_opts= r_switch_set=
for a in "$@"; do
    case $a in --replay|--replay=*) replay_dir=.; break ;; -h|--help) break ;; esac
done
if [ -n "$replay_dir" ]; then
    replay_args "$@"
    [ -d "$replay_dir" ] || usage_error "--replay: $replay_dir is not a directory"
    replay_dir=$(cd "$replay_dir" && pwd -P)
    [ -f "$replay_dir/replay/options" ] || usage_error "--replay: $replay_dir has no replay/options (not a --virtual-time run)"
    mapfile -d '' -t r_opts < "$replay_dir/replay/options"
    set -- "${r_opts[@]}"
    # a snapshot of a virtual-time run (--snapshot-at): the run again from
    # its cut, compared with the run it was taken from
    [ -f "$replay_dir/snapshot.info" ] && vsnap=$replay_dir
fi
launch_args=("$@")
# ("--opt=value" is split here, one option at a time: a value such as
# --switch-opts "--drop=0.01" is taken as it is)
while [ $# -gt 0 ]; do
    case $1 in
        --?*=*) set -- "${1%%=*}" "${1#*=}" "${@:2}"; continue ;;
        -n|--nodes) dn2_need_value "$@"; nodes=$2; shift 2 ;;
        -r|--run) dn2_need_arg "$@"; run=$2; shift 2 ;;
        -f|--file) dn2_need_value "$@"; run_file=$2; shift 2 ;;
        -i|--interactive) interactive=1; shift ;;
        -t|--timeout) dn2_need_value "$@"; timeout_s=$2; shift 2 ;;
        -b|--boot-timeout) dn2_need_value "$@"; boot_timeout=$2; shift 2 ;;
        -g|--grace) dn2_need_value "$@"; grace=$2; shift 2 ;;
        -m|--mem) dn2_need_value "$@"; mem=$2; shift 2 ;;
        --node-qemu) [ $# -ge 3 ] || usage_error "--node-qemu needs a node and QEMU arguments: --node-qemu I 'ARGS'"
                     dn2_want_uint --node-qemu "$2"; node_qemu[$2]+=" $3"; shift 3 ;;
        --junit) dn2_need_value "$@"; junit=$2; shift 2 ;;
        --smp) dn2_need_value "$@"; smp=$2; shift 2 ;;
        --wid) dn2_need_value "$@"; wid=$2; shift 2 ;;
        --name) dn2_need_value "$@"; name=$2; shift 2 ;;
        --switch-port) dn2_need_value "$@"; switch_port=$2; shift 2 ;;
        --http-port) dn2_need_value "$@"; http_port=$2; shift 2 ;;
        --switch-opts) dn2_need_arg "$@"; switch_opts=$2; shift 2 ;;
        --device-opts) dn2_need_arg "$@"; device_opts=$2; shift 2 ;;
        --secret-file) dn2_need_value "$@"; secret_file=$2; shift 2 ;;
        --packages) dn2_need_arg "$@"; packages+=" $2"; shift 2 ;;
        --mpi) mpi_image=1; shift ;;
        --ethernet) ethernet=1; shift ;;
        --board-stats) board_stats=1; shift ;;
        --slice) dn2_need_value "$@"; slice_us=$2; shift 2 ;;
        --pause-yield) dn2_need_value "$@"; pause_yield=$2; shift 2 ;;
        --ethernet-mtu) dn2_need_value "$@"; ether_mtu=$2; shift 2 ;;
        --serve-dir) dn2_need_value "$@"; serve_dir=$2; shift 2 ;;
        -a|--append) dn2_need_arg "$@"; append_extra=$2; shift 2 ;;
        -q|--quiet) quiet=1; shift ;;
        --hosts) dn2_need_value "$@"; hosts_arg=$2; shift 2 ;;
        --rsh) dn2_need_value "$@"; rsh=$2; shift 2 ;;
        --switch-host) dn2_need_value "$@"; switch_host=$2; shift 2 ;;
        --switch-addr) dn2_need_value "$@"; switch_addr=$2; shift 2 ;;
        --addr) dn2_need_value "$@"; my_addr=$2; shift 2 ;;
        --no-slurm) no_slurm=1; shift ;;
        --virtual-time) vt=1; shift ;;
        --no-vt-sync) vt=1; vt_sync=; shift ;;
        --vt-shift) dn2_need_value "$@"; vt_shift=$2; vt_shift_set=1; shift 2 ;;
        --vt-insn-ps) dn2_need_value "$@"; export DN2_VT_INSN_PS=$2; shift 2 ;;
        --vt-lookahead) dn2_need_value "$@"; vt_lookahead=$2; shift 2 ;;
        --vt-quantum) dn2_need_value "$@"; vt_quantum=$2; shift 2 ;;
        --vt-start) dn2_need_value "$@"; vt_start=$2; shift 2 ;;
        --from) dn2_need_value "$@"; from_tag=$2; shift 2 ;;
        --snapshot-at) [ $# -ge 3 ] || usage_error "--snapshot-at needs a virtual time and a tag: --snapshot-at VT TAG"
                       snap_at=$2; snap_at_tag=$3; shift 3 ;;
        --gdb|--gdb-port) usage_error "$1 goes with --replay RUNDIR" ;;
        -h|--help) dn2_usage; exit 0 ;;
        --) shift; extra=("$@"); break ;;
        *) usage_error "unknown argument: $1" ;;
    esac
done
[ -z "$mem" ] || dn2_want_uint --mem "$mem"
for v in nodes:nodes timeout_s:timeout boot_timeout:boot-timeout grace:grace smp:smp \
         wid:wid switch_port:switch-port http_port:http-port slice_us:slice; do
    var=${v%%:*}
    dn2_want_uint "--${v#*:}" "${!var}"
done
[ "$nodes" -ge 1 ] && [ "$nodes" -le 64 ] || usage_error "--nodes must be 1..64"
[ "$switch_port" -le 65535 ] && [ "$http_port" -le 65535 ] || usage_error "ports are 0..65535"
[ -z "$mem" ] || [ "$mem" -ge 128 ] || usage_error "--mem: the guest wants at least 128 MiB"
for i in "${!node_qemu[@]}"; do
    [ "$i" -lt "$nodes" ] || usage_error "--node-qemu $i: the cluster has nodes 0..$((nodes - 1))"
done
if [ -n "$junit" ]; then
    [ ! -d "$junit" ] || usage_error "--junit: $junit is a directory"
    [ -d "$(dirname "$junit")" ] || usage_error "--junit: the directory of $junit does not exist"
    junit=$(cd "$(dirname "$junit")" && pwd)/$(basename "$junit")
fi
case $pause_yield in on|off) ;; *) usage_error "--pause-yield: on or off, not '$pause_yield'" ;; esac
[ "$slice_us" = 0 ] || { [ "$slice_us" -ge 100 ] && [ "$slice_us" -le 100000 ]; } \
    || usage_error "--slice: 100..100000 microseconds (the kernel's range), or 0 for its default"
if [ -n "$run_file" ]; then
    [ -z "$run" ] || usage_error "give -r or -f, not both"
    [ -f "$run_file" ] || usage_error "--file: $run_file does not exist"
    run=$(cat "$run_file")
fi
[ -n "$run" ] || [ "$interactive" = 1 ] || usage_error "nothing to run: give -r CMD, -f SCRIPT or -i"
if [ -n "$replay_dir" ]; then
    [ -n "$vt" ] || usage_error "--replay: $replay_dir was not a --virtual-time run"
    [ -n "$r_timeout" ] && timeout_s=$r_timeout
    [ -n "$r_boot" ] && boot_timeout=$r_boot
    [ -n "$r_quiet" ] && quiet=1
    [ -n "$r_switch_set" ] && switch_opts=$r_switch_opts
    [ -n "$name" ] || name=$(basename "$replay_dir")-replay
    if [ -n "$gdb_node" ]; then
        dn2_want_uint --gdb "$gdb_node"
        dn2_want_uint --gdb-port "$gdb_port"
        [ "$gdb_node" -lt "$nodes" ] || usage_error "--gdb: the run has nodes 0..$((nodes - 1))"
        [ "$gdb_port" -ge 1 ] && [ "$gdb_port" -le 65535 ] || usage_error "--gdb-port: 1..65535"
        # A person is at the debugger: no timeouts.
        timeout_s=$((100 * 365 * 86400)) boot_timeout=$timeout_s grace=$timeout_s
    fi
fi
# Virtual time: no input from the host at host-dependent times.
if [ -n "$vt" ]; then
    for v in vt_shift:vt-shift vt_lookahead:vt-lookahead; do
        var=${v%%:*}; dn2_want_uint "--${v#*:}" "${!var}"
    done
    [ -z "$vt_quantum" ] || dn2_want_uint --vt-quantum "$vt_quantum"
    [ "$vt_shift" -le 10 ] || usage_error "--vt-shift: 0..10 (QEMU's -icount shift)"
    if [ -n "${DN2_VT_INSN_PS:-}" ]; then
        [ -z "${vt_shift_set:-}" ] || [ "$vt_shift" = 0 ] \
            || usage_error "--vt-shift and --vt-insn-ps exclude each other"
        dn2_want_uint --vt-insn-ps "$DN2_VT_INSN_PS"
        [ "$DN2_VT_INSN_PS" -ge 1 ] && [ "$DN2_VT_INSN_PS" -le 1024000 ] \
            || usage_error "--vt-insn-ps: 1..1024000 picoseconds per instruction"
    fi
    [[ $vt_start =~ ^[0-9]{1,4}(\.[0-9]{1,9})?$ ]] || usage_error "--vt-start: seconds of virtual time, e.g. 3 or 2.5 (got '$vt_start')"
    vt_start_ns=$(awk -v s="$vt_start" 'BEGIN { printf "%.0f", s * 1e9 }')
    [ "$vt_lookahead" -ge 1 ] && [ "$vt_lookahead" -le 4294967295 ] || usage_error "--vt-lookahead: 1..4294967295 ns"
    vt_why="input from the host would reach the guests at host-dependent times"
    [ "$interactive" = 0 ] || usage_error "--virtual-time runs one command (-r or -f), not -i: $vt_why (console, jobs)"
    [ "$smp" = 1 ] || usage_error "--virtual-time runs one vCPU per node (--smp $smp): several vCPUs interleave in host-dependent ways under TCG"
    [ -z "$ethernet" ] || usage_error "--virtual-time: no --ethernet: $vt_why"
    [ -z "$serve_dir" ] || usage_error "--virtual-time: no --serve-dir: there is no file server ($vt_why)"
fi
# --snapshot-at VT TAG: a snapshot of a virtual-time run at one virtual time
if [ -n "$snap_at" ]; then
    [ -n "$vt" ] && [ -n "$vt_sync" ] || usage_error "--snapshot-at goes with --virtual-time (a cluster in lock-step: one virtual time for every node); a kept cluster is saved with scripts/cluster.sh snapshot NAME TAG"
    [ -z "$replay_dir" ] || usage_error "--snapshot-at: not with --replay"
    [[ $snap_at =~ ^[0-9]{1,4}(\.[0-9]{1,9})?$ ]] || usage_error "--snapshot-at: seconds of virtual time, e.g. 4.5 (got '$snap_at')"
    snap_at_ns=$(awk -v s="$snap_at" 'BEGIN { printf "%.0f", s * 1e9 }')
    [ "$snap_at_ns" -gt "$vt_start_ns" ] || usage_error "--snapshot-at $snap_at: after the lock-step begins (--vt-start $vt_start)"
    case $snap_at_tag in ''|-*|*/*|.|..|.*|*[[:space:]]*) usage_error "--snapshot-at: '$snap_at_tag' cannot name a snapshot (a plain name: $SNAP_DIR/TAG)" ;; esac
    [ ! -e "$SNAP_DIR/$snap_at_tag" ] || setup_die "--snapshot-at: $SNAP_DIR/$snap_at_tag exists: remove it (rm -r) or choose another TAG"
    [ ${#hosts_arg} -eq 0 ] || usage_error "--snapshot-at: one host only (the cut is taken over the nodes' QMP sockets)"
fi
# (the nodes go on several hosts with --hosts, or in a Slurm allocation)
if [ -z "$hosts_arg" ] && { [ -z "${SLURM_JOB_NODELIST:-}" ] || [ -n "$no_slurm" ]; }; then
    [ -z "$switch_host" ] || usage_error "--switch-host needs --hosts (or a Slurm allocation)"
    [ -z "$rsh" ] || usage_error "--rsh needs --hosts (or a Slurm allocation)"
fi
secret_sw=() secret_obj=() secret_prop=
if [ -n "${secret_file:-}" ]; then
    [ -r "$secret_file" ] || usage_error "--secret-file: cannot read $secret_file"
    secret_file=$(cd "$(dirname "$secret_file")" && pwd)/$(basename "$secret_file")
    secret_sw=(--secret-file "$secret_file")
    secret_obj=(-object "secret,id=dn2key,file=$secret_file")
    secret_prop=,secret=dn2key
fi
case $name in */*|.|..) usage_error "--name: a plain name, not '$name'" ;; esac
# --from TAG (cluster.sh start NAME --from TAG): a snapshot's cluster again
snap=
if [ -n "$from_tag" ]; then
    [ "$interactive" = 1 ] && [ -z "$vt" ] || usage_error "--from: a snapshot is restored as a kept cluster (scripts/cluster.sh start NAME --from TAG)"
    snap=$SNAP_DIR/$from_tag
    [ -f "$snap/snapshot.info" ] || setup_die "no snapshot '$from_tag' in $SNAP_DIR"
    s_mem='' s_jobid='' s_http_port='' s_gate='' s_lids=''
    # shellcheck disable=SC1091
    s_mem=$(. "$snap/snapshot.info"; echo "$mem") s_jobid=$(. "$snap/snapshot.info"; echo "$jobid")
    s_http_port=$(. "$snap/snapshot.info"; echo "$http_port") s_gate=$(. "$snap/snapshot.info"; echo "$gate")
    s_lids=$(. "$snap/snapshot.info"; echo "$lids")
    # shellcheck disable=SC2206
    s_lid=($s_lids)
    [ ${#s_lid[@]} -eq "$nodes" ] || setup_die "snapshot $from_tag: $nodes nodes, but LIDs for ${#s_lid[@]}"
    for ((i = 0; i < nodes; i++)); do
        [ -f "$snap/node$i.mig" ] || setup_die "snapshot $from_tag: node$i.mig is missing"
    done
    mem=$s_mem http_port=$s_http_port
fi
if [ -n "$serve_dir" ]; then
    [ -d "$serve_dir" ] || usage_error "--serve-dir: $serve_dir is not a directory"
    serve_dir=$(cd "$serve_dir" && pwd)
fi

if [ -n "$vsnap" ]; then
    snap=$vsnap
    # shellcheck disable=SC1091
    s_lids=$(. "$snap/snapshot.info"; echo "$lids") s_mem=$(. "$snap/snapshot.info"; echo "$mem")
    s_source=$(. "$snap/snapshot.info"; echo "$source") s_cut=$(. "$snap/snapshot.info"; echo "$cut_s")
    # shellcheck disable=SC2206
    s_lid=($s_lids)
    [ ${#s_lid[@]} -eq "$nodes" ] || setup_die "snapshot $snap: $nodes nodes, but LIDs for ${#s_lid[@]}"
    for ((i = 0; i < nodes; i++)); do
        [ -f "$snap/node$i.mig" ] || setup_die "snapshot $snap: node$i.mig is missing"
    done
    [ -z "$gdb_node" ] || usage_error "--gdb: not from a snapshot (replay the whole run)"
    mem=$s_mem from_tag=$(basename "$snap")
fi
# ----------------------------------------------------------------- inputs
if [ -n "$replay_dir" ]; then
    # The recorded run's QEMU, kernel, switch and guest image.
    DN2_DEVICE_GLOBALS=
    # shellcheck disable=SC1091
    . "$replay_dir/replay/programs"
    for f in "$qemu_bin" "$kernel" "$switch_bin" "$replay_dir/initramfs.cpio.gz"; do
        [ -e "$f" ] || setup_die "--replay: $f (recorded in $replay_dir/replay/programs) is gone"
    done
else
    qemu_bin=$(dn2_find_qemu) || exit 4
    kernel=$(dn2_find_kernel) || exit 4
    switch_bin=${DN2_SWITCH:-$DN2_TOP/build/fabric/dn2-switch}
fi
firmware=$DN2_CACHE/firmware
[ -f "$firmware/bios-256k.bin" ] || setup_die "firmware missing in $firmware: run scripts/setup.sh"
if [ -n "$vt" ]; then
    dn2_vt_accel "$vt_shift" || exit 4
    # (the switch needs --virtual-time only when the boards synchronise)
    vt_cap=$(dn2_vt_capable "$qemu_bin" ${vt_sync:+"$switch_bin"} 2>&1) \
        || setup_die "--virtual-time: ${vt_cap#\[dimmnet2\] error: }"
else
    dn2_accel || exit 4
fi
[ -x "$switch_bin" ] || setup_die "no switch at $switch_bin: build it with 'meson setup build && meson compile -C build' (or scripts/test.sh)"
py=$(find_python) || setup_die "python3 not found (it runs the job/file server): apt-get install python3"
# --slice: the data path's processes start through scripts/sched-slice.py
# (also on other hosts: the work tree is at the same path there).
slice_wrap=()
if [ "$slice_us" != 0 ]; then
    slice_wrap=("$py" "$here/sched-slice.py" "$slice_us" --)
    if why=$("$py" "$here/sched-slice.py" --check "$slice_us"); then
        [ "$quiet" = 1 ] || say "host scheduling: a ${slice_us} µs slice for the QEMUs, the switch and the hub (--slice)"
    else
        say "note: --slice $slice_us has no effect here: $why"
        slice_wrap=()
    fi
fi
# --pause-yield: TCG's accelerator gets pause-yield=on where this QEMU has
# it (the project's build does: scripts/qemu/patches), so that a guest
# spinning on the board lets its own QEMU's main loop and the other node
# run first (docs/cluster.md, "Host scheduling").
if [ "$pause_yield" = on ]; then
    if printf '%s\n' '{"execute":"qmp_capabilities"}' '{"execute":"quit"}' |
        timeout 20 "$qemu_bin" -M none -accel tcg,pause-yield=on -display none \
            -nodefaults -S -qmp stdio >/dev/null 2>&1; then
        for i in "${!DN2_ACCEL_ARGS[@]}"; do
            if [ "${DN2_ACCEL_ARGS[$i]}" = -accel ] && [ "${DN2_ACCEL_ARGS[$((i + 1))]:-}" = tcg ]; then
                DN2_ACCEL_ARGS[$((i + 1))]=tcg,pause-yield=on
            fi
        done
    else
        say "note: --pause-yield on has no effect here: $qemu_bin has no -accel tcg,pause-yield"
    fi
fi
initramfs_args=()
[ -n "$packages" ] && initramfs_args+=(--packages "$packages")
[ -n "$mpi_image" ] && initramfs_args+=(--mpi)
if [ -n "$replay_dir" ]; then
    initrd_built=$replay_dir/initramfs.cpio.gz
elif [ -n "$snap" ]; then
    initrd_built=$snap/initramfs.cpio.gz
else
    initrd_built=$(bash "$here/build-initramfs.sh" "${initramfs_args[@]}") || setup_die "building the guest initramfs failed (scripts/build-initramfs.sh ${initramfs_args[*]})"
fi
# Guest memory: the image unpacks into it (docs/cluster.md, "Guest memory
# and image size"); without -m it is sized from the image.
img_unpacked_kib='' img_need_mib=
if img_size=$(dn2_image_size "$initrd_built" 2>&1); then
    read -r img_unpacked_kib img_kib <<< "$img_size"
    img_need_mib=$(dn2_guest_mem "$img_unpacked_kib" "$img_kib")
    img_mib=$(( (img_unpacked_kib + 1023) / 1024 ))
    if [ -z "$mem" ]; then
        mem=$img_need_mib mem_auto=1
        [ "$mem" -le 256 ] || say "guest memory: $mem MiB, sized from the image (it unpacks to $img_mib MiB in the guest's RAM; -m sets it)"
    elif [ "$mem" -lt "$img_need_mib" ]; then
        say "${Y}warning${N}: the guest image unpacks to $img_mib MiB in the guest's RAM: -m $mem may not hold it (the launcher would give $img_need_mib MiB; leave -m out to size it from the image)"
    fi
else
    say "warning: ${img_size#\[dimmnet2\] error: }: guest memory not sized from the image"
    [ -n "$mem" ] || mem=256
fi
command -v setsid >/dev/null || setup_die "setsid (util-linux) not found"

# ---------------------------------------------------------------- run dir
mkdir -p "$CLUSTER_DIR"
if [ -z "$name" ]; then
    name=$(date +%Y%m%d-%H%M%S)-$$
    # Keep the last 10 timestamped runs.
    ls -1d "$CLUSTER_DIR"/[0-9]*-[0-9]*-[0-9]* 2>/dev/null | sort | head -n -9 | while read -r old; do
        launcher_pid=0
        [ -f "$old/info" ] && . "$old/info" 2>/dev/null
        [ "${launcher_pid:-0}" -gt 0 ] && kill -0 "$launcher_pid" 2>/dev/null && continue
        rm -rf "$old"
    done
fi
rundir=$CLUSTER_DIR/$name
if [ -f "$rundir/info" ]; then
    # shellcheck disable=SC1091
    (. "$rundir/info"; [ "${launcher_pid:-0}" -eq 0 ] || ! kill -0 "$launcher_pid" 2>/dev/null) || setup_die "a cluster is running in $rundir (launcher pid $(sed -n 's/^launcher_pid=//p' "$rundir/info"))"
fi
rm -rf "$rundir"
# Private: the job's secret, the nodes' tokens, the consoles and the logs
# are for this user only (docs/security.md, "The job server").
(umask 077 && mkdir -p "$rundir"/{joins,jobs,www/cmd}) || setup_die "cannot create $rundir"
chmod 700 "$rundir"
ln -sfn "$name" "$CLUSTER_DIR/latest"
# cluster.sh start: the launcher's output (opened by "start") moves into the
# run directory.
kept=
if [ -n "${_DN2_CLUSTER_LOG:-}" ]; then
    kept=1
    mv -f "$_DN2_CLUSTER_LOG" "$rundir/launcher.log" 2>/dev/null
    unset _DN2_CLUSTER_LOG
fi
# Our own hard link: another build may replace the initramfs meanwhile.
initrd=$rundir/initramfs.cpio.gz
ln "$initrd_built" "$initrd" 2>/dev/null || cp "$initrd_built" "$initrd"
jobid=$name-$RANDOM$RANDOM
# The job's secret (never on a command line): the server derives every
# node's and every PMI rank's token from it.
(umask 077 && head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$rundir/secret") \
    || setup_die "cannot write $rundir/secret"
# A kept or -i cluster: its options, for a snapshot's restore (without
# those that name this run).
if [ "$interactive" = 1 ]; then
    o=()
    set -- "${launch_args[@]}"
    while [ $# -gt 0 ]; do
        case $1 in
            --) o+=("$@"); break ;;
            --name=*|--from=*|--junit=*|--http-port=*|-i|--interactive|-q|--quiet|--board-stats) shift ;;
            --name|--from|--junit|--http-port) shift 2 ;;
            *) o+=("$1"); shift ;;
        esac
    done
    printf '%s\0' "${o[@]}" > "$rundir/options"
fi
# --from: the snapshot's job (its id and secret: the guests' tokens), the
# jobs its guests have run, the rank table, the consoles so far, and the
# gate that lets the guests' parked job end.
if [ -n "$snap" ] && [ -z "$vt" ]; then
    jobid=$s_jobid
    (umask 077 && cp "$snap/secret" "$rundir/secret") || setup_die "cannot write $rundir/secret"
    rm -rf "$rundir/jobs" "$rundir/joins"
    cp -pr "$snap/jobs" "$snap/joins" "$rundir/" || setup_die "cannot copy the snapshot's jobs into $rundir"
    cp "$snap/ranks" "$rundir/www/ranks" && : > "$rundir/www/$s_gate" || setup_die "cannot write $rundir/www"
fi

# --virtual-time: what the run needs to be run again (--replay RUNDIR): its
# options (NUL-separated, the command as a file), the programs, and below
# the rank table, every node's command and the QEMU and switch command
# lines (RUNDIR/nodeI.cmd, RUNDIR/switch.cmd).
if [ -n "$vt" ]; then
    mkdir -p "$rundir/replay" "$rundir/input"
    printf '%s' "$run" > "$rundir/replay/run.sh"
    r_rec=(-n "$nodes" -t "$timeout_s" -b "$boot_timeout" -g "$grace" -m "$mem" --wid "$wid"
           --slice "$slice_us" --pause-yield "$pause_yield" --vt-shift "$vt_shift" --vt-lookahead "$vt_lookahead"
           --vt-start "$vt_start")
    [ -n "$vt_sync" ] && r_rec+=(--virtual-time) || r_rec+=(--no-vt-sync)
    [ -n "$vt_quantum" ] && r_rec+=(--vt-quantum "$vt_quantum")
    [ -n "${DN2_VT_INSN_PS:-}" ] && r_rec+=(--vt-insn-ps "$DN2_VT_INSN_PS")
    [ -n "$switch_opts" ] && r_rec+=(--switch-opts "$switch_opts")
    [ -n "$device_opts" ] && r_rec+=(--device-opts "$device_opts")
    [ -n "$append_extra" ] && r_rec+=(-a "$append_extra")
    [ -n "$secret_file" ] && r_rec+=(--secret-file "$secret_file")
    [ -n "$packages" ] && r_rec+=(--packages "$packages")
    [ -n "$mpi_image" ] && r_rec+=(--mpi)
    [ -n "$board_stats" ] && r_rec+=(--board-stats)
    [ -n "$hosts_arg" ] && r_rec+=(--hosts "$hosts_arg")
    [ -n "$rsh" ] && r_rec+=(--rsh "$rsh")
    [ -n "$switch_host" ] && r_rec+=(--switch-host "$switch_host")
    [ -n "$switch_addr" ] && r_rec+=(--switch-addr "$switch_addr")
    [ -n "$my_addr" ] && r_rec+=(--addr "$my_addr")
    [ -n "$no_slurm" ] && r_rec+=(--no-slurm)
    r_rec+=(-f "$rundir/replay/run.sh")
    # (a snapshot's run: the snapshot's own copy of the command)
    [ -n "$vsnap" ] && r_rec[${#r_rec[@]} - 1]=$vsnap/replay/run.sh
    [ ${#extra[@]} -gt 0 ] && r_rec+=(-- "${extra[@]}")
    printf '%s\0' "${r_rec[@]}" > "$rundir/replay/options"
    {
        printf 'qemu_bin=%q\nkernel=%q\nswitch_bin=%q\n' "$qemu_bin" "$kernel" "$switch_bin"
        [ -n "${DN2_DEVICE_GLOBALS:-}" ] && printf 'DN2_DEVICE_GLOBALS=%q\n' "$DN2_DEVICE_GLOBALS"
        [ -n "$replay_dir" ] && printf '# replay of %q\n' "$replay_dir"
    } > "$rundir/replay/programs"
    # The rank table is known before boot: node i's board asks the switch
    # for the LID the switch would give the i-th board to join (lid=).
    for ((i = 0; i < nodes; i++)); do
        lid=$(dn2_clid_to_lid $((i + 1))) || setup_die "cannot compute the LIDs from include/dimmnet2/dn2_abi.h"
        printf '%d %d %d\n' "$i" "$lid" "$wid"
    done > "$rundir/input/ranks"
fi

# ------------------------------------------------------------------ hosts
# Several hosts (--hosts, or a Slurm allocation): node i runs on
# hosts[i mod count] through the remote shell, the switch on switch_host.
# No hosts: everything here on 127.0.0.1, as always.
hosts=()
if [ -n "$hosts_arg" ]; then
    IFS=, read -r -a hosts <<< "$hosts_arg"
    rsh=${rsh:-ssh}
elif [ -n "${SLURM_JOB_NODELIST:-}" ] && [ -z "$no_slurm" ]; then
    command -v scontrol > /dev/null \
        || setup_die "SLURM_JOB_NODELIST is set but scontrol is missing (install slurm-client, or give --no-slurm)"
    mapfile -t hosts < <(scontrol show hostnames "$SLURM_JOB_NODELIST" 2> "$rundir/scontrol.err")
    [ ${#hosts[@]} -gt 0 ] || setup_die "no host in the Slurm allocation ($SLURM_JOB_NODELIST): $(head -3 "$rundir/scontrol.err")"
    # one task on the named host, as a step of this allocation that may
    # share its CPUs with the other nodes' steps
    rsh=${rsh:-srun --nodes=1 --ntasks=1 --overlap --quiet --nodelist}
    say "Slurm allocation ${SLURM_JOB_ID:-?}: hosts ${hosts[*]}"
fi
for h in "${hosts[@]}"; do
    case $h in ''|*[[:space:]]*) setup_die "--hosts: bad host name '$h'" ;; esac
done
# on_host HOST CMD...: the array on_cmd runs CMD on HOST.  ssh and rsh join
# their arguments into one line for the remote shell: give them the
# command quoted; "ip netns exec", srun and the like exec their arguments.
on_host() {
    local h=$1 words
    shift
    read -r -a words <<< "$rsh"
    case ${words[0]##*/} in
        ssh|rsh) on_cmd=("${words[@]}" "$h" "$(printf '%q ' "$@")") ;;
        *) on_cmd=("${words[@]}" "$h" "$@") ;;
    esac
}
# on_host_pid HOST PIDFILE CMD...: on_cmd runs CMD on HOST, which writes its
# process id (valid on that host) into PIDFILE for the teardown.
# shellcheck disable=SC2016   # expanded by the remote sh
on_host_pid() {
    local h=$1 f=$2
    shift 2
    on_host "$h" /bin/sh -c 'echo $$ > "$0"; exec "$@"' "$f" "$@"
}
remote_procs=()     # "HOST PIDFILE" of every process on another host
node_host=()
if [ ${#hosts[@]} -gt 0 ]; then
    [ -n "$ethernet" ] && setup_die "--ethernet is one host's dgram network: not with several hosts"
    switch_host=${switch_host:-${hosts[0]}}
    # Every host answers (and says its address when we need it).
    for h in $(printf '%s\n' "$switch_host" "${hosts[@]}" | awk '!seen[$0]++'); do
        on_host "$h" hostname -I
        if ! a=$(timeout 60 "${on_cmd[@]}" < /dev/null 2> "$rundir/rsh.err"); then
            setup_die "cannot run a command on host $h with '$rsh $h ...': $(head -3 "$rundir/rsh.err")"
        fi
        if [ "$h" = "$switch_host" ] && [ -z "$switch_addr" ]; then
            switch_addr=$(awk '{ print $1; exit }' <<< "$a")
            [ -n "$switch_addr" ] || setup_die "host $switch_host has no address (hostname -I): give --switch-addr"
        fi
    done
    [ -n "$my_addr" ] || my_addr=$(hostname -I 2> /dev/null | awk '{ print $1 }')
    [ -n "$my_addr" ] || setup_die "this host has no address (hostname -I): give --addr"
    http_bind=$my_addr
    case $switch_addr in *:*) switch_listen="[::]" ;; *) switch_listen=0.0.0.0 ;; esac
else
    switch_addr=127.0.0.1 switch_listen=127.0.0.1 http_bind=127.0.0.1 my_addr=10.0.2.2
fi
# (another host's python3 may live elsewhere: there, the one on its PATH)
[ ${#hosts[@]} -gt 0 ] && [ ${#slice_wrap[@]} -gt 0 ] && slice_wrap[0]=python3
switch_at() { case $switch_addr in *:*) echo "[$switch_addr]:$sport" ;; *) echo "$switch_addr:$sport" ;; esac; }

# ----------------------------------------------------------------- results
# RUNDIR/result.json (and --junit FILE): every node's state, exit status,
# duration, failure reason, logs and board counters (docs/cluster.md,
# "Results for CI").  Written once: at the end of a one-shot run, or when a
# kept or -i cluster stops.
# (scripts/dn2scripts/cluster_result.py)
declare -a res_state res_why
result_written=
kv() { printf '%s\0%s\0' "$1" "$2"; }
write_result() { # write_result EXIT_STATUS
    [ -z "$result_written" ] && [ ${#qemu_pids[@]} -gt 0 ] && [ -d "$rundir" ] || return 0
    result_written=1
    local i mode=one-shot f=$rundir/.result.in
    [ "$interactive" = 1 ] && mode=interactive
    [ -n "$kept" ] && mode=kept
    [ -z "$pmi_abort_msg" ] && [ -s "$rundir/pmi-abort" ] && pmi_abort_msg=$(head -1 "$rundir/pmi-abort")
    {
        kv name "$name"; kv mode "$mode"; kv command "$run"; kv node_count "$nodes"
        kv exit_status "$1"; kv duration_s "$(elapsed_f)"; kv all_links_up_s "${t_all_links:-}"
        kv rank_table_s "${t_ranks:-}"; kv ready_s "$(sed -n 's/^ready_s=//p' "$rundir/info" 2>/dev/null)"
        [ "$interactive" = 1 ] || kv timeout_s "$timeout_s"
        kv accel "$DN2_ACCEL_NAME"; kv mem "$mem"; kv mem_auto "${mem_auto:+1}"; kv smp "$smp"
        kv image "$initrd_built"; kv image_mem_mib "${img_need_mib:-}"
        [ -n "$img_unpacked_kib" ] && kv image_unpacked_mib "$(( (img_unpacked_kib + 1023) / 1024 ))"
        kv vt "${vt:+1}"; kv pmi_abort "$pmi_abort_msg"
        for ((i = 0; i < nodes; i++)); do
            if [ -z "${res_state[i]:-}" ]; then
                # (a kept or -i cluster that stops, or an interrupted run)
                case ${st_phase[i]} in
                    serving) res_state[i]=up ;;
                    done) if [ "${st_rc[i]}" = 0 ]; then res_state[i]=ok; else res_state[i]=failed; fi ;;
                    failed) res_state[i]=failed res_why[i]=${st_why[i]} ;;
                    *) res_state[i]=stopped res_why[i]="stopped while $(describe "$i" | sed 's/\x1b\[[0-9;]*m//g')" ;;
                esac
            fi
            kv "node.$i.state" "${res_state[i]}"; kv "node.$i.why" "${res_why[i]:-}"
            kv "node.$i.rc" "${st_rc[i]}"; kv "node.$i.lid" "${st_lid[i]}"; kv "node.$i.qemu_rc" "${qemu_rc[i]}"
            kv "node.$i.link_s" "${t_link[i]}"; kv "node.$i.joined_s" "${t_joined[i]}"
            kv "node.$i.begin_s" "${t_begin[i]}"; kv "node.$i.done_s" "${t_done[i]}"
        done
    } > "$f"
    PYTHONPATH=$dn2_pypath PYTHONDONTWRITEBYTECODE=1 "$py" -m dn2scripts.cluster_result "$f" "$rundir" "$junit" 2> "$rundir/result.err" \
        || say "warning: could not write $rundir/result.json: $(tail -1 "$rundir/result.err")"
    rm -f "$f"
    [ -s "$rundir/result.err" ] || rm -f "$rundir/result.err"
}

# ---------------------------------------------------------------- teardown
# Every child runs in its own process group (setsid), listed in $rundir/pgids;
# cleanup kills the groups.  A reaper outlives this script if it is killed
# with SIGKILL and kills them then.
pgids=()
reaper=
cleaned=
interrupted=
start_group() { # start_group STDOUT STDERR CMD...: the new group's id in $child
    local out=$1 err=$2
    shift 2
    setsid "$@" < /dev/null > "$out" 2> "$err" &
    child=$!
    pgids+=("$child")
    echo "$child" >> "$rundir/pgids"
}
alive() { # alive PID: running (a zombie is not)
    local st
    st=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1) || return 1
    [ -n "$st" ] && [ "$st" != Z ] && [ "$st" != X ]
}
kill_groups() { # kill_groups SIGNAL PGID...
    local sig=$1 g
    shift
    for g in "$@"; do kill "-$sig" -- "-$g" 2>/dev/null; done
}
cleanup() {
    local exit_rc=$?
    [ -n "$cleaned" ] && return
    cleaned=1
    trap '' INT TERM HUP
    # (a one-shot run wrote it at its end; a kept cluster now, as it stops)
    write_result "$exit_rc"
    [ -n "${display_active:-}" ] && printf '\n' >&2
    local t=0 g any
    # The guests first (they would only see their link drop), then the
    # servers; TERM, then KILL after 3 s.  On other hosts: TERM by the
    # process id each wrote, through the remote shell, all hosts at once.
    local e rp=()
    for e in "${remote_procs[@]}"; do
        # shellcheck disable=SC2016   # expanded by the remote sh
        on_host "${e%% *}" /bin/sh -c 'p=$(cat "$0" 2> /dev/null) && kill -TERM "$p" 2> /dev/null; :' "${e#* }"
        timeout 20 "${on_cmd[@]}" < /dev/null > /dev/null 2>&1 &
        rp+=($!)
    done
    [ ${#rp[@]} -gt 0 ] && wait "${rp[@]}" 2> /dev/null
    [ -n "${snap_helper:-}" ] && kill "$snap_helper" 2>/dev/null
    kill_groups TERM "${qemu_pids[@]}"
    while [ $t -lt 30 ]; do
        any=
        for g in "${qemu_pids[@]}"; do alive "$g" && any=1; done
        [ -z "$any" ] && break
        sleep 0.1; t=$((t + 1))
    done
    kill_groups KILL "${qemu_pids[@]}"
    kill_groups TERM "${pgids[@]}"
    sleep 0.2
    kill_groups KILL "${pgids[@]}"
    [ -n "$reaper" ] && kill "$reaper" 2>/dev/null
    wait 2>/dev/null
    [ -f "$rundir/info" ] && sed -i 's/^launcher_pid=.*/launcher_pid=0/' "$rundir/info"
}
qemu_pids=()
trap cleanup EXIT
on_int() {
    interrupted=1
    [ -n "${display_active:-}" ] && printf '\n' >&2
    display_active=
    say "interrupted: stopping the cluster"
    # Dev mode is meant to end with Ctrl-C.
    if [ "$interactive" = 1 ] && [ -n "${ready_announced:-}" ]; then exit 0; fi
    exit 130
}
trap on_int INT
trap 'exit 143' TERM
trap 'exit 129' HUP

setsid bash -c 'while kill -0 '"$$"' 2>/dev/null; do sleep 1; done
    for g in $(cat "$1" 2>/dev/null); do kill -KILL -- "-$g" 2>/dev/null; done' reaper "$rundir/pgids" \
    < /dev/null > /dev/null 2>&1 &
reaper=$!

# Time since the start: elapsed (whole seconds, for timeouts), elapsed_f
# (tenths, for the display and the timings).
now_ms() { local t=${EPOCHREALTIME//[!0-9]/}; echo $((t / 1000)); }
t_start_ms=$(now_ms)
elapsed() { echo $((($(now_ms) - t_start_ms) / 1000)); }
elapsed_f() { local d=$((($(now_ms) - t_start_ms) / 100)); echo "$((d / 10)).$((d % 10))"; }

# guest_output NODE: what the command printed (between the sentinels, or
# up to now if it has not finished)
guest_output() {
    tr -d '\r' < "$rundir/node$1.log" 2>/dev/null \
        | awk '/^DN2-GUEST-END rc=/ { exit } f { print } /^DN2-GUEST-BEGIN$/ { f = 1 }'
}

# tail_log FILE [N]: the last lines of a console, without CRs
tail_log() { tr -d '\r' < "$1" 2>/dev/null | tail -"${2:-25}"; }

# wait_ready FILE PID TENTHS: until a server wrote its port into FILE, it
# died, or TENTHS tenths of a second passed; true when FILE has the port
wait_ready() {
    local t
    for ((t = 0; t < $3; t++)); do
        [ -s "$1" ] && return 0
        alive "$2" || break
        sleep 0.1
    done
    [ -s "$1" ]
}

# ------------------------------------------------------------------ switch
# shellcheck disable=SC2206  # --switch-opts is word-split on purpose
vt_sw=()
if [ -n "$vt" ] && [ -n "$vt_sync" ]; then
    vt_sw=(--virtual-time --vt-boards "$nodes" --vt-lookahead "$vt_lookahead" ${vt_quantum:+--vt-quantum "$vt_quantum"})
fi
sw_cmd=("${slice_wrap[@]}" "$switch_bin" --listen "$switch_listen:$switch_port" --ready-file "$rundir/switch.port"
        "${secret_sw[@]}" "${vt_sw[@]}" $switch_opts)
printf '%q ' "${sw_cmd[@]}" > "$rundir/switch.cmd"; echo >> "$rundir/switch.cmd"
if [ ${#hosts[@]} -gt 0 ]; then
    on_host_pid "$switch_host" "$rundir/switch.pid" "${sw_cmd[@]}"
    remote_procs+=("$switch_host $rundir/switch.pid")
    sw_cmd=("${on_cmd[@]}")
fi
start_group "$rundir/switch.out" "$rundir/switch.log" "${sw_cmd[@]}"
switch_pid=$child
# (a remote shell may take a while to log in)
sw_wait=100; [ ${#hosts[@]} -gt 0 ] && sw_wait=600
if ! wait_ready "$rundir/switch.port" "$switch_pid" "$sw_wait"; then
    if [ "$switch_port" != 0 ] && grep -qi 'in use\|bind' "$rundir/switch.log" "$rundir/switch.out" 2>/dev/null; then
        setup_die "switch port $switch_port is busy: $(cat "$rundir/switch.log" "$rundir/switch.out" | head -3) (choose another --switch-port, or 0 for a free one)"
    fi
    setup_die "dn2-switch did not start${switch_host:+ on host $switch_host}: $(cat "$rundir/switch.log" "$rundir/switch.out" 2>/dev/null | tail -5)"
fi
sport=$(cat "$rundir/switch.port")

# ---------------------------------------------------------- guest Ethernet
# --ethernet: every node's second NIC is a dgram netdev on 127.0.0.1:eth_ports[i]
# talking to the hub on 127.0.0.1:$eport (scripts/ethhub.c, built by meson
# as build/tools/dn2-ethhub; DN2_ETHHUB overrides).
eth_ports=()
if [ -n "$ethernet" ]; then
    hub_bin=$(dn2_find_ethhub) || exit 4
    # Free UDP ports for the nodes' ends (held open together so they differ).
    read -r -a eth_ports <<< "$(PYTHONPATH=$dn2_pypath PYTHONDONTWRITEBYTECODE=1 "$py" -m dn2scripts.free_udp_ports "$nodes")"
    [ ${#eth_ports[@]} -eq "$nodes" ] || setup_die "could not find $nodes free UDP ports on 127.0.0.1"
    hub_args=()
    for p in "${eth_ports[@]}"; do hub_args+=(--member "127.0.0.1:$p"); done
    start_group "$rundir/ethhub.out" "$rundir/ethhub.log" \
        "${slice_wrap[@]}" "$hub_bin" --listen 127.0.0.1:0 --ready-file "$rundir/ethhub.port" "${hub_args[@]}"
    wait_ready "$rundir/ethhub.port" "$child" 50 || setup_die "dn2-ethhub did not start: $(tail -3 "$rundir/ethhub.log")"
    eport=$(cat "$rundir/ethhub.port")
fi

# -------------------------------------------------------------- job server
# (none in virtual time: the command and the rank table go in at boot)
if [ -n "$vt" ]; then
    hport= guest_url=
else
mkdir -p "$EXPORT_DIR"
start_group "$rundir/http.out" "$rundir/http.log" \
    "$py" -u "$here/pmi-server.py" --rundir "$rundir" --www "$rundir/www" --export "$EXPORT_DIR" \
    --serve "$serve_dir" --nodes "$nodes" --jobid "$jobid" --secret-file "$rundir/secret" \
    --token-dir "$rundir/tokens" --bind "$http_bind" --port "$http_port" --ready "$rundir/http.port" \
    --result-max $((128 << 20))
http_pid=$child
if ! wait_ready "$rundir/http.port" "$http_pid" 100; then
    if [ -n "$snap" ] && grep -q 'is busy' "$rundir/http.log" 2>/dev/null; then
        setup_die "the snapshot's job server port $http_port is busy: the guests of snapshot $from_tag reach their job server there; the cluster it was taken from (or another restore of it) still runs: stop it first"
    fi
    grep -q 'is busy' "$rundir/http.log" 2>/dev/null \
        && setup_die "HTTP port $http_port is busy (choose another --http-port, or 0 for a free one)"
    setup_die "the job/file server did not start: $(tail -5 "$rundir/http.log" 2>/dev/null)"
fi
hport=$(cat "$rundir/http.port")
# The guests reach this host as 10.0.2.2 (QEMU's user network); from other
# hosts through its address (the user network's NAT, out of that host).
guest_url=http://$my_addr:$hport
fi

# ------------------------------------------------------------------ guests
{
    echo "launcher_pid=$$"
    printf 'name=%q\nstarted=%s\nmem=%s\nswitch_bin=%q\n' "$name" "$(date +%s)" "$mem" "$switch_bin"
    [ -n "$kept" ] && echo "kept=1"
    [ -n "$secret_file" ] && printf 'secret_file=%q\n' "$secret_file"
    [ -n "$board_stats" ] && echo "board_stats=1"
    echo "nodes=$nodes"
    echo "interactive=$interactive"
    echo "jobid=$jobid"
    echo "switch=$(switch_at)"
    [ -n "$vt" ] && echo "virtual_time=1"
    [ -n "$hport" ] && echo "http=http://$http_bind:$hport"
    [ -n "$hport" ] && echo "guest_http=$guest_url"
    [ -n "$ethernet" ] && echo "ethhub=127.0.0.1:$eport"
} > "$rundir/info"

# node_cmd I: the command for node I: {node} and {rank} are I
node_cmd() { local c=${run//\{node\}/$1}; printf '%s' "${c//\{rank\}/$1}"; }
for ((i = 0; i < nodes; i++)); do
    append="console=ttyS0 panic=-1 quiet dn2.node=$i dn2.nodes=$nodes dn2.wid=$wid"
    vt_args=()
    if [ -n "$vt" ]; then
        # The command and the rank table as fw_cfg files; the guest waits
        # for its link (in virtual time) and checks its LID in the table.
        printf '%s\n' "$(node_cmd "$i")" > "$rundir/input/node$i.sh"
        # The guest waits for its link in virtual seconds, a fixed 300: the
        # host's boot limit (-b) would put a host-dependent number into the
        # guest, and other bytes mean other instructions.
        append+=" dn2.linkwait=300 dn2.ranks=fw_cfg:opt/dn2/ranks dn2.run=@fw_cfg:opt/dn2/run"
        vt_args=(-fw_cfg "name=opt/dn2/ranks,file=${rundir//,/,,}/input/ranks"
                 -fw_cfg "name=opt/dn2/run,file=${rundir//,/,,}/input/node$i.sh")
        vt_dev=",lid=$(sed -n "$((i + 1))s/^[0-9]* \([0-9]*\) .*/\1/p" "$rundir/input/ranks")"
        [ -n "$vt_sync" ] && vt_dev+=",vtime=on,vt-latency-ns=$vt_lookahead,vt-start-ns=$vt_start_ns,pcap=${rundir//,/,,}/node$i.pcap"
        if [ -n "$gdb_node" ] && [ "$gdb_node" = "$i" ]; then
            vt_args+=(-gdb "tcp:127.0.0.1:$gdb_port" -S)
        fi
        # --snapshot-at: the cut is set over QMP before the guest runs
        [ -n "$snap_at" ] && vt_args+=(-S)
    else
        append+=" dn2.job=$guest_url dn2.jobid=$jobid dn2.linkwait=$boot_timeout dn2.barrier=$((boot_timeout + 60))"
        if [ -n "$run" ]; then
            printf '%s\n' "$(node_cmd "$i")" > "$rundir/www/cmd/node$i.sh"
            append+=" dn2.run=@cmd/node$i.sh"
        fi
    fi
    serial2=()
    if [ "$interactive" = 1 ]; then
        append+=" dn2.mode=serve dn2.shell=ttyS1"
        sock=$rundir/node$i.sock
        # A unix socket path has at most 107 bytes.
        [ ${#sock} -lt 100 ] || sock=${TMPDIR:-/tmp}/dn2-$$-node$i.sock
        echo "node${i}_sock=$sock" >> "$rundir/info"
        serial2=(-serial "unix:$sock,server=on,wait=off")
    fi
    eth_args=()
    if [ -n "$ethernet" ]; then
        append+=" dn2.ether=192.168.77.$((10 + i))/24${ether_mtu:+ dn2.ethermtu=$ether_mtu}"
        # shellcheck disable=SC2054
        eth_args=(-netdev "dgram,id=n1,local.type=inet,local.host=127.0.0.1,local.port=${eth_ports[i]},remote.type=inet,remote.host=127.0.0.1,remote.port=$eport"
                  -device "virtio-net-pci,netdev=n1,mac=52:54:00:77:00:$(printf '%02x' "$i"),romfile=")
    fi
    qmp_args=()
    # (every node of a kept or -i cluster: snapshots stop and save them)
    if [ -n "$board_stats" ] || [ "$interactive" = 1 ] || [ -n "$snap_at" ] || [ -n "$vsnap" ]; then
        qsock=$rundir/node$i.qmp
        [ ${#qsock} -lt 100 ] || qsock=${TMPDIR:-/tmp}/dn2-$$-node$i.qmp
        echo "node${i}_qmp=$qsock" >> "$rundir/info"
        qmp_args=(-qmp "unix:$qsock,server=on,wait=off")
    fi
    [ -n "$append_extra" ] && append+=" $append_extra"
    # The node's token (written 0600 by the server) reaches the guest as a
    # fw_cfg file: only its path is on QEMU's command line.
    # (no user network, no job server in virtual time)
    net_args=(-netdev user,id=n0 -device virtio-net-pci,netdev=n0,romfile=)
    if [ -n "$vt" ]; then
        net_args=()
    else
        tokfile=$rundir/tokens/node$i
        [ -s "$tokfile" ] || setup_die "the job server wrote no token for node $i ($tokfile)"
        net_args+=(-fw_cfg "name=opt/dn2/token,file=${tokfile//,/,,}")
    fi
    # --from: the node loads its snapshot and waits (-S) for the others;
    # its console goes on after the snapshot's; its board asks for its LID.
    serial1=(-serial "file:$rundir/node$i.log") snap_args=() snap_dev=
    if [ -n "$snap" ]; then
        serial1=(-chardev "file,id=dn2con,path=${rundir//,/,,}/node$i.log,append=on" -serial chardev:dn2con)
        snap_args=(-incoming "file:${snap//,/,,}/node$i.mig" -S)
        # (in virtual time the board asks for its LID already)
        [ -n "$vt" ] || snap_dev=",lid=${s_lid[i]}"
    fi
    # shellcheck disable=SC2054  # commas inside QEMU option values
    cmd=("${slice_wrap[@]}" "$qemu_bin" "${DN2_ACCEL_ARGS[@]}" -M q35 -m "$mem" -smp "$smp"
         -nodefaults -display none -no-reboot -name "node$i,debug-threads=on" -L "$firmware"
         -kernel "$kernel" -initrd "$initrd" -append "$append"
         "${serial1[@]}" "${serial2[@]}" "${snap_args[@]}"
         "${secret_obj[@]}"
         -device "dimmnet2,switch=$(switch_at),guid=$((i + 1))${vt_dev:-}$snap_dev$secret_prop${device_opts:+,$device_opts}${DN2_DEVICE_GLOBALS:+,$DN2_DEVICE_GLOBALS}"
         "${net_args[@]}" "${vt_args[@]}"
         "${eth_args[@]}" "${qmp_args[@]}" "${extra[@]}")
    # --node-qemu I 'ARGS': node I's own QEMU arguments (word-split)
    # shellcheck disable=SC2206
    [ -n "${node_qemu[i]:-}" ] && cmd+=(${node_qemu[i]})
    if [ ${#hosts[@]} -gt 0 ]; then
        node_host[i]=${hosts[i % ${#hosts[@]}]}
        echo "node${i}_host=${node_host[i]}" >> "$rundir/info"
        on_host_pid "${node_host[i]}" "$rundir/node$i.pid" "${cmd[@]}"
        remote_procs+=("${node_host[i]} $rundir/node$i.pid")
        cmd=("${on_cmd[@]}")
    fi
    printf '%q ' "${cmd[@]}" > "$rundir/node$i.cmd"; echo >> "$rundir/node$i.cmd"
    if [ -n "$snap" ]; then
        cp "$snap/node$i.log" "$rundir/node$i.log"
    else
        : > "$rundir/node$i.log"
    fi
    start_group "$rundir/node$i.stdout" "$rundir/node$i.stderr" "${cmd[@]}"
    qemu_pids[i]=$child
    echo "node${i}_pid=$child" >> "$rundir/info"
done

# --board-stats: a poller reads every board's stat-* counters over QMP once
# a second into RUNDIR/board-stats/nodeI (the last read stays when the
# guest has powered off).  A poll is one command per board (its "stats"
# property: every counter in one read; the boards' QOM paths are looked up
# once): QMP takes a command in a byte at a time and runs it under QEMU's
# global lock, so reading forty counters one by one every second disturbed
# the guests being measured.  It connects for each poll, because a QMP
# socket serves one client at a time (bench-cluster.sh --lock-profile is
# another).
if [ -n "$board_stats" ]; then
    mkdir -p "$rundir/board-stats"
    start_group "$rundir/board-stats.out" "$rundir/board-stats.log" \
        env PYTHONPATH="$dn2_pypath" PYTHONDONTWRITEBYTECODE=1 "$py" -m dn2scripts.board_stats "$here" "$rundir/board-stats" $(for ((i = 0; i < nodes; i++)); do sed -n "s/^node${i}_qmp=//p" "$rundir/info"; done)
fi

snap_helper=
if [ -n "$snap_at" ]; then
    vt_snapshot_helper &
    snap_helper=$!
fi

say "${B}cluster $name${N}: $nodes node$([ "$nodes" = 1 ] || echo s) ($DN2_ACCEL_NAME, ${mem} MiB, $smp CPU), switch $(switch_at)${switch_host:+ on host $switch_host}"
[ ${#hosts[@]} -gt 0 ] && say "hosts: ${hosts[*]} (remote shell: $rsh)"
if [ -n "$vt" ]; then
    icount_what=shift=$vt_shift
    [ -n "${DN2_VT_INSN_PS:-}" ] && icount_what=insn-ps=$DN2_VT_INSN_PS
    say "virtual time: -icount $icount_what, $([ -n "$vt_sync" ] && echo "boards in lock-step (lookahead $vt_lookahead ns${vt_quantum:+, quantum $vt_quantum ns})" || echo "boards NOT synchronised (--no-vt-sync)"); no network, no job server; rank table: $rundir/input/ranks"
    if [ -n "$gdb_node" ]; then
        say "${B}node$gdb_node waits for gdb${N} (the others wait for it in virtual time):"
        say "  gdb -ex 'target remote 127.0.0.1:$gdb_port' VMLINUX   (then: break ..., continue)"
    fi
else
say "files: $EXPORT_DIR served at http://$http_bind:$hport/ to the nodes only (in the guests: ${B}\$DN2_HTTP/${N} = $guest_url/n/NODE/TOKEN)"
fi
say "logs:  $rundir/node<i>.log"

# ----------------------------------------------------------------- monitor
# Per node: st_phase (boot, net, link, linkdown, joined, ranks, running, done,
# serving, failed), st_lid, st_rc, st_why, timestamps.
declare -a st_phase st_lid st_rc st_why t_link t_joined t_begin t_done qemu_rc
for ((i = 0; i < nodes; i++)); do st_phase[i]=start; st_lid[i]=; st_rc[i]=; st_why[i]=; t_link[i]=; t_joined[i]=; t_begin[i]=; t_done[i]=; qemu_rc[i]=; done
ranks_written=
t_all_links=
t_ranks=
t_first_fail=
pmi_abort_msg=
# ----------------------------------------------------------------- restore
# --from: every node loaded, every board back at its LID, then all run.
t_restored=
if [ -n "$snap" ]; then
    say "restoring snapshot $from_tag: $nodes nodes, LIDs $s_lids"
    socks=()
    for ((i = 0; i < nodes; i++)); do socks+=("$(sed -n "s/^node${i}_qmp=//p" "$rundir/info")"); done
    sw_stats=("$switch_bin" --stats "127.0.0.1:$sport" "${secret_sw[@]}")
    # (in the background, so that a signal ends the launcher at once; the
    # helper ends when the launcher is gone)
    PYTHONPATH=$dn2_pypath PYTHONDONTWRITEBYTECODE=1 "$py" -m dn2scripts.restore "$here" "$boot_timeout" "$(IFS=$'\x1f'; echo "${sw_stats[*]}")" "$s_lids" \
        "${qemu_pids[*]}" "${socks[@]}" > "$rundir/restore.out" &
    wait $!
    r_rc=$?
    r_out=$(cat "$rundir/restore.out" 2>/dev/null)
    if [ "$r_rc" -ne 0 ]; then
        for ((i = 0; i < nodes; i++)); do st_phase[i]=failed st_why[i]="the restore of snapshot $from_tag failed (launcher.log says why)"; done
        for ((i = 0; i < nodes; i++)); do
            [ -s "$rundir/node$i.stderr" ] && say "node$i: $(tail -2 "$rundir/node$i.stderr" | tr '\n' ' ')"
        done
        exit 3
    fi
    t_restored=$(elapsed_f)
    say "restored: every node loaded and running, every board at its LID after $t_restored s ($r_out)"
fi

# (a restored cluster has its rank table: the snapshot's)
[ -n "$snap" ] && ranks_written=1 t_ranks=$t_restored

# scan NODE: updates the node's state from its console and its process
scan() {
    local i=$1 out net link lid joined ranks begin end serving panic sf unpack
    IFS='|' read -r out net link lid joined ranks begin end serving panic sf unpack < <(
        tr -d '\r' < "$rundir/node$i.log" 2>/dev/null | awk '
            /^DN2-NET / { net = 1 }
            /^DN2-LINK up lid=/ && link == "" { link = "up"; lid = substr($3, 5) }
            /^DN2-LINK down/ && link == "" { link = "down" }
            /^DN2-JOINED/ { joined = 1 }
            /^DN2-RANKS/ { ranks = 1 }
            /^DN2-START-FAILED / && sf == "" { sf = substr($0, 18) }
            /^DN2-GUEST-BEGIN$/ { begin = 1 }
            /^DN2-GUEST-END rc=/ && begin && end == "" { end = substr($0, 18) }
            /^DN2-SERVING/ { serving = 1 }
            /Kernel panic/ { panic = 1 }
            /Initramfs unpacking failed/ { unpack = 1 }
            END { printf "%d|%d|%s|%s|%d|%d|%d|%s|%d|%d|%s|%d\n", (NR > 0), net, link, lid,
                         joined, ranks, begin, end, serving, panic, sf, unpack }')
    case ${st_phase[i]} in done|failed) return ;; esac
    local p=boot
    [ "$out" = 1 ] || p=start
    [ "$net" = 1 ] && p=net
    [ "$link" = up ] && { p="link"; st_lid[i]=$lid; [ -n "${t_link[i]}" ] || t_link[i]=$(elapsed_f); }
    [ "$link" = down ] && p=linkdown
    [ "$joined" = 1 ] && { p=joined; [ -n "${t_joined[i]}" ] || t_joined[i]=$(elapsed_f); }
    [ "$ranks" = 1 ] && p=ranks
    [ "$begin" = 1 ] && { p=running; [ -n "${t_begin[i]}" ] || t_begin[i]=$(elapsed_f); }
    [ "$serving" = 1 ] && [ -z "$end" ] && [ "$begin" = 0 ] && p=serving
    if [ -n "$sf" ]; then
        p=failed; st_why[i]="job start failed: $sf"
    elif [ -n "$end" ]; then
        st_rc[i]=$end
        [ -n "${t_done[i]}" ] || t_done[i]=$(elapsed_f)
        if [ "$interactive" = 0 ]; then
            p="done"
        elif [ "$serving" = 1 ]; then
            p=serving       # dev mode: the command is followed by serving
        fi
    fi
    if [ "$panic" = 1 ]; then p=failed; st_why[i]="kernel panic"; fi
    # The image did not fit: what follows (no /init, no job server) is
    # only a consequence.
    if [ "$unpack" = 1 ]; then p=failed; st_why[i]=$(image_too_big); fi
    if [ "$p" != failed ] && [ "$p" != "done" ] && ! alive "${qemu_pids[i]}"; then
        wait "${qemu_pids[i]}" 2>/dev/null; qemu_rc[i]=$?
        # The guest may have printed its end line and powered off between
        # reading the log above and this check: read it once more.
        end=$(tr -d '\r' < "$rundir/node$i.log" 2>/dev/null |
              sed -n 's/^DN2-GUEST-END rc=//p' | head -1)
        if [ -n "$end" ] && [ "$interactive" = 0 ]; then
            st_rc[i]=$end
            [ -n "${t_done[i]}" ] || t_done[i]=$(elapsed_f)
            st_phase[i]=done
            return
        fi
        p=failed
        local how="status ${qemu_rc[i]}" when="before the command finished"
        [ "${qemu_rc[i]}" -gt 128 ] && [ "${qemu_rc[i]}" -lt 160 ] && how="killed by SIG$(kill -l $((qemu_rc[i] - 128)) 2>/dev/null)"
        [ "${st_phase[i]}" = serving ] && when="while serving jobs"
        if [ -n "${node_host[i]:-}" ]; then
            st_why[i]="node lost on host ${node_host[i]}: QEMU or the remote shell ($rsh) ended ($how) $when"
        else
            st_why[i]="QEMU exited ($how) $when"
        fi
        [ -s "$rundir/node$i.stderr" ] && st_why[i]+=": $(tail -1 "$rundir/node$i.stderr")"
    fi
    st_phase[i]=$p
}

# image_too_big: why a node whose initramfs did not unpack failed, and the fix
image_too_big() {
    if [ -n "$img_unpacked_kib" ]; then
        echo "the guest image unpacks to $(( (img_unpacked_kib + 1023) / 1024 )) MiB, more than guest memory of $mem MiB holds (the initramfs unpacks into RAM, at most half of it; console: 'Initramfs unpacking failed'): give -m $img_need_mib or more, or leave -m out to size it from the image"
    else
        echo "the guest image does not fit in guest memory of $mem MiB (console: 'Initramfs unpacking failed'): give a larger -m"
    fi
}

# write_state: every node's state for "status", "exec" and "stop"
# (RUNDIR/state: "I PHASE LID RC WHY", "-" for nothing), when it changed.
state_written=
write_state() {
    local i s=''
    for ((i = 0; i < nodes; i++)); do
        s+="$i ${st_phase[i]} ${st_lid[i]:--} ${st_rc[i]:--} ${st_why[i]}"$'\n'
    done
    [ "$s" = "$state_written" ] && return 0
    state_written=$s
    printf '%s' "$s" > "$rundir/state.tmp" && mv -f "$rundir/state.tmp" "$rundir/state"
}

describe() { # describe NODE: the node's state in words
    local i=$1 lidtxt=
    [ -n "${st_lid[i]}" ] && lidtxt="LID $(printf '0x%04x' "${st_lid[i]}")"
    case ${st_phase[i]} in
        start) echo "starting QEMU" ;;
        boot) echo "booting" ;;
        net) echo "booted, network up, waiting for the link" ;;
        link) echo "link up, $lidtxt" ;;
        linkdown) echo "${R}link DOWN${N}" ;;
        joined) echo "$lidtxt, joined, waiting for the rank table" ;;
        ranks) echo "$lidtxt, got the rank table" ;;
        running) echo "$lidtxt, ${Y}running${N}" ;;
        serving) echo "$lidtxt, ${G}ready${N} (serving jobs)${st_rc[i]:+, command rc=${st_rc[i]}}" ;;
        done) if [ "${st_rc[i]}" = 0 ]; then echo "$lidtxt, ${G}done rc=0${N} (${t_done[i]} s)"; else echo "$lidtxt, ${R}done rc=${st_rc[i]}${N} (${t_done[i]} s)"; fi ;;
        failed) echo "${R}FAILED${N}: ${st_why[i]}" ;;
    esac
}

# The progress display: one line per node, redrawn in place on a terminal;
# otherwise one line per change.
display_tty=0
[ "$quiet" = 0 ] && [ -t 2 ] && display_tty=1
display_active=
declare -a shown
# The switch's latest progress line in virtual time ("vt: cluster at ...").
vt_progress() {
    [ -n "$vt" ] && [ -n "$vt_sync" ] || return 0
    grep -a 'vt: ' "$rundir/switch.log" 2>/dev/null | tail -1
}
vt_shown= vt_shown_at=0
render() {
    [ "$quiet" = 1 ] && return
    local i line t rows=$nodes
    [ -n "$vt" ] && [ -n "$vt_sync" ] && rows=$((nodes + 1))
    if [ "$display_tty" = 1 ]; then
        [ -n "$display_active" ] && printf '\e[%dA' "$rows" >&2
        display_active=1
        for ((i = 0; i < nodes; i++)); do
            t=${t_done[i]}
            [ "${st_phase[i]}" = "done" ] || t=$(elapsed_f)
            printf '\r\e[K  node%-2d %5ss  %s\n' "$i" "$t" "$(describe "$i")" >&2
        done
        [ "$rows" = "$nodes" ] || printf '\r\e[K  switch  %s\n' "$(vt_progress | cut -c1-150)" >&2
    else
        line=$(vt_progress)
        if [ -n "$line" ] && [ "$line" != "$vt_shown" ] && [ $(($(elapsed) - vt_shown_at)) -ge 30 ]; then
            vt_shown=$line vt_shown_at=$(elapsed)
            printf '[cluster] %5ss switch: %s\n' "$(elapsed_f)" "$line" >&2
        fi
        for ((i = 0; i < nodes; i++)); do
            line=$(describe "$i")
            [ "$line" = "${shown[i]:-}" ] && continue
            shown[i]=$line
            printf '[cluster] %5ss node%d: %s\n' "$(elapsed_f)" "$i" "$line" >&2
        done
    fi
}
display_stop() { # further changes as lines
    render
    display_tty=0
    display_active=
    local i
    for ((i = 0; i < nodes; i++)); do shown[i]=$(describe "$i"); done
}

# Why a node that did not join in time is stuck, from what its console shows.
stuck_reason() {
    local i=$1
    case ${st_phase[i]} in
        start) echo "no console output at all (QEMU, firmware or kernel problem; see $rundir/node$i.stderr)" ;;
        boot) echo "booted but no network/link report (is /init from scripts/build-initramfs.sh?)" ;;
        boot) if [ -n "$vt" ]; then echo "booted but its board's link never came up (switch $(switch_at) unreachable? in virtual time the switch holds every board at 0 until all $nodes are up: see $rundir/switch.log)"; else echo "booted but no network/link report (is /init from scripts/build-initramfs.sh?)"; fi ;;
        net) echo "its board's link never came up (switch $(switch_at) unreachable${node_host[i]:+ from host ${node_host[i]}}? see $rundir/switch.log)" ;;
        link) echo "link up but it never reached the job server $guest_url (guest networking?)" ;;
        linkdown) echo "its board's link never came up" ;;
        joined|ranks) echo "joined, waiting for the others" ;;
        *) echo "${st_phase[i]}" ;;
    esac
}

show_console() { # show_console NODE
    local i=$1
    {
        echo "---- node$i: last console lines ($rundir/node$i.log) ----"
        tail_log "$rundir/node$i.log" 25
        if [ -s "$rundir/node$i.stderr" ]; then
            echo "---- node$i: QEMU stderr ----"
            tail -10 "$rundir/node$i.stderr"
        fi
    } >&2
}

# The rank table, once every node joined: checked against the switch.
write_ranks() {
    local i lid link w rec lids=() stats line sw_lid guid
    for ((i = 0; i < nodes; i++)); do
        rec=$(cat "$rundir/joins/node$i")
        lid=$(sed -n 's/.*lid=\([0-9]*\).*/\1/p' <<< "$rec")
        link=$(sed -n 's/.*link=\([0-9]*\).*/\1/p' <<< "$rec")
        w=$(sed -n 's/.*wid=\([0-9]*\).*/\1/p' <<< "$rec")
        if [ "$link" != 3 ] || [ -z "$lid" ] || [ "$lid" = 0 ]; then
            st_phase[i]=failed; st_why[i]="reported link state ${link:-?}, LID ${lid:-?}: the link is not up"
            return 1
        fi
        lids[i]=$lid
        printf '%d %d %d\n' "$i" "$lid" "${w:-0}"
    done > "$rundir/www/ranks.tmp"
    # Distinct LIDs.
    if [ "$(printf '%s\n' "${lids[@]}" | sort -u | wc -l)" -ne "$nodes" ]; then
        for ((i = 0; i < nodes; i++)); do st_phase[i]=failed; st_why[i]="LIDs are not distinct: ${lids[*]}"; done
        return 1
    fi
    # The subnet manager's view: GUID i+1 must hold the LID node i reported.
    # (on the switch's host: it answers its own host over loopback)
    on_cmd=("$switch_bin" --stats "127.0.0.1:$sport" "${secret_sw[@]}")
    [ ${#hosts[@]} -gt 0 ] && on_host "$switch_host" "${on_cmd[@]}"
    if stats=$(timeout 30 "${on_cmd[@]}" < /dev/null 2>&1); then
        for ((i = 0; i < nodes; i++)); do
            guid=$(printf '0x%016x' $((i + 1)))
            line=$(awk -v g="$guid" '$2 == "active" && $3 == g' <<< "$stats")
            sw_lid=$(awk '{ print $1 }' <<< "$line")
            if [ -z "$sw_lid" ] || [ $((sw_lid)) -ne "${lids[i]}" ]; then
                st_phase[i]=failed
                st_why[i]="reports LID ${lids[i]}, but the switch has GUID $guid at LID ${sw_lid:-none}"
                return 1
            fi
        done
    else
        say "warning: could not ask the switch for its port table (dn2-switch --stats): $stats"
    fi
    mv "$rundir/www/ranks.tmp" "$rundir/www/ranks"
    return 0
}

abort_status=0
pmi_abort_msg=
fail_nodes=()
ready_announced=
# (sleep in the background + wait: a trapped signal interrupts "wait" at
# once, while a foreground sleep would delay or even swallow a lone SIGINT)
nap() { sleep "$1" & wait $!; }
# (a restored cluster is up already: dn2scripts/restore.py saw every node loaded and
# running and every board at its saved LID, so the first round takes that
# for the consoles' word; the later rounds read them as always)
first_nap=0.3 restored_now=
if [ -n "$snap" ] && [ -z "$vt" ]; then
    first_nap=0 restored_now=1
    for ((i = 0; i < nodes; i++)); do
        st_phase[i]=serving st_lid[i]=${s_lid[i]} t_link[i]=$t_restored t_joined[i]=$t_restored
    done
fi
while :; do
    nap "$first_nap"
    first_nap=0.3
    if [ -n "$restored_now" ]; then
        restored_now=
    else
        for ((i = 0; i < nodes; i++)); do scan "$i"; done
    fi

    n_link=0 n_joined=0 n_done=0 n_failed=0 n_serving=0
    for ((i = 0; i < nodes; i++)); do
        [ -n "${t_link[i]}" ] && n_link=$((n_link + 1))
        [ -f "$rundir/joins/node$i" ] && n_joined=$((n_joined + 1))
        case ${st_phase[i]} in
            done) n_done=$((n_done + 1)) ;;
            failed) n_failed=$((n_failed + 1)) ;;
            serving) n_serving=$((n_serving + 1)) ;;
        esac
    done
    [ "$n_link" -eq "$nodes" ] && [ -z "$t_all_links" ] && t_all_links=$(elapsed_f)
    # Virtual time: the rank table was known at boot; every node checked it.
    if [ -n "$vt" ] && [ -z "$t_ranks" ]; then
        n_r=0
        for ((i = 0; i < nodes; i++)); do
            case ${st_phase[i]} in ranks|running|done) n_r=$((n_r + 1)) ;; esac
        done
        [ "$n_r" -eq "$nodes" ] && t_ranks=$(elapsed_f)
    fi
    if [ "$n_joined" -eq "$nodes" ] && [ -z "$ranks_written" ] && [ "$n_failed" -eq 0 ]; then
        ranks_written=1
        if write_ranks; then
            t_ranks=$(elapsed_f)
        else
            n_failed=1
        fi
    fi
    render
    write_state

    if [ "$interactive" = 1 ]; then
        if [ -z "$ready_announced" ] && [ "$n_serving" -eq "$nodes" ]; then
            ready_announced=1
            echo "ready_s=$(elapsed_f)" >> "$rundir/info"
            display_stop
            say "${G}${B}all $nodes nodes ready${N} after $(elapsed_f) s (links up after ${t_all_links:-?} s); rank table: $rundir/www/ranks"
            sed 's/^/[cluster]   /' "$rundir/www/ranks" >&2
            say "dev loop: rebuild on the host into $EXPORT_DIR, then"
            say "  scripts/cluster.sh exec $name 'wget -q -O /tmp/dimmnet2.ko \$DN2_HTTP/dimmnet2.ko && { rmmod dimmnet2 2>/dev/null; insmod /tmp/dimmnet2.ko; } && dn2-up -q'"
            say "  scripts/cluster.sh console $name 0      (a shell on node0; Ctrl-] leaves)"
            if [ -n "$kept" ]; then
                say "  (in a guest: wget \$DN2_HTTP/<file>, with the node's credential)   scripts/cluster.sh stop $name stops the cluster"
            else
                say "  (in a guest: wget \$DN2_HTTP/<file>, with the node's credential)   Ctrl-C here stops the cluster"
            fi
            if [ -n "$run" ]; then
                for ((i = 0; i < nodes; i++)); do
                    guest_output "$i" | sed "s/^/node$i| /"
                done
            fi
        fi
        if [ "$n_failed" -gt 0 ] && [ -z "$ready_announced" ]; then
            abort_status=3; break
        fi
        if [ -n "$ready_announced" ]; then
            for ((i = 0; i < nodes; i++)); do
                if [ "${st_phase[i]}" = failed ] && [ "${shown[i]:-}" != reported ]; then
                    shown[i]=reported
                    say "${R}node$i stopped${N}: ${st_why[i]}"
                fi
            done
            continue
        fi
    else
        [ "$n_done" -eq "$nodes" ] && break
        if [ "$n_failed" -gt 0 ]; then abort_status=3; break; fi
        # An MPI rank called PMI_Abort: the job fails; the others get --grace.
        if [ -z "$t_first_fail" ] && [ -s "$rundir/pmi-abort" ]; then
            t_first_fail=$(elapsed)
            pmi_abort_msg=$(head -1 "$rundir/pmi-abort")
            display_stop
            say "${R}MPI job aborted${N}: $pmi_abort_msg"
        fi
        # A command failed: the others get --grace seconds.
        for ((i = 0; i < nodes; i++)); do
            if [ "${st_phase[i]}" = "done" ] && [ "${st_rc[i]}" != 0 ] && [ -z "$t_first_fail" ]; then
                t_first_fail=$(elapsed)
            fi
        done
        if [ -n "$t_first_fail" ] && [ $(($(elapsed) - t_first_fail)) -ge "$grace" ]; then
            abort_status=1; break
        fi
        if [ "$(elapsed)" -ge "$timeout_s" ]; then abort_status=124; break; fi
    fi
    if [ -z "$t_ranks" ] && [ "$(elapsed)" -ge "$boot_timeout" ]; then
        abort_status=3
        for ((i = 0; i < nodes; i++)); do
            case ${st_phase[i]} in
                joined|ranks|running|done|serving|failed) ;;
                *) st_why[i]="not started after $boot_timeout s: $(stuck_reason "$i")"; st_phase[i]=failed ;;
            esac
        done
        break
    fi
done
display_stop

# Finished guests power off by themselves: give them a moment.
for ((t = 0; t < 50; t++)); do
    any=
    for ((i = 0; i < nodes; i++)); do alive "${qemu_pids[i]}" && [ "${st_phase[i]}" = "done" ] && any=1; done
    [ -z "$any" ] && break
    sleep 0.1
done

# ----------------------------------------------------------------- results
# Virtual time: the switch's counters (reports, grants, the cluster's
# virtual time) while it still runs, for scripts/bench-vt.sh.
if [ -n "$vt" ] && alive "$switch_pid"; then
    on_cmd=("$switch_bin" --stats "127.0.0.1:$sport" "${secret_sw[@]}")
    [ ${#hosts[@]} -gt 0 ] && on_host "$switch_host" "${on_cmd[@]}"
    timeout 10 "${on_cmd[@]}" < /dev/null > "$rundir/switch.stats" 2>&1
fi
# --snapshot-at: the snapshot was written once the cut was passed; a run
# that ended before its cut has none.
if [ -n "$snap_helper" ]; then
    if [ -f "$rundir/snapshot.cut" ]; then
        wait "$snap_helper"
    else
        kill "$snap_helper" 2>/dev/null
        say "${R}no snapshot${N}: the run ended before virtual time $snap_at s (--snapshot-at)"
    fi
    snap_helper=
fi
# A run from a snapshot: its boards' traces go on from the snapshot's.
if [ -n "$vsnap" ]; then
    for ((i = 0; i < nodes; i++)); do
        [ -f "$vsnap/node$i.pcap" ] && [ -f "$rundir/node$i.pcap" ] || continue
        { cat "$vsnap/node$i.pcap"; tail -c +25 "$rundir/node$i.pcap"; } > "$rundir/node$i.pcap.tmp" \
            && mv "$rundir/node$i.pcap.tmp" "$rundir/node$i.pcap"
    done
fi
status=0
for ((i = 0; i < nodes; i++)); do
    guest_output "$i" > "$rundir/node$i.out"
    if [ "${st_phase[i]}" = "done" ] || [ -s "$rundir/node$i.out" ]; then
        sed "s/^/node$i| /" "$rundir/node$i.out"
    fi
done
{
    echo "nodes=$nodes"
    echo "all_links_up_s=${t_all_links:-}"
    echo "rank_table_s=${t_ranks:-}"
    echo "total_s=$(elapsed_f)"
    for ((i = 0; i < nodes; i++)); do echo "node$i link_s=${t_link[i]} joined_s=${t_joined[i]} done_s=${t_done[i]} lid=${st_lid[i]} rc=${st_rc[i]}"; done
} > "$rundir/timings"

plural=s; [ "$nodes" = 1 ] && plural=
echo "${B}summary${N} ($name: $nodes node$plural, $([ -n "$t_all_links" ] && echo "links up after $t_all_links s" || echo "links never all up"), $([ -n "$t_ranks" ] && echo "rank table after $t_ranks s" || echo "no rank table"), $(elapsed_f) s in all)" >&2
for ((i = 0; i < nodes; i++)); do
    lid=-; [ -n "${st_lid[i]}" ] && lid=$(printf '0x%04x' "${st_lid[i]}")
    case ${st_phase[i]} in
        done)
            if [ "${st_rc[i]}" = 0 ]; then r="${G}ok${N}"; res_state[i]=ok; else r="${R}rc=${st_rc[i]}${N}"; res_state[i]=failed; [ $status -eq 0 ] && status=1; fail_nodes+=("$i"); fi ;;
        failed) r="${R}FAILED${N}: ${st_why[i]}"; status=3; fail_nodes+=("$i"); res_state[i]=failed res_why[i]=${st_why[i]} ;;
        *)
            case $abort_status in
                124) r="${R}timeout${N} ($(describe "$i"))"; status=124; res_state[i]=timeout res_why[i]="timeout after $timeout_s s" ;;
                1) r="${R}stopped${N}: another node's command failed ($(describe "$i"))"; [ $status -eq 0 ] && status=1
                   res_state[i]=stopped res_why[i]="stopped: another node's command failed" ;;
                *) r="${R}stopped${N} ($(describe "$i"))"; [ $status -eq 0 ] && status=3; res_state[i]=stopped ;;
            esac
            [ -n "${res_why[i]:-}" ] || res_why[i]="stopped while $(describe "$i" | sed 's/\x1b\[[0-9;]*m//g')"
            fail_nodes+=("$i") ;;
    esac
    printf '  node%-2d %-6s %s\n' "$i" "$lid" "$r" >&2
done
[ "$abort_status" = 124 ] && say "${R}timeout${N} after $timeout_s s (--timeout)"
[ -z "$pmi_abort_msg" ] && [ -s "$rundir/pmi-abort" ] && pmi_abort_msg=$(head -1 "$rundir/pmi-abort")
if [ -n "$pmi_abort_msg" ]; then
    say "${R}the MPI job was aborted${N}: $pmi_abort_msg"
    [ "$status" -eq 0 ] && status=1
fi
if [ "$status" -ne 0 ]; then
    for i in "${fail_nodes[@]}"; do show_console "$i"; done
    say "run directory: $rundir"
fi
if [ -n "$vt" ]; then
    # A replay: the same outputs and the same packets as the recorded run.
    cmp_dir=$replay_dir
    if [ -n "$vsnap" ]; then
        cmp_dir=$s_source
        [ -d "$cmp_dir" ] || { say "the run the snapshot was taken from ($cmp_dir) is gone: nothing to compare with"; cmp_dir=; }
    fi
    # (scripts/vt-compare.py: the first differing line or packet; a replay
    # that differs exits 5 when nothing else failed)
    if [ -n "$cmp_dir" ] && [ -z "$interrupted" ]; then
        if cmp_out=$("$py" "$here/vt-compare.py" "$cmp_dir" "$rundir" "$nodes" 2>&1); then
            say "replay${vsnap:+ from virtual time $s_cut s}: every node's output$([ -n "$vt_sync" ] && echo " and pcap") identical to $cmp_dir's"
        else
            say "${R}replay differs${N} from $cmp_dir: $(head -1 <<< "$cmp_out")"
            tail -n +2 <<< "$cmp_out" | sed 's/^/[cluster]   /' >&2
            [ "$status" -eq 0 ] && status=5
        fi
    fi
    say "run it again: ${B}scripts/cluster.sh --replay $rundir${N}"
    say "  node I under gdb at the same virtual time: scripts/cluster.sh --replay $rundir --gdb I"
fi
[ -n "$interrupted" ] && status=130
write_result "$status"
[ "$quiet" = 1 ] || [ ! -f "$rundir/result.json" ] || say "result: $rundir/result.json${junit:+, JUnit: $junit}"
exit "$status"
