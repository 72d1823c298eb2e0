/* run_doc.h — the parts of the result document every workload shares (see docs/schema.md), and writing it
 * atomically: the document goes to a temporary file that is renamed into place, so the requested path
 * only ever holds a complete document. */
#ifndef IOL_RUN_DOC_H
#define IOL_RUN_DOC_H
#include <stdio.h>
#include "../backend/backend.h"
#include "../comm/comm.h"
#include "../common/hist.h"
#include "../common/json.h"
#include "run_info.h"

#define IOL_SCHEMA_VERSION 1

struct iol_doc {
    FILE *fp;
    char path[IOL_STR_MAX];
    char tmp[IOL_STR_MAX + 32];
    int to_stdout;
    struct iol_json json;
};

/* path "-" writes to stdout. */
int iol_doc_open(struct iol_doc *d, const char *path, struct iol_err *err);
/* Closes the JSON, flushes, syncs and renames into place. */
int iol_doc_commit(struct iol_doc *d, struct iol_err *err);

/* Writes "schema_version" ... "build" members into the open top-level object. comm may be NULL (the run
 * never started); then nranks is used. */
void iol_doc_header(struct iol_json *j, const char *workload, const struct iol_run_info *info,
                    const struct iol_comm *comm, int nranks);
/* Writes "status", "error" and "ended_at". err NULL or code 0 = ok. */
void iol_doc_status(struct iol_json *j, const struct iol_err *err, int err_rank, const char *phase);

/* Writes "latency_ns": {count, min, mean, p50, p90, p99, p99_9, max[, buckets: [[low, high, count], ...]]}. */
void iol_doc_latency(struct iol_json *j, const struct iol_hist *h, int with_buckets);
/* The "backend" object: what an asynchronous backend counted (docs/schema.md), or null when s is NULL. */
void iol_doc_backend_stats(struct iol_json *j, const struct iol_backend_stats *s);
/* The same object under any key; parts add "buckets" and/or "stddev" (after "mean"). */
enum { IOL_DOC_LAT_BUCKETS = 1, IOL_DOC_LAT_STDDEV = 2 };
void iol_doc_latency_as(struct iol_json *j, const char *key, const struct iol_hist *h, int parts);

/* What a run removed of its own files at its end, after it was cut short, or as a cleanup run
 * (docs/schema.md, "cleanup"). NONE writes null. */
enum iol_cleanup_state { IOL_CLEANUP_NONE, IOL_CLEANUP_PENDING, IOL_CLEANUP_DONE, IOL_CLEANUP_KEPT };
struct iol_cleanup {
    int state;
    uint64_t removed;           /* files, items, directories removed */
    uint64_t missing;           /* expected (listed) but already gone: skipped, not an error */
    uint64_t left;              /* could not be removed, or not iolens's: left in place */
};
void iol_doc_cleanup(struct iol_json *j, const struct iol_cleanup *c);

/* A workload's whole document to info->json_path (nothing without --json): the header, the workload's members
 * (body), the cleanup and the status; a failure to write it is said on stderr. Rank 0 only. */
void iol_doc_write(const char *workload, const struct iol_run_info *info, const struct iol_comm *comm, int nranks,
                   void (*body)(struct iol_json *j, const void *arg), const void *arg, const struct iol_cleanup *c,
                   const struct iol_err *err, int err_rank, const char *phase);

/* A whole document for a run that died before rank 0 could write one (used by the local launcher). */
int iol_doc_write_failure(const char *path, const char *workload, const struct iol_run_info *info, int nranks,
                          const char *message, int rank, struct iol_err *err);

#endif
