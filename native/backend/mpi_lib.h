/* mpi_lib.h — what the backends over an MPI I/O library (hdf5, ncmpi) share: a context that is a completion
 * ring (sync_ring.h) plus the job's communicator, the settings and the hints (mpi_hints.h), and a submit
 * loop for transfers that fail as calls (a library error, with the library's message). MPI builds only. */
#ifndef IOL_MPI_LIB_H
#define IOL_MPI_LIB_H
#include <mpi.h>

#include "mpi_hints.h"
#include "sync_ring.h"

/* The head of a library backend's context (its own struct starts with it); the ring's priv points to it. */
struct iol_mpi_lib {
    struct iol_backend_opts opts;
    MPI_Comm comm;                /* the job's: the ranks of a shared file */
    struct iol_hints passed;      /* given to every open (environment, then -U) */
    struct iol_hints used;        /* what MPI-IO reported for the last file opened */
    int have_used;
};

/* ctx_open_opts of such a backend: refuses settings it cannot have and ranks without MPI (`api` is IOR's
 * name, for messages), reads the hints, opens the ring with `name`, and hangs lib (calloc'd by the caller,
 * size bytes, freed by iol_mpi_lib_ctx_close) on it. On failure frees lib. */
int iol_mpi_lib_ctx_open(struct iol_bctx **out, int queue_depth, const struct iol_backend_opts *opts,
                         const char *name, const char *api, struct iol_mpi_lib *lib, struct iol_err *err);
void iol_mpi_lib_ctx_close(struct iol_bctx *ctx);

static inline struct iol_mpi_lib *iol_mpi_lib_of(const struct iol_bctx *ctx)
{
    return ctx->priv;
}

int iol_mpi_lib_rank(const struct iol_mpi_lib *lib);

/* The hints MPI-IO reports for an open file (MPI_File_get_info's), kept as lib->used. */
void iol_mpi_lib_note_used(struct iol_mpi_lib *lib, MPI_Info info);

/* submit: each request done by `one` (0, or -1 with err set: the call fails, the requests done before it
 * stay reapable), timed as the posix backend times its transfers. */
typedef int (*iol_mpi_lib_xfer)(struct iol_mpi_lib *lib, struct iol_req *r, struct iol_err *err);
int iol_mpi_lib_submit(struct iol_bctx *ctx, struct iol_req **reqs, int n, iol_mpi_lib_xfer one,
                       struct iol_err *err);

/* The members every library backend's describe() writes: library ("HDF5 1.10.8"), communicator, transfer
 * mode, hints file, hints passed and in effect (as the mpiio backend names them). */
void iol_mpi_lib_describe(const struct iol_mpi_lib *lib, const char *library, struct iol_json *j);

#endif
