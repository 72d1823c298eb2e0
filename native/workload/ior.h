/* ior.h — the IOR workload: bulk data transfers to one shared file (N-1) or one file per rank (N-N),
 * with IOR's flags and meanings. */
#ifndef IOL_IOR_H
#define IOL_IOR_H
#include <stdint.h>
#include "../common/options.h"
#include "../common/hist.h"
#include "../comm/comm.h"
#include "run_info.h"

struct ior_cfg {
    char api[IOL_STR_MAX];          /* -a */
    int fpp;                        /* -F */
    uint64_t xfer;                  /* -t */
    uint64_t block;                 /* -b */
    int64_t segments;               /* -s */
    int64_t reps;                   /* -i */
    int write;                      /* -w */
    int read;                       /* -r */
    int check_write;                /* -W */
    int check_read;                 /* -R */
    int64_t seed;                   /* -G; -1 = derive from the start time (as IOR's timestamp signature) */
    int keep;                       /* -k */
    int fsync;                      /* -e: fsync on close after write */
    int fsync_per_write;            /* -Y */
    int random;                     /* -z */
    int reorder;                    /* -C */
    int64_t task_offset;            /* -Q */
    int intra_barriers;             /* -g */
    int64_t deadline_s;             /* -D: stonewall seconds, 0 = off */
    double delay_s;                 /* -d: seconds before each write and read phase (fractions accepted) */
    int multi_file;                 /* -m */
    int unique_dir;                 /* -u */
    char path[IOL_STR_MAX];         /* -o */
    int use_existing;               /* -E */
    int wear_out;                   /* -O stoneWallingWearOut=1 */
    char status_file[IOL_STR_MAX];  /* -O stoneWallingStatusFile=F */
    int64_t wear_out_iterations;    /* -O stoneWallingWearOutIterations=N */
    int direct;                     /* --posix.odirect / --direct */
    int64_t queue_depth;            /* --queue-depth: requests in flight per rank */
    int64_t submit_batch;           /* --submit-batch: requests per submit call (0: all that are free) */
    char summary_format[IOL_STR_MAX]; /* -O summaryFormat=default|JSON|CSV (written by iolens ior) */
    char summary_file[IOL_STR_MAX];   /* -O summaryFile=F */
    char rank_csv[IOL_STR_MAX];       /* -O saveRankPerformanceDetailsCSV=F (written by iolens ior) */
    int summary_always;               /* -O summaryalways=1: the summary after each test (iolens ior, -v) */
    char debug_note[IOL_STR_MAX];     /* -O debug=S: shown as IOR's "*** DEBUG MODE ***" banner */
    char platform[IOL_STR_MAX];       /* -O platform=S: accepted; IOR replaces it with host(OS), so does iolens */
    int keep_cache;                 /* --keep-cache: do not evict before reading */
    int64_t tasks_per_node;         /* --tasks-per-node: override the count used by -C (0 = measured) */
    int remove_only;                /* --remove-only: remove the files a -k run left, nothing else */
    char packet[IOL_STR_MAX];       /* -l: IOR's dataPacketType (timestamp offset incompressible random) or iolens */
    int64_t num_tasks;              /* -N: ranks taking part (-1 = all) */
    int64_t max_time_min;           /* -T: minutes after which no phase starts */
    int reorder_random;             /* -Z */
    int64_t reorder_random_seed;    /* -X */
    int single_xfer;                /* -x */
    int keep_with_error;            /* -K */
    int64_t outlier_s;              /* -j */
    char memory_per_node[IOL_STR_MAX]; /* -M: "2g" or "75%" */
    uint64_t memory_per_task;       /* -O memoryPerTask */
    int dual_mount;                 /* -y */
    int dry_run;                    /* --dryRun */
    uint64_t random_prefill;        /* --randomPrefill */
    int64_t random_offset_seed;     /* --random-offset-seed (-1 = -G) */
    int warning_as_errors;          /* --warningAsErrors */
    int64_t min_time_s;             /* -O minTimeDuration */
    int64_t inter_io_delay_us;      /* -O interIODelay */
    int64_t num_nodes;              /* -O numNodes (0 = measured) */
    char script_file[IOL_STR_MAX];  /* -f: refused here, run by the front end */
    int64_t dummy_delay[4];         /* --dummy.delay-*: refused (accepted names, so the message says why) */
    int dummy_delay_rank0;
    int rangelocks;                 /* --posix.rangelocks */
    int64_t gpu;                    /* -O allocateBufferOnGPU / GPUid / GPUDirect: refused when set */
    int verbose;                    /* -v (repeatable): IOR's verbosity of the classic text (iolens ior) */
    int64_t ref_num;                /* -A: IOR's reference number, echoed in the summary (RefNum) */
    int mmap_madv_dont_need;        /* --mmap.madv_dont_need (-a MMAP) */
    int mmap_madv_pattern;          /* --mmap.madv_pattern (-a MMAP) */
    uint64_t hdf5_alignment;        /* -J, --hdf5.setAlignment (-a HDF5) */
    int hdf5_no_fill;               /* --hdf5.noFill */
    int hdf5_collective_metadata;   /* --hdf5.collectiveMetadata */
    int hdf5_individual_datasets;   /* --hdf5.individualDataSets: refused */
    /* backends over an MPI library (backend.h: iol_mpi_opts) */
    int collective;                 /* -c, -O collective=1: collective transfers */
    int file_view;                  /* -V, --mpiio.useFileView */
    int preallocate;                /* -p, --mpiio.preallocate */
    int strided_datatype;           /* --mpiio.useStridedDatatype */
    char hints_file[IOL_STR_MAX];   /* -U, --mpiio.hintsFileName */
    int show_hints;                 /* -H, --mpiio.showHints */
};

/* The ranks -N asks for (n when not given; may be more than n: the caller then runs n, with a warning). */
int ior_participants(const void *cfg, int n);

extern const struct iol_option ior_options[];

/* Fills in IOR's implied settings (no -w/-r means both; -R means read). Call before ior_validate. */
void ior_normalize(struct ior_cfg *cfg);

/* Checks the options together (as IOR's CheckRunSettings does) before anything touches storage.
 * Fills err with IOL_ERR_USAGE naming the option. `nranks` is the number of ranks that will run. */
int ior_validate(const struct ior_cfg *cfg, int nranks, struct iol_err *err);

/* Checks, without I/O, that ranks [lo, hi) of nranks can run against the file system (see ior_files.c). */
int ior_check_paths(const struct ior_cfg *cfg, int nranks, int lo, int hi, struct iol_err *err);
/* Room for what the run writes (-b x -s x ranks, x iterations with -m) in the free space of -o's directory;
 * not with a stonewall (-D), where the deadline ends the write. */
int ior_check_space(const struct ior_cfg *cfg, int nranks, struct iol_err *err);

/* The option that makes the run need MPI ranks ("-a MPIIO"), written into buf; NULL when forked local ranks
 * can run it. */
const char *ior_needs_mpi(const struct ior_cfg *cfg, char *buf, size_t len);

/* Runs the workload on this rank (collective). Rank 0 writes the JSON document to json_path (if set) and the
 * human report to stdout (unless quiet). Returns an enum iol_status. */
int ior_run(const struct ior_cfg *cfg, struct iol_comm *comm, const struct iol_run_info *info);

#endif
