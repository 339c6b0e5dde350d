/*
 * mpi-fail: a job that fails on purpose (tests/mpi/mpi-test.sh).
 *   mpi-fail abort      rank 1 calls MPI_Abort(MPI_COMM_WORLD, 7); the
 *                       others wait in MPI_Recv for a message that never
 *                       comes
 *   mpi-fail exit       rank 1 exits with status 3 without MPI_Finalize;
 *                       the others wait likewise
 *   mpi-fail midstream  the lower half of the ranks stream 1 MiB messages
 *                       (MPI_Isend, 4 in flight) to the upper half (rank r
 *                       to r + size/2, so with one or two ranks per node
 *                       the streams cross the fabric); the last rank takes
 *                       two messages whole, posts the third and exits with
 *                       status 3 while its bytes are arriving; the other
 *                       streams go on until the job is ended
 * Every rank prints "rank R waiting" first, so that the test can check
 * that the failing job's output is shown.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MSG (1 << 20)
#define WINDOW 4

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int midstream(int rank, int size)
{
    int half = size / 2, w, n;
    char *buf;
    MPI_Request rq[WINDOW];

    if (size < 2 || size % 2) {
        fprintf(stderr, "mpi-fail midstream: wants an even number of ranks, not %d\n", size);
        return 2;
    }
    buf = malloc((size_t)MSG * WINDOW);
    if (!buf) {
        return 2;
    }
    memset(buf, 0x5a, (size_t)MSG * WINDOW);
    if (rank < half) {
        /* stream until the job is ended (a bound keeps a broken launcher
         * from leaving it running for ever) */
        for (w = 0; w < WINDOW; w++) {
            MPI_Isend(buf + (size_t)w * MSG, MSG, MPI_BYTE, rank + half, 5, MPI_COMM_WORLD, &rq[w]);
        }
        for (n = WINDOW; n < 100000; n++) {
            w = n % WINDOW;
            MPI_Wait(&rq[w], MPI_STATUS_IGNORE);
            MPI_Isend(buf + (size_t)w * MSG, MSG, MPI_BYTE, rank + half, 5, MPI_COMM_WORLD, &rq[w]);
        }
        return 0;
    }
    if (rank == size - 1) {
        double t0;
        int done = 0;
        MPI_Recv(buf, MSG, MPI_BYTE, rank - half, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Recv(buf, MSG, MPI_BYTE, rank - half, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Irecv(buf, MSG, MPI_BYTE, rank - half, 5, MPI_COMM_WORLD, &rq[0]);
        /* a few ms of the third message's bytes landing, then gone */
        t0 = now();
        while (now() - t0 < 0.005 && !done) {
            MPI_Test(&rq[0], &done, MPI_STATUS_IGNORE);
        }
        printf("rank %d dies mid-stream (2 MiB taken, the third message %s)\n", rank,
               done ? "complete" : "arriving");
        fflush(stdout);
        _exit(3);
    }
    for (n = 0; n < 100000; n++) {
        MPI_Recv(buf, MSG, MPI_BYTE, rank - half, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    return 0;
}

int main(int argc, char **argv)
{
    int rank, size, v;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    printf("rank %d waiting\n", rank);
    fflush(stdout);
    MPI_Barrier(MPI_COMM_WORLD);
    if (argc > 1 && !strcmp(argv[1], "midstream")) {
        v = midstream(rank, size);
        MPI_Finalize();
        return v;
    }
    if (rank == 1) {
        if (argc > 1 && !strcmp(argv[1], "exit"))
            exit(3);
        MPI_Abort(MPI_COMM_WORLD, 7);
    }
    MPI_Recv(&v, 1, MPI_INT, MPI_ANY_SOURCE, 99, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Finalize();
    return 0;
}
