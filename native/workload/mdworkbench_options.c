/* mdworkbench_options.c — every option of the md-workbench workload, declared once, and the checks made
 * before any I/O: the options together, the paths, the position file, the free space. */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../backend/backend.h"
#include "../common/ledger.h"
#include "../common/pathcheck.h"
#include "../common/space.h"
#include "mdworkbench_internal.h"

#define F(field) offsetof(struct mdwb_cfg, field)
#define NOLIM 0, 0

const struct iol_option mdwb_options[] = {
    {'O', "offset", NULL, IOL_OPT_INT, F(offset), "1", "rank distance between the writer and the reader of a data set", 0, 1e9},
    {'a', "api", NULL, IOL_OPT_STRING, F(api), "posix", "storage backend, one of" IOL_BACKEND_NAMES_TEXT " (null does no I/O)", NOLIM},
    {'I', "obj-per-proc", NULL, IOL_OPT_INT, F(obj_per_proc), "1000", "objects per data set and benchmark iteration", 0, 1e12},
    {'L', "latency", NULL, IOL_OPT_STRING, F(latency), "", "per-operation latency CSV files: not supported (the document has latency histograms)", NOLIM},
    {0, "latency-all", NULL, IOL_OPT_FLAG, F(latency_all), "0", "latency files of every rank: not supported", NOLIM},
    {'P', "precreate-per-set", NULL, IOL_OPT_INT, F(precreate), "3000", "objects precreated per data set", 0, 1e12},
    {'D', "data-sets", NULL, IOL_OPT_INT, F(data_sets), "10", "data sets (directories) per rank", 1, 1e6},
    {'G', "random-seed", NULL, IOL_OPT_INT, F(seed), "-1", "seed of the data pattern (-1: from the clock)", -2147483648.0, 4294967295.0},
    {'o', "output-dir", NULL, IOL_OPT_STRING, F(dir), "./out", "directory of the data sets", NOLIM},
    {'q', "quiet-output", NULL, IOL_OPT_FLAG, F(quiet_output), "0", "md-workbench's -q: only the phase lines (--quiet is the engine's: no report)", NOLIM},
    {'S', "object-size", NULL, IOL_OPT_INT, F(object_size), "3901", "bytes of each object", 0, 1073741824.0},
    {'R', "iterations", NULL, IOL_OPT_INT, F(iterations), "3", "benchmark iterations", 0, 1e9},
    {'t', "waiting-time", NULL, IOL_OPT_DOUBLE, F(waiting), "0", "wait after each operation, relative to its time (1.0 is 100%)", 0, 1e6},
    {'T', "adaptive-waiting", NULL, IOL_OPT_FLAG, F(adaptive), "0", "after each iteration, 7 more with waiting times 0.0625, 0.125, ... 4", NOLIM},
    {'1', "run-precreate", NULL, IOL_OPT_FLAG, F(phase_precreate), "0", "run the precreate phase", NOLIM},
    {'2', "run-benchmark", NULL, IOL_OPT_FLAG, F(phase_benchmark), "0", "run the benchmark phase", NOLIM},
    {'3', "run-cleanup", NULL, IOL_OPT_FLAG, F(phase_cleanup), "0", "run the cleanup phase (no -1/-2/-3: all three)", NOLIM},
    {'w', "stonewall-timer", NULL, IOL_OPT_INT, F(stonewall_s), "0", "end each benchmark iteration after this many seconds", 0, 1e9},
    {'W', "stonewall-wear-out", NULL, IOL_OPT_FLAG, F(wear_out), "0", "with -w: every rank then goes on to the most objects any rank did", NOLIM},
    {'X', "verify-read", NULL, IOL_OPT_FLAG, F(verify_read), "0", "check every byte read", NOLIM},
    {0, "dataPacketType", NULL, IOL_OPT_STRING, F(packet_type), "t", "accepted (IOR's patterns); iolens writes its own (seed, rank, object) pattern", NOLIM},
    {0, "allocateBufferOnGPU", NULL, IOL_OPT_FLAG, F(gpu), "0", "GPU buffers: not supported", NOLIM},
    {0, "start-item", NULL, IOL_OPT_INT, F(start_item), "0", "object number to start with (instead of the position file's)", 0, 1e15},
    {0, "print-detailed-stats", NULL, IOL_OPT_FLAG, F(detailed), "0", "md-workbench's tab-separated lines", NOLIM},
    {0, "read-only", NULL, IOL_OPT_FLAG, F(read_only), "0", "benchmark phase: only stat and read (no delete, no create)", NOLIM},
    {0, "ignore-precreate-errors", NULL, IOL_OPT_FLAG, F(ignore_precreate_errors), "0", "go on after failed creates (counted as errors)", NOLIM},
    {0, "process-reports", NULL, IOL_OPT_FLAG, F(process_reports), "0", "a line per rank after each phase's line", NOLIM},
    {'v', "verbose", NULL, IOL_OPT_COUNT, F(verbosity), "0", "more output (-v -v: every operation)", NOLIM},
    {0, "run-info-file", NULL, IOL_OPT_STRING, F(run_info_file), "md-workbench.status", "position file joining separate -1, -2, -3 runs", NOLIM},
    {0},
};

void mdwb_normalize(struct mdwb_cfg *cfg)
{
    if (!cfg->phase_precreate && !cfg->phase_benchmark && !cfg->phase_cleanup)
        cfg->phase_precreate = cfg->phase_benchmark = cfg->phase_cleanup = 1;
}

int mdwb_validate(const struct mdwb_cfg *cfg, int nranks, struct iol_err *err)
{
    (void)nranks;
    if (!iol_backend_find(cfg->api))
        return iol_err_set(err, IOL_ERR_USAGE, "-a: unknown api '%s' (known: %s)", cfg->api, iol_backend_names());
    if (cfg->latency[0] || cfg->latency_all)
        return iol_err_set(err, IOL_ERR_USAGE, "%s: per-operation latency files are not supported by iolens (the "
                           "result document has each operation's latency histogram and percentiles)",
                           cfg->latency[0] ? "-L" : "--latency-all");
    if (cfg->gpu)
        return iol_err_set(err, IOL_ERR_USAGE, "--allocateBufferOnGPU: GPU buffers are not supported by iolens");
    if (!cfg->dir[0]) return iol_err_set(err, IOL_ERR_USAGE, "-o: the directory is empty");
    if (cfg->wear_out && !cfg->stonewall_s)
        return iol_err_set(err, IOL_ERR_USAGE, "-W: the wear-out needs a stonewall (-w SECONDS)");
    const char *p = cfg->packet_type;
    if (!strchr("oitr", p[0]) || !p[0])
        return iol_err_set(err, IOL_ERR_USAGE, "--dataPacketType: '%s' is not one of offset, incompressible, "
                           "timestamp, random (o, i, t, r)", p);
    return 0;
}

int mdwb_read_position(const char *path, int64_t *pos, struct iol_err *err)
{
    FILE *fp = fopen(path, "r");
    if (!fp) return iol_err_errno(err, IOL_ERR_USAGE, errno, "--run-info-file: cannot read '%s' (run the precreate "
                                  "phase -1 first, or give --start-item)", path);
    long long v = -1;
    int n = fscanf(fp, "pos: %lld", &v);
    fclose(fp);
    if (n != 1 || v < 0)
        return iol_err_set(err, IOL_ERR_USAGE, "--run-info-file: '%s' does not hold a position (\"pos: N\")", path);
    *pos = v;
    return 0;
}

/* Every rank's data sets: absent before a precreate (a name iolens did not make may be another tool's), and
 * iolens's (in the ledger of -o) before a benchmark or a cleanup, which delete objects in them. */
static int check_sets(const struct mdwb_cfg *cfg, int nranks, struct iol_err *err)
{
    char path[IOL_STR_MAX + 64], name[64];
    for (int r = 0; r < nranks; r++) {
        for (int64_t d = 0; d < cfg->data_sets; d++) {
            mdwb_set_name(name, sizeof name, r, d);
            snprintf(path, sizeof path, "%s/%s", cfg->dir, name);
            int exists = access(path, F_OK) == 0, ours = iol_ledger_owns(cfg->dir, name);
            if (cfg->phase_precreate && exists)
                return iol_err_set(err, IOL_ERR_USAGE, ours ? "-o: data set '%s' is left from an earlier precreate "
                                   "(-1); remove it first with a cleanup run (-3)" : "-o: '%s' exists and was not "
                                   "created by iolens", path);
            if (!cfg->phase_precreate && !exists)
                return iol_err_set(err, IOL_ERR_USAGE, "-o: data set '%s' does not exist (run the precreate phase -1 "
                                   "first, with as many ranks)", path);
            if (!cfg->phase_precreate && !ours)
                return iol_err_set(err, IOL_ERR_USAGE, "-o: data set '%s' was not created by iolens; refusing to "
                                   "delete anything in it", path);
        }
    }
    return 0;
}

int mdwb_check_paths(const struct mdwb_cfg *cfg, int nranks, struct iol_err *err)
{
    const struct iol_backend *be = iol_backend_find(cfg->api);
    if (!be || !be->does_io) return 0;
    struct stat st;
    char why[IOL_STR_MAX + 64];
    if (stat(cfg->dir, &st) != 0) {
        if (!cfg->phase_precreate)
            return iol_err_set(err, IOL_ERR_USAGE, "-o: directory '%s' does not exist: nothing to benchmark or clean "
                               "up (run the precreate phase -1 first)", cfg->dir);
        char parent[IOL_STR_MAX];
        mdwb_parent(cfg->dir, parent, sizeof parent);
        if (iol_dir_problem(parent, why, sizeof why))
            return iol_err_set(err, IOL_ERR_USAGE, "-o: %s (for '%s')", why, cfg->dir);
        if (access(parent, W_OK | X_OK) != 0)
            return iol_err_set(err, IOL_ERR_USAGE, "-o: directory '%s' is not writable", parent);
    } else {
        if (!S_ISDIR(st.st_mode)) return iol_err_set(err, IOL_ERR_USAGE, "-o: '%s' is not a directory", cfg->dir);
        if (access(cfg->dir, W_OK | X_OK) != 0)
            return iol_err_set(err, IOL_ERR_USAGE, "-o: directory '%s' is not writable", cfg->dir);
        if (check_sets(cfg, nranks, err)) return -1;
    }
    int64_t pos;
    if (!cfg->phase_precreate && !cfg->start_item && mdwb_read_position(cfg->run_info_file, &pos, err)) return -1;
    return 0;
}

int mdwb_check_space(const struct mdwb_cfg *cfg, int nranks, struct iol_err *err)
{
    const struct iol_backend *be = iol_backend_find(cfg->api);
    if (!be || !be->does_io || !cfg->phase_precreate) return 0;
    /* The FIFO keeps P objects per set at any time (one more while an object is replaced). */
    long double objects = (long double)nranks * cfg->data_sets * (cfg->precreate + 1);
    long double bytes = objects * (long double)((cfg->object_size + 4095) / 4096 * 4096);
    struct iol_space sp;
    sp.n = 0;
    char probe[IOL_STR_MAX];
    struct stat st;
    if (stat(cfg->dir, &st) == 0) snprintf(probe, sizeof probe, "%s", cfg->dir);
    else mdwb_parent(cfg->dir, probe, sizeof probe);
    iol_space_add(&sp, probe, bytes, objects + (long double)nranks * cfg->data_sets + 1);
    return iol_space_check(&sp, "-P/-S", "-S in 4 KiB blocks x -P x -D x ranks", err);
}
