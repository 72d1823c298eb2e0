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
#include <sys/wait.h>
#include <unistd.h>

#include "comm_checks.h"

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

/* The rank functions run in the children; a failed CHECK there is counted in the child's copy of the
 * counters, so each rank function returns 1 if any of its checks failed and the parent checks statuses. */

static int collectives_rank(struct iol_comm *c, void *arg)
{
    check_collectives(c, "local");
    check_barrier(c, arg);
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
