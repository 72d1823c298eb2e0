/* clock.c — the runtime's time source.
 *
 * clock_gettime costs 30-70 ns on a VM; two per call would eat most of a 4-byte pwrite's overhead budget. The
 * TSC costs ~10 ns and, when it is invariant (CPUID 0x80000007 EDX bit 8: constant rate, runs in every
 * C-state), is a fine stopwatch. Its rate is learnt against CLOCK_MONOTONIC: a first estimate over the
 * runtime's own start-up (which takes longer than the 20 us needed), then refined at 10 ms, 100 ms, 1 s,
 * 10 s and every 100 s from the same anchor, so the error falls as the run gets longer. Without an
 * invariant TSC (or IOLENS_PROFILE_CLOCK=monotonic) ticks are CLOCK_MONOTONIC nanoseconds. */
#include "rt.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>
#if defined(__x86_64__)
#include <cpuid.h>
#endif

/* The anchor every refinement measures from: a (ticks, ns) pair read together at the start. */
static uint64_t anchor_ticks, anchor_ns;

uint64_t iol_mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t wall_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int tsc_usable(void)
{
#if defined(__x86_64__)
    const char *force = getenv("IOLENS_PROFILE_CLOCK");
    if (force != NULL && strcmp(force, "monotonic") == 0)
        return 0;
    unsigned a, b, c, d;
    if (!__get_cpuid(0x80000007u, &a, &b, &c, &d))
        return 0;
    return (d >> 8) & 1u;
#else
    return 0;
#endif
}

/* A (ticks, ns) pair: the ns reading bracketed by two tick readings, the tightest of three tries. */
static void read_pair(uint64_t *ticks, uint64_t *ns)
{
    uint64_t best = UINT64_MAX;
    for (int i = 0; i < 3; i++) {
        uint64_t a = iol_ticks();
        uint64_t m = iol_mono_ns();
        uint64_t b = iol_ticks();
        if (b - a < best) {
            best = b - a;
            *ticks = a + (b - a) / 2;
            *ns = m;
        }
    }
}

void iol_clock_start(uint64_t *mono_ns, uint64_t *wall)
{
    iol_g.clk.tsc = tsc_usable();
    if (!iol_g.clk.tsc) {
        *mono_ns = iol_mono_ns();
        *wall = wall_ns();
        iol_g.clk.base = *mono_ns;
        iol_g.clk.mult = 1ull << 32;
        iol_g.clk.next_refine = UINT64_MAX;
        return;
    }
    read_pair(&anchor_ticks, &anchor_ns);
    *wall = wall_ns();
    *mono_ns = anchor_ns;
    iol_g.clk.base = anchor_ticks;
    iol_g.clk.mult = 1ull << 32; /* until iol_clock_calibrate: nothing is timed before it */
    iol_g.clk.next_refine = UINT64_MAX;
}

static uint64_t factor_since_anchor(uint64_t *ticks_now)
{
    uint64_t t, ns;
    read_pair(&t, &ns);
    *ticks_now = t;
    if (t <= anchor_ticks || ns <= anchor_ns)
        return 0;
    return (uint64_t)(((unsigned __int128)(ns - anchor_ns) << 32) / (t - anchor_ticks));
}

/* The first estimate: at least 20 us after iol_clock_start (the start-up in between is usually longer). */
void iol_clock_calibrate(void)
{
    if (!iol_g.clk.tsc)
        return;
    while (iol_mono_ns() - anchor_ns < 20000)
        ;
    uint64_t now, m = factor_since_anchor(&now);
    if (m == 0) { /* the TSC did not advance: do not trust it */
        iol_g.clk.tsc = 0;
        iol_g.clk.base = anchor_ns;
        iol_g.clk.mult = 1ull << 32;
        return;
    }
    __atomic_store_n(&iol_g.clk.mult, m, __ATOMIC_RELAXED);
    /* 10 ms worth of ticks from now */
    uint64_t ticks_per_10ms = (uint64_t)(((unsigned __int128)10000000u << 32) / m);
    __atomic_store_n(&iol_g.clk.next_refine, now + ticks_per_10ms, __ATOMIC_RELAXED);
}

/* Called by whichever thread first sees the tick count pass next_refine; one wins, the others go on. The
 * winner's acquire pairs with the previous winner's release of next_refine, so `refines` (written only by
 * winners) is never raced on, even when two refinements run on different threads. */
void iol_clock_refine(uint64_t now)
{
    uint64_t due = __atomic_load_n(&iol_g.clk.next_refine, __ATOMIC_RELAXED);
    if (now < due || !__atomic_compare_exchange_n(&iol_g.clk.next_refine, &due, UINT64_MAX, 0,
                                                  __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
        return;
    uint64_t t, m = factor_since_anchor(&t);
    if (m != 0)
        __atomic_store_n(&iol_g.clk.mult, m, __ATOMIC_RELAXED);
    else
        m = __atomic_load_n(&iol_g.clk.mult, __ATOMIC_RELAXED);
    unsigned k = ++iol_g.clk.refines; /* 10 ms, then x10 up to 100 s, then every 100 s */
    uint64_t wait_ns = 10000000ull;
    for (unsigned i = 0; i < k && wait_ns < 100000000000ull; i++)
        wait_ns *= 10;
    uint64_t ticks = (uint64_t)(((unsigned __int128)wait_ns << 32) / m);
    __atomic_store_n(&iol_g.clk.next_refine, t + ticks, __ATOMIC_RELEASE);
}

/* A fork child's log starts now: new base, same calibration. */
void iol_clock_restart(uint64_t *mono_ns, uint64_t *wall)
{
    if (!iol_g.clk.tsc) {
        *mono_ns = iol_mono_ns();
        iol_g.clk.base = *mono_ns;
    } else {
        uint64_t t, ns;
        read_pair(&t, &ns);
        iol_g.clk.base = t;
        *mono_ns = ns;
    }
    *wall = wall_ns();
}
