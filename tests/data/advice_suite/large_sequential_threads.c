/* large_sequential_threads DIR THREADS MIB: THREADS threads each write a file of MIB MiB in 4 MiB writes and
 * read it back in 4 MiB reads. Good, large, sequential I/O: nothing to advise. */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define BLOCK (4 << 20)
static const char *dir;
static long mib;

static void *work(void *arg)
{
    long id = (long)arg;
    char path[4096];
    char *buf = malloc(BLOCK);
    if (buf == NULL)
        return (void *)1;
    memset(buf, 'l', BLOCK);
    snprintf(path, sizeof path, "%s/thread-%ld.dat", dir, id);
    int fd = open(path, O_CREAT | O_TRUNC | O_RDWR, 0644);
    long blocks = mib / 4, bad = fd < 0;
    for (long i = 0; !bad && i < blocks; i++)
        bad = write(fd, buf, BLOCK) != BLOCK;
    for (long i = 0; !bad && i < blocks; i++)
        bad = pread(fd, buf, BLOCK, (off_t)i * BLOCK) != BLOCK;
    if (fd >= 0)
        close(fd);
    free(buf);
    return (void *)bad;
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: %s DIR THREADS MIB\n", argv[0]);
        return 2;
    }
    dir = argv[1];
    int threads = atoi(argv[2]);
    mib = atol(argv[3]);
    pthread_t tid[64];
    if (threads < 1 || threads > 64)
        return 2;
    for (long t = 0; t < threads; t++)
        if (pthread_create(&tid[t], NULL, work, (void *)t) != 0)
            return 1;
    long bad = 0;
    for (int t = 0; t < threads; t++) {
        void *r;
        pthread_join(tid[t], &r);
        bad |= (long)r;
    }
    return bad != 0;
}
