/* ior_internal.h — what the ior workload's files share: the per-run context and the phase results. */
#ifndef IOL_IOR_INTERNAL_H
#define IOL_IOR_INTERNAL_H
#include <stdint.h>
#include <stdio.h>
#include "ior.h"
#include "../backend/backend.h"
#include "../common/hist.h"
#include "run_doc.h"
#include "../common/pattern.h"

struct ior_stonewall {
    int active;                 /* -D was given for this phase */
    int hit;                    /* some rank stopped at the deadline before finishing */
    uint64_t pairs_min, pairs_max;   /* transfers per rank when the deadline hit */
    uint64_t bytes_at_deadline;      /* all ranks */
    double time_s;                   /* latest rank's stop, from the first transfer start */
};

struct ior_verify {
    int active;
    uint64_t bytes_checked;
    uint64_t errors;                 /* bytes that differ */
    int64_t first_bad_offset;        /* -1 if none */
    int first_bad_rank;              /* -1 if none */
};

struct ior_cache {
    int o_direct;
    int is_read;
    int evict_requested;             /* reads: the policy was "evict" */
    int evicted;                     /* every rank dropped its file's pages */
    const char *note;                /* why the figure may be a cache figure; NULL if none */
    const char *via;                 /* how the pages were dropped: "backend", or "posix" (on the path, for a
                                      * backend whose handle has no descriptor: MPI-IO, HDF5) */
};

/* One (operation, iteration) as the whole job saw it. Rank 0 keeps these. */
struct ior_phase {
    const char *name;                /* "write" or "read" */
    int iteration;
    uint64_t bytes, ops;
    double open_s, xfer_s, close_s, total_s;
    double bw, ops_per_s;            /* bytes/s over total_s; ops/s over xfer_s */
    struct iol_hist hist;
    struct ior_stonewall stonewall;
    struct ior_cache cache;
    struct ior_verify verify;
    struct iol_backend_stats bstats; /* summed over ranks, the transfer step only (backends with stats) */
    uint64_t *rank_bytes, *rank_ops; /* per rank (rank 0 only) */
    double *rank_xfer_s;             /* each rank's transfer step (IOR's wr/rd time) */
    double *rank_total_s;            /* each rank's open start to close end (IOR's -O saveRankPerformanceDetailsCSV) */
    uint64_t *rank_pairs_at_deadline;   /* with -D: each rank's transfers when it stopped at the deadline */
    int cut_short;                   /* the run stopped inside this phase (interrupt, error): partial figures */
    uint64_t began_wall_ns;          /* wall clock when the phase began (IOR's "Commencing ..." time) */
};

/* Per-rank state of a run. No globals: everything lives here. */
struct ior_run {
    const struct ior_cfg *cfg;
    struct iol_comm *comm;
    const struct iol_run_info *info;
    const struct iol_backend *be;
    struct iol_bctx *bctx;
    int nranks;
    int lockstep;                    /* a shared file of a backend with collective calls: with -c (or -Y's
                                      * collective fsync, writing) the ranks stop their transfers together */
    FILE *text;                      /* rank 0's text report (NULL if none) */
    int tasks_per_node;
    int read_rank_shift;             /* -C: readers read the data of rank + shift */
    int check_rank_shift;            /* -C: the -W check pass reads the data of rank + shift */
    uint64_t xfers_per_block;
    int64_t segments;                /* -s, or what the existing file holds with -s -1 */
    uint64_t pairs_total;            /* transfers per rank per phase */
    int qd;
    void **bufs;
    struct iol_req *reqs;
    struct iol_req **done;
    struct iol_err err;              /* this rank's first error; after agree(), the job's first */
    int err_rank;
    const char *err_phase;
    char cur_path[IOL_STR_MAX + 64]; /* the file being accessed, for messages */
    struct iol_pattern *pats;        /* one per buffer: the write pattern (-l iolens) */
    struct iol_packet_buf *pkts;     /* one per buffer: IOR's data packet (the other -l types) */
    int packet;                      /* enum iol_packet */
    uint32_t sig;                    /* IOR's time stamp signature (-G as 32 bits) */
    uint64_t start_ns;               /* when the run started (-T) */
    void *hog;                       /* -M / memoryPerTask: memory held during the test */
    uint64_t hog_bytes;
    uint64_t warnings;               /* warnings said (stderr) */
#define IOR_WARN_KEPT 16
    char warn_text[IOR_WARN_KEPT][256];   /* rank 0: the first warnings, for the document */
    int nwarn_text;
    int phases_skipped;              /* -T: phases not started */
    int *read_shift_log;             /* rank 0, -Z: every rank's read shift in the first iteration */
    int read_shift_n;
    /* rank 0: results */
    struct ior_phase *phases;
    int nphases;
    double *remove_s;                /* per iteration: time to remove its files (IOR's "remove" line) */
    int nremoves;
    uint64_t written_pairs;          /* transfers every rank wrote in this run's last write phase */
    int written_pairs_valid;
    int files_may_exist;             /* a write phase started: there may be files to clean up */
    int verify_failed;               /* set on every rank when a check found bad bytes */
    struct iol_cleanup cleanup;      /* what the run removed of its own files (summed on rank 0) */
    /* progress (rank 0) */
    uint64_t next_progress_ns;
    char fs_type[32];
};

/* ior_files.c */
void ior_file_path(const struct ior_cfg *cfg, int rank, int iteration, char *out, size_t len);
void ior_split_path(const char *path, char *dir, size_t dlen, char *base, size_t blen);
/* Checks, without doing I/O, that ranks [lo, hi) can run: directories exist and are writable, files to read
 * exist, files to write are not someone else's, there is room, O_DIRECT alignment. */
/* Removes (only if iolens created it: listed in the ledger by its full name) the file of `rank` for `iteration`; with -u also its directory. */
int ior_remove_file(struct ior_run *r, int rank, int iteration, struct iol_err *err);   /* 1 = removed a file */
/* Rank 0: drops from the ledger the names of `iteration` (files and -u directories of every rank) that no
 * longer exist, once the ranks have removed them. */
int ior_forget_removed(const struct ior_cfg *cfg, int nranks, int iteration, struct iol_err *err);
/* --remove-only: removes every file (and -u directory) the ledger of -o's directory lists under -o's names,
 * whatever rank count, layout or iteration made it, counting what it removed and what was already gone (a
 * run cut short never made it); both leave the ledger. Rank 0 only. */
int ior_remove_listed(const struct ior_cfg *cfg, uint64_t *removed, uint64_t *missing, struct iol_err *err);
/* Prepares the target of a write: creates -u directories, records ownership, removes an old owned file. */
int ior_prepare_write(struct ior_run *r, int iteration, struct iol_err *err);

/* ior_order.c: the k-th transfer of a rank (sequential or -z random within each block). */
struct ior_order {
    uint64_t xfer, block, xfers_per_block;
    int64_t nranks;
    int fpp, random;                 /* random: 0 sequential, 1 within each block, 2+ across all the rank's blocks */
    uint64_t seed;
    int64_t rank;
    uint64_t total;                  /* transfers of the rank */
    /* the permutation (cycle-walking a keyed bijection on 2^bits values): of a block, or of everything */
    unsigned bits;
    uint64_t perm_key;
    uint64_t seg, j, k;              /* position of the next transfer: segment, index in block, index overall */
    uint64_t wrap;                   /* after this many transfers the order starts again (-O minTimeDuration) */
    uint64_t done;                   /* transfers handed out since the last wrap */
};
void ior_order_init(struct ior_order *o, const struct ior_cfg *cfg, int nranks, int rank, uint64_t total,
                    uint64_t start_pair);
uint64_t ior_order_next(struct ior_order *o);   /* file offset of the next transfer */
/* Starts the order again from transfer 0 after every `pass` transfers (pass <= total). */
void ior_order_wrap(struct ior_order *o, uint64_t pass);

/* ior_report.c: the IOR-like text report (printed as the run goes) and the JSON members of the document */
void ior_report_text_begin(FILE *fp, const struct ior_run *r);
void ior_report_text_phase(FILE *fp, const struct ior_run *r, const struct ior_phase *ph);
void ior_report_text_end(FILE *fp, const struct ior_run *r);
void ior_report_json(struct iol_json *j, const struct ior_run *r);
/* Summary of one operation over all iterations. */
struct ior_summary {
    const char *name;
    int iterations;
    double bw_max, bw_min, bw_mean, bw_stddev;
    double ops_max, ops_min, ops_mean, ops_stddev;
    double time_mean;
    uint64_t bytes;
};
int ior_summarize(const struct ior_run *r, const char *name, struct ior_summary *s);

#endif
