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
#include <time.h>
#include <unistd.h>

#include "../common/interrupt.h"

/* MPI counts are int. Chunks of 1 GiB stay far from INT_MAX and cost nothing measurable against the
 * transfer itself. Overridable so a test build can exercise the chunked paths with small buffers. */
#ifndef IOL_MPI_CHUNK_BYTES
#define IOL_MPI_CHUNK_BYTES ((size_t)1 << 30)
#endif

/* Signals between ranks (see poll_interrupt in comm.h): one int message, on a communicator of its own so it
 * can never match a collective's traffic. Every rank keeps one receive posted; a rank whose own handler
 * recorded a signal sends it once to every other rank. At the end the ranks count the messages sent and
 * receive every one addressed to them, so none is left unmatched when MPI is finalised. */
#define SIGNAL_TAG 15
#define POLL_EVERY_NS 2000000   /* look at the network at most every 2 ms */

struct mpi_impl {
    MPI_Comm comm;           /* the whole job: signals and the end */
    MPI_Comm work;           /* the ranks taking part (comm, or its first -N ranks): every collective */
    int world_size;
    int we_initialized;      /* finalize only what we initialised: a host program may own MPI */
    MPI_Comm sigcomm;
    MPI_Request recv;
    int recv_done, sig_in, sent, sig_out;
    MPI_Request *sends;
    int64_t last_poll_ns;
};

static MPI_Comm comm_of(const struct iol_comm *c)
{
    return ((const struct mpi_impl *)c->impl)->work;
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

static int64_t coarse_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void mpi_poll_interrupt(struct iol_comm *c)
{
    struct mpi_impl *mi = c->impl;
    int own = iol_interrupt_received();
    /* Our own signal goes out at once; looking for theirs is rate-limited. */
    if (own && !mi->sent && mi->sends) {
        mi->sig_out = own;
        for (int r = 0, k = 0; r < mi->world_size; r++)
            if (r != c->rank) MPI_Isend(&mi->sig_out, 1, MPI_INT, r, SIGNAL_TAG, mi->sigcomm, &mi->sends[k++]);
        mi->sent = 1;
    }
    if (mi->recv_done) return;
    int64_t now = coarse_ns();
    if (now - mi->last_poll_ns < POLL_EVERY_NS) return;
    mi->last_poll_ns = now;
    int flag = 0;
    if (MPI_Test(&mi->recv, &flag, MPI_STATUS_IGNORE) == MPI_SUCCESS && flag) {
        mi->recv_done = 1;
        iol_interrupt_note(mi->sig_in);
    }
}

/* Collective, at the end: every signal message sent to this rank is received (the posted receive takes the
 * first), the posted receive is cancelled if none came, and our own sends complete. */
static void drain_signals(struct iol_comm *c)
{
    struct mpi_impl *mi = c->impl;
    if (!mi->sends) return;
    int sent = mi->sent, total = 0;
    if (MPI_Allreduce(&sent, &total, 1, MPI_INT, MPI_SUM, mi->comm) != MPI_SUCCESS) return;
    int expect = total - sent, got = 0;
    if (expect > 0) {
        if (!mi->recv_done) MPI_Wait(&mi->recv, MPI_STATUS_IGNORE);
        mi->recv_done = 1;
        for (got = 1; got < expect; got++) {
            int v = 0;
            MPI_Recv(&v, 1, MPI_INT, MPI_ANY_SOURCE, SIGNAL_TAG, mi->sigcomm, MPI_STATUS_IGNORE);
        }
    } else if (!mi->recv_done) {
        MPI_Cancel(&mi->recv);
        MPI_Wait(&mi->recv, MPI_STATUS_IGNORE);
    }
    if (mi->sent) MPI_Waitall(mi->world_size - 1, mi->sends, MPI_STATUSES_IGNORE);
    free(mi->sends);
    mi->sends = NULL;
    MPI_Comm_free(&mi->sigcomm);
}

int iol_mpi_available(void)
{
    return 1;
}

const void *iol_comm_mpi_handle(const struct iol_comm *c)
{
    /* Only our own communicator has an MPI one behind it: local ranks share a memory region instead. The
     * ranks taking part (-N shrinks it) are the ones that open files together. */
    if (c == NULL || c->kind == NULL || strcmp(c->kind, "mpi") != 0)
        return NULL;
    return &((const struct mpi_impl *)c->impl)->work;
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
    mi->work = mi->comm;
    mi->world_size = c->size;
    /* Without these the run still works; only a signal that reaches one rank alone waits for the phase's end. */
    mi->sends = c->size > 1 ? calloc((size_t)c->size - 1, sizeof *mi->sends) : NULL;
    if (mi->sends && (MPI_Comm_dup(mi->comm, &mi->sigcomm) != MPI_SUCCESS ||
                      MPI_Irecv(&mi->sig_in, 1, MPI_INT, MPI_ANY_SOURCE, SIGNAL_TAG, mi->sigcomm, &mi->recv) !=
                          MPI_SUCCESS)) {
        free(mi->sends);
        mi->sends = NULL;
    }
    if (mi->sends) c->poll_interrupt = mpi_poll_interrupt;
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
        drain_signals(c);
        if (mi->work != mi->comm && mi->work != MPI_COMM_NULL) MPI_Comm_free(&mi->work);
        MPI_Comm_free(&mi->comm);
        if (mi->we_initialized)
            MPI_Finalize();
    }
    free(mi);
    free(c->placement);
    free(c);
}

int iol_comm_mpi_shrink(struct iol_comm *c, int n, int *takes_part, struct iol_err *err)
{
    struct mpi_impl *mi = c->impl;
    MPI_Comm sub = MPI_COMM_NULL;
    int mine = c->rank < n;
    int rc = MPI_Comm_split(mi->comm, mine ? 0 : MPI_UNDEFINED, c->rank, &sub);
    if (rc != MPI_SUCCESS) return mpi_fail(err, rc, "MPI_Comm_split (-N)");
    *takes_part = mine;
    if (!mine) return 0;
    MPI_Comm_set_errhandler(sub, MPI_ERRORS_RETURN);
    mi->work = sub;
    MPI_Comm_size(sub, &c->size);
    return 0;
}
