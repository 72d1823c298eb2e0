/* test_json.c — the streaming JSON writer: documents are written to memory and read back with a strict
 * parser (below), so "it parses and the values come back" is what is checked, not string shapes alone. */
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "common/json.h"

/* ---- a strict JSON parser (RFC 8259), test-only ------------------------------------------------------ */

enum jt { J_NULL, J_BOOL, J_NUM, J_STR, J_ARR, J_OBJ };

struct jv {
    enum jt t;
    bool b;
    char *raw;          /* number text, as written */
    char *str;          /* decoded string (UTF-8) */
    size_t len;         /* of str */
    int n;              /* children */
    char **keys;        /* object member names */
    struct jv **kids;
};

struct parser {
    const char *p;
    const char *err;
};

static void ws(struct parser *ps)
{
    while (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r')
        ps->p++;
}

static struct jv *fail(struct parser *ps, const char *why)
{
    if (!ps->err)
        ps->err = why;
    return NULL;
}

static void put_utf8(char *out, size_t *n, unsigned cp)
{
    if (cp < 0x80) out[(*n)++] = (char)cp;
    else if (cp < 0x800) { out[(*n)++] = (char)(0xC0 | cp >> 6); out[(*n)++] = (char)(0x80 | (cp & 0x3F)); }
    else if (cp < 0x10000) {
        out[(*n)++] = (char)(0xE0 | cp >> 12);
        out[(*n)++] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[(*n)++] = (char)(0x80 | (cp & 0x3F));
    } else {
        out[(*n)++] = (char)(0xF0 | cp >> 18);
        out[(*n)++] = (char)(0x80 | ((cp >> 12) & 0x3F));
        out[(*n)++] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[(*n)++] = (char)(0x80 | (cp & 0x3F));
    }
}

static int hex4(const char *s, unsigned *v)
{
    *v = 0;
    for (int i = 0; i < 4; i++) {
        char c = s[i];
        unsigned d = c >= '0' && c <= '9' ? (unsigned)(c - '0') : c >= 'a' && c <= 'f' ? (unsigned)(c - 'a' + 10)
                   : c >= 'A' && c <= 'F' ? (unsigned)(c - 'A' + 10) : 99;
        if (d == 99) return -1;
        *v = *v * 16 + d;
    }
    return 0;
}

/* Length of a valid UTF-8 sequence at s (strict: no overlongs, surrogates or > U+10FFFF), 0 if invalid. */
static int utf8_len(const unsigned char *s)
{
    if (s[0] < 0x80) return 1;
    int n = s[0] >= 0xC2 && s[0] <= 0xDF ? 2 : s[0] >= 0xE0 && s[0] <= 0xEF ? 3 : s[0] >= 0xF0 && s[0] <= 0xF4 ? 4 : 0;
    if (!n) return 0;
    for (int i = 1; i < n; i++)
        if ((s[i] & 0xC0) != 0x80) return 0;
    unsigned cp = s[0] & (0x7F >> n);
    for (int i = 1; i < n; i++) cp = cp << 6 | (s[i] & 0x3F);
    if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10FFFF)) || (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;
    return n;
}

static char *parse_string(struct parser *ps, size_t *len)
{
    if (*ps->p != '"') { fail(ps, "expected string"); return NULL; }
    ps->p++;
    char *out = malloc(strlen(ps->p) + 1);
    size_t n = 0;
    for (;;) {
        unsigned char c = (unsigned char)*ps->p;
        if (c == '"') { ps->p++; break; }
        if (c < 0x20) { free(out); fail(ps, "raw control character or end in string"); return NULL; }
        if (c == '\\') {
            char e = ps->p[1];
            ps->p += 2;
            switch (e) {
            case '"': out[n++] = '"'; break;
            case '\\': out[n++] = '\\'; break;
            case '/': out[n++] = '/'; break;
            case 'b': out[n++] = '\b'; break;
            case 'f': out[n++] = '\f'; break;
            case 'n': out[n++] = '\n'; break;
            case 'r': out[n++] = '\r'; break;
            case 't': out[n++] = '\t'; break;
            case 'u': {
                unsigned cp, lo;
                if (hex4(ps->p, &cp)) { free(out); fail(ps, "bad \\u escape"); return NULL; }
                ps->p += 4;
                if (cp >= 0xD800 && cp <= 0xDBFF) {
                    if (ps->p[0] != '\\' || ps->p[1] != 'u' || hex4(ps->p + 2, &lo) || lo < 0xDC00 || lo > 0xDFFF) {
                        free(out); fail(ps, "lone surrogate"); return NULL;
                    }
                    ps->p += 6;
                    cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                } else if (cp >= 0xDC00 && cp <= 0xDFFF) { free(out); fail(ps, "lone surrogate"); return NULL; }
                put_utf8(out, &n, cp);
                break;
            }
            default: free(out); fail(ps, "bad escape"); return NULL;
            }
            continue;
        }
        int l = utf8_len((const unsigned char *)ps->p);
        if (!l) { free(out); fail(ps, "invalid UTF-8 in string"); return NULL; }
        memcpy(out + n, ps->p, (size_t)l);
        n += (size_t)l;
        ps->p += l;
    }
    out[n] = '\0';
    *len = n;
    return out;
}

static struct jv *parse_value(struct parser *ps, int depth);

static struct jv *add_kid(struct jv *v, char *key, struct jv *kid)
{
    v->keys = realloc(v->keys, (size_t)(v->n + 1) * sizeof *v->keys);
    v->kids = realloc(v->kids, (size_t)(v->n + 1) * sizeof *v->kids);
    v->keys[v->n] = key;
    v->kids[v->n] = kid;
    v->n++;
    return v;
}

static void jv_free(struct jv *v)
{
    if (!v) return;
    for (int i = 0; i < v->n; i++) { free(v->keys[i]); jv_free(v->kids[i]); }
    free(v->keys); free(v->kids); free(v->raw); free(v->str); free(v);
}

static struct jv *parse_container(struct parser *ps, struct jv *v, int depth)
{
    char close = v->t == J_OBJ ? '}' : ']';
    ps->p++;
    ws(ps);
    if (*ps->p == close) { ps->p++; return v; }
    for (;;) {
        char *key = NULL;
        ws(ps);
        if (v->t == J_OBJ) {
            size_t kl;
            if (!(key = parse_string(ps, &kl))) { jv_free(v); return NULL; }
            ws(ps);
            if (*ps->p != ':') { free(key); jv_free(v); return fail(ps, "expected ':'"); }
            ps->p++;
        }
        struct jv *kid = parse_value(ps, depth + 1);
        if (!kid) { free(key); jv_free(v); return NULL; }
        add_kid(v, key, kid);
        ws(ps);
        if (*ps->p == ',') { ps->p++; continue; }
        if (*ps->p == close) { ps->p++; return v; }
        jv_free(v);
        return fail(ps, "expected ',' or closing bracket");
    }
}

static struct jv *parse_number(struct parser *ps, struct jv *v)
{
    const char *s = ps->p;
    if (*ps->p == '-') ps->p++;
    if (*ps->p == '0') ps->p++;
    else if (*ps->p >= '1' && *ps->p <= '9') while (*ps->p >= '0' && *ps->p <= '9') ps->p++;
    else { free(v); return fail(ps, "bad number"); }
    if (*ps->p == '.') {
        ps->p++;
        if (!(*ps->p >= '0' && *ps->p <= '9')) { free(v); return fail(ps, "bad fraction"); }
        while (*ps->p >= '0' && *ps->p <= '9') ps->p++;
    }
    if (*ps->p == 'e' || *ps->p == 'E') {
        ps->p++;
        if (*ps->p == '+' || *ps->p == '-') ps->p++;
        if (!(*ps->p >= '0' && *ps->p <= '9')) { free(v); return fail(ps, "bad exponent"); }
        while (*ps->p >= '0' && *ps->p <= '9') ps->p++;
    }
    v->raw = strndup(s, (size_t)(ps->p - s));
    return v;
}

static struct jv *parse_value(struct parser *ps, int depth)
{
    if (depth > 200) return fail(ps, "too deep");
    ws(ps);
    struct jv *v = calloc(1, sizeof *v);
    char c = *ps->p;
    if (c == '{' || c == '[') { v->t = c == '{' ? J_OBJ : J_ARR; return parse_container(ps, v, depth); }
    if (c == '"') { v->t = J_STR; if (!(v->str = parse_string(ps, &v->len))) { free(v); return NULL; } return v; }
    if (c == '-' || (c >= '0' && c <= '9')) { v->t = J_NUM; return parse_number(ps, v); }
    if (!strncmp(ps->p, "true", 4)) { v->t = J_BOOL; v->b = true; ps->p += 4; return v; }
    if (!strncmp(ps->p, "false", 5)) { v->t = J_BOOL; ps->p += 5; return v; }
    if (!strncmp(ps->p, "null", 4)) { v->t = J_NULL; ps->p += 4; return v; }
    free(v);
    return fail(ps, "unexpected character");
}

/* Parses a whole document; NULL (and a message on stderr) if it is not strict JSON. */
static struct jv *parse_doc(const char *text)
{
    struct parser ps = { text, NULL };
    struct jv *v = parse_value(&ps, 0);
    if (v) {
        ws(&ps);
        if (*ps.p != '\0') { jv_free(v); v = fail(&ps, "trailing garbage"); }
    }
    if (!v)
        fprintf(stderr, "parse error: %s at offset %td in:\n%s\n", ps.err, ps.p - text, text);
    return v;
}

static struct jv *get(const struct jv *v, const char *key)
{
    for (int i = 0; v && v->t == J_OBJ && i < v->n; i++)
        if (!strcmp(v->keys[i], key)) return v->kids[i];
    return NULL;
}

static struct jv *at(const struct jv *v, int i)
{
    return v && v->t == J_ARR && i < v->n ? v->kids[i] : NULL;
}

/* ---- helpers ------------------------------------------------------------------------------------------ */

struct mem {
    char *buf;
    size_t len;
    FILE *fp;
};

static void mem_open(struct mem *m)
{
    m->buf = NULL;
    m->len = 0;
    m->fp = open_memstream(&m->buf, &m->len);
}

static char *mem_close(struct mem *m)
{
    fclose(m->fp);
    return m->buf;
}

static bool num_is_double(const struct jv *v, double want)
{
    if (!v || v->t != J_NUM) return false;
    double got = strtod(v->raw, NULL);
    return memcmp(&got, &want, sizeof got) == 0;   /* bit for bit: -0.0 stays -0.0 */
}

static bool str_is(const struct jv *v, const char *want)
{
    return v && v->t == J_STR && v->len == strlen(want) && !memcmp(v->str, want, v->len);
}

/* ---- tests -------------------------------------------------------------------------------------------- */

static void write_sample(struct iol_json *j)
{
    iol_json_begin_object(j);
    iol_json_kv_string(j, "name", "ior \"easy\"\\write");
    iol_json_kv_int(j, "neg", INT64_MIN);
    iol_json_kv_int(j, "pos", INT64_MAX);
    iol_json_kv_uint(j, "big", UINT64_MAX);
    iol_json_kv_double(j, "pi", 3.141592653589793);
    iol_json_kv_double(j, "whole", 3.0);
    iol_json_kv_double(j, "nan", NAN);
    iol_json_kv_double(j, "inf", -INFINITY);
    iol_json_kv_bool(j, "yes", true);
    iol_json_kv_bool(j, "no", false);
    iol_json_key(j, "nothing");
    iol_json_null(j);
    iol_json_kv_string(j, "null_string", NULL);
    iol_json_key(j, "empty_obj");
    iol_json_begin_object(j);
    iol_json_end_object(j);
    iol_json_key(j, "empty_arr");
    iol_json_begin_array(j);
    iol_json_end_array(j);
    iol_json_key(j, "phases");
    iol_json_begin_array(j);
    for (int i = 0; i < 3; i++) {
        iol_json_begin_object(j);
        iol_json_kv_int(j, "i", i);
        iol_json_key(j, "lat");
        iol_json_begin_array(j);
        iol_json_uint(j, 100u * (unsigned)i);
        iol_json_double(j, 0.1 * i);
        iol_json_begin_array(j);
        iol_json_end_array(j);
        iol_json_end_array(j);
        iol_json_end_object(j);
    }
    iol_json_end_array(j);
    iol_json_end_object(j);
}

static void check_sample(const struct jv *d, const char *mode)
{
    CHECK(d && d->t == J_OBJ && d->n == 15, "%s: top object with 15 members", mode);
    CHECK(str_is(get(d, "name"), "ior \"easy\"\\write"), "%s: string with quote and backslash", mode);
    CHECK(get(d, "neg") && !strcmp(get(d, "neg")->raw, "-9223372036854775808"), "%s: INT64_MIN", mode);
    CHECK(get(d, "pos") && !strcmp(get(d, "pos")->raw, "9223372036854775807"), "%s: INT64_MAX", mode);
    CHECK(get(d, "big") && !strcmp(get(d, "big")->raw, "18446744073709551615"), "%s: UINT64_MAX", mode);
    CHECK(num_is_double(get(d, "pi"), 3.141592653589793), "%s: pi round-trips", mode);
    CHECK(get(d, "whole") && !strcmp(get(d, "whole")->raw, "3.0"), "%s: 3.0 stays a float", mode);
    CHECK(get(d, "nan") && get(d, "nan")->t == J_NULL, "%s: NaN is null", mode);
    CHECK(get(d, "inf") && get(d, "inf")->t == J_NULL, "%s: -Inf is null", mode);
    CHECK(get(d, "yes") && get(d, "yes")->t == J_BOOL && get(d, "yes")->b, "%s: true", mode);
    CHECK(get(d, "no") && get(d, "no")->t == J_BOOL && !get(d, "no")->b, "%s: false", mode);
    CHECK(get(d, "nothing") && get(d, "nothing")->t == J_NULL, "%s: null", mode);
    CHECK(get(d, "null_string") && get(d, "null_string")->t == J_NULL, "%s: NULL string is null", mode);
    CHECK(get(d, "empty_obj") && get(d, "empty_obj")->t == J_OBJ && get(d, "empty_obj")->n == 0, "%s: {}", mode);
    CHECK(get(d, "empty_arr") && get(d, "empty_arr")->t == J_ARR && get(d, "empty_arr")->n == 0, "%s: []", mode);
    const struct jv *ph = get(d, "phases");
    CHECK(ph && ph->t == J_ARR && ph->n == 3, "%s: array of 3 phases", mode);
    for (int i = 0; ph && i < ph->n; i++) {
        const struct jv *lat = get(at(ph, i), "lat");
        CHECK(get(at(ph, i), "i") && strtol(get(at(ph, i), "i")->raw, NULL, 10) == i, "%s: phase %d index", mode, i);
        CHECK(lat && lat->n == 3 && num_is_double(at(lat, 1), 0.1 * i) && at(lat, 2)->t == J_ARR,
              "%s: phase %d nested values", mode, i);
    }
}

static void test_document_with_every_kind_parses_back(void)
{
    for (int indent = 0; indent <= 4; indent += 2) {
        struct mem m;
        struct iol_json j;
        mem_open(&m);
        iol_json_init(&j, m.fp, indent);
        write_sample(&j);
        CHECK(iol_json_finish(&j) == 0, "finish after a well-formed document returns 0");
        char *text = mem_close(&m);
        struct jv *d = parse_doc(text);
        check_sample(d, indent ? "pretty" : "compact");
        if (indent == 0) {
            CHECK(strchr(text, '\n') == text + strlen(text) - 1, "compact output is one line");
        } else {
            char needle[32];   /* the phase objects sit at depth 2 */
            snprintf(needle, sizeof needle, "\n%*s{\n", 2 * indent, "");
            CHECK(strstr(text, needle) != NULL, "pretty output is indented by level:\n%s", text);
        }
        jv_free(d);
        free(text);
    }
}

/* The same small document, written with the given indent. */
static char *write_layout_sample(int indent)
{
    struct mem m;
    struct iol_json j;
    mem_open(&m);
    iol_json_init(&j, m.fp, indent);
    iol_json_begin_object(&j);
    iol_json_kv_int(&j, "a", 1);
    iol_json_key(&j, "b");
    iol_json_begin_array(&j);
    iol_json_bool(&j, true);
    iol_json_null(&j);
    iol_json_end_array(&j);
    iol_json_key(&j, "c");
    iol_json_begin_object(&j);
    iol_json_end_object(&j);
    iol_json_end_object(&j);
    iol_json_finish(&j);
    return mem_close(&m);
}

static void test_exact_layout(void)
{
    char *text = write_layout_sample(2);
    CHECK(!strcmp(text, "{\n  \"a\": 1,\n  \"b\": [\n    true,\n    null\n  ],\n  \"c\": {}\n}\n"), "pretty:\n%s", text);
    free(text);

    text = write_layout_sample(0);
    CHECK(!strcmp(text, "{\"a\":1,\"b\":[true,null],\"c\":{}}\n"), "compact: %s", text);
    free(text);
}

static char *write_one_string(const char *s)
{
    struct mem m;
    struct iol_json j;
    mem_open(&m);
    iol_json_init(&j, m.fp, 0);
    iol_json_begin_array(&j);
    iol_json_string(&j, s);
    iol_json_end_array(&j);
    iol_json_finish(&j);
    return mem_close(&m);
}

static void test_strings_escape_and_repair_utf8(void)
{
    static const struct { const char *in, *want; } cases[] = {
        { "plain", "plain" },
        { "", "" },
        { "tab\there\nnew\rret", "tab\there\nnew\rret" },
        { "\x01\x02\x1f\x7f end", "\x01\x02\x1f\x7f end" },
        { "quote\" back\\ slash/", "quote\" back\\ slash/" },
        { "caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80", "caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80" },   /* é € 😀 */
        { "lone \x80 cont", "lone \xEF\xBF\xBD cont" },
        { "overlong \xC0\xAF", "overlong \xEF\xBF\xBD\xEF\xBF\xBD" },
        { "surrogate \xED\xA0\x80", "surrogate \xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD" },
        { "too big \xF4\x90\x80\x80", "too big \xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD" },
        { "truncated \xE2\x82", "truncated \xEF\xBF\xBD" },            /* a cut sequence is one U+FFFD */
        { "cut \xF0\x9F\x98 then", "cut \xEF\xBF\xBD then" },
        { "\xFF\xFE", "\xEF\xBF\xBD\xEF\xBF\xBD" },
        { "\xE2\x82\xAC\xE2", "\xE2\x82\xAC\xEF\xBF\xBD" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *text = write_one_string(cases[i].in);
        struct jv *d = parse_doc(text);
        CHECK(d && d->n == 1 && str_is(at(d, 0), cases[i].want), "string case %zu round-trips: %s", i, text);
        jv_free(d);
        free(text);
    }
    char *text = write_one_string("a\x01z");
    CHECK(strstr(text, "\\u0001") != NULL, "control characters are written as \\u00XX: %s", text);
    free(text);
    /* every single byte value, and random byte soup, always gives valid JSON */
    char soup[257];
    for (int b = 1; b < 256; b++)
        soup[b - 1] = (char)b;
    soup[255] = '\0';
    text = write_one_string(soup);
    struct jv *d = parse_doc(text);
    CHECK(d != NULL, "all byte values give a parsable string");
    jv_free(d);
    free(text);
    uint64_t x = 88172645463325252ULL;
    for (int round = 0; round < 2000; round++) {
        char s[64];
        for (int k = 0; k < 63; k++) {
            x ^= x << 13; x ^= x >> 7; x ^= x << 17;
            s[k] = (char)(x % 255 + 1);
        }
        s[63] = '\0';
        text = write_one_string(s);
        d = parse_doc(text);
        bool ok = d != NULL;
        jv_free(d);
        free(text);
        if (!ok) { CHECK(0, "random bytes round %d", round); break; }
    }
}

static void test_doubles_round_trip(void)
{
    double vals[] = { 0.0, -0.0, 0.1, 1.0 / 3, 2.0 / 3, 1e300, -1e-300, 5e-324, DBL_MAX, DBL_MIN, 123456789012345678.0,
                      1e15, 1e16, 1e17, 0.3, 100.0, 2.5e-7, 9007199254740993.0 };
    uint64_t x = 0x9e3779b97f4a7c15ULL;
    struct mem m;
    struct iol_json j;
    mem_open(&m);
    iol_json_init(&j, m.fp, 0);
    iol_json_begin_array(&j);
    enum { NRAND = 20000 };
    double *rand_vals = malloc(NRAND * sizeof *rand_vals);
    for (size_t i = 0; i < sizeof vals / sizeof vals[0]; i++)
        iol_json_double(&j, vals[i]);
    for (int i = 0; i < NRAND; i++) {
        double v;
        do {
            x ^= x << 13; x ^= x >> 7; x ^= x << 17;
            memcpy(&v, &x, sizeof v);
        } while (!isfinite(v));
        if (i % 2) v = (double)(x % 1000000) / 1000.0;   /* "ordinary" values, e.g. seconds */
        rand_vals[i] = v;
        iol_json_double(&j, v);
    }
    iol_json_end_array(&j);
    iol_json_finish(&j);
    char *text = mem_close(&m);
    struct jv *d = parse_doc(text);
    size_t nfixed = sizeof vals / sizeof vals[0];
    CHECK(d && d->n == (int)(nfixed + NRAND), "array of every double");
    for (size_t i = 0; d && i < nfixed; i++)
        CHECK(num_is_double(at(d, (int)i), vals[i]), "double %.17g round-trips (written %s)", vals[i],
              at(d, (int)i) ? at(d, (int)i)->raw : "?");
    int bad = 0;
    for (int i = 0; d && i < NRAND && bad < 5; i++)
        if (!num_is_double(at(d, (int)nfixed + i), rand_vals[i])) {
            bad++;
            CHECK(0, "random double %.17g round-trips (written %s)", rand_vals[i], at(d, (int)nfixed + i)->raw);
        }
    CHECK(d && !strcmp(at(d, 2)->raw, "0.1"), "0.1 is written shortest, not 0.10000000000000001");
    CHECK(d && !strcmp(at(d, 1)->raw, "-0.0"), "-0.0 keeps its sign: %s", d ? at(d, 1)->raw : "");
    jv_free(d);
    free(text);
    free(rand_vals);
}

static void test_finish_closes_open_containers(void)
{
    struct mem m;
    struct iol_json j;
    mem_open(&m);
    iol_json_init(&j, m.fp, 2);
    iol_json_begin_object(&j);
    iol_json_kv_string(&j, "status", "running");
    iol_json_key(&j, "phases");
    iol_json_begin_array(&j);
    iol_json_begin_object(&j);
    iol_json_kv_int(&j, "bytes", 42);
    iol_json_key(&j, "hist");   /* the run dies here: key written, value never comes */
    CHECK(iol_json_finish(&j) == 0, "closing a half-written document is not misuse");
    char *text = mem_close(&m);
    struct jv *d = parse_doc(text);
    const struct jv *p0 = at(get(d, "phases"), 0);
    CHECK(d && str_is(get(d, "status"), "running"), "half document parses");
    CHECK(p0 && get(p0, "bytes") && get(p0, "hist") && get(p0, "hist")->t == J_NULL,
          "pending key gets null, earlier values kept");
    jv_free(d);
    free(text);
}

static void check_misuse(const char *what, void (*writer)(struct iol_json *))
{
    struct mem m;
    struct iol_json j;
    mem_open(&m);
    iol_json_init(&j, m.fp, 1);
    writer(&j);
    CHECK(iol_json_finish(&j) == -1, "%s: finish reports misuse", what);
    char *text = mem_close(&m);
    struct jv *d = parse_doc(text);
    CHECK(d != NULL, "%s: output still parses", what);
    jv_free(d);
    free(text);
}

static void value_without_key(struct iol_json *j) { iol_json_begin_object(j); iol_json_int(j, 1); iol_json_kv_int(j, "a", 2); }
static void key_in_array(struct iol_json *j) { iol_json_begin_array(j); iol_json_key(j, "k"); iol_json_int(j, 1); }
static void wrong_close(struct iol_json *j) { iol_json_begin_array(j); iol_json_int(j, 1); iol_json_end_object(j); iol_json_end_array(j); }
static void two_keys(struct iol_json *j) { iol_json_begin_object(j); iol_json_key(j, "a"); iol_json_key(j, "b"); iol_json_int(j, 1); }
static void too_deep(struct iol_json *j)
{
    for (int i = 0; i < IOL_JSON_MAX_DEPTH + 10; i++) {
        iol_json_begin_array(j);
        iol_json_int(j, i);
    }
    for (int i = 0; i < 5; i++)
        iol_json_end_array(j);
}

static void test_misuse_is_reported_but_output_parses(void)
{
    check_misuse("value without key", value_without_key);
    check_misuse("key in array", key_in_array);
    check_misuse("wrong closing call", wrong_close);
    check_misuse("two keys in a row", two_keys);
    check_misuse("nesting deeper than the limit", too_deep);
}

int main(void)
{
    test_document_with_every_kind_parses_back();
    test_exact_layout();
    test_strings_escape_and_repair_utf8();
    test_doubles_round_trip();
    test_finish_closes_open_containers();
    test_misuse_is_reported_but_output_parses();
    return TEST_DONE();
}
