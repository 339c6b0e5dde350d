"""A slow interpreter start-up, for tests/scripts/host-cpu-test.sh.

On PYTHONPATH, Python imports this module before the script runs: it
spends 1.2 s of CPU in the main thread first, as a start-up on a loaded
host can take, so that the test shows its begin mark waiting for the
stand-in node's start-up to end (else that CPU time is counted as the
node's main thread's).
"""
import time

_t0 = time.process_time()
while time.process_time() - _t0 < 1.2:
    pass
