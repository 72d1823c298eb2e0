/* ior_flags.h — IOR's run-level flags (see ior_flags.c). */
#ifndef IOL_IOR_FLAGS_H
#define IOL_IOR_FLAGS_H
#include <stdint.h>
#include "ior_internal.h"

/* Says a warning on stderr ("iolens-bench: warning: ...") and keeps it for the document; with
 * --warningAsErrors it also sets r->err. */
void ior_warn(struct ior_run *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* -M: "2g" or "75%" (of this machine's memory) in bytes. */
int ior_memory_spec(const char *s, uint64_t *bytes, struct iol_err *err);
/* Allocates and touches -M / memoryPerTask for the test (r->hog); 0 or -1 with r->err. */
int ior_hog_memory(struct ior_run *r);
/* -Z: the shift of this rank's reads in `iteration` (IOR's rankOffset). */
int ior_random_shift(struct ior_run *r, int iteration, int *shift);
/* -T: collective; 1 when no further phase may start. */
int ior_time_over(struct ior_run *r);
/* -j: collective; warns about ranks whose times (t[6] on rank 0's clock) are far from the mean. */
int ior_check_outliers(struct ior_run *r, const char *phase, const uint64_t t[6]);
/* -y: turns -o into <-o><node>/data for this process. */
void ior_dual_mount_path(struct ior_cfg *cfg);
/* --randomPrefill: fills data_rank's blocks with 0xff (untimed transfers inside the write's time). */
int ior_random_prefill(struct ior_run *r, struct iol_file *f, int data_rank);
/* The document's "ior_flags" member. */
void ior_flags_json(struct iol_json *j, const struct ior_run *r);

#endif
