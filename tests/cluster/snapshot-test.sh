#!/usr/bin/env bash
# Cluster snapshots (TAP): scripts/cluster.sh snapshot NAME TAG and
# start NAME --from TAG, restored twice (docs/cluster.md, "Snapshots").
#
#   tests/cluster/snapshot-test.sh        (meson: test 'cluster-snapshot')
#
#   1. start a 2-node kept cluster; load the driver, bring the boards up,
#      leave a marker file in each guest and start, in the background on
#      both nodes, a loop of dn2-e2e runs (every remote primitive across
#      the boards, data checked byte for byte): traffic on the fabric
#   2. snapshot NAME TAG while that loop runs: 0, the files are there
#   3. refusals: the same TAG again (status 4); a restore while the
#      cluster it was taken from runs (its job server's port, status 4,
#      naming the port); a snapshot of a cluster that does not run (4),
#      of a virtual-time run (4, naming virtual time); start --from with
#      an option the snapshot fixes (2)
#   4. the source cluster goes on: its loop ends with every run passing;
#      a receiver's status ring full at the cut (packets acknowledged but
#      held undelivered in its endpoint): no snapshot while its guest does
#      not empty it (status 3, saying so), and nothing lost; a snapshot
#      once it does, the guests running between attempts at the cut;
#      stopped, a restore whose QEMU ends at once fails at once (status 3,
#      naming it) and leaves nothing
#   5. then, twice: start R --from TAG (0); every node has its marker, its
#      saved LID ($DN2_LID and the switch's port table) and the rank
#      table; the loop that was running at the cut ends there too with
#      every run passing (no packet lost or doubled at the cut); a fresh
#      dn2-e2e passes on rank 0 and 1; PMI through the job server (tokens,
#      put, barrier, get: the job's secret and id survived) gives each
#      rank the other's key; cp both ways byte for byte; stop leaves no
#      process of the run
#   6. MPI: a 2-node cluster with the MPI image (--mpi), the driver loaded
#      and mpi-check copied in, snapshotted; restored twice, each runs
#      mpi-check (Open MPI over the boards through the libfabric provider,
#      PMI through the restored job server; every check on rank 0 passes)
#
# Environment: QEMU, DN2_SWITCH (as cluster-test.sh), DN2_E2E (the dn2-e2e
# program), DN2_CLUSTER_BOOT_TIMEOUT (default 300), DN2_SNAPSHOT_LOOPS
# (dn2-e2e runs in the background loop, default 6), DN2_MPI_CHECK (the
# mpi-check program: build/tests/mpi/mpi-check; without it the MPI points
# skip, or fail when CI is set).  Snapshots go to
# build/snapshot-test (DN2_SNAPSHOT_DIR); run directories
# build/cluster/test-snap*.
set -uo pipefail
top=$(cd "$(dirname "$(realpath "$0")")/../.." && pwd)
. "$top/scripts/lib.sh"
. "$top/tests/tap/tap-lib.sh"
dn2_no_options "$@"
cluster=$top/scripts/cluster.sh
boot_timeout=${DN2_CLUSTER_BOOT_TIMEOUT:-300}
loops=${DN2_SNAPSHOT_LOOPS:-6}
e2e=${DN2_E2E:-$top/build/tests/cluster/dn2-e2e}
command -v pgrep > /dev/null || tap_skip_all "$(tap_missing pgrep procps)"
[ -x "$e2e" ] || tap_skip_all "no $e2e: meson compile -C build"
export DN2_SNAPSHOT_DIR=$top/build/snapshot-test
src=test-snap
tag=test-snap
work=$top/build/cluster/$src.files
mkdir -p "$work" "$top/build/cluster"
log=$work/log
: > "$log"
names=("$src" "$src-r1" "$src-r2" "$src-bad" "$src-mpi" "$src-mpi-r1" "$src-mpi-r2")
mpi_check=${DN2_MPI_CHECK:-$top/build/tests/mpi/mpi-check}
for n in "${names[@]}"; do "$cluster" stop "$n" > /dev/null 2>&1; done
rm -rf "$DN2_SNAPSHOT_DIR"
finish() {
    for n in "${names[@]}"; do "$cluster" stop "$n" > /dev/null 2>&1; done
    rm -rf "$DN2_SNAPSHOT_DIR"
}
trap finish EXIT
# run OUTVAR CMD...: CMD's stdout and stderr into OUTVAR, its status in rc
run() { local -n _o=$1; shift; _o=$("$@" 2>&1); rc=$?; printf '%s\n' "\$ ${*:1:4}... (rc $rc)" "$_o" >> "$log"; }
fail_diag() { printf '%s\n' "$1" | tail -"${2:-8}" | diag; }

if ! bash "$top/scripts/export-guest.sh" "$e2e" > "$work/export.log" 2>&1; then
    tap_plan 1
    not_ok "could not prepare the guest programs: $(tail -1 "$work/export.log")"
    tap_done
fi
tap_plan 34

# ---------------------------------------------------------------- 1. source
run out "$cluster" start "$src" -n 2 -q -b "$boot_timeout"
result $rc "start $src: a 2-node kept cluster"
[ $rc -eq 0 ] || { fail_diag "$out" 15; bail "no cluster to take a snapshot of"; }
# (the background loop: each run's summary line, then BG-DONE)
bg="(k=0; while [ \$k -lt $loops ]; do dn2-e2e > /tmp/e2e.\$k 2>&1; echo \"run \$k rc=\$? \$(grep -c '^ok ' /tmp/e2e.\$k) ok \$(grep -c '^not ok ' /tmp/e2e.\$k) not-ok\"; k=\$((k + 1)); done; echo BG-DONE) > /root/bg.out 2>&1 < /dev/null &"
run out "$cluster" exec "$src" -t 120 "insmod /opt/dn2/dimmnet2.ko && dn2-up -q > /dev/null && echo marker-{node}-\$DN2_LID > /root/marker && $bg"
result $rc "driver loaded, boards up, markers written, a dn2-e2e loop started on both nodes"
[ $rc -eq 0 ] || fail_diag "$out"
sleep 2

# -------------------------------------------------------------- 2. snapshot
run out "$cluster" snapshot "$src" "$tag"
snap=$DN2_SNAPSHOT_DIR/$tag
if [ $rc -eq 0 ] && [ -s "$snap/node0.mig" ] && [ -s "$snap/node1.mig" ] && [ -s "$snap/snapshot.info" ]; then
    ok "snapshot $src $tag while the loop runs: $(grep -o 'drained_s=[0-9.]* saved_s=[0-9.]*' "$snap/snapshot.info")"
else
    not_ok "snapshot $src $tag (rc $rc)"; fail_diag "$out"
    bail "no snapshot to restore"
fi
saved_lids=$(sed -n 's/^lids=//p' "$snap/snapshot.info" | tr -d "\\\\'")

# -------------------------------------------------------------- 3. refusals
run out "$cluster" snapshot "$src" "$tag"
{ [ $rc -eq 4 ] && grep -q 'exists' <<< "$out"; } ; result $? "the same TAG again is refused (status 4: it exists)"
run out "$cluster" start "$src-r1" --from "$tag" -q
{ [ $rc -eq 4 ] && grep -q "port .* is busy" <<< "$out"; } ; result $? "a restore while the source runs is refused, naming the job server's port (status 4)"
[ $rc -eq 4 ] || fail_diag "$out"
run out "$cluster" snapshot no-such-cluster "$tag-x"
[ $rc -eq 4 ]; result $? "a snapshot of a cluster that does not run is refused (status 4)"
run out "$cluster" start "$src-r1" --from "$tag" -n 4
[ $rc -eq 2 ]; result $? "start --from takes the snapshot's options: -n is a usage error (status 2)"
# (a virtual-time run's directory, as the launcher leaves it: refused for
# that reason)
vtdir=$top/build/cluster/$src-vt
mkdir -p "$vtdir" && printf 'launcher_pid=0\nvirtual_time=1\nnodes=2\n' > "$vtdir/info"
run out "$cluster" snapshot "$src-vt" "$tag-vt"
{ [ $rc -eq 4 ] && grep -q 'virtual time' <<< "$out"; }; result $? "a virtual-time run is refused, naming virtual time (status 4)"
rm -rf "$vtdir"

# bg_check NAME: the background loop ended on both nodes, every run passed
bg_check() {
    local t out2 want
    for ((t = 0; t < 120; t++)); do
        run out2 "$cluster" exec "$1" -t 30 'grep -c BG-DONE /root/bg.out'
        [ "$(grep -c '| 1$' <<< "$out2")" -eq 2 ] && break
        sleep 1
    done
    run out2 "$cluster" exec "$1" -t 30 'cat /root/bg.out'
    # (rank 0 prints the TAP; both exit 0)
    want=$(( $(grep -c '^node0| run [0-9]* rc=0 [1-9][0-9]* ok 0 not-ok$' <<< "$out2") +
             $(grep -c '^node1| run [0-9]* rc=0 [0-9]* ok 0 not-ok$' <<< "$out2") ))
    if [ "$want" -eq $((2 * loops)) ] && [ "$(grep -c 'BG-DONE' <<< "$out2")" -eq 2 ]; then
        ok "$1: the loop running at the cut ended on both nodes, all $loops dn2-e2e runs passed"
    else
        not_ok "$1: the loop running at the cut: $want of $((2 * loops)) runs passed"
        fail_diag "$out2" 16
    fi
}

# ----------------------------------------------------------- 4. source goes on
bg_check "$src"

# A receiver's status ring full at the cut.  Node0 sends 80 RVS with eflag
# to node1's WID 0, whose ring holds 63 records: the rest wait in node1's
# endpoint, acknowledged (so node0 is idle) but not delivered, and in no
# migration stream.  ring_round WHEN: node1's dsh takes the records once
# /root/go exists (WHEN=go) or 4 s after the snapshot's job started
# (WHEN=gate); ring_done: both dsh ended, node1 took all 80.
ring_round() {
    local wait
    if [ "$1" = go ]; then wait='[ -e /root/go ]'; else wait="ps | grep -q '[d]n2-gate'"; fi
    run out "$cluster" exec "$src" --node 1 -t 60 "rm -f /root/go /root/ring.out; ( { echo 'ureg_write status_initial_addr 0x7000'; echo 'ureg_write status_area_size 0x10'; until $wait; do usleep 100000; done; [ -e /root/go ] || sleep 4; i=0; while [ \$i -lt 80 ]; do echo 'wait status 20000'; echo status; i=\$((i + 1)); done; } | dsh -d /dev/dimmnet2-0 -q > /root/ring.out 2>&1; echo RING-DONE >> /root/ring.out ) < /dev/null > /dev/null 2>&1 &"
    run out "$cluster" exec "$src" --node 0 -t 60 "peer=\$(awk '\$1 == 1 { print \$2 }' \$DN2_RANKS); rm -f /root/send.out; ( { echo 'ureg_write prim_counter_reset 1'; i=0; while [ \$i -lt 80 ]; do echo \"prim RVS dt=0 it=0 dw=0 dl=\$peer ef=1 size=0x40 src=0 dst=0x3000\"; i=\$((i + 1)); done; echo 'wait count RVS 80 60000'; } | dsh -d /dev/dimmnet2-0 -q > /root/send.out 2>&1; echo SEND-DONE >> /root/send.out ) < /dev/null > /dev/null 2>&1 &"
    sleep 1
}
ring_done() {
    local t
    for ((t = 0; t < 60; t++)); do
        run out "$cluster" exec "$src" -t 30 'cat /root/ring.out /root/send.out 2>/dev/null | grep -c -e RING-DONE -e SEND-DONE'
        [ "$(grep -c '| 1$' <<< "$out")" -eq 2 ] && break
        sleep 1
    done
    run out "$cluster" exec "$src" --node 1 -t 30 "grep -c 'RVS from' /root/ring.out"
    grep -q '^node1| 80$' <<< "$out"
}
ring_round go
run out "$cluster" snapshot --drain 6 "$src" "$tag-ring"
{ [ $rc -eq 3 ] && grep -q 'packets received and not yet delivered' <<< "$out" && [ ! -e "$DN2_SNAPSHOT_DIR/$tag-ring" ]; }
result $? "a status ring its guest does not empty: no snapshot (status $rc), naming the packets held undelivered"
[ $rc -eq 3 ] || fail_diag "$out"
run out "$cluster" exec "$src" --node 1 -t 30 'touch /root/go'
ring_done; result $? "the cluster ran on: node1's guest then took all 80 status records"
[ $rc -eq 0 ] || fail_diag "$out"
ring_round gate
run out "$cluster" snapshot --drain 90 "$src" "$tag-ring"
att=$(sed -n 's/.*attempts=\([0-9]*\).*/\1/p' "$DN2_SNAPSHOT_DIR/$tag-ring/snapshot.info" 2>/dev/null)
ring_done; ring=$?
{ [ $rc -eq 0 ] && [ "${att:-0}" -ge 2 ] && [ $ring -eq 0 ]; }
result $? "a status ring its guest empties 4 s into the cut: the snapshot after $att attempts, the guests running between (status $rc), all 80 records taken"
[ $rc -eq 0 ] || fail_diag "$out"
rm -rf "${DN2_SNAPSHOT_DIR:?}/$tag-ring"
run out "$cluster" stop "$src"
result $rc "stop $src"
# a restore whose QEMU ends at once (here: QEMU=/bin/false)
run out env QEMU=/bin/false "$cluster" start "$src-bad" --from "$tag" -q
sleep 1.5   # (the launcher's reaper polls once a second)
left=$(pgrep -f "$top/build/cluster/$src-bad/" 2>/dev/null | wc -l)
{ [ $rc -eq 3 ] && grep -q 'QEMU ended before its snapshot was loaded' <<< "$out" && [ "$left" -eq 0 ]; }
result $? "a restore whose QEMU ends fails at once (status $rc), naming it, with nothing left ($left)"
[ $rc -eq 3 ] || fail_diag "$out"

# ---------------------------------------------------------- 5. restore twice
for r in 1 2; do
    name=$src-r$r
    t0=$(date +%s.%N)
    run out "$cluster" start "$name" --from "$tag" -q
    t1=$(date +%s.%N)
    result $rc "restore $r: start $name --from $tag ($(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }') s)"
    [ $rc -eq 0 ] || { fail_diag "$out" 15; continue; }
    rundir=$top/build/cluster/$name
    # markers, LIDs as saved (guest and switch), the rank table
    run out "$cluster" exec "$name" -t 60 'cat /root/marker; echo lid=$DN2_LID; cat $DN2_RANKS | tr "\n" ,; echo'
    sw=$("$top/build/fabric/dn2-switch" --stats "$(sed -n 's/^switch=//p' "$rundir/info")" 2>&1)
    good=1
    read -r -a lid <<< "$saved_lids"
    for i in 0 1; do
        grep -q "^node$i| marker-$i-${lid[i]}$" <<< "$out" || good=
        grep -q "^node$i| lid=${lid[i]}$" <<< "$out" || good=
        [ "$(awk -v g="$(printf '0x%016x' $((i + 1)))" '$2 == "active" && $3 == g { print $1 }' <<< "$sw")" = "$(printf '0x%04x' "${lid[i]}")" ] || good=
    done
    grep -q "^node1| 0 ${lid[0]} 0,1 ${lid[1]} 0,$" <<< "$out" || good=
    if [ -n "$good" ]; then ok "restore $r: markers, LIDs ${lid[*]} in the guests and the switch, the rank table"
    else not_ok "restore $r: markers, LIDs, rank table"; fail_diag "$out"; fail_diag "$sw" 4; fi
    bg_check "$name"
    run out "$cluster" exec "$name" -t 120 'dn2-e2e'
    nok=$(grep -c '^node0| ok ' <<< "$out")
    { [ $rc -eq 0 ] && [ "$nok" -gt 0 ] && ! grep -q '^node0| not ok' <<< "$out"; }
    result $? "restore $r: a fresh dn2-e2e across the boards: $nok checks on rank 0 pass, both ranks exit 0"
    [ $rc -eq 0 ] || fail_diag "$out" 12
    # PMI through the job server: rank R puts keyR, all meet at a barrier,
    # each dumps the keys
    pmi='J=$DN2_JOBID.snap'$r'; U=${DN2_HTTP%/n/*}; R=$DN2_RANK
T=$(timeout 30 wget -q -O - "$DN2_HTTP/pmi/token?job=$J&rank=$R") || exit 11
echo "key$R val-$R-$DN2_LID" > /tmp/put
timeout 30 wget -q -O /dev/null --post-file /tmp/put "$U/pmi/put?job=$J&rank=$R&token=$T" || exit 12
n=0
until timeout 30 wget -q -O /tmp/dump "$U/pmi/barrier?job=$J&rank=$R&token=$T&size=$DN2_NODES&epoch=0" && [ "$(grep -c "^key" /tmp/dump)" = "$DN2_NODES" ]; do
    n=$((n + 1)); [ $n -lt 10 ] || exit 13
done
sort /tmp/dump | tr "\n" " "; echo'
    run out "$cluster" exec "$name" -t 120 "$pmi"
    want="key0 val-0-${lid[0]} key1 val-1-${lid[1]} "
    { [ $rc -eq 0 ] && [ "$(grep -cxF "node0| $want" <<< "$out")" = 1 ] && [ "$(grep -cxF "node1| $want" <<< "$out")" = 1 ]; }
    result $? "restore $r: PMI through the job server (token, put, barrier, get): each rank has both keys"
    [ $rc -eq 0 ] || fail_diag "$out"
    # cp both ways
    head -c 200000 /dev/urandom > "$work/in.$r"
    run out "$cluster" cp "$name" "$work/in.$r" :/root/in.bin
    rc1=$rc
    run out "$cluster" cp "$name" 1:/root/in.bin "$work/back.$r"
    { [ $rc1 -eq 0 ] && [ $rc -eq 0 ] && cmp -s "$work/in.$r" "$work/back.$r"; }
    result $? "restore $r: cp to every node and back from node 1, byte for byte"
    run out "$cluster" stop "$name"
    left=$(pgrep -f "$rundir/" 2>/dev/null | wc -l)
    { [ $rc -eq 0 ] && [ "$left" -eq 0 ]; }
    result $? "restore $r: stop $name leaves no process of the run ($left left)"
done
# -------------------------------------------------------------------- 6. MPI
# The ranks' environment is mpirun.sh's for one rank per node on the
# board network (scripts/mpirun.sh, "Open MPI's environment").
mpi_job() { # mpi_job R [VARS]: the job for restore R, VARS exported too
    cat <<EOF
J=\$DN2_JOBID.snapmpi$1; R=\$DN2_RANK
hostname "node\$DN2_NODE" 2>/dev/null
mkdir -p /tmp/mpi && chmod 1777 /tmp/mpi
awk '{ print \$1, \$2, 0 }' "\$DN2_RANKS" > /tmp/mpi/ranks && chmod 644 /tmp/mpi/ranks
T=\$(timeout 30 wget -q -O - "\$DN2_HTTP/pmi/token?job=\$J&rank=\$R") || exit 11
export FLUX_JOB_ID=$((2000 + $1)) FLUX_PMI_LIBRARY_PATH=/opt/dn2/lib/libpmi-dn2.so
export OMPI_MCA_pmix=flux OMPI_MCA_ess=pmi OMPI_MCA_orte_tmpdir_base=/tmp/mpi
export OMPI_MCA_btl_base_warn_component_unused=0 OMPI_MCA_hwloc_base_binding_policy=none
export FI_PROVIDER=^ofi_rxd OMPI_MCA_pml=cm OMPI_MCA_mtl=ofi OMPI_MCA_mtl_ofi_provider_include=dimmnet2
export FI_PROVIDER_PATH=/opt/dn2/lib/libfabric OMPI_MCA_btl=self,vader OMPI_MCA_osc=pt2pt
export HOME=/home/mpi USER=mpi LOGNAME=mpi DN2_RANKS=/tmp/mpi/ranks
export DN2_PMI_URL=\${DN2_HTTP%/n/*/*} DN2_PMI_SIZE=\$DN2_NODES DN2_PMI_CLIQUE=\$R
export DN2_PMI_JOB=\$J DN2_PMI_RANK=\$R DN2_PMI_TOKEN=\$T
${2:+export $2}
cd /home/mpi && busybox su -p -s /bin/sh mpi -c 'exec /tmp/mpi-check' < /dev/null 2>&1
EOF
}
# mpi_diag OUT R: what a failed restore's job printed, beyond the job's
# text and the passed checks, and the same job again with the PMI library
# and Open MPI's start traced (diagnostics only: the point has failed)
mpi_diag() {
    grep -v '^node[0-9]| ok \|^\(J=\|mkdir \|awk \|T=\|export \|cd \|hostname \|\${\)' <<< "$1" | head -60 | diag
    local again
    run again "$cluster" exec "$name" -t 300 \
        "$(mpi_job "$(( $2 + 10 ))" "DN2_PMI_DEBUG=1 OMPI_MCA_ess_base_verbose=10 OMPI_MCA_pmix_base_verbose=10")"
    diag "the job again, traced (rc $rc):"
    grep -v '^node[0-9]| ok ' <<< "$again" | grep -i 'pmi\|ess\|error\|fail\|rc=' | head -80 | diag
}
msrc=$src-mpi
if [ ! -x "$mpi_check" ]; then
    why="no $mpi_check (meson compile -C build; the MPI toolchain: scripts/setup.sh)"
    for p in "start $msrc --mpi" "snapshot" "restore 1" "restore 1: mpi-check" "restore 2" "restore 2: mpi-check"; do
        skip "MPI: $p" "$why"
    done
else
    run out "$cluster" start "$msrc" -n 2 --mpi -q -b "$boot_timeout"
    rc0=$rc
    [ $rc -eq 0 ] && run out "$cluster" cp "$msrc" "$mpi_check" :/tmp/mpi-check
    [ $rc -eq 0 ] && run out "$cluster" exec "$msrc" -t 120 'insmod /opt/dn2/dimmnet2.ko && dn2-up -q > /dev/null && chmod 666 /dev/dimmnet2-*'
    result $rc "MPI: start $msrc --mpi, mpi-check copied in, the driver loaded (start: status $rc0)"
    [ $rc -eq 0 ] || fail_diag "$out" 12
    run out "$cluster" snapshot "$msrc" "$tag-mpi"
    rc1=$rc
    run out2 "$cluster" stop "$msrc"
    { [ $rc1 -eq 0 ] && [ $rc -eq 0 ]; }
    result $? "MPI: snapshot $msrc $tag-mpi ($(du -sm "$DN2_SNAPSHOT_DIR/$tag-mpi" 2>/dev/null | cut -f1) MiB), stop $msrc"
    [ $rc1 -eq 0 ] || fail_diag "$out"
    for r in 1 2; do
        name=$msrc-r$r
        run out "$cluster" start "$name" --from "$tag-mpi" -q
        result $rc "MPI: restore $r: start $name --from $tag-mpi"
        [ $rc -eq 0 ] || { fail_diag "$out" 12; not_ok "MPI: restore $r: mpi-check (no cluster)"; continue; }
        run out "$cluster" exec "$name" -t 300 "$(mpi_job "$r")"
        nok=$(grep -c '^node0| ok ' <<< "$out")
        { [ $rc -eq 0 ] && [ "$nok" -ge 10 ] && ! grep -q '| not ok' <<< "$out"; }
        result $? "MPI: restore $r: mpi-check on 2 ranks over the boards: $nok checks on rank 0 pass, both exit 0"
        { [ $rc -eq 0 ] && [ "$nok" -ge 10 ]; } || mpi_diag "$out" "$r"
        "$cluster" stop "$name" > /dev/null 2>&1
    done
fi
tap_done
