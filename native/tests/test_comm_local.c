/* test_comm_local.c — the local (fork) communicator: every collective gives the right answer on every
 * rank, including sizes that need many chunks; a rank that aborts, is killed, or leaves early ends the run
 * with an outcome that says so, and nobody hangs; no child is left behind. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "comm/comm.h"

/* Larger than any plausible scratch slot, and not a multiple of one, so the last chunk is partial. */
#define BIG_COUNT ((size_t)3 * 1024 * 1024 / 8 + 17)      /* elements */
#define BIG_BYTES ((size_t)3 * 1024 * 1024 + 4097)         /* bytes */

/* The rank functions run in the children; a failed CHECK there is counted in the child's copy of the
 * counters, so each rank function returns 1 if any of its checks failed and the parent checks statuses. */

static uint64_t u_val(int rank, size_t i) { return (uint64_t)rank * 1000003u + i; }
static int64_t i_val(int rank, size_t i) { return -(int64_t)(rank + 1) * 7 + (int64_t)(i % 1000) - 500; }
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
    int64_t mine = 100 + c->rank, all[8] = { 0 };
    CHECK(c->gather(c, &mine, sizeof mine, all, 0) == 0, "small gather");
    if (c->rank == 0)
        for (int r = 0; r < np; r++)
            CHECK(all[r] == 100 + r, "small gather: slot %d holds %lld", r, (long long)all[r]);

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

/* Shared with the children (mapped before iol_local_run forks them): counts barrier arrivals. */
struct shared_counter {
    _Atomic int arrivals;
};

static void check_barrier(struct iol_comm *c, struct shared_counter *sc)
{
    /* If a rank left a barrier before every rank had entered it, it would see fewer arrivals. */
    for (int round = 1; round <= 50; round++) {
        if (c->rank == round % c->size)
            usleep(2000);   /* one late rank per round */
        atomic_fetch_add(&sc->arrivals, 1);
        CHECK(c->barrier(c) == 0, "barrier");
        int seen = atomic_load(&sc->arrivals);
        CHECK(seen == round * c->size, "round %d rank %d: %d arrivals after the barrier, expected %d", round,
              c->rank, seen, round * c->size);
        CHECK(c->barrier(c) == 0, "barrier");
    }
}

static void check_setup(struct iol_comm *c)
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
    CHECK(strcmp(c->kind, "local") == 0, "kind %s", c->kind);
}

static int collectives_rank(struct iol_comm *c, void *arg)
{
    check_setup(c);
    check_allreduce(c, 3, 0);
    check_allreduce(c, 3, 1);
    check_allreduce(c, BIG_COUNT, 0);
    check_allreduce(c, BIG_COUNT, 1);
    check_gather_bcast(c);
    check_barrier(c, arg);
    /* A zero-sized collective is a no-op, not an error. */
    CHECK(c->allreduce(c, NULL, NULL, 0, IOL_DT_U64, IOL_OP_SUM) == 0, "empty allreduce");
    return iol_test_failures ? 1 : 0;
}

static void test_collectives_give_the_same_answers_for_1_2_and_4_ranks(void)
{
    struct shared_counter *sc = mmap(NULL, sizeof *sc, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    CHECK(sc != MAP_FAILED, "mmap");
    int nps[] = { 1, 2, 4 };
    for (size_t k = 0; k < sizeof nps / sizeof nps[0]; k++) {
        atomic_store(&sc->arrivals, 0);
        struct iol_local_outcome o;
        struct iol_err err = { 0 };
        int rc = iol_local_run(nps[k], collectives_rank, sc, &o, &err);
        CHECK(rc == 0, "np=%d: %s", nps[k], err.msg);
        CHECK(o.status == 0 && o.failed_rank == -1 && o.signal == 0 && o.rank0_status == 0,
              "np=%d: status %d failed_rank %d signal %d rank0 %d", nps[k], o.status, o.failed_rank, o.signal,
              o.rank0_status);
    }
    munmap(sc, sizeof *sc);
}

/* ---- failures ------------------------------------------------------------------------------------- */

struct failure_plan {
    int victim;
    enum { ABORT, ABORT_LOW_CODE, SIGKILL_SELF, RETURN_EARLY, RETURN_STATUS } how;
};

static int failing_rank(struct iol_comm *c, void *arg)
{
    const struct failure_plan *p = arg;
    if (c->rank == p->victim) {
        usleep(100000);   /* let the others get into the barrier first */
        switch (p->how) {
        case ABORT: c->abort(c, 7);
        case ABORT_LOW_CODE: c->abort(c, 1);
        case SIGKILL_SELF: raise(SIGKILL); break;
        case RETURN_EARLY: return 1;
        case RETURN_STATUS: return 2;
        }
        return 0;
    }
    if (p->how == RETURN_STATUS)
        return 0;
    /* The victim never arrives: without failure handling this would wait forever. */
    int rc = c->barrier(c);
    /* Only reached when the victim returned: the barrier must have failed, and stay failed. */
    if (rc != -1)
        return 10;
    if (c->bcast(c, &rc, sizeof rc, 0) != -1)
        return 11;
    return 0;
}

static void run_failure(int np, struct failure_plan plan, struct iol_local_outcome *o)
{
    struct iol_err err = { 0 };
    int rc = iol_local_run(np, failing_rank, &plan, o, &err);
    CHECK(rc == 0, "run: %s", err.msg);
}

static void test_an_aborting_rank_ends_the_run_without_a_hang(void)
{
    struct iol_local_outcome o;
    run_failure(4, (struct failure_plan){ 2, ABORT }, &o);
    CHECK(o.status == 7 && o.failed_rank == 2 && o.signal == 0, "abort(7) on rank 2: status %d failed_rank %d "
          "signal %d", o.status, o.failed_rank, o.signal);
    /* Rank 0 was waiting in the barrier and was killed by the parent. */
    CHECK(o.rank0_status == -1, "rank0_status %d", o.rank0_status);

    /* An abort code in the ordinary range must still read as an abort. */
    run_failure(2, (struct failure_plan){ 1, ABORT_LOW_CODE }, &o);
    CHECK(o.status == 3 && o.failed_rank == 1, "abort(1): status %d failed_rank %d", o.status, o.failed_rank);

    /* np == 1 behaves the same: the abort ends the rank, not the caller. */
    run_failure(1, (struct failure_plan){ 0, ABORT }, &o);
    CHECK(o.status == 7 && o.failed_rank == 0 && o.rank0_status == 7, "np=1 abort: status %d failed_rank %d "
          "rank0 %d", o.status, o.failed_rank, o.rank0_status);
}

static void test_a_killed_rank_ends_the_run_without_a_hang(void)
{
    struct iol_local_outcome o;
    run_failure(4, (struct failure_plan){ 1, SIGKILL_SELF }, &o);
    CHECK(o.status > 2 && o.failed_rank == 1 && o.signal == SIGKILL, "SIGKILL on rank 1: status %d "
          "failed_rank %d signal %d", o.status, o.failed_rank, o.signal);

    run_failure(3, (struct failure_plan){ 0, SIGKILL_SELF }, &o);
    CHECK(o.failed_rank == 0 && o.signal == SIGKILL && o.rank0_status == -1, "SIGKILL on rank 0: failed_rank "
          "%d signal %d rank0 %d", o.failed_rank, o.signal, o.rank0_status);
}

static void test_a_rank_that_returns_early_breaks_the_barrier_of_the_others(void)
{
    /* Rank 3 returns 1 (an error on that rank) without joining the barrier: the others get -1 from it,
     * and from every later collective, and return normally. */
    struct iol_local_outcome o;
    run_failure(4, (struct failure_plan){ 3, RETURN_EARLY }, &o);
    CHECK(o.status == 1 && o.failed_rank == -1 && o.rank0_status == 0, "early return: status %d failed_rank "
          "%d rank0 %d", o.status, o.failed_rank, o.rank0_status);
}

static void test_the_worst_ordinary_status_is_reported(void)
{
    struct iol_local_outcome o;
    run_failure(4, (struct failure_plan){ 3, RETURN_STATUS }, &o);
    CHECK(o.status == 2 && o.failed_rank == -1 && o.signal == 0 && o.rank0_status == 0,
          "status %d failed_rank %d signal %d rank0 %d", o.status, o.failed_rank, o.signal, o.rank0_status);
}

/* ---- process hygiene -------------------------------------------------------------------------------- */

static int printing_rank(struct iol_comm *c, void *arg)
{
    (void)arg;
    printf("<rank %d>", c->rank);   /* no newline: only the flush before _exit gets it out */
    return 0;
}

static void test_child_output_is_flushed_and_parent_output_not_duplicated(void)
{
    char path[] = "/tmp/iolens-test-stdout-XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0, "mkstemp");
    fflush(stdout);
    int saved = dup(STDOUT_FILENO);
    dup2(fd, STDOUT_FILENO);
    printf("<parent>");   /* still in our buffer when iol_local_run forks */
    struct iol_local_outcome o;
    struct iol_err err = { 0 };
    int rc = iol_local_run(3, printing_rank, NULL, &o, &err);
    fflush(stdout);
    dup2(saved, STDOUT_FILENO);
    close(saved);
    CHECK(rc == 0 && o.status == 0, "run: %s", err.msg);

    char buf[256] = { 0 };
    ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
    close(fd);
    unlink(path);
    CHECK(n > 0, "read back");
    int parents = 0;
    for (char *p = buf; (p = strstr(p, "<parent>")) != NULL; p++)
        parents++;
    CHECK(parents == 1, "parent's buffered text appears %d times in '%s'", parents, buf);
    for (int r = 0; r < 3; r++) {
        char want[32];
        snprintf(want, sizeof want, "<rank %d>", r);
        CHECK(strstr(buf, want) != NULL, "'%s' missing from '%s'", want, buf);
    }
}

static int quick_rank(struct iol_comm *c, void *arg)
{
    (void)arg;
    return c->barrier(c) == 0 ? 0 : 1;
}

static void test_children_of_the_caller_are_left_to_the_caller(void)
{
    /* One child of ours exits before the run and one during it: iol_local_run must not reap either. */
    pid_t early = fork();
    if (early == 0)
        _exit(42);
    pid_t during = fork();
    if (during == 0) {
        usleep(50000);
        _exit(43);
    }
    usleep(20000);
    struct iol_local_outcome o;
    struct iol_err err = { 0 };
    int rc = iol_local_run(4, quick_rank, NULL, &o, &err);
    CHECK(rc == 0 && o.status == 0 && o.failed_rank == -1, "run: %s status %d", err.msg, o.status);
    int st = 0;
    CHECK(waitpid(early, &st, 0) == early && WIFEXITED(st) && WEXITSTATUS(st) == 42, "early child status");
    CHECK(waitpid(during, &st, 0) == during && WIFEXITED(st) && WEXITSTATUS(st) == 43, "during child status");
    /* And with our own children gone again, a run (polling fallback no longer needed) still works. */
    rc = iol_local_run(2, quick_rank, NULL, &o, &err);
    CHECK(rc == 0 && o.status == 0, "run after: %s", err.msg);
}

static void test_no_children_are_left_behind(void)
{
    errno = 0;
    pid_t r = waitpid(-1, NULL, WNOHANG);
    CHECK(r == -1 && errno == ECHILD, "a child is still around (waitpid gave %d, errno %d)", (int)r, errno);
}

static void test_bad_arguments_are_refused(void)
{
    struct iol_local_outcome o;
    struct iol_err err = { 0 };
    CHECK(iol_local_run(0, quick_rank, NULL, &o, &err) == -1 && err.code == IOL_ERR_USAGE, "np=0 accepted");
}

int main(void)
{
    /* A hang is a failure too: end the test rather than the CI job. */
    alarm(120);
    test_collectives_give_the_same_answers_for_1_2_and_4_ranks();
    test_an_aborting_rank_ends_the_run_without_a_hang();
    test_a_killed_rank_ends_the_run_without_a_hang();
    test_a_rank_that_returns_early_breaks_the_barrier_of_the_others();
    test_the_worst_ordinary_status_is_reported();
    test_child_output_is_flushed_and_parent_output_not_duplicated();
    test_children_of_the_caller_are_left_to_the_caller();
    test_no_children_are_left_behind();
    test_bad_arguments_are_refused();
    return TEST_DONE();
}
