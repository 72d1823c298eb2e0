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
    int64_t delay_s;                /* -d: seconds between iterations */
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
    char summary_format[IOL_STR_MAX]; /* -O summaryFormat=default|JSON */
    char summary_file[IOL_STR_MAX];   /* -O summaryFile=F */
    int keep_cache;                 /* --keep-cache: do not evict before reading */
    int64_t tasks_per_node;         /* --tasks-per-node: override the count used by -C (0 = measured) */
    int remove_only;                /* --remove-only: remove the files a -k run left, nothing else */
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
