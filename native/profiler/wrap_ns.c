/* wrap_ns.c — namespace calls: unlink, rmdir, mkdir, rename, truncate (by path), chmod, link, symlink and
 * their *at forms; chdir and fchdir keep the runtime's idea of the working directory current.
 *
 * unlink and truncate of a path count on its file record (made if the path was not seen before: the call
 * succeeded, so it names a file); rename counts on the source's record and on the target's, when the source
 * is a file the runtime knows. The rest are process totals. With the trace on, a record of a call on a path
 * that is no file of the log (mkdir, rmdir, a missing path) names the path by a PATHS record (trace.c). */
#include "wrap.h"

#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

/* A call on one path: fcount on its file (creating the record when create), pcount in the process. */
static int path_post(struct iol_thread *t, struct iol_pcall *c, int op, int fcount, int pcount, int create, int r)
{
    int e = *iol_pcall_ep(c);
    struct iol_file *f = fcount >= 0 ? iol_pcall_file(t, c, create && r == 0, IOL_KIND_UNKNOWN) : NULL;
    iol_acct_meta(t, &(struct iol_meta){ (uint16_t)op, (int16_t)fcount, (int16_t)pcount, c->len < 0, f,
                                         0, 0, IOL_META_POSIX },
                  r != 0, iol_result(r, e), c->t0);
    *iol_pcall_ep(c) = e;
    iol_leave(t);
    return r;
}

IOL_EXPORT int unlink(const char *path)
{
    struct iol_thread *t = iol_enter();
    if (t == NULL)
        return IOL_REAL(unlink)(path);
    struct iol_pcall c;
    iol_pcall_pre(&c, AT_FDCWD, path);
    return path_post(t, &c, IOL_OP_UNLINK, IOL_F_POSIX_UNLINKS, IOL_P_UNLINKS, 1, iol_real.unlink(path));
}

IOL_EXPORT int unlinkat(int dirfd, const char *path, int flags)
{
    struct iol_thread *t = iol_enter();
    if (t == NULL)
        return IOL_REAL(unlinkat)(dirfd, path, flags);
    struct iol_pcall c;
    iol_pcall_pre(&c, dirfd, path);
    int r = iol_real.unlinkat(dirfd, path, flags);
    if (flags & AT_REMOVEDIR)
        return path_post(t, &c, IOL_OP_RMDIR, -1, IOL_P_RMDIRS, 0, r);
    return path_post(t, &c, IOL_OP_UNLINK, IOL_F_POSIX_UNLINKS, IOL_P_UNLINKS, 1, r);
}

IOL_EXPORT int rmdir(const char *path)
{
    struct iol_thread *t = iol_enter();
    if (t == NULL)
        return IOL_REAL(rmdir)(path);
    struct iol_pcall c;
    iol_pcall_pre(&c, AT_FDCWD, path);
    return path_post(t, &c, IOL_OP_RMDIR, -1, IOL_P_RMDIRS, 0, iol_real.rmdir(path));
}

IOL_EXPORT int mkdir(const char *path, mode_t mode)
{
    struct iol_thread *t = iol_enter();
    if (t == NULL)
        return IOL_REAL(mkdir)(path, mode);
    struct iol_pcall c;
    iol_pcall_pre(&c, AT_FDCWD, path);
    return path_post(t, &c, IOL_OP_MKDIR, -1, IOL_P_MKDIRS, 0, iol_real.mkdir(path, mode));
}

IOL_EXPORT int mkdirat(int dirfd, const char *path, mode_t mode)
{
    struct iol_thread *t = iol_enter();
    if (t == NULL)
        return IOL_REAL(mkdirat)(dirfd, path, mode);
    struct iol_pcall c;
    iol_pcall_pre(&c, dirfd, path);
    return path_post(t, &c, IOL_OP_MKDIR, -1, IOL_P_MKDIRS, 0, iol_real.mkdirat(dirfd, path, mode));
}

#define TRUNCATE(name, offtype) \
    IOL_EXPORT int name(const char *path, offtype len) \
    { \
        struct iol_thread *t = iol_enter(); \
        if (t == NULL) \
            return IOL_REAL(name)(path, len); \
        struct iol_pcall c; \
        iol_pcall_pre(&c, AT_FDCWD, path); \
        return path_post(t, &c, IOL_OP_TRUNCATE, IOL_F_POSIX_TRUNCATES, IOL_P_TRUNCATES, 1, iol_real.name(path, len)); \
    }
TRUNCATE(truncate, off_t)
TRUNCATE(truncate64, off64_t)
#undef TRUNCATE

IOL_EXPORT int chmod(const char *path, mode_t mode)
{
    struct iol_thread *t = iol_enter();
    if (t == NULL)
        return IOL_REAL(chmod)(path, mode);
    struct iol_pcall c;
    iol_pcall_pre(&c, AT_FDCWD, path);
    return path_post(t, &c, IOL_OP_CHMOD, -1, IOL_P_CHMODS, 0, iol_real.chmod(path, mode));
}

IOL_EXPORT int fchmodat(int dirfd, const char *path, mode_t mode, int flags)
{
    struct iol_thread *t = iol_enter();
    if (t == NULL)
        return IOL_REAL(fchmodat)(dirfd, path, mode, flags);
    struct iol_pcall c;
    iol_pcall_pre(&c, dirfd, path);
    return path_post(t, &c, IOL_OP_CHMOD, -1, IOL_P_CHMODS, 0, iol_real.fchmodat(dirfd, path, mode, flags));
}

IOL_EXPORT int fchmod(int fd, mode_t mode)
{
    struct iol_thread *t = iol_enter();
    if (t == NULL)
        return IOL_REAL(fchmod)(fd, mode);
    int e0 = errno;
    struct iol_desc *d = iol_fd_known(t, fd);
    uint64_t t0 = iol_t0(iol_desc_file(d) != NULL);
    errno = e0;
    int r = iol_real.fchmod(fd, mode);
    int e = errno;
    struct iol_file *f = iol_desc_file(d);
    iol_acct_meta(t, &(struct iol_meta){ IOL_OP_CHMOD, -1, IOL_P_CHMODS, f == NULL, f, 0, 0, IOL_META_POSIX }, r != 0,
                  iol_result(r, e), t0);
    errno = e;
    iol_leave(t);
    return r;
}

/* Two paths: old (for rename, the source) and new. */
struct two_paths {
    struct iol_pcall a, b;
};

static void two_pre(struct two_paths *p, int olddir, const char *oldp, int newdir, const char *newp)
{
    iol_pcall_pre(&p->a, olddir, oldp);
    iol_pcall_pre(&p->b, newdir, newp);
    p->a.t0 = p->b.t0 = iol_t0(p->a.len >= 0 || p->b.len >= 0);
    if (IOL_UNLIKELY(iol_g.trace) && (p->a.len >= 0 || p->b.len >= 0)) { /* the trace names the source */
        iol_tls.tpath = p->a.len >= 0 ? &p->a : &p->b;
        iol_tls.tpath_t0 = p->a.t0;
    }
}

static int rename_post(struct iol_thread *t, struct two_paths *p, int r)
{
    int e = *iol_pcall_ep(&p->a);
    struct iol_file *src = iol_pcall_file(t, &p->a, 0, IOL_KIND_UNKNOWN);
    int known = src != NULL && __atomic_load_n(&src->kind, __ATOMIC_RELAXED) != IOL_KIND_OTHER;
    struct iol_file *dst = r == 0 && known ? iol_pcall_file(t, &p->b, 1, (enum iol_kind)src->kind)
                                           : iol_pcall_file(t, &p->b, 0, IOL_KIND_UNKNOWN);
    int untracked = p->a.len < 0 && p->b.len < 0;
    iol_acct_meta(t, &(struct iol_meta){ IOL_OP_RENAME, IOL_F_POSIX_RENAME_SOURCES, IOL_P_RENAMES, (uint8_t)untracked,
                                         known ? src : NULL, 0, 0, IOL_META_POSIX },
                  r != 0, iol_result(r, e), p->a.t0);
    if (r == 0 && known && dst != NULL) { /* the target's count, timed with the call already */
        struct iol_tfile *tf = iol_tfile(t, dst);
        if (tf != NULL)
            tf->v[IOL_F_POSIX_RENAME_TARGETS]++;
    }
    *iol_pcall_ep(&p->a) = e;
    iol_leave(t);
    return r;
}

IOL_EXPORT int rename(const char *oldp, const char *newp)
{
    struct iol_thread *t = iol_enter();
    if (t == NULL)
        return IOL_REAL(rename)(oldp, newp);
    struct two_paths p;
    two_pre(&p, AT_FDCWD, oldp, AT_FDCWD, newp);
    return rename_post(t, &p, iol_real.rename(oldp, newp));
}

IOL_EXPORT int renameat(int olddir, const char *oldp, int newdir, const char *newp)
{
    struct iol_thread *t = iol_enter();
    if (t == NULL)
        return IOL_REAL(renameat)(olddir, oldp, newdir, newp);
    struct two_paths p;
    two_pre(&p, olddir, oldp, newdir, newp);
    return rename_post(t, &p, iol_real.renameat(olddir, oldp, newdir, newp));
}

IOL_EXPORT int renameat2(int olddir, const char *oldp, int newdir, const char *newp, unsigned int flags)
{
    struct iol_thread *t = iol_enter();
    if (t == NULL)
        return IOL_REAL(renameat2)(olddir, oldp, newdir, newp, flags);
    struct two_paths p;
    two_pre(&p, olddir, oldp, newdir, newp);
    return rename_post(t, &p, iol_real.renameat2(olddir, oldp, newdir, newp, flags));
}

/* link and symlink: counted in LINKS (the new name is what the call makes). */
static int link_post(struct iol_thread *t, struct iol_pcall *c, int r)
{
    return path_post(t, c, IOL_OP_LINK, -1, IOL_P_LINKS, 0, r);
}

IOL_EXPORT int link(const char *oldp, const char *newp)
{
    struct iol_thread *t = iol_enter();
    if (t == NULL)
        return IOL_REAL(link)(oldp, newp);
    struct iol_pcall c;
    iol_pcall_pre(&c, AT_FDCWD, newp);
    return link_post(t, &c, iol_real.link(oldp, newp));
}

IOL_EXPORT int linkat(int olddir, const char *oldp, int newdir, const char *newp, int flags)
{
    struct iol_thread *t = iol_enter();
    if (t == NULL)
        return IOL_REAL(linkat)(olddir, oldp, newdir, newp, flags);
    struct iol_pcall c;
    iol_pcall_pre(&c, newdir, newp);
    return link_post(t, &c, iol_real.linkat(olddir, oldp, newdir, newp, flags));
}

IOL_EXPORT int symlink(const char *target, const char *newp)
{
    struct iol_thread *t = iol_enter();
    if (t == NULL)
        return IOL_REAL(symlink)(target, newp);
    struct iol_pcall c;
    iol_pcall_pre(&c, AT_FDCWD, newp);
    return link_post(t, &c, iol_real.symlink(target, newp));
}

IOL_EXPORT int symlinkat(const char *target, int newdir, const char *newp)
{
    struct iol_thread *t = iol_enter();
    if (t == NULL)
        return IOL_REAL(symlinkat)(target, newdir, newp);
    struct iol_pcall c;
    iol_pcall_pre(&c, newdir, newp);
    return link_post(t, &c, iol_real.symlinkat(target, newdir, newp));
}

/* The working directory: read again after each change (relative paths are made absolute against it). */
IOL_EXPORT int chdir(const char *path)
{
    struct iol_thread *t = iol_enter();
    if (t == NULL)
        return IOL_REAL(chdir)(path);
    int r = iol_real.chdir(path);
    int e = errno;
    if (r == 0)
        iol_cwd_refresh();
    errno = e;
    iol_leave(t);
    return r;
}

IOL_EXPORT int fchdir(int fd)
{
    struct iol_thread *t = iol_enter();
    if (t == NULL)
        return IOL_REAL(fchdir)(fd);
    int r = iol_real.fchdir(fd);
    int e = errno;
    if (r == 0)
        iol_cwd_refresh();
    errno = e;
    iol_leave(t);
    return r;
}
