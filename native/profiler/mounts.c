/* mounts.c — which mount a path is on: /proc/self/mountinfo read once (on the first file the process
 * records), longest matching mount directory wins; each mount gets a MOUNTS record in the log when a FILES
 * record first names it. */
#include "rt.h"
#include "sys.h"

#include <stdlib.h>
#include <string.h>
#include <sys/statfs.h>

/* mountinfo escapes space, tab, newline and backslash as \ooo. */
static size_t unescape(char *s)
{
    char *w = s;
    for (char *r = s; *r != '\0'; r++) {
        if (r[0] == '\\' && r[1] >= '0' && r[1] <= '7' && r[2] >= '0' && r[2] <= '7' && r[3] >= '0' && r[3] <= '7') {
            *w++ = (char)(((r[1] - '0') << 6) | ((r[2] - '0') << 3) | (r[3] - '0'));
            r += 3;
        } else {
            *w++ = *r;
        }
    }
    *w = '\0';
    return (size_t)(w - s);
}

static char *field(char **cursor)
{
    char *s = *cursor;
    while (*s == ' ')
        s++;
    if (*s == '\0')
        return NULL;
    char *e = s;
    while (*e != '\0' && *e != ' ')
        e++;
    if (*e != '\0')
        *e++ = '\0';
    *cursor = e;
    return s;
}

static int load_aside(void *arg)
{
    (void)arg;
    int fd = iol_sys_openat(AT_FDCWD, "/proc/self/mountinfo", O_RDONLY | O_CLOEXEC, 0);
    if (fd < 0)
        return 0;
    size_t cap = 1u << 16, len = 0;
    char *buf = iol_alloc(cap);
    while (buf != NULL) {
        ssize_t n = iol_sys_read(fd, buf + len, cap - len - 1);
        if (n <= 0)
            break;
        len += (size_t)n;
        if (len + 1 >= cap) { /* a big mount table: read it again into more room */
            char *bigger = iol_alloc(cap * 4);
            if (bigger == NULL)
                break;
            memcpy(bigger, buf, len);
            buf = bigger;
            cap *= 4;
        }
    }
    iol_sys_close(fd);
    if (buf == NULL)
        return 0;
    buf[len] = '\0';
    int lines = 0;
    for (size_t i = 0; i < len; i++)
        lines += buf[i] == '\n';
    struct iol_mount *m = iol_alloc(sizeof *m * (size_t)(lines + 1));
    if (m == NULL)
        return 0;
    int n = 0;
    for (char *line = buf; line != NULL && *line != '\0';) {
        char *nl = strchr(line, '\n');
        if (nl != NULL)
            *nl = '\0';
        char *cur = line;
        char *id = field(&cur), *parent = field(&cur), *dev = field(&cur), *root = field(&cur);
        char *dir = field(&cur);
        (void)parent, (void)dev, (void)root;
        char *f, *type = NULL;
        while ((f = field(&cur)) != NULL)
            if (strcmp(f, "-") == 0) {
                type = field(&cur);
                break;
            }
        if (id != NULL && dir != NULL && type != NULL && n < lines + 1) {
            m[n].id = (uint32_t)strtoul(id, NULL, 10);
            m[n].dir = dir;
            m[n].dir_len = (uint32_t)unescape(dir);
            m[n].type = type;
            m[n].type_len = (uint32_t)strlen(type);
            n++;
        }
        line = nl != NULL ? nl + 1 : NULL;
    }
    /* Longest directory first; of two mounts on one directory, the later (the one on top) first. */
    for (int i = 1; i < n; i++) {
        struct iol_mount x = m[i];
        int j = i - 1;
        while (j >= 0 && m[j].dir_len <= x.dir_len) {
            m[j + 1] = m[j];
            j--;
        }
        m[j + 1] = x;
    }
    iol_g.mounts = m;
    iol_g.n_mounts = n;
    return 0;
}

/* Read aside (aside.c): the descriptor is never the program's. */
static void load(void)
{
    iol_g.mounts_loaded = 1;
    iol_aside(load_aside, NULL);
}

static int contains(const struct iol_mount *m, const char *abs, size_t len)
{
    size_t d = m->dir_len;
    if (d == 1 && m->dir[0] == '/')
        return 1;
    return len >= d && memcmp(abs, m->dir, d) == 0 && (len == d || abs[d] == '/');
}

/* Under iol_g.lock; abs is a file entry's path (it lives as long as the process). Files of one directory
 * are usually on one mount: the thread remembers the last directory (a pointer to such a path) and its mount. */
struct iol_mount *iol_mount_of(struct iol_thread *t, const char *abs, size_t len)
{
    if (!iol_g.mounts_loaded)
        load();
    size_t dlen = len;
    while (dlen > 0 && abs[dlen - 1] != '/')
        dlen--;
    if (t->dir_mount != NULL && t->dir_len == dlen && memcmp(t->dir_path, abs, dlen) == 0) {
        t->dir_path = abs; /* the newest entry's: in the cache next time, where the first one's is long gone */
        return (struct iol_mount *)t->dir_mount;
    }
    for (int i = 0; i < iol_g.n_mounts; i++) {
        struct iol_mount *m = &iol_g.mounts[i];
        if (contains(m, abs, len)) {
            if (m->blksize == 0) {
                struct statfs sf;
                m->blksize = iol_sys_statfs(m->dir, &sf) == 0 && sf.f_bsize > 0 ? (uint32_t)sf.f_bsize : 4096;
            }
            /* A mount on a directory below this one would make the cache wrong for its other files. */
            if (m->dir_len <= dlen) {
                t->dir_mount = m;
                t->dir_len = (uint32_t)dlen;
                t->dir_path = abs;
            }
            return m;
        }
    }
    return NULL;
}

static size_t pad8(size_t n)
{
    return (n + 7) & ~(size_t)7;
}

void iol_mount_log(struct iol_mount *m)
{
    if (m->logged_gen == iol_g.gen)
        return;
    size_t size = sizeof(struct iolp_var) + pad8(m->dir_len) + pad8(m->type_len);
    uint8_t *p = iol_stream_reserve(&iol_g.s_mounts, size);
    if (p == NULL)
        return;
    memset(p, 0, size);
    struct iolp_var *v = (struct iolp_var *)p;
    v->a = m->id;
    v->b = m->dir_len;
    v->c = m->type_len;
    memcpy(p + sizeof *v, m->dir, m->dir_len);
    memcpy(p + sizeof *v + pad8(m->dir_len), m->type, m->type_len);
    iol_stream_commit(&iol_g.s_mounts, size);
    m->logged_gen = iol_g.gen;
}
