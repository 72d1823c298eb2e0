/* fio.h — the fio-class workload: random and sequential I/O described the way fio describes it (job files
 * with [global] and job sections, or --name=... --rw=... on the command line), run on every rank with each
 * job's numjobs instances as threads, over any backend. */
#ifndef IOL_FIO_H
#define IOL_FIO_H
#include <stdint.h>
#include "../comm/comm.h"
#include "../common/options.h"
#include "run_info.h"

#define FIO_MAX_JOBS 64
#define FIO_NAME_MAX 256

/* One job's options, as fio names them. Strings keep what the user wrote; fio_plan.c turns them into the
 * numbers the run uses. Sentinels (-1) mark "not given" where fio derives a default from other options. */
struct fio_job_opts {
    char name[FIO_NAME_MAX];
    char description[FIO_NAME_MAX];
    char rw[FIO_NAME_MAX];              /* read, write, randread, randwrite, rw/readwrite, randrw (":N" refused) */
    int64_t rwmixread;                  /* -1 = from rwmixwrite, else 50 */
    int64_t rwmixwrite;                 /* -1 = not given */
    uint64_t bs;
    char bssplit[IOL_STR_MAX];
    uint64_t blockalign;                /* 0 = the smallest block size */
    uint64_t size;                      /* bytes per instance over all its files; 0 = from filesize or the files */
    uint64_t filesize;                  /* 0 = size / nrfiles */
    int64_t nrfiles;
    char filename[IOL_STR_MAX];         /* ':'-separated; "" = <name>.<instance>.<file> in directory */
    char directory[IOL_STR_MAX];
    uint64_t offset;
    char ioengine[FIO_NAME_MAX];
    int64_t iodepth;
    int64_t iodepth_batch_submit;       /* default 1, as fio; 0 = every free slot at once */
    int64_t iodepth_batch_complete_min;
    int64_t iodepth_batch_complete_max; /* 0 = iodepth */
    int64_t numjobs;
    int thread;
    int direct;
    int64_t buffered;                   /* -1 = not given (then !direct) */
    char sync[FIO_NAME_MAX];            /* 0/none, 1/sync, dsync */
    int64_t fsync;                      /* fsync after every N writes */
    int64_t fdatasync;
    int end_fsync;
    int time_based;
    char runtime[FIO_NAME_MAX];         /* fio time: seconds unless suffixed (us, ms, s, m, h, d) */
    char ramp_time[FIO_NAME_MAX];
    int64_t loops;
    char random_distribution[FIO_NAME_MAX];
    int norandommap;
    int randrepeat;
    int64_t randseed;                   /* -1 = fio's fixed seed with randrepeat=1, the clock otherwise */
    int64_t invalidate;                 /* -1 = not given (fio's default 1) */
    char file_service_type[FIO_NAME_MAX]; /* fio's: roundrobin (default), sequential, random, each with :N */
    int create_on_open;                 /* fio's: no layout; files are created by the job's own open */
    int pre_read;                       /* fio's: read the files into memory before the job (= cache=hot) */
    char fallocate[FIO_NAME_MAX];       /* fio's: native (default), posix, keep, truncate, none (0), 1 (posix) */
    char verify[FIO_NAME_MAX];
    int do_verify;
    int group_reporting;
    int stonewall;
    int fixedbufs;
    int registerfiles;
    int sqthread_poll;
    int hipri;
    char cache[FIO_NAME_MAX];           /* iolens: cold|hot|asis; "" = from invalidate */
    char fadvise_hint[FIO_NAME_MAX];    /* fio's: 1 (by the pattern), 0/none, random, sequential, normal */
    char null_delay[FIO_NAME_MAX];      /* iolens: null engine completion delays "LO-HI" (ns, evenly spread) */
    int allow_overwrite;                /* iolens: may write into existing files iolens did not create */
    char write_iolog[IOL_STR_MAX];      /* every I/O issued, in fio's iolog version 2 format */
};

struct fio_cfg {
    /* First, so that the job option table's offsets fit the config as a whole (the engine fills it with the
     * defaults and --help lists it): the command line's options before the first --name. */
    struct fio_job_opts base;
    int njobs;
    struct fio_job_opts jobs[FIO_MAX_JOBS];
    char jobfiles[IOL_STR_MAX];         /* the job files read, ' '-separated, for the document */
    /* --client-index=K (iolens fio --client, docs/fio.md "Multi-client mode"): this engine runs fio client
     * K alone, and its instances are numbered, and its files named, as rank K's would be in one run over
     * every client, so that clients sharing a directory (or a host) never use each other's files. */
    int client_index;
};

/* The option table of a job (fio's names). */
extern const struct iol_option fio_job_options[];

/* Reads the command line: job files (positional), fio options (--key=value; options before the first
 * --name apply to every job), and the engine's options (sets[1..]). sets[0].cfg is the struct fio_cfg. */
int fio_parse_argv(const struct iol_optset *sets, int nsets, int argc, char **argv, struct iol_err *err);

void fio_normalize(struct fio_cfg *cfg);
/* Checks every job (values, combinations, engine availability) without touching storage. */
int fio_validate(const struct fio_cfg *cfg, int nranks, struct iol_err *err);
/* Checks, without I/O, that directories exist and files can be used (ownership for writes). */
int fio_check_paths(const struct fio_cfg *cfg, int nranks, struct iol_err *err);
/* What the jobs will write or lay out (every file of every instance on every rank, the part beyond what an
 * existing file already holds) and the files they create, against each file system's free space and inodes. */
int fio_check_space(const struct fio_cfg *cfg, int nranks, struct iol_err *err);
/* Runs the job list on this rank (collective). */
int fio_run(const struct fio_cfg *cfg, struct iol_comm *comm, const struct iol_run_info *info);

#endif
