/* ior_flags.c — IOR's run-level flags that are not about one transfer: the ranks taking part (-N), the data
 * packet and its signature (-l, -G), the memory hog (-M, memoryPerTask), the random read placement (-Z, -X),
 * the time limit (-T), outlier warnings (-j), warnings as errors, the random prefill and dual mounts (-y).
 * Each keeps IOR's meaning; where iolens differs, docs/ior.md says so. */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "../common/clock.h"
#include "ior_flags.h"

int ior_participants(const void *cfgp, int n)
{
    const struct ior_cfg *cfg = cfgp;
    return cfg->num_tasks > 0 ? (int)cfg->num_tasks : n;
}

/* ---- warnings ------------------------------------------------------------------------------------------ */

void ior_warn(struct ior_run *r, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    r->warnings++;
    if (r->nwarn_text < IOR_WARN_KEPT) {
        size_t n = strnlen(msg, sizeof r->warn_text[0] - 1);   /* a long message is kept cut */
        memcpy(r->warn_text[r->nwarn_text], msg, n);
        r->warn_text[r->nwarn_text++][n] = '\0';
    }
    fprintf(stderr, "iolens-bench: warning: %s\n", msg);
    fflush(stderr);
    /* --warningAsErrors: the first warning ends the run, as IOR's WARN then calls ERR. */
    if (r->cfg->warning_as_errors && !r->err.code)
        iol_err_set(&r->err, IOL_ERR_RUNTIME, "%s (a warning, and --warningAsErrors was given)", msg);
}

/* ---- the memory hog (-M, -O memoryPerNode, -O memoryPerTask) ------------------------------------------- */

int ior_memory_spec(const char *s, uint64_t *bytes, struct iol_err *err)
{
    size_t n = strlen(s);
    if (n > 0 && s[n - 1] == '%') {
        char num[32];
        int64_t pct = 0;
        if (n - 1 >= sizeof num) return iol_err_set(err, IOL_ERR_USAGE, "-M: '%s' is not a size or a percentage", s);
        memcpy(num, s, n - 1);
        num[n - 1] = '\0';
        if (iol_parse_int(num, &pct, "-M", err)) return -1;
        if (pct < 0 || pct > 100) return iol_err_set(err, IOL_ERR_USAGE, "-M: %s: a percentage from 0 to 100", s);
        long pages = sysconf(_SC_PHYS_PAGES), psize = sysconf(_SC_PAGESIZE);
        *bytes = pages > 0 && psize > 0 ? (uint64_t)pages * (uint64_t)psize / 100 * (uint64_t)pct : 0;
        return 0;
    }
    return iol_parse_size(s, bytes, "-M", err);
}

/* IOR's HogMemory: memoryPerTask, else memoryPerNode split over the ranks of a node; every page touched so
 * the memory is really taken from the page cache's share. */
int ior_hog_memory(struct ior_run *r)
{
    const struct ior_cfg *cfg = r->cfg;
    uint64_t size = cfg->memory_per_task;
    if (!size && cfg->memory_per_node[0]) {
        uint64_t node = 0;
        if (ior_memory_spec(cfg->memory_per_node, &node, &r->err)) return -1;
        size = node / (uint64_t)(r->tasks_per_node > 0 ? r->tasks_per_node : 1);
    }
    if (!size) return 0;
    unsigned char *p = malloc(size);
    if (!p) return iol_err_set(&r->err, IOL_ERR_RUNTIME, "-M: cannot allocate %" PRIu64 " bytes to hold", size);
    long psize = sysconf(_SC_PAGESIZE);
    for (uint64_t off = 0; off < size; off += (uint64_t)(psize > 0 ? psize : 4096)) p[off] = 1;
    r->hog = p;
    r->hog_bytes = size;
    return 0;
}

/* ---- -Z: each rank reads the data of a rank drawn at random ------------------------------------------- */

/* IOR draws with srand(rank + seed) and rand() % ranks, until the rank is at least min(-Q, nodes - 1) nodes
 * of ranks away. glibc's rand() is its random(): random_r over a private state gives the same sequence, so
 * a rank reads the same data as under IOR on the same machine, without a process-wide generator. */
int ior_random_shift(struct ior_run *r, int iteration, int *shift)
{
    const struct ior_cfg *cfg = r->cfg;
    int n = r->nranks;
    int nodes = cfg->num_nodes > 0 ? (int)cfg->num_nodes : (r->comm->nodes > 0 ? r->comm->nodes : 1);
    int64_t nodeoffset = cfg->task_offset < nodes ? cfg->task_offset : nodes - 1;
    int64_t least = nodeoffset * r->tasks_per_node;
    if (least >= n)
        return iol_err_set(&r->err, IOL_ERR_USAGE, "-Z: no rank is %" PRId64 " ranks away (-Q %" PRId64
                           ", %d ranks per node, %d ranks): IOR would draw forever", least, cfg->task_offset,
                           r->tasks_per_node, n);
    unsigned seed0 = cfg->reorder_random_seed < 0 ? (unsigned)(-cfg->reorder_random_seed + iteration)
                                                  : (unsigned)cfg->reorder_random_seed;
    char state[128];
    struct random_data rd;
    memset(&rd, 0, sizeof rd);
    memset(state, 0, sizeof state);
    if (initstate_r((unsigned)r->comm->rank + seed0, state, sizeof state, &rd) != 0)
        return iol_err_errno(&r->err, IOL_ERR_RUNTIME, errno, "-Z: initstate_r");
    int32_t v = 0;
    do {
        random_r(&rd, &v);
    } while (v % n < least);
    *shift = v % n;
    return 0;
}

/* ---- -T: no phase starts after the time limit --------------------------------------------------------- */

/* Test hook, read here only: IOLENS_TEST_MINUTE_NS is the length of -T's minute (tests cannot wait minutes). */
static uint64_t minute_ns(void)
{
    const char *v = getenv("IOLENS_TEST_MINUTE_NS");
    long long n = v && *v ? atoll(v) : 0;
    return n > 0 ? (uint64_t)n : 60000000000ULL;
}

int ior_time_over(struct ior_run *r)
{
    if (r->cfg->max_time_min <= 0) return 0;
    int64_t over = iol_now_ns() - r->start_ns >= (uint64_t)r->cfg->max_time_min * minute_ns();
    /* Rank 0's clock decides, so every rank skips the same phases. */
    if (r->comm->bcast(r->comm, &over, sizeof over, 0)) return 0;
    if (over) r->phases_skipped++;
    return (int)over;
}

/* ---- -j: ranks whose phase times are far from the mean ------------------------------------------------ */

struct outlier_rec {
    double t[5];
    char host[IOL_HOST_MAX];
};

int ior_check_outliers(struct ior_run *r, const char *phase, const uint64_t t[6])
{
    if (r->cfg->outlier_s <= 0) return 0;
    struct iol_comm *c = r->comm;
    struct outlier_rec mine;
    memset(&mine, 0, sizeof mine);
    /* Start and end times count from rank 0's start, on rank 0's clock (as the phase times are). */
    uint64_t base = iol_comm_time(c, r->start_ns);
    if (c->bcast(c, &base, sizeof base, 0)) return iol_err_set(&r->err, IOL_ERR_RUNTIME, "communication failed");
    /* IOR's five figures: start time, elapsed open, transfer and close times, end time (seconds). */
    mine.t[0] = t[0] > base ? (double)(t[0] - base) / 1e9 : 0;
    mine.t[1] = (double)(t[1] - t[0]) / 1e9;
    mine.t[2] = (double)(t[3] - t[2]) / 1e9;
    mine.t[3] = (double)(t[5] - t[4]) / 1e9;
    mine.t[4] = t[5] > base ? (double)(t[5] - base) / 1e9 : 0;
    memcpy(mine.host, c->hostname, IOL_HOST_MAX);
    struct outlier_rec *all = c->rank == 0 ? calloc((size_t)r->nranks, sizeof *all) : NULL;
    if (c->rank == 0 && !all) return iol_err_set(&r->err, IOL_ERR_RUNTIME, "out of memory");
    if (c->gather(c, &mine, sizeof mine, all, 0)) {
        free(all);
        return iol_err_set(&r->err, IOL_ERR_RUNTIME, "communication with the other ranks failed");
    }
    if (c->rank != 0) return 0;
    static const char *const what[5] = {"start time", "elapsed create time", "elapsed transfer time",
                                        "elapsed close time", "end time"};
    for (int k = 0; k < 5; k++) {
        double sum = 0, sq = 0;
        for (int i = 0; i < r->nranks; i++) sum += all[i].t[k];
        double mean = sum / r->nranks;
        for (int i = 0; i < r->nranks; i++) sq += (all[i].t[k] - mean) * (all[i].t[k] - mean);
        double sd = sqrt(sq / r->nranks);
        for (int i = 0; i < r->nranks; i++)
            if (fabs(all[i].t[k] - mean) > (double)r->cfg->outlier_s)
                ior_warn(r, "for %s, task %d, %s %s is %f (mean=%f, stddev=%f)", all[i].host, i, phase, what[k],
                         all[i].t[k], mean, sd);
    }
    free(all);
    return 0;
}

/* ---- -y: a mount point per socket ----------------------------------------------------------------------- */

/* IOR's GetProcessorAndCore: the NUMA node the process runs on (getcpu's second answer). */
static unsigned current_node(void)
{
    unsigned cpu = 0, node = 0;
    if (syscall(SYS_getcpu, &cpu, &node, NULL) != 0) node = 0;
    return node;
}

void ior_dual_mount_path(struct ior_cfg *cfg)
{
    char p[IOL_STR_MAX];
    if (snprintf(p, sizeof p, "%s%u/data", cfg->path, current_node()) < (int)sizeof p) memcpy(cfg->path, p, sizeof p);
}

/* ---- --randomPrefill: the blocks filled with 0xff before random writes ----------------------------------- */

int ior_random_prefill(struct ior_run *r, struct iol_file *f, int data_rank)
{
    const struct ior_cfg *cfg = r->cfg;
    uint64_t piece = cfg->random_prefill;
    void *buf = NULL;
    size_t len = (piece + IOL_DIRECT_ALIGN - 1) / IOL_DIRECT_ALIGN * IOL_DIRECT_ALIGN;
    if (posix_memalign(&buf, IOL_DIRECT_ALIGN, len) != 0)
        return iol_err_set(&r->err, IOL_ERR_RUNTIME, "--randomPrefill: cannot allocate %zu bytes", len);
    memset(buf, 0xff, len);
    int rc = 0;
    for (int64_t s = 0; s < r->segments && rc == 0; s++) {
        uint64_t base = cfg->fpp ? (uint64_t)s * cfg->block
                                 : ((uint64_t)s * (uint64_t)r->nranks + (uint64_t)data_rank) * cfg->block;
        for (uint64_t off = 0; off < cfg->block && rc == 0; off += piece) {
            struct iol_req q, *done[1];
            memset(&q, 0, sizeof q);
            q.op = IOL_IO_WRITE;
            q.file = f;
            q.buf = buf;
            q.len = piece;
            q.offset = base + off;
            q.flags = IOL_REQ_UNTIMED;
            struct iol_req *one = &q;
            if (r->be->submit(r->bctx, &one, 1, &r->err) != 1 || r->be->reap(r->bctx, done, 1, 1, &r->err) != 1) {
                if (!r->err.code) iol_err_set(&r->err, IOL_ERR_RUNTIME, "--randomPrefill: write failed");
                rc = -1;
            } else if (q.error || q.result != (int64_t)q.len) {
                rc = iol_err_errno(&r->err, IOL_ERR_RUNTIME, q.error ? q.error : EIO,
                                   "--randomPrefill: write %s at offset %" PRIu64, r->cur_path, q.offset);
            }
        }
    }
    free(buf);
    return rc;
}

/* ---- the document --------------------------------------------------------------------------------------- */

void ior_flags_json(struct iol_json *j, const struct ior_run *r)
{
    iol_json_key(j, "ior_flags");
    iol_json_begin_object(j);
    iol_json_kv_string(j, "data_packet_type", iol_packet_name((enum iol_packet)r->packet));
    iol_json_kv_uint(j, "time_stamp_signature", r->sig);
    iol_json_kv_int(j, "participating_ranks", r->nranks);
    iol_json_kv_uint(j, "memory_held_per_rank_bytes", r->hog_bytes);
    iol_json_kv_int(j, "phases_skipped_by_time_limit", r->phases_skipped);
    iol_json_kv_uint(j, "warning_count", r->warnings);
    iol_json_key(j, "warnings");
    iol_json_begin_array(j);
    for (int i = 0; i < r->nwarn_text; i++) iol_json_string(j, r->warn_text[i]);
    iol_json_end_array(j);
    iol_json_key(j, "read_shifts");
    iol_json_begin_array(j);
    for (int i = 0; r->read_shift_log && i < r->read_shift_n; i++) iol_json_int(j, r->read_shift_log[i]);
    iol_json_end_array(j);
    iol_json_end_object(j);
}
