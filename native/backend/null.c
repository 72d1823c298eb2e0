/* null.c — a backend that moves no data and touches no file system.
 *
 * It measures the framework's own cost (request setup, queueing, timing, histograms, collectives), so it
 * must cost as little as possible itself: one clock reading per submit call (the requests' completion
 * time: their latencies are real), no system call otherwise.
 * Because nothing reaches storage (does_io = 0), the engine skips its safety checks for it. */
#define _GNU_SOURCE
#include "sync_ring.h"

#include <string.h>
#include <time.h>

static int null_ctx_open(struct iol_bctx **out, int queue_depth, struct iol_err *err)
{
    return iol_sync_ctx_open(out, queue_depth, "null", err);
}

/* Delays come from 1000 evenly spaced values lo + k (hi - lo) / 999, visited in a scrambled order (k = 359 j
 * mod 1000; 359 is prime to 1000), so every 1000 requests see each value once: the exact percentiles of the
 * latencies are known in advance. */
#define NULL_DELAY_STEPS 1000u

static int null_ctx_open_opts(struct iol_bctx **out, int queue_depth, const struct iol_backend_opts *opts,
                              struct iol_err *err)
{
    if (opts->sqthread_poll)
        return iol_err_set(err, IOL_ERR_USAGE, "sqthread_poll: the null backend has no submission queue");
    if (opts->hipri)
        return iol_err_set(err, IOL_ERR_USAGE, "hipri: the null backend has no completions to poll");
    if (opts->null_delay_hi_ns < opts->null_delay_lo_ns)
        return iol_err_set(err, IOL_ERR_USAGE, "null delay: the high bound is below the low one");
    if (iol_sync_ctx_open(out, queue_depth, "null", err))
        return -1;
    (*out)->delay_lo_ns = opts->null_delay_lo_ns;
    (*out)->delay_hi_ns = opts->null_delay_hi_ns;
    return 0;
}

static inline uint64_t null_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Spins until the request's delay has passed (a sleep would overshoot by the timer slack, ~50 us) and
 * returns the delay. The request's latency is the injected delay itself, not the spin's observed length: a
 * preemption during the spin (a busy machine) would otherwise add milliseconds to a "known" distribution.
 * The time it took still passes on the clock, between this request's completion and the next one's start. */
static uint64_t null_delay(struct iol_bctx *ctx, uint64_t start)
{
    uint64_t k = (ctx->delay_seq++ * 359u) % NULL_DELAY_STEPS;
    uint64_t d = ctx->delay_lo_ns + k * (ctx->delay_hi_ns - ctx->delay_lo_ns) / (NULL_DELAY_STEPS - 1);
    while (null_now() - start < d)
        ;
    return d;
}

static int null_open(struct iol_bctx *ctx, struct iol_file *f, const char *path, int flags, mode_t mode,
                     struct iol_err *err)
{
    (void)path;
    (void)mode;
    (void)err;
    f->ctx = ctx;
    f->fd = -1;
    f->flags = flags;
    f->priv = NULL;
    return 0;
}

static int null_close(struct iol_bctx *ctx, struct iol_file *f, struct iol_err *err)
{
    (void)ctx;
    (void)f;
    (void)err;
    return 0;
}

/* With null_delay: each request takes its injected delay, recorded exactly (null_delay). */
static void null_submit_delayed(struct iol_bctx *ctx, struct iol_req **reqs, int n)
{
    uint64_t now = null_now();
    for (int i = 0; i < n; i++) {
        struct iol_req *r = reqs[i];
        r->result = (int64_t)r->len;
        r->error = 0;
        r->t_submit_ns = now;
        r->t_done_ns = now + null_delay(ctx, now);
        now = null_now();
    }
}

/* The requests complete as they are handed over: one clock reading for the whole call is their completion
 * time, so each latency is real, the framework's own time since the request was issued (for a caller that
 * stamps its requests, since the previous completion), as fio's null engine measures it, for one clock
 * reading per call. A request the caller did not stamp is issued when the call starts (a second reading,
 * only then). */
static int null_submit(struct iol_bctx *ctx, struct iol_req **reqs, int n, struct iol_err *err)
{
    (void)err;
    int room = iol_sync_room(ctx);
    int take = n < room ? n : room;
    if (take <= 0)
        return 0;
    if (ctx->delay_hi_ns != 0) {
        null_submit_delayed(ctx, reqs, take);
    } else {
        uint64_t start = 0;
        for (int i = 0; i < take; i++) {
            struct iol_req *r = reqs[i];
            r->result = (int64_t)r->len;
            r->error = 0;
            if (!start && !(r->flags & (IOL_REQ_UNTIMED | IOL_REQ_SUBMIT_STAMPED)))
                start = null_now();
        }
        uint64_t done = null_now();
        for (int i = 0; i < take; i++) {
            struct iol_req *r = reqs[i];
            if (r->flags & IOL_REQ_UNTIMED)
                continue;
            if (!(r->flags & IOL_REQ_SUBMIT_STAMPED))
                r->t_submit_ns = start;
            r->t_done_ns = done;
        }
    }
    iol_sync_push(ctx, reqs, take);
    return take;
}

static int null_fsync(struct iol_bctx *ctx, struct iol_file *f, struct iol_err *err)
{
    (void)ctx;
    (void)f;
    (void)err;
    return 0;
}

static int null_evict(struct iol_bctx *ctx, struct iol_file *f, int *evicted, struct iol_err *err)
{
    (void)ctx;
    (void)f;
    (void)err;
    *evicted = 0;   /* there is no cache, and nothing in it */
    return 0;
}

static int null_stat(struct iol_bctx *ctx, const char *path, struct stat *st, struct iol_err *err)
{
    (void)ctx;
    (void)path;
    (void)err;
    memset(st, 0, sizeof *st);
    return 0;
}

static int null_path_op(struct iol_bctx *ctx, const char *path, struct iol_err *err)
{
    (void)ctx;
    (void)path;
    (void)err;
    return 0;
}

static int null_mkdir(struct iol_bctx *ctx, const char *path, mode_t mode, struct iol_err *err)
{
    (void)mode;
    return null_path_op(ctx, path, err);
}

const struct iol_backend iol_backend_null = {
    .name = "null",
    .description = "no I/O at all: every request completes when submitted (measures the framework's own cost)",
    .ctx_open = null_ctx_open,
    .ctx_open_opts = null_ctx_open_opts,
    .ctx_close = iol_sync_ctx_close,
    .open = null_open,
    .close = null_close,
    .submit = null_submit,
    .reap = iol_sync_reap,
    .fsync = null_fsync,
    .evict = null_evict,
    .stat = null_stat,
    .unlink = null_path_op,
    .mkdir = null_mkdir,
    .rmdir = null_path_op,
    .does_io = 0,
    .completes_in_submit = 1,
};
