#!/usr/bin/env python3
"""The job, PMI and file server of scripts/cluster.sh (python3, standard
library only).  docs/cluster.md ("The job server") and docs/mpi.md ("PMI").

    pmi-server.py --rundir RUN --www DIR --export DIR [--serve DIR]
                  --nodes N --jobid ID --secret-file F --token-dir DIR
                  [--bind A] [--port P] [--ready FILE] [--limits H] ...

Every request carries a credential; nothing is served without one.
  * Node i of the run: the URL prefix /n/I/TOKEN (TOKEN = the node's token,
    HMAC-SHA256 of the job's secret, written to TOKEN-DIR/nodeI, mode 0600,
    for the launcher to hand to node i through QEMU's fw_cfg).  It may
    join, long-poll the rank table, fetch the run's files (its own command,
    the rank table, --serve and the export directory), fetch and report
    "cluster.sh exec" jobs, and ask for the PMI tokens of its ranks
    (/n/I/TOKEN/pmi/token?job=J&rank=R: the first node to ask for rank R of
    job J owns it).
  * PMI rank R of job J: /pmi/OP?job=J&rank=R&token=T with T that rank's
    token; it acts as rank R of job J only.
The job and the credential are checked from the request line, before any
body is read; bodies are bounded (a put by the PMI limits of
linux-guest/pmi/pmi-limits.h, which the PMI library shares; a job's output
by --result-max); a request head must arrive within --head-timeout, a body,
an answer and each 64 KiB of a file within --io-timeout.  At most
--max-pending connections wait for their head (a new one closes the oldest,
which is told 503) and at most --max-workers requests run at once (16 per
node, 8 per rank; beyond: 503).
PMI state is changed under one lock, answers are built under it and written
after it, so a client that does not read its answer holds no other rank.
"""
import argparse, collections, errno, hashlib, hmac, os, re, resource, selectors, socket
import sys, threading, time, urllib.parse

ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
ap.add_argument("--rundir", required=True)
ap.add_argument("--www", required=True)
ap.add_argument("--export", required=True)
ap.add_argument("--serve", default="")
ap.add_argument("--nodes", type=int, required=True)
ap.add_argument("--jobid", required=True)
ap.add_argument("--secret-file", required=True)
ap.add_argument("--token-dir", required=True)
ap.add_argument("--bind", default="127.0.0.1")
ap.add_argument("--port", type=int, default=0)
ap.add_argument("--ready", default="")
ap.add_argument("--limits", default=os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                 "..", "linux-guest", "pmi", "pmi-limits.h"))
ap.add_argument("--head-timeout", type=float, default=10.0)
ap.add_argument("--io-timeout", type=float, default=20.0)
ap.add_argument("--long-poll", type=float, default=20.0)
ap.add_argument("--max-pending", type=int, default=128)
ap.add_argument("--max-workers", type=int, default=512)
ap.add_argument("--result-max", type=int, default=16 << 20)
A = ap.parse_args()

HEAD_MAX = 8192


def die(msg, code=2):
    sys.stderr.write("pmi-server: %s\n" % msg)
    sys.exit(code)


# ------------------------------------------------------------ limits
def read_limits(path):
    try:
        text = open(path).read()
    except OSError as e:
        die("cannot read the PMI limits %s: %s" % (path, e.strerror))
    lim = {m.group(1): int(m.group(2))
           for m in re.finditer(r"^#define\s+DN2_PMI_([A-Z_]+)\s+(\d+)\b", text, re.M)}
    for k in ("KEY_MAX", "VAL_MAX", "PUT_KEYS", "RANK_KEYS", "RANKS", "TOKEN_LEN"):
        if k not in lim:
            die("%s does not define DN2_PMI_%s" % (path, k))
    return lim


LIM = read_limits(A.limits)
# A put: PUT_KEYS lines "key value\n", every byte %-escaped at worst.
PUT_BODY_MAX = LIM["PUT_KEYS"] * (3 * (LIM["KEY_MAX"] - 1) + 1 + 3 * (LIM["VAL_MAX"] - 1) + 1)

# ------------------------------------------------------------ secret
try:
    st = os.stat(A.secret_file)
except OSError as e:
    die("--secret-file %s: %s" % (A.secret_file, e.strerror))
if st.st_mode & 0o077:
    die("--secret-file %s is readable by others (mode %o): make it 0600" % (A.secret_file, st.st_mode & 0o777))
secret = open(A.secret_file, "rb").read()
if secret.endswith(b"\n"):
    secret = secret[:-1]
if len(secret) < 16:
    die("--secret-file %s: fewer than 16 bytes" % A.secret_file)
jobid = A.jobid
nodes = A.nodes


def mac(msg):
    return hmac.new(secret, msg.encode(), hashlib.sha256).hexdigest()


def node_token(i):
    return mac("dn2-node %s %d" % (jobid, i))


def rank_token(job, rank):
    return mac("dn2-pmi %s %d" % (job, rank))


node_tokens = [node_token(i) for i in range(nodes)]


def write_private(path, data):
    tmp = "%s.tmp%d" % (path, os.getpid())
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.rename(tmp, path)


os.makedirs(A.token_dir, mode=0o700, exist_ok=True)
os.chmod(A.token_dir, 0o700)
for i, t in enumerate(node_tokens):
    write_private(os.path.join(A.token_dir, "node%d" % i), t.encode())

rundir = A.rundir
joins, jobs_dir = os.path.join(rundir, "joins"), os.path.join(rundir, "jobs")


def atomic_write(path, data):
    tmp = "%s.tmp%d" % (path, os.getpid())
    with open(tmp, "wb") as f:
        f.write(data)
    os.rename(tmp, path)


def log(msg):
    sys.stderr.write("%s %s\n" % (time.strftime("%H:%M:%S"), msg))
    sys.stderr.flush()


REASONS = {200: "OK", 202: "Accepted", 400: "Bad Request", 403: "Forbidden", 404: "Not Found",
           405: "Method Not Allowed", 408: "Request Timeout", 409: "Conflict", 411: "Length Required",
           413: "Payload Too Large", 431: "Request Header Fields Too Large", 500: "Internal Server Error",
           501: "Not Implemented", 503: "Service Unavailable"}


def response(code, body, head_only=False, ctype="text/plain; charset=utf-8", length=None):
    if isinstance(body, str):
        body = body.encode()
    n = len(body) if length is None else length
    h = ("HTTP/1.0 %d %s\r\nContent-Type: %s\r\nContent-Length: %d\r\nConnection: close\r\n\r\n"
         % (code, REASONS.get(code, "Status"), ctype, n)).encode()
    return h if head_only else h + body


# ------------------------------------------------------------ PMI state
# Per MPI job (the run's job id, or the job id + "." + a suffix for several
# jobs in one cluster): a key-value space, barriers by epoch, an abort flag,
# and which node owns which rank.
pmi_lock = threading.Condition()
pmi_jobs = {}
JOBS_MAX = 4096
job_re = re.compile(r"\.[A-Za-z0-9_.-]{1,32}")


def pmi_job_ok(name):
    return name == jobid or (name.startswith(jobid + ".") and job_re.fullmatch(name[len(jobid):]) is not None)


def pmi_job(name):
    """The job's state (under pmi_lock), None when there are too many jobs."""
    j = pmi_jobs.get(name)
    if j is None:
        if len(pmi_jobs) >= JOBS_MAX:
            return None
        j = pmi_jobs[name] = {"kvs": {}, "nkeys": collections.Counter(), "arrived": {}, "done": set(),
                              "size": None, "abort": None, "owner": {}, "dump": None}
    return j


def same(a, b):
    """Constant-time comparison of two strings (any characters)."""
    return hmac.compare_digest(a.encode("utf-8", "surrogateescape"), b.encode("utf-8", "surrogateescape"))


def esc(s):
    return urllib.parse.quote(s, safe="")


class Req:
    pass


def int_or(s, default=None):
    try:
        return int(s)
    except (TypeError, ValueError):
        return default


def parse_put(body):
    """The lines of a put, decoded and checked; a str (the error) if bad."""
    kv = []
    for line in body.decode("utf-8", "replace").splitlines():
        k, _, v = line.partition(" ")
        if not k:
            continue
        k, v = urllib.parse.unquote(k), urllib.parse.unquote(v)
        if len(k.encode()) >= LIM["KEY_MAX"] or len(v.encode()) >= LIM["VAL_MAX"]:
            return "key or value too long (keys < %d bytes, values < %d)" % (LIM["KEY_MAX"], LIM["VAL_MAX"])
        kv.append((k, v))
    if len(kv) > LIM["PUT_KEYS"]:
        return "more than %d keys in one put" % LIM["PUT_KEYS"]
    return kv


def pmi(r):
    """A PMI request of rank r.rank of job r.job: (code, body)."""
    op, q, rank = r.route, r.q, r.rank
    kv = None
    if op == "put":
        kv = parse_put(r.body)
        if isinstance(kv, str):
            return 400, kv + "\n"
    elif op == "barrier":
        size, epoch = int_or(q.get("size")), int_or(q.get("epoch"))
        if size is None or epoch is None or not 1 <= size <= LIM["RANKS"] or rank >= size:
            return 400, "bad size or epoch\n"
    with pmi_lock:
        j = pmi_job(r.job)
        if j is None:
            return 503, "too many PMI jobs\n"
        if op == "status":
            if j["abort"] is not None:
                return 409, "job aborted: %s\n" % j["abort"]
            return 200, "running\n"
        if op == "get":
            v = j["kvs"].get(q.get("key", ""))
            return (404, "no such key\n") if v is None else (200, v)
        if j["size"] is not None and rank >= j["size"]:
            return 400, "bad rank\n"
        if op == "abort":
            msg = "rank %d called PMI_Abort (exit code %s): %s" % (rank, q.get("code", "?")[:16], q.get("msg", "")[:512])
            if j["abort"] is None:
                j["abort"] = msg
                atomic_write(os.path.join(rundir, "pmi-abort"), (msg + "\n").encode())
            pmi_lock.notify_all()
            return 200, "ok\n"
        if j["abort"] is not None:
            return 409, "job aborted: %s\n" % j["abort"]
        if op == "put":
            new = sum(1 for k, _ in kv if k not in j["kvs"])
            if j["nkeys"][rank] + new > LIM["RANK_KEYS"]:
                return 400, "more than %d keys from rank %d\n" % (LIM["RANK_KEYS"], rank)
            j["nkeys"][rank] += new
            for k, v in kv:
                j["kvs"][k] = v
            return 200, "ok\n"
        if op == "barrier":
            if j["size"] is None:
                j["size"] = size
            if size != j["size"]:
                return 400, "size %d, but the job has %d ranks\n" % (size, j["size"])
            if epoch not in j["done"]:
                if epoch not in j["arrived"] and len(j["arrived"]) >= 16:
                    return 400, "too many barriers at once\n"
                arrived = j["arrived"].setdefault(epoch, set())
                arrived.add(rank)
                if len(arrived) == size:
                    j["done"].add(epoch)
                    del j["arrived"][epoch]
                    j["dump"] = None
                    pmi_lock.notify_all()
            end = time.monotonic() + A.long_poll
            while epoch not in j["done"] and j["abort"] is None and time.monotonic() < end:
                pmi_lock.wait(max(0.01, end - time.monotonic()))
            if j["abort"] is not None:
                return 409, "job aborted: %s\n" % j["abort"]
            if epoch not in j["done"]:
                return 202, "waiting for %d of %d ranks\n" % (size - len(j["arrived"].get(epoch, ())), size)
            # Built once per completed barrier, under the lock; written after.
            if j["dump"] is None or j["dump"][0] != epoch:
                j["dump"] = (epoch, "".join("%s %s\n" % (esc(k), esc(v)) for k, v in j["kvs"].items()).encode())
            return 200, j["dump"][1]
    return 404, "no such endpoint\n"


def pmi_token(r):
    """/n/I/T/pmi/token?job=J&rank=R: rank R's token, for node I only."""
    job, rank = r.q.get("job", ""), int_or(r.q.get("rank"), -1)
    if not pmi_job_ok(job):
        return 403, "not this job (stale guest from another run?)\n"
    if not 0 <= rank < LIM["RANKS"]:
        return 400, "bad rank\n"
    with pmi_lock:
        j = pmi_job(job)
        if j is None:
            return 503, "too many PMI jobs\n"
        owner = j["owner"].setdefault(rank, r.node)
    if owner != r.node:
        return 409, "rank %d of job %s belongs to node %d\n" % (rank, job, owner)
    return 200, rank_token(job, rank) + "\n"


# ------------------------------------------------------------ node requests
def wait_for(path, seconds):
    end = time.monotonic() + seconds
    while not os.path.exists(path) and time.monotonic() < end:
        time.sleep(0.1)


def find_file(r, rel):
    """The file a node asks for: the run's own files, --serve, the export
    directory; None when there is none (or it is not the node's)."""
    parts = [p for p in urllib.parse.unquote(rel).split("/") if p not in ("", ".")]
    if not parts or ".." in parts or any("\0" in p for p in parts):
        return None
    m = re.fullmatch(r"node(\d+)\.sh", parts[-1])
    if len(parts) == 2 and parts[0] == "cmd" and m and int(m.group(1)) != r.node:
        return None              # another node's command
    for d in [A.www] + ([A.serve] if A.serve else []) + [A.export]:
        p = os.path.join(d, *parts)
        if os.path.isfile(p):
            return p
    return None


def node_req(r):
    """A request of node r.node: (code, body) or ("file", path)."""
    q, route = r.q, r.route
    if "job" in q and q["job"] != jobid and route != "pmi/token":
        return 403, "not this job (stale guest from another run?)\n"
    if route == "join" and r.method == "GET":
        rec = "lid=%d link=%d wid=%d time=%.3f\n" % (
            max(0, int_or(q.get("lid"), 0)), max(0, int_or(q.get("link"), 0)),
            max(0, int_or(q.get("wid"), 0)), time.time())
        atomic_write(os.path.join(joins, "node%d" % r.node), rec.encode())
        return 200, "ok\n"
    if route == "pmi/token" and r.method == "GET":
        return pmi_token(r)
    if route == "job" and r.method == "GET":
        after = max(0, int_or(q.get("after"), 0))
        end = time.monotonic() + A.long_poll + 5
        while True:
            try:
                ids = sorted(int(f[:-3]) for f in os.listdir(jobs_dir) if f.endswith(".sh") and f[:-3].isdigit())
            except OSError:
                ids = []
            ids = [i for i in ids if i > after]
            if ids:
                with open(os.path.join(jobs_dir, "%d.sh" % ids[0])) as f:
                    body = f.read()
                return 200, "# dn2-job %d\n%s\n" % (ids[0], body.replace("{node}", str(r.node)))
            if time.monotonic() >= end:
                return 404, "no job\n"
            time.sleep(0.2)
    if route == "result" and r.method == "POST":
        jid, rc = int_or(q.get("id")), int_or(q.get("rc"))
        if jid is None or rc is None or jid < 0:
            return 400, "bad id or rc\n"
        base = os.path.join(jobs_dir, "%d.node%d" % (jid, r.node))
        atomic_write(base + ".out", r.body)
        atomic_write(base + ".rc", b"%d\n" % rc)      # last: marks completion
        return 200, "ok\n"
    if r.method in ("GET", "HEAD"):
        if route == "ranks" and "wait" in q:
            # Long poll: the launcher writes the table once every node joined.
            wait_for(os.path.join(A.www, "ranks"), A.long_poll)
        p = find_file(r, route)
        if p is None:
            return 404, "no such file\n"
        return "file", p
    return 405, "no such endpoint\n"


# ------------------------------------------------------------ requests
# route -> (methods, body limit) for the two kinds of credential
PMI_ROUTES = {"status": ("GET",), "get": ("GET",), "abort": ("GET",), "barrier": ("GET",), "put": ("POST",)}
cred_re = re.compile(r"/n/(\d{1,5})/([0-9a-f]{1,128})(/.*)?")


class Refuse(Exception):
    def __init__(self, code, msg):
        Exception.__init__(self, msg)
        self.code, self.msg = code, msg


def parse_head(raw):
    """A request head -> Req with its principal, route and body length;
    raises Refuse.  Nothing of the body has been read."""
    try:
        text = raw.decode("latin-1")
        lines = text.split("\n")
        method, target, version = lines[0].rstrip("\r").split(" ")
    except ValueError:
        raise Refuse(400, "bad request line\n")
    if not version.startswith("HTTP/1."):
        raise Refuse(400, "bad request line\n")
    hdr = {}
    for line in lines[1:]:
        line = line.rstrip("\r")
        if not line:
            continue
        k, sep, v = line.partition(":")
        if not sep:
            raise Refuse(400, "bad header line\n")
        hdr[k.strip().lower()] = v.strip()
    r = Req()
    r.method = method
    u = urllib.parse.urlsplit(target)
    r.q = dict(urllib.parse.parse_qsl(u.query, keep_blank_values=True))
    path = u.path
    m = cred_re.fullmatch(path)
    if m:
        n = int(m.group(1))
        if not 0 <= n < nodes or not same(m.group(2), node_tokens[n]):
            raise Refuse(403, "bad node credential (a stale guest of another run?)\n")
        r.kind, r.node, r.who = "node", n, "node%d" % n
        r.route = (m.group(3) or "/").lstrip("/")
        r.logpath = "/n/%d/-/%s" % (n, r.route)
        limit = A.result_max if (r.route == "result" and method == "POST") else 0
    elif path.startswith("/pmi/"):
        r.route = path[5:]
        r.logpath = path
        if r.route not in PMI_ROUTES:
            raise Refuse(404, "no such endpoint\n")
        if method not in PMI_ROUTES[r.route]:
            raise Refuse(405, "%s wants %s\n" % (path, PMI_ROUTES[r.route][0]))
        r.job, r.rank = r.q.get("job", ""), int_or(r.q.get("rank"), -1)
        if not pmi_job_ok(r.job):
            raise Refuse(403, "not this job (stale guest from another run?)\n")
        if not 0 <= r.rank < LIM["RANKS"]:
            raise Refuse(400, "bad rank\n")
        if not same(r.q.get("token", ""), rank_token(r.job, r.rank)):
            raise Refuse(403, "bad token for rank %d\n" % r.rank)
        r.kind, r.who = "rank", "%s/%d" % (r.job, r.rank)
        limit = PUT_BODY_MAX if r.route == "put" else 0
    else:
        raise Refuse(403, "no credential\n")
    if method not in ("GET", "HEAD", "POST"):
        raise Refuse(405, "method %s\n" % method[:16])
    if "transfer-encoding" in hdr:
        raise Refuse(501, "no Transfer-Encoding, a Content-Length\n")
    cl = hdr.get("content-length")
    if cl is None:
        if method == "POST":
            raise Refuse(411, "a POST wants a Content-Length\n")
        cl = "0"
    if not cl.isdigit() or len(cl) > 12:
        raise Refuse(400, "bad Content-Length\n")
    r.length = int(cl)
    if r.length > limit:
        raise Refuse(413, "a body of %d bytes: at most %d here\n" % (r.length, limit))
    return r


# Counters of running requests: all, and per principal.
count_lock = threading.Lock()
running = collections.Counter()
PER = {"node": 16, "rank": 8}
stats = collections.Counter()


def close(sock):
    try:
        sock.close()
    except OSError:
        pass


# Refusals are logged at most REFUSAL_LOG a second (a flood must not fill
# the disk); the number left out is logged with the next one.
REFUSAL_LOG = 20
refusal_log = {"second": 0, "n": 0, "skipped": 0}


def refuse(sock, code, msg, what=""):
    """A refusal: a short answer (best effort, never blocking), then close."""
    stats["refused-%d" % code] += 1
    try:
        sock.setblocking(False)
        sock.send(response(code, msg))
    except OSError:
        pass
    close(sock)
    sec = int(time.monotonic())
    if sec != refusal_log["second"]:
        refusal_log["second"], refusal_log["n"] = sec, 0
    refusal_log["n"] += 1
    if refusal_log["n"] > REFUSAL_LOG:
        refusal_log["skipped"] += 1
        return
    if refusal_log["skipped"]:
        log("(%d refusals not logged)" % refusal_log["skipped"])
        refusal_log["skipped"] = 0
    what = re.sub(r"[^\x20-\x7e]", "?", what or "connection")
    log("refused %s: %d %s" % (what, code, msg.strip()))


def recv_exactly(sock, n, deadline):
    chunks, got = [], 0
    while got < n:
        left = deadline - time.monotonic()
        if left <= 0:
            raise socket.timeout()
        sock.settimeout(left)
        d = sock.recv(min(65536, n - got))
        if not d:
            raise ConnectionError("end of stream in the body")
        chunks.append(d)
        got += len(d)
    return b"".join(chunks)


def send_file(sock, r, path):
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        sock.settimeout(A.io_timeout)
        sock.sendall(response(200, b"", head_only=True, ctype="application/octet-stream", length=size))
        if r.method == "HEAD":
            return
        while True:
            chunk = f.read(65536)
            if not chunk:
                break
            sock.sendall(chunk)     # each chunk within --io-timeout


def worker(sock, r, early):
    code = 500
    try:
        sock.setblocking(True)
        deadline = time.monotonic() + A.io_timeout
        body = early[:r.length]
        if len(body) < r.length:
            body += recv_exactly(sock, r.length - len(body), deadline)
        r.body = body
        if r.kind == "rank":
            res = pmi(r)
        else:
            res = node_req(r)
        if res[0] == "file":
            code = 200
            send_file(sock, r, res[1])
        else:
            code = res[0]
            # The answer is complete here: no lock is held while it is written.
            sock.settimeout(A.io_timeout)
            sock.sendall(response(code, res[1], head_only=(r.method == "HEAD")))
    except (OSError, ConnectionError) as e:
        stats["io-errors"] += 1
        log("%s %s (%s): %s" % (r.method, r.logpath, r.who, e.__class__.__name__))
    except Exception as e:           # a bug: say so, keep serving
        log("%s %s (%s): internal error %r" % (r.method, r.logpath, r.who, e))
        try:
            sock.sendall(response(500, "internal error\n"))
        except OSError:
            pass
    finally:
        close(sock)
        with count_lock:
            running["all"] -= 1
            running[r.who] -= 1
            if running[r.who] <= 0:
                del running[r.who]
    stats["served"] += 1
    if code not in (200, 202) or r.route not in ("status", "job", "barrier"):
        log("%s %s (%s) %s" % (r.method, r.logpath, r.who, code))


def start(sock, head, early):
    try:
        r = parse_head(head)
    except Exception as e:          # a bug: refuse this one, keep serving
        if not isinstance(e, Refuse):
            log("internal error on a request head: %r" % e)
            e = Refuse(500, "internal error\n")
        first = head.split(b"\r\n", 1)[0][:120].decode("latin-1")
        first = re.sub(r"token=[^& ]*", "token=-", re.sub(r"/n/(\d+)/[^/ ]*", r"/n/\1/-", first))
        return refuse(sock, e.code, e.msg, first)
    with count_lock:
        if running["all"] >= A.max_workers or running[r.who] >= PER[r.kind]:
            busy = True
        else:
            busy = False
            running["all"] += 1
            running[r.who] += 1
    if busy:
        return refuse(sock, 503, "busy: too many requests at once, try again\n", "%s %s" % (r.method, r.logpath))
    t = threading.Thread(target=worker, args=(sock, r, early), daemon=True)
    t.start()


# ------------------------------------------------------------ the loop
class Pending:
    __slots__ = ("sock", "buf", "deadline")


def serve(lsock):
    sel = selectors.DefaultSelector()
    sel.register(lsock, selectors.EVENT_READ, None)
    pending = collections.OrderedDict()        # fd -> Pending, oldest first

    def drop(p):
        try:
            sel.unregister(p.sock)
        except (KeyError, ValueError):
            pass
        pending.pop(p.sock.fileno(), None)

    def readable(p):
        try:
            d = p.sock.recv(4096)
        except BlockingIOError:
            return
        except OSError:
            drop(p)
            return close(p.sock)
        if not d:
            drop(p)
            return close(p.sock)
        p.buf += d
        end = p.buf.find(b"\r\n\r\n")
        n = 4
        if end < 0:
            end, n = p.buf.find(b"\n\n"), 2
        if end >= 0 and end + n <= HEAD_MAX:
            drop(p)
            start(p.sock, p.buf[:end + n], p.buf[end + n:])
        elif len(p.buf) > HEAD_MAX:
            drop(p)
            refuse(p.sock, 431, "request head over %d bytes\n" % HEAD_MAX)

    while True:
        now = time.monotonic()
        # The oldest first: its deadline is the nearest.
        while pending:
            p = next(iter(pending.values()))
            if p.deadline > now:
                break
            drop(p)
            refuse(p.sock, 408, "no complete request within %g s\n" % A.head_timeout, "idle connection")
        timeout = 1.0
        if pending:
            timeout = max(0.0, min(timeout, next(iter(pending.values())).deadline - now))
        for key, _ in sel.select(timeout):
            if key.data is not None:
                readable(key.data)
                continue
            for _ in range(64):
                try:
                    s, _addr = lsock.accept()
                except (BlockingIOError, InterruptedError):
                    break
                except OSError as e:
                    if e.errno in (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM):
                        stats["accept-errors"] += 1
                        time.sleep(0.05)
                        break
                    raise
                stats["connections"] += 1
                # Full: the oldest waiting connection makes room (a flood
                # of idle connections cannot keep new requests out).
                if len(pending) >= A.max_pending:
                    old = next(iter(pending.values()))
                    drop(old)
                    refuse(old.sock, 503, "too many connections waiting: closed the oldest\n")
                s.setblocking(False)
                p = Pending()
                p.sock, p.buf, p.deadline = s, b"", time.monotonic() + A.head_timeout
                pending[s.fileno()] = p
                sel.register(s, selectors.EVENT_READ, p)
                readable(p)     # a client usually sent its request already


def main():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = min(hard, 8192) if hard != resource.RLIM_INFINITY else 8192
    if soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
    lsock = socket.socket(socket.AF_INET6 if ":" in A.bind else socket.AF_INET, socket.SOCK_STREAM)
    lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        lsock.bind((A.bind, A.port))
    except OSError as e:
        if e.errno == errno.EADDRINUSE:
            die("port %d is busy" % A.port, 3)
        raise
    lsock.listen(1024)
    lsock.setblocking(False)
    port = lsock.getsockname()[1]
    if A.ready:
        atomic_write(A.ready, b"%d\n" % port)
    log("serving %s over %s on %s:%d (%d nodes; put bodies <= %d bytes)"
        % (A.www, A.export, A.bind, port, nodes, PUT_BODY_MAX))
    serve(lsock)


main()
