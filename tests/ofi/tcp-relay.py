#!/usr/bin/env python3
"""A TCP relay between two listeners on 127.0.0.1 (tests/ofi/ofi-test.sh):
prints the two ports on one line and closes stdout, accepts one connection
on each, and copies bytes both ways until one side closes or 600 s pass
without traffic."""
import select
import socket
import sys


def listener():
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", 0))
    s.listen(1)
    s.settimeout(600)
    return s


def main():
    a, b = listener(), listener()
    print(a.getsockname()[1], b.getsockname()[1], flush=True)
    sys.stdout.close()
    ca, _ = a.accept()
    cb, _ = b.accept()
    peer = {ca: cb, cb: ca}
    while True:
        r, _, _ = select.select([ca, cb], [], [], 600)
        if not r:
            break
        for s in r:
            d = s.recv(65536)
            if not d:
                sys.exit(0)
            peer[s].sendall(d)


if __name__ == "__main__":
    main()
