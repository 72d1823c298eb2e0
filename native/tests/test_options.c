/* test_options.c — the options table: every accepted form sets the field, every bad input is refused with a
 * message naming the option as the user wrote it. */
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "common/options.h"

struct cfg {
    int fpp, write, read, direct;
    uint64_t xfer, block;
    int64_t segments;
    double ratio;
    char path[IOL_STR_MAX];
};

struct run {
    int64_t np;
    int quiet;
    char json[IOL_STR_MAX];
};

#define F(field) offsetof(struct cfg, field)
static const struct iol_option cfg_options[] = {
    { 'F', "file-per-proc", "filePerProc", IOL_OPT_FLAG, F(fpp), "0", "one file per rank", 0, 0 },
    { 'w', "write", "writeFile", IOL_OPT_FLAG, F(write), NULL, "write the file", 0, 0 },
    { 'r', "read", "readFile", IOL_OPT_FLAG, F(read), NULL, "read the file", 0, 0 },
    { 't', "transfer-size", "transferSize, xfer", IOL_OPT_SIZE, F(xfer), "262144", "bytes per I/O call", 1, 0 },
    { 'b', "block-size", "blockSize", IOL_OPT_SIZE, F(block), "1m", "bytes per rank per segment", 0, 0 },
    { 's', "segments", "segmentCount", IOL_OPT_INT, F(segments), "1", "segments", 1, 1000000 },
    { 'x', "ratio", NULL, IOL_OPT_DOUBLE, F(ratio), "0.5", "a fraction", 0, 1 },
    { 'o', "test-file", "testFile", IOL_OPT_STRING, F(path), "/tmp/testfile", "file name", 0, 0 },
    { 0, "posix.odirect", "direct,useO_DIRECT", IOL_OPT_FLAG, F(direct), NULL, "use O_DIRECT", 0, 0 },
    { 'O', "directives", NULL, IOL_OPT_DIRECTIVES, 0, NULL, "IOR-style key=value[,key=value]", 0, 0 },
    { 0 },
};
#undef F

static const struct iol_option run_options[] = {
    { 0, "np", NULL, IOL_OPT_INT, offsetof(struct run, np), "1", "local processes", 1, 4096 },
    { 'q', "quiet", NULL, IOL_OPT_FLAG, offsetof(struct run, quiet), NULL, "no report", 0, 0 },
    { 0, "json", NULL, IOL_OPT_STRING, offsetof(struct run, json), NULL, "result document", 0, 0 },
    { 0 },
};

static struct cfg cfg;
static struct run run;
static struct iol_optset sets[2] = { { cfg_options, &cfg }, { run_options, &run } };
static struct iol_err err;
static char *pos[16];
static int npos;

/* Resets everything to the defaults and parses the NULL-terminated arguments. */
static int parse(const char *first, ...)
{
    char *argv[32];
    int argc = 0;
    va_list ap;
    va_start(ap, first);
    for (const char *a = first; a != NULL && argc < 32; a = va_arg(ap, const char *))
        argv[argc++] = (char *)a;
    va_end(ap);
    iol_err_clear(&err);
    memset(&cfg, 0xab, sizeof cfg);   /* garbage, so a field the defaults forget shows up */
    memset(&run, 0xab, sizeof run);
    CHECK(iol_opts_defaults(sets, 2, &err) == 0, "defaults: %s", err.msg);
    npos = -1;
    return iol_opts_parse_argv(sets, 2, argc, argv, pos, &npos, &err);
}

static void expect_error(const char *want, int rc, const char *argdesc)
{
    CHECK(rc == -1 && err.code == IOL_ERR_USAGE, "%s: refused with a usage error (rc %d, code %d)", argdesc, rc,
          err.code);
    CHECK(strstr(err.msg, want) != NULL, "%s: message '%s' should contain '%s'", argdesc, err.msg, want);
}

static void test_defaults_fill_every_field(void)
{
    CHECK(parse(NULL) == 0, "empty argv: %s", err.msg);
    CHECK(cfg.fpp == 0 && cfg.write == 0 && cfg.read == 0 && cfg.direct == 0, "flags default off");
    CHECK(cfg.xfer == 262144 && cfg.block == 1048576, "sizes from defaults");
    CHECK(cfg.segments == 1 && cfg.ratio == 0.5, "int and double defaults");
    CHECK(!strcmp(cfg.path, "/tmp/testfile") && run.json[0] == '\0', "string defaults (NULL = empty)");
    CHECK(run.np == 1 && run.quiet == 0, "second set defaults");
    CHECK(npos == 0, "no positional arguments");
}

static void test_valid_forms(void)
{
    CHECK(parse("-Fw", NULL) == 0 && cfg.fpp == 1 && cfg.write == 1 && cfg.read == 0, "bundled flags -Fw");
    CHECK(parse("-t1m", NULL) == 0 && cfg.xfer == 1048576, "attached value -t1m");
    CHECK(parse("-t", "4k", NULL) == 0 && cfg.xfer == 4096, "separate value -t 4k");
    CHECK(parse("-Frt2m", NULL) == 0 && cfg.fpp && cfg.read && cfg.xfer == 2097152, "flags then -t with value");
    CHECK(parse("-wt", "8k", "-r", NULL) == 0 && cfg.write && cfg.xfer == 8192 && cfg.read,
          "bundle ending in a valued option takes the next argument");
    CHECK(parse("--transfer-size=8k", NULL) == 0 && cfg.xfer == 8192, "--k=v");
    CHECK(parse("--transfer-size", "16k", NULL) == 0 && cfg.xfer == 16384, "--k v");
    CHECK(parse("--transferSize=2m", NULL) == 0 && cfg.xfer == 2097152, "alias --transferSize");
    CHECK(parse("--xfer", "3k", NULL) == 0 && cfg.xfer == 3072, "second alias (after ', ' in the list)");
    CHECK(parse("--posix.odirect", NULL) == 0 && cfg.direct == 1, "dotted long flag");
    CHECK(parse("--direct", NULL) == 0 && cfg.direct == 1, "flag alias");
    CHECK(parse("--read=no", "--write=true", NULL) == 0 && cfg.read == 0 && cfg.write == 1, "--flag=bool");
    CHECK(parse("-O", "transferSize=1m,blockSize=2g", NULL) == 0 && cfg.xfer == 1048576 &&
              cfg.block == 2147483648ULL, "-O a=1,b=2m");
    CHECK(parse("-Osegmentcount=5,useO_DIRECT=1,testFile=/x/y", NULL) == 0 && cfg.segments == 5 &&
              cfg.direct == 1 && !strcmp(cfg.path, "/x/y"), "-O attached, case-insensitive key, string value");
    CHECK(parse("--directives=filePerProc=1", NULL) == 0 && cfg.fpp == 1, "directives through the long name");
    CHECK(parse("-s", "7", "-x", "0.25", "-o", "/p/q", "--np", "4", "-q", "--json=-", NULL) == 0 &&
              cfg.segments == 7 && cfg.ratio == 0.25 && !strcmp(cfg.path, "/p/q") && run.np == 4 && run.quiet &&
              !strcmp(run.json, "-"), "every type, across two sets");
    CHECK(parse("a", "-w", "b", "--", "-r", "--np=3", "-", NULL) == 0 && cfg.write && !cfg.read && run.np == 1,
          "-- ends options: %s", err.msg);
    CHECK(npos == 5 && !strcmp(pos[0], "a") && !strcmp(pos[1], "b") && !strcmp(pos[2], "-r") &&
              !strcmp(pos[3], "--np=3") && !strcmp(pos[4], "-"), "positional arguments in order (%d)", npos);
    CHECK(parse("-t", "1m", "-t", "2m", NULL) == 0 && cfg.xfer == 2097152, "the last setting wins");
    /* Long options on the command line match as written: a miscased one is refused, naming it. */
    CHECK(parse("--nP", "2", NULL) == -1 && err.code == IOL_ERR_USAGE && strstr(err.msg, "'--nP'") &&
              strstr(err.msg, "'--np'"), "--nP refused: %s", err.msg);
    CHECK(parse("--NP=2", NULL) == -1 && strstr(err.msg, "'--NP'"), "--NP=2 refused: %s", err.msg);
    CHECK(parse("--JSON", "f", NULL) == -1 && strstr(err.msg, "'--JSON'"), "--JSON refused: %s", err.msg);
    CHECK(parse("--TransferSize=1m", NULL) == -1 && strstr(err.msg, "'--transferSize'"),
          "a miscased alias names the alias: %s", err.msg);
    CHECK(parse("--bogus", NULL) == -1 && !strstr(err.msg, "did you mean"), "unknown: %s", err.msg);

    /* iol_opts_set: exact first, then case-insensitive */
    iol_err_clear(&err);
    CHECK(iol_opts_set(sets, 2, "TRANSFERSIZE", "64k", "-O", &err) == 0 && cfg.xfer == 65536, "case-insensitive set");
    CHECK(iol_opts_set(sets, 2, "quiet", NULL, "config.ini:3", &err) == 0 && run.quiet == 1, "bare flag key sets 1");
    CHECK(iol_opts_set(sets, 2, "np", "8", "config.ini:4", &err) == 0 && run.np == 8, "set in the second set");
    int si = -1;
    CHECK(iol_opts_find(sets, 2, "useO_DIRECT", &si) == &cfg_options[8] && si == 0, "find by alias");
    CHECK(iol_opts_find(sets, 2, "json", &si) == &run_options[2] && si == 1, "find in second set");
    CHECK(iol_opts_find(sets, 2, "nope", &si) == NULL, "find unknown");
}

static void test_size_suffixes(void)
{
    static const struct { const char *s; uint64_t v; } ok[] = {
        { "0", 0 }, { "4096", 4096 }, { "4k", 4096 }, { "4K", 4096 }, { "4kb", 4096 }, { "4KB", 4096 },
        { "4kib", 4096 }, { "4KiB", 4096 }, { "1m", 1 << 20 }, { "1M", 1 << 20 }, { "1mb", 1 << 20 },
        { "1MiB", 1 << 20 }, { "2g", 2ULL << 30 }, { "2G", 2ULL << 30 }, { "1t", 1ULL << 40 }, { "3T", 3ULL << 40 },
        { "1p", 1ULL << 50 }, { "16383p", 16383ULL << 50 }, { "18446744073709551615", UINT64_MAX },
        { "47008", 47008 },
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        uint64_t v = 1;
        iol_err_clear(&err);
        CHECK(iol_parse_size(ok[i].s, &v, "-b", &err) == 0 && v == ok[i].v, "size '%s' = %llu (got %llu, %s)",
              ok[i].s, (unsigned long long)ok[i].v, (unsigned long long)v, err.msg);
    }
    static const char *const bad[] = { "", " ", "k", "1x", "1kk", "1 k", "-1", "-0", "1.5m", "0.5", "1e6", "+4",
                                       "0x10", "1mi", "18446744073709551616", "16384p", "99999999999t" };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        uint64_t v = 7;
        iol_err_clear(&err);
        CHECK(iol_parse_size(bad[i], &v, "-b", &err) == -1 && v == 7 && !strncmp(err.msg, "-b: ", 4),
              "size '%s' refused (%s)", bad[i], err.msg);
    }
}

static void test_every_invalid_kind_names_the_option(void)
{
    expect_error("unknown option '-Z'", parse("-Z", NULL), "unknown short flag");
    expect_error("unknown option '-Z'", parse("-wZ", NULL), "unknown flag inside a bundle");
    expect_error("unknown option '--foo'", parse("--foo", NULL), "unknown long option");
    CHECK(strcmp(err.msg, "unknown option '--foo'") == 0, "exact message: %s", err.msg);
    expect_error("unknown option '--foo'", parse("--foo=1", NULL), "unknown long option with =value");
    expect_error("-b: missing value", parse("-w", "-b", NULL), "missing value at the end of argv");
    expect_error("--block-size: missing value", parse("--block-size", NULL), "missing long value");
    /* A forgotten value before the next flag is a missing value, not a bad size of "-w". */
    expect_error("-b: missing value (the next argument, '-w', is an option)", parse("-b", "-w", NULL),
                 "value forgotten before a short flag");
    expect_error("--block-size: missing value (the next argument, '--posix.odirect', is an option)",
                 parse("--block-size", "--posix.odirect", NULL), "value forgotten before a long option");
    expect_error("-b: missing value (the next argument, '--', is an option)", parse("-b", "--", NULL),
                 "value forgotten before --");
    /* A negative number is a value, not an option; -x takes ".5". */
    CHECK(parse("-x", ".5", NULL) == 0 && cfg.ratio == 0.5, "-x .5: %s", err.msg);
    expect_error("-s: value -1 is below the minimum 1", parse("-s", "-1", NULL), "a negative number is a value");
    expect_error("-t: '1x' is not a size (use a number with an optional k/m/g/t suffix)", parse("-t", "1x", NULL),
                 "bad unit");
    CHECK(strcmp(err.msg, "-t: '1x' is not a size (use a number with an optional k/m/g/t suffix)") == 0,
          "exact message: %s", err.msg);
    expect_error("-t: '' is not a size", parse("-t", "", NULL), "empty size");
    expect_error("-b: '-1m' is not a size (sizes cannot be negative)", parse("-b", "-1m", NULL), "negative size");
    expect_error("-b: '1.5m' is not a size", parse("-b1.5m", NULL), "fractional size");
    expect_error("-b: '99999999999t' is too large", parse("-b", "99999999999t", NULL), "overflow");
    CHECK(strcmp(err.msg, "-b: '99999999999t' is too large") == 0, "exact message: %s", err.msg);
    expect_error("--transfer-size: value 0 is below the minimum 1", parse("--transfer-size", "0", NULL),
                 "size below min");
    CHECK(strcmp(err.msg, "--transfer-size: value 0 is below the minimum 1") == 0, "exact message: %s", err.msg);
    expect_error("--transferSize: value 0 is below the minimum 1", parse("--transferSize=0", NULL),
                 "the alias as written");
    expect_error("-s: value 0 is below the minimum 1", parse("-s", "0", NULL), "int below min");
    expect_error("-s: value 2000000 is above the maximum 1000000", parse("-s", "2000000", NULL), "int above max");
    expect_error("-s: '12abc' is not an integer", parse("-s", "12abc", NULL), "int garbage");
    expect_error("-s: '99999999999999999999' is out of range", parse("-s", "99999999999999999999", NULL),
                 "int overflow");
    expect_error("-x: value 1.5 is above the maximum 1", parse("-x", "1.5", NULL), "double above max");
    expect_error("-x: value -0.1 is below the minimum 0", parse("-x", "-0.1", NULL), "double below min");
    expect_error("-x: 'abc' is not a number", parse("-x", "abc", NULL), "double garbage");
    expect_error("-x: 'nan' is not a finite number", parse("-x", "nan", NULL), "double nan");
    expect_error("--np: value 0 is below the minimum 1", parse("--np", "0", NULL), "second set bound");
    expect_error("-O filePerProc: 'maybe' is not a boolean", parse("-O", "filePerProc=maybe", NULL),
                 "bad bool in key=value");
    expect_error("--write: 'maybe' is not a boolean", parse("--write=maybe", NULL), "bad bool in --flag=v");
    expect_error("-O: unknown key 'fooBar'", parse("-O", "transferSize=1m,fooBar=1", NULL), "unknown -O key");
    CHECK(strcmp(err.msg, "-O: unknown key 'fooBar'") == 0, "exact message: %s", err.msg);
    expect_error("-O transferSize: '1x' is not a size", parse("-O", "transferSize=1x", NULL), "bad -O value");
    expect_error("-O segmentCount: value 0 is below the minimum 1", parse("-O", "segmentCount=0", NULL),
                 "bound via -O names the key");
    expect_error("-O: 'transferSize' is not key=value", parse("-O", "transferSize", NULL), "-O without =");
    expect_error("-O: missing value", parse("-O", NULL), "-O at the end");

    iol_err_clear(&err);
    char *argv[] = { "-w", "stray" };
    CHECK(iol_opts_parse_argv(sets, 2, 2, argv, NULL, NULL, &err) == -1 &&
              strstr(err.msg, "unexpected argument 'stray'"), "positional refused when not wanted: %s", err.msg);

    char *longval = malloc(IOL_STR_MAX + 10);
    memset(longval, 'a', IOL_STR_MAX + 9);
    longval[IOL_STR_MAX + 9] = '\0';
    expect_error("-o: value is too long", parse("-o", longval, NULL), "string too long");
    free(longval);

    /* the first error is kept: a later one must not hide the cause */
    iol_err_clear(&err);
    iol_opts_set(sets, 2, "nope", "1", "-O", &err);
    iol_opts_set(sets, 2, "np", "0", "-O", &err);
    CHECK(strcmp(err.msg, "-O: unknown key 'nope'") == 0, "first error kept: %s", err.msg);
}

static void test_broken_table_default_is_a_program_error(void)
{
    static const struct iol_option broken[] = {
        { 't', "transfer-size", NULL, IOL_OPT_SIZE, 0, "lots", "bad default", 0, 0 },
        { 0 },
    };
    uint64_t field;
    struct iol_optset s = { broken, &field };
    iol_err_clear(&err);
    CHECK(iol_opts_defaults(&s, 1, &err) == -1 && err.code == IOL_ERR_RUNTIME &&
              strstr(err.msg, "default of --transfer-size") != NULL, "bad default reported: %s", err.msg);
}

static char *capture_help(void)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *fp = open_memstream(&buf, &len);
    iol_opts_help(sets, 2, fp);
    fclose(fp);
    return buf;
}

static void test_help_lists_every_option(void)
{
    char *h = capture_help();
    CHECK(strstr(h, "  -t, --transfer-size=SIZE") != NULL, "short and long with metavar:\n%s", h);
    CHECK(strstr(h, "bytes per I/O call (default 256k)") != NULL, "help text and compact size default");
    CHECK(strstr(h, "      --posix.odirect") != NULL, "long-only option aligned");
    CHECK(strstr(h, "(default 1m)") != NULL && strstr(h, "(default 0.5)") != NULL, "other defaults");
    CHECK(strstr(h, "  -F, --file-per-proc ") != NULL && strstr(h, "one file per rank\n") != NULL,
          "flag without default noise");
    CHECK(strstr(h, "--np=N") != NULL && strstr(h, "--json=STR") != NULL, "second set listed");
    free(h);
}

static void test_json_echo_of_effective_values(void)
{
    CHECK(parse("-Fw", "-t", "1m", "-x", "0.25", "-o", "/x \"y\"", "--np", "3", NULL) == 0, "parse: %s", err.msg);
    char *buf = NULL;
    size_t len = 0;
    FILE *fp = open_memstream(&buf, &len);
    struct iol_json j;
    iol_json_init(&j, fp, 0);
    iol_json_begin_object(&j);
    iol_opts_json(sets, 2, &j);
    iol_json_end_object(&j);
    CHECK(iol_json_finish(&j) == 0, "echo is well-formed JSON");
    fclose(fp);
    CHECK(strstr(buf, "\"file-per-proc\":true,\"write\":true,\"read\":false") != NULL, "flags as bools: %s", buf);
    CHECK(strstr(buf, "\"transfer-size\":1048576,\"block-size\":1048576") != NULL, "sizes as integers");
    CHECK(strstr(buf, "\"segments\":1,\"ratio\":0.25") != NULL, "int and double");
    CHECK(strstr(buf, "\"test-file\":\"/x \\\"y\\\"\"") != NULL, "string escaped");
    CHECK(strstr(buf, "\"np\":3,\"quiet\":false,\"json\":\"\"}") != NULL, "second set echoed");
    CHECK(strstr(buf, "directives") == NULL, "directives not echoed");
    free(buf);
}

static void test_format_size(void)
{
    static const struct { uint64_t v; const char *s; } cases[] = {
        { 0, "0 bytes" }, { 1023, "1023 bytes" }, { 1024, "1 KiB" }, { 47008, "47008 bytes" },
        { 2097152, "2 MiB" }, { 1610612736, "1.50 GiB" }, { 3ULL << 40, "3 TiB" }, { (1ULL << 20) + 1, "1.00 MiB" },
        { 1ULL << 60, "1 EiB" }, { UINT64_MAX, "16.00 EiB" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char buf[64];
        iol_format_size(cases[i].v, buf, sizeof buf);
        CHECK(!strcmp(buf, cases[i].s), "format %llu: '%s', want '%s'", (unsigned long long)cases[i].v, buf,
              cases[i].s);
    }
}

int main(void)
{
    test_defaults_fill_every_field();
    test_valid_forms();
    test_size_suffixes();
    test_every_invalid_kind_names_the_option();
    test_broken_table_default_is_a_program_error();
    test_help_lists_every_option();
    test_json_echo_of_effective_values();
    test_format_size();
    return TEST_DONE();
}
