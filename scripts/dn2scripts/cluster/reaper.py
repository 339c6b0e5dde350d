"""The launcher's reaper (python3 -m dn2scripts.cluster.reaper PID PGIDS):
in a session of its own, it outlives a launcher killed with SIGKILL and
then kills every process group listed in the file PGIDS."""
import os
import signal
import sys
import time


def main(argv=None):
    argv = sys.argv if argv is None else argv
    pid, pgids = int(argv[1]), argv[2]
    while True:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            break
        except PermissionError:
            pass
        time.sleep(1)
    try:
        groups = open(pgids).read().split()
    except OSError:
        groups = []
    for g in groups:
        try:
            os.killpg(int(g), signal.SIGKILL)
        except (OSError, ValueError):
            pass


if __name__ == "__main__":
    main()
