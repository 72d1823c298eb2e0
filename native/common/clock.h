/* clock.h — time sources. Durations always come from CLOCK_MONOTONIC; wall time only labels results. */
#ifndef IOL_CLOCK_H
#define IOL_CLOCK_H
#include <stdint.h>

uint64_t iol_now_ns(void);        /* CLOCK_MONOTONIC, nanoseconds */
uint64_t iol_wall_ns(void);       /* CLOCK_REALTIME, nanoseconds since the epoch */
/* Writes an ISO-8601 UTC timestamp ("2026-11-22T03:50:00.123Z") for a CLOCK_REALTIME value. */
void iol_format_utc(uint64_t wall_ns, char *buf, int len);
/* Sleeps for the given seconds (used for inter-test delays); returns early only on error. */
void iol_sleep_s(double seconds);

#endif
