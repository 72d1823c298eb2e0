/* comm_mpi.c — the "mpi" communicator over a private duplicate of MPI_COMM_WORLD.
 *
 * Compiled only when CMake found MPI (IOLENS_HAVE_MPI). Errors on our communicator return to us
 * (MPI_ERRORS_RETURN) instead of killing the job inside MPI, so a failed collective comes back as -1 and
 * the workload can stop and report, as with the local communicator. */
#define _GNU_SOURCE
#include "comm.h"

#include <limits.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* MPI counts are int. Chunks of 1 GiB stay far from INT_MAX and cost nothing measurable against the
 * transfer itself. Overridable so a test build can exercise the chunked paths with small buffers. */
#ifndef IOL_MPI_CHUNK_BYTES
#define IOL_MPI_CHUNK_BYTES ((size_t)1 << 30)
#endif

struct mpi_impl {
    MPI_Comm comm;
    int we_initialized;      /* finalize only what we initialised: a host program may own MPI */
};

static MPI_Comm comm_of(const struct iol_comm *c)
{
    return ((const struct mpi_impl *)c->impl)->comm;
}

static int mpi_barrier(struct iol_comm *c)
{
    return MPI_Barrier(comm_of(c)) == MPI_SUCCESS ? 0 : -1;
}

static int mpi_allreduce(struct iol_comm *c, const void *in, void *out, size_t count, enum iol_dtype dt,
                         enum iol_redop op)
{
    MPI_Datatype type;
    switch (dt) {
    case IOL_DT_U64: type = MPI_UINT64_T; break;
    case IOL_DT_I64: type = MPI_INT64_T; break;
    case IOL_DT_F64: type = MPI_DOUBLE; break;
    default: return -1;
    }
    MPI_Op mop;
    switch (op) {
    case IOL_OP_SUM: mop = MPI_SUM; break;
    case IOL_OP_MIN: mop = MPI_MIN; break;
    case IOL_OP_MAX: mop = MPI_MAX; break;
    default: return -1;
    }
    const size_t esize = 8;
    const size_t per_chunk = IOL_MPI_CHUNK_BYTES / esize;
    for (size_t done = 0; done < count;) {
        size_t n = count - done < per_chunk ? count - done : per_chunk;
        unsigned char *o = (unsigned char *)out + done * esize;
        /* MPI forbids aliased send and receive buffers; MPI_IN_PLACE is its way of saying in == out. */
        const void *send = in == out ? MPI_IN_PLACE : (const unsigned char *)in + done * esize;
        if (MPI_Allreduce(send, o, (int)n, type, mop, comm_of(c)) != MPI_SUCCESS)
            return -1;
        done += n;
    }
    return 0;
}

static int mpi_gather(struct iol_comm *c, const void *in, size_t bytes, void *out, int root)
{
    MPI_Comm comm = comm_of(c);
    if (bytes <= IOL_MPI_CHUNK_BYTES)
        return MPI_Gather(in, (int)bytes, MPI_BYTE, out, (int)bytes, MPI_BYTE, root, comm) == MPI_SUCCESS ? 0 : -1;
    /* Larger than an int count: gather chunk by chunk. Chunk k of rank r lands at out + r*bytes + k*chunk,
     * so the root receives through a type of one chunk whose extent is a whole rank's share. */
    for (size_t off = 0; off < bytes;) {
        size_t n = bytes - off < IOL_MPI_CHUNK_BYTES ? bytes - off : IOL_MPI_CHUNK_BYTES;
        MPI_Datatype chunk = MPI_DATATYPE_NULL, strided = MPI_DATATYPE_NULL;
        int ok = 1;
        if (c->rank == root) {
            ok = MPI_Type_contiguous((int)n, MPI_BYTE, &chunk) == MPI_SUCCESS &&
                 MPI_Type_create_resized(chunk, 0, (MPI_Aint)bytes, &strided) == MPI_SUCCESS &&
                 MPI_Type_commit(&strided) == MPI_SUCCESS;
        }
        /* A root that could not build its type still takes part (receiving nothing) so that the senders
         * are not left waiting for it; it then reports the failure. */
        int rc = MPI_Gather((const unsigned char *)in + off, (int)n, MPI_BYTE,
                            c->rank == root && ok ? (unsigned char *)out + off : NULL, ok ? 1 : 0,
                            ok ? strided : MPI_BYTE, root, comm);
        if (chunk != MPI_DATATYPE_NULL)
            MPI_Type_free(&chunk);
        if (strided != MPI_DATATYPE_NULL)
            MPI_Type_free(&strided);
        if (rc != MPI_SUCCESS || !ok)
            return -1;
        off += n;
    }
    return 0;
}

static int mpi_bcast(struct iol_comm *c, void *buf, size_t bytes, int root)
{
    for (size_t off = 0; off < bytes;) {
        size_t n = bytes - off < IOL_MPI_CHUNK_BYTES ? bytes - off : IOL_MPI_CHUNK_BYTES;
        if (MPI_Bcast((unsigned char *)buf + off, (int)n, MPI_BYTE, root, comm_of(c)) != MPI_SUCCESS)
            return -1;
        off += n;
    }
    return 0;
}

__attribute__((noreturn)) static void mpi_abort(struct iol_comm *c, int code)
{
    /* Same codes as the local communicator: an abort never reads as an ordinary 0..2 status. */
    int status = code < 3 ? 3 : code > 255 ? 255 : code;
    fflush(NULL);
    MPI_Abort(comm_of(c), status);
    _exit(status);   /* MPI_Abort does not return; the compiler cannot know that */
}

int iol_mpi_available(void)
{
    return 1;
}

static int mpi_fail(struct iol_err *err, int rc, const char *what)
{
    char text[MPI_MAX_ERROR_STRING];
    int len = 0;
    if (MPI_Error_string(rc, text, &len) != MPI_SUCCESS)
        snprintf(text, sizeof text, "MPI error %d", rc);
    return iol_err_set(err, IOL_ERR_RUNTIME, "%s: %s", what, text);
}

int iol_comm_mpi_init(int *argc, char ***argv, struct iol_comm **out, struct iol_err *err)
{
    *out = NULL;
    int inited = 0, rc;
    MPI_Initialized(&inited);
    if (!inited) {
        rc = MPI_Init(argc, argv);
        if (rc != MPI_SUCCESS)
            return iol_err_set(err, IOL_ERR_RUNTIME, "MPI_Init failed (error %d)", rc);
    }
    struct iol_comm *c = calloc(1, sizeof *c);
    struct mpi_impl *mi = calloc(1, sizeof *mi);
    if (c == NULL || mi == NULL) {
        free(c);
        free(mi);
        return iol_err_set(err, IOL_ERR_RUNTIME, "MPI communicator: out of memory");
    }
    mi->we_initialized = !inited;
    /* A private communicator: our collectives cannot match messages of a host program using WORLD. */
    rc = MPI_Comm_dup(MPI_COMM_WORLD, &mi->comm);
    if (rc != MPI_SUCCESS) {
        free(c);
        free(mi);
        return mpi_fail(err, rc, "MPI_Comm_dup");
    }
    MPI_Comm_set_errhandler(mi->comm, MPI_ERRORS_RETURN);
    MPI_Comm_rank(mi->comm, &c->rank);
    MPI_Comm_size(mi->comm, &c->size);
    c->kind = "mpi";
    c->barrier = mpi_barrier;
    c->allreduce = mpi_allreduce;
    c->gather = mpi_gather;
    c->bcast = mpi_bcast;
    c->abort = mpi_abort;
    c->impl = mi;
    /* nodes and tasks_per_node stay 0 until iol_comm_setup measures them: guessing would be wrong on
     * every multi-node run. */
    *out = c;
    return 0;
}

void iol_comm_mpi_finalize(struct iol_comm *c)
{
    if (c == NULL)
        return;
    struct mpi_impl *mi = c->impl;
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) {
        MPI_Comm_free(&mi->comm);
        if (mi->we_initialized)
            MPI_Finalize();
    }
    free(mi);
    free(c);
}
