/* fio_io.c — one instance of a fio job: the I/O loop (offsets, sizes, directions as fio chooses them), its
 * timing (slat/clat/lat per direction, a per-second record), fsync/fdatasync, and crc32c verification.
 *
 * The loop keeps iodepth requests in flight: it fills every free slot (submitting in batches of
 * iodepth_batch_submit), then reaps between iodepth_batch_complete_min and _max completions. Timestamps
 * come from the backend: one per submit call and one per reaped batch (asynchronous engines), or one per
 * transfer on synchronous engines, whose next request is stamped with the previous completion's time. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "../common/clock.h"
#include "../common/crc32c.h"
#include "../common/interrupt.h"
#include "run_sync.h"
#include "../common/mix.h"
#include "../common/randmap.h"
#include "fio_internal.h"

#define VERIFY_MAGIC 0x696f6c76u   /* "iolv" */

/* The header iolens writes at the start of every block when verify=crc32c. */
struct verify_hdr {
    uint32_t magic;
    uint32_t len;
    uint64_t offset;          /* in the file */
    uint64_t file_key;        /* which file (a hash of its number and the job's seed) */
    uint32_t crc;             /* crc32c of the whole block with this field zero */
    uint32_t pad;
};

/* A thread's CPU at one moment: the kernel's user/system split and the exact CPU clock. */
struct cpu_mark {
    struct rusage ru;
    uint64_t ns;
    int set;
};

struct io_run {
    struct fio_inst *in;
    const struct fio_plan *p;
    const struct fio_times *t;
    struct iol_bctx *ctx;
    struct iol_file *files;
    const char *const *paths;
    int nfiles_open;
    uint64_t chain;           /* synchronous engines: the last completion's time, the next request's submit time */
    FILE *iolog;              /* write_iolog */
    int qd;
    void **bufs;
    struct iol_req *reqs;
    struct iol_req **batch, **done;
    int *free_slots;
    uint64_t *t_after;        /* per slot: when the submit call that sent it returned (async engines) */
    /* offsets */
    uint64_t seed;            /* the run's effective seed: the plan's, or the clock's with randrepeat=0 */
    struct iol_rng rng;
    struct iol_dist dist;
    int have_dist;
    struct iol_randmap map;   /* fio's random map over the region (random, no norandommap, no skewed
                               * distribution; in alignment units with bssplit) */
    int use_map;
    uint64_t nunits;          /* blocks (one bs) or alignment units (bssplit, blockalign) in the whole region */
    uint64_t loop_nios;       /* one bs: I/Os per loop (io_size / bs, whatever the alignment) */
    uint64_t loop, loop_ios, loop_bytes, seq_pos[FIO_NDIR];
    /* file_service_type over several files (one bs, no random_distribution): which file serves the next I/O */
    int per_file;
    int cur_file;             /* -1 before a loop's first I/O */
    uint64_t cur_left;        /* I/Os left on it before switching (the ":N") */
    uint64_t *fios;           /* [nfiles] I/Os issued to each file in this loop */
    uint64_t *fpos;           /* [FIO_NDIR * nfiles] next sequential offset in each file */
    uint64_t fblocks;         /* blocks (or alignment units, norandommap) in one file */
    struct iol_randmap *fmaps;   /* [nfiles] each file's random map (per_file with use_map) */
    int finished;             /* no more I/O to issue */
    uint8_t *written;         /* verify: blocks written (bitmap over blocks) */
    uint64_t writes_since_sync;
    struct cpu_mark cpu0;     /* the thread's CPU when the ramp ended: its figures count from there */
    int64_t storage0;         /* the thread's storage read bytes then (-1: the kernel does not say) */
    int loop_end;             /* a loop of a job that is not time_based ended: drain, then what fio does between loops */
    /* fio's ramp_time on a job that is not time_based: the ramp's I/O does not count against size and loops
     * (fio resets its byte count when the ramp ends); the job keeps going through its loops until the ramp
     * is over, then moves loops x size bytes more from where it is. */
    int ramp_mode, ramp_pending;
    uint64_t inflight_bytes;  /* issued, not yet reaped */
    /* per second */
    uint64_t next_sec_ns;
    uint64_t sec_max[FIO_NDIR];   /* the exact longest latency of the second so far */
    struct iol_hist *snap[FIO_NDIR];
    uint64_t snap_ios[FIO_NDIR], snap_bytes[FIO_NDIR];
};

/* ---- offsets ------------------------------------------------------------------------------------------ */

static uint64_t choose_len(struct io_run *r)
{
    const struct fio_plan *p = r->p;
    if (p->nbs == 1) return p->bs[0];
    unsigned x = (unsigned)iol_rng_below(&r->rng, 100);
    int i = 0;
    while (i < p->nbs - 1 && x >= p->bs_cum[i]) i++;
    return p->bs[i];
}

/* This loop has I/O left to issue. */
static int loop_has_io(const struct io_run *r)
{
    return r->p->nbs == 1 ? r->loop_ios < r->loop_nios : r->loop_bytes < r->p->io_size;
}

/* The I/Os file k gets in a loop: the loop's share, spread evenly (the first files take the remainder). */
static uint64_t file_budget(const struct io_run *r, int k)
{
    uint64_t n = (uint64_t)r->p->nfiles;
    return r->loop_nios / n + ((uint64_t)k < r->loop_nios % n);
}

/* fio's file_service_type: the file of the next I/O. roundrobin takes the files in turn, random any file
 * with I/O left, each for N I/Os (TYPE:N) before switching; a file that has had its share is skipped. */
static int pick_file(struct io_run *r)
{
    const struct fio_plan *p = r->p;
    int n = p->nfiles, k = r->cur_file;
    if (k >= 0 && r->cur_left > 0 && r->fios[k] < file_budget(r, k)) {
        r->cur_left--;
        return k;
    }
    int start = p->fservice == FIO_FS_RANDOM ? (int)iol_rng_below(&r->rng, (uint64_t)n) : (k + 1) % n;
    for (int i = 0; i < n; i++) {
        k = (start + i) % n;
        if (r->fios[k] < file_budget(r, k)) break;
    }
    r->cur_file = k;
    r->cur_left = p->fservice_n - 1;
    return k;
}

/* An I/O of length l in the file the service type picks: its region offset. */
static uint64_t per_file_offset(struct io_run *r, int dir, uint64_t l)
{
    const struct fio_plan *p = r->p;
    int k = pick_file(r);
    uint64_t j = r->fios[k]++, off;
    if (!p->random) {
        uint64_t *pos = &r->fpos[(uint64_t)dir * (uint64_t)p->nfiles + (uint64_t)k];
        off = *pos + l > p->filesize ? 0 : *pos;
        *pos = off + l >= p->filesize ? 0 : off + l;
    } else {
        uint64_t b = iol_rng_below(&r->rng, r->fblocks);
        if (r->use_map && j < r->fblocks) b = iol_randmap_claim(&r->fmaps[k], b);
        off = b * p->align;
        if (off + l > p->filesize) off = (p->filesize - l) / p->align * p->align;
    }
    return (uint64_t)k * p->filesize + off;
}

/* The next I/O as (region offset, length, direction); 0 when this loop is done. */
static int next_io(struct io_run *r, uint64_t *g, uint64_t *len, enum iol_io_op *op)
{
    const struct fio_plan *p = r->p;
    if (!loop_has_io(r)) return 0;
    int dir = p->rwmixread == 100 ? FIO_DIR_READ
            : p->rwmixread == 0   ? FIO_DIR_WRITE
            : (iol_rng_below(&r->rng, 100) < (uint64_t)p->rwmixread ? FIO_DIR_READ : FIO_DIR_WRITE);
    *op = dir == FIO_DIR_READ ? IOL_IO_READ : IOL_IO_WRITE;
    uint64_t l = choose_len(r);
    if (r->per_file) {
        *g = per_file_offset(r, dir, l);
    } else if (!p->random) {
        uint64_t pos = r->seq_pos[dir];
        uint64_t in_file = p->filesize - pos % p->filesize;
        if (l > in_file) l = in_file;   /* bssplit: the last I/O of a file is cut to its end */
        *g = pos;
        r->seq_pos[dir] = pos + l >= p->size ? 0 : pos + l;
    } else if (p->nbs == 1) {
        uint64_t b;
        if (r->have_dist) b = iol_dist_next(&r->dist);
        else if (!r->use_map) b = iol_rng_below(&r->rng, r->nunits);
        else b = iol_randmap_claim(&r->map, iol_rng_below(&r->rng, r->nunits));
        *g = b * l;
        if (p->align != l) *g = b * p->align;   /* norandommap with its own alignment */
        if (*g % p->filesize + l > p->filesize) *g -= *g % p->filesize + l - p->filesize;
    } else if (r->use_map) {
        /* bssplit: the map is in alignment units (the smallest bs by default); an I/O claims the units it
         * covers and is shortened at the first one already done, or at its file's end, as fio's */
        uint64_t per_file = (p->filesize + p->align - 1) / p->align, got;
        uint64_t u = iol_randmap_claim_run(&r->map, iol_rng_below(&r->rng, r->nunits),
                                           (l + p->align - 1) / p->align, per_file, &got);
        if (u == IOL_RANDMAP_NONE) {   /* every unit done: the loop is over */
            r->loop_bytes = p->io_size;
            return 0;
        }
        uint64_t in_file = u % per_file * p->align;
        if (l > got * p->align) l = got * p->align;
        if (l > p->filesize - in_file) l = p->filesize - in_file;
        *g = u / per_file * p->filesize + in_file;
    } else {
        uint64_t u = r->have_dist ? iol_dist_next(&r->dist) : iol_rng_below(&r->rng, r->nunits);
        uint64_t pos = u * p->align, base = pos - pos % p->filesize;
        if (pos - base + l > p->filesize) pos = base + ((p->filesize - l) / p->align) * p->align;
        *g = pos;
    }
    *len = l;
    r->loop_ios++;
    r->loop_bytes += l;
    return 1;
}

/* Moves to the next loop, or says the job is done. */
static void next_loop(struct io_run *r)
{
    const struct fio_job_opts *o = r->p->o;
    r->loop++;
    r->loop_ios = 0;
    r->loop_bytes = 0;
    r->seq_pos[0] = r->seq_pos[1] = 0;
    if (r->per_file) {
        memset(r->fios, 0, (size_t)r->p->nfiles * sizeof *r->fios);
        memset(r->fpos, 0, (size_t)r->p->nfiles * FIO_NDIR * sizeof *r->fpos);
        r->cur_file = -1;
        r->cur_left = 0;
    }
    if (r->use_map && r->per_file)
        for (int k = 0; k < r->p->nfiles; k++) iol_randmap_reset(&r->fmaps[k]);
    else if (r->use_map)
        iol_randmap_reset(&r->map);
    if (!o->time_based && !r->ramp_mode && r->loop >= (uint64_t)o->loops) r->finished = 1;
}

/* ---- verification -------------------------------------------------------------------------------------- */

static uint64_t file_key(const struct fio_plan *p, int k)
{
    return iol_mix64(p->seed ^ ((uint64_t)k << 32 | 0x5157u));
}

static void verify_stamp(struct io_run *r, struct iol_req *q, int k, uint64_t file_off)
{
    struct verify_hdr h = {VERIFY_MAGIC, (uint32_t)q->len, file_off, file_key(r->p, k), 0, 0};
    memcpy(q->buf, &h, sizeof h);
    h.crc = iol_crc32c(0, q->buf, q->len);
    memcpy(q->buf, &h, sizeof h);
}

/* Checks one block read back; counts it. */
static void verify_check(struct io_run *r, const struct iol_req *d, int k)
{
    struct fio_inst *in = r->in;
    struct verify_hdr h;
    memcpy(&h, d->buf, sizeof h);
    uint32_t want = h.crc;
    struct verify_hdr z = h;
    z.crc = 0;
    int ok = h.magic == VERIFY_MAGIC && h.len == d->len && h.offset == d->offset && h.file_key == file_key(r->p, k);
    if (ok) {
        uint32_t c = iol_crc32c(0, &z, sizeof z);
        c = iol_crc32c(c, (const char *)d->buf + sizeof z, d->len - sizeof z);
        ok = c == want;
    }
    in->verify_blocks++;
    if (!ok) {
        if (!in->verify_errors) {
            in->verify_first_bad = d->offset;
            snprintf(in->verify_bad_file, sizeof in->verify_bad_file, "%s", r->paths[k]);
        }
        in->verify_errors++;
    }
}

/* ---- per-second record --------------------------------------------------------------------------------- */

static int roll_second(struct io_run *r)
{
    struct fio_inst *in = r->in;
    if (in->nsecs == in->cap_secs) {
        uint64_t cap = in->cap_secs ? in->cap_secs * 2 : 64;
        struct fio_sec *s = realloc(in->secs, cap * FIO_NDIR * sizeof *s);
        if (!s) return iol_err_set(&in->err, IOL_ERR_RUNTIME, "out of memory for the per-second record");
        in->secs = s;
        in->cap_secs = cap;
    }
    for (int d = 0; d < FIO_NDIR; d++) {
        struct fio_sec *s = &in->secs[in->nsecs * FIO_NDIR + (uint64_t)d];
        memset(s, 0, sizeof *s);
        const struct iol_hist *h = &in->dir[d].lat;
        struct iol_hist *old = r->snap[d];
        s->ios = in->dir[d].ios - r->snap_ios[d];
        s->bytes = in->dir[d].bytes - r->snap_bytes[d];
        r->snap_ios[d] = in->dir[d].ios;
        r->snap_bytes[d] = in->dir[d].bytes;
        s->max_ns = r->sec_max[d];
        r->sec_max[d] = 0;
        if (!s->ios) continue;
        for (unsigned b = 0; b < IOL_HIST_NBUCKETS; b++) {
            uint64_t delta = h->buckets[b] - old->buckets[b];
            if (!delta) continue;
            s->buckets[b >> FIO_SEC_SHIFT] += (uint32_t)delta;
            old->buckets[b] = h->buckets[b];
        }
    }
    in->nsecs++;
    r->next_sec_ns += 1000000000ull;
    return 0;
}

/* ---- CPU of the thread ------------------------------------------------------------------------------- */

static uint64_t thread_cpu_ns(void)
{
    struct timespec ts;
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts)) return 0;
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* getrusage(RUSAGE_THREAD) is tick-based: a running thread's time lags by up to a scheduler tick, and the
 * difference of two readings can as well run ahead of the CPU really used between them (the kernel scales
 * its tick counts to the exact runtime at each reading). On a short job that error is all of it, and a lag
 * would then be counted as kernel workers' time. The thread's CPU clock is exact: keep rusage's user/system
 * split, scaled to it (all as system time when rusage saw nothing yet). exact_ns is also capped at the
 * job's wall window: the reading comes a few microseconds after the last completion that ends the window,
 * and a single thread cannot use more CPU than the time it ran. */
static void fix_thread_cpu(struct rusage *ru, uint64_t exact_ns)
{
    double usr = (double)ru->ru_utime.tv_sec * 1e9 + (double)ru->ru_utime.tv_usec * 1e3;
    double sys = (double)ru->ru_stime.tv_sec * 1e9 + (double)ru->ru_stime.tv_usec * 1e3;
    if (usr < 0) usr = 0;
    if (sys < 0) sys = 0;
    if (!exact_ns) return;
    double scale = usr + sys > 0 ? (double)exact_ns / (usr + sys) : 0.0;
    uint64_t u = (uint64_t)(usr * scale), st = usr + sys > 0 ? exact_ns - u : exact_ns;
    ru->ru_utime.tv_sec = (time_t)(u / 1000000000ull);
    ru->ru_utime.tv_usec = (suseconds_t)(u % 1000000000ull / 1000);
    ru->ru_stime.tv_sec = (time_t)(st / 1000000000ull);
    ru->ru_stime.tv_usec = (suseconds_t)(st % 1000000000ull / 1000);
}

/* Bytes this thread made the kernel fetch from the storage for reads (read_bytes of /proc/thread-self/io: page
 * cache misses and their readahead; nothing for data already in memory, or on tmpfs); -1 when not known. */
static int64_t storage_read_bytes(void)
{
    FILE *f = fopen("/proc/thread-self/io", "re");
    if (!f) return -1;
    char line[128];
    int64_t v = -1;
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, "read_bytes:", 11)) v = strtoll(line + 11, NULL, 10);
    fclose(f);
    return v;
}

/* fio's invalidate between passes: POSIX_FADV_DONTNEED over each file's region, as fio does when it opens
 * the files again for a loop (whatever direct says) or when a time_based job wraps (buffered only). */
static void invalidate_files(struct io_run *r, int even_direct)
{
    const struct fio_plan *p = r->p;
    if (p->cache != FIO_CACHE_COLD || (!even_direct && (p->open_flags & IOL_O_DIRECT))) return;
    for (int k = 0; k < r->nfiles_open; k++)
        if (r->files[k].fd >= 0)
            (void)posix_fadvise(r->files[k].fd, (off_t)p->o->offset, (off_t)p->filesize, POSIX_FADV_DONTNEED);
}

static void cpu_mark_now(struct cpu_mark *m)
{
    getrusage(RUSAGE_THREAD, &m->ru);
    m->ns = thread_cpu_ns();
    m->set = 1;
}

static void tv_sub(struct timeval *out, struct timeval a, struct timeval b)
{
    int64_t us = ((int64_t)a.tv_sec - (int64_t)b.tv_sec) * 1000000 + (a.tv_usec - b.tv_usec);
    if (us < 0) us = 0;
    out->tv_sec = (time_t)(us / 1000000);
    out->tv_usec = (suseconds_t)(us % 1000000);
}

/* The thread's CPU since m, at most wall_ns (nothing when the ramp never ended: no figure counts). */
static void cpu_since(const struct cpu_mark *m, uint64_t wall_ns, struct rusage *out)
{
    memset(out, 0, sizeof *out);
    if (!m->set) return;
    struct cpu_mark now;
    cpu_mark_now(&now);
    tv_sub(&out->ru_utime, now.ru.ru_utime, m->ru.ru_utime);
    tv_sub(&out->ru_stime, now.ru.ru_stime, m->ru.ru_stime);
    uint64_t used = now.ns - m->ns;
    fix_thread_cpu(out, used < wall_ns || !wall_ns ? used : wall_ns);
    out->ru_nvcsw = now.ru.ru_nvcsw - m->ru.ru_nvcsw;
    out->ru_nivcsw = now.ru.ru_nivcsw - m->ru.ru_nivcsw;
}

/* ---- the loop ------------------------------------------------------------------------------------------ */

static int sync_files(struct io_run *r, int data_only)
{
    struct fio_inst *in = r->in;
    for (int k = 0; k < r->nfiles_open; k++) {
        uint64_t t0 = iol_now_ns();
        int rc;
        if (data_only && r->files[k].fd >= 0) {
            rc = fdatasync(r->files[k].fd);
            if (rc) iol_err_errno(&in->err, IOL_ERR_RUNTIME, errno, "fdatasync");
        } else {
            rc = r->p->be->fsync(r->ctx, &r->files[k], &in->err);
        }
        if (rc) return -1;
        uint64_t t1 = iol_now_ns();
        if (t1 >= r->t->count_from_ns) {
            iol_hist_record(&in->sync_lat, t1 - t0);
            in->sync_ios++;
        }
    }
    return 0;
}

static int transfer_failed(struct io_run *r, const struct iol_req *d)
{
    const char *what = d->op == IOL_IO_READ ? "read" : "write";
    if (d->error == EOPNOTSUPP && r->p->o->hipri)
        return iol_err_errno(&r->in->err, IOL_ERR_RUNTIME, d->error, "hipri: polled I/O is not supported on %s (its file "
                             "system or device cannot poll; run without hipri): %s of %zu bytes at offset %" PRIu64,
                             r->paths[d->file - r->files], what, d->len, d->offset);
    const char *path = r->paths[d->file - r->files];
    if (d->error == EINVAL && (r->p->open_flags & IOL_O_DIRECT))   /* fio fails the same way, with less said */
        return iol_err_errno(&r->in->err, IOL_ERR_RUNTIME, d->error, "direct: %s %s: %zu bytes at offset %" PRIu64
                             " refused (O_DIRECT needs offsets, sizes and buffers aligned to the device's logical "
                             "block size, which may be above 512)", what, path, d->len, d->offset);
    if (d->error)
        return iol_err_errno(&r->in->err, IOL_ERR_RUNTIME, d->error, "%s %s: %zu bytes at offset %" PRIu64, what, path,
                             d->len, d->offset);
    return iol_err_set(&r->in->err, IOL_ERR_RUNTIME, "%s %s: %zu bytes at offset %" PRIu64 " moved %" PRId64
                       " bytes (end of file?)", what, path, d->len, d->offset, d->result);
}

/* Hands r->batch[0..n) to the backend and notes the times the next steps need. */
static int submit_batch(struct io_run *r, int n)
{
    const struct fio_plan *p = r->p;
    int got = p->be->submit(r->ctx, r->batch, n, &r->in->err);
    if (got != n) {
        if (got >= 0) iol_err_set(&r->in->err, IOL_ERR_RUNTIME, "backend %s accepted %d of %d requests", p->be->name, got, n);
        return -1;
    }
    if (p->async) {
        uint64_t now = iol_now_ns();
        for (int i = 0; i < n; i++) r->t_after[r->batch[i]->tag] = now;
    } else {
        r->chain = r->batch[n - 1]->t_done_ns;
    }
    return 0;
}

/* Fills free slots with new requests and submits them. Returns the number submitted, or -1. */
static int issue(struct io_run *r, int *nfree, int fsync_every)
{
    const struct fio_plan *p = r->p;
    int total = 0, nsub = 0;
    while (*nfree > 0 && !r->finished) {
        uint64_t g, len;
        enum iol_io_op op;
        /* drain, then sync; as fio, only when another I/O follows (at a loop's end, before the next loop's) */
        if (fsync_every && r->writes_since_sync >= (uint64_t)fsync_every && loop_has_io(r)) break;
        if (r->loop_end) break;
        if (r->ramp_pending && iol_now_ns() >= r->t->count_from_ns) r->ramp_pending = 0;
        if (r->ramp_mode && !r->ramp_pending) {
            /* done when loops x size bytes completed after the ramp; wait while what is in flight may do it
             * (an I/O issued before the ramp's end counts only if it completes after it) */
            uint64_t have = r->in->dir[0].bytes + r->in->dir[1].bytes, total = (uint64_t)p->o->loops * p->io_size;
            if (have >= total) {
                r->finished = 1;
                break;
            }
            if (have + r->inflight_bytes >= total) break;
        }
        if (!next_io(r, &g, &len, &op)) {
            if (!p->o->time_based && (r->ramp_mode || r->loop + 1 < (uint64_t)p->o->loops)) {
                r->loop_end = 1;   /* fio ends each loop: every I/O completes, then end_fsync and invalidate */
                break;
            }
            /* A time_based job wraps without stopping; fio drops the region's pages when its random map is
             * full, or a sequential job on one file starts again. */
            if (p->o->time_based && (p->random ? !p->o->norandommap : p->nfiles == 1)) invalidate_files(r, 0);
            next_loop(r);
            continue;
        }
        r->inflight_bytes += len;
        int slot = r->free_slots[--*nfree];
        struct iol_req *q = &r->reqs[slot];
        int k = (int)(g / p->filesize);
        q->op = op;
        q->file = &r->files[k];
        q->buf = r->bufs[slot];
        q->len = len;
        q->offset = p->o->offset + g % p->filesize;
        q->tag = (uint64_t)slot;
        if (!p->async) {   /* the previous completion's time: one clock reading per transfer */
            q->flags = IOL_REQ_SUBMIT_STAMPED;
            q->t_submit_ns = r->chain;
        } else {
            q->flags = 0;
        }
        if (r->iolog)
            fprintf(r->iolog, "%s %s %" PRIu64 " %zu\n", r->paths[k], op == IOL_IO_READ ? "read" : "write", q->offset, q->len);
        if (op == IOL_IO_WRITE) {
            if (p->verify) verify_stamp(r, q, k, q->offset);
            r->writes_since_sync++;
        }
        r->batch[nsub++] = q;
        if (nsub == p->batch_submit || *nfree == 0) {
            if (submit_batch(r, nsub)) return -1;
            total += nsub;
            nsub = 0;
        }
    }
    if (nsub && submit_batch(r, nsub)) return -1;
    return total + nsub;
}

static void mark_written(struct io_run *r, const struct iol_req *d)
{
    uint64_t k = (uint64_t)(d->file - r->files);
    uint64_t b = (k * r->p->filesize + (d->offset - r->p->o->offset)) / r->p->bs[0];
    r->written[b >> 3] |= (uint8_t)(1u << (b & 7));
}

/* One completed request: counted when it ended after the ramp. */
static inline void account(struct io_run *r, const struct iol_req *d)
{
    struct fio_inst *in = r->in;
    if (d->t_done_ns < r->t->count_from_ns) return;
    int dir = d->op == IOL_IO_READ ? FIO_DIR_READ : FIO_DIR_WRITE;
    struct fio_dir_stats *s = &in->dir[dir];
    uint64_t lat = d->t_done_ns - d->t_submit_ns;
    iol_hist_record(&s->lat, lat);
    if (lat > r->sec_max[dir]) r->sec_max[dir] = lat;
    if (r->p->async) {
        uint64_t after = r->t_after[d->tag];
        iol_hist_record(&s->clat, d->t_done_ns > after ? d->t_done_ns - after : 0);
        iol_hist_record(&s->slat, after - d->t_submit_ns);
    } else {
        iol_hist_record(&s->clat, lat);
    }
    s->ios++;
    s->bytes += (uint64_t)d->result;
}

static int main_loop(struct io_run *r)
{
    const struct fio_plan *p = r->p;
    struct fio_inst *in = r->in;
    const int fsync_every = (int)(p->o->fsync ? p->o->fsync : p->o->fdatasync);
    int nfree = r->qd, inflight = 0, stop = 0;
    for (int i = 0; i < r->qd; i++) r->free_slots[i] = r->qd - 1 - i;
    r->next_sec_ns = r->t->count_from_ns + 1000000000ull;
    r->chain = iol_now_ns();
    /* CPU counts from the end of the ramp, as the I/Os do: marked at the first completion after it. */
    r->storage0 = -1;
    if (r->chain >= r->t->count_from_ns) {
        r->storage0 = storage_read_bytes();
        cpu_mark_now(&r->cpu0);
    }
    for (;;) {
        if (!stop) {
            int n = issue(r, &nfree, fsync_every);
            if (n < 0) return -1;
            inflight += n;
        }
        if (inflight == 0) {
            if (!stop && !r->finished && fsync_every && r->writes_since_sync >= (uint64_t)fsync_every && loop_has_io(r)) {
                if (sync_files(r, p->o->fdatasync != 0)) return -1;
                r->writes_since_sync = 0;
                r->chain = iol_now_ns();
                continue;
            }
            if (!stop && r->loop_end) {   /* between two loops, as fio's do_io ends and starts again */
                if (p->o->end_fsync && p->has_write && sync_files(r, 0)) return -1;
                invalidate_files(r, 1);
                r->loop_end = 0;
                next_loop(r);
                r->chain = iol_now_ns();
                continue;
            }
            break;
        }
        int can_issue = !stop && !r->finished && !r->loop_end && nfree > 0 &&
                        !(fsync_every && r->writes_since_sync >= (uint64_t)fsync_every);
        int min = can_issue ? p->complete_min : (p->complete_min > 1 ? p->complete_min : 1);
        if (min > inflight) min = inflight;
        int n = p->be->reap(r->ctx, r->done, min, p->complete_max, &in->err);
        if (n < 0) return -1;
        uint64_t last = 0;
        for (int i = 0; i < n; i++) {
            struct iol_req *d = r->done[i];
            if (d->error || d->result != (int64_t)d->len) {
                if (!stop) transfer_failed(r, d);
                stop = 1;
            } else {
                account(r, d);
                if (p->verify) {
                    int k = (int)(d->file - r->files);
                    if (d->op == IOL_IO_READ) verify_check(r, d, k);
                    else mark_written(r, d);
                }
            }
            if (d->t_done_ns > last) last = d->t_done_ns;
            r->inflight_bytes -= d->len;
            r->free_slots[nfree++] = (int)d->tag;
            inflight--;
        }
        if (n > 0) {
            if (!r->cpu0.set && last >= r->t->count_from_ns) {
                r->storage0 = storage_read_bytes();
                cpu_mark_now(&r->cpu0);
            }
            if (last > in->t_end) in->t_end = last;
            while (last >= r->next_sec_ns)
                if (roll_second(r)) return -1;
            if (last >= r->t->deadline_ns) stop = 1;
        }
        if (!stop && iol_interrupt_pending()) {
            iol_note_interrupt(&in->err);
            stop = 1;
        }
    }
    return in->err.code ? -1 : 0;
}

/* do_verify: reads back every block the job wrote and checks it (not counted in the job's figures). */
static int verify_pass(struct io_run *r)
{
    const struct fio_plan *p = r->p;
    uint64_t nblocks = p->size / p->bs[0];
    uint64_t b = 0;
    int nfree = r->qd, inflight = 0;
    for (int i = 0; i < r->qd; i++) r->free_slots[i] = r->qd - 1 - i;
    for (;;) {
        int nsub = 0;
        while (nfree > 0 && b < nblocks) {
            if (!(r->written[b >> 3] & (1u << (b & 7)))) {
                b++;
                continue;
            }
            int slot = r->free_slots[--nfree];
            struct iol_req *q = &r->reqs[slot];
            uint64_t g = b * p->bs[0];
            q->op = IOL_IO_READ;
            q->file = &r->files[g / p->filesize];
            q->buf = r->bufs[slot];
            q->len = p->bs[0];
            q->offset = p->o->offset + g % p->filesize;
            q->tag = (uint64_t)slot;
            q->flags = IOL_REQ_UNTIMED;
            r->batch[nsub++] = q;
            b++;
        }
        if (nsub) {
            int n = p->be->submit(r->ctx, r->batch, nsub, &r->in->err);
            if (n != nsub) return n >= 0 ? iol_err_set(&r->in->err, IOL_ERR_RUNTIME, "verify: submit failed") : -1;
            inflight += nsub;
        }
        if (!inflight) break;
        int n = p->be->reap(r->ctx, r->done, 1, r->qd, &r->in->err);
        if (n < 0) return -1;
        for (int i = 0; i < n; i++) {
            struct iol_req *d = r->done[i];
            if (d->error || d->result != (int64_t)d->len) transfer_failed(r, d);
            else verify_check(r, d, (int)(d->file - r->files));
            r->free_slots[nfree++] = (int)d->tag;
            inflight--;
        }
        if (r->in->err.code) return -1;
    }
    return 0;
}

/* ---- setup and teardown -------------------------------------------------------------------------------- */

static int open_all(struct io_run *r, const char *const *paths)
{
    const struct fio_plan *p = r->p;
    struct fio_inst *in = r->in;
    int flags = p->open_flags;
    if (p->has_read || (p->verify && p->o->do_verify)) flags |= IOL_O_READ;
    if (p->has_write) flags |= IOL_O_WRITE | IOL_O_CREATE;
    if (iol_backend_ctx_open(p->be, &r->ctx, r->qd, &p->bopts, &in->err)) return -1;
    if (p->be->register_buffers && p->be->register_buffers(r->ctx, r->bufs, r->qd, p->bs_max, &in->err) < 0) return -1;
    for (int k = 0; k < p->nfiles; k++) {
        if (p->be->open(r->ctx, &r->files[k], paths[k], flags, 0644, &in->err)) return -1;
        r->nfiles_open++;
        /* fadvise_hint, as fio gives it: on the file's descriptor, over the job's region; advice the kernel
         * refuses changes nothing fio reports, so neither does iolens (fio warns once; iolens says nothing). */
        if (p->fadvise >= 0 && r->files[k].fd >= 0)
            (void)posix_fadvise(r->files[k].fd, (off_t)p->o->offset, (off_t)p->filesize, p->fadvise);
    }
    if (p->o->write_iolog[0]) {
        char name[IOL_STR_MAX + 32];
        if (in->instance) snprintf(name, sizeof name, "%s.%" PRIu64, p->o->write_iolog, in->instance);
        else snprintf(name, sizeof name, "%s", p->o->write_iolog);
        if (!(r->iolog = fopen(name, "w"))) return iol_err_errno(&in->err, IOL_ERR_RUNTIME, errno, "write_iolog: %s", name);
        fprintf(r->iolog, "fio version 2 iolog\n");
        for (int k = 0; k < p->nfiles; k++) fprintf(r->iolog, "%s add\n", paths[k]);
        for (int k = 0; k < p->nfiles; k++) fprintf(r->iolog, "%s open\n", paths[k]);
    }
    return 0;
}

static void close_all(struct io_run *r)
{
    struct iol_err e = {0, ""};
    if (r->iolog) {
        for (int k = 0; k < r->nfiles_open; k++) fprintf(r->iolog, "%s close\n", r->paths[k]);
        if (fclose(r->iolog) && !r->in->err.code) iol_err_errno(&r->in->err, IOL_ERR_RUNTIME, errno, "write_iolog");
    }
    for (int k = 0; k < r->nfiles_open; k++)
        if (r->p->be->close(r->ctx, &r->files[k], &e) && !r->in->err.code) r->in->err = e;
    if (r->ctx) {
        if (r->p->be->stats) r->p->be->stats(r->ctx, &r->in->bstats);
        r->p->be->ctx_close(r->ctx);
    }
}

static int alloc_run(struct io_run *r)
{
    const struct fio_plan *p = r->p;
    int qd = r->qd;
    r->files = calloc((size_t)p->nfiles, sizeof *r->files);
    r->bufs = calloc((size_t)qd, sizeof *r->bufs);
    r->reqs = calloc((size_t)qd, sizeof *r->reqs);
    r->batch = calloc((size_t)qd, sizeof *r->batch);
    r->done = calloc((size_t)qd, sizeof *r->done);
    r->free_slots = calloc((size_t)qd, sizeof *r->free_slots);
    r->t_after = calloc((size_t)qd, sizeof *r->t_after);
    for (int d = 0; d < FIO_NDIR; d++) r->snap[d] = calloc(1, sizeof(struct iol_hist));
    if (!r->files || !r->bufs || !r->reqs || !r->batch || !r->done || !r->free_slots || !r->t_after || !r->snap[0] || !r->snap[1])
        return iol_err_set(&r->in->err, IOL_ERR_RUNTIME, "out of memory");
    size_t blen = (p->bs_max + IOL_DIRECT_ALIGN - 1) / IOL_DIRECT_ALIGN * IOL_DIRECT_ALIGN;
    for (int i = 0; i < qd; i++) {
        if (posix_memalign(&r->bufs[i], IOL_DIRECT_ALIGN, blen)) return iol_err_set(&r->in->err, IOL_ERR_RUNTIME, "out of memory");
        uint64_t *w = r->bufs[i];   /* data that does not compress: fio's default random buffer contents */
        for (size_t k = 0; k < blen / 8; k++) w[k] = iol_mix64(p->seed + ((uint64_t)i << 40) + k + 1);
    }
    if (r->per_file) {
        r->fios = calloc((size_t)p->nfiles, sizeof *r->fios);
        r->fpos = calloc((size_t)p->nfiles * FIO_NDIR, sizeof *r->fpos);
        if (!r->fios || !r->fpos) return iol_err_set(&r->in->err, IOL_ERR_RUNTIME, "out of memory");
        r->cur_file = -1;
        r->fblocks = p->filesize / p->align;
    }
    /* fio's random map, as large as fio's (a bit per block): made before the start, so not timed */
    if (r->use_map && r->per_file) {
        r->fmaps = calloc((size_t)p->nfiles, sizeof *r->fmaps);
        if (!r->fmaps) return iol_err_set(&r->in->err, IOL_ERR_RUNTIME, "out of memory");
        for (int k = 0; k < p->nfiles; k++)
            if (iol_randmap_init(&r->fmaps[k], r->fblocks))
                return iol_err_set(&r->in->err, IOL_ERR_RUNTIME, "out of memory for the random map of %" PRIu64 " blocks (norandommap=1 needs none)", r->fblocks);
    } else if (r->use_map && iol_randmap_init(&r->map, r->nunits)) {
        return iol_err_set(&r->in->err, IOL_ERR_RUNTIME, "out of memory for the random map of %" PRIu64 " blocks (norandommap=1 needs none)", r->nunits);
    }
    if (p->verify) {
        uint64_t nblocks = p->size / p->bs[0];
        r->written = calloc((size_t)(nblocks + 7) / 8, 1);
        if (!r->written) return iol_err_set(&r->in->err, IOL_ERR_RUNTIME, "out of memory");
    }
    return 0;
}

static void free_run(struct io_run *r)
{
    for (int i = 0; r->bufs && i < r->qd; i++) free(r->bufs[i]);
    free(r->files);
    free(r->bufs);
    free(r->reqs);
    free(r->batch);
    free(r->done);
    free(r->free_slots);
    free(r->t_after);
    free(r->written);
    free(r->fios);
    free(r->fpos);
    for (int k = 0; r->fmaps && k < r->p->nfiles; k++) iol_randmap_free(&r->fmaps[k]);
    free(r->fmaps);
    iol_randmap_free(&r->map);
    for (int d = 0; d < FIO_NDIR; d++) free(r->snap[d]);
    if (r->have_dist) iol_dist_free(&r->dist);
}

int fio_instance_run(struct fio_inst *in, const char *const *paths, fio_start_fn start, void *arg)
{
    const struct fio_plan *p = in->plan;
    struct io_run r;
    memset(&r, 0, sizeof r);
    r.in = in;
    r.p = p;
    r.paths = paths;
    r.qd = (int)p->o->iodepth;
    for (int d = 0; d < FIO_NDIR; d++) {
        iol_hist_init(&in->dir[d].lat);
        iol_hist_init(&in->dir[d].clat);
        iol_hist_init(&in->dir[d].slat);
    }
    iol_hist_init(&in->sync_lat);
    uint64_t seed = r.seed = p->seed_from_clock ? iol_mix64(iol_wall_ns() ^ iol_now_ns()) : p->seed;
    iol_rng_seed(&r.rng, iol_mix64(seed + in->instance * 0x632be59bd9b4e019ull + (uint64_t)p->index));
    r.nunits = p->nbs == 1 && !(p->random && p->o->norandommap && p->align != p->bs[0]) ? p->size / p->bs[0]
                                                                                         : p->size / p->align;
    r.loop_nios = p->io_size / p->bs[0];
    /* fio's file_service_type with several files; the other cases (one file, sequential service, bssplit, a
     * random_distribution) see the files as one address space, file after file. */
    r.ramp_mode = r.ramp_pending = p->ramp_ns > 0 && !p->o->time_based;
    r.per_file = p->nfiles > 1 && p->fservice != FIO_FS_SEQUENTIAL && p->nbs == 1 && p->dist == IOL_DIST_RANDOM;
    r.use_map = p->random && !p->o->norandommap && p->dist == IOL_DIST_RANDOM;
    if (r.use_map && p->nbs > 1) r.nunits = (p->filesize + p->align - 1) / p->align * (uint64_t)p->nfiles;
    int rc = alloc_run(&r);
    if (rc == 0 && p->dist != IOL_DIST_RANDOM) {
        rc = iol_dist_init(&r.dist, p->dist, p->dist_param, r.nunits, seed + in->instance + 1, &in->err);
        r.have_dist = rc == 0;
    }
    /* Files and the backend's context are opened before the start, so neither the job's time nor its CPU
     * includes them (fio also opens its files before its jobs start). */
    if (rc == 0) rc = open_all(&r, paths);
    r.t = start(arg);   /* always called: the group waits for every instance to be ready */
    if (rc == 0 && r.t) {
        in->t_start = r.t->count_from_ns;
        in->t_end = 0;
        rc = main_loop(&r);
        if (rc == 0 && p->o->end_fsync && p->has_write) rc = sync_files(&r, 0);
        uint64_t end = iol_now_ns();
        if (p->o->end_fsync && end > in->t_end) in->t_end = end;
        if (in->t_end < in->t_start) in->t_end = in->t_start;
        cpu_since(&r.cpu0, in->t_end - in->t_start, &in->ru);
        int64_t storage1 = r.cpu0.set && r.storage0 >= 0 ? storage_read_bytes() : -1;
        in->storage_known = storage1 >= r.storage0 && storage1 >= 0;
        in->storage_read_bytes = in->storage_known ? (uint64_t)(storage1 - r.storage0) : 0;
        /* The read-back is not the job's figure: outside its time and CPU (the group's window still has
         * it, as this thread's, never as kernel workers'). */
        if (rc == 0 && p->verify && p->has_write && p->o->do_verify) rc = verify_pass(&r);
    }
    close_all(&r);
    free_run(&r);
    return in->err.code ? -1 : 0;
}
