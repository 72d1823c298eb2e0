/* run_doc.c — see run_doc.h. */
#include "run_doc.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "../common/clock.h"
#include "../common/interrupt.h"
#include "git_commit.h"

int iol_doc_open(struct iol_doc *d, const char *path, struct iol_err *err)
{
    memset(d, 0, sizeof *d);
    snprintf(d->path, sizeof d->path, "%s", path);
    if (strcmp(path, "-") == 0) {
        d->to_stdout = 1;
        d->fp = stdout;
    } else {
        snprintf(d->tmp, sizeof d->tmp, "%s.tmp.%ld", path, (long)getpid());
        d->fp = fopen(d->tmp, "w");
        if (!d->fp) return iol_err_errno(err, IOL_ERR_RUNTIME, errno, "--json: cannot create %s", d->tmp);
    }
    iol_json_init(&d->json, d->fp, 2);
    iol_json_begin_object(&d->json);
    return 0;
}

int iol_doc_commit(struct iol_doc *d, struct iol_err *err)
{
    int bad = iol_json_finish(&d->json);
    if (d->to_stdout) {
        fflush(stdout);
        return bad ? iol_err_set(err, IOL_ERR_RUNTIME, "internal error: malformed JSON document") : 0;
    }
    int rc = 0;
    if (fflush(d->fp) != 0 || ferror(d->fp)) rc = iol_err_errno(err, IOL_ERR_RUNTIME, errno, "write %s", d->tmp);
    if (!rc && fsync(fileno(d->fp)) != 0 && errno != EINVAL)
        rc = iol_err_errno(err, IOL_ERR_RUNTIME, errno, "fsync %s", d->tmp);
    fclose(d->fp);
    if (!rc && bad) rc = iol_err_set(err, IOL_ERR_RUNTIME, "internal error: malformed JSON document");
    if (!rc && rename(d->tmp, d->path) != 0) rc = iol_err_errno(err, IOL_ERR_RUNTIME, errno, "rename to %s", d->path);
    if (rc) unlink(d->tmp);
    return rc;
}

void iol_doc_header(struct iol_json *j, const char *workload, const struct iol_run_info *info,
                    const struct iol_comm *comm, int nranks)
{
    char when[64];
    struct utsname u;
    if (uname(&u) != 0) memset(&u, 0, sizeof u);
    iol_json_kv_int(j, "schema_version", IOL_SCHEMA_VERSION);
    iol_json_kv_string(j, "tool", "iolens");
    iol_json_kv_string(j, "version", IOLENS_VERSION);
    iol_json_kv_string(j, "workload", workload);
    iol_json_key(j, "command");
    iol_json_begin_array(j);
    for (int i = 0; i < info->argc; i++) iol_json_string(j, info->argv[i]);
    iol_json_end_array(j);
    iol_format_utc(info->start_wall_ns, when, sizeof when);
    iol_json_kv_string(j, "started_at", when);
    iol_json_key(j, "host");
    iol_json_begin_object(j);
    iol_json_kv_string(j, "hostname", comm ? comm->hostname : u.nodename);
    iol_json_kv_string(j, "kernel", u.release);
    iol_json_end_object(j);
    iol_json_key(j, "comm");
    iol_json_begin_object(j);
    iol_json_kv_string(j, "kind", comm ? comm->kind : "local");
    iol_json_kv_int(j, "ranks", comm ? comm->size : nranks);
    iol_json_kv_int(j, "nodes", comm ? comm->nodes : 1);
    iol_json_kv_int(j, "tasks_per_node", comm ? comm->tasks_per_node : nranks);
    iol_json_kv_int(j, "max_clock_offset_ns", comm ? comm->max_abs_clock_offset_ns : 0);
    /* Where the ranks ran, as runs of consecutive ranks on one host: one entry per node with block mapping. */
    if (comm && comm->placement) {
        iol_json_key(j, "placement");
        iol_json_begin_array(j);
        for (int i = 0; i < comm->placement_runs; i++) {
            iol_json_begin_object(j);
            iol_json_kv_string(j, "host", comm->placement[i].host);
            iol_json_kv_int(j, "first_rank", comm->placement[i].first_rank);
            iol_json_kv_int(j, "ranks", comm->placement[i].ranks);
            iol_json_end_object(j);
        }
        iol_json_end_array(j);
    }
    iol_json_end_object(j);
    iol_json_key(j, "build");
    iol_json_begin_object(j);
    iol_json_kv_bool(j, "mpi", IOLENS_HAVE_MPI);
    iol_json_kv_bool(j, "liburing", IOLENS_HAVE_URING);
    iol_json_kv_bool(j, "libaio", IOLENS_HAVE_AIO);
    iol_json_kv_bool(j, "hdf5", IOLENS_HAVE_HDF5);
    iol_json_kv_bool(j, "pnetcdf", IOLENS_HAVE_PNETCDF);
    iol_json_kv_string(j, "commit", IOLENS_GIT_COMMIT);
    iol_json_end_object(j);
}

void iol_doc_status(struct iol_json *j, const struct iol_err *err, int err_rank, const char *phase)
{
    char when[64];
    int failed = err && err->code;
    iol_json_kv_string(j, "status", failed ? "failed" : "ok");
    iol_json_key(j, "error");
    if (!failed) {
        iol_json_null(j);
    } else {
        iol_json_begin_object(j);
        iol_json_kv_string(j, "message", err->msg);
        iol_json_kv_int(j, "rank", err_rank);
        iol_json_key(j, "phase");
        iol_json_string(j, phase);
        iol_json_end_object(j);
    }
    /* A failed run that had received a signal was stopped by it (an error that came first would still be
     * the message, and the signal then only cut the cleanup short: it is named all the same). */
    int sig = iol_interrupt_pending();
    iol_json_key(j, "interrupted");
    if (!failed || !sig) {
        iol_json_null(j);
    } else {
        iol_json_begin_object(j);
        iol_json_kv_string(j, "signal", iol_signal_name(sig));
        iol_json_kv_int(j, "number", sig);
        iol_json_key(j, "phase");
        iol_json_string(j, phase);
        iol_json_end_object(j);
    }
    iol_format_utc(iol_wall_ns(), when, sizeof when);
    iol_json_kv_string(j, "ended_at", when);
}

int iol_doc_write_failure(const char *path, const char *workload, const struct iol_run_info *info, int nranks,
                          const char *message, int rank, struct iol_err *err)
{
    struct iol_doc d;
    if (iol_doc_open(&d, path, err)) return -1;
    iol_doc_header(&d.json, workload, info, NULL, nranks);
    struct iol_err e = {IOL_ERR_RUNTIME, ""};
    snprintf(e.msg, sizeof e.msg, "%s", message);
    iol_json_key(&d.json, "phases");
    iol_json_begin_array(&d.json);
    iol_json_end_array(&d.json);
    iol_doc_status(&d.json, &e, rank, NULL);
    return iol_doc_commit(&d, err);
}

void iol_doc_latency_as(struct iol_json *j, const char *key, const struct iol_hist *h, int parts)
{
    iol_json_key(j, key);
    iol_json_begin_object(j);
    iol_json_kv_uint(j, "count", h->count);
    iol_json_kv_uint(j, "min", h->count ? h->min : 0);
    iol_json_kv_double(j, "mean", iol_hist_mean(h));
    if (parts & IOL_DOC_LAT_STDDEV) iol_json_kv_double(j, "stddev", iol_hist_stddev(h));
    iol_json_kv_uint(j, "p50", iol_hist_percentile(h, 50));
    iol_json_kv_uint(j, "p90", iol_hist_percentile(h, 90));
    iol_json_kv_uint(j, "p99", iol_hist_percentile(h, 99));
    iol_json_kv_uint(j, "p99_9", iol_hist_percentile(h, 99.9));
    iol_json_kv_uint(j, "max", h->max);
    if (parts & IOL_DOC_LAT_BUCKETS) {
        iol_json_key(j, "buckets");
        iol_json_begin_array(j);
        for (unsigned i = 0; i < IOL_HIST_NBUCKETS; i++) {
            if (!h->buckets[i]) continue;
            iol_json_begin_array(j);
            iol_json_uint(j, iol_hist_bucket_low(i));
            iol_json_uint(j, iol_hist_bucket_high(i));
            iol_json_uint(j, h->buckets[i]);
            iol_json_end_array(j);
        }
        iol_json_end_array(j);
    }
    iol_json_end_object(j);
}

void iol_doc_backend_stats(struct iol_json *j, const struct iol_backend_stats *s)
{
    iol_json_key(j, "backend");
    if (s == NULL) {
        iol_json_null(j);
        return;
    }
    iol_json_begin_object(j);
    iol_json_kv_uint(j, "requests", s->requests);
    iol_json_kv_uint(j, "fixed_bufs", s->fixed_bufs);
    iol_json_kv_uint(j, "fixed_files", s->fixed_files);
    iol_json_kv_uint(j, "resubmits", s->resubmits);
    iol_json_kv_uint(j, "submit_calls", s->submit_calls);
    iol_json_kv_uint(j, "waits", s->waits);
    iol_json_end_object(j);
}

void iol_doc_latency(struct iol_json *j, const struct iol_hist *h, int with_buckets)
{
    iol_doc_latency_as(j, "latency_ns", h, with_buckets ? IOL_DOC_LAT_BUCKETS : 0);
}

void iol_doc_cleanup(struct iol_json *j, const struct iol_cleanup *c)
{
    static const char *const states[] = {"none", "pending", "done", "kept"};
    iol_json_key(j, "cleanup");
    if (c == NULL || c->state == IOL_CLEANUP_NONE) {
        iol_json_null(j);
        return;
    }
    iol_json_begin_object(j);
    iol_json_kv_string(j, "state", states[c->state]);
    iol_json_kv_uint(j, "removed", c->removed);
    iol_json_kv_uint(j, "missing", c->missing);
    iol_json_kv_uint(j, "left", c->left);
    iol_json_end_object(j);
}

void iol_doc_write(const char *workload, const struct iol_run_info *info, const struct iol_comm *comm, int nranks,
                   void (*body)(struct iol_json *j, const void *arg), const void *arg, const struct iol_cleanup *c,
                   const struct iol_err *err, int err_rank, const char *phase)
{
    if (!info->json_path[0]) return;
    struct iol_doc d;
    struct iol_err e = {0, ""};
    if (iol_doc_open(&d, info->json_path, &e) == 0) {
        iol_doc_header(&d.json, workload, info, comm, nranks);
        body(&d.json, arg);
        iol_doc_cleanup(&d.json, c);
        iol_doc_status(&d.json, err, err_rank, err && err->code ? phase : NULL);
        iol_doc_commit(&d, &e);
    }
    if (e.code) fprintf(stderr, "iolens-bench: error: %s\n", e.msg);
}
