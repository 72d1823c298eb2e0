/* fio_report.c — rank 0 writes a fio run: the "fio" part of the JSON document (docs/schema.md) and a text
 * summary laid out like fio's, for people running iolens-bench directly. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "../common/interrupt.h"
#include "fio_report.h"
#include "run_doc.h"

#define LAT_ALL (IOL_DOC_LAT_BUCKETS | IOL_DOC_LAT_STDDEV)

static const char *const dir_names[FIO_NDIR] = {"read", "write"};

static const char *cache_name(enum fio_cache c)
{
    return c == FIO_CACHE_COLD ? "cold" : c == FIO_CACHE_HOT ? "hot" : "asis";
}

/* A buffered read figure is a cache figure when most of the bytes the job read did not come from the
 * storage. The evidence is the kernel's own count of what the job's reads fetched from the storage
 * (read_bytes of each instance's thread, after the ramp): below half of the bytes read, the page cache
 * served the rest — a hot or kept cache, tmpfs, a region read again, blocks just written, or readahead that
 * brought in blocks read later. cache=hot (pre_read) is a cache figure by design. Without that count (a
 * kernel without task I/O accounting) the reasons are inferred from the job's options. A buffered job that
 * writes and never syncs (no fsync=, fdatasync=, end_fsync, sync=) measures how fast the page cache took its
 * data: the storage may not have seen a byte of it when the job ended. The note says why (both reasons, for a
 * mixed job that has both). */
struct cache_verdict {
    int reads, writes;   /* the read figure comes from memory; the writes were never synced */
    char note[640];
};

/* Why a read figure measured memory, by what the options and the files say. */
static const char *read_cause(const struct fio_plan *p, const struct fio_job_result *jr)
{
    const struct fio_job_opts *o = p->o;
    if (p->cache == FIO_CACHE_ASIS) return "cache=asis (invalidate=0): pages the files had in memory stayed there";
    if (!jr->evicted) return "the pages could not be dropped (tmpfs keeps files only in memory, or dirty pages were "
                             "still being written back)";
    if (o->time_based || o->loops > 1 || o->norandommap || p->dist != IOL_DIST_RANDOM)
        return "the job reads blocks more than once: later reads come from the page cache";
    if (p->has_write) return "the job reads blocks it wrote moments earlier";
    return "readahead brought in blocks the job read later (fadvise_hint=1 tells the kernel the pattern)";
}

static int cache_figure(const struct fio_plan *p, const struct fio_job_result *jr, struct cache_verdict *v)
{
    const char *rd = NULL, *wr = NULL;
    char measured[400] = "";
    memset(v, 0, sizeof *v);
    if ((p->open_flags & IOL_O_DIRECT) || !p->be->does_io) return 0;
    const struct fio_job_opts *o = p->o;
    uint64_t rbytes = jr->dir[FIO_DIR_READ].bytes;
    if (!p->has_read) { /* nothing read: no read figure */
    } else if (p->cache == FIO_CACHE_HOT) rd = "cache=hot (pre_read): the files were read into memory before the job";
    else if (rbytes && !jr->storage_unknown) {
        /* Each read that missed made the kernel fetch at least a page: reads beyond storage bytes / page size
         * were served from memory (blocks smaller than a page share the page the first one fetched). */
        long pg = sysconf(_SC_PAGESIZE);
        uint64_t page = pg > 0 ? (uint64_t)pg : 4096, reads = jr->dir[FIO_DIR_READ].ios;
        uint64_t misses = jr->storage_read_bytes / page;
        /* A synchronous read-only job's thread sleeps once for each read that waits for the storage (its
         * voluntary context switches): in a random job, fewer than reads means readahead or the cache served
         * the rest, even when every byte was fetched once. (A sequential job's readahead is the storage's
         * own pattern, fio's too: its figure is the storage's.) */
        int sync_reader = !p->async && !p->has_write && p->random;
        if (sync_reader && jr->waits < misses) misses = jr->waits;
        if (jr->storage_read_bytes * 2 < rbytes) {
            snprintf(measured, sizeof measured, "%.0f%% of the bytes read came from the storage (kernel's count), "
                     "the rest from the page cache: %s", 100.0 * (double)jr->storage_read_bytes / (double)rbytes,
                     read_cause(p, jr));
            rd = measured;
        } else if (misses * 2 < reads) {
            snprintf(measured, sizeof measured, "at least %.0f%% of the reads were served from the page cache: "
                     "%" PRIu64 " of %" PRIu64 " reads waited for the storage (kernel's counts: pages fetched%s): %s",
                     100.0 * (double)(reads - misses) / (double)reads, misses, reads,
                     sync_reader ? ", waits of the job's threads" : "",
                     p->bs_min < page ? "blocks smaller than a page share the page the first one fetched"
                                      : read_cause(p, jr));
            rd = measured;
        }
    } else if (p->cache == FIO_CACHE_ASIS || !jr->evicted || o->time_based || o->loops > 1 || p->has_write)
        rd = read_cause(p, jr);
    if (p->has_write && !o->fsync && !o->fdatasync && !o->end_fsync && !(p->open_flags & (IOL_O_SYNC | IOL_O_DSYNC)))
        wr = "buffered writes without fsync=, fdatasync=, end_fsync or sync=: the figure is how fast the page "
             "cache took the data, which may not have reached the storage when the job ended";
    snprintf(v->note, sizeof v->note, "%s%s%s", rd ? rd : "", rd && wr ? "; " : "", wr ? wr : "");
    v->reads = rd != NULL;
    v->writes = wr != NULL;
    return v->reads || v->writes;
}

static double job_elapsed_s(const struct fio_job_result *jr)
{
    return jr->t_end > jr->t_start ? (double)(jr->t_end - jr->t_start) / 1e9 : 0.0;
}

static uint64_t total_ios(const struct fio_job_result *jr)
{
    return jr->dir[0].ios + jr->dir[1].ios;
}

/* Percentile of one second's coarse buckets: the upper bound of the fine bucket range, clamped to max. */
static uint64_t sec_percentile(const uint64_t *w, double pct)
{
    uint64_t count = w[0], max = w[2];
    if (!count) return 0;
    uint64_t want = (uint64_t)ceil(pct / 100.0 * (double)count), seen = 0;
    if (want < 1) want = 1;
    for (unsigned b = 0; b < FIO_SEC_NBUCKETS; b++) {
        seen += w[3 + b];
        if (seen >= want) {
            unsigned fine = (b << FIO_SEC_SHIFT) + (1u << FIO_SEC_SHIFT) - 1;
            if (fine >= IOL_HIST_NBUCKETS) fine = IOL_HIST_NBUCKETS - 1;
            uint64_t v = iol_hist_bucket_high(fine);
            return v < max ? v : max;
        }
    }
    return max;
}

static void json_cpu(struct iol_json *j, double usr, double sys, uint64_t ctx, double elapsed, double instances, uint64_t ios)
{
    double wall = elapsed * instances;
    iol_json_kv_double(j, "usr_s", usr);
    iol_json_kv_double(j, "sys_s", sys);
    iol_json_kv_double(j, "usr_pct", wall > 0 ? 100.0 * usr / wall : 0.0);
    iol_json_kv_double(j, "sys_pct", wall > 0 ? 100.0 * sys / wall : 0.0);
    iol_json_kv_uint(j, "ctx", ctx);
    iol_json_kv_double(j, "per_io_ns", ios ? (usr + sys) * 1e9 / (double)ios : 0.0);
}

/* An instance's latency: the schema's LAT without buckets, with fio's percentile list. */
static void json_lat_summary(struct iol_json *j, const char *key, const struct fio_lat_summary *s)
{
    iol_json_key(j, key);
    iol_json_begin_object(j);
    iol_json_kv_uint(j, "count", s->count);
    iol_json_kv_uint(j, "min", s->min);
    iol_json_kv_double(j, "mean", s->mean);
    iol_json_kv_double(j, "stddev", s->stddev);
    iol_json_kv_uint(j, "p50", s->pct[6]);
    iol_json_kv_uint(j, "p90", s->pct[10]);
    iol_json_kv_uint(j, "p99", s->pct[12]);
    iol_json_kv_uint(j, "p99_9", s->pct[14]);
    iol_json_kv_uint(j, "max", s->max);
    iol_json_key(j, "percentiles");
    iol_json_begin_array(j);
    for (int k = 0; s->count && k < FIO_NPCT; k++) {
        iol_json_begin_array(j);
        iol_json_double(j, fio_pct_points[k]);
        iol_json_uint(j, s->pct[k]);
        iol_json_end_array(j);
    }
    iol_json_end_array(j);
    iol_json_end_object(j);
}

static void json_samples(struct iol_json *j, const char *key, const struct fio_samples *s)
{
    iol_json_key(j, key);
    iol_json_begin_object(j);
    iol_json_kv_double(j, "min", s->n ? s->min : 0.0);
    iol_json_kv_double(j, "max", s->max);
    iol_json_kv_double(j, "mean", s->mean);
    iol_json_kv_double(j, "stddev", s->stddev);
    iol_json_kv_uint(j, "samples", s->n);
    iol_json_end_object(j);
}

static void json_instance(struct iol_json *j, const struct fio_inst_summary *s)
{
    iol_json_begin_object(j);
    iol_json_kv_int(j, "rank", s->rank);
    iol_json_kv_uint(j, "instance", s->instance);
    for (int d = 0; d < FIO_NDIR; d++) {
        iol_json_key(j, dir_names[d]);
        iol_json_begin_object(j);
        iol_json_kv_uint(j, "ios", s->ios[d]);
        iol_json_kv_uint(j, "bytes", s->bytes[d]);
        iol_json_kv_double(j, "runtime_s", s->ios[d] ? s->runtime_s : 0.0);
        json_lat_summary(j, "lat_ns", &s->lat[d]);
        json_lat_summary(j, "clat_ns", &s->clat[d]);
        json_lat_summary(j, "slat_ns", &s->slat[d]);
        json_samples(j, "bw_kib_s", &s->bw_kib[d]);
        json_samples(j, "iops", &s->iops[d]);
        iol_json_end_object(j);
    }
    iol_json_key(j, "sync");
    iol_json_begin_object(j);
    iol_json_kv_uint(j, "ios", s->sync_ios);
    json_lat_summary(j, "lat_ns", &s->sync);
    iol_json_end_object(j);
    iol_json_key(j, "clat_dist");
    iol_json_begin_object(j);
    static const char *const units[3] = {"ns", "us", "ms"};
    for (int u = 0; u < 3; u++) {
        char label[16];
        iol_json_key(j, units[u]);
        iol_json_begin_object(j);
        for (int e = 0; e < (u == 2 ? 11 : 10); e++) {
            snprintf(label, sizeof label, "%u", fio_latdist_edges[e]);
            iol_json_kv_uint(j, label, s->clat_dist[u * 10 + e]);
        }
        if (u == 2) iol_json_kv_uint(j, ">=2000", s->clat_dist[FIO_LATDIST_N - 1]);
        iol_json_end_object(j);
    }
    iol_json_end_object(j);
    iol_json_kv_double(j, "usr_s", s->usr_s);
    iol_json_kv_double(j, "sys_s", s->sys_s);
    iol_json_kv_uint(j, "ctx", s->ctx);
    iol_json_kv_double(j, "elapsed_s", s->runtime_s);
    iol_json_end_object(j);
}

/* A point of the aligned clock in seconds from the start of the run's first group (its first job's end of
 * ramp): where jobs and groups lie on one time line. */
static double since_first_group(const struct fio_run *r, uint64_t t)
{
    uint64_t t0 = r->groups && r->groups[0].done ? r->groups[0].t_start : t;
    return t >= t0 ? (double)(t - t0) / 1e9 : -((double)(t0 - t) / 1e9);
}

static void json_job(struct iol_json *j, const struct fio_run *r, int idx)
{
    const struct fio_plan *p = &r->plans[idx];
    const struct fio_job_result *jr = &r->jobs[idx];
    double elapsed = job_elapsed_s(jr);
    int instances = (int)p->o->numjobs * r->comm->size;
    iol_json_begin_object(j);
    iol_json_kv_string(j, "name", p->o->name);
    iol_json_kv_int(j, "group", p->group);
    iol_json_kv_int(j, "instances", instances);
    iol_json_kv_string(j, "ioengine", p->o->ioengine);
    iol_json_key(j, "files");
    iol_json_begin_array(j);
    /* The first instance's files (one client of a multi-client run: its own first instance's). */
    uint64_t first = p->shared_files ? 0 : (uint64_t)r->cfg->client_index * (uint64_t)p->o->numjobs;
    for (int k = 0; k < p->nfiles && k < 16; k++) {
        char path[IOL_STR_MAX + 512];
        fio_file_path(p, first, k, path, sizeof path);
        iol_json_string(j, path);
    }
    iol_json_end_array(j);
    iol_json_kv_string(j, "file_system", jr->fs_type);
    struct cache_verdict v;
    int figure = cache_figure(p, jr, &v);
    iol_json_key(j, "cache");
    iol_json_begin_object(j);
    iol_json_kv_string(j, "mode", cache_name(p->cache));
    iol_json_kv_bool(j, "direct", (p->open_flags & IOL_O_DIRECT) != 0);
    iol_json_kv_bool(j, "evicted", p->cache == FIO_CACHE_COLD && jr->evicted);
    iol_json_kv_bool(j, "cache_figure", figure);
    iol_json_kv_bool(j, "reads_from_memory", v.reads);
    iol_json_kv_bool(j, "unsynced_writes", v.writes);
    if (p->has_read && !jr->storage_unknown && p->be->does_io) iol_json_kv_uint(j, "storage_read_bytes", jr->storage_read_bytes);
    else iol_json_kv_string(j, "storage_read_bytes", NULL);
    iol_json_kv_string(j, "note", figure ? v.note : NULL);
    iol_json_end_object(j);
    iol_json_kv_double(j, "elapsed_s", elapsed);
    iol_json_kv_double(j, "start_s", since_first_group(r, jr->t_start));
    iol_json_kv_double(j, "end_s", since_first_group(r, jr->t_end));
    iol_json_kv_double(j, "ramp_s", (double)p->ramp_ns / 1e9);
    for (int d = 0; d < FIO_NDIR; d++) {
        const struct fio_dir_stats *s = &jr->dir[d];
        double rt = s->ios ? elapsed : 0.0;
        iol_json_key(j, dir_names[d]);
        iol_json_begin_object(j);
        iol_json_kv_uint(j, "ios", s->ios);
        iol_json_kv_uint(j, "bytes", s->bytes);
        iol_json_kv_double(j, "runtime_s", rt);
        iol_json_kv_double(j, "iops", rt > 0 ? (double)s->ios / rt : 0.0);
        iol_json_kv_double(j, "bw_bytes_per_s", rt > 0 ? (double)s->bytes / rt : 0.0);
        iol_doc_latency_as(j, "lat_ns", &s->lat, LAT_ALL);
        iol_doc_latency_as(j, "clat_ns", &s->clat, LAT_ALL);
        iol_doc_latency_as(j, "slat_ns", &s->slat, LAT_ALL);
        iol_json_end_object(j);
    }
    iol_json_key(j, "sync");
    iol_json_begin_object(j);
    iol_json_kv_uint(j, "ios", jr->sync_ios);
    iol_doc_latency_as(j, "lat_ns", &jr->sync_lat, LAT_ALL);
    iol_json_end_object(j);
    iol_json_key(j, "verify");
    if (p->verify) {
        iol_json_begin_object(j);
        iol_json_kv_string(j, "mode", p->o->verify);
        iol_json_kv_uint(j, "blocks_checked", jr->verify_blocks);
        iol_json_kv_uint(j, "errors", jr->verify_errors);
        iol_json_key(j, "first_bad_offset");
        if (jr->verify_errors) iol_json_uint(j, jr->verify_first_bad);
        else iol_json_null(j);
        iol_json_kv_string(j, "first_bad_file", jr->verify_errors ? jr->verify_bad_file : NULL);
        iol_json_end_object(j);
    } else {
        iol_json_null(j);
    }
    iol_json_key(j, "cpu");
    iol_json_begin_object(j);
    json_cpu(j, jr->usr_s, jr->sys_s, jr->ctx, elapsed, instances, total_ios(jr));
    iol_json_end_object(j);
    iol_json_key(j, "per_second");
    iol_json_begin_array(j);
    for (uint64_t s = 0; jr->secs && s < jr->nsecs; s++) {
        iol_json_begin_object(j);
        iol_json_kv_uint(j, "t_s", s + 1);
        for (int d = 0; d < FIO_NDIR; d++) {
            const uint64_t *w = &jr->secs[(s * FIO_NDIR + (uint64_t)d) * FIO_SEC_WORDS];
            iol_json_key(j, dir_names[d]);
            iol_json_begin_object(j);
            iol_json_kv_uint(j, "ios", w[0]);
            iol_json_kv_uint(j, "bytes", w[1]);
            iol_json_kv_uint(j, "p50_ns", sec_percentile(w, 50));
            iol_json_kv_uint(j, "p90_ns", sec_percentile(w, 90));
            iol_json_kv_uint(j, "p99_ns", sec_percentile(w, 99));
            iol_json_kv_uint(j, "p99_9_ns", sec_percentile(w, 99.9));
            iol_json_kv_uint(j, "max_ns", w[0] ? w[2] : 0);
            iol_json_end_object(j);
        }
        iol_json_end_object(j);
    }
    iol_json_end_array(j);
    iol_json_key(j, "per_instance");
    iol_json_begin_array(j);
    for (int i = 0; i < jr->nsumm; i++) json_instance(j, &jr->summ[i]);
    iol_json_end_array(j);
    iol_doc_backend_stats(j, &jr->bstats);
    iol_json_end_object(j);
}

static void json_group(struct iol_json *j, const struct fio_run *r, int gid)
{
    const struct fio_group_result *g = &r->groups[gid];
    iol_json_begin_object(j);
    iol_json_kv_int(j, "id", gid);
    iol_json_kv_bool(j, "cut_short", g->cut_short);
    iol_json_key(j, "jobs");
    iol_json_begin_array(j);
    double usr = 0, sys = 0, instances = 0;
    uint64_t ctx = 0, ios = 0;
    for (int k = 0; k < r->cfg->njobs; k++) {
        if (r->plans[k].group != gid) continue;
        iol_json_int(j, k);
        usr += r->jobs[k].usr_s;
        sys += r->jobs[k].sys_s;
        ctx += r->jobs[k].ctx;
        ios += total_ios(&r->jobs[k]);
        instances += (double)r->plans[k].o->numjobs * r->comm->size;
    }
    iol_json_end_array(j);
    iol_json_kv_double(j, "elapsed_s", g->elapsed_s);
    iol_json_kv_double(j, "start_s", since_first_group(r, g->t_start));
    iol_json_kv_double(j, "end_s", since_first_group(r, g->t_end));
    iol_json_key(j, "cpu");
    iol_json_begin_object(j);
    json_cpu(j, usr, sys, ctx, g->elapsed_s, instances, ios);
    iol_json_kv_double(j, "kernel_workers_s", g->kernel_workers_s);
    iol_json_kv_double(j, "total_s", g->process_cpu_s);
    /* What an I/O cost the machine: the threads' time and the kernel workers' (io-wq, SQPOLL), which
     * per_io_ns leaves out. */
    iol_json_kv_double(j, "total_per_io_ns", ios ? (usr + sys + g->kernel_workers_s) * 1e9 / (double)ios : 0.0);
    iol_json_end_object(j);
    iol_json_key(j, "machine");
    iol_json_begin_object(j);
    /* /proc/stat counts in clock ticks (10 ms): over less than a second the share is too coarse to judge. */
    double cap = g->host_window_s * g->host_cpus;
    double others_pct = cap > 0 ? 100.0 * g->host_others_s / cap : 0.0;
    if (others_pct > 100.0) others_pct = 100.0;
    iol_json_kv_int(j, "cpus", g->host_cpus);
    iol_json_kv_double(j, "busy_s", g->host_busy_s);
    iol_json_kv_double(j, "others_busy_s", g->host_others_s);
    iol_json_kv_double(j, "others_busy_pct", others_pct);
    iol_json_kv_double(j, "steal_s", g->host_steal_s);
    char note[160];
    snprintf(note, sizeof note, "other processes kept %.0f%% of this host's CPUs busy during the run", others_pct);
    iol_json_kv_double(j, "window_s", g->host_window_s);
    iol_json_kv_string(j, "note", others_pct >= 10.0 && g->host_window_s >= 1.0 ? note : NULL);
    iol_json_end_object(j);
    iol_json_end_object(j);
}

void fio_report_json(struct iol_json *j, const struct fio_run *r)
{
    iol_json_key(j, "config");
    iol_json_begin_object(j);
    iol_json_kv_string(j, "jobfiles", r->cfg->jobfiles);
    iol_json_key(j, "jobs");
    iol_json_begin_array(j);
    for (int k = 0; k < r->cfg->njobs; k++) {
        struct iol_optset set = {fio_job_options, (void *)&r->cfg->jobs[k]};
        iol_json_begin_object(j);
        iol_json_kv_string(j, "name", r->cfg->jobs[k].name);
        iol_json_kv_int(j, "group", r->plans[k].o ? r->plans[k].group : 0);
        iol_json_key(j, "options");
        iol_json_begin_object(j);
        iol_opts_json(&set, 1, j);
        iol_json_end_object(j);
        iol_json_end_object(j);
    }
    iol_json_end_array(j);
    iol_json_end_object(j);
    if (!r->groups) return;
    iol_json_key(j, "fio");
    iol_json_begin_object(j);
    iol_json_key(j, "groups");
    iol_json_begin_array(j);
    for (int g = 0; g < r->ngroups; g++)
        if (r->groups[g].done) json_group(j, r, g);
    iol_json_end_array(j);
    iol_json_key(j, "jobs");
    iol_json_begin_array(j);
    for (int k = 0; k < r->cfg->njobs; k++)
        if (r->jobs[k].done) json_job(j, r, k);
    iol_json_end_array(j);
    iol_json_end_object(j);
}

/* ---- text ---------------------------------------------------------------------------------------------- */

static void text_lat(FILE *fp, const char *what, const struct iol_hist *h)
{
    if (!h->count) return;
    fprintf(fp, "    %5s (usec): min=%.2f, max=%.2f, avg=%.2f, stdev=%.2f\n", what, (double)h->min / 1e3,
            (double)h->max / 1e3, iol_hist_mean(h) / 1e3, iol_hist_stddev(h) / 1e3);
}

static void text_percentiles(FILE *fp, const char *what, const struct iol_hist *h)
{
    fprintf(fp, "    %s percentiles (usec): 50th=%.2f, 90th=%.2f, 99th=%.2f, 99.9th=%.2f\n", what,
            (double)iol_hist_percentile(h, 50) / 1e3, (double)iol_hist_percentile(h, 90) / 1e3,
            (double)iol_hist_percentile(h, 99) / 1e3, (double)iol_hist_percentile(h, 99.9) / 1e3);
}

static void text_job(FILE *fp, const struct fio_run *r, int idx)
{
    const struct fio_plan *p = &r->plans[idx];
    const struct fio_job_result *jr = &r->jobs[idx];
    double el = job_elapsed_s(jr);
    int instances = (int)p->o->numjobs * r->comm->size;
    fprintf(fp, "%s: (groupid=%d, jobs=%d): err=%2d: %s, iodepth=%" PRId64 ", %s\n", p->o->name, p->group, instances, 0,
            p->o->rw, p->o->iodepth, p->o->ioengine);
    for (int d = 0; d < FIO_NDIR; d++) {
        const struct fio_dir_stats *s = &jr->dir[d];
        if (!s->ios) continue;
        double bw = el > 0 ? (double)s->bytes / el : 0.0;
        fprintf(fp, "  %s: IOPS=%.0f, BW=%.1fMiB/s (%.1fMB/s)(%.1fMiB/%.0fmsec)\n", dir_names[d],
                el > 0 ? (double)s->ios / el : 0.0, bw / 1048576.0, bw / 1e6, (double)s->bytes / 1048576.0, el * 1e3);
        if (p->async) text_lat(fp, "slat", &s->slat);
        text_lat(fp, "clat", &s->clat);
        text_lat(fp, "lat", &s->lat);
        text_percentiles(fp, "clat", &s->clat);
        if (p->async) text_percentiles(fp, " lat", &s->lat);   /* fio's lat_percentiles=1 */
    }
    if (jr->sync_ios) text_lat(fp, "sync", &jr->sync_lat);
    double wall = el * instances;
    uint64_t ios = total_ios(jr);
    fprintf(fp, "  cpu          : usr=%.2f%%, sys=%.2f%%, ctx=%" PRIu64 ", %.0f ns CPU per I/O\n",
            wall > 0 ? 100 * jr->usr_s / wall : 0.0, wall > 0 ? 100 * jr->sys_s / wall : 0.0, jr->ctx,
            ios ? (jr->usr_s + jr->sys_s) * 1e9 / (double)ios : 0.0);
    if (p->verify)
        fprintf(fp, "  verify       : %" PRIu64 " blocks checked, %" PRIu64 " bad%s\n", jr->verify_blocks, jr->verify_errors,
                jr->verify_errors ? " (VERIFY FAILED)" : "");
    struct cache_verdict v;
    if (cache_figure(p, jr, &v)) fprintf(fp, "  warning      : buffered figures are cache figures: %s\n", v.note);
    if (p->be->register_buffers && p->o->fixedbufs && jr->bstats.fixed_bufs < jr->bstats.requests)
        fprintf(fp, "  warning      : fixedbufs=1, but %" PRIu64 " of %" PRIu64 " requests used a registered buffer: "
                "registering failed (over the locked-memory limit, ulimit -l, without CAP_IPC_LOCK) and the rest "
                "went as plain reads and writes\n", jr->bstats.fixed_bufs, jr->bstats.requests);
}

void fio_report_text(FILE *fp, const struct fio_run *r)
{
    for (int g = 0; g < r->ngroups; g++) {
        if (!r->groups[g].done) continue;
        for (int k = 0; k < r->cfg->njobs; k++)
            if (r->plans[k].group == g && r->jobs[k].done) text_job(fp, r, k);
        const struct fio_group_result *gr = &r->groups[g];
        if (gr->cut_short) {
            int sig = iol_interrupt_pending();
            fprintf(fp, "\nCUT SHORT%s%s: group %d stopped before its end; the figures cover what was done until then\n",
                    sig ? " by " : "", sig ? iol_signal_name(sig) : "", g);
        }
        fprintf(fp, "\nRun status group %d (all jobs):\n", g);
        for (int d = 0; d < FIO_NDIR; d++) {
            uint64_t bytes = 0;
            for (int k = 0; k < r->cfg->njobs; k++)
                if (r->plans[k].group == g) bytes += r->jobs[k].dir[d].bytes;
            if (!bytes) continue;
            double bw = gr->elapsed_s > 0 ? (double)bytes / gr->elapsed_s : 0.0;
            fprintf(fp, "  %5s: bw=%.1fMiB/s (%.1fMB/s), io=%.1fMiB, run=%.0fmsec\n", d ? "WRITE" : "READ", bw / 1048576.0,
                    bw / 1e6, (double)bytes / 1048576.0, gr->elapsed_s * 1e3);
        }
        double usr = 0, sys = 0;
        uint64_t ios = 0;
        for (int k = 0; k < r->cfg->njobs; k++) {
            if (r->plans[k].group != g) continue;
            usr += r->jobs[k].usr_s;
            sys += r->jobs[k].sys_s;
            ios += total_ios(&r->jobs[k]);
        }
        fprintf(fp, "  cpu: usr=%.2fs, sys=%.2fs, kernel workers=%.2fs; %.0f ns CPU per I/O with the kernel workers\n", usr,
                sys, gr->kernel_workers_s, ios ? (usr + sys + gr->kernel_workers_s) * 1e9 / (double)ios : 0.0);
        double cap = gr->host_window_s * gr->host_cpus;
        if (gr->host_window_s >= 1.0 && gr->host_others_s / cap >= 0.10)
            fprintf(fp, "  note: other processes kept %.0f%% of this host's CPUs busy during the run\n",
                    100 * gr->host_others_s / cap);
        fprintf(fp, "\n");
    }
}
