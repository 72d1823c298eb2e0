/* ior_order.c — which file offset a rank's k-th transfer goes to.
 *
 * Shared file: segment s, rank r, transfer j of the block lands at s*N*b + r*b + j*t (IOR's layout);
 * file per process: s*b + j*t. With -z each block's transfers are visited in a random order that is still
 * a permutation (every transfer exactly once). The permutation is computed, not stored: a keyed bijection on
 * the next power of two above the transfer count, walked until it lands inside the range (cycle walking), so
 * a 100 GiB block of 4 KiB transfers needs no 200 MB offset table. Write and read use the same key, so a
 * read visits the same order the write did, as IOR does with the same seed. */
#include "ior_internal.h"
#include "../common/mix.h"
#include "../common/permute.h"


static void order_set_segment(struct ior_order *o)
{
    o->perm_key = iol_mix64(o->seed ^ iol_mix64((uint64_t)o->rank * 0x9e3779b97f4a7c15ULL + o->seg + 1));
}

void ior_order_init(struct ior_order *o, const struct ior_cfg *cfg, int nranks, int rank, uint64_t total,
                    uint64_t start_pair)
{
    o->xfer = cfg->xfer;
    o->block = cfg->block;
    o->xfers_per_block = cfg->block / cfg->xfer;
    o->nranks = nranks;
    o->fpp = cfg->fpp;
    o->random = cfg->random;
    /* --random-offset-seed, else -G: the same seed gives a read the order of its write */
    o->seed = (uint64_t)(cfg->random_offset_seed >= 0 ? cfg->random_offset_seed : cfg->seed);
    o->rank = rank;
    o->total = total;
    o->k = start_pair;
    o->bits = iol_permute_bits(o->random >= 2 ? total : o->xfers_per_block);
    if (total) start_pair %= total;   /* a wear-out after repeated passes (-O minTimeDuration) */
    o->wrap = total;
    o->done = start_pair;
    o->seg = start_pair / o->xfers_per_block;
    o->j = start_pair % o->xfers_per_block;
    order_set_segment(o);
    if (o->random >= 2) o->perm_key = iol_mix64(o->seed ^ iol_mix64((uint64_t)rank * 0x9e3779b97f4a7c15ULL));
}

void ior_order_wrap(struct ior_order *o, uint64_t pass)
{
    if (pass > 0 && pass <= o->total) o->wrap = pass;
}

uint64_t ior_order_next(struct ior_order *o)
{
    if (o->done == o->wrap) {   /* a new pass from the first transfer (-O minTimeDuration) */
        o->done = 0;
        o->k = 0;
        o->seg = 0;
        o->j = 0;
        if (o->random == 1) order_set_segment(o);
    }
    o->done++;
    if (o->random >= 2) {
        /* One permutation over all of the rank's transfers (IOR's -z -z, the IO500 random-read phase). */
        uint64_t p = iol_permute(o->k++, o->total, o->bits, o->perm_key);
        uint64_t seg = p / o->xfers_per_block, j = p % o->xfers_per_block;
        return (o->fpp ? seg * o->block : seg * (uint64_t)o->nranks * o->block + (uint64_t)o->rank * o->block) +
               j * o->xfer;
    }
    uint64_t j = o->random ? iol_permute(o->j, o->xfers_per_block, o->bits, o->perm_key) : o->j;
    uint64_t base = o->fpp ? o->seg * o->block
                           : o->seg * (uint64_t)o->nranks * o->block + (uint64_t)o->rank * o->block;
    if (++o->j == o->xfers_per_block) {
        o->j = 0;
        o->seg++;
        if (o->random) order_set_segment(o);
    }
    return base + j * o->xfer;
}
