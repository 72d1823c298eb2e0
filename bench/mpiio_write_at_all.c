/* mpiio_write_at_all FILE N SIZE — N calls of MPI_File_write_at_all of SIZE bytes per rank, each rank at its
 * own offsets of one shared file; rank 0 prints the wall time per call of the loop alone (the slowest rank's,
 * max over ranks), in ns: "ns_per_call X". Used by bench/profile_mpiio.py. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank = 0, size = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc < 4) {
        if (rank == 0)
            fprintf(stderr, "usage: mpiio_write_at_all FILE N SIZE\n");
        MPI_Finalize();
        return 2;
    }
    long n = atol(argv[2]);
    int sz = atoi(argv[3]);
    char *buf = malloc((size_t)sz);
    memset(buf, 'x', (size_t)sz);
    MPI_File fh;
    if (MPI_File_open(MPI_COMM_WORLD, argv[1], MPI_MODE_WRONLY | MPI_MODE_CREATE, MPI_INFO_NULL, &fh) != MPI_SUCCESS)
        MPI_Abort(MPI_COMM_WORLD, 1);
    MPI_Status st;
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (long i = 0; i < n; i++) {
        MPI_Offset off = ((MPI_Offset)i * size + rank) * sz;
        if (MPI_File_write_at_all(fh, off, buf, sz, MPI_BYTE, &st) != MPI_SUCCESS)
            MPI_Abort(MPI_COMM_WORLD, 1);
    }
    double dt = MPI_Wtime() - t0, worst = 0;
    MPI_Reduce(&dt, &worst, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    MPI_File_close(&fh);
    if (rank == 0)
        printf("ns_per_call %.1f\n", worst * 1e9 / (double)n);
    free(buf);
    MPI_Finalize();
    return 0;
}
