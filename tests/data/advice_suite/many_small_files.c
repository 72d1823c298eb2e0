/* many_small_files DIR BYTES SECONDS: writes files of BYTES bytes into DIR (one open and one write each) for
 * SECONDS (at least 200 files), then reads each back once. Many small files. Prints files=N. */
#include "suite_clock.h"
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    static char buf[1 << 16];
    char path[4096];
    if (argc != 4) {
        fprintf(stderr, "usage: %s DIR BYTES SECONDS\n", argv[0]);
        return 2;
    }
    size_t bytes = (size_t)atol(argv[2]);
    double end = suite_now() + atof(argv[3]);
    long files = 0;
    if (bytes > sizeof buf)
        return 2;
    memset(buf, 'f', bytes);
    if (mkdir(argv[1], 0755) != 0) {
        perror(argv[1]);
        return 1;
    }
    for (; files < 200 || suite_now() < end; files++) {
        snprintf(path, sizeof path, "%s/part-%06ld.dat", argv[1], files);
        int fd = open(path, O_CREAT | O_TRUNC | O_WRONLY, 0644);
        if (fd < 0 || write(fd, buf, bytes) != (ssize_t)bytes || close(fd) != 0)
            return 1;
    }
    for (long i = 0; i < files; i++) {
        snprintf(path, sizeof path, "%s/part-%06ld.dat", argv[1], i);
        int fd = open(path, O_RDONLY);
        if (fd < 0 || read(fd, buf, bytes) != (ssize_t)bytes || close(fd) != 0)
            return 1;
    }
    printf("files=%ld\n", files);
    return 0;
}
