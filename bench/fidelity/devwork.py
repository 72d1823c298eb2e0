"""What reached the block device and what stayed in memory: /proc/diskstats of the device that holds a path,
the I/O accounting of a process tree (/proc/self/io of a small wrapper that waits for it), page-cache
residency (util-linux fincore) and per-file eviction (fsync, then posix_fadvise DONTNEED)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, fields
from pathlib import Path

SECTOR = 512


@dataclass(frozen=True)
class DevWork:
    """Counters of one block device (or their difference between two readings); sectors are 512 bytes."""

    read_ios: int = 0
    read_sectors: int = 0
    write_ios: int = 0
    write_sectors: int = 0
    flushes: int = 0

    def __sub__(self, other: DevWork) -> DevWork:
        return DevWork(*(getattr(self, f.name) - getattr(other, f.name) for f in fields(self)))

    def as_dict(self) -> dict[str, int]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


DEV_FIELDS = tuple(f.name for f in fields(DevWork))


def device_of(path: Path) -> str | None:
    """The kernel name of the block device holding path's file system (the partition's own name when it is
    one: /proc/diskstats has a line for it), from its st_dev through /sys/dev/block/MAJOR:MINOR; None for a
    file system without one (tmpfs: major 0)."""
    st = os.stat(path)
    major, minor = os.major(st.st_dev), os.minor(st.st_dev)
    if major == 0:
        return None
    uevent = Path(f"/sys/dev/block/{major}:{minor}/uevent")
    try:
        for line in uevent.read_text().splitlines():
            if line.startswith("DEVNAME="):
                return line.split("=", 1)[1]
    except OSError:
        return None
    return None


def diskstats(device: str | None) -> DevWork:
    """The device's counters now (all zero for no device). Flushes need kernel 5.5 or later (field 16)."""
    if device is None:
        return DevWork()
    for line in Path("/proc/diskstats").read_text().splitlines():
        parts = line.split()
        if len(parts) >= 14 and parts[2] == device:
            v = [int(x) for x in parts[3:]]
            return DevWork(v[0], v[2], v[4], v[6], v[15] if len(v) > 15 else 0)
    raise RuntimeError(f"{device}: not in /proc/diskstats")


def regular_files(directory: Path) -> list[Path]:
    return sorted(p for p in directory.rglob("*") if p.is_file() and not p.is_symlink())


def flush(paths: Iterable[Path]) -> None:
    """fsync every file and directory named: their dirty pages and metadata reach the device (and only
    theirs: a global sync would count the other users' writes of this disk as this case's work)."""
    for p in paths:
        try:
            fd = os.open(p, os.O_RDONLY)
        except OSError:
            continue
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def evict(files: Iterable[Path]) -> None:
    """Writes back and drops each file's pages (what fio's invalidate=1 does per file), leaving every other
    file's cache alone."""
    for p in files:
        fd = os.open(p, os.O_RDONLY)
        try:
            os.fsync(fd)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def drop_all_caches() -> None:
    """echo 3 > /proc/sys/vm/drop_caches (after sync): for a recorded run on a quiet machine only."""
    os.sync()
    Path("/proc/sys/vm/drop_caches").write_text("3\n")


def resident(files: Sequence[Path]) -> tuple[int, int]:
    """(bytes of the files in the page cache, bytes of the files), from util-linux's fincore (mincore(2))."""
    if not files:
        return (0, 0)
    out = subprocess.run(
        ["fincore", "--json", "--bytes", "--output", "RES,SIZE", *map(str, files)],
        capture_output=True,
        text=True,
        check=False,
    )
    if out.returncode != 0 and not out.stdout.strip():
        raise RuntimeError(f"fincore: {out.stderr.strip()}")
    rows = json.loads(out.stdout)["fincore"]
    return (sum(int(r["res"]) for r in rows), sum(int(r["size"]) for r in rows))


# Runs a command from a small process of its own and prints its wall time, rusage and the storage I/O of the
# whole process tree: Linux adds a reaped child's /proc/PID/io counters (its own and those of the children
# it reaped) to its parent, as it does for rusage, so after wait4 this wrapper's /proc/self/io less what it
# read before the fork is the command's. read_bytes counts read bios submitted (readahead and O_DIRECT
# included, page-cache hits not); write_bytes counts pages dirtied and O_DIRECT writes, whoever writes them
# back later. Other users of the disk do not appear in it, unlike in /proc/diskstats.
_WRAPPER = r"""
import json, os, subprocess, sys, time
def io():
    d = {}
    for line in open("/proc/self/io"):
        k, v = line.split(":")
        d[k] = int(v)
    return d
before = io()
t = time.perf_counter()
sink = open(sys.argv[1], "wb") if sys.argv[1] != "-" else subprocess.DEVNULL
p = subprocess.Popen(sys.argv[2:], stdout=sink, stderr=subprocess.PIPE)
err = p.stderr.read()
_, status, ru = os.wait4(p.pid, 0)
wall = time.perf_counter() - t
after = io()
print(json.dumps({"wall_s": wall, "user_s": ru.ru_utime, "sys_s": ru.ru_stime,
    "status": os.waitstatus_to_exitcode(status), "stderr": err.decode(errors="replace")[-2000:],
    "read_bytes": after["read_bytes"] - before["read_bytes"],
    "write_bytes": after["write_bytes"] - before["write_bytes"],
    "cancelled_write_bytes": after["cancelled_write_bytes"] - before["cancelled_write_bytes"]}))
"""


@dataclass(frozen=True)
class ProcRun:
    """A finished command: wall and CPU seconds, exit status, the tail of its standard error, and the storage
    I/O its process tree caused (bytes)."""

    wall_s: float
    cpu_s: float
    status: int
    stderr: str
    read_bytes: int
    write_bytes: int
    cancelled_write_bytes: int


def run_accounted(
    cmd: Sequence[str], env: dict[str, str] | None = None, stdout: Path | None = None
) -> ProcRun:
    """Runs cmd (its standard output into the file stdout, else thrown away) and accounts for it."""
    sink = str(stdout) if stdout is not None else "-"
    out = subprocess.run(
        [sys.executable, "-c", _WRAPPER, sink, *cmd], env=env, capture_output=True, text=True, check=False
    )
    try:
        d = json.loads(out.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        raise RuntimeError(f"{' '.join(cmd)}: wrapper failed: {out.stderr[-500:]}") from None
    return ProcRun(
        d["wall_s"],
        d["user_s"] + d["sys_s"],
        d["status"],
        d["stderr"],
        d["read_bytes"],
        d["write_bytes"],
        d["cancelled_write_bytes"],
    )
