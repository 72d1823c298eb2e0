/* fio_plan.c — a job's options turned into the numbers the run uses, with fio's defaults and meanings, and
 * every combination the run cannot honour refused here, before any I/O, with the option's name. */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "fio_internal.h"

int fio_parse_time_ns(const char *s, uint64_t *ns, const char *what, struct iol_err *err)
{
    char *end = NULL;
    errno = 0;
    while (isspace((unsigned char)*s)) s++;
    if (!isdigit((unsigned char)*s)) return iol_err_set(err, IOL_ERR_USAGE, "%s: '%s' is not a time", what, s);
    double v = strtod(s, &end);
    if (errno || v < 0) return iol_err_set(err, IOL_ERR_USAGE, "%s: '%s' is not a time", what, s);
    static const struct { const char *suffix; double ns; } units[] = {
        {"", 1e9}, {"s", 1e9}, {"sec", 1e9}, {"us", 1e3}, {"usec", 1e3}, {"ms", 1e6}, {"msec", 1e6},
        {"m", 60e9}, {"min", 60e9}, {"h", 3600e9}, {"d", 86400e9},
    };
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
        if (!strcasecmp(end, units[i].suffix)) {
            double t = v * units[i].ns;
            if (t > 1e18) return iol_err_set(err, IOL_ERR_USAGE, "%s: '%s' is too long", what, s);
            *ns = (uint64_t)(t + 0.5);
            return 0;
        }
    }
    return iol_err_set(err, IOL_ERR_USAGE, "%s: '%s': unknown unit (us, ms, s, m, h, d)", what, s);
}

static int parse_rw(struct fio_plan *p, const char *rw, struct iol_err *err)
{
    static const struct { const char *name; int random, rd, wr; } modes[] = {
        {"read", 0, 1, 0}, {"write", 0, 0, 1}, {"randread", 1, 1, 0}, {"randwrite", 1, 0, 1},
        {"rw", 0, 1, 1}, {"readwrite", 0, 1, 1}, {"randrw", 1, 1, 1},
    };
    for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++) {
        if (!strcmp(rw, modes[i].name)) {
            p->random = modes[i].random;
            p->has_read = modes[i].rd;
            p->has_write = modes[i].wr;
            return 0;
        }
    }
    if (strchr(rw, ':'))
        return iol_err_set(err, IOL_ERR_USAGE, "rw: '%s': the ':N' offset modifier is not supported", rw);
    if (strstr(rw, "trim"))
        return iol_err_set(err, IOL_ERR_USAGE, "rw: '%s': trim workloads are not supported", rw);
    return iol_err_set(err, IOL_ERR_USAGE, "rw: '%s' is not one of read, write, randread, randwrite, rw, "
                       "readwrite, randrw", rw);
}

/* "4k/50:8k/30:64k" — entries without a percentage share what the others leave, as fio does. */
static int parse_bssplit(struct fio_plan *p, const char *spec, struct iol_err *err)
{
    if (strchr(spec, ','))
        return iol_err_set(err, IOL_ERR_USAGE, "bssplit: separate read/write splits (',') are not supported");
    char buf[IOL_STR_MAX];
    snprintf(buf, sizeof buf, "%s", spec);
    unsigned pct[FIO_BSSPLIT_MAX];
    int n = 0, unset = 0;
    unsigned total = 0;
    char *save = NULL;
    for (char *item = strtok_r(buf, ":", &save); item; item = strtok_r(NULL, ":", &save)) {
        if (n == FIO_BSSPLIT_MAX) return iol_err_set(err, IOL_ERR_USAGE, "bssplit: more than %d sizes", FIO_BSSPLIT_MAX);
        char *slash = strchr(item, '/');
        if (slash) *slash = '\0';
        if (iol_parse_size(item, &p->bs[n], "bssplit", err)) return -1;
        if (p->bs[n] == 0) return iol_err_set(err, IOL_ERR_USAGE, "bssplit: a block size of 0");
        if (slash && slash[1]) {
            int64_t v;
            if (iol_parse_int(slash + 1, &v, "bssplit", err)) return -1;
            if (v < 0 || v > 100) return iol_err_set(err, IOL_ERR_USAGE, "bssplit: percentage %" PRId64 " is not 0..100", v);
            pct[n] = (unsigned)v;
            total += pct[n];
        } else {
            pct[n] = UINT32_MAX;
            unset++;
        }
        n++;
    }
    if (n == 0) return iol_err_set(err, IOL_ERR_USAGE, "bssplit: empty");
    if (total > 100) return iol_err_set(err, IOL_ERR_USAGE, "bssplit: percentages add up to %u (over 100)", total);
    if (!unset && total != 100) return iol_err_set(err, IOL_ERR_USAGE, "bssplit: percentages add up to %u, not 100", total);
    unsigned left = 100 - total, cum = 0;
    for (int i = 0; i < n; i++) {
        if (pct[i] == UINT32_MAX) {
            pct[i] = left / (unsigned)unset + ((unsigned)(unset - 1) < left % (unsigned)unset ? 1 : 0);
            unset--;
            left -= pct[i];
        }
        cum += pct[i];
        p->bs_cum[i] = cum;
    }
    p->nbs = n;
    return 0;
}

static int parse_null_delay(struct fio_plan *p, const char *spec, struct iol_err *err)
{
    char buf[FIO_NAME_MAX];
    snprintf(buf, sizeof buf, "%s", spec);
    char *dash = strchr(buf, '-');
    int64_t lo, hi;
    if (!dash) return iol_err_set(err, IOL_ERR_USAGE, "null_delay: '%s' is not LO-HI (nanoseconds)", spec);
    *dash = '\0';
    if (iol_parse_int(buf, &lo, "null_delay", err) || iol_parse_int(dash + 1, &hi, "null_delay", err)) return -1;
    if (lo < 0 || hi < lo || hi == 0) return iol_err_set(err, IOL_ERR_USAGE, "null_delay: need 0 <= LO <= HI, HI > 0");
    p->null_lo_ns = (uint64_t)lo;
    p->null_hi_ns = (uint64_t)hi;
    return 0;
}

static int count_files(const char *list)
{
    int n = 1;
    for (const char *c = list; *c; c++) n += *c == ':';
    return n;
}

/* The i-th ':'-separated name of a list. */
static void nth_name(const char *list, int i, char *out, size_t cap)
{
    const char *s = list;
    for (; i > 0 && s; i--) {
        s = strchr(s, ':');
        if (s) s++;
    }
    size_t n = s ? strcspn(s, ":") : 0;
    if (n >= cap) n = cap - 1;
    if (s) memcpy(out, s, n);
    out[n] = '\0';
}

void fio_file_path(const struct fio_plan *p, uint64_t instance, int k, char *out, size_t cap)
{
    const struct fio_job_opts *o = p->o;
    const char *dir = o->directory[0] ? o->directory : ".";
    if (p->shared_files) {
        char name[IOL_STR_MAX];
        nth_name(o->filename, k, name, sizeof name);
        if (name[0] == '/' || !o->directory[0]) snprintf(out, cap, "%s", name);
        else snprintf(out, cap, "%s/%s", dir, name);
    } else {   /* fio's default: jobname.jobnumber.filenumber */
        snprintf(out, cap, "%s/%s.%" PRIu64 ".%d", dir, o->name, instance, k);
    }
}

void fio_file_dir_name(const char *path, char *dir, size_t dcap, const char **name)
{
    const char *slash = strrchr(path, '/');
    if (!slash) {
        snprintf(dir, dcap, ".");
        *name = path;
    } else {
        size_t n = (size_t)(slash - path);
        if (n == 0) n = 1;   /* "/name" */
        if (n >= dcap) n = dcap - 1;
        memcpy(dir, path, n);
        dir[n] = '\0';
        *name = slash + 1;
    }
}

static int plan_sizes(struct fio_plan *p, struct iol_err *err)
{
    const struct fio_job_opts *o = p->o;
    p->shared_files = o->filename[0] != '\0';
    p->nfiles = p->shared_files ? count_files(o->filename) : (int)o->nrfiles;
    if (p->shared_files && o->nrfiles != 1 && o->nrfiles != p->nfiles)
        return iol_err_set(err, IOL_ERR_USAGE, "nrfiles: %" PRId64 " but filename lists %d file(s)", o->nrfiles, p->nfiles);
    if (p->nfiles > FIO_FILES_MAX) return iol_err_set(err, IOL_ERR_USAGE, "nrfiles: more than %d files", FIO_FILES_MAX);
    for (int k = 0; p->shared_files && k < p->nfiles; k++) {
        char name[IOL_STR_MAX];
        nth_name(o->filename, k, name, sizeof name);
        if (!name[0]) return iol_err_set(err, IOL_ERR_USAGE, "filename: an empty name in '%s'", o->filename);
    }
    uint64_t filesize = o->filesize;
    if (filesize) {   /* fio: each file is filesize bytes, and its I/O region runs from offset to its end */
        if (o->offset >= filesize)
            return iol_err_set(err, IOL_ERR_USAGE, "offset: %" PRIu64 " is not below filesize %" PRIu64, o->offset, filesize);
        filesize -= o->offset;
    }
    if (!filesize && o->size) filesize = o->size / (uint64_t)p->nfiles;
    if (!filesize && p->be->does_io && p->shared_files) {
        /* fio uses an existing file's size when no size is given */
        char path[IOL_STR_MAX + 512];
        struct stat st;
        fio_file_path(p, 0, 0, path, sizeof path);
        if (stat(path, &st) == 0 && (S_ISREG(st.st_mode) || S_ISBLK(st.st_mode)) && (uint64_t)st.st_size > o->offset)
            filesize = (uint64_t)st.st_size - o->offset;
    }
    if (!filesize)
        return iol_err_set(err, IOL_ERR_USAGE, "size: job '%s' needs size= or filesize= (or filename= of an existing "
                           "file)", o->name);
    /* Whole blocks only: the region is cut to a multiple of the smallest block (and of the alignment). */
    uint64_t unit = p->nbs > 1 ? p->align : p->bs[0];
    if (p->nbs > 1 && p->align % p->bs_min) unit = p->align;
    filesize -= filesize % unit;
    if (filesize < p->bs_max)
        return iol_err_set(err, IOL_ERR_USAGE, "size: %" PRIu64 " bytes per file is less than the block size %" PRIu64,
                           filesize, p->bs_max);
    p->filesize = filesize;
    p->size = filesize * (uint64_t)p->nfiles;
    /* fio: size= is the I/O per loop; with filesize= the files may hold more than that, never less. */
    p->io_size = o->size && o->size < p->size ? o->size - o->size % unit : p->size;
    if (p->io_size < p->bs_max)
        return iol_err_set(err, IOL_ERR_USAGE, "size: %" PRIu64 " bytes of I/O is less than the block size %" PRIu64,
                           o->size, p->bs_max);
    return 0;
}

/* fio's engine names, exactly as fio spells them (fio matches them case-sensitively), and fio's own aliases
 * of libaio; each with the backend that does it. Names of other tools (IOR's "posix", "dummy") are not
 * fio's and are refused here, though `iolens ior -a` takes them. */
static const struct {
    const char *fio, *backend;
    int alias;
} fio_engines[] = {
    {"psync", "posix", 0}, {"pvsync2", "pvsync2", 0}, {"io_uring", "io_uring", 0}, {"libaio", "libaio", 0},
    {"aio", "libaio", 1},  {"linuxaio", "libaio", 1}, {"null", "null", 0},
};

/* fio engines iolens does not have (so the message says "not supported", not "unknown"). */
static const char *const fio_other_engines[] = {"sync", "vsync", "pvsync", "psyncv", "posixaio", "mmap", "splice",
                                                "sg", "net", "netsplice", "cpuio", "rdma", "e4defrag", "falloc",
                                                "filecreate", "filestat", "filedelete", "io_uring_cmd", "xnvme",
                                                "exec", "dfs", "nfs", "libpmem", "dev-dax", "http", "rados", "rbd"};

static int plan_engine(struct fio_plan *p, struct iol_err *err)
{
    const struct fio_job_opts *o = p->o;
    const char *engine = o->ioengine;
    char names[256] = "";
    size_t used = 0;
    p->be = NULL;
    for (size_t i = 0; i < sizeof fio_engines / sizeof fio_engines[0]; i++) {
        const struct iol_backend *be = iol_backend_find(fio_engines[i].backend);
        if (be && !fio_engines[i].alias)
            used += (size_t)snprintf(names + used, sizeof names - used, "%s%s", used ? ", " : "", fio_engines[i].fio);
        if (strcmp(engine, fio_engines[i].fio)) continue;
        if (!be)
            return iol_err_set(err, IOL_ERR_USAGE, "ioengine: '%s' is not available in this build of iolens (its "
                               "library was not found when it was built)", engine);
        p->be = be;
    }
    if (!p->be) {
        for (size_t i = 0; i < sizeof fio_other_engines / sizeof fio_other_engines[0]; i++)
            if (!strcmp(engine, fio_other_engines[i]))
                return iol_err_set(err, IOL_ERR_USAGE, "ioengine: fio's '%s' engine is not supported (use one of %s)",
                                   engine, names);
        return iol_err_set(err, IOL_ERR_USAGE, "ioengine: '%s' is not one of %s (fio's names, in lower case)", engine,
                           names);
    }
    p->async = !p->be->completes_in_submit;
    struct iol_backend_opts *b = &p->bopts;
    memset(b, 0, sizeof *b);
    b->no_fixed_bufs = !o->fixedbufs;
    b->no_register_files = !o->registerfiles;
    b->sqthread_poll = o->sqthread_poll;
    b->hipri = o->hipri;
    if (o->null_delay[0]) {
        if (strcmp(p->be->name, "null")) return iol_err_set(err, IOL_ERR_USAGE, "null_delay: only with ioengine=null");
        if (parse_null_delay(p, o->null_delay, err)) return -1;
        b->null_delay_lo_ns = p->null_lo_ns;
        b->null_delay_hi_ns = p->null_hi_ns;
    }
    if (o->sqthread_poll && strcmp(p->be->name, "io_uring"))
        return iol_err_set(err, IOL_ERR_USAGE, "sqthread_poll: only with ioengine=io_uring");
    if (o->hipri && strcmp(p->be->name, "io_uring") && strcmp(p->be->name, "pvsync2"))
        return iol_err_set(err, IOL_ERR_USAGE, "hipri: only with ioengine=io_uring or pvsync2");
    p->batch_submit = o->iodepth_batch_submit > 0 ? (int)o->iodepth_batch_submit : (int)o->iodepth;
    if (p->batch_submit > o->iodepth) p->batch_submit = (int)o->iodepth;
    p->complete_max = o->iodepth_batch_complete_max > 0 ? (int)o->iodepth_batch_complete_max : (int)o->iodepth;
    if (p->complete_max > o->iodepth) p->complete_max = (int)o->iodepth;
    p->complete_min = (int)o->iodepth_batch_complete_min;
    if (p->complete_min > p->complete_max)
        return iol_err_set(err, IOL_ERR_USAGE, "iodepth_batch_complete_min: %d is above iodepth_batch_complete_max %d",
                           p->complete_min, p->complete_max);
    return 0;
}

/* fio's file_service_type: TYPE or TYPE:N (N I/Os on a file before the next; fio's default N is 1). */
static int plan_fservice(struct fio_plan *p, struct iol_err *err)
{
    const char *v = p->o->file_service_type;
    const char *colon = strchr(v, ':');
    size_t n = colon ? (size_t)(colon - v) : strlen(v);
    p->fservice_n = 1;
    if (colon) {
        char *end;
        errno = 0;
        unsigned long long x = strtoull(colon + 1, &end, 10);
        if (errno || end == colon + 1 || *end || x == 0)
            return iol_err_set(err, IOL_ERR_USAGE, "file_service_type: '%s': N in TYPE:N must be a whole number above 0", v);
        p->fservice_n = x;
    }
    if (n == 10 && !strncmp(v, "roundrobin", n)) p->fservice = FIO_FS_ROUNDROBIN;
    else if (n == 10 && !strncmp(v, "sequential", n)) p->fservice = FIO_FS_SEQUENTIAL;
    else if (n == 6 && !strncmp(v, "random", n)) p->fservice = FIO_FS_RANDOM;
    else
        return iol_err_set(err, IOL_ERR_USAGE, "file_service_type: '%s' is not one of roundrobin, sequential, random "
                           "(zipf, pareto, normal and gauss are not supported)", v);
    return 0;
}

static int plan_cache(struct fio_plan *p, struct iol_err *err)
{
    const struct fio_job_opts *o = p->o;
    int direct = o->direct;
    if (o->buffered >= 0) {
        if (o->direct && o->buffered) return iol_err_set(err, IOL_ERR_USAGE, "buffered: buffered=1 contradicts direct=1");
        direct = !o->buffered;
    }
    p->open_flags = direct ? IOL_O_DIRECT : 0;
    if (!strcmp(o->sync, "1") || !strcmp(o->sync, "sync")) p->open_flags |= IOL_O_SYNC;
    else if (!strcmp(o->sync, "dsync")) p->open_flags |= IOL_O_DSYNC;
    else if (strcmp(o->sync, "0") && strcmp(o->sync, "none"))
        return iol_err_set(err, IOL_ERR_USAGE, "sync: '%s' is not one of 0, 1, none, sync, dsync", o->sync);
    /* fio's pre_read reads the files in before the job and turns invalidate off: iolens's cache=hot. */
    if (o->pre_read && o->cache[0] && strcmp(o->cache, "hot"))
        return iol_err_set(err, IOL_ERR_USAGE, "pre_read: contradicts cache=%s", o->cache);
    if (o->pre_read) p->cache = FIO_CACHE_HOT;
    else if (!o->cache[0]) p->cache = o->invalidate == 0 ? FIO_CACHE_ASIS : FIO_CACHE_COLD;
    else if (!strcmp(o->cache, "cold")) p->cache = FIO_CACHE_COLD;
    else if (!strcmp(o->cache, "hot")) p->cache = FIO_CACHE_HOT;
    else if (!strcmp(o->cache, "asis")) p->cache = FIO_CACHE_ASIS;
    else return iol_err_set(err, IOL_ERR_USAGE, "cache: '%s' is not one of cold, hot, asis", o->cache);
    /* fio's fadvise_hint (default 1): the kernel is told the pattern at open, POSIX_FADV_RANDOM for a random
     * job (no readahead: every block read comes from the device), POSIX_FADV_SEQUENTIAL otherwise. */
    if (!strcmp(o->fadvise_hint, "1")) p->fadvise = p->random ? POSIX_FADV_RANDOM : POSIX_FADV_SEQUENTIAL;
    else if (!strcmp(o->fadvise_hint, "0") || !strcmp(o->fadvise_hint, "none")) p->fadvise = -1;
    else if (!strcmp(o->fadvise_hint, "random")) p->fadvise = POSIX_FADV_RANDOM;
    else if (!strcmp(o->fadvise_hint, "sequential")) p->fadvise = POSIX_FADV_SEQUENTIAL;
    else if (!strcmp(o->fadvise_hint, "normal")) p->fadvise = POSIX_FADV_NORMAL;
    else return iol_err_set(err, IOL_ERR_USAGE, "fadvise_hint: '%s' is not one of 0, 1, none, random, sequential, normal", o->fadvise_hint);
    if (!strcmp(o->fallocate, "native")) p->fallocate = FIO_FALLOC_NATIVE;
    else if (!strcmp(o->fallocate, "posix") || !strcmp(o->fallocate, "1")) p->fallocate = FIO_FALLOC_POSIX;
    else if (!strcmp(o->fallocate, "keep")) p->fallocate = FIO_FALLOC_KEEP;
    else if (!strcmp(o->fallocate, "truncate")) p->fallocate = FIO_FALLOC_TRUNCATE;
    else if (!strcmp(o->fallocate, "none") || !strcmp(o->fallocate, "0")) p->fallocate = FIO_FALLOC_NONE;
    else return iol_err_set(err, IOL_ERR_USAGE, "fallocate: '%s' is not one of native, posix, keep, truncate, none, 0, 1", o->fallocate);
    if (o->cache[0] && !o->pre_read && o->invalidate >= 0 && (o->invalidate == 1) != (p->cache == FIO_CACHE_COLD))
        return iol_err_set(err, IOL_ERR_USAGE, "cache: cache=%s contradicts invalidate=%" PRId64, o->cache, o->invalidate);
    if (direct) {
        for (int i = 0; i < p->nbs; i++)
            if (p->bs[i] % 512)
                return iol_err_set(err, IOL_ERR_USAGE, "bs: %" PRIu64 " is not a multiple of 512, as direct=1 needs", p->bs[i]);
        if (o->offset % 512) return iol_err_set(err, IOL_ERR_USAGE, "offset: not a multiple of 512, as direct=1 needs");
        if (p->align % 512) return iol_err_set(err, IOL_ERR_USAGE, "blockalign: not a multiple of 512, as direct=1 needs");
    }
    return 0;
}

int fio_plan_build(const struct fio_cfg *cfg, int index, struct fio_plan *p, struct iol_err *err)
{
    const struct fio_job_opts *o = &cfg->jobs[index];
    memset(p, 0, sizeof *p);
    p->o = o;
    p->index = index;
    int group = 0;
    for (int i = 1; i <= index; i++) group += cfg->jobs[i].stonewall;
    p->group = group;

    if (parse_rw(p, o->rw, err)) return -1;
    int64_t mix = o->rwmixread >= 0 ? o->rwmixread : o->rwmixwrite >= 0 ? 100 - o->rwmixwrite : 50;
    if (o->rwmixread >= 0 && o->rwmixwrite >= 0 && o->rwmixread + o->rwmixwrite != 100)
        return iol_err_set(err, IOL_ERR_USAGE, "rwmixwrite: rwmixread=%" PRId64 " and rwmixwrite=%" PRId64 " do not add up to 100",
                           o->rwmixread, o->rwmixwrite);
    p->rwmixread = p->has_read && p->has_write ? (int)mix : p->has_read ? 100 : 0;

    if (o->bssplit[0]) {
        if (parse_bssplit(p, o->bssplit, err)) return -1;
    } else {
        p->nbs = 1;
        p->bs[0] = o->bs;
        p->bs_cum[0] = 100;
    }
    p->bs_min = UINT64_MAX;
    for (int i = 0; i < p->nbs; i++) {
        if (p->bs[i] < p->bs_min) p->bs_min = p->bs[i];
        if (p->bs[i] > p->bs_max) p->bs_max = p->bs[i];
    }
    if (p->bs_max > (1ull << 30)) return iol_err_set(err, IOL_ERR_USAGE, "bs: more than 1 GiB per I/O");
    p->align = o->blockalign ? o->blockalign : p->bs_min;
    if (p->nbs == 1 && o->blockalign && o->blockalign != o->bs && p->random && !o->norandommap)
        return iol_err_set(err, IOL_ERR_USAGE, "blockalign: differs from bs; needs norandommap (the random map "
                           "visits whole blocks)");

    if (plan_engine(p, err) || plan_cache(p, err) || plan_sizes(p, err) || plan_fservice(p, err)) return -1;

    if (fio_parse_time_ns(o->runtime, &p->runtime_ns, "runtime", err) ||
        fio_parse_time_ns(o->ramp_time, &p->ramp_ns, "ramp_time", err))
        return -1;
    if (o->time_based && !p->runtime_ns) return iol_err_set(err, IOL_ERR_USAGE, "time_based: needs runtime=");

    if (iol_dist_parse(o->random_distribution, &p->dist, &p->dist_param, err)) return -1;
    if (p->dist != IOL_DIST_RANDOM && !p->random)
        return iol_err_set(err, IOL_ERR_USAGE, "random_distribution: only for random workloads (rw=randread, randwrite, randrw)");

    if (!strcmp(o->verify, "0") || !strcmp(o->verify, "none")) p->verify = 0;
    else if (!strcmp(o->verify, "crc32c") || !strcmp(o->verify, "crc32c-intel")) p->verify = 1;
    else return iol_err_set(err, IOL_ERR_USAGE, "verify: '%s' is not supported (crc32c, crc32c-intel, 0)", o->verify);
    if (p->verify && p->nbs > 1) return iol_err_set(err, IOL_ERR_USAGE, "verify: needs one block size (not bssplit)");
    if (p->verify && p->bs[0] < 64) return iol_err_set(err, IOL_ERR_USAGE, "verify: needs bs of at least 64 bytes");
    if (p->verify && p->has_read && p->has_write)
        return iol_err_set(err, IOL_ERR_USAGE, "verify: with a mixed workload is not supported (verify a write job, "
                           "or read back with a read job)");
    if (o->fsync && o->fdatasync) return iol_err_set(err, IOL_ERR_USAGE, "fdatasync: use fsync= or fdatasync=, not both");
    if (p->be->does_io == 0 && p->verify) return iol_err_set(err, IOL_ERR_USAGE, "verify: the null engine stores nothing to check");

    /* fio: randseed, when given (0 too), is the seed whatever randrepeat says; without it randrepeat=1 takes
     * a fixed seed and randrepeat=0 a new one every run (the instance draws it from the clock). p->seed is
     * the configured one either way: it also keys the verify headers and the buffers' contents, which must
     * not change from run to run. */
    p->seed = o->randseed >= 0 ? (uint64_t)o->randseed : FIO_RANDSEED_DEFAULT;
    p->seed_from_clock = o->randseed < 0 && !o->randrepeat;
    return 0;
}

void fio_normalize(struct fio_cfg *cfg)
{
    (void)cfg;
}

int fio_validate(const struct fio_cfg *cfg, int nranks, struct iol_err *err)
{
    (void)nranks;
    struct fio_plan *p = malloc(sizeof *p);
    if (!p) return iol_err_set(err, IOL_ERR_RUNTIME, "out of memory");
    int rc = 0;
    for (int i = 0; i < cfg->njobs && rc == 0; i++) {
        for (int k = 0; k < i; k++)
            if (!strcmp(cfg->jobs[k].name, cfg->jobs[i].name) && !cfg->jobs[i].filename[0] &&
                !strcmp(cfg->jobs[k].directory, cfg->jobs[i].directory))
                rc = iol_err_set(err, IOL_ERR_USAGE, "name: two jobs named '%s' would use the same files", cfg->jobs[i].name);
        if (rc == 0 && fio_plan_build(cfg, i, p, err)) {
            char msg[sizeof err->msg];
            snprintf(msg, sizeof msg, "%s", err->msg);
            iol_err_clear(err);
            rc = iol_err_set(err, IOL_ERR_USAGE, "job '%s': %s", cfg->jobs[i].name, msg);
        }
    }
    free(p);
    return rc;
}
