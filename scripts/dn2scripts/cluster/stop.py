"""cluster.sh stop NAME: the launcher of cluster NAME tears it down (QEMUs,
switch, job server, pollers) and writes result.json; whatever is left of
the run is killed.  Says which node had died and why (exit 3 then); a
cluster that was not running: exit 0.
"""
import os
import signal
import time

from .cli import R, N, Exit, Fail, Help, Usage, say
from .rundir import CLUSTER_DIR, info_int, info_of, is_cluster, node_state, pid_alive, run_state, sweep, valid_name


def parse(args):
    if args and args[0] in ("-h", "--help"):
        raise Help()
    if len(args) != 1:
        raise Usage("stop: one NAME, not '%s'" % " ".join(args))
    valid_name(args[0], "stop")
    return args[0]


def main(script, args):
    name = parse(args)
    d = os.path.join(CLUSTER_DIR, name)
    if not is_cluster(name):
        raise Fail("no cluster named '%s' (scripts/cluster.sh list shows them)" % name)
    info = info_of(d)
    lp = info_int(info, "launcher_pid")
    was = run_state(d)
    if was == "running":
        # The launcher tears everything down and writes result.json;
        # SIGKILL if it hangs (its reaper then kills the groups).
        try:
            os.kill(lp, signal.SIGTERM)
        except OSError:
            pass
        for _ in range(300):
            if not pid_alive(lp):
                break
            time.sleep(0.1)
        if pid_alive(lp):
            say("the launcher (pid %d) did not stop in 30 s: SIGKILL" % lp)
            try:
                os.kill(lp, signal.SIGKILL)
            except OSError:
                pass
            time.sleep(1.5)
    n = sweep(d)
    if n > 0:
        say("killed %d process group%s left of %s" % (n, "" if n == 1 else "s", name))
    dead = 0
    for i in range(info_int(info, "nodes")):
        ph, _, _, why = node_state(d, i)
        if ph == "failed":
            say("node%d had %sdied%s: %s" % (i, R, N, why))
            dead += 1
    if was == "running":
        say("cluster %s stopped%s; nothing of it runs"
            % (name, " (%d node%s had died)" % (dead, "" if dead == 1 else "s") if dead else ""))
    else:
        say("cluster %s was not running%s" % (name, "; its leftovers are gone" if n else ""))
    if os.path.isfile(os.path.join(d, "result.json")):
        say("result: %s" % os.path.join(d, "result.json"))
    # (a death is news only to the stop that ended the cluster)
    raise Exit(3 if dead and was == "running" else 0)
