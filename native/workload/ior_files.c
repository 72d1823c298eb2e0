/* ior_files.c — where the ior workload's files live, and the rules that keep it from touching anything else.
 *
 * iolens only writes under the path the user gave, only removes files it created (recorded in the
 * directory's ledger, see common/ledger.h) unless -E says to use existing files, and refuses before any I/O
 * when a file it would overwrite belongs to someone else. */
#include "ior_internal.h"
#include "ior_flags.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "../common/ledger.h"
#include "../common/pathcheck.h"
#include "../common/space.h"

void ior_split_path(const char *path, char *dir, size_t dlen, char *base, size_t blen)
{
    const char *slash = strrchr(path, '/');
    if (!slash) {
        snprintf(dir, dlen, ".");
        snprintf(base, blen, "%s", path);
    } else if (slash == path) {
        snprintf(dir, dlen, "/");
        snprintf(base, blen, "%s", slash + 1);
    } else {
        snprintf(dir, dlen, "%.*s", (int)(slash - path), path);
        snprintf(base, blen, "%s", slash + 1);
    }
}

/* The part of -o up to and including its last '/' ("" when it has none): every name lives below it. */
static void path_prefix(const struct ior_cfg *cfg, char *out, size_t len)
{
    const char *slash = strrchr(cfg->path, '/');
    snprintf(out, len, "%.*s", slash ? (int)(slash - cfg->path + 1) : 0, cfg->path);
}

/* IOR's names, relative to the directory of -o: "base", "base.00000003" with -F, "3/base.00000003" with -F -u,
 * and ".N" for iteration N with -m. This is also the name the ledger records. */
static void file_name(const struct ior_cfg *cfg, int rank, int iteration, char *out, size_t len)
{
    char dir[IOL_STR_MAX], base[IOL_STR_MAX];
    int n;
    ior_split_path(cfg->path, dir, sizeof dir, base, sizeof base);
    if (cfg->fpp && cfg->unique_dir) n = snprintf(out, len, "%d/%s.%08d", rank, base, rank);
    else if (cfg->fpp) n = snprintf(out, len, "%s.%08d", base, rank);
    else n = snprintf(out, len, "%s", base);
    if (cfg->multi_file && n > 0 && (size_t)n < len) snprintf(out + n, len - (size_t)n, ".%d", iteration);
}

void ior_file_path(const struct ior_cfg *cfg, int rank, int iteration, char *out, size_t len)
{
    char prefix[IOL_STR_MAX], name[IOL_STR_MAX + 64];
    path_prefix(cfg, prefix, sizeof prefix);
    file_name(cfg, rank, iteration, name, sizeof name);
    /* -o is at most IOL_STR_MAX long, so only a name near that limit can be cut: the open then fails on it. */
    if (snprintf(out, len, "%s%s", prefix, name) >= (int)len) out[len - 1] = '\0';
}

/* -u: the directory of a rank (path, and its ledger name "RANK/"). */
static void rank_dir(const struct ior_cfg *cfg, int rank, char *path, size_t plen, char *name, size_t nlen)
{
    char prefix[IOL_STR_MAX];
    path_prefix(cfg, prefix, sizeof prefix);
    snprintf(path, plen, "%s%d", prefix, rank);
    snprintf(name, nlen, "%d/", rank);
}

static void ledger_dir(const struct ior_cfg *cfg, char *dir, size_t len)
{
    char base[IOL_STR_MAX];
    ior_split_path(cfg->path, dir, len, base, sizeof base);
}

static int check_one_file(const struct ior_cfg *cfg, const char *p, int is_owned, struct iol_err *err)
{
    struct stat st;
    int exists = stat(p, &st) == 0;
    if (exists && !S_ISREG(st.st_mode))
        return iol_err_set(err, IOL_ERR_USAGE, "-o: '%s' exists and is not a regular file", p);
    if (cfg->write && exists && !cfg->use_existing && !is_owned)
        return iol_err_set(err, IOL_ERR_USAGE,
                           "-o: '%s' exists and was not created by iolens; refusing to overwrite it "
                           "(-E writes into existing files)", p);
    if (!cfg->write && (cfg->read || cfg->check_read) && !exists)
        return iol_err_set(err, IOL_ERR_USAGE, "-o: '%s' does not exist: nothing to read (write it first with -w -k)", p);
    return 0;
}

/* Every file (and -u directory) of ranks [lo, hi), checked against the ledger by its full name. */
static int check_names(const struct ior_cfg *cfg, int lo, int hi, const struct iol_ledger_view *v,
                       struct iol_err *err)
{
    int reps = cfg->multi_file ? (int)cfg->reps : 1;
    char p[IOL_STR_MAX + 64], name[IOL_STR_MAX + 64];
    struct stat st;
    for (int rank = lo; cfg->unique_dir && rank < hi; rank++) {
        rank_dir(cfg, rank, p, sizeof p, name, sizeof name);
        if (stat(p, &st) == 0 && !S_ISDIR(st.st_mode))
            return iol_err_set(err, IOL_ERR_USAGE, "-u: '%s' exists and is not a directory", p);
    }
    for (int it = 0; it < reps; it++) {
        for (int rank = lo; rank < (cfg->fpp ? hi : 1); rank++) {   /* a shared file is rank 0's to check */
            ior_file_path(cfg, rank, it, p, sizeof p);
            file_name(cfg, rank, it, name, sizeof name);
            if (check_one_file(cfg, p, iol_ledger_view_has(v, name), err)) return -1;
        }
    }
    return 0;
}

/* -y: the files live under <-o><node>/, checked with this process's node (rank 0's, under MPI): the checks
 * run again on a copy of the options with that path. 1 = done (rc set), 0 = not a dual-mount run. */
static int dual_mount_check(const struct ior_cfg *cfg, int nranks, int lo, int hi, int space, int *rc,
                            struct iol_err *err)
{
    if (!cfg->dual_mount) return 0;
    struct ior_cfg *own = malloc(sizeof *own);
    if (!own) {
        *rc = iol_err_set(err, IOL_ERR_RUNTIME, "out of memory");
        return 1;
    }
    *own = *cfg;
    ior_dual_mount_path(own);
    own->dual_mount = 0;
    *rc = space ? ior_check_space(own, nranks, err) : ior_check_paths(own, nranks, lo, hi, err);
    free(own);
    return 1;
}

/* An output file `iolens ior` writes after the run (what = the option, for the message): its directory must
 * exist and be writable, and the name must not be a directory or a file that cannot be written. */
static int output_file_problem(const char *what, const char *path, struct iol_err *err)
{
    if (!path[0]) return 0;
    char dir[IOL_STR_MAX], base[IOL_STR_MAX], why[IOL_STR_MAX + 64];
    ior_split_path(path, dir, sizeof dir, base, sizeof base);
    struct stat st;
    if (!base[0] || (stat(path, &st) == 0 && S_ISDIR(st.st_mode)))
        return iol_err_set(err, IOL_ERR_USAGE, "%s: '%s' names a directory", what, path);
    if (iol_dir_problem(dir, why, sizeof why)) return iol_err_set(err, IOL_ERR_USAGE, "%s: %s (for '%s')", what, why, path);
    if (access(dir, W_OK | X_OK) != 0)
        return iol_err_set(err, IOL_ERR_USAGE, "%s: directory '%s' is not writable", what, dir);
    if (access(path, F_OK) == 0 && access(path, W_OK) != 0)
        return iol_err_set(err, IOL_ERR_USAGE, "%s: '%s' is not writable", what, path);
    return 0;
}

int ior_check_paths(const struct ior_cfg *cfg, int nranks, int lo, int hi, struct iol_err *err)
{
    /* -O summaryFile and saveRankPerformanceDetailsCSV: `iolens ior` writes them after the run, also after a
     * run without I/O (IOR opens them when it reads the options, before any test, --dryRun too); a run must
     * not end in "cannot write". */
    if (lo == 0 && (output_file_problem("-O summaryFile", cfg->summary_file, err) ||
                    output_file_problem("-O saveRankPerformanceDetailsCSV", cfg->rank_csv, err)))
        return -1;
    const struct iol_backend *be = iol_backend_find(cfg->api);
    if (!be || !be->does_io) return 0;
    int rc = 0;
    if (dual_mount_check(cfg, nranks, lo, hi, 0, &rc, err)) return rc;

    char dir[IOL_STR_MAX], base[IOL_STR_MAX];
    ior_split_path(cfg->path, dir, sizeof dir, base, sizeof base);
    if (!base[0]) return iol_err_set(err, IOL_ERR_USAGE, "-o: '%s' names a directory, not a file", cfg->path);
    char why[IOL_STR_MAX + 64];
    if (iol_dir_problem(dir, why, sizeof why)) return iol_err_set(err, IOL_ERR_USAGE, "-o: %s (for '%s')", why, cfg->path);
    if (cfg->write && access(dir, W_OK | X_OK) != 0)
        return iol_err_set(err, IOL_ERR_USAGE, "-o: directory '%s' is not writable", dir);

    struct iol_ledger_view v;
    if (iol_ledger_load(dir, &v, err)) return -1;
    rc = check_names(cfg, lo, hi, &v, err);
    iol_ledger_view_free(&v);
    if (rc || lo != 0) return rc;


    if (cfg->direct) {
        /* The weakest alignment any Linux file system accepts for O_DIRECT; a stricter device still
         * fails at open/transfer time with a message. */
        const uint64_t align = 512;
        if (cfg->xfer % align)
            return iol_err_set(err, IOL_ERR_USAGE,
                               "--posix.odirect: transfer size %llu is not a multiple of %llu bytes, as O_DIRECT needs",
                               (unsigned long long)cfg->xfer, (unsigned long long)align);
    }
    return 0;
}

int ior_check_space(const struct ior_cfg *cfg, int nranks, struct iol_err *err)
{
    const struct iol_backend *be = iol_backend_find(cfg->api);
    /* With a stonewall (-D) the deadline, not the size, ends the write: IO500's sizes are meant to be larger
     * than any file system, so the room check only applies to runs that write everything. */
    if (!be || !be->does_io || !cfg->write || cfg->deadline_s != 0 || cfg->segments < 0) return 0;
    int rc = 0;
    if (dual_mount_check(cfg, nranks, 0, nranks, 1, &rc, err)) return rc;
    char dir[IOL_STR_MAX], base[IOL_STR_MAX];
    ior_split_path(cfg->path, dir, sizeof dir, base, sizeof base);
    int reps = cfg->multi_file ? (int)cfg->reps : 1;
    /* Data written per iteration; with -m every iteration keeps its own file until the end. */
    long double need = (long double)cfg->segments * cfg->block * nranks * reps;
    struct iol_space sp;
    sp.n = 0;
    iol_space_add(&sp, dir, need, (long double)(cfg->fpp ? nranks : 1) * reps);
    return iol_space_check(&sp, "-b", "-b x -s x ranks", err);
}

/* The names of one iteration (every rank's file, and with -u every rank's directory), as malloc'd strings in
 * *out; returns how many, or -1 when out of memory. */
static int iteration_names(const struct ior_cfg *cfg, int nranks, int iteration, char ***out, char ***paths)
{
    int nfiles = cfg->fpp ? nranks : 1, ndirs = cfg->unique_dir ? nranks : 0, n = nfiles + ndirs;
    char **names = calloc((size_t)n, sizeof *names), **ps = calloc((size_t)n, sizeof *ps);
    char p[IOL_STR_MAX + 64], name[IOL_STR_MAX + 64];
    for (int i = 0; names && ps && i < n; i++) {
        if (i < nfiles) {
            ior_file_path(cfg, i, iteration, p, sizeof p);
            file_name(cfg, i, iteration, name, sizeof name);
        } else {
            rank_dir(cfg, i - nfiles, p, sizeof p, name, sizeof name);
        }
        names[i] = strdup(name);
        ps[i] = strdup(p);
        if (!names[i] || !ps[i]) n = -1;
    }
    if (!names || !ps) n = -1;
    *out = names;
    *paths = ps;
    return n;
}

static void free_names(char **names, char **paths, int n)
{
    for (int i = 0; i < n; i++) {
        if (names) free(names[i]);
        if (paths) free(paths[i]);
    }
    free(names);
    free(paths);
}

typedef int (*ledger_edit)(const char *dir, const char *const *names, size_t n, struct iol_err *err);

/* Applies `edit` to the ledger names of this iteration whose file or directory does not exist. */
static int edit_absent_names(const struct ior_cfg *cfg, int nranks, int iteration, ledger_edit edit,
                             struct iol_err *err)
{
    char dir[IOL_STR_MAX];
    ledger_dir(cfg, dir, sizeof dir);
    char **names = NULL, **paths = NULL;
    int n = iteration_names(cfg, nranks, iteration, &names, &paths), k = 0, rc = 0;
    const char **absent = n > 0 ? calloc((size_t)n, sizeof *absent) : NULL;
    if (n < 0 || (n > 0 && !absent)) rc = iol_err_set(err, IOL_ERR_RUNTIME, "out of memory");
    for (int i = 0; absent && i < n; i++)
        if (access(paths[i], F_OK) != 0) absent[k++] = names[i];
    if (!rc && k) rc = edit(dir, absent, (size_t)k, err);
    free(absent);
    free_names(names, paths, n < 0 ? 0 : n);
    return rc;
}

int ior_forget_removed(const struct ior_cfg *cfg, int nranks, int iteration, struct iol_err *err)
{
    return edit_absent_names(cfg, nranks, iteration, iol_ledger_remove_many, err);
}

int ior_prepare_write(struct ior_run *r, int iteration, struct iol_err *err)
{
    const struct ior_cfg *cfg = r->cfg;
    if (!r->be->does_io) return 0;
    int rank = r->comm->rank;
    char dir[IOL_STR_MAX], p[IOL_STR_MAX + 64], name[IOL_STR_MAX + 64];
    ledger_dir(cfg, dir, sizeof dir);
    ior_file_path(cfg, rank, iteration, p, sizeof p);
    file_name(cfg, rank, iteration, name, sizeof name);
    int exists = access(p, F_OK) == 0;

    /* The names of what does not exist yet, i.e. what this run will create, go in the ledger before anything
     * is created, so a run killed half way still owns its files. What exists and is not listed stays someone
     * else's: used (with -E), never removed. */
    int rc = rank == 0 ? edit_absent_names(cfg, r->nranks, iteration, iol_ledger_add_many, err) : 0;
    if (r->comm->barrier(r->comm)) return iol_err_set(err, IOL_ERR_RUNTIME, "communicator failed");
    if (rc) return -1;

    if (cfg->fpp && cfg->unique_dir) {
        char d[IOL_STR_MAX + 32], dname[64];
        rank_dir(cfg, rank, d, sizeof d, dname, sizeof dname);
        if (mkdir(d, 0755) != 0 && errno != EEXIST) return iol_err_errno(err, IOL_ERR_RUNTIME, errno, "mkdir %s", d);
    }
    /* Like IOR, start from a fresh file unless -E; only a file this tool created is ever removed. */
    if (exists && !cfg->use_existing && (cfg->fpp || rank == 0)) {
        if (!iol_ledger_owns(dir, name))
            return iol_err_set(err, IOL_ERR_USAGE, "-o: '%s' exists and was not created by iolens", p);
        if (unlink(p) != 0 && errno != ENOENT) return iol_err_errno(err, IOL_ERR_RUNTIME, errno, "unlink %s", p);
    }
    return 0;
}

int ior_remove_file(struct ior_run *r, int rank, int iteration, struct iol_err *err)
{
    const struct ior_cfg *cfg = r->cfg;
    if (!r->be->does_io) return 0;
    char dir[IOL_STR_MAX], p[IOL_STR_MAX + 64], name[IOL_STR_MAX + 64];
    ledger_dir(cfg, dir, sizeof dir);
    ior_file_path(cfg, rank, iteration, p, sizeof p);
    file_name(cfg, rank, iteration, name, sizeof name);
    /* Whatever -E says: a file iolens did not create is never removed. */
    int removed = 0;
    if (access(p, F_OK) == 0 && iol_ledger_owns(dir, name)) {
        if (unlink(p) == 0) removed = 1;
        else if (errno != ENOENT) return iol_err_errno(err, IOL_ERR_RUNTIME, errno, "unlink %s", p);
    }
    if (cfg->fpp && cfg->unique_dir) {
        char d[IOL_STR_MAX + 32], dname[64];
        rank_dir(cfg, rank, d, sizeof d, dname, sizeof dname);
        /* Only a directory iolens made, and only once empty (rmdir refuses otherwise). */
        if (iol_ledger_owns(dir, dname)) rmdir(d);
    }
    return removed;
}

/* Is `name` (a ledger line) one of the names ior gives files of this -o base, for any rank count, iteration
 * or layout: "[R/]BASE", "[R/]BASE.N" or "[R/]BASE.N.N" (digits), or a -u directory "R/"? */
static int is_ior_name(const char *name, const char *base, int *is_dir)
{
    const char *p = name;
    *is_dir = 0;
    if (*p >= '0' && *p <= '9') {
        const char *q = p;
        while (*q >= '0' && *q <= '9') q++;
        if (*q == '/') {
            if (q[1] == '\0') {
                *is_dir = 1;
                return 1;
            }
            p = q + 1;
        }
    }
    size_t blen = strlen(base);
    if (strncmp(p, base, blen) != 0) return 0;
    p += blen;
    for (int parts = 0; *p; parts++) {
        if (parts == 2 || *p != '.' || !(p[1] >= '0' && p[1] <= '9')) return 0;
        p++;
        while (*p >= '0' && *p <= '9') p++;
    }
    return 1;
}

int ior_remove_listed(const struct ior_cfg *cfg, uint64_t *removed, uint64_t *missing, struct iol_err *err)
{
    char dir[IOL_STR_MAX], base[IOL_STR_MAX];
    ior_split_path(cfg->path, dir, sizeof dir, base, sizeof base);
    struct iol_ledger_view v;
    if (iol_ledger_load(dir, &v, err)) return -1;
    const char **gone = v.n ? calloc(v.n, sizeof *gone) : NULL;
    size_t ngone = 0;
    int rc = v.n && !gone ? iol_err_set(err, IOL_ERR_RUNTIME, "out of memory") : 0;
    /* Files first, then the -u directories that held them (sorted lines put "3/" before "3/f..."). */
    for (int pass = 0; pass < 2 && !rc; pass++) {
        for (size_t i = 0; i < v.n && !rc; i++) {
            int is_dir = 0;
            if (!is_ior_name(v.lines[i], base, &is_dir) || is_dir != pass) continue;
            char p[2 * IOL_STR_MAX + 2];
            snprintf(p, sizeof p, "%s/%s", dir, v.lines[i]);
            struct stat st;
            if (lstat(p, &st) != 0) {
                if (errno != ENOENT) {
                    rc = iol_err_errno(err, IOL_ERR_RUNTIME, errno, "stat %s", p);
                    break;
                }
                if (!is_dir) (*missing)++;   /* a cut-short run never made it, or it went already */
                gone[ngone++] = v.lines[i];
                continue;
            }
            if (is_dir) {
                /* Only once empty: something else inside stays, with the directory. */
                if (rmdir(p) == 0) gone[ngone++] = v.lines[i];
                continue;
            }
            if (unlink(p) != 0 && errno != ENOENT) {
                rc = iol_err_errno(err, IOL_ERR_RUNTIME, errno, "unlink %s", p);
                break;
            }
            (*removed)++;
            gone[ngone++] = v.lines[i];
        }
    }
    if (ngone && iol_ledger_remove_many(dir, gone, ngone, rc ? NULL : err) && !rc) rc = -1;
    free(gone);
    iol_ledger_view_free(&v);
    return rc;
}
