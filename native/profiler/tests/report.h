/* report.h — what the runtime's test programs share: the report of each call's result, written with a raw
 * write system call (so it never counts in the log itself), and the paths of the scratch directory. */
#ifndef IOL_TESTS_REPORT_H
#define IOL_TESTS_REPORT_H
#include <stdarg.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>

static char out[1 << 16];
static size_t out_len;
static const char *dir; /* the scratch directory */

static void flush_report(void)
{
    size_t at = 0;
    while (at < out_len) {
        long n = syscall(SYS_write, 1, out + at, out_len - at);
        if (n <= 0)
            break;
        at += (size_t)n;
    }
    out_len = 0;
}

/* The report grows in memory and is written when half full or at the end: a report line never comes
 * between a call and what the runtime does after it. */
static void say(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(out + out_len, sizeof out - out_len, fmt, ap);
    va_end(ap);
    if (n > 0)
        out_len += (size_t)n < sizeof out - out_len ? (size_t)n : sizeof out - out_len - 1;
    if (out_len > sizeof out / 2)
        flush_report();
}

static char pbuf[8][4096];
static int pn;
/* DIR/name (a few at once in one expression) */
static const char *P(const char *name)
{
    char *b = pbuf[pn++ & 7];
    snprintf(b, sizeof pbuf[0], "%s/%s", dir, name);
    return b;
}

#endif
