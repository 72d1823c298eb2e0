/* paths.c — absolute paths, the working directory and the exclusion list.
 *
 * Paths are made absolute against the working directory (tracked through chdir/fchdir, read once at start)
 * or the directory a dirfd names, and normalised lexically ("." and ".." components, repeated slashes).
 * Symbolic links are not resolved: realpath() costs one lstat per component, several microseconds per open,
 * and the path the program used is usually the one its user wants to see. */
#include "rt.h"
#include "sys.h"

#include <errno.h>
#include <string.h>

uint64_t iol_hash(const char *s, size_t len)
{
    uint64_t h = 0x9E3779B97F4A7C15ull ^ len;
    while (len >= 8) {
        uint64_t w;
        memcpy(&w, s, 8);
        h = (h ^ w) * 0xff51afd7ed558ccdull;
        h ^= h >> 32;
        s += 8;
        len -= 8;
    }
    uint64_t w = 0;
    memcpy(&w, s, len);
    h = (h ^ w) * 0xc4ceb9fe1a85ec53ull;
    return h ^ (h >> 29);
}

/* The exact checks at a "/" followed by "/" or "." (j: the slash): 1 when the path is not normal there. */
static int bad_at(const char *p, size_t j)
{
    char c1 = p[j + 1];
    if (c1 == '/')
        return 1;
    char c2 = p[j + 2]; /* c1 == '.' */
    if (c2 == '\0' || c2 == '/')
        return 1;
    return c2 == '.' && (p[j + 3] == '\0' || p[j + 3] == '/');
}

/* The length of path if it is absolute and already normal (no "//", "/./", "/../", trailing "/", "/." or
 * "/.."), else -1: most paths programs use are, and need no work. */
#if defined(__SSE2__)
#include <emmintrin.h>
/* 16 bytes at a time, with aligned loads (which never cross into the next page, so reading past the string's
 * end is safe): the bits of '/', of '/' or '.', and of NUL in each block tell where a slash is followed by
 * one of them (a place to look at closely: "/.config" is normal) and where the string ends. */
static long normal_len(const char *p)
{
    if (p[0] != '/')
        return -1;
    const __m128i slash = _mm_set1_epi8('/'), dot = _mm_set1_epi8('.'), zero = _mm_setzero_si128();
    uintptr_t a = (uintptr_t)p & ~(uintptr_t)15;
    unsigned skip = (unsigned)((uintptr_t)p - a); /* bytes of the first block before the string */
    unsigned carry = 0;                            /* the previous block's last byte was '/' */
    for (const char *b = (const char *)a;; b += 16) {
        __m128i v = _mm_load_si128((const __m128i *)b);
        unsigned s = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(v, slash));
        unsigned n = s | (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(v, dot));
        unsigned z = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(v, zero));
        if (b == (const char *)a) {
            s &= ~0u << skip;
            z &= ~0u << skip;
        }
        /* bit i: byte i is "/" or "." and the byte before it is "/" */
        unsigned cand = n & ((s << 1) | carry);
        if (z != 0) {
            unsigned end = (unsigned)__builtin_ctz(z);
            cand &= (1u << end) - 1; /* the NUL is no candidate (a trailing slash is seen below) */
            while (cand != 0) {
                unsigned i = (unsigned)__builtin_ctz(cand);
                if (bad_at(p, (size_t)(b + i - 1 - p)))
                    return -1;
                cand &= cand - 1;
            }
            size_t len = (size_t)(b + end - p);
            if (len > 1 && p[len - 1] == '/')
                return -1;
            return (long)len;
        }
        while (cand != 0) {
            unsigned i = (unsigned)__builtin_ctz(cand);
            if (bad_at(p, (size_t)(b + i - 1 - p)))
                return -1;
            cand &= cand - 1;
        }
        carry = (s >> 15) & 1;
    }
}
#else
static long normal_len(const char *p)
{
    if (p[0] != '/')
        return -1;
    size_t i = 0;
    for (;;) {
        /* p[i] == '/' here */
        char c1 = p[i + 1];
        if (c1 == '\0')
            return i == 0 ? 1 : -1;
        if ((c1 == '/' || c1 == '.') && bad_at(p, i))
            return -1;
        i++;
        while (p[i] != '\0' && p[i] != '/')
            i++;
        if (p[i] == '\0')
            return (long)i;
    }
}
#endif

/* Appends the components of src to out (which holds an absolute normal path of length *len), resolving "."
 * and ".." lexically. */
static int append_components(char *out, size_t *len, const char *src)
{
    size_t n = *len;
    while (*src != '\0') {
        while (*src == '/')
            src++;
        if (*src == '\0')
            break;
        const char *e = src;
        while (*e != '\0' && *e != '/')
            e++;
        size_t clen = (size_t)(e - src);
        if (clen == 1 && src[0] == '.') {
            /* nothing */
        } else if (clen == 2 && src[0] == '.' && src[1] == '.') {
            while (n > 1 && out[n - 1] != '/')
                n--;
            if (n > 1)
                n--; /* the slash, unless it is the root */
        } else {
            if (n + 1 + clen >= PATH_MAX)
                return -1;
            if (n > 1)
                out[n++] = '/';
            memcpy(out + n, src, clen);
            n += clen;
        }
        src = e;
    }
    out[n] = '\0';
    *len = n;
    return 0;
}

static long start_from(const char *base, size_t blen, char *out)
{
    if (blen == 0 || blen >= PATH_MAX || base[0] != '/')
        return -1;
    memcpy(out, base, blen);
    out[blen] = '\0';
    return (long)blen;
}

long iol_path_resolve(int dirfd, const char *path, char *buf, const char **abs)
{
    long n = path != NULL ? normal_len(path) : -1;
    if (n > 0) { /* already absolute and normal: the program's own string */
        *abs = path;
        return n < PATH_MAX ? n : -1;
    }
    *abs = buf;
    return iol_path_abs(dirfd, path, buf);
}

long iol_path_abs(int dirfd, const char *path, char *out)
{
    if (path == NULL)
        return -1;
    long n = normal_len(path);
    if (n > 0) {
        if (n >= PATH_MAX)
            return -1;
        memcpy(out, path, (size_t)n + 1);
        return n;
    }
    if (path[0] == '/') {
        out[0] = '/';
        out[1] = '\0';
        n = 1;
    } else if (dirfd == AT_FDCWD) {
        struct iol_cwd *cwd = __atomic_load_n(&iol_g.cwd, __ATOMIC_ACQUIRE);
        if (cwd == NULL || (n = start_from(cwd->path, cwd->len, out)) < 0)
            return -1;
    } else {
        struct iol_desc *d = iol_fd_known(&iol_tls, dirfd);
        if (d != NULL) {
            n = start_from(d->file->path, d->file->len, out);
        } else {
            char link[32];
            snprintf(link, sizeof link, "/proc/self/fd/%d", dirfd);
            int saved = errno; /* the program's: a wrapper's path work must leave it alone */
            ssize_t k = iol_sys_readlinkat(AT_FDCWD, link, out, PATH_MAX - 1);
            errno = saved;
            n = k > 0 && out[0] == '/' ? k : -1;
            if (n > 0)
                out[n] = '\0';
        }
        if (n < 0)
            return -1;
    }
    size_t len = (size_t)n;
    if (append_components(out, &len, path) != 0)
        return -1;
    return (long)len;
}

/* Called on every path a program names: one masked 8-byte compare per excluded prefix (most differ from
 * the path within its first word), memcmp for the rest of a longer one (the profile directory). */
int iol_path_excluded(const char *abs, size_t len)
{
    int n = iol_g.n_excl;
    uint64_t w = 0;
    memcpy(&w, abs, len < 8 ? len : 8);
    for (int i = 0; i < n; i++) {
        size_t plen = iol_g.excl_len[i];
        if (len < plen || ((w ^ iol_g.excl_word[i]) & iol_g.excl_mask[i]) != 0)
            continue;
        if (plen > 8 && memcmp(abs + 8, iol_g.excl[i] + 8, plen - 8) != 0)
            continue;
        if (len != plen && abs[plen] != '/' && plen != 1)
            continue;
        /* the default list's /dev, but not the tmpfs /dev/shm */
        if (plen == 4 && iol_g.keep_dev_shm && iol_g.excl[i][1] == 'd' && len >= 8 && abs[5] == 's' &&
            abs[6] == 'h' && abs[7] == 'm' && (len == 8 || abs[8] == '/'))
            continue;
        return 1;
    }
    return 0;
}

/* The bytes of path[0..15] that are NUL, '/' and '.', a bit each (bit j: path[j]); the caller has made
 * sure the 16 bytes are within one page. */
struct iol_bytes16 {
    unsigned zeros, slashes, dots;
};
static inline struct iol_bytes16 bytes16(const char *path)
{
#ifdef __SSE2__
    __m128i v = _mm_loadu_si128((const __m128i *)(const void *)path);
    return (struct iol_bytes16){ (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_setzero_si128())),
                                 (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_set1_epi8('/'))),
                                 (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_set1_epi8('.'))) };
#else
    struct iol_bytes16 b = { 0, 0, 0 };
    for (unsigned j = 0; j < 16; j++) {
        b.zeros |= (unsigned)(path[j] == '\0') << j;
        b.slashes |= (unsigned)(path[j] == '/') << j;
        b.dots |= (unsigned)(path[j] == '.') << j;
    }
    return b;
#endif
}

/* iol_path_quick_excluded's work once path's second byte names a short prefix (k from quick_by_c1): 1 when
 * path starts with that prefix and surely stays under it — the prefix ends at a component boundary, and no
 * "//" or "/." follows (so no ".." can lead out, and no "//" can hide "/dev//shm"). 0: not known (the
 * caller makes the path absolute and normal, then asks iol_path_excluded). The path's first 16 bytes are
 * looked at all at once: a stat of /dev/null or /proc/self/maps is decided without a loop. */
int iol_path_quick_match(const char *path, unsigned k)
{
    /* 16 bytes may be read at once only within one page (the string may end just before an unmapped one) */
    if (((uintptr_t)path & 4095) > 4096 - 16)
        return 0;
    uint64_t w;
    __builtin_memcpy(&w, path, 8);
    unsigned i = k - 1;
    if (IOL_LIKELY(k != IOL_QUICK_SEVERAL)) {
        if (((w ^ iol_g.quick_word[i]) & iol_g.quick_mask[i]) != 0)
            return 0;
    } else {
        for (i = 0; i < (unsigned)iol_g.n_quick && ((w ^ iol_g.quick_word[i]) & iol_g.quick_mask[i]) != 0; i++)
            ;
        if (i == (unsigned)iol_g.n_quick)
            return 0;
    }
    /* the default list's /dev keeps the tmpfs /dev/shm (first: that is where most paths under /dev go) */
    if (iol_g.quick_keep_shm[i] && path[4] == '/' && path[5] == 's' && path[6] == 'h' && path[7] == 'm' &&
        (path[8] == '/' || path[8] == '\0'))
        return 0;
    unsigned len = iol_g.quick_len[i]; /* 2..8: the prefix's bytes are not NUL */
    struct iol_bytes16 b = bytes16(path);
    if (b.zeros & (1u << len))
        return 1; /* the prefix itself */
    if (!(b.slashes & (1u << len)))
        return 0; /* not at a component boundary: "/devices" under "/dev" */
    unsigned live = b.zeros != 0 ? (b.zeros & -b.zeros) - 1 : 0xFFFFu; /* the bytes before the end */
    if (((b.slashes << 1) & (b.slashes | b.dots) & live) != 0)
        return 0; /* "//" or "/." (also within the prefix, where it only sends the path the slow way) */
    if (b.zeros != 0)
        return 1;
    /* a longer path: the rest byte by byte, from the last byte looked at (a '/' there pairs with the next) */
    for (const char *q = path + 15; *q != '\0'; q++)
        if (q[0] == '/' && (q[1] == '/' || q[1] == '.'))
            return 0;
    return 1;
}

void iol_cwd_refresh(void)
{
    char buf[PATH_MAX];
    long n = iol_sys_getcwd(buf, sizeof buf);
    struct iol_cwd *c = NULL;
    if (n > 0 && buf[0] == '/') {
        size_t len = strlen(buf);
        c = iol_alloc(sizeof *c + len + 1);
        if (c != NULL) {
            c->len = len;
            memcpy(c->path, buf, len + 1);
        }
    }
    __atomic_store_n(&iol_g.cwd, c, __ATOMIC_RELEASE);
}

static void add_exclude(const char *p, size_t len)
{
    while (len > 1 && p[len - 1] == '/')
        len--;
    if (len == 0 || p[0] != '/' || iol_g.n_excl >= IOL_MAX_EXCLUDE || len > 0xFFFF)
        return;
    char *copy = iol_alloc(len + 1);
    if (copy == NULL)
        return;
    memcpy(copy, p, len);
    copy[len] = '\0';
    uint64_t w = 0, m = 0;
    size_t k = len < 8 ? len : 8;
    memcpy(&w, copy, k);
    memset(&m, 0xff, k);
    if (len <= 8 && len > 1 && iol_g.n_quick < IOL_QUICK_MAX) {
        iol_g.quick_word[iol_g.n_quick] = w;
        iol_g.quick_mask[iol_g.n_quick] = m;
        iol_g.quick_len[iol_g.n_quick] = (uint8_t)len;
        iol_g.quick_keep_shm[iol_g.n_quick] = iol_g.keep_dev_shm && len == 4 && memcmp(copy, "/dev", 4) == 0;
        uint8_t *by = &iol_g.quick_by_c1[(unsigned char)copy[1]];
        *by = *by == 0 ? (uint8_t)(iol_g.n_quick + 1) : IOL_QUICK_SEVERAL;
        iol_g.n_quick++;
    }
    iol_g.excl[iol_g.n_excl] = copy;
    iol_g.excl_len[iol_g.n_excl] = (uint16_t)len;
    iol_g.excl_word[iol_g.n_excl] = w;
    iol_g.excl_mask[iol_g.n_excl] = m;
    iol_g.n_excl++;
}

/* spec: IOLENS_PROFILE_EXCLUDE, or NULL for the default list. The profile directory is always excluded. */
void iol_exclude_init(const char *spec)
{
    if (spec == NULL) {
        spec = "/proc,/sys,/dev";
        iol_g.keep_dev_shm = 1;
    }
    while (*spec != '\0') {
        const char *e = strchr(spec, ',');
        size_t len = e != NULL ? (size_t)(e - spec) : strlen(spec);
        add_exclude(spec, len);
        spec += len;
        if (*spec == ',')
            spec++;
    }
    add_exclude(iol_g.dir, iol_g.dir_len);
}
