/* joblog.h — one log per MPI job (docs/profile-log.md, "The job log"; docs/profile.md, "One log per job").
 *
 * At MPI_Finalize (wrap_finalize.c) the ranks of a job find the files every rank has a record of, reduce
 * each to one record (reduce.c: counters combined by their schema merge, plus the per-rank spread under
 * Darshan's names), and write one file: a header, an index (rank -> offset, length) and each rank's log
 * image compressed, with the reduced files' per-rank records left out (rank 0's image holds the reduced
 * records). The per-process logs stay the crash-safe path: a rank drops its own only once every rank knows
 * the job log is complete.
 *
 * The pieces here need no MPI: the reduction's row layout and merge (reduce.c), the image surgery and the
 * job log's bytes (joblog.c), its place (joblog_place.c). The collectives are wrap_finalize.c's. */
#ifndef IOL_PROF_JOBLOG_H
#define IOL_PROF_JOBLOG_H
#include <stddef.h>
#include <stdint.h>

#include "counters.h"

/* ---- the job log file (format version 1) ---- */
#define IOLJ_MAGIC "IOLJOB01"
#define IOLJ_VERSION 1u
#define IOLJ_HEADER_SIZE 256u
#define IOLJ_SUFFIX ".iolj"

struct iolj_header {
    char magic[8];
    uint32_t version;
    uint32_t header_size;
    uint64_t nranks;
    uint64_t index_offset;   /* nranks entries of struct iolj_entry */
    uint64_t reduced_files;  /* files reduced over all ranks */
    uint64_t created_wall_ns;
    uint32_t flags;          /* 0 */
    uint32_t reserved0;
    char job_id[64];
    uint8_t reserved[136];
};
struct iolj_entry {
    uint64_t offset, length; /* a rank's member: where it starts, its bytes */
};
/* A member: u32 name_len, u32 0, the name of the rank's per-process log (padded to 8), then that log's image
 * as a .iolpz holds it ("IOLPZ001", u64 raw length, one zlib stream). */
_Static_assert(sizeof(struct iolj_header) == IOLJ_HEADER_SIZE, "job log header is 256 bytes");
_Static_assert(sizeof(struct iolj_entry) == 16, "index entry is 16 bytes");

/* New flags in a member's image (per-process format, docs/profile-log.md). */
#define IOLP_FINALIZED 64u    /* header: the image was taken at MPI_Finalize (a job log member) */
#define IOLP_AFTER_JOBLOG 128u /* header: counts start at MPI_Finalize, the rest is in the job log */
#define IOLP_FILE_REDUCED 8u  /* FILES: the record is reduced over all ranks of the job */
#define IOLJ_ALL_THREADS 0xFFFFFFFEu /* a reduced record's thread: every thread of every rank */

/* ---- the reduction (reduce.c) ---- */
enum iol_red_kind { RK_SUM, RK_MAX, RK_MIN, RK_TOPV, RK_TOPC, RK_OR };

/* A row of the reduction: one file, every section side by side, then the spread scratch of two layers. */
enum { IOL_RL_POSIX = 0, IOL_RL_MPIIO = 1, IOL_RL_LAYERS = 2 };
/* Spread scratch words of a layer: the fastest (rank, bytes, time), the slowest, then the ranks counted and
 * the running mean and sum of squared deviations of time (s) and bytes, as doubles (Chan et al.'s
 * pairwise update, the same as Darshan's variance reduction). */
enum { SP_FRANK, SP_FBYTES, SP_FTIME, SP_SRANK, SP_SBYTES, SP_STIME, SP_N, SP_TMEAN, SP_TM2, SP_BMEAN, SP_BM2,
       SP_WORDS };
/* Roles scratch words (after the layers' spreads): ranks that wrote, read, did both (sums); the two earliest
 * first writes of distinct ranks (time in rank 0's base + 1, 0: none; rank + 1) and the two latest first
 * reads. Ranks of two partial results are disjoint, so the two best of four are of distinct ranks. */
enum { RO_W, RO_R, RO_B, RO_W1, RO_W1R, RO_W2, RO_W2R, RO_R1, RO_R1R, RO_R2, RO_R2R, RO_WORDS };

struct iol_red_layout {
    unsigned words;                   /* per row */
    unsigned present;                 /* word: bit 0 FILE_REC, bit 1 FILE_DATA, bit 2+m module m */
    unsigned file, data;              /* first word of the FILE_REC and FILE_DATA values */
    unsigned module[IOL_MODULE_MAX];  /* first word of module m's values (0: not reduced) */
    unsigned spread;                  /* first word of the spread scratch (IOL_RL_LAYERS x SP_WORDS) */
    unsigned roles;                   /* first word of the roles scratch (RO_WORDS) */
    uint8_t *kind;                    /* enum iol_red_kind of each word */
    uint8_t *stamp;                   /* 1: a timestamp (ns since the process start + 1) */
    uint8_t *sigbit;                  /* the word's bit in a file's signature (0: none; see below) */
};
/* A file's signature on one rank: which sections it had (the present word, bits 0..IOL_SIG_FIRST-1) and,
 * for each counter of calls of one kind, whether it is non-zero (a bit from IOL_SIG_FIRST on; past the
 * words' room counters share bits, which only makes files look alike more often). Ranks that differ in it
 * made different kinds of calls on the file: reduced, which rank made which would be lost. */
enum { IOL_SIG_WORDS = 2, IOL_SIG_FIRST = 16 };
/* The layout (built once; kind/stamp arrays are static). */
const struct iol_red_layout *iol_red_layout(void);
/* inout[i] = inout[i] (+) in[i] for n rows: each word by its kind, top-4 sets by adding counts of equal
 * values and keeping the four largest, spreads by fastest/slowest (ties: the lower rank) and the variance
 * update. Commutative and associative (an MPI_Op of count n rows). */
void iol_red_merge(const uint64_t *in, uint64_t *inout, size_t n);
/* The words [first, first + n) of a row merged by kind (a section: a rank's threads). */
void iol_red_merge_words(const uint64_t *in, uint64_t *inout, unsigned first, unsigned n);
/* A rank's spread of one row, from its merged values (before the reduction). */
void iol_red_spread_init(uint64_t *row, int64_t rank);
/* The SPREAD module's values of a reduced row over nranks ranks. */
void iol_red_spread_values(const uint64_t *row, uint64_t nranks, uint64_t *out /* IOL_NSPREAD */);
/* Adds delta ns to every non-zero timestamp word of the row (a rank's times in rank 0's time base). */
void iol_red_shift_stamps(uint64_t *row, int64_t delta);

/* ---- the job log's pieces (joblog.c) ---- */
struct iol_jl_snap;
/* Each candidate row's signature (after iol_jl_rows): n_shared x IOL_SIG_WORDS words. */
void iol_jl_signatures(const struct iol_jl_snap *s, uint64_t *sig);
/* Keeps the rows whose signature every rank had (band == bor over the ranks), in order; the others' files
 * stay per rank (their records stay in each member). Returns the new number of rows, (size_t)-1 when out of
 * memory (nothing changed). */
size_t iol_jl_keep_alike(struct iol_jl_snap *s, const uint64_t *band, const uint64_t *bor);
/* The process's log image, read from its file, and its files. NULL (and a debug line) on failure. */
struct iol_jl_snap *iol_jl_snapshot(void);
void iol_jl_free(struct iol_jl_snap *s);
/* Sorted 64-bit hashes of the paths this process has records of; their count. */
size_t iol_jl_hashes(struct iol_jl_snap *s, const uint64_t **hashes);
/* Marks which of rank 0's hashes this process has: have[i] = 0xFF or 0. */
void iol_jl_match(struct iol_jl_snap *s, const uint64_t *hashes, size_t n, uint8_t *have);
/* Takes as reduced the hashes with all[i] set (the AND over ranks); rows: n_shared rows of this process's
 * merged values, timestamps shifted by delta, spread initialised. NULL when out of memory. */
uint64_t *iol_jl_rows(struct iol_jl_snap *s, const uint64_t *hashes, const uint8_t *all, size_t n, int64_t delta,
                      size_t *n_shared);
/* The member blob of this rank: its image without the reduced files' records (rank 0: with the reduced
 * records `reduced`, n_shared rows, appended), compressed. NULL when out of memory. */
uint8_t *iol_jl_member(struct iol_jl_snap *s, const uint64_t *reduced, uint64_t nranks, size_t *len);
/* The start wall time of this process's log (ns). */
uint64_t iol_jl_start_wall(void);

/* After the job log is complete: counts restart from zero (the live log's records), and at exit the live
 * log is removed unless something was counted since (iol_jl_finish). */
void iol_jl_reset(void);
/* At a clean end (finish.c): 1 when the live log was removed (nothing counted after the job log took it). */
int iol_jl_finish(void);

/* ---- where it goes (joblog_place.c) ---- */
/* The directory of the job log: IOLENS_LOG_DIR/LAYOUT (made), else the profile directory; its file name. 0
 * or -1 with why in err. */
int iol_jl_place(char *dir, size_t dcap, char *name, size_t ncap, const char *job_id, const char *host, long pid,
                 uint64_t wall_ns, char *err, size_t ecap);
/* A layout's expansion (no directory made): 0, or -1 with why in err. */
int iol_jl_layout(const char *layout, char *out, size_t cap, const char *user, const char *job, const char *exe,
                  uint64_t wall_ns, char *err, size_t ecap);

#endif
