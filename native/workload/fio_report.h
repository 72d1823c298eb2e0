/* fio_report.h — a fio run's state and results: what each rank keeps, how the ranks' figures are combined
 * (fio_reduce.c), and how rank 0 writes them (fio_report.c: the JSON document and the fio-like text). */
#ifndef IOL_FIO_REPORT_H
#define IOL_FIO_REPORT_H
#include <stdio.h>

#include "../common/json.h"
#include "fio_internal.h"
#include "run_doc.h"
#include "run_info.h"

/* fio's default percentile list (its percentile_list option), which fio's JSON gives for every entry. */
#define FIO_NPCT 17
extern const double fio_pct_points[FIO_NPCT];

/* fio's latency distribution (latency_ns/us/ms): the upper edges of its buckets in the unit of a value's own
 * magnitude, then ">=2000" ms. Slots 0-9 ns, 10-19 us, 20-30 ms, 31 the rest. */
#define FIO_LATDIST_N 32
extern const unsigned fio_latdist_edges[11];

/* A histogram summed up into what fio reports of it, fixed-size (no buckets). */
struct fio_lat_summary {
    uint64_t count, min, max;
    double mean, stddev;
    uint64_t pct[FIO_NPCT];
};

/* One-second samples of a rate: min, max, mean, sample standard deviation, how many. */
struct fio_samples {
    double min, max, mean, stddev;
    uint64_t n;
};

/* One instance's figures, fixed-size so that ranks can gather them: everything fio's JSON gives per thread. */
struct fio_inst_summary {
    int64_t rank;
    uint64_t instance;
    uint64_t ios[FIO_NDIR], bytes[FIO_NDIR];
    struct fio_lat_summary lat[FIO_NDIR], clat[FIO_NDIR], slat[FIO_NDIR], sync;
    struct fio_samples bw_kib[FIO_NDIR], iops[FIO_NDIR];
    uint64_t sync_ios, ctx;
    uint64_t clat_dist[FIO_LATDIST_N];   /* completions of both directions by fio_latdist slot */
    double runtime_s, usr_s, sys_s;
};

void fio_lat_summarize(const struct iol_hist *h, struct fio_lat_summary *s);
/* The fio latency-distribution slot of a latency. */
unsigned fio_latdist_slot(uint64_t ns);

/* Per second and direction in the combined record: ios, bytes, max, then the coarse buckets. */
#define FIO_SEC_WORDS (3 + FIO_SEC_NBUCKETS)

struct fio_job_result {
    struct fio_inst *inst;              /* this rank's numjobs instances */
    int evicted_local;                  /* shared files: this rank's cold cache really dropped pages */
    unsigned char *shared_created;      /* [nfiles] shared files rank 0 made in this run */
    char first_file[IOL_STR_MAX + 512];
    char fs_type[64];
    /* combined over every rank (valid on rank 0 after fio_reduce_group) */
    int done;
    struct fio_dir_stats dir[FIO_NDIR];
    struct iol_hist sync_lat;
    uint64_t sync_ios;
    uint64_t t_start, t_end;            /* aligned clock */
    double usr_s, sys_s;
    uint64_t ctx;
    uint64_t verify_blocks, verify_errors, verify_first_bad;
    char verify_bad_file[IOL_STR_MAX];
    int evicted;
    uint64_t storage_read_bytes;        /* read bytes the kernel fetched from the storage (instances that know) */
    uint64_t storage_unknown;           /* instances whose kernel did not say (no task I/O accounting) */
    uint64_t waits;                     /* voluntary context switches of the instances (after the ramp) */
    struct iol_backend_stats bstats;
    uint64_t nsecs;
    uint64_t *secs;                     /* [nsecs][FIO_NDIR][FIO_SEC_WORDS] */
    struct fio_inst_summary *summ;      /* numjobs × ranks, rank 0 only */
    int nsumm;
};

struct fio_group_result {
    struct {                            /* this rank */
        double self_cpu_s, busy_s, steal_s;
        double threads_cpu_s;           /* the instance threads' own CPU within the window */
        double window_s;                /* between the two /proc/stat readings */
        uint64_t t_start, t_end;
    } local;
    int done;
    int cut_short;                      /* interrupted: the figures cover what was done until the stop */
    uint64_t t_start, t_end;            /* aligned clock: the first job's end of ramp, the last job's end */
    double elapsed_s;
    double process_cpu_s, kernel_workers_s;
    int host_cpus;
    double host_busy_s, host_steal_s, host_others_s;
    double host_window_s;               /* how long the host's CPU time was counted (rank 0) */
};

struct fio_run {
    const struct fio_cfg *cfg;
    struct iol_comm *comm;
    const struct iol_run_info *info;
    struct fio_plan plans[FIO_MAX_JOBS];
    struct fio_job_result jobs[FIO_MAX_JOBS];
    struct fio_group_result *groups;
    int ngroups, groups_run;
    struct iol_err err;
    int err_rank;
    const char *err_phase;
    struct iol_cleanup cleanup;         /* the files a failed or interrupted run made and removed */
};

/* Collective: combines the figures of every instance of group gid's jobs on every rank (rank 0 keeps them). */
int fio_reduce_group(struct fio_run *r, int gid);
void fio_run_free(struct fio_run *r);

void fio_report_json(struct iol_json *j, const struct fio_run *r);
void fio_report_text(FILE *fp, const struct fio_run *r);

#endif
