/* mpi_hints.c — MPI hints as IOR takes them (see mpi_hints.h). */
#define _GNU_SOURCE
#include "mpi_hints.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

extern char **environ;

/* The layers IOR knows: both end up in the MPI_Info under the bare key. */
static const char *const prefixes[] = {"IOR_HINT__MPI__", "IOR_HINT__GPFS__"};

int iol_hints_set(struct iol_hints *h, const char *key, const char *value, const char *where, struct iol_err *err)
{
    if (strlen(key) >= IOL_HINT_KEY_MAX)
        return iol_err_set(err, IOL_ERR_USAGE, "%s: hint name longer than %d characters", where, IOL_HINT_KEY_MAX - 1);
    if (strlen(value) >= IOL_HINT_VAL_MAX)
        return iol_err_set(err, IOL_ERR_USAGE, "%s: value of hint %s longer than %d characters", where, key,
                           IOL_HINT_VAL_MAX - 1);
    for (int i = 0; i < h->n; i++)
        if (strcmp(h->v[i].key, key) == 0) {
            snprintf(h->v[i].value, sizeof h->v[i].value, "%s", value);
            return 0;
        }
    if (h->n == h->cap) {
        int cap = h->cap ? h->cap * 2 : 16;
        struct iol_hint *v = realloc(h->v, (size_t)cap * sizeof *v);
        if (!v) return iol_err_errno(err, IOL_ERR_RUNTIME, ENOMEM, "%s: hints", where);
        h->v = v;
        h->cap = cap;
    }
    snprintf(h->v[h->n].key, sizeof h->v[h->n].key, "%s", key);
    snprintf(h->v[h->n].value, sizeof h->v[h->n].value, "%s", value);
    h->n++;
    return 0;
}

const char *iol_hints_get(const struct iol_hints *h, const char *key)
{
    for (int i = 0; i < h->n; i++)
        if (strcmp(h->v[i].key, key) == 0) return h->v[i].value;
    return NULL;
}

void iol_hints_free(struct iol_hints *h)
{
    free(h->v);
    h->v = NULL;
    h->n = h->cap = 0;
}

/* One "IOR_HINT__<layer>__key=value" (or "key = value") text: key up to a space or '=', then spaces and
 * '=', then the value up to a space, as IOR splits it; anything after the value is refused instead of being
 * dropped as IOR drops it. `where` names the line or variable. */
static int parse_hint(struct iol_hints *h, char *text, const char *where, struct iol_err *err)
{
    const char *prefix = NULL;
    for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++)
        if (strncmp(text, prefixes[i], strlen(prefixes[i])) == 0) prefix = prefixes[i];
    if (!prefix)
        return iol_err_set(err, IOL_ERR_USAGE, "%s: '%s' is not IOR_HINT__MPI__<hint>=<value> (IOR reads only "
                           "the MPI and GPFS layers)", where, text);
    char *key = text + strlen(prefix), *p = key;
    while (*p && *p != '=' && !isspace((unsigned char)*p)) p++;
    char *key_end = p;
    while (*p == '=' || isspace((unsigned char)*p)) p++;
    char *value = p;
    while (*p && !isspace((unsigned char)*p)) p++;
    char *value_end = p;
    while (isspace((unsigned char)*p)) p++;
    if (key_end == key) return iol_err_set(err, IOL_ERR_USAGE, "%s: '%s' names no hint after %s", where, text, prefix);
    if (value_end == value)
        return iol_err_set(err, IOL_ERR_USAGE, "%s: hint %.*s has no value (write %.*s=VALUE)", where,
                           (int)(key_end - key), key, (int)(key_end - text), text);
    if (*p)
        return iol_err_set(err, IOL_ERR_USAGE, "%s: hint %.*s: more than one value ('%s')", where,
                           (int)(key_end - key), key, value);
    *key_end = '\0';
    *value_end = '\0';
    return iol_hints_set(h, key, value, where, err);
}

static int read_env(struct iol_hints *h, struct iol_err *err)
{
    char where[IOL_HINT_KEY_MAX + 64];
    for (char **e = environ; e && *e; e++) {
        if (strncmp(*e, "IOR_HINT", 8) != 0) continue;
        char *copy = strdup(*e);
        if (!copy) return iol_err_errno(err, IOL_ERR_RUNTIME, ENOMEM, "hints of the environment");
        const char *eq = strchr(*e, '=');
        snprintf(where, sizeof where, "environment variable %.*s", eq ? (int)(eq - *e) : (int)strlen(*e), *e);
        int rc = parse_hint(h, copy, where, err);
        free(copy);
        if (rc) return -1;
    }
    return 0;
}

static int read_file(const char *path, struct iol_hints *h, struct iol_err *err)
{
    FILE *fp = fopen(path, "r");
    if (!fp) return iol_err_errno(err, IOL_ERR_USAGE, errno, "-U: cannot read the hints file %s", path);
    char line[IOL_HINT_KEY_MAX + IOL_HINT_VAL_MAX + 64], where[IOL_HINT_KEY_MAX + 4200];
    int rc = 0;
    for (long no = 1; rc == 0 && fgets(line, sizeof line, fp); no++) {
        size_t len = strlen(line);
        snprintf(where, sizeof where, "-U %s:%ld", path, no);
        if (len == sizeof line - 1 && line[len - 1] != '\n' && !feof(fp)) {
            rc = iol_err_set(err, IOL_ERR_USAGE, "%s: line longer than %zu characters", where, sizeof line - 2);
            break;
        }
        char *s = line;
        while (isspace((unsigned char)*s)) s++;
        char *end = s + strlen(s);
        while (end > s && isspace((unsigned char)end[-1])) *--end = '\0';
        if (*s == '\0' || *s == '#') continue;
        rc = parse_hint(h, s, where, err);
    }
    if (rc == 0 && ferror(fp)) rc = iol_err_errno(err, IOL_ERR_USAGE, errno, "-U: cannot read the hints file %s", path);
    fclose(fp);
    return rc;
}

int iol_hints_collect(const char *hints_file, struct iol_hints *h, struct iol_err *err)
{
    if (read_env(h, err)) return -1;
    if (hints_file && hints_file[0] && read_file(hints_file, h, err)) return -1;
    return 0;
}

void iol_hints_print(FILE *fp, const char *title, const struct iol_hints *h)
{
    fprintf(fp, "\n%s {\n", title);
    for (int i = 0; i < h->n; i++) fprintf(fp, "\t%s = %s\n", h->v[i].key, h->v[i].value);
    fprintf(fp, "}\n");
}

void iol_hints_json(struct iol_json *j, const char *key, const struct iol_hints *h)
{
    iol_json_key(j, key);
    iol_json_begin_object(j);
    for (int i = 0; i < h->n; i++) iol_json_kv_string(j, h->v[i].key, h->v[i].value);
    iol_json_end_object(j);
}

#if IOLENS_HAVE_MPI
int iol_mpi_err(struct iol_err *err, int rc, const char *what, const char *path)
{
    char text[MPI_MAX_ERROR_STRING];
    int len = 0;
    if (MPI_Error_string(rc, text, &len) != MPI_SUCCESS) snprintf(text, sizeof text, "MPI error %d", rc);
    return iol_err_set(err, IOL_ERR_RUNTIME, "%s%s%s: %s", what, path ? " " : "", path ? path : "", text);
}

int iol_hints_to_info(const struct iol_hints *h, MPI_Info *info, struct iol_err *err)
{
    int rc = MPI_Info_create(info);
    if (rc != MPI_SUCCESS) {
        *info = MPI_INFO_NULL;
        return iol_mpi_err(err, rc, "MPI_Info_create", NULL);
    }
    for (int i = 0; i < h->n; i++) {
        rc = MPI_Info_set(*info, h->v[i].key, h->v[i].value);
        if (rc != MPI_SUCCESS) {
            MPI_Info_free(info);
            char what[IOL_HINT_KEY_MAX + 64];
            snprintf(what, sizeof what, "MPI_Info_set of hint %s", h->v[i].key);
            return iol_mpi_err(err, rc, what, NULL);
        }
    }
    return 0;
}

int iol_hints_from_info(MPI_Info info, struct iol_hints *h, struct iol_err *err)
{
    h->n = 0;
    int nkeys = 0;
    if (info == MPI_INFO_NULL) return 0;
    int rc = MPI_Info_get_nkeys(info, &nkeys);
    if (rc != MPI_SUCCESS) return iol_mpi_err(err, rc, "MPI_Info_get_nkeys", NULL);
    for (int i = 0; i < nkeys; i++) {
        char key[MPI_MAX_INFO_KEY + 1], value[MPI_MAX_INFO_VAL + 1];
        int flag = 0;
        if ((rc = MPI_Info_get_nthkey(info, i, key)) != MPI_SUCCESS) return iol_mpi_err(err, rc, "MPI_Info_get_nthkey", NULL);
        if ((rc = MPI_Info_get(info, key, MPI_MAX_INFO_VAL, value, &flag)) != MPI_SUCCESS)
            return iol_mpi_err(err, rc, "MPI_Info_get", key);
        if (flag && iol_hints_set(h, key, value, "MPI_File_get_info", err)) return -1;
    }
    return 0;
}
#endif
