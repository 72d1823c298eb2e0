/* profile_calls — calls every function the profiler runtime wraps, one named case at a time, and prints the
 * return value and errno each call gave. Run with and without LD_PRELOAD=libiolens-profile.so: the output
 * must be the same (tests/test_profile_runtime.py), and the log must count exactly what the case did.
 *
 *   profile_calls DIR CASE     run CASE in the scratch directory DIR (which it may fill)
 *   profile_calls --list       the case names
 *
 * The report is written with a raw write system call, so it never counts in the log itself. Paths in it are
 * relative to DIR, and nothing that differs between runs (addresses, inode numbers, times) is printed. */
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <stddef.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

/* <stdio.h> makes these inline code when optimising; the test calls the library's functions. */
#undef fread_unlocked
#undef fwrite_unlocked
#undef fputc_unlocked
#undef fgetc_unlocked
#undef putc_unlocked
#undef getc_unlocked

/* glibc's fortified entry points and pre-2.33 stat entry points, called as a fortified or old binary would. */
int __open_2(const char *, int);
int __open64_2(const char *, int);
int __openat_2(int, const char *, int);
int __openat64_2(int, const char *, int);
ssize_t __read_chk(int, void *, size_t, size_t);
ssize_t __pread_chk(int, void *, size_t, off_t, size_t);
ssize_t __pread64_chk(int, void *, size_t, off64_t, size_t);
size_t __fread_chk(void *, size_t, size_t, size_t, FILE *);
char *__fgets_chk(char *, size_t, int, FILE *);
int __fprintf_chk(FILE *, int, const char *, ...);
int __printf_chk(int, const char *, ...);
int __vfprintf_chk(FILE *, int, const char *, va_list);
int __isoc99_fscanf(FILE *, const char *, ...);
int __isoc99_vfscanf(FILE *, const char *, va_list);
int fcntl64(int, int, ...);

#include "old_stat.h"
#include "report.h"

static const char *self;

static void report(const char *what, long r, int e)
{
    say("%s = %ld errno=%s\n", what, r, e == 0 ? "0" : strerrorname_np(e));
}

/* Calls: errno cleared before, the value and errno after. */
#define R(what, expr) \
    do { \
        errno = 0; \
        long r_ = (long)(expr); \
        report(what, r_, errno); \
    } while (0)
#define RP(what, expr) \
    do { \
        errno = 0; \
        const void *p_ = (const void *)(expr); \
        report(what, p_ != NULL && p_ != MAP_FAILED ? 1 : 0, errno); \
    } while (0)


static int xopen(const char *name, int flags)
{
    return (int)syscall(SYS_openat, AT_FDCWD, P(name), flags | O_CLOEXEC, 0644);
}

/* ---- the cases ---- */

static void c_open(void)
{
    int fd;
    R("open(a, O_CREAT|O_WRONLY|O_TRUNC)", fd = open(P("a"), O_CREAT | O_WRONLY | O_TRUNC, 0644));
    R("close(a)", close(fd));
    R("open(a, O_RDONLY)", fd = open(P("a"), O_RDONLY));
    R("close(a)", close(fd));
    R("open(missing)", open(P("missing"), O_RDONLY));
    R("open64(a)", fd = open64(P("a"), O_RDONLY));
    R("close(a)", close(fd));
    R("openat(AT_FDCWD, a)", fd = openat(AT_FDCWD, P("a"), O_RDONLY));
    R("close(a)", close(fd));
    int d;
    R("open(dir, O_DIRECTORY)", d = open(dir, O_RDONLY | O_DIRECTORY));
    R("openat(dir, a)", fd = openat(d, "a", O_RDONLY));
    R("close(a)", close(fd));
    R("openat64(dir, b, O_CREAT|O_EXCL)", fd = openat64(d, "b", O_CREAT | O_EXCL | O_WRONLY, 0600));
    R("close(b)", close(fd));
    R("openat64(dir, b, O_CREAT|O_EXCL) again", openat64(d, "b", O_CREAT | O_EXCL | O_WRONLY, 0600));
    R("close(dir)", close(d));
    R("creat(c)", fd = creat(P("c"), 0644));
    R("close(c)", close(fd));
    R("creat64(c)", fd = creat64(P("c"), 0644));
    R("close(c)", close(fd));
    R("__open_2(a)", fd = __open_2(P("a"), O_RDONLY));
    R("close(a)", close(fd));
    R("__open64_2(a)", fd = __open64_2(P("a"), O_RDONLY));
    R("close(a)", close(fd));
    R("__openat_2(AT_FDCWD, a)", fd = __openat_2(AT_FDCWD, P("a"), O_RDONLY));
    R("close(a)", close(fd));
    R("__openat64_2(AT_FDCWD, a)", fd = __openat64_2(AT_FDCWD, P("a"), O_RDONLY));
    R("close(a)", close(fd));
    R("open(a, O_APPEND|O_SYNC)", fd = open(P("a"), O_WRONLY | O_APPEND | O_SYNC));
    R("close(a)", close(fd));
    R("close(-1)", close(-1));
    R("close(999)", close(999));
}

static void c_read_write(void)
{
    char buf[256];
    int fd;
    R("open(rw)", fd = open(P("rw"), O_CREAT | O_RDWR | O_TRUNC, 0644));
    R("write(4)", write(fd, "abcd", 4));
    R("write(4)", write(fd, "efgh", 4));
    R("write(4)", write(fd, "ijkl", 4));
    R("lseek(0, SEEK_SET)", lseek(fd, 0, SEEK_SET));
    R("read(4)", read(fd, buf, 4));
    R("read(100) short", read(fd, buf, 100));
    R("read(100) at EOF", read(fd, buf, 100));
    R("lseek64(2, SEEK_SET)", lseek64(fd, 2, SEEK_SET));
    R("__read_chk(4)", __read_chk(fd, buf, 4, sizeof buf));
    R("lseek(0, SEEK_END)", lseek(fd, 0, SEEK_END));
    R("lseek(-1, SEEK_SET)", lseek(fd, -1, SEEK_SET));
    R("close(rw)", close(fd));
    R("read(closed)", read(fd, buf, 4));
    R("write(closed)", write(fd, buf, 4));
    R("lseek(closed)", lseek(fd, 0, SEEK_SET));
}

static void c_pread_pwrite(void)
{
    char buf[64];
    int fd;
    R("open(p)", fd = open(P("p"), O_CREAT | O_RDWR | O_TRUNC, 0644));
    R("pwrite(8 @0)", pwrite(fd, "01234567", 8, 0));
    R("pwrite(8 @8)", pwrite(fd, "89abcdef", 8, 8));
    R("pwrite64(8 @4096)", pwrite64(fd, "ghijklmn", 8, 4096));
    R("pwrite(-1 offset)", pwrite(fd, "x", 1, -1));
    R("pread(8 @4)", pread(fd, buf, 8, 4));
    R("pread64(16 @4096) short", pread64(fd, buf, 16, 4096));
    R("pread(8 @10000) EOF", pread(fd, buf, 8, 10000));
    R("__pread_chk(4 @0)", __pread_chk(fd, buf, 4, 0, sizeof buf));
    R("__pread64_chk(4 @8)", __pread64_chk(fd, buf + 1, 4, 8, sizeof buf - 1));
    R("close(p)", close(fd));
    R("pread(closed)", pread(fd, buf, 4, 0));
}

static void c_vector(void)
{
    char a[4], b[8], c[16];
    struct iovec w[2] = { { "AAAA", 4 }, { "BBBBBBBB", 8 } };
    struct iovec r[2] = { { a, 4 }, { b, 8 } };
    struct iovec big = { c, 16 };
    int fd;
    R("open(v)", fd = open(P("v"), O_CREAT | O_RDWR | O_TRUNC, 0644));
    R("writev(12)", writev(fd, w, 2));
    R("pwritev(12 @12)", pwritev(fd, w, 2, 12));
    R("pwritev64(12 @24)", pwritev64(fd, w, 2, 24));
    R("pwritev2(12 @36)", pwritev2(fd, w, 2, 36, 0));
    R("pwritev64v2(12 @48)", pwritev64v2(fd, w, 2, 48, 0));
    R("pwritev2(12 @-1)", pwritev2(fd, w, 2, -1, 0));
    R("lseek(0)", lseek(fd, 0, SEEK_SET));
    R("readv(12)", readv(fd, r, 2));
    R("preadv(12 @12)", preadv(fd, r, 2, 12));
    R("preadv64(12 @24)", preadv64(fd, r, 2, 24));
    R("preadv2(12 @36)", preadv2(fd, r, 2, 36, 0));
    R("preadv64v2(12 @48)", preadv64v2(fd, r, 2, 48, 0));
    R("preadv2(16 @-1)", preadv2(fd, &big, 1, -1, 0));
    R("preadv(16 @70) short", preadv(fd, &big, 1, 70));
    R("preadv2(bad flags)", preadv2(fd, r, 2, 0, 0x7fff0000));
    R("close(v)", close(fd));
}

static void c_sync(void)
{
    int fd;
    R("open(s)", fd = open(P("s"), O_CREAT | O_RDWR | O_TRUNC, 0644));
    R("write(4)", write(fd, "sync", 4));
    R("fsync", fsync(fd));
    R("fdatasync", fdatasync(fd));
    R("sync_file_range", sync_file_range(fd, 0, 4, SYNC_FILE_RANGE_WRITE));
    R("ftruncate(100)", ftruncate(fd, 100));
    R("ftruncate64(50)", ftruncate64(fd, 50));
    R("fallocate(0, 4096)", fallocate(fd, 0, 0, 4096));
    R("fallocate64(4096, 4096)", fallocate64(fd, 0, 4096, 4096));
    R("posix_fallocate(0, 8192)", posix_fallocate(fd, 0, 8192));
    R("posix_fallocate64(bad len)", posix_fallocate64(fd, 0, -1));
    R("ftruncate(-1)", ftruncate(fd, -1));
    R("close(s)", close(fd));
    R("fsync(closed)", fsync(fd));
    R("truncate(s, 10)", truncate(P("s"), 10));
    R("truncate64(s, 20)", truncate64(P("s"), 20));
    R("truncate(missing)", truncate(P("missing"), 0));
}

static void c_stat(void)
{
    struct stat st;
    struct stat64 st64;
    struct statx sx;
    int fd;
    R("open(st)", fd = open(P("st"), O_CREAT | O_WRONLY | O_TRUNC, 0644));
    R("write(5)", write(fd, "12345", 5));
    R("stat(st)", stat(P("st"), &st));
    say("  size %ld\n", (long)st.st_size);
    R("stat64(st)", stat64(P("st"), &st64));
    R("lstat(st)", lstat(P("st"), &st));
    R("lstat64(st)", lstat64(P("st"), &st64));
    R("fstat(st)", fstat(fd, &st));
    R("fstat64(st)", fstat64(fd, &st64));
    R("fstatat(AT_FDCWD, st)", fstatat(AT_FDCWD, P("st"), &st, 0));
    R("fstatat64(AT_FDCWD, st)", fstatat64(AT_FDCWD, P("st"), &st64, 0));
    R("fstatat(fd, \"\", AT_EMPTY_PATH)", fstatat(fd, "", &st, AT_EMPTY_PATH));
    R("statx(st)", statx(AT_FDCWD, P("st"), 0, STATX_BASIC_STATS, &sx));
    say("  stx_size %ld\n", (long)sx.stx_size);
    R("statx(fd, \"\", AT_EMPTY_PATH)", statx(fd, "", AT_EMPTY_PATH, STATX_BASIC_STATS, &sx));
    R("stat(missing)", stat(P("missing"), &st));
    R("statx(missing)", statx(AT_FDCWD, P("missing"), 0, STATX_BASIC_STATS, &sx));
    R("stat(dir)", stat(dir, &st));
    R("fstat(-1)", fstat(-1, &st));
    R("close(st)", close(fd));
#if defined(__x86_64__)
    /* The pre-2.33 entry points, as a binary built against an older glibc calls them: references bound to
     * the version they had then (a dlvsym lookup would skip an interposer's unversioned definition). */
    struct stat o;
    R("__xstat(st)", old_xstat(1, P("st"), &o));
    R("__lxstat(st)", old_lxstat(1, P("st"), &o));
    R("open(st)", fd = open(P("st"), O_RDONLY));
    R("__fxstat(st)", old_fxstat(1, fd, &o));
    R("close(st)", close(fd));
    R("__fxstatat(st)", old_fxstatat(1, AT_FDCWD, P("st"), &o, 0));
    R("__xstat(missing)", old_xstat(1, P("missing"), &o));
#endif
}

static void c_access(void)
{
    int fd = xopen("acc", O_CREAT | O_WRONLY);
    syscall(SYS_close, fd);
    R("access(acc, R_OK)", access(P("acc"), R_OK));
    R("access(missing)", access(P("missing"), F_OK));
    R("faccessat(acc)", faccessat(AT_FDCWD, P("acc"), W_OK, 0));
    R("euidaccess(acc)", euidaccess(P("acc"), R_OK));
    R("eaccess(acc)", eaccess(P("acc"), R_OK));
}

static void c_namespace(void)
{
    int fd = xopen("n1", O_CREAT | O_WRONLY);
    syscall(SYS_close, fd);
    R("mkdir(d1)", mkdir(P("d1"), 0755));
    R("mkdir(d1) again", mkdir(P("d1"), 0755));
    R("mkdirat(AT_FDCWD, d2)", mkdirat(AT_FDCWD, P("d2"), 0755));
    R("rename(n1, n2)", rename(P("n1"), P("n2")));
    R("rename(missing, x)", rename(P("missing"), P("x")));
    R("renameat(n2, n3)", renameat(AT_FDCWD, P("n2"), AT_FDCWD, P("n3")));
    R("renameat2(n3, n4, NOREPLACE)", renameat2(AT_FDCWD, P("n3"), AT_FDCWD, P("n4"), RENAME_NOREPLACE));
    R("chmod(n4)", chmod(P("n4"), 0600));
    R("fchmodat(n4)", fchmodat(AT_FDCWD, P("n4"), 0640, 0));
    R("open(n4)", fd = open(P("n4"), O_RDONLY));
    R("fchmod(n4)", fchmod(fd, 0644));
    R("close(n4)", close(fd));
    R("link(n4, l1)", link(P("n4"), P("l1")));
    R("linkat(n4, l2)", linkat(AT_FDCWD, P("n4"), AT_FDCWD, P("l2"), 0));
    R("symlink(n4, s1)", symlink("n4", P("s1")));
    R("symlinkat(n4, s2)", symlinkat("n4", AT_FDCWD, P("s2")));
    R("unlink(l1)", unlink(P("l1")));
    R("unlinkat(l2)", unlinkat(AT_FDCWD, P("l2"), 0));
    R("unlink(missing)", unlink(P("missing")));
    R("rmdir(d1)", rmdir(P("d1")));
    R("unlinkat(d2, AT_REMOVEDIR)", unlinkat(AT_FDCWD, P("d2"), AT_REMOVEDIR));
    R("rmdir(missing)", rmdir(P("missing")));
    /* Relative paths after chdir: the runtime must follow the working directory. */
    R("mkdir(sub)", mkdir(P("sub"), 0755));
    R("chdir(sub)", chdir(P("sub")));
    R("open(rel, O_CREAT)", fd = open("rel", O_CREAT | O_WRONLY, 0644));
    R("write(3)", write(fd, "rel", 3));
    R("close(rel)", close(fd));
    int d = xopen("", O_RDONLY | O_DIRECTORY);
    R("fchdir(DIR)", fchdir(d));
    syscall(SYS_close, d);
    R("open(sub/../sub/./rel2, O_CREAT)", fd = open("sub/../sub/./rel2", O_CREAT | O_WRONLY, 0644));
    R("write(4)", write(fd, "rel2", 4));
    R("close(rel2)", close(fd));
    R("chdir(missing)", chdir(P("missing")));
}

static void c_dir(void)
{
    int fd = xopen("e1", O_CREAT | O_WRONLY);
    syscall(SYS_close, fd);
    fd = xopen("e2", O_CREAT | O_WRONLY);
    syscall(SYS_close, fd);
    DIR *d;
    RP("opendir(DIR)", d = opendir(dir));
    int n = 0;
    struct dirent *e;
    do {
        errno = 0;
        e = readdir(d);
        n += e != NULL;
    } while (e != NULL);
    say("readdir: %d entries, end errno=%s\n", n, errno == 0 ? "0" : strerrorname_np(errno));
    R("closedir", closedir(d));
    RP("opendir(missing)", opendir(P("missing")));
    int dfd = xopen("", O_RDONLY | O_DIRECTORY);
    RP("fdopendir", d = fdopendir(dfd));
    n = 0;
    struct dirent64 *e64;
    while ((e64 = readdir64(d)) != NULL)
        n++;
    say("readdir64: %d entries\n", n);
    R("closedir", closedir(d));
    dfd = xopen("", O_RDONLY | O_DIRECTORY);
    char buf[4096];
    R("getdents64 > 0", getdents64(dfd, buf, sizeof buf) > 0);
    R("getdents64 end", getdents64(dfd, buf, sizeof buf));
    R("getdents64(-1)", getdents64(-1, buf, sizeof buf));
    syscall(SYS_close, dfd);
    DIR *volatile none = NULL; /* glibc's closedir(NULL) fails with EINVAL */
    R("closedir(NULL)", closedir(none));
}

static void c_mmap(void)
{
    int fd;
    R("open(m)", fd = open(P("m"), O_CREAT | O_RDWR | O_TRUNC, 0644));
    R("ftruncate(8192)", ftruncate(fd, 8192));
    char *p;
    RP("mmap(file)", p = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0));
    memcpy(p, "mapped", 6);
    R("msync", msync(p, 8192, MS_SYNC));
    R("munmap(file)", munmap(p, 8192));
    RP("mmap64(file)", p = mmap64(NULL, 4096, PROT_READ, MAP_SHARED, fd, 4096));
    R("munmap(file)", munmap(p, 4096));
    char *anon;
    RP("mmap(anonymous)", anon = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    R("msync(anonymous)", msync(anon, 4096, MS_SYNC)); /* not I/O: not counted */
    R("munmap(anonymous)", munmap(anon, 4096));
    RP("mmap(closed fd)", mmap(NULL, 4096, PROT_READ, MAP_SHARED, 999, 0));
    /* A file mapping unmapped a piece at a time: each piece counts, the range once gone does not. */
    size_t pg = (size_t)sysconf(_SC_PAGESIZE);
    RP("mmap(file, 3 pages)", p = mmap(NULL, 3 * pg, PROT_READ, MAP_SHARED, fd, 0));
    R("msync(middle page)", msync(p + pg, pg, MS_ASYNC));
    R("munmap(middle page)", munmap(p + pg, pg));
    R("munmap(first page)", munmap(p, pg));
    R("msync(unmapped middle)", msync(p + pg, pg, MS_SYNC));
    R("munmap(last page)", munmap(p + 2 * pg, pg));
    R("munmap(all again)", munmap(p, 3 * pg));
    R("close(m)", close(fd));
}

/* More file mappings at once than the runtime remembers (4096): the rest are counted as not remembered. */
static void c_mmap_many(void)
{
    enum { N = 4106 };
    static char *maps[N];
    int fd = xopen("mm", O_CREAT | O_RDWR | O_TRUNC);
    syscall(SYS_ftruncate, fd, 4096);
    int ok = 0, unmapped = 0;
    for (int i = 0; i < N; i++) {
        maps[i] = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0);
        ok += maps[i] != MAP_FAILED;
    }
    for (int i = 0; i < N; i++)
        unmapped += maps[i] != MAP_FAILED && munmap(maps[i], 4096) == 0;
    syscall(SYS_close, fd);
    say("mapped %d, unmapped %d\n", ok, unmapped);
}

static void c_copy(void)
{
    int in, outfd;
    R("open(src)", in = open(P("src"), O_CREAT | O_RDWR | O_TRUNC, 0644));
    char block[1000];
    memset(block, 'x', sizeof block);
    R("write(1000)", write(in, block, sizeof block));
    R("open(dst)", outfd = open(P("dst"), O_CREAT | O_WRONLY | O_TRUNC, 0644));
    off64_t ioff = 0;
    R("copy_file_range(600 @0)", copy_file_range(in, &ioff, outfd, NULL, 600, 0));
    R("copy_file_range(600 @600) short", copy_file_range(in, &ioff, outfd, NULL, 600, 0));
    off_t soff = 0;
    R("sendfile(300 @0)", sendfile(outfd, in, &soff, 300));
    off64_t soff64 = 900;
    R("sendfile64(300 @900) short", sendfile64(outfd, in, &soff64, 300));
    R("copy_file_range(bad fd)", copy_file_range(999, NULL, outfd, NULL, 10, 0));
    R("close(src)", close(in));
    R("close(dst)", close(outfd));
}

static void c_dup(void)
{
    int fd, a, b, c, d, e;
    R("open(dp)", fd = open(P("dp"), O_CREAT | O_RDWR | O_TRUNC, 0644));
    R("dup", a = dup(fd));
    R("write(dup, 4)", write(a, "dup1", 4));
    R("dup2(fd, 40)", b = dup2(fd, 40));
    R("write(40, 4)", write(b, "dup2", 4));
    R("dup3(fd, 41, O_CLOEXEC)", c = dup3(fd, 41, O_CLOEXEC));
    R("fcntl(F_DUPFD, 50)", d = fcntl(fd, F_DUPFD, 50));
    R("fcntl(F_DUPFD_CLOEXEC, 60)", e = fcntl(fd, F_DUPFD_CLOEXEC, 60));
    R("fcntl(F_GETFD)", fcntl(e, F_GETFD));
    R("fcntl(F_GETFL) & O_ACCMODE", fcntl(e, F_GETFL) & O_ACCMODE);
    R("write(60, 4)", write(e, "dup3", 4));
    R("dup2(fd, fd)", dup2(fd, fd));
    R("dup(-1)", dup(-1));
    R("dup2(-1, 42)", dup2(-1, 42));
    R("close(dup)", close(a));
    R("close(40)", close(b));
    R("close(41)", close(c));
    R("close(50)", close(d));
    R("close_range(60, 60)", close_range(60, 60, 0));
    R("write(60) after close_range", write(60, "x", 1));
    R("dup2(fd, 70)", dup2(fd, 70));
    R("dup2(fd, 71)", dup2(fd, 71));
    closefrom(70);
    say("closefrom(70)\n");
    R("write(70) after closefrom", write(70, "x", 1));
    R("write(fd, 4)", write(fd, "last", 4));
    R("close(dp)", close(fd));
}

static void c_stdio(void)
{
    FILE *f;
    char line[64];
    RP("fopen(sf, w)", f = fopen(P("sf"), "w"));
    R("fwrite(1x4)", fwrite("abcd", 1, 4, f));
    R("fwrite(2x3)", fwrite("efghij", 2, 3, f));
    R("fputs(line)", fputs("line one\n", f) >= 0);
    R("fprintf", fprintf(f, "%s %d\n", "num", 42));
    R("fflush", fflush(f));
    R("ftell", ftell(f));
    R("fclose", fclose(f));
    RP("fopen64(sf, r)", f = fopen64(P("sf"), "r"));
    char buf[8];
    R("fread(1x4)", fread(buf, 1, 4, f));
    R("fseek(10, SET)", fseek(f, 10, SEEK_SET));
    R("ftello", ftello(f));
    RP("fgets", fgets(line, sizeof line, f));
    say("  line: %s", line);
    int num = 0;
    char word[16];
    R("fscanf", fscanf(f, "%15s %d", word, &num));
    say("  scanned %s %d\n", word, num);
    R("fseeko(0, END)", fseeko(f, 0, SEEK_END));
    RP("fgets at EOF", fgets(line, sizeof line, f));
    R("fread at EOF", fread(buf, 1, 4, f));
    R("fseeko64(0, SET)", fseeko64(f, 0, SEEK_SET));
    R("ftello64", ftello64(f));
    R("fread_unlocked(2x2)", fread_unlocked(buf, 2, 2, f));
    RP("fgets_unlocked", fgets_unlocked(line, sizeof line, f));
    R("fileno", fileno(f) >= 0);
    R("fclose", fclose(f));
    RP("fopen(missing, r)", fopen(P("missing"), "r"));
    RP("fopen(sf, a)", f = fopen(P("sf"), "a"));
    R("fwrite_unlocked(1x3)", fwrite_unlocked("end", 1, 3, f));
    R("fputs_unlocked", fputs_unlocked("\n", f) >= 0);
    R("fflush_unlocked", fflush_unlocked(f));
    R("fflush(NULL)", fflush(NULL));
    R("fclose", fclose(f));
    int fd = xopen("sf2", O_CREAT | O_RDWR | O_TRUNC);
    RP("fdopen", f = fdopen(fd, "w+"));
    R("vfprintf via __fprintf_chk", __fprintf_chk(f, 1, "%d-%d\n", 1, 2));
    R("rewind via fseek", fseek(f, 0, SEEK_SET));
    R("__fread_chk(1x4)", __fread_chk(buf, sizeof buf, 1, 4, f));
    R("fseek(0)", fseek(f, 0, SEEK_SET));
    RP("__fgets_chk", __fgets_chk(line, sizeof line, sizeof line, f));
    RP("freopen(sf3, w)", f = freopen(P("sf3"), "w", f));
    R("fputs", fputs("reopened\n", f) >= 0);
    R("fclose", fclose(f));
}

/* The v- forms, each through a variadic helper (as a program's own logging function calls them). */
static int my_vfprintf(FILE *f, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int r = vfprintf(f, fmt, ap);
    va_end(ap);
    return r;
}

static int my_vprintf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int r = vprintf(fmt, ap);
    va_end(ap);
    return r;
}

static int my_vfprintf_chk(FILE *f, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int r = __vfprintf_chk(f, 1, fmt, ap);
    va_end(ap);
    return r;
}

static int my_isoc99_vfscanf(FILE *f, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int r = __isoc99_vfscanf(f, fmt, ap);
    va_end(ap);
    return r;
}

/* The plain vfscanf symbol (what a program built for C89 calls), looked up by name. */
static int my_plain_vfscanf(FILE *f, const char *fmt, ...)
{
    int (*fn)(FILE *, const char *, va_list) = (int (*)(FILE *, const char *, va_list))dlsym(RTLD_DEFAULT, "vfscanf");
    va_list ap;
    va_start(ap, fmt);
    int r = fn(f, fmt, ap);
    va_end(ap);
    return r;
}

/* stdio calls the stdio case leaves out: a character, a line, a v-form at a time; freopen64. */
static void c_stdio_more(void)
{
    FILE *f;
    RP("fopen(sm0, w)", f = fopen(P("sm0"), "w"));
    RP("freopen64(sm, w+)", f = freopen64(P("sm"), "w+", f));
    R("vfprintf", my_vfprintf(f, "%d\n", 12345));                 /* 6 bytes */
    R("__vfprintf_chk", my_vfprintf_chk(f, "%s\n", "chk"));      /* 4 */
    R("fputc", fputc('a', f));                                    /* 1 */
    R("putc", putc('b', f));                                      /* 1 */
    R("fputs", fputs("\n7 8 9\nline2\nrest;tail\n", f) >= 0);     /* 23 */
    R("fseek(0)", fseek(f, 0, SEEK_SET));
    int n1 = 0, n2 = 0, n3 = 0;
    char word[16];
    R("__isoc99_fscanf", __isoc99_fscanf(f, "%d", &n1));         /* "12345": 5 bytes */
    R("__isoc99_vfscanf", my_isoc99_vfscanf(f, "%15s", word));   /* "\nchk": 4 */
    say("  scanned %d %s\n", n1, word);
    R("fgetc", fgetc(f));                                         /* '\n' */
    R("getc", getc(f));                                           /* 'a' */
    R("fgetc", fgetc(f));                                         /* 'b' */
    R("vfscanf", my_plain_vfscanf(f, "%d %d %d", &n1, &n2, &n3)); /* "\n7 8 9": 6 */
    say("  scanned %d %d %d\n", n1, n2, n3);
    R("fgetc", fgetc(f));                                         /* '\n' */
    char *line = NULL;
    size_t cap = 0;
    R("getline", getline(&line, &cap, f));                        /* "line2\n": 6 */
    R("getdelim(;)", getdelim(&line, &cap, ';', f));              /* "rest;": 5 */
    R("getline", getline(&line, &cap, f));                        /* "tail\n": 5 */
    R("getline at EOF", getline(&line, &cap, f));                 /* -1, a 0-byte read */
    R("fgetc at EOF", fgetc(f));                                  /* EOF, a 0-byte read */
    free(line);
    R("fclose", fclose(f));

    /* stdin and stdout redirected to files by the case: getchar, putchar and vprintf reach them. */
    int in = xopen("sm", O_RDONLY);
    int outfd = xopen("smo", O_CREAT | O_WRONLY | O_TRUNC);
    int saved_in = (int)syscall(SYS_dup, 0), saved_out = (int)syscall(SYS_dup, 1);
    syscall(SYS_dup2, in, 0);
    syscall(SYS_dup2, outfd, 1);
    syscall(SYS_close, in);
    syscall(SYS_close, outfd);
    int c1 = getchar(), c2 = getchar();
    int p1 = putchar('X');
    int p2 = my_vprintf("v%d\n", 5);
    int fl = fflush(stdout);
    syscall(SYS_dup2, saved_in, 0);
    syscall(SYS_dup2, saved_out, 1);
    syscall(SYS_close, saved_in);
    syscall(SYS_close, saved_out);
    say("getchar = %d\ngetchar = %d\nputchar = %d\nvprintf = %d\nfflush = %d\n", c1, c2, p1, p2, fl);
}

/* fcntl64's dup forms (glibc >= 2.28 exports fcntl64; fcntl is the same call), and the 64-bit pre-2.33
 * stat entry points. */
static void c_fd64(void)
{
    int fd, d1, d2;
    R("open(f64)", fd = open(P("f64"), O_CREAT | O_RDWR | O_TRUNC, 0644));
    R("write(3)", write(fd, "abc", 3));
    R("fcntl64(F_DUPFD)", d1 = fcntl64(fd, F_DUPFD, 10));
    R("fcntl64(F_DUPFD_CLOEXEC)", d2 = fcntl64(fd, F_DUPFD_CLOEXEC, 20));
    R("fcntl64(F_GETFL) & O_ACCMODE", fcntl64(fd, F_GETFL) & O_ACCMODE);
    R("fcntl64(-1, F_DUPFD)", fcntl64(-1, F_DUPFD, 0));
    R("write(d1, 2)", write(d1, "de", 2));
    R("close(d1)", close(d1));
    R("close(d2)", close(d2));
#if defined(__x86_64__)
    struct stat64 o;
    R("__xstat64(f64)", old_xstat64(1, P("f64"), &o));
    say("  size %ld\n", (long)o.st_size);
    R("__lxstat64(f64)", old_lxstat64(1, P("f64"), &o));
    R("__fxstat64(f64)", old_fxstat64(1, fd, &o));
    R("__fxstatat64(f64)", old_fxstatat64(1, AT_FDCWD, P("f64"), &o, 0));
    R("__xstat64(missing)", old_xstat64(1, P("missing"), &o));
#endif
    R("close(f64)", close(fd));
}

/* Buffers not aligned to 8 bytes, and an O_DIRECT open (which a file system may refuse: EINVAL). */
static char abuf[8192] __attribute__((aligned(4096)));

static void c_align(void)
{
    int fd;
    R("open(al)", fd = open(P("al"), O_CREAT | O_RDWR | O_TRUNC, 0644));
    memset(abuf, 'z', sizeof abuf);
    R("write(aligned 8)", write(fd, abuf, 8));
    R("write(abuf+1, 8)", write(fd, abuf + 1, 8));
    R("pwrite(abuf+3, 4 @0)", pwrite(fd, abuf + 3, 4, 0));
    R("pread(abuf+8, 4 @0)", pread(fd, abuf + 8, 4, 0));
    R("pread(abuf+5, 4 @4)", pread(fd, abuf + 5, 4, 4));
    R("close(al)", close(fd));
    R("open(dio, O_DIRECT)", fd = open(P("dio"), O_CREAT | O_RDWR | O_TRUNC | O_DIRECT, 0644));
    if (fd >= 0) {
        R("pwrite(4096 @0)", pwrite(fd, abuf, 4096, 0));
        R("pread(4096 @0)", pread(fd, abuf + 4096, 4096, 0));
        R("close(dio)", close(fd));
    }
}

/* stdout redirected to a file by the case itself: puts and printf reach it. */
static void c_stdout(void)
{
    int fd = xopen("so", O_CREAT | O_WRONLY | O_TRUNC);
    int saved = (int)syscall(SYS_dup, 1);
    syscall(SYS_dup2, fd, 1);
    syscall(SYS_close, fd);
    int r1 = puts("puts line");
    int r2 = printf("printf %d\n", 7);
    int r3 = __printf_chk(1, "chk %s\n", "x");
    int r4 = fflush(stdout);
    syscall(SYS_dup2, saved, 1);
    syscall(SYS_close, saved);
    say("puts >= 0 = %d\nprintf = %d\n__printf_chk = %d\nfflush = %d\n", r1 >= 0, r2, r3, r4);
}

/* ---- processes ---- */

static void child_file(const char *name, const char *text)
{
    int fd = open(P(name), O_CREAT | O_WRONLY | O_TRUNC, 0644);
    write(fd, text, strlen(text));
    close(fd);
}

static int wait_child(pid_t pid)
{
    int st = 0;
    if (waitpid(pid, &st, 0) != pid)
        return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static void c_fork(void)
{
    pid_t pid = fork();
    if (pid == 0) {
        child_file("forked", "child\n");
        _exit(3);
    }
    say("fork > 0 = %d\n", pid > 0);
    say("child status = %d\n", wait_child(pid));
    child_file("parent", "parent\n");
}

/* The exec target: profile_calls DIR write NAME TEXT */
static char *exec_argv(char **v, const char *name)
{
    v[0] = (char *)self;
    v[1] = (char *)dir;
    v[2] = "write";
    v[3] = (char *)name;
    v[4] = NULL;
    return v[0];
}

static void c_vfork_exec(void)
{
    char *v[5];
    exec_argv(v, "vforked");
    pid_t pid = vfork();
    if (pid == 0) {
        close(-1); /* a call in the child before exec (as posix_spawn-like code makes): not the parent's */
        execv(self, v);
        _exit(127);
    }
    say("vfork > 0 = %d\n", pid > 0);
    say("child status = %d\n", wait_child(pid));
    child_file("after_vfork", "parent\n");
}

static void c_spawn(void)
{
    char *v[5];
    exec_argv(v, "spawned");
    pid_t pid;
    R("posix_spawn", posix_spawn(&pid, self, NULL, NULL, v, environ));
    say("child status = %d\n", wait_child(pid));
    exec_argv(v, "spawnedp");
    R("posix_spawnp", posix_spawnp(&pid, self, NULL, NULL, v, environ));
    say("child status = %d\n", wait_child(pid));
    R("posix_spawn(missing)", posix_spawn(&pid, P("missing"), NULL, NULL, v, environ));
    say("child status = %d\n", wait_child(pid));
}

static int clone_fn(void *arg)
{
    child_file((const char *)arg, "cloned\n");
    return 5;
}

static void c_clone(void)
{
    size_t sz = 1 << 20;
    char *stack = mmap(NULL, sz, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    pid_t pid = clone(clone_fn, stack + sz, SIGCHLD, "cloned");
    say("clone > 0 = %d\n", pid > 0);
    say("child status = %d\n", wait_child(pid));
    munmap(stack, sz);
}

/* The exec family, each in a forked child; every new image writes a file. */
static void c_exec(void)
{
    static const char *names[] = { "execve", "execv", "execvp", "execvpe", "execl", "execlp", "execle", "fexecve",
                                   "execveat" };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        char *v[5];
        exec_argv(v, names[i]);
        flush_report();
        pid_t pid = fork();
        if (pid == 0) {
            switch (i) {
            case 0: execve(self, v, environ); break;
            case 1: execv(self, v); break;
            case 2: execvp(self, v); break;
            case 3: execvpe(self, v, environ); break;
            case 4: execl(self, v[0], v[1], v[2], v[3], (char *)NULL); break;
            case 5: execlp(self, v[0], v[1], v[2], v[3], (char *)NULL); break;
            case 6: execle(self, v[0], v[1], v[2], v[3], (char *)NULL, environ); break;
            case 7: {
                int fd = (int)syscall(SYS_openat, AT_FDCWD, self, O_RDONLY, 0);
                fexecve(fd, v, environ);
                break;
            }
            case 8: execveat(AT_FDCWD, self, v, environ, 0); break;
            }
            _exit(126);
        }
        say("%s: child status = %d\n", names[i], wait_child(pid));
    }
    /* A failed exec: the process goes on, and its log with it. */
    char *v[5];
    exec_argv(v, "never");
    R("execv(missing)", execv(P("missing"), v));
    R("execvp(missing)", execvp("iolens-no-such-program", v));
    child_file("after_failed_exec", "still here\n");
}

/* An exec that succeeds, in this process: its log ends with flag 4, the new image's links to it. */
static void c_exec_self(void)
{
    char *v[5];
    exec_argv(v, "exec_self");
    child_file("before_exec", "before\n");
    flush_report();
    execv(self, v);
    say("exec failed\n");
}

static void c_exit_status(void)
{
    child_file("exit", "x");
    flush_report();
    exit(7);
}

static void c_underscore_exit(void)
{
    child_file("uexit", "x");
    flush_report();
    _exit(9);
}

static void c_underscore_Exit(void)
{
    child_file("uExit", "x");
    flush_report();
    _Exit(11);
}

static void c_return_status(void)
{
    child_file("ret", "x");
}

static void c_killed_by_signal(void)
{
    child_file("sig", "x");
    flush_report();
    kill(getpid(), SIGTERM);
    say("not reached\n");
}

static void no_core(void)
{
    struct rlimit rl = { 0, 0 };
    setrlimit(RLIMIT_CORE, &rl);
}

static void c_abort(void)
{
    no_core();
    child_file("abort", "x");
    flush_report();
    abort();
}

static void c_segv(void)
{
    child_file("segv", "x");
    flush_report();
    no_core(); /* the test must not leave core files behind */
    volatile uintptr_t bad = 8;
    *(volatile int *)bad = 1;
}

static void on_usr1(int s)
{
    (void)s;
}

/* What the program sees of its own signal dispositions, and that its handlers run. */
static void c_signals(void)
{
    struct sigaction sa, old;
    static const int sigs[] = { SIGTERM, SIGINT, SIGHUP, SIGUSR1, SIGPIPE, SIGSEGV, SIGCHLD, SIGWINCH };
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
        R("sigaction(query)", sigaction(sigs[i], NULL, &old));
        say("  sig %d: handler %s flags %#x\n", sigs[i],
            old.sa_handler == SIG_DFL ? "DFL" : old.sa_handler == SIG_IGN ? "IGN" : "fn", (unsigned)old.sa_flags);
    }
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_usr1;
    sa.sa_flags = SA_RESTART;
    R("sigaction(USR1, handler)", sigaction(SIGUSR1, &sa, &old));
    say("  old: %s\n", old.sa_handler == SIG_DFL ? "DFL" : "other");
    R("raise(USR1)", raise(SIGUSR1));
    R("sigaction(USR1, query)", sigaction(SIGUSR1, NULL, &old));
    say("  now: %s flags %#x\n", old.sa_handler == on_usr1 ? "on_usr1" : "other", (unsigned)old.sa_flags);
    sa.sa_handler = SIG_DFL;
    sa.sa_flags = SA_NODEFER;
    R("sigaction(USR1, DFL|NODEFER)", sigaction(SIGUSR1, &sa, &old));
    R("sigaction(USR1, query)", sigaction(SIGUSR1, NULL, &old));
    say("  now: %s flags %#x\n", old.sa_handler == SIG_DFL ? "DFL" : "other", (unsigned)old.sa_flags);
    say("signal(PIPE, IGN) was DFL = %d\n", signal(SIGPIPE, SIG_IGN) == SIG_DFL);
    say("signal(PIPE, DFL) was IGN = %d\n", signal(SIGPIPE, SIG_DFL) == SIG_IGN);
    say("signal(PIPE, DFL) was DFL = %d\n", signal(SIGPIPE, SIG_DFL) == SIG_DFL);
    say("signal(INT, handler) was DFL = %d\n", signal(SIGINT, on_usr1) == SIG_DFL);
    say("signal(INT, DFL) was handler = %d\n", signal(SIGINT, SIG_DFL) == on_usr1);
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
    say("sigset(HUP, IGN) was DFL = %d\n", sigset(SIGHUP, SIG_IGN) == SIG_DFL);
#pragma GCC diagnostic pop
    say("sysv_signal(HUP, DFL) was IGN = %d\n", sysv_signal(SIGHUP, SIG_DFL) == SIG_IGN);
    R("sigaction(HUP, query)", sigaction(SIGHUP, NULL, &old));
    say("  now: %s flags %#x\n", old.sa_handler == SIG_DFL ? "DFL" : "other", (unsigned)old.sa_flags);
    R("sigaction(SIGKILL, handler)", sigaction(SIGKILL, &sa, NULL));
    R("sigaction(0)", sigaction(0, NULL, &old));
    R("sigaction(65)", sigaction(65, NULL, &old));
    /* A write to a pipe whose reader is gone, SIGPIPE ignored: EPIPE, as without the runtime. */
    int p[2];
    R("pipe", pipe(p));
    close(p[0]);
    signal(SIGPIPE, SIG_IGN);
    R("write(broken pipe)", write(p[1], "x", 1));
    close(p[1]);
}

/* A shell pipeline under the runtime: every process logs. */
static void c_pipeline(void)
{
    child_file("pin", "0123456789\n");
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "cat '%s' | wc -c > '%s'", P("pin"), P("pout"));
    flush_report();
    int st = system(cmd);
    say("system = %d\n", st);
}

/* A failing read on an empty pipe as each new thread's first call (the runtime makes the thread's record then,
 * growing its log now and then), with fallocate failing as on a file system without it (seccomp): the
 * runtime's zero-filling fallback works, and every read must still fail with EAGAIN, not EOPNOTSUPP. */
static int slow_pipe;

static void *slow_reader(void *arg)
{
    char c;
    errno = 0;
    long r = read(slow_pipe, &c, 1);
    *(int *)arg = r == -1 ? errno : -1;
    return NULL;
}

static void c_errno_slow_path(void)
{
    struct sock_filter filter[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_fallocate, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EOPNOTSUPP),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog prog = { sizeof filter / sizeof filter[0], filter };
    R("prctl(NO_NEW_PRIVS)", prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0));
    R("seccomp(fallocate: EOPNOTSUPP)", syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog));
    int p[2];
    R("pipe2(O_NONBLOCK)", pipe2(p, O_NONBLOCK));
    slow_pipe = p[0];
    /* 1000 threads: a process's thread records fill a chunk every 240 threads, and a new chunk grows the log */
    int eagain = 0, other = 0, last_other = 0;
    for (int i = 0; i < 1000; i++) {
        pthread_t th;
        int e = 0;
        if (pthread_create(&th, NULL, slow_reader, &e) != 0)
            break;
        pthread_join(th, NULL);
        if (e == EAGAIN)
            eagain++;
        else
            other++, last_other = e;
    }
    say("reads failing with EAGAIN: %d, otherwise: %d (last errno %s)\n", eagain, other,
        last_other > 0 ? strerrorname_np(last_other) : "-");
    close(p[0]);
    close(p[1]);
}

/* Not a test case: the image an exec case starts. */
static void c_write_target(const char *name)
{
    child_file(name, name);
}

struct tcase {
    const char *name;
    void (*fn)(void);
};

static const struct tcase cases[] = {
    { "open", c_open },
    { "read_write", c_read_write },
    { "pread_pwrite", c_pread_pwrite },
    { "vector", c_vector },
    { "sync", c_sync },
    { "stat", c_stat },
    { "access", c_access },
    { "namespace", c_namespace },
    { "dir", c_dir },
    { "mmap", c_mmap },
    { "mmap_many", c_mmap_many },
    { "copy", c_copy },
    { "dup", c_dup },
    { "stdio", c_stdio },
    { "stdout", c_stdout },
    { "stdio_more", c_stdio_more },
    { "fd64", c_fd64 },
    { "align", c_align },
    { "fork", c_fork },
    { "vfork_exec", c_vfork_exec },
    { "spawn", c_spawn },
    { "clone", c_clone },
    { "exec", c_exec },
    { "exec_self", c_exec_self },
    { "exit_status", c_exit_status },
    { "underscore_exit", c_underscore_exit },
    { "underscore_Exit", c_underscore_Exit },
    { "return_status", c_return_status },
    { "killed_by_signal", c_killed_by_signal },
    { "abort", c_abort },
    { "segv", c_segv },
    { "signals", c_signals },
    { "pipeline", c_pipeline },
    { "errno_slow_path", c_errno_slow_path },
};

int main(int argc, char **argv)
{
    self = argv[0];
    if (argc == 2 && strcmp(argv[1], "--list") == 0) {
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
            say("%s\n", cases[i].name);
        flush_report();
        return 0;
    }
    if (argc < 3) {
        say("usage: profile_calls DIR CASE | --list\n");
        flush_report();
        return 2;
    }
    dir = argv[1];
    if (strcmp(argv[2], "write") == 0 && argc == 4) {
        c_write_target(argv[3]);
        return 0;
    }
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        if (strcmp(argv[2], cases[i].name) == 0) {
            cases[i].fn();
            flush_report();
            return strcmp(argv[2], "return_status") == 0 ? 4 : 0;
        }
    say("unknown case %s\n", argv[2]);
    flush_report();
    return 2;
}
