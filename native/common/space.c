/* space.c — see space.h. */
#include "space.h"

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

void iol_space_add(struct iol_space *s, const char *dir, long double bytes, long double inodes)
{
    struct stat st;
    if (stat(dir, &st) != 0) return;
    int i = 0;
    while (i < s->n && s->fs[i].dev != st.st_dev) i++;
    if (i == s->n) {
        if (s->n == IOL_SPACE_MAX_FS) return;   /* beyond that many file systems: not checked */
        s->n++;
        s->fs[i].dev = st.st_dev;
        snprintf(s->fs[i].dir, sizeof s->fs[i].dir, "%s", dir);
        s->fs[i].bytes = 0;
        s->fs[i].inodes = 0;
    }
    s->fs[i].bytes += bytes;
    s->fs[i].inodes += inodes;
}

static uint64_t clamp(long double v)
{
    return v > 1.8e19L ? UINT64_MAX : (uint64_t)v;
}

int iol_space_check(const struct iol_space *s, const char *option, const char *what, struct iol_err *err)
{
    for (int i = 0; i < s->n; i++) {
        struct statvfs sv;
        if (statvfs(s->fs[i].dir, &sv) != 0) continue;
        long double avail = (long double)sv.f_bavail * sv.f_frsize;
        if (s->fs[i].bytes > avail) {
            char a[32], b[32];
            iol_format_size(clamp(s->fs[i].bytes), a, sizeof a);
            iol_format_size(clamp(avail), b, sizeof b);
            return iol_err_set(err, IOL_ERR_USAGE, "%s: the run would write %s (%s) but '%s' has only %s free "
                               "(--no-space-check runs it anyway)", option, a, what, s->fs[i].dir, b);
        }
        /* File systems without an inode limit report none at all (f_files 0). */
        if (sv.f_files > 0 && s->fs[i].inodes > (long double)sv.f_favail)
            return iol_err_set(err, IOL_ERR_USAGE, "%s: the run would create %llu files and directories but '%s' has "
                               "only %llu free inodes (--no-space-check runs it anyway)", option,
                               (unsigned long long)clamp(s->fs[i].inodes), s->fs[i].dir,
                               (unsigned long long)sv.f_favail);
    }
    return 0;
}
