/* profile_threads — THREADS threads, each writing OPS 4-byte pwrites to its own file in DIR then reading
 * them back with OPS 4-byte preads; a per-thread log of exact counts to check the runtime's per-thread
 * records and their merge against.
 *
 *   profile_threads DIR [THREADS [OPS]]     (defaults: 8 threads, 100000 operations) */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static const char *dir;
static long ops;

static void *worker(void *arg)
{
    long id = (long)arg;
    char path[4096];
    snprintf(path, sizeof path, "%s/t%ld", dir, id);
    int fd = open(path, O_CREAT | O_RDWR | O_TRUNC, 0644);
    if (fd < 0)
        return (void *)worker;
    char buf[4] = { 'a', 'b', 'c', 'd' };
    long bad = 0;
    for (long i = 0; i < ops; i++)
        bad += pwrite(fd, buf, 4, i * 4) != 4;
    for (long i = 0; i < ops; i++)
        bad += pread(fd, buf, 4, i * 4) != 4;
    close(fd);
    return bad != 0 ? (void *)worker : NULL;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: profile_threads DIR [THREADS [OPS]]\n");
        return 2;
    }
    dir = argv[1];
    long n = argc > 2 ? atol(argv[2]) : 8;
    ops = argc > 3 ? atol(argv[3]) : 100000;
    pthread_t th[256];
    if (n < 1 || n > 256)
        return 2;
    for (long i = 0; i < n; i++)
        pthread_create(&th[i], NULL, worker, (void *)i);
    int bad = 0;
    for (long i = 0; i < n; i++) {
        void *r;
        pthread_join(th[i], &r);
        bad |= r != NULL;
    }
    return bad;
}
