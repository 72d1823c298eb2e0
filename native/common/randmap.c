/* randmap.c — see randmap.h. Bits beyond a level's count in its last word are kept set, so a word is "full"
 * exactly when it is all ones and a search never returns a block past the end. */
#include "randmap.h"

#include <stdlib.h>
#include <string.h>

static uint64_t words_of(uint64_t bits) { return (bits + 63) / 64; }

static void set_padding(struct iol_randmap *m, int lv)
{
    uint64_t tail = m->nbits[lv] % 64;
    if (tail) m->level[lv][m->nbits[lv] / 64] |= ~0ULL << tail;
}

int iol_randmap_init(struct iol_randmap *m, uint64_t n)
{
    memset(m, 0, sizeof *m);
    m->n = n ? n : 1;
    uint64_t bits = m->n;
    for (int lv = 0; lv < IOL_RANDMAP_LEVELS; lv++) {
        m->nbits[lv] = bits;
        m->level[lv] = calloc((size_t)words_of(bits), sizeof(uint64_t));
        m->nlevels = lv + 1;
        if (!m->level[lv]) return -1;
        if (words_of(bits) == 1) break;   /* the top: one word */
        bits = words_of(bits);
    }
    iol_randmap_reset(m);
    return 0;
}

void iol_randmap_free(struct iol_randmap *m)
{
    for (int lv = 0; lv < m->nlevels; lv++) free(m->level[lv]);
    memset(m, 0, sizeof *m);
}

void iol_randmap_reset(struct iol_randmap *m)
{
    for (int lv = 0; lv < m->nlevels; lv++) {
        memset(m->level[lv], 0, (size_t)words_of(m->nbits[lv]) * sizeof(uint64_t));
        set_padding(m, lv);
    }
}

int iol_randmap_isset(const struct iol_randmap *m, uint64_t b)
{
    return b >= m->n || (m->level[0][b / 64] >> (b % 64) & 1);
}

static void set_bit(struct iol_randmap *m, uint64_t b)
{
    for (int lv = 0; lv < m->nlevels; lv++) {
        uint64_t *w = &m->level[lv][b / 64];
        *w |= 1ULL << (b % 64);
        if (*w != ~0ULL) return;   /* the word has room: the levels above stay as they are */
        b /= 64;                   /* the word is full: so is its bit one level up */
    }
}

/* The first clear bit at or after pos at level lv, or NONE: in pos's own word, else in the first word after
 * it that the level above says is not full. */
static uint64_t first_clear_from(const struct iol_randmap *m, int lv, uint64_t pos)
{
    if (pos >= m->nbits[lv]) return IOL_RANDMAP_NONE;
    uint64_t w = pos / 64;
    uint64_t clear = ~m->level[lv][w] & (~0ULL << (pos % 64));
    if (!clear) {
        if (lv + 1 >= m->nlevels) return IOL_RANDMAP_NONE;
        w = first_clear_from(m, lv + 1, w + 1);
        if (w == IOL_RANDMAP_NONE) return IOL_RANDMAP_NONE;
        clear = ~m->level[lv][w];
    }
    return w * 64 + (uint64_t)__builtin_ctzll(clear);
}

uint64_t iol_randmap_next_free(const struct iol_randmap *m, uint64_t b)
{
    uint64_t next = b + 1 >= m->n ? 0 : b + 1;
    uint64_t f = first_clear_from(m, 0, next);
    if (f == IOL_RANDMAP_NONE && next) f = first_clear_from(m, 0, 0);
    return f;
}

uint64_t iol_randmap_claim(struct iol_randmap *m, uint64_t b)
{
    if (b >= m->n) b = m->n - 1;
    if (iol_randmap_isset(m, b)) b = iol_randmap_next_free(m, b);
    if (b != IOL_RANDMAP_NONE) set_bit(m, b);
    return b;
}

uint64_t iol_randmap_claim_run(struct iol_randmap *m, uint64_t b, uint64_t want, uint64_t seg, uint64_t *got)
{
    uint64_t first = iol_randmap_claim(m, b);
    *got = 0;
    if (first == IOL_RANDMAP_NONE) return first;
    uint64_t end = seg ? (first / seg + 1) * seg : m->n;
    if (end > m->n) end = m->n;
    uint64_t k = 1;
    while (k < want && first + k < end && !iol_randmap_isset(m, first + k)) set_bit(m, first + k++);
    *got = k;
    return first;
}
