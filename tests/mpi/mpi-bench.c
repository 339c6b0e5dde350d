/*
 * mpi-bench: the figures of scripts/bench-mpi.sh (docs/mpi.md), measured
 * between ranks 0 and 1 (ping-pong) and over all ranks (allreduce):
 *   lat8_us        half the round trip of an 8-byte ping-pong (median of runs)
 *   bw1m_MBps      1 MiB messages streamed from rank 0 to 1 (window of 8,
 *                  acknowledged), MB/s (10^6 bytes per second)
 *   allreduce8_us  MPI_Allreduce of one double, median of the calls (as the
 *                  latency: a rare stall does not hide the typical cost)
 *   allreduce8_mean_us, allreduce8_max_us  the mean and the slowest call
 *   allreduce1m_us MPI_Allreduce of 131072 doubles (1 MiB), mean
 *   payload_bytes  the bytes all ranks handed to MPI to send (ping-pong and
 *                  stream; the allreduces not counted)
 * Every figure is printed by rank 0 as "figure NAME VALUE".  The data are
 * checked (a wrong byte fails the run).
 *
 *   mpi-bench [ITERATIONS] [--trace[=CALLS]]
 *   mpi-bench --stream SECS
 *     ITERATIONS   ping-pongs (default 200; the others scale)
 *     --stream SECS  only the 1 MiB stream from rank 0 to rank 1 (windows
 *                  of 8, each acknowledged; the data checked), for SECS
 *                  seconds after a warm-up of 2 windows: rank 0 decides
 *                  after each window whether to go on and tells rank 1.
 *                  Rank 0 prints, each line flushed at once, "mark
 *                  stream-begin" before the timed part and "mark
 *                  stream-end" after it (scripts/host-cpu.py samples the
 *                  host's CPU between the two), then "figure stream_MBps X"
 *                  and "figure stream_mib N" (the MiB moved in the timed
 *                  part) and "data checked" (or WRONG)
 *     --trace      the 8-byte allreduce loop runs CALLS calls (default
 *                  ITERATIONS) and every rank prints its calls slower than
 *                  4x the median (and at least 1 ms) as "trace" lines: the
 *                  call's index, its start from the loop's start, its wall
 *                  time, the rank's CPU time in it and its voluntary and
 *                  involuntary context switches in it (wall time well above
 *                  the CPU time: the rank was off its CPU inside the guest)
 */
#define _GNU_SOURCE     /* RUSAGE_THREAD */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* One call of the 8-byte loop as --trace records it. */
struct call {
    double start, wall, cpu;
    long vcsw, ivcsw;
};

/* --stream: 1 MiB messages from rank 0 to rank 1 for SECS seconds; ranks
 * above 1 only wait.  Returns nonzero when a byte arrived wrong. */
static int stream(int rank, double secs)
{
    const int big = 1 << 20, window = 8;
    char *buf = malloc((size_t)big * window);
    int go = 1, bad = 0;
    char ack = 0;
    long mib = 0;
    double t0 = 0, t = 0;

    for (int i = 0; i < big * window; i++)
        buf[i] = (char)(rank == 0 ? i * 7 + 3 : 0);
    MPI_Barrier(MPI_COMM_WORLD);
    /* 2 windows of warm-up, then the timed windows until rank 0 says stop */
    for (int n = -2; go && rank <= 1; n++) {
        MPI_Request rq[8];
        if (n == 0) {
            if (rank == 0) {
                printf("mark stream-begin\n");
                fflush(stdout);
            }
            t0 = MPI_Wtime();
        }
        if (rank == 0) {
            for (int w = 0; w < window; w++)
                MPI_Isend(buf + (size_t)w * big, big, MPI_BYTE, 1, 2, MPI_COMM_WORLD, &rq[w]);
            MPI_Waitall(window, rq, MPI_STATUSES_IGNORE);
            MPI_Recv(&ack, 1, MPI_BYTE, 1, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            if (n >= 0) {
                mib += window;
                t = MPI_Wtime() - t0;
                go = t < secs;
            }
            MPI_Send(&go, 1, MPI_INT, 1, 4, MPI_COMM_WORLD);
        } else {
            for (int w = 0; w < window; w++)
                MPI_Irecv(buf + (size_t)w * big, big, MPI_BYTE, 0, 2, MPI_COMM_WORLD, &rq[w]);
            MPI_Waitall(window, rq, MPI_STATUSES_IGNORE);
            MPI_Send(&ack, 1, MPI_BYTE, 0, 3, MPI_COMM_WORLD);
            MPI_Recv(&go, 1, MPI_INT, 0, 4, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        }
    }
    if (rank == 0) {
        printf("mark stream-end\n");
        fflush(stdout);
    }
    if (rank == 1)
        for (int i = 0; i < big * window; i++)
            bad |= buf[i] != (char)(i * 7 + 3);
    int anybad;
    MPI_Allreduce(&bad, &anybad, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD);
    if (rank == 0) {
        printf("figure stream_MBps %.1f\n", t > 0 ? (double)mib * big / t / 1e6 : 0.0);
        printf("figure stream_mib %ld\n", mib);
        printf("data %s\n", anybad ? "WRONG" : "checked");
        fflush(stdout);
    }
    free(buf);
    return anybad;
}

int main(int argc, char **argv)
{
    int rank, size, iters = 200, trace = 0;
    double secs = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (int a = 1; a < argc; a++) {
        if (!strncmp(argv[a], "--trace", 7) && (argv[a][7] == 0 || argv[a][7] == '='))
            trace = argv[a][7] ? atoi(argv[a] + 8) : -1;
        else if (!strcmp(argv[a], "--stream") && a + 1 < argc)
            secs = atof(argv[++a]);
        else if (!strncmp(argv[a], "--stream=", 9))
            secs = atof(argv[a] + 9);
        else
            iters = atoi(argv[a]);
    }
    if (iters < 10)
        iters = 10;
    if (trace < 0 || (trace > 0 && trace < 10))
        trace = trace < 0 ? iters : 10;
    if (size < 2) {
        if (rank == 0)
            fprintf(stderr, "mpi-bench needs 2 ranks or more\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    if (secs > 0) {
        int r = stream(rank, secs);
        MPI_Finalize();
        return r ? 1 : 0;
    }
    const int big = 1 << 20, window = 8;
    char *buf = malloc((size_t)big * window), small[8] = { 0 };
    double *t = malloc(sizeof(double) * iters);
    int bad = 0;
    long long sent = 0;

    /* 8-byte ping-pong between 0 and 1 */
    MPI_Barrier(MPI_COMM_WORLD);
    for (int i = -10; i < iters; i++) {
        double t0 = MPI_Wtime();
        if (rank == 0) {
            memcpy(small, &i, sizeof(i));
            MPI_Send(small, 8, MPI_BYTE, 1, 1, MPI_COMM_WORLD);
            sent += 8;
            MPI_Recv(small, 8, MPI_BYTE, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            int back;
            memcpy(&back, small, sizeof(back));
            bad |= back != i + 1;
        } else if (rank == 1) {
            MPI_Recv(small, 8, MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            int v;
            memcpy(&v, small, sizeof(v));
            v++;
            memcpy(small, &v, sizeof(v));
            MPI_Send(small, 8, MPI_BYTE, 0, 1, MPI_COMM_WORLD);
            sent += 8;
        }
        if (i >= 0)
            t[i] = (MPI_Wtime() - t0) / 2;
    }
    qsort(t, iters, sizeof(double), cmp);
    double lat = t[iters / 2];

    /* 1 MiB stream 0 -> 1, windows of 8 messages, each window acknowledged */
    int reps = iters / 20 < 3 ? 3 : iters / 20;
    for (int i = 0; i < big * window; i++)
        buf[i] = (char)(rank == 0 ? i * 7 + 3 : 0);
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (int r = 0; r < reps; r++) {
        MPI_Request rq[8];
        if (rank == 0) {
            for (int w = 0; w < window; w++)
                MPI_Isend(buf + (size_t)w * big, big, MPI_BYTE, 1, 2, MPI_COMM_WORLD, &rq[w]);
            MPI_Waitall(window, rq, MPI_STATUSES_IGNORE);
            sent += (long long)big * window;
            MPI_Recv(small, 1, MPI_BYTE, 1, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else if (rank == 1) {
            for (int w = 0; w < window; w++)
                MPI_Irecv(buf + (size_t)w * big, big, MPI_BYTE, 0, 2, MPI_COMM_WORLD, &rq[w]);
            MPI_Waitall(window, rq, MPI_STATUSES_IGNORE);
            MPI_Send(small, 1, MPI_BYTE, 0, 3, MPI_COMM_WORLD);
        }
    }
    double bw = (double)big * window * reps / (MPI_Wtime() - t0) / 1e6;
    if (rank == 1)
        for (int i = 0; i < big * window; i++)
            bad |= buf[i] != (char)(i * 7 + 3);

    /* allreduce, 8 B and 1 MiB */
    double one = rank, sum = 0;
    int n8 = trace ? trace : iters, n1m = iters / 20 < 3 ? 3 : iters / 20;
    struct call *c = trace ? calloc(n8, sizeof(*c)) : NULL;
    if (n8 > iters)
        t = realloc(t, sizeof(double) * n8);
    MPI_Barrier(MPI_COMM_WORLD);
    t0 = MPI_Wtime();
    for (int i = 0; i < n8; i++) {
        struct rusage ru0, ru1;
        double t1 = MPI_Wtime(), c1 = 0;
        if (c) {
            getrusage(RUSAGE_THREAD, &ru0);
            c1 = cpu_s();
        }
        MPI_Allreduce(&one, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        t[i] = MPI_Wtime() - t1;
        if (c) {
            c[i].cpu = cpu_s() - c1;
            getrusage(RUSAGE_THREAD, &ru1);
            c[i].start = t1 - t0;
            c[i].wall = t[i];
            c[i].vcsw = ru1.ru_nvcsw - ru0.ru_nvcsw;
            c[i].ivcsw = ru1.ru_nivcsw - ru0.ru_nivcsw;
        }
    }
    double ar8mean = (MPI_Wtime() - t0) / n8;
    qsort(t, n8, sizeof(double), cmp);
    double ar8 = t[n8 / 2], ar8max = t[n8 - 1];
    if (c) {
        double lim = 4 * ar8 > 1e-3 ? 4 * ar8 : 1e-3, slow = 0;
        int ns = 0;
        for (int i = 0; i < n8; i++) {
            if (c[i].wall < lim)
                continue;
            ns++;
            slow += c[i].wall - ar8;
            printf("trace rank %d call %d at %.1f ms: wall %.0f us, cpu %.0f us, csw %ld+%ld\n",
                   rank, i, c[i].start * 1e3, c[i].wall * 1e6, c[i].cpu * 1e6, c[i].vcsw,
                   c[i].ivcsw);
        }
        printf("trace rank %d: %d calls in %.1f ms, median %.0f us; %d calls over %.0f us "
               "hold %.1f ms above the median\n", rank, n8, ar8mean * n8 * 1e3, ar8 * 1e6, ns,
               lim * 1e6, slow * 1e3);
        fflush(stdout);
        free(c);
    }
    bad |= sum != (double)size * (size - 1) / 2;
    double *v = malloc(sizeof(double) * 131072), *w = malloc(sizeof(double) * 131072);
    for (int i = 0; i < 131072; i++)
        v[i] = i + rank;
    MPI_Barrier(MPI_COMM_WORLD);
    t0 = MPI_Wtime();
    for (int i = 0; i < n1m; i++)
        MPI_Allreduce(v, w, 131072, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    double ar1m = (MPI_Wtime() - t0) / n1m;
    for (int i = 0; i < 131072; i += 997)
        bad |= w[i] != (double)i * size + (double)size * (size - 1) / 2;

    int anybad;
    long long allsent = 0;
    MPI_Allreduce(&bad, &anybad, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD);
    MPI_Allreduce(&sent, &allsent, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) {
        printf("figure lat8_us %.1f\n", lat * 1e6);
        printf("figure bw1m_MBps %.1f\n", bw);
        printf("figure allreduce8_us %.1f\n", ar8 * 1e6);
        printf("figure allreduce8_mean_us %.1f\n", ar8mean * 1e6);
        printf("figure allreduce8_max_us %.1f\n", ar8max * 1e6);
        printf("figure allreduce1m_us %.1f\n", ar1m * 1e6);
        printf("figure ranks %d\n", size);
        printf("figure payload_bytes %lld\n", allsent);
        printf("data %s\n", anybad ? "WRONG" : "checked");
    }
    MPI_Finalize();
    return anybad ? 1 : 0;
}
