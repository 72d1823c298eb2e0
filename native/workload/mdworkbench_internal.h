/* mdworkbench_internal.h — what the md-workbench workload's files share. */
#ifndef IOL_MDWORKBENCH_INTERNAL_H
#define IOL_MDWORKBENCH_INTERNAL_H
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "../backend/backend.h"
#include "../common/hist.h"
#include "../common/json.h"
#include "../common/pattern.h"
#include "mdworkbench.h"
#include "run_doc.h"

/* The operations md-workbench counts, in the order of its counters. */
enum mdwb_op { MDWB_DSET_CREATE, MDWB_DSET_DELETE, MDWB_OBJ_CREATE, MDWB_OBJ_READ, MDWB_OBJ_STAT, MDWB_OBJ_DELETE,
               MDWB_NOPS };
extern const char *const mdwb_op_names[MDWB_NOPS];   /* "dset_create", ... */

/* The timed operations whose latencies are kept (md-workbench's create/read/stat/delete statistics). */
enum mdwb_lat { MDWB_LAT_CREATE, MDWB_LAT_READ, MDWB_LAT_STAT, MDWB_LAT_DELETE, MDWB_NLAT };
extern const char *const mdwb_lat_names[MDWB_NLAT];  /* "create", "read", "stat", "delete" */

enum mdwb_kind { MDWB_PRECREATE, MDWB_BENCHMARK, MDWB_CLEANUP };
extern const char *const mdwb_kind_names[3];         /* "precreate", "benchmark", "cleanup" */

/* One rank's figures of one phase (before combining), and the job's (after). */
struct mdwb_stats {
    uint64_t suc[MDWB_NOPS], err[MDWB_NOPS];
    double t_s;                     /* the phase's time: this rank's, or the slowest rank's */
    double max_op_s;
    uint64_t stonewall_iterations;  /* 0: no stonewall hit */
    struct iol_hist lat[MDWB_NLAT];
};

#define MDWB_LINE 1536

/* One phase as the job saw it (rank 0). */
struct mdwb_phase {
    enum mdwb_kind kind;
    int iteration;                  /* benchmark: 0, 1, ... (adaptive waiting runs share their iteration) */
    double waiting;                 /* the waiting factor it ran with */
    struct mdwb_stats all;          /* summed counts, merged latencies, slowest time */
    double t_min_s, t_mean_s, t_stddev_s;
    double rate;                    /* md-workbench's rate (iops/s) */
    int cut_short;
    double *rank_t_s;               /* each rank's time */
    char *rank_lines;               /* --process-reports: each rank's line, MDWB_LINE bytes apart */
};

struct mdwb_run {
    const struct mdwb_cfg *cfg;
    struct iol_comm *comm;
    const struct iol_run_info *info;
    const struct iol_backend *be;
    struct iol_bctx *bctx;
    int nranks;
    int64_t seed;                   /* the -G used (from the clock when -1) */
    int64_t start_index, index;     /* the position at the start, and now */
    void *buf;
    size_t buf_len;                 /* object size rounded up to 8 bytes */
    struct iol_req req;
    struct iol_req *done[1];
    struct iol_err err;
    int err_rank;
    const char *err_phase;
    FILE *text;                     /* rank 0's report, NULL when quiet */
    uint64_t t_start_ns;
    uint64_t verify_bytes, verify_errors;  /* -X, summed on rank 0 */
    char first_bad[IOL_STR_MAX + 128];
    struct iol_cleanup cleanup;
    unsigned char *gone;            /* this rank's sets removed, not yet out of the ledger */
    int made_sets;                  /* this run created data sets (a precreate got that far) */
    /* rank 0 */
    struct mdwb_phase *phases;
    int nphases, max_phases;
};

/* "RANK_SET", md-workbench's name of a data set. */
void mdwb_set_name(char *buf, size_t len, int rank, int64_t set);
/* The parent directory of path ("." for a bare name). */
void mdwb_parent(const char *path, char *parent, size_t len);

/* mdworkbench_report.c */
void mdwb_rate(const struct mdwb_cfg *cfg, enum mdwb_kind kind, const struct mdwb_stats *s, double *rate);
void mdwb_phase_line(char *buf, size_t len, const struct mdwb_run *r, enum mdwb_kind kind, const struct mdwb_stats *s,
                     const struct mdwb_phase *global);
void mdwb_report_begin(FILE *fp, const struct mdwb_run *r);
void mdwb_report_end(FILE *fp, const struct mdwb_run *r);
void mdwb_report_json(struct iol_json *j, const struct mdwb_run *r);

#endif
