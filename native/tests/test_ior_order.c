/* test_ior_order.c — the ior workload's offsets: IOR's layout for shared files and file per process, and
 * -z visiting every transfer of every block exactly once. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "common/permute.h"
#include "workload/ior_internal.h"

static struct ior_cfg make_cfg(uint64_t xfer, uint64_t block, int64_t segments, int fpp, int random)
{
    struct ior_cfg c;
    memset(&c, 0, sizeof c);
    c.xfer = xfer;
    c.block = block;
    c.segments = segments;
    c.fpp = fpp;
    c.random = random;
    c.seed = 42;
    return c;
}

/* Every offset a rank visits lies in its own blocks and is visited once. */
static void check_coverage(uint64_t xfer, uint64_t block, int64_t segs, int nranks, int fpp, int random)
{
    struct ior_cfg cfg = make_cfg(xfer, block, segs, fpp, random);
    uint64_t per_rank = (uint64_t)segs * (block / xfer);
    uint64_t extent = fpp ? (uint64_t)segs * block : (uint64_t)segs * block * (uint64_t)nranks;
    unsigned char *seen = calloc(extent / xfer, 1);
    for (int rank = 0; rank < (fpp ? 1 : nranks); rank++) {
        struct ior_order o;
        ior_order_init(&o, &cfg, nranks, rank, per_rank, 0);
        int in_order = 1;
        for (uint64_t k = 0; k < per_rank; k++) {
            uint64_t off = ior_order_next(&o);
            CHECK(off % xfer == 0, "offset %llu not aligned", (unsigned long long)off);
            CHECK(off < extent, "offset %llu beyond extent", (unsigned long long)off);
            if (off >= extent) break;
            uint64_t seg = fpp ? off / block : off / (block * (uint64_t)nranks);
            uint64_t owner = fpp ? 0 : (off / block) % (uint64_t)nranks;
            CHECK(owner == (uint64_t)rank, "rank %d touched rank %llu's block", rank, (unsigned long long)owner);
            if (random < 2) CHECK(seg == k / (block / xfer), "transfer %llu left its segment", (unsigned long long)k);
            seen[off / xfer]++;
            uint64_t expect = fpp ? (k / (block / xfer)) * block + (k % (block / xfer)) * xfer
                                  : (k / (block / xfer)) * block * nranks + rank * block + (k % (block / xfer)) * xfer;
            if (off != expect) in_order = 0;
        }
        if (random && (random >= 2 ? per_rank : block / xfer) > 8) CHECK(!in_order, "-z produced the sequential order");
        if (!random) CHECK(in_order, "sequential order differs from IOR's layout");
    }
    for (uint64_t i = 0; i < extent / xfer; i++)
        CHECK(seen[i] == 1, "transfer %llu visited %d times", (unsigned long long)i, seen[i]);
    free(seen);
}

int main(void)
{
    check_coverage(8, 64, 3, 4, 0, 0);
    check_coverage(47008, 47008, 5, 3, 0, 1);        /* IO500 ior-hard shape */
    check_coverage(4096, 1 << 20, 2, 2, 0, 1);
    check_coverage(4096, 1 << 20, 3, 1, 1, 1);
    check_coverage(1 << 20, 7 << 20, 2, 1, 1, 1);    /* 7 transfers: not a power of two, cycle walking */
    check_coverage(8, 8 * 1000, 1, 1, 1, 1);
    /* -z -z: one permutation across all of a rank's blocks (IO500's random 4 KiB reads: -t 4k -b 4k -s N) */
    check_coverage(4096, 4096, 300, 2, 0, 2);
    check_coverage(4096, 4096, 257, 1, 1, 2);
    check_coverage(4096, 16384, 33, 3, 0, 3);
    /* Continuing from a start index gives the same sequence as running through. */
    struct ior_cfg cfg = make_cfg(4096, 64 * 4096, 4, 0, 1);
    struct ior_order a, b;
    ior_order_init(&a, &cfg, 3, 1, 4 * 64, 0);
    for (int i = 0; i < 100; i++) ior_order_next(&a);
    ior_order_init(&b, &cfg, 3, 1, 4 * 64, 100);
    for (int i = 0; i < 100; i++) {
        uint64_t x = ior_order_next(&a), y = ior_order_next(&b);
        CHECK(x == y, "resume at 100: step %d differs", i);
    }
    /* iol_permute is a bijection for many sizes. */
    for (uint64_t n = 1; n < 300; n++) {
        unsigned bits = iol_permute_bits(n);
        unsigned char *hit = calloc(n, 1);
        for (uint64_t j = 0; j < n; j++) {
            uint64_t y = iol_permute(j, n, bits, 0x1234 + n);
            if (y < n) hit[y]++;
        }
        int ok = 1;
        for (uint64_t j = 0; j < n; j++) ok &= hit[j] == 1;
        CHECK(ok, "iol_permute is not a bijection for n=%llu", (unsigned long long)n);
        free(hit);
    }
    return TEST_DONE();
}
