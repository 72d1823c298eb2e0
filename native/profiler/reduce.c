/* reduce.c — a file's records combined into one, over threads and over ranks (joblog.h).
 *
 * A row holds every section of one file side by side (FILE_REC, FILE_DATA, each module but SPREAD), a word
 * saying which sections a process had, and the scratch of the per-rank spread. Every word combines by the
 * merge its counter list gives it (counters.h: the same list the reader takes from NAMES), so a counter
 * added to a list is reduced by its meaning without a change here. The merge is commutative and
 * associative, as MPI_Reduce with a user op over a tree of ranks needs. */
#include "joblog.h"

#include <string.h>

#define NPRESENT 1u
#define NMODWORDS (0
#define X(name, id, list) +(id == IOL_MOD_SPREAD ? 0 : IOL_N##name)
enum { IOL_RED_MODWORDS = NMODWORDS IOL_MODULES(X)) };
#undef X
#undef NMODWORDS
#define NWORDS (NPRESENT + IOL_NFILE + IOL_NDATA + IOL_RED_MODWORDS + IOL_RL_LAYERS * SP_WORDS + RO_WORDS)

static uint8_t kinds[NWORDS], stamps[NWORDS];
static uint8_t sigbits[NWORDS];
static struct iol_red_layout layout;
static int built;

#define KIND_sum RK_SUM
#define KIND_max RK_MAX
#define KIND_min RK_MIN
#define KIND_topv RK_TOPV
#define KIND_topc RK_TOPC

/* A counter of the calls of one kind that the layers' rank sets are made of (which ranks wrote a file
 * through POSIX, made collective MPI-IO reads, independent H5Dwrite calls, ...): a name ending in _READS or
 * _WRITES, but not the sequential/consecutive counts (which differ between ranks that do the same calls). */
static int counts_calls(const char *name)
{
    size_t n = strlen(name);
    int ends = (n > 6 && strcmp(name + n - 6, "_READS") == 0) || (n > 7 && strcmp(name + n - 7, "_WRITES") == 0);
    return ends && strstr(name, "_SEQ_") == NULL && strstr(name, "_CONSEC_") == NULL;
}

/* Kinds, timestamp marks and signature bits of a counter list, from word *at on. */
#define PUT(name, merge) \
    kinds[at] = KIND_##merge; \
    stamps[at] = strstr(#name, "_TIMESTAMP") != NULL; \
    if (counts_calls(#name)) \
        sigbits[at] = (uint8_t)(IOL_SIG_FIRST + nsig++ % (64 * IOL_SIG_WORDS - IOL_SIG_FIRST)); \
    at++;

const struct iol_red_layout *iol_red_layout(void)
{
    if (__atomic_load_n(&built, __ATOMIC_ACQUIRE))
        return &layout;
    unsigned at = 0, nsig = 0;
    layout.present = at;
    kinds[at++] = RK_OR;
    layout.file = at;
    IOL_FILE_COUNTERS(PUT)
    layout.data = at;
    IOL_FILE_DATA_COUNTERS(PUT)
#define X(name, id, list) \
    if (id != IOL_MOD_SPREAD) { \
        layout.module[id] = at; \
        list(PUT) \
    }
    IOL_MODULES(X)
#undef X
    layout.spread = at;
    at += IOL_RL_LAYERS * SP_WORDS; /* merged as a block, not by kind */
    layout.roles = at;
    at += RO_WORDS;
    layout.words = at;
    layout.kind = kinds;
    layout.stamp = stamps;
    layout.sigbit = sigbits;
    __atomic_store_n(&built, 1, __ATOMIC_RELEASE);
    return &layout;
}
#undef PUT

static double as_f64(uint64_t w)
{
    double d;
    memcpy(&d, &w, sizeof d);
    return d;
}

static uint64_t of_f64(double d)
{
    uint64_t w;
    memcpy(&w, &d, sizeof w);
    return w;
}

/* The four most common values of a set: the pairs of in and inout with counts of equal values added, the
 * four largest counts kept, largest first (ties: the smaller value first), as the reader orders them. */
static void merge_top(const uint64_t *in, uint64_t *io)
{
    uint64_t v[8], c[8];
    unsigned n = 0;
    for (unsigned side = 0; side < 2; side++) {
        const uint64_t *p = side == 0 ? io : in;
        for (unsigned k = 0; k < 4; k++) {
            if (p[4 + k] == 0)
                continue;
            unsigned j = 0;
            while (j < n && v[j] != p[k])
                j++;
            if (j == n) {
                v[n] = p[k];
                c[n++] = 0;
            }
            c[j] += p[4 + k];
        }
    }
    for (unsigned i = 1; i < n; i++) /* insertion sort: count descending, then value ascending */
        for (unsigned j = i; j > 0 && (c[j] > c[j - 1] || (c[j] == c[j - 1] && v[j] < v[j - 1])); j--) {
            uint64_t tv = v[j], tc = c[j];
            v[j] = v[j - 1], c[j] = c[j - 1];
            v[j - 1] = tv, c[j - 1] = tc;
        }
    for (unsigned k = 0; k < 4; k++) {
        io[k] = k < n ? v[k] : 0;
        io[4 + k] = k < n ? c[k] : 0;
    }
}

void iol_red_merge_words(const uint64_t *in, uint64_t *io, unsigned first, unsigned n)
{
    const struct iol_red_layout *l = iol_red_layout();
    for (unsigned i = first; i < first + n; i++) {
        uint64_t a = io[i], b = in[i];
        switch (l->kind[i]) {
        case RK_SUM:
            io[i] = a + b;
            break;
        case RK_MAX:
            io[i] = a > b ? a : b;
            break;
        case RK_MIN: /* smallest non-zero: 0 is "never" */
            io[i] = a == 0 || (b != 0 && b < a) ? b : a;
            break;
        case RK_OR:
            io[i] = a | b;
            break;
        case RK_TOPV: /* a set: four values then their four counts (counters.h's IOL_TOP4 shape) */
            if (i + 8 <= first + n && l->kind[i + 4] == RK_TOPC) {
                merge_top(in + i, io + i);
                i += 7;
            }
            break;
        default: /* a count of a set merged with its values */
            break;
        }
    }
}

/* Fastest/slowest: by time, ties to the lower rank; then the variance update of (n, mean, M2). */
static void merge_spread(const uint64_t *in, uint64_t *io)
{
    if (in[SP_N] == 0)
        return;
    if (io[SP_N] == 0) {
        memcpy(io, in, SP_WORDS * sizeof *io);
        return;
    }
    if (in[SP_FTIME] < io[SP_FTIME] || (in[SP_FTIME] == io[SP_FTIME] && in[SP_FRANK] < io[SP_FRANK]))
        memcpy(io + SP_FRANK, in + SP_FRANK, 3 * sizeof *io);
    if (in[SP_STIME] > io[SP_STIME] || (in[SP_STIME] == io[SP_STIME] && in[SP_SRANK] < io[SP_SRANK]))
        memcpy(io + SP_SRANK, in + SP_SRANK, 3 * sizeof *io);
    double na = (double)io[SP_N], nb = (double)in[SP_N], n = na + nb;
    for (unsigned k = SP_TMEAN; k <= SP_BMEAN; k += 2) {
        double ma = as_f64(io[k]), mb = as_f64(in[k]), d = mb - ma;
        io[k] = of_f64(ma + d * nb / n);
        io[k + 1] = of_f64(as_f64(io[k + 1]) + as_f64(in[k + 1]) + d * d * na * nb / n);
    }
    io[SP_N] += in[SP_N];
}

/* The two best (time, rank) pairs of a and b, earliest (latest when late) first; time 0 is none. */
static void best_two(const uint64_t *a, uint64_t *io, int late)
{
    uint64_t t[4] = { io[0], io[2], a[0], a[2] }, r[4] = { io[1], io[3], a[1], a[3] };
    for (unsigned k = 0; k < 2; k++) {
        unsigned best = 4;
        for (unsigned i = 0; i < 4; i++)
            if (t[i] != 0 && (best == 4 || (late ? t[i] > t[best] : t[i] < t[best]) ||
                              (t[i] == t[best] && r[i] < r[best])))
                best = i;
        io[2 * k] = best < 4 ? t[best] : 0;
        io[2 * k + 1] = best < 4 ? r[best] : 0;
        if (best < 4)
            t[best] = 0;
    }
}

static void merge_roles(const uint64_t *in, uint64_t *io)
{
    io[RO_W] += in[RO_W];
    io[RO_R] += in[RO_R];
    io[RO_B] += in[RO_B];
    best_two(in + RO_W1, io + RO_W1, 0);
    best_two(in + RO_R1, io + RO_R1, 1);
}

void iol_red_merge(const uint64_t *in, uint64_t *inout, size_t rows)
{
    const struct iol_red_layout *l = iol_red_layout();
    for (size_t r = 0; r < rows; r++) {
        const uint64_t *a = in + r * l->words;
        uint64_t *b = inout + r * l->words;
        iol_red_merge_words(a, b, 0, l->spread);
        for (unsigned k = 0; k < IOL_RL_LAYERS; k++)
            merge_spread(a + l->spread + k * SP_WORDS, b + l->spread + k * SP_WORDS);
        merge_roles(a + l->roles, b + l->roles);
    }
}

/* The first read or write (`start`: the two layers' start timestamps) of a row: the smaller non-zero. */
static uint64_t first_of(const uint64_t *row, unsigned posix, unsigned stdio)
{
    uint64_t a = row[posix], b = row[stdio];
    return a == 0 || (b != 0 && b < a) ? b : a;
}

void iol_red_spread_init(uint64_t *row, int64_t rank)
{
    const struct iol_red_layout *l = iol_red_layout();
    uint64_t present = row[l->present];
    const unsigned m = l->module[IOL_MOD_MPIIO];
    /* Darshan's per-rank time of a file: the layer's read + write + metadata time; bytes: read + written. */
    uint64_t t[IOL_RL_LAYERS] = {
        row[l->data + IOL_D_POSIX_F_READ_TIME] + row[l->data + IOL_D_POSIX_F_WRITE_TIME] +
            row[l->file + IOL_F_POSIX_F_META_TIME],
        row[m + IOL_M_MPIIO_F_READ_TIME] + row[m + IOL_M_MPIIO_F_WRITE_TIME] + row[m + IOL_M_MPIIO_F_META_TIME],
    };
    uint64_t b[IOL_RL_LAYERS] = {
        row[l->data + IOL_D_POSIX_BYTES_READ] + row[l->data + IOL_D_POSIX_BYTES_WRITTEN],
        row[m + IOL_M_MPIIO_BYTES_READ] + row[m + IOL_M_MPIIO_BYTES_WRITTEN],
    };
    int has[IOL_RL_LAYERS] = { (present & 3u) != 0, (present & (4u << IOL_MOD_MPIIO)) != 0 };
    uint64_t *ro = row + l->roles;
    memset(ro, 0, RO_WORDS * sizeof *ro);
    int wrote = row[l->data + IOL_D_POSIX_WRITES] + row[l->data + IOL_D_STDIO_WRITES] > 0;
    int read = row[l->data + IOL_D_POSIX_READS] + row[l->data + IOL_D_STDIO_READS] > 0;
    ro[RO_W] = (uint64_t)wrote, ro[RO_R] = (uint64_t)read, ro[RO_B] = (uint64_t)(wrote && read);
    if (wrote) {
        ro[RO_W1] = first_of(row, l->data + IOL_D_POSIX_F_WRITE_START_TIMESTAMP,
                             l->data + IOL_D_STDIO_F_WRITE_START_TIMESTAMP);
        ro[RO_W1] = ro[RO_W1] ? ro[RO_W1] : 1; /* a write without a time: the start (as the reader's rule) */
        ro[RO_W1R] = (uint64_t)rank + 1;
    }
    if (read) {
        ro[RO_R1] = first_of(row, l->data + IOL_D_POSIX_F_READ_START_TIMESTAMP,
                             l->data + IOL_D_STDIO_F_READ_START_TIMESTAMP);
        ro[RO_R1] = ro[RO_R1] ? ro[RO_R1] : 1;
        ro[RO_R1R] = (uint64_t)rank + 1;
    }
    for (unsigned k = 0; k < IOL_RL_LAYERS; k++) {
        uint64_t *s = row + l->spread + k * SP_WORDS;
        memset(s, 0, SP_WORDS * sizeof *s);
        if (!has[k])
            continue;
        s[SP_FRANK] = s[SP_SRANK] = (uint64_t)rank;
        s[SP_FBYTES] = s[SP_SBYTES] = b[k];
        s[SP_FTIME] = s[SP_STIME] = t[k];
        s[SP_N] = 1;
        s[SP_TMEAN] = of_f64((double)t[k] / 1e9);
        s[SP_BMEAN] = of_f64((double)b[k]);
        s[SP_TM2] = s[SP_BM2] = of_f64(0.0);
    }
}

void iol_red_spread_values(const uint64_t *row, uint64_t nranks, uint64_t *out)
{
    const struct iol_red_layout *l = iol_red_layout();
    memset(out, 0, IOL_NSPREAD * sizeof *out);
    out[IOL_S_REDUCED_RANKS] = nranks;
    for (unsigned k = 0; k < IOL_RL_LAYERS; k++) {
        const uint64_t *s = row + l->spread + k * SP_WORDS;
        uint64_t *o = out + IOL_S_POSIX_FASTEST_RANK + k * (IOL_S_MPIIO_FASTEST_RANK - IOL_S_POSIX_FASTEST_RANK);
        if (s[SP_N] == 0)
            continue;
        o[IOL_S_POSIX_FASTEST_RANK - IOL_S_POSIX_FASTEST_RANK] = s[SP_FRANK];
        o[IOL_S_POSIX_FASTEST_RANK_BYTES - IOL_S_POSIX_FASTEST_RANK] = s[SP_FBYTES];
        o[IOL_S_POSIX_SLOWEST_RANK - IOL_S_POSIX_FASTEST_RANK] = s[SP_SRANK];
        o[IOL_S_POSIX_SLOWEST_RANK_BYTES - IOL_S_POSIX_FASTEST_RANK] = s[SP_SBYTES];
        o[IOL_S_POSIX_F_FASTEST_RANK_TIME - IOL_S_POSIX_FASTEST_RANK] = s[SP_FTIME];
        o[IOL_S_POSIX_F_SLOWEST_RANK_TIME - IOL_S_POSIX_FASTEST_RANK] = s[SP_STIME];
        double n = (double)s[SP_N];
        o[IOL_S_POSIX_F_VARIANCE_RANK_TIME - IOL_S_POSIX_FASTEST_RANK] = of_f64(as_f64(s[SP_TM2]) / n);
        o[IOL_S_POSIX_F_VARIANCE_RANK_BYTES - IOL_S_POSIX_FASTEST_RANK] = of_f64(as_f64(s[SP_BM2]) / n);
        o[IOL_S_POSIX_RANKS - IOL_S_POSIX_FASTEST_RANK] = s[SP_N];
    }
    const uint64_t *ro = row + l->roles;
    out[IOL_S_WRITER_RANKS] = ro[RO_W];
    out[IOL_S_READER_RANKS] = ro[RO_R];
    out[IOL_S_READ_WRITE_RANKS] = ro[RO_B];
    /* Some rank's first read after another rank's first write: the latest first read of a rank other than
     * the first writer against the first write, or the first writer's own against the second write. */
    int after = 0;
    for (unsigned k = 0; k < 2 && ro[RO_W1] != 0; k++) {
        uint64_t t = ro[RO_R1 + 2 * k], r = ro[RO_R1R + 2 * k];
        if (t == 0)
            continue;
        if (r != ro[RO_W1R])
            after |= t > ro[RO_W1];
        else
            after |= ro[RO_W2] != 0 && t > ro[RO_W2];
    }
    out[IOL_S_READ_AFTER_OTHER_WRITE] = (uint64_t)after;
}

void iol_red_shift_stamps(uint64_t *row, int64_t delta)
{
    const struct iol_red_layout *l = iol_red_layout();
    for (unsigned i = 0; i < l->spread; i++) { /* (before spread_init fills the scratch) */
        if (!l->stamp[i] || row[i] == 0)
            continue;
        int64_t v = (int64_t)row[i] + delta;
        row[i] = v < 1 ? 1 : (uint64_t)v; /* before rank 0 started: its start */
    }
}
