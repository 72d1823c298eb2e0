/* randmap.h — fio's random map: which blocks of a region a random job has done in this pass, so that every
 * block is done once per pass. As fio does, a random draw that lands on a done block takes the next free
 * block after it (wrapping at the end): late in a pass the draws therefore run into stretches of neighbouring
 * free blocks, and that clustering is part of what reaches the device (neighbouring writes merge into one
 * request before an fsync). A plain random permutation visits the same blocks but not in runs, so a
 * fio job's device work would differ.
 *
 * A bitmap of n bits with summary levels above it (a bit per full word of the level below), so the next free
 * block is found in O(log64 n) words whatever the fill. Memory: n/8 bytes and ~1.6% more, as fio's map. */
#ifndef IOL_RANDMAP_H
#define IOL_RANDMAP_H
#include <stdint.h>

#define IOL_RANDMAP_LEVELS 12   /* 64^11 > 2^64: enough levels for any n */
#define IOL_RANDMAP_NONE UINT64_MAX

struct iol_randmap {
    uint64_t n;
    int nlevels;
    uint64_t nbits[IOL_RANDMAP_LEVELS];   /* bits of each level: n, then the words of the level below */
    uint64_t *level[IOL_RANDMAP_LEVELS];
};

/* An empty map of n >= 1 blocks; 0, or -1 when out of memory (the map is then safe to free). */
int iol_randmap_init(struct iol_randmap *m, uint64_t n);
void iol_randmap_free(struct iol_randmap *m);
/* Every block free again (a new pass). */
void iol_randmap_reset(struct iol_randmap *m);
int iol_randmap_isset(const struct iol_randmap *m, uint64_t b);
/* The first free block after b, wrapping to the start; IOL_RANDMAP_NONE when every block is done. */
uint64_t iol_randmap_next_free(const struct iol_randmap *m, uint64_t b);
/* fio's choice for a draw b < n: b itself when free, else the next free block after it; marks the block
 * done and returns it, or IOL_RANDMAP_NONE when the pass is complete. */
uint64_t iol_randmap_claim(struct iol_randmap *m, uint64_t b);

/* The same for an I/O of up to `want` blocks: claims the chosen block and the free blocks right after it, at
 * most `want`, stopping at the first done one (as fio shortens an I/O that would cover a done block) and at
 * a multiple of `seg` (a file's end when the region is several files; 0 = none). Returns the first block
 * (IOL_RANDMAP_NONE when the pass is complete) and the blocks claimed in *got (>= 1). */
uint64_t iol_randmap_claim_run(struct iol_randmap *m, uint64_t b, uint64_t want, uint64_t seg, uint64_t *got);

#endif
