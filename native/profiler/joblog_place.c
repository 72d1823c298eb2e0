/* joblog_place.c — where a job log goes (joblog.h; docs/profile.md, "One log per job"): the profile
 * directory, or a center's IOLENS_LOG_DIR laid out by IOLENS_LOG_LAYOUT (date, user, job id, program, as
 * centers lay out Darshan's logs), its directories made on the way with the log dir's own mode. */
#include "rt.h"
#include "joblog.h"
#include "sys.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* A field's value made safe as one path component. */
static size_t put_field(char *out, size_t at, size_t cap, const char *v)
{
    for (; *v != '\0' && at + 1 < cap; v++)
        out[at++] = (*v == '/' || (unsigned char)*v < 32) ? '_' : *v;
    return at;
}

static const char *safe(char *out, size_t cap, const char *v)
{
    out[put_field(out, 0, cap, v)] = '\0';
    return out;
}

int iol_jl_layout(const char *layout, char *out, size_t cap, const char *user, const char *job, const char *exe,
                  uint64_t wall_ns, char *err, size_t ecap)
{
    if (layout[0] == '\0' || layout[0] == '/') {
        snprintf(err, ecap, "IOLENS_LOG_LAYOUT '%s': %s", layout, layout[0] ? "must be relative" : "is empty");
        return -1;
    }
    time_t secs = (time_t)(wall_ns / 1000000000u);
    struct tm tm;
    localtime_r(&secs, &tm);
    size_t at = 0;
    for (const char *p = layout; *p != '\0'; p++) {
        char num[24];
        const char *v = NULL;
        if (*p != '%') {
            if (at + 1 < cap)
                out[at++] = *p;
            continue;
        }
        switch (*++p) {
        case 'Y':
            snprintf(num, sizeof num, "%d", tm.tm_year + 1900), v = num;
            break;
        case 'm': /* not zero-padded: Darshan's LOGDIR/YEAR/MONTH/DAY */
            snprintf(num, sizeof num, "%d", tm.tm_mon + 1), v = num;
            break;
        case 'd':
            snprintf(num, sizeof num, "%d", tm.tm_mday), v = num;
            break;
        case 'u':
            v = user;
            break;
        case 'j':
            v = job;
            break;
        case 'e':
            v = exe;
            break;
        case '%':
            v = "%";
            break;
        default:
            snprintf(err, ecap, "IOLENS_LOG_LAYOUT '%s': unknown field %%%.1s (known: %%Y %%m %%d %%u %%j %%e %%%%)",
                     layout, p);
            return -1;
        }
        at = put_field(out, at, cap, v);
    }
    out[at] = '\0';
    if (at + 1 >= cap) {
        snprintf(err, ecap, "IOLENS_LOG_LAYOUT '%s': the path is too long", layout);
        return -1;
    }
    for (const char *c = out; *c != '\0';) { /* no component may be "..": the logs stay below the log dir */
        const char *e = strchr(c, '/');
        size_t n = e ? (size_t)(e - c) : strlen(c);
        if (n == 2 && c[0] == '.' && c[1] == '.') {
            snprintf(err, ecap, "IOLENS_LOG_LAYOUT '%s': a '..' component leads out of IOLENS_LOG_DIR", layout);
            return -1;
        }
        c += n + (e != NULL);
    }
    return 0;
}

struct mkdir_req {
    char *path;
    size_t base; /* the log dir's length: below it, directories are made */
    int err;
};

static int mkdirs_aside(void *arg)
{
    struct mkdir_req *r = arg;
    struct stat st;
    r->path[r->base] = '\0';
    int ok = syscall(SYS_newfstatat, AT_FDCWD, r->path, &st, 0) == 0 && S_ISDIR(st.st_mode);
    r->path[r->base] = '/';
    if (!ok)
        return r->err = -ENOENT;
    /* Made with the mode of the log dir itself: a center's world-writable sticky directory (1777) gives
     * directories every user can add to; a private one, private ones. */
    for (char *p = r->path + r->base + 1;; p++) {
        if (*p != '/' && *p != '\0')
            continue;
        char was = *p;
        *p = '\0';
        if (syscall(SYS_mkdirat, AT_FDCWD, r->path, 0700) == 0)
            syscall(SYS_fchmodat, AT_FDCWD, r->path, st.st_mode & 07777);
        else if (errno != EEXIST)
            r->err = -errno;
        *p = was;
        if (was == '\0' || r->err != 0)
            break;
    }
    return r->err;
}

int iol_jl_place(char *dir, size_t dcap, char *name, size_t ncap, const char *job_id, const char *host, long pid,
                 uint64_t wall_ns, char *err, size_t ecap)
{
    const char *logdir = getenv("IOLENS_LOG_DIR");
    if (logdir == NULL || logdir[0] == '\0') {
        snprintf(dir, dcap, "%s", iol_g.dir);
        char j[64], h[64];
        snprintf(name, ncap, "%s.%s.%ld" IOLJ_SUFFIX, safe(j, sizeof j, job_id), safe(h, sizeof h, host), pid);
        return 0;
    }
    const char *layout = getenv("IOLENS_LOG_LAYOUT");
    if (layout == NULL || layout[0] == '\0')
        layout = "%Y/%m/%d";
    char user[64], exe[64], rel[PATH_MAX];
    const char *u = getenv("USER");
    if (u == NULL || u[0] == '\0')
        u = getenv("LOGNAME");
    if (u != NULL && u[0] != '\0')
        snprintf(user, sizeof user, "%s", u);
    else
        snprintf(user, sizeof user, "%ld", (long)getuid());
    const char *base = strrchr(iol_g.hdr->exe, '/');
    safe(exe, sizeof exe, base != NULL ? base + 1 : iol_g.hdr->exe[0] ? iol_g.hdr->exe : "unknown");
    if (iol_jl_layout(layout, rel, sizeof rel, user, job_id, exe, wall_ns, err, ecap) != 0)
        return -1;
    int n = snprintf(dir, dcap, "%s/%s", logdir, rel);
    while (n > 1 && dir[n - 1] == '/')
        dir[--n] = '\0';
    if (n <= 0 || (size_t)n >= dcap) {
        snprintf(err, ecap, "IOLENS_LOG_DIR/IOLENS_LOG_LAYOUT: the path is too long");
        return -1;
    }
    size_t lb = strlen(logdir);
    while (lb > 1 && logdir[lb - 1] == '/')
        lb--;
    struct mkdir_req r = { dir, lb, 0 };
    if (iol_aside(mkdirs_aside, &r) != 0 || r.err != 0) {
        snprintf(err, ecap, "cannot make %s: %s", dir, strerror(r.err ? -r.err : EIO));
        return -1;
    }
    /* Darshan's name: USER_EXE_idJOBID_..., here rank 0's host and pid make it unique. */
    char a[64], e2[64], j[64], h[64];
    snprintf(name, ncap, "%s_%s_id%s_%s-%ld" IOLJ_SUFFIX, safe(a, sizeof a, user), safe(e2, sizeof e2, exe),
             safe(j, sizeof j, job_id), safe(h, sizeof h, host), pid);
    return 0;
}
