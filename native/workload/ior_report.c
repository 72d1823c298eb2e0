/* ior_report.c — what the ior workload tells people: the IOR-like text report (so eyes and scripts used to
 * IOR find the same lines) and the members of the result document (docs/schema.md). */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/statvfs.h>
#include <sys/utsname.h>
#include <time.h>

#include "../common/clock.h"
#include "../common/interrupt.h"
#include "ior_internal.h"
#include "run_doc.h"

#define MIB (1024.0 * 1024.0)

int ior_summarize(const struct ior_run *r, const char *name, struct ior_summary *s)
{
    memset(s, 0, sizeof *s);
    s->name = name;
    double bw_sum = 0, ops_sum = 0, t_sum = 0;
    for (int i = 0; i < r->nphases; i++) {
        const struct ior_phase *ph = &r->phases[i];
        /* A cut-short phase is reported on its own (marked), not averaged with whole ones. */
        if (strcmp(ph->name, name) || ph->cut_short) continue;
        if (s->iterations == 0 || ph->bw > s->bw_max) s->bw_max = ph->bw;
        if (s->iterations == 0 || ph->bw < s->bw_min) s->bw_min = ph->bw;
        if (s->iterations == 0 || ph->ops_per_s > s->ops_max) s->ops_max = ph->ops_per_s;
        if (s->iterations == 0 || ph->ops_per_s < s->ops_min) s->ops_min = ph->ops_per_s;
        bw_sum += ph->bw;
        ops_sum += ph->ops_per_s;
        t_sum += ph->total_s;
        s->bytes = ph->bytes;
        s->iterations++;
    }
    if (!s->iterations) return 0;
    s->bw_mean = bw_sum / s->iterations;
    s->ops_mean = ops_sum / s->iterations;
    s->time_mean = t_sum / s->iterations;
    double vb = 0, vo = 0;
    for (int i = 0; i < r->nphases; i++) {
        const struct ior_phase *ph = &r->phases[i];
        if (strcmp(ph->name, name) || ph->cut_short) continue;
        vb += (ph->bw - s->bw_mean) * (ph->bw - s->bw_mean);
        vo += (ph->ops_per_s - s->ops_mean) * (ph->ops_per_s - s->ops_mean);
    }
    /* Population standard deviation over the iterations, as IOR prints it. */
    s->bw_stddev = sqrt(vb / s->iterations);
    s->ops_stddev = sqrt(vo / s->iterations);
    return s->iterations;
}

/* ---- text ------------------------------------------------------------------------------------------ */

static void ctime_now(char *buf, size_t len)
{
    time_t t = time(NULL);
    struct tm tm;
    localtime_r(&t, &tm);
    strftime(buf, len, "%a %b %e %H:%M:%S %Y", &tm);
}

void ior_report_text_begin(FILE *fp, const struct ior_run *r)
{
    const struct ior_cfg *cfg = r->cfg;
    char when[64], p[IOL_STR_MAX + 64], sz[32];
    struct utsname u;
    if (uname(&u) != 0) memset(&u, 0, sizeof u);
    ctime_now(when, sizeof when);
    fprintf(fp, "iolens-bench %s: IOR-compatible run\n", IOLENS_VERSION);
    fprintf(fp, "Began               : %s\n", when);
    fprintf(fp, "Command line        :");
    for (int i = 0; i < r->info->argc; i++) fprintf(fp, " %s", r->info->argv[i]);
    fprintf(fp, "\nMachine             : %s %s\n", u.sysname, r->comm->hostname);
    ior_file_path(cfg, 0, 0, p, sizeof p);
    fprintf(fp, "Path                : %s\n", p);
    char dir[IOL_STR_MAX], base[IOL_STR_MAX];
    ior_split_path(cfg->path, dir, sizeof dir, base, sizeof base);
    struct statvfs sv;
    if (r->be && r->be->does_io && statvfs(dir, &sv) == 0 && sv.f_blocks) {
        iol_format_size((uint64_t)sv.f_blocks * sv.f_frsize, sz, sizeof sz);
        fprintf(fp, "FS                  : %s %s   Used FS: %.1f%%\n", r->fs_type, sz,
                100.0 * (double)(sv.f_blocks - sv.f_bfree) / (double)sv.f_blocks);
    }
    fprintf(fp, "\nOptions: \n");
    fprintf(fp, "api                 : %s\n", r->be ? r->be->name : cfg->api);
    fprintf(fp, "test filename       : %s\n", cfg->path);
    fprintf(fp, "access              : %s\n", cfg->fpp ? "file-per-process" : "single-shared-file");
    fprintf(fp, "type                : %s\n", cfg->collective ? "collective" : "independent");
    fprintf(fp, "segments            : %" PRId64 "\n", r->segments);
    fprintf(fp, "ordering in a file  : %s\n", cfg->random ? "random" : "sequential");
    fprintf(fp, "ordering inter file : %s\n", cfg->reorder ? "constant task offset" : "no tasks offsets");
    if (cfg->reorder) fprintf(fp, "task offset         : %" PRId64 "\n", cfg->task_offset);
    fprintf(fp, "task mapping        : %s\n", r->comm->block_mapping ? "block" : "cyclic");
    fprintf(fp, "nodes               : %d\n", r->comm->nodes);
    fprintf(fp, "tasks               : %d\n", r->nranks);
    fprintf(fp, "clients per node    : %d\n", r->tasks_per_node);
    fprintf(fp, "queue depth         : %d\n", r->qd);
    fprintf(fp, "repetitions         : %" PRId64 "\n", cfg->reps);
    iol_format_size(cfg->xfer, sz, sizeof sz);
    fprintf(fp, "xfersize            : %s\n", sz);
    iol_format_size(cfg->block, sz, sizeof sz);
    fprintf(fp, "blocksize           : %s\n", sz);
    iol_format_size(cfg->block * (uint64_t)r->segments * (uint64_t)r->nranks, sz, sizeof sz);
    fprintf(fp, "aggregate filesize  : %s\n", sz);
    if (cfg->direct) fprintf(fp, "O_DIRECT            : 1\n");
    if (cfg->deadline_s) {
        fprintf(fp, "stonewallingTime    : %" PRId64 "\n", cfg->deadline_s);
        fprintf(fp, "stoneWallingWearOut : %d\n", cfg->wear_out);
    }
    fprintf(fp, "\nResults: \n\n");
    fprintf(fp, "access    bw(MiB/s)  IOPS       Latency(s)  block(KiB) xfer(KiB)  open(s)    wr/rd(s)   close(s)   "
                "total(s)   iter\n");
    fprintf(fp, "------    ---------  ----       ----------  ---------- ---------  --------   --------   --------   "
                "--------   ----\n");
    fflush(fp);
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

void ior_report_text_phase(FILE *fp, const struct ior_run *r, const struct ior_phase *ph)
{
    const struct ior_cfg *cfg = r->cfg;
    if (ph->stonewall.active) {
        char a[32], b[32];
        iol_format_size(ph->stonewall.pairs_min * cfg->xfer, a, sizeof a);
        iol_format_size(ph->stonewall.bytes_at_deadline / (uint64_t)r->nranks, b, sizeof b);
        fprintf(fp, "stonewalling pairs accessed min: %" PRIu64 " max: %" PRIu64 " -- min data: %s mean data: %s "
                    "time: %.1fs%s\n", ph->stonewall.pairs_min, ph->stonewall.pairs_max, a, b, ph->stonewall.time_s,
                ph->stonewall.hit ? "" : " (deadline not reached)");
    }
    fprintf(fp, "%-9s %-10.2f %-10.2f %-11.6f %-10.0f %-10.2f %-10.6f %-10.4f %-10.6f %-10.4f %-4d\n", ph->name,
            ph->bw / MIB, ph->ops_per_s, iol_hist_mean(&ph->hist) / 1e9, (double)cfg->block / 1024.0,
            (double)cfg->xfer / 1024.0, ph->open_s, ph->xfer_s, ph->close_s, ph->total_s, ph->iteration);
    char p50[24], p90[24], p99[24], p999[24], mx[24];
    fmt_latency(iol_hist_percentile(&ph->hist, 50), p50, sizeof p50);
    fmt_latency(iol_hist_percentile(&ph->hist, 90), p90, sizeof p90);
    fmt_latency(iol_hist_percentile(&ph->hist, 99), p99, sizeof p99);
    fmt_latency(iol_hist_percentile(&ph->hist, 99.9), p999, sizeof p999);
    fmt_latency(ph->hist.max, mx, sizeof mx);
    fprintf(fp, "          latency p50 %s  p90 %s  p99 %s  p99.9 %s  max %s  (%" PRIu64 " transfers)\n", p50, p90,
            p99, p999, mx, ph->hist.count);
    if (ph->verify.active) {
        if (ph->verify.errors)
            fprintf(fp, "          verify: %" PRIu64 " bytes checked, %" PRIu64 " BAD bytes, first at offset %" PRId64
                        " (data of rank %d)\n", ph->verify.bytes_checked, ph->verify.errors,
                    ph->verify.first_bad_offset, ph->verify.first_bad_rank);
        else
            fprintf(fp, "          verify: %" PRIu64 " bytes checked, no errors\n", ph->verify.bytes_checked);
    }
    if (ph->cache.is_read && ph->cache.note) fprintf(fp, "          note: %s\n", ph->cache.note);
    if (ph->cut_short) {
        int sig = iol_interrupt_pending();
        fprintf(fp, "          CUT SHORT%s%s: the figures above cover the %" PRIu64 " transfers done before the run stopped\n",
                sig ? " by " : "", sig ? iol_signal_name(sig) : "", ph->ops);
    }
    fflush(fp);
}

void ior_report_text_end(FILE *fp, const struct ior_run *r)
{
    const struct ior_cfg *cfg = r->cfg;
    fprintf(fp, "\nSummary of all tests:\n");
    fprintf(fp, "Operation   Max(MiB)   Min(MiB)  Mean(MiB)     StdDev   Max(OPs)   Min(OPs)  Mean(OPs)     StdDev    "
                "Mean(s) #Tasks tPN reps fPP reord reordoff seed segcnt   blksiz    xsize aggs(MiB)   API\n");
    const char *names[2] = {"write", "read"};
    for (int i = 0; i < 2; i++) {
        struct ior_summary s;
        if (!ior_summarize(r, names[i], &s)) continue;
        fprintf(fp, "%-9s %10.2f %10.2f %10.2f %10.2f %10.2f %10.2f %10.2f %10.2f %10.5f %6d %3d %4" PRId64
                    " %3d %5d %8" PRId64 " %4" PRId64 " %6" PRId64 " %8" PRIu64 " %8" PRIu64 " %9.1f %5s\n",
                s.name, s.bw_max / MIB, s.bw_min / MIB, s.bw_mean / MIB, s.bw_stddev / MIB, s.ops_max, s.ops_min,
                s.ops_mean, s.ops_stddev, s.time_mean, r->nranks, r->tasks_per_node, cfg->reps, cfg->fpp,
                cfg->reorder, cfg->task_offset, cfg->seed, r->segments, cfg->block, cfg->xfer,
                (double)s.bytes / MIB, r->be ? r->be->name : cfg->api);
    }
    char when[64];
    ctime_now(when, sizeof when);
    fprintf(fp, "Finished            : %s\n", when);
    fflush(fp);
}

/* ---- JSON ------------------------------------------------------------------------------------------ */

static void json_phase(struct iol_json *j, const struct ior_run *r, const struct ior_phase *ph)
{
    const struct ior_cfg *cfg = r->cfg;
    iol_json_begin_object(j);
    iol_json_kv_string(j, "name", ph->name);
    iol_json_kv_int(j, "iteration", ph->iteration);
    iol_json_kv_uint(j, "bytes", ph->bytes);
    iol_json_kv_uint(j, "ops", ph->ops);
    iol_json_kv_bool(j, "cut_short", ph->cut_short);
    char when[64];
    iol_format_utc(ph->began_wall_ns, when, sizeof when);
    iol_json_kv_string(j, "began_at", when);
    iol_json_key(j, "times");
    iol_json_begin_object(j);
    iol_json_kv_double(j, "open_s", ph->open_s);
    iol_json_kv_double(j, "xfer_s", ph->xfer_s);
    iol_json_kv_double(j, "close_s", ph->close_s);
    iol_json_kv_double(j, "total_s", ph->total_s);
    iol_json_end_object(j);
    iol_json_kv_double(j, "bw_bytes_per_s", ph->bw);
    iol_json_kv_double(j, "ops_per_s", ph->ops_per_s);
    iol_doc_latency(j, &ph->hist, 1);
    iol_json_key(j, "per_rank");
    iol_json_begin_array(j);
    for (int i = 0; i < r->nranks && ph->rank_bytes && ph->rank_total_s; i++) {
        iol_json_begin_object(j);
        iol_json_kv_int(j, "rank", i);
        iol_json_kv_uint(j, "bytes", ph->rank_bytes[i]);
        iol_json_kv_uint(j, "ops", ph->rank_ops[i]);
        iol_json_kv_double(j, "xfer_s", ph->rank_xfer_s[i]);
        iol_json_kv_double(j, "total_s", ph->rank_total_s[i]);
        if (ph->stonewall.active && ph->rank_pairs_at_deadline)
            iol_json_kv_uint(j, "pairs_at_deadline", ph->rank_pairs_at_deadline[i]);
        iol_json_end_object(j);
    }
    iol_json_end_array(j);
    iol_json_key(j, "stonewall");
    if (!ph->stonewall.active) {
        iol_json_null(j);
    } else {
        iol_json_begin_object(j);
        iol_json_kv_int(j, "deadline_s", cfg->deadline_s);
        iol_json_kv_bool(j, "wear_out", cfg->wear_out);
        iol_json_kv_bool(j, "hit", ph->stonewall.hit);
        iol_json_kv_uint(j, "pairs_min", ph->stonewall.pairs_min);
        iol_json_kv_uint(j, "pairs_max", ph->stonewall.pairs_max);
        iol_json_kv_uint(j, "bytes_at_deadline", ph->stonewall.bytes_at_deadline);
        iol_json_kv_double(j, "time_s", ph->stonewall.time_s);
        iol_json_end_object(j);
    }
    iol_json_key(j, "cache");
    iol_json_begin_object(j);
    iol_json_kv_bool(j, "o_direct", ph->cache.o_direct);
    if (ph->cache.is_read) {
        iol_json_kv_string(j, "policy", ph->cache.evict_requested ? "evict" : "keep");
        iol_json_kv_bool(j, "evicted", ph->cache.evicted && ph->cache.evict_requested);
        iol_json_key(j, "via");
        iol_json_string(j, ph->cache.via);
        iol_json_key(j, "note");
        iol_json_string(j, ph->cache.note);
    }
    iol_json_end_object(j);
    iol_json_key(j, "fsync");
    iol_json_begin_object(j);
    iol_json_kv_bool(j, "on_close", cfg->fsync && !ph->cache.is_read);
    iol_json_kv_bool(j, "per_write", cfg->fsync_per_write && !ph->cache.is_read);
    iol_json_end_object(j);
    iol_doc_backend_stats(j, r->be->stats ? &ph->bstats : NULL);
    iol_json_key(j, "verify");
    if (!ph->verify.active) {
        iol_json_null(j);
    } else {
        iol_json_begin_object(j);
        iol_json_kv_uint(j, "bytes_checked", ph->verify.bytes_checked);
        iol_json_kv_uint(j, "errors", ph->verify.errors);
        iol_json_key(j, "first_bad_offset");
        if (ph->verify.first_bad_offset >= 0) iol_json_int(j, ph->verify.first_bad_offset);
        else iol_json_null(j);
        iol_json_key(j, "first_bad_rank");
        if (ph->verify.first_bad_rank >= 0) iol_json_int(j, ph->verify.first_bad_rank);
        else iol_json_null(j);
        iol_json_end_object(j);
    }
    iol_json_end_object(j);
}

void ior_report_json(struct iol_json *j, const struct ior_run *r)
{
    const struct ior_cfg *cfg = r->cfg;
    struct iol_optset set = {ior_options, (void *)cfg};
    iol_json_key(j, "config");
    iol_json_begin_object(j);
    iol_opts_json(&set, 1, j);
    iol_json_end_object(j);

    /* The backend as it ran: its name, the transfer mode and what the backend reports of its settings (the
     * MPI hints in effect). */
    iol_json_key(j, "api");
    iol_json_begin_object(j);
    iol_json_kv_string(j, "name", r->be ? r->be->name : cfg->api);
    iol_json_kv_bool(j, "collective", cfg->collective);
    if (r->be && r->be->describe && r->bctx) r->be->describe(r->bctx, j);
    iol_json_end_object(j);

    char p[IOL_STR_MAX + 64];
    ior_file_path(cfg, 0, 0, p, sizeof p);
    iol_json_key(j, "target");
    iol_json_begin_object(j);
    iol_json_kv_string(j, "path", cfg->path);
    iol_json_kv_string(j, "first_file", p);
    iol_json_kv_string(j, "file_system", r->fs_type[0] ? r->fs_type : "unknown");
    iol_json_kv_int(j, "files", cfg->fpp ? r->nranks : 1);
    iol_json_kv_int(j, "read_rank_shift", r->read_rank_shift);
    iol_json_kv_int(j, "check_rank_shift", r->check_rank_shift);
    iol_json_kv_string(j, "task_mapping", r->comm->block_mapping ? "block" : "cyclic");
    /* The file system's size and inodes under -o, as IOR's "FS" line shows them (null: no I/O, or unknown). */
    char dir[IOL_STR_MAX], base[IOL_STR_MAX];
    ior_split_path(cfg->path, dir, sizeof dir, base, sizeof base);
    struct statvfs sv;
    iol_json_key(j, "capacity");
    if (r->be && r->be->does_io && statvfs(dir, &sv) == 0 && sv.f_blocks) {
        iol_json_begin_object(j);
        iol_json_kv_uint(j, "bytes", (uint64_t)sv.f_blocks * sv.f_frsize);
        iol_json_kv_uint(j, "free_bytes", (uint64_t)sv.f_bfree * sv.f_frsize);
        iol_json_kv_uint(j, "inodes", (uint64_t)sv.f_files);
        iol_json_kv_uint(j, "free_inodes", (uint64_t)sv.f_ffree);
        iol_json_end_object(j);
    } else {
        iol_json_null(j);
    }
    iol_json_end_object(j);

    iol_json_key(j, "phases");
    iol_json_begin_array(j);
    for (int i = 0; i < r->nphases; i++) json_phase(j, r, &r->phases[i]);
    iol_json_end_array(j);

    /* Per iteration that removed its files: the time it took (IOR's "remove" line). */
    iol_json_key(j, "removals");
    iol_json_begin_array(j);
    for (int i = 0; i < r->nremoves; i++) {
        iol_json_begin_object(j);
        iol_json_kv_int(j, "iteration", i);
        iol_json_kv_double(j, "time_s", r->remove_s[i]);
        iol_json_end_object(j);
    }
    iol_json_end_array(j);

    iol_json_key(j, "summary");
    iol_json_begin_array(j);
    const char *names[2] = {"write", "read"};
    for (int n = 0; n < 2; n++) {
        struct ior_summary s;
        if (!ior_summarize(r, names[n], &s)) continue;
        struct iol_hist all;
        iol_hist_init(&all);
        for (int i = 0; i < r->nphases; i++)
            if (!strcmp(r->phases[i].name, names[n]) && !r->phases[i].cut_short) iol_hist_merge(&all, &r->phases[i].hist);
        iol_json_begin_object(j);
        iol_json_kv_string(j, "name", s.name);
        iol_json_kv_int(j, "iterations", s.iterations);
        iol_json_kv_double(j, "bw_max_bytes_per_s", s.bw_max);
        iol_json_kv_double(j, "bw_min_bytes_per_s", s.bw_min);
        iol_json_kv_double(j, "bw_mean_bytes_per_s", s.bw_mean);
        iol_json_kv_double(j, "bw_stddev_bytes_per_s", s.bw_stddev);
        iol_json_kv_double(j, "ops_max_per_s", s.ops_max);
        iol_json_kv_double(j, "ops_min_per_s", s.ops_min);
        iol_json_kv_double(j, "ops_mean_per_s", s.ops_mean);
        iol_json_kv_double(j, "ops_stddev_per_s", s.ops_stddev);
        iol_json_kv_double(j, "time_mean_s", s.time_mean);
        iol_json_kv_uint(j, "bytes", s.bytes);
        iol_doc_latency(j, &all, 0);
        iol_json_end_object(j);
    }
    iol_json_end_array(j);
}
