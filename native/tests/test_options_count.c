/* test_options_count.c — counted flags (IOR's -z -z -z) and IOR's "-t=4096" form of a short option. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "common/options.h"

struct cfg {
    int level;
    uint64_t size;
    int64_t segs;
};

static const struct iol_option table[] = {
    {'z', "random", "randomOffset", IOL_OPT_COUNT, offsetof(struct cfg, level), "0", "level", 0, 0},
    {'t', "transfer", NULL, IOL_OPT_SIZE, offsetof(struct cfg, size), "1", "size", 0, 0},
    {'s', "segments", NULL, IOL_OPT_INT, offsetof(struct cfg, segs), "1", "segments", -1, 100},
    {'O', "directives", NULL, IOL_OPT_DIRECTIVES, 0, NULL, "k=v", 0, 0},
    {0},
};

static int parse(struct cfg *c, int argc, char **argv, struct iol_err *err)
{
    struct iol_optset set = {table, c};
    iol_err_clear(err);
    if (iol_opts_defaults(&set, 1, err)) return -1;
    return iol_opts_parse_argv(&set, 1, argc, argv, NULL, NULL, err);
}

int main(void)
{
    struct cfg c;
    struct iol_err err;
    char *a1[] = {"-z", "-z", "-z"};
    CHECK(parse(&c, 3, a1, &err) == 0 && c.level == 3, "-z -z -z gives 3, got %d (%s)", c.level, err.msg);
    char *a2[] = {"-zz", "--random"};
    CHECK(parse(&c, 2, a2, &err) == 0 && c.level == 3, "-zz --random gives 3, got %d", c.level);
    char *a3[] = {"--random=2"};
    CHECK(parse(&c, 1, a3, &err) == 0 && c.level == 2, "--random=2 gives 2, got %d", c.level);
    char *a4[] = {"-O", "randomOffset=1"};
    CHECK(parse(&c, 2, a4, &err) == 0 && c.level == 1, "-O randomOffset=1 gives 1, got %d", c.level);
    char *a5[] = {"-O", "randomOffset=lots"};
    CHECK(parse(&c, 2, a5, &err) != 0 && strstr(err.msg, "randomOffset"), "a bad count names the key: %s", err.msg);
    char *a6[] = {"-t=4096", "-s=-1"};
    CHECK(parse(&c, 2, a6, &err) == 0 && c.size == 4096 && c.segs == -1, "-t=4096 -s=-1: %llu %lld (%s)",
          (unsigned long long)c.size, (long long)c.segs, err.msg);
    char *a7[] = {"-t="};
    CHECK(parse(&c, 1, a7, &err) != 0 && strstr(err.msg, "-t"), "-t= alone is refused naming -t: %s", err.msg);
    return TEST_DONE();
}
