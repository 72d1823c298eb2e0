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
    ;

const unsigned iol_names_len = sizeof(iol_names_text) - 1;
