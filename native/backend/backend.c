/* backend.c — the registry of compiled-in backends, looked up by name. */
#define _GNU_SOURCE
#include "backend.h"

#include <stddef.h>
#include <strings.h>

/* The one list of backends: the lookup table and the names shown in messages both come from it, so they
 * cannot disagree. Each entry X(id) names the struct iol_backend_<id>, whose .name must be "<id>". A
 * backend compiled only when its library is found (io_uring, aio) joins the list under its #if. */
#define IOL_BACKEND_LIST(X) \
    X(posix)                \
    X(null)

#define AS_POINTER(id) &iol_backend_##id,
static const struct iol_backend *const backends[] = { IOL_BACKEND_LIST(AS_POINTER) };
#undef AS_POINTER

#define AS_NAME(id) "," #id
static const char backend_names[] = IOL_BACKEND_LIST(AS_NAME);   /* ",posix,null" */
#undef AS_NAME

/* Names other tools use for the same thing, so their command lines work unchanged: IOR's DUMMY backend
 * is our null (it moves no data). */
static const struct {
    const char *alias, *name;
} aliases[] = {
    { "dummy", "null" },
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

const char *iol_backend_names(void)
{
    return backend_names + 1;   /* skip the leading comma */
}
