/* mpiio_write_at_all FILE N SIZE [BLOCKS] — N calls of MPI_File_write_at_all of SIZE bytes per rank, each rank at
 * its own offsets of one shared file, in BLOCKS blocks (default 1); rank 0 prints the wall time per call of the
 * slowest rank, in ns, over the loop ("ns_per_call X") and its fastest block ("ns_per_call_best X"), then
 * MPI_Finalize's time (mpi_loop_clock.h). Used by bench/profile_mpiio.py and bench/profile_vs_darshan_mpi.py. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpi_loop_clock.h"

struct job {
    MPI_File fh;
    int rank, ranks, size;
    char *buf;
};

static void one_call(long i, void *ctx)
{
    struct job *j = ctx;
    MPI_Status st;
    MPI_Offset off = ((MPI_Offset)i * j->ranks + j->rank) * j->size;
    if (MPI_File_write_at_all(j->fh, off, j->buf, j->size, MPI_BYTE, &st) != MPI_SUCCESS)
        MPI_Abort(MPI_COMM_WORLD, 1);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    struct job j = { 0 };
    MPI_Comm_rank(MPI_COMM_WORLD, &j.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &j.ranks);
    if (argc < 4) {
        if (j.rank == 0)
            fprintf(stderr, "usage: mpiio_write_at_all FILE N SIZE [BLOCKS]\n");
        MPI_Finalize();
        return 2;
    }
    long n = atol(argv[2]);
    int blocks = argc > 4 ? atoi(argv[4]) : 1;
    j.size = atoi(argv[3]);
    j.buf = malloc((size_t)j.size);
    memset(j.buf, 'x', (size_t)j.size);
    if (MPI_File_open(MPI_COMM_WORLD, argv[1], MPI_MODE_WRONLY | MPI_MODE_CREATE, MPI_INFO_NULL, &j.fh) !=
        MPI_SUCCESS)
        MPI_Abort(MPI_COMM_WORLD, 1);
    timed_loop(n, blocks > 0 ? blocks : 1, one_call, &j, j.rank);
    MPI_File_close(&j.fh);
    free(j.buf);
    finalize_timed(j.rank);
    return 0;
}
