/* test_fio_plan.c — fio job options turned into a plan: fio's time units, bssplit's shares, rw modes, the
 * command line's global options and jobs, and the refusals that name the option. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "workload/fio_internal.h"

static struct fio_cfg *parse(const char *const *args, int n, struct iol_err *err)
{
    struct fio_cfg *cfg = calloc(1, sizeof *cfg);
    char *argv[32];
    for (int i = 0; i < n; i++) argv[i] = (char *)args[i];
    struct iol_optset sets[2] = {{fio_job_options, cfg}, {iol_run_options, calloc(1, sizeof(struct iol_run_info))}};
    iol_err_clear(err);
    int rc = iol_opts_defaults(sets, 2, err) || fio_parse_argv(sets, 2, n, argv, err);
    free(sets[1].cfg);
    if (rc) {
        free(cfg);
        return NULL;
    }
    return cfg;
}

static void test_times(void)
{
    struct iol_err err;
    uint64_t ns = 0;
    CHECK(fio_parse_time_ns("10", &ns, "runtime", &err) == 0 && ns == 10000000000ull, "bare number = seconds");
    CHECK(fio_parse_time_ns("500ms", &ns, "runtime", &err) == 0 && ns == 500000000ull, "ms");
    CHECK(fio_parse_time_ns("2m", &ns, "runtime", &err) == 0 && ns == 120000000000ull, "m = minutes");
    CHECK(fio_parse_time_ns("250us", &ns, "runtime", &err) == 0 && ns == 250000ull, "us");
    CHECK(fio_parse_time_ns("1h", &ns, "runtime", &err) == 0 && ns == 3600000000000ull, "h");
    iol_err_clear(&err);
    CHECK(fio_parse_time_ns("5x", &ns, "runtime", &err) == -1 && strstr(err.msg, "runtime"), "%s", err.msg);
    iol_err_clear(&err);
    CHECK(fio_parse_time_ns("-1", &ns, "ramp_time", &err) == -1 && strstr(err.msg, "ramp_time"), "%s", err.msg);
}

static void test_command_line_and_plan(void)
{
    struct iol_err err;
    const char *args[] = {"--size=1m", "--ioengine=null", "--name=a", "--rw=randrw", "--rwmixwrite=30",
                          "--bssplit=4k/50:8k:16k", "--name=b", "--stonewall", "--bs=8k", "--np", "3"};
    struct fio_cfg *cfg = parse(args, 11, &err);
    CHECK(cfg != NULL, "%s", err.msg);
    if (!cfg) return;
    CHECK(cfg->njobs == 2, "%d jobs", cfg->njobs);
    CHECK(!strcmp(cfg->jobs[0].name, "a") && !strcmp(cfg->jobs[1].name, "b"), "names");
    CHECK(cfg->jobs[1].size == 1048576 && !strcmp(cfg->jobs[1].ioengine, "null"), "globals reach every job");
    struct fio_plan p;
    CHECK(fio_plan_build(cfg, 0, &p, &err) == 0, "%s", err.msg);
    CHECK(p.random && p.has_read && p.has_write && p.rwmixread == 70, "randrw, rwmixread %d", p.rwmixread);
    CHECK(p.nbs == 3 && p.bs_cum[0] == 50 && p.bs_cum[1] == 75 && p.bs_cum[2] == 100,
          "unset shares split the rest: %u %u %u", p.bs_cum[0], p.bs_cum[1], p.bs_cum[2]);
    CHECK(p.bs_min == 4096 && p.bs_max == 16384 && p.align == 4096 && p.group == 0, "sizes");
    CHECK(fio_plan_build(cfg, 1, &p, &err) == 0 && p.group == 1 && !p.random && p.rwmixread == 100, "b");
    CHECK(p.cache == FIO_CACHE_COLD && p.seed == FIO_RANDSEED_DEFAULT, "fio's defaults");
    free(cfg);
}

static void refused(const char *const *args, int n, const char *needle)
{
    struct iol_err err;
    struct fio_cfg *cfg = parse(args, n, &err);
    int rc = cfg ? fio_validate(cfg, 1, &err) : -1;
    CHECK(rc == -1 && err.code == IOL_ERR_USAGE && strstr(err.msg, needle), "want '%s', got '%s'", needle, err.msg);
    free(cfg);
}

static void test_refusals(void)
{
    const char *a[] = {"--name=x", "--size=1m", "--bssplit=4k/60:8k/60"};
    refused(a, 3, "bssplit: percentages add up to 120");
    const char *b[] = {"--name=x", "--size=1m", "--rw=randrw", "--rwmixread=60", "--rwmixwrite=60"};
    refused(b, 5, "do not add up to 100");
    const char *c[] = {"--name=x", "--size=1m", "--time_based"};
    refused(c, 3, "time_based: needs runtime");
    const char *d[] = {"--name=x", "--size=1m", "--cache=cold", "--invalidate=0"};
    refused(d, 4, "contradicts invalidate");
    const char *e[] = {"--name=x", "--size=1m", "--ioengine=psync", "--null_delay=1-2"};
    refused(e, 4, "null_delay: only with ioengine=null");
    const char *f[] = {"--name=x", "--size=1m", "-t", "4k"};
    refused(f, 4, "-t: fio options are written --name=value");
    const char *g[] = {"--name=x", "--size=1m", "--rw=randrw", "--verify=crc32c"};
    refused(g, 4, "verify: with a mixed workload");
    const char *h[] = {"--size=1m"};
    refused(h, 1, "no job");
}

int main(void)
{
    test_times();
    test_command_line_and_plan();
    test_refusals();
    return TEST_DONE();
}
