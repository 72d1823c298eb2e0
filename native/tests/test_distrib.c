/* test_distrib.c — the random_distribution generators: parsing fio's spellings, the RNG, every index in
 * range, determinism by seed, and each law's shape against figures computed here from its definition
 * (uniform flatness, Zipf's rank frequencies, Pareto's h rule, fio's normal spread), plus the scattering of
 * hot ranks over the range by a bijection. Seeds are fixed, so the statistical bounds (about 5 sigma) give the
 * same verdict on every run. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "common/distrib.h"

static const char *kind_name(enum iol_dist_kind k)
{
    return k == IOL_DIST_RANDOM ? "random" : k == IOL_DIST_ZIPF ? "zipf" : k == IOL_DIST_PARETO ? "pareto" : "normal";
}

static struct iol_dist make(enum iol_dist_kind kind, double param, uint64_t n, uint64_t seed)
{
    struct iol_dist d;
    struct iol_err err = { 0 };
    int rc = iol_dist_init(&d, kind, param, n, seed, &err);
    CHECK(rc == 0, "init %s:%g n=%llu: %s", kind_name(kind), param, (unsigned long long)n, err.msg);
    return d;
}

/* ---- parsing ---- */

static void test_parse_accepts_fio_spellings_with_fio_defaults(void)
{
    static const struct {
        const char *spec;
        enum iol_dist_kind kind;
        double param;
    } ok[] = {
        { "random", IOL_DIST_RANDOM, 0 },   { "zipf", IOL_DIST_ZIPF, 1.1 },       { "zipf:1.2", IOL_DIST_ZIPF, 1.2 },
        { "zipf:0.8", IOL_DIST_ZIPF, 0.8 }, { "zipf:1", IOL_DIST_ZIPF, 1.0 },      { "pareto", IOL_DIST_PARETO, 0.2 },
        { "pareto:0.3", IOL_DIST_PARETO, 0.3 }, { "normal", IOL_DIST_NORMAL, 0 }, { "normal:10", IOL_DIST_NORMAL, 10 },
        { "normal:0", IOL_DIST_NORMAL, 0 }, { "gauss:5.5", IOL_DIST_NORMAL, 5.5 }, { "Zipf:2", IOL_DIST_ZIPF, 2 },
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        enum iol_dist_kind kind = IOL_DIST_RANDOM;
        double param = -1;
        struct iol_err err = { 0 };
        int rc = iol_dist_parse(ok[i].spec, &kind, &param, &err);
        CHECK(rc == 0 && kind == ok[i].kind && param == ok[i].param, "'%s': rc %d kind %s param %g (%s)", ok[i].spec,
              rc, kind_name(kind), param, err.msg);
    }
}

static void test_parse_refuses_bad_specs_naming_the_option(void)
{
    static const char *const bad[] = {
        "", "uniform", "zipf:", "zipf:abc", "zipf:0", "zipf:-1.2", "zipf:nan", "zipf:inf", "zipf:1.2x",
        "zipf: 1.2", "zipf:1.2:0.25", "pareto:0", "pareto:1", "pareto:1.5", "pareto:-0.2", "normal:100",
        "normal:-1", "normal:250", "random:1", "zoned:60/10:30/20:8/30:2/40", "zoned_abs:60/20G:40/100G", ":1.2",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        enum iol_dist_kind kind = IOL_DIST_ZIPF;
        double param = 42;
        struct iol_err err = { 0 };
        int rc = iol_dist_parse(bad[i], &kind, &param, &err);
        CHECK(rc == -1 && err.code == IOL_ERR_USAGE, "'%s' refused with a usage error (rc %d, code %d)", bad[i], rc,
              err.code);
        CHECK(strncmp(err.msg, "random_distribution: ", 21) == 0, "'%s': message names the option: %s", bad[i],
              err.msg);
        CHECK(kind == IOL_DIST_ZIPF && param == 42, "'%s': outputs untouched on error", bad[i]);
    }
    struct iol_err err = { 0 };
    enum iol_dist_kind kind;
    double param;
    iol_dist_parse("zoned:60/10:40/90", &kind, &param, &err);
    CHECK(strstr(err.msg, "not supported") != NULL, "zoned is refused as unsupported, not unknown: %s", err.msg);
}

static void test_init_refuses_bad_parameters_and_empty_ranges(void)
{
    struct iol_dist d;
    struct {
        enum iol_dist_kind kind;
        double param;
        uint64_t n;
    } bad[] = { { IOL_DIST_RANDOM, 0, 0 },  { IOL_DIST_ZIPF, 0, 100 },     { IOL_DIST_ZIPF, NAN, 100 },
                { IOL_DIST_PARETO, 1, 100 }, { IOL_DIST_NORMAL, 100, 100 }, { IOL_DIST_ZIPF, 1.1, 0 } };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct iol_err err = { 0 };
        int rc = iol_dist_init(&d, bad[i].kind, bad[i].param, bad[i].n, 1, &err);
        CHECK(rc == -1 && err.code == IOL_ERR_USAGE && strncmp(err.msg, "random_distribution: ", 21) == 0,
              "init %s:%g n=%llu refused: rc %d %s", kind_name(bad[i].kind), bad[i].param,
              (unsigned long long)bad[i].n, rc, err.msg);
    }
}

/* ---- the RNG ---- */

static void test_rng_is_deterministic_and_uniform(void)
{
    struct iol_rng a, b, c;
    iol_rng_seed(&a, 12345);
    iol_rng_seed(&b, 12345);
    iol_rng_seed(&c, 12346);
    int same = 1, equal_to_c = 0;
    for (int i = 0; i < 1000; i++) {
        uint64_t x = iol_rng_next(&a), y = iol_rng_next(&b), z = iol_rng_next(&c);
        same &= x == y;
        equal_to_c += x == z;
    }
    CHECK(same, "same seed, same stream");
    CHECK(equal_to_c == 0, "neighbouring seeds give unrelated streams (%d equal outputs)", equal_to_c);
    struct iol_rng z;
    iol_rng_seed(&z, 0);
    CHECK(iol_rng_next(&z) != 0 || iol_rng_next(&z) != 0, "seed 0 works");

    enum { N = 1000000 };
    double sum = 0, lo = 1, hi = 0;
    for (int i = 0; i < N; i++) {
        double u = iol_rng_unit(&a);
        sum += u;
        lo = u < lo ? u : lo;
        hi = u > hi ? u : hi;
    }
    CHECK(lo >= 0 && hi < 1, "unit in [0, 1): min %g max %.17g", lo, hi);
    CHECK(fabs(sum / N - 0.5) < 5 * sqrt(1.0 / 12 / N), "unit mean %f", sum / N);

    /* below(n): in range, and flat for a small n that does not divide 2^64 (chi-square, 6 degrees of freedom) */
    uint64_t counts[7] = { 0 };
    for (int i = 0; i < 700000; i++) {
        uint64_t v = iol_rng_below(&a, 7);
        if (v >= 7) {
            CHECK(0, "below(7) gave %llu", (unsigned long long)v);
            break;
        }
        counts[v]++;
    }
    double chi2 = 0;
    for (int i = 0; i < 7; i++) chi2 += (counts[i] - 100000.0) * (counts[i] - 100000.0) / 100000.0;
    CHECK(chi2 < 6 + 5 * sqrt(12.0), "below(7) is flat: chi2 %f", chi2);
    CHECK(iol_rng_below(&a, 0) == 0 && iol_rng_below(&a, 1) == 0, "below(0) and below(1) are 0");
    /* n just above 2^63: half the 64-bit products are rejected, and the results still cover the range */
    uint64_t big = (1ULL << 63) + 1, above = 0;
    for (int i = 0; i < 10000; i++) {
        uint64_t v = iol_rng_below(&a, big);
        CHECK(v < big, "below(2^63+1) in range");
        above += v >= (1ULL << 61) * 3;   /* the top quarter of [0, 2^63] */
    }
    CHECK(above > 2500 - 250 && above < 2500 + 250, "below(2^63+1) reaches the top quarter: %llu of 10000",
          (unsigned long long)above);
    uint64_t top = 0;
    for (int i = 0; i < 1000; i++) top |= iol_rng_below(&a, UINT64_MAX);
    CHECK(top >> 63, "below(UINT64_MAX) sets the top bit");
}

/* ---- every generator ---- */

static const enum iol_dist_kind kinds[] = { IOL_DIST_RANDOM, IOL_DIST_ZIPF, IOL_DIST_PARETO, IOL_DIST_NORMAL };
static const double params[][3] = { { 0, 0, 0 }, { 0.5, 1.1, 3.0 }, { 0.05, 0.2, 0.7 }, { 0, 10, 99 } };

static void test_every_index_is_in_range(void)
{
    const uint64_t ns[] = { 1, 2, 3, 7, 1000, 4097, 1ULL << 28, (1ULL << 40) + 3, (1ULL << 53) - 1 };
    for (size_t ki = 0; ki < 4; ki++)
        for (int pi = 0; pi < 3; pi++)
            for (size_t ni = 0; ni < sizeof ns / sizeof ns[0]; ni++) {
                struct iol_dist d = make(kinds[ki], params[ki][pi], ns[ni], 7 + ni);
                uint64_t worst = 0;
                int bad = 0;
                for (int i = 0; i < 20000; i++) {
                    uint64_t v = iol_dist_next(&d), r = iol_dist_next_raw(&d);
                    if (v >= ns[ni] || r >= ns[ni]) {
                        bad++;
                        worst = v >= ns[ni] ? v : r;
                    }
                }
                CHECK(bad == 0, "%s:%g n=%llu: %d indexes out of range (e.g. %llu)", kind_name(kinds[ki]),
                      params[ki][pi], (unsigned long long)ns[ni], bad, (unsigned long long)worst);
                iol_dist_free(&d);
            }
}

static void test_same_seed_same_sequence_other_seed_other_sequence(void)
{
    for (size_t ki = 0; ki < 4; ki++) {
        double p = params[ki][1];
        struct iol_dist a = make(kinds[ki], p, 1000000, 99), b = make(kinds[ki], p, 1000000, 99),
                        c = make(kinds[ki], p, 1000000, 100);
        int same = 1, equal = 0;
        for (int i = 0; i < 5000; i++) {
            uint64_t x = iol_dist_next(&a), y = iol_dist_next(&b), z = iol_dist_next(&c);
            same &= x == y;
            equal += x == z;
        }
        CHECK(same, "%s: same seed, same sequence", kind_name(kinds[ki]));
        /* zipf draws its hottest rank ~1/4 of the time, but the two seeds put it in different blocks */
        CHECK(equal < 500, "%s: another seed, another sequence (%d of 5000 equal)", kind_name(kinds[ki]), equal);
    }
}

static void test_random_is_flat(void)
{
    enum { N = 1000, DRAWS = 2000000 };
    struct iol_dist d = make(IOL_DIST_RANDOM, 0, N, 5);
    uint64_t *count = calloc(N, sizeof *count);
    for (int i = 0; i < DRAWS; i++) count[iol_dist_next(&d)]++;
    double e = (double)DRAWS / N, chi2 = 0;
    for (int i = 0; i < N; i++) chi2 += (count[i] - e) * (count[i] - e) / e;
    CHECK(chi2 < (N - 1) + 5 * sqrt(2.0 * (N - 1)), "uniform over %d blocks: chi2 %.1f (df %d)", N, chi2, N - 1);
    CHECK(chi2 > (N - 1) - 5 * sqrt(2.0 * (N - 1)), "uniform: chi2 %.1f not suspiciously small", chi2);
    free(count);
}

/* ---- zipf ---- */

static double harmonic(uint64_t n, double theta)   /* H(n, theta) = sum k^-theta, k = 1..n */
{
    uint64_t m = n < 2000000 ? n : 2000000;
    double s = 0;
    for (uint64_t k = m; k >= 1; k--) s += pow((double)k, -theta);   /* smallest first: less rounding */
    if (n > m) {
        /* the rest by the midpoint rule: sum_{k=m+1}^{n} f(k) ~ integral of f over [m + 1/2, n + 1/2]; the error
         * is about f''/24 per term, below 1e-13 of the total here */
        double a = (double)m + 0.5, b = (double)n + 0.5;
        s += theta == 1 ? log(b / a) : (pow(b, 1 - theta) - pow(a, 1 - theta)) / (1 - theta);
    }
    return s;
}

static void test_zipf_matches_the_zipf_law(void)
{
    const double thetas[] = { 0.3, 0.8, 0.999, 1.0, 1.1, 1.2, 2.0, 4.0 };
    const uint64_t ns[] = { 1000, 1000000, 1ULL << 28 };
    enum { DRAWS = 1000000, BINS = 40 };
    for (size_t ti = 0; ti < sizeof thetas / sizeof thetas[0]; ti++)
        for (size_t ni = 0; ni < sizeof ns / sizeof ns[0]; ni++) {
            double theta = thetas[ti];
            uint64_t n = ns[ni];
            struct timespec t0, t1;
            clock_gettime(CLOCK_MONOTONIC, &t0);
            struct iol_dist d = make(IOL_DIST_ZIPF, theta, n, 11 + ti);
            clock_gettime(CLOCK_MONOTONIC, &t1);
            double setup = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
            CHECK(setup < 0.01, "zipf setup for n=%llu takes %.3f s", (unsigned long long)n, setup);
            uint64_t count[BINS + 1] = { 0 };
            for (int i = 0; i < DRAWS; i++) {
                uint64_t r = iol_dist_next_raw(&d);
                count[r < BINS ? r : BINS]++;
            }
            double h = harmonic(n, theta), top = 1.0 / h;
            double got = (double)count[0] / DRAWS;
            /* within 3%, or 5 standard deviations of the count where the top rank is too rare for that */
            double tol = fmax(0.03 * top, 5 * sqrt(top * (1 - top) / DRAWS));
            CHECK(fabs(got - top) < tol, "zipf:%g n=%llu: top rank frequency %.6f, 1/H(n,theta) = %.6f", theta,
                  (unsigned long long)n, got, top);
            /* chi-square over ranks 1..BINS and the rest together */
            double chi2 = 0, rest = 1;
            int df = 0;
            for (int k = 0; k <= BINS; k++) {
                double p = k < BINS ? pow(k + 1.0, -theta) / h : rest;
                if (k < BINS)
                    rest -= p;
                double e = p * DRAWS;
                if (e < 5)
                    continue;   /* too few expected for the chi-square approximation */
                chi2 += (count[k] - e) * (count[k] - e) / e;
                df++;
            }
            df--;
            CHECK(chi2 < df + 5 * sqrt(2.0 * df) + 5, "zipf:%g n=%llu: ranks 1..%d fit k^-theta/H: chi2 %.1f (df %d)",
                  theta, (unsigned long long)n, BINS, chi2, df);
        }
}

/* ---- pareto ---- */

static void test_pareto_sends_one_minus_h_of_draws_to_a_fraction_h_of_blocks(void)
{
    const double hs[] = { 0.05, 0.1, 0.2, 0.3, 0.5, 0.8 };
    enum { N = 1000000, DRAWS = 1000000 };
    for (size_t i = 0; i < sizeof hs / sizeof hs[0]; i++) {
        struct iol_dist d = make(IOL_DIST_PARETO, hs[i], N, 21);
        uint64_t limit = (uint64_t)(hs[i] * N), below = 0, below_half = 0;
        for (int k = 0; k < DRAWS; k++) {
            uint64_t r = iol_dist_next_raw(&d);
            below += r < limit;
            below_half += r < limit / 2;
        }
        double got = (double)below / DRAWS, want = 1 - hs[i];
        CHECK(fabs(got - want) < 0.005, "pareto:%g: %.4f of draws in the first %g of the range, expected %.4f", hs[i],
              got, hs[i], want);
        /* and the law inside that region: P(rank < h n / 2) = (1/2)^(1/p) (1 - h) with p = log h / log(1 - h) */
        double p = log(hs[i]) / log(1 - hs[i]);
        double want_half = pow(0.5 * hs[i], 1 / p);
        CHECK(fabs((double)below_half / DRAWS - want_half) < 0.005, "pareto:%g: %.4f in the first %g, expected %.4f",
              hs[i], (double)below_half / DRAWS, hs[i] / 2, want_half);
    }
}

/* ---- normal ---- */

static void test_normal_has_fio_spread_around_the_centre(void)
{
    const double devs[] = { 0, 5, 10, 30, 50, 99 };
    enum { N = 10000000, DRAWS = 1000000 };
    for (size_t i = 0; i < sizeof devs / sizeof devs[0]; i++) {
        double dev = devs[i];
        struct iol_dist d = make(IOL_DIST_NORMAL, dev, N, 31);
        /* fio: mean of 12 uniforms over the range (sd n/12) plus a uniform offset of width n*dev/100, at most n/2 */
        double w = fmin(ceil(N * dev / 100.0), N / 2.0);
        double sigma = sqrt((N / 12.0) * (N / 12.0) + w * w / 12.0), c = N / 2.0;
        double sum = 0, sum2 = 0;
        uint64_t inside = 0;
        for (int k = 0; k < DRAWS; k++) {
            double x = (double)iol_dist_next_raw(&d) + 0.5 - c;
            sum += x;
            sum2 += x * x;
            inside += fabs(x) < sigma;
        }
        double mean = sum / DRAWS, sd = sqrt(sum2 / DRAWS - mean * mean);
        CHECK(fabs(mean) < 5 * sigma / sqrt(DRAWS), "normal:%g: centred on n/2 (mean offset %.1f blocks)", dev, mean);
        CHECK(fabs(sd / sigma - 1) < 0.01, "normal:%g: standard deviation %.0f, fio's spread %.0f", dev, sd, sigma);
        if (w <= 0.12 * N) {
            /* while the bell dominates, the share within one sd is that of a sum of 12 uniforms, 0.67855
             * (Irwin-Hall; a Gaussian's is 0.68269) */
            double frac = (double)inside / DRAWS;
            CHECK(fabs(frac - 0.67855) < 0.004, "normal:%g: %.4f of draws within one sd of the centre", dev, frac);
        }
    }
}

/* ---- scattering ---- */

static void test_scatter_is_a_bijection_and_spreads_hot_ranks(void)
{
    const uint64_t ns[] = { 1, 2, 7, 1000, 4097, 65536 };
    for (size_t ni = 0; ni < sizeof ns / sizeof ns[0]; ni++) {
        uint64_t n = ns[ni];
        struct iol_dist d = make(IOL_DIST_ZIPF, 1.1, n, 41);
        unsigned char *seen = calloc(n, 1);
        int ok = 1;
        for (uint64_t r = 0; r < n; r++) {
            uint64_t b = iol_dist_scatter(&d, r);
            if (b >= n || seen[b]) {
                ok = 0;
                break;
            }
            seen[b] = 1;
        }
        CHECK(ok, "n=%llu: scatter maps ranks one-to-one onto [0, n)", (unsigned long long)n);
        free(seen);
    }
    /* next() is scatter(next_raw()) on the same draws */
    for (size_t ki = 1; ki < 4; ki++) {
        struct iol_dist a = make(kinds[ki], params[ki][1], 123457, 51), b = make(kinds[ki], params[ki][1], 123457, 51);
        int same = 1;
        for (int i = 0; i < 10000; i++) same &= iol_dist_next(&a) == iol_dist_scatter(&b, iol_dist_next_raw(&b));
        CHECK(same, "%s: next is the scattered raw rank", kind_name(kinds[ki]));
    }
    /* the 1000 hottest zipf ranks of a million blocks land all over the range: about 100 per tenth */
    enum { N = 1000000 };
    struct iol_dist d = make(IOL_DIST_ZIPF, 1.2, N, 61);
    int tenth[10] = { 0 };
    for (uint64_t r = 0; r < 1000; r++) tenth[iol_dist_scatter(&d, r) / (N / 10)]++;
    for (int t = 0; t < 10; t++)
        CHECK(tenth[t] > 100 - 50 && tenth[t] < 100 + 50, "hot ranks in tenth %d of the range: %d of 1000", t,
              tenth[t]);
    /* and the hottest block depends on the seed */
    struct iol_dist e = make(IOL_DIST_ZIPF, 1.2, N, 62);
    CHECK(iol_dist_scatter(&d, 0) != iol_dist_scatter(&e, 0), "seeds 61 and 62 put the hottest block apart");
    /* random is not scattered: it is flat already */
    struct iol_dist u = make(IOL_DIST_RANDOM, 0, N, 61);
    CHECK(iol_dist_scatter(&u, 12345) == 12345, "random: scatter is the identity");
}

int main(void)
{
    test_parse_accepts_fio_spellings_with_fio_defaults();
    test_parse_refuses_bad_specs_naming_the_option();
    test_init_refuses_bad_parameters_and_empty_ranges();
    test_rng_is_deterministic_and_uniform();
    test_every_index_is_in_range();
    test_same_seed_same_sequence_other_seed_other_sequence();
    test_random_is_flat();
    test_zipf_matches_the_zipf_law();
    test_pareto_sends_one_minus_h_of_draws_to_a_fraction_h_of_blocks();
    test_normal_has_fio_spread_around_the_centre();
    test_scatter_is_a_bijection_and_spreads_hot_ranks();
    return TEST_DONE();
}
