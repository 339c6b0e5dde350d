"""scripts/test.sh's summary: the time each suite took (the first suite a
test is in: "dimmnet2:cluster / cluster-vt" is cluster's), and TAP test
points counted over every test.

  test_summary.py TESTLOG-JSON TESTS-JSON MESON-RC
"""
import json, re, sys


def suite_times(entries):
    """([(suite, tests, seconds)], wall seconds) from meson's test log: the
    seconds each suite's tests ran (summed), longest first, and the wall
    time from the first test's start to the last one's end."""
    by = {}
    first = last = None
    for t in entries:
        name = t.get("name", "?")
        suite = name.split(" / ")[0].split(":")[-1].split("+")[0] if " / " in name else "?"
        d = float(t.get("duration") or 0)
        n, sec = by.get(suite, (0, 0.0))
        by[suite] = (n + 1, sec + d)
        st = t.get("starttime")
        if isinstance(st, (int, float)):
            first = st if first is None else min(first, st)
            last = st + d if last is None else max(last, st + d)
    rows = sorted(((k, n, sec) for k, (n, sec) in by.items()), key=lambda r: (-r[2], r[0]))
    return rows, (last - first) if first is not None else sum(r[2] for r in rows)


def main(argv=None):
    argv = sys.argv if argv is None else argv
    log_path, tests_path, meson_rc = argv[1], argv[2], int(argv[3])
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

    rows, wall = suite_times(entries)
    if rows:
        print("[dimmnet2] time by suite: " + ", ".join("%s %d s (%d)" % (k, round(sec), n) for k, n, sec in rows)
              + "; tests %d s of wall time" % round(wall), file=sys.stderr)
    if meson_rc != 0 and failed == 0:
        print(f"[dimmnet2] meson test exited with {meson_rc}", file=sys.stderr)
        failed = 1
    if not entries and meson_rc == 0:
        print("[dimmnet2] warning: no tests ran", file=sys.stderr)
    print(f"{passed} passed, {failed} failed, {skipped} skipped")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
