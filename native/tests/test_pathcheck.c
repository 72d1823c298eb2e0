/* test_pathcheck.c — the directory diagnosis names the first component that is the problem, and the space
 * check adds up per file system and refuses what does not fit. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "common/pathcheck.h"
#include "common/space.h"

int main(void)
{
    char base[] = "/tmp/iolens-pathcheck-XXXXXX";
    if (!mkdtemp(base)) return 1;
    char file[128], sub[160], deep[200], msg[512], missing[200];
    snprintf(file, sizeof file, "%s/afile", base);
    FILE *fp = fopen(file, "w");
    if (fp) fclose(fp);
    snprintf(sub, sizeof sub, "%s/sub", file);
    snprintf(deep, sizeof deep, "%s/sub/deeper", file);
    snprintf(missing, sizeof missing, "%s/no/such", base);

    CHECK(iol_dir_problem(base, msg, sizeof msg) == 0, "an existing directory is fine");
    CHECK(iol_dir_problem(sub, msg, sizeof msg) == -1 && strstr(msg, "is a file, not a directory") &&
              strstr(msg, file) && !strstr(msg, "/sub"), "a file on the way is named: %s", msg);
    CHECK(iol_dir_problem(deep, msg, sizeof msg) == -1 && strstr(msg, "is a file"), "deeper: %s", msg);
    CHECK(iol_dir_problem(file, msg, sizeof msg) == -1 && strstr(msg, "is a file"), "the file itself: %s", msg);
    CHECK(iol_dir_problem(missing, msg, sizeof msg) == -1 && strstr(msg, "does not exist") &&
              !strstr(msg, "such"), "the first missing component: %s", msg);
    CHECK(iol_dir_problem("/dev/null/x", msg, sizeof msg) == -1 && strstr(msg, "'/dev/null' is not a directory"),
          "a device: %s", msg);

    struct iol_space sp;
    struct iol_err err = {0, ""};
    sp.n = 0;
    iol_space_add(&sp, base, 1000, 1);
    iol_space_add(&sp, base, 1000, 1);
    iol_space_add(&sp, missing, 1e30L, 1);   /* unknown directories are the path checks' to report */
    CHECK(sp.n == 1 && sp.fs[0].bytes == 2000 && sp.fs[0].inodes == 2, "one file system, summed (%d)", sp.n);
    CHECK(iol_space_check(&sp, "-x", "test", &err) == 0, "2000 bytes fit: %s", err.msg);
    sp.fs[0].bytes = 1e30L;
    CHECK(iol_space_check(&sp, "-x", "how", &err) == -1 && err.code == IOL_ERR_USAGE && strstr(err.msg, "-x: ") &&
              strstr(err.msg, "(how)") && strstr(err.msg, "--no-space-check"), "too big: %s", err.msg);

    unlink(file);
    rmdir(base);
    return TEST_DONE();
}
