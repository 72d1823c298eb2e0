/* mdtest.c — the mdtest workload's run: per iteration, the tree is created, then the directory items and the
 * file items go through create, stat, (read,) remove, then the tree is removed; each phase is timed from a
 * barrier to a barrier (mdtest's rate) and by the slowest rank's own time (IO500's: all ranks' items over
 * it), with a latency histogram of every item operation. */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../common/clock.h"
#include "../common/fstype.h"
#include "../common/interrupt.h"
#include "../common/ledger.h"
#include "../common/mix.h"
#include "../common/pattern.h"
#include "../common/permute.h"
#include "mdtest_internal.h"
#include "run_doc.h"
#include "run_sync.h"

#define PATH_LEN (IOL_STR_MAX + 4096)

/* One rank's view of one phase. */
struct md_local {
    uint64_t t_start, t_end;             /* rank 0's clock */
    uint64_t items;
    uint64_t done;                       /* items completed, counting from 0 (for the stonewall) */
    int hit;
    uint64_t at_deadline, stop_ns;
    uint64_t v_files, v_bytes, v_errors;
    uint64_t missing;                    /* remove phases: items already gone */
    char first_bad[IOL_STR_MAX];
    struct iol_hist hist;
};

/* Where the items of a phase come from and how they are visited. */
struct md_pass {
    enum mdtest_phase_id id;
    enum mdtest_kind kind;
    int iteration;
    int owner;                           /* whose items */
    uint64_t start, count;               /* item indexes [start, count) of the owner */
    int random;
    uint64_t deadline_ns;                /* 0 = none */
    uint64_t t_phase;                    /* local monotonic start of the phase (progress, stonewall time) */
};

typedef int (*md_item_fn)(struct mdtest_run *r, const char *path, int owner, uint64_t num, struct md_local *lp);

static int agree(struct mdtest_run *r)
{
    return iol_agree(r->comm, &r->err, &r->err_rank);
}

static int comm_failed(struct mdtest_run *r)
{
    return iol_err_set(&r->err, IOL_ERR_RUNTIME, "communication with the other ranks failed");
}

static const char *owner_dir(const struct mdtest_run *r, int owner)
{
    return r->paths.dir[owner < 0 ? 0 : owner % r->paths.count];   /* owner < 0: -S's shared names */
}

/* The tree (-u) that holds the items of owner: mdtest 4 creates rank r's items in mdtest_tree.(r+N).0, N the
 * stride (-N), and finds them there in every later phase; without -N, its own. */
static int item_tree(const struct mdtest_run *r, int owner)
{
    return (int)(((int64_t)owner + r->stride) % r->nranks);
}

/* ---- the item operations ---------------------------------------------------------------------------- */

/* Files hold mdtest 4's data packets (--dataPacketType, IOR's generator in pattern.c), so files mdtest wrote
 * pass iolens's checks and the other way round. mdtest passes: the -G value as the signature, the writer's
 * rank, and the item number (the one in the file name) as the "offset". With -S (owner -1) every rank writes
 * and checks rank 0's packet: mdtest has each write its own, so a shared file holds whichever rank wrote last
 * and mdtest's own -X reports errors for the other ranks.
 * Bytes past the last whole word are (char)i, i the byte's index in the file, as mdtest fills them. */
static uint32_t item_rank(int owner)
{
    return (uint32_t)(owner < 0 ? 0 : owner);
}

/* Makes buf (len bytes, with packet state pk filled for *cached) hold the file of item NUM of `owner`. The
 * words that do not depend on the item are filled once per owner, as mdtest fills its buffer once. */
static void packet_fill(const struct mdtest_run *r, struct iol_packet_buf *pk, int *cached, void *buf, size_t len,
                        int owner, uint64_t num)
{
    size_t whole = len & ~(size_t)7;
    if (*cached != owner) {
        uint32_t sig = (uint32_t)r->cfg->seed, rank = item_rank(owner);
        iol_packet_init(pk, buf, whole, r->packet, sig, rank);
        /* mdtest's -G is an int added to the word index in 64 bits: a negative one (IO500's seeds are half
         * of the time) or one that passes 2^32 reaches the rank half of timestamp/offset words, which IOR's
         * 32-bit signature does not. */
        int64_t g = (int32_t)sig;
        if ((r->packet == IOL_PACKET_TIMESTAMP || r->packet == IOL_PACKET_OFFSET) &&
            (g < 0 || (uint64_t)g + whole / 8 > UINT32_MAX)) {
            for (size_t i = 0; i < whole / 8; i++) pk->buf[i] = (uint64_t)rank << 32 | (uint64_t)(g + (int64_t)i);
        }
        for (size_t i = whole; i < len; i++) ((unsigned char *)buf)[i] = (unsigned char)i;
        *cached = owner;
    }
    if (whole) iol_packet_apply(pk, num);
}

/* --verify-write: the file just written is read back (through the same open file) and compared with what was
 * written, as mdtest's --verify-write; a difference fails the run, naming the file. */
static int verify_written(struct mdtest_run *r, struct iol_file *f, const char *path, uint64_t w)
{
    struct iol_req q = {.op = IOL_IO_READ, .file = f, .buf = r->vbuf, .len = w, .flags = IOL_REQ_UNTIMED};
    struct iol_req *qp = &q, *done[1];
    if (r->be->submit(r->bctx, &qp, 1, &r->err) != 1 || r->be->reap(r->bctx, done, 1, 1, &r->err) != 1) return -1;
    if (q.error) return iol_err_errno(&r->err, IOL_ERR_RUNTIME, q.error, "--verify-write: read back %s", path);
    if (q.result != (int64_t)w || memcmp(r->vbuf, r->buf, (size_t)w) != 0)
        return iol_err_set(&r->err, IOL_ERR_RUNTIME, "--verify-write: %s does not read back as written", path);
    return 0;
}

static int op_file_create(struct mdtest_run *r, const char *path, int owner, uint64_t num, struct md_local *lp)
{
    (void)lp;
    if (r->cfg->make_node && r->be->does_io) {
        /* -k: mdtest's mknod of a regular file (no open, no data: -k refuses -w). */
        if (mknod(path, S_IFREG | 0644, 0) != 0) return iol_err_errno(&r->err, IOL_ERR_RUNTIME, errno, "mknod %s", path);
        return 0;
    }
    struct iol_file f;
    int how = IOL_O_WRITE | IOL_O_CREATE | (r->vbuf ? IOL_O_READ : 0);   /* --verify-write reads it back */
    if (r->be->open(r->bctx, &f, path, how, 0644, &r->err)) return -1;
    int rc = 0;
    uint64_t w = r->cfg->write_bytes;
    if (w) {
        packet_fill(r, &r->pk, &r->pat_owner, r->buf, (size_t)w, owner, num);
        r->req = (struct iol_req){.op = IOL_IO_WRITE, .file = &f, .buf = r->buf, .len = w, .flags = IOL_REQ_UNTIMED};
        struct iol_req *q = &r->req;
        if (r->be->submit(r->bctx, &q, 1, &r->err) != 1 || r->be->reap(r->bctx, r->done, 1, 1, &r->err) != 1) {
            rc = -1;
        } else if (r->req.error || r->req.result != (int64_t)w) {
            iol_err_errno(&r->err, IOL_ERR_RUNTIME, r->req.error ? r->req.error : EIO, "write %s", path);
            rc = -1;
        } else if (r->cfg->sync_file && r->be->fsync(r->bctx, &f, &r->err)) {
            rc = -1;
        } else if (r->vbuf && r->be->does_io && verify_written(r, &f, path, w)) {
            rc = -1;
        }
    }
    struct iol_err cerr;
    cerr.code = 0;   /* no {0} initialiser: it would clear the 1 KiB message for every item */
    if (r->be->close(r->bctx, &f, &cerr) && !rc) {
        r->err = cerr;
        rc = -1;
    }
    return rc;
}

static int op_stat(struct mdtest_run *r, const char *path, int owner, uint64_t num, struct md_local *lp)
{
    (void)owner, (void)num, (void)lp;
    struct stat st;
    return r->be->stat(r->bctx, path, &st, &r->err);
}

static int op_file_read(struct mdtest_run *r, const char *path, int owner, uint64_t num, struct md_local *lp)
{
    struct iol_file f;
    if (r->be->open(r->bctx, &f, path, IOL_O_READ, 0, &r->err)) return -1;
    int rc = 0;
    uint64_t e = r->cfg->read_bytes;
    if (e) {
        r->req = (struct iol_req){.op = IOL_IO_READ, .file = &f, .buf = r->rbuf, .len = e, .flags = IOL_REQ_UNTIMED};
        struct iol_req *q = &r->req;
        if (r->be->submit(r->bctx, &q, 1, &r->err) != 1 || r->be->reap(r->bctx, r->done, 1, 1, &r->err) != 1) {
            rc = -1;
        } else if (r->req.error || r->req.result != (int64_t)e) {
            if (r->req.error) iol_err_errno(&r->err, IOL_ERR_RUNTIME, r->req.error, "read %s", path);
            else iol_err_set(&r->err, IOL_ERR_RUNTIME, "read %s: got %" PRId64 " of %" PRIu64 " bytes", path,
                             r->req.result, e);
            rc = -1;
        } else if (r->be->does_io) {
            /* -X checks every byte; without it, as mdtest does, only the first word (nearly free). */
            size_t n = r->cfg->verify_read ? e : (e < 8 ? e : 8);
            packet_fill(r, &r->epk, &r->ebuf_owner, r->ebuf, (size_t)e, owner, num);
            uint64_t bad = 0;
            for (size_t i = 0; i < n; i++) bad += ((unsigned char *)r->rbuf)[i] != ((unsigned char *)r->ebuf)[i];
            lp->v_files++;
            lp->v_bytes += n;
            if (bad) {
                if (!lp->v_errors) snprintf(lp->first_bad, sizeof lp->first_bad, "%s", path);
                lp->v_errors += bad;
            }
        }
    }
    struct iol_err cerr;
    cerr.code = 0;   /* no {0} initialiser: it would clear the 1 KiB message for every item */
    if (r->be->close(r->bctx, &f, &cerr) && !rc) {
        r->err = cerr;
        rc = -1;
    }
    return rc;
}

static int op_file_remove(struct mdtest_run *r, const char *path, int owner, uint64_t num, struct md_local *lp)
{
    (void)owner, (void)num, (void)lp;
    return r->be->unlink(r->bctx, path, &r->err);
}

static int op_dir_create(struct mdtest_run *r, const char *path, int owner, uint64_t num, struct md_local *lp)
{
    (void)owner, (void)num, (void)lp;
    return r->be->mkdir(r->bctx, path, 0755, &r->err);
}

static int op_dir_remove(struct mdtest_run *r, const char *path, int owner, uint64_t num, struct md_local *lp)
{
    (void)owner, (void)num, (void)lp;
    return r->be->rmdir(r->bctx, path, &r->err);
}

/* ---- visiting the items --------------------------------------------------------------------------- */

struct path_cache {
    int owner, iteration;
    uint64_t loop, dir;
    int len;                             /* of the directory part in buf; -1 = nothing cached */
    int dir_missing;                     /* a remove phase found this directory gone: its items are too */
    char buf[PATH_LEN];
};

/* The path of item g (0 <= g < items per rank) of owner: test dir of its loop, tree directory, name. */
static int item_path(struct mdtest_run *r, struct path_cache *pc, const struct md_pass *ps, uint64_t g,
                     uint64_t *num_out)
{
    const struct mdtest_geometry *geo = &r->geo;
    uint64_t loop = g / geo->items_per_loop, x = g % geo->items_per_loop;
    uint64_t num = geo->first_item_dir * geo->items_per_dir + x, dir = num / geo->items_per_dir;
    if (pc->len < 0 || pc->owner != ps->owner || pc->iteration != ps->iteration || pc->loop != loop ||
        pc->dir != dir) {
        char td[IOL_STR_MAX + 64];
        if (mdtest_testdir(td, sizeof td, owner_dir(r, ps->owner), ps->iteration, loop) < 0) return -1;
        pc->len = mdtest_tree_dir(pc->buf, sizeof pc->buf, td, r->cfg->unique_dir ? item_tree(r, ps->owner) : -1, dir,
                                  geo->branch);
        if (pc->len < 0) return -1;
        pc->owner = ps->owner;
        pc->dir_missing = 0;
        pc->iteration = ps->iteration;
        pc->loop = loop;
        pc->dir = dir;
    }
    *num_out = num;
    return mdtest_item_name(pc->buf, sizeof pc->buf, pc->len, ps->kind, ps->owner, num) < 0 ? -1 : 0;
}

static void progress(struct mdtest_run *r, const struct md_pass *ps, const struct md_local *lp, uint64_t now,
                     uint64_t t0)
{
    double el = (double)(now - t0) / 1e9;
    uint64_t est = lp->items * (uint64_t)r->nranks;
    fprintf(stderr,
            "IOLENS-PROGRESS {\"phase\": \"%s\", \"iteration\": %d, \"elapsed_s\": %.3f, \"items\": %" PRIu64
            ", \"rate_per_s\": %.1f, \"estimate\": true}\n",
            mdtest_phase_names[ps->id], ps->iteration, el, est, el > 0 ? (double)est / el : 0.0);
    fflush(stderr);
    r->next_progress_ns = now + 500000000ULL;
}

static int visit_items(struct mdtest_run *r, const struct md_pass *ps, md_item_fn fn, struct md_local *lp)
{
    struct path_cache *pc = malloc(sizeof *pc);
    if (!pc) return iol_err_set(&r->err, IOL_ERR_RUNTIME, "out of memory");
    pc->len = -1;
    const int show = r->info->progress && r->comm->rank == 0;
    const uint64_t t0 = ps->t_phase;
    uint64_t n = ps->count, bits = iol_permute_bits(n);
    uint64_t key = iol_mix64((uint64_t)r->cfg->seed ^ ((uint64_t)r->comm->rank << 32) ^ (uint64_t)ps->id);
    int rc = 0;
    uint64_t a = iol_now_ns();
    for (uint64_t x = ps->start; x < n; x++) {
        uint64_t g = ps->random ? iol_permute(x, n, (unsigned)bits, key) : x, num;
        if (item_path(r, pc, ps, g, &num)) {
            rc = iol_err_set(&r->err, IOL_ERR_RUNTIME, "path of item %" PRIu64 " is too long", g);
            break;
        }
        /* The directory of a cut-short run's items may be gone as a whole (a tree never made): counted
         * without a system call per item. */
        if (pc->dir_missing) {
            lp->missing++;
            lp->done = x + 1;
            continue;
        }
        if (fn(r, pc->buf, ps->owner, num, lp)) {
            int e = errno;
            /* Removing what a run cut short never made (or a kill left half removed): skipped and counted,
             * never an error, so a cleanup run always finishes. */
            if (e == ENOENT && (ps->id == MD_FILE_REMOVE || ps->id == MD_DIR_REMOVE)) {
                iol_err_clear(&r->err);
                lp->missing++;
                lp->done = x + 1;
                char c = pc->buf[pc->len];
                pc->buf[pc->len] = '\0';
                if (access(pc->buf, F_OK) != 0 && errno == ENOENT) pc->dir_missing = 1;
                pc->buf[pc->len] = c;
                a = iol_now_ns();
                continue;
            }
            if (e == ENOENT && ps->id != MD_FILE_CREATE && ps->id != MD_DIR_CREATE && !r->cfg->status_file[0]) {
                size_t len = strlen(r->err.msg);
                snprintf(r->err.msg + len, sizeof r->err.msg - len, " (if the create run was stonewalled with -W, "
                         "pass its status file with -x)");
            }
            rc = -1;
            break;
        }
        /* One clock reading per item: this item's end is the next one's start (path building included). */
        uint64_t b = iol_now_ns();
        iol_hist_record(&lp->hist, b - a);
        a = b;
        lp->items++;
        lp->done = x + 1;
        if (r->debug) fprintf(r->debug, "%s %s\n", mdtest_phase_names[ps->id], pc->buf);
        if (ps->deadline_ns && b >= ps->deadline_ns) {
            lp->hit = 1;
            lp->stop_ns = b - t0;
            break;
        }
        if (show && b >= r->next_progress_ns) progress(r, ps, lp, b, t0);
        if (iol_interrupted(r->comm)) {
            iol_note_interrupt(&r->err);
            rc = -1;
            break;
        }
    }
    free(pc);
    return rc;
}

/* mdtest 4's directory rename phase: in each test directory, the owner's directories 0..n-1 (n: items per
 * rank, or per tree directory when -I splits them) go round a chain: 0 -> 0-XX, 1 -> 0, ..., n-2 -> n-3, then
 * 0-XX -> n-2. Every name is back in place afterwards (n-1 was never moved), so later phases find them. */
static int rename_items(struct mdtest_run *r, const struct md_pass *ps, struct md_local *lp)
{
    struct path_cache *pc = malloc(sizeof *pc);
    char *first = malloc(PATH_LEN), *prev = malloc(PATH_LEN), *cur = malloc(PATH_LEN);
    int rc = 0;
    if (!pc || !first || !prev || !cur) rc = iol_err_set(&r->err, IOL_ERR_RUNTIME, "out of memory");
    uint64_t stop = r->geo.loops == 1 ? r->items : r->geo.items_per_dir;
    for (uint64_t loop = 0; !rc && stop > 1 && loop < r->geo.loops; loop++) {
        pc->len = -1;
        uint64_t a = iol_now_ns();
        for (uint64_t i = 0; i < stop; i++) {
            uint64_t num;
            if (item_path(r, pc, ps, loop * r->geo.items_per_loop + i, &num)) {
                rc = iol_err_set(&r->err, IOL_ERR_RUNTIME, "path of item %" PRIu64 " is too long", i);
                break;
            }
            snprintf(cur, PATH_LEN, "%s", pc->buf);
            const char *from = cur, *to = prev;
            if (i == 0) {
                snprintf(first, PATH_LEN, "%s-XX", cur);
                to = first;
            } else if (i == stop - 1) {
                from = first;
            }
            if (r->be->does_io && rename(from, to) != 0) {
                rc = iol_err_errno(&r->err, IOL_ERR_RUNTIME, errno, "rename %s to %s", from, to);
                break;
            }
            uint64_t b = iol_now_ns();
            iol_hist_record(&lp->hist, b - a);
            a = b;
            lp->items++;
            if (r->debug) fprintf(r->debug, "%s %s\n", mdtest_phase_names[ps->id], from);
            snprintf(prev, PATH_LEN, "%s", cur);
            if (iol_interrupted(r->comm)) {
                iol_note_interrupt(&r->err);
                rc = -1;
                break;
            }
        }
    }
    free(pc);
    free(first);
    free(prev);
    free(cur);
    return rc ? -1 : 0;
}

/* ---- the tree and the test directories --------------------------------------------------------------- */

/* A directory iolens made still holds something after its items went: someone else's, which stays. */
static void not_ours_note(struct mdtest_run *r)
{
    size_t len = strlen(r->err.msg);
    snprintf(r->err.msg + len, sizeof r->err.msg - len, " (it holds something iolens did not create: left in "
             "place, with the directories above it)");
}

/* Ranks that hold a shared tree: the first rank of each -d directory. */
static int tree_owner(const struct mdtest_run *r)
{
    if (!r->active) return -2;
    if (r->cfg->unique_dir) return r->comm->rank;
    return r->comm->rank < r->paths.count ? -1 : -2;   /* -1: this rank makes the shared tree; -2: none */
}

/* Creates (or removes, children first) this rank's tree(s) in every loop; counts directories in *items. */
static int tree_op_of(struct mdtest_run *r, int iteration, int create, struct md_local *lp, int owner)
{
    const char *base = r->paths.dir[r->comm->rank % r->paths.count];
    char td[IOL_STR_MAX + 64], path[PATH_LEN];
    for (uint64_t loop = 0; loop < r->geo.loops; loop++) {
        if (mdtest_testdir(td, sizeof td, base, iteration, loop) < 0)
            return iol_err_set(&r->err, IOL_ERR_USAGE, "-d: the path is too long");
        for (uint64_t i = 0; i < r->geo.dirs_in_tree; i++) {
            /* Breadth-first order makes every parent before its children; reversed, children go first. */
            uint64_t k = create ? i : r->geo.dirs_in_tree - 1 - i;
            if (mdtest_tree_dir(path, sizeof path, td, owner, k, r->geo.branch) < 0)
                return iol_err_set(&r->err, IOL_ERR_RUNTIME, "tree path too long");
            uint64_t a = iol_now_ns();
            int before = r->err.code;
            int rc = create ? r->be->mkdir(r->bctx, path, 0755, &r->err) : r->be->rmdir(r->bctx, path, &r->err);
            if (rc && !create && !before && (errno == ENOENT || errno == ENOTEMPTY)) {
                /* A tree a cut-short run left: a directory it never made is skipped; one that still holds
                 * items of its own (ranks of a run with another --np, items past a stonewall count) is
                 * swept of mdtest's names and removed; anything else in it stays, and is reported. */
                int e = errno;
                iol_err_clear(&r->err);
                if (e == ENOENT) {
                    lp->missing++;
                    continue;
                }
                struct iol_cleanup swept = {0, 0, 0, 0};
                if (mdtest_sweep(r, path, 1, 0, &swept)) return -1;
                r->cleanup.removed += swept.removed;
                rc = r->be->rmdir(r->bctx, path, &r->err);
            }
            if (rc) {
                if (!create && errno == ENOTEMPTY && !before) not_ours_note(r);
                return -1;
            }
            iol_hist_record(&lp->hist, iol_now_ns() - a);
            lp->items++;
            if (r->debug) fprintf(r->debug, "%s %s\n", create ? "tree-create" : "tree-remove", path);
        }
    }
    return 0;
}

/* The tree(s) this rank makes or removes: its own (-u), the shared one (first rank of a -d directory), or with
 * -c (collective creates) rank 0 every rank's, as mdtest 4. */
static int tree_op(struct mdtest_run *r, int iteration, int create, struct md_local *lp)
{
    int owner = tree_owner(r);
    if (r->cfg->collective && r->cfg->unique_dir) {
        for (int o = 0; r->comm->rank == 0 && o < r->nranks; o++)
            if (tree_op_of(r, iteration, create, lp, o)) return -1;
        return 0;
    }
    return owner == -2 ? 0 : tree_op_of(r, iteration, create, lp, owner);
}

/* Before a create run: the -d directory (if missing) and the test directories, recorded as iolens's. */
static int make_testdirs(struct mdtest_run *r, int iteration)
{
    if (!r->be->does_io || r->comm->rank >= r->paths.count) return 0;
    const char *base = r->paths.dir[r->comm->rank];
    struct stat st;
    if (stat(base, &st) != 0) {
        if (mkdir(base, 0755) != 0 && errno != EEXIST)
            return iol_err_errno(&r->err, IOL_ERR_RUNTIME, errno, "mkdir %s", base);
        if (iol_ledger_add(base, ".", &r->err)) return -1;   /* the directory itself is iolens's */
    }
    char td[IOL_STR_MAX + 64], name[64];
    for (uint64_t loop = 0; loop < r->geo.loops; loop++) {
        mdtest_testdir(td, sizeof td, base, iteration, loop);
        snprintf(name, sizeof name, "test-dir.%d-%llu", iteration, (unsigned long long)loop);
        /* Recorded before it is made, so a run killed right after still owns it. */
        if (iol_ledger_add(base, name, &r->err)) return -1;
        r->made_testdirs = 1;   /* listed: a cleanup after a failure looks for it (and skips it if absent) */
        if (mkdir(td, 0755) != 0) return iol_err_errno(&r->err, IOL_ERR_RUNTIME, errno, "mkdir %s", td);
    }
    return 0;
}

/* After a remove run: the test directories, and the -d directory if iolens made it. Only what the ledger
 * says iolens created is removed. */
static int remove_testdirs(struct mdtest_run *r, int iteration)
{
    if (!r->be->does_io || r->comm->rank >= r->paths.count) return 0;
    const char *base = r->paths.dir[r->comm->rank];
    char td[IOL_STR_MAX + 64], name[64];
    for (uint64_t loop = 0; loop < r->geo.loops; loop++) {
        mdtest_testdir(td, sizeof td, base, iteration, loop);
        snprintf(name, sizeof name, "test-dir.%d-%llu", iteration, (unsigned long long)loop);
        if (!iol_ledger_owns(base, name)) continue;
        if (rmdir(td) != 0 && errno != ENOENT) {
            int e = errno, before = r->err.code;
            iol_err_errno(&r->err, IOL_ERR_RUNTIME, e, "rmdir %s", td);
            if (e == ENOTEMPTY && !before) not_ours_note(r);
            return -1;
        }
        if (iol_ledger_remove(base, name, &r->err)) return -1;
    }
    /* -d goes only when "." is the ledger's last entry: another iteration's test directory still listed (a
     * failed run's cleanup goes over several) keeps it, and its own removal comes back here. */
    struct iol_ledger_view v;
    if (iol_ledger_load(base, &v, &r->err)) return -1;
    int only_self = v.n == 1 && strcmp(v.lines[0], ".") == 0;
    iol_ledger_view_free(&v);
    if (only_self) {
        char ledger[IOL_STR_MAX + 32];
        snprintf(ledger, sizeof ledger, "%s/%s", base, IOL_LEDGER_NAME);
        if (iol_ledger_remove(base, ".", &r->err)) return -1;
        if (access(ledger, F_OK) != 0) rmdir(base);
    }
    return 0;
}

/* Collective: removes what is left in the test directories of `iteration` that the ledger lists (items and
 * trees of ranks this run does not have, items past a count, a run cut short): every rank takes a share of
 * the items of every directory in use, then the rank of each directory removes the rest and its trees. */
static int sweep_testdirs(struct mdtest_run *r, int iteration)
{
    struct iol_comm *c = r->comm;
    int npaths = r->paths.count < c->size ? r->paths.count : c->size, rc = 0;
    char td[IOL_STR_MAX + 64], name[64];
    for (int pass = 0; pass < 2; pass++) {
        for (int i = 0; r->be->does_io && i < npaths && !rc; i++) {
            if (pass == 1 && i != c->rank) continue;
            for (uint64_t loop = 0; loop < r->geo.loops && !rc; loop++) {
                mdtest_testdir(td, sizeof td, r->paths.dir[i], iteration, loop);
                snprintf(name, sizeof name, "test-dir.%d-%llu", iteration, (unsigned long long)loop);
                if (!iol_ledger_owns(r->paths.dir[i], name)) continue;
                rc = pass == 0 ? mdtest_sweep(r, td, c->size, c->rank, &r->cleanup)
                               : mdtest_sweep(r, td, 1, 0, &r->cleanup);
            }
        }
        if (pass == 0 && c->barrier(c)) return comm_failed(r);
    }
    return rc;
}

static void write_document(struct mdtest_run *r);

/* After a failed or interrupted run that created items: everything it created goes (the items, the trees,
 * the test directories, -d if it made it), found by reading the directories, so it does not matter how far
 * the run got. Collective; the run's own error stays the one reported. */
static void cleanup_after_failure(struct mdtest_run *r)
{
    struct iol_comm *c = r->comm;
    int64_t made = r->made_testdirs, any = 0;
    if (c->allreduce(c, &made, &any, 1, IOL_DT_I64, IOL_OP_MAX) || !any) return;
    r->cleanup.state = IOL_CLEANUP_PENDING;
    /* A launcher may kill the ranks soon after its signal (Open MPI's mpirun: one second after its SIGTERM):
     * the document goes out first, saying the cleanup is pending, and again once it is done. */
    if (iol_interrupt_pending() && c->rank == 0) write_document(r);
    struct iol_err first = r->err;
    const char *phase = r->err_phase;
    int ok = 1;
    for (int it = 0; it < r->cfg->reps; it++) {
        iol_err_clear(&r->err);
        int rc = sweep_testdirs(r, it);
        if (r->comm->barrier(r->comm)) {   /* the communicator broke: the ranks can no longer share it */
            ok = 0;
            break;
        }
        int64_t late = iol_interrupt_overdue(), any_late = 0;
        if (c->allreduce(c, &late, &any_late, 1, IOL_DT_I64, IOL_OP_MAX) || any_late) {
            ok = -1;   /* out of time: the rest stays for a remove run */
            break;
        }
        if (rc == 0) rc = remove_testdirs(r, it);
        if (rc) ok = 0;
    }
    r->err = first;
    r->err_phase = phase;
    r->cleanup.state = ok < 0 ? IOL_CLEANUP_PENDING : IOL_CLEANUP_DONE;
    if (!ok) r->cleanup.left++;
    if (ok < 0 && c->rank == 0)
        fprintf(stderr, "iolens-bench: note: the cleanup stopped %d s after the signal; run this mdtest again with "
                "-r (any --np) to remove what is left\n", IOL_INTERRUPT_CLEANUP_S);
}

/* ---- phases ----------------------------------------------------------------------------------------- */

static int md_stride_owner(const struct mdtest_run *r, int k)
{
    return (int)((r->comm->rank + (int64_t)k * r->stride) % r->nranks);
}

static void local_init(struct md_local *lp)
{
    memset(lp, 0, sizeof *lp);
    iol_hist_init(&lp->hist);
}

static double span_s(uint64_t a, uint64_t b)
{
    return b > a ? (double)(b - a) / 1e9 : 0.0;
}

/* Combines the ranks' views into the phase as the job saw it (collective). */
static int reduce_phase(struct mdtest_run *r, struct md_local *lp, enum mdtest_phase_id id, int iteration,
                        int owner_shift, double barrier_time_s)
{
    struct iol_comm *c = r->comm;
    /* IO500's form: all ranks' items over the slowest rank's time (its own start to its own end). */
    uint64_t slowest = lp->t_end > lp->t_start ? lp->t_end - lp->t_start : 0;
    uint64_t sums[5] = {lp->items, lp->v_files, lp->v_bytes, lp->v_errors, lp->missing};
    if (c->allreduce(c, &slowest, &slowest, 1, IOL_DT_U64, IOL_OP_MAX) ||
        c->allreduce(c, sums, sums, 5, IOL_DT_U64, IOL_OP_SUM) || iol_hist_allreduce(c, &lp->hist))
        return comm_failed(r);
    /* The first bad file's path comes from the lowest rank that saw one. */
    int64_t badrank = lp->v_errors ? c->rank : INT64_MAX;
    if (c->allreduce(c, &badrank, &badrank, 1, IOL_DT_I64, IOL_OP_MIN)) return comm_failed(r);
    char first_bad[IOL_STR_MAX];
    memcpy(first_bad, lp->first_bad, sizeof first_bad);
    if (badrank != INT64_MAX && c->bcast(c, first_bad, sizeof first_bad, (int)badrank)) return comm_failed(r);
    uint64_t mine[2] = {lp->items, lp->t_end > lp->t_start ? lp->t_end - lp->t_start : 0};
    uint64_t *all = c->rank == 0 ? calloc((size_t)c->size * 2, sizeof *all) : NULL;
    if (c->rank == 0 && !all) return iol_err_set(&r->err, IOL_ERR_RUNTIME, "out of memory");
    if (c->gather(c, mine, sizeof mine, all, 0)) {
        free(all);
        return comm_failed(r);
    }
    if (c->rank != 0) return 0;
    if (r->nphases == r->max_phases) {
        free(all);
        return iol_err_set(&r->err, IOL_ERR_RUNTIME, "internal error: too many phases");
    }
    struct mdtest_phase *ph = &r->phases[r->nphases++];
    memset(ph, 0, sizeof *ph);
    ph->id = id;
    ph->iteration = iteration;
    ph->tasks = r->nranks;
    ph->items = sums[0];
    ph->time_s = barrier_time_s;
    ph->rate = barrier_time_s > 0 ? (double)sums[0] / barrier_time_s : 0;
    ph->io500_time_s = (double)slowest / 1e9;
    ph->io500_rate = ph->io500_time_s > 0 ? (double)sums[0] / ph->io500_time_s : 0;
    ph->owner_shift = owner_shift;
    ph->hist = lp->hist;
    ph->verify = id == MD_FILE_READ && r->cfg->read_bytes > 0 && r->be->does_io;
    ph->v_files = sums[1];
    ph->v_bytes = sums[2];
    ph->v_errors = sums[3];
    ph->missing = sums[4];
    if (badrank != INT64_MAX) snprintf(ph->v_first_bad, sizeof ph->v_first_bad, "%s", first_bad);
    ph->rank_items = calloc((size_t)r->nranks, sizeof(uint64_t));
    ph->rank_time_s = calloc((size_t)r->nranks, sizeof(double));
    for (int i = 0; i < r->nranks && ph->rank_items && ph->rank_time_s; i++) {
        ph->rank_items[i] = all[2 * i];
        ph->rank_time_s[i] = (double)all[2 * i + 1] / 1e9;
    }
    free(all);
    return 0;
}

/* The stonewall of the file create phase: every rank goes on to the largest count any rank reached (as
 * mdtest does), and the count is recorded for this run's later phases and in the -x status file. */
static int stonewall_wear_out(struct mdtest_run *r, struct md_pass *ps, struct md_local *lp, md_item_fn fn)
{
    struct iol_comm *c = r->comm;
    /* A rank outside this test of a task range counts in none of the figures (UINT64_MAX: never the min). */
    uint64_t mine = r->active ? lp->done : 0, mn_in = r->active ? mine : UINT64_MAX, mx = 0, mn = 0, sum = 0;
    int64_t hit = lp->hit, failed = r->err.code != 0, anyfail = 0;
    if (c->allreduce(c, &mine, &mx, 1, IOL_DT_U64, IOL_OP_MAX) || c->allreduce(c, &mn_in, &mn, 1, IOL_DT_U64, IOL_OP_MIN) ||
        c->allreduce(c, &mine, &sum, 1, IOL_DT_U64, IOL_OP_SUM) ||
        c->allreduce(c, &hit, &hit, 1, IOL_DT_I64, IOL_OP_MAX) ||
        c->allreduce(c, &failed, &anyfail, 1, IOL_DT_I64, IOL_OP_MAX))
        return comm_failed(r);
    uint64_t stop_ns = lp->stop_ns;
    if (c->allreduce(c, &stop_ns, &stop_ns, 1, IOL_DT_U64, IOL_OP_MAX)) return comm_failed(r);
    lp->at_deadline = mine;
    if (!anyfail && r->active && mine < mx) {
        struct md_pass more = *ps;
        more.start = mine;
        more.count = mx;
        more.deadline_ns = 0;
        visit_items(r, &more, fn, lp);
    }
    r->items = mx;
    if (c->rank == 0) {
        r->sw_hit = hit != 0;
        r->sw_min = mn;
        r->sw_max = mx;
        r->sw_sum = sum;
        r->sw_time_s = (double)stop_ns / 1e9;
        if (r->cfg->status_file[0]) {
            FILE *fp = fopen(r->cfg->status_file, "w");
            if (!fp || fprintf(fp, "%" PRIu64, mx) < 0 || fclose(fp) != 0)
                iol_err_errno(&r->err, IOL_ERR_RUNTIME, errno, "-x: cannot write %s", r->cfg->status_file);
        }
    }
    return 0;
}

/* mdtest's --run-cmd-before/after-phase: the command through the shell; its status does not matter (as in
 * mdtest), but a command that cannot be started is said once. */
static void run_cmd(const char *cmd)
{
    fflush(stdout);
    int st = system(cmd);
    static int said;
    if (st == -1 && !said++) fprintf(stderr, "iolens-bench: note: cannot run '%s': %s\n", cmd, strerror(errno));
}

/* One timed phase: barrier, work, (sync,) barrier. */
static int run_phase(struct mdtest_run *r, enum mdtest_phase_id id, int iteration)
{
    const struct mdtest_cfg *cfg = r->cfg;
    struct iol_comm *c = r->comm;
    r->err_phase = mdtest_phase_names[id];
    struct md_local *lp = malloc(sizeof *lp);
    if (!lp) return iol_err_set(&r->err, IOL_ERR_RUNTIME, "out of memory");
    local_init(lp);
    /* mdtest's owner of each phase's items: create 0, stat and rename 1, read 2, remove 3 strides on. */
    int k = id == MD_DIR_CREATE || id == MD_FILE_CREATE || id == MD_TREE_CREATE || id == MD_TREE_REMOVE ? 0
          : id == MD_FILE_READ ? 2
          : id == MD_DIR_REMOVE || id == MD_FILE_REMOVE ? 3 : 1;
    int shift = (int)(((int64_t)k * r->stride) % r->nranks);
    int is_file = id >= MD_FILE_CREATE && id <= MD_FILE_REMOVE;
    /* -S: every rank works on the same names (file.mdtest.shared.N), as mdtest's shared file access. */
    int owner = cfg->shared_file ? -1 : md_stride_owner(r, k);
    struct md_pass ps = {id, is_file ? MDTEST_FILE : MDTEST_DIR, iteration, owner, 0,
                         r->items, cfg->random && (id == MD_FILE_STAT || id == MD_DIR_STAT || id == MD_FILE_READ), 0, 0};
    static const md_item_fn fns[MD_NPHASES] = {
        NULL, op_dir_create, op_stat, op_dir_remove, op_file_create, op_stat, op_file_read, op_file_remove, NULL, NULL,
    };
    /* -c: rank 0 creates and removes the items of every rank (mdtest's collective creates). */
    int collective = cfg->collective && (id == MD_DIR_CREATE || id == MD_FILE_CREATE || id == MD_DIR_REMOVE ||
                                         id == MD_FILE_REMOVE);

    /* --run-cmd-before-phase: every rank, before the phase's opening barrier (not timed), as mdtest; like
     * mdtest, around the item phases only (not the tree's). */
    int item_phase = id != MD_TREE_CREATE && id != MD_TREE_REMOVE;
    if (cfg->cmd_before[0] && r->active && item_phase) run_cmd(cfg->cmd_before);
    if (!cfg->no_barriers && c->barrier(c)) {
        free(lp);
        return comm_failed(r);
    }
    uint64_t t0 = iol_now_ns();
    lp->t_start = iol_comm_time(c, t0);
    ps.t_phase = t0;
    r->next_progress_ns = t0 + 500000000ULL;
    if (id == MD_TREE_CREATE || id == MD_TREE_REMOVE) {
        tree_op(r, iteration, id == MD_TREE_CREATE, lp);
    } else {
        /* -t: the tree's creation and removal count in the first create and the last remove phase. */
        int first_create = id == (cfg->dirs_only ? MD_DIR_CREATE : MD_FILE_CREATE);
        int last_remove = id == (cfg->files_only ? MD_FILE_REMOVE : MD_DIR_REMOVE);
        struct md_local tree;
        if (cfg->time_unique_dir && first_create) {
            local_init(&tree);
            tree_op(r, iteration, 1, &tree);
            /* Tree creation is local to the rank that owns the tree; the others must not start before it is
             * there (a shared tree, or -u -N: a rank's items live in another rank's tree). */
            if ((!cfg->unique_dir || r->stride % r->nranks || collective) && c->barrier(c)) comm_failed(r);
        }
        /* Collectives below are entered by every rank, failed or not, so none waits for ever. */
        if (id == MD_FILE_CREATE && cfg->stonewall_s) ps.deadline_ns = t0 + (uint64_t)cfg->stonewall_s * 1000000000ULL;
        if (r->err.code || !r->active || (cfg->shared_file && id == MD_FILE_REMOVE && c->rank != 0)) {
            /* failed already, not in this test of a task range, or -S's removal, which rank 0 does alone (as
             * mdtest): only the collectives below */
        } else if (id == MD_DIR_RENAME) {
            rename_items(r, &ps, lp);
        } else if (collective) {
            for (int o = 0; c->rank == 0 && o < r->nranks && !r->err.code; o++) {
                ps.owner = o;
                visit_items(r, &ps, fns[id], lp);
            }
        } else {
            visit_items(r, &ps, fns[id], lp);
        }
        if (id == MD_FILE_CREATE && cfg->stonewall_s) stonewall_wear_out(r, &ps, lp, fns[id]);
        if (cfg->time_unique_dir && last_remove) {
            /* A tree is removed only once every rank is done with the items in it: the shared tree holds
             * everyone's, and with a stride (-N) another rank removes this rank's items (mdtest, too,
             * removes the trees after the phase's closing barrier). */
            if ((!cfg->unique_dir || r->stride % r->nranks || collective) && c->barrier(c)) comm_failed(r);
            local_init(&tree);
            if (!r->err.code) tree_op(r, iteration, 0, &tree);
        }
    }
    if (cfg->sync_phase) sync();
    /* --run-cmd-after-phase: inside the phase's time, as mdtest. */
    if (cfg->cmd_after[0] && r->active && item_phase) run_cmd(cfg->cmd_after);
    lp->t_end = iol_comm_time(c, iol_now_ns());
    int failed = agree(r);
    if (!cfg->no_barriers && c->barrier(c) && !failed) comm_failed(r);
    /* mdtest's time runs from barrier to barrier; taken as the first rank's start to the last rank's exit
     * from the closing barrier (aligned clocks), so it never comes out shorter than any rank's own time. */
    uint64_t bstart = lp->t_start, bend = iol_comm_time(c, iol_now_ns());
    if (!failed && (c->allreduce(c, &bstart, &bstart, 1, IOL_DT_U64, IOL_OP_MIN) ||
                    c->allreduce(c, &bend, &bend, 1, IOL_DT_U64, IOL_OP_MAX)))
        failed = comm_failed(r) != 0;
    double barrier_time = span_s(bstart, bend);
    /* A phase cut short (interrupt, error) is still combined and reported, marked, with what it did; the
     * collectives fail at once if the communicator itself broke. */
    if (failed) {
        int64_t t[2] = {(int64_t)lp->t_start, -(int64_t)bend};
        if (c->allreduce(c, t, t, 2, IOL_DT_I64, IOL_OP_MIN) == 0 &&
            reduce_phase(r, lp, id, iteration, shift, span_s((uint64_t)t[0], (uint64_t)-t[1])) == 0 && c->rank == 0)
            r->phases[r->nphases - 1].cut_short = 1;
    } else {
        failed = reduce_phase(r, lp, id, iteration, shift, barrier_time) || agree(r);
    }
    if (!failed && id == MD_FILE_CREATE && cfg->stonewall_s && c->rank == 0) {
        struct mdtest_phase *ph = &r->phases[r->nphases - 1];
        ph->stonewall = 1;
        ph->sw_hit = r->sw_hit;
        ph->sw_min = r->sw_min;
        ph->sw_max = r->sw_max;
        ph->sw_sum = r->sw_sum;
        ph->sw_time_s = r->sw_time_s;
    }
    free(lp);
    return failed ? -1 : 0;
}

/* ---- the run ---------------------------------------------------------------------------------------- */

static int setup(struct mdtest_run *r)
{
    const struct mdtest_cfg *cfg = r->cfg;
    r->nranks = r->comm->size;
    r->active = 1;
    /* mdtest 4: on several nodes with ranks placed in blocks, -N counts nodes' worth of ranks (S x the ranks
     * on rank 0's node), so the other phases' ranks are on another node. */
    r->stride = cfg->stride;
    if (r->comm->nodes > 1 && r->comm->block_mapping) r->stride *= r->comm->tasks_per_node;
    r->tests = calloc((size_t)r->comm->size, sizeof *r->tests);
    if (!r->tests) return iol_err_set(&r->err, IOL_ERR_RUNTIME, "out of memory");
    r->ntests = mdtest_task_range(cfg, r->comm->size, r->tests, &r->err);
    if (r->ntests < 0) return -1;
    r->be = iol_backend_find(cfg->api);
    if (mdtest_geometry(cfg, &r->geo, &r->err) || mdtest_split_dirs(cfg->dirs, &r->paths, &r->err) ||
        mdtest_status_count(cfg, &r->geo, &r->items, &r->err))
        return -1;
    r->pat_owner = r->ebuf_owner = INT_MIN;   /* no packet yet (-1 is -S's shared owner) */
    r->packet = (enum iol_packet)iol_packet_parse(cfg->packet_type);   /* mdtest_options.c checked the name */
    /* A -d directory the run will create has the file system of its parent. */
    char probe[IOL_STR_MAX + 4];
    snprintf(probe, sizeof probe, "%s", r->paths.dir[0]);
    if (access(probe, F_OK) != 0) snprintf(probe, sizeof probe, "%s/..", r->paths.dir[0]);
    snprintf(r->fs_type, sizeof r->fs_type, "%s", r->be->does_io ? iol_fs_type(probe) : "none");
    uint64_t len = (cfg->write_bytes > cfg->read_bytes ? cfg->write_bytes : cfg->read_bytes) + 8;
    r->buf_len = (size_t)((len + 4095) / 4096 * 4096);
    if (posix_memalign(&r->buf, 4096, r->buf_len)) return iol_err_set(&r->err, IOL_ERR_RUNTIME, "out of memory");
    memset(r->buf, 0, r->buf_len);
    if (posix_memalign(&r->rbuf, 4096, r->buf_len) || posix_memalign(&r->ebuf, 4096, r->buf_len))
        return iol_err_set(&r->err, IOL_ERR_RUNTIME, "out of memory");
    if (cfg->verify_write && cfg->write_bytes) {
        if (posix_memalign(&r->vbuf, 4096, r->buf_len)) return iol_err_set(&r->err, IOL_ERR_RUNTIME, "out of memory");
    }
    if (cfg->debug_list[0]) {
        char p[IOL_STR_MAX + 16];
        snprintf(p, sizeof p, "%s.%d", cfg->debug_list, r->comm->rank);
        r->debug = fopen(p, "w");
        if (!r->debug) return iol_err_errno(&r->err, IOL_ERR_RUNTIME, errno, "--debug-list: cannot write %s", p);
    }
    if (r->comm->rank == 0) {
        r->max_phases = (int)cfg->reps * MD_NPHASES * r->ntests;
        r->phases = calloc((size_t)r->max_phases, sizeof *r->phases);
        if (!r->phases) return iol_err_set(&r->err, IOL_ERR_RUNTIME, "out of memory");
    }
    return r->be->ctx_open(&r->bctx, 1, &r->err);
}

static void teardown(struct mdtest_run *r)
{
    if (r->bctx) r->be->ctx_close(r->bctx);
    if (r->debug) fclose(r->debug);
    free(r->buf);
    free(r->vbuf);
    free(r->rbuf);
    free(r->ebuf);
    for (int i = 0; i < r->nphases; i++) {
        free(r->phases[i].rank_items);
        free(r->phases[i].rank_time_s);
    }
    free(r->phases);
    free(r->tests);
}

static int run_iteration(struct mdtest_run *r, int it)
{
    const struct mdtest_cfg *cfg = r->cfg;
    if (cfg->pre_delay_s) iol_sleep_s((double)cfg->pre_delay_s);
    if (cfg->create) {
        r->err_phase = "setup";
        make_testdirs(r, it);
        if (agree(r)) return -1;
        if (!cfg->time_unique_dir && run_phase(r, MD_TREE_CREATE, it)) return -1;
    }
    /* mdtest runs the directory items through all their phases, then the file items. */
    if (cfg->dirs_only) {
        if (cfg->create && run_phase(r, MD_DIR_CREATE, it)) return -1;
        if (cfg->stat && run_phase(r, MD_DIR_STAT, it)) return -1;
        /* mdtest 4 renames only when a rank has more than one item */
        if (cfg->rename && r->items > 1 && run_phase(r, MD_DIR_RENAME, it)) return -1;
        if (cfg->remove && run_phase(r, MD_DIR_REMOVE, it)) return -1;
    }
    if (cfg->files_only) {
        if (cfg->create && run_phase(r, MD_FILE_CREATE, it)) return -1;
        if (cfg->stat && run_phase(r, MD_FILE_STAT, it)) return -1;
        if (cfg->read && run_phase(r, MD_FILE_READ, it)) return -1;
        if (cfg->remove && run_phase(r, MD_FILE_REMOVE, it)) return -1;
    }
    if (cfg->remove) {
        if (!cfg->time_unique_dir && run_phase(r, MD_TREE_REMOVE, it)) return -1;
        r->err_phase = "cleanup";
        if (r->comm->barrier(r->comm)) return comm_failed(r);
        if (sweep_testdirs(r, it) == 0) remove_testdirs(r, it);
        r->cleanup.state = IOL_CLEANUP_DONE;
        if (agree(r)) return -1;
    }
    return 0;
}

static void write_document(struct mdtest_run *r)
{
    if (!r->info->json_path[0]) return;
    struct iol_doc d;
    struct iol_err e = {0, ""};
    if (iol_doc_open(&d, r->info->json_path, &e) == 0) {
        iol_doc_header(&d.json, "mdtest", r->info, r->comm, r->comm->size);
        mdtest_report_json(&d.json, r);
        iol_doc_cleanup(&d.json, &r->cleanup);
        iol_doc_status(&d.json, &r->err, r->err_rank, r->err.code ? r->err_phase : NULL);
        iol_doc_commit(&d, &e);
    }
    if (e.code) fprintf(stderr, "iolens-bench: error: %s\n", e.msg);
}

int mdtest_run(const struct mdtest_cfg *cfg, struct iol_comm *comm, const struct iol_run_info *info)
{
    struct mdtest_run run;
    struct mdtest_run *r = &run;
    memset(r, 0, sizeof *r);
    r->cfg = cfg;
    r->comm = comm;
    r->info = info;
    r->err_rank = -1;
    r->err_phase = "setup";
    if (iol_comm_setup(comm, &r->err) == 0) setup(r);
    int failed = agree(r);
    FILE *text = comm->rank == 0 && !info->quiet ? stdout : NULL;
    if (text && !failed) mdtest_report_text_begin(text, r);
    /* A task range (-f -l -s): one test per number of tasks, on the first ranks; the others take part only in
     * the collectives. */
    for (int t = 0; !failed && t < r->ntests; t++) {
        r->nranks = r->tests[t];
        r->active = comm->rank < r->nranks;
        if (text) mdtest_report_text_test(text, r);
        for (int it = 0; !failed && it < cfg->reps; it++) failed = run_iteration(r, it) != 0;
    }
    if (failed && cfg->create) cleanup_after_failure(r);
    if (r->cleanup.state != IOL_CLEANUP_NONE) {
        uint64_t n[2] = {r->cleanup.removed, r->cleanup.left};
        if (comm->allreduce(comm, n, n, 2, IOL_DT_U64, IOL_OP_SUM) == 0) {
            r->cleanup.removed = n[0];
            r->cleanup.left = n[1];
        }
        for (int i = 0; comm->rank == 0 && i < r->nphases; i++) r->cleanup.missing += r->phases[i].missing;
    }
    if (comm->rank == 0) {
        for (int i = 0; i < r->nphases && !r->err.code; i++) {
            const struct mdtest_phase *ph = &r->phases[i];
            if (ph->v_errors) {
                iol_err_set(&r->err, IOL_ERR_RUNTIME, "file-read, iteration %d: %" PRIu64 " bytes differ from what "
                            "was written; first in %s", ph->iteration, ph->v_errors, ph->v_first_bad);
                r->err_phase = "file-read";
                r->err_rank = -1;
            }
        }
        if (cfg->rank_csv[0] && !r->err.code && mdtest_rank_csv(r, &r->err)) r->err_phase = "report";
        if (text) mdtest_report_text_end(text, r);
        write_document(r);
        if (r->err.code) fprintf(stderr, "iolens-bench: error: %s\n", r->err.msg);
    }
    int status = r->err.code ? r->err.code : IOL_OK;
    int64_t s = status, worst = status;
    if (comm->allreduce(comm, &s, &worst, 1, IOL_DT_I64, IOL_OP_MAX) == 0) status = (int)worst;
    teardown(r);
    return status;
}
