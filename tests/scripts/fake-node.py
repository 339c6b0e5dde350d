#!/usr/bin/env python3
"""Stand-in processes for tests/scripts/host-cpu-test.sh.

`fake-node.py vcpu GO DONE`: a thread named as QEMU names its vCPU
("CPU 0/TCG") that, each time the file GO appears, spins for 0.3 s of the
process's CPU time, writes DONE and waits for GO to go away; the main
thread waits.  `fake-node.py switch --ready-file PATH`: sleeps 600 s with
PATH on its command line, as dn2-switch has its ready file.
"""
import os
import sys
import threading
import time


def vcpu(go, done):
    with open("/proc/self/task/%d/comm" % threading.get_native_id(), "w") as f:
        f.write("CPU 0/TCG")
    while True:
        while not os.path.exists(go):
            time.sleep(0.01)
        t = time.process_time()
        while time.process_time() - t < 0.3:
            pass
        open(done, "w").close()
        while os.path.exists(go):
            time.sleep(0.01)


if __name__ == "__main__":
    if sys.argv[1] == "vcpu":
        threading.Thread(target=vcpu, args=(sys.argv[2], sys.argv[3])).start()
    else:
        time.sleep(600)
