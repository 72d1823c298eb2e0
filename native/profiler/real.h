/* real.h — the C library's own functions behind the wrappers, resolved once with dlsym(RTLD_NEXT) when the
 * runtime loads. One list (IOL_REAL_FUNCS) declares each: its return type, name and parameters. */
#ifndef IOL_PROF_REAL_H
#define IOL_PROF_REAL_H
#include "wrap_prelude.h"

#include <aio.h>
#include <dirent.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/uio.h>

struct statx;
typedef int (*iol_main_fn)(int, char **, char **);

#define IOL_REAL_FUNCS(X) \
    X(int, open, (const char *, int, ...)) X(int, open64, (const char *, int, ...)) \
    X(int, openat, (int, const char *, int, ...)) X(int, openat64, (int, const char *, int, ...)) \
    X(int, creat, (const char *, mode_t)) X(int, creat64, (const char *, mode_t)) \
    X(int, __open_2, (const char *, int)) X(int, __open64_2, (const char *, int)) \
    X(int, __openat_2, (int, const char *, int)) X(int, __openat64_2, (int, const char *, int)) \
    X(int, close, (int)) X(int, close_range, (unsigned, unsigned, int)) X(void, closefrom, (int)) \
    X(int, dup, (int)) X(int, dup2, (int, int)) X(int, dup3, (int, int, int)) \
    X(int, fcntl, (int, int, ...)) X(int, fcntl64, (int, int, ...)) \
    X(ssize_t, read, (int, void *, size_t)) X(ssize_t, write, (int, const void *, size_t)) \
    X(ssize_t, pread, (int, void *, size_t, off_t)) X(ssize_t, pread64, (int, void *, size_t, off64_t)) \
    X(ssize_t, pwrite, (int, const void *, size_t, off_t)) \
    X(ssize_t, pwrite64, (int, const void *, size_t, off64_t)) \
    X(ssize_t, __read_chk, (int, void *, size_t, size_t)) \
    X(ssize_t, __pread_chk, (int, void *, size_t, off_t, size_t)) \
    X(ssize_t, __pread64_chk, (int, void *, size_t, off64_t, size_t)) \
    X(ssize_t, readv, (int, const struct iovec *, int)) X(ssize_t, writev, (int, const struct iovec *, int)) \
    X(ssize_t, preadv, (int, const struct iovec *, int, off_t)) \
    X(ssize_t, preadv64, (int, const struct iovec *, int, off64_t)) \
    X(ssize_t, pwritev, (int, const struct iovec *, int, off_t)) \
    X(ssize_t, pwritev64, (int, const struct iovec *, int, off64_t)) \
    X(ssize_t, preadv2, (int, const struct iovec *, int, off_t, int)) \
    X(ssize_t, preadv64v2, (int, const struct iovec *, int, off64_t, int)) \
    X(ssize_t, pwritev2, (int, const struct iovec *, int, off_t, int)) \
    X(ssize_t, pwritev64v2, (int, const struct iovec *, int, off64_t, int)) \
    X(off_t, lseek, (int, off_t, int)) X(off64_t, lseek64, (int, off64_t, int)) \
    X(int, fsync, (int)) X(int, fdatasync, (int)) \
    X(int, sync_file_range, (int, off64_t, off64_t, unsigned int)) \
    X(int, stat, (const char *, struct stat *)) X(int, stat64, (const char *, struct stat64 *)) \
    X(int, lstat, (const char *, struct stat *)) X(int, lstat64, (const char *, struct stat64 *)) \
    X(int, fstat, (int, struct stat *)) X(int, fstat64, (int, struct stat64 *)) \
    X(int, fstatat, (int, const char *, struct stat *, int)) \
    X(int, fstatat64, (int, const char *, struct stat64 *, int)) \
    X(int, statx, (int, const char *, int, unsigned int, struct statx *)) \
    X(int, __xstat, (int, const char *, struct stat *)) X(int, __xstat64, (int, const char *, struct stat64 *)) \
    X(int, __lxstat, (int, const char *, struct stat *)) \
    X(int, __lxstat64, (int, const char *, struct stat64 *)) \
    X(int, __fxstat, (int, int, struct stat *)) X(int, __fxstat64, (int, int, struct stat64 *)) \
    X(int, __fxstatat, (int, int, const char *, struct stat *, int)) \
    X(int, __fxstatat64, (int, int, const char *, struct stat64 *, int)) \
    X(int, access, (const char *, int)) X(int, faccessat, (int, const char *, int, int)) \
    X(int, euidaccess, (const char *, int)) X(int, eaccess, (const char *, int)) \
    X(int, unlink, (const char *)) X(int, unlinkat, (int, const char *, int)) \
    X(int, mkdir, (const char *, mode_t)) X(int, mkdirat, (int, const char *, mode_t)) \
    X(int, rmdir, (const char *)) X(int, rename, (const char *, const char *)) \
    X(int, renameat, (int, const char *, int, const char *)) \
    X(int, renameat2, (int, const char *, int, const char *, unsigned int)) \
    X(int, chmod, (const char *, mode_t)) X(int, fchmod, (int, mode_t)) \
    X(int, fchmodat, (int, const char *, mode_t, int)) \
    X(int, link, (const char *, const char *)) X(int, linkat, (int, const char *, int, const char *, int)) \
    X(int, symlink, (const char *, const char *)) X(int, symlinkat, (const char *, int, const char *)) \
    X(int, chdir, (const char *)) X(int, fchdir, (int)) \
    X(DIR *, opendir, (const char *)) X(DIR *, fdopendir, (int)) \
    X(struct dirent *, readdir, (DIR *)) X(struct dirent64 *, readdir64, (DIR *)) \
    X(int, closedir, (DIR *)) X(ssize_t, getdents64, (int, void *, size_t)) \
    X(int, truncate, (const char *, off_t)) X(int, truncate64, (const char *, off64_t)) \
    X(int, ftruncate, (int, off_t)) X(int, ftruncate64, (int, off64_t)) \
    X(int, fallocate, (int, int, off_t, off_t)) X(int, fallocate64, (int, int, off64_t, off64_t)) \
    X(int, posix_fallocate, (int, off_t, off_t)) X(int, posix_fallocate64, (int, off64_t, off64_t)) \
    X(void *, mmap, (void *, size_t, int, int, int, off_t)) \
    X(void *, mmap64, (void *, size_t, int, int, int, off64_t)) \
    X(int, munmap, (void *, size_t)) X(int, msync, (void *, size_t, int)) \
    X(ssize_t, copy_file_range, (int, off64_t *, int, off64_t *, size_t, unsigned int)) \
    X(ssize_t, sendfile, (int, int, off_t *, size_t)) X(ssize_t, sendfile64, (int, int, off64_t *, size_t)) \
    X(FILE *, fopen, (const char *, const char *)) X(FILE *, fopen64, (const char *, const char *)) \
    X(FILE *, fdopen, (int, const char *)) X(FILE *, freopen, (const char *, const char *, FILE *)) \
    X(FILE *, freopen64, (const char *, const char *, FILE *)) X(int, fclose, (FILE *)) \
    X(int, fileno, (FILE *)) \
    X(size_t, fread, (void *, size_t, size_t, FILE *)) X(size_t, fread_unlocked, (void *, size_t, size_t, FILE *)) \
    X(size_t, __fread_chk, (void *, size_t, size_t, size_t, FILE *)) \
    X(size_t, __fread_unlocked_chk, (void *, size_t, size_t, size_t, FILE *)) \
    X(size_t, fwrite, (const void *, size_t, size_t, FILE *)) \
    X(size_t, fwrite_unlocked, (const void *, size_t, size_t, FILE *)) \
    X(char *, fgets, (char *, int, FILE *)) X(char *, fgets_unlocked, (char *, int, FILE *)) \
    X(char *, __fgets_chk, (char *, size_t, int, FILE *)) \
    X(char *, __fgets_unlocked_chk, (char *, size_t, int, FILE *)) \
    X(int, fputs, (const char *, FILE *)) X(int, fputs_unlocked, (const char *, FILE *)) \
    X(int, puts, (const char *)) \
    X(int, fputc, (int, FILE *)) X(int, putc, (int, FILE *)) X(int, _IO_putc, (int, FILE *)) \
    X(int, putchar, (int)) X(int, fputc_unlocked, (int, FILE *)) X(int, putc_unlocked, (int, FILE *)) \
    X(int, putchar_unlocked, (int)) \
    X(int, fgetc, (FILE *)) X(int, getc, (FILE *)) X(int, _IO_getc, (FILE *)) X(int, getchar, (void)) \
    X(int, fgetc_unlocked, (FILE *)) X(int, getc_unlocked, (FILE *)) X(int, getchar_unlocked, (void)) \
    X(ssize_t, getline, (char **, size_t *, FILE *)) X(ssize_t, getdelim, (char **, size_t *, int, FILE *)) \
    X(ssize_t, __getdelim, (char **, size_t *, int, FILE *)) \
    X(int, vfprintf, (FILE *, const char *, va_list)) X(int, __vfprintf_chk, (FILE *, int, const char *, va_list)) \
    X(int, vfscanf, (FILE *, const char *, va_list)) X(int, __isoc99_vfscanf, (FILE *, const char *, va_list)) \
    X(int, fseek, (FILE *, long, int)) X(int, fseeko, (FILE *, off_t, int)) \
    X(int, fseeko64, (FILE *, off64_t, int)) X(long, ftell, (FILE *)) X(off_t, ftello, (FILE *)) \
    X(off64_t, ftello64, (FILE *)) X(int, fflush, (FILE *)) X(int, fflush_unlocked, (FILE *)) \
    X(void, rewind, (FILE *)) X(int, fsetpos, (FILE *, const fpos_t *)) X(int, fsetpos64, (FILE *, const fpos64_t *)) \
    X(int, fgetpos, (FILE *, fpos_t *)) X(int, fgetpos64, (FILE *, fpos64_t *)) \
    X(FILE *, tmpfile, (void)) X(FILE *, tmpfile64, (void)) \
    X(int, mkstemp, (char *)) X(int, mkstemp64, (char *)) X(int, mkostemp, (char *, int)) \
    X(int, mkostemp64, (char *, int)) X(int, mkstemps, (char *, int)) X(int, mkstemps64, (char *, int)) \
    X(int, mkostemps, (char *, int, int)) X(int, mkostemps64, (char *, int, int)) \
    X(int, aio_read, (struct aiocb *)) X(int, aio_read64, (struct aiocb64 *)) \
    X(int, aio_write, (struct aiocb *)) X(int, aio_write64, (struct aiocb64 *)) \
    X(int, lio_listio, (int, struct aiocb *const[], int, struct sigevent *)) \
    X(int, lio_listio64, (int, struct aiocb64 *const[], int, struct sigevent *)) \
    X(ssize_t, aio_return, (struct aiocb *)) X(ssize_t, aio_return64, (struct aiocb64 *)) \
    X(int, aio_error, (const struct aiocb *)) X(int, aio_error64, (const struct aiocb64 *)) \
    X(int, aio_suspend, (const struct aiocb *const[], int, const struct timespec *)) \
    X(int, aio_suspend64, (const struct aiocb64 *const[], int, const struct timespec *)) \
    X(int, aio_fsync, (int, struct aiocb *)) X(int, aio_fsync64, (int, struct aiocb64 *)) \
    X(int, aio_cancel, (int, struct aiocb *)) X(int, aio_cancel64, (int, struct aiocb64 *)) \
    X(pid_t, fork, (void)) X(pid_t, _Fork, (void)) X(pid_t, vfork, (void)) \
    X(int, clone, (int (*)(void *), void *, int, void *, ...)) \
    X(int, posix_spawn, (pid_t *, const char *, const posix_spawn_file_actions_t *, \
                         const posix_spawnattr_t *, char *const[], char *const[])) \
    X(int, posix_spawnp, (pid_t *, const char *, const posix_spawn_file_actions_t *, \
                          const posix_spawnattr_t *, char *const[], char *const[])) \
    X(int, execve, (const char *, char *const[], char *const[])) X(int, execv, (const char *, char *const[])) \
    X(int, execvp, (const char *, char *const[])) \
    X(int, execvpe, (const char *, char *const[], char *const[])) \
    X(int, fexecve, (int, char *const[], char *const[])) \
    X(int, execveat, (int, const char *, char *const[], char *const[], int)) \
    X(void, exit, (int)) X(void, _exit, (int)) X(void, _Exit, (int)) \
    X(__sighandler_t, signal, (int, __sighandler_t)) X(__sighandler_t, sysv_signal, (int, __sighandler_t)) \
    X(__sighandler_t, __sysv_signal, (int, __sighandler_t)) X(__sighandler_t, bsd_signal, (int, __sighandler_t)) \
    X(__sighandler_t, sigset, (int, __sighandler_t)) \
    X(int, sigaction, (int, const struct sigaction *, struct sigaction *)) \
    X(int, __libc_start_main, (iol_main_fn, int, char **, void (*)(void), void (*)(void), void (*)(void), void *))

struct iol_real {
#define X(ret, name, params) ret (*name) params;
    IOL_REAL_FUNCS(X)
#undef X
};

extern struct iol_real iol_real;

/* Resolves every entry (idempotent). Called by the constructor, and by a wrapper called before it ran. */
void iol_real_resolve(void);

/* The real function, resolved on first use if a wrapper runs before the constructor did. */
#define IOL_REAL(name) (iol_real.name ? iol_real.name : (iol_real_resolve(), iol_real.name))

#endif
