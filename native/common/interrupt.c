/* interrupt.c — see interrupt.h. A signal handler can only talk to the program through a variable of static
 * storage, so this is the one mutable global of the engine (with its twin for a signal learned from a peer,
 * which is state of the same process-wide event). */
#include "interrupt.h"

#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

static volatile sig_atomic_t received;
static volatile sig_atomic_t learned;
static volatile sig_atomic_t *shared;
/* When iol_interrupt_pending first returned a signal (monotonic ns; normal context, possibly several threads:
 * the first to see it sets it). */
static _Atomic int64_t first_seen_ns;

static int64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void record(int sig)
{
    received = sig;
    volatile sig_atomic_t *w = shared;
    if (w) *w = sig;   /* a plain store: safe in a handler */
}

void iol_interrupt_share(volatile sig_atomic_t *word)
{
    shared = word;
}

void iol_interrupt_install(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = record;
    sigemptyset(&sa.sa_mask);
    /* A signal the engine was started with ignored (nohup's SIGHUP, a background job's SIGINT) stays ignored:
     * the user asked the run to go on through it. */
    static const int stops[] = { SIGINT, SIGTERM, SIGHUP };
    for (size_t i = 0; i < sizeof stops / sizeof stops[0]; i++) {
        struct sigaction old;
        if (sigaction(stops[i], NULL, &old) == 0 && old.sa_handler == SIG_IGN) continue;
        sigaction(stops[i], &sa, NULL);
    }
    signal(SIGPIPE, SIG_IGN);
}

static int pending_now(void)
{
    if (received) return received;
    volatile sig_atomic_t *w = shared;
    if (w && *w) return *w;
    return learned;
}

int iol_interrupt_pending(void)
{
    int sig = pending_now();
    if (sig && atomic_load_explicit(&first_seen_ns, memory_order_relaxed) == 0) {
        int64_t zero = 0;
        atomic_compare_exchange_strong(&first_seen_ns, &zero, mono_ns());
    }
    return sig;
}

int iol_interrupt_received(void)
{
    return received;
}

int iol_interrupt_overdue(void)
{
    if (!iol_interrupt_pending()) return 0;
    return mono_ns() - atomic_load(&first_seen_ns) >= (int64_t)IOL_INTERRUPT_CLEANUP_S * 1000000000;
}

void iol_interrupt_note(int sig)
{
    if (sig > 0 && !learned) learned = sig;
}

const char *iol_signal_name(int sig)
{
    switch (sig) {
    case SIGINT: return "SIGINT";
    case SIGTERM: return "SIGTERM";
    case SIGHUP: return "SIGHUP";
    case SIGKILL: return "SIGKILL";
    case SIGQUIT: return "SIGQUIT";
    case SIGPIPE: return "SIGPIPE";
    case SIGSEGV: return "SIGSEGV";
    case SIGBUS: return "SIGBUS";
    case SIGABRT: return "SIGABRT";
    case SIGUSR1: return "SIGUSR1";
    case SIGUSR2: return "SIGUSR2";
    case SIGXCPU: return "SIGXCPU";
    case SIGXFSZ: return "SIGXFSZ";
    default: return "an unnamed signal";
    }
}
