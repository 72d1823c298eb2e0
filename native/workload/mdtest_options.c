/* mdtest_options.c — every option of the mdtest workload, declared once, and the checks that need several
 * of them together. */
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../backend/backend.h"
#include "../common/ledger.h"
#include "../common/pathcheck.h"
#include "../common/space.h"
#include "mdtest_internal.h"

#define F(field) offsetof(struct mdtest_cfg, field)
#define NOLIM 0, 0

const struct iol_option mdtest_options[] = {
    {'a', "api", NULL, IOL_OPT_STRING, F(api), "posix", "storage backend, one of" IOL_BACKEND_NAMES_TEXT " (null does no I/O; see docs/backends.md)", NOLIM},
    {'n', "items", NULL, IOL_OPT_INT, F(items), "0", "items (files and/or directories) each rank creates, stats, reads, removes", 0, 1e15},
    {'I', "items-per-dir", NULL, IOL_OPT_INT, F(items_per_dir), "0", "items per directory of the tree", 0, 1e15},
    {'i', "iterations", NULL, IOL_OPT_INT, F(reps), "1", "number of iterations", 1, 1e9},
    {'u', "unique-dir", NULL, IOL_OPT_FLAG, F(unique_dir), "0", "a tree of its own for each rank", NOLIM},
    {'d', "dir", NULL, IOL_OPT_STRING, F(dirs), ".", "directory to run in; several separated by @ are used round-robin by rank", NOLIM},
    {'F', "files-only", NULL, IOL_OPT_FLAG, F(files_only), "0", "files only (no directory items)", NOLIM},
    {'D', "dirs-only", NULL, IOL_OPT_FLAG, F(dirs_only), "0", "directories only (no file items)", NOLIM},
    {'C', "create-only", NULL, IOL_OPT_FLAG, F(create), "0", "only the create phases (and tree creation)", NOLIM},
    {'T', "stat-only", NULL, IOL_OPT_FLAG, F(stat), "0", "only the stat phases", NOLIM},
    {'E', "read-only", NULL, IOL_OPT_FLAG, F(read), "0", "only the read phase", NOLIM},
    {'r', "remove-only", NULL, IOL_OPT_FLAG, F(remove), "0", "only the remove phases (and tree removal)", NOLIM},
    {'w', "write-bytes", NULL, IOL_OPT_SIZE, F(write_bytes), "0", "bytes to write to each file after creating it", 0, 1073741824.0},
    {'e', "read-bytes", NULL, IOL_OPT_SIZE, F(read_bytes), "0", "bytes to read from each file", 0, 1073741824.0},
    {'y', "sync-file", NULL, IOL_OPT_FLAG, F(sync_file), "0", "fsync each file after writing it", NOLIM},
    {'Y', "sync-phase", NULL, IOL_OPT_FLAG, F(sync_phase), "0", "call sync() at the end of each phase (timed)", NOLIM},
    {'z', "depth", NULL, IOL_OPT_INT, F(depth), "0", "depth of the directory tree", 0, 64},
    {'b', "branch-factor", NULL, IOL_OPT_INT, F(branch), "0", "branching factor of the directory tree", 0, 1e6},
    {'L', "leaf-only", NULL, IOL_OPT_FLAG, F(leaf_only), "0", "items only in the leaf directories of the tree", NOLIM},
    {'N', "stride", NULL, IOL_OPT_INT, F(stride), "0", "phase k works on the items of rank + k*N (defeats client caches)", 0, 1e9},
    {'W', "stonewall-timer", NULL, IOL_OPT_INT, F(stonewall_s), "0", "stop creating files after this many seconds; all ranks then reach the same count", 0, 1e9},
    {'x', "stonewall-status-file", NULL, IOL_OPT_STRING, F(status_file), "", "file recording the create count for later stat/read/remove runs", NOLIM},
    {'t', "time-unique-dir-overhead", NULL, IOL_OPT_FLAG, F(time_unique_dir), "0", "include creating/removing the tree in the create/remove timings", NOLIM},
    {'p', "pre-iteration-delay", NULL, IOL_OPT_INT, F(pre_delay_s), "0", "seconds to wait before each iteration", 0, 1e6},
    {'R', "random", NULL, IOL_OPT_FLAG, F(random), "0", "stat and read the items in random order", NOLIM},
    {'X', "verify-read", NULL, IOL_OPT_FLAG, F(verify_read), "0", "check every byte read", NOLIM},
    {'G', "random-seed", NULL, IOL_OPT_INT, F(seed), "0", "seed for -R and the data pattern", -9.2e18, 9.2e18},
    {'P', "print-rate-and-time", NULL, IOL_OPT_FLAG, F(print_rate_and_time), "0", "print rates and times", NOLIM},
    {0, "debug-list", NULL, IOL_OPT_STRING, F(debug_list), "", "each rank writes the paths it touches to FILE.RANK", NOLIM},
    {0},
};

void mdtest_normalize(struct mdtest_cfg *cfg)
{
    if (!cfg->create && !cfg->stat && !cfg->read && !cfg->remove) cfg->create = cfg->stat = cfg->read = cfg->remove = 1;
    if (!cfg->files_only && !cfg->dirs_only) cfg->files_only = cfg->dirs_only = 1;
}

static uint64_t ipow(uint64_t b, int64_t e)
{
    uint64_t r = 1;
    for (int64_t i = 0; i < e; i++) r *= b;
    return r;
}

int mdtest_geometry(const struct mdtest_cfg *cfg, struct mdtest_geometry *g, struct iol_err *err)
{
    memset(g, 0, sizeof *g);
    g->branch = cfg->branch > 0 ? (uint64_t)cfg->branch : 1;
    g->depth = (int)cfg->depth;
    /* The tree must stay countable: refuse shapes whose directory count overflows. */
    long double dirs = 0, level = 1;
    for (int64_t d = 0; d <= cfg->depth; d++) {
        dirs += level;
        level *= (long double)g->branch;
    }
    if (dirs > 1e12L) return iol_err_set(err, IOL_ERR_USAGE, "-z/-b: a tree of depth %lld with branching %llu has too many "
                                         "directories", (long long)cfg->depth, (unsigned long long)g->branch);
    g->dirs_in_tree = (uint64_t)dirs;
    g->leaves = ipow(g->branch, cfg->depth);
    g->first_item_dir = cfg->leaf_only ? g->dirs_in_tree - g->leaves : 0;
    uint64_t item_dirs = cfg->leaf_only ? g->leaves : g->dirs_in_tree;

    if (cfg->items_per_dir > 0) {
        g->items_per_dir = (uint64_t)cfg->items_per_dir;
        uint64_t per_loop = g->items_per_dir * item_dirs;
        if (cfg->items == 0) {
            g->items = per_loop;
        } else {
            if ((uint64_t)cfg->items % per_loop)
                return iol_err_set(err, IOL_ERR_USAGE,
                                   "-I: %lld items (-n) do not split into directories of %lld items x %llu tree "
                                   "directories", (long long)cfg->items, (long long)cfg->items_per_dir,
                                   (unsigned long long)item_dirs);
            g->items = (uint64_t)cfg->items;
        }
        g->loops = g->items / per_loop;
    } else {
        /* mdtest: n items spread evenly over the tree, rounded down to whole directories. */
        g->items_per_dir = (uint64_t)cfg->items / item_dirs;
        g->items = g->items_per_dir * item_dirs;
        g->loops = 1;
        if (g->items == 0)
            return iol_err_set(err, IOL_ERR_USAGE, "-n: %lld items cannot fill the %llu directories of the tree",
                               (long long)cfg->items, (unsigned long long)item_dirs);
    }
    g->items_per_loop = g->items / g->loops;
    return 0;
}

int mdtest_validate(const struct mdtest_cfg *cfg, int nranks, struct iol_err *err)
{
    (void)nranks;
    if (!iol_backend_find(cfg->api))
        return iol_err_set(err, IOL_ERR_USAGE, "-a: unknown api '%s' (known: %s)", cfg->api, iol_backend_names());
    /* A backend over an MPI library needs the ior workload's MPI settings (communicator, hints). */
    if (iol_backend_find(cfg->api)->needs_mpi)
        return iol_err_set(err, IOL_ERR_USAGE, "-a %s: not supported by iolens mdtest (use -a POSIX)", cfg->api);
    /* A mapping is made at open, as long as the file is to be, and mdtest's files are created empty; IOR's own
     * mdtest refuses MMAP too ("Backend doesn't support MDTest"). */
    if (strcmp(iol_backend_find(cfg->api)->name, "mmap") == 0)
        return iol_err_set(err, IOL_ERR_USAGE, "-a %s: not supported by mdtest (IOR's mdtest refuses it too; a "
                           "mapping needs the file's size at open); use -a POSIX", cfg->api);
    if (cfg->items == 0 && cfg->items_per_dir == 0)
        return iol_err_set(err, IOL_ERR_USAGE, "-n: the number of items per rank must be at least 1");
    if (cfg->depth > 0 && cfg->branch == 0)
        return iol_err_set(err, IOL_ERR_USAGE, "-z: a tree of depth %lld needs a branching factor (-b)",
                           (long long)cfg->depth);
    if (!cfg->dirs[0]) return iol_err_set(err, IOL_ERR_USAGE, "-d: the directory is empty");
    if (cfg->read_bytes > cfg->write_bytes && cfg->create && cfg->read && cfg->files_only)
        return iol_err_set(err, IOL_ERR_USAGE, "-e: reading %llu bytes from files of %llu bytes (-w)",
                           (unsigned long long)cfg->read_bytes, (unsigned long long)cfg->write_bytes);
    if (cfg->stonewall_s && !cfg->files_only)
        return iol_err_set(err, IOL_ERR_USAGE, "-W: the stonewall applies to file creation; -D has no files");
    struct mdtest_geometry g;
    if (mdtest_geometry(cfg, &g, err)) return -1;
    uint64_t count;
    return mdtest_status_count(cfg, &g, &count, err);
}

int mdtest_status_count(const struct mdtest_cfg *cfg, const struct mdtest_geometry *g, uint64_t *count,
                        struct iol_err *err)
{
    *count = g->items;
    if (cfg->create || !cfg->status_file[0]) return 0;
    FILE *fp = fopen(cfg->status_file, "r");
    if (!fp) return iol_err_set(err, IOL_ERR_USAGE, "-x: cannot read the stonewall status file '%s'", cfg->status_file);
    unsigned long long v = 0;
    char extra;
    int n = fscanf(fp, "%llu %c", &v, &extra);
    fclose(fp);
    if (n != 1)
        return iol_err_set(err, IOL_ERR_USAGE, "-x: '%s' does not hold an item count", cfg->status_file);
    if (v > g->items)
        return iol_err_set(err, IOL_ERR_USAGE, "-x: '%s' says %llu items but a rank has only %llu", cfg->status_file,
                           v, (unsigned long long)g->items);
    *count = v;
    return 0;
}

/* The test directories of every iteration: a create run needs them absent (mdtest's names are the same as
 * ours, so a directory iolens did not make may hold another tool's files), the other phases need them
 * present, and removal needs them to be iolens's. */
static int check_testdirs(const struct mdtest_cfg *cfg, const char *d, struct iol_err *err)
{
    struct mdtest_geometry g;
    if (mdtest_geometry(cfg, &g, err)) return -1;
    char td[IOL_STR_MAX + 64], name[64];
    for (int it = 0; it < cfg->reps; it++) {
        for (uint64_t loop = 0; loop < g.loops; loop++) {
            mdtest_testdir(td, sizeof td, d, it, loop);
            snprintf(name, sizeof name, "test-dir.%d-%llu", it, (unsigned long long)loop);
            int exists = access(td, F_OK) == 0, ours = iol_ledger_owns(d, name);
            if (cfg->create && exists)
                return iol_err_set(err, IOL_ERR_USAGE, ours ? "-d: '%s' is left from an earlier create run (-C); "
                                   "remove it first with -r" : "-d: '%s' exists and was not created by iolens", td);
            /* A remove run finishing a run that was cut short before it made this test directory (the
             * ledger lists it first): nothing to remove there, which is not an error. */
            if (!cfg->create && !exists && cfg->remove && !cfg->stat && !cfg->read && ours) continue;
            if (!cfg->create && !exists)
                return iol_err_set(err, IOL_ERR_USAGE, "-d: '%s' does not exist: nothing to stat, read or remove "
                                   "(create it first with -C)", td);
            if (!cfg->create && cfg->remove && !ours)
                return iol_err_set(err, IOL_ERR_USAGE, "-d: '%s' was not created by iolens; refusing to remove "
                                   "anything in it", td);
        }
    }
    return 0;
}

/* The parent of path d ("." for a bare name, "/" for a top-level one) into parent; returns d's last name. */
static const char *split_parent(const char *d, char *parent, size_t len)
{
    snprintf(parent, len, "%s", d);
    char *slash = strrchr(parent, '/');
    if (slash == parent) slash[1] = '\0';
    else if (slash) *slash = '\0';
    else snprintf(parent, len, ".");
    const char *last = strrchr(d, '/');
    return last ? last + 1 : d;
}

/* Two -d entries naming one directory by different spellings (x and ./x, a link and its target) would make
 * two ranks create, and then remove, the same test directory: identified by device and inode (of the
 * directory, or of its parent and its name when it does not exist yet). */
static int check_aliases(const struct mdtest_paths *paths, int n, struct iol_err *err)
{
    struct {
        dev_t dev;
        ino_t ino;
        const char *name;
    } id[MDTEST_MAX_PATHS];
    for (int i = 0; i < n; i++) {
        char parent[IOL_STR_MAX];
        struct stat st;
        id[i].name = "";
        if (stat(paths->dir[i], &st) != 0) {
            id[i].name = split_parent(paths->dir[i], parent, sizeof parent);
            if (stat(parent, &st) != 0) return 0;   /* refused later, with its own message */
        }
        id[i].dev = st.st_dev;
        id[i].ino = st.st_ino;
        for (int j = 0; j < i; j++)
            if (id[j].dev == id[i].dev && id[j].ino == id[i].ino && strcmp(id[j].name, id[i].name) == 0)
                return iol_err_set(err, IOL_ERR_USAGE, "-d: '%s' and '%s' are the same directory", paths->dir[j],
                                   paths->dir[i]);
    }
    return 0;
}

int mdtest_check_paths(const struct mdtest_cfg *cfg, int nranks, struct iol_err *err)
{
    const struct iol_backend *be = iol_backend_find(cfg->api);
    if (!be || !be->does_io) return 0;
    struct mdtest_paths paths;
    if (mdtest_split_dirs(cfg->dirs, &paths, err)) return -1;
    if (check_aliases(&paths, paths.count < nranks ? paths.count : nranks, err)) return -1;
    for (int i = 0; i < paths.count && i < nranks; i++) {
        const char *d = paths.dir[i];
        struct stat st;
        if (stat(d, &st) != 0) {
            /* mdtest creates a missing -d directory, but only one level: its parent must exist. */
            char parent[IOL_STR_MAX];
            split_parent(d, parent, sizeof parent);
            if (!cfg->create)
                return iol_err_set(err, IOL_ERR_USAGE, "-d: directory '%s' does not exist: nothing to stat, read or "
                                   "remove", d);
            char why[IOL_STR_MAX + 64];
            if (iol_dir_problem(parent, why, sizeof why))
                return iol_err_set(err, IOL_ERR_USAGE, "-d: %s (for '%s')", why, d);
            if (access(parent, W_OK | X_OK) != 0)
                return iol_err_set(err, IOL_ERR_USAGE, "-d: directory '%s' is not writable", parent);
            continue;
        }
        if (!S_ISDIR(st.st_mode)) return iol_err_set(err, IOL_ERR_USAGE, "-d: '%s' is not a directory", d);
        if ((cfg->create || cfg->remove) && access(d, W_OK | X_OK) != 0)
            return iol_err_set(err, IOL_ERR_USAGE, "-d: directory '%s' is not writable", d);
        if (check_testdirs(cfg, d, err)) return -1;
    }
    return 0;
}

int mdtest_check_space(const struct mdtest_cfg *cfg, int nranks, struct iol_err *err)
{
    const struct iol_backend *be = iol_backend_find(cfg->api);
    /* With a stonewall (-W) the deadline, not -n, ends the creates (IO500 gives -n far beyond any file
     * system), as ior's check skips -D. */
    if (!be || !be->does_io || !cfg->create || cfg->stonewall_s) return 0;
    struct mdtest_paths paths;
    struct mdtest_geometry g;
    if (mdtest_split_dirs(cfg->dirs, &paths, err) || mdtest_geometry(cfg, &g, err)) return -1;
    struct iol_space sp;
    sp.n = 0;
    int used = paths.count < nranks ? paths.count : nranks;
    for (int i = 0; i < used; i++) {
        int ranks = nranks / paths.count + (i < nranks % paths.count);
        long double items = (long double)g.items * cfg->reps * ranks * ((cfg->files_only != 0) + (cfg->dirs_only != 0));
        long double trees = (long double)g.dirs_in_tree * g.loops * cfg->reps * (cfg->unique_dir ? ranks : 1);
        /* A file's data takes whole blocks: counted in 4 KiB pages, as tmpfs and most file systems do. */
        long double bytes = cfg->files_only ? (long double)g.items * cfg->reps * ranks *
                                                  (long double)((cfg->write_bytes + 4095) / 4096 * 4096)
                                            : 0;
        char parent[IOL_STR_MAX];
        struct stat st;
        const char *d = paths.dir[i];
        if (stat(d, &st) != 0) {
            split_parent(d, parent, sizeof parent);
            d = parent;
        }
        iol_space_add(&sp, d, bytes, items + trees + (long double)g.loops * cfg->reps);
    }
    return iol_space_check(&sp, cfg->write_bytes ? "-n/-w" : "-n",
                           "-w in 4 KiB blocks x files x ranks x iterations", err);
}
