/* mpi_hdf5_calls DIR — a fixed set of MPI-IO and HDF5 calls on two files in DIR, the same on every rank, for
 * comparing the MPIIO, H5F and H5D counters of iolens with Darshan's (tests/test_darshan_agreement.py). Each
 * rank prints "DID {json}": what it did, by Darshan's counter names, for one rank (a file opened by every rank
 * sums them over the ranks), and, in iolens's names, how many of its dataset reads and writes asked for a
 * collective transfer. */
#include <hdf5.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define XFER 4096
#define SMALL 1000
#define N 1024 /* elements of the dataset per rank */
#define CHUNK 256

static void check(int ok, const char *what)
{
    if (!ok) {
        fprintf(stderr, "mpi_hdf5_calls: %s failed\n", what);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    if (argc < 2)
        check(0, "arguments (usage: mpi_hdf5_calls DIR)");
    int ranks, rank;
    MPI_Comm_size(MPI_COMM_WORLD, &ranks);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    char path[4096];
    static char buf[XFER];
    memset(buf, 'a' + rank, sizeof buf);
    MPI_Status st;
    MPI_Request req;

    /* ---- MPI-IO ---- */
    snprintf(path, sizeof path, "%s/mpiio.dat", argv[1]);
    MPI_File fh;
    check(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDWR | MPI_MODE_CREATE, MPI_INFO_NULL, &fh) == MPI_SUCCESS,
          "MPI_File_open");
    MPI_Offset base = (MPI_Offset)rank * 16 * XFER;
    for (int i = 0; i < 3; i++)
        check(MPI_File_write_at_all(fh, base + i * XFER, buf, XFER, MPI_BYTE, &st) == MPI_SUCCESS, "write_at_all");
    for (int i = 0; i < 2; i++)
        check(MPI_File_write_at(fh, base + (3 + i) * XFER, buf, SMALL, MPI_BYTE, &st) == MPI_SUCCESS, "write_at");
    check(MPI_File_read_at(fh, base, buf, XFER, MPI_BYTE, &st) == MPI_SUCCESS, "read_at");
    check(MPI_File_iwrite_at(fh, base + 6 * XFER, buf, XFER, MPI_BYTE, &req) == MPI_SUCCESS, "iwrite_at");
    MPI_Wait(&req, &st);
    check(MPI_File_iwrite_at_all(fh, base + 7 * XFER, buf, XFER, MPI_BYTE, &req) == MPI_SUCCESS, "iwrite_at_all");
    MPI_Wait(&req, &st);
    check(MPI_File_write_at_all_begin(fh, base + 8 * XFER, buf, XFER, MPI_BYTE) == MPI_SUCCESS, "split begin");
    check(MPI_File_write_at_all_end(fh, buf, &st) == MPI_SUCCESS, "split end");
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "romio_cb_write", "enable");
    check(MPI_File_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL) == MPI_SUCCESS, "set_view");
    check(MPI_File_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", info) == MPI_SUCCESS, "set_view (info)");
    MPI_Info_free(&info);
    check(MPI_File_sync(fh) == MPI_SUCCESS, "sync");
    check(MPI_File_set_size(fh, (MPI_Offset)ranks * 16 * XFER) == MPI_SUCCESS, "set_size");
    check(MPI_File_close(&fh) == MPI_SUCCESS, "close");

    /* ---- HDF5 ---- */
    snprintf(path, sizeof path, "%s/data.h5", argv[1]);
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    H5Pset_fapl_mpio(fapl, MPI_COMM_WORLD, MPI_INFO_NULL);
    hid_t file = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    check(file >= 0, "H5Fcreate");
    hsize_t dims = (hsize_t)N * (hsize_t)ranks, chunk = CHUNK;
    hid_t space = H5Screate_simple(1, &dims, NULL);
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_chunk(dcpl, 1, &chunk);
    hid_t dset = H5Dcreate2(file, "grid", H5T_NATIVE_UINT32, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    check(dset >= 0, "H5Dcreate2");
    hid_t coll = H5Pcreate(H5P_DATASET_XFER), indep = H5Pcreate(H5P_DATASET_XFER);
    H5Pset_dxpl_mpio(coll, H5FD_MPIO_COLLECTIVE);
    H5Pset_dxpl_mpio(indep, H5FD_MPIO_INDEPENDENT);
    static unsigned vals[N];
    for (int i = 0; i < N; i++)
        vals[i] = (unsigned)(rank * N + i);
    hsize_t half = N / 2;
    hid_t mhalf = H5Screate_simple(1, &half, NULL);
    for (int i = 0; i < 2; i++) { /* two collective writes of a regular hyperslab: the rank's two halves */
        hsize_t start = (hsize_t)rank * N + (hsize_t)i * half;
        H5Sselect_hyperslab(space, H5S_SELECT_SET, &start, NULL, &half, NULL);
        check(H5Dwrite(dset, H5T_NATIVE_UINT32, mhalf, space, coll, vals + i * half) >= 0, "H5Dwrite (coll)");
    }
    hsize_t four = 4, points[4];
    for (int i = 0; i < 4; i++)
        points[i] = (hsize_t)rank * N + (hsize_t)i * 7;
    hid_t mfour = H5Screate_simple(1, &four, NULL);
    H5Sselect_elements(space, H5S_SELECT_SET, 4, points);
    check(H5Dwrite(dset, H5T_NATIVE_UINT32, mfour, space, indep, vals) >= 0, "H5Dwrite (points)");
    static unsigned all[N * 64];
    check(ranks <= 64, "at most 64 ranks");
    /* the independent list made collective, then independent again: the mode at each call counts */
    H5Pset_dxpl_mpio(indep, H5FD_MPIO_COLLECTIVE);
    check(H5Dread(dset, H5T_NATIVE_UINT32, H5S_ALL, H5S_ALL, indep, all) >= 0, "H5Dread (all)");
    H5Pset_dxpl_mpio(indep, H5FD_MPIO_INDEPENDENT);
    check(H5Fflush(dset, H5F_SCOPE_LOCAL) >= 0, "H5Fflush");
    H5Dclose(dset);
    H5Fclose(file);
    file = H5Fopen(path, H5F_ACC_RDONLY, fapl);
    check(file >= 0, "H5Fopen");
    dset = H5Dopen2(file, "grid", H5P_DEFAULT);
    check(dset >= 0, "H5Dopen2");
    /* an irregular hyperslab: two blocks of the rank's part */
    hsize_t s1 = (hsize_t)rank * N, s2 = s1 + 100, n1 = 10, n2 = 20, twenty = 30;
    H5Sselect_hyperslab(space, H5S_SELECT_SET, &s1, NULL, &n1, NULL);
    H5Sselect_hyperslab(space, H5S_SELECT_OR, &s2, NULL, &n2, NULL);
    hid_t m30 = H5Screate_simple(1, &twenty, NULL);
    check(H5Dread(dset, H5T_NATIVE_UINT32, m30, space, indep, all) >= 0, "H5Dread (irregular)");
    H5Dclose(dset);
    H5Fclose(file);
    H5Sclose(m30);
    H5Sclose(mfour);
    H5Sclose(mhalf);
    H5Sclose(space);
    H5Pclose(dcpl);
    H5Pclose(coll);
    H5Pclose(indep);
    H5Pclose(fapl);

    printf("DID {\"MPIIO\": {\"MPIIO_COLL_OPENS\": 1, \"MPIIO_COLL_WRITES\": 3, \"MPIIO_INDEP_WRITES\": 2, "
           "\"MPIIO_INDEP_READS\": 1, \"MPIIO_NB_WRITES\": 2, \"MPIIO_SPLIT_WRITES\": 1, \"MPIIO_VIEWS\": 2, "
           "\"MPIIO_HINTS\": 1, \"MPIIO_SYNCS\": 1, \"MPIIO_BYTES_WRITTEN\": %d, \"MPIIO_BYTES_READ\": %d, "
           "\"MPIIO_RW_SWITCHES\": 2, \"MPIIO_SET_SIZES\": 1}, "
           "\"H5F\": {\"H5F_OPENS\": 2, \"H5F_FLUSHES\": 1, \"H5F_USE_MPIIO\": 1}, "
           "\"H5D\": {\"H5D_OPENS\": 2, \"H5D_WRITES\": 3, \"H5D_READS\": 2, \"H5D_BYTES_WRITTEN\": %d, "
           "\"H5D_BYTES_READ\": %d, \"H5D_REGULAR_HYPERSLAB_SELECTS\": 2, \"H5D_POINT_SELECTS\": 1, "
           "\"H5D_IRREGULAR_HYPERSLAB_SELECTS\": 1, \"H5D_USE_MPIIO_COLLECTIVE\": 1, \"H5D_DATATYPE_SIZE\": 4, "
           "\"H5D_DATASPACE_NDIMS\": 1, \"H5D_DATASPACE_NPOINTS\": %d, \"H5D_CHUNK_SIZE_D1\": %d, "
           "\"H5D_RW_SWITCHES\": 1, \"H5D_COLL_READS\": 1, \"H5D_COLL_WRITES\": 2}}\n",
           6 * XFER + 2 * SMALL, XFER, (N + 4) * 4, (N * ranks + 30) * 4, N * ranks, CHUNK);
    MPI_Finalize();
    return 0;
}
