/* ncmpi.c — IOR's NCMPI backend: PnetCDF over MPI-IO, with IOR 4's file layout (aiori-NCMPI.c, checked
 * with ncmpidump on files IOR wrote):
 *  - a CDF-5 file (NC_64BIT_DATA), created with NC_CLOBBER over the job's communicator (a shared file only:
 *    IOR has no -F for NCMPI, nor does iolens);
 *  - one variable "data_var" of NC_BYTE with three dimensions: "segments_times_np" (NC_UNLIMITED, the
 *    records), "number_of_transfers" (-b / -t) and "transfer_size" (-t). Rank r's transfer k of segment s
 *    is element [s x ranks + r][k][0 .. -t);
 *  - the dimensions and the variable are defined (or looked up, for reads) at the first transfer, as IOR
 *    does, then without -c the file goes into independent data mode (ncmpi_begin_indep_data);
 *  - -c: ncmpi_put_vara_schar_all / get_vara_schar_all, else the independent calls; fsync is ncmpi_sync;
 *  - hints: -U / --ncmpi.hintsFileName and IOR_HINT__MPI__ variables go to ncmpi_create/ncmpi_open; -H /
 *    --ncmpi.showHints prints them and those the file reports (ncmpi_get_file_info), as IOR's lines.
 * Difference: IOR places a transfer in record s x ranks + (its own rank) even when -C makes it read another
 * rank's data; iolens uses the rank whose data the offset names, so -C reads what that rank wrote.
 * Synchronous: each request completes inside submit. */
#define _GNU_SOURCE
#include "mpi_lib.h"
#include "posix_ops.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <pnetcdf.h>

struct nc_file {
    int ncid;
    int varid;                    /* -1 until the first transfer defined or found it */
    int writing;
    char path[256];
};

static int nc_fail(struct iol_err *err, int rc, const char *what, const char *path)
{
    return iol_err_set(err, IOL_ERR_RUNTIME, "PnetCDF %s %s: %s", what, path, ncmpi_strerror(rc));
}

static int nc_ctx_open_opts(struct iol_bctx **out, int queue_depth, const struct iol_backend_opts *opts,
                            struct iol_err *err)
{
    return iol_mpi_lib_ctx_open(out, queue_depth, opts, "ncmpi", "NCMPI", calloc(1, sizeof(struct iol_mpi_lib)), err);
}

static int nc_ctx_open(struct iol_bctx **out, int queue_depth, struct iol_err *err)
{
    struct iol_backend_opts none;
    memset(&none, 0, sizeof none);
    return nc_ctx_open_opts(out, queue_depth, &none, err);
}

static int nc_open(struct iol_bctx *ctx, struct iol_file *f, const char *path, int flags, mode_t mode,
                   struct iol_err *err)
{
    (void)mode;
    struct iol_mpi_lib *c = iol_mpi_lib_of(ctx);
    const struct iol_mpi_opts *m = &c->opts.mpi;
    f->ctx = ctx;
    f->fd = -1;
    f->flags = flags;
    f->priv = NULL;
    if (flags & IOL_O_DIRECT) return iol_err_set(err, IOL_ERR_USAGE, "-a NCMPI: O_DIRECT is not possible");
    struct nc_file *h = calloc(1, sizeof *h);
    if (!h) return iol_err_errno(err, IOL_ERR_RUNTIME, ENOMEM, "open %s", path);
    h->varid = -1;
    h->writing = (flags & IOL_O_WRITE) != 0;
    snprintf(h->path, sizeof h->path, "%s", path);
    int rank = iol_mpi_lib_rank(c);
    MPI_Info info = MPI_INFO_NULL;
    if (iol_hints_to_info(&c->passed, &info, err)) {
        free(h);
        return -1;
    }
    if (m->show_hints && m->hints_out && rank == 0)
        iol_hints_print(m->hints_out, "hints passed to MPI_File_open()", &c->passed);
    int rc = flags & IOL_O_CREATE ? ncmpi_create(c->comm, path, NC_CLOBBER | NC_64BIT_DATA, info, &h->ncid)
                                  : ncmpi_open(c->comm, path, h->writing ? NC_WRITE : NC_NOWRITE, info, &h->ncid);
    if (info != MPI_INFO_NULL) MPI_Info_free(&info);
    if (rc != NC_NOERR) {
        free(h);
        return nc_fail(err, rc, flags & IOL_O_CREATE ? "create" : "open", path);
    }
    MPI_Info used;
    if (ncmpi_get_file_info(h->ncid, &used) == NC_NOERR) {
        iol_mpi_lib_note_used(c, used);
        MPI_Info_free(&used);
    }
    if (m->show_hints && m->hints_out && rank == 0 && c->have_used)
        iol_hints_print(m->hints_out, "hints returned from opened file", &c->used);
    f->priv = h;
    return 0;
}

static int nc_close(struct iol_bctx *ctx, struct iol_file *f, struct iol_err *err)
{
    (void)ctx;
    struct nc_file *h = f->priv;
    if (!h) return 0;
    int rc = ncmpi_close(h->ncid);
    f->priv = NULL;
    if (rc != NC_NOERR) nc_fail(err, rc, "close", h->path);
    free(h);
    return rc != NC_NOERR ? -1 : 0;
}

/* IOR's variable: defined by a writer, looked up by a reader; then independent data mode without -c. */
static int find_variable(struct iol_mpi_lib *c, struct nc_file *h, struct iol_err *err)
{
    const struct iol_mpi_opts *m = &c->opts.mpi;
    int rc, dims[3];
    MPI_Offset per_block = (MPI_Offset)(m->block / m->xfer);
    if (h->writing) {
        if ((rc = ncmpi_def_dim(h->ncid, "segments_times_np", NC_UNLIMITED, &dims[0])) != NC_NOERR ||
            (rc = ncmpi_def_dim(h->ncid, "number_of_transfers", per_block, &dims[1])) != NC_NOERR ||
            (rc = ncmpi_def_dim(h->ncid, "transfer_size", (MPI_Offset)m->xfer, &dims[2])) != NC_NOERR ||
            (rc = ncmpi_def_var(h->ncid, "data_var", NC_BYTE, 3, dims, &h->varid)) != NC_NOERR ||
            (rc = ncmpi_enddef(h->ncid)) != NC_NOERR)
            return nc_fail(err, rc, "define data_var in", h->path);
    } else if ((rc = ncmpi_inq_varid(h->ncid, "data_var", &h->varid)) != NC_NOERR) {
        return nc_fail(err, rc, "find data_var in", h->path);
    }
    if (!m->collective && (rc = ncmpi_begin_indep_data(h->ncid)) != NC_NOERR)
        return nc_fail(err, rc, "independent data mode for", h->path);
    return 0;
}

static int transfer(struct iol_mpi_lib *c, struct iol_req *r, struct iol_err *err)
{
    struct nc_file *h = r->file->priv;
    const struct iol_mpi_opts *m = &c->opts.mpi;
    if (r->len != m->xfer)
        return iol_err_set(err, IOL_ERR_RUNTIME, "-a NCMPI: a transfer of %zu bytes, not -t", r->len);
    if (h->varid < 0 && find_variable(c, h, err)) return -1;
    uint64_t seg_bytes = m->block * (uint64_t)m->nranks;
    uint64_t seg = r->offset / seg_bytes, in_seg = r->offset % seg_bytes;
    MPI_Offset start[3] = {(MPI_Offset)(seg * (uint64_t)m->nranks + in_seg / m->block),
                           (MPI_Offset)(in_seg % m->block / m->xfer), 0};
    MPI_Offset count[3] = {1, 1, (MPI_Offset)r->len};
    int rc;
    if (r->op == IOL_IO_WRITE)
        rc = m->collective ? ncmpi_put_vara_schar_all(h->ncid, h->varid, start, count, r->buf)
                           : ncmpi_put_vara_schar(h->ncid, h->varid, start, count, r->buf);
    else
        rc = m->collective ? ncmpi_get_vara_schar_all(h->ncid, h->varid, start, count, r->buf)
                           : ncmpi_get_vara_schar(h->ncid, h->varid, start, count, r->buf);
    if (rc != NC_NOERR) {
        char what[64];
        snprintf(what, sizeof what, "%s at offset %" PRIu64 " of", r->op == IOL_IO_WRITE ? "write" : "read", r->offset);
        return nc_fail(err, rc, what, h->path);
    }
    return 0;
}

static int nc_submit(struct iol_bctx *ctx, struct iol_req **reqs, int n, struct iol_err *err)
{
    return iol_mpi_lib_submit(ctx, reqs, n, transfer, err);
}

static int nc_fsync(struct iol_bctx *ctx, struct iol_file *f, struct iol_err *err)
{
    (void)ctx;
    struct nc_file *h = f->priv;
    int rc;
    if (h && (rc = ncmpi_sync(h->ncid)) != NC_NOERR) return nc_fail(err, rc, "sync", h->path);
    return 0;
}

static void nc_describe(const struct iol_bctx *ctx, struct iol_json *j)
{
    char library[96];
    snprintf(library, sizeof library, "PnetCDF %s", ncmpi_inq_libvers());
    iol_mpi_lib_describe(iol_mpi_lib_of(ctx), library, j);
}

const struct iol_backend iol_backend_ncmpi = {
    .name = "ncmpi",
    .description = "IOR's NCMPI: PnetCDF over MPI-IO, one record variable (-c collective transfers; each "
                   "request completes in submit)",
    .ctx_open = nc_ctx_open,
    .ctx_open_opts = nc_ctx_open_opts,
    .ctx_close = iol_mpi_lib_ctx_close,
    .open = nc_open,
    .close = nc_close,
    .submit = nc_submit,
    .reap = iol_sync_reap,
    .fsync = nc_fsync,
    .evict = NULL,
    .stat = iol_posix_stat,
    .unlink = iol_posix_unlink,
    .mkdir = iol_posix_mkdir,
    .rmdir = iol_posix_rmdir,
    .describe = nc_describe,
    .does_io = 1,
    .completes_in_submit = 1,
    .needs_mpi = 1,
    .collective_open = 1,
};
