"""python3 -m dn2scripts.cluster SCRIPT-PATH [SUBCOMMAND] ARGS...: the
subcommand's module (dn2scripts.cluster.SUBCOMMAND), or without one the
launcher (dn2scripts.cluster.launch); its exit status."""
import importlib
import sys

from .cli import run_main

SUBCOMMANDS = ("start", "exec", "console", "cp", "status", "list", "stop", "snapshot")


def main(argv=None):
    argv = sys.argv if argv is None else argv
    script, args = argv[1], argv[2:]
    if args and args[0] in SUBCOMMANDS:
        mod = importlib.import_module("dn2scripts.cluster." + args[0])
        return run_main(script, mod.main, args[1:])
    from . import launch
    return run_main(script, launch.main, args)


if __name__ == "__main__":
    sys.exit(main())
