/* find.h — the find workload: a parallel walk of a directory tree that evaluates find's -newer, -size and
 * -name on every entry and reports how many entries were scanned per second (IO500's find phase, pfind's
 * semantics). See docs/find.md for how the ranks share the work. */
#ifndef IOL_FIND_H
#define IOL_FIND_H
#include <stdint.h>
#include "../comm/comm.h"
#include "../common/options.h"
#include "run_info.h"

struct find_cfg {
    char root[IOL_STR_MAX];        /* DIR: the first argument (or --root) */
    char newer[IOL_STR_MAX];       /* -newer FILE */
    char size[IOL_STR_MAX];        /* -size [+|-]N[bcwkMG] */
    char name[IOL_STR_MAX];        /* -name GLOB */
    char matches[IOL_STR_MAX];     /* --matches FILE: matching paths, one per line */
    double stonewall_s;            /* --stonewall: stop scanning after this many seconds (0 = off) */
    int64_t split_entries;         /* --split-entries: larger directories are finished by all ranks together */
};

extern const struct iol_option find_options[];

/* -size as find reads it: the file's size in `unit`s, rounded up, compared with n. */
struct find_size {
    int cmp;                       /* -1: fewer than n units, 0: exactly n, +1: more than n */
    uint64_t n;
    uint64_t unit;                 /* bytes: b=512 (find's default), c=1, w=2, k, M, G */
};

/* The predicates as every rank evaluates them: plain data, so rank 0 can check the input once and
 * broadcast the result (one reference time for -newer, however the ranks' file systems cache it). */
struct find_preds {
    int has_newer, has_size, has_name;
    int needs_stat;                /* -newer or -size: every candidate entry is stat'ed */
    int64_t newer_sec, newer_nsec; /* mtime of the -newer file */
    struct find_size size;
};

/* Rewrites find's one-dash predicate names (-newer, -size, -name) into the long options the options table
 * declares, in place, leaving the values untouched (a -name pattern may itself start with '-'). An empty
 * value is refused here, as nothing later can tell it from "not given". Returns 0 or -1 (IOL_ERR_USAGE). */
int find_argv_normalize(const struct iol_optset *sets, int nsets, int argc, char **argv, struct iol_err *err);

/* Parses find's -size argument: "[+|-]N[bcwkMG]" (no unit = 512-byte blocks, as find). */
int find_size_parse(const char *s, struct find_size *out, struct iol_err *err);
/* 1 if a file of `bytes` bytes matches. */
int find_size_match(const struct find_size *p, uint64_t bytes);
/* 1 if an entry with mtime (sec, nsec) is strictly newer than the -newer file. */
int find_newer_match(const struct find_preds *p, int64_t sec, int64_t nsec);
/* The rank that reads directory `index` of a level's list. */
static inline int find_entry_owner(uint64_t index, int nranks)
{
    return (int)(index % (uint64_t)nranks);
}
/* How the entries of one step of the shared directories (find_share.c) are split: counts[i] entries to rank
 * i (consecutive ranges, in rank order), so that the ranks' busy times come out as level as they can:
 * busy[i] is rank i's so far in nanoseconds, and evaluating an entry costs eval_ns / evaluated (what the
 * ranks measured; without a measure yet, an equal split). Integer arithmetic only, so every rank computes
 * the same split. order: scratch of nranks ints. */
void find_share_plan(uint64_t entries, const uint64_t *busy, uint64_t eval_ns, uint64_t evaluated, int nranks,
                     int *order, uint64_t *counts);
/* Joins a directory path relative to the root and an entry name ("" + "a" = "a", "a" + "b" = "a/b").
 * Returns the length, or -1 if it does not fit in `len` bytes. */
int find_join(char *out, size_t len, const char *rel, const char *name);

/* Parses the find command line: find_argv_normalize on a copy of argv, then the options tables, with the
 * one positional argument DIR (sets[0].cfg must be a struct find_cfg). */
int find_parse_argv(const struct iol_optset *sets, int nsets, int argc, char **argv, struct iol_err *err);

/* The options together, without touching storage: DIR given, -size parses. */
int find_validate(const struct find_cfg *cfg, int nranks, struct iol_err *err);
/* A few stat calls and no more: DIR is a readable directory, the -newer file exists, --matches can be
 * written outside DIR. */
int find_check_paths(const struct find_cfg *cfg, int nranks, struct iol_err *err);
/* The predicates as evaluated: parses -size, takes the -newer file's mtime. */
int find_preds_load(const struct find_cfg *cfg, struct find_preds *preds, struct iol_err *err);

/* Runs the walk on this rank (collective). Rank 0 takes the predicates and tells the others, writes the
 * JSON document (if info->json_path) and the text report (unless quiet). Returns an enum iol_status. */
int find_run(const struct find_cfg *cfg, struct iol_comm *comm, const struct iol_run_info *info);

#endif
