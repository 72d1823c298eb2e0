/* wrap_finalize.c — MPI_Finalize (C and Fortran): one log per job, reduced across ranks (joblog.h; the format
 * is docs/profile-log.md's "The job log", the behaviour docs/profile.md's "One log per job").
 *
 * Before the MPI library's own finalize, with the runtime's recording off on this thread (the runtime's MPI
 * and file calls are not the program's), on a duplicate of MPI_COMM_WORLD:
 *   1. every rank snapshots its log image; rank 0 broadcasts the 64-bit hashes of the paths it has records
 *      of; a bitwise-AND allreduce marks those every rank has (Darshan's shared files);
 *   2. each rank merges its records of those files into one row per file, and MPI_Reduce with a user op
 *      (reduce.c) gives rank 0 the reduced rows, with the per-rank spread;
 *   3. each rank compresses its image without those files' records (rank 0's with the reduced ones) and
 *      all write one file with MPI_File_write_at_all at offsets from an MPI_Exscan of the sizes; rank 0's
 *      part starts with the header and the index, gathered to it;
 *   4. an allreduce of success: only when every rank knows the file is complete (synced, then renamed from
 *      its temporary name by rank 0) do the ranks restart their counts, and their per-process logs are
 *      removed at exit unless something was counted after this (joblog.c). On any failure every rank keeps
 *      its per-process log and says why (IOLENS_PROFILE_DEBUG).
 * Every step is collective whatever a rank's own success, so that a rank that fails never leaves the others
 * waiting. IOLENS_JOB_LOG=0 turns it off. The runtime is never linked to libmpi: functions and (Open MPI)
 * predefined handles are looked up in the library the process loaded (wrap_mpiio.c's lookup). */
#include "wrap.h"
#include "joblog.h"
#include "sys.h"

#include <dlfcn.h>
#include <mpi.h>
#include <stdlib.h>
#include <string.h>

void *iol_pmpi_lookup(const char *name); /* wrap_mpiio.c */

#define JL_FUNCS(X) \
    X(int, Initialized, (int *)) X(int, Finalized, (int *)) X(int, Comm_dup, (MPI_Comm, MPI_Comm *)) \
    X(int, Comm_free, (MPI_Comm *)) X(int, Comm_rank, (MPI_Comm, int *)) X(int, Comm_size, (MPI_Comm, int *)) \
    X(int, Bcast, (void *, int, MPI_Datatype, int, MPI_Comm)) \
    X(int, Allreduce, (const void *, void *, int, MPI_Datatype, MPI_Op, MPI_Comm)) \
    X(int, Reduce, (const void *, void *, int, MPI_Datatype, MPI_Op, int, MPI_Comm)) \
    X(int, Exscan, (const void *, void *, int, MPI_Datatype, MPI_Op, MPI_Comm)) \
    X(int, Gather, (const void *, int, MPI_Datatype, void *, int, MPI_Datatype, int, MPI_Comm)) \
    X(int, Type_contiguous, (int, MPI_Datatype, MPI_Datatype *)) X(int, Type_commit, (MPI_Datatype *)) \
    X(int, Type_free, (MPI_Datatype *)) X(int, Op_create, (MPI_User_function *, int, MPI_Op *)) \
    X(int, Op_free, (MPI_Op *)) X(int, File_open, (MPI_Comm, const char *, int, MPI_Info, MPI_File *)) \
    X(int, File_write_at_all, (MPI_File, MPI_Offset, const void *, int, MPI_Datatype, MPI_Status *)) \
    X(int, File_sync, (MPI_File)) X(int, File_close, (MPI_File *))

static struct {
#define X(ret, name, params) ret (*name) params;
    JL_FUNCS(X)
#undef X
    MPI_Comm world;
    MPI_Datatype byte, u64, i32;
    MPI_Op sum, min, band, bor;
    MPI_Info info_null;
} jm;

static int jl_setup(void)
{
#define X(ret, name, params) *(void **)&jm.name = iol_pmpi_lookup("PMPI_" #name);
    JL_FUNCS(X)
#undef X
#define X(ret, name, params) || jm.name == NULL
    if (0 JL_FUNCS(X))
        return -1;
#undef X
#ifdef OPEN_MPI
    /* Open MPI's predefined handles are the addresses of its globals: found, never linked. */
    jm.world = iol_pmpi_lookup("ompi_mpi_comm_world");
    jm.byte = iol_pmpi_lookup("ompi_mpi_byte");
    jm.u64 = iol_pmpi_lookup("ompi_mpi_uint64_t");
    jm.i32 = iol_pmpi_lookup("ompi_mpi_int");
    jm.sum = iol_pmpi_lookup("ompi_mpi_op_sum");
    jm.min = iol_pmpi_lookup("ompi_mpi_op_min");
    jm.band = iol_pmpi_lookup("ompi_mpi_op_band");
    jm.bor = iol_pmpi_lookup("ompi_mpi_op_bor");
    jm.info_null = iol_pmpi_lookup("ompi_mpi_info_null");
    if (jm.world == NULL || jm.byte == NULL || jm.u64 == NULL || jm.i32 == NULL || jm.sum == NULL ||
        jm.min == NULL || jm.band == NULL || jm.bor == NULL || jm.info_null == NULL)
        return -1; /* not the Open MPI whose handles the runtime knows */
#else
    jm.world = MPI_COMM_WORLD, jm.byte = MPI_BYTE, jm.u64 = MPI_UINT64_T, jm.i32 = MPI_INT;
    jm.sum = MPI_SUM, jm.min = MPI_MIN, jm.band = MPI_BAND, jm.bor = MPI_BOR, jm.info_null = MPI_INFO_NULL;
#endif
    return 0;
}

static void merge_op(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    iol_red_merge(in, inout, (size_t)*len);
}

/* Every rank's ok (1) or not (0): 1 only when all are. */
static int all_ok(MPI_Comm comm, int ok)
{
    int all = 0;
    if (jm.Allreduce(&ok, &all, 1, jm.i32, jm.min, comm) != MPI_SUCCESS)
        return 0;
    return all;
}

/* Keeps the rows of the files every rank made the same kinds of calls on (iol_jl_keep_alike): the
 * signatures' AND and OR over the ranks are equal. The same rows on every rank, or 0 when a rank ran out of
 * memory. */
static int alike_only(MPI_Comm comm, struct iol_jl_snap *s, size_t *n_shared)
{
    size_t words = *n_shared * IOL_SIG_WORDS;
    uint64_t *sig = malloc(words > 0 ? 3 * words * 8 : 8);
    if (!all_ok(comm, sig != NULL)) {
        free(sig);
        return 0;
    }
    uint64_t *band = sig + words, *bor = sig + 2 * words;
    iol_jl_signatures(s, sig);
    for (size_t at = 0; at < words;) {
        int k = words - at > (1u << 28) ? 1 << 28 : (int)(words - at);
        jm.Allreduce(sig + at, band + at, k, jm.u64, jm.band, comm);
        jm.Allreduce(sig + at, bor + at, k, jm.u64, jm.bor, comm);
        at += (size_t)k;
    }
    size_t k = iol_jl_keep_alike(s, band, bor);
    free(sig);
    if (!all_ok(comm, k != (size_t)-1))
        return 0;
    *n_shared = k;
    return 1;
}

struct rename_req {
    const char *from, *to;
};

static int rename_aside(void *arg)
{
    struct rename_req *r = arg;
    if (r->to == NULL)
        return iol_sys_unlinkat(AT_FDCWD, r->from, 0) == 0 ? 0 : -errno;
    return iol_sys_renameat(AT_FDCWD, r->from, AT_FDCWD, r->to) == 0 ? 0 : -errno;
}

/* Broadcast from rank 0 in pieces an int count can say. */
static int bcast_big(void *buf, size_t bytes, MPI_Comm comm)
{
    for (size_t at = 0; at < bytes;) {
        int n = bytes - at > (1u << 30) ? 1 << 30 : (int)(bytes - at);
        if (jm.Bcast((uint8_t *)buf + at, n, jm.byte, 0, comm) != MPI_SUCCESS)
            return -1;
        at += (size_t)n;
    }
    return 0;
}

/* Steps 3 and 4: the file written; 1 when every rank knows it is complete. */
static int write_job_log(MPI_Comm comm, int rank, int size, const uint8_t *member, size_t len, size_t n_reduced,
                         const char *path, const char *tmp)
{
    uint64_t mine = len, before = 0;
    jm.Exscan(&mine, &before, 1, jm.u64, jm.sum, comm);
    if (rank == 0)
        before = 0; /* MPI_Exscan leaves rank 0's result undefined */
    uint64_t base = IOLJ_HEADER_SIZE + (uint64_t)size * sizeof(struct iolj_entry);
    uint64_t *lens = rank == 0 ? malloc((size_t)size * 8) : NULL;
    int ok = rank != 0 || lens != NULL;
    jm.Gather(&mine, 1, jm.u64, lens, 1, jm.u64, 0, comm);
    uint8_t *head = NULL;
    const uint8_t *buf = member;
    size_t blen = len;
    if (rank == 0 && ok) {
        blen = base + len;
        head = malloc(blen);
        ok = head != NULL;
    }
    if (rank == 0 && ok) {
        struct iolj_header h;
        memset(&h, 0, sizeof h);
        memcpy(h.magic, IOLJ_MAGIC, 8);
        h.version = IOLJ_VERSION;
        h.header_size = IOLJ_HEADER_SIZE;
        h.nranks = (uint64_t)size;
        h.index_offset = IOLJ_HEADER_SIZE;
        h.reduced_files = n_reduced;
        h.created_wall_ns = iol_g.hdr->start_wall_ns + iol_ns(iol_g.clk.base, iol_ticks());
        iol_strlcpy(h.job_id, iol_g.job_id, sizeof h.job_id);
        memcpy(head, &h, sizeof h);
        uint64_t at = base;
        for (int r = 0; r < size; r++) {
            struct iolj_entry e = { at, lens[r] };
            memcpy(head + IOLJ_HEADER_SIZE + (size_t)r * sizeof e, &e, sizeof e);
            at += lens[r];
        }
        memcpy(head + base, member, len);
        buf = head;
    }
    free(lens);
    ok = ok && blen <= (size_t)INT32_MAX;
    MPI_File fh = NULL;
    if (all_ok(comm, ok)) {
        int rc = jm.File_open(comm, tmp, MPI_MODE_CREATE | MPI_MODE_WRONLY, jm.info_null, &fh);
        ok = rc == MPI_SUCCESS;
        if (!ok)
            iol_debug("job log: cannot open %s (MPI error %d)", tmp, rc);
        if (all_ok(comm, ok)) {
            MPI_Offset off = rank == 0 ? 0 : (MPI_Offset)(base + before);
            ok = jm.File_write_at_all(fh, off, buf, (int)blen, jm.byte, MPI_STATUS_IGNORE) == MPI_SUCCESS;
            ok = jm.File_sync(fh) == MPI_SUCCESS && ok; /* on the disk before any per-process log goes */
            ok = jm.File_close(&fh) == MPI_SUCCESS && ok;
            if (!ok)
                iol_debug("job log: cannot write %s", tmp);
            ok = all_ok(comm, ok);
            if (rank == 0) {
                struct rename_req rr = { tmp, ok ? path : NULL };
                int e = iol_aside(rename_aside, &rr);
                if (ok && e != 0) {
                    iol_debug("job log: cannot rename %s to %s: %s", tmp, path, strerror(-e));
                    rr.to = NULL;
                    iol_aside(rename_aside, &rr);
                    ok = 0;
                }
            }
            if (jm.Bcast(&ok, 1, jm.i32, 0, comm) != MPI_SUCCESS)
                ok = 0;
        } else {
            ok = 0;
            if (rc == MPI_SUCCESS)
                jm.File_close(&fh);
        }
    } else {
        ok = 0;
    }
    free(head);
    return ok;
}

/* Where rank 0 puts the job log: "dir/name" and the temporary name beside it, broadcast. */
static int place(MPI_Comm comm, int rank, char *path, char *tmp, size_t cap)
{
    int ok = 1;
    if (rank == 0) {
        char dir[PATH_MAX], name[512], err[512];
        uint64_t start = iol_g.hdr->start_wall_ns;
        if (iol_jl_place(dir, sizeof dir, name, sizeof name, iol_g.job_id, iol_g.host, iol_g.pid, start, err,
                         sizeof err) != 0) {
            /* A central directory that cannot take it: the profile directory does, and the log says why. */
            iol_debug("job log: %s: the job log goes to %s", err, iol_g.dir);
            unsetenv("IOLENS_LOG_DIR");
            ok = iol_jl_place(dir, sizeof dir, name, sizeof name, iol_g.job_id, iol_g.host, iol_g.pid, start, err,
                              sizeof err) == 0;
        }
        ok = ok && (size_t)snprintf(path, cap, "%s/%s", dir, name) < cap &&
             (size_t)snprintf(tmp, cap, "%s/.%s.tmp", dir, name) < cap;
    }
    if (bcast_big(path, cap, comm) != 0 || bcast_big(tmp, cap, comm) != 0)
        return 0;
    return all_ok(comm, ok);
}

static int finalize_done;

static void job_log(void)
{
    if (__atomic_exchange_n(&finalize_done, 1, __ATOMIC_ACQ_REL))
        return;
    /* A rank whose runtime records nothing (its log could not be made) still takes part, saying so: the
     * others would otherwise wait for it in the collectives below. */
    int recording = __atomic_load_n(&iol_g.on, __ATOMIC_ACQUIRE) && iol_sys_getpid() == iol_g.pid &&
                    iol_g.hdr != NULL;
    const char *off = getenv("IOLENS_JOB_LOG");
    if (off != NULL && strcmp(off, "0") == 0)
        return;
    struct iol_thread *t = &iol_tls;
    int saved_guard = t->guard, saved_errno = errno;
    t->guard = IOL_GUARD_IN;
    uint64_t t0 = iol_mono_ns();
    int init = 0, fin = 0;
    if (jl_setup() != 0 || jm.Initialized(&init) != MPI_SUCCESS || !init || jm.Finalized(&fin) != MPI_SUCCESS ||
        fin) {
        iol_debug("job log: MPI is not usable here: the per-process log stays");
        t->guard = saved_guard;
        errno = saved_errno;
        return;
    }
    MPI_Comm comm;
    int rank = 0, size = 1;
    jm.Comm_dup(jm.world, &comm);
    jm.Comm_rank(comm, &rank);
    jm.Comm_size(comm, &size);
    const struct iol_red_layout *l = iol_red_layout();
    const char *why = NULL;
    struct iol_jl_snap *s = recording ? iol_jl_snapshot() : NULL;
    uint64_t *hashes = NULL, *reduced = NULL, *rows = NULL;
    uint8_t *have = NULL, *all = NULL, *member = NULL;
    size_t n_shared = 0, mlen = 0;
    static char path[PATH_MAX + 600], tmp[PATH_MAX + 600];
    int ok = 0;
    if (!all_ok(comm, s != NULL)) {
        why = "a rank has no log, or could not read its own";
        goto out;
    }
    /* 1. the files every rank has a record of */
    const uint64_t *mine;
    uint64_t n = iol_jl_hashes(s, &mine);
    jm.Bcast(&n, 1, jm.u64, 0, comm);
    hashes = malloc(n > 0 ? n * 8 : 8);
    have = malloc(n > 0 ? n : 1);
    all = malloc(n > 0 ? n : 1);
    if (!all_ok(comm, hashes != NULL && have != NULL && all != NULL)) {
        why = "out of memory";
        goto out;
    }
    if (rank == 0)
        memcpy(hashes, mine, n * 8);
    bcast_big(hashes, n * 8, comm);
    iol_jl_match(s, hashes, n, have);
    for (size_t at = 0; at < n;) {
        int k = n - at > (1u << 30) ? 1 << 30 : (int)(n - at);
        jm.Allreduce(have + at, all + at, k, jm.byte, jm.band, comm);
        at += (size_t)k;
    }
    /* 2. the reduction, in rank 0's time base */
    uint64_t start0 = iol_jl_start_wall();
    jm.Bcast(&start0, 1, jm.u64, 0, comm);
    rows = iol_jl_rows(s, hashes, all, n, (int64_t)(iol_jl_start_wall() - start0), &n_shared);
    if (rank == 0)
        reduced = malloc(n_shared > 0 ? n_shared * l->words * 8 : 8);
    if (!all_ok(comm, rows != NULL && (rank != 0 || reduced != NULL))) {
        why = "out of memory";
        goto out;
    }
    /* 2b. a file whose ranks made different kinds of calls on it (one wrote, another read; aggregators
     * wrote beneath collective calls) stays per rank: reduced, which rank made which would be lost */
    if (!alike_only(comm, s, &n_shared)) {
        why = "out of memory";
        goto out;
    }
    MPI_Datatype row_t;
    MPI_Op op;
    jm.Type_contiguous((int)(l->words * 8), jm.byte, &row_t);
    jm.Type_commit(&row_t);
    jm.Op_create(merge_op, 1, &op);
    for (size_t at = 0; at < n_shared;) {
        int k = n_shared - at > (1u << 20) ? 1 << 20 : (int)(n_shared - at);
        jm.Reduce(rows + at * l->words, reduced + (rank == 0 ? at * l->words : 0), k, row_t, op, 0, comm);
        at += (size_t)k;
    }
    jm.Op_free(&op);
    jm.Type_free(&row_t);
    /* 3. the members, the file */
    member = iol_jl_member(s, rank == 0 ? reduced : NULL, (uint64_t)size, &mlen);
    if (!all_ok(comm, member != NULL)) {
        why = "a rank could not compress its log";
        goto out;
    }
    if (!place(comm, rank, path, tmp, sizeof path)) {
        why = "no place for the job log";
        goto out;
    }
    ok = write_job_log(comm, rank, size, member, mlen, n_shared, path, tmp);
    if (!ok)
        why = "the job log could not be written";
out:
    if (ok)
        iol_jl_reset(); /* 4. the job log has this process's counts: they restart from zero */
    uint64_t dt = iol_mono_ns() - t0;
    if (ok)
        iol_debug("job log: %s written: rank %d of %d, %zu file(s) reduced, member %zu bytes, %.3f ms in "
                  "MPI_Finalize's wrapper",
                  path, rank, size, n_shared, mlen, (double)dt / 1e6);
    else if (recording)
        iol_debug("job log: not written (%s): the per-process log %s stays (%.3f ms)", why ? why : "?",
                  iol_g.log_name, (double)dt / 1e6);
    iol_jl_free(s);
    free(hashes);
    free(have);
    free(all);
    free(reduced);
    free(member);
    jm.Comm_free(&comm);
    t->guard = saved_guard;
    errno = saved_errno;
}

IOL_EXPORT int MPI_Finalize(void)
{
    static void *real;
    int (*fn)(void);
    *(void **)&fn = real != NULL ? real : (real = iol_pmpi_lookup("PMPI_Finalize"));
    if (IOL_UNLIKELY(fn == NULL))
        return MPI_ERR_INTERN;
    job_log();
    /* The MPI library's own file work while it ends (shared-memory segments) is not the program's. */
    struct iol_thread *t = &iol_tls;
    int g = t->guard;
    t->guard = IOL_GUARD_IN;
    int r = fn();
    t->guard = g;
    return r;
}

/* The Fortran bindings: Open MPI's mpif.h/`use mpi` entry points (gfortran's and other compilers' names) and
 * `use mpi_f08`'s ompi_finalize_f call PMPI_Finalize, never the C wrapper above. Each does the job log (once)
 * and calls the next definition of its own name. */
#define F_FINALIZE(sym) \
    IOL_EXPORT void sym(MPI_Fint *ierr) \
    { \
        static void *real; \
        void (*fn)(MPI_Fint *); \
        *(void **)&fn = real != NULL ? real : (real = dlsym(RTLD_NEXT, #sym)); \
        if (IOL_UNLIKELY(fn == NULL)) { \
            *ierr = MPI_ERR_INTERN; \
            return; \
        } \
        job_log(); \
        struct iol_thread *t = &iol_tls; \
        int g = t->guard; \
        t->guard = IOL_GUARD_IN; \
        fn(ierr); \
        t->guard = g; \
    }
F_FINALIZE(mpi_finalize_)
F_FINALIZE(mpi_finalize)
F_FINALIZE(mpi_finalize__)
F_FINALIZE(MPI_FINALIZE)
F_FINALIZE(ompi_finalize_f)
