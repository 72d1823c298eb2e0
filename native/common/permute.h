/* permute.h — a random permutation of [0, n) computed one element at a time, with no table: a keyed
 * bijection on the next power of two above n, walked until it lands inside the range (cycle walking). Used
 * for random visiting orders (ior -z, mdtest -R) that must still touch every element exactly once. */
#ifndef IOL_PERMUTE_H
#define IOL_PERMUTE_H
#include <stdint.h>

/* Bits of the smallest power of two >= n. */
unsigned iol_permute_bits(uint64_t n);
/* The j-th element (j < n) of the permutation of [0, n) selected by key; bits = iol_permute_bits(n). */
uint64_t iol_permute(uint64_t j, uint64_t n, unsigned bits, uint64_t key);

#endif
