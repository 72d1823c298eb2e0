/* workloads.c — the table of workloads, with the small adapters from each workload's typed API. */
#include "main/workloads.h"

#include "workload/find.h"
#include "workload/fio.h"
#include "workload/ior.h"
#include "workload/mdtest.h"

static void ior_norm(void *cfg) { ior_normalize(cfg); }
static int ior_valid(const void *cfg, int n, struct iol_err *e) { return ior_validate(cfg, n, e); }
static int ior_paths(const void *cfg, int n, struct iol_err *e) { return ior_check_paths(cfg, n, 0, n, e); }
static int ior_space(const void *cfg, int n, struct iol_err *e) { return ior_check_space(cfg, n, e); }
static int ior_go(const void *cfg, struct iol_comm *c, const struct iol_run_info *i) { return ior_run(cfg, c, i); }
static const char *ior_mpi(const void *cfg, char *buf, size_t len) { return ior_needs_mpi(cfg, buf, len); }

static void md_norm(void *cfg) { mdtest_normalize(cfg); }
static int md_valid(const void *cfg, int n, struct iol_err *e) { return mdtest_validate(cfg, n, e); }
static int md_paths(const void *cfg, int n, struct iol_err *e) { return mdtest_check_paths(cfg, n, e); }
static int md_space(const void *cfg, int n, struct iol_err *e) { return mdtest_check_space(cfg, n, e); }
static int md_go(const void *cfg, struct iol_comm *c, const struct iol_run_info *i) { return mdtest_run(cfg, c, i); }

static void find_norm(void *cfg) { (void)cfg; }
static int find_valid(const void *cfg, int n, struct iol_err *e) { return find_validate(cfg, n, e); }
static int find_paths(const void *cfg, int n, struct iol_err *e) { return find_check_paths(cfg, n, e); }
static int find_go(const void *cfg, struct iol_comm *c, const struct iol_run_info *i) { return find_run(cfg, c, i); }

static void fio_norm(void *cfg) { fio_normalize(cfg); }
static int fio_valid(const void *cfg, int n, struct iol_err *e) { return fio_validate(cfg, n, e); }
static int fio_paths(const void *cfg, int n, struct iol_err *e) { return fio_check_paths(cfg, n, e); }
static int fio_space(const void *cfg, int n, struct iol_err *e) { return fio_check_space(cfg, n, e); }
static int fio_go(const void *cfg, struct iol_comm *c, const struct iol_run_info *i) { return fio_run(cfg, c, i); }

const struct iol_workload iol_workloads[] = {
    {"ior", "bulk transfers to a shared file or a file per process, with IOR's flags", ior_options,
     sizeof(struct ior_cfg), ior_norm, ior_valid, ior_paths, ior_space, ior_go, NULL, ior_mpi},
    {"mdtest", "metadata rates of file and directory trees, with mdtest's flags", mdtest_options,
     sizeof(struct mdtest_cfg), md_norm, md_valid, md_paths, md_space, md_go, NULL, NULL},
    {"find", "parallel namespace walk with find's -newer, -size, -name (IO500's find phase)", find_options,
     sizeof(struct find_cfg), find_norm, find_valid, find_paths, NULL, find_go, find_parse_argv, NULL},
    {"fio", "random and sequential I/O described as fio describes it (job files or --name=... options)", fio_job_options,
     sizeof(struct fio_cfg), fio_norm, fio_valid, fio_paths, fio_space, fio_go, fio_parse_argv, NULL},
    {0},
};
