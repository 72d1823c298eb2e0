/* many_files.c — the program behind a large Darshan log: creates N files in DIR, writes BYTES to each in
 * one write, closes it, then reads each back and stats it. Under Darshan's LD_PRELOAD (non-MPI mode) every
 * file is a POSIX record: N records. Prints one JSON line (files, bytes written and read).
 *
 *   many_files DIR N [BYTES]     BYTES defaults to 4096 */
#define _POSIX_C_SOURCE 200809L
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: many_files DIR N [BYTES]\n");
        return 2;
    }
    const char *dir = argv[1];
    long n = strtol(argv[2], NULL, 10);
    size_t bytes = argc > 3 ? (size_t)strtoul(argv[3], NULL, 10) : 4096;
    char *buf = malloc(bytes ? bytes : 1);
    if (!buf)
        return 1;
    memset(buf, 'x', bytes);
    char path[4096];
    long long wrote = 0, got = 0;
    for (long i = 0; i < n; i++) {
        snprintf(path, sizeof path, "%s/f%07ld", dir, i);
        int fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0644);
        if (fd < 0) {
            perror(path);
            return 1;
        }
        ssize_t w = write(fd, buf, bytes);
        wrote += w > 0 ? w : 0;
        close(fd);
    }
    for (long i = 0; i < n; i++) {
        snprintf(path, sizeof path, "%s/f%07ld", dir, i);
        int fd = open(path, O_RDONLY);
        if (fd < 0) {
            perror(path);
            return 1;
        }
        ssize_t r = read(fd, buf, bytes);
        got += r > 0 ? r : 0;
        close(fd);
        struct stat st;
        stat(path, &st);
    }
    printf("{\"files\": %ld, \"bytes_written\": %lld, \"bytes_read\": %lld}\n", n, wrote, got);
    free(buf);
    return 0;
}
