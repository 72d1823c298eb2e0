/* wrap_stat.c — the stat family (stat, lstat, fstat, fstatat, statx, their *64 forms, and the __xstat
 * entry points of binaries built against glibc < 2.33) and access/faccessat/euidaccess.
 *
 * A stat's own result says what the path is: a regular file gets (or has) a record and its POSIX_STATS
 * counts; anything else counts in the process totals as an untracked call. A failed stat of a path never
 * seen makes no record (programs probe many paths that do not exist: every import of a Python module). */
#include "wrap.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

static int path_stat_post(struct iol_thread *t, struct iol_pcall *c, int op, int r, unsigned mode)
{
    if (c->len < 0 && !iol_g.trace) {
        iol_count_untracked(t, IOL_P_STATS, r != 0);
        iol_leave(t);
        return r;
    }
    int e = *iol_pcall_ep(c);
    int regular = r == 0 && S_ISREG(mode);
    struct iol_file *f = iol_pcall_file(t, c, regular, IOL_KIND_REGULAR);
    int untracked = c->len < 0 || (r == 0 && !regular);
    iol_acct_meta(t, &(struct iol_meta){ (uint16_t)op, IOL_F_POSIX_STATS, IOL_P_STATS, (uint8_t)untracked,
                                         untracked ? NULL : f, 0, 0, IOL_META_POSIX },
                  r != 0, iol_result(r, e), c->t0);
    *iol_pcall_ep(c) = e;
    iol_leave(t);
    return r;
}

/* A call on a path iol_path_quick_excluded knows to be excluded, without the trace: counted in the process
 * totals, nothing else (no clock, no errno; the 4 KiB path buffer of the other calls is not even set up). */
static inline int excluded_post(struct iol_thread *t, int pcount, int r)
{
    iol_count_untracked(t, pcount, r != 0);
    iol_leave(t);
    return r;
}

/* fstat-like: on an open descriptor; its result teaches the runtime the descriptor's type. */
static struct iol_desc *fd_stat_pre(struct iol_thread *t, int fd, uint64_t *t0)
{
    int e0 = errno;
    struct iol_desc *d = iol_fd_known(t, fd);
    *t0 = iol_t0(iol_desc_file(d) != NULL);
    errno = e0;
    return d;
}

static int fd_stat_post(struct iol_thread *t, struct iol_desc *d, int op, int r, int e, unsigned mode, int64_t size,
                        uint64_t t0)
{
    if (r == 0 && mode != 0) /* 0: the call did not say the type */
        iol_desc_seen_stat(d, mode, size);
    struct iol_file *f = iol_desc_file(d);
    iol_acct_meta(t, &(struct iol_meta){ (uint16_t)op, IOL_F_POSIX_STATS, IOL_P_STATS, f == NULL, f,
                                         0, 0, IOL_META_POSIX },
                  r != 0, iol_result(r, e), t0);
    errno = e;
    iol_leave(t);
    return r;
}

#define PATH_STAT(name, sttype, op) \
    __attribute__((noinline)) static int name##_path(struct iol_thread *t, const char *path, sttype *st) \
    { \
        struct iol_pcall c; \
        iol_pcall_pre(&c, AT_FDCWD, path); \
        int r = iol_real.name(path, st); \
        return path_stat_post(t, &c, op, r, r == 0 ? st->st_mode : 0); \
    } \
    IOL_EXPORT int name(const char *path, sttype *st) \
    { \
        struct iol_thread *t = iol_enter(); \
        if (t == NULL) \
            return IOL_REAL(name)(path, st); \
        if (IOL_LIKELY(!iol_g.trace) && iol_path_quick_excluded(path)) \
            return excluded_post(t, IOL_P_STATS, iol_real.name(path, st)); \
        return name##_path(t, path, st); \
    }
PATH_STAT(stat, struct stat, IOL_OP_STAT)
PATH_STAT(stat64, struct stat64, IOL_OP_STAT)
PATH_STAT(lstat, struct stat, IOL_OP_LSTAT)
PATH_STAT(lstat64, struct stat64, IOL_OP_LSTAT)
#undef PATH_STAT

#define FD_STAT(name, sttype) \
    IOL_EXPORT int name(int fd, sttype *st) \
    { \
        struct iol_thread *t = iol_enter(); \
        if (t == NULL) \
            return IOL_REAL(name)(fd, st); \
        uint64_t t0; \
        struct iol_desc *d = fd_stat_pre(t, fd, &t0); \
        int r = iol_real.name(fd, st); \
        int e = errno; \
        return fd_stat_post(t, d, IOL_OP_FSTAT, r, e, r == 0 ? st->st_mode : 0, r == 0 ? st->st_size : 0, t0); \
    }
FD_STAT(fstat, struct stat)
FD_STAT(fstat64, struct stat64)
#undef FD_STAT

static int empty_path(const char *path, int flags)
{
    return (flags & AT_EMPTY_PATH) && path != NULL && path[0] == '\0';
}

#define AT_STAT(name, sttype) \
    IOL_EXPORT int name(int dirfd, const char *path, sttype *st, int flags) \
    { \
        struct iol_thread *t = iol_enter(); \
        if (t == NULL) \
            return IOL_REAL(name)(dirfd, path, st, flags); \
        if (empty_path(path, flags)) { \
            uint64_t t0; \
            struct iol_desc *d = fd_stat_pre(t, dirfd, &t0); \
            int r = iol_real.name(dirfd, path, st, flags); \
            int e = errno; \
            return fd_stat_post(t, d, IOL_OP_FSTATAT, r, e, r == 0 ? st->st_mode : 0, r == 0 ? st->st_size : 0, t0); \
        } \
        if (IOL_LIKELY(!iol_g.trace) && iol_path_quick_excluded(path)) \
            return excluded_post(t, IOL_P_STATS, iol_real.name(dirfd, path, st, flags)); \
        struct iol_pcall c; \
        iol_pcall_pre(&c, dirfd, path); \
        int r = iol_real.name(dirfd, path, st, flags); \
        return path_stat_post(t, &c, IOL_OP_FSTATAT, r, r == 0 ? st->st_mode : 0); \
    }
AT_STAT(fstatat, struct stat)
AT_STAT(fstatat64, struct stat64)
#undef AT_STAT

IOL_EXPORT int statx(int dirfd, const char *path, int flags, unsigned int mask, struct statx *stx)
{
    struct iol_thread *t = iol_enter();
    if (t == NULL)
        return IOL_REAL(statx)(dirfd, path, flags, mask, stx);
    if (empty_path(path, flags)) {
        uint64_t t0;
        struct iol_desc *d = fd_stat_pre(t, dirfd, &t0);
        int r = iol_real.statx(dirfd, path, flags, mask, stx);
        int e = errno;
        int typed = r == 0 && (stx->stx_mask & STATX_TYPE);
        return fd_stat_post(t, d, IOL_OP_STATX, r, e, typed ? stx->stx_mode : 0, typed ? (int64_t)stx->stx_size : 0, t0);
    }
    if (IOL_LIKELY(!iol_g.trace) && iol_path_quick_excluded(path))
        return excluded_post(t, IOL_P_STATS, iol_real.statx(dirfd, path, flags, mask, stx));
    struct iol_pcall c;
    iol_pcall_pre(&c, dirfd, path);
    int r = iol_real.statx(dirfd, path, flags, mask, stx);
    unsigned mode = r == 0 && (stx->stx_mask & STATX_TYPE) ? stx->stx_mode : 0;
    return path_stat_post(t, &c, IOL_OP_STATX, r, mode);
}

/* The pre-2.33 entry points (ver is the struct layout version). */
#define XSTAT(name, sttype, op) \
    __attribute__((noinline)) static int name##_path(struct iol_thread *t, int ver, const char *path, sttype *st) \
    { \
        struct iol_pcall c; \
        iol_pcall_pre(&c, AT_FDCWD, path); \
        int r = iol_real.name(ver, path, st); \
        return path_stat_post(t, &c, op, r, r == 0 ? st->st_mode : 0); \
    } \
    IOL_EXPORT int name(int ver, const char *path, sttype *st) \
    { \
        struct iol_thread *t = iol_enter(); \
        if (t == NULL) \
            return IOL_REAL(name)(ver, path, st); \
        if (IOL_LIKELY(!iol_g.trace) && iol_path_quick_excluded(path)) \
            return excluded_post(t, IOL_P_STATS, iol_real.name(ver, path, st)); \
        return name##_path(t, ver, path, st); \
    }
XSTAT(__xstat, struct stat, IOL_OP_STAT)
XSTAT(__xstat64, struct stat64, IOL_OP_STAT)
XSTAT(__lxstat, struct stat, IOL_OP_LSTAT)
XSTAT(__lxstat64, struct stat64, IOL_OP_LSTAT)
#undef XSTAT

#define FXSTAT(name, sttype) \
    IOL_EXPORT int name(int ver, int fd, sttype *st) \
    { \
        struct iol_thread *t = iol_enter(); \
        if (t == NULL) \
            return IOL_REAL(name)(ver, fd, st); \
        uint64_t t0; \
        struct iol_desc *d = fd_stat_pre(t, fd, &t0); \
        int r = iol_real.name(ver, fd, st); \
        int e = errno; \
        return fd_stat_post(t, d, IOL_OP_FSTAT, r, e, r == 0 ? st->st_mode : 0, r == 0 ? st->st_size : 0, t0); \
    }
FXSTAT(__fxstat, struct stat)
FXSTAT(__fxstat64, struct stat64)
#undef FXSTAT

#define FXSTATAT(name, sttype) \
    IOL_EXPORT int name(int ver, int dirfd, const char *path, sttype *st, int flags) \
    { \
        struct iol_thread *t = iol_enter(); \
        if (t == NULL) \
            return IOL_REAL(name)(ver, dirfd, path, st, flags); \
        struct iol_pcall c; \
        iol_pcall_pre(&c, dirfd, path); \
        int r = iol_real.name(ver, dirfd, path, st, flags); \
        return path_stat_post(t, &c, IOL_OP_FSTATAT, r, r == 0 ? st->st_mode : 0); \
    }
FXSTATAT(__fxstatat, struct stat)
FXSTATAT(__fxstatat64, struct stat64)
#undef FXSTATAT

static int access_post(struct iol_thread *t, struct iol_pcall *c, int r)
{
    int e = *iol_pcall_ep(c);
    iol_acct_meta(t, &(struct iol_meta){ IOL_OP_ACCESS, -1, IOL_P_ACCESSES, c->len < 0, NULL, 0, 0, IOL_META_POSIX },
                  r != 0, iol_result(r, e), c->t0);
    *iol_pcall_ep(c) = e;
    iol_leave(t);
    return r;
}

#define ACCESS_LIKE(name) \
    __attribute__((noinline)) static int name##_path(struct iol_thread *t, const char *path, int mode) \
    { \
        struct iol_pcall c; \
        iol_pcall_pre(&c, AT_FDCWD, path); \
        return access_post(t, &c, iol_real.name(path, mode)); \
    } \
    IOL_EXPORT int name(const char *path, int mode) \
    { \
        struct iol_thread *t = iol_enter(); \
        if (t == NULL) \
            return IOL_REAL(name)(path, mode); \
        if (IOL_LIKELY(!iol_g.trace) && iol_path_quick_excluded(path)) \
            return excluded_post(t, IOL_P_ACCESSES, iol_real.name(path, mode)); \
        return name##_path(t, path, mode); \
    }
ACCESS_LIKE(access)
ACCESS_LIKE(euidaccess)
ACCESS_LIKE(eaccess)
#undef ACCESS_LIKE

IOL_EXPORT int faccessat(int dirfd, const char *path, int mode, int flags)
{
    struct iol_thread *t = iol_enter();
    if (t == NULL)
        return IOL_REAL(faccessat)(dirfd, path, mode, flags);
    if (IOL_LIKELY(!iol_g.trace) && iol_path_quick_excluded(path))
        return excluded_post(t, IOL_P_ACCESSES, iol_real.faccessat(dirfd, path, mode, flags));
    struct iol_pcall c;
    iol_pcall_pre(&c, dirfd, path);
    return access_post(t, &c, iol_real.faccessat(dirfd, path, mode, flags));
}
