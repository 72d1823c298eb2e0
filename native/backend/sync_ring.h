/* sync_ring.h — completion ring for synchronous backends (posix, pvsync2, mmap, null).
 *
 * Such a backend finishes each request inside submit; its whole per-rank context is the ring of completed
 * requests that reap hands back, oldest first. The ring holds queue_depth pointers allocated once in
 * ctx_open, so submit and reap do no allocation and no locking: the backend's submit does its I/O and
 * pushes the requests (inline, below); ctx_open, ctx_close and reap are the backend's entries as they are. */
#ifndef IOL_SYNC_RING_H
#define IOL_SYNC_RING_H
#include "backend.h"

struct iol_bctx {
    const char *name;          /* the backend's, for messages */
    int depth;                 /* most requests held at once */
    int head;                  /* oldest completed request */
    int count;                 /* completed requests not yet reaped */
    struct iol_req **done;     /* ring of depth entries */
    int rw_flags;              /* pvsync2: RWF_* flags of every preadv2/pwritev2 */
    int mmap_advice;           /* mmap: IOL_MMAP_* advice given at every open */
    uint64_t delay_lo_ns;      /* null: completion delays spread over [lo, hi] (see iol_backend_opts) */
    uint64_t delay_hi_ns;
    uint64_t delay_seq;        /* requests delayed so far */
    void *priv;                /* a backend's own state beside the ring (mpiio, hdf5, ncmpi: MPI settings) */
};

/* ctx_open for a synchronous backend: `name` (static) is the backend's, as its messages say it. */
int iol_sync_ctx_open(struct iol_bctx **out, int queue_depth, const char *name, struct iol_err *err);
void iol_sync_ctx_close(struct iol_bctx *ctx);
/* reap: hands back up to max completed requests; waiting for more than are held is an error (everything
 * submitted is already complete, so that wait could never end). */
int iol_sync_reap(struct iol_bctx *ctx, struct iol_req **done, int min, int max, struct iol_err *err);

/* How many more requests submit may take. */
static inline int iol_sync_room(const struct iol_bctx *ctx)
{
    return ctx->depth - ctx->count;
}

/* Queues n completed requests for reap (none if n <= 0); n must be at most iol_sync_room(). */
static inline void iol_sync_push(struct iol_bctx *ctx, struct iol_req **reqs, int n)
{
    int tail = ctx->head + ctx->count;
    for (int i = 0; i < n; i++) {
        if (tail >= ctx->depth)
            tail -= ctx->depth;
        ctx->done[tail++] = reqs[i];
        ctx->count++;
    }
}

#endif
