/* json.c — streaming JSON writer (see json.h).
 *
 * Misuse (a value without a key inside an object, a key inside an array, closing the wrong container,
 * nesting deeper than IOL_JSON_MAX_DEPTH) sets j->error but the writer still emits something that parses:
 * a result document that is malformed is worse than one with a placeholder. */
#include "json.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

void iol_json_init(struct iol_json *j, FILE *fp, int indent)
{
    memset(j, 0, sizeof *j);
    j->fp = fp;
    j->indent = indent > 0 ? indent : 0;
}

/* Levels deeper than IOL_JSON_MAX_DEPTH are not recorded: the too-deep container is written as null and
 * everything inside it is dropped until it is closed. */
static bool suppressed(const struct iol_json *j)
{
    return j->depth > IOL_JSON_MAX_DEPTH;
}

static void newline_indent(struct iol_json *j, int level)
{
    if (j->indent == 0)
        return;
    fputc('\n', j->fp);
    for (int i = 0; i < level * j->indent; i++)
        fputc(' ', j->fp);
}

static void write_string(FILE *fp, const char *s);

/* Writes the separator (and, in an object, checks a key came first) before any value or container. */
static void before_value(struct iol_json *j)
{
    if (j->depth == 0)
        return;
    int top = j->depth - 1;
    if (j->kind[top] == '{') {
        if (j->after_key) {
            j->after_key = false;
            return;
        }
        /* value without a key: give it an empty key so the output still parses */
        j->error = 1;
        iol_json_key(j, "");
        j->after_key = false;
        return;
    }
    if (!j->first[top])
        fputc(',', j->fp);
    j->first[top] = false;
    newline_indent(j, j->depth);
}

void iol_json_key(struct iol_json *j, const char *key)
{
    if (suppressed(j))
        return;
    if (j->depth == 0 || j->kind[j->depth - 1] != '{') {
        j->error = 1;   /* a key outside an object has nowhere to go: drop it */
        return;
    }
    if (j->after_key) {
        j->error = 1;   /* two keys in a row: the first gets null */
        fputs("null", j->fp);
        j->after_key = false;
    }
    int top = j->depth - 1;
    if (!j->first[top])
        fputc(',', j->fp);
    j->first[top] = false;
    newline_indent(j, j->depth);
    write_string(j->fp, key ? key : "");
    fputs(j->indent ? ": " : ":", j->fp);
    j->after_key = true;
}

static void begin(struct iol_json *j, char kind)
{
    if (suppressed(j)) {
        j->depth++;
        return;
    }
    before_value(j);
    if (j->depth == IOL_JSON_MAX_DEPTH) {
        j->error = 1;
        fputs("null", j->fp);
        j->depth++;
        return;
    }
    fputc(kind, j->fp);
    j->kind[j->depth] = kind;
    j->first[j->depth] = true;
    j->depth++;
}

static void end(struct iol_json *j, char kind)
{
    if (j->depth == 0) {
        j->error = 1;
        return;
    }
    if (j->depth > IOL_JSON_MAX_DEPTH) {
        j->depth--;
        return;
    }
    int top = j->depth - 1;
    if (j->kind[top] != kind)
        j->error = 1;   /* close what is really open, so brackets still match */
    if (j->after_key) {
        j->error = 1;
        fputs("null", j->fp);
        j->after_key = false;
    }
    j->depth--;
    if (!j->first[top])
        newline_indent(j, j->depth);
    fputc(j->kind[top] == '{' ? '}' : ']', j->fp);
}

void iol_json_begin_object(struct iol_json *j) { begin(j, '{'); }
void iol_json_end_object(struct iol_json *j) { end(j, '{'); }
void iol_json_begin_array(struct iol_json *j) { begin(j, '['); }
void iol_json_end_array(struct iol_json *j) { end(j, '['); }

/* Length of the valid UTF-8 sequence at s, or 0 if invalid; on 0, *bad gets how many bytes form the
 * longest invalid prefix (Unicode's "maximal subpart"), each such prefix becoming one U+FFFD. */
static size_t utf8_seq(const unsigned char *s, size_t *bad)
{
    unsigned c = s[0];
    size_t n;
    unsigned lo = 0x80, hi = 0xBF;   /* allowed range of the second byte */
    if (c >= 0xC2 && c <= 0xDF) n = 2;
    else if (c >= 0xE0 && c <= 0xEF) {
        n = 3;
        if (c == 0xE0) lo = 0xA0;        /* overlong */
        if (c == 0xED) hi = 0x9F;        /* UTF-16 surrogates */
    } else if (c >= 0xF0 && c <= 0xF4) {
        n = 4;
        if (c == 0xF0) lo = 0x90;        /* overlong */
        if (c == 0xF4) hi = 0x8F;        /* above U+10FFFF */
    } else {
        *bad = 1;
        return 0;
    }
    for (size_t k = 1; k < n; k++) {
        unsigned b = s[k];   /* a NUL terminator fails the range test, so no read past the end */
        bool ok = k == 1 ? (b >= lo && b <= hi) : (b >= 0x80 && b <= 0xBF);
        if (!ok) {
            *bad = k;
            return 0;
        }
    }
    return n;
}

static void write_string(FILE *fp, const char *str)
{
    const unsigned char *s = (const unsigned char *)str;
    fputc('"', fp);
    while (*s) {
        /* copy the longest run that needs no escaping in one call */
        const unsigned char *run = s;
        while (*s >= 0x20 && *s < 0x80 && *s != '"' && *s != '\\')
            s++;
        if (s > run)
            fwrite(run, 1, (size_t)(s - run), fp);
        if (*s == 0)
            break;
        unsigned c = *s;
        if (c >= 0x80) {
            size_t bad = 0, n = utf8_seq(s, &bad);
            if (n) {
                fwrite(s, 1, n, fp);
                s += n;
            } else {
                fputs("\xEF\xBF\xBD", fp);   /* U+FFFD REPLACEMENT CHARACTER */
                s += bad;
            }
            continue;
        }
        switch (c) {
        case '"': fputs("\\\"", fp); break;
        case '\\': fputs("\\\\", fp); break;
        case '\n': fputs("\\n", fp); break;
        case '\r': fputs("\\r", fp); break;
        case '\t': fputs("\\t", fp); break;
        default: fprintf(fp, "\\u%04x", c); break;
        }
        s++;
    }
    fputc('"', fp);
}

void iol_json_string(struct iol_json *j, const char *s)
{
    if (suppressed(j))
        return;
    before_value(j);
    if (s == NULL)
        fputs("null", j->fp);
    else
        write_string(j->fp, s);
}

void iol_json_int(struct iol_json *j, int64_t v)
{
    if (suppressed(j))
        return;
    before_value(j);
    fprintf(j->fp, "%" PRId64, v);
}

void iol_json_uint(struct iol_json *j, uint64_t v)
{
    if (suppressed(j))
        return;
    before_value(j);
    fprintf(j->fp, "%" PRIu64, v);
}

/* Shortest of %.15g / %.16g / %.17g that reads back to the same double, so 0.1 prints as 0.1 and every value
 * round-trips. A ".0" is added to integral values so readers (Python's json) keep them as floats.
 * This relies on the "C" locale's decimal point; the engine never calls setlocale. */
void iol_json_double(struct iol_json *j, double v)
{
    if (suppressed(j))
        return;
    before_value(j);
    if (!isfinite(v)) {
        fputs("null", j->fp);
        return;
    }
    char buf[40];
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(buf, sizeof buf, "%.*g", prec, v);
        if (strtod(buf, NULL) == v)
            break;
    }
    if (strpbrk(buf, ".eE") == NULL)
        strcat(buf, ".0");
    fputs(buf, j->fp);
}

void iol_json_bool(struct iol_json *j, bool v)
{
    if (suppressed(j))
        return;
    before_value(j);
    fputs(v ? "true" : "false", j->fp);
}

void iol_json_null(struct iol_json *j)
{
    if (suppressed(j))
        return;
    before_value(j);
    fputs("null", j->fp);
}

int iol_json_finish(struct iol_json *j)
{
    /* Closing what is still open is the point of finish (a run that failed half way), not misuse. */
    int error = j->error;
    if (j->after_key && !suppressed(j)) {
        fputs("null", j->fp);
        j->after_key = false;
    }
    while (j->depth > 0) {
        int top = j->depth - 1;
        end(j, top < IOL_JSON_MAX_DEPTH ? j->kind[top] : '{');
    }
    j->error = error;
    fputc('\n', j->fp);
    if (fflush(j->fp) != 0 || ferror(j->fp))
        return -1;
    return j->error ? -1 : 0;
}

/* The "key": value shorthands of json.h, one per value writer. */
#define IOL_JSON_KV(kind, type)                                         \
    void iol_json_kv_##kind(struct iol_json *j, const char *k, type v)  \
    {                                                                   \
        iol_json_key(j, k);                                             \
        iol_json_##kind(j, v);                                          \
    }
IOL_JSON_KV(string, const char *)
IOL_JSON_KV(int, int64_t)
IOL_JSON_KV(uint, uint64_t)
IOL_JSON_KV(double, double)
IOL_JSON_KV(bool, bool)
#undef IOL_JSON_KV
