/* iolens_replay.c — the executor of `iolens replay run`: it reads one rank's plan (a text file of
 * operations, written by python/iolens/replay/plan.py) and makes exactly those calls, nothing else.
 *
 * Why a separate small program and not Python or iolens-bench: the profiler counts every call of the
 * process it watches. A Python interpreter opens, stats and lists hundreds of files before it starts
 * (imports), and the engine reads its own configuration; both would land in the replay's profile as
 * operations the original never made. This program's only calls are the plan's (and the loader's, which
 * the report keeps apart as code and libraries).
 *
 * Safety (docs/reliability.md): it runs in the run directory the Python side created (its cwd) and refuses
 * any plan path that is absolute or has a ".." component, before doing any I/O.
 *
 * The plan comes on standard input (a pipe: reading it is no regular file's I/O in the profile).
 * Plan lines (fields separated by one space; '#' starts a comment line):
 *   D path                 mkdir            T path          stat
 *   U path                 unlink           L path          list the directory (opendir, readdir*, closedir)
 *   O fid mode path        open (mode: r, w, rw; w and rw create)
 *   F fid mode path        fopen (stdio; mode as fopen's: r, w, r+, a)
 *   W fid offset size      write size bytes at offset (pwrite; stdio: fwrite where the stream is)
 *   R fid offset size      read (pread; stdio: fread where the stream is)
 *   K fid offset           lseek (POSIX) or fseek (stdio) to offset
 *   S fid                  fsync (stdio: fflush)
 *   X fid                  dup the descriptor and close the copy (the original's dups)
 *   N fid                  fileno of the stream (the original's filenos: opens of the POSIX record)
 *   C fid                  close or fclose
 *   P ns                   pause: sleep ns nanoseconds (the gaps between the original's bursts)
 * Exit status: 0 done, 2 a bad plan (nothing done), 1 a call failed (the message names the line). */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define MAX_FILES 65536
#define MAX_LINE 8192

struct rfile {
    int fd;          /* POSIX descriptor, -1 when closed */
    FILE *fp;        /* stdio stream, NULL when closed */
    long long pos;   /* the stream's position, to seek only when the plan's offset differs */
    char last;       /* the stream's last access, 'R' or 'W' (0: none since it was opened) */
};

struct op {
    char kind;
    int fid;
    long long a, b;
    char *path;
    char mode[4];
};

static int safe_path(const char *p)
{
    if (p[0] == '\0' || p[0] == '/')
        return 0;
    for (const char *s = p; *s;) {
        const char *e = strchr(s, '/');
        size_t n = e ? (size_t)(e - s) : strlen(s);
        if (n == 2 && s[0] == '.' && s[1] == '.')
            return 0;
        if (!e)
            break;
        s = e + 1;
    }
    return 1;
}

static int parse_line(char *line, struct op *op, char *why, size_t whylen)
{
    memset(op, 0, sizeof *op);
    op->kind = line[0];
    char *rest = line[1] == ' ' ? line + 2 : line + 1;
    char *end = NULL;
    switch (op->kind) {
    case 'D': case 'T': case 'U': case 'L':
        op->path = rest;
        break;
    case 'O': case 'F': {
        op->fid = (int)strtol(rest, &end, 10);
        if (*end != ' ')
            goto bad;
        char *m = end + 1, *sp = strchr(m, ' ');
        if (!sp || sp - m > 3 || sp == m)
            goto bad;
        memcpy(op->mode, m, (size_t)(sp - m));
        op->path = sp + 1;
        break;
    }
    case 'W': case 'R':
        op->fid = (int)strtol(rest, &end, 10);
        op->a = strtoll(end, &end, 10);
        op->b = strtoll(end, &end, 10);
        if (*end != '\0' || op->a < 0 || op->b < 0)
            goto bad;
        break;
    case 'K':
        op->fid = (int)strtol(rest, &end, 10);
        op->a = strtoll(end, &end, 10);
        if (*end != '\0' || op->a < 0)
            goto bad;
        break;
    case 'S': case 'C': case 'X': case 'N':
        op->fid = (int)strtol(rest, &end, 10);
        if (*end != '\0')
            goto bad;
        break;
    case 'P':
        op->a = strtoll(rest, &end, 10);
        if (*end != '\0' || op->a < 0)
            goto bad;
        break;
    default:
        snprintf(why, whylen, "unknown operation '%c'", op->kind);
        return -1;
    }
    if (op->fid < 0 || op->fid >= MAX_FILES) {
        snprintf(why, whylen, "file number %d out of range 0-%d", op->fid, MAX_FILES - 1);
        return -1;
    }
    if (op->path && !safe_path(op->path)) {
        snprintf(why, whylen, "path '%.200s' is absolute or has a '..' component", op->path);
        return -1;
    }
    return 0;
bad:
    snprintf(why, whylen, "malformed fields");
    return -1;
}

/* The whole plan is read and checked before the first call: a bad plan does no I/O. */
static struct op *read_plan(FILE *in, const char *name, size_t *n, long long *maxsize)
{
    size_t cap = 1024, len = 0;
    struct op *ops = malloc(cap * sizeof *ops);
    char line[MAX_LINE], why[256];
    long lineno = 0;
    *maxsize = 1;
    while (ops && fgets(line, sizeof line, in)) {
        lineno++;
        size_t l = strlen(line);
        if (l && line[l - 1] == '\n')
            line[--l] = '\0';
        else if (!feof(in)) {
            fprintf(stderr, "iolens-replay: %s:%ld: line too long\n", name, lineno);
            goto fail;
        }
        if (l == 0 || line[0] == '#')
            continue;
        if (len == cap) {
            struct op *more = realloc(ops, 2 * cap * sizeof *ops);
            if (!more)
                goto fail;
            ops = more;
            cap *= 2;
        }
        if (parse_line(line, &ops[len], why, sizeof why) != 0) {
            fprintf(stderr, "iolens-replay: %s:%ld: %s\n", name, lineno, why);
            goto fail;
        }
        if (ops[len].path && !(ops[len].path = strdup(ops[len].path)))
            goto fail;
        if ((ops[len].kind == 'W' || ops[len].kind == 'R') && ops[len].b > *maxsize)
            *maxsize = ops[len].b;
        len++;
    }
    *n = len;
    return ops;
fail:
    for (size_t i = 0; ops && i < len; i++)
        free(ops[i].path);
    free(ops);
    return NULL;
}

static int open_flags(const char *mode)
{
    if (strcmp(mode, "r") == 0)
        return O_RDONLY;
    if (strcmp(mode, "w") == 0)
        return O_WRONLY | O_CREAT;
    return O_RDWR | O_CREAT;
}

static int stream_to(struct rfile *f, long long off)
{
    if (f->pos == off)
        return 0;
    if (fseeko(f->fp, (off_t)off, SEEK_SET) != 0)
        return -1;
    f->pos = off;
    return 0;
}

static int run_op(const struct op *op, struct rfile *files, char *buf)
{
    struct rfile *f = &files[op->fid];
    struct stat st;
    switch (op->kind) {
    case 'D':
        return mkdir(op->path, 0700) == 0 || errno == EEXIST ? 0 : -1;
    case 'T':
        return stat(op->path, &st);
    case 'U':
        return unlink(op->path) == 0 || errno == ENOENT ? 0 : -1;
    case 'L': {
        DIR *d = opendir(op->path);
        if (!d)
            return -1;
        while (readdir(d))
            ;
        return closedir(d);
    }
    case 'O':
        f->fd = open(op->path, open_flags(op->mode), 0600);
        return f->fd < 0 ? -1 : 0;
    case 'F':
        f->fp = fopen(op->path, op->mode);
        f->pos = 0;
        f->last = 0;
        if (f->fp && op->mode[0] == 'a')
            f->pos = -1; /* unknown: the first access seeks */
        return f->fp ? 0 : -1;
    case 'W':
    case 'R': {
        size_t n = (size_t)op->b;
        if (f->fp) {
            /* A stream reads and writes where it is: its seeks are the plan's K lines, as the original's
             * were its own fseek calls (STDIO counts no offsets). Only a switch between reading and
             * writing moves it to the plan's offset (C requires a seek there, and the original made one). */
            if ((f->last && f->last != op->kind) || f->pos < 0) {
                if (stream_to(f, op->a) != 0)
                    return -1;
            }
            f->last = op->kind;
            size_t got = op->kind == 'W' ? fwrite(buf, 1, n, f->fp) : fread(buf, 1, n, f->fp);
            f->pos += (long long)got;
            if (got < n && op->kind == 'R')
                clearerr(f->fp); /* a short read at the end is the original's too */
            return got < n && op->kind == 'W' ? -1 : 0;
        }
        if (f->fd < 0) {
            errno = EBADF;
            return -1;
        }
        ssize_t got = op->kind == 'W' ? pwrite(f->fd, buf, n, (off_t)op->a) : pread(f->fd, buf, n, (off_t)op->a);
        return got < 0 ? -1 : 0;
    }
    case 'K':
        if (f->fp) {
            /* Where the stream is, when known: the next access then needs no seek of its own, so the
             * stream's seeks are the plan's. */
            long long to = f->pos >= 0 ? f->pos : op->a;
            f->pos = -1;
            return stream_to(f, to);
        }
        return lseek(f->fd, (off_t)op->a, SEEK_SET) < 0 ? -1 : 0;
    case 'S':
        if (f->fp)
            return fflush(f->fp);
        return fsync(f->fd);
    case 'X': {
        int d = dup(f->fd);
        return d < 0 ? -1 : close(d);
    }
    case 'N':
        if (!f->fp) {
            errno = EBADF;
            return -1;
        }
        return fileno(f->fp) < 0 ? -1 : 0;
    case 'C':
        if (f->fp) {
            int rc = fclose(f->fp);
            f->fp = NULL;
            return rc;
        }
        if (f->fd >= 0) {
            int rc = close(f->fd);
            f->fd = -1;
            return rc;
        }
        return 0;
    case 'P': {
        struct timespec ts = {(time_t)(op->a / 1000000000LL), (long)(op->a % 1000000000LL)};
        while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
            ;
        return 0;
    }
    }
    errno = EINVAL;
    return -1;
}

int main(int argc, char **argv)
{
    (void)argv;
    if (argc != 1) {
        fprintf(stderr, "usage: iolens-replay < PLAN (run by `iolens replay run`; docs/replay.md)\n");
        return 2;
    }
    size_t n = 0;
    long long maxsize = 1;
    /* The plan comes on stdin, a pipe: reading it adds no regular file to the profile. */
    struct op *ops = read_plan(stdin, "plan", &n, &maxsize);
    if (!ops)
        return 2;
    char *buf = malloc((size_t)maxsize);
    struct rfile *files = malloc(MAX_FILES * sizeof *files);
    if (!buf || !files) {
        fprintf(stderr, "iolens-replay: out of memory (%lld-byte buffer)\n", maxsize);
        return 1;
    }
    memset(buf, 'r', (size_t)maxsize);
    for (int i = 0; i < MAX_FILES; i++)
        files[i] = (struct rfile){-1, NULL, 0, 0};
    int status = 0;
    for (size_t i = 0; i < n; i++) {
        if (run_op(&ops[i], files, buf) != 0) {
            fprintf(stderr, "iolens-replay: operation %zu ('%c'%s%s): %s\n", i + 1, ops[i].kind,
                    ops[i].path ? " " : "", ops[i].path ? ops[i].path : "", strerror(errno));
            status = 1;
            break;
        }
    }
    for (int i = 0; i < MAX_FILES; i++) {
        if (files[i].fp)
            fclose(files[i].fp);
        if (files[i].fd >= 0)
            close(files[i].fd);
    }
    for (size_t i = 0; i < n; i++)
        free(ops[i].path);
    free(ops);
    free(files);
    free(buf);
    return status;
}
