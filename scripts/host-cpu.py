#!/usr/bin/env python3
"""Where the host's CPU goes between two marks in a file: per process of a
cluster (scripts/cluster.sh's run directory) and per class of thread, the
CPU seconds and the seconds spent waiting on a run queue, from Linux's
/proc/PID/task/TID/schedstat (field 1: ns on a CPU, field 2: ns runnable
but waiting for one), sampled when the begin mark appears in FILE and
again when the end mark does (docs/mpi.md, scripts/bench-mpi.sh --cpu).

  scripts/host-cpu.py [options] RUNDIR FILE

  RUNDIR          a cluster's run directory, build/cluster/NAME: its "info"
                  file's nodeI_pid lines name the nodes' QEMUs (read when the
                  begin mark appears, so the cluster may start later); the
                  switch and the Ethernet hub are the processes whose command
                  line names RUNDIR/switch.port or RUNDIR/ethhub.port (their
                  --ready-file)
  FILE            the file to watch (e.g. scripts/mpirun.sh's output); it may
                  not exist yet
  --begin RE      the begin mark, a Python regular expression searched in
                  each line (default 'mark stream-begin', mpi-bench --stream)
  --end RE        the end mark, searched in the lines after the begin mark's
                  (default 'mark stream-end')
  --timeout S     give up (exit 1) when both marks have not appeared after S
                  seconds (default 3600)
  --interval S    how often FILE is read (default 0.015)
  --per N         also the CPU and the wait in ms per unit, N units moved
                  between the marks (e.g. the MiB of mpi-bench's
                  "figure stream_mib")
  --unit NAME     the unit's name in the table (default MiB)
  --kv            machine-readable lines instead of the table:
                    wall_s S
                    cpu CLASS RUN_S WAIT_S      (one per class, then total)
                    cpus N                      (total CPU / wall)
                  and with --per: "per N"
  -h, --help      this text

Classes: nodeI.vcpu (QEMU's vCPU threads, "CPU n/TCG" or "CPU n/KVM",
summed), nodeI.main (QEMU's main loop, the process's first thread),
nodeI.other (QEMU's other threads: workers, RCU, I/O), switch (dn2-switch),
hub (dn2-ethhub), total.  A thread that exits between the marks is not
counted (its time is lost with it); one that starts counts from zero.

Exit status: 0 printed; 1 timeout or nothing to sample; 2 usage error.
"--opt=value" is "--opt value".
"""
import os
import re
import sys
import time

PROG = "host-cpu.py"


def usage_error(msg):
    sys.stderr.write("%s: usage error: %s (see --help)\n" % (PROG, msg))
    sys.exit(2)


def parse(argv):
    opts = {"begin": "mark stream-begin", "end": "mark stream-end", "timeout": 3600.0,
            "interval": 0.015, "per": None, "unit": "MiB", "kv": False}
    valued = {"--begin": str, "--end": str, "--timeout": float, "--interval": float,
              "--per": float, "--unit": str}
    pos = []
    i = 0
    while i < len(argv):
        a = argv[i]
        if a in ("-h", "--help"):
            sys.stdout.write(__doc__.lstrip("\n"))
            sys.exit(0)
        if a == "--":
            pos += argv[i + 1:]
            break
        name, eq, val = a.partition("=")
        if name in valued:
            if not eq:
                if i + 1 >= len(argv):
                    usage_error("%s wants a value" % name)
                i += 1
                val = argv[i]
            if valued[name] is float:
                try:
                    v = float(val)
                except ValueError:
                    v = -1
                if not v > 0:
                    usage_error("%s '%s': not a positive number" % (name, val))
                val = v
            elif name in ("--begin", "--end"):
                try:
                    re.compile(val)
                except re.error as e:
                    usage_error("%s '%s': not a regular expression (%s)" % (name, val, e))
            opts[name[2:]] = val
        elif a == "--kv":
            opts["kv"] = True
        elif a.startswith("-") and a != "-":
            usage_error("unknown option: %s" % a)
        else:
            pos.append(a)
        i += 1
    if len(pos) != 2:
        usage_error("wants RUNDIR and FILE, got %d argument(s)" % len(pos))
    return opts, pos[0], pos[1]


def read(path):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return None


def node_pids(rundir):
    """{pid: 'nodeI'} from RUNDIR/info"""
    res = {}
    for line in (read(os.path.join(rundir, "info")) or "").splitlines():
        m = re.match(r"node(\d+)_pid=(\d+)$", line.strip())
        if m:
            res[int(m.group(2))] = "node" + m.group(1)
    return res


def fabric_pids(rundir):
    """{pid: 'switch' or 'hub'}: processes whose command line names the
    run directory's switch.port or ethhub.port"""
    dirs = {rundir.rstrip("/"), os.path.realpath(rundir)}
    want = {}
    for d in dirs:
        want[d + "/switch.port"] = "switch"
        want[d + "/ethhub.port"] = "hub"
    res = {}
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % p, "rb") as f:
                args = f.read().split(b"\0")
        except OSError:
            continue
        for a in args:
            role = want.get(a.decode(errors="replace"))
            if role:
                res[int(p)] = role
                break
    return res


def classify(role, pid, tid, comm):
    if role in ("switch", "hub"):
        return role
    if re.match(r"CPU \d+/", comm):
        return role + ".vcpu"
    if tid == pid:
        return role + ".main"
    return role + ".other"


def snapshot(procs):
    """{(pid, tid): (class, run_ns, wait_ns)} of every thread of procs"""
    res = {}
    for pid, role in procs.items():
        try:
            tids = os.listdir("/proc/%d/task" % pid)
        except OSError:
            continue
        for t in tids:
            tid = int(t)
            comm = read("/proc/%d/task/%d/comm" % (pid, tid))
            st = read("/proc/%d/task/%d/schedstat" % (pid, tid))
            if comm is None or st is None:
                continue
            f = st.split()
            res[(pid, tid)] = (classify(role, pid, tid, comm.strip()), int(f[0]), int(f[1]))
    return res


def procs_of(rundir):
    p = node_pids(rundir)
    p.update(fabric_pids(rundir))
    return p


def wait_marks(opts, rundir, path):
    """snapshots and times at the begin and the end mark"""
    begin, end = re.compile(opts["begin"]), re.compile(opts["end"])
    deadline = time.monotonic() + opts["timeout"]
    pos, tail, marks, procs = 0, "", [], {}
    while len(marks) < 2:
        if time.monotonic() > deadline:
            sys.stderr.write("%s: no %s in %s after %g s\n" % (
                PROG, "begin mark" if not marks else "end mark", path, opts["timeout"]))
            sys.exit(1)
        try:
            with open(path, errors="replace") as f:
                f.seek(0, 2)
                if f.tell() < pos:          # the file was truncated
                    pos, tail = 0, ""
                f.seek(pos)
                chunk = f.read()
                pos = f.tell()
        except OSError:
            chunk = ""
        if not chunk:
            time.sleep(opts["interval"])
            continue
        lines = (tail + chunk).split("\n")
        tail = lines.pop()
        for line in lines:
            if not marks and begin.search(line):
                procs = procs_of(rundir)
                marks.append((time.monotonic(), snapshot(procs)))
            elif len(marks) == 1 and end.search(line):
                t = time.monotonic()
                # (a process that appeared since the begin mark counts too)
                procs.update(procs_of(rundir))
                marks.append((t, snapshot(procs)))
                break
    return marks


def order(c):
    m = re.match(r"node(\d+)\.(\w+)$", c)
    if m:
        return (0, int(m.group(1)), ["vcpu", "main", "other"].index(m.group(2)), c)
    return (1, 0, ["switch", "hub"].index(c) if c in ("switch", "hub") else 9, c)


def main():
    opts, rundir, path = parse(sys.argv[1:])
    (t0, a), (t1, b) = wait_marks(opts, rundir, path)
    wall = t1 - t0
    run, wait = {}, {}
    for k, (cls, r, w) in b.items():
        _, r0, w0 = a.get(k, (cls, 0, 0))
        run[cls] = run.get(cls, 0) + r - r0
        wait[cls] = wait.get(cls, 0) + w - w0
    if not run:
        sys.stderr.write("%s: no process of %s to sample (no nodeI_pid in its info, no switch or hub)\n"
                         % (PROG, rundir))
        sys.exit(1)
    classes = sorted(run, key=order)
    tr, tw = sum(run.values()), sum(wait.values())
    per = opts["per"]
    if opts["kv"]:
        print("wall_s %.3f" % wall)
        for c in classes:
            print("cpu %s %.3f %.3f" % (c, run[c] / 1e9, wait[c] / 1e9))
        print("cpu total %.3f %.3f" % (tr / 1e9, tw / 1e9))
        print("cpus %.2f" % (tr / 1e9 / wall if wall > 0 else 0))
        if per:
            print("per %g" % per)
        return
    print("host CPU between the marks: wall %.2f s, CPU %.2f s (%.2f CPUs in use)"
          % (wall, tr / 1e9, tr / 1e9 / wall if wall > 0 else 0))
    hdr = "%-14s %9s %9s" % ("class", "CPU s", "wait s")
    if per:
        u = opts["unit"]
        hdr += " %14s %14s" % ("CPU ms/" + u, "wait ms/" + u)
    print(hdr)
    for c, r, w in [(c, run[c], wait[c]) for c in classes] + [("total", tr, tw)]:
        line = "%-14s %9.2f %9.2f" % (c, r / 1e9, w / 1e9)
        if per:
            line += " %14.3f %14.3f" % (r / 1e6 / per, w / 1e6 / per)
        print(line)


if __name__ == "__main__":
    main()
