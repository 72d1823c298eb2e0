/* wrap_mpiio.c — the MPI-IO layer: MPI_File_* through the MPI profiling interface (docs/profile.md,
 * "MPI-IO"; the counters are docs/profile-log.md's MPIIO module, Darshan's names and meanings).
 *
 * Built only where MPI's headers are (CMake's IOLENS_HAVE_MPI), and never linked against libmpi: the runtime
 * must load into every process, and most have no MPI. The MPI library's own functions (PMPI_*) are found with
 * dlsym on first use; a process that never calls MPI_File_* never looks. The handle layout of the MPI the
 * runtime was built with is checked once against the library the process loaded (MPI_Get_library_version):
 * a runtime built with Open MPI's headers in a process of an MPICH-derived MPI, or the reverse, records no
 * MPI-IO and passes every call straight through.
 *
 * A wrapper takes no guard while the MPI call runs, so the POSIX calls the MPI library makes on the file are
 * recorded beneath it (the same file id: the layers stack without matching names). A wrapper called inside
 * another one on the same thread (an MPI library that implements one MPI-IO call with another, a Fortran
 * entry point that calls the C one) passes through: the outer call is the one the program made. What the
 * program sees (return value, status, request, errno) is what the MPI library gave. */
#include "wrap.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <link.h>
#include <mpi.h>
#include <string.h>

/* ---- the MPI library's functions the runtime calls itself ---- */
#define PMPI_FUNCS(X) \
    X(int, Comm_size, (MPI_Comm, int *)) X(int, Type_size_x, (MPI_Datatype, MPI_Count *)) \
    X(int, Type_size, (MPI_Datatype, int *)) X(int, File_get_info, (MPI_File, MPI_Info *)) \
    X(int, Info_get_nkeys, (MPI_Info, int *)) X(int, Info_get_nthkey, (MPI_Info, int, char *)) \
    X(int, Info_get_valuelen, (MPI_Info, const char *, int *, int *)) \
    X(int, Info_get, (MPI_Info, const char *, int, char *, int *)) X(int, Info_free, (MPI_Info *)) \
    X(int, Get_library_version, (char *, int *)) X(MPI_File, File_f2c, (MPI_Fint)) \
    X(MPI_Comm, Comm_f2c, (MPI_Fint)) X(MPI_Datatype, Type_f2c, (MPI_Fint)) X(MPI_Info, Info_f2c, (MPI_Fint))

static struct {
#define X(ret, name, params) ret (*name) params;
    PMPI_FUNCS(X)
#undef X
    MPI_Info info_null;
} pm;

/* 0: not looked at yet; 1: recording; -1: passing through (no MPI functions, or another MPI's handles). */
static int mpi_state;
static struct iol_lock mpi_lock;

#ifdef OPEN_MPI
#define BUILT_FOR_OPEN_MPI 1
#else
#define BUILT_FOR_OPEN_MPI 0
#endif

/* The MPI library when its symbols are not global: a Python extension module (mpi4py) loaded with
 * RTLD_LOCAL brings libmpi in as its own dependency. The program's MPI_File_* calls still reach the
 * wrappers (the runtime is global), whose PMPI_* must then be looked up in that library. */
static void *mpi_lib;

static int find_mpi_lib(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    if (info->dlpi_name == NULL || info->dlpi_name[0] == '\0')
        return 0;
    void *h = dlopen(info->dlpi_name, RTLD_LAZY | RTLD_NOLOAD); /* already loaded: nothing is opened */
    if (h == NULL)
        return 0;
    if (dlsym(h, "PMPI_File_open") != NULL) {
        *(void **)data = h;
        return 1;
    }
    dlclose(h);
    return 0;
}

static void *pmpi_sym(const char *name)
{
    void *p = dlsym(RTLD_DEFAULT, name);
    if (p != NULL)
        return p;
    void *h = __atomic_load_n(&mpi_lib, __ATOMIC_ACQUIRE);
    if (h == NULL) {
        dl_iterate_phdr(find_mpi_lib, &h);
        if (h != NULL)
            __atomic_store_n(&mpi_lib, h, __ATOMIC_RELEASE);
    }
    return h != NULL ? dlsym(h, name) : NULL;
}

/* Under the guard (the runtime's own calls are not the program's). */
static int mpi_setup(void)
{
#define X(ret, name, params) *(void **)&pm.name = pmpi_sym("PMPI_" #name);
    PMPI_FUNCS(X)
#undef X
#if BUILT_FOR_OPEN_MPI
    /* Open MPI's null handles are the addresses of its globals: found, never linked. */
    pm.info_null = (MPI_Info)pmpi_sym("ompi_mpi_info_null");
#else
    pm.info_null = MPI_INFO_NULL; /* MPICH's handles are integers */
#endif
    /* (The Fortran wrappers need the f2c functions: Open MPI has them all.) */
    if (pm.Comm_size == NULL || pm.Type_size == NULL || pm.Get_library_version == NULL ||
        (BUILT_FOR_OPEN_MPI && (pm.File_f2c == NULL || pm.Type_f2c == NULL || pm.Comm_f2c == NULL ||
                                pm.Info_f2c == NULL))) {
        iol_debug("MPI-IO: the MPI library's PMPI functions were not found: MPI-IO is not recorded");
        return -1;
    }
    static char version[16384]; /* MPICH's MPI_MAX_LIBRARY_VERSION_STRING is 8192, Open MPI's 256 */
    int len = 0;
    if (pm.Get_library_version(version, &len) != MPI_SUCCESS)
        return -1;
    version[len >= 0 && (size_t)len < sizeof version ? len : (int)sizeof version - 1] = '\0';
    int is_ompi = strstr(version, "Open MPI") != NULL;
#if BUILT_FOR_OPEN_MPI
    if (pm.info_null == NULL)
        is_ompi = 0; /* not the Open MPI whose handles the runtime knows */
#endif
    if (is_ompi != BUILT_FOR_OPEN_MPI) {
        iol_debug("MPI-IO: the runtime was built for %s, the process runs %.60s: MPI-IO is not recorded",
                  BUILT_FOR_OPEN_MPI ? "Open MPI" : "an MPICH-derived MPI", version);
        return -1;
    }
    return 1;
}

/* A call being recorded. */
struct mcall {
    struct iol_thread *t;
    uint64_t t0;
};

/* 1 when the call is to be recorded (the runtime is on, the call is the program's own, MPI is usable). */
static inline int mpi_enter(struct mcall *c)
{
    struct iol_thread *t = &iol_tls;
    if (t->guard != 0 || t->mod_depth != 0 || !__atomic_load_n(&iol_g.on, __ATOMIC_RELAXED))
        return 0;
    int st = __atomic_load_n(&mpi_state, __ATOMIC_ACQUIRE);
    if (IOL_UNLIKELY(st == 0)) {
        int saved = errno;
        t->guard = IOL_GUARD_IN;
        iol_lock(&mpi_lock);
        st = mpi_state;
        if (st == 0)
            __atomic_store_n(&mpi_state, st = mpi_setup(), __ATOMIC_RELEASE);
        iol_unlock(&mpi_lock);
        t->guard = 0;
        errno = saved;
    }
    if (st < 0)
        return 0;
    t->mod_depth = 1;
    c->t = t;
    c->t0 = iol_ticks();
    return 1;
}

/* The start of the accounting after the call: the guard on (the runtime's own MPI calls pass), errno kept. */
static inline uint64_t mpi_after(struct mcall *c, uint64_t *dur)
{
    uint64_t t1 = iol_ticks();
    *dur = iol_ns(c->t0, t1);
    c->t->guard = IOL_GUARD_IN;
    return t1;
}

static inline void mpi_leave(struct mcall *c)
{
    c->t->guard = 0;
    c->t->mod_depth = 0;
}

/* The real function of a wrapper: PMPI_* (the runtime never defines those) or, for a Fortran entry point,
 * the next definition of its own name. */
#define FN_PMPI 0
#define FN_NEXT 1
static void *find_fn(void **slot, int next, const char *name)
{
    void *p = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
    if (IOL_LIKELY(p != NULL))
        return p;
    p = next ? dlsym(RTLD_NEXT, name) : pmpi_sym(name);
    __atomic_store_n(slot, p, __ATOMIC_RELEASE);
    return p;
}

/* ---- MPI_File handle -> the file it names: open addressing, removed on close ---- */
static struct iol_lock map_lock;
static uintptr_t *map_key;
static struct iol_file **map_val;
static size_t map_cap, map_fill;
#define MAP_GONE ((uintptr_t)1) /* a closed handle's slot (handles are pointers: never 1) */

_Static_assert(sizeof(MPI_File) <= sizeof(uintptr_t), "an MPI_File fits a word");

static uintptr_t key_of(MPI_File fh)
{
    uintptr_t k = 0;
    memcpy(&k, &fh, sizeof fh);
    return k;
}

static size_t slot_of(uintptr_t k, size_t cap)
{
    return (size_t)((k >> 4) * 0x9E3779B97F4A7C15ull) & (cap - 1);
}

static void map_put(MPI_File fh, struct iol_file *f)
{
    uintptr_t k = key_of(fh);
    if (k <= MAP_GONE)
        return;
    iol_lock(&map_lock);
    if ((map_fill + 1) * 2 > map_cap) {
        /* A new table with the live entries, four times as many slots (closed handles' slots are dropped: a
         * program opening and closing files all along keeps a small table); the old one stays in the arena. */
        size_t live = 0, cap = 256;
        for (size_t i = 0; i < map_cap; i++)
            live += map_key[i] > MAP_GONE;
        while (cap < 4 * (live + 1))
            cap *= 2;
        uintptr_t *keys = iol_alloc(cap * sizeof *keys);
        struct iol_file **vals = iol_alloc(cap * sizeof *vals);
        if (keys == NULL || vals == NULL) {
            iol_unlock(&map_lock);
            return;
        }
        map_fill = 0;
        for (size_t i = 0; i < map_cap; i++)
            if (map_key[i] > MAP_GONE) {
                size_t j = slot_of(map_key[i], cap);
                while (keys[j] != 0)
                    j = (j + 1) & (cap - 1);
                keys[j] = map_key[i];
                vals[j] = map_val[i];
                map_fill++;
            }
        map_key = keys;
        map_val = vals;
        map_cap = cap;
    }
    size_t j = slot_of(k, map_cap);
    while (map_key[j] > MAP_GONE && map_key[j] != k)
        j = (j + 1) & (map_cap - 1);
    map_fill += map_key[j] == 0;
    map_key[j] = k;
    map_val[j] = f;
    iol_unlock(&map_lock);
}

static struct iol_file *map_get(MPI_File fh, int take)
{
    uintptr_t k = key_of(fh);
    struct iol_file *f = NULL;
    iol_lock(&map_lock);
    if (map_cap != 0 && k > MAP_GONE)
        for (size_t j = slot_of(k, map_cap); map_key[j] != 0; j = (j + 1) & (map_cap - 1))
            if (map_key[j] == k) {
                f = map_val[j];
                if (take)
                    map_key[j] = MAP_GONE;
                break;
            }
    iol_unlock(&map_lock);
    return f;
}

/* ---- accounting ---- */
#define V(c) v[IOL_M_MPIIO_##c]

static struct iol_tmod *mod_of(struct iol_thread *t, struct iol_file *f)
{
    return f != NULL ? iol_module_rec(t, f, IOL_MOD_MPIIO) : NULL;
}

static uint64_t xfer_bytes(MPI_Count count, MPI_Datatype dt)
{
    if (count <= 0)
        return 0;
    if (pm.Type_size_x != NULL) {
        MPI_Count n = 0;
        return pm.Type_size_x(dt, &n) == MPI_SUCCESS && n > 0 ? (uint64_t)n * (uint64_t)count : 0;
    }
    int n = 0;
    return pm.Type_size(dt, &n) == MPI_SUCCESS && n > 0 ? (uint64_t)n * (uint64_t)count : 0;
}

/* A read or write: counter is the kind's count (INDEP, COLL, SPLIT, NB), or -1 for the end of a split
 * collective (its time only: the bytes were counted at its begin). */
static void acct_io(struct mcall *c, MPI_File fh, MPI_Count count, MPI_Datatype dt, int64_t off, int counter, int w,
                    int op, int r)
{
    int e = errno;
    uint64_t dur, t1 = mpi_after(c, &dur);
    struct iol_thread *t = c->t;
    struct iol_file *f = map_get(fh, 0);
    uint64_t bytes = counter >= 0 && r == MPI_SUCCESS ? xfer_bytes(count, dt) : 0;
    struct iol_tmod *m = mod_of(t, f);
    if (m != NULL) {
        uint64_t *v = m->v;
        V(ERRORS) += r != MPI_SUCCESS;
        V(SPLIT_ENDS) += r == MPI_SUCCESS && counter < 0;
        if (w)
            V(F_WRITE_TIME) += dur;
        else
            V(F_READ_TIME) += dur;
        if (r == MPI_SUCCESS && counter >= 0) {
            v[counter]++;
            if (w)
                V(BYTES_WRITTEN) += bytes;
            else
                V(BYTES_READ) += bytes;
            v[(w ? IOL_M_MPIIO_SIZE_WRITE_AGG_0_100 : IOL_M_MPIIO_SIZE_READ_AGG_0_100) + iol_size_bucket(bytes)]++;
            iol_top_add(t, &V(ACCESS1_ACCESS), &V(ACCESS1_COUNT), &m->over, bytes);
            V(RW_SWITCHES) += m->last == (w ? 1 : 2);
            m->last = w ? 2 : 1;
            uint64_t *first = w ? &V(F_WRITE_START_TIMESTAMP) : &V(F_READ_START_TIMESTAMP);
            if (*first == 0)
                *first = iol_stamp(c->t0);
            if (dur > (w ? V(F_MAX_WRITE_TIME) : V(F_MAX_READ_TIME))) {
                if (w) {
                    V(F_MAX_WRITE_TIME) = dur;
                    V(MAX_WRITE_TIME_SIZE) = bytes;
                } else {
                    V(F_MAX_READ_TIME) = dur;
                    V(MAX_READ_TIME_SIZE) = bytes;
                }
            }
        }
        if (r == MPI_SUCCESS)
            v[w ? IOL_M_MPIIO_F_WRITE_END_TIMESTAMP : IOL_M_MPIIO_F_READ_END_TIMESTAMP] = iol_stamp(t1);
    }
    iol_trace(t, op, f != NULL ? f->id : 0, c->t0, t1, off < 0 ? 0 : (uint64_t)off, bytes,
              r == MPI_SUCCESS ? 0 : -(int64_t)r);
    mpi_leave(c);
    errno = e;
}

static void hints_record(struct iol_thread *t, struct iol_tmod *m, struct iol_file *f, MPI_File fh);

/* A call that moves no data: counter (or -1), its time in F_META_TIME (a sync's in F_WRITE_TIME, as
 * Darshan's). Given hints (an info other than MPI_INFO_NULL), the hints now in effect are recorded. */
static void acct_meta(struct mcall *c, MPI_File fh, int counter, int time_counter, int hints, int op, int r)
{
    int e = errno;
    uint64_t dur, t1 = mpi_after(c, &dur);
    struct iol_file *f = map_get(fh, 0);
    struct iol_tmod *m = mod_of(c->t, f);
    if (m != NULL) {
        uint64_t *v = m->v;
        if (r != MPI_SUCCESS)
            V(ERRORS)++;
        else if (counter >= 0)
            v[counter]++;
        V(HINTS) += r == MPI_SUCCESS && hints;
        v[time_counter] += dur;
        if (r == MPI_SUCCESS && hints) /* the hints in effect may have changed */
            hints_record(c->t, m, f, fh);
    }
    iol_trace(c->t, op, f != NULL ? f->id : 0, c->t0, t1, 0, 0, r == MPI_SUCCESS ? 0 : -(int64_t)r);
    mpi_leave(c);
    errno = e;
}

/* The hints in effect (MPI_File_get_info), "key=value" lines, in out[cap]; their length. */
static size_t hints_text(MPI_File fh, char *out, size_t cap)
{
    MPI_Info info;
    if (pm.File_get_info == NULL || pm.Info_get_nkeys == NULL || pm.Info_get_nthkey == NULL ||
        pm.Info_get_valuelen == NULL || pm.Info_get == NULL || pm.File_get_info(fh, &info) != MPI_SUCCESS)
        return 0;
    int n = 0;
    size_t len = 0;
    if (info != pm.info_null && pm.Info_get_nkeys(info, &n) == MPI_SUCCESS)
        for (int i = 0; i < n; i++) {
            char key[256], val[512];
            int vlen = 0, flag = 0;
            if (pm.Info_get_nthkey(info, i, key) != MPI_SUCCESS ||
                pm.Info_get_valuelen(info, key, &vlen, &flag) != MPI_SUCCESS || !flag)
                continue;
            if (vlen > (int)sizeof val - 1)
                vlen = (int)sizeof val - 1;
            if (pm.Info_get(info, key, vlen, val, &flag) != MPI_SUCCESS || !flag)
                continue;
            val[vlen] = '\0';
            size_t kl = strnlen(key, sizeof key), vl = strlen(val);
            if (len + kl + vl + 2 > cap)
                break;
            memcpy(out + len, key, kl);
            out[len + kl] = '=';
            memcpy(out + len + kl + 1, val, vl);
            out[len + kl + 1 + vl] = '\n';
            len += kl + vl + 2;
        }
    if (info != pm.info_null && pm.Info_free != NULL)
        pm.Info_free(&info);
    return len;
}

/* The hints in effect as the record's text (a MODULE_TEXT record when they changed). */
static void hints_record(struct iol_thread *t, struct iol_tmod *m, struct iol_file *f, MPI_File fh)
{
    char text[4096];
    size_t tl = hints_text(fh, text, sizeof text);
    if (tl > 0)
        iol_module_text(t, m, f, IOL_MOD_MPIIO, IOLP_TEXT_HINTS, text, tl);
}

/* The path an MPI_File_open names, without the file-system prefix ROMIO accepts ("lustre:/x"). */
static const char *strip_prefix(const char *name)
{
    static const char *const prefixes[] = { "ufs:", "nfs:", "lustre:", "gpfs:", "pvfs2:", "panfs:", "xfs:",
                                            "daos:", "ime:", "bg:", "bglockless:", "testfs:", "quobytefs:",
                                            "beegfs:" };
    for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++) {
        size_t n = strlen(prefixes[i]);
        if (strncmp(name, prefixes[i], n) == 0)
            return name + n;
    }
    return name;
}

static void acct_open(struct mcall *c, MPI_Comm comm, const char *name, int amode, MPI_Info info, MPI_File fh,
                      int r)
{
    int e = errno;
    uint64_t dur, t1 = mpi_after(c, &dur);
    struct iol_thread *t = c->t;
    struct iol_file *f = NULL;
    char abs[PATH_MAX];
    long len = name != NULL ? iol_path_abs(AT_FDCWD, strip_prefix(name), abs) : -1;
    if (len >= 0 && !iol_path_excluded(abs, (size_t)len)) {
        /* A failed open counts only on a file the log already has (as a POSIX open does). */
        f = r == MPI_SUCCESS ? iol_file_get(t, abs, (size_t)len, 0, IOL_KIND_UNKNOWN, 0)
                             : iol_file_find(abs, (size_t)len, 0);
    }
    struct iol_tmod *m = mod_of(t, f);
    if (m != NULL) {
        uint64_t *v = m->v;
        V(F_META_TIME) += dur;
        if (r != MPI_SUCCESS) {
            V(ERRORS)++;
        } else {
            int n = 1;
            if (pm.Comm_size(comm, &n) != MPI_SUCCESS)
                n = 1;
            if (n == 1) /* Darshan's rule: an open on a communicator of one process is independent */
                V(INDEP_OPENS)++;
            else
                V(COLL_OPENS)++;
            if ((uint64_t)n > V(OPEN_COMM_SIZE))
                V(OPEN_COMM_SIZE) = (uint64_t)n;
            V(MODE) = (uint64_t)(unsigned)amode;
            V(HINTS) += info != pm.info_null;
            if (V(F_OPEN_START_TIMESTAMP) == 0)
                V(F_OPEN_START_TIMESTAMP) = iol_stamp(c->t0);
            V(F_OPEN_END_TIMESTAMP) = iol_stamp(t1);
            map_put(fh, f);
            hints_record(t, m, f, fh);
        }
    }
    iol_trace(t, IOL_OP_MPI_OPEN, f != NULL ? f->id : 0, c->t0, t1, 0, 0, r == MPI_SUCCESS ? 0 : -(int64_t)r);
    mpi_leave(c);
    errno = e;
}

static void acct_close(struct mcall *c, MPI_File fh, int r)
{
    int e = errno;
    uint64_t dur, t1 = mpi_after(c, &dur);
    struct iol_file *f = map_get(fh, r == MPI_SUCCESS); /* a failed close leaves the handle open */
    struct iol_tmod *m = mod_of(c->t, f);
    if (m != NULL) {
        uint64_t *v = m->v;
        if (r != MPI_SUCCESS) {
            V(ERRORS)++;
        } else {
            V(CLOSES)++;
            if (V(F_CLOSE_START_TIMESTAMP) == 0)
                V(F_CLOSE_START_TIMESTAMP) = iol_stamp(c->t0);
            V(F_CLOSE_END_TIMESTAMP) = iol_stamp(t1);
        }
        V(F_META_TIME) += dur;
    }
    iol_trace(c->t, IOL_OP_MPI_CLOSE, f != NULL ? f->id : 0, c->t0, t1, 0, 0, r == MPI_SUCCESS ? 0 : -(int64_t)r);
    mpi_leave(c);
    errno = e;
}

/* MPI_File_delete: a call on a name, not a handle (iolens's MPIIO_DELETES; Darshan does not wrap it). */
static void acct_delete(struct mcall *c, const char *name, int r)
{
    int e = errno;
    uint64_t dur, t1 = mpi_after(c, &dur);
    char abs[PATH_MAX];
    long len = name != NULL ? iol_path_abs(AT_FDCWD, strip_prefix(name), abs) : -1;
    struct iol_file *f = NULL;
    if (len >= 0 && !iol_path_excluded(abs, (size_t)len))
        f = r == MPI_SUCCESS ? iol_file_get(c->t, abs, (size_t)len, 0, IOL_KIND_UNKNOWN, 0)
                             : iol_file_find(abs, (size_t)len, 0);
    struct iol_tmod *m = mod_of(c->t, f);
    if (m != NULL) {
        uint64_t *v = m->v;
        if (r != MPI_SUCCESS)
            V(ERRORS)++;
        else
            V(DELETES)++;
        V(F_META_TIME) += dur;
    }
    iol_trace(c->t, IOL_OP_MPI_DELETE, f != NULL ? f->id : 0, c->t0, t1, 0, 0, r == MPI_SUCCESS ? 0 : -(int64_t)r);
    mpi_leave(c);
    errno = e;
}

/* ---- the C bindings ---- */

/* The shapes of the read/write calls: parameters (reads, writes), arguments, offset, count, datatype. */
#define C_IO_0 (MPI_File fh, void *buf, int count, MPI_Datatype dt, MPI_Status *st)
#define C_IO_1 (MPI_File fh, const void *buf, int count, MPI_Datatype dt, MPI_Status *st)
#define C_IO_A (fh, buf, count, dt, st)
#define C_AT_0 (MPI_File fh, MPI_Offset off, void *buf, int count, MPI_Datatype dt, MPI_Status *st)
#define C_AT_1 (MPI_File fh, MPI_Offset off, const void *buf, int count, MPI_Datatype dt, MPI_Status *st)
#define C_AT_A (fh, off, buf, count, dt, st)
#define C_BEGIN_0 (MPI_File fh, void *buf, int count, MPI_Datatype dt)
#define C_BEGIN_1 (MPI_File fh, const void *buf, int count, MPI_Datatype dt)
#define C_BEGIN_A (fh, buf, count, dt)
#define C_BEGINAT_0 (MPI_File fh, MPI_Offset off, void *buf, int count, MPI_Datatype dt)
#define C_BEGINAT_1 (MPI_File fh, MPI_Offset off, const void *buf, int count, MPI_Datatype dt)
#define C_BEGINAT_A (fh, off, buf, count, dt)
#define C_END_0 (MPI_File fh, void *buf, MPI_Status *st)
#define C_END_1 (MPI_File fh, const void *buf, MPI_Status *st)
#define C_END_A (fh, buf, st)
#define C_NB_0 (MPI_File fh, void *buf, int count, MPI_Datatype dt, MPI_Request *req)
#define C_NB_1 (MPI_File fh, const void *buf, int count, MPI_Datatype dt, MPI_Request *req)
#define C_NB_A (fh, buf, count, dt, req)
#define C_NBAT_0 (MPI_File fh, MPI_Offset off, void *buf, int count, MPI_Datatype dt, MPI_Request *req)
#define C_NBAT_1 (MPI_File fh, MPI_Offset off, const void *buf, int count, MPI_Datatype dt, MPI_Request *req)
#define C_NBAT_A (fh, off, buf, count, dt, req)
#define OFF_IO -1
#define OFF_AT off
#define OFF_BEGIN -1
#define OFF_BEGINAT off
#define OFF_END -1
#define OFF_NB -1
#define OFF_NBAT off
#define CNT_END 0, (MPI_Datatype)0
#define CNT_OTHER count, dt
#define CNT_IO CNT_OTHER
#define CNT_AT CNT_OTHER
#define CNT_BEGIN CNT_OTHER
#define CNT_BEGINAT CNT_OTHER
#define CNT_NB CNT_OTHER
#define CNT_NBAT CNT_OTHER

/* Every read and write call: name, trace op, the counter of its kind, write, shape. */
#define MPIIO_XFERS(X) \
    X(read, MPI_READ, INDEP_READS, 0, IO) X(write, MPI_WRITE, INDEP_WRITES, 1, IO) \
    X(read_at, MPI_READ_AT, INDEP_READS, 0, AT) X(write_at, MPI_WRITE_AT, INDEP_WRITES, 1, AT) \
    X(read_all, MPI_READ_ALL, COLL_READS, 0, IO) X(write_all, MPI_WRITE_ALL, COLL_WRITES, 1, IO) \
    X(read_at_all, MPI_READ_AT_ALL, COLL_READS, 0, AT) X(write_at_all, MPI_WRITE_AT_ALL, COLL_WRITES, 1, AT) \
    X(read_shared, MPI_READ_SHARED, INDEP_READS, 0, IO) X(write_shared, MPI_WRITE_SHARED, INDEP_WRITES, 1, IO) \
    X(read_ordered, MPI_READ_ORDERED, COLL_READS, 0, IO) X(write_ordered, MPI_WRITE_ORDERED, COLL_WRITES, 1, IO) \
    X(read_all_begin, MPI_READ_ALL_BEGIN, SPLIT_READS, 0, BEGIN) \
    X(write_all_begin, MPI_WRITE_ALL_BEGIN, SPLIT_WRITES, 1, BEGIN) \
    X(read_at_all_begin, MPI_READ_AT_ALL_BEGIN, SPLIT_READS, 0, BEGINAT) \
    X(write_at_all_begin, MPI_WRITE_AT_ALL_BEGIN, SPLIT_WRITES, 1, BEGINAT) \
    X(read_ordered_begin, MPI_READ_ORDERED_BEGIN, SPLIT_READS, 0, BEGIN) \
    X(write_ordered_begin, MPI_WRITE_ORDERED_BEGIN, SPLIT_WRITES, 1, BEGIN) \
    X(read_all_end, MPI_READ_ALL_END, END, 0, END) X(write_all_end, MPI_WRITE_ALL_END, END, 1, END) \
    X(read_at_all_end, MPI_READ_AT_ALL_END, END, 0, END) X(write_at_all_end, MPI_WRITE_AT_ALL_END, END, 1, END) \
    X(read_ordered_end, MPI_READ_ORDERED_END, END, 0, END) \
    X(write_ordered_end, MPI_WRITE_ORDERED_END, END, 1, END) \
    X(iread, MPI_IREAD, NB_READS, 0, NB) X(iwrite, MPI_IWRITE, NB_WRITES, 1, NB) \
    X(iread_at, MPI_IREAD_AT, NB_READS, 0, NBAT) X(iwrite_at, MPI_IWRITE_AT, NB_WRITES, 1, NBAT) \
    X(iread_all, MPI_IREAD_ALL, NB_READS, 0, NB) X(iwrite_all, MPI_IWRITE_ALL, NB_WRITES, 1, NB) \
    X(iread_at_all, MPI_IREAD_AT_ALL, NB_READS, 0, NBAT) X(iwrite_at_all, MPI_IWRITE_AT_ALL, NB_WRITES, 1, NBAT) \
    X(iread_shared, MPI_IREAD_SHARED, NB_READS, 0, NB) X(iwrite_shared, MPI_IWRITE_SHARED, NB_WRITES, 1, NB)

#define KIND_OF(k) KIND_OF_##k
#define KIND_OF_END -1
#define KIND_OF_INDEP_READS IOL_M_MPIIO_INDEP_READS
#define KIND_OF_INDEP_WRITES IOL_M_MPIIO_INDEP_WRITES
#define KIND_OF_COLL_READS IOL_M_MPIIO_COLL_READS
#define KIND_OF_COLL_WRITES IOL_M_MPIIO_COLL_WRITES
#define KIND_OF_SPLIT_READS IOL_M_MPIIO_SPLIT_READS
#define KIND_OF_SPLIT_WRITES IOL_M_MPIIO_SPLIT_WRITES
#define KIND_OF_NB_READS IOL_M_MPIIO_NB_READS
#define KIND_OF_NB_WRITES IOL_M_MPIIO_NB_WRITES

/* A C binding whose accounting needs only its arguments and result: its name, the PMPI function's, its
 * parameters and arguments; the real call, then acct. */
#define C_BIND(fname, pname, params, args, acct) \
    IOL_EXPORT int fname params \
    { \
        static void *real; \
        int(*fn) params; \
        *(void **)&fn = find_fn(&real, FN_PMPI, pname); \
        if (IOL_UNLIKELY(fn == NULL)) \
            return MPI_ERR_INTERN; \
        struct mcall c; \
        if (!mpi_enter(&c)) \
            return fn args; \
        int r = fn args; \
        acct; \
        return r; \
    }
/* A read or write binding: its name, the PMPI function's, its parameters; then as in the table. */
#define C_XFER_FN(fname, pname, params, op, kind, w, shape) \
    C_BIND(fname, pname, params, C_##shape##_A, \
           acct_io(&c, fh, CNT_##shape, OFF_##shape, KIND_OF(kind), w, IOL_OP_##op, r))
#define C_XFER(name, op, kind, w, shape) \
    C_XFER_FN(MPI_File_##name, "PMPI_File_" #name, C_##shape##_##w, op, kind, w, shape)
MPIIO_XFERS(C_XFER)

/* The large-count forms of MPI-4 (MPI_File_write_at_all_c, ...: an MPI_Count count), where the mpi.h the
 * runtime is built with declares them (Open MPI 4.1's does not: MPI_VERSION 3). The same calls as above but
 * the _end ones, which have no count. */
#if MPI_VERSION >= 4
#define C_IO_0_C (MPI_File fh, void *buf, MPI_Count count, MPI_Datatype dt, MPI_Status *st)
#define C_IO_1_C (MPI_File fh, const void *buf, MPI_Count count, MPI_Datatype dt, MPI_Status *st)
#define C_AT_0_C (MPI_File fh, MPI_Offset off, void *buf, MPI_Count count, MPI_Datatype dt, MPI_Status *st)
#define C_AT_1_C (MPI_File fh, MPI_Offset off, const void *buf, MPI_Count count, MPI_Datatype dt, MPI_Status *st)
#define C_BEGIN_0_C (MPI_File fh, void *buf, MPI_Count count, MPI_Datatype dt)
#define C_BEGIN_1_C (MPI_File fh, const void *buf, MPI_Count count, MPI_Datatype dt)
#define C_BEGINAT_0_C (MPI_File fh, MPI_Offset off, void *buf, MPI_Count count, MPI_Datatype dt)
#define C_BEGINAT_1_C (MPI_File fh, MPI_Offset off, const void *buf, MPI_Count count, MPI_Datatype dt)
#define C_NB_0_C (MPI_File fh, void *buf, MPI_Count count, MPI_Datatype dt, MPI_Request *req)
#define C_NB_1_C (MPI_File fh, const void *buf, MPI_Count count, MPI_Datatype dt, MPI_Request *req)
#define C_NBAT_0_C (MPI_File fh, MPI_Offset off, void *buf, MPI_Count count, MPI_Datatype dt, MPI_Request *req)
#define C_NBAT_1_C (MPI_File fh, MPI_Offset off, const void *buf, MPI_Count count, MPI_Datatype dt, \
                    MPI_Request *req)
#define C_XFER_LARGE(name, op, kind, w, shape) \
    C_XFER_FN(MPI_File_##name##_c, "PMPI_File_" #name "_c", C_##shape##_##w##_C, op, kind, w, shape)
#define C_XFER_C(name, op, kind, w, shape) C_XFER_C_##shape(name, op, kind, w, shape)
#define C_XFER_C_END(name, op, kind, w, shape)
#define C_XFER_C_IO C_XFER_LARGE
#define C_XFER_C_AT C_XFER_LARGE
#define C_XFER_C_BEGIN C_XFER_LARGE
#define C_XFER_C_BEGINAT C_XFER_LARGE
#define C_XFER_C_NB C_XFER_LARGE
#define C_XFER_C_NBAT C_XFER_LARGE
MPIIO_XFERS(C_XFER_C)
#endif

IOL_EXPORT int MPI_File_open(MPI_Comm comm, const char *filename, int amode, MPI_Info info, MPI_File *fh)
{
    static void *real;
    int (*fn)(MPI_Comm, const char *, int, MPI_Info, MPI_File *);
    *(void **)&fn = find_fn(&real, FN_PMPI, "PMPI_File_open");
    if (IOL_UNLIKELY(fn == NULL))
        return MPI_ERR_INTERN;
    struct mcall c;
    if (!mpi_enter(&c))
        return fn(comm, filename, amode, info, fh);
    int r = fn(comm, filename, amode, info, fh);
    acct_open(&c, comm, filename, amode, info, r == MPI_SUCCESS ? *fh : NULL, r);
    return r;
}

IOL_EXPORT int MPI_File_close(MPI_File *fh)
{
    static void *real;
    int (*fn)(MPI_File *);
    *(void **)&fn = find_fn(&real, FN_PMPI, "PMPI_File_close");
    if (IOL_UNLIKELY(fn == NULL))
        return MPI_ERR_INTERN;
    struct mcall c;
    if (!mpi_enter(&c))
        return fn(fh);
    MPI_File h = fh != NULL ? *fh : NULL; /* the call sets *fh to MPI_FILE_NULL */
    int r = fn(fh);
    acct_close(&c, h, r);
    return r;
}

IOL_EXPORT int MPI_File_set_view(MPI_File fh, MPI_Offset disp, MPI_Datatype etype, MPI_Datatype filetype,
                                 const char *datarep, MPI_Info info)
{
    static void *real;
    int (*fn)(MPI_File, MPI_Offset, MPI_Datatype, MPI_Datatype, const char *, MPI_Info);
    *(void **)&fn = find_fn(&real, FN_PMPI, "PMPI_File_set_view");
    if (IOL_UNLIKELY(fn == NULL))
        return MPI_ERR_INTERN;
    struct mcall c;
    if (!mpi_enter(&c))
        return fn(fh, disp, etype, filetype, datarep, info);
    int r = fn(fh, disp, etype, filetype, datarep, info);
    acct_meta(&c, fh, IOL_M_MPIIO_VIEWS, IOL_M_MPIIO_F_META_TIME, info != pm.info_null, IOL_OP_MPI_SET_VIEW, r);
    return r;
}

IOL_EXPORT int MPI_File_sync(MPI_File fh)
{
    static void *real;
    int (*fn)(MPI_File);
    *(void **)&fn = find_fn(&real, FN_PMPI, "PMPI_File_sync");
    if (IOL_UNLIKELY(fn == NULL))
        return MPI_ERR_INTERN;
    struct mcall c;
    if (!mpi_enter(&c))
        return fn(fh);
    int r = fn(fh);
    acct_meta(&c, fh, IOL_M_MPIIO_SYNCS, IOL_M_MPIIO_F_WRITE_TIME, 0, IOL_OP_MPI_SYNC, r);
    return r;
}

#define C_SIZE_OP(name, counter, op) \
    IOL_EXPORT int MPI_File_##name(MPI_File fh, MPI_Offset size) \
    { \
        static void *real; \
        int (*fn)(MPI_File, MPI_Offset); \
        *(void **)&fn = find_fn(&real, FN_PMPI, "PMPI_File_" #name); \
        if (IOL_UNLIKELY(fn == NULL)) \
            return MPI_ERR_INTERN; \
        struct mcall c; \
        if (!mpi_enter(&c)) \
            return fn(fh, size); \
        int r = fn(fh, size); \
        acct_meta(&c, fh, IOL_M_MPIIO_##counter, IOL_M_MPIIO_F_META_TIME, 0, IOL_OP_##op, r); \
        return r; \
    }
C_SIZE_OP(set_size, SET_SIZES, MPI_SET_SIZE)
C_SIZE_OP(preallocate, PREALLOCATES, MPI_PREALLOCATE)

#define C_WRAP(name, params, args, acct) C_BIND(MPI_File_##name, "PMPI_File_" #name, params, args, acct)
C_WRAP(set_info, (MPI_File fh, MPI_Info info), (fh, info),
       acct_meta(&c, fh, IOL_M_MPIIO_SET_INFOS, IOL_M_MPIIO_F_META_TIME, info != pm.info_null, IOL_OP_MPI_SET_INFO, r))
C_WRAP(get_info, (MPI_File fh, MPI_Info *info_used), (fh, info_used),
       acct_meta(&c, fh, IOL_M_MPIIO_GET_INFOS, IOL_M_MPIIO_F_META_TIME, 0, IOL_OP_MPI_GET_INFO, r))
C_WRAP(delete, (const char *filename, MPI_Info info), (filename, info), acct_delete(&c, filename, r))

/* ---- the Fortran bindings (Open MPI) ----
 * Open MPI's mpif.h and `use mpi` entry points (mpi_file_write_at_, gfortran's names) call PMPI_File_*
 * directly, and `use mpi_f08`'s call ompi_file_*_f (the same code, another name): neither reaches the C
 * wrappers above. Both names are wrapped; a call counts once (the real function of either calls PMPI). */
#if BUILT_FOR_OPEN_MPI
#define F_IO (MPI_Fint *fh, char *buf, MPI_Fint *count, MPI_Fint *dt, MPI_Fint *st, MPI_Fint *ierr)
#define F_IO_A (fh, buf, count, dt, st, ierr)
#define F_AT (MPI_Fint *fh, MPI_Offset *off, char *buf, MPI_Fint *count, MPI_Fint *dt, MPI_Fint *st, MPI_Fint *ierr)
#define F_AT_A (fh, off, buf, count, dt, st, ierr)
#define F_BEGIN (MPI_Fint *fh, char *buf, MPI_Fint *count, MPI_Fint *dt, MPI_Fint *ierr)
#define F_BEGIN_A (fh, buf, count, dt, ierr)
#define F_BEGINAT (MPI_Fint *fh, MPI_Offset *off, char *buf, MPI_Fint *count, MPI_Fint *dt, MPI_Fint *ierr)
#define F_BEGINAT_A (fh, off, buf, count, dt, ierr)
#define F_END (MPI_Fint *fh, char *buf, MPI_Fint *st, MPI_Fint *ierr)
#define F_END_A (fh, buf, st, ierr)
#define F_NB (MPI_Fint *fh, char *buf, MPI_Fint *count, MPI_Fint *dt, MPI_Fint *req, MPI_Fint *ierr)
#define F_NB_A (fh, buf, count, dt, req, ierr)
#define F_NBAT (MPI_Fint *fh, MPI_Offset *off, char *buf, MPI_Fint *count, MPI_Fint *dt, MPI_Fint *req, MPI_Fint *ierr)
#define F_NBAT_A (fh, off, buf, count, dt, req, ierr)
#define FOFF_IO -1
#define FOFF_AT *off
#define FOFF_BEGIN -1
#define FOFF_BEGINAT *off
#define FOFF_END -1
#define FOFF_NB -1
#define FOFF_NBAT *off
#define FCNT_END 0, (MPI_Datatype)0
#define FCNT_OTHER *count, pm.Type_f2c(*dt)
#define FCNT_IO FCNT_OTHER
#define FCNT_AT FCNT_OTHER
#define FCNT_BEGIN FCNT_OTHER
#define FCNT_BEGINAT FCNT_OTHER
#define FCNT_NB FCNT_OTHER
#define FCNT_NBAT FCNT_OTHER

#define F_XFER_SYM(sym, op, kind, w, shape) \
    IOL_EXPORT void sym F_##shape \
    { \
        static void *real; \
        void(*fn) F_##shape; \
        *(void **)&fn = find_fn(&real, FN_NEXT, #sym); \
        if (IOL_UNLIKELY(fn == NULL)) { \
            *ierr = MPI_ERR_INTERN; \
            return; \
        } \
        struct mcall c; \
        if (!mpi_enter(&c)) { \
            fn F_##shape##_A; \
            return; \
        } \
        fn F_##shape##_A; \
        acct_io(&c, pm.File_f2c(*fh), FCNT_##shape, FOFF_##shape, KIND_OF(kind), w, IOL_OP_##op, (int)*ierr); \
    }
#define F_XFER(name, op, kind, w, shape) \
    F_XFER_SYM(mpi_file_##name##_, op, kind, w, shape) F_XFER_SYM(ompi_file_##name##_f, op, kind, w, shape)
MPIIO_XFERS(F_XFER)

/* A Fortran string: its bytes without the trailing blanks, NUL-terminated in out[cap]. */
static const char *fortran_string(const char *s, size_t len, char *out, size_t cap)
{
    while (len > 0 && s[len - 1] == ' ')
        len--;
    if (len >= cap)
        return NULL;
    memcpy(out, s, len);
    out[len] = '\0';
    return out;
}

#define F_OPEN_SYM(sym) \
    IOL_EXPORT void sym(MPI_Fint *comm, char *name, MPI_Fint *amode, MPI_Fint *info, MPI_Fint *fh, MPI_Fint *ierr, \
                        size_t name_len) \
    { \
        static void *real; \
        void (*fn)(MPI_Fint *, char *, MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *, size_t); \
        *(void **)&fn = find_fn(&real, FN_NEXT, #sym); \
        if (IOL_UNLIKELY(fn == NULL)) { \
            *ierr = MPI_ERR_INTERN; \
            return; \
        } \
        struct mcall c; \
        if (!mpi_enter(&c)) { \
            fn(comm, name, amode, info, fh, ierr, name_len); \
            return; \
        } \
        fn(comm, name, amode, info, fh, ierr, name_len); \
        char path[PATH_MAX]; \
        const char *p = fortran_string(name, name_len, path, sizeof path); \
        acct_open(&c, pm.Comm_f2c(*comm), p, *amode, pm.Info_f2c(*info), \
                  *ierr == MPI_SUCCESS ? pm.File_f2c(*fh) : NULL, (int)*ierr); \
    }
F_OPEN_SYM(mpi_file_open_)
F_OPEN_SYM(ompi_file_open_f)

#define F_CLOSE_SYM(sym) \
    IOL_EXPORT void sym(MPI_Fint *fh, MPI_Fint *ierr) \
    { \
        static void *real; \
        void (*fn)(MPI_Fint *, MPI_Fint *); \
        *(void **)&fn = find_fn(&real, FN_NEXT, #sym); \
        if (IOL_UNLIKELY(fn == NULL)) { \
            *ierr = MPI_ERR_INTERN; \
            return; \
        } \
        struct mcall c; \
        if (!mpi_enter(&c)) { \
            fn(fh, ierr); \
            return; \
        } \
        MPI_File h = pm.File_f2c(*fh); \
        fn(fh, ierr); \
        acct_close(&c, h, (int)*ierr); \
    }
F_CLOSE_SYM(mpi_file_close_)
F_CLOSE_SYM(ompi_file_close_f)

/* A call that moves no data: its parameters, arguments, counter, time counter, whether it was given hints,
 * trace op. */
#define F_META_SYM(sym, params, args, counter, time_counter, hints, op) \
    IOL_EXPORT void sym params \
    { \
        static void *real; \
        void(*fn) params; \
        *(void **)&fn = find_fn(&real, FN_NEXT, #sym); \
        if (IOL_UNLIKELY(fn == NULL)) { \
            *ierr = MPI_ERR_INTERN; \
            return; \
        } \
        struct mcall c; \
        if (!mpi_enter(&c)) { \
            fn args; \
            return; \
        } \
        fn args; \
        acct_meta(&c, pm.File_f2c(*fh), IOL_M_MPIIO_##counter, IOL_M_MPIIO_##time_counter, hints, IOL_OP_##op, \
                  (int)*ierr); \
    }
#define F_VIEW (MPI_Fint *fh, MPI_Offset *disp, MPI_Fint *etype, MPI_Fint *filetype, char *datarep, MPI_Fint *info, \
                MPI_Fint *ierr, size_t datarep_len)
#define F_VIEW_A (fh, disp, etype, filetype, datarep, info, ierr, datarep_len)
#define F_SYNC (MPI_Fint *fh, MPI_Fint *ierr)
#define F_SYNC_A (fh, ierr)
#define F_SIZE (MPI_Fint *fh, MPI_Offset *size, MPI_Fint *ierr)
#define F_SIZE_A (fh, size, ierr)
#define F_META(name, shape, counter, time_counter, hints, op) \
    F_META_SYM(mpi_file_##name##_, F_##shape, F_##shape##_A, counter, time_counter, hints, op) \
    F_META_SYM(ompi_file_##name##_f, F_##shape, F_##shape##_A, counter, time_counter, hints, op)
F_META(set_view, VIEW, VIEWS, F_META_TIME, pm.Info_f2c(*info) != pm.info_null, MPI_SET_VIEW)
F_META(sync, SYNC, SYNCS, F_WRITE_TIME, 0, MPI_SYNC)
F_META(set_size, SIZE, SET_SIZES, F_META_TIME, 0, MPI_SET_SIZE)
F_META(preallocate, SIZE, PREALLOCATES, F_META_TIME, 0, MPI_PREALLOCATE)
#define F_INFO (MPI_Fint *fh, MPI_Fint *info, MPI_Fint *ierr)
#define F_INFO_A (fh, info, ierr)
F_META(set_info, INFO, SET_INFOS, F_META_TIME, pm.Info_f2c(*info) != pm.info_null, MPI_SET_INFO)
F_META(get_info, INFO, GET_INFOS, F_META_TIME, 0, MPI_GET_INFO)

#define F_DELETE_SYM(sym) \
    IOL_EXPORT void sym(char *name, MPI_Fint *info, MPI_Fint *ierr, size_t name_len) \
    { \
        static void *real; \
        void (*fn)(char *, MPI_Fint *, MPI_Fint *, size_t); \
        *(void **)&fn = find_fn(&real, FN_NEXT, #sym); \
        if (IOL_UNLIKELY(fn == NULL)) { \
            *ierr = MPI_ERR_INTERN; \
            return; \
        } \
        struct mcall c; \
        if (!mpi_enter(&c)) { \
            fn(name, info, ierr, name_len); \
            return; \
        } \
        fn(name, info, ierr, name_len); \
        char path[PATH_MAX]; \
        acct_delete(&c, fortran_string(name, name_len, path, sizeof path), (int)*ierr); \
    }
F_DELETE_SYM(mpi_file_delete_)
F_DELETE_SYM(ompi_file_delete_f)
#endif

/* The MPI library's function or object of this name, wherever the library was loaded (wrap_finalize.c). */
void *iol_pmpi_lookup(const char *name)
{
    return pmpi_sym(name);
}
