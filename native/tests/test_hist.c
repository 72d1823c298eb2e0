/* test_hist.c — the latency histogram: bucket geometry, percentile accuracy against exact sorted
 * percentiles, exact merging, and the empty case. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "common/hist.h"

static uint64_t rng_state = 0x2545f4914f6cdd1dULL;

static uint64_t rnd(void)   /* xorshift64*: reproducible, no libc state */
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 0x2545f4914f6cdd1dULL;
}

static double rnd01(void)
{
    return (double)(rnd() >> 11) / 9007199254740992.0;   /* [0, 1) */
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static void test_buckets_tile_the_range_with_small_relative_width(void)
{
    int bad = 0;
    for (unsigned i = 0; i < IOL_HIST_NBUCKETS && bad < 5; i++) {
        uint64_t lo = iol_hist_bucket_low(i), hi = iol_hist_bucket_high(i);
        int ok = lo <= hi && iol_hist_index(lo) == i && iol_hist_index(hi) == i;
        if (i > 0)
            ok = ok && lo == iol_hist_bucket_high(i - 1) + 1;
        if (i < IOL_HIST_NBUCKETS - 1)
            ok = ok && (double)(hi - lo) <= (double)lo / 128.0;
        if (!ok)
            bad++;
        CHECK(ok, "bucket %u: low %llu high %llu index(low) %u index(high) %u", i, (unsigned long long)lo,
              (unsigned long long)hi, iol_hist_index(lo), iol_hist_index(hi));
    }
    CHECK(iol_hist_bucket_low(0) == 0, "first bucket starts at 0");
    for (uint64_t v = 0; v < 256; v++)
        CHECK(iol_hist_index(v) == v && iol_hist_bucket_low((unsigned)v) == v, "small value %llu is exact",
              (unsigned long long)v);
    /* the range: 2^40 ns (18 minutes) and up to 2^48 - 1 still in proper, narrow buckets */
    uint64_t big = (1ULL << 40) + 12345;
    unsigned bi = iol_hist_index(big);
    CHECK(bi < IOL_HIST_NBUCKETS - 1, "2^40 is below the overflow bucket");
    CHECK(iol_hist_bucket_low(bi) <= big && big <= iol_hist_bucket_high(bi), "2^40 lands in its bucket");
    CHECK(iol_hist_index((1ULL << 48) - 1) == IOL_HIST_NBUCKETS - 1, "2^48-1 is the last bucket");
    CHECK(iol_hist_bucket_low(IOL_HIST_NBUCKETS - 1) >= (1ULL << 47), "last bucket starts high");
    CHECK(iol_hist_index(1ULL << 48) == IOL_HIST_NBUCKETS - 1, "2^48 is kept in the last bucket");
    CHECK(iol_hist_index(UINT64_MAX) == IOL_HIST_NBUCKETS - 1, "UINT64_MAX is kept in the last bucket");
    /* every value in random octaves maps into a bucket that contains it */
    for (int k = 0; k < 200000; k++) {
        uint64_t v = rnd() >> (rnd() % 64);
        unsigned i = iol_hist_index(v);
        if (!(i < IOL_HIST_NBUCKETS && iol_hist_bucket_low(i) <= v && v <= iol_hist_bucket_high(i))) {
            CHECK(0, "value %llu maps to bucket %u [%llu, %llu]", (unsigned long long)v, i,
                  (unsigned long long)iol_hist_bucket_low(i), (unsigned long long)iol_hist_bucket_high(i));
            break;
        }
    }
}

/* Percentiles given in hundredths of a percent, so the exact rank is computed in integers,
 * independently of the histogram's floating-point formula. */
static const unsigned pcts[] = { 0, 1, 100, 1000, 2500, 5000, 7500, 9000, 9500, 9900, 9990, 9999, 10000 };

static void check_percentiles(const char *name, uint64_t *v, size_t n)
{
    struct iol_hist *h = malloc(sizeof *h);
    iol_hist_init(h);
    uint64_t sum = 0;
    for (size_t i = 0; i < n; i++) {
        iol_hist_record(h, v[i]);
        sum += v[i];
    }
    qsort(v, n, sizeof *v, cmp_u64);
    CHECK(h->count == n, "%s: count", name);
    CHECK(h->min == v[0] && h->max == v[n - 1], "%s: min/max exact", name);
    CHECK(iol_hist_percentile(h, 0) == v[0], "%s: p0 is min", name);
    CHECK(iol_hist_percentile(h, 100) == v[n - 1], "%s: p100 is max", name);
    CHECK(fabs(iol_hist_mean(h) - (double)sum / (double)n) <= 1e-9 * ((double)sum / (double)n), "%s: mean",
          name);
    int fails = 0;
    for (size_t k = 0; k < sizeof pcts / sizeof pcts[0] + 20 && fails < 3; k++) {
        unsigned p100 = k < sizeof pcts / sizeof pcts[0] ? pcts[k] : (unsigned)(rnd() % 10001);
        uint64_t rank = ((uint64_t)p100 * n + 9999) / 10000;
        if (rank < 1)
            rank = 1;
        uint64_t exact = v[rank - 1];
        uint64_t got = iol_hist_percentile(h, p100 / 100.0);
        double rel = exact ? fabs((double)got - (double)exact) / (double)exact : (double)(got != 0);
        if (rel > 0.01)
            fails++;
        CHECK(rel <= 0.01, "%s (n=%zu): p%.2f = %llu, exact %llu (rel error %.4f)", name, n, p100 / 100.0,
              (unsigned long long)got, (unsigned long long)exact, rel);
    }
    free(h);
}

static void test_percentiles_within_one_percent(void)
{
    enum { N = 200000 };
    uint64_t *v = malloc(N * sizeof *v);
    /* 41000 and 82000: 99.9 * n / 100 computed in doubles lands just above the whole rank */
    size_t sizes[] = { 1, 2, 3, 7, 100, 999, 1000, 1001, 12345, 41000, 82000, N };
    for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
        size_t n = sizes[si];
        for (size_t i = 0; i < n; i++) v[i] = rnd() % 1000;
        check_percentiles("uniform 0..999", v, n);
        for (size_t i = 0; i < n; i++) v[i] = 1000 + rnd() % 100000000;
        check_percentiles("uniform 1us..100ms", v, n);
        for (size_t i = 0; i < n; i++) v[i] = (uint64_t)exp(log(1e4) + 2.0 * sqrt(-2 * log(1 - rnd01())) *
                                                        cos(6.283185307179586 * rnd01()));
        check_percentiles("lognormal", v, n);
        for (size_t i = 0; i < n; i++) v[i] = (uint64_t)(-50000.0 * log(1 - rnd01()));
        check_percentiles("exponential", v, n);
        for (size_t i = 0; i < n; i++) v[i] = (uint64_t)(1000.0 / pow(1 - rnd01(), 1.0 / 1.1));
        check_percentiles("pareto heavy tail", v, n);
        for (size_t i = 0; i < n; i++) v[i] = rnd() % 2 ? 900 + rnd() % 200 : 10000000000ULL + rnd() % 1000;
        check_percentiles("bimodal 1us / 10s", v, n);
        for (size_t i = 0; i < n; i++) v[i] = rnd() >> (64 - 47);   /* up to 2^47: range beyond 2^40 */
        check_percentiles("uniform up to 2^47", v, n);
        for (size_t i = 0; i < n; i++) v[i] = 1ULL << (rnd() % 47);
        check_percentiles("powers of two", v, n);
        for (size_t i = 0; i < n; i++) v[i] = (1ULL << (1 + rnd() % 46)) - 1;
        check_percentiles("powers of two minus one", v, n);
        for (size_t i = 0; i < n; i++) {   /* both edges of random buckets */
            unsigned b = (unsigned)(rnd() % (IOL_HIST_NBUCKETS - 1));
            v[i] = rnd() % 2 ? iol_hist_bucket_low(b) : iol_hist_bucket_high(b);
        }
        check_percentiles("bucket edges", v, n);
        for (size_t i = 0; i < n; i++) v[i] = 777777;
        check_percentiles("constant", v, n);
        for (size_t i = 0; i < n; i++) v[i] = i % 2 ? 1 : (1ULL << 46);
        check_percentiles("alternating tiny/huge", v, n);
        for (size_t i = 0; i < n; i++) v[i] = i < n - 1 ? 5000 : (1ULL << 45);   /* one outlier */
        check_percentiles("single outlier", v, n);
        for (size_t i = 0; i < n; i++) v[i] = 0;
        check_percentiles("zeros", v, n);
        for (size_t i = 0; i < n; i++)   /* a step exactly at p99.9: off-by-one ranks show as 1000x errors */
            v[i] = i < n * 999 / 1000 ? 1000 : 1000000000;
        check_percentiles("step at p99.9", v, n);
    }
    free(v);
}

static void test_merge_in_any_order_equals_recording_everything(void)
{
    enum { SHARDS = 8, N = 100000 };
    struct iol_hist *all = malloc(sizeof *all), *shard = malloc(SHARDS * sizeof *shard);
    struct iol_hist *merged = malloc(sizeof *merged);
    iol_hist_init(all);
    for (int s = 0; s < SHARDS; s++)
        iol_hist_init(&shard[s]);
    for (int i = 0; i < N; i++) {
        uint64_t v = rnd() >> (16 + rnd() % 48);
        if (i % 1000 == 0)
            v = UINT64_MAX - i;   /* out of range values too */
        iol_hist_record(all, v);
        /* shard 7 stays empty: merging an empty histogram must change nothing */
        iol_hist_record(&shard[rnd() % (SHARDS - 1)], v);
    }
    for (int trial = 0; trial < 10; trial++) {
        int order[SHARDS];
        for (int s = 0; s < SHARDS; s++) order[s] = s;
        for (int s = SHARDS - 1; s > 0; s--) {
            int r = (int)(rnd() % (uint64_t)(s + 1)), t = order[s];
            order[s] = order[r];
            order[r] = t;
        }
        iol_hist_init(merged);
        for (int s = 0; s < SHARDS; s++)
            iol_hist_merge(merged, &shard[order[s]]);
        CHECK(memcmp(merged->buckets, all->buckets, sizeof all->buckets) == 0, "trial %d: buckets equal", trial);
        CHECK(merged->count == all->count && merged->sum == all->sum, "trial %d: count and sum", trial);
        CHECK(merged->min == all->min && merged->max == all->max, "trial %d: min and max", trial);
        CHECK(iol_hist_percentile(merged, 99.9) == iol_hist_percentile(all, 99.9), "trial %d: p99.9", trial);
    }
    /* a tree of pairwise merges (as an allreduce does) gives the same */
    for (int step = 1; step < SHARDS; step *= 2)
        for (int s = 0; s + step < SHARDS; s += 2 * step)
            iol_hist_merge(&shard[s], &shard[s + step]);
    CHECK(memcmp(shard[0].buckets, all->buckets, sizeof all->buckets) == 0 && shard[0].count == all->count &&
              shard[0].min == all->min && shard[0].max == all->max, "tree merge equals the whole");
    free(all);
    free(shard);
    free(merged);
}

static void test_empty_histogram(void)
{
    struct iol_hist *h = malloc(sizeof *h), *e = malloc(sizeof *e);
    iol_hist_init(h);
    iol_hist_init(e);
    CHECK(h->count == 0 && h->min == UINT64_MAX && h->max == 0, "empty state");
    CHECK(iol_hist_percentile(h, 50) == 0 && iol_hist_percentile(h, 0) == 0 && iol_hist_percentile(h, 100) == 0,
          "percentiles of an empty histogram are 0");
    CHECK(iol_hist_mean(h) == 0.0, "mean of an empty histogram is 0");
    iol_hist_merge(h, e);
    CHECK(h->count == 0 && h->min == UINT64_MAX && h->max == 0, "empty + empty is empty");
    iol_hist_record(e, 42);
    iol_hist_merge(h, e);
    CHECK(h->count == 1 && h->min == 42 && h->max == 42 && iol_hist_percentile(h, 50) == 42,
          "empty + one value is that value");
    free(h);
    free(e);
}

int main(void)
{
    test_buckets_tile_the_range_with_small_relative_width();
    test_percentiles_within_one_percent();
    test_merge_in_any_order_equals_recording_everything();
    test_empty_histogram();
    return TEST_DONE();
}
