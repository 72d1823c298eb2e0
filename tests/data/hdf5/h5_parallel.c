/* h5_parallel.c: parallel HDF5 (the MPI-IO driver) at any number of ranks, each writing its own part of two
 * datasets of DIR/p.h5: "coll" with one collective H5Dwrite (then one collective H5Dread), "indep" with two
 * independent ones. The file is aligned to 64 KiB. (tests/test_profile_hdf5.py holds the counts.) */
#include <hdf5.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#define N 1000

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    char path[4096];
    snprintf(path, sizeof path, "%s/p.h5", argc > 1 ? argv[1] : ".");
    static double buf[N], back[N];
    for (int i = 0; i < N; i++)
        buf[i] = rank * N + i;

    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    H5Pset_fapl_mpio(fapl, MPI_COMM_WORLD, MPI_INFO_NULL);
    H5Pset_alignment(fapl, 0, 65536);
    hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    if (f < 0)
        MPI_Abort(MPI_COMM_WORLD, 1);
    hsize_t total = (hsize_t)size * N, start = (hsize_t)rank * N, count = N, half = N / 2;
    hid_t space = H5Screate_simple(1, &total, NULL);
    hid_t coll = H5Pcreate(H5P_DATASET_XFER), indep = H5Pcreate(H5P_DATASET_XFER);
    H5Pset_dxpl_mpio(coll, H5FD_MPIO_COLLECTIVE);
    H5Pset_dxpl_mpio(indep, H5FD_MPIO_INDEPENDENT);

    hid_t dc = H5Dcreate2(f, "coll", H5T_NATIVE_DOUBLE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    hid_t fs = H5Scopy(space);
    H5Sselect_hyperslab(fs, H5S_SELECT_SET, &start, NULL, &count, NULL);
    hid_t ms = H5Screate_simple(1, &count, NULL);
    int bad = H5Dwrite(dc, H5T_NATIVE_DOUBLE, ms, fs, coll, buf) < 0;
    bad |= H5Dread(dc, H5T_NATIVE_DOUBLE, ms, fs, coll, back) < 0;
    H5Sclose(ms);

    hid_t di = H5Dcreate2(f, "indep", H5T_NATIVE_DOUBLE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    ms = H5Screate_simple(1, &half, NULL);
    for (int k = 0; k < 2; k++) {
        hsize_t s = start + (hsize_t)k * half;
        H5Sselect_hyperslab(fs, H5S_SELECT_SET, &s, NULL, &half, NULL);
        bad |= H5Dwrite(di, H5T_NATIVE_DOUBLE, ms, fs, indep, buf + k * half) < 0;
    }
    H5Sclose(ms);
    H5Sclose(fs);
    H5Dclose(dc);
    H5Dclose(di);
    H5Pclose(coll);
    H5Pclose(indep);
    H5Sclose(space);
    H5Pclose(fapl);
    bad |= H5Fclose(f) < 0;
    double sum = 0;
    for (int i = 0; i < N; i++)
        sum += back[i];
    printf("rank %d bad %d sum %.0f\n", rank, bad, sum);
    MPI_Finalize();
    return bad;
}
