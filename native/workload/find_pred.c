/* find_pred.c — find's predicates as data: the command-line spelling, -size and -newer as find defines
 * them, and the checks of the input before any rank starts walking. */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "find.h"

static const char *const predicate_names[] = {"-newer", "-size", "-name"};
#define NPREDICATES (sizeof predicate_names / sizeof predicate_names[0])

int find_argv_normalize(const struct iol_optset *sets, int nsets, int argc, char **argv, struct iol_err *err)
{
    /* The long forms are the table's own names: "-newer" becomes "--newer". String literals are safe here:
     * the options parser only reads argv. */
    static const char *const long_names[] = {"--newer", "--size", "--name"};
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--") == 0) return 0;
        int pred = -1;
        for (size_t k = 0; k < NPREDICATES; k++) {
            if (strcmp(a, predicate_names[k]) == 0 || strcmp(a, long_names[k]) == 0) pred = (int)k;
        }
        if (pred >= 0) {
            if (i + 1 >= argc) return iol_err_set(err, IOL_ERR_USAGE, "%s: missing value", predicate_names[pred]);
            if (argv[i + 1][0] == '\0')
                return iol_err_set(err, IOL_ERR_USAGE, "%s: empty value", predicate_names[pred]);
            argv[i] = (char *)long_names[pred];
            i++;   /* the value goes through untouched, even if it starts with '-' */
            continue;
        }
        if (a[0] == '-' && a[1] == '-') {
            /* An engine option that takes a value: skip the value, so "--matches -name" stays a file name. */
            const char *name = a + 2;
            if (strchr(name, '=') != NULL) continue;
            int s = 0;
            const struct iol_option *o = iol_opts_find(sets, nsets, name, &s);
            if (o != NULL && o->type != IOL_OPT_FLAG) i++;
            continue;
        }
        /* The find workload has no one-letter options: a one-dash word is a find expression we lack. */
        if (a[0] == '-' && a[1] != '\0')
            return iol_err_set(err, IOL_ERR_USAGE,
                               "unknown option '%s' (find predicates supported: -newer FILE, -size N[c], -name GLOB)",
                               a);
    }
    return 0;
}

int find_size_parse(const char *s, struct find_size *out, struct iol_err *err)
{
    static const char hint[] = "use [+|-]N with an optional unit b, c, w, k, M or G, e.g. 3901c";
    const char *p = s;
    struct find_size v = {0, 0, 512};
    if (*p == '+' || *p == '-') v.cmp = *p++ == '+' ? 1 : -1;
    if (!isdigit((unsigned char)*p)) return iol_err_set(err, IOL_ERR_USAGE, "-size: '%s' is not a size (%s)", s, hint);
    for (; isdigit((unsigned char)*p); p++) {
        unsigned d = (unsigned)(*p - '0');
        if (v.n > (UINT64_MAX - d) / 10) return iol_err_set(err, IOL_ERR_USAGE, "-size: '%s' is too large", s);
        v.n = v.n * 10 + d;
    }
    if (*p != '\0' && !isalpha((unsigned char)*p))
        return iol_err_set(err, IOL_ERR_USAGE, "-size: '%s' is not a size (%s; no fractions)", s, hint);
    if (*p != '\0') {
        /* find's units, case as find has them: k is KiB, M MiB, G GiB; b (512-byte blocks) is the default. */
        switch (*p) {
        case 'b': v.unit = 512; break;
        case 'c': v.unit = 1; break;
        case 'w': v.unit = 2; break;
        case 'k': v.unit = 1024; break;
        case 'M': v.unit = 1024 * 1024; break;
        case 'G': v.unit = 1024 * 1024 * 1024; break;
        default: return iol_err_set(err, IOL_ERR_USAGE, "-size: '%s' has an unknown unit '%c' (%s)", s, *p, hint);
        }
        if (p[1] != '\0') return iol_err_set(err, IOL_ERR_USAGE, "-size: '%s' is not a size (%s)", s, hint);
    }
    *out = v;
    return 0;
}

int find_size_match(const struct find_size *p, uint64_t bytes)
{
    /* find rounds the size up to whole units, so "-size -1M" matches only empty files: kept for fidelity. */
    uint64_t units = bytes / p->unit + (bytes % p->unit != 0);
    if (p->cmp > 0) return units > p->n;
    if (p->cmp < 0) return units < p->n;
    return units == p->n;
}

int find_newer_match(const struct find_preds *p, int64_t sec, int64_t nsec)
{
    return sec > p->newer_sec || (sec == p->newer_sec && nsec > p->newer_nsec);
}

int find_join(char *out, size_t len, const char *rel, const char *name)
{
    int n = rel[0] ? snprintf(out, len, "%s/%s", rel, name) : snprintf(out, len, "%s", name);
    return n < 0 || (size_t)n >= len ? -1 : n;
}

/* 1 if `inner` is `outer` or lies below it (both canonical paths). */
static int path_within(const char *outer, const char *inner)
{
    size_t n = strlen(outer);
    if (strncmp(outer, inner, n) != 0) return 0;
    return inner[n] == '\0' || inner[n] == '/' || (n == 1 && outer[0] == '/');
}

static int check_matches_file(const struct find_cfg *cfg, struct iol_err *err)
{
    char dir[IOL_STR_MAX];
    snprintf(dir, sizeof dir, "%s", cfg->matches);
    char *slash = strrchr(dir, '/');
    if (!slash) snprintf(dir, sizeof dir, ".");
    else if (slash == dir) dir[1] = '\0';
    else *slash = '\0';
    struct stat st;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
        return iol_err_set(err, IOL_ERR_USAGE, "--matches: directory '%s' does not exist", dir);
    if (access(dir, W_OK | X_OK) != 0)
        return iol_err_errno(err, IOL_ERR_USAGE, errno, "--matches: cannot write in '%s'", dir);
    if (stat(cfg->matches, &st) == 0 && !S_ISREG(st.st_mode))
        return iol_err_set(err, IOL_ERR_USAGE, "--matches: '%s' exists and is not a regular file", cfg->matches);
    /* find only reads the tree: writing the list (or its per-rank parts) inside DIR would change what is
     * being counted. */
    char rdir[PATH_MAX], rroot[PATH_MAX];
    if (realpath(dir, rdir) && realpath(cfg->root, rroot) && path_within(rroot, rdir))
        return iol_err_set(err, IOL_ERR_USAGE,
                           "--matches: '%s' is inside DIR '%s'; find must not write into the tree it walks",
                           cfg->matches, cfg->root);
    return 0;
}

int find_preds_load(const struct find_cfg *cfg, struct find_preds *preds, struct iol_err *err)
{
    memset(preds, 0, sizeof *preds);
    if (cfg->newer[0]) {
        /* find -P (the default) takes the reference's own time, not its target's, if it is a symbolic link. */
        struct stat st;
        if (lstat(cfg->newer, &st) != 0)
            return iol_err_errno(err, IOL_ERR_USAGE, errno, "-newer: cannot stat '%s'", cfg->newer);
        preds->has_newer = 1;
        preds->newer_sec = (int64_t)st.st_mtim.tv_sec;
        preds->newer_nsec = (int64_t)st.st_mtim.tv_nsec;
    }
    if (cfg->size[0]) {
        if (find_size_parse(cfg->size, &preds->size, err)) return -1;
        preds->has_size = 1;
    }
    preds->has_name = cfg->name[0] != '\0';
    preds->needs_stat = preds->has_newer || preds->has_size;
    return 0;
}

int find_validate(const struct find_cfg *cfg, int nranks, struct iol_err *err)
{
    (void)nranks;   /* any number of ranks can share any tree */
    if (!cfg->root[0])
        return iol_err_set(err, IOL_ERR_USAGE, "DIR: missing (usage: iolens find DIR [-newer FILE] [-size N[c]] [-name GLOB])");
    struct find_size sz;
    if (cfg->size[0] && find_size_parse(cfg->size, &sz, err)) return -1;
    return 0;
}

int find_check_paths(const struct find_cfg *cfg, int nranks, struct iol_err *err)
{
    (void)nranks;
    struct stat st;
    if (stat(cfg->root, &st) != 0) return iol_err_errno(err, IOL_ERR_USAGE, errno, "DIR: cannot use '%s'", cfg->root);
    if (!S_ISDIR(st.st_mode)) return iol_err_set(err, IOL_ERR_USAGE, "DIR: '%s' is not a directory", cfg->root);
    if (access(cfg->root, R_OK | X_OK) != 0)
        return iol_err_errno(err, IOL_ERR_USAGE, errno, "DIR: cannot read '%s'", cfg->root);
    struct find_preds preds;
    if (find_preds_load(cfg, &preds, err)) return -1;
    if (cfg->matches[0] && check_matches_file(cfg, err)) return -1;
    return 0;
}

int find_parse_argv(const struct iol_optset *sets, int nsets, int argc, char **argv, struct iol_err *err)
{
    /* A copy: the document echoes the command line as the user typed it. */
    char **args = calloc((size_t)argc + 1, sizeof *args);
    char **pos = calloc((size_t)argc + 1, sizeof *pos);
    int npos = 0, rc = 0;
    if (!args || !pos) {
        rc = iol_err_set(err, IOL_ERR_RUNTIME, "out of memory");
    } else {
        memcpy(args, argv, (size_t)argc * sizeof *args);
        rc = find_argv_normalize(sets, nsets, argc, args, err);
        if (rc == 0) rc = iol_opts_parse_argv(sets, nsets, argc, args, pos, &npos, err);
    }
    struct find_cfg *cfg = sets[0].cfg;
    if (rc == 0 && npos > 1)
        rc = iol_err_set(err, IOL_ERR_USAGE, "unexpected argument '%s' (find walks one DIR)", pos[1]);
    if (rc == 0 && npos == 1) {
        if (cfg->root[0])
            rc = iol_err_set(err, IOL_ERR_USAGE, "--root: DIR is given twice ('%s' and '%s')", cfg->root, pos[0]);
        else if (strlen(pos[0]) >= sizeof cfg->root)
            rc = iol_err_set(err, IOL_ERR_USAGE, "DIR: path is too long");
        else
            snprintf(cfg->root, sizeof cfg->root, "%s", pos[0]);
    }
    free(args);
    free(pos);
    return rc;
}
