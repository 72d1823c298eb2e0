/* find_report.c — what the find workload tells people: a short text report (per-rank counts, totals, the
 * rate IO500 scores) and the `find` member of the result document (docs/schema.md). */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "../common/interrupt.h"
#include "find_internal.h"
#include "run_doc.h"

void find_predicates_text(const struct find_cfg *cfg, char *out, size_t len)
{
    int n = 0;
    out[0] = '\0';
    if (cfg->newer[0] && n >= 0 && (size_t)n < len) n += snprintf(out + n, len - (size_t)n, "-newer %s ", cfg->newer);
    if (cfg->size[0] && n >= 0 && (size_t)n < len) n += snprintf(out + n, len - (size_t)n, "-size %s ", cfg->size);
    if (cfg->name[0] && n >= 0 && (size_t)n < len) n += snprintf(out + n, len - (size_t)n, "-name '%s' ", cfg->name);
    if (n == 0) snprintf(out, len, "(none: every entry matches)");
    else if ((size_t)n <= len) out[n - 1] = '\0';
}

static void fmt_latency(uint64_t ns, char *buf, size_t len)
{
    if (ns < 10000)
        snprintf(buf, len, "%" PRIu64 " ns", ns);
    else if (ns < 10000000)
        snprintf(buf, len, "%.1f us", (double)ns / 1e3);
    else
        snprintf(buf, len, "%.2f ms", (double)ns / 1e6);
}

static double ns_s(uint64_t ns)
{
    return (double)ns / 1e9;
}

static double rank_time_s(const struct find_rank_stat *s)
{
    return s->t_end > s->t_start ? ns_s(s->t_end - s->t_start) : 0.0;
}

void find_report_text(FILE *fp, const struct find_run *r)
{
    char preds[3 * IOL_STR_MAX];
    find_predicates_text(r->cfg, preds, sizeof preds);
    fprintf(fp, "iolens-bench %s: find (parallel namespace walk)\n", IOLENS_VERSION);
    fprintf(fp, "root        : %s (%s)\n", r->cfg->root, r->fs_type);
    fprintf(fp, "predicates  : %s\n", preds);
    fprintf(fp, "ranks       : %d (%s), %" PRIu64 " levels, %" PRIu64 " directories shared in %" PRIu64
            " chunks\n", r->nranks, r->comm->kind, r->levels, r->shared_dirs, r->shared_chunks);
    if (!r->reduced) return;
    fprintf(fp, "\n%-6s %12s %12s %10s %10s %10s\n", "rank", "scanned", "matched", "stats", "time(s)", "busy(s)");
    for (int i = 0; i < r->nranks; i++) {
        const struct find_rank_stat *s = &r->all[i];
        fprintf(fp, "%-6d %12" PRIu64 " %12" PRIu64 " %10" PRIu64 " %10.4f %10.4f\n", i, s->scanned, s->matched,
                s->stats, rank_time_s(s), ns_s(s->busy_ns));
    }
    fprintf(fp, "%-6s %12" PRIu64 " %12" PRIu64 " %10" PRIu64 " %10.4f\n", "total", r->total.scanned,
            r->total.matched, r->total.stats, r->time_s);
    fprintf(fp, "\nrate        : %.1f entries scanned/s (%.3f kIOPS)\n", r->rate, r->rate / 1000.0);
    if (r->hist.count) {
        char p50[24], p99[24], mx[24];
        fmt_latency(iol_hist_percentile(&r->hist, 50), p50, sizeof p50);
        fmt_latency(iol_hist_percentile(&r->hist, 99), p99, sizeof p99);
        fmt_latency(r->hist.max, mx, sizeof mx);
        fprintf(fp, "stat latency: p50 %s  p99 %s  max %s  (%" PRIu64 " calls)\n", p50, p99, mx, r->hist.count);
    }
    if (r->deadline_ns || r->stonewall_hit)
        fprintf(fp, "stonewall   : %g s, %s\n", r->cfg->stonewall_s,
                r->stonewall_hit ? "hit (the walk stopped before the end of the tree)" : "not reached");
    if (r->total.errors)
        fprintf(fp, "errors      : %" PRIu64 " entries or directories could not be read; first: %s\n", r->total.errors,
                r->first_error);
    if (r->cfg->matches[0]) fprintf(fp, "matches     : %s\n", r->cfg->matches);
    if (r->cut_short) {
        int sig = iol_interrupt_pending();
        fprintf(fp, "CUT SHORT%s%s: the figures cover the walk until it stopped\n", sig ? " by " : "",
                sig ? iol_signal_name(sig) : "");
    }
    fflush(fp);
}

static void kv_string_or_null(struct iol_json *j, const char *k, const char *v)
{
    iol_json_key(j, k);
    iol_json_string(j, v && v[0] ? v : NULL);
}

void find_report_json(struct iol_json *j, const struct find_run *r)
{
    const struct find_cfg *cfg = r->cfg;
    struct iol_optset set = {find_options, (void *)cfg};
    iol_json_key(j, "config");
    iol_json_begin_object(j);
    iol_opts_json(&set, 1, j);
    iol_json_end_object(j);
    if (!r->reduced) return;   /* a failed run: the status and error say why, there are no figures */

    iol_json_key(j, "find");
    iol_json_begin_object(j);
    iol_json_kv_string(j, "root", cfg->root);
    iol_json_kv_bool(j, "cut_short", r->cut_short);
    iol_json_kv_string(j, "file_system", r->fs_type[0] ? r->fs_type : "unknown");
    iol_json_key(j, "predicates");
    iol_json_begin_object(j);
    kv_string_or_null(j, "newer", cfg->newer);
    iol_json_key(j, "newer_mtime_ns");
    if (r->pr->has_newer) iol_json_int(j, r->pr->newer_sec * 1000000000 + r->pr->newer_nsec);
    else iol_json_null(j);
    kv_string_or_null(j, "size", cfg->size);
    kv_string_or_null(j, "name", cfg->name);
    iol_json_end_object(j);
    iol_json_kv_uint(j, "scanned", r->total.scanned);
    iol_json_kv_uint(j, "matched", r->total.matched);
    iol_json_kv_uint(j, "directories", r->total.dirs);
    iol_json_kv_uint(j, "stat_calls", r->total.stats);
    iol_json_kv_double(j, "time_s", r->time_s);
    iol_json_kv_double(j, "rate_per_s", r->rate);
    iol_json_kv_uint(j, "errors", r->total.errors);
    iol_json_key(j, "first_error");
    if (r->first_error_rank >= 0) {
        iol_json_begin_object(j);
        iol_json_kv_string(j, "message", r->first_error);
        iol_json_kv_int(j, "rank", r->first_error_rank);
        iol_json_end_object(j);
    } else {
        iol_json_null(j);
    }
    iol_json_key(j, "work_sharing");
    iol_json_begin_object(j);
    iol_json_kv_uint(j, "levels", r->levels);
    iol_json_kv_int(j, "split_entries", cfg->split_entries);
    iol_json_kv_uint(j, "shared_directories", r->shared_dirs);
    iol_json_kv_uint(j, "shared_chunks", r->shared_chunks);
    iol_json_end_object(j);
    iol_json_key(j, "stonewall");
    if (cfg->stonewall_s > 0) {
        iol_json_begin_object(j);
        iol_json_kv_double(j, "deadline_s", cfg->stonewall_s);
        iol_json_kv_bool(j, "hit", r->stonewall_hit);
        iol_json_end_object(j);
    } else {
        iol_json_null(j);
    }
    kv_string_or_null(j, "matches_file", cfg->matches);
    iol_json_key(j, "per_rank");
    iol_json_begin_array(j);
    for (int i = 0; i < r->nranks; i++) {
        const struct find_rank_stat *s = &r->all[i];
        iol_json_begin_object(j);
        iol_json_kv_int(j, "rank", i);
        iol_json_kv_uint(j, "scanned", s->scanned);
        iol_json_kv_uint(j, "matched", s->matched);
        iol_json_kv_uint(j, "errors", s->errors);
        iol_json_kv_uint(j, "stat_calls", s->stats);
        iol_json_kv_uint(j, "directories", s->dirs);
        iol_json_kv_double(j, "time_s", rank_time_s(s));
        iol_json_kv_double(j, "busy_s", ns_s(s->busy_ns));
        iol_json_end_object(j);
    }
    iol_json_end_array(j);
    iol_doc_latency(j, &r->hist, 1);
    iol_json_end_object(j);
}
