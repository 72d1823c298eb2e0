/* uring.c — the io_uring backend: one ring per context, sized to the queue depth.
 *
 * What makes it fast, and on by default (each can be turned off through struct iol_backend_opts, as fio's
 * fixedbufs/registerfiles/sqthread_poll/hipri do):
 *  - fixed buffers: the caller's transfer buffers, given once through register_buffers, are pinned by the
 *    kernel, so a request whose buffer lies inside one skips the per-I/O page pinning. Any other buffer
 *    (mdtest's, a caller that never registers) goes as a plain read/write: correct, only slower.
 *  - registered files: a file gets a slot of a sparse file table on its second transfer, and requests name
 *    the slot, which spares the kernel a descriptor lookup and reference per I/O. Not at open, nor at the
 *    first transfer: the files of a metadata benchmark, opened and closed with at most one transfer, would
 *    pay two system calls (register, unregister) to save one lookup.
 *  - one io_uring_enter per submit call for the whole batch, and completions taken in batches.
 *  - one clock reading per submit call (t_submit_ns) and one per batch of completions (t_done_ns): the
 *    clock is the cost that dominates a 4 KiB IOPS run once the system calls are batched.
 *  - the ring is set up for a single issuer with deferred task work when the kernel has it (6.1+): the
 *    completions are then run in our own io_uring_enter instead of interrupting the task, which is how fio
 *    sets its rings up too.
 *
 * Short transfers are completed by sending the remainder again (in reap, transparently); a read that
 * returns 0 ended at EOF and completes short without error (the caller decides whether short is wrong); a
 * write that moves nothing fails with EIO rather than looping. */
#define _GNU_SOURCE
#include "backend.h"
#include "posix_ops.h"

#include <errno.h>
#include <limits.h>
#include <liburing.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>

/* Slots in the sparse registered-file table. A workload keeps a handful of files open per context (ior
 * one, fio nrfiles); a file that finds no free slot simply goes by descriptor. */
#define FILE_SLOTS 256
/* The kernel's limit on registered buffers (IORING_MAX_REG_BUFFERS). */
#define MAX_REG_BUFFERS 16384
/* One SQE moves at most this much (its length is 32 bits); a larger request goes in pieces through the
 * short-transfer path. */
#define MAX_SQE_LEN ((size_t)1 << 30)

struct reg_buf {
    uintptr_t base;
    size_t len;
    int index;                 /* in the kernel's table */
};

struct iol_bctx {
    struct io_uring ring;
    int depth;                 /* most requests in flight */
    int inflight;              /* handed to submit and not yet handed back by reap */
    unsigned ring_flags;       /* IORING_SETUP_* the ring really has */
    int fixed_bufs;            /* buffer registration wanted */
    int reg_files;             /* the file table exists */
    struct reg_buf *bufs;      /* registered buffers, sorted by base */
    int nbufs;
    int slot_fd[FILE_SLOTS];   /* fd in each slot, -1 when free; iol_file.priv points at its entry */
    int free_slots[FILE_SLOTS];
    int nfree;
    int no_slot;               /* iol_file.priv points here when the file goes by descriptor */
    int seen_once;             /* ... and here after its first transfer, which went by descriptor */
    struct io_uring_cqe **cqes;   /* depth entries: one batch of completions */
    struct iol_backend_stats stats;
};

static inline uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The registered buffer holding [p, p+len), or -1. A binary search: at most 12 steps for the 4096 buffers
 * ior may register, nothing beside a system call. */
static inline int find_buf(const struct iol_bctx *ctx, const void *p, size_t len)
{
    uintptr_t a = (uintptr_t)p;
    int lo = 0, hi = ctx->nbufs - 1, at = -1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2;
        if (ctx->bufs[mid].base <= a) {
            at = mid;
            lo = mid + 1;
        } else {
            hi = mid - 1;
        }
    }
    if (at < 0)
        return -1;
    const struct reg_buf *b = &ctx->bufs[at];
    return a - b->base + len <= b->len ? b->index : -1;
}

/* Called for a file that has no slot yet: the first time it only notes the use; the second it gives the
 * file a slot of the registered table. On any failure the file goes by descriptor from then on (slower,
 * never wrong). */
static void register_file(struct iol_bctx *ctx, struct iol_file *f)
{
    if (f->priv == NULL && ctx->reg_files) {
        f->priv = &ctx->seen_once;
        return;
    }
    if (!ctx->reg_files || ctx->nfree == 0) {
        f->priv = &ctx->no_slot;
        return;
    }
    int slot = ctx->free_slots[--ctx->nfree];
    int fd = f->fd;
    if (io_uring_register_files_update(&ctx->ring, (unsigned)slot, &fd, 1) != 1) {
        ctx->free_slots[ctx->nfree++] = slot;
        f->priv = &ctx->no_slot;
        return;
    }
    ctx->slot_fd[slot] = fd;
    f->priv = &ctx->slot_fd[slot];
}

/* An SQE, or NULL. The ring holds depth entries and at most depth requests are in flight, so without a
 * polling thread the queue is empty at every call; with one (SQPOLL) the thread may not have taken the
 * last batch yet, so wait for it to make room. */
static struct io_uring_sqe *get_sqe(struct iol_bctx *ctx)
{
    struct io_uring_sqe *sqe = io_uring_get_sqe(&ctx->ring);
    if (sqe != NULL || !(ctx->ring_flags & IORING_SETUP_SQPOLL))
        return sqe;
    while (sqe == NULL) {
        io_uring_submit(&ctx->ring);
        if (io_uring_sqring_wait(&ctx->ring) < 0)
            return NULL;
        sqe = io_uring_get_sqe(&ctx->ring);
    }
    return sqe;
}

enum { PREP_FIXED_FILE = 1, PREP_FIXED_BUF = 2 };

/* Fills an SQE for what is left of r (r->result bytes are done already); says which fast paths it took. */
static inline int prep(struct iol_bctx *ctx, struct io_uring_sqe *sqe, struct iol_req *r)
{
    struct iol_file *f = r->file;
    size_t done = (size_t)r->result;
    void *buf = (unsigned char *)r->buf + done;
    size_t len = r->len - done;
    uint64_t off = r->offset + done;
    if (len > MAX_SQE_LEN)
        len = MAX_SQE_LEN;
    int fd = f->fd, how = 0;
    unsigned sqe_flags = 0;
    if (f->priv != &ctx->no_slot && f->priv != &ctx->seen_once) {
        fd = (int)((int *)f->priv - ctx->slot_fd);
        sqe_flags = IOSQE_FIXED_FILE;
        how |= PREP_FIXED_FILE;
    }
    int bi = ctx->nbufs ? find_buf(ctx, buf, len) : -1;
    if (bi >= 0) {
        if (r->op == IOL_IO_WRITE)
            io_uring_prep_write_fixed(sqe, fd, buf, (unsigned)len, off, bi);
        else
            io_uring_prep_read_fixed(sqe, fd, buf, (unsigned)len, off, bi);
        how |= PREP_FIXED_BUF;
    } else if (r->op == IOL_IO_WRITE) {
        io_uring_prep_write(sqe, fd, buf, (unsigned)len, off);
    } else {
        io_uring_prep_read(sqe, fd, buf, (unsigned)len, off);
    }
    sqe->flags |= sqe_flags;
    io_uring_sqe_set_data(sqe, r);
    return how;
}

/* io_uring_submit, retried when a signal interrupts it. Returns 0 or -errno. */
static int submit_ring(struct iol_bctx *ctx)
{
    int rc;
    do
        rc = io_uring_submit(&ctx->ring);
    while (rc == -EINTR);
    ctx->stats.submit_calls++;
    return rc < 0 ? rc : 0;
}

static int uring_submit(struct iol_bctx *ctx, struct iol_req **reqs, int n, struct iol_err *err)
{
    int room = ctx->depth - ctx->inflight;
    int take = n < room ? n : room;
    if (take <= 0)
        return 0;
    for (int i = 0; i < take; i++) {
        struct iol_req *r = reqs[i];
        void *slot = r->file->priv;
        if (slot == NULL || slot == &ctx->seen_once)
            register_file(ctx, r->file);
        struct io_uring_sqe *sqe = get_sqe(ctx);
        if (sqe == NULL)
            return iol_err_set(err, IOL_ERR_RUNTIME, "io_uring backend: no room in the submission queue");
        r->result = 0;
        r->error = 0;
        int how = prep(ctx, sqe, r);
        ctx->stats.fixed_files += (how & PREP_FIXED_FILE) != 0;
        ctx->stats.fixed_bufs += (how & PREP_FIXED_BUF) != 0;
    }
    /* One reading for the batch, taken as it is handed to the kernel. */
    uint64_t t = now_ns();
    for (int i = 0; i < take; i++)
        if (!(reqs[i]->flags & IOL_REQ_UNTIMED))
            reqs[i]->t_submit_ns = t;
    int rc = submit_ring(ctx);
    if (rc < 0)
        return iol_err_errno(err, IOL_ERR_RUNTIME, -rc, "io_uring backend: io_uring_enter (submitting %d)", take);
    ctx->inflight += take;
    ctx->stats.requests += (uint64_t)take;
    return take;
}

/* Accounts one completion of r (res as the CQE says). Returns 1 if r is finished, 0 if its remainder was
 * queued again. */
static int complete(struct iol_bctx *ctx, struct iol_req *r, int res)
{
    if (res < 0) {
        r->error = -res;
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
    unsigned char *rest = (unsigned char *)r->buf + r->result;
    if (r->op == IOL_IO_READ && iol_direct_remainder_impossible(r->file, rest, r->offset + (uint64_t)r->result))
        return 1;
    if (r->flags & IOL_REQ_SINGLE_ATTEMPT)
        return 1;
    struct io_uring_sqe *sqe = get_sqe(ctx);
    if (sqe == NULL) {
        r->error = EAGAIN;
        return 1;
    }
    prep(ctx, sqe, r);
    ctx->stats.resubmits++;
    return 0;
}

static int uring_reap(struct iol_bctx *ctx, struct iol_req **done, int min, int max, struct iol_err *err)
{
    if (min > ctx->inflight)
        return iol_err_set(err, IOL_ERR_RUNTIME, "io_uring backend: reap waits for %d requests but only %d are "
                           "in flight", min, ctx->inflight);
    if (max > ctx->inflight)
        max = ctx->inflight;
    int got = 0;
    int polled = 0;
    while (got < max) {
        unsigned ready = io_uring_cq_ready(&ctx->ring);
        int need = min - got;
        if (need > 0 && ready < (unsigned)need) {
            /* Wait for all that is needed at once, so they are taken as one batch with one reading. */
            struct io_uring_cqe *cqe;
            int rc = io_uring_wait_cqe_nr(&ctx->ring, &cqe, (unsigned)need);
            ctx->stats.waits++;
            if (rc < 0 && rc != -EINTR && rc != -EAGAIN && rc != -ETIME)
                return iol_err_errno(err, IOL_ERR_RUNTIME, -rc, "io_uring backend: io_uring_enter (waiting)");
            continue;
        }
        if (ready == 0) {
            /* Nothing to wait for. With deferred or cooperative task work, or polled completions, finished
             * I/O shows in the ring only after we enter the kernel: look once. */
            if (polled || !(ctx->ring_flags & (IORING_SETUP_DEFER_TASKRUN | IORING_SETUP_COOP_TASKRUN |
                                               IORING_SETUP_IOPOLL)))
                break;
            polled = 1;
            int rc = io_uring_get_events(&ctx->ring);
            if (rc < 0 && rc != -EINTR && rc != -EAGAIN && rc != -EBUSY)
                return iol_err_errno(err, IOL_ERR_RUNTIME, -rc, "io_uring backend: io_uring_enter (getevents)");
            continue;
        }
        /* One reading for the batch: when these completions were seen. */
        uint64_t t = now_ns();
        unsigned k = io_uring_peek_batch_cqe(&ctx->ring, ctx->cqes, (unsigned)(max - got));
        int resubmitted = 0;
        for (unsigned i = 0; i < k; i++) {
            struct iol_req *r = io_uring_cqe_get_data(ctx->cqes[i]);
            if (!complete(ctx, r, ctx->cqes[i]->res)) {
                resubmitted++;
                continue;
            }
            if (!(r->flags & IOL_REQ_UNTIMED))
                r->t_done_ns = t;
            done[got++] = r;
            ctx->inflight--;
        }
        io_uring_cq_advance(&ctx->ring, k);
        if (resubmitted) {
            int rc = submit_ring(ctx);
            if (rc < 0)
                return iol_err_errno(err, IOL_ERR_RUNTIME, -rc, "io_uring backend: io_uring_enter (resubmitting)");
        }
        /* One batch per call: what completes meanwhile is the next call's, with its own reading. Only a
         * batch cut short by resubmitted remainders goes round again. */
        if (got >= min)
            break;
    }
    return got;
}

static int uring_register_buffers(struct iol_bctx *ctx, void *const *bufs, int n, size_t len, struct iol_err *err)
{
    if (ctx->inflight)
        return iol_err_set(err, IOL_ERR_RUNTIME, "io_uring backend: buffers registered with %d requests in flight",
                           ctx->inflight);
    if (ctx->nbufs) {
        io_uring_unregister_buffers(&ctx->ring);
        free(ctx->bufs);
        ctx->bufs = NULL;
        ctx->nbufs = 0;
    }
    if (!ctx->fixed_bufs || n <= 0 || n > MAX_REG_BUFFERS || len == 0 || len > MAX_SQE_LEN)
        return 0;
    struct iovec *iov = calloc((size_t)n, sizeof *iov);
    struct reg_buf *rb = calloc((size_t)n, sizeof *rb);
    if (iov == NULL || rb == NULL) {
        free(iov);
        free(rb);
        return iol_err_errno(err, IOL_ERR_RUNTIME, ENOMEM, "io_uring backend: %d buffers", n);
    }
    for (int i = 0; i < n; i++) {
        iov[i] = (struct iovec){ bufs[i], len };
        rb[i] = (struct reg_buf){ (uintptr_t)bufs[i], len, i };
    }
    int rc = io_uring_register_buffers(&ctx->ring, iov, (unsigned)n);
    free(iov);
    if (rc < 0) {
        /* Pinned pages count against RLIMIT_MEMLOCK for an unprivileged user (often 8 MiB): over it, plain
         * reads and writes are the honest fallback; stats() shows that no request used a fixed buffer. */
        free(rb);
        return 0;
    }
    /* Sorted by address for find_buf; insertion sort, once, on what ior allocates in address order anyway. */
    for (int i = 1; i < n; i++) {
        struct reg_buf x = rb[i];
        int j = i - 1;
        while (j >= 0 && rb[j].base > x.base) {
            rb[j + 1] = rb[j];
            j--;
        }
        rb[j + 1] = x;
    }
    ctx->bufs = rb;
    ctx->nbufs = n;
    return n;
}

/* A sparse file table (5.19+), or on older kernels one filled with -1 placeholders; without either the
 * files go by descriptor. */
static void setup_file_table(struct iol_bctx *ctx)
{
    if (io_uring_register_files_sparse(&ctx->ring, FILE_SLOTS) != 0) {
        int fds[FILE_SLOTS];
        for (int i = 0; i < FILE_SLOTS; i++)
            fds[i] = -1;
        if (io_uring_register_files(&ctx->ring, fds, FILE_SLOTS) != 0)
            return;
    }
    ctx->reg_files = 1;
    for (int i = 0; i < FILE_SLOTS; i++) {
        ctx->slot_fd[i] = -1;
        ctx->free_slots[i] = FILE_SLOTS - 1 - i;
    }
    ctx->nfree = FILE_SLOTS;
}

static int uring_ctx_open_opts(struct iol_bctx **out, int queue_depth, const struct iol_backend_opts *opts,
                               struct iol_err *err)
{
    *out = NULL;
    if (queue_depth < 1)
        return iol_err_set(err, IOL_ERR_USAGE, "queue depth %d: must be at least 1", queue_depth);
    if (queue_depth > 32768)
        return iol_err_set(err, IOL_ERR_USAGE, "io_uring backend: queue depth %d is more than a ring holds (32768)",
                           queue_depth);
    struct iol_bctx *ctx = calloc(1, sizeof *ctx);
    struct io_uring_cqe **cqes = calloc((size_t)queue_depth, sizeof *cqes);
    if (ctx == NULL || cqes == NULL) {
        free(ctx);
        free(cqes);
        return iol_err_errno(err, IOL_ERR_RUNTIME, ENOMEM, "io_uring backend: queue of depth %d", queue_depth);
    }
    ctx->depth = queue_depth;
    ctx->cqes = cqes;
    ctx->fixed_bufs = !opts->no_fixed_bufs;

    unsigned base = 0;
    if (opts->sqthread_poll)
        base |= IORING_SETUP_SQPOLL;
    if (opts->hipri)
        base |= IORING_SETUP_IOPOLL;
    /* From the most to the least the kernel may offer; EINVAL means "not this kernel". Deferred task work
     * cannot go with a polling thread (the thread, not we, would have to run it). */
    unsigned tries[3] = {
        base | IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN | IORING_SETUP_TASKRUN_FLAG,
        base | IORING_SETUP_COOP_TASKRUN | IORING_SETUP_TASKRUN_FLAG,
        base,
    };
    int rc = -EINVAL;
    for (int i = opts->sqthread_poll ? 1 : 0; i < 3 && rc == -EINVAL; i++) {
        struct io_uring_params p;
        memset(&p, 0, sizeof p);
        p.flags = tries[i];
        if (opts->sqthread_poll)
            p.sq_thread_idle = (unsigned)opts->sqthread_idle_ms;
        rc = io_uring_queue_init_params((unsigned)queue_depth, &ctx->ring, &p);
        if (rc == 0)
            ctx->ring_flags = tries[i];
    }
    if (rc < 0) {
        free(cqes);
        free(ctx);
        const char *what = opts->sqthread_poll ? " with sqthread_poll" : opts->hipri ? " with hipri (IOPOLL)" : "";
        return iol_err_errno(err, IOL_ERR_RUNTIME, -rc, "io_uring backend: a ring of %d entries%s", queue_depth, what);
    }
    if (!opts->no_register_files)
        setup_file_table(ctx);
    *out = ctx;
    return 0;
}

static int uring_ctx_open(struct iol_bctx **out, int queue_depth, struct iol_err *err)
{
    const struct iol_backend_opts defaults = { 0 };
    return uring_ctx_open_opts(out, queue_depth, &defaults, err);
}

static void uring_ctx_close(struct iol_bctx *ctx)
{
    if (ctx == NULL)
        return;
    /* Tears the ring down; the kernel cancels or waits out anything still in flight. */
    io_uring_queue_exit(&ctx->ring);
    free(ctx->bufs);
    free(ctx->cqes);
    free(ctx);
}

static int uring_open(struct iol_bctx *ctx, struct iol_file *f, const char *path, int flags, mode_t mode,
                      struct iol_err *err)
{
    if (iol_posix_open(ctx, f, path, flags, mode, err) != 0)
        return -1;
    /* A polled ring can only complete direct I/O; refuse here rather than fail every transfer. */
    if ((ctx->ring_flags & IORING_SETUP_IOPOLL) && !(flags & IOL_O_DIRECT)) {
        struct iol_err ignored = { 0, "" };
        iol_posix_close(ctx, f, &ignored);
        return iol_err_set(err, IOL_ERR_USAGE, "open %s: hipri (polled completions) needs O_DIRECT", path);
    }
    return 0;   /* f->priv is NULL: the file gets its slot on its first transfer */
}

static int uring_close(struct iol_bctx *ctx, struct iol_file *f, struct iol_err *err)
{
    if (f->priv != NULL && f->priv != &ctx->no_slot && f->priv != &ctx->seen_once) {
        int slot = (int)((int *)f->priv - ctx->slot_fd);
        int none = -1;
        /* Without this the table would keep the file open after close. A slot whose update failed is not
         * used again (it may still hold the file); the file itself is closed either way. */
        if (io_uring_register_files_update(&ctx->ring, (unsigned)slot, &none, 1) == 1) {
            ctx->slot_fd[slot] = -1;
            ctx->free_slots[ctx->nfree++] = slot;
        }
    }
    f->priv = NULL;
    return iol_posix_close(ctx, f, err);
}

static void uring_stats(const struct iol_bctx *ctx, struct iol_backend_stats *out)
{
    *out = ctx->stats;
}

const struct iol_backend iol_backend_io_uring = {
    .name = "io_uring",
    .description = "asynchronous io_uring: batched submission and reaping, fixed buffers and registered files",
    .ctx_open = uring_ctx_open,
    .ctx_open_opts = uring_ctx_open_opts,
    .ctx_close = uring_ctx_close,
    .register_buffers = uring_register_buffers,
    .stats = uring_stats,
    .open = uring_open,
    .close = uring_close,
    .submit = uring_submit,
    .reap = uring_reap,
    .fsync = iol_posix_fsync,
    .evict = iol_posix_evict,
    .stat = iol_posix_stat,
    .unlink = iol_posix_unlink,
    .mkdir = iol_posix_mkdir,
    .rmdir = iol_posix_rmdir,
    .does_io = 1,
};
