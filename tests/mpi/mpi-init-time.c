/*
 * mpi-init-time: how long a rank spends starting and ending (scripts/
 * bench-mpi-init.sh).  Each rank reads CLOCK_MONOTONIC around MPI_Init and
 * around MPI_Finalize and prints one line,
 *
 *   init-time RANK SIZE INIT_US BARRIER_US FINALIZE_US
 *
 * INIT_US: MPI_Init (the rank's start through the process manager: the
 * PMIx or PMI-1 client's setup and the job's first fence, with each rank's
 * addresses); BARRIER_US: one MPI_Barrier after it (over the job's
 * network, for scale); FINALIZE_US: MPI_Finalize (Open MPI's closing
 * fence, without data, and the teardown).  The launcher starts the ranks
 * of a job at about the same moment, so the slowest rank's INIT_US is the
 * job's start time.
 */
#include <mpi.h>
#include <stdio.h>
#include <time.h>

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

int main(int argc, char **argv)
{
    double t0, t1, t2, t3, t4;
    int rank, size;

    t0 = now_us();
    if (MPI_Init(&argc, &argv) != MPI_SUCCESS) {
        fprintf(stderr, "mpi-init-time: MPI_Init failed\n");
        return 1;
    }
    t1 = now_us();
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Barrier(MPI_COMM_WORLD);
    t2 = now_us();
    t3 = now_us();
    MPI_Finalize();
    t4 = now_us();
    printf("init-time %d %d %.0f %.0f %.0f\n", rank, size, t1 - t0, t2 - t1, t4 - t3);
    return 0;
}
