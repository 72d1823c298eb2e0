/* posix.c — the synchronous POSIX backends: posix (pread/pwrite; fio calls it psync) and pvsync2
 * (preadv2/pwritev2, which take per-call flags such as RWF_HIPRI), each doing its I/O inside submit and
 * handing completions back through reap.
 *
 * submit is the hot path of every bandwidth and IOPS figure, so it does no allocation and no locking: the
 * completion queue is the ring of sync_ring.h, allocated once in ctx_open, and the only work around each
 * system call is two clock readings. */
#define _GNU_SOURCE
#include "posix_ops.h"
#include "sync_ring.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/magic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#ifndef TMPFS_MAGIC
#define TMPFS_MAGIC 0x01021994
#endif
#ifndef RAMFS_MAGIC
#define RAMFS_MAGIC 0x858458f6
#endif

static inline uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* For messages about calls that take a descriptor: the path behind it, read from /proc only when there is
 * an error to report, so that success costs nothing. */
static const char *fd_path(int fd, char *buf, size_t len)
{
    char link[64];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, buf, len - 1);
    if (n <= 0) {
        snprintf(buf, len, "(fd %d)", fd);
        return buf;
    }
    buf[n] = '\0';
    return buf;
}

static int fd_error(struct iol_err *err, int errnum, const char *call, int fd)
{
    char path[PATH_MAX];
    return iol_err_errno(err, IOL_ERR_RUNTIME, errnum, "%s %s", call, fd_path(fd, path, sizeof path));
}

static int posix_ctx_open(struct iol_bctx **out, int queue_depth, struct iol_err *err)
{
    return iol_sync_ctx_open(out, queue_depth, "posix", err);
}

/* open(2)'s flags for enum iol_open_flags. Written as one OR of selected constants: the if-chain it replaces
 * made gcc -O2 precompute every combination (~280 instructions per open, a tenth of an mdtest item). */
static int open_flags(int flags)
{
    static const int access[4] = {O_RDONLY, O_RDONLY, O_WRONLY, O_RDWR}; /* by IOL_O_READ | IOL_O_WRITE */
    return O_CLOEXEC | access[flags & (IOL_O_READ | IOL_O_WRITE)] |
           (flags & IOL_O_CREATE ? O_CREAT : 0) | (flags & IOL_O_EXCL ? O_EXCL : 0) |
           (flags & IOL_O_TRUNC ? O_TRUNC : 0) | (flags & IOL_O_DIRECT ? O_DIRECT : 0) |
           (flags & IOL_O_SYNC ? O_SYNC : 0) | (flags & IOL_O_DSYNC ? O_DSYNC : 0);
}

int iol_posix_open(struct iol_bctx *ctx, struct iol_file *f, const char *path, int flags, mode_t mode,
                   struct iol_err *err)
{
    int oflags = open_flags(flags);
    int fd;
    do
        fd = open(path, oflags, mode);
    while (fd < 0 && errno == EINTR);
    f->ctx = ctx;
    f->flags = flags;
    f->priv = NULL;
    f->fd = fd;
    if (fd < 0) {
        int e = errno;
        /* EINVAL from open almost always means the file system refuses O_DIRECT: say so. */
        if (e == EINVAL && (flags & IOL_O_DIRECT))
            return iol_err_errno(err, IOL_ERR_RUNTIME, e, "open %s with O_DIRECT (does the file system support "
                                 "direct I/O?)", path);
        return iol_err_errno(err, IOL_ERR_RUNTIME, e, "open %s", path);
    }
    return 0;
}

int iol_posix_close(struct iol_bctx *ctx, struct iol_file *f, struct iol_err *err)
{
    (void)ctx;
    if (f->fd < 0)
        return 0;
    int fd = f->fd;
    f->fd = -1;
    /* Not retried on EINTR: Linux has released the descriptor whatever close returns. The message can
     * only give the descriptor: looking the path up beforehand would cost a readlink on every close of a
     * metadata benchmark, and afterwards the descriptor no longer leads to the file. */
    if (close(fd) != 0)
        return iol_err_errno(err, IOL_ERR_RUNTIME, errno, "close (fd %d)", fd);
    return 0;
}

/* Moves the whole request, looping over short transfers: a pread may return less than asked at EOF (then
 * the request completes short, without error) or when interrupted; a pwrite may be cut by a signal or a
 * size limit. vectored: preadv2/pwritev2 with rw_flags (pvsync2), else pread/pwrite (posix); a branch
 * costs nothing beside the system call, and one loop keeps both backends' short-transfer rules the same. */
static inline void transfer(struct iol_req *r, int vectored, int rw_flags)
{
    int fd = r->file->fd;
    unsigned char *p = r->buf;
    size_t left = r->len;
    off_t off = (off_t)r->offset;
    int64_t moved = 0;
    r->error = 0;
    const int locked = r->file->flags & IOL_O_RANGELOCKS;
    struct flock lk = {.l_type = r->op == IOL_IO_WRITE ? F_WRLCK : F_RDLCK, .l_whence = SEEK_SET,
                       .l_start = off, .l_len = (off_t)left};
    if (locked) {
        int rc;
        do
            rc = fcntl(fd, F_SETLKW, &lk);
        while (rc != 0 && errno == EINTR);
        if (rc != 0) {
            r->error = errno;
            r->result = 0;
            return;
        }
    }
    while (left > 0) {
        ssize_t k;
        if (vectored) {
            struct iovec iov = { p, left };
            k = r->op == IOL_IO_WRITE ? pwritev2(fd, &iov, 1, off, rw_flags) : preadv2(fd, &iov, 1, off, rw_flags);
        } else {
            k = r->op == IOL_IO_WRITE ? pwrite(fd, p, left, off) : pread(fd, p, left, off);
        }
        if (k > 0) {
            p += k;
            off += k;
            left -= (size_t)k;
            moved += k;
            if (left > 0 && r->op == IOL_IO_READ && iol_direct_remainder_impossible(r->file, p, (uint64_t)off))
                break;
            if (left > 0 && (r->flags & IOL_REQ_SINGLE_ATTEMPT))
                break;
        } else if (k == 0) {
            /* A read at EOF ends the request short. A write of 0 bytes would loop forever: report it. */
            if (r->op == IOL_IO_WRITE)
                r->error = EIO;
            break;
        } else if (errno != EINTR) {
            r->error = errno;
            break;
        }
    }
    if (locked) {
        lk.l_type = F_UNLCK;
        if (fcntl(fd, F_SETLK, &lk) != 0 && !r->error) r->error = errno;
    }
    r->result = moved;
}

static inline int sync_submit(struct iol_bctx *ctx, struct iol_req **reqs, int n, int vectored)
{
    int room = iol_sync_room(ctx);
    int take = n < room ? n : room;
    int rw_flags = ctx->rw_flags;
    /* One clock reading per transfer: a request starts when the one before it in the batch ended (the
     * first one when the caller says, or now). At 5-8 us per page-cache read, a second reading was 1%. */
    uint64_t prev = 0;
    for (int i = 0; i < take; i++) {
        struct iol_req *r = reqs[i];
        if (r->flags & IOL_REQ_UNTIMED) {
            transfer(r, vectored, rw_flags);
            prev = 0;
            continue;
        }
        if (prev) r->t_submit_ns = prev;
        else if (!(r->flags & IOL_REQ_SUBMIT_STAMPED)) r->t_submit_ns = now_ns();
        transfer(r, vectored, rw_flags);
        r->t_done_ns = prev = now_ns();
    }
    iol_sync_push(ctx, reqs, take);
    return take;
}

static int posix_submit(struct iol_bctx *ctx, struct iol_req **reqs, int n, struct iol_err *err)
{
    (void)err;
    return sync_submit(ctx, reqs, n, 0);
}

static int pvsync2_submit(struct iol_bctx *ctx, struct iol_req **reqs, int n, struct iol_err *err)
{
    (void)err;
    return sync_submit(ctx, reqs, n, 1);
}

static int pvsync2_ctx_open_opts(struct iol_bctx **out, int queue_depth, const struct iol_backend_opts *opts,
                                 struct iol_err *err)
{
    if (opts->sqthread_poll) {
        *out = NULL;
        return iol_err_set(err, IOL_ERR_USAGE, "pvsync2 backend: sqthread_poll is not supported (it needs io_uring)");
    }
    if (iol_sync_ctx_open(out, queue_depth, "pvsync2", err) != 0)
        return -1;
    /* RWF_HIPRI polls for the completion instead of sleeping on an interrupt: it matters for O_DIRECT on
     * a device with poll queues; elsewhere the kernel ignores it. */
    (*out)->rw_flags = opts->hipri ? RWF_HIPRI : 0;
    return 0;
}

static int pvsync2_ctx_open(struct iol_bctx **out, int queue_depth, struct iol_err *err)
{
    return iol_sync_ctx_open(out, queue_depth, "pvsync2", err);
}

int iol_posix_fsync(struct iol_bctx *ctx, struct iol_file *f, struct iol_err *err)
{
    (void)ctx;
    if (fsync(f->fd) != 0)
        return fd_error(err, errno, "fsync", f->fd);
    return 0;
}

/* Bytes of [off, off + len) of the file (clipped to its size) in the page cache, by mincore() over read-only
 * mappings of 1 GiB windows (a small vector, whatever the file's size). Returns 0, or an errno. */
int iol_posix_resident(int fd, uint64_t off, uint64_t len, uint64_t *out)
{
    const uint64_t window = (uint64_t)1 << 30;
    long pg = sysconf(_SC_PAGESIZE);
    struct stat st;
    *out = 0;
    if (pg <= 0 || fstat(fd, &st) != 0) return errno ? errno : EINVAL;
    uint64_t page = (uint64_t)pg, end = off + len < (uint64_t)st.st_size ? off + len : (uint64_t)st.st_size;
    unsigned char *vec = malloc((size_t)(window / page));
    if (!vec) return ENOMEM;
    int rc = 0;
    for (uint64_t pos = off / page * page; pos < end && !rc; pos += window) {
        size_t n = (size_t)(end - pos < window ? end - pos : window);
        void *m = mmap(NULL, n, PROT_READ, MAP_SHARED, fd, (off_t)pos);
        if (m == MAP_FAILED) {
            rc = errno;
            break;
        }
        size_t pages = (n + page - 1) / page;
        if (mincore(m, n, vec) != 0) rc = errno;
        for (size_t i = 0; !rc && i < pages; i++)
            if (vec[i] & 1) *out += i + 1 == pages ? n - i * page : page;
        munmap(m, n);
    }
    free(vec);
    return rc;
}

static int resident_bytes(int fd, uint64_t *out)
{
    return iol_posix_resident(fd, 0, UINT64_MAX / 2, out);
}

int iol_posix_evict(struct iol_bctx *ctx, struct iol_file *f, int *evicted, struct iol_err *err)
{
    (void)ctx;
    *evicted = 0;
    struct statfs sfs;
    if (fstatfs(f->fd, &sfs) != 0)
        return fd_error(err, errno, "fstatfs", f->fd);
    /* On tmpfs and ramfs the page cache is the file's only copy: there is nothing to drop, and reads will
     * come from memory whatever we do. The caller reports that. */
    if (sfs.f_type == (__typeof__(sfs.f_type))TMPFS_MAGIC || sfs.f_type == (__typeof__(sfs.f_type))RAMFS_MAGIC)
        return 0;
    /* Dirty pages are not dropped: write them back first. */
    if (fdatasync(f->fd) != 0)
        return fd_error(err, errno, "fdatasync", f->fd);
    int rc = posix_fadvise(f->fd, 0, 0, POSIX_FADV_DONTNEED);   /* returns the error, not -1/errno */
    if (rc != 0)
        return fd_error(err, rc, "posix_fadvise(DONTNEED)", f->fd);
    /* DONTNEED is advice: pages mapped or locked by someone, or read again meanwhile, stay. Say "evicted"
     * only when the kernel reports no page of the file in memory. */
    uint64_t left = 0;
    if ((rc = resident_bytes(f->fd, &left)) != 0)
        return fd_error(err, rc, "mincore", f->fd);
    *evicted = left == 0;
    return 0;
}

int iol_posix_stat(struct iol_bctx *ctx, const char *path, struct stat *st, struct iol_err *err)
{
    (void)ctx;
    if (stat(path, st) != 0)
        return iol_err_errno(err, IOL_ERR_RUNTIME, errno, "stat %s", path);
    return 0;
}

int iol_posix_unlink(struct iol_bctx *ctx, const char *path, struct iol_err *err)
{
    (void)ctx;
    if (unlink(path) != 0)
        return iol_err_errno(err, IOL_ERR_RUNTIME, errno, "unlink %s", path);
    return 0;
}

int iol_posix_mkdir(struct iol_bctx *ctx, const char *path, mode_t mode, struct iol_err *err)
{
    (void)ctx;
    if (mkdir(path, mode) != 0)
        return iol_err_errno(err, IOL_ERR_RUNTIME, errno, "mkdir %s", path);
    return 0;
}

int iol_posix_rmdir(struct iol_bctx *ctx, const char *path, struct iol_err *err)
{
    (void)ctx;
    if (rmdir(path) != 0)
        return iol_err_errno(err, IOL_ERR_RUNTIME, errno, "rmdir %s", path);
    return 0;
}

const struct iol_backend iol_backend_posix = {
    .name = "posix",
    .description = "synchronous pread/pwrite, as fio's psync (queue depth is accepted; each request completes in submit)",
    .ctx_open = posix_ctx_open,
    .ctx_close = iol_sync_ctx_close,
    .open = iol_posix_open,
    .close = iol_posix_close,
    .submit = posix_submit,
    .reap = iol_sync_reap,
    .fsync = iol_posix_fsync,
    .evict = iol_posix_evict,
    .stat = iol_posix_stat,
    .unlink = iol_posix_unlink,
    .mkdir = iol_posix_mkdir,
    .rmdir = iol_posix_rmdir,
    .does_io = 1,
    .completes_in_submit = 1,
};

const struct iol_backend iol_backend_pvsync2 = {
    .name = "pvsync2",
    .description = "synchronous preadv2/pwritev2 (hipri: RWF_HIPRI polled completions); each request completes "
                   "in submit",
    .ctx_open = pvsync2_ctx_open,
    .ctx_open_opts = pvsync2_ctx_open_opts,
    .ctx_close = iol_sync_ctx_close,
    .open = iol_posix_open,
    .close = iol_posix_close,
    .submit = pvsync2_submit,
    .reap = iol_sync_reap,
    .fsync = iol_posix_fsync,
    .evict = iol_posix_evict,
    .stat = iol_posix_stat,
    .unlink = iol_posix_unlink,
    .mkdir = iol_posix_mkdir,
    .rmdir = iol_posix_rmdir,
    .does_io = 1,
    .completes_in_submit = 1,
};
