/* ior_validate.c — the options checked together, as IOR's CheckRunSettings does, before any I/O. */
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "ior_flags.h"
#include "ior_internal.h"
#include "../backend/mpi_hints.h"

/* Fills in IOR's implied settings: no access flag means write and read; -R means read. */
void ior_normalize(struct ior_cfg *cfg)
{
    /* --dryRun: IOR's backends then skip every call; the null backend is exactly that. */
    if (cfg->dry_run) snprintf(cfg->api, sizeof cfg->api, "null");
    if (cfg->remove_only) return;   /* no implied write and read */
    if (!cfg->write && !cfg->read && !cfg->check_write && !cfg->check_read) cfg->write = cfg->read = 1;
    if (cfg->check_read) cfg->read = 1;
}

/* IOR's run-level flags (ior_flags.c), checked as IOR's ValidateTests and CheckRunSettings do. */
static int ior_validate_flags(const struct ior_cfg *cfg, int nranks, struct iol_err *err)
{
    /* IOR splits -o at '@' into several names (one per file system, ranks spread over them with -F); iolens
     * would use the whole as one name: refuse rather than write somewhere else than the user meant. */
    if (strchr(cfg->path, '@'))
        return iol_err_set(err, IOL_ERR_USAGE, "-o: '%s': IOR reads '@' as a separator of several file names; "
                           "iolens takes one name (run one job per file system)", cfg->path);
    if (cfg->script_file[0])
        return iol_err_set(err, IOL_ERR_USAGE, "-f: IOR scripts are run by the front end (`iolens ior -f %s`), "
                           "not by iolens-bench", cfg->script_file);
    for (int i = 0; i < 4; i++)
        if (cfg->dummy_delay[i] || cfg->dummy_delay_rank0)
            return iol_err_set(err, IOL_ERR_USAGE, "--dummy.delay-*: IOR's DUMMY delays are not supported: DUMMY is "
                               "iolens's null backend, which does no I/O and waits for nothing "
                               "(-O interIODelay=US pauses after each transfer)");
    const struct iol_backend *be = iol_backend_find(cfg->api);
    if (cfg->rangelocks && be && strcmp(be->name, "posix") && strcmp(be->name, "pvsync2"))
        return iol_err_set(err, IOL_ERR_USAGE, "--posix.rangelocks: only with the posix and pvsync2 backends (-a %s)",
                           cfg->api);
    if (cfg->gpu)
        return iol_err_set(err, IOL_ERR_USAGE, "-O allocateBufferOnGPU/GPUid/GPUDirect: iolens has no GPU buffers "
                           "(IOR's CUDA build only)");
    if (iol_packet_parse(cfg->packet) < 0)
        return iol_err_set(err, IOL_ERR_USAGE, "-l: '%s' is not one of timestamp, offset, incompressible, random "
                           "(or t, o, i, r) or iolens", cfg->packet);
    if (cfg->num_tasks > nranks && cfg->warning_as_errors)
        return iol_err_set(err, IOL_ERR_USAGE, "-N: %lld ranks asked for, the job has %d (a warning, and "
                           "--warningAsErrors was given)", (long long)cfg->num_tasks, nranks);
    if (cfg->reorder && cfg->reorder_random)
        return iol_err_set(err, IOL_ERR_USAGE, "-Z: cannot be combined with -C (constant and random task reordering; "
                           "choose one)");
    if (cfg->random && cfg->reorder_random && !cfg->fpp)
        return iol_err_set(err, IOL_ERR_USAGE, "-Z: random offsets (-z) and random task reordering on a shared file: "
                           "choose one (as IOR)");
    if (cfg->dual_mount && !cfg->fpp)
        return iol_err_set(err, IOL_ERR_USAGE, "-y: dual mount can only be used with a file per process (-F)");
    if (cfg->random_prefill) {
        if (!cfg->random)
            return iol_err_set(err, IOL_ERR_USAGE, "--randomPrefill: only with random offsets (-z)");
        if (cfg->block % cfg->random_prefill)
            return iol_err_set(err, IOL_ERR_USAGE, "--randomPrefill: %llu does not divide the block size %llu (-b)",
                               (unsigned long long)cfg->random_prefill, (unsigned long long)cfg->block);
        if (cfg->random_prefill % 8 || (cfg->direct && cfg->random_prefill % 512))
            return iol_err_set(err, IOL_ERR_USAGE, "--randomPrefill: %llu is not a multiple of %d bytes",
                               (unsigned long long)cfg->random_prefill, cfg->direct ? 512 : 8);
    }
    uint64_t hog = cfg->memory_per_task;
    if (cfg->memory_per_node[0]) {
        uint64_t node = 0;
        if (ior_memory_spec(cfg->memory_per_node, &node, err)) return -1;
        if (!hog) hog = node;
    }
    long pages = sysconf(_SC_PHYS_PAGES), psize = sysconf(_SC_PAGESIZE);
    if (hog && pages > 0 && psize > 0 && (long double)hog > (long double)pages * psize)
        return iol_err_set(err, IOL_ERR_USAGE, "-M: %llu bytes to hold are more than this machine's memory",
                           (unsigned long long)hog);
    return 0;
}

/* The settings of the backends over an MPI library, checked against the backend and the other options. */
static int validate_mpi(const struct ior_cfg *cfg, const struct iol_backend *be, struct iol_err *err)
{
    int mpiio = strcmp(be->name, "mpiio") == 0;
    /* Switches that would do nothing with this backend: refused, as a flag is never silently ignored. */
    if (cfg->collective && !be->needs_mpi)
        return iol_err_set(err, IOL_ERR_USAGE, "-c: collective I/O needs an MPI library backend (-a MPIIO); -a %s "
                           "moves each rank's transfers alone", cfg->api);
    const char *mpiio_only = cfg->file_view ? "-V (--mpiio.useFileView)" : cfg->preallocate ? "-p (--mpiio.preallocate)"
                             : cfg->strided_datatype ? "--mpiio.useStridedDatatype" : NULL;
    if (mpiio_only && !mpiio)
        return iol_err_set(err, IOL_ERR_USAGE, "%s: an MPI-IO setting; it needs -a MPIIO (not -a %s)", mpiio_only, cfg->api);
    if ((cfg->hints_file[0] || cfg->show_hints) && !be->needs_mpi)
        return iol_err_set(err, IOL_ERR_USAGE, "%s: MPI hints need an MPI library backend (-a MPIIO), not -a %s",
                           cfg->hints_file[0] ? "-U" : "-H", cfg->api);
    if (!be->needs_mpi) return 0;
    if (cfg->direct)
        return iol_err_set(err, IOL_ERR_USAGE, "--posix.odirect: -a %s has no O_DIRECT (IOR prints \"O_DIRECT not "
                           "implemented\" and runs buffered); ROMIO's direct_read/direct_write hints (-U) ask for it",
                           cfg->api);
    /* Each rank decides alone when its minimum time is up, so ranks in collective calls would make different
     * numbers of them and wait for each other for ever. */
    if (cfg->min_time_s > 0 && (cfg->collective || cfg->strided_datatype || cfg->fsync_per_write))
        return iol_err_set(err, IOL_ERR_USAGE, "-O minTimeDuration: not with collective calls (%s): each rank "
                           "would repeat its transfers a different number of times",
                           cfg->collective ? "-c" : cfg->strided_datatype ? "--mpiio.useStridedDatatype" : "-Y");
    /* As IOR's MPIIO_check_params: a collective call or a file view has no random order. */
    if (cfg->random && (cfg->collective || cfg->file_view))
        return iol_err_set(err, IOL_ERR_USAGE, "-z: random offsets are not available with %s (as in IOR)",
                           cfg->collective ? "collective I/O (-c)" : "MPI-IO file views (-V)");
    if (cfg->strided_datatype) {
        /* IOR applies the strided datatype inside the file view only, to a shared file's layout. */
        if (!cfg->file_view)
            return iol_err_set(err, IOL_ERR_USAGE, "--mpiio.useStridedDatatype: works through a file view; add -V");
        if (cfg->fpp || cfg->segments < 0)
            return iol_err_set(err, IOL_ERR_USAGE, "--mpiio.useStridedDatatype: describes a shared file's layout "
                               "of a known segment count; not with %s", cfg->fpp ? "-F" : "-s -1");
        /* One call writes the same buffer into every segment (IOR's type has a memory extent of 0), so
         * segments past the first hold data of another offset, and a deadline would cut a call's count. */
        if (cfg->segments != 1 && (cfg->check_write || cfg->check_read))
            return iol_err_set(err, IOL_ERR_USAGE, "--mpiio.useStridedDatatype: one call writes the same buffer to "
                               "every segment (as IOR), so -W/-R cannot check -s %lld segments", (long long)cfg->segments);
        if (cfg->deadline_s > 0)
            return iol_err_set(err, IOL_ERR_USAGE, "--mpiio.useStridedDatatype: one call moves every segment, so a "
                               "stonewall (-D) cannot stop between them");
    }
    struct iol_hints h = {0, 0, NULL};
    int rc = iol_hints_collect(cfg->hints_file, &h, err);
    iol_hints_free(&h);
    return rc;
}

/* IOR's HDF5 and NCMPI rules (CheckRunSettings, HDF5_check_params), and their options with another -a. */
static int validate_hdf5_ncmpi(const struct ior_cfg *cfg, const struct iol_backend *be, struct iol_err *err)
{
    int hdf5 = strcmp(be->name, "hdf5") == 0, ncmpi = strcmp(be->name, "ncmpi") == 0;
    const char *h5opt = cfg->hdf5_individual_datasets ? "--hdf5.individualDataSets"
                        : cfg->hdf5_alignment != 1  ? "-J (--hdf5.setAlignment)"
                        : cfg->hdf5_no_fill          ? "--hdf5.noFill"
                        : cfg->hdf5_collective_metadata ? "--hdf5.collectiveMetadata" : NULL;
    if (h5opt && !hdf5)
        return iol_err_set(err, IOL_ERR_USAGE, "%s: an HDF5 setting; it needs -a HDF5 (not -a %s)", h5opt, cfg->api);
    if (cfg->hdf5_individual_datasets)
        return iol_err_set(err, IOL_ERR_USAGE, "--hdf5.individualDataSets: not implemented in IOR 4 (\"not working\"; "
                           "IOR stops with \"individual data sets not implemented\"), nor in iolens");
    if ((hdf5 || ncmpi) && cfg->random)
        return iol_err_set(err, IOL_ERR_USAGE, "-z: random offsets are not available with -a %s (as in IOR: a "
                           "segment's data set is made at its first transfer)", cfg->api);
    /* The file also holds the library's metadata, so its size does not count the segments (IOR counts them
     * so anyway, and reads past the last data set). */
    if ((hdf5 || ncmpi) && cfg->segments < 0)
        return iol_err_set(err, IOL_ERR_USAGE, "-s: -1 (segments from the file's size) is not available with -a %s: "
                           "the file also holds the library's metadata; give the count", cfg->api);
    if (ncmpi && cfg->fpp)
        return iol_err_set(err, IOL_ERR_USAGE, "-F: file per process is not available with -a NCMPI (as in IOR: "
                           "the variable spans every rank's blocks)");
    return 0;
}

const char *ior_needs_mpi(const struct ior_cfg *cfg, char *buf, size_t len)
{
    const struct iol_backend *be = iol_backend_find(cfg->api);
    if (!be || !be->needs_mpi) return NULL;
    snprintf(buf, len, "-a %s", cfg->api);
    return buf;
}

int ior_validate(const struct ior_cfg *cfg, int nranks, struct iol_err *err)
{
    const struct iol_backend *be = iol_backend_find(cfg->api);
    const char *needs = iol_backend_unavailable(cfg->api);
    if (!be && needs) return iol_err_set(err, IOL_ERR_USAGE, "-a %s: this backend needs %s", cfg->api, needs);
    if (!be)
        return iol_err_set(err, IOL_ERR_USAGE, "-a: unknown api '%s' (known: %s)", cfg->api, iol_backend_names());
    if (validate_mpi(cfg, be, err)) return -1;
    if (validate_hdf5_ncmpi(cfg, be, err)) return -1;
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
    if (strcasecmp(cfg->summary_format, "default") && strcasecmp(cfg->summary_format, "json") &&
        strcasecmp(cfg->summary_format, "csv"))
        return iol_err_set(err, IOL_ERR_USAGE, "-O summaryFormat: '%s' is not one of default, JSON, CSV",
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
    if (ior_validate_flags(cfg, nranks, err)) return -1;
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
