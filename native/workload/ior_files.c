/* ior_files.c — where the ior workload's files live, and the rules that keep it from touching anything else.
 *
 * iolens only writes under the path the user gave, only removes files it created (recorded in the
 * directory's ledger, see common/ledger.h) unless -E says to use existing files, and refuses before any I/O
 * when a file it would overwrite belongs to someone else. */
#include "ior_internal.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "../common/ledger.h"

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

/* IOR's names: "path", "path.00000003" with -F, "dir/3/base.00000003" with -F -u, and ".N" for iteration N
 * with -m. */
void ior_file_path(const struct ior_cfg *cfg, int rank, int iteration, char *out, size_t len)
{
    char dir[IOL_STR_MAX], base[IOL_STR_MAX];
    int n;
    if (cfg->fpp && cfg->unique_dir) {
        ior_split_path(cfg->path, dir, sizeof dir, base, sizeof base);
        n = snprintf(out, len, "%s/%d/%s.%08d", dir, rank, base, rank);
    } else if (cfg->fpp) {
        n = snprintf(out, len, "%s.%08d", cfg->path, rank);
    } else {
        n = snprintf(out, len, "%s", cfg->path);
    }
    if (cfg->multi_file && n > 0 && (size_t)n < len) snprintf(out + n, len - (size_t)n, ".%d", iteration);
}

static void rank_dir(const struct ior_cfg *cfg, int rank, char *out, size_t len)
{
    char dir[IOL_STR_MAX], base[IOL_STR_MAX];
    ior_split_path(cfg->path, dir, sizeof dir, base, sizeof base);
    snprintf(out, len, "%s/%d", dir, rank);
}

static int owned(const struct ior_cfg *cfg)
{
    char dir[IOL_STR_MAX], base[IOL_STR_MAX];
    ior_split_path(cfg->path, dir, sizeof dir, base, sizeof base);
    return iol_ledger_owns(dir, base);
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

int ior_check_paths(const struct ior_cfg *cfg, int nranks, int lo, int hi, struct iol_err *err)
{
    const struct iol_backend *be = iol_backend_find(cfg->api);
    if (!be || !be->does_io) return 0;

    char dir[IOL_STR_MAX], base[IOL_STR_MAX];
    ior_split_path(cfg->path, dir, sizeof dir, base, sizeof base);
    if (!base[0]) return iol_err_set(err, IOL_ERR_USAGE, "-o: '%s' names a directory, not a file", cfg->path);
    struct stat st;
    if (stat(dir, &st) != 0)
        return iol_err_set(err, IOL_ERR_USAGE, "-o: directory '%s' does not exist", dir);
    if (!S_ISDIR(st.st_mode)) return iol_err_set(err, IOL_ERR_USAGE, "-o: '%s' is not a directory", dir);
    if (cfg->write && access(dir, W_OK | X_OK) != 0)
        return iol_err_set(err, IOL_ERR_USAGE, "-o: directory '%s' is not writable", dir);

    int is_owned = owned(cfg);
    int reps = cfg->multi_file ? (int)cfg->reps : 1;
    char p[IOL_STR_MAX + 64];
    for (int it = 0; it < reps; it++) {
        if (cfg->fpp) {
            for (int rank = lo; rank < hi; rank++) {
                ior_file_path(cfg, rank, it, p, sizeof p);
                if (check_one_file(cfg, p, is_owned, err)) return -1;
            }
        } else if (lo == 0) {
            ior_file_path(cfg, 0, it, p, sizeof p);
            if (check_one_file(cfg, p, is_owned, err)) return -1;
        }
    }
    if (lo != 0) return 0;

    /* With a stonewall (-D) the deadline, not the size, ends the write: IO500's sizes are meant to be larger
     * than any file system, so the room check only applies to runs that write everything. */
    if (cfg->write && cfg->deadline_s == 0) {
        struct statvfs sv;
        /* Data written per iteration; with -m every iteration keeps its own file until the end. */
        long double need = (long double)cfg->segments * cfg->block * nranks * reps;
        if (statvfs(dir, &sv) == 0) {
            long double avail = (long double)sv.f_bavail * sv.f_frsize;
            if (need > avail) {
                char a[32], b[32];
                iol_format_size(need > 1.8e19L ? UINT64_MAX : (uint64_t)need, a, sizeof a);
                iol_format_size((uint64_t)avail, b, sizeof b);
                return iol_err_set(err, IOL_ERR_USAGE,
                                   "-b: the run would write %s (-b x -s x ranks) but '%s' has only %s free", a, dir, b);
            }
        }
    }
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

int ior_prepare_write(struct ior_run *r, int iteration, struct iol_err *err)
{
    const struct ior_cfg *cfg = r->cfg;
    if (!r->be->does_io) return 0;
    int rank = r->comm->rank;
    char dir[IOL_STR_MAX], base[IOL_STR_MAX], p[IOL_STR_MAX + 64];
    ior_split_path(cfg->path, dir, sizeof dir, base, sizeof base);
    ior_file_path(cfg, rank, iteration, p, sizeof p);
    int exists = access(p, F_OK) == 0;

    /* The ledger entry goes in before any file is created, so a run killed half way still owns its files. */
    if (rank == 0) {
        char p0[IOL_STR_MAX + 64];
        ior_file_path(cfg, 0, iteration, p0, sizeof p0);
        if (access(p0, F_OK) != 0 || iol_ledger_owns(dir, base)) {
            if (iol_ledger_add(dir, base, err)) return -1;
        }
    }
    if (r->comm->barrier(r->comm)) return iol_err_set(err, IOL_ERR_RUNTIME, "communicator failed");

    if (cfg->fpp && cfg->unique_dir) {
        char d[IOL_STR_MAX + 32];
        rank_dir(cfg, rank, d, sizeof d);
        if (mkdir(d, 0755) != 0 && errno != EEXIST) return iol_err_errno(err, IOL_ERR_RUNTIME, errno, "mkdir %s", d);
    }
    /* Like IOR, start from a fresh file unless -E; only a file this tool created is ever removed. */
    if (exists && !cfg->use_existing && (cfg->fpp || rank == 0)) {
        if (!iol_ledger_owns(dir, base))
            return iol_err_set(err, IOL_ERR_USAGE, "-o: '%s' exists and was not created by iolens", p);
        if (unlink(p) != 0 && errno != ENOENT) return iol_err_errno(err, IOL_ERR_RUNTIME, errno, "unlink %s", p);
    }
    return 0;
}

int ior_remove_file(struct ior_run *r, int rank, int iteration, struct iol_err *err)
{
    const struct ior_cfg *cfg = r->cfg;
    if (!r->be->does_io) return 0;
    char p[IOL_STR_MAX + 64];
    ior_file_path(cfg, rank, iteration, p, sizeof p);
    if (access(p, F_OK) == 0) {
        if (!cfg->use_existing && !owned(cfg)) return 0;   /* not ours: leave it */
        if (unlink(p) != 0 && errno != ENOENT) return iol_err_errno(err, IOL_ERR_RUNTIME, errno, "unlink %s", p);
    }
    if (cfg->fpp && cfg->unique_dir) {
        char d[IOL_STR_MAX + 32];
        rank_dir(cfg, rank, d, sizeof d);
        rmdir(d);   /* only succeeds when empty, which is all we want */
    }
    return 0;
}
