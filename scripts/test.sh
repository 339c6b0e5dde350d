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
# Extra arguments go to `meson test` (e.g. a test name, or --suite qtest).
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

if [ "${DN2_SKIP_SETUP:-0}" != 1 ]; then
    # shellcheck disable=SC2086
    bash scripts/setup.sh ${DN2_SETUP_ARGS:-} || early_fail "scripts/setup.sh failed"
fi

if [ -f "$BUILD/meson-private/coredata.dat" ]; then
    meson setup --reconfigure "$BUILD" || early_fail "meson setup --reconfigure $BUILD failed"
else
    meson setup "$BUILD" || early_fail "meson setup $BUILD failed"
fi

meson compile -C "$BUILD" || early_fail "build failed (see the messages above)"

rm -f "$BUILD/meson-logs/testlog.json"
meson test -C "$BUILD" --no-rebuild --print-errorlogs "$@"
meson_rc=$?

meson introspect "$BUILD" --tests > "$BUILD/meson-logs/dn2-tests.json" 2>/dev/null \
    || echo '[]' > "$BUILD/meson-logs/dn2-tests.json"

# Count TAP test points.  A TAP test contributes its `ok` / `not ok` lines
# (`# SKIP` = skipped, `not ok # TODO` = skipped); a TAP test that printed no
# test point, or that failed (crash, timeout, bad exit) without a `not ok`,
# counts one more failure.  A non-TAP test counts as one point by its result.
/usr/bin/env python3 - "$BUILD/meson-logs/testlog.json" "$BUILD/meson-logs/dn2-tests.json" "$meson_rc" <<'EOF'
import json, re, sys

log_path, tests_path, meson_rc = sys.argv[1], sys.argv[2], int(sys.argv[3])
try:
    protocols = {t["name"]: t.get("protocol", "exitcode") for t in json.load(open(tests_path))}
except (OSError, ValueError):
    protocols = {}

point = re.compile(r"^(not )?ok\b[^#]*(#\s*(\w+))?", re.IGNORECASE)
passed = failed = skipped = 0
try:
    entries = [json.loads(l) for l in open(log_path) if l.strip()]
except (OSError, ValueError) as e:
    print(f"[dimmnet2] cannot read {log_path}: {e}", file=sys.stderr)
    entries = []

for t in entries:
    name, result = t.get("name", "?"), t.get("result", "ERROR")
    tap = protocols.get(name, "exitcode") in ("tap", "gtest") or re.search(r"^1\.\.\d+", t.get("stdout") or "", re.M)
    if not tap:
        if result in ("OK", "EXPECTEDFAIL"):
            passed += 1
        elif result == "SKIP":
            skipped += 1
        else:
            failed += 1
            print(f"[dimmnet2] {name}: {result}", file=sys.stderr)
        continue
    p = f = s = 0
    for line in (t.get("stdout") or "").splitlines():
        m = point.match(line)
        if m:
            directive = (m.group(3) or "").upper()
            if directive == "SKIP" or (m.group(1) and directive == "TODO"):
                s += 1
            elif m.group(1):
                f += 1
            else:
                p += 1
        elif line.startswith("Bail out!"):
            f += 1
    if p + f + s == 0 and result != "SKIP":
        f = 1
        print(f"[dimmnet2] {name}: no TAP test points ({result})", file=sys.stderr)
    elif result not in ("OK", "SKIP", "EXPECTEDFAIL") and f == 0:
        f = 1
        print(f"[dimmnet2] {name}: {result} after {p} passing test points", file=sys.stderr)
    elif result == "SKIP" and p + f + s == 0:
        s = 1
    passed, failed, skipped = passed + p, failed + f, skipped + s

if meson_rc != 0 and failed == 0:
    print(f"[dimmnet2] meson test exited with {meson_rc}", file=sys.stderr)
    failed = 1
if not entries and meson_rc == 0:
    print("[dimmnet2] warning: no tests ran", file=sys.stderr)
print(f"{passed} passed, {failed} failed, {skipped} skipped")
sys.exit(1 if failed else 0)
EOF
