/* json.h — a small streaming JSON writer.
 *
 * It tracks nesting so commas and closing brackets are always right; strings are escaped (control characters,
 * quotes, backslashes; invalid UTF-8 bytes are replaced by U+FFFD so the output always parses); doubles that
 * are not finite are written as null. iol_json_finish() closes whatever is still open, so a run that fails
 * half way still leaves a document that parses. */
#ifndef IOL_JSON_H
#define IOL_JSON_H
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define IOL_JSON_MAX_DEPTH 64

struct iol_json {
    FILE *fp;
    int depth;
    int indent;                          /* spaces per level; 0 = compact */
    bool first[IOL_JSON_MAX_DEPTH];      /* no element written yet at this level */
    char kind[IOL_JSON_MAX_DEPTH];       /* '{' or '[' */
    bool after_key;                      /* a key was written, its value comes next */
    int error;                           /* set on misuse (value without key in an object, too deep, ...) */
};

void iol_json_init(struct iol_json *j, FILE *fp, int indent);
void iol_json_begin_object(struct iol_json *j);
void iol_json_end_object(struct iol_json *j);
void iol_json_begin_array(struct iol_json *j);
void iol_json_end_array(struct iol_json *j);
void iol_json_key(struct iol_json *j, const char *key);
void iol_json_string(struct iol_json *j, const char *s);   /* NULL writes null */
void iol_json_int(struct iol_json *j, int64_t v);
void iol_json_uint(struct iol_json *j, uint64_t v);
void iol_json_double(struct iol_json *j, double v);
void iol_json_bool(struct iol_json *j, bool v);
void iol_json_null(struct iol_json *j);
/* Closes every open container and writes a final newline. Returns 0, or -1 if misuse was detected. */
int iol_json_finish(struct iol_json *j);

/* Shorthands for "key": value members. */
void iol_json_kv_string(struct iol_json *j, const char *k, const char *v);
void iol_json_kv_int(struct iol_json *j, const char *k, int64_t v);
void iol_json_kv_uint(struct iol_json *j, const char *k, uint64_t v);
void iol_json_kv_double(struct iol_json *j, const char *k, double v);
void iol_json_kv_bool(struct iol_json *j, const char *k, bool v);

#endif
