/* fio_reduce.c — combining the figures of every instance on every rank into one result per job and group.
 * Histograms and per-second buckets are summed (exact); times are the first start and last end on the
 * aligned clock; per-instance summaries are gathered to rank 0 for the per-instance report. */
#define _GNU_SOURCE
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fio_report.h"
#include "run_sync.h"

static int comm_failed(struct fio_run *r)
{
    return iol_err_set(&r->err, IOL_ERR_RUNTIME, "communicator failed while combining results");
}

static double tv_s(struct timeval tv)
{
    return (double)tv.tv_sec + (double)tv.tv_usec / 1e6;
}

const double fio_pct_points[FIO_NPCT] = {1, 5, 10, 20, 30, 40, 50, 60, 70, 80, 90, 95, 99, 99.5, 99.9, 99.95, 99.99};
const unsigned fio_latdist_edges[11] = {2, 4, 10, 20, 50, 100, 250, 500, 750, 1000, 2000};

void fio_lat_summarize(const struct iol_hist *h, struct fio_lat_summary *s)
{
    memset(s, 0, sizeof *s);
    if (!h->count) return;
    s->count = h->count;
    s->min = h->min;
    s->max = h->max;
    s->mean = iol_hist_mean(h);
    s->stddev = iol_hist_stddev(h);
    for (int i = 0; i < FIO_NPCT; i++) s->pct[i] = iol_hist_percentile(h, fio_pct_points[i]);
}

/* As fio_report.latency_distribution (Python) slots a job's buckets: below 1000 in ns, below 10^6 in whole
 * us, else in whole ms; the first edge above the value. */
unsigned fio_latdist_slot(uint64_t ns)
{
    unsigned base = 0, nedges = 10;
    uint64_t v = ns;
    if (ns >= 1000000) {
        base = 20;
        nedges = 11;
        v = ns / 1000000;
    } else if (ns >= 1000) {
        base = 10;
        v = ns / 1000;
    }
    for (unsigned e = 0; e < nedges; e++)
        if (v < fio_latdist_edges[e]) return base + e;
    return FIO_LATDIST_N - 1;
}

/* One-second samples of one direction of an instance: KiB/s and IOPS (a second without a completion is 0). */
static void samples(const struct fio_inst *in, int d, int bytes, struct fio_samples *out)
{
    memset(out, 0, sizeof *out);
    if (!in->nsecs || !(in->dir[d].ios || in->dir[d].bytes)) return;
    double sum = 0, sq = 0;
    out->min = INFINITY;
    for (uint64_t s = 0; s < in->nsecs; s++) {
        const struct fio_sec *x = &in->secs[s * FIO_NDIR + (uint64_t)d];
        double v = bytes ? (double)x->bytes / 1024.0 : (double)x->ios;
        sum += v;
        if (v < out->min) out->min = v;
        if (v > out->max) out->max = v;
    }
    out->n = in->nsecs;
    out->mean = sum / (double)in->nsecs;
    for (uint64_t s = 0; s < in->nsecs; s++) {
        const struct fio_sec *x = &in->secs[s * FIO_NDIR + (uint64_t)d];
        double v = (bytes ? (double)x->bytes / 1024.0 : (double)x->ios) - out->mean;
        sq += v * v;
    }
    out->stddev = in->nsecs > 1 ? sqrt(sq / (double)(in->nsecs - 1)) : 0.0;
}

static void summarize(const struct fio_inst *in, struct fio_inst_summary *s)
{
    memset(s, 0, sizeof *s);
    s->rank = in->rank;
    s->instance = in->instance;
    for (int d = 0; d < FIO_NDIR; d++) {
        const struct fio_dir_stats *x = &in->dir[d];
        s->ios[d] = x->ios;
        s->bytes[d] = x->bytes;
        fio_lat_summarize(&x->lat, &s->lat[d]);
        fio_lat_summarize(&x->clat, &s->clat[d]);
        fio_lat_summarize(&x->slat, &s->slat[d]);
        samples(in, d, 1, &s->bw_kib[d]);
        samples(in, d, 0, &s->iops[d]);
        for (unsigned b = 0; b < IOL_HIST_NBUCKETS; b++) {
            if (!x->clat.buckets[b]) continue;
            uint64_t v = iol_hist_bucket_high(b);   /* the value the percentiles use: clamped to [min, max] */
            if (v < x->clat.min) v = x->clat.min;
            if (v > x->clat.max) v = x->clat.max;
            s->clat_dist[fio_latdist_slot(v)] += x->clat.buckets[b];
        }
    }
    fio_lat_summarize(&in->sync_lat, &s->sync);
    s->sync_ios = in->sync_ios;
    s->ctx = (uint64_t)(in->ru.ru_nvcsw + in->ru.ru_nivcsw);
    s->runtime_s = in->t_end > in->t_start ? (double)(in->t_end - in->t_start) / 1e9 : 0.0;
    s->usr_s = tv_s(in->ru.ru_utime);
    s->sys_s = tv_s(in->ru.ru_stime);
}

/* This rank's instances of job j summed into jr (histograms merged, counters added). */
static void merge_local(struct fio_run *r, int j)
{
    const struct fio_plan *p = &r->plans[j];
    struct fio_job_result *jr = &r->jobs[j];
    for (int d = 0; d < FIO_NDIR; d++) {
        iol_hist_init(&jr->dir[d].lat);
        iol_hist_init(&jr->dir[d].clat);
        iol_hist_init(&jr->dir[d].slat);
        jr->dir[d].ios = jr->dir[d].bytes = 0;
    }
    iol_hist_init(&jr->sync_lat);
    jr->t_start = UINT64_MAX;
    jr->t_end = 0;
    jr->evicted = p->shared_files ? jr->evicted_local : 1;
    jr->storage_read_bytes = jr->storage_unknown = jr->waits = 0;
    jr->verify_first_bad = UINT64_MAX;
    jr->nsecs = 0;
    for (int64_t i = 0; i < p->o->numjobs; i++) {
        const struct fio_inst *in = &jr->inst[i];
        for (int d = 0; d < FIO_NDIR; d++) {
            iol_hist_merge(&jr->dir[d].lat, &in->dir[d].lat);
            iol_hist_merge(&jr->dir[d].clat, &in->dir[d].clat);
            iol_hist_merge(&jr->dir[d].slat, &in->dir[d].slat);
            jr->dir[d].ios += in->dir[d].ios;
            jr->dir[d].bytes += in->dir[d].bytes;
        }
        iol_hist_merge(&jr->sync_lat, &in->sync_lat);
        jr->sync_ios += in->sync_ios;
        uint64_t ts = iol_comm_time(r->comm, in->t_start), te = iol_comm_time(r->comm, in->t_end);
        if (ts < jr->t_start) jr->t_start = ts;
        if (te > jr->t_end) jr->t_end = te;
        jr->usr_s += tv_s(in->ru.ru_utime);
        jr->sys_s += tv_s(in->ru.ru_stime);
        jr->ctx += (uint64_t)(in->ru.ru_nvcsw + in->ru.ru_nivcsw);
        jr->verify_blocks += in->verify_blocks;
        if (in->verify_errors && !jr->verify_errors) {
            jr->verify_first_bad = in->verify_first_bad;
            snprintf(jr->verify_bad_file, sizeof jr->verify_bad_file, "%s", in->verify_bad_file);
        }
        jr->verify_errors += in->verify_errors;
        if (!p->shared_files && !in->evicted) jr->evicted = 0;
        jr->storage_read_bytes += in->storage_read_bytes;
        jr->storage_unknown += !in->storage_known;
        jr->waits += (uint64_t)in->ru.ru_nvcsw;
        iol_backend_stats_add(&jr->bstats, &in->bstats);
        if (in->nsecs > jr->nsecs) jr->nsecs = in->nsecs;
    }
}

/* The per-second record of every instance of every rank, summed (collective). */
static int reduce_seconds(struct fio_run *r, int j)
{
    struct iol_comm *c = r->comm;
    struct fio_job_result *jr = &r->jobs[j];
    if (c->allreduce(c, &jr->nsecs, &jr->nsecs, 1, IOL_DT_U64, IOL_OP_MAX)) return comm_failed(r);
    size_t words = (size_t)jr->nsecs * FIO_NDIR * FIO_SEC_WORDS;
    if (!words) return 0;
    uint64_t *sum = calloc(words, sizeof *sum), *mx = calloc((size_t)jr->nsecs * FIO_NDIR, sizeof *mx);
    int64_t oom = !sum || !mx, any = 0;
    if (c->allreduce(c, &oom, &any, 1, IOL_DT_I64, IOL_OP_MAX) || any) {
        free(sum);
        free(mx);
        return any ? iol_err_set(&r->err, IOL_ERR_RUNTIME, "out of memory for the per-second record") : comm_failed(r);
    }
    for (int64_t i = 0; i < r->plans[j].o->numjobs; i++) {
        const struct fio_inst *in = &jr->inst[i];
        for (uint64_t s = 0; s < in->nsecs; s++) {
            for (int d = 0; d < FIO_NDIR; d++) {
                const struct fio_sec *src = &in->secs[s * FIO_NDIR + (uint64_t)d];
                uint64_t *w = &sum[(s * FIO_NDIR + (uint64_t)d) * FIO_SEC_WORDS];
                w[0] += src->ios;
                w[1] += src->bytes;
                for (unsigned b = 0; b < FIO_SEC_NBUCKETS; b++) w[3 + b] += src->buckets[b];
                uint64_t *m = &mx[s * FIO_NDIR + (uint64_t)d];
                if (src->max_ns > *m) *m = src->max_ns;
            }
        }
    }
    int rc = 0;
    if (c->allreduce(c, sum, sum, words, IOL_DT_U64, IOL_OP_SUM) ||
        c->allreduce(c, mx, mx, (size_t)jr->nsecs * FIO_NDIR, IOL_DT_U64, IOL_OP_MAX))
        rc = comm_failed(r);
    for (uint64_t k = 0; rc == 0 && k < jr->nsecs * FIO_NDIR; k++) sum[k * FIO_SEC_WORDS + 2] = mx[k];
    free(mx);
    if (rc || c->rank != 0) {
        free(sum);
        return rc;
    }
    free(jr->secs);
    jr->secs = sum;
    return 0;
}

static int reduce_job(struct fio_run *r, int j)
{
    struct iol_comm *c = r->comm;
    struct fio_job_result *jr = &r->jobs[j];
    const struct fio_plan *p = &r->plans[j];
    merge_local(r, j);
    uint64_t sums[17] = {jr->dir[0].ios, jr->dir[0].bytes, jr->dir[1].ios, jr->dir[1].bytes, jr->sync_ios, jr->ctx,
                         jr->verify_blocks, jr->verify_errors, jr->bstats.requests, jr->bstats.fixed_bufs,
                         jr->bstats.fixed_files, jr->bstats.resubmits, jr->bstats.submit_calls, jr->bstats.waits, jr->storage_read_bytes,
                         jr->storage_unknown, jr->waits};
    double cpu[2] = {jr->usr_s, jr->sys_s};
    int64_t evicted = jr->evicted, bad_rank = jr->verify_errors ? c->rank : INT64_MAX;
    if (c->allreduce(c, sums, sums, 17, IOL_DT_U64, IOL_OP_SUM) ||
        c->allreduce(c, cpu, cpu, 2, IOL_DT_F64, IOL_OP_SUM) ||
        c->allreduce(c, &jr->t_start, &jr->t_start, 1, IOL_DT_U64, IOL_OP_MIN) ||
        c->allreduce(c, &jr->t_end, &jr->t_end, 1, IOL_DT_U64, IOL_OP_MAX) ||
        c->allreduce(c, &evicted, &evicted, 1, IOL_DT_I64, IOL_OP_MIN) ||
        c->allreduce(c, &bad_rank, &bad_rank, 1, IOL_DT_I64, IOL_OP_MIN))
        return comm_failed(r);
    for (int d = 0; d < FIO_NDIR; d++)
        if (iol_hist_allreduce(c, &jr->dir[d].lat) || iol_hist_allreduce(c, &jr->dir[d].clat) ||
            iol_hist_allreduce(c, &jr->dir[d].slat))
            return comm_failed(r);
    if (iol_hist_allreduce(c, &jr->sync_lat)) return comm_failed(r);
    if (bad_rank != INT64_MAX) {   /* the first bad block of the lowest rank that found one */
        struct {
            uint64_t off;
            char file[IOL_STR_MAX];
        } bad;
        bad.off = jr->verify_first_bad;
        snprintf(bad.file, sizeof bad.file, "%s", jr->verify_bad_file);
        if (c->bcast(c, &bad, sizeof bad, (int)bad_rank)) return comm_failed(r);
        jr->verify_first_bad = bad.off;
        snprintf(jr->verify_bad_file, sizeof jr->verify_bad_file, "%s", bad.file);
    }
    jr->dir[0].ios = sums[0];
    jr->dir[0].bytes = sums[1];
    jr->dir[1].ios = sums[2];
    jr->dir[1].bytes = sums[3];
    jr->sync_ios = sums[4];
    jr->ctx = sums[5];
    jr->verify_blocks = sums[6];
    jr->verify_errors = sums[7];
    jr->bstats.requests = sums[8];
    jr->bstats.fixed_bufs = sums[9];
    jr->bstats.fixed_files = sums[10];
    jr->bstats.resubmits = sums[11];
    jr->bstats.submit_calls = sums[12];
    jr->bstats.waits = sums[13];
    jr->storage_read_bytes = sums[14];
    jr->storage_unknown = sums[15];
    jr->waits = sums[16];
    jr->usr_s = cpu[0];
    jr->sys_s = cpu[1];
    jr->evicted = (int)evicted;
    if (reduce_seconds(r, j)) return -1;

    int n = (int)p->o->numjobs;
    struct fio_inst_summary *mine = calloc((size_t)n, sizeof *mine);
    struct fio_inst_summary *all = c->rank == 0 ? calloc((size_t)n * (size_t)c->size, sizeof *all) : NULL;
    if (!mine || (c->rank == 0 && !all)) {
        free(mine);
        free(all);
        return iol_err_set(&r->err, IOL_ERR_RUNTIME, "out of memory");
    }
    for (int i = 0; i < n; i++) summarize(&jr->inst[i], &mine[i]);
    int rc = c->gather(c, mine, (size_t)n * sizeof *mine, all, 0) ? comm_failed(r) : 0;
    free(mine);
    if (c->rank == 0) {
        jr->summ = all;
        jr->nsumm = n * c->size;
    }
    jr->done = rc == 0;
    return rc;
}

int fio_reduce_group(struct fio_run *r, int gid)
{
    struct iol_comm *c = r->comm;
    struct fio_group_result *g = &r->groups[gid];
    for (int j = 0; j < r->cfg->njobs; j++)
        if (r->plans[j].group == gid && reduce_job(r, j)) return -1;
    /* The CPU of iolens's ranks on rank 0's host, to tell the rest of that host's load apart. */
    char host0[IOL_HOST_MAX];
    snprintf(host0, sizeof host0, "%s", c->hostname);
    if (c->bcast(c, host0, sizeof host0, 0)) return comm_failed(r);
    double here = strcmp(host0, c->hostname) ? 0.0 : g->local.self_cpu_s;
    double v[3] = {g->local.self_cpu_s, here, g->local.threads_cpu_s};
    uint64_t ts = g->local.t_start, te = g->local.t_end;
    if (c->allreduce(c, v, v, 3, IOL_DT_F64, IOL_OP_SUM) || c->allreduce(c, &ts, &ts, 1, IOL_DT_U64, IOL_OP_MIN) ||
        c->allreduce(c, &te, &te, 1, IOL_DT_U64, IOL_OP_MAX))
        return comm_failed(r);
    g->t_start = ts;
    g->t_end = te;
    g->elapsed_s = te > ts ? (double)(te - ts) / 1e9 : 0.0;
    g->process_cpu_s = v[0];
    /* What the process used in the window beyond its instance threads (whatever they did then: I/O, a
     * verify read-back) is its kernel workers' and the waiting main thread's. */
    g->kernel_workers_s = v[0] > v[2] ? v[0] - v[2] : 0.0;
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    g->host_cpus = cpus > 0 ? (int)cpus : 1;
    g->host_busy_s = g->local.busy_s;
    g->host_steal_s = g->local.steal_s;
    g->host_others_s = g->local.busy_s > v[1] ? g->local.busy_s - v[1] : 0.0;
    g->host_window_s = g->local.window_s;
    g->done = 1;
    return 0;
}

void fio_run_free(struct fio_run *r)
{
    for (int j = 0; j < r->cfg->njobs; j++) {
        struct fio_job_result *jr = &r->jobs[j];
        if (jr->inst)
            for (int64_t i = 0; i < r->plans[j].o->numjobs; i++) {
                free(jr->inst[i].secs);
                free(jr->inst[i].created);
            }
        free(jr->shared_created);
        free(jr->inst);
        free(jr->secs);
        free(jr->summ);
    }
    free(r->groups);
    free(r);
}
