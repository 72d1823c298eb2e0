/* fio_jobfile.c — reads fio job descriptions: job files ([global] and job sections, ';'/'#' comment lines,
 * `include FILE`, ${VAR} from the environment) and fio's command line (--key=value; options before the first
 * --name apply to every job, each --name starts a job). Every key goes through the job option table, so an
 * option iolens does not know is an error that names it and where it was written. */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fio.h"

#define INCLUDE_DEPTH_MAX 16

/* A name from a job file as a message shows it: a byte that is not printable ASCII as \xHH (a job file may
 * hold anything, and the message goes to a terminal), cut to fit. */
static const char *shown(const char *in, char *out, size_t cap)
{
    size_t o = 0;
    for (const unsigned char *p = (const unsigned char *)in; *p && o + 5 < cap; p++) {
        if (*p >= 0x20 && *p < 0x7f) out[o++] = (char)*p;
        else o += (size_t)snprintf(out + o, cap - o, "\\x%02x", *p);
    }
    out[o] = '\0';
    return out;
}

static int set_job_option(struct fio_job_opts *job, const char *key, const char *value, const char *where,
                          struct iol_err *err)
{
    struct iol_optset set = {fio_job_options, job};
    char name[128];
    if (!iol_opts_find(&set, 1, key, NULL))
        return iol_err_set(err, IOL_ERR_USAGE, "%s: '%s' is not a fio option iolens supports (see 'iolens fio --help')",
                           where, shown(key, name, sizeof name));
    /* No option takes a control character (a tab aside); refused here, the value is never echoed raw. */
    for (const unsigned char *p = (const unsigned char *)value; p && *p; p++)
        if ((*p < 0x20 && *p != '\t') || *p == 0x7f)
            return iol_err_set(err, IOL_ERR_USAGE, "%s: %s: a control character (\\x%02x) in the value", where, key,
                               *p);
    return iol_opts_set(&set, 1, key, value, where, err);
}

static int job_defaults(struct fio_job_opts *job, struct iol_err *err)
{
    struct iol_optset set = {fio_job_options, job};
    return iol_opts_defaults(&set, 1, err);
}

static struct fio_job_opts *new_job(struct fio_cfg *cfg, const struct fio_job_opts *base, const char *name,
                                    const char *where, struct iol_err *err)
{
    if (cfg->njobs >= FIO_MAX_JOBS) {
        iol_err_set(err, IOL_ERR_USAGE, "%s: more than %d jobs", where, FIO_MAX_JOBS);
        return NULL;
    }
    if (strlen(name) >= FIO_NAME_MAX || !*name) {
        iol_err_set(err, IOL_ERR_USAGE, "%s: a job name must have 1 to %d characters", where, FIO_NAME_MAX - 1);
        return NULL;
    }
    /* Messages and the report name the job: a control character would reach the terminal raw. */
    for (const unsigned char *p = (const unsigned char *)name; *p; p++)
        if (*p < 0x20 || *p == 0x7f) {
            iol_err_set(err, IOL_ERR_USAGE, "%s: a control character (\\x%02x) in the job name", where, *p);
            return NULL;
        }
    struct fio_job_opts *job = &cfg->jobs[cfg->njobs++];
    *job = *base;
    snprintf(job->name, sizeof job->name, "%s", name);
    return job;
}

/* ${VAR} → the environment's value; an unset variable is an error (a silent empty value would change the job). */
static int expand_env(const char *in, char *out, size_t cap, const char *where, struct iol_err *err)
{
    size_t o = 0;
    for (const char *p = in; *p;) {
        if (p[0] == '$' && p[1] == '{') {
            const char *end = strchr(p + 2, '}');
            if (!end) return iol_err_set(err, IOL_ERR_USAGE, "%s: '${' without a closing '}'", where);
            char var[256];
            size_t n = (size_t)(end - p - 2);
            if (n == 0 || n >= sizeof var) return iol_err_set(err, IOL_ERR_USAGE, "%s: bad variable name", where);
            memcpy(var, p + 2, n);
            var[n] = '\0';
            const char *val = getenv(var);
            if (!val) return iol_err_set(err, IOL_ERR_USAGE, "%s: environment variable %s is not set", where, var);
            size_t vl = strlen(val);
            if (o + vl >= cap) return iol_err_set(err, IOL_ERR_USAGE, "%s: line too long after expansion", where);
            memcpy(out + o, val, vl);
            o += vl;
            p = end + 1;
        } else {
            if (o + 1 >= cap) return iol_err_set(err, IOL_ERR_USAGE, "%s: line too long", where);
            out[o++] = *p++;
        }
    }
    out[o] = '\0';
    return 0;
}

static char *trim(char *s)
{
    while (isspace((unsigned char)*s)) s++;
    size_t n = strlen(s);
    while (n && isspace((unsigned char)s[n - 1])) s[--n] = '\0';
    return s;
}

/* Parsing state of one file (and the files it includes): the [global] options so far and the current job. */
struct file_state {
    struct fio_job_opts global;
    struct fio_job_opts *cur;   /* NULL = [global] or before any section */
    int in_section;
};

static int read_file(struct fio_cfg *cfg, struct file_state *st, const char *path, int depth, struct iol_err *err);

static int handle_line(struct fio_cfg *cfg, struct file_state *st, const char *path, int lineno, char *line,
                       int depth, struct iol_err *err)
{
    char where[IOL_STR_MAX + 32];
    snprintf(where, sizeof where, "%s:%d", path, lineno);
    char *s = trim(line);
    if (!*s || *s == ';' || *s == '#') return 0;
    if (*s == '[') {
        char *end = strchr(s, ']');
        if (!end || trim(end + 1)[0]) return iol_err_set(err, IOL_ERR_USAGE, "%s: a section header is [name]", where);
        *end = '\0';
        char *name = trim(s + 1);
        st->in_section = 1;
        if (!strcmp(name, "global")) {
            st->cur = NULL;
            return 0;
        }
        st->cur = new_job(cfg, &st->global, name, where, err);
        return st->cur ? 0 : -1;
    }
    if (!strncmp(s, "include", 7) && isspace((unsigned char)s[7])) {
        char target[IOL_STR_MAX];
        if (expand_env(trim(s + 7), target, sizeof target, where, err)) return -1;
        char full[2 * IOL_STR_MAX];
        if (target[0] == '/') {
            snprintf(full, sizeof full, "%s", target);
        } else {   /* relative to the including file, as fio does */
            char dir[IOL_STR_MAX];
            snprintf(dir, sizeof dir, "%s", path);
            snprintf(full, sizeof full, "%s/%s", dirname(dir), target);
        }
        if (depth >= INCLUDE_DEPTH_MAX)
            return iol_err_set(err, IOL_ERR_USAGE, "%s: includes nested deeper than %d (a loop?)", where, INCLUDE_DEPTH_MAX);
        return read_file(cfg, st, full, depth + 1, err);
    }
    if (!st->in_section)
        return iol_err_set(err, IOL_ERR_USAGE, "%s: option outside a section (start with [global] or [jobname])", where);
    char expanded[IOL_STR_MAX];
    if (expand_env(s, expanded, sizeof expanded, where, err)) return -1;
    char *eq = strchr(expanded, '=');
    const char *value = NULL;
    if (eq) {
        *eq = '\0';
        value = trim(eq + 1);
    }
    char *key = trim(expanded);
    if (!*key) return iol_err_set(err, IOL_ERR_USAGE, "%s: '=' without an option name", where);
    if (!strcmp(key, "name")) return iol_err_set(err, IOL_ERR_USAGE, "%s: a job's name is its section name", where);
    return set_job_option(st->cur ? st->cur : &st->global, key, value, where, err);
}

/* The longest line a job file may have. Lines are read into a buffer of this size, never grown: a file that is
 * not a job file (an include of /dev/zero, a pipe that never sends a newline) is refused at its first line
 * instead of being read into memory until memory runs out. */
#define JOBFILE_LINE_MAX 65536

enum { LINE_END = 0, LINE_OK = 1, LINE_NUL = -1, LINE_LONG = -2 };

/* One line of fp into buf (its '\n' left out; the last line may lack one). */
static int read_line(FILE *fp, char *buf, size_t cap)
{
    size_t n = 0;
    int c;
    while ((c = getc(fp)) != EOF && c != '\n') {
        if (c == '\0') return LINE_NUL;
        if (n + 1 >= cap) return LINE_LONG;
        buf[n++] = (char)c;
    }
    buf[n] = '\0';
    return c == EOF && n == 0 ? LINE_END : LINE_OK;
}

static int read_file(struct fio_cfg *cfg, struct file_state *st, const char *path, int depth, struct iol_err *err)
{
    FILE *fp = fopen(path, "r");
    if (!fp) return iol_err_errno(err, IOL_ERR_USAGE, errno, "job file %s", path);
    char *line = malloc(JOBFILE_LINE_MAX);
    if (!line) {
        fclose(fp);
        return iol_err_set(err, IOL_ERR_RUNTIME, "out of memory");
    }
    int lineno = 0, rc = 0, got;
    while (rc == 0 && (got = read_line(fp, line, JOBFILE_LINE_MAX)) != LINE_END) {
        lineno++;
        if (got == LINE_NUL)
            rc = iol_err_set(err, IOL_ERR_USAGE, "%s:%d: a NUL byte (not a job file?)", path, lineno);
        else if (got == LINE_LONG)
            rc = iol_err_set(err, IOL_ERR_USAGE, "%s:%d: a line longer than %d bytes (not a job file?)", path,
                             lineno, JOBFILE_LINE_MAX - 1);
        else
            rc = handle_line(cfg, st, path, lineno, line, depth, err);
    }
    if (rc == 0 && ferror(fp)) rc = iol_err_errno(err, IOL_ERR_USAGE, errno, "reading job file %s", path);
    free(line);
    fclose(fp);
    return rc;
}

/* A job file starts from the command line's global options; its [global] sections add to them. */
static int read_jobfile(struct fio_cfg *cfg, const struct fio_job_opts *base, const char *path, struct iol_err *err)
{
    struct file_state *st = calloc(1, sizeof *st);
    if (!st) return iol_err_set(err, IOL_ERR_RUNTIME, "out of memory");
    st->global = *base;
    int before = cfg->njobs;
    int rc = read_file(cfg, st, path, 0, err);
    if (rc == 0 && cfg->njobs == before) rc = iol_err_set(err, IOL_ERR_USAGE, "job file %s defines no job", path);
    free(st);
    size_t used = strlen(cfg->jobfiles);
    if (used + strlen(path) + 2 < sizeof cfg->jobfiles)
        snprintf(cfg->jobfiles + used, sizeof cfg->jobfiles - used, "%s%s", used ? " " : "", path);
    return rc;
}

/* "--key=value" / "--key" → key and value (NULL when absent); 0 if arg is not a long option. */
static int split_long(char *arg, char **key, char **value)
{
    if (strncmp(arg, "--", 2) || !arg[2]) return 0;
    *key = arg + 2;
    char *eq = strchr(*key, '=');
    *value = NULL;
    if (eq) {
        *eq = '\0';
        *value = eq + 1;
    }
    return 1;
}

int fio_parse_argv(const struct iol_optset *sets, int nsets, int argc, char **argv, struct iol_err *err)
{
    struct fio_cfg *cfg = sets[0].cfg;
    struct fio_job_opts *base = &cfg->base;
    char **copy = calloc((size_t)argc + 1, sizeof *copy);
    int *is_file = calloc((size_t)argc + 1, sizeof *is_file);
    int rc = 0;
    if (!copy || !is_file) {
        rc = iol_err_set(err, IOL_ERR_RUNTIME, "out of memory");
        goto out;
    }
    cfg->njobs = 0;
    cfg->client_index = 0;
    cfg->jobfiles[0] = '\0';
    if (job_defaults(base, err)) {
        rc = -1;
        goto out;
    }
    /* Pass 1: the engine's options, the global fio options (before the first --name), the job files. */
    int first_name = argc;
    for (int i = 0; i < argc && rc == 0; i++) {
        copy[i] = strdup(argv[i]);
        if (!copy[i]) {
            rc = iol_err_set(err, IOL_ERR_RUNTIME, "out of memory");
            break;
        }
        char *key, *value;
        if (!split_long(copy[i], &key, &value)) {
            if (argv[i][0] == '-' && argv[i][1])
                rc = iol_err_set(err, IOL_ERR_USAGE, "%s: fio options are written --name=value", argv[i]);
            else
                is_file[i] = 1;
            continue;
        }
        if (!strcmp(key, "client-index")) {   /* the front end's, for one client of a multi-client run */
            char *end = NULL;
            long k = value ? strtol(value, &end, 10) : -1;
            if (!value || !*value || *end || k < 0 || k > 1000000)
                rc = iol_err_set(err, IOL_ERR_USAGE, "--client-index: expected a number from 0, got '%s'",
                                 value ? value : "");
            cfg->client_index = (int)k;
            copy[i][0] = '\0';
            continue;
        }
        const struct iol_option *eo = iol_opts_find(sets + 1, nsets - 1, key, NULL);
        if (eo) {   /* an engine option: --np 2 and --np=2 both work */
            char where[300];
            snprintf(where, sizeof where, "--%s", key);
            copy[i][0] = '\0';   /* consumed */
            if (!value && eo->type != IOL_OPT_FLAG && eo->type != IOL_OPT_COUNT) {
                if (i + 1 >= argc) {
                    rc = iol_err_set(err, IOL_ERR_USAGE, "%s: missing value", where);
                    break;
                }
                value = argv[++i];
                copy[i] = strdup("");
            }
            rc = iol_opts_set(sets + 1, nsets - 1, eo->name, value, where, err);
            continue;
        }
        if (!strcmp(key, "name") && first_name == argc) first_name = i;
        if (i < first_name) {
            char where[300];
            snprintf(where, sizeof where, "--%s", key);
            rc = set_job_option(base, key, value, where, err);
            copy[i][0] = '\0';
        }
    }
    /* Pass 2: job files in order, then the command line's own jobs. */
    for (int i = 0; i < argc && rc == 0; i++)
        if (is_file[i]) rc = read_jobfile(cfg, base, argv[i], err);
    struct fio_job_opts *cur = NULL;
    for (int i = first_name; i < argc && rc == 0; i++) {
        char *key, *value;
        if (is_file[i] || !copy[i] || !copy[i][0]) continue;
        free(copy[i]);   /* pass 1 cut it at the '=' */
        if (!(copy[i] = strdup(argv[i]))) {
            rc = iol_err_set(err, IOL_ERR_RUNTIME, "out of memory");
            break;
        }
        if (!split_long(copy[i], &key, &value)) continue;
        char where[300];
        snprintf(where, sizeof where, "--%s", key);
        if (!strcmp(key, "name")) {
            cur = new_job(cfg, base, value ? value : "", where, err);
            if (!cur) rc = -1;
        } else {
            rc = set_job_option(cur, key, value, where, err);
        }
    }
    if (rc == 0 && cfg->njobs == 0)
        rc = iol_err_set(err, IOL_ERR_USAGE, "no job: give a job file or --name=NAME with the job's options");
out:
    if (copy)
        for (int i = 0; i < argc; i++) free(copy[i]);
    free(copy);
    free(is_file);
    return rc;
}
