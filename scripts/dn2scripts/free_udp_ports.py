"""N free UDP ports on 127.0.0.1, held open together so that they differ
(cluster.sh --ethernet: the nodes' ends of the Ethernet hub).

  free_udp_ports.py N
"""
import socket, sys


def main(argv=None):
    argv = sys.argv if argv is None else argv
    socks = []
    for _ in range(int(argv[1])):
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("127.0.0.1", 0)); socks.append(s)
    print(" ".join(str(s.getsockname()[1]) for s in socks))


if __name__ == "__main__":
    main()
