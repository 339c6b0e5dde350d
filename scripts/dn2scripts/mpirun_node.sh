#@ The node's script of mpirun.sh (busybox sh, run as root on every node):
#@ dn2scripts/mpirun.py writes its variables (PPN SIZE NJOBS STATS KEEPGOING
#@ VT PMI NETS JOBS, the ranks' environment, net_env) above this text, and the
#@ file fetches in place of the @FETCH@ line.  Lines starting "#@" are not
#@ copied.
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
@FETCH@
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
NODES=$((SIZE / PPN))
# kill_ranks: every process of user mpi (the ranks and their children, and
# the node's PMIx server)
kill_ranks() { busybox su -s /bin/sh mpi -c 'kill -KILL -1' 2>/dev/null; }

# start_pmix: --pmi pmix: the node's PMIx server for job J
# (dn2-pmix-server, as user mpi).  Its fences travel as the node's part of
# a PMI-1 job of its own, $PMIJOB.pmix (rank DN2_NODE of NODES): over the
# job server, or under virtual time over the node's PMI agent.  A rank's
# PMIx_Abort runs $out/pmix-abort.sh RANK CODE MSG, which tells it as that
# rank (the job server, or the agent).  Up once it wrote every local rank's
# environment ($out/pmix/rank-R.env, one NAME=VALUE a line) and
# $out/pmix/ready.  A server that fails ends the job: the job server learns
# it as an abort of the node's first rank, and the node fails (status 1).
# DN2_PMIX_URL (a -x variable) gives the server another job server address
# than the node's (the tests' unreachable server).
start_pmix() {
    px=$out/pmix
    rm -rf $px $out/pmix.log
    mkdir -p $px && chown 1000:1000 $px && chmod 700 $px
    if [ -n "$VT" ]; then
        # (the server %-escapes the message: the agent escapes it again)
        printf '%s\n' '#!/bin/sh' \
            "m=\$(printf '%b' \"\$(echo \"\$3\" | sed 's/%/\\\\x/g')\")" \
            "exec dn2-pmi-agent --tell $out/pmi.sock abort \"\$1\" \"\$2\" \"\$m\"" > $out/pmix-abort.sh
        penv="DN2_PMI_SOCK=$out/pmi.sock DN2_PMI_JOB=$PMIJOB.pmix DN2_PMI_RANK=$DN2_NODE DN2_PMI_SIZE=$NODES"
    else
        pt=$(timeout 30 wget -q -O - "$DN2_HTTP/pmi/token?job=$PMIJOB.pmix&rank=$DN2_NODE" 2>/tmp/mpi/token.err) \
            || fail "no PMI token for the node's PMIx server from the job server: $(tail -1 /tmp/mpi/token.err)"
        { echo '#!/bin/sh'
          echo 'case $1 in'
          l=0
          while [ $l -lt $PPN ]; do
              eval "echo \"$((first + l))) t=\$tok_$((first + l)) ;;\""
              l=$((l + 1))
          done
          echo '*) exit 1 ;; esac'
          echo "exec timeout 10 wget -q -O /dev/null \"$DN2_PMI_URL/pmi/abort?job=$PMIJOB&rank=\$1&token=\$t&code=\$2&msg=\$3\""
        } > $out/pmix-abort.sh
        penv="DN2_PMI_URL=${DN2_PMIX_URL:-$DN2_PMI_URL} DN2_PMI_JOB=$PMIJOB.pmix DN2_PMI_RANK=$DN2_NODE"
        penv="$penv DN2_PMI_SIZE=$NODES DN2_PMI_TOKEN=$pt"
    fi
    chmod 755 $out/pmix-abort.sh
    # (virtual time has no cluster job id: the namespace is then dn2.mpiJ)
    ns=$PMIJOB; [ -n "${DN2_JOBID:-}" ] || ns=dn2$PMIJOB
    ( export $penv DN2_PMI_CLIQUE=$DN2_NODE
      exec busybox su -p -s /bin/sh mpi -c \
          "exec dn2-pmix-server -n $DN2_NODE -N $NODES -l $PPN -j $ns -d $px -A $out/pmix-abort.sh"
    ) > $out/pmix.log 2>&1 &
    pmixd=$!
    i=0
    while [ ! -e $px/ready ]; do
        why=
        kill -0 $pmixd 2>/dev/null || why="$(tail -1 $out/pmix.log)"
        i=$((i + 1)); [ $i -lt 1200 ] || why="not up in 120 s: $(tail -1 $out/pmix.log)"
        if [ -n "$why" ]; then
            kill $pmixd 2>/dev/null
            pmix_failed "the PMIx server failed: $why"
        fi
        usleep 100000
    done
}

# pmix_failed MSG: the job ends (the job server, or the PMI agents, learn
# it as an abort of the node's first rank) and so does this node (status 1)
pmix_failed() {
    m=$(echo "node $DN2_NODE: $1" | sed 's/%/%25/g; s/ /%20/g; s/&/%26/g; s/#/%23/g; s/+/%2B/g; s/?/%3F/g')
    if [ -n "$VT" ]; then
        dn2-pmi-agent --tell $out/pmi.sock abort $first 1 "node $DN2_NODE: $1" 2>/dev/null
    else
        timeout 10 wget -q -O /dev/null "$DN2_PMI_URL/pmi/abort?job=$PMIJOB&rank=$first&token=$st&code=1&msg=$m" 2>/dev/null
    fi
    fail "$1"
}

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
    eval "st=\${tok_$first:-}"
    rm -f $out/killed
    pmixd=
    [ "$PMI" = pmix ] && start_pmix
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
            # (the server's addresses hold ';': each line is exported whole)
            if [ "$PMI" = pmix ]; then
                while IFS= read -r e; do export "$e"; done < $out/pmix/rank-$r.env
            fi
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
          # The job server's job was aborted (elsewhere) and this node ended
          # its ranks: not a failure of this rank's own.
          if [ -z "$VT" ] && [ "$rr" != 0 ] && [ -e $out/killed ]; then
              killed=1
              echo "[$PFX$r] mpirun: rank $r ended: the job was aborted"
              echo "DN2-MPI-RANK-KILLED $J $r -1"
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
            sleep 1; : > $out/killed; kill_ranks
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
    # (the server ends once its ranks finalized; not when one died)
    if [ -n "$pmixd" ]; then
        kill $pmixd 2>/dev/null; wait $pmixd 2>/dev/null
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
