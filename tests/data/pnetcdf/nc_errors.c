/* PnetCDF calls that fail, for tests/test_profile_pnetcdf.py: an open of a missing file, a collective put
 * past the end of a variable, an inq_varid of a name that is not there (the usual way to ask), a put to an
 * unknown variable id; then one put that succeeds. Prints each call's return code. Usage: nc_errors DIR */
#include <mpi.h>
#include <pnetcdf.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    char path[4096], missing[4096];
    snprintf(path, sizeof path, "%s/errors.nc", argv[1]);
    snprintf(missing, sizeof missing, "%s/missing.nc", argv[1]);
    int ncid, d, v, id, buf[8] = { 0 };
    printf("open missing %d\n", ncmpi_open(MPI_COMM_WORLD, missing, NC_NOWRITE, MPI_INFO_NULL, &ncid) != NC_NOERR);
    printf("create %d\n", ncmpi_create(MPI_COMM_WORLD, path, NC_CLOBBER, MPI_INFO_NULL, &ncid));
    printf("def_dim %d\n", ncmpi_def_dim(ncid, "x", 8, &d));
    printf("def_var %d\n", ncmpi_def_var(ncid, "v", NC_INT, 1, &d, &v));
    printf("enddef %d\n", ncmpi_enddef(ncid));
    MPI_Offset start = 6, count = 4; /* 6 + 4 > 8 */
    printf("put past the end %d\n", ncmpi_put_vara_int_all(ncid, v, &start, &count, buf) != NC_NOERR);
    printf("inq_varid nope %d\n", ncmpi_inq_varid(ncid, "nope", &id) != NC_NOERR);
    printf("put to varid 7 %d\n", ncmpi_put_vara_int_all(ncid, 7, &start, &count, buf) != NC_NOERR);
    start = 0;
    printf("put %d\n", ncmpi_put_vara_int_all(ncid, v, &start, &count, buf));
    printf("close %d\n", ncmpi_close(ncid));
    MPI_Finalize();
    return 0;
}
