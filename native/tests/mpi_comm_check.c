/* mpi_comm_check.c — the MPI communicator gives the same answers as the local one: every dtype and
 * operation of allreduce (in place too), gather and bcast of multi-MiB buffers to a root other than 0,
 * barrier, and iol_comm_setup on one node. Run under mpiexec with several ranks; rank 0 prints "ok" and
 * every rank exits 0 only if all ranks passed. (Not named test_*.c: it needs a launcher, see
 * CMakeLists.txt.) */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>

#include "check.h"
#include "comm/comm.h"

#define BIG_COUNT ((size_t)3 * 1024 * 1024 / 8 + 17)
#define BIG_BYTES ((size_t)3 * 1024 * 1024 + 4097)

static uint64_t u_val(int rank, size_t i) { return (uint64_t)rank * 1000003u + i; }
static int64_t i_val(int rank, size_t i) { return -(int64_t)(rank + 1) * 7 + (int64_t)(i % 1000) - 500; }
/* Quarter steps stay exact in a double, so the sum does not depend on MPI's reduction order. */
static double f_val(int rank, size_t i) { return (double)rank * 0.5 + (double)(i % 4096) * 0.25; }

static void check_allreduce(struct iol_comm *c, size_t count, int in_place)
{
    int np = c->size;
    uint64_t *ui = malloc(count * 8), *uo = in_place ? ui : malloc(count * 8);
    int64_t *ii = malloc(count * 8), *io = in_place ? ii : malloc(count * 8);
    double *fi = malloc(count * 8), *fo = in_place ? fi : malloc(count * 8);
    for (int op = IOL_OP_SUM; op <= IOL_OP_MAX; op++) {
        for (size_t i = 0; i < count; i++) {
            ui[i] = u_val(c->rank, i);
            ii[i] = i_val(c->rank, i);
            fi[i] = f_val(c->rank, i);
        }
        CHECK(c->allreduce(c, ui, uo, count, IOL_DT_U64, op) == 0, "u64 allreduce op %d", op);
        CHECK(c->allreduce(c, ii, io, count, IOL_DT_I64, op) == 0, "i64 allreduce op %d", op);
        CHECK(c->allreduce(c, fi, fo, count, IOL_DT_F64, op) == 0, "f64 allreduce op %d", op);
        size_t bad = 0;
        for (size_t i = 0; i < count; i++) {
            uint64_t eu = 0;
            int64_t ei = 0;
            double ef = 0;
            for (int r = 0; r < np; r++) {
                uint64_t u = u_val(r, i);
                int64_t s = i_val(r, i);
                double f = f_val(r, i);
                if (op == IOL_OP_SUM) {
                    eu += u; ei += s; ef += f;
                } else if (r == 0) {
                    eu = u; ei = s; ef = f;
                } else if (op == IOL_OP_MIN) {
                    eu = u < eu ? u : eu; ei = s < ei ? s : ei; ef = f < ef ? f : ef;
                } else {
                    eu = u > eu ? u : eu; ei = s > ei ? s : ei; ef = f > ef ? f : ef;
                }
            }
            bad += uo[i] != eu || io[i] != ei || fo[i] != ef;
        }
        CHECK(bad == 0, "rank %d count %zu in_place %d op %d: %zu elements wrong", c->rank, count, in_place, op, bad);
    }
    free(ui); free(ii); free(fi);
    if (!in_place) {
        free(uo); free(io); free(fo);
    }
}

static unsigned char pattern(int rank, size_t j)
{
    return (unsigned char)((size_t)rank * 31u + j * 7u + (j >> 12));
}

static void check_gather_bcast(struct iol_comm *c)
{
    int np = c->size, root = np - 1;
    unsigned char *in = malloc(BIG_BYTES);
    unsigned char *out = c->rank == root ? malloc(BIG_BYTES * (size_t)np) : NULL;
    for (size_t j = 0; j < BIG_BYTES; j++)
        in[j] = pattern(c->rank, j);
    CHECK(c->gather(c, in, BIG_BYTES, out, root) == 0, "gather");
    if (c->rank == root) {
        size_t bad = 0;
        for (int r = 0; r < np; r++)
            for (size_t j = 0; j < BIG_BYTES; j++)
                bad += out[(size_t)r * BIG_BYTES + j] != pattern(r, j);
        CHECK(bad == 0, "gather: %zu bytes wrong", bad);
    }
    free(out);

    int broot = np > 1 ? 1 : 0;
    for (size_t j = 0; j < BIG_BYTES; j++)
        in[j] = c->rank == broot ? pattern(99, j) : 0;
    CHECK(c->bcast(c, in, BIG_BYTES, broot) == 0, "bcast");
    size_t bad = 0;
    for (size_t j = 0; j < BIG_BYTES; j++)
        bad += in[j] != pattern(99, j);
    CHECK(bad == 0, "rank %d: bcast: %zu bytes wrong", c->rank, bad);
    free(in);
}

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
    CHECK(strcmp(c->kind, "mpi") == 0, "kind %s", c->kind);
    CHECK(c->size >= 2, "run this with several ranks (size %d)", c->size);

    CHECK(iol_comm_setup(c, &err) == 0, "setup: %s", err.msg);
    struct utsname u;
    uname(&u);
    CHECK(strncmp(c->hostname, u.nodename, IOL_HOST_MAX - 1) == 0, "hostname %s", c->hostname);
    /* The test runs on one machine. */
    CHECK(c->nodes == 1 && c->tasks_per_node == c->size, "nodes %d tasks_per_node %d", c->nodes,
          c->tasks_per_node);
    CHECK(c->clock_offset_ns == 0 && c->max_abs_clock_offset_ns == 0, "offsets %lld %lld",
          (long long)c->clock_offset_ns, (long long)c->max_abs_clock_offset_ns);

    check_allreduce(c, 3, 0);
    check_allreduce(c, 3, 1);
    check_allreduce(c, BIG_COUNT, 0);
    check_allreduce(c, BIG_COUNT, 1);
    check_gather_bcast(c);
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
