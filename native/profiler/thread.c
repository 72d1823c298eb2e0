/* thread.c — per-thread state: the thread's PROC_REC record and its (thread, file) FILE_REC records.
 *
 * A thread finds its record of a file through a two-level table indexed by the file id (no lock, no hash);
 * the records themselves are taken from process-owned chunks under iol_g.lock, once per (thread, file), so
 * a program with many short-lived threads does not leave a chunk per thread behind. */
#include "rt.h"

#include <string.h>

__thread struct iol_thread iol_tls __attribute__((tls_model("initial-exec")));

#define RSIZE_FILE (8u + 8u * IOL_NFILE)
#define RSIZE_PROC (8u + 8u * IOL_NPROC)

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

uint64_t *iol_proc_slow(struct iol_thread *t)
{
    iol_lock(&iol_g.lock);
    assign_index(t);
    uint8_t *p = iol_stream_reserve(&iol_g.s_procrec, RSIZE_PROC);
    if (p != NULL) {
        struct iolp_rec *r = (struct iolp_rec *)p;
        r->id = t->index - 1;
        r->thread = 0;
        iol_stream_commit(&iol_g.s_procrec, RSIZE_PROC);
        t->proc = (uint64_t *)(p + sizeof *r);
    }
    iol_unlock(&iol_g.lock);
    if (t->proc == NULL) {
        static uint64_t nowhere[IOL_NPROC]; /* not even scratch memory: counts are dropped */
        t->proc = scratch(t, IOL_NPROC);
        if (t->proc == NULL)
            t->proc = nowhere;
    }
    return t->proc;
}

struct iol_tfile *iol_tfile_slow(struct iol_thread *t, struct iol_file *f)
{
    uint32_t id = f->id;
    if (id >= (1u << 24))
        return NULL;
    iol_proc(t); /* the thread's index */
    if (t->ftab == NULL && (t->ftab = iol_thread_alloc(t, 4096 * sizeof *t->ftab)) == NULL)
        return NULL;
    struct iol_tfile **page = t->ftab[id >> 12];
    if (page == NULL && (page = t->ftab[id >> 12] = iol_thread_alloc(t, 4096 * sizeof *page)) == NULL)
        return NULL;
    struct iol_tfile *tf = iol_thread_alloc(t, sizeof *tf);
    if (tf == NULL)
        return NULL;
    iol_lock(&iol_g.lock);
    uint8_t *p = NULL;
    if (iol_file_log(f) == 0)
        p = iol_stream_reserve(&iol_g.s_filerec, RSIZE_FILE);
    if (p != NULL) {
        struct iolp_rec *r = (struct iolp_rec *)p;
        r->id = id;
        r->thread = t->index - 1;
        iol_stream_commit(&iol_g.s_filerec, RSIZE_FILE);
        tf->v = (uint64_t *)(p + sizeof *r);
    }
    iol_unlock(&iol_g.lock);
    if (tf->v == NULL && (tf->v = scratch(t, IOL_NFILE)) == NULL)
        return NULL;
    tf->read_end = tf->write_end = tf->any_end = -1;
    page[id & 4095] = tf;
    return tf;
}

void iol_thread_reset(struct iol_thread *t)
{
    t->index = 0;
    t->proc = NULL;
    t->ftab = NULL;
    t->trace = NULL;
    t->dir_mount = NULL;
}
