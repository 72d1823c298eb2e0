/* wrap_rw.c — calls that move data through a descriptor (read, write, the p- and v- forms, preadv2,
 * pwritev2, the fortified __read_chk/__pread_chk, copy_file_range, sendfile), and the other calls on an open
 * descriptor: lseek, fsync, fdatasync, sync_file_range, ftruncate, fallocate, posix_fallocate. */
#include "wrap.h"

#include <fcntl.h>
#include <sys/sendfile.h>
#include <sys/uio.h>
#include <unistd.h>

/* After the call. An untracked one is counted in line, without touching errno (nothing here can change
 * it); a tracked one keeps the call's errno across the accounting. */
static inline ssize_t xfer_post(struct iol_thread *t, struct iol_desc *d, const struct iol_xfer *x, ssize_t r,
                                uint64_t t0)
{
    if (d == NULL && !iol_g.trace) {
        uint64_t *p = iol_proc(t);
        if (r >= 0)
            p[x->write ? IOL_P_BYTES_WRITTEN : IOL_P_BYTES_READ] += (uint64_t)r;
        iol_count_untracked(t, x->write ? IOL_P_WRITES : IOL_P_READS, r < 0);
    } else {
        int e = errno;
        iol_acct_xfer(t, d, x, r, e, t0);
        errno = e;
    }
    iol_leave(t);
    return r;
}

static uint64_t iov_bytes(const struct iovec *iov, int n)
{
    uint64_t s = 0;
    for (int i = 0; i < n && iov != NULL; i++)
        s += iov[i].iov_len;
    return s;
}

static const void *iov_first(const struct iovec *iov, int n)
{
    return n > 0 && iov != NULL ? iov[0].iov_base : NULL;
}

IOL_EXPORT ssize_t read(int fd, void *buf, size_t n)
{
    struct iol_thread *t = iol_enter();
    if (t == NULL)
        return IOL_REAL(read)(fd, buf, n);
    struct iol_desc *d = iol_fd_io(t, fd);
    uint64_t t0 = iol_t0(d != NULL);
    ssize_t r = iol_real.read(fd, buf, n);
    return xfer_post(t, d, &(struct iol_xfer){ IOL_OP_READ, 0, 0, fd, buf, -1, n, 0 }, r, t0);
}

IOL_EXPORT ssize_t __read_chk(int fd, void *buf, size_t n, size_t buflen)
{
    struct iol_thread *t = iol_enter();
    if (t == NULL)
        return IOL_REAL(__read_chk)(fd, buf, n, buflen);
    struct iol_desc *d = iol_fd_io(t, fd);
    uint64_t t0 = iol_t0(d != NULL);
    ssize_t r = iol_real.__read_chk(fd, buf, n, buflen);
    return xfer_post(t, d, &(struct iol_xfer){ IOL_OP_READ, 0, 0, fd, buf, -1, n, 0 }, r, t0);
}

IOL_EXPORT ssize_t write(int fd, const void *buf, size_t n)
{
    struct iol_thread *t = iol_enter();
    if (t == NULL)
        return IOL_REAL(write)(fd, buf, n);
    struct iol_desc *d = iol_fd_io(t, fd);
    uint64_t t0 = iol_t0(d != NULL);
    ssize_t r = iol_real.write(fd, buf, n);
    return xfer_post(t, d, &(struct iol_xfer){ IOL_OP_WRITE, 1, 0, fd, buf, -1, n, 0 }, r, t0);
}

#define PREAD_LIKE(name, real_call, offtype) \
    IOL_EXPORT ssize_t name(int fd, void *buf, size_t n, offtype off) \
    { \
        struct iol_thread *t = iol_enter(); \
        if (t == NULL) \
            return IOL_REAL(name)(fd, buf, n, off); \
        struct iol_desc *d = iol_fd_io(t, fd); \
        uint64_t t0 = iol_t0(d != NULL); \
        ssize_t r = real_call; \
        return xfer_post(t, d, &(struct iol_xfer){ IOL_OP_PREAD, 0, 0, fd, buf, off, n, 0 }, r, t0); \
    }
PREAD_LIKE(pread, iol_real.pread(fd, buf, n, off), off_t)
PREAD_LIKE(pread64, iol_real.pread64(fd, buf, n, off), off64_t)
#undef PREAD_LIKE

IOL_EXPORT ssize_t __pread_chk(int fd, void *buf, size_t n, off_t off, size_t buflen)
{
    struct iol_thread *t = iol_enter();
    if (t == NULL)
        return IOL_REAL(__pread_chk)(fd, buf, n, off, buflen);
    struct iol_desc *d = iol_fd_io(t, fd);
    uint64_t t0 = iol_t0(d != NULL);
    ssize_t r = iol_real.__pread_chk(fd, buf, n, off, buflen);
    return xfer_post(t, d, &(struct iol_xfer){ IOL_OP_PREAD, 0, 0, fd, buf, off, n, 0 }, r, t0);
}

IOL_EXPORT ssize_t __pread64_chk(int fd, void *buf, size_t n, off64_t off, size_t buflen)
{
    struct iol_thread *t = iol_enter();
    if (t == NULL)
        return IOL_REAL(__pread64_chk)(fd, buf, n, off, buflen);
    struct iol_desc *d = iol_fd_io(t, fd);
    uint64_t t0 = iol_t0(d != NULL);
    ssize_t r = iol_real.__pread64_chk(fd, buf, n, off, buflen);
    return xfer_post(t, d, &(struct iol_xfer){ IOL_OP_PREAD, 0, 0, fd, buf, off, n, 0 }, r, t0);
}

IOL_EXPORT ssize_t pwrite(int fd, const void *buf, size_t n, off_t off)
{
    struct iol_thread *t = iol_enter();
    if (t == NULL)
        return IOL_REAL(pwrite)(fd, buf, n, off);
    struct iol_desc *d = iol_fd_io(t, fd);
    uint64_t t0 = iol_t0(d != NULL);
    ssize_t r = iol_real.pwrite(fd, buf, n, off);
    return xfer_post(t, d, &(struct iol_xfer){ IOL_OP_PWRITE, 1, 0, fd, buf, off, n, 0 }, r, t0);
}

IOL_EXPORT ssize_t pwrite64(int fd, const void *buf, size_t n, off64_t off)
{
    struct iol_thread *t = iol_enter();
    if (t == NULL)
        return IOL_REAL(pwrite64)(fd, buf, n, off);
    struct iol_desc *d = iol_fd_io(t, fd);
    uint64_t t0 = iol_t0(d != NULL);
    ssize_t r = iol_real.pwrite64(fd, buf, n, off);
    return xfer_post(t, d, &(struct iol_xfer){ IOL_OP_PWRITE, 1, 0, fd, buf, off, n, 0 }, r, t0);
}

/* The vector forms. pos -1: at (and advancing) the descriptor's position — readv/writev, and the -1 offset
 * of preadv2/pwritev2. */
static ssize_t vec_call(struct iol_thread *t, int op, int w, int fd, const struct iovec *iov, int cnt, int64_t pos,
                        ssize_t (*call)(int, const struct iovec *, int, off64_t, int), off64_t off, int flags)
{
    struct iol_desc *d = iol_fd_io(t, fd);
    uint64_t t0 = iol_t0(d != NULL);
    ssize_t r = call(fd, iov, cnt, off, flags);
    return xfer_post(t, d, &(struct iol_xfer){ (uint16_t)op, (uint8_t)w, 0, fd, iov_first(iov, cnt), pos, iov_bytes(iov, cnt), 0 },
                     r, t0);
}

static ssize_t call_readv(int fd, const struct iovec *iov, int cnt, off64_t off, int flags)
{
    (void)off, (void)flags;
    return iol_real.readv(fd, iov, cnt);
}
static ssize_t call_writev(int fd, const struct iovec *iov, int cnt, off64_t off, int flags)
{
    (void)off, (void)flags;
    return iol_real.writev(fd, iov, cnt);
}
static ssize_t call_preadv(int fd, const struct iovec *iov, int cnt, off64_t off, int flags)
{
    (void)flags;
    return iol_real.preadv(fd, iov, cnt, (off_t)off);
}
static ssize_t call_preadv64(int fd, const struct iovec *iov, int cnt, off64_t off, int flags)
{
    (void)flags;
    return iol_real.preadv64(fd, iov, cnt, off);
}
static ssize_t call_pwritev(int fd, const struct iovec *iov, int cnt, off64_t off, int flags)
{
    (void)flags;
    return iol_real.pwritev(fd, iov, cnt, (off_t)off);
}
static ssize_t call_pwritev64(int fd, const struct iovec *iov, int cnt, off64_t off, int flags)
{
    (void)flags;
    return iol_real.pwritev64(fd, iov, cnt, off);
}
static ssize_t call_preadv2(int fd, const struct iovec *iov, int cnt, off64_t off, int flags)
{
    return iol_real.preadv2(fd, iov, cnt, (off_t)off, flags);
}
static ssize_t call_preadv64v2(int fd, const struct iovec *iov, int cnt, off64_t off, int flags)
{
    return iol_real.preadv64v2(fd, iov, cnt, off, flags);
}
static ssize_t call_pwritev2(int fd, const struct iovec *iov, int cnt, off64_t off, int flags)
{
    return iol_real.pwritev2(fd, iov, cnt, (off_t)off, flags);
}
static ssize_t call_pwritev64v2(int fd, const struct iovec *iov, int cnt, off64_t off, int flags)
{
    return iol_real.pwritev64v2(fd, iov, cnt, off, flags);
}

IOL_EXPORT ssize_t readv(int fd, const struct iovec *iov, int cnt)
{
    struct iol_thread *t = iol_enter();
    if (t == NULL)
        return IOL_REAL(readv)(fd, iov, cnt);
    return vec_call(t, IOL_OP_READV, 0, fd, iov, cnt, -1, call_readv, 0, 0);
}

IOL_EXPORT ssize_t writev(int fd, const struct iovec *iov, int cnt)
{
    struct iol_thread *t = iol_enter();
    if (t == NULL)
        return IOL_REAL(writev)(fd, iov, cnt);
    return vec_call(t, IOL_OP_WRITEV, 1, fd, iov, cnt, -1, call_writev, 0, 0);
}

IOL_EXPORT ssize_t preadv(int fd, const struct iovec *iov, int cnt, off_t off)
{
    struct iol_thread *t = iol_enter();
    if (t == NULL)
        return IOL_REAL(preadv)(fd, iov, cnt, off);
    return vec_call(t, IOL_OP_PREADV, 0, fd, iov, cnt, off, call_preadv, off, 0);
}

IOL_EXPORT ssize_t preadv64(int fd, const struct iovec *iov, int cnt, off64_t off)
{
    struct iol_thread *t = iol_enter();
    if (t == NULL)
        return IOL_REAL(preadv64)(fd, iov, cnt, off);
    return vec_call(t, IOL_OP_PREADV, 0, fd, iov, cnt, off, call_preadv64, off, 0);
}

IOL_EXPORT ssize_t pwritev(int fd, const struct iovec *iov, int cnt, off_t off)
{
    struct iol_thread *t = iol_enter();
    if (t == NULL)
        return IOL_REAL(pwritev)(fd, iov, cnt, off);
    return vec_call(t, IOL_OP_PWRITEV, 1, fd, iov, cnt, off, call_pwritev, off, 0);
}

IOL_EXPORT ssize_t pwritev64(int fd, const struct iovec *iov, int cnt, off64_t off)
{
    struct iol_thread *t = iol_enter();
    if (t == NULL)
        return IOL_REAL(pwritev64)(fd, iov, cnt, off);
    return vec_call(t, IOL_OP_PWRITEV, 1, fd, iov, cnt, off, call_pwritev64, off, 0);
}

IOL_EXPORT ssize_t preadv2(int fd, const struct iovec *iov, int cnt, off_t off, int flags)
{
    struct iol_thread *t = iol_enter();
    if (t == NULL)
        return IOL_REAL(preadv2)(fd, iov, cnt, off, flags);
    return vec_call(t, IOL_OP_PREADV, 0, fd, iov, cnt, off < 0 ? -1 : off, call_preadv2, off, flags);
}

IOL_EXPORT ssize_t preadv64v2(int fd, const struct iovec *iov, int cnt, off64_t off, int flags)
{
    struct iol_thread *t = iol_enter();
    if (t == NULL)
        return IOL_REAL(preadv64v2)(fd, iov, cnt, off, flags);
    return vec_call(t, IOL_OP_PREADV, 0, fd, iov, cnt, off < 0 ? -1 : off, call_preadv64v2, off, flags);
}

IOL_EXPORT ssize_t pwritev2(int fd, const struct iovec *iov, int cnt, off_t off, int flags)
{
    struct iol_thread *t = iol_enter();
    if (t == NULL)
        return IOL_REAL(pwritev2)(fd, iov, cnt, off, flags);
    return vec_call(t, IOL_OP_PWRITEV, 1, fd, iov, cnt, off < 0 ? -1 : off, call_pwritev2, off, flags);
}

IOL_EXPORT ssize_t pwritev64v2(int fd, const struct iovec *iov, int cnt, off64_t off, int flags)
{
    struct iol_thread *t = iol_enter();
    if (t == NULL)
        return IOL_REAL(pwritev64v2)(fd, iov, cnt, off, flags);
    return vec_call(t, IOL_OP_PWRITEV, 1, fd, iov, cnt, off < 0 ? -1 : off, call_pwritev64v2, off, flags);
}

/* copy_file_range and sendfile: a read of the source and a write of the target, both of the bytes moved;
 * the call's time is write time (of the target, and of the process). */
static void copy_post(struct iol_thread *t, int op, int pcount, int in, int64_t in_pos, int out, int64_t out_pos,
                      struct iol_desc *din, struct iol_desc *dout, ssize_t r, int e, uint64_t t0, uint64_t req)
{
    iol_acct_xfer(t, din, &(struct iol_xfer){ (uint16_t)op, 0, 0, in, NULL, in_pos, req, 1 }, r, e, t0);
    iol_acct_xfer(t, dout, &(struct iol_xfer){ (uint16_t)op, 1, 0, out, NULL, out_pos, req, 0 }, r, e, t0);
    uint64_t *p = iol_proc(t);
    if (r >= 0)
        p[pcount]++;
    else
        p[IOL_P_ERRORS]--; /* the failure is one call, counted by each half */
}

IOL_EXPORT ssize_t copy_file_range(int in, off64_t *in_off, int out, off64_t *out_off, size_t len, unsigned flags)
{
    struct iol_thread *t = iol_enter();
    if (t == NULL)
        return IOL_REAL(copy_file_range)(in, in_off, out, out_off, len, flags);
    int *ep = &errno;
    struct iol_desc *din = iol_fd_io(t, in), *dout = iol_fd_io(t, out);
    int64_t ipos = in_off != NULL ? *in_off : -1, opos = out_off != NULL ? *out_off : -1;
    uint64_t t0 = iol_t0(din != NULL || dout != NULL);
    ssize_t r = iol_real.copy_file_range(in, in_off, out, out_off, len, flags);
    int e = *ep;
    copy_post(t, IOL_OP_COPY_FILE_RANGE, IOL_P_COPY_FILE_RANGES, in, ipos, out, opos, din, dout, r, e, t0, len);
    *ep = e;
    iol_leave(t);
    return r;
}

IOL_EXPORT ssize_t sendfile(int out, int in, off_t *off, size_t count)
{
    struct iol_thread *t = iol_enter();
    if (t == NULL)
        return IOL_REAL(sendfile)(out, in, off, count);
    int *ep = &errno;
    struct iol_desc *din = iol_fd_io(t, in), *dout = iol_fd_io(t, out);
    int64_t ipos = off != NULL ? *off : -1;
    uint64_t t0 = iol_t0(din != NULL || dout != NULL);
    ssize_t r = iol_real.sendfile(out, in, off, count);
    int e = *ep;
    copy_post(t, IOL_OP_SENDFILE, IOL_P_SENDFILES, in, ipos, out, -1, din, dout, r, e, t0, count);
    *ep = e;
    iol_leave(t);
    return r;
}

IOL_EXPORT ssize_t sendfile64(int out, int in, off64_t *off, size_t count)
{
    struct iol_thread *t = iol_enter();
    if (t == NULL)
        return IOL_REAL(sendfile64)(out, in, off, count);
    int *ep = &errno;
    struct iol_desc *din = iol_fd_io(t, in), *dout = iol_fd_io(t, out);
    int64_t ipos = off != NULL ? *off : -1;
    uint64_t t0 = iol_t0(din != NULL || dout != NULL);
    ssize_t r = iol_real.sendfile64(out, in, off, count);
    int e = *ep;
    copy_post(t, IOL_OP_SENDFILE, IOL_P_SENDFILES, in, ipos, out, -1, din, dout, r, e, t0, count);
    *ep = e;
    iol_leave(t);
    return r;
}

/* ---- other calls on a descriptor ---- */

/* A metadata call on fd: the file's fcount and the process's pcount. */
static struct iol_desc *fd_meta_pre(struct iol_thread *t, int fd, uint64_t *t0)
{
    int e0 = errno;
    struct iol_desc *d = iol_fd_io(t, fd);
    *t0 = iol_t0(d != NULL);
    errno = e0;
    return d;
}

static void fd_meta_post(struct iol_thread *t, struct iol_desc *d, int op, int fcount, int pcount, int failed,
                         int64_t result, uint64_t t0, uint64_t off, uint64_t size, unsigned how)
{
    iol_acct_meta(t, &(struct iol_meta){ (uint16_t)op, (int16_t)fcount, (int16_t)pcount, d == NULL,
                                         d != NULL ? d->file : NULL, off, size, (uint8_t)how },
                  failed, result, t0);
}

#define LSEEK_LIKE(name, offtype) \
    IOL_EXPORT offtype name(int fd, offtype off, int whence) \
    { \
        struct iol_thread *t = iol_enter(); \
        if (t == NULL) \
            return IOL_REAL(name)(fd, off, whence); \
        uint64_t t0; \
        struct iol_desc *d = fd_meta_pre(t, fd, &t0); \
        offtype r = iol_real.name(fd, off, whence); \
        int e = errno; \
        if (d != NULL && r >= 0) \
            __atomic_store_n(&d->offset, (int64_t)r, __ATOMIC_RELAXED); \
        fd_meta_post(t, d, IOL_OP_LSEEK, IOL_F_POSIX_SEEKS, IOL_P_SEEKS, r < 0, iol_result(r, e), t0, \
                     (uint64_t)off, 0, IOL_META_POSIX); \
        errno = e; \
        iol_leave(t); \
        return r; \
    }
LSEEK_LIKE(lseek, off_t)
LSEEK_LIKE(lseek64, off64_t)
#undef LSEEK_LIKE

/* Calls returning 0 or -1 with errno, taking fd and arguments passed through unchanged. how: where their time
 * counts (a sync's is write time: it writes the file's data, and Darshan counts it so). sync_file_range is
 * neither an fsync nor an fdatasync: the process counts it in FSYNCS, no file counter does. */
#define FD_CALL(ret, name, params, args, op, fcount, pcount, how) \
    IOL_EXPORT ret name params \
    { \
        struct iol_thread *t = iol_enter(); \
        if (t == NULL) \
            return IOL_REAL(name) args; \
        uint64_t t0; \
        struct iol_desc *d = fd_meta_pre(t, fd, &t0); \
        ret r = iol_real.name args; \
        int e = errno; \
        fd_meta_post(t, d, op, fcount, pcount, r < 0, iol_result(r, e), t0, 0, 0, how); \
        errno = e; \
        iol_leave(t); \
        return r; \
    }
FD_CALL(int, fsync, (int fd), (fd), IOL_OP_FSYNC, IOL_F_POSIX_FSYNCS, IOL_P_FSYNCS, IOL_META_SYNC)
FD_CALL(int, fdatasync, (int fd), (fd), IOL_OP_FDATASYNC, IOL_F_POSIX_FDSYNCS, IOL_P_FSYNCS, IOL_META_SYNC)
FD_CALL(int, sync_file_range, (int fd, off64_t off, off64_t n, unsigned int flags), (fd, off, n, flags),
        IOL_OP_SYNC_FILE_RANGE, -1, IOL_P_FSYNCS, IOL_META_SYNC)
FD_CALL(int, ftruncate, (int fd, off_t len), (fd, len), IOL_OP_FTRUNCATE, IOL_F_POSIX_TRUNCATES, IOL_P_TRUNCATES,
        IOL_META_POSIX)
FD_CALL(int, ftruncate64, (int fd, off64_t len), (fd, len), IOL_OP_FTRUNCATE, IOL_F_POSIX_TRUNCATES, IOL_P_TRUNCATES,
        IOL_META_POSIX)
FD_CALL(int, fallocate, (int fd, int mode, off_t off, off_t len), (fd, mode, off, len), IOL_OP_FALLOCATE, -1,
        IOL_P_FALLOCATES, IOL_META_POSIX)
FD_CALL(int, fallocate64, (int fd, int mode, off64_t off, off64_t len), (fd, mode, off, len), IOL_OP_FALLOCATE, -1,
        IOL_P_FALLOCATES, IOL_META_POSIX)
#undef FD_CALL

/* posix_fallocate returns an error number and leaves errno alone. */
#define POSIX_FALLOCATE(name, offtype) \
    IOL_EXPORT int name(int fd, offtype off, offtype len) \
    { \
        struct iol_thread *t = iol_enter(); \
        if (t == NULL) \
            return IOL_REAL(name)(fd, off, len); \
        uint64_t t0; \
        struct iol_desc *d = fd_meta_pre(t, fd, &t0); \
        int r = iol_real.name(fd, off, len); \
        int e = errno; \
        fd_meta_post(t, d, IOL_OP_FALLOCATE, -1, IOL_P_FALLOCATES, r != 0, r != 0 ? -(int64_t)r : 0, t0, \
                     (uint64_t)off, (uint64_t)len, IOL_META_POSIX); \
        errno = e; \
        iol_leave(t); \
        return r; \
    }
POSIX_FALLOCATE(posix_fallocate, off_t)
POSIX_FALLOCATE(posix_fallocate64, off64_t)
#undef POSIX_FALLOCATE
