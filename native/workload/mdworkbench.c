/* mdworkbench.c — the md-workbench workload's run, phase by phase as md-workbench runs them: a precreate
 * (each rank makes its D data sets and P objects in each), benchmark iterations (per object and set: stat,
 * read and delete the oldest object of the reader's set, create the newest in the writer's set), and a
 * cleanup (each rank deletes its objects and its sets). Every operation is timed into a latency histogram;
 * a phase's time is the slowest rank's, as md-workbench reports it. Only what the ledger of -o says iolens
 * created is ever deleted. */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../common/clock.h"
#include "../common/interrupt.h"
#include "../common/ledger.h"
#include "../common/pattern.h"
#include "mdworkbench_internal.h"
#include "run_doc.h"
#include "run_sync.h"

#define PATH_LEN (IOL_STR_MAX + 128)

const char *const mdwb_op_names[MDWB_NOPS] = {"dset_create", "dset_delete", "obj_create", "obj_read", "obj_stat",
                                              "obj_delete"};
const char *const mdwb_lat_names[MDWB_NLAT] = {"create", "read", "stat", "delete"};
const char *const mdwb_kind_names[3] = {"precreate", "benchmark", "cleanup"};

void mdwb_set_name(char *buf, size_t len, int rank, int64_t set)
{
    snprintf(buf, len, "%d_%" PRId64, rank, set);
}

void mdwb_parent(const char *path, char *parent, size_t len)
{
    snprintf(parent, len, "%s", path);
    char *slash = strrchr(parent, '/');
    if (slash == parent) slash[1] = '\0';
    else if (slash) *slash = '\0';
    else snprintf(parent, len, ".");
}

static void obj_path(const struct mdwb_run *r, char *buf, int rank, int64_t set, int64_t file)
{
    snprintf(buf, PATH_LEN, "%s/%d_%" PRId64 "/file-%" PRId64, r->cfg->dir, rank, set, file);
}

static void set_path(const struct mdwb_run *r, char *buf, int rank, int64_t set)
{
    snprintf(buf, PATH_LEN, "%s/%d_%" PRId64, r->cfg->dir, rank, set);
}

static int comm_failed(struct mdwb_run *r)
{
    return iol_err_set(&r->err, IOL_ERR_RUNTIME, "communication with the other ranks failed");
}

/* ---- objects ---------------------------------------------------------------------------------------------- */

/* An object holds its owner's pattern (key from the seed and the owner rank) as if object ITEM = file * D + set
 * lived at offset ITEM << 32 of one big file, so data of another object or rank is detected on read (-X). */
static uint64_t obj_offset(const struct mdwb_run *r, int64_t file, int64_t set)
{
    return (uint64_t)(file * r->cfg->data_sets + set) << 32;
}

static int xfer(struct mdwb_run *r, struct iol_file *f, int op, const char *path)
{
    uint64_t len = (uint64_t)r->cfg->object_size;
    if (!len) return 0;
    r->req = (struct iol_req){.op = op, .file = f, .buf = r->buf, .len = len, .flags = IOL_REQ_UNTIMED};
    struct iol_req *q = &r->req;
    if (r->be->submit(r->bctx, &q, 1, &r->err) != 1 || r->be->reap(r->bctx, r->done, 1, 1, &r->err) != 1) return -1;
    if (r->req.error || r->req.result != (int64_t)len) {
        if (r->req.error) return iol_err_errno(&r->err, IOL_ERR_RUNTIME, r->req.error, "%s %s",
                                               op == IOL_IO_WRITE ? "write" : "read", path);
        return iol_err_set(&r->err, IOL_ERR_RUNTIME, "%s %s: %" PRId64 " of %" PRIu64 " bytes",
                           op == IOL_IO_WRITE ? "write" : "read", path, r->req.result, len);
    }
    return 0;
}

static int close_file(struct mdwb_run *r, struct iol_file *f, int rc)
{
    struct iol_err cerr;
    cerr.code = 0;
    if (r->be->close(r->bctx, f, &cerr) && !rc) {
        r->err = cerr;
        return -1;
    }
    return rc;
}

/* Creates and writes an object: 0, -1 when it could not be opened (md-workbench stops then), -2 when the
 * write failed (counted as an error). */
static int obj_create(struct mdwb_run *r, const char *path, int owner, int64_t file, int64_t set)
{
    struct iol_file f;
    if (r->be->open(r->bctx, &f, path, IOL_O_WRITE | IOL_O_CREATE, 0644, &r->err)) return -1;
    struct iol_pattern pat;
    iol_pattern_init(&pat, r->buf, r->buf_len, iol_pattern_key((uint64_t)r->seed, owner));
    iol_pattern_apply(&pat, obj_offset(r, file, set));
    return close_file(r, &f, xfer(r, &f, IOL_IO_WRITE, path)) ? -2 : 0;
}

/* Bytes of what was read that differ from the object's pattern (the tail word compared byte by byte). */
static uint64_t bad_bytes(const struct mdwb_run *r, size_t len, uint64_t key, uint64_t base)
{
    size_t whole = len & ~(size_t)7;
    uint64_t first = 0, bad = whole ? iol_pattern_check(r->buf, whole, base, key, &first) : 0;
    uint64_t w = iol_pattern_word(key, base + whole);
    const unsigned char *got = (const unsigned char *)r->buf + whole, *want = (const unsigned char *)&w;
    for (size_t i = 0; i < len - whole; i++) bad += got[i] != want[i];
    return bad;
}

/* Reads an object (and with -X checks every byte): 0, -1 when it could not be opened, -2 when the read
 * failed or the data differs (counted as an error). */
static int obj_read(struct mdwb_run *r, const char *path, int owner, int64_t file, int64_t set)
{
    struct iol_file f;
    if (r->be->open(r->bctx, &f, path, IOL_O_READ, 0, &r->err)) return -1;
    int rc = xfer(r, &f, IOL_IO_READ, path);
    if (!rc && r->cfg->verify_read && r->be->does_io) {
        uint64_t bad = bad_bytes(r, (size_t)r->cfg->object_size, iol_pattern_key((uint64_t)r->seed, owner),
                                 obj_offset(r, file, set));
        r->verify_bytes += (uint64_t)r->cfg->object_size;
        if (bad) {
            if (!r->verify_errors) snprintf(r->first_bad, sizeof r->first_bad, "%s", path);
            r->verify_errors += bad;
            rc = -2;
        }
    }
    return close_file(r, &f, rc) == -1 ? -2 : rc;
}

/* ---- timing ---------------------------------------------------------------------------------------------- */

static void stats_init(struct mdwb_stats *s)
{
    memset(s, 0, sizeof *s);
    for (int i = 0; i < MDWB_NLAT; i++) iol_hist_init(&s->lat[i]);
}

/* Records an operation that started at t0 (ns); returns its time in seconds. */
static double timed(struct mdwb_stats *s, enum mdwb_lat which, uint64_t t0)
{
    uint64_t ns = iol_now_ns() - t0;
    iol_hist_record(&s->lat[which], ns);
    double sec = (double)ns / 1e9;
    if (sec > s->max_op_s) s->max_op_s = sec;
    return sec;
}

/* -t: after an operation, wait its time times the factor (a busy wait below 10 ms, as md-workbench does). */
static void wait_after(double op_s, double factor)
{
    if (factor <= 1e-9) return;
    double w = op_s * factor;
    if (w >= 0.01) {
        iol_sleep_s(w);
        return;
    }
    uint64_t end = iol_now_ns() + (uint64_t)(w * 1e9);
    while (iol_now_ns() < end) {
    }
}

static void progress(struct mdwb_run *r, enum mdwb_kind kind, int iteration, uint64_t t0, uint64_t ops,
                     uint64_t *next)
{
    uint64_t now = iol_now_ns();
    if (!r->info->progress || r->comm->rank != 0 || now < *next) return;
    double el = (double)(now - t0) / 1e9;
    uint64_t est = ops * (uint64_t)r->nranks;
    fprintf(stderr, "IOLENS-PROGRESS {\"phase\": \"%s\", \"iteration\": %d, \"elapsed_s\": %.3f, \"items\": %" PRIu64
            ", \"rate_per_s\": %.1f, \"estimate\": true}\n", mdwb_kind_names[kind], iteration, el, est,
            el > 0 ? (double)est / el : 0.0);
    fflush(stderr);
    *next = now + 500000000ULL;
}

static int stop_now(struct mdwb_run *r)
{
    if (!iol_interrupted(r->comm)) return 0;
    iol_note_interrupt(&r->err);
    return 1;
}

static void verbose_op(const struct mdwb_run *r, const char *what, const char *path)
{
    if (r->cfg->verbosity >= 2) {
        printf("%d: %s %s\n", r->comm->rank, what, path);
        fflush(stdout);
    }
}

/* ---- the phases ----------------------------------------------------------------------------------------- */

static void precreate(struct mdwb_run *r, struct mdwb_stats *s, uint64_t t0)
{
    const struct mdwb_cfg *cfg = r->cfg;
    const int me = r->comm->rank;
    char path[PATH_LEN];
    for (int64_t d = 0; d < cfg->data_sets; d++) {
        set_path(r, path, me, d);
        if (r->be->mkdir(r->bctx, path, 0755, &r->err) == 0) {
            s->suc[MDWB_DSET_CREATE]++;
        } else {
            s->err[MDWB_DSET_CREATE]++;
            if (!cfg->ignore_precreate_errors) return;
            iol_err_clear(&r->err);
        }
    }
    uint64_t next = t0 + 500000000ULL, ops = 0;
    for (int64_t f = r->index; f < cfg->precreate; f++) {
        for (int64_t d = 0; d < cfg->data_sets; d++) {
            obj_path(r, path, me, d, f);
            uint64_t a = iol_now_ns();
            int rc = obj_create(r, path, me, f, d);
            timed(s, MDWB_LAT_CREATE, a);
            if (rc == -1) {
                s->err[MDWB_OBJ_CREATE]++;
                return;
            }
            if (rc == 0) {
                s->suc[MDWB_OBJ_CREATE]++;
            } else {
                s->err[MDWB_OBJ_CREATE]++;
                if (!cfg->ignore_precreate_errors) return;
                iol_err_clear(&r->err);
            }
            verbose_op(r, "write", path);
            ops++;
        }
        progress(r, MDWB_PRECREATE, 0, t0, ops, &next);
        if (stop_now(r)) return;
    }
}

/* One benchmark iteration (md-workbench's run_benchmark). The FIFO: object (index + f) of the reader's set
 * goes, object (P + index + f) of the writer's set comes. */
static void benchmark(struct mdwb_run *r, struct mdwb_stats *s, uint64_t *t0, int iteration, double factor)
{
    const struct mdwb_cfg *cfg = r->cfg;
    struct iol_comm *c = r->comm;
    const int me = c->rank, n = r->nranks;
    const int64_t start = r->index;
    int64_t total = cfg->obj_per_proc, f;
    int armed = cfg->stonewall_s > 0, failed = 0;
    double allreduce_s = 0, runtime = 0;
    uint64_t next = *t0 + 500000000ULL, ops = 0;
    char path[PATH_LEN];
    for (f = 0; f < total; f++) {
        for (int64_t d = 0; d < cfg->data_sets && !failed; d++) {
            const int64_t prev = f + start;
            int reader = (int)((me - cfg->offset * (d + 1)) % n);
            if (reader < 0) reader += n;
            obj_path(r, path, reader, d, prev);
            struct stat st;
            uint64_t a = iol_now_ns();
            int rc = r->be->stat(r->bctx, path, &st, &r->err);
            runtime = (double)(a - *t0) / 1e9;
            wait_after(timed(s, MDWB_LAT_STAT, a), factor);
            verbose_op(r, "stat", path);
            if (rc) {
                /* Counted, and this object's read, delete and create are skipped, as md-workbench does. */
                s->err[MDWB_OBJ_STAT]++;
                iol_err_clear(&r->err);
                continue;
            }
            s->suc[MDWB_OBJ_STAT]++;
            a = iol_now_ns();
            rc = obj_read(r, path, reader, prev, d);
            runtime = (double)(a - *t0) / 1e9;
            wait_after(timed(s, MDWB_LAT_READ, a), factor);
            verbose_op(r, "read", path);
            if (rc == -1) {
                s->err[MDWB_OBJ_READ]++;
                failed = 1;
                break;
            }
            if (rc) {
                s->err[MDWB_OBJ_READ]++;
                iol_err_clear(&r->err);
            } else {
                s->suc[MDWB_OBJ_READ]++;
            }
            ops++;
            if (cfg->read_only) continue;
            a = iol_now_ns();
            rc = r->be->unlink(r->bctx, path, &r->err);
            runtime = (double)(a - *t0) / 1e9;
            wait_after(timed(s, MDWB_LAT_DELETE, a), factor);
            verbose_op(r, "delete", path);
            if (rc) {
                s->err[MDWB_OBJ_DELETE]++;
                iol_err_clear(&r->err);
            } else {
                s->suc[MDWB_OBJ_DELETE]++;
            }
            int writer = (int)((me + cfg->offset * (d + 1)) % n);
            const int64_t newest = cfg->precreate + prev;
            obj_path(r, path, writer, d, newest);
            a = iol_now_ns();
            rc = obj_create(r, path, writer, newest, d);
            runtime = (double)(a - *t0) / 1e9;
            wait_after(timed(s, MDWB_LAT_CREATE, a), factor);
            verbose_op(r, "write", path);
            if (rc == 0) {
                s->suc[MDWB_OBJ_CREATE]++;
            } else {
                s->err[MDWB_OBJ_CREATE]++;
                if (!cfg->ignore_precreate_errors) {
                    failed = 1;
                    break;
                }
                iol_err_clear(&r->err);
            }
        }
        if (failed || stop_now(r)) {
            failed = 1;
            break;
        }
        progress(r, MDWB_BENCHMARK, iteration, *t0, ops, &next);
        if (armed && runtime >= (double)cfg->stonewall_s) {
            if (cfg->verbosity && me == 0) printf("%d: stonewall runtime %fs (%" PRId64 "s)\n", me, runtime, cfg->stonewall_s);
            if (!cfg->wear_out) {
                s->stonewall_iterations = (uint64_t)f;
                break;
            }
            /* Wear-out: every rank goes on to the most iterations any rank has done; the wait for the others
             * is not part of the phase's time (md-workbench restarts its clock after it). */
            armed = 0;
            int64_t pos = f + 1, most = pos;
            allreduce_s = (double)(iol_now_ns() - *t0) / 1e9;
            if (c->allreduce(c, &pos, &most, 1, IOL_DT_I64, IOL_OP_MAX)) comm_failed(r);
            total = most;
            *t0 = iol_now_ns();
            s->stonewall_iterations = (uint64_t)total;
            if (me == 0 && r->text) fprintf(r->text, "stonewall wear out %fs (%" PRId64 " iter)\n", runtime, total);
        }
    }
    s->t_s = (double)(iol_now_ns() - *t0) / 1e9 + allreduce_s;
    /* Every rank enters the same collectives, failed or not (a failed rank still must not leave the others
     * waiting in theirs). */
    if (armed && cfg->wear_out) {
        int64_t pos = total, most = total;
        if (c->allreduce(c, &pos, &most, 1, IOL_DT_I64, IOL_OP_MAX)) comm_failed(r);
        s->stonewall_iterations = (uint64_t)most;
    }
    if (cfg->stonewall_s && !cfg->wear_out) {
        uint64_t sw = s->stonewall_iterations;
        if (c->allreduce(c, &sw, &s->stonewall_iterations, 1, IOL_DT_U64, IOL_OP_MAX)) comm_failed(r);
    }
    if (!cfg->read_only) r->index += f;
}

/* Removes what is left of iolens's objects ("file-N") in one of this rank's sets; counts them. */
static void sweep_set(struct mdwb_run *r, const char *dir)
{
    DIR *dp = opendir(dir);
    if (!dp) return;
    struct dirent *e;
    char path[PATH_LEN];
    while ((e = readdir(dp)) != NULL) {
        const char *p = e->d_name;
        if (strncmp(p, "file-", 5) != 0 || !p[5] || strspn(p + 5, "0123456789") != strlen(p + 5)) continue;
        snprintf(path, sizeof path, "%s/%s", dir, p);
        if (unlink(path) == 0) r->cleanup.removed++;
    }
    closedir(dp);
}

/* Removes one of this rank's sets (after its objects): what a cut-short or stonewalled run left in it is
 * swept first; anything else in it stays, with the set. */
static int remove_set(struct mdwb_run *r, int64_t d, struct mdwb_stats *s)
{
    char path[PATH_LEN], name[64];
    set_path(r, path, r->comm->rank, d);
    mdwb_set_name(name, sizeof name, r->comm->rank, d);
    if (!iol_ledger_owns(r->cfg->dir, name)) return 0;
    int rc = rmdir(path);
    if (rc != 0 && errno == ENOTEMPTY) {
        sweep_set(r, path);
        rc = rmdir(path);
    }
    if (rc != 0 && errno != ENOENT) {
        if (s) s->err[MDWB_DSET_DELETE]++;
        r->cleanup.left++;
        if (r->text || r->comm->rank != 0) printf("Unable to remove directory %s\n", path);
        return -1;
    }
    if (s) {
        if (rc == 0) s->suc[MDWB_DSET_DELETE]++;
        else r->cleanup.missing++;
    }
    r->gone[d] = 1;
    return 0;
}

/* The sets removed leave the ledger in one edit, after the phase's clock stopped (the ledger's lock and
 * rewrite are iolens's bookkeeping, not md-workbench's work). */
static int forget_sets(struct mdwb_run *r)
{
    char (*names)[64] = calloc((size_t)r->cfg->data_sets, sizeof *names);
    const char **list = calloc((size_t)r->cfg->data_sets, sizeof *list);
    size_t n = 0;
    int rc = -1;
    if (names && list) {
        for (int64_t d = 0; d < r->cfg->data_sets; d++) {
            if (!r->gone[d]) continue;
            mdwb_set_name(names[n], sizeof names[n], r->comm->rank, d);
            list[n] = names[n];
            n++;
            r->gone[d] = 0;
        }
        rc = n ? iol_ledger_remove_many(r->cfg->dir, list, n, &r->err) : 0;
    } else {
        iol_err_set(&r->err, IOL_ERR_RUNTIME, "out of memory");
    }
    free(names);
    free(list);
    return rc;
}

static void cleanup_phase(struct mdwb_run *r, struct mdwb_stats *s, uint64_t t0)
{
    const struct mdwb_cfg *cfg = r->cfg;
    char path[PATH_LEN];
    uint64_t next = t0 + 500000000ULL, ops = 0;
    for (int64_t d = 0; d < cfg->data_sets; d++) {
        for (int64_t f = 0; f < cfg->precreate; f++) {
            obj_path(r, path, r->comm->rank, d, f + r->index);
            uint64_t a = iol_now_ns();
            int rc = r->be->unlink(r->bctx, path, &r->err);
            timed(s, MDWB_LAT_DELETE, a);
            verbose_op(r, "delete", path);
            if (rc == 0) {
                s->suc[MDWB_OBJ_DELETE]++;
            } else if (errno == ENOENT) {
                r->cleanup.missing++;   /* a cut-short run never made it: skipped, not an error */
            } else {
                s->err[MDWB_OBJ_DELETE]++;
            }
            iol_err_clear(&r->err);
            ops++;
        }
        if (r->be->does_io && remove_set(r, d, s)) break;
        progress(r, MDWB_CLEANUP, 0, t0, ops, &next);
        if (stop_now(r)) return;
    }
}

/* After the cleanup (or a failed run's): -o goes when iolens made it and nothing else of its own is listed. */
static void remove_dir(struct mdwb_run *r)
{
    if (r->comm->rank != 0 || !r->be->does_io) return;
    struct iol_ledger_view v;
    struct iol_err e = {0, ""};
    if (iol_ledger_load(r->cfg->dir, &v, &e)) return;
    int only_self = v.n == 1 && strcmp(v.lines[0], ".") == 0;
    iol_ledger_view_free(&v);
    if (!only_self) return;
    char ledger[PATH_LEN];
    snprintf(ledger, sizeof ledger, "%s/%s", r->cfg->dir, IOL_LEDGER_NAME);
    if (iol_ledger_remove(r->cfg->dir, ".", &e) == 0 && access(ledger, F_OK) != 0 && rmdir(r->cfg->dir) != 0 && r->text)
        fprintf(r->text, "Unable to remove directory %s\n", r->cfg->dir);
}

/* ---- combining a phase ------------------------------------------------------------------------------------ */

static int end_phase(struct mdwb_run *r, enum mdwb_kind kind, int iteration, double factor, struct mdwb_stats *s,
                     int cut_short)
{
    struct iol_comm *c = r->comm;
    if (c->barrier(c)) return comm_failed(r);
    char line[MDWB_LINE];
    if (r->cfg->process_reports) mdwb_phase_line(line, sizeof line, r, kind, s, NULL);
    struct mdwb_stats all = *s;
    uint64_t sums[2 * MDWB_NOPS];
    memcpy(sums, s->suc, sizeof s->suc);
    memcpy(sums + MDWB_NOPS, s->err, sizeof s->err);
    double mx[2] = {s->t_s, s->max_op_s};
    double *rank_t = c->rank == 0 ? calloc((size_t)r->nranks, sizeof *rank_t) : NULL;
    char *lines = c->rank == 0 && r->cfg->process_reports ? calloc((size_t)r->nranks, MDWB_LINE) : NULL;
    int bad = (c->rank == 0 && !rank_t) || (c->rank == 0 && r->cfg->process_reports && !lines);
    if (c->allreduce(c, sums, sums, 2 * MDWB_NOPS, IOL_DT_U64, IOL_OP_SUM) ||
        c->allreduce(c, mx, mx, 2, IOL_DT_F64, IOL_OP_MAX) || c->gather(c, &s->t_s, sizeof(double), rank_t, 0) ||
        (r->cfg->process_reports && c->gather(c, line, MDWB_LINE, lines, 0)))
        bad = comm_failed(r) != 0;
    for (int i = 0; i < MDWB_NLAT && !bad; i++)
        if (iol_hist_allreduce(c, &all.lat[i])) bad = comm_failed(r) != 0;
    if (c->rank != 0 || bad) {
        free(rank_t);
        free(lines);
        return bad ? -1 : 0;
    }
    memcpy(all.suc, sums, sizeof all.suc);
    memcpy(all.err, sums + MDWB_NOPS, sizeof all.err);
    all.t_s = mx[0];
    all.max_op_s = mx[1];
    if (r->nphases == r->max_phases) {
        struct mdwb_phase *grown = realloc(r->phases, sizeof *grown * (size_t)(r->max_phases * 2 + 4));
        if (!grown) {
            free(rank_t);
            free(lines);
            return iol_err_set(&r->err, IOL_ERR_RUNTIME, "out of memory");
        }
        r->phases = grown;
        r->max_phases = r->max_phases * 2 + 4;
    }
    struct mdwb_phase *ph = &r->phases[r->nphases++];
    memset(ph, 0, sizeof *ph);
    ph->kind = kind;
    ph->iteration = iteration;
    ph->waiting = factor;
    ph->all = all;
    ph->cut_short = cut_short;
    ph->rank_t_s = rank_t;
    ph->rank_lines = lines;
    /* md-workbench's spread of the ranks' times: min, mean and the sample standard deviation. */
    double sum = 0, mn = 1e308;
    for (int i = 0; i < r->nranks; i++) {
        sum += rank_t[i];
        if (rank_t[i] < mn) mn = rank_t[i];
    }
    ph->t_min_s = mn;
    ph->t_mean_s = sum / r->nranks;
    double var = 0;
    for (int i = 0; i < r->nranks; i++) var += (ph->t_mean_s - rank_t[i]) * (ph->t_mean_s - rank_t[i]);
    ph->t_stddev_s = r->nranks > 1 ? sqrt(var / (r->nranks - 1)) : 0.0;
    mdwb_rate(r->cfg, kind, &all, &ph->rate);
    if (r->text) {
        mdwb_phase_line(line, sizeof line, r, kind, &all, ph);
        fprintf(r->text, "%s\n", line);
        for (int i = 0; lines && i < r->nranks; i++) fprintf(r->text, "%d: %s\n", i, lines + (size_t)i * MDWB_LINE);
        fflush(r->text);
    }
    return 0;
}

/* ---- the run ------------------------------------------------------------------------------------------- */

static int agree(struct mdwb_run *r)
{
    return iol_agree(r->comm, &r->err, &r->err_rank);
}

/* One phase: barrier, the work, the job's figures (and its line). A phase cut short (error, signal) is still
 * combined and reported, marked. */
static int run_phase(struct mdwb_run *r, enum mdwb_kind kind, int iteration, double factor)
{
    struct iol_comm *c = r->comm;
    r->err_phase = mdwb_kind_names[kind];
    struct mdwb_stats *s = malloc(sizeof *s);
    if (!s) return iol_err_set(&r->err, IOL_ERR_RUNTIME, "out of memory");
    stats_init(s);
    if (c->barrier(c)) {
        free(s);
        return comm_failed(r);
    }
    uint64_t t0 = iol_now_ns();
    if (kind == MDWB_PRECREATE) {
        precreate(r, s, t0);
    } else if (kind == MDWB_BENCHMARK) {
        benchmark(r, s, &t0, iteration, factor);
    } else {
        cleanup_phase(r, s, t0);
    }
    if (kind != MDWB_BENCHMARK) s->t_s = (double)(iol_now_ns() - t0) / 1e9;
    if (kind == MDWB_CLEANUP) forget_sets(r);
    int failed = agree(r);
    int rc = end_phase(r, kind, iteration, factor, s, failed);
    free(s);
    return failed || rc ? -1 : 0;
}

static int setup(struct mdwb_run *r)
{
    const struct mdwb_cfg *cfg = r->cfg;
    struct iol_comm *c = r->comm;
    r->nranks = c->size;
    r->be = iol_backend_find(cfg->api);
    r->seed = cfg->seed;
    if (r->seed == -1) {
        /* md-workbench: the seed is rank 0's clock, shared. */
        r->seed = (int64_t)time(NULL);
        if (c->bcast(c, &r->seed, sizeof r->seed, 0)) return comm_failed(r);
    }
    int64_t pos = 0;
    int failed = 0;
    if (c->rank == 0 && (cfg->phase_cleanup || cfg->phase_benchmark) && !cfg->phase_precreate && !cfg->start_item)
        failed = mdwb_read_position(cfg->run_info_file, &pos, &r->err) != 0;
    if (c->bcast(c, &pos, sizeof pos, 0)) return comm_failed(r);
    if (failed) return -1;
    r->index = r->start_index = cfg->start_item ? cfg->start_item : pos;
    r->buf_len = (size_t)((cfg->object_size + 7) & ~(int64_t)7);
    if (posix_memalign(&r->buf, 4096, r->buf_len + 4096)) return iol_err_set(&r->err, IOL_ERR_RUNTIME, "out of memory");
    memset(r->buf, 0, r->buf_len + 4096);
    r->gone = calloc((size_t)cfg->data_sets, 1);
    if (!r->gone) return iol_err_set(&r->err, IOL_ERR_RUNTIME, "out of memory");
    if (c->rank == 0) {
        r->max_phases = (int)(2 + cfg->iterations * (cfg->adaptive ? 8 : 1));
        r->phases = calloc((size_t)r->max_phases, sizeof *r->phases);
        if (!r->phases) return iol_err_set(&r->err, IOL_ERR_RUNTIME, "out of memory");
    }
    return r->be->ctx_open(&r->bctx, 1, &r->err);
}

/* Before a precreate: -o (made by rank 0 if missing, recorded as iolens's) and each rank's data sets, listed
 * in the ledger before any is made, so a run killed right after still owns them. */
static int claim_sets(struct mdwb_run *r)
{
    const struct mdwb_cfg *cfg = r->cfg;
    struct iol_comm *c = r->comm;
    if (!r->be->does_io) return 0;
    if (c->rank == 0) {
        struct stat st;
        if (stat(cfg->dir, &st) != 0) {
            if (mkdir(cfg->dir, 0755) != 0 && errno != EEXIST)
                iol_err_errno(&r->err, IOL_ERR_RUNTIME, errno, "mkdir %s", cfg->dir);
            else iol_ledger_add(cfg->dir, ".", &r->err);
        }
    }
    if (agree(r)) return -1;
    char (*names)[64] = calloc((size_t)cfg->data_sets, sizeof *names);
    const char **list = calloc((size_t)cfg->data_sets, sizeof *list);
    if (!names || !list) {
        free(names);
        free(list);
        return iol_err_set(&r->err, IOL_ERR_RUNTIME, "out of memory");
    }
    for (int64_t d = 0; d < cfg->data_sets; d++) {
        mdwb_set_name(names[d], sizeof names[d], c->rank, d);
        list[d] = names[d];
    }
    int rc = iol_ledger_add_many(cfg->dir, list, (size_t)cfg->data_sets, &r->err);
    free(names);
    free(list);
    if (rc == 0) r->made_sets = 1;
    return agree(r);
}

static void write_document(struct mdwb_run *r);

/* After a failed or interrupted run that precreated: every rank removes its sets (and what is in them that is
 * iolens's), and -o if iolens made it. The run's own error stays the one reported. */
static void cleanup_after_failure(struct mdwb_run *r)
{
    struct iol_comm *c = r->comm;
    int64_t made = r->made_sets, any = 0;
    if (c->allreduce(c, &made, &any, 1, IOL_DT_I64, IOL_OP_MAX) || !any || !r->be->does_io) return;
    struct iol_err first = r->err;
    /* A launcher may kill the ranks soon after its signal: the document goes out first, saying the cleanup
     * is pending, and again once it is done. */
    r->cleanup.state = IOL_CLEANUP_PENDING;
    if (iol_interrupt_pending() && c->rank == 0) write_document(r);
    r->cleanup.state = IOL_CLEANUP_DONE;
    for (int64_t d = 0; d < r->cfg->data_sets; d++) {
        char path[PATH_LEN];
        set_path(r, path, c->rank, d);
        sweep_set(r, path);
        if (remove_set(r, d, NULL)) break;
    }
    forget_sets(r);
    iol_err_clear(&r->err);
    if (c->barrier(c) == 0) remove_dir(r);
    r->err = first;
}

static void store_position(struct mdwb_run *r)
{
    if (r->comm->rank != 0) return;
    FILE *fp = fopen(r->cfg->run_info_file, "w");
    if (!fp || fprintf(fp, "pos: %" PRId64 "\n", r->index) < 0 || fclose(fp) != 0)
        iol_err_errno(&r->err, IOL_ERR_RUNTIME, errno, "--run-info-file: cannot write %s", r->cfg->run_info_file);
}

static void json_body(struct iol_json *j, const void *r)
{
    mdwb_report_json(j, r);
}

static void write_document(struct mdwb_run *r)
{
    iol_doc_write("md-workbench", r->info, r->comm, r->nranks, json_body, r, &r->cleanup, &r->err, r->err_rank,
                  r->err_phase);
}

static int run_phases(struct mdwb_run *r)
{
    const struct mdwb_cfg *cfg = r->cfg;
    if (cfg->phase_precreate) {
        r->err_phase = "precreate";
        if (claim_sets(r) || run_phase(r, MDWB_PRECREATE, 0, 0)) return -1;
    }
    for (int it = 0; cfg->phase_benchmark && it < cfg->iterations; it++) {
        if (run_phase(r, MDWB_BENCHMARK, it, cfg->adaptive ? 0.0 : cfg->waiting)) return -1;
        /* -T: the same iteration again with waiting factors 0.0625 to 4, doubling. */
        for (int k = 0; cfg->adaptive && k <= 6; k++)
            if (run_phase(r, MDWB_BENCHMARK, it, 0.0625 * (double)(1 << k))) return -1;
    }
    if (cfg->phase_cleanup) {
        if (run_phase(r, MDWB_CLEANUP, 0, 0)) return -1;
        r->cleanup.state = IOL_CLEANUP_DONE;
        remove_dir(r);
    } else {
        store_position(r);
    }
    return agree(r);
}

int mdwb_run(const struct mdwb_cfg *cfg, struct iol_comm *comm, const struct iol_run_info *info)
{
    struct mdwb_run run;
    struct mdwb_run *r = &run;
    memset(r, 0, sizeof *r);
    r->cfg = cfg;
    r->comm = comm;
    r->info = info;
    r->err_rank = -1;
    r->err_phase = "setup";
    r->t_start_ns = iol_now_ns();
    if (iol_comm_setup(comm, &r->err) == 0) setup(r);
    int failed = agree(r);
    r->text = comm->rank == 0 && !info->quiet ? stdout : NULL;
    if (r->text && !failed) mdwb_report_begin(r->text, r);
    if (!failed) failed = run_phases(r) != 0;
    if (failed) cleanup_after_failure(r);
    /* -X: what differed is summed over the ranks (the first bad object named is rank 0's, or the lowest's). */
    uint64_t v[2] = {r->verify_bytes, r->verify_errors};
    if (comm->allreduce(comm, v, v, 2, IOL_DT_U64, IOL_OP_SUM) == 0) {
        r->verify_bytes = v[0];
        r->verify_errors = v[1];
    }
    uint64_t cl[3] = {r->cleanup.removed, r->cleanup.missing, r->cleanup.left};
    if (comm->allreduce(comm, cl, cl, 3, IOL_DT_U64, IOL_OP_SUM) == 0) {
        r->cleanup.removed = cl[0];
        r->cleanup.missing = cl[1];
        r->cleanup.left = cl[2];
    }
    if (comm->rank == 0) {
        if (r->text && !failed) mdwb_report_end(r->text, r);
        write_document(r);
        if (r->err.code) fprintf(stderr, "iolens-bench: error: %s\n", r->err.msg);
    }
    int status = r->err.code ? r->err.code : IOL_OK;
    int64_t st = status, worst = status;
    if (comm->allreduce(comm, &st, &worst, 1, IOL_DT_I64, IOL_OP_MAX) == 0) status = (int)worst;
    if (r->bctx) r->be->ctx_close(r->bctx);
    free(r->buf);
    free(r->gone);
    for (int i = 0; i < r->nphases; i++) {
        free(r->phases[i].rank_t_s);
        free(r->phases[i].rank_lines);
    }
    free(r->phases);
    return status;
}
