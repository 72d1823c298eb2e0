/* posix_ops.h — the posix backend's file and namespace operations, shared by the backends that differ from
 * it only in how they move data (pvsync2, io_uring, libaio): they open, sync, evict and stat files the same
 * way, so they use the same code and give the same messages. Each ignores ctx (posix_open stores it in f). */
#ifndef IOL_POSIX_OPS_H
#define IOL_POSIX_OPS_H
#include "backend.h"

int iol_posix_open(struct iol_bctx *ctx, struct iol_file *f, const char *path, int flags, mode_t mode,
                   struct iol_err *err);
int iol_posix_close(struct iol_bctx *ctx, struct iol_file *f, struct iol_err *err);
int iol_posix_fsync(struct iol_bctx *ctx, struct iol_file *f, struct iol_err *err);
/* Bytes of [off, off + len) of an open file that are in the page cache (mincore); 0 or an errno. */
int iol_posix_resident(int fd, uint64_t off, uint64_t len, uint64_t *out);
int iol_posix_evict(struct iol_bctx *ctx, struct iol_file *f, int *evicted, struct iol_err *err);
int iol_posix_stat(struct iol_bctx *ctx, const char *path, struct stat *st, struct iol_err *err);
int iol_posix_unlink(struct iol_bctx *ctx, const char *path, struct iol_err *err);
int iol_posix_mkdir(struct iol_bctx *ctx, const char *path, mode_t mode, struct iol_err *err);
int iol_posix_rmdir(struct iol_bctx *ctx, const char *path, struct iol_err *err);

/* A short transfer's remainder starts at the first byte not moved. With O_DIRECT that start must be aligned
 * to the device's block, at least 512 bytes; a read that ended off that alignment ended at the end of the
 * file (a direct read is cut short only there), and asking again would only fail with EINVAL. So such a
 * read is complete, short, as a buffered one at EOF is. */
static inline int iol_direct_remainder_impossible(const struct iol_file *f, const void *buf, uint64_t offset)
{
    return (f->flags & IOL_O_DIRECT) && (((uintptr_t)buf | (uintptr_t)offset) & 511u) != 0;
}

#endif
