/* ledger.h — which files in a directory iolens created.
 *
 * The benchmarks may only delete or overwrite what they created. A directory where iolens creates test files
 * holds a small ledger file (.iolens-owned) listing the names it created there, one per line: the full name
 * of each file relative to that directory ("f.00000001", "3/f.00000003"), and "NAME/" for a directory iolens
 * made. A name covers exactly that file, never names derived from it. The ledger is edited under flock() so
 * concurrent runs in one directory keep it whole, and removed when its last entry goes. */
#ifndef IOL_LEDGER_H
#define IOL_LEDGER_H
#include <stddef.h>
#include "error.h"

#define IOL_LEDGER_NAME ".iolens-owned"

/* 1 if `name` is listed in dir's ledger, 0 if not (or there is no ledger). */
int iol_ledger_owns(const char *dir, const char *name);
/* Adds name (if missing). Returns 0 or -1. */
int iol_ledger_add(const char *dir, const char *name, struct iol_err *err);
/* Removes name (if present); deletes the ledger when it becomes empty. Returns 0 or -1. */
int iol_ledger_remove(const char *dir, const char *name, struct iol_err *err);
/* The same for many names under one lock and one write (a run with many ranks adds all its names at once). */
int iol_ledger_add_many(const char *dir, const char *const *names, size_t n, struct iol_err *err);
int iol_ledger_remove_many(const char *dir, const char *const *names, size_t n, struct iol_err *err);

/* A snapshot of a ledger, for asking about many names without reading the file each time. */
struct iol_ledger_view {
    char *text;
    char **lines;                   /* sorted */
    size_t n;
};
/* Reads dir's ledger (an empty view when there is none). Returns 0, or -1 when out of memory. */
int iol_ledger_load(const char *dir, struct iol_ledger_view *v, struct iol_err *err);
int iol_ledger_view_has(const struct iol_ledger_view *v, const char *name);
void iol_ledger_view_free(struct iol_ledger_view *v);

#endif
