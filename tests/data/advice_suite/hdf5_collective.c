/* hdf5_collective FILE ROWS: parallel HDF5 (MPI-IO driver): a ROWS x 131072 dataset of doubles (1 MiB per
 * row), each rank writing its block of rows in one collective H5Dwrite, then reading it back collectively.
 * Large, collective: nothing to advise. */
#include <hdf5.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#define COLS 131072

int main(int argc, char **argv)
{
    int rank, size, bad = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc != 3) {
        if (rank == 0)
            fprintf(stderr, "usage: %s FILE ROWS\n", argv[0]);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    hsize_t rows = (hsize_t)atol(argv[2]), mine = rows / (hsize_t)size;
    double *data = malloc(mine * COLS * sizeof *data);
    for (hsize_t i = 0; i < mine * COLS; i++)
        data[i] = (double)rank + (double)i;
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    H5Pset_fapl_mpio(fapl, MPI_COMM_WORLD, MPI_INFO_NULL);
    hid_t file = H5Fcreate(argv[1], H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    hsize_t dims[2] = {mine * (hsize_t)size, COLS}, start[2] = {mine * (hsize_t)rank, 0},
            count[2] = {mine, COLS};
    hid_t space = H5Screate_simple(2, dims, NULL);
    hid_t dset = H5Dcreate2(file, "field", H5T_NATIVE_DOUBLE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    hid_t mem = H5Screate_simple(2, count, NULL);
    H5Sselect_hyperslab(space, H5S_SELECT_SET, start, NULL, count, NULL);
    hid_t dxpl = H5Pcreate(H5P_DATASET_XFER);
    H5Pset_dxpl_mpio(dxpl, H5FD_MPIO_COLLECTIVE);
    bad |= H5Dwrite(dset, H5T_NATIVE_DOUBLE, mem, space, dxpl, data) < 0;
    bad |= H5Dread(dset, H5T_NATIVE_DOUBLE, mem, space, dxpl, data) < 0;
    H5Pclose(dxpl);
    H5Sclose(mem);
    H5Dclose(dset);
    H5Sclose(space);
    bad |= H5Fclose(file) < 0;
    H5Pclose(fapl);
    free(data);
    MPI_Finalize();
    return bad;
}
