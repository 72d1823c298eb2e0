/* test_interrupt.c — a signal that reaches one local rank alone is known to every rank at once (the shared
 * word) and after they agree (the exchange in iol_agree), named the same everywhere, and stops nobody by
 * itself: the ranks go on to their cleanup. */
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "comm/comm.h"
#include "common/interrupt.h"
#include "workload/run_sync.h"

static int rank_fn(struct iol_comm *c, void *arg)
{
    (void)arg;
    if (c->barrier(c)) return 10;
    if (c->rank == 1) raise(SIGHUP);   /* the handler records it: the rank keeps running */
    if (c->barrier(c)) return 11;
    /* every rank sees it through the shared word, before any collective carries it */
    if (iol_interrupt_pending() != SIGHUP) return 12;
    struct iol_err err = {0, ""};
    int err_rank = -1;
    if (!iol_agree(c, &err, &err_rank)) return 13;
    if (err.code != IOL_ERR_RUNTIME || !strstr(err.msg, "(SIGHUP)")) return 14;
    if (err_rank != 0) return 15;      /* the lowest rank: every rank noted the interrupt as its error */
    /* collectives still work for the cleanup after an interrupt */
    uint64_t one = 1, n = 0;
    if (c->allreduce(c, &one, &n, 1, IOL_DT_U64, IOL_OP_SUM) || n != (uint64_t)c->size) return 16;
    return 0;
}

int main(void)
{
    struct iol_local_outcome out;
    struct iol_err err = {0, ""};
    int rc = iol_local_run(3, rank_fn, NULL, &out, &err);
    CHECK(rc == 0 && out.status == 0 && out.failed_rank == -1, "every rank saw the signal and agreed (status %d, "
          "rank %d, signal %d): %s", out.status, out.failed_rank, out.signal, err.msg);
    CHECK(iol_interrupt_pending() == SIGHUP, "the engine process keeps the signal after the run (%d)",
          iol_interrupt_pending());
    CHECK(!strcmp(iol_signal_name(SIGTERM), "SIGTERM") && !strcmp(iol_signal_name(SIGINT), "SIGINT"), "names");
    return TEST_DONE();
}
