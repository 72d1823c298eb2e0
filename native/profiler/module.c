/* module.c — the records of the layers above POSIX (MPI-IO now; HDF5, PnetCDF and stdio later): one
 * MODULE_REC record per (thread, file, module), in process chunks of that module (the chunk header names it),
 * and MODULE_TEXT records for what is not a number (the hints an MPI-IO file was opened with).
 *
 * A thread finds its module records of a file through a two-level table indexed by the file id, as it finds
 * its FILE_REC (thread.c); the records are made under iol_g.lock, once per (thread, file, module). A layer's
 * wrapper names the file by its absolute path, so its record and the POSIX records of the same file share
 * the file id: a reader stacks the layers of a file without matching names. */
#include "rt.h"

#include <errno.h>
#include <string.h>

static struct iol_tmods *tmods(struct iol_thread *t, uint32_t id)
{
    if (id >= (1u << 24))
        return NULL;
    if (t->mtab == NULL && (t->mtab = iol_thread_alloc(t, 4096 * sizeof *t->mtab)) == NULL)
        return NULL;
    struct iol_tmods **page = t->mtab[id >> 12];
    if (page == NULL && (page = t->mtab[id >> 12] = iol_thread_alloc(t, 4096 * sizeof *page)) == NULL)
        return NULL;
    if (page[id & 4095] == NULL)
        page[id & 4095] = iol_thread_alloc(t, sizeof(struct iol_tmods));
    return page[id & 4095];
}

struct iol_tmod *iol_module_rec(struct iol_thread *t, struct iol_file *f, unsigned module)
{
    if (module == 0 || module >= IOL_MODULE_MAX || iol_module_nvals[module] == 0)
        return NULL;
    struct iol_tmods *ms = tmods(t, f->id);
    if (ms == NULL)
        return NULL;
    struct iol_tmod *m = &ms->m[module];
    if (IOL_LIKELY(m->v != NULL))
        return m;
    int saved = errno; /* growing the log may set errno: the program's must stay */
    size_t n = iol_module_nvals[module];
    iol_proc(t); /* the thread's index */
    iol_lock(&iol_g.lock);
    struct iol_stream *s = &iol_g.s_module[module];
    if (iol_file_log(f) == 0) {
        size_t size = sizeof(struct iolp_rec) + 8 * n;
        uint8_t *p = iol_stream_reserve(s, size);
        if (p != NULL) {
            struct iolp_rec *r = (struct iolp_rec *)p;
            r->id = f->id;
            r->thread = t->index - 1;
            iol_stream_commit(s, size);
            m->v = (uint64_t *)(p + sizeof *r);
        }
    }
    iol_unlock(&iol_g.lock);
    if (m->v == NULL) /* the log is full: counted in memory only (the log says records are missing) */
        m->v = iol_thread_alloc(t, 8 * n);
    errno = saved;
    return m->v != NULL ? m : NULL;
}

static size_t pad8(size_t n)
{
    return (n + 7) & ~(size_t)7;
}

void iol_module_text(struct iol_thread *t, struct iol_tmod *m, struct iol_file *f, unsigned module, unsigned what,
                     const char *text, size_t len)
{
    (void)t;
    uint64_t h = iol_hash(text, len) | 1; /* never 0, which means "none yet" */
    if (m->text_hash == h)
        return;
    size_t size = sizeof(struct iolp_var) + pad8(len);
    int saved = errno;
    iol_lock(&iol_g.lock);
    uint8_t *p = iol_file_log(f) == 0 ? iol_stream_reserve(&iol_g.s_modtext, size) : NULL;
    if (p != NULL) {
        struct iolp_var *v = (struct iolp_var *)p;
        v->a = f->id;
        v->b = module;
        v->c = (uint32_t)len;
        v->d = what;
        memcpy(p + sizeof *v, text, len);
        memset(p + sizeof *v + len, 0, pad8(len) - len);
        iol_stream_commit(&iol_g.s_modtext, size);
        m->text_hash = h;
    }
    iol_unlock(&iol_g.lock);
    errno = saved;
}
