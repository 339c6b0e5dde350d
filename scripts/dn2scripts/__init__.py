"""The scripts' Python (standard library only): each module is one program
that a shell script runs as

    PYTHONPATH=scripts python3 -m dn2scripts.MODULE ARGS...

with the interpreter that script always used, and whose main(argv) the unit
tests in tests/scripts/py/ call without booting anything.

  alternatives    build-initramfs.sh: the packages' update-alternatives links
  bench_table     bench.sh: the table from the raw figures
  board_stats     cluster.sh --board-stats: board counters once a second
  cluster         cluster.sh's subcommands, a package: one module each
  cluster_result  cluster.sh: result.json and the JUnit file
  console         cluster.sh console: a raw terminal to a node's shell
  free_udp_ports  cluster.sh --ethernet, bench-cluster.sh: free UDP ports
  lock_profile    bench-cluster.sh --lock-profile: QEMU lock statistics
  mpi_export      mpirun.sh, cluster.sh --mpi: the MPI image's /opt/dn2
  mpirun          mpirun.sh: options, plan, node script, launch
  mpirun_stream   mpirun.sh: the ranks' output, result.json, JUnit
  restore         cluster.sh restore: every node loads its state
  snapshot        cluster.sh snapshot: a consistent cut of every node
  test_summary    test.sh: TAP test points counted over every test
  vt_cut          cluster.sh --snapshot-at: every node run to the cut
"""
