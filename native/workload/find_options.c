/* find_options.c — every option of the find workload, declared once. find's own predicates keep their
 * one-dash spelling on the command line (find_argv_normalize maps them onto these long names). */
#include <stddef.h>
#include "find.h"

#define F(field) offsetof(struct find_cfg, field)
#define NOLIM 0, 0

const struct iol_option find_options[] = {
    {0, "root", NULL, IOL_OPT_STRING, F(root), "", "directory to walk (usually given as the first argument, DIR)", NOLIM},
    {0, "newer", NULL, IOL_OPT_STRING, F(newer), "", "-newer FILE: modified strictly later than FILE", NOLIM},
    {0, "size", NULL, IOL_OPT_STRING, F(size), "", "-size [+|-]N[bcwkMG]: size in units rounded up, as find (3901c = exactly 3901 bytes)", NOLIM},
    {0, "name", NULL, IOL_OPT_STRING, F(name), "", "-name GLOB: the entry's base name matches the shell pattern", NOLIM},
    {0, "matches", NULL, IOL_OPT_STRING, F(matches), "", "write the matching paths to this file, one per line (not inside DIR)", NOLIM},
    {0, "stonewall", "stonewall-timer", IOL_OPT_DOUBLE, F(stonewall_s), "0", "stop scanning after this many seconds (0 = walk the whole tree)", 0, 1e9},
    {0, "split-entries", NULL, IOL_OPT_INT, F(split_entries), "1024", "directories with more entries than this are finished by all ranks together while they are read", 1, 1e15},
    {0},
};
