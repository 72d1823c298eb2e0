/* counters.c — the NAMES chunk's text, generated from the counter lists (counters.h). */
#include "counters.h"

const char iol_names_text[] =
#define X(name, merge) "file " #name " " #merge "\n"
    IOL_FILE_COUNTERS(X)
#undef X
#define X(name, merge) "file_data " #name " " #merge "\n"
    IOL_FILE_DATA_COUNTERS(X)
#undef X
#define X(name, merge) "proc " #name " " #merge "\n"
    IOL_PROC_COUNTERS(X)
#undef X
/* A module: "module NAME ID", then its section, named after it (a reader that does not know modules skips
 * both: their section is not one of its own). */
#define X(name, merge) "MPIIO " #name " " #merge "\n"
    "module MPIIO 1\n" IOL_MPIIO_COUNTERS(X)
#undef X
#define X(name, merge) "H5F " #name " " #merge "\n"
    "module H5F 2\n" IOL_H5F_COUNTERS(X)
#undef X
#define X(name, merge) "H5D " #name " " #merge "\n"
    "module H5D 3\n" IOL_H5D_COUNTERS(X)
#undef X
#define X(name, merge) "PNETCDF_FILE " #name " " #merge "\n"
    "module PNETCDF_FILE 4\n" IOL_PNETCDF_FILE_COUNTERS(X)
#undef X
#define X(name, merge) "PNETCDF_VAR " #name " " #merge "\n"
    "module PNETCDF_VAR 6\n" IOL_PNETCDF_VAR_COUNTERS(X)
#undef X
#define X(name, merge) "SPREAD " #name " " #merge "\n"
    "module SPREAD 7\n" IOL_SPREAD_COUNTERS(X)
#undef X
    ;

const unsigned iol_names_len = sizeof(iol_names_text) - 1;

const unsigned iol_module_nvals[IOL_MODULE_MAX] = {
#define X(name, id, list) [id] = IOL_N##name,
    IOL_MODULES(X)
#undef X
};
