/* joblog_scale.c — the collectives of the job log's reduction at MPI_Finalize (native/profiler/
 * wrap_finalize.c), run with synthetic inputs of F reduced files, each phase timed alone (bench/joblog_bench.py
 * fits them to a model of P ranks). The reduction is the runtime's own (reduce.c, linked in).
 *
 *   mpirun -np P joblog_scale F REPS       phases: median us over REPS (slowest rank), printed by rank 0
 *   joblog_scale F REPS compute            one process: ns per row merge (the user op's work per file) */
#include "joblog.h"

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void merge_op(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    iol_red_merge(in, inout, (size_t)*len);
}

static uint64_t *rows_of(size_t f, int rank)
{
    const struct iol_red_layout *l = iol_red_layout();
    uint64_t *rows = calloc(f, l->words * 8);
    for (size_t i = 0; i < f; i++) {
        uint64_t *r = rows + i * l->words;
        for (unsigned w = 0; w < l->spread; w++)
            r[w] = l->kind[w] == RK_OR ? 3 : (uint64_t)(rank + 1) * (w + 1) * (i + 1);
        iol_red_spread_init(r, rank);
    }
    return rows;
}

int main(int argc, char **argv)
{
    if (argc < 3)
        return 2;
    size_t f = strtoul(argv[1], NULL, 10);
    int reps = atoi(argv[2]);
    const struct iol_red_layout *l = iol_red_layout();
    if (argc > 3 && strcmp(argv[3], "compute") == 0) {
        uint64_t *a = rows_of(f, 1), *b = rows_of(f, 2);
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        for (int k = 0; k < reps; k++)
            iol_red_merge(a, b, f);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        double ns = (double)(t1.tv_sec - t0.tv_sec) * 1e9 + (double)(t1.tv_nsec - t0.tv_nsec);
        printf("compute F=%zu words=%u ns_per_row_merge=%.1f\n", f, l->words, ns / ((double)reps * (double)f));
        return 0;
    }
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm comm;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    uint64_t *rows = rows_of(f, rank), *red = rank == 0 ? calloc(f, l->words * 8) : NULL;
    uint64_t *hashes = calloc(f, 8), n = f, mine = 20000 + (uint64_t)rank, before = 0;
    uint8_t *have = malloc(f), *all = malloc(f);
    memset(have, 0xFF, f);
    uint64_t *lens = rank == 0 ? calloc((size_t)size, 8) : NULL;
    MPI_Datatype row_t;
    MPI_Op op;
    MPI_Type_contiguous((int)(l->words * 8), MPI_BYTE, &row_t);
    MPI_Type_commit(&row_t);
    MPI_Op_create(merge_op, 1, &op);
    const char *names[] = { "allreduce_ok", "bcast_count", "bcast_hashes", "allreduce_band", "allreduce_sig",
                            "reduce_rows", "exscan", "gather" };
    /* the files' signatures (IOL_SIG_WORDS words each): an AND and an OR allreduce (joblog.h) */
    uint64_t *sig = calloc(f * IOL_SIG_WORDS, 8), *band = calloc(f * IOL_SIG_WORDS, 8),
             *bor = calloc(f * IOL_SIG_WORDS, 8);
    double *t = malloc(sizeof(double) * (size_t)reps);
    for (int ph = 0; ph < 8; ph++) {
        for (int k = 0; k < reps; k++) {
            int ok = 1, allok;
            MPI_Barrier(comm);
            double t0 = MPI_Wtime();
            switch (ph) {
            case 0:
                MPI_Allreduce(&ok, &allok, 1, MPI_INT, MPI_MIN, comm);
                break;
            case 1:
                MPI_Bcast(&n, 1, MPI_UINT64_T, 0, comm);
                break;
            case 2:
                MPI_Bcast(hashes, (int)f, MPI_UINT64_T, 0, comm);
                break;
            case 3:
                MPI_Allreduce(have, all, (int)f, MPI_BYTE, MPI_BAND, comm);
                break;
            case 4:
                MPI_Allreduce(sig, band, (int)(f * IOL_SIG_WORDS), MPI_UINT64_T, MPI_BAND, comm);
                MPI_Allreduce(sig, bor, (int)(f * IOL_SIG_WORDS), MPI_UINT64_T, MPI_BOR, comm);
                break;
            case 5:
                MPI_Reduce(rows, red, (int)f, row_t, op, 0, comm);
                break;
            case 6:
                MPI_Exscan(&mine, &before, 1, MPI_UINT64_T, MPI_SUM, comm);
                break;
            case 7:
                MPI_Gather(&mine, 1, MPI_UINT64_T, lens, 1, MPI_UINT64_T, 0, comm);
                break;
            }
            double dt = MPI_Wtime() - t0, worst;
            MPI_Allreduce(&dt, &worst, 1, MPI_DOUBLE, MPI_MAX, comm);
            t[k] = worst;
        }
        qsort(t, (size_t)reps, sizeof *t, cmp);
        if (rank == 0)
            printf("phase P=%d F=%zu %s us=%.1f\n", size, f, names[ph], t[reps / 2] * 1e6);
    }
    free(sig);
    free(band);
    free(bor);
    MPI_Op_free(&op);
    MPI_Type_free(&row_t);
    MPI_Comm_free(&comm);
    MPI_Finalize();
    return 0;
}
