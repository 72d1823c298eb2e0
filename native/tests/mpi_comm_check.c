/* mpi_comm_check.c — the MPI communicator gives the same answers as the local one: it passes the checks
 * of comm_checks.h that test_comm_local.c runs (every dtype and operation of allreduce, gather and bcast of
 * multi-MiB buffers to a root other than 0, iol_comm_setup on one node), and barrier. Run under mpiexec
 * with several ranks; rank 0 prints "ok" and every rank exits 0 only if all ranks passed. (Not named
 * test_*.c: it needs a launcher, see CMakeLists.txt.) */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "comm_checks.h"

int main(int argc, char **argv)
{
    struct iol_err err = { 0 };
    struct iol_comm *c = NULL;
    CHECK(iol_mpi_available() == 1, "iol_mpi_available");
    CHECK(iol_mpi_launched() == 1, "iol_mpi_launched: not recognised as an mpiexec launch");
    if (iol_comm_mpi_init(&argc, &argv, &c, &err) != 0) {
        fprintf(stderr, "mpi init: %s\n", err.msg);
        return 1;
    }
    CHECK(c->size >= 2, "run this with several ranks (size %d)", c->size);
    check_collectives(c, "mpi");
    CHECK(c->barrier(c) == 0, "barrier");

    /* Pass only if every rank passed. */
    int64_t failures = iol_test_failures, total = 0;
    CHECK(c->allreduce(c, &failures, &total, 1, IOL_DT_I64, IOL_OP_SUM) == 0, "final allreduce");
    if (c->rank == 0) {
        if (total == 0 && iol_test_failures == 0)
            printf("ok\n");
        else
            printf("FAILED: %lld failed checks over all ranks\n", (long long)total);
    }
    int rc = total == 0 && iol_test_failures == 0 ? 0 : 1;
    iol_comm_mpi_finalize(c);
    return rc;
}
