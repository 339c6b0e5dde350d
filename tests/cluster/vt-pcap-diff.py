#!/usr/bin/env python3
"""Compares two board captures (cluster.sh --virtual-time, RUNDIR/nodeI.pcap).

  vt-pcap-diff.py A.pcap B.pcap

Prints "identical, N packets" and exits 0, or describes the first packet
that differs (its index, virtual delivery time, the capture header's event
and LIDs, the DIMMnet-2 header's first bytes) in both files and exits 1;
exit 2 for a file that is not a pcap.  (pcap: nanosecond or microsecond
timestamps, each record a 16-byte capture header then the bare DIMMnet-2
packet; docs/fabric.md, "pcap records"; the reader is scripts/vt-compare.py's.)
"""
import importlib.util
import os
import sys

# the capture reader of scripts/cluster.sh --replay's comparison
_spec = importlib.util.spec_from_file_location(
    "vt_compare", os.path.join(os.path.dirname(os.path.realpath(__file__)), "..", "..", "scripts", "vt-compare.py"))
_vc = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_vc)
records, describe = _vc.records, _vc.describe


def main():
    if len(sys.argv) != 3:
        sys.stderr.write("usage: vt-pcap-diff.py A.pcap B.pcap\n")
        return 2
    try:
        a, b = records(sys.argv[1]), records(sys.argv[2])
    except (OSError, ValueError) as e:
        print(e)
        return 2
    for i in range(max(len(a), len(b))):
        ra = a[i] if i < len(a) else None
        rb = b[i] if i < len(b) else None
        if ra != rb:
            print("first difference at packet %d (of %d / %d):" % (i, len(a), len(b)))
            print("  A: " + describe(ra, i))
            print("  B: " + describe(rb, i))
            return 1
    print("identical, %d packets" % len(a))
    return 0


if __name__ == "__main__":
    sys.exit(main())
