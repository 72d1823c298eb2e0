/* site_ranks.c — a job's MPI program for the site integration's tests and bench (tests/test_site_*.py,
 * bench/site_epilog.py). Usage: site_ranks DIR FILES BYTES [STATUS]
 * Every rank writes FILES files of BYTES bytes each in DIR (DIR/r<rank>.<i>), prints "rank R wrote N bytes"
 * on standard output, and the job exits with STATUS (rank 0's; default 0) after MPI_Finalize. */
#include <fcntl.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: %s DIR FILES BYTES [STATUS]\n", argv[0]);
        return 2;
    }
    MPI_Init(&argc, &argv);
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    long files = atol(argv[2]), bytes = atol(argv[3]);
    char *buf = calloc(1, bytes > 0 ? (size_t)bytes : 1);
    char path[4096];
    long total = 0;
    for (long i = 0; i < files; i++) {
        snprintf(path, sizeof path, "%s/r%d.%ld", argv[1], rank, i);
        int fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0644);
        if (fd < 0 || write(fd, buf, (size_t)bytes) != bytes) {
            perror(path);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        total += bytes;
        close(fd);
    }
    free(buf);
    printf("rank %d wrote %ld bytes\n", rank, total);
    MPI_Finalize();
    return argc > 4 ? atoi(argv[4]) : 0;
}
