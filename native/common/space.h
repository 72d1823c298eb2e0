/* space.h — the room a run needs, counted per file system before any I/O, against the free space and free
 * inodes statvfs gives an unprivileged user. A run that would fill a shared file system is refused (exit
 * status 2, one line) unless the engine's --no-space-check says to run anyway. */
#ifndef IOL_SPACE_H
#define IOL_SPACE_H
#include <stdint.h>
#include <sys/types.h>

#include "error.h"
#include "options.h"

#define IOL_SPACE_MAX_FS 32

struct iol_space {
    int n;
    struct {
        dev_t dev;
        char dir[IOL_STR_MAX];          /* the first directory seen on that file system, for the message */
        long double bytes;
        long double inodes;
    } fs[IOL_SPACE_MAX_FS];
};

/* Adds what will be written under directory dir (an existing directory). Unknown directories (stat fails) are
 * skipped: the path checks report them. */
void iol_space_add(struct iol_space *s, const char *dir, long double bytes, long double inodes);
/* Refuses (IOL_ERR_USAGE) the first file system whose free bytes or free inodes are fewer than needed.
 * `what` says how the need was counted ("size x numjobs x ranks, over all jobs"). */
int iol_space_check(const struct iol_space *s, const char *option, const char *what, struct iol_err *err);

#endif
