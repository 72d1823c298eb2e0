/* rt.h — the runtime's shared state and the pieces every wrapper uses.
 *
 * An interposition library has no caller that could pass state down (the program calls `write`, not us), so
 * the runtime keeps one process-wide struct (iol_g) and one thread-local struct (iol_tls). Nothing on the
 * per-call path takes a lock: a thread updates only its own records; the lock (iol_g.lock) guards what is
 * rare — adding a chunk, a file, a thread's record. */
#ifndef IOL_PROF_RT_H
#define IOL_PROF_RT_H
#include "wrap_prelude.h"

#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "counters.h"
#include "format.h"

/* ---- a spin lock that can be reset in a fork child (whatever thread held it does not exist there) ---- */
struct iol_lock {
    int v;
};
void iol_lock_slow(struct iol_lock *l);
static inline void iol_lock(struct iol_lock *l)
{
    if (IOL_UNLIKELY(__atomic_exchange_n(&l->v, 1, __ATOMIC_ACQUIRE)))
        iol_lock_slow(l);
}
static inline void iol_unlock(struct iol_lock *l)
{
    __atomic_store_n(&l->v, 0, __ATOMIC_RELEASE);
}

/* ---- clock: TSC ticks on the per-call path, converted to ns with a factor calibrated against
 * CLOCK_MONOTONIC (clock.c); CLOCK_MONOTONIC itself where the TSC is not invariant ---- */
struct iol_clock {
    int tsc;              /* ticks are TSC cycles (else ns of CLOCK_MONOTONIC) */
    uint64_t base;        /* ticks at the process start (start_mono_ns) */
    uint64_t mult;        /* ns per tick in 32.32 fixed point */
    uint64_t next_refine; /* ticks when the factor is next refined */
    unsigned refines;
};

/* ---- what the runtime knows about a path, a mount, a descriptor ---- */
struct iol_mount {
    uint32_t id;          /* mountinfo's mount id */
    uint32_t dir_len, type_len;
    uint32_t blksize;     /* statfs f_bsize, 0 until asked */
    uint64_t logged_gen;  /* the log generation whose MOUNTS chunk has it */
    char *dir, *type;
};

/* IOL_KIND_OBJECT: not a file but an object inside one, named by a module's records (an HDF5 dataset). */
enum iol_kind { IOL_KIND_UNKNOWN = 0, IOL_KIND_REGULAR = 1, IOL_KIND_OTHER = 2, IOL_KIND_OBJECT = 3 };

struct iol_file {
    uint64_t hash;
    uint32_t id;
    uint32_t kind;         /* enum iol_kind (atomic) */
    uint32_t len;
    uint32_t blksize;
    struct iol_mount *mount;
    uint32_t *rec_flags;   /* the flags of this file's FILES record in the log of generation logged_gen */
    uint64_t logged_gen;
    char path[];
};

#define IOL_DESC_CHECKED 1u /* the descriptor's type is known */
#define IOL_DESC_REGULAR 2u
#define IOL_DESC_APPEND 4u
#define IOL_DESC_READY (IOL_DESC_CHECKED | IOL_DESC_REGULAR)

/* An open file description as the runtime sees it: dup'ed descriptors share one, as they share an offset. */
struct iol_desc {
    struct iol_file *file;
    int64_t offset;        /* tracked position (read/write/lseek advance it) */
    uint32_t refs;
    uint32_t state;        /* IOL_D_* */
    struct iol_desc *next_free;
};
/* fd table value for a descriptor known not to be tracked (socket, pipe, excluded path); NULL = not seen. */
#define IOL_UNTRACKED ((struct iol_desc *)1)

/* ---- per thread ---- */
struct iol_pcall;   /* wrap.h */
struct iol_ftable;  /* files.c */
struct iol_topover; /* values beyond the four slots of a most-common set (account.c) */

/* What one thread knows of one file: its FILE_REC values, and its reads and writes (NULL until the first:
 * most files of a metadata-heavy program are never read or written, and cost 16 bytes here). */
struct iol_tdata;
struct iol_tfile {
    uint64_t *v;
    struct iol_tdata *d;
};
/* A (thread, file)'s reads and writes: its FILE_DATA values, and where its previous accesses ended. */
struct iol_tdata {
    uint64_t *v;
    int64_t read_end, write_end, any_end; /* -1: none yet */
    int last;                             /* 0 none, 1 read, 2 write */
    struct iol_topover *over[2];          /* access sizes, strides */
};

#define IOL_GUARD_IN 1
#define IOL_GUARD_VFORK 2 /* a vfork child may be running on this thread's memory */

struct iol_thread {
    int guard;            /* non-zero: calls pass straight through (we are inside the runtime, or vfork) */
    int aside;            /* the runtime's helper thread runs on this thread's behalf (aside.c) */
    uint32_t index;       /* the thread's runtime index + 1; 0 until its first call */
    uint64_t *proc;       /* its PROC_REC values */
    struct iol_tfile ***ftab; /* file id -> struct iol_tfile, two levels of 4096 */
    struct iolp_chunk *trace; /* its current TRACE chunk */
    uint8_t *bump;        /* per-thread allocation space */
    size_t bump_left;
    struct iol_desc *free_desc;
    struct iol_file *recent[4]; /* paths this thread named last: an open, then a stat, then an unlink of one
                                   path find it here, not in the table (whose lookups miss the cache) */
    unsigned recent_next;
    const struct iol_pcall *tpath; /* trace: the path of the call that started at tick tpath_t0 (trace.c) */
    uint64_t tpath_t0;
    const struct iol_mount *dir_mount; /* last directory's mount (registration of many files in one dir) */
    uint32_t dir_len;
    const char *dir_path;              /* its path (a file entry's, which is never freed), dir_len bytes */
    struct iol_tmods ***mtab;          /* file id -> its module records (module.c), two levels of 4096 */
    int mod_depth;                     /* a module's wrapper is running on this thread (its calls below pass) */
    int h5_depth;                      /* an HDF5 wrapper is running (its nested HDF5 calls pass; MPI-IO and
                                        * POSIX beneath it are recorded) */
    int nc_depth;                      /* a PnetCDF wrapper is running (the same, for PnetCDF) */
};

extern __thread struct iol_thread iol_tls __attribute__((tls_model("initial-exec")));

/* ---- a stream of process-owned records (FILES, MOUNTS, FILE_REC, PROC_REC): appended under iol_g.lock ---- */
struct iol_stream {
    struct iolp_chunk *c;
    uint32_t kind, rsize;
    uint32_t module; /* MODULE_REC: the module of its chunks */
};

struct iol_cwd {
    size_t len;
    char path[];
};

#define IOL_FD_CAP_MAX (1u << 22)
#define IOL_MAX_EXCLUDE 32
#define IOL_QUICK_MAX 8
#define IOL_QUICK_SEVERAL 0xFF /* quick_by_c1: more than one short prefix has this second byte */

struct iol_rt {
    int on;                  /* recording (set once the log exists; cleared when it is finished) */
    int trace;               /* IOLENS_TRACE=1 */
    int pid;
    uint64_t gen;            /* log generation: a fork child's log is the next one */
    struct iol_lock lock;
    struct iol_clock clk;

    /* the log: its mappings only, no descriptor (log.c) */
    char log_path[PATH_MAX + 300];
    uint64_t log_dev, log_ino; /* the file this process created (growing it checks it is still that one) */
    struct iolp_header *hdr;
    uint64_t nchunks;
    struct iol_stream s_files, s_mounts, s_filerec, s_filedata, s_procrec;
    struct iol_stream s_module[IOL_MODULE_MAX], s_modtext; /* MODULE_REC per module, MODULE_TEXT */
    char dir[PATH_MAX];      /* IOLENS_PROFILE_DIR, absolute */
    size_t dir_len;
    char log_name[256];      /* this process's log (file name) */
    char prev_log[256];      /* parent_log as read at start (an exec predecessor is compressed at exit) */
    int exit_status, exit_known;
    uint32_t nthreads;

    /* identity (for new logs in fork children) */
    char job_id[64], host[64], job_file[64], host_file[64];
    int64_t rank;
    char debug_path[PATH_MAX];

    /* descriptors */
    struct iol_desc **fdtab;
    uint32_t fd_cap;
    int fd_max;              /* highest descriptor ever tracked (close_range scans up to it) */

    /* files */
    struct iol_ftable *ftable; /* path -> entry (files.c), replaced by a bigger one as it fills */
    uint32_t next_file_id;
    struct iol_cwd *cwd;     /* replaced, never freed, on chdir */

    /* exclusions */
    int n_excl;
    uint16_t excl_len[IOL_MAX_EXCLUDE];
    char *excl[IOL_MAX_EXCLUDE];
    uint64_t excl_word[IOL_MAX_EXCLUDE], excl_mask[IOL_MAX_EXCLUDE]; /* first (up to) 8 bytes, and their mask */
    int n_quick;             /* the prefixes of at most 8 bytes, for iol_path_quick_excluded */
    uint64_t quick_word[IOL_QUICK_MAX], quick_mask[IOL_QUICK_MAX];
    uint8_t quick_len[IOL_QUICK_MAX];
    uint8_t quick_keep_shm[IOL_QUICK_MAX]; /* the prefix is the default list's /dev, whose /dev/shm is kept */
    uint8_t quick_by_c1[256]; /* by a path's second byte: 1 + the one short prefix with that second byte,
                               * IOL_QUICK_SEVERAL, or 0 (no short prefix: most recorded paths stop here) */
    int keep_dev_shm;        /* the default list excludes /dev but not the tmpfs /dev/shm */

    /* mounts */
    int mounts_loaded;
    int n_mounts;
    struct iol_mount *mounts; /* longest directory first */
};

extern struct iol_rt iol_g;

/* ---- clock.c ---- */
void iol_clock_start(uint64_t *mono_ns, uint64_t *wall_ns);
void iol_clock_calibrate(void);
void iol_clock_refine(uint64_t now);
void iol_clock_restart(uint64_t *mono_ns, uint64_t *wall_ns);
uint64_t iol_mono_ns(void);

static inline uint64_t iol_ticks(void)
{
#if defined(__x86_64__)
    if (IOL_LIKELY(iol_g.clk.tsc)) {
        uint32_t lo, hi;
        __asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
        return ((uint64_t)hi << 32) | lo;
    }
#endif
    return iol_mono_ns();
}
/* ns of a tick interval (0 for a negative one: TSCs of two CPUs a thread ran on may differ slightly). */
static inline uint64_t iol_ns(uint64_t t0, uint64_t t1)
{
    if (IOL_UNLIKELY(t1 < t0))
        return 0;
    uint64_t m = __atomic_load_n(&iol_g.clk.mult, __ATOMIC_RELAXED);
    return (uint64_t)(((unsigned __int128)(t1 - t0) * m) >> 32);
}
/* A log timestamp: ns since the process start, + 1 so that 0 means "never". */
static inline uint64_t iol_stamp(uint64_t t)
{
    return iol_ns(iol_g.clk.base, t) + 1;
}

/* ---- arena.c: memory that is never returned (no malloc: wrappers may run in signal handlers) ---- */
void *iol_alloc(size_t n);                          /* zeroed, 16-byte aligned; NULL when out of memory */
void *iol_thread_alloc(struct iol_thread *t, size_t n);
void iol_arena_after_fork(void);

/* ---- aside.c: the runtime's own file work on a helper thread with a descriptor table of its own ---- */
int iol_aside(int (*fn)(void *), void *arg);          /* fn's result, or -errno when the helper could not run */
void iol_aside_after_fork(void);

/* ---- log.c ---- */
int iol_log_create(const char *parent_log);          /* 0 or -errno; fills iol_g's log fields */
struct iolp_chunk *iol_chunk_new(uint32_t kind, uint32_t thread, uint32_t rsize); /* under iol_g.lock */
void iol_chunk_release(struct iolp_chunk *c);       /* a full TRACE chunk: unmapped, the file keeps it */
void *iol_stream_reserve(struct iol_stream *s, size_t size); /* under iol_g.lock; NULL: the log is full */
void iol_stream_commit(struct iol_stream *s, size_t size);
void iol_log_set_flag(uint32_t flag);
void iol_log_clear_flag(uint32_t flag);

/* ---- finish.c ---- */
void iol_finish(int status, int known);             /* clean end: flag 1, compress, remove the raw log */
int iol_compress_log(const char *dir, const char *name); /* raw NAME.iolp -> NAME.iolpz; 0 or -errno */
void iol_compress_predecessor(void);                  /* the log an exec replaced, if still raw */

/* ---- thread.c ---- */
uint64_t *iol_proc_slow(struct iol_thread *t);
static inline uint64_t *iol_proc(struct iol_thread *t)
{
    return IOL_LIKELY(t->proc != NULL) ? t->proc : iol_proc_slow(t);
}
struct iol_tfile *iol_tfile_slow(struct iol_thread *t, struct iol_file *f);
/* The same, made under iol_g.lock by a caller holding it (after iol_proc(t)): the thread's record of a file
 * it has just added. */
struct iol_tfile *iol_tfile_locked(struct iol_thread *t, struct iol_file *f);
static inline struct iol_tfile *iol_tfile(struct iol_thread *t, struct iol_file *f)
{
    uint32_t id = f->id;
    if (IOL_LIKELY(t->ftab != NULL)) {
        struct iol_tfile **page = t->ftab[(id >> 12) & 4095];
        if (IOL_LIKELY(page != NULL) && IOL_LIKELY(page[id & 4095] != NULL))
            return page[id & 4095];
    }
    return iol_tfile_slow(t, f);
}
/* The reads and writes of a (thread, file), made on its first read or write; NULL when out of memory. */
struct iol_tdata *iol_tfile_data_slow(struct iol_thread *t, struct iol_tfile *tf, struct iol_file *f);
static inline struct iol_tdata *iol_tfile_data(struct iol_thread *t, struct iol_tfile *tf, struct iol_file *f)
{
    return IOL_LIKELY(tf->d != NULL) ? tf->d : iol_tfile_data_slow(t, tf, f);
}
void iol_thread_reset(struct iol_thread *t);        /* a fork child: the thread's records are the parent's */

/* ---- module.c: the records of the layers above POSIX (docs/profile-log.md, "Modules") ---- */
struct iol_topover;
/* What a thread keeps of one (file, module). */
struct iol_tmod {
    uint64_t *v;               /* its MODULE_REC values (NULL until the first use) */
    struct iol_topover *over;  /* access sizes beyond the four slots */
    uint64_t text_hash;        /* the last MODULE_TEXT this thread wrote for it (0: none) */
    int last;                  /* 0 none, 1 read, 2 write: for RW_SWITCHES */
};
struct iol_tmods {
    struct iol_tmod m[IOL_MODULE_MAX];
};
/* The thread's record of (file, module), made (with the file's FILES record) on first use; NULL when out of
 * memory. Under no lock: takes iol_g.lock itself when it makes the record. */
struct iol_tmod *iol_module_rec(struct iol_thread *t, struct iol_file *f, unsigned module);
/* A MODULE_TEXT record for (file, module) unless the thread's last one for them had the same text. */
void iol_module_text(struct iol_thread *t, struct iol_tmod *m, struct iol_file *f, unsigned module, unsigned what,
                     const char *text, size_t len);

/* ---- account.c, for the modules ---- */
unsigned iol_size_bucket(uint64_t n);
void iol_top_add(struct iol_thread *t, uint64_t *val, uint64_t *cnt, struct iol_topover **over, uint64_t x);

/* ---- paths.c ---- */
/* The absolute, lexically normalised form of path (relative to dirfd, AT_FDCWD = the working directory)
 * into out[PATH_MAX]; its length, or -1 when it cannot be made absolute. */
long iol_path_abs(int dirfd, const char *path, char *out);
int iol_path_excluded(const char *abs, size_t len);
/* The same, without a copy when path is already absolute and normal: *abs is then path itself, else buf. */
long iol_path_resolve(int dirfd, const char *path, char *buf, const char **abs);
int iol_path_quick_match(const char *path, unsigned k);
/* 1 when the path as the program gave it is surely excluded: it starts with a short excluded prefix (found
 * by its second byte, then one masked 8-byte compare) and what follows cannot lead out of it; 0: not known.
 * This is nearly all a call on /dev/null or /proc/self/... costs, and a path under no short prefix costs
 * one table lookup. */
static inline int iol_path_quick_excluded(const char *path)
{
    if (path == NULL || path[0] != '/')
        return 0;
    unsigned k = iol_g.quick_by_c1[(unsigned char)path[1]];
    return k == 0 ? 0 : iol_path_quick_match(path, k);
}
void iol_cwd_refresh(void);
void iol_exclude_init(const char *spec);
uint64_t iol_hash(const char *s, size_t len);

/* ---- mounts.c ---- */
struct iol_mount *iol_mount_of(struct iol_thread *t, const char *abs, size_t len);
void iol_mount_log(struct iol_mount *m);             /* under iol_g.lock */

/* ---- files.c ---- */
int iol_files_init(void);
/* h: the path's iol_hash when the caller has it (and knows abs is not the path the thread named last), else 0. */
struct iol_file *iol_file_find(const char *abs, size_t len, uint64_t h);
/* The path's hash, and its slot of the table fetched into the cache while the caller makes its system call. */
uint64_t iol_file_prefetch(const char *abs, size_t len);
/* The file this thread named last when it is abs (a compare, no hash); else NULL. */
struct iol_file *iol_file_last(const char *abs, size_t len);
/* rec: the caller counts on the file at once; a new entry (not a directory) then gets this thread's FILE_REC
 * under the lock that adds it. */
struct iol_file *iol_file_get(struct iol_thread *t, const char *abs, size_t len, uint64_t h, enum iol_kind kind,
                              int rec);
void iol_file_set_kind(struct iol_file *f, enum iol_kind kind);
int iol_file_log(struct iol_file *f);                /* under iol_g.lock: its FILES record in this log */

/* ---- fdtab.c ---- */
static inline struct iol_desc *iol_fd_get(int fd)
{
    if (IOL_UNLIKELY((unsigned)fd >= iol_g.fd_cap))
        return IOL_UNTRACKED;
    return __atomic_load_n(&iol_g.fdtab[fd], __ATOMIC_ACQUIRE);
}
void iol_fdtab_init(void);
struct iol_desc *iol_fd_slow(struct iol_thread *t, int fd, struct iol_desc *d);
/* The descriptor's tracked state for an I/O call, or NULL when the call is not on a tracked regular file. */
static inline struct iol_desc *iol_fd_io(struct iol_thread *t, int fd)
{
    struct iol_desc *d = iol_fd_get(fd);
    if (IOL_LIKELY((uintptr_t)d > (uintptr_t)IOL_UNTRACKED) && IOL_LIKELY((d->state & IOL_DESC_READY) == IOL_DESC_READY))
        return d;
    if (d == IOL_UNTRACKED)
        return NULL;
    return iol_fd_slow(t, fd, d);
}
/* Like iol_fd_io, but any known file (a directory too): for *at() path resolution and dup/close. */
struct iol_desc *iol_fd_known(struct iol_thread *t, int fd);
struct iol_desc *iol_desc_new(struct iol_thread *t, struct iol_file *f, uint32_t state, int64_t offset);
void iol_fd_install(int fd, struct iol_desc *d);     /* replaces (and releases) what fd had */
struct iol_desc *iol_fd_take(int fd);                /* removes fd's entry; the caller releases it */
void iol_desc_release(struct iol_thread *t, struct iol_desc *d);
void iol_desc_seen_stat(struct iol_desc *d, unsigned mode, int64_t size);

/* ---- signals.c, wrap_mmap.c ---- */
void iol_signals_init(void);
void iol_signals_after_fork(void);
void iol_mmap_after_fork(void);

/* ---- runtime.c ---- */
void iol_after_fork_child(void);
char *const *iol_exec_env(char *const envp[], char **space); /* space: iol_env_count(envp) + 8 entries */
size_t iol_env_count(char *const envp[]);
char *iol_env_parent(void);

/* ---- libfind.c: a library the program loaded (the HDF5 and PnetCDF layers) ---- */
int iol_in_runtime(const void *p); /* p lies in the runtime itself */
/* The definition of sym (a function the runtime does not define) that a call from return address ra reaches:
 * the caller's object's own lookup (its dependencies; the global scope for the main program), else
 * RTLD_NEXT's, else the first loaded object that has it (a library loaded RTLD_LOCAL); NULL when none. */
void *iol_lib_sym(const void *ra, const char *sym);

/* ---- util ---- */
void iol_debug(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
size_t iol_strlcpy(char *dst, const char *src, size_t cap);

#endif
