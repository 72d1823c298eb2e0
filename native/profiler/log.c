/* log.c — the live log: a file mapped MAP_SHARED from the start, so that whatever the process recorded is
 * in the file (the page cache) the moment it is written, and a kill -9 loses nothing already counted.
 *
 * The file grows a chunk at a time with fallocate: space is reserved before it is touched, so a full file
 * system makes a chunk allocation fail (and the runtime count what it could not record) instead of raising
 * SIGBUS in the program on a write to a sparse page. Each chunk is its own mapping, so a pointer into the log
 * stays valid while the log grows. */
#include "rt.h"
#include "sys.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

static char exe_path[512];
static char cmdline[2048];
static size_t cmdline_len;
static char zeros[IOLP_CHUNK_SIZE]; /* for file systems without fallocate */

void iol_log_identity(int argc, char **argv)
{
    ssize_t n = iol_sys_readlinkat(AT_FDCWD, "/proc/self/exe", exe_path, sizeof exe_path - 1);
    exe_path[n > 0 ? n : 0] = '\0';
    size_t at = 0;
    for (int i = 0; argv != NULL && i < argc && argv[i] != NULL; i++) {
        size_t len = strlen(argv[i]) + 1; /* each argument ends with its NUL */
        if (at + len > sizeof cmdline - 1)
            len = sizeof cmdline - 1 - at;
        memcpy(cmdline + at, argv[i], len);
        at += len;
        if (at >= sizeof cmdline - 1)
            break;
    }
    cmdline[sizeof cmdline - 1] = '\0';
    cmdline_len = at;
}

/* Grows the log file to hold [off, off + len): fallocate, or zeros written where it is not supported. */
static int grow(off_t off, size_t len)
{
    if (iol_sys_fallocate(iol_g.log_fd, 0, off, (off_t)len) == 0)
        return 0;
    if (errno != EOPNOTSUPP && errno != ENOSYS)
        return -errno;
    while (len > 0) {
        ssize_t n = iol_sys_pwrite(iol_g.log_fd, zeros, len < sizeof zeros ? len : sizeof zeros, off);
        if (n <= 0)
            return n < 0 ? -errno : -ENOSPC;
        off += n;
        len -= (size_t)n;
    }
    return 0;
}

/* The log grows, and is mapped, a window of chunks at a time: one chunk while the log is small (most
 * processes write a few), up to WINDOW_MAX once it holds 4 * WINDOW_MAX (a process recording 100k files
 * makes ~1000 chunks: two system calls per 16 chunks, not per chunk). The chunks of a window not yet handed
 * out are space the file has (reserved, so never a SIGBUS) but its header does not count: a reader ignores
 * them, and the compressed log leaves them out. Under iol_g.lock. */
#define WINDOW_MAX 16u
static uint8_t *win;            /* the mapping of chunks [win_first, win_first + win_n) of this log */
static uint64_t win_first, win_n, win_gen;

static uint8_t *chunk_space(uint64_t k)
{
    if (win != NULL && win_gen == iol_g.gen && k >= win_first && k < win_first + win_n)
        return win + (k - win_first) * IOLP_CHUNK_SIZE;
    uint64_t n = k / 4;
    n = n < 1 ? 1 : n > WINDOW_MAX ? WINDOW_MAX : n;
    for (;; n = 1) {
        off_t off = (off_t)IOLP_HEADER_SIZE + (off_t)(k * IOLP_CHUNK_SIZE);
        size_t len = (size_t)n * IOLP_CHUNK_SIZE;
        int err = grow(off, len);
        /* MAP_POPULATE: the pages are mapped now, in one call, rather than by a page fault each as records
         * fill them (a fault costs microseconds on a VM, and a FILE_REC chunk is written page by page, a
         * new file at a time). */
        uint8_t *p = err == 0 ? iol_sys_mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, iol_g.log_fd, off)
                              : MAP_FAILED;
        if (p != MAP_FAILED) {
            win = p;
            win_first = k;
            win_n = n;
            win_gen = iol_g.gen;
            return p;
        }
        if (err == 0)
            err = -errno;
        if (n == 1) { /* a bigger window may fail where one chunk still fits */
            iol_debug("cannot grow the log to %llu chunks: %s", (unsigned long long)k + 1, strerror(-err));
            return NULL;
        }
    }
}

struct iolp_chunk *iol_chunk_new(uint32_t kind, uint32_t thread, uint32_t rsize)
{
    uint64_t k = iol_g.nchunks;
    int saved = errno; /* growing the log may fail, or fall back, with an errno the program must not see */
    uint8_t *p = chunk_space(k);
    errno = saved;
    if (p == NULL)
        return NULL;
    struct iolp_chunk *c = (struct iolp_chunk *)p;
    memcpy(c->magic, "CHNK", 4);
    c->kind = kind;
    c->thread = thread;
    c->record_size = rsize;
    c->used = 0;
    /* Counted only once its header is written: the reader never meets a chunk without one. */
    iol_g.nchunks = k + 1;
    __atomic_store_n(&iol_g.hdr->chunk_count, k + 1, __ATOMIC_RELEASE);
    return c;
}

void iol_chunk_release(struct iolp_chunk *c)
{
    iol_sys_munmap(c, IOLP_CHUNK_SIZE);
}

void *iol_stream_reserve(struct iol_stream *s, size_t size)
{
    if (size > IOLP_CHUNK_ROOM)
        return NULL;
    if (s->c == NULL || s->c->used + size > IOLP_CHUNK_ROOM) {
        struct iolp_chunk *c = iol_chunk_new(s->kind, IOLP_PROCESS_THREAD, s->rsize);
        if (c == NULL)
            return NULL;
        s->c = c;
    }
    return (uint8_t *)s->c + IOLP_CHUNK_HEAD + s->c->used;
}

void iol_stream_commit(struct iol_stream *s, size_t size)
{
    uint64_t used = s->c->used + size;
    __atomic_store_n(&s->c->used, used, __ATOMIC_RELEASE);
    /* The next record goes to memory nothing has touched since the kernel zeroed it: asked for now, it is in
     * the cache when the next file comes (the first write to each of its lines would otherwise wait). */
    uint8_t *next = (uint8_t *)s->c + IOLP_CHUNK_HEAD + used;
    for (size_t k = 0; k < size && used + k < IOLP_CHUNK_ROOM; k += 64)
        __builtin_prefetch(next + k, 1);
}

void iol_log_set_flag(uint32_t flag)
{
    __atomic_fetch_or(&iol_g.hdr->flags, flag, __ATOMIC_RELAXED);
}

void iol_log_clear_flag(uint32_t flag)
{
    __atomic_fetch_and(&iol_g.hdr->flags, ~flag, __ATOMIC_RELAXED);
}

/* Opens DIR/JOB.HOST.PID.N.iolp with the first N free for both the raw and the compressed name. */
static int open_new(char *name, size_t cap)
{
    char path[PATH_MAX + 300];
    for (unsigned n = 0; n < 100000; n++) {
        snprintf(name, cap, "%s.%s.%d.%u.iolp", iol_g.job_file, iol_g.host_file, iol_g.pid, n);
        snprintf(path, sizeof path, "%s/%sz", iol_g.dir, name);
        if (iol_sys_faccessat(AT_FDCWD, path, F_OK) == 0)
            continue;
        snprintf(path, sizeof path, "%s/%s", iol_g.dir, name);
        int fd = iol_sys_openat(AT_FDCWD, path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        if (fd >= 0 || errno != EEXIST)
            return fd < 0 ? -errno : fd;
    }
    return -EEXIST;
}

int iol_log_create(const char *parent_log)
{
    uint64_t mono, wall;
    iol_clock_restart(&mono, &wall);
    char name[256];
    int fd = open_new(name, sizeof name);
    if (fd < 0) {
        iol_debug("cannot create a log in %s: %s", iol_g.dir, strerror(-fd));
        return fd;
    }
    /* The runtime's own descriptor stays out of the program's low numbers, where a shell expects its own. */
    int high = iol_sys_fcntl(fd, F_DUPFD_CLOEXEC, 512);
    if (high >= 0) {
        iol_sys_close(fd);
        fd = high;
    }
    iol_g.log_fd = fd;
    int err = grow(0, IOLP_HEADER_SIZE);
    struct iolp_header *h = MAP_FAILED;
    if (err == 0)
        h = iol_sys_mmap(NULL, IOLP_HEADER_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (h == MAP_FAILED) {
        iol_debug("cannot set up the log %s/%s", iol_g.dir, name);
        char path[PATH_MAX + 300];
        snprintf(path, sizeof path, "%s/%s", iol_g.dir, name);
        iol_sys_unlinkat(AT_FDCWD, path, 0);
        iol_sys_close(fd);
        iol_g.log_fd = -1;
        return err ? err : -ENOMEM;
    }
    memcpy(h->magic, IOLP_MAGIC, 8);
    h->version = IOLP_VERSION;
    h->header_size = IOLP_HEADER_SIZE;
    h->flags = iol_g.trace ? IOLP_TRACE_ON : 0;
    h->chunk_size = IOLP_CHUNK_SIZE;
    h->chunk_count = 0;
    h->pid = iol_g.pid;
    h->ppid = iol_sys_getppid();
    h->start_wall_ns = wall;
    h->start_mono_ns = mono;
    h->rank = iol_g.rank;
    h->n_file_counters = IOL_NFILE;
    h->n_file_data_counters = IOL_NDATA;
    h->n_proc_counters = IOL_NPROC;
    h->minor_version = IOLP_MINOR_VERSION;
    iol_strlcpy(h->job_id, iol_g.job_id, sizeof h->job_id);
    iol_strlcpy(h->hostname, iol_g.host, sizeof h->hostname);
    iol_strlcpy(h->exe, exe_path, sizeof h->exe);
    iol_strlcpy(h->parent_log, parent_log != NULL ? parent_log : "", sizeof h->parent_log);
    memcpy(h->cmdline, cmdline, cmdline_len);

    iol_g.hdr = h;
    iol_g.nchunks = 0;
    iol_strlcpy(iol_g.log_name, name, sizeof iol_g.log_name);
    iol_g.s_files = (struct iol_stream){ NULL, IOLP_FILES, 0 };
    iol_g.s_mounts = (struct iol_stream){ NULL, IOLP_MOUNTS, 0 };
    iol_g.s_filerec = (struct iol_stream){ NULL, IOLP_FILE_REC, 8 + 8 * IOL_NFILE };
    iol_g.s_filedata = (struct iol_stream){ NULL, IOLP_FILE_DATA, 8 + 8 * IOL_NDATA };
    iol_g.s_procrec = (struct iol_stream){ NULL, IOLP_PROC_REC, 8 + 8 * IOL_NPROC };
    iol_g.gen++;

    struct iolp_chunk *names = iol_chunk_new(IOLP_NAMES, IOLP_PROCESS_THREAD, 0);
    if (names == NULL)
        return -ENOSPC;
    memcpy((uint8_t *)names + IOLP_CHUNK_HEAD, iol_names_text, iol_names_len);
    __atomic_store_n(&names->used, (uint64_t)((iol_names_len + 7) & ~7u), __ATOMIC_RELEASE);
    return 0;
}
