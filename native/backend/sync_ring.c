/* sync_ring.c — completion ring for synchronous backends: the parts off the hot path, and reap. */
#include "sync_ring.h"

#include <errno.h>
#include <stdlib.h>

int iol_sync_ctx_open(struct iol_bctx **out, int queue_depth, const char *name, struct iol_err *err)
{
    *out = NULL;
    if (queue_depth < 1)
        return iol_err_set(err, IOL_ERR_USAGE, "queue depth %d: must be at least 1", queue_depth);
    struct iol_bctx *ctx = calloc(1, sizeof *ctx);
    struct iol_req **ring = calloc((size_t)queue_depth, sizeof *ring);
    if (ctx == NULL || ring == NULL) {
        free(ctx);
        free(ring);
        return iol_err_errno(err, IOL_ERR_RUNTIME, ENOMEM, "%s backend: queue of depth %d", name, queue_depth);
    }
    ctx->name = name;
    ctx->depth = queue_depth;
    ctx->done = ring;
    *out = ctx;
    return 0;
}

void iol_sync_ctx_close(struct iol_bctx *ctx)
{
    if (ctx == NULL)
        return;
    free(ctx->done);
    free(ctx);
}

int iol_sync_reap(struct iol_bctx *ctx, struct iol_req **done, int min, int max, struct iol_err *err)
{
    if (min > ctx->count)
        return iol_err_set(err, IOL_ERR_RUNTIME, "%s backend: reap waits for %d requests but only %d are "
                           "in flight", ctx->name, min, ctx->count);
    if (max < 0)
        max = 0;
    int take = max < ctx->count ? max : ctx->count;
    for (int i = 0; i < take; i++) {
        done[i] = ctx->done[ctx->head];
        if (++ctx->head == ctx->depth)
            ctx->head = 0;
    }
    ctx->count -= take;
    return take;
}
