/* comm.c — what every communicator does the same way on top of its collectives: learning the node layout
 * and aligning clocks (iol_comm_setup), and recognising an MPI launch from the environment. */
#define _GNU_SOURCE
#include "comm.h"

#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>

#include "../common/clock.h"

/* Samples of the clock offset; the median of an odd number discards the rounds where a rank was
 * descheduled between leaving the barrier and reading its clock. */
#define CLOCK_ROUNDS 15

static void own_hostname(char host[IOL_HOST_MAX])
{
    /* Zero-filled, fixed-size records: names compare with memcmp and travel as plain bytes. A name longer
     * than IOL_HOST_MAX-1 is cut; nodes that differ only past that point would count as one. */
    memset(host, 0, IOL_HOST_MAX);
    struct utsname u;
    if (uname(&u) != 0) {
        memcpy(host, "unknown", sizeof "unknown");
        return;
    }
    size_t n = strnlen(u.nodename, sizeof u.nodename);
    if (n > IOL_HOST_MAX - 1)
        n = IOL_HOST_MAX - 1;
    memcpy(host, u.nodename, n);
}

/* Entry `rank` of a comma-separated test-hook list (see comm.h) into out; 0 if there is none. */
static int test_hook(const char *var, int rank, char *out, size_t len)
{
    const char *v = getenv(var);
    for (int i = 0; v && *v; i++) {
        const char *end = strchr(v, ',');
        size_t n = end ? (size_t)(end - v) : strlen(v);
        if (i == rank) {
            if (n == 0 || n >= len) return 0;
            memcpy(out, v, n);
            out[n] = '\0';
            return 1;
        }
        v = end ? end + 1 : NULL;
    }
    return 0;
}

static void apply_test_hooks(struct iol_comm *c)
{
    char v[IOL_HOST_MAX];
    if (test_hook("IOLENS_TEST_HOST", c->rank, v, sizeof v)) {
        memset(c->hostname, 0, IOL_HOST_MAX);
        memcpy(c->hostname, v, strlen(v));
    }
    if (test_hook("IOLENS_TEST_CLOCK_SKEW_NS", c->rank, v, sizeof v)) c->test_clock_skew_ns = strtoll(v, NULL, 10);
}

static int cmp_host(const void *a, const void *b)
{
    return memcmp(a, b, IOL_HOST_MAX);
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* What rank 0 tells everyone before the gather: its host name, and whether it could allocate the gather
 * buffer (if not, every rank must stop together rather than hang in the gather). */
struct setup_hello {
    char host0[IOL_HOST_MAX];
    int64_t alloc_failed;
};

static int setup_fail(struct iol_err *err, const char *step)
{
    return iol_err_set(err, IOL_ERR_RUNTIME, "communicator setup: %s failed (a rank has stopped)", step);
}

void iol_node_layout(char *names, int n, struct iol_node_layout *out)
{
    out->nodes = 0;
    out->tasks_on_node0 = 0;
    out->block_mapping = n <= 1 || cmp_host(names, names + IOL_HOST_MAX) == 0;
    for (int r = 0; r < n; r++) out->tasks_on_node0 += cmp_host(names + (size_t)r * IOL_HOST_MAX, names) == 0;
    /* Sorting makes the distinct count O(n log n): a quadratic scan would take minutes at 100k ranks. */
    qsort(names, (size_t)n, IOL_HOST_MAX, cmp_host);
    for (int r = 0; r < n; r++)
        out->nodes += r == 0 || cmp_host(names + (size_t)r * IOL_HOST_MAX, names + (size_t)(r - 1) * IOL_HOST_MAX) != 0;
}

int iol_placement_runs(const char *names, int n, struct iol_placement *out)
{
    int runs = 0;
    for (int r = 0; r < n; r++) {
        const char *name = names + (size_t)r * IOL_HOST_MAX;
        if (r == 0 || cmp_host(name, name - IOL_HOST_MAX) != 0) {
            if (out) {
                memcpy(out[runs].host, name, IOL_HOST_MAX);
                out[runs].host[IOL_HOST_MAX - 1] = '\0';
                out[runs].first_rank = r;
                out[runs].ranks = 0;
            }
            runs++;
        }
        if (out) out[runs - 1].ranks++;
    }
    return runs;
}

/* Rank 0 keeps where every rank ran (before iol_node_layout sorts the names); none if out of memory: the
 * document then goes without it rather than the run failing. */
static void keep_placement(struct iol_comm *c, const char *all)
{
    int runs = iol_placement_runs(all, c->size, NULL);
    c->placement = malloc((size_t)runs * sizeof *c->placement);
    if (c->placement == NULL) return;
    c->placement_runs = iol_placement_runs(all, c->size, c->placement);
}

int iol_comm_setup(struct iol_comm *c, struct iol_err *err)
{
    own_hostname(c->hostname);
    c->clock_offset_ns = 0;
    c->max_abs_clock_offset_ns = 0;
    c->test_clock_skew_ns = 0;
    free(c->placement);
    c->placement = NULL;
    c->placement_runs = 0;
    apply_test_hooks(c);

    char *all = NULL;
    struct setup_hello hello;
    memset(&hello, 0, sizeof hello);
    if (c->rank == 0) {
        memcpy(hello.host0, c->hostname, IOL_HOST_MAX);
        all = malloc((size_t)c->size * IOL_HOST_MAX);
        hello.alloc_failed = all == NULL;
    }
    if (c->bcast(c, &hello, sizeof hello, 0) != 0)
        return setup_fail(err, "broadcast of rank 0's host name");
    if (hello.alloc_failed)
        return iol_err_set(err, IOL_ERR_RUNTIME, "communicator setup: rank 0 is out of memory for %d host names",
                           c->size);
    int same_host = memcmp(c->hostname, hello.host0, IOL_HOST_MAX) == 0;

    /* Rank 0 counts; the others only need the two numbers. */
    if (c->gather(c, c->hostname, IOL_HOST_MAX, all, 0) != 0) {
        free(all);
        return setup_fail(err, "gather of host names");
    }
    struct iol_node_layout layout = {0, 0, 0};
    if (c->rank == 0) {
        keep_placement(c, all);
        iol_node_layout(all, c->size, &layout);
        free(all);
    }
    if (c->bcast(c, &layout, sizeof layout, 0) != 0)
        return setup_fail(err, "broadcast of the node count");
    c->nodes = layout.nodes;
    c->tasks_per_node = layout.tasks_on_node0;
    c->block_mapping = layout.block_mapping;

    /* On one node every rank reads the same CLOCK_MONOTONIC: nothing to measure. */
    if (c->nodes == 1)
        return 0;

    /* Each round: leave a barrier together, read the clock, learn what rank 0 read. The difference is the
     * clock offset plus the spread of barrier exits, which the median keeps small. Ranks on rank 0's host
     * take part (collectives need everyone) but keep offset 0: they share its clock. */
    int64_t samples[CLOCK_ROUNDS];
    for (int i = 0; i < CLOCK_ROUNDS; i++) {
        if (c->barrier(c) != 0)
            return setup_fail(err, "clock alignment barrier");
        uint64_t mine = (uint64_t)((int64_t)iol_now_ns() + c->test_clock_skew_ns);
        uint64_t root = mine;
        if (c->bcast(c, &root, sizeof root, 0) != 0)
            return setup_fail(err, "clock alignment broadcast");
        samples[i] = (int64_t)(mine - root);
    }
    if (!same_host) {
        qsort(samples, CLOCK_ROUNDS, sizeof samples[0], cmp_i64);
        c->clock_offset_ns = samples[CLOCK_ROUNDS / 2];
    }
    int64_t mag = c->clock_offset_ns < 0 ? -c->clock_offset_ns : c->clock_offset_ns;
    if (c->allreduce(c, &mag, &c->max_abs_clock_offset_ns, 1, IOL_DT_I64, IOL_OP_MAX) != 0)
        return setup_fail(err, "clock offset reduction");
    return 0;
}

/* True if the variable is set to something non-empty. */
static int env_set(const char *name)
{
    const char *v = getenv(name);
    return v != NULL && v[0] != '\0';
}

/* Lives here rather than in comm_mpi.c so that a build without MPI can still tell the user "you launched
 * me with mpirun, but this build has no MPI" instead of silently running N separate one-rank jobs. */
int iol_mpi_launched(void)
{
    /* Set for every process an MPI launcher starts:
     *   Open MPI mpirun/prterun: OMPI_COMM_WORLD_SIZE (and PMIX_RANK)
     *   MPICH/Intel MPI hydra: PMI_RANK, PMI_SIZE (Intel MPI also MPI_LOCALRANKID)
     *   srun --mpi=pmi2: PMI_RANK, PMI_SIZE; srun --mpi=pmix: PMIX_RANK
     *   MVAPICH's mpirun_rsh: MV2_COMM_WORLD_SIZE; Cray ALPS aprun: ALPS_APP_PE */
    static const char *const launcher_vars[] = {
        "OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMI_RANK", "PMIX_RANK", "MPI_LOCALRANKID",
        "MV2_COMM_WORLD_SIZE", "ALPS_APP_PE",
    };
    for (size_t i = 0; i < sizeof launcher_vars / sizeof launcher_vars[0]; i++)
        if (env_set(launcher_vars[i]))
            return 1;
    /* srun without an MPI plugin (--mpi=none) sets only SLURM_* variables. SLURM_PROCID alone is also set
     * in a batch script, which is not a launch; a job step of several tasks is (SLURM_STEP_NUM_TASKS is
     * set by srun only: SLURM_NTASKS would also match the batch script of a many-task job). A one-task step
     * without an MPI plugin counts as a plain start, so `srun -n1 iolens-bench --np 8` runs locally. */
    if (env_set("SLURM_STEP_ID") && env_set("SLURM_PROCID")) {
        const char *n = getenv("SLURM_STEP_NUM_TASKS");
        if (n != NULL && strtol(n, NULL, 10) > 1)
            return 1;
    }
    return 0;
}
