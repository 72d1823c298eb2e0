/* find_tree.c — builds the tree bench/find_rate.py walks, fast (one process, no per-file Python):
 * DIR/d.NNNN/file.mdtest.D.I for NDIRS directories of NFILES empty files each; every file with I % EVERY == 1 is
 * made 3901 bytes long (IO500's mdtest-hard size) with ftruncate, so it takes no tmpfs memory for data.
 *
 *     find_tree DIR NDIRS NFILES EVERY */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    if (argc != 5) {
        fprintf(stderr, "usage: find_tree DIR NDIRS NFILES EVERY\n");
        return 2;
    }
    long ndirs = atol(argv[2]), nfiles = atol(argv[3]), every = atol(argv[4]);
    if (ndirs < 1 || nfiles < 0 || every < 1) {
        fprintf(stderr, "find_tree: bad counts\n");
        return 2;
    }
    int root = open(argv[1], O_RDONLY | O_DIRECTORY);
    if (root < 0) {
        perror(argv[1]);
        return 1;
    }
    char name[256];
    for (long d = 0; d < ndirs; d++) {
        snprintf(name, sizeof name, "d.%04ld", d);
        if (mkdirat(root, name, 0755) != 0) {
            perror(name);
            return 1;
        }
        int dfd = openat(root, name, O_RDONLY | O_DIRECTORY);
        if (dfd < 0) {
            perror(name);
            return 1;
        }
        for (long i = 0; i < nfiles; i++) {
            snprintf(name, sizeof name, "file.mdtest.%ld.%ld", d, i);
            int fd = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL, 0644);
            if (fd < 0 || (i % every == 1 && ftruncate(fd, 3901) != 0)) {
                fprintf(stderr, "find_tree: %s: %s\n", name, strerror(errno));
                return 1;
            }
            close(fd);
        }
        close(dfd);
    }
    close(root);
    return 0;
}
