/* libfind.c — finding a library the program loaded, for the layers whose wrappers call into it (HDF5,
 * PnetCDF): a library is never opened (dlopen RTLD_NOLOAD only), and the runtime's own definitions of the
 * library's functions (its wrappers) are never taken for the library's. */
#include "rt.h"

#include <dlfcn.h>
#include <link.h>

int iol_in_runtime(const void *p)
{
    Dl_info self, other;
    return dladdr((const void *)iol_in_runtime, &self) != 0 && dladdr(p, &other) != 0 &&
           self.dli_fbase == other.dli_fbase;
}

struct probe {
    const char *sym;
    void *fn;
};

/* The first loaded object (not the main program, not the runtime) that defines probe->sym. */
static int find_any(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    struct probe *pr = data;
    if (info->dlpi_name == NULL || info->dlpi_name[0] == '\0')
        return 0;
    void *h = dlopen(info->dlpi_name, RTLD_LAZY | RTLD_NOLOAD);
    if (h == NULL)
        return 0;
    void *p = dlsym(h, pr->sym);
    dlclose(h);
    if (p == NULL || iol_in_runtime(p))
        return 0;
    pr->fn = p;
    return 1;
}

void *iol_lib_sym(const void *ra, const char *sym)
{
    struct probe pr = { sym, NULL };
    Dl_info di;
    if (dladdr(ra, &di) != 0 && di.dli_fname != NULL) {
        void *h = dlopen(di.dli_fname[0] != '\0' ? di.dli_fname : NULL, RTLD_LAZY | RTLD_NOLOAD);
        if (h != NULL) {
            pr.fn = dlsym(h, sym);
            dlclose(h);
        }
    }
    if (pr.fn == NULL || iol_in_runtime(pr.fn))
        pr.fn = dlsym(RTLD_NEXT, sym);
    if (pr.fn == NULL)
        dl_iterate_phdr(find_any, &pr);
    return pr.fn;
}
