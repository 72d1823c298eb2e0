/* wrap_open.c — opening and closing descriptors: the open family (with the fortified __open_2 forms),
 * creat, the mkstemp family, close, close_range, closefrom, dup, dup2, dup3, fcntl(F_DUPFD[_CLOEXEC]).
 *
 * The runtime holds no descriptor of its own while the program runs (its log is mapped, aside.c): every
 * number here is the program's, and these calls go to the kernel as they are. */
#include "wrap.h"
#include "sys.h"

#include <fcntl.h>
#include <linux/close_range.h>
#include <stdarg.h>
#include <stdlib.h>
#include <unistd.h>

static void open_pre(struct iol_pcall *o, int dirfd, const char *path, int flags)
{
    int e0 = errno; /* a dirfd's path may take a readlink */
    iol_pcall_pre(o, dirfd, path);
    /* An O_TMPFILE file has no name (its path is the directory): not tracked. */
    if ((flags & O_TMPFILE) == O_TMPFILE)
        o->len = -1;
    errno = e0;
}

static int open_post(struct iol_thread *t, struct iol_pcall *o, int fd, int flags)
{
    int e = errno;
    iol_acct_open(t, IOL_OP_OPEN, fd, e, o, flags, 0);
    errno = e;
    iol_leave(t);
    return fd;
}

static mode_t mode_arg(int flags, va_list ap)
{
    return (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE ? (mode_t)va_arg(ap, int) : 0;
}

IOL_EXPORT int open(const char *path, int flags, ...)
{
    va_list ap;
    va_start(ap, flags);
    mode_t mode = mode_arg(flags, ap);
    va_end(ap);
    struct iol_thread *t = iol_enter();
    if (t == NULL)
        return IOL_REAL(open)(path, flags, mode);
    struct iol_pcall o;
    open_pre(&o, AT_FDCWD, path, flags);
    return open_post(t, &o, iol_real.open(path, flags, mode), flags);
}

IOL_EXPORT int open64(const char *path, int flags, ...)
{
    va_list ap;
    va_start(ap, flags);
    mode_t mode = mode_arg(flags, ap);
    va_end(ap);
    struct iol_thread *t = iol_enter();
    if (t == NULL)
        return IOL_REAL(open64)(path, flags, mode);
    struct iol_pcall o;
    open_pre(&o, AT_FDCWD, path, flags);
    return open_post(t, &o, iol_real.open64(path, flags, mode), flags);
}

IOL_EXPORT int openat(int dirfd, const char *path, int flags, ...)
{
    va_list ap;
    va_start(ap, flags);
    mode_t mode = mode_arg(flags, ap);
    va_end(ap);
    struct iol_thread *t = iol_enter();
    if (t == NULL)
        return IOL_REAL(openat)(dirfd, path, flags, mode);
    struct iol_pcall o;
    open_pre(&o, dirfd, path, flags);
    return open_post(t, &o, iol_real.openat(dirfd, path, flags, mode), flags);
}

IOL_EXPORT int openat64(int dirfd, const char *path, int flags, ...)
{
    va_list ap;
    va_start(ap, flags);
    mode_t mode = mode_arg(flags, ap);
    va_end(ap);
    struct iol_thread *t = iol_enter();
    if (t == NULL)
        return IOL_REAL(openat64)(dirfd, path, flags, mode);
    struct iol_pcall o;
    open_pre(&o, dirfd, path, flags);
    return open_post(t, &o, iol_real.openat64(dirfd, path, flags, mode), flags);
}

IOL_EXPORT int creat(const char *path, mode_t mode)
{
    struct iol_thread *t = iol_enter();
    if (t == NULL)
        return IOL_REAL(creat)(path, mode);
    struct iol_pcall o;
    open_pre(&o, AT_FDCWD, path, O_CREAT | O_WRONLY | O_TRUNC);
    return open_post(t, &o, iol_real.creat(path, mode), O_CREAT | O_WRONLY | O_TRUNC);
}

IOL_EXPORT int creat64(const char *path, mode_t mode)
{
    struct iol_thread *t = iol_enter();
    if (t == NULL)
        return IOL_REAL(creat64)(path, mode);
    struct iol_pcall o;
    open_pre(&o, AT_FDCWD, path, O_CREAT | O_WRONLY | O_TRUNC);
    return open_post(t, &o, iol_real.creat64(path, mode), O_CREAT | O_WRONLY | O_TRUNC);
}

/* The mkstemp family: an open (O_RDWR | O_CREAT | O_EXCL, and mkostemp's flags) of the name the call made
 * from its template, as Darshan's POSIX module counts it. The name is known only once the call returns. */
static int mkstemp_post(struct iol_thread *t, char *tmpl, int fd, int flags, uint64_t t0)
{
    int e = errno;
    struct iol_pcall o;
    iol_pcall_late(&o, AT_FDCWD, tmpl, t0);
    iol_acct_open(t, IOL_OP_MKSTEMP, fd, e, &o, O_RDWR | O_CREAT | O_EXCL | flags, 0);
    errno = e;
    iol_leave(t);
    return fd;
}

#define MKSTEMP(name, params, args, flags) \
    IOL_EXPORT int name params \
    { \
        struct iol_thread *t = iol_enter(); \
        if (t == NULL) \
            return IOL_REAL(name) args; \
        uint64_t t0 = iol_ticks(); \
        int fd = iol_real.name args; \
        return mkstemp_post(t, tmpl, fd, flags, t0); \
    }
MKSTEMP(mkstemp, (char *tmpl), (tmpl), 0)
MKSTEMP(mkstemp64, (char *tmpl), (tmpl), 0)
MKSTEMP(mkostemp, (char *tmpl, int fl), (tmpl, fl), fl)
MKSTEMP(mkostemp64, (char *tmpl, int fl), (tmpl, fl), fl)
MKSTEMP(mkstemps, (char *tmpl, int suffix), (tmpl, suffix), 0)
MKSTEMP(mkstemps64, (char *tmpl, int suffix), (tmpl, suffix), 0)
MKSTEMP(mkostemps, (char *tmpl, int suffix, int fl), (tmpl, suffix, fl), fl)
MKSTEMP(mkostemps64, (char *tmpl, int suffix, int fl), (tmpl, suffix, fl), fl)
#undef MKSTEMP

/* _FORTIFY_SOURCE's checked forms: open without O_CREAT. */
IOL_EXPORT int __open_2(const char *path, int flags)
{
    struct iol_thread *t = iol_enter();
    if (t == NULL)
        return IOL_REAL(__open_2)(path, flags);
    struct iol_pcall o;
    open_pre(&o, AT_FDCWD, path, flags);
    return open_post(t, &o, iol_real.__open_2(path, flags), flags);
}

IOL_EXPORT int __open64_2(const char *path, int flags)
{
    struct iol_thread *t = iol_enter();
    if (t == NULL)
        return IOL_REAL(__open64_2)(path, flags);
    struct iol_pcall o;
    open_pre(&o, AT_FDCWD, path, flags);
    return open_post(t, &o, iol_real.__open64_2(path, flags), flags);
}

IOL_EXPORT int __openat_2(int dirfd, const char *path, int flags)
{
    struct iol_thread *t = iol_enter();
    if (t == NULL)
        return IOL_REAL(__openat_2)(dirfd, path, flags);
    struct iol_pcall o;
    open_pre(&o, dirfd, path, flags);
    return open_post(t, &o, iol_real.__openat_2(dirfd, path, flags), flags);
}

IOL_EXPORT int __openat64_2(int dirfd, const char *path, int flags)
{
    struct iol_thread *t = iol_enter();
    if (t == NULL)
        return IOL_REAL(__openat64_2)(dirfd, path, flags);
    struct iol_pcall o;
    open_pre(&o, dirfd, path, flags);
    return open_post(t, &o, iol_real.__openat64_2(dirfd, path, flags), flags);
}

IOL_EXPORT int close(int fd)
{
    struct iol_thread *t = iol_enter();
    if (t == NULL)
        return IOL_REAL(close)(fd);
    int *ep = &errno;
    /* Taken before the call: once closed, another thread may get the number from its own open. */
    struct iol_desc *d = iol_fd_take(fd);
    uint64_t t0 = iol_t0(iol_desc_file(d) != NULL);
    int r = iol_real.close(fd);
    int e = *ep;
    iol_acct_close(t, IOL_OP_CLOSE, d, r, e, t0);
    *ep = e;
    iol_leave(t);
    return r;
}

/* The descriptors [first, last] were closed by the kernel: forget them. */
static void forget_range(struct iol_thread *t, unsigned first, unsigned last)
{
    int top = __atomic_load_n(&iol_g.fd_max, __ATOMIC_RELAXED);
    if (last > (unsigned)top)
        last = (unsigned)top;
    uint64_t now = iol_ticks();
    for (unsigned fd = first; fd <= last && fd < iol_g.fd_cap; fd++) {
        struct iol_desc *d = iol_fd_take((int)fd);
        if (d != NULL)
            iol_acct_close(t, IOL_OP_CLOSE, d, 0, 0, iol_desc_file(d) != NULL ? now : 0);
    }
}

IOL_EXPORT int close_range(unsigned first, unsigned last, int flags)
{
    struct iol_thread *t = iol_enter();
    if (t == NULL)
        return IOL_REAL(close_range)(first, last, flags);
    int *ep = &errno;
    int r = iol_real.close_range(first, last, flags);
    int e = *ep;
    if (r == 0 && !(flags & CLOSE_RANGE_CLOEXEC))
        forget_range(t, first, last);
    *ep = e;
    iol_leave(t);
    return r;
}

IOL_EXPORT void closefrom(int lowfd)
{
    struct iol_thread *t = iol_enter();
    if (t == NULL) {
        IOL_REAL(closefrom)(lowfd);
        return;
    }
    int *ep = &errno;
    int e = *ep;
    unsigned first = lowfd < 0 ? 0 : (unsigned)lowfd;
    IOL_REAL(closefrom)(lowfd);
    forget_range(t, first, ~0u);
    *ep = e;
    iol_leave(t);
}

/* What fd is, for a dup: its shared state, IOL_UNTRACKED, or NULL (not open). */
static struct iol_desc *dup_source(struct iol_thread *t, int fd)
{
    struct iol_desc *d = iol_fd_get(fd);
    if (d == NULL) {
        iol_fd_known(t, fd); /* identifies it (installs its state or IOL_UNTRACKED) */
        d = iol_fd_get(fd);
    }
    return d;
}

static int dup_post(struct iol_thread *t, struct iol_desc *d, int oldfd, int newfd, int e, uint64_t t0)
{
    if (newfd >= 0 && newfd != oldfd && d != NULL) {
        if (d != IOL_UNTRACKED)
            __atomic_add_fetch(&d->refs, 1, __ATOMIC_RELAXED);
        iol_fd_install(newfd, d);
    }
    struct iol_file *f = iol_desc_file(d);
    iol_acct_meta(t, &(struct iol_meta){ IOL_OP_DUP, IOL_F_POSIX_DUPS, -1, f == NULL, f,
                                         0, 0, IOL_META_REOPEN }, newfd < 0,
                  iol_result(newfd, e), t0);
    errno = e;
    iol_leave(t);
    return newfd;
}

IOL_EXPORT int dup(int fd)
{
    struct iol_thread *t = iol_enter();
    if (t == NULL)
        return IOL_REAL(dup)(fd);
    int e0 = errno;
    struct iol_desc *d = dup_source(t, fd);
    uint64_t t0 = iol_t0(iol_desc_file(d) != NULL);
    errno = e0;
    int r = iol_real.dup(fd);
    return dup_post(t, d, fd, r, errno, t0);
}

IOL_EXPORT int dup2(int fd, int fd2)
{
    struct iol_thread *t = iol_enter();
    if (t == NULL)
        return IOL_REAL(dup2)(fd, fd2);
    int e0 = errno;
    struct iol_desc *d = dup_source(t, fd);
    uint64_t t0 = iol_t0(iol_desc_file(d) != NULL);
    errno = e0;
    int r = iol_real.dup2(fd, fd2);
    return dup_post(t, d, fd, r, errno, t0);
}

IOL_EXPORT int dup3(int fd, int fd2, int flags)
{
    struct iol_thread *t = iol_enter();
    if (t == NULL)
        return IOL_REAL(dup3)(fd, fd2, flags);
    int e0 = errno;
    struct iol_desc *d = dup_source(t, fd);
    uint64_t t0 = iol_t0(iol_desc_file(d) != NULL);
    errno = e0;
    int r = iol_real.dup3(fd, fd2, flags);
    return dup_post(t, d, fd, r, errno, t0);
}

/* fcntl is variadic; like the C library, read the argument as a pointer-sized word and pass it on (the
 * commands that take an int read the low half; those that take none ignore it). */
static int fcntl_common(int (*real)(int, int, ...), int fd, int cmd, void *arg)
{
    if (cmd != F_DUPFD && cmd != F_DUPFD_CLOEXEC)
        return real(fd, cmd, arg);
    struct iol_thread *t = iol_enter();
    if (t == NULL)
        return real(fd, cmd, arg);
    int e0 = errno;
    struct iol_desc *d = dup_source(t, fd);
    uint64_t t0 = iol_t0(iol_desc_file(d) != NULL);
    errno = e0;
    int r = real(fd, cmd, arg);
    return dup_post(t, d, fd, r, errno, t0);
}

IOL_EXPORT int fcntl(int fd, int cmd, ...)
{
    va_list ap;
    va_start(ap, cmd);
    void *arg = va_arg(ap, void *);
    va_end(ap);
    return fcntl_common(IOL_REAL(fcntl), fd, cmd, arg);
}

IOL_EXPORT int fcntl64(int fd, int cmd, ...)
{
    va_list ap;
    va_start(ap, cmd);
    void *arg = va_arg(ap, void *);
    va_end(ap);
    return fcntl_common(IOL_REAL(fcntl64) != NULL ? iol_real.fcntl64 : iol_real.fcntl, fd, cmd, arg);
}
