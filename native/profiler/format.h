/* format.h — the on-disk layout of a profile log, format version 1 (docs/profile-log.md is the contract with
 * the Python reader). Static assertions pin every offset to the document, so a drift fails the build. */
#ifndef IOL_PROF_FORMAT_H
#define IOL_PROF_FORMAT_H
#include <stddef.h>
#include <stdint.h>

#define IOLP_MAGIC "IOLENSP1"
#define IOLPZ_MAGIC "IOLPZ001"
#define IOLP_VERSION 1u
/* Additions a version-1 reader may ignore: 1 = PATHS chunks (names of traced paths that are not files);
 * 2 = FILE_DATA chunks (a file's read/write counters in a record of their own, made on its first read or
 * write) and n_file_data_counters; 3 = flag 32 and records_dropped (records the log could not take);
 * 4 = modules: MODULE_REC and MODULE_TEXT chunks, and "module" lines and module sections in NAMES (the
 * counters of the layers above POSIX, MPI-IO first). */
#define IOLP_MINOR_VERSION 4u
#define IOLP_HEADER_SIZE 4096u
/* 64 KiB: a short-lived process (every command of a shell script) leaves a log of a few hundred KiB, while a
 * log of 10k files still needs only ~120 chunks. The reader takes the size from the header. */
#define IOLP_CHUNK_SIZE (64u * 1024u)
#define IOLP_CHUNK_HEAD 64u
#define IOLP_CHUNK_ROOM (IOLP_CHUNK_SIZE - IOLP_CHUNK_HEAD)
#define IOLP_PROCESS_THREAD 0xFFFFFFFFu

enum iolp_flag { IOLP_CLEAN = 1, IOLP_SIGNALED = 2, IOLP_EXECED = 4, IOLP_TRACE_ON = 8, IOLP_TRACE_CUT = 16,
                 IOLP_RECORDS_CUT = 32 };
enum iolp_kind { IOLP_NAMES = 1, IOLP_FILES = 2, IOLP_MOUNTS = 3, IOLP_FILE_REC = 4, IOLP_PROC_REC = 5, IOLP_TRACE = 6,
                 IOLP_PATHS = 7, IOLP_FILE_DATA = 8, IOLP_MODULE_REC = 9, IOLP_MODULE_TEXT = 10 };
/* What a MODULE_TEXT record holds (its head's `d`). */
enum iolp_text { IOLP_TEXT_HINTS = 1, IOLP_TEXT_DATASET = 2, IOLP_TEXT_VARIABLE = 3 };
/* IOLP_FILE_OBJECT (minor 4): the name of an object inside a file (an HDF5 dataset: "FILE:DATASET", a PnetCDF
 * variable: "FILE:VARIABLE"), which
 * only module records name; never a file of the POSIX layer. */
enum iolp_file_flag { IOLP_FILE_EXCLUDED = 1, IOLP_FILE_NOT_REGULAR = 2, IOLP_FILE_OBJECT = 4 };

struct iolp_header {
    char magic[8];
    uint32_t version;
    uint32_t header_size;
    uint32_t flags;
    uint32_t chunk_size;
    uint64_t chunk_count;
    int64_t pid;
    int64_t ppid;
    uint64_t start_wall_ns;
    uint64_t start_mono_ns;
    uint64_t end_ns;
    int32_t exit_status;
    int32_t exit_signal;
    int64_t rank;
    uint32_t n_file_counters;
    uint32_t n_proc_counters;
    uint64_t trace_dropped;
    uint32_t minor_version;
    uint32_t n_file_data_counters;
    uint64_t records_dropped; /* minor 3: records the log could not take (flag 32); their counts are missing */
    uint8_t unused0[8];
    char job_id[64];
    char hostname[64];
    char exe[512];
    char parent_log[256];
    char cmdline[2048];
    uint8_t reserved[1024];
};

struct iolp_chunk {
    char magic[4];
    uint32_t kind;
    uint32_t thread;
    uint32_t record_size;
    uint64_t used;
    uint32_t module; /* minor 4: a MODULE_REC chunk's module id (0 in every other kind) */
    uint8_t reserved[36];
};

/* Head of a variable-size record. FILES: file_id, mount_id, path_len, flags. MOUNTS: mount_id, dir_len,
 * type_len, 0. PATHS: path_id (IOLP_PATH_ID bit set), 0, path_len, 0. MODULE_TEXT: file_id, module, text_len,
 * what (enum iolp_text). */
struct iolp_var {
    uint32_t a, b, c, d;
};

/* Head of a fixed-size counter record. FILE_REC, FILE_DATA, MODULE_REC: file_id, thread. PROC_REC: thread, 0. */
struct iolp_rec {
    uint32_t id;
    uint32_t thread;
};

/* A TRACE record's file_id with this bit names a PATHS record, not a file. */
#define IOLP_PATH_ID 0x80000000u

struct iolp_trace {
    uint64_t start_ns;
    uint64_t dur_ns;
    uint64_t offset;
    uint64_t size;
    uint32_t file_id;
    uint16_t op;
    uint16_t thread;
    int64_t result;
};

_Static_assert(sizeof(struct iolp_header) == IOLP_HEADER_SIZE, "header is 4096 bytes");
_Static_assert(offsetof(struct iolp_header, flags) == 16, "flags at 16");
_Static_assert(offsetof(struct iolp_header, chunk_count) == 24, "chunk_count at 24");
_Static_assert(offsetof(struct iolp_header, start_wall_ns) == 48, "start_wall_ns at 48");
_Static_assert(offsetof(struct iolp_header, end_ns) == 64, "end_ns at 64");
_Static_assert(offsetof(struct iolp_header, exit_status) == 72, "exit_status at 72");
_Static_assert(offsetof(struct iolp_header, rank) == 80, "rank at 80");
_Static_assert(offsetof(struct iolp_header, n_file_counters) == 88, "n_file_counters at 88");
_Static_assert(offsetof(struct iolp_header, trace_dropped) == 96, "trace_dropped at 96");
_Static_assert(offsetof(struct iolp_header, minor_version) == 104, "minor_version at 104");
_Static_assert(offsetof(struct iolp_header, n_file_data_counters) == 108, "n_file_data_counters at 108");
_Static_assert(offsetof(struct iolp_header, records_dropped) == 112, "records_dropped at 112");
_Static_assert(offsetof(struct iolp_header, job_id) == 128, "job_id at 128");
_Static_assert(offsetof(struct iolp_header, hostname) == 192, "hostname at 192");
_Static_assert(offsetof(struct iolp_header, exe) == 256, "exe at 256");
_Static_assert(offsetof(struct iolp_header, parent_log) == 768, "parent_log at 768");
_Static_assert(offsetof(struct iolp_header, cmdline) == 1024, "cmdline at 1024");
_Static_assert(offsetof(struct iolp_header, reserved) == 3072, "reserved at 3072");
_Static_assert(sizeof(struct iolp_chunk) == IOLP_CHUNK_HEAD, "chunk header is 64 bytes");
_Static_assert(offsetof(struct iolp_chunk, used) == 16, "chunk used at 16");
_Static_assert(offsetof(struct iolp_chunk, module) == 24, "chunk module at 24");
_Static_assert(sizeof(struct iolp_var) == 16, "variable record head is 16 bytes");
_Static_assert(sizeof(struct iolp_rec) == 8, "counter record head is 8 bytes");
_Static_assert(sizeof(struct iolp_trace) == 48, "trace record is 48 bytes");
_Static_assert(IOLP_CHUNK_SIZE % 4096 == 0, "chunks are whole pages");

#endif
