/* profile_sleeper — writes N 8-byte records to DIR/sleeper (write, fsync every 10), reads them back, says
 * "ready" on stdout, then sleeps until killed: the test kills it with SIGKILL and reads the raw log.
 *
 *   profile_sleeper DIR N            SIGINT, SIGTERM and SIGHUP end it (their default)
 *   profile_sleeper DIR N ignore     it ignores SIGINT, SIGTERM and SIGHUP: only SIGKILL ends it
 *   profile_sleeper DIR N handle     it catches them, says "got N" for each, and 0.3 s after the first exits
 *                                    with status 3 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <time.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static volatile sig_atomic_t got;

/* Says each signal it gets ("got N"), so that a test sees how many times it came. */
static void on_signal(int sig)
{
    char line[16] = "got ";
    line[4] = (char)('0' + sig / 10);
    line[5] = (char)('0' + sig % 10);
    line[6] = '\n';
    if (write(1, line, 7) != 7)
        _exit(4);
    got = 1;
}

int main(int argc, char **argv)
{
    if (argc < 3)
        return 2;
    if (argc > 3) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = strcmp(argv[3], "ignore") == 0 ? SIG_IGN : on_signal;
        sigemptyset(&sa.sa_mask);
        sigaction(SIGINT, &sa, NULL);
        sigaction(SIGTERM, &sa, NULL);
        sigaction(SIGHUP, &sa, NULL);
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/sleeper", argv[1]);
    long n = atol(argv[2]);
    int fd = open(path, O_CREAT | O_RDWR | O_TRUNC, 0644);
    if (fd < 0)
        return 1;
    for (long i = 0; i < n; i++) {
        if (write(fd, "recordXX", 8) != 8)
            return 1;
        if (i % 10 == 9)
            fsync(fd);
    }
    char buf[8];
    for (long i = 0; i < n; i++)
        if (pread(fd, buf, 8, i * 8) != 8)
            return 1;
    /* fd stays open: the process never gets to close it */
    if (write(1, "ready\n", 6) != 6)
        return 1;
    sigset_t three, old;
    sigemptyset(&three);
    sigaddset(&three, SIGINT);
    sigaddset(&three, SIGTERM);
    sigaddset(&three, SIGHUP);
    sigprocmask(SIG_BLOCK, &three, &old); /* a signal between the test of `got` and the wait is not lost */
    while (!got)
        sigsuspend(&old);
    sigprocmask(SIG_SETMASK, &old, NULL);
    struct timespec rest = { 0, 300000000 }; /* a second copy of the signal would come in this time */
    while (nanosleep(&rest, &rest) != 0)
        ;
    exit(3);
}
