/* fstype.c — see fstype.h. */
#include "fstype.h"

#include <sys/statfs.h>

const char *iol_fs_type(const char *path)
{
    struct statfs sf;
    if (statfs(path, &sf) != 0) return "unknown";
    switch ((unsigned long)sf.f_type) {
    case 0x01021994UL: return "tmpfs";
    case 0x858458f6UL: return "ramfs";
    case 0xEF53UL: return "ext4";
    case 0x58465342UL: return "xfs";
    case 0x9123683EUL: return "btrfs";
    case 0x0BD00BD0UL: return "lustre";
    case 0x6969UL: return "nfs";
    case 0x47504653UL: return "gpfs";
    case 0x19830326UL: return "beegfs";
    case 0x794c7630UL: return "overlay";
    case 0x65735546UL: return "fuse";
    default: return "other";
    }
}
