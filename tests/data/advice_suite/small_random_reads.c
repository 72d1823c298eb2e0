/* small_random_reads FILE MIB SECONDS: writes FILE in 1 MiB blocks, then reads 4 KiB at random offsets (a
 * fixed xorshift sequence) for SECONDS, at least 2000 times. Small random reads. Prints reads=N (the preads). */
#define _GNU_SOURCE
#include "suite_clock.h"
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    static char buf[1 << 20];
    if (argc != 4) {
        fprintf(stderr, "usage: %s FILE MIB SECONDS\n", argv[0]);
        return 2;
    }
    long mib = atol(argv[2]), reads = 0;
    double budget = atof(argv[3]);
    memset(buf, 'r', sizeof buf);
    int fd = open(argv[1], O_CREAT | O_TRUNC | O_RDWR, 0644);
    if (fd < 0) {
        perror(argv[1]);
        return 1;
    }
    for (long i = 0; i < mib; i++)
        if (write(fd, buf, sizeof buf) != (ssize_t)sizeof buf)
            return 1;
    unsigned long long x = 88172645463325252ULL, blocks = (unsigned long long)mib * 256;
    double end = suite_now() + budget;
    while (reads < 2000 || suite_now() < end) {
        for (int k = 0; k < 100; k++, reads++) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            if (pread(fd, buf, 4096, (off_t)(x % blocks) * 4096) != 4096)
                return 1;
        }
    }
    printf("reads=%ld\n", reads);
    return close(fd) != 0;
}
