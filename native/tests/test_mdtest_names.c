/* test_mdtest_names.c — mdtest's layout: tree numbering and nesting, item names, and the geometry rules
 * for -n, -I, -z, -b, -L. */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "workload/mdtest_internal.h"

static struct mdtest_cfg cfg_of(int64_t n, int64_t I, int64_t z, int64_t b, int leaf)
{
    struct mdtest_cfg c;
    memset(&c, 0, sizeof c);
    c.items = n;
    c.items_per_dir = I;
    c.depth = z;
    c.branch = b;
    c.leaf_only = leaf;
    return c;
}

int main(void)
{
    char buf[4096];
    int n = mdtest_tree_dir(buf, sizeof buf, "/d/test-dir.0-0", -1, 0, 1);
    CHECK(n > 0 && !strcmp(buf, "/d/test-dir.0-0/mdtest_tree.0"), "root: %s", buf);
    /* branch 3: 5's parent is 1, 1's parent is the root */
    mdtest_tree_dir(buf, sizeof buf, "/d/t", -1, 5, 3);
    CHECK(!strcmp(buf, "/d/t/mdtest_tree.0/mdtest_tree.1/mdtest_tree.5"), "nested: %s", buf);
    mdtest_tree_dir(buf, sizeof buf, "/d/t", 7, 12, 3);
    CHECK(!strcmp(buf, "/d/t/mdtest_tree.7.0/mdtest_tree.7.3/mdtest_tree.7.12"), "unique nested: %s", buf);
    n = mdtest_tree_dir(buf, sizeof buf, "/d/t", 1, 0, 2);
    n = mdtest_item_name(buf, sizeof buf, n, MDTEST_FILE, 1, 42);
    CHECK(n > 0 && !strcmp(buf, "/d/t/mdtest_tree.1.0/file.mdtest.1.42"), "item: %s", buf);
    mdtest_item_name(buf, sizeof buf, (int)strlen("/x"), MDTEST_DIR, 0, 0);
    CHECK(!strcmp(buf + 2, "/dir.mdtest.0.0"), "dir item: %s", buf);
    /* Every length of number, each digit: the same text as printf's. */
    static const uint64_t nums[] = {0, 7, 9, 10, 42, 99, 100, 101, 909, 999, 1000, 65535, 99999, 100000,
                                    1234567, 9876543210ULL, 18446744073709551615ULL};
    for (size_t i = 0; i < sizeof nums / sizeof nums[0]; i++) {
        char want[64];
        snprintf(want, sizeof want, "/x/file.mdtest.%d.%llu", (int)(i * 37), (unsigned long long)nums[i]);
        strcpy(buf, "/x");
        n = mdtest_item_name(buf, sizeof buf, 2, MDTEST_FILE, (int)(i * 37), nums[i]);
        CHECK(n == (int)strlen(want) && !strcmp(buf, want), "number %llu: %s", (unsigned long long)nums[i], buf);
    }
    CHECK(mdtest_tree_dir(buf, 20, "/a/very/long/test/dir", -1, 5, 3) < 0, "overflow must be refused");
    mdtest_testdir(buf, sizeof buf, "/d", 2, 3);
    CHECK(!strcmp(buf, "/d/test-dir.2-3"), "testdir: %s", buf);

    struct mdtest_geometry g;
    struct iol_err err = {0, ""};
    struct mdtest_cfg c = cfg_of(1000, 0, 0, 0, 0);
    CHECK(mdtest_geometry(&c, &g, &err) == 0 && g.items == 1000 && g.dirs_in_tree == 1 && g.loops == 1,
          "flat: items %llu dirs %llu", (unsigned long long)g.items, (unsigned long long)g.dirs_in_tree);
    c = cfg_of(100, 0, 2, 3, 0);   /* 1 + 3 + 9 = 13 dirs, 100/13 = 7 per dir, 91 items */
    CHECK(mdtest_geometry(&c, &g, &err) == 0 && g.dirs_in_tree == 13 && g.items_per_dir == 7 && g.items == 91,
          "tree: %llu dirs, %llu per dir, %llu items", (unsigned long long)g.dirs_in_tree,
          (unsigned long long)g.items_per_dir, (unsigned long long)g.items);
    c = cfg_of(100, 0, 2, 3, 1);   /* leaves only: 9 leaves, 11 per leaf, 99 items, first leaf is 4 */
    CHECK(mdtest_geometry(&c, &g, &err) == 0 && g.leaves == 9 && g.items_per_dir == 11 && g.items == 99 &&
          g.first_item_dir == 4, "leaf: %llu per dir, %llu items, first %llu", (unsigned long long)g.items_per_dir,
          (unsigned long long)g.items, (unsigned long long)g.first_item_dir);
    c = cfg_of(40, 10, 0, 0, 0);   /* -I splitting: 4 test directories of 10 */
    CHECK(mdtest_geometry(&c, &g, &err) == 0 && g.loops == 4 && g.items_per_loop == 10 && g.items == 40,
          "-I split: %llu loops", (unsigned long long)g.loops);
    c = cfg_of(0, 5, 1, 2, 0);     /* -I alone: 5 items in each of 3 dirs */
    CHECK(mdtest_geometry(&c, &g, &err) == 0 && g.items == 15 && g.loops == 1, "-I alone: %llu",
          (unsigned long long)g.items);
    c = cfg_of(45, 10, 0, 0, 0);
    iol_err_clear(&err);
    CHECK(mdtest_geometry(&c, &g, &err) != 0 && strstr(err.msg, "-I"), "45 items in dirs of 10 must be refused");
    c = cfg_of(2, 0, 2, 3, 0);
    iol_err_clear(&err);
    CHECK(mdtest_geometry(&c, &g, &err) != 0 && strstr(err.msg, "-n"), "2 items cannot fill 13 dirs");

    struct mdtest_paths p;
    CHECK(mdtest_split_dirs("/a@/b/@c", &p, &err) == 0 && p.count == 3 && !strcmp(p.dir[1], "/b") &&
          !strcmp(p.dir[2], "c"), "split @: %d", p.count);
    iol_err_clear(&err);
    CHECK(mdtest_split_dirs("/a@@/b", &p, &err) != 0, "empty directory between @ must be refused");
    return TEST_DONE();
}
