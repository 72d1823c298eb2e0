/* mmap.c — IOR's MMAP backend: the file is mapped into memory at open and every transfer is a memcpy to or
 * from the mapping; the kernel moves the pages to and from storage (page faults, write-back).
 *
 * As IOR 4 (aiori-MMAP.c) does it:
 *  - a file opened for writing is first grown to the size the run gives it (f->extent; IOR's expected
 *    aggregate file size, -b x -s x ranks, also for each file of -F) and mapped that long, read-write;
 *    a file opened for reading is mapped read-only, as long as it is;
 *  - right after mapping, --mmap.madv_pattern advises sequential access (random with -z) and
 *    --mmap.madv_dont_need advises POSIX_MADV_DONTNEED, both through posix_madvise over the whole mapping
 *    (glibc makes POSIX_MADV_DONTNEED a no-op on Linux: the call, and so the work, is IOR's);
 *  - fsync (-e at close, -Y after each write) is msync(MS_SYNC). IOR's -Y syncs each write's range; here an
 *    fsync syncs the range written since the previous one (page-aligned), which for -Y is that write's.
 * Differences: IOR shrinks a longer existing file (-E) to its size; this backend only grows a file, never
 * cuts data off it. A read past the end of the file ends short (as pread does) instead of IOR's SIGBUS.
 *
 * Synchronous: each request is done inside submit, as the posix backend's. */
#define _GNU_SOURCE
#include "posix_ops.h"
#include "sync_ring.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

struct mmap_file {
    unsigned char *base;         /* the mapping; NULL when the file is empty */
    uint64_t len;                /* bytes mapped (the file's size for reads: nothing past its end) */
    uint64_t dirty_lo, dirty_hi; /* range written since the last fsync; lo > hi when none */
};

static inline uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int mmap_ctx_open(struct iol_bctx **out, int queue_depth, struct iol_err *err)
{
    return iol_sync_ctx_open(out, queue_depth, "mmap", err);
}

static int mmap_ctx_open_opts(struct iol_bctx **out, int queue_depth, const struct iol_backend_opts *opts,
                              struct iol_err *err)
{
    if (opts->sqthread_poll || opts->hipri)
        return iol_err_set(err, IOL_ERR_USAGE, "mmap backend: %s is not supported (transfers are memory copies)",
                           opts->sqthread_poll ? "sqthread_poll" : "hipri");
    if (iol_sync_ctx_open(out, queue_depth, "mmap", err)) return -1;
    (*out)->mmap_advice = opts->mmap_advice;
    return 0;
}

static int advise(struct iol_bctx *ctx, const char *path, struct mmap_file *m, struct iol_err *err)
{
    int adv = ctx->mmap_advice, rc;
    if (adv & IOL_MMAP_MADV_PATTERN) {
        int pattern = adv & IOL_MMAP_RANDOM ? POSIX_MADV_RANDOM : POSIX_MADV_SEQUENTIAL;
        if ((rc = posix_madvise(m->base, m->len, pattern)) != 0)
            return iol_err_errno(err, IOL_ERR_RUNTIME, rc, "posix_madvise(%s) %s",
                                 pattern == POSIX_MADV_RANDOM ? "RANDOM" : "SEQUENTIAL", path);
    }
    if ((adv & IOL_MMAP_MADV_DONT_NEED) && (rc = posix_madvise(m->base, m->len, POSIX_MADV_DONTNEED)) != 0)
        return iol_err_errno(err, IOL_ERR_RUNTIME, rc, "posix_madvise(DONTNEED) %s", path);
    return 0;
}

static int mmap_open(struct iol_bctx *ctx, struct iol_file *f, const char *path, int flags, mode_t mode,
                     struct iol_err *err)
{
    uint64_t extent = f->extent;
    int writing = (flags & IOL_O_WRITE) != 0;
    if (flags & IOL_O_DIRECT)
        return iol_err_set(err, IOL_ERR_USAGE, "mmap backend: O_DIRECT is not possible (a mapping goes "
                           "through the page cache)");
    /* A writable shared mapping needs a descriptor open for reading too. */
    if (writing) flags = (flags & ~IOL_O_WRITE) | IOL_O_READ | IOL_O_WRITE;
    if (iol_posix_open(ctx, f, path, flags, mode, err)) return -1;
    struct mmap_file *m = calloc(1, sizeof *m);
    struct stat st;
    int e = 0;
    const char *what = "fstat";
    if (!m) e = ENOMEM, what = "allocate";
    else if (fstat(f->fd, &st) != 0) e = errno;
    else if (writing && (uint64_t)st.st_size < extent && ftruncate(f->fd, (off_t)extent) != 0)
        e = errno, what = "ftruncate";
    if (!e) {
        m->len = writing && extent > (uint64_t)st.st_size ? extent : (uint64_t)st.st_size;
        m->dirty_lo = UINT64_MAX;
        if (m->len) {
            void *p = mmap(NULL, m->len, PROT_READ | (writing ? PROT_WRITE : 0), MAP_SHARED, f->fd, 0);
            if (p == MAP_FAILED) e = errno, what = "mmap";
            else m->base = p;
        }
    }
    if (e) {
        free(m);
        struct iol_err ignore = {0, ""};
        iol_posix_close(ctx, f, &ignore);
        return iol_err_errno(err, IOL_ERR_RUNTIME, e, "%s %s", what, path);
    }
    f->priv = m;
    f->flags = flags;
    if (m->base && advise(ctx, path, m, err)) {
        struct iol_err ignore = {0, ""};
        munmap(m->base, m->len);
        free(m);
        f->priv = NULL;
        iol_posix_close(ctx, f, &ignore);
        return -1;
    }
    return 0;
}

static int mmap_close(struct iol_bctx *ctx, struct iol_file *f, struct iol_err *err)
{
    struct mmap_file *m = f->priv;
    int rc = 0;
    if (m && m->base && munmap(m->base, m->len) != 0)
        rc = iol_err_errno(err, IOL_ERR_RUNTIME, errno, "munmap (fd %d)", f->fd);
    free(m);
    f->priv = NULL;
    if (iol_posix_close(ctx, f, err)) rc = -1;
    return rc;
}

/* One request: a copy, cut at the end of the mapping (a read there ends short, as pread's at EOF; a write
 * there fails: the run gave the file a smaller size than it writes). */
static inline void copy(struct mmap_file *m, struct iol_req *r)
{
    uint64_t avail = r->offset < m->len ? m->len - r->offset : 0;
    size_t n = r->len < avail ? r->len : (size_t)avail;
    r->error = 0;
    if (r->op == IOL_IO_WRITE) {
        if (n < r->len) {
            r->error = EFBIG;
            n = 0;
        } else {
            memcpy(m->base + r->offset, r->buf, n);
            if (r->offset < m->dirty_lo) m->dirty_lo = r->offset;
            if (r->offset + n > m->dirty_hi) m->dirty_hi = r->offset + n;
        }
    } else if (n) {
        memcpy(r->buf, m->base + r->offset, n);
    }
    r->result = (int64_t)n;
}

static int mmap_submit(struct iol_bctx *ctx, struct iol_req **reqs, int n, struct iol_err *err)
{
    (void)err;
    int room = iol_sync_room(ctx);
    int take = n < room ? n : room;
    uint64_t prev = 0;
    for (int i = 0; i < take; i++) {
        struct iol_req *r = reqs[i];
        struct mmap_file *m = r->file->priv;
        if (r->flags & IOL_REQ_UNTIMED) {
            copy(m, r);
            prev = 0;
            continue;
        }
        if (prev) r->t_submit_ns = prev;
        else if (!(r->flags & IOL_REQ_SUBMIT_STAMPED)) r->t_submit_ns = now_ns();
        copy(m, r);
        r->t_done_ns = prev = now_ns();
    }
    iol_sync_push(ctx, reqs, take);
    return take;
}

static int mmap_fsync(struct iol_bctx *ctx, struct iol_file *f, struct iol_err *err)
{
    (void)ctx;
    struct mmap_file *m = f->priv;
    if (!m || !m->base || m->dirty_lo >= m->dirty_hi) return 0;
    /* msync takes a page-aligned start */
    uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
    uint64_t lo = m->dirty_lo / page * page;
    if (msync(m->base + lo, m->dirty_hi - lo, MS_SYNC) != 0)
        return iol_err_errno(err, IOL_ERR_RUNTIME, errno, "msync (fd %d)", f->fd);
    m->dirty_lo = UINT64_MAX;
    m->dirty_hi = 0;
    return 0;
}

const struct iol_backend iol_backend_mmap = {
    .name = "mmap",
    .description = "IOR's MMAP: the file is mapped, transfers are memory copies, fsync is msync (each request "
                   "completes in submit)",
    .ctx_open = mmap_ctx_open,
    .ctx_open_opts = mmap_ctx_open_opts,
    .ctx_close = iol_sync_ctx_close,
    .open = mmap_open,
    .close = mmap_close,
    .submit = mmap_submit,
    .reap = iol_sync_reap,
    .fsync = mmap_fsync,
    .evict = iol_posix_evict,
    .stat = iol_posix_stat,
    .unlink = iol_posix_unlink,
    .mkdir = iol_posix_mkdir,
    .rmdir = iol_posix_rmdir,
    .does_io = 1,
    .completes_in_submit = 1,
};
