/* util.c — small helpers: the runtime's own error messages, string copying. */
#include "rt.h"
#include "sys.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

size_t iol_strlcpy(char *dst, const char *src, size_t cap)
{
    size_t n = strlen(src);
    if (cap == 0)
        return n;
    size_t k = n < cap - 1 ? n : cap - 1;
    memcpy(dst, src, k);
    dst[k] = '\0';
    return n;
}

struct line {
    const char *text;
    size_t len;
};

/* Aside (aside.c): the debug file's descriptor is never the program's. */
static int append_line(void *arg)
{
    struct line *l = arg;
    int fd = iol_sys_openat(AT_FDCWD, iol_g.debug_path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0)
        return -errno;
    (void)!iol_sys_write(fd, l->text, l->len);
    iol_sys_close(fd);
    return 0;
}

/* The runtime never writes to the program's stdout or stderr: its own problems go to the file named by
 * IOLENS_PROFILE_DEBUG, and nowhere when that is not set. */
void iol_debug(const char *fmt, ...)
{
    if (iol_g.debug_path[0] == '\0')
        return;
    int saved = errno;
    char buf[1024];
    int n = snprintf(buf, sizeof buf, "iolens-profile[%d]: ", iol_g.pid);
    va_list ap;
    va_start(ap, fmt);
    int m = vsnprintf(buf + n, sizeof buf - (size_t)n - 1, fmt, ap);
    va_end(ap);
    size_t len = (size_t)n + (m < 0 ? 0 : (size_t)m);
    if (len > sizeof buf - 2)
        len = sizeof buf - 2;
    buf[len++] = '\n';
    struct line l = { buf, len };
    iol_aside(append_line, &l);
    errno = saved;
}
