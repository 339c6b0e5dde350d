#!/usr/bin/env bash
# Runs an MPI program (Debian's Open MPI 4.1) on a cluster of DIMMnet-2
# guests: boots the nodes with the MPI image (scripts/cluster.sh --mpi),
# starts the ranks on them (no mpirun, no ssh: Open MPI's direct launch with
# our PMI-1 library, libpmi-dn2.so, talking to the launcher's job server),
# streams their output, waits for them and tears the cluster down.
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
#       --vt-start S, --vt-quantum NS, --vt-lookahead NS
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
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"

say() { printf '[mpirun] %s\n' "$*" >&2; }
note() { printf '[mpirun] note: %s\n' "$*" >&2; }
fail() { printf '[mpirun] error: %s\n' "$*" >&2; exit 4; }

orig_args=("$@")
np= nodes= ppn= n_short= net= ofi=${DN2_MPI_OFI:-dimmnet2} timeout_s=900 mem= name= quiet=
files=() envs=() cl_opts=() packages= jobs=() stats= keep_going= junit= dry_run= old_env=
vt= vt_opts=() vt_start=5 vt_start_set=
# ("--opt=value" is split by hand, up to PROGRAM: its arguments are its own)
while [ $# -gt 0 ]; do
    case $1 in
        --?*=*) set -- "${1%%=*}" "${1#*=}" "${@:2}"; continue ;;
        -np|--np) dn2_need_value "$@"; dn2_want_uint "$1" "$2"; np=$2; shift 2 ;;
        -n) dn2_need_value "$@"; dn2_want_uint "$1" "$2"; np=$2; n_short=$2; shift 2 ;;
        -N|--nodes) dn2_need_value "$@"; dn2_want_uint "$1" "$2"; nodes=$2; shift 2 ;;
        --ppn) dn2_need_value "$@"; ppn=$2; shift 2 ;;
        -x) dn2_need_value "$@"
            if [[ $2 =~ ^[A-Za-z_][A-Za-z0-9_]*= ]]; then envs+=("$2")
            elif [[ $2 =~ ^[A-Za-z_][A-Za-z0-9_]*$ ]]; then
                [ -n "${!2+set}" ] || usage_error "-x $2: $2 is not set here (give -x $2=VALUE)"
                envs+=("$2=${!2}")
            else usage_error "-x wants VAR or VAR=VALUE, not '$2'"
            fi
            shift 2 ;;
        --env) dn2_need_value "$@"
            [[ $2 =~ ^[A-Za-z_][A-Za-z0-9_]*= ]] || usage_error "--env wants VAR=VALUE, not '$2'"
            envs+=("$2"); old_env=$2; shift 2 ;;
        --net) dn2_need_value "$@"; net=$2; shift 2 ;;
        --ofi) dn2_need_value "$@"; ofi=$2; shift 2 ;;
        --job) dn2_need_value "$@"; jobs+=("$2"); shift 2 ;;
        --file) dn2_need_value "$@"; files+=("$2"); shift 2 ;;
        --packages) dn2_need_arg "$@"; packages+=" $2"; shift 2 ;;
        -t|--timeout) dn2_need_value "$@"; timeout_s=$2; shift 2 ;;
        -m|--mem) dn2_need_value "$@"; mem=$2; shift 2 ;;
        --name) dn2_need_value "$@"; name=$2; shift 2 ;;
        --junit) dn2_need_value "$@"; junit=$2; shift 2 ;;
        --dry-run|--print-plan) dry_run=1; shift ;;
        --switch-opts|--device-opts|--secret-file) dn2_need_arg "$@"; cl_opts+=("$1" "$2"); shift 2 ;;
        --board-stats) stats=1; shift ;;
        --keep-going) keep_going=1; shift ;;
        --cluster-opt) dn2_need_arg "$@"; cl_opts+=("$2"); shift 2 ;;
        --virtual-time) vt=1; shift ;;
        --vt-start) dn2_need_value "$@"; vt_start=$2; vt_start_set=1; shift 2 ;;
        --vt-quantum|--vt-lookahead) dn2_need_value "$@"; dn2_want_uint "$1" "$2"; vt_opts+=("$1" "$2"); shift 2 ;;
        --vt-*) usage_error "unknown argument: $1 (mpirun.sh takes --vt-start, --vt-quantum, --vt-lookahead)" ;;
        -q|--quiet) quiet=1; shift ;;
        -h|--help) dn2_usage; exit 0 ;;
        --) shift; break ;;
        -*) usage_error "unknown argument: $1" ;;
        *) break ;;
    esac
done
dn2_want_uint --timeout "$timeout_s"
[ -z "$mem" ] || dn2_want_uint --mem "$mem"
case $ppn in ''|1|2) ;; *) usage_error "--ppn must be 1 or 2 (a board has two WIDs)" ;; esac
[ -z "$np" ] || [ "$np" -ge 1 ] || usage_error "-np must be at least 1"
[ -z "$nodes" ] || { [ "$nodes" -ge 1 ] && [ "$nodes" -le 64 ]; } || usage_error "-N (--nodes) must be 1..64"
# Ranks, nodes and ranks per node: any two give the third; -np alone is one
# rank per node; nothing is 2 nodes of 1 rank.
if [ -n "$np" ]; then
    if [ -n "$nodes" ] && [ -n "$ppn" ]; then
        [ "$np" -eq $((nodes * ppn)) ] || usage_error "-np $np does not match -N $nodes x --ppn $ppn ($((nodes * ppn)) ranks)"
    elif [ -n "$nodes" ]; then
        [ $((np % nodes)) -eq 0 ] && [ $((np / nodes)) -le 2 ] \
            || usage_error "-np $np on -N $nodes nodes: every node runs 1 or 2 ranks (--ppn), the same number on each"
        ppn=$((np / nodes))
    else
        ppn=${ppn:-1}
        [ $((np % ppn)) -eq 0 ] || usage_error "-np $np with --ppn $ppn: the ranks must fill whole nodes (give an even -np)"
        nodes=$((np / ppn))
        [ "$nodes" -le 64 ] || usage_error "-np $np with --ppn $ppn is $nodes nodes: at most 64"
    fi
else
    nodes=${nodes:-2} ppn=${ppn:-1}
    np=$((nodes * ppn))
fi
# -n counted nodes before: say so where the same numbers now mean fewer nodes.
if [ -n "$n_short" ] && [ "$ppn" -gt 1 ]; then
    note "-n counts ranks now (Open MPI's -n): -n $n_short --ppn $ppn is $np ranks on $nodes node$([ "$nodes" = 1 ] || echo s); for $n_short nodes of $ppn ranks give -N $n_short --ppn $ppn"
fi
[ -z "$old_env" ] || note "--env is now spelled -x (Open MPI's mpirun): -x $old_env"
case $ofi in dimmnet2|'dimmnet2;ofi_rxd') ;; *) usage_error "--ofi must be dimmnet2 or 'dimmnet2;ofi_rxd'" ;; esac
usage_net() { # OPT NET: a usage error unless NET is a network name (and fits the node count)
    case $2 in board|tcp|shm) ;; *) usage_error "$1: the network must be board, tcp or shm, not '$2'" ;; esac
    [ "$2" != shm ] || [ "$nodes" = 1 ] || usage_error "$1: shm runs on one node only (-np 2 --ppn 2)"
}
[ -z "$net" ] || usage_net --net "$net"
for j in "${jobs[@]}"; do
    [[ $j == *:* ]] || usage_error "--job wants NET:CMD, not '$j'"
    usage_net --job "${j%%:*}"
done
for f in "${files[@]}"; do
    [ -f "$f" ] || usage_error "--file: $f: no such file"
done
case $name in */*|.|..) usage_error "--name: a plain name, not '$name'" ;; esac
if [ -n "$junit" ]; then
    [ -d "$(dirname "$junit")" ] || usage_error "--junit: the directory of $junit does not exist"
    [ ! -d "$junit" ] || usage_error "--junit: $junit is a directory"
fi
[ $# -gt 0 ] || [ ${#jobs[@]} -gt 0 ] || usage_error "no program: scripts/mpirun.sh -np 2 -- PROGRAM [ARGS...]"
[ $# -eq 0 ] || [ ${#jobs[@]} -eq 0 ] || usage_error "give -- PROGRAM or --job, not both"
[ $# -eq 0 ] || [[ $1 != */* ]] || [ -f "$1" ] || usage_error "$1: no such file on the host"
# Virtual time: PMI over the boards (dn2-pmi-agent); nothing from the host
# at run time.
if [ -n "$vt" ]; then
    [ "$ppn" = 1 ] || usage_error "--virtual-time: --ppn 1 only: a board has two WIDs, and under virtual time the node's PMI agent (dn2-pmi-agent, PMI over the boards) has the second"
    [[ " $net ${jobs[*]%%:*} " != *" tcp "* ]] || usage_error "--virtual-time: no tcp: the guests' Ethernet is input from the host at host-dependent times (--net board)"
    [[ " $net ${jobs[*]%%:*} " != *" shm "* ]] || usage_error "--virtual-time: no shm: the PMI agents talk over the boards (--net board)"
    [[ $vt_start =~ ^[0-9]{1,4}(\.[0-9]{1,9})?$ ]] || usage_error "--vt-start: seconds of virtual time, e.g. 5 or 6.5 (got '$vt_start')"
elif [ ${#vt_opts[@]} -gt 0 ] || [ -n "$vt_start_set" ]; then
    usage_error "--vt-start, --vt-quantum and --vt-lookahead go with --virtual-time"
fi

# The libfabric provider (docs/ofi-provider.md), when built (or named by
# DN2_FI_PROVIDER); the default network follows from it.
provider=${DN2_FI_PROVIDER:-$(find "$DN2_TOP/build" -name 'libdimmnet2-fi.so' -type f 2>/dev/null | head -1)}
if [ -z "$net" ]; then
    if [ -n "$provider" ] || [ -n "$vt" ]; then net=board; else net=tcp; fi
fi
size=$np

# sh_quote WORD: WORD quoted for a POSIX shell (busybox sh in the guest)
sh_quote() { printf "'%s'" "$(printf '%s' "$1" | sed "s/'/'\\\\''/g")"; }

# The jobs, one per line: NET<TAB>shell words (the ranks run "exec WORDS")
joblist= nets= prog_host=
if [ ${#jobs[@]} -eq 0 ]; then
    prog=$1
    shift
    if [[ $prog == */* ]]; then
        prog_host=$prog
        prog=/tmp/mpi/bin/$(basename "$prog")
    fi
    argv=$(sh_quote "$prog")
    for a in "$@"; do argv+=" $(sh_quote "$a")"; done
    joblist=$net$'\t'$argv
    nets=" $net"
else
    for j in "${jobs[@]}"; do
        nets+=" ${j%%:*}"
        joblist+=${j%%:*}$'\t'"sh -c $(sh_quote "${j#*:}")"$'\n'
    done
    joblist=${joblist%$'\n'}
fi
njobs=$(printf '%s\n' "$joblist" | wc -l)
[ -n "$name" ] || name=mpi-$(date +%Y%m%d-%H%M%S)-$$
rundir=$DN2_TOP/build/cluster/$name

# Guest memory without -m: what the MPI image needs unpacked
# (lib.sh's dn2_guest_mem, as cluster.sh sizes it) plus 128 MiB for each
# rank after a node's first, at least 512 MiB.  IMAGE: the image's path;
# prints "MIB WHY", WHY naming the image's unpacked size.
mpi_mem_for() {
    local size u c m
    size=$(dn2_image_size "$1") || return 1
    read -r u c <<< "$size"
    m=$(( $(dn2_guest_mem "$u" "$c") + 128 * (ppn - 1) ))
    [ "$m" -ge 512 ] || m=512
    echo "$m the MPI image unpacks to $(( (u + 1023) / 1024 )) MiB, $ppn rank(s) per node"
}
img_args=(--mpi)
[ -n "$packages" ] && img_args+=(--packages "$packages")
mem_why=
if [ -z "$mem" ] && [ -n "$dry_run" ]; then
    # The plan builds nothing: sized from the image only if it is built.
    img=$(bash "$here/build-initramfs.sh" --print "${img_args[@]}" 2>/dev/null) || img=
    if [ -n "$img" ] && [ -f "$img" ] && sized=$(mpi_mem_for "$img" 2>/dev/null); then
        mem=${sized%% *} mem_why=" (sized from the image: ${sized#* })"
    else
        mem="from the image (not built yet)"
    fi
fi

# --dry-run: the plan, "key: value" lines, and nothing else.
if [ -n "$dry_run" ]; then
    echo "nodes: $nodes"
    echo "ppn: $ppn"
    echo "ranks: $np"
    for ((r = 0; r < np; r++)); do echo "rank $r: node $((r / ppn)) wid $((r % ppn))"; done
    echo "networks:$nets"
    [[ " $nets " == *" board "* ]] && echo "ofi: $ofi"
    [ -n "$vt" ] && echo "virtual time: --vt-start $vt_start${vt_opts[*]:+ ${vt_opts[*]}}; PMI: dn2-pmi-agent, WID 1 of every node"
    j=0
    while IFS=$'\t' read -r nj words; do
        j=$((j + 1)); echo "job $j: $nj $words"
    done <<< "$joblist"
    [ -n "$prog_host" ] && echo "copy: $prog_host -> /tmp/mpi/bin/$(basename "$prog_host")"
    for f in "${files[@]}"; do echo "copy: $f -> /home/mpi/$(basename "$f")"; done
    for e in "${envs[@]}"; do echo "env: $e"; done
    echo "timeout: $timeout_s"
    echo "mem: $mem$mem_why"
    echo "rundir: $rundir"
    echo "result: $rundir/result.json"
    [ -n "$junit" ] && echo "junit: $junit"
    exit 0
fi

# ------------------------------------------------------------ the image
check_net() { # NET
    case $1 in
        board) [ -n "$provider" ] || fail "--net board: the DIMMnet-2 libfabric provider (libdimmnet2-fi.so) is not built; use --net tcp" ;;
        tcp|shm) ;;
    esac
}
for nj in $nets; do check_net "$nj"; done
[ -z "$provider" ] || [ -f "$provider" ] || fail "DN2_FI_PROVIDER=$provider does not exist"
py=$(command -v python3) || fail "python3 not found (it streams the ranks' output and writes result.json): apt-get install python3"
export_mpi=$DN2_TOP/build/guest/export-mpi
pmi_lib=$DN2_TOP/build/linux-guest/pmi/libpmi-dn2.so
[ -f "$pmi_lib" ] || fail "$pmi_lib is not built (meson compile -C build)"
mkdir -p "$export_mpi/lib"
cmp -s "$pmi_lib" "$export_mpi/lib/libpmi-dn2.so" || cp "$pmi_lib" "$export_mpi/lib/libpmi-dn2.so"
if [ -n "$provider" ]; then
    mkdir -p "$export_mpi/lib/libfabric"
    cmp -s "$provider" "$export_mpi/lib/libfabric/libdimmnet2-fi.so" \
        || cp "$provider" "$export_mpi/lib/libfabric/libdimmnet2-fi.so"
fi
# A cluster still running under this name would be another run's.
if [ -f "$rundir/info" ]; then
    lp=$(sed -n 's/^launcher_pid=//p' "$rundir/info")
    [ "${lp:-0}" -gt 0 ] && kill -0 "$lp" 2>/dev/null && fail "a cluster is running in $rundir (launcher pid $lp): choose another --name"
fi

# ------------------------------------------------------- files to serve
serve=$DN2_TOP/build/mpirun/$name
rm -rf "$serve"
mkdir -p "$serve/mpi"
fetch_cmds=
# fetch_cmd SRC DEST MODE: how the node's script gets a file: from the job
# server, or under --virtual-time (no server) inside the script itself, in
# base64 (the script reaches the guest as a fw_cfg file at boot and is kept
# in the run directory, so --replay has it too).
fetch_cmd() {
    if [ -n "$vt" ]; then
        printf 'unpack %s %s <<'"'"'DN2-B64-END'"'"'\n' "$2" "$3"
        base64 -w 76 "$serve/$1"
        printf 'DN2-B64-END\n'
    else
        printf 'fetch %s %s %s\n' "$1" "$2" "$3"
    fi
}
for f in "${files[@]}"; do
    [ -f "$f" ] || fail "--file $f: no such file"
    b=$(basename "$f")
    cp "$f" "$serve/mpi/file-$b"
    mode=644; [ -x "$f" ] && mode=755
    fetch_cmds+=$(fetch_cmd "mpi/file-$b" "/home/mpi/$b" "$mode")$'\n'
done
if [ -n "$prog_host" ]; then
    [ -f "$prog_host" ] || fail "$prog_host: no such file on the host"
    cp "$prog_host" "$serve/mpi/prog"
    fetch_cmds+=$(fetch_cmd mpi/prog "/tmp/mpi/bin/$(basename "$prog_host")" 755)$'\n'
fi
# The board needs the driver and dn2-up in the image (build/guest/export).
# The PMI agent (virtual time) goes into every board image, so that the
# image stays the same from one mode to the other.
agent=$DN2_TOP/build/linux-guest/pmi/dn2-pmi-agent
[ -z "$vt" ] || [ -x "$agent" ] || fail "$agent is not built (meson compile -C build): --virtual-time needs it"
[ -x "$agent" ] || agent=
case " $nets " in *" board "*)
    bash "$here/export-guest.sh" ${agent:+"$agent"} > /dev/null 2> "$serve/export.log" \
        || fail "scripts/export-guest.sh failed (the driver and dn2-up for the board): $(tail -1 "$serve/export.log")" ;;
esac

# ------------------------------------------------- Open MPI's environment
# FLUX_JOB_ID selects Open MPI's pmix/flux component (and schizo/flux: ess
# pmi, no binding); FLUX_PMI_LIBRARY_PATH names our PMI-1 library.
ompi_env=(
    # (Open MPI keeps only 15 bits of it in places: stay below 32768.)
    "FLUX_JOB_ID=$(( RANDOM % 30000 + 1000 ))"
    "FLUX_PMI_LIBRARY_PATH=/opt/dn2/lib/libpmi-dn2.so"
    "OMPI_MCA_pmix=flux" "OMPI_MCA_ess=pmi"
    "OMPI_MCA_orte_tmpdir_base=/tmp/mpi"
    "OMPI_MCA_btl_base_warn_component_unused=0"
    "OMPI_MCA_hwloc_base_binding_policy=none"
)
# One guest CPU: with two ranks on it, polling ranks must yield.
[ "$ppn" -gt 1 ] && ompi_env+=("OMPI_MCA_mpi_yield_when_idle=1")
ompi_env+=("${envs[@]}")
# Per network.  One-sided: osc/rdma wants RDMA-capable BTLs, which tcp is
# not, and Open MPI then finds no window component unless pt2pt is named.
net_env() { # NET
    case $1 in
        # Open MPI matches its include list by prefix, so "dimmnet2" would
        # take "dimmnet2;ofi_rxd" too, which libfabric lists first: for the
        # native provider, libfabric's own filter leaves ofi_rxd out.
        board) [ "$ofi" = dimmnet2 ] && echo "FI_PROVIDER=^ofi_rxd"
               echo OMPI_MCA_pml=cm OMPI_MCA_mtl=ofi "OMPI_MCA_mtl_ofi_provider_include=$ofi" \
                    FI_PROVIDER_PATH=/opt/dn2/lib/libfabric OMPI_MCA_btl=self,vader OMPI_MCA_osc=pt2pt ;;
        tcp) echo OMPI_MCA_pml=ob1 OMPI_MCA_btl=tcp,self,vader OMPI_MCA_btl_tcp_if_include=192.168.77.0/24 \
                  "OMPI_MCA_mtl=^ofi" OMPI_MCA_osc=pt2pt ;;
        shm) echo OMPI_MCA_pml=ob1 OMPI_MCA_btl=self,vader "OMPI_MCA_mtl=^ofi" OMPI_MCA_osc=sm,pt2pt ;;
    esac
}

# ------------------------------------------------------ the node's script
# Runs as root on every node (busybox sh): set-up, then for each job the
# node's ranks as user mpi, their output streamed to the console.
script=$serve/node.sh
{
    echo "# generated by scripts/mpirun.sh: $size ranks, $ppn per node, networks:$nets"
    echo "PPN=$ppn SIZE=$size NJOBS=$njobs STATS=$stats KEEPGOING=$keep_going VT=$vt"
    echo "NETS=$(sh_quote "$nets")"
    echo "JOBS=$(sh_quote "$joblist")"
    for e in "${ompi_env[@]}"; do echo "export $(sh_quote "$e")"; done
    echo 'net_env() {'
    echo '    case $1 in'
    for nn in board tcp shm; do
        printf '        %s) export' "$nn"
        # shellcheck disable=SC2046  # one word per variable, no spaces
        for e in $(net_env "$nn"); do printf ' %s' "$(sh_quote "$e")"; done
        printf ' ;;\n'
    done
    echo '    esac'
    echo '}'
    cat <<'NODE1'
export HOME=/home/mpi USER=mpi LOGNAME=mpi
export PATH=/opt/dn2/bin:/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin
# The ranks talk to the server with tokens of their own, not the node's
# credential (the /n/NODE/TOKEN end of $DN2_HTTP).
export DN2_PMI_URL=${DN2_HTTP%/n/*/*} DN2_PMI_SIZE=$SIZE
mkdir -p /tmp/mpi/bin && chmod 1777 /tmp/mpi && chmod 755 /tmp/mpi/bin
hostname "node$DN2_NODE" 2>/dev/null
fail() { echo "mpirun: node $DN2_NODE: $*" >&2; exit 1; }
fetch() { # fetch PATH DEST MODE
    timeout 60 wget -q -O "$2" "$DN2_HTTP/$1" || fail "cannot fetch $1 from the job server"
    chmod "$3" "$2"; chown 1000:1000 "$2"
}
unpack() { # unpack DEST MODE < base64
    base64 -d > "$1" || fail "cannot unpack $1"
    chmod "$2" "$1"; chown 1000:1000 "$1"
}
NODE1
    printf '%s' "$fetch_cmds"
    cat <<'NODE2'
case " $NETS " in *" board "*)
    insmod /opt/dn2/dimmnet2.ko || fail "insmod dimmnet2.ko failed"
    dn2-up -q > /tmp/mpi/dn2-up.log 2>&1 || fail "dn2-up failed: $(tail -1 /tmp/mpi/dn2-up.log)"
    chmod 666 /dev/dimmnet2-* 2>/dev/null ;;
esac
# The job's endpoints, one line per MPI rank ("rank lid wid": a node's
# ranks use WID 0 and 1), not the launcher's one line per node: the
# provider sizes its flow control from this table and refuses a peer that
# is not in it.
NODE_RANKS=${DN2_RANKS:-}
if [ -r "${DN2_RANKS:-}" ]; then
    while read -r n lid wid; do
        case $n in ''|\#*) continue ;; esac
        l=0; while [ $l -lt $PPN ]; do echo "$((n * PPN + l)) $lid $l"; l=$((l + 1)); done
    done < "$DN2_RANKS" > /tmp/mpi/ranks
    chmod 644 /tmp/mpi/ranks
    export DN2_RANKS=/tmp/mpi/ranks
fi
first=$((DN2_NODE * PPN))
clique=$first
l=1; while [ $l -lt $PPN ]; do clique="$clique,$((first + l))"; l=$((l + 1)); done
export DN2_PMI_CLIQUE=$clique
# kill_ranks: every process of user mpi (the ranks and their children)
kill_ranks() { busybox su -s /bin/sh mpi -c 'kill -KILL -1' 2>/dev/null; }

# tell_failures: a rank of this job that exited non-zero aborts the job
tell_failures() {
    for f in $out/*.rc; do
        [ -s "$f" ] && [ ! -e "$f.told" ] || continue
        c=$(cat "$f"); [ "$c" = 0 ] && continue
        r=${f##*/}; r=${r%.rc}
        if [ -n "$VT" ]; then
            [ -e $out/abort ] || dn2-pmi-agent --tell $out/pmi.sock abort $r $c "rank $r exited with status $c" 2>/dev/null
            : > "$f.told"
            continue
        fi
        eval "t=\$tok_$r"
        timeout 10 wget -q -O /dev/null \
            "$DN2_PMI_URL/pmi/abort?job=$PMIJOB&rank=$r&token=$t&code=$c&msg=rank%20$r%20exited%20with%20status%20$c" 2>/dev/null
        : > "$f.told"
    done
}

# run_job J NET WORDS PREFIX: the node's ranks of job J, their output lines
# prefixed "[PREFIX R] "; returns the first failure
run_job() {
    J=$1 NETJ=$2 ARGV=$3 PFX=$4
    PMIJOB=$DN2_JOBID.mpi$J
    out=/tmp/mpi/job$J
    mkdir -p $out
    # Virtual time: the node's PMI agent (PMI over the boards), on WID 1,
    # up once every node's agent is (then it creates its socket).
    if [ -n "$VT" ]; then
        rm -f $out/pmi.sock $out/abort
        dn2-pmi-agent -s $out/pmi.sock -r "$NODE_RANKS" -n $DN2_NODE -l $PPN -u 1000 -j $J \
            -a $out/abort > $out/agent.log 2>&1 &
        agent=$!
        i=0
        while [ ! -S $out/pmi.sock ]; do
            kill -0 $agent 2>/dev/null || fail "the PMI agent failed: $(tail -1 $out/agent.log)"
            i=$((i + 1)); [ $i -lt 1200 ] || fail "the PMI agent did not come up in 120 s: $(tail -1 $out/agent.log)"
            usleep 100000
        done
    fi
    # Each local rank's PMI token, from the server (the node's credential
    # asks for them: the first node to ask owns the rank).
    l=0
    while [ -z "$VT" ] && [ $l -lt $PPN ]; do
        r=$((first + l))
        t=$(timeout 30 wget -q -O - "$DN2_HTTP/pmi/token?job=$PMIJOB&rank=$r" 2>/tmp/mpi/token.err) \
            || fail "no PMI token for rank $r from the job server: $(tail -1 /tmp/mpi/token.err)"
        eval "tok_$r=\$t"
        l=$((l + 1))
    done
    eval "st=\$tok_$first"
    pids=
    l=0
    while [ $l -lt $PPN ]; do
        r=$((first + l))
        eval "t=\${tok_$r:-}"
        # The output streams to the console as it comes ("[R] " lines,
        # which the host prints as they arrive), so a rank killed later
        # still shows it (awk flushes every line: busybox sed would hold
        # them until the rank ends).  DN2-MPI-RANK-START/END (job, rank, status, the
        # guest's uptime) are for the host: it shows them as result.json.
        read -r up _ < /proc/uptime
        echo "DN2-MPI-RANK-START $J $r $up"
        ( ( net_env "$NETJ"; export DN2_PMI_JOB=$PMIJOB DN2_PMI_RANK=$r DN2_PMI_TOKEN=$t
            [ -n "$VT" ] && export DN2_PMI_SOCK=$out/pmi.sock
            cd /home/mpi &&
            busybox su -p -s /bin/sh mpi -c "exec $ARGV" < /dev/null 2>&1
            echo $? > $out/$r.rc ) | awk -v p="[$PFX$r] " '{ print p $0; fflush() }'
          rr=$(cat $out/$r.rc 2>/dev/null || echo 255)
          killed=
          # Virtual time: the agent ended the ranks of an aborted job; its
          # reason (written first) tells the aborting rank's own code from
          # the ranks it ended.
          if [ -n "$VT" ] && [ "$rr" != 0 ] && [ -s $out/abort ]; then
              read -r ak ar ac amsg < $out/abort
              if [ "$ak $ar" = "local $r" ]; then
                  rr=$ac; echo $rr > $out/$r.rc
              else
                  killed=1
                  echo "[$PFX$r] mpirun: rank $r ended: the job was aborted by rank $ar"
                  echo "DN2-MPI-RANK-KILLED $J $r $ar"
              fi
          fi
          [ "$rr" = 0 ] || [ -n "$killed" ] || echo "[$PFX$r] mpirun: rank $r exited with status $rr"
          read -r up _ < /proc/uptime
          echo "DN2-MPI-RANK-END $J $r $rr $up" ) &
        pids="$pids $!"
        l=$((l + 1))
    done
    # Wait; a failed rank aborts the job, and an aborted job (PMI_Abort
    # here or elsewhere) ends the local ranks.
    while :; do
        left=0
        for p in $pids; do kill -0 $p 2>/dev/null && left=$((left + 1)); done
        tell_failures
        [ $left -eq 0 ] && break
        if [ -n "$VT" ]; then
            # (the agent ends the ranks of an aborted job itself)
            sleep 1; continue
        fi
        # (only an aborted job ends them: a busy server's 503 is asked again)
        if ! timeout 10 wget -q -O /dev/null "$DN2_PMI_URL/pmi/status?job=$PMIJOB&rank=$first&token=$st" 2> $out/status.err &&
           grep -q ' 409 ' $out/status.err; then
            sleep 1; kill_ranks
        fi
        sleep 1
    done
    rc=0
    l=0
    while [ $l -lt $PPN ]; do
        r=$((first + l))
        rr=$(cat $out/$r.rc 2>/dev/null || echo 255)
        [ "$rr" = 0 ] || { [ $rc = 0 ] && rc=$rr; }
        l=$((l + 1))
    done
    if [ -n "$VT" ]; then
        tell_failures
        if [ -s $out/abort ]; then
            read -r ak ar ac amsg < $out/abort
            [ "$ak" = local ] && echo "DN2-MPI-ABORTED rank $ar called PMI_Abort (exit code $ac): $amsg"
            # the job is over everywhere: this node's status is the abort's
            [ $rc = 0 ] && [ "$ak" = remote ] && rc=1
        fi
        kill $agent 2>/dev/null; wait $agent 2>/dev/null
    fi
    return $rc
}

j=0 first_rc=0
echo "$JOBS" > /tmp/mpi/jobs
while IFS='	' read -r netj words; do
    j=$((j + 1))
    pfx=; [ "$NJOBS" -gt 1 ] && pfx="$j."
    run_job $j "$netj" "$words" "$pfx" < /dev/null
    rc=$?
    [ $rc = 0 ] && continue
    [ -n "$KEEPGOING" ] || exit $rc
    [ $first_rc = 0 ] && first_rc=$rc
done < /tmp/mpi/jobs
[ $first_rc = 0 ] || { [ -n "$STATS" ] && sleep 2; exit $first_rc; }
# --board-stats: the host reads the counters once a second; let it.
[ -n "$STATS" ] && sleep 2
exit 0
NODE2
} > "$script"


# ------------------------------------------------- output and results
# dn2scripts/mpirun_stream.py: follows the nodes' consoles (RUNDIR/nodeI.log, where the
# guests' command output lands; cluster.sh prints it only at the end) and
# prints every rank's lines as they come; once the run is over, writes
# RUNDIR/ranks/, RUNDIR/result.json, the JUnit file, and the exit status.
# (scripts/dn2scripts/mpirun_stream.py)

# --------------------------------------------------------------- launch
if [ -z "$mem" ]; then
    img=$(bash "$here/build-initramfs.sh" "${img_args[@]}") || fail "building the MPI image failed (scripts/build-initramfs.sh ${img_args[*]})"
    sized=$(mpi_mem_for "$img") || fail "cannot size guest memory from $img: give -m"
    mem=${sized%% *}
    [ -n "$quiet" ] || [ "$mem" -le 512 ] || say "guest memory: $mem MiB, sized from the image (${sized#* }; -m sets it)"
fi
grace=15
[ -n "$keep_going" ] && grace=$timeout_s      # a failed job does not end the run
if [ -n "$vt" ]; then
    # No job server: the node's script (the program and files inside) is
    # the command given at boot.  A failed job ends every node through the
    # agents; the grace (wall time) only bounds a node that hangs.
    [ -n "$keep_going" ] || grace=300
    cl_args=(-n "$nodes" --mpi -m "$mem" -t "$timeout_s" -g "$grace" --name "$name" -f "$script"
             --virtual-time --vt-start "$vt_start" "${vt_opts[@]}")
    export DN2_MPIRUN_VT=1
else
    cl_args=(-n "$nodes" --mpi -m "$mem" -t "$timeout_s" -g "$grace" --name "$name" --serve-dir "$serve" -f "$script")
fi
case " $nets " in *" tcp "*) cl_args+=(--ethernet) ;; esac
[ -n "$packages" ] && cl_args+=(--packages "$packages")
[ -n "$quiet" ] && cl_args+=(-q)
[ -n "$stats" ] && cl_args+=(--board-stats)
[ -z "$quiet" ] && say "$size ranks ($nodes nodes x $ppn), networks:$nets: $(tr '\t\n' ' ;' <<< "$joblist")"
printf '%s\n' "$joblist" > "$serve/jobs"
# A dead run's directory under this name: gone now, so that nothing of it
# is streamed (cluster.sh would remove it too, but only after its image).
rm -rf "$rundir"
cmd_json=$("$py" -c 'import json, sys; print(json.dumps(sys.argv[1:]))' "$0" "${orig_args[@]}")
PYTHONPATH=$here${PYTHONPATH:+:$PYTHONPATH} PYTHONDONTWRITEBYTECODE=1 "$py" -u -m dn2scripts.mpirun_stream "$rundir" "$serve/cluster.rc" "$nodes" "$ppn" "$serve/jobs" "$junit" \
    "$serve/status" "$name" "$timeout_s" "$stats" "$cmd_json" &
streamer=$!
# cluster.sh in the foreground: Ctrl-C reaches it (a background job would
# ignore SIGINT); its stdout (the nodes' output again, at the end) is kept.
mkdir -p "$DN2_TOP/build/cluster"
out=$DN2_TOP/build/cluster/$name.mpi.out
bash "$here/cluster.sh" "${cl_args[@]}" "${cl_opts[@]}" > "$out"
rc=$?
echo "$rc" > "$serve/cluster.rc"
wait "$streamer"
src=$?
if [ -n "$stats" ]; then
    # Sums over the boards of the last counters read.
    cat "$rundir"/board-stats/node* 2>/dev/null | awk -F= '
        $1 ~ /^(tx|rx)-(packets|bytes)$/ { sum[$1] += $2 }
        END { printf "[mpirun] boards: tx-packets=%d tx-bytes=%d rx-packets=%d rx-bytes=%d\n",
                     sum["tx-packets"], sum["tx-bytes"], sum["rx-packets"], sum["rx-bytes"] }' >&2
fi
if [ "$src" -ne 0 ] || [ ! -s "$serve/status" ]; then
    # Nothing is lost: the nodes' output as cluster.sh printed it.
    say "warning: streaming the output failed (status $src); the nodes' output as cluster.sh printed it:"
    sed -E 's/^node[0-9]+\| //' "$out"
    exit "$rc"
fi
status=$(cat "$serve/status")
[ -z "$quiet" ] && [ -f "$rundir/result.json" ] && say "results: $rundir/result.json${junit:+, $junit}"
[ "$status" != "$rc" ] && [ "$rc" = 1 ] && [ -z "$quiet" ] && say "exit status $status: the first rank that failed"
exit "$status"
