"""cluster.sh's command-line conventions (lib.sh's, for every script):
--help prints the header of cluster.sh and exits 0 before any work, a usage
error is one line "cluster.sh: MESSAGE (see --help)" and exit 2, a set-up
error "[cluster] error: MESSAGE" and exit 4; "--opt=value" is "--opt value".
"""
import os
import sys


class Usage(Exception):
    """A usage error: "cluster.sh: MESSAGE (see --help)", exit 2."""


class Fail(Exception):
    """A set-up error: "[cluster] error: MESSAGE", exit 4."""


class Exit(Exception):
    """Ends the subcommand with this status (after its own messages)."""

    def __init__(self, status):
        super().__init__(status)
        self.status = status


class Help(Exception):
    """-h/--help: cluster.sh's header on stdout, exit 0."""


def colours(tty):
    """(bold, green, red, yellow, normal): escapes when stderr is a terminal
    (cluster.sh's "[ -t 2 ]"), else empty."""
    if tty:
        return "\x1b[1m", "\x1b[32m", "\x1b[31m", "\x1b[33m", "\x1b[0m"
    return "", "", "", "", ""


B, G, R, Y, N = colours(sys.stderr.isatty())


def say(msg):
    sys.stderr.write("[cluster] %s\n" % msg)
    sys.stderr.flush()


def usage_text(script):
    """The script's header comment, from its second line to the first line
    that is not a comment, without the "# " (lib.sh's dn2_usage)."""
    out = []
    with open(script, encoding="utf-8", errors="surrogateescape") as f:
        for n, line in enumerate(f):
            if n == 0:
                continue
            if not line.startswith("#"):
                break
            line = line[1:]
            out.append(line[1:] if line.startswith(" ") else line)
    return "".join(out)


def is_uint(v):
    return v != "" and all("0" <= c <= "9" for c in v)


def want_uint(opt, v):
    if not is_uint(v):
        raise Usage("%s wants a whole number, not '%s'" % (opt, v))


def need_value(a):
    """A usage error unless a[0] has a non-empty value after it."""
    if len(a) < 2 or a[1] == "":
        raise Usage("%s needs a value" % a[0])


def need_arg(a):
    """The same, but an empty value is allowed."""
    if len(a) < 2:
        raise Usage("%s needs a value" % a[0])


def split_eq(a, names=None):
    """When a[0] is "--opt=value" (and --opt one of NAMES, if given): a[0]
    split into "--opt" "value" in place; True when it was."""
    x = a[0]
    if x.startswith("--") and len(x) > 3 and "=" in x[3:]:
        k, v = x.split("=", 1)
        if names is None or k in names:
            a[0:1] = [k, v]
            return True
    return False


def run_main(script, fn, args):
    """FN(script, args) under the conventions: its exit status."""
    prog = os.path.basename(script)
    try:
        return fn(script, args) or 0
    except Help:
        sys.stdout.write(usage_text(script))
        sys.stdout.flush()
        return 0
    except Usage as e:
        sys.stdout.flush()
        sys.stderr.write("%s: %s (see --help)\n" % (prog, e))
        return 2
    except Fail as e:
        sys.stdout.flush()
        sys.stderr.write("[cluster] %serror:%s %s\n" % (R, N, e))
        return 4
    except Exit as e:
        sys.stdout.flush()
        return e.status
