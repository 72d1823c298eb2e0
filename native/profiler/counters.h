/* counters.h — the counters of a log, each declared once: X(NAME, merge). One list drives the enum that
 * indexes a record's values, the NAMES chunk the reader takes names and merge kinds from, and the record
 * sizes. The order is the order of values[] in FILE_REC / FILE_DATA / PROC_REC records (docs/profile-log.md). */
#ifndef IOL_PROF_COUNTERS_H
#define IOL_PROF_COUNTERS_H

#define IOL_SIZE_BUCKETS(X, KIND) \
    X(POSIX_SIZE_##KIND##_0_100, sum) X(POSIX_SIZE_##KIND##_100_1K, sum) X(POSIX_SIZE_##KIND##_1K_10K, sum) \
    X(POSIX_SIZE_##KIND##_10K_100K, sum) X(POSIX_SIZE_##KIND##_100K_1M, sum) X(POSIX_SIZE_##KIND##_1M_4M, sum) \
    X(POSIX_SIZE_##KIND##_4M_10M, sum) X(POSIX_SIZE_##KIND##_10M_100M, sum) \
    X(POSIX_SIZE_##KIND##_100M_1G, sum) X(POSIX_SIZE_##KIND##_1G_PLUS, sum)

/* The four most common values of a kind: the four values, then their four counts. */
#define IOL_TOP4(X, SET, WHAT) \
    X(POSIX_##SET##1_##WHAT, topv) X(POSIX_##SET##2_##WHAT, topv) X(POSIX_##SET##3_##WHAT, topv) \
    X(POSIX_##SET##4_##WHAT, topv) X(POSIX_##SET##1_COUNT, topc) X(POSIX_##SET##2_COUNT, topc) \
    X(POSIX_##SET##3_COUNT, topc) X(POSIX_##SET##4_COUNT, topc)

/* A (thread, file) pair has two records: FILE_REC, what any call on the file counts (opens, stats, syncs,
 * namespace operations, open/close times, errors), made on the pair's first call; and FILE_DATA, what its
 * reads and writes count, made on the pair's first read or write. A file that is only created, stat'ed and
 * removed (a metadata-heavy job's millions of them) then costs 248 bytes of log, not 808.
 *
 * Two layers, as Darshan's modules: POSIX_* counts the calls on descriptors (open, read, pwrite, lseek,
 * fsync, ...), STDIO_* the calls on streams (fopen, fwrite, fprintf, fseek, fflush, ...), each with Darshan's
 * meaning. A call counts in one layer only: a stream's buffered data reaches the file through the C
 * library's own internal calls, which the runtime never sees, so POSIX + STDIO is the program's I/O once. */
#define IOL_FILE_COUNTERS(X) \
    X(POSIX_OPENS, sum) X(POSIX_FILENOS, sum) X(POSIX_DUPS, sum) X(POSIX_SEEKS, sum) X(POSIX_STATS, sum) \
    X(POSIX_FSYNCS, sum) X(POSIX_FDSYNCS, sum) X(POSIX_MMAPS, sum) \
    X(POSIX_RENAME_SOURCES, sum) X(POSIX_RENAME_TARGETS, sum) X(POSIX_UNLINKS, sum) X(POSIX_TRUNCATES, sum) \
    X(POSIX_F_OPEN_START_TIMESTAMP, min) X(POSIX_F_CLOSE_START_TIMESTAMP, min) \
    X(POSIX_F_OPEN_END_TIMESTAMP, max) X(POSIX_F_CLOSE_END_TIMESTAMP, max) X(POSIX_F_META_TIME, sum) \
    X(POSIX_O_DIRECT_OPENS, sum) X(POSIX_O_SYNC_OPENS, sum) X(POSIX_O_APPEND_OPENS, sum) \
    X(STDIO_OPENS, sum) X(STDIO_FDOPENS, sum) X(STDIO_SEEKS, sum) X(STDIO_FLUSHES, sum) \
    X(STDIO_F_OPEN_START_TIMESTAMP, min) X(STDIO_F_CLOSE_START_TIMESTAMP, min) \
    X(STDIO_F_OPEN_END_TIMESTAMP, max) X(STDIO_F_CLOSE_END_TIMESTAMP, max) X(STDIO_F_META_TIME, sum) \
    X(ERRORS, sum)

#define IOL_FILE_DATA_COUNTERS(X) \
    X(POSIX_READS, sum) X(POSIX_WRITES, sum) X(POSIX_BYTES_READ, sum) X(POSIX_BYTES_WRITTEN, sum) \
    X(POSIX_MAX_BYTE_READ, max) X(POSIX_MAX_BYTE_WRITTEN, max) \
    X(POSIX_CONSEC_READS, sum) X(POSIX_CONSEC_WRITES, sum) X(POSIX_SEQ_READS, sum) X(POSIX_SEQ_WRITES, sum) \
    X(POSIX_RW_SWITCHES, sum) X(POSIX_MEM_NOT_ALIGNED, sum) X(POSIX_FILE_NOT_ALIGNED, sum) \
    IOL_SIZE_BUCKETS(X, READ) IOL_SIZE_BUCKETS(X, WRITE) \
    IOL_TOP4(X, ACCESS, ACCESS) IOL_TOP4(X, STRIDE, STRIDE) \
    X(POSIX_F_READ_START_TIMESTAMP, min) X(POSIX_F_WRITE_START_TIMESTAMP, min) \
    X(POSIX_F_READ_END_TIMESTAMP, max) X(POSIX_F_WRITE_END_TIMESTAMP, max) \
    X(POSIX_F_READ_TIME, sum) X(POSIX_F_WRITE_TIME, sum) \
    X(POSIX_F_MAX_READ_TIME, max) X(POSIX_F_MAX_WRITE_TIME, max) \
    X(STDIO_READS, sum) X(STDIO_WRITES, sum) X(STDIO_BYTES_READ, sum) X(STDIO_BYTES_WRITTEN, sum) \
    X(STDIO_MAX_BYTE_READ, max) X(STDIO_MAX_BYTE_WRITTEN, max) \
    X(STDIO_F_READ_START_TIMESTAMP, min) X(STDIO_F_WRITE_START_TIMESTAMP, min) \
    X(STDIO_F_READ_END_TIMESTAMP, max) X(STDIO_F_WRITE_END_TIMESTAMP, max) \
    X(STDIO_F_READ_TIME, sum) X(STDIO_F_WRITE_TIME, sum)

#define IOL_PROC_COUNTERS(X) \
    X(OPENS, sum) X(READS, sum) X(WRITES, sum) X(BYTES_READ, sum) X(BYTES_WRITTEN, sum) X(STATS, sum) \
    X(SEEKS, sum) X(FSYNCS, sum) \
    X(MKDIRS, sum) X(RMDIRS, sum) X(UNLINKS, sum) X(RENAMES, sum) X(READDIRS, sum) X(OPENDIRS, sum) \
    X(ACCESSES, sum) X(TRUNCATES, sum) X(FALLOCATES, sum) X(CHMODS, sum) X(LINKS, sum) \
    X(MMAPS, sum) X(MUNMAPS, sum) X(MSYNCS, sum) X(COPY_FILE_RANGES, sum) X(SENDFILES, sum) \
    X(FORKS, sum) X(EXECS, sum) X(SPAWNS, sum) \
    X(READ_TIME, sum) X(WRITE_TIME, sum) X(META_TIME, sum) X(ERRORS, sum) X(UNTRACKED_OPS, sum) \
    X(MMAPS_UNTRACKED, sum) X(AIOS, sum)

/* Trace op numbers (TRACE records' `op`): fixed by the document, never renumbered. */
#define IOL_TRACE_OPS(X) \
    X(OPEN, 1) X(CLOSE, 2) X(READ, 3) X(WRITE, 4) X(PREAD, 5) X(PWRITE, 6) X(READV, 7) X(WRITEV, 8) \
    X(PREADV, 9) X(PWRITEV, 10) X(LSEEK, 11) X(FSYNC, 12) X(FDATASYNC, 13) X(STAT, 14) X(FSTAT, 15) \
    X(LSTAT, 16) X(STATX, 17) X(FSTATAT, 18) X(ACCESS, 19) X(UNLINK, 20) X(MKDIR, 21) X(RMDIR, 22) \
    X(RENAME, 23) X(OPENDIR, 24) X(READDIR, 25) X(CLOSEDIR, 26) X(TRUNCATE, 27) X(FTRUNCATE, 28) \
    X(FALLOCATE, 29) X(MMAP, 30) X(MUNMAP, 31) X(MSYNC, 32) X(DUP, 33) X(FOPEN, 34) X(FCLOSE, 35) \
    X(FREAD, 36) X(FWRITE, 37) X(FSEEK, 38) X(FFLUSH, 39) X(FGETS, 40) X(FPUTS, 41) X(FPRINTF, 42) \
    X(FSCANF, 43) X(COPY_FILE_RANGE, 44) X(SENDFILE, 45) X(SYNC_FILE_RANGE, 46) X(GETDENTS, 47) \
    X(FORK, 48) X(EXEC, 49) X(FTELL, 50) X(SPAWN, 51) X(CHMOD, 52) X(LINK, 53) X(MKSTEMP, 54) \
    X(TMPFILE, 55) X(REWIND, 56) X(FSETPOS, 57) X(FGETPOS, 58) X(AIO_READ, 59) X(AIO_WRITE, 60) \
    X(LIO_LISTIO, 61) X(AIO_FSYNC, 62) X(AIO_ERROR, 63) X(AIO_SUSPEND, 64) X(AIO_CANCEL, 65) X(AIO_RETURN, 66)

enum iol_file_counter {
#define X(name, merge) IOL_F_##name,
    IOL_FILE_COUNTERS(X)
#undef X
    IOL_NFILE
};

enum iol_file_data_counter {
#define X(name, merge) IOL_D_##name,
    IOL_FILE_DATA_COUNTERS(X)
#undef X
    IOL_NDATA
};

enum iol_proc_counter {
#define X(name, merge) IOL_P_##name,
    IOL_PROC_COUNTERS(X)
#undef X
    IOL_NPROC
};

enum iol_op {
#define X(name, num) IOL_OP_##name = num,
    IOL_TRACE_OPS(X)
#undef X
};

/* The NAMES chunk's text: "SECTION NAME MERGE" per line, built by the preprocessor from the lists above. */
extern const char iol_names_text[];
extern const unsigned iol_names_len;

#endif
