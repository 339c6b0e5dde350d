#!/usr/bin/env python3
"""Compares a replay with the run it replays (scripts/cluster.sh --replay).

  vt-compare.py RECORDED RUN NODES

For every node I below NODES, RECORDED/nodeI.out against RUN/nodeI.out
(the node's output) and RECORDED/nodeI.pcap against RUN/nodeI.pcap (its
board's capture); a file missing on both sides is skipped.  Prints nothing
and exits 0 when every pair is byte-identical; otherwise prints, for each
pair that differs, where it first differs (an output: the line number and
both lines; a capture: the packet's index, virtual delivery time, event,
LIDs and first header bytes on both sides; or that one side is missing)
and exits 1.  Exit 2: a usage error.  The first line printed names the
first difference in node order.

(pcap: nanosecond or microsecond timestamps, each record a 16-byte capture
header then the bare DIMMnet-2 packet; docs/fabric.md, "pcap records".
tests/cluster/vt-pcap-diff.py uses records() and describe().)
"""
import os
import struct
import sys


def records(path):
    """The capture's packets as (virtual time in ns, record body)."""
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < 24:
        raise ValueError("%s: %d bytes, no pcap header" % (path, len(data)))
    magic = struct.unpack("<I", data[:4])[0]
    if magic == 0xA1B23C4D:
        scale = 1
    elif magic == 0xA1B2C3D4:
        scale = 1000
    else:
        raise ValueError("%s: not a little-endian pcap (magic %08x)" % (path, magic))
    out, off = [], 24
    while off + 16 <= len(data):
        sec, frac, incl, _orig = struct.unpack("<IIII", data[off:off + 16])
        body = data[off + 16:off + 16 + incl]
        out.append((sec * 1000000000 + frac * scale, body))
        off += 16 + incl
    return out


def describe(rec, i):
    if rec is None:
        return "(no packet %d: the capture ends)" % i
    t, body = rec
    hdr = body[:16]
    ev = hdr[1] if len(hdr) > 1 else -1
    lin = struct.unpack("<H", hdr[4:6])[0] if len(hdr) >= 6 else 0
    lout = struct.unpack("<H", hdr[6:8])[0] if len(hdr) >= 8 else 0
    return ("packet %d at %d.%09d s virtual: event %d, from LID 0x%04x to LID 0x%04x, "
            "%d bytes, DIMMnet-2 header %s" % (i, t // 1000000000, t % 1000000000, ev, lin, lout,
                                               len(body) - 16, body[16:32].hex(" ")))


def first_packet_diff(a_path, b_path):
    """None when the captures hold the same packets, else (index, lines)."""
    a, b = records(a_path), records(b_path)
    for i in range(max(len(a), len(b))):
        ra = a[i] if i < len(a) else None
        rb = b[i] if i < len(b) else None
        if ra != rb:
            return i, len(a), len(b), describe(ra, i), describe(rb, i)
    return None


def first_line_diff(a_path, b_path):
    """None when the files are identical, else (line number, line A, line B)."""
    with open(a_path, "rb") as f:
        a = f.read().split(b"\n")
    with open(b_path, "rb") as f:
        b = f.read().split(b"\n")
    for i in range(max(len(a), len(b))):
        la = a[i] if i < len(a) else None
        lb = b[i] if i < len(b) else None
        if la != lb:
            return i + 1, la, lb
    return None


def show(line):
    if line is None:
        return "(no such line: the file ends)"
    return repr(line.decode("utf-8", "replace"))


def compare(recorded, run, nodes):
    """The differences as lines of text, the first difference first."""
    out = []
    for i in range(nodes):
        for name in ("node%d.out" % i, "node%d.pcap" % i):
            a, b = os.path.join(recorded, name), os.path.join(run, name)
            ea, eb = os.path.exists(a), os.path.exists(b)
            if not ea and not eb:
                continue
            if not ea or not eb:
                out.append("%s: in %s only" % (name, recorded if ea else run))
                continue
            if name.endswith(".out"):
                d = first_line_diff(a, b)
                if d:
                    out.append("%s: first difference at line %d" % (name, d[0]))
                    out.append("  recorded: " + show(d[1]))
                    out.append("  replay:   " + show(d[2]))
                continue
            try:
                d = first_packet_diff(a, b)
            except ValueError as e:
                out.append("%s: %s" % (name, e))
                continue
            if d:
                out.append("%s: first difference at packet %d (of %d recorded, %d replayed)"
                           % (name, d[0], d[1], d[2]))
                out.append("  recorded: " + d[3])
                out.append("  replay:   " + d[4])
    return out


def main():
    args = sys.argv[1:]
    if args[:1] in (["-h"], ["--help"]):
        print(__doc__.strip())
        return 0
    for a in args:
        if a.startswith("-"):
            sys.stderr.write("vt-compare.py: unknown option: %s (usage: vt-compare.py RECORDED RUN NODES)\n" % a)
            return 2
    if len(args) != 3 or not args[2].isdigit():
        sys.stderr.write("usage: vt-compare.py RECORDED RUN NODES\n")
        return 2
    sys.argv[1:] = args
    out = compare(sys.argv[1], sys.argv[2], int(sys.argv[3]))
    for line in out:
        print(line)
    return 1 if out else 0


if __name__ == "__main__":
    sys.exit(main())
