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

/* ---- IOR's data packets (-l / dataPacketType), byte for byte -------------------------------------------
 *
 * What IOR 4 writes, so a file IOR wrote passes iolens's check and the other way round. Unlike the pattern
 * above, a packet is laid out relative to the start of each transfer, not to the file: reading it back needs
 * the transfer size it was written with. `sig` is IOR's time stamp signature (-G, as a 32-bit value), `rank`
 * the rank whose data it is, `item` the transfer's file offset. Words are in native byte order, as IOR's.
 *   timestamp:      word i of every transfer = rank << 32 | (sig + i)              (the same in every transfer)
 *   offset:         as timestamp, but word 512k (every 4 KiB) = rank << 32 | (uint32)(item * (k + 1))
 *   incompressible: every word = two rand_r draws seeded with sig + rank; words 512k as for offset
 *   random:         word i = x_i, x_0 = rand_r(sig + rank + item), x_i = (x_{i-1} * 0x9e37fffffffc0001) >> 3
 * rand_r is glibc's algorithm (what IOR gets on Linux), computed here, so the bytes do not depend on the libc. */
enum iol_packet {
    IOL_PACKET_TIMESTAMP,
    IOL_PACKET_OFFSET,
    IOL_PACKET_INCOMPRESSIBLE,
    IOL_PACKET_RANDOM,
    IOL_PACKET_IOLENS,     /* the stamped pattern above (iol_pattern_*) */
};

/* "timestamp", "offset", "incompressible", "random", their first letters, or "iolens"; -1 if none. */
int iol_packet_parse(const char *name);
const char *iol_packet_name(enum iol_packet type);

struct iol_packet_buf {
    enum iol_packet type;
    uint32_t sig;
    uint32_t rank;
    uint64_t *buf;
    size_t len;             /* bytes, multiple of 8 */
};

/* Fills buf with the packet's words that do not depend on the offset (IOR fills its buffer once a test). */
void iol_packet_init(struct iol_packet_buf *p, void *buf, size_t len, enum iol_packet type, uint32_t sig,
                     uint32_t rank);
/* Makes the buffer hold exactly the transfer for file offset `item`. */
void iol_packet_apply(struct iol_packet_buf *p, uint64_t item);
/* Bytes of buf (a transfer read from offset `item`) that differ from the packet; *first_bad gets the file
 * offset of the first one (untouched when none). */
uint64_t iol_packet_check(const void *buf, size_t len, uint64_t item, enum iol_packet type, uint32_t sig,
                          uint32_t rank, uint64_t *first_bad);

#endif
