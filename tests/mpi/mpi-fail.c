/*
 * mpi-fail: a job that fails on purpose (tests/mpi/mpi-test.sh).
 *   mpi-fail abort   rank 1 calls MPI_Abort(MPI_COMM_WORLD, 7); the others
 *                    wait in MPI_Recv for a message that never comes
 *   mpi-fail exit    rank 1 exits with status 3 without MPI_Finalize; the
 *                    others wait likewise
 * Every rank prints "rank R waiting" first, so that the test can check
 * that the failing job's output is shown.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    int rank, v;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    printf("rank %d waiting\n", rank);
    fflush(stdout);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 1) {
        if (argc > 1 && !strcmp(argv[1], "exit"))
            exit(3);
        MPI_Abort(MPI_COMM_WORLD, 7);
    }
    MPI_Recv(&v, 1, MPI_INT, MPI_ANY_SOURCE, 99, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Finalize();
    return 0;
}
