/* mpi_lib.c — the shared part of the backends over an MPI I/O library (see mpi_lib.h). */
#define _GNU_SOURCE
#include "mpi_lib.h"

#include <errno.h>
#include <stdlib.h>
#include <time.h>

static inline uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int iol_mpi_lib_ctx_open(struct iol_bctx **out, int queue_depth, const struct iol_backend_opts *opts,
                         const char *name, const char *api, struct iol_mpi_lib *lib, struct iol_err *err)
{
    *out = NULL;
    int rc = 0;
    if (!lib)
        rc = iol_err_errno(err, IOL_ERR_RUNTIME, ENOMEM, "%s backend", name);
    else if (!opts->mpi.comm)
        rc = iol_err_set(err, IOL_ERR_USAGE, "-a %s: needs MPI ranks (run under mpirun or srun, or --launcher "
                         "mpirun); forked local ranks have no MPI communicator", api);
    else if (opts->sqthread_poll || opts->hipri)
        rc = iol_err_set(err, IOL_ERR_USAGE, "%s backend: %s is not supported", name,
                         opts->sqthread_poll ? "sqthread_poll" : "hipri");
    if (!rc) {
        lib->opts = *opts;
        lib->comm = *(const MPI_Comm *)opts->mpi.comm;
        rc = iol_hints_collect(opts->mpi.hints_file, &lib->passed, err);
    }
    if (!rc) rc = iol_sync_ctx_open(out, queue_depth, name, err);
    if (rc) {
        if (lib) iol_hints_free(&lib->passed);
        free(lib);
        return -1;
    }
    (*out)->priv = lib;
    return 0;
}

void iol_mpi_lib_ctx_close(struct iol_bctx *ctx)
{
    if (!ctx) return;
    struct iol_mpi_lib *lib = ctx->priv;
    if (lib) {
        iol_hints_free(&lib->passed);
        iol_hints_free(&lib->used);
        free(lib);
    }
    iol_sync_ctx_close(ctx);
}

int iol_mpi_lib_rank(const struct iol_mpi_lib *lib)
{
    int r = 0;
    MPI_Comm_rank(lib->comm, &r);
    return r;
}

void iol_mpi_lib_note_used(struct iol_mpi_lib *lib, MPI_Info info)
{
    struct iol_err ignore = {0, ""};
    lib->have_used = iol_hints_from_info(info, &lib->used, &ignore) == 0;
}

int iol_mpi_lib_submit(struct iol_bctx *ctx, struct iol_req **reqs, int n, iol_mpi_lib_xfer one, struct iol_err *err)
{
    struct iol_mpi_lib *lib = ctx->priv;
    int room = iol_sync_room(ctx);
    int take = n < room ? n : room;
    uint64_t prev = 0;
    for (int i = 0; i < take; i++) {
        struct iol_req *r = reqs[i];
        int timed = !(r->flags & IOL_REQ_UNTIMED);
        if (timed) {
            if (prev) r->t_submit_ns = prev;
            else if (!(r->flags & IOL_REQ_SUBMIT_STAMPED)) r->t_submit_ns = now_ns();
        }
        r->error = 0;
        r->result = 0;
        if (one(lib, r, err)) {
            iol_sync_push(ctx, reqs, i);
            return -1;
        }
        r->result = (int64_t)r->len;
        if (timed) r->t_done_ns = prev = now_ns();
        else prev = 0;
    }
    iol_sync_push(ctx, reqs, take);
    return take;
}

void iol_mpi_lib_describe(const struct iol_mpi_lib *lib, const char *library, struct iol_json *j)
{
    /* The members mpiio's describe() writes too, so one reader serves every MPI backend's document. */
    const struct iol_mpi_opts *m = &lib->opts.mpi;
    iol_json_kv_string(j, "library", library);
    iol_json_kv_string(j, "communicator", m->file_per_proc ? "MPI_COMM_SELF" : "MPI_COMM_WORLD");
    iol_json_kv_string(j, "transfer", m->collective ? "collective" : "independent");
    iol_json_key(j, "hints_file");
    iol_json_string(j, m->hints_file && m->hints_file[0] ? m->hints_file : NULL);
    iol_hints_json(j, "hints_passed", &lib->passed);
    /* What MPI-IO reported for the last file opened: the hints in effect. */
    if (lib->have_used) {
        iol_hints_json(j, "hints", &lib->used);
    } else {
        iol_json_key(j, "hints");
        iol_json_null(j);
    }
}
