/* pathcheck.h — why a directory a run should use cannot be used, said precisely: "'a' is a file, not a
 * directory" rather than "'a/b' does not exist" when the user's path goes through a file. */
#ifndef IOL_PATHCHECK_H
#define IOL_PATHCHECK_H
#include <stddef.h>

/* 0 if dir is an existing directory. Otherwise -1 and a phrase in out: "'P' does not exist", "'P' is a
 * file, not a directory", "'P' is not a directory" or "'P': <strerror>", where P is the first prefix of dir
 * that is the problem (dir itself when its parent is fine). */
int iol_dir_problem(const char *dir, char *out, size_t len);

#endif
