/* mpi_loop_clock.h — timing for the bench/ MPI loops (mpiio_write_at_all.c, h5dwrite_loop.c).
 *
 * timed_loop() runs the program's N calls in BLOCKS blocks, every rank starting a block together (a barrier,
 * outside the timing), and rank 0 prints the wall time per call of the slowest rank: "ns_per_call X" over the
 * whole loop, and "ns_per_call_best X" of the fastest block. On a shared machine another process taking a
 * core for a while slows some blocks; the fastest block is the least disturbed one, and a profiler's added
 * cost, paid on every call, is in it as in every block.
 *
 * finalize_timed() calls MPI_Finalize, and rank 0 prints "finalize_ns X", from the moment the last rank reached
 * MPI_Finalize to rank 0's return from it (where a profiler that reduces its logs in the job, as Darshan does,
 * does that work), and "finalized_at_ns T", CLOCK_MONOTONIC at that return (the harness reads the same clock
 * when mpirun exits: what lies between is the processes' exit, where a profiler that writes its logs at exit
 * does that work). */
#ifndef MPI_LOOP_CLOCK_H
#define MPI_LOOP_CLOCK_H

#include <mpi.h>
#include <stdio.h>
#include <time.h>

static long long mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

typedef void (*loop_call)(long i, void *ctx);

/* not inlined: callgrind counts the instructions inside it (profile_vs_darshan_mpi.py) */
__attribute__((noinline)) static void timed_loop(long n, int blocks, loop_call call, void *ctx, int rank)
{
    double total = 0, best = 0;
    long done = 0, best_calls = 1;
    for (int b = 0; b < blocks; b++) {
        long end = n * (b + 1) / blocks;
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        for (long i = done; i < end; i++)
            call(i, ctx);
        double dt = MPI_Wtime() - t0, worst = 0;
        MPI_Reduce(&dt, &worst, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
        total += worst;
        if (end > done && (b == 0 || worst / (double)(end - done) < best / (double)best_calls)) {
            best = worst;
            best_calls = end - done;
        }
        done = end;
    }
    if (rank == 0)
        printf("ns_per_call %.1f\nns_per_call_best %.1f\n", total * 1e9 / (double)n, best * 1e9 / (double)best_calls);
}

static void finalize_timed(int rank)
{
    long long arrived = mono_ns(), last = 0;
    MPI_Reduce(&arrived, &last, 1, MPI_LONG_LONG, MPI_MAX, 0, MPI_COMM_WORLD);
    MPI_Finalize();
    long long done = mono_ns();
    if (rank == 0)
        printf("finalize_ns %lld\nfinalized_at_ns %lld\n", done - last, done);
}

#endif
