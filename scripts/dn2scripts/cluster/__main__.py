"""python3 -m dn2scripts.cluster SCRIPT-PATH [SUBCOMMAND] ARGS...: the
subcommand's module (dn2scripts.cluster.SUBCOMMAND), its exit status."""
import importlib
import os
import sys

from .cli import run_main

SUBCOMMANDS = ("start", "exec", "console", "cp", "status", "list", "stop", "snapshot")


def main(argv=None):
    argv = sys.argv if argv is None else argv
    script, args = argv[1], argv[2:]
    if not args or args[0] not in SUBCOMMANDS:
        sys.stderr.write("%s: dn2scripts.cluster runs a subcommand (%s)\n" % (os.path.basename(script), ", ".join(SUBCOMMANDS)))
        return 2
    mod = importlib.import_module("dn2scripts.cluster." + args[0])
    return run_main(script, mod.main, args[1:])


if __name__ == "__main__":
    sys.exit(main())
