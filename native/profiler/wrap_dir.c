/* wrap_dir.c — directories: opendir, fdopendir, readdir(64), closedir, getdents64. Process totals only
 * (OPENDIRS, READDIRS); the directory's descriptor is remembered with its path, so that *at() calls relative
 * to it get absolute paths without a readlink, and so that the trace names the directory of each call. */
#include "wrap.h"

#include <dirent.h>
#include <fcntl.h>

/* With the trace on: the directory a descriptor is open on (the trace names it; the counts do not). */
static struct iol_file *traced_dir(struct iol_thread *t, int fd)
{
    if (IOL_LIKELY(!iol_g.trace) || fd < 0)
        return NULL;
    struct iol_desc *d = iol_fd_known(t, fd); /* a descriptor not seen yet is looked up (errno kept) */
    return d != NULL ? d->file : NULL;
}

static void trace_dir(struct iol_thread *t, struct iol_file *f, uint64_t t0)
{
    if (IOL_UNLIKELY(f != NULL))
        iol_trace_set_file(t, f, t0);
}

IOL_EXPORT DIR *opendir(const char *path)
{
    struct iol_thread *t = iol_enter();
    if (t == NULL)
        return IOL_REAL(opendir)(path);
    struct iol_pcall c;
    iol_pcall_pre(&c, AT_FDCWD, path);
    DIR *d = iol_real.opendir(path);
    int e = *iol_pcall_ep(&c);
    if (d != NULL) {
        int fd = dirfd(d);
        struct iol_file *f = c.len >= 0 ? iol_file_get(t, c.abs, (size_t)c.len, c.hash, IOL_KIND_OTHER, 0) : NULL;
        struct iol_desc *dd = f != NULL ? iol_desc_new(t, f, IOL_DESC_CHECKED, 0) : NULL;
        if (fd >= 0)
            iol_fd_install(fd, dd != NULL ? dd : IOL_UNTRACKED);
    }
    iol_acct_meta(t, &(struct iol_meta){ IOL_OP_OPENDIR, -1, IOL_P_OPENDIRS, c.len < 0, NULL, 0, 0, IOL_META_POSIX },
                  d == NULL, d == NULL ? -(int64_t)e : dirfd(d), c.t0);
    *iol_pcall_ep(&c) = e;
    iol_leave(t);
    return d;
}

IOL_EXPORT DIR *fdopendir(int fd)
{
    struct iol_thread *t = iol_enter();
    if (t == NULL)
        return IOL_REAL(fdopendir)(fd);
    int *ep = &errno;
    uint64_t t0 = iol_t0(1);
    DIR *d = iol_real.fdopendir(fd);
    int e = *ep;
    iol_acct_meta(t, &(struct iol_meta){ IOL_OP_OPENDIR, -1, IOL_P_OPENDIRS, 0, NULL, 0, 0, IOL_META_POSIX }, d == NULL,
                  d == NULL ? -(int64_t)e : fd, t0);
    trace_dir(t, traced_dir(t, fd), t0);
    *ep = e;
    iol_leave(t);
    return d;
}

/* readdir returns NULL both at the end and on an error; only an error changes errno. */
#define READDIR(name, ent) \
    IOL_EXPORT ent *name(DIR *dir) \
    { \
        struct iol_thread *t = iol_enter(); \
        if (t == NULL) \
            return IOL_REAL(name)(dir); \
        int *ep = &errno; \
        int e0 = *ep; \
        uint64_t t0 = iol_t0(1); \
        ent *r = iol_real.name(dir); \
        int e = *ep; \
        int failed = r == NULL && e != e0; \
        iol_acct_meta(t, &(struct iol_meta){ IOL_OP_READDIR, -1, IOL_P_READDIRS, 0, NULL, 0, 0, IOL_META_POSIX }, \
                      failed, failed ? -(int64_t)e : r != NULL, t0); \
        trace_dir(t, traced_dir(t, dirfd(dir)), t0); \
        *ep = e; \
        iol_leave(t); \
        return r; \
    }
READDIR(readdir, struct dirent)
READDIR(readdir64, struct dirent64)
#undef READDIR

IOL_EXPORT int closedir(DIR *dir)
{
    struct iol_thread *t = iol_enter();
    if (t == NULL)
        return IOL_REAL(closedir)(dir);
    int *ep = &errno;
    __asm__("" : "+r"(dir)); /* declared nonnull, but glibc's closedir(NULL) fails with EINVAL: keep the test */
    int fd = dir != NULL ? dirfd(dir) : -1;
    struct iol_desc *d = fd >= 0 ? iol_fd_take(fd) : NULL;
    uint64_t t0 = iol_t0(d != IOL_UNTRACKED);
    struct iol_file *f = iol_g.trace && (uintptr_t)d > (uintptr_t)IOL_UNTRACKED ? d->file : NULL;
    int r = iol_real.closedir(dir);
    int e = *ep;
    iol_desc_release(t, d);
    iol_acct_meta(t, &(struct iol_meta){ IOL_OP_CLOSEDIR, -1, -1, d == IOL_UNTRACKED, NULL, 0, 0, IOL_META_POSIX },
                  r != 0, iol_result(r, e), t0);
    trace_dir(t, f, t0);
    *ep = e;
    iol_leave(t);
    return r;
}

IOL_EXPORT ssize_t getdents64(int fd, void *buf, size_t n)
{
    struct iol_thread *t = iol_enter();
    if (t == NULL)
        return IOL_REAL(getdents64)(fd, buf, n);
    int *ep = &errno;
    uint64_t t0 = iol_t0(1);
    ssize_t r = iol_real.getdents64(fd, buf, n);
    int e = *ep;
    iol_acct_meta(t, &(struct iol_meta){ IOL_OP_GETDENTS, -1, IOL_P_READDIRS, 0, NULL, 0, n, IOL_META_POSIX }, r < 0,
                  iol_result(r, e), t0);
    trace_dir(t, traced_dir(t, fd), t0);
    *ep = e;
    iol_leave(t);
    return r;
}
