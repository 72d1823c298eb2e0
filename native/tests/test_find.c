/* test_find.c — the find workload's pure parts: -size as find reads it (units rounded up, +/-), -newer's
 * strict comparison, path joining, the entry partition of shared directories (which rank evaluates how many
 * entries of a step), and the command-line pre-pass that accepts find's one-dash predicates without touching
 * their values. */
#include <string.h>

#include "check.h"
#include "workload/find.h"
#include "workload/run_info.h"

static int size_matches(const char *spec, uint64_t bytes)
{
    struct find_size s;
    struct iol_err err = {0, ""};
    if (find_size_parse(spec, &s, &err) != 0) return -1;
    return find_size_match(&s, bytes);
}

static void test_size(void)
{
    /* c: exact bytes (IO500's -size 3901c) */
    CHECK(size_matches("3901c", 3901) == 1, "3901c matches 3901 bytes");
    CHECK(size_matches("3901c", 3900) == 0, "3901c does not match 3900");
    CHECK(size_matches("3901c", 3902) == 0, "3901c does not match 3902");
    CHECK(size_matches("0c", 0) == 1, "0c matches empty");
    CHECK(size_matches("+10c", 11) == 1 && size_matches("+10c", 10) == 0, "+10c is strictly more");
    CHECK(size_matches("-10c", 9) == 1 && size_matches("-10c", 10) == 0, "-10c is strictly less");
    /* no unit: 512-byte blocks, rounded up */
    CHECK(size_matches("1", 1) == 1 && size_matches("1", 512) == 1 && size_matches("1", 513) == 0, "1 = one block");
    CHECK(size_matches("2", 513) == 1, "513 bytes are 2 blocks");
    /* find's famous rounding: -size -1M matches only empty files */
    CHECK(size_matches("-1M", 0) == 1 && size_matches("-1M", 1) == 0, "-1M matches only empty files");
    CHECK(size_matches("1k", 1) == 1 && size_matches("1k", 1024) == 1 && size_matches("1k", 1025) == 0, "k rounds up");
    CHECK(size_matches("1G", 1073741824ULL) == 1, "G is GiB");
    CHECK(size_matches("3w", 6) == 1 && size_matches("3w", 7) == 0, "w is 2 bytes");

    const char *bad[] = {"", "c", "+", "12x", "1.5k", "12cc", "1K", "-", "99999999999999999999999c"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct find_size s;
        struct iol_err err = {0, ""};
        CHECK(find_size_parse(bad[i], &s, &err) == -1, "'%s' must be refused", bad[i]);
        CHECK(err.code == IOL_ERR_USAGE && strstr(err.msg, "-size") != NULL, "'%s': message names -size: %s", bad[i],
              err.msg);
    }
}

static void test_newer(void)
{
    struct find_preds p;
    memset(&p, 0, sizeof p);
    p.newer_sec = 100;
    p.newer_nsec = 500;
    CHECK(find_newer_match(&p, 100, 501) == 1, "a nanosecond later is newer");
    CHECK(find_newer_match(&p, 100, 500) == 0, "the same time is not newer (strictly)");
    CHECK(find_newer_match(&p, 99, 999999999) == 0, "earlier is not newer");
    CHECK(find_newer_match(&p, 101, 0) == 1, "a later second is newer");
}

static void test_join_and_owner(void)
{
    char out[16];
    CHECK(find_join(out, sizeof out, "", "a") == 1 && strcmp(out, "a") == 0, "root-level name: %s", out);
    CHECK(find_join(out, sizeof out, "a/b", "c") == 5 && strcmp(out, "a/b/c") == 0, "nested: %s", out);
    CHECK(find_join(out, 5, "abc", "d") == -1, "too long is refused");
    /* every index has exactly one owner, and N consecutive indexes cover every rank once */
    int seen[7] = {0};
    for (uint64_t i = 70; i < 77; i++) seen[find_entry_owner(i, 7)]++;
    int ok = 1;
    for (int k = 0; k < 7; k++) ok &= seen[k] == 1;
    CHECK(ok, "7 consecutive entries go to 7 different ranks");
    CHECK(find_entry_owner(12345, 1) == 0, "one rank owns everything");
}

static uint64_t plan_sum(const uint64_t *counts, int n)
{
    uint64_t s = 0;
    for (int i = 0; i < n; i++) s += counts[i];
    return s;
}

static void test_share_plan(void)
{
    int order[4];
    uint64_t counts[4];
    /* No measure yet: an equal split, the remainder to the lowest ranks. */
    uint64_t idle[4] = {0, 0, 0, 0};
    find_share_plan(10, idle, 0, 0, 4, order, counts);
    CHECK(counts[0] == 3 && counts[1] == 3 && counts[2] == 2 && counts[3] == 2, "equal split %llu %llu %llu %llu",
          (unsigned long long)counts[0], (unsigned long long)counts[1], (unsigned long long)counts[2],
          (unsigned long long)counts[3]);
    /* 1000 ns per entry; the reader (rank 0) is 600 us busier: it gets 300 fewer of 1000 at 2 ranks. */
    uint64_t busy[2] = {600000, 0};
    find_share_plan(1000, busy, 1000000, 1000, 2, order, counts);
    CHECK(counts[0] == 200 && counts[1] == 800, "levelled: %llu %llu", (unsigned long long)counts[0],
          (unsigned long long)counts[1]);
    /* A reader far ahead gets nothing; the others share evenly. */
    uint64_t far[3] = {0, 10000000000ULL, 0};
    find_share_plan(101, far, 5000, 100, 3, order, counts);
    CHECK(counts[1] == 0 && counts[0] == 51 && counts[2] == 50, "busy reader skipped: %llu %llu %llu",
          (unsigned long long)counts[0], (unsigned long long)counts[1], (unsigned long long)counts[2]);
    /* Whatever the figures, every entry goes to exactly one rank. */
    uint64_t odd[4] = {7, 123456789, 42, 99999};
    for (uint64_t n = 0; n < 50; n++) {
        find_share_plan(n * 37 + 1, odd, 3 + n, 1 + n % 7, 4, order, counts);
        CHECK(plan_sum(counts, 4) == n * 37 + 1, "plan of %llu entries sums to %llu", (unsigned long long)(n * 37 + 1),
              (unsigned long long)plan_sum(counts, 4));
    }
    find_share_plan(5, idle, 100, 10, 1, order, counts);
    CHECK(counts[0] == 5, "one rank takes all");
}

static void test_normalize(void)
{
    struct find_cfg cfg;
    struct iol_run_info info;
    struct iol_optset sets[2] = {{find_options, &cfg}, {iol_run_options, &info}};
    struct iol_err err = {0, ""};
    CHECK(iol_opts_defaults(sets, 2, &err) == 0, "defaults: %s", err.msg);

    char *argv[] = {"/d", "-newer", "/ref", "-name", "-weird*", "-size", "-5c", "--json", "-name", "--np", "2"};
    int argc = (int)(sizeof argv / sizeof argv[0]);
    CHECK(find_parse_argv(sets, 2, argc, argv, &err) == 0, "parse: %s", err.msg);
    CHECK(strcmp(cfg.root, "/d") == 0, "DIR is the positional argument: %s", cfg.root);
    CHECK(strcmp(cfg.newer, "/ref") == 0, "-newer: %s", cfg.newer);
    CHECK(strcmp(cfg.name, "-weird*") == 0, "a -name value starting with '-' is kept: %s", cfg.name);
    CHECK(strcmp(cfg.size, "-5c") == 0, "-size -5c is a value: %s", cfg.size);
    CHECK(strcmp(info.json_path, "-name") == 0, "--json's value is not taken for a predicate: %s", info.json_path);
    CHECK(info.np == 2, "--np still parses");
    CHECK(strcmp(argv[1], "-newer") == 0, "the caller's argv is untouched (it is echoed in the document)");

    char *bad1[] = {"/d", "-type", "f"};
    err.code = 0;
    CHECK(find_parse_argv(sets, 2, 3, bad1, &err) == -1 && strstr(err.msg, "-type") != NULL, "-type: %s", err.msg);
    char *bad2[] = {"/d", "-name"};
    err.code = 0;
    CHECK(find_parse_argv(sets, 2, 2, bad2, &err) == -1 && strstr(err.msg, "-name: missing value") != NULL, "%s",
          err.msg);
    char *bad3[] = {"/d", "/e"};
    err.code = 0;
    iol_opts_defaults(sets, 2, &err);
    CHECK(find_parse_argv(sets, 2, 2, bad3, &err) == -1 && strstr(err.msg, "'/e'") != NULL, "two DIRs: %s", err.msg);
    char *bad4[] = {"/d", "-name", ""};
    err.code = 0;
    iol_opts_defaults(sets, 2, &err);
    CHECK(find_parse_argv(sets, 2, 3, bad4, &err) == -1 && strstr(err.msg, "-name: empty") != NULL, "%s", err.msg);
}

int main(void)
{
    test_size();
    test_newer();
    test_join_and_owner();
    test_share_plan();
    test_normalize();
    return TEST_DONE();
}
