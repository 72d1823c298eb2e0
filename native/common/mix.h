/* mix.h — a 64-bit mixing function for deriving keys and seeds (splitmix64's finalizer). It is a bijection,
 * so distinct inputs give distinct outputs, and it maps 0 to 0. */
#ifndef IOL_MIX_H
#define IOL_MIX_H
#include <stdint.h>

static inline uint64_t iol_mix64(uint64_t x)
{
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebULL;
    x ^= x >> 31;
    return x;
}

#endif
