/* options.h — options declared once, as data.
 *
 * A workload declares a table of struct iol_option. The same table drives the command-line parser, the
 * `key=value` setter used by IOR's -O directives and (later) IO500's INI reader, --help, and the JSON echo
 * of the effective configuration. Values are written straight into the workload's config struct at
 * `offset`. Errors always name the option as the user wrote it ("-t", "--transfer-size", "-O transferSize"). */
#ifndef IOL_OPTIONS_H
#define IOL_OPTIONS_H
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "error.h"
#include "json.h"

#define IOL_STR_MAX 4096

enum iol_opt_type {
    IOL_OPT_FLAG,       /* int field; on the command line takes no value (sets 1); as key=value: 0/1/true/false/yes/no */
    IOL_OPT_COUNT,      /* int field; on the command line takes no value and each use adds 1 (IOR's -z -z -z);
                         * as key=value or --name=N: a whole number (or a boolean: 0/1) */
    IOL_OPT_INT,        /* int64_t field; decimal, bounds [min, max] */
    IOL_OPT_SIZE,       /* uint64_t field; integer with optional k/m/g/t/p suffix (powers of 1024, "kib"/"kb"/"k"
                         * all mean 1024), bounds [min, max] */
    IOL_OPT_DOUBLE,     /* double field; bounds [min, max] */
    IOL_OPT_STRING,     /* char[IOL_STR_MAX] field */
    IOL_OPT_DIRECTIVES, /* no field: the value is "k=v[,k=v...]" (IOR's -O), each set by name in the same tables */
};

struct iol_option {
    char short_name;         /* 0 if none */
    const char *name;        /* canonical long name ("transfer-size"); used in --help and the JSON echo */
    const char *aliases;     /* comma-separated other long names accepted with -- and in key=value form
                              * (IOR's internal names such as "transferSize"); NULL if none */
    enum iol_opt_type type;
    size_t offset;           /* of the field in the config struct */
    const char *defval;      /* default as text, parsed like user input; NULL = zero / empty */
    const char *help;
    double min, max;         /* bounds for INT/SIZE/DOUBLE; both 0 = no bounds beyond the type's; otherwise min
                              * applies, and max too unless it is 0 ({1, 0} = "at least 1") */
};

/* A table with the config struct it fills. A program can parse against several sets at once
 * (e.g. the engine's run options and a workload's options). */
struct iol_optset {
    const struct iol_option *table;   /* terminated by an entry with name == NULL */
    void *cfg;
};

/* Fills every field from the defaults (NULL = zero / empty). Defaults are not bounds-checked, so one can be a
 * sentinel the user cannot type; a default that does not parse is a bug in the table (IOL_ERR_RUNTIME). */
int iol_opts_defaults(const struct iol_optset *sets, int nsets, struct iol_err *err);

/* Parses argv[0..argc-1] (no program name): "-t 1m", "-t1m", "-t=1m", "-Fw" (bundled flags), "--transfer-size=1m",
 * "--transfer-size 1m", "--posix.odirect". A "--" ends option parsing. Arguments that are not options are
 * returned in order through positional (room for argc pointers; may be NULL: then any positional argument is
 * an error); *npositional gets their count. On error returns -1 with err->code = IOL_ERR_USAGE. */
int iol_opts_parse_argv(const struct iol_optset *sets, int nsets, int argc, char **argv,
                        char **positional, int *npositional, struct iol_err *err);

/* Sets one option by long name or alias (case-sensitive first, then case-insensitive), as -O and INI do; also
 * by its command-line spelling, "-t" or "--transfer-size" (IOR's "-t=1m" script lines).
 * `where` names the source for messages ("-O", "config.ini:12"). */
int iol_opts_set(const struct iol_optset *sets, int nsets, const char *name, const char *value,
                 const char *where, struct iol_err *err);

/* Finds an option by long name/alias; NULL if none. *set_index gets the set it belongs to. */
const struct iol_option *iol_opts_find(const struct iol_optset *sets, int nsets, const char *name, int *set_index);

/* Prints "  -t, --transfer-size=SIZE   bytes per I/O call (default 256k)" lines. */
void iol_opts_help(const struct iol_optset *sets, int nsets, FILE *fp);

/* Writes the members "name": value for every option of the sets into the current JSON object
 * (DIRECTIVES entries are skipped). */
void iol_opts_json(const struct iol_optset *sets, int nsets, struct iol_json *j);

/* Parses a size: "4096", "4k", "1M", "2g", "1t", "8KiB", "1mb". Rejects empty, negative, fractional, unknown
 * suffixes and overflow of uint64. Returns 0 or -1 (err names `what`). */
int iol_parse_size(const char *s, uint64_t *out, const char *what, struct iol_err *err);
int iol_parse_int(const char *s, int64_t *out, const char *what, struct iol_err *err);
int iol_parse_double(const char *s, double *out, const char *what, struct iol_err *err);
int iol_parse_bool(const char *s, int *out, const char *what, struct iol_err *err);

/* Formats a byte count the way IOR prints it ("2 MiB", "47008 bytes", "1.50 GiB"). */
void iol_format_size(uint64_t bytes, char *buf, size_t len);

#endif
