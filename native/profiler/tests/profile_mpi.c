/* profile_mpi — each rank writes 1 MiB (256 writes of 4 KiB) to DIR/rank.R and reads it back: one log per
 * rank, with its rank in the header.
 *
 *   mpirun -np N profile_mpi DIR */
#include <fcntl.h>
#include <mpi.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    int bad = argc < 2;
    if (!bad) {
        char path[4096], buf[4096];
        snprintf(path, sizeof path, "%s/rank.%d", argv[1], rank);
        memset(buf, 'a' + rank % 26, sizeof buf);
        int fd = open(path, O_CREAT | O_RDWR | O_TRUNC, 0644);
        bad = fd < 0;
        for (int i = 0; !bad && i < 256; i++)
            bad = write(fd, buf, sizeof buf) != (ssize_t)sizeof buf;
        for (int i = 0; !bad && i < 256; i++)
            bad = pread(fd, buf, sizeof buf, (off_t)i * (off_t)sizeof buf) != (ssize_t)sizeof buf;
        if (fd >= 0)
            close(fd);
    }
    int any = 0;
    MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    MPI_Finalize();
    return any;
}
