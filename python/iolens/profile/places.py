"""Where a file is, as the report and the advice need it: code and libraries (what the dynamic loader, an
interpreter's imports and the system's configuration read) apart from the job's data, and the kind of file
system a mount is (memory, node-local, shared), so that advice never suggests what the job already does.

The lists are in docs/profile.md ("Code and libraries"); a path is classified by its name only (absolute and
normalised by the runtime, symbolic links not resolved).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Literal

import numpy as np

# Code and libraries: system trees (/usr, /lib*, /bin, /sbin, /etc with the loader's ld.so.cache, and
# the pseudo file systems /proc, /sys, /dev but not the tmpfs /dev/shm), Python's package trees and byte
# code, and shared objects wherever they are (a Spack or conda tree, the job's own build). Plain string tests
# first: a regular expression over 100k paths costs 0.2 s, these tests 0.03 s.
CODE_PREFIXES = (
    "/usr/", "/lib/", "/lib32/", "/lib64/", "/libx32/", "/bin/", "/sbin/", "/etc/",
    "/proc/", "/sys/", "/dev/",
)  # fmt: skip
NOT_CODE_PREFIXES = ("/dev/shm/",)
CODE_SUFFIXES = (".py", ".pyc", ".pyo", ".pyd", ".so")
VERSIONED_SO = re.compile(r"\.so(?:\.\d+)+$")  # libhdf5.so.103


FsKind = Literal["memory", "local", "parallel", "unknown"]

# File systems in memory: fsync, alignment and access order cost nothing there.
MEMORY_FS = frozenset({"tmpfs", "ramfs", "hugetlbfs", "shm"})
# File systems other nodes see too (parallel and network file systems): where locks, stripes and the
# small-request rate of servers matter, and where node-local storage is an alternative.
SHARED_FS = frozenset(
    {
        "lustre", "gpfs", "nfs", "nfs4", "beegfs", "cephfs", "ceph", "pvfs2", "orangefs", "glusterfs",
        "fuse.glusterfs", "panfs", "wekafs", "fuse.dfuse", "daos", "cifs", "smb3", "smbfs", "afs",
        "fuse.sshfs", "fuse.gcsfuse", "fuse.s3fs", "9p", "virtiofs",
    }
)  # fmt: skip
# Disk file systems of the node itself.
LOCAL_FS = frozenset(
    {"ext2", "ext3", "ext4", "xfs", "btrfs", "zfs", "f2fs", "jfs", "reiserfs", "vfat", "overlay"}
)

# The I/O libraries a job loaded, known by the shared objects the loader opened (code files).
LIBRARY_PATTERNS = {"hdf5": re.compile(r"/libhdf5(?:[._][^/]*)?\.so")}


def is_code(path: str) -> bool:
    if path.startswith(CODE_PREFIXES):
        return not path.startswith(NOT_CODE_PREFIXES)
    if path.endswith(CODE_SUFFIXES) or "/__pycache__/" in path:
        return True
    if "-packages/" in path and ("/site-packages/" in path or "/dist-packages/" in path):
        return True
    return ".so." in path and VERSIONED_SO.search(path) is not None


def code_mask(paths: Sequence[str]) -> np.ndarray:
    """Per path: code or libraries (True), or data."""
    return np.fromiter((is_code(p) for p in paths), dtype=bool, count=len(paths))


def fs_kind(fs_type: str | None) -> FsKind:
    if not fs_type:
        return "unknown"
    if fs_type in MEMORY_FS:
        return "memory"
    if fs_type in SHARED_FS:
        return "parallel"
    if fs_type in LOCAL_FS:
        return "local"
    return "unknown"


# Directories whose files count as on a parallel file system whatever type their mount has: a file system
# the kernel reports under a type not listed above (a site's FUSE client, a bind mount of Lustre into a
# container shown as overlay), or a test on a machine without one (docs/profile.md, "Advice").
ENV_PARALLEL = "IOLENS_PARALLEL_FS"


class PlacesError(ValueError):
    """IOLENS_PARALLEL_FS is not a list of absolute directories; the message says so."""


def parallel_dirs(environ: Mapping[str, str] = os.environ) -> tuple[str, ...]:
    """IOLENS_PARALLEL_FS: comma-separated absolute directories (normalised, each ending in "/")."""
    out = []
    for item in environ.get(ENV_PARALLEL, "").split(","):
        item = item.strip()
        if not item:
            continue
        if not item.startswith("/"):
            raise PlacesError(f"{ENV_PARALLEL}: {item!r} is not an absolute directory")
        out.append(os.path.normpath(item).rstrip("/") + "/")
    return tuple(out)


def declared_parallel(path: str, dirs: tuple[str, ...]) -> bool:
    """The path is under one of the directories IOLENS_PARALLEL_FS declares parallel."""
    return bool(dirs) and (path + "/").startswith(dirs)


def parallel_mask(paths: Sequence[str], dirs: tuple[str, ...]) -> np.ndarray:
    """Per path: under a directory IOLENS_PARALLEL_FS declares parallel."""
    if not dirs:
        return np.zeros(len(paths), dtype=bool)
    return np.fromiter((declared_parallel(p, dirs) for p in paths), dtype=bool, count=len(paths))


def libraries(paths: Iterable[str]) -> set[str]:
    """The I/O libraries among the paths (shared objects the job loaded): "hdf5"."""
    found: set[str] = set()
    for p in paths:
        if ".so" not in p:
            continue
        for name, pattern in LIBRARY_PATTERNS.items():
            if name not in found and pattern.search(p):
                found.add(name)
    return found
