/* find_share.c — the directories too large for one rank (more than --split-entries entries), finished by all
 * ranks together at the end of the level in which they were found.
 *
 * A directory stream can only be read by the rank that opened it (its offsets mean nothing portable to
 * another), so each of these directories is read to its end by its reader. What moves is everything else,
 * while the reading goes on, in steps every rank takes together:
 *
 *   each reader reads the next chunk of its directory (the ranks with none left read nothing);
 *   the chunks go to rank 0 (gather) and from there to every rank (two broadcasts: a header per rank, then
 *   the entries), so every rank holds the step's entries in rank order;
 *   each rank evaluates a consecutive range of them, then the readers read on.
 *
 * So the others stat and match one step's entries while the readers read the next, and ranks that each set a
 * directory aside (mdtest-easy's unique directories) read theirs at the same time. The ranges are sized from
 * what every header carries, so that busy times come out level (find_share_plan): a rank's busy time in this
 * level so far (a reader's includes its reading, and the next chunk's, counted ahead), and the cost per
 * entry the ranks measured. Each entry is evaluated by exactly one rank, so the counts stay exact.
 *
 * The step's size is about FIND_STEP_BYTES of names, split between the readers still reading, and no chunk
 * is smaller than a slot of FIND_SLOT_MIN bytes nor so large that rank 0's gather buffer (a slot per rank)
 * passes FIND_GATHER_MAX. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../common/clock.h"
#include "find_internal.h"

#define FIND_STEP_BYTES ((size_t)128 * 1024)
#define FIND_SLOT_MIN ((size_t)1024)
#define FIND_GATHER_MAX ((size_t)32 * 1024 * 1024)

/* A slot: these header words, then the chunk's entries. */
enum {
    H_DIR,          /* 1 + the directory's offset in r->level; 0: no chunk from this rank */
    H_LEN,          /* bytes of entries */
    H_COUNT,        /* entries */
    H_FIRST,        /* 1: the directory's first chunk */
    H_MORE,         /* 1: this rank has more to read after this chunk */
    H_BUSY,         /* its busy time in this level, the next chunk's reading counted ahead */
    H_EVAL_NS,      /* its time evaluating shared entries, in this level */
    H_EVALUATED,    /* the shared entries it evaluated, in this level */
    H_WORDS
};
#define HDR_BYTES (H_WORDS * sizeof(uint64_t))

struct share {
    struct find_buf slot, table, data, all;
    uint64_t *busy, *counts;        /* the step's busy times from the headers, and its plan */
    int *order;                     /* scratch of find_share_plan */
    size_t next;                    /* this rank's next directory in r->bigs */
    uint64_t eval_ns, evaluated;    /* this rank, in this level */
    uint64_t last_read_ns;
};

static int by_busy(const uint64_t *busy, int a, int b)
{
    return busy[a] < busy[b] || (busy[a] == busy[b] && a < b);
}

void find_share_plan(uint64_t entries, const uint64_t *busy, uint64_t eval_ns, uint64_t evaluated, int nranks,
                     int *order, uint64_t *counts)
{
    for (int i = 0; i < nranks; i++) counts[i] = 0;
    if (!entries) return;
    if (!evaluated || !eval_ns) {
        for (int i = 0; i < nranks; i++) counts[i] = entries / (uint64_t)nranks + ((uint64_t)i < entries % (uint64_t)nranks);
        return;
    }
    /* Cost per entry in 1/16 ns (cheap matches cost tens of ns: whole ns would be too coarse), at least 1. */
    uint64_t cost = eval_ns * 16 / evaluated;
    if (!cost) cost = 1;
    uint64_t work = entries * cost;   /* in 1/16 ns */
    /* Fill from the least busy rank up (insertion sort: nranks is small next to a step's entries). */
    for (int i = 0; i < nranks; i++) {
        int k = i;
        while (k > 0 && by_busy(busy, i, order[k - 1])) {
            order[k] = order[k - 1];
            k--;
        }
        order[k] = i;
    }
    /* The level L (1/16 ns) to which the k least busy ranks are filled: sum of (L - busy) = work. */
    uint64_t level = 0, sum = 0;
    int k = 0;
    while (k < nranks) {
        sum += busy[order[k]] * 16;
        k++;
        level = (work + sum) / (uint64_t)k;
        if (k == nranks || level <= busy[order[k]] * 16) break;
    }
    uint64_t given = 0;
    for (int j = 0; j < k; j++) {
        uint64_t b = busy[order[j]] * 16;
        counts[order[j]] = level > b ? (level - b) / cost : 0;
        given += counts[order[j]];
    }
    /* Rounding leaves a few: to the least busy first. */
    uint64_t rest = entries > given ? entries - given : 0;
    for (int j = 0; j < k; j++) counts[order[j]] += rest / (uint64_t)k + ((uint64_t)j < rest % (uint64_t)k);
}

void find_free_bigs(struct find_run *r)
{
    for (size_t k = 0; k < r->nbigs; k++) {
        if (r->bigs[k].d) closedir(r->bigs[k].d);
        find_buf_free(&r->bigs[k].ents);
    }
    r->nbigs = 0;
}

/* The slot size of a step with `readers` ranks still reading. */
static size_t slot_size(uint64_t readers, int nranks)
{
    size_t s = FIND_STEP_BYTES / (readers ? readers : 1), cap = FIND_GATHER_MAX / (size_t)nranks;
    if (s > cap) s = cap;
    return s < FIND_SLOT_MIN ? FIND_SLOT_MIN : s;
}

/* Reader: its next chunk into sh->slot after the header (at most `size` bytes in all): what is left of the
 * entries read before the directory was set aside, then more from the stream. Fills the header's H_DIR,
 * H_LEN, H_COUNT and H_FIRST; returns 1 if the directory is done after this chunk. */
static int next_chunk(struct find_run *r, struct find_big *b, struct share *sh, size_t size, uint64_t *h)
{
    sh->slot.len = HDR_BYTES;
    uint64_t count = 0;
    h[H_FIRST] = b->cursor == 0;
    while (b->cursor < b->ents.len) {
        size_t n = strlen(b->ents.p + b->cursor + 1) + 2;
        if (sh->slot.len + n > size) break;
        memcpy(sh->slot.p + sh->slot.len, b->ents.p + b->cursor, n);
        sh->slot.len += n;
        b->cursor += n;
        count++;
    }
    /* Read on only while the clock allows: with nothing of its own to evaluate, a reader would otherwise not
     * look at the stonewall until the end of its directory. */
    if (b->cursor >= b->ents.len && b->d && !find_check_clock(r)) {
        uint64_t n = 0;
        int end = find_read_entries(r, b->d, r->level.p + b->rel_off, &sh->slot, UINT64_MAX, size, &n);
        count += n;
        if (end < 0) find_out_of_memory(r);
        if (end) {
            closedir(b->d);
            b->d = NULL;
        }
    }
    if (b->d && (r->stopped || r->err.code)) {
        closedir(b->d);
        b->d = NULL;
    }
    h[H_DIR] = b->rel_off + 1;
    h[H_LEN] = sh->slot.len - HDR_BYTES;
    h[H_COUNT] = count;
    return b->cursor >= b->ents.len && !b->d;
}

/* This rank's slot for the step: a chunk if it has one left, and its figures. */
static void fill_slot(struct find_run *r, struct share *sh, size_t size)
{
    uint64_t h[H_WORDS] = {0};
    sh->slot.len = HDR_BYTES;
    if (sh->next < r->nbigs) {
        uint64_t t0 = iol_now_ns();
        if (next_chunk(r, &r->bigs[sh->next], sh, size, h)) sh->next++;
        sh->last_read_ns = iol_now_ns() - t0;
        r->me.busy_ns += sh->last_read_ns;
        /* A stopped or failed reader shares what it has and no more. */
        if (r->stopped || r->err.code) sh->next = r->nbigs;
    }
    h[H_MORE] = sh->next < r->nbigs;
    h[H_BUSY] = r->me.busy_ns - r->level_busy0 + (h[H_MORE] ? sh->last_read_ns : 0);
    h[H_EVAL_NS] = sh->eval_ns;
    h[H_EVALUATED] = sh->evaluated;
    memcpy(sh->slot.p, h, HDR_BYTES);
}

/* Rank 0: the headers of the gathered slots into sh->table, their entries one after the other into sh->data. */
static void compact(struct find_run *r, struct share *sh, size_t size)
{
    uint64_t *table = (uint64_t *)(void *)sh->table.p;
    sh->data.len = 0;
    for (int i = 0; i < r->nranks; i++) {
        const char *slot = sh->all.p + (size_t)i * size;
        memcpy(table + (size_t)i * H_WORDS, slot, HDR_BYTES);
        uint64_t len = table[(size_t)i * H_WORDS + H_LEN];
        memcpy(sh->data.p + sh->data.len, slot + HDR_BYTES, len);
        sh->data.len += len;
    }
}

/* Evaluates entries [first, end) of the step (in sh->data, described by the table). */
static void evaluate_range(struct find_run *r, struct share *sh, uint64_t first, uint64_t end)
{
    const uint64_t *table = (const uint64_t *)(const void *)sh->table.p;
    uint64_t g = 0;
    size_t off = 0;
    for (int src = 0; src < r->nranks && g < end; src++) {
        const uint64_t *h = table + (size_t)src * H_WORDS;
        size_t stop = off + h[H_LEN];
        uint64_t next_g = g + h[H_COUNT];
        if (h[H_DIR] && next_g > first) {
            const char *rel = r->level.p + (h[H_DIR] - 1);
            int dfd = r->pr->needs_stat ? find_open_dir(r, rel) : -1;
            for (; off < stop && g < end; g++) {
                const char *name = sh->data.p + off + 1;
                off += strlen(name) + 2;
                if (g < first) continue;
                if (find_must_stop(r)) break;
                find_process_entry(r, dfd, rel, name, name);
                sh->evaluated++;
            }
            if (dfd >= 0) close(dfd);
        }
        off = stop;
        g = next_g;
    }
}

/* Collective: one step. Returns -1 on failure, else the number of ranks with more to read. */
static int64_t step(struct find_run *r, struct share *sh, size_t size)
{
    struct iol_comm *c = r->comm;
    fill_slot(r, sh, size);
    if (c->gather(c, sh->slot.p, size, sh->all.p, 0)) return find_comm_failed(r);
    if (r->rank == 0) compact(r, sh, size);
    uint64_t *table = (uint64_t *)(void *)sh->table.p;
    if (c->bcast(c, table, HDR_BYTES * (size_t)r->nranks, 0)) return find_comm_failed(r);
    uint64_t len = 0, entries = 0, eval_ns = 0, evaluated = 0;
    int64_t more = 0;
    for (int i = 0; i < r->nranks; i++) {
        const uint64_t *h = table + (size_t)i * H_WORDS;
        len += h[H_LEN];
        entries += h[H_COUNT];
        eval_ns += h[H_EVAL_NS];
        evaluated += h[H_EVALUATED];
        more += h[H_MORE] != 0;
        r->shared_dirs += h[H_DIR] && h[H_FIRST];
        r->shared_chunks += h[H_DIR] != 0;
        sh->busy[i] = h[H_BUSY];
    }
    if (len > sh->data.cap)
        return iol_err_set(&r->err, IOL_ERR_RUNTIME, "internal error: a step of shared directories does not fit");
    if (c->bcast(c, sh->data.p, len, 0)) return find_comm_failed(r);
    sh->data.len = len;
    find_share_plan(entries, sh->busy, eval_ns, evaluated, r->nranks, sh->order, sh->counts);
    uint64_t first = 0;
    for (int i = 0; i < r->rank; i++) first += sh->counts[i];
    uint64_t t0 = iol_now_ns();
    evaluate_range(r, sh, first, first + sh->counts[r->rank]);
    uint64_t dt = iol_now_ns() - t0;
    sh->eval_ns += dt;
    r->me.busy_ns += dt;
    return more;
}

int find_share_big_dirs(struct find_run *r, uint64_t *counts)
{
    if (find_allgather_u64(r, r->nbigs, counts)) return -1;
    uint64_t readers = 0;
    for (int i = 0; i < r->nranks; i++) readers += counts[i] != 0;
    if (!readers) return 0;
    /* The largest step any number of readers can make, and rank 0's gather buffer. */
    size_t biggest = 0, widest = slot_size(1, r->nranks);
    for (uint64_t k = 1; k <= (uint64_t)r->nranks; k++) {
        size_t s = slot_size(k, r->nranks) * (size_t)k;
        if (s > biggest) biggest = s;
    }
    struct share sh;
    memset(&sh, 0, sizeof sh);
    sh.busy = calloc((size_t)r->nranks, sizeof *sh.busy);
    sh.counts = calloc((size_t)r->nranks, sizeof *sh.counts);
    sh.order = calloc((size_t)r->nranks, sizeof *sh.order);
    int rc = -1;
    int64_t failed = !sh.busy || !sh.counts || !sh.order, any = 0;
    if (r->comm->allreduce(r->comm, &failed, &any, 1, IOL_DT_I64, IOL_OP_MAX)) {
        find_comm_failed(r);
    } else if (any) {
        find_out_of_memory(r);
    } else if (!find_reserve_everywhere(r, &sh.slot, widest) &&
               !find_reserve_everywhere(r, &sh.table, HDR_BYTES * (size_t)r->nranks) &&
               !find_reserve_everywhere(r, &sh.data, biggest) &&
               !find_reserve_everywhere(r, &sh.all, r->rank == 0 ? widest * (size_t)r->nranks : 0)) {
        int64_t more = (int64_t)readers;
        while (more > 0) more = step(r, &sh, slot_size((uint64_t)more, r->nranks));
        rc = more < 0 ? -1 : 0;
    }
    find_buf_free(&sh.slot);
    find_buf_free(&sh.table);
    find_buf_free(&sh.data);
    find_buf_free(&sh.all);
    free(sh.busy);
    free(sh.counts);
    free(sh.order);
    find_free_bigs(r);
    return rc;
}
