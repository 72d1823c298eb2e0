/* interrupt.c — see interrupt.h. A signal handler can only talk to the program through a variable of static
 * storage, so this is the one mutable global of the engine. */
#include "interrupt.h"

#include <signal.h>
#include <string.h>

static volatile sig_atomic_t received;

static void record(int sig)
{
    received = sig;
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
}

int iol_interrupt_pending(void)
{
    return received;
}
