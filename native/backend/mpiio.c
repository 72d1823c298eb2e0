/* mpiio.c — the MPI-IO backend (-a MPIIO), with IOR's meaning: every rank of a shared file opens it
 * together over the job's communicator (a file per process: each rank alone over MPI_COMM_SELF), with IOR's
 * modes (MPI_MODE_UNIQUE_OPEN, WRONLY|CREATE to write, RDONLY to read) and the hints of the environment and
 * the -U file; transfers are MPI_File_{write,read}_at, or their _all forms with -c, each complete inside
 * submit (as posix); -V moves data through a file view of the rank's blocks, -p preallocates the file, -H
 * prints the hints passed and those the library reports, as IOR prints them.
 *
 * Built only with MPI (IOLENS_HAVE_MPI). The handle has no descriptor: the workload drops cached pages
 * through the posix backend on the path (evict is NULL, see backend.h). */
#define _GNU_SOURCE
#include "backend.h"
#include "mpi_hints.h"
#include "posix_ops.h"
#include "sync_ring.h"

#include <errno.h>
#include <limits.h>
#include <mpi.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct mpiio_state {
    struct iol_mpi_opts o;
    MPI_Comm comm;                 /* the job's; MPI_COMM_SELF is used instead with file_per_proc */
    struct iol_hints passed;       /* the environment's and the -U file's, as passed to MPI_File_open */
    struct iol_hints reported;     /* what MPI_File_get_info said of the last file opened */
    int reported_valid;
    char library[128];             /* MPI_Get_library_version's first line */
    struct iol_backend_stats stats;
};

/* One open file. With -V: the element type (one transfer), the type of the rank's part of the file, and with
 * the strided datatype the memory type (one transfer repeated in place, as IOR's). */
struct mpiio_file {
    MPI_File fh;
    MPI_Datatype etype, ftype, mtype;
    int data_rank;
};

static inline uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static struct mpiio_state *state(const struct iol_bctx *ctx)
{
    return ctx->priv;
}

/* An errno for a failed transfer (the workload reports transfers by errno). */
static int errno_of(int rc)
{
    int cls = MPI_ERR_OTHER;
    MPI_Error_class(rc, &cls);
    if (cls == MPI_ERR_NO_SPACE) return ENOSPC;
    if (cls == MPI_ERR_QUOTA) return EDQUOT;
    if (cls == MPI_ERR_ACCESS) return EACCES;
    if (cls == MPI_ERR_NO_SUCH_FILE) return ENOENT;
    if (cls == MPI_ERR_READ_ONLY) return EROFS;
    return EIO;
}

static int mpiio_ctx_open(struct iol_bctx **out, int queue_depth, struct iol_err *err)
{
    (void)queue_depth;
    *out = NULL;
    return iol_err_set(err, IOL_ERR_USAGE, "mpiio backend: needs MPI ranks and the run's MPI settings");
}

static int mpiio_ctx_open_opts(struct iol_bctx **out, int queue_depth, const struct iol_backend_opts *opts,
                               struct iol_err *err)
{
    *out = NULL;
    if (opts->mpi.comm == NULL)
        return iol_err_set(err, IOL_ERR_USAGE, "-a MPIIO: needs MPI ranks (run under mpirun or srun)");
    if (opts->sqthread_poll || opts->hipri)
        return iol_err_set(err, IOL_ERR_USAGE, "mpiio backend: %s is not supported (it needs io_uring)",
                           opts->sqthread_poll ? "sqthread_poll" : "hipri");
    struct mpiio_state *st = calloc(1, sizeof *st);
    if (!st) return iol_err_errno(err, IOL_ERR_RUNTIME, ENOMEM, "mpiio backend");
    if (iol_sync_ctx_open(out, queue_depth, "mpiio", err)) {
        free(st);
        return -1;
    }
    st->o = opts->mpi;
    st->comm = *(const MPI_Comm *)opts->mpi.comm;
    int len = 0;
    char lib[MPI_MAX_LIBRARY_VERSION_STRING];
    if (MPI_Get_library_version(lib, &len) == MPI_SUCCESS) {
        lib[strcspn(lib, "\n,")] = '\0';
        snprintf(st->library, sizeof st->library, "%.*s", (int)sizeof st->library - 1, lib);
    }
    (*out)->priv = st;
    /* Read once: the same hints go to every open (IOR reads them again at each open; they cannot change). */
    if (iol_hints_collect(st->o.hints_file, &st->passed, err)) {
        iol_hints_free(&st->passed);
        free(st);
        iol_sync_ctx_close(*out);
        *out = NULL;
        return -1;
    }
    return 0;
}

static void mpiio_ctx_close(struct iol_bctx *ctx)
{
    if (!ctx) return;
    struct mpiio_state *st = state(ctx);
    if (st) {
        iol_hints_free(&st->passed);
        iol_hints_free(&st->reported);
        free(st);
    }
    iol_sync_ctx_close(ctx);
}

static int amode_of(int flags, const char *path, struct iol_err *err)
{
    if (flags & (IOL_O_DIRECT | IOL_O_SYNC | IOL_O_DSYNC))
        return iol_err_set(err, IOL_ERR_USAGE, "mpiio backend: %s: MPI-IO has no %s open mode", path,
                           flags & IOL_O_DIRECT ? "O_DIRECT" : "O_SYNC/O_DSYNC");
    int rw = flags & (IOL_O_READ | IOL_O_WRITE);
    /* MPI_MODE_UNIQUE_OPEN as IOR: nobody else opens the file meanwhile, so the library may skip locking. */
    int amode = MPI_MODE_UNIQUE_OPEN | (rw == (IOL_O_READ | IOL_O_WRITE) ? MPI_MODE_RDWR
                                        : rw == IOL_O_WRITE                ? MPI_MODE_WRONLY
                                                                           : MPI_MODE_RDONLY);
    if (flags & IOL_O_CREATE) amode |= MPI_MODE_CREATE;
    if (flags & IOL_O_EXCL) amode |= MPI_MODE_EXCL;
    return amode;
}

/* -V: IOR's view. Etype: one transfer. Filetype: in each segment of the file (nranks blocks), the block of
 * the data rank, so view offset i (in transfers) is the rank's i-th transfer. With the strided datatype the
 * view is set per call instead (mpiio_xfer); here only its types: the filetype is one transfer stretched to
 * a segment, the memory type one transfer with no extent, so one buffer fills every segment (as IOR's). */
static int make_view(struct mpiio_state *st, struct mpiio_file *mf, const char *path, struct iol_err *err)
{
    const struct iol_mpi_opts *o = &st->o;
    uint64_t xpb = o->block / o->xfer, tasks = o->file_per_proc ? 1 : (uint64_t)o->nranks;
    int rc;
    if (o->xfer / 8 > INT_MAX || xpb * tasks > INT_MAX)
        return iol_err_set(err, IOL_ERR_USAGE, "-V: %llu transfers per segment are more than an MPI datatype counts",
                           (unsigned long long)(xpb * tasks));
    if ((rc = MPI_Type_contiguous((int)(o->xfer / 8), MPI_LONG_LONG_INT, &mf->etype)) != MPI_SUCCESS ||
        (rc = MPI_Type_commit(&mf->etype)) != MPI_SUCCESS)
        return iol_mpi_err(err, rc, "MPI_Type_contiguous for -V", NULL);
    if (o->strided_datatype) {
        if ((rc = MPI_Type_create_resized(mf->etype, 0, (MPI_Aint)(tasks * o->block), &mf->ftype)) != MPI_SUCCESS ||
            (rc = MPI_Type_commit(&mf->ftype)) != MPI_SUCCESS ||
            (rc = MPI_Type_create_resized(mf->etype, 0, 0, &mf->mtype)) != MPI_SUCCESS ||
            (rc = MPI_Type_commit(&mf->mtype)) != MPI_SUCCESS)
            return iol_mpi_err(err, rc, "MPI_Type_create_resized for --mpiio.useStridedDatatype", NULL);
        return 0;
    }
    int sizes[2] = {1, (int)(xpb * tasks)}, sub[2] = {1, (int)xpb};
    int starts[2] = {0, (int)(xpb * (o->file_per_proc ? 0 : (uint64_t)mf->data_rank))};
    if ((rc = MPI_Type_create_subarray(2, sizes, sub, starts, MPI_ORDER_C, mf->etype, &mf->ftype)) != MPI_SUCCESS ||
        (rc = MPI_Type_commit(&mf->ftype)) != MPI_SUCCESS)
        return iol_mpi_err(err, rc, "MPI_Type_create_subarray for -V", NULL);
    if ((rc = MPI_File_set_view(mf->fh, 0, mf->etype, mf->ftype, "native", MPI_INFO_NULL)) != MPI_SUCCESS)
        return iol_mpi_err(err, rc, "MPI_File_set_view (-V)", path);
    return 0;
}

static void free_types(struct mpiio_file *mf)
{
    MPI_Datatype *t[3] = {&mf->etype, &mf->ftype, &mf->mtype};
    for (int i = 0; i < 3; i++)
        if (*t[i] != MPI_DATATYPE_NULL) MPI_Type_free(t[i]);
}

/* After open: -H's second block, the hints for the document, truncation, preallocation and the view. */
static int after_open(struct mpiio_state *st, struct iol_file *f, const char *path, int flags, struct iol_err *err)
{
    struct mpiio_file *mf = f->priv;
    const struct iol_mpi_opts *o = &st->o;
    MPI_Info got = MPI_INFO_NULL;
    if (MPI_File_get_info(mf->fh, &got) == MPI_SUCCESS) {
        st->reported_valid = iol_hints_from_info(got, &st->reported, err) == 0;
        MPI_Info_free(&got);
        if (!st->reported_valid) return -1;
        if (o->hints_out) {
            iol_hints_print(o->hints_out, "hints returned from opened file", &st->reported);
            fflush(o->hints_out);
        }
    }
    int rc;
    if ((flags & IOL_O_TRUNC) && (rc = MPI_File_set_size(mf->fh, 0)) != MPI_SUCCESS)
        return iol_mpi_err(err, rc, "MPI_File_set_size (truncate)", path);
    /* The whole file: every rank's blocks of a shared file, the rank's own with -F (IOR asks nranks times
     * the rank's share for each file of -F too; that would be nranks times too large). */
    if (o->preallocate && (flags & IOL_O_CREATE) && o->segments > 0) {
        MPI_Offset size = (MPI_Offset)((uint64_t)o->segments * o->block * (o->file_per_proc ? 1 : (uint64_t)o->nranks));
        if ((rc = MPI_File_preallocate(mf->fh, size)) != MPI_SUCCESS)
            return iol_mpi_err(err, rc, "MPI_File_preallocate (-p)", path);
    }
    if (o->file_view && make_view(st, mf, path, err)) return -1;
    return 0;
}

static int mpiio_open(struct iol_bctx *ctx, struct iol_file *f, const char *path, int flags, mode_t mode,
                      struct iol_err *err)
{
    (void)mode;   /* MPI_File_open has no mode: the library creates files as open(2) with 0666 and the umask */
    struct mpiio_state *st = state(ctx);
    f->ctx = ctx;
    f->fd = -1;
    f->flags = flags;
    f->priv = NULL;
    int amode = amode_of(flags, path, err);
    if (amode < 0) return -1;
    struct mpiio_file *mf = calloc(1, sizeof *mf);
    if (!mf) return iol_err_errno(err, IOL_ERR_RUNTIME, ENOMEM, "open %s", path);
    mf->fh = MPI_FILE_NULL;
    mf->etype = mf->ftype = mf->mtype = MPI_DATATYPE_NULL;
    mf->data_rank = f->data_rank;
    MPI_Info info = MPI_INFO_NULL;
    if (iol_hints_to_info(&st->passed, &info, err)) {
        free(mf);
        return -1;
    }
    if (st->o.hints_out) {
        iol_hints_print(st->o.hints_out, "hints passed to MPI_File_open()", &st->passed);
        fflush(st->o.hints_out);
    }
    int rc = MPI_File_open(st->o.file_per_proc ? MPI_COMM_SELF : st->comm, path, amode, info, &mf->fh);
    MPI_Info_free(&info);
    if (rc != MPI_SUCCESS) {
        free(mf);
        return iol_mpi_err(err, rc, "MPI_File_open", path);
    }
    f->priv = mf;
    if (after_open(st, f, path, flags, err)) {
        /* Collective, as what failed is: set_view, set_size and preallocate fail on every rank of the file. */
        MPI_File_close(&mf->fh);
        free_types(mf);
        free(mf);
        f->priv = NULL;
        return -1;
    }
    return 0;
}

static int mpiio_close(struct iol_bctx *ctx, struct iol_file *f, struct iol_err *err)
{
    (void)ctx;
    struct mpiio_file *mf = f->priv;
    if (!mf) return 0;
    int rc = MPI_File_close(&mf->fh);
    free_types(mf);
    free(mf);
    f->priv = NULL;
    return rc == MPI_SUCCESS ? 0 : iol_mpi_err(err, rc, "MPI_File_close", NULL);
}

typedef int (*at_fn)(MPI_File, MPI_Offset, void *, int, MPI_Datatype, MPI_Status *);

/* One request: IOR's MPIIO_Xfer. The offset is the byte offset in the file; a view counts in transfers. */
static void mpiio_xfer(const struct mpiio_state *st, struct iol_req *r)
{
    const struct iol_mpi_opts *o = &st->o;
    struct mpiio_file *mf = r->file->priv;
    const int wr = r->op == IOL_IO_WRITE, coll = o->collective;
    /* MPI's write functions take a const buffer, its read functions not: one pointer type for both. */
    at_fn fn = wr ? (coll ? (at_fn)MPI_File_write_at_all : (at_fn)MPI_File_write_at)
                  : (coll ? MPI_File_read_at_all : MPI_File_read_at);
    MPI_Status status;
    int rc, count = 0;
    r->error = 0;
    if (!o->file_view) {
        rc = fn(mf->fh, (MPI_Offset)r->offset, r->buf, (int)r->len, MPI_BYTE, &status);
    } else if (!o->strided_datatype) {
        uint64_t seg_bytes = o->block * (o->file_per_proc ? 1 : (uint64_t)o->nranks);
        uint64_t in_seg = r->offset % seg_bytes - (o->file_per_proc ? 0 : (uint64_t)mf->data_rank * o->block);
        MPI_Offset at = (MPI_Offset)((o->block / o->xfer) * (r->offset / seg_bytes) + in_seg / o->xfer);
        rc = fn(mf->fh, at, r->buf, 1, mf->etype, &status);
    } else {
        /* IOR's strided datatype: the transfers of the rank's first block each move that transfer's place in
         * every segment at once (one buffer, repeated); the later segments' transfers are then done. */
        if (r->offset >= ((uint64_t)mf->data_rank + 1) * o->block) {
            r->result = (int64_t)r->len;
            return;
        }
        rc = MPI_File_set_view(mf->fh, (MPI_Offset)r->offset, mf->etype, mf->ftype, "native", MPI_INFO_NULL);
        if (rc == MPI_SUCCESS) rc = fn(mf->fh, 0, r->buf, (int)o->segments, mf->mtype, &status);
        if (rc == MPI_SUCCESS) {
            r->result = (int64_t)r->len;
            return;
        }
    }
    if (rc != MPI_SUCCESS) {
        r->error = errno_of(rc);
        r->result = 0;
        return;
    }
    if (MPI_Get_count(&status, MPI_BYTE, &count) != MPI_SUCCESS || count == MPI_UNDEFINED) count = 0;
    r->result = count;
}

static int mpiio_submit(struct iol_bctx *ctx, struct iol_req **reqs, int n, struct iol_err *err)
{
    (void)err;
    struct mpiio_state *st = state(ctx);
    int room = iol_sync_room(ctx);
    int take = n < room ? n : room;
    uint64_t prev = 0;
    for (int i = 0; i < take; i++) {
        struct iol_req *r = reqs[i];
        if (r->flags & IOL_REQ_UNTIMED) {
            mpiio_xfer(st, r);
            prev = 0;
            continue;
        }
        if (prev) r->t_submit_ns = prev;
        else if (!(r->flags & IOL_REQ_SUBMIT_STAMPED)) r->t_submit_ns = now_ns();
        mpiio_xfer(st, r);
        r->t_done_ns = prev = now_ns();
    }
    st->stats.requests += (uint64_t)take;
    st->stats.submit_calls++;
    iol_sync_push(ctx, reqs, take);
    return take;
}

static void mpiio_stats(const struct iol_bctx *ctx, struct iol_backend_stats *out)
{
    *out = state(ctx)->stats;
}

static int mpiio_fsync(struct iol_bctx *ctx, struct iol_file *f, struct iol_err *err)
{
    (void)ctx;
    struct mpiio_file *mf = f->priv;
    int rc = MPI_File_sync(mf->fh);   /* collective over the file's ranks */
    return rc == MPI_SUCCESS ? 0 : iol_mpi_err(err, rc, "MPI_File_sync", NULL);
}

static void mpiio_describe(const struct iol_bctx *ctx, struct iol_json *j)
{
    const struct mpiio_state *st = state(ctx);
    iol_json_kv_string(j, "library", st->library);
    iol_json_kv_string(j, "communicator", st->o.file_per_proc ? "MPI_COMM_SELF" : "MPI_COMM_WORLD");
    iol_json_kv_bool(j, "file_view", st->o.file_view);
    iol_json_kv_bool(j, "preallocate", st->o.preallocate);
    iol_json_kv_bool(j, "strided_datatype", st->o.strided_datatype);
    iol_json_key(j, "hints_file");
    iol_json_string(j, st->o.hints_file && st->o.hints_file[0] ? st->o.hints_file : NULL);
    iol_hints_json(j, "hints_passed", &st->passed);
    /* What the library reported for the last file opened: the hints in effect. */
    if (st->reported_valid) {
        iol_hints_json(j, "hints", &st->reported);
    } else {
        iol_json_key(j, "hints");
        iol_json_null(j);
    }
}

const struct iol_backend iol_backend_mpiio = {
    .name = "mpiio",
    .description = "MPI-IO (MPI_File_write_at/read_at, _all with -c), as IOR's MPIIO; each request completes in submit",
    .ctx_open = mpiio_ctx_open,
    .ctx_open_opts = mpiio_ctx_open_opts,
    .stats = mpiio_stats,
    .ctx_close = mpiio_ctx_close,
    .open = mpiio_open,
    .close = mpiio_close,
    .submit = mpiio_submit,
    .reap = iol_sync_reap,
    .fsync = mpiio_fsync,
    .evict = NULL,
    .stat = iol_posix_stat,
    .unlink = iol_posix_unlink,
    .mkdir = iol_posix_mkdir,
    .rmdir = iol_posix_rmdir,
    .describe = mpiio_describe,
    .does_io = 1,
    .completes_in_submit = 1,
    .needs_mpi = 1,
    .collective_open = 1,
};
