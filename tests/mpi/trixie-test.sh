#!/usr/bin/env bash
# TAP: the Debian 13 (trixie) MPI image and Open MPI 5 over the boards
# (scripts/mpirun.sh --guest-release trixie, docs/mpi.md "Guest release").
#   1. scripts/build-initramfs.sh --mpi --guest-release trixie builds the
#      image (the first time it fetches trixie's lists into a private apt
#      state and its .debs into $DN2_CACHE/debs-trixie; later runs reuse
#      them): Open MPI 5's libmpi, PMIx 5, libfabric 2, the release's own
#      dn2-pmix-server and provider, the merged-/usr links
#   2. --pmi pmi1 with trixie is a usage error naming PMIx
#   3. one cluster of 2 nodes x 2 ranks, three jobs (--keep-going):
#      a. mpi-check over the boards (cm PML, ofi MTL, the provider built
#         against libfabric 2.1): every check passes, every rank exits 0,
#         and the ranks run Open MPI v5; its two one-sided cases are
#         reported skipped (MPI_CHECK_NO_ONESIDED): Open MPI 5 has no
#         window component over the cm PML without a BTL to every peer
#      b. mpi-check over TCP on the guest Ethernet (btl tcp,self,sm), the
#         one-sided cases included
#      c. mpi-fail abort: rank 1's MPI_Abort(7) through its PMIx server:
#         its status 7, "MPI job aborted: rank 1 called PMI_Abort (exit
#         code 7)"; the run's status is 7
#   Nothing can hang: the run has mpirun.sh's timeout (status 124, which no
#   point accepts).
# Environment: DN2_MPI_CHECK, DN2_MPI_FAIL (meson sets them), DN2_MPI_TIMEOUT
# (the run, 600).
set -uo pipefail
top=$(cd "$(dirname "$(realpath "$0")")/../.." && pwd)
. "$top/tests/tap/tap-lib.sh"
mpirun=$top/scripts/mpirun.sh
out=$top/build/trixie-test
tmo=${DN2_MPI_TIMEOUT:-600}
check_p=${DN2_MPI_CHECK:-$top/build/tests/mpi/mpi-check}
fail_p=${DN2_MPI_FAIL:-$top/build/tests/mpi/mpi-fail}
[ -x "$check_p" ] && [ -x "$fail_p" ] || tap_skip_all "$(tap_missing mpicc libopenmpi-dev)"
command -v apt-get > /dev/null || tap_skip_all "$(tap_missing apt-get apt)"
command -v jq > /dev/null || tap_skip_all "$(tap_missing jq)"
tap_plan 9
rm -rf "$out"; mkdir -p "$out"

# 1. the image
t0=$SECONDS
img=$(bash "$top/scripts/build-initramfs.sh" --mpi --guest-release trixie 2> "$out/image.err")
rc=$?
if [ $rc = 0 ] && [ -f "$img" ]; then
    ok "the trixie MPI image builds in $((SECONDS - t0)) s: $(basename "$img"), $(du -h "$img" | cut -f1)"
    grep -h 'downloading\|apt-get update' "$out/image.err" | diag
else
    not_ok "building the trixie MPI image: exit $rc"; tail -5 "$out/image.err" | diag
    bail "no trixie image"
fi
root=$(dirname "$img")/root-$(basename "$img" .cpio.lz4)
ompi=$(ls "$root"/usr/lib/x86_64-linux-gnu/libmpi.so.40.40.* 2> /dev/null | head -1)
if [ -n "$ompi" ] && [ -L "$root/lib64" ] && [ -L "$root/bin" ] &&
   [ -x "$root/opt/dn2/bin/dn2-pmix-server" ] && [ -f "$root/opt/dn2/lib/libfabric/libdimmnet2-fi.so" ] &&
   readelf -d "$root/opt/dn2/bin/dn2-pmix-server" | grep -q 'libpmix.so.2' &&
   ls "$root"/usr/lib/x86_64-linux-gnu/libfabric.so.1.2[0-9].* > /dev/null 2>&1; then
    ok "the image: Open MPI 5 ($(basename "$ompi")), libfabric 2, merged /usr, the release's server and provider"
else
    not_ok "the image's contents"; ls -l "$root" "$root/opt/dn2/bin" 2>&1 | diag
fi

# 2. no PMI-1 for Open MPI 5
msg=$(bash "$mpirun" --guest-release trixie --pmi pmi1 --dry-run -- true 2>&1)
rc=$?
if [ $rc = 2 ] && grep -q 'Open MPI 5 .* has no PMI-1 path' <<< "$msg"; then
    ok "--pmi pmi1 with trixie: usage error (exit 2) naming PMIx"
else
    not_ok "--pmi pmi1 with trixie: exit $rc"; diag "$msg"
fi

# 3. one cluster, three jobs
t0=$SECONDS
bash "$mpirun" --guest-release trixie -q -t "$tmo" --name trixie-test -N 2 --ppn 2 --keep-going \
    --file "$check_p" --file "$fail_p" \
    --job "board:MPI_CHECK_NO_ONESIDED='no window component over the boards in Open MPI 5' ./mpi-check 65536" --job "tcp:./mpi-check 65536" --job "tcp:./mpi-fail abort" \
    > "$out/run.out" 2> "$out/run.err"
rc=$?
secs=$((SECONDS - t0))
cp "$top/build/cluster/trixie-test/result.json" "$out/run.json" 2> /dev/null || echo '{"ranks": []}' > "$out/run.json"
show() { tail -n 20 "$out/run.out" "$out/run.err" | diag; }
status() { jq -r --argjson j "$1" --argjson r "$2" '.ranks[] | select(.job == $j and .rank == $r) | .status' "$out/run.json"; }
jok() { [ "$(jq -r --argjson j "$1" '[.ranks[] | select(.job == $j) | .status] | length == 4 and all(. == 0)' "$out/run.json")" = true ]; }
jsecs() {
    jq -r --argjson j "$1" '[.ranks[] | select(.job == $j)] | if length == 0 or any(.ended_s == null)
        then "?" else (map(.ended_s) | max) - (map(.started_s) | min) | . * 10 | floor / 10 end' "$out/run.json"
}
# mpi_check J NET: job J's mpi-check passed on every rank
mpi_check() {
    local pts skips
    pts=$(grep "^\[$1\.0\] ok " "$out/run.out" | grep -vc '# SKIP')
    skips=$(grep "^\[$1\.0\] ok " "$out/run.out" | grep -c '# SKIP')
    [ "$skips" -gt 0 ] && skips=", $skips skipped" || skips=
    if [ "$pts" -gt 0 ] && ! grep -q "^\[$1\.[0-3]\] not ok" "$out/run.out" && jok "$1"; then
        ok "mpi-check over $2, 2 nodes x 2 ranks, Open MPI 5: $pts checks passed$skips, every rank exit 0 ($(jsecs "$1") s)"
    else
        not_ok "mpi-check over $2: $pts checks (run exit $rc)"; show
    fi
}
mpi_check 1 "the boards"
check "over the boards the two one-sided cases are reported skipped, with the reason" \
    test "$(grep -c '^\[1\.0\] ok 1[78] - MPI_[PG][ue]t + MPI_Win_fence # SKIP no window component' "$out/run.out")" = 2
if grep -q '^\[1\.0\] # 4 ranks; Open MPI v5\.' "$out/run.out"; then
    ok "the ranks run $(grep -o -m1 'Open MPI v5[.0-9]*' "$out/run.out")"
else
    not_ok "the ranks do not report Open MPI v5"; grep -m3 '^\[1\.0\] #' "$out/run.out" | diag
fi
mpi_check 2 TCP
if grep -q 'MPI job aborted: rank 1 called PMI_Abort (exit code 7)' "$out/run.err" && [ "$(status 3 1)" = 7 ]; then
    ok "MPI_Abort(7) on rank 1 through its PMIx server: rank 1's status 7, \"MPI job aborted\" with rank and code"
else
    not_ok "MPI_Abort through PMIx: rank 1's status '$(status 3 1)'"; show
fi
result "$([ "$rc" = 7 ]; echo $?)" "the run's exit status is the abort's, 7 (got $rc; the run took $secs s)"
tap_done
