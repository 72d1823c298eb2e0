/* check.h — the tiny assertion kit of the C unit tests: a failed CHECK prints where and why and counts;
 * main() returns non-zero if any failed. */
#ifndef IOL_TEST_CHECK_H
#define IOL_TEST_CHECK_H
#include <stdio.h>

static int iol_test_failures;
static int iol_test_checks;

#define CHECK(cond, ...)                                                        \
    do {                                                                        \
        iol_test_checks++;                                                      \
        if (!(cond)) {                                                          \
            iol_test_failures++;                                                \
            fprintf(stderr, "%s:%d: CHECK(%s) failed: ", __FILE__, __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__);                                       \
            fputc('\n', stderr);                                                \
        }                                                                       \
    } while (0)

#define TEST_DONE()                                                             \
    (printf("%s: %d checks, %d failed\n", __FILE__, iol_test_checks, iol_test_failures), \
     iol_test_failures ? 1 : 0)

#endif
