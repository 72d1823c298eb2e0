/* fio_files.c — the fio workload's files: the checks made before any I/O (directories exist, a file iolens
 * did not create is never written unless allow_overwrite=1), laying files out before a job reads them (as
 * fio's "Laying out IO file"), and putting the page cache in the state the job asked for (cache=cold|hot|asis). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../backend/posix_ops.h"
#include "../common/interrupt.h"
#include "../common/ledger.h"
#include "../common/pathcheck.h"
#include "../common/space.h"
#include "../common/mix.h"
#include "fio_internal.h"
#include "run_sync.h"

#define LAYOUT_CHUNK (1u << 20)

/* Checks one file a job will use. `writes`: the job writes it, or may have to extend it. */
static int check_file(const struct fio_plan *p, const char *path, struct iol_err *err)
{
    struct stat st;
    char dir[IOL_STR_MAX];
    const char *name;
    fio_file_dir_name(path, dir, sizeof dir, &name);
    if (stat(path, &st) != 0) {
        if (errno != ENOENT) return iol_err_errno(err, IOL_ERR_USAGE, errno, "filename: %s", path);
        char why[IOL_STR_MAX + 64];
        if (iol_dir_problem(dir, why, sizeof why))
            return iol_err_set(err, IOL_ERR_USAGE, "directory: %s (for %s)", why, path);
        if (access(dir, W_OK | X_OK) != 0)
            return iol_err_errno(err, IOL_ERR_USAGE, errno, "directory: cannot create files in %s", dir);
        return 0;
    }
    if (S_ISDIR(st.st_mode)) return iol_err_set(err, IOL_ERR_USAGE, "filename: %s is a directory", path);
    if (!S_ISREG(st.st_mode)) return iol_err_set(err, IOL_ERR_USAGE, "filename: %s is not a regular file", path);
    const int needs_layout = p->has_read && (uint64_t)st.st_size < p->o->offset + p->filesize;
    if ((p->has_write || needs_layout) && !p->o->allow_overwrite && !iol_ledger_owns(dir, name))
        return iol_err_set(err, IOL_ERR_USAGE, "filename: %s exists and iolens did not create it; it would be %s "
                           "(allow_overwrite=1 permits that)", path, p->has_write ? "written" : "extended");
    return 0;
}

/* Called for every file of every job that does I/O: instance i (a numjobs instance of a rank; one in all for a
 * shared filename), file k of the instance, with the job's plan. A non-zero return stops the walk. */
typedef int (*planned_file_fn)(const struct fio_plan *p, uint64_t i, int k, const char *path, void *ctx,
                               struct iol_err *err);

/* The files the run will use, as the checks before any I/O see them. */
static int each_planned_file(const struct fio_cfg *cfg, int nranks, planned_file_fn visit, void *ctx,
                             struct iol_err *err)
{
    struct fio_plan *p = malloc(sizeof *p);
    if (!p) return iol_err_set(err, IOL_ERR_RUNTIME, "out of memory");
    int rc = 0;
    for (int j = 0; j < cfg->njobs && rc == 0; j++) {
        if (fio_plan_build(cfg, j, p, err)) {
            rc = -1;
            break;
        }
        if (!p->be->does_io) continue;
        uint64_t instances = p->shared_files ? 1 : (uint64_t)nranks * (uint64_t)p->o->numjobs;
        /* One client of a multi-client run (fio.h, client_index) uses the files its instances will use. */
        uint64_t first = p->shared_files ? 0 : (uint64_t)cfg->client_index * (uint64_t)p->o->numjobs;
        for (uint64_t i = 0; i < instances && rc == 0; i++) {
            for (int k = 0; k < p->nfiles && rc == 0; k++) {
                char path[IOL_STR_MAX + 512];
                fio_file_path(p, first + i, k, path, sizeof path);
                rc = visit(p, i, k, path, ctx, err);
            }
        }
    }
    free(p);
    return rc;
}

static int check_planned_file(const struct fio_plan *p, uint64_t i, int k, const char *path, void *ctx,
                              struct iol_err *err)
{
    (void)ctx;
    const char *directory = p->o->directory;
    if (i == 0 && k == 0 && directory[0]) {   /* the job's directory=, once */
        char why[IOL_STR_MAX + 64];
        if (iol_dir_problem(directory, why, sizeof why))
            return iol_err_set(err, IOL_ERR_USAGE, "directory: %s: %s", directory, why);
    }
    return check_file(p, path, err);
}

int fio_check_paths(const struct fio_cfg *cfg, int nranks, struct iol_err *err)
{
    return each_planned_file(cfg, nranks, check_planned_file, NULL, err);
}

/* Every file is written up to the end of its I/O region, by the job or by its layout before a read; only the
 * part an existing file does not hold yet takes new space, and a file not there yet an inode. */
static int count_planned_file(const struct fio_plan *p, uint64_t i, int k, const char *path, void *ctx,
                              struct iol_err *err)
{
    (void)i;
    (void)k;
    (void)err;
    char dir[IOL_STR_MAX];
    const char *name;
    fio_file_dir_name(path, dir, sizeof dir, &name);
    uint64_t want = p->o->offset + p->filesize;
    struct stat st;
    int exists = stat(path, &st) == 0;
    uint64_t have = exists ? (uint64_t)st.st_size : 0;
    iol_space_add(ctx, dir, want > have ? (long double)(want - have) : 0, exists ? 0 : 1);
    return 0;
}

int fio_check_space(const struct fio_cfg *cfg, int nranks, struct iol_err *err)
{
    struct iol_space *sp = malloc(sizeof *sp);
    if (!sp) return iol_err_set(err, IOL_ERR_RUNTIME, "out of memory");
    sp->n = 0;
    int rc = each_planned_file(cfg, nranks, count_planned_file, sp, err);
    if (rc == 0) rc = iol_space_check(sp, "size", "every file of every job, numjobs instance and rank", err);
    free(sp);
    return rc;
}

/* Creates path if missing (recording it in the ledger first, so even an interrupted run owns it), and for a
 * job that reads, writes it up to the end of its I/O region. */
static int lay_out(const struct fio_plan *p, const char *path, unsigned char *created, struct iol_err *err)
{
    char dir[IOL_STR_MAX];
    const char *name;
    fio_file_dir_name(path, dir, sizeof dir, &name);
    struct stat st;
    int exists = stat(path, &st) == 0;
    uint64_t want = p->o->offset + p->filesize;
    if (exists && (!p->has_read || (uint64_t)st.st_size >= want)) return 0;
    if (!exists && iol_ledger_add(dir, name, err)) return -1;
    if (!exists && created) *created = 1;   /* this run's: removed if the run fails or is interrupted */
    int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) return iol_err_errno(err, IOL_ERR_RUNTIME, errno, "create %s", path);
    if (!p->has_read) return close(fd) == 0 ? 0 : iol_err_errno(err, IOL_ERR_RUNTIME, errno, "close %s", path);
    uint64_t *buf = malloc(LAYOUT_CHUNK);
    if (!buf) {
        close(fd);
        return iol_err_set(err, IOL_ERR_RUNTIME, "out of memory");
    }
    /* Data that does not compress or deduplicate away: a different mixed word everywhere. */
    uint64_t pos = exists ? (uint64_t)st.st_size : 0;
    int rc = 0;
    while (pos < want && rc == 0) {
        /* Laying out GBs takes a while: a run told to stop does not finish it first. */
        if (iol_interrupt_pending()) {
            iol_note_interrupt(err);
            rc = -1;
            break;
        }
        size_t n = want - pos < LAYOUT_CHUNK ? (size_t)(want - pos) : LAYOUT_CHUNK;
        for (size_t w = 0; w < LAYOUT_CHUNK / 8; w++) buf[w] = iol_mix64((pos >> 3) + w + 1);
        ssize_t done = pwrite(fd, buf, n, (off_t)pos);
        if (done <= 0) rc = iol_err_errno(err, IOL_ERR_RUNTIME, done < 0 ? errno : ENOSPC, "lay out %s", path);
        else pos += (uint64_t)done;
    }
    free(buf);
    if (close(fd) != 0 && rc == 0) rc = iol_err_errno(err, IOL_ERR_RUNTIME, errno, "close %s", path);
    return rc;
}

/* cold: write back and drop the file's pages (fio's invalidate=1); hot: read the region once so it is in
 * memory; asis: nothing. *evicted = 0 when cold could not drop anything (tmpfs keeps files only in memory). */
static int set_cache(const struct fio_plan *p, const char *path, int *evicted, struct iol_err *err)
{
    if (p->cache == FIO_CACHE_ASIS) return 0;
    struct stat st;
    if (stat(path, &st) != 0) return 0;   /* a write job's file that does not exist yet has no pages */
    struct iol_file f;
    if (iol_posix_open(NULL, &f, path, IOL_O_READ, 0, err)) return -1;
    int rc = 0;
    if (p->cache == FIO_CACHE_COLD) {
        int ev = 0;
        rc = iol_posix_evict(NULL, &f, &ev, err);
        if (!ev) *evicted = 0;
    } else {
        char *buf = malloc(LAYOUT_CHUNK);
        uint64_t pos = p->o->offset, end = p->o->offset + p->filesize;
        if (!buf) rc = iol_err_set(err, IOL_ERR_RUNTIME, "out of memory");
        while (rc == 0 && pos < end) {
            ssize_t n = pread(f.fd, buf, end - pos < LAYOUT_CHUNK ? end - pos : LAYOUT_CHUNK, (off_t)pos);
            if (n < 0) rc = iol_err_errno(err, IOL_ERR_RUNTIME, errno, "pre-read %s", path);
            if (n <= 0) break;
            pos += (uint64_t)n;
        }
        free(buf);
    }
    struct iol_err cerr = {0, ""};
    iol_posix_close(NULL, &f, &cerr);
    return rc;
}

int fio_prepare_files(const struct fio_plan *p, const char *const *paths, int lay, int cache, int *evicted,
                      unsigned char *created, struct iol_err *err)
{
    if (!p->be->does_io) {
        *evicted = 0;
        return 0;
    }
    for (int k = 0; k < p->nfiles; k++) {
        if (lay && lay_out(p, paths[k], created ? &created[k] : NULL, err)) return -1;
        if (cache && set_cache(p, paths[k], evicted, err)) return -1;
    }
    return 0;
}

int fio_remove_created(const struct fio_plan *p, uint64_t instance, const unsigned char *created, uint64_t *removed,
                       struct iol_err *err)
{
    for (int k = 0; created && k < p->nfiles; k++) {
        if (!created[k]) continue;
        char path[IOL_STR_MAX + 512], dir[IOL_STR_MAX];
        const char *name;
        fio_file_path(p, instance, k, path, sizeof path);
        fio_file_dir_name(path, dir, sizeof dir, &name);
        if (!iol_ledger_owns(dir, name)) continue;   /* only ever what the ledger says iolens made */
        if (unlink(path) == 0) (*removed)++;
        else if (errno != ENOENT) return iol_err_errno(err, IOL_ERR_RUNTIME, errno, "unlink %s", path);
        if (iol_ledger_remove(dir, name, err)) return -1;
    }
    return 0;
}
