/* run_info.c — the engine's own options, shared by every workload. */
#include <stddef.h>
#include "run_info.h"

#define F(field) offsetof(struct iol_run_info, field)

const struct iol_option iol_run_options[] = {
    {0, "np", NULL, IOL_OPT_INT, F(np), "1", "local processes to fork (not with an MPI launcher)", 1, 65536},
    {0, "comm", NULL, IOL_OPT_STRING, F(comm_kind), "auto", "auto, local or mpi (auto = mpi when started by mpirun/srun)", 0, 0},
    {0, "json", NULL, IOL_OPT_STRING, F(json_path), "", "write the result document to this file (- = stdout)", 0, 0},
    {0, "progress", NULL, IOL_OPT_FLAG, F(progress), "0", "print IOLENS-PROGRESS lines to stderr while running", 0, 0},
    {0, "quiet", NULL, IOL_OPT_FLAG, F(quiet), "0", "no human-readable report on stdout", 0, 0},
    {0, "no-space-check", NULL, IOL_OPT_FLAG, F(no_space_check), "0", "run even if the data or the files would not fit in the free space or free inodes (checked before any I/O)", 0, 0},
    {0, "check", NULL, IOL_OPT_FLAG, F(check_only), "0", "check the options and paths, do no I/O", 0, 0},
    {0},
};
