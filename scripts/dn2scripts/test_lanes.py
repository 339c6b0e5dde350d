"""scripts/test.sh's lanes: which of the selected tests run side by side,
and their logs joined afterwards.

  test_lanes.py TESTS-JSON LANES < SELECTED
  test_lanes.py --join LOGDIR

SELECTED is `meson test --list`'s output ("dimmnet2:cluster / cluster-vt"
per line), TESTS-JSON `meson introspect --tests`.  Prints one line per
test, "LANE NAME", in meson's order (priority, then definition):

  a      virtual-time tests (suite 'vt': their checks are in virtual
         time, a loaded host only stretches their wall time) and the tests
         that boot no guest (unit, abi, fabric, scripts, fuzz, qtest,
         memcheck, or marked is_parallel)
  b      the tests that boot guests and wait in host time
  alone  tests of suite 'alone', run after both lanes, one at a time:
         a test that measures the host's CPUs (a neighbour would be in its
         figures), or one whose checks a loaded host breaks

With LANES 1 every test is in lane a, one at a time as meson runs them
without lanes; 'alone' keeps its place at the end.  A name that is not in
TESTS-JSON is an error (exit 2): the selection and the introspection
disagree.

--join: LOGDIR's lane logs (meson's lane-a, lane-b, lane-alone .json,
.txt and .junit.xml, those that exist) become testlog.json, testlog.txt
and testlog.junit.xml there, the files a CI job keeps as without lanes:
the JSON lines and the text one lane after the other, the JUnit suites of
every lane under one <testsuites> with the counts summed.
"""
import json
import os
import sys
import xml.etree.ElementTree as ET

LANES = ("a", "b", "alone")

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


def join_logs(logdir):
    """the lanes' logs into testlog.json, testlog.txt, testlog.junit.xml"""
    def lane_files(ext):
        return [p for p in (os.path.join(logdir, "lane-%s.%s" % (l, ext)) for l in LANES) if os.path.isfile(p)]
    with open(os.path.join(logdir, "testlog.json"), "w") as out:
        for p in lane_files("json"):
            with open(p) as f:
                out.write(f.read())
    with open(os.path.join(logdir, "testlog.txt"), "w") as out:
        for p in lane_files("txt"):
            out.write("==================== %s ====================\n" % os.path.basename(p))
            with open(p, errors="replace") as f:
                out.write(f.read())
    root = ET.Element("testsuites")
    counts = {"tests": 0, "errors": 0, "failures": 0}
    for p in lane_files("junit.xml"):
        try:
            lane_root = ET.parse(p).getroot()
        except ET.ParseError as e:
            print("test_lanes.py: %s: %s" % (p, e), file=sys.stderr)
            continue
        for k in counts:
            counts[k] += int(lane_root.get(k, "0") or 0)
        for suite in lane_root:
            root.append(suite)
    for k, v in counts.items():
        root.set(k, str(v))
    ET.ElementTree(root).write(os.path.join(logdir, "testlog.junit.xml"), encoding="utf-8", xml_declaration=True)


def main(argv=None):
    argv = sys.argv if argv is None else argv
    if len(argv) == 3 and argv[1] == "--join":
        join_logs(argv[2])
        return 0
    if len(argv) != 3 or argv[2] not in ("1", "2"):
        print("usage: test_lanes.py TESTS-JSON 1|2 < SELECTED | test_lanes.py --join LOGDIR", file=sys.stderr)
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
