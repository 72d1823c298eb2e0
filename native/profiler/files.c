/* files.c — the process's files: one entry per absolute path, with the id its FILES record gives it.
 *
 * Lookups take no lock (a hash table whose chains only grow, each new entry published with a release
 * store); adding a path takes iol_g.lock, which also orders the FILES records in the log. An entry outlives
 * a fork: the child's new log gets the entry's FILES record when the child first counts something on it. */
#include "rt.h"

#include <string.h>

/* The entry for abs in the chain that starts at head. */
static struct iol_file *walk(struct iol_file *f, uint64_t h, const char *abs, size_t len)
{
    for (; f != NULL; f = __atomic_load_n(&f->next, __ATOMIC_ACQUIRE))
        if (f->hash == h && f->len == len && memcmp(f->path, abs, len) == 0)
            return f;
    return NULL;
}

static struct iol_file **bucket(uint64_t h)
{
    return &iol_g.buckets[h & (IOL_BUCKETS - 1)];
}

static struct iol_file *recent(const struct iol_thread *t, uint64_t h, const char *abs, size_t len)
{
    for (int i = 0; i < 4; i++) {
        struct iol_file *f = t->recent[i];
        if (f != NULL && f->hash == h && f->len == len && memcmp(f->path, abs, len) == 0)
            return f;
    }
    return NULL;
}

static void remember(struct iol_thread *t, struct iol_file *f)
{
    t->recent[t->recent_next++ & 3] = f;
}

/* The path this thread named last, compared without a hash: an open, a stat and an unlink of one new file
 * (and most sequences of calls on a path) find it here. */
static inline struct iol_file *last(const struct iol_thread *t, const char *abs, size_t len)
{
    struct iol_file *f = t->recent[(t->recent_next - 1) & 3];
    if (f != NULL && f->len == len && memcmp(f->path, abs, len) == 0)
        return f;
    return NULL;
}

struct iol_file *iol_file_find(const char *abs, size_t len)
{
    struct iol_thread *t = &iol_tls;
    struct iol_file *f = last(t, abs, len);
    if (f != NULL)
        return f;
    uint64_t h = iol_hash(abs, len);
    f = recent(t, h, abs, len);
    if (f == NULL && (f = walk(__atomic_load_n(bucket(h), __ATOMIC_ACQUIRE), h, abs, len)) != NULL)
        remember(t, f);
    return f;
}

static size_t pad8(size_t n)
{
    return (n + 7) & ~(size_t)7;
}

int iol_file_log(struct iol_file *f)
{
    if (f->logged_gen == iol_g.gen)
        return 0;
    if (f->mount != NULL)
        iol_mount_log(f->mount);
    size_t size = sizeof(struct iolp_var) + pad8(f->len);
    uint8_t *p = iol_stream_reserve(&iol_g.s_files, size);
    if (p == NULL)
        return -1;
    struct iolp_var *v = (struct iolp_var *)p;
    v->a = f->id;
    v->b = f->mount != NULL ? f->mount->id : 0;
    v->c = f->len;
    v->d = __atomic_load_n(&f->kind, __ATOMIC_RELAXED) == IOL_KIND_OTHER ? IOLP_FILE_NOT_REGULAR : 0;
    memcpy(p + sizeof *v, f->path, f->len);
    memset(p + sizeof *v + f->len, 0, pad8(f->len) - f->len);
    iol_stream_commit(&iol_g.s_files, size);
    f->rec_flags = &v->d;
    f->logged_gen = iol_g.gen;
    return 0;
}

void iol_file_set_kind(struct iol_file *f, enum iol_kind kind)
{
    uint32_t old = IOL_KIND_UNKNOWN;
    if (kind == IOL_KIND_UNKNOWN ||
        !__atomic_compare_exchange_n(&f->kind, &old, (uint32_t)kind, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
        return;
    if (kind == IOL_KIND_OTHER) {
        iol_lock(&iol_g.lock);
        if (f->logged_gen == iol_g.gen && f->rec_flags != NULL)
            __atomic_fetch_or(f->rec_flags, (uint32_t)IOLP_FILE_NOT_REGULAR, __ATOMIC_RELAXED);
        iol_unlock(&iol_g.lock);
    }
}

/* The table's entry for abs, added (with its FILES record) when there is none. */
static struct iol_file *lookup_or_add(struct iol_thread *t, uint64_t h, const char *abs, size_t len,
                                      enum iol_kind kind)
{
    struct iol_file **head = bucket(h);
    struct iol_file *first = __atomic_load_n(head, __ATOMIC_ACQUIRE);
    struct iol_file *f = walk(first, h, abs, len);
    if (f != NULL)
        return f;
    iol_lock(&iol_g.lock);
    /* Entries go in at the head: only those added since the walk above need a look. */
    struct iol_file *now = *head;
    for (struct iol_file *g = now; g != first && f == NULL; g = g->next)
        if (g->hash == h && g->len == len && memcmp(g->path, abs, len) == 0)
            f = g;
    if (f == NULL && iol_g.next_file_id < 0xFFFFFFF0u && (f = iol_alloc(sizeof *f + len + 1)) != NULL) {
        f->hash = h;
        f->id = ++iol_g.next_file_id;
        f->kind = (uint32_t)kind;
        f->len = (uint32_t)len;
        memcpy(f->path, abs, len);
        f->path[len] = '\0';
        f->mount = iol_mount_of(t, f->path, len);
        f->blksize = f->mount != NULL ? f->mount->blksize : 4096;
        iol_file_log(f);
        f->next = now;
        __atomic_store_n(head, f, __ATOMIC_RELEASE);
    }
    iol_unlock(&iol_g.lock);
    return f;
}

struct iol_file *iol_file_last(const char *abs, size_t len)
{
    return last(&iol_tls, abs, len);
}

struct iol_file *iol_file_get(struct iol_thread *t, const char *abs, size_t len, enum iol_kind kind)
{
    struct iol_file *f = last(t, abs, len);
    uint64_t h = 0;
    if (f == NULL) {
        h = iol_hash(abs, len);
        f = recent(t, h, abs, len);
    }
    if (f == NULL) {
        f = lookup_or_add(t, h, abs, len, kind);
        if (f == NULL)
            return NULL;
        remember(t, f);
    }
    if (kind != IOL_KIND_UNKNOWN && __atomic_load_n(&f->kind, __ATOMIC_RELAXED) == IOL_KIND_UNKNOWN)
        iol_file_set_kind(f, kind);
    return f;
}
