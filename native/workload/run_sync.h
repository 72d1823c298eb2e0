/* run_sync.h — how the ranks of a workload stay in step about errors and combine their histograms. */
#ifndef IOL_RUN_SYNC_H
#define IOL_RUN_SYNC_H
#include "../comm/comm.h"
#include "../common/error.h"
#include "../common/hist.h"

/* A signal pending on this rank or on another (through the communicator's poll, see comm.h), or 0. The
 * poll every workload loop makes. */
int iol_interrupted(struct iol_comm *c);

/* Turns a pending Ctrl-C / SIGTERM into this rank's error (if it has none yet). */
void iol_note_interrupt(struct iol_err *err);

/* Every rank calls this at the same point. Returns 1 if any rank has an error (or was interrupted); every
 * rank then holds the message of the lowest failing rank in *err and that rank in *err_rank. */
int iol_agree(struct iol_comm *c, struct iol_err *err, int *err_rank);

/* Merges every rank's histogram into every rank's copy (bucket counts summed: exact). */
int iol_hist_allreduce(struct iol_comm *c, struct iol_hist *h);

#endif
