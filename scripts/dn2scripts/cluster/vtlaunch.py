"""The launcher in virtual time (--virtual-time, --replay, --snapshot-at;
docs/cluster.md, "Virtual time"): the steps where it differs from a run in
host time (launch.Launcher).  No job server and no network: each node's
command and the rank table are in the image's input (plan.py), the QEMUs
run under -icount, the switch holds the boards in lock-step; a --replay
takes the recorded programs and image and ends by comparing its outputs
and packets with the recorded run's (vt.py).
"""
import os
import re
import sys

from . import lib, options, plan, restore, vt
from .cli import B, R, N, Fail, say
from .launch import Launcher, read_text
from .rundir import SNAP_DIR


class VtLauncher(Launcher):
    def find_programs(self):
        """A replay runs the recorded QEMU, kernel, switch and globals."""
        o, ctx = self.o, self.ctx
        if not o.replay_dir:
            return super().find_programs()
        ctx.qemu_bin, ctx.kernel, ctx.switch_bin, ctx.device_globals = vt.read_programs(o.replay_dir)
        for f in (ctx.qemu_bin, ctx.kernel, ctx.switch_bin, os.path.join(o.replay_dir, "initramfs.cpio.lz4")):
            if not os.path.exists(f):
                raise Fail("--replay: %s (recorded in %s/replay/programs) is gone" % (f, o.replay_dir))

    def recorded_image(self):
        o = self.o
        return os.path.join(o.replay_dir, "initramfs.cpio.lz4") if o.replay_dir else ""

    def check_accel(self):
        """-icount, and a QEMU (and a switch, when the boards synchronise)
        that can run in virtual time."""
        o, ctx = self.o, self.ctx
        try:
            ctx.accel_args, self.accel_name = plan.accel(self.env, True, o.vt_shift, o.vt_insn_ps,
                                                         kvm_usable=False)
        except ValueError as e:
            raise Fail(str(e))
        rc, _, err = lib.call("dn2_vt_capable", ctx.qemu_bin, *([ctx.switch_bin] if o.vt_sync else []))
        if rc:
            raise Fail("--virtual-time: " + err)

    def load_snapshot(self):
        """A replay from a --snapshot-at snapshot."""
        o = self.o
        options.check_serve_dir(o)
        if o.vsnap:
            self.snap = restore.load_vt(o)

    def seed_rundir(self):
        """The boards' LIDs (fixed: no subnet manager's join) and what a
        replay needs (replay/)."""
        o, ctx = self.o, self.ctx
        ctx.lids = []
        for i in range(self.nodes):
            rc, lid, err = lib.call("dn2_clid_to_lid", i + 1)
            if rc:
                raise Fail("cannot compute the LIDs from include/dimmnet2/dn2_abi.h")
            ctx.lids.append(int(lid))
        vt.record(o, ctx, o.replay_dir)

    def start_services(self):
        """No job server: nothing of the host reaches a guest."""

    def node_input(self, i):
        with open(os.path.join(self.rundir, "input", "node%d.sh" % i), "w", errors="surrogateescape") as f:
            f.write(plan.node_command(self.o, i).rstrip("\n") + "\n")

    def nodes_started(self):
        """--snapshot-at: the helper that cuts every node at that virtual time."""
        o = self.o
        if o.snap_at:
            self.snap_helper = vt.Helper(vt.snapshot_at, o, self.ctx, self.nodes, [p.pid for p in self.qemu],
                                         self.socks(), SNAP_DIR, self.module_env())

    def banner_mode(self):
        o, r = self.o, self.rundir
        what = "insn-ps=" + o.vt_insn_ps if o.vt_insn_ps else "shift=" + o.vt_shift
        sync = ("boards in lock-step (lookahead %s ns%s)" % (o.vt_lookahead, ", quantum %s ns" % o.vt_quantum
                                                              if o.vt_quantum else "")
                if o.vt_sync else "boards NOT synchronised (--no-vt-sync)")
        say("virtual time: -icount %s, %s; no network, no job server; rank table: %s/input/ranks" % (what, sync, r))
        if o.gdb_node:
            say("%snode%s waits for gdb%s (the others wait for it in virtual time):" % (B, o.gdb_node, N))
            say("  gdb -ex 'target remote 127.0.0.1:%s' VMLINUX   (then: break ..., continue)" % o.gdb_port)

    def restored_up(self):
        """A snapshot of a virtual-time run resumes mid-run: its nodes'
        phases come from their consoles, as in a boot."""
        return False

    def round_done(self):
        """The rank table was known at boot; every node checked it."""
        if not self.t_ranks and sum(1 for p in self.phase if p in ("ranks", "running", "done")) == self.nodes:
            self.t_ranks = self.elapsed_f()

    def progress_line(self):
        """The switch's last "vt:" line (the lock-step's progress)."""
        if not self.o.vt_sync:
            return None
        lines = [l for l in read_text(os.path.join(self.rundir, "switch.log")).split("\n") if "vt: " in l]
        return lines[-1] if lines else ""

    def timeout_detail(self):
        """The lock-step's virtual time and the node that holds it back:
        the switch's last "vt:" line ("cluster at T s (slowest LID L ...")
        with L as the node that has it."""
        m = re.search(r"cluster at ([0-9.]+) s \(slowest LID 0x([0-9a-fA-F]+)", self.progress_line() or "")
        if not m:
            return ""
        lid = int(m.group(2), 16)
        who = ["node%d" % i for i in range(self.nodes) if str(self.lid[i]).isdigit() and int(self.lid[i]) == lid]
        return "; virtual time %s s, the slowest %s (LID 0x%04x)" % (m.group(1), who[0] if who else "board", lid)

    def before_end(self):
        """The switch's counters while it still runs (scripts/bench-vt.sh),
        the --snapshot-at helper's end, a snapshot replay's joined pcaps."""
        o, r = self.o, self.rundir
        if self.switch.poll() is None:
            ok, text = self.switch_stats(10)
            with open(os.path.join(r, "switch.stats"), "w") as f:
                f.write(text + "\n" if text else "")
        if self.snap_helper is not None:
            if os.path.isfile(os.path.join(r, "snapshot.cut")):
                self.snap_helper.wait()
            else:
                self.snap_helper.kill()
                self.snap_helper.wait()
                say("%sno snapshot%s: the run ended before virtual time %s s (--snapshot-at)" % (R, N, o.snap_at))
            self.snap_helper = None
        if o.vsnap:
            vt.join_pcaps(o.vsnap, r, self.nodes)

    def end_status(self, status):
        """A replay: the same outputs and the same packets as the recorded run."""
        o, r = self.o, self.rundir
        cmp_dir = o.replay_dir
        if o.vsnap:
            cmp_dir = self.snap.source
            if not os.path.isdir(cmp_dir):
                say("the run the snapshot was taken from (%s) is gone: nothing to compare with" % cmp_dir)
                cmp_dir = ""
        if cmp_dir and not self.interrupted:
            same, out = vt.compare(self.ctx.py, cmp_dir, r, self.nodes)
            if same:
                say("replay%s: every node's output%s identical to %s's" % (
                    " from virtual time %s s" % self.snap.cut_s if o.vsnap else "", " and pcap" if o.vt_sync else "",
                    cmp_dir))
            else:
                lines = out.split("\n")
                say("%sreplay differs%s from %s: %s" % (R, N, cmp_dir, lines[0]))
                for l in lines[1:]:
                    sys.stderr.write("[cluster]   %s\n" % l)
                status = status or 5
        say("run it again: %sscripts/cluster.sh --replay %s%s" % (B, r, N))
        say("  node I under gdb at the same virtual time: scripts/cluster.sh --replay %s --gdb I" % r)
        return status
