/* old_stat.h — the stat entry points of binaries built against glibc < 2.33 (__xstat and friends, which the C
 * library keeps only as versioned compatibility symbols), called as such a binary would: bound at link time
 * to GLIBC_2.2.5 / GLIBC_2.4, so that LD_PRELOAD's unversioned definitions come first, as they do for those
 * binaries (dlvsym would find the C library's own). */
#ifndef IOL_TESTS_OLD_STAT_H
#define IOL_TESTS_OLD_STAT_H
#include <sys/stat.h>

#if defined(__x86_64__)
__asm__(".symver old_xstat, __xstat@GLIBC_2.2.5");
__asm__(".symver old_lxstat, __lxstat@GLIBC_2.2.5");
__asm__(".symver old_fxstat, __fxstat@GLIBC_2.2.5");
__asm__(".symver old_fxstatat, __fxstatat@GLIBC_2.4");
int old_xstat(int, const char *, struct stat *);
int old_lxstat(int, const char *, struct stat *);
int old_fxstat(int, int, struct stat *);
int old_fxstatat(int, int, const char *, struct stat *, int);
__asm__(".symver old_xstat64, __xstat64@GLIBC_2.2.5");
__asm__(".symver old_lxstat64, __lxstat64@GLIBC_2.2.5");
__asm__(".symver old_fxstat64, __fxstat64@GLIBC_2.2.5");
__asm__(".symver old_fxstatat64, __fxstatat64@GLIBC_2.4");
int old_xstat64(int, const char *, struct stat64 *);
int old_lxstat64(int, const char *, struct stat64 *);
int old_fxstat64(int, int, struct stat64 *);
int old_fxstatat64(int, int, const char *, struct stat64 *, int);
#endif

#endif
