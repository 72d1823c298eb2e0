/* joblog_ranks.c — the job log's test program (tests/test_profile_joblog.py): every rank writes one common
 * file and a file of its own, rank 1 twice as much as the others, then MPI_Finalize. Usage:
 *   joblog_ranks DIR [after|kill|handoff]
 * after: each rank then writes DIR/after.RANK.dat (3 writes of 100 bytes) after MPI_Finalize;
 * kill:  rank 1 kills itself with SIGKILL before MPI_Finalize;
 * handoff: after a barrier, rank r reads the first block of rank (r + 1) % size's own file.
 * Each rank prints "TALLY RANK {json}": what it did, counted by the program itself. */
#include <fcntl.h>
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define BLOCK 65536

static long write_blocks(int fd, long n, long first)
{
    static char buf[BLOCK];
    memset(buf, 'x', sizeof buf);
    long bytes = 0;
    for (long i = 0; i < n; i++) {
        ssize_t w = pwrite(fd, buf, sizeof buf, (off_t)((first + i) * BLOCK));
        if (w != (ssize_t)sizeof buf) {
            perror("pwrite");
            exit(1);
        }
        bytes += w;
    }
    return bytes;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s DIR [after|kill|handoff]\n", argv[0]);
        return 2;
    }
    const char *mode = argc > 2 ? argv[2] : "";
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    char path[4096];
    /* the common file: rank r writes its blocks at r * 8 blocks on; rank 1 writes 8 blocks, the others 4 */
    snprintf(path, sizeof path, "%s/common.dat", argv[1]);
    int fd = open(path, O_CREAT | O_WRONLY, 0644);
    long n_common = rank == 1 ? 8 : 4;
    long common = write_blocks(fd, n_common, rank * 8L);
    close(fd);
    /* its own file: rank + 1 blocks */
    snprintf(path, sizeof path, "%s/rank.%d.dat", argv[1], rank);
    fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0644);
    long own = write_blocks(fd, rank + 1, 0);
    close(fd);
    printf("TALLY %d {\"common_writes\": %ld, \"common_bytes\": %ld, \"own_writes\": %d, \"own_bytes\": %ld}\n",
           rank, n_common, common, rank + 1, own);
    fflush(stdout);
    MPI_Barrier(MPI_COMM_WORLD);
    if (strcmp(mode, "handoff") == 0) {
        /* rank r reads the file of its own the next rank wrote (at 2 ranks: every rank has both files) */
        static char buf[BLOCK];
        snprintf(path, sizeof path, "%s/rank.%d.dat", argv[1], (rank + 1) % size);
        fd = open(path, O_RDONLY);
        if (fd < 0 || read(fd, buf, sizeof buf) != (ssize_t)sizeof buf)
            return 1;
        close(fd);
    }
    if (strcmp(mode, "kill") == 0 && rank == 1)
        raise(SIGKILL);
    if (strcmp(mode, "kill") == 0)
        sleep(30); /* mpirun ends the others when rank 1 dies */
    MPI_Finalize();
    if (strcmp(mode, "after") == 0) {
        snprintf(path, sizeof path, "%s/after.%d.dat", argv[1], rank);
        fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0644);
        for (int i = 0; i < 3; i++)
            if (write(fd, path, 100) != 100)
                return 1;
        close(fd);
    }
    return 0;
}
