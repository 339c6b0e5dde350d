"""A cluster snapshot: the boards held, every node migrated, run again (cluster.sh snapshot; cluster.sh --snapshot-at after the cut).

  snapshot.py SCRIPTS-DIR [--stopped S] TAGDIR RUNDIR DRAIN-S QMP-SOCKET...

The cut: every vCPU stopped, then every board held (snapshot-hold) once the
fabric has drained.  Without --stopped the vCPUs stay stopped until the
boards can be held or DRAIN-S seconds have passed (virtual time: the nodes
stand at their cut and must not run).  With --stopped S an attempt keeps
the vCPUs stopped at most S seconds; if the fabric has not drained by then
(a receiver's status ring, LH Buffer or IPUSH ring is full, and only its
guest empties it), every guest runs again (run_between: 0.5 s, doubling up
to 4 s) and the cut is tried anew, until DRAIN-S seconds have passed in all.
"""
import os, sys, time

RUN_BETWEEN_S = 0.5     # the guests run this long after the first attempt at a cut,
RUN_BETWEEN_MAX_S = 4   # twice as long after each next one, up to this


def run_between(attempts):
    """How long the guests run after attempt ATTEMPTS (1, 2, ...) failed."""
    return min(RUN_BETWEEN_S * 2 ** min(attempts - 1, 16), RUN_BETWEEN_MAX_S)


def main(argv=None):
    argv = sys.argv if argv is None else argv
    sys.dont_write_bytecode = True
    sys.path.insert(0, argv[1])
    from qmp import connect, dimmnet2_boards, cmd_all
    args = argv[2:]
    stopped_s = None
    if args[:1] == ["--stopped"]:
        stopped_s, args = float(args[1]), args[2:]
    tagdir, rundir, drain_s, socks = args[0], args[1], float(args[2]), args[3:]
    def say(m): print("[cluster] " + m, file=sys.stderr, flush=True)
    try:
        qs = [connect(p, timeout=60) for p in socks]
    except OSError as e:
        say("error: cannot reach a node's QMP socket: %s" % e); sys.exit(4)
    boards = [dimmnet2_boards(q) for q in qs]
    def run_all():
        cmd_all(qs, "cont")
    def hold(on):
        errs = []
        for i, (q, bs) in enumerate(zip(qs, boards)):
            for b in bs:
                r = q.cmd("qom-set", {"path": b, "property": "snapshot-hold", "value": on})
                if "error" in r: errs.append("node%d: %s" % (i, r["error"]["desc"]))
        return errs
    t0 = time.monotonic()
    attempts = 0
    while True:
        attempts += 1
        t_try = time.monotonic()
        for q in qs: q.cmd("stop")
        t_stop = time.monotonic()
        while True:
            errs = hold(True)
            if not errs: break
            hold(False)
            now = time.monotonic()
            if now - t0 > drain_s:
                run_all()
                if stopped_s is None:
                    say("error: no consistent cut: the fabric did not drain in %g s with every vCPU stopped "
                        "(a receiver that cannot take its packets holds them back):" % drain_s)
                else:
                    say("error: no consistent cut in %g s: the fabric did not drain in any of %d attempts "
                        "(every vCPU stopped up to %g s each, the guests running %g-%g s between; a "
                        "receiver that does not take its packets holds them back):"
                        % (drain_s, attempts, stopped_s, RUN_BETWEEN_S, RUN_BETWEEN_MAX_S))
                for e in errs[:8]: say("  " + e)
                sys.exit(3)
            if stopped_s is not None and now - t_stop > stopped_s:
                break
            time.sleep(0.05)
        if not errs: break
        # (what only a guest takes, a full status ring, LH Buffer or IPUSH
        # ring, is taken while it runs; then every vCPU stops again)
        run_all()
        time.sleep(run_between(attempts))
    t_held = time.monotonic()
    if os.environ.get("DN2_SNAP_QUEUED"):
        # (virtual time: the packets sent before the cut and due after it, per
        # node, counted once the fabric has drained them into their receivers)
        print("queued='%s'" % " ".join(str(sum(q.cmd("qom-get", {"path": b, "property": "vt-queued"}).get("return", 0)
                                               for b in bs)) for q, bs in zip(qs, boards)))
    for i, q in enumerate(qs):
        r = q.cmd("migrate", {"uri": "file:%s/node%d.mig" % (tagdir, i)})
        if "error" in r:
            hold(False); run_all()
            say("error: node%d: migrate: %s" % (i, r["error"]["desc"])); sys.exit(1)
    failed = []
    for i, q in enumerate(qs):
        while True:
            r = q.cmd("query-migrate")["return"]
            if r.get("status") == "completed": break
            if r.get("status") in ("failed", "cancelled"):
                failed.append("node%d: %s" % (i, r.get("error-desc", r.get("status")))); break
            time.sleep(0.05)
    t_saved = time.monotonic()
    # The consoles as they are at the cut (the guests print nothing while
    # stopped; a restored console goes on from there).
    for i in range(len(qs)):
        try:
            with open("%s/node%d.log" % (rundir, i), "rb") as f, open("%s/node%d.log" % (tagdir, i), "wb") as g:
                g.write(f.read().replace(b"\r", b""))
        except OSError as e:
            failed.append("node%d: its console: %s" % (i, e))
        # (virtual time: the boards' delivery traces up to the cut)
        try:
            with open("%s/node%d.pcap" % (rundir, i), "rb") as f, open("%s/node%d.pcap" % (tagdir, i), "wb") as g:
                g.write(f.read())
        except FileNotFoundError:
            pass
        except OSError as e:
            failed.append("node%d: its pcap: %s" % (i, e))
    hold(False); run_all()
    if failed:
        for f in failed: say("error: the migration of " + f)
        sys.exit(1)
    print("stopped_s=%.2f drained_s=%.2f saved_s=%.2f attempts=%d" % (t_stop - t_try, t_held - t_stop, t_saved - t_held,
                                                                       attempts))


if __name__ == "__main__":
    main()
