/* log.c — the live log: a file mapped MAP_SHARED from the start, so that whatever the process recorded is
 * in the file (the page cache) the moment it is written, and a kill -9 loses nothing already counted.
 *
 * The runtime keeps no descriptor of it: the log is its mappings. Creating it and growing it (fallocate and
 * mmap need a descriptor) happen aside (aside.c), on a helper thread whose descriptor table is not the
 * program's; the descriptor is closed as soon as the new space is mapped.
 *
 * The file grows a window of chunks at a time with fallocate: space is reserved before it is touched, so a
 * full file system makes a chunk allocation fail (and the runtime count what it could not record) instead
 * of raising SIGBUS in the program on a write to a sparse page. Each window is its own mapping, so a pointer
 * into the log stays valid while the log grows. */
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
static int grow(int fd, off_t off, size_t len)
{
    if (iol_sys_fallocate(fd, 0, off, (off_t)len) == 0)
        return 0;
    if (errno != EOPNOTSUPP && errno != ENOSYS)
        return -errno;
    while (len > 0) {
        ssize_t n = iol_sys_pwrite(fd, zeros, len < sizeof zeros ? len : sizeof zeros, off);
        if (n <= 0)
            return n < 0 ? -errno : -ENOSPC;
        off += n;
        len -= (size_t)n;
    }
    return 0;
}

/* The log grows, and is mapped, a window of chunks at a time: FIRST_WINDOW chunks with the header (a short
 * process writes a few: the names, its files, their mounts and records, its own record), then half as many
 * as the log has, up to WINDOW_MAX (a process recording 100k files makes ~600 chunks: one trip aside per
 * 16 chunks, not per chunk). The chunks of a window not yet handed out are space the file has (reserved, so
 * never a SIGBUS) but its header does not count: a reader ignores them, and the compressed log leaves them
 * out. Under iol_g.lock. */
#define FIRST_WINDOW 8u
#define WINDOW_MAX 16u
static uint8_t *win;            /* the mapping of chunks [win_first, win_first + win_n) of this log */
static uint64_t win_first, win_n, win_gen;
/* After a failure to grow (a full file system), the next FAIL_SKIP chunk requests fail at once: each try is
 * a trip aside, and a program creating many files would otherwise pay one per file. */
#define FAIL_SKIP 1024u
static uint64_t fail_skip, fail_gen;

struct map_req {
    off_t off;
    size_t len;
    uint8_t *p;
    int err;
    int populate;
};

static int map_fd(int fd, struct map_req *r)
{
    r->p = MAP_FAILED;
    r->err = grow(fd, r->off, r->len);
    /* MAP_POPULATE: the pages are mapped now, in one call, rather than by a page fault each as records fill
     * them (a fault costs microseconds on a VM, and a FILE_REC chunk is written page by page, a new file at
     * a time). */
    if (r->err == 0) {
        r->p = iol_sys_mmap(NULL, r->len, PROT_READ | PROT_WRITE, MAP_SHARED | (r->populate ? MAP_POPULATE : 0), fd,
                            r->off);
        if (r->p == MAP_FAILED)
            r->err = -errno;
    }
    return r->err;
}

/* Aside: the log opened again by its path, and checked to be the file this process created (the program may
 * have removed it, or put another in its place), grown and mapped, closed. */
static int map_window(void *arg)
{
    struct map_req *r = arg;
    r->p = MAP_FAILED;
    int fd = iol_sys_openat(AT_FDCWD, iol_g.log_path, O_RDWR | O_CLOEXEC | O_NOFOLLOW, 0);
    if (fd < 0)
        return r->err = -errno;
    struct stat st;
    if (iol_sys_fstat(fd, &st) != 0 || st.st_dev != iol_g.log_dev || st.st_ino != iol_g.log_ino)
        r->err = -ESTALE;
    else
        map_fd(fd, r);
    iol_sys_close(fd);
    return r->err;
}

static uint8_t *chunk_space(uint64_t k)
{
    if (win != NULL && win_gen == iol_g.gen && k >= win_first && k < win_first + win_n)
        return win + (k - win_first) * IOLP_CHUNK_SIZE;
    if (fail_gen == iol_g.gen && fail_skip > 0) {
        fail_skip--;
        return NULL;
    }
    uint64_t n = k / 2;
    n = n < 1 ? 1 : n > WINDOW_MAX ? WINDOW_MAX : n;
    for (;; n = 1) {
        struct map_req r = { (off_t)IOLP_HEADER_SIZE + (off_t)(k * IOLP_CHUNK_SIZE), (size_t)n * IOLP_CHUNK_SIZE,
                             MAP_FAILED, 0, 1 };
        int err = iol_aside(map_window, &r);
        if (err == 0 && r.p != MAP_FAILED) {
            win = r.p;
            win_first = k;
            win_n = n;
            win_gen = iol_g.gen;
            return r.p;
        }
        if (n == 1) { /* a bigger window may fail where one chunk still fits */
            iol_debug("cannot grow the log to %llu chunks: %s", (unsigned long long)k + 1,
                      strerror(err < 0 ? -err : EIO));
            fail_gen = iol_g.gen;
            fail_skip = FAIL_SKIP - 1;
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
        if (c == NULL) {
            /* The counts go on in memory, unlogged: the log says that it is short of them. */
            if (__atomic_add_fetch(&iol_g.hdr->records_dropped, 1, __ATOMIC_RELAXED) == 1)
                iol_log_set_flag(IOLP_RECORDS_CUT);
            return NULL;
        }
        c->module = s->module;
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
    for (unsigned n = 0; n < 100000; n++) {
        snprintf(name, cap, "%s.%s.%d.%u.iolp", iol_g.job_file, iol_g.host_file, iol_g.pid, n);
        snprintf(iol_g.log_path, sizeof iol_g.log_path, "%s/%sz", iol_g.dir, name);
        if (iol_sys_faccessat(AT_FDCWD, iol_g.log_path, F_OK) == 0)
            continue;
        snprintf(iol_g.log_path, sizeof iol_g.log_path, "%s/%s", iol_g.dir, name);
        int fd = iol_sys_openat(AT_FDCWD, iol_g.log_path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        if (fd >= 0 || errno != EEXIST)
            return fd < 0 ? -errno : fd;
    }
    return -EEXIST;
}

struct create_req {
    char name[256];
    struct iolp_header *h;
    struct map_req first; /* the first window */
    int err;
};

/* Aside: the new file, its header and first window reserved and mapped (one window less when the file
 * system has no room for it), closed again. A file that cannot get its header is removed. */
static int create_file(void *arg)
{
    struct create_req *r = arg;
    r->h = MAP_FAILED;
    r->first.p = MAP_FAILED;
    int fd = open_new(r->name, sizeof r->name);
    if (fd < 0) {
        iol_debug("cannot create a log in %s: %s", iol_g.dir, strerror(-fd));
        return r->err = fd;
    }
    struct stat st;
    r->err = iol_sys_fstat(fd, &st) == 0 ? grow(fd, 0, IOLP_HEADER_SIZE) : -errno;
    if (r->err == 0) {
        iol_g.log_dev = st.st_dev;
        iol_g.log_ino = st.st_ino;
        r->h = iol_sys_mmap(NULL, IOLP_HEADER_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (r->h == MAP_FAILED)
            r->err = -errno;
    }
    for (size_t n = FIRST_WINDOW; r->err == 0 && n > 0; n /= 2) {
        r->first.populate = 0; /* most processes touch a few pages of it: reserved, but faulted in as used */
        r->first.off = IOLP_HEADER_SIZE;
        r->first.len = n * IOLP_CHUNK_SIZE;
        if (map_fd(fd, &r->first) == 0)
            break;
        r->first.err = 0; /* the header alone is a log: chunks may find room later */
    }
    if (r->err != 0) {
        iol_debug("cannot set up the log %s: %s", iol_g.log_path, strerror(-r->err));
        iol_sys_unlinkat(AT_FDCWD, iol_g.log_path, 0);
    }
    iol_sys_close(fd);
    return r->err;
}

static int remove_file(void *arg)
{
    (void)arg;
    return iol_sys_unlinkat(AT_FDCWD, iol_g.log_path, 0);
}

int iol_log_create(const char *parent_log)
{
    uint64_t mono, wall;
    iol_clock_restart(&mono, &wall);
    struct create_req r;
    r.err = -ENOSYS;
    int err = iol_aside(create_file, &r);
    if (err == 0)
        err = r.err;
    if (err != 0) {
        if (r.err == -ENOSYS) /* the helper did not run at all */
            iol_debug("cannot create a log in %s: %s", iol_g.dir, strerror(-err));
        return err;
    }
    struct iolp_header *h = r.h;
    const char *name = r.name;
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
    iol_g.s_files = (struct iol_stream){ NULL, IOLP_FILES, 0, 0 };
    iol_g.s_mounts = (struct iol_stream){ NULL, IOLP_MOUNTS, 0, 0 };
    iol_g.s_filerec = (struct iol_stream){ NULL, IOLP_FILE_REC, 8 + 8 * IOL_NFILE, 0 };
    iol_g.s_filedata = (struct iol_stream){ NULL, IOLP_FILE_DATA, 8 + 8 * IOL_NDATA, 0 };
    iol_g.s_procrec = (struct iol_stream){ NULL, IOLP_PROC_REC, 8 + 8 * IOL_NPROC, 0 };
    for (unsigned m = 0; m < IOL_MODULE_MAX; m++)
        iol_g.s_module[m] = (struct iol_stream){ NULL, IOLP_MODULE_REC, 8 + 8 * iol_module_nvals[m], m };
    iol_g.s_modtext = (struct iol_stream){ NULL, IOLP_MODULE_TEXT, 0, 0 };
    iol_g.gen++;
    if (r.first.p != MAP_FAILED) {
        win = r.first.p;
        win_first = 0;
        win_n = r.first.len / IOLP_CHUNK_SIZE;
        win_gen = iol_g.gen;
    }

    struct iolp_chunk *names = iol_chunk_new(IOLP_NAMES, IOLP_PROCESS_THREAD, 0);
    if (names == NULL) { /* a log without its names cannot be read: none at all */
        iol_aside(remove_file, NULL);
        iol_sys_munmap(h, IOLP_HEADER_SIZE);
        iol_g.hdr = NULL;
        return -ENOSPC;
    }
    memcpy((uint8_t *)names + IOLP_CHUNK_HEAD, iol_names_text, iol_names_len);
    __atomic_store_n(&names->used, (uint64_t)((iol_names_len + 7) & ~7u), __ATOMIC_RELEASE);
    return 0;
}
