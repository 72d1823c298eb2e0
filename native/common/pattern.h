/* pattern.h — the data pattern written by the benchmarks and checked on read-back.
 *
 * Every byte written is a function of (seed, rank, file offset): each 8-byte word holds a key derived from
 * (seed, rank) with no zero byte, and the word at every 512-byte boundary of the file holds the key mixed
 * with its absolute offset (a "stamp"). So a changed byte anywhere, data written by another rank or run,
 * and data found at the wrong offset are all detected, whatever transfer sizes were used to write and read.
 * Offsets and lengths must be multiples of 8.
 *
 * Refilling a whole buffer for each transfer would cost a memory pass per I/O; struct iol_pattern keeps a
 * buffer filled with the key and moves only the stamps (len/512 words) for each new offset. */
#ifndef IOL_PATTERN_H
#define IOL_PATTERN_H
#include <stddef.h>
#include <stdint.h>

#define IOL_PATTERN_STAMP 512u

uint64_t iol_pattern_key(uint64_t seed, int64_t rank);
uint64_t iol_pattern_word(uint64_t key, uint64_t offset);   /* expected word at an 8-aligned file offset */

struct iol_pattern {
    uint64_t key;
    uint64_t *buf;
    size_t len;             /* bytes, multiple of 8 */
    int64_t stamped_at;     /* file offset the stamps currently describe; -1 = none */
};

/* Fills buf (len bytes) with the key. */
void iol_pattern_init(struct iol_pattern *p, void *buf, size_t len, uint64_t key);
/* Makes the buffer hold exactly the pattern for file bytes [offset, offset+len). */
void iol_pattern_apply(struct iol_pattern *p, uint64_t offset);

/* Checks buf against the pattern for file bytes [offset, offset+len). Returns the number of bytes that
 * differ; *first_bad gets the file offset of the first one (untouched when none). */
uint64_t iol_pattern_check(const void *buf, size_t len, uint64_t offset, uint64_t key, uint64_t *first_bad);

#endif
