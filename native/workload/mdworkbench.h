/* mdworkbench.h — the md-workbench workload: md-workbench's (IOR 4) metadata benchmark with its flags and
 * meanings. Each rank owns D data sets (directories OUT/RANK_SET); a precreate phase fills each with P
 * objects; each benchmark iteration, per object and set, stats, reads and deletes the oldest object of the
 * set of the rank OFFSET*(set+1) below and creates a new one in the set of the rank OFFSET*(set+1) above (a
 * FIFO of P objects per set); a cleanup phase deletes the objects and the sets. Phases may run in separate
 * runs (-1, -2, -3), joined by the position file (--run-info-file), as md-workbench does. */
#ifndef IOL_MDWORKBENCH_H
#define IOL_MDWORKBENCH_H
#include <stdint.h>
#include "../common/options.h"
#include "../comm/comm.h"
#include "run_info.h"

struct mdwb_cfg {
    char api[IOL_STR_MAX];          /* -a */
    int64_t offset;                 /* -O: rank distance between writer and reader */
    int64_t obj_per_proc;           /* -I: objects per set and benchmark iteration */
    int64_t precreate;              /* -P: objects precreated per set */
    int64_t data_sets;              /* -D */
    int64_t seed;                   /* -G: -1 = from the clock (rank 0's, shared) */
    char dir[IOL_STR_MAX];          /* -o */
    int quiet_output;               /* -q */
    int64_t object_size;            /* -S */
    int64_t iterations;             /* -R */
    double waiting;                 /* -t: wait after each operation, relative to its time */
    int adaptive;                   /* -T */
    int phase_precreate;            /* -1 */
    int phase_benchmark;            /* -2 */
    int phase_cleanup;              /* -3 */
    int64_t stonewall_s;            /* -w */
    int wear_out;                   /* -W */
    int verify_read;                /* -X */
    char packet_type[IOL_STR_MAX];  /* --dataPacketType: accepted; iolens writes its own pattern */
    int gpu;                        /* --allocateBufferOnGPU: refused */
    int64_t start_item;             /* --start-item */
    int detailed;                   /* --print-detailed-stats */
    int read_only;                  /* --read-only */
    int ignore_precreate_errors;    /* --ignore-precreate-errors */
    int process_reports;            /* --process-reports */
    int verbosity;                  /* -v (repeatable) */
    char run_info_file[IOL_STR_MAX];/* --run-info-file */
    char latency[IOL_STR_MAX];      /* -L: refused */
    int latency_all;                /* --latency-all: refused */
};

extern const struct iol_option mdwb_options[];

/* No -1/-2/-3: all three phases. */
void mdwb_normalize(struct mdwb_cfg *cfg);
/* Checks the options together before any I/O (IOL_ERR_USAGE naming the option). */
int mdwb_validate(const struct mdwb_cfg *cfg, int nranks, struct iol_err *err);
/* The -o directory, the data sets of every rank (absent before a precreate, iolens's before anything else)
 * and the position file, without I/O. */
int mdwb_check_paths(const struct mdwb_cfg *cfg, int nranks, struct iol_err *err);
/* A precreate: its objects against the free inodes and space of -o's file system. */
int mdwb_check_space(const struct mdwb_cfg *cfg, int nranks, struct iol_err *err);
/* Reads "pos: N" from the position file. Returns 0, or -1 with err naming --run-info-file. */
int mdwb_read_position(const char *path, int64_t *pos, struct iol_err *err);
/* Runs the workload on this rank (collective); returns an enum iol_status. */
int mdwb_run(const struct mdwb_cfg *cfg, struct iol_comm *comm, const struct iol_run_info *info);

#endif
