/* fio.c — runs a fio job list: groups one after another (stonewall starts a group), the jobs of a group
 * together, each job's numjobs instances as threads on every rank, all released at once after the files are
 * laid out and the cache prepared. Then every rank's figures are combined into one result per job. */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "../common/clock.h"
#include "../common/fstype.h"
#include "fio_report.h"
#include "run_doc.h"
#include "run_sync.h"
#include "../common/interrupt.h"

struct thread_arg {
    struct fio_inst *in;
    const char **paths;
    int lay;                    /* lay out / prepare its own files before the start */
    struct fio_group_run *g;
    /* The thread's CPU clock: its whole CPU time when it ended, and what it had used when the group's window
     * opened (read by the main thread), so that the window's CPU of the threads themselves is known exactly
     * and the rest of the process's (kernel workers, the main thread) is what is left. Under g->m. */
    clockid_t clock;
    int have_clock, done;
    uint64_t cpu_end_ns, cpu_base_ns;
};

/* The start gate: threads report ready, then wait for `go`. A counter and a condition rather than a
 * pthread barrier, so a group whose threads could not all be created still releases the ones that were. */
struct fio_group_run {
    pthread_mutex_t m;
    pthread_cond_t cv;
    int ready, go, finished;
    int abort;                  /* set by the main thread before `go` when the group must not run */
    struct fio_times times[FIO_MAX_JOBS];   /* by job index: each job has its own ramp and runtime, as in fio */
};

static uint64_t clock_ns(clockid_t id)
{
    struct timespec ts;
    if (clock_gettime(id, &ts)) return 0;
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The gate: reports ready, waits for the release; the job's clock points, or NULL when the group aborts. */
static const struct fio_times *wait_start(void *arg)
{
    struct thread_arg *a = arg;
    struct fio_group_run *g = a->g;
    pthread_mutex_lock(&g->m);
    g->ready++;
    pthread_cond_broadcast(&g->cv);
    while (!g->go) pthread_cond_wait(&g->cv, &g->m);
    pthread_mutex_unlock(&g->m);
    return g->abort ? NULL : &g->times[a->in->plan->index];
}

static void *instance_thread(void *arg)
{
    struct thread_arg *a = arg;
    struct fio_inst *in = a->in;
    struct fio_group_run *g = a->g;
    int evicted = 1;
    if (a->lay) fio_prepare_files(in->plan, (const char *const *)a->paths, 1, 1, &evicted, in->created, &in->err);
    in->evicted = evicted;
    if (in->err.code) wait_start(a);
    else fio_instance_run(in, (const char *const *)a->paths, wait_start, a);
    uint64_t cpu = clock_ns(CLOCK_THREAD_CPUTIME_ID);
    pthread_mutex_lock(&g->m);
    a->cpu_end_ns = cpu;
    a->done = 1;
    g->finished++;
    pthread_cond_broadcast(&g->cv);
    pthread_mutex_unlock(&g->m);
    return NULL;
}

/* /proc/stat's first line: busy and steal jiffies of the whole host. */
static void host_cpu(uint64_t *busy, uint64_t *steal)
{
    *busy = *steal = 0;
    FILE *fp = fopen("/proc/stat", "r");
    if (!fp) return;
    unsigned long long v[8] = {0};
    if (fscanf(fp, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6],
               &v[7]) >= 7) {
        *busy = v[0] + v[1] + v[2] + v[5] + v[6];   /* user nice system irq softirq */
        *steal = v[7];
    }
    fclose(fp);
}

/* The group's CPU window: what this process, the instance threads and the host had used when it opened
 * (the first job's end of ramp, so that neither opening files nor a ramp is in it). Under g->m. */
struct cpu_window {
    uint64_t t0, process0, busy0, steal0;
};

static void window_open(struct cpu_window *w, struct thread_arg *args, int n)
{
    host_cpu(&w->busy0, &w->steal0);
    w->t0 = iol_now_ns();
    w->process0 = clock_ns(CLOCK_PROCESS_CPUTIME_ID);
    for (int t = 0; t < n; t++) {   /* a thread that already ended used nothing in the window */
        uint64_t v = args[t].done || !args[t].have_clock ? 0 : clock_ns(args[t].clock);
        args[t].cpu_base_ns = args[t].done ? args[t].cpu_end_ns : v;
    }
}

static void window_close(const struct cpu_window *w, const struct thread_arg *args, int n, struct fio_group_result *gr)
{
    uint64_t busy1, steal1;
    uint64_t process1 = clock_ns(CLOCK_PROCESS_CPUTIME_ID);
    host_cpu(&busy1, &steal1);
    uint64_t threads = 0;
    for (int t = 0; t < n; t++)
        if (args[t].cpu_end_ns > args[t].cpu_base_ns) threads += args[t].cpu_end_ns - args[t].cpu_base_ns;
    gr->local.window_s = (double)(iol_now_ns() - w->t0) / 1e9;
    gr->local.self_cpu_s = process1 > w->process0 ? (double)(process1 - w->process0) / 1e9 : 0.0;
    gr->local.threads_cpu_s = (double)threads / 1e9;
    gr->local.busy_s = (double)(busy1 - w->busy0) / (double)sysconf(_SC_CLK_TCK);
    gr->local.steal_s = (double)(steal1 - w->steal0) / (double)sysconf(_SC_CLK_TCK);
}

/* Paths of every local instance of a job: paths[local][k]. */
static const char **make_paths(const struct fio_plan *p, uint64_t instance, struct iol_err *err)
{
    const char **paths = calloc((size_t)p->nfiles, sizeof *paths);
    if (!paths) {
        iol_err_set(err, IOL_ERR_RUNTIME, "out of memory");
        return NULL;
    }
    for (int k = 0; k < p->nfiles; k++) {
        char buf[IOL_STR_MAX + 512];
        fio_file_path(p, instance, k, buf, sizeof buf);
        paths[k] = strdup(buf);
        if (!paths[k]) iol_err_set(err, IOL_ERR_RUNTIME, "out of memory");
    }
    return paths;
}

static void free_paths(const char **paths, int n)
{
    for (int k = 0; paths && k < n; k++) free((void *)paths[k]);
    free(paths);
}

/* A live line for the Python side (docs/schema.md "Progress lines"): rank 0's counts times the ranks. The
 * counters are read while the threads update them; a figure a few I/Os old is fine for a progress line. */
static void progress(const struct fio_run *r, int gid, const struct thread_arg *args, int n, uint64_t start)
{
    uint64_t ios = 0, bytes = 0;
    for (int t = 0; t < n; t++) {
        for (int d = 0; d < FIO_NDIR; d++) {
            ios += __atomic_load_n(&args[t].in->dir[d].ios, __ATOMIC_RELAXED);
            bytes += __atomic_load_n(&args[t].in->dir[d].bytes, __ATOMIC_RELAXED);
        }
    }
    ios *= (uint64_t)r->comm->size;
    bytes *= (uint64_t)r->comm->size;
    double el = (double)(iol_now_ns() - start) / 1e9;
    fprintf(stderr,
            "IOLENS-PROGRESS {\"phase\": \"group %d\", \"elapsed_s\": %.3f, \"bytes\": %" PRIu64
            ", \"bw_bytes_per_s\": %.1f, \"items\": %" PRIu64 ", \"items_per_s\": %.1f, \"estimate\": true}\n",
            gid, el, bytes, el > 0 ? (double)bytes / el : 0.0, ios, el > 0 ? (double)ios / el : 0.0);
    fflush(stderr);
}

/* Runs group `gid` on this rank: prepares, releases every instance together, waits for them. */
static int run_group(struct fio_run *r, int gid)
{
    struct iol_comm *c = r->comm;
    struct fio_group_result *gr = &r->groups[gid];
    int nthreads = 0;
    for (int j = 0; j < r->cfg->njobs; j++)
        if (r->plans[j].group == gid) nthreads += (int)r->plans[j].o->numjobs;
    struct thread_arg *args = calloc((size_t)nthreads, sizeof *args);
    pthread_t *tids = calloc((size_t)nthreads, sizeof *tids);
    struct fio_group_run g;
    memset(&g, 0, sizeof g);
    if (!args || !tids) {
        free(args);
        free(tids);
        return iol_err_set(&r->err, IOL_ERR_RUNTIME, "out of memory");
    }
    /* Shared files: rank 0 lays them out, then every rank prepares its node's cache once. */
    for (int j = 0; j < r->cfg->njobs; j++) {   /* every rank reaches the same barriers, error or not */
        struct fio_plan *p = &r->plans[j];
        if (p->group != gid || !p->shared_files) continue;
        const char **paths = make_paths(p, 0, &r->err);
        int evicted = 1;
        if (paths && c->rank == 0 && !r->err.code)
            fio_prepare_files(p, paths, 1, 0, &evicted, r->jobs[j].shared_created, &r->err);
        if (c->barrier(c)) iol_err_set(&r->err, IOL_ERR_RUNTIME, "communicator failed");
        if (paths && !r->err.code) fio_prepare_files(p, paths, 0, 1, &evicted, NULL, &r->err);
        r->jobs[j].evicted_local = evicted;
        free_paths(paths, p->nfiles);
    }
    pthread_mutex_init(&g.m, NULL);
    pthread_condattr_t ca;   /* the main thread's waits are until points of CLOCK_MONOTONIC (iol_now_ns) */
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&g.cv, &ca);
    pthread_condattr_destroy(&ca);
    int t = 0, started = 0;
    for (int j = 0; j < r->cfg->njobs; j++) {
        struct fio_plan *p = &r->plans[j];
        if (p->group != gid) continue;
        for (int64_t i = 0; i < p->o->numjobs; i++, t++) {
            struct fio_inst *in = &r->jobs[j].inst[i];
            in->plan = p;
            in->rank = c->rank + r->cfg->client_index;
            in->instance = (uint64_t)in->rank * (uint64_t)p->o->numjobs + (uint64_t)i;
            args[t].in = in;
            args[t].g = &g;
            args[t].lay = !p->shared_files;
            args[t].paths = make_paths(p, p->shared_files ? 0 : in->instance, &in->err);
        }
    }
    for (t = 0; t < nthreads; t++) {
        if (pthread_create(&tids[t], NULL, instance_thread, &args[t])) break;
        args[t].have_clock = pthread_getcpuclockid(tids[t], &args[t].clock) == 0;
        started++;
    }
    if (started < nthreads) iol_err_set(&r->err, IOL_ERR_RUNTIME, "cannot start %d threads", nthreads);
    pthread_mutex_lock(&g.m);
    while (g.ready < started) pthread_cond_wait(&g.cv, &g.m);
    pthread_mutex_unlock(&g.m);
    for (t = 0; t < nthreads; t++)
        if (args[t].in->err.code && !r->err.code) r->err = args[t].in->err;
    if (iol_agree(c, &r->err, &r->err_rank)) g.abort = 1;
    if (!g.abort && c->barrier(c)) {
        iol_err_set(&r->err, IOL_ERR_RUNTIME, "communicator failed");
        g.abort = 1;
    }
    /* Every job of the group starts at once; each counts from the end of its own ramp and stops at its own
     * runtime (fio's ramp_time and runtime are a job's options, not the group's). The group's window runs
     * from the first job's end of ramp. */
    uint64_t now = iol_now_ns(), first_count = UINT64_MAX;
    for (int j = 0; j < r->cfg->njobs; j++) {
        const struct fio_plan *p = &r->plans[j];
        if (p->group != gid) continue;
        struct fio_times *tj = &g.times[j];
        tj->count_from_ns = now + p->ramp_ns;
        tj->deadline_ns = p->runtime_ns ? tj->count_from_ns + p->runtime_ns : UINT64_MAX;
        if (tj->count_from_ns < first_count) first_count = tj->count_from_ns;
    }
    if (first_count == UINT64_MAX) first_count = now;
    struct cpu_window win;
    int windowed = 0;
    uint64_t next_progress = now + 500000000ull;
    pthread_mutex_lock(&g.m);
    g.go = 1;
    pthread_cond_broadcast(&g.cv);
    while (g.finished < started) {
        uint64_t t_now = iol_now_ns();
        if (!windowed && t_now >= first_count) {
            window_open(&win, args, started);
            windowed = 1;
        }
        /* The instance threads poll the signal; the main thread passes it between the ranks. */
        if (c->poll_interrupt) c->poll_interrupt(c);
        if (t_now >= next_progress) {
            if (r->info->progress && c->rank == 0) progress(r, gid, args, started, now);
            next_progress = t_now + 500000000ull;
        }
        uint64_t wake = !windowed && first_count < next_progress ? first_count : next_progress;
        if (c->poll_interrupt && wake > t_now + 100000000ull) wake = t_now + 100000000ull;   /* see the poll above */
        struct timespec until = {(time_t)(wake / 1000000000ull), (long)(wake % 1000000000ull)};
        pthread_cond_timedwait(&g.cv, &g.m, &until);
    }
    if (!windowed) window_open(&win, args, started);   /* every job ended within its ramp */
    pthread_mutex_unlock(&g.m);
    for (t = 0; t < started; t++) pthread_join(tids[t], NULL);
    window_close(&win, args, started, gr);
    /* The group's time: from the first job's end of ramp to the last job's end (a verify read-back after it
     * is no part of it). */
    uint64_t last_end = 0;
    for (t = 0; t < started; t++)
        if (args[t].in->t_end > last_end) last_end = args[t].in->t_end;
    gr->local.t_start = iol_comm_time(c, first_count);
    gr->local.t_end = iol_comm_time(c, last_end > first_count ? last_end : first_count);
    for (t = 0; t < nthreads; t++) {
        if (args[t].in->err.code && !r->err.code) r->err = args[t].in->err;
        free_paths(args[t].paths, args[t].in->plan->nfiles);
    }
    pthread_mutex_destroy(&g.m);
    pthread_cond_destroy(&g.cv);
    free(args);
    free(tids);
    return r->err.code ? -1 : 0;
}

static int setup(struct fio_run *r)
{
    r->ngroups = 0;
    for (int j = 0; j < r->cfg->njobs; j++) {
        if (fio_plan_build(r->cfg, j, &r->plans[j], &r->err)) return -1;
        if (r->plans[j].group + 1 > r->ngroups) r->ngroups = r->plans[j].group + 1;
        r->jobs[j].inst = calloc((size_t)r->plans[j].o->numjobs, sizeof *r->jobs[j].inst);
        if (!r->jobs[j].inst) return iol_err_set(&r->err, IOL_ERR_RUNTIME, "out of memory");
        /* Which files this run makes: what a failed or interrupted run removes. */
        size_t nf = (size_t)r->plans[j].nfiles;
        r->jobs[j].shared_created = calloc(nf, 1);
        if (!r->jobs[j].shared_created) return iol_err_set(&r->err, IOL_ERR_RUNTIME, "out of memory");
        for (int64_t i = 0; i < r->plans[j].o->numjobs; i++)
            if (!(r->jobs[j].inst[i].created = calloc(nf, 1))) return iol_err_set(&r->err, IOL_ERR_RUNTIME, "out of memory");
        r->jobs[j].evicted_local = 1;
        char path[IOL_STR_MAX + 512];
        fio_file_path(&r->plans[j], (uint64_t)(r->comm->rank + r->cfg->client_index) * (uint64_t)r->plans[j].o->numjobs, 0, path,
                      sizeof path);
        snprintf(r->jobs[j].first_file, sizeof r->jobs[j].first_file, "%s", path);
        char dir[IOL_STR_MAX];
        const char *name;
        fio_file_dir_name(path, dir, sizeof dir, &name);
        snprintf(r->jobs[j].fs_type, sizeof r->jobs[j].fs_type, "%s",
                 r->plans[j].be->does_io ? iol_fs_type(dir) : "none");
    }
    r->groups = calloc((size_t)r->ngroups, sizeof *r->groups);
    if (!r->groups) return iol_err_set(&r->err, IOL_ERR_RUNTIME, "out of memory");
    return 0;
}

/* After a failure or an interrupt: every rank removes the files its instances made in this run (rank 0 the
 * shared files it laid out); files that were there before the run stay. Collective (the counts are summed). */
static void remove_created(struct fio_run *r)
{
    struct iol_comm *c = r->comm;
    struct iol_err e = {0, ""};
    uint64_t removed = 0;
    for (int j = 0; j < r->cfg->njobs; j++) {
        const struct fio_plan *p = &r->plans[j];
        struct fio_job_result *jr = &r->jobs[j];
        if (!jr->inst || !p->be || !p->be->does_io) continue;
        if (c->rank == 0) fio_remove_created(p, 0, jr->shared_created, &removed, &e);
        for (int64_t i = 0; !p->shared_files && i < p->o->numjobs; i++)
            fio_remove_created(p, (uint64_t)(c->rank + r->cfg->client_index) * (uint64_t)p->o->numjobs + (uint64_t)i, jr->inst[i].created,
                               &removed, &e);
    }
    if (c->allreduce(c, &removed, &r->cleanup.removed, 1, IOL_DT_U64, IOL_OP_SUM)) r->cleanup.removed = removed;
    if (e.code) r->cleanup.left++;
    r->cleanup.state = IOL_CLEANUP_DONE;
}

static void write_document(struct fio_run *r)
{
    struct iol_doc d;
    struct iol_err e = {0, ""};
    if (iol_doc_open(&d, r->info->json_path, &e) == 0) {
        iol_doc_header(&d.json, "fio", r->info, r->comm, r->comm->size);
        fio_report_json(&d.json, r);
        iol_doc_cleanup(&d.json, &r->cleanup);
        iol_doc_status(&d.json, &r->err, r->err_rank, r->err.code ? r->err_phase : NULL);
        iol_doc_commit(&d, &e);
    }
    if (e.code) fprintf(stderr, "iolens-bench: error: %s\n", e.msg);
}

int fio_run(const struct fio_cfg *cfg, struct iol_comm *comm, const struct iol_run_info *info)
{
    struct fio_run *r = calloc(1, sizeof *r);
    if (!r) return IOL_ERR_RUNTIME;
    r->cfg = cfg;
    r->comm = comm;
    r->info = info;
    r->err_rank = -1;
    r->err_phase = "setup";
    int failed = 0;
    if (iol_comm_setup(comm, &r->err) == 0) setup(r);
    failed = iol_agree(comm, &r->err, &r->err_rank);
    for (int gid = 0; gid < r->ngroups && !failed; gid++) {
        r->err_phase = "run";
        run_group(r, gid);
        failed = iol_agree(comm, &r->err, &r->err_rank);
        r->groups_run = gid + (failed ? 0 : 1);
        if (failed && iol_interrupt_pending()) {
            /* What the group did until the stop is reported, marked cut short (the collectives fail at once
             * if the communicator broke). */
            const char *phase = r->err_phase;
            if (fio_reduce_group(r, gid) == 0) {
                r->groups[gid].cut_short = 1;
                r->groups_run = gid + 1;
            }
            r->err_phase = phase;
        }
        if (!failed) {
            r->err_phase = "report";
            fio_reduce_group(r, gid);
            failed = iol_agree(comm, &r->err, &r->err_rank);
        }
    }
    if (failed && r->ngroups) {
        r->cleanup.state = IOL_CLEANUP_PENDING;
        /* A launcher may kill the ranks soon after its signal (Open MPI's mpirun: one second after its
         * SIGTERM): the document goes out first, and again once the files are gone. */
        if (iol_interrupt_pending() && comm->rank == 0 && info->json_path[0] && strcmp(info->json_path, "-"))
            write_document(r);
        remove_created(r);
    }
    if (comm->rank == 0 && !r->err.code) {   /* fio ends with an error when verification failed */
        for (int j = 0; j < cfg->njobs; j++) {
            const struct fio_job_result *jr = &r->jobs[j];
            if (jr->done && jr->verify_errors) {
                r->err_phase = "verify";
                iol_err_set(&r->err, IOL_ERR_RUNTIME, "verify: job '%s': %" PRIu64 " bad block(s), the first at offset %" PRIu64 " of %s",
                            cfg->jobs[j].name, jr->verify_errors, jr->verify_first_bad, jr->verify_bad_file);
                break;
            }
        }
    }
    if (comm->rank == 0) {
        if (!info->quiet && (!r->err.code || r->groups_run)) fio_report_text(stdout, r);
        if (info->json_path[0]) write_document(r);
        if (r->err.code) fprintf(stderr, "iolens-bench: error: %s\n", r->err.msg);
        fflush(stdout);
    }
    int status = r->err.code ? r->err.code : IOL_OK;
    int64_t s = status, worst = status;
    if (comm->allreduce(comm, &s, &worst, 1, IOL_DT_I64, IOL_OP_MAX) == 0) status = (int)worst;
    fio_run_free(r);
    return status;
}
