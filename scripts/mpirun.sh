#!/usr/bin/env bash
# Runs an MPI program (Debian's Open MPI 4.1) on a cluster of DIMMnet-2
# guests: boots NODES guests with the MPI image (scripts/cluster.sh --mpi),
# starts PPN ranks on every node (no mpirun, no ssh: Open MPI's direct launch
# with our PMI-1 library, libpmi-dn2.so, talking to the launcher's job
# server), waits for them, prints their output and tears the cluster down.
# docs/mpi.md.
#
#   scripts/mpirun.sh -n NODES [options] -- PROGRAM [ARGS...]
#   scripts/mpirun.sh -n NODES [options] --job NET:CMD [--job NET:CMD...]
#   scripts/mpirun.sh --help
#
#   -n, --nodes N       nodes (default 2)
#       --ppn P         ranks per node, 1 or 2 (default 1); on the board
#                       the two ranks of a node use WID 0 and WID 1
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
#       --env VAR=VAL   extra environment for every rank (repeatable)
#       --packages 'P'  extra Debian packages in the MPI image
#   -t, --timeout S     whole run (default 900)
#   -m, --mem MB        guest memory (default 512)
#       --name NAME     run directory build/cluster/NAME
#       --switch-opts S, --device-opts S, --secret-file F   as cluster.sh
#       --board-stats   read the boards' counters over QMP while the job runs
#                       (cluster.sh --board-stats) and print the sums of
#                       tx/rx packets and bytes over all boards at the end
#       --cluster-opt A an extra cluster.sh argument (repeatable)
#   -q, --quiet         no progress display
#
# PROGRAM is run as it is given, with ARGS unchanged, as the unprivileged
# user "mpi" (uid 1000) in /home/mpi.  When PROGRAM names a file on the host
# (it contains a "/", e.g. ./a.out or build/tests/mpi/mpi-check), that file
# is copied to the guests first; otherwise it is a command of the image
# (NPopenmpi, hpcc, mplrs, fi_info...).  Build your own program with mpicc on
# the host (Debian's libopenmpi-dev: the same Open MPI as in the image).
#
# Output: every rank's output (stdout and stderr), in rank order, each line
# prefixed "[R] ".  Exit status: 0 every rank exited 0; 1 a rank failed or
# the job was aborted (MPI_Abort); 2 a usage error (before anything starts,
# one line on stderr); otherwise cluster.sh's (3 a node failed, 4 setup,
# 124 timeout).  "--opt=value" is "--opt value".  The privileged set-up
# (driver, board bring-up, device permissions) is done once per node by the
# node's script, as root.
#
# Environment: DN2_FI_PROVIDER (the provider's .so; default: the one built
# under build/), DN2_MPI_OFI (the default of --ofi), and cluster.sh's (QEMU, DN2_SWITCH, DN2_CACHE...).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"

say() { printf '[mpirun] %s\n' "$*" >&2; }
fail() { printf '[mpirun] error: %s\n' "$*" >&2; exit 4; }

nodes=2 ppn=1 net= ofi=${DN2_MPI_OFI:-dimmnet2} timeout_s=900 mem=512 name= quiet=
files=() envs=() cl_opts=() packages= jobs=() stats= keep_going=
# ("--opt=value" is split by hand, up to PROGRAM: its arguments are its own)
while [ $# -gt 0 ]; do
    case $1 in
        --?*=*) set -- "${1%%=*}" "${1#*=}" "${@:2}"; continue ;;
        -n|--nodes) dn2_need_value "$@"; nodes=$2; shift 2 ;;
        --ppn) dn2_need_value "$@"; ppn=$2; shift 2 ;;
        --net) dn2_need_value "$@"; net=$2; shift 2 ;;
        --ofi) dn2_need_value "$@"; ofi=$2; shift 2 ;;
        --job) dn2_need_value "$@"; jobs+=("$2"); shift 2 ;;
        --file) dn2_need_value "$@"; files+=("$2"); shift 2 ;;
        --env) dn2_need_value "$@"; envs+=("$2"); shift 2 ;;
        --packages) dn2_need_arg "$@"; packages+=" $2"; shift 2 ;;
        -t|--timeout) dn2_need_value "$@"; timeout_s=$2; shift 2 ;;
        -m|--mem) dn2_need_value "$@"; mem=$2; shift 2 ;;
        --name) dn2_need_value "$@"; name=$2; shift 2 ;;
        --switch-opts|--device-opts|--secret-file) dn2_need_arg "$@"; cl_opts+=("$1" "$2"); shift 2 ;;
        --board-stats) stats=1; shift ;;
        --keep-going) keep_going=1; shift ;;
        --cluster-opt) dn2_need_arg "$@"; cl_opts+=("$2"); shift 2 ;;
        -q|--quiet) quiet=1; shift ;;
        -h|--help) dn2_usage; exit 0 ;;
        --) shift; break ;;
        -*) usage_error "unknown argument: $1" ;;
        *) break ;;
    esac
done
dn2_want_uint --nodes "$nodes"
dn2_want_uint --timeout "$timeout_s"
dn2_want_uint --mem "$mem"
[ "$nodes" -ge 1 ] && [ "$nodes" -le 64 ] || usage_error "--nodes must be 1..64"
case $ppn in 1|2) ;; *) usage_error "--ppn must be 1 or 2 (a board has two WIDs)" ;; esac
case $ofi in dimmnet2|'dimmnet2;ofi_rxd') ;; *) usage_error "--ofi must be dimmnet2 or 'dimmnet2;ofi_rxd'" ;; esac
for e in "${envs[@]}"; do
    [[ $e =~ ^[A-Za-z_][A-Za-z0-9_]*= ]] || usage_error "--env wants VAR=VALUE, not '$e'"
done
usage_net() { # OPT NET: a usage error unless NET is a network name (and fits --nodes)
    case $2 in board|tcp|shm) ;; *) usage_error "$1: the network must be board, tcp or shm, not '$2'" ;; esac
    [ "$2" != shm ] || [ "$nodes" = 1 ] || usage_error "$1: shm runs on one node only (-n 1 --ppn 2)"
}
[ -z "$net" ] || usage_net --net "$net"
for j in "${jobs[@]}"; do
    [[ $j == *:* ]] || usage_error "--job wants NET:CMD, not '$j'"
    usage_net --job "${j%%:*}"
done
for f in "${files[@]}"; do
    [ -f "$f" ] || usage_error "--file: $f: no such file"
done
[ $# -gt 0 ] || [ ${#jobs[@]} -gt 0 ] || usage_error "no program: scripts/mpirun.sh -n 2 -- PROGRAM [ARGS...]"
[ $# -eq 0 ] || [ ${#jobs[@]} -eq 0 ] || usage_error "give -- PROGRAM or --job, not both"
[ $# -eq 0 ] || [[ $1 != */* ]] || [ -f "$1" ] || usage_error "$1: no such file on the host"

# ------------------------------------------------------------ the image
export_mpi=$DN2_TOP/build/guest/export-mpi
pmi_lib=$DN2_TOP/build/linux-guest/pmi/libpmi-dn2.so
[ -f "$pmi_lib" ] || fail "$pmi_lib is not built (meson compile -C build)"
mkdir -p "$export_mpi/lib"
cmp -s "$pmi_lib" "$export_mpi/lib/libpmi-dn2.so" || cp "$pmi_lib" "$export_mpi/lib/libpmi-dn2.so"
# The libfabric provider (docs/ofi-provider.md), when built (or named by
# DN2_FI_PROVIDER).
provider=${DN2_FI_PROVIDER:-$(find "$DN2_TOP/build" -name 'libdimmnet2-fi.so' -type f 2>/dev/null | head -1)}
[ -z "$provider" ] || [ -f "$provider" ] || fail "DN2_FI_PROVIDER=$provider does not exist"
if [ -n "$provider" ]; then
    mkdir -p "$export_mpi/lib/libfabric"
    cmp -s "$provider" "$export_mpi/lib/libfabric/libdimmnet2-fi.so" \
        || cp "$provider" "$export_mpi/lib/libfabric/libdimmnet2-fi.so"
fi
if [ -z "$net" ]; then
    if [ -n "$provider" ]; then net=board; else net=tcp; fi
fi
check_net() { # NET
    case $1 in
        board) [ -n "$provider" ] || fail "--net board: the DIMMnet-2 libfabric provider (libdimmnet2-fi.so) is not built; use --net tcp" ;;
        tcp) ;;
        shm) [ "$nodes" = 1 ] || fail "--net shm runs on one node only (-n 1 --ppn 2)" ;;
        *) fail "the network must be board, tcp or shm, not '$1'" ;;
    esac
}
size=$((nodes * ppn))

# sh_quote WORD: WORD quoted for a POSIX shell (busybox sh in the guest)
sh_quote() { printf "'%s'" "$(printf '%s' "$1" | sed "s/'/'\\\\''/g")"; }

# ------------------------------------------------------- files to serve
[ -n "$name" ] || name=mpi-$(date +%Y%m%d-%H%M%S)-$$
serve=$DN2_TOP/build/mpirun/$name
rm -rf "$serve"
mkdir -p "$serve/mpi"
fetch_cmds=
for f in "${files[@]}"; do
    [ -f "$f" ] || fail "--file $f: no such file"
    b=$(basename "$f")
    cp "$f" "$serve/mpi/file-$b"
    mode=644; [ -x "$f" ] && mode=755
    fetch_cmds+="fetch mpi/file-$b /home/mpi/$b $mode"$'\n'
done

# The jobs, one per line: NET<TAB>shell words (the ranks run "exec WORDS")
joblist= nets=
if [ ${#jobs[@]} -eq 0 ]; then
    check_net "$net"
    prog=$1
    shift
    if [[ $prog == */* ]]; then
        [ -f "$prog" ] || fail "$prog: no such file on the host"
        cp "$prog" "$serve/mpi/prog"
        fetch_cmds+="fetch mpi/prog /tmp/mpi/bin/$(basename "$prog") 755"$'\n'
        prog=/tmp/mpi/bin/$(basename "$prog")
    fi
    argv=$(sh_quote "$prog")
    for a in "$@"; do argv+=" $(sh_quote "$a")"; done
    joblist=$net$'\t'$argv
    nets=" $net"
else
    for j in "${jobs[@]}"; do
        [[ $j == *:* ]] || fail "--job wants NET:CMD, not '$j'"
        check_net "${j%%:*}"
        nets+=" ${j%%:*}"
        joblist+=${j%%:*}$'\t'"sh -c $(sh_quote "${j#*:}")"$'\n'
    done
    joblist=${joblist%$'\n'}
fi
njobs=$(printf '%s\n' "$joblist" | wc -l)
# The board needs the driver and dn2-up in the image (build/guest/export).
case " $nets " in *" board "*)
    bash "$here/export-guest.sh" > /dev/null 2> "$serve/export.log" \
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
# node's ranks as user mpi, then their outputs in rank order.
script=$serve/node.sh
{
    echo "# generated by scripts/mpirun.sh: $size ranks, $ppn per node, networks:$nets"
    echo "PPN=$ppn SIZE=$size NJOBS=$njobs STATS=$stats KEEPGOING=$keep_going"
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
    # Each local rank's PMI token, from the server (the node's credential
    # asks for them: the first node to ask owns the rank).
    l=0
    while [ $l -lt $PPN ]; do
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
        eval "t=\$tok_$r"
        # The output streams to the console as it comes ("[R] " lines; the
        # host sorts them by rank), so a rank killed later still shows it.
        ( ( net_env "$NETJ"; export DN2_PMI_JOB=$PMIJOB DN2_PMI_RANK=$r DN2_PMI_TOKEN=$t; cd /home/mpi &&
            busybox su -p -s /bin/sh mpi -c "exec $ARGV" < /dev/null 2>&1
            echo $? > $out/$r.rc ) | sed "s/^/[$PFX$r] /" ) &
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
        [ "$rr" = 0 ] || { echo "[$PFX$r] mpirun: rank $r exited with status $rr"; [ $rc = 0 ] && rc=$rr; }
        l=$((l + 1))
    done
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

# --------------------------------------------------------------- launch
grace=15
[ -n "$keep_going" ] && grace=$timeout_s      # a failed job does not end the run
cl_args=(-n "$nodes" --mpi -m "$mem" -t "$timeout_s" -g "$grace" --name "$name" --serve-dir "$serve" -f "$script")
case " $nets " in *" tcp "*) cl_args+=(--ethernet) ;; esac
[ -n "$packages" ] && cl_args+=(--packages "$packages")
[ -n "$quiet" ] && cl_args+=(-q)
[ -n "$stats" ] && cl_args+=(--board-stats)
[ -z "$quiet" ] && say "$size ranks ($nodes nodes x $ppn), networks:$nets: $(tr '\t\n' ' ;' <<< "$joblist")"
out=$DN2_TOP/build/cluster/$name.mpi.out
bash "$here/cluster.sh" "${cl_args[@]}" "${cl_opts[@]}" > "$out"
rc=$?
# The nodes' outputs are "nodeI| [R] line": keep "[R] line", sorted by rank
# (stable: each rank's lines in their order; other lines first).
sed -E 's/^node[0-9]+\| //' "$out" \
    | awk '{ k = 0; if (match($0, /^\[[0-9]+(\.[0-9]+)?\] /)) { split(substr($0, 2, RLENGTH - 3), p, ".");
             k = (length(p) == 2) ? (p[1] + 1) * 100000 + p[2] + 1 : p[1] + 1 }
             printf "%012d %08d %s\n", k, NR, $0 }' | sort -k1,1n -k2,2n | cut -d' ' -f3-
if [ -n "$stats" ]; then
    # Sums over the boards of the last counters read.
    cat "$DN2_TOP/build/cluster/$name"/board-stats/node* 2>/dev/null | awk -F= '
        $1 ~ /^(tx|rx)-(packets|bytes)$/ { sum[$1] += $2 }
        END { printf "[mpirun] boards: tx-packets=%d tx-bytes=%d rx-packets=%d rx-bytes=%d\n",
                     sum["tx-packets"], sum["tx-bytes"], sum["rx-packets"], sum["rx-bytes"] }' >&2
fi
exit $rc
