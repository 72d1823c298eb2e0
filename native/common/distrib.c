/* distrib.c — fio's random_distribution kinds (see distrib.h).
 *
 * What fio does (read in axboe/fio: HOWTO.rst "random_distribution", options.c str_random_distribution_cb,
 * fio.h FIO_DEF_ZIPF/FIO_DEF_PARETO, lib/zipf.c, lib/gauss.c, hash.h; our code is written from these facts,
 * none of it is fio's):
 *
 * - Names: random, zipf, pareto, normal, zoned, zoned_abs (the option's value list; "gauss" is not one of
 *   them, it is a file_service_type name, but people mix the two up, so we accept it). A value follows a
 *   colon; a second number is an optional centre in [0, 1].
 * - zipf:THETA, default 1.1. fio refuses only theta == 1.0, because its generator (Gray et al.'s "quickly
 *   generating billion-record synthetic databases" approximation) divides by 1 - theta; it also caps the
 *   harmonic sum at 10 million terms. We sample the exact Zipf law p(k) = k^-theta / H(n, theta) instead
 *   (rejection-inversion, below), which needs no sum and works for theta == 1 too; we ask theta > 0 (at 0 it
 *   is uniform, below it the law is not a skew towards a hot set).
 * - pareto:H, default 0.2, 0 < H < 1. fio draws rank = (n - 1) * u^p with p = log(H) / log(1 - H). Then
 *   P(rank < H n) = (H)^(1/p) = 1 - H: the "80/20 rule" for H = 0.2. (H and 1 - H give the same skew
 *   mirrored; 0.5 is uniform.) We draw floor(n * u^p), u in [0, 1).
 * - normal:DEV, default 0, 0 <= DEV < 100. The HOWTO calls DEV "a normal (Gaussian) deviation ... between 0
 *   and 100", but lib/gauss.c does not use it as a standard deviation: it averages 12 uniform draws over
 *   [0, n] (a near-normal bell centred on n/2 with standard deviation n/12, whatever DEV is), then adds a
 *   uniform offset of width w = ceil(n * DEV / 100), at most n/2, halving the offset while it would leave the
 *   range. So the spread is sqrt((n/12)^2 + w^2/12): 8.3% of n at DEV 0, 8.8% at 10, 16.7% at 50 and above.
 *   We reproduce that (so a job gives the hot-set profile fio gives), with a continuous mean of 12 uniforms.
 * - Scattering: fio returns (hash(rank) + off) % n with hash(v) = v * GOLDEN_RATIO_64 (hash.h __hash_u64) and
 *   off a random number from the per-file seed (or n * centre), for zipf, pareto and normal alike, so the hot
 *   ranks are spread over the file. The "% n" is not a bijection: ranks collide and some blocks are never
 *   drawn. We scatter with iol_permute, a keyed bijection of [0, n): same spreading, exact skew. */
#include "distrib.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "mix.h"
#include "permute.h"

void iol_rng_seed(struct iol_rng *r, uint64_t seed)
{
    /* splitmix64: consecutive states of a Weyl sequence through a bijective mixer, so the four words are
     * distinct and never all zero (the one state xoshiro cannot leave). */
    for (int i = 0; i < 4; i++) {
        seed += 0x9e3779b97f4a7c15ULL;
        r->s[i] = iol_mix64(seed);
    }
}

/* ---- parsing ---- */

struct dist_name {
    const char *name;
    enum iol_dist_kind kind;
    double defval;
};

static const struct dist_name dist_names[] = {
    { "random", IOL_DIST_RANDOM, 0.0 },
    { "zipf",   IOL_DIST_ZIPF,   1.1 },   /* fio.h FIO_DEF_ZIPF */
    { "pareto", IOL_DIST_PARETO, 0.2 },   /* fio.h FIO_DEF_PARETO */
    { "normal", IOL_DIST_NORMAL, 0.0 },
    { "gauss",  IOL_DIST_NORMAL, 0.0 },
};

static int check_param(enum iol_dist_kind kind, double v, const char *text, struct iol_err *err)
{
    switch (kind) {
    case IOL_DIST_RANDOM:
        return 0;
    case IOL_DIST_ZIPF:
        if (!(v > 0) || !isfinite(v))
            return iol_err_set(err, IOL_ERR_USAGE, "random_distribution: zipf theta must be a number > 0, not %s",
                               text);
        return 0;
    case IOL_DIST_PARETO:
        if (!(v > 0 && v < 1))
            return iol_err_set(err, IOL_ERR_USAGE,
                               "random_distribution: pareto h must be between 0 and 1 (exclusive), not %s", text);
        return 0;
    case IOL_DIST_NORMAL:
        if (!(v >= 0 && v < 100))
            return iol_err_set(err, IOL_ERR_USAGE,
                               "random_distribution: normal deviation must be a percentage in [0, 100), not %s",
                               text);
        return 0;
    }
    return iol_err_set(err, IOL_ERR_USAGE, "random_distribution: unknown kind %d", (int)kind);
}

int iol_dist_parse(const char *spec, enum iol_dist_kind *kind, double *param, struct iol_err *err)
{
    const char *colon = strchr(spec, ':');
    size_t len = colon ? (size_t)(colon - spec) : strlen(spec);
    const struct dist_name *found = NULL;
    for (size_t i = 0; i < sizeof dist_names / sizeof dist_names[0]; i++)
        if (strlen(dist_names[i].name) == len && strncasecmp(spec, dist_names[i].name, len) == 0)
            found = &dist_names[i];
    if (found == NULL) {
        if ((len == 5 && strncasecmp(spec, "zoned", 5) == 0) || (len == 9 && strncasecmp(spec, "zoned_abs", 9) == 0))
            return iol_err_set(err, IOL_ERR_USAGE,
                               "random_distribution: '%.*s' is not supported (use random, zipf, pareto or normal)",
                               (int)len, spec);
        return iol_err_set(err, IOL_ERR_USAGE,
                           "random_distribution: '%s' is not a distribution (use random, zipf:THETA, pareto:H "
                           "or normal:DEV)", spec);
    }
    double v = found->defval;
    if (colon != NULL) {
        const char *text = colon + 1;
        if (found->kind == IOL_DIST_RANDOM)
            return iol_err_set(err, IOL_ERR_USAGE, "random_distribution: 'random' takes no value, got '%s'", spec);
        if (strchr(text, ':') != NULL)
            return iol_err_set(err, IOL_ERR_USAGE,
                               "random_distribution: '%s': a centre (fio's second number) is not supported", spec);
        char *end;
        v = strtod(text, &end);
        if (end == text || isspace((unsigned char)*text) || *end != '\0')
            return iol_err_set(err, IOL_ERR_USAGE, "random_distribution: '%s': '%s' is not a number", spec, text);
        if (check_param(found->kind, v, text, err) != 0)
            return -1;
    }
    *kind = found->kind;
    *param = v;
    return 0;
}

/* ---- zipf: rejection-inversion (W. Hörmann and G. Derflinger, "Rejection-inversion to generate variates
 * from monotone discrete distributions", ACM TOMACS 6(3), 1996) ----
 *
 * The weights h(k) = k^-theta are covered by the continuous hat h(x) = x^-theta: since h is convex, the area
 * under it over [k - 1/2, k + 1/2] is at least h(k). With H a primitive of h, draw u uniform over
 * [H(3/2) - h(1), H(n + 1/2)), take x = H^-1(u) and k = x rounded; accept k when u lies in the last h(k) of
 * k's slice, i.e. u >= H(k + 1/2) - h(k). Accepted draws have probability proportional to h(k) exactly; rank 1
 * is always accepted (its slice was cut to h(1)), and the others almost always: about one call of H^-1, a log
 * and an exp, per draw. H(x) = (x^q - 1) / q with q = 1 - theta (log x when q = 0), written with expm1/log1p
 * so it stays accurate as q goes to 0. */

static double expm1_over(double t)   /* (e^t - 1) / t, 1 at t = 0 */
{
    return fabs(t) > 1e-8 ? expm1(t) / t : 1.0 + 0.5 * t;
}

static double log1p_over(double t)   /* log(1 + t) / t, 1 at t = 0 */
{
    return fabs(t) > 1e-8 ? log1p(t) / t : 1.0 - 0.5 * t;
}

static double zipf_hat_integral(double x, double q)   /* H(x) */
{
    double lx = log(x);
    return lx * expm1_over(q * lx);
}

/* H^-1(y). It runs on every draw: where y q is not small, log(1 + t) (twice as fast as glibc's log1p) loses
 * at most 2^-53 / 1e-3 ~ 1e-13 of relative precision, and 1/q is precomputed; near 0 the careful form. */
static double zipf_hat_integral_inv(double y, double q, double inv_q)
{
    double t = y * q;
    return fabs(t) > 1e-3 ? exp(log(1.0 + t) * inv_q) : exp(y * log1p_over(t));
}

static double zipf_weight(double x, double theta)   /* h(x) */
{
    return exp(-theta * log(x));
}

static void zipf_init(struct iol_dist *d)
{
    double theta = d->param, q = 1.0 - theta;
    d->zipf.theta = theta;
    d->zipf.q = q;
    d->zipf.inv_q = 1.0 / q;   /* infinite at theta = 1, where only the careful form of H^-1 is used */
    d->zipf.lo = zipf_hat_integral(1.5, q) - 1.0;
    d->zipf.span = zipf_hat_integral((double)d->n + 0.5, q) - d->zipf.lo;
    /* The rejected part of k's slice shrinks as k grows (h flattens), so it is widest for k = 2: a draw x at
     * most this far below its rank k can be accepted without computing H(k + 1/2). */
    double two_low = zipf_hat_integral_inv(zipf_hat_integral(2.5, q) - zipf_weight(2.0, theta), q, d->zipf.inv_q);
    d->zipf.quick = 2.0 - two_low;
}

static uint64_t zipf_rank(struct iol_dist *d)
{
    double q = d->zipf.q, nd = (double)d->n;
    for (;;) {
        double u = d->zipf.lo + iol_rng_unit(&d->rng) * d->zipf.span;
        double x = zipf_hat_integral_inv(u, q, d->zipf.inv_q);
        double k = floor(x + 0.5);
        if (k < 1.0)
            k = 1.0;
        else if (k > nd)
            k = nd;   /* rounding at the top end */
        if (k - x <= d->zipf.quick || u >= zipf_hat_integral(k + 0.5, q) - zipf_weight(k, d->zipf.theta))
            return (uint64_t)k - 1;
    }
}

/* ---- pareto ---- */

static uint64_t pareto_rank(struct iol_dist *d)
{
    uint64_t k = (uint64_t)((double)d->n * pow(iol_rng_unit(&d->rng), d->pareto.power));
    return k < d->n ? k : d->n - 1;   /* n * u^p < n in exact arithmetic; guard the rounding */
}

/* ---- normal, as fio's lib/gauss.c behaves (see the top of this file) ---- */

static uint64_t normal_rank(struct iol_dist *d)
{
    /* Mean of 12 uniforms: twelve 32-bit halves of six draws, plus a uniform dither in [0, 1) of one unit so
     * that every block is reachable even when n exceeds the 12 * 2^32 levels of the sum. */
    uint64_t sum = 0;
    for (int i = 0; i < 6; i++) {
        uint64_t v = iol_rng_next(&d->rng);
        sum += (v >> 32) + (v & 0xffffffffULL);
    }
    double nd = (double)d->n;
    double x = ((double)sum + iol_rng_unit(&d->rng)) * (nd / (12.0 * 4294967296.0));
    if (d->normal.width > 0) {
        double off = (iol_rng_unit(&d->rng) - 0.5) * d->normal.width;
        /* fio halves the offset until it stays in range (its integer offset then reaches 0) */
        for (int i = 0; i < 64 && (x + off < 0 || x + off >= nd); i++)
            off *= 0.5;
        if (x + off >= 0 && x + off < nd)
            x += off;
    }
    uint64_t k = (uint64_t)x;
    return k < d->n ? k : d->n - 1;
}

/* ---- the generator ---- */

int iol_dist_init(struct iol_dist *d, enum iol_dist_kind kind, double param, uint64_t n, uint64_t seed,
                  struct iol_err *err)
{
    memset(d, 0, sizeof *d);
    if (n == 0)
        return iol_err_set(err, IOL_ERR_USAGE, "random_distribution: the range has no blocks");
    char text[64];
    snprintf(text, sizeof text, "%g", param);
    if (check_param(kind, param, text, err) != 0)
        return -1;
    d->kind = kind;
    d->param = param;
    d->n = n;
    iol_rng_seed(&d->rng, seed);
    /* The layout key is derived from the seed but must not be the RNG's first output: mixed with a constant. */
    d->key = iol_mix64(seed ^ 0x5ca77e2b10c4a7e5ULL);
    d->bits = iol_permute_bits(n);
    switch (kind) {
    case IOL_DIST_RANDOM:
        break;
    case IOL_DIST_ZIPF:
        zipf_init(d);
        break;
    case IOL_DIST_PARETO:
        d->pareto.power = log(param) / log(1.0 - param);
        break;
    case IOL_DIST_NORMAL: {
        double w = ceil((double)n * param / 100.0), half = (double)(n / 2);
        d->normal.width = w < half ? w : half;
        break;
    }
    }
    return 0;
}

uint64_t iol_dist_next_raw(struct iol_dist *d)
{
    switch (d->kind) {
    case IOL_DIST_ZIPF:
        return zipf_rank(d);
    case IOL_DIST_PARETO:
        return pareto_rank(d);
    case IOL_DIST_NORMAL:
        return normal_rank(d);
    case IOL_DIST_RANDOM:
        break;
    }
    return iol_rng_below(&d->rng, d->n);
}

uint64_t iol_dist_scatter(const struct iol_dist *d, uint64_t rank)
{
    if (d->kind == IOL_DIST_RANDOM)
        return rank;   /* already spread evenly: a permutation would only cost time */
    return iol_permute(rank, d->n, d->bits, d->key);
}

uint64_t iol_dist_next(struct iol_dist *d)
{
    return iol_dist_scatter(d, iol_dist_next_raw(d));
}

void iol_dist_free(struct iol_dist *d)
{
    (void)d;
}
