/* aio.c — the libaio backend: Linux native AIO (io_setup, io_submit, io_getevents) through libaio.
 *
 * The kernel does the transfers asynchronously only for O_DIRECT files; on a buffered file io_submit does
 * the copy itself before it returns, so the queue depth brings nothing there (it still works, which is what
 * fio's libaio engine does too). One io_context per context, holding queue_depth requests; one io_submit
 * per submit call for the batch; completions taken in batches with one clock reading per batch, and one
 * per submit call for the submission time.
 *
 * A request the kernel refuses at io_submit (EBADF, EINVAL for a misaligned direct transfer) is a failed
 * transfer, not a failed call: it comes back from reap with its error, as with the other backends. Short
 * transfers are completed by submitting the remainder again. */
#define _GNU_SOURCE
#include "backend.h"
#include "posix_ops.h"

#include <errno.h>
#include <libaio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct iol_bctx {
    io_context_t io;
    int depth;                 /* most requests in flight */
    int inflight;              /* handed to submit and not yet handed back by reap */
    struct iocb *cbs;          /* depth control blocks; one per request in flight */
    struct iocb **free_cbs;    /* stack of unused ones */
    int nfree;
    struct iocb **batch;       /* depth: what one io_submit sends */
    struct io_event *events;   /* depth: what one io_getevents takes */
    struct iol_req **failed;   /* depth: refused at io_submit, handed back first by reap */
    int nfailed;
    struct iol_backend_stats stats;
};

static inline uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Fills cb for what is left of r (r->result bytes are done already). */
static inline void prep(struct iocb *cb, struct iol_req *r)
{
    size_t done = (size_t)r->result;
    void *buf = (unsigned char *)r->buf + done;
    if (r->op == IOL_IO_WRITE)
        io_prep_pwrite(cb, r->file->fd, buf, r->len - done, (long long)(r->offset + done));
    else
        io_prep_pread(cb, r->file->fd, buf, r->len - done, (long long)(r->offset + done));
    cb->data = r;
}

/* Sends batch[0..n) with as few io_submit calls as the kernel allows. The kernel takes a prefix and fails
 * the first request it refuses only when it took none before it; that request is finished with its error
 * and the rest are sent again. Returns 0, or -errno for a failure of the call itself. */
static int submit_batch(struct iol_bctx *ctx, struct iocb **batch, int n)
{
    int i = 0;
    while (i < n) {
        int rc = io_submit(ctx->io, n - i, batch + i);
        ctx->stats.submit_calls++;
        if (rc > 0) {
            i += rc;
        } else if (rc == -EINTR) {
            continue;
        } else if (rc == -ENOSYS) {
            return rc;   /* no AIO in this kernel: nothing could ever be sent */
        } else {
            /* About this request (EBADF, EINVAL for a misaligned direct transfer, the file's limits). EAGAIN
             * would mean the context is full, which the depth accounting rules out: ending the request is
             * better than spinning on it. */
            struct iocb *cb = batch[i++];
            struct iol_req *r = cb->data;
            r->error = rc == 0 ? EIO : -rc;
            ctx->free_cbs[ctx->nfree++] = cb;
            ctx->failed[ctx->nfailed++] = r;
        }
    }
    return 0;
}

static int aio_submit(struct iol_bctx *ctx, struct iol_req **reqs, int n, struct iol_err *err)
{
    int room = ctx->depth - ctx->inflight;
    int take = n < room ? n : room;
    if (take <= 0)
        return 0;
    for (int i = 0; i < take; i++) {
        struct iol_req *r = reqs[i];
        struct iocb *cb = ctx->free_cbs[--ctx->nfree];
        r->result = 0;
        r->error = 0;
        prep(cb, r);
        ctx->batch[i] = cb;
    }
    /* One reading for the batch, as it is handed to the kernel. */
    uint64_t t = now_ns();
    for (int i = 0; i < take; i++)
        if (!(reqs[i]->flags & IOL_REQ_UNTIMED))
            reqs[i]->t_submit_ns = t;
    ctx->inflight += take;
    ctx->stats.requests += (uint64_t)take;
    int rc = submit_batch(ctx, ctx->batch, take);
    if (rc < 0)
        return iol_err_errno(err, IOL_ERR_RUNTIME, -rc, "libaio backend: io_submit (%d requests)", take);
    return take;
}

/* Accounts one completion of r (res as the event says). Returns 1 if r is finished, 0 if its remainder is
 * to be sent again (cb prepared). */
static int complete(struct iocb *cb, struct iol_req *r, long res)
{
    if (res < 0) {
        r->error = (int)-res;
        return 1;
    }
    if (res == 0) {
        /* A read at EOF; a write that moved nothing would move nothing again. */
        if (r->op == IOL_IO_WRITE)
            r->error = EIO;
        return 1;
    }
    r->result += res;
    if ((size_t)r->result >= r->len)
        return 1;
    if (r->op == IOL_IO_READ &&
        iol_direct_remainder_impossible(r->file, (unsigned char *)r->buf + r->result, r->offset + (uint64_t)r->result))
        return 1;
    if (r->flags & IOL_REQ_SINGLE_ATTEMPT)
        return 1;
    prep(cb, r);
    return 0;
}

/* Hands back up to max of the requests refused at submission. */
static int take_failed(struct iol_bctx *ctx, struct iol_req **done, int max, uint64_t t)
{
    int k = ctx->nfailed < max ? ctx->nfailed : max;
    for (int i = 0; i < k; i++) {
        struct iol_req *r = ctx->failed[i];
        if (!(r->flags & IOL_REQ_UNTIMED))
            r->t_done_ns = t;
        done[i] = r;
    }
    memmove(ctx->failed, ctx->failed + k, (size_t)(ctx->nfailed - k) * sizeof *ctx->failed);
    ctx->nfailed -= k;
    ctx->inflight -= k;
    return k;
}

static int aio_reap(struct iol_bctx *ctx, struct iol_req **done, int min, int max, struct iol_err *err)
{
    if (min > ctx->inflight)
        return iol_err_set(err, IOL_ERR_RUNTIME, "libaio backend: reap waits for %d requests but only %d are "
                           "in flight", min, ctx->inflight);
    if (max > ctx->inflight)
        max = ctx->inflight;
    int got = 0, looked = 0;
    for (;;) {
        if (ctx->nfailed && got < max)
            got += take_failed(ctx, done + got, max - got, now_ns());
        if (got >= max || (got >= min && looked))
            break;
        /* Everything not yet handed back is in the kernel now, so waiting for `need` cannot hang. */
        long need = min > got ? min - got : 0;
        int rc = io_getevents(ctx->io, need, max - got, ctx->events, NULL);
        if (rc == -EINTR)
            continue;
        if (rc < 0)
            return iol_err_errno(err, IOL_ERR_RUNTIME, -rc, "libaio backend: io_getevents");
        looked = 1;
        if (need)
            ctx->stats.waits++;
        /* One reading for the batch: when these completions were seen. */
        uint64_t t = now_ns();
        int again = 0;
        for (int i = 0; i < rc; i++) {
            struct iocb *cb = ctx->events[i].obj;
            struct iol_req *r = cb->data;
            if (!complete(cb, r, (long)ctx->events[i].res)) {
                ctx->batch[again++] = cb;
                continue;
            }
            if (!(r->flags & IOL_REQ_UNTIMED))
                r->t_done_ns = t;
            done[got++] = r;
            ctx->free_cbs[ctx->nfree++] = cb;
            ctx->inflight--;
        }
        if (again) {
            ctx->stats.resubmits += (uint64_t)again;
            int sr = submit_batch(ctx, ctx->batch, again);
            if (sr < 0)
                return iol_err_errno(err, IOL_ERR_RUNTIME, -sr, "libaio backend: io_submit (resubmitting)");
        }
    }
    return got;
}

static int aio_ctx_open(struct iol_bctx **out, int queue_depth, struct iol_err *err)
{
    *out = NULL;
    if (queue_depth < 1)
        return iol_err_set(err, IOL_ERR_USAGE, "queue depth %d: must be at least 1", queue_depth);
    struct iol_bctx *ctx = calloc(1, sizeof *ctx);
    if (ctx == NULL)
        return iol_err_errno(err, IOL_ERR_RUNTIME, ENOMEM, "libaio backend: queue of depth %d", queue_depth);
    size_t d = (size_t)queue_depth;
    ctx->cbs = calloc(d, sizeof *ctx->cbs);
    ctx->free_cbs = calloc(d, sizeof *ctx->free_cbs);
    ctx->batch = calloc(d, sizeof *ctx->batch);
    ctx->events = calloc(d, sizeof *ctx->events);
    ctx->failed = calloc(d, sizeof *ctx->failed);
    int rc = -ENOMEM;
    if (ctx->cbs && ctx->free_cbs && ctx->batch && ctx->events && ctx->failed)
        rc = io_setup(queue_depth, &ctx->io);
    if (rc < 0) {
        free(ctx->cbs);
        free(ctx->free_cbs);
        free(ctx->batch);
        free(ctx->events);
        free(ctx->failed);
        free(ctx);
        /* EAGAIN: the machine-wide limit of AIO requests (/proc/sys/fs/aio-max-nr) would be exceeded. */
        if (rc == -EAGAIN)
            return iol_err_errno(err, IOL_ERR_RUNTIME, -rc, "libaio backend: io_setup(%d) (over "
                                 "/proc/sys/fs/aio-max-nr?)", queue_depth);
        return iol_err_errno(err, IOL_ERR_RUNTIME, -rc, "libaio backend: io_setup(%d)", queue_depth);
    }
    ctx->depth = queue_depth;
    for (int i = 0; i < queue_depth; i++)
        ctx->free_cbs[i] = &ctx->cbs[queue_depth - 1 - i];
    ctx->nfree = queue_depth;
    *out = ctx;
    return 0;
}

static void aio_ctx_close(struct iol_bctx *ctx)
{
    if (ctx == NULL)
        return;
    /* io_destroy waits for what is still in flight, so the control blocks can be freed after it. */
    io_destroy(ctx->io);
    free(ctx->cbs);
    free(ctx->free_cbs);
    free(ctx->batch);
    free(ctx->events);
    free(ctx->failed);
    free(ctx);
}

static void aio_stats(const struct iol_bctx *ctx, struct iol_backend_stats *out)
{
    *out = ctx->stats;
}

const struct iol_backend iol_backend_libaio = {
    .name = "libaio",
    .description = "asynchronous Linux native AIO through libaio (truly asynchronous only with O_DIRECT)",
    .ctx_open = aio_ctx_open,
    .ctx_close = aio_ctx_close,
    .stats = aio_stats,
    .open = iol_posix_open,
    .close = iol_posix_close,
    .submit = aio_submit,
    .reap = aio_reap,
    .fsync = iol_posix_fsync,
    .evict = iol_posix_evict,
    .stat = iol_posix_stat,
    .unlink = iol_posix_unlink,
    .mkdir = iol_posix_mkdir,
    .rmdir = iol_posix_rmdir,
    .does_io = 1,
};
