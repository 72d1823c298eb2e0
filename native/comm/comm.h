/* comm.h — the communicator: what ranks need from each other.
 *
 * Two implementations give the same results: "local" (N forked processes on this node, sharing a memory
 * region with a process-shared barrier) and "mpi". Collectives are blocking and must be called by every
 * rank in the same order, as in MPI. A collective returns 0, or -1 if the communicator is broken (a peer
 * died); workloads then stop and report. abort() ends every rank and does not return. */
#ifndef IOL_COMM_H
#define IOL_COMM_H
#include <stddef.h>
#include <stdint.h>
#include "../common/error.h"

enum iol_dtype { IOL_DT_U64, IOL_DT_I64, IOL_DT_F64 };
enum iol_redop { IOL_OP_SUM, IOL_OP_MIN, IOL_OP_MAX };

#define IOL_HOST_MAX 64

/* Consecutive ranks that ran on one host: a node's ranks are one run with block mapping, one run per rank
 * with round-robin. */
struct iol_placement {
    char host[IOL_HOST_MAX];
    int first_rank;
    int ranks;
};

struct iol_comm {
    const char *kind;           /* "local" or "mpi" */
    int rank, size;
    int (*barrier)(struct iol_comm *c);
    /* in and out may be the same buffer; count elements of the dtype */
    int (*allreduce)(struct iol_comm *c, const void *in, void *out, size_t count, enum iol_dtype dt,
                     enum iol_redop op);
    /* root receives size*bytes in rank order into out (out ignored on other ranks) */
    int (*gather)(struct iol_comm *c, const void *in, size_t bytes, void *out, int root);
    int (*bcast)(struct iol_comm *c, void *buf, size_t bytes, int root);
    void (*abort)(struct iol_comm *c, int code) __attribute__((noreturn));
    /* Optional (MPI): passes a signal this process received on to the other ranks, and notes one another
     * rank passed on (interrupt.h), so a rank signalled alone stops the others mid-phase. Cheap enough to
     * call per transfer or item (it looks at the network at most every few ms); rank's main thread only.
     * NULL for local ranks, which share the signal through their shared memory. */
    void (*poll_interrupt)(struct iol_comm *c);
    void *impl;

    /* Filled by iol_comm_setup() */
    char hostname[IOL_HOST_MAX];
    int nodes;                  /* distinct host names */
    int tasks_per_node;         /* ranks on rank 0's node, as IOR counts it */
    int block_mapping;          /* 1: ranks fill a node before the next (rank 1 shares rank 0's host, or one
                                 * rank: IOR's QueryNodeMapping); 0: round-robin (cyclic) over the nodes */
    int64_t clock_offset_ns;    /* this rank's clock minus rank 0's (0 on rank 0's host) */
    int64_t max_abs_clock_offset_ns; /* largest |offset| over all ranks */
    int64_t test_clock_skew_ns; /* tests only (IOLENS_TEST_CLOCK_SKEW_NS): added to this rank's clock readings */
    /* Rank 0 only (NULL elsewhere, or when out of memory): which host each rank ran on, for the document;
     * freed with the communicator. */
    struct iol_placement *placement;
    int placement_runs;
};

/* Collective: learns host names, node count and tasks per node, and aligns clocks: ranks on rank 0's host
 * share its CLOCK_MONOTONIC (offset 0); others measure their offset against rank 0 (median of several
 * barrier-synchronised samples).
 *
 * Test hooks, read here and nowhere else, for tests that need several nodes on one machine: each is a
 * comma-separated list with one entry per rank (rank r takes entry r; a missing or empty entry changes
 * nothing). IOLENS_TEST_HOST replaces the rank's host name; IOLENS_TEST_CLOCK_SKEW_NS adds that many
 * nanoseconds (may be negative) to every clock reading the rank makes through the communicator, as if its
 * clock were that far ahead of rank 0's (give it only to ranks on another "host"). */
int iol_comm_setup(struct iol_comm *c, struct iol_err *err);

/* The node layout from every rank's host name (n records of IOL_HOST_MAX bytes, in rank order; the array is
 * sorted in place). */
struct iol_node_layout {
    int nodes;                  /* distinct names */
    int tasks_on_node0;         /* ranks with rank 0's name */
    int block_mapping;          /* rank 1 has rank 0's name, or n == 1 */
};
void iol_node_layout(char *names, int n, struct iol_node_layout *out);

/* The runs of consecutive ranks on one host in names (n records of IOL_HOST_MAX bytes, in rank order): their
 * number, and the runs themselves in out unless out is NULL (then only counted). */
int iol_placement_runs(const char *names, int n, struct iol_placement *out);

/* A rank's monotonic time expressed on rank 0's clock. */
static inline uint64_t iol_comm_time(const struct iol_comm *c, uint64_t local_ns)
{
    return (uint64_t)((int64_t)local_ns + c->test_clock_skew_ns - c->clock_offset_ns);
}

/* ---- local: fork N processes ------------------------------------------------------------------------
 * iol_local_run forks np children; child i runs fn(comm_i, arg) and exits with its return value. The parent
 * waits for all of them. If a child dies from a signal or exits with a status above 2 (an abort), the parent
 * kills the others. The outcome says what happened so the caller can write an error document. */
struct iol_local_outcome {
    int status;             /* worst child status: 0, 1, 2 as returned by fn; 3+ = aborted or killed */
    int failed_rank;        /* first rank that died or aborted; -1 if none */
    int signal;             /* signal that killed it, 0 if none */
    int rank0_status;       /* exit status of rank 0 (-1 if killed) */
};
typedef int (*iol_rank_fn)(struct iol_comm *c, void *arg);
int iol_local_run(int np, iol_rank_fn fn, void *arg, struct iol_local_outcome *out, struct iol_err *err);

/* ---- mpi -------------------------------------------------------------------------------------------- */
/* True if the environment shows this process was started by an MPI launcher (mpirun, srun, ...). */
int iol_mpi_launched(void);
/* True if this build supports MPI. */
int iol_mpi_available(void);
/* MPI_Init + a comm for MPI_COMM_WORLD; iol_comm_mpi_finalize at the end. */
int iol_comm_mpi_init(int *argc, char ***argv, struct iol_comm **out, struct iol_err *err);
void iol_comm_mpi_finalize(struct iol_comm *c);
/* Collective over the whole job: from now on the communicator holds only ranks 0..n-1 (IOR's -N); their
 * rank numbers stay. *takes_part is 0 on the other ranks, whose communicator must then only be finalized. */
int iol_comm_mpi_shrink(struct iol_comm *c, int n, int *takes_part, struct iol_err *err);
/* The MPI communicator behind an "mpi" comm (a private duplicate of MPI_COMM_WORLD), as a const MPI_Comm *,
 * for the backends over an MPI library (backend.h: iol_mpi_opts.comm); NULL for local ranks and in a build
 * without MPI. Valid until iol_comm_mpi_finalize. */
const void *iol_comm_mpi_handle(const struct iol_comm *c);

#endif
