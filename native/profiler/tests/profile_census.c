/* profile_census — calls every function the profiler runtime wraps (but those that end or replace the
 * process: exit, _exit, _Exit and the exec family, which profile_calls' cases exit_status, underscore_exit,
 * underscore_Exit, exec and exec_self run one by one), each once, between two markers, so that a trace
 * (IOLENS_TRACE=1) shows exactly what each entry point recorded: tests/test_profile_runtime.py checks each
 * window against the op and file it must hold.
 *
 *   profile_census DIR          run every entry, in name order, in the scratch directory DIR
 *   profile_census --list       the entry points it calls
 *
 * A marker is access("/iolens-census/NAME") before the call and access("/iolens-census/-") after it: the
 * trace names the path of both. What an entry needs (a file, a stream) is made before the first marker and
 * undone after the second, so it stays out of the window. Each call's return value and errno are printed
 * (with a raw write system call): the output must be the same with and without the runtime. Functions the
 * headers do not declare (or declare as macros) are looked up with dlsym, as a program built otherwise
 * would reach them. */
#define _GNU_SOURCE
#include <aio.h>
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "old_stat.h"

extern char **environ;

#undef fread_unlocked
#undef fwrite_unlocked
#undef fputc_unlocked
#undef fgetc_unlocked
#undef putc_unlocked
#undef getc_unlocked
#undef getchar_unlocked
#undef putchar_unlocked
#undef getc
#undef putc

#include "report.h"

#define R(expr) \
    do { \
        errno = 0; \
        long r_ = (long)(expr); \
        int e_ = errno; \
        say("  %s = %ld errno=%s\n", #expr, r_, e_ == 0 ? "0" : strerrorname_np(e_)); \
    } while (0)


static void mark(const char *name)
{
    char m[256];
    snprintf(m, sizeof m, "/iolens-census/%s", name != NULL ? name : "-");
    access(m, F_OK);
}
#define BEGIN mark(census_name)
#define END mark(NULL)

/* An entry: a function with its name in census_name; registered at start-up, run in name order. */
struct entry {
    const char *name;
    void (*fn)(const char *census_name);
};
static struct entry entries[256];
static int n_entries;

#define ENTRY(id, ...) \
    static void e_##id(const char *census_name) \
    { \
        __VA_ARGS__ \
    } \
    __attribute__((constructor)) static void reg_##id(void) \
    { \
        entries[n_entries++] = (struct entry){ #id, e_##id }; \
    }

/* A name the header does not give (or gives as a macro): the function a program built otherwise calls. */
#define SYM(type, name) ((type)dlsym(RTLD_DEFAULT, name))

static const char text[] = "hello world\nsecond line\n12 34\nlast;rest\n";

/* The data file "cs" with text in it, opened for reading and writing (setup, outside the window). */
static int cs(void)
{
    int fd = open(P("cs"), O_CREAT | O_RDWR | O_TRUNC, 0644);
    write(fd, text, sizeof text - 1);
    lseek(fd, 0, SEEK_SET);
    return fd;
}

static FILE *cs_stream(const char *mode)
{
    close(cs());
    return fopen(P("cs"), mode);
}

/* ---- open and close ---- */

ENTRY(open, close(cs()); int fd; BEGIN; R(fd = open(P("cs"), O_RDONLY)); END; close(fd);)
ENTRY(open64, close(cs()); int fd; BEGIN; R(fd = open64(P("cs"), O_RDONLY)); END; close(fd);)
ENTRY(openat, close(cs()); int fd; BEGIN; R(fd = openat(AT_FDCWD, P("cs"), O_RDONLY)); END; close(fd);)
ENTRY(openat64, close(cs()); int fd; BEGIN; R(fd = openat64(AT_FDCWD, P("cs"), O_RDONLY)); END; close(fd);)
ENTRY(creat, int fd; BEGIN; R(fd = creat(P("cs"), 0644)); END; close(fd);)
ENTRY(creat64, int fd; BEGIN; R(fd = creat64(P("cs"), 0644)); END; close(fd);)
ENTRY(__open_2, close(cs()); int fd;
      BEGIN; R(fd = SYM(int (*)(const char *, int), "__open_2")(P("cs"), O_RDONLY)); END; close(fd);)
ENTRY(__open64_2, close(cs()); int fd;
      BEGIN; R(fd = SYM(int (*)(const char *, int), "__open64_2")(P("cs"), O_RDONLY)); END; close(fd);)
ENTRY(__openat_2, close(cs()); int fd;
      BEGIN; R(fd = SYM(int (*)(int, const char *, int), "__openat_2")(AT_FDCWD, P("cs"), O_RDONLY)); END;
      close(fd);)
ENTRY(__openat64_2, close(cs()); int fd;
      BEGIN; R(fd = SYM(int (*)(int, const char *, int), "__openat64_2")(AT_FDCWD, P("cs"), O_RDONLY)); END;
      close(fd);)
ENTRY(close, int fd = cs(); BEGIN; R(close(fd)); END;)
ENTRY(close_range, int fd = cs(); dup2(fd, 100); close(fd); BEGIN; R(close_range(100, 100, 0)); END;)
ENTRY(closefrom, int fd = cs(); dup2(fd, 200); close(fd); BEGIN; closefrom(200); END; R(fcntl(200, F_GETFD));)
ENTRY(dup, int fd = cs(), d; BEGIN; R(d = dup(fd)); END; close(d); close(fd);)
ENTRY(dup2, int fd = cs(); BEGIN; R(dup2(fd, 101)); END; close(101); close(fd);)
ENTRY(dup3, int fd = cs(); BEGIN; R(dup3(fd, 102, O_CLOEXEC)); END; close(102); close(fd);)
ENTRY(fcntl, int fd = cs(), d; BEGIN; R(d = fcntl(fd, F_DUPFD, 103)); END; close(d); close(fd);)
ENTRY(fcntl64, int fd = cs(), d;
      BEGIN; R(d = SYM(int (*)(int, int, ...), "fcntl64")(fd, F_DUPFD_CLOEXEC, 104)); END; close(d); close(fd);)

/* ---- data through a descriptor ---- */

static char buf[4096];
static struct iovec iov2(void)
{
    return (struct iovec){ buf, 4 };
}

ENTRY(read, int fd = cs(); BEGIN; R(read(fd, buf, 5)); END; close(fd);)
ENTRY(__read_chk, int fd = cs();
      BEGIN; R(SYM(ssize_t (*)(int, void *, size_t, size_t), "__read_chk")(fd, buf, 5, sizeof buf)); END; close(fd);)
ENTRY(write, int fd = cs(); BEGIN; R(write(fd, "HELLO", 5)); END; close(fd);)
ENTRY(pread, int fd = cs(); BEGIN; R(pread(fd, buf, 5, 6)); END; close(fd);)
ENTRY(pread64, int fd = cs(); BEGIN; R(pread64(fd, buf, 5, 6)); END; close(fd);)
ENTRY(__pread_chk, int fd = cs();
      BEGIN; R(SYM(ssize_t (*)(int, void *, size_t, off_t, size_t), "__pread_chk")(fd, buf, 5, 6, sizeof buf));
      END; close(fd);)
ENTRY(__pread64_chk, int fd = cs();
      BEGIN; R(SYM(ssize_t (*)(int, void *, size_t, off_t, size_t), "__pread64_chk")(fd, buf, 5, 6, sizeof buf));
      END; close(fd);)
ENTRY(pwrite, int fd = cs(); BEGIN; R(pwrite(fd, "WORLD", 5, 6)); END; close(fd);)
ENTRY(pwrite64, int fd = cs(); BEGIN; R(pwrite64(fd, "WORLD", 5, 6)); END; close(fd);)
ENTRY(readv, int fd = cs(); struct iovec v = iov2(); BEGIN; R(readv(fd, &v, 1)); END; close(fd);)
ENTRY(writev, int fd = cs(); struct iovec v = iov2(); BEGIN; R(writev(fd, &v, 1)); END; close(fd);)
ENTRY(preadv, int fd = cs(); struct iovec v = iov2(); BEGIN; R(preadv(fd, &v, 1, 2)); END; close(fd);)
ENTRY(preadv64, int fd = cs(); struct iovec v = iov2(); BEGIN; R(preadv64(fd, &v, 1, 2)); END; close(fd);)
ENTRY(pwritev, int fd = cs(); struct iovec v = iov2(); BEGIN; R(pwritev(fd, &v, 1, 2)); END; close(fd);)
ENTRY(pwritev64, int fd = cs(); struct iovec v = iov2(); BEGIN; R(pwritev64(fd, &v, 1, 2)); END; close(fd);)
ENTRY(preadv2, int fd = cs(); struct iovec v = iov2(); BEGIN; R(preadv2(fd, &v, 1, 2, 0)); END; close(fd);)
ENTRY(preadv64v2, int fd = cs(); struct iovec v = iov2(); BEGIN; R(preadv64v2(fd, &v, 1, 2, 0)); END; close(fd);)
ENTRY(pwritev2, int fd = cs(); struct iovec v = iov2(); BEGIN; R(pwritev2(fd, &v, 1, 2, 0)); END; close(fd);)
ENTRY(pwritev64v2, int fd = cs(); struct iovec v = iov2(); BEGIN; R(pwritev64v2(fd, &v, 1, 2, 0)); END; close(fd);)
ENTRY(lseek, int fd = cs(); BEGIN; R(lseek(fd, 3, SEEK_SET)); END; close(fd);)
ENTRY(lseek64, int fd = cs(); BEGIN; R(lseek64(fd, 3, SEEK_SET)); END; close(fd);)
ENTRY(fsync, int fd = cs(); BEGIN; R(fsync(fd)); END; close(fd);)
ENTRY(fdatasync, int fd = cs(); BEGIN; R(fdatasync(fd)); END; close(fd);)
ENTRY(sync_file_range, int fd = cs(); BEGIN; R(sync_file_range(fd, 0, 0, SYNC_FILE_RANGE_WRITE)); END; close(fd);)
ENTRY(ftruncate, int fd = cs(); BEGIN; R(ftruncate(fd, 20)); END; close(fd);)
ENTRY(ftruncate64, int fd = cs(); BEGIN; R(ftruncate64(fd, 20)); END; close(fd);)
ENTRY(fallocate, int fd = cs(); BEGIN; R(fallocate(fd, 0, 0, 8192)); END; close(fd);)
ENTRY(fallocate64, int fd = cs(); BEGIN; R(fallocate64(fd, 0, 0, 8192)); END; close(fd);)
ENTRY(posix_fallocate, int fd = cs(); BEGIN; R(posix_fallocate(fd, 0, 8192)); END; close(fd);)
ENTRY(posix_fallocate64, int fd = cs(); BEGIN; R(posix_fallocate64(fd, 0, 8192)); END; close(fd);)
ENTRY(copy_file_range, int fd = cs(), to = open(P("cs2"), O_CREAT | O_WRONLY | O_TRUNC, 0644);
      BEGIN; R(copy_file_range(fd, NULL, to, NULL, 5, 0)); END; close(to); close(fd);)
ENTRY(sendfile, int fd = cs(), to = open(P("cs2"), O_CREAT | O_WRONLY | O_TRUNC, 0644);
      BEGIN; R(sendfile(to, fd, NULL, 5)); END; close(to); close(fd);)
ENTRY(sendfile64, int fd = cs(), to = open(P("cs2"), O_CREAT | O_WRONLY | O_TRUNC, 0644);
      BEGIN; R(sendfile64(to, fd, NULL, 5)); END; close(to); close(fd);)

/* ---- the stat family ---- */

static struct stat st;
static struct stat64 st64;
static struct statx stx;

ENTRY(stat, close(cs()); BEGIN; R(stat(P("cs"), &st)); END;)
ENTRY(stat64, close(cs()); BEGIN; R(stat64(P("cs"), &st64)); END;)
ENTRY(lstat, close(cs()); BEGIN; R(lstat(P("cs"), &st)); END;)
ENTRY(lstat64, close(cs()); BEGIN; R(lstat64(P("cs"), &st64)); END;)
ENTRY(fstat, int fd = cs(); BEGIN; R(fstat(fd, &st)); END; close(fd);)
ENTRY(fstat64, int fd = cs(); BEGIN; R(fstat64(fd, &st64)); END; close(fd);)
ENTRY(fstatat, close(cs()); BEGIN; R(fstatat(AT_FDCWD, P("cs"), &st, 0)); END;)
ENTRY(fstatat64, close(cs()); BEGIN; R(fstatat64(AT_FDCWD, P("cs"), &st64, 0)); END;)
ENTRY(statx, close(cs()); BEGIN; R(statx(AT_FDCWD, P("cs"), 0, STATX_SIZE, &stx)); END;)
#if defined(__x86_64__)
ENTRY(__xstat, close(cs()); BEGIN; R(old_xstat(1, P("cs"), &st)); END;)
ENTRY(__xstat64, close(cs()); BEGIN; R(old_xstat64(1, P("cs"), &st64)); END;)
ENTRY(__lxstat, close(cs()); BEGIN; R(old_lxstat(1, P("cs"), &st)); END;)
ENTRY(__lxstat64, close(cs()); BEGIN; R(old_lxstat64(1, P("cs"), &st64)); END;)
ENTRY(__fxstat, int fd = cs(); BEGIN; R(old_fxstat(1, fd, &st)); END; close(fd);)
ENTRY(__fxstat64, int fd = cs(); BEGIN; R(old_fxstat64(1, fd, &st64)); END; close(fd);)
ENTRY(__fxstatat, close(cs()); BEGIN; R(old_fxstatat(1, AT_FDCWD, P("cs"), &st, 0)); END;)
ENTRY(__fxstatat64, close(cs()); BEGIN; R(old_fxstatat64(1, AT_FDCWD, P("cs"), &st64, 0)); END;)
#endif
ENTRY(access, close(cs()); BEGIN; R(access(P("cs"), R_OK)); END;)
ENTRY(faccessat, close(cs()); BEGIN; R(faccessat(AT_FDCWD, P("cs"), R_OK, 0)); END;)
ENTRY(euidaccess, close(cs()); BEGIN; R(euidaccess(P("cs"), R_OK)); END;)
ENTRY(eaccess, close(cs()); BEGIN; R(eaccess(P("cs"), R_OK)); END;)

/* ---- the namespace ---- */

ENTRY(unlink, close(cs()); BEGIN; R(unlink(P("cs"))); END;)
ENTRY(unlinkat, close(cs()); BEGIN; R(unlinkat(AT_FDCWD, P("cs"), 0)); END;)
ENTRY(mkdir, BEGIN; R(mkdir(P("d1"), 0755)); END; rmdir(P("d1"));)
ENTRY(mkdirat, BEGIN; R(mkdirat(AT_FDCWD, P("d1"), 0755)); END; rmdir(P("d1"));)
ENTRY(rmdir, mkdir(P("d1"), 0755); BEGIN; R(rmdir(P("d1"))); END;)
ENTRY(rename, close(cs()); BEGIN; R(rename(P("cs"), P("cs3"))); END; unlink(P("cs3"));)
ENTRY(renameat, close(cs()); BEGIN; R(renameat(AT_FDCWD, P("cs"), AT_FDCWD, P("cs3"))); END; unlink(P("cs3"));)
ENTRY(renameat2, close(cs()); BEGIN; R(renameat2(AT_FDCWD, P("cs"), AT_FDCWD, P("cs3"), 0)); END; unlink(P("cs3"));)
ENTRY(truncate, close(cs()); BEGIN; R(truncate(P("cs"), 4)); END;)
ENTRY(truncate64, close(cs()); BEGIN; R(truncate64(P("cs"), 4)); END;)
ENTRY(chmod, close(cs()); BEGIN; R(chmod(P("cs"), 0600)); END;)
ENTRY(fchmod, int fd = cs(); BEGIN; R(fchmod(fd, 0600)); END; close(fd);)
ENTRY(fchmodat, close(cs()); BEGIN; R(fchmodat(AT_FDCWD, P("cs"), 0600, 0)); END;)
ENTRY(link, close(cs()); unlink(P("cs4")); BEGIN; R(link(P("cs"), P("cs4"))); END; unlink(P("cs4"));)
ENTRY(linkat, close(cs()); unlink(P("cs4"));
      BEGIN; R(linkat(AT_FDCWD, P("cs"), AT_FDCWD, P("cs4"), 0)); END; unlink(P("cs4"));)
ENTRY(symlink, unlink(P("sl")); BEGIN; R(symlink("cs", P("sl"))); END; unlink(P("sl"));)
ENTRY(symlinkat, unlink(P("sl")); BEGIN; R(symlinkat("cs", AT_FDCWD, P("sl"))); END; unlink(P("sl"));)
ENTRY(chdir, char here[4096]; getcwd(here, sizeof here); BEGIN; R(chdir(dir)); END; chdir(here);)
ENTRY(fchdir, char here[4096]; getcwd(here, sizeof here); int d = open(dir, O_RDONLY | O_DIRECTORY);
      BEGIN; R(fchdir(d)); END; chdir(here); close(d);)

/* ---- directories ---- */

ENTRY(opendir, DIR *d; BEGIN; R((d = opendir(dir)) != NULL); END; closedir(d);)
ENTRY(fdopendir, DIR *d; int fd = open(dir, O_RDONLY | O_DIRECTORY); BEGIN; R((d = fdopendir(fd)) != NULL); END;
      closedir(d);)
ENTRY(readdir, DIR *d = opendir(dir); BEGIN; R(readdir(d) != NULL); END; closedir(d);)
ENTRY(readdir64, DIR *d = opendir(dir); BEGIN; R(readdir64(d) != NULL); END; closedir(d);)
ENTRY(closedir, DIR *d = opendir(dir); BEGIN; R(closedir(d)); END;)
ENTRY(getdents64, int fd = open(dir, O_RDONLY | O_DIRECTORY); BEGIN; R(getdents64(fd, buf, sizeof buf) > 0); END;
      close(fd);)

/* ---- mappings ---- */

ENTRY(mmap, int fd = cs(); void *m; BEGIN; R((m = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0)) != MAP_FAILED);
      END; munmap(m, 4096); close(fd);)
ENTRY(mmap64, int fd = cs(); void *m;
      BEGIN; R((m = mmap64(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0)) != MAP_FAILED); END; munmap(m, 4096);
      close(fd);)
ENTRY(munmap, int fd = cs(); void *m = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0); BEGIN; R(munmap(m, 4096));
      END; close(fd);)
ENTRY(msync, int fd = cs(); void *m = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
      BEGIN; R(msync(m, 4096, MS_SYNC)); END; munmap(m, 4096); close(fd);)

/* ---- stdio: streams ---- */

ENTRY(fopen, close(cs()); FILE *f; BEGIN; R((f = fopen(P("cs"), "r")) != NULL); END; fclose(f);)
ENTRY(fopen64, close(cs()); FILE *f; BEGIN; R((f = fopen64(P("cs"), "r")) != NULL); END; fclose(f);)
ENTRY(fdopen, int fd = cs(); FILE *f; BEGIN; R((f = fdopen(fd, "r")) != NULL); END; fclose(f);)
ENTRY(freopen, FILE *f = cs_stream("r"); BEGIN; R((f = freopen(P("cs"), "r", f)) != NULL); END; fclose(f);)
ENTRY(freopen64, FILE *f = cs_stream("r"); BEGIN; R((f = freopen64(P("cs"), "r", f)) != NULL); END; fclose(f);)
ENTRY(fclose, FILE *f = cs_stream("r"); BEGIN; R(fclose(f)); END;)
ENTRY(fileno, FILE *f = cs_stream("r"); BEGIN; R(fileno(f) > 2); END; fclose(f);)
ENTRY(fseek, FILE *f = cs_stream("r"); BEGIN; R(fseek(f, 3, SEEK_SET)); END; fclose(f);)
ENTRY(fseeko, FILE *f = cs_stream("r"); BEGIN; R(fseeko(f, 3, SEEK_SET)); END; fclose(f);)
ENTRY(fseeko64, FILE *f = cs_stream("r"); BEGIN; R(fseeko64(f, 3, SEEK_SET)); END; fclose(f);)
ENTRY(ftell, FILE *f = cs_stream("r"); BEGIN; R(ftell(f)); END; fclose(f);)
ENTRY(ftello, FILE *f = cs_stream("r"); BEGIN; R(ftello(f)); END; fclose(f);)
ENTRY(ftello64, FILE *f = cs_stream("r"); BEGIN; R(ftello64(f)); END; fclose(f);)
ENTRY(fflush, FILE *f = cs_stream("r+"); fputc('x', f); BEGIN; R(fflush(f)); END; fclose(f);)
ENTRY(fflush_unlocked, FILE *f = cs_stream("r+"); fputc('x', f); BEGIN; R(fflush_unlocked(f)); END; fclose(f);)

/* ---- temporary files, stream positions ---- */

ENTRY(mkstemp, char *t = (char *)P("mk-XXXXXX"); int fd; BEGIN; R((fd = mkstemp(t)) >= 0); END; close(fd); unlink(t);)
ENTRY(mkstemp64, char *t = (char *)P("mk-XXXXXX"); int fd; BEGIN; R((fd = mkstemp64(t)) >= 0); END; close(fd); unlink(t);)
ENTRY(mkostemp, char *t = (char *)P("mk-XXXXXX"); int fd; BEGIN; R((fd = mkostemp(t, O_CLOEXEC)) >= 0); END; close(fd);
      unlink(t);)
ENTRY(mkostemp64, char *t = (char *)P("mk-XXXXXX"); int fd; BEGIN; R((fd = mkostemp64(t, O_CLOEXEC)) >= 0); END; close(fd);
      unlink(t);)
ENTRY(mkstemps, char *t = (char *)P("mk-XXXXXX.s"); int fd; BEGIN; R((fd = mkstemps(t, 2)) >= 0); END; close(fd); unlink(t);)
ENTRY(mkstemps64, char *t = (char *)P("mk-XXXXXX.s"); int fd; BEGIN; R((fd = mkstemps64(t, 2)) >= 0); END; close(fd);
      unlink(t);)
ENTRY(mkostemps, char *t = (char *)P("mk-XXXXXX.s"); int fd; BEGIN; R((fd = mkostemps(t, 2, O_CLOEXEC)) >= 0); END;
      close(fd); unlink(t);)
ENTRY(mkostemps64, char *t = (char *)P("mk-XXXXXX.s"); int fd; BEGIN; R((fd = mkostemps64(t, 2, O_CLOEXEC)) >= 0); END;
      close(fd); unlink(t);)
ENTRY(tmpfile, FILE *f; BEGIN; R((f = tmpfile()) != NULL); END; fclose(f);)
ENTRY(tmpfile64, FILE *f; BEGIN; R((f = tmpfile64()) != NULL); END; fclose(f);)
ENTRY(rewind, FILE *f = cs_stream("r"); fgetc(f); BEGIN; rewind(f); END; R(ftell(f)); fclose(f);)
ENTRY(fsetpos, FILE *f = cs_stream("r"); fpos_t p; fgetpos(f, &p); fgetc(f); BEGIN; R(fsetpos(f, &p)); END;
      fclose(f);)
ENTRY(fsetpos64, FILE *f = cs_stream("r"); fpos64_t p; fgetpos64(f, &p); fgetc(f); BEGIN; R(fsetpos64(f, &p)); END;
      fclose(f);)
ENTRY(fgetpos, FILE *f = cs_stream("r"); fpos_t p; BEGIN; R(fgetpos(f, &p)); END; fclose(f);)
ENTRY(fgetpos64, FILE *f = cs_stream("r"); fpos64_t p; BEGIN; R(fgetpos64(f, &p)); END; fclose(f);)

/* ---- asynchronous I/O: a 5-byte request on "cs"; what a window does not hold (the submission, the wait, the
 * aio_return) is done around it ---- */

static char abuf[16];
#define AIO_SETUP(cb) \
    memset(&(cb), 0, sizeof(cb)); \
    (cb).aio_fildes = cs(); \
    (cb).aio_buf = abuf; \
    (cb).aio_nbytes = 5;
#define AIO_WAIT(cb, error_fn, suspend_fn) \
    do { \
        __typeof__(&(cb)) l_[1] = { &(cb) }; \
        while (error_fn(&(cb)) == EINPROGRESS) \
            suspend_fn((const __typeof__(cb) *const *)l_, 1, NULL); \
    } while (0)
#define AIO_DONE(cb) AIO_WAIT(cb, aio_error, aio_suspend)
#define AIO_DONE64(cb) AIO_WAIT(cb, aio_error64, aio_suspend64)

ENTRY(aio_read, struct aiocb cb; AIO_SETUP(cb) BEGIN; R(aio_read(&cb)); END; AIO_DONE(cb); aio_return(&cb);
      close(cb.aio_fildes);)
ENTRY(aio_read64, struct aiocb64 cb; AIO_SETUP(cb) BEGIN; R(aio_read64(&cb)); END; AIO_DONE64(cb); aio_return64(&cb);
      close(cb.aio_fildes);)
ENTRY(aio_write, struct aiocb cb; AIO_SETUP(cb) BEGIN; R(aio_write(&cb)); END; AIO_DONE(cb); aio_return(&cb);
      close(cb.aio_fildes);)
ENTRY(aio_write64, struct aiocb64 cb; AIO_SETUP(cb) BEGIN; R(aio_write64(&cb)); END; AIO_DONE64(cb);
      aio_return64(&cb); close(cb.aio_fildes);)
ENTRY(lio_listio, struct aiocb cb; AIO_SETUP(cb) cb.aio_lio_opcode = LIO_READ; struct aiocb *l[1] = { &cb };
      BEGIN; R(lio_listio(LIO_WAIT, l, 1, NULL)); END; aio_return(&cb); close(cb.aio_fildes);)
ENTRY(lio_listio64, struct aiocb64 cb; AIO_SETUP(cb) cb.aio_lio_opcode = LIO_READ; struct aiocb64 *l[1] = { &cb };
      BEGIN; R(lio_listio64(LIO_WAIT, l, 1, NULL)); END; aio_return64(&cb); close(cb.aio_fildes);)
ENTRY(aio_return, struct aiocb cb; AIO_SETUP(cb) aio_read(&cb); AIO_DONE(cb); BEGIN; R(aio_return(&cb)); END;
      close(cb.aio_fildes);)
ENTRY(aio_return64, struct aiocb64 cb; AIO_SETUP(cb) aio_read64(&cb); AIO_DONE64(cb); BEGIN; R(aio_return64(&cb));
      END; close(cb.aio_fildes);)
ENTRY(aio_error, struct aiocb cb; AIO_SETUP(cb) aio_read(&cb); AIO_DONE(cb); BEGIN; R(aio_error(&cb)); END;
      aio_return(&cb); close(cb.aio_fildes);)
ENTRY(aio_error64, struct aiocb64 cb; AIO_SETUP(cb) aio_read64(&cb); AIO_DONE64(cb); BEGIN; R(aio_error64(&cb)); END;
      aio_return64(&cb); close(cb.aio_fildes);)
ENTRY(aio_suspend, struct aiocb cb; AIO_SETUP(cb) aio_read(&cb); AIO_DONE(cb); const struct aiocb *l[1] = { &cb };
      BEGIN; R(aio_suspend(l, 1, NULL)); END; aio_return(&cb); close(cb.aio_fildes);)
ENTRY(aio_suspend64, struct aiocb64 cb; AIO_SETUP(cb) aio_read64(&cb); AIO_DONE64(cb);
      const struct aiocb64 *l[1] = { &cb }; BEGIN; R(aio_suspend64(l, 1, NULL)); END; aio_return64(&cb);
      close(cb.aio_fildes);)
ENTRY(aio_fsync, struct aiocb cb; AIO_SETUP(cb) BEGIN; R(aio_fsync(O_SYNC, &cb)); END; AIO_DONE(cb); aio_return(&cb);
      close(cb.aio_fildes);)
ENTRY(aio_fsync64, struct aiocb64 cb; AIO_SETUP(cb) BEGIN; R(aio_fsync64(O_SYNC, &cb)); END; AIO_DONE64(cb);
      aio_return64(&cb); close(cb.aio_fildes);)
ENTRY(aio_cancel, struct aiocb cb; AIO_SETUP(cb) aio_read(&cb); AIO_DONE(cb); BEGIN; R(aio_cancel(cb.aio_fildes, &cb));
      END; aio_return(&cb); close(cb.aio_fildes);)
ENTRY(aio_cancel64, struct aiocb64 cb; AIO_SETUP(cb) aio_read64(&cb); AIO_DONE64(cb);
      BEGIN; R(aio_cancel64(cb.aio_fildes, &cb)); END; aio_return64(&cb); close(cb.aio_fildes);)

/* ---- stdio: reading ---- */

static char line[256];

ENTRY(fread, FILE *f = cs_stream("r"); BEGIN; R(fread(buf, 1, 5, f)); END; fclose(f);)
ENTRY(fread_unlocked, FILE *f = cs_stream("r"); BEGIN; R(fread_unlocked(buf, 1, 5, f)); END; fclose(f);)
ENTRY(__fread_chk, FILE *f = cs_stream("r");
      BEGIN; R(SYM(size_t (*)(void *, size_t, size_t, size_t, FILE *), "__fread_chk")(buf, sizeof buf, 1, 5, f));
      END; fclose(f);)
ENTRY(__fread_unlocked_chk, FILE *f = cs_stream("r");
      BEGIN;
      R(SYM(size_t (*)(void *, size_t, size_t, size_t, FILE *), "__fread_unlocked_chk")(buf, sizeof buf, 1, 5, f));
      END; fclose(f);)
ENTRY(fgets, FILE *f = cs_stream("r"); BEGIN; R(fgets(line, sizeof line, f) != NULL); END; fclose(f);)
ENTRY(fgets_unlocked, FILE *f = cs_stream("r"); BEGIN; R(fgets_unlocked(line, sizeof line, f) != NULL); END;
      fclose(f);)
ENTRY(__fgets_chk, FILE *f = cs_stream("r");
      BEGIN; R(SYM(char *(*)(char *, size_t, int, FILE *), "__fgets_chk")(line, sizeof line, sizeof line, f) != NULL);
      END; fclose(f);)
ENTRY(__fgets_unlocked_chk, FILE *f = cs_stream("r");
      BEGIN;
      R(SYM(char *(*)(char *, size_t, int, FILE *), "__fgets_unlocked_chk")(line, sizeof line, sizeof line, f) != NULL);
      END; fclose(f);)
ENTRY(fgetc, FILE *f = cs_stream("r"); BEGIN; R(fgetc(f)); END; fclose(f);)
ENTRY(fgetc_unlocked, FILE *f = cs_stream("r"); BEGIN; R(SYM(int (*)(FILE *), "fgetc_unlocked")(f)); END; fclose(f);)
ENTRY(getc, FILE *f = cs_stream("r"); BEGIN; R(SYM(int (*)(FILE *), "getc")(f)); END; fclose(f);)
ENTRY(getc_unlocked, FILE *f = cs_stream("r"); BEGIN; R(SYM(int (*)(FILE *), "getc_unlocked")(f)); END; fclose(f);)
ENTRY(_IO_getc, FILE *f = cs_stream("r"); BEGIN; R(SYM(int (*)(FILE *), "_IO_getc")(f)); END; fclose(f);)
ENTRY(fscanf, FILE *f = cs_stream("r"); char w[32];
      BEGIN; R(SYM(int (*)(FILE *, const char *, ...), "fscanf")(f, "%31s", w)); END; fclose(f);)
ENTRY(__isoc99_fscanf, FILE *f = cs_stream("r"); char w[32];
      BEGIN; R(SYM(int (*)(FILE *, const char *, ...), "__isoc99_fscanf")(f, "%31s", w)); END; fclose(f);)
static int via_vfscanf(const char *name, FILE *f, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int r = SYM(int (*)(FILE *, const char *, va_list), name)(f, fmt, ap);
    va_end(ap);
    return r;
}
ENTRY(vfscanf, FILE *f = cs_stream("r"); char w[32]; BEGIN; R(via_vfscanf("vfscanf", f, "%31s", w)); END; fclose(f);)
ENTRY(__isoc99_vfscanf, FILE *f = cs_stream("r"); char w[32];
      BEGIN; R(via_vfscanf("__isoc99_vfscanf", f, "%31s", w)); END; fclose(f);)
ENTRY(getline, FILE *f = cs_stream("r"); char *l = NULL; size_t cap = 0; BEGIN; R(getline(&l, &cap, f)); END;
      free(l); fclose(f);)
ENTRY(getdelim, FILE *f = cs_stream("r"); char *l = NULL; size_t cap = 0; BEGIN; R(getdelim(&l, &cap, ' ', f));
      END; free(l); fclose(f);)
ENTRY(__getdelim, FILE *f = cs_stream("r"); char *l = NULL; size_t cap = 0;
      BEGIN; R(SYM(ssize_t (*)(char **, size_t *, int, FILE *), "__getdelim")(&l, &cap, ' ', f)); END; free(l);
      fclose(f);)

/* ---- stdio: writing ---- */

ENTRY(fwrite, FILE *f = cs_stream("r+"); BEGIN; R(fwrite("HELLO", 1, 5, f)); END; fclose(f);)
ENTRY(fwrite_unlocked, FILE *f = cs_stream("r+"); BEGIN; R(fwrite_unlocked("HELLO", 1, 5, f)); END; fclose(f);)
ENTRY(fputs, FILE *f = cs_stream("r+"); BEGIN; R(fputs("HELLO", f) >= 0); END; fclose(f);)
ENTRY(fputs_unlocked, FILE *f = cs_stream("r+"); BEGIN; R(fputs_unlocked("HELLO", f) >= 0); END; fclose(f);)
ENTRY(fputc, FILE *f = cs_stream("r+"); BEGIN; R(fputc('X', f)); END; fclose(f);)
ENTRY(fputc_unlocked, FILE *f = cs_stream("r+"); BEGIN; R(SYM(int (*)(int, FILE *), "fputc_unlocked")('X', f)); END;
      fclose(f);)
ENTRY(putc, FILE *f = cs_stream("r+"); BEGIN; R(SYM(int (*)(int, FILE *), "putc")('X', f)); END; fclose(f);)
ENTRY(putc_unlocked, FILE *f = cs_stream("r+"); BEGIN; R(SYM(int (*)(int, FILE *), "putc_unlocked")('X', f)); END;
      fclose(f);)
ENTRY(_IO_putc, FILE *f = cs_stream("r+"); BEGIN; R(SYM(int (*)(int, FILE *), "_IO_putc")('X', f)); END; fclose(f);)
ENTRY(fprintf, FILE *f = cs_stream("r+"); BEGIN; R(fprintf(f, "%d", 12345)); END; fclose(f);)
ENTRY(__fprintf_chk, FILE *f = cs_stream("r+");
      BEGIN; R(SYM(int (*)(FILE *, int, const char *, ...), "__fprintf_chk")(f, 1, "%d", 12345)); END; fclose(f);)
static int via_vfprintf(const char *name, int chk, FILE *f, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int r = chk ? SYM(int (*)(FILE *, int, const char *, va_list), name)(f, 1, fmt, ap)
                : SYM(int (*)(FILE *, const char *, va_list), name)(f, fmt, ap);
    va_end(ap);
    return r;
}
ENTRY(vfprintf, FILE *f = cs_stream("r+"); BEGIN; R(via_vfprintf("vfprintf", 0, f, "%d", 12345)); END; fclose(f);)
ENTRY(__vfprintf_chk, FILE *f = cs_stream("r+"); BEGIN; R(via_vfprintf("__vfprintf_chk", 1, f, "%d", 12345)); END;
      fclose(f);)

/* ---- stdio on stdin and stdout (both made the file "io" for the call, and put back after) ---- */

static int saved_in = -1, saved_out = -1;
static void std_to_file(void)
{
    fflush(stdout);
    int fd = cs();
    saved_in = dup(0);
    saved_out = dup(1);
    dup2(fd, 0);
    dup2(fd, 1);
    close(fd);
}
static void std_back(void)
{
    fflush(stdout);
    dup2(saved_in, 0);
    dup2(saved_out, 1);
    close(saved_in);
    close(saved_out);
}
static int via_vprintf(const char *name, int chk, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int r = chk ? SYM(int (*)(int, const char *, va_list), name)(1, fmt, ap)
                : SYM(int (*)(const char *, va_list), name)(fmt, ap);
    va_end(ap);
    return r;
}

ENTRY(getchar, std_to_file(); int c; BEGIN; c = getchar(); END; std_back(); say("  getchar() = %d\n", c);)
ENTRY(getchar_unlocked, std_to_file(); int c;
      BEGIN; c = SYM(int (*)(void), "getchar_unlocked")(); END; std_back(); say("  getchar_unlocked() = %d\n", c);)
ENTRY(putchar, std_to_file(); int c; BEGIN; c = putchar('X'); END; std_back(); say("  putchar() = %d\n", c);)
ENTRY(putchar_unlocked, std_to_file(); int c;
      BEGIN; c = SYM(int (*)(int), "putchar_unlocked")('X'); END; std_back(); say("  putchar_unlocked() = %d\n", c);)
ENTRY(puts, std_to_file(); int c; BEGIN; c = puts("HELLO"); END; std_back(); say("  puts() >= 0 = %d\n", c >= 0);)
ENTRY(printf, std_to_file(); int c; BEGIN; c = printf("%d", 12345); END; std_back(); say("  printf() = %d\n", c);)
ENTRY(__printf_chk, std_to_file(); int c;
      BEGIN; c = SYM(int (*)(int, const char *, ...), "__printf_chk")(1, "%d", 12345); END; std_back();
      say("  __printf_chk() = %d\n", c);)
ENTRY(vprintf, std_to_file(); int c; BEGIN; c = via_vprintf("vprintf", 0, "%d", 12345); END; std_back();
      say("  vprintf() = %d\n", c);)
ENTRY(__vprintf_chk, std_to_file(); int c; BEGIN; c = via_vprintf("__vprintf_chk", 1, "%d", 12345); END; std_back();
      say("  __vprintf_chk() = %d\n", c);)

/* ---- processes: each child ends at once (its own log is another test's) ---- */

static int waited(pid_t pid)
{
    int st = 0;
    return pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}
static int clone_child(void *arg)
{
    (void)arg;
    return 3;
}
static char clone_stack[65536] __attribute__((aligned(16)));

ENTRY(fork, pid_t p; BEGIN; p = fork(); if (p == 0) _exit(3); END; say("  fork child status %d\n", waited(p));)
ENTRY(vfork, pid_t p; BEGIN; p = vfork(); if (p == 0) _exit(3); END; say("  vfork child status %d\n", waited(p));)
ENTRY(_Fork, pid_t p; BEGIN; p = SYM(pid_t (*)(void), "_Fork")(); if (p == 0) _exit(3); END;
      say("  _Fork child status %d\n", waited(p));)
ENTRY(clone, pid_t p; BEGIN; p = clone(clone_child, clone_stack + sizeof clone_stack, SIGCHLD, NULL); END;
      say("  clone child status %d\n", waited(p));)
ENTRY(posix_spawn, pid_t p = -1; char *argv[] = { "true", NULL };
      BEGIN; R(posix_spawn(&p, "/bin/true", NULL, NULL, argv, environ)); END; say("  child status %d\n", waited(p));)
ENTRY(posix_spawnp, pid_t p = -1; char *argv[] = { "true", NULL };
      BEGIN; R(posix_spawnp(&p, "true", NULL, NULL, argv, environ)); END; say("  child status %d\n", waited(p));)

/* ---- signals: the runtime keeps its own handlers; the program's calls behave as without it ---- */

static void on_usr2(int s)
{
    (void)s;
}
typedef void (*handler_t)(int);
ENTRY(signal, BEGIN; R(signal(SIGUSR2, on_usr2) == SIG_DFL); END; signal(SIGUSR2, SIG_DFL);)
ENTRY(sysv_signal, BEGIN; R(SYM(handler_t (*)(int, handler_t), "sysv_signal")(SIGUSR2, on_usr2) == SIG_DFL); END;
      signal(SIGUSR2, SIG_DFL);)
ENTRY(__sysv_signal, BEGIN; R(SYM(handler_t (*)(int, handler_t), "__sysv_signal")(SIGUSR2, on_usr2) == SIG_DFL); END;
      signal(SIGUSR2, SIG_DFL);)
ENTRY(bsd_signal, BEGIN; R(SYM(handler_t (*)(int, handler_t), "bsd_signal")(SIGUSR2, on_usr2) == SIG_DFL); END;
      signal(SIGUSR2, SIG_DFL);)
ENTRY(sigset, BEGIN; R(SYM(handler_t (*)(int, handler_t), "sigset")(SIGUSR2, on_usr2) == SIG_DFL); END;
      signal(SIGUSR2, SIG_DFL);)
ENTRY(sigaction, struct sigaction sa, old; memset(&sa, 0, sizeof sa); sa.sa_handler = on_usr2;
      BEGIN; R(sigaction(SIGUSR2, &sa, &old)); END; say("  old handler default %d\n", old.sa_handler == SIG_DFL);
      signal(SIGUSR2, SIG_DFL);)

static int by_name(const void *a, const void *b)
{
    return strcmp(((const struct entry *)a)->name, ((const struct entry *)b)->name);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        say("usage: profile_census DIR | --list\n");
        flush_report();
        return 2;
    }
    qsort(entries, (size_t)n_entries, sizeof entries[0], by_name);
    int list = strcmp(argv[1], "--list") == 0;
    dir = argv[1];
    for (int i = 0; i < n_entries; i++) {
        say(list ? "%s\n" : "== %s\n", entries[i].name);
        if (!list)
            entries[i].fn(entries[i].name);
    }
    flush_report();
    return 0;
}
