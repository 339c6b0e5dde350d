#!/usr/bin/env python3
"""A UDP echo for network tests: `udp-echo.py serve ADDR COUNT` answers COUNT
datagrams on ADDR port 7 (10 s for each); `udp-echo.py ping ADDR` sends one
and exits 0 when the answer is the same bytes (5 s)."""
import socket
import sys


def serve(addr, count):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind((addr, 7))
    s.settimeout(10)
    for _ in range(count):
        d, a = s.recvfrom(100)
        s.sendto(d, a)


def ping(addr):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(5)
    s.sendto(b"dn2", (addr, 7))
    return s.recvfrom(100)[0] == b"dn2"


if __name__ == "__main__":
    if sys.argv[1] == "serve":
        serve(sys.argv[2], int(sys.argv[3]))
    else:
        sys.exit(0 if ping(sys.argv[2]) else 1)
