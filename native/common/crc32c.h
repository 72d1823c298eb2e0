/* crc32c.h — CRC-32C (Castagnoli, the iSCSI/ext4/btrfs checksum), used to verify data blocks.
 *
 * On x86-64 CPUs with SSE4.2 the crc32 instruction is used, on three interleaved streams for long buffers;
 * elsewhere a table-driven (slicing-by-8) routine. Both give the same values. */
#ifndef IOL_CRC32C_H
#define IOL_CRC32C_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* CRC-32C of buf[0..len), continuing from crc (0 to start). The usual initial and final inversions are done
 * inside, so checksums chain: iol_crc32c(iol_crc32c(0, a, n), b, m) == iol_crc32c(0, a||b, n + m), and
 * iol_crc32c(0, "123456789", 9) == 0xE3069283. Thread-safe. */
uint32_t iol_crc32c(uint32_t crc, const void *buf, size_t len);

/* The same, always with the portable table-driven code (for tests and comparisons). */
uint32_t iol_crc32c_sw(uint32_t crc, const void *buf, size_t len);

/* Whether iol_crc32c uses the CPU's crc32 instruction on this machine. */
bool iol_crc32c_has_hw(void);

#endif
