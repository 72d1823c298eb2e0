/* profile_bench — CPU time per call of one kind of call, to measure what the profiler runtime adds: run it
 * with and without LD_PRELOAD=libiolens-profile.so and subtract (bench/profile_overhead.py does, alternating).
 *
 *   profile_bench KIND DIR N     prints "KIND N cpu_ns_per_call user NS sys NS" (CPU time of the loop alone)
 *
 * KIND: pwrite, pread (4 bytes, within one page of a file in DIR), fwrite (4 bytes, buffered), meta (open a
 * new file + close + stat + unlink), devnull (write 4 bytes to /dev/null: an untracked descriptor), excluded
 * (stat of /dev/null: an excluded path).
 *
 *   profile_bench exit DIR N     creates N files in DIR (open, a 4-byte write, close: each one recorded), then
 *                                prints "exit N end_mono_ns NS": CLOCK_MONOTONIC as main returns. What the
 *                                caller sees from then to the process's end is the exit (the runtime's log
 *                                written and compressed); the caller removes the files. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static double user_ns, sys_ns;

static double cpu_ns(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    user_ns = ru.ru_utime.tv_sec * 1e9 + ru.ru_utime.tv_usec * 1e3;
    sys_ns = ru.ru_stime.tv_sec * 1e9 + ru.ru_stime.tv_usec * 1e3;
    return user_ns + sys_ns;
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: profile_bench KIND DIR N\n");
        return 2;
    }
    const char *kind = argv[1], *dir = argv[2];
    long n = atol(argv[3]);
    char path[4096];
    snprintf(path, sizeof path, "%s/bench.dat", dir);
    char buf[4] = { 1, 2, 3, 4 };
    int fd = -1;
    FILE *f = NULL;
    struct stat st;
    if (!strcmp(kind, "pwrite") || !strcmp(kind, "pread")) {
        fd = open(path, O_CREAT | O_RDWR | O_TRUNC, 0644);
        if (fd < 0 || pwrite(fd, path, 4096, 0) != 4096)
            return 1;
    } else if (!strcmp(kind, "fwrite")) {
        f = fopen(path, "w");
    } else if (!strcmp(kind, "devnull")) {
        fd = open("/dev/null", O_WRONLY);
    }
    long bad = 0;
    double t0 = cpu_ns(), u0 = user_ns, s0 = sys_ns;
    if (!strcmp(kind, "pwrite")) {
        for (long i = 0; i < n; i++)
            bad += pwrite(fd, buf, 4, (i & 1023) * 4) != 4;
    } else if (!strcmp(kind, "pread")) {
        for (long i = 0; i < n; i++)
            bad += pread(fd, buf, 4, (i & 1023) * 4) != 4;
    } else if (!strcmp(kind, "fwrite")) {
        for (long i = 0; i < n; i++)
            bad += fwrite(buf, 1, 4, f) != 4;
    } else if (!strcmp(kind, "meta")) {
        char name[4200];
        for (long i = 0; i < n; i++) {
            snprintf(name, sizeof name, "%s/m.%ld", dir, i);
            int m = open(name, O_CREAT | O_EXCL | O_WRONLY, 0644);
            bad += m < 0;
            close(m);
            bad += stat(name, &st) != 0;
            bad += unlink(name) != 0;
        }
    } else if (!strcmp(kind, "meta_same")) { /* the same four calls on one path, over and over */
        char name[4200];
        snprintf(name, sizeof name, "%s/same", dir);
        for (long i = 0; i < n; i++) {
            int m = open(name, O_CREAT | O_EXCL | O_WRONLY, 0644);
            bad += m < 0;
            close(m);
            bad += stat(name, &st) != 0;
            bad += unlink(name) != 0;
        }
    } else if (!strcmp(kind, "exit")) {
        char name[4200];
        for (long i = 0; i < n; i++) {
            snprintf(name, sizeof name, "%s/x.%ld", dir, i);
            int m = open(name, O_CREAT | O_WRONLY | O_TRUNC, 0644);
            bad += m < 0 || write(m, buf, 4) != 4;
            close(m);
        }
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        printf("exit %ld end_mono_ns %lld\n", n, (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec);
        fflush(stdout);
        return bad != 0;
    } else if (!strcmp(kind, "devnull")) {
        for (long i = 0; i < n; i++)
            bad += write(fd, buf, 4) != 4;
    } else if (!strcmp(kind, "excluded")) {
        for (long i = 0; i < n; i++)
            bad += stat("/dev/null", &st) != 0;
    } else {
        fprintf(stderr, "unknown kind %s\n", kind);
        return 2;
    }
    double t1 = cpu_ns(), u1 = user_ns, s1 = sys_ns;
    if (f != NULL)
        fclose(f);
    if (fd >= 0)
        close(fd);
    unlink(path);
    printf("%s %ld %.1f user %.1f sys %.1f\n", kind, n, (t1 - t0) / (double)n, (u1 - u0) / (double)n,
           (s1 - s0) / (double)n);
    return bad != 0;
}
