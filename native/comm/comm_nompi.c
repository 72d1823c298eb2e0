/* comm_nompi.c — the MPI entry points of a build without MPI. iol_mpi_launched() (in comm.c) still reads
 * the environment, so main() can say "started by an MPI launcher, but this build has no MPI" instead of
 * running N unrelated single-rank jobs. */
#include "comm.h"

#include <stddef.h>

int iol_mpi_available(void)
{
    return 0;
}

int iol_comm_mpi_init(int *argc, char ***argv, struct iol_comm **out, struct iol_err *err)
{
    (void)argc;
    (void)argv;
    if (out != NULL)
        *out = NULL;
    return iol_err_set(err, IOL_ERR_USAGE,
                       "this iolens was built without MPI (no MPI compiler was found at build time); "
                       "rebuild with an MPI installation, or run on one node with --comm local");
}

void iol_comm_mpi_finalize(struct iol_comm *c)
{
    (void)c;
}

const void *iol_comm_mpi_handle(const struct iol_comm *c)
{
    (void)c;
    return NULL;
}
