/* stat_storm_threads DIR THREADS SECONDS: makes 8 small input files in DIR and reads each once, then THREADS
 * threads each stat every input over and over for SECONDS (polling for a change that never comes).
 * Metadata-bound. Prints stats=N (all threads). */
#include "suite_clock.h"
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define INPUTS 8
static char paths[INPUTS][4096];
static double end;

struct poller {
    pthread_t tid;
    long stats, failed;
};

static void *poll_inputs(void *arg)
{
    struct stat st;
    struct poller *p = arg;
    while (p->stats < 1000 || suite_now() < end)
        for (int i = 0; i < INPUTS; i++, p->stats++)
            if (stat(paths[i], &st) != 0)
                p->failed++;
    return NULL;
}

int main(int argc, char **argv)
{
    char buf[1024];
    struct poller pollers[64];
    if (argc != 4) {
        fprintf(stderr, "usage: %s DIR THREADS SECONDS\n", argv[0]);
        return 2;
    }
    int threads = atoi(argv[2]);
    if (threads < 1 || threads > 64 || mkdir(argv[1], 0755) != 0)
        return 2;
    memset(buf, 'i', sizeof buf);
    for (int i = 0; i < INPUTS; i++) {
        snprintf(paths[i], sizeof paths[i], "%s/input-%d", argv[1], i);
        int fd = open(paths[i], O_CREAT | O_TRUNC | O_RDWR, 0644);
        if (fd < 0 || write(fd, buf, sizeof buf) != (ssize_t)sizeof buf || pread(fd, buf, sizeof buf, 0) < 0 ||
            close(fd) != 0)
            return 1;
    }
    end = suite_now() + atof(argv[3]);
    memset(pollers, 0, sizeof pollers);
    for (int t = 0; t < threads; t++)
        if (pthread_create(&pollers[t].tid, NULL, poll_inputs, &pollers[t]) != 0)
            return 1;
    long stats = 0, failed = 0;
    for (int t = 0; t < threads; t++) {
        pthread_join(pollers[t].tid, NULL);
        stats += pollers[t].stats;
        failed += pollers[t].failed;
    }
    printf("stats=%ld\n", stats);
    return failed != 0;
}
