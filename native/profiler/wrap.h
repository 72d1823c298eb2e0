/* wrap.h — what every wrapper does around the real call: enter (or pass straight through), time, count.
 *
 * The shape of a wrapper:
 *
 *     struct iol_thread *t = iol_enter();
 *     if (t == NULL) return IOL_REAL(f)(args);          // runtime off, or a call made inside the runtime
 *     ... look up the descriptor / path (no syscall once it is known; errno left as it was) ...
 *     uint64_t t0 = iol_t0(tracked);                     // untracked calls are counted, not timed
 *     r = iol_real.f(args);
 *     int e = errno;                                     // what the program must see
 *     iol_acct_...(t, ..., r, e, t0);
 *     errno = e; iol_leave(t); return r;
 */
#ifndef IOL_PROF_WRAP_H
#define IOL_PROF_WRAP_H
#include "rt.h"

#include <errno.h>

#include "real.h"

struct iol_thread *iol_enter_slow(struct iol_thread *t);

static inline struct iol_thread *iol_enter(void)
{
    struct iol_thread *t = &iol_tls;
    if (IOL_UNLIKELY(t->guard != 0 || !__atomic_load_n(&iol_g.on, __ATOMIC_RELAXED)))
        return iol_enter_slow(t);
    t->guard = IOL_GUARD_IN;
    return t;
}

static inline void iol_leave(struct iol_thread *t)
{
    t->guard = 0;
}

/* The start of a call: a tick count when it is timed (tracked, or traced), else 0. */
static inline uint64_t iol_t0(int timed)
{
    return (timed || iol_g.trace) ? iol_ticks() : 0;
}

/* A read- or write-type call. */
struct iol_xfer {
    uint16_t op;       /* trace op */
    uint8_t write;     /* 0 read, 1 write */
    uint8_t stdio;     /* a call on a stream: the STDIO layer's counters, not the POSIX layer's */
    int fd;
    const void *buf;   /* the (first) buffer: MEM_NOT_ALIGNED */
    int64_t pos;       /* file offset of the access, -1: the descriptor's position (which it advances) */
    uint64_t req;      /* bytes asked for (trace) */
    uint8_t half;      /* the source half of a copy: its time and trace record go with the target half */
};

void iol_acct_xfer(struct iol_thread *t, struct iol_desc *d, const struct iol_xfer *x, int64_t ret, int err,
                   uint64_t t0);

/* A call on an untracked descriptor or excluded path, without the trace: the process's counts alone, in
 * line (this is all the runtime adds to a write on a pipe or a stat of /dev/null). */
static inline void iol_count_untracked(struct iol_thread *t, int pcount, int failed)
{
    uint64_t *p = iol_proc(t);
    if (failed)
        p[IOL_P_ERRORS]++;
    else if (pcount >= 0)
        p[pcount]++;
    p[IOL_P_UNTRACKED_OPS]++;
}

/* Where a call that moves no data counts its time, and what else it counts (Darshan's modules do the same:
 * a sync is write time, a dup or fileno is also an open, a flush is a stream's write time). */
enum iol_meta_how {
    IOL_META_POSIX = 0,  /* POSIX_F_META_TIME (process META_TIME) */
    IOL_META_SYNC,       /* POSIX_F_WRITE_TIME (process WRITE_TIME): fsync, fdatasync, sync_file_range */
    IOL_META_REOPEN,     /* also a POSIX_OPENS with its open timestamps: dup, fileno */
    IOL_META_STDIO,      /* STDIO_F_META_TIME: fseek, fsetpos, rewind */
    IOL_META_STDIO_OPEN, /* a STDIO_OPENS with its open timestamps, STDIO_F_META_TIME: fdopen */
    IOL_META_STDIO_FLUSH,/* STDIO_F_WRITE_TIME and the stream's write timestamps (process WRITE_TIME) */
    IOL_META_PROC,       /* no file counter takes the time (process META_TIME only): ftell, fgetpos */
};

/* A call that moves no data. f: the file it names (NULL: none known); fcount/pcount: the file and process
 * counters it increments (-1: none); untracked: on an untracked descriptor or excluded path. A failed call
 * counts in ERRORS and its time in the process's time only: Darshan's counters never count a failure. */
struct iol_meta {
    uint16_t op;           /* trace op; 0: not traced */
    int16_t fcount, pcount;
    uint8_t untracked;
    struct iol_file *f;
    uint64_t offset, size; /* trace */
    uint8_t how;           /* enum iol_meta_how (0 unless given) */
};
void iol_acct_meta(struct iol_thread *t, const struct iol_meta *m, int failed, int64_t result, uint64_t t0);

/* An open of the path of c that returned fd (or failed with err). */
void iol_acct_open(struct iol_thread *t, int op, int fd, int err, const struct iol_pcall *c, int oflags, int stdio);
/* A close of what d was (taken from the fd table before the call). */
void iol_acct_close(struct iol_thread *t, int op, struct iol_desc *d, int r, int err, uint64_t t0);
/* The descriptor's file when it is tracked (a regular file, or one whose type is not learnt yet; not an
 * O_PATH descriptor). */
static inline struct iol_file *iol_desc_file(struct iol_desc *d)
{
    if ((uintptr_t)d <= (uintptr_t)IOL_UNTRACKED ||
        (__atomic_load_n(&d->state, __ATOMIC_RELAXED) & IOL_DESC_READY) == IOL_DESC_CHECKED ||
        __atomic_load_n(&d->file->kind, __ATOMIC_RELAXED) == IOL_KIND_OTHER)
        return NULL;
    return d->file;
}

struct iolp_trace *iol_trace_add(struct iol_thread *t, int op, uint32_t file_id, uint64_t t0, uint64_t t1,
                                 uint64_t off, uint64_t size, int64_t result);
void iol_trace_set_file(struct iol_thread *t, struct iol_file *f, uint64_t t0);
/* A TRACE record of the call (IOLENS_TRACE=1); the record, or NULL. */
static inline struct iolp_trace *iol_trace(struct iol_thread *t, int op, uint32_t file_id, uint64_t t0, uint64_t t1,
                                           uint64_t off, uint64_t size, int64_t result)
{
    if (IOL_LIKELY(!iol_g.trace))
        return NULL;
    return iol_trace_add(t, op, file_id, t0, t1, off, size, result);
}

/* The result a trace record stores: the return value, or -errno for a failed call. */
static inline int64_t iol_result(int64_t r, int err)
{
    return r < 0 ? -(int64_t)err : r;
}

/* A call naming a path: its absolute form (len -1: excluded or unresolvable, so untracked and untimed). */
struct iol_pcall {
    int *ep;
    long len;
    const char *abs; /* the path itself when it is absolute and normal, else buf */
    struct iol_file *f; /* its file when the thread named it last (so it is known, and not excluded) */
    uint64_t hash;      /* else its iol_hash (0: not computed) */
    uint64_t t0;
    char buf[PATH_MAX];
};

static inline void iol_pcall_pre(struct iol_pcall *c, int dirfd, const char *path)
{
    c->ep = NULL; /* the program's errno: looked up only when needed (not for an excluded path) */
    c->f = NULL;
    c->hash = 0;
    if (iol_path_quick_excluded(path)) {
        c->len = -1;
        c->t0 = iol_t0(0);
        return;
    }
    c->len = iol_path_resolve(dirfd, path, c->buf, &c->abs);
    /* A file the runtime knows was not excluded (the list is fixed at start): the check is for new paths. */
    if (c->len >= 0 && (c->f = iol_file_last(c->abs, (size_t)c->len)) == NULL) {
        if (iol_path_excluded(c->abs, (size_t)c->len))
            c->len = -1;
        else /* the table's line arrives while the kernel works: a new path's lookup misses the cache */
            c->hash = iol_file_prefetch(c->abs, (size_t)c->len);
    }
    c->t0 = iol_t0(c->len >= 0);
    if (IOL_UNLIKELY(iol_g.trace) && c->len >= 0) { /* the trace record names the path (trace.c) */
        iol_tls.tpath = c;
        iol_tls.tpath_t0 = c->t0;
    }
}

/* A call that names its path only once it has returned (mkstemp fills in its template; tmpfile's file is
 * found through /proc/self/fd): the path call made after the fact, timed from t0, taken before the call. */
static inline void iol_pcall_late(struct iol_pcall *c, int dirfd, const char *path, uint64_t t0)
{
    iol_pcall_pre(c, dirfd, path);
    c->t0 = c->len >= 0 || iol_g.trace ? t0 : 0;
    if (IOL_UNLIKELY(iol_g.trace) && c->len >= 0)
        iol_tls.tpath_t0 = t0;
}

/* The program's errno (the location is looked up only when needed: not for an excluded path). */
static inline int *iol_pcall_ep(struct iol_pcall *c)
{
    if (c->ep == NULL)
        c->ep = &errno;
    return c->ep;
}

/* The file a path call names: found (or, when create, added: the caller counts on it); NULL when untracked or
 * unknown. */
static inline struct iol_file *iol_pcall_file(struct iol_thread *t, const struct iol_pcall *c, int create,
                                              enum iol_kind kind)
{
    if (c->len < 0)
        return NULL;
    if (c->f != NULL) { /* the path the thread named last: known, no lookup */
        if (create && kind != IOL_KIND_UNKNOWN && __atomic_load_n(&c->f->kind, __ATOMIC_RELAXED) == IOL_KIND_UNKNOWN)
            iol_file_set_kind(c->f, kind);
        return c->f;
    }
    return create ? iol_file_get(t, c->abs, (size_t)c->len, c->hash, kind, 1)
                  : iol_file_find(c->abs, (size_t)c->len, c->hash);
}

#endif
