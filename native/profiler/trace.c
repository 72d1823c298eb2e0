/* trace.c — one TRACE record per call (IOLENS_TRACE=1), appended to the thread's own chunk.
 *
 * A full chunk is unmapped (its records are in the file) and the thread takes a new one, so the process's
 * memory stays bounded while the log grows. When the log cannot grow (file system full, address space
 * exhausted) or the trace has reached IOLENS_TRACE_MAX bytes, the event is counted in trace_dropped and
 * flag 16 is set: never lost silently.
 *
 * A record names its file by id. A call on a path that is no file of the log (mkdir, a stat of a directory,
 * a path that does not exist) names it by a path id instead: a PATHS record, written once per path, that
 * the per-file counters never see. */
#include "wrap.h"

#include <stdlib.h>
#include <string.h>

/* ---- the trace's size limit (IOLENS_TRACE_MAX: bytes, k/m/g/t suffixes; unset or 0: none) ---- */

static uint64_t max_chunks;  /* TRACE chunks one log may hold; 0: no limit */
static int max_read;
static uint64_t chunks_gen, chunks_used; /* TRACE chunks of the log of generation chunks_gen */

static void read_max(void)
{
    const char *v = getenv("IOLENS_TRACE_MAX");
    if (v == NULL || *v == '\0')
        return;
    char *end;
    unsigned long long n = strtoull(v, &end, 10);
    int shift = 0;
    switch (*end) {
    case 'k': case 'K': shift = 10; break;
    case 'm': case 'M': shift = 20; break;
    case 'g': case 'G': shift = 30; break;
    case 't': case 'T': shift = 40; break;
    default: break;
    }
    if (n == 0)
        return;
    uint64_t bytes = shift != 0 && n > (UINT64_MAX >> shift) ? UINT64_MAX : (uint64_t)n << shift;
    /* Whole chunks, at least one: a thread's records go to a chunk of its own. */
    max_chunks = bytes / IOLP_CHUNK_SIZE + (bytes % IOLP_CHUNK_SIZE != 0);
}

static void dropped(void)
{
    uint64_t n = __atomic_add_fetch(&iol_g.hdr->trace_dropped, 1, __ATOMIC_RELAXED);
    if (n == 1)
        iol_log_set_flag(IOLP_TRACE_CUT);
}

static struct iolp_chunk *next_chunk(struct iol_thread *t)
{
    /* After a failure, try again only every 1024 events: growing a full file system costs a syscall. */
    static uint64_t fail_at;
    uint64_t lost = __atomic_load_n(&iol_g.hdr->trace_dropped, __ATOMIC_RELAXED);
    if (lost != 0 && lost - __atomic_load_n(&fail_at, __ATOMIC_RELAXED) < 1024)
        return NULL;
    iol_proc(t);
    iol_lock(&iol_g.lock);
    if (!max_read) {
        read_max();
        max_read = 1;
    }
    if (chunks_gen != iol_g.gen) { /* a fork child's new log */
        chunks_gen = iol_g.gen;
        chunks_used = 0;
    }
    struct iolp_chunk *c = NULL;
    if (max_chunks == 0 || chunks_used < max_chunks) {
        c = iol_chunk_new(IOLP_TRACE, t->index - 1, sizeof(struct iolp_trace));
        chunks_used += c != NULL;
    }
    iol_unlock(&iol_g.lock);
    if (c == NULL) {
        __atomic_store_n(&fail_at, lost, __ATOMIC_RELAXED);
        return NULL;
    }
    if (t->trace != NULL)
        iol_chunk_release(t->trace);
    t->trace = c;
    return c;
}

/* ---- PATHS: names of traced paths that are not files of the log ---- */

struct tpath {
    uint64_t hash;
    uint64_t gen;    /* the log it was written to: an entry of an older log (a fork parent's) is free */
    uint32_t id, len;
    char path[];
};

#define PATH_SLOTS (1u << 16)
static struct tpath **path_tab;  /* open addressing on the hash; filled to 3/4 at most */
static uint64_t paths_gen;
static uint32_t paths_n, paths_next;
static struct iol_stream s_paths;

static size_t pad8(size_t n)
{
    return (n + 7) & ~(size_t)7;
}

/* Under iol_g.lock: the PATHS record of abs in this log, its id (0: the log is full). */
static uint32_t path_record(const char *abs, size_t len)
{
    if (paths_gen != iol_g.gen) {
        paths_gen = iol_g.gen;
        paths_n = paths_next = 0;
        s_paths = (struct iol_stream){ NULL, IOLP_PATHS, 0, 0 };
    }
    if (path_tab == NULL)
        path_tab = iol_alloc(PATH_SLOTS * sizeof *path_tab);
    uint64_t h = iol_hash(abs, len);
    size_t i = path_tab != NULL ? (size_t)(h & (PATH_SLOTS - 1)) : 0;
    struct tpath *p;
    for (; path_tab != NULL && (p = path_tab[i]) != NULL && p->gen == paths_gen; i = (i + 1) & (PATH_SLOTS - 1))
        if (p->hash == h && p->len == len && memcmp(p->path, abs, len) == 0)
            return p->id;
    if (paths_next >= IOLP_PATH_ID - 1)
        return 0;
    size_t size = sizeof(struct iolp_var) + pad8(len);
    uint8_t *r = iol_stream_reserve(&s_paths, size);
    if (r == NULL)
        return 0;
    uint32_t id = IOLP_PATH_ID | ++paths_next;
    struct iolp_var *v = (struct iolp_var *)r;
    *v = (struct iolp_var){ id, 0, (uint32_t)len, 0 };
    memcpy(r + sizeof *v, abs, len);
    memset(r + sizeof *v + len, 0, pad8(len) - len);
    iol_stream_commit(&s_paths, size);
    /* Past 3/4 of the table the path is not remembered: a later call on it writes another record. */
    if (path_tab != NULL && paths_n < PATH_SLOTS / 4 * 3 && (p = iol_alloc(sizeof *p + len)) != NULL) {
        *p = (struct tpath){ h, paths_gen, id, (uint32_t)len };
        memcpy(p->path, abs, len);
        path_tab[i] = p;
        paths_n++;
    }
    return id;
}

/* The id a trace record gives the path of the call t is in: the path's file when the log has one (a
 * directory opened by name, a file a failed call named), else its PATHS record. */
static uint32_t path_id(struct iol_thread *t)
{
    const struct iol_pcall *c = t->tpath;
    struct iol_file *f = iol_file_find(c->abs, (size_t)c->len, c->hash);
    uint32_t id = 0;
    iol_lock(&iol_g.lock);
    if (f != NULL && iol_file_log(f) == 0)
        id = f->id;
    else if (f == NULL)
        id = path_record(c->abs, (size_t)c->len);
    iol_unlock(&iol_g.lock);
    return id;
}

struct iolp_trace *iol_trace_add(struct iol_thread *t, int op, uint32_t file_id, uint64_t t0, uint64_t t1, uint64_t off,
               uint64_t size, int64_t result)
{
    if (file_id == 0 && t0 != 0 && t0 == t->tpath_t0) /* the call named a path (iol_pcall_pre) */
        file_id = path_id(t);
    t->tpath_t0 = 0;
    struct iolp_chunk *c = t->trace;
    if (c == NULL || c->used + sizeof(struct iolp_trace) > IOLP_CHUNK_ROOM) {
        c = next_chunk(t);
        if (c == NULL) {
            dropped();
            return NULL;
        }
    }
    struct iolp_trace *e = (struct iolp_trace *)((uint8_t *)c + IOLP_CHUNK_HEAD + c->used);
    e->start_ns = iol_ns(iol_g.clk.base, t0);
    e->dur_ns = iol_ns(t0, t1);
    e->offset = off;
    e->size = size;
    e->file_id = file_id;
    e->op = (uint16_t)op;
    e->thread = (uint16_t)(t->index - 1);
    e->result = result;
    __atomic_store_n(&c->used, c->used + sizeof *e, __ATOMIC_RELEASE);
    return e;
}

/* The trace record of t's call that started at t0, written without a file, names f (a directory: the
 * accounting gives calls on it no file id). */
void iol_trace_set_file(struct iol_thread *t, struct iol_file *f, uint64_t t0)
{
    struct iolp_chunk *c = t->trace;
    if (c == NULL || c->used < sizeof(struct iolp_trace) || f == NULL)
        return;
    struct iolp_trace *e = (struct iolp_trace *)((uint8_t *)c + IOLP_CHUNK_HEAD + c->used - sizeof *e);
    if (e->file_id != 0 || e->start_ns != iol_ns(iol_g.clk.base, t0))
        return;
    iol_lock(&iol_g.lock);
    if (iol_file_log(f) == 0)
        __atomic_store_n(&e->file_id, f->id, __ATOMIC_RELAXED);
    iol_unlock(&iol_g.lock);
}
