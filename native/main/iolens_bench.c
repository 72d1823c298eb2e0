/* iolens_bench.c — the engine's command line: parse, check, then run the workload on local processes or
 * under MPI. Only this file prints errors and chooses exit statuses. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <errno.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backend/backend.h"
#include "comm/comm.h"
#include "common/clock.h"
#include "common/interrupt.h"
#include "common/options.h"
#include "common/pathcheck.h"
#include "main/workloads.h"
#include "git_commit.h"
#include "workload/run_doc.h"
#include "workload/run_info.h"

/* What the forked ranks (or the MPI ranks) need: the workload, its parsed config, the engine options. */
struct job {
    const struct iol_workload *wl;
    void *cfg;
    struct iol_run_info info;
};

static int usage_error(const struct iol_err *err)
{
    fprintf(stderr, "iolens-bench: error: %s\n", err->msg);
    return IOL_ERR_USAGE;
}

static void print_version(void)
{
    printf("iolens-bench %s (mpi=%s liburing=%s libaio=%s hdf5=%s pnetcdf=%s) commit %s\n", IOLENS_VERSION,
           IOLENS_HAVE_MPI ? "yes" : "no", IOLENS_HAVE_URING ? "yes" : "no", IOLENS_HAVE_AIO ? "yes" : "no",
           IOLENS_HAVE_HDF5 ? "yes" : "no", IOLENS_HAVE_PNETCDF ? "yes" : "no", IOLENS_GIT_COMMIT);
}

static void print_usage(FILE *fp)
{
    fprintf(fp, "usage: iolens-bench WORKLOAD [options]\n"
                "       iolens-bench --version\n\n"
                "workloads:\n");
    for (const struct iol_workload *w = iol_workloads; w->name; w++) fprintf(fp, "  %-8s %s\n", w->name, w->summary);
    fprintf(fp, "\n'iolens-bench WORKLOAD --help' lists a workload's options.\n");
}

static int rank_main(struct iol_comm *comm, void *arg)
{
    struct job *job = arg;
    int rc = job->wl->run(job->cfg, comm, &job->info);
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

/* --json FILE must be writable before the run starts: a benchmark that runs for an hour and then cannot
 * write its document has lost its result. The document is written to FILE.tmp.PID beside it and renamed. */
static int check_json_path(const char *path, struct iol_err *err)
{
    if (!path[0] || strcmp(path, "-") == 0) return 0;
    struct stat st;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
        return iol_err_set(err, IOL_ERR_USAGE, "--json: '%s' is a directory (give a file name)", path);
    char dir[IOL_STR_MAX];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (!slash) snprintf(dir, sizeof dir, ".");
    else if (slash == dir) dir[1] = '\0';
    else *slash = '\0';
    char why[IOL_STR_MAX + 64];
    if (iol_dir_problem(dir, why, sizeof why)) return iol_err_set(err, IOL_ERR_USAGE, "--json: %s (for '%s')", why, path);
    if (access(dir, W_OK | X_OK) != 0)
        return iol_err_errno(err, IOL_ERR_USAGE, errno, "--json: cannot create files in '%s'", dir);
    return 0;
}

/* The free space and inode check, unless --no-space-check. */
static int check_space(const struct job *job, int nranks, struct iol_err *err)
{
    if (job->info.no_space_check || !job->wl->check_space) return 0;
    return job->wl->check_space(job->cfg, nranks, err);
}

/* Rank 0 checks every rank's paths (stat calls, no I/O) and tells the others, so a refusal is one message
 * and nothing has been touched. */
static int check_paths_collective(struct iol_comm *c, const struct job *job, struct iol_err *err)
{
    struct iol_err e = {0, ""};
    /* Only rank 0 writes the document: its --json path is the one to check (another node may not have it). */
    if (c->rank == 0 && check_json_path(job->info.json_path, &e) == 0 && job->wl->check_paths(job->cfg, c->size, &e) == 0)
        check_space(job, c->size, &e);
    if (c->bcast(c, &e, sizeof e, 0)) return iol_err_set(err, IOL_ERR_RUNTIME, "communicator failed");
    if (e.code) {
        *err = e;
        return -1;
    }
    return 0;
}

/* IOR's -N: the ranks that take part (the first n of the job); more than the job has runs them all, with
 * IOR's warning. */
static int participants(const struct job *job, int n, int quiet)
{
    int want = job->wl->participants ? job->wl->participants(job->cfg, n) : n;
    if (want > n && !quiet)
        fprintf(stderr, "iolens-bench: warning: -N: more tasks requested (%d) than available (%d), running with %d "
                "tasks\n", want, n, n);
    return want < n ? want : n;
}

static int run_mpi(struct job *job, int argc, char **argv)
{
    struct iol_comm *comm = NULL;
    struct iol_err err = {0, ""};
    if (iol_comm_mpi_init(&argc, &argv, &comm, &err)) return usage_error(&err);
    iol_interrupt_install();
    int rc = IOL_OK;
    int n = participants(job, comm->size, comm->rank != 0), takes_part = 1;
    if (n < comm->size && iol_comm_mpi_shrink(comm, n, &takes_part, &err)) {
        if (comm->rank == 0) usage_error(&err);
        rc = err.code;
    } else if (!takes_part) {
        /* Not one of -N's ranks: nothing to do but end with the job (MPI_Finalize waits for the others). */
    } else if (job->wl->validate(job->cfg, comm->size, &err) || check_paths_collective(comm, job, &err)) {
        if (comm->rank == 0) usage_error(&err);
        rc = err.code;
    } else if (!job->info.check_only) {
        rc = job->wl->run(job->cfg, comm, &job->info);
    }
    iol_comm_mpi_finalize(comm);
    return rc;
}

/* A run that needs MPI ranks (a backend over an MPI library) cannot run on forked local ranks: refused before
 * any I/O. A --check pass is exempt: the front end checks a run it will start under mpirun or srun this way. */
static int refuse_local_mpi(const struct job *job, struct iol_err *err)
{
    char what[IOL_STR_MAX + 8];
    const char *opt = job->wl->needs_mpi ? job->wl->needs_mpi(job->cfg, what, sizeof what) : NULL;
    if (!opt || job->info.check_only) return 0;
    return iol_err_set(err, IOL_ERR_USAGE, "%s: needs MPI ranks, not forked local ones: use --launcher mpirun or "
                       "--launcher srun, or start iolens (or iolens-bench) under mpirun or srun", opt);
}

static int run_local(struct job *job)
{
    struct iol_err err = {0, ""};
    /* -N below --np: only the ranks that take part are started; the others would only wait. */
    int np = participants(job, (int)job->info.np, 0);
    if (job->wl->validate(job->cfg, np, &err) || refuse_local_mpi(job, &err) || check_json_path(job->info.json_path, &err) ||
        job->wl->check_paths(job->cfg, np, &err) || check_space(job, np, &err))
        return usage_error(&err);
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
        iol_doc_write_failure(job->info.json_path, job->wl->name, &job->info, np, msg, out.failed_rank, &err);
        if (err.code) fprintf(stderr, "iolens-bench: error: %s\n", err.msg);
    }
    return IOL_ERR_RUNTIME;
}

static int choose_comm(const struct job *job, int *use_mpi, struct iol_err *err)
{
    const char *kind = job->info.comm_kind;
    if (!strcasecmp(kind, "auto")) *use_mpi = iol_mpi_launched() && !job->info.check_only;
    else if (!strcasecmp(kind, "mpi")) *use_mpi = 1;
    else if (!strcasecmp(kind, "local")) *use_mpi = 0;
    else return iol_err_set(err, IOL_ERR_USAGE, "--comm: '%s' is not one of auto, local, mpi", kind);
    if (*use_mpi && job->info.np != 1)
        return iol_err_set(err, IOL_ERR_USAGE, "--np: the MPI launcher sets the number of ranks; drop --np");
    if (*use_mpi && !iol_mpi_available())
        return iol_err_set(err, IOL_ERR_USAGE, "--comm: this iolens-bench was built without MPI");
    return 0;
}

static int main_workload(const struct iol_workload *wl, int argc, char **argv)
{
    /* Large config structs: keep them off the stack of every forked rank. */
    struct job *job = calloc(1, sizeof *job);
    void *cfg = calloc(1, wl->cfg_size);
    if (!job || !cfg) {
        free(job);
        free(cfg);
        return IOL_ERR_RUNTIME;
    }
    job->wl = wl;
    job->cfg = cfg;
    struct iol_optset sets[2] = {{wl->options, cfg}, {iol_run_options, &job->info}};
    struct iol_err err = {0, ""};
    int rc;

    if (wants_help(argc - 2, argv + 2)) {
        printf("usage: iolens-bench %s [options]\n\n%s options (%s):\n", wl->name, wl->name, wl->summary);
        iol_opts_help(sets, 1, stdout);
        printf("\nengine options:\n");
        iol_opts_help(sets + 1, 1, stdout);
        rc = IOL_OK;
    } else if (iol_opts_defaults(sets, 2, &err) ||
               (wl->parse_argv ? wl->parse_argv(sets, 2, argc - 2, argv + 2, &err)
                               : iol_opts_parse_argv(sets, 2, argc - 2, argv + 2, NULL, NULL, &err))) {
        rc = usage_error(&err);
    } else {
        job->info.argc = argc;
        job->info.argv = argv;
        job->info.start_wall_ns = iol_wall_ns();
        wl->normalize(cfg);
        int use_mpi = 0;
        if (choose_comm(job, &use_mpi, &err)) rc = usage_error(&err);
        else rc = use_mpi ? run_mpi(job, argc, argv) : run_local(job);
    }
    free(cfg);
    free(job);
    return rc;
}

/* `iolens` (the Python front end) names itself in IOLENS_FRONT_END_PID when it starts the engine on this node.
 * Should it die without a word (SIGKILL, an OOM kill), the engine gets SIGTERM and stops as for any stop
 * signal: it removes what it created instead of writing on with nobody to report to. */
static void follow_front_end(void)
{
    const char *v = getenv("IOLENS_FRONT_END_PID");
    if (!v || !*v) return;
    char *end = NULL;
    long pid = strtol(v, &end, 10);
    if (*end || pid <= 0) return;
    /* Its progress and error lines go to a pipe that iolens reads: once iolens is gone, writing them must not
     * kill the engine (SIGPIPE) before it has cleaned up (iol_interrupt_install ignores it too, later). */
    signal(SIGPIPE, SIG_IGN);
    if (prctl(PR_SET_PDEATHSIG, SIGTERM) == 0 && getppid() != (pid_t)pid) raise(SIGTERM);
}

int main(int argc, char **argv)
{
    /* A stop signal is recorded from the first moment, not only once the ranks run: under mpirun a rank
     * killed by one during MPI_Init leaves mpirun hanging (PMIx "UNREACHABLE"). */
    iol_interrupt_install();
    follow_front_end();
    if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
        print_usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? IOL_ERR_USAGE : IOL_OK;
    }
    if (!strcmp(argv[1], "--version")) {
        print_version();
        return IOL_OK;
    }
    for (const struct iol_workload *w = iol_workloads; w->name; w++)
        if (!strcmp(argv[1], w->name)) return main_workload(w, argc, argv);
    fprintf(stderr, "iolens-bench: error: unknown workload '%s' (known:", argv[1]);
    for (const struct iol_workload *w = iol_workloads; w->name; w++) fprintf(stderr, " %s", w->name);
    fprintf(stderr, ")\n");
    return IOL_ERR_USAGE;
}
