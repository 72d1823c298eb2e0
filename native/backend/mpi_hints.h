/* mpi_hints.h — MPI hints (MPI_Info key/value pairs) as IOR takes them, for every backend over an MPI library
 * (MPI-IO, HDF5, PnetCDF).
 *
 * IOR reads hints from two places, in this order, a later value of a key replacing an earlier one:
 *  - the environment: every variable IOR_HINT__MPI__key=value (and IOR_HINT__GPFS__key=value, which IOR also
 *    passes to MPI as key=value);
 *  - the hints file (-U FILE, --mpiio.hintsFileName): lines of the same form, `IOR_HINT__MPI__key=value`
 *    (spaces around '=' allowed).
 * Where IOR skips what it cannot read (a line without a value crashes it; a line of another form is ignored
 * without a word), iolens refuses it naming the file and line, or the variable: a hint that silently does
 * not reach the library makes a tuned run measure the untuned one. Blank lines and lines starting with '#'
 * are comments.
 *
 * The parsing here needs no MPI, so a run is checked before any rank starts; the MPI_Info parts exist only
 * in a build with MPI. */
#ifndef IOL_MPI_HINTS_H
#define IOL_MPI_HINTS_H
#include <stdio.h>
#include "../common/error.h"
#include "../common/json.h"

#define IOL_HINT_KEY_MAX 256
#define IOL_HINT_VAL_MAX 1024

struct iol_hint {
    char key[IOL_HINT_KEY_MAX];
    char value[IOL_HINT_VAL_MAX];
};

/* A list of hints, each key once, in the order first set. All zero is the empty list. */
struct iol_hints {
    int n, cap;
    struct iol_hint *v;
};

/* Sets key to value (replacing an earlier value of the key). Returns 0, or -1 when out of memory or the key
 * or value is too long (err names `where`). */
int iol_hints_set(struct iol_hints *h, const char *key, const char *value, const char *where, struct iol_err *err);
/* The value of key, or NULL. */
const char *iol_hints_get(const struct iol_hints *h, const char *key);
void iol_hints_free(struct iol_hints *h);

/* The hints of the environment, then of the file (NULL or "" = none), as IOR reads them. A bad line, an
 * unreadable file or a bad variable is IOL_ERR_USAGE naming the option (-U), the file and line, or the
 * variable. */
int iol_hints_collect(const char *hints_file, struct iol_hints *h, struct iol_err *err);

/* Prints the hints as IOR's -H does: "\n<title> {\n", a "\t<key> = <value>\n" line each, "}\n". */
void iol_hints_print(FILE *fp, const char *title, const struct iol_hints *h);

/* Writes "<key>": {"<hint>": "<value>", ...} into the current JSON object. */
void iol_hints_json(struct iol_json *j, const char *key, const struct iol_hints *h);

#if IOLENS_HAVE_MPI
#include <mpi.h>
/* A new MPI_Info holding the hints (an empty one when there are none, as IOR passes); the caller frees it.
 * Returns 0, or -1 with err set (the message names the hint the library refused). */
int iol_hints_to_info(const struct iol_hints *h, MPI_Info *info, struct iol_err *err);
/* Replaces h's content with the hints an MPI_Info holds (what MPI_File_get_info reports). */
int iol_hints_from_info(MPI_Info info, struct iol_hints *h, struct iol_err *err);
/* An MPI error code as text, for messages: "<what>: <MPI's message>". */
int iol_mpi_err(struct iol_err *err, int rc, const char *what, const char *path);
#endif

#endif
