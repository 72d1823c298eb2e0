/* fio_internal.h — what the fio workload's files share: a job's plan (its options turned into the numbers
 * the run uses), an instance's state and results. */
#ifndef IOL_FIO_INTERNAL_H
#define IOL_FIO_INTERNAL_H
#include <stdint.h>
#include <sys/resource.h>

#include "../backend/backend.h"
#include "../common/distrib.h"
#include "../common/hist.h"
#include "fio.h"

#define FIO_BSSPLIT_MAX 64
#define FIO_FILES_MAX 1024
#define FIO_RANDSEED_DEFAULT 0x89   /* fio's seed when randrepeat=1 and no randseed */

enum fio_cache { FIO_CACHE_COLD, FIO_CACHE_HOT, FIO_CACHE_ASIS };
enum fio_falloc { FIO_FALLOC_NONE, FIO_FALLOC_NATIVE, FIO_FALLOC_POSIX, FIO_FALLOC_KEEP, FIO_FALLOC_TRUNCATE };
enum fio_fservice { FIO_FS_ROUNDROBIN, FIO_FS_SEQUENTIAL, FIO_FS_RANDOM };
enum fio_dir { FIO_DIR_READ, FIO_DIR_WRITE, FIO_NDIR };

struct fio_plan {
    const struct fio_job_opts *o;
    int index;                          /* in the job list */
    int group;
    const struct iol_backend *be;
    int async;                          /* the backend completes requests after submit returns */
    int random, has_read, has_write;
    int rwmixread;                      /* percent of reads (100 / 0 for pure jobs) */
    int nbs;                            /* block sizes: 1 unless bssplit */
    uint64_t bs[FIO_BSSPLIT_MAX];
    unsigned bs_cum[FIO_BSSPLIT_MAX];   /* cumulative percent, the last one 100 */
    uint64_t bs_min, bs_max, align;
    uint64_t filesize;                  /* the I/O region of each file (from offset) */
    uint64_t size;                      /* the region of an instance = filesize * nfiles */
    uint64_t io_size;                   /* bytes of I/O per loop per instance: size=, at most the region */
    int nfiles;
    enum fio_fservice fservice;         /* file_service_type */
    uint64_t fservice_n;                /* I/Os on a file before switching (its ":N", default 1) */
    int shared_files;                   /* filename= given: every instance uses the same files */
    uint64_t runtime_ns, ramp_ns;
    enum iol_dist_kind dist;
    double dist_param;
    int verify;                         /* 0 none, 1 crc32c */
    enum fio_cache cache;
    enum fio_falloc fallocate;          /* how a file being laid out is preallocated (fio's fallocate=) */
    int fadvise;                        /* the posix_fadvise advice given at open, -1 = none (fadvise_hint) */
    int open_flags;                     /* IOL_O_DIRECT, IOL_O_SYNC, IOL_O_DSYNC */
    uint64_t seed;                      /* randseed, or fio's fixed seed */
    int seed_from_clock;                /* randrepeat=0 without randseed: every run draws its own */
    int batch_submit, complete_min, complete_max;
    uint64_t null_lo_ns, null_hi_ns;
    struct iol_backend_opts bopts;
};

/* Builds the plan of job `index` (no I/O; stats existing files when their size decides the job's size). */
int fio_plan_build(const struct fio_cfg *cfg, int index, struct fio_plan *p, struct iol_err *err);
/* fio's time values: a number of seconds, or with a suffix us/usec, ms/msec, s/sec, m/min, h, d. */
int fio_parse_time_ns(const char *s, uint64_t *ns, const char *what, struct iol_err *err);
/* The path of file k of an instance (global instance number) of a job. */
void fio_file_path(const struct fio_plan *p, uint64_t instance, int k, char *out, size_t cap);
/* The file name alone (for the ledger) and its directory. */
void fio_file_dir_name(const char *path, char *dir, size_t dcap, const char **name);

/* Coarse per-second latency buckets: the fine histogram's buckets in groups of 8 (16 per power of two). */
#define FIO_SEC_SHIFT 3
#define FIO_SEC_NBUCKETS ((IOL_HIST_NBUCKETS + (1u << FIO_SEC_SHIFT) - 1) >> FIO_SEC_SHIFT)

struct fio_sec {                         /* one second of one direction */
    uint64_t ios, bytes;
    uint64_t max_ns;
    uint32_t buckets[FIO_SEC_NBUCKETS];
};

struct fio_dir_stats {
    uint64_t ios, bytes;
    struct iol_hist lat, clat, slat;
};

/* What one instance (a thread) did. */
struct fio_inst {
    const struct fio_plan *plan;
    uint64_t instance;                  /* global instance number: rank * numjobs + local */
    int rank;
    struct fio_dir_stats dir[FIO_NDIR];
    struct iol_hist sync_lat;
    uint64_t sync_ios;
    uint64_t t_start, t_end;            /* first issue after the ramp, last completion (local clock) */
    uint64_t verify_blocks, verify_errors, verify_first_bad;
    char verify_bad_file[IOL_STR_MAX];
    struct rusage ru;                   /* the thread's own CPU over the run */
    struct iol_backend_stats bstats;
    int evicted;                        /* cold cache really dropped pages (0 on tmpfs) */
    uint64_t storage_read_bytes;        /* what its reads made the kernel fetch from the storage, after the ramp */
    int storage_known;                  /* the kernel said (task I/O accounting) */
    unsigned char *created;             /* [nfiles]: this run made file k (own files, not shared ones) */
    /* per second after the ramp: secs[s * FIO_NDIR + d] */
    struct fio_sec *secs;
    uint64_t nsecs, cap_secs;
    struct iol_err err;
};

/* One job's clock points, on this rank's clock (each job of a group has its own ramp and runtime). */
struct fio_times {
    uint64_t count_from_ns;             /* the group's start + the job's ramp: nothing before counts */
    uint64_t deadline_ns;               /* count_from + runtime; UINT64_MAX = none */
};

/* Blocks until the group releases its instances; returns the job's clock points, or NULL when the group
 * must not run. */
typedef const struct fio_times *(*fio_start_fn)(void *arg);
/* Runs one instance: allocates and opens everything, calls start (always, once, even after an error, so
 * that the group's gate counts it), then does its I/O, and closes. The thread's CPU from its end of ramp to
 * the end of its I/O goes into in->ru. */
int fio_instance_run(struct fio_inst *in, const char *const *paths, fio_start_fn start, void *arg);
/* Before the start: with `lay`, creates the files (recorded in the ledger) and, for a job that reads, writes
 * them up to the end of the region; with `cache`, puts their pages in the job's cache state. *evicted is
 * cleared when cold mode could not drop pages (tmpfs, the null engine). */
int fio_prepare_files(const struct fio_plan *p, const char *const *paths, int lay, int cache, int *evicted,
                      unsigned char *created, struct iol_err *err);
/* created[k] (from fio_prepare_files, may be NULL): file k of `instance` was made by this run. Removes those
 * (if the ledger lists them) and their ledger names, counting in *removed: a failed or interrupted run takes
 * away what it made; files that were there before stay. */
int fio_remove_created(const struct fio_plan *p, uint64_t instance, const unsigned char *created, uint64_t *removed,
                       struct iol_err *err);

#endif
