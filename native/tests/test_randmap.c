/* test_randmap.c — fio's random map: every block once per pass, a done block's draw moves to the next free
 * one after it (wrapping), and the summary levels agree with a plain scan at every fill. */
#include <stdlib.h>

#include "check.h"
#include "common/randmap.h"

/* The answer by scanning the plain bitmap: the first clear bit after b, wrapping. */
static uint64_t scan_next_free(const unsigned char *done, uint64_t n, uint64_t b)
{
    for (uint64_t i = 1; i <= n; i++) {
        uint64_t c = (b + i) % n;
        if (!done[c]) return c;
    }
    return IOL_RANDMAP_NONE;
}

static uint64_t lcg(uint64_t *s)
{
    *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
    return *s >> 11;
}

static void check_against_scan(uint64_t n, uint64_t seed)
{
    struct iol_randmap m;
    CHECK(iol_randmap_init(&m, n) == 0, "init n=%llu", (unsigned long long)n);
    unsigned char *done = calloc(n, 1);
    int ok = 1;
    for (int pass = 0; pass < 2; pass++) {
        for (uint64_t k = 0; k < n; k++) {
            uint64_t b = lcg(&seed) % n;
            uint64_t want = done[b] ? scan_next_free(done, n, b) : b;
            uint64_t got = iol_randmap_claim(&m, b);
            if (got != want || got >= n) {
                ok = 0;
                break;
            }
            done[got] = 1;
        }
        CHECK(ok, "n=%llu pass %d: a claim differs from the plain scan", (unsigned long long)n, pass);
        CHECK(iol_randmap_claim(&m, 0) == IOL_RANDMAP_NONE, "n=%llu: a full map still gives a block",
              (unsigned long long)n);
        iol_randmap_reset(&m);
        for (uint64_t k = 0; k < n; k++) done[k] = 0;
    }
    free(done);
    iol_randmap_free(&m);
}

int main(void)
{
    uint64_t sizes[] = {1, 2, 63, 64, 65, 127, 128, 4095, 4096, 4097, 262143, 262144, 262145, 300001};
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) check_against_scan(sizes[i], 7 + i);

    /* A done block's draw takes the next free one, and the search wraps past the end. */
    struct iol_randmap m;
    iol_randmap_init(&m, 10);
    CHECK(iol_randmap_claim(&m, 4) == 4, "a free draw is itself");
    CHECK(iol_randmap_claim(&m, 4) == 5, "a done draw moves to the next block");
    CHECK(iol_randmap_claim(&m, 9) == 9, "the last block");
    CHECK(iol_randmap_claim(&m, 9) == 0, "wraps to the first free block");
    CHECK(iol_randmap_isset(&m, 0) && !iol_randmap_isset(&m, 1), "isset follows the claims");
    iol_randmap_free(&m);

    /* An I/O of several blocks claims the free run after its first block, up to the next done block or
     * the end of its segment (file). */
    uint64_t got;
    iol_randmap_init(&m, 16);
    CHECK(iol_randmap_claim_run(&m, 2, 4, 8, &got) == 2 && got == 4, "a free run of 4: got %llu", (unsigned long long)got);
    CHECK(iol_randmap_claim_run(&m, 0, 4, 8, &got) == 0 && got == 2, "stops at a done block: got %llu", (unsigned long long)got);
    CHECK(iol_randmap_claim_run(&m, 3, 4, 8, &got) == 6 && got == 2, "a done first block moves on, stops at the file's end");
    CHECK(iol_randmap_claim_run(&m, 15, 4, 8, &got) == 15 && got == 1, "the last block alone");
    iol_randmap_free(&m);

    /* A big map fills in time linear in its size (the summary levels skip full words). */
    uint64_t n = 1ULL << 24, seed = 99, count = 0;
    CHECK(iol_randmap_init(&m, n) == 0, "init 2^24");
    while (iol_randmap_claim(&m, lcg(&seed) % n) != IOL_RANDMAP_NONE) count++;
    CHECK(count == n, "2^24 blocks: %llu claimed", (unsigned long long)count);
    iol_randmap_free(&m);
    return TEST_DONE();
}
