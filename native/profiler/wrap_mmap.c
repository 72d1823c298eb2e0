/* wrap_mmap.c — mappings of files: mmap(64) of a descriptor counts on its file (POSIX_MMAPS) and in MMAPS;
 * munmap (MUNMAPS) and msync (MSYNCS) count when their range meets a file mapping the runtime saw made.
 * Anonymous mappings (malloc's own go through the C library, not here) are not I/O: passed through. */
#include "wrap.h"

#include <sys/mman.h>
#include <unistd.h>

/* The address ranges of the file mappings the runtime saw made, so that munmap and msync of anonymous
 * memory (most of them) are not counted. A small array and a lock: mmap and munmap are system calls that
 * cost far more than a scan of it, and with no file mapping left munmap does not even take the lock. When
 * the array is full, a new file mapping (or the far piece of one split by a munmap in its middle) is not
 * remembered: MMAPS_UNTRACKED counts it, and its munmap and msync are not counted. */
#define MAPS 4096
struct range {
    uintptr_t lo, hi;
};
static struct range maps[MAPS];
static uint32_t n_maps;
static struct iol_lock maps_lock;
static uintptr_t page_mask;

void iol_mmap_after_fork(void)
{
    maps_lock.v = 0;
}

static uintptr_t range_end(uintptr_t a, size_t len)
{
    if (page_mask == 0) {
        long pg = sysconf(_SC_PAGESIZE);
        page_mask = (uintptr_t)(pg > 0 ? pg : 4096) - 1;
    }
    uintptr_t e = a + len;
    return e < a ? UINTPTR_MAX : (e + page_mask) & ~page_mask;
}

static int maps_push(uintptr_t lo, uintptr_t hi)
{
    if (n_maps >= MAPS)
        return -1;
    maps[n_maps] = (struct range){ lo, hi };
    __atomic_store_n(&n_maps, n_maps + 1, __ATOMIC_RELAXED);
    return 0;
}

/* Under maps_lock: [lo, hi) is no longer mapped. 1 when it met a file mapping; *lost: pieces of one that
 * could not be kept. */
static int maps_cut(uintptr_t lo, uintptr_t hi, int *lost)
{
    int met = 0;
    for (uint32_t i = 0; i < n_maps;) {
        struct range *r = &maps[i];
        if (r->hi <= lo || r->lo >= hi) {
            i++;
            continue;
        }
        met = 1;
        if (lo <= r->lo && hi >= r->hi) { /* all of it: the last entry takes its place */
            *r = maps[n_maps - 1];
            __atomic_store_n(&n_maps, n_maps - 1, __ATOMIC_RELAXED);
            continue;
        }
        if (lo > r->lo && hi < r->hi) { /* a hole in the middle: two pieces */
            uintptr_t end = r->hi;
            r->hi = lo;
            *lost += maps_push(hi, end) != 0;
        } else if (lo <= r->lo) {
            r->lo = hi;
        } else {
            r->hi = lo;
        }
        i++;
    }
    return met;
}

static int maps_add(uintptr_t lo, uintptr_t hi)
{
    int lost = 0;
    iol_lock(&maps_lock);
    maps_cut(lo, hi, &lost); /* MAP_FIXED over an older mapping replaces it */
    lost += maps_push(lo, hi) != 0;
    iol_unlock(&maps_lock);
    return lost;
}

static int maps_remove(uintptr_t lo, uintptr_t hi, int *lost)
{
    if (__atomic_load_n(&n_maps, __ATOMIC_RELAXED) == 0)
        return 0;
    iol_lock(&maps_lock);
    int met = maps_cut(lo, hi, lost);
    iol_unlock(&maps_lock);
    return met;
}

static int maps_meet(uintptr_t lo, uintptr_t hi)
{
    if (__atomic_load_n(&n_maps, __ATOMIC_RELAXED) == 0)
        return 0;
    int met = 0;
    iol_lock(&maps_lock);
    for (uint32_t i = 0; i < n_maps && !met; i++)
        met = maps[i].hi > lo && maps[i].lo < hi;
    iol_unlock(&maps_lock);
    return met;
}

static void *mmap_common(struct iol_thread *t, void *addr, size_t len, int prot, int flags, int fd, off64_t off,
                         int is64)
{
    int *ep = &errno;
    int e0 = *ep;
    struct iol_desc *d = iol_fd_io(t, fd);
    uint64_t t0 = iol_t0(d != NULL);
    *ep = e0;
    void *r = is64 ? iol_real.mmap64(addr, len, prot, flags, fd, off) : iol_real.mmap(addr, len, prot, flags, fd, (off_t)off);
    int e = *ep;
    if (r != MAP_FAILED && maps_add((uintptr_t)r, range_end((uintptr_t)r, len)) != 0)
        iol_proc(t)[IOL_P_MMAPS_UNTRACKED]++;
    iol_acct_meta(t, &(struct iol_meta){ IOL_OP_MMAP, IOL_F_POSIX_MMAPS, IOL_P_MMAPS, d == NULL, d != NULL ? d->file : NULL,
                                         (uint64_t)off, len, IOL_META_POSIX },
                  r == MAP_FAILED, r == MAP_FAILED ? -(int64_t)e : 0, t0);
    *ep = e;
    iol_leave(t);
    return r;
}

IOL_EXPORT void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
    if ((flags & MAP_ANONYMOUS) || fd < 0)
        return IOL_REAL(mmap)(addr, len, prot, flags, fd, off);
    struct iol_thread *t = iol_enter();
    if (t == NULL)
        return IOL_REAL(mmap)(addr, len, prot, flags, fd, off);
    return mmap_common(t, addr, len, prot, flags, fd, off, 0);
}

IOL_EXPORT void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off64_t off)
{
    if ((flags & MAP_ANONYMOUS) || fd < 0)
        return IOL_REAL(mmap64)(addr, len, prot, flags, fd, off);
    struct iol_thread *t = iol_enter();
    if (t == NULL)
        return IOL_REAL(mmap64)(addr, len, prot, flags, fd, off);
    return mmap_common(t, addr, len, prot, flags, fd, off, 1);
}

IOL_EXPORT int munmap(void *addr, size_t len)
{
    struct iol_thread *t = iol_enter();
    if (t == NULL)
        return IOL_REAL(munmap)(addr, len);
    int *ep = &errno;
    int e0 = *ep;
    int lost = 0;
    /* Forgotten before the call: another thread may map the range again as soon as it is unmapped. */
    int file = maps_remove((uintptr_t)addr, range_end((uintptr_t)addr, len), &lost);
    if (lost)
        iol_proc(t)[IOL_P_MMAPS_UNTRACKED] += (uint64_t)lost;
    uint64_t t0 = iol_t0(file);
    *ep = e0;
    int r = iol_real.munmap(addr, len);
    int e = *ep;
    if (file)
        iol_acct_meta(t, &(struct iol_meta){ IOL_OP_MUNMAP, -1, IOL_P_MUNMAPS, 0, NULL, 0, len, IOL_META_POSIX },
                      r != 0, iol_result(r, e), t0);
    *ep = e;
    iol_leave(t);
    return r;
}

IOL_EXPORT int msync(void *addr, size_t len, int flags)
{
    struct iol_thread *t = iol_enter();
    if (t == NULL)
        return IOL_REAL(msync)(addr, len, flags);
    int *ep = &errno;
    int file = maps_meet((uintptr_t)addr, range_end((uintptr_t)addr, len));
    uint64_t t0 = iol_t0(file);
    int r = iol_real.msync(addr, len, flags);
    int e = *ep;
    if (file)
        iol_acct_meta(t, &(struct iol_meta){ IOL_OP_MSYNC, -1, IOL_P_MSYNCS, 0, NULL, 0, len, IOL_META_POSIX }, r != 0,
                      iol_result(r, e), t0);
    *ep = e;
    iol_leave(t);
    return r;
}
