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
#include <linux/falloc.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "../backend/posix_ops.h"
#include "../common/interrupt.h"
#include "../common/ledger.h"
#include "../common/pathcheck.h"
#include "../common/space.h"
#include "../common/mix.h"
#include "fio_internal.h"
#include "run_sync.h"

/* Checks one file a job will use. `writes`: the job writes it, or may have to extend it. */
static int check_file(const struct fio_plan *p, const char *path, struct iol_err *err)
{
    struct stat st;
    char dir[IOL_STR_MAX];
    const char *name;
    fio_file_dir_name(path, dir, sizeof dir, &name);
    int exists = stat(path, &st) == 0;
    /* fio lays nothing out with create_on_open: a job that reads a missing or short file fails at its first
     * read past the end. iolens says so before any I/O. */
    if (p->o->create_on_open && p->has_read && (!exists || (uint64_t)st.st_size < p->o->offset + p->filesize))
        return iol_err_set(err, IOL_ERR_USAGE, "create_on_open: %s is %s, and a job that reads needs its files "
                           "laid out (create_on_open=0)", path, exists ? "shorter than the job's region" : "missing");
    if (!exists) {
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

/* fio's preallocation (its fallocate= option) of a file being laid out; like fio, a failure is no error (the
 * writes or the job's own I/O then allocate the blocks). */
static void preallocate(const struct fio_plan *p, int fd, uint64_t len)
{
    switch (p->fallocate) {
    case FIO_FALLOC_NATIVE: (void)fallocate(fd, 0, 0, (off_t)len); break;
    case FIO_FALLOC_POSIX: (void)posix_fallocate(fd, 0, (off_t)len); break;
    case FIO_FALLOC_KEEP: (void)fallocate(fd, FALLOC_FL_KEEP_SIZE, 0, (off_t)len); break;
    case FIO_FALLOC_TRUNCATE: (void)ftruncate(fd, (off_t)len); break;
    default: break;
    }
}

/* Writes [0, want) of a new layout in blocks of the job's largest block size, as fio writes it. */
static int write_layout(const struct fio_plan *p, int fd, const char *path, uint64_t want, struct iol_err *err)
{
    size_t chunk = p->bs_max < want ? (size_t)p->bs_max : (size_t)want;
    uint64_t *buf = malloc((chunk + 7) / 8 * 8);
    if (!buf) return iol_err_set(err, IOL_ERR_RUNTIME, "out of memory");
    uint64_t pos = 0;
    int rc = 0;
    while (pos < want && rc == 0) {
        /* Laying out GBs takes a while: a run told to stop does not finish it first. */
        if (iol_interrupt_pending()) {
            iol_note_interrupt(err);
            rc = -1;
            break;
        }
        size_t n = want - pos < chunk ? (size_t)(want - pos) : chunk;
        /* Data that does not compress or deduplicate away: a different mixed word everywhere. */
        for (size_t w = 0; w < (n + 7) / 8; w++) buf[w] = iol_mix64((pos >> 3) + w + 1);
        ssize_t done = pwrite(fd, buf, n, (off_t)pos);
        if (done <= 0) rc = iol_err_errno(err, IOL_ERR_RUNTIME, done < 0 ? errno : ENOSPC, "lay out %s", path);
        else pos += (uint64_t)done;
    }
    free(buf);
    return rc;
}

/* fio's layout ("Laying out IO file"): a file is laid out when it is missing or shorter than the end of the
 * job's region. An existing short file is removed and made again (check_file allowed that: iolens's own, or
 * allow_overwrite=1). The new file is preallocated (fallocate=, native by default); for a job that reads it
 * is then sized and written from byte 0 to the region's end in blocks of the largest bs and fsynced (fio's
 * create_fsync), so the job reads real data from the storage. Last, as fio does whatever invalidate says,
 * the pages of the part that was added are dropped. A file long enough is left alone. */
static int lay_out(const struct fio_plan *p, const char *path, unsigned char *created, struct iol_err *err)
{
    char dir[IOL_STR_MAX];
    const char *name;
    fio_file_dir_name(path, dir, sizeof dir, &name);
    struct stat st;
    int exists = stat(path, &st) == 0;
    uint64_t want = p->o->offset + p->filesize, old = exists ? (uint64_t)st.st_size : 0;
    if (exists && old >= want) return 0;
    if (p->o->create_on_open) {   /* the job's open creates it: owned from now, so a failed run removes it */
        if (!exists && iol_ledger_add(dir, name, err)) return -1;
        if (!exists && created) *created = 1;
        return 0;
    }
    if (exists && unlink(path) != 0) return iol_err_errno(err, IOL_ERR_RUNTIME, errno, "unlink %s (to lay it out)", path);
    if (!exists && iol_ledger_add(dir, name, err)) return -1;
    if (!exists && created) *created = 1;   /* this run's: removed if the run fails or is interrupted */
    int fd = open(path, O_WRONLY | O_CREAT | (p->has_read ? O_TRUNC : 0) | O_CLOEXEC, 0644);
    if (fd < 0) return iol_err_errno(err, IOL_ERR_RUNTIME, errno, "create %s", path);
    preallocate(p, fd, want);
    int rc = 0;
    if (p->has_read) {
        if (ftruncate(fd, (off_t)want) != 0) rc = iol_err_errno(err, IOL_ERR_RUNTIME, errno, "ftruncate %s", path);
        if (rc == 0) rc = write_layout(p, fd, path, want, err);
        if (rc == 0 && fsync(fd) != 0) rc = iol_err_errno(err, IOL_ERR_RUNTIME, errno, "fsync %s", path);
    }
    if (rc == 0) (void)posix_fadvise(fd, (off_t)old, (off_t)(want - old), POSIX_FADV_DONTNEED);
    if (close(fd) != 0 && rc == 0) rc = iol_err_errno(err, IOL_ERR_RUNTIME, errno, "close %s", path);
    return rc;
}

/* cold: fio's invalidate=1 at open: POSIX_FADV_DONTNEED over the job's region, nothing else. Dirty pages are
 * not written back first (the kernel starts their write-back and keeps them: they stay in memory until it
 * ends), so *evicted is cleared when any page of the region is still resident afterwards, or on tmpfs, where
 * the page cache is the file's only copy. hot: fio's pre_read: the region is read once, in blocks of the
 * largest bs, so it is in memory. asis: nothing. */
static int set_cache(const struct fio_plan *p, const char *path, int *evicted, struct iol_err *err)
{
    if (p->cache == FIO_CACHE_ASIS) return 0;
    struct stat st;
    if (stat(path, &st) != 0) return 0;   /* a write job's file that does not exist yet has no pages */
    struct iol_file f;
    if (iol_posix_open(NULL, &f, path, IOL_O_READ, 0, err)) return -1;
    int rc = 0;
    uint64_t pos = p->o->offset, end = p->o->offset + p->filesize;
    if (p->cache == FIO_CACHE_COLD) {
        (void)posix_fadvise(f.fd, (off_t)pos, (off_t)p->filesize, POSIX_FADV_DONTNEED);
        uint64_t left = 0;
        struct statfs sfs;
        int memfs = fstatfs(f.fd, &sfs) == 0 && (sfs.f_type == (__typeof__(sfs.f_type))TMPFS_MAGIC ||
                                                 sfs.f_type == (__typeof__(sfs.f_type))RAMFS_MAGIC);
        if (memfs || iol_posix_resident(f.fd, pos, p->filesize, &left) != 0 || left > 0) *evicted = 0;
    } else {
        char *buf = malloc(p->bs_max);
        if (!buf) rc = iol_err_set(err, IOL_ERR_RUNTIME, "out of memory");
        while (rc == 0 && pos < end) {
            ssize_t n = pread(f.fd, buf, end - pos < p->bs_max ? end - pos : p->bs_max, (off_t)pos);
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
