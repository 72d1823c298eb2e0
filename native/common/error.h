/* error.h — errors are values: library code fills a struct iol_err and returns -1; only main() prints. */
#ifndef IOL_ERROR_H
#define IOL_ERROR_H

/* Exit statuses shared by every iolens program (and read by the Python side). */
enum iol_status {
    IOL_OK = 0,
    IOL_ERR_RUNTIME = 1,  /* the run started but failed: I/O error, verification mismatch, ... */
    IOL_ERR_USAGE = 2,    /* bad input: refused before any I/O was done */
};

struct iol_err {
    int code;             /* an enum iol_status; 0 = no error */
    char msg[1024];
};

/* Records the first error only (later calls keep the first message) and returns -1 so callers can write
 * `return iol_err_set(err, IOL_ERR_USAGE, "-t: ...");`. err may be NULL. */
int iol_err_set(struct iol_err *err, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Like iol_err_set but appends ": strerror(errnum)". */
int iol_err_errno(struct iol_err *err, int code, int errnum, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
void iol_err_clear(struct iol_err *err);

#endif
