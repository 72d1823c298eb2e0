/* test_pattern.c — the data pattern: moving stamps gives the same bytes as a fresh fill at any offset, and
 * the check finds flipped bytes, shifted data, zeroed blocks and another rank's data. */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "common/pattern.h"

static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;

static uint64_t rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

/* The pattern for [offset, offset+len) computed word by word from the definition. */
static void fill_reference(uint64_t *buf, size_t len, uint64_t offset, uint64_t key)
{
    for (size_t i = 0; i < len / 8; i++)
        buf[i] = iol_pattern_word(key, offset + 8 * i);
}

static bool has_zero_byte(uint64_t w)
{
    for (int i = 0; i < 64; i += 8)
        if (((w >> i) & 0xff) == 0)
            return true;
    return false;
}

static void test_keys_and_stamps(void)
{
    int zero = 0, same = 0;
    for (uint64_t seed = 0; seed < 200; seed++) {
        for (int64_t rank = -1; rank < 50; rank++) {
            uint64_t k = iol_pattern_key(seed, rank);
            zero += has_zero_byte(k);
            same += k == iol_pattern_key(seed, rank + 1) || k == iol_pattern_key(seed + 1, rank);
            zero += has_zero_byte(iol_pattern_word(k, 512 * (uint64_t)(rank + 2)));
            same += iol_pattern_word(k, 512 * (uint64_t)(rank + 2)) == k;
        }
    }
    CHECK(zero == 0, "keys and stamps never contain a zero byte (%d did)", zero);
    CHECK(same == 0, "keys differ by seed and rank, stamps differ from the key (%d collisions)", same);
    uint64_t k = iol_pattern_key(1, 0);
    CHECK(iol_pattern_word(k, 8) == k && iol_pattern_word(k, 504) == k && iol_pattern_word(k, 1024) != k &&
              iol_pattern_word(k, 1024) != iol_pattern_word(k, 1536), "stamps only at 512-byte boundaries");
    CHECK(iol_pattern_key(1, 0) == k, "the key is deterministic");
}

static void test_apply_at_any_offset_equals_fresh_fill(void)
{
    static const size_t lens[] = { 8, 504, 512, 520, 4096, 47008, 1 << 20 };
    uint64_t key = iol_pattern_key(42, 3);
    for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++) {
        size_t len = lens[li];
        uint64_t *buf = malloc(len), *ref = malloc(len);
        struct iol_pattern p;
        iol_pattern_init(&p, buf, len, key);
        /* offsets: sequential (as IOR writes), 512-aligned, unaligned multiples of 8, repeated, huge, backwards */
        uint64_t offsets[40];
        int n = 0;
        for (int k = 0; k < 6; k++) offsets[n++] = (uint64_t)k * len;
        offsets[n++] = 512;
        offsets[n++] = 8;
        offsets[n++] = 8;
        offsets[n++] = 4096 * 1000;
        offsets[n++] = 0;
        offsets[n++] = (1ULL << 40) + 504;
        while (n < 40) offsets[n++] = (rnd() % (1ULL << 44)) & ~7ULL;
        int fails = 0;
        for (int k = 0; k < n && fails < 3; k++) {
            iol_pattern_apply(&p, offsets[k]);
            fill_reference(ref, len, offsets[k], key);
            bool eq = memcmp(buf, ref, len) == 0;
            uint64_t first = 12345;
            uint64_t bad = iol_pattern_check(buf, len, offsets[k], key, &first);
            fails += !eq || bad != 0;
            CHECK(eq, "len %zu, apply #%d at offset %llu equals a fresh fill", len, k, (unsigned long long)offsets[k]);
            CHECK(bad == 0 && first == 12345, "len %zu offset %llu: good data checks clean (%llu bad)", len,
                  (unsigned long long)offsets[k], (unsigned long long)bad);
        }
        free(buf);
        free(ref);
    }
}

static void test_apply_moves_only_the_stamps(void)
{
    /* IOR refreshes the buffer for every transfer: that must cost len/512 stores, not a memory pass. */
    enum { LEN = 8192 };
    uint64_t *buf = malloc(LEN);
    struct iol_pattern p;
    iol_pattern_init(&p, buf, LEN, 7);
    iol_pattern_apply(&p, 0);
    buf[1] = 0xdeadbeef;                   /* a word that is a stamp neither at offset 0 nor at 512 */
    iol_pattern_apply(&p, 512);
    CHECK(buf[1] == 0xdeadbeef, "non-stamp words are not rewritten by apply");
    CHECK(buf[0] == iol_pattern_word(7, 512) && buf[64] == iol_pattern_word(7, 1024), "stamps moved");
    free(buf);
}

static void test_check_finds_what_went_wrong(void)
{
    static const size_t lens[] = { 47008, 1 << 20 };
    uint64_t key = iol_pattern_key(7, 0);
    for (size_t li = 0; li < 2; li++) {
        size_t len = lens[li];
        uint64_t *buf = malloc(len), *other = malloc(len);
        unsigned char *bytes = (unsigned char *)buf;
        uint64_t off = 3 * (uint64_t)len + 512 * 7 + 40;   /* not 512-aligned */
        fill_reference(buf, len, off, key);

        /* a single flipped byte, anywhere: in a key word, in a stamp word, first and last byte */
        size_t stamp_byte = (size_t)((512 - off % 512) % 512) + 3;
        size_t spots[] = { 0, 1, 7, 8, stamp_byte, len / 2 + 5, len - 1 };
        for (size_t s = 0; s < sizeof spots / sizeof spots[0]; s++) {
            size_t at = spots[s];
            bytes[at] ^= 0x10;
            uint64_t first = 0;
            uint64_t bad = iol_pattern_check(buf, len, off, key, &first);
            CHECK(bad == 1 && first == off + at, "len %zu: flipped byte at %zu found (bad %llu at %llu)", len, at,
                  (unsigned long long)bad, (unsigned long long)first);
            bytes[at] ^= 0x10;
        }

        /* data written for the block 512 bytes (or 4 KiB) further: only the stamps tell, and they do */
        for (uint64_t shift = 512; shift <= 4096; shift *= 8) {
            fill_reference(other, len, off + shift, key);
            uint64_t first = 0;
            uint64_t bad = iol_pattern_check(other, len, off, key, &first);
            CHECK(bad >= len / 512, "len %zu: data shifted by %llu detected (%llu bad bytes)", len,
                  (unsigned long long)shift, (unsigned long long)bad);
            CHECK(first == off + (512 - off % 512) % 512, "first bad byte is the first stamp");
        }

        /* another rank's data (same seed) */
        fill_reference(other, len, off, iol_pattern_key(7, 1));
        uint64_t first = 0;
        uint64_t bad = iol_pattern_check(other, len, off, key, &first);
        CHECK(bad > len / 2 && first < off + 8, "len %zu: another rank's data detected (%llu bad)", len,
              (unsigned long long)bad);
        /* another run's data (same rank, other seed) */
        fill_reference(other, len, off, iol_pattern_key(8, 0));
        CHECK(iol_pattern_check(other, len, off, key, &first) > len / 2, "another seed's data detected");

        /* a zeroed 4 KiB block (a hole): every one of its bytes is counted */
        memcpy(other, buf, len);
        memset((unsigned char *)other + 8192, 0, 4096);
        bad = iol_pattern_check(other, len, off, key, &first);
        CHECK(bad == 4096 && first == off + 8192, "zeroed block: %llu bad from %llu", (unsigned long long)bad,
              (unsigned long long)first);

        /* an unaligned buffer address reads the same */
        unsigned char *shifted = malloc(len + 1);
        memcpy(shifted + 1, buf, len);
        CHECK(iol_pattern_check(shifted + 1, len, off, key, &first) == 0, "unaligned buffer checks clean");
        shifted[1 + 100] ^= 1;
        CHECK(iol_pattern_check(shifted + 1, len, off, key, &first) == 1 && first == off + 100,
              "unaligned buffer: flipped byte found");
        free(shifted);
        free(buf);
        free(other);
    }
}

static void report_speed(void)
{
    /* Not an assertion (machines differ): a figure to notice if the check ever becomes the bottleneck. */
    enum { LEN = 64 << 20 };
    uint64_t *buf = malloc(LEN);
    struct iol_pattern p;
    iol_pattern_init(&p, buf, LEN, 99);
    iol_pattern_apply(&p, 0);
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    uint64_t bad = 0;
    for (int r = 0; r < 4; r++)
        bad += iol_pattern_check(buf, LEN, 0, 99, NULL);
    clock_gettime(CLOCK_MONOTONIC, &b);
    double s = (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) * 1e-9;
    CHECK(bad == 0, "big buffer checks clean");
    printf("pattern check: %.1f GiB/s\n", 4.0 * LEN / s / (1 << 30));
    free(buf);
}

/* IOR's packets: a written transfer checks clean, at any offset and for every type; the words follow IOR's
 * formulas; one flipped byte is one bad byte; another signature or rank is found. */
static void test_ior_packets(void)
{
    enum { LEN = 16384 };
    uint64_t *buf = malloc(LEN);
    for (int t = IOL_PACKET_TIMESTAMP; t <= IOL_PACKET_RANDOM; t++) {
        struct iol_packet_buf p;
        iol_packet_init(&p, buf, LEN, (enum iol_packet)t, (uint32_t)-7, 3);
        for (uint64_t item = 0; item < 5 * LEN; item += LEN) {
            iol_packet_apply(&p, item);
            uint64_t first = 0;
            CHECK(iol_packet_check(buf, LEN, item, (enum iol_packet)t, (uint32_t)-7, 3, &first) == 0,
                  "a packet checks clean");
            ((unsigned char *)buf)[4099] ^= 0x10;
            CHECK(iol_packet_check(buf, LEN, item, (enum iol_packet)t, (uint32_t)-7, 3, &first) == 1 &&
                      first == item + 4099, "one flipped byte is one bad byte, at its file offset");
            ((unsigned char *)buf)[4099] ^= 0x10;
            CHECK(iol_packet_check(buf, LEN, item, (enum iol_packet)t, (uint32_t)-6, 3, &first) > 0 &&
                      iol_packet_check(buf, LEN, item, (enum iol_packet)t, (uint32_t)-7, 2, &first) > 0,
                  "another signature or rank is found");
        }
        CHECK(iol_packet_parse(iol_packet_name((enum iol_packet)t)) == t, "names parse back");
    }
    struct iol_packet_buf p;
    iol_packet_init(&p, buf, LEN, IOL_PACKET_TIMESTAMP, 5, 2);
    CHECK(buf[3] == ((2ULL << 32) | 8), "timestamp: rank << 32 | signature + index");
    iol_packet_init(&p, buf, LEN, IOL_PACKET_TIMESTAMP, (uint32_t)-7, 0);
    CHECK(buf[1] == (uint64_t)-6, "a negative signature is sign-extended, as IOR's int");
    iol_packet_init(&p, buf, LEN, IOL_PACKET_OFFSET, 5, 2);
    iol_packet_apply(&p, 8192);
    CHECK(buf[0] == ((2ULL << 32) | 8192) && buf[512] == ((2ULL << 32) | 16384) && buf[1] == ((2ULL << 32) | 6),
          "offset: a stamp of offset x k every 4 KiB");
    unsigned s = 5 + 2;
    uint64_t hi = (uint64_t)rand_r(&s) << 32;
    uint64_t inc = hi | (uint64_t)rand_r(&s);
    iol_packet_init(&p, buf, LEN, IOL_PACKET_INCOMPRESSIBLE, 5, 2);
    CHECK(buf[7] == inc && buf[1000] == inc, "incompressible: two rand_r draws (glibc's algorithm)");
    CHECK(iol_packet_parse("o") == IOL_PACKET_OFFSET && iol_packet_parse("iolens") == IOL_PACKET_IOLENS &&
              iol_packet_parse("x") < 0 && iol_packet_parse("") < 0, "IOR's letters and iolens parse");
    free(buf);
}

int main(void)
{
    test_ior_packets();
    test_keys_and_stamps();
    test_apply_at_any_offset_equals_fresh_fill();
    test_apply_moves_only_the_stamps();
    test_check_finds_what_went_wrong();
    report_speed();
    return TEST_DONE();
}
