"""The scripts' Python unit tests (scripts/dn2scripts): the package on the
path, and every test's result as a TAP point on the file descriptor
DN2_TAP_FD (py-unit-test.sh: the test's stdout; pytest's own report goes to
stderr)."""
import os
import sys

SCRIPTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "scripts")
sys.path.insert(0, os.path.normpath(SCRIPTS))
sys.dont_write_bytecode = True

_tap = None
_n = 0


def _point(ok, name, directive=""):
    global _n
    if _tap is None:
        return
    _n += 1
    name = name.replace("#", "_")
    _tap.write("%s %d - %s%s\n" % ("ok" if ok else "not ok", _n, name, directive))


def pytest_configure(config):
    global _tap
    fd = os.environ.get("DN2_TAP_FD")
    if fd and _tap is None:
        _tap = os.fdopen(int(fd), "w", buffering=1)


def pytest_collectreport(report):
    if report.failed:
        _point(False, "collect " + report.nodeid)


def pytest_runtest_logreport(report):
    name = report.nodeid.split("/")[-1]
    if report.when == "call":
        if report.skipped:
            _point(True, name, " # SKIP " + str(report.longrepr[-1] if isinstance(report.longrepr, tuple) else ""))
        else:
            _point(report.passed, name)
    elif report.when == "setup" and report.skipped:
        _point(True, name, " # SKIP " + str(report.longrepr[-1] if isinstance(report.longrepr, tuple) else ""))
    elif report.failed:
        _point(False, "%s (%s)" % (name, report.when))


def pytest_sessionfinish(session, exitstatus):
    if _tap is None:
        return
    if _n == 0:
        _point(False, "pytest ran no test (exit status %d)" % exitstatus)
    _tap.write("1..%d\n" % _n)
    _tap.flush()
