/* wrap_stdio.c — stdio: fopen, fdopen, freopen, tmpfile, fclose, fileno, fread, fwrite, fgets, fputs, puts,
 * the printf and scanf families (with the _unlocked, _chk and __isoc99_ forms programs are built with),
 * fseek, fsetpos, rewind, ftell, fgetpos, fflush.
 *
 * fputc, fgetc and their forms count too, but a program compiled with optimisation gets putc_unlocked and
 * getc_unlocked (and the _unlocked fread/fwrite of small constant sizes) as inline code from <stdio.h>: those
 * never reach a library, and cannot be counted.
 *
 * These calls make the STDIO layer, with the counters and meanings of Darshan's STDIO module (counters.h):
 * a stdio call counts at the call, as the program sees it (an fwrite of 4 bytes is a 4-byte STDIO write,
 * whenever the buffer reaches the file), and in no POSIX counter: the C library's own read and write on the
 * stream's descriptor are internal, never seen here, so nothing counts twice. The access's offset is the
 * stream's position, which the runtime follows as it does a descriptor's. */
#include "wrap.h"
#include "sys.h"

#include <fcntl.h>
#include <stdarg.h>
#include <string.h>

static inline int stream_fd(FILE *f)
{
#ifdef __GLIBC__
    return f != NULL ? f->_fileno : -1;
#else
    return f != NULL ? fileno_unlocked(f) : -1;
#endif
}

static int mode_flags(const char *mode)
{
    int fl = 0;
    if (mode == NULL)
        return 0;
    switch (mode[0]) {
    case 'w':
        fl = O_WRONLY | O_CREAT | O_TRUNC;
        break;
    case 'a':
        fl = O_WRONLY | O_CREAT | O_APPEND;
        break;
    default:
        fl = O_RDONLY;
    }
    for (const char *m = mode + 1; *m != '\0' && *m != ','; m++) {
        if (*m == '+')
            fl = (fl & ~O_ACCMODE) | O_RDWR;
        else if (*m == 'x')
            fl |= O_EXCL;
        else if (*m == 'e')
            fl |= O_CLOEXEC;
    }
    return fl;
}

/* bytes: what moved, or -1 when the call failed. */
static inline void stdio_post(struct iol_thread *t, struct iol_desc *d, int op, int w, int fd, const void *buf,
                              int64_t bytes, uint64_t req, int *ep, uint64_t t0)
{
    int e = *ep;
    iol_acct_xfer(t, d, &(struct iol_xfer){ (uint16_t)op, (uint8_t)w, 1, fd, buf, -1, req, 0 }, bytes, e, t0);
    *ep = e;
    iol_leave(t);
}

/* ---- opening and closing ---- */

static FILE *fopen_common(struct iol_thread *t, FILE *(*real)(const char *, const char *), const char *path,
                          const char *mode)
{
    struct iol_pcall c;
    iol_pcall_pre(&c, AT_FDCWD, path);
    FILE *f = real(path, mode);
    int e = *iol_pcall_ep(&c);
    iol_acct_open(t, IOL_OP_FOPEN, f != NULL ? stream_fd(f) : -1, e, &c, mode_flags(mode), 1);
    *iol_pcall_ep(&c) = e;
    iol_leave(t);
    return f;
}

IOL_EXPORT FILE *fopen(const char *path, const char *mode)
{
    struct iol_thread *t = iol_enter();
    if (t == NULL)
        return IOL_REAL(fopen)(path, mode);
    return fopen_common(t, iol_real.fopen, path, mode);
}

IOL_EXPORT FILE *fopen64(const char *path, const char *mode)
{
    struct iol_thread *t = iol_enter();
    if (t == NULL)
        return IOL_REAL(fopen64)(path, mode);
    return fopen_common(t, iol_real.fopen64, path, mode);
}

IOL_EXPORT FILE *fdopen(int fd, const char *mode)
{
    struct iol_thread *t = iol_enter();
    if (t == NULL)
        return IOL_REAL(fdopen)(fd, mode);
    int *ep = &errno;
    int e0 = *ep;
    struct iol_desc *d = iol_fd_known(t, fd);
    struct iol_file *file = iol_desc_file(d);
    uint64_t t0 = iol_t0(file != NULL);
    *ep = e0;
    FILE *f = iol_real.fdopen(fd, mode);
    int e = *ep;
    iol_acct_meta(t,
                  &(struct iol_meta){ IOL_OP_FOPEN, IOL_F_STDIO_FDOPENS, -1, file == NULL, file, 0, 0,
                                      IOL_META_STDIO_OPEN },
                  f == NULL, f == NULL ? -(int64_t)e : fd, t0);
    *ep = e;
    iol_leave(t);
    return f;
}

/* freopen: a close of what the stream had, then an open (of path, or of the same file with a new mode). */
static FILE *freopen_common(struct iol_thread *t, FILE *(*real)(const char *, const char *, FILE *),
                            const char *path, const char *mode, FILE *stream)
{
    struct iol_pcall c;
    iol_pcall_pre(&c, AT_FDCWD, path);
    int e0 = *iol_pcall_ep(&c);
    struct iol_desc *old = iol_fd_take(stream_fd(stream));
    if (path == NULL && iol_desc_file(old) != NULL) {
        struct iol_file *of = old->file;
        c.abs = of->path;
        c.len = of->len;
        c.f = of;
        c.t0 = iol_t0(1);
    }
    *iol_pcall_ep(&c) = e0;
    FILE *f = real(path, mode, stream);
    int e = *iol_pcall_ep(&c);
    iol_acct_close(t, IOL_OP_FCLOSE, old, 0, 0, iol_desc_file(old) != NULL ? c.t0 : 0);
    iol_acct_open(t, IOL_OP_FOPEN, f != NULL ? stream_fd(f) : -1, e, &c, mode_flags(mode), 1);
    *iol_pcall_ep(&c) = e;
    iol_leave(t);
    return f;
}

IOL_EXPORT FILE *freopen(const char *path, const char *mode, FILE *stream)
{
    struct iol_thread *t = iol_enter();
    if (t == NULL)
        return IOL_REAL(freopen)(path, mode, stream);
    return freopen_common(t, iol_real.freopen, path, mode, stream);
}

IOL_EXPORT FILE *freopen64(const char *path, const char *mode, FILE *stream)
{
    struct iol_thread *t = iol_enter();
    if (t == NULL)
        return IOL_REAL(freopen64)(path, mode, stream);
    return freopen_common(t, iol_real.freopen64, path, mode, stream);
}

/* tmpfile: a stream on a new file that has no name (O_TMPFILE, or created and unlinked at once, inside the C
 * library). Its file is named after what /proc/self/fd says of the descriptor ("/tmp/#1234" for an
 * O_TMPFILE inode), so that each one is a file of its own; a stream open, as fopen's. */
static FILE *tmpfile_common(struct iol_thread *t, FILE *(*real)(void))
{
    int *ep = &errno;
    uint64_t t0 = iol_t0(1);
    FILE *f = real();
    int e = *ep;
    int fd = f != NULL ? stream_fd(f) : -1;
    struct iol_pcall c = { .len = -1, .t0 = iol_g.trace ? t0 : 0 };
    char link[32], path[PATH_MAX];
    ssize_t n = -1;
    if (fd >= 0) {
        snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
        n = iol_sys_readlinkat(AT_FDCWD, link, path, sizeof path - 1);
    }
    if (n > 0 && path[0] == '/') {
        static const char deleted[] = " (deleted)";
        size_t dl = sizeof deleted - 1;
        if ((size_t)n > dl && memcmp(path + n - dl, deleted, dl) == 0)
            n -= (ssize_t)dl;
        path[n] = '\0';
        iol_pcall_late(&c, AT_FDCWD, path, t0);
    }
    iol_acct_open(t, IOL_OP_TMPFILE, fd, e, &c, O_RDWR | O_CREAT | O_EXCL, 1);
    *ep = e;
    iol_leave(t);
    return f;
}

IOL_EXPORT FILE *tmpfile(void)
{
    struct iol_thread *t = iol_enter();
    if (t == NULL)
        return IOL_REAL(tmpfile)();
    return tmpfile_common(t, iol_real.tmpfile);
}

IOL_EXPORT FILE *tmpfile64(void)
{
    struct iol_thread *t = iol_enter();
    if (t == NULL)
        return IOL_REAL(tmpfile64)();
    return tmpfile_common(t, iol_real.tmpfile64);
}

IOL_EXPORT int fclose(FILE *f)
{
    struct iol_thread *t = iol_enter();
    if (t == NULL)
        return IOL_REAL(fclose)(f);
    int *ep = &errno;
    int fd = stream_fd(f);
    struct iol_desc *d = iol_fd_take(fd);
    uint64_t t0 = iol_t0(iol_desc_file(d) != NULL);
    int r = iol_real.fclose(f);
    int e = *ep;
    iol_acct_close(t, IOL_OP_FCLOSE, d, r == 0 ? 0 : -1, e, t0);
    *ep = e;
    iol_leave(t);
    return r;
}

IOL_EXPORT int fileno(FILE *f)
{
    struct iol_thread *t = iol_enter();
    if (t == NULL)
        return IOL_REAL(fileno)(f);
    int *ep = &errno;
    uint64_t t0 = iol_ticks(); /* whether the stream's file is tracked is known after the call */
    int r = iol_real.fileno(f);
    int e = *ep;
    struct iol_desc *d = r >= 0 ? iol_fd_get(r) : NULL;
    struct iol_file *file = iol_desc_file(d);
    /* Darshan's fileno is a POSIX open of the stream's file (POSIX_OPENS and POSIX_FILENOS); untraced. */
    if (file != NULL)
        iol_acct_meta(t, &(struct iol_meta){ 0, IOL_F_POSIX_FILENOS, -1, 0, file, 0, 0, IOL_META_REOPEN }, 0, r, t0);
    *ep = e;
    iol_leave(t);
    return r;
}

/* ---- reading ---- */

static inline int64_t items_read(FILE *f, size_t got, size_t size, size_t n)
{
    if (got == 0 && size != 0 && n != 0 && ferror_unlocked(f))
        return -1;
    return (int64_t)(got * size);
}

#define FREAD(name, params, args) \
    IOL_EXPORT size_t name params \
    { \
        struct iol_thread *t = iol_enter(); \
        if (t == NULL) \
            return IOL_REAL(name) args; \
        int *ep = &errno; \
        int fd = stream_fd(f); \
        struct iol_desc *d = iol_fd_io(t, fd); \
        uint64_t t0 = iol_t0(d != NULL); \
        size_t r = iol_real.name args; \
        stdio_post(t, d, IOL_OP_FREAD, 0, fd, p, items_read(f, r, size, n), (uint64_t)size * n, ep, t0); \
        return r; \
    }
FREAD(fread, (void *p, size_t size, size_t n, FILE *f), (p, size, n, f))
FREAD(fread_unlocked, (void *p, size_t size, size_t n, FILE *f), (p, size, n, f))
FREAD(__fread_chk, (void *p, size_t plen, size_t size, size_t n, FILE *f), (p, plen, size, n, f))
FREAD(__fread_unlocked_chk, (void *p, size_t plen, size_t size, size_t n, FILE *f), (p, plen, size, n, f))
#undef FREAD

/* fgets: NULL is the end of the file (a 0-byte read) unless the stream's error flag says otherwise. */
#define FGETS(name, params, args) \
    IOL_EXPORT char *name params \
    { \
        struct iol_thread *t = iol_enter(); \
        if (t == NULL) \
            return IOL_REAL(name) args; \
        int *ep = &errno; \
        int fd = stream_fd(f); \
        struct iol_desc *d = iol_fd_io(t, fd); \
        uint64_t t0 = iol_t0(d != NULL); \
        char *r = iol_real.name args; \
        int64_t bytes = r != NULL ? (int64_t)strlen(r) : ferror_unlocked(f) ? -1 : 0; \
        stdio_post(t, d, IOL_OP_FGETS, 0, fd, s, bytes, n > 0 ? (uint64_t)n - 1 : 0, ep, t0); \
        return r; \
    }
FGETS(fgets, (char *s, int n, FILE *f), (s, n, f))
FGETS(fgets_unlocked, (char *s, int n, FILE *f), (s, n, f))
FGETS(__fgets_chk, (char *s, size_t slen, int n, FILE *f), (s, slen, n, f))
FGETS(__fgets_unlocked_chk, (char *s, size_t slen, int n, FILE *f), (s, slen, n, f))
#undef FGETS

/* scanf: the bytes it consumed are the stream's position after minus before (tracked files only). */
static int scan(struct iol_thread *t, int (*real)(FILE *, const char *, va_list), FILE *f, const char *fmt,
                va_list ap)
{
    int *ep = &errno;
    int e0 = *ep;
    int fd = stream_fd(f);
    struct iol_desc *d = iol_fd_io(t, fd);
    off64_t before = d != NULL ? iol_real.ftello64(f) : -1;
    uint64_t t0 = iol_t0(d != NULL);
    *ep = e0;
    int r = real(f, fmt, ap);
    int e = *ep;
    int64_t bytes = 0;
    if (before >= 0) {
        off64_t after = iol_real.ftello64(f);
        bytes = after >= before ? after - before : 0;
    }
    if (r == EOF && ferror_unlocked(f))
        bytes = -1;
    *ep = e;
    stdio_post(t, d, IOL_OP_FSCANF, 0, fd, NULL, bytes, 0, ep, t0);
    return r;
}

/* With C99 and later, <stdio.h> renames fscanf and vfscanf to their __isoc99_ forms: the plain symbols
 * (which programs built for older standards call) are defined under their own names with asm labels. */
IOL_EXPORT int iol_plain_vfscanf(FILE *f, const char *fmt, va_list ap) __asm__("vfscanf");
IOL_EXPORT int iol_plain_fscanf(FILE *f, const char *fmt, ...) __asm__("fscanf");

int iol_plain_vfscanf(FILE *f, const char *fmt, va_list ap)
{
    struct iol_thread *t = iol_enter();
    if (t == NULL)
        return IOL_REAL(vfscanf)(f, fmt, ap);
    return scan(t, iol_real.vfscanf, f, fmt, ap);
}

IOL_EXPORT int __isoc99_vfscanf(FILE *f, const char *fmt, va_list ap)
{
    struct iol_thread *t = iol_enter();
    if (t == NULL)
        return IOL_REAL(__isoc99_vfscanf)(f, fmt, ap);
    return scan(t, iol_real.__isoc99_vfscanf, f, fmt, ap);
}

int iol_plain_fscanf(FILE *f, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int r = iol_plain_vfscanf(f, fmt, ap);
    va_end(ap);
    return r;
}

IOL_EXPORT int __isoc99_fscanf(FILE *f, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int r = __isoc99_vfscanf(f, fmt, ap);
    va_end(ap);
    return r;
}

/* ---- writing ---- */

#define FWRITE(name) \
    IOL_EXPORT size_t name(const void *p, size_t size, size_t n, FILE *f) \
    { \
        struct iol_thread *t = iol_enter(); \
        if (t == NULL) \
            return IOL_REAL(name)(p, size, n, f); \
        int *ep = &errno; \
        int fd = stream_fd(f); \
        struct iol_desc *d = iol_fd_io(t, fd); \
        uint64_t t0 = iol_t0(d != NULL); \
        size_t r = iol_real.name(p, size, n, f); \
        int64_t bytes = r == 0 && size != 0 && n != 0 ? -1 : (int64_t)(r * size); \
        stdio_post(t, d, IOL_OP_FWRITE, 1, fd, p, bytes, (uint64_t)size * n, ep, t0); \
        return r; \
    }
FWRITE(fwrite)
FWRITE(fwrite_unlocked)
#undef FWRITE

#define FPUTS(name) \
    IOL_EXPORT int name(const char *s, FILE *f) \
    { \
        struct iol_thread *t = iol_enter(); \
        if (t == NULL) \
            return IOL_REAL(name)(s, f); \
        int *ep = &errno; \
        int fd = stream_fd(f); \
        struct iol_desc *d = iol_fd_io(t, fd); \
        uint64_t t0 = iol_t0(d != NULL); \
        int r = iol_real.name(s, f); \
        size_t len = strlen(s); \
        stdio_post(t, d, IOL_OP_FPUTS, 1, fd, s, r < 0 ? -1 : (int64_t)len, len, ep, t0); \
        return r; \
    }
FPUTS(fputs)
FPUTS(fputs_unlocked)
#undef FPUTS

IOL_EXPORT int puts(const char *s)
{
    struct iol_thread *t = iol_enter();
    if (t == NULL)
        return IOL_REAL(puts)(s);
    int *ep = &errno;
    int fd = stream_fd(stdout);
    struct iol_desc *d = iol_fd_io(t, fd);
    uint64_t t0 = iol_t0(d != NULL);
    int r = iol_real.puts(s);
    size_t len = strlen(s) + 1;
    stdio_post(t, d, IOL_OP_FPUTS, 1, fd, s, r < 0 ? -1 : (int64_t)len, len, ep, t0);
    return r;
}

/* All printf forms go to the C library's vfprintf / __vfprintf_chk (flag >= 0: the fortified one), which is
 * what its own printf, fprintf, __printf_chk… do. */
static int print(FILE *f, int flag, const char *fmt, va_list ap)
{
    struct iol_thread *t = iol_enter();
    if (t == NULL)
        return flag >= 0 ? IOL_REAL(__vfprintf_chk)(f, flag, fmt, ap) : IOL_REAL(vfprintf)(f, fmt, ap);
    int *ep = &errno;
    int fd = stream_fd(f);
    struct iol_desc *d = iol_fd_io(t, fd);
    uint64_t t0 = iol_t0(d != NULL);
    int r = flag >= 0 ? iol_real.__vfprintf_chk(f, flag, fmt, ap) : iol_real.vfprintf(f, fmt, ap);
    stdio_post(t, d, IOL_OP_FPRINTF, 1, fd, NULL, r < 0 ? -1 : r, 0, ep, t0);
    return r;
}

IOL_EXPORT int vfprintf(FILE *f, const char *fmt, va_list ap)
{
    return print(f, -1, fmt, ap);
}

IOL_EXPORT int vprintf(const char *fmt, va_list ap)
{
    return print(stdout, -1, fmt, ap);
}

IOL_EXPORT int fprintf(FILE *f, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int r = print(f, -1, fmt, ap);
    va_end(ap);
    return r;
}

IOL_EXPORT int printf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int r = print(stdout, -1, fmt, ap);
    va_end(ap);
    return r;
}

IOL_EXPORT int __vfprintf_chk(FILE *f, int flag, const char *fmt, va_list ap)
{
    return print(f, flag < 0 ? 0 : flag, fmt, ap);
}

IOL_EXPORT int __vprintf_chk(int flag, const char *fmt, va_list ap)
{
    return print(stdout, flag < 0 ? 0 : flag, fmt, ap);
}

IOL_EXPORT int __fprintf_chk(FILE *f, int flag, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int r = print(f, flag < 0 ? 0 : flag, fmt, ap);
    va_end(ap);
    return r;
}

IOL_EXPORT int __printf_chk(int flag, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int r = print(stdout, flag < 0 ? 0 : flag, fmt, ap);
    va_end(ap);
    return r;
}

/* ---- a character or a line at a time ---- */

/* fputc and its forms: a 1-byte write (the character back, or EOF). */
#define PUTC(name, params, args, stream) \
    IOL_EXPORT int name params \
    { \
        struct iol_thread *t = iol_enter(); \
        if (t == NULL) \
            return IOL_REAL(name) args; \
        int *ep = &errno; \
        int fd = stream_fd(stream); \
        struct iol_desc *d = iol_fd_io(t, fd); \
        uint64_t t0 = iol_t0(d != NULL); \
        int r = iol_real.name args; \
        stdio_post(t, d, IOL_OP_FWRITE, 1, fd, NULL, r == EOF ? -1 : 1, 1, ep, t0); \
        return r; \
    }
PUTC(fputc, (int c, FILE *f), (c, f), f)
PUTC(putc, (int c, FILE *f), (c, f), f)
PUTC(_IO_putc, (int c, FILE *f), (c, f), f)
PUTC(fputc_unlocked, (int c, FILE *f), (c, f), f)
PUTC(putc_unlocked, (int c, FILE *f), (c, f), f)
PUTC(putchar, (int c), (c), stdout)
PUTC(putchar_unlocked, (int c), (c), stdout)
#undef PUTC

/* fgetc and its forms: a 1-byte read, or at the end a 0-byte read (EOF without the error flag). */
#define GETC(name, params, args, stream) \
    IOL_EXPORT int name params \
    { \
        struct iol_thread *t = iol_enter(); \
        if (t == NULL) \
            return IOL_REAL(name) args; \
        int *ep = &errno; \
        int fd = stream_fd(stream); \
        struct iol_desc *d = iol_fd_io(t, fd); \
        uint64_t t0 = iol_t0(d != NULL); \
        int r = iol_real.name args; \
        int64_t bytes = r != EOF ? 1 : ferror_unlocked(stream) ? -1 : 0; \
        stdio_post(t, d, IOL_OP_FREAD, 0, fd, NULL, bytes, 1, ep, t0); \
        return r; \
    }
GETC(fgetc, (FILE *f), (f), f)
GETC(getc, (FILE *f), (f), f)
GETC(_IO_getc, (FILE *f), (f), f)
GETC(fgetc_unlocked, (FILE *f), (f), f)
GETC(getc_unlocked, (FILE *f), (f), f)
GETC(getchar, (void), (), stdin)
GETC(getchar_unlocked, (void), (), stdin)
#undef GETC

/* getline, getdelim: a read of the line (its length back, -1 at the end or on an error). */
static ssize_t line_post(struct iol_thread *t, struct iol_desc *d, int fd, FILE *f, ssize_t r, int *ep, uint64_t t0)
{
    int64_t bytes = r >= 0 ? r : ferror_unlocked(f) ? -1 : 0;
    stdio_post(t, d, IOL_OP_FGETS, 0, fd, NULL, bytes, 0, ep, t0);
    return r;
}

IOL_EXPORT ssize_t getline(char **line, size_t *n, FILE *f)
{
    struct iol_thread *t = iol_enter();
    if (t == NULL)
        return IOL_REAL(getline)(line, n, f);
    int *ep = &errno;
    int fd = stream_fd(f);
    struct iol_desc *d = iol_fd_io(t, fd);
    uint64_t t0 = iol_t0(d != NULL);
    return line_post(t, d, fd, f, iol_real.getline(line, n, f), ep, t0);
}

IOL_EXPORT ssize_t getdelim(char **line, size_t *n, int delim, FILE *f)
{
    struct iol_thread *t = iol_enter();
    if (t == NULL)
        return IOL_REAL(getdelim)(line, n, delim, f);
    int *ep = &errno;
    int fd = stream_fd(f);
    struct iol_desc *d = iol_fd_io(t, fd);
    uint64_t t0 = iol_t0(d != NULL);
    return line_post(t, d, fd, f, iol_real.getdelim(line, n, delim, f), ep, t0);
}

IOL_EXPORT ssize_t __getdelim(char **line, size_t *n, int delim, FILE *f)
{
    struct iol_thread *t = iol_enter();
    if (t == NULL)
        return IOL_REAL(__getdelim)(line, n, delim, f);
    int *ep = &errno;
    int fd = stream_fd(f);
    struct iol_desc *d = iol_fd_io(t, fd);
    uint64_t t0 = iol_t0(d != NULL);
    return line_post(t, d, fd, f, iol_real.__getdelim(line, n, delim, f), ep, t0);
}

/* ---- position and flushing ---- */

static void stdio_meta_post(struct iol_thread *t, struct iol_desc *d, int op, int fcount, int pcount, unsigned how,
                            int failed, int64_t result, uint64_t t0)
{
    iol_acct_meta(t, &(struct iol_meta){ (uint16_t)op, (int16_t)fcount, (int16_t)pcount, d == NULL,
                                         d != NULL ? d->file : NULL, 0, 0, (uint8_t)how },
                  failed, result, t0);
}

#define FSEEK(name, offtype) \
    IOL_EXPORT int name(FILE *f, offtype off, int whence) \
    { \
        struct iol_thread *t = iol_enter(); \
        if (t == NULL) \
            return IOL_REAL(name)(f, off, whence); \
        int *ep = &errno; \
        struct iol_desc *d = iol_fd_io(t, stream_fd(f)); \
        uint64_t t0 = iol_t0(d != NULL); \
        int r = iol_real.name(f, off, whence); \
        int e = *ep; \
        if (r == 0 && d != NULL) { \
            off64_t pos = iol_real.ftello64(f); \
            if (pos >= 0) \
                __atomic_store_n(&d->offset, (int64_t)pos, __ATOMIC_RELAXED); \
        } \
        stdio_meta_post(t, d, IOL_OP_FSEEK, IOL_F_STDIO_SEEKS, IOL_P_SEEKS, IOL_META_STDIO, r != 0, \
                        iol_result(r, e), t0); \
        *ep = e; \
        iol_leave(t); \
        return r; \
    }
FSEEK(fseek, long)
FSEEK(fseeko, off_t)
FSEEK(fseeko64, off64_t)
#undef FSEEK

#define FTELL(name, offtype) \
    IOL_EXPORT offtype name(FILE *f) \
    { \
        struct iol_thread *t = iol_enter(); \
        if (t == NULL) \
            return IOL_REAL(name)(f); \
        int *ep = &errno; \
        struct iol_desc *d = iol_fd_io(t, stream_fd(f)); \
        uint64_t t0 = iol_t0(d != NULL); \
        offtype r = iol_real.name(f); \
        int e = *ep; \
        if (r >= 0 && d != NULL) \
            __atomic_store_n(&d->offset, (int64_t)r, __ATOMIC_RELAXED); \
        stdio_meta_post(t, d, IOL_OP_FTELL, -1, -1, IOL_META_PROC, r < 0, iol_result(r, e), t0); \
        *ep = e; \
        iol_leave(t); \
        return r; \
    }
FTELL(ftell, long)
FTELL(ftello, off_t)
FTELL(ftello64, off64_t)
#undef FTELL

#define FFLUSH(name) \
    IOL_EXPORT int name(FILE *f) \
    { \
        struct iol_thread *t = iol_enter(); \
        if (t == NULL) \
            return IOL_REAL(name)(f); \
        int *ep = &errno; \
        struct iol_desc *d = f != NULL ? iol_fd_io(t, stream_fd(f)) : NULL; \
        uint64_t t0 = iol_t0(d != NULL || f == NULL); \
        int r = iol_real.name(f); \
        int e = *ep; \
        if (f == NULL) /* every stream: the process's time, no file's */ \
            iol_acct_meta(t, &(struct iol_meta){ IOL_OP_FFLUSH, -1, -1, 0, NULL, 0, 0, IOL_META_POSIX }, \
                          r != 0, iol_result(r, e), t0); \
        else \
            stdio_meta_post(t, d, IOL_OP_FFLUSH, IOL_F_STDIO_FLUSHES, -1, IOL_META_STDIO_FLUSH, r != 0, \
                            iol_result(r, e), t0); \
        *ep = e; \
        iol_leave(t); \
        return r; \
    }
FFLUSH(fflush)
FFLUSH(fflush_unlocked)
#undef FFLUSH

/* fsetpos: a seek (STDIO_SEEKS) to the position fgetpos gave; fgetpos: a tell (no file counter, as ftell).
 * Either way the stream's position is then the fpos_t's. */
#ifdef __GLIBC__
#define POS_OFFSET(pos) ((int64_t)(pos)->__pos)
#else
#define POS_OFFSET(pos) ((int64_t)iol_real.ftello64(f))
#endif

#define POS_CALL(name, postype, op, fcount, pcount, how) \
    IOL_EXPORT int name(FILE *f, postype *pos) \
    { \
        struct iol_thread *t = iol_enter(); \
        if (t == NULL) \
            return IOL_REAL(name)(f, pos); \
        int *ep = &errno; \
        struct iol_desc *d = iol_fd_io(t, stream_fd(f)); \
        uint64_t t0 = iol_t0(d != NULL); \
        int r = iol_real.name(f, pos); \
        int e = *ep; \
        if (r == 0 && d != NULL) \
            __atomic_store_n(&d->offset, POS_OFFSET(pos), __ATOMIC_RELAXED); \
        stdio_meta_post(t, d, op, fcount, pcount, how, r != 0, iol_result(r, e), t0); \
        *ep = e; \
        iol_leave(t); \
        return r; \
    }
POS_CALL(fsetpos, const fpos_t, IOL_OP_FSETPOS, IOL_F_STDIO_SEEKS, IOL_P_SEEKS, IOL_META_STDIO)
POS_CALL(fsetpos64, const fpos64_t, IOL_OP_FSETPOS, IOL_F_STDIO_SEEKS, IOL_P_SEEKS, IOL_META_STDIO)
POS_CALL(fgetpos, fpos_t, IOL_OP_FGETPOS, -1, -1, IOL_META_PROC)
POS_CALL(fgetpos64, fpos64_t, IOL_OP_FGETPOS, -1, -1, IOL_META_PROC)
#undef POS_CALL
#undef POS_OFFSET

/* rewind returns nothing: it counts as a seek to 0 whatever happened (as Darshan's does). */
IOL_EXPORT void rewind(FILE *f)
{
    struct iol_thread *t = iol_enter();
    if (t == NULL) {
        IOL_REAL(rewind)(f);
        return;
    }
    int *ep = &errno;
    struct iol_desc *d = iol_fd_io(t, stream_fd(f));
    uint64_t t0 = iol_t0(d != NULL);
    iol_real.rewind(f);
    int e = *ep;
    if (d != NULL)
        __atomic_store_n(&d->offset, 0, __ATOMIC_RELAXED);
    stdio_meta_post(t, d, IOL_OP_REWIND, IOL_F_STDIO_SEEKS, IOL_P_SEEKS, IOL_META_STDIO, 0, 0, t0);
    *ep = e;
    iol_leave(t);
}
