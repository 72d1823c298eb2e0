/* wrap_hdf5.c — the HDF5 layer: H5F (files) and H5D (datasets) through the public HDF5 API (docs/profile.md,
 * "HDF5"; the counters are docs/profile-log.md's H5F and H5D modules, Darshan's names and meanings).
 *
 * Built only where hdf5.h is (CMake's IOLENS_HAVE_HDF5), and never linked against libhdf5: the runtime loads
 * into every process, and most have no HDF5. The runtime defines H5Fopen, H5Dwrite, ...; a program's call
 * reaches the wrapper, which finds the real function in the HDF5 library the CALLER is bound to: a process
 * may hold two HDF5 libraries (the system's, and the copy inside h5py's wheel, loaded RTLD_LOCAL by Python),
 * and ids of one must never reach the other. The caller's object (dladdr of the return address) is asked
 * for H5open, a function the runtime does not define, so the answer is the library the caller's own
 * symbol lookup gives; every real function and every query (H5Sget_select_npoints, H5Iget_name, ...) then
 * comes from that one library. The answer is cached per call site.
 *
 * A wrapper takes no guard while the HDF5 call runs, so the MPI-IO and POSIX calls the library makes are
 * recorded beneath it (the layers stack: a dataset's file and the file's POSIX records share a path). An
 * HDF5 call made inside a wrapper on the same thread (libhdf5 calling its own public API) passes through.
 * The queries run only after a call succeeded, on the ids it was given or returned (a successful call
 * leaves the error stack empty, and the queries on valid ids push nothing onto it); a failed call is
 * counted as an error and nothing else, so the error stack the program may print is the library's.
 *
 * Records: an H5F record per (thread, file), named by the file's absolute path (the path the POSIX layer
 * uses); an H5D record per (thread, dataset), named "FILE:DATASET" as Darshan names it, a FILES entry of
 * kind IOL_KIND_OBJECT with a MODULE_TEXT record holding the dataset's name (the reader splits the two with
 * it). Ids are mapped to what is known of them (hid_t values are not reused by HDF5 1.10+ within a run);
 * a dataset first seen in a read or write (opened with H5Oopen, as h5py does) is looked up then. */
#include "wrap.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <string.h>

#include <hdf5.h>

/* The functions the runtime wraps, and the ones it calls to describe an id (never wrapped). */
#define H5_WRAPPED(X) \
    X(hid_t, Fcreate, (const char *, unsigned, hid_t, hid_t)) X(hid_t, Fopen, (const char *, unsigned, hid_t)) \
    X(herr_t, Fflush, (hid_t, H5F_scope_t)) X(herr_t, Fclose, (hid_t)) \
    X(hid_t, Dcreate2, (hid_t, const char *, hid_t, hid_t, hid_t, hid_t, hid_t)) \
    X(hid_t, Dcreate1, (hid_t, const char *, hid_t, hid_t, hid_t)) X(hid_t, Dopen2, (hid_t, const char *, hid_t)) \
    X(hid_t, Dopen1, (hid_t, const char *)) X(herr_t, Dread, (hid_t, hid_t, hid_t, hid_t, hid_t, void *)) \
    X(herr_t, Dwrite, (hid_t, hid_t, hid_t, hid_t, hid_t, const void *)) X(herr_t, Dflush, (hid_t)) \
    X(herr_t, Dclose, (hid_t)) X(int, Idec_ref, (hid_t))
#define H5_QUERIES(X) \
    X(ssize_t, Fget_name, (hid_t, char *, size_t)) X(ssize_t, Iget_name, (hid_t, char *, size_t)) \
    X(hid_t, Fget_access_plist, (hid_t)) X(hid_t, Pget_driver, (hid_t)) \
    X(herr_t, Pget_alignment, (hid_t, hsize_t *, hsize_t *)) X(herr_t, Pget_dxpl_mpio, (hid_t, int *)) \
    X(hid_t, Dget_space, (hid_t)) X(hid_t, Dget_type, (hid_t)) X(hid_t, Dget_create_plist, (hid_t)) \
    X(int, Sget_simple_extent_ndims, (hid_t)) X(hssize_t, Sget_simple_extent_npoints, (hid_t)) \
    X(hssize_t, Sget_select_npoints, (hid_t)) X(H5S_sel_type, Sget_select_type, (hid_t)) \
    X(htri_t, Sis_regular_hyperslab, (hid_t)) X(herr_t, Sclose, (hid_t)) X(size_t, Tget_size, (hid_t)) \
    X(herr_t, Tclose, (hid_t)) X(H5D_layout_t, Pget_layout, (hid_t)) X(int, Pget_chunk, (hid_t, int, hsize_t *)) \
    X(herr_t, Pclose, (hid_t))

/* One HDF5 library of the process. */
struct h5lib {
    void *base; /* its load address */
#define X(ret, name, params) ret (*name) params;
    H5_WRAPPED(X) H5_QUERIES(X)
#undef X
    herr_t (*Pset_dxpl_mpio)(hid_t, int); /* wrapped in parallel builds (the transfer-mode cache below) */
    hid_t (*mpio_init)(void); /* HDF5 1.10/1.12 parallel builds: the MPI-IO driver's id */
    hid_t *mpio_id;           /* 1.14 parallel builds: the same, a variable */
};

#define MAX_LIBS 4
static struct h5lib libs[MAX_LIBS];
static int nlibs;
static struct iol_lock lib_lock;

/* H5Fopen's flags: hdf5.h's macros call H5check_version and H5open (the runtime never links HDF5). */
#define ACC_RDWR 0x0001u
#define ACC_SWMR_WRITE 0x0020u
#define ACC_SWMR_READ 0x0040u
/* H5FD_mpio_xfer_t's H5FD_MPIO_COLLECTIVE (the enum exists in parallel builds only). */
#define XFER_COLLECTIVE 1
/* H5S_ALL is 0; HDF5 1.14 adds H5S_BLOCK (1) and H5S_PLIST (2), never dataspace ids. */
#define SPACE_SPECIAL_MAX 2

/* Under lib_lock: the library at base (its path fname), described once. */
static struct h5lib *lib_add(void *base, const char *fname)
{
    for (int i = 0; i < nlibs; i++)
        if (libs[i].base == base)
            return &libs[i];
    if (nlibs == MAX_LIBS)
        return NULL;
    void *h = dlopen(fname, RTLD_LAZY | RTLD_NOLOAD); /* loaded already: nothing is opened (kept open) */
    if (h == NULL)
        return NULL;
    struct h5lib *l = &libs[nlibs];
#define X(ret, name, params) *(void **)&l->name = dlsym(h, "H5" #name);
    H5_WRAPPED(X) H5_QUERIES(X)
#undef X
    *(void **)&l->Pset_dxpl_mpio = dlsym(h, "H5Pset_dxpl_mpio");
    *(void **)&l->mpio_init = dlsym(h, "H5FD_mpio_init");
    l->mpio_id = dlsym(h, "H5FD_MPIO_id_g");
    __atomic_store_n(&l->base, base, __ATOMIC_RELEASE);
    nlibs++;
    return l;
}

/* The library a call from ra reaches when the runtime is not in the way (libfind.c). */
static struct h5lib *lib_resolve(const void *ra)
{
    void *fn = iol_lib_sym(ra, "H5open");
    Dl_info li;
    if (fn == NULL || dladdr(fn, &li) == 0 || li.dli_fname == NULL)
        return NULL;
    iol_lock(&lib_lock);
    struct h5lib *l = lib_add(li.dli_fbase, li.dli_fname);
    iol_unlock(&lib_lock);
    return l;
}

/* Call site -> library: a direct-mapped cache of immutable pairs. */
struct site {
    const void *ra;
    struct h5lib *lib;
};
#define SITES 128
static struct site *sites[SITES];

static struct h5lib *lib_for(const void *ra)
{
    size_t k = ((uintptr_t)ra >> 2) % SITES;
    struct site *s = __atomic_load_n(&sites[k], __ATOMIC_ACQUIRE);
    if (IOL_LIKELY(s != NULL && s->ra == ra))
        return s->lib;
    struct iol_thread *t = &iol_tls;
    int saved = errno, guard = t->guard;
    t->guard = IOL_GUARD_IN; /* the loader's own file accesses are not the program's */
    struct h5lib *l = lib_resolve(ra);
    if (l != NULL && (s = iol_alloc(sizeof *s)) != NULL) {
        s->ra = ra;
        s->lib = l;
        __atomic_store_n(&sites[k], s, __ATOMIC_RELEASE);
    }
    t->guard = guard;
    errno = saved;
    return l;
}

/* ---- id -> what the runtime knows of it ---- */
struct hobj {
    hid_t id;
    struct iol_file *f;    /* the record's name: the file (H5F), or FILE:DATASET (H5D) */
    struct iol_file *file; /* a dataset's file (NULL for a file id) */
    uint64_t ndims, npoints, type_size, chunked, deprecated;
    int unnamed;           /* a dataset that could not be named (an excluded path): not asked again */
    uint64_t chunk[5];     /* D1 = the last dimension, as Darshan's */
    struct hobj *next;
};
#define BUCKETS 1024
static struct hobj *bucket[BUCKETS];
static struct hobj *spare;
static struct iol_lock obj_lock;

static size_t bucket_of(hid_t id)
{
    return (size_t)(((uint64_t)id * 0x9E3779B97F4A7C15ull) >> 54) % BUCKETS;
}

/* The entry of id (removed from the table when take). The caller holds obj_lock. */
static struct hobj *obj_find(hid_t id, int take)
{
    for (struct hobj **p = &bucket[bucket_of(id)]; *p != NULL; p = &(*p)->next)
        if ((*p)->id == id) {
            struct hobj *o = *p;
            if (take)
                *p = o->next;
            return o;
        }
    return NULL;
}

/* A copy of id's entry in out; 0 when there is none (taken out of the table when take). */
static int obj_get(hid_t id, int take, struct hobj *out)
{
    iol_lock(&obj_lock);
    struct hobj *o = obj_find(id, take);
    if (o != NULL) {
        *out = *o;
        if (take) {
            o->next = spare;
            spare = o;
        }
    }
    iol_unlock(&obj_lock);
    return o != NULL;
}

static void obj_put(const struct hobj *src)
{
    iol_lock(&obj_lock);
    struct hobj *o = obj_find(src->id, 0);
    if (o == NULL) {
        if ((o = spare) != NULL)
            spare = o->next;
        else
            o = iol_alloc(sizeof *o);
        if (o != NULL) {
            size_t b = bucket_of(src->id);
            *o = *src;
            o->next = bucket[b];
            bucket[b] = o;
        }
    } else {
        struct hobj *next = o->next;
        *o = *src;
        o->next = next;
    }
    iol_unlock(&obj_lock);
}

/* ---- transfer lists: whether each asks for collective transfers ----
 * H5Pget_dxpl_mpio costs about 900 instructions (HDF5's API context and property lookup), more than the rest
 * of a read's or write's accounting together, and a program passes the same list to every call. So the answer
 * is kept per (library, list id), in a small direct-mapped table, and dropped when the program changes the
 * list's mode (the H5Pset_dxpl_mpio wrapper). A list id is not reused within a run (HDF5 1.10+); a copy is a
 * new id. The generation keeps a query that raced with a change from storing the old answer. (A mode set
 * through the generic H5Pset/H5Pcopy_prop on HDF5's internal property name is not seen: no program does.) */
#ifdef H5_HAVE_PARALLEL
#define XFER_CACHE 1
#else
#define XFER_CACHE 0
#endif
struct xmode {
    struct h5lib *lib;
    hid_t id;
    int coll;
};
#define XMODES 64
static struct xmode xmodes[XMODES];
static uint64_t xmode_gen;
static struct iol_lock xmode_lock;

/* Under the guard (the query is the runtime's own call). */
static int xfer_collective(struct h5lib *l, hid_t dxpl)
{
    struct xmode *x = &xmodes[bucket_of(dxpl) % XMODES];
    iol_lock(&xmode_lock);
    int hit = XFER_CACHE && x->lib == l && x->id == dxpl, coll = x->coll;
    uint64_t gen = xmode_gen;
    iol_unlock(&xmode_lock);
    if (hit)
        return coll;
    int mode = 0;
    coll = l->Pget_dxpl_mpio != NULL && l->Pget_dxpl_mpio(dxpl, &mode) >= 0 && mode == XFER_COLLECTIVE;
    iol_lock(&xmode_lock);
    if (xmode_gen == gen)
        *x = (struct xmode){ l, dxpl, coll };
    iol_unlock(&xmode_lock);
    return coll;
}

static void xfer_forget(struct h5lib *l, hid_t dxpl)
{
    struct xmode *x = &xmodes[bucket_of(dxpl) % XMODES];
    iol_lock(&xmode_lock);
    xmode_gen++;
    if (x->lib == l && x->id == dxpl)
        x->lib = NULL;
    iol_unlock(&xmode_lock);
}

/* ---- describing ids (after a successful call, under the guard) ---- */

/* The absolute path of the file an object belongs to, in abs[PATH_MAX]; its length, or -1. */
static long file_path(struct h5lib *l, hid_t id, char *abs)
{
    char name[PATH_MAX];
    if (l->Fget_name == NULL)
        return -1;
    ssize_t n = l->Fget_name(id, name, sizeof name);
    if (n <= 0 || (size_t)n >= sizeof name)
        return -1;
    long len = iol_path_abs(AT_FDCWD, name, abs);
    return len >= 0 && !iol_path_excluded(abs, (size_t)len) ? len : -1;
}

static struct iol_file *file_entry(struct iol_thread *t, const char *abs, long len)
{
    return len >= 0 ? iol_file_get(t, abs, (size_t)len, 0, IOL_KIND_UNKNOWN, 0) : NULL;
}

/* A dataset's entry: its names, shape, type size and chunks. 0 when it cannot be named. */
static int dataset_describe(struct iol_thread *t, struct h5lib *l, hid_t id, struct hobj *o)
{
    char abs[PATH_MAX + 256];
    long len = file_path(l, id, abs);
    memset(o, 0, sizeof *o);
    o->id = id;
    if (len < 0 || (o->file = file_entry(t, abs, len)) == NULL || l->Iget_name == NULL)
        return 0;
    /* "FILE:DATASET" (an anonymous dataset has no name: "(anonymous)") */
    size_t room = sizeof abs - (size_t)len - 1;
    abs[len] = ':';
    ssize_t n = l->Iget_name(id, abs + len + 1, room);
    if (n <= 0 || (size_t)n >= room) {
        static const char anon[] = "(anonymous)";
        memcpy(abs + len + 1, anon, sizeof anon);
        n = (ssize_t)(sizeof anon - 1);
    }
    o->f = iol_file_get(t, abs, (size_t)len + 1 + (size_t)n, 0, IOL_KIND_OBJECT, 0);
    if (o->f == NULL)
        return 0;
    hid_t s = l->Dget_space != NULL ? l->Dget_space(id) : H5I_INVALID_HID;
    if (s >= 0) {
        int nd = l->Sget_simple_extent_ndims(s);
        hssize_t np = l->Sget_simple_extent_npoints(s);
        o->ndims = nd > 0 ? (uint64_t)nd : 0;
        o->npoints = np > 0 ? (uint64_t)np : 0;
        l->Sclose(s);
    }
    hid_t ty = l->Dget_type != NULL ? l->Dget_type(id) : H5I_INVALID_HID;
    if (ty >= 0) {
        o->type_size = l->Tget_size(ty);
        l->Tclose(ty);
    }
    hid_t dcpl = l->Dget_create_plist != NULL ? l->Dget_create_plist(id) : H5I_INVALID_HID;
    if (dcpl >= 0) {
        if (l->Pget_layout(dcpl) == H5D_CHUNKED) {
            hsize_t dims[32];
            int k = l->Pget_chunk(dcpl, 32, dims);
            o->chunked = 1;
            for (int i = 0; i < k && i < 5; i++)
                o->chunk[i] = dims[k - 1 - i];
        }
        l->Pclose(dcpl);
    }
    return 1;
}

/* The dataset entry of id: the table's, or (ask: after a successful call) described now and kept. */
static int dataset_of(struct iol_thread *t, struct h5lib *l, hid_t id, int ask, struct hobj *o)
{
    if (obj_get(id, 0, o) && (o->file != NULL || o->unnamed))
        return o->file != NULL;
    if (!ask)
        return 0;
    int named = dataset_describe(t, l, id, o);
    if (!named) {
        memset(o, 0, sizeof *o);
        o->id = id;
        o->unnamed = 1;
    }
    obj_put(o);
    return named;
}

/* ---- a call being recorded ---- */
struct hcall {
    struct iol_thread *t;
    struct h5lib *l;
    uint64_t t0, t1, dur;
};

static inline int h5_enter(struct hcall *c, struct h5lib *l)
{
    struct iol_thread *t = &iol_tls;
    if (t->guard != 0 || t->h5_depth != 0 || !__atomic_load_n(&iol_g.on, __ATOMIC_RELAXED))
        return 0;
    t->h5_depth = 1;
    c->t = t;
    c->l = l;
    c->t0 = iol_ticks();
    return 1;
}

/* After the real call: its time, and the guard on (the runtime's own HDF5 and POSIX calls pass). */
static inline void h5_after(struct hcall *c)
{
    c->t1 = iol_ticks();
    c->dur = iol_ns(c->t0, c->t1);
    c->t->guard = IOL_GUARD_IN;
}

/* op 0: no trace record (an H5Idec_ref that closed nothing the runtime knows). */
static inline void h5_leave(struct hcall *c, int op, struct iol_file *f, uint64_t bytes, int64_t r)
{
    if (op != 0)
        iol_trace(c->t, op, f != NULL ? f->id : 0, c->t0, c->t1, 0, bytes, r);
    c->t->guard = 0;
    c->t->h5_depth = 0;
}

#define F(c) v[IOL_M_H5F_##c]
#define D(c) v[IOL_M_H5D_##c]

static void stamp_first(uint64_t *first, uint64_t t0)
{
    if (*first == 0)
        *first = iol_stamp(t0);
}

/* ---- H5F ---- */
static void acct_fopen(struct hcall *c, const char *name, unsigned flags, int create, hid_t r)
{
    int e = errno;
    h5_after(c);
    struct iol_thread *t = c->t;
    struct h5lib *l = c->l;
    char abs[PATH_MAX];
    long len = name != NULL ? iol_path_abs(AT_FDCWD, name, abs) : -1;
    if (len >= 0 && iol_path_excluded(abs, (size_t)len))
        len = -1;
    /* A failed open counts only on a file the log already has (as a POSIX open does). */
    struct iol_file *f = r >= 0 ? file_entry(t, abs, len) : len >= 0 ? iol_file_find(abs, (size_t)len, 0) : NULL;
    struct iol_tmod *m = f != NULL ? iol_module_rec(t, f, IOL_MOD_H5F) : NULL;
    if (m != NULL) {
        uint64_t *v = m->v;
        F(F_META_TIME) += c->dur;
        if (r < 0) {
            F(ERRORS)++;
        } else {
            F(OPENS)++;
            F(CREATES) += create;
            F(OPENS_RDWR) += !create && (flags & ACC_RDWR) != 0;
            F(OPENS_SWMR) += (flags & (ACC_SWMR_WRITE | ACC_SWMR_READ)) != 0;
            stamp_first(&F(F_OPEN_START_TIMESTAMP), c->t0);
            F(F_OPEN_END_TIMESTAMP) = iol_stamp(c->t1);
            hid_t fapl = l->Fget_access_plist != NULL ? l->Fget_access_plist(r) : H5I_INVALID_HID;
            if (fapl >= 0) {
                hid_t mpio = l->mpio_id != NULL ? *l->mpio_id : l->mpio_init != NULL ? l->mpio_init() : -1;
                if (mpio >= 0 && l->Pget_driver != NULL && l->Pget_driver(fapl) == mpio)
                    F(USE_MPIIO) = 1;
                hsize_t thr = 0, align = 0;
                if (l->Pget_alignment != NULL && l->Pget_alignment(fapl, &thr, &align) >= 0) {
                    F(ALIGNMENT) = align;
                    F(ALIGN_THRESHOLD) = thr;
                }
                l->Pclose(fapl);
            }
            struct hobj o = { .id = r, .f = f };
            obj_put(&o);
        }
    }
    h5_leave(c, create ? IOL_OP_H5F_CREATE : IOL_OP_H5F_OPEN, f, 0, r < 0 ? -1 : 0);
    errno = e;
}

/* The file an object id belongs to: known ids first, else (ask: after a successful call) its name. */
static struct iol_file *file_of(struct iol_thread *t, struct h5lib *l, hid_t id, int ask)
{
    struct hobj o;
    if (obj_get(id, 0, &o))
        return o.file != NULL ? o.file : o.f;
    if (!ask)
        return NULL;
    char abs[PATH_MAX];
    return file_entry(t, abs, file_path(l, id, abs));
}

/* ---- H5D ---- */
static void dataset_static(uint64_t *v, const struct hobj *o)
{
    D(DATASPACE_NDIMS) = o->ndims;
    if (o->npoints > D(DATASPACE_NPOINTS))
        D(DATASPACE_NPOINTS) = o->npoints;
    D(DATATYPE_SIZE) = o->type_size;
    D(CHUNKED) = o->chunked;
    for (int i = 0; i < 5; i++)
        v[IOL_M_H5D_CHUNK_SIZE_D1 + i] = o->chunk[i];
    D(USE_DEPRECATED) |= o->deprecated;
}

static void acct_dopen(struct hcall *c, int create, int deprecated, hid_t r)
{
    int e = errno;
    h5_after(c);
    struct hobj o = { .id = r };
    int known = r >= 0 && dataset_describe(c->t, c->l, r, &o);
    struct iol_tmod *m = known ? iol_module_rec(c->t, o.f, IOL_MOD_H5D) : NULL;
    if (known) {
        o.deprecated = (uint64_t)deprecated;
        obj_put(&o);
    } else if (r >= 0) { /* not nameable (an excluded file): remembered, not asked again */
        memset(&o, 0, sizeof o);
        o.id = r;
        o.unnamed = 1;
        obj_put(&o);
    }
    if (m != NULL) {
        uint64_t *v = m->v;
        D(F_META_TIME) += c->dur;
        D(OPENS)++;
        D(CREATES) += create;
        dataset_static(v, &o);
        stamp_first(&D(F_OPEN_START_TIMESTAMP), c->t0);
        D(F_OPEN_END_TIMESTAMP) = iol_stamp(c->t1);
        /* the dataset's own name, to split "FILE:DATASET" without guessing */
        size_t flen = o.file->len;
        iol_module_text(c->t, m, o.f, IOL_MOD_H5D, IOLP_TEXT_DATASET, o.f->path + flen + 1, o.f->len - flen - 1);
    }
    /* A failed open or create names no dataset: an error of the file's H5F record is all that is known. */
    h5_leave(c, create ? IOL_OP_H5D_CREATE : IOL_OP_H5D_OPEN, known ? o.file : NULL, 0, r < 0 ? -1 : 0);
    errno = e;
}

/* A read or write: its file selection (kind and points) gives the bytes, as Darshan's. */
static void acct_dio(struct hcall *c, hid_t id, hid_t fspace, hid_t dxpl, int w, herr_t r)
{
    int e = errno;
    h5_after(c);
    struct h5lib *l = c->l;
    struct hobj o;
    struct iol_tmod *m = NULL;
    uint64_t bytes = 0;
    if (dataset_of(c->t, l, id, r >= 0, &o) && (m = iol_module_rec(c->t, o.f, IOL_MOD_H5D)) != NULL) {
        uint64_t *v = m->v;
        if (w)
            D(F_WRITE_TIME) += c->dur;
        else
            D(F_READ_TIME) += c->dur;
        if (r < 0) {
            D(ERRORS)++;
        } else {
            uint64_t points = o.npoints;
            if (fspace <= SPACE_SPECIAL_MAX) {
                D(ALL_SELECTS)++;
                hid_t s = l->Dget_space(id); /* the extent now (a dataset may have grown since its open) */
                if (s >= 0) {
                    hssize_t np = l->Sget_simple_extent_npoints(s);
                    points = np > 0 ? (uint64_t)np : 0;
                    l->Sclose(s);
                }
                if (points > o.npoints) {
                    o.npoints = points;
                    obj_put(&o);
                }
            } else {
                hssize_t np = l->Sget_select_npoints(fspace);
                points = np > 0 ? (uint64_t)np : 0;
                switch (l->Sget_select_type(fspace)) {
                case H5S_SEL_POINTS:
                    D(POINT_SELECTS)++;
                    break;
                case H5S_SEL_HYPERSLABS:
                    if (l->Sis_regular_hyperslab != NULL && l->Sis_regular_hyperslab(fspace) > 0)
                        D(REGULAR_HYPERSLAB_SELECTS)++;
                    else
                        D(IRREGULAR_HYPERSLAB_SELECTS)++;
                    break;
                case H5S_SEL_ALL:
                    D(ALL_SELECTS)++;
                    break;
                default:
                    break;
                }
            }
            dataset_static(v, &o);
            bytes = points * o.type_size;
            int coll = dxpl != H5P_DEFAULT && xfer_collective(l, dxpl);
            if (coll)
                D(USE_MPIIO_COLLECTIVE) = 1;
            if (w) {
                D(WRITES)++;
                D(COLL_WRITES) += coll;
                D(BYTES_WRITTEN) += bytes;
            } else {
                D(READS)++;
                D(COLL_READS) += coll;
                D(BYTES_READ) += bytes;
            }
            v[(w ? IOL_M_H5D_SIZE_WRITE_AGG_0_100 : IOL_M_H5D_SIZE_READ_AGG_0_100) + iol_size_bucket(bytes)]++;
            iol_top_add(c->t, &D(ACCESS1_ACCESS), &D(ACCESS1_COUNT), &m->over, bytes);
            D(RW_SWITCHES) += m->last == (w ? 1 : 2);
            m->last = w ? 2 : 1;
            stamp_first(w ? &D(F_WRITE_START_TIMESTAMP) : &D(F_READ_START_TIMESTAMP), c->t0);
            v[w ? IOL_M_H5D_F_WRITE_END_TIMESTAMP : IOL_M_H5D_F_READ_END_TIMESTAMP] = iol_stamp(c->t1);
            uint64_t *longest = w ? &D(F_MAX_WRITE_TIME) : &D(F_MAX_READ_TIME);
            if (c->dur > *longest) {
                *longest = c->dur;
                v[w ? IOL_M_H5D_MAX_WRITE_TIME_SIZE : IOL_M_H5D_MAX_READ_TIME_SIZE] = bytes;
            }
        }
    }
    h5_leave(c, w ? IOL_OP_H5D_WRITE : IOL_OP_H5D_READ, m != NULL ? o.file : NULL, bytes, r < 0 ? -1 : 0);
    errno = e;
}

/* ---- a flush or a close (H5F or H5D) ---- */
struct meta_ix {
    unsigned module, meta_time, errors, closes, close_start, close_end, flushes;
    int op_close, op_flush;
};
#define META_IX(M) \
    { IOL_MOD_##M, IOL_M_##M##_F_META_TIME, IOL_M_##M##_ERRORS, IOL_M_##M##_CLOSES, \
      IOL_M_##M##_F_CLOSE_START_TIMESTAMP, IOL_M_##M##_F_CLOSE_END_TIMESTAMP, IOL_M_##M##_FLUSHES, \
      IOL_OP_##M##_CLOSE, IOL_OP_##M##_FLUSH }
static const struct meta_ix h5f_meta = META_IX(H5F), h5d_meta = META_IX(H5D);

/* rec: the record's name (the file, or FILE:DATASET); file: the HDF5 file (the trace's). */
static void acct_meta(struct hcall *c, const struct meta_ix *x, struct iol_file *rec, struct iol_file *file,
                      int close, herr_t r)
{
    int e = errno;
    struct iol_tmod *m = rec != NULL ? iol_module_rec(c->t, rec, x->module) : NULL;
    if (m != NULL) {
        uint64_t *v = m->v;
        v[x->meta_time] += c->dur;
        if (r < 0) {
            v[x->errors]++;
        } else if (close) {
            v[x->closes]++;
            stamp_first(&v[x->close_start], c->t0);
            v[x->close_end] = iol_stamp(c->t1);
        } else {
            v[x->flushes]++;
        }
    }
    h5_leave(c, close ? x->op_close : x->op_flush, file, 0, r < 0 ? -1 : 0);
    errno = e;
}

/* ---- the wrappers ---- */

/* The caller's library, or the wrapper's failure value when there is none (HDF5's FAIL / H5I_INVALID_HID). */
#define H5_LIB(fn) \
    struct h5lib *l = lib_for(__builtin_return_address(0)); \
    if (IOL_UNLIKELY(l == NULL || l->fn == NULL)) \
        return -1;

/* A wrapper whose accounting needs only the call's arguments and result: the real call, then acct. */
#define H5_WRAP(ret, name, params, args, acct) \
    IOL_EXPORT ret H5##name params \
    { \
        H5_LIB(name) \
        struct hcall c; \
        if (!h5_enter(&c, l)) \
            return l->name args; \
        ret r = l->name args; \
        acct; \
        return r; \
    }

static void acct_fflush(struct hcall *c, hid_t id, herr_t r)
{
    h5_after(c);
    struct iol_file *f = file_of(c->t, c->l, id, r >= 0);
    acct_meta(c, &h5f_meta, f, f, 0, r);
}

static void acct_dflush(struct hcall *c, hid_t id, herr_t r)
{
    h5_after(c);
    struct hobj o;
    int known = dataset_of(c->t, c->l, id, r >= 0, &o);
    acct_meta(c, &h5d_meta, known ? o.f : NULL, known ? o.file : NULL, 0, r);
}

H5_WRAP(hid_t, Fcreate, (const char *name, unsigned flags, hid_t fcpl, hid_t fapl), (name, flags, fcpl, fapl),
        acct_fopen(&c, name, flags, 1, r))
H5_WRAP(hid_t, Fopen, (const char *name, unsigned flags, hid_t fapl), (name, flags, fapl),
        acct_fopen(&c, name, flags, 0, r))
H5_WRAP(herr_t, Fflush, (hid_t id, H5F_scope_t scope), (id, scope), acct_fflush(&c, id, r))
H5_WRAP(hid_t, Dcreate2,
        (hid_t loc, const char *name, hid_t type, hid_t space, hid_t lcpl, hid_t dcpl, hid_t dapl),
        (loc, name, type, space, lcpl, dcpl, dapl), acct_dopen(&c, 1, 0, r))
H5_WRAP(hid_t, Dcreate1, (hid_t loc, const char *name, hid_t type, hid_t space, hid_t dcpl),
        (loc, name, type, space, dcpl), acct_dopen(&c, 1, 1, r))
H5_WRAP(hid_t, Dopen2, (hid_t loc, const char *name, hid_t dapl), (loc, name, dapl), acct_dopen(&c, 0, 0, r))
H5_WRAP(hid_t, Dopen1, (hid_t loc, const char *name), (loc, name), acct_dopen(&c, 0, 1, r))
H5_WRAP(herr_t, Dread, (hid_t id, hid_t mtype, hid_t mspace, hid_t fspace, hid_t dxpl, void *buf),
        (id, mtype, mspace, fspace, dxpl, buf), acct_dio(&c, id, fspace, dxpl, 0, r))
H5_WRAP(herr_t, Dwrite, (hid_t id, hid_t mtype, hid_t mspace, hid_t fspace, hid_t dxpl, const void *buf),
        (id, mtype, mspace, fspace, dxpl, buf), acct_dio(&c, id, fspace, dxpl, 1, r))
H5_WRAP(herr_t, Dflush, (hid_t id), (id), acct_dflush(&c, id, r))

/* A close (H5Fclose, H5Dclose), or the drop of a reference (H5Idec_ref: a close when it was the last one; h5py
 * closes this way). The id is looked up before the call (after it the id is gone); an id the runtime does
 * not know, or a reference dropped that closed nothing, is not counted. */
static int h5_close(struct h5lib *l, hid_t id, int (*real)(hid_t), int last_ref)
{
    struct hcall c;
    if (!h5_enter(&c, l))
        return real(id);
    struct hobj o = { .id = id };
    int found = obj_get(id, 0, &o);
    int r = real(id);
    h5_after(&c);
    int closed = last_ref ? r == 0 : r >= 0;
    if (found && closed)
        obj_get(id, 1, &o);
    if (!found || o.f == NULL || (last_ref && !closed)) {
        h5_leave(&c, 0, NULL, 0, 0);
        return r;
    }
    if (o.file != NULL)
        acct_meta(&c, &h5d_meta, o.f, o.file, 1, closed ? 0 : -1);
    else
        acct_meta(&c, &h5f_meta, o.f, o.f, 1, closed ? 0 : -1);
    return r;
}

IOL_EXPORT herr_t H5Fclose(hid_t id)
{
    H5_LIB(Fclose)
    return h5_close(l, id, l->Fclose, 0);
}

IOL_EXPORT herr_t H5Dclose(hid_t id)
{
    H5_LIB(Dclose)
    return h5_close(l, id, l->Dclose, 0);
}

#if XFER_CACHE
/* Changes what a transfer list asks for: the cached answer of the list is dropped (whether the runtime is on
 * or not: the list may be used once it is). */
IOL_EXPORT herr_t H5Pset_dxpl_mpio(hid_t dxpl, H5FD_mpio_xfer_t mode)
{
    H5_LIB(Pset_dxpl_mpio)
    herr_t r = l->Pset_dxpl_mpio(dxpl, (int)mode);
    xfer_forget(l, dxpl);
    return r;
}
#endif

IOL_EXPORT int H5Idec_ref(hid_t id)
{
    H5_LIB(Idec_ref)
    return h5_close(l, id, l->Idec_ref, 1);
}
