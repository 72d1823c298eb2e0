/* profile_reduce.c — the job log's reduction (profiler/reduce.c) on rows made here: every merge kind, the
 * top-4 sets, the per-rank spread (fastest/slowest with ties to the lower rank, Darshan's population
 * variance) and that the result does not depend on the order the ranks are combined in (MPI_Reduce's tree
 * may combine them in any order). A ctest: exits 1 with the failed check named. */
#include "../joblog.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures;
#define CHECK(cond) \
    do { \
        if (!(cond)) { \
            fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, #cond); \
            failures++; \
        } \
    } while (0)

static const struct iol_red_layout *L;

static uint64_t *row(void)
{
    return calloc(L->words, 8);
}

static double f64(uint64_t w)
{
    double d;
    memcpy(&d, &w, sizeof d);
    return d;
}

/* A rank's row: POSIX open at t_open, `writes` writes of `size` bytes taking `ns` in all, an MPI-IO record
 * when mpiio. */
static uint64_t *rank_row(int64_t rank, uint64_t t_open, uint64_t writes, uint64_t size, uint64_t ns, int mpiio)
{
    uint64_t *r = row();
    r[L->present] = 3u | (mpiio ? 4u << IOL_MOD_MPIIO : 0);
    r[L->file + IOL_F_POSIX_OPENS] = 1;
    r[L->file + IOL_F_POSIX_F_OPEN_START_TIMESTAMP] = t_open;
    r[L->data + IOL_D_POSIX_WRITES] = writes;
    r[L->data + IOL_D_POSIX_BYTES_WRITTEN] = writes * size;
    r[L->data + IOL_D_POSIX_MAX_BYTE_WRITTEN] = (uint64_t)rank * 1000 + writes * size - 1;
    r[L->data + IOL_D_POSIX_F_WRITE_TIME] = ns;
    r[L->data + IOL_D_POSIX_ACCESS1_ACCESS] = size;
    r[L->data + IOL_D_POSIX_ACCESS1_COUNT] = writes;
    if (mpiio) {
        r[L->module[IOL_MOD_MPIIO] + IOL_M_MPIIO_BYTES_WRITTEN] = writes * size;
        r[L->module[IOL_MOD_MPIIO] + IOL_M_MPIIO_F_WRITE_TIME] = 2 * ns;
    }
    iol_red_spread_init(r, rank);
    return r;
}

static void check_top(void)
{
    uint64_t *a = row(), *b = row();
    unsigned v = L->data + IOL_D_POSIX_ACCESS1_ACCESS, c = L->data + IOL_D_POSIX_ACCESS1_COUNT;
    a[v] = 4000, a[c] = 3, a[v + 1] = 100, a[c + 1] = 1;
    b[v] = 4000, b[c] = 2, b[v + 1] = 64, b[c + 1] = 5, b[v + 2] = 7, b[c + 2] = 1, b[v + 3] = 8, b[c + 3] = 1;
    iol_red_merge(a, b, 1);
    /* counts of equal values add; largest count first, ties by the smaller value; four kept */
    CHECK(b[v] == 64 && b[c] == 5);
    CHECK(b[v + 1] == 4000 && b[c + 1] == 5);
    CHECK(b[v + 2] == 7 && b[c + 2] == 1);
    CHECK(b[v + 3] == 8 && b[c + 3] == 1);
    free(a), free(b);
}

static void check_kinds(void)
{
    uint64_t *a = rank_row(0, 0, 4, 100, 50, 0), *b = rank_row(1, 30, 8, 100, 90, 0);
    iol_red_merge(a, b, 1);
    CHECK(b[L->file + IOL_F_POSIX_OPENS] == 2);                          /* sum */
    CHECK(b[L->data + IOL_D_POSIX_BYTES_WRITTEN] == 1200);               /* sum */
    CHECK(b[L->data + IOL_D_POSIX_MAX_BYTE_WRITTEN] == 1000 + 800 - 1);  /* max */
    CHECK(b[L->file + IOL_F_POSIX_F_OPEN_START_TIMESTAMP] == 30);        /* min of the non-zero */
    CHECK(b[L->present] == 3u);                                          /* or */
    free(a), free(b);
    /* a timestamp before rank 0 started becomes its start; 0 ("never") stays */
    uint64_t *s = row();
    s[L->file + IOL_F_POSIX_F_OPEN_START_TIMESTAMP] = 100;
    s[L->data + IOL_D_POSIX_F_WRITE_END_TIMESTAMP] = 500;
    iol_red_shift_stamps(s, -200);
    CHECK(s[L->file + IOL_F_POSIX_F_OPEN_START_TIMESTAMP] == 1);
    CHECK(s[L->data + IOL_D_POSIX_F_WRITE_END_TIMESTAMP] == 300);
    CHECK(s[L->data + IOL_D_POSIX_F_READ_END_TIMESTAMP] == 0);
    CHECK(s[L->data + IOL_D_POSIX_BYTES_WRITTEN] == 0); /* not a timestamp: not shifted */
    free(s);
}

/* Four ranks combined in three orders; rank 3 ties rank 1 for the slowest time. */
static void check_spread(void)
{
    const uint64_t writes[4] = { 4, 8, 4, 8 }, ns[4] = { 5000, 9000, 3000, 9000 };
    uint64_t out[3][IOL_NSPREAD];
    const int orders[3][4] = { { 0, 1, 2, 3 }, { 3, 2, 1, 0 }, { 2, 0, 3, 1 } };
    for (int o = 0; o < 3; o++) {
        uint64_t *r[4];
        for (int k = 0; k < 4; k++)
            r[k] = rank_row(k, 10 + (uint64_t)k, writes[k], 1000, ns[k], k != 2);
        /* a pairwise tree: (o0 + o1) + (o2 + o3) */
        iol_red_merge(r[orders[o][0]], r[orders[o][1]], 1);
        iol_red_merge(r[orders[o][2]], r[orders[o][3]], 1);
        iol_red_merge(r[orders[o][1]], r[orders[o][3]], 1);
        iol_red_spread_values(r[orders[o][3]], 4, out[o]);
        for (int k = 0; k < 4; k++)
            free(r[k]);
    }
    for (int o = 1; o < 3; o++)
        for (unsigned i = 0; i < IOL_NSPREAD; i++)
            if (i != IOL_S_POSIX_F_VARIANCE_RANK_TIME && i != IOL_S_POSIX_F_VARIANCE_RANK_BYTES &&
                i != IOL_S_MPIIO_F_VARIANCE_RANK_TIME && i != IOL_S_MPIIO_F_VARIANCE_RANK_BYTES)
                CHECK(out[o][i] == out[0][i]);
    uint64_t *s = out[0];
    CHECK(s[IOL_S_REDUCED_RANKS] == 4);
    CHECK(s[IOL_S_POSIX_RANKS] == 4);
    CHECK(s[IOL_S_POSIX_FASTEST_RANK] == 2 && s[IOL_S_POSIX_FASTEST_RANK_BYTES] == 4000);
    CHECK(s[IOL_S_POSIX_F_FASTEST_RANK_TIME] == 3000);
    CHECK(s[IOL_S_POSIX_SLOWEST_RANK] == 1 && s[IOL_S_POSIX_SLOWEST_RANK_BYTES] == 8000); /* tie: rank 1 */
    CHECK(s[IOL_S_POSIX_F_SLOWEST_RANK_TIME] == 9000);
    /* population variance (Darshan's S / n): bytes 4000, 8000, 4000, 8000 -> 4e6; times in s */
    for (int o = 0; o < 3; o++) {
        CHECK(fabs(f64(out[o][IOL_S_POSIX_F_VARIANCE_RANK_BYTES]) - 4e6) < 1e-6);
        double m = (5 + 9 + 3 + 9) / 4.0 * 1e-6, var = 0;
        for (int k = 0; k < 4; k++)
            var += ((double)ns[k] / 1e9 - m) * ((double)ns[k] / 1e9 - m) / 4;
        CHECK(fabs(f64(out[o][IOL_S_POSIX_F_VARIANCE_RANK_TIME]) - var) < 1e-18);
    }
    /* MPI-IO: rank 2 had no record of the layer, so three ranks count */
    CHECK(s[IOL_S_MPIIO_RANKS] == 3);
    CHECK(s[IOL_S_MPIIO_FASTEST_RANK] == 0 && s[IOL_S_MPIIO_F_FASTEST_RANK_TIME] == 10000);
    CHECK(s[IOL_S_MPIIO_SLOWEST_RANK] == 1 && s[IOL_S_MPIIO_SLOWEST_RANK_BYTES] == 8000);
}

/* A rank's row that wrote first at `w` and read first at `r` (0: did not). */
static uint64_t *role_row(int64_t rank, uint64_t w, uint64_t r)
{
    uint64_t *x = row();
    x[L->present] = 3u;
    x[L->data + IOL_D_POSIX_WRITES] = w != 0;
    x[L->data + IOL_D_POSIX_F_WRITE_START_TIMESTAMP] = w;
    x[L->data + IOL_D_STDIO_READS] = r != 0; /* a stdio read counts as a read */
    x[L->data + IOL_D_STDIO_F_READ_START_TIMESTAMP] = r;
    iol_red_spread_init(x, rank);
    return x;
}

/* Data handed between ranks: some rank's first read after another rank's first write. */
static int handed(const uint64_t (*wr)[2], int n, uint64_t *roles)
{
    uint64_t *acc = role_row(0, wr[0][0], wr[0][1]);
    for (int k = 1; k < n; k++) {
        uint64_t *x = role_row(k, wr[k][0], wr[k][1]);
        iol_red_merge(x, acc, 1);
        free(x);
    }
    uint64_t out[IOL_NSPREAD];
    iol_red_spread_values(acc, (uint64_t)n, out);
    free(acc);
    for (int i = 0; i < 3; i++)
        roles[i] = out[IOL_S_WRITER_RANKS + i];
    return (int)out[IOL_S_READ_AFTER_OTHER_WRITE];
}

static void check_roles(void)
{
    uint64_t roles[3];
    const uint64_t handoff[2][2] = { { 10, 30 }, { 12, 25 } }; /* each reads what the other wrote */
    CHECK(handed(handoff, 2, roles) == 1 && roles[0] == 2 && roles[1] == 2 && roles[2] == 2);
    const uint64_t own[3][2] = { { 10, 5 }, { 0, 0 }, { 0, 0 } }; /* rank 0 read before writing: nobody after */
    CHECK(handed(own, 3, roles) == 0 && roles[0] == 1 && roles[1] == 1 && roles[2] == 1);
    const uint64_t self[2][2] = { { 10, 40 }, { 0, 0 } }; /* rank 0 reads its own write: not handed */
    CHECK(handed(self, 2, roles) == 0);
    const uint64_t late[3][2] = { { 10, 50 }, { 20, 0 }, { 0, 0 } }; /* rank 0 reads after rank 1's write */
    CHECK(handed(late, 3, roles) == 1);
    const uint64_t early[3][2] = { { 0, 5 }, { 60, 0 }, { 70, 0 } }; /* the read came before any write */
    CHECK(handed(early, 3, roles) == 0 && roles[0] == 2 && roles[1] == 1 && roles[2] == 0);
}

int main(void)
{
    L = iol_red_layout();
    CHECK(L->words > IOL_NFILE + IOL_NDATA && L->module[IOL_MOD_MPIIO] != 0 && L->module[IOL_MOD_SPREAD] == 0);
    check_top();
    check_kinds();
    check_spread();
    check_roles();
    if (failures == 0)
        printf("profile_reduce: ok\n");
    return failures ? 1 : 0;
}
