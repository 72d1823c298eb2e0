/* distrib.h — block-index generators with the meanings of fio's random_distribution (random, zipf, pareto,
 * normal), and the fast seedable random number generator under them.
 *
 * A distribution picks a block index in [0, n). The skewed ones first draw a rank ("raw" value: 0 is the
 * hottest block for zipf and pareto, n/2 the centre of the bell for normal), then scatter ranks over the
 * range with a keyed bijection, as fio does with a hash: the hot blocks are spread over the file, not packed
 * at its start, and no two ranks share a block, so the skew is exactly the one drawn. See distrib.c for what
 * fio does and where that was found. A generator holds its own state: one per thread/rank, no locking. */
#ifndef IOL_DISTRIB_H
#define IOL_DISTRIB_H
#include <stdint.h>

#include "error.h"

/* xoshiro256** (Blackman and Vigna): 256 bits of state, period 2^256 - 1, about a nanosecond a number. */
struct iol_rng {
    uint64_t s[4];
};

/* Any seed, 0 included, gives a valid and distinct stream (the state is filled with splitmix64 outputs). */
void iol_rng_seed(struct iol_rng *r, uint64_t seed);

static inline uint64_t iol_rng_next(struct iol_rng *r)
{
    uint64_t *s = r->s;
    uint64_t x = s[1] * 5;
    uint64_t out = ((x << 7) | (x >> 57)) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = (s[3] << 45) | (s[3] >> 19);
    return out;
}

/* Uniform in [0, 1), in steps of 2^-53 (the top 53 bits: a double holds them exactly). */
static inline double iol_rng_unit(struct iol_rng *r)
{
    return (double)(iol_rng_next(r) >> 11) * 0x1.0p-53;
}

/* Uniform in [0, n) without modulo bias (Lemire's multiply-shift with rejection: the division runs only in
 * the rare case the low product is small). n = 0 gives 0. */
static inline uint64_t iol_rng_below(struct iol_rng *r, uint64_t n)
{
    unsigned __int128 m = (unsigned __int128)iol_rng_next(r) * n;
    uint64_t low = (uint64_t)m;
    if (low < n) {
        uint64_t threshold = (0 - n) % n;   /* 2^64 mod n: the products below it would be over-represented */
        while (low < threshold) {
            m = (unsigned __int128)iol_rng_next(r) * n;
            low = (uint64_t)m;
        }
    }
    return (uint64_t)(m >> 64);
}

enum iol_dist_kind {
    IOL_DIST_RANDOM,   /* uniform */
    IOL_DIST_ZIPF,     /* param theta > 0: block of rank k (1-based) drawn with probability k^-theta / H(n, theta) */
    IOL_DIST_PARETO,   /* param h in (0, 1): a fraction 1 - h of the draws hit a fraction h of the blocks */
    IOL_DIST_NORMAL,   /* param dev in [0, 100): fio's normal:DEV, a bell centred on the range (see distrib.c) */
};

struct iol_dist {
    enum iol_dist_kind kind;
    double param;
    uint64_t n;
    struct iol_rng rng;
    uint64_t key;          /* of the scattering bijection */
    unsigned bits;         /* bits of the scattering bijection's domain, the power of two >= n */
    union {
        struct {
            double q, inv_q;   /* 1 - theta and its inverse */
            double theta;
            double lo, span;   /* the interval the uniform variate is drawn from: [lo, lo + span) */
            double quick;      /* a rank within this of the continuous draw is accepted at once */
        } zipf;
        struct {
            double power;  /* the rank is n * u^power */
        } pareto;
        struct {
            double width;  /* of the uniform offset added to the bell, in blocks */
        } normal;
    };
};

/* Parses fio's random_distribution value: "random", "zipf[:THETA]" (default 1.1), "pareto[:H]" (default 0.2),
 * "normal[:DEV]" (default 0; "gauss" is accepted as a synonym). Errors start with "random_distribution: " and
 * have code IOL_ERR_USAGE; fio's "zoned"/"zoned_abs" and its optional centre (a second number) are refused by
 * name. *param is 0 for random. */
int iol_dist_parse(const char *spec, enum iol_dist_kind *kind, double *param, struct iol_err *err);

/* Prepares a generator of indexes in [0, n), n >= 1. The seed selects both the sequence and where the hot
 * blocks lie. O(1): no table, no allocation. Checks param as iol_dist_parse does. */
int iol_dist_init(struct iol_dist *d, enum iol_dist_kind kind, double param, uint64_t n, uint64_t seed,
                  struct iol_err *err);

/* The next block index, in [0, n). */
uint64_t iol_dist_next(struct iol_dist *d);

/* The next rank before scattering (same random draws as iol_dist_next): for tests and for reports of how
 * skewed a run was. For random it is the index itself. */
uint64_t iol_dist_next_raw(struct iol_dist *d);

/* The block a rank is scattered to: a bijection of [0, n) fixed by the seed (the identity for random). */
uint64_t iol_dist_scatter(const struct iol_dist *d, uint64_t rank);

/* Releases nothing today (no kind allocates); call it anyway so that a kind which does (fio's zoned) can be
 * added without touching callers. */
void iol_dist_free(struct iol_dist *d);

#endif
