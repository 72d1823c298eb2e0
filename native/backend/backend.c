/* backend.c — the registry of compiled-in backends, looked up by name. */
#define _GNU_SOURCE
#include "backend.h"

#include <stddef.h>
#include <strings.h>

/* The lookup table and the names shown in messages both come from IOL_BACKEND_LIST (backend.h), so they
 * cannot disagree. */
#define AS_POINTER(id) &iol_backend_##id,
static const struct iol_backend *const backends[] = { IOL_BACKEND_LIST(AS_POINTER) };
#undef AS_POINTER

#define AS_NAME(id) "," #id
static const char backend_names[] = IOL_BACKEND_LIST(AS_NAME);   /* ",posix,pvsync2,...,null" */
#undef AS_NAME

/* Names other tools use for the same thing, so their command lines work unchanged: IOR's DUMMY backend
 * is our null (it moves no data); fio's psync engine is pread/pwrite, our posix; IOR's AIO backend is
 * libaio. An alias whose backend is not compiled in finds nothing, as its backend's own name would not. */
static const struct {
    const char *alias, *name;
} aliases[] = {
    { "dummy", "null" },
    { "psync", "posix" },
    { "aio", "libaio" },
};

const struct iol_backend *iol_backend_find(const char *name)
{
    if (name == NULL)
        return NULL;
    for (size_t i = 0; i < sizeof aliases / sizeof aliases[0]; i++)
        if (strcasecmp(name, aliases[i].alias) == 0)
            name = aliases[i].name;
    /* Case-insensitive because IOR spells its APIs in capitals ("-a POSIX"). */
    for (size_t i = 0; i < sizeof backends / sizeof backends[0]; i++)
        if (strcasecmp(name, backends[i]->name) == 0)
            return backends[i];
    return NULL;
}

/* Backends iolens has but a build may lack, with what their build needs: so "-a MPIIO" in a build without MPI
 * says why instead of "unknown api". */
static const struct {
    const char *name, *needs;
} unbuilt[] = {
    { "mpiio", "MPI (an MPI C compiler when iolens was built); this iolens-bench was built without it" },
    { "io_uring", "liburing when iolens was built" },
    { "libaio", "libaio when iolens was built" },
    { "aio", "libaio when iolens was built" },
    { "hdf5", "MPI and parallel HDF5 (libhdf5-openmpi-dev, pkg-config hdf5-openmpi) when iolens was built; this "
              "iolens-bench was built without them" },
    { "ncmpi", "MPI and PnetCDF (libpnetcdf-dev, pkg-config pnetcdf) when iolens was built; this iolens-bench was "
               "built without them" },
};

const char *iol_backend_unavailable(const char *name)
{
    if (name == NULL || iol_backend_find(name) != NULL)
        return NULL;
    for (size_t i = 0; i < sizeof unbuilt / sizeof unbuilt[0]; i++)
        if (strcasecmp(name, unbuilt[i].name) == 0)
            return unbuilt[i].needs;
    return NULL;
}

const char *iol_backend_names(void)
{
    return backend_names + 1;   /* skip the leading comma */
}

int iol_backend_ctx_open(const struct iol_backend *be, struct iol_bctx **ctx, int queue_depth,
                         const struct iol_backend_opts *opts, struct iol_err *err)
{
    if (opts != NULL && be->ctx_open_opts != NULL)
        return be->ctx_open_opts(ctx, queue_depth, opts, err);
    if (opts != NULL && (opts->sqthread_poll || opts->hipri)) {
        /* Silently running without what was asked for would make the figure a lie about the setting. */
        *ctx = NULL;
        return iol_err_set(err, IOL_ERR_USAGE, "%s backend: %s is not supported (it needs io_uring%s)", be->name,
                           opts->sqthread_poll ? "sqthread_poll" : "hipri", opts->sqthread_poll ? "" : " or pvsync2");
    }
    return be->ctx_open(ctx, queue_depth, err);
}
