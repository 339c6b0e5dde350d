#!/usr/bin/env python3
"""Run a command with a short CPU time slice (Linux EEVDF custom slice).

    scripts/sched-slice.py US -- CMD [ARGS...]   set the slice, exec CMD
    scripts/sched-slice.py --check US            say whether the kernel takes it

A QEMU node is a handful of busy threads (vCPUs, the main loop, the switch)
on few host CPUs.  With the kernel's default slice (the CPU time a task
may run before a woken one preempts it under Linux 6.6 and later's EEVDF
scheduler: 1.4 ms on a 2-CPU host) a thread that a datagram or a timer
wakes waits for the running one's slice to end; with a slice of
100-300 us it runs at once (docs/cluster.md, "Host scheduling").  The
slice is a request (sched_setattr's sched_runtime for SCHED_OTHER and
SCHED_BATCH), kept across exec and inherited by every thread and child.
Kernels before 6.12 ignore it: then this says so on stderr and runs CMD
unchanged.  No privilege is needed.
"""
import ctypes
import os
import platform
import struct
import sys

# (sched_setattr, sched_getattr) system call numbers
SYSCALLS = {
    'x86_64': (314, 315),
    'aarch64': (274, 275),
    'riscv64': (274, 275),
    'loongarch64': (274, 275),
}
ATTR_FMT = 'IIQiIQQQII'     # struct sched_attr, SCHED_ATTR_SIZE_VER1
SLICE_MIN_US, SLICE_MAX_US = 100, 100000    # the kernel clamps to this


def set_slice(us):
    """Set this process's slice; return None, or why it did not take."""
    nums = SYSCALLS.get(platform.machine())
    if nums is None:
        return 'no sched_setattr number known for %s' % platform.machine()
    policy = os.sched_getscheduler(0)
    if policy not in (os.SCHED_OTHER, os.SCHED_BATCH):
        return 'the process is not SCHED_OTHER or SCHED_BATCH (policy %d)' % policy
    libc = ctypes.CDLL(None, use_errno=True)
    nice = os.getpriority(os.PRIO_PROCESS, 0)
    attr = ctypes.create_string_buffer(struct.pack(
        ATTR_FMT, struct.calcsize(ATTR_FMT), policy, 0, nice, 0, us * 1000,
        0, 0, 0, 0))
    if libc.syscall(nums[0], 0, attr, 0) != 0:
        return 'sched_setattr: %s' % os.strerror(ctypes.get_errno())
    got = ctypes.create_string_buffer(struct.calcsize(ATTR_FMT))
    if libc.syscall(nums[1], 0, got, struct.calcsize(ATTR_FMT), 0) != 0:
        return 'sched_getattr: %s' % os.strerror(ctypes.get_errno())
    runtime = struct.unpack(ATTR_FMT, got.raw)[5]
    if runtime != us * 1000:
        return ('the kernel (%s) keeps its default slice: custom slices need '
                'Linux 6.12 or later' % platform.release())
    return None


def main(argv):
    check = argv[:1] == ['--check']
    if check:
        argv = argv[1:]
    if not argv or not argv[0].isdigit() or (not check and argv[1:2] != ['--']) \
            or (not check and len(argv) < 3) or (check and len(argv) != 1):
        sys.stderr.write(__doc__.split('\n\n')[1] + '\n')
        return 2
    us = int(argv[0])
    if not SLICE_MIN_US <= us <= SLICE_MAX_US:
        sys.stderr.write('sched-slice: %d us is outside the kernel\'s %d-%d us\n'
                         % (us, SLICE_MIN_US, SLICE_MAX_US))
        return 2
    why = set_slice(us)
    if check:
        print('ok' if why is None else why)
        return 0 if why is None else 1
    if why is not None:
        sys.stderr.write('sched-slice: %s; running %s with the default slice\n'
                         % (why, argv[2]))
    try:
        os.execvp(argv[2], argv[2:])
    except OSError as e:
        sys.stderr.write('sched-slice: cannot run %s: %s\n' % (argv[2], e.strerror))
        return 127


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
