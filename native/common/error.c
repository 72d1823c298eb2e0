/* error.c — errors as values (see error.h). */
#include "error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* glibc declares the GNU strerror_r (returning char *) under _GNU_SOURCE and the XSI one (returning int)
 * otherwise; strerror() itself is not guaranteed thread-safe, and ranks may be threads. */
static const char *errno_text(int errnum, char *buf, size_t len)
{
#if defined(__GLIBC__) && defined(_GNU_SOURCE)
    return strerror_r(errnum, buf, len);
#else
    if (strerror_r(errnum, buf, len) != 0)
        snprintf(buf, len, "error %d", errnum);
    return buf;
#endif
}

/* The first error is the cause; later ones are usually consequences (cleanup failing after a failed write),
 * so they must not overwrite it. */
static int err_vset(struct iol_err *err, int code, int errnum, const char *fmt, va_list ap)
{
    if (err == NULL || err->code != 0)
        return -1;
    err->code = code ? code : IOL_ERR_RUNTIME;
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    if (errnum != 0) {
        char tmp[256];
        size_t n = strlen(err->msg);
        snprintf(err->msg + n, sizeof err->msg - n, ": %s", errno_text(errnum, tmp, sizeof tmp));
    }
    return -1;
}

int iol_err_set(struct iol_err *err, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    err_vset(err, code, 0, fmt, ap);
    va_end(ap);
    return -1;
}

int iol_err_errno(struct iol_err *err, int code, int errnum, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    err_vset(err, code, errnum, fmt, ap);
    va_end(ap);
    return -1;
}

void iol_err_clear(struct iol_err *err)
{
    if (err == NULL)
        return;
    err->code = 0;
    err->msg[0] = '\0';
}
