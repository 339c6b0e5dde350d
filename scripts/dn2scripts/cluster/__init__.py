"""scripts/cluster.sh: a cluster of DIMMnet-2 guests (docs/cluster.md; the
options are in cluster.sh's header, which --help prints).

    python3 -m dn2scripts.cluster SCRIPT-PATH ARGS...

SCRIPT-PATH is cluster.sh as it was called ($0): --help prints its header
and usage errors name it.  One module per subcommand, each with a main(script,
args) that returns the exit status:

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
