/* fdtab.c — descriptor -> what the runtime knows of it, a flat array indexed by the descriptor.
 *
 * Entries: NULL (not seen), IOL_UNTRACKED (a socket, pipe, excluded path…), or a struct iol_desc shared by
 * the descriptors dup() made of one open. A descriptor the runtime did not see opened (inherited across
 * exec, made by socket() or pipe()) is identified once, on its first use: fstat, and for a regular file
 * readlink of /proc/self/fd/N. An open() does not fstat (a syscall costs ~0.5 us on a VM): a file's type is
 * learnt from the program's own fstat, or checked on the descriptor's first read or write. */
#include "rt.h"
#include "sys.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>

void iol_fdtab_init(void)
{
    struct rlimit rl;
    uint64_t cap = IOL_FD_CAP_MAX;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_max != RLIM_INFINITY && rl.rlim_max < cap)
        cap = rl.rlim_max < 1024 ? 1024 : rl.rlim_max;
    /* Reserved, not committed: only the pages of descriptors in use are ever touched. */
    void *p = iol_sys_mmap(NULL, cap * sizeof(struct iol_desc *), PROT_READ | PROT_WRITE,
                           MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) {
        iol_g.fdtab = NULL;
        iol_g.fd_cap = 0;
        return;
    }
    iol_g.fdtab = p;
    iol_g.fd_cap = (uint32_t)cap;
}

struct iol_desc *iol_desc_new(struct iol_thread *t, struct iol_file *f, uint32_t state, int64_t offset)
{
    struct iol_desc *d = t->free_desc;
    if (d != NULL)
        t->free_desc = d->next_free;
    else if ((d = iol_thread_alloc(t, sizeof *d)) == NULL)
        return NULL;
    d->file = f;
    d->offset = offset;
    d->refs = 1;
    d->state = state;
    d->next_free = NULL;
    return d;
}

void iol_desc_release(struct iol_thread *t, struct iol_desc *d)
{
    if ((uintptr_t)d <= (uintptr_t)IOL_UNTRACKED)
        return;
    if (__atomic_sub_fetch(&d->refs, 1, __ATOMIC_ACQ_REL) == 0) {
        d->next_free = t->free_desc;
        t->free_desc = d;
    }
}

void iol_fd_install(int fd, struct iol_desc *d)
{
    if ((unsigned)fd >= iol_g.fd_cap) {
        iol_desc_release(&iol_tls, d);
        return;
    }
    struct iol_desc *old = __atomic_exchange_n(&iol_g.fdtab[fd], d, __ATOMIC_ACQ_REL);
    iol_desc_release(&iol_tls, old);
    if (fd > __atomic_load_n(&iol_g.fd_max, __ATOMIC_RELAXED))
        __atomic_store_n(&iol_g.fd_max, fd, __ATOMIC_RELAXED);
}

struct iol_desc *iol_fd_take(int fd)
{
    if ((unsigned)fd >= iol_g.fd_cap)
        return NULL;
    return __atomic_exchange_n(&iol_g.fdtab[fd], NULL, __ATOMIC_ACQ_REL);
}

static void learn_type(struct iol_desc *d, unsigned mode, int64_t size)
{
    int regular = S_ISREG(mode);
    iol_file_set_kind(d->file, regular ? IOL_KIND_REGULAR : IOL_KIND_OTHER);
    uint32_t state = IOL_DESC_CHECKED | (regular ? IOL_DESC_REGULAR : 0);
    if (regular && (d->state & IOL_DESC_APPEND))
        __atomic_store_n(&d->offset, size, __ATOMIC_RELAXED); /* appends go to the end */
    __atomic_fetch_or(&d->state, state, __ATOMIC_RELEASE);
}

void iol_desc_seen_stat(struct iol_desc *d, unsigned mode, int64_t size)
{
    if ((uintptr_t)d > (uintptr_t)IOL_UNTRACKED && !(d->state & IOL_DESC_CHECKED))
        learn_type(d, mode, size);
}

/* First sight of a descriptor the runtime did not open. */
static struct iol_desc *probe(struct iol_thread *t, int fd)
{
    struct stat st;
    if (iol_sys_fstat(fd, &st) != 0)
        return NULL; /* not open: nothing to remember */
    struct iol_desc *d = IOL_UNTRACKED;
    if (S_ISREG(st.st_mode) || S_ISDIR(st.st_mode)) {
        char link[32], path[PATH_MAX];
        snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
        ssize_t n = iol_sys_readlinkat(AT_FDCWD, link, path, sizeof path - 1);
        if (n > 0 && path[0] == '/') {
            path[n] = '\0';
            static const char deleted[] = " (deleted)";
            size_t dl = sizeof deleted - 1;
            if (st.st_nlink == 0 && (size_t)n > dl && memcmp(path + n - dl, deleted, dl) == 0)
                n -= (ssize_t)dl;
            if (!iol_path_excluded(path, (size_t)n)) {
                int regular = S_ISREG(st.st_mode);
                struct iol_file *f = iol_file_get(t, path, (size_t)n, 0, regular ? IOL_KIND_REGULAR : IOL_KIND_OTHER, 1);
                if (f != NULL) {
                    int fl = iol_sys_fcntl(fd, F_GETFL, 0);
                    off_t pos = iol_sys_lseek(fd, 0, SEEK_CUR);
                    uint32_t state = IOL_DESC_CHECKED | (regular ? IOL_DESC_REGULAR : 0) |
                                     (fl >= 0 && (fl & O_APPEND) ? IOL_DESC_APPEND : 0);
                    struct iol_desc *nd = iol_desc_new(t, f, state, pos >= 0 ? pos : 0);
                    if (nd != NULL)
                        d = nd;
                }
            }
        }
    }
    iol_fd_install(fd, d);
    return d;
}

struct iol_desc *iol_fd_slow(struct iol_thread *t, int fd, struct iol_desc *d)
{
    if (d == IOL_UNTRACKED || iol_g.fdtab == NULL)
        return NULL;
    int saved = errno;
    if (d == NULL)
        d = probe(t, fd);
    if ((uintptr_t)d > (uintptr_t)IOL_UNTRACKED && !(d->state & IOL_DESC_CHECKED)) {
        struct stat st;
        if (iol_sys_fstat(fd, &st) == 0)
            learn_type(d, st.st_mode, st.st_size);
    }
    errno = saved;
    if ((uintptr_t)d <= (uintptr_t)IOL_UNTRACKED)
        return NULL;
    return (d->state & IOL_DESC_READY) == IOL_DESC_READY ? d : NULL;
}

struct iol_desc *iol_fd_known(struct iol_thread *t, int fd)
{
    struct iol_desc *d = iol_fd_get(fd);
    if (d == NULL && iol_g.fdtab != NULL) {
        int saved = errno;
        d = probe(t, fd);
        errno = saved;
    }
    return (uintptr_t)d > (uintptr_t)IOL_UNTRACKED ? d : NULL;
}
