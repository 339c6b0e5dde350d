"""cluster.sh console NAME I: a shell on node I of a running kept or -i
cluster (its second serial port's socket; Ctrl-] leaves).  The older
spelling console [-d RUNDIR] NODE runs on build/cluster/latest.
"""
import re

from .cli import Fail, Help, Usage, need_value, split_eq, want_uint
from .rundir import find_run, info_int, info_of, named_run, valid_name


def parse(args):
    """(name, dir, node)."""
    a = list(args)
    d = ""
    while a:
        x = a[0]
        if re.match(r"^--.+=", x):
            split_eq(a)
            continue
        if x in ("-d", "--dir"):
            need_value(a); d = a[1]; del a[:2]
        elif x in ("-h", "--help"):
            raise Help()
        elif x == "--":
            del a[0]
            break
        elif len(x) > 1 and x.startswith("-"):
            raise Usage("console: unknown argument: %s" % x)
        else:
            break
    name = ""
    # console NAME I, or (older) console [-d RUNDIR] NODE
    if a and not re.fullmatch(r"[0-9]+", a[0]):
        name = a.pop(0)
        valid_name(name, "console")
    if len(a) > 1:
        raise Usage("console: one NODE, not '%s'" % " ".join(a))
    node = a[0] if a else "0"
    want_uint("console", node)
    return name, d, int(node)


def main(script, args):
    name, d, node = parse(args)
    d = named_run(name) if name else find_run(d or None)
    info = info_of(d)
    nodes = info_int(info, "nodes")
    if node >= nodes:
        raise Fail("console: the cluster has nodes 0..%d" % (nodes - 1))
    from .. import console
    console.main(["console", info.get("node%d_sock" % node, ""), "node%d" % node])
    return 0
