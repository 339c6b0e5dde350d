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
# Arguments meson test refuses are a usage error, found before anything
# starts: its message, and exit status 2.
#
# Environment:
#   DN2_SETUP_ARGS   arguments for scripts/setup.sh (e.g. --no-guest)
#   DN2_SKIP_SETUP=1 do not run scripts/setup.sh
#   DN2_BUILD_DIR    meson build directory (default: build)
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

rm -f "$BUILD/meson-logs/testlog.json"
meson test -C "$BUILD" --no-rebuild --print-errorlogs "$@"
meson_rc=$?
phase_done "tests"

meson introspect "$BUILD" --tests > "$BUILD/meson-logs/dn2-tests.json" 2>/dev/null \
    || echo '[]' > "$BUILD/meson-logs/dn2-tests.json"

# Count TAP test points.  A TAP test contributes its `ok` / `not ok` lines
# (`# SKIP` = skipped, `not ok # TODO` = skipped); a TAP test that printed no
# test point, or that failed (crash, timeout, bad exit) without a `not ok`,
# counts one more failure.  A non-TAP test counts as one point by its result.
# (scripts/dn2scripts/test_summary.py)
PYTHONPATH=$here${PYTHONPATH:+:$PYTHONPATH} PYTHONDONTWRITEBYTECODE=1 /usr/bin/env python3 -m dn2scripts.test_summary \
    "$BUILD/meson-logs/testlog.json" "$BUILD/meson-logs/dn2-tests.json" "$meson_rc"
