/* mpiio_small_writes FILE BYTES BLOCKS SECONDS MODE: every rank writes BLOCKS pieces of BYTES into one shared
 * FILE (piece i of rank r at (i * ranks + r) * BYTES), pass after pass, for SECONDS.
 *   MODE indep: one MPI_File_write_at per piece (independent small writes to a shared file);
 *   MODE coll:  the same pieces through a view (a strided file type) and one MPI_File_write_all per pass.
 * Rank 0 prints writes=N (the MPI-IO write calls of all ranks), bytes=N and passes=N (of rank 0). */
#include "suite_clock.h"
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    int rank, size, bad = 0;
    MPI_File fh;
    MPI_Status st;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc != 6 || (strcmp(argv[5], "indep") != 0 && strcmp(argv[5], "coll") != 0)) {
        if (rank == 0)
            fprintf(stderr, "usage: %s FILE BYTES BLOCKS SECONDS indep|coll\n", argv[0]);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int bytes = atoi(argv[2]), blocks = atoi(argv[3]), coll = strcmp(argv[5], "coll") == 0;
    double budget = atof(argv[4]);
    char *buf = malloc((size_t)bytes * (size_t)blocks);
    memset(buf, 'a' + rank, (size_t)bytes * (size_t)blocks);
    if (MPI_File_open(MPI_COMM_WORLD, argv[1], MPI_MODE_CREATE | MPI_MODE_WRONLY, MPI_INFO_NULL, &fh) != 0)
        MPI_Abort(MPI_COMM_WORLD, 1);
    MPI_Datatype strided;
    if (coll) {
        MPI_Type_vector(blocks, bytes, bytes * size, MPI_BYTE, &strided);
        MPI_Type_commit(&strided);
        bad |= MPI_File_set_view(fh, (MPI_Offset)rank * bytes, MPI_BYTE, strided, "native", MPI_INFO_NULL);
    }
    long long writes = 0, passes = 0;
    /* Every rank makes the same passes (a collective call needs them all): rank 0's clock decides. */
    double end = suite_now() + budget;
    for (int more = 1; more && !bad;) {
        if (coll) {
            bad |= MPI_File_seek(fh, 0, MPI_SEEK_SET);
            bad |= MPI_File_write_all(fh, buf, bytes * blocks, MPI_BYTE, &st);
            writes++;
        } else {
            for (int i = 0; i < blocks; i++, writes++)
                bad |= MPI_File_write_at(fh, (MPI_Offset)(i * size + rank) * bytes, buf, bytes, MPI_BYTE, &st);
        }
        passes++;
        more = suite_now() < end;
        MPI_Bcast(&more, 1, MPI_INT, 0, MPI_COMM_WORLD);
    }
    long long all = 0;
    MPI_Reduce(&writes, &all, 1, MPI_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0)
        printf("writes=%lld\nbytes=%lld\npasses=%lld\n", all, all * (coll ? (long long)bytes * blocks : bytes),
               passes);
    if (coll)
        MPI_Type_free(&strided);
    free(buf);
    bad |= MPI_File_close(&fh);
    MPI_Finalize();
    return bad != 0;
}
