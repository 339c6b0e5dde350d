"""scripts/cluster.sh, a thin entry point to this package: a cluster of
DIMMnet-2 guests (docs/cluster.md; the options are in cluster.sh's header,
which --help prints).

    python3 -m dn2scripts.cluster SCRIPT-PATH ARGS...

SCRIPT-PATH is cluster.sh as it was called ($0): --help prints its header
and usage errors name it.  Without a subcommand, the launcher:

  options    the options: parse() and check() (usage errors, exit 2)
  plan       the launch plan as pure functions of the options: the switch,
             the Ethernet hub, the job server, every node's QEMU, the info
             file, the --replay record
  launch     runs the plan: programs, run directory, processes, the watch
             over the consoles, the summary and result.json, the teardown
  restore    the restore path (start NAME --from TAG; a --snapshot-at
             snapshot's replay)
  vt         the virtual-time path (--virtual-time, --replay, --snapshot-at)
  lib        the helpers of scripts/lib.sh it shares with other scripts
  reaper     kills the run's process groups if the launcher is SIGKILLed

One module per subcommand, each with a main(script, args) that returns the
exit status:

  start      start NAME [options]: the launcher in the background, until
             every node serves jobs
  exec       exec NAME CMD: a job on every node (or one)
  console    console NAME I: a shell on node I
  cp         cp NAME SRC DEST: files between the host and the nodes
  status     status [NAME]: nodes, links, counters
  list       list: every cluster in build/cluster
  stop       stop NAME: the launcher and whatever is left of the run
  snapshot   snapshot NAME TAG: a consistent cut of a kept cluster

and the pieces they share:

  cli        the conventions: usage errors (exit 2), set-up errors (exit 4),
             --help, "--opt=value", the [cluster] lines and their colours
  rundir     a run directory: its info file, the nodes' state, whether the
             launcher runs, what is left of it
  jobs       the job queue the job server hands to the guests
"""
