/* hist.c — log-linear latency histogram (see hist.h).
 *
 * Layout (iol_hist_index, inline in hist.h): bucket s * 2^SUB_BITS + (v >> s) with s = max(0, msb(v) -
 * SUB_BITS). Each octave [2^e, 2^(e+1)) above the exact range is cut into 2^SUB_BITS buckets of width 2^s,
 * so the relative width is at most 2^s / 2^e = 2^-SUB_BITS. One formula for both ranges keeps the hot path
 * branch-light. */
#include "hist.h"

#include <math.h>
#include <string.h>

#define SUB_COUNT (1u << IOL_HIST_SUB_BITS)
#define LAST_BUCKET (IOL_HIST_NBUCKETS - 1)

void iol_hist_init(struct iol_hist *h)
{
    memset(h, 0, sizeof *h);
    h->min = UINT64_MAX;
}

uint64_t iol_hist_bucket_low(unsigned idx)
{
    if (idx >= IOL_HIST_NBUCKETS)
        idx = LAST_BUCKET;
    if (idx < 2 * SUB_COUNT)
        return idx;
    unsigned s = idx / SUB_COUNT - 1;
    uint64_t top = idx % SUB_COUNT + SUB_COUNT;   /* the SUB_BITS+1 top bits, leading one included */
    return top << s;
}

uint64_t iol_hist_bucket_high(unsigned idx)
{
    if (idx >= LAST_BUCKET)
        return UINT64_MAX;    /* the last bucket also holds every out-of-range value */
    return iol_hist_bucket_low(idx + 1) - 1;
}

void iol_hist_merge(struct iol_hist *dst, const struct iol_hist *src)
{
    for (unsigned i = 0; i < IOL_HIST_NBUCKETS; i++)
        dst->buckets[i] += src->buckets[i];
    dst->count += src->count;
    dst->sum += src->sum;
    if (src->min < dst->min)
        dst->min = src->min;
    if (src->max > dst->max)
        dst->max = src->max;
}

/* Nearest-rank percentile: the value of rank ceil(p/100 * count) (1-based) in sorted order. */
uint64_t iol_hist_percentile(const struct iol_hist *h, double p)
{
    if (h->count == 0)
        return 0;
    if (!(p > 0))            /* also catches NaN */
        return h->min;
    if (p >= 100)
        return h->max;
    double want = p * (double)h->count / 100.0;
    /* p = 99.9 is really 99.90000000000000568: without snapping, a product that should be a whole rank can
     * land one ulp above it and ceil would move to the next rank. */
    double whole = nearbyint(want);
    if (fabs(want - whole) <= 1e-9 * want)
        want = whole;
    uint64_t rank = (uint64_t)want;
    if ((double)rank < want)
        rank++;
    if (rank < 1)
        rank = 1;
    if (rank > h->count)
        rank = h->count;

    uint64_t seen = 0;
    unsigned i = 0;
    for (; i < IOL_HIST_NBUCKETS; i++) {
        seen += h->buckets[i];
        if (seen >= rank)
            break;
    }
    if (i == IOL_HIST_NBUCKETS)   /* buckets inconsistent with count (a bad merge); max is the safe answer */
        return h->max;
    uint64_t v = iol_hist_bucket_high(i);
    if (v > h->max)
        v = h->max;
    if (v < h->min)
        v = h->min;
    return v;
}

double iol_hist_mean(const struct iol_hist *h)
{
    return h->count ? (double)h->sum / (double)h->count : 0.0;
}

double iol_hist_stddev(const struct iol_hist *h)
{
    if (h->count < 2) return 0.0;
    double mean = (double)h->sum / (double)h->count, acc = 0.0;
    for (unsigned b = 0; b < IOL_HIST_NBUCKETS; b++) {
        if (!h->buckets[b]) continue;
        double lo = (double)iol_hist_bucket_low(b), hi = (double)iol_hist_bucket_high(b);
        if (b == IOL_HIST_NBUCKETS - 1) hi = (double)h->max;
        double mid = (lo + hi) / 2.0;
        if (mid < (double)h->min) mid = (double)h->min;
        if (mid > (double)h->max) mid = (double)h->max;
        acc += (double)h->buckets[b] * (mid - mean) * (mid - mean);
    }
    return sqrt(acc / (double)(h->count - 1));
}
