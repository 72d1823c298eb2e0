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
    {'U', "rename-dirs", NULL, IOL_OPT_FLAG, F(rename), "0", "the directory rename phase (runs by default when no -C/-T/-E/-r is given; selecting phases turns it off unless -U)", NOLIM},
    {'v', "verbose", NULL, IOL_OPT_COUNT, F(verbose), "0", "verbosity (repeatable; adds to -V): per-iteration lines of every phase", NOLIM},
    {'V', "verbosity", NULL, IOL_OPT_INT, F(verbosity), "0", "verbosity value (mdtest's -V N, -V1)", 0, 100},
    {'k', "mknod", NULL, IOL_OPT_FLAG, F(make_node), "0", "create files with mknod (not with -w)", NOLIM},
    {'B', "no-barriers", NULL, IOL_OPT_INT, F(no_barriers), "0", "N != 0: no barriers between phases (not with -N, -c, -W)", 0, 1e9},
    {'c', "collective-creates", NULL, IOL_OPT_FLAG, F(collective), "0", "collective creates: rank 0 creates and removes every rank's items", NOLIM},
    {'S', "shared-file", NULL, IOL_OPT_FLAG, F(shared_file), "0", "shared file access: every rank creates, stats and reads the same files (file.mdtest.shared.N), rank 0 removes them", NOLIM},
    {'Z', "print-time", NULL, IOL_OPT_FLAG, F(print_time), "0", "print time instead of rate", NOLIM},
    {'f', "first-tasks", NULL, IOL_OPT_INT, F(first_tasks), "1", "first number of tasks on which the test runs (task range)", 1, 1e9},
    {'l', "last-tasks", NULL, IOL_OPT_INT, F(last_tasks), "0", "last number of tasks on which the test runs (0: all ranks, one test)", 0, 1e9},
    {'s', "tasks-stride", NULL, IOL_OPT_INT, F(tasks_stride), "1", "stride between the numbers of tasks of the tests", 1, 1e9},
    {0, "saveRankPerformanceDetails", "save-rank-performance-details", IOL_OPT_STRING, F(rank_csv), "", "write mdtest's per-rank rates and times CSV to this file", NOLIM},
    {0, "dataPacketType", "data-packet-type", IOL_OPT_STRING, F(packet_type), "t", "data written and checked: offset|incompressible|timestamp|random|o|i|t|r (mdtest 4's bytes)", NOLIM},
    {0, "run-cmd-before-phase", NULL, IOL_OPT_STRING, F(cmd_before), "", "every rank runs this shell command before each phase (not timed)", NOLIM},
    {0, "run-cmd-after-phase", NULL, IOL_OPT_STRING, F(cmd_after), "", "every rank runs this shell command after each phase (timed)", NOLIM},
    {'g', "global-dir-layout", NULL, IOL_OPT_FLAG, F(global_layout), "0", "refused: Lustre's default directory layout (mdtest only with lustreapi)", NOLIM},
    {'K', "mdtest-K", NULL, IOL_OPT_FLAG, F(refused_K), "0", "refused: not an mdtest 4 option", NOLIM},
    {'M', "mdtest-M", NULL, IOL_OPT_FLAG, F(refused_M), "0", "refused: not an mdtest 4 option", NOLIM},
    {0, "print-all-procs", NULL, IOL_OPT_FLAG, F(print_all_procs), "0", "every rank's rate (or time with -Z) per phase and iteration", NOLIM},
    {0, "showRankStatistics", "show-rank-statistics", IOL_OPT_FLAG, F(rank_stats), "0", "per-rank max/min/mean columns in the summary", NOLIM},
    {0, "warningAsErrors", "warning-as-errors", IOL_OPT_FLAG, F(warning_as_errors), "0", "mdtest's warnings (read of 0 bytes) become errors", NOLIM},
    {0, "verify-write", NULL, IOL_OPT_FLAG, F(verify_write), "0", "read each file back right after writing it and compare (with -w)", NOLIM},
    {0, "allocateBufferOnGPU", NULL, IOL_OPT_FLAG, F(gpu_buffer), "0", "refused: no GPU buffers", NOLIM},
    /* mdtest's module options of the APIs iolens's mdtest shares with it (POSIX, DUMMY): refused with the
     * reason (mdtest_refused), in MODULE_OPTS' order. */
    {0, "posix.odirect", NULL, IOL_OPT_FLAG, F(module_opt[0]), "0", "refused: O_DIRECT opens (see docs/mdtest.md)", NOLIM},
    {0, "posix.rangelocks", NULL, IOL_OPT_FLAG, F(module_opt[1]), "0", "refused: range locks", NOLIM},
    {0, "dummy.delay-only-rank0", NULL, IOL_OPT_FLAG, F(module_opt[2]), "0", "refused: -a dummy is iolens's null, without delays", NOLIM},
    {0, "dummy.delay-create", NULL, IOL_OPT_INT, F(module_opt[3]), "0", "refused: -a dummy is iolens's null, without delays", NOLIM},
    {0, "dummy.delay-close", NULL, IOL_OPT_INT, F(module_opt[4]), "0", "refused: -a dummy is iolens's null, without delays", NOLIM},
    {0, "dummy.delay-sync", NULL, IOL_OPT_INT, F(module_opt[5]), "0", "refused: -a dummy is iolens's null, without delays", NOLIM},
    {0, "dummy.delay-xfer", NULL, IOL_OPT_INT, F(module_opt[6]), "0", "refused: -a dummy is iolens's null, without delays", NOLIM},
    {0},
};

static const char *const MODULE_OPTS[] = {"posix.odirect", "posix.rangelocks", "dummy.delay-only-rank0",
                                          "dummy.delay-create", "dummy.delay-close", "dummy.delay-sync",
                                          "dummy.delay-xfer"};

void mdtest_normalize(struct mdtest_cfg *cfg)
{
    /* mdtest 4: no phase chosen means every phase, the directory rename included; choosing phases (-C -T -E
     * -r) leaves the rename out unless -U asks for it. -U alone is mdtest's later spelling: rename only. */
    if (!cfg->create && !cfg->stat && !cfg->read && !cfg->remove && !cfg->rename)
        cfg->create = cfg->stat = cfg->read = cfg->remove = cfg->rename = 1;
    /* -v adds to -V, as mdtest's both raise one verbosity. */
    cfg->verbosity += cfg->verbose;
    cfg->verbose = 0;
    if (!cfg->files_only && !cfg->dirs_only) cfg->files_only = cfg->dirs_only = 1;
    /* -S: shared file access is of files only (mdtest) */
    if (cfg->shared_file) {
        cfg->files_only = 1;
        cfg->dirs_only = 0;
    }
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

/* mdtest's flags iolens does not run, each refused with its reason, and mdtest's own refusals of flags
 * together (mdtest 4's md_validate_tests). */
static int mdtest_refused(const struct mdtest_cfg *cfg, struct iol_err *err)
{
    if (cfg->shared_file && cfg->unique_dir)
        return iol_err_set(err, IOL_ERR_USAGE, "-S: shared file access works in one shared tree, not with -u");
    if (cfg->shared_file && cfg->collective)
        return iol_err_set(err, IOL_ERR_USAGE, "-S: shared file access cannot be combined with collective creates (-c)");
    if (cfg->shared_file && strchr(cfg->dirs, '@'))
        return iol_err_set(err, IOL_ERR_USAGE, "-S: shared file access works in one directory (-d without @)");
    if (cfg->global_layout)
        return iol_err_set(err, IOL_ERR_USAGE, "-g: Lustre's global default directory layout is not supported "
                           "(mdtest accepts -g only when built with lustreapi)");
    if (cfg->refused_K || cfg->refused_M)
        return iol_err_set(err, IOL_ERR_USAGE, "-%c: not an mdtest 4 option (mdtest 4.0.0 refuses it too)",
                           cfg->refused_K ? 'K' : 'M');
    for (size_t i = 0; i < sizeof MODULE_OPTS / sizeof MODULE_OPTS[0]; i++)
        if (cfg->module_opt[i])
            return iol_err_set(err, IOL_ERR_USAGE, "--%s: %s", MODULE_OPTS[i], i < 2
                               ? "iolens's mdtest opens files with the backend's own flags (O_DIRECT and range locks "
                                 "are not supported for metadata runs)"
                               : "-a dummy runs iolens's null backend, which does no I/O and has no delays");
    if (cfg->gpu_buffer)
        return iol_err_set(err, IOL_ERR_USAGE, "--allocateBufferOnGPU: iolens has no GPU buffers");
    static const char *const packets[] = {"offset", "incompressible", "timestamp", "random", "o", "i", "t", "r"};
    int packet_ok = 0;
    for (size_t i = 0; i < sizeof packets / sizeof packets[0]; i++) packet_ok |= strcmp(cfg->packet_type, packets[i]) == 0;
    if (!packet_ok)
        return iol_err_set(err, IOL_ERR_USAGE, "--dataPacketType: '%s' is not one of offset, incompressible, "
                           "timestamp, random (o, i, t, r)", cfg->packet_type);
    if (cfg->make_node && cfg->write_bytes)
        return iol_err_set(err, IOL_ERR_USAGE, "-k: files made with mknod cannot be written (-w)");
    if (cfg->no_barriers && cfg->stride)
        return iol_err_set(err, IOL_ERR_USAGE, "-B: without barriers a rank would stat or remove another rank's items "
                           "before they exist (-N)");
    if (cfg->no_barriers && cfg->collective)
        return iol_err_set(err, IOL_ERR_USAGE, "-B: collective creates (-c) need the barriers");
    if (cfg->no_barriers && cfg->stonewall_s)
        return iol_err_set(err, IOL_ERR_USAGE, "-B: the stonewall (-W) needs the barriers");
    if (cfg->collective && strchr(cfg->dirs, '@'))
        return iol_err_set(err, IOL_ERR_USAGE, "-c: collective creates work in one test directory (-d without @)");
    if (cfg->warning_as_errors && cfg->read && cfg->files_only && cfg->read_bytes == 0)
        return iol_err_set(err, IOL_ERR_USAGE, "--warningAsErrors: the read phase reads 0 bytes (-e), it only opens "
                           "and closes the files");
    return 0;
}

/* The numbers of tasks of the tests (-f, -l, -s, as mdtest: first..last stepping by s; no -l = one test on
 * every rank); returns how many tests, and their sizes in tasks (room for nranks) when not NULL. */
int mdtest_task_range(const struct mdtest_cfg *cfg, int nranks, int *tasks, struct iol_err *err)
{
    int64_t first = cfg->first_tasks, last = cfg->last_tasks;
    if (last == 0) first = last = nranks;
    if (first > last)
        return iol_err_set(err, IOL_ERR_USAGE, "-f: the first number of tasks (%lld) is above the last (-l %lld)",
                           (long long)first, (long long)last);
    if (last > nranks)
        return iol_err_set(err, IOL_ERR_USAGE, "-l: %lld tasks, but the run has %d ranks", (long long)last, nranks);
    int n = 0;
    for (int64_t t = first; t <= last; t += cfg->tasks_stride) {
        if (tasks) tasks[n] = (int)t;
        n++;
    }
    struct mdtest_paths paths;
    if (mdtest_split_dirs(cfg->dirs, &paths, err)) return -1;
    if (cfg->last_tasks && paths.count > first)
        return iol_err_set(err, IOL_ERR_USAGE, "-d: %d directories for a test of %lld tasks (-f): more directories "
                           "than tasks", paths.count, (long long)first);
    if (n > 1 && !(cfg->create && cfg->remove))
        return iol_err_set(err, IOL_ERR_USAGE, "-f/-l/-s: several tests (%d) reuse the same test directories, so each "
                           "must create and remove its items (no -C, -T, -E or -r alone)", n);
    return n;
}

int mdtest_validate(const struct mdtest_cfg *cfg, int nranks, struct iol_err *err)
{
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
    if (mdtest_refused(cfg, err)) return -1;
    if (mdtest_task_range(cfg, nranks, NULL, err) < 0) return -1;
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
    if (cfg->rank_csv[0]) {
        char parent[IOL_STR_MAX];
        split_parent(cfg->rank_csv, parent, sizeof parent);
        struct stat cst;
        if (stat(cfg->rank_csv, &cst) == 0 && S_ISDIR(cst.st_mode))
            return iol_err_set(err, IOL_ERR_USAGE, "--saveRankPerformanceDetails: '%s' is a directory", cfg->rank_csv);
        if (access(parent, W_OK | X_OK) != 0)
            return iol_err_set(err, IOL_ERR_USAGE, "--saveRankPerformanceDetails: cannot write in '%s'", parent);
    }
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
