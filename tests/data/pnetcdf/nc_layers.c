/* A PnetCDF program whose calls tests/test_profile_pnetcdf.py counts: every rank writes its block of N
 * elements of four variables through collective, independent and non-blocking (iput, iget, bput) calls of
 * the typed and the flexible API, reads them back, reopens the file, and uses MPI_File_delete and
 * MPI_File_set_info / get_info on a second file. Usage: nc_layers DIR. Prints "rank R ok SUM" per rank. */
#include <mpi.h>
#include <pnetcdf.h>
#include <stdio.h>
#include <stdlib.h>

#define N 1000

#define CHECK(call) \
    do { \
        int err_ = (call); \
        if (err_ != NC_NOERR) { \
            fprintf(stderr, "line %d: %s\n", __LINE__, ncmpi_strerror(err_)); \
            MPI_Abort(MPI_COMM_WORLD, 1); \
        } \
    } while (0)

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, np;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    char path[4096], scratch[4096];
    snprintf(path, sizeof path, "%s/layers.nc", argv[1]);
    snprintf(scratch, sizeof scratch, "%s/scratch.bin", argv[1]);

    int ncid, dt, dx, va, vb, vc, vd;
    CHECK(ncmpi_create(MPI_COMM_WORLD, path, NC_CLOBBER | NC_64BIT_DATA, MPI_INFO_NULL, &ncid));
    CHECK(ncmpi_def_dim(ncid, "t", NC_UNLIMITED, &dt));
    CHECK(ncmpi_def_dim(ncid, "x", (MPI_Offset)np * N, &dx));
    int dims2[2] = { dt, dx };
    CHECK(ncmpi_def_var(ncid, "a", NC_INT, 1, &dx, &va));
    CHECK(ncmpi_def_var(ncid, "b", NC_DOUBLE, 2, dims2, &vb));
    CHECK(ncmpi_def_var(ncid, "c", NC_FLOAT, 1, &dx, &vc));
    CHECK(ncmpi_enddef(ncid));

    int ia[N];
    double db[N];
    float fc[N];
    for (int i = 0; i < N; i++) {
        ia[i] = rank * N + i;
        db[i] = rank * N + i + 0.5;
        fc[i] = (float)(rank * N + i);
    }
    MPI_Offset start[2] = { (MPI_Offset)rank * N, 0 }, count[2] = { N, 0 };
    /* collective: 1 put_vara_int_all (a), 3 records of put_vara_double_all (b) */
    CHECK(ncmpi_put_vara_int_all(ncid, va, start, count, ia));
    for (int r = 0; r < 3; r++) {
        MPI_Offset s2[2] = { r, (MPI_Offset)rank * N }, c2[2] = { 1, N };
        CHECK(ncmpi_put_vara_double_all(ncid, vb, s2, c2, db));
    }
    /* independent: 2 put_vara_float (c, halves), 1 put_var1_int (a) */
    CHECK(ncmpi_begin_indep_data(ncid));
    MPI_Offset half = N / 2, s1 = (MPI_Offset)rank * N + N / 2;
    CHECK(ncmpi_put_vara_float(ncid, vc, start, &half, fc));
    CHECK(ncmpi_put_vara_float(ncid, vc, &s1, &half, fc + N / 2));
    CHECK(ncmpi_put_var1_int(ncid, va, start, ia));
    CHECK(ncmpi_end_indep_data(ncid));
    /* non-blocking: 1 iput_vara_int (a), 1 iget_vara_double (b, record 0), 1 bput_vara_float (c) */
    int req[3], st[3];
    double back[N];
    MPI_Offset s2[2] = { 0, (MPI_Offset)rank * N }, c2[2] = { 1, N };
    CHECK(ncmpi_iput_vara_int(ncid, va, start, count, ia, &req[0]));
    CHECK(ncmpi_iget_vara_double(ncid, vb, s2, c2, back, &req[1]));
    CHECK(ncmpi_wait_all(ncid, 2, req, st));
    CHECK(ncmpi_buffer_attach(ncid, (MPI_Offset)N * sizeof(float)));
    CHECK(ncmpi_bput_vara_float(ncid, vc, start, count, fc, &req[2]));
    CHECK(ncmpi_wait_all(ncid, 1, &req[2], &st[2]));
    CHECK(ncmpi_buffer_detach(ncid));
    /* flexible API: 1 put_vara_all (c) */
    CHECK(ncmpi_put_vara_all(ncid, vc, start, count, fc, N, MPI_FLOAT));
    /* redef: d (short); 1 put_vars_short_all (every other element: N/2), 1 put_varn_short_all (10 + 20) */
    CHECK(ncmpi_redef(ncid));
    CHECK(ncmpi_def_var(ncid, "d", NC_SHORT, 1, &dx, &vd));
    CHECK(ncmpi_enddef(ncid));
    short sd[N];
    for (int i = 0; i < N; i++)
        sd[i] = (short)i;
    MPI_Offset stride = 2, cnt = N / 2;
    CHECK(ncmpi_put_vars_short_all(ncid, vd, start, &cnt, &stride, sd));
    MPI_Offset st0[1] = { (MPI_Offset)rank * N + 1 }, st1[1] = { (MPI_Offset)rank * N + 101 };
    MPI_Offset n0[1] = { 10 }, n1[1] = { 20 };
    MPI_Offset *starts[2] = { st0, st1 }, *counts[2] = { n0, n1 };
    CHECK(ncmpi_put_varn_short_all(ncid, vd, 2, starts, counts, sd));
    /* the whole of a, collectively: 1 get_var_int_all of np*N ints */
    int *all = malloc(sizeof(int) * (size_t)np * N);
    CHECK(ncmpi_get_var_int_all(ncid, va, all));
    CHECK(ncmpi_sync(ncid));
    CHECK(ncmpi_close(ncid));

    /* reopen read-only: inq_varid of b, 1 get_var_double_all (3 records) */
    CHECK(ncmpi_open(MPI_COMM_WORLD, path, NC_NOWRITE, MPI_INFO_NULL, &ncid));
    int vb2;
    CHECK(ncmpi_inq_varid(ncid, "b", &vb2));
    double *ball = malloc(sizeof(double) * 3 * (size_t)np * N);
    CHECK(ncmpi_get_var_double_all(ncid, vb2, ball));
    CHECK(ncmpi_close(ncid));

    /* MPI-IO on a second file: set_info, get_info, then rank 0 deletes it */
    MPI_File fh;
    MPI_File_open(MPI_COMM_WORLD, scratch, MPI_MODE_CREATE | MPI_MODE_WRONLY, MPI_INFO_NULL, &fh);
    MPI_Info info, used;
    MPI_Info_create(&info);
    MPI_Info_set(info, "cb_nodes", "1");
    if (MPI_File_set_info(fh, info) != MPI_SUCCESS || MPI_File_get_info(fh, &used) != MPI_SUCCESS)
        MPI_Abort(MPI_COMM_WORLD, 2);
    MPI_Info_free(&used);
    MPI_Info_free(&info);
    MPI_File_close(&fh);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0 && MPI_File_delete(scratch, MPI_INFO_NULL) != MPI_SUCCESS)
        MPI_Abort(MPI_COMM_WORLD, 3);

    long long sum = 0;
    for (long i = 0; i < (long)np * N; i++)
        sum += all[i] + (long long)ball[2 * (size_t)np * N + i];
    printf("rank %d ok %lld %g\n", rank, sum, back[N - 1]);
    free(all);
    free(ball);
    MPI_Finalize();
    return 0;
}
