/* backend.h — what a storage backend must do.
 *
 * Data transfers are asynchronous: the workload submits requests (up to the queue depth it asked for)
 * and reaps completions. A synchronous backend (posix) does each I/O inside submit and hands the
 * completed requests back from reap, so the workload code is the same for every backend, and io_uring or
 * libaio fit without changing it. Each rank opens its own context; contexts are not shared between threads.
 * Every call returns 0 (or a count) on success and -1 with err filled on failure; a failed *transfer* is
 * not a call failure: it comes back from reap with req->error set.
 *
 * Backends over an MPI library (MPI-IO, HDF5, PnetCDF; needs_mpi below) run only on MPI ranks: their context
 * gets the job's communicator and the library's settings in iol_backend_opts.mpi. They are synchronous
 * (completes_in_submit), and two of their calls are collective over the ranks that share a file (all ranks of
 * a shared file, or each rank alone with file_per_proc, over MPI_COMM_SELF):
 *  - open and close (collective_open): every rank calls them at the same point of the run; nobody creates the
 *    file first. A failed open is reported by every rank of the file.
 *  - transfers, when mpi.collective is set (MPI_File_write_at_all, H5FD_MPIO_COLLECTIVE, put_vara_*_all): every
 *    rank of the file submits the same number of requests in the same batches, and the ranks decide together
 *    when to stop (deadline, error, signal), so that no rank waits forever in a collective call another rank
 *    never makes. fsync (MPI_File_sync) is collective too. */
#ifndef IOL_BACKEND_H
#define IOL_BACKEND_H
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <stdio.h>
#include "../common/error.h"
#include "../common/json.h"

enum iol_io_op { IOL_IO_READ, IOL_IO_WRITE };

enum iol_open_flags {
    IOL_O_READ   = 1 << 0,
    IOL_O_WRITE  = 1 << 1,
    IOL_O_CREATE = 1 << 2,
    IOL_O_EXCL   = 1 << 3,
    IOL_O_TRUNC  = 1 << 4,
    IOL_O_DIRECT = 1 << 5,   /* bypass the page cache; buffers, offsets and lengths must be aligned */
    IOL_O_SYNC   = 1 << 6,   /* O_SYNC: each write returns once data and metadata are stable */
    IOL_O_DSYNC  = 1 << 7,   /* O_DSYNC: each write returns once its data is stable */
    IOL_O_RANGELOCKS = 1 << 8, /* posix, pvsync2: each transfer holds a POSIX record lock on its byte range
                                * (a read lock to read, a write lock to write), as IOR's --posix.rangelocks;
                                * the others do not lock: ior refuses the combination */
};

struct iol_bctx;             /* a backend's per-rank context (its ring, its io_context, ...) */

struct iol_file {
    struct iol_bctx *ctx;
    int fd;                  /* -1 for backends that have none */
    int flags;               /* enum iol_open_flags */
    void *priv;
    /* Set by the caller before open (0 = unknown): the size the run gives the file. A backend that maps or
     * lays out the whole file at open (mmap) uses it; the others ignore it. */
    uint64_t extent;
    /* Set by the caller before open (0 when it does not care): whose blocks of a shared file this rank moves
     * through the handle, (rank + IOR's -C shift) % ranks. A backend that describes a rank's part of the file
     * at open (an MPI-IO file view) uses it; the others ignore it. */
    int data_rank;
};

struct iol_req {
    enum iol_io_op op;
    struct iol_file *file;
    void *buf;
    size_t len;
    uint64_t offset;
    /* filled by the backend */
    int64_t result;          /* bytes moved */
    int error;               /* errno of a failed transfer, 0 if none */
    uint64_t t_submit_ns;    /* CLOCK_MONOTONIC when handed to the system */
    uint64_t t_done_ns;      /* CLOCK_MONOTONIC when seen complete */
    uint64_t tag;            /* the caller's */
    unsigned flags;          /* enum iol_req_flags */
};

enum iol_req_flags {
    /* The caller times the operation itself (mdtest times a whole create): leave t_submit_ns/t_done_ns
     * alone and save the clock readings. */
    IOL_REQ_UNTIMED = 1 << 0,
    /* The caller set t_submit_ns already (the previous completion's time, which it had read anyway): a
     * synchronous backend then reads the clock once per transfer instead of twice. */
    IOL_REQ_SUBMIT_STAMPED = 1 << 1,
    /* One attempt (IOR's -x, singleXferAttempt): a transfer that moves less than asked completes short at
     * once, instead of its remainder being sent again. Backends that complete a request in one call of
     * their library (null) have nothing to do. */
    IOL_REQ_SINGLE_ATTEMPT = 1 << 2,
};

/* Settings of the backends over an MPI library (needs_mpi). All zero is "no MPI": such a backend's context
 * then refuses to open. The layout fields say where a rank's data lies, as IOR lays it out: in a shared file
 * the k-th block of rank r is at (k * nranks + r) * block, transfers of xfer bytes inside it; with
 * file_per_proc the k-th block of a rank's own file is at k * block. */
struct iol_mpi_opts {
    const void *comm;        /* the job's communicator, a const MPI_Comm * (iol_comm_mpi_handle); NULL = none */
    int file_per_proc;       /* -F: each rank opens its own file alone (MPI_COMM_SELF) */
    int collective;          /* -c: collective transfers (see the top of this file) */
    int file_view;           /* -V: MPI-IO: a file view of the rank's blocks (MPI_File_set_view) */
    int preallocate;         /* -p: MPI-IO: MPI_File_preallocate to the whole file's size when it is created */
    int strided_datatype;    /* MPI-IO --mpiio.useStridedDatatype: the rank's blocks of all segments as one type */
    const char *hints_file;  /* -U: hints as IOR reads them (mpi_hints.h); NULL or "" = none. The hints of the
                              * environment (IOR_HINT__MPI__key=value) are always read. */
    int show_hints;          /* -H: rank 0 prints the hints passed and those the library reports, at each open */
    FILE *hints_out;         /* where -H prints (the run's text report); NULL = not printed */
    uint64_t xfer, block;    /* -t, -b */
    int64_t segments;        /* -s */
    int nranks;              /* ranks sharing the job (all of them, also with file_per_proc) */
};

/* Settings of a context, for the backends that have any. All zero is every backend's default, which is its
 * fastest honest setting: so the "off" switches are spelled negatively (fio's fixedbufs=0, registerfiles=0). */
struct iol_backend_opts {
    int no_fixed_bufs;       /* io_uring: plain read/write even for buffers given to register_buffers */
    int no_register_files;   /* io_uring: pass descriptors, not slots of a registered file table */
    int sqthread_poll;       /* io_uring: a kernel thread polls the submission queue (IORING_SETUP_SQPOLL) */
    int sqthread_idle_ms;    /* with sqthread_poll: idle time before that thread sleeps; 0 = the kernel's */
    int hipri;               /* polled completions: io_uring IORING_SETUP_IOPOLL (O_DIRECT only), pvsync2
                              * RWF_HIPRI */
    /* null: each request completes this long after submit, the delays spread evenly over [lo, hi] in a
     * scrambled order (a known latency distribution, to test the statistics). 0, 0 = at once. */
    uint64_t null_delay_lo_ns, null_delay_hi_ns;
    struct iol_mpi_opts mpi; /* backends over an MPI library (needs_mpi) */
    int mmap_advice;         /* mmap: IOL_MMAP_* flags, the posix_madvise calls made at every open */
    struct iol_hdf5_opts {   /* hdf5: IOR's --hdf5.* settings */
        int collective_metadata;   /* --hdf5.collectiveMetadata: H5Pset_all_coll_metadata_ops/coll_metadata_write */
        int no_fill;               /* --hdf5.noFill: datasets are never filled (H5D_FILL_TIME_NEVER) */
        uint64_t alignment;        /* -J, --hdf5.setAlignment: H5Pset_alignment(A, A); 0 or 1 = none */
    } hdf5;
};

enum iol_mmap_advice {
    IOL_MMAP_MADV_PATTERN   = 1 << 0,  /* IOR's --mmap.madv_pattern: sequential (random with IOL_MMAP_RANDOM) */
    IOL_MMAP_RANDOM         = 1 << 1,
    IOL_MMAP_MADV_DONT_NEED = 1 << 2,  /* IOR's --mmap.madv_dont_need */
};

/* What a context did, for reports: which fast paths the requests really took. */
struct iol_backend_stats {
    uint64_t requests;       /* handed to submit */
    uint64_t fixed_bufs;     /* of those, sent with a registered buffer */
    uint64_t fixed_files;    /* of those, sent through a registered file slot */
    uint64_t resubmits;      /* remainders of short transfers sent again */
    uint64_t submit_calls;   /* system calls that submitted (io_uring_enter, io_submit) */
    uint64_t waits;          /* times reap had to wait for completions */
};

/* acc += add, field by field. */
static inline void iol_backend_stats_add(struct iol_backend_stats *acc, const struct iol_backend_stats *add)
{
    acc->requests += add->requests;
    acc->fixed_bufs += add->fixed_bufs;
    acc->fixed_files += add->fixed_files;
    acc->resubmits += add->resubmits;
    acc->submit_calls += add->submit_calls;
    acc->waits += add->waits;
}

/* acc += now - then, field by field: what a backend counted between two readings of its stats. */
static inline void iol_backend_stats_add_since(struct iol_backend_stats *acc, const struct iol_backend_stats *now,
                                               const struct iol_backend_stats *then)
{
    acc->requests += now->requests - then->requests;
    acc->fixed_bufs += now->fixed_bufs - then->fixed_bufs;
    acc->fixed_files += now->fixed_files - then->fixed_files;
    acc->resubmits += now->resubmits - then->resubmits;
    acc->submit_calls += now->submit_calls - then->submit_calls;
    acc->waits += now->waits - then->waits;
}

struct iol_backend {
    const char *name;
    const char *description;
    /* queue_depth: most requests in flight at once; the default settings */
    int (*ctx_open)(struct iol_bctx **ctx, int queue_depth, struct iol_err *err);
    /* Optional: the same with settings (NULL for backends without any; see iol_backend_ctx_open). */
    int (*ctx_open_opts)(struct iol_bctx **ctx, int queue_depth, const struct iol_backend_opts *opts,
                         struct iol_err *err);
    /* Optional: the caller's transfer buffers, given once after allocating them and before any request is
     * in flight, so a backend can pin them (io_uring fixed buffers). A request whose buffer lies inside
     * one of them may go the faster way; any other buffer still works. Returns how many were registered
     * (0 when the backend chose not to, e.g. over the locked-memory limit), or -1 with err set. The
     * buffers must outlive the context. */
    int (*register_buffers)(struct iol_bctx *ctx, void *const *bufs, int n, size_t len, struct iol_err *err);
    /* Optional: what the context did so far. */
    void (*stats)(const struct iol_bctx *ctx, struct iol_backend_stats *out);
    void (*ctx_close)(struct iol_bctx *ctx);
    int (*open)(struct iol_bctx *ctx, struct iol_file *f, const char *path, int flags, mode_t mode,
                struct iol_err *err);
    int (*close)(struct iol_bctx *ctx, struct iol_file *f, struct iol_err *err);
    /* Queues n requests; returns how many were accepted (0..n), or -1. */
    int (*submit)(struct iol_bctx *ctx, struct iol_req **reqs, int n, struct iol_err *err);
    /* Waits until at least min requests are complete and returns up to max of them in done[]; or -1. */
    int (*reap)(struct iol_bctx *ctx, struct iol_req **done, int min, int max, struct iol_err *err);
    int (*fsync)(struct iol_bctx *ctx, struct iol_file *f, struct iol_err *err);
    /* Drops the file's pages from the page cache (after writing them back). Sets *evicted to 1 only when no
     * page of the file is left in memory afterwards (mincore), to 0 when some stayed or the file system
     * keeps no separate cache (tmpfs), so the caller can say so. NULL for backends whose handle has no
     * descriptor (MPI-IO, HDF5, PnetCDF): their files are ordinary files, which the caller evicts through
     * the posix backend on the path (and says so in its report). */
    int (*evict)(struct iol_bctx *ctx, struct iol_file *f, int *evicted, struct iol_err *err);
    int (*stat)(struct iol_bctx *ctx, const char *path, struct stat *st, struct iol_err *err);
    int (*unlink)(struct iol_bctx *ctx, const char *path, struct iol_err *err);
    int (*mkdir)(struct iol_bctx *ctx, const char *path, mode_t mode, struct iol_err *err);
    int (*rmdir)(struct iol_bctx *ctx, const char *path, struct iol_err *err);
    /* Optional: writes the context's settings in effect as members of the current JSON object (the hints
     * the MPI library reports for the last file opened, the transfer mode), for the run's document. */
    void (*describe)(const struct iol_bctx *ctx, struct iol_json *j);
    int does_io;             /* 0 for "null": nothing reaches storage, so safety checks are skipped */
    int completes_in_submit; /* synchronous: every request is complete when submit returns */
    int needs_mpi;           /* runs only on MPI ranks, with iol_backend_opts.mpi (forked local ranks cannot) */
    int collective_open;     /* open and close are collective over the ranks of a file (see the top) */
    int collective_segments; /* the first transfer into each segment makes a collective call (HDF5 creates the
                              * segment's dataset): a shared file's ranks stop together at a deadline */
};

const struct iol_backend *iol_backend_find(const char *name);   /* case-insensitive; NULL if unknown */
/* For a backend iolens has but this build lacks (mpiio without MPI, io_uring without liburing): what it needs,
 * for the refusal's message; NULL for a name that is compiled in or unknown. */
const char *iol_backend_unavailable(const char *name);
/* Comma-separated list of the names compiled in, for messages and --help. */
const char *iol_backend_names(void);
/* Opens a context with settings: through ctx_open_opts when the backend has it; otherwise settings that ask
 * for something (sqthread_poll, hipri) are a usage error naming it, and the "off" switches need nothing. */
int iol_backend_ctx_open(const struct iol_backend *be, struct iol_bctx **ctx, int queue_depth,
                         const struct iol_backend_opts *opts, struct iol_err *err);

/* Alignment used for O_DIRECT buffers. */
#define IOL_DIRECT_ALIGN 4096

/* The one list of backends compiled in, in the order messages show them. Each X(id) names the struct
 * iol_backend_<id>, whose .name is "<id>". A backend built only when its library is found joins under its
 * #if, so the registry, iol_backend_names() and the help texts (IOL_BACKEND_NAMES_TEXT) agree. */
#if IOLENS_HAVE_URING
#define IOL_BACKEND_IF_URING(X) X(io_uring)
#else
#define IOL_BACKEND_IF_URING(X)
#endif
#if IOLENS_HAVE_AIO
#define IOL_BACKEND_IF_AIO(X) X(libaio)
#else
#define IOL_BACKEND_IF_AIO(X)
#endif
#if IOLENS_HAVE_MPI
#define IOL_BACKEND_IF_MPIIO(X) X(mpiio)
#else
#define IOL_BACKEND_IF_MPIIO(X)
#endif
#if IOLENS_HAVE_HDF5
#define IOL_BACKEND_IF_HDF5(X) X(hdf5)
#else
#define IOL_BACKEND_IF_HDF5(X)
#endif
#if IOLENS_HAVE_PNETCDF
#define IOL_BACKEND_IF_NCMPI(X) X(ncmpi)
#else
#define IOL_BACKEND_IF_NCMPI(X)
#endif
#define IOL_BACKEND_LIST(X) X(posix) X(pvsync2) IOL_BACKEND_IF_URING(X) IOL_BACKEND_IF_AIO(X) X(mmap) \
    IOL_BACKEND_IF_MPIIO(X) IOL_BACKEND_IF_HDF5(X) IOL_BACKEND_IF_NCMPI(X) X(null)

#define IOL_BACKEND_DECLARE(id) extern const struct iol_backend iol_backend_##id;
IOL_BACKEND_LIST(IOL_BACKEND_DECLARE)
#undef IOL_BACKEND_DECLARE

/* The names as one string literal for static help texts: " posix pvsync2 io_uring libaio mmap null". */
#define IOL_BACKEND_NAME_WORD(id) " " #id
#define IOL_BACKEND_NAMES_TEXT IOL_BACKEND_LIST(IOL_BACKEND_NAME_WORD)

#endif
