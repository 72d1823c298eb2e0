/* mdtest_internal.h — what the mdtest workload's files share. */
#ifndef IOL_MDTEST_INTERNAL_H
#define IOL_MDTEST_INTERNAL_H
#include <stdint.h>
#include <stdio.h>

#include "../backend/backend.h"
#include "../common/hist.h"
#include "../common/json.h"
#include "../common/pattern.h"
#include "mdtest.h"
#include "run_doc.h"

#define MDTEST_MAX_PATHS 64

/* The tree each rank works in, after mdtest's rules for -n, -I, -z, -b, -L. */
struct mdtest_geometry {
    uint64_t branch;
    int depth;
    uint64_t dirs_in_tree;      /* directories of one tree, root included */
    uint64_t leaves;
    uint64_t first_item_dir;    /* BFS index of the first directory holding items (leaves with -L) */
    uint64_t items_per_dir;
    uint64_t items;             /* per rank per iteration */
    uint64_t loops;             /* test directories per iteration (-I splitting) */
    uint64_t items_per_loop;
};
int mdtest_geometry(const struct mdtest_cfg *cfg, struct mdtest_geometry *g, struct iol_err *err);
/* The items per rank a stat/read/remove run works on: the -x status file's count (checked against the
 * geometry), else all of them. */
int mdtest_status_count(const struct mdtest_cfg *cfg, const struct mdtest_geometry *g, uint64_t *count,
                        struct iol_err *err);

/* The tests of a task range (-f -l -s): their count, and their sizes into tasks (room for nranks) unless
 * NULL; -1 with err on bad input. */
int mdtest_task_range(const struct mdtest_cfg *cfg, int nranks, int *tasks, struct iol_err *err);

struct mdtest_paths {
    int count;
    char dir[MDTEST_MAX_PATHS][IOL_STR_MAX];
};
int mdtest_split_dirs(const char *spec, struct mdtest_paths *p, struct iol_err *err);

/* ---- names (mdtest_names.c): mdtest's layout, built without snprintf on the per-item path ------------- */
enum mdtest_kind { MDTEST_FILE, MDTEST_DIR };

/* "DIR/test-dir.ITER-LOOP" */
int mdtest_testdir(char *buf, size_t len, const char *dir, int iteration, uint64_t loop);
/* The path of tree directory k (BFS index) under a test directory: ".../mdtest_tree[.OWNER].0/.../mdtest_tree[.OWNER].k".
 * owner < 0 names the shared tree. Returns the length, or -1 if it does not fit. */
int mdtest_tree_dir(char *buf, size_t len, const char *testdir, int owner, uint64_t k, uint64_t branch);
/* Appends "/file.mdtest.OWNER.NUM" (or dir.; "shared" for owner < 0, -S) at buf+at; returns the new length or
 * -1. */
int mdtest_item_name(char *buf, size_t len, int at, enum mdtest_kind kind, int owner, uint64_t num);

/* ---- results ------------------------------------------------------------------------------------------ */
enum mdtest_phase_id {
    MD_TREE_CREATE, MD_DIR_CREATE, MD_DIR_STAT, MD_DIR_REMOVE,
    MD_FILE_CREATE, MD_FILE_STAT, MD_FILE_READ, MD_FILE_REMOVE, MD_TREE_REMOVE,
    MD_DIR_RENAME,               /* last, so the numbers of the others stay as documents have them */
    MD_NPHASES
};
extern const char *const mdtest_phase_names[MD_NPHASES];     /* "tree-create", ... */
extern const char *const mdtest_phase_titles[MD_NPHASES];    /* "Tree creation", ... as mdtest prints */

struct mdtest_phase {
    enum mdtest_phase_id id;
    int iteration;
    int tasks;                           /* ranks of the test it belongs to (-f/-l/-s task ranges) */
    uint64_t items;
    double time_s, rate;                 /* barrier to barrier (mdtest) */
    double io500_time_s, io500_rate;     /* first start to last end (IO500) */
    int owner_shift;
    struct iol_hist hist;
    uint64_t *rank_items;
    double *rank_time_s;
    int stonewall;                       /* the stonewall figures below are set */
    int sw_hit;
    uint64_t sw_min, sw_max, sw_sum;
    double sw_time_s;
    int verify;                          /* the verification figures below are set */
    uint64_t v_files, v_bytes, v_errors;
    char v_first_bad[IOL_STR_MAX];
    int cut_short;                       /* the run stopped inside this phase: partial figures */
    uint64_t missing;                    /* remove phases: items already gone, skipped (a run cut short) */
};

struct mdtest_run {
    const struct mdtest_cfg *cfg;
    struct iol_comm *comm;
    const struct iol_run_info *info;
    const struct iol_backend *be;
    struct iol_bctx *bctx;
    struct mdtest_geometry geo;
    struct mdtest_paths paths;
    int nranks;                          /* ranks of the current test (a task range runs on the first ones) */
    int active;                          /* this rank takes part in the current test */
    int *tests, ntests;
    int64_t stride;                      /* -N as used: times the ranks per node on several nodes (mdtest 4) */                  /* the tests' numbers of tasks (-f/-l/-s; one test of every rank) */
    uint64_t items;                      /* items per rank this run operates on (stonewall/status file may cut) */
    void *buf;                           /* write/read buffer, 8-byte padded */
    void *vbuf;                          /* --verify-write: where a written file is read back */
    size_t buf_len;
    struct iol_req req;
    void *rbuf;                          /* what a read (-e) reads */
    void *ebuf;                          /* what it should read: the packet (ebuf_owner's) */
    enum iol_packet packet;              /* --dataPacketType (mdtest's default: timestamp) */
    struct iol_packet_buf pk, epk;       /* buf's packet (for pat_owner) and ebuf's (for ebuf_owner) */
    int pat_owner, ebuf_owner;
    struct iol_req *done[1];
    FILE *debug;
    struct iol_err err;
    int err_rank;
    const char *err_phase;
    uint64_t next_progress_ns;
    char fs_type[32];
    /* the file create stonewall, as rank 0 saw it */
    int sw_hit;
    uint64_t sw_min, sw_max, sw_sum;
    double sw_time_s;
    struct iol_cleanup cleanup;          /* leftovers removed by the sweep (summed on rank 0) */
    int made_testdirs;                   /* this run created test directories (a create run got that far) */
    /* rank 0 */
    struct mdtest_phase *phases;
    int nphases, max_phases;
};

/* mdtest_sweep.c: removes mdtest's names (items, tree directories) under dir, recursively, for what a run cut
 * short left; counts them in out->removed and anything else (left in place) in out->left. nshare > 1: this
 * rank (me) removes only the items whose number N has N mod nshare == me, and no tree directory, so ranks
 * share the work; a final pass with nshare 1 removes the rest. */
int mdtest_sweep(struct mdtest_run *r, const char *dir, int nshare, int me, struct iol_cleanup *out);

/* mdtest_report.c */
void mdtest_report_text_begin(FILE *fp, const struct mdtest_run *r);
void mdtest_report_text_test(FILE *fp, const struct mdtest_run *r);   /* "N tasks, M files" of each test */
void mdtest_report_text_end(FILE *fp, const struct mdtest_run *r);
void mdtest_report_json(struct iol_json *j, const struct mdtest_run *r);
/* --saveRankPerformanceDetails: mdtest 4's CSV (header, an "all" row and a row per rank and iteration, per
 * test of a task range); rank 0, at the end of the run. */
int mdtest_rank_csv(const struct mdtest_run *r, struct iol_err *err);

#endif
