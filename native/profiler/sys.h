/* sys.h — the system calls the runtime makes for itself. Raw syscalls, never the C library's names: those
 * are our own wrappers (and a wrapper must not count the runtime's own I/O, nor depend on load order). */
#ifndef IOL_PROF_SYS_H
#define IOL_PROF_SYS_H
#include "wrap_prelude.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

static inline int iol_sys_openat(int dirfd, const char *path, int flags, int mode)
{
    return (int)syscall(SYS_openat, dirfd, path, flags, mode);
}
static inline int iol_sys_close(int fd)
{
    return (int)syscall(SYS_close, fd);
}
static inline ssize_t iol_sys_pread(int fd, void *buf, size_t n, off_t off)
{
    return (ssize_t)syscall(SYS_pread64, fd, buf, n, off);
}
static inline ssize_t iol_sys_pwrite(int fd, const void *buf, size_t n, off_t off)
{
    return (ssize_t)syscall(SYS_pwrite64, fd, buf, n, off);
}
static inline ssize_t iol_sys_write(int fd, const void *buf, size_t n)
{
    return (ssize_t)syscall(SYS_write, fd, buf, n);
}
static inline ssize_t iol_sys_read(int fd, void *buf, size_t n)
{
    return (ssize_t)syscall(SYS_read, fd, buf, n);
}
static inline int iol_sys_fstat(int fd, struct stat *st)
{
    return (int)syscall(SYS_fstat, fd, st);
}
static inline int iol_sys_fallocate(int fd, int mode, off_t off, off_t len)
{
    return (int)syscall(SYS_fallocate, fd, mode, off, len);
}
static inline void *iol_sys_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
    return (void *)syscall(SYS_mmap, addr, len, prot, flags, fd, off);
}
static inline int iol_sys_munmap(void *addr, size_t len)
{
    return (int)syscall(SYS_munmap, addr, len);
}
static inline int iol_sys_madvise(void *addr, size_t len, int advice)
{
    return (int)syscall(SYS_madvise, addr, len, advice);
}
static inline ssize_t iol_sys_readlinkat(int dirfd, const char *path, char *buf, size_t n)
{
    return (ssize_t)syscall(SYS_readlinkat, dirfd, path, buf, n);
}
static inline long iol_sys_getcwd(char *buf, size_t n)
{
    return syscall(SYS_getcwd, buf, n);
}
static inline int iol_sys_renameat(int olddir, const char *oldp, int newdir, const char *newp)
{
    return (int)syscall(SYS_renameat, olddir, oldp, newdir, newp);
}
static inline int iol_sys_unlinkat(int dirfd, const char *path, int flags)
{
    return (int)syscall(SYS_unlinkat, dirfd, path, flags);
}
static inline int iol_sys_faccessat(int dirfd, const char *path, int mode)
{
    return (int)syscall(SYS_faccessat, dirfd, path, mode);
}
static inline int iol_sys_statfs(const char *path, struct statfs *st)
{
    return (int)syscall(SYS_statfs, path, st);
}
static inline off_t iol_sys_lseek(int fd, off_t off, int whence)
{
    return (off_t)syscall(SYS_lseek, fd, off, whence);
}
static inline int iol_sys_fcntl(int fd, int cmd, long arg)
{
    return (int)syscall(SYS_fcntl, fd, cmd, arg);
}
static inline int iol_sys_getpid(void)
{
    return (int)syscall(SYS_getpid);
}
static inline int iol_sys_getppid(void)
{
    return (int)syscall(SYS_getppid);
}
static inline int iol_sys_gettid(void)
{
    return (int)syscall(SYS_gettid);
}
#endif
