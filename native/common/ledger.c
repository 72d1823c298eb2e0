/* ledger.c — see ledger.h. The file is tiny (one line per test-file name), so it is read whole and
 * rewritten whole under an exclusive lock. */
#include "ledger.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#define LEDGER_MAX (1 << 20)

static void ledger_path(const char *dir, char *out, size_t len)
{
    snprintf(out, len, "%s/%s", dir, IOL_LEDGER_NAME);
}

/* Reads the whole ledger from fd into a NUL-terminated malloc'd buffer. */
static char *read_all(int fd)
{
    char *buf = malloc(LEDGER_MAX + 1);
    if (!buf) return NULL;
    size_t n = 0;
    while (n < LEDGER_MAX) {
        ssize_t r = pread(fd, buf + n, LEDGER_MAX - n, (off_t)n);
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

int iol_ledger_add(const char *dir, const char *name, struct iol_err *err)
{
    if (strchr(name, '\n')) return iol_err_set(err, IOL_ERR_USAGE, "file name '%s' contains a newline", name);
    char path[4200];
    ledger_path(dir, path, sizeof path);
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) return iol_err_errno(err, IOL_ERR_RUNTIME, errno, "open %s", path);
    flock(fd, LOCK_EX);
    int rc = 0;
    char *text = read_all(fd);
    if (!text) {
        rc = iol_err_set(err, IOL_ERR_RUNTIME, "out of memory reading %s", path);
    } else if (!find_line(text, name)) {
        size_t len = strlen(text);
        /* Append after a newline so a torn last line can never merge with the new name. */
        const char *sep = (len && text[len - 1] != '\n') ? "\n" : "";
        char line[4200];
        int n = snprintf(line, sizeof line, "%s%s\n", sep, name);
        if (pwrite(fd, line, (size_t)n, (off_t)len) != n)
            rc = iol_err_errno(err, IOL_ERR_RUNTIME, errno, "write %s", path);
        else if (fsync(fd) != 0)
            rc = iol_err_errno(err, IOL_ERR_RUNTIME, errno, "fsync %s", path);
    }
    free(text);
    close(fd);
    return rc;
}

int iol_ledger_remove(const char *dir, const char *name, struct iol_err *err)
{
    char path[4200];
    ledger_path(dir, path, sizeof path);
    int fd = open(path, O_RDWR | O_CLOEXEC);
    if (fd < 0) return errno == ENOENT ? 0 : iol_err_errno(err, IOL_ERR_RUNTIME, errno, "open %s", path);
    flock(fd, LOCK_EX);
    int rc = 0;
    char *text = read_all(fd);
    char *line = text ? find_line(text, name) : NULL;
    if (line) {
        char *eol = strchr(line, '\n');
        memmove(line, eol ? eol + 1 : line + strlen(line), strlen(eol ? eol + 1 : line + strlen(line)) + 1);
        size_t len = strlen(text);
        size_t blank = strspn(text, "\n");
        if (blank == len) {
            /* Last entry gone: the ledger has no reason to exist. Unlink while holding the lock. */
            if (unlink(path) != 0) rc = iol_err_errno(err, IOL_ERR_RUNTIME, errno, "unlink %s", path);
        } else if (write_all(fd, text, len) != 0) {
            rc = iol_err_errno(err, IOL_ERR_RUNTIME, errno, "rewrite %s", path);
        }
    }
    free(text);
    close(fd);
    return rc;
}
