/* fstype.h — the name of the file system holding a path (statfs magic numbers), for reports: a figure on
 * tmpfs means something else than one on Lustre. */
#ifndef IOL_FSTYPE_H
#define IOL_FSTYPE_H

/* "tmpfs", "ext4", "xfs", "lustre", "nfs", ...; "other" for an unknown magic, "unknown" if statfs fails. */
const char *iol_fs_type(const char *path);

#endif
