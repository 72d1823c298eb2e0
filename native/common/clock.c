/* clock.c — time sources (see clock.h). */
#include "clock.h"
#include "interrupt.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <time.h>

static uint64_t read_clock(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t iol_now_ns(void)
{
    return read_clock(CLOCK_MONOTONIC);
}

uint64_t iol_wall_ns(void)
{
    return read_clock(CLOCK_REALTIME);
}

void iol_format_utc(uint64_t wall_ns, char *buf, int len)
{
    if (buf == NULL || len <= 0)
        return;
    time_t secs = (time_t)(wall_ns / 1000000000u);
    unsigned ms = (unsigned)(wall_ns % 1000000000u / 1000000u);
    struct tm tm;
    if (gmtime_r(&secs, &tm) == NULL) {
        buf[0] = '\0';
        return;
    }
    snprintf(buf, (size_t)len, "%04d-%02d-%02dT%02d:%02d:%02d.%03uZ", tm.tm_year + 1900, tm.tm_mon + 1,
             tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ms);
}

void iol_sleep_s(double seconds)
{
    if (!(seconds > 0) || !isfinite(seconds))
        return;
    struct timespec req, rem;
    req.tv_sec = (time_t)seconds;
    req.tv_nsec = (long)((seconds - (double)req.tv_sec) * 1e9);
    if (req.tv_nsec >= 1000000000L)
        req.tv_nsec = 999999999L;
    /* A signal (e.g. SIGCHLD from a sibling rank exiting) must not shorten an inter-test delay; an interrupt
     * (SIGINT, SIGTERM, SIGHUP) ends it, so a run told to stop does not sleep on. */
    while (nanosleep(&req, &rem) != 0 && errno == EINTR && !iol_interrupt_pending())
        req = rem;
}
