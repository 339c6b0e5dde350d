# SPDX-License-Identifier: MIT
"""A minimal QMP client for the project's scripts (cluster.sh's board
statistics, bench-cluster.sh --lock-profile): one connection per use, as
QEMU's QMP socket serves one client at a time."""
import json
import socket


class QMP:
    def __init__(self, path, timeout=2):
        self.sock = socket.socket(socket.AF_UNIX)
        self.sock.settimeout(timeout)
        self.sock.connect(path)
        self.f = self.sock.makefile("rw")
        self.f.readline()                       # the greeting
        self.cmd("qmp_capabilities")

    def send(self, name, args=None):
        """Send a command without waiting for its reply (reply() reads it)."""
        m = {"execute": name}
        if args:
            m["arguments"] = args
        self.f.write(json.dumps(m) + "\n")
        self.f.flush()

    def reply(self):
        """The reply to the command sent ({"return": ...} or {"error": ...})."""
        while True:                             # skip events
            r = json.loads(self.f.readline())
            if "return" in r or "error" in r:
                return r

    def cmd(self, name, args=None):
        """Run a command; its reply ({"return": ...} or {"error": ...})."""
        self.send(name, args)
        return self.reply()

    def hmp(self, line):
        """A human monitor command; its text output."""
        return self.cmd("human-monitor-command", {"command-line": line}).get("return")

    def close(self):
        self.sock.close()


def connect(path, timeout=2, wait=0):
    """QMP(path), retried for up to wait seconds while the socket is not
    there yet (a QEMU that is still starting)."""
    import time
    deadline = time.monotonic() + wait
    while True:
        try:
            return QMP(path, timeout)
        except OSError:
            if time.monotonic() >= deadline:
                raise
            time.sleep(0.05)


def cmd_all(qs, name, args=None):
    """The same command to every QEMU first, then their replies.  Under
    lock-step virtual time a QEMU whose board waits for a grant answers
    only once the others run (its main loop waits with it): a "cont" sent
    one QEMU after the other would wait for ever."""
    for q in qs:
        q.send(name, args)
    return [q.reply() for q in qs]


def dimmnet2_boards(q):
    """The QOM paths of the machine's DIMMnet-2 boards (anonymous or with
    an id)."""
    res = []
    for parent in ("/machine/peripheral-anon", "/machine/peripheral"):
        for d in q.cmd("qom-list", {"path": parent}).get("return", []):
            p = parent + "/" + d["name"]
            if d["type"].startswith("child<") and \
                    q.cmd("qom-get", {"path": p, "property": "type"}).get("return") == "dimmnet2":
                res.append(p)
    return res
