/* profile_fill — a program meeting a full file system, for the runtime's ENOSPC tests
 * (tests/faults/test_profile_enospc.py). It prints what each call gave, run-length encoded ("write 65536 x41"),
 * so that runs with and without the runtime can be compared: the same calls must give the same results.
 *
 *   profile_fill DIR fill [N]  writes 64 KiB blocks to DIR/fill until a write fails, and three more; fsync,
 *                              close; then creates N (3000) new files in DIR, each written 100 bytes, and
 *                              stats them; prints the bytes it got in on its last line ("total N")
 *   profile_fill DIR files N   creates N files in DIR, writes 100 bytes to each, closes, stats them
 *
 * Paths are relative to DIR, and nothing that differs between runs is printed but the total of `fill`. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "report.h"

/* A run-length encoded list of one call's results: a line per run of equal (result, errno). Each kind of
 * call has its own list, so that calls made in turn (open, write, close of one file after another) still
 * make one line each when they always give the same. */
struct rle {
    const char *what;
    long r;
    int e, count;
    size_t len;
    char text[8192];
};

static void rle_end(struct rle *l)
{
    if (l->count > 0 && l->len < sizeof l->text)
        l->len += (size_t)snprintf(l->text + l->len, sizeof l->text - l->len, "%s %ld errno=%s x%d\n", l->what,
                                   l->r, l->e == 0 ? "0" : strerrorname_np(l->e), l->count);
    l->count = 0;
}

static void rle_add(struct rle *l, long r, int e)
{
    if (l->count > 0 && r == l->r && e == l->e) {
        l->count++;
        return;
    }
    rle_end(l);
    l->r = r;
    l->e = e;
    l->count = 1;
}

static void rle_print(struct rle *l)
{
    rle_end(l);
    say("%.*s", (int)l->len, l->text);
}

static struct rle r_open = { .what = "open" }, r_write = { .what = "write(100)" }, r_close = { .what = "close" },
                  r_stat = { .what = "stat size" };
static struct rle r_fill = { .what = "open(fill)" }, r_full = { .what = "write(64k)" }, r_sync = { .what = "fsync(fill)" };

#define R(list, expr) \
    do { \
        errno = 0; \
        long r_ = (long)(expr); \
        rle_add(list, r_ < 0 ? -1 : r_, r_ < 0 ? errno : 0); \
    } while (0)

static void small_files(int n)
{
    static const char data[100] = "0123456789";
    for (int i = 0; i < n; i++) {
        char name[32];
        snprintf(name, sizeof name, "n%05d", i);
        errno = 0;
        int fd = open(P(name), O_CREAT | O_WRONLY | O_TRUNC, 0644);
        rle_add(&r_open, fd < 0 ? -1 : 0, fd < 0 ? errno : 0);
        if (fd < 0)
            continue;
        R(&r_write, write(fd, data, sizeof data));
        R(&r_close, close(fd));
    }
    for (int i = 0; i < n; i++) {
        char name[32];
        snprintf(name, sizeof name, "n%05d", i);
        struct stat st;
        errno = 0;
        int r = stat(P(name), &st);
        rle_add(&r_stat, r < 0 ? -1 : (long)st.st_size, r < 0 ? errno : 0);
    }
    rle_print(&r_open);
    rle_print(&r_write);
    rle_print(&r_close);
    rle_print(&r_stat);
}

static void fill(int files)
{
    static char block[65536];
    memset(block, 'x', sizeof block);
    int fd = open(P("fill"), O_CREAT | O_WRONLY | O_TRUNC, 0644);
    R(&r_fill, fd);
    long total = 0, after = 0;
    while (after < 4) {
        errno = 0;
        ssize_t r = write(fd, block, sizeof block);
        /* a write that got in part of the block (its size differs from run to run) is said as 1 */
        rle_add(&r_full, r == (ssize_t)sizeof block || r < 0 ? (long)r : 1, r < 0 ? errno : 0);
        if (r > 0)
            total += r;
        if (r != (ssize_t)sizeof block)
            after++;
    }
    R(&r_sync, fsync(fd));
    R(&r_close, close(fd));
    rle_print(&r_fill);
    rle_print(&r_full);
    rle_print(&r_sync);
    rle_print(&r_close);
    small_files(files);
    say("total %ld\n", total);
}

int main(int argc, char **argv)
{
    if (argc < 3)
        return 2;
    dir = argv[1];
    if (strcmp(argv[2], "fill") == 0)
        fill(argc > 3 ? atoi(argv[3]) : 3000);
    else if (strcmp(argv[2], "files") == 0 && argc > 3)
        small_files(atoi(argv[3]));
    else
        return 2;
    flush_report();
    return 0;
}
