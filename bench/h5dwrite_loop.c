/* h5dwrite_loop FILE N SIZE coll|indep [BLOCKS] — N calls of H5Dwrite of SIZE bytes per rank into one 1-D byte
 * dataset of one file opened with the MPI-IO driver, each rank at its own hyperslab (call i of rank r at
 * (i * ranks + r) * SIZE), with a collective or independent transfer list, in BLOCKS blocks (default 1). Rank 0
 * prints the wall time per call of the slowest rank and MPI_Finalize's time (mpi_loop_clock.h). Used by
 * bench/profile_vs_darshan_mpi.py; build with
 * mpicc -O2 h5dwrite_loop.c $(pkg-config --cflags --libs hdf5-openmpi). */
#include <hdf5.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpi_loop_clock.h"

struct job {
    hid_t dset, space, mspace, dxpl;
    hsize_t size;
    int rank, ranks;
    unsigned char *buf;
};

static void one_call(long i, void *ctx)
{
    struct job *j = ctx;
    hsize_t start = ((hsize_t)i * (hsize_t)j->ranks + (hsize_t)j->rank) * j->size;
    H5Sselect_hyperslab(j->space, H5S_SELECT_SET, &start, NULL, &j->size, NULL);
    if (H5Dwrite(j->dset, H5T_NATIVE_UCHAR, j->mspace, j->space, j->dxpl, j->buf) < 0)
        MPI_Abort(MPI_COMM_WORLD, 1);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank = 0, ranks = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &ranks);
    if (argc < 5 || (strcmp(argv[4], "coll") != 0 && strcmp(argv[4], "indep") != 0)) {
        if (rank == 0)
            fprintf(stderr, "usage: h5dwrite_loop FILE N SIZE coll|indep [BLOCKS]\n");
        MPI_Finalize();
        return 2;
    }
    long n = atol(argv[2]);
    int blocks = argc > 5 ? atoi(argv[5]) : 1;
    hsize_t sz = (hsize_t)atol(argv[3]);
    int coll = strcmp(argv[4], "coll") == 0;
    unsigned char *buf = malloc(sz);
    memset(buf, 'x', sz);

    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    H5Pset_fapl_mpio(fapl, MPI_COMM_WORLD, MPI_INFO_NULL);
    hid_t file = H5Fcreate(argv[1], H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    if (file < 0)
        MPI_Abort(MPI_COMM_WORLD, 1);
    hsize_t dims = (hsize_t)n * (hsize_t)ranks * sz;
    hid_t space = H5Screate_simple(1, &dims, NULL);
    hid_t dset = H5Dcreate2(file, "data", H5T_NATIVE_UCHAR, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    hid_t dxpl = H5Pcreate(H5P_DATASET_XFER);
    H5Pset_dxpl_mpio(dxpl, coll ? H5FD_MPIO_COLLECTIVE : H5FD_MPIO_INDEPENDENT);
    hid_t mspace = H5Screate_simple(1, &sz, NULL);
    if (dset < 0)
        MPI_Abort(MPI_COMM_WORLD, 1);

    struct job j = { dset, space, mspace, dxpl, sz, rank, ranks, buf };
    timed_loop(n, blocks > 0 ? blocks : 1, one_call, &j, rank);

    H5Sclose(mspace);
    H5Pclose(dxpl);
    H5Dclose(dset);
    H5Sclose(space);
    H5Fclose(file);
    H5Pclose(fapl);
    free(buf);
    finalize_timed(rank);
    return 0;
}
