/* wrap_prelude.h — included first by every runtime source: feature macros, and no inline library bodies.
 *
 * glibc's headers define some functions inline when optimizing (vprintf, fread_unlocked, …); the runtime
 * defines those same names as wrappers, so the inline copies must not be seen. _FORTIFY_SOURCE would turn
 * read/open/… into inline checks for the same reason, and is off for the runtime (CMake). */
#ifndef IOL_PROF_WRAP_PRELUDE_H
#define IOL_PROF_WRAP_PRELUDE_H
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <features.h>
#undef __USE_EXTERN_INLINES
#include <stdio.h>
#undef fread_unlocked
#undef fwrite_unlocked
#undef fgets_unlocked
#undef fputs_unlocked
#undef fflush_unlocked
#undef putc
#undef getc
#undef putc_unlocked
#undef getc_unlocked
#undef fputc_unlocked
#undef fgetc_unlocked
#undef putchar
#undef getchar
#undef putchar_unlocked
#undef getchar_unlocked

/* The symbols the runtime exports: the wrappers. Everything else is hidden (-fvisibility=hidden). */
#define IOL_EXPORT __attribute__((visibility("default")))
#define IOL_LIKELY(x) __builtin_expect(!!(x), 1)
#define IOL_UNLIKELY(x) __builtin_expect(!!(x), 0)
#endif
