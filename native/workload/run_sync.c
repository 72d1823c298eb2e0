/* run_sync.c — see run_sync.h. */
#include "run_sync.h"

#include <stdint.h>
#include <string.h>

#include "../common/interrupt.h"

int iol_interrupted(struct iol_comm *c)
{
    if (c && c->poll_interrupt) c->poll_interrupt(c);
    return iol_interrupt_pending();
}

void iol_note_interrupt(struct iol_err *err)
{
    int sig = iol_interrupt_pending();
    if (sig && !err->code) iol_err_set(err, IOL_ERR_RUNTIME, "interrupted by signal %d (%s)", sig, iol_signal_name(sig));
}

int iol_agree(struct iol_comm *c, struct iol_err *err, int *err_rank)
{
    /* A rank that stopped on its own signal tells the others before it waits for them here. */
    iol_interrupted(c);
    iol_note_interrupt(err);
    /* One reduction carries both the lowest failing rank and the largest signal any rank received (as its
     * negative), so every rank names the same signal in its document even if only one rank was signalled. */
    int64_t mine[2] = {err->code ? c->rank : INT64_MAX, -(int64_t)iol_interrupt_pending()}, all[2];
    if (c->allreduce(c, mine, all, 2, IOL_DT_I64, IOL_OP_MIN)) {
        iol_err_set(err, IOL_ERR_RUNTIME, "communication with the other ranks failed");
        *err_rank = c->rank;
        return 1;
    }
    if (all[1] < 0) iol_interrupt_note((int)-all[1]);
    int64_t first = all[0];
    if (first == INT64_MAX) return 0;
    struct iol_err e = *err;
    if (c->bcast(c, &e, sizeof e, (int)first) == 0) *err = e;
    *err_rank = (int)first;
    return 1;
}

int iol_hist_allreduce(struct iol_comm *c, struct iol_hist *h)
{
    if (c->allreduce(c, h->buckets, h->buckets, IOL_HIST_NBUCKETS, IOL_DT_U64, IOL_OP_SUM)) return -1;
    if (c->allreduce(c, &h->count, &h->count, 2, IOL_DT_U64, IOL_OP_SUM)) return -1;   /* count, sum */
    if (c->allreduce(c, &h->min, &h->min, 1, IOL_DT_U64, IOL_OP_MIN)) return -1;
    if (c->allreduce(c, &h->max, &h->max, 1, IOL_DT_U64, IOL_OP_MAX)) return -1;
    return 0;
}
