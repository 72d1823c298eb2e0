/* profile_sleeper — writes N 8-byte records to DIR/sleeper (write, fsync every 10), reads them back, says
 * "ready" on stdout, then sleeps until killed: the test kills it with SIGKILL and reads the raw log.
 *
 *   profile_sleeper DIR N */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    if (argc < 3)
        return 2;
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
    for (;;)
        pause();
}
