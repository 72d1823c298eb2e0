/* ledger.h — which files in a directory iolens created.
 *
 * The benchmarks may only delete or overwrite what they created. A directory where iolens creates test files
 * holds a small ledger file (.iolens-owned) listing the names it created there, one per line; each workload
 * decides what a name covers (ior: "name", "name.00000001", "name.3", ...). The ledger is edited under
 * flock() so concurrent runs in one directory keep it whole, and removed when its last entry goes. */
#ifndef IOL_LEDGER_H
#define IOL_LEDGER_H
#include "error.h"

#define IOL_LEDGER_NAME ".iolens-owned"

/* 1 if `name` is listed in dir's ledger, 0 if not (or there is no ledger). */
int iol_ledger_owns(const char *dir, const char *name);
/* Adds name (if missing). Returns 0 or -1. */
int iol_ledger_add(const char *dir, const char *name, struct iol_err *err);
/* Removes name (if present); deletes the ledger when it becomes empty. Returns 0 or -1. */
int iol_ledger_remove(const char *dir, const char *name, struct iol_err *err);

#endif
