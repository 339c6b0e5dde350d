#!/usr/bin/env python3
"""Compares two board captures (cluster.sh --virtual-time, RUNDIR/nodeI.pcap).

  vt-pcap-diff.py A.pcap B.pcap

Prints "identical, N packets" and exits 0, or describes the first packet
that differs (its index, virtual delivery time, the capture header's event
and LIDs, the DIMMnet-2 header's first bytes) in both files and exits 1;
exit 2 for a file that is not a pcap.  (pcap: nanosecond or microsecond
timestamps, each record a 16-byte capture header then the bare DIMMnet-2
packet; docs/fabric.md, "pcap records".)
"""
import struct
import sys


def records(path):
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
