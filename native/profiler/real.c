/* real.c — resolving the C library's functions behind the wrappers (see real.h). */
#include "real.h"

#include <dlfcn.h>
#include <stddef.h>

struct iol_real iol_real;

/* glibc 2.33 made __xstat & co. compatibility symbols, which dlsym no longer returns; binaries linked against
 * an older glibc still call them, so look for the version they were introduced with. */
static void *resolve_one(const char *name)
{
    void *p = dlsym(RTLD_NEXT, name);
    if (p != NULL)
        return p;
    static const char *const versions[] = { "GLIBC_2.2.5", "GLIBC_2.4", "GLIBC_2.17", "GLIBC_2.0", "GLIBC_2.2", "GLIBC_2.1" };
    for (size_t i = 0; i < sizeof versions / sizeof versions[0]; i++) {
        p = dlvsym(RTLD_NEXT, name, versions[i]);
        if (p != NULL)
            return p;
    }
    return NULL;
}

void iol_real_resolve(void)
{
    static int done;
    if (__atomic_load_n(&done, __ATOMIC_ACQUIRE))
        return;
#define X(ret, name, params) \
    if (iol_real.name == NULL) \
        *(void **)&iol_real.name = resolve_one(#name);
    IOL_REAL_FUNCS(X)
#undef X
    __atomic_store_n(&done, 1, __ATOMIC_RELEASE);
}
