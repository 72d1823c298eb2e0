/* mpi_funnel FILE MIB SECONDS: rank 0 alone writes FILE (MIB MiB in 1 MiB writes) over and over for SECONDS,
 * as a program that gathers everything to rank 0 does; the other ranks wait at a barrier. Imbalance across
 * ranks. */
#include "suite_clock.h"
#include <fcntl.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define BLOCK (1 << 20)

int main(int argc, char **argv)
{
    int rank, bad = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (argc != 4) {
        if (rank == 0)
            fprintf(stderr, "usage: %s FILE MIB SECONDS\n", argv[0]);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    long mib = atol(argv[2]);
    if (rank == 0) {
        double end = suite_now() + atof(argv[3]);
        char *buf = malloc(BLOCK);
        memset(buf, 'g', BLOCK);
        int fd = open(argv[1], O_CREAT | O_TRUNC | O_WRONLY, 0644);
        bad = fd < 0;
        while (!bad && suite_now() < end)
            for (long i = 0; !bad && i < mib; i++)
                bad = pwrite(fd, buf, BLOCK, (off_t)i * BLOCK) != BLOCK;
        if (fd >= 0)
            close(fd);
        free(buf);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();
    return bad;
}
