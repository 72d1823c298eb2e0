/* profile_fds — what a program sees of its own descriptor table. Run with and without
 * LD_PRELOAD=libiolens-profile.so: the output must be the same (tests/test_profile_runtime.py), as the runtime's
 * own files must never take a descriptor the program can see.
 *
 *   profile_fds DIR probe        every descriptor that answers fcntl(F_GETFD) below 1024, the names in
 *                                /proc/self/fd, what fcntl/dup2/close/dup3 do on the numbers 3 and 512, the
 *                                number the first open() gets, and the soft RLIMIT_NOFILE
 *   profile_fds DIR nofile       opens /dev/null until EMFILE: the first number, how many, the errno
 *   profile_fds DIR close_range  close_range(3, ~0U, 0) (a daemon closing what it inherited), then closefrom(3),
 *                                then N files created, written and closed (enough for the log to grow)
 *   profile_fds DIR threads      4 threads stat 20000 new paths (the log grows) while the main thread opens
 *                                and closes /dev/null: run with RLIMIT_NOFILE 4, every open must give 3
 *
 * Paths are relative to DIR, and nothing that differs between runs is printed. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "report.h"

static void result(const char *what, long r, int e)
{
    say("%s = %ld errno=%s\n", what, r, e == 0 ? "0" : strerrorname_np(e));
}

#define R(what, expr) \
    do { \
        errno = 0; \
        long r_ = (long)(expr); \
        result(what, r_, errno); \
    } while (0)

static void open_fds(void)
{
    say("open:");
    for (int fd = 0; fd < 1024; fd++)
        if (fcntl(fd, F_GETFD) >= 0)
            say(" %d", fd);
    say("\n");
}

/* /proc/self/fd read with raw system calls (its own descriptor is the lowest free number, as it would be). */
static void proc_fds(void)
{
    int dfd = (int)syscall(SYS_openat, AT_FDCWD, "/proc/self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    say("/proc/self/fd (read through %d):", dfd);
    char buf[8192];
    int seen[1024] = { 0 };
    for (;;) {
        long n = syscall(SYS_getdents64, dfd, buf, sizeof buf);
        if (n <= 0)
            break;
        for (long at = 0; at < n;) {
            struct dirent64 *d = (struct dirent64 *)(buf + at);
            int fd = atoi(d->d_name);
            if (d->d_name[0] != '.' && fd >= 0 && fd < 1024)
                seen[fd] = 1;
            else if (d->d_name[0] != '.')
                say(" %s", d->d_name);
            at += d->d_reclen;
        }
    }
    for (int fd = 0; fd < 1024; fd++)
        if (seen[fd])
            say(" %d", fd);
    say("\n");
    syscall(SYS_close, dfd);
}

static void probe(void)
{
    struct rlimit rl;
    getrlimit(RLIMIT_NOFILE, &rl);
    say("RLIMIT_NOFILE soft %llu\n", (unsigned long long)rl.rlim_cur);
    open_fds();
    proc_fds();
    R("fcntl(512, F_GETFD)", fcntl(512, F_GETFD));
    R("fcntl(512, F_GETFL)", fcntl(512, F_GETFL));
    R("fcntl(512, F_DUPFD, 0)", fcntl(512, F_DUPFD, 0));
    R("fcntl(3, F_GETFD)", fcntl(3, F_GETFD));
    R("close(512)", close(512));
    R("close(3)", close(3));
    char path[64];
    R("readlink(/proc/self/fd/512)", readlink("/proc/self/fd/512", path, sizeof path));
    /* A descriptor of the program's own at 512 (dup2 succeeds only below the limit). */
    R("dup2(1, 512)", dup2(1, 512));
    R("fcntl(512, F_GETFD) after dup2", fcntl(512, F_GETFD));
    R("close(512) after dup2", close(512));
    R("fcntl(0, F_DUPFD, 3)", fcntl(0, F_DUPFD, 3));
    R("close(3) after F_DUPFD", close(3));
    R("first open", open(P("first"), O_CREAT | O_WRONLY, 0644));
    R("write(3)", write(3, "abcd", 4));
    R("second open", open(P("second"), O_CREAT | O_WRONLY, 0644));
    open_fds();
    proc_fds();
}

static void nofile(void)
{
    int first = -1, n = 0, e = 0;
    for (;;) {
        int fd = open("/dev/null", O_RDONLY);
        if (fd < 0) {
            e = errno;
            break;
        }
        if (first < 0)
            first = fd;
        n++;
    }
    say("first %d, opened %d, then errno=%s\n", first, n, strerrorname_np(e));
    /* Every number is taken: files the runtime must record are still recorded (and still fail to open). */
    R("open(new) at the limit", open(P("at_limit"), O_CREAT | O_WRONLY, 0644));
    R("close(first)", close(first));
    int fd = open(P("after"), O_CREAT | O_WRONLY, 0644);
    R("open(after) gets", fd);
    R("write(after)", write(fd, "12345678", 8));
}

static void close_range_case(int files)
{
    R("close_range(3, ~0U, 0)", syscall(SYS_close_range, 3u, ~0u, 0));
    R("close_range wrapper", close_range(3u, ~0u, 0));
    closefrom(3);
    say("closefrom(3)\n");
    open_fds();
    long total = 0;
    for (int i = 0; i < files; i++) {
        char name[64];
        snprintf(name, sizeof name, "f%05d", i);
        int fd = open(P(name), O_CREAT | O_WRONLY | O_TRUNC, 0644);
        if (fd != 3) {
            say("open %s gave %d\n", name, fd);
            return;
        }
        total += write(fd, "0123456789", 10);
        close(fd);
    }
    say("%d files, %ld bytes, each open gave 3\n", files, total);
}

/* ---- threads: the main thread's numbers stay the lowest free ones while other threads make the log grow ---- */

#define THREAD_FILES 5000
static volatile int running;

static void *stat_files(void *arg)
{
    long k = (long)arg;
    for (int i = 0; i < THREAD_FILES; i++) {
        char path[4096]; /* not P(): its buffers are not the thread's own */
        snprintf(path, sizeof path, "%s/t%ld_%05d", dir, k, i);
        struct stat st;
        stat(path, &st); /* a new path each time: records, and the log grows */
    }
    __atomic_fetch_sub(&running, 1, __ATOMIC_RELEASE);
    return NULL;
}

/* Run under a low RLIMIT_NOFILE (the test sets 4: only 3 is free): every open must give 3. */
static void threads_case(void)
{
    for (long k = 0; k < 4; k++)
        for (int i = 0; i < THREAD_FILES; i++) {
            char name[64];
            snprintf(name, sizeof name, "t%ld_%05d", k, i);
            int fd = (int)syscall(SYS_openat, AT_FDCWD, P(name), O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
            if (fd < 0) {
                say("cannot create %s\n", name);
                return;
            }
            syscall(SYS_close, fd);
        }
    pthread_t th[4];
    running = 4;
    for (long k = 0; k < 4; k++)
        pthread_create(&th[k], NULL, stat_files, (void *)k);
    long opens = 0;
    int bad = 3, e = 0;
    while (bad == 3 && __atomic_load_n(&running, __ATOMIC_ACQUIRE) > 0) {
        int fd = open("/dev/null", O_RDONLY);
        if (fd != 3) {
            bad = fd;
            e = errno;
        }
        if (fd >= 0)
            close(fd);
        opens++;
    }
    for (int k = 0; k < 4; k++)
        pthread_join(th[k], NULL);
    if (bad == 3)
        say("threads: every open gave 3\n");
    else
        say("threads: an open gave %d errno=%s\n", bad, e == 0 ? "0" : strerrorname_np(e));
    (void)opens;
}

int main(int argc, char **argv)
{
    if (argc < 3)
        return 2;
    dir = argv[1];
    const char *mode = argv[2];
    if (strcmp(mode, "probe") == 0)
        probe();
    else if (strcmp(mode, "nofile") == 0)
        nofile();
    else if (strcmp(mode, "close_range") == 0)
        close_range_case(argc > 3 ? atoi(argv[3]) : 3000);
    else if (strcmp(mode, "threads") == 0)
        threads_case();
    else
        return 2;
    flush_report();
    return 0;
}
