/* mdtest_report.c — what the mdtest workload tells people: mdtest's text report (so eyes and scripts used
 * to mdtest find the same lines) plus latency percentiles, and the members of the result document. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/statvfs.h>
#include <time.h>

#include "../common/interrupt.h"
#include "mdtest_internal.h"
#include "run_doc.h"

static void stamp(char *buf, size_t len)
{
    time_t t = time(NULL);
    struct tm tm;
    localtime_r(&t, &tm);
    strftime(buf, len, "%m/%d/%Y %H:%M:%S", &tm);
}

void mdtest_report_text_begin(FILE *fp, const struct mdtest_run *r)
{
    const struct mdtest_cfg *cfg = r->cfg;
    char when[64];
    stamp(when, sizeof when);
    fprintf(fp, "-- started at %s --\n\n", when);
    fprintf(fp, "mdtest workload of iolens-bench %s was launched with %d total task(s) on %d node(s)\n",
            IOLENS_VERSION, r->nranks, r->comm->nodes);
    fprintf(fp, "Command line used:");
    for (int i = 0; i < r->info->argc; i++) fprintf(fp, " '%s'", r->info->argv[i]);
    fprintf(fp, "\nPath                : %s\n", cfg->dirs);
    struct statvfs sv;
    char probe[IOL_STR_MAX + 4];
    snprintf(probe, sizeof probe, "%s", r->paths.dir[0]);
    if (statvfs(probe, &sv) != 0) snprintf(probe, sizeof probe, "%s/..", r->paths.dir[0]);
    if (r->be->does_io && statvfs(probe, &sv) == 0 && sv.f_blocks) {
        char sz[32];
        iol_format_size((uint64_t)sv.f_blocks * sv.f_frsize, sz, sizeof sz);
        fprintf(fp, "FS                  : %s %s   Used FS: %.1f%%   Inodes: %.1f Mi   Used Inodes: %.1f%%\n",
                r->fs_type, sz, 100.0 * (double)(sv.f_blocks - sv.f_bfree) / (double)sv.f_blocks,
                (double)sv.f_files / 1048576.0,
                sv.f_files ? 100.0 * (double)(sv.f_files - sv.f_ffree) / (double)sv.f_files : 0.0);
    }
    if (r->stride) fprintf(fp, "Shifting ranks by %" PRId64 " for each phase.\n", r->stride);
    fflush(fp);
}

void mdtest_report_text_test(FILE *fp, const struct mdtest_run *r)
{
    const struct mdtest_cfg *cfg = r->cfg;
    const char *what = cfg->files_only && cfg->dirs_only ? "files/directories" : cfg->files_only ? "files" : "directories";
    if (cfg->shared_file) fprintf(fp, "%d tasks, 1 file\n", r->nranks);   /* mdtest's words for -S */
    else fprintf(fp, "%d tasks, %" PRIu64 " %s\n", r->nranks, r->items * (uint64_t)r->nranks, what);
    fflush(fp);
}

struct row_stats {
    int n;
    double max, min, mean, sd;
};

static struct row_stats stats_of(const struct mdtest_run *r, enum mdtest_phase_id id, int want_time)
{
    struct row_stats s = {0, 0, 0, 0, 0};
    double sum = 0;
    for (int i = 0; i < r->nphases; i++) {
        if (r->phases[i].id != id || r->phases[i].cut_short || r->phases[i].tasks != r->nranks) continue;
        double v = want_time ? r->phases[i].time_s : r->phases[i].rate;
        if (!s.n || v > s.max) s.max = v;
        if (!s.n || v < s.min) s.min = v;
        sum += v;
        s.n++;
    }
    if (!s.n) return s;
    s.mean = sum / s.n;
    double var = 0;
    for (int i = 0; i < r->nphases; i++) {
        if (r->phases[i].id != id || r->phases[i].cut_short || r->phases[i].tasks != r->nranks) continue;
        double v = want_time ? r->phases[i].time_s : r->phases[i].rate;
        var += (v - s.mean) * (v - s.mean);
    }
    s.sd = sqrt(var / s.n);
    return s;
}

/* The rows mdtest prints: the directory rows if directories were tested, the file rows if files were, and
 * the tree rows always; a phase that did not run shows zeros, as in mdtest. */
static int row_shown(const struct mdtest_run *r, enum mdtest_phase_id id)
{
    if ((id >= MD_DIR_CREATE && id <= MD_DIR_REMOVE) || id == MD_DIR_RENAME) return r->cfg->dirs_only;
    if (id >= MD_FILE_CREATE && id <= MD_FILE_REMOVE) return r->cfg->files_only;
    return 1;
}

static void summary_table(FILE *fp, const struct mdtest_run *r, int want_time)
{
    fprintf(fp, "\nSUMMARY %s: (of %" PRId64 " iterations)\n", want_time ? "time (in s)" : "rate (in ops/sec)",
            r->cfg->reps);
    fprintf(fp, "   Operation                     Max            Min           Mean        Std Dev\n");
    fprintf(fp, "   ---------                     ---            ---           ----        -------\n");
    static const enum mdtest_phase_id order[] = {MD_DIR_CREATE, MD_DIR_STAT, MD_DIR_RENAME, MD_DIR_REMOVE, MD_FILE_CREATE,
                                                 MD_FILE_STAT, MD_FILE_READ, MD_FILE_REMOVE, MD_TREE_CREATE, MD_TREE_REMOVE};
    for (size_t i = 0; i < sizeof order / sizeof order[0]; i++) {
        if (!row_shown(r, order[i])) continue;
        struct row_stats s = stats_of(r, order[i], want_time);
        fprintf(fp, "   %-22s %14.3f %14.3f %14.3f %14.3f\n", mdtest_phase_titles[order[i]], s.max, s.min, s.mean, s.sd);
    }
}

static void fmt_ns(uint64_t ns, char *buf, size_t len)
{
    if (ns < 10000) snprintf(buf, len, "%" PRIu64 " ns", ns);
    else if (ns < 10000000) snprintf(buf, len, "%.1f us", (double)ns / 1e3);
    else snprintf(buf, len, "%.2f ms", (double)ns / 1e6);
}

void mdtest_report_text_end(FILE *fp, const struct mdtest_run *r)
{
    for (int i = 0; i < r->nphases; i++) {
        const struct mdtest_phase *ph = &r->phases[i];
        if (ph->stonewall && ph->sw_hit)
            fprintf(fp, "Continue stonewall hit min: %" PRIu64 " max: %" PRIu64 " avg: %.1f \n", ph->sw_min, ph->sw_max,
                    (double)ph->sw_sum / r->nranks);
    }
    for (int i = 0; i < r->nphases; i++) {
        const struct mdtest_phase *ph = &r->phases[i];
        if (ph->missing)
            fprintf(fp, "%s, iteration %d: %" PRIu64 " item(s) were already gone (a run cut short?): skipped\n",
                    mdtest_phase_titles[ph->id], ph->iteration, ph->missing);
        if (!ph->cut_short) continue;
        int sig = iol_interrupt_pending();
        fprintf(fp, "CUT SHORT%s%s: %s, iteration %d: %" PRIu64 " items in %.3f s (%.3f ops/sec) before the run "
                    "stopped\n", sig ? " by " : "", sig ? iol_signal_name(sig) : "", mdtest_phase_titles[ph->id],
                ph->iteration, ph->items, ph->time_s, ph->rate);
    }
    summary_table(fp, r, 0);
    if (r->cfg->print_rate_and_time) summary_table(fp, r, 1);

    fprintf(fp, "\nLATENCY per item and IO500 rate (all iterations):\n");
    fprintf(fp, "   Operation                   p50        p90        p99      p99.9        max   IO500 rate\n");
    static const enum mdtest_phase_id order[] = {MD_TREE_CREATE, MD_DIR_CREATE, MD_DIR_STAT, MD_DIR_RENAME, MD_DIR_REMOVE,
                                                 MD_FILE_CREATE, MD_FILE_STAT, MD_FILE_READ, MD_FILE_REMOVE, MD_TREE_REMOVE};
    for (size_t k = 0; k < sizeof order / sizeof order[0]; k++) {
        struct iol_hist all;
        iol_hist_init(&all);
        double io500 = 0;
        int n = 0;
        for (int i = 0; i < r->nphases; i++) {
            if (r->phases[i].id != order[k]) continue;
            iol_hist_merge(&all, &r->phases[i].hist);
            io500 += r->phases[i].io500_rate;
            n++;
        }
        if (!n) continue;
        char a[24], b[24], c[24], d[24], e[24];
        fmt_ns(iol_hist_percentile(&all, 50), a, sizeof a);
        fmt_ns(iol_hist_percentile(&all, 90), b, sizeof b);
        fmt_ns(iol_hist_percentile(&all, 99), c, sizeof c);
        fmt_ns(iol_hist_percentile(&all, 99.9), d, sizeof d);
        fmt_ns(all.max, e, sizeof e);
        fprintf(fp, "   %-22s %10s %10s %10s %10s %10s %12.3f\n", mdtest_phase_titles[order[k]], a, b, c, d, e, io500 / n);
    }
    for (int i = 0; i < r->nphases; i++) {
        const struct mdtest_phase *ph = &r->phases[i];
        if (ph->verify && ph->v_errors)
            fprintf(fp, "\nERROR: verifying the data read: %" PRIu64 " bytes differ (first in %s)\n", ph->v_errors,
                    ph->v_first_bad);
    }
    char when[64];
    stamp(when, sizeof when);
    fprintf(fp, "-- finished at %s --\n", when);
    fflush(fp);
}

/* ---- JSON ------------------------------------------------------------------------------------------- */

static void json_phase(struct iol_json *j, const struct mdtest_run *r, const struct mdtest_phase *ph)
{
    iol_json_begin_object(j);
    iol_json_kv_string(j, "name", mdtest_phase_names[ph->id]);
    iol_json_kv_int(j, "iteration", ph->iteration);
    iol_json_kv_int(j, "tasks", ph->tasks);
    iol_json_kv_uint(j, "items", ph->items);
    iol_json_kv_bool(j, "cut_short", ph->cut_short);
    iol_json_kv_uint(j, "missing", ph->missing);
    iol_json_kv_double(j, "time_s", ph->time_s);
    iol_json_kv_double(j, "rate_per_s", ph->rate);
    iol_json_kv_double(j, "io500_time_s", ph->io500_time_s);
    iol_json_kv_double(j, "io500_rate_per_s", ph->io500_rate);
    iol_json_kv_int(j, "owner_shift", ph->owner_shift);
    iol_doc_latency(j, &ph->hist, 1);
    iol_json_key(j, "per_rank");
    iol_json_begin_array(j);
    for (int i = 0; i < ph->tasks && ph->rank_items; i++) {
        iol_json_begin_object(j);
        iol_json_kv_int(j, "rank", i);
        iol_json_kv_uint(j, "items", ph->rank_items[i]);
        iol_json_kv_double(j, "time_s", ph->rank_time_s[i]);
        iol_json_end_object(j);
    }
    iol_json_end_array(j);
    iol_json_key(j, "stonewall");
    if (!ph->stonewall) {
        iol_json_null(j);
    } else {
        iol_json_begin_object(j);
        iol_json_kv_int(j, "deadline_s", r->cfg->stonewall_s);
        iol_json_kv_bool(j, "hit", ph->sw_hit);
        iol_json_kv_uint(j, "items_min", ph->sw_min);
        iol_json_kv_uint(j, "items_max", ph->sw_max);
        iol_json_kv_uint(j, "items_sum_at_deadline", ph->sw_sum);
        iol_json_kv_double(j, "time_s", ph->sw_time_s);
        iol_json_end_object(j);
    }
    iol_json_key(j, "verify");
    if (!ph->verify) {
        iol_json_null(j);
    } else {
        iol_json_begin_object(j);
        iol_json_kv_uint(j, "files_checked", ph->v_files);
        iol_json_kv_uint(j, "bytes_checked", ph->v_bytes);
        iol_json_kv_uint(j, "errors", ph->v_errors);
        iol_json_key(j, "first_bad_path");
        iol_json_string(j, ph->v_errors ? ph->v_first_bad : NULL);
        iol_json_end_object(j);
    }
    iol_json_end_object(j);
}

void mdtest_report_json(struct iol_json *j, const struct mdtest_run *r)
{
    struct iol_optset set = {mdtest_options, (void *)r->cfg};
    iol_json_key(j, "config");
    iol_json_begin_object(j);
    iol_opts_json(&set, 1, j);
    iol_json_end_object(j);

    iol_json_key(j, "geometry");
    iol_json_begin_object(j);
    iol_json_kv_uint(j, "items_per_rank", r->items);
    iol_json_kv_uint(j, "items_per_dir", r->geo.items_per_dir);
    iol_json_kv_uint(j, "dirs_in_tree", r->geo.dirs_in_tree);
    iol_json_kv_uint(j, "loops", r->geo.loops);
    iol_json_kv_int(j, "depth", r->geo.depth);
    iol_json_kv_uint(j, "branch", r->geo.branch);
    iol_json_kv_bool(j, "leaf_only", r->cfg->leaf_only);
    iol_json_kv_bool(j, "unique_dir", r->cfg->unique_dir);
    iol_json_kv_int(j, "stride", r->stride);
    iol_json_kv_string(j, "file_system", r->fs_type[0] ? r->fs_type : "unknown");
    iol_json_key(j, "paths");
    iol_json_begin_array(j);
    for (int i = 0; i < r->paths.count; i++) iol_json_string(j, r->paths.dir[i]);
    iol_json_end_array(j);
    iol_json_end_object(j);

    iol_json_key(j, "phases");
    iol_json_begin_array(j);
    for (int i = 0; i < r->nphases; i++) json_phase(j, r, &r->phases[i]);
    iol_json_end_array(j);

    iol_json_key(j, "summary");
    iol_json_begin_array(j);
    for (int id = 0; id < MD_NPHASES; id++) {
        struct row_stats s = stats_of(r, (enum mdtest_phase_id)id, 0), t = stats_of(r, (enum mdtest_phase_id)id, 1);
        if (!s.n) continue;
        struct iol_hist all;
        iol_hist_init(&all);
        double io500 = 0;
        uint64_t items = 0;
        for (int i = 0; i < r->nphases; i++) {
            if ((int)r->phases[i].id != id || r->phases[i].cut_short || r->phases[i].tasks != r->nranks) continue;
            iol_hist_merge(&all, &r->phases[i].hist);
            io500 += r->phases[i].io500_rate;
            items = r->phases[i].items;
        }
        iol_json_begin_object(j);
        iol_json_kv_string(j, "name", mdtest_phase_names[id]);
        iol_json_kv_int(j, "iterations", s.n);
        iol_json_kv_double(j, "rate_max_per_s", s.max);
        iol_json_kv_double(j, "rate_min_per_s", s.min);
        iol_json_kv_double(j, "rate_mean_per_s", s.mean);
        iol_json_kv_double(j, "rate_stddev_per_s", s.sd);
        iol_json_kv_double(j, "io500_rate_mean_per_s", io500 / s.n);
        iol_json_kv_double(j, "time_mean_s", t.mean);
        iol_json_kv_uint(j, "items", items);
        iol_doc_latency(j, &all, 0);
        iol_json_end_object(j);
    }
    iol_json_end_array(j);
}

/* ---- --saveRankPerformanceDetails: mdtest 4's CSV ---------------------------------------------------- */

/* mdtest's phase numbers (its columns), as iolens's phases; -1: mdtest's "Directory read", which does no work
 * and iolens does not run. */
static const int csv_phase[] = {MD_DIR_CREATE, MD_DIR_STAT, -1, MD_DIR_RENAME, MD_DIR_REMOVE, MD_FILE_CREATE,
                                MD_FILE_STAT, MD_FILE_READ, MD_FILE_REMOVE, MD_TREE_CREATE, MD_TREE_REMOVE};
static const char *const csv_title[] = {"Directory creation", "Directory stat", "Directory read", "Directory rename",
                                        "Directory removal", "File creation", "File stat", "File read", "File removal",
                                        "Tree creation", "Tree removal"};
#define CSV_COLS ((int)(sizeof csv_phase / sizeof csv_phase[0]))
#define CSV_RANK_COLS 9   /* per-rank rows stop before the tree phases, as mdtest's */

static const struct mdtest_phase *find_phase(const struct mdtest_run *r, int id, int iteration, int tasks)
{
    for (int i = 0; id >= 0 && i < r->nphases; i++)
        if ((int)r->phases[i].id == id && r->phases[i].iteration == iteration && r->phases[i].tasks == tasks)
            return &r->phases[i];
    return NULL;
}

int mdtest_rank_csv(const struct mdtest_run *r, struct iol_err *err)
{
    FILE *fp = fopen(r->cfg->rank_csv, "w");
    if (!fp) return iol_err_errno(err, IOL_ERR_RUNTIME, errno, "--saveRankPerformanceDetails: cannot write %s",
                                  r->cfg->rank_csv);
    fprintf(fp, "rank,items");
    for (int e = 0; e < CSV_COLS; e++) fprintf(fp, ",rate-%s,time-%s", csv_title[e], csv_title[e]);
    fprintf(fp, "\n");
    for (int t = 0; t < r->ntests; t++) {
        int tasks = r->tests[t];
        /* The job's row: all ranks' items over the phase's time, of the first iteration (as mdtest's). */
        fprintf(fp, "all,%" PRIu64, r->items);
        for (int e = 0; e < CSV_COLS; e++) {
            const struct mdtest_phase *ph = find_phase(r, csv_phase[e], 0, tasks);
            if (!ph || !ph->items) fprintf(fp, ",,");
            else fprintf(fp, ",%.10e,%.10e", ph->rate, ph->time_s);
        }
        fprintf(fp, "\n");
        for (int it = 0; it < r->cfg->reps; it++) {
            for (int k = 0; k < tasks; k++) {
                fprintf(fp, "%d,", k);
                for (int e = 0; e < CSV_RANK_COLS; e++) {
                    const struct mdtest_phase *ph = find_phase(r, csv_phase[e], it, tasks);
                    uint64_t n = ph && ph->rank_items ? ph->rank_items[k] : 0;
                    double s = n ? ph->rank_time_s[k] : 0;
                    if (!n || s <= 0) fprintf(fp, ",,");
                    else fprintf(fp, ",%.10e,%.10e", (double)n / s, s);
                }
                fprintf(fp, "\n");
            }
        }
    }
    if (fclose(fp) != 0)
        return iol_err_errno(err, IOL_ERR_RUNTIME, errno, "--saveRankPerformanceDetails: cannot write %s", r->cfg->rank_csv);
    return 0;
}
