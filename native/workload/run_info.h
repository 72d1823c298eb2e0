/* run_info.h — what every workload run needs to know besides its own options: where to write the result
 * document, whether to show progress, how it was invoked. Filled by main() from the engine options. */
#ifndef IOL_RUN_INFO_H
#define IOL_RUN_INFO_H
#include <stdint.h>
#include "../common/options.h"

struct iol_run_info {
    int64_t np;                     /* --np: local processes */
    char comm_kind[IOL_STR_MAX];          /* --comm: auto|local|mpi */
    char json_path[IOL_STR_MAX];    /* --json: "" = none, "-" = stdout */
    int progress;                   /* --progress: rank 0 prints IOLENS-PROGRESS lines to stderr */
    int quiet;                      /* --quiet: no human report on stdout */
    int check_only;                 /* --check: validate and exit */
    int no_space_check;             /* --no-space-check: skip the free space / free inode check */
    int argc;                       /* the command line, echoed in the document */
    char **argv;
    uint64_t start_wall_ns;
};

extern const struct iol_option iol_run_options[];

#endif
