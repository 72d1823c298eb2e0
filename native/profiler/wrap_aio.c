/* wrap_aio.c — POSIX asynchronous I/O: aio_read, aio_write, lio_listio, aio_return, aio_error, aio_suspend,
 * aio_fsync, aio_cancel and their *64 forms.
 *
 * Counted as Darshan's POSIX module counts them: a request is a read or write of the POSIX layer, counted
 * when the program collects its result with aio_return (the bytes aio_return gives, at aio_offset), its time
 * from the submission to that aio_return. A request never collected is not counted; aio_error, aio_suspend,
 * aio_cancel and aio_fsync are traced and counted in no file counter (the process's AIOS counts every request
 * submitted). The C library does the transfers on threads of its own with internal calls the runtime never
 * sees, so nothing counts twice.
 *
 * The program's aiocb is only read, never written; its notification (signal, thread) is the C library's. The
 * requests in flight are remembered by their aiocb's address in a process-wide table under iol_g.lock (a
 * fork child has none: the table is cleared for a new log generation). */
#include "wrap.h"

#include <string.h>

#define AIO_SLOTS 4096u /* requests in flight the runtime remembers at once; beyond, one is not counted */
#define GONE ((const void *)1)

struct aio_req {
    const void *cb;      /* NULL: free; GONE: freed (a lookup goes on past it) */
    struct iol_file *file; /* NULL: on an untracked descriptor */
    uint64_t t0;
    const void *buf;
    int64_t offset;
    uint64_t nbytes;
    int fd;
    int is_write;
};

static struct aio_req *tab;
static uint64_t tab_gen;

static size_t slot_of(const void *cb)
{
    uint64_t x = (uint64_t)(uintptr_t)cb;
    x ^= x >> 29;
    x *= 0x9E3779B97F4A7C15ull;
    return (size_t)(x >> 52) & (AIO_SLOTS - 1);
}

/* Under iol_g.lock: the table of this log generation (NULL when out of memory). */
static struct aio_req *table(void)
{
    if (tab == NULL)
        tab = iol_alloc(AIO_SLOTS * sizeof *tab);
    else if (tab_gen != iol_g.gen) /* a fork child: its parent's requests are not its own */
        memset(tab, 0, AIO_SLOTS * sizeof *tab);
    tab_gen = iol_g.gen;
    return tab;
}

/* Under iol_g.lock: the slot of cb, or (absent) the first free one on its way; -1 when neither. */
static long find(struct aio_req *t, const void *cb, int *found)
{
    size_t i = slot_of(cb);
    long free_at = -1;
    *found = 0;
    for (size_t k = 0; k < AIO_SLOTS; k++, i = (i + 1) & (AIO_SLOTS - 1)) {
        const void *c = t[i].cb;
        if (c == cb) {
            *found = 1;
            return (long)i;
        }
        if (c == NULL || c == GONE) {
            if (free_at < 0)
                free_at = (long)i;
            if (c == NULL)
                break;
        }
    }
    return free_at;
}

/* A request submitted (an aiocb reused without aio_return replaces its old request). 0: not remembered. */
static int remember(const struct aio_req *r)
{
    iol_lock(&iol_g.lock);
    struct aio_req *t = table();
    int found;
    long i = t != NULL ? find(t, r->cb, &found) : -1;
    if (i >= 0)
        t[i] = *r;
    iol_unlock(&iol_g.lock);
    return i >= 0;
}

/* The request of cb, taken out of the table (aio_return collects it once). 0: none. */
static int take(const void *cb, struct aio_req *out)
{
    int found = 0;
    iol_lock(&iol_g.lock);
    struct aio_req *t = tab != NULL && tab_gen == iol_g.gen ? tab : NULL;
    long i = t != NULL ? find(t, cb, &found) : -1;
    if (found) {
        *out = t[i];
        /* the next slot free: nothing goes on past this one, it is free again */
        t[i].cb = t[((size_t)i + 1) & (AIO_SLOTS - 1)].cb == NULL ? NULL : GONE;
    }
    iol_unlock(&iol_g.lock);
    return found;
}

static void forget(const void *cb)
{
    struct aio_req dummy;
    take(cb, &dummy);
}

/* Before a submission: the request remembered, so that an aio_return racing with the submission's return (a
 * SIGEV_THREAD notification, another thread) finds it. 0: the table is full, the request is not counted. */
static int before(struct iol_thread *t, const void *cb, int fd, const volatile void *buf, int64_t offset,
                  uint64_t nbytes, int is_write, uint64_t t0)
{
    int *ep = &errno;
    int e0 = *ep;
    struct iol_desc *d = iol_fd_io(t, fd);
    *ep = e0;
    struct aio_req req = { cb, d != NULL ? d->file : NULL, t0, (const void *)buf, offset, nbytes, fd, is_write };
    return remember(&req);
}

/* After a submission that returned r: counted, or (a failure) forgotten, counted and traced. */
static void after(struct iol_thread *t, int op, const void *cb, int remembered, int64_t offset, uint64_t nbytes,
                  int r, int err, uint64_t t0)
{
    uint64_t *p = iol_proc(t);
    if (r != 0) {
        forget(cb);
        p[IOL_P_ERRORS]++;
        iol_trace(t, op, 0, t0, iol_ticks(), (uint64_t)offset, nbytes, -(int64_t)err);
        return;
    }
    p[IOL_P_AIOS]++;
    if (!remembered)
        p[IOL_P_UNTRACKED_OPS]++; /* more requests in flight than the table holds: this one is not counted */
}

#define AIO_SUBMIT(name, cbtype, op, is_write) \
    IOL_EXPORT int name(cbtype *cb) \
    { \
        struct iol_thread *t = iol_enter(); \
        if (t == NULL) \
            return IOL_REAL(name)(cb); \
        int *ep = &errno; \
        uint64_t t0 = iol_ticks(); \
        int kept = before(t, cb, cb->aio_fildes, cb->aio_buf, cb->aio_offset, cb->aio_nbytes, is_write, t0); \
        int r = iol_real.name(cb); \
        int e = *ep; \
        after(t, op, cb, kept, cb->aio_offset, cb->aio_nbytes, r, e, t0); \
        *ep = e; \
        iol_leave(t); \
        return r; \
    }
AIO_SUBMIT(aio_read, struct aiocb, IOL_OP_AIO_READ, 0)
AIO_SUBMIT(aio_read64, struct aiocb64, IOL_OP_AIO_READ, 0)
AIO_SUBMIT(aio_write, struct aiocb, IOL_OP_AIO_WRITE, 1)
AIO_SUBMIT(aio_write64, struct aiocb64, IOL_OP_AIO_WRITE, 1)
#undef AIO_SUBMIT

/* lio_listio: each LIO_READ / LIO_WRITE entry is a request (LIO_NOP and NULL entries are none). They count
 * when the call queued them all (0), or queued them and some failed (EIO: their aio_return gives the
 * failure, counted in ERRORS); other failures queued none. */
#define IS_RW(cb) ((cb) != NULL && ((cb)->aio_lio_opcode == LIO_READ || (cb)->aio_lio_opcode == LIO_WRITE))
#define LIO_LISTIO(name, cbtype) \
    IOL_EXPORT int name(int mode, cbtype *const list[], int n, struct sigevent *sig) \
    { \
        struct iol_thread *t = iol_enter(); \
        if (t == NULL) \
            return IOL_REAL(name)(mode, list, n, sig); \
        int *ep = &errno; \
        uint64_t t0 = iol_ticks(); \
        int lost = 0; \
        for (int i = 0; i < n; i++) \
            if (IS_RW(list[i])) \
                lost += !before(t, list[i], list[i]->aio_fildes, list[i]->aio_buf, list[i]->aio_offset, \
                                list[i]->aio_nbytes, list[i]->aio_lio_opcode == LIO_WRITE, t0); \
        int r = iol_real.name(mode, list, n, sig); \
        int e = *ep; \
        uint64_t *p = iol_proc(t); \
        if (r != 0) \
            p[IOL_P_ERRORS]++; \
        for (int i = 0; i < n; i++) \
            if (IS_RW(list[i])) { \
                if (r == 0 || e == EIO) \
                    p[IOL_P_AIOS]++; \
                else \
                    forget(list[i]); \
            } \
        if (r == 0 || e == EIO) \
            p[IOL_P_UNTRACKED_OPS] += (uint64_t)lost; \
        iol_trace(t, IOL_OP_LIO_LISTIO, 0, t0, iol_ticks(), 0, n > 0 ? (uint64_t)n : 0, iol_result(r, e)); \
        *ep = e; \
        iol_leave(t); \
        return r; \
    }
LIO_LISTIO(lio_listio, struct aiocb)
LIO_LISTIO(lio_listio64, struct aiocb64)
#undef LIO_LISTIO
#undef IS_RW

/* aio_return: the request's read or write, counted now, timed from its submission. Its failure's error is
 * what aio_error says (aio_return leaves errno alone); asking has no effect the program could see. */
#define AIO_RETURN(name, cbtype, error_call) \
    IOL_EXPORT ssize_t name(cbtype *cb) \
    { \
        struct iol_thread *t = iol_enter(); \
        if (t == NULL) \
            return IOL_REAL(name)(cb); \
        int *ep = &errno; \
        uint64_t t0 = iol_t0(0); \
        ssize_t r = iol_real.name(cb); \
        int e = *ep; \
        struct aio_req q; \
        if (take(cb, &q)) { \
            int err = r < 0 ? iol_real.error_call(cb) : 0; \
            struct iol_desc d = { .file = q.file }; \
            uint16_t op = q.is_write ? IOL_OP_AIO_WRITE : IOL_OP_AIO_READ; \
            iol_acct_xfer(t, q.file != NULL ? &d : NULL, \
                          &(struct iol_xfer){ op, (uint8_t)q.is_write, 0, q.fd, q.buf, q.offset, q.nbytes, 0 }, r, \
                          err, q.t0); \
        } else { \
            iol_trace(t, IOL_OP_AIO_RETURN, 0, t0, iol_ticks(), 0, 0, r); \
        } \
        *ep = e; \
        iol_leave(t); \
        return r; \
    }
AIO_RETURN(aio_return, struct aiocb, aio_error)
AIO_RETURN(aio_return64, struct aiocb64, aio_error64)
#undef AIO_RETURN

/* aio_fsync: a request, traced; it is no read or write (Darshan counts it nowhere). A request of the same
 * aiocb never collected is forgotten first: the aiocb's next aio_return is the sync's. */
#define AIO_FSYNC(name, cbtype) \
    IOL_EXPORT int name(int op, cbtype *cb) \
    { \
        struct iol_thread *t = iol_enter(); \
        if (t == NULL) \
            return IOL_REAL(name)(op, cb); \
        int *ep = &errno; \
        uint64_t t0 = iol_t0(1); \
        forget(cb); \
        int r = iol_real.name(op, cb); \
        int e = *ep; \
        iol_proc(t)[r == 0 ? IOL_P_AIOS : IOL_P_ERRORS]++; \
        if (IOL_UNLIKELY(iol_g.trace)) { \
            struct iol_desc *d = iol_fd_io(t, cb->aio_fildes); \
            iol_trace(t, IOL_OP_AIO_FSYNC, d != NULL ? d->file->id : 0, t0, iol_ticks(), 0, 0, iol_result(r, e)); \
        } \
        *ep = e; \
        iol_leave(t); \
        return r; \
    }
AIO_FSYNC(aio_fsync, struct aiocb)
AIO_FSYNC(aio_fsync64, struct aiocb64)
#undef AIO_FSYNC

/* aio_error, aio_suspend, aio_cancel: waiting and asking, not I/O (a request's time already runs from its
 * submission to its aio_return): traced only. aio_error returns an error number, not -1 and errno. */
#define AIO_TRACED(ret, name, params, args, op, result) \
    IOL_EXPORT ret name params \
    { \
        struct iol_thread *t = iol_enter(); \
        if (t == NULL) \
            return IOL_REAL(name) args; \
        if (IOL_LIKELY(!iol_g.trace)) { \
            iol_leave(t); \
            return iol_real.name args; \
        } \
        int *ep = &errno; \
        uint64_t t0 = iol_ticks(); \
        ret r = iol_real.name args; \
        int e = *ep; \
        iol_trace(t, op, 0, t0, iol_ticks(), 0, 0, result); \
        *ep = e; \
        iol_leave(t); \
        return r; \
    }
AIO_TRACED(int, aio_error, (const struct aiocb *cb), (cb), IOL_OP_AIO_ERROR, r)
AIO_TRACED(int, aio_error64, (const struct aiocb64 *cb), (cb), IOL_OP_AIO_ERROR, r)
AIO_TRACED(int, aio_suspend, (const struct aiocb *const list[], int n, const struct timespec *timeout),
           (list, n, timeout), IOL_OP_AIO_SUSPEND, iol_result(r, e))
AIO_TRACED(int, aio_suspend64, (const struct aiocb64 *const list[], int n, const struct timespec *timeout),
           (list, n, timeout), IOL_OP_AIO_SUSPEND, iol_result(r, e))
AIO_TRACED(int, aio_cancel, (int fd, struct aiocb *cb), (fd, cb), IOL_OP_AIO_CANCEL, iol_result(r, e))
AIO_TRACED(int, aio_cancel64, (int fd, struct aiocb64 *cb), (fd, cb), IOL_OP_AIO_CANCEL, iol_result(r, e))
#undef AIO_TRACED
