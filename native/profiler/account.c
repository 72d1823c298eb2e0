/* account.c — turning a call into counter updates (the meanings are docs/profile-log.md's).
 *
 * The per-call work for a read or write on a tracked file is a handful of loads and stores in the thread's
 * own record: no lock, no syscall. A failed call counts in ERRORS (and its time in the process's time of its
 * kind), never as a read or write, and in no counter with a Darshan name (Darshan counts no failure). Calls
 * on untracked descriptors or excluded paths count in the process totals and UNTRACKED_OPS, untimed (unless
 * the trace is on). */
#include "wrap.h"

#include <fcntl.h>
#include <string.h>

#define V(c) v[IOL_F_##c]
#define D(c) dv[IOL_D_##c]
#define P(c) p[IOL_P_##c]

static inline void after_call(uint64_t t1)
{
    if (IOL_UNLIKELY(t1 >= __atomic_load_n(&iol_g.clk.next_refine, __ATOMIC_RELAXED)))
        iol_clock_refine(t1);
}

static inline unsigned size_bucket(uint64_t n)
{
    static const uint64_t limit[9] = { 100, 1024, 10240, 102400, 1048576, 4194304, 10485760, 104857600,
                                       1073741824 };
    unsigned b = 0;
    while (b < 9 && n > limit[b])
        b++;
    return b;
}

/* Values beyond the four slots of a most-common set: kept privately so that the slots hold the four most
 * common exactly while a file sees at most 20 distinct values, and closely beyond (the least counted
 * candidate is replaced, keeping its count, as the Space-Saving algorithm does). */
struct iol_topover {
    uint32_t n;
    struct {
        uint64_t v, c;
    } e[16];
};

static void top_add_slow(struct iol_thread *t, uint64_t *val, uint64_t *cnt, struct iol_topover **over, uint64_t x)
{
    for (int i = 1; i < 4; i++)
        if (cnt[i] != 0 && val[i] == x) {
            cnt[i]++;
            if (cnt[i] > cnt[0]) { /* the most common value moves to the first slot, where top_add looks */
                uint64_t v0 = val[0], c0 = cnt[0];
                val[0] = val[i];
                cnt[0] = cnt[i];
                val[i] = v0;
                cnt[i] = c0;
            }
            return;
        }
    for (int i = 0; i < 4; i++)
        if (cnt[i] == 0) {
            val[i] = x;
            cnt[i] = 1;
            return;
        }
    struct iol_topover *o = *over;
    if (o == NULL && (o = *over = iol_thread_alloc(t, sizeof *o)) == NULL)
        return;
    uint32_t k = o->n;
    for (uint32_t i = 0; i < o->n; i++)
        if (o->e[i].v == x) {
            k = i;
            break;
        }
    if (k == o->n) {
        if (o->n < 16) {
            o->n++;
            o->e[k].v = x;
            o->e[k].c = 0;
        } else {
            k = 0;
            for (uint32_t i = 1; i < 16; i++)
                if (o->e[i].c < o->e[k].c)
                    k = i;
            o->e[k].v = x;
        }
    }
    o->e[k].c++;
    int m = 0;
    for (int i = 1; i < 4; i++)
        if (cnt[i] < cnt[m])
            m = i;
    if (o->e[k].c > cnt[m]) {
        uint64_t sv = val[m], sc = cnt[m];
        val[m] = o->e[k].v;
        cnt[m] = o->e[k].c;
        o->e[k].v = sv;
        o->e[k].c = sc;
    }
}

/* The common case, a value already in the first slot, without a call. */
static inline void top_add(struct iol_thread *t, uint64_t *val, uint64_t *cnt, struct iol_topover **over, uint64_t x)
{
    if (IOL_LIKELY(cnt[0] != 0 && val[0] == x))
        cnt[0]++;
    else
        top_add_slow(t, val, cnt, over, x);
}

/* A stream's read or write that moved n > 0 bytes at pos (Darshan's STDIO module counts those only). */
static void stdio_xfer(struct iol_thread *t, struct iol_tfile *tf, struct iol_file *f, int w, int64_t pos, uint64_t n,
                       uint64_t t0, uint64_t t1, uint64_t dur)
{
    if (n == 0)
        return;
    struct iol_tdata *td = iol_tfile_data(t, tf, f);
    if (IOL_UNLIKELY(td == NULL))
        return;
    uint64_t *dv = td->v;
    uint64_t last = (uint64_t)pos + n - 1; /* Darshan's MAX_BYTE: the offset of the last byte */
    if (w) {
        D(STDIO_WRITES)++;
        D(STDIO_BYTES_WRITTEN) += n;
        if (last > D(STDIO_MAX_BYTE_WRITTEN))
            D(STDIO_MAX_BYTE_WRITTEN) = last;
        if (D(STDIO_F_WRITE_START_TIMESTAMP) == 0)
            D(STDIO_F_WRITE_START_TIMESTAMP) = iol_stamp(t0);
        D(STDIO_F_WRITE_END_TIMESTAMP) = iol_stamp(t1);
        D(STDIO_F_WRITE_TIME) += dur;
    } else {
        D(STDIO_READS)++;
        D(STDIO_BYTES_READ) += n;
        if (last > D(STDIO_MAX_BYTE_READ))
            D(STDIO_MAX_BYTE_READ) = last;
        if (D(STDIO_F_READ_START_TIMESTAMP) == 0)
            D(STDIO_F_READ_START_TIMESTAMP) = iol_stamp(t0);
        D(STDIO_F_READ_END_TIMESTAMP) = iol_stamp(t1);
        D(STDIO_F_READ_TIME) += dur;
    }
}

void iol_acct_xfer(struct iol_thread *t, struct iol_desc *d, const struct iol_xfer *x, int64_t ret, int err,
                   uint64_t t0)
{
    uint64_t t1 = 0, dur = 0;
    if (t0 != 0) {
        t1 = iol_ticks();
        dur = iol_ns(t0, t1);
        after_call(t1);
    }
    uint64_t *p = iol_proc(t);
    int w = x->write;
    if (x->half)
        dur = 0;
    if (ret < 0) {
        P(ERRORS)++;
    } else if (w) {
        P(WRITES)++;
        P(BYTES_WRITTEN) += (uint64_t)ret;
    } else {
        P(READS)++;
        P(BYTES_READ) += (uint64_t)ret;
    }
    struct iol_tfile *tf;
    if (d == NULL || (tf = iol_tfile(t, d->file)) == NULL) {
        P(UNTRACKED_OPS)++;
        if (!x->half)
            iol_trace(t, x->op, 0, t0, t1, x->pos < 0 ? 0 : (uint64_t)x->pos, x->req, iol_result(ret, err));
        return;
    }
    if (w)
        P(WRITE_TIME) += dur;
    else
        P(READ_TIME) += dur;
    int64_t pos = x->pos;
    if (pos < 0) {
        pos = __atomic_load_n(&d->offset, __ATOMIC_RELAXED);
        if (ret > 0)
            __atomic_store_n(&d->offset, pos + ret, __ATOMIC_RELAXED);
    }
    if (ret < 0) { /* a failure: ERRORS, and its time in the process's only (Darshan counts no failure) */
        tf->v[IOL_F_ERRORS]++;
        if (!x->half)
            iol_trace(t, x->op, d->file->id, t0, t1, (uint64_t)pos, x->req, -(int64_t)err);
        return;
    }
    if (x->stdio) {
        stdio_xfer(t, tf, d->file, w, pos, (uint64_t)ret, t0, t1, dur);
        iol_trace(t, x->op, d->file->id, t0, t1, (uint64_t)pos, x->req, ret);
        return;
    }
    struct iol_tdata *td = iol_tfile_data(t, tf, d->file);
    if (IOL_UNLIKELY(td == NULL)) { /* out of memory: the process's counts only */
        if (!x->half)
            iol_trace(t, x->op, d->file->id, t0, t1, (uint64_t)pos, x->req, ret);
        return;
    }
    uint64_t *dv = td->v;
    uint64_t n = (uint64_t)ret, end = (uint64_t)pos + n;
    int64_t *kind_end = w ? &td->write_end : &td->read_end;
    if (w) {
        D(POSIX_WRITES)++;
        D(POSIX_BYTES_WRITTEN) += n;
        if (n > 0 && end - 1 > D(POSIX_MAX_BYTE_WRITTEN)) /* the offset of the last byte, as Darshan's */
            D(POSIX_MAX_BYTE_WRITTEN) = end - 1;
        if (*kind_end >= 0) {
            D(POSIX_CONSEC_WRITES) += pos == *kind_end;
            D(POSIX_SEQ_WRITES) += pos >= *kind_end;
        }
        D(POSIX_RW_SWITCHES) += td->last == 1;
        dv[IOL_D_POSIX_SIZE_WRITE_0_100 + size_bucket(n)]++;
        if (D(POSIX_F_WRITE_START_TIMESTAMP) == 0)
            D(POSIX_F_WRITE_START_TIMESTAMP) = iol_stamp(t0);
        D(POSIX_F_WRITE_END_TIMESTAMP) = iol_stamp(t1);
        D(POSIX_F_WRITE_TIME) += dur;
        if (dur > D(POSIX_F_MAX_WRITE_TIME))
            D(POSIX_F_MAX_WRITE_TIME) = dur;
    } else {
        D(POSIX_READS)++;
        D(POSIX_BYTES_READ) += n;
        if (n > 0 && end - 1 > D(POSIX_MAX_BYTE_READ))
            D(POSIX_MAX_BYTE_READ) = end - 1;
        if (*kind_end >= 0) {
            D(POSIX_CONSEC_READS) += pos == *kind_end;
            D(POSIX_SEQ_READS) += pos >= *kind_end;
        }
        D(POSIX_RW_SWITCHES) += td->last == 2;
        dv[IOL_D_POSIX_SIZE_READ_0_100 + size_bucket(n)]++;
        if (D(POSIX_F_READ_START_TIMESTAMP) == 0)
            D(POSIX_F_READ_START_TIMESTAMP) = iol_stamp(t0);
        D(POSIX_F_READ_END_TIMESTAMP) = iol_stamp(t1);
        D(POSIX_F_READ_TIME) += dur;
        if (dur > D(POSIX_F_MAX_READ_TIME))
            D(POSIX_F_MAX_READ_TIME) = dur;
    }
    *kind_end = (int64_t)end;
    td->last = w ? 2 : 1;
    D(POSIX_MEM_NOT_ALIGNED) += ((uintptr_t)x->buf & 7) != 0;
    uint32_t blk = d->file->blksize;
    if (blk != 0)
        D(POSIX_FILE_NOT_ALIGNED) += ((blk & (blk - 1)) == 0 ? ((uint64_t)pos & (blk - 1)) : (uint64_t)pos % blk) != 0;
    top_add(t, &D(POSIX_ACCESS1_ACCESS), &D(POSIX_ACCESS1_COUNT), &td->over[0], n);
    if (td->any_end >= 0) /* strides are signed: a backward step is stored as its two's complement */
        top_add(t, &D(POSIX_STRIDE1_STRIDE), &D(POSIX_STRIDE1_COUNT), &td->over[1], (uint64_t)(pos - td->any_end));
    td->any_end = (int64_t)end;
    if (!x->half)
        iol_trace(t, x->op, d->file->id, t0, t1, (uint64_t)pos, x->req, ret);
}

/* The file counters a successful metadata call adds besides its count (enum iol_meta_how). */
static void meta_file(struct iol_thread *t, struct iol_tfile *tf, struct iol_file *f, unsigned how, uint64_t t0,
                      uint64_t t1, uint64_t dur)
{
    uint64_t *v = tf->v;
    struct iol_tdata *td;
    switch (how) {
    case IOL_META_REOPEN: /* Darshan's POSIX_OPENS counts dup and fileno too */
        V(POSIX_OPENS)++;
        if (V(POSIX_F_OPEN_START_TIMESTAMP) == 0)
            V(POSIX_F_OPEN_START_TIMESTAMP) = iol_stamp(t0);
        V(POSIX_F_OPEN_END_TIMESTAMP) = iol_stamp(t1);
        V(POSIX_F_META_TIME) += dur;
        break;
    case IOL_META_SYNC: /* a sync writes the file's data: write time, as in Darshan */
        if ((td = iol_tfile_data(t, tf, f)) != NULL)
            td->v[IOL_D_POSIX_F_WRITE_TIME] += dur;
        break;
    case IOL_META_STDIO:
        V(STDIO_F_META_TIME) += dur;
        break;
    case IOL_META_STDIO_OPEN:
        V(STDIO_OPENS)++;
        if (V(STDIO_F_OPEN_START_TIMESTAMP) == 0)
            V(STDIO_F_OPEN_START_TIMESTAMP) = iol_stamp(t0);
        V(STDIO_F_OPEN_END_TIMESTAMP) = iol_stamp(t1);
        V(STDIO_F_META_TIME) += dur;
        break;
    case IOL_META_STDIO_FLUSH: /* Darshan's STDIO counts a flush as a write of 0 bytes */
        if ((td = iol_tfile_data(t, tf, f)) != NULL) {
            uint64_t *dv = td->v;
            if (D(STDIO_F_WRITE_START_TIMESTAMP) == 0)
                D(STDIO_F_WRITE_START_TIMESTAMP) = iol_stamp(t0);
            D(STDIO_F_WRITE_END_TIMESTAMP) = iol_stamp(t1);
            D(STDIO_F_WRITE_TIME) += dur;
        }
        break;
    case IOL_META_PROC:
        break;
    default:
        V(POSIX_F_META_TIME) += dur;
    }
}

void iol_acct_meta(struct iol_thread *t, const struct iol_meta *m, int failed, int64_t result, uint64_t t0)
{
    uint64_t t1 = 0, dur = 0;
    if (t0 != 0) {
        t1 = iol_ticks();
        dur = iol_ns(t0, t1);
        after_call(t1);
    }
    uint64_t *p = iol_proc(t);
    if (failed)
        P(ERRORS)++;
    else if (m->pcount >= 0)
        p[m->pcount]++;
    uint32_t id = 0;
    if (m->untracked) {
        P(UNTRACKED_OPS)++;
    } else {
        if (m->how == IOL_META_SYNC || m->how == IOL_META_STDIO_FLUSH)
            P(WRITE_TIME) += dur;
        else
            P(META_TIME) += dur;
        struct iol_file *f = m->f;
        struct iol_tfile *tf;
        if (f != NULL && __atomic_load_n(&f->kind, __ATOMIC_RELAXED) != IOL_KIND_OTHER &&
            (tf = iol_tfile(t, f)) != NULL) {
            uint64_t *v = tf->v;
            if (failed) {
                V(ERRORS)++;
            } else {
                if (m->fcount >= 0)
                    v[m->fcount]++;
                meta_file(t, tf, f, m->how, t0, t1, dur);
            }
            id = f->id;
        } else if (f != NULL) {
            P(UNTRACKED_OPS)++; /* a directory, a device */
        }
    }
    if (m->op != 0)
        iol_trace(t, m->op, id, t0, t1, m->offset, m->size, result);
}

void iol_acct_open(struct iol_thread *t, int op, int fd, int err, const struct iol_pcall *c, int oflags, int stdio)
{
    uint64_t t0 = c->t0;
    uint64_t t1 = 0, dur = 0;
    if (t0 != 0) {
        t1 = iol_ticks();
        dur = iol_ns(t0, t1);
        after_call(t1);
    }
    uint64_t *p = iol_proc(t);
    if (c->len < 0) {
        P(UNTRACKED_OPS)++;
        if (fd < 0) {
            P(ERRORS)++;
        } else {
            P(OPENS)++;
            iol_fd_install(fd, IOL_UNTRACKED);
        }
        iol_trace(t, op, 0, t0, t1, 0, 0, iol_result(fd, err));
        return;
    }
    P(META_TIME) += dur;
    struct iol_file *f;
    struct iol_tfile *tf;
    if (fd < 0) {
        P(ERRORS)++;
        f = iol_pcall_file(t, c, 0, IOL_KIND_UNKNOWN); /* a failure on a path never seen makes no record */
        uint32_t id = 0;
        if (f != NULL && __atomic_load_n(&f->kind, __ATOMIC_RELAXED) != IOL_KIND_OTHER &&
            (tf = iol_tfile(t, f)) != NULL) {
            tf->v[IOL_F_ERRORS]++;
            id = f->id;
        }
        iol_trace(t, op, id, t0, t1, 0, 0, -(int64_t)err);
        return;
    }
    P(OPENS)++;
    if (oflags & O_PATH) { /* a handle for *at() calls and fstat, not an open of the data */
        f = iol_file_get(t, c->abs, (size_t)c->len, c->hash, IOL_KIND_UNKNOWN, 0); /* c->len >= 0 here */
        struct iol_desc *d = f != NULL ? iol_desc_new(t, f, IOL_DESC_CHECKED, 0) : NULL;
        iol_fd_install(fd, d != NULL ? d : IOL_UNTRACKED);
        P(UNTRACKED_OPS)++;
        iol_trace(t, op, 0, t0, t1, 0, 0, fd);
        return;
    }
    enum iol_kind kind = IOL_KIND_UNKNOWN;
    if (oflags & O_DIRECTORY)
        kind = IOL_KIND_OTHER;
    else if ((oflags & (O_CREAT | O_EXCL)) == (O_CREAT | O_EXCL))
        kind = IOL_KIND_REGULAR;
    f = iol_pcall_file(t, c, 1, kind);
    uint32_t fk = f != NULL ? __atomic_load_n(&f->kind, __ATOMIC_RELAXED) : IOL_KIND_OTHER;
    uint32_t state = fk == IOL_KIND_REGULAR ? IOL_DESC_READY : fk == IOL_KIND_OTHER ? IOL_DESC_CHECKED : 0;
    if (oflags & O_APPEND) /* the offset of an append is the file's size: learnt on the first write */
        state = (state & ~IOL_DESC_CHECKED) | IOL_DESC_APPEND;
    struct iol_desc *d = f != NULL ? iol_desc_new(t, f, state, 0) : NULL;
    iol_fd_install(fd, d != NULL ? d : IOL_UNTRACKED);
    if (d == NULL || fk == IOL_KIND_OTHER || (tf = iol_tfile(t, f)) == NULL) {
        P(UNTRACKED_OPS)++;
        iol_trace(t, op, 0, t0, t1, 0, 0, fd);
        return;
    }
    uint64_t *v = tf->v;
    if (stdio) { /* a stream's open: the STDIO layer (the C library's own open inside it is not seen) */
        meta_file(t, tf, f, IOL_META_STDIO_OPEN, t0, t1, dur);
    } else {
        V(POSIX_OPENS)++;
#ifdef O_DIRECT
        V(POSIX_O_DIRECT_OPENS) += (oflags & O_DIRECT) != 0;
#endif
        V(POSIX_O_SYNC_OPENS) += (oflags & (O_SYNC | O_DSYNC)) != 0;
        V(POSIX_O_APPEND_OPENS) += (oflags & O_APPEND) != 0;
        if (V(POSIX_F_OPEN_START_TIMESTAMP) == 0)
            V(POSIX_F_OPEN_START_TIMESTAMP) = iol_stamp(t0);
        V(POSIX_F_OPEN_END_TIMESTAMP) = iol_stamp(t1);
        V(POSIX_F_META_TIME) += dur;
    }
    iol_trace(t, op, f->id, t0, t1, 0, 0, fd);
}

void iol_acct_close(struct iol_thread *t, int op, struct iol_desc *d, int r, int err, uint64_t t0)
{
    uint64_t t1 = 0, dur = 0;
    if (t0 != 0) {
        t1 = iol_ticks();
        dur = iol_ns(t0, t1);
        after_call(t1);
    }
    uint64_t *p = iol_proc(t);
    if (r < 0)
        P(ERRORS)++;
    struct iol_file *f = iol_desc_file(d);
    struct iol_tfile *tf;
    uint32_t id = 0;
    if (f == NULL || (tf = iol_tfile(t, f)) == NULL) {
        if (d != NULL || r == 0)
            P(UNTRACKED_OPS)++;
    } else {
        uint64_t *v = tf->v;
        P(META_TIME) += dur;
        V(ERRORS) += r < 0;
        /* Darshan counts a close whatever it returned (the descriptor is gone either way). */
        if (op == IOL_OP_FCLOSE) { /* a stream's close: the STDIO layer */
            if (V(STDIO_F_CLOSE_START_TIMESTAMP) == 0)
                V(STDIO_F_CLOSE_START_TIMESTAMP) = iol_stamp(t0);
            V(STDIO_F_CLOSE_END_TIMESTAMP) = iol_stamp(t1);
            V(STDIO_F_META_TIME) += dur;
        } else {
            if (V(POSIX_F_CLOSE_START_TIMESTAMP) == 0)
                V(POSIX_F_CLOSE_START_TIMESTAMP) = iol_stamp(t0);
            V(POSIX_F_CLOSE_END_TIMESTAMP) = iol_stamp(t1);
            V(POSIX_F_META_TIME) += dur;
        }
        id = f->id;
    }
    iol_desc_release(t, d);
    iol_trace(t, op, id, t0, t1, 0, 0, iol_result(r, err));
}

/* The same for the modules' records (module.c and the wrappers of the layers above POSIX). */
unsigned iol_size_bucket(uint64_t n)
{
    return size_bucket(n);
}

void iol_top_add(struct iol_thread *t, uint64_t *val, uint64_t *cnt, struct iol_topover **over, uint64_t x)
{
    top_add(t, val, cnt, over, x);
}
