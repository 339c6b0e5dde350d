"""cluster.sh cp NAME SRC DEST: a host file to the nodes (DEST :/PATH every
node, I:/PATH node I) or a node's file to the host (SRC I:/PATH), through the
job server: the nodes fetch it from the run's own files (RUNDIR/www), or
post it as a job's result (at most CP_MAX bytes: busybox wget posts a file
as a C string, so it goes as base64 of its gzip, held in the guest's
memory).  Exit 0, 1 (a node failed), 2, 3 (a node is dead), 4, 124.
"""
import base64
import gzip
import os
import random
import re
import shutil

from . import jobs
from .cli import R, N, Exit, Fail, Help, Usage, need_value, say, split_eq, want_uint
from .jobs import shq
from .rundir import info_int, info_of, last_line, named_run, node_state, valid_name

CP_MAX = 64 << 20
NODE_PATH = re.compile(r"^([0-9]*):(/.*)$", re.S)


def parse(args):
    """(timeout_s, name, src, dest, direction, sel, path): direction "to"
    (host to nodes) or "from" (a node to the host)."""
    a = list(args)
    timeout_s = 600
    pos = []
    while a:
        x = a[0]
        if re.match(r"^--.+=", x):
            split_eq(a)
            continue
        if x in ("-t", "--timeout"):
            need_value(a); want_uint(x, a[1]); timeout_s = int(a[1]); del a[:2]
        elif x in ("-h", "--help"):
            raise Help()
        elif x == "--":
            pos += a[1:]
            break
        elif len(x) > 1 and x.startswith("-"):
            raise Usage("cp: unknown argument: %s" % x)
        else:
            pos.append(x)
            del a[0]
    if len(pos) != 3:
        raise Usage("cp: NAME SRC DEST (e.g. cp NAME FILE :/tmp/FILE, cp NAME FILE 1:/tmp/FILE, cp NAME 1:/tmp/FILE FILE)")
    name, src, dest = pos
    valid_name(name, "cp")
    ms, md = NODE_PATH.match(src), NODE_PATH.match(dest)
    if not ms and md:
        return timeout_s, name, src, dest, "to", md.group(1) or "all", md.group(2)
    if not md and ms:
        if not ms.group(1):
            raise Usage("cp: a file comes from one node: I:%s, not :%s" % (ms.group(2), ms.group(2)))
        return timeout_s, name, src, dest, "from", ms.group(1), ms.group(2)
    raise Usage("cp: one of SRC and DEST is on the nodes: I:/PATH (node I) or :/PATH (every node, as DEST), the other a host path")


def to_nodes_job(path, base, tag, mode):
    """The job that fetches the staged file into PATH on a node."""
    return ("d=%s\n" % shq(path)
            + "case $d in */) d=$d%s ;; esac\n" % shq(base)
            + '[ -d "$d" ] && d=$d/%s\n' % shq(base)
            + 'if wget -q -O "$d.dn2-part" "$DN2_HTTP/cp/%s/file" 2>/tmp/dn2-cp.err && chmod %s "$d.dn2-part" && mv -f "$d.dn2-part" "$d"; then\n' % (tag, mode)
            + '    echo "$d: $(wc -c < "$d") bytes"\n'
            + "else\n"
            + '    rm -f "$d.dn2-part"; echo "cp: cannot write $d on node$DN2_NODE: $(tail -1 /tmp/dn2-cp.err)"; exit 1\n'
            + "fi")


def from_node_job(path, cpid):
    """The job that posts a node's file as the result of pseudo job CPID
    (an id no real job reaches)."""
    return ("f=%s\n" % shq(path)
            + '[ -f "$f" ] || { echo "cp: $f: no such file on node$DN2_NODE"; exit 1; }\n'
            + 's=$(wc -c < "$f")\n'
            + '[ "$s" -le %d ] || { echo "cp: $f has $s bytes: at most %d"; exit 1; }\n' % (CP_MAX, CP_MAX)
            + 'gzip -c "$f" | base64 > /tmp/dn2-cp.b64 || { rm -f /tmp/dn2-cp.b64; echo "cp: cannot read $f"; exit 1; }\n'
            + 'wget -q -O /dev/null --post-file /tmp/dn2-cp.b64 "$DN2_HTTP/result?job=$DN2_JOBID&node=$DN2_NODE&id=%d&rc=0" 2>/tmp/dn2-cp.err \\\n' % cpid
            + '    || { rm -f /tmp/dn2-cp.b64; echo "cp: sending $f failed: $(tail -1 /tmp/dn2-cp.err)"; exit 1; }\n'
            + "rm -f /tmp/dn2-cp.b64\n"
            + 'echo "$f: $s bytes"')


def to_nodes(timeout_s, name, src, sel, path):
    if not os.path.isfile(src):
        raise Usage("cp: %s is not a file on this host" % src)
    if not os.access(src, os.R_OK):
        raise Usage("cp: cannot read %s" % src)
    d = named_run(name)
    info = info_of(d)
    jobs.want_node(sel, "cp", info_int(info, "nodes"))
    base = src.rsplit("/", 1)[-1]
    mode = "%o" % (os.stat(src).st_mode & 0o7777)
    # The run's own files (RUNDIR/www, private to this run's nodes).
    tag = "cp-%d-%d" % (os.getpid(), random.randrange(32768))
    stage = os.path.join(d, "www", "cp", tag)
    try:
        os.makedirs(stage, exist_ok=True)
        shutil.copyfile(src, os.path.join(stage, "file"))
    except OSError:
        raise Fail("cannot stage %s in %s/www/cp" % (src, d))
    jid = jobs.submit(d, jobs.job_text(sel, to_nodes_job(path, base, tag, mode)))
    sel_nodes = jobs.job_nodes(sel, info_int(info, "nodes"))
    status, rcs = jobs.wait(d, jid, timeout_s, sel_nodes, info_int(info, "launcher_pid"))
    shutil.rmtree(stage, ignore_errors=True)
    for i in sel_nodes:
        rc = rcs[i]
        out = os.path.join(d, "jobs", "%d.node%d.out" % (jid, i))
        if rc == "0":
            say("node%d: %s" % (i, last_line(out)))
        elif rc == "dead":
            say("node%d: %sdead%s: %s" % (i, R, N, node_state(d, i)[3]))
            status = 3
        else:
            say("node%d: %sfailed%s (rc=%s): %s" % (i, R, N, rc, last_line(out)))
            if status == 0:
                status = 1
    return status


def from_node(timeout_s, name, dest, sel, path):
    d = named_run(name)
    info = info_of(d)
    jobs.want_node(sel, "cp", info_int(info, "nodes"))
    base = path.rsplit("/", 1)[-1]
    to = dest
    if os.path.isdir(to):
        to = to + "/" + base
    if to.rsplit("/", 1)[-1] == "":
        raise Usage("cp: %s: a directory that does not exist, or no file name" % dest)
    if not os.path.isdir(os.path.dirname(to) or "."):
        raise Usage("cp: the directory of %s does not exist" % to)
    cpid = 1000000000 + random.randrange(32768) * 32768 + random.randrange(32768)
    jid = jobs.submit(d, jobs.job_text(sel, from_node_job(path, cpid)))
    status, rcs = jobs.wait(d, jid, timeout_s, [int(sel)], info_int(info, "launcher_pid"))
    rc = rcs[int(sel)]
    got = os.path.join(d, "jobs", "%d.node%s.out" % (cpid, sel))
    if rc == "0" and os.path.isfile(got):
        try:
            with open(got, "rb") as f:
                data = gzip.decompress(base64.b64decode(f.read()))
            with open(to + ".dn2-part", "wb") as f:
                f.write(data)
            os.replace(to + ".dn2-part", to)
            say("node%s:%s -> %s (%d bytes)" % (sel, path, to, os.stat(to).st_size))
        except (OSError, ValueError, EOFError, gzip.BadGzipFile):
            try:
                os.unlink(to + ".dn2-part")
            except OSError:
                pass
            say("%scannot write %s%s" % (R, to, N))
            status = 4
    elif rc == "dead":
        say("node%s: %sdead%s: %s" % (sel, R, N, node_state(d, int(sel))[3]))
        status = 3
    else:
        say("node%s: %sfailed%s (rc=%s): %s" % (sel, R, N, rc, last_line(os.path.join(d, "jobs", "%d.node%s.out" % (jid, sel)))))
        if status == 0:
            status = 1
    for f in (got, os.path.join(d, "jobs", "%d.node%s.rc" % (cpid, sel))):
        try:
            os.unlink(f)
        except OSError:
            pass
    return status


def main(script, args):
    timeout_s, name, src, dest, direction, sel, path = parse(args)
    if direction == "to":
        raise Exit(to_nodes(timeout_s, name, src, sel, path))
    raise Exit(from_node(timeout_s, name, dest, sel, path))
