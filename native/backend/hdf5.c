/* hdf5.c — IOR's HDF5 backend: parallel HDF5 over MPI-IO (H5FD_MPIO), with IOR 4's file layout so a file
 * either tool writes the other reads (aiori-HDF5.c, learned by writing files with IOR and reading them with
 * h5dump):
 *  - the file is created with H5Fcreate(H5F_ACC_TRUNC), 8-byte offsets and lengths (H5Pset_sizes), over the
 *    job's communicator for a shared file and MPI_COMM_SELF for each file of -F;
 *  - one 1-D dataset of H5T_NATIVE_LLONG per segment, "Dataset-0000.NNNN" (NNNN = the segment, from 0),
 *    of -b x ranks bytes in a shared file (rank r's block at element r x b / 8) and -b bytes with -F;
 *    contiguous, allocated when created (parallel HDF5 allocates early), filled unless --hdf5.noFill
 *    (H5D_FILL_TIME_NEVER);
 *  - a transfer of -t bytes at logical offset o (IOR's offset, the posix file's) is the hyperslab of t / 8
 *    elements from (o mod segment size) / 8 of segment o / segment size's dataset; a dataset is created (or
 *    opened, for reads) at the first transfer into its segment, as IOR does, so its cost lands in the
 *    transfer phase; the ranks of a shared file reach the segments in the same order (IOR refuses -z with
 *    HDF5 and so does iolens), which parallel HDF5 needs, dataset creation being collective;
 *  - -c: H5FD_MPIO_COLLECTIVE transfers; --hdf5.collectiveMetadata: collective metadata reads and writes;
 *    --hdf5.setAlignment / -J A: H5Pset_alignment(A, A) (objects of A bytes or more start at a multiple of A);
 *  - hints: -U / --hdf5.hintsFileName and IOR_HINT__MPI__ variables go to H5Pset_fapl_mpio; -H /
 *    --hdf5.showHints prints those passed and those MPI-IO reports for the open file, as IOR's lines;
 *  - fsync (-e, -Y) is H5Fflush(H5F_SCOPE_LOCAL).
 * Synchronous: each request completes inside submit. Errors come from HDF5's error stack (its automatic
 * printing is off: a failure is one message, the innermost description HDF5 gives). */
#define _GNU_SOURCE
#include "mpi_lib.h"
#include "posix_ops.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hdf5.h>

#define ELEM ((uint64_t)sizeof(long long))   /* IOR's IOR_size_t: the datasets' element */

struct h5_file {
    hid_t fid, dxpl, mem;         /* file, transfer property list, memory space of one transfer */
    hid_t dset, space;            /* the current segment's dataset and its file space */
    uint64_t mem_elems;           /* elements of mem */
    int64_t seg;                  /* the current dataset's segment; -1 = none */
    int writing;
    char path[256];               /* for messages (cut if longer) */
};

/* HDF5's error stack walked from the outside in: the last description is the innermost, the cause. */
static herr_t keep_desc(unsigned n, const H5E_error2_t *e, void *out)
{
    (void)n;
    if (e->desc && e->desc[0]) snprintf(out, 256, "%s", e->desc);
    return 0;
}

static int h5_fail(struct iol_err *err, const char *what, const char *path)
{
    char why[256] = "";
    H5Ewalk2(H5E_DEFAULT, H5E_WALK_DOWNWARD, keep_desc, why);
    H5Eclear2(H5E_DEFAULT);
    return iol_err_set(err, IOL_ERR_RUNTIME, "HDF5 %s %s%s%s", what, path, why[0] ? ": " : "", why);
}

static int h5_ctx_open_opts(struct iol_bctx **out, int queue_depth, const struct iol_backend_opts *opts,
                            struct iol_err *err)
{
    if (iol_mpi_lib_ctx_open(out, queue_depth, opts, "hdf5", "HDF5", calloc(1, sizeof(struct iol_mpi_lib)), err))
        return -1;
    /* Failures are reported once, as this backend's messages, not as HDF5's stack dump on stderr. */
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    return 0;
}

static int h5_ctx_open(struct iol_bctx **out, int queue_depth, struct iol_err *err)
{
    struct iol_backend_opts none;
    memset(&none, 0, sizeof none);
    return h5_ctx_open_opts(out, queue_depth, &none, err);
}

/* The file access property list: MPI-IO with the hints, IOR's alignment, collective metadata. */
static hid_t make_fapl(struct iol_mpi_lib *c, const char *path, struct iol_err *err)
{
    const struct iol_mpi_opts *m = &c->opts.mpi;
    MPI_Info info = MPI_INFO_NULL;
    if (iol_hints_to_info(&c->passed, &info, err)) return -1;
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    int ok = fapl >= 0 && H5Pset_fapl_mpio(fapl, m->file_per_proc ? MPI_COMM_SELF : c->comm, info) >= 0;
    uint64_t a = c->opts.hdf5.alignment ? c->opts.hdf5.alignment : 1;
    ok = ok && H5Pset_alignment(fapl, (hsize_t)a, (hsize_t)a) >= 0;
    if (ok && c->opts.hdf5.collective_metadata)
        ok = H5Pset_all_coll_metadata_ops(fapl, 1) >= 0 && H5Pset_coll_metadata_write(fapl, 1) >= 0;
    if (info != MPI_INFO_NULL) MPI_Info_free(&info);
    if (!ok) {
        if (fapl >= 0) H5Pclose(fapl);
        h5_fail(err, "file access properties for", path);
        return -1;
    }
    return fapl;
}

/* -H: the hints MPI-IO reports for the open file (IOR's second list), kept for the document. */
static void note_hints_used(struct iol_mpi_lib *c, hid_t fid, hid_t fapl)
{
    MPI_File *mfh = NULL;
    MPI_Info info;
    if (H5Fget_vfd_handle(fid, fapl, (void **)&mfh) < 0 || !mfh) {
        H5Eclear2(H5E_DEFAULT);
        return;
    }
    if (MPI_File_get_info(*mfh, &info) != MPI_SUCCESS) return;
    iol_mpi_lib_note_used(c, info);
    MPI_Info_free(&info);
}

static void close_dataset(struct h5_file *h)
{
    if (h->space >= 0) H5Sclose(h->space);
    if (h->dset >= 0) H5Dclose(h->dset);
    h->space = h->dset = -1;
    h->seg = -1;
}

static void release(struct h5_file *h)
{
    close_dataset(h);
    if (h->mem >= 0) H5Sclose(h->mem);
    if (h->dxpl >= 0) H5Pclose(h->dxpl);
    if (h->fid >= 0) H5Fclose(h->fid);
    free(h);
}

static int h5_open(struct iol_bctx *ctx, struct iol_file *f, const char *path, int flags, mode_t mode,
                   struct iol_err *err)
{
    (void)mode;   /* HDF5 creates files as MPI-IO does: 0666 less the umask */
    struct iol_mpi_lib *c = iol_mpi_lib_of(ctx);
    f->ctx = ctx;
    f->fd = -1;
    f->flags = flags;
    f->priv = NULL;
    if (flags & IOL_O_DIRECT) return iol_err_set(err, IOL_ERR_USAGE, "-a HDF5: O_DIRECT is not possible");
    struct h5_file *h = calloc(1, sizeof *h);
    if (!h) return iol_err_errno(err, IOL_ERR_RUNTIME, ENOMEM, "open %s", path);
    h->fid = h->dxpl = h->mem = h->dset = h->space = -1;
    h->seg = -1;
    h->writing = (flags & IOL_O_WRITE) != 0;
    snprintf(h->path, sizeof h->path, "%s", path);

    hid_t fapl = make_fapl(c, path, err);
    if (fapl < 0) {
        free(h);
        return -1;
    }
    const struct iol_mpi_opts *m = &c->opts.mpi;
    if (m->show_hints && m->hints_out && iol_mpi_lib_rank(c) == 0)
        iol_hints_print(m->hints_out, "hints passed to access property list", &c->passed);
    if (flags & IOL_O_CREATE) {
        hid_t fcpl = H5Pcreate(H5P_FILE_CREATE);
        if (fcpl >= 0 && H5Pset_sizes(fcpl, sizeof(hsize_t), sizeof(hsize_t)) >= 0)
            h->fid = H5Fcreate(path, H5F_ACC_TRUNC, fcpl, fapl);
        if (fcpl >= 0) H5Pclose(fcpl);
    } else {
        h->fid = H5Fopen(path, h->writing ? H5F_ACC_RDWR : H5F_ACC_RDONLY, fapl);
    }
    if (h->fid < 0) {
        H5Pclose(fapl);
        free(h);
        return h5_fail(err, flags & IOL_O_CREATE ? "create" : "open", path);
    }
    note_hints_used(c, h->fid, fapl);
    H5Pclose(fapl);
    if (m->show_hints && m->hints_out && iol_mpi_lib_rank(c) == 0 && c->have_used)
        iol_hints_print(m->hints_out, "hints returned from opened file", &c->used);

    h->dxpl = H5Pcreate(H5P_DATASET_XFER);
    if (h->dxpl < 0 || H5Pset_dxpl_mpio(h->dxpl, m->collective ? H5FD_MPIO_COLLECTIVE : H5FD_MPIO_INDEPENDENT) < 0) {
        h5_fail(err, "transfer properties for", path);
        release(h);
        return -1;
    }
    f->priv = h;
    return 0;
}

static int h5_close(struct iol_bctx *ctx, struct iol_file *f, struct iol_err *err)
{
    (void)ctx;
    struct h5_file *h = f->priv;
    if (!h) return 0;
    close_dataset(h);
    if (h->mem >= 0) H5Sclose(h->mem);
    if (h->dxpl >= 0) H5Pclose(h->dxpl);
    herr_t rc = H5Fclose(h->fid);
    f->priv = NULL;
    char path[sizeof h->path];
    snprintf(path, sizeof path, "%s", h->path);
    free(h);
    return rc < 0 ? h5_fail(err, "close", path) : 0;
}

/* Makes segment `seg`'s dataset the current one: created when writing, opened when reading. */
static int use_segment(struct iol_mpi_lib *c, struct h5_file *h, int64_t seg, struct iol_err *err)
{
    const struct iol_mpi_opts *m = &c->opts.mpi;
    char name[64];
    close_dataset(h);
    /* IOR's name: the data set id (0: one shared data set per segment) and the segment's suffix. */
    snprintf(name, sizeof name, "Dataset-%04d.%04" PRId64, 0, seg);
    if (h->writing) {
        hsize_t dims = (hsize_t)(m->block / ELEM * (m->file_per_proc ? 1u : (uint64_t)m->nranks));
        hid_t space = H5Screate_simple(1, &dims, NULL);
        hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
        if (space >= 0 && dcpl >= 0 && (!c->opts.hdf5.no_fill || H5Pset_fill_time(dcpl, H5D_FILL_TIME_NEVER) >= 0))
            h->dset = H5Dcreate2(h->fid, name, H5T_NATIVE_LLONG, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
        if (dcpl >= 0) H5Pclose(dcpl);
        if (space >= 0) H5Sclose(space);
    } else {
        h->dset = H5Dopen2(h->fid, name, H5P_DEFAULT);
    }
    if (h->dset < 0 || (h->space = H5Dget_space(h->dset)) < 0) {
        char what[96];
        snprintf(what, sizeof what, "%s data set %s in", h->writing ? "create" : "open", name);
        close_dataset(h);
        return h5_fail(err, what, h->path);
    }
    h->seg = seg;
    return 0;
}

/* One transfer. Returns 0, or -1 with err set (HDF5's failures are the call's, with HDF5's reason). */
static int transfer(struct iol_mpi_lib *c, struct iol_req *r, struct iol_err *err)
{
    struct h5_file *h = r->file->priv;
    const struct iol_mpi_opts *m = &c->opts.mpi;
    uint64_t seg_bytes = m->block * (m->file_per_proc ? 1u : (uint64_t)m->nranks);
    int64_t seg = (int64_t)(r->offset / seg_bytes);
    hsize_t start = (hsize_t)(r->offset % seg_bytes / ELEM), count = (hsize_t)(r->len / ELEM);
    if (r->offset % ELEM || r->len % ELEM || r->len == 0)
        return iol_err_set(err, IOL_ERR_RUNTIME, "-a HDF5: transfer of %zu bytes at offset %" PRIu64 " is not in "
                           "whole 8-byte elements", r->len, r->offset);
    if (seg != h->seg && use_segment(c, h, seg, err)) return -1;
    if (h->mem < 0 || h->mem_elems != count) {
        if (h->mem >= 0) H5Sclose(h->mem);
        h->mem = H5Screate_simple(1, &count, NULL);
        h->mem_elems = count;
        if (h->mem < 0) return h5_fail(err, "memory space for", h->path);
    }
    if (H5Sselect_hyperslab(h->space, H5S_SELECT_SET, &start, NULL, &count, NULL) < 0)
        return h5_fail(err, "select hyperslab in", h->path);
    herr_t rc = r->op == IOL_IO_WRITE ? H5Dwrite(h->dset, H5T_NATIVE_LLONG, h->mem, h->space, h->dxpl, r->buf)
                                      : H5Dread(h->dset, H5T_NATIVE_LLONG, h->mem, h->space, h->dxpl, r->buf);
    if (rc < 0) {
        char what[64];
        snprintf(what, sizeof what, "%s at offset %" PRIu64 " of", r->op == IOL_IO_WRITE ? "write" : "read", r->offset);
        return h5_fail(err, what, h->path);
    }
    return 0;
}

static int h5_submit(struct iol_bctx *ctx, struct iol_req **reqs, int n, struct iol_err *err)
{
    return iol_mpi_lib_submit(ctx, reqs, n, transfer, err);
}

static int h5_fsync(struct iol_bctx *ctx, struct iol_file *f, struct iol_err *err)
{
    (void)ctx;
    struct h5_file *h = f->priv;
    if (h && H5Fflush(h->fid, H5F_SCOPE_LOCAL) < 0) return h5_fail(err, "flush", h->path);
    return 0;
}

static void h5_describe(const struct iol_bctx *ctx, struct iol_json *j)
{
    const struct iol_mpi_lib *c = iol_mpi_lib_of(ctx);
    unsigned maj = 0, min = 0, rel = 0;
    char library[48];
    H5get_libversion(&maj, &min, &rel);
    snprintf(library, sizeof library, "HDF5 %u.%u.%u (Parallel)", maj, min, rel);   /* IOR's apiVersion */
    iol_mpi_lib_describe(c, library, j);
    iol_json_kv_bool(j, "collective_metadata", c->opts.hdf5.collective_metadata);
    iol_json_kv_uint(j, "alignment", c->opts.hdf5.alignment ? c->opts.hdf5.alignment : 1);
    iol_json_kv_bool(j, "no_fill", c->opts.hdf5.no_fill);
}

const struct iol_backend iol_backend_hdf5 = {
    .name = "hdf5",
    .description = "IOR's HDF5: parallel HDF5 over MPI-IO, a dataset per segment (-c collective transfers; "
                   "each request completes in submit)",
    .ctx_open = h5_ctx_open,
    .ctx_open_opts = h5_ctx_open_opts,
    .ctx_close = iol_mpi_lib_ctx_close,
    .open = h5_open,
    .close = h5_close,
    .submit = h5_submit,
    .reap = iol_sync_reap,
    .fsync = h5_fsync,
    .evict = NULL,
    .stat = iol_posix_stat,
    .unlink = iol_posix_unlink,
    .mkdir = iol_posix_mkdir,
    .rmdir = iol_posix_rmdir,
    .describe = h5_describe,
    .does_io = 1,
    .completes_in_submit = 1,
    .needs_mpi = 1,
    .collective_open = 1,
    .collective_segments = 1,
};
