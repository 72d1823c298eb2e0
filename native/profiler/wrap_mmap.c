/* wrap_mmap.c — mappings of files: mmap(64) of a descriptor counts on its file (POSIX_MMAPS) and in MMAPS;
 * munmap counts (MUNMAPS) when it unmaps a file mapping the runtime saw made; msync counts in MSYNCS.
 * Anonymous mappings (malloc's own go through the C library, not here) are not I/O: passed through. */
#include "wrap.h"

#include <sys/mman.h>

/* Start addresses of file mappings, so that munmap of anonymous memory (most of them) is not counted. Open
 * addressing, a small lock: mmap and munmap are system calls that cost far more than either. */
#define MAPS 4096
static uintptr_t maps[MAPS];
static struct iol_lock maps_lock;
#define TOMB ((uintptr_t)1)

void iol_mmap_after_fork(void)
{
    maps_lock.v = 0;
}

static size_t slot(uintptr_t a)
{
    return (size_t)((a >> 12) * 0x9E3779B97F4A7C15ull >> 52) & (MAPS - 1);
}

static void maps_add(uintptr_t a)
{
    iol_lock(&maps_lock);
    for (size_t i = slot(a), n = 0; n < MAPS; i = (i + 1) & (MAPS - 1), n++)
        if (maps[i] == 0 || maps[i] == TOMB || maps[i] == a) {
            maps[i] = a;
            break;
        }
    iol_unlock(&maps_lock);
}

static int maps_remove(uintptr_t a)
{
    int found = 0;
    iol_lock(&maps_lock);
    for (size_t i = slot(a), n = 0; n < MAPS && maps[i] != 0; i = (i + 1) & (MAPS - 1), n++)
        if (maps[i] == a) {
            maps[i] = TOMB;
            found = 1;
            break;
        }
    iol_unlock(&maps_lock);
    return found;
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
    if (r != MAP_FAILED)
        maps_add((uintptr_t)r);
    iol_acct_meta(t, &(struct iol_meta){ IOL_OP_MMAP, IOL_F_POSIX_MMAPS, IOL_P_MMAPS, d == NULL, d != NULL ? d->file : NULL,
                                         (uint64_t)off, len },
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
    int file = maps_remove((uintptr_t)addr);
    uint64_t t0 = iol_t0(file);
    int r = iol_real.munmap(addr, len);
    int e = *ep;
    if (file)
        iol_acct_meta(t, &(struct iol_meta){ IOL_OP_MUNMAP, -1, IOL_P_MUNMAPS, 0, NULL, 0, len }, r != 0,
                      iol_result(r, e), t0);
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
    uint64_t t0 = iol_t0(1);
    int r = iol_real.msync(addr, len, flags);
    int e = *ep;
    iol_acct_meta(t, &(struct iol_meta){ IOL_OP_MSYNC, -1, IOL_P_MSYNCS, 0, NULL, 0, len }, r != 0,
                  iol_result(r, e), t0);
    *ep = e;
    iol_leave(t);
    return r;
}
