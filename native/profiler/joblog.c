/* joblog.c — the job log's pieces that need no MPI (joblog.h): a snapshot of this process's log image, the
 * rows of its records of the reduced files, its member of the job log (the image without those records,
 * rank 0's with the reduced ones appended, compressed), and what happens to the live log afterwards (where
 * the job log goes: joblog_place.c).
 *
 * This runs inside MPI_Finalize, never in a signal handler: it may use malloc. Files are opened aside
 * (aside.c), so the program never sees the runtime's descriptors. */
#include "rt.h"
#include "joblog.h"
#include "sys.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <zlib.h>

struct jl_id {
    const char *path;   /* in the image (FILES record) */
    uint32_t len;
    uint32_t *flags;    /* the record's flags word, in the image */
    uint8_t has;        /* the process has counter records of it */
    int32_t row;        /* its row among the reduced files, -1 if not reduced */
};
struct jl_hash {
    uint64_t h;
    uint32_t id;
};

struct iol_jl_snap {
    uint8_t *img;
    size_t len;
    uint32_t cs;        /* chunk size */
    uint64_t nchunks;
    uint32_t nids;
    struct jl_id *ids;
    struct jl_hash *hashes; /* sorted by hash */
    uint64_t *sorted;       /* the hashes alone */
    size_t nhashes;
    size_t n_shared;
    uint64_t *rows;         /* n_shared rows: rank 0 gets the reduced ones back into them */
};

/* The pid whose counts up to MPI_Finalize a job log holds (counts restarted); a fork child is not it. */
static int taken;

static struct iolp_chunk *chunk_at(const struct iol_jl_snap *s, uint64_t k)
{
    return (struct iolp_chunk *)(s->img + IOLP_HEADER_SIZE + k * s->cs);
}

static int is_chunk(const struct iolp_chunk *c, uint32_t cs)
{
    return memcmp(c->magic, "CHNK", 4) == 0 && c->used <= cs - IOLP_CHUNK_HEAD;
}

/* A counter record kind's values per record (0: not one this code reads). */
static unsigned nvals_of(const struct iolp_chunk *c)
{
    switch (c->kind) {
    case IOLP_FILE_REC:
        return IOL_NFILE;
    case IOLP_FILE_DATA:
        return IOL_NDATA;
    case IOLP_MODULE_REC:
        return c->module < IOL_MODULE_MAX ? iol_module_nvals[c->module] : 0;
    default:
        return 0;
    }
}

/* The live log opened aside: read into buf (len bytes, fewer if the file is shorter), or mapped shared. */
struct log_req {
    uint8_t *p;
    size_t len;
    int map;
};

static int log_aside(void *arg)
{
    struct log_req *r = arg;
    int fd = iol_sys_openat(AT_FDCWD, iol_g.log_path, (r->map ? O_RDWR : O_RDONLY) | O_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    if (r->map) {
        r->p = iol_sys_mmap(NULL, r->len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        iol_sys_close(fd);
        return r->p == MAP_FAILED ? -ENOMEM : 0;
    }
    size_t at = 0;
    while (at < r->len) {
        ssize_t n = iol_sys_pread(fd, r->p + at, r->len - at, (off_t)at);
        if (n <= 0)
            break;
        at += (size_t)n;
    }
    iol_sys_close(fd);
    r->len = at;
    return 0;
}

static int by_hash(const void *a, const void *b)
{
    const struct jl_hash *x = a, *y = b;
    return x->h < y->h ? -1 : x->h > y->h;
}

struct iol_jl_snap *iol_jl_snapshot(void)
{
    struct iol_jl_snap *s = calloc(1, sizeof *s);
    if (s == NULL)
        return NULL;
    iol_lock(&iol_g.lock); /* a thread adding a chunk or a file finishes first */
    s->cs = iol_g.hdr->chunk_size;
    s->nchunks = iol_g.hdr->chunk_count;
    s->nids = iol_g.next_file_id + 1;
    struct log_req r = { NULL, IOLP_HEADER_SIZE + s->nchunks * s->cs, 0 };
    r.p = malloc(r.len);
    int rc = r.p == NULL ? -ENOMEM : iol_aside(log_aside, &r);
    iol_unlock(&iol_g.lock);
    s->img = r.p;
    s->len = r.len;
    s->ids = calloc(s->nids, sizeof *s->ids);
    if (rc != 0 || s->ids == NULL || s->len < IOLP_HEADER_SIZE) {
        iol_debug("job log: cannot read this process's log %s: %s", iol_g.log_path, strerror(rc ? -rc : ENOMEM));
        iol_jl_free(s);
        return NULL;
    }
    s->nchunks = (s->len - IOLP_HEADER_SIZE) / s->cs < s->nchunks ? (s->len - IOLP_HEADER_SIZE) / s->cs : s->nchunks;
    for (uint32_t i = 0; i < s->nids; i++)
        s->ids[i].row = -1;
    for (uint64_t k = 0; k < s->nchunks; k++) {
        struct iolp_chunk *c = chunk_at(s, k);
        if (!is_chunk(c, s->cs))
            continue;
        uint8_t *p = (uint8_t *)c + IOLP_CHUNK_HEAD, *end = p + c->used;
        if (c->kind == IOLP_FILES) {
            while (p + sizeof(struct iolp_var) <= end) {
                struct iolp_var *v = (struct iolp_var *)p;
                if (v->a < s->nids && s->ids[v->a].path == NULL) {
                    s->ids[v->a].path = (const char *)(v + 1);
                    s->ids[v->a].len = v->c;
                    s->ids[v->a].flags = &v->d;
                }
                p += sizeof *v + ((v->c + 7u) & ~7u);
            }
        } else if (nvals_of(c) != 0 && c->record_size == 8 + 8 * nvals_of(c)) {
            for (; p + c->record_size <= end; p += c->record_size) {
                uint32_t id = ((struct iolp_rec *)p)->id;
                if (id < s->nids)
                    s->ids[id].has = 1;
            }
        }
    }
    s->hashes = calloc(s->nids, sizeof *s->hashes);
    s->sorted = calloc(s->nids, sizeof *s->sorted);
    if (s->hashes == NULL || s->sorted == NULL) {
        iol_jl_free(s);
        return NULL;
    }
    for (uint32_t i = 1; i < s->nids; i++)
        if (s->ids[i].has && s->ids[i].path != NULL && !(*s->ids[i].flags & IOLP_FILE_EXCLUDED))
            s->hashes[s->nhashes++] = (struct jl_hash){ iol_hash(s->ids[i].path, s->ids[i].len) | 1, i };
    qsort(s->hashes, s->nhashes, sizeof *s->hashes, by_hash);
    for (size_t i = 0; i < s->nhashes; i++)
        s->sorted[i] = s->hashes[i].h;
    return s;
}

void iol_jl_free(struct iol_jl_snap *s)
{
    if (s == NULL)
        return;
    free(s->img);
    free(s->ids);
    free(s->hashes);
    free(s->sorted);
    free(s->rows);
    free(s);
}

size_t iol_jl_hashes(struct iol_jl_snap *s, const uint64_t **hashes)
{
    *hashes = s->sorted;
    return s->nhashes;
}

/* The id of a hash this process has, 0 if none. */
static uint32_t id_of(const struct iol_jl_snap *s, uint64_t h)
{
    size_t lo = 0, hi = s->nhashes;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (s->hashes[mid].h < h)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < s->nhashes && s->hashes[lo].h == h ? s->hashes[lo].id : 0;
}

void iol_jl_match(struct iol_jl_snap *s, const uint64_t *hashes, size_t n, uint8_t *have)
{
    for (size_t i = 0; i < n; i++)
        have[i] = id_of(s, hashes[i]) != 0 ? 0xFF : 0;
}

uint64_t *iol_jl_rows(struct iol_jl_snap *s, const uint64_t *hashes, const uint8_t *all, size_t n, int64_t delta,
                      size_t *n_shared)
{
    const struct iol_red_layout *l = iol_red_layout();
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t id = all[i] ? id_of(s, hashes[i]) : 0;
        if (id != 0)
            s->ids[id].row = (int32_t)k++;
    }
    s->n_shared = k;
    s->rows = calloc(k > 0 ? k : 1, (size_t)l->words * 8);
    if (s->rows == NULL)
        return NULL;
    for (uint64_t c_i = 0; c_i < s->nchunks && k > 0; c_i++) {
        struct iolp_chunk *c = chunk_at(s, c_i);
        unsigned nv = is_chunk(c, s->cs) ? nvals_of(c) : 0;
        if (nv == 0 || c->record_size != 8 + 8 * nv)
            continue;
        unsigned first = c->kind == IOLP_FILE_REC ? l->file : c->kind == IOLP_FILE_DATA ? l->data : l->module[c->module];
        uint64_t bit = c->kind == IOLP_FILE_REC ? 1u : c->kind == IOLP_FILE_DATA ? 2u : 4u << c->module;
        if (first == 0)
            continue; /* a module not reduced (SPREAD) */
        uint8_t *p = (uint8_t *)c + IOLP_CHUNK_HEAD, *end = p + c->used;
        for (; p + c->record_size <= end; p += c->record_size) {
            uint32_t id = ((struct iolp_rec *)p)->id;
            if (id >= s->nids || s->ids[id].row < 0)
                continue;
            uint64_t *row = s->rows + (size_t)s->ids[id].row * l->words;
            /* The record's values placed at the section's words of a scratch row, merged into the row. */
            uint64_t tmp[l->words];
            memcpy(tmp + first, p + 8, 8 * nv);
            iol_red_merge_words(tmp, row, first, nv);
            row[l->present] |= bit;
        }
    }
    for (size_t r = 0; r < k; r++) {
        iol_red_shift_stamps(s->rows + r * l->words, delta);
        iol_red_spread_init(s->rows + r * l->words, iol_g.rank);
    }
    *n_shared = k;
    return s->rows;
}

void iol_jl_signatures(const struct iol_jl_snap *s, uint64_t *sig)
{
    const struct iol_red_layout *l = iol_red_layout();
    memset(sig, 0, s->n_shared * IOL_SIG_WORDS * 8);
    for (size_t r = 0; r < s->n_shared; r++) {
        const uint64_t *row = s->rows + r * l->words;
        uint64_t *g = sig + r * IOL_SIG_WORDS;
        g[0] = row[l->present] & ((1u << IOL_SIG_FIRST) - 1);
        for (unsigned w = 0; w < l->words; w++) {
            unsigned b = l->sigbit[w];
            if (b != 0 && row[w] != 0)
                g[b / 64] |= 1ull << (b % 64);
        }
    }
}

size_t iol_jl_keep_alike(struct iol_jl_snap *s, const uint64_t *band, const uint64_t *bor)
{
    const struct iol_red_layout *l = iol_red_layout();
    /* The new number of each row (-1: its file stays per rank), then each id's row renumbered through it. */
    int32_t *to = malloc((s->n_shared > 0 ? s->n_shared : 1) * sizeof *to);
    if (to == NULL)
        return (size_t)-1;
    size_t k = 0;
    for (size_t r = 0; r < s->n_shared; r++) {
        int alike = memcmp(band + r * IOL_SIG_WORDS, bor + r * IOL_SIG_WORDS, IOL_SIG_WORDS * 8) == 0;
        to[r] = alike ? (int32_t)k : -1;
        if (alike) {
            if (k != r)
                memmove(s->rows + k * l->words, s->rows + r * l->words, (size_t)l->words * 8);
            k++;
        }
    }
    for (uint32_t id = 1; id < s->nids; id++)
        if (s->ids[id].row >= 0)
            s->ids[id].row = to[s->ids[id].row];
    free(to);
    s->n_shared = k;
    return k;
}

/* ---- the member ---- */

/* Appends records (head id, thread; n values each) to new chunks of kind/module at *k. */
static uint8_t *put_record(struct iol_jl_snap *s, uint8_t *out, uint64_t *k, struct iolp_chunk **cur, uint32_t kind,
                           uint32_t module, uint32_t id, const uint64_t *vals, unsigned n)
{
    uint32_t rsize = 8 + 8 * n;
    if (*cur == NULL || (*cur)->used + rsize > s->cs - IOLP_CHUNK_HEAD) {
        *cur = (struct iolp_chunk *)(out + IOLP_HEADER_SIZE + (*k)++ * s->cs);
        memset(*cur, 0, s->cs);
        memcpy((*cur)->magic, "CHNK", 4);
        (*cur)->kind = kind;
        (*cur)->thread = IOLP_PROCESS_THREAD;
        (*cur)->record_size = rsize;
        (*cur)->module = module;
    }
    uint8_t *p = (uint8_t *)*cur + IOLP_CHUNK_HEAD + (*cur)->used;
    ((struct iolp_rec *)p)->id = id;
    ((struct iolp_rec *)p)->thread = IOLJ_ALL_THREADS;
    memcpy(p + 8, vals, 8 * (size_t)n);
    (*cur)->used += rsize;
    return p;
}

static uint64_t chunks_for(size_t recs, unsigned nvals, uint32_t cs)
{
    size_t per = (cs - IOLP_CHUNK_HEAD) / (8 + 8 * (size_t)nvals);
    return (recs + per - 1) / per;
}

/* A FILES chunk of a member: rank 0 flags the reduced files' records; another rank leaves them out unless
 * its trace may name them. */
static void files_of_member(const struct iol_jl_snap *s, struct iolp_chunk *c, int rank0)
{
    uint8_t *p = (uint8_t *)c + IOLP_CHUNK_HEAD, *end = p + c->used, *dst = p;
    int keep_all = !rank0 && (((struct iolp_header *)s->img)->flags & IOLP_TRACE_ON);
    while (p + sizeof(struct iolp_var) <= end) {
        struct iolp_var *v = (struct iolp_var *)p;
        size_t size = sizeof *v + ((v->c + 7u) & ~7u);
        int red = v->a < s->nids && s->ids[v->a].row >= 0;
        if (red && rank0)
            v->d |= IOLP_FILE_REDUCED;
        if (!red || rank0 || keep_all) {
            if (dst != p)
                memmove(dst, p, size);
            dst += size;
        }
        p += size;
    }
    memset(dst, 0, (size_t)(end - dst));
    c->used = (uint64_t)(dst - ((uint8_t *)c + IOLP_CHUNK_HEAD));
}

uint8_t *iol_jl_member(struct iol_jl_snap *s, const uint64_t *reduced, uint64_t nranks, size_t *len)
{
    const struct iol_red_layout *l = iol_red_layout();
    uint64_t extra = 0;
    if (reduced != NULL) {
        extra = chunks_for(s->n_shared, IOL_NFILE, s->cs) + chunks_for(s->n_shared, IOL_NDATA, s->cs) +
                chunks_for(s->n_shared, IOL_NSPREAD, s->cs);
        for (unsigned m = 1; m < IOL_MODULE_MAX; m++)
            if (l->module[m] != 0)
                extra += chunks_for(s->n_shared, iol_module_nvals[m], s->cs);
    }
    size_t raw = IOLP_HEADER_SIZE + (s->nchunks + extra) * s->cs;
    uint8_t *out = malloc(raw);
    if (out == NULL)
        return NULL;
    memcpy(out, s->img, IOLP_HEADER_SIZE + s->nchunks * s->cs);
    /* The reduced files' own records leave the image (rank 0 gets them back reduced). */
    for (uint64_t k = 0; k < s->nchunks; k++) {
        struct iolp_chunk *c = (struct iolp_chunk *)(out + IOLP_HEADER_SIZE + k * s->cs);
        unsigned nv = is_chunk(c, s->cs) ? nvals_of(c) : 0;
        if (is_chunk(c, s->cs) && c->kind == IOLP_FILES)
            files_of_member(s, c, reduced != NULL);
        if (is_chunk(c, s->cs) && c->kind == IOLP_NAMES && reduced == NULL) {
            /* The schema is rank 0's (the same runtime): a member of another rank leaves it out. */
            memset((uint8_t *)c + IOLP_CHUNK_HEAD, 0, c->used);
            c->used = 0;
        }
        if (nv == 0 || c->record_size != 8 + 8 * nv)
            continue;
        uint8_t *src = (uint8_t *)c + IOLP_CHUNK_HEAD, *end = src + c->used, *dst = src;
        for (; src + c->record_size <= end; src += c->record_size) {
            uint32_t id = ((struct iolp_rec *)src)->id;
            if (id < s->nids && s->ids[id].row >= 0)
                continue;
            if (dst != src)
                memmove(dst, src, c->record_size);
            dst += c->record_size;
        }
        memset(dst, 0, (size_t)(end - dst)); /* the room the records left: zeros, as a chunk's unused room */
        c->used = (uint64_t)(dst - ((uint8_t *)c + IOLP_CHUNK_HEAD));
    }
    uint64_t k = s->nchunks;
    if (reduced != NULL) {
        struct iolp_chunk *cur = NULL;
        for (uint32_t id = 1; id < s->nids; id++) {
            int32_t r = s->ids[id].row;
            if (r >= 0)
                put_record(s, out, &k, &cur, IOLP_FILE_REC, 0, id, reduced + (size_t)r * l->words + l->file, IOL_NFILE);
        }
        cur = NULL;
        for (uint32_t id = 1; id < s->nids; id++) {
            int32_t r = s->ids[id].row;
            if (r >= 0 && (reduced[(size_t)r * l->words + l->present] & 2u))
                put_record(s, out, &k, &cur, IOLP_FILE_DATA, 0, id, reduced + (size_t)r * l->words + l->data,
                           IOL_NDATA);
        }
        for (unsigned m = 1; m < IOL_MODULE_MAX; m++) {
            cur = NULL;
            for (uint32_t id = 1; id < s->nids && l->module[m] != 0; id++) {
                int32_t r = s->ids[id].row;
                if (r >= 0 && (reduced[(size_t)r * l->words + l->present] & (4u << m)))
                    put_record(s, out, &k, &cur, IOLP_MODULE_REC, m, id,
                               reduced + (size_t)r * l->words + l->module[m], iol_module_nvals[m]);
            }
        }
        cur = NULL;
        for (uint32_t id = 1; id < s->nids; id++) {
            int32_t r = s->ids[id].row;
            uint64_t sp[IOL_NSPREAD];
            if (r < 0)
                continue;
            iol_red_spread_values(reduced + (size_t)r * l->words, nranks, sp);
            put_record(s, out, &k, &cur, IOLP_MODULE_REC, IOL_MOD_SPREAD, id, sp, IOL_NSPREAD);
        }
    }
    struct iolp_header *h = (struct iolp_header *)out;
    h->chunk_count = k;
    h->flags |= IOLP_CLEAN | IOLP_FINALIZED;
    h->end_ns = iol_ns(iol_g.clk.base, iol_ticks());
    raw = IOLP_HEADER_SIZE + k * s->cs;

    /* The member: the name of this process's log, then the image as a .iolpz holds it. */
    size_t nlen = strlen(iol_g.log_name), head = 8 + ((nlen + 7) & ~(size_t)7) + 16;
    uLongf zcap = compressBound((uLong)raw);
    uint8_t *m = malloc(head + zcap);
    if (m == NULL) {
        free(out);
        return NULL;
    }
    memset(m, 0, head);
    uint32_t w = (uint32_t)nlen;
    memcpy(m, &w, 4);
    memcpy(m + 8, iol_g.log_name, nlen);
    memcpy(m + head - 16, IOLPZ_MAGIC, 8);
    uint64_t rl = raw;
    memcpy(m + head - 8, &rl, 8);
    /* Level 1, as the per-process logs: a log is mostly zeros and small counters. */
    int zr = compress2(m + head, &zcap, out, (uLong)raw, 1);
    free(out);
    if (zr != Z_OK) {
        free(m);
        return NULL;
    }
    *len = head + zcap;
    return m;
}

uint64_t iol_jl_start_wall(void)
{
    return iol_g.hdr->start_wall_ns;
}

/* ---- the live log after the job log took it ---- */

/* What keeps a log after the job log took it: a count on a file (any layer), or a change of the namespace.
 * Reads and writes of pipes and sockets (the MPI library's and the launcher's own talk while the process
 * ends), which only the process counters hold, do not. */
static int counts_after(uint32_t kind, unsigned i)
{
    if (kind != IOLP_PROC_REC)
        return 1;
    return i == IOL_P_MKDIRS || i == IOL_P_RMDIRS || i == IOL_P_UNLINKS || i == IOL_P_RENAMES || i == IOL_P_LINKS;
}

/* Each counter record of the live log: zeroed (zero = 1), or tested for a value (zero = 0: 1 if any). */
static int walk_live(int zero)
{
    struct log_req r = { MAP_FAILED, IOLP_HEADER_SIZE + iol_g.hdr->chunk_count * iol_g.hdr->chunk_size, 1 };
    if (iol_aside(log_aside, &r) != 0)
        return zero ? -1 : 1; /* not known: keep the log */
    int any = 0;
    uint32_t cs = iol_g.hdr->chunk_size;
    for (uint64_t k = 0; k < iol_g.hdr->chunk_count && !any; k++) {
        struct iolp_chunk *c = (struct iolp_chunk *)(r.p + IOLP_HEADER_SIZE + k * cs);
        unsigned nv = is_chunk(c, cs) ? (c->kind == IOLP_PROC_REC ? IOL_NPROC : nvals_of(c)) : 0;
        if (nv == 0 || c->record_size != 8 + 8 * nv)
            continue;
        uint8_t *p = (uint8_t *)c + IOLP_CHUNK_HEAD, *end = p + c->used;
        for (; p + c->record_size <= end && !any; p += c->record_size) {
            uint64_t *v = (uint64_t *)(p + 8);
            for (unsigned i = 0; i < nv; i++) {
                if (zero)
                    __atomic_store_n(&v[i], 0, __ATOMIC_RELAXED);
                else if (__atomic_load_n(&v[i], __ATOMIC_RELAXED) != 0 && counts_after(c->kind, i))
                    any = 1;
            }
        }
    }
    iol_sys_munmap(r.p, r.len);
    return any;
}

void iol_jl_reset(void)
{
    iol_lock(&iol_g.lock);
    walk_live(1);
    iol_log_set_flag(IOLP_AFTER_JOBLOG);
    taken = iol_g.pid;
    iol_unlock(&iol_g.lock);
}

static int unlink_aside(void *arg)
{
    (void)arg;
    return iol_sys_unlinkat(AT_FDCWD, iol_g.log_path, 0) == 0 ? 0 : -errno;
}

int iol_jl_finish(void)
{
    if (taken == 0 || taken != iol_g.pid || walk_live(0) != 0)
        return 0; /* counted after MPI_Finalize: the log stays, flagged, for those counts alone */
    iol_aside(unlink_aside, NULL);
    return 1;
}
