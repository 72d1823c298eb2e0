/* mpi_handoff DIR MIB SECONDS: rank r writes DIR/part.r (MIB MiB in 1 MiB writes), then after a barrier
 * reads its neighbour's part over and over for SECONDS: data passed between ranks through files.
 * Read-after-write. */
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
    int rank, size, bad = 0;
    char path[4096];
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc != 4) {
        if (rank == 0)
            fprintf(stderr, "usage: %s DIR MIB SECONDS\n", argv[0]);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    long mib = atol(argv[2]);
    char *buf = malloc(BLOCK);
    memset(buf, 'h', BLOCK);
    snprintf(path, sizeof path, "%s/part.%d", argv[1], rank);
    int fd = open(path, O_CREAT | O_TRUNC | O_WRONLY, 0644);
    bad = fd < 0;
    for (long i = 0; !bad && i < mib; i++)
        bad = write(fd, buf, BLOCK) != BLOCK;
    if (fd >= 0)
        close(fd);
    MPI_Barrier(MPI_COMM_WORLD);
    double end = suite_now() + atof(argv[3]);
    snprintf(path, sizeof path, "%s/part.%d", argv[1], (rank + 1) % size);
    fd = open(path, O_RDONLY);
    bad |= fd < 0;
    while (!bad && suite_now() < end)
        for (long i = 0; !bad && i < mib; i++)
            bad = pread(fd, buf, BLOCK, (off_t)i * BLOCK) != BLOCK;
    if (fd >= 0)
        close(fd);
    free(buf);
    MPI_Finalize();
    return bad;
}
