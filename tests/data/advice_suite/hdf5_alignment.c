/* hdf5_alignment FILE DSETS MIB SECONDS ALIGN: parallel HDF5 (MPI-IO driver) on every rank: DSETS contiguous
 * datasets of MIB MiB of doubles each, every rank writing its block of rows of each in one collective
 * H5Dwrite, pass after pass, for SECONDS. ALIGN 0 leaves HDF5's default (no alignment: the datasets start
 * wherever the file ends, not on a block or stripe boundary); ALIGN N > 0 sets H5Pset_alignment(fapl, 64 KiB,
 * N). Rank 0 prints writes=N (the H5Dwrite calls of all ranks) and passes=N. */
#include "suite_clock.h"
#include <hdf5.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#define COLS 1024

int main(int argc, char **argv)
{
    int rank, size, bad = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc != 6) {
        if (rank == 0)
            fprintf(stderr, "usage: %s FILE DSETS MIB SECONDS ALIGN\n", argv[0]);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int dsets = atoi(argv[2]);
    hsize_t rows = (hsize_t)atol(argv[3]) * 128, mine = rows / (hsize_t)size; /* 128 rows of 8 KiB: 1 MiB */
    double budget = atof(argv[4]);
    long align = atol(argv[5]);
    double *data = malloc(mine * COLS * sizeof *data);
    for (hsize_t i = 0; i < mine * COLS; i++)
        data[i] = (double)rank + (double)i;
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    H5Pset_fapl_mpio(fapl, MPI_COMM_WORLD, MPI_INFO_NULL);
    if (align > 0)
        H5Pset_alignment(fapl, 65536, (hsize_t)align);
    hid_t file = H5Fcreate(argv[1], H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    hsize_t dims[2] = {mine * (hsize_t)size, COLS}, start[2] = {mine * (hsize_t)rank, 0}, count[2] = {mine, COLS};
    hid_t space = H5Screate_simple(2, dims, NULL), mem = H5Screate_simple(2, count, NULL);
    H5Sselect_hyperslab(space, H5S_SELECT_SET, start, NULL, count, NULL);
    hid_t *dset = malloc((size_t)dsets * sizeof *dset);
    for (int d = 0; d < dsets; d++) {
        char name[32];
        snprintf(name, sizeof name, "field%02d", d);
        dset[d] = H5Dcreate2(file, name, H5T_NATIVE_DOUBLE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
        bad |= dset[d] < 0;
    }
    hid_t dxpl = H5Pcreate(H5P_DATASET_XFER);
    H5Pset_dxpl_mpio(dxpl, H5FD_MPIO_COLLECTIVE);
    long long writes = 0, passes = 0;
    /* Every rank makes the same passes (collective calls): rank 0's clock decides. */
    double end = suite_now() + budget;
    for (int more = 1; more && !bad; passes++) {
        for (int d = 0; d < dsets; d++, writes++)
            bad |= H5Dwrite(dset[d], H5T_NATIVE_DOUBLE, mem, space, dxpl, data) < 0;
        more = suite_now() < end;
        MPI_Bcast(&more, 1, MPI_INT, 0, MPI_COMM_WORLD);
    }
    for (int d = 0; d < dsets; d++)
        H5Dclose(dset[d]);
    H5Pclose(dxpl);
    H5Sclose(mem);
    H5Sclose(space);
    bad |= H5Fclose(file) < 0;
    H5Pclose(fapl);
    long long all = 0;
    MPI_Reduce(&writes, &all, 1, MPI_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0)
        printf("writes=%lld\npasses=%lld\n", all, passes);
    free(dset);
    free(data);
    MPI_Finalize();
    return bad;
}
