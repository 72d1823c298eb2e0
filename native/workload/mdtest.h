/* mdtest.h — the mdtest workload: metadata rates (create, stat, read, remove of files and directories in a
 * tree), with mdtest's flags and meanings. */
#ifndef IOL_MDTEST_H
#define IOL_MDTEST_H
#include <stdint.h>
#include "../common/options.h"
#include "../comm/comm.h"
#include "run_info.h"

struct mdtest_cfg {
    char api[IOL_STR_MAX];          /* -a */
    int64_t items;                  /* -n: items (files and/or dirs) per rank */
    int64_t items_per_dir;          /* -I */
    int64_t reps;                   /* -i */
    int unique_dir;                 /* -u */
    char dirs[IOL_STR_MAX];         /* -d: one or more directories separated by @ */
    int files_only;                 /* -F */
    int dirs_only;                  /* -D */
    int create;                     /* -C */
    int stat;                       /* -T */
    int read;                       /* -E */
    int remove;                     /* -r */
    uint64_t write_bytes;           /* -w */
    uint64_t read_bytes;            /* -e */
    int sync_file;                  /* -y */
    int sync_phase;                 /* -Y */
    int64_t depth;                  /* -z */
    int64_t branch;                 /* -b (0 = not given) */
    int leaf_only;                  /* -L */
    int64_t stride;                 /* -N */
    int64_t stonewall_s;            /* -W */
    char status_file[IOL_STR_MAX];  /* -x */
    int time_unique_dir;            /* -t */
    int64_t pre_delay_s;            /* -p */
    int random;                     /* -R */
    int verify_read;                /* -X / --verify-read */
    int64_t seed;                   /* -G */
    int print_rate_and_time;        /* -P */
    char debug_list[IOL_STR_MAX];   /* --debug-list: each rank writes the paths it touches to FILE.RANK */
    int rename;                     /* -U: the directory rename phase (on by default when no phase is chosen) */
    int verbose;                    /* -v (repeatable) */
    int64_t verbosity;              /* -V N: mdtest's verbosity value; -v adds to it */
    int make_node;                  /* -k: create files with mknod */
    int64_t no_barriers;            /* -B N: no barriers between phases when not 0 */
    int collective;                 /* -c: rank 0 creates and removes every rank's items */
    int shared_file;                /* -S: refused (see docs/mdtest.md) */
    int print_time;                 /* -Z: the summary shows times instead of rates */
    int64_t first_tasks;            /* -f: first number of tasks of the task range */
    int64_t last_tasks;             /* -l: last number of tasks (0 = all ranks, one test) */
    int64_t tasks_stride;           /* -s: step of the task range */
    char rank_csv[IOL_STR_MAX];     /* --saveRankPerformanceDetails: mdtest's per-rank CSV */
    char packet_type[IOL_STR_MAX];  /* --dataPacketType: mdtest 4's data packets */
    char cmd_before[IOL_STR_MAX];   /* --run-cmd-before-phase: run by every rank before each phase, untimed */
    char cmd_after[IOL_STR_MAX];    /* --run-cmd-after-phase: run by every rank after each phase, timed */
    int global_layout;              /* -g: refused (Lustre) */
    int refused_K, refused_M;       /* -K, -M: not mdtest 4 options; refused with the reason */
    int print_all_procs;            /* --print-all-procs */
    int rank_stats;                 /* --showRankStatistics */
    int warning_as_errors;          /* --warningAsErrors */
    int verify_write;               /* --verify-write: refused */
    int gpu_buffer;                 /* --allocateBufferOnGPU: refused */
    int64_t module_opt[7];          /* mdtest's POSIX and DUMMY module options: refused (mdtest_refused) */
};

extern const struct iol_option mdtest_options[];

/* Fills in mdtest's implied settings (no -C/-T/-E/-r means all phases; neither -F nor -D means both). */
void mdtest_normalize(struct mdtest_cfg *cfg);
/* Checks the options together before any I/O (IOL_ERR_USAGE naming the option). */
int mdtest_validate(const struct mdtest_cfg *cfg, int nranks, struct iol_err *err);
/* Checks the -d directories (exist, are directories, writable when creating) without I/O. */
int mdtest_check_paths(const struct mdtest_cfg *cfg, int nranks, struct iol_err *err);
/* A create run: its items (and tree directories) against the free inodes, and with -w their bytes against the
 * free space, of each -d directory's file system; not with a stonewall (-W). */
int mdtest_check_space(const struct mdtest_cfg *cfg, int nranks, struct iol_err *err);
/* Runs the workload on this rank (collective); returns an enum iol_status. */
int mdtest_run(const struct mdtest_cfg *cfg, struct iol_comm *comm, const struct iol_run_info *info);

#endif
