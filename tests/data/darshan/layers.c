/* layers.c — the program behind tests/data/darshan/layers-np2.darshan: one MPI job that writes through
 * MPI-IO, HDF5 (parallel, collective transfer) and PnetCDF, each into a file of its own in DIR, and prints
 * what it did as one JSON line (rank 0), so the test can check the log's counters against the program.
 *
 *   mpicc -O2 layers.c -o layers $(pkg-config --cflags --libs hdf5-openmpi) -lpnetcdf
 *   mpirun -np 2 ./layers DIR
 */
#include <hdf5.h>
#include <mpi.h>
#include <pnetcdf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MIB (1 << 20)
#define COLL_WRITES 4  /* per rank, MPI_File_write_at_all of 1 MiB */
#define INDEP_WRITES 3 /* per rank, MPI_File_write_at of 4 KiB */
#define COLL_READS 2   /* per rank, MPI_File_read_at_all of 1 MiB */
#define ROW 1024       /* ints per rank in the HDF5 dataset and the PnetCDF variable */

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, np;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    if (argc < 2) {
        if (rank == 0)
            fprintf(stderr, "usage: layers DIR\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    char path[4096];
    char *buf = calloc(MIB, 1);

    /* MPI-IO: one shared file, each rank its own 1 MiB blocks, then small independent writes past them. */
    snprintf(path, sizeof path, "%s/mpiio.dat", argv[1]);
    MPI_File fh;
    MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh);
    for (int i = 0; i < COLL_WRITES; i++)
        MPI_File_write_at_all(fh, ((MPI_Offset)i * np + rank) * MIB, buf, MIB, MPI_BYTE, MPI_STATUS_IGNORE);
    MPI_Offset tail = (MPI_Offset)COLL_WRITES * np * MIB;
    for (int i = 0; i < INDEP_WRITES; i++)
        MPI_File_write_at(fh, tail + ((MPI_Offset)i * np + rank) * 4096, buf, 4096, MPI_BYTE, MPI_STATUS_IGNORE);
    for (int i = 0; i < COLL_READS; i++)
        MPI_File_read_at_all(fh, ((MPI_Offset)i * np + rank) * MIB, buf, MIB, MPI_BYTE, MPI_STATUS_IGNORE);
    MPI_File_close(&fh);

    /* HDF5: a np x ROW dataset of ints, each rank writes its row with a collective transfer. */
    int *row = malloc(ROW * sizeof(int));
    for (int i = 0; i < ROW; i++)
        row[i] = rank * ROW + i;
    snprintf(path, sizeof path, "%s/layers.h5", argv[1]);
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    H5Pset_fapl_mpio(fapl, MPI_COMM_WORLD, MPI_INFO_NULL);
    hid_t file = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    hsize_t dims[2] = {(hsize_t)np, ROW};
    hid_t space = H5Screate_simple(2, dims, NULL);
    hid_t dset = H5Dcreate2(file, "/rows", H5T_NATIVE_INT, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    hsize_t start[2] = {(hsize_t)rank, 0}, count[2] = {1, ROW};
    H5Sselect_hyperslab(space, H5S_SELECT_SET, start, NULL, count, NULL);
    hid_t mem = H5Screate_simple(2, count, NULL);
    hid_t dxpl = H5Pcreate(H5P_DATASET_XFER);
    H5Pset_dxpl_mpio(dxpl, H5FD_MPIO_COLLECTIVE);
    H5Dwrite(dset, H5T_NATIVE_INT, mem, space, dxpl, row);
    H5Pclose(dxpl);
    H5Sclose(mem);
    H5Sclose(space);
    H5Dclose(dset);
    H5Fclose(file);
    H5Pclose(fapl);

    /* PnetCDF: a np x ROW variable, each rank puts its row collectively, then gets it back. */
    snprintf(path, sizeof path, "%s/layers.nc", argv[1]);
    int nc, dim[2], var;
    ncmpi_create(MPI_COMM_WORLD, path, NC_CLOBBER, MPI_INFO_NULL, &nc);
    ncmpi_def_dim(nc, "rank", np, &dim[0]);
    ncmpi_def_dim(nc, "x", ROW, &dim[1]);
    ncmpi_def_var(nc, "rows", NC_INT, 2, dim, &var);
    ncmpi_enddef(nc);
    MPI_Offset nstart[2] = {rank, 0}, ncount[2] = {1, ROW};
    ncmpi_put_vara_int_all(nc, var, nstart, ncount, row);
    ncmpi_get_vara_int_all(nc, var, nstart, ncount, row);
    ncmpi_close(nc);

    if (rank == 0)
        printf("{\"np\": %d, \"mpiio_coll_writes\": %d, \"mpiio_indep_writes\": %d, \"mpiio_coll_reads\": %d, "
               "\"mpiio_bytes_written\": %lld, \"mpiio_bytes_read\": %lld, \"h5d_writes\": %d, "
               "\"h5d_bytes_written\": %lld, \"pnetcdf_coll_writes\": %d, \"pnetcdf_coll_reads\": %d, "
               "\"pnetcdf_bytes\": %lld}\n",
               np, COLL_WRITES * np, INDEP_WRITES * np, COLL_READS * np,
               (long long)np * (COLL_WRITES * (long long)MIB + INDEP_WRITES * 4096LL),
               (long long)np * COLL_READS * MIB, np, (long long)np * ROW * (long long)sizeof(int), np, np,
               (long long)np * ROW * (long long)sizeof(int));
    free(row);
    free(buf);
    MPI_Finalize();
    return 0;
}
