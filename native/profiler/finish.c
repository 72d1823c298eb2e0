/* finish.c — the end of a log: at a normal exit the header gets end_ns, the exit status and flag 1, the raw
 * image is compressed to NAME.iolpz (8 bytes "IOLPZ001", u64 the raw length, one zlib stream) and the raw
 * NAME.iolp removed.
 *
 * This may run in _exit called from a signal handler, so it uses only system calls and zlib with an
 * allocator of its own (one anonymous mapping): no malloc, no stdio. The image is read from the file, not the
 * mapping (full trace chunks are no longer mapped); the page cache makes both the same bytes. The files are
 * opened aside (aside.c): other threads of the program may still run while exit() runs destructors. */
#include "rt.h"
#include "joblog.h"
#include "sys.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <zlib.h>

#define ZMEM (1u << 20)
#define PIECE (64u * 1024u)

struct zspace {
    uint8_t *base;
    size_t used;
};

static voidpf z_alloc(voidpf opaque, uInt items, uInt size)
{
    struct zspace *z = opaque;
    size_t n = ((size_t)items * size + 15) & ~(size_t)15;
    if (z->used + n > ZMEM)
        return Z_NULL;
    void *p = z->base + z->used;
    z->used += n;
    return p;
}

static void z_free(voidpf opaque, voidpf p)
{
    (void)opaque, (void)p; /* the whole space goes at once */
}

static int write_all(int fd, const void *buf, size_t n)
{
    const uint8_t *p = buf;
    while (n > 0) {
        ssize_t w = iol_sys_write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* Compresses in (raw_len bytes) to out; 0 or -1. */
static int deflate_file(int in, int out, uint64_t raw_len, uint8_t *work)
{
    uint8_t *inbuf = work + ZMEM, *outbuf = inbuf + PIECE;
    struct zspace zs = { work, 0 };
    z_stream z;
    memset(&z, 0, sizeof z);
    z.zalloc = z_alloc;
    z.zfree = z_free;
    z.opaque = &zs;
    /* Level 1: a log is mostly zeros and small counters; higher levels cost time for little. A small log
     * gets a window no bigger than itself (less memory to set up: most processes are short). */
    int wbits = 9;
    while (wbits < 15 && (1ull << wbits) < raw_len)
        wbits++;
    if (deflateInit2(&z, 1, Z_DEFLATED, wbits, wbits < 15 ? 6 : 8, Z_DEFAULT_STRATEGY) != Z_OK)
        return -1;
    uint8_t head[16];
    memcpy(head, IOLPZ_MAGIC, 8);
    for (int i = 0; i < 8; i++)
        head[8 + i] = (uint8_t)(raw_len >> (8 * i));
    int rc = write_all(out, head, sizeof head);
    uint64_t at = 0;
    while (rc == 0) {
        size_t want = raw_len - at < PIECE ? (size_t)(raw_len - at) : PIECE;
        ssize_t got = want > 0 ? iol_sys_pread(in, inbuf, want, (off_t)at) : 0;
        if (got < 0 || (size_t)got != want) {
            rc = -1;
            break;
        }
        at += (uint64_t)got;
        int flush = at == raw_len ? Z_FINISH : Z_NO_FLUSH;
        z.next_in = inbuf;
        z.avail_in = (uInt)got;
        int zr;
        do {
            z.next_out = outbuf;
            z.avail_out = PIECE;
            zr = deflate(&z, flush);
            if (zr == Z_STREAM_ERROR || write_all(out, outbuf, PIECE - z.avail_out) != 0) {
                rc = -1;
                break;
            }
        } while (z.avail_out == 0);
        if (flush == Z_FINISH)
            break;
    }
    deflateEnd(&z);
    return rc;
}

static int compress_now(const char *dir, const char *name)
{
    char raw[PATH_MAX + 300], tmp[PATH_MAX + 300], done[PATH_MAX + 300];
    snprintf(raw, sizeof raw, "%s/%s", dir, name);
    snprintf(done, sizeof done, "%s/%sz", dir, name);
    snprintf(tmp, sizeof tmp, "%s/.%s.%d.tmp", dir, name, iol_sys_getpid());
    int in = iol_sys_openat(AT_FDCWD, raw, O_RDONLY | O_CLOEXEC, 0);
    if (in < 0)
        return -errno;
    struct iolp_header h;
    struct stat st;
    if (iol_sys_pread(in, &h, sizeof h, 0) != (ssize_t)sizeof h || memcmp(h.magic, IOLP_MAGIC, 8) != 0 ||
        iol_sys_fstat(in, &st) != 0) {
        iol_sys_close(in);
        return -EINVAL;
    }
    uint64_t raw_len = IOLP_HEADER_SIZE + h.chunk_count * (uint64_t)h.chunk_size;
    if (raw_len > (uint64_t)st.st_size)
        raw_len = (uint64_t)st.st_size;
    uint8_t *work = iol_sys_mmap(NULL, ZMEM + 2 * PIECE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    int out = work == MAP_FAILED ? -1 : iol_sys_openat(AT_FDCWD, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    int rc = out < 0 ? -1 : deflate_file(in, out, raw_len, work);
    int err = errno;
    if (out >= 0)
        iol_sys_close(out);
    iol_sys_close(in);
    if (work != MAP_FAILED)
        iol_sys_munmap(work, ZMEM + 2 * PIECE);
    if (rc == 0 && iol_sys_renameat(AT_FDCWD, tmp, AT_FDCWD, done) == 0) {
        iol_sys_unlinkat(AT_FDCWD, raw, 0);
        return 0;
    }
    if (out >= 0)
        iol_sys_unlinkat(AT_FDCWD, tmp, 0);
    iol_debug("cannot compress %s: %s (the raw log stays)", raw, strerror(err));
    return -err;
}

struct compress_req {
    const char *dir, *name;
};

static int compress_aside(void *arg)
{
    struct compress_req *r = arg;
    return compress_now(r->dir, r->name);
}

int iol_compress_log(const char *dir, const char *name)
{
    struct compress_req r = { dir, name };
    return iol_aside(compress_aside, &r);
}

/* The pid in a log name JOB.HOST.PID.N.iolp (JOB and HOST may hold dots: read from the right). */
static long pid_of(const char *name)
{
    size_t n = strlen(name);
    if (n < 5 || strcmp(name + n - 5, ".iolp") != 0)
        return -1;
    size_t e = n - 5, i = e;
    while (i > 0 && name[i - 1] != '.') /* N */
        i--;
    if (i == 0)
        return -1;
    size_t pe = i - 1, ps = pe;
    while (ps > 0 && name[ps - 1] != '.')
        ps--;
    long pid = 0;
    for (size_t k = ps; k < pe; k++) {
        if (name[k] < '0' || name[k] > '9')
            return -1;
        pid = pid * 10 + (name[k] - '0');
    }
    return pe > ps ? pid : -1;
}

/* The log this image's exec replaced (same pid, flag 4) stayed raw: its process could not compress it before
 * exec without losing it if the exec failed. Its successor does, when it exits or execs in turn. */
static int predecessor_aside(void *arg)
{
    (void)arg;
    char path[PATH_MAX + 300];
    snprintf(path, sizeof path, "%s/%s", iol_g.dir, iol_g.prev_log);
    int fd = iol_sys_openat(AT_FDCWD, path, O_RDONLY | O_CLOEXEC, 0);
    if (fd < 0)
        return 0;
    struct iolp_header ph;
    int replaced = iol_sys_pread(fd, &ph, sizeof ph, 0) == (ssize_t)sizeof ph &&
                   memcmp(ph.magic, IOLP_MAGIC, 8) == 0 && ph.pid == iol_g.pid && (ph.flags & IOLP_EXECED);
    iol_sys_close(fd);
    if (replaced)
        compress_now(iol_g.dir, iol_g.prev_log);
    return 0;
}

void iol_compress_predecessor(void)
{
    if (iol_g.prev_log[0] == '\0' || pid_of(iol_g.prev_log) != iol_g.pid)
        return;
    iol_aside(predecessor_aside, NULL);
    iol_g.prev_log[0] = '\0';
}

void iol_finish(int status, int known)
{
    if (!__atomic_load_n(&iol_g.on, __ATOMIC_ACQUIRE) || iol_sys_getpid() != iol_g.pid)
        return; /* not running, already finished, or a vfork child on its parent's memory */
    int saved = errno;
    iol_tls.guard = IOL_GUARD_IN;
    __atomic_store_n(&iol_g.on, 0, __ATOMIC_RELEASE);
    struct iolp_header *h = iol_g.hdr;
    h->end_ns = iol_ns(iol_g.clk.base, iol_ticks());
    if (known)
        h->exit_status = status & 0xff;
    iol_log_set_flag(IOLP_CLEAN);
    iol_lock(&iol_g.lock); /* a thread adding a chunk finishes before the image is read */
    /* A rank whose counts a job log took at MPI_Finalize keeps its log only for what came after. */
    if (!iol_jl_finish())
        iol_compress_log(iol_g.dir, iol_g.log_name);
    iol_unlock(&iol_g.lock);
    iol_compress_predecessor();
    errno = saved;
}
