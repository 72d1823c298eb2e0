/* test_backend.c — the posix and null backends on real file systems (a disk under /tmp and tmpfs under
 * /dev/shm): data written comes back byte for byte through a queue of 4; a read past EOF ends short without
 * error; eviction says when there is no cache to drop; O_DIRECT works with aligned buffers; failures name
 * the path and the call; the null backend never touches the file system; mmap writes through its mapping. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#include "backend/backend.h"
#include "check.h"

#define QD 4
#define XFER ((size_t)64 * 1024)

static unsigned char pattern(uint64_t offset)
{
    return (unsigned char)(offset * 2654435761u >> 13);
}

static void fill(unsigned char *buf, size_t len, uint64_t offset)
{
    for (size_t i = 0; i < len; i++)
        buf[i] = pattern(offset + i);
}

static size_t count_wrong(const unsigned char *buf, size_t len, uint64_t offset)
{
    size_t bad = 0;
    for (size_t i = 0; i < len; i++)
        bad += buf[i] != pattern(offset + i);
    return bad;
}

static int is_tmpfs(const char *dir)
{
    struct statfs s;
    return statfs(dir, &s) == 0 && (s.f_type == TMPFS_MAGIC || s.f_type == RAMFS_MAGIC);
}

/* Submits n requests (at most QD at a time) and reaps them all; returns how many completed. */
static int run_reqs(const struct iol_backend *be, struct iol_bctx *ctx, struct iol_req *reqs, int n)
{
    struct iol_req *ptrs[64], *done[64];
    struct iol_err err = { 0 };
    int completed = 0, next = 0;
    for (int i = 0; i < n; i++)
        ptrs[i] = &reqs[i];
    while (completed < n) {
        int want = n - next < QD ? n - next : QD;
        int got = want > 0 ? be->submit(ctx, ptrs + next, want, &err) : 0;
        CHECK(got == want, "submit %d accepted %d: %s", want, got, err.msg);
        if (got < 0)
            return completed;
        next += got;
        int r = be->reap(ctx, done, got, QD, &err);
        CHECK(r >= got, "reap gave %d, wanted at least %d: %s", r, got, err.msg);
        if (r <= 0)
            return completed;
        completed += r;
    }
    return completed;
}

static void test_posix_round_trip(const char *base)
{
    const struct iol_backend *be = &iol_backend_posix;
    char dir[256], path[300];
    snprintf(dir, sizeof dir, "%s/iolens-test-backend-XXXXXX", base);
    if (mkdtemp(dir) == NULL) {
        printf("skip %s: %s\n", base, strerror(errno));
        return;
    }
    snprintf(path, sizeof path, "%s/data", dir);
    struct iol_err err = { 0 };
    struct iol_bctx *ctx = NULL;
    CHECK(be->ctx_open(&ctx, QD, &err) == 0, "ctx_open: %s", err.msg);

    /* Write 6 transfers (more than the queue holds) through the queue. */
    const int n = 6;
    struct iol_file f;
    CHECK(be->open(ctx, &f, path, IOL_O_WRITE | IOL_O_CREATE | IOL_O_EXCL, 0600, &err) == 0, "open: %s", err.msg);
    unsigned char *buf = malloc(XFER * (size_t)n);
    struct iol_req reqs[8];
    memset(reqs, 0, sizeof reqs);
    for (int i = 0; i < n; i++) {
        /* Out of order on purpose: offsets come from the request, not from a file position. */
        uint64_t off = (uint64_t)((i * 5) % n) * XFER;
        fill(buf + (size_t)i * XFER, XFER, off);
        reqs[i] = (struct iol_req){ .op = IOL_IO_WRITE, .file = &f, .buf = buf + (size_t)i * XFER, .len = XFER,
                                    .offset = off, .tag = (uint64_t)i };
    }
    CHECK(run_reqs(be, ctx, reqs, n) == n, "writes completed");
    for (int i = 0; i < n; i++) {
        CHECK(reqs[i].result == (int64_t)XFER && reqs[i].error == 0, "write %d: result %lld error %d", i,
              (long long)reqs[i].result, reqs[i].error);
        CHECK(reqs[i].t_submit_ns > 0 && reqs[i].t_done_ns >= reqs[i].t_submit_ns, "write %d times", i);
        CHECK(reqs[i].tag == (uint64_t)i, "tag kept");
    }

    /* The queue holds QD: a fifth request is refused until something is reaped. */
    struct iol_req extra[QD + 1];
    struct iol_req *eptr[QD + 1], *done[QD + 1];
    for (int i = 0; i <= QD; i++) {
        extra[i] = (struct iol_req){ .op = IOL_IO_WRITE, .file = &f, .buf = buf, .len = 16,
                                     .offset = (uint64_t)n * XFER };
        fill(buf, 16, (uint64_t)n * XFER);
        eptr[i] = &extra[i];
    }
    CHECK(be->submit(ctx, eptr, QD + 1, &err) == QD, "a full queue takes %d", QD);
    CHECK(be->submit(ctx, eptr + QD, 1, &err) == 0, "a full queue takes no more");
    CHECK(be->reap(ctx, done, QD + 1, QD + 1, &err) == -1, "waiting for more than is in flight is an error");
    memset(&err, 0, sizeof err);
    CHECK(be->reap(ctx, done, 1, 2, &err) == 2 && done[0] == &extra[0] && done[1] == &extra[1], "reap 2 in order");
    CHECK(be->reap(ctx, done, 0, QD, &err) == 2 && done[0] == &extra[2], "reap the rest");
    CHECK(be->reap(ctx, done, 0, QD, &err) == 0, "nothing left");

    CHECK(be->fsync(ctx, &f, &err) == 0, "fsync: %s", err.msg);
    CHECK(be->close(ctx, &f, &err) == 0, "close: %s", err.msg);

    uint64_t size = (uint64_t)n * XFER + 16;
    struct stat st;
    CHECK(be->stat(ctx, path, &st, &err) == 0 && (uint64_t)st.st_size == size, "stat size %lld",
          (long long)st.st_size);

    /* Read it back through a read-only open. */
    CHECK(be->open(ctx, &f, path, IOL_O_READ, 0, &err) == 0, "open for read: %s", err.msg);
    int evicted = -1;
    CHECK(be->evict(ctx, &f, &evicted, &err) == 0, "evict: %s", err.msg);
    CHECK(evicted == !is_tmpfs(base), "%s: evicted=%d", base, evicted);
    memset(buf, 0, XFER * (size_t)n);
    for (int i = 0; i < n; i++)
        reqs[i] = (struct iol_req){ .op = IOL_IO_READ, .file = &f, .buf = buf + (size_t)i * XFER, .len = XFER,
                                    .offset = (uint64_t)i * XFER };
    CHECK(run_reqs(be, ctx, reqs, n) == n, "reads completed");
    for (int i = 0; i < n; i++)
        CHECK(reqs[i].result == (int64_t)XFER && reqs[i].error == 0 && count_wrong(buf + (size_t)i * XFER, XFER,
              (uint64_t)i * XFER) == 0, "read %d: result %lld error %d", i, (long long)reqs[i].result,
              reqs[i].error);

    /* At EOF a read ends short without error; past EOF it moves nothing. */
    reqs[0] = (struct iol_req){ .op = IOL_IO_READ, .file = &f, .buf = buf, .len = XFER, .offset = size - 100 };
    reqs[1] = (struct iol_req){ .op = IOL_IO_READ, .file = &f, .buf = buf + XFER, .len = XFER, .offset = size + 4096 };
    CHECK(run_reqs(be, ctx, reqs, 2) == 2, "EOF reads completed");
    CHECK(reqs[0].result == 100 && reqs[0].error == 0 && count_wrong(buf, 100, size - 100) == 0,
          "short read at EOF: result %lld error %d", (long long)reqs[0].result, reqs[0].error);
    CHECK(reqs[1].result == 0 && reqs[1].error == 0, "read past EOF: result %lld error %d",
          (long long)reqs[1].result, reqs[1].error);

    /* A write on a read-only file fails as a transfer (error set), not as a call. */
    reqs[0] = (struct iol_req){ .op = IOL_IO_WRITE, .file = &f, .buf = buf, .len = 10, .offset = 0 };
    CHECK(run_reqs(be, ctx, reqs, 1) == 1, "failed write still completes");
    CHECK(reqs[0].error == EBADF && reqs[0].result == 0, "write to a read-only file: error %d", reqs[0].error);
    CHECK(be->close(ctx, &f, &err) == 0, "close: %s", err.msg);

    /* Exclusive create of an existing file fails and names it. */
    memset(&err, 0, sizeof err);
    CHECK(be->open(ctx, &f, path, IOL_O_WRITE | IOL_O_CREATE | IOL_O_EXCL, 0600, &err) == -1 &&
          strstr(err.msg, path) && strstr(err.msg, "File exists"), "O_EXCL: %s", err.msg);

    /* Namespace operations. */
    char sub[320];
    snprintf(sub, sizeof sub, "%s/sub", dir);
    memset(&err, 0, sizeof err);
    CHECK(be->mkdir(ctx, sub, 0700, &err) == 0, "mkdir: %s", err.msg);
    CHECK(be->stat(ctx, sub, &st, &err) == 0 && S_ISDIR(st.st_mode), "stat dir");
    CHECK(be->rmdir(ctx, sub, &err) == 0, "rmdir: %s", err.msg);
    CHECK(be->unlink(ctx, path, &err) == 0, "unlink: %s", err.msg);
    CHECK(access(path, F_OK) != 0, "file still there after unlink");
    be->ctx_close(ctx);
    free(buf);
    CHECK(rmdir(dir) == 0, "rmdir %s: the backend left something behind", dir);
}

static void test_posix_direct_io(void)
{
    const struct iol_backend *be = &iol_backend_posix;
    char dir[] = "/tmp/iolens-test-direct-XXXXXX", path[64];
    CHECK(mkdtemp(dir) != NULL, "mkdtemp");
    snprintf(path, sizeof path, "%s/direct", dir);
    /* Probe: some file systems (tmpfs before 6.6, overlayfs on some kernels) refuse O_DIRECT. */
    int probe = open(path, O_WRONLY | O_CREAT | O_DIRECT, 0600);
    if (probe < 0 && errno == EINVAL) {
        printf("skip O_DIRECT: %s refuses it\n", dir);
        unlink(path);
        rmdir(dir);
        return;
    }
    CHECK(probe >= 0, "probe open: %s", strerror(errno));
    close(probe);
    unlink(path);

    struct iol_err err = { 0 };
    struct iol_bctx *ctx;
    struct iol_file f;
    CHECK(be->ctx_open(&ctx, QD, &err) == 0, "ctx_open");
    CHECK(be->open(ctx, &f, path, IOL_O_READ | IOL_O_WRITE | IOL_O_CREATE | IOL_O_DIRECT, 0600, &err) == 0,
          "open O_DIRECT: %s", err.msg);
    CHECK((fcntl(f.fd, F_GETFL) & O_DIRECT) != 0, "O_DIRECT not set on the descriptor");
    unsigned char *buf = NULL;
    CHECK(posix_memalign((void **)&buf, IOL_DIRECT_ALIGN, 4 * IOL_DIRECT_ALIGN) == 0, "memalign");
    fill(buf, 4 * IOL_DIRECT_ALIGN, 0);
    struct iol_req reqs[4];
    for (int i = 0; i < 4; i++)
        reqs[i] = (struct iol_req){ .op = IOL_IO_WRITE, .file = &f, .buf = buf + i * IOL_DIRECT_ALIGN,
                                    .len = IOL_DIRECT_ALIGN, .offset = (uint64_t)i * IOL_DIRECT_ALIGN };
    CHECK(run_reqs(be, ctx, reqs, 4) == 4, "direct writes");
    for (int i = 0; i < 4; i++)
        CHECK(reqs[i].result == IOL_DIRECT_ALIGN && reqs[i].error == 0, "direct write %d: error %d", i,
              reqs[i].error);
    memset(buf, 0, 4 * IOL_DIRECT_ALIGN);
    for (int i = 0; i < 4; i++)
        reqs[i].op = IOL_IO_READ;
    CHECK(run_reqs(be, ctx, reqs, 4) == 4, "direct reads");
    CHECK(count_wrong(buf, 4 * IOL_DIRECT_ALIGN, 0) == 0, "direct read back differs");
    CHECK(be->close(ctx, &f, &err) == 0, "close");
    be->ctx_close(ctx);
    free(buf);
    unlink(path);
    rmdir(dir);
}

static void test_posix_errors_name_the_path_and_call(void)
{
    const struct iol_backend *be = &iol_backend_posix;
    const char *missing = "/tmp/iolens-no-such-dir-4711/file";
    struct iol_bctx *ctx;
    struct iol_file f;
    struct iol_err err = { 0 };
    struct stat st;
    CHECK(be->ctx_open(&ctx, 0, &err) == -1 && err.code == IOL_ERR_USAGE, "queue depth 0 accepted");
    memset(&err, 0, sizeof err);
    CHECK(be->ctx_open(&ctx, 1, &err) == 0, "ctx_open");

    CHECK(be->open(ctx, &f, missing, IOL_O_WRITE | IOL_O_CREATE, 0600, &err) == -1, "open in a missing dir");
    CHECK(strcmp(err.msg, "open /tmp/iolens-no-such-dir-4711/file: No such file or directory") == 0, "msg: %s",
          err.msg);
    CHECK(err.code == IOL_ERR_RUNTIME, "code %d", err.code);
    memset(&err, 0, sizeof err);
    CHECK(be->stat(ctx, missing, &st, &err) == -1 && strncmp(err.msg, "stat /tmp/iolens-no-such-dir-4711", 33) == 0,
          "stat msg: %s", err.msg);
    memset(&err, 0, sizeof err);
    CHECK(be->mkdir(ctx, missing, 0700, &err) == -1 && strstr(err.msg, "mkdir /tmp/iolens-no-such-dir-4711"),
          "mkdir msg: %s", err.msg);
    memset(&err, 0, sizeof err);
    CHECK(be->unlink(ctx, missing, &err) == -1 && strstr(err.msg, "unlink /tmp/iolens-no-such-dir-4711"),
          "unlink msg: %s", err.msg);
    memset(&err, 0, sizeof err);
    CHECK(be->rmdir(ctx, missing, &err) == -1 && strstr(err.msg, "rmdir /tmp/iolens-no-such-dir-4711"),
          "rmdir msg: %s", err.msg);
    be->ctx_close(ctx);
}

static void test_null_backend_touches_nothing(void)
{
    const struct iol_backend *be = &iol_backend_null;
    CHECK(be->does_io == 0, "null does_io");
    char dir[] = "/tmp/iolens-test-null-XXXXXX", path[64], sub[64];
    CHECK(mkdtemp(dir) != NULL, "mkdtemp");
    snprintf(path, sizeof path, "%s/file", dir);
    snprintf(sub, sizeof sub, "%s/sub", dir);
    struct iol_err err = { 0 };
    struct iol_bctx *ctx;
    struct iol_file f;
    CHECK(be->ctx_open(&ctx, QD, &err) == 0, "ctx_open");
    CHECK(be->open(ctx, &f, path, IOL_O_WRITE | IOL_O_CREATE | IOL_O_EXCL, 0600, &err) == 0, "open");
    CHECK(be->mkdir(ctx, sub, 0700, &err) == 0, "mkdir");
    CHECK(access(path, F_OK) != 0 && errno == ENOENT, "null open created %s", path);
    CHECK(access(sub, F_OK) != 0 && errno == ENOENT, "null mkdir created %s", sub);

    unsigned char byte = 0x5a;
    struct iol_req reqs[6];
    for (int i = 0; i < 6; i++)
        reqs[i] = (struct iol_req){ .op = i % 2 ? IOL_IO_READ : IOL_IO_WRITE, .file = &f, .buf = &byte,
                                    .len = (size_t)1 << 20, .offset = (uint64_t)i << 20 };
    CHECK(run_reqs(be, ctx, reqs, 6) == 6, "null requests");
    for (int i = 0; i < 6; i++)
        CHECK(reqs[i].result == 1 << 20 && reqs[i].error == 0 && reqs[i].t_done_ns >= reqs[i].t_submit_ns &&
              reqs[i].t_submit_ns > 0, "null req %d", i);
    CHECK(byte == 0x5a, "null read wrote into the buffer");

    /* A request stamped with its issue time completes when submit sees it: its latency is the real time
     * since then (the clock is read at completion), not 0; an untimed one keeps its stamps. */
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    uint64_t issued = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec, later;
    do {
        clock_gettime(CLOCK_MONOTONIC, &ts);
        later = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
    } while (later < issued + 20000);
    struct iol_req timed[2] = {
        { .op = IOL_IO_READ, .file = &f, .buf = &byte, .len = 4096, .flags = IOL_REQ_SUBMIT_STAMPED,
          .t_submit_ns = issued },
        { .op = IOL_IO_READ, .file = &f, .buf = &byte, .len = 4096, .flags = IOL_REQ_UNTIMED },
    };
    CHECK(run_reqs(be, ctx, timed, 2) == 2, "null timed requests");
    CHECK(timed[0].t_submit_ns == issued && timed[0].t_done_ns >= issued + 20000,
          "null latency is not the time since issue: %llu ns", (unsigned long long)(timed[0].t_done_ns - issued));
    CHECK(timed[1].t_submit_ns == 0 && timed[1].t_done_ns == 0 && timed[1].result == 4096, "null untimed request");

    struct stat st;
    memset(&st, 0xff, sizeof st);
    CHECK(be->stat(ctx, path, &st, &err) == 0 && st.st_size == 0 && st.st_mode == 0, "null stat");
    int evicted = -1;
    CHECK(be->fsync(ctx, &f, &err) == 0 && be->evict(ctx, &f, &evicted, &err) == 0 && evicted == 0, "null evict");
    CHECK(be->close(ctx, &f, &err) == 0 && be->unlink(ctx, path, &err) == 0 && be->rmdir(ctx, sub, &err) == 0,
          "null namespace ops");
    be->ctx_close(ctx);
    CHECK(rmdir(dir) == 0, "the directory is not empty: null wrote something");
}

/* mmap: a file created for writing is grown to its extent and mapped; the data goes through the mapping
 * into the file (read back with pread); a write past the extent fails (EFBIG), a read past the end of the
 * file ends short; fsync (msync) of what was written succeeds; the advice IOR gives is accepted. */
static void test_mmap_backend(const char *base)
{
    const struct iol_backend *be = &iol_backend_mmap;
    char dir[256], path[300];
    snprintf(dir, sizeof dir, "%s/iolens-test-mmap-XXXXXX", base);
    if (!mkdtemp(dir)) return;
    snprintf(path, sizeof path, "%s/f", dir);
    struct iol_backend_opts opts;
    memset(&opts, 0, sizeof opts);
    opts.mmap_advice = IOL_MMAP_MADV_PATTERN | IOL_MMAP_MADV_DONT_NEED;
    struct iol_bctx *ctx = NULL;
    struct iol_err err = {0};
    CHECK(iol_backend_ctx_open(be, &ctx, QD, &opts, &err) == 0, "mmap ctx: %s", err.msg);
    struct iol_file f;
    memset(&f, 0, sizeof f);
    f.extent = 4 * XFER;
    CHECK(be->open(ctx, &f, path, IOL_O_WRITE | IOL_O_CREATE, 0644, &err) == 0, "mmap open: %s", err.msg);
    struct stat st;
    CHECK(stat(path, &st) == 0 && st.st_size == (off_t)(4 * XFER), "grown to the extent: %lld", (long long)st.st_size);
    static unsigned char bufs[5][XFER];
    struct iol_req reqs[5];
    memset(reqs, 0, sizeof reqs);
    for (int i = 0; i < 5; i++) {
        fill(bufs[i], XFER, (uint64_t)i * XFER);
        reqs[i] = (struct iol_req){.op = IOL_IO_WRITE, .file = &f, .buf = bufs[i], .len = XFER, .offset = (uint64_t)i * XFER};
    }
    CHECK(run_reqs(be, ctx, reqs, 4) == 4, "mmap writes");
    for (int i = 0; i < 4; i++) CHECK(reqs[i].error == 0 && reqs[i].result == (int64_t)XFER, "mmap write %d", i);
    CHECK(run_reqs(be, ctx, reqs + 4, 1) == 1 && reqs[4].error == EFBIG, "a write past the extent fails: %d", reqs[4].error);
    CHECK(be->fsync(ctx, &f, &err) == 0, "msync: %s", err.msg);
    CHECK(be->close(ctx, &f, &err) == 0, "mmap close: %s", err.msg);
    int fd = open(path, O_RDONLY);
    static unsigned char back[XFER];
    CHECK(fd >= 0 && pread(fd, back, XFER, 3 * XFER) == (ssize_t)XFER && count_wrong(back, XFER, 3 * XFER) == 0,
          "the data is in the file");
    if (fd >= 0) close(fd);
    memset(&f, 0, sizeof f);
    CHECK(be->open(ctx, &f, path, IOL_O_READ, 0, &err) == 0, "mmap open for reading: %s", err.msg);
    struct iol_req rd[2] = {{.op = IOL_IO_READ, .file = &f, .buf = bufs[0], .len = XFER, .offset = 2 * XFER},
                            {.op = IOL_IO_READ, .file = &f, .buf = bufs[1], .len = XFER, .offset = 4 * XFER}};
    CHECK(run_reqs(be, ctx, rd, 2) == 2, "mmap reads");
    CHECK(rd[0].result == (int64_t)XFER && count_wrong(bufs[0], XFER, 2 * XFER) == 0, "mmap read back");
    CHECK(rd[1].error == 0 && rd[1].result == 0, "a read past the end is short, not SIGBUS");
    CHECK(be->close(ctx, &f, &err) == 0, "mmap close: %s", err.msg);
    be->ctx_close(ctx);
    unlink(path);
    rmdir(dir);
}

static void test_backends_are_found_by_name_in_any_case(void)
{
    CHECK(iol_backend_find("posix") == &iol_backend_posix, "posix");
    CHECK(iol_backend_find("POSIX") == &iol_backend_posix, "POSIX (IOR's spelling)");
    CHECK(iol_backend_find("Null") == &iol_backend_null, "Null");
    CHECK(iol_backend_find("DUMMY") == &iol_backend_null, "IOR's DUMMY");
    CHECK(iol_backend_find("MMAP") == &iol_backend_mmap, "IOR's MMAP");
    CHECK(iol_backend_find("nosuch") == NULL, "unknown name");
    CHECK(iol_backend_find(NULL) == NULL, "NULL name");
    const char *names = iol_backend_names();
    CHECK(strstr(names, "posix") && strstr(names, "null") && names[0] != ',', "names: %s", names);
    /* Every listed name resolves to a backend that calls itself by that name. */
    char copy[256];
    snprintf(copy, sizeof copy, "%s", names);
    for (char *save, *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        const struct iol_backend *be = iol_backend_find(tok);
        CHECK(be != NULL && strcmp(be->name, tok) == 0, "listed name %s", tok);
    }
}

int main(void)
{
    test_posix_round_trip("/tmp");
    test_posix_round_trip("/dev/shm");
    test_posix_direct_io();
    test_posix_errors_name_the_path_and_call();
    test_null_backend_touches_nothing();
    test_mmap_backend("/tmp");
    test_mmap_backend("/dev/shm");
    test_backends_are_found_by_name_in_any_case();
    return TEST_DONE();
}
