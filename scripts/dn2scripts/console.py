"""A raw terminal to a node's shell socket (cluster.sh console).

  console.py SOCKET NODE-NAME
"""
import os, select, socket, sys, termios, tty


def main(argv=None):
    argv = sys.argv if argv is None else argv
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(argv[1])
    fd = sys.stdin.fileno()
    old = termios.tcgetattr(fd) if os.isatty(fd) else None
    sys.stderr.write("[cluster] connected to %s; Ctrl-] quits\r\n" % argv[2])
    s.sendall(b"\n")
    try:
        if old:
            tty.setraw(fd)
        while True:
            r, _, _ = select.select([fd, s], [], [])
            if s in r:
                data = s.recv(4096)
                if not data:
                    break
                os.write(sys.stdout.fileno(), data)
            if fd in r:
                data = os.read(fd, 1024)
                if not data or b"\x1d" in data:
                    break
                s.sendall(data)
    finally:
        if old:
            termios.tcsetattr(fd, termios.TCSADRAIN, old)
        sys.stderr.write("\n[cluster] disconnected\n")


if __name__ == "__main__":
    main()
