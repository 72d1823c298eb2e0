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

/* Modules: the layers above POSIX (docs/profile-log.md, "Modules"). Each has a fixed id (the MODULE_REC
 * chunk header's `module`), a section of the NAMES chunk named after it, and its own counter list. Id 5
 * STDIO is reserved for the layer that comes next. */
#define IOL_MODULES(X) \
    X(MPIIO, 1, IOL_MPIIO_COUNTERS) X(H5F, 2, IOL_H5F_COUNTERS) X(H5D, 3, IOL_H5D_COUNTERS) \
    X(PNETCDF_FILE, 4, IOL_PNETCDF_FILE_COUNTERS) X(PNETCDF_VAR, 6, IOL_PNETCDF_VAR_COUNTERS) \
    X(SPREAD, 7, IOL_SPREAD_COUNTERS)
#define IOL_MODULE_MAX 8 /* ids are below this */

/* MPI-IO (wrap_mpiio.c): Darshan's MPIIO counter names with Darshan's meanings, then iolens's own. One record
 * per (thread, file) that the thread opened with MPI_File_open. */
/* Darshan's ten access size buckets of a module: PREFIX_SIZE_KIND_AGG_0_100 ... _1G_PLUS. */
#define IOL_AGG_SIZE_BUCKETS(X, P, KIND) \
    X(P##_SIZE_##KIND##_AGG_0_100, sum) X(P##_SIZE_##KIND##_AGG_100_1K, sum) \
    X(P##_SIZE_##KIND##_AGG_1K_10K, sum) X(P##_SIZE_##KIND##_AGG_10K_100K, sum) \
    X(P##_SIZE_##KIND##_AGG_100K_1M, sum) X(P##_SIZE_##KIND##_AGG_1M_4M, sum) \
    X(P##_SIZE_##KIND##_AGG_4M_10M, sum) X(P##_SIZE_##KIND##_AGG_10M_100M, sum) \
    X(P##_SIZE_##KIND##_AGG_100M_1G, sum) X(P##_SIZE_##KIND##_AGG_1G_PLUS, sum)
#define IOL_MPIIO_SIZE_BUCKETS(X, KIND) IOL_AGG_SIZE_BUCKETS(X, MPIIO, KIND)
/* Darshan's timestamps and times of a module that reads and writes: PREFIX_F_OPEN_START_TIMESTAMP ... */
#define IOL_RW_TIMES(X, P) \
    X(P##_F_OPEN_START_TIMESTAMP, min) X(P##_F_READ_START_TIMESTAMP, min) \
    X(P##_F_WRITE_START_TIMESTAMP, min) X(P##_F_CLOSE_START_TIMESTAMP, min) \
    X(P##_F_OPEN_END_TIMESTAMP, max) X(P##_F_READ_END_TIMESTAMP, max) \
    X(P##_F_WRITE_END_TIMESTAMP, max) X(P##_F_CLOSE_END_TIMESTAMP, max) \
    X(P##_F_READ_TIME, sum) X(P##_F_WRITE_TIME, sum) X(P##_F_META_TIME, sum) \
    X(P##_F_MAX_READ_TIME, max) X(P##_F_MAX_WRITE_TIME, max)

#define IOL_MPIIO_COUNTERS(X) \
    X(MPIIO_INDEP_OPENS, sum) X(MPIIO_COLL_OPENS, sum) X(MPIIO_INDEP_READS, sum) X(MPIIO_INDEP_WRITES, sum) \
    X(MPIIO_COLL_READS, sum) X(MPIIO_COLL_WRITES, sum) X(MPIIO_SPLIT_READS, sum) X(MPIIO_SPLIT_WRITES, sum) \
    X(MPIIO_NB_READS, sum) X(MPIIO_NB_WRITES, sum) X(MPIIO_SYNCS, sum) X(MPIIO_HINTS, sum) X(MPIIO_VIEWS, sum) \
    X(MPIIO_MODE, max) X(MPIIO_BYTES_READ, sum) X(MPIIO_BYTES_WRITTEN, sum) X(MPIIO_RW_SWITCHES, sum) \
    X(MPIIO_MAX_READ_TIME_SIZE, max) X(MPIIO_MAX_WRITE_TIME_SIZE, max) \
    IOL_MPIIO_SIZE_BUCKETS(X, READ) IOL_MPIIO_SIZE_BUCKETS(X, WRITE) \
    X(MPIIO_ACCESS1_ACCESS, topv) X(MPIIO_ACCESS2_ACCESS, topv) X(MPIIO_ACCESS3_ACCESS, topv) \
    X(MPIIO_ACCESS4_ACCESS, topv) X(MPIIO_ACCESS1_COUNT, topc) X(MPIIO_ACCESS2_COUNT, topc) \
    X(MPIIO_ACCESS3_COUNT, topc) X(MPIIO_ACCESS4_COUNT, topc) \
    IOL_RW_TIMES(X, MPIIO) \
    X(MPIIO_CLOSES, sum) X(MPIIO_SET_SIZES, sum) X(MPIIO_PREALLOCATES, sum) X(MPIIO_SPLIT_ENDS, sum) \
    X(MPIIO_OPEN_COMM_SIZE, max) X(MPIIO_ERRORS, sum) X(MPIIO_DELETES, sum) X(MPIIO_SET_INFOS, sum) \
    X(MPIIO_GET_INFOS, sum)

/* HDF5 (wrap_hdf5.c): Darshan's H5F and H5D counter names with Darshan's meanings, then iolens's own. H5F: one
 * record per (thread, file) the thread opened or created with H5Fopen/H5Fcreate (the file's own id). H5D: one
 * record per (thread, dataset); a dataset's record is named "FILE:DATASET" (Darshan's record name), an entry
 * of the FILES chunk flagged IOLP_FILE_OBJECT. */
#define IOL_H5F_COUNTERS(X) \
    X(H5F_OPENS, sum) X(H5F_FLUSHES, sum) X(H5F_USE_MPIIO, max) \
    X(H5F_F_OPEN_START_TIMESTAMP, min) X(H5F_F_CLOSE_START_TIMESTAMP, min) \
    X(H5F_F_OPEN_END_TIMESTAMP, max) X(H5F_F_CLOSE_END_TIMESTAMP, max) X(H5F_F_META_TIME, sum) \
    X(H5F_CREATES, sum) X(H5F_OPENS_RDWR, sum) X(H5F_OPENS_SWMR, sum) X(H5F_CLOSES, sum) X(H5F_ERRORS, sum) \
    X(H5F_ALIGNMENT, max) X(H5F_ALIGN_THRESHOLD, max)

#define IOL_H5D_COUNTERS(X) \
    X(H5D_OPENS, sum) X(H5D_READS, sum) X(H5D_WRITES, sum) X(H5D_FLUSHES, sum) X(H5D_BYTES_READ, sum) \
    X(H5D_BYTES_WRITTEN, sum) X(H5D_RW_SWITCHES, sum) X(H5D_REGULAR_HYPERSLAB_SELECTS, sum) \
    X(H5D_IRREGULAR_HYPERSLAB_SELECTS, sum) X(H5D_POINT_SELECTS, sum) X(H5D_MAX_READ_TIME_SIZE, max) \
    X(H5D_MAX_WRITE_TIME_SIZE, max) IOL_AGG_SIZE_BUCKETS(X, H5D, READ) IOL_AGG_SIZE_BUCKETS(X, H5D, WRITE) \
    X(H5D_ACCESS1_ACCESS, topv) X(H5D_ACCESS2_ACCESS, topv) X(H5D_ACCESS3_ACCESS, topv) \
    X(H5D_ACCESS4_ACCESS, topv) X(H5D_ACCESS1_COUNT, topc) X(H5D_ACCESS2_COUNT, topc) \
    X(H5D_ACCESS3_COUNT, topc) X(H5D_ACCESS4_COUNT, topc) \
    X(H5D_DATASPACE_NDIMS, max) X(H5D_DATASPACE_NPOINTS, max) X(H5D_DATATYPE_SIZE, max) \
    X(H5D_CHUNK_SIZE_D1, max) X(H5D_CHUNK_SIZE_D2, max) X(H5D_CHUNK_SIZE_D3, max) X(H5D_CHUNK_SIZE_D4, max) \
    X(H5D_CHUNK_SIZE_D5, max) X(H5D_USE_MPIIO_COLLECTIVE, max) X(H5D_USE_DEPRECATED, max) \
    IOL_RW_TIMES(X, H5D) \
    X(H5D_CREATES, sum) X(H5D_CLOSES, sum) X(H5D_ALL_SELECTS, sum) X(H5D_COLL_READS, sum) \
    X(H5D_COLL_WRITES, sum) X(H5D_CHUNKED, max) X(H5D_ERRORS, sum)

/* PnetCDF (wrap_pnetcdf.c): Darshan's PNETCDF_FILE and PNETCDF_VAR counter names with Darshan's meanings,
 * then iolens's own. PNETCDF_FILE: one record per (thread, file) created or opened with ncmpi_create /
 * ncmpi_open. PNETCDF_VAR: one record per (thread, variable), named "FILE:VARIABLE" (Darshan's record name),
 * an entry of the FILES chunk flagged IOLP_FILE_OBJECT. */
#define IOL_PNETCDF_FILE_COUNTERS(X) \
    X(PNETCDF_FILE_CREATES, sum) X(PNETCDF_FILE_OPENS, sum) X(PNETCDF_FILE_REDEFS, sum) \
    X(PNETCDF_FILE_INDEP_WAITS, sum) X(PNETCDF_FILE_COLL_WAITS, sum) X(PNETCDF_FILE_SYNCS, sum) \
    X(PNETCDF_FILE_BYTES_READ, sum) X(PNETCDF_FILE_BYTES_WRITTEN, sum) X(PNETCDF_FILE_WAIT_FAILURES, sum) \
    X(PNETCDF_FILE_F_OPEN_START_TIMESTAMP, min) X(PNETCDF_FILE_F_CLOSE_START_TIMESTAMP, min) \
    X(PNETCDF_FILE_F_WAIT_START_TIMESTAMP, min) X(PNETCDF_FILE_F_OPEN_END_TIMESTAMP, max) \
    X(PNETCDF_FILE_F_CLOSE_END_TIMESTAMP, max) X(PNETCDF_FILE_F_WAIT_END_TIMESTAMP, max) \
    X(PNETCDF_FILE_F_META_TIME, sum) X(PNETCDF_FILE_F_WAIT_TIME, sum) \
    X(PNETCDF_FILE_ENDDEFS, sum) X(PNETCDF_FILE_BEGIN_INDEPS, sum) X(PNETCDF_FILE_END_INDEPS, sum) \
    X(PNETCDF_FILE_FLUSHES, sum) X(PNETCDF_FILE_CLOSES, sum) X(PNETCDF_FILE_MODE, max) \
    X(PNETCDF_FILE_OPEN_COMM_SIZE, max) X(PNETCDF_FILE_ERRORS, sum)

/* Calls per API kind: PREFIX_VAR, _VAR1, _VARA, _VARS, _VARM, _VARN (and _VARD for the blocking ones). */
#define IOL_NC_KINDS(X, P) \
    X(PNETCDF_VAR_##P##_VAR, sum) X(PNETCDF_VAR_##P##_VAR1, sum) X(PNETCDF_VAR_##P##_VARA, sum) \
    X(PNETCDF_VAR_##P##_VARS, sum) X(PNETCDF_VAR_##P##_VARM, sum) X(PNETCDF_VAR_##P##_VARN, sum)
#define IOL_PNETCDF_VAR_COUNTERS(X) \
    X(PNETCDF_VAR_OPENS, sum) X(PNETCDF_VAR_INDEP_READS, sum) X(PNETCDF_VAR_INDEP_WRITES, sum) \
    X(PNETCDF_VAR_COLL_READS, sum) X(PNETCDF_VAR_COLL_WRITES, sum) X(PNETCDF_VAR_NB_READS, sum) \
    X(PNETCDF_VAR_NB_WRITES, sum) X(PNETCDF_VAR_BYTES_READ, sum) X(PNETCDF_VAR_BYTES_WRITTEN, sum) \
    X(PNETCDF_VAR_RW_SWITCHES, sum) \
    IOL_NC_KINDS(X, PUT) X(PNETCDF_VAR_PUT_VARD, sum) IOL_NC_KINDS(X, GET) X(PNETCDF_VAR_GET_VARD, sum) \
    IOL_NC_KINDS(X, IPUT) IOL_NC_KINDS(X, IGET) IOL_NC_KINDS(X, BPUT) \
    X(PNETCDF_VAR_MAX_READ_TIME_SIZE, max) X(PNETCDF_VAR_MAX_WRITE_TIME_SIZE, max) \
    IOL_AGG_SIZE_BUCKETS(X, PNETCDF_VAR, READ) IOL_AGG_SIZE_BUCKETS(X, PNETCDF_VAR, WRITE) \
    X(PNETCDF_VAR_ACCESS1_ACCESS, topv) X(PNETCDF_VAR_ACCESS2_ACCESS, topv) X(PNETCDF_VAR_ACCESS3_ACCESS, topv) \
    X(PNETCDF_VAR_ACCESS4_ACCESS, topv) X(PNETCDF_VAR_ACCESS1_COUNT, topc) X(PNETCDF_VAR_ACCESS2_COUNT, topc) \
    X(PNETCDF_VAR_ACCESS3_COUNT, topc) X(PNETCDF_VAR_ACCESS4_COUNT, topc) \
    X(PNETCDF_VAR_NDIMS, max) X(PNETCDF_VAR_NPOINTS, max) X(PNETCDF_VAR_DATATYPE_SIZE, max) \
    X(PNETCDF_VAR_IS_RECORD_VAR, max) \
    IOL_RW_TIMES(X, PNETCDF_VAR) \
    X(PNETCDF_VAR_DEFS, sum) X(PNETCDF_VAR_ERRORS, sum)

/* PnetCDF trace ops: from 180 up. */
#define IOL_NC_TRACE_OPS(X) \
    X(NC_CREATE, 180) X(NC_OPEN, 181) X(NC_CLOSE, 182) X(NC_ENDDEF, 183) X(NC_REDEF, 184) X(NC_SYNC, 185) \
    X(NC_FLUSH, 186) X(NC_BEGIN_INDEP, 187) X(NC_END_INDEP, 188) X(NC_WAIT, 189) X(NC_WAIT_ALL, 190) \
    X(NC_DEF_VAR, 191) X(NC_INQ_VARID, 192) X(NC_PUT, 193) X(NC_GET, 194) X(NC_IPUT, 195) X(NC_IGET, 196) \
    X(NC_BPUT, 197)

/* SPREAD (joblog.c): the per-rank spread of a file reduced over the ranks of an MPI job at MPI_Finalize,
 * Darshan's names and meanings (darshan-posix-log-format.h, darshan-mpiio-log-format.h): the fastest and
 * slowest rank by the layer's read + write + metadata time on the file, their bytes (read + written) and
 * times (ns), and the population variance over the ranks of that time (s^2) and of those bytes (bytes^2),
 * each stored as the bits of an IEEE double. Then iolens's own: the ranks the file was reduced over, and per
 * layer the ranks that had a record of that layer. Only a job log's reduced records have one (never a live
 * log); "max" because a file has one such record. */
#define IOL_SPREAD_LAYER(X, L) \
    X(L##_FASTEST_RANK, max) X(L##_FASTEST_RANK_BYTES, max) X(L##_SLOWEST_RANK, max) \
    X(L##_SLOWEST_RANK_BYTES, max) X(L##_F_FASTEST_RANK_TIME, max) X(L##_F_SLOWEST_RANK_TIME, max) \
    X(L##_F_VARIANCE_RANK_TIME, max) X(L##_F_VARIANCE_RANK_BYTES, max) X(L##_RANKS, max)
/* ... and iolens's own: the ranks that wrote the file, read it, did both (POSIX or STDIO), and 1 when some
 * rank's first read came after another rank's first write (what a reader of per-process logs finds by
 * comparing them: data handed between ranks through the file). */
#define IOL_SPREAD_COUNTERS(X) \
    X(REDUCED_RANKS, max) IOL_SPREAD_LAYER(X, POSIX) IOL_SPREAD_LAYER(X, MPIIO) X(WRITER_RANKS, max) \
    X(READER_RANKS, max) X(READ_WRITE_RANKS, max) X(READ_AFTER_OTHER_WRITE, max)

/* HDF5 trace ops: from 160 up. */
#define IOL_H5_TRACE_OPS(X) \
    X(H5F_CREATE, 160) X(H5F_OPEN, 161) X(H5F_FLUSH, 162) X(H5F_CLOSE, 163) X(H5D_CREATE, 164) \
    X(H5D_OPEN, 165) X(H5D_READ, 166) X(H5D_WRITE, 167) X(H5D_FLUSH, 168) X(H5D_CLOSE, 169)

/* MPI-IO trace ops: from 100 up (the POSIX ops stay below). */
#define IOL_MPIIO_TRACE_OPS(X) \
    X(MPI_OPEN, 100) X(MPI_CLOSE, 101) X(MPI_READ, 102) X(MPI_WRITE, 103) X(MPI_READ_AT, 104) \
    X(MPI_WRITE_AT, 105) X(MPI_READ_ALL, 106) X(MPI_WRITE_ALL, 107) X(MPI_READ_AT_ALL, 108) \
    X(MPI_WRITE_AT_ALL, 109) X(MPI_READ_SHARED, 110) X(MPI_WRITE_SHARED, 111) X(MPI_READ_ORDERED, 112) \
    X(MPI_WRITE_ORDERED, 113) X(MPI_READ_ALL_BEGIN, 114) X(MPI_WRITE_ALL_BEGIN, 115) \
    X(MPI_READ_AT_ALL_BEGIN, 116) X(MPI_WRITE_AT_ALL_BEGIN, 117) X(MPI_READ_ORDERED_BEGIN, 118) \
    X(MPI_WRITE_ORDERED_BEGIN, 119) X(MPI_READ_ALL_END, 120) X(MPI_WRITE_ALL_END, 121) \
    X(MPI_READ_AT_ALL_END, 122) X(MPI_WRITE_AT_ALL_END, 123) X(MPI_READ_ORDERED_END, 124) \
    X(MPI_WRITE_ORDERED_END, 125) X(MPI_IREAD, 126) X(MPI_IWRITE, 127) X(MPI_IREAD_AT, 128) \
    X(MPI_IWRITE_AT, 129) X(MPI_IREAD_ALL, 130) X(MPI_IWRITE_ALL, 131) X(MPI_IREAD_AT_ALL, 132) \
    X(MPI_IWRITE_AT_ALL, 133) X(MPI_IREAD_SHARED, 134) X(MPI_IWRITE_SHARED, 135) X(MPI_SET_VIEW, 136) \
    X(MPI_SYNC, 137) X(MPI_SET_SIZE, 138) X(MPI_PREALLOCATE, 139) X(MPI_DELETE, 140) X(MPI_SET_INFO, 141) \
    X(MPI_GET_INFO, 142)

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

enum iol_mpiio_counter {
#define X(name, merge) IOL_M_##name,
    IOL_MPIIO_COUNTERS(X)
#undef X
    IOL_NMPIIO
};

enum iol_h5f_counter {
#define X(name, merge) IOL_M_##name,
    IOL_H5F_COUNTERS(X)
#undef X
    IOL_NH5F
};

enum iol_h5d_counter {
#define X(name, merge) IOL_M_##name,
    IOL_H5D_COUNTERS(X)
#undef X
    IOL_NH5D
};

enum iol_pnetcdf_file_counter {
#define X(name, merge) IOL_M_##name,
    IOL_PNETCDF_FILE_COUNTERS(X)
#undef X
    IOL_NPNETCDF_FILE
};

enum iol_pnetcdf_var_counter {
#define X(name, merge) IOL_M_##name,
    IOL_PNETCDF_VAR_COUNTERS(X)
#undef X
    IOL_NPNETCDF_VAR
};

enum iol_spread_counter {
#define X(name, merge) IOL_S_##name,
    IOL_SPREAD_COUNTERS(X)
#undef X
    IOL_NSPREAD
};

enum iol_module {
#define X(name, id, list) IOL_MOD_##name = id,
    IOL_MODULES(X)
#undef X
};

enum iol_op {
#define X(name, num) IOL_OP_##name = num,
    IOL_TRACE_OPS(X) IOL_MPIIO_TRACE_OPS(X) IOL_H5_TRACE_OPS(X) IOL_NC_TRACE_OPS(X)
#undef X
};

/* Values in a module's record (0: no such module). */
extern const unsigned iol_module_nvals[IOL_MODULE_MAX];

/* The NAMES chunk's text: "SECTION NAME MERGE" per line, built by the preprocessor from the lists above. */
extern const char iol_names_text[];
extern const unsigned iol_names_len;

#endif
