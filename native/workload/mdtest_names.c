/* mdtest_names.c — mdtest's names on disk. A test directory per iteration and loop (test-dir.I-L), a tree
 * of directories numbered breadth first (mdtest_tree.0 is the root; the children of k are k*b+1 .. k*b+b),
 * nested in the file system as they are in the tree, and items file.mdtest.OWNER.NUM / dir.mdtest.OWNER.NUM.
 * Per-item names are built by hand: snprintf would be a visible share of a stat on tmpfs. */
#include <stdio.h>
#include <string.h>

#include "mdtest_internal.h"

const char *const mdtest_phase_names[MD_NPHASES] = {
    "tree-create", "dir-create", "dir-stat", "dir-remove",
    "file-create", "file-stat", "file-read", "file-remove", "tree-remove", "dir-rename",
};
const char *const mdtest_phase_titles[MD_NPHASES] = {
    "Tree creation", "Directory creation", "Directory stat", "Directory removal",
    "File creation", "File stat", "File read", "File removal", "Tree removal", "Directory rename",
};

int mdtest_split_dirs(const char *spec, struct mdtest_paths *p, struct iol_err *err)
{
    p->count = 0;
    const char *s = spec;
    while (1) {
        const char *at = strchr(s, '@');
        size_t n = at ? (size_t)(at - s) : strlen(s);
        if (n == 0) return iol_err_set(err, IOL_ERR_USAGE, "-d: an empty directory in '%s'", spec);
        if (p->count == MDTEST_MAX_PATHS)
            return iol_err_set(err, IOL_ERR_USAGE, "-d: more than %d directories", MDTEST_MAX_PATHS);
        if (n >= IOL_STR_MAX) return iol_err_set(err, IOL_ERR_USAGE, "-d: a directory name is too long");
        memcpy(p->dir[p->count], s, n);
        p->dir[p->count][n] = '\0';
        /* Trailing slashes would double in the names built below. */
        while (n > 1 && p->dir[p->count][n - 1] == '/') p->dir[p->count][--n] = '\0';
        /* Twice the same directory would make two ranks create, and then remove, the same test directory. */
        for (int i = 0; i < p->count; i++)
            if (strcmp(p->dir[i], p->dir[p->count]) == 0)
                return iol_err_set(err, IOL_ERR_USAGE, "-d: '%s' is listed twice in '%s'", p->dir[i], spec);
        p->count++;
        if (!at) break;
        s = at + 1;
    }
    return 0;
}

int mdtest_testdir(char *buf, size_t len, const char *dir, int iteration, uint64_t loop)
{
    int n = snprintf(buf, len, "%s/test-dir.%d-%llu", dir, iteration, (unsigned long long)loop);
    return n < 0 || (size_t)n >= len ? -1 : n;
}

/* "00" "01" ... "99": two digits per division when writing a number. */
static const char digit_pairs[201] =
    "0001020304050607080910111213141516171819202122232425262728293031323334353637383940414243444546474849"
    "5051525354555657585960616263646566676869707172737475767778798081828384858687888990919293949596979899";

/* Writes v in decimal at p; returns the number of characters. Every mdtest item builds its name, so this
 * is on the per-item path: the digits are counted first, then written from the end two at a time. */
static int put_u64(char *p, uint64_t v)
{
    int n = 1;
    for (uint64_t t = v; t >= 10; t /= 10)
        n++;
    char *end = p + n;
    while (v >= 100) {
        unsigned d = (unsigned)(v % 100) * 2;
        v /= 100;
        *--end = digit_pairs[d + 1];
        *--end = digit_pairs[d];
    }
    if (v >= 10) {
        *--end = digit_pairs[v * 2 + 1];
        *--end = digit_pairs[v * 2];
    } else {
        *--end = (char)('0' + v);
    }
    return n;
}

/* A string literal's characters at p (its length is known when compiling: no strlen, a fixed-size copy). */
#define PUT_LITERAL(p, lit) (memcpy((p), (lit), sizeof(lit) - 1), (int)(sizeof(lit) - 1))

/* "/mdtest_tree[.OWNER].K" */
static int put_tree_component(char *p, int owner, uint64_t k)
{
    int n = PUT_LITERAL(p, "/mdtest_tree.");
    if (owner >= 0) {
        n += put_u64(p + n, (uint64_t)owner);
        p[n++] = '.';
    }
    return n + put_u64(p + n, k);
}

int mdtest_tree_dir(char *buf, size_t len, const char *testdir, int owner, uint64_t k, uint64_t branch)
{
    /* The chain from the root down to k, collected upwards. */
    uint64_t chain[128];
    int depth = 0;
    for (uint64_t d = k;; d = (d - 1) / branch) {
        if (depth == 128) return -1;
        chain[depth++] = d;
        if (d == 0) break;
    }
    size_t base = strlen(testdir);
    /* Each component is at most 13 + 20 + 1 + 20 characters. */
    if (base + (size_t)depth * 56 + 1 > len) return -1;
    memcpy(buf, testdir, base);
    int n = (int)base;
    for (int i = depth - 1; i >= 0; i--) n += put_tree_component(buf + n, owner, chain[i]);
    buf[n] = '\0';
    return n;
}

int mdtest_item_name(char *buf, size_t len, int at, enum mdtest_kind kind, int owner, uint64_t num)
{
    if ((size_t)at + 64 > len) return -1;
    int n = at;
    n += kind == MDTEST_FILE ? PUT_LITERAL(buf + n, "/file.mdtest.") : PUT_LITERAL(buf + n, "/dir.mdtest.");
    if (owner < 0) n += PUT_LITERAL(buf + n, "shared");   /* -S: every rank's names */
    else n += put_u64(buf + n, (uint64_t)owner);
    buf[n++] = '.';
    n += put_u64(buf + n, num);
    buf[n] = '\0';
    return n;
}
