/* test_crc32c.c — CRC-32C: published check values, the hardware and table-driven paths against a bit-at-a-time
 * reference written here from the definition, on lengths and alignments that cross every internal boundary,
 * and chaining. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "common/crc32c.h"

static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;

static uint64_t rnd(void)   /* xorshift64*: reproducible, no libc state */
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 0x2545f4914f6cdd1dULL;
}

/* The definition, one bit at a time: slow and obviously right. */
static uint32_t crc_ref(uint32_t crc, const unsigned char *p, size_t len)
{
    crc = ~crc;
    for (size_t i = 0; i < len; i++) {
        crc ^= p[i];
        for (int b = 0; b < 8; b++)
            crc = (crc >> 1) ^ (0x82f63b78u & (0u - (crc & 1)));
    }
    return ~crc;
}

static void check_vector(const char *name, const void *buf, size_t len, uint32_t want)
{
    uint32_t hw = iol_crc32c(0, buf, len), sw = iol_crc32c_sw(0, buf, len), ref = crc_ref(0, buf, len);
    CHECK(hw == want, "%s: iol_crc32c 0x%08X, expected 0x%08X", name, hw, want);
    CHECK(sw == want, "%s: iol_crc32c_sw 0x%08X, expected 0x%08X", name, sw, want);
    CHECK(ref == want, "%s: the test's reference 0x%08X, expected 0x%08X", name, ref, want);
}

static void test_published_check_values(void)
{
    unsigned char b[48];
    check_vector("\"123456789\"", "123456789", 9, 0xE3069283u);
    check_vector("empty", "", 0, 0x00000000u);
    check_vector("\"a\"", "a", 1, 0xC1D04330u);
    /* RFC 3720 (iSCSI), appendix B.4 */
    memset(b, 0, 32);
    check_vector("32 bytes of zeros", b, 32, 0x8A9136AAu);
    memset(b, 0xff, 32);
    check_vector("32 bytes of 0xFF", b, 32, 0x62A8AB43u);
    for (int i = 0; i < 32; i++) b[i] = (unsigned char)i;
    check_vector("ascending 0..31", b, 32, 0x46DD794Eu);
    for (int i = 0; i < 32; i++) b[i] = (unsigned char)(31 - i);
    check_vector("descending 31..0", b, 32, 0x113FDB5Cu);
    static const unsigned char iscsi_read[48] = {
        0x01, 0xc0, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x14, 0x00, 0x00, 0x00, 0x00, 0x00, 0x04, 0x00, 0x00, 0x00, 0x00, 0x14, 0x00, 0x00, 0x00, 0x18,
        0x28, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    };
    check_vector("iSCSI read command PDU", iscsi_read, sizeof iscsi_read, 0xD9963A56u);
}

/* Every length around the boundaries of the three-stream rounds (3 * 128, 3 * 1360, 3 * 8192 bytes) and of
 * the 8-byte steps, plus random ones, each at every alignment modulo 8 and from a non-zero starting CRC. */
static void test_hardware_and_table_paths_match_the_definition(void)
{
    enum { MAX = (1 << 20) + 64 };
    unsigned char *buf = malloc(MAX + 8);
    for (size_t i = 0; i < MAX + 8; i++) buf[i] = (unsigned char)rnd();
    size_t lens[200];
    size_t nl = 0;
    const size_t edges[] = { 0, 1, 7, 8, 9, 15, 16, 383, 384, 385, 391, 392, 767, 768, 4079, 4080, 4081, 4095,
                             4096, 4097, 8160, 8161, 24575, 24576, 24577, 24576 + 4080, 65536, 131072 + 13,
                             1 << 20, (1 << 20) + 63 };
    for (size_t i = 0; i < sizeof edges / sizeof edges[0]; i++) lens[nl++] = edges[i];
    for (; nl < sizeof lens / sizeof lens[0]; nl++)
        lens[nl] = (size_t)(rnd() % (nl % 4 == 0 ? 200000 : 9000));
    int bad = 0;
    for (size_t i = 0; i < nl && bad < 5; i++) {
        for (size_t align = 0; align < 8; align++) {
            if (lens[i] > 65536 && align % 3 != 0)
                continue;   /* the long ones at a few alignments only: the reference is slow */
            uint32_t start = (uint32_t)rnd();
            const unsigned char *p = buf + align;
            uint32_t ref = crc_ref(start, p, lens[i]);
            uint32_t hw = iol_crc32c(start, p, lens[i]), sw = iol_crc32c_sw(start, p, lens[i]);
            if (hw != ref || sw != ref)
                bad++;
            CHECK(hw == ref && sw == ref, "len %zu align %zu start 0x%08X: iol_crc32c 0x%08X iol_crc32c_sw 0x%08X "
                  "reference 0x%08X", lens[i], align, start, hw, sw, ref);
        }
    }
    /* a single flipped bit anywhere in a 4 KiB block changes the checksum */
    uint32_t whole = iol_crc32c(0, buf, 4096);
    for (int k = 0; k < 64; k++) {
        size_t bit = (size_t)(rnd() % (4096 * 8));
        buf[bit / 8] ^= (unsigned char)(1u << (bit % 8));
        CHECK(iol_crc32c(0, buf, 4096) != whole, "flipping bit %zu changes the CRC", bit);
        buf[bit / 8] ^= (unsigned char)(1u << (bit % 8));
    }
    printf("crc32c: hardware path %s\n", iol_crc32c_has_hw() ? "in use (sse4.2)" : "not available: both are software");
    free(buf);
}

static void test_checksums_chain(void)
{
    enum { LEN = 300000 };
    unsigned char *buf = malloc(LEN);
    for (size_t i = 0; i < LEN; i++) buf[i] = (unsigned char)rnd();
    uint32_t whole = iol_crc32c(0, buf, LEN);
    CHECK(whole == iol_crc32c_sw(0, buf, LEN), "hw and sw agree on the whole buffer");
    for (int k = 0; k < 100; k++) {
        size_t cut = k < 3 ? (size_t)(k == 0 ? 0 : k == 1 ? LEN : 4096) : (size_t)(rnd() % (LEN + 1));
        uint32_t a = iol_crc32c(0, buf, cut);
        CHECK(iol_crc32c(a, buf + cut, LEN - cut) == whole, "chained at %zu", cut);
        uint32_t s = iol_crc32c_sw(0, buf, cut);
        CHECK(iol_crc32c_sw(s, buf + cut, LEN - cut) == whole, "sw chained at %zu", cut);
        CHECK(iol_crc32c_sw(a, buf + cut, LEN - cut) == whole, "hw then sw chained at %zu", cut);
    }
    /* many small pieces */
    uint32_t c = 0;
    for (size_t off = 0; off < LEN;) {
        size_t n = (size_t)(rnd() % 700);
        if (n > LEN - off)
            n = LEN - off;
        c = iol_crc32c(c, buf + off, n);
        off += n;
    }
    CHECK(c == whole, "chained over random small pieces: 0x%08X vs 0x%08X", c, whole);
    free(buf);
}

int main(void)
{
    test_published_check_values();
    test_hardware_and_table_paths_match_the_definition();
    test_checksums_chain();
    return TEST_DONE();
}
