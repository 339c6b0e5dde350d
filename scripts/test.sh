#!/usr/bin/env bash
# The whole test command (CI runs it through .ci/run):
#   setup (packages, QEMU source, firmware) -> meson setup/reconfigure build
#   -> meson compile (project code + QEMU + qtests) -> meson test
# then counts TAP test points over all tests.  The very last line of output is
#   N passed, N failed, N skipped
# and the exit status is non-zero iff anything failed (a build failure counts
# as one failure).
#
#   scripts/test.sh [-h|--help] [MESON-TEST-ARGS...]
#
# Extra arguments go to `meson test` (e.g. a test name, or --suite NAME for
# one suite, as CI runs it: `scripts/test.sh --suite cluster`).  Before the
# summary: the wall time of setup, build and tests, each on its own line,
# and the time each suite's tests took.
#
# The tests run in two lanes side by side, each one test at a time
# (scripts/dn2scripts/test_lanes.py): lane a the virtual-time tests and the
# tests that boot no guest, lane b the tests that boot guests in host time;
# then the tests of suite 'alone' by themselves.  Each lane's console lines
# are prefixed "[a] " / "[b] "; its meson log is
# BUILD/meson-logs/lane-a.txt (lane-b, lane-alone), and testlog.json,
# testlog.txt and testlog.junit.xml join them.  With arguments other than
# test names, --suite and --no-suite (e.g. --repeat, -v), one `meson test`
# runs them as given.
# Arguments meson test refuses are a usage error, found before anything
# starts: its message, and exit status 2.
#
# Environment:
#   DN2_SETUP_ARGS   arguments for scripts/setup.sh (e.g. --no-guest)
#   DN2_SKIP_SETUP=1 do not run scripts/setup.sh
#   DN2_BUILD_DIR    meson build directory (default: build)
#   DN2_TEST_LANES   2 (default) as above; 1: one `meson test` for all,
#                    as meson schedules them (the baseline of
#                    scripts/bench-test-lanes.sh)
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
cd "$DN2_TOP" || exit 1

BUILD=${DN2_BUILD_DIR:-build}

for a in "$@"; do
    case $a in
        --) break ;;
        -h|--help) dn2_usage; exit 0 ;;
    esac
done
lanes=${DN2_TEST_LANES:-2}
case $lanes in
    1|2) ;;
    *) usage_error "DN2_TEST_LANES must be 1 or 2, not '$lanes'" ;;
esac
# Lanes only for a selection (names, --suite, --no-suite); other meson
# test options run as one `meson test`, as given.
sel_only=1
prev=
for a in "$@"; do
    case $prev in --suite|--no-suite) prev=; continue ;; esac
    case $a in
        --suite|--no-suite) prev=$a ;;
        --suite=*|--no-suite=*) ;;
        -*) sel_only=0 ;;
    esac
done
[ "$sel_only" = 1 ] || lanes=1

# The arguments meant for meson test: let its own parser judge them now,
# not after a build of several minutes (with a build directory that cannot
# exist, a parse error exits 2 and anything else 1).
if [ $# -gt 0 ]; then
    err=$(meson test -C "$BUILD/.dn2-no-such-dir" "$@" 2>&1 >/dev/null)
    [ $? -ne 2 ] || usage_error "meson test refuses the arguments: $(printf '%s\n' "$err" | tail -1)"
fi

# Print the summary line and exit: for failures before any test ran.
early_fail() {
    log "$1"
    echo "0 passed, 1 failed, 0 skipped"
    exit 1
}

# The three phases' wall times, each on a line of its own (a cold cache
# makes the first two long; docs/ci.md's durations are of the third).
phase_t0=$SECONDS
phase_done() { log "$1: $((SECONDS - phase_t0)) s"; phase_t0=$SECONDS; }

if [ "${DN2_SKIP_SETUP:-0}" != 1 ]; then
    # shellcheck disable=SC2086
    bash scripts/setup.sh ${DN2_SETUP_ARGS:-} || early_fail "scripts/setup.sh failed"
fi
phase_done "setup"

if [ -f "$BUILD/meson-private/coredata.dat" ]; then
    meson setup --reconfigure "$BUILD" || early_fail "meson setup --reconfigure $BUILD failed"
else
    meson setup "$BUILD" || early_fail "meson setup $BUILD failed"
fi

meson compile -C "$BUILD" || early_fail "build failed (see the messages above)"
phase_done "build (meson setup and compile)"

logs=$BUILD/meson-logs
rm -f "$logs"/testlog.* "$logs"/lane-* "$logs/lanes"
meson introspect "$BUILD" --tests > "$logs/dn2-tests.json" 2>/dev/null \
    || echo '[]' > "$logs/dn2-tests.json"
py() { PYTHONPATH=$here${PYTHONPATH:+:$PYTHONPATH} PYTHONDONTWRITEBYTECODE=1 /usr/bin/env python3 "$@"; }

# run_lane LANE [JOBS]: the lane's tests (from $logs/lanes), one at a time,
# or with JOBS "meson" as meson schedules them (its light tests two at a
# time); its meson status in $logs/lane-LANE.rc
run_lane() {
    local names rc=0 jobs=(--num-processes 1)
    [ "${2:-1}" = meson ] && jobs=()
    mapfile -t names < <(awk -v l="$1" '$1 == l { print $2 }' "$logs/lanes")
    if [ ${#names[@]} -gt 0 ]; then
        meson test -C "$BUILD" --no-rebuild --print-errorlogs "${jobs[@]}" \
            --logbase "lane-$1" "${names[@]}"
        rc=$?
    fi
    echo "$rc" > "$logs/lane-$1.rc"
}
lane_t0=$SECONDS
if [ "$lanes" = 1 ] && [ "$sel_only" = 0 ]; then
    meson test -C "$BUILD" --no-rebuild --print-errorlogs "$@"
    meson_rc=$?
elif ! meson test -C "$BUILD" --no-rebuild --list "$@" > "$logs/selected" 2> "$logs/selected.err" ||
     ! py -m dn2scripts.test_lanes "$logs/dn2-tests.json" "$lanes" < "$logs/selected" > "$logs/lanes"; then
    cat "$logs/selected.err" >&2
    early_fail "the tests to run could not be listed"
elif [ "$lanes" = 1 ] || ! grep -q '^b ' "$logs/lanes"; then
    # one lane (the baseline, or nothing for lane b): as meson schedules
    # them, then the 'alone' ones
    run_lane a meson
    run_lane alone
else
    { run_lane a 2>&1 | sed -u 's/^/[a] /'; } &
    { run_lane b 2>&1 | sed -u 's/^/[b] /'; } &
    wait
    log "lanes a and b: $((SECONDS - lane_t0)) s"
    run_lane alone
fi
if [ -f "$logs/lanes" ]; then
    meson_rc=0
    for f in "$logs"/lane-*.rc; do
        [ "$(cat "$f")" = 0 ] || meson_rc=$(cat "$f")
    done
    # testlog.json, .txt and .junit.xml from the lanes' (the files a CI job keeps)
    py -m dn2scripts.test_lanes --join "$logs" || { log "the lanes' logs could not be joined"; meson_rc=1; }
fi
phase_done "tests"

# Count TAP test points.  A TAP test contributes its `ok` / `not ok` lines
# (`# SKIP` = skipped, `not ok # TODO` = skipped); a TAP test that printed no
# test point, or that failed (crash, timeout, bad exit) without a `not ok`,
# counts one more failure.  A non-TAP test counts as one point by its result.
# (scripts/dn2scripts/test_summary.py)
py -m dn2scripts.test_summary "$logs/testlog.json" "$logs/dn2-tests.json" "$meson_rc"
