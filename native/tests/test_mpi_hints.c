/* test_mpi_hints.c — MPI hints as IOR reads them: the environment, then the file (a later key wins), the
 * spellings IOR takes, and every line IOR would skip or crash on refused naming the file and line. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend/mpi_hints.h"
#include "check.h"

static char path[] = "/tmp/iolens-hints-XXXXXX";

static int collect(const char *content, struct iol_hints *h, struct iol_err *err)
{
    FILE *fp = fopen(path, "w");
    if (!fp) return -2;
    fputs(content, fp);
    fclose(fp);
    memset(h, 0, sizeof *h);
    *err = (struct iol_err){0, ""};
    return iol_hints_collect(path, h, err);
}

/* The message of a refused file, which must name the file and `where` (":LINE: ...") and say `what`. */
static void refused(const char *content, const char *where, const char *what)
{
    struct iol_hints h;
    struct iol_err err;
    char want[256];
    snprintf(want, sizeof want, "-U %s%s", path, where);
    int rc = collect(content, &h, &err);
    CHECK(rc == -1 && err.code == IOL_ERR_USAGE && strstr(err.msg, want) && strstr(err.msg, what),
          "%s -> rc %d: %s", content, rc, err.msg);
    iol_hints_free(&h);
}

int main(void)
{
    int fd = mkstemp(path);
    if (fd < 0) return 1;
    close(fd);
    struct iol_hints h;
    struct iol_err err;

    setenv("IOR_HINT__MPI__cb_buffer_size", "4194304", 1);
    setenv("IOR_HINT__GPFS__gpfs_hint", "yes", 1);
    CHECK(collect("# tuning\n\n  IOR_HINT__MPI__romio_cb_write = enable  \nIOR_HINT__MPI__cb_buffer_size=8388608\n"
                  "IOR_HINT__MPI__romio_cb_write=disable", &h, &err) == 0, "%s", err.msg);
    CHECK(h.n == 3, "three keys, each once: %d", h.n);
    CHECK(iol_hints_get(&h, "cb_buffer_size") && !strcmp(iol_hints_get(&h, "cb_buffer_size"), "8388608"),
          "the file's value replaces the environment's");
    CHECK(iol_hints_get(&h, "romio_cb_write") && !strcmp(iol_hints_get(&h, "romio_cb_write"), "disable"),
          "a later line of the file wins, also on a last line without a newline");
    CHECK(iol_hints_get(&h, "gpfs_hint") && !strcmp(iol_hints_get(&h, "gpfs_hint"), "yes"),
          "IOR's GPFS layer is passed under the bare key");
    iol_hints_free(&h);

    /* -H's layout, as IOR prints it. */
    memset(&h, 0, sizeof h);
    iol_hints_set(&h, "a", "1", "t", &err);
    iol_hints_set(&h, "b", "two", "t", &err);
    char buf[256] = "";
    FILE *mem = fmemopen(buf, sizeof buf, "w");
    iol_hints_print(mem, "hints passed to MPI_File_open()", &h);
    fclose(mem);
    CHECK(!strcmp(buf, "\nhints passed to MPI_File_open() {\n\ta = 1\n\tb = two\n}\n"), "layout: [%s]", buf);
    iol_hints_free(&h);

    refused("IOR_HINT__MPI__a=1\nIOR_HINT__MPI__cb_nodes\n", ":2:", "hint cb_nodes has no value");
    refused("IOR_HINT__MPI__cb_nodes =  \n", ":1:", "has no value");
    refused("romio_cb_write=enable\n", ":1:", "is not IOR_HINT__MPI__<hint>=<value>");
    refused("IOR_HINT__POSIX__x=1\n", ":1:", "is not IOR_HINT__MPI__");
    refused("IOR_HINT__MPI__=1\n", ":1:", "names no hint");
    refused("IOR_HINT__MPI__a = b c\n", ":1:", "more than one value");

    /* A bad variable is named; a missing file is refused with -U. */
    setenv("IOR_HINT__MPI__striping_factor", "", 1);
    memset(&h, 0, sizeof h);
    err = (struct iol_err){0, ""};
    CHECK(iol_hints_collect(NULL, &h, &err) == -1 &&
              strstr(err.msg, "environment variable IOR_HINT__MPI__striping_factor: hint striping_factor has no value"),
          "%s", err.msg);
    iol_hints_free(&h);
    unsetenv("IOR_HINT__MPI__striping_factor");
    unlink(path);
    memset(&h, 0, sizeof h);
    err = (struct iol_err){0, ""};
    CHECK(iol_hints_collect(path, &h, &err) == -1 && strstr(err.msg, "-U: cannot read the hints file"), "%s", err.msg);
    iol_hints_free(&h);
    return TEST_DONE();
}
