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
