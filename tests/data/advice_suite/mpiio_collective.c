/* mpiio_collective FILE MIB: every rank writes MIB blocks of 1 MiB into one shared FILE with
 * MPI_File_write_at_all (block i of rank r at (i * ranks + r) MiB), then reads them back with
 * MPI_File_read_at_all. Collective, large: nothing to advise. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BLOCK (1 << 20)

int main(int argc, char **argv)
{
    int rank, size, bad = 0;
    MPI_File fh;
    MPI_Status st;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc != 3) {
        if (rank == 0)
            fprintf(stderr, "usage: %s FILE MIB\n", argv[0]);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    long blocks = atol(argv[2]);
    char *buf = malloc(BLOCK);
    memset(buf, 'a' + rank, BLOCK);
    if (MPI_File_open(MPI_COMM_WORLD, argv[1], MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh) != 0)
        MPI_Abort(MPI_COMM_WORLD, 1);
    for (long i = 0; i < blocks; i++)
        bad |= MPI_File_write_at_all(fh, (MPI_Offset)(i * size + rank) * BLOCK, buf, BLOCK, MPI_BYTE, &st);
    for (long i = 0; i < blocks; i++)
        bad |= MPI_File_read_at_all(fh, (MPI_Offset)(i * size + rank) * BLOCK, buf, BLOCK, MPI_BYTE, &st);
    bad |= MPI_File_close(&fh);
    free(buf);
    MPI_Finalize();
    return bad != 0;
}
