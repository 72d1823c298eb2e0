/* hist.h — log-linear latency histogram (HDR-style).
 *
 * Values 0..2^(SUB_BITS+1)-1 each have their own bucket; above that every power of two is split into
 * 2^SUB_BITS equal buckets, so a bucket's width is at most 1/128 of its lower bound: any percentile is
 * reported within 0.8% of the true value. Values up to 2^IOL_HIST_MAX_EXP ns (~3.3 days) are kept; larger
 * ones land in the last bucket (and still count in max). Merging adds bucket counts, so it is exact and
 * can be done in any order, across threads and ranks (allreduce SUM on buckets, MIN/MAX on min/max). */
#ifndef IOL_HIST_H
#define IOL_HIST_H
#include <stdint.h>
#include <stddef.h>

#define IOL_HIST_SUB_BITS 7
#define IOL_HIST_MAX_EXP 48
/* 2^(SUB_BITS+1) exact buckets, then 2^SUB_BITS per octave for exponents SUB_BITS+1 .. MAX_EXP-1 */
#define IOL_HIST_NBUCKETS ((1u << (IOL_HIST_SUB_BITS + 1)) + \
                           (IOL_HIST_MAX_EXP - IOL_HIST_SUB_BITS - 1) * (1u << IOL_HIST_SUB_BITS))

struct iol_hist {
    uint64_t count;
    uint64_t sum;      /* of recorded values; u64 ns overflows only after 584 years of summed latency */
    uint64_t min;      /* UINT64_MAX when empty */
    uint64_t max;      /* 0 when empty */
    uint64_t buckets[IOL_HIST_NBUCKETS];
};

void iol_hist_init(struct iol_hist *h);

/* Bucket of a value. Inline because it runs once per recorded I/O: a clz, a shift and an add. With
 * s = max(0, msb(v) - SUB_BITS), v goes to bucket s * 2^SUB_BITS + (v >> s): below 2^(SUB_BITS+1) s is 0
 * and the bucket is v itself; above, v >> s keeps the SUB_BITS+1 top bits (leading one included). */
static inline unsigned iol_hist_index(uint64_t v)
{
    if (v >> IOL_HIST_MAX_EXP)
        return IOL_HIST_NBUCKETS - 1;   /* out of range: kept in the last bucket (and exactly in max) */
    int s = 63 - __builtin_clzll(v | 1) - IOL_HIST_SUB_BITS;
    if (s < 0)
        s = 0;
    return ((unsigned)s << IOL_HIST_SUB_BITS) + (unsigned)(v >> s);
}

uint64_t iol_hist_bucket_low(unsigned idx);   /* smallest value in the bucket */
uint64_t iol_hist_bucket_high(unsigned idx);  /* largest value in the bucket (UINT64_MAX for the last one) */

static inline void iol_hist_record(struct iol_hist *h, uint64_t v)
{
    h->buckets[iol_hist_index(v)]++;
    h->count++;
    h->sum += v;
    if (v < h->min) h->min = v;
    if (v > h->max) h->max = v;
}

void iol_hist_merge(struct iol_hist *dst, const struct iol_hist *src);
/* p in [0,100]. Returns the upper bound of the bucket holding the p-th percentile value, clamped to
 * [min, max] (so p=100 is exactly max and p=0 exactly min). 0 for an empty histogram. */
uint64_t iol_hist_percentile(const struct iol_hist *h, double p);
double iol_hist_mean(const struct iol_hist *h);
/* Sample standard deviation of the recorded values, from the buckets (each value taken at its bucket's
 * middle, clamped to [min, max]): within the buckets' 0.8%. */
double iol_hist_stddev(const struct iol_hist *h);

#endif
