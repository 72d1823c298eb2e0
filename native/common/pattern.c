/* pattern.c — the data pattern written and verified by the benchmarks (see pattern.h).
 *
 * Words are in native byte order: files are written and checked on machines of one endianness. */
#include "pattern.h"

#include <stdbool.h>
#include <string.h>

#include "mix.h"

#define STAMP_WORDS (IOL_PATTERN_STAMP / 8)


/* Zeroed blocks (file holes, a device returning zeros) are the most common corruption: with no zero byte
 * in any expected word, every byte of them is reported. Setting the low bit of every byte is one OR, which
 * matters because stamps are made for every 512 bytes of every write. */
static uint64_t no_zero_bytes(uint64_t w)
{
    return w | 0x0101010101010101ULL;
}

uint64_t iol_pattern_key(uint64_t seed, int64_t rank)
{
    return no_zero_bytes(iol_mix64(seed + 0x9e3779b97f4a7c15ULL * (uint64_t)(rank + 1)));
}

/* The stamp's number is the 512-byte block index times an odd constant: a bijection that costs a few cycles
 * (a full mix on every 512 bytes written cost several per cent of a tmpfs write). Shifted left by one so
 * the bits that differ between neighbouring blocks never sit in the bits no_zero_bytes sets: the stamps of
 * two blocks differ from the first byte on, so a misplaced block is reported from its first byte. */
static uint64_t stamp(uint64_t key, uint64_t offset)
{
    uint64_t block = offset / IOL_PATTERN_STAMP;
    return no_zero_bytes(key ^ ((block * 0x9e3779b97f4a7c15ULL + 0x632be59bd9b4e019ULL) << 1));
}

uint64_t iol_pattern_word(uint64_t key, uint64_t offset)
{
    return offset % IOL_PATTERN_STAMP == 0 ? stamp(key, offset) : key;
}

/* Index of the first word of a buffer at file offset `offset` that sits on a 512-byte boundary. */
static size_t first_stamp_word(uint64_t offset)
{
    return (size_t)((IOL_PATTERN_STAMP - offset % IOL_PATTERN_STAMP) % IOL_PATTERN_STAMP) / 8;
}

void iol_pattern_init(struct iol_pattern *p, void *buf, size_t len, uint64_t key)
{
    p->key = key;
    p->buf = buf;
    p->len = len;
    p->stamped_at = -1;
    for (size_t i = 0; i < len / 8; i++)
        p->buf[i] = key;
}

void iol_pattern_apply(struct iol_pattern *p, uint64_t offset)
{
    if (p->stamped_at == (int64_t)offset)
        return;
    size_t nw = p->len / 8;
    /* When the new offset sits at the same place within 512 bytes, the new stamps land exactly on the old
     * ones (always so for transfers that are multiples of 512), so there is nothing to put back first. */
    if (p->stamped_at >= 0 && ((uint64_t)p->stamped_at - offset) % IOL_PATTERN_STAMP != 0)
        for (size_t i = first_stamp_word((uint64_t)p->stamped_at); i < nw; i += STAMP_WORDS)
            p->buf[i] = p->key;
    for (size_t i = first_stamp_word(offset); i < nw; i += STAMP_WORDS)
        p->buf[i] = stamp(p->key, offset + 8 * i);
    p->stamped_at = (int64_t)offset;
}

static uint64_t load(const unsigned char *b)
{
    uint64_t w;
    memcpy(&w, b, 8);   /* buffers need not be 8-aligned; this compiles to one load */
    return w;
}

/* Counts the bytes of `n` (1..8) that differ from the expected word; only called on a mismatch. */
static uint64_t count_bad(const unsigned char *got, uint64_t want_word, size_t n, uint64_t file_off,
                          bool *found, uint64_t *first_bad)
{
    unsigned char want[8];
    memcpy(want, &want_word, 8);
    uint64_t bad = 0;
    for (size_t k = 0; k < n; k++) {
        if (got[k] == want[k])
            continue;
        if (!*found && first_bad != NULL)
            *first_bad = file_off + k;
        *found = true;
        bad++;
    }
    return bad;
}

uint64_t iol_pattern_check(const void *buf, size_t len, uint64_t offset, uint64_t key, uint64_t *first_bad)
{
    const unsigned char *b = buf;
    size_t nw = len / 8;
    size_t next_stamp = first_stamp_word(offset);
    uint64_t bad = 0;
    bool found = false;
    size_t i = 0;
    while (i < nw) {
        /* Between stamps every word is the key: OR the differences (vectorisable, no branch per word) and
         * look word by word only if something differs. */
        size_t end = next_stamp < nw ? next_stamp : nw;
        uint64_t diff = 0;
        for (size_t k = i; k < end; k++)
            diff |= load(b + 8 * k) ^ key;
        if (diff != 0)
            for (size_t k = i; k < end; k++)
                if (load(b + 8 * k) != key)
                    bad += count_bad(b + 8 * k, key, 8, offset + 8 * k, &found, first_bad);
        i = end;
        if (i < nw) {
            uint64_t want = stamp(key, offset + 8 * i);
            if (load(b + 8 * i) != want)
                bad += count_bad(b + 8 * i, want, 8, offset + 8 * i, &found, first_bad);
            i++;
            next_stamp += STAMP_WORDS;
        }
    }
    if (len % 8 != 0)   /* a short tail (lengths should be multiples of 8, but never read past the end) */
        bad += count_bad(b + 8 * nw, iol_pattern_word(key, offset + 8 * nw), len % 8, offset + 8 * nw, &found,
                         first_bad);
    return bad;
}

/* ---- IOR's data packets (see pattern.h) ------------------------------------------------------------------ */

#define PACKET_STAMP_WORDS 512u                    /* offset/incompressible: a stamp every 4 KiB */
#define PACKET_RANDOM_MULT 0x9e37fffffffc0001ULL   /* IOR's RANDALGO_GOLDEN_RATIO_PRIME */

static const char *const packet_names[] = { "timestamp", "offset", "incompressible", "random", "iolens" };

int iol_packet_parse(const char *name)
{
    for (int t = 0; t <= IOL_PACKET_IOLENS; t++) {
        if (strcmp(name, packet_names[t]) == 0)
            return t;
        /* IOR's single letters t, o, i, r (not for iolens's own, which IOR does not know) */
        if (t != IOL_PACKET_IOLENS && name[0] == packet_names[t][0] && name[1] == '\0')
            return t;
    }
    return -1;
}

const char *iol_packet_name(enum iol_packet type)
{
    return (unsigned)type <= IOL_PACKET_IOLENS ? packet_names[type] : "?";
}

/* glibc's rand_r: three steps of its linear congruential generator, 11 + 10 + 10 bits. */
static uint32_t glibc_rand_r(uint32_t *state)
{
    uint32_t next = *state;
    next = next * 1103515245u + 12345u;
    uint32_t result = (next / 65536u) % 2048u;
    next = next * 1103515245u + 12345u;
    result = (result << 10) ^ ((next / 65536u) % 1024u);
    next = next * 1103515245u + 12345u;
    result = (result << 10) ^ ((next / 65536u) % 1024u);
    *state = next;
    return result;
}

/* IOR adds the signature as a C int to a size_t index: a negative signature is sign-extended. */
static uint64_t packet_base(uint32_t sig, uint32_t rank, size_t i)
{
    return (uint64_t)rank << 32 | ((uint64_t)(int64_t)(int32_t)sig + i);
}

static uint64_t packet_incompressible(uint32_t sig, uint32_t rank)
{
    uint32_t state = sig + rank;
    uint64_t hi = (uint64_t)glibc_rand_r(&state) << 32;
    return hi | glibc_rand_r(&state);
}

/* The word every 4 KiB of an offset or incompressible transfer: k counts from 1. */
static uint64_t packet_stamp(uint64_t item, uint32_t rank, size_t k)
{
    return (uint64_t)((uint32_t)item * (uint32_t)k) | (uint64_t)rank << 32;
}

static uint64_t packet_random_start(uint32_t sig, uint32_t rank, uint64_t item)
{
    uint32_t state = (uint32_t)(sig + rank + item);
    return glibc_rand_r(&state);
}

void iol_packet_init(struct iol_packet_buf *p, void *buf, size_t len, enum iol_packet type, uint32_t sig,
                     uint32_t rank)
{
    p->type = type;
    p->sig = sig;
    p->rank = rank;
    p->buf = buf;
    p->len = len;
    size_t nw = len / 8;
    uint64_t inc = packet_incompressible(sig, rank);
    for (size_t i = 0; i < nw; i++)
        p->buf[i] = type == IOL_PACKET_INCOMPRESSIBLE ? inc : packet_base(sig, rank, i);
}

void iol_packet_apply(struct iol_packet_buf *p, uint64_t item)
{
    size_t nw = p->len / 8;
    if (p->type == IOL_PACKET_RANDOM) {
        uint64_t x = packet_random_start(p->sig, p->rank, item);
        for (size_t i = 0; i < nw; i++) {
            x = (x * PACKET_RANDOM_MULT) >> 3;
            p->buf[i] = x;
        }
    } else if (p->type == IOL_PACKET_OFFSET || p->type == IOL_PACKET_INCOMPRESSIBLE) {
        for (size_t i = 0, k = 1; i < nw; i += PACKET_STAMP_WORDS, k++)
            p->buf[i] = packet_stamp(item, p->rank, k);
    }
}

uint64_t iol_packet_check(const void *buf, size_t len, uint64_t item, enum iol_packet type, uint32_t sig,
                          uint32_t rank, uint64_t *first_bad)
{
    const unsigned char *b = buf;
    size_t nw = len / 8;
    uint64_t bad = 0;
    bool found = false;
    uint64_t x = type == IOL_PACKET_RANDOM ? packet_random_start(sig, rank, item) : 0;
    uint64_t inc = type == IOL_PACKET_INCOMPRESSIBLE ? packet_incompressible(sig, rank) : 0;
    for (size_t i = 0; i < nw; i++) {
        uint64_t want;
        if (type == IOL_PACKET_RANDOM) {
            x = (x * PACKET_RANDOM_MULT) >> 3;
            want = x;
        } else if (type != IOL_PACKET_TIMESTAMP && i % PACKET_STAMP_WORDS == 0) {
            want = packet_stamp(item, rank, i / PACKET_STAMP_WORDS + 1);
        } else {
            want = type == IOL_PACKET_INCOMPRESSIBLE ? inc : packet_base(sig, rank, i);
        }
        if (load(b + 8 * i) != want)
            bad += count_bad(b + 8 * i, want, 8, item + 8 * i, &found, first_bad);
    }
    return bad;
}
