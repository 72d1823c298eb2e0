/* options.c — one options table drives argv parsing, key=value setting, --help and the JSON echo
 * (see options.h).
 *
 * Bounds: min and max both 0 means "no bounds beyond the type's". Otherwise min is enforced, and max too
 * unless it is 0 (so { min = 1, max = 0 } reads "at least 1"). Defaults are parsed like user input but not
 * bounds-checked: a default may be a sentinel the user cannot type (seed -1 = "derive from the clock"). */
#include "options.h"

#include <ctype.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const char size_hint[] = "use a number with an optional k/m/g/t suffix";

/* ---- value parsers -------------------------------------------------------------------------------- */

static const char *skip_space(const char *p)
{
    while (isspace((unsigned char)*p))
        p++;
    return p;
}

int iol_parse_size(const char *s, uint64_t *out, const char *what, struct iol_err *err)
{
    const char *p = skip_space(s);
    if (*p == '-')
        return iol_err_set(err, IOL_ERR_USAGE, "%s: '%s' is not a size (sizes cannot be negative)", what, s);
    if (!isdigit((unsigned char)*p))
        return iol_err_set(err, IOL_ERR_USAGE, "%s: '%s' is not a size (%s)", what, s, size_hint);
    uint64_t v = 0;
    bool overflow = false;
    for (; isdigit((unsigned char)*p); p++) {
        unsigned d = (unsigned)(*p - '0');
        if (v > (UINT64_MAX - d) / 10)
            overflow = true;
        else
            v = v * 10 + d;
    }
    if (*p == '.' || *p == ',')
        return iol_err_set(err, IOL_ERR_USAGE,
                           "%s: '%s' is not a size (fractions are not accepted: use a smaller unit, "
                           "e.g. 1536k for 1.5m)", what, s);
    unsigned shift = 0;
    const char *suffixes = "kmgtp";
    const char *unit = *p ? strchr(suffixes, tolower((unsigned char)*p)) : NULL;
    if (unit != NULL) {
        shift = 10 * (unsigned)(unit - suffixes + 1);
        p++;
        /* "k", "kb" and "kib" all mean 1024: storage people write all three and mean the same */
        if (tolower((unsigned char)p[0]) == 'i' && tolower((unsigned char)p[1]) == 'b')
            p += 2;
        else if (tolower((unsigned char)p[0]) == 'b')
            p++;
    }
    p = skip_space(p);
    if (*p != '\0')
        return iol_err_set(err, IOL_ERR_USAGE, "%s: '%s' is not a size (%s)", what, s, size_hint);
    if (overflow || (shift && v > (UINT64_MAX >> shift)))
        return iol_err_set(err, IOL_ERR_USAGE, "%s: '%s' is too large", what, s);
    *out = v << shift;
    return 0;
}

int iol_parse_int(const char *s, int64_t *out, const char *what, struct iol_err *err)
{
    const char *p = skip_space(s);
    bool neg = false;
    if (*p == '-' || *p == '+')
        neg = *p++ == '-';
    if (!isdigit((unsigned char)*p))
        return iol_err_set(err, IOL_ERR_USAGE, "%s: '%s' is not an integer", what, s);
    uint64_t mag = 0;
    bool overflow = false;
    for (; isdigit((unsigned char)*p); p++) {
        unsigned d = (unsigned)(*p - '0');
        if (mag > (UINT64_MAX - d) / 10)
            overflow = true;
        else
            mag = mag * 10 + d;
    }
    p = skip_space(p);
    if (*p != '\0')
        return iol_err_set(err, IOL_ERR_USAGE, "%s: '%s' is not an integer", what, s);
    uint64_t limit = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
    if (overflow || mag > limit)
        return iol_err_set(err, IOL_ERR_USAGE, "%s: '%s' is out of range", what, s);
    *out = neg ? (int64_t)(0 - mag) : (int64_t)mag;
    return 0;
}

int iol_parse_double(const char *s, double *out, const char *what, struct iol_err *err)
{
    const char *p = skip_space(s);
    char *end;
    double v = strtod(p, &end);
    if (end == p || *skip_space(end) != '\0')
        return iol_err_set(err, IOL_ERR_USAGE, "%s: '%s' is not a number", what, s);
    if (!isfinite(v))
        return iol_err_set(err, IOL_ERR_USAGE, "%s: '%s' is not a finite number", what, s);
    *out = v;
    return 0;
}

int iol_parse_bool(const char *s, int *out, const char *what, struct iol_err *err)
{
    static const char *const yes[] = { "1", "true", "yes", "on" };
    static const char *const no[] = { "0", "false", "no", "off" };
    for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++) {
        if (strcasecmp(s, yes[i]) == 0) {
            *out = 1;
            return 0;
        }
        if (strcasecmp(s, no[i]) == 0) {
            *out = 0;
            return 0;
        }
    }
    return iol_err_set(err, IOL_ERR_USAGE, "%s: '%s' is not a boolean (use 0/1, true/false, yes/no, on/off)",
                       what, s);
}

/* ---- lookup ---------------------------------------------------------------------------------------- */

static bool word_equal(const char *a, size_t alen, const char *b, size_t blen, bool icase)
{
    return alen == blen && (icase ? strncasecmp(a, b, alen) == 0 : strncmp(a, b, alen) == 0);
}

/* Does `name` (nlen bytes, not necessarily NUL-terminated) name this option or one of its aliases? */
static bool option_matches(const struct iol_option *o, const char *name, size_t nlen, bool icase)
{
    if (word_equal(o->name, strlen(o->name), name, nlen, icase))
        return true;
    for (const char *a = o->aliases; a != NULL && *a != '\0';) {
        a = skip_space(a);
        size_t len = strcspn(a, ",");
        size_t trimmed = len;
        while (trimmed > 0 && isspace((unsigned char)a[trimmed - 1]))
            trimmed--;
        if (trimmed > 0 && word_equal(a, trimmed, name, nlen, icase))
            return true;
        a += len;
        if (*a == ',')
            a++;
    }
    return false;
}

/* Exact matches win over case-insensitive ones, so "-O blockSize" never hits a "blocksize" elsewhere.
 * `icase` 0: exact matches only (the command line's --long options, matched as their case is written). */
static const struct iol_option *find_long(const struct iol_optset *sets, int nsets, const char *name,
                                          size_t nlen, int icase, int *set_index)
{
    for (int pass = 0; pass < (icase ? 2 : 1); pass++) {
        for (int s = 0; s < nsets; s++) {
            for (const struct iol_option *o = sets[s].table; o->name != NULL; o++) {
                if (option_matches(o, name, nlen, pass == 1)) {
                    if (set_index)
                        *set_index = s;
                    return o;
                }
            }
        }
    }
    return NULL;
}

/* The spelling (name or alias) of o that matches name (nlen bytes) ignoring case, for "did you mean". */
static const char *option_spelled(const struct iol_option *o, const char *name, size_t nlen, char *buf,
                                  size_t blen)
{
    if (word_equal(o->name, strlen(o->name), name, nlen, true))
        return o->name;
    for (const char *a = o->aliases; a != NULL && *a != '\0';) {
        a = skip_space(a);
        size_t len = strcspn(a, ",");
        if (len > 0 && len < blen && word_equal(a, len, name, nlen, true)) {
            memcpy(buf, a, len);
            buf[len] = '\0';
            return buf;
        }
        a += len;
        if (*a == ',')
            a++;
    }
    return o->name;
}

static const struct iol_option *find_short(const struct iol_optset *sets, int nsets, char c, int *set_index)
{
    for (int s = 0; s < nsets; s++) {
        for (const struct iol_option *o = sets[s].table; o->name != NULL; o++) {
            if (o->short_name != 0 && o->short_name == c) {
                *set_index = s;
                return o;
            }
        }
    }
    return NULL;
}

const struct iol_option *iol_opts_find(const struct iol_optset *sets, int nsets, const char *name, int *set_index)
{
    if (name == NULL)
        return NULL;
    return find_long(sets, nsets, name, strlen(name), 1, set_index);
}

/* ---- setting values -------------------------------------------------------------------------------- */

static bool has_bounds(const struct iol_option *o)
{
    return o->min != 0 || o->max != 0;
}

/* `shown` is the value as the message prints it (integers as integers). */
static int check_bounds(const struct iol_option *o, double v, const char *shown, const char *what,
                        struct iol_err *err)
{
    if (!has_bounds(o))
        return 0;
    char bound[40];
    const char *fmt = o->type == IOL_OPT_DOUBLE ? "%g" : "%.0f";
    if (v < o->min) {
        snprintf(bound, sizeof bound, fmt, o->min);
        return iol_err_set(err, IOL_ERR_USAGE, "%s: value %s is below the minimum %s", what, shown, bound);
    }
    if (o->max != 0 && v > o->max) {
        snprintf(bound, sizeof bound, fmt, o->max);
        return iol_err_set(err, IOL_ERR_USAGE, "%s: value %s is above the maximum %s", what, shown, bound);
    }
    return 0;
}

static int apply_directives(const struct iol_optset *sets, int nsets, const char *list, const char *what,
                            struct iol_err *err);

static int set_value(const struct iol_optset *sets, int nsets, const struct iol_option *o, void *cfg,
                     const char *value, const char *what, bool bounds, struct iol_err *err)
{
    char *field = o->type == IOL_OPT_DIRECTIVES ? NULL : (char *)cfg + o->offset;
    char shown[32];
    switch (o->type) {
    case IOL_OPT_FLAG: {
        int b = 0;
        if (iol_parse_bool(value, &b, what, err) != 0)
            return -1;
        *(int *)field = b;
        return 0;
    }
    case IOL_OPT_COUNT: {
        int64_t v = 0;
        int b = 0;
        if (iol_parse_int(value, &v, what, NULL) != 0) {
            if (iol_parse_bool(value, &b, what, err) != 0)
                return -1;
            v = b;
        }
        snprintf(shown, sizeof shown, "%" PRId64, v);
        if (v < 0 || v > 1000000)
            return iol_err_set(err, IOL_ERR_USAGE, "%s: value %s is not a count from 0 to 1000000", what, shown);
        if (bounds && check_bounds(o, (double)v, shown, what, err) != 0)
            return -1;
        *(int *)field = (int)v;
        return 0;
    }
    case IOL_OPT_INT: {
        int64_t v = 0;
        if (iol_parse_int(value, &v, what, err) != 0)
            return -1;
        snprintf(shown, sizeof shown, "%" PRId64, v);
        if (bounds && check_bounds(o, (double)v, shown, what, err) != 0)
            return -1;
        *(int64_t *)field = v;
        return 0;
    }
    case IOL_OPT_SIZE: {
        uint64_t v = 0;
        if (iol_parse_size(value, &v, what, err) != 0)
            return -1;
        snprintf(shown, sizeof shown, "%" PRIu64, v);
        if (bounds && check_bounds(o, (double)v, shown, what, err) != 0)
            return -1;
        *(uint64_t *)field = v;
        return 0;
    }
    case IOL_OPT_DOUBLE: {
        double v = 0;
        if (iol_parse_double(value, &v, what, err) != 0)
            return -1;
        snprintf(shown, sizeof shown, "%g", v);
        if (bounds && check_bounds(o, v, shown, what, err) != 0)
            return -1;
        *(double *)field = v;
        return 0;
    }
    case IOL_OPT_STRING: {
        size_t len = strlen(value);
        if (len >= IOL_STR_MAX)
            return iol_err_set(err, IOL_ERR_USAGE, "%s: value is too long (%zu bytes, at most %d)", what, len,
                               IOL_STR_MAX - 1);
        memcpy(field, value, len + 1);
        return 0;
    }
    case IOL_OPT_DIRECTIVES:
        return apply_directives(sets, nsets, value, what, err);
    }
    return iol_err_set(err, IOL_ERR_RUNTIME, "%s: option has an unknown type %d", what, (int)o->type);
}

int iol_opts_set(const struct iol_optset *sets, int nsets, const char *name, const char *value,
                 const char *where, struct iol_err *err)
{
    bool has_where = where != NULL && *where != '\0';
    int s = 0;
    const struct iol_option *o = NULL;
    /* "-F=1" and "--posix.odirect=1": how IOR's script lines and -O give a command-line option a value */
    if (name[0] == '-' && name[1] == '-')
        o = find_long(sets, nsets, name + 2, strlen(name + 2), 0, &s);
    else if (name[0] == '-' && name[1] != '\0' && name[2] == '\0')
        o = find_short(sets, nsets, name[1], &s);
    else
        o = iol_opts_find(sets, nsets, name, &s);
    if (o == NULL) {
        if (has_where)
            return iol_err_set(err, IOL_ERR_USAGE, "%s: unknown key '%s'", where, name);
        return iol_err_set(err, IOL_ERR_USAGE, "unknown option '%s'", name);
    }
    char what[256];
    snprintf(what, sizeof what, has_where ? "%s %s" : "%s%s", has_where ? where : "", name);
    if (value == NULL) {
        if (o->type != IOL_OPT_FLAG && o->type != IOL_OPT_COUNT)   /* a bare "key" switches a flag on */
            return iol_err_set(err, IOL_ERR_USAGE, "%s: missing value", what);
        value = "1";
    }
    return set_value(sets, nsets, o, sets[s].cfg, value, what, true, err);
}

/* "k=v,k2=v2" (IOR's -O): each pair is set by name; `what` is how the user wrote the option ("-O"). */
static int apply_directives(const struct iol_optset *sets, int nsets, const char *list, const char *what,
                            struct iol_err *err)
{
    size_t len = strlen(list);
    char *copy = malloc(len + 1);
    if (copy == NULL)
        return iol_err_set(err, IOL_ERR_RUNTIME, "%s: out of memory", what);
    memcpy(copy, list, len + 1);
    int rc = 0;
    char *save = NULL;
    for (char *item = strtok_r(copy, ",", &save); item != NULL; item = strtok_r(NULL, ",", &save)) {
        char *key = (char *)skip_space(item);
        if (*key == '\0')
            continue;   /* "a=1,,b=2" or a trailing comma: nothing to set */
        char *eq = strchr(key, '=');
        if (eq == NULL || eq == key) {
            rc = iol_err_set(err, IOL_ERR_USAGE, "%s: '%s' is not key=value", what, key);
            break;
        }
        *eq = '\0';
        for (char *t = eq; t > key && isspace((unsigned char)t[-1]); t--)
            t[-1] = '\0';
        if ((rc = iol_opts_set(sets, nsets, key, eq + 1, what, err)) != 0)
            break;
    }
    free(copy);
    return rc;
}

int iol_opts_defaults(const struct iol_optset *sets, int nsets, struct iol_err *err)
{
    for (int s = 0; s < nsets; s++) {
        for (const struct iol_option *o = sets[s].table; o->name != NULL; o++) {
            if (o->type == IOL_OPT_DIRECTIVES)
                continue;
            char *field = (char *)sets[s].cfg + o->offset;
            if (o->defval == NULL) {
                switch (o->type) {
                case IOL_OPT_FLAG: *(int *)field = 0; break;
                case IOL_OPT_COUNT: *(int *)field = 0; break;
                case IOL_OPT_INT: *(int64_t *)field = 0; break;
                case IOL_OPT_SIZE: *(uint64_t *)field = 0; break;
                case IOL_OPT_DOUBLE: *(double *)field = 0; break;
                case IOL_OPT_STRING: field[0] = '\0'; break;
                case IOL_OPT_DIRECTIVES: break;
                }
                continue;
            }
            char what[128];
            snprintf(what, sizeof what, "default of --%s", o->name);
            if (set_value(sets, nsets, o, sets[s].cfg, o->defval, what, false, err) != 0) {
                if (err != NULL)
                    err->code = IOL_ERR_RUNTIME;   /* a broken table is a program bug, not bad user input */
                return -1;
            }
        }
    }
    return 0;
}

/* ---- argv -------------------------------------------------------------------------------------------- */

/* The argument after an option that takes a value, or an error when there is none, or when what follows is
 * itself an option ("-b -w": the value was forgotten; saying "'-w' is not a size" would mislead). A leading
 * '-' followed by a digit or '.' is a negative number (-s -1), a value. */
static int next_value(const struct iol_optset *sets, int nsets, int argc, char **argv, int *i, const char *what,
                      const char **value, struct iol_err *err)
{
    if (*i + 1 >= argc) return iol_err_set(err, IOL_ERR_USAGE, "%s: missing value", what);
    const char *next = argv[*i + 1];
    int s = 0;
    int option = next[0] == '-' && next[1] != '\0' && !isdigit((unsigned char)next[1]) && next[1] != '.' &&
                 (next[1] == '-' || find_short(sets, nsets, next[1], &s) != NULL);
    if (option)
        return iol_err_set(err, IOL_ERR_USAGE, "%s: missing value (the next argument, '%s', is an option)", what,
                           next);
    *value = argv[++*i];
    return 0;
}

static int parse_long(const struct iol_optset *sets, int nsets, int argc, char **argv, int *i,
                      struct iol_err *err)
{
    const char *arg = argv[*i];
    const char *name = arg + 2;
    const char *eq = strchr(name, '=');
    size_t nlen = eq ? (size_t)(eq - name) : strlen(name);
    char what[256];
    snprintf(what, sizeof what, "--%.*s", (int)(nlen < 200 ? nlen : 200), name);
    int s = 0;
    /* Exact only: "--nP 2" or "--JSON f" must be refused, not quietly taken for --np or --json (a typo in
     * a job script would otherwise change what runs; getopt, IOR and fio match long options exactly). */
    const struct iol_option *o = nlen ? find_long(sets, nsets, name, nlen, 0, &s) : NULL;
    if (o == NULL) {
        char spelled[128];
        const struct iol_option *near = nlen ? find_long(sets, nsets, name, nlen, 1, &s) : NULL;
        if (near != NULL)
            return iol_err_set(err, IOL_ERR_USAGE, "unknown option '%s' (options are case-sensitive: did you mean "
                               "'--%s'?)", what, option_spelled(near, name, nlen, spelled, sizeof spelled));
        return iol_err_set(err, IOL_ERR_USAGE, "unknown option '%s'", what);
    }
    const char *value;
    if (eq == NULL && o->type == IOL_OPT_COUNT) {
        (*(int *)((char *)sets[s].cfg + o->offset))++;
        return 0;
    }
    if (eq != NULL)
        value = eq + 1;
    else if (o->type == IOL_OPT_FLAG)
        value = "1";
    else if (next_value(sets, nsets, argc, argv, i, what, &value, err) != 0)
        return -1;
    return set_value(sets, nsets, o, sets[s].cfg, value, what, true, err);
}

/* "-Fw" sets two flags; "-t1m" and "-t 1m" give -t a value; "-Ft1m" does both. */
static int parse_short(const struct iol_optset *sets, int nsets, int argc, char **argv, int *i,
                       struct iol_err *err)
{
    const char *arg = argv[*i];
    for (const char *c = arg + 1; *c != '\0'; c++) {
        char what[3] = { '-', *c, '\0' };
        int s = 0;
        const struct iol_option *o = find_short(sets, nsets, *c, &s);
        if (o == NULL)
            return iol_err_set(err, IOL_ERR_USAGE, "unknown option '%s'", what);
        if (o->type == IOL_OPT_FLAG) {
            if (set_value(sets, nsets, o, sets[s].cfg, "1", what, true, err) != 0)
                return -1;
            continue;
        }
        if (o->type == IOL_OPT_COUNT) {
            (*(int *)((char *)sets[s].cfg + o->offset))++;
            continue;
        }
        const char *value;
        if (c[1] == '=' && c[2] != '\0')   /* "-t=4096", as IOR accepts (and the IO500 app writes) */
            value = c + 2;
        else if (c[1] != '\0')
            value = c + 1;
        else if (next_value(sets, nsets, argc, argv, i, what, &value, err) != 0)
            return -1;
        return set_value(sets, nsets, o, sets[s].cfg, value, what, true, err);
    }
    return 0;
}

int iol_opts_parse_argv(const struct iol_optset *sets, int nsets, int argc, char **argv,
                        char **positional, int *npositional, struct iol_err *err)
{
    int npos = 0;
    bool options_done = false;
    int rc = 0;
    for (int i = 0; i < argc && rc == 0; i++) {
        const char *arg = argv[i];
        if (!options_done && strcmp(arg, "--") == 0) {
            options_done = true;
        } else if (!options_done && arg[0] == '-' && arg[1] == '-') {
            rc = parse_long(sets, nsets, argc, argv, &i, err);
        } else if (!options_done && arg[0] == '-' && arg[1] != '\0') {
            rc = parse_short(sets, nsets, argc, argv, &i, err);
        } else if (positional == NULL) {
            rc = iol_err_set(err, IOL_ERR_USAGE, "unexpected argument '%s'", arg);
        } else {
            positional[npos++] = argv[i];   /* "-" alone is an argument (stdin), as usual */
        }
    }
    if (npositional)
        *npositional = npos;
    return rc;
}

/* ---- help and JSON echo ------------------------------------------------------------------------------- */

/* "262144" -> "256k": defaults are shown the way a user would type them. */
static void compact_size(uint64_t v, char *buf, size_t len)
{
    static const char suffix[] = "kmgtp";
    int k = -1;
    while (v != 0 && k < 4 && v % 1024 == 0) {
        v /= 1024;
        k++;
    }
    if (k < 0)
        snprintf(buf, len, "%" PRIu64, v);
    else
        snprintf(buf, len, "%" PRIu64 "%c", v, suffix[k]);
}

static const char *metavar(enum iol_opt_type t)
{
    switch (t) {
    case IOL_OPT_FLAG: return "";
    case IOL_OPT_COUNT: return "";
    case IOL_OPT_INT: return "=N";
    case IOL_OPT_SIZE: return "=SIZE";
    case IOL_OPT_DOUBLE: return "=X";
    case IOL_OPT_STRING: return "=STR";
    case IOL_OPT_DIRECTIVES: return "=K=V,...";
    }
    return "";
}

static void describe_default(const struct iol_option *o, char *buf, size_t len)
{
    buf[0] = '\0';
    if (o->defval == NULL || o->defval[0] == '\0' || o->type == IOL_OPT_DIRECTIVES)
        return;
    /* The help text says the default itself (it depends on other options), or the default is a sentinel
     * below the bounds meaning "not given": printing it would only confuse. */
    if (o->help && strstr(o->help, "(default"))
        return;
    int64_t iv = 0;
    if (o->type == IOL_OPT_INT && (o->min != 0 || o->max != 0) && iol_parse_int(o->defval, &iv, "", NULL) == 0 &&
        (double)iv < o->min)
        return;
    int b = 0;
    uint64_t size = 0;
    if (o->type == IOL_OPT_FLAG || o->type == IOL_OPT_COUNT) {
        if (iol_parse_bool(o->defval, &b, "", NULL) == 0 && b)
            snprintf(buf, len, " (default on)");
        return;
    }
    if (o->type == IOL_OPT_SIZE && iol_parse_size(o->defval, &size, "", NULL) == 0) {
        char tmp[32];
        compact_size(size, tmp, sizeof tmp);
        snprintf(buf, len, " (default %s)", tmp);
        return;
    }
    snprintf(buf, len, " (default %s)", o->defval);
}

#define HELP_COLUMN 32   /* help text starts here; longer option names put it on the next line */

void iol_opts_help(const struct iol_optset *sets, int nsets, FILE *fp)
{
    for (int s = 0; s < nsets; s++) {
        for (const struct iol_option *o = sets[s].table; o->name != NULL; o++) {
            char left[256], def[128];
            if (o->short_name)
                snprintf(left, sizeof left, "  -%c, --%s%s", o->short_name, o->name, metavar(o->type));
            else
                snprintf(left, sizeof left, "      --%s%s", o->name, metavar(o->type));
            describe_default(o, def, sizeof def);
            int n = (int)strlen(left);
            if (n + 2 > HELP_COLUMN)
                fprintf(fp, "%s\n%*s", left, HELP_COLUMN, "");
            else
                fprintf(fp, "%-*s", HELP_COLUMN, left);
            fprintf(fp, "%s%s\n", o->help ? o->help : "", def);
        }
    }
}

void iol_opts_json(const struct iol_optset *sets, int nsets, struct iol_json *j)
{
    for (int s = 0; s < nsets; s++) {
        for (const struct iol_option *o = sets[s].table; o->name != NULL; o++) {
            const char *field = (const char *)sets[s].cfg + o->offset;
            switch (o->type) {
            case IOL_OPT_FLAG: iol_json_kv_bool(j, o->name, *(const int *)field != 0); break;
            case IOL_OPT_COUNT: iol_json_kv_int(j, o->name, *(const int *)field); break;
            case IOL_OPT_INT: iol_json_kv_int(j, o->name, *(const int64_t *)field); break;
            case IOL_OPT_SIZE: iol_json_kv_uint(j, o->name, *(const uint64_t *)field); break;
            case IOL_OPT_DOUBLE: iol_json_kv_double(j, o->name, *(const double *)field); break;
            case IOL_OPT_STRING: iol_json_kv_string(j, o->name, field); break;
            case IOL_OPT_DIRECTIVES: break;
            }
        }
    }
}

/* ---- formatting ---------------------------------------------------------------------------------------- */

/* As IOR prints sizes: exact multiples in their unit ("2 MiB"), others with two decimals from MiB up
 * ("1.50 GiB"), and below that in bytes ("47008 bytes", IO500's ior-hard transfer size). */
void iol_format_size(uint64_t bytes, char *buf, size_t len)
{
    static const char *const units[] = { "KiB", "MiB", "GiB", "TiB", "PiB", "EiB" };
    if (bytes < 1024) {
        snprintf(buf, len, "%" PRIu64 " bytes", bytes);
        return;
    }
    int k = 0;
    while (k < 5 && bytes >> (10 * (k + 2)) != 0)
        k++;
    uint64_t unit = (uint64_t)1 << (10 * (k + 1));
    if (bytes % unit == 0)
        snprintf(buf, len, "%" PRIu64 " %s", bytes / unit, units[k]);
    else if (k >= 1)
        snprintf(buf, len, "%.2f %s", (double)bytes / (double)unit, units[k]);
    else
        snprintf(buf, len, "%" PRIu64 " bytes", bytes);
}
