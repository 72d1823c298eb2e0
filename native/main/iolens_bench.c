/* iolens_bench.c — the engine's command line: parse, check, then run the workload on local processes or
 * under MPI. Only this file prints errors and chooses exit statuses. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "backend/backend.h"
#include "comm/comm.h"
#include "common/clock.h"
#include "common/interrupt.h"
#include "common/options.h"
#include "workload/ior.h"
#include "workload/run_doc.h"
#include "workload/run_info.h"

struct ior_job {
    struct ior_cfg cfg;
    struct iol_run_info info;
};

static int usage_error(const struct iol_err *err)
{
    fprintf(stderr, "iolens-bench: error: %s\n", err->msg);
    return IOL_ERR_USAGE;
}

static void print_version(void)
{
    printf("iolens-bench %s (mpi=%s liburing=%s)\n", IOLENS_VERSION, IOLENS_HAVE_MPI ? "yes" : "no",
           IOLENS_HAVE_URING ? "yes" : "no");
}

static void print_usage(FILE *fp)
{
    fprintf(fp, "usage: iolens-bench WORKLOAD [options]\n"
                "       iolens-bench --version\n\n"
                "workloads:\n"
                "  ior     bulk transfers to a shared file or a file per process, with IOR's flags\n\n"
                "'iolens-bench WORKLOAD --help' lists a workload's options.\n");
}

static int rank_main(struct iol_comm *comm, void *arg)
{
    struct ior_job *job = arg;
    int rc = ior_run(&job->cfg, comm, &job->info);
    fflush(stdout);
    fflush(stderr);
    return rc;
}

static int wants_help(int argc, char **argv)
{
    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "--")) return 0;
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) return 1;
    }
    return 0;
}

/* Rank 0 checks every rank's paths (a stat per file, no I/O) and tells the others, so a refusal is one
 * message and nothing has been touched. */
static int check_paths_collective(struct iol_comm *c, const struct ior_cfg *cfg, struct iol_err *err)
{
    struct iol_err e = {0, ""};
    if (c->rank == 0) ior_check_paths(cfg, c->size, 0, c->size, &e);
    if (c->bcast(c, &e, sizeof e, 0)) return iol_err_set(err, IOL_ERR_RUNTIME, "communicator failed");
    if (e.code) {
        *err = e;
        return -1;
    }
    return 0;
}

static int run_mpi(struct ior_job *job, int argc, char **argv)
{
    struct iol_comm *comm = NULL;
    struct iol_err err = {0, ""};
    if (iol_comm_mpi_init(&argc, &argv, &comm, &err)) return usage_error(&err);
    iol_interrupt_install();
    int rc = IOL_OK;
    if (ior_validate(&job->cfg, comm->size, &err) || check_paths_collective(comm, &job->cfg, &err)) {
        if (comm->rank == 0) usage_error(&err);
        rc = err.code;
    } else if (!job->info.check_only) {
        rc = ior_run(&job->cfg, comm, &job->info);
    }
    iol_comm_mpi_finalize(comm);
    return rc;
}

static int run_local(struct ior_job *job)
{
    struct iol_err err = {0, ""};
    int np = (int)job->info.np;
    if (ior_validate(&job->cfg, np, &err) || ior_check_paths(&job->cfg, np, 0, np, &err)) return usage_error(&err);
    if (job->info.check_only) return IOL_OK;

    struct iol_local_outcome out;
    fflush(stdout);
    if (iol_local_run(np, rank_main, job, &out, &err)) {
        fprintf(stderr, "iolens-bench: error: %s\n", err.msg);
        return IOL_ERR_RUNTIME;
    }
    if (out.status <= IOL_ERR_USAGE) return out.status;

    /* A rank died (signal or abort) before the job could write its document: write one that says so. */
    char msg[256];
    if (out.signal)
        snprintf(msg, sizeof msg, "rank %d was killed by signal %d (%s)", out.failed_rank, out.signal,
                 strsignal(out.signal));
    else
        snprintf(msg, sizeof msg, "rank %d aborted with status %d", out.failed_rank, out.status);
    fprintf(stderr, "iolens-bench: error: %s\n", msg);
    if (job->info.json_path[0]) {
        iol_doc_write_failure(job->info.json_path, "ior", &job->info, np, msg, out.failed_rank, &err);
        if (err.code) fprintf(stderr, "iolens-bench: error: %s\n", err.msg);
    }
    return IOL_ERR_RUNTIME;
}

static int main_ior(int argc, char **argv)
{
    /* Large config structs: keep them off the stack of every forked rank. */
    struct ior_job *job = calloc(1, sizeof *job);
    if (!job) return IOL_ERR_RUNTIME;
    struct iol_optset sets[2] = {{ior_options, &job->cfg}, {iol_run_options, &job->info}};
    struct iol_err err = {0, ""};

    if (wants_help(argc - 2, argv + 2)) {
        printf("usage: iolens-bench ior [options]\n\nIOR options (same flags and meanings as IOR):\n");
        iol_opts_help(sets, 1, stdout);
        printf("\nengine options:\n");
        iol_opts_help(sets + 1, 1, stdout);
        free(job);
        return IOL_OK;
    }
    if (iol_opts_defaults(sets, 2, &err) || iol_opts_parse_argv(sets, 2, argc - 2, argv + 2, NULL, NULL, &err)) {
        free(job);
        return usage_error(&err);
    }
    job->info.argc = argc;
    job->info.argv = argv;
    job->info.start_wall_ns = iol_wall_ns();
    ior_normalize(&job->cfg);

    const char *kind = job->info.comm_kind;
    int use_mpi;
    if (!strcasecmp(kind, "auto")) use_mpi = iol_mpi_launched() && !job->info.check_only;
    else if (!strcasecmp(kind, "mpi")) use_mpi = 1;
    else if (!strcasecmp(kind, "local")) use_mpi = 0;
    else {
        iol_err_set(&err, IOL_ERR_USAGE, "--comm: '%s' is not one of auto, local, mpi", kind);
        free(job);
        return usage_error(&err);
    }
    if (use_mpi && job->info.np != 1) {
        iol_err_set(&err, IOL_ERR_USAGE, "--np: the MPI launcher sets the number of ranks; drop --np");
        free(job);
        return usage_error(&err);
    }
    if (use_mpi && !iol_mpi_available()) {
        iol_err_set(&err, IOL_ERR_USAGE, "--comm: this iolens-bench was built without MPI");
        free(job);
        return usage_error(&err);
    }
    int rc = use_mpi ? run_mpi(job, argc, argv) : run_local(job);
    free(job);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
        print_usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? IOL_ERR_USAGE : IOL_OK;
    }
    if (!strcmp(argv[1], "--version")) {
        print_version();
        return IOL_OK;
    }
    if (!strcmp(argv[1], "ior")) return main_ior(argc, argv);
    fprintf(stderr, "iolens-bench: error: unknown workload '%s' (known: ior)\n", argv[1]);
    return IOL_ERR_USAGE;
}
