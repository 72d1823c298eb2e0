/* mdworkbench_report.c — what the md-workbench workload tells people: md-workbench's own lines (so eyes and
 * scripts used to md-workbench, and IO500's result directory, find the same text), and the members of the
 * result document. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "../common/clock.h"
#include "mdworkbench_internal.h"

static void now_text(char *buf, size_t len)
{
    time_t t = time(NULL);
    struct tm tm;
    localtime_r(&t, &tm);
    strftime(buf, len, "%Y-%m-%d %H:%M:%S", &tm);
}

void mdwb_rate(const struct mdwb_cfg *cfg, enum mdwb_kind kind, const struct mdwb_stats *s, double *rate)
{
    double t = s->t_s;
    /* md-workbench's rates: a benchmark object is 4 operations (stat, read, delete, create; 2 read-only), a
     * precreate counts sets and objects made, a cleanup objects and sets removed. */
    if (kind == MDWB_BENCHMARK) *rate = (double)s->suc[MDWB_OBJ_READ] * (cfg->read_only ? 2 : 4) / t;
    else if (kind == MDWB_PRECREATE) *rate = (double)(s->suc[MDWB_DSET_CREATE] + s->suc[MDWB_OBJ_CREATE]) / t;
    else *rate = (double)(s->suc[MDWB_OBJ_DELETE] + s->suc[MDWB_DSET_DELETE]) / t;
}

static uint64_t errors_of(const struct mdwb_stats *s)
{
    uint64_t n = 0;
    for (int i = 0; i < MDWB_NOPS; i++) n += s->err[i];
    return n;
}

/* md-workbench's 7 figures of a latency: min, q1, median, q3, q90, q99, max (seconds). */
static int lat_text(char *buf, size_t len, const char *name, const struct iol_hist *h)
{
    if (!h->count || (double)h->max / 1e9 <= 1e-9) return 0;
    double q[7] = {(double)h->min, (double)iol_hist_percentile(h, 25), (double)iol_hist_percentile(h, 50),
                   (double)iol_hist_percentile(h, 75), (double)iol_hist_percentile(h, 90),
                   (double)iol_hist_percentile(h, 99), (double)h->max};
    return snprintf(buf, len, " %s(%.4es, %.4es, %.4es, %.4es, %.4es, %.4es, %.4es)", name, q[0] / 1e9, q[1] / 1e9,
                    q[2] / 1e9, q[3] / 1e9, q[4] / 1e9, q[5] / 1e9, q[6] / 1e9);
}

#define ADD(...) (pos += snprintf(buf + pos, pos < len ? len - pos : 0, __VA_ARGS__))

void mdwb_phase_line(char *buf, size_t len, const struct mdwb_run *r, enum mdwb_kind kind, const struct mdwb_stats *s,
                     const struct mdwb_phase *global)
{
    const struct mdwb_cfg *cfg = r->cfg;
    const char *name = mdwb_kind_names[kind];
    double t = s->t_s;
    const uint64_t *ok = s->suc;
    double tp = (double)(ok[MDWB_OBJ_CREATE] + ok[MDWB_OBJ_READ]) * (double)cfg->object_size / t / 1024 / 1024;
    uint64_t errs = errors_of(s);
    size_t pos = 0;
    buf[0] = '\0';
    if (cfg->detailed) {
        if (errs) {
            ADD("%s err\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64, name,
                s->err[0], s->err[1], s->err[2], s->err[3], s->err[4], s->err[5]);
        } else {
            ADD("%s \t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\t%.3fs\t%.3fs\t%.2f "
                "MiB/s %.4e", name, ok[0], ok[1], ok[2], ok[3], ok[4], ok[5], t, t, tp, s->max_op_s);
        }
        return;
    }
    ADD("%s process max:%.2fs ", name, t);
    if (global) {
        /* One rank: md-workbench's sample deviation divides by zero and prints -nan; so does this line. */
        if (r->nranks > 1)
            ADD("min:%.2fs mean: %.2fs balance:%.1f stddev:%.1f ", global->t_min_s, global->t_mean_s,
                global->t_min_s / t * 100.0, global->t_stddev_s);
        else ADD("min:%.2fs mean: %.2fs balance:%.1f stddev:-nan ", global->t_min_s, global->t_mean_s,
                 global->t_min_s / t * 100.0);
    }
    double rate;
    mdwb_rate(cfg, kind, s, &rate);
    if (kind == MDWB_BENCHMARK) {
        ADD("rate:%.1f iops/s objects:%" PRIu64 " rate:%.1f obj/s tp:%.1f MiB/s op-max:%.4es", rate, ok[MDWB_OBJ_READ],
            (double)ok[MDWB_OBJ_READ] / t, tp, s->max_op_s);
        double factor = global ? global->waiting : cfg->waiting;
        if (factor > 1e-9) ADD(" waiting_factor:%.2f", factor);
    } else if (kind == MDWB_PRECREATE) {
        ADD("rate:%.1f iops/s dsets: %" PRIu64 " objects:%" PRIu64 " rate:%.3f dset/s rate:%.1f obj/s tp:%.1f MiB/s "
            "op-max:%.4es", rate, ok[MDWB_DSET_CREATE], ok[MDWB_OBJ_CREATE], (double)ok[MDWB_DSET_CREATE] / t,
            (double)ok[MDWB_OBJ_CREATE] / t, tp, s->max_op_s);
    } else {
        ADD("rate:%.1f iops/s objects:%" PRIu64 " dsets: %" PRIu64 " rate:%.1f obj/s rate:%.3f dset/s op-max:%.4es",
            rate, ok[MDWB_OBJ_DELETE], ok[MDWB_DSET_DELETE], (double)ok[MDWB_OBJ_DELETE] / t,
            (double)ok[MDWB_DSET_DELETE] / t, s->max_op_s);
    }
    if (!cfg->quiet_output || errs) ADD(" (%" PRIu64 " errs%s", errs, errs ? "!!!)" : ")");
    if (!cfg->quiet_output && s->stonewall_iterations) ADD(" stonewall-iter:%" PRIu64, s->stonewall_iterations);
    static const enum mdwb_lat order[MDWB_NLAT] = {MDWB_LAT_READ, MDWB_LAT_STAT, MDWB_LAT_CREATE, MDWB_LAT_DELETE};
    for (int i = 0; i < MDWB_NLAT; i++) {
        int n = lat_text(buf + (pos < len ? pos : len), pos < len ? len - pos : 0, mdwb_lat_names[order[i]],
                         &s->lat[order[i]]);
        pos += (size_t)(n > 0 ? n : 0);
    }
}

void mdwb_report_begin(FILE *fp, const struct mdwb_run *r)
{
    const struct mdwb_cfg *cfg = r->cfg;
    if (!cfg->quiet_output) {
        fprintf(fp, "Args: md-workbench");
        for (int i = 2; i < r->info->argc; i++) fprintf(fp, " \"%s\"", r->info->argv[i]);
        fprintf(fp, "\n");
    }
    if (cfg->start_item) fprintf(fp, "Using start position %lld\n", (long long)cfg->start_item);
    if (!cfg->quiet_output) {
        char when[64];
        now_text(when, sizeof when);
        uint64_t total = (uint64_t)cfg->data_sets * (uint64_t)(cfg->obj_per_proc * cfg->iterations + cfg->precreate) *
                         (uint64_t)r->nranks;
        double ws = (double)r->nranks * (double)cfg->data_sets * (double)cfg->precreate * (double)cfg->object_size /
                    1024.0 / 1024.0;
        fprintf(fp, "MD-Workbench total objects: %" PRIu64 " workingset size: %.3f MiB (version: iolens-bench %s) "
                "time: %s\n", total, ws, IOLENS_VERSION, when);
        if (cfg->obj_per_proc > cfg->precreate)
            fprintf(fp, "WARNING: num > precreate, this may cause the situation that no objects are available to "
                    "read\n");
        if (cfg->detailed)
            fprintf(fp, "phase\t\td name\tcreate\tdelete\tob nam\tcreate\tread\tstat\tdelete\tt_inc_b\tt_no_bar\tthp\t"
                    "max_t\n");
    }
    fflush(fp);
}

void mdwb_report_end(FILE *fp, const struct mdwb_run *r)
{
    if (r->cfg->quiet_output) return;
    char when[64];
    now_text(when, sizeof when);
    fprintf(fp, "Total runtime: %.0fs time: %s\n", (double)(iol_now_ns() - r->t_start_ns) / 1e9, when);
    fflush(fp);
}

static void kv_finite(struct iol_json *j, const char *key, double v)
{
    if (isfinite(v)) iol_json_kv_double(j, key, v);
    else {
        iol_json_key(j, key);
        iol_json_null(j);
    }
}

static void phase_json(struct iol_json *j, const struct mdwb_run *r, const struct mdwb_phase *ph)
{
    const struct mdwb_stats *s = &ph->all;
    iol_json_begin_object(j);
    iol_json_kv_string(j, "name", mdwb_kind_names[ph->kind]);
    iol_json_kv_int(j, "iteration", ph->iteration);
    iol_json_kv_double(j, "waiting_factor", ph->waiting);
    iol_json_kv_bool(j, "cut_short", ph->cut_short);
    iol_json_kv_double(j, "time_s", s->t_s);
    iol_json_kv_double(j, "time_min_s", ph->t_min_s);
    iol_json_kv_double(j, "time_mean_s", ph->t_mean_s);
    iol_json_kv_double(j, "time_stddev_s", ph->t_stddev_s);
    kv_finite(j, "rate_per_s", ph->rate);
    uint64_t objects = ph->kind == MDWB_BENCHMARK ? s->suc[MDWB_OBJ_READ]
                     : ph->kind == MDWB_PRECREATE ? s->suc[MDWB_OBJ_CREATE] : s->suc[MDWB_OBJ_DELETE];
    iol_json_kv_uint(j, "objects", objects);
    kv_finite(j, "objects_per_s", (double)objects / s->t_s);
    kv_finite(j, "throughput_mib_per_s", (double)(s->suc[MDWB_OBJ_CREATE] + s->suc[MDWB_OBJ_READ]) *
                                          (double)r->cfg->object_size / s->t_s / 1048576.0);
    iol_json_kv_double(j, "max_op_time_s", s->max_op_s);
    iol_json_kv_uint(j, "stonewall_iterations", s->stonewall_iterations);
    iol_json_kv_uint(j, "errors", errors_of(s));
    iol_json_key(j, "ops");
    iol_json_begin_object(j);
    for (int i = 0; i < MDWB_NOPS; i++) iol_json_kv_uint(j, mdwb_op_names[i], s->suc[i]);
    iol_json_end_object(j);
    iol_json_key(j, "op_errors");
    iol_json_begin_object(j);
    for (int i = 0; i < MDWB_NOPS; i++) iol_json_kv_uint(j, mdwb_op_names[i], s->err[i]);
    iol_json_end_object(j);
    iol_json_key(j, "latency_ns");
    iol_json_begin_object(j);
    for (int i = 0; i < MDWB_NLAT; i++) {
        if (!s->lat[i].count) continue;
        iol_doc_latency_as(j, mdwb_lat_names[i], &s->lat[i], 0);
    }
    iol_json_end_object(j);
    iol_json_key(j, "per_rank");
    iol_json_begin_array(j);
    for (int i = 0; ph->rank_t_s && i < r->nranks; i++) {
        iol_json_begin_object(j);
        iol_json_kv_int(j, "rank", i);
        iol_json_kv_double(j, "time_s", ph->rank_t_s[i]);
        iol_json_end_object(j);
    }
    iol_json_end_array(j);
    iol_json_end_object(j);
}

void mdwb_report_json(struct iol_json *j, const struct mdwb_run *r)
{
    const struct mdwb_cfg *cfg = r->cfg;
    struct iol_optset set = {mdwb_options, (void *)cfg};
    iol_json_key(j, "config");
    iol_json_begin_object(j);
    iol_opts_json(&set, 1, j);
    iol_json_end_object(j);
    iol_json_key(j, "md_workbench");
    iol_json_begin_object(j);
    iol_json_kv_int(j, "seed", r->seed);
    iol_json_kv_int(j, "start_index", r->start_index);
    iol_json_kv_int(j, "end_index", r->index);
    iol_json_kv_bool(j, "precreate", cfg->phase_precreate);
    iol_json_kv_bool(j, "benchmark", cfg->phase_benchmark);
    iol_json_kv_bool(j, "cleanup", cfg->phase_cleanup);
    iol_json_kv_uint(j, "verify_bytes", r->verify_bytes);
    iol_json_kv_uint(j, "verify_errors", r->verify_errors);
    iol_json_key(j, "first_bad_path");
    iol_json_string(j, r->verify_errors ? r->first_bad : NULL);
    iol_json_end_object(j);
    iol_json_key(j, "phases");
    iol_json_begin_array(j);
    for (int i = 0; i < r->nphases; i++) phase_json(j, r, &r->phases[i]);
    iol_json_end_array(j);
    uint64_t errs = 0;
    for (int i = 0; i < r->nphases; i++) errs += errors_of(&r->phases[i].all);
    iol_json_kv_uint(j, "errors", errs);
}
