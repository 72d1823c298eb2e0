/* ior_validate.c — the options checked together, as IOR's CheckRunSettings does, before any I/O. */
#include <strings.h>
#include <unistd.h>

#include "ior_internal.h"

/* Fills in IOR's implied settings: no access flag means write and read; -R means read. */
void ior_normalize(struct ior_cfg *cfg)
{
    if (cfg->remove_only) return;   /* no implied write and read */
    if (!cfg->write && !cfg->read && !cfg->check_write && !cfg->check_read) cfg->write = cfg->read = 1;
    if (cfg->check_read) cfg->read = 1;
}

int ior_validate(const struct ior_cfg *cfg, int nranks, struct iol_err *err)
{
    if (!iol_backend_find(cfg->api))
        return iol_err_set(err, IOL_ERR_USAGE, "-a: unknown api '%s' (known: %s)", cfg->api, iol_backend_names());
    int is_mmap = strcasecmp(cfg->api, "mmap") == 0;
    if ((cfg->mmap_madv_dont_need || cfg->mmap_madv_pattern) && !is_mmap)
        return iol_err_set(err, IOL_ERR_USAGE, "--mmap.%s: only with -a MMAP (the api is '%s')",
                           cfg->mmap_madv_dont_need ? "madv_dont_need" : "madv_pattern", cfg->api);
    if (is_mmap && cfg->direct)
        return iol_err_set(err, IOL_ERR_USAGE, "--posix.odirect: -a MMAP cannot bypass the page cache (a mapping "
                           "is the page cache)");
    if (cfg->xfer == 0) return iol_err_set(err, IOL_ERR_USAGE, "-t: transfer size must be at least 8 bytes");
    if (cfg->xfer % 8)
        return iol_err_set(err, IOL_ERR_USAGE, "-t: transfer size %llu is not a multiple of 8 bytes",
                           (unsigned long long)cfg->xfer);
    if (cfg->block < cfg->xfer)
        return iol_err_set(err, IOL_ERR_USAGE, "-b: block size %llu is smaller than the transfer size %llu (-t)",
                           (unsigned long long)cfg->block, (unsigned long long)cfg->xfer);
    if (cfg->block % cfg->xfer)
        return iol_err_set(err, IOL_ERR_USAGE, "-b: block size %llu is not a multiple of the transfer size %llu (-t)",
                           (unsigned long long)cfg->block, (unsigned long long)cfg->xfer);
    if (cfg->segments == 0) return iol_err_set(err, IOL_ERR_USAGE, "-s: the segment count must be at least 1 (or -1)");
    if (cfg->segments < 0 && (cfg->write || cfg->check_write))
        return iol_err_set(err, IOL_ERR_USAGE, "-s: -1 (as many segments as the file holds) is for reading only");
    /* The largest offset must fit in a signed 64-bit file offset. */
    long double extent = (long double)cfg->segments * cfg->block * (cfg->fpp ? 1 : nranks);
    if (extent > 9.2e18L)
        return iol_err_set(err, IOL_ERR_USAGE, "-s: %lld segments of %llu bytes (-b) exceed the largest file offset",
                           (long long)cfg->segments, (unsigned long long)cfg->block);
    if (cfg->remove_only && (cfg->write || cfg->read || cfg->check_write || cfg->check_read || cfg->keep))
        return iol_err_set(err, IOL_ERR_USAGE, "--remove-only: cannot be combined with -w, -r, -W, -R or -k");
    if (cfg->check_write && !cfg->write)
        return iol_err_set(err, IOL_ERR_USAGE, "-W: checking writes needs a write phase (-w)");
    if (cfg->unique_dir && !cfg->fpp)
        return iol_err_set(err, IOL_ERR_USAGE, "-u: unique directories need a file per process (-F)");
    if (!cfg->path[0]) return iol_err_set(err, IOL_ERR_USAGE, "-o: the test file path is empty");
    if (strcasecmp(cfg->summary_format, "default") && strcasecmp(cfg->summary_format, "json"))
        return iol_err_set(err, IOL_ERR_USAGE, "-O summaryFormat: '%s' is not one of default, JSON",
                           cfg->summary_format);
    if (cfg->wear_out_iterations > 0 && cfg->segments > 0 && (uint64_t)cfg->wear_out_iterations > cfg->segments * (cfg->block / cfg->xfer))
        return iol_err_set(err, IOL_ERR_USAGE,
                           "-O stoneWallingWearOutIterations: %lld is more than the %llu transfers of a rank",
                           (long long)cfg->wear_out_iterations,
                           (unsigned long long)(cfg->segments * (cfg->block / cfg->xfer)));
    /* Wear-out continues after the -D deadline; with no deadline there is nothing to continue (IOR accepts it
     * and does nothing, which hides a missing -D). */
    if (cfg->wear_out && cfg->deadline_s == 0)
        return iol_err_set(err, IOL_ERR_USAGE, "-O stoneWallingWearOut: needs a stonewall deadline (-D SECONDS)");
    /* A status file tells a later read how many transfers every rank wrote. Without wear-out the ranks of a
     * stonewalled write stop at different counts, and one count would make that read run past the slower
     * ranks' data: IOR writes no status file then (the later read silently reads everything); refuse it. */
    if ((cfg->write || cfg->check_write) && cfg->status_file[0] && !cfg->wear_out)
        return iol_err_set(err, IOL_ERR_USAGE,
                           "-O stoneWallingStatusFile: a write records its count only with "
                           "-O stoneWallingWearOut=1 (and -D), so that every rank wrote that many transfers");
    /* Buffers: queue depth x transfer size per rank; refuse what cannot fit in memory. */
    long pages = sysconf(_SC_PHYS_PAGES), psize = sysconf(_SC_PAGESIZE);
    if (pages > 0 && psize > 0) {
        long double mem = (long double)pages * psize;
        long double need = (long double)cfg->queue_depth * cfg->xfer * nranks;
        if (need > mem / 2)
            return iol_err_set(err, IOL_ERR_USAGE,
                               "-t: %lld buffers of %llu bytes per rank x %d ranks need more than half of this "
                               "machine's memory", (long long)cfg->queue_depth, (unsigned long long)cfg->xfer, nranks);
    }
    if (!cfg->write && cfg->status_file[0] && access(cfg->status_file, R_OK) != 0)
        return iol_err_set(err, IOL_ERR_USAGE, "-O stoneWallingStatusFile: cannot read '%s'", cfg->status_file);
    return 0;
}
