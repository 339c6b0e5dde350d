#!/usr/bin/env python3
"""A UDP echo for network tests: `udp-echo.py serve ADDR COUNT [PORT]`
answers every datagram on ADDR (port 7 unless PORT) until COUNT different
addresses have had an answer (10 s of silence ends it, status 1);
`udp-echo.py ping ADDR [PORT]` sends a datagram every 0.25 s until the same
bytes come back, exit 0, or 5 s have passed, exit 1.  The ping repeats so
that a server still starting (its socket not yet bound: the first datagram
is lost) is no failure."""
import socket
import sys
import time


def serve(addr, count, port=7):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind((addr, port))
    s.settimeout(10)
    answered = set()
    while len(answered) < count:
        try:
            d, a = s.recvfrom(100)
        except socket.timeout:
            return False
        s.sendto(d, a)
        answered.add(a[0])
    return True


def ping(addr, port=7, within=5.0, every=0.25):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    end = time.monotonic() + within
    while True:
        left = end - time.monotonic()
        if left <= 0:
            return False
        s.sendto(b"dn2", (addr, port))
        s.settimeout(min(every, left))
        try:
            if s.recvfrom(100)[0] == b"dn2":
                return True
        except (socket.timeout, ConnectionRefusedError):
            pass


if __name__ == "__main__":
    port = int(sys.argv[4 if sys.argv[1] == "serve" else 3]) if len(sys.argv) > (4 if sys.argv[1] == "serve" else 3) else 7
    if sys.argv[1] == "serve":
        sys.exit(0 if serve(sys.argv[2], int(sys.argv[3]), port) else 1)
    sys.exit(0 if ping(sys.argv[2], port) else 1)
