/* test_ledger.c — the ledger of files iolens created: names are whole lines (a name never covers another that
 * starts with it), adding many at once keeps one copy of each, a torn last line never merges with a new name,
 * removing the last name removes the file, and a view answers what the file says. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "common/ledger.h"

static char *slurp(const char *path)
{
    FILE *fp = fopen(path, "r");
    if (!fp) return NULL;
    static char buf[4096];
    size_t n = fread(buf, 1, sizeof buf - 1, fp);
    buf[n] = '\0';
    fclose(fp);
    return buf;
}

int main(void)
{
    char dir[] = "/tmp/iolens-ledger-XXXXXX";
    if (!mkdtemp(dir)) return 1;
    char path[256];
    snprintf(path, sizeof path, "%s/%s", dir, IOL_LEDGER_NAME);
    struct iol_err err = {0, ""};

    CHECK(!iol_ledger_owns(dir, "f"), "no ledger owns nothing");
    const char *names[] = {"f.00000001", "f", "0/", "0/f.00000000", "f"};
    CHECK(iol_ledger_add_many(dir, names, 5, &err) == 0, "%s", err.msg);
    CHECK(strcmp(slurp(path), "0/\n0/f.00000000\nf\nf.00000001\n") == 0, "ledger is '%s'", slurp(path));
    CHECK(iol_ledger_owns(dir, "f") && iol_ledger_owns(dir, "0/"), "listed names are owned");
    CHECK(!iol_ledger_owns(dir, "f.00000000") && !iol_ledger_owns(dir, "0") && !iol_ledger_owns(dir, "f.0000000"),
          "a name owns nothing but itself");
    CHECK(iol_ledger_add(dir, "f", &err) == 0 && strcmp(slurp(path), "0/\n0/f.00000000\nf\nf.00000001\n") == 0,
          "adding a listed name changes nothing");

    struct iol_ledger_view v;
    CHECK(iol_ledger_load(dir, &v, &err) == 0 && v.n == 4, "view of 4 names");
    CHECK(iol_ledger_view_has(&v, "0/f.00000000") && !iol_ledger_view_has(&v, "0/f"), "view answers by whole name");
    iol_ledger_view_free(&v);

    /* A torn last line (a writer killed mid-line) stays apart from the next name. */
    FILE *fp = fopen(path, "a");
    fputs("torn", fp);
    fclose(fp);
    CHECK(iol_ledger_add(dir, "g", &err) == 0, "%s", err.msg);
    CHECK(iol_ledger_owns(dir, "g") && iol_ledger_owns(dir, "torn") && !iol_ledger_owns(dir, "torng"),
          "ledger is '%s'", slurp(path));

    const char *gone[] = {"f", "torn", "not-there", "g"};
    CHECK(iol_ledger_remove_many(dir, gone, 4, &err) == 0, "%s", err.msg);
    CHECK(strcmp(slurp(path), "0/\n0/f.00000000\nf.00000001\n") == 0, "ledger is '%s'", slurp(path));
    const char *rest[] = {"0/", "0/f.00000000", "f.00000001"};
    CHECK(iol_ledger_remove_many(dir, rest, 3, &err) == 0, "%s", err.msg);
    CHECK(access(path, F_OK) != 0, "the ledger goes with its last name");
    CHECK(iol_ledger_load(dir, &v, &err) == 0 && v.n == 0 && !iol_ledger_view_has(&v, "f"), "empty view");
    iol_ledger_view_free(&v);
    CHECK(iol_ledger_remove(dir, "f", &err) == 0, "removing from no ledger is fine");
    rmdir(dir);
    return TEST_DONE();
}
