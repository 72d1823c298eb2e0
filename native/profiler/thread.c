/* thread.c — per-thread state: the thread's PROC_REC record and its (thread, file) FILE_REC and FILE_DATA
 * records.
 *
 * A thread finds its records of a file through a two-level table indexed by the file id (no lock, no hash);
 * the records themselves are taken from process-owned chunks under iol_g.lock, once per (thread, file) and
 * kind, so a program with many short-lived threads does not leave a chunk per thread behind. */
#include "rt.h"

#include <errno.h>
#include <string.h>

__thread struct iol_thread iol_tls __attribute__((tls_model("initial-exec")));

/* Where counts go when the log cannot take another record (the file system is full): kept, not logged. */
static uint64_t *scratch(struct iol_thread *t, size_t n)
{
    return iol_thread_alloc(t, n * sizeof(uint64_t));
}

static void assign_index(struct iol_thread *t)
{
    if (t->index == 0)
        t->index = ++iol_g.nthreads;
}

/* A counter record (head a, b, then n values) appended to stream s, under iol_g.lock: its values, or NULL
 * when the log cannot grow. */
static uint64_t *new_record(struct iol_stream *s, uint32_t a, uint32_t b, size_t n)
{
    size_t size = sizeof(struct iolp_rec) + 8 * n;
    uint8_t *p = iol_stream_reserve(s, size);
    if (p == NULL)
        return NULL;
    struct iolp_rec *r = (struct iolp_rec *)p;
    r->id = a;
    r->thread = b;
    iol_stream_commit(s, size);
    return (uint64_t *)(p + sizeof *r);
}

/* The slow paths below may grow the log (fallocate, which fails with EOPNOTSUPP where the zero-filling
 * fallback then works, mmap, ENOSPC): they keep the program's errno, as wrappers of untracked calls count
 * through them without saving it (a failed read of a pipe must report its own errno). */

uint64_t *iol_proc_slow(struct iol_thread *t)
{
    int saved = errno;
    iol_lock(&iol_g.lock);
    assign_index(t);
    t->proc = new_record(&iol_g.s_procrec, t->index - 1, 0, IOL_NPROC);
    iol_unlock(&iol_g.lock);
    if (t->proc == NULL) {
        static uint64_t nowhere[IOL_NPROC]; /* not even scratch memory: counts are dropped */
        t->proc = scratch(t, IOL_NPROC);
        if (t->proc == NULL)
            t->proc = nowhere;
    }
    errno = saved;
    return t->proc;
}

struct iol_tfile *iol_tfile_locked(struct iol_thread *t, struct iol_file *f)
{
    uint32_t id = f->id;
    if (id >= (1u << 24))
        return NULL;
    if (t->ftab == NULL && (t->ftab = iol_thread_alloc(t, 4096 * sizeof *t->ftab)) == NULL)
        return NULL;
    struct iol_tfile **page = t->ftab[id >> 12];
    if (page == NULL && (page = t->ftab[id >> 12] = iol_thread_alloc(t, 4096 * sizeof *page)) == NULL)
        return NULL;
    struct iol_tfile *tf = iol_thread_alloc(t, sizeof *tf);
    if (tf == NULL)
        return NULL;
    if (iol_file_log(f) == 0)
        tf->v = new_record(&iol_g.s_filerec, id, t->index - 1, IOL_NFILE);
    if (tf->v == NULL && (tf->v = scratch(t, IOL_NFILE)) == NULL)
        return NULL;
    page[id & 4095] = tf;
    return tf;
}

struct iol_tfile *iol_tfile_slow(struct iol_thread *t, struct iol_file *f)
{
    int saved = errno;
    iol_proc(t); /* the thread's index */
    iol_lock(&iol_g.lock);
    struct iol_tfile *tf = iol_tfile_locked(t, f);
    iol_unlock(&iol_g.lock);
    errno = saved;
    return tf;
}

struct iol_tdata *iol_tfile_data_slow(struct iol_thread *t, struct iol_tfile *tf, struct iol_file *f)
{
    int saved = errno;
    struct iol_tdata *td = iol_thread_alloc(t, sizeof *td);
    if (td != NULL) {
        iol_lock(&iol_g.lock);
        /* The FILES record is in this log already (the FILE_REC's), unless the log could not take it. */
        if (iol_file_log(f) == 0)
            td->v = new_record(&iol_g.s_filedata, f->id, t->index - 1, IOL_NDATA);
        iol_unlock(&iol_g.lock);
        if (td->v == NULL && (td->v = scratch(t, IOL_NDATA)) == NULL)
            td = NULL;
    }
    if (td != NULL) {
        td->read_end = td->write_end = td->any_end = -1;
        tf->d = td;
    }
    errno = saved;
    return td;
}

void iol_thread_reset(struct iol_thread *t)
{
    t->index = 0;
    t->proc = NULL;
    t->ftab = NULL;
    t->trace = NULL;
    t->dir_mount = NULL;
    t->mtab = NULL;
}
