/* mdtest_sweep.c — removing what is left of mdtest runs that were cut short (interrupted, killed, out of
 * space) or made with another number of ranks: every name mdtest gives, found by reading the directories,
 * not by counting items that may never have been made. Only mdtest's own names inside a test directory the
 * ledger lists are ever touched (the caller checks the ledger); anything else stays where it is. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../common/interrupt.h"
#include "mdtest_internal.h"

enum kind { OTHER, ITEM_FILE, ITEM_DIR, TREE_DIR };

/* Digits from p; returns the end, or NULL when there are none. *v gets their value. */
static const char *digits(const char *p, unsigned long long *v)
{
    const char *q = p;
    *v = 0;
    while (*q >= '0' && *q <= '9') *v = *v * 10 + (unsigned)(*q++ - '0');
    return q == p ? NULL : q;
}

/* "file.mdtest.R.N", "file.mdtest.shared.N" (-S), "dir.mdtest.R.N", "mdtest_tree.K" or "mdtest_tree.R.K"; *num
 * gets N (or K). */
static enum kind classify(const char *name, unsigned long long *num)
{
    static const struct {
        const char *prefix;
        enum kind kind;
        int min_numbers, max_numbers;
    } forms[] = {{"file.mdtest.shared.", ITEM_FILE, 1, 1}, {"file.mdtest.", ITEM_FILE, 2, 2}, {"dir.mdtest.", ITEM_DIR, 2, 2}, {"mdtest_tree.", TREE_DIR, 1, 2}};
    for (size_t f = 0; f < sizeof forms / sizeof forms[0]; f++) {
        size_t len = strlen(forms[f].prefix);
        if (strncmp(name, forms[f].prefix, len) != 0) continue;
        const char *p = name + len;
        int n = 0;
        for (;;) {
            p = digits(p, num);
            if (!p) return OTHER;
            n++;
            if (*p == '\0') break;
            if (*p != '.' || n == forms[f].max_numbers) return OTHER;
            p++;
        }
        return n >= forms[f].min_numbers ? forms[f].kind : OTHER;
    }
    return OTHER;
}

/* The names in directory fd, as one malloc'd block of NUL-separated strings (read first, removed after:
 * removing entries while reading a directory may skip some). */
static char *read_names(int fd, size_t *len, struct iol_err *err)
{
    int dup_fd = dup(fd);
    DIR *d = dup_fd >= 0 ? fdopendir(dup_fd) : NULL;
    if (!d) {
        if (dup_fd >= 0) close(dup_fd);
        iol_err_errno(err, IOL_ERR_RUNTIME, errno, "read a directory to clean up");
        return NULL;
    }
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    struct dirent *e;
    while (buf && (e = readdir(d)) != NULL) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        size_t l = strlen(e->d_name) + 1;
        if (n + l > cap) {
            char *nb = realloc(buf, cap * 2 + l);
            if (!nb) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = nb;
            cap = cap * 2 + l;
        }
        memcpy(buf + n, e->d_name, l);
        n += l;
    }
    closedir(d);
    if (!buf) iol_err_set(err, IOL_ERR_RUNTIME, "out of memory");
    *len = n;
    return buf;
}

static int sweep_fd(int fd, const char *path, int nshare, int me, int depth, struct iol_cleanup *out,
                    struct iol_err *err)
{
    size_t len = 0;
    char *names = read_names(fd, &len, err);
    if (!names) return -1;
    int rc = 0;
    for (size_t off = 0; off < len && rc == 0; off += strlen(names + off) + 1) {
        const char *name = names + off;
        /* An interrupted run's cleanup is bounded (interrupt.h): what is left stays for a remove run. */
        if (iol_interrupt_overdue()) {
            out->left++;
            break;
        }
        unsigned long long num = 0;
        enum kind k = classify(name, &num);
        if (k == ITEM_FILE || k == ITEM_DIR) {
            if ((int)(num % (unsigned long long)nshare) != me) continue;
            if (unlinkat(fd, name, k == ITEM_DIR ? AT_REMOVEDIR : 0) == 0) out->removed++;
            else if (errno == ENOTEMPTY || errno == EEXIST) out->left += nshare == 1;
            else if (errno != ENOENT) rc = iol_err_errno(err, IOL_ERR_RUNTIME, errno, "remove %s/%s", path, name);
        } else if (k == TREE_DIR && depth < 256) {
            int sub = openat(fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            if (sub < 0) {
                if (errno == ENOENT) continue;
                rc = iol_err_errno(err, IOL_ERR_RUNTIME, errno, "open %s/%s", path, name);
                break;
            }
            char subpath[IOL_STR_MAX + 512];
            snprintf(subpath, sizeof subpath, "%s/%s", path, name);
            rc = sweep_fd(sub, subpath, nshare, me, depth + 1, out, err);
            close(sub);
            /* Tree directories go in the final, unshared pass, once every rank is done inside them. */
            if (rc == 0 && nshare == 1) {
                if (unlinkat(fd, name, AT_REMOVEDIR) == 0) out->removed++;
                else if (errno != ENOENT && errno != ENOTEMPTY && errno != EEXIST)
                    rc = iol_err_errno(err, IOL_ERR_RUNTIME, errno, "rmdir %s", subpath);
            }
        } else if (nshare == 1) {
            out->left++;   /* not a name iolens gives: someone else's, left in place */
        }
    }
    free(names);
    return rc;
}

int mdtest_sweep(struct mdtest_run *r, const char *dir, int nshare, int me, struct iol_cleanup *out)
{
    if (!r->be->does_io) return 0;
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT) return 0;
        return iol_err_errno(&r->err, IOL_ERR_RUNTIME, errno, "open %s", dir);
    }
    int rc = sweep_fd(fd, dir, nshare < 1 ? 1 : nshare, me, 0, out, &r->err);
    close(fd);
    return rc;
}
