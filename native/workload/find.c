/* find.c — the find workload's walk.
 *
 * How the ranks share the tree, with nothing but the communicator's collectives (so local and MPI runs do
 * the same thing): the walk goes level by level (breadth first). Every rank holds the same list of the
 * level's directories; directory i is read by rank i mod N, which also evaluates the predicates on its
 * entries and lists its subdirectories for the next level. A directory with more than --split-entries
 * entries is set aside after that many, still open, and finished at the level's end by all ranks together
 * (find_share.c): its reader goes on reading it a chunk at a time while the others evaluate the chunks
 * already read, so one huge directory (mdtest-hard's) does not leave its stat calls to one rank, and
 * several (mdtest-easy's, one per rank) are still read in parallel. At the end of a level the ranks exchange
 * their subdirectory lists, concatenated in rank order, which is the next level's list.
 *
 * Each entry is counted exactly once, by the rank that evaluates it, so the totals are exact whatever N is.
 * The starting point itself is an entry too (rank 0's), so `scanned` equals the lines of `find DIR`. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../common/clock.h"
#include "../common/fstype.h"
#include "../common/interrupt.h"
#include "find_internal.h"
#include "run_doc.h"
#include "run_sync.h"

/* Entries between two looks at the clock (stonewall, progress) and at pending signals. */
#define TICK_MASK 63u


/* ---- buffers ------------------------------------------------------------------------------------------ */

int find_buf_reserve(struct find_buf *b, size_t extra)
{
    if (b->len + extra <= b->cap) return 0;
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < b->len + extra) cap *= 2;
    char *p = realloc(b->p, cap);
    if (!p) return -1;
    b->p = p;
    b->cap = cap;
    return 0;
}

static int buf_put(struct find_buf *b, const void *data, size_t n)
{
    if (find_buf_reserve(b, n)) return -1;
    memcpy(b->p + b->len, data, n);
    b->len += n;
    return 0;
}

void find_buf_free(struct find_buf *b)
{
    free(b->p);
    memset(b, 0, sizeof *b);
}

/* ---- errors ------------------------------------------------------------------------------------------- */

int find_comm_failed(struct find_run *r)
{
    return iol_err_set(&r->err, IOL_ERR_RUNTIME, "communication with the other ranks failed");
}

int find_out_of_memory(struct find_run *r)
{
    return iol_err_set(&r->err, IOL_ERR_RUNTIME, "out of memory");
}

/* An entry or directory that cannot be read: find reports it and goes on, and so do we (counted). */
static void note_error(struct find_run *r, int errnum, const char *what, const char *rel, const char *name)
{
    r->me.errors++;
    if (r->first_error[0]) return;
    snprintf(r->first_error, sizeof r->first_error, "%s %.400s%s%.300s%s%.250s: %s", what, r->cfg->root, rel[0] || name ? r->sep : "",
             rel, rel[0] && name ? "/" : "", name ? name : "", strerror(errnum));
}

static int agree(struct find_run *r)
{
    if (!iol_agree(r->comm, &r->err, &r->err_rank)) return 0;
    if (!r->err_phase) r->err_phase = "walk";
    return 1;
}

/* ---- one entry ------------------------------------------------------------------------------------------ */

static int timed_stat(struct find_run *r, int dfd, const char *name, struct stat *st)
{
    uint64_t t0 = iol_now_ns();
    int rc = fstatat(dfd, name, st, AT_SYMLINK_NOFOLLOW);
    iol_hist_record(&r->hist, iol_now_ns() - t0);
    r->me.stats++;
    return rc;
}

static void progress(struct find_run *r, uint64_t now)
{
    double el = (double)(iol_comm_time(r->comm, now) - r->me.t_start) / 1e9;
    uint64_t est = r->me.scanned * (uint64_t)r->nranks;
    fprintf(stderr,
            "IOLENS-PROGRESS {\"phase\": \"find\", \"level\": %" PRIu64 ", \"elapsed_s\": %.3f, \"items\": %" PRIu64
            ", \"items_per_s\": %.1f, \"estimate\": true}\n",
            r->levels, el, est, el > 0 ? (double)est / el : 0.0);
    fflush(stderr);
    r->next_progress_ns = now + 500000000ULL;
}

int find_check_clock(struct find_run *r)
{
    if (r->stopped) return 1;
    if (iol_interrupted(r->comm)) {
        r->stopped = 1;
        return 1;
    }
    if (!r->deadline_ns && !(r->info->progress && r->rank == 0)) return 0;
    uint64_t now = iol_now_ns();
    if (r->deadline_ns && now >= r->deadline_ns) {
        r->stopped = 1;
        return 1;
    }
    if (r->info->progress && r->rank == 0 && now >= r->next_progress_ns) progress(r, now);
    return 0;
}

int find_must_stop(struct find_run *r)
{
    if (r->stopped) return 1;
    if ((++r->tick & TICK_MASK) != 0) return 0;
    return find_check_clock(r);
}

static void write_match(struct find_run *r, const char *rel, const char *name)
{
    /* As find prints it: the starting point as given, then the path below it. */
    fputs(r->cfg->root, r->mfp);
    if (name) {
        fputs(r->sep, r->mfp);
        if (rel[0]) {
            fputs(rel, r->mfp);
            putc('/', r->mfp);
        }
        fputs(name, r->mfp);
    }
    putc('\n', r->mfp);
}

/* Evaluates the predicates on one entry of directory `rel` (open as dfd; -1 if it could not be opened),
 * cheapest first as find's optimiser orders them: the name needs no system call, -newer and -size a stat. */
void find_process_entry(struct find_run *r, int dfd, const char *rel, const char *name, const char *match_name)
{
    const struct find_preds *p = r->pr;
    r->me.scanned++;
    if (p->has_name && fnmatch(r->cfg->name, match_name, 0) != 0) return;
    if (p->needs_stat) {
        struct stat st;
        if (dfd == -1) return;   /* the directory's failure is already counted */
        if (timed_stat(r, dfd, name, &st) != 0) {
            note_error(r, errno, "cannot stat", rel, dfd == AT_FDCWD ? NULL : name);
            return;
        }
        if (p->has_size && !find_size_match(&p->size, (uint64_t)st.st_size)) return;
        if (p->has_newer && !find_newer_match(p, (int64_t)st.st_mtim.tv_sec, (int64_t)st.st_mtim.tv_nsec)) return;
    }
    r->me.matched++;
    if (r->mfp) write_match(r, rel, dfd == AT_FDCWD ? NULL : name);
}

/* The starting point is an entry of its own, as in find: its -name is the base name of DIR as given. */
static void process_root(struct find_run *r)
{
    char base[IOL_STR_MAX];
    snprintf(base, sizeof base, "%s", r->cfg->root);
    size_t n = strlen(base);
    while (n > 1 && base[n - 1] == '/') base[--n] = '\0';
    const char *slash = strrchr(base, '/');
    const char *match = slash && slash[1] ? slash + 1 : base;
    find_process_entry(r, AT_FDCWD, "", r->cfg->root, match);
}

/* ---- directories ------------------------------------------------------------------------------------------ */

int find_open_dir(struct find_run *r, const char *rel)
{
    /* Below the root nothing is followed: a directory replaced by a link while we walk is not entered. */
    int fd = openat(r->rootfd, rel[0] ? rel : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC | (rel[0] ? O_NOFOLLOW : 0));
    if (fd < 0) note_error(r, errno, "cannot open directory", rel, NULL);
    return fd;
}

static void process_entries(struct find_run *r, int dfd, const char *rel, const struct find_buf *ents)
{
    for (size_t off = 0; off < ents->len;) {
        const char *name = ents->p + off + 1;
        off += strlen(name) + 2;
        if (find_must_stop(r)) return;
        find_process_entry(r, dfd, rel, name, name);
    }
}

int find_read_entries(struct find_run *r, DIR *d, const char *rel, struct find_buf *b, uint64_t max, size_t cap,
                      uint64_t *count)
{
    *count = 0;
    while (*count < max && (!cap || b->len + FIND_ENTRY_MAX <= cap)) {
        errno = 0;
        struct dirent *e = readdir(d);
        if (!e) {
            if (errno) note_error(r, errno, "cannot read directory", rel, NULL);
            return 1;
        }
        const char *nm = e->d_name;
        if (nm[0] == '.' && (nm[1] == '\0' || (nm[1] == '.' && nm[2] == '\0'))) continue;
        unsigned char type = e->d_type;
        if (type == DT_UNKNOWN) {
            /* Some file systems do not fill d_type: only a stat can tell a subdirectory. */
            struct stat st;
            if (timed_stat(r, dirfd(d), nm, &st) == 0) type = (unsigned char)IFTODT(st.st_mode);
        }
        size_t len = strlen(nm);
        if (find_buf_reserve(b, len + 2)) return -1;
        b->p[b->len] = (char)type;
        memcpy(b->p + b->len + 1, nm, len + 1);
        b->len += len + 2;
        (*count)++;
        if (type == DT_DIR) {
            r->rel.len = 0;
            if (find_buf_reserve(&r->rel, strlen(rel) + len + 2)) return -1;
            int k = find_join(r->rel.p, r->rel.cap, rel, nm);
            if (k < 0 || buf_put(&r->next, r->rel.p, (size_t)k + 1)) return -1;
        }
    }
    return 0;
}

/* Reads directory `rel` (in r->level), lists its subdirectories for the next level, and evaluates its
 * entries; or, past --split-entries entries, sets it aside (open) for the ranks to finish together. Returns
 * -1 only on a fatal error (out of memory). */
static int read_dir(struct find_run *r, const char *rel)
{
    int fd = find_open_dir(r, rel);
    if (fd < 0) return 0;
    DIR *d = fdopendir(fd);
    if (!d) {
        note_error(r, errno, "cannot read directory", rel, NULL);
        close(fd);
        return 0;
    }
    r->me.dirs++;
    r->ents.len = 0;
    uint64_t n;
    /* Past FIND_MAX_OPEN set-aside directories in a level, the next ones are read whole here (they are still
     * shared, in the chunks read): that bounds the descriptors held open. */
    uint64_t limit = r->nbigs < FIND_MAX_OPEN ? (uint64_t)r->cfg->split_entries + 1 : UINT64_MAX;
    int end = find_read_entries(r, d, rel, &r->ents, limit, 0, &n);
    if (end < 0) goto oom;
    if (n > (uint64_t)r->cfg->split_entries) {
        if (r->nbigs == r->capbigs) {
            size_t cap = r->capbigs ? r->capbigs * 2 : 8;
            struct find_big *b = realloc(r->bigs, cap * sizeof *b);
            if (!b) goto oom;
            r->bigs = b;
            r->capbigs = cap;
        }
        struct find_big *b = &r->bigs[r->nbigs];
        memset(b, 0, sizeof *b);
        b->rel_off = (size_t)(rel - r->level.p);
        b->ents = r->ents;
        memset(&r->ents, 0, sizeof r->ents);
        if (end) closedir(d);
        else b->d = d;
        r->nbigs++;
        return 0;
    }
    process_entries(r, dirfd(d), rel, &r->ents);
    closedir(d);
    return 0;
oom:
    closedir(d);
    return find_out_of_memory(r);
}

/* Collective: every rank gets every rank's `mine` (one u64 each). */
int find_allgather_u64(struct find_run *r, uint64_t mine, uint64_t *all)
{
    struct iol_comm *c = r->comm;
    if (c->gather(c, &mine, sizeof mine, all, 0) || c->bcast(c, all, sizeof *all * (size_t)r->nranks, 0))
        return find_comm_failed(r);
    return 0;
}

/* Collective: 1 if any rank could not get `need` more bytes (then every rank stops: nobody may be left
 * waiting in a broadcast that one rank cannot receive). */
int find_reserve_everywhere(struct find_run *r, struct find_buf *b, size_t need)
{
    int64_t failed = find_buf_reserve(b, need) != 0, any = 0;
    if (r->comm->allreduce(r->comm, &failed, &any, 1, IOL_DT_I64, IOL_OP_MAX)) return find_comm_failed(r);
    if (any) return failed ? find_out_of_memory(r) : iol_err_set(&r->err, IOL_ERR_RUNTIME, "another rank ran out of memory");
    return 0;
}

/* Collective: the next level's list is every rank's subdirectories, in rank order. */
static int exchange_next(struct find_run *r, uint64_t *lens)
{
    struct iol_comm *c = r->comm;
    if (find_allgather_u64(r, r->next.len, lens)) return -1;
    size_t total = 0;
    for (int i = 0; i < r->nranks; i++) total += lens[i];
    r->level.len = 0;
    if (find_reserve_everywhere(r, &r->level, total)) return -1;
    size_t off = 0;
    for (int src = 0; src < r->nranks; off += lens[src], src++) {
        if (!lens[src]) continue;
        if (src == r->rank) memcpy(r->level.p + off, r->next.p, lens[src]);
        if (c->bcast(c, r->level.p + off, lens[src], src)) return find_comm_failed(r);
    }
    r->level.len = total;
    r->next.len = 0;
    return 0;
}

static int walk(struct find_run *r)
{
    uint64_t *scratch = calloc((size_t)r->nranks, sizeof *scratch);
    int64_t failed = scratch == NULL, any = 0;
    if (r->comm->allreduce(r->comm, &failed, &any, 1, IOL_DT_I64, IOL_OP_MAX)) {
        free(scratch);
        return find_comm_failed(r);
    }
    if (any) {
        free(scratch);
        return find_out_of_memory(r);
    }
    uint64_t t0 = iol_now_ns();
    if (r->rank == 0) process_root(r);
    if (buf_put(&r->level, "", 1)) find_out_of_memory(r);
    r->me.busy_ns += iol_now_ns() - t0;
    if (agree(r)) r->level.len = 0;
    while (r->level.len > 0) {
        r->level_busy0 = r->me.busy_ns;
        t0 = iol_now_ns();
        uint64_t idx = 0;
        for (size_t off = 0; off < r->level.len; idx++) {
            const char *rel = r->level.p + off;
            off += strlen(rel) + 1;
            if (find_entry_owner(idx, r->nranks) != r->rank) continue;
            if (find_must_stop(r) || read_dir(r, rel)) break;
        }
        r->me.busy_ns += iol_now_ns() - t0;
        if (agree(r)) break;
        if (find_share_big_dirs(r, scratch) || agree(r)) break;
        if (exchange_next(r, scratch) || agree(r)) break;
        r->levels++;
        /* Once one rank has hit the deadline, the walk ends for all of them at this level's end. */
        int64_t stop = r->stopped, anystop = 0;
        if (r->comm->allreduce(r->comm, &stop, &anystop, 1, IOL_DT_I64, IOL_OP_MAX)) {
            find_comm_failed(r);
            break;
        }
        if (anystop) {
            r->stonewall_hit = r->deadline_ns != 0;
            r->level.len = 0;
        }
        if (r->info->progress && r->rank == 0) progress(r, iol_now_ns());
    }
    free(scratch);
    return r->err.code ? -1 : 0;
}

/* ---- --matches: parts per rank, joined by rank 0 ------------------------------------------------------------ */

static int open_part(struct find_run *r)
{
    snprintf(r->part, sizeof r->part, "%s.part.%" PRId64 ".%d", r->cfg->matches, r->tag, r->rank);
    int fd = open(r->part, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) return iol_err_errno(&r->err, IOL_ERR_RUNTIME, errno, "--matches: cannot create %s", r->part);
    r->mfp = fdopen(fd, "w");
    if (!r->mfp) {
        close(fd);
        unlink(r->part);
        return iol_err_errno(&r->err, IOL_ERR_RUNTIME, errno, "--matches: cannot open %s", r->part);
    }
    setvbuf(r->mfp, NULL, _IOFBF, 1 << 20);
    return 0;
}

static int close_part(struct find_run *r)
{
    if (!r->mfp) return 0;
    int bad = fflush(r->mfp) != 0 || ferror(r->mfp);
    int e = errno;
    if (fclose(r->mfp) != 0 && !bad) {
        bad = 1;
        e = errno;
    }
    r->mfp = NULL;
    return bad ? iol_err_errno(&r->err, IOL_ERR_RUNTIME, e, "--matches: write %s", r->part) : 0;
}

/* Rank 0: the parts, in rank order, into a temporary file renamed over --matches (a list at that path is
 * always whole). The parts are removed whatever happens. */
static int join_parts(struct find_run *r, int keep)
{
    char tmp[IOL_STR_MAX + 64], part[IOL_STR_MAX + 64];
    snprintf(tmp, sizeof tmp, "%s.tmp.%" PRId64, r->cfg->matches, r->tag);
    FILE *out = keep ? fopen(tmp, "w") : NULL;
    int rc = 0;
    if (keep && !out) rc = iol_err_errno(&r->err, IOL_ERR_RUNTIME, errno, "--matches: cannot create %s", tmp);
    char *buf = malloc(1 << 20);
    if (!buf && out) rc = find_out_of_memory(r);
    for (int i = 0; i < r->nranks; i++) {
        snprintf(part, sizeof part, "%s.part.%" PRId64 ".%d", r->cfg->matches, r->tag, i);
        FILE *in = rc == 0 && out ? fopen(part, "r") : NULL;
        if (rc == 0 && out && !in) rc = iol_err_errno(&r->err, IOL_ERR_RUNTIME, errno, "--matches: cannot read %s", part);
        size_t n;
        while (in && rc == 0 && (n = fread(buf, 1, 1 << 20, in)) > 0)
            if (fwrite(buf, 1, n, out) != n) rc = iol_err_errno(&r->err, IOL_ERR_RUNTIME, errno, "--matches: write %s", tmp);
        if (in) fclose(in);
        unlink(part);
    }
    free(buf);
    if (out) {
        if (rc == 0 && (fflush(out) != 0 || fsync(fileno(out)) != 0))
            rc = iol_err_errno(&r->err, IOL_ERR_RUNTIME, errno, "--matches: write %s", tmp);
        fclose(out);
        if (rc == 0 && rename(tmp, r->cfg->matches) != 0)
            rc = iol_err_errno(&r->err, IOL_ERR_RUNTIME, errno, "--matches: rename to %s", r->cfg->matches);
        if (rc) unlink(tmp);
    }
    return rc;
}

/* ---- the job's figures -------------------------------------------------------------------------------------- */

/* Collective: per-rank figures to rank 0, the histogram merged, the first unreadable entry named. */
static int reduce(struct find_run *r)
{
    struct iol_comm *c = r->comm;
    if (c->gather(c, &r->me, sizeof r->me, r->all, 0)) return find_comm_failed(r);
    if (iol_hist_allreduce(c, &r->hist)) return find_comm_failed(r);
    int64_t mine = r->first_error[0] ? r->rank : INT64_MAX, first = INT64_MAX;
    if (c->allreduce(c, &mine, &first, 1, IOL_DT_I64, IOL_OP_MIN)) return find_comm_failed(r);
    if (first != INT64_MAX) {
        if (c->bcast(c, r->first_error, sizeof r->first_error, (int)first)) return find_comm_failed(r);
        r->first_error_rank = (int)first;
    }
    if (r->rank != 0) return 0;
    memset(&r->total, 0, sizeof r->total);
    r->total.t_start = UINT64_MAX;
    for (int i = 0; i < r->nranks; i++) {
        const struct find_rank_stat *s = &r->all[i];
        r->total.scanned += s->scanned;
        r->total.matched += s->matched;
        r->total.errors += s->errors;
        r->total.stats += s->stats;
        r->total.dirs += s->dirs;
        r->total.busy_ns += s->busy_ns;
        if (s->t_start < r->total.t_start) r->total.t_start = s->t_start;
        if (s->t_end > r->total.t_end) r->total.t_end = s->t_end;
    }
    r->time_s = r->total.t_end > r->total.t_start ? (double)(r->total.t_end - r->total.t_start) / 1e9 : 0.0;
    r->rate = r->time_s > 0 ? (double)r->total.scanned / r->time_s : 0.0;
    r->reduced = 1;
    return 0;
}

/* ---- the run ------------------------------------------------------------------------------------------------- */

static int setup(struct find_run *r)
{
    const struct find_cfg *cfg = r->cfg;
    size_t n = strlen(cfg->root);
    r->sep = n && cfg->root[n - 1] == '/' ? "" : "/";
    /* The parts of --matches are named after rank 0's pid, so two runs writing next to each other never mix.
     * (The one collective here comes first: every rank must reach it, whatever fails after.) */
    r->tag = (int64_t)getpid();
    if (r->comm->bcast(r->comm, &r->tag, sizeof r->tag, 0)) return find_comm_failed(r);
    snprintf(r->fs_type, sizeof r->fs_type, "%s", iol_fs_type(cfg->root));
    r->rootfd = open(cfg->root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (r->rootfd < 0) return iol_err_errno(&r->err, IOL_ERR_RUNTIME, errno, "cannot open DIR %s", cfg->root);
    if (cfg->matches[0] && open_part(r)) return -1;
    if (r->rank == 0 && !(r->all = calloc((size_t)r->nranks, sizeof *r->all))) return find_out_of_memory(r);
    return 0;
}

static void write_document(struct find_run *r)
{
    struct iol_doc d;
    struct iol_err e = {0, ""};
    if (iol_doc_open(&d, r->info->json_path, &e) == 0) {
        iol_doc_header(&d.json, "find", r->info, r->comm, r->nranks);
        find_report_json(&d.json, r);
        iol_doc_status(&d.json, &r->err, r->err_rank, r->err.code ? r->err_phase : NULL);
        iol_doc_commit(&d, &e);
    }
    if (e.code) fprintf(stderr, "iolens-bench: error: %s\n", e.msg);
}

/* Collective: rank 0 takes the predicates (one -newer reference time for all) and tells the others. */
static int share_preds(struct find_run *r, struct find_preds *preds)
{
    struct {
        struct find_preds p;
        struct iol_err e;
    } msg;
    memset(&msg, 0, sizeof msg);
    if (r->rank == 0) find_preds_load(r->cfg, &msg.p, &msg.e);
    if (r->comm->bcast(r->comm, &msg, sizeof msg, 0)) return find_comm_failed(r);
    *preds = msg.p;
    if (msg.e.code && r->rank == 0) r->err = msg.e;
    return msg.e.code ? -1 : 0;
}

int find_run(const struct find_cfg *cfg, struct iol_comm *comm, const struct iol_run_info *info)
{
    struct find_preds preds;
    struct find_run *r = calloc(1, sizeof *r);
    if (!r) return IOL_ERR_RUNTIME;
    r->cfg = cfg;
    r->pr = &preds;
    memset(&preds, 0, sizeof preds);
    r->comm = comm;
    r->info = info;
    r->rootfd = -1;
    r->err_rank = -1;
    r->first_error_rank = -1;
    r->err_phase = "setup";
    iol_hist_init(&r->hist);

    if (iol_comm_setup(comm, &r->err) == 0) {
        r->rank = comm->rank;
        r->nranks = comm->size;
        if (share_preds(r, &preds) == 0) setup(r);
    }
    int failed = agree(r);
    if (!failed) {
        r->err_phase = "walk";
        if (comm->barrier(comm)) find_comm_failed(r);
        uint64_t now = iol_now_ns();
        r->me.t_start = iol_comm_time(comm, now);
        r->next_progress_ns = now + 500000000ULL;
        if (cfg->stonewall_s > 0) r->deadline_ns = now + (uint64_t)(cfg->stonewall_s * 1e9);
        if (!r->err.code) walk(r);
        r->me.t_end = iol_comm_time(comm, iol_now_ns());
        failed = agree(r);
    }
    int closed = close_part(r);
    if (!failed) {
        if (closed) r->err_phase = "matches";
        failed = agree(r);
    }
    if (!failed) {
        r->err_phase = "report";
        reduce(r);
        failed = agree(r);
    } else if (iol_interrupt_pending()) {
        /* An interrupted walk still reports what it scanned until the stop, marked cut short (the
         * collectives fail at once if the communicator itself broke). */
        const char *phase = r->err_phase;
        struct iol_err first = r->err;
        iol_err_clear(&r->err);
        reduce(r);
        if (r->reduced) r->cut_short = 1;
        r->err = first;
        r->err_phase = phase;
    }
    /* The parts are joined after every rank closed its own; on failure they are only removed. */
    if (cfg->matches[0] && comm->barrier(comm) == 0 && r->rank == 0) {
        struct iol_err keep = r->err;
        r->err.code = 0;
        if (join_parts(r, !failed) && !failed) r->err_phase = "matches";
        if (keep.code) r->err = keep;
    }
    if (r->rank == 0) {
        if (!info->quiet && (!r->err.code || r->cut_short)) find_report_text(stdout, r);
        if (info->json_path[0]) write_document(r);
        if (r->err.code) fprintf(stderr, "iolens-bench: error: %s\n", r->err.msg);
        fflush(stdout);
    }
    int status = r->err.code ? r->err.code : IOL_OK;
    int64_t s = status, worst = status;
    if (comm->allreduce(comm, &s, &worst, 1, IOL_DT_I64, IOL_OP_MAX) == 0) status = (int)worst;

    if (r->rootfd >= 0) close(r->rootfd);
    find_buf_free(&r->level);
    find_buf_free(&r->next);
    find_buf_free(&r->ents);
    find_buf_free(&r->rel);
    find_free_bigs(r);
    free(r->bigs);
    free(r->all);
    free(r);
    return status;
}
