/* wrap_pnetcdf.c — the PnetCDF layer: ncmpi_* files and variables through PnetCDF's public C API
 * (docs/profile.md, "PnetCDF"; the counters are docs/profile-log.md's PNETCDF_FILE and PNETCDF_VAR modules,
 * Darshan's names and meanings).
 *
 * Built only where pnetcdf.h is (CMake's IOLENS_HAVE_PNETCDF), and never linked against libpnetcdf: the
 * runtime loads into every process, and most have no PnetCDF. The runtime defines ncmpi_create,
 * ncmpi_put_vara_all, ...; the first call finds the PnetCDF library the caller reaches (dladdr of the return
 * address, then the caller's object asked for ncmpi_inq_libvers, which the runtime does not define; else
 * RTLD_NEXT; else the first loaded object that has it: a library loaded RTLD_LOCAL). Every real function and
 * every query (ncmpi_inq_var, ncmpi_inq_dimlen, ncmpi_inq_put_size, ...) then comes from that library. A
 * process that never calls ncmpi_* never looks.
 *
 * A wrapper takes no guard while the PnetCDF call runs, so the MPI-IO and POSIX calls the library makes are
 * recorded beneath it (the layers stack: a variable's file, its MPIIO and its POSIX records share a path). A
 * PnetCDF call made inside a wrapper on the same thread (the library calling its own public API) passes
 * through. The queries run only after a call succeeded, on the ids it was given or returned.
 *
 * Records: a PNETCDF_FILE record per (thread, file), named by the file's absolute path; a PNETCDF_VAR record
 * per (thread, variable), named "FILE:VARIABLE" as Darshan names it, a FILES entry of kind IOL_KIND_OBJECT
 * with a MODULE_TEXT record holding the variable's name. ncids are small indices that PnetCDF reuses after a
 * close: the table of what is known of an ncid is indexed by it and cleared at the close. A variable first
 * seen in a put or get (its id taken from ncmpi_inq_var or known in advance) is described then. */
#include "wrap.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <string.h>

#include <pnetcdf.h>

/* ---- the PnetCDF library of the process, and the functions the runtime calls itself ---- */
#define NC_QUERIES(X) \
    X(int, inq_var, (int, int, char *, nc_type *, int *, int *, int *)) X(int, inq_vardimid, (int, int, int *)) \
    X(int, inq_unlimdim, (int, int *)) X(int, inq_dimlen, (int, int, MPI_Offset *)) \
    X(int, inq_path, (int, int *, char *)) X(int, inq_put_size, (int, MPI_Offset *)) \
    X(int, inq_get_size, (int, MPI_Offset *))

static struct {
#define X(ret, name, params) ret (*name) params;
    NC_QUERIES(X)
#undef X
    int (*comm_size)(MPI_Comm, int *);
} q;
static void *nc_lib;  /* the library's handle (dlopen RTLD_NOLOAD: nothing is opened) */
static int nc_state;  /* 0: not looked for yet; 1: found; -1: none */
static struct iol_lock nc_lock;

/* The handle of the loaded object p lies in (kept open: it is loaded already). */
static void *handle_of(const void *p)
{
    Dl_info di;
    if (p == NULL || iol_in_runtime(p) || dladdr(p, &di) == 0 || di.dli_fname == NULL)
        return NULL;
    return dlopen(di.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
}

/* Under nc_lock and the guard: the library a call from ra reaches (libfind.c). */
static void nc_setup(const void *ra)
{
    void *h = handle_of(iol_lib_sym(ra, "ncmpi_inq_libvers"));
    if (h == NULL) {
        iol_debug("PnetCDF: no PnetCDF library in the process: PnetCDF is not recorded");
        __atomic_store_n(&nc_state, -1, __ATOMIC_RELEASE);
        return;
    }
#define X(ret, name, params) *(void **)&q.name = dlsym(h, "ncmpi_" #name);
    NC_QUERIES(X)
#undef X
    *(void **)&q.comm_size = dlsym(h, "PMPI_Comm_size"); /* the handle's lookup covers libpnetcdf's libmpi */
    nc_lib = h;
    __atomic_store_n(&nc_state, 1, __ATOMIC_RELEASE);
}

/* The real function `name` of a wrapper (cached in *slot), or NULL when the process has no PnetCDF. */
static void *nc_real(void **slot, const char *name, const void *ra)
{
    void *p = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
    if (IOL_LIKELY(p != NULL))
        return p;
    struct iol_thread *t = &iol_tls;
    int saved = errno, guard = t->guard;
    t->guard = IOL_GUARD_IN; /* the loader's own work is not the program's */
    iol_lock(&nc_lock);
    if (__atomic_load_n(&nc_state, __ATOMIC_ACQUIRE) == 0)
        nc_setup(ra);
    iol_unlock(&nc_lock);
    p = nc_state > 0 ? dlsym(nc_lib, name) : NULL;
    __atomic_store_n(slot, p, __ATOMIC_RELEASE);
    t->guard = guard;
    errno = saved;
    return p;
}

/* ---- what is known of an ncid and its variables ---- */
struct ncvar {
    struct iol_file *f;   /* "FILE:VARIABLE" (NULL: not described yet) */
    struct iol_file *file; /* its file */
    uint32_t name_at;     /* where the variable's name starts in f->path */
    int state;            /* 0: not asked; 1: described; -1: cannot be (an excluded file) */
    int unlim;            /* the file's record dimension (-1: none) */
    uint64_t ndims, npoints, type_size, is_rec;
};
struct ncfile {
    struct iol_file *f; /* NULL: not open (as far as the runtime knows) */
    uint32_t cap;
    struct ncvar *vars; /* by varid (ids are dense: 0, 1, 2 ...) */
};
/* PnetCDF's ncids index its table of open files: they stay small. */
#define NC_MAX_NCID 1024
static struct ncfile ncfiles[NC_MAX_NCID];

static int ncid_ok(int ncid)
{
    return ncid >= 0 && ncid < NC_MAX_NCID;
}

static struct iol_file *file_of(int ncid)
{
    if (!ncid_ok(ncid))
        return NULL;
    iol_lock(&nc_lock);
    struct iol_file *f = ncfiles[ncid].f;
    iol_unlock(&nc_lock);
    return f;
}

/* The entry of (ncid, varid) in out; 0 when there is none. */
static int var_get(int ncid, int varid, struct ncvar *out)
{
    int found = 0;
    iol_lock(&nc_lock);
    if (ncid_ok(ncid) && ncfiles[ncid].f != NULL && varid >= 0 && (uint32_t)varid < ncfiles[ncid].cap) {
        *out = ncfiles[ncid].vars[varid];
        found = out->state != 0;
    }
    iol_unlock(&nc_lock);
    return found;
}

static void var_put(int ncid, int varid, const struct ncvar *v)
{
    iol_lock(&nc_lock);
    struct ncfile *nf = &ncfiles[ncid];
    if (nf->f != NULL && (uint32_t)varid >= nf->cap) {
        uint32_t cap = nf->cap ? nf->cap : 16;
        while (cap <= (uint32_t)varid)
            cap *= 2;
        struct ncvar *vars = iol_alloc(cap * sizeof *vars); /* the old array stays in the arena */
        if (vars != NULL) {
            if (nf->cap)
                memcpy(vars, nf->vars, nf->cap * sizeof *vars);
            nf->vars = vars;
            nf->cap = cap;
        }
    }
    if (nf->f != NULL && (uint32_t)varid < nf->cap)
        nf->vars[varid] = *v;
    iol_unlock(&nc_lock);
}

static uint64_t type_size(nc_type t)
{
    switch (t) {
    case NC_BYTE: case NC_CHAR: case NC_UBYTE: return 1;
    case NC_SHORT: case NC_USHORT: return 2;
    case NC_INT: case NC_UINT: case NC_FLOAT: return 4;
    default: return 8; /* NC_DOUBLE, NC_INT64, NC_UINT64 (Darshan's rule for any other) */
    }
}

/* Describe (ncid, varid) after a successful call (under the guard): its record, shape and type. */
static void var_describe(struct iol_thread *t, int ncid, int varid, struct ncvar *v)
{
    memset(v, 0, sizeof *v);
    v->state = -1;
    struct iol_file *file = file_of(ncid);
    char name[NC_MAX_NAME + 1];
    nc_type xt = NC_NAT;
    int nd = 0;
    if (file == NULL || varid < 0 || q.inq_var == NULL ||
        q.inq_var(ncid, varid, name, &xt, &nd, NULL, NULL) != NC_NOERR)
        return;
    name[NC_MAX_NAME] = '\0';
    size_t nl = strlen(name);
    char rec[PATH_MAX + NC_MAX_NAME + 2];
    if (file->len + 1 + nl >= sizeof rec)
        return;
    memcpy(rec, file->path, file->len);
    rec[file->len] = ':';
    memcpy(rec + file->len + 1, name, nl);
    v->f = iol_file_get(t, rec, file->len + 1 + nl, 0, IOL_KIND_OBJECT, 0);
    if (v->f == NULL)
        return;
    v->state = 1;
    v->file = file;
    v->name_at = file->len + 1;
    v->ndims = nd > 0 ? (uint64_t)nd : 0;
    v->type_size = type_size(xt);
    v->unlim = -1;
    if (q.inq_unlimdim == NULL || q.inq_unlimdim(ncid, &v->unlim) != NC_NOERR)
        v->unlim = -1;
    v->npoints = 1;
    int dims[64];
    if (nd > 0 && nd <= 64 && q.inq_vardimid != NULL && q.inq_vardimid(ncid, varid, dims) == NC_NOERR) {
        v->is_rec = v->unlim >= 0 && dims[0] == v->unlim;
        for (int i = (int)v->is_rec; i < nd; i++) {
            MPI_Offset len = 0;
            if (q.inq_dimlen == NULL || q.inq_dimlen(ncid, dims[i], &len) != NC_NOERR || len < 0)
                len = 0;
            v->npoints *= (uint64_t)len;
        }
    } else if (nd > 0) {
        v->npoints = 0; /* more dimensions than the runtime looks at: not known */
    }
}

/* The entry of (ncid, varid): the table's, or (ask: after a successful call) described now and kept. */
static int var_of(struct iol_thread *t, int ncid, int varid, int ask, struct ncvar *v)
{
    if (var_get(ncid, varid, v))
        return v->state > 0;
    if (!ask || file_of(ncid) == NULL)
        return 0;
    var_describe(t, ncid, varid, v);
    var_put(ncid, varid, v);
    return v->state > 0;
}

/* ---- a call being recorded ---- */
struct nccall {
    struct iol_thread *t;
    uint64_t t0, t1, dur;
};

static inline int nc_enter(struct nccall *c)
{
    struct iol_thread *t = &iol_tls;
    if (t->guard != 0 || t->nc_depth != 0 || !__atomic_load_n(&iol_g.on, __ATOMIC_RELAXED))
        return 0;
    t->nc_depth = 1;
    c->t = t;
    c->t0 = iol_ticks();
    return 1;
}

static __attribute__((noinline)) int nc_enter_out(struct nccall *c)
{
    return nc_enter(c);
}

/* After the real call: its time, and the guard on (the runtime's own queries and their I/O pass). */
static inline void nc_after(struct nccall *c)
{
    c->t1 = iol_ticks();
    c->dur = iol_ns(c->t0, c->t1);
    c->t->guard = IOL_GUARD_IN;
}

static inline void nc_leave(struct nccall *c, int op, struct iol_file *f, uint64_t bytes, int r)
{
    iol_trace(c->t, op, f != NULL ? f->id : 0, c->t0, c->t1, 0, bytes, r);
    c->t->guard = 0;
    c->t->nc_depth = 0;
}

static void stamp_first(uint64_t *first, uint64_t t0)
{
    if (*first == 0)
        *first = iol_stamp(t0);
}

#define FV(c) v[IOL_M_PNETCDF_FILE_##c]
#define VV(c) v[IOL_M_PNETCDF_VAR_##c]

/* ---- files ---- */

/* The path a create or open names, without a ROMIO file-system prefix ("ufs:/x"), made absolute. */
static long nc_path(const char *path, char *abs)
{
    if (path == NULL)
        return -1;
    const char *colon = strchr(path, ':');
    if (colon != NULL && colon > path + 1 && memchr(path, '/', (size_t)(colon - path)) == NULL)
        path = colon + 1;
    long len = iol_path_abs(AT_FDCWD, path, abs);
    return len >= 0 && !iol_path_excluded(abs, (size_t)len) ? len : -1;
}

static void acct_fopen(struct nccall *c, MPI_Comm comm, const char *path, int mode, int create, int ncid, int r)
{
    int e = errno;
    nc_after(c);
    char abs[PATH_MAX];
    long len = nc_path(path, abs);
    /* A failed open counts only on a file the log already has (as a POSIX open does). */
    struct iol_file *f = len < 0 ? NULL
                         : r == NC_NOERR ? iol_file_get(c->t, abs, (size_t)len, 0, IOL_KIND_UNKNOWN, 0)
                                         : iol_file_find(abs, (size_t)len, 0);
    struct iol_tmod *m = f != NULL ? iol_module_rec(c->t, f, IOL_MOD_PNETCDF_FILE) : NULL;
    if (m != NULL) {
        uint64_t *v = m->v;
        FV(F_META_TIME) += c->dur;
        if (r != NC_NOERR) {
            FV(ERRORS)++;
        } else {
            if (create)
                FV(CREATES)++;
            else
                FV(OPENS)++;
            FV(MODE) = (uint64_t)(unsigned)mode;
            int n = 1;
            if (q.comm_size == NULL || q.comm_size(comm, &n) != MPI_SUCCESS)
                n = 1;
            if ((uint64_t)n > FV(OPEN_COMM_SIZE))
                FV(OPEN_COMM_SIZE) = (uint64_t)n;
            stamp_first(&FV(F_OPEN_START_TIMESTAMP), c->t0);
            FV(F_OPEN_END_TIMESTAMP) = iol_stamp(c->t1);
        }
    }
    if (r == NC_NOERR && f != NULL && ncid_ok(ncid)) {
        iol_lock(&nc_lock);
        ncfiles[ncid] = (struct ncfile){ .f = f };
        iol_unlock(&nc_lock);
    }
    nc_leave(c, create ? IOL_OP_NC_CREATE : IOL_OP_NC_OPEN, f, 0, r);
    errno = e;
}

/* After a call on ncid: its file (*f) and the thread's PNETCDF_FILE record of it (NULL: not known). */
static struct iol_tmod *file_rec(struct nccall *c, int ncid, struct iol_file **f)
{
    nc_after(c);
    *f = file_of(ncid);
    return *f != NULL ? iol_module_rec(c->t, *f, IOL_MOD_PNETCDF_FILE) : NULL;
}

/* A call on a file that moves no variable's data: counter (or -1), its time in F_META_TIME. */
static void acct_fmeta(struct nccall *c, int ncid, int counter, int op, int r)
{
    int e = errno;
    struct iol_file *f;
    struct iol_tmod *m = file_rec(c, ncid, &f);
    if (m != NULL) {
        uint64_t *v = m->v;
        FV(F_META_TIME) += c->dur;
        if (r != NC_NOERR)
            FV(ERRORS)++;
        else if (counter >= 0)
            v[counter]++;
    }
    nc_leave(c, op, f, 0, r);
    errno = e;
}

static void acct_wait(struct nccall *c, int ncid, int coll, int r)
{
    int e = errno;
    struct iol_file *f;
    struct iol_tmod *m = file_rec(c, ncid, &f);
    if (m != NULL) {
        uint64_t *v = m->v;
        if (r != NC_NOERR)
            FV(WAIT_FAILURES)++;
        else if (coll)
            FV(COLL_WAITS)++;
        else
            FV(INDEP_WAITS)++;
        stamp_first(&FV(F_WAIT_START_TIMESTAMP), c->t0);
        FV(F_WAIT_END_TIMESTAMP) = iol_stamp(c->t1);
        FV(F_WAIT_TIME) += c->dur;
    }
    nc_leave(c, coll ? IOL_OP_NC_WAIT_ALL : IOL_OP_NC_WAIT, f, 0, r);
    errno = e;
}

/* The bytes this process moved on ncid so far (ncmpi_inq_put_size / _get_size: data and header). */
static void moved(int ncid, MPI_Offset *put, MPI_Offset *get)
{
    struct iol_thread *t = &iol_tls;
    int e = errno, guard = t->guard;
    t->guard = IOL_GUARD_IN;
    if (q.inq_put_size == NULL || q.inq_put_size(ncid, put) != NC_NOERR)
        *put = -1;
    if (q.inq_get_size == NULL || q.inq_get_size(ncid, get) != NC_NOERR)
        *get = -1;
    t->guard = guard;
    errno = e;
}

/* ---- variables ---- */
enum { NC_K_VAR, NC_K_VAR1, NC_K_VARA, NC_K_VARS, NC_K_VARM, NC_K_VARN, NC_K_VARD };
enum { NC_PUT, NC_GET, NC_IPUT, NC_IGET, NC_BPUT };
enum { NC_MODE_INDEP, NC_MODE_COLL, NC_MODE_NB };
static const unsigned op_base[] = { IOL_M_PNETCDF_VAR_PUT_VAR, IOL_M_PNETCDF_VAR_GET_VAR, IOL_M_PNETCDF_VAR_IPUT_VAR,
                                    IOL_M_PNETCDF_VAR_IGET_VAR, IOL_M_PNETCDF_VAR_BPUT_VAR };
static const int op_trace[] = { IOL_OP_NC_PUT, IOL_OP_NC_GET, IOL_OP_NC_IPUT, IOL_OP_NC_IGET, IOL_OP_NC_BPUT };
static const unsigned mode_reads[] = { IOL_M_PNETCDF_VAR_INDEP_READS, IOL_M_PNETCDF_VAR_COLL_READS,
                                       IOL_M_PNETCDF_VAR_NB_READS };
static const unsigned mode_writes[] = { IOL_M_PNETCDF_VAR_INDEP_WRITES, IOL_M_PNETCDF_VAR_COLL_WRITES,
                                        IOL_M_PNETCDF_VAR_NB_WRITES };

/* What a put or get names: its kind and its counts (VARA, VARS, VARM: count; VARN: num and counts; VARD: the
 * bytes, measured). */
struct ncshape {
    int kind;
    const MPI_Offset *count;
    int num;
    MPI_Offset *const *counts;
    uint64_t bytes;
};

static uint64_t product(const MPI_Offset *count, uint64_t ndims)
{
    uint64_t n = 1;
    for (uint64_t i = 0; i < ndims; i++)
        n *= count[i] > 0 ? (uint64_t)count[i] : 0;
    return n;
}

/* The bytes of the access in the file: its elements × the variable's external type size (Darshan's). */
static uint64_t access_bytes(int ncid, const struct ncvar *v, const struct ncshape *s)
{
    uint64_t n = 0;
    switch (s->kind) {
    case NC_K_VAR:
        n = v->npoints;
        if (v->is_rec) {
            MPI_Offset recs = 0;
            if (q.inq_dimlen == NULL || q.inq_dimlen(ncid, v->unlim, &recs) != NC_NOERR || recs < 0)
                recs = 0;
            n *= (uint64_t)recs;
        }
        break;
    case NC_K_VAR1:
        n = 1;
        break;
    case NC_K_VARN:
        if (s->counts == NULL)
            n = s->num > 0 ? (uint64_t)s->num : 0;
        else
            for (int k = 0; k < s->num; k++)
                n += s->counts[k] != NULL ? product(s->counts[k], v->ndims) : 1;
        break;
    case NC_K_VARD:
        return s->bytes;
    default:
        n = s->count != NULL ? product(s->count, v->ndims) : 0;
        break;
    }
    return n * v->type_size;
}

static void var_static(uint64_t *v, const struct ncvar *d)
{
    VV(NDIMS) = d->ndims;
    VV(NPOINTS) = d->npoints;
    VV(DATATYPE_SIZE) = d->type_size;
    VV(IS_RECORD_VAR) = d->is_rec;
}

/* The thread's record of a variable, with its name as text on the thread's first use. */
static struct iol_tmod *var_rec(struct iol_thread *t, const struct ncvar *d)
{
    struct iol_tmod *m = iol_module_rec(t, d->f, IOL_MOD_PNETCDF_VAR);
    if (m != NULL && m->text_hash == 0)
        iol_module_text(t, m, d->f, IOL_MOD_PNETCDF_VAR, IOLP_TEXT_VARIABLE, d->f->path + d->name_at,
                        d->f->len - d->name_at);
    return m;
}

/* ncmpi_def_var, ncmpi_inq_varid: an open of the variable (Darshan's PNETCDF_VAR_OPENS). */
static void acct_vopen(struct nccall *c, int ncid, int varid, int def, int r)
{
    int e = errno;
    nc_after(c);
    struct ncvar d;
    int known = r == NC_NOERR && var_of(c->t, ncid, varid, 1, &d);
    struct iol_tmod *m = known ? var_rec(c->t, &d) : NULL;
    if (m != NULL) {
        uint64_t *v = m->v;
        VV(OPENS)++;
        VV(DEFS) += def;
        var_static(v, &d);
        stamp_first(&VV(F_OPEN_START_TIMESTAMP), c->t0);
        VV(F_OPEN_END_TIMESTAMP) = iol_stamp(c->t1);
        VV(F_META_TIME) += c->dur;
    } else if (def && r != NC_NOERR) { /* a failed definition names no variable: its file's error */
        struct iol_file *f = file_of(ncid);
        struct iol_tmod *fm = f != NULL ? iol_module_rec(c->t, f, IOL_MOD_PNETCDF_FILE) : NULL;
        if (fm != NULL)
            fm->v[IOL_M_PNETCDF_FILE_ERRORS]++;
    }
    nc_leave(c, def ? IOL_OP_NC_DEF_VAR : IOL_OP_NC_INQ_VARID, file_of(ncid), 0, r);
    errno = e;
}

/* A put or get of any form: op (NC_PUT ...), mode (NC_MODE_INDEP ...). */
static void acct_xfer(struct nccall *c, int ncid, int varid, const struct ncshape *s, int op, int mode, int r)
{
    int e = errno;
    nc_after(c);
    int w = op == NC_PUT || op == NC_IPUT || op == NC_BPUT;
    struct ncvar d;
    struct iol_tmod *m = NULL;
    uint64_t bytes = 0;
    int known = var_of(c->t, ncid, varid, r == NC_NOERR, &d);
    if (known && (m = var_rec(c->t, &d)) != NULL) {
        uint64_t *v = m->v;
        if (w)
            VV(F_WRITE_TIME) += c->dur;
        else
            VV(F_READ_TIME) += c->dur;
        if (r != NC_NOERR) {
            VV(ERRORS)++;
        } else {
            bytes = access_bytes(ncid, &d, s);
            var_static(v, &d);
            v[op_base[op] + (unsigned)s->kind]++;
            v[w ? mode_writes[mode] : mode_reads[mode]]++;
            if (w)
                VV(BYTES_WRITTEN) += bytes;
            else
                VV(BYTES_READ) += bytes;
            v[(w ? IOL_M_PNETCDF_VAR_SIZE_WRITE_AGG_0_100 : IOL_M_PNETCDF_VAR_SIZE_READ_AGG_0_100) +
              iol_size_bucket(bytes)]++;
            iol_top_add(c->t, &VV(ACCESS1_ACCESS), &VV(ACCESS1_COUNT), &m->over, bytes);
            VV(RW_SWITCHES) += m->last == (w ? 1 : 2);
            m->last = w ? 2 : 1;
            stamp_first(w ? &VV(F_WRITE_START_TIMESTAMP) : &VV(F_READ_START_TIMESTAMP), c->t0);
            v[w ? IOL_M_PNETCDF_VAR_F_WRITE_END_TIMESTAMP : IOL_M_PNETCDF_VAR_F_READ_END_TIMESTAMP] = iol_stamp(c->t1);
            uint64_t *longest = w ? &VV(F_MAX_WRITE_TIME) : &VV(F_MAX_READ_TIME);
            if (c->dur > *longest) {
                *longest = c->dur;
                v[w ? IOL_M_PNETCDF_VAR_MAX_WRITE_TIME_SIZE : IOL_M_PNETCDF_VAR_MAX_READ_TIME_SIZE] = bytes;
            }
        }
    }
    nc_leave(c, op_trace[op], known ? d.file : file_of(ncid), bytes, r);
    errno = e;
}

/* ---- the wrappers ---- */

/* The real function of the wrapper `name`, or the wrapper's failure when the process has no PnetCDF. */
#define NC_REAL(name, params) \
    static void *real; \
    int(*fn) params; \
    *(void **)&fn = nc_real(&real, #name, __builtin_return_address(0)); \
    if (IOL_UNLIKELY(fn == NULL)) \
        return NC_ENOTBUILT;

/* A wrapper whose accounting needs only the call's arguments and result: the real call, then acct. */
#define NC_WRAP(name, params, args, acct) \
    IOL_EXPORT int name params \
    { \
        NC_REAL(name, params) \
        struct nccall c; \
        if (!nc_enter(&c)) \
            return fn args; \
        int r = fn args; \
        acct; \
        return r; \
    }

NC_WRAP(ncmpi_create, (MPI_Comm comm, const char *path, int cmode, MPI_Info info, int *ncidp),
        (comm, path, cmode, info, ncidp),
        acct_fopen(&c, comm, path, cmode, 1, r == NC_NOERR && ncidp != NULL ? *ncidp : -1, r))
NC_WRAP(ncmpi_open, (MPI_Comm comm, const char *path, int omode, MPI_Info info, int *ncidp),
        (comm, path, omode, info, ncidp),
        acct_fopen(&c, comm, path, omode, 0, r == NC_NOERR && ncidp != NULL ? *ncidp : -1, r))
NC_WRAP(ncmpi_enddef, (int ncid), (ncid), acct_fmeta(&c, ncid, IOL_M_PNETCDF_FILE_ENDDEFS, IOL_OP_NC_ENDDEF, r))
NC_WRAP(ncmpi__enddef, (int ncid, MPI_Offset h_minfree, MPI_Offset v_align, MPI_Offset v_minfree, MPI_Offset r_align),
        (ncid, h_minfree, v_align, v_minfree, r_align),
        acct_fmeta(&c, ncid, IOL_M_PNETCDF_FILE_ENDDEFS, IOL_OP_NC_ENDDEF, r))
NC_WRAP(ncmpi_redef, (int ncid), (ncid), acct_fmeta(&c, ncid, IOL_M_PNETCDF_FILE_REDEFS, IOL_OP_NC_REDEF, r))
NC_WRAP(ncmpi_sync, (int ncid), (ncid), acct_fmeta(&c, ncid, IOL_M_PNETCDF_FILE_SYNCS, IOL_OP_NC_SYNC, r))
NC_WRAP(ncmpi_flush, (int ncid), (ncid), acct_fmeta(&c, ncid, IOL_M_PNETCDF_FILE_FLUSHES, IOL_OP_NC_FLUSH, r))
NC_WRAP(ncmpi_begin_indep_data, (int ncid), (ncid),
        acct_fmeta(&c, ncid, IOL_M_PNETCDF_FILE_BEGIN_INDEPS, IOL_OP_NC_BEGIN_INDEP, r))
NC_WRAP(ncmpi_end_indep_data, (int ncid), (ncid),
        acct_fmeta(&c, ncid, IOL_M_PNETCDF_FILE_END_INDEPS, IOL_OP_NC_END_INDEP, r))
NC_WRAP(ncmpi_wait, (int ncid, int num, int *reqs, int *statuses), (ncid, num, reqs, statuses),
        acct_wait(&c, ncid, 0, r))
NC_WRAP(ncmpi_wait_all, (int ncid, int num, int *reqs, int *statuses), (ncid, num, reqs, statuses),
        acct_wait(&c, ncid, 1, r))
NC_WRAP(ncmpi_def_var, (int ncid, const char *name, nc_type xtype, int ndims, const int *dimids, int *varidp),
        (ncid, name, xtype, ndims, dimids, varidp),
        acct_vopen(&c, ncid, r == NC_NOERR && varidp != NULL ? *varidp : -1, 1, r))
NC_WRAP(ncmpi_inq_varid, (int ncid, const char *name, int *varidp), (ncid, name, varidp),
        acct_vopen(&c, ncid, r == NC_NOERR && varidp != NULL ? *varidp : -1, 0, r))

/* ncmpi_close: the bytes the file moved (ncmpi_inq_put_size / _get_size, Darshan's PNETCDF_FILE_BYTES_*) are
 * asked before the close, which ends the ncid. */
IOL_EXPORT int ncmpi_close(int ncid)
{
    NC_REAL(ncmpi_close, (int))
    struct nccall c;
    if (!nc_enter(&c))
        return fn(ncid);
    MPI_Offset put = -1, get = -1;
    struct iol_file *f = file_of(ncid);
    if (f != NULL)
        moved(ncid, &put, &get);
    c.t0 = iol_ticks();
    int r = fn(ncid);
    int e = errno;
    nc_after(&c);
    struct iol_tmod *m = f != NULL ? iol_module_rec(c.t, f, IOL_MOD_PNETCDF_FILE) : NULL;
    if (m != NULL) {
        uint64_t *v = m->v;
        FV(F_META_TIME) += c.dur;
        if (r != NC_NOERR) {
            FV(ERRORS)++;
        } else {
            FV(CLOSES)++;
            FV(BYTES_WRITTEN) += put > 0 ? (uint64_t)put : 0;
            FV(BYTES_READ) += get > 0 ? (uint64_t)get : 0;
            stamp_first(&FV(F_CLOSE_START_TIMESTAMP), c.t0);
            FV(F_CLOSE_END_TIMESTAMP) = iol_stamp(c.t1);
        }
    }
    if (r == NC_NOERR && ncid_ok(ncid)) {
        iol_lock(&nc_lock);
        ncfiles[ncid] = (struct ncfile){ 0 };
        iol_unlock(&nc_lock);
    }
    nc_leave(&c, IOL_OP_NC_CLOSE, f, 0, r);
    errno = e;
    return r;
}

/* ---- the put/get family, generated ----
 * A name is ncmpi_{put,get,iput,iget,bput}_var{,1,a,s,m,n}[_TYPE][_all]: per kind, the parameters between
 * varid and the buffer (SP_), their arguments (SA_) and what the accounting reads of them (SH_). */
#define SP_VAR
#define SA_VAR
#define SH_VAR NC_K_VAR, NULL, 0, NULL
#define SP_VAR1 const MPI_Offset *start,
#define SA_VAR1 start,
#define SH_VAR1 NC_K_VAR1, NULL, 0, NULL
#define SP_VARA const MPI_Offset *start, const MPI_Offset *count,
#define SA_VARA start, count,
#define SH_VARA NC_K_VARA, count, 0, NULL
#define SP_VARS const MPI_Offset *start, const MPI_Offset *count, const MPI_Offset *stride,
#define SA_VARS start, count, stride,
#define SH_VARS NC_K_VARS, count, 0, NULL
#define SP_VARM const MPI_Offset *start, const MPI_Offset *count, const MPI_Offset *stride, const MPI_Offset *imap,
#define SA_VARM start, count, stride, imap,
#define SH_VARM NC_K_VARM, count, 0, NULL
#define SP_VARN int num, MPI_Offset *const *starts, MPI_Offset *const *counts,
#define SA_VARN num, starts, counts,
#define SH_VARN NC_K_VARN, NULL, num, counts
/* The flexible API's buffer (a put's is const), and the non-blocking calls' request. */
#define BP_PUT const void *buf, MPI_Offset bufcount, MPI_Datatype buftype
#define BP_GET void *buf, MPI_Offset bufcount, MPI_Datatype buftype
#define BA_FLEX buf, bufcount, buftype
#define TP_REQ , int *req
#define TA_REQ , req

/* 564 of these: kept small (one call of the real function, the rest out of line). */
#define NC_XFER(name, K, op, mode, BP, BA, TP, TA) \
    IOL_EXPORT int name(int ncid, int varid, SP_##K BP TP) \
    { \
        NC_REAL(name, (int, int, SP_##K BP TP)) \
        struct nccall c; \
        int on = nc_enter_out(&c); \
        int r = fn(ncid, varid, SA_##K BA TA); \
        if (on) { \
            struct ncshape s = { SH_##K, 0 }; \
            acct_xfer(&c, ncid, varid, &s, op, mode, r); \
        } \
        return r; \
    }

/* k: the name's kind letter, K: its shape. */
#define NC_KINDS(X) X(, VAR) X(1, VAR1) X(a, VARA) X(s, VARS) X(m, VARM) X(n, VARN)

#define NC_FLEX(k, K) \
    NC_XFER(ncmpi_put_var##k, K, NC_PUT, NC_MODE_INDEP, BP_PUT, BA_FLEX, , ) \
    NC_XFER(ncmpi_put_var##k##_all, K, NC_PUT, NC_MODE_COLL, BP_PUT, BA_FLEX, , ) \
    NC_XFER(ncmpi_get_var##k, K, NC_GET, NC_MODE_INDEP, BP_GET, BA_FLEX, , ) \
    NC_XFER(ncmpi_get_var##k##_all, K, NC_GET, NC_MODE_COLL, BP_GET, BA_FLEX, , ) \
    NC_XFER(ncmpi_iput_var##k, K, NC_IPUT, NC_MODE_NB, BP_PUT, BA_FLEX, TP_REQ, TA_REQ) \
    NC_XFER(ncmpi_iget_var##k, K, NC_IGET, NC_MODE_NB, BP_GET, BA_FLEX, TP_REQ, TA_REQ) \
    NC_XFER(ncmpi_bput_var##k, K, NC_BPUT, NC_MODE_NB, BP_PUT, BA_FLEX, TP_REQ, TA_REQ)
NC_KINDS(NC_FLEX)

/* The typed API: every external type's C type (PnetCDF's ITYPE list). */
#define NC_TYPES(X, ...) \
    X(__VA_ARGS__, text, char) X(__VA_ARGS__, schar, signed char) X(__VA_ARGS__, uchar, unsigned char) \
    X(__VA_ARGS__, short, short) X(__VA_ARGS__, ushort, unsigned short) X(__VA_ARGS__, int, int) \
    X(__VA_ARGS__, uint, unsigned int) X(__VA_ARGS__, long, long) X(__VA_ARGS__, float, float) \
    X(__VA_ARGS__, double, double) X(__VA_ARGS__, longlong, long long) \
    X(__VA_ARGS__, ulonglong, unsigned long long)

#define NC_TYPED1(k, K, t, T) \
    NC_XFER(ncmpi_put_var##k##_##t, K, NC_PUT, NC_MODE_INDEP, const T *buf, buf, , ) \
    NC_XFER(ncmpi_put_var##k##_##t##_all, K, NC_PUT, NC_MODE_COLL, const T *buf, buf, , ) \
    NC_XFER(ncmpi_get_var##k##_##t, K, NC_GET, NC_MODE_INDEP, T *buf, buf, , ) \
    NC_XFER(ncmpi_get_var##k##_##t##_all, K, NC_GET, NC_MODE_COLL, T *buf, buf, , ) \
    NC_XFER(ncmpi_iput_var##k##_##t, K, NC_IPUT, NC_MODE_NB, const T *buf, buf, TP_REQ, TA_REQ) \
    NC_XFER(ncmpi_iget_var##k##_##t, K, NC_IGET, NC_MODE_NB, T *buf, buf, TP_REQ, TA_REQ) \
    NC_XFER(ncmpi_bput_var##k##_##t, K, NC_BPUT, NC_MODE_NB, const T *buf, buf, TP_REQ, TA_REQ)
#define NC_TYPED(k, K) NC_TYPES(NC_TYPED1, k, K)
NC_KINDS(NC_TYPED)

/* ncmpi_{put,get}_vard[_all]: an MPI filetype names the access; its bytes are what the call moved
 * (ncmpi_inq_put_size / _get_size before and after). */
#define NC_VARD(name, op, mode, BP, w) \
    IOL_EXPORT int name(int ncid, int varid, MPI_Datatype filetype, BP) \
    { \
        NC_REAL(name, (int, int, MPI_Datatype, BP)) \
        struct nccall c; \
        if (!nc_enter(&c)) \
            return fn(ncid, varid, filetype, BA_FLEX); \
        MPI_Offset put0 = -1, get0 = -1, put1 = -1, get1 = -1; \
        moved(ncid, &put0, &get0); \
        c.t0 = iol_ticks(); \
        int r = fn(ncid, varid, filetype, BA_FLEX); \
        c.t->guard = IOL_GUARD_IN; \
        moved(ncid, &put1, &get1); \
        c.t->guard = 0; \
        MPI_Offset d = w ? put1 - put0 : get1 - get0; \
        struct ncshape s = { NC_K_VARD, NULL, 0, NULL, (w ? put0 : get0) >= 0 && d > 0 ? (uint64_t)d : 0 }; \
        acct_xfer(&c, ncid, varid, &s, op, mode, r); \
        return r; \
    }
NC_VARD(ncmpi_put_vard, NC_PUT, NC_MODE_INDEP, BP_PUT, 1)
NC_VARD(ncmpi_put_vard_all, NC_PUT, NC_MODE_COLL, BP_PUT, 1)
NC_VARD(ncmpi_get_vard, NC_GET, NC_MODE_INDEP, BP_GET, 0)
NC_VARD(ncmpi_get_vard_all, NC_GET, NC_MODE_COLL, BP_GET, 0)
