#!/usr/bin/env python3
"""The job/PMI server (scripts/pmi-server.py) on its own, TAP: no guests.
The server runs on 127.0.0.1; this script plays the nodes, the PMI ranks
(plain sockets, and the real libpmi-dn2.so through ctypes when
DN2_PMI_LIB names it) and hostile local processes.

    pmi-server-test.py [--soak [SECONDS]] [--quick] [--legacy SERVER.py]

--soak [S]: instead of the checks, S seconds (default 20; 5 with --quick)
of hostile clients (idle
connections, trickled heads, forged credentials, bad lengths, slow
readers of big answers) while real ranks run put/barrier/get rounds; ends
with what was thrown and what held (scripts/soak.sh, phase "pmi").
--legacy F: run the same checks against an older server F taking the old
positional arguments (www export rundir nodes jobid port ready serve bind),
to see which of them it fails.
"""
import argparse, ctypes, os, re, resource, shutil, socket, stat, subprocess, sys, tempfile
import threading, time, traceback

here = os.path.dirname(os.path.abspath(__file__))
top = os.path.normpath(os.path.join(here, "..", ".."))
ap = argparse.ArgumentParser()
ap.add_argument("--soak", type=float, nargs="?", const=-1, default=0)
ap.add_argument("--quick", action="store_true")
ap.add_argument("--legacy", default="")
ap.add_argument("--server", default=os.path.join(top, "scripts", "pmi-server.py"))
A = ap.parse_args()
if A.soak < 0:
    A.soak = 5 if A.quick else 20

LIMITS = os.path.join(top, "linux-guest", "pmi", "pmi-limits.h")
LIM = {m.group(1): int(m.group(2)) for m in
       re.finditer(r"^#define\s+DN2_PMI_([A-Z_]+)\s+(\d+)\b", open(LIMITS).read(), re.M)}

HEAD_T, IO_T, POLL_T, PENDING, WORKERS = 1.0, 5.0, 3.0, 32, 96
NODES = 4
JOB = "t-%d" % os.getpid()

n_test = 0
failed = 0


def ok(cond, name, why=""):
    global n_test, failed
    n_test += 1
    if not cond:
        failed += 1
    print("%sok %d - %s%s" % ("" if cond else "not ", n_test, name, "" if cond or not why else ": " + why))
    sys.stdout.flush()
    return cond


def diag(msg):
    for line in str(msg).splitlines():
        print("# " + line)
    sys.stdout.flush()


soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 8192), hard))

# ------------------------------------------------------------ the server
work = tempfile.mkdtemp(prefix="dn2-pmi-test.")
os.chmod(work, 0o700)
run = os.path.join(work, "run")
for d in ("joins", "jobs", "www/cmd", "export/bin"):
    os.makedirs(os.path.join(run, d))
with open(os.path.join(run, "www", "ranks"), "w") as f:
    f.write("".join("%d %d 0\n" % (i, i + 1) for i in range(NODES)))
for i in range(NODES):
    with open(os.path.join(run, "www", "cmd", "node%d.sh" % i), "w") as f:
        f.write("echo command of node %d\n" % i)
with open(os.path.join(run, "export", "bin", "prog"), "wb") as f:
    f.write(b"exported program\n")
secret = os.urandom(32).hex()
sfile = os.path.join(run, "secret")
fd = os.open(sfile, os.O_WRONLY | os.O_CREAT, 0o600)
os.write(fd, secret.encode())
os.close(fd)
ready = os.path.join(run, "http.port")
tokdir = os.path.join(run, "tokens")
legacy = bool(A.legacy)

if legacy:
    cmd = [sys.executable, "-u", A.legacy, os.path.join(run, "www"), os.path.join(run, "export"), run,
           str(NODES), JOB, "0", ready, "", "127.0.0.1"]
else:
    cmd = [sys.executable, "-u", A.server, "--rundir", run, "--www", os.path.join(run, "www"),
           "--export", os.path.join(run, "export"), "--nodes", str(NODES), "--jobid", JOB,
           "--secret-file", sfile, "--token-dir", tokdir, "--bind", "127.0.0.1", "--port", "0",
           "--ready", ready, "--limits", LIMITS, "--head-timeout", str(HEAD_T), "--io-timeout", str(IO_T),
           "--long-poll", str(POLL_T), "--max-pending", str(PENDING), "--max-workers", str(WORKERS)]
log = open(os.path.join(work, "server.log"), "w")
srv = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=log)
for _ in range(100):
    if os.path.exists(ready) and open(ready).read().strip():
        break
    time.sleep(0.05)
else:
    print("1..1")
    ok(False, "the server starts", open(os.path.join(work, "server.log")).read()[-500:])
    srv.kill()
    sys.exit(1)
PORT = int(open(ready).read())


def node_tok(i):
    if legacy:
        return None
    return open(os.path.join(tokdir, "node%d" % i)).read().strip()


def node_pfx(i):
    return "" if legacy else "/n/%d/%s" % (i, node_tok(i))


# ------------------------------------------------------------ clients
def connect(rcvbuf=None, timeout=5.0):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    if rcvbuf:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    s.settimeout(timeout)
    s.connect(("127.0.0.1", PORT))
    return s


def raw(head, body=b"", timeout=5.0):
    """Sends a request head (+ body); (status, answer body, seconds), status
    None when the server closed without an answer, "timeout" when it gave
    none in time."""
    t0 = time.monotonic()
    try:
        s = connect(timeout=timeout)
    except OSError as e:
        return "connect:" + e.__class__.__name__, b"", time.monotonic() - t0
    data = b""
    try:
        s.sendall(head + body)
        while True:
            d = s.recv(65536)
            if not d:
                break
            data += d
    except socket.timeout:
        s.close()
        return "timeout", data, time.monotonic() - t0
    except OSError:
        pass
    s.close()
    m = re.match(rb"HTTP/1\.\d (\d+)", data)
    i = data.find(b"\r\n\r\n")
    return (int(m.group(1)) if m else None), (data[i + 4:] if i >= 0 else b""), time.monotonic() - t0


def req(method, path, body=b"", timeout=5.0, headers=""):
    head = "%s %s HTTP/1.0\r\nHost: t\r\n%sContent-Length: %d\r\n\r\n" % (method, path, headers, len(body))
    return raw(head.encode(), body, timeout)


def rank_tok(job, r, node=None):
    if legacy:
        return "x"
    st, body, _ = req("GET", "%s/pmi/token?job=%s&rank=%d" % (node_pfx(r if node is None else node), job, r))
    return body.decode().strip() if st == 200 else None


def pmi(op, job, r, tok, extra="", body=None, timeout=5.0):
    path = "/pmi/%s?job=%s&rank=%d&token=%s%s" % (op, job, r, tok, extra)
    return req("POST" if op == "put" else "GET", path, body or b"", timeout)


def putbody(kv):
    from urllib.parse import quote
    return "".join("%s %s\n" % (quote(k, safe=""), quote(v, safe="")) for k, v in kv).encode()


def server_fds():
    try:
        return len(os.listdir("/proc/%d/fd" % srv.pid))
    except OSError:
        return -1


def gave_up(who=None):
    """The server log's lines of requests it gave up on (an I/O error:
    its I/O timeout, a reset), of rank WHO ("JOB/RANK") or of any."""
    with open(os.path.join(work, "server.log")) as f:
        return [ln.strip() for ln in f
                if re.search(r"\S+ /\S+ \(([^)]*)\): [A-Za-z]*(Error|Exception|timeout)$", ln.strip())
                and (who is None or " (%s): " % who in ln)]


def server_threads():
    try:
        return int(re.search(r"^Threads:\s+(\d+)", open("/proc/%d/status" % srv.pid).read(), re.M).group(1))
    except (OSError, AttributeError):
        return -1


def server_rss_kib():
    try:
        return int(re.search(r"^VmRSS:\s+(\d+)", open("/proc/%d/status" % srv.pid).read(), re.M).group(1))
    except (OSError, AttributeError):
        return -1


def barrier_all(job, toks, epoch, size=None):
    """Every rank of toks through barrier epoch; the answers."""
    size = size or len(toks)
    res = [None] * len(toks)

    def one(r):
        for _ in range(5):
            st, body, _ = pmi("barrier", job, r, toks[r], "&size=%d&epoch=%d" % (size, epoch),
                              timeout=POLL_T + 5)
            if st != 202:
                break
        res[r] = (st, body)
    th = [threading.Thread(target=one, args=(r,)) for r in range(len(toks))]
    for t in th:
        t.start()
    for t in th:
        t.join(30)
    return res


# ================================================================ soak
def soak(seconds):
    print("1..4")
    job = JOB + ".soak"
    hjob = JOB + ".hostile"
    size = NODES
    toks = [rank_tok(job, r) for r in range(size)]
    htok = rank_tok(hjob, 0) if not legacy else "x"
    stop = threading.Event()
    thrown = {k: 0 for k in ("idle", "trickle", "forged", "bad-length", "slow-reader", "garbage")}
    answers = {}
    lock = threading.Lock()
    lat = {"status": [], "put": [], "barrier": []}
    errors = []
    rounds = [0]
    peak = {"fds": 0, "threads": 0, "rss": 0}

    def count(kind, st=None):
        with lock:
            thrown[kind] += 1
            if st is not None:
                answers[st] = answers.get(st, 0) + 1

    # Big values in the hostile job: its barrier answer is about 1 MiB.
    if not legacy:
        for c in range(8):
            pmi("put", hjob, 0, htok, body=putbody([("big%d.%d" % (c, i), "v" * (LIM["VAL_MAX"] - 1))
                                                     for i in range(LIM["PUT_KEYS"])]))
        pmi("barrier", hjob, 0, htok, "&size=1&epoch=1", timeout=10)

    def idle():
        socks = []
        while not stop.is_set():
            try:
                while len(socks) < 150 and not stop.is_set():
                    socks.append(connect(timeout=1))
                    count("idle")
            except OSError:
                time.sleep(0.05)
            for s in socks[:]:
                s.setblocking(False)
                try:
                    d = s.recv(4096)
                    if d or d == b"":
                        m = re.match(rb"HTTP/1\.\d (\d+)", d)
                        with lock:
                            k = int(m.group(1)) if m else "closed"
                            answers[k] = answers.get(k, 0) + 1
                        s.close()
                        socks.remove(s)
                except BlockingIOError:
                    pass
                except OSError:
                    s.close()
                    socks.remove(s)
            time.sleep(0.05)
        for s in socks:
            s.close()

    def trickle():
        while not stop.is_set():
            try:
                s = connect(timeout=1)
                count("trickle")
                for ch in b"GET /pmi/status?job=" + JOB.encode():
                    if stop.is_set():
                        break
                    s.send(bytes([ch]))
                    time.sleep(0.2)
                s.close()
            except OSError:
                time.sleep(0.05)

    def forged():
        i = 0
        while not stop.is_set():
            i += 1
            which = i % 6
            if which == 0:
                st, _, _ = pmi("put", job, 0, "0" * 64, body=b"k v\n", timeout=3)
            elif which == 1:
                st, _, _ = pmi("barrier", job, 1, "", "&size=1&epoch=99", timeout=3)
            elif which == 2:
                st, _, _ = pmi("abort", job, 0, "f" * 64, "&code=1&msg=forged", timeout=3)
            elif which == 3:
                st, _, _ = req("GET", "/join?job=%s&node=0&lid=9&link=3" % JOB, timeout=3)
            elif which == 4:
                st, _, _ = pmi("put", job, 0, toks[1], body=b"k v\n", timeout=3)   # rank 1 as rank 0
            else:
                st, _, _ = req("GET", "/n/0/%s/ranks" % ("0" * 64), timeout=3)
            count("forged", st)

    def badlen():
        i = 0
        while not stop.is_set():
            i += 1
            cl = ["-1", "104857600", "x", "99999999999999"][i % 4]
            head = ("POST /pmi/put?job=%s&rank=2&token=%s HTTP/1.0\r\nContent-Length: %s\r\n\r\n"
                    % (job, toks[2], cl)).encode()
            st, _, _ = raw(head, b"", timeout=3)
            count("bad-length", st)

    def garbage():
        while not stop.is_set():
            st, _, _ = raw(os.urandom(200) + b"\r\n\r\n", timeout=3)
            count("garbage", st)
            time.sleep(0.01)

    def slow_reader():
        while not stop.is_set():
            try:
                s = connect(rcvbuf=4096, timeout=1)
                s.sendall(("GET /pmi/barrier?job=%s&rank=0&token=%s&size=1&epoch=1 HTTP/1.0\r\n\r\n"
                           % (hjob, htok)).encode())
                count("slow-reader")
                t0 = time.monotonic()
                while not stop.is_set() and time.monotonic() - t0 < IO_T + 2:
                    time.sleep(0.2)
                s.close()
            except OSError:
                time.sleep(0.1)

    retries = [0]

    # Where each real rank is, for the message when one of them waits in
    # vain: the request, since when, how often asked, its last answer.
    where = {}
    stacks = []

    def ask(op, r, extra="", body=None, timeout=10):
        """As libpmi-dn2 does: a 503 (busy) or a closed connection is asked
        again (here within 5 s); a 202 (barrier not yet) too."""
        t0 = time.monotonic()
        end = t0 + 5 + (POLL_T if op == "barrier" else 0)
        n = 0
        while True:
            n += 1
            where[r] = (op + extra, t0, n, "asking")
            st, data, secs = pmi(op, job, r, toks[r], extra, body=body, timeout=timeout)
            where[r] = (op + extra, t0, n, "%s after %.2f s" % (st, secs))
            if st not in (503, None, 202) or time.monotonic() > end:
                return st, data
            if st != 202:
                with lock:
                    retries[0] += 1
                time.sleep(0.02)

    # The end of the soak stops the ranks at a round they all finish: a
    # rank that sees the stop goes on to the highest round any rank has
    # begun (else the ranks already inside that round's barrier would wait
    # for the ones that stopped before it).  A failed barrier ends them all.
    begun = [0]
    failed_ev = threading.Event()

    def rank_loop(r):
        epoch = 0
        while not failed_ev.is_set():
            with lock:
                if stop.is_set() and epoch >= begun[0]:
                    break
                epoch += 1
                begun[0] = max(begun[0], epoch)
            t0 = time.monotonic()
            st, body = ask("status", r)
            lat["status"].append(time.monotonic() - t0)
            if st != 200:
                errors.append("rank %d status %s" % (r, st))
            t0 = time.monotonic()
            st, body = ask("put", r, body=putbody([("r%d" % r, "e%d" % epoch)]))
            lat["put"].append(time.monotonic() - t0)
            if st != 200:
                errors.append("rank %d put %s" % (r, st))
            t0 = time.monotonic()
            st, body = ask("barrier", r, "&size=%d&epoch=%d" % (size, epoch), timeout=POLL_T + 5)
            lat["barrier"].append(time.monotonic() - t0)
            if st != 200:
                now = time.monotonic()
                errors.append("rank %d barrier %d: %s (%s)" % (r, epoch, st, "; ".join(
                    "rank %d in %s for %.2f s, try %d, last %s" % (q, w[0], now - w[1], w[2], w[3])
                    for q, w in sorted(where.items()) if q != r)))
                with lock:
                    if not stacks:
                        frames = sys._current_frames()
                        for q, t in rank_threads.items():
                            f = frames.get(t.ident)
                            stacks.append("rank %d's thread %s" % (q, "ended" if f is None else "at: " + " <- ".join(
                                "%s:%d %s" % (fs.name, fs.lineno, fs.line)
                                for fs in reversed(traceback.extract_stack(f)[-5:]))))
                failed_ev.set()
                stop.set()
                break
            want = ["r%d e%d" % (q, epoch) for q in range(size)]
            have = body.decode().splitlines()
            if not all(w in have for w in want):
                errors.append("rank %d barrier %d: keys missing" % (r, epoch))
            if r == 0:
                rounds[0] = epoch

    def watch():
        while not stop.is_set():
            peak["fds"] = max(peak["fds"], server_fds())
            peak["threads"] = max(peak["threads"], server_threads())
            peak["rss"] = max(peak["rss"], server_rss_kib())
            time.sleep(0.2)

    hostile = [idle, trickle, trickle, forged, forged, badlen, garbage, slow_reader, slow_reader, slow_reader]
    th = [threading.Thread(target=f, daemon=True) for f in hostile]
    rank_threads = {r: threading.Thread(target=rank_loop, args=(r,), daemon=True) for r in range(size)}
    th += list(rank_threads.values())
    th.append(threading.Thread(target=watch, daemon=True))
    t0 = time.monotonic()
    for t in th:
        t.start()
    while time.monotonic() - t0 < seconds and not stop.is_set():
        time.sleep(0.2)
    with lock:
        stop.set()
    # A real rank's request may still be in its retries (up to 5 s, then
    # one more of up to 10 s): its error is wanted in the report below.
    for t in th:
        t.join(30 if t in th[len(hostile):len(hostile) + size] else 15)
    dur = time.monotonic() - t0
    st, _, _ = pmi("status", job, 0, toks[0])

    def pct(v, p):
        v = sorted(v)
        return v[min(len(v) - 1, int(len(v) * p))] if v else float("nan")
    diag("soak: %.1f s, %d hostile threads, %d real ranks" % (dur, len(hostile), size))
    diag("thrown: " + ", ".join("%s %d" % kv for kv in sorted(thrown.items())))
    diag("answers to hostile clients: " + ", ".join("%s x%d" % (k, v) for k, v in
                                                   sorted(answers.items(), key=lambda kv: str(kv[0]))))
    diag("real ranks: %d barrier rounds of %d ranks; status p50 %.3f s max %.3f s; put p50 %.3f s max %.3f s; "
         "barrier max %.3f s; %d requests asked again after a 503 or a reset"
         % (rounds[0], size, pct(lat["status"], .5), max(lat["status"] or [0]),
            pct(lat["put"], .5), max(lat["put"] or [0]), max(lat["barrier"] or [0]), retries[0]))
    diag("server: peak %d descriptors, %d threads, %d KiB RSS; after: %d descriptors, %d threads"
         % (peak["fds"], peak["threads"], peak["rss"], server_fds(), server_threads()))
    log.flush()
    diag("server log: %d bytes (refusals are logged at most 20 a second)"
         % os.path.getsize(os.path.join(work, "server.log")))
    ok(not errors, "real ranks completed every request", "; ".join(errors[:5] + stacks))
    ok(rounds[0] >= 10, "real ranks kept passing barriers (%d rounds)" % rounds[0])
    lost = [ln for r in range(size) for ln in gave_up("%s/%d" % (job, r))]
    ok(lat["status"] and lat["put"] and not lost,
       "the server gave up on no real rank's request (its log)", "; ".join(lost[:5]))
    ok(st == 200 and peak["fds"] < PENDING + WORKERS + 32,
       "the job was never aborted and the server stayed within its descriptor bound")


# ================================================================ checks
def checks():
    print("1..20")
    # 1: files
    if legacy:
        ok(False, "token directory 0700 and token files 0600", "no tokens")
    else:
        modes = [stat.S_IMODE(os.stat(tokdir).st_mode)] + \
            [stat.S_IMODE(os.stat(os.path.join(tokdir, "node%d" % i)).st_mode) for i in range(NODES)]
        ok(modes[0] == 0o700 and all(m == 0o600 for m in modes[1:]),
           "token directory 0700 and token files 0600", "modes %s" % [oct(m) for m in modes])
    # 2: the secret and the tokens are not on the server's command line
    cl = open("/proc/%d/cmdline" % srv.pid, "rb").read().decode(errors="replace")
    creds = [JOB] if legacy else [secret] + [node_tok(i) for i in range(NODES)]
    ok(not any(c in cl for c in creds), "no credential on the server's command line")
    # 3: a group-readable secret is refused
    if legacy:
        ok(False, "a group-readable secret file is refused", "no secret file")
    else:
        bad = os.path.join(work, "bad-secret")
        with open(bad, "w") as f:
            f.write(secret)
        os.chmod(bad, 0o640)
        p = subprocess.run([sys.executable, A.server, "--rundir", run, "--www", run, "--export", run, "--nodes", "1",
                            "--jobid", "x", "--secret-file", bad, "--token-dir", os.path.join(work, "t2"),
                            "--limits", LIMITS], capture_output=True, text=True, timeout=30)
        ok(p.returncode != 0 and "0600" in p.stderr, "a group-readable secret file is refused",
           "rc %d: %s" % (p.returncode, p.stderr.strip()))

    job = JOB + ".c"
    toks = [rank_tok(job, r) for r in range(NODES)]
    ok(all(toks), "each node gets its rank's PMI token")
    st0, _, _ = pmi("put", job, 0, toks[0], body=putbody([("mine", "rank0")]))

    # 5: forged requests: no token, a wrong token, the job id alone (at a
    # job of their own, so that the checks after them see the real path)
    fjob = JOB + ".f"
    ftok = rank_tok(fjob, 0)
    forged = []
    for tok in ("", "0" * 64, "%C3%A9%00%FF"):
        for op, extra, body in (("put", "", b"mine forged\n"), ("barrier", "&size=1&epoch=1", b""),
                                ("abort", "&code=1&msg=forged", b""), ("status", "", b""),
                                ("get", "&key=mine", b"")):
            path = "/pmi/%s?job=%s&rank=0%s%s" % (op, fjob, "&token=" + tok if tok else "", extra)
            st, body, _ = req("POST" if op == "put" else "GET", path, body)
            forged.append((op, tok[:4], st))
    for path in ("/join?job=%s&node=0&lid=77&link=3" % JOB, "/ranks?job=%s&node=0" % JOB, "/cmd/node0.sh",
                 "/bin/prog", "/job?job=%s&node=0&after=0" % JOB, "/n/0/%s/ranks" % ("0" * 64),
                 "/n/0/%s/join?lid=77&link=3" % node_tok(1) if not legacy else "/n/0/x/join"):
        st, body, _ = req("GET", path, timeout=POLL_T + 8)
        forged.append((path[:12], "", st))
    st, body, _ = req("POST", "/result?job=%s&node=0&id=1&rc=0" % JOB, b"forged output\n")
    forged.append(("result", "", st))
    bad = [f for f in forged if f[2] != 403]
    ok(not bad, "requests without a credential, with a wrong one or with the job id alone are refused (403)",
       "answered: %s" % bad)
    st, body, _ = pmi("status", fjob, 0, ftok)
    ok(st == 200 and not os.path.exists(os.path.join(run, "pmi-abort")) and
       not os.path.exists(os.path.join(run, "joins", "node0")) and
       not os.path.exists(os.path.join(run, "jobs", "1.node0.rc")),
       "forged requests changed nothing (no abort, no join, no result)", "status %s" % st)

    # 7: a rank cannot act as another
    st1, _, _ = pmi("put", job, 0, toks[1], body=b"mine stolen\n")
    st2 = rank_tok(job, 0, node=1)
    st3, b3, _ = req("GET", node_pfx(1) + "/cmd/node0.sh")
    st4, b4, _ = req("GET", node_pfx(1) + "/cmd/node1.sh")
    ok(st0 == 200 and st1 == 403 and st2 is None and st3 != 200 and st4 == 200 and b"node 1" in b4,
       "a rank acts only as itself (another's token, rank or command refused)",
       "own put %s, put with rank 1's token %s, node 1 got rank 0's token %r, node 1 read node 0's command %s"
       % (st0, st1, st2, st3))

    # 8: the real path: join, files, barrier of every rank with every key
    st, _, _ = req("GET", node_pfx(2) + "/join?job=%s&node=2&lid=3&link=3&wid=0" % JOB)
    rec = open(os.path.join(run, "joins", "node2")).read() if os.path.exists(os.path.join(run, "joins", "node2")) else ""
    stf, bf, _ = req("GET", node_pfx(2) + "/bin/prog")
    ok(st == 200 and "lid=3 link=3" in rec and stf == 200 and bf == b"exported program\n",
       "a node joins and fetches an exported file with its credential", "join %s, file %s" % (st, stf))
    for r in range(1, NODES):
        pmi("put", job, r, toks[r], body=putbody([("k%d" % r, "v%d" % r)]))
    res = barrier_all(job, toks, 1)
    good = all(a and a[0] == 200 and b"k3 v3" in a[1] and b"mine rank0" in a[1] for a in res)
    ok(good, "all ranks pass a barrier and get every key", "%s" % [(a[0], a[1][:60]) if a else None for a in res])

    # 9-10: limits agree with pmi-limits.h; bad keys/values refused
    k_ok = "k" * (LIM["KEY_MAX"] - 1)
    st_a, _, _ = pmi("put", job, 1, toks[1], body=putbody([(k_ok, "v" * (LIM["VAL_MAX"] - 1))]))
    st_b, _, _ = pmi("put", job, 1, toks[1], body=putbody([("k" * LIM["KEY_MAX"], "v")]))
    st_c, _, _ = pmi("put", job, 1, toks[1], body=putbody([("big", "v" * LIM["VAL_MAX"])]))
    st_d, _, _ = pmi("put", job, 1, toks[1], body=putbody([("n%d" % i, "v") for i in range(LIM["PUT_KEYS"] + 1)]))
    ok(st_a == 200 and st_b == 400 and st_c == 400 and st_d == 400,
       "keys < %d bytes, values < %d, %d keys a put: the limits of pmi-limits.h"
       % (LIM["KEY_MAX"], LIM["VAL_MAX"], LIM["PUT_KEYS"]),
       "longest %s, key too long %s, value too long %s, too many keys %s" % (st_a, st_b, st_c, st_d))

    # 10: bodies: over the limit / negative / no job: refused at once, unread
    big = "POST /pmi/put?job=%s&rank=1&token=%s HTTP/1.0\r\nContent-Length: %d\r\n\r\n" % (job, toks[1], 100 << 20)
    r_big = raw(big.encode(), b"", timeout=3)
    neg = "POST /pmi/put?job=%s&rank=1&token=%s HTTP/1.0\r\nContent-Length: -1\r\n\r\n" % (job, toks[1])
    r_neg = raw(neg.encode(), b"", timeout=3)
    nojob = "POST /pmi/put?rank=1 HTTP/1.0\r\nContent-Length: %d\r\n\r\n" % (64 << 20)
    r_nojob = raw(nojob.encode(), b"", timeout=3)
    res_big = "POST %s/result?id=1&rc=0 HTTP/1.0\r\nContent-Length: %d\r\n\r\n" % (node_pfx(0), 1 << 34)
    r_res = raw(res_big.encode(), b"", timeout=3)
    ok(r_big[0] == 413 and r_neg[0] == 400 and r_nojob[0] == 403 and r_res[0] == 413,
       "an over-long body, a negative Content-Length, a body for no job: refused at once without reading",
       "answers %s %s %s %s" % (r_big[0], r_neg[0], r_nojob[0], r_res[0]))

    # 11-12: a slow reader of a big answer (8 MiB: more than the socket
    # buffers hold) stalls nobody
    for r in range(NODES):
        for c in range((LIM["RANK_KEYS"] - 16) // LIM["PUT_KEYS"]):
            pmi("put", job, r, toks[r], body=putbody([("big%d.%d.%d" % (r, c, i), "x" * (LIM["VAL_MAX"] - 1))
                                                       for i in range(LIM["PUT_KEYS"])]))
    barrier_all(job, toks, 2)
    # The biggest value a put gets in (16 MiB were, once), and two readers
    # that do not read: its get, and the barrier's answer.
    huge = pmi("put", job, 3, toks[3], body=putbody([("huge", "h" * (16 << 20))]), timeout=20)[0]
    slow_get = connect(rcvbuf=4096)
    slow_get.sendall(("GET /pmi/get?job=%s&rank=3&token=%s&key=huge HTTP/1.0\r\n\r\n" % (job, toks[3])).encode())
    slow = connect(rcvbuf=4096)
    slow.sendall(("GET /pmi/barrier?job=%s&rank=3&token=%s&size=%d&epoch=2 HTTP/1.0\r\n\r\n"
                  % (job, toks[3], NODES)).encode())
    time.sleep(0.5)
    answers = []
    for i in range(3):
        for op, body in (("status", None), ("put", putbody([("during%d" % i, "x")]))):
            st, _, _ = pmi(op, job, i % 3, toks[i % 3], body=body, timeout=30)
            answers.append(st)
    # (in the order of events, not by the clock: a server that served
    # the others only once it gave up on the stalled readers would log
    # their drop, at its I/O timeout, before the last answer came)
    early = gave_up("%s/3" % job)
    ok(all(a == 200 for a in answers) and not early,
       "while a rank reads neither its get nor an 8 MiB barrier answer, the others' status and put are "
       "answered before the server gives up on those readers",
       "16 MiB put %s; answers %s; gave up first: %s" % (huge, sorted(set(map(str, answers))), early))
    # Dropped: once the server gave up on it (its log says so, at its I/O
    # timeout; waited for up to 120 s: a hang guard), the reader finds the
    # answer cut short.
    for _ in range(1200):
        dropped = [ln for ln in gave_up("%s/3" % job) if "/pmi/barrier" in ln]
        if dropped:
            break
        time.sleep(0.1)
    data, closed = b"", False
    slow.settimeout(1.0)
    try:
        while len(data) < (64 << 20):
            d = slow.recv(1 << 20)
            if not d:
                closed = True
                break
            data += d
    except OSError:
        closed = True
    slow.close()
    slow_get.close()
    m = re.search(rb"Content-Length: (\d+)", data)
    i = data.find(b"\r\n\r\n")
    whole = m and i >= 0 and len(data) - i - 4 >= int(m.group(1))
    ok(dropped and closed and m and not whole,
       "a reader that does not read is dropped at the I/O timeout (%g s): its answer cut short" % IO_T,
       "server log %s, closed %s, %d bytes of an answer of %s" % (dropped, closed, len(data), m and m.group(1)))

    # 13-16: idle connections time out; a flood is capped; real ranks answered
    # (the client waits up to 60 s: a hang guard, not a measurement)
    idle = connect(timeout=60)
    try:
        d = idle.recv(1024)
    except socket.timeout:
        d = None
    idle.close()
    ok(d is not None and (d == b"" or b" 408 " in d),
       "an idle connection is closed by the server (its head timeout, %g s)" % HEAD_T, "got %r" % (d and d[:40]))
    flood, refused_503 = [], 0
    fds0 = server_fds()
    for i in range(1100):
        try:
            flood.append(connect(timeout=2))
        except OSError:
            break
    time.sleep(0.3)
    fds = server_fds()
    st, _, _ = pmi("status", job, 0, toks[0], timeout=30)
    sts = [pmi("status", job, r, toks[r], timeout=30)[0] for r in range(NODES)]
    for s in flood:
        s.setblocking(False)
        try:
            if b" 503 " in s.recv(200):
                refused_503 += 1
        except OSError:
            pass
    ok(len(flood) >= 1025, "1,025 and more idle connections are accepted (%d)" % len(flood))
    ok(fds < PENDING + 30, "the server holds at most --max-pending (%d) waiting connections" % PENDING,
       "%d descriptors (%d before)" % (fds, fds0))
    ok(refused_503 > 0, "connections over the cap are told 503", "%d of %d" % (refused_503, len(flood)))
    ok(st == 200 and all(s == 200 for s in sts),
       "real ranks are answered during the flood", "status %s; %s" % (st, sts))
    for s in flood:
        s.close()
    time.sleep(HEAD_T + 1)
    ok(server_fds() <= fds0 + 2, "the flood leaves no descriptor behind", "%d (%d before)" % (server_fds(), fds0))

    # 17: the real PMI library against the server
    lib = os.environ.get("DN2_PMI_LIB", os.path.join(top, "build", "linux-guest", "pmi", "libpmi-dn2.so"))
    if not os.path.exists(lib):
        ok(False, "libpmi-dn2.so: ranks through the library", "%s not built" % lib)
        return
    ljob = JOB + ".lib"
    ltoks = [rank_tok(ljob, r) for r in range(2)]
    outs = []
    for r in range(2):
        rd, wr = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(rd)
            os.environ.update({"DN2_PMI_URL": "http://127.0.0.1:%d" % PORT, "DN2_PMI_JOB": ljob,
                               "DN2_PMI_RANK": str(r), "DN2_PMI_SIZE": "2", "DN2_PMI_TOKEN": ltoks[r] or ""})
            msg = []
            try:
                L = ctypes.CDLL(lib)
                v = ctypes.c_int()
                msg.append("init %d" % L.PMI_Init(ctypes.byref(v)))
                L.PMI_KVS_Get_key_length_max(ctypes.byref(v))
                msg.append("keymax %d" % v.value)
                L.PMI_KVS_Get_value_length_max(ctypes.byref(v))
                msg.append("valmax %d" % v.value)
                name = ctypes.create_string_buffer(64)
                L.PMI_KVS_Get_my_name(name, 64)
                n = 100     # two puts: more than DN2_PMI_PUT_KEYS
                rc = [L.PMI_KVS_Put(name, b"r%d.%d" % (r, i), b"val-%d-%d" % (r, i)) for i in range(n)]
                msg.append("puts %d" % sum(1 for x in rc if x != 0))
                msg.append("longkey %d" % L.PMI_KVS_Put(name, b"k" * LIM["KEY_MAX"], b"v"))
                msg.append("longval %d" % L.PMI_KVS_Put(name, b"maxval", b"v" * (LIM["VAL_MAX"] - 1)))
                msg.append("commit %d" % L.PMI_KVS_Commit(name))
                msg.append("barrier %d" % L.PMI_Barrier())
                val = ctypes.create_string_buffer(LIM["VAL_MAX"])
                got = 0
                for i in range(n):
                    if L.PMI_KVS_Get(name, b"r%d.%d" % (1 - r, i), val, LIM["VAL_MAX"]) == 0 and \
                            val.value == b"val-%d-%d" % (1 - r, i):
                        got += 1
                msg.append("got %d" % got)
                # a cache miss: a get over HTTP (404 -> PMI_ERR_INVALID_KEY)
                msg.append("nokey %d" % L.PMI_KVS_Get(name, b"no-such-key", val, LIM["VAL_MAX"]))
                msg.append("fin %d" % L.PMI_Finalize())
            except Exception as e:
                msg.append("error %r" % e)
            os.write(wr, " ".join(msg).encode())
            os._exit(0)
        os.close(wr)
        outs.append((pid, rd))
    results = []
    for pid, rd in outs:
        data = b""
        t0 = time.monotonic()
        while time.monotonic() - t0 < 60:
            d = os.read(rd, 4096)
            if not d:
                break
            data += d
        os.waitpid(pid, 0)
        results.append(data.decode())
    want = ("init 0 keymax %d valmax %d puts 0 longkey %d longval 0 commit 0 barrier 0 got 100 nokey %d fin 0"
            % (LIM["KEY_MAX"], LIM["VAL_MAX"], 5, 4))
    ok(all(x == want for x in results),
       "two ranks through libpmi-dn2.so: the same limits, puts in two requests, barrier, gets, a get over HTTP",
       "%s (want %s)" % (results, want))


try:
    if A.soak > 0:
        soak(A.soak)
    else:
        checks()
finally:
    srv.kill()
    srv.wait()
    log.close()
    if failed:
        diag("server log (last lines):")
        diag("".join(open(os.path.join(work, "server.log")).readlines()[-15:]))
    shutil.rmtree(work, ignore_errors=True)
sys.exit(1 if failed else 0)
