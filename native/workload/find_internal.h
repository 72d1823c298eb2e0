/* find_internal.h — what the find workload's files share: the per-rank run state and the job's result. */
#ifndef IOL_FIND_INTERNAL_H
#define IOL_FIND_INTERNAL_H
#include <stdint.h>
#include <stdio.h>
#include "find.h"
#include "../common/hist.h"
#include "../common/json.h"

/* A growable byte buffer: lists of NUL-terminated paths, or directory entries as (type byte, name, NUL). */
struct find_buf {
    char *p;
    size_t len, cap;
};

/* A directory with more than --split-entries entries, read by one rank and shared by all. */
struct find_big {
    char *rel;
    struct find_buf ents;
};

/* One rank's figures; gathered to rank 0 as an array of u64 (keep every member a uint64_t). */
struct find_rank_stat {
    uint64_t scanned, matched, errors, stats, dirs;
    uint64_t t_start, t_end;        /* on rank 0's clock */
    uint64_t busy_ns;               /* reading and evaluating, without the waits at level boundaries */
};
#define FIND_RANK_STAT_WORDS (sizeof(struct find_rank_stat) / sizeof(uint64_t))

struct find_run {
    const struct find_cfg *cfg;
    const struct find_preds *pr;
    struct iol_comm *comm;
    const struct iol_run_info *info;
    int rank, nranks;
    int rootfd;
    const char *sep;                /* between the root as given and a relative path: "/" or "" */
    struct find_buf level, next, ents, rel;
    struct find_big *bigs;
    size_t nbigs, capbigs;
    struct find_rank_stat me;
    struct iol_hist hist;           /* every stat call of this rank; after the reduction, the job's */
    char first_error[1024];         /* this rank's first unreadable entry; after the reduction, the job's */
    int first_error_rank;
    FILE *mfp;                      /* --matches: this rank's part */
    char part[IOL_STR_MAX + 64];
    int64_t tag;                    /* rank 0's pid: names the parts of this run */
    uint64_t deadline_ns;           /* local monotonic; 0 = no stonewall */
    int stopped, stonewall_hit;
    uint64_t tick, next_progress_ns;
    uint64_t levels, shared_dirs;
    struct iol_err err;             /* fatal: the run fails (out of memory, communicator, --matches, signal) */
    int err_rank;
    const char *err_phase;
    char fs_type[32];
    /* rank 0, after the reduction */
    struct find_rank_stat *all;
    int reduced;                    /* all, total, time_s and rate hold the job's figures */
    struct find_rank_stat total;
    double time_s, rate;
};

/* find_report.c */
void find_report_text(FILE *fp, const struct find_run *r);
void find_report_json(struct iol_json *j, const struct find_run *r);
void find_predicates_text(const struct find_cfg *cfg, char *out, size_t len);

#endif
