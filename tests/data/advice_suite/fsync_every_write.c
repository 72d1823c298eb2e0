/* fsync_every_write FILE SECONDS: writes of 4 KiB, each followed by fsync, for SECONDS (at least 200).
 * Prints writes=N. */
#include "suite_clock.h"
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    char buf[4096];
    if (argc != 3) {
        fprintf(stderr, "usage: %s FILE SECONDS\n", argv[0]);
        return 2;
    }
    double end = suite_now() + atof(argv[2]);
    long writes = 0;
    memset(buf, 's', sizeof buf);
    int fd = open(argv[1], O_CREAT | O_TRUNC | O_WRONLY, 0644);
    if (fd < 0) {
        perror(argv[1]);
        return 1;
    }
    for (; writes < 200 || suite_now() < end; writes++)
        if (write(fd, buf, sizeof buf) != (ssize_t)sizeof buf || fsync(fd) != 0)
            return 1;
    printf("writes=%ld\n", writes);
    return close(fd) != 0;
}
