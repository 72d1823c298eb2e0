/* pathcheck.c — see pathcheck.h. */
#include "pathcheck.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "options.h"

int iol_dir_problem(const char *dir, char *out, size_t len)
{
    struct stat st;
    if (stat(dir, &st) == 0 && S_ISDIR(st.st_mode)) return 0;
    /* Walk the prefixes from the top: the first one that is missing or not a directory is the one to name. */
    char p[IOL_STR_MAX];
    snprintf(p, sizeof p, "%s", dir);
    size_t n = strlen(p);
    for (size_t i = 1; i <= n; i++) {
        if (i < n && p[i] != '/') continue;
        char keep = p[i];
        p[i] = '\0';
        int rc = stat(p, &st), e = errno;
        if (rc != 0) {
            if (e == ENOENT) snprintf(out, len, "'%s' does not exist", p);
            else snprintf(out, len, "'%s': %s", p, strerror(e));
            return -1;
        }
        if (!S_ISDIR(st.st_mode)) {
            snprintf(out, len, S_ISREG(st.st_mode) ? "'%s' is a file, not a directory" : "'%s' is not a directory", p);
            return -1;
        }
        p[i] = keep;
    }
    snprintf(out, len, "'%s' is not a directory", dir);
    return -1;
}
