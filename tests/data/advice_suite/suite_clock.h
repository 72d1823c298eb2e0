/* suite_clock.h: the suite's programs run for a time budget rather than a count, so that the I/O time the
 * advice weighs is about the same on a fast machine and a slow one; each prints what it did (key=value
 * lines) for the test to check the report's counts against. */
#ifndef SUITE_CLOCK_H
#define SUITE_CLOCK_H
#include <time.h>

static inline double suite_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}
#endif
