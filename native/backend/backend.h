/* backend.h — what a storage backend must do.
 *
 * Data transfers are asynchronous: the workload submits requests (up to the queue depth it asked for)
 * and reaps completions. A synchronous backend (posix) does each I/O inside submit and hands the
 * completed requests back from reap, so the workload code is the same for every backend, and io_uring or
 * libaio fit without changing it. Each rank opens its own context; contexts are not shared between threads.
 * Every call returns 0 (or a count) on success and -1 with err filled on failure; a failed *transfer* is
 * not a call failure: it comes back from reap with req->error set. */
#ifndef IOL_BACKEND_H
#define IOL_BACKEND_H
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>
#include "../common/error.h"

enum iol_io_op { IOL_IO_READ, IOL_IO_WRITE };

enum iol_open_flags {
    IOL_O_READ   = 1 << 0,
    IOL_O_WRITE  = 1 << 1,
    IOL_O_CREATE = 1 << 2,
    IOL_O_EXCL   = 1 << 3,
    IOL_O_TRUNC  = 1 << 4,
    IOL_O_DIRECT = 1 << 5,   /* bypass the page cache; buffers, offsets and lengths must be aligned */
};

struct iol_bctx;             /* a backend's per-rank context (its ring, its io_context, ...) */

struct iol_file {
    struct iol_bctx *ctx;
    int fd;                  /* -1 for backends that have none */
    int flags;               /* enum iol_open_flags */
    void *priv;
};

struct iol_req {
    enum iol_io_op op;
    struct iol_file *file;
    void *buf;
    size_t len;
    uint64_t offset;
    /* filled by the backend */
    int64_t result;          /* bytes moved */
    int error;               /* errno of a failed transfer, 0 if none */
    uint64_t t_submit_ns;    /* CLOCK_MONOTONIC when handed to the system */
    uint64_t t_done_ns;      /* CLOCK_MONOTONIC when seen complete */
    uint64_t tag;            /* the caller's */
    unsigned flags;          /* enum iol_req_flags */
};

enum iol_req_flags {
    /* The caller times the operation itself (mdtest times a whole create): leave t_submit_ns/t_done_ns
     * alone and save the clock readings. */
    IOL_REQ_UNTIMED = 1 << 0,
};

struct iol_backend {
    const char *name;
    const char *description;
    /* queue_depth: most requests in flight at once */
    int (*ctx_open)(struct iol_bctx **ctx, int queue_depth, struct iol_err *err);
    void (*ctx_close)(struct iol_bctx *ctx);
    int (*open)(struct iol_bctx *ctx, struct iol_file *f, const char *path, int flags, mode_t mode,
                struct iol_err *err);
    int (*close)(struct iol_bctx *ctx, struct iol_file *f, struct iol_err *err);
    /* Queues n requests; returns how many were accepted (0..n), or -1. */
    int (*submit)(struct iol_bctx *ctx, struct iol_req **reqs, int n, struct iol_err *err);
    /* Waits until at least min requests are complete and returns up to max of them in done[]; or -1. */
    int (*reap)(struct iol_bctx *ctx, struct iol_req **done, int min, int max, struct iol_err *err);
    int (*fsync)(struct iol_bctx *ctx, struct iol_file *f, struct iol_err *err);
    /* Drops the file's pages from the page cache (after writing them back). Sets *evicted to 0 when the
     * file system keeps no separate cache (tmpfs), so the caller can say so. */
    int (*evict)(struct iol_bctx *ctx, struct iol_file *f, int *evicted, struct iol_err *err);
    int (*stat)(struct iol_bctx *ctx, const char *path, struct stat *st, struct iol_err *err);
    int (*unlink)(struct iol_bctx *ctx, const char *path, struct iol_err *err);
    int (*mkdir)(struct iol_bctx *ctx, const char *path, mode_t mode, struct iol_err *err);
    int (*rmdir)(struct iol_bctx *ctx, const char *path, struct iol_err *err);
    int does_io;             /* 0 for "null": nothing reaches storage, so safety checks are skipped */
};

const struct iol_backend *iol_backend_find(const char *name);   /* case-insensitive; NULL if unknown */
/* Comma-separated list of the names compiled in, for messages and --help. */
const char *iol_backend_names(void);

/* Alignment used for O_DIRECT buffers. */
#define IOL_DIRECT_ALIGN 4096

extern const struct iol_backend iol_backend_posix;
extern const struct iol_backend iol_backend_null;

#endif
