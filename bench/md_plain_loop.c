/* md_plain_loop.c — the "plain C loop" peer of the mdtest benchmarks: the least code that makes the same
 * system calls as mdtest's file phases (-F, one rank, one directory), so that whatever iolens mdtest costs
 * above it is the framework's cost.
 *
 *   md_plain_loop DIR N [W [E]]
 *
 * Makes DIR (if missing), DIR/test-dir.0-0 and DIR/test-dir.0-0/mdtest_tree.0, then runs four phases on the
 * N files DIR/test-dir.0-0/mdtest_tree.0/file.mdtest.0.NUM (NUM = 0 .. N-1), each timed from its first to its
 * last call:
 *   file-create  open(O_CREAT|O_WRONLY, 0644) [+ write of W bytes] + close
 *   file-stat    stat
 *   file-read    open(O_RDONLY) [+ read of E bytes] + close
 *   file-remove  unlink
 * and removes the directories it made. W and E default to 0 (no write, no read). The names are built by hand
 * (a fixed prefix and the number), as iolens does, so that snprintf is not counted against the loop.
 * Prints one JSON line:
 *   {"items", "write_bytes", "read_bytes", "phases": {"file-create": s, "file-stat": s, "file-read": s,
 *    "file-remove": s}, "user_s", "sys_s"}
 * Exit status: 0 ok, 1 I/O error, 2 usage error.
 *
 * Build: gcc -O2 -Wall -o md_plain_loop md_plain_loop.c */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define NPHASES 4
static const char *const phase_names[NPHASES] = {"file-create", "file-stat", "file-read", "file-remove"};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int parse_u64(const char *s, uint64_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s || *end != '\0' || s[0] == '-')
        return -1;
    *out = v;
    return 0;
}

/* Writes v in decimal at p, NUL-terminated; returns the number of digits. */
static int put_u64(char *p, uint64_t v)
{
    char tmp[24];
    int n = 0;
    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    for (int i = 0; i < n; i++)
        p[i] = tmp[n - 1 - i];
    p[n] = '\0';
    return n;
}

static int fail(const char *what, const char *path)
{
    fprintf(stderr, "md_plain_loop: %s %s: %s\n", what, path, strerror(errno));
    return 1;
}

/* Makes path unless it exists; *made says whether this run made it (and so must remove it). */
static int make_dir(const char *path, int *made)
{
    *made = 0;
    if (mkdir(path, 0755) == 0) {
        *made = 1;
        return 0;
    }
    return errno == EEXIST ? 0 : fail("mkdir", path);
}

static int run_phase(int ph, char *name, int at, uint64_t n, void *buf, uint64_t w, uint64_t e)
{
    for (uint64_t i = 0; i < n; i++) {
        put_u64(name + at, i);
        switch (ph) {
        case 0: {
            int fd = open(name, O_CREAT | O_WRONLY, 0644);
            if (fd < 0)
                return fail("open", name);
            if (w && write(fd, buf, w) != (ssize_t)w) {
                close(fd);
                return fail("write", name);
            }
            if (close(fd) != 0)
                return fail("close", name);
            break;
        }
        case 1: {
            struct stat st;
            if (stat(name, &st) != 0)
                return fail("stat", name);
            break;
        }
        case 2: {
            int fd = open(name, O_RDONLY);
            if (fd < 0)
                return fail("open", name);
            if (e && read(fd, buf, e) != (ssize_t)e) {
                close(fd);
                return fail("read", name);
            }
            if (close(fd) != 0)
                return fail("close", name);
            break;
        }
        default:
            if (unlink(name) != 0)
                return fail("unlink", name);
        }
    }
    return 0;
}

int main(int argc, char **argv)
{
    uint64_t n, w = 0, e = 0;
    if (argc < 3 || argc > 5 || parse_u64(argv[2], &n) || (argc > 3 && parse_u64(argv[3], &w)) ||
        (argc > 4 && parse_u64(argv[4], &e)) || n == 0) {
        fprintf(stderr, "usage: md_plain_loop DIR N [WRITE_BYTES [READ_BYTES]]\n");
        return 2;
    }
    if (e > w) {
        fprintf(stderr, "md_plain_loop: READ_BYTES (%" PRIu64 ") exceeds WRITE_BYTES (%" PRIu64 ")\n", e, w);
        return 2;
    }
    size_t dlen = strlen(argv[1]);
    while (dlen > 1 && argv[1][dlen - 1] == '/')
        dlen--;
    char *base = malloc(dlen + 1), *testdir = malloc(dlen + 32), *name = malloc(dlen + 128);
    uint64_t blen = (w > e ? w : e) + 4096;
    void *buf = NULL;
    if (!base || !testdir || !name || posix_memalign(&buf, 4096, blen)) {
        fprintf(stderr, "md_plain_loop: out of memory\n");
        return 1;
    }
    memset(buf, 0xa5, blen);
    memcpy(base, argv[1], dlen);
    base[dlen] = '\0';
    snprintf(testdir, dlen + 32, "%s/test-dir.0-0", base);
    int at = snprintf(name, dlen + 128, "%s/mdtest_tree.0", testdir);
    int made[3];
    if (make_dir(base, &made[0]) || make_dir(testdir, &made[1]) || make_dir(name, &made[2]))
        return 1;
    at += snprintf(name + at, dlen + 128 - (size_t)at, "/file.mdtest.0.");

    double secs[NPHASES];
    int rc = 0;
    for (int ph = 0; ph < NPHASES && !rc; ph++) {
        double t0 = now_s();
        rc = run_phase(ph, name, at, n, buf, w, e);
        secs[ph] = now_s() - t0;
    }

    name[at - (int)strlen("/file.mdtest.0.")] = '\0';
    if (made[2] && rmdir(name) != 0 && !rc)
        rc = fail("rmdir", name);
    if (made[1] && rmdir(testdir) != 0 && !rc)
        rc = fail("rmdir", testdir);
    if (made[0] && rmdir(base) != 0 && !rc)
        rc = fail("rmdir", base);
    if (rc)
        return rc;

    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("{\"items\": %" PRIu64 ", \"write_bytes\": %" PRIu64 ", \"read_bytes\": %" PRIu64 ", \"phases\": {", n,
           w, e);
    for (int ph = 0; ph < NPHASES; ph++)
        printf("%s\"%s\": %.9f", ph ? ", " : "", phase_names[ph], secs[ph]);
    printf("}, \"user_s\": %.6f, \"sys_s\": %.6f}\n", (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6,
           (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6);
    free(buf);
    free(name);
    free(testdir);
    free(base);
    return 0;
}
