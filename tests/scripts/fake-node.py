#!/usr/bin/env python3
"""Stand-in processes for tests/scripts/host-cpu-test.sh.

`fake-node.py vcpu GO DONE READY`: a thread named as QEMU names its vCPU
("CPU 0/TCG") that, each time the file GO appears, spins for 0.3 s of the
process's CPU time, writes DONE and waits for GO to go away; the main
thread writes READY once the interpreter has started and the thread runs
(so that a test's begin mark never counts the start-up's CPU time as the
main thread's), then waits.  `fake-node.py switch --ready-file PATH`: sleeps 600 s with
PATH on its command line, as dn2-switch has its ready file.
"""
import os
import sys
import threading
import time


def vcpu(go, done, named):
    with open("/proc/self/task/%d/comm" % threading.get_native_id(), "w") as f:
        f.write("CPU 0/TCG")
    named.set()
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
        named = threading.Event()
        t = threading.Thread(target=vcpu, args=(sys.argv[2], sys.argv[3], named))
        t.start()
        named.wait()
        open(sys.argv[4], "w").close()
        t.join()
    else:
        time.sleep(600)
