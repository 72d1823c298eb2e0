/* comm_checks.h — checks every communicator must pass, whatever carries the data: each dtype and operation
 * of allreduce (in place too), gather and bcast of multi-MiB buffers to a root other than 0, and
 * iol_comm_setup on one node. Shared by test_comm_local.c (forked ranks) and mpi_comm_check.c (MPI ranks),
 * so the two communicators are held to the same answers. Call check_collectives() on every rank. */
#ifndef IOL_TEST_COMM_CHECKS_H
#define IOL_TEST_COMM_CHECKS_H
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>

#include "check.h"
#include "comm/comm.h"

/* Larger than any plausible scratch slot or chunk, and not a multiple of one, so the last chunk is partial. */
#define BIG_COUNT ((size_t)3 * 1024 * 1024 / 8 + 17)      /* elements */
#define BIG_BYTES ((size_t)3 * 1024 * 1024 + 4097)         /* bytes */

static uint64_t u_val(int rank, size_t i) { return (uint64_t)rank * 1000003u + i; }
static int64_t i_val(int rank, size_t i) { return -(int64_t)(rank + 1) * 7 + (int64_t)(i % 1000) - 500; }
/* Quarter steps stay exact in a double, so the sum does not depend on the reduction order. */
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
        size_t bad_u = 0, bad_i = 0, bad_f = 0, first_bad = (size_t)-1;
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
            if (uo[i] != eu) bad_u++;
            if (io[i] != ei) bad_i++;
            if (fo[i] != ef) bad_f++;
            if ((uo[i] != eu || io[i] != ei || fo[i] != ef) && first_bad == (size_t)-1)
                first_bad = i;
        }
        CHECK(bad_u == 0 && bad_i == 0 && bad_f == 0,
              "np=%d rank %d count %zu in_place %d op %d: %zu u64, %zu i64, %zu f64 wrong (first at %zu)", np,
              c->rank, count, in_place, op, bad_u, bad_i, bad_f, first_bad);
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
    int np = c->size;
    int root = np - 1;   /* not rank 0, so "root" is not confused with "rank 0" */
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
        CHECK(bad == 0, "np=%d: gather of %zu bytes per rank: %zu bytes wrong", np, BIG_BYTES, bad);
    }
    free(out);

    /* A small gather as the engine uses it (one value per rank), to the default root. */
    int64_t mine = 100 + c->rank;
    int64_t *all = calloc((size_t)np, sizeof *all);
    CHECK(c->gather(c, &mine, sizeof mine, all, 0) == 0, "small gather");
    if (c->rank == 0)
        for (int r = 0; r < np; r++)
            CHECK(all[r] == 100 + r, "small gather: slot %d holds %lld", r, (long long)all[r]);
    free(all);

    int broot = np > 1 ? 1 : 0;
    for (size_t j = 0; j < BIG_BYTES; j++)
        in[j] = c->rank == broot ? pattern(99, j) : 0;
    CHECK(c->bcast(c, in, BIG_BYTES, broot) == 0, "bcast");
    size_t bad = 0;
    for (size_t j = 0; j < BIG_BYTES; j++)
        bad += in[j] != pattern(99, j);
    CHECK(bad == 0, "np=%d rank %d: bcast of %zu bytes: %zu bytes wrong", np, c->rank, BIG_BYTES, bad);
    free(in);
}

/* The test runs on one machine: one node, every rank on it, no clock offsets. */
static void check_setup(struct iol_comm *c, const char *kind)
{
    struct iol_err err = { 0 };
    CHECK(iol_comm_setup(c, &err) == 0, "setup: %s", err.msg);
    CHECK(c->nodes == 1, "nodes %d", c->nodes);
    CHECK(c->tasks_per_node == c->size, "tasks_per_node %d, size %d", c->tasks_per_node, c->size);
    CHECK(c->clock_offset_ns == 0, "offset %lld", (long long)c->clock_offset_ns);
    CHECK(c->max_abs_clock_offset_ns == 0, "max offset %lld", (long long)c->max_abs_clock_offset_ns);
    struct utsname u;
    uname(&u);
    CHECK(strncmp(c->hostname, u.nodename, IOL_HOST_MAX - 1) == 0, "hostname '%s' vs '%s'", c->hostname,
          u.nodename);
    CHECK(strcmp(c->kind, kind) == 0, "kind %s, expected %s", c->kind, kind);
}

/* Setup, then every collective but the barrier (whose check needs memory the ranks share). */
static void check_collectives(struct iol_comm *c, const char *kind)
{
    check_setup(c, kind);
    check_allreduce(c, 3, 0);
    check_allreduce(c, 3, 1);
    check_allreduce(c, BIG_COUNT, 0);
    check_allreduce(c, BIG_COUNT, 1);
    check_gather_bcast(c);
    /* A zero-sized collective is a no-op, not an error. */
    CHECK(c->allreduce(c, NULL, NULL, 0, IOL_DT_U64, IOL_OP_SUM) == 0, "empty allreduce");
}

#endif
