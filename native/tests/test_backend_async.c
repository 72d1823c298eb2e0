/* test_backend_async.c — every compiled data backend (posix, psync, pvsync2, io_uring, libaio) driven the way
 * the ior workload drives them: many requests at distinct offsets, in a scrambled order, at queue depth 1
 * and 32, written and read back byte for byte, on a disk (/tmp), buffered and O_DIRECT, and on tmpfs. Also:
 * timestamps are set and ordered, and taken once per batch by the asynchronous backends; a read at EOF ends
 * short without error; a write cut short is finished or failed, never retried forever; waiting for more
 * than is in flight fails at once instead of hanging; io_uring's registered and unregistered buffers and
 * files both work, and its settings (fixed buffers and registered files off, SQPOLL, hipri) do what they
 * say. A watchdog alarm turns any hang into a failure. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backend/backend.h"
#include "check.h"

#define NREQ 256
#define XFER ((size_t)8192)
#define MAXQD 32

static unsigned char pattern(uint64_t offset)
{
    return (unsigned char)((offset * 2654435761u) >> 11);
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

static int is_async(const struct iol_backend *be)
{
    return strcmp(be->name, "io_uring") == 0 || strcmp(be->name, "libaio") == 0;
}

/* A scratch directory under base, or NULL (printed) when base cannot hold one. */
static int make_dir(const char *base, char *dir, size_t len)
{
    snprintf(dir, len, "%s/iolens-test-async-XXXXXX", base);
    if (mkdtemp(dir) == NULL) {
        printf("skip %s: %s\n", base, strerror(errno));
        return -1;
    }
    return 0;
}

/* Whether base takes O_DIRECT opens (tmpfs did not before Linux 6.6). */
static int direct_ok(const char *dir)
{
    char p[512];
    snprintf(p, sizeof p, "%s/probe", dir);
    int fd = open(p, O_WRONLY | O_CREAT | O_DIRECT, 0600);
    if (fd >= 0)
        close(fd);
    unlink(p);
    return fd >= 0;
}

/* What a pass saw. */
struct pass {
    int max_inflight;
    int wrong;               /* requests that failed or moved the wrong count */
    int bad_times;           /* timestamps missing or out of order */
    int split_batches;       /* async: a reap whose requests carry different t_done_ns */
    size_t bad_bytes;
};

/* Moves NREQ transfers of XFER bytes through qd slot buffers, ior's way: fill every free slot, submit them
 * in one call, reap at least one. Transfer k goes to offset perm(k) * XFER. Reads are checked as they
 * complete. */
static void run_pass(const struct iol_backend *be, struct iol_bctx *ctx, struct iol_file *f, enum iol_io_op op,
                     int qd, unsigned char **bufs, struct pass *ps)
{
    struct iol_req reqs[MAXQD], *batch[MAXQD], *done[MAXQD];
    int free_slots[MAXQD], nfree = qd, inflight = 0, issued = 0, completed = 0;
    struct iol_err err = { 0, "" };
    memset(ps, 0, sizeof *ps);
    memset(reqs, 0, sizeof reqs);
    for (int i = 0; i < qd; i++)
        free_slots[i] = i;
    while (completed < NREQ) {
        int n = 0;
        while (nfree > 0 && issued < NREQ) {
            int slot = free_slots[--nfree];
            uint64_t off = (uint64_t)((issued * 97) % NREQ) * XFER;   /* 97 is prime to 256: a permutation */
            reqs[slot] = (struct iol_req){ .op = op, .file = f, .buf = bufs[slot], .len = XFER, .offset = off,
                                           .tag = (uint64_t)slot };
            if (op == IOL_IO_WRITE)
                fill(bufs[slot], XFER, off);
            else
                memset(bufs[slot], 0, XFER);
            batch[n++] = &reqs[slot];
            issued++;
        }
        if (n) {
            int got = be->submit(ctx, batch, n, &err);
            CHECK(got == n, "%s: submit %d accepted %d: %s", be->name, n, got, err.msg);
            if (got != n)
                return;
            inflight += n;
            if (inflight > ps->max_inflight)
                ps->max_inflight = inflight;
        }
        int got = be->reap(ctx, done, 1, qd, &err);
        CHECK(got >= 1, "%s: reap gave %d: %s", be->name, got, err.msg);
        if (got < 1)
            return;
        for (int i = 0; i < got; i++) {
            struct iol_req *d = done[i];
            if (d->error || d->result != (int64_t)d->len)
                ps->wrong++;
            if (d->t_submit_ns == 0 || d->t_done_ns < d->t_submit_ns)
                ps->bad_times++;
            if (is_async(be) && d->t_done_ns != done[0]->t_done_ns)
                ps->split_batches++;
            if (op == IOL_IO_READ)
                ps->bad_bytes += count_wrong(d->buf, d->len, d->offset);
            free_slots[nfree++] = (int)d->tag;
        }
        inflight -= got;
        completed += got;
    }
}

/* Submits reqs[0..n) and reaps all of them; returns how many came back. */
static int run_all(const struct iol_backend *be, struct iol_bctx *ctx, struct iol_req *reqs, int n)
{
    struct iol_req *ptrs[8], *done[8];
    struct iol_err err = { 0, "" };
    for (int i = 0; i < n; i++)
        ptrs[i] = &reqs[i];
    CHECK(be->submit(ctx, ptrs, n, &err) == n, "%s: submit %d: %s", be->name, n, err.msg);
    int got = 0;
    while (got < n) {
        int k = be->reap(ctx, done, 1, n - got, &err);
        CHECK(k >= 1, "%s: reap: %s", be->name, err.msg);
        if (k < 1)
            break;
        got += k;
    }
    return got;
}

static unsigned char *aligned(size_t len)
{
    void *p = NULL;
    if (posix_memalign(&p, IOL_DIRECT_ALIGN, len) != 0)
        return NULL;
    memset(p, 0, len);
    return p;
}

/* The round trip of one backend on one file system, buffered or direct, at one queue depth. */
static void round_trip(const char *name, const char *base, int direct, int qd)
{
    const struct iol_backend *be = iol_backend_find(name);
    CHECK(be != NULL, "backend %s not found", name);
    if (!be)
        return;
    char dir[256], path[320], what[400];
    if (make_dir(base, dir, sizeof dir))
        return;
    snprintf(what, sizeof what, "%s on %s%s qd %d", name, base, direct ? " O_DIRECT" : "", qd);
    if (direct && !direct_ok(dir)) {
        printf("skip %s: no O_DIRECT there\n", what);
        rmdir(dir);
        return;
    }
    snprintf(path, sizeof path, "%s/data", dir);
    struct iol_err err = { 0, "" };
    struct iol_bctx *ctx = NULL;
    CHECK(be->ctx_open(&ctx, qd, &err) == 0, "%s: ctx_open: %s", what, err.msg);
    if (!ctx)
        return;
    unsigned char *bufs[MAXQD];
    for (int i = 0; i < qd; i++)
        bufs[i] = aligned(XFER);
    if (be->register_buffers) {
        int nreg = be->register_buffers(ctx, (void *const *)bufs, qd, XFER, &err);
        CHECK(nreg == qd, "%s: registered %d of %d buffers: %s", what, nreg, qd, err.msg);
    }
    int dflag = direct ? IOL_O_DIRECT : 0;

    struct iol_file f;
    struct pass ps;
    CHECK(be->open(ctx, &f, path, IOL_O_WRITE | IOL_O_CREATE | IOL_O_EXCL | dflag, 0600, &err) == 0, "%s: open: %s",
          what, err.msg);
    run_pass(be, ctx, &f, IOL_IO_WRITE, qd, bufs, &ps);
    CHECK(ps.wrong == 0 && ps.bad_times == 0 && ps.split_batches == 0, "%s write: %d wrong, %d bad times, %d split "
          "batches", what, ps.wrong, ps.bad_times, ps.split_batches);
    CHECK(ps.max_inflight == qd, "%s write: at most %d in flight", what, ps.max_inflight);
    CHECK(be->fsync(ctx, &f, &err) == 0, "%s: fsync: %s", what, err.msg);
    CHECK(be->close(ctx, &f, &err) == 0, "%s: close: %s", what, err.msg);
    struct stat st;
    CHECK(be->stat(ctx, path, &st, &err) == 0 && (uint64_t)st.st_size == NREQ * XFER, "%s: size %lld", what,
          (long long)st.st_size);

    CHECK(be->open(ctx, &f, path, IOL_O_READ | dflag, 0, &err) == 0, "%s: open to read: %s", what, err.msg);
    int evicted;
    CHECK(be->evict(ctx, &f, &evicted, &err) == 0, "%s: evict: %s", what, err.msg);
    run_pass(be, ctx, &f, IOL_IO_READ, qd, bufs, &ps);
    CHECK(ps.wrong == 0 && ps.bad_bytes == 0 && ps.bad_times == 0 && ps.split_batches == 0,
          "%s read: %d wrong, %zu bad bytes, %d bad times, %d split batches", what, ps.wrong, ps.bad_bytes,
          ps.bad_times, ps.split_batches);

    /* The file ends 100 bytes into the next transfer: a read there ends short without error, one past the
     * end moves nothing, and neither is retried forever (the alarm would fire). */
    uint64_t size = NREQ * XFER + 100;
    CHECK(truncate(path, (off_t)size) == 0, "truncate: %s", strerror(errno));
    struct iol_req eof[2] = {
        { .op = IOL_IO_READ, .file = &f, .buf = bufs[0], .len = XFER, .offset = NREQ * XFER },
        { .op = IOL_IO_READ, .file = &f, .buf = bufs[0], .len = XFER, .offset = NREQ * XFER + 2 * XFER },
    };
    memset(bufs[0], 0xee, XFER);
    CHECK(run_all(be, ctx, &eof[0], 1) == 1, "%s: read at EOF", what);
    size_t zeros = 0;
    for (size_t i = 0; i < 100; i++)
        zeros += bufs[0][i] == 0;
    CHECK(eof[0].result == 100 && eof[0].error == 0 && zeros == 100, "%s: read at EOF: result %lld error %d",
          what, (long long)eof[0].result, eof[0].error);
    CHECK(run_all(be, ctx, &eof[1], 1) == 1, "%s: read past EOF", what);
    CHECK(eof[1].result == 0 && eof[1].error == 0, "%s: read past EOF: result %lld error %d", what,
          (long long)eof[1].result, eof[1].error);

    /* Waiting for more than is in flight is an error at once, not a hang. */
    struct iol_req two[2];
    struct iol_req *tp[2] = { &two[0], &two[1] }, *done[MAXQD];
    int k = qd > 1 ? 2 : 1;
    for (int i = 0; i < k; i++)
        two[i] = (struct iol_req){ .op = IOL_IO_READ, .file = &f, .buf = bufs[i], .len = XFER, .offset = (uint64_t)i * XFER };
    CHECK(be->submit(ctx, tp, k, &err) == k, "%s: submit %d", what, k);
    memset(&err, 0, sizeof err);
    CHECK(be->reap(ctx, done, k + 1, MAXQD, &err) == -1 && strstr(err.msg, "in flight"), "%s: reap beyond the "
          "in-flight count: %s", what, err.msg);
    int got = be->reap(ctx, done, k, MAXQD, &err);
    CHECK(got == k, "%s: then reap %d gave %d: %s", what, k, got, err.msg);
    CHECK(be->reap(ctx, done, 0, MAXQD, &err) == 0, "%s: nothing left", what);
    CHECK(be->submit(ctx, tp, 0, &err) == 0, "%s: an empty submit", what);

    CHECK(be->close(ctx, &f, &err) == 0, "%s: close: %s", what, err.msg);
    be->ctx_close(ctx);
    for (int i = 0; i < qd; i++)
        free(bufs[i]);
    CHECK(unlink(path) == 0 && rmdir(dir) == 0, "%s: cleanup", what);
}

/* A file-size limit cuts a buffered write short: the backend sends the remainder, which fails with EFBIG,
 * and reports how far it got (the caller sees result < len and an error), instead of retrying forever. */
static void short_write(const char *name)
{
    const struct iol_backend *be = iol_backend_find(name);
    if (!be)
        return;
    char dir[256], path[320];
    if (make_dir("/tmp", dir, sizeof dir))
        return;
    snprintf(path, sizeof path, "%s/limited", dir);
    struct iol_err err = { 0, "" };
    struct iol_bctx *ctx = NULL;
    struct iol_file f;
    CHECK(be->ctx_open(&ctx, 4, &err) == 0, "%s: ctx_open: %s", name, err.msg);
    CHECK(be->open(ctx, &f, path, IOL_O_WRITE | IOL_O_CREATE, 0600, &err) == 0, "%s: open: %s", name, err.msg);
    unsigned char *buf = aligned(XFER);
    fill(buf, XFER, 0);
    struct rlimit old, lim;
    getrlimit(RLIMIT_FSIZE, &old);
    lim = old;
    lim.rlim_cur = 5000;
    CHECK(setrlimit(RLIMIT_FSIZE, &lim) == 0, "setrlimit");
    struct iol_req r = { .op = IOL_IO_WRITE, .file = &f, .buf = buf, .len = XFER, .offset = 0 };
    CHECK(run_all(be, ctx, &r, 1) == 1, "%s: limited write", name);
    setrlimit(RLIMIT_FSIZE, &old);
    CHECK(r.result == 5000 && r.error == EFBIG, "%s: write cut at the size limit: result %lld error %d", name,
          (long long)r.result, r.error);
    CHECK(be->close(ctx, &f, &err) == 0, "%s: close", name);
    be->ctx_close(ctx);
    free(buf);
    unlink(path);
    rmdir(dir);
}

/* A transfer the kernel refuses (a write on a read-only file) comes back from reap with its error. */
static void refused_transfer(const char *name)
{
    const struct iol_backend *be = iol_backend_find(name);
    if (!be)
        return;
    char dir[256], path[320];
    if (make_dir("/tmp", dir, sizeof dir))
        return;
    snprintf(path, sizeof path, "%s/ro", dir);
    int fd = open(path, O_WRONLY | O_CREAT, 0600);
    close(fd);
    struct iol_err err = { 0, "" };
    struct iol_bctx *ctx = NULL;
    struct iol_file f;
    unsigned char buf[64] = { 0 };
    CHECK(be->ctx_open(&ctx, 4, &err) == 0, "%s: ctx_open", name);
    CHECK(be->open(ctx, &f, path, IOL_O_READ, 0, &err) == 0, "%s: open", name);
    struct iol_req r[2] = {
        { .op = IOL_IO_WRITE, .file = &f, .buf = buf, .len = sizeof buf, .offset = 0 },
        { .op = IOL_IO_WRITE, .file = &f, .buf = buf, .len = sizeof buf, .offset = 64 },
    };
    CHECK(run_all(be, ctx, r, 2) == 2, "%s: refused writes complete", name);
    CHECK(r[0].error == EBADF && r[0].result == 0 && r[1].error == EBADF, "%s: write on a read-only file: error %d/%d",
          name, r[0].error, r[1].error);
    CHECK(be->close(ctx, &f, &err) == 0, "%s: close", name);
    be->ctx_close(ctx);
    unlink(path);
    rmdir(dir);
}

#if IOLENS_HAVE_URING
/* One write and read back of n transfers through ctx; buffer i of bufs. Returns the bad byte count. */
static size_t uring_io(const struct iol_backend *be, struct iol_bctx *ctx, struct iol_file *f, unsigned char **bufs,
                       int n, uint64_t base)
{
    struct iol_req r[8];
    for (int i = 0; i < n; i++) {
        fill(bufs[i], XFER, base + (uint64_t)i * XFER);
        r[i] = (struct iol_req){ .op = IOL_IO_WRITE, .file = f, .buf = bufs[i], .len = XFER,
                                 .offset = base + (uint64_t)i * XFER };
    }
    CHECK(run_all(be, ctx, r, n) == n, "uring writes");
    size_t bad = 0;
    for (int i = 0; i < n; i++) {
        bad += r[i].result != (int64_t)XFER || r[i].error;
        memset(bufs[i], 0, XFER);
        r[i].op = IOL_IO_READ;
    }
    CHECK(run_all(be, ctx, r, n) == n, "uring reads");
    for (int i = 0; i < n; i++)
        bad += count_wrong(bufs[i], XFER, r[i].offset) + (r[i].result != (int64_t)XFER || r[i].error);
    return bad;
}

/* Registered and unregistered buffers side by side: a request inside a registered buffer (whole, or a
 * part of it) goes as a fixed-buffer SQE; one outside, or running past a registered buffer's end, goes as
 * a plain one; both move the right bytes. Files get a registered slot from their second transfer on. */
static void uring_fixed_and_plain(void)
{
    const struct iol_backend *be = &iol_backend_io_uring;
    char dir[256], path[320];
    if (make_dir("/tmp", dir, sizeof dir))
        return;
    snprintf(path, sizeof path, "%s/fixed", dir);
    struct iol_err err = { 0, "" };
    struct iol_bctx *ctx = NULL;
    CHECK(be->ctx_open(&ctx, 8, &err) == 0, "ctx_open: %s", err.msg);
    unsigned char *reg = aligned(4 * XFER), *plain = aligned(XFER);
    void *regs[2] = { reg, reg + 2 * XFER };   /* two registered buffers of 1.5 transfers, a gap between */
    CHECK(be->register_buffers(ctx, regs, 2, XFER + XFER / 2, &err) == 2, "register: %s", err.msg);
    struct iol_file f;
    CHECK(be->open(ctx, &f, path, IOL_O_READ | IOL_O_WRITE | IOL_O_CREATE, 0600, &err) == 0, "open: %s", err.msg);
    struct iol_backend_stats s0, s1;
    be->stats(ctx, &s0);
    unsigned char *inside[2] = { reg, reg + 2 * XFER + XFER / 2 };   /* a whole one's start; the second's tail */
    CHECK(uring_io(be, ctx, &f, inside, 2, 0) == 0, "registered buffers: data");
    be->stats(ctx, &s1);
    CHECK(s1.requests - s0.requests == 4 && s1.fixed_bufs - s0.fixed_bufs == 4, "registered: %llu of %llu fixed",
          (unsigned long long)(s1.fixed_bufs - s0.fixed_bufs), (unsigned long long)(s1.requests - s0.requests));
    /* The file's first transfer went by descriptor, the others through its slot. */
    CHECK(s1.fixed_files - s0.fixed_files == 3, "registered file used %llu times of 4",
          (unsigned long long)(s1.fixed_files - s0.fixed_files));
    s0 = s1;
    unsigned char *outside[2] = { plain, reg + XFER };   /* not registered; runs past the first one's end */
    CHECK(uring_io(be, ctx, &f, outside, 2, 2 * XFER) == 0, "unregistered buffers: data");
    be->stats(ctx, &s1);
    CHECK(s1.requests - s0.requests == 4 && s1.fixed_bufs == s0.fixed_bufs, "unregistered: %llu fixed",
          (unsigned long long)(s1.fixed_bufs - s0.fixed_bufs));
    CHECK(s1.fixed_files - s0.fixed_files == 4, "registered file");
    CHECK(be->close(ctx, &f, &err) == 0, "close: %s", err.msg);

    /* The slot is free again after close: open and use many files in turn, more than the table holds. */
    for (int i = 0; i < 300; i++) {
        CHECK(be->open(ctx, &f, path, IOL_O_READ, 0, &err) == 0, "reopen %d: %s", i, err.msg);
        struct iol_req r[2] = {
            { .op = IOL_IO_READ, .file = &f, .buf = reg, .len = XFER, .offset = 0 },
            { .op = IOL_IO_READ, .file = &f, .buf = reg, .len = XFER, .offset = 0 },
        };
        run_all(be, ctx, &r[0], 1);
        run_all(be, ctx, &r[1], 1);
        CHECK(r[0].result == (int64_t)XFER && r[1].result == (int64_t)XFER, "reopen %d: read", i);
        CHECK(be->close(ctx, &f, &err) == 0, "close %d", i);
    }
    be->stats(ctx, &s0);
    CHECK(s0.fixed_files - s1.fixed_files == 300, "a slot for every reopened file: %llu",
          (unsigned long long)(s0.fixed_files - s1.fixed_files));
    be->ctx_close(ctx);
    free(reg);
    free(plain);
    unlink(path);
    rmdir(dir);
}

/* The settings: fixed buffers and registered files off; SQPOLL and hipri where the machine allows. */
static void uring_options(void)
{
    const struct iol_backend *be = &iol_backend_io_uring;
    char dir[256], path[320];
    if (make_dir("/tmp", dir, sizeof dir))
        return;
    snprintf(path, sizeof path, "%s/opts", dir);
    struct iol_err err = { 0, "" };
    unsigned char *bufs[2] = { aligned(XFER), aligned(XFER) };
    struct iol_backend_opts off = { .no_fixed_bufs = 1, .no_register_files = 1 };
    struct iol_backend_opts sqpoll = { .sqthread_poll = 1, .sqthread_idle_ms = 10 };
    struct iol_backend_opts *cases[2] = { &off, &sqpoll };
    for (int c = 0; c < 2; c++) {
        struct iol_bctx *ctx = NULL;
        memset(&err, 0, sizeof err);
        if (iol_backend_ctx_open(be, &ctx, 4, cases[c], &err) != 0) {
            CHECK(c == 1, "fixed/registered off: ctx_open: %s", err.msg);
            printf("skip SQPOLL: %s\n", err.msg);
            continue;
        }
        CHECK(be->register_buffers(ctx, (void *const *)bufs, 2, XFER, &err) == (c == 0 ? 0 : 2),
              "case %d: register", c);
        struct iol_file f;
        CHECK(be->open(ctx, &f, path, IOL_O_READ | IOL_O_WRITE | IOL_O_CREATE, 0600, &err) == 0, "open");
        CHECK(uring_io(be, ctx, &f, bufs, 2, 0) == 0, "case %d: data", c);
        struct iol_backend_stats s;
        be->stats(ctx, &s);
        if (c == 0)
            CHECK(s.requests == 4 && s.fixed_bufs == 0 && s.fixed_files == 0, "off: %llu fixed buffers, %llu fixed "
                  "files", (unsigned long long)s.fixed_bufs, (unsigned long long)s.fixed_files);
        else
            CHECK(s.requests == 4 && s.fixed_bufs == 4, "sqpoll: %llu fixed", (unsigned long long)s.fixed_bufs);
        CHECK(be->close(ctx, &f, &err) == 0, "close");
        be->ctx_close(ctx);
    }

    /* A polled ring completes only direct I/O: a buffered open is refused with a reason. */
    struct iol_backend_opts hipri = { .hipri = 1 };
    struct iol_bctx *ctx = NULL;
    memset(&err, 0, sizeof err);
    if (iol_backend_ctx_open(be, &ctx, 4, &hipri, &err) == 0) {
        struct iol_file f;
        CHECK(be->open(ctx, &f, path, IOL_O_READ, 0, &err) == -1 && strstr(err.msg, "O_DIRECT"), "hipri buffered "
              "open: %s", err.msg);
        be->ctx_close(ctx);
    } else {
        printf("skip hipri: %s\n", err.msg);
    }
    free(bufs[0]);
    free(bufs[1]);
    unlink(path);
    rmdir(dir);
}
#endif

/* Settings a backend lacks are refused by name; the "off" switches are accepted everywhere. */
static void options_are_checked(void)
{
    struct iol_err err = { 0, "" };
    struct iol_bctx *ctx = NULL;
    struct iol_backend_opts hipri = { .hipri = 1 }, sqpoll = { .sqthread_poll = 1 }, off = { .no_fixed_bufs = 1 };
    CHECK(iol_backend_ctx_open(&iol_backend_posix, &ctx, 4, &hipri, &err) == -1 && err.code == IOL_ERR_USAGE &&
          strstr(err.msg, "hipri"), "posix hipri: %s", err.msg);
    memset(&err, 0, sizeof err);
    CHECK(iol_backend_ctx_open(&iol_backend_pvsync2, &ctx, 4, &sqpoll, &err) == -1 && strstr(err.msg, "sqthread_poll"),
          "pvsync2 sqpoll: %s", err.msg);
    CHECK(iol_backend_ctx_open(&iol_backend_pvsync2, &ctx, 4, &hipri, &err) == 0, "pvsync2 hipri: %s", err.msg);
    iol_backend_pvsync2.ctx_close(ctx);
    CHECK(iol_backend_ctx_open(&iol_backend_posix, &ctx, 4, &off, &err) == 0, "posix fixedbufs off");
    iol_backend_posix.ctx_close(ctx);
    CHECK(iol_backend_ctx_open(&iol_backend_posix, &ctx, 4, NULL, &err) == 0, "posix defaults");
    iol_backend_posix.ctx_close(ctx);
}

static void registry_lists_what_was_compiled(void)
{
    const char *names = iol_backend_names();
    CHECK(iol_backend_find("psync") == &iol_backend_posix, "psync is posix");
    CHECK(iol_backend_find("PVSYNC2") == &iol_backend_pvsync2, "pvsync2");
    CHECK(strstr(names, "pvsync2") != NULL, "names: %s", names);
#if IOLENS_HAVE_URING
    CHECK(iol_backend_find("io_uring") == &iol_backend_io_uring && strstr(names, "io_uring"), "io_uring: %s", names);
#else
    CHECK(iol_backend_find("io_uring") == NULL && !strstr(names, "io_uring"), "io_uring not built: %s", names);
#endif
#if IOLENS_HAVE_AIO
    CHECK(iol_backend_find("libaio") == &iol_backend_libaio && iol_backend_find("AIO") == &iol_backend_libaio &&
          strstr(names, "libaio"), "libaio: %s", names);
#else
    CHECK(iol_backend_find("libaio") == NULL && iol_backend_find("aio") == NULL, "libaio not built: %s", names);
#endif
    CHECK(strstr(IOL_BACKEND_NAMES_TEXT, "pvsync2") != NULL, "help text: %s", IOL_BACKEND_NAMES_TEXT);
}

int main(void)
{
    /* A hang (a reap that waits for what can never complete) must fail the test, not stall CI. */
    alarm(120);
    /* The file-size limit test would otherwise be killed by SIGXFSZ. */
    signal(SIGXFSZ, SIG_IGN);
    static const char *const names[] = {
        "posix", "psync", "pvsync2",
#if IOLENS_HAVE_URING
        "io_uring",
#endif
#if IOLENS_HAVE_AIO
        "libaio",
#endif
    };
    static const int depths[] = { 1, MAXQD };
    for (size_t b = 0; b < sizeof names / sizeof names[0]; b++) {
        for (size_t q = 0; q < 2; q++) {
            round_trip(names[b], "/tmp", 0, depths[q]);
            round_trip(names[b], "/tmp", 1, depths[q]);
            round_trip(names[b], "/dev/shm", 0, depths[q]);
            round_trip(names[b], "/dev/shm", 1, depths[q]);
        }
        short_write(names[b]);
        refused_transfer(names[b]);
    }
#if IOLENS_HAVE_URING
    uring_fixed_and_plain();
    uring_options();
#endif
    options_are_checked();
    registry_lists_what_was_compiled();
    return TEST_DONE();
}
