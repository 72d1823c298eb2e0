/* files.c — the process's files: one entry per absolute path, with the id its FILES record gives it.
 *
 * The table from path to entry is open addressing with linear probing, each slot an entry's address with the
 * top 16 bits of the path's hash above it (x86-64 user addresses fit in 48 bits). A probe reads an entry only
 * when those bits match, so the lookup of a new path (every file a metadata-heavy job creates) touches one
 * line of the table and no entry: a chained table read a random old entry for a third of them, and each such
 * read of scattered memory is a TLB miss, hundreds of ns on a virtual machine. A big table is asked for
 * transparent huge pages for the same reason.
 *
 * Lookups take no lock: slots are only ever filled (release store, after the entry is complete), and a full
 * table is replaced by one twice its size, published the same way; the old one is never freed, so a lookup
 * still probing it is safe (it may miss an entry added since, and then takes the lock and looks again).
 * Adding a path takes iol_g.lock, which also orders the FILES records in the log. An entry outlives a fork:
 * the child's new log gets the entry's FILES record when the child first counts something on it. */
#include "rt.h"
#include "sys.h"

#include <string.h>
#include <sys/mman.h>

struct iol_ftable {
    uint64_t mask; /* slots - 1 */
    uint64_t *slot;
};

#define TAG_MASK (~(uint64_t)0 << 48)
#define FIRST_SLOTS (1u << 12)
#define HUGE (2u << 20)

static uint64_t *slots_new(uint64_t slots)
{
    size_t n = slots * sizeof(uint64_t);
    if (n < HUGE)
        return iol_alloc(n);
    /* 2 MiB-aligned, so that the kernel can back it with huge pages where it does so on request */
    uint8_t *p = iol_sys_mmap(NULL, n + HUGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return NULL;
    uint8_t *a = (uint8_t *)(((uintptr_t)p + HUGE - 1) & ~(uintptr_t)(HUGE - 1));
    if (a > p)
        iol_sys_munmap(p, (size_t)(a - p));
    iol_sys_munmap(a + n, (size_t)(p + HUGE - a));
#ifdef MADV_HUGEPAGE
    iol_sys_madvise(a, n, MADV_HUGEPAGE); /* a hint: without it the table still works */
#endif
    return (uint64_t *)a;
}

static struct iol_ftable *table_new(uint64_t slots)
{
    struct iol_ftable *t = iol_alloc(sizeof *t);
    if (t == NULL || (t->slot = slots_new(slots)) == NULL)
        return NULL;
    t->mask = slots - 1;
    return t;
}

int iol_files_init(void)
{
    iol_g.ftable = table_new(FIRST_SLOTS);
    return iol_g.ftable != NULL ? 0 : -1;
}

uint64_t iol_file_prefetch(const char *abs, size_t len)
{
    uint64_t h = iol_hash(abs, len);
    const struct iol_ftable *t = __atomic_load_n(&iol_g.ftable, __ATOMIC_ACQUIRE);
    __builtin_prefetch(&t->slot[h & t->mask]);
    return h;
}

static inline struct iol_file *slot_file(uint64_t s)
{
    return (struct iol_file *)(uintptr_t)(s & ~TAG_MASK);
}

/* The entry for abs in table t, or NULL and (empty != NULL) the slot where it would go. */
static struct iol_file *probe(const struct iol_ftable *t, uint64_t h, const char *abs, size_t len, size_t *empty)
{
    for (size_t i = h & t->mask;; i = (i + 1) & t->mask) {
        uint64_t s = __atomic_load_n(&t->slot[i], __ATOMIC_ACQUIRE);
        if (s == 0) {
            if (empty != NULL)
                *empty = i;
            return NULL;
        }
        if (((s ^ h) & TAG_MASK) == 0) {
            struct iol_file *f = slot_file(s);
            if (f->hash == h && f->len == len && memcmp(f->path, abs, len) == 0)
                return f;
        }
    }
}

static struct iol_file *lookup(uint64_t h, const char *abs, size_t len)
{
    return probe(__atomic_load_n(&iol_g.ftable, __ATOMIC_ACQUIRE), h, abs, len, NULL);
}

/* Under iol_g.lock: a table twice the size of t with t's entries, published; NULL when out of memory. */
static struct iol_ftable *grow(struct iol_ftable *t)
{
    struct iol_ftable *g = table_new(2 * (t->mask + 1));
    if (g == NULL)
        return NULL;
    for (uint64_t i = 0; i <= t->mask; i++) {
        uint64_t s = t->slot[i];
        if (s == 0)
            continue;
        size_t k = slot_file(s)->hash & g->mask;
        while (g->slot[k] != 0)
            k = (k + 1) & g->mask;
        g->slot[k] = s;
    }
    __atomic_store_n(&iol_g.ftable, g, __ATOMIC_RELEASE);
    return g;
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

struct iol_file *iol_file_find(const char *abs, size_t len, uint64_t h)
{
    struct iol_thread *t = &iol_tls;
    struct iol_file *f;
    if (h == 0) {
        if ((f = last(t, abs, len)) != NULL)
            return f;
        h = iol_hash(abs, len);
    }
    f = recent(t, h, abs, len);
    if (f == NULL && (f = lookup(h, abs, len)) != NULL)
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
    uint32_t kind = __atomic_load_n(&f->kind, __ATOMIC_RELAXED);
    v->d = kind == IOL_KIND_OTHER ? IOLP_FILE_NOT_REGULAR : kind == IOL_KIND_OBJECT ? IOLP_FILE_OBJECT : 0;
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
                                      enum iol_kind kind, int rec)
{
    struct iol_file *f = lookup(h, abs, len);
    if (f != NULL)
        return f;
    iol_proc(t); /* the thread's index, for its FILE_REC (iol_proc_slow takes the lock) */
    iol_lock(&iol_g.lock);
    struct iol_ftable *tb = iol_g.ftable;
    size_t at;
    f = probe(tb, h, abs, len, &at); /* again: another thread may have added it, or grown the table */
    uint64_t n = (uint64_t)iol_g.next_file_id + 1;
    if (f == NULL && n * 2 > tb->mask + 1) { /* half full: a bigger table (or, without memory, a fuller one) */
        struct iol_ftable *g = grow(tb);
        if (g != NULL) {
            tb = g;
            probe(tb, h, abs, len, &at);
        }
    }
    /* From the thread's own space: no second lock (entries are never freed, as that space is not). */
    if (f == NULL && n < 0xFFFFFFF0u && n < tb->mask && (f = iol_thread_alloc(t, sizeof *f + len + 1)) != NULL) {
        if (((uintptr_t)f & TAG_MASK) != 0) { /* an address above 2^48: never from mmap without a hint */
            iol_unlock(&iol_g.lock);
            return NULL;
        }
        f->hash = h;
        f->id = (uint32_t)n;
        iol_g.next_file_id = (uint32_t)n;
        f->kind = (uint32_t)kind;
        f->len = (uint32_t)len;
        memcpy(f->path, abs, len);
        f->path[len] = '\0';
        f->mount = iol_mount_of(t, f->path, len);
        f->blksize = f->mount != NULL ? f->mount->blksize : 4096;
        iol_file_log(f);
        __atomic_store_n(&tb->slot[at], (uint64_t)(uintptr_t)f | (h & TAG_MASK), __ATOMIC_RELEASE);
        if (rec && kind != IOL_KIND_OTHER)
            iol_tfile_locked(t, f);
    }
    iol_unlock(&iol_g.lock);
    return f;
}

struct iol_file *iol_file_last(const char *abs, size_t len)
{
    return last(&iol_tls, abs, len);
}

struct iol_file *iol_file_get(struct iol_thread *t, const char *abs, size_t len, uint64_t h, enum iol_kind kind,
                              int rec)
{
    struct iol_file *f = h == 0 ? last(t, abs, len) : NULL;
    if (f == NULL) {
        if (h == 0)
            h = iol_hash(abs, len);
        f = recent(t, h, abs, len);
    }
    if (f == NULL) {
        f = lookup_or_add(t, h, abs, len, kind, rec);
        if (f == NULL)
            return NULL;
        remember(t, f);
    }
    if (kind != IOL_KIND_UNKNOWN && __atomic_load_n(&f->kind, __ATOMIC_RELAXED) == IOL_KIND_UNKNOWN)
        iol_file_set_kind(f, kind);
    return f;
}
