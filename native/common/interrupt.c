/* interrupt.c — see interrupt.h. A signal handler can only talk to the program through a variable of static
 * storage, so this is the one mutable global of the engine (with its twin for a signal learned from a peer,
 * which is state of the same process-wide event). */
#include "interrupt.h"

#include <signal.h>
#include <string.h>
#include <time.h>

static volatile sig_atomic_t received;
static volatile sig_atomic_t learned;
static volatile sig_atomic_t *shared;
static struct timespec first_seen;   /* when iol_interrupt_pending first returned a signal (normal context) */

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
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
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
    if (sig && first_seen.tv_sec == 0 && first_seen.tv_nsec == 0) clock_gettime(CLOCK_MONOTONIC, &first_seen);
    return sig;
}

int iol_interrupt_overdue(void)
{
    if (!iol_interrupt_pending()) return 0;
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return now.tv_sec - first_seen.tv_sec >= IOL_INTERRUPT_CLEANUP_S;
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
