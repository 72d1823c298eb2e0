/* find_internal.h — what the find workload's files share: the per-rank run state and the job's result. */
#ifndef IOL_FIND_INTERNAL_H
#define IOL_FIND_INTERNAL_H
#include <dirent.h>
#include <limits.h>
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

/* An entry in a find_buf: the type byte, a name of at most NAME_MAX bytes, its NUL. */
#define FIND_ENTRY_MAX (NAME_MAX + 2)
/* Directories a rank sets aside open in one level, at most (each holds a descriptor). */
#define FIND_MAX_OPEN 64

/* A directory with more than --split-entries entries, set aside by its reader after that many and finished
 * by all ranks at the level's end (find_share.c). */
struct find_big {
    size_t rel_off;                 /* its path: at this offset of r->level, the same on every rank */
    struct find_buf ents;           /* the entries read so far */
    size_t cursor;                  /* of ents: what is already shared */
    DIR *d;                         /* still open at the next entry to read; NULL once read to the end */
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
    uint64_t level_busy0;           /* me.busy_ns when this level started */
    uint64_t levels, shared_dirs, shared_chunks;
    struct iol_err err;             /* fatal: the run fails (out of memory, communicator, --matches, signal) */
    int err_rank;
    const char *err_phase;
    char fs_type[32];
    /* rank 0, after the reduction */
    struct find_rank_stat *all;
    int reduced;                    /* all, total, time_s and rate hold the job's figures */
    int cut_short;                  /* interrupted: the figures cover the walk until the stop */
    struct find_rank_stat total;
    double time_s, rate;
};

/* find.c: what find_share.c uses of the walk */
int find_buf_reserve(struct find_buf *b, size_t extra);
void find_buf_free(struct find_buf *b);
int find_comm_failed(struct find_run *r);
int find_out_of_memory(struct find_run *r);
/* Looks at signals, the stonewall and the progress clock now; returns 1 once this rank must stop. */
int find_check_clock(struct find_run *r);
/* The same, every 64th call only (once per entry is too often to read the clock). */
int find_must_stop(struct find_run *r);
int find_open_dir(struct find_run *r, const char *rel);
/* Evaluates the predicates on one entry of directory `rel` (open as dfd, -1 if it could not be opened). */
void find_process_entry(struct find_run *r, int dfd, const char *rel, const char *name, const char *match_name);
/* Reads entries of directory rel (stream d) into b as (type, name, NUL): at most max of them and, if cap is
 * not 0, no more than keep b within cap bytes; lists the subdirectories in r->next. Returns 1 at the end of
 * the directory (a read error, counted, ends it too), 0 when a limit stopped it, -1 out of memory; *count
 * gets the number of entries read. */
int find_read_entries(struct find_run *r, DIR *d, const char *rel, struct find_buf *b, uint64_t max, size_t cap,
                      uint64_t *count);
/* Collective: every rank gets every rank's `mine` (one u64 each). */
int find_allgather_u64(struct find_run *r, uint64_t mine, uint64_t *all);
/* Collective: 1 if any rank could not get `need` more bytes in b (then every rank stops). */
int find_reserve_everywhere(struct find_run *r, struct find_buf *b, size_t need);

/* find_share.c */
/* Collective: the directories every rank set aside in this level, finished together. counts: nranks words. */
int find_share_big_dirs(struct find_run *r, uint64_t *counts);
/* Frees what find_share_big_dirs did not get to (after a failure), closing the directories. */
void find_free_bigs(struct find_run *r);

/* find_report.c */
void find_report_text(FILE *fp, const struct find_run *r);
void find_report_json(struct iol_json *j, const struct find_run *r);
void find_predicates_text(const struct find_cfg *cfg, char *out, size_t len);

#endif
