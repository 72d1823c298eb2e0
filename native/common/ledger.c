/* ledger.c — see ledger.h. The file is small (one line per name), so it is read whole and rewritten whole
 * under an exclusive lock. */
#include "ledger.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#define LEDGER_MAX (16 << 20)

static void ledger_path(const char *dir, char *out, size_t len)
{
    snprintf(out, len, "%s/%s", dir, IOL_LEDGER_NAME);
}

/* Reads the whole ledger from fd into a NUL-terminated malloc'd buffer. */
static char *read_all(int fd)
{
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap + 1);
    if (!buf) return NULL;
    for (;;) {
        if (n == cap) {
            if (cap >= LEDGER_MAX) break;
            char *nb = realloc(buf, cap * 2 + 1);
            if (!nb) {
                free(buf);
                return NULL;
            }
            buf = nb;
            cap *= 2;
        }
        ssize_t r = pread(fd, buf + n, cap - n, (off_t)n);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        n += (size_t)r;
    }
    buf[n] = '\0';
    return buf;
}

/* Finds `name` as a whole line; returns a pointer to the line start or NULL. */
static char *find_line(char *text, const char *name)
{
    size_t nlen = strlen(name);
    for (char *p = text; *p;) {
        char *eol = strchr(p, '\n');
        size_t llen = eol ? (size_t)(eol - p) : strlen(p);
        if (llen == nlen && memcmp(p, name, nlen) == 0) return p;
        if (!eol) break;
        p = eol + 1;
    }
    return NULL;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Splits text (in place) into its non-empty lines, sorted. */
static int index_lines(struct iol_ledger_view *v)
{
    size_t cap = 0;
    for (const char *p = v->text; *p; p++) cap += *p == '\n';
    v->lines = malloc((cap + 1) * sizeof *v->lines);
    if (!v->lines) return -1;
    v->n = 0;
    for (char *p = v->text; *p;) {
        char *eol = strchr(p, '\n');
        if (eol) *eol = '\0';
        if (*p) v->lines[v->n++] = p;
        if (!eol) break;
        p = eol + 1;
    }
    qsort(v->lines, v->n, sizeof *v->lines, cmp_str);
    return 0;
}

int iol_ledger_load(const char *dir, struct iol_ledger_view *v, struct iol_err *err)
{
    char path[4200];
    memset(v, 0, sizeof *v);
    ledger_path(dir, path, sizeof path);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    v->text = fd < 0 ? calloc(1, 1) : NULL;
    if (fd >= 0) {
        flock(fd, LOCK_SH);
        v->text = read_all(fd);
        close(fd);
    }
    if (!v->text || index_lines(v)) {
        iol_ledger_view_free(v);
        return iol_err_set(err, IOL_ERR_RUNTIME, "out of memory reading %s", path);
    }
    return 0;
}

int iol_ledger_view_has(const struct iol_ledger_view *v, const char *name)
{
    return v->n && bsearch(&name, v->lines, v->n, sizeof *v->lines, cmp_str) != NULL;
}

void iol_ledger_view_free(struct iol_ledger_view *v)
{
    free(v->lines);
    free(v->text);
    memset(v, 0, sizeof *v);
}

int iol_ledger_owns(const char *dir, const char *name)
{
    char path[4200];
    ledger_path(dir, path, sizeof path);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    flock(fd, LOCK_SH);
    char *text = read_all(fd);
    int owns = text && find_line(text, name) != NULL;
    free(text);
    close(fd);
    return owns;
}

static int write_all(int fd, const char *text, size_t len)
{
    if (ftruncate(fd, 0) != 0) return -1;
    size_t off = 0;
    while (off < len) {
        ssize_t w = pwrite(fd, text + off, len - off, (off_t)off);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return -1;
        off += (size_t)w;
    }
    return 0;
}

/* names, sorted, without repeats: a malloc'd array of pointers into the caller's strings. */
static const char **sorted_names(const char *const *names, size_t n, size_t *out_n)
{
    const char **s = malloc((n ? n : 1) * sizeof *s);
    if (!s) return NULL;
    memcpy(s, names, n * sizeof *s);
    qsort(s, n, sizeof *s, cmp_str);
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (k == 0 || strcmp(s[k - 1], s[i])) s[k++] = s[i];
    *out_n = k;
    return s;
}

int iol_ledger_add_many(const char *dir, const char *const *names, size_t n, struct iol_err *err)
{
    for (size_t i = 0; i < n; i++)
        if (strchr(names[i], '\n') || !names[i][0])
            return iol_err_set(err, IOL_ERR_USAGE, "file name '%s' cannot be recorded in the ledger", names[i]);
    if (n == 0) return 0;
    char path[4200];
    ledger_path(dir, path, sizeof path);
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) return iol_err_errno(err, IOL_ERR_RUNTIME, errno, "open %s", path);
    flock(fd, LOCK_EX);
    int rc = 0;
    size_t k = 0, need = 2, add = 0;
    const char **s = sorted_names(names, n, &k);
    struct iol_ledger_view v = {read_all(fd), NULL, 0};
    size_t len = v.text ? strlen(v.text) : 0;
    /* A torn last line must never merge with a new name: start the new names on a line of their own. */
    int sep = len && v.text[len - 1] != '\n';
    for (size_t i = 0; s && i < k; i++) need += strlen(s[i]) + 1;
    char *tail = malloc(need);
    if (!s || !v.text || !tail || index_lines(&v)) {
        rc = iol_err_set(err, IOL_ERR_RUNTIME, "out of memory reading %s", path);
    } else {
        if (sep) tail[add++] = '\n';
        for (size_t i = 0; i < k; i++) {
            if (iol_ledger_view_has(&v, s[i])) continue;
            size_t nl = strlen(s[i]);
            memcpy(tail + add, s[i], nl);
            add += nl;
            tail[add++] = '\n';
        }
        if (add > (size_t)sep) {
            if (pwrite(fd, tail, add, (off_t)len) != (ssize_t)add)
                rc = iol_err_errno(err, IOL_ERR_RUNTIME, errno, "write %s", path);
            else if (fsync(fd) != 0)
                rc = iol_err_errno(err, IOL_ERR_RUNTIME, errno, "fsync %s", path);
        }
    }
    iol_ledger_view_free(&v);
    free(tail);
    free(s);
    close(fd);
    return rc;
}

int iol_ledger_add(const char *dir, const char *name, struct iol_err *err)
{
    return iol_ledger_add_many(dir, &name, 1, err);
}

int iol_ledger_remove_many(const char *dir, const char *const *names, size_t n, struct iol_err *err)
{
    if (n == 0) return 0;
    char path[4200];
    ledger_path(dir, path, sizeof path);
    int fd = open(path, O_RDWR | O_CLOEXEC);
    if (fd < 0) return errno == ENOENT ? 0 : iol_err_errno(err, IOL_ERR_RUNTIME, errno, "open %s", path);
    flock(fd, LOCK_EX);
    int rc = 0, changed = 0;
    size_t k = 0;
    const char **s = sorted_names(names, n, &k);
    char *text = read_all(fd);
    if (!s || !text) {
        rc = iol_err_set(err, IOL_ERR_RUNTIME, "out of memory reading %s", path);
    } else {
        /* One pass over the lines, keeping those not named (compacted in place). */
        char *out = text;
        for (char *p = text; *p;) {
            char *eol = strchr(p, '\n');
            size_t ll = eol ? (size_t)(eol - p) : strlen(p);
            char save = p[ll];
            p[ll] = '\0';
            const char *key = p;
            int drop = bsearch(&key, s, k, sizeof *s, cmp_str) != NULL;
            p[ll] = save;
            if (drop) {
                changed = 1;
            } else {
                memmove(out, p, ll);
                out += ll;
                if (eol) *out++ = '\n';
            }
            if (!eol) break;
            p = eol + 1;
        }
        *out = '\0';
    }
    if (!rc && changed) {
        size_t len = strlen(text);
        if (strspn(text, "\n") == len) {
            /* Last entry gone: the ledger has no reason to exist. Unlink while holding the lock. */
            if (unlink(path) != 0) rc = iol_err_errno(err, IOL_ERR_RUNTIME, errno, "unlink %s", path);
        } else if (write_all(fd, text, len) != 0) {
            rc = iol_err_errno(err, IOL_ERR_RUNTIME, errno, "rewrite %s", path);
        }
    }
    free(s);
    free(text);
    close(fd);
    return rc;
}

int iol_ledger_remove(const char *dir, const char *name, struct iol_err *err)
{
    return iol_ledger_remove_many(dir, &name, 1, err);
}
