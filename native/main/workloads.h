/* workloads.h — the engine's workloads as data: the command line finds a workload by name and drives it
 * through these functions, so adding one is a table entry, not another main(). */
#ifndef IOL_WORKLOADS_H
#define IOL_WORKLOADS_H
#include <stddef.h>

#include "comm/comm.h"
#include "common/options.h"
#include "workload/run_info.h"

struct iol_workload {
    const char *name;
    const char *summary;
    const struct iol_option *options;
    size_t cfg_size;
    void (*normalize)(void *cfg);                                            /* implied settings */
    int (*validate)(const void *cfg, int nranks, struct iol_err *err);       /* options together, no I/O */
    int (*check_paths)(const void *cfg, int nranks, struct iol_err *err);    /* every rank's paths, no I/O */
    /* Optional: what the run will write (bytes, files) against the free space and inodes of each file system,
     * no I/O; skipped with --no-space-check. */
    int (*check_space)(const void *cfg, int nranks, struct iol_err *err);
    int (*run)(const void *cfg, struct iol_comm *comm, const struct iol_run_info *info);  /* collective */
    /* Optional: parses the command line itself (find: a DIR argument, find's one-dash predicates);
     * NULL = the options tables alone, no positional arguments. sets[0].cfg is the workload's config. */
    int (*parse_argv)(const struct iol_optset *sets, int nsets, int argc, char **argv, struct iol_err *err);
    /* Optional: the option that makes this run need MPI ranks (a backend over an MPI library: "-a MPIIO"),
     * written into buf; NULL when forked local ranks can run it. */
    const char *(*needs_mpi)(const void *cfg, char *buf, size_t len);
};

/* Terminated by an entry with name == NULL. */
extern const struct iol_workload iol_workloads[];

#endif
