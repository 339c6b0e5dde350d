"""scripts/test.sh's lanes: which of the selected tests run side by side.

  test_lanes.py TESTS-JSON LANES < SELECTED

SELECTED is `meson test --list`'s output ("dimmnet2:cluster / cluster-vt"
per line), TESTS-JSON `meson introspect --tests`.  Prints one line per
test, "LANE NAME", in meson's order (priority, then definition):

  a      virtual-time tests (suite 'vt': their checks are in virtual
         time, a loaded host only stretches their wall time) and the tests
         that boot no guest (unit, abi, fabric, scripts, fuzz, qtest,
         memcheck, or marked is_parallel)
  b      the tests that boot guests and wait in host time
  alone  tests of suite 'alone' (they measure the host's CPUs: a
         neighbour would be in their figures); run after both lanes

With LANES 1 every test is in lane a, one at a time as meson runs them
without lanes; 'alone' keeps its place at the end.  A name that is not in
TESTS-JSON is an error (exit 2): the selection and the introspection
disagree.
"""
import json
import sys

LIGHT_SUITES = {"unit", "abi", "fabric", "scripts", "fuzz", "qtest", "memcheck"}


def suites_of(test):
    """the test's suites without the project prefix ("dimmnet2:cluster" -> "cluster")"""
    return {s.split(":")[-1] for s in test.get("suite", [])}


def lane(test, lanes):
    s = suites_of(test)
    if "alone" in s:
        return "alone"
    if lanes < 2:
        return "a"
    if "vt" in s or s & LIGHT_SUITES or test.get("is_parallel", False):
        return "a"
    return "b"


def selected_names(lines):
    """test names from `meson test --list` lines ("proj:suites / name")"""
    out = []
    for line in lines:
        line = line.strip()
        if not line:
            continue
        out.append(line.split(" / ", 1)[1] if " / " in line else line)
    return out


def main(argv=None):
    argv = sys.argv if argv is None else argv
    if len(argv) != 3 or argv[2] not in ("1", "2"):
        print("usage: test_lanes.py TESTS-JSON 1|2 < SELECTED", file=sys.stderr)
        return 2
    tests = {t["name"]: t for t in json.load(open(argv[1]))}
    lanes = int(argv[2])
    for name in selected_names(sys.stdin):
        if name not in tests:
            print(f"test_lanes.py: {name!r} is not among meson's tests", file=sys.stderr)
            return 2
        print(lane(tests[name], lanes), name)
    return 0


if __name__ == "__main__":
    sys.exit(main())
