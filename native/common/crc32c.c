/* crc32c.c — CRC-32C (see crc32c.h).
 *
 * Internally the CRC is the raw 32-bit register, bit-reflected (bit 0 holds the x^31 coefficient), with no
 * inversions; the public functions invert on the way in and out so that chaining from 0 works.
 *
 * The crc32 instruction has a latency of 3 cycles but can start one per cycle, so a single dependent chain
 * runs at a third of the possible speed. Long buffers are therefore cut into three consecutive streams of
 * L bytes each, checksummed in parallel (the 2nd and 3rd from a zero register) and joined with the
 * linearity of CRCs: reg(A||B) = shift_L(reg(A)) ^ reg_from_0(B), where shift_L(r) is the register after
 * L zero bytes starting from r. shift_L is linear over GF(2), so it is four 256-entry table lookups (one
 * per byte of r); the tables are computed once, at first use. */
#include "crc32c.h"

#include <pthread.h>
#include <string.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define IOL_CRC32C_X86 1
#include <nmmintrin.h>
#else
#define IOL_CRC32C_X86 0
#endif

#define CRC32C_POLY 0x82f63b78u   /* Castagnoli's polynomial 0x1EDC6F41, bit-reflected */

#if IOL_CRC32C_X86
/* Stream lengths of the three-way hardware path, longest first (multiples of 8). 8 KiB streams for large
 * blocks; 1360 so that one round of three covers 4080 of a 4 KiB block; 128 for what is left. A buffer
 * shorter than three streams of the smallest length is done serially. */
static const size_t stream_len[] = { 8192, 1360, 128 };
#define NSTREAM_LEN (sizeof stream_len / sizeof stream_len[0])
#endif

struct crc_tables {
    uint32_t slice[8][256];                 /* slicing-by-8: slice[k][b] = b followed by k zero bytes */
#if IOL_CRC32C_X86
    uint32_t shift[NSTREAM_LEN][4][256];    /* shift[i][j][b] = shift_{stream_len[i]}(b << 8j) */
#endif
};

/* Written once under pthread_once and only read afterwards: a constant computed lazily, not state. */
static struct crc_tables tables;
static pthread_once_t tables_once = PTHREAD_ONCE_INIT;

static uint32_t sw_update(const struct crc_tables *t, uint32_t crc, const unsigned char *p, size_t len)
{
    /* Bytes are assembled explicitly rather than loaded as a word, so this is right on any endianness. */
    while (len >= 8) {
        uint32_t a = crc ^ ((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24);
        crc = t->slice[7][a & 0xff] ^ t->slice[6][(a >> 8) & 0xff] ^ t->slice[5][(a >> 16) & 0xff] ^
              t->slice[4][a >> 24] ^ t->slice[3][p[4]] ^ t->slice[2][p[5]] ^ t->slice[1][p[6]] ^
              t->slice[0][p[7]];
        p += 8;
        len -= 8;
    }
    while (len--)
        crc = t->slice[0][(crc ^ *p++) & 0xff] ^ (crc >> 8);
    return crc;
}

static void build_tables(void)
{
    struct crc_tables *t = &tables;
    for (uint32_t b = 0; b < 256; b++) {
        uint32_t c = b;
        for (int k = 0; k < 8; k++)
            c = (c >> 1) ^ (CRC32C_POLY & (0u - (c & 1)));
        t->slice[0][b] = c;
    }
    for (int k = 1; k < 8; k++)
        for (int b = 0; b < 256; b++)
            t->slice[k][b] = (t->slice[k - 1][b] >> 8) ^ t->slice[0][t->slice[k - 1][b] & 0xff];

#if IOL_CRC32C_X86
    /* shift_L of each single-bit register by running zeros through the software CRC, then every byte value
     * as the xor of its bits' images (linearity). 32 * (8192 + 1360 + 128) bytes: well under a millisecond. */
    static const unsigned char zeros[1024];
    for (size_t i = 0; i < NSTREAM_LEN; i++) {
        uint32_t basis[32];
        for (int bit = 0; bit < 32; bit++) {
            uint32_t r = 1u << bit;
            for (size_t left = stream_len[i]; left > 0;) {
                size_t n = left < sizeof zeros ? left : sizeof zeros;
                r = sw_update(t, r, zeros, n);
                left -= n;
            }
            basis[bit] = r;
        }
        for (int j = 0; j < 4; j++) {
            t->shift[i][j][0] = 0;
            for (unsigned b = 1; b < 256; b++)
                t->shift[i][j][b] = t->shift[i][j][b & (b - 1)] ^ basis[8 * j + __builtin_ctz(b)];
        }
    }
#endif
}

static const struct crc_tables *get_tables(void)
{
    pthread_once(&tables_once, build_tables);
    return &tables;
}

#if IOL_CRC32C_X86
static uint32_t shift_zeros(const uint32_t tab[4][256], uint32_t r)
{
    return tab[0][r & 0xff] ^ tab[1][(r >> 8) & 0xff] ^ tab[2][(r >> 16) & 0xff] ^ tab[3][r >> 24];
}

__attribute__((target("sse4.2")))
static uint32_t hw_serial(uint32_t crc, const unsigned char *p, size_t len)
{
    uint64_t c = crc;
    while (len >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);   /* an unaligned load; x86 is little-endian as the instruction expects */
        c = _mm_crc32_u64(c, w);
        p += 8;
        len -= 8;
    }
    crc = (uint32_t)c;
    while (len--)
        crc = _mm_crc32_u8(crc, *p++);
    return crc;
}

__attribute__((target("sse4.2")))
static uint32_t hw_update(uint32_t crc, const unsigned char *p, size_t len)
{
    if (len >= 3 * stream_len[NSTREAM_LEN - 1]) {
        const struct crc_tables *t = get_tables();
        for (size_t i = 0; i < NSTREAM_LEN; i++) {
            size_t l = stream_len[i];
            while (len >= 3 * l) {
                uint64_t a = crc, b = 0, c = 0;
                for (const unsigned char *end = p + l; p < end; p += 8) {
                    uint64_t wa, wb, wc;
                    memcpy(&wa, p, 8);
                    memcpy(&wb, p + l, 8);
                    memcpy(&wc, p + 2 * l, 8);
                    a = _mm_crc32_u64(a, wa);
                    b = _mm_crc32_u64(b, wb);
                    c = _mm_crc32_u64(c, wc);
                }
                crc = shift_zeros(t->shift[i], shift_zeros(t->shift[i], (uint32_t)a) ^ (uint32_t)b) ^ (uint32_t)c;
                p += 2 * l;   /* the loop advanced p over the first stream */
                len -= 3 * l;
            }
        }
    }
    return hw_serial(crc, p, len);
}
#endif

bool iol_crc32c_has_hw(void)
{
#if IOL_CRC32C_X86
    /* Reads the CPU model data libgcc/compiler-rt filled in once at program start: a load and a test. */
    return __builtin_cpu_supports("sse4.2");
#else
    return false;
#endif
}

uint32_t iol_crc32c_sw(uint32_t crc, const void *buf, size_t len)
{
    return ~sw_update(get_tables(), ~crc, buf, len);
}

uint32_t iol_crc32c(uint32_t crc, const void *buf, size_t len)
{
#if IOL_CRC32C_X86
    if (iol_crc32c_has_hw())
        return ~hw_update(~crc, buf, len);
#endif
    return iol_crc32c_sw(crc, buf, len);
}
