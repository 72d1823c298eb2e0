/* plain_loop.c — the "plain C loop" peer of the engine benchmarks: the least code that can move the same
 * bytes, so that whatever iolens costs above it is the framework's cost.
 *
 *   plain_loop write|read PATH XFER TOTAL [--direct]
 *
 * Does TOTAL/XFER pwrite (or pread) calls of XFER bytes at consecutive offsets from one page-aligned buffer,
 * with no fsync (as iolens without -e), and prints one JSON line:
 *   {"op", "bytes", "ops", "elapsed_s" (open to close), "xfer_s" (first to last transfer), "user_s", "sys_s"}
 * Sizes accept k/m/g (powers of 1024). Write creates or truncates PATH; read expects it to hold TOTAL bytes.
 * Exit status: 0 ok, 1 I/O error, 2 usage error.
 *
 * Build: gcc -O2 -o plain_loop plain_loop.c */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int parse_size(const char *s, uint64_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s)
        return -1;
    unsigned shift = 0;
    switch (*end) {
    case 'k': case 'K': shift = 10; end++; break;
    case 'm': case 'M': shift = 20; end++; break;
    case 'g': case 'G': shift = 30; end++; break;
    case 't': case 'T': shift = 40; end++; break;
    default: break;
    }
    if (*end != '\0' || (shift && v > (UINT64_MAX >> shift)))
        return -1;
    *out = (uint64_t)v << shift;
    return 0;
}

static int usage(void)
{
    fprintf(stderr, "usage: plain_loop write|read PATH XFER TOTAL [--direct]\n"
                    "  TOTAL must be a positive multiple of XFER; sizes accept k/m/g/t\n");
    return 2;
}

int main(int argc, char **argv)
{
    if (argc < 5 || argc > 6)
        return usage();
    int is_write;
    if (!strcmp(argv[1], "write"))
        is_write = 1;
    else if (!strcmp(argv[1], "read"))
        is_write = 0;
    else
        return usage();
    const char *path = argv[2];
    uint64_t xfer, total;
    if (parse_size(argv[3], &xfer) || parse_size(argv[4], &total) || xfer == 0 || total == 0 || total % xfer)
        return usage();
    int direct = 0;
    if (argc == 6) {
        if (strcmp(argv[5], "--direct"))
            return usage();
        direct = 1;
    }

    void *buf;
    if (posix_memalign(&buf, 4096, (size_t)xfer)) {
        fprintf(stderr, "plain_loop: cannot allocate %" PRIu64 " bytes\n", xfer);
        return 1;
    }
    /* Touch every page before timing, so page faults of the buffer are not counted as I/O. */
    memset(buf, 0x5a, (size_t)xfer);

    int flags = is_write ? O_WRONLY | O_CREAT | O_TRUNC : O_RDONLY;
    if (direct)
        flags |= O_DIRECT;

    double t_open = now_s();
    int fd = open(path, flags, 0644);
    if (fd < 0) {
        fprintf(stderr, "plain_loop: open %s: %s\n", path, strerror(errno));
        return 1;
    }
    double t_start = now_s();
    uint64_t ops = 0;
    for (uint64_t off = 0; off < total; off += xfer) {
        ssize_t n = is_write ? pwrite(fd, buf, (size_t)xfer, (off_t)off) : pread(fd, buf, (size_t)xfer, (off_t)off);
        if (n != (ssize_t)xfer) {
            if (n < 0)
                fprintf(stderr, "plain_loop: %s %s at %" PRIu64 ": %s\n", argv[1], path, off, strerror(errno));
            else
                fprintf(stderr, "plain_loop: %s %s at %" PRIu64 ": short transfer of %zd bytes\n", argv[1], path,
                        off, n);
            close(fd);
            return 1;
        }
        ops++;
    }
    double t_end = now_s();
    if (close(fd) != 0) {
        fprintf(stderr, "plain_loop: close %s: %s\n", path, strerror(errno));
        return 1;
    }
    double t_close = now_s();
    free(buf);

    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("{\"op\": \"%s\", \"bytes\": %" PRIu64 ", \"ops\": %" PRIu64 ", \"elapsed_s\": %.9f, \"xfer_s\": %.9f, "
           "\"user_s\": %.6f, \"sys_s\": %.6f}\n",
           argv[1], total, ops, t_close - t_open, t_end - t_start,
           (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6,
           (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6);
    return 0;
}
