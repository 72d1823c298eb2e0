/* permute.c — see permute.h. */
#include "permute.h"

#include "mix.h"

/* Each step (xor with a key, multiply by an odd number, xor-shift right) is a bijection on 2^bits values. */
static uint64_t keyed_bijection(uint64_t x, unsigned bits, uint64_t key)
{
    uint64_t mask = bits >= 64 ? ~0ULL : ((1ULL << bits) - 1);
    unsigned shift = bits / 2 + 1;
    for (int round = 0; round < 3; round++) {
        uint64_t k = iol_mix64(key + (uint64_t)round);
        x = (x ^ k) & mask;
        x = (x * (k | 1)) & mask;
        x ^= x >> shift;
    }
    return x & mask;
}

unsigned iol_permute_bits(uint64_t n)
{
    unsigned bits = 0;
    while (bits < 64 && (1ULL << bits) < n) bits++;
    return bits;
}

uint64_t iol_permute(uint64_t j, uint64_t n, unsigned bits, uint64_t key)
{
    uint64_t y = keyed_bijection(j, bits, key);
    while (y >= n) y = keyed_bijection(y, bits, key);
    return y;
}
